/* test_sort.c — kiln_argsort, kiln_sort and kiln_top_k (src/trace/sort.c, the argsort op
 * and its kernels):
 *  - positions of small tricky inputs (ties, NaN of both signs, -0.0 and +0.0, +-inf,
 *    several keys, descending, every axis of a rank-3 array, every dtype) computed once
 *    with JAX 0.10.2 (bench/.venv, jax_enable_x64: jnp.argsort(stable), lax.sort with
 *    num_keys, lax.top_k) and written here; the reference interpreter and the compiled
 *    CPU program must both give them exactly;
 *  - compiled against the reference on random rows of many ties, NaNs and zeros of both
 *    signs, every dtype and axis, empty and size-1 axes, long rows (the radix passes and
 *    top_k's partial selection), held to the memory plan (cmp_graph);
 *  - every builder error: status, op, operand types, the bad argument and the caller's line.
 * Gradients (through the values' gather) are test_autodiff.c's; the CUDA kernel runs in
 * test_cuda_emulate.c, its 16-bit forms in test_half_ops.c too. */
#include "base/half.h"
#include "compare.h"

#include <math.h>
#include <stdint.h>

static kiln_context *C;
static uint64_t seed;

enum { ASC, DESC, TOPK };

static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

static int check_i32(kiln_array *a, const int32_t *want, int64_t n, const char *what) {
    int32_t *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    CHECK_OK(C, kiln_array_copy_to_host(a, got, (size_t)n * sizeof *got));
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "%s: position %lld is %d, JAX gives %d\n", what, (long long)i, got[i],
                    want[i]);
            ok = 0;
        }
    free(got);
    return ok;
}

/* The positions `how` gives for x (host bytes of t, rank, dims), through the reference
 * and the compiled program, against JAX's. */
static void check_positions(const char *name, kiln_dtype t, int rank, const int64_t *dims,
                            const void *data, int how, int axis, int k, const int32_t *want) {
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, name, &g));
    kiln_value x = kiln_parameter(g, "x", t, rank, dims), out;
    if (how == TOPK)
        kiln_top_k(g, x, k, NULL, &out);
    else
        out = kiln_argsort(g, x, axis, how == DESC);
    CHECK_OK(C, kiln_graph_finish(g, 1, &out));
    int64_t od[KILN_MAX_RANK], n;
    memcpy(od, dims, (size_t)rank * sizeof *od);
    if (how == TOPK) od[rank - 1] = k;
    n = numel(rank, od);
    kiln_array *arg = NULL, *ref = NULL, *got = NULL;
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_array_create(C, t, rank, dims, data, &arg));
    CHECK_OK(C, kiln_interpret(g, 1, &arg, 1, &ref));
    if (ref) CHECK_MSG(check_i32(ref, want, n, name), "%s: reference", name);
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    if (e) CHECK_OK(C, kiln_executable_run(e, 1, &arg, 1, &got));
    if (got) CHECK_MSG(check_i32(got, want, n, name), "%s: compiled", name);
    kiln_executable_destroy(e);
    kiln_array_destroy(arg), kiln_array_destroy(ref), kiln_array_destroy(got);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------ JAX's positions ---- */

static void jax_floats(void) {
    /* x = {0, -0, 1, nan, -nan, -inf, inf, 0, -0, 1} */
    static const int32_t F32_ASC[] = {5, 0, 1, 7, 8, 2, 9, 6, 3, 4};
    static const int32_t F32_DESC[] = {3, 4, 6, 2, 9, 0, 1, 7, 8, 5};
    static const int32_t F32_TOPK10[] = {3, 6, 2, 9, 0, 7, 1, 8, 5, 4};
    static const int32_t F32_TOPK3[] = {3, 6, 2};
    float x[10] = {0.0f, -0.0f, 1, NAN, -NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 1};
    int64_t d = 10;
    check_positions("f32 asc", KILN_DTYPE_F32, 1, &d, x, ASC, 0, 0, F32_ASC);
    check_positions("f32 desc", KILN_DTYPE_F32, 1, &d, x, DESC, -1, 0, F32_DESC);
    check_positions("f32 top10", KILN_DTYPE_F32, 1, &d, x, TOPK, 0, 10, F32_TOPK10);
    check_positions("f32 top3", KILN_DTYPE_F32, 1, &d, x, TOPK, 0, 3, F32_TOPK3);

    static const int32_t F64_ASC[] = {1, 5, 6, 4, 0, 2, 3};
    static const int32_t F64_DESC[] = {3, 0, 2, 4, 5, 6, 1};
    static const int32_t F64_TOPK7[] = {3, 0, 2, 4, 6, 5, 1};
    double y[7] = {2.5, -1e300, 2.5, NAN, 1e-300, -0.0, 0.0};
    d = 7;
    check_positions("f64 asc", KILN_DTYPE_F64, 1, &d, y, ASC, 0, 0, F64_ASC);
    check_positions("f64 desc", KILN_DTYPE_F64, 1, &d, y, DESC, 0, 0, F64_DESC);
    check_positions("f64 top7", KILN_DTYPE_F64, 1, &d, y, TOPK, 0, 7, F64_TOPK7);

    static const int32_t BF16_ASC[] = {2, 4, 5, 0, 3, 6, 1, 7};
    static const int32_t BF16_DESC[] = {1, 7, 6, 0, 3, 4, 5, 2};
    static const int32_t BF16_TOPK4[] = {1, 7, 6, 0};
    const float bv[8] = {1.5f, NAN, -1.0f, 1.5f, -0.0f, 0.0f, 2.0f, NAN};
    uint16_t b[8];
    for (int i = 0; i < 8; i++) b[i] = kn_f32_to_bf16(bv[i]);
    d = 8;
    check_positions("bf16 asc", KILN_DTYPE_BF16, 1, &d, b, ASC, 0, 0, BF16_ASC);
    check_positions("bf16 desc", KILN_DTYPE_BF16, 1, &d, b, DESC, 0, 0, BF16_DESC);
    check_positions("bf16 top4", KILN_DTYPE_BF16, 1, &d, b, TOPK, 0, 4, BF16_TOPK4);

    /* f16 subnormals (1e-5, 6e-8) order as numbers */
    static const int32_t F16_ASC[] = {1, 3, 5, 4, 0, 2, 6};
    static const int32_t F16_TOPK7[] = {2, 6, 0, 4, 5, 3, 1};
    const float hv[7] = {1e-5f, -1e-5f, 3.0f, -0.0f, 6e-8f, 0.0f, 3.0f};
    uint16_t h[7];
    for (int i = 0; i < 7; i++) h[i] = kn_f32_to_f16(hv[i]);
    d = 7;
    check_positions("f16 asc", KILN_DTYPE_F16, 1, &d, h, ASC, 0, 0, F16_ASC);
    check_positions("f16 top7", KILN_DTYPE_F16, 1, &d, h, TOPK, 0, 7, F16_TOPK7);
}

static void jax_integers(void) {
    static const int32_t I32_AX0[] = {1, 2, 1, 2, 0, 0, 0, 0, 2, 1, 2, 1};
    static const int32_t I32_AX1[] = {1, 3, 0, 2, 2, 0, 1, 3, 1, 3, 0, 2};
    static const int32_t I32_AX0_DESC[] = {0, 0, 0, 0, 2, 1, 2, 1, 1, 2, 1, 2};
    static const int32_t I32_AX1_DESC[] = {0, 2, 3, 1, 3, 0, 1, 2, 0, 2, 3, 1};
    static const int32_t I32_TOPK2[] = {0, 2, 3, 0, 0, 2};
    int32_t m[12] = {3, 1, 3, 2, 1, 1, 0, 2, 3, 0, 3, 1};
    int64_t md[2] = {3, 4};
    check_positions("i32 axis 0", KILN_DTYPE_I32, 2, md, m, ASC, 0, 0, I32_AX0);
    check_positions("i32 axis 1", KILN_DTYPE_I32, 2, md, m, ASC, 1, 0, I32_AX1);
    check_positions("i32 axis 0 desc", KILN_DTYPE_I32, 2, md, m, DESC, -2, 0, I32_AX0_DESC);
    check_positions("i32 axis 1 desc", KILN_DTYPE_I32, 2, md, m, DESC, 1, 0, I32_AX1_DESC);
    check_positions("i32 top2", KILN_DTYPE_I32, 2, md, m, TOPK, 0, 2, I32_TOPK2);

    static const int32_t R3_AX1[] = {1, 2, 0, 0, 2, 1, 2, 0, 0, 1, 1, 2};
    static const int32_t R3_AX1_DESC[] = {0, 1, 2, 0, 1, 2, 0, 1, 1, 2, 2, 0};
    int32_t t3[12] = {4, 1, 2, 2, 4, 0, 1, 1, 1, 3, 0, 3};
    int64_t td[3] = {2, 3, 2};
    check_positions("rank 3 axis 1", KILN_DTYPE_I32, 3, td, t3, ASC, 1, 0, R3_AX1);
    check_positions("rank 3 axis 1 desc", KILN_DTYPE_I32, 3, td, t3, DESC, 1, 0, R3_AX1_DESC);

    static const int32_t I64_ASC[] = {1, 4, 5, 2, 0, 3};
    static const int32_t I64_DESC[] = {0, 3, 2, 5, 4, 1};
    int64_t l[6] = {(int64_t)1 << 40, -((int64_t)1 << 62), 5, (int64_t)1 << 40, -1, 0};
    int64_t d = 6;
    check_positions("i64 asc", KILN_DTYPE_I64, 1, &d, l, ASC, 0, 0, I64_ASC);
    check_positions("i64 desc", KILN_DTYPE_I64, 1, &d, l, DESC, 0, 0, I64_DESC);

    static const int32_t BOOL_ASC[] = {1, 3, 4, 0, 2};
    static const int32_t BOOL_DESC[] = {0, 2, 1, 3, 4};
    static const int32_t BOOL_TOPK3[] = {0, 2, 1};
    uint8_t bo[5] = {1, 0, 1, 0, 0};
    d = 5;
    check_positions("bool asc", KILN_DTYPE_BOOL, 1, &d, bo, ASC, 0, 0, BOOL_ASC);
    check_positions("bool desc", KILN_DTYPE_BOOL, 1, &d, bo, DESC, 0, 0, BOOL_DESC);
    check_positions("bool top3", KILN_DTYPE_BOOL, 1, &d, bo, TOPK, 0, 3, BOOL_TOPK3);
}

/* lax.sort's values: the signs of the sorted x (equal keys keep their order, so the
 * zeros and NaNs come out with the signs they had where they stood). */
static void jax_sort_values(void) {
    static const int SIGN[] = {1, 0, 1, 0, 1, 0, 0, 0, 0, 1};
    float x[10] = {0.0f, -0.0f, 1, NAN, -NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 1};
    int64_t d = 10;
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "sort values", &g));
    kiln_value p = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &d), out;
    CHECK_OK(C, kiln_sort(g, 1, &p, 0, 1, false, &out));
    CHECK_OK(C, kiln_graph_finish(g, 1, &out));
    kiln_array *arg = NULL, *r[2] = {0};
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 1, &d, x, &arg));
    CHECK_OK(C, kiln_interpret(g, 1, &arg, 1, &r[0]));
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    if (e) CHECK_OK(C, kiln_executable_run(e, 1, &arg, 1, &r[1]));
    for (int w = 0; w < 2; w++) {
        float v[10] = {0};
        if (r[w]) CHECK_OK(C, kiln_array_copy_to_host(r[w], v, sizeof v));
        for (int i = 0; i < 10; i++)
            CHECK_MSG(!!signbit(v[i]) == SIGN[i], "%s: element %d's sign",
                      w ? "compiled" : "reference", i);
        CHECK(v[0] == -INFINITY && v[7] == INFINITY && isnan(v[8]) && isnan(v[9]));
    }
    kiln_executable_destroy(e);
    kiln_array_destroy(arg), kiln_array_destroy(r[0]), kiln_array_destroy(r[1]);
    kiln_graph_destroy(g);
}

/* Several keys: (k1 i32, k2 f64, p i64) sorted by the first num_keys; p says where each
 * row went. */
static void lex_case(const char *name, bool swap, int num_keys, bool desc, const double *k2v,
                     const int32_t *want) {
    int32_t k1[6] = {1, 0, 1, 0, 1, 0};
    int64_t pv[6] = {0, 1, 2, 3, 4, 5}, d = 6;
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, name, &g));
    kiln_value a = kiln_parameter(g, "k1", KILN_DTYPE_I32, 1, &d);
    kiln_value b = kiln_parameter(g, "k2", KILN_DTYPE_F64, 1, &d);
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_I64, 1, &d);
    kiln_value ops[3] = {swap ? b : a, swap ? a : b, p}, outs[3];
    CHECK_OK(C, kiln_sort(g, 3, ops, 0, num_keys, desc, outs));
    kiln_value pos = kiln_convert(g, outs[2], KILN_DTYPE_I32);
    CHECK_OK(C, kiln_graph_finish(g, 1, &pos));
    kiln_array *args[3] = {0}, *ref = NULL, *got = NULL;
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_I32, 1, &d, k1, &args[0]));
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F64, 1, &d, k2v, &args[1]));
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_I64, 1, &d, pv, &args[2]));
    CHECK_OK(C, kiln_interpret(g, 3, args, 1, &ref));
    if (ref) CHECK_MSG(check_i32(ref, want, 6, name), "%s: reference", name);
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    if (e) CHECK_OK(C, kiln_executable_run(e, 3, args, 1, &got));
    if (got) CHECK_MSG(check_i32(got, want, 6, name), "%s: compiled", name);
    kiln_executable_destroy(e);
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_array_destroy(ref), kiln_array_destroy(got);
    kiln_graph_destroy(g);
}

static void jax_several_keys(void) {
    static const int32_t LEX2[] = {5, 1, 3, 2, 0, 4};
    static const int32_t LEX1[] = {1, 3, 5, 0, 2, 4};
    static const int32_t LEX2_SWAP[] = {5, 2, 1, 3, 0, 4};
    /* descending: JAX has none for several keys; lax.sort of the negated keys */
    static const int32_t LEX2_DESC[] = {4, 0, 2, 1, 3, 5};
    const double k2[6] = {3, 2, 1, 2, NAN, -0.0}, k2d[6] = {3, 2, 1, 2, 5, -0.0};
    lex_case("two keys", false, 2, false, k2, LEX2);
    lex_case("one key of three", false, 1, false, k2, LEX1);
    lex_case("two keys, f64 first", true, 2, false, k2, LEX2_SWAP);
    lex_case("two keys descending", false, 2, true, k2d, LEX2_DESC);
}

/* ------------------------------------------------- against the reference ---- */

/* n values of t with many ties: small integers, and for floats NaNs of both signs,
 * zeros of both signs and infinities. */
static void *tie_data(kiln_dtype t, int64_t n) {
    size_t es = kiln_dtype_itemsize(t);
    char *p = malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i++) {
        int r = test_rng_int(&seed, 16);
        double v = r - 6;
        if (r == 13) v = NAN;
        if (r == 14) v = -NAN;
        if (r == 15) v = -0.0;
        if (r == 12 && test_rng_int(&seed, 2)) v = test_rng_int(&seed, 2) ? INFINITY : -INFINITY;
        if (test_rng_int(&seed, 4) == 0) v += test_rng_unit(&seed); /* some distinct ones */
        switch (t) {
        case KILN_DTYPE_F32: ((float *)p)[i] = (float)v; break;
        case KILN_DTYPE_F64: ((double *)p)[i] = v; break;
        case KILN_DTYPE_BF16: ((uint16_t *)p)[i] = kn_f32_to_bf16((float)v); break;
        case KILN_DTYPE_F16: ((uint16_t *)p)[i] = kn_f32_to_f16((float)v); break;
        case KILN_DTYPE_I32: ((int32_t *)p)[i] = isfinite(v) ? (int32_t)(v * 3) : INT32_MIN; break;
        case KILN_DTYPE_I64:
            ((int64_t *)p)[i] = isfinite(v) ? (int64_t)(v * 1e12) : INT64_MAX;
            break;
        default: ((uint8_t *)p)[i] = r & 1; break;
        }
    }
    return p;
}

/* argsort both ways, top_k's values and positions (k when the last axis has k), the
 * sorted values: compiled against the reference. */
static void compare_case(kiln_dtype t, int rank, const int64_t *dims, int axis, int k) {
    char name[96];
    snprintf(name, sizeof name, "%s rank %d axis %d k %d", kiln_dtype_name(t), rank, axis, k);
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, name, &g));
    kiln_value x = kiln_parameter(g, "x", t, rank, dims), outs[5];
    outs[0] = kiln_argsort(g, x, axis, false);
    outs[1] = kiln_argsort(g, x, axis, true);
    CHECK_OK(C, kiln_sort(g, 1, &x, axis, 1, test_rng_int(&seed, 2), &outs[2]));
    int n_out = 3;
    if (k >= 0) {
        CHECK_OK(C, kiln_top_k(g, x, k, &outs[3], &outs[4]));
        n_out = 5;
    }
    CHECK_OK(C, kiln_graph_finish(g, n_out, outs));
    void *data = tie_data(t, numel(rank, dims));
    kiln_array *arg = NULL;
    CHECK_OK(C, kiln_array_create(C, t, rank, dims, data, &arg));
    CHECK_MSG(cmp_graph(C, g, 1, &arg, NULL, 0, NULL), "%s: compiled != reference", name);
    free(data);
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
}

static void random_rows(void) {
    static const kiln_dtype types[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                       KILN_DTYPE_I64, KILN_DTYPE_BF16, KILN_DTYPE_F16,
                                       KILN_DTYPE_BOOL};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        kiln_dtype t = types[i];
        compare_case(t, 2, (const int64_t[]){7, 33}, 1, 5);
        compare_case(t, 3, (const int64_t[]){3, 40, 2}, 1, -1);
        compare_case(t, 3, (const int64_t[]){3, 4, 5}, 0, 2);
        compare_case(t, 2, (const int64_t[]){2, 700}, -1, 700); /* radix passes */
        compare_case(t, 2, (const int64_t[]){3, 3000}, 1, 37);  /* top_k selects */
        /* top_k of at most 32 kept in order as the row is read (cpu_sort.c, smallest_row),
         * ties (tie_data's) in position order */
        compare_case(t, 2, (const int64_t[]){3, 3000}, 1, 8);
        compare_case(t, 2, (const int64_t[]){4, 64}, 1, 4);
        compare_case(t, 2, (const int64_t[]){2, 512}, 1, 32);
        compare_case(t, 2, (const int64_t[]){5, 16}, 1, 1);
    }
    /* empty and size-1 axes, k = 0 */
    compare_case(KILN_DTYPE_F32, 2, (const int64_t[]){3, 0}, 1, 0);
    compare_case(KILN_DTYPE_F32, 2, (const int64_t[]){0, 4}, 0, 2);
    compare_case(KILN_DTYPE_I32, 2, (const int64_t[]){5, 1}, 1, 1);
    compare_case(KILN_DTYPE_F64, 2, (const int64_t[]){1, 6}, 0, 0);
    compare_case(KILN_DTYPE_F32, 1, (const int64_t[]){1}, 0, 1);
}

/* A [4, 50257] f32 top_k of 50 and a full sort of the same logits (GPT-2's vocabulary). */
static void vocabulary_rows(void) {
    int64_t dims[2] = {4, 50257};
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "vocabulary", &g));
    kiln_value x = kiln_parameter(g, "logits", KILN_DTYPE_F32, 2, dims), outs[3];
    CHECK_OK(C, kiln_top_k(g, x, 50, &outs[0], &outs[1]));
    outs[2] = kiln_argsort(g, x, 1, true);
    CHECK_OK(C, kiln_graph_finish(g, 3, outs));
    kiln_array *arg = cmp_random_array(C, KILN_DTYPE_F32, 2, dims, &seed);
    CHECK_MSG(cmp_graph(C, g, 1, &arg, NULL, 0, NULL), "vocabulary rows: compiled != reference");
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------------- errors ---- */

static void expect_error(kiln_graph *g, kiln_status code, const char *a, const char *b,
                         const char *c) {
    CHECK_STATUS(kiln_graph_status(g), code);
    const char *m = kiln_graph_error(g);
    CHECK_CONTAINS(m, a);
    CHECK_CONTAINS(m, b);
    CHECK_CONTAINS(m, c);
    CHECK_CONTAINS(m, "test_sort.c");
    kiln_graph_destroy(g);
}

static kiln_graph *graph_with(kiln_value *x, kiln_value *y) {
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "errors", &g));
    *x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (const int64_t[]){2, 5});
    *y = kiln_parameter(g, "y", KILN_DTYPE_I32, 2, (const int64_t[]){2, 4});
    return g;
}

static void errors(void) {
    kiln_value x, y, v, i, outs[2];
    kiln_graph *g = graph_with(&x, &y);
    kiln_argsort(g, x, 2, false);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_argsort", "axis 2", "f32[2,5]");
    g = graph_with(&x, &y);
    CHECK_STATUS(kiln_top_k(g, x, 7, &v, &i), KILN_STATUS_SHAPE);
    CHECK(v.id == 0 && i.id == 0);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_top_k", "k = 7", "f32[2,5]");
    g = graph_with(&x, &y);
    kiln_top_k(g, x, -1, &v, NULL);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_top_k", "k = -1", "[0, 5]");
    g = graph_with(&x, &y);
    kiln_top_k(g, kiln_reduce_sum(g, x, 0, NULL, false), 1, &v, NULL);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_top_k", "rank >= 1", "f32[]");
    g = graph_with(&x, &y);
    CHECK_STATUS(kiln_sort(g, 2, (kiln_value[]){x, y}, 1, 1, false, outs), KILN_STATUS_SHAPE);
    CHECK(outs[0].id == 0 && outs[1].id == 0);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_sort", "operand 1", "i32[2,4]");
    g = graph_with(&x, &y);
    kiln_sort(g, 1, &x, 1, 2, false, outs);
    expect_error(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_sort", "num_keys = 2", "n_operands = 1");
    g = graph_with(&x, &y);
    kiln_sort(g, 1, &x, -3, 1, false, outs);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_sort", "axis -3", "rank 2");
    g = graph_with(&x, &y);
    kiln_top_k(g, x, 1, NULL, NULL);
    expect_error(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_top_k", "both NULL", "f32[2,5]");
}

int main(void) {
    char dir[] = "/tmp/kiln-test-sort-XXXXXX";
    C = test_private_context(dir);
    if (!C) return 1;
    seed = test_seed(35);
    RUN(jax_floats);
    RUN(jax_integers);
    RUN(jax_sort_values);
    RUN(jax_several_keys);
    RUN(random_rows);
    RUN(vocabulary_rows);
    RUN(errors);
    kiln_context_destroy(C);
    test_remove_dir(dir);
    return test_summary("test_sort");
}
