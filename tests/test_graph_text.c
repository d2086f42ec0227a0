/* test_graph_text.c — kiln_graph_save / kiln_graph_load / kiln_graph_parse.
 *
 * Round trips: random programs (tests/randprog.h), the example models (a transformer block,
 * an AdamW training step with its backward pass) and a graph with large constants of every
 * dtype are saved, loaded, saved again (the same text, every constant value included) and
 * evaluated by the reference interpreter on the same arguments (the same bits). Faults: a
 * table of broken texts, each with the status and the message (file:line, what is wrong)
 * it must give; file errors; every host allocation of a load failed in turn. */
#include "test.h"
#include "fault.h"
#include "randprog.h"
#include "compare.h"
#include "ir/ir.h"
#include "../examples/models.h"

#include <float.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/kiln-test-graph-text-XXXXXX";

/* kiln_graph_save's text of g (malloc'd), or NULL. */
static char *saved_text(const kiln_graph *g, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    if (kiln_graph_save(g, path)) return NULL;
    return test_read_file(path);
}

/* Saves g, loads it back, and checks that the text and the interpreter's results agree. */
static void round_trip(kiln_context *ctx, kiln_graph *g, const char *what, uint64_t seed) {
    char path[512];
    snprintf(path, sizeof path, "%s/g.kir", tmpdir);
    CHECK_OK(ctx, kiln_graph_save(g, path));
    kiln_graph *h = NULL;
    CHECK_OK(ctx, kiln_graph_load(ctx, path, &h));
    if (!h) {
        fprintf(stderr, "  (%s)\n", what);
        return;
    }
    char *a = saved_text(g, "a.kir"), *b = saved_text(h, "b.kir");
    CHECK_MSG(a && b && !strcmp(a, b), "%s: the loaded graph saves differently", what);
    free(a);
    free(b);

    int np = kiln_graph_num_parameters(g), no = kiln_graph_num_outputs(g);
    CHECK(np == kiln_graph_num_parameters(h) && no == kiln_graph_num_outputs(h));
    /* The loaded graph's parameters and outputs, reached through the public getters, have
     * the original's types. */
    for (int i = 0; i < np + no; i++) {
        kiln_value va = i < np ? kiln_graph_parameter(g, i) : kiln_graph_output(g, i - np);
        kiln_value vb = i < np ? kiln_graph_parameter(h, i) : kiln_graph_output(h, i - np);
        kiln_dtype ta, tb;
        int ra, rb;
        int64_t da[KILN_MAX_RANK], db[KILN_MAX_RANK];
        CHECK(kiln_value_type(g, va, &ta, &ra, da) && kiln_value_type(h, vb, &tb, &rb, db));
        CHECK_MSG(ta == tb && ra == rb && !memcmp(da, db, (size_t)ra * sizeof *da),
                  "%s: %s %d has another type after loading", what, i < np ? "parameter" : "output",
                  i < np ? i : i - np);
    }
    CHECK(!kiln_value_ok(kiln_graph_parameter(h, np)) && !kiln_value_ok(kiln_graph_output(h, -1)));
    kiln_array **args = calloc((size_t)np + 1, sizeof *args);
    kiln_array *oa[KILN_MAX_OUTPUTS] = {0}, *ob[KILN_MAX_OUTPUTS] = {0};
    for (int i = 0; i < np; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        int64_t dims[KILN_MAX_RANK];
        for (int k = 0; k < p->shape.rank; k++) dims[k] = p->shape.dims[k];
        args[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, dims, &seed);
    }
    CHECK_OK(ctx, kiln_interpret(g, np, args, no, oa));
    CHECK_OK(ctx, kiln_interpret(h, np, args, no, ob));
    for (int i = 0; i < no; i++) {
        if (!oa[i] || !ob[i]) continue;
        size_t n = kiln_array_nbytes(oa[i]);
        char *x = malloc(n + 1), *y = malloc(n + 1);
        CHECK(kiln_array_nbytes(ob[i]) == n);
        kiln_array_copy_to_host(oa[i], x, n);
        kiln_array_copy_to_host(ob[i], y, n);
        CHECK_MSG(!memcmp(x, y, n), "%s: output %d differs after the round trip", what, i);
        free(x);
        free(y);
    }
    for (int i = 0; i < no; i++) kiln_array_destroy(oa[i]), kiln_array_destroy(ob[i]);
    for (int i = 0; i < np; i++) kiln_array_destroy(args[i]);
    free(args);
    kiln_graph_destroy(h);
}

static void random_programs(kiln_context *ctx) {
    int count = rp_program_count(40);
    uint64_t s0 = test_seed(1);
    for (int gi = 0; gi < count; gi++) {
        rp_state *s = calloc(1, sizeof *s);
        s->seed = s0 * 6364136223846793005ull + (uint64_t)gi * 1442695040888963407ull + 1;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, gi % 3 ? "random" : "a \"quoted\" name\\with\ttab", &g);
        int n = 1 + rp_int(s, 3);
        for (int i = 0; i < n; i++) rp_sub(s, g);
        if (kiln_graph_finish(g, s->n_outs, s->outs) == KILN_STATUS_OK) {
            char what[64];
            snprintf(what, sizeof what, "random graph %d", gi);
            round_trip(ctx, g, what, s->seed);
        } else {
            CHECK_MSG(0, "random graph %d did not build: %s", gi, kiln_last_error(ctx));
        }
        kiln_graph_destroy(g);
        free(s);
    }
}

static void example_models(kiln_context *ctx) {
    for (int i = 0; i < N_MODELS; i++) {
        model m;
        if (model_build(ctx, &models[i], &m) != KILN_STATUS_OK) {
            CHECK_MSG(0, "model %s: %s", models[i].name, kiln_last_error(ctx));
            continue;
        }
        round_trip(ctx, m.g, models[i].name, 7);
        kiln_graph_destroy(m.g);
    }
}

/* The elementwise ops and composites of issue 14 (sin, cos, erf, exact gelu, silu, rms_norm,
 * where, clip) read back as the primitives they were traced to. */
static void new_ops(kiln_context *ctx) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "new_ops", &g));
    int64_t d[2] = {3, 4}, d4 = 4;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value s = kiln_parameter(g, "s", KILN_DTYPE_F32, 1, &d4);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_I32, 2, (const int64_t[]){3, 1});
    kiln_value o[6] = {
        kiln_sin(g, x),         kiln_add(g, kiln_cos(g, x), kiln_erf(g, s)),
        kiln_gelu(g, x, false), kiln_silu(g, kiln_rms_norm(g, x, s, -1, 1e-6)),
        kiln_where(g, c, x, s), kiln_clip(g, x, kiln_neg(g, kiln_abs(g, s)), kiln_abs(g, s))};
    CHECK_OK(ctx, kiln_graph_finish(g, 6, o));
    round_trip(ctx, g, "new ops", 11);
    kiln_graph_destroy(g);
}

/* Constants of every dtype, large (all values written) and special (nan, inf, -0, the
 * extremes of each integer type), with names that need escapes. */
static void constants(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "consts", &g);
    int64_t n = 40;
    float f[40];
    double d[40];
    int32_t i32[40];
    int64_t i64[40];
    uint8_t b[40];
    for (int i = 0; i < 40; i++) {
        f[i] = (float)(i * 0.1) - 1.5f;
        d[i] = i * 1e-300 + i * 3.14159;
        i32[i] = i * 1000003 - 20000000;
        i64[i] = (int64_t)i * 1000000000007ll - 3;
        b[i] = (uint8_t)(i % 3 == 0);
    }
    f[1] = NAN, f[2] = INFINITY, f[3] = -INFINITY, f[4] = -0.0f, f[5] = 1e-45f, f[6] = FLT_MAX;
    d[1] = -NAN, d[2] = DBL_MIN / 4, d[3] = -DBL_MAX;
    /* NaNs with payloads, quiet and signalling: their bits survive the text (nan0x...) */
    memcpy(&f[7], &(uint32_t){0x7fc00001u}, 4), memcpy(&f[8], &(uint32_t){0xffc12345u}, 4);
    memcpy(&f[9], &(uint32_t){0x7f800001u}, 4);
    memcpy(&d[4], &(uint64_t){0x7ff0000000000001ull}, 8);
    i32[0] = INT32_MIN, i32[1] = INT32_MAX, i64[0] = INT64_MIN, i64[1] = INT64_MAX;
    kiln_value x = kiln_parameter(g, "x\"\\'\x01", KILN_DTYPE_F32, 1, &n);
    kiln_value outs[5];
    outs[0] = kiln_add(g, x, kiln_constant(g, KILN_DTYPE_F32, 1, &n, f));
    outs[1] = kiln_constant(g, KILN_DTYPE_F64, 1, &n, d);
    outs[2] = kiln_constant(g, KILN_DTYPE_I32, 1, &n, i32);
    outs[3] = kiln_constant(g, KILN_DTYPE_I64, 1, &n, i64);
    outs[4] = kiln_logical_not(g, kiln_constant(g, KILN_DTYPE_BOOL, 1, &n, b));
    CHECK_OK(ctx, kiln_graph_finish(g, 5, outs));
    round_trip(ctx, g, "constants", 3);
    char *text = saved_text(g, "consts.kir");
    CHECK(text && strstr(text, "nan0x7fc00001") && strstr(text, "nan0xffc12345") &&
          strstr(text, "nan0x7ff0000000000001"));
    free(text);
    kiln_graph_destroy(g);
}

/* bf16 and f16 parameters and constants, special values included (NaN, infinities, -0,
 * the least subnormal, the largest finite): every bit pattern survives the text. */
static void half_constants(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "halves", &g);
    int64_t n = 12;
    static const uint16_t bf[12] = {0x3f80, 0xbfc0, 0x7fc0, 0x7f80, 0xff80, 0x8000,
                                    0x0001, 0x7f7f, 0x3dcd, 0x7fc1, 0x0080, 0xffa5};
    static const uint16_t hf[12] = {0x3c00, 0xbe00, 0x7e00, 0x7c00, 0xfc00, 0x8000,
                                    0x0001, 0x7bff, 0x2e66, 0x7e01, 0x0400, 0xfd23};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_BF16, 1, &n);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F16, 1, &n);
    kiln_value outs[4] = {kiln_add(g, x, kiln_constant(g, KILN_DTYPE_BF16, 1, &n, bf)),
                          kiln_mul(g, y, kiln_constant(g, KILN_DTYPE_F16, 1, &n, hf)),
                          kiln_constant(g, KILN_DTYPE_BF16, 1, &n, bf),
                          kiln_constant(g, KILN_DTYPE_F16, 1, &n, hf)};
    CHECK_OK(ctx, kiln_graph_finish(g, 4, outs));
    round_trip(ctx, g, "16-bit constants", 5);
    kiln_graph_destroy(g);
}

/* The indexing and shape ops (composites: their parts are saved), fill values (NaN and
 * the integer minimum) included. */
static void index_ops(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "index ops", &g);
    int64_t d[] = {3, 4}, n2[] = {2};
    const int32_t iv[] = {-1, 9};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value k = kiln_parameter(g, "k", KILN_DTYPE_I64, 2, d);
    kiln_value ix = kiln_constant(g, KILN_DTYPE_I32, 1, n2, iv);
    kiln_value outs[8] = {
        kiln_take(g, x, ix, 1, KILN_GATHER_FILL),
        kiln_take(g, k, ix, 0, KILN_GATHER_FILL),
        kiln_take_along_axis(g, x, kiln_reshape(g, ix, 2, (const int64_t[]){1, 2}), 1,
                             KILN_GATHER_WRAP),
        kiln_stack(g, 2, (kiln_value[]){x, x}, -1),
        kiln_argmax(g, x, 0),
        kiln_argmin(g, k, 1),
        kiln_cumsum(g, k, 1, true),
        kiln_one_hot(g, ix, 10, KILN_DTYPE_BOOL),
    };
    CHECK_OK(ctx, kiln_graph_finish(g, 8, outs));
    round_trip(ctx, g, "index ops", 5);
    kiln_graph_destroy(g);
}

/* Sorting: argsort's axis, k and flags are read back (top_k's total order among them),
 * several keys included. */
static void sort_ops(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "sort ops", &g);
    int64_t d[] = {3, 4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value k = kiln_parameter(g, "k", KILN_DTYPE_I64, 2, d);
    kiln_value outs[6];
    outs[0] = kiln_argsort(g, x, 0, true);
    kiln_top_k(g, x, 2, &outs[1], &outs[2]);
    kiln_sort(g, 2, (kiln_value[]){k, x}, 1, 2, false, &outs[3]);
    outs[5] = kiln_argsort(g, k, -1, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 6, outs));
    char *text = kiln_graph_to_string(g);
    CHECK_CONTAINS(text, "argsort(%1) axis=1 k=2 descending total : i32[3,2]");
    kiln_string_free(ctx, text);
    round_trip(ctx, g, "sort ops", 5);
    kiln_graph_destroy(g);
}

/* Broken texts: each must fail with `status` and a message holding `want`. */
typedef struct bad_text {
    const char *text, *want;
    kiln_status status;
} bad_text;

#define HDR "graph t(%1: f32[2,3] \"x\") {\n  %1 = parameter 0 \"x\" : f32[2,3]\n"

static const bad_text bad[] = {
    {"", "t.kir:1: expected \"graph\"", KILN_STATUS_INVALID_ARGUMENT},
    {"graf t() {\n", "t.kir:1: expected \"graph\", found \"graf\"", KILN_STATUS_INVALID_ARGUMENT},
    {"graph t( {\n", "t.kir:1: expected \"%\"", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = exp(%1) : f32[2,3]\n", "expected a value (%N = ...) or \"return\"",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = frobnicate(%1) : f32[2,3]\n  return (%2)\n}\n",
     "t.kir:3: unknown op \"frobnicate\"", KILN_STATUS_INVALID_ARGUMENT},
    /* a NaN's bits that are no NaN (1.0), or wider than the dtype */
    {HDR "  %2 = constant {nan0x3f800000, 1} : f32[2]\n  return (%2)\n}\n",
     "t.kir:3: \"nan0x3f800000\" is not a f32 NaN's bits", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = constant {nan0x17fc00000} : bf16[1]\n  return (%2)\n}\n",
     "\"nan0x17fc00000\" is not a bf16 NaN's bits", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = argsort(%1) axis=1 k=9 : i32[2,9]\n  return (%2)\n}\n",
     "k = 9 is outside [0, 3], the length of axis 1", KILN_STATUS_SHAPE},
    {HDR "  %2 = exp(%7) : f32[2,3]\n  return (%2)\n}\n",
     "t.kir:3: %7 is used before it is defined", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = exp(%1) : f32[3,2]\n  return (%2)\n}\n",
     "t.kir:3: %2: the text says f32[3,2], but the op gives f32[2,3]",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = add(%1, %1, %1) : f32[2,3]\n  return (%2)\n}\n",
     "t.kir:3: add takes 2 operands, the text gives 3", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = transpose(%1) perm=[0,0] : f32[2,3]\n  return (%2)\n}\n",
     "t.kir:3: kiln_transpose", KILN_STATUS_SHAPE},
    {HDR "  %2 = transpose(%1) : f32[3,2]\n  return (%2)\n}\n", "transpose needs perm=[...]",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = exp(%1) axis=1 : f32[2,3]\n  return (%2)\n}\n", "exp has no attribute \"axis\"",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = reshape(%1) : f32[7]\n  return (%2)\n}\n", "t.kir:3: kiln_reshape",
     KILN_STATUS_SHAPE},
    {HDR "  %2 = exp(%1) : f33[2,3]\n  return (%2)\n}\n", "unknown dtype \"f33\"",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = exp(%1) : f32[2,3\n", "expected \"]\"", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = constant {1, 2} : f32[3]\n  return (%2)\n}\n", "expected \",\"",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = constant {1, 2, 3, 4} : f32[3]\n  return (%2)\n}\n",
     "constant of 3 values: expected \"}\"", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = constant {40 values} : f32[40]\n  return (%2)\n}\n",
     "shown only by its count: save the graph with kiln_graph_save", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = constant 3000000000 : i32[]\n  return (%2)\n}\n", "is not a i32 value",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = constant maybe : bool[]\n  return (%2)\n}\n", "expected true or false",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = exp(%1) : f32[2,3]\n  %2 = exp(%1) : f32[2,3]\n",
     "t.kir:4: %2 after %2: values are numbered in increasing order", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = parameter 3 \"y\" : f32[2]\n", "parameter 3 out of order: the next is 1",
     KILN_STATUS_INVALID_ARGUMENT},
    {"graph t(%1: f32[2,3] \"x\") {\n  %1 = parameter 0 \"y\" : f32[2,3]\n  return (%1)\n}\n",
     "the header names parameter 0 \"x\", its line \"y\"", KILN_STATUS_INVALID_ARGUMENT},
    {"graph t(%1: f32[2,4] \"x\") {\n  %1 = parameter 0 \"x\" : f32[2,3]\n  return (%1)\n}\n",
     "%1: the text says f32[2,4], but the op gives f32[2,3]", KILN_STATUS_INVALID_ARGUMENT},
    {"graph t() {\n  %1 = parameter 0 \"x\" : f32[2]\n  return (%1)\n}\n",
     "the header lists 0 parameters, the body makes 1", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  return (%1)\n}\ntrailing\n", "t.kir:5: expected the end of the text",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  return (%1)\n", "t.kir:4: expected \"}\"", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  return (%9)\n}\n", "%9 is used before it is defined", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = exp(%1) : f32[99999999999999999999]\n", "a dimension out of range",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = compare(%1, %1) : bool[2,3]\n  return (%2)\n}\n", "compare needs a direction",
     KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = reduce_sum(%1) axes=[2] : f32[2,3]\n  return (%2)\n}\n",
     "t.kir:3: kiln_reduce_sum: axis 2 is out of range for rank 2", KILN_STATUS_SHAPE},
    {"graph \"unterminated(\n", "unterminated string", KILN_STATUS_INVALID_ARGUMENT},
    {HDR "  %2 = exp(%1) : f32[2,3] # t.c:oops\n  return (%2)\n}\n", NULL, KILN_STATUS_OK},
};

static void broken_texts(kiln_context *ctx) {
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kiln_graph *g = (kiln_graph *)1;
        kiln_status s = kiln_graph_parse(ctx, bad[i].text, strlen(bad[i].text), "t.kir", &g);
        CHECK_MSG(s == bad[i].status, "text %zu: status %s, wanted %s (%s)", i, kiln_status_name(s),
                  kiln_status_name(bad[i].status), kiln_last_error(ctx));
        if (bad[i].want) {
            CHECK_MSG(strstr(kiln_last_error(ctx), bad[i].want),
                      "text %zu: message \"%s\" lacks \"%s\"", i, kiln_last_error(ctx),
                      bad[i].want);
            CHECK(g == NULL);
        }
        kiln_graph_destroy(g);
    }
    /* Every prefix of a good text fails cleanly (or, once complete, loads), and the
     * parser never reads past the length it was given. */
    const char *good = HDR "  %2 = constant {1, 2.5, -3} : f32[3]\n"
                           "  %3 = exp(%1) : f32[2,3]                # m.c:4\n"
                           "  return (%3, %2)\n}\n";
    size_t len = strlen(good);
    char *copy = malloc(len);
    for (size_t n = 0; n <= len; n++) {
        memcpy(copy, good, n); /* not terminated: reading past n would be caught by ASan */
        kiln_graph *g = NULL;
        kiln_status s = kiln_graph_parse(ctx, copy, n, "t.kir", &g);
        CHECK_MSG(n + 1 < len ? s != KILN_STATUS_OK : s == KILN_STATUS_OK,
                  "prefix of %zu bytes: %s", n, kiln_last_error(ctx));
        if (s == KILN_STATUS_OK) {
            char *txt = kiln_graph_to_string(g);
            CHECK_CONTAINS(txt, "%3 = exp(%1) : f32[2,3] ");
            CHECK_CONTAINS(txt, " # m.c:4\n");
            kiln_string_free(ctx, txt);
        }
        kiln_graph_destroy(g);
    }
    free(copy);
}

static void file_errors(kiln_context *ctx) {
    kiln_graph *g = (kiln_graph *)1;
    CHECK_STATUS(kiln_graph_load(ctx, "/nonexistent/g.kir", &g), KILN_STATUS_IO);
    CHECK(g == NULL);
    CHECK_CONTAINS(kiln_last_error(ctx), "cannot read /nonexistent/g.kir: No such file");
    CHECK_STATUS(kiln_graph_load(ctx, tmpdir, &g), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), "not a regular file");

    kiln_graph_create(ctx, "unfinished", &g);
    int64_t n = 2;
    kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    char path[512];
    snprintf(path, sizeof path, "%s/u.kir", tmpdir);
    CHECK_STATUS(kiln_graph_save(g, path), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "not finished");
    kiln_graph_destroy(g);

    /* Saving into a folder that does not exist leaves nothing behind. */
    kiln_graph_create(ctx, "ok", &g);
    kiln_value p = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_graph_finish(g, 1, &p);
    CHECK_STATUS(kiln_graph_save(g, "/nonexistent/dir/g.kir"), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_graph_save: cannot create a file beside");
    /* A failed save does not touch an existing file. */
    snprintf(path, sizeof path, "%s/keep.kir", tmpdir);
    CHECK_OK(ctx, kiln_graph_save(g, path));
    char *before = test_read_file(path);
    CHECK(before && strstr(before, "graph ok("));
    free(before);
    kiln_graph_destroy(g);
}

/* Every host allocation of save+load+destroy failed in turn: clean errors, nothing leaked. */
static kiln_status load_body(kiln_context *c, int *bad_result) {
    kiln_graph *g = NULL;
    kiln_status s = kiln_graph_create(c, "f", &g);
    if (s) return s;
    int64_t d[2] = {3, 4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    float k[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    kiln_value y = kiln_mul(g, kiln_exp(g, x), kiln_constant(g, KILN_DTYPE_F32, 2, d, k));
    int ax = 1;
    kiln_value outs[2] = {y, kiln_reduce_sum(g, y, 1, &ax, false)};
    s = kiln_graph_finish(g, 2, outs);
    char path[512];
    snprintf(path, sizeof path, "%s/fault.kir", tmpdir);
    if (!s) s = kiln_graph_save(g, path);
    kiln_graph_destroy(g);
    if (s) return s;
    kiln_graph *h = NULL;
    s = kiln_graph_load(c, path, &h);
    if (!s && kiln_graph_num_outputs(h) != 2) *bad_result = 1;
    kiln_graph_destroy(h);
    return s;
}

int main(void) {
    if (!mkdtemp(tmpdir)) return perror("mkdtemp"), 2;
    kiln_context *ctx = test_context();
    random_programs(ctx);
    example_models(ctx);
    new_ops(ctx);
    constants(ctx);
    half_constants(ctx);
    index_ops(ctx);
    sort_ops(ctx);
    broken_texts(ctx);
    file_errors(ctx);
    kiln_context_destroy(ctx);

    fault_ctx_case fc = {.cache_dir = tmpdir, .body = load_body, .bad_what = "wrong outputs"};
    fault_sweep sw = {
        .name = "save and load", .run = fault_in_context, .user = &fc, .max_runs = 2000};
    CHECK(fault_sweep_run(&sw) > 0);
    test_remove_dir(tmpdir);
    return test_summary("test_graph_text");
}
