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
    /* the report says why: the budget's offload, weighed with the CPU's copies (memcpy in
     * order with the kernels) counted in full */
    char *rep = e ? kiln_executable_memory_report(e) : NULL;
    CHECK_CONTAINS(rep, "back from the host, memory budget, offload");
    CHECK_CONTAINS(rep, "offload copies run in order with the kernels (no copy queue)");
    kiln_string_free(ctx, rep);
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

/* ------------------------------------------- arguments in host memory ---- */

#define N_ST 1000 /* elements of the state kept on the host */

/* A momentum step with its state m in pinned_host memory (ZeRO-Offload's layout): m comes
 * to the device, m' = 0.9 m + g, w' = w - 0.1 m', and m' goes back to the host as an
 * output. Parameters: w (device), m (pinned_host), g (device). */
static kiln_graph *host_state_step(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "host_state", &g);
    int64_t d[1] = {N_ST};
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 1, d);
    kiln_value m = kiln_parameter_in_memory(g, "m", KILN_DTYPE_F32, 1, d, KILN_MEMORY_PINNED_HOST);
    kiln_value gr = kiln_parameter(g, "g", KILN_DTYPE_F32, 1, d);
    CHECK(kiln_value_memory_kind(g, m) == KILN_MEMORY_PINNED_HOST);
    CHECK(kiln_value_memory_kind(g, w) == KILN_MEMORY_DEVICE);
    CHECK(kiln_memory_put(g, m, KILN_MEMORY_PINNED_HOST).id == m.id); /* already there */
    kiln_value md = kiln_memory_put(g, m, KILN_MEMORY_DEVICE);
    kiln_value m2 = kiln_add(g, kiln_mul(g, md, kiln_scalar(g, KILN_DTYPE_F32, 0.9)), gr);
    kiln_value outs[2] = {kiln_sub(g, w, kiln_mul(g, m2, kiln_scalar(g, KILN_DTYPE_F32, 0.1))),
                          kiln_memory_put(g, m2, KILN_MEMORY_PINNED_HOST)};
    CHECK(kiln_value_memory_kind(g, outs[1]) == KILN_MEMORY_PINNED_HOST);
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    return g;
}

static void test_host_arguments(void) {
    kiln_graph *g = host_state_step();
    float w0[N_ST], m0[N_ST], g0[N_ST];
    for (int i = 0; i < N_ST; i++)
        w0[i] = 0.01f * (float)(i % 97), m0[i] = 0.5f - 0.001f * (float)i,
        g0[i] = 0.003f * (float)(i % 13) - 0.02f;
    int64_t d[1] = {N_ST};
    kiln_array *args[3] = {0};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, d, w0, &args[0]));
    CHECK_OK(ctx, kiln_array_create_in_memory(ctx, 0, KILN_MEMORY_PINNED_HOST, KILN_DTYPE_F32, 1, d,
                                              m0, &args[1]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, d, g0, &args[2]));
    CHECK(kiln_array_memory_kind(args[1]) == KILN_MEMORY_PINNED_HOST);
    CHECK(kiln_array_memory_kind(args[0]) == KILN_MEMORY_DEVICE);

    /* the reference, and the compiled program without donation: a new host output */
    kiln_array *want[2] = {0}, *got[2] = {0};
    CHECK_OK(ctx, kiln_interpret(g, 3, args, 2, want));
    CHECK(want[1] && kiln_array_memory_kind(want[1]) == KILN_MEMORY_PINNED_HOST);
    kiln_memory_analysis an;
    CHECK(run(g, args, got, &an, NULL));
    for (int i = 0; i < 2; i++) CHECK(got[i] && cmp_arrays(got[i], want[i], 0, 0, "host state"));
    CHECK(got[1] && kiln_array_memory_kind(got[1]) == KILN_MEMORY_PINNED_HOST);
    free_arrays(want, 2);
    uint64_t st = N_ST * 4, rounded = (st + 255) / 256 * 256;
    CHECK_MSG(an.host_argument_bytes == rounded && an.host_output_bytes == rounded &&
                  an.argument_bytes == 2 * rounded && an.output_bytes == rounded &&
                  an.peak_bytes == an.argument_bytes + an.output_bytes + an.temp_bytes,
              "host args %llu outputs %llu, device args %llu outputs %llu peak %llu",
              (unsigned long long)an.host_argument_bytes, (unsigned long long)an.host_output_bytes,
              (unsigned long long)an.argument_bytes, (unsigned long long)an.output_bytes,
              (unsigned long long)an.peak_bytes);
    free_arrays(got, 2);

    /* donated: the new state takes the old one's host buffer, three steps against the
     * same steps computed here in f32 */
    int donate[2] = {0, 1};
    kiln_compile_options o = {.keep_ir = true, .donate_argnums = donate, .n_donate = 2};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    kiln_executable_get_memory_analysis(e, &an);
    CHECK_MSG(an.host_alias_bytes == rounded && an.alias_bytes == rounded,
              "host alias %llu, device alias %llu", (unsigned long long)an.host_alias_bytes,
              (unsigned long long)an.alias_bytes);
    /* the buffers say their memory kind; a fetch and a host output are no offload */
    int n_host = 0;
    for (int i = 0; e && i < an.num_buffers; i++) {
        kiln_buffer_info bi;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &bi));
        n_host += bi.memory_kind == KILN_MEMORY_PINNED_HOST;
        CHECK_MSG(!bi.offloaded, "buffer %d (%s) says offloaded", i, bi.op);
        if (bi.kind == KILN_BUFFER_KIND_ARGUMENT)
            CHECK(bi.memory_kind ==
                  (bi.place_index == 1 ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE));
    }
    CHECK_MSG(n_host == 2, "%d buffers in pinned_host memory: want m and m'", n_host);
    char *report = e ? kiln_executable_memory_report(e) : NULL;
    CHECK_MSG(report && strstr(report, "host state") && strstr(report, "outside the peak"),
              "report: %s", report ? report : "(none)");
    kiln_string_free(ctx, report);
    char *json = e ? kiln_executable_plan_json(e) : NULL;
    CHECK(json && strstr(json, "\"host_argument_bytes\": 4096"));
    kiln_string_free(ctx, json);
    float w[N_ST], m[N_ST];
    memcpy(w, w0, sizeof w), memcpy(m, m0, sizeof m);
    for (int step = 0; step < 3 && e; step++) {
        int ok = 1;
        void *held = args[1] ? (void *)args[1] : NULL;
        CHECK(!cmp_run_planned(ctx, e, 3, args, 2, got, &ok) && ok);
        CHECK(kiln_array_is_consumed((kiln_array *)held));
        for (int i = 0; i < N_ST; i++) {
            m[i] = m[i] * 0.9f + g0[i];
            w[i] = w[i] - m[i] * 0.1f;
        }
        float gw[N_ST], gm[N_ST];
        CHECK_OK(ctx, kiln_array_copy_to_host(got[0], gw, sizeof gw));
        CHECK_OK(ctx, kiln_array_copy_to_host(got[1], gm, sizeof gm));
        CHECK(!memcmp(gw, w, sizeof w) && !memcmp(gm, m, sizeof m));
        kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
        args[0] = got[0], args[1] = got[1];
    }

    /* an argument in the wrong memory kind is refused, naming it and both kinds */
    kiln_array *dev_m = NULL, *host_m = NULL, *outs[2] = {0};
    CHECK_OK(ctx, kiln_array_copy_to_memory(args[1], KILN_MEMORY_DEVICE, &dev_m));
    CHECK(dev_m && kiln_array_memory_kind(dev_m) == KILN_MEMORY_DEVICE);
    kiln_array *bad[3] = {args[0], dev_m, args[2]};
    CHECK_STATUS(kiln_executable_run(e, 3, bad, 2, outs), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(ctx), "argument 1") && strstr(kiln_last_error(ctx), "'m'") &&
                  strstr(kiln_last_error(ctx), "pinned_host") &&
                  strstr(kiln_last_error(ctx), "kiln_array_copy_to_memory"),
              "message: %s", kiln_last_error(ctx));
    CHECK(!kiln_array_is_consumed(args[0]));
    /* and back: the same bytes */
    CHECK_OK(ctx, kiln_array_copy_to_memory(dev_m, KILN_MEMORY_PINNED_HOST, &host_m));
    float a1[N_ST], a2[N_ST];
    CHECK_OK(ctx, kiln_array_copy_to_host(args[1], a1, sizeof a1));
    CHECK_OK(ctx, kiln_array_copy_to_host(host_m, a2, sizeof a2));
    CHECK(!memcmp(a1, a2, sizeof a1));
    CHECK_STATUS(kiln_array_copy_to_memory(host_m, (kiln_memory_kind)5, &outs[0]),
                 KILN_STATUS_INVALID_ARGUMENT);
    kiln_array_destroy(dev_m), kiln_array_destroy(host_m);
    kiln_executable_destroy(e);
    free_arrays(args, 3);

    /* the graph's text keeps the memory kind */
    char *text = kiln_graph_to_string(g);
    CHECK(text && strstr(text, "\"m\" pinned_host :"));
    kiln_graph *back = NULL;
    CHECK_OK(ctx, kiln_graph_parse(ctx, text, strlen(text), "host_state.txt", &back));
    CHECK(back &&
          kiln_value_memory_kind(back, kiln_graph_parameter(back, 1)) == KILN_MEMORY_PINNED_HOST);
    kiln_graph_destroy(back);
    kiln_string_free(ctx, text);
    kiln_graph_destroy(g);
}

/* kiln_jit traces an argument in pinned_host memory as a parameter of that kind (and one
 * on the device as a device parameter: two signatures). */
static int jit_put_fn(kiln_graph *g, const kiln_value *a, int n, const void *st, void *user,
                      kiln_value *outs) {
    (void)n, (void)st, (void)user;
    kiln_value x = kiln_memory_put(g, a[0], KILN_MEMORY_DEVICE);
    outs[0] = kiln_memory_put(g, kiln_exp(g, x), KILN_MEMORY_PINNED_HOST);
    return 1;
}

static void test_host_jit(void) {
    kiln_jit *j = NULL;
    kiln_jit_options o = {.name = "host_jit", .fn = jit_put_fn};
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t d[1] = {5};
    float x[5] = {0, 1, -1, 0.5f, 2}, y[5];
    kiln_array *h = NULL, *dv = NULL, *out = NULL;
    CHECK_OK(ctx, kiln_array_create_in_memory(ctx, 0, KILN_MEMORY_PINNED_HOST, KILN_DTYPE_F32, 1, d,
                                              x, &h));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, d, x, &dv));
    CHECK_OK(ctx, kiln_jit_call(j, 1, &h, NULL, 0, 1, &out));
    CHECK(out && kiln_array_memory_kind(out) == KILN_MEMORY_PINNED_HOST);
    CHECK_OK(ctx, kiln_array_copy_to_host(out, y, sizeof y));
    for (int i = 0; i < 5; i++) CHECK(fabsf(y[i] - expf(x[i])) <= 1e-6f * expf(x[i]));
    kiln_array_destroy(out), out = NULL;
    CHECK_OK(ctx, kiln_jit_call(j, 1, &dv, NULL, 0, 1, &out)); /* device: put is the value */
    kiln_jit_stats js;
    kiln_jit_get_stats(j, &js);
    CHECK_MSG(js.compiles == 2, "%d compiles: one per memory kind", (int)js.compiles);
    kiln_array_destroy(out), kiln_array_destroy(h), kiln_array_destroy(dv);
    kiln_jit_destroy(j);
}

/* A loop body may capture a host value and fetch it itself (a micro-batch loop reading
 * parameters kept on the host): the body's parameter is of that kind, and the values are
 * those of the same loop over a device capture. A host value as a carry is refused. */
static int capture_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                        kiln_value *outs) {
    (void)n_in;
    kiln_value w = kiln_capture(g, *(const kiln_value *)user);
    kiln_value wd = kiln_memory_put(g, w, KILN_MEMORY_DEVICE);
    outs[0] = kiln_add(g, kiln_mul(g, in[0], wd), in[1]);
    return 1;
}

static void test_host_capture(void) {
    kiln_array *res[2] = {0};
    int64_t d[1] = {W}, xd[2] = {5, W};
    for (int kind = 0; kind < 2; kind++) {
        kiln_graph *g;
        kiln_graph_create(ctx, "host_capture", &g);
        kiln_value w =
            kiln_parameter_in_memory(g, "w", KILN_DTYPE_F64, 1, d, (kiln_memory_kind)kind);
        kiln_value c0 = kiln_parameter(g, "c0", KILN_DTYPE_F64, 1, d);
        kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 2, xd), out;
        int n = 0;
        CHECK_OK(ctx, kiln_scan(g, capture_body, &w, 1, &c0, 1, &xs, NULL, &n, &out));
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
        kiln_array **args = make_args(g, 5), *host = NULL;
        CHECK_OK(ctx, kiln_array_copy_to_memory(args[0], (kiln_memory_kind)kind, &host));
        kiln_array_destroy(args[0]), args[0] = host;
        kiln_memory_analysis an;
        CHECK(run(g, args, &res[kind], &an, NULL));
        free_arrays(args, 3), free(args);
        kiln_graph_destroy(g);
    }
    CHECK(res[0] && res[1] && same_bits(&res[0], &res[1], 1));
    free_arrays(res, 2);

    kiln_graph *g;
    kiln_graph_create(ctx, "host_carry", &g);
    kiln_value c0 =
        kiln_parameter_in_memory(g, "c0", KILN_DTYPE_F64, 1, d, KILN_MEMORY_PINNED_HOST);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 2, xd), out;
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F64, 1, d);
    int n = 0;
    CHECK_STATUS(kiln_scan(g, capture_body, &w, 1, &c0, 1, &xs, NULL, &n, &out),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(ctx), "pinned_host"), "message: %s", kiln_last_error(ctx));
    kiln_graph_destroy(g);
}

/* The gradient with respect to a parameter in host memory is its cotangent, on the device:
 * the same as with the parameter on the device. */
static void test_host_grad(void) {
    for (int kind = 0; kind < 2; kind++) {
        kiln_graph *g;
        kiln_graph_create(ctx, "host_grad", &g);
        int64_t d[1] = {17};
        kiln_value w =
            kiln_parameter_in_memory(g, "w", KILN_DTYPE_F64, 1, d, (kiln_memory_kind)kind);
        kiln_value wd = kiln_memory_put(g, w, KILN_MEMORY_DEVICE), dw;
        kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, kiln_sin(g, wd), wd), 0, NULL, false);
        CHECK_OK(ctx, kiln_grad(g, loss, 1, &w, &dw));
        CHECK(kiln_value_memory_kind(g, dw) == KILN_MEMORY_DEVICE);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &dw));
        double x[17], gx[17];
        for (int i = 0; i < 17; i++) x[i] = 0.3 * i - 2;
        kiln_array *a = NULL, *got = NULL;
        CHECK_OK(ctx, kiln_array_create_in_memory(ctx, 0, (kiln_memory_kind)kind, KILN_DTYPE_F64, 1,
                                                  d, x, &a));
        kiln_memory_analysis an;
        CHECK(run(g, &a, &got, &an, NULL));
        CHECK(got && !kiln_array_copy_to_host(got, gx, sizeof gx));
        int ok = 1;
        for (int i = 0; i < 17; i++) ok &= fabs(gx[i] - (cos(x[i]) * x[i] + sin(x[i]))) <= 1e-12;
        CHECK_MSG(ok, "d/dw sum(w sin w) with w in memory kind %d", kind);
        kiln_array_destroy(a), kiln_array_destroy(got);
        kiln_graph_destroy(g);
    }
}

/* ------------------------------------------------------------- refusals ---- */

static int host_out_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                         kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_memory_put(g, kiln_add(g, in[0], in[1]), KILN_MEMORY_PINNED_HOST);
    return 1;
}

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

    kiln_graph_create(ctx, "bad_body_out", &g); /* a loop's results are device values */
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F32, 2, (int64_t[]){3, d[0]}), res[2];
    int n_res = 0;
    CHECK_STATUS(kiln_scan(g, host_out_body, NULL, 1, &x, 1, &xs, NULL, &n_res, res),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_MSG(strstr(kiln_last_error(ctx), "output 0 of body") &&
                  strstr(kiln_last_error(ctx), "pinned_host"),
              "message: %s", kiln_last_error(ctx));
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "bad_param_kind", &g);
    x = kiln_parameter_in_memory(g, "x", KILN_DTYPE_F32, 1, d, (kiln_memory_kind)3);
    CHECK(x.id == 0);
    CHECK_MSG(strstr(kiln_last_error(ctx), "kiln_parameter_in_memory") &&
                  strstr(kiln_last_error(ctx), "memory kind 3"),
              "message: %s", kiln_last_error(ctx));
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "bad_host_param_read", &g);
    x = kiln_parameter_in_memory(g, "x", KILN_DTYPE_F32, 1, d, KILN_MEMORY_PINNED_HOST);
    CHECK(kiln_neg(g, x).id == 0);
    CHECK_MSG(strstr(kiln_last_error(ctx), "neg") && strstr(kiln_last_error(ctx), "pinned_host"),
              "message: %s", kiln_last_error(ctx));
    kiln_graph_destroy(g);
    kiln_array *bad_arr = NULL;
    CHECK_STATUS(kiln_array_create_in_memory(ctx, 0, (kiln_memory_kind)9, KILN_DTYPE_F32, 1, d,
                                             NULL, &bad_arr),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK(!bad_arr && strstr(kiln_last_error(ctx), "memory kind 9"));

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
    RUN_CC(test_host_arguments);
    RUN_CC(test_host_jit);
    RUN_CC(test_host_grad);
    RUN_CC(test_host_capture);
    RUN(test_refusals);
    kiln_context_destroy(ctx);
    return test_summary("offload");
}
