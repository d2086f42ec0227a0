/* test_offload.c — host offload: kiln_memory_put and the offload checkpoint policies.
 *
 * What is checked, against the program without offload and the reference interpreter:
 *  - an explicit round trip device -> pinned_host -> device computes the same values, its
 *    host value lives in the host arena (outside the device peak), and the measured peaks
 *    of both memory kinds equal the planned ones (cmp_run_planned);
 *  - under offload_dot_with_no_batch_dims and save_and_offload_only_these_names, gradients
 *    are bitwise those of the program without regions (the same bytes come back), the
 *    offloaded products leave the device peak, and each buffer says it was offloaded;
 *  - grad, jvp and vmap through kiln_memory_put;
 *  - the refusals: computing on a host value, returning one, an unknown memory kind. */
#include "test.h"
#include "compare.h"
#include "ir/ir.h"

#include <string.h>

static kiln_context *ctx;

#define B      64
#define W      96
#define LAYERS 4

/* Arguments for g's parameters, deterministic. */
static kiln_array **make_args(kiln_graph *g, uint64_t seed) {
    int n = kiln_graph_num_parameters(g);
    kiln_array **a = calloc((size_t)n, sizeof *a);
    for (int i = 0; i < n; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        a[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, p->shape.dims, &seed);
    }
    return a;
}

static void free_arrays(kiln_array **a, int n) {
    for (int i = 0; i < n; i++) kiln_array_destroy(a[i]);
}

/* Compiles and runs g with its plan checked and both memory kinds' peaks measured. */
static int run(kiln_graph *g, kiln_array **args, kiln_array **outs, kiln_memory_analysis *an,
               kiln_executable **keep) {
    kiln_compile_options o = {.keep_ir = true};
    kiln_executable *e = NULL;
    int ok = 1;
    memset(an, 0, sizeof *an);
    if (kiln_compile(g, &o, &e)) {
        fprintf(stderr, "compile: %s\n", kiln_last_error(ctx));
        return 0;
    }
    kiln_executable_get_memory_analysis(e, an);
    if (cmp_run_planned(ctx, e, kiln_graph_num_parameters(g), args, kiln_graph_num_outputs(g), outs,
                        &ok)) {
        fprintf(stderr, "run: %s\n", kiln_last_error(ctx));
        ok = 0;
    }
    if (keep)
        *keep = e;
    else
        kiln_executable_destroy(e);
    return ok;
}

static int same_bits(kiln_array **a, kiln_array **b, int n) {
    int ok = 1;
    for (int i = 0; i < n; i++) {
        size_t na = kiln_array_nbytes(a[i]), nb = kiln_array_nbytes(b[i]);
        void *pa = malloc(na), *pb = malloc(nb);
        kiln_array_copy_to_host(a[i], pa, na);
        kiln_array_copy_to_host(b[i], pb, nb);
        if (na != nb || memcmp(pa, pb, na)) {
            fprintf(stderr, "output %d differs\n", i);
            ok = 0;
        }
        free(pa), free(pb);
    }
    return ok;
}

/* --------------------------------------------------------- round trip ---- */

static void test_round_trip(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "round_trip", &g);
    int64_t d[2] = {B, W};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value y = kiln_exp(g, x);
    kiln_value h = kiln_memory_put(g, y, KILN_MEMORY_PINNED_HOST);
    kiln_value z = kiln_tanh(g, kiln_mul(g, x, x)); /* work while y is away */
    kiln_value back = kiln_memory_put(g, h, KILN_MEMORY_DEVICE);
    kiln_value out = kiln_add(g, back, z);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
    kiln_array **args = make_args(g, 7);
    kiln_array *got = NULL, *want = NULL;
    kiln_memory_analysis an;
    CHECK(run(g, args, &got, &an, NULL));
    CHECK_OK(ctx, kiln_interpret(g, 1, args, 1, &want));
    CHECK(got && want && cmp_arrays(got, want, 1e-6, 1e-12, "round trip"));
    CHECK_MSG(an.num_offloaded == 1 && an.offload_bytes == (uint64_t)B * W * 4 &&
                  an.host_temp_bytes >= an.offload_bytes,
              "offloaded %d values, %llu bytes, host arena %llu", an.num_offloaded,
              (unsigned long long)an.offload_bytes, (unsigned long long)an.host_temp_bytes);
    kiln_array_destroy(got), kiln_array_destroy(want);
    free_arrays(args, 1), free(args);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------------ policies ---- */

/* An MLP step: LAYERS layers in a region each under `policy` (-1: none), loss mean(x^2);
 * outputs the loss and every gradient. Pre-activations are named "pre", products "prod". */
static kiln_graph *mlp(int policy) {
    kiln_graph *g;
    kiln_graph_create(ctx, "mlp", &g);
    int64_t xd[2] = {B, W}, wd[2] = {W, W};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd), params[LAYERS];
    for (int l = 0; l < LAYERS; l++) {
        params[l] = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, wd);
        const char *save[1] = {"pre"}, *off[1] = {"prod"};
        if (policy == KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES)
            CHECK_OK(ctx, kiln_checkpoint_begin_offload(g, 0, save, 1, off));
        else if (policy >= 0)
            CHECK_OK(ctx, kiln_checkpoint_begin(g, (kiln_checkpoint_policy)policy, 0, NULL));
        kiln_value prod = kiln_checkpoint_name(g, kiln_matmul(g, x, params[l]), "prod");
        kiln_value pre = kiln_checkpoint_name(g, kiln_sin(g, prod), "pre");
        x = kiln_add(g, kiln_tanh(g, pre), x);
        if (policy >= 0) CHECK_OK(ctx, kiln_checkpoint_end(g));
    }
    kiln_value loss = kiln_mean(g, kiln_mul(g, x, x), 0, NULL, false), outs[1 + LAYERS];
    outs[0] = loss;
    CHECK_OK(ctx, kiln_grad(g, loss, LAYERS, params, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, 1 + LAYERS, outs));
    return g;
}

static void check_policy(int policy, int want_offloaded) {
    kiln_graph *plain = mlp(-1), *g = mlp(policy);
    kiln_array **args = make_args(plain, 11);
    kiln_array *a[1 + LAYERS] = {0}, *b[1 + LAYERS] = {0};
    kiln_memory_analysis pa, oa;
    kiln_executable *e = NULL;
    CHECK(run(plain, args, a, &pa, NULL));
    CHECK(run(g, args, b, &oa, &e));
    CHECK_MSG(same_bits(a, b, 1 + LAYERS), "%s: outputs differ from the plain program's",
              kiln_checkpoint_policy_name((kiln_checkpoint_policy)policy));
    CHECK_MSG(oa.num_offloaded == want_offloaded, "%s: %d values offloaded, want %d",
              kiln_checkpoint_policy_name((kiln_checkpoint_policy)policy), oa.num_offloaded,
              want_offloaded);
    CHECK_MSG(oa.peak_bytes < pa.peak_bytes, "%s: peak %llu, without offload %llu",
              kiln_checkpoint_policy_name((kiln_checkpoint_policy)policy),
              (unsigned long long)oa.peak_bytes, (unsigned long long)pa.peak_bytes);
    CHECK(oa.host_temp_bytes >= oa.offload_bytes && oa.offload_bytes > 0);
    printf("%s: device peak %llu -> %llu bytes, host arena %llu, %llu bytes offloaded\n",
           kiln_checkpoint_policy_name((kiln_checkpoint_policy)policy),
           (unsigned long long)pa.peak_bytes, (unsigned long long)oa.peak_bytes,
           (unsigned long long)oa.host_temp_bytes, (unsigned long long)oa.offload_bytes);
    /* the buffers say so: a host copy per value, on the host, and a copy back */
    int host = 0, back = 0;
    for (int i = 0; e && i < oa.num_buffers; i++) {
        kiln_buffer_info bi;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &bi));
        if (!bi.offloaded) continue;
        CHECK(!bi.recomputed);
        if (bi.place == KILN_BUFFER_PLACE_HOST)
            host++;
        else
            back++;
        if (policy == KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES)
            CHECK(bi.name && !strcmp(bi.name, "prod"));
    }
    CHECK_MSG(host == want_offloaded && back == want_offloaded, "%d host copies, %d back", host,
              back);
    char *report = e ? kiln_executable_memory_report(e) : NULL;
    CHECK(report && strstr(report, "offloaded to pinned_host memory"));
    if (getenv("OFFLOAD_REPORT") && report) fputs(report, stdout);
    kiln_string_free(ctx, report);
    /* the picture draws the host arena as a band of its own */
    char *svg = e ? kiln_executable_plan_svg(e) : NULL;
    CHECK(svg && strstr(svg, "host arena") && strstr(svg, ">host</text>"));
    kiln_string_free(ctx, svg);
    kiln_executable_destroy(e);
    free_arrays(a, 1 + LAYERS), free_arrays(b, 1 + LAYERS);
    free_arrays(args, kiln_graph_num_parameters(plain)), free(args);
    kiln_graph_destroy(plain), kiln_graph_destroy(g);
}

static void test_offload_dots(void) {
    check_policy(KILN_CHECKPOINT_POLICY_OFFLOAD_DOT_WITH_NO_BATCH_DIMS, LAYERS);
}

static void test_save_and_offload_names(void) {
    check_policy(KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES, LAYERS);
}

/* ---------------------------------------------------------------- budget ---- */

/* The smallest peak a budget search reaches (the budget itself cannot be met). */
static uint64_t reachable(kiln_graph *g, int offload) {
    kiln_budget_result r;
    kiln_compile_options o = {.memory_budget = 1, .budget_offload = offload, .budget_result = &r};
    kiln_executable *e = NULL;
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_DEVICE_OOM);
    CHECK(!e && !r.fits);
    return r.min_peak_bytes;
}

/* Under a budget recomputation alone cannot meet, a search allowed to offload fits, with
 * the same gradients; a CPU device does not offload unless asked. */
static void test_budget_offload(void) {
    kiln_graph *g = mlp(-1);
    uint64_t recompute = reachable(g, -1), offload = reachable(g, 1);
    printf("budget search: smallest peak %llu bytes recomputing, %llu with offload\n",
           (unsigned long long)recompute, (unsigned long long)offload);
    CHECK_MSG(offload < recompute, "offload reaches %llu, recomputation %llu",
              (unsigned long long)offload, (unsigned long long)recompute);
    uint64_t budget = (offload + recompute) / 2;
    kiln_budget_result r;
    kiln_compile_options o = {.memory_budget = budget, .budget_result = &r, .keep_ir = true};
    kiln_executable *e = NULL;
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_DEVICE_OOM); /* default: no offload */
    o.budget_offload = 1;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    CHECK(r.fits && r.num_offloaded > 0 && r.offload_bytes > 0);
    kiln_array **args = make_args(g, 5);
    kiln_array *a[1 + LAYERS] = {0}, *b[1 + LAYERS] = {0};
    kiln_memory_analysis pa, oa;
    CHECK(run(g, args, a, &pa, NULL));
    int ok = 1;
    kiln_executable_get_memory_analysis(e, &oa);
    CHECK(e && !cmp_run_planned(ctx, e, 1 + LAYERS, args, 1 + LAYERS, b, &ok) && ok);
    CHECK(same_bits(a, b, 1 + LAYERS));
    CHECK_MSG(oa.peak_bytes <= budget && oa.num_offloaded == r.num_offloaded,
              "peak %llu of budget %llu, %d offloaded", (unsigned long long)oa.peak_bytes,
              (unsigned long long)budget, oa.num_offloaded);
    kiln_executable_destroy(e);
    free_arrays(a, 1 + LAYERS), free_arrays(b, 1 + LAYERS);
    free_arrays(args, 1 + LAYERS), free(args);
    kiln_graph_destroy(g);
}

/* On a device whose limit leaves no room for the rate probes (8 MiB copies), a budget
 * search allowed to offload still compiles: without rates it only recomputes. */
static void test_budget_offload_full_device(void) {
    kiln_context_options co = {.ignore_environment = true, .memory_limit = 4u << 20};
    kiln_context *small = NULL;
    char err[256];
    CHECK_OK(ctx, kiln_context_create(&co, &small, err, sizeof err));
    if (!small) return;
    kiln_context *saved = ctx;
    ctx = small; /* mlp() traces on ctx */
    kiln_graph *g = mlp(-1);
    uint64_t recompute = reachable(g, -1); /* a budget recomputation alone meets */
    kiln_budget_result r;
    kiln_compile_options o = {.memory_budget = recompute, .budget_offload = 1, .budget_result = &r};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    CHECK(r.fits && r.num_offloaded == 0);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    ctx = saved;
    kiln_context_destroy(small);
}

/* ----------------------------------------------------------- transforms ---- */

/* f(x) = sum(put_device(put_host(x))^2 * x): grad 3 x^2, against the reference and the
 * same function without the copies; forward mode and vmap pass through too. */
static kiln_value through(kiln_graph *g, kiln_value x) {
    kiln_value b =
        kiln_memory_put(g, kiln_memory_put(g, x, KILN_MEMORY_PINNED_HOST), KILN_MEMORY_DEVICE);
    return kiln_mul(g, kiln_mul(g, b, b), x);
}

static void test_transforms(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "grad", &g);
    int64_t d[1] = {33};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, d);
    kiln_value y = kiln_reduce_sum(g, through(g, x), 0, NULL, false), dx;
    CHECK_OK(ctx, kiln_grad(g, y, 1, &x, &dx));
    kiln_value tangent, outs[3];
    CHECK_OK(ctx, kiln_jvp(g, 1, &y, 1, &x, &x, &tangent)); /* d/dt f(x + t x) = 3 sum x^3 */
    outs[0] = dx, outs[1] = tangent, outs[2] = y;
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    kiln_array **args = make_args(g, 3);
    kiln_array *got[3] = {0}, *want[3] = {0};
    kiln_memory_analysis an;
    CHECK(run(g, args, got, &an, NULL));
    CHECK_OK(ctx, kiln_interpret(g, 1, args, 3, want));
    double xs[33], gx[33], t = 0, tw = 0;
    kiln_array_copy_to_host(args[0], xs, sizeof xs);
    kiln_array_copy_to_host(got[0], gx, sizeof gx);
    kiln_array_copy_to_host(got[1], &t, sizeof t);
    int ok = 1;
    for (int i = 0; i < 33; i++) {
        ok &= fabs(gx[i] - 3 * xs[i] * xs[i]) <= 1e-12 * (1 + fabs(gx[i]));
        tw += 3 * xs[i] * xs[i] * xs[i];
    }
    CHECK_MSG(ok, "grad of x^3 through memory_put is not 3 x^2");
    CHECK_MSG(fabs(t - tw) <= 1e-12 * (1 + fabs(tw)), "jvp %g, want %g", t, tw);
    for (int i = 0; i < 3; i++) CHECK(cmp_arrays(got[i], want[i], 1e-12, 1e-12, "vs reference"));
    free_arrays(got, 3), free_arrays(want, 3), free_arrays(args, 1), free(args);
    kiln_graph_destroy(g);
}

/* ---------------------------------------------------------------- loops ---- */

/* A scan body that sends its carry to host memory and back each iteration: the body's
 * host arena is taken once for all its iterations (exec_raw_begin), and the values are
 * the reference's. With kiln_grad over the scan, the backward body does it too. */
static int scan_offload_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                             kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_value h = kiln_memory_put(g, kiln_mul(g, in[0], in[1]), KILN_MEMORY_PINNED_HOST);
    kiln_value c = kiln_tanh(g, kiln_memory_put(g, h, KILN_MEMORY_DEVICE));
    outs[0] = c;
    outs[1] = kiln_sin(g, c);
    return 2;
}

static void test_scan(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "scan_offload", &g);
    int64_t cd[1] = {W}, xd[2] = {6, W};
    kiln_value c0 = kiln_parameter(g, "c0", KILN_DTYPE_F64, 1, cd);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 2, xd), outs[3], grad;
    int n = 0;
    CHECK_OK(ctx, kiln_scan(g, scan_offload_body, NULL, 1, &c0, 1, &xs, NULL, &n, outs));
    kiln_value loss = kiln_reduce_sum(g, outs[1], 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, loss, 1, &c0, &grad));
    outs[2] = grad;
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    kiln_array **args = make_args(g, 9);
    kiln_array *got[3] = {0}, *want[3] = {0};
    kiln_memory_analysis an;
    CHECK(run(g, args, got, &an, NULL));
    CHECK_OK(ctx, kiln_interpret(g, 2, args, 3, want));
    for (int i = 0; i < 3; i++) CHECK(got[i] && cmp_arrays(got[i], want[i], 1e-12, 1e-12, "scan"));
    free_arrays(got, 3), free_arrays(want, 3), free_arrays(args, 2), free(args);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------------- refusals ---- */

static void test_refusals(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "bad", &g);
    int64_t d[1] = {4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value h = kiln_memory_put(g, x, KILN_MEMORY_PINNED_HOST);
    kiln_value bad = kiln_exp(g, h);
    CHECK(bad.id == 0);
    CHECK_MSG(strstr(kiln_last_error(ctx), "exp") && strstr(kiln_last_error(ctx), "pinned_host") &&
                  strstr(kiln_last_error(ctx), "KILN_MEMORY_DEVICE"),
              "message: %s", kiln_last_error(ctx));
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "bad_out", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    h = kiln_memory_put(g, x, KILN_MEMORY_PINNED_HOST);
    CHECK_STATUS(kiln_graph_finish(g, 1, &h), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(ctx), "output 0 is in pinned_host memory"), "message: %s",
              kiln_last_error(ctx));
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "bad_kind", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    h = kiln_memory_put(g, x, (kiln_memory_kind)7);
    CHECK(h.id == 0);
    CHECK_MSG(strstr(kiln_last_error(ctx), "memory kind 7"), "message: %s", kiln_last_error(ctx));
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "bad_region", &g);
    CHECK_STATUS(
        kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES, 0, NULL),
        KILN_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(kiln_last_error(ctx), "kiln_checkpoint_begin_offload"));
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "bad_offload_names", &g);
    CHECK_STATUS(kiln_checkpoint_begin_offload(g, 0, NULL, 2, NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(ctx), "n_offload = 2 with offload_names NULL"), "message: %s",
              kiln_last_error(ctx));
    kiln_graph_destroy(g);
    kiln_graph_create(ctx, "null_offload_name", &g);
    const char *names[2] = {"prod", NULL};
    CHECK_STATUS(kiln_checkpoint_begin_offload(g, 0, NULL, 2, names), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(ctx), "offload_names[1] is NULL"), "message: %s",
              kiln_last_error(ctx));
    kiln_graph_destroy(g);

    kiln_memory_stats st;
    CHECK_STATUS(kiln_device_get_memory_kind_stats(ctx, 0, 5, &st), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_OK(ctx, kiln_device_get_memory_kind_stats(ctx, 0, KILN_MEMORY_PINNED_HOST, &st));
    CHECK(!strcmp(kiln_memory_kind_name(KILN_MEMORY_PINNED_HOST), "pinned_host"));
    CHECK(!strcmp(kiln_memory_kind_name((kiln_memory_kind)9), "?"));
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    ctx = test_context();
    RUN_CC(test_round_trip);
    RUN_CC(test_offload_dots);
    RUN_CC(test_save_and_offload_names);
    RUN_CC(test_budget_offload);
    RUN_CC(test_budget_offload_full_device);
    RUN_CC(test_transforms);
    RUN_CC(test_scan);
    RUN(test_refusals);
    kiln_context_destroy(ctx);
    return test_summary("offload");
}
