/* test_trace.c — the builder: every op's shape and dtype rules, every builder error and its
 * message (the op, the operand types, the reason and the caller's file:line), the rule that
 * the first error wins, and misuse through the public API that must not crash.
 *
 * Expected types are derived by hand from the rules kiln.h states (NumPy broadcasting and
 * matmul, XLA's broadcast_in_dim, slice, pad and dot_general), never copied from output. */
#include "test.h"

#include <stdint.h>

static kiln_context *ctx;
static kiln_graph *G; /* the graph of the current check; fresh() replaces it */

/* OP(expr) evaluates a builder call and remembers its line and result, so that error
 * checks can ask for "test_trace.c:<line>" in the message. Keep each OP on one line. */
static int op_line;
static kiln_value last;
#define OP(expr) (op_line = __LINE__, last = (expr))
/* What the header's macros do, for calls through function pointers. */
#define AT(g) kiln_graph_at((g), __FILE__, __LINE__)

#define DIMS(...)    ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...)   ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define P(g, t, ...) kiln_parameter(g, NULL, t, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))
#define P0(g, t)     kiln_parameter(g, NULL, t, 0, NULL)
#define AXES(...)    ((const int[]){__VA_ARGS__})
#define NAXES(...)   ((int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)))

static const kiln_value NONE = {0, 0};

static kiln_graph *fresh(void) {
    kiln_graph_destroy(G);
    G = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "t", &G));
    return G;
}

/* "f32[2,3]" for a value, written without the library's own formatter. */
static const char *type_of(kiln_graph *g, kiln_value v) {
    static char buf[256];
    kiln_dtype t;
    int rank = -1;
    int64_t dims[KILN_MAX_RANK];
    if (!kiln_value_type(g, v, &t, &rank, dims)) return "(invalid)";
    size_t k = (size_t)snprintf(buf, sizeof buf, "%s[", kiln_dtype_name(t));
    for (int i = 0; i < rank; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, i ? ",%lld" : "%lld", (long long)dims[i]);
    snprintf(buf + k, sizeof buf - k, "]");
    return buf;
}

#define CHECK_TYPE(g, v, want)                                                                     \
    do {                                                                                           \
        const char *t_ = type_of(g, v);                                                            \
        CHECK_MSG(!strcmp(t_, want), "%s has type %s, want %s (%s)", #v, t_, want,                 \
                  kiln_graph_error(g));                                                            \
    } while (0)

/* The graph failed with `code` at the line of the last OP, that OP returned the invalid
 * value, and both the graph's message and the context's contain every needle. */
static void expect_error(int line, kiln_graph *g, kiln_status code, const char *const *needles) {
    char at[64];
    snprintf(at, sizeof at, "test_trace.c:%d", op_line);
    const char *ge = kiln_graph_error(g), *ce = kiln_last_error(ctx);
    int ok = kiln_graph_status(g) == code && !kiln_value_ok(last) && strstr(ge, at) &&
             strstr(ce, at) && strcmp(ge, ce) == 0;
    for (int i = 0; needles[i]; i++) ok = ok && strstr(ge, needles[i]);
    if (ok) {
        test_passed++;
        return;
    }
    test_failed++;
    fprintf(stderr, "test_trace.c:%d: expected %s at %s, got %s%s\n  graph:   %s\n  context: %s\n",
            line, kiln_status_name(code), at, kiln_status_name(kiln_graph_status(g)),
            kiln_value_ok(last) ? " (and a valid value)" : "", ge, ce);
    for (int i = 0; needles[i]; i++)
        if (!strstr(ge, needles[i])) fprintf(stderr, "  missing: \"%s\"\n", needles[i]);
}
#define EXPECT_ERR(g, code, ...)                                                                   \
    expect_error(__LINE__, g, code, (const char *const[]){__VA_ARGS__, NULL})

/* ------------------------------------------------------------ elementwise ---- */

static void test_unary_types(void) {
    kiln_graph *g = fresh();
    kiln_value f = P(g, KILN_DTYPE_F32, 2, 3), d = P(g, KILN_DTYPE_F64, 0, 4),
               i = P(g, KILN_DTYPE_I32, 5);
    kiln_value l = P0(g, KILN_DTYPE_I64), b = P(g, KILN_DTYPE_BOOL, 1, 1, 1);
    kiln_value (*const fl[])(kiln_graph *, kiln_value) = {
        kiln_exp,      kiln_log, kiln_log1p, kiln_sqrt, kiln_rsqrt, kiln_tanh,
        kiln_logistic, kiln_sin, kiln_cos,   kiln_erf,  kiln_floor,
    };
    for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
        CHECK_TYPE(g, fl[k](g, f), "f32[2,3]");
        CHECK_TYPE(g, fl[k](g, d), "f64[0,4]");
    }
    kiln_value (*const num[])(kiln_graph *, kiln_value) = {kiln_neg, kiln_abs, kiln_sign};
    for (size_t k = 0; k < sizeof num / sizeof num[0]; k++) {
        CHECK_TYPE(g, num[k](g, f), "f32[2,3]");
        CHECK_TYPE(g, num[k](g, i), "i32[5]");
        CHECK_TYPE(g, num[k](g, l), "i64[]");
    }
    CHECK_TYPE(g, kiln_logical_not(g, b), "bool[1,1,1]");
    CHECK_TYPE(g, kiln_convert(g, f, KILN_DTYPE_I64), "i64[2,3]");
    CHECK_TYPE(g, kiln_convert(g, i, KILN_DTYPE_BOOL), "bool[5]");
    CHECK_TYPE(g, kiln_convert(g, b, KILN_DTYPE_F64), "f64[1,1,1]");
    /* converting to the same dtype is the value itself */
    kiln_value same = kiln_convert(g, f, KILN_DTYPE_F32);
    CHECK(same.id == f.id && same.graph == f.graph);
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);
}

static void test_binary_broadcasting(void) {
    static const struct {
        int ra;
        int64_t a[4];
        int rb;
        int64_t b[4];
        const char *want;
    } cases[] = {
        {2, {2, 3}, 2, {2, 3}, "f32[2,3]"}, {2, {2, 3}, 1, {3}, "f32[2,3]"},
        {1, {3}, 2, {2, 3}, "f32[2,3]"},    {2, {2, 1}, 2, {1, 3}, "f32[2,3]"},
        {0, {0}, 2, {4, 5}, "f32[4,5]"},    {2, {4, 5}, 0, {0}, "f32[4,5]"},
        {0, {0}, 0, {0}, "f32[]"},          {3, {5, 1, 4}, 2, {3, 1}, "f32[5,3,4]"},
        {2, {0, 3}, 1, {3}, "f32[0,3]"},    {2, {0, 1}, 2, {1, 4}, "f32[0,4]"},
        {2, {2, 0}, 2, {2, 1}, "f32[2,0]"}, {1, {1}, 1, {0}, "f32[0]"},
        {1, {0}, 0, {0}, "f32[0]"},         {4, {1, 2, 1, 3}, 3, {2, 4, 1}, "f32[1,2,4,3]"},
    };
    kiln_value (*const ops[])(kiln_graph *, kiln_value, kiln_value) = {
        kiln_add, kiln_sub, kiln_mul, kiln_div, kiln_pow, kiln_max, kiln_min,
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_graph *g = fresh();
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, cases[c].ra, cases[c].a);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, cases[c].rb, cases[c].b);
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
            CHECK_TYPE(g, ops[k](g, a, b), cases[c].want);
        char bool_want[32];
        snprintf(bool_want, sizeof bool_want, "bool%s", strchr(cases[c].want, '['));
        CHECK_TYPE(g, kiln_compare(g, a, b, KILN_CMP_LT), bool_want);
    }
    /* rank 8 is reachable by broadcasting, and integer and bool dtypes are kept */
    kiln_graph *g = fresh();
    kiln_value r8 = P(g, KILN_DTYPE_I64, 1, 1, 1, 1, 1, 1, 1, 1), v = P(g, KILN_DTYPE_I64, 2);
    CHECK_TYPE(g, kiln_add(g, r8, v), "i64[1,1,1,1,1,1,1,2]");
    CHECK_TYPE(g, kiln_div(g, v, P0(g, KILN_DTYPE_I64)), "i64[2]");
    kiln_value p = P(g, KILN_DTYPE_BOOL, 2, 1), q = P(g, KILN_DTYPE_BOOL, 3);
    CHECK_TYPE(g, kiln_logical_and(g, p, q), "bool[2,3]");
    CHECK_TYPE(g, kiln_logical_or(g, q, p), "bool[2,3]");
    CHECK_TYPE(g, kiln_compare(g, p, q, KILN_CMP_EQ), "bool[2,3]");
    for (int dir = KILN_CMP_EQ; dir <= KILN_CMP_GE; dir++)
        CHECK_TYPE(g, kiln_compare(g, v, r8, (kiln_cmp)dir), "bool[1,1,1,1,1,1,1,2]");
    /* equal shapes need no broadcast: one node per op */
    int before = kiln_graph_num_nodes(g);
    kiln_add(g, v, v);
    CHECK(kiln_graph_num_nodes(g) == before + 1);
    /* a scalar operand is broadcast: one broadcast_in_dim and the op */
    kiln_mul(g, v, P0(g, KILN_DTYPE_I64));
    CHECK(kiln_graph_num_nodes(g) == before + 4);
}

static void test_select_types(void) {
    kiln_graph *g = fresh();
    kiln_value p = P(g, KILN_DTYPE_BOOL, 2, 1), t = P(g, KILN_DTYPE_F32, 3),
               f = P0(g, KILN_DTYPE_F32);
    CHECK_TYPE(g, kiln_select(g, p, t, f), "f32[2,3]");
    CHECK_TYPE(g, kiln_select(g, P0(g, KILN_DTYPE_BOOL), f, f), "f32[]");
    CHECK_TYPE(
        g,
        kiln_select(g, P0(g, KILN_DTYPE_BOOL), P(g, KILN_DTYPE_I32, 0, 2), P0(g, KILN_DTYPE_I32)),
        "i32[0,2]");
    CHECK_TYPE(
        g,
        kiln_select(g, P(g, KILN_DTYPE_BOOL, 4), P(g, KILN_DTYPE_BOOL, 1), P0(g, KILN_DTYPE_BOOL)),
        "bool[4]");
    CHECK_TYPE(g, kiln_select(g, P(g, KILN_DTYPE_BOOL, 5, 1, 1), t, P(g, KILN_DTYPE_F32, 2, 1)),
               "f32[5,2,3]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);
}

static void test_elementwise_errors(void) {
    kiln_graph *g = fresh();
    kiln_value a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_I32, 4);
    OP(kiln_add(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_add", "f32[2,3]", "i32[4]", "dtypes differ");

    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_mul(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_mul", "f32[2,3], f32[2]", "cannot be broadcast",
               "3 vs 2");

    g = fresh(), a = P(g, KILN_DTYPE_F32, 0), b = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_sub(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_sub", "f32[0], f32[2]", "cannot be broadcast");

    /* a dtype mistake between operands of different shapes is reported as one, against the
     * user's operands, and leaves no broadcast node behind */
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3), b = P(g, KILN_DTYPE_I32, 2, 3);
    OP(kiln_max(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_max", "f32[3], i32[2,3]");
    CHECK(kiln_graph_num_nodes(g) == 2);

    g = fresh(), a = P(g, KILN_DTYPE_I32, 2, 2);
    OP(kiln_exp(g, a));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_exp", "i32[2,2]",
               "takes f32, f64, bf16 or f16, not i32");
    g = fresh(), a = P(g, KILN_DTYPE_I64, 1);
    OP(kiln_floor(g, a));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_floor", "i64[1]", "not i64");
    g = fresh(), a = P(g, KILN_DTYPE_BOOL, 3);
    OP(kiln_neg(g, a));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_neg", "bool[3]", "not bool");
    g = fresh(), a = P(g, KILN_DTYPE_BOOL, 3), b = P(g, KILN_DTYPE_BOOL, 3);
    OP(kiln_add(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_add", "bool[3], bool[3]", "not bool");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_logical_not(g, a));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_logical_not", "f32[2]", "takes bool, not f32");
    g = fresh(), a = P(g, KILN_DTYPE_I32, 2), b = P(g, KILN_DTYPE_I32, 2);
    OP(kiln_logical_and(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_logical_and", "i32[2], i32[2]", "bool");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2), b = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_logical_or(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_logical_or", "f32[2], f32[2]", "bool");

    g = fresh(), a = P(g, KILN_DTYPE_F32, 2), b = P(g, KILN_DTYPE_F64, 2);
    OP(kiln_compare(g, a, b, KILN_CMP_GT));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_compare", "f32[2], f64[2]", "dtypes differ");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_compare(g, a, a, (kiln_cmp)42));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_compare", "f32[2], f32[2]", "direction 42");

    kiln_value p;
    g = fresh(), p = P(g, KILN_DTYPE_I32, 2), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_select(g, p, a, a));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_select", "i32[2], f32[2], f32[2]", "predicate", "bool");
    g = fresh(), p = P(g, KILN_DTYPE_BOOL, 2), a = P(g, KILN_DTYPE_F32, 2),
    b = P(g, KILN_DTYPE_F64, 2);
    OP(kiln_select(g, p, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_select", "bool[2], f32[2], f64[2]", "dtypes differ");
    g = fresh(), p = P(g, KILN_DTYPE_BOOL, 4), a = P(g, KILN_DTYPE_F32, 2, 1),
    b = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_select(g, p, a, b));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_select", "bool[4], f32[2,1], f32[3]",
               "cannot be broadcast");

    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_convert(g, a, (kiln_dtype)77));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_convert", "f32[2]", "77");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_convert(g, a, KILN_DTYPE_INVALID));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_convert", "f32[2]", "not a kiln_dtype");
}

/* kiln_promote_types is jnp.promote_types with x64 on: this table is what JAX 0.10.2
 * printed for [jnp.promote_types(a, b) for b in ts] over ts = bool, int32, int64,
 * bfloat16, float16, float32, float64. */
static void test_promotion(void) {
    enum { N = 7 };
    const kiln_dtype ts[N] = {KILN_DTYPE_BOOL, KILN_DTYPE_I32, KILN_DTYPE_I64, KILN_DTYPE_BF16,
                              KILN_DTYPE_F16,  KILN_DTYPE_F32, KILN_DTYPE_F64};
    const char *const jax[N][N] = {{"bool", "i32", "i64", "bf16", "f16", "f32", "f64"},
                                   {"i32", "i32", "i64", "bf16", "f16", "f32", "f64"},
                                   {"i64", "i64", "i64", "bf16", "f16", "f32", "f64"},
                                   {"bf16", "bf16", "bf16", "bf16", "f32", "f32", "f64"},
                                   {"f16", "f16", "f16", "f32", "f16", "f32", "f64"},
                                   {"f32", "f32", "f32", "f32", "f32", "f32", "f64"},
                                   {"f64", "f64", "f64", "f64", "f64", "f64", "f64"}};
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) {
            const char *got = kiln_dtype_name(kiln_promote_types(ts[a], ts[b]));
            CHECK_MSG(!strcmp(got, jax[a][b]), "promote_types(%s, %s) = %s, jax %s",
                      kiln_dtype_name(ts[a]), kiln_dtype_name(ts[b]), got, jax[a][b]);
        }
    CHECK(kiln_promote_types(KILN_DTYPE_F32, KILN_DTYPE_INVALID) == KILN_DTYPE_INVALID);
    CHECK(kiln_promote_types((kiln_dtype)77, KILN_DTYPE_F32) == KILN_DTYPE_INVALID);

    /* the operands convert to their join; one already of it passes through unchanged */
    kiln_graph *g = fresh();
    kiln_value x = P(g, KILN_DTYPE_F32, 2, 3), n = P(g, KILN_DTYPE_I32, 3),
               l = P0(g, KILN_DTYPE_I64), v[3];
    CHECK_STATUS(kiln_promote(g, 2, (kiln_value[]){x, n}, v), KILN_STATUS_OK);
    CHECK(v[0].id == x.id);
    CHECK_TYPE(g, v[1], "f32[3]");
    CHECK_TYPE(g, kiln_add(g, v[0], v[1]), "f32[2,3]");
    kiln_value three[3] = {n, l, n};
    CHECK_STATUS(kiln_promote(g, 3, three, three), KILN_STATUS_OK); /* in place */
    CHECK_TYPE(g, three[0], "i64[3]");
    CHECK_TYPE(g, three[1], "i64[]");
    CHECK(three[1].id == l.id);
    CHECK_TYPE(g, three[2], "i64[3]");
    CHECK_STATUS(kiln_promote(g, 1, &n, v), KILN_STATUS_OK);
    CHECK(v[0].id == n.id);
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    /* errors name the call, the bad operand and the caller's line; results are invalid */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2);
    v[0] = v[1] = x;
    op_line = __LINE__, kiln_promote(g, 2, (kiln_value[]){x, NONE}, v);
    last = v[0];
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_promote", "xs[1]");
    CHECK(!kiln_value_ok(v[1]));
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2);
    v[0] = x;
    op_line = __LINE__, kiln_promote(g, 0, &x, v);
    last = NONE;
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_promote", "n >= 1", "n = 0");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2);
    kiln_status st;
    op_line = __LINE__, st = kiln_promote(g, 1, &x, NULL);
    CHECK_STATUS(st, KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_promote", "out NULL");
}

/* --------------------------------------------------------------- sources ---- */

static void test_sources(void) {
    kiln_graph *g = fresh();
    CHECK_TYPE(g, kiln_scalar(g, KILN_DTYPE_F32, 1.5), "f32[]");
    CHECK_TYPE(g, kiln_scalar(g, KILN_DTYPE_F64, -2), "f64[]");
    CHECK_TYPE(g, kiln_scalar(g, KILN_DTYPE_I32, 1e30), "i32[]"); /* saturates, no UB */
    CHECK_TYPE(g, kiln_scalar(g, KILN_DTYPE_I64, NAN), "i64[]");
    CHECK_TYPE(g, kiln_scalar(g, KILN_DTYPE_BOOL, 3), "bool[]");
    CHECK_TYPE(g, kiln_full(g, KILN_DTYPE_F64, 2, DIMS(2, 3), 0.25), "f64[2,3]");
    CHECK_TYPE(g, kiln_full(g, KILN_DTYPE_I32, 0, NULL, 7), "i32[]");
    CHECK_TYPE(g, kiln_full(g, KILN_DTYPE_BOOL, 1, DIMS(0), 1), "bool[0]");
    const float data[] = {1, 2, 3, 4, 5, 6};
    CHECK_TYPE(g, kiln_constant(g, KILN_DTYPE_F32, 2, DIMS(3, 2), data), "f32[3,2]");
    CHECK_TYPE(g, kiln_constant(g, KILN_DTYPE_I32, 1, DIMS(0), NULL), "i32[0]"); /* no bytes */
    CHECK_TYPE(g, kiln_iota(g, KILN_DTYPE_I32, 2, DIMS(2, 3), 1), "i32[2,3]");
    CHECK_TYPE(g, kiln_iota(g, KILN_DTYPE_F32, 3, DIMS(4, 1, 2), -1), "f32[4,1,2]");
    CHECK_TYPE(g, kiln_iota(g, KILN_DTYPE_I64, 1, DIMS(0), 0), "i64[0]");
    kiln_value p = kiln_parameter(g, "x", KILN_DTYPE_F32, 8, DIMS(1, 2, 1, 2, 1, 2, 1, 2));
    CHECK_TYPE(g, p, "f32[1,2,1,2,1,2,1,2]");
    /* huge but representable shapes are fine for tracing */
    kiln_value big = kiln_parameter(g, "big", KILN_DTYPE_F32, 2, DIMS(1ll << 30, 1ll << 30));
    CHECK_TYPE(g, big, "f32[1073741824,1073741824]");
    CHECK_TYPE(g, kiln_neg(g, big), "f32[1073741824,1073741824]");
    CHECK(kiln_graph_num_parameters(g) == 2);
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);
}

/* An array can be made of exactly the shapes a parameter can have (kiln_array_create
 * applies the builder's extent limit, 2^62 with zeros counted as 1), so no array exists
 * that no program can take. */
static void test_array_shapes_as_parameters(void) {
    const int64_t e53 = (int64_t)1 << 53, e61 = (int64_t)1 << 61, e62 = (int64_t)1 << 62;
    const int64_t shapes[][3] = {{0, e62, 1},   {0, e62, 2},       {1ll << 31, 0, 1ll << 31},
                                 {0, e53, 512}, {0, INT64_MAX, 1}, {e61, 0, 2},
                                 {0, 0, 0},     {e62, 0, 2}};
    int refused = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        kiln_graph *g = fresh();
        kiln_parameter(g, "x", KILN_DTYPE_F32, 3, shapes[i]);
        kiln_status traced = kiln_graph_status(g);
        kiln_array *a = NULL;
        kiln_status made = kiln_array_create(ctx, KILN_DTYPE_F32, 3, shapes[i], NULL, &a);
        CHECK_MSG(made == traced, "[%lld, %lld, %lld]: kiln_array_create %s, kiln_parameter %s",
                  (long long)shapes[i][0], (long long)shapes[i][1], (long long)shapes[i][2],
                  kiln_status_name(made), kiln_status_name(traced));
        if (made) CHECK_CONTAINS(kiln_last_error(ctx), "extent overflows 2^62");
        CHECK((made == KILN_STATUS_OK) == (a != NULL));
        kiln_array_destroy(a);
        refused += made != KILN_STATUS_OK;
    }
    CHECK_MSG(refused == 3, "%d refused: [0, 2^62, 2], [0, INT64_MAX, 1], [2^62, 0, 2]", refused);
}

static void test_source_errors(void) {
    kiln_graph *g = fresh();
    OP(kiln_parameter(g, "x", KILN_DTYPE_F32, 9, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_parameter", "rank 9");
    g = fresh();
    OP(kiln_parameter(g, "x", KILN_DTYPE_F32, -1, DIMS(1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_parameter", "rank -1");
    g = fresh();
    OP(kiln_parameter(g, "x", KILN_DTYPE_F32, 2, NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_parameter", "dims is NULL");
    g = fresh();
    OP(kiln_parameter(g, "x", KILN_DTYPE_F32, 2, DIMS(2, -3)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_parameter", "negative", "-3");
    g = fresh();
    OP(kiln_parameter(g, "x", (kiln_dtype)9, 1, DIMS(2)));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_parameter", "dtype 9");
    /* sizes whose element count or byte size overflows are errors, not crashes */
    g = fresh();
    OP(kiln_parameter(g, "x", KILN_DTYPE_F32, 2, DIMS(1ll << 40, 1ll << 40)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_parameter", "overflows");
    g = fresh();
    OP(kiln_parameter(g, "x", KILN_DTYPE_F32, 2, DIMS(1ll << 31, 1ll << 31)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_parameter", "overflows");
    g = fresh();
    OP(kiln_constant(g, KILN_DTYPE_F32, 1, DIMS(2), NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_constant", "data is NULL");
    g = fresh();
    OP(kiln_constant(g, KILN_DTYPE_F64, 1, DIMS(INT64_MAX), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_constant", "overflows");
    g = fresh();
    OP(kiln_scalar(g, KILN_DTYPE_INVALID, 1));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_scalar", "not a kiln_dtype");
    g = fresh();
    OP(kiln_full(g, (kiln_dtype)-1, 1, DIMS(2), 1));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_full", "not a kiln_dtype");
    g = fresh();
    OP(kiln_full(g, KILN_DTYPE_F32, 1, NULL, 1));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "dims is NULL");
    g = fresh();
    OP(kiln_iota(g, KILN_DTYPE_I32, 2, DIMS(2, 3), 2));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_iota", "axis 2", "rank 2");
    g = fresh();
    OP(kiln_iota(g, KILN_DTYPE_I32, 2, DIMS(2, 3), -3));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_iota", "axis -3");
    g = fresh();
    OP(kiln_iota(g, KILN_DTYPE_I32, 0, NULL, 0));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_iota", "rank 0");
    g = fresh();
    OP(kiln_iota(g, KILN_DTYPE_BOOL, 1, DIMS(3), 0));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_iota", "numeric", "bool");
}

/* ---------------------------------------------------------------- shapes ---- */

static void test_broadcast_ops(void) {
    kiln_graph *g = fresh();
    kiln_value v3 = P(g, KILN_DTYPE_F32, 3), m = P(g, KILN_DTYPE_I32, 1, 3),
               s = P0(g, KILN_DTYPE_F64);
    kiln_value c = P(g, KILN_DTYPE_F32, 2, 1), z = P(g, KILN_DTYPE_F32, 0);
    CHECK_TYPE(g, kiln_broadcast_in_dim(g, v3, 2, DIMS(2, 3), AXES(1)), "f32[2,3]");
    CHECK_TYPE(g, kiln_broadcast_in_dim(g, v3, 2, DIMS(3, 2), AXES(0)), "f32[3,2]");
    CHECK_TYPE(g, kiln_broadcast_in_dim(g, m, 2, DIMS(4, 3), AXES(0, 1)), "i32[4,3]");
    CHECK_TYPE(g, kiln_broadcast_in_dim(g, s, 2, DIMS(2, 2), NULL), "f64[2,2]");
    CHECK_TYPE(g, kiln_broadcast_in_dim(g, s, 0, NULL, NULL), "f64[]");
    CHECK_TYPE(g, kiln_broadcast_in_dim(g, c, 3, DIMS(2, 5, 3), AXES(0, 2)), "f32[2,5,3]");
    CHECK_TYPE(g, kiln_broadcast_in_dim(g, z, 2, DIMS(2, 0), AXES(1)), "f32[2,0]");
    CHECK_TYPE(g, kiln_broadcast_to(g, v3, 2, DIMS(2, 3)), "f32[2,3]");
    CHECK_TYPE(g, kiln_broadcast_to(g, c, 3, DIMS(7, 2, 5)), "f32[7,2,5]");
    CHECK_TYPE(g, kiln_broadcast_to(g, s, 1, DIMS(4)), "f64[4]");
    CHECK_TYPE(g, kiln_broadcast_to(g, c, 2, DIMS(2, 0)), "f32[2,0]");
    CHECK(kiln_broadcast_to(g, v3, 1, DIMS(3)).id == v3.id); /* nothing to do */
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    g = fresh(), v3 = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_broadcast_in_dim(g, v3, 2, DIMS(2, 4), AXES(1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "f32[3]", "f32[2,4]", "size 3");
    g = fresh(), m = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_broadcast_in_dim(g, m, 3, DIMS(3, 2, 4), AXES(1, 0)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "f32[2,3]", "strictly increasing");
    g = fresh(), m = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_broadcast_in_dim(g, m, 3, DIMS(2, 2, 4), AXES(0, 0)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "strictly increasing");
    g = fresh(), v3 = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_broadcast_in_dim(g, v3, 2, DIMS(2, 3), AXES(2)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "f32[3]", "out of range");
    g = fresh(), v3 = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_broadcast_in_dim(g, v3, 2, DIMS(2, 3), AXES(-1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "f32[3]", "out of range");
    g = fresh(), m = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_broadcast_in_dim(g, m, 1, DIMS(3), AXES(0, 1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "f32[2,3]", "rank 2");
    g = fresh(), v3 = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_broadcast_in_dim(g, v3, 2, DIMS(2, 3), NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_broadcast_in_dim", "f32[3]", "NULL");
    g = fresh(), v3 = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_broadcast_in_dim(g, v3, 9, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 3), AXES(8)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "f32[3]", "rank 9");
    g = fresh(), v3 = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_broadcast_in_dim(g, v3, 2, NULL, AXES(1)));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_broadcast_in_dim", "dims is NULL");
    g = fresh(), s = P0(g, KILN_DTYPE_F32);
    OP(kiln_broadcast_in_dim(g, s, 2, DIMS(2, -1), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_in_dim", "f32[]", "negative");
    g = fresh(), v3 = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_broadcast_to(g, v3, 2, DIMS(3, 4)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_to", "f32[3]", "f32[3,4]", "size 3");
    g = fresh(), m = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_broadcast_to(g, m, 1, DIMS(3)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_to", "f32[2,3]", "rank");
    g = fresh(), m = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_broadcast_to(g, m, -2, DIMS(3)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_broadcast_to", "f32[2,3]", "rank -2");
    /* the result of a broadcast whose byte size overflows is an error */
    g = fresh(), v3 = P(g, KILN_DTYPE_BOOL, 1ll << 62);
    OP(kiln_logical_and(g, v3, P(g, KILN_DTYPE_BOOL, 4, 1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_logical_and", "overflows");
}

static void test_reshape(void) {
    kiln_graph *g = fresh();
    kiln_value x = P(g, KILN_DTYPE_F32, 2, 3), s = P0(g, KILN_DTYPE_I32),
               e = P(g, KILN_DTYPE_F64, 0, 3);
    CHECK_TYPE(g, kiln_reshape(g, x, 1, DIMS(6)), "f32[6]");
    CHECK_TYPE(g, kiln_reshape(g, x, 2, DIMS(3, -1)), "f32[3,2]");
    CHECK_TYPE(g, kiln_reshape(g, x, 1, DIMS(-1)), "f32[6]");
    CHECK_TYPE(g, kiln_reshape(g, x, 3, DIMS(1, -1, 1)), "f32[1,6,1]");
    CHECK_TYPE(g, kiln_reshape(g, x, 4, DIMS(1, 2, 1, 3)), "f32[1,2,1,3]");
    CHECK_TYPE(g, kiln_reshape(g, s, 2, DIMS(1, 1)), "i32[1,1]");
    CHECK_TYPE(g, kiln_reshape(g, kiln_reshape(g, s, 1, DIMS(1)), 0, NULL), "i32[]");
    CHECK_TYPE(g, kiln_reshape(g, e, 2, DIMS(3, 0)), "f64[3,0]");
    CHECK_TYPE(g, kiln_reshape(g, e, 3, DIMS(-1, 3, 5)), "f64[0,3,5]");
    CHECK(kiln_reshape(g, x, 2, DIMS(2, 3)).id == x.id); /* nothing to do */
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_reshape(g, x, 1, DIMS(4)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_reshape", "f32[2,3]", "f32[4]", "6 elements");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_reshape(g, x, 2, DIMS(-1, -1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_reshape", "f32[2,3]", "only one -1");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_reshape(g, x, 2, DIMS(-2, 3)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_reshape", "f32[2,3]", "-2");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_reshape(g, x, 2, DIMS(4, -1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_reshape", "f32[2,3]", "not a multiple of 4");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 0, 3);
    OP(kiln_reshape(g, x, 2, DIMS(0, -1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_reshape", "f32[0,3]", "cannot infer");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_reshape(g, x, 3, DIMS(1ll << 40, 1ll << 40, 0)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_reshape", "f32[2,3]", "overflows");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_reshape(g, x, 9, DIMS(1, 1, 1, 1, 1, 1, 1, 2, 3)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_reshape", "f32[2,3]", "rank 9");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_reshape(g, x, 2, NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_reshape", "f32[2,3]", "dims is NULL");
}

static void test_transpose(void) {
    kiln_graph *g = fresh();
    kiln_value x = P(g, KILN_DTYPE_F32, 2, 3, 4), s = P0(g, KILN_DTYPE_I64);
    CHECK_TYPE(g, kiln_transpose(g, x, AXES(2, 0, 1)), "f32[4,2,3]");
    CHECK_TYPE(g, kiln_transpose(g, x, AXES(1, 2, 0)), "f32[3,4,2]");
    CHECK_TYPE(g, kiln_transpose(g, x, AXES(1, 0, 2)), "f32[3,2,4]");
    CHECK_TYPE(g, kiln_transpose(g, x, AXES(0, 1, 2)), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_transpose(g, x, AXES(2, 1, 0)), "f32[4,3,2]");
    CHECK_TYPE(g, kiln_transpose(g, P(g, KILN_DTYPE_BOOL, 0, 5), AXES(1, 0)), "bool[5,0]");
    CHECK_TYPE(g, kiln_transpose(g, s, NULL), "i64[]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
    OP(kiln_transpose(g, x, AXES(0, 0, 1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_transpose", "f32[2,3,4]", "repeated");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
    OP(kiln_transpose(g, x, AXES(0, 1, 3)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_transpose", "f32[2,3,4]", "out of range");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
    OP(kiln_transpose(g, x, AXES(-1, 0, 1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_transpose", "f32[2,3,4]", "= -1");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
    OP(kiln_transpose(g, x, AXES(1000000, 0, 1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_transpose", "f32[2,3,4]", "1000000");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_transpose(g, x, NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_transpose", "f32[2,3]", "perm is NULL");
}

static void test_slice(void) {
    kiln_graph *g = fresh();
    kiln_value v = P(g, KILN_DTYPE_F32, 10), m = P(g, KILN_DTYPE_I32, 5, 6);
    /* elements 1, 4, 7 */
    CHECK_TYPE(g, kiln_slice(g, v, DIMS(1), DIMS(8), DIMS(3)), "f32[3]");
    /* 0, 4, 8 */
    CHECK_TYPE(g, kiln_slice(g, v, DIMS(0), DIMS(10), DIMS(4)), "f32[3]");
    /* 0..9 by 5: 0, 5 */
    CHECK_TYPE(g, kiln_slice(g, v, DIMS(0), DIMS(10), DIMS(5)), "f32[2]");
    CHECK_TYPE(g, kiln_slice(g, v, DIMS(2), DIMS(7), NULL), "f32[5]");
    CHECK_TYPE(g, kiln_slice(g, v, DIMS(4), DIMS(4), NULL), "f32[0]");
    CHECK_TYPE(g, kiln_slice(g, v, DIMS(10), DIMS(10), DIMS(2)), "f32[0]");
    /* axis 0: 1, 3; axis 1: 0, 5 */
    CHECK_TYPE(g, kiln_slice(g, m, DIMS(1, 0), DIMS(4, 6), DIMS(2, 5)), "i32[2,2]");
    /* a stride far beyond the size takes the first element (and must not overflow) */
    CHECK_TYPE(g, kiln_slice(g, v, DIMS(3), DIMS(10), DIMS(INT64_MAX)), "f32[1]");
    CHECK_TYPE(g, kiln_slice(g, P0(g, KILN_DTYPE_F32), NULL, NULL, NULL), "f32[]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    g = fresh(), v = P(g, KILN_DTYPE_F32, 10);
    OP(kiln_slice(g, v, DIMS(5), DIMS(4), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_slice", "f32[10]", "start 5", "limit 4");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 10);
    OP(kiln_slice(g, v, DIMS(0), DIMS(11), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_slice", "f32[10]", "limit 11", "size 10");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 10);
    OP(kiln_slice(g, v, DIMS(-1), DIMS(3), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_slice", "f32[10]", "start -1");
    g = fresh(), m = P(g, KILN_DTYPE_F32, 5, 6);
    OP(kiln_slice(g, m, DIMS(0, 0), DIMS(5, 6), DIMS(1, 0)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_slice", "f32[5,6]", "axis 1", "stride 0");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 10);
    OP(kiln_slice(g, v, DIMS(8), DIMS(2), DIMS(-2)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_slice", "f32[10]", "stride -2");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 10);
    OP(kiln_slice(g, v, NULL, DIMS(2), NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_slice", "f32[10]", "NULL");
}

static void test_concatenate(void) {
    kiln_graph *g = fresh();
    kiln_value a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_F32, 4, 3);
    CHECK_TYPE(g, kiln_concatenate(g, 2, (kiln_value[]){a, b}, 0), "f32[6,3]");
    CHECK_TYPE(g, kiln_concatenate(g, 3, (kiln_value[]){b, a, b}, -2), "f32[10,3]");
    kiln_value c[5] = {P(g, KILN_DTYPE_I32, 2, 1), P(g, KILN_DTYPE_I32, 2, 2),
                       P(g, KILN_DTYPE_I32, 2, 0), P(g, KILN_DTYPE_I32, 2, 3),
                       P(g, KILN_DTYPE_I32, 2, 4)};
    CHECK_TYPE(g, kiln_concatenate(g, 5, c, 1), "i32[2,10]");
    CHECK_TYPE(g, kiln_concatenate(g, 5, c, -1), "i32[2,10]");
    CHECK(kiln_concatenate(g, 1, &a, 1).id == a.id); /* one operand is itself */
    /* more operands than the builder keeps on its stack */
    kiln_value many[20];
    for (int i = 0; i < 20; i++) many[i] = i % 2 ? a : b; /* 10 * 2 + 10 * 4 rows */
    CHECK_TYPE(g, kiln_concatenate(g, 20, many, 0), "f32[60,3]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_concatenate(g, 2, (kiln_value[]){a, b}, 0));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_concatenate", "f32[2,3], f32[3]", "rank");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_I32, 2, 3);
    OP(kiln_concatenate(g, 2, (kiln_value[]){a, b}, 0));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_concatenate", "f32[2,3], i32[2,3]", "operand 1 is i32");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_F32, 2, 4);
    OP(kiln_concatenate(g, 4, (kiln_value[]){a, a, a, b}, 0));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_concatenate", "f32[2,3], f32[2,3], f32[2,3], f32[2,4]",
               "operand 3", "axis 1");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_concatenate(g, 2, (kiln_value[]){a, a}, 2));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_concatenate", "f32[2,3], f32[2,3]", "axis 2");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_concatenate(g, 2, (kiln_value[]){a, a}, -3));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_concatenate", "axis -3");
    g = fresh(), a = P0(g, KILN_DTYPE_F32);
    OP(kiln_concatenate(g, 2, (kiln_value[]){a, a}, 0));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_concatenate", "f32[], f32[]", "rank 0");
    g = fresh();
    OP(kiln_concatenate(g, 0, NULL, 0));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_concatenate", "at least one");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_concatenate(g, 2, NULL, 0));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_concatenate");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_concatenate(g, 3, (kiln_value[]){a, NONE, a}, 0));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_concatenate", "operand 1", "invalid value");
    /* a concatenated size that overflows int64 */
    g = fresh(), a = P(g, KILN_DTYPE_BOOL, 1ll << 62);
    OP(kiln_concatenate(g, 2, (kiln_value[]){a, a}, 0));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_concatenate", "overflows");
}

static void test_pad(void) {
    kiln_graph *g = fresh();
    kiln_value v = P(g, KILN_DTYPE_F32, 3), z = P0(g, KILN_DTYPE_F32),
               m = P(g, KILN_DTYPE_F32, 2, 3);
    CHECK_TYPE(g, kiln_pad(g, v, z, DIMS(1), DIMS(2), NULL), "f32[6]");
    /* 3 elements, 2 gaps of 2 */
    CHECK_TYPE(g, kiln_pad(g, v, z, DIMS(0), DIMS(0), DIMS(2)), "f32[7]");
    CHECK_TYPE(g, kiln_pad(g, v, z, DIMS(-1), DIMS(-1), NULL), "f32[1]");
    CHECK_TYPE(g, kiln_pad(g, v, z, DIMS(-3), DIMS(0), NULL), "f32[0]");
    /* negative lo/hi after interior padding: 3 + 2*3 - 4 - 1 = 4 */
    CHECK_TYPE(g, kiln_pad(g, v, z, DIMS(-4), DIMS(-1), DIMS(3)), "f32[4]");
    /* axis 0: 2 + 1*1 + 0 + 1 = 4; axis 1: 3 - 1 = 2 */
    CHECK_TYPE(g, kiln_pad(g, m, z, DIMS(0, -1), DIMS(1, 0), DIMS(1, 0)), "f32[4,2]");
    /* an empty axis has no gaps */
    CHECK_TYPE(g, kiln_pad(g, P(g, KILN_DTYPE_F32, 0), z, DIMS(1), DIMS(0), DIMS(5)), "f32[1]");
    CHECK_TYPE(g, kiln_pad(g, z, z, NULL, NULL, NULL), "f32[]");
    kiln_value iv = P(g, KILN_DTYPE_I64, 2);
    CHECK_TYPE(g, kiln_pad(g, iv, kiln_scalar(g, KILN_DTYPE_I64, -1), DIMS(1), DIMS(1), NULL),
               "i64[4]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    kiln_value p;
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3), p = P(g, KILN_DTYPE_F32, 1);
    OP(kiln_pad(g, v, p, DIMS(1), DIMS(1), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_pad", "f32[3], f32[1]", "rank 0");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3), p = P0(g, KILN_DTYPE_F64);
    OP(kiln_pad(g, v, p, DIMS(1), DIMS(1), NULL));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_pad", "f32[3], f64[]", "padding value is f64");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3), p = P0(g, KILN_DTYPE_F32);
    OP(kiln_pad(g, v, p, DIMS(0), DIMS(0), DIMS(-1)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_pad", "f32[3], f32[]", "interior", "negative");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3), p = P0(g, KILN_DTYPE_F32);
    OP(kiln_pad(g, v, p, DIMS(-4), DIMS(0), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_pad", "f32[3], f32[]", "lo -4");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3), p = P0(g, KILN_DTYPE_F32);
    OP(kiln_pad(g, v, p, NULL, DIMS(0), NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_pad", "f32[3], f32[]", "NULL");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_pad(g, v, NONE, DIMS(0), DIMS(0), NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_pad", "padding value", "invalid value");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3), p = P0(g, KILN_DTYPE_F32);
    OP(kiln_pad(g, v, p, DIMS(0), DIMS(INT64_MAX), NULL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_pad", "overflows");
    g = fresh(), v = P(g, KILN_DTYPE_F32, 3), p = P0(g, KILN_DTYPE_F32);
    OP(kiln_pad(g, v, p, DIMS(0), DIMS(0), DIMS(INT64_MAX)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_pad", "overflows");
}

/* ------------------------------------------------------------ reductions ---- */

static void test_reductions(void) {
    kiln_value (*const ops[])(kiln_graph *, kiln_value, int, const int *, bool) = {
        kiln_reduce_sum, kiln_reduce_max, kiln_reduce_min, kiln_reduce_prod, kiln_mean};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        kiln_graph *g = fresh();
        kiln_value x = P(g, KILN_DTYPE_F32, 2, 3, 4), s = P0(g, KILN_DTYPE_F64),
                   z = P(g, KILN_DTYPE_F32, 0, 3);
        CHECK_TYPE(g, ops[k](g, x, 1, AXES(1), false), "f32[2,4]");
        CHECK_TYPE(g, ops[k](g, x, 2, AXES(0, 2), false), "f32[3]");
        CHECK_TYPE(g, ops[k](g, x, 2, AXES(2, 0), false), "f32[3]"); /* any order */
        CHECK_TYPE(g, ops[k](g, x, 1, AXES(-1), false), "f32[2,3]");
        CHECK_TYPE(g, ops[k](g, x, 2, AXES(-3, 1), false), "f32[4]");
        CHECK_TYPE(g, ops[k](g, x, 0, NULL, false), "f32[]");
        CHECK_TYPE(g, ops[k](g, x, 3, NULL, false), "f32[]"); /* NULL: all, naxes ignored */
        CHECK_TYPE(g, ops[k](g, x, 3, AXES(0, 1, 2), false), "f32[]");
        CHECK_TYPE(g, ops[k](g, x, 0, AXES(0), false), "f32[2,3,4]"); /* no axes */
        CHECK_TYPE(g, ops[k](g, x, 0, NULL, true), "f32[1,1,1]");
        CHECK_TYPE(g, ops[k](g, x, 1, AXES(1), true), "f32[2,1,4]");
        CHECK_TYPE(g, ops[k](g, x, 2, AXES(-1, 0), true), "f32[1,3,1]");
        CHECK_TYPE(g, ops[k](g, s, 0, NULL, false), "f64[]");
        CHECK_TYPE(g, ops[k](g, s, 0, NULL, true), "f64[]");
        CHECK_TYPE(g, ops[k](g, z, 1, AXES(0), false), "f32[3]");
        CHECK_TYPE(g, ops[k](g, z, 1, AXES(1), true), "f32[0,1]");
        CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);
    }
    kiln_graph *g = fresh();
    kiln_value i = P(g, KILN_DTYPE_I32, 2, 3), l = P(g, KILN_DTYPE_I64, 4);
    CHECK_TYPE(g, kiln_reduce_sum(g, i, 1, AXES(0), false), "i32[3]");
    CHECK_TYPE(g, kiln_reduce_max(g, l, 0, NULL, true), "i64[1]");
    CHECK_TYPE(g, kiln_reduce_prod(g, l, 1, AXES(-1), false), "i64[]");
    CHECK_TYPE(g, kiln_reduce_min(g, i, 2, AXES(1, 0), true), "i32[1,1]");
}

static void test_reduction_errors(void) {
    kiln_value (*const ops[])(kiln_graph *, kiln_value, int, const int *, bool) = {
        kiln_reduce_sum, kiln_reduce_max, kiln_reduce_min, kiln_reduce_prod, kiln_mean};
    static const char *const names[] = {"kiln_reduce_sum", "kiln_reduce_max", "kiln_reduce_min",
                                        "kiln_reduce_prod", "kiln_mean"};
    kiln_graph *g;
    kiln_value x;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
        OP((AT(g), ops[k](g, x, 1, AXES(3), false)));
        EXPECT_ERR(g, KILN_STATUS_SHAPE, names[k], "f32[2,3,4]", "axis 3", "rank 3");
        g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
        OP((AT(g), ops[k](g, x, 1, AXES(-4), true)));
        EXPECT_ERR(g, KILN_STATUS_SHAPE, names[k], "f32[2,3,4]", "axis -4");
        g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
        OP((AT(g), ops[k](g, x, 2, AXES(1, -2), false)));
        EXPECT_ERR(g, KILN_STATUS_SHAPE, names[k], "f32[2,3,4]", "twice");
        g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
        OP((AT(g), ops[k](g, x, 4, AXES(0, 1, 2, 0), false)));
        EXPECT_ERR(g, KILN_STATUS_SHAPE, names[k], "f32[2,3,4]", "4 axes", "rank 3");
        g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3, 4);
        OP((AT(g), ops[k](g, x, -1, AXES(0), false)));
        EXPECT_ERR(g, KILN_STATUS_SHAPE, names[k], "f32[2,3,4]", "-1 axes");
        g = fresh(), x = P0(g, KILN_DTYPE_F32);
        OP((AT(g), ops[k](g, x, 1, AXES(0), false)));
        EXPECT_ERR(g, KILN_STATUS_SHAPE, names[k], "f32[]", "rank 0");
        g = fresh(), x = P(g, KILN_DTYPE_BOOL, 2);
        OP((AT(g), ops[k](g, x, 0, NULL, false)));
        EXPECT_ERR(g, KILN_STATUS_DTYPE, names[k], "bool[2]");
    }
    g = fresh(), x = P(g, KILN_DTYPE_I32, 2, 3);
    OP(kiln_mean(g, x, 1, AXES(0), false));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_mean", "i32[2,3]", "f32, f64, bf16 or f16");
}

/* ------------------------------------------------------------------ dots ---- */

static kiln_dot_dims dot_dims(int nc, const int *lc, const int *rc, int nb, const int *lb,
                              const int *rb) {
    kiln_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contract = nc, d.n_batch = nb;
    for (int i = 0; i < nc; i++) d.lhs_contract[i] = lc[i], d.rhs_contract[i] = rc[i];
    for (int i = 0; i < nb; i++) d.lhs_batch[i] = lb[i], d.rhs_batch[i] = rb[i];
    return d;
}

static void test_dot_general(void) {
    kiln_graph *g = fresh();
    kiln_value a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F32, 4, 5);
    kiln_dot_dims d = dot_dims(1, AXES(1), AXES(0), 0, NULL, NULL);
    CHECK_TYPE(g, kiln_dot_general(g, a, b, &d), "f32[3,5]");
    /* batch axes first, then lhs's free axes, then rhs's */
    kiln_value ba = P(g, KILN_DTYPE_F32, 2, 3, 4), bb = P(g, KILN_DTYPE_F32, 2, 4, 5);
    d = dot_dims(1, AXES(2), AXES(1), 1, AXES(0), AXES(0));
    CHECK_TYPE(g, kiln_dot_general(g, ba, bb, &d), "f32[2,3,5]");
    /* batch axis in the middle of both operands */
    kiln_value ma = P(g, KILN_DTYPE_F64, 3, 2, 4), mb = P(g, KILN_DTYPE_F64, 4, 2, 5);
    d = dot_dims(1, AXES(2), AXES(0), 1, AXES(1), AXES(1));
    CHECK_TYPE(g, kiln_dot_general(g, ma, mb, &d), "f64[2,3,5]");
    /* outer product: no contraction */
    kiln_value u = P(g, KILN_DTYPE_I32, 2), v = P(g, KILN_DTYPE_I32, 3);
    d = dot_dims(0, NULL, NULL, 0, NULL, NULL);
    CHECK_TYPE(g, kiln_dot_general(g, u, v, &d), "i32[2,3]");
    /* contracting the leading axis; two contracting axes */
    kiln_value ta = P(g, KILN_DTYPE_F32, 4, 3);
    d = dot_dims(1, AXES(0), AXES(0), 0, NULL, NULL);
    CHECK_TYPE(g, kiln_dot_general(g, ta, b, &d), "f32[3,5]");
    kiln_value ca = P(g, KILN_DTYPE_I64, 2, 3, 4), cb = P(g, KILN_DTYPE_I64, 3, 4, 5);
    d = dot_dims(2, AXES(1, 2), AXES(0, 1), 0, NULL, NULL);
    CHECK_TYPE(g, kiln_dot_general(g, ca, cb, &d), "i64[2,5]");
    /* two batch axes given in swapped order */
    kiln_value sa = P(g, KILN_DTYPE_F32, 2, 3, 4), sb = P(g, KILN_DTYPE_F32, 3, 2, 4);
    d = dot_dims(1, AXES(2), AXES(2), 2, AXES(1, 0), AXES(0, 1));
    CHECK_TYPE(g, kiln_dot_general(g, sa, sb, &d), "f32[3,2]");
    /* zero-size contraction */
    kiln_value za = P(g, KILN_DTYPE_F32, 2, 0), zb = P(g, KILN_DTYPE_F32, 0, 3);
    d = dot_dims(1, AXES(1), AXES(0), 0, NULL, NULL);
    CHECK_TYPE(g, kiln_dot_general(g, za, zb, &d), "f32[2,3]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);
}

static void test_dot_errors(void) {
    kiln_graph *g;
    kiln_value a, b;
    kiln_dot_dims d;
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F32, 5, 6);
    d = dot_dims(1, AXES(1), AXES(0), 0, NULL, NULL);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "f32[3,4], f32[5,6]", "contracting",
               "4 vs 5");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F32, 4, 6);
    d = dot_dims(1, AXES(2), AXES(0), 0, NULL, NULL);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "f32[3,4], f32[4,6]", "lhs contracting",
               "axis 2", "out of range");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F32, 4, 6);
    d = dot_dims(1, AXES(1), AXES(-1), 0, NULL, NULL);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "rhs contracting", "axis -1");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 4, 4), b = P(g, KILN_DTYPE_F32, 4, 4);
    d = dot_dims(2, AXES(1, 1), AXES(0, 1), 0, NULL, NULL);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "f32[4,4], f32[4,4]", "lhs axis 1",
               "twice");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 4, 4), b = P(g, KILN_DTYPE_F32, 4, 4);
    d = dot_dims(1, AXES(0), AXES(0), 1, AXES(1), AXES(0));
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "rhs axis 0", "twice");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3, 4), b = P(g, KILN_DTYPE_F32, 5, 4, 6);
    d = dot_dims(1, AXES(2), AXES(1), 1, AXES(0), AXES(0));
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "f32[2,3,4], f32[5,4,6]", "batch",
               "2 vs 5");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F64, 4, 6);
    d = dot_dims(1, AXES(1), AXES(0), 0, NULL, NULL);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_dot_general", "f32[3,4], f64[4,6]", "dtypes differ");
    g = fresh(), a = P(g, KILN_DTYPE_BOOL, 3, 4), b = P(g, KILN_DTYPE_BOOL, 4, 6);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_dot_general", "bool[3,4], bool[4,6]", "not bool");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F32, 4, 6);
    OP(kiln_dot_general(g, a, b, NULL));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_dot_general", "f32[3,4], f32[4,6]", "NULL");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F32, 4, 6);
    d = dot_dims(0, NULL, NULL, 0, NULL, NULL), d.n_contract = 9;
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_dot_general", "n_contract");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 3, 4), b = P(g, KILN_DTYPE_F32, 4, 6);
    d = dot_dims(0, NULL, NULL, 0, NULL, NULL), d.n_batch = -1;
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_dot_general", "n_batch");
    /* an outer product of two rank-5 values would have rank 10 */
    g = fresh(), a = P(g, KILN_DTYPE_F32, 1, 2, 1, 2, 1), b = P(g, KILN_DTYPE_F32, 2, 1, 2, 1, 2);
    d = dot_dims(0, NULL, NULL, 0, NULL, NULL);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "f32[1,2,1,2,1], f32[2,1,2,1,2]",
               "rank 10");
    /* a result whose byte size overflows */
    g = fresh(), a = P(g, KILN_DTYPE_I32, 1ll << 31, 1), b = P(g, KILN_DTYPE_I32, 1, 1ll << 31);
    d = dot_dims(1, AXES(1), AXES(0), 0, NULL, NULL);
    OP(kiln_dot_general(g, a, b, &d));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_dot_general", "overflows");
}

static void test_matmul(void) {
    static const struct {
        int ra;
        int64_t a[4];
        int rb;
        int64_t b[4];
        const char *want;
    } cases[] = {
        {1, {3}, 1, {3}, "f32[]"},
        {2, {2, 3}, 1, {3}, "f32[2]"},
        {1, {3}, 2, {3, 4}, "f32[4]"},
        {2, {2, 3}, 2, {3, 4}, "f32[2,4]"},
        {3, {5, 2, 3}, 2, {3, 4}, "f32[5,2,4]"},
        {2, {2, 3}, 3, {5, 3, 4}, "f32[5,2,4]"},
        {3, {5, 2, 3}, 3, {5, 3, 4}, "f32[5,2,4]"},
        {3, {1, 2, 3}, 3, {5, 3, 4}, "f32[5,2,4]"},
        {4, {6, 1, 2, 3}, 3, {5, 3, 4}, "f32[6,5,2,4]"},
        {3, {5, 2, 3}, 4, {7, 1, 3, 4}, "f32[7,5,2,4]"},
        {1, {3}, 3, {5, 3, 4}, "f32[5,4]"},
        {3, {5, 2, 3}, 1, {3}, "f32[5,2]"},
        {2, {0, 3}, 2, {3, 4}, "f32[0,4]"},
        {2, {2, 0}, 2, {0, 4}, "f32[2,4]"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_graph *g = fresh();
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, cases[c].ra, cases[c].a);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, cases[c].rb, cases[c].b);
        CHECK_TYPE(g, kiln_matmul(g, a, b), cases[c].want);
    }
    kiln_graph *g = fresh();
    CHECK_TYPE(g, kiln_matmul(g, P(g, KILN_DTYPE_I64, 2, 3), P(g, KILN_DTYPE_I64, 3, 2)),
               "i64[2,2]");

    kiln_value a, b;
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_F32, 4, 5);
    OP(kiln_matmul(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_matmul", "f32[2,3], f32[4,5]", "3", "4");
    /* a batched mistake names the user's operands and leaves no broadcast behind */
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_F32, 5, 4, 6);
    OP(kiln_matmul(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_matmul", "f32[2,3], f32[5,4,6]");
    CHECK(kiln_graph_num_nodes(g) == 2);
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 2, 3), b = P(g, KILN_DTYPE_F32, 3, 3, 4);
    OP(kiln_matmul(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_matmul", "f32[2,2,3], f32[3,3,4]", "batch", "2 vs 3");
    g = fresh(), a = P0(g, KILN_DTYPE_F32), b = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_matmul(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_matmul", "f32[], f32[3]", "rank >= 1");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_I32, 7, 3, 2);
    OP(kiln_matmul(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_matmul", "f32[2,3], i32[7,3,2]", "dtypes differ");
    CHECK(kiln_graph_num_nodes(g) == 2);
    g = fresh(), a = P(g, KILN_DTYPE_BOOL, 2, 3), b = P(g, KILN_DTYPE_BOOL, 3, 2);
    OP(kiln_matmul(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_matmul", "bool[2,3], bool[3,2]");
}

/* -------------------------------------------------------------- indexing ---- */

static void test_indexing(void) {
    kiln_graph *g = fresh();
    kiln_value t = P(g, KILN_DTYPE_F32, 10, 4), i2 = P(g, KILN_DTYPE_I32, 2, 3),
               l1 = P(g, KILN_DTYPE_I64, 5);
    CHECK_TYPE(g, kiln_take_rows(g, t, i2), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_take_rows(g, t, l1), "f32[5,4]");
    CHECK_TYPE(g, kiln_take_rows(g, t, P0(g, KILN_DTYPE_I32)), "f32[4]");
    CHECK_TYPE(g, kiln_take_rows(g, P(g, KILN_DTYPE_I64, 7), l1), "i64[5]");
    CHECK_TYPE(g, kiln_take_rows(g, P(g, KILN_DTYPE_BOOL, 3, 2), P(g, KILN_DTYPE_I32, 0)),
               "bool[0,2]");
    CHECK_TYPE(g, kiln_scatter_add_rows(g, t, l1, P(g, KILN_DTYPE_F32, 5, 4)), "f32[10,4]");
    CHECK_TYPE(g, kiln_scatter_add_rows(g, t, i2, P(g, KILN_DTYPE_F32, 2, 3, 4)), "f32[10,4]");
    CHECK_TYPE(g,
               kiln_scatter_add_rows(g, P(g, KILN_DTYPE_I32, 6), P0(g, KILN_DTYPE_I64),
                                     P0(g, KILN_DTYPE_I32)),
               "i32[6]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);

    kiln_value x, u;
    g = fresh(), t = P(g, KILN_DTYPE_F32, 10, 4), x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_take_rows(g, t, x));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_take_rows", "f32[10,4], f32[3]", "i32 or i64");
    g = fresh(), t = P0(g, KILN_DTYPE_F32), x = P(g, KILN_DTYPE_I32, 3);
    OP(kiln_take_rows(g, t, x));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_take_rows", "f32[], i32[3]", "rank >= 1");
    g = fresh(), t = P(g, KILN_DTYPE_F32, 0, 4), x = P(g, KILN_DTYPE_I32, 3);
    OP(kiln_take_rows(g, t, x));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_take_rows", "f32[0,4], i32[3]", "no rows to take 12");
    g = fresh(), t = P(g, KILN_DTYPE_F32, 2, 2, 2, 2, 2, 2, 2, 2), x = P(g, KILN_DTYPE_I32, 3, 3);
    OP(kiln_take_rows(g, t, x));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_take_rows", "f32[2,2,2,2,2,2,2,2], i32[3,3]", "rank 9");
    g = fresh(), t = P(g, KILN_DTYPE_I32, 4, 1ll << 31), x = P(g, KILN_DTYPE_I32, 1ll << 31);
    OP(kiln_take_rows(g, t, x));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_take_rows", "overflows");
    g = fresh(), t = P(g, KILN_DTYPE_F32, 10, 4), x = P(g, KILN_DTYPE_I32, 3),
    u = P(g, KILN_DTYPE_F32, 3, 5);
    OP(kiln_scatter_add_rows(g, t, x, u));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_scatter_add_rows", "f32[10,4], i32[3], f32[3,5]",
               "f32[3,4]");
    g = fresh(), t = P(g, KILN_DTYPE_F32, 10, 4), x = P(g, KILN_DTYPE_I32, 3),
    u = P(g, KILN_DTYPE_F64, 3, 4);
    OP(kiln_scatter_add_rows(g, t, x, u));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_scatter_add_rows", "f32[10,4], i32[3], f64[3,4]", "f64");
    g = fresh(), t = P(g, KILN_DTYPE_BOOL, 10), x = P(g, KILN_DTYPE_I32, 3),
    u = P(g, KILN_DTYPE_BOOL, 3);
    OP(kiln_scatter_add_rows(g, t, x, u));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_scatter_add_rows", "bool[10], i32[3], bool[3]");
    g = fresh(), t = P(g, KILN_DTYPE_F32, 10), x = P(g, KILN_DTYPE_BOOL, 3),
    u = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_scatter_add_rows(g, t, x, u));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_scatter_add_rows", "bool[3]", "i32 or i64");
    g = fresh(), t = P(g, KILN_DTYPE_F32, 10), x = P(g, KILN_DTYPE_I32, 3);
    OP(kiln_scatter_add_rows(g, t, x, NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_scatter_add_rows", "updates", "invalid");
}

/* ------------------------------------------------------------ composites ---- */

static void test_composites(void) {
    kiln_graph *g = fresh();
    kiln_value x = P(g, KILN_DTYPE_F32, 2, 3, 4), d = P(g, KILN_DTYPE_F64, 5),
               s = P0(g, KILN_DTYPE_F32);
    CHECK_TYPE(g, kiln_softmax(g, x, -1), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_softmax(g, x, 0), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_log_softmax(g, d, 0), "f64[5]");
    CHECK_TYPE(g, kiln_log_softmax(g, x, -2), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_logsumexp(g, x, 1, AXES(1), false), "f32[2,4]");
    CHECK_TYPE(g, kiln_logsumexp(g, x, 1, AXES(1), true), "f32[2,1,4]");
    CHECK_TYPE(g, kiln_logsumexp(g, x, 0, NULL, false), "f32[]");
    CHECK_TYPE(g, kiln_logsumexp(g, x, 0, NULL, true), "f32[1,1,1]");
    CHECK_TYPE(g, kiln_logsumexp(g, x, 2, AXES(-1, 0), false), "f32[3]");
    CHECK_TYPE(g, kiln_logsumexp(g, s, 0, NULL, false), "f32[]");
    CHECK_TYPE(g, kiln_logsumexp(g, d, 1, AXES(0), false), "f64[]");
    CHECK_TYPE(g, kiln_layer_norm(g, x, NONE, NONE, 1e-5), "f32[2,3,4]");
    kiln_value sc = P(g, KILN_DTYPE_F32, 4), bi = P(g, KILN_DTYPE_F32, 4);
    CHECK_TYPE(g, kiln_layer_norm(g, x, sc, bi, 1e-5), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_layer_norm(g, x, sc, NONE, 0), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_layer_norm(g, x, NONE, bi, 1e-3), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_layer_norm(g, d, NONE, NONE, 1e-5), "f64[5]");
    CHECK_TYPE(g, kiln_gelu(g, d, true), "f64[5]");
    CHECK_TYPE(g, kiln_gelu(g, s, true), "f32[]");
    CHECK_TYPE(g, kiln_gelu(g, x, false), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_silu(g, d), "f64[5]");
    CHECK_TYPE(g, kiln_rms_norm(g, x, sc, -1, 1e-6), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_rms_norm(g, x, P(g, KILN_DTYPE_F32, 2), 0, 0), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_rms_norm(g, d, NONE, 0, 1e-5), "f64[5]");
    /* where and clip broadcast all three operands */
    kiln_value c3 = P(g, KILN_DTYPE_BOOL, 3), f21 = P(g, KILN_DTYPE_F32, 2, 1);
    CHECK_TYPE(g, kiln_where(g, c3, f21, s), "f32[2,3]");
    CHECK_TYPE(g, kiln_where(g, P(g, KILN_DTYPE_I32, 4, 1, 1), s, f21), "f32[4,2,1]");
    CHECK_TYPE(g, kiln_where(g, s, d, d), "f64[5]");
    CHECK_TYPE(g, kiln_clip(g, sc, f21, s), "f32[2,4]");
    CHECK_TYPE(g, kiln_clip(g, x, sc, P(g, KILN_DTYPE_F32, 3, 1)), "f32[2,3,4]");
    CHECK_TYPE(g,
               kiln_clip(g, P(g, KILN_DTYPE_I64, 2), P0(g, KILN_DTYPE_I64), P0(g, KILN_DTYPE_I64)),
               "i64[2]");
    CHECK_TYPE(g, kiln_relu(g, x), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_relu(g, P(g, KILN_DTYPE_I32, 3)), "i32[3]");
    kiln_value logits = P(g, KILN_DTYPE_F32, 8, 10), labels = P(g, KILN_DTYPE_I32, 8);
    CHECK_TYPE(g, kiln_softmax_cross_entropy(g, logits, labels), "f32[8]");
    CHECK_TYPE(g, kiln_softmax_cross_entropy(g, P(g, KILN_DTYPE_F64, 10), P0(g, KILN_DTYPE_I64)),
               "f64[]");
    CHECK_TYPE(g, kiln_softmax_cross_entropy(g, x, P(g, KILN_DTYPE_I64, 2, 3)), "f32[2,3]");
    CHECK_TYPE(g,
               kiln_softmax_cross_entropy(g, P(g, KILN_DTYPE_F32, 0, 3), P(g, KILN_DTYPE_I32, 0)),
               "f32[0]");
    /* layer_norm along any axis; square; split; the causal mask */
    CHECK_TYPE(g, kiln_layer_norm_axis(g, x, P(g, KILN_DTYPE_F32, 3), NONE, 1, 1e-5), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_layer_norm_axis(g, x, NONE, P(g, KILN_DTYPE_F32, 2), -3, 0), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_layer_norm_axis(g, x, sc, bi, -1, 1e-5), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_layer_norm_axis(g, d, NONE, NONE, 0, 1e-5), "f64[5]");
    CHECK_TYPE(g, kiln_square(g, x), "f32[2,3,4]");
    CHECK_TYPE(g, kiln_square(g, P(g, KILN_DTYPE_I64, 2)), "i64[2]");
    CHECK_TYPE(g, kiln_square(g, s), "f32[]");
    kiln_value parts[4];
    CHECK_STATUS(kiln_split(g, x, 2, NULL, 0, parts), KILN_STATUS_OK);
    CHECK_TYPE(g, parts[0], "f32[1,3,4]");
    CHECK_TYPE(g, parts[1], "f32[1,3,4]");
    CHECK_STATUS(kiln_split(g, x, 4, DIMS(1, 1, 4), -1, parts), KILN_STATUS_OK);
    CHECK_TYPE(g, parts[0], "f32[2,3,1]");
    CHECK_TYPE(g, parts[1], "f32[2,3,0]");
    CHECK_TYPE(g, parts[2], "f32[2,3,3]");
    CHECK_TYPE(g, parts[3], "f32[2,3,0]");
    CHECK_STATUS(kiln_split(g, P(g, KILN_DTYPE_I32, 0, 2), 3, NULL, 0, parts), KILN_STATUS_OK);
    CHECK_TYPE(g, parts[2], "i32[0,2]");
    CHECK_STATUS(kiln_split(g, d, 1, NULL, 0, parts), KILN_STATUS_OK);
    CHECK_TYPE(g, parts[0], "f64[5]");
    CHECK_TYPE(g, kiln_make_causal_mask(g, 3, 5, KILN_DTYPE_BOOL), "bool[3,5]");
    CHECK_TYPE(g, kiln_make_causal_mask(g, 4, 2, KILN_DTYPE_F32), "f32[4,2]");
    CHECK_TYPE(g, kiln_make_causal_mask(g, 0, 0, KILN_DTYPE_I64), "i64[0,0]");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &x)); /* the verifier accepts every composite */
}

/* KILN_VALUE_NONE is the invalid value {0, 0} by name: optional operands left out with it
 * trace the same graph as with {0, 0}, and a required operand given it is the same error. */
static void test_value_none(void) {
    kiln_value none = KILN_VALUE_NONE;
    CHECK(none.graph == 0 && none.id == 0 && !kiln_value_ok(KILN_VALUE_NONE));
    char *text[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        kiln_graph *g = fresh();
        kiln_value x = P(g, KILN_DTYPE_F32, 2, 4), s = P(g, KILN_DTYPE_F32, 4);
        kiln_value out[3], v = k ? (kiln_value){0, 0} : KILN_VALUE_NONE; /* one line: the */
        out[0] = kiln_layer_norm(g, x, v, s, 1e-5); /* graph text holds locations */
        out[1] = kiln_rms_norm(g, x, v, -1, 1e-5);
        kiln_sgd_options o = {.lr = v, .momentum = v};
        CHECK_OK(ctx, kiln_optim_sgd(g, &o, 1, &s, &s, NULL, &out[2], NULL));
        CHECK_OK(ctx, kiln_graph_finish(g, 3, out));
        text[k] = kiln_graph_to_string(g);
    }
    CHECK(text[0] && text[1] && !strcmp(text[0], text[1]));
    kiln_string_free(ctx, text[0]), kiln_string_free(ctx, text[1]);
    kiln_graph *g = fresh();
    kiln_value x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_add(g, x, KILN_VALUE_NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_add", "the invalid value");
}

static void test_composite_errors(void) {
    kiln_graph *g;
    kiln_value x, y;
    g = fresh(), x = P(g, KILN_DTYPE_I32, 2, 3);
    OP(kiln_softmax(g, x, -1));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_softmax", "i32[2,3]", "f32, f64, bf16 or f16");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_softmax(g, x, 2));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_softmax", "f32[2,3]", "axis 2");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_log_softmax(g, x, -3));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_log_softmax", "f32[2,3]", "axis -3");
    g = fresh(), x = P(g, KILN_DTYPE_BOOL, 2);
    OP(kiln_log_softmax(g, x, 0));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_log_softmax", "bool[2]");
    /* logsumexp's axis mistakes name logsumexp, not the reduction inside it */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_logsumexp(g, x, 1, AXES(5), false));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_logsumexp", "f32[2,3]", "axis 5");
    CHECK(!strstr(kiln_graph_error(g), "reduce"));
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 3);
    OP(kiln_logsumexp(g, x, 2, AXES(0, -2), true));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_logsumexp", "f32[2,3]", "twice");
    g = fresh(), x = P(g, KILN_DTYPE_I64, 2, 3);
    OP(kiln_logsumexp(g, x, 0, NULL, false));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_logsumexp", "i64[2,3]");
    /* layer_norm: scale and bias must be [last axis] of x's dtype */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_layer_norm(g, x, y, NONE, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm", "f32[2,4], f32[3]", "scale", "f32[4]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P(g, KILN_DTYPE_F64, 4);
    OP(kiln_layer_norm(g, x, y, NONE, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_layer_norm", "f32[2,4], f64[4]", "scale");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P(g, KILN_DTYPE_F32, 1, 4);
    OP(kiln_layer_norm(g, x, NONE, y, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm", "f32[2,4], f32[1,4]", "bias");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P0(g, KILN_DTYPE_F32);
    OP(kiln_layer_norm(g, x, NONE, y, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm", "f32[2,4], f32[]", "bias");
    g = fresh(), x = P(g, KILN_DTYPE_I32, 2, 4);
    OP(kiln_layer_norm(g, x, NONE, NONE, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_layer_norm", "i32[2,4]");
    g = fresh(), x = P0(g, KILN_DTYPE_F32);
    OP(kiln_layer_norm(g, x, NONE, NONE, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm", "f32[]", "rank >= 1");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 4);
    OP(kiln_layer_norm(g, x, NONE, NONE, -1));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_layer_norm", "f32[4]", "eps");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 4);
    OP(kiln_layer_norm(g, x, NONE, NONE, NAN));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_layer_norm", "eps");
    /* layer_norm_axis: the axis in range, scale and bias [dim of that axis] */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P(g, KILN_DTYPE_F32, 4);
    OP(kiln_layer_norm_axis(g, x, y, NONE, 0, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm_axis",
               "scale must be f32[2] (axis 0 of x), not f32[4]", "f32[2,4], f32[4]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P(g, KILN_DTYPE_F64, 2);
    OP(kiln_layer_norm_axis(g, x, NONE, y, -2, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_layer_norm_axis", "bias must be f32[2] (axis 0 of x)",
               "not f64[2]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4);
    OP(kiln_layer_norm_axis(g, x, NONE, NONE, 2, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm_axis", "axis 2 is out of range for rank 2",
               "f32[2,4]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4);
    OP(kiln_layer_norm_axis(g, x, NONE, NONE, -3, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm_axis", "axis -3");
    g = fresh(), x = P0(g, KILN_DTYPE_F64);
    OP(kiln_layer_norm_axis(g, x, NONE, NONE, 0, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_layer_norm_axis", "rank >= 1", "f64[]");
    g = fresh(), x = P(g, KILN_DTYPE_I64, 3);
    OP(kiln_layer_norm_axis(g, x, NONE, NONE, 0, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_layer_norm_axis", "i64[3]", "f32, f64, bf16 or f16");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_layer_norm_axis(g, x, NONE, NONE, 0, -0.5));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_layer_norm_axis", "eps -0.5");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_layer_norm_axis(g, NONE, NONE, NONE, 0, 1e-5));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_layer_norm_axis", "the operand", "invalid");
    /* square: numeric */
    g = fresh(), x = P(g, KILN_DTYPE_BOOL, 2, 2);
    OP(kiln_square(g, x));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_square", "bool[2,2]", "f32, f64, bf16, f16, i32 or i64");
    g = fresh();
    OP(kiln_square(g, NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_square", "invalid");
    /* split: n parts that divide the axis, or indices in order within it; every part
     * invalid and the status the graph's on an error */
    kiln_value parts[3] = {{1, 1}, {1, 1}, {1, 1}};
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 5);
    OP((kiln_split(g, x, 2, NULL, 1, parts), parts[0]));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_split", "axis 1 of size 5 does not split into 2 equal",
               "f32[2,5]");
    CHECK(!kiln_value_ok(parts[1]));
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 5);
    OP((kiln_split(g, x, 3, DIMS(3, 2), -1, parts), parts[0]));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_split", "indices[1] = 2 must lie in [3, 5]",
               "f32[2,5]");
    CHECK(!kiln_value_ok(parts[1]) && !kiln_value_ok(parts[2]));
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 5);
    OP((kiln_split(g, x, 2, DIMS(-1), 1, parts), parts[0]));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_split", "indices[0] = -1");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 5);
    OP((kiln_split(g, x, 2, DIMS(6), 1, parts), parts[0]));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_split", "indices[0] = 6 must lie in [0, 5]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 5);
    OP((kiln_split(g, x, 2, NULL, 2, parts), parts[0]));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_split", "axis 2 is out of range for rank 2");
    g = fresh(), x = P0(g, KILN_DTYPE_F32);
    OP((kiln_split(g, x, 1, NULL, 0, parts), parts[0]));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_split", "rank >= 1", "f32[]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 4);
    parts[0] = x;
    OP((kiln_split(g, x, 0, NULL, 0, parts), NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_split", "n = 0");
    CHECK(kiln_value_ok(parts[0])); /* n = 0: nothing written */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 4);
    OP((kiln_split(g, x, 2, NULL, 0, NULL), NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_split", "outs NULL");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 4);
    CHECK_STATUS(kiln_split(g, x, 2, NULL, 1, parts), KILN_STATUS_SHAPE);
    CHECK(!kiln_value_ok(parts[0]) && !kiln_value_ok(parts[1]));
    CHECK_STATUS(kiln_split(NULL, x, 2, NULL, 0, parts), KILN_STATUS_INVALID_ARGUMENT);
    /* make_causal_mask: sizes >= 0, a real dtype */
    g = fresh();
    OP(kiln_make_causal_mask(g, -1, 4, KILN_DTYPE_BOOL));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_make_causal_mask", "T = -1");
    g = fresh();
    OP(kiln_make_causal_mask(g, 4, 4, (kiln_dtype)42));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_make_causal_mask", "dtype 42");
    g = fresh();
    OP(kiln_make_causal_mask(g, INT64_MAX / 2, 4, KILN_DTYPE_F64));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_make_causal_mask");
    g = fresh(), x = P(g, KILN_DTYPE_I32, 4);
    OP(kiln_gelu(g, x, true));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_gelu", "i32[4]");
    g = fresh(), x = P(g, KILN_DTYPE_BOOL, 4);
    OP(kiln_relu(g, x));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_relu", "bool[4]");
    g = fresh(), x = P(g, KILN_DTYPE_I32, 4);
    OP(kiln_sin(g, x));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_sin", "f32, f64, bf16 or f16, not i32", "i32[4]");
    g = fresh(), x = P(g, KILN_DTYPE_I64, 4);
    OP(kiln_erf(g, x));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_erf", "i64[4]");
    g = fresh(), x = P(g, KILN_DTYPE_I32, 4);
    OP(kiln_silu(g, x));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_silu", "i32[4]");
    g = fresh(), x = P(g, KILN_DTYPE_I32, 4);
    OP(kiln_gelu(g, x, false));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_gelu", "i32[4]");
    /* rms_norm: axis, scale [dim of the axis] of x's dtype, eps >= 0, rank >= 1 */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4);
    OP(kiln_rms_norm(g, x, NONE, 2, 1e-6));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_rms_norm", "axis 2", "rank 2", "f32[2,4]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P(g, KILN_DTYPE_F32, 4);
    OP(kiln_rms_norm(g, x, y, 0, 1e-6));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_rms_norm",
               "scale must be f32[2] (axis 0 of x), not f32[4]", "f32[2,4], f32[4]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2, 4), y = P(g, KILN_DTYPE_F64, 4);
    OP(kiln_rms_norm(g, x, y, -1, 1e-6));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_rms_norm", "scale must be f32[4]", "not f64[4]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 4);
    OP(kiln_rms_norm(g, x, NONE, 0, -1));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_rms_norm", "eps -1");
    g = fresh(), x = P0(g, KILN_DTYPE_F32);
    OP(kiln_rms_norm(g, x, NONE, 0, 0));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_rms_norm", "rank >= 1", "f32[]");
    g = fresh(), x = P(g, KILN_DTYPE_I32, 4);
    OP(kiln_rms_norm(g, x, NONE, 0, 0));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_rms_norm", "i32[4]");
    /* where: x and y share a dtype; all three broadcast; invalid operands are named */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3), y = P(g, KILN_DTYPE_F64, 3);
    OP(kiln_where(g, P(g, KILN_DTYPE_BOOL, 3), x, y));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_where", "x and y must share a dtype (f32 vs f64)",
               "bool[3], f32[3], f64[3]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3), y = P(g, KILN_DTYPE_F32, 2, 1);
    OP(kiln_where(g, P(g, KILN_DTYPE_I32, 4), x, y));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_where", "cannot be broadcast",
               "i32[4], f32[3], f32[2,1]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_where(g, NONE, x, x));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_where", "the condition", "invalid");
    /* clip: lo and hi of x's dtype, broadcastable; x numeric */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_clip(g, x, P0(g, KILN_DTYPE_I32), P0(g, KILN_DTYPE_F32)));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_clip",
               "lo and hi must have x's dtype f32 (lo i32, hi f32)");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_clip(g, x, P0(g, KILN_DTYPE_F32), P(g, KILN_DTYPE_F32, 2)));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_clip", "cannot be broadcast", "f32[3], f32[], f32[2]");
    g = fresh(), x = P(g, KILN_DTYPE_BOOL, 3);
    OP(kiln_clip(g, x, x, x));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_clip", "bool[3]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 3);
    OP(kiln_clip(g, x, x, NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_clip", "hi", "invalid");
    /* softmax_cross_entropy: labels integer [...] for logits [..., C] */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 8, 10), y = P(g, KILN_DTYPE_F32, 8);
    OP(kiln_softmax_cross_entropy(g, x, y));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_softmax_cross_entropy", "f32[8,10], f32[8]",
               "i32 or i64");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 8, 10), y = P(g, KILN_DTYPE_I32, 7);
    OP(kiln_softmax_cross_entropy(g, x, y));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_softmax_cross_entropy", "f32[8,10], i32[7]", "agree");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 8, 10), y = P(g, KILN_DTYPE_I32, 8, 10);
    OP(kiln_softmax_cross_entropy(g, x, y));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_softmax_cross_entropy", "f32[8,10], i32[8,10]");
    g = fresh(), x = P0(g, KILN_DTYPE_F32), y = P0(g, KILN_DTYPE_I32);
    OP(kiln_softmax_cross_entropy(g, x, y));
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_softmax_cross_entropy", "f32[], i32[]");
    g = fresh(), x = P(g, KILN_DTYPE_I32, 8, 10), y = P(g, KILN_DTYPE_I32, 8);
    OP(kiln_softmax_cross_entropy(g, x, y));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_softmax_cross_entropy", "i32[8,10]");
    g = fresh(), x = P(g, KILN_DTYPE_F32, 8, 10);
    OP(kiln_softmax_cross_entropy(g, x, NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_softmax_cross_entropy", "labels", "invalid");
}

/* ------------------------------------------------ the builder's error rules ---- */

/* A builder made in a helper on another line, as an argument: the error of the op that
 * uses it names the op's line (the location is pushed before the arguments run and
 * popped after), and a location set by hand comes back after a macro call. */
static int helper_line;
static kiln_value make_param(kiln_graph *g, kiln_dtype t) {
    helper_line = __LINE__ + 1;
    return kiln_parameter(g, NULL, t, 1, DIMS(3));
}

static void test_nested_locations(void) {
    kiln_graph *g = fresh();
    OP(kiln_add(g, make_param(g, KILN_DTYPE_F32), make_param(g, KILN_DTYPE_I32)));
    EXPECT_ERR(g, KILN_STATUS_DTYPE, "kiln_add", "f32[3], i32[3]", "dtypes differ");
    char helper[64];
    snprintf(helper, sizeof helper, "test_trace.c:%d", helper_line);
    CHECK_MSG(!strstr(kiln_graph_error(g), helper), "blames the helper: %s", kiln_graph_error(g));

    /* nested builders on later lines of one call */
    g = fresh();
    kiln_value x = P(g, KILN_DTYPE_F32, 4);
    /* clang-format off */
    op_line = __LINE__ + 1;
    last = kiln_softmax(g,
                        kiln_exp(g,
                                 kiln_neg(g, x)),
                        3);
    /* clang-format on */
    const char *e = kiln_graph_error(g);
    char l1[64], l2[64], l3[64];
    snprintf(l1, sizeof l1, "test_trace.c:%d", op_line);
    snprintf(l2, sizeof l2, "test_trace.c:%d", op_line + 1);
    snprintf(l3, sizeof l3, "test_trace.c:%d", op_line + 2);
    CHECK_MSG(strstr(e, "kiln_softmax") && !strstr(e, l2) && !strstr(e, l3),
              "softmax's error at its arguments' lines: %s", e);
    char l4[64]; /* a call over several lines: gcc's __LINE__ is its first, clang's its last */
    snprintf(l4, sizeof l4, "test_trace.c:%d", op_line + 3);
    CHECK_MSG(strstr(e, l1) || strstr(e, l4), "not softmax's line: %s", e);

    /* a location set by hand is current again after a macro call */
    g = fresh();
    kiln_graph_at(g, "model.c", 7);
    x = P(g, KILN_DTYPE_F32, 2);
    kiln_value (*const neg)(kiln_graph *, kiln_value) = kiln_neg; /* no macro: no push */
    kiln_value y = neg(g, x);
    char buf[4096] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w"); /* the last byte stays 0 */
    CHECK(f != NULL);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    if (f) kiln_graph_print(g, f), fclose(f);
    CHECK_MSG(strstr(buf, "model.c:7"), "the neg keeps the location set by hand:\n%s", buf);
}

static void test_first_error_wins(void) {
    kiln_graph *g = fresh();
    kiln_value a = P(g, KILN_DTYPE_F32, 2, 3), b = P(g, KILN_DTYPE_F32, 4);
    OP(kiln_add(g, a, b));
    int first_line = op_line, nodes = kiln_graph_num_nodes(g);
    EXPECT_ERR(g, KILN_STATUS_SHAPE, "kiln_add", "f32[2,3], f32[4]");
    char first[1024];
    snprintf(first, sizeof first, "%s", kiln_graph_error(g));
    /* later mistakes change nothing; later good ops return the invalid value */
    kiln_value r = kiln_reshape(g, a, 1, DIMS(7));
    CHECK(!kiln_value_ok(r));
    CHECK(!kiln_value_ok(kiln_neg(g, a)));
    CHECK(!kiln_value_ok(kiln_parameter(g, "late", KILN_DTYPE_F32, 0, NULL)));
    CHECK(!kiln_value_ok(kiln_concatenate(g, 2, (kiln_value[]){a, a}, 0)));
    CHECK(!kiln_value_ok(kiln_softmax(g, a, 0)));
    CHECK(kiln_graph_num_nodes(g) == nodes);
    CHECK(kiln_graph_num_parameters(g) == 2);
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_SHAPE);
    CHECK(strcmp(kiln_graph_error(g), first) == 0);
    CHECK(strcmp(kiln_last_error(ctx), first) == 0);
    /* another graph's error replaces the context's message ... */
    kiln_graph *h = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "other", &h));
    kiln_reshape(h, P(h, KILN_DTYPE_F32, 2), 1, DIMS(3));
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_reshape");
    /* ... and finishing the first graph puts its first error back */
    CHECK_STATUS(kiln_graph_finish(g, 1, &a), KILN_STATUS_SHAPE);
    CHECK(strcmp(kiln_last_error(ctx), first) == 0);
    char at[64];
    snprintf(at, sizeof at, "test_trace.c:%d", first_line);
    CHECK_CONTAINS(kiln_last_error(ctx), at);
    char copy[1024];
    CHECK(kiln_last_error_copy(ctx, copy, sizeof copy) == strlen(first));
    CHECK(strcmp(copy, first) == 0);
    kiln_graph_destroy(h);
}

static void test_mixing_and_invalid_values(void) {
    kiln_graph *g = fresh(), *h = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "other", &h));
    kiln_value a = P(g, KILN_DTYPE_F32, 2), b = P(h, KILN_DTYPE_F32, 2);
    OP(kiln_add(g, a, b));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_add", "second operand", "graph 't'",
               "mixed between graphs");
    CHECK_STATUS(kiln_graph_status(h), KILN_STATUS_OK);
    kiln_graph_destroy(h);

    /* the first graphs of two new contexts must not look alike */
    kiln_context *c2 = test_context(), *c3 = test_context();
    kiln_graph *g2 = NULL, *g3 = NULL;
    CHECK_OK(c2, kiln_graph_create(c2, "two", &g2));
    CHECK_OK(c3, kiln_graph_create(c3, "three", &g3));
    a = P(g2, KILN_DTYPE_F32, 2), b = P(g3, KILN_DTYPE_F32, 2);
    CHECK(a.graph != b.graph);
    OP(kiln_sub(g2, a, b));
    CHECK(!kiln_value_ok(last));
    CHECK_STATUS(kiln_graph_status(g2), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_graph_error(g2), "second operand is not a value of graph 'two'");
    CHECK_CONTAINS(kiln_last_error(c2), "kiln_sub");
    kiln_graph_destroy(g2);
    kiln_graph_destroy(g3);
    kiln_context_destroy(c2);
    kiln_context_destroy(c3);

    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_neg(g, NONE));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_neg", "the operand is the invalid value");
    /* forged values: right graph, id past the end; id 0 with a graph; no graph */
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_exp(g, (kiln_value){a.graph, 99}));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_exp", "is no value graph 't' made",
               "id 99, and it has 1 values", "comes from a builder");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_mul(g, a, (kiln_value){a.graph, 0}));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_mul", "invalid value");
    g = fresh(), a = P(g, KILN_DTYPE_F32, 2);
    OP(kiln_matmul(g, (kiln_value){0, 1}, a));
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_matmul", "first operand", "not a value");
    kiln_dtype t = KILN_DTYPE_F32;
    int rank = -1;
    CHECK(!kiln_value_type(g, (kiln_value){a.graph, 99}, &t, &rank, NULL));
    CHECK(!kiln_value_type(g, NONE, NULL, NULL, NULL));
    CHECK(!kiln_value_type(NULL, a, NULL, NULL, NULL));
    CHECK(kiln_value_type(g, a, NULL, &rank, NULL) && rank == 1);
}

static void test_finish(void) {
    kiln_graph *g = fresh();
    kiln_value x = P(g, KILN_DTYPE_F32, 2), y = kiln_exp(g, x);
    last = NONE; /* finish makes no value: keep `last` invalid */
    kiln_status s = (op_line = __LINE__, kiln_graph_finish(g, 0, &y));
    CHECK_STATUS(s, KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_finish", "at least one output");

    g = fresh(), x = P(g, KILN_DTYPE_F32, 2);
    op_line = __LINE__, kiln_graph_finish(g, 2, NULL);
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_finish", "NULL");

    g = fresh(), x = P(g, KILN_DTYPE_F32, 2);
    op_line = __LINE__, kiln_graph_finish(g, 2, (kiln_value[]){x, NONE});
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_finish", "output 1", "invalid value");

    g = fresh(), x = P(g, KILN_DTYPE_F32, 2);
    op_line = __LINE__, kiln_graph_finish(g, 1, (kiln_value[]){{x.graph + 1000, x.id}});
    EXPECT_ERR(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_finish", "output 0", "not a value");

    /* a finished graph: ops and a second finish fail on the context, the graph stays good */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2), y = kiln_exp(g, x);
    CHECK_OK(ctx, kiln_graph_finish(g, 2, (kiln_value[]){y, x}));
    CHECK(kiln_graph_num_outputs(g) == 2 && kiln_graph_num_nodes(g) == 2);
    OP(kiln_neg(g, y));
    int line = op_line;
    CHECK(!kiln_value_ok(last));
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_neg");
    CHECK_CONTAINS(kiln_last_error(ctx), "already finished");
    char at[64];
    snprintf(at, sizeof at, "test_trace.c:%d", line);
    CHECK_CONTAINS(kiln_last_error(ctx), at);
    CHECK(!kiln_value_ok(kiln_parameter(g, "late", KILN_DTYPE_F32, 0, NULL)));
    CHECK_STATUS(kiln_graph_finish(g, 1, &y), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_graph_finish");
    CHECK_STATUS(kiln_graph_status(g), KILN_STATUS_OK);
    CHECK(strcmp(kiln_graph_error(g), "") == 0);
    CHECK(kiln_graph_num_outputs(g) == 2 && kiln_graph_num_nodes(g) == 2);
    CHECK(kiln_graph_num_parameters(g) == 1);
    /* the same output twice and a parameter as an output are fine */
    g = fresh(), x = P(g, KILN_DTYPE_F32, 2);
    CHECK_OK(ctx, kiln_graph_finish(g, 3, (kiln_value[]){x, x, x}));
    CHECK(kiln_graph_num_outputs(g) == 3);
}

/* Misuse through the public API returns errors or invalid values; nothing crashes. */
static void test_no_crash_on_misuse(void) {
    kiln_graph *n = NULL;
    kiln_value v = {1, 1};
    int64_t d[1] = {2};
    int ax[1] = {0};
    kiln_dot_dims dd;
    memset(&dd, 0, sizeof dd);
    kiln_value r[] = {
        kiln_parameter(n, "x", KILN_DTYPE_F32, 1, d),
        kiln_constant(n, KILN_DTYPE_F32, 0, NULL, d),
        kiln_scalar(n, KILN_DTYPE_F32, 1),
        kiln_full(n, KILN_DTYPE_F32, 1, d, 0),
        kiln_iota(n, KILN_DTYPE_I32, 1, d, 0),
        kiln_neg(n, v),
        kiln_exp(n, v),
        kiln_logical_not(n, v),
        kiln_convert(n, v, KILN_DTYPE_F64),
        kiln_add(n, v, v),
        kiln_logical_or(n, v, v),
        kiln_compare(n, v, v, KILN_CMP_EQ),
        kiln_select(n, v, v, v),
        kiln_broadcast_in_dim(n, v, 1, d, ax),
        kiln_broadcast_to(n, v, 1, d),
        kiln_reshape(n, v, 1, d),
        kiln_transpose(n, v, ax),
        kiln_slice(n, v, d, d, d),
        kiln_concatenate(n, 1, &v, 0),
        kiln_pad(n, v, v, d, d, d),
        kiln_reduce_sum(n, v, 1, ax, false),
        kiln_reduce_max(n, v, 1, ax, true),
        kiln_reduce_min(n, v, 0, NULL, false),
        kiln_reduce_prod(n, v, 0, NULL, false),
        kiln_mean(n, v, 0, NULL, false),
        kiln_dot_general(n, v, v, &dd),
        kiln_matmul(n, v, v),
        kiln_take_rows(n, v, v),
        kiln_scatter_add_rows(n, v, v, v),
        kiln_relu(n, v),
        kiln_softmax(n, v, 0),
        kiln_log_softmax(n, v, 0),
        kiln_logsumexp(n, v, 0, NULL, false),
        kiln_layer_norm(n, v, v, v, 0),
        kiln_gelu(n, v, true),
        kiln_gelu(n, v, false),
        kiln_silu(n, v),
        kiln_sin(n, v),
        kiln_rms_norm(n, v, v, 0, 0),
        kiln_where(n, v, v, v),
        kiln_clip(n, v, v, v),
        kiln_softmax_cross_entropy(n, v, v),
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) CHECK(!kiln_value_ok(r[i]));
    kiln_graph_at(NULL, "x.c", 1);
    CHECK_STATUS(kiln_graph_finish(NULL, 1, &v), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_graph_status(NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(strcmp(kiln_graph_error(NULL), "") == 0);
    CHECK(kiln_graph_num_nodes(NULL) == 0 && kiln_graph_num_parameters(NULL) == 0 &&
          kiln_graph_num_outputs(NULL) == 0);
    CHECK(kiln_graph_to_string(NULL) == NULL);
    CHECK_STATUS(kiln_graph_print(NULL, stdout), KILN_STATUS_INVALID_ARGUMENT);
    kiln_graph_destroy(NULL);

    /* graph creation misuse */
    kiln_graph *g = (kiln_graph *)&v; /* must be overwritten */
    CHECK_STATUS(kiln_graph_create(NULL, "x", &g), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(g == NULL);
    CHECK_STATUS(kiln_graph_create(ctx, "x", NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "out is NULL");
    CHECK_OK(ctx, kiln_graph_create(ctx, NULL, &g));
    kiln_graph_destroy(g);

    /* NULL and out-of-range arguments on a live graph: each one an error, never a crash */
    struct {
        kiln_status code;
        const char *needle;
    } want[] = {
        {KILN_STATUS_INVALID_ARGUMENT, "dims is NULL"},
        {KILN_STATUS_SHAPE, "rank -1"},
        {KILN_STATUS_SHAPE, "rank 9"},
        {KILN_STATUS_INVALID_ARGUMENT, "dims is NULL"},
        {KILN_STATUS_INVALID_ARGUMENT, "dims is NULL"},
        {KILN_STATUS_INVALID_ARGUMENT, "dims is NULL"},
        {KILN_STATUS_SHAPE, "rank -5"},
        {KILN_STATUS_INVALID_ARGUMENT, "perm is NULL"},
        {KILN_STATUS_INVALID_ARGUMENT, "NULL"},
        {KILN_STATUS_INVALID_ARGUMENT, "NULL"},
        {KILN_STATUS_INVALID_ARGUMENT, "dims is NULL"},
        {KILN_STATUS_INVALID_ARGUMENT, "dims is NULL"},
        {KILN_STATUS_SHAPE, "-3 axes"},
        {KILN_STATUS_INVALID_ARGUMENT, "at least one"},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        g = fresh();
        kiln_value x = P(g, KILN_DTYPE_F32, 2, 3);
        switch (k) {
        case 0: OP(kiln_parameter(g, "p", KILN_DTYPE_F32, 3, NULL)); break;
        case 1: OP(kiln_constant(g, KILN_DTYPE_F32, -1, NULL, NULL)); break;
        case 2: OP(kiln_full(g, KILN_DTYPE_F32, 9, d, 0)); break;
        case 3: OP(kiln_iota(g, KILN_DTYPE_I32, 1, NULL, 0)); break;
        case 4: OP(kiln_broadcast_to(g, x, 2, NULL)); break;
        case 5: OP(kiln_reshape(g, x, 1, NULL)); break;
        case 6: OP(kiln_reshape(g, x, -5, d)); break;
        case 7: OP(kiln_transpose(g, x, NULL)); break;
        case 8: OP(kiln_slice(g, x, d, NULL, NULL)); break;
        case 9: OP(kiln_pad(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0), NULL, NULL, NULL)); break;
        case 10: OP(kiln_constant(g, KILN_DTYPE_F32, 1, NULL, d)); break;
        case 11: OP(kiln_broadcast_in_dim(g, x, 3, NULL, ax)); break;
        case 12: OP(kiln_reduce_sum(g, x, -3, ax, false)); break;
        case 13: OP(kiln_concatenate(g, -2, &x, 0)); break;
        }
        EXPECT_ERR(g, want[k].code, want[k].needle);
    }
}

int main(void) {
    ctx = test_context();
    RUN(test_unary_types);
    RUN(test_binary_broadcasting);
    RUN(test_select_types);
    RUN(test_elementwise_errors);
    RUN(test_promotion);
    RUN(test_sources);
    RUN(test_source_errors);
    RUN(test_array_shapes_as_parameters);
    RUN(test_broadcast_ops);
    RUN(test_reshape);
    RUN(test_transpose);
    RUN(test_slice);
    RUN(test_concatenate);
    RUN(test_pad);
    RUN(test_reductions);
    RUN(test_reduction_errors);
    RUN(test_dot_general);
    RUN(test_dot_errors);
    RUN(test_matmul);
    RUN(test_indexing);
    RUN(test_composites);
    RUN(test_composite_errors);
    RUN(test_value_none);
    RUN(test_nested_locations);
    RUN(test_first_error_wins);
    RUN(test_mixing_and_invalid_values);
    RUN(test_finish);
    RUN(test_no_crash_on_misuse);
    kiln_graph_destroy(G);
    kiln_context_destroy(ctx);
    return test_summary("test_trace");
}
