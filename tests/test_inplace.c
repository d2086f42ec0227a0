/* test_inplace.c — multi-output kernels running in place (src/plan/inplace.c, plan.c,
 * src/codegen/lower.c): each root of a fused kernel may be written over its own dying or
 * donated input when every read of that input in the kernel is of the element written.
 *
 * The model case is an optimiser's update over donated state: Adam's m, v and p written
 * over the donated m, v and p, so a step needs the arguments and nothing else (as in JAX
 * with donation). Then what must not happen: a root over an input read at another element
 * (a transpose, a rotation), two roots over one input, an input a later kernel still
 * reads, a root over an input of another dtype; and the store order a kernel with several
 * in-place roots needs. Every run is held to its plan (plan_check, measured peak ==
 * planned: compare.h) and to the reference interpreter. */
#include "compare.h"
#include "fault.h"

#include <stdlib.h>
#include <unistd.h>

static kiln_context *ctx;
static uint64_t seed;

#define ADAM_B1  0.9
#define ADAM_B2  0.999
#define ADAM_LR  1e-3
#define ADAM_EPS 1e-8

static kiln_value sc(kiln_graph *g, double x) {
    return kiln_scalar(g, KILN_DTYPE_F32, x);
}

/* m' = b1 m + (1-b1) g; v' = b2 v + (1-b2) g^2; p' = p - lr m' / (sqrt(v') + eps), outputs
 * (p', m', v') from parameters (p, m, v, g). `fused`: p' is written from m, v and g
 * themselves (the producers duplicated, as XLA's loop fusion would), so that nothing it
 * reads is another kernel's result and all three roots fuse into one kernel; otherwise p'
 * reads m' and v', and the update is two kernels ({m', v'} and {p'}). */
static kiln_graph *adam(int64_t n, bool fused) {
    kiln_graph *g;
    kiln_graph_create(ctx, fused ? "adam_fused" : "adam", &g);
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_F32, 1, &n),
               m = kiln_parameter(g, "m", KILN_DTYPE_F32, 1, &n),
               v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, &n),
               gr = kiln_parameter(g, "g", KILN_DTYPE_F32, 1, &n);
    kiln_value m2 =
        kiln_add(g, kiln_mul(g, sc(g, ADAM_B1), m), kiln_mul(g, sc(g, 1 - ADAM_B1), gr));
    kiln_value g2 = kiln_mul(g, gr, gr);
    kiln_value v2 =
        kiln_add(g, kiln_mul(g, sc(g, ADAM_B2), v), kiln_mul(g, sc(g, 1 - ADAM_B2), g2));
    kiln_value mp = m2, vp = v2;
    if (fused) { /* the same values, traced in another order so that CSE keeps them apart */
        mp = kiln_add(g, kiln_mul(g, gr, sc(g, 1 - ADAM_B1)), kiln_mul(g, m, sc(g, ADAM_B1)));
        vp = kiln_add(g, kiln_mul(g, g2, sc(g, 1 - ADAM_B2)), kiln_mul(g, v, sc(g, ADAM_B2)));
    }
    kiln_value den = kiln_add(g, kiln_sqrt(g, vp), sc(g, ADAM_EPS));
    kiln_value p2 = kiln_sub(g, p, kiln_div(g, kiln_mul(g, sc(g, ADAM_LR), mp), den));
    kiln_value outs[3] = {p2, m2, v2};
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    return g;
}

/* Arguments p, m, v, g of n elements: v >= 0 (a second moment). */
static void adam_args(int64_t n, kiln_array **a) {
    float *h = malloc((size_t)n * sizeof *h);
    for (int i = 0; i < 4; i++) {
        for (int64_t j = 0; j < n; j++) {
            double u = test_rng_unit(&seed) * 2 - 1;
            h[j] = (float)(i == 2 ? u * u : u);
        }
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, h, &a[i]));
    }
    free(h);
}

static kiln_executable *compile_donating(kiln_graph *g, int n, const int *argnums) {
    kiln_compile_options o = {.keep_ir = true, .n_donate = n, .donate_argnums = argnums};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    return e;
}

/* Runs e over args (donated ones consumed) and compares with the interpreter, run first
 * on the same arguments; the plan is checked and the measured peak must be the planned. */
static int run_vs_reference(kiln_graph *g, kiln_executable *e, kiln_array **args, double tol) {
    int np = kiln_graph_num_parameters(g), no = kiln_graph_num_outputs(g), ok = 1;
    kiln_array *want[8] = {0}, *got[8] = {0};
    CHECK_OK(ctx, kiln_interpret(g, np, args, no, want));
    CHECK_OK(ctx, cmp_run_planned(ctx, e, np, args, no, got, &ok));
    for (int i = 0; i < no; i++) {
        char what[32];
        snprintf(what, sizeof what, "%s output %d", g->name, i);
        ok &= got[i] && want[i] && cmp_arrays(got[i], want[i], tol, 1e-9, what);
    }
    if (!ok) {
        char *t = kiln_executable_to_string(e);
        fprintf(stderr, "%s\n", t ? t : "");
        kiln_string_free(ctx, t);
    }
    for (int i = 0; i < no; i++) kiln_array_destroy(want[i]), kiln_array_destroy(got[i]);
    return ok;
}

/* The kernel that writes node id, or NULL. */
static const fkernel *kernel_writing(const kiln_executable *e, uint32_t id, uint32_t *root) {
    for (uint32_t k = 0; k < e->plan.n_kernels; k++)
        for (uint32_t r = 0; r < e->plan.kernels[k].n_roots; r++)
            if (e->plan.kernels[k].roots[r] == id) {
                if (root) *root = r;
                return &e->plan.kernels[k];
            }
    return NULL;
}

/* The input node output j's value is written over in place, 0 if none (what the memory
 * analysis reports as shares_with). */
static int shares_of_output(const kiln_executable *e, int j) {
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        kiln_executable_get_buffer_info(e, i, &b);
        if (b.node == (int)e->g->outputs[j]) return b.shares_with;
    }
    return -1;
}

/* ------------------------------------------------------------- Adam ---- */

/* p, m, v donated: every output written over its own argument, the peak is the arguments
 * alone, the analysis shows the aliasing, and the values are the interpreter's. */
static void check_adam(int64_t n, bool fused, bool run) {
    kiln_graph *g = adam(n, fused);
    kiln_executable *e = compile_donating(g, 3, (int[]){0, 1, 2});
    if (!e) {
        kiln_graph_destroy(g);
        return;
    }
    uint64_t bytes = (uint64_t)n * 4;
    kiln_memory_analysis a;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
    CHECK_MSG(a.peak_bytes == 4 * bytes && a.argument_bytes == 4 * bytes && a.output_bytes == 0 &&
                  a.temp_bytes == 0 && a.alias_bytes == 3 * bytes && a.inplace_bytes == 3 * bytes,
              "%s over %lld: peak %llu (arguments %llu, outputs %llu, temps %llu, aliased %llu, "
              "in place %llu)",
              g->name, (long long)n, (unsigned long long)a.peak_bytes,
              (unsigned long long)a.argument_bytes, (unsigned long long)a.output_bytes,
              (unsigned long long)a.temp_bytes, (unsigned long long)a.alias_bytes,
              (unsigned long long)a.inplace_bytes);
    CHECK(a.num_donated == 3 && a.num_donations_unused == 0);
    for (int j = 0; j < 3; j++) /* p' over p, m' over m, v' over v */
        CHECK_MSG(shares_of_output(e, j) == (int)e->g->params[j], "%s: output %d shares with %%%d",
                  g->name, j, shares_of_output(e, j));
    if (fused) {
        const fkernel *k = kernel_writing(e, e->g->outputs[0], NULL);
        CHECK_MSG(e->plan.n_kernels == 1 && k && k->n_roots == 3 && k->alias,
                  "%s: one 3-output kernel (%u kernels)", g->name, e->plan.n_kernels);
        /* its pointers cannot be restrict, so its element loop is declared simd (lower.c:
         * gcc left the fused update scalar without it) */
        CHECK_MSG(e->source && strstr(e->source, "#pragma omp simd\n"),
                  "%s: the in-place kernel's loop is not marked simd:\n%s", g->name,
                  e->source ? e->source : "(no source)");
    }
    char *report = kiln_executable_memory_report(e), *json = kiln_executable_plan_json(e),
         *svg = kiln_executable_plan_svg(e), want[64];
    CHECK_CONTAINS(report, "argument 1 (\"m\"");
    CHECK_CONTAINS(report, "donated: holds output 1");
    snprintf(want, sizeof want, "\"shares_with\": %u", e->g->params[2]);
    CHECK_CONTAINS(json, want);
    snprintf(want, sizeof want, "in place over %%%u", e->g->params[1]);
    CHECK_CONTAINS(svg, want);
    kiln_string_free(ctx, report), kiln_string_free(ctx, json), kiln_string_free(ctx, svg);
    if (run) {
        kiln_array *args[4];
        adam_args(n, args);
        CHECK_MSG(run_vs_reference(g, e, args, 1e-5), "%s over %lld", g->name, (long long)n);
        for (int i = 0; i < 4; i++) CHECK(kiln_array_is_consumed(args[i]) == (i < 3));
        for (int i = 0; i < 4; i++) kiln_array_destroy(args[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Without donation nothing can be overwritten (the arguments are the caller's): three
 * fresh outputs, as before. */
static void test_adam_not_donated(void) {
    kiln_graph *g = adam(1 << 14, true);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    kiln_memory_analysis a = {0};
    if (e) { /* a failed compile: CHECK_OK said why */
        CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
        CHECK(a.output_bytes == 3 * 4 * (1 << 14) && a.inplace_bytes == 0 && a.alias_bytes == 0);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static void test_adam(void) {
    check_adam(1024, false, true);    /* small: no sibling fusion, three in-place kernels */
    check_adam(1 << 16, false, true); /* {m', v'} over m and v, then p' over p */
    check_adam(1 << 16, true, true);  /* one kernel, three roots over p, m, v */
    check_adam(4 << 20, false, true); /* the figure: 64 MiB, the arguments alone */
    check_adam(4 << 20, true, false);
    test_adam_not_donated();
}

/* ------------------------------------------------------ store order ---- */

static const int64_t sq[2] = {64, 64}; /* 16 KiB: large enough for sibling fusion */

/* a = y + z and b = 2 x + z share z, so they are one kernel; x is donated and a is the
 * first root, so a takes x's buffer although only b reads x. Storing a's element before
 * b has loaded it would give b = 2 a + z: the kernel must compute both first. */
static void test_store_order(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "order", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, sq),
               y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, sq),
               z = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, sq);
    kiln_value o[2] = {kiln_add(g, y, z), kiln_add(g, kiln_mul(g, sc(g, 2), x), z)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    kiln_executable *e = compile_donating(g, 1, (int[]){0});
    uint32_t r = 0;
    const fkernel *k = e ? kernel_writing(e, e->g->outputs[0], &r) : NULL;
    CHECK_MSG(k && k->n_roots == 2 && r == 0 && k->alias && k->alias[0] &&
                  k->inputs[k->alias[0] - 1] == e->g->params[0] && k->alias[1] == 0,
              "a (root 0) is written over x");
    if (k) { /* in the source: both values computed, then both stored */
        const char *src = strstr(e->source, "KILN_EXPORT void kiln_k0(");
        const char *s0 = src ? strstr(src, "out0[") : NULL, *s1 = src ? strstr(src, "out1[") : NULL;
        const char *ld = src ? strstr(src, "in2[") : NULL; /* x, b's only use of it */
        CHECK_MSG(s0 && s1 && ld && ld < s0 && s0 < s1, "b's load of x comes before a's store");
        /* restrict exactly where nothing aliases */
        CHECK(strstr(src, "float *out0 =") && strstr(src, "float *restrict out1 =") &&
              strstr(src, "const float *in2 =") && strstr(src, "const float *restrict in0 ="));
    }
    kiln_array *args[3];
    for (int i = 0; i < 3; i++) args[i] = cmp_random_array(ctx, KILN_DTYPE_F32, 2, sq, &seed);
    if (e) CHECK(run_vs_reference(g, e, args, 1e-6));
    CHECK(kiln_array_is_consumed(args[0]));
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* --------------------------------------------------------- negatives ---- */

typedef kiln_value (*reader)(kiln_graph *g, kiln_value x);

static kiln_value read_same(kiln_graph *g, kiln_value x) {
    return kiln_mul(g, x, sc(g, 3));
}
static kiln_value read_transposed(kiln_graph *g, kiln_value x) {
    return kiln_transpose(g, x, (int[]){1, 0});
}
static kiln_value read_rotated(kiln_graph *g, kiln_value x) { /* columns rotated by 32 */
    int64_t lo[2] = {0, 32}, hi[2] = {64, 64}, lo2[2] = {0, 0}, hi2[2] = {64, 32};
    kiln_value parts[2] = {kiln_slice(g, x, lo, hi, NULL), kiln_slice(g, x, lo2, hi2, NULL)};
    return kiln_concatenate(g, 2, parts, 1);
}

/* Two roots in one kernel (they share z): a = x + z and b = f(x) * z, x donated. With f
 * reading x at other elements, neither root may take x, although a reads it at its own. */
static void check_reader(const char *name, reader f, bool want_inplace) {
    kiln_graph *g;
    kiln_graph_create(ctx, name, &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, sq),
               z = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, sq);
    kiln_value o[2] = {kiln_add(g, x, z), kiln_mul(g, f(g, x), z)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    kiln_executable *e = compile_donating(g, 1, (int[]){0});
    const fkernel *k = e ? kernel_writing(e, e->g->outputs[0], NULL) : NULL;
    CHECK_MSG(k && k->n_roots == 2, "%s: one kernel writes both", name);
    int taken = 0;
    for (uint32_t r = 0; k && k->alias && r < k->n_roots; r++) taken += k->alias[r] != 0;
    CHECK_MSG(taken == (want_inplace ? 1 : 0), "%s: %d roots in place, want %d", name, taken,
              want_inplace);
    kiln_array *args[2];
    for (int i = 0; i < 2; i++) args[i] = cmp_random_array(ctx, KILN_DTYPE_F32, 2, sq, &seed);
    if (e) CHECK_MSG(run_vs_reference(g, e, args, 1e-6), "%s", name);
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* One donated input and two roots that could each take it: exactly one does (the other
 * gets an output of its own). */
static void test_one_root_per_input(void) {
    check_reader("same", read_same, true);
}

static void test_other_elements(void) {
    check_reader("transposed", read_transposed, false);
    check_reader("rotated", read_rotated, false);
}

/* x dies only after a later kernel (a product) reads it: the sibling kernel {a, b} must
 * not write over it, donated or not. */
static void test_still_read(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "still_read", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, sq),
               z = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, sq);
    kiln_value a = kiln_add(g, x, z), b = kiln_mul(g, x, z);
    kiln_value o[3] = {a, b, kiln_matmul(g, kiln_tanh(g, a), x)};
    CHECK_OK(ctx, kiln_graph_finish(g, 3, o));
    kiln_executable *e = compile_donating(g, 2, (int[]){0, 1});
    const fkernel *k = e ? kernel_writing(e, e->g->outputs[0], NULL) : NULL;
    CHECK_MSG(k && k->n_roots >= 2, "a and b are one kernel");
    for (uint32_t r = 0; k && k->alias && r < k->n_roots; r++)
        CHECK_MSG(!k->alias[r] || k->inputs[k->alias[r] - 1] != e->g->params[0],
                  "x is read later: nothing is written over it");
    if (e)
        CHECK(shares_of_output(e, 0) == (int)e->g->params[1] ||
              shares_of_output(e, 1) == (int)e->g->params[1]);
    kiln_array *args[2];
    for (int i = 0; i < 2; i++) args[i] = cmp_random_array(ctx, KILN_DTYPE_F32, 2, sq, &seed);
    if (e) CHECK(run_vs_reference(g, e, args, 1e-4));
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Among several roots, one is written over an input only of its own dtype: i32 x and f32
 * roots of the same size (C's aliasing rules would let the compiler reorder the accesses). */
static void test_other_dtype(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "dtype", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_I32, 2, sq),
               z = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, sq);
    kiln_value xf = kiln_convert(g, x, KILN_DTYPE_F32);
    kiln_value o[2] = {kiln_add(g, xf, z), kiln_mul(g, xf, z)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    kiln_executable *e = compile_donating(g, 1, (int[]){0});
    const fkernel *k = e ? kernel_writing(e, e->g->outputs[0], NULL) : NULL;
    CHECK_MSG(k && k->n_roots == 2 && !k->alias, "no f32 root over the i32 argument");
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* ---------------------------------------------------- fault injection ---- */

/* Compile and run the donated, fused Adam step. */
static kiln_status adam_sequence(kiln_context *c, int *bad) {
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    kiln_array *args[4] = {0}, *outs[3] = {0};
    int64_t n = 1 << 13;
    kiln_status s = kiln_graph_create(c, "adam_fault", &g);
    kiln_value pv[4], o[3];
    const char *names[4] = {"p", "m", "v", "g"};
    for (int i = 0; i < 4 && !s; i++) pv[i] = kiln_parameter(g, names[i], KILN_DTYPE_F32, 1, &n);
    if (!s) { /* the fused form of adam() */
        kiln_value g2 = kiln_mul(g, pv[3], pv[3]);
        o[1] = kiln_add(g, kiln_mul(g, pv[1], kiln_scalar(g, KILN_DTYPE_F32, 0.9)), pv[3]);
        o[2] = kiln_add(g, kiln_mul(g, pv[2], kiln_scalar(g, KILN_DTYPE_F32, 0.99)), g2);
        kiln_value den = kiln_add(g, kiln_sqrt(g, kiln_add(g, g2, pv[2])), pv[3]);
        o[0] = kiln_sub(g, pv[0], kiln_div(g, kiln_add(g, pv[3], pv[1]), den));
        s = kiln_graph_finish(g, 3, o);
    }
    kiln_compile_options co = {.n_donate = 3, .donate_argnums = (int[]){0, 1, 2}};
    if (!s) s = kiln_compile(g, &co, &e);
    for (int i = 0; i < 4 && !s; i++)
        s = kiln_array_create(c, KILN_DTYPE_F32, 1, &n, NULL, &args[i]);
    if (!s) {
        s = kiln_executable_run(e, 4, args, 3, outs);
        for (int i = 0; i < 3; i++) *bad |= kiln_array_is_consumed(args[i]) == (s != 0);
    }
    kiln_memory_stats st;
    for (int i = 0; i < 3; i++) kiln_array_destroy(outs[i]);
    for (int i = 0; i < 4; i++) kiln_array_destroy(args[i]);
    kiln_device_get_memory_stats(c, 0, &st);
    *bad |= st.bytes_in_use != 0;
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return s;
}

/* A first clean run puts the kernels in the disk cache, so the sweep's runs load them
 * rather than each running the C compiler. */
static void test_fault_injection(const char *dir) {
    int bad = 0;
    CHECK_OK(ctx, adam_sequence(ctx, &bad));
    CHECK(!bad);
    fault_ctx_case fc = {dir, adam_sequence, "a donation or device memory was not handled cleanly"};
    fault_sweep sw = {
        .name = "adam in place", .run = fault_in_context, .user = &fc, .max_runs = 5000};
    long n = fault_sweep_run(&sw);
    printf("fault injection over the in-place Adam step: %ld host allocations failed in turn\n", n);
}

int main(void) {
    seed = test_seed(0x9e3779b97f4a7c15ull);
    char dir[] = "/tmp/kiln-test-inplace-XXXXXX";
    if (!(ctx = test_private_context(dir))) return 2;
    RUN(test_adam);
    RUN(test_store_order);
    RUN(test_one_root_per_input);
    RUN(test_other_elements);
    RUN(test_still_read);
    RUN(test_other_dtype);
    test_fault_injection(dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_inplace");
}
