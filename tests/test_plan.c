/* test_plan.c — the memory planner (src/plan) through kiln_compile and kiln_executable_run:
 * in-place legality (what may and may not be overwritten, checked numerically too),
 * donation (outputs in donated buffers, consumed arrays, unusable donations reported,
 * failed calls consume nothing, arrays of another context refused), schedules that matter
 * (many branches into one reduction), determinism, the memory analysis API, random
 * programs with random donations, and fault injection over compile + run with the
 * planner.
 *
 * Every compiled program here is held to its plan: plan_check proves it sound (no two
 * buffers live at one step overlap; exhaustive), and the device allocator's measured peak
 * during the run must equal the planned peak (compare.h). */
#include "compare.h"
#include "fault.h"
#include "randprog.h"

#include <stdlib.h>
#include <unistd.h>

static kiln_context *ctx;
static uint64_t seed; /* random argument data: test_seed in main */

typedef int (*build_fn)(kiln_graph *g, kiln_value *outs);

static kiln_graph *build(const char *name, build_fn fn) {
    kiln_graph *g;
    kiln_graph_create(ctx, name, &g);
    kiln_value outs[16];
    int n = fn(g, outs);
    CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
    return g;
}

static kiln_array **random_args(kiln_graph *g) {
    int np = kiln_graph_num_parameters(g);
    kiln_array **a = calloc((size_t)np + 1, sizeof *a);
    for (int i = 0; i < np; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        a[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, p->shape.dims, &seed);
    }
    return a;
}

static void free_args(kiln_graph *g, kiln_array **a) {
    for (int i = 0; i < kiln_graph_num_parameters(g); i++) kiln_array_destroy(a[i]);
    free(a);
}

/* Compiles and runs g against the reference (plan checked, peak measured); 1 if right. */
static int check_program(kiln_graph *g, const kiln_compile_options *o) {
    kiln_array **a = random_args(g);
    /* products of products: BLAS in float against the reference in double */
    int ok = cmp_graph(ctx, g, kiln_graph_num_parameters(g), a, o, 1e-3, NULL);
    free_args(g, a);
    return ok;
}

/* The kernel whose root is the first node with op `op`, or NULL. */
/* The kernel with a root of op `op` (*root: that root's index in it; may be NULL). A
 * multi-output kernel (producer-consumer fusion) may hold it as a later root. */
static const fkernel *kernel_of_op_at(const kiln_executable *e, ir_op op, uint32_t *root) {
    for (uint32_t k = 0; k < e->plan.n_kernels; k++)
        for (uint32_t r = 0; r < e->plan.kernels[k].n_roots; r++)
            if (e->g->nodes[e->plan.kernels[k].roots[r]].op == op) {
                if (root) *root = r;
                return &e->plan.kernels[k];
            }
    return NULL;
}

/* ----------------------------------------------------------- in place ---- */

static const int64_t d16[2] = {64, 64}; /* large enough to be split across threads */

/* d = x @ w / 64: a temporary of the same size as what each case makes of it (scaled so
 * that exp and the final product stay well conditioned). */
static kiln_value dot_temp(kiln_graph *g) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d16);
    kiln_value d = kiln_matmul(g, x, kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d16));
    return kiln_mul(g, d, kiln_scalar(g, KILN_DTYPE_F32, 1.0 / 64));
}

/* y feeds a product, so it gets a buffer of its own (written by the kernel under test). */
static int finish_with_dot(kiln_graph *g, kiln_value y, kiln_value *o) {
    o[0] = kiln_matmul(g, y, kiln_parameter(g, "w2", KILN_DTYPE_F32, 2, d16));
    return 1;
}

static int b_elementwise(kiln_graph *g, kiln_value *o) {
    kiln_value d = dot_temp(g);
    kiln_value y = kiln_tanh(g, kiln_add(g, kiln_mul(g, d, kiln_scalar(g, KILN_DTYPE_F32, 2)), d));
    return finish_with_dot(g, y, o);
}
static int b_transpose(kiln_graph *g, kiln_value *o) {
    return finish_with_dot(g, kiln_exp(g, kiln_transpose(g, dot_temp(g), (int[]){1, 0})), o);
}
static int b_reshape(kiln_graph *g, kiln_value *o) { /* [64,64] -> [32,128] -> rows swapped */
    int64_t r[2] = {32, 128}, b[2] = {64, 64};
    kiln_value t = kiln_transpose(g, kiln_reshape(g, dot_temp(g), 2, r), (int[]){1, 0});
    return finish_with_dot(g, kiln_neg(g, kiln_reshape(g, t, 2, b)), o);
}
static int b_reshape_only(kiln_graph *g, kiln_value *o) { /* row-major order kept */
    int64_t r[2] = {32, 128}, b[2] = {64, 64};
    kiln_value t = kiln_neg(g, kiln_reshape(g, dot_temp(g), 2, r));
    return finish_with_dot(g, kiln_reshape(g, t, 2, b), o);
}
static int b_gather(kiln_graph *g, kiln_value *o) { /* rows reversed: reads other rows */
    int64_t n = 64;
    kiln_value i =
        kiln_sub(g, kiln_scalar(g, KILN_DTYPE_I32, 63), kiln_iota(g, KILN_DTYPE_I32, 1, &n, 0));
    return finish_with_dot(g, kiln_abs(g, kiln_take_rows(g, dot_temp(g), i)), o);
}
static int b_concat_slice(kiln_graph *g, kiln_value *o) { /* rotates columns by 32 */
    kiln_value d = dot_temp(g);
    int64_t lo[2] = {0, 32}, hi[2] = {64, 64}, lo2[2] = {0, 0}, hi2[2] = {64, 32};
    kiln_value parts[2] = {kiln_slice(g, d, lo, hi, NULL), kiln_slice(g, d, lo2, hi2, NULL)};
    return finish_with_dot(g, kiln_exp(g, kiln_concatenate(g, 2, parts, 1)), o);
}
static int b_pad(kiln_graph *g, kiln_value *o) { /* shifts by one row: reads another index */
    int64_t lo[2] = {1, 0}, hi[2] = {-1, 0};
    return finish_with_dot(
        g, kiln_pad(g, dot_temp(g), kiln_scalar(g, KILN_DTYPE_F32, 0), lo, hi, NULL), o);
}
static int b_reduction(kiln_graph *g, kiln_value *o) { /* a reduction inside the kernel */
    int64_t r[3] = {64, 64, 1};
    int ax = 2;
    kiln_value d = kiln_reshape(g, dot_temp(g), 3, r);
    return finish_with_dot(g, kiln_reduce_max(g, kiln_exp(g, d), 1, &ax, false), o);
}
static int b_row_sums(kiln_graph *g, kiln_value *o) { /* row sums in a kernel of their own */
    kiln_value d = dot_temp(g);
    int ax = 1;
    kiln_value s = kiln_reduce_sum(g, d, 1, &ax, true);
    return finish_with_dot(g, kiln_sub(g, d, s), o);
}
static int b_row_sums_few(kiln_graph *g, kiln_value *o) { /* 8 rows: sums in their own kernel */
    int64_t xd[2] = {8, 64};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value d = kiln_matmul(g, x, kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d16));
    int ax = 1;
    return finish_with_dot(g, kiln_sub(g, d, kiln_reduce_sum(g, d, 1, &ax, true)), o);
}
static int b_softmax_rows(kiln_graph *g, kiln_value *o) { /* max and sum in the prologue */
    return finish_with_dot(g, kiln_softmax(g, dot_temp(g), -1), o);
}
static int b_row_value_columns(kiln_graph *g, kiln_value *o) { /* a row value reading columns */
    kiln_value d = dot_temp(g);
    int ax = 1;
    kiln_value s = kiln_reduce_sum(g, kiln_transpose(g, d, (const int[]){1, 0}), 1, &ax, true);
    return finish_with_dot(g, kiln_sub(g, d, s), o);
}
static int b_still_needed(kiln_graph *g, kiln_value *o) { /* d is read after exp(d) is used */
    kiln_value d = dot_temp(g);
    finish_with_dot(g, kiln_exp(g, d), o);
    o[0] = kiln_matmul(g, o[0], d);
    return 1;
}
static int b_scatter(kiln_graph *g, kiln_value *o) {
    int64_t n = 8, ud[2] = {8, 64};
    kiln_value i =
        kiln_mul(g, kiln_iota(g, KILN_DTYPE_I32, 1, &n, 0), kiln_scalar(g, KILN_DTYPE_I32, 7));
    kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_F32, 2, ud);
    return finish_with_dot(g, kiln_scatter_add_rows(g, dot_temp(g), i, u), o);
}
static int b_scatter_self(kiln_graph *g, kiln_value *o) { /* the operand is the updates too */
    int64_t n = 64;
    kiln_value d = dot_temp(g);
    kiln_value i =
        kiln_sub(g, kiln_scalar(g, KILN_DTYPE_I32, 63), kiln_iota(g, KILN_DTYPE_I32, 1, &n, 0));
    return finish_with_dot(g, kiln_scatter_add_rows(g, d, i, d), o);
}

/* Whether the kernel whose root has op `op` was planned in place, after checking that the
 * program computes the right thing. */
static int in_place(const char *name, build_fn fn, ir_op op) {
    kiln_graph *g = build(name, fn);
    CHECK_MSG(check_program(g, NULL), "%s: wrong result", name);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    uint32_t root = 0;
    const fkernel *k = e ? kernel_of_op_at(e, op, &root) : NULL;
    CHECK_MSG(k, "%s: no kernel writes a %s", name, ir_ops[op].name);
    int r = k && k->alias && k->alias[root] != 0;
    if (k && r && k->kind == FK_LOOP) { /* the codegen must not promise that they never alias */
        char head[32];
        snprintf(head, sizeof head, "kiln_k%u(", (unsigned)(k - e->plan.kernels));
        const char *src = strstr(e->source, head),
                   *next = src ? strstr(src + 1, "KILN_EXPORT") : NULL;
        char out_r[32];
        snprintf(out_r, sizeof out_r, "*restrict out%u", root);
        const char *bad = src ? strstr(src, out_r) : NULL;
        CHECK_MSG(src && (!bad || (next && bad > next)), "%s: the in-place kernel declares %s",
                  name, out_r);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return r;
}

/* A library call reads its operands from memory: an iota or a scalar constant feeding a
 * product or a scatter needs a buffer even though loop kernels compute them inline. */
static int b_sources(kiln_graph *g, kiln_value *o) {
    int64_t d[2] = {4, 4}, r[1] = {4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    o[0] = kiln_matmul(g, kiln_iota(g, KILN_DTYPE_F32, 2, d, 1), x);
    kiln_dot_dims none = {0};
    o[1] = kiln_dot_general(g, kiln_scalar(g, KILN_DTYPE_F32, 3), kiln_scalar(g, KILN_DTYPE_F32, 2),
                            &none);
    o[1] = kiln_add(g, o[1], kiln_reduce_sum(g, x, 0, NULL, false));
    kiln_value i = kiln_iota(g, KILN_DTYPE_I32, 1, r, 0);
    o[2] = kiln_scatter_add_rows(g, kiln_iota(g, KILN_DTYPE_F32, 2, d, 0), i, x);
    return 3;
}

static void test_sources(void) {
    kiln_graph *g = build("sources", b_sources);
    CHECK_MSG(check_program(g, NULL), "an iota or scalar read by a product or a scatter");
    kiln_compile_options unfused = {.keep_ir = true, .disable_fusion = true};
    CHECK(check_program(g, &unfused));
    kiln_graph_destroy(g);
}

static void test_inplace(void) {
    CHECK_MSG(in_place("elementwise", b_elementwise, IR_TANH),
              "an elementwise chain over a dying input runs in place");
    CHECK_MSG(!in_place("transpose", b_transpose, IR_EXP), "a transpose reads other indices");
    CHECK_MSG(in_place("reshape_only", b_reshape_only, IR_RESHAPE),
              "a reshape keeps every element's row-major position: it may run in place");
    CHECK_MSG(!in_place("reshape", b_reshape, IR_NEG),
              "a reshape through a transpose reads other indices");
    CHECK_MSG(!in_place("gather", b_gather, IR_ABS), "a gather reads other rows");
    CHECK_MSG(!in_place("concat", b_concat_slice, IR_EXP),
              "concatenated slices read other indices");
    CHECK_MSG(!in_place("pad", b_pad, IR_PAD), "a pad reads other indices");
    CHECK_MSG(!in_place("reduction", b_reduction, IR_REDUCE_MAX),
              "a fused reduction reads other indices");
    CHECK_MSG(in_place("row_sums", b_row_sums, IR_SUB),
              "row sums broadcast back are a row value, read before the row is written");
    CHECK_MSG(in_place("row_sums_few", b_row_sums_few, IR_SUB),
              "a reduction in its own kernel, broadcast back, reads only its own buffer");
    CHECK_MSG(in_place("softmax_rows", b_softmax_rows, IR_DIV),
              "a softmax's max and sum are read before the row is written");
    CHECK_MSG(!in_place("row_value_columns", b_row_value_columns, IR_SUB),
              "a row value that reads a column of its input reads other rows");
    CHECK_MSG(!in_place("still_needed", b_still_needed, IR_EXP),
              "an input read later cannot be overwritten");
    CHECK_MSG(in_place("scatter", b_scatter, IR_SCATTER_ADD_ROWS),
              "scatter adds into its dying operand");
    CHECK_MSG(!in_place("scatter_self", b_scatter_self, IR_SCATTER_ADD_ROWS),
              "not when the operand is the updates too");
    /* products never run in place */
    kiln_graph *g = build("dots", b_still_needed);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    for (uint32_t k = 0; e && k < e->plan.n_kernels; k++)
        if (e->plan.kernels[k].kind == FK_DOT) CHECK(!e->plan.kernels[k].alias);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------------ donation ---- */

static const int64_t d8[1] = {1000};

static kiln_executable *compile_donating(kiln_graph *g, int n, const int *argnums) {
    kiln_compile_options o = {.keep_ir = true, .n_donate = n, .donate_argnums = argnums};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    return e;
}

static int b_exp(kiln_graph *g, kiln_value *o) {
    o[0] = kiln_exp(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d8));
    return 1;
}

/* An output written over a donated argument: no output bytes, the array is consumed, and
 * every later use of it is a clear error, while its type stays readable. */
static void test_donate_output(void) {
    kiln_graph *g = build("donate", b_exp);
    kiln_executable *e = compile_donating(g, 1, (int[]){0});
    kiln_memory_analysis a = {0};
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
    CHECK(a.output_bytes == 0 && a.alias_bytes == 4096 && a.temp_bytes == 0);
    CHECK(a.peak_bytes == a.argument_bytes && a.num_donated == 1 && a.num_donations_unused == 0);
    float host[1000], got[1000];
    for (int i = 0; i < 1000; i++) host[i] = (float)i / 500.0f - 1.0f;
    kiln_array *x, *y = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, d8, host, &x));
    int ok = 1;
    CHECK_OK(ctx, cmp_run_planned(ctx, e, 1, &x, 1, &y, &ok));
    CHECK(ok);
    CHECK(kiln_array_is_consumed(x) && !kiln_array_is_consumed(y));
    CHECK_OK(ctx, kiln_array_copy_to_host(y, got, sizeof got));
    for (int i = 0; i < 1000; i += 37) CHECK_NEAR(got[i], exp(host[i]), 1e-6);
    CHECK_STATUS(kiln_array_copy_to_host(x, got, sizeof got), KILN_STATUS_CONSUMED);
    CHECK_CONTAINS(kiln_last_error(ctx), "donated to 'donate' (argument 0) and is consumed");
    kiln_array *y2 = NULL;
    CHECK_STATUS(kiln_executable_run(e, 1, &x, 1, &y2), KILN_STATUS_CONSUMED);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_executable_run: argument 0:");
    CHECK_STATUS(kiln_interpret(g, 1, &x, 1, &y2), KILN_STATUS_CONSUMED);
    CHECK(y2 == NULL);
    CHECK(kiln_array_dtype(x) == KILN_DTYPE_F32 && kiln_array_size(x) == 1000); /* still readable */
    kiln_array_destroy(x);
    kiln_array_destroy(y);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static int b_identity(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d8);
    o[0] = x, o[1] = kiln_neg(g, x), o[2] = x;
    return 3;
}

/* An argument returned as it is takes its own buffer (no copy); listed twice, the second
 * is a copy. */
static void test_donate_identity(void) {
    kiln_graph *g = build("identity", b_identity);
    kiln_executable *e = compile_donating(g, 1, (int[]){0});
    kiln_memory_analysis a = {0};
    kiln_executable_get_memory_analysis(e, &a);
    CHECK(a.output_bytes == 2 * 4096 && a.alias_bytes == 4096);
    kiln_array *x = cmp_random_array(ctx, KILN_DTYPE_F32, 1, d8, &seed), *o[3] = {0};
    float before[1000], got[3][1000];
    kiln_array_copy_to_host(x, before, sizeof before);
    int ok = 1;
    CHECK_OK(ctx, cmp_run_planned(ctx, e, 1, &x, 3, o, &ok));
    CHECK(ok && kiln_array_is_consumed(x));
    for (int i = 0; i < 3; i++) kiln_array_copy_to_host(o[i], got[i], sizeof got[i]);
    CHECK(!memcmp(got[0], before, sizeof before) && !memcmp(got[2], before, sizeof before));
    CHECK(got[1][5] == -before[5]);
    for (int i = 0; i < 3; i++) kiln_array_destroy(o[i]);
    kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static int b_mismatch(kiln_graph *g, kiln_value *o) {
    int64_t n = 10;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, d8);
    o[0] = kiln_mul(g, y, kiln_scalar(g, KILN_DTYPE_F32, 2));
    o[1] = kiln_reduce_sum(g, x, 0, NULL, false);
    return 2;
}

/* A donation nothing fits into is reported (and the array still consumed, as in JAX). */
static void test_donate_unused(void) {
    kiln_graph *g = build("mismatch", b_mismatch);
    kiln_executable *e = compile_donating(g, 1, (int[]){0});
    kiln_memory_analysis a = {0};
    kiln_executable_get_memory_analysis(e, &a);
    CHECK(a.num_donated == 1 && a.num_donations_unused == 1 && a.alias_bytes == 0);
    char *r = kiln_executable_memory_report(e), *j = kiln_executable_plan_json(e);
    CHECK_CONTAINS(r, "argument 0 (\"x\", 40 bytes) donated: NOT USED");
    CHECK_CONTAINS(j, "\"donations\": [{\"argument\": 0, \"name\": \"x\", \"used\": false}]");
    kiln_string_free(ctx, r), kiln_string_free(ctx, j);
    kiln_array **args = random_args(g), *o[2] = {0};
    int ok = 1;
    CHECK_OK(ctx, cmp_run_planned(ctx, e, 2, args, 2, o, &ok));
    CHECK(ok && kiln_array_is_consumed(args[0]) && !kiln_array_is_consumed(args[1]));
    kiln_array_destroy(o[0]), kiln_array_destroy(o[1]);
    free_args(g, args);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static int b_temps_in_donated(kiln_graph *g, kiln_value *o) {
    int64_t big[2] = {64, 64}, v[2] = {64, 1};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, big);
    kiln_value s =
        kiln_matmul(g, x, kiln_parameter(g, "v", KILN_DTYPE_F32, 2, v)); /* x dies here */
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, big);
    kiln_value t = kiln_matmul(g, kiln_exp(g, w), w); /* exp(w) and t: temporaries after */
    o[0] = kiln_add(g, kiln_matmul(g, t, kiln_tanh(g, t)), s);
    return 1;
}

/* Temporaries that start after a donated argument's last read live in its buffer. */
static void test_donate_temps(void) {
    kiln_graph *g = build("temps", b_temps_in_donated);
    kiln_executable *plain = NULL, *e = compile_donating(g, 1, (int[]){0});
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &plain));
    kiln_memory_analysis a = {0}, b = {0};
    kiln_executable_get_memory_analysis(e, &a);
    kiln_executable_get_memory_analysis(plain, &b);
    CHECK_MSG(a.temp_bytes < b.temp_bytes && a.peak_bytes < b.peak_bytes && a.alias_bytes == 16384,
              "donated: temp %llu peak %llu; plain: temp %llu peak %llu",
              (unsigned long long)a.temp_bytes, (unsigned long long)a.peak_bytes,
              (unsigned long long)b.temp_bytes, (unsigned long long)b.peak_bytes);
    int donated_temps = 0;
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info bi;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &bi));
        donated_temps += bi.place == KILN_BUFFER_PLACE_DONATED && bi.kind == KILN_BUFFER_KIND_TEMP;
    }
    CHECK(donated_temps >= 1);
    kiln_array **args = random_args(g), *want = NULL, *got = NULL;
    CHECK_OK(ctx, kiln_interpret(g, 3, args, 1, &want));
    int ok = 1;
    CHECK_OK(ctx, cmp_run_planned(ctx, e, 3, args, 1, &got, &ok));
    CHECK(ok && cmp_arrays(got, want, 1e-3, 1e-9, "temps in a donated buffer"));
    kiln_array_destroy(want), kiln_array_destroy(got);
    free_args(g, args);
    kiln_executable_destroy(e), kiln_executable_destroy(plain);
    kiln_graph_destroy(g);
}

/* Misuse: bad argnums, a donated array passed twice, and a call that fails (the device is
 * too small for its arena) must leave the donated array as it was. */
static void test_donate_errors(void) {
    kiln_graph *g = build("errors", b_mismatch);
    kiln_executable *e = NULL;
    kiln_compile_options o = {.n_donate = 1, .donate_argnums = (int[]){2}};
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "donate_argnums[0] = 2 is not a parameter of 'errors'");
    o = (kiln_compile_options){.keep_ir = true, .n_donate = 2, .donate_argnums = (int[]){1, 1}};
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 1 is donated twice");
    kiln_graph_destroy(g);

    int64_t n = 1000;
    kiln_graph_create(ctx, "twice", &g);
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, &n),
               b = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, &n);
    kiln_value s = kiln_add(g, a, b);
    kiln_graph_finish(g, 1, &s);
    e = compile_donating(g, 1, (int[]){0});
    kiln_array *x = cmp_random_array(ctx, KILN_DTYPE_F32, 1, &n, &seed), *out = NULL;
    CHECK_STATUS(kiln_executable_run(e, 2, (kiln_array *[]){x, x}, 1, &out),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx),
                   "argument 0 of 'twice' is donated, and the same array is passed as argument 1");
    CHECK(!kiln_array_is_consumed(x) && out == NULL);
    kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);

    /* a failed call: a context whose device cannot hold the outputs */
    kiln_context_options co = {.ignore_environment = true,
                               .memory_limit = 1 << 20,
                               .alloc_mode = KILN_ALLOC_MODE_PLATFORM};
    kiln_context *small;
    CHECK_OK(NULL, kiln_context_create(&co, &small, NULL, 0));
    int64_t big = 100000; /* 400 KB each: two arguments fit, the third (output) does not */
    kiln_graph_create(small, "oom", &g);
    a = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, &big),
    b = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, &big);
    kiln_value outs[2] = {kiln_add(g, a, b), kiln_sub(g, a, b)};
    kiln_graph_finish(g, 2, outs);
    kiln_compile_options d = {.n_donate = 1, .donate_argnums = (int[]){1}};
    CHECK_OK(small, kiln_compile(g, &d, &e));
    kiln_array *xa, *xb, *r[2] = {0};
    float *data = malloc(400000), *back = malloc(400000);
    for (int i = 0; i < 100000; i++) data[i] = (float)i;
    CHECK_OK(small, kiln_array_create(small, KILN_DTYPE_F32, 1, &big, NULL, &xa));
    CHECK_OK(small, kiln_array_create(small, KILN_DTYPE_F32, 1, &big, data, &xb));
    CHECK_STATUS(kiln_executable_run(e, 2, (kiln_array *[]){xa, xb}, 2, r), KILN_STATUS_DEVICE_OOM);
    CHECK(!kiln_array_is_consumed(xb) && r[0] == NULL && r[1] == NULL);
    CHECK_OK(small, kiln_array_copy_to_host(xb, back, 400000));
    CHECK(!memcmp(back, data, 400000)); /* untouched: no kernel ran */
    free(data), free(back);
    kiln_memory_stats st;
    kiln_device_get_memory_stats(small, 0, &st);
    CHECK(st.bytes_in_use == 2 * 400128); /* only the two arguments: nothing left behind */
    kiln_array_destroy(xa), kiln_array_destroy(xb);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(small);
}

/* An argument made by another context: refused, naming it, before anything is consumed.
 * Accepted, a donated one would hand the other context's memory to this call's output,
 * which would read it after that context freed it and give it to the wrong allocator. */
static void test_other_context(void) {
    char dir[] = "/tmp/kiln-test-plan-other-XXXXXX";
    kiln_context *other = test_private_context(dir);
    if (!other) return;
    int64_t n = 1000;
    kiln_graph *g[2];
    kiln_executable *e[2] = {NULL, NULL};
    kiln_context *cs[2] = {ctx, other};
    for (int c = 0; c < 2; c++) { /* the same program in both */
        kiln_graph_create(cs[c], "twice", &g[c]);
        kiln_value a = kiln_parameter(g[c], "a", KILN_DTYPE_F32, 1, &n),
                   b = kiln_parameter(g[c], "b", KILN_DTYPE_F32, 1, &n);
        kiln_value s = kiln_add(g[c], a, b);
        CHECK_OK(cs[c], kiln_graph_finish(g[c], 1, &s));
        kiln_compile_options o = {.n_donate = 1, .donate_argnums = (int[]){1}};
        CHECK_OK(cs[c], kiln_compile(g[c], &o, &e[c]));
    }
    kiln_array *mine = cmp_random_array(ctx, KILN_DTYPE_F32, 1, &n, &seed);
    kiln_array *theirs = cmp_random_array(other, KILN_DTYPE_F32, 1, &n, &seed), *out = NULL;
    kiln_array *iout = NULL;
    CHECK(kiln_array_context(mine) == ctx && kiln_array_context(theirs) == other);
    CHECK_STATUS(kiln_executable_run(e[0], 2, (kiln_array *[]){mine, theirs}, 1, &out),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx),
                   "kiln_executable_run: argument 1 belongs to another context");
    CHECK(out == NULL && !kiln_array_is_consumed(mine) && !kiln_array_is_consumed(theirs));
    CHECK_STATUS(kiln_interpret(g[0], 2, (kiln_array *[]){theirs, mine}, 1, &iout),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_interpret: argument 0 belongs to another context");
    CHECK(iout == NULL);
    /* the other context goes first: nothing of it may be left in this one (an output
     * holding its memory would be read after free here) */
    kiln_array_destroy(theirs);
    kiln_executable_destroy(e[1]);
    kiln_graph_destroy(g[1]);
    kiln_context_destroy(other);
    test_remove_dir(dir);
    float back[1000];
    if (out) kiln_array_copy_to_host(out, back, sizeof back);
    kiln_array_destroy(out), kiln_array_destroy(iout);
    out = NULL;
    kiln_array *again = cmp_random_array(ctx, KILN_DTYPE_F32, 1, &n, &seed);
    CHECK_OK(ctx, kiln_executable_run(e[0], 2, (kiln_array *[]){mine, again}, 1, &out));
    CHECK(!kiln_array_is_consumed(mine) && kiln_array_is_consumed(again));
    kiln_array_destroy(out), kiln_array_destroy(mine), kiln_array_destroy(again);
    kiln_executable_destroy(e[0]);
    kiln_graph_destroy(g[0]);
}

static int jit_scale(kiln_graph *g, const kiln_value *a, int n, const void *st, void *u,
                     kiln_value *o) {
    (void)n, (void)st, (void)u;
    o[0] = kiln_mul(g, a[0], kiln_scalar(g, KILN_DTYPE_F32, 3));
    return 1;
}

/* jit: donate_argnums at jit time; every call consumes the argument. */
static void test_donate_jit(void) {
    int argnums[1] = {0};
    kiln_jit_options o = {.name = "scale",
                          .fn = jit_scale,
                          .compile = {.keep_ir = true, .n_donate = 1, .donate_argnums = argnums}};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    argnums[0] = 5; /* the jit keeps its own copy */
    kiln_array *x = cmp_random_array(ctx, KILN_DTYPE_F32, 1, d8, &seed), *y = NULL, *z = NULL;
    CHECK_OK(ctx, kiln_jit_call(j, 1, &x, NULL, 0, 1, &y));
    CHECK(kiln_array_is_consumed(x));
    CHECK_STATUS(kiln_jit_call(j, 1, &x, NULL, 0, 1, &z), KILN_STATUS_CONSUMED);
    CHECK_OK(ctx, kiln_jit_call(j, 1, &y, NULL, 0, 1, &z)); /* a hit: y donated in turn */
    CHECK(kiln_array_is_consumed(y) && !kiln_array_is_consumed(z));
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(st.compiles == 1 && st.hits == 1);
    kiln_array_destroy(x), kiln_array_destroy(y), kiln_array_destroy(z);
    kiln_jit_destroy(j);
}

/* ----------------------------------------------------------- schedules ---- */

#define NB 6
/* NB branches, each a big intermediate reduced to a small one, into one reduction; traced
 * breadth-first, so running the kernels in trace order keeps every intermediate alive. */
static int b_branches(kiln_graph *g, kiln_value *o) {
    int64_t v[2] = {64, 1};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d16),
               vv = kiln_parameter(g, "v", KILN_DTYPE_F32, 2, v);
    kiln_value d[NB], r[NB];
    for (int i = 0; i < NB; i++)
        d[i] = kiln_matmul(g, x, kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d16));
    for (int i = 0; i < NB; i++) d[i] = kiln_tanh(g, d[i]);
    for (int i = 0; i < NB; i++) r[i] = kiln_matmul(g, d[i], vv);
    int ax = 1;
    o[0] = kiln_reduce_sum(g, kiln_concatenate(g, NB, r, 1), 1, &ax, false);
    return 1;
}

static void test_schedule_matters(void) {
    kiln_graph *g = build("branches", b_branches);
    CHECK(check_program(g, NULL));
    kiln_executable *e;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    if (!e) { /* CHECK_OK said why */
        kiln_graph_destroy(g);
        return;
    }
    const mem_plan *p = &e->mem;
    CHECK(p->n_tries == 4 && !strcmp(p->tries[0].strategy, "fusion"));
    uint64_t big = 64 * 64 * 4, best = p->peak;
    for (int i = 0; i < p->n_tries; i++) CHECK(best <= p->tries[i].peak);
    CHECK_MSG(p->tries[0].arena >= NB * big, "in trace order every branch's product is live (%llu)",
              (unsigned long long)p->tries[0].arena);
    CHECK_MSG(strcmp(p->strategy, "fusion") != 0 && p->arena <= big + 4096 &&
                  best < p->tries[0].peak,
              "the chosen schedule (%s) runs a branch to its end before the next: arena %llu",
              p->strategy, (unsigned long long)p->arena);
    kiln_memory_analysis a = {0};
    kiln_executable_get_memory_analysis(e, &a);
    CHECK(!strcmp(a.schedule, p->strategy) && a.num_steps == (int)e->plan.n_kernels);
    CHECK(a.temp_lower_bound <= a.arena_bytes && a.arena_bytes <= a.temp_bytes);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* A product, a constant read in place, an argument and a value returned twice: every kind
 * of step and every place a step's buffer can lie. */
static int b_freed(kiln_graph *g, kiln_value *o) {
    int64_t d[2] = {16, 16};
    float c[256];
    for (int i = 0; i < 256; i++) c[i] = (float)(i % 13) * 0.25f;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d),
               w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d);
    kiln_value y = kiln_tanh(g, kiln_add(g, kiln_matmul(g, x, kiln_transpose(g, w, (int[]){1, 0})),
                                         kiln_constant(g, KILN_DTYPE_F32, 2, d, c)));
    o[0] = y, o[1] = x, o[2] = y, o[3] = kiln_constant(g, KILN_DTYPE_F32, 2, d, c);
    return 4;
}

/* By default the executable keeps its step list and frees the IR: the same results and
 * analysis as one that kept it (keep_ir), a profile that still names its kernels, and the
 * five reports that print the IR refused with a message naming keep_ir. */
static void test_ir_freed(void) {
    kiln_graph *g = build("freed", b_freed);
    kiln_executable *e, *k;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &k));
    if (!e || !k) { /* CHECK_OK said why */
        kiln_executable_destroy(e), kiln_executable_destroy(k);
        kiln_graph_destroy(g);
        return;
    }
    CHECK(!e->g && k->g && e->n_steps == k->n_steps && e->n_consts == 1);
    kiln_memory_analysis ae = {0}, ak = {0};
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &ae));
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(k, &ak));
    CHECK(ae.peak_bytes == ak.peak_bytes && ae.arena_bytes == ak.arena_bytes &&
          ae.num_buffers == ak.num_buffers && !strcmp(ae.schedule, ak.schedule));
    CHECK_OK(ctx, kiln_executable_set_profiling(e, true));
    kiln_array **a = random_args(g), *oe[4] = {0}, *ok[4] = {0};
    CHECK_OK(ctx, kiln_executable_run(e, 2, a, 4, oe));
    CHECK_OK(ctx, kiln_executable_run(k, 2, a, 4, ok));
    for (int i = 0; i < 4; i++)
        CHECK_MSG(oe[i] && ok[i] && !memcmp(oe[i]->data, ok[i]->data, 256 * sizeof(float)),
                  "output %d differs", i);
    char *prof = kiln_executable_profile_report(e);
    CHECK(prof && strstr(prof, "k0") && strstr(prof, "tanh"));
    kiln_string_free(ctx, prof);
    CHECK(!kiln_executable_to_string(e));
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_compile_options.keep_ir");
    CHECK(!kiln_executable_memory_report(e) && !kiln_executable_plan_json(e) &&
          !kiln_executable_plan_svg(e));
    kiln_buffer_info b;
    CHECK_STATUS(kiln_executable_get_buffer_info(e, 0, &b), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_executable_get_buffer_info: 'freed'");
    char *text = kiln_executable_to_string(k);
    CHECK(text != NULL);
    kiln_string_free(ctx, text);
    for (int i = 0; i < 4; i++) kiln_array_destroy(oe[i]), kiln_array_destroy(ok[i]);
    free_args(g, a);
    kiln_executable_destroy(e), kiln_executable_destroy(k);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------- analysis, determinism ---- */

/* The same graph planned twice (and in another context) gives the same plan, byte for byte. */
static void test_deterministic(void) {
    uint64_t base = test_seed(777);
    for (int round = 0; round < 6; round++) {
        rp_state *s = calloc(1, sizeof *s);
        s->seed = base + (uint64_t)round * 7919;
        kiln_graph *g;
        kiln_graph_create(ctx, "det", &g);
        for (int i = 0; i < 12; i++) rp_sub(s, g);
        CHECK_OK(ctx, kiln_graph_finish(g, s->n_outs, s->outs));
        kiln_executable *e1, *e2;
        CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e1));
        CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e2));
        char *j1 = kiln_executable_plan_json(e1), *j2 = kiln_executable_plan_json(e2);
        char *s1 = kiln_executable_plan_svg(e1), *s2 = kiln_executable_plan_svg(e2);
        CHECK(j1 && j2 && !strcmp(j1, j2) && s1 && s2 && !strcmp(s1, s2));
        kiln_string_free(ctx, j1), kiln_string_free(ctx, j2);
        kiln_string_free(ctx, s1), kiln_string_free(ctx, s2);
        kiln_executable_destroy(e1), kiln_executable_destroy(e2);
        kiln_graph_destroy(g);
        free(s);
    }
}

static int b_listing(kiln_graph *g, kiln_value *o) {
    int64_t ad[3] = {4, 8, 16}, bd[2] = {4, 8};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 3, ad),
               b = kiln_parameter(g, "b", KILN_DTYPE_F32, 2, bd);
    /* contracting a's middle axis: BLAS cannot read it as is, so a is packed first */
    kiln_dot_dims dd = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    kiln_value c = kiln_dot_general(g, kiln_exp(g, a), kiln_transpose(g, b, (int[]){1, 0}), &dd);
    o[0] = kiln_softmax(g, c, -1);
    return 1;
}

/* The per-buffer listing: every value with a buffer, its op, type, place and interval; a
 * dot's packing scratch is planned (live exactly at its kernel) and named. */
static void test_listing(void) {
    kiln_graph *g = build("listing", b_listing);
    CHECK(check_program(g, NULL));
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    kiln_memory_analysis a = {0};
    if (!e || kiln_executable_get_memory_analysis(e, &a)) {
        kiln_graph_destroy(g);
        return;
    }
    int params = 0, outputs = 0, scratch = 0;
    uint64_t out_bytes = 0;
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &b));
        CHECK(b.op && b.first_step <= b.last_step && b.first_step >= -1 &&
              b.last_step <= a.num_steps);
        params += b.kind == KILN_BUFFER_KIND_ARGUMENT;
        if (b.kind == KILN_BUFFER_KIND_OUTPUT) outputs++, out_bytes += b.bytes;
        if (b.kind == KILN_BUFFER_KIND_SCRATCH) {
            scratch++;
            CHECK(!strcmp(b.op, "scratch") && b.first_step == b.last_step &&
                  b.place == KILN_BUFFER_PLACE_ARENA);
            CHECK(b.bytes >= 4 * 8 * 16 * 4);
        }
        if (b.kind == KILN_BUFFER_KIND_ARGUMENT)
            CHECK(b.place == KILN_BUFFER_PLACE_ARGUMENT && b.first_step == -1);
        if (b.kind == KILN_BUFFER_KIND_OUTPUT)
            CHECK(b.last_step == a.num_steps && b.rank == 3 && b.dims[2] == 4);
    }
    CHECK(params == 2 && outputs == 1 && scratch == 1 && out_bytes == 4 * 16 * 4 * 4);
    kiln_buffer_info b;
    CHECK_STATUS(kiln_executable_get_buffer_info(e, a.num_buffers, &b),
                 KILN_STATUS_INVALID_ARGUMENT);
    char *text = kiln_executable_to_string(e), *svg = kiln_executable_plan_svg(e);
    CHECK_CONTAINS(text, "in schedule order");
    CHECK_CONTAINS(text, "planned peak");
    CHECK_CONTAINS(svg, "<svg");
    CHECK_CONTAINS(svg, "scratch scratch:"); /* its box's tooltip */
    kiln_string_free(ctx, text), kiln_string_free(ctx, svg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------ random programs ---- */

/* Random programs with random donations, against the reference: the plan holds (checked,
 * peak measured), donated arrays are consumed, and no other argument is ever written. */
static void test_random_donations(void) {
    int graphs = rp_program_count(230) / 10 + 1, failed = 0;
    uint64_t base = test_seed(0xabcdef12345ull);
    for (int gi = 0; gi < graphs && failed < 3; gi++) {
        rp_state *s = calloc(1, sizeof *s);
        s->seed = base + (uint64_t)gi * 1442695040888963407ull;
        kiln_graph *g;
        kiln_graph_create(ctx, "random", &g);
        for (int i = 0; i < 10; i++) rp_sub(s, g);
        CHECK_OK(ctx, kiln_graph_finish(g, s->n_outs, s->outs));
        int np = s->n_params, argnums[RP_MAX_PARAMS], nd = 0, no = s->n_outs;
        for (int i = 0; i < np; i++)
            if (rp_int(s, 2)) argnums[nd++] = i;
        kiln_array **args = random_args(g), **keep = random_args(g);
        kiln_array **want = calloc((size_t)no, sizeof *want),
                   **got = calloc((size_t)no, sizeof *got);
        for (int i = 0; i < np; i++) { /* keep = copies of args, to compare after the run */
            size_t n = kiln_array_nbytes(args[i]);
            void *tmp = malloc(n ? n : 1);
            kiln_array_copy_to_host(args[i], tmp, n);
            kiln_array_destroy(keep[i]);
            kiln_array_create(ctx, kiln_array_dtype(args[i]), s->params[i].rank, s->params[i].dims,
                              tmp, &keep[i]);
            free(tmp);
        }
        int ok = kiln_interpret(g, np, args, no, want) == KILN_STATUS_OK;
        kiln_executable *e = compile_donating(g, nd, argnums);
        ok = ok && e && cmp_run_planned(ctx, e, np, args, no, got, &ok) == KILN_STATUS_OK && ok;
        for (int i = 0; ok && i < no; i++) {
            char what[32];
            snprintf(what, sizeof what, "output %d", i);
            ok &= cmp_arrays(got[i], want[i], 1e-4, 1e-9, what);
        }
        for (int i = 0, d = 0; ok && i < np; i++) {
            bool donated = d < nd && argnums[d] == i;
            d += donated;
            ok &= kiln_array_is_consumed(args[i]) == donated;
            if (!donated) ok &= cmp_arrays(args[i], keep[i], 0, 0, "a non-donated argument");
        }
        if (!ok && e) {
            char *t = kiln_executable_to_string(e);
            fprintf(stderr, "%s\n", t ? t : "");
            kiln_string_free(ctx, t);
        }
        CHECK_MSG(ok, "random program %d with %d donations", gi, nd);
        failed += !ok;
        for (int i = 0; i < no; i++) kiln_array_destroy(want[i]), kiln_array_destroy(got[i]);
        free(want), free(got);
        free_args(g, args), free_args(g, keep);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
        free(s);
    }
    printf("random programs with donations: %d\n", graphs);
}

/* ----------------------------------------------------- fault injection ---- */

/* Compile + run with the planner at work: a packed product (scratch), in-place kernels,
 * a donated argument holding an output. */
static kiln_status plan_sequence(kiln_context *c, int *bad) {
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    kiln_array *args[2] = {0}, *outs[1] = {0};
    int64_t ad[3] = {4, 8, 16}, bd[2] = {4, 8};
    kiln_status s = kiln_graph_create(c, "fault", &g);
    if (!s) {
        kiln_value o[1];
        b_listing(g, o);
        s = kiln_graph_finish(g, 1, o);
    }
    kiln_compile_options co = {.n_donate = 1, .donate_argnums = (int[]){1}};
    if (!s) s = kiln_compile(g, &co, &e);
    if (!s) s = kiln_array_create(c, KILN_DTYPE_F32, 3, ad, NULL, &args[0]);
    if (!s) s = kiln_array_create(c, KILN_DTYPE_F32, 2, bd, NULL, &args[1]);
    if (!s) {
        s = kiln_executable_run(e, 2, args, 1, outs);
        *bad = s ? kiln_array_is_consumed(args[1]) : !kiln_array_is_consumed(args[1]);
    }
    kiln_memory_stats st;
    kiln_array_destroy(outs[0]), kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_device_get_memory_stats(c, 0, &st);
    *bad |= st.bytes_in_use != 0; /* every device byte given back */
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return s;
}

/* Every host allocation fails in turn: a clean KILN_STATUS_HOST_OOM, nothing leaked, and a
 * donated argument consumed only by a call that succeeded. */
static void test_fault_injection(const char *dir) {
    fault_ctx_case fc = {dir, plan_sequence, "a donation or device memory was not handled cleanly"};
    fault_sweep sw = {
        .name = "plan sequence", .run = fault_in_context, .user = &fc, .max_runs = 5000};
    long n = fault_sweep_run(&sw);
    printf("fault injection with the planner: %ld host allocations failed in turn\n", n);
}

int main(void) {
    seed = test_seed(0x243f6a8885a308d3ull);
    char dir[] = "/tmp/kiln-test-plan-XXXXXX";
    if (!(ctx = test_private_context(dir))) return 2;
    RUN(test_sources);
    RUN(test_inplace);
    RUN(test_donate_output);
    RUN(test_donate_identity);
    RUN(test_donate_unused);
    RUN(test_donate_temps);
    RUN(test_donate_errors);
    RUN(test_other_context);
    RUN(test_donate_jit);
    RUN(test_schedule_matters);
    RUN(test_ir_freed);
    RUN(test_deterministic);
    RUN(test_listing);
    RUN(test_random_donations);
    test_fault_injection(dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_plan");
}
