/* test_dynamic_slice.c — kiln_dynamic_slice and kiln_dynamic_update_slice
 * (jax.lax.dynamic_slice / dynamic_update_slice): compiled against the reference
 * interpreter on many shapes, windows and starts (in range, past the end and negative,
 * which XLA clamps into [0, dim - size]), every dtype, alone and fused with what they read
 * and what reads them, with starts that are parameters and starts computed in the program;
 * the reference itself against a slice written out by hand; the update over a donated
 * operand in place; the text form and its round trip; CSE on the sizes; and the errors.
 * Their gradients are checked against finite differences in test_autodiff.c. */
#include "compare.h"
#include "ir/ir.h"
#include "passes/passes.h"

#include <stdint.h>

static const kiln_dtype dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                    KILN_DTYPE_I64, KILN_DTYPE_BOOL, KILN_DTYPE_BF16,
                                    KILN_DTYPE_F16};

typedef struct dyn_case {
    int rank;
    int64_t dims[4];
    int64_t sizes[4]; /* the slice's, and the update's shape */
    int64_t starts[4];
} dyn_case;

static const dyn_case cases[] = {
    {1, {9}, {4}, {2}},
    {1, {9}, {4}, {7}},  /* past the end: clamped to 5 */
    {1, {9}, {4}, {-3}}, /* negative: clamped to 0 */
    {2, {5, 6}, {2, 3}, {1, 2}},
    {2, {5, 6}, {2, 6}, {3, -1}},  /* the whole last axis */
    {2, {5, 6}, {5, 1}, {100, 4}}, /* the whole first axis: any start is 0 */
    {3, {3, 4, 5}, {1, 2, 3}, {2, 3, 4}},
    {3, {3, 4, 5}, {2, 4, 1}, {-7, 0, 4}},
    {4, {2, 3, 4, 5}, {1, 2, 2, 3}, {1, 1, 1, 1}},
    {2, {4, 5}, {0, 2}, {1, 1}}, /* an empty window */
    {2, {4, 5}, {4, 5}, {3, 3}}, /* the whole operand */
    {0, {0}, {0}, {0}},
};
#define N_CASES (sizeof cases / sizeof *cases)

/* The starts' parameters: i32 on even axes, i64 on odd ones (both are accepted). */
static kiln_dtype start_dtype(int a) {
    return a % 2 ? KILN_DTYPE_I64 : KILN_DTYPE_I32;
}

static void make_starts(kiln_graph *g, int rank, kiln_value *st) {
    for (int a = 0; a < rank; a++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", a);
        st[a] = kiln_parameter(g, name, start_dtype(a), 0, NULL);
    }
}

static void start_args(kiln_context *ctx, const dyn_case *dc, kiln_array **args) {
    for (int a = 0; a < dc->rank; a++) {
        int32_t v32 = (int32_t)dc->starts[a];
        int64_t v64 = dc->starts[a];
        CHECK_OK(ctx, kiln_array_create(ctx, start_dtype(a), 0, NULL,
                                        start_dtype(a) == KILN_DTYPE_I32 ? (void *)&v32 : &v64,
                                        &args[a]));
    }
}

static int compare_all_ways(kiln_context *ctx, kiln_graph *g, int n, kiln_array **args) {
    kiln_compile_options unfused = {.disable_fusion = true}, raw = {.disable_passes = true};
    return cmp_graph(ctx, g, n, args, NULL, 1e-5, NULL) &&
           cmp_graph(ctx, g, n, args, &unfused, 1e-5, NULL) &&
           cmp_graph(ctx, g, n, args, &raw, 1e-5, NULL);
}

/* dynamic_slice alone, of an elementwise op (fused into the slice's loop), read by an
 * elementwise op, reduced, and with starts computed in the program (s + 1 - 1: a scalar
 * buffer the kernel reads). */
static void slice_case(kiln_context *ctx, const dyn_case *dc, kiln_dtype t, uint64_t *seed) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "ds", &g);
    kiln_value x = kiln_parameter(g, "x", t, dc->rank, dc->dims), st[4], st2[4];
    make_starts(g, dc->rank, st);
    kiln_value outs[4] = {kiln_dynamic_slice(g, x, dc->rank, st, dc->sizes)};
    int n = 1;
    if (t != KILN_DTYPE_BOOL) {
        for (int a = 0; a < dc->rank; a++) {
            kiln_value one = kiln_scalar(g, start_dtype(a), 1);
            st2[a] = kiln_sub(g, kiln_add(g, st[a], one), kiln_mul(g, one, one));
        }
        kiln_value y = kiln_dynamic_slice(g, kiln_neg(g, x), dc->rank, st2, dc->sizes);
        outs[n++] = kiln_add(g, y, y);
        outs[n++] =
            kiln_reduce_sum(g, kiln_dynamic_slice(g, x, dc->rank, st, dc->sizes), 0, NULL, false);
    }
    CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
    kiln_array *args[5] = {cmp_random_array(ctx, t, dc->rank, dc->dims, seed)};
    start_args(ctx, dc, args + 1);
    CHECK_MSG(compare_all_ways(ctx, g, 1 + dc->rank, args), "dynamic_slice case %d on %s",
              (int)(dc - cases), kiln_dtype_name(t));
    for (int i = 0; i <= dc->rank; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

/* dynamic_update_slice alone, with an update computed inline and an operand computed
 * inline, and read by an elementwise op. */
static void update_case(kiln_context *ctx, const dyn_case *dc, kiln_dtype t, uint64_t *seed) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "dus", &g);
    kiln_value x = kiln_parameter(g, "x", t, dc->rank, dc->dims);
    kiln_value u = kiln_parameter(g, "u", t, dc->rank, dc->sizes), st[4];
    make_starts(g, dc->rank, st);
    kiln_value outs[3] = {kiln_dynamic_update_slice(g, x, u, dc->rank, st)};
    int n = 1;
    if (t != KILN_DTYPE_BOOL) {
        kiln_value y = kiln_dynamic_update_slice(g, kiln_abs(g, x), kiln_neg(g, u), dc->rank, st);
        outs[n++] = kiln_mul(g, y, x);
    }
    CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
    kiln_array *args[6] = {cmp_random_array(ctx, t, dc->rank, dc->dims, seed),
                           cmp_random_array(ctx, t, dc->rank, dc->sizes, seed)};
    start_args(ctx, dc, args + 2);
    CHECK_MSG(compare_all_ways(ctx, g, 2 + dc->rank, args), "dynamic_update_slice case %d on %s",
              (int)(dc - cases), kiln_dtype_name(t));
    for (int i = 0; i < 2 + dc->rank; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void test_compiled(kiln_context *ctx) {
    uint64_t seed = test_seed(0xd15);
    for (size_t c = 0; c < N_CASES; c++)
        for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
            slice_case(ctx, &cases[c], dtypes[d], &seed);
            update_case(ctx, &cases[c], dtypes[d], &seed);
        }
}

/* Runs a graph of one i32 [4, 5] operand x (values 0..19) and rank-0 i32 starts. */
static void run_i32(kiln_context *ctx, kiln_graph *g, const int32_t *starts, int n_starts,
                    int32_t *got, size_t bytes) {
    int64_t dims[2] = {4, 5};
    int32_t v[20];
    for (int i = 0; i < 20; i++) v[i] = i;
    kiln_array *args[4] = {0}, *out = NULL;
    kiln_array_create(ctx, KILN_DTYPE_I32, 2, dims, v, &args[0]);
    for (int i = 0; i < n_starts; i++)
        kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &starts[i], &args[1 + i]);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK_OK(ctx, kiln_executable_run(e, 1 + n_starts, args, 1, &out));
    if (out) kiln_array_copy_to_host(out, got, bytes);
    kiln_array_destroy(out);
    kiln_executable_destroy(e);
    for (int i = 0; i <= n_starts; i++) kiln_array_destroy(args[i]);
}

/* By hand, jax.lax's rule (a negative start counts from the end once, then every start
 * clamps into [0, dim - size]): the [2, 3] window of x = 0..19 ([4, 5]) at (1, 4) clamps to
 * (1, 2): rows 1-2, columns 2-4; at (-5, 1) to (0, 1) (-5 + 4 is still negative). An update
 * of 100 + k at (9, -2) lands at (2, 2): -2 + 5 = 3, clamped to 2. JAX 0.10.2 gives the
 * same: jax.lax.dynamic_update_slice(jnp.arange(20).reshape(4, 5), u, (9, -2)). */
static void test_values(kiln_context *ctx) {
    int64_t dims[2] = {4, 5}, sz[2] = {2, 3};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "ds_hand", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_I32, 2, dims);
    kiln_value st[2] = {kiln_parameter(g, "i", KILN_DTYPE_I32, 0, NULL),
                        kiln_parameter(g, "j", KILN_DTYPE_I32, 0, NULL)};
    kiln_value o = kiln_dynamic_slice(g, x, 2, st, sz);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &o));
    int32_t got[20], want1[6] = {7, 8, 9, 12, 13, 14}, want2[6] = {1, 2, 3, 6, 7, 8};
    run_i32(ctx, g, (const int32_t[]){1, 4}, 2, got, 6 * sizeof *got);
    CHECK_MSG(!memcmp(got, want1, sizeof want1), "slice at (1, 4) differs");
    run_i32(ctx, g, (const int32_t[]){-5, 1}, 2, got, 6 * sizeof *got);
    CHECK_MSG(!memcmp(got, want2, sizeof want2), "slice at (-5, 1) differs");
    /* negative starts beside JAX 0.10.2's jax.lax.dynamic_slice of the same x (eager and
     * under jit alike) */
    static const struct {
        int32_t at[2], want[6];
    } jax[] = {{{-1, -1}, {12, 13, 14, 17, 18, 19}},
               {{-4, -5}, {0, 1, 2, 5, 6, 7}},
               {{-5, -6}, {0, 1, 2, 5, 6, 7}},
               {{-2, 3}, {12, 13, 14, 17, 18, 19}},
               {{2, -4}, {11, 12, 13, 16, 17, 18}}};
    for (size_t k = 0; k < sizeof jax / sizeof *jax; k++) {
        run_i32(ctx, g, jax[k].at, 2, got, 6 * sizeof *got);
        CHECK_MSG(!memcmp(got, jax[k].want, sizeof jax[k].want), "slice at (%d, %d) differs",
                  jax[k].at[0], jax[k].at[1]);
    }
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "dus_hand", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_I32, 2, dims);
    st[0] = kiln_parameter(g, "i", KILN_DTYPE_I32, 0, NULL);
    st[1] = kiln_parameter(g, "j", KILN_DTYPE_I32, 0, NULL);
    kiln_value u =
        kiln_add(g, kiln_iota(g, KILN_DTYPE_I32, 2, sz, 1), kiln_scalar(g, KILN_DTYPE_I32, 100));
    o = kiln_dynamic_update_slice(g, x, u, 2, st);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &o));
    int32_t want3[20];
    for (int i = 0; i < 20; i++) want3[i] = i;
    for (int r = 2; r < 4; r++)
        for (int c = 0; c < 3; c++) want3[r * 5 + 2 + c] = 100 + c;
    run_i32(ctx, g, (const int32_t[]){9, -2}, 2, got, sizeof got);
    CHECK_MSG(!memcmp(got, want3, sizeof want3), "update at (9, -2) differs");
    kiln_graph_destroy(g);
}

/* A cache [8, 16] updated one row at a position, donated: the update runs in place over
 * it (no temporary, no output allocation) and equals the interpreter's. */
static void test_in_place(kiln_context *ctx) {
    int64_t dims[2] = {8, 16}, row[2] = {1, 16};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "cache", &g);
    kiln_value c = kiln_parameter(g, "cache", KILN_DTYPE_F32, 2, dims);
    kiln_value r = kiln_parameter(g, "row", KILN_DTYPE_F32, 2, row);
    kiln_value st[2] = {kiln_parameter(g, "pos", KILN_DTYPE_I32, 0, NULL),
                        kiln_scalar(g, KILN_DTYPE_I32, 0)};
    kiln_value o = kiln_dynamic_update_slice(g, c, kiln_tanh(g, r), 2, st);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &o));
    kiln_compile_options opt = {.n_donate = 1, .donate_argnums = (const int[]){0}};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &opt, &e));
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    CHECK_MSG(a.alias_bytes == 8 * 16 * 4 && a.output_bytes == 0 && a.temp_bytes == 0,
              "the update is not in place: alias %llu, output %llu, temp %llu bytes",
              (unsigned long long)a.alias_bytes, (unsigned long long)a.output_bytes,
              (unsigned long long)a.temp_bytes);
    uint64_t seed = test_seed(0xca);
    for (int pos = 0; pos < 9; pos += 4) {
        kiln_array *args[3] = {cmp_random_array(ctx, KILN_DTYPE_F32, 2, dims, &seed),
                               cmp_random_array(ctx, KILN_DTYPE_F32, 2, row, &seed)};
        int32_t p = pos;
        kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &p, &args[2]);
        kiln_array *want = NULL, *got = NULL;
        CHECK_OK(ctx, kiln_interpret(g, 3, args, 1, &want));
        CHECK_OK(ctx, kiln_executable_run(e, 3, args, 1, &got));
        CHECK_MSG(got && want && cmp_arrays(got, want, 1e-6, 1e-9, "cache"), "position %d", pos);
        kiln_array_destroy(want), kiln_array_destroy(got);
        for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The text: "dynamic_slice(%1, %2, %3) sizes=[2,3]", read back to the same graph; CSE
 * merges two slices of the same sizes and keeps apart two of different sizes. */
static void test_text_and_cse(kiln_context *ctx) {
    int64_t dims[2] = {4, 5}, sz[2] = {2, 3}, sz2[2] = {2, 2};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "text", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dims);
    kiln_value st[2] = {kiln_parameter(g, "i", KILN_DTYPE_I32, 0, NULL),
                        kiln_parameter(g, "j", KILN_DTYPE_I64, 0, NULL)};
    kiln_value a = kiln_dynamic_slice(g, x, 2, st, sz);
    kiln_value b = kiln_dynamic_slice(g, x, 2, st, sz);
    kiln_value c = kiln_dynamic_slice(g, x, 2, st, sz2);
    kiln_value d = kiln_dynamic_update_slice(g, x, kiln_add(g, a, b), 2, st);
    kiln_value o[2] = {d, c};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    char *s = kiln_graph_to_string(g);
    CHECK_CONTAINS(s, "%4 = dynamic_slice(%1, %2, %3) sizes=[2,3] : f32[2,3]");
    CHECK_CONTAINS(s, "%6 = dynamic_slice(%1, %2, %3) sizes=[2,2] : f32[2,2]");
    CHECK_CONTAINS(s, "%8 = dynamic_update_slice(%1, %7, %2, %3) : f32[4,5]");
    kiln_graph *h = NULL;
    CHECK_OK(ctx, kiln_graph_parse(ctx, s, strlen(s), "ds.kir", &h));
    char *t = h ? kiln_graph_to_string(h) : NULL;
    CHECK_MSG(t && !strcmp(s, t), "the loaded graph prints differently:\n%s\n%s", s, t ? t : "");
    kiln_string_free(ctx, s);
    kiln_string_free(ctx, t);
    kiln_graph *m = NULL;
    CHECK_OK(ctx, pass_cse_run(g, &m, NULL));
    int slices = 0;
    for (uint32_t id = 1; m && id < m->n_nodes; id++) slices += m->nodes[id].op == IR_DYNAMIC_SLICE;
    CHECK_MSG(slices == 2, "CSE left %d dynamic slices, not 2", slices);
    kiln_graph_destroy(m);
    kiln_graph_destroy(h);
    kiln_graph_destroy(g);
}

/* The builders' errors name the op, the shapes and the caller's line; the loader's are the
 * same at the text's line. */
static void test_errors(kiln_context *ctx) {
    int64_t dims[2] = {2, 3}, big[2] = {3, 3}, ok[2] = {1, 2}, v3[1] = {3};
    for (int i = 0; i < 7; i++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "bad", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dims);
        kiln_value s32 = kiln_parameter(g, "s", KILN_DTYPE_I32, 0, NULL);
        kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 0, NULL);
        kiln_value vec = kiln_parameter(g, "v", KILN_DTYPE_I32, 1, v3);
        kiln_value st[2] = {s32, s32};
        const char *want = NULL;
        // clang-format off
        int line = __LINE__ + 2;
        switch (i) {
        case 0: kiln_dynamic_slice(g, x, 1, st, ok); want = "kiln_dynamic_slice: 1 start indices for an operand of rank 2 (f32[2,3])"; break;
        case 1: kiln_dynamic_slice(g, x, 2, (kiln_value[]){s32, f}, ok); want = "start index 1 is f32[]; it must be a rank-0 i32 or i64 value"; break;
        case 2: kiln_dynamic_slice(g, x, 2, (kiln_value[]){vec, s32}, ok); want = "start index 0 is i32[3]"; break;
        case 3: kiln_dynamic_slice(g, x, 2, st, big); want = "kiln_dynamic_slice: axis 0: size 3 does not fit in the operand f32[2,3]"; break;
        case 4: kiln_dynamic_update_slice(g, x, kiln_parameter(g, "u", KILN_DTYPE_F32, 2, big), 2, st); want = "kiln_dynamic_update_slice: axis 0: the update f32[3,3] is larger than the operand f32[2,3]"; break;
        case 5: kiln_dynamic_update_slice(g, x, kiln_parameter(g, "u", KILN_DTYPE_F64, 2, ok), 2, st); want = "the update f64[1,2] and the operand f32[2,3] differ in dtype"; break;
        case 6: kiln_dynamic_update_slice(g, x, kiln_parameter(g, "u", KILN_DTYPE_F32, 1, v3), 2, st); want = "the update f32[3] and the operand f32[2,3] differ in rank"; break;
        }
        // clang-format on
        CHECK(kiln_graph_status(g) != KILN_STATUS_OK);
        CHECK_CONTAINS(kiln_graph_error(g), want);
        char at[64];
        snprintf(at, sizeof at, "test_dynamic_slice.c:%d", line + i);
        CHECK_CONTAINS(kiln_graph_error(g), at);
        kiln_graph_destroy(g);
    }
    static const struct {
        const char *line, *want;
    } text[] = {
        {"  %3 = dynamic_slice(%1, %2) sizes=[1,1] : f32[1,1]\n",
         "t.kir:4: kiln_dynamic_slice: 1 start indices for an operand of rank 2"},
        {"  %3 = dynamic_slice(%1, %2, %2) sizes=[3,1] : f32[3,1]\n", "size 3 does not fit"},
        {"  %3 = dynamic_slice(%1, %2, %2) : f32[1,1]\n",
         "t.kir:4: dynamic_slice needs sizes=[...]"},
    };
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) {
        char src[512];
        snprintf(src, sizeof src,
                 "graph t(%%1: f32[2,3] \"x\", %%2: i32[] \"s\") {\n"
                 "  %%1 = parameter 0 \"x\" : f32[2,3]\n  %%2 = parameter 1 \"s\" : i32[]\n%s"
                 "  return (%%3)\n}\n",
                 text[i].line);
        kiln_graph *g = NULL;
        CHECK(kiln_graph_parse(ctx, src, strlen(src), "t.kir", &g) != KILN_STATUS_OK);
        CHECK_CONTAINS(kiln_last_error(ctx), text[i].want);
        kiln_graph_destroy(g);
    }
}

int main(void) {
    kiln_context *ctx = test_context();
    if (!ctx) return 1;
    test_values(ctx);
    test_compiled(ctx);
    test_in_place(ctx);
    test_text_and_cse(ctx);
    test_errors(ctx);
    kiln_context_destroy(ctx);
    return test_summary("test_dynamic_slice");
}
