/* test_gpt.c — the GPT of models/gpt: the forward pass compiled against the reference
 * interpreter, a whole training step against it too (on every device present), gradients
 * (f64) against central finite differences, a few training steps
 * lowering the loss, checkpoints (round trip bit-exact, resume identical to an
 * uninterrupted run with one log of every step, corrupt / truncated / wrong-shape /
 * non-finite files refused with a message that says what is wrong, a diverged run never
 * replacing its last good checkpoint, 64-bit step counts). Tiny configurations: every part
 * runs in about a second. */
#include "compare.h"
#include "gpt.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const gpt_config tiny = {
    .vocab = 256, .context = 8, .layers = 2, .heads = 2, .channels = 16};

static kiln_array *tokens(kiln_context *ctx, int B, int T, uint64_t seed) {
    int32_t buf[256];
    for (int i = 0; i < B * T; i++) buf[i] = (int32_t)(gpt_rng_next(&seed) % 256);
    int64_t d[2] = {B, T};
    kiln_array *a = NULL;
    kiln_array_create(ctx, KILN_DTYPE_I32, 2, d, buf, &a);
    return a;
}

/* Parameters with random LayerNorm scales and biases too (init makes them 1 and 0, which
 * would leave their gradients' tests weak), drawn uniformly in [-0.5, 0.5) + base. */
static void random_params(kiln_context *ctx, const gpt_config *cfg, kiln_dtype t, kiln_array **p) {
    char err[GPT_ERR_SIZE];
    CHECK_OK(ctx, gpt_init_params(ctx, cfg, t, 7, p, err));
    uint64_t s = 99;
    for (int i = 0; i < gpt_num_params(cfg); i++) {
        char name[GPT_NAME_MAX];
        int rank;
        int64_t dims[2];
        gpt_param_info(cfg, i, name, &rank, dims);
        if (rank == 2) continue;
        int64_t n = dims[0];
        double v[256];
        float f[256];
        for (int64_t j = 0; j < n && j < 256; j++)
            v[j] = (strstr(name, "weight") ? 1.0 : 0.0) + (test_rng_unit(&s) - 0.5),
            f[j] = (float)v[j];
        kiln_array_destroy(p[i]);
        kiln_array_create(ctx, t, 1, dims, t == KILN_DTYPE_F64 ? (void *)v : (void *)f, &p[i]);
    }
}

/* The full context and a shorter sequence (positions 0..S-1 of wpe). */
static void test_forward_vs_reference(kiln_context *ctx) {
    int P = gpt_num_params(&tiny), B = 2;
    for (int T = 8; T >= 5; T -= 3) {
        kiln_graph *g;
        CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_forward", &g));
        kiln_value p[64];
        gpt_make_params(g, &tiny, KILN_DTYPE_F32, p);
        int64_t bt[2] = {B, T};
        kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt);
        kiln_value tgt = kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt);
        kiln_value outs[2] = {gpt_head(g, p, gpt_hidden(g, &tiny, p, idx)),
                              gpt_loss(g, &tiny, p, idx, tgt)};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        kiln_array *args[64];
        random_params(ctx, &tiny, KILN_DTYPE_F32, args);
        args[P] = tokens(ctx, B, T, 1), args[P + 1] = tokens(ctx, B, T, 2);
        CHECK_MSG(cmp_graph(ctx, g, P + 2, args, NULL, 1e-4, NULL), "sequence %d", T);
        for (int i = 0; i < P + 2; i++) kiln_array_destroy(args[i]);
        kiln_graph_destroy(g);
    }
}

/* The blocks as one scan over the layers (gpt_trace_options.scan_layers): the same hidden
 * states and loss as the unrolled form (f64: the two differ only in the order nothing
 * changes), compiled against the reference, and the scanned program's body compiled once. */
static void test_scanned_forward(kiln_context *ctx) {
    gpt_config cfg = tiny;
    cfg.layers = 3;
    int P = gpt_num_params(&cfg), B = 2, T = 8;
    kiln_array *args[64], *res[2][2] = {{0}};
    random_params(ctx, &cfg, KILN_DTYPE_F64, args);
    args[P] = tokens(ctx, B, T, 1), args[P + 1] = tokens(ctx, B, T, 2);
    for (int scanned = 0; scanned < 2; scanned++) {
        kiln_graph *g;
        CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_forward", &g));
        kiln_value p[64];
        gpt_make_params(g, &cfg, KILN_DTYPE_F64, p);
        int64_t bt[2] = {B, T};
        kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt);
        kiln_value tgt = kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt);
        gpt_trace_options o = {.scan_layers = scanned};
        kiln_value outs[2] = {gpt_hidden_with(g, &cfg, p, idx, &o),
                              gpt_loss_with(g, &cfg, p, idx, tgt, &o)};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        CHECK_MSG(cmp_graph(ctx, g, P + 2, args, NULL, 1e-4, NULL), "scanned %d", scanned);
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e) CHECK_OK(ctx, kiln_executable_run(e, P + 2, args, 2, res[scanned]));
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    CHECK(cmp_arrays(res[1][0], res[0][0], 1e-12, 1e-12, "scanned hidden"));
    CHECK(cmp_arrays(res[1][1], res[0][1], 1e-12, 1e-12, "scanned loss"));
    for (int i = 0; i < 4; i++) kiln_array_destroy(res[i / 2][i % 2]);
    for (int i = 0; i < P + 2; i++) kiln_array_destroy(args[i]);
}

/* The arguments of an f64 training step of cfg on batches [B, T]: random parameters,
 * moments of small distinct values, two token batches, lr 1e-3 and step 3. */
static void step_args_f64(kiln_context *ctx, const gpt_config *cfg, int B, int T,
                          kiln_array **args) {
    int P = gpt_num_params(cfg);
    random_params(ctx, cfg, KILN_DTYPE_F64, args);
    for (int i = 0; i < P; i++) {
        int64_t n = kiln_array_size(args[i]);
        double *m = malloc((size_t)n * sizeof *m);
        for (int k = 1; k < 3; k++) {
            for (int64_t j = 0; j < n; j++)
                m[j] = k == 1 ? 1e-3 * (double)(j % 7) : 1e-4 + 1e-5 * (double)(j % 5);
            kiln_array_create(ctx, KILN_DTYPE_F64, args[i]->shape.rank, args[i]->shape.dims, m,
                              &args[k * P + i]);
        }
        free(m);
    }
    args[3 * P] = tokens(ctx, B, T, 3), args[3 * P + 1] = tokens(ctx, B, T, 4);
    float lr = 1e-3f;
    int32_t step = 3;
    kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[3 * P + 2]);
    kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step, &args[3 * P + 3]);
}

/* One variant of the training step: traced for cfg in dtype dt, checked against the
 * reference interpreter within tol when `what` is not NULL, compiled and run on args
 * into res (n_out outputs). */
static void run_step_variant(kiln_context *ctx, const gpt_config *cfg, kiln_dtype dt,
                             const gpt_step_spec *spec, int n_args, kiln_array **args, int n_out,
                             kiln_array **res, const char *what, double tol) {
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
    char err[GPT_ERR_SIZE];
    CHECK_MSG(gpt_trace_step(g, cfg, dt, spec, err) == KILN_STATUS_OK, "%s", err);
    if (what) CHECK_MSG(cmp_graph(ctx, g, n_args, args, NULL, tol, NULL), "%s", what);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    if (e) CHECK_OK(ctx, kiln_executable_run(e, n_args, args, n_out, res));
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The training step with the blocks scanned (gpt_step_spec.scan_layers): its gradients
 * come from the scan's VJP (a reverse scan recomputing each block), and the new
 * parameters, moments and loss equal the unrolled step's to f64 rounding; compiled
 * against the reference too (and donated, as `kiln train` runs it). So does the step with
 * its batch in two micro-batches (gpt_step_spec.micro_batches: gradient accumulation in a
 * scan), unrolled and scanned. */
static void test_scanned_step(kiln_context *ctx) {
    gpt_config cfg = tiny;
    cfg.layers = 3;
    int P = gpt_num_params(&cfg), B = 2, T = 8, n_args = 3 * P + 4, n_out = 3 * P + 1;
    kiln_array *args[3 * 64 + 4], *res[4][3 * 64 + 1] = {{0}};
    step_args_f64(ctx, &cfg, B, T, args);
    for (int v = 0; v < 4; v++) { /* bit 0: scanned layers; bit 1: two micro-batches */
        gpt_step_spec spec = {.batch = B,
                              .seq = T,
                              .weight_decay = 0.1,
                              .clip = 1.0,
                              .scan_layers = v & 1,
                              .micro_batches = v & 2 ? 2 : 0};
        char what[32];
        snprintf(what, sizeof what, "step variant %d", v);
        run_step_variant(ctx, &cfg, KILN_DTYPE_F64, &spec, n_args, args, n_out, res[v],
                         v ? what : NULL, 1e-4);
    }
    for (int j = 0; j < n_out; j++) {
        for (int v = 1; v < 4; v++) {
            char what[64];
            snprintf(what, sizeof what, "step variant %d (scanned %d, micro %d) output %d", v,
                     v & 1, v & 2 ? 2 : 1, j);
            CHECK(cmp_arrays(res[v][j], res[0][j], 1e-12, 1e-11, what));
            kiln_array_destroy(res[v][j]);
        }
        kiln_array_destroy(res[0][j]);
    }
    for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
}

/* ZeRO-Offload's layout (gpt_step_spec.offload_optimizer, offload_params): the moments, and
 * then the parameters, as pinned_host arguments and outputs, donated as `kiln train`
 * runs them, alone and with two micro-batches (whose loop fetches the host parameters in
 * its body). The new parameters, moments and loss equal the step's with everything on the
 * device to f64 rounding; measured = planned for both memory kinds; the new state comes
 * back in the kind it went in. */
static void test_offloaded_step(kiln_context *ctx) {
    gpt_config cfg = tiny;
    int P = gpt_num_params(&cfg), B = 2, T = 8, n_args = 3 * P + 4, n_out = 3 * P + 1;
    kiln_array *base[3 * 64 + 4], *want[3 * 64 + 1] = {0};
    step_args_f64(ctx, &cfg, B, T, base);
    int *donate = malloc((size_t)(3 * P) * sizeof *donate);
    for (int i = 0; i < 3 * P; i++) donate[i] = i;
    /* v: 0 everything on the device (the reference of 1 and 2); 1 the moments on the host;
     * 2 the moments and parameters; 3 on the device with two micro-batches (the reference of
     * 4); 4 both on the host with two micro-batches */
    for (int v = 0; v < 5; v++) {
        bool opt = v == 1 || v == 2 || v == 4, params = v == 2 || v == 4;
        int micro = v >= 3 ? 2 : 0;
        kiln_graph *g;
        CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
        char err[GPT_ERR_SIZE];
        gpt_step_spec spec = {.batch = B,
                              .seq = T,
                              .weight_decay = 0.1,
                              .clip = 1.0,
                              .micro_batches = micro,
                              .offload_optimizer = opt,
                              .offload_params = params};
        CHECK_MSG(gpt_trace_step(g, &cfg, KILN_DTYPE_F64, &spec, err) == KILN_STATUS_OK, "%s", err);
        kiln_array *args[3 * 64 + 4], *got[3 * 64 + 1] = {0};
        for (int i = 0; i < n_args; i++) {
            bool host = i < 3 * P && (i < P ? params : opt);
            kiln_memory_kind kind = host ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE;
            CHECK_OK(ctx, kiln_array_copy_to_memory(base[i], kind, &args[i]));
            CHECK(kiln_value_memory_kind(g, kiln_graph_parameter(g, i)) == (int)kind);
        }
        kiln_compile_options o = {.keep_ir = true, .donate_argnums = donate, .n_donate = 3 * P};
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, &o, &e));
        kiln_memory_analysis an = {0};
        if (e) kiln_executable_get_memory_analysis(e, &an);
        uint64_t host_state = an.host_argument_bytes;
        int ok = 1;
        if (e) CHECK(!cmp_run_planned(ctx, e, n_args, args, n_out, got, &ok) && ok);
        if (opt)
            CHECK_MSG(host_state > 0 && an.host_alias_bytes == host_state,
                      "variant %d: host arguments %llu, of them taken by outputs %llu", v,
                      (unsigned long long)host_state, (unsigned long long)an.host_alias_bytes);
        for (int j = 0; j < n_out && got[0]; j++) {
            bool host = j < 3 * P && (j < P ? params : opt);
            CHECK(kiln_array_memory_kind(got[j]) ==
                  (host ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE));
        }
        if (v == 0 || v == 3) { /* the references: on the device, whole and split */
            for (int j = 0; j < n_out; j++) kiln_array_destroy(want[j]), want[j] = got[j];
        } else {
            for (int j = 0; j < n_out; j++) {
                char what[64];
                snprintf(what, sizeof what, "offload variant %d output %d", v, j);
                CHECK(got[j] && cmp_arrays(got[j], want[j], 1e-12, 1e-12, what));
                kiln_array_destroy(got[j]);
            }
        }
        for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    /* the parameters offloaded with a sharded optimiser are refused, saying so */
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
    char err[GPT_ERR_SIZE];
    gpt_step_spec spec = {
        .batch = B, .seq = T, .all_reduce = true, .shard_ranks = 2, .offload_params = true};
    CHECK(gpt_trace_step(g, &cfg, KILN_DTYPE_F64, &spec, err) == KILN_STATUS_UNIMPLEMENTED);
    CHECK_MSG(strstr(err, "offload_params") && strstr(err, "shard"), "%s", err);
    kiln_graph_destroy(g);
    for (int j = 0; j < n_out; j++) kiln_array_destroy(want[j]);
    for (int i = 0; i < n_args; i++) kiln_array_destroy(base[i]);
    free(donate);
}

/* The stacked layout (gpt_param_info_layout): 16 arrays whatever L, each stack [L, ...]
 * named "h.<tensor>", decaying as its layers' tensor; gpt_params_stack and _unstack give
 * back the per-layer arrays bit for bit. */
static void test_stacked_layout(kiln_context *ctx) {
    gpt_config cfg = tiny;
    cfg.layers = 3;
    int P = gpt_num_params(&cfg), PS = gpt_num_params_layout(&cfg, true);
    CHECK(PS == 16 && gpt_num_params_layout(&cfg, false) == P);
    char name[GPT_NAME_MAX];
    int rank;
    int64_t d[3];
    CHECK(gpt_param_info_layout(&cfg, true, 4, name, &rank, d));
    CHECK(!strcmp(name, "h.attn.c_attn.weight") && rank == 3 && d[0] == 3 && d[1] == 16 &&
          d[2] == 48);
    CHECK(gpt_param_info_layout(&cfg, true, 2, name, &rank, d));
    CHECK(!strcmp(name, "h.ln_1.weight") && rank == 2 && d[0] == 3 && d[1] == 16);
    CHECK(gpt_param_info_layout(&cfg, true, 15, name, &rank, d) && !strcmp(name, "ln_f.bias"));
    CHECK(!gpt_param_info_layout(&cfg, true, 16, name, &rank, d));
    CHECK(gpt_param_decays_layout(&cfg, true, 0) && gpt_param_decays_layout(&cfg, true, 4));
    CHECK(!gpt_param_decays_layout(&cfg, true, 2) && !gpt_param_decays_layout(&cfg, true, 14));
    kiln_array *p[64], *st[16], *q[64];
    char err[GPT_ERR_SIZE];
    random_params(ctx, &cfg, KILN_DTYPE_F32, p);
    CHECK_MSG(gpt_params_stack(ctx, &cfg, p, st, err) == KILN_STATUS_OK, "%s", err);
    CHECK_MSG(gpt_params_unstack(ctx, &cfg, st, q, err) == KILN_STATUS_OK, "%s", err);
    /* layer 1's c_fc bias is row 1 of its stack */
    float row[64], want[64];
    float *all = malloc(kiln_array_nbytes(st[2 + 9]));
    kiln_array_copy_to_host(st[2 + 9], all, kiln_array_nbytes(st[2 + 9]));
    kiln_array_copy_to_host(p[2 + 12 + 9], want, 64 * sizeof(float));
    memcpy(row, all + 64, sizeof row);
    CHECK(!memcmp(row, want, sizeof row));
    free(all);
    int differ = 0;
    for (int i = 0; i < P; i++) {
        size_t n = kiln_array_nbytes(p[i]);
        char *a = malloc(n), *b = malloc(n);
        differ += kiln_array_nbytes(q[i]) != n;
        kiln_array_copy_to_host(p[i], a, n), kiln_array_copy_to_host(q[i], b, n);
        differ += memcmp(a, b, n) != 0;
        free(a), free(b);
    }
    CHECK_MSG(differ == 0, "%d of %d arrays differ after stack and unstack", differ, P);
    for (int i = 0; i < P; i++) kiln_array_destroy(p[i]), kiln_array_destroy(q[i]);
    for (int i = 0; i < PS; i++) kiln_array_destroy(st[i]);
}

/* The scanned step over the stacked layout (gpt_step_spec.stacked): the same new
 * parameters, moments and loss as the unrolled step to f64 rounding (its outputs unstacked
 * to compare), compiled against the reference; and its program the same size at any
 * depth, where the per-layer scanned step's grows. */
static int stacked_step_ops(kiln_context *ctx, int layers, bool stacked) {
    gpt_config cfg = tiny;
    cfg.layers = layers;
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
    char err[GPT_ERR_SIZE];
    gpt_step_spec spec = {
        .batch = 2, .seq = 8, .clip = 1.0, .scan_layers = true, .stacked = stacked};
    CHECK_MSG(gpt_trace_step(g, &cfg, KILN_DTYPE_F32, &spec, err) == KILN_STATUS_OK, "%s", err);
    kiln_executable *e = NULL;
    kiln_executable_info info = {0};
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    if (e) kiln_executable_get_info(e, &info);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return info.num_ops;
}

static void test_stacked_step(kiln_context *ctx) {
    gpt_config cfg = tiny;
    cfg.layers = 3;
    int P = gpt_num_params(&cfg), PS = gpt_num_params_layout(&cfg, true), B = 2, T = 8;
    kiln_array *args[3 * 64 + 4], *sargs[3 * 16 + 4], *res[3 * 64 + 1] = {0};
    kiln_array *sres[3 * 16 + 1] = {0}, *un[3 * 64] = {0};
    char err[GPT_ERR_SIZE];
    random_params(ctx, &cfg, KILN_DTYPE_F64, args);
    for (int i = 0; i < P; i++) {
        int64_t n = kiln_array_size(args[i]);
        double *m = malloc((size_t)n * sizeof *m);
        for (int k = 1; k < 3; k++) {
            for (int64_t j = 0; j < n; j++)
                m[j] = k == 1 ? 1e-3 * (double)((j + i) % 7) : 1e-4 + 1e-5 * (double)(j % 5);
            kiln_array_create(ctx, KILN_DTYPE_F64, args[i]->shape.rank, args[i]->shape.dims, m,
                              &args[k * P + i]);
        }
        free(m);
    }
    float lr = 1e-3f;
    int32_t step = 3;
    args[3 * P] = tokens(ctx, B, T, 3), args[3 * P + 1] = tokens(ctx, B, T, 4);
    kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[3 * P + 2]);
    kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step, &args[3 * P + 3]);
    for (int k = 0; k < 3; k++)
        CHECK_MSG(gpt_params_stack(ctx, &cfg, args + k * P, sargs + k * PS, err) == 0, "%s", err);
    for (int i = 0; i < 4; i++) sargs[3 * PS + i] = args[3 * P + i];
    for (int stacked = 0; stacked < 2; stacked++) {
        kiln_graph *g;
        CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
        gpt_step_spec spec = {.batch = B,
                              .seq = T,
                              .weight_decay = 0.1,
                              .clip = 1.0,
                              .scan_layers = stacked,
                              .stacked = stacked};
        CHECK_MSG(gpt_trace_step(g, &cfg, KILN_DTYPE_F64, &spec, err) == KILN_STATUS_OK, "%s", err);
        int na = stacked ? 3 * PS + 4 : 3 * P + 4, no = stacked ? 3 * PS + 1 : 3 * P + 1;
        kiln_array **in = stacked ? sargs : args, **out = stacked ? sres : res;
        if (stacked) CHECK_MSG(cmp_graph(ctx, g, na, in, NULL, 1e-4, NULL), "stacked step");
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e) CHECK_OK(ctx, kiln_executable_run(e, na, in, no, out));
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    for (int k = 0; k < 3 && sres[0]; k++)
        CHECK_MSG(gpt_params_unstack(ctx, &cfg, sres + k * PS, un + k * P, err) == 0, "%s", err);
    for (int j = 0; j < 3 * P && un[0]; j++) {
        char what[48];
        snprintf(what, sizeof what, "stacked step output %d", j);
        CHECK(cmp_arrays(un[j], res[j], 1e-12, 1e-11, what));
    }
    CHECK(cmp_arrays(sres[3 * PS], res[3 * P], 1e-12, 1e-12, "stacked step loss"));
    for (int j = 0; j < 3 * P; j++) kiln_array_destroy(un[j]), kiln_array_destroy(res[j]);
    kiln_array_destroy(res[3 * P]);
    for (int j = 0; j < 3 * PS + 1; j++) kiln_array_destroy(sres[j]);
    for (int j = 0; j < 3 * PS; j++) kiln_array_destroy(sargs[j]);
    for (int i = 0; i < 3 * P + 4; i++) kiln_array_destroy(args[i]);

    int flat[2] = {stacked_step_ops(ctx, 2, true), stacked_step_ops(ctx, 6, true)};
    int grows[2] = {stacked_step_ops(ctx, 2, false), stacked_step_ops(ctx, 6, false)};
    CHECK_MSG(flat[0] == flat[1] && flat[0] > 0, "stacked step: %d ops at 2 layers, %d at 6",
              flat[0], flat[1]);
    CHECK_MSG(grows[1] > grows[0], "per-layer scanned step: %d ops at 2 layers, %d at 6", grows[0],
              grows[1]);
}

/* A whole training step as `kiln train` compiles it (forward, backward, global-norm
 * clipping, AdamW; parameters and moments donated) against the reference interpreter, on
 * every device of the context (cmp_graph: the CPU, and each GPU where there is one).
 * Moments are random and v well away from 0: with v = 0 the first update is about
 * lr * sign(g), which no tolerance survives where a gradient is near 0. */
static void test_step_vs_reference(kiln_context *ctx) {
    int P = gpt_num_params(&tiny), B = 2, T = 8;
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
    char err[GPT_ERR_SIZE];
    gpt_step_spec spec = {.batch = B, .seq = T, .weight_decay = 0.1, .clip = 1.0};
    CHECK_MSG(gpt_trace_step(g, &tiny, KILN_DTYPE_F32, &spec, err) == KILN_STATUS_OK, "%s", err);
    kiln_array *args[3 * 64 + 4];
    random_params(ctx, &tiny, KILN_DTYPE_F32, args);
    uint64_t s = 5;
    for (int i = 0; i < P; i++) {
        int64_t n = kiln_array_size(args[i]);
        float *m = malloc((size_t)n * sizeof *m), *v = malloc((size_t)n * sizeof *v);
        for (int64_t j = 0; j < n; j++)
            m[j] = (float)((test_rng_unit(&s) - 0.5) * 1e-2),
            v[j] = (float)(1e-4 + test_rng_unit(&s) * 1e-3);
        kiln_array_create(ctx, KILN_DTYPE_F32, args[i]->shape.rank, args[i]->shape.dims, m,
                          &args[P + i]);
        kiln_array_create(ctx, KILN_DTYPE_F32, args[i]->shape.rank, args[i]->shape.dims, v,
                          &args[2 * P + i]);
        free(m), free(v);
    }
    args[3 * P] = tokens(ctx, B, T, 3), args[3 * P + 1] = tokens(ctx, B, T, 4);
    float lr = 1e-3f;
    int32_t step = 3;
    kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[3 * P + 2]);
    kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step, &args[3 * P + 3]);
    CHECK_MSG(cmp_graph(ctx, g, 3 * P + 4, args, NULL, 1e-4, NULL), "the training step");
    /* donated as `kiln train` does, so the update runs in place (on copies of the
     * arguments: the other devices' runs leave these intact) */
    int donate[3 * 64];
    for (int i = 0; i < 3 * P; i++) donate[i] = i;
    kiln_compile_options o = {.n_donate = 3 * P, .donate_argnums = donate};
    CHECK_MSG(cmp_other_devices(ctx, g, 3 * P + 4, args, &o, 1e-4), "the step, donated");
    for (int i = 0; i < 3 * P + 4; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

/* The step's arguments as test_step_vs_reference makes them: random parameters, random
 * moments (v away from 0), two batches, lr and the step number; then `extra` rank-0
 * arguments (loss scaling's) from extra_f32 (the scale) and extra_i32 (its counter). */
static int step_args(kiln_context *ctx, const gpt_config *c, int B, int T, kiln_array **args,
                     int extra, float scale, int32_t good) {
    int P = gpt_num_params(c);
    random_params(ctx, c, KILN_DTYPE_F32, args);
    uint64_t s = 5;
    for (int i = 0; i < P; i++) {
        int64_t n = kiln_array_size(args[i]);
        float *m = malloc((size_t)n * sizeof *m), *v = malloc((size_t)n * sizeof *v);
        for (int64_t j = 0; j < n; j++)
            m[j] = (float)((test_rng_unit(&s) - 0.5) * 1e-2),
            v[j] = (float)(1e-4 + test_rng_unit(&s) * 1e-3);
        kiln_array_create(ctx, KILN_DTYPE_F32, args[i]->shape.rank, args[i]->shape.dims, m,
                          &args[P + i]);
        kiln_array_create(ctx, KILN_DTYPE_F32, args[i]->shape.rank, args[i]->shape.dims, v,
                          &args[2 * P + i]);
        free(m), free(v);
    }
    args[3 * P] = tokens(ctx, B, T, 3), args[3 * P + 1] = tokens(ctx, B, T, 4);
    float lr = 1e-3f;
    int32_t step = 3;
    kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[3 * P + 2]);
    kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step, &args[3 * P + 3]);
    if (extra > 0) kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &scale, &args[3 * P + 4]);
    if (extra > 1) kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &good, &args[3 * P + 5]);
    return 3 * P + 4 + extra;
}

static float scalar_f32(const kiln_array *a) {
    float f = NAN;
    kiln_array_copy_to_host(a, &f, sizeof f);
    return f;
}

/* The policy of gpt_trace_options.compute: f32 parameters give f32 gradients through the
 * bf16 model, the loss is f32; a whole bf16 training step keeps parameters and moments f32,
 * agrees with the reference interpreter (which rounds every 16-bit value as the kernels
 * do), and its loss and update are close to the f32 step's; the activations it saves for
 * the backward pass take at most 0.55x the f32 step's bytes. */
static void test_mixed_precision_step(kiln_context *ctx) {
    const gpt_config c = {.vocab = 256, .context = 16, .layers = 1, .heads = 2, .channels = 32};
    int P = gpt_num_params(&c), B = 4, T = 16;
    kiln_graph *gl;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_loss_bf16", &gl));
    kiln_value p[64], gr[64];
    gpt_make_params(gl, &c, KILN_DTYPE_F32, p);
    int64_t bt[2] = {B, T};
    gpt_trace_options to = {.compute = KILN_DTYPE_BF16};
    kiln_value h = gpt_hidden_with(gl, &c, p, kiln_parameter(gl, "i", KILN_DTYPE_I32, 2, bt), &to);
    kiln_value loss = gpt_loss_with(gl, &c, p, kiln_parameter(gl, "idx", KILN_DTYPE_I32, 2, bt),
                                    kiln_parameter(gl, "targets", KILN_DTYPE_I32, 2, bt), &to);
    CHECK_OK(ctx, kiln_grad(gl, loss, P, p, gr));
    kiln_dtype t = KILN_DTYPE_INVALID;
    CHECK(kiln_value_type(gl, h, &t, NULL, NULL) && t == KILN_DTYPE_BF16);
    CHECK(kiln_value_type(gl, loss, &t, NULL, NULL) && t == KILN_DTYPE_F32);
    for (int i = 0; i < P; i++) {
        kiln_value_type(gl, gr[i], &t, NULL, NULL);
        CHECK_MSG(t == KILN_DTYPE_F32, "gradient %d is %s", i, kiln_dtype_name(t));
    }
    kiln_graph_destroy(gl);

    kiln_executable *e[2] = {0};
    kiln_array *args[3 * 64 + 4], *outs[2][3 * 64 + 1] = {{0}};
    int n = step_args(ctx, &c, B, T, args, 0, 0, 0);
    uint64_t act[2] = {0};
    char err[GPT_ERR_SIZE];
    for (int k = 0; k < 2; k++) {
        kiln_graph *g;
        CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
        gpt_step_spec spec = {.batch = B,
                              .seq = T,
                              .weight_decay = 0.1,
                              .clip = 1.0,
                              .compute = k ? KILN_DTYPE_BF16 : KILN_DTYPE_F32};
        CHECK_MSG(gpt_trace_step(g, &c, KILN_DTYPE_F32, &spec, err) == KILN_STATUS_OK, "%s", err);
        if (k) CHECK_MSG(cmp_graph(ctx, g, n, args, NULL, 2e-2, NULL), "the bf16 step");
        CHECK_OK(ctx, kiln_compile(g, NULL, &e[k]));
        kiln_memory_analysis ma;
        if (e[k] && !kiln_executable_get_memory_analysis(e[k], &ma))
            act[k] = ma.class_bytes_total[KILN_MEMORY_CLASS_ACTIVATION];
        if (e[k]) CHECK_OK(ctx, kiln_executable_run(e[k], n, args, 3 * P + 1, outs[k]));
        kiln_graph_destroy(g);
    }
    CHECK_MSG(act[1] > 0 && act[1] <= 0.55 * (double)act[0],
              "saved activations: bf16 %llu bytes, f32 %llu", (unsigned long long)act[1],
              (unsigned long long)act[0]);
    if (outs[0][3 * P] && outs[1][3 * P]) {
        double l32 = scalar_f32(outs[0][3 * P]), l16 = scalar_f32(outs[1][3 * P]);
        CHECK_MSG(fabs(l16 - l32) <= 5e-3 * l32, "loss: bf16 %.6f, f32 %.6f", l16, l32);
        double worst = 0;
        for (int i = 0; i < 3 * P; i++) {
            CHECK(kiln_array_dtype(outs[1][i]) == KILN_DTYPE_F32);
            int64_t m = kiln_array_size(outs[1][i]);
            float *a = malloc((size_t)m * 4), *b = malloc((size_t)m * 4);
            kiln_array_copy_to_host(outs[0][i], a, (size_t)m * 4);
            kiln_array_copy_to_host(outs[1][i], b, (size_t)m * 4);
            for (int64_t j = 0; j < m; j++) worst = fmax(worst, fabs((double)a[j] - b[j]));
            free(a), free(b);
        }
        /* lr 1e-3: a tenth of one update at most */
        CHECK_MSG(worst < 1e-4, "the bf16 step's state differs from f32's by %g", worst);
    }
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 3 * P + 1; i++) kiln_array_destroy(outs[k][i]);
        kiln_executable_destroy(e[k]);
    }
    for (int i = 0; i < n; i++) kiln_array_destroy(args[i]);
}

/* Attention as the op (gpt_step_spec.fused_attention): the step's graph holds one
 * dot_product_attention a layer and no [B, H, T, T] softmax, the op's gradient recomputes
 * the probabilities, and the new parameters, moments and loss equal the written-out step's
 * to f64 rounding (compiled against the reference too); computed in bf16 (mixed
 * precision), to bf16's rounding (the op keeps its scores and softmax in f32 and rounds
 * once, as the written-out form rounds the probabilities). */
static void test_fused_attention_step(kiln_context *ctx) {
    gpt_config cfg = tiny;
    cfg.layers = 2;
    int P = gpt_num_params(&cfg), B = 2, T = 8, n_out = 3 * P + 1;
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
        kiln_array *args[3 * 64 + 4], *res[2][3 * 64 + 1] = {{0}};
        int n_args = 3 * P + 4;
        if (t)
            n_args = step_args(ctx, &cfg, B, T, args, 0, 0, 0);
        else
            step_args_f64(ctx, &cfg, B, T, args);
        for (int f = 0; f < 2; f++) {
            gpt_step_spec spec = {.batch = B,
                                  .seq = T,
                                  .weight_decay = 0.1,
                                  .clip = 1.0,
                                  .compute = t ? KILN_DTYPE_BF16 : 0,
                                  .fused_attention = f};
            kiln_graph *g; /* the attention ops the trace holds */
            CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
            char err[GPT_ERR_SIZE];
            CHECK_MSG(gpt_trace_step(g, &cfg, dt, &spec, err) == KILN_STATUS_OK, "%s", err);
            int ops = 0, grads = 0; /* the forward pass, and its gradient's four kinds */
            for (uint32_t i = 0; i < g->n_nodes; i++)
                if (g->nodes[i].op == IR_ATTENTION) {
                    ops += g->nodes[i].a.attn.kind == IR_ATTN_FORWARD;
                    grads += g->nodes[i].a.attn.kind != IR_ATTN_FORWARD;
                }
            CHECK_MSG(ops == (f ? cfg.layers : 0) && grads == 4 * ops,
                      "%s step, fused %d: %d attention ops, %d of their gradient",
                      kiln_dtype_name(dt), f, ops, grads);
            kiln_graph_destroy(g);
            run_step_variant(ctx, &cfg, dt, &spec, n_args, args, n_out, res[f],
                             f && !t ? "fused" : NULL, 1e-4);
        }
        for (int j = 0; j < n_out; j++) {
            char what[96];
            snprintf(what, sizeof what, "%s step, fused attention: output %d", t ? "bf16" : "f64",
                     j);
            /* lr 1e-3 under bf16: the state within a tenth of an update, the loss 1% */
            if (res[0][j] && res[1][j])
                CHECK(cmp_arrays(res[1][j], res[0][j], t ? (j == 3 * P ? 1e-2 : 1e-4) : 1e-12,
                                 1e-10, what));
            kiln_array_destroy(res[0][j]);
            kiln_array_destroy(res[1][j]);
        }
        for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
    }
}

/* The step computed in f16 with dynamic loss scaling: at a scale of 2^30 the scaled
 * cotangents overflow f16, the step is skipped (parameters and moments bit-identical, the
 * step number kept, the scale halved and its counter reset); at 2^10 it is taken. */
static void test_loss_scaled_step(kiln_context *ctx) {
    int P = gpt_num_params(&tiny), B = 2, T = 8;
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_train_step", &g));
    char err[GPT_ERR_SIZE];
    gpt_step_spec spec = {.batch = B,
                          .seq = T,
                          .weight_decay = 0.1,
                          .clip = 1.0,
                          .compute = KILN_DTYPE_F16,
                          .loss_scaling = GPT_LOSS_SCALING_DYNAMIC,
                          .growth_interval = 100};
    CHECK_MSG(gpt_trace_step(g, &tiny, KILN_DTYPE_F32, &spec, err) == KILN_STATUS_OK, "%s", err);
    CHECK(kiln_graph_num_outputs(g) == 3 * P + 4);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    for (int round = 0; round < 2 && e; round++) {
        kiln_array *args[3 * 64 + 6], *outs[3 * 64 + 4] = {0};
        float scale = round ? 0x1p10f : 0x1p30f;
        int n = step_args(ctx, &tiny, B, T, args, 2, scale, 41);
        CHECK_OK(ctx, kiln_executable_run(e, n, args, 3 * P + 4, outs));
        if (outs[3 * P + 3]) {
            int same = 0;
            for (int i = 0; i < 3 * P; i++) {
                size_t nb = kiln_array_nbytes(args[i]);
                char *x = malloc(nb), *y = malloc(nb);
                kiln_array_copy_to_host(args[i], x, nb), kiln_array_copy_to_host(outs[i], y, nb);
                same += !memcmp(x, y, nb);
                free(x), free(y);
            }
            int32_t step = 0, good = 0;
            kiln_array_copy_to_host(outs[3 * P + 1], &step, 4);
            kiln_array_copy_to_host(outs[3 * P + 3], &good, 4);
            CHECK(isfinite(scalar_f32(outs[3 * P])));
            if (!round) {
                CHECK_MSG(same == 3 * P, "%d of %d tensors kept by the skipped step", same, 3 * P);
                CHECK(step == 3 && good == 0 && scalar_f32(outs[3 * P + 2]) == 0x1p29f);
            } else {
                CHECK_MSG(same < P, "the taken step kept %d tensors", same);
                CHECK(step == 4 && good == 42 && scalar_f32(outs[3 * P + 2]) == 0x1p10f);
            }
        }
        for (int i = 0; i < 3 * P + 4; i++) kiln_array_destroy(outs[i]);
        for (int i = 0; i < n; i++) kiln_array_destroy(args[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The loss of the f64 model at params p (an executable compiled once, run per probe). */
static double loss_at(kiln_executable *e, kiln_array **args, int n) {
    kiln_array *out = NULL;
    double l = NAN;
    if (kiln_executable_run(e, n, args, 1, &out) == KILN_STATUS_OK)
        kiln_array_copy_to_host(out, &l, sizeof l);
    kiln_array_destroy(out);
    return l;
}

static void test_gradients_fd(kiln_context *ctx) {
    const gpt_config c = {.vocab = 256, .context = 6, .layers = 1, .heads = 2, .channels = 8};
    int P = gpt_num_params(&c), B = 2, T = 6;
    kiln_graph *g, *gl;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_grad", &g));
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_loss", &gl));
    kiln_value p[64], q[64], grads[64];
    int64_t bt[2] = {B, T};
    gpt_make_params(g, &c, KILN_DTYPE_F64, p);
    kiln_value loss = gpt_loss(g, &c, p, kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt),
                               kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt));
    kiln_grad(g, loss, P, p, grads);
    CHECK_OK(ctx, kiln_graph_finish(g, P, grads));
    gpt_make_params(gl, &c, KILN_DTYPE_F64, q);
    kiln_value l2 = gpt_loss(gl, &c, q, kiln_parameter(gl, "idx", KILN_DTYPE_I32, 2, bt),
                             kiln_parameter(gl, "targets", KILN_DTYPE_I32, 2, bt));
    CHECK_OK(ctx, kiln_graph_finish(gl, 1, &l2));
    kiln_executable *eg = NULL, *el = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &eg));
    CHECK_OK(ctx, kiln_compile(gl, NULL, &el));
    kiln_array *args[64], *gout[64] = {0};
    random_params(ctx, &c, KILN_DTYPE_F64, args);
    args[P] = tokens(ctx, B, T, 3), args[P + 1] = tokens(ctx, B, T, 4);
    CHECK_OK(ctx, kiln_executable_run(eg, P + 2, args, P, gout));
    int probes = 0, bad = 0;
    uint64_t s = 5;
    int probed = gout[0] && el ? P : 0; /* none after a failed compile or run: CHECK_OK said */
    for (int i = 0; i < probed; i++) {
        int64_t n = kiln_array_size(args[i]);
        double *w = malloc((size_t)n * sizeof *w), *gr = malloc((size_t)n * sizeof *gr);
        kiln_array_copy_to_host(args[i], w, (size_t)n * sizeof *w);
        kiln_array_copy_to_host(gout[i], gr, (size_t)n * sizeof *gr);
        for (int k = 0; k < 3; k++) { /* three entries of every parameter */
            int64_t j = (int64_t)(gpt_rng_next(&s) % (uint64_t)n);
            const double h = 1e-5;
            double orig = w[j], lp, lm;
            int rank = kiln_array_rank(args[i]);
            int64_t dims[2] = {kiln_array_dim(args[i], 0),
                               rank == 2 ? kiln_array_dim(args[i], 1) : 0};
            kiln_array *saved = args[i];
            w[j] = orig + h;
            kiln_array_create(ctx, KILN_DTYPE_F64, rank, dims, w, &args[i]);
            lp = loss_at(el, args, P + 2);
            kiln_array_destroy(args[i]);
            w[j] = orig - h;
            kiln_array_create(ctx, KILN_DTYPE_F64, rank, dims, w, &args[i]);
            lm = loss_at(el, args, P + 2);
            kiln_array_destroy(args[i]);
            args[i] = saved, w[j] = orig;
            double fd = (lp - lm) / (2 * h);
            probes++;
            if (!(fabs(fd - gr[j]) <= 1e-6 + 1e-5 * fabs(fd))) {
                char name[GPT_NAME_MAX];
                int r;
                int64_t d[2];
                gpt_param_info(&c, i, name, &r, d);
                fprintf(stderr, "d loss / d %s[%lld]: kiln_grad %.10g, finite difference %.10g\n",
                        name, (long long)j, gr[j], fd);
                bad++;
            }
        }
        free(w), free(gr);
    }
    CHECK_MSG(bad == 0, "%d of %d gradient probes off", bad, probes);
    for (int i = 0; i < P; i++) kiln_array_destroy(gout[i]);
    for (int i = 0; i < P + 2; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(eg), kiln_executable_destroy(el);
    kiln_graph_destroy(g), kiln_graph_destroy(gl);
}

static void tiny_options(gpt_train_options *o, const char *out) {
    gpt_train_defaults(o);
    o->model = (gpt_config){.vocab = 256, .context = 16, .layers = 1, .heads = 2, .channels = 32};
    o->batch = 4, o->steps = 40, o->warmup = 4, o->lr = 1e-2;
    o->eval_every = 0, o->out_dir = out;
}

static void test_training_lowers_loss(kiln_context *ctx, const char *dir) {
    gpt_train_options o;
    char out[600], err[GPT_ERR_SIZE];
    snprintf(out, sizeof out, "%s/lower", dir);
    tiny_options(&o, out);
    o.eval_every = 20;
    gpt_train_result r;
    kiln_status st = gpt_train(ctx, &o, &r, err);
    CHECK_MSG(st == KILN_STATUS_OK, "%s", err);
    CHECK(r.steps_done == 40);
    /* From about ln 256 = 5.55 at the start, bytes of English text lose over a nat within
     * 40 steps of this tiny model. */
    CHECK_MSG(r.first_loss > 5.0 && r.first_loss < 6.0, "first loss %g", r.first_loss);
    CHECK_MSG(r.final_loss < r.first_loss - 1.0, "loss %g -> %g", r.first_loss, r.final_loss);
    CHECK_MSG(r.final_val_loss < r.first_loss - 1.0, "validation %g", r.final_val_loss);
    CHECK(r.planned_peak_bytes > 0 && r.measured_peak_bytes == r.planned_peak_bytes);
    /* without loss scaling every step is an AdamW update: the count fed as `step` (its bias
     * correction) reached 40 */
    char ck[700];
    snprintf(ck, sizeof ck, "%s/model.safetensors", out);
    kiln_safetensors *st_file = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, ck, &st_file));
    const char *u = st_file ? kiln_safetensors_get_metadata(st_file, "optimizer_steps") : NULL;
    CHECK_MSG(u && !strcmp(u, "40"), "optimizer_steps %s", u ? u : "missing");
    kiln_safetensors_close(st_file);
    CHECK(r.skipped_steps == 0 && isnan(r.final_loss_scale));
    static const char *const files[] = {"losses.csv", "summary.json", "loss.svg", "plan.svg",
                                        "model.safetensors"};
    for (int i = 0; i < 5; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s", out, files[i]);
        FILE *f = fopen(p, "rb");
        CHECK_MSG(f != NULL, "%s missing", p);
        if (f) fclose(f);
    }
}

static char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*n + 1);
    if (b && fread(b, 1, (size_t)*n, f) != (size_t)*n) free(b), b = NULL;
    if (b) b[*n] = 0;
    fclose(f);
    return b;
}

static void test_checkpoint_round_trip(kiln_context *ctx, const char *dir) {
    int P = gpt_num_params(&tiny);
    kiln_array *p[64], *q[64];
    char path[600], err[GPT_ERR_SIZE];
    snprintf(path, sizeof path, "%s/round.safetensors", dir);
    random_params(ctx, &tiny, KILN_DTYPE_F32, p);
    CHECK_OK(ctx, gpt_checkpoint_save(ctx, path, &tiny, p, NULL, NULL, 0, NULL, err));
    kiln_status st = gpt_checkpoint_load(ctx, path, &tiny, q, NULL, NULL, err);
    CHECK_MSG(st == KILN_STATUS_OK, "%s", err);
    for (int i = 0; !st && i < P; i++) {
        size_t n = kiln_array_nbytes(p[i]);
        CHECK(kiln_array_nbytes(q[i]) == n);
        char *a = malloc(n), *b = malloc(n);
        kiln_array_copy_to_host(p[i], a, n), kiln_array_copy_to_host(q[i], b, n);
        CHECK(!memcmp(a, b, n));
        free(a), free(b);
        kiln_array_destroy(q[i]);
    }
    gpt_config cfg;
    CHECK_OK(ctx, gpt_checkpoint_config(ctx, path, &cfg, err));
    CHECK(!memcmp(&cfg, &tiny, sizeof cfg));

    /* Wrong shape: the file is the model with 16 channels, asked for as 32. */
    gpt_config wide = tiny;
    wide.channels = 32;
    st = gpt_checkpoint_load(ctx, path, &wide, q, NULL, NULL, err);
    CHECK_STATUS(st, KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "tensor 'wte' is f32[256, 16]; the model needs f32[256, 32]");
    /* A missing tensor: a model with one more layer. */
    gpt_config deeper = tiny;
    deeper.layers = 3;
    st = gpt_checkpoint_load(ctx, path, &deeper, q, NULL, NULL, err);
    CHECK_STATUS(st, KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "no tensor 'h.2.ln_1.weight'");

    /* Truncated: every prefix of the file is refused (never a crash), with the file named. */
    long n;
    char *bytes = slurp(path, &n), bad[620];
    snprintf(bad, sizeof bad, "%s/bad.safetensors", dir);
    int refused = 0, tried = 0;
    for (long cut = 0; bytes && cut < n; cut += cut < 200 ? 7 : 997) {
        FILE *f = fopen(bad, "wb");
        fwrite(bytes, 1, (size_t)cut, f);
        fclose(f);
        tried++;
        st = gpt_checkpoint_load(ctx, bad, &tiny, q, NULL, NULL, err);
        refused += st != KILN_STATUS_OK && strstr(err, "bad.safetensors") != NULL;
        if (st == KILN_STATUS_OK)
            for (int i = 0; i < P; i++) kiln_array_destroy(q[i]);
    }
    CHECK_MSG(refused == tried, "%d of %d truncations refused", refused, tried);
    /* Corrupt: the header's first bytes overwritten. */
    if (bytes) {
        memcpy(bytes + 8, "{\"wte\":[", 8);
        FILE *f = fopen(bad, "wb");
        fwrite(bytes, 1, (size_t)n, f);
        fclose(f);
        st = gpt_checkpoint_load(ctx, bad, &tiny, q, NULL, NULL, err);
        CHECK(st != KILN_STATUS_OK);
        CHECK_CONTAINS(err, "bad.safetensors");
    }
    free(bytes);
    for (int i = 0; i < P; i++) kiln_array_destroy(p[i]);
}

/* A run stopped after 9 steps and resumed reaches the same losses and the same final
 * parameters, bit for bit, as one run of all 20. */
static void test_resume_identical(kiln_context *ctx, const char *dir) {
    gpt_train_options o;
    gpt_train_result r;
    char a[600], b[600], err[GPT_ERR_SIZE], ck[700];
    snprintf(a, sizeof a, "%s/whole", dir), snprintf(b, sizeof b, "%s/parts", dir);
    tiny_options(&o, a);
    o.steps = 20, o.eval_every = 5;
    CHECK_MSG(gpt_train(ctx, &o, &r, err) == KILN_STATUS_OK, "%s", err);
    o.out_dir = b, o.stop_after = 9;
    CHECK_MSG(gpt_train(ctx, &o, &r, err) == KILN_STATUS_OK, "%s", err);
    CHECK(r.steps_done == 9);
    snprintf(ck, sizeof ck, "%s/model.safetensors", b);
    gpt_train_options o2;
    gpt_train_defaults(&o2);
    CHECK_MSG(gpt_checkpoint_read_options(ctx, ck, &o2, err) == KILN_STATUS_OK, "%s", err);
    CHECK(o2.steps == 20 && o2.batch == 4 && o2.lr == o.lr && o2.model.channels == 32);
    o2.resume = ck, o2.out_dir = b, o2.eval_every = 5;
    CHECK_MSG(gpt_train(ctx, &o2, &r, err) == KILN_STATUS_OK, "%s", err);
    CHECK(r.steps_done == 20);

    /* losses.csv of the stopped and resumed run (steps 1..9, then 10..20 appended) equals
     * the whole run's line for line, the ms column aside. */
    char pa[700], pb[700];
    long na, nb;
    snprintf(pa, sizeof pa, "%s/losses.csv", a), snprintf(pb, sizeof pb, "%s/losses.csv", b);
    char *ta = slurp(pa, &na), *tb = slurp(pb, &nb);
    int lines = 0, same = 0;
    for (char *lb = tb ? strchr(tb, '\n') : NULL; lb && lb[1]; lb = strchr(lb + 1, '\n')) {
        int step;
        if (sscanf(lb + 1, "%d,", &step) != 1) break;
        char key[16];
        snprintf(key, sizeof key, "\n%d,", step);
        char *la = ta ? strstr(ta, key) : NULL, *ea = la, *eb = lb;
        lines++;
        for (int c = 0; la && c < 3; c++) /* step,loss,val_loss, (then the time) */
            ea = strchr(ea + 1, ','), eb = strchr(eb + 1, ',');
        same += la && ea && eb && ea - la == eb - lb && !memcmp(la, lb, (size_t)(ea - la));
    }
    CHECK_MSG(lines == 20 && same == lines, "%d lines, %d the same", lines, same);
    free(ta), free(tb);

    /* The final checkpoints: parameters and moments equal bit for bit. */
    snprintf(pa, sizeof pa, "%s/model.safetensors", a);
    int P = gpt_num_params(&o.model);
    kiln_array *s1[3 * 64], *s2[3 * 64];
    kiln_status st1 = gpt_checkpoint_load(ctx, pa, &o.model, s1, s1 + P, s1 + 2 * P, err);
    kiln_status st2 = gpt_checkpoint_load(ctx, ck, &o.model, s2, s2 + P, s2 + 2 * P, err);
    CHECK(st1 == KILN_STATUS_OK && st2 == KILN_STATUS_OK);
    int differ = 0;
    for (int i = 0; !st1 && !st2 && i < 3 * P; i++) {
        size_t n = kiln_array_nbytes(s1[i]);
        char *x = malloc(n), *y = malloc(n);
        kiln_array_copy_to_host(s1[i], x, n), kiln_array_copy_to_host(s2[i], y, n);
        differ += memcmp(x, y, n) != 0;
        free(x), free(y);
    }
    CHECK_MSG(differ == 0, "%d of %d tensors differ", differ, 3 * P);
    for (int i = 0; !st1 && i < 3 * P; i++) kiln_array_destroy(s1[i]);
    for (int i = 0; !st2 && i < 3 * P; i++) kiln_array_destroy(s2[i]);

    /* Resuming with another recipe is refused, naming what differs. */
    o2.lr *= 2;
    CHECK(gpt_train(ctx, &o2, &r, err) == KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "another lr");
}

/* Every value of a checkpoint is finite: saving refuses a NaN (the file already there is
 * kept), and loading refuses a file holding one, naming the tensor (sampling from it once
 * printed NUL bytes and exited 0). */
static void test_non_finite(kiln_context *ctx, const char *dir) {
    int P = gpt_num_params(&tiny);
    kiln_array *p[64], *q[64];
    char path[600], err[GPT_ERR_SIZE];
    snprintf(path, sizeof path, "%s/finite.safetensors", dir);
    random_params(ctx, &tiny, KILN_DTYPE_F32, p);
    CHECK_OK(ctx, gpt_checkpoint_save(ctx, path, &tiny, p, NULL, NULL, 0, NULL, err));
    long n0, n1;
    char *before = slurp(path, &n0);

    /* a NaN in h.1.mlp.c_fc.bias, element 3 */
    int which = 2 + GPT_PARAMS_PER_LAYER + 9;
    size_t nb = kiln_array_nbytes(p[which]);
    float *v = malloc(nb);
    kiln_array_copy_to_host(p[which], v, nb);
    v[3] = NAN;
    char name[GPT_NAME_MAX];
    int rank;
    int64_t dims[2];
    gpt_param_info(&tiny, which, name, &rank, dims);
    kiln_array_destroy(p[which]);
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank, dims, v, &p[which]));
    kiln_status st = gpt_checkpoint_save(ctx, path, &tiny, p, NULL, NULL, 0, NULL, err);
    CHECK_STATUS(st, KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "'h.1.mlp.c_fc.bias': element 3 is not finite");
    char *after = slurp(path, &n1);
    CHECK(before && after && n0 == n1 && !memcmp(before, after, (size_t)n0));
    free(after);

    /* the same NaN written into the file's bytes behind kiln's back */
    char bad[620];
    snprintf(bad, sizeof bad, "%s/nan.safetensors", dir);
    uint64_t hlen = 0;
    for (int i = 0; before && i < 8; i++) hlen |= (uint64_t)(unsigned char)before[i] << (8 * i);
    const float inf = INFINITY;
    if (before) memcpy(before + 8 + hlen + 4 * 5, &inf, 4); /* wte, element 5 */
    FILE *f = fopen(bad, "wb");
    if (f && before) fwrite(before, 1, (size_t)n0, f);
    if (f) fclose(f);
    st = gpt_checkpoint_load(ctx, bad, &tiny, q, NULL, NULL, err);
    CHECK_STATUS(st, KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "nan.safetensors: reading 'wte': element 5 is not finite");
    gpt_sample_options so = {.checkpoint = bad, .prompt = "a", .length = 4, .temperature = 0};
    unsigned char out[4];
    CHECK_STATUS(gpt_sample(ctx, &so, out, err), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "'wte': element 5 is not finite");
    free(before), free(v);
    for (int i = 0; i < P; i++) kiln_array_destroy(p[i]);
}

/* A run that diverges (a learning rate far too high) stops with the loss named, and the
 * checkpoint it saved every step before is the last good one: whole, finite, of a step
 * before the divergence (once the step's checkpoint was written before its loss was
 * looked at, so NaN parameters replaced it). */
static void test_diverged_keeps_checkpoint(kiln_context *ctx, const char *dir) {
    gpt_train_options o;
    gpt_train_result r;
    char out[600], ck[700], err[GPT_ERR_SIZE];
    snprintf(out, sizeof out, "%s/diverge", dir);
    tiny_options(&o, out);
    o.lr = 1e30, o.warmup = 0, o.steps = 30, o.save_every = 1;
    kiln_status st = gpt_train(ctx, &o, &r, err);
    CHECK_MSG(st == KILN_STATUS_INVALID_ARGUMENT &&
                  (strstr(err, "diverged") || strstr(err, "not finite")),
              "%s: %s", kiln_status_name(st), err);
    CHECK(r.steps_done < 30);
    snprintf(ck, sizeof ck, "%s/model.safetensors", out);
    /* the message says which checkpoint was kept, or that none was written */
    CHECK_MSG(!strstr(err, "diverged") || strstr(err, "the last checkpoint was kept"), "%s", err);
    gpt_train_options none = o;
    none.out_dir = NULL;
    char err2[GPT_ERR_SIZE];
    st = gpt_train(ctx, &none, &r, err2);
    CHECK_MSG(st == KILN_STATUS_INVALID_ARGUMENT &&
                  (!strstr(err2, "diverged") || strstr(err2, "nothing was saved")),
              "%s: %s", kiln_status_name(st), err2);
    int P = gpt_num_params(&o.model);
    kiln_array *s[3 * 64];
    st = gpt_checkpoint_load(ctx, ck, &o.model, s, s + P, s + 2 * P, err);
    CHECK_MSG(st == KILN_STATUS_OK, "the last checkpoint: %s", err);
    for (int i = 0; !st && i < 3 * P; i++) kiln_array_destroy(s[i]);
}

/* Step counts are 64-bit: a checkpoint saying 2^32 + 3 steps is a run of 2^32 + 3 steps
 * (once: 3), and one past GPT_MAX_STEPS is refused. */
static void test_checkpoint_counts(kiln_context *ctx, const char *dir) {
    kiln_array *p[64];
    char path[600], err[GPT_ERR_SIZE];
    snprintf(path, sizeof path, "%s/counts.safetensors", dir);
    CHECK_OK(ctx, gpt_init_params(ctx, &tiny, KILN_DTYPE_F32, 1, p, err));
    const char *kv[] = {"batch", "4",  "steps", "4294967299",   "warmup", "4294967296", "seed",
                        "1",     "lr", "0.001", "weight_decay", "0",      "clip",       "0"};
    CHECK_OK(ctx, gpt_checkpoint_save(ctx, path, &tiny, p, NULL, NULL, 7, kv, err));
    gpt_train_options o;
    gpt_train_defaults(&o);
    CHECK_MSG(gpt_checkpoint_read_options(ctx, path, &o, err) == KILN_STATUS_OK, "%s", err);
    CHECK(o.steps == 4294967299LL && o.warmup == 4294967296LL);
    kv[3] = "1000000000001";
    CHECK_OK(ctx, gpt_checkpoint_save(ctx, path, &tiny, p, NULL, NULL, 7, kv, err));
    CHECK_STATUS(gpt_checkpoint_read_options(ctx, path, &o, err), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "metadata 'steps' is '1000000000001'");
    for (int i = 0; i < gpt_num_params(&tiny); i++) kiln_array_destroy(p[i]);
    /* the schedule at a step past 2^31 is the schedule, not a wrapped one */
    double lr = gpt_lr_at(3000000000LL, 4000000000LL, 10, 1.0);
    CHECK_MSG(lr > 0.1 && lr < 1.0, "lr %g", lr);
}

/* The schedules: warmup from peak / warmup to peak, then cosine and linear from peak (at
 * the end of the warmup) to min_lr (at the last step), constant at peak; gpt_lr_at is the
 * cosine to peak / 10. */
static void test_schedules(void) {
    const double peak = 2.0, lo = 0.5;
    const int64_t total = 101, warm = 10;
    CHECK(fabs(gpt_lr_schedule(0, total, warm, peak, lo, GPT_SCHEDULE_LINEAR) - 0.2) < 1e-12);
    CHECK(fabs(gpt_lr_schedule(9, total, warm, peak, lo, GPT_SCHEDULE_COSINE) - peak) < 1e-12);
    gpt_schedule kinds[2] = {GPT_SCHEDULE_COSINE, GPT_SCHEDULE_LINEAR};
    for (int k = 0; k < 2; k++) {
        CHECK(fabs(gpt_lr_schedule(warm, total, warm, peak, lo, kinds[k]) - peak) < 1e-12);
        CHECK(fabs(gpt_lr_schedule(total, total, warm, peak, lo, kinds[k]) - lo) < 1e-12);
        double prev = peak + 1;
        for (int64_t s = warm; s <= total; s++) { /* never rising after the warmup */
            double v = gpt_lr_schedule(s, total, warm, peak, lo, kinds[k]);
            CHECK(v <= prev + 1e-15 && v >= lo - 1e-15);
            prev = v;
        }
    }
    /* the midpoint: linear halfway, cosine too (cos(pi/2) = 0) */
    double mid = (peak + lo) / 2;
    CHECK(fabs(gpt_lr_schedule(warm + 45, 100, warm, peak, lo, GPT_SCHEDULE_LINEAR) - mid) < 1e-12);
    CHECK(fabs(gpt_lr_schedule(warm + 45, 100, warm, peak, lo, GPT_SCHEDULE_COSINE) - mid) < 1e-12);
    CHECK(gpt_lr_schedule(70, total, warm, peak, lo, GPT_SCHEDULE_CONSTANT) == peak);
    CHECK(gpt_lr_at(70, total, warm, peak) ==
          gpt_lr_schedule(70, total, warm, peak, 0.1 * peak, GPT_SCHEDULE_COSINE));
    CHECK(!strcmp(gpt_schedule_name(GPT_SCHEDULE_LINEAR), "linear"));
}

/* gpt_remove_temps_of: every temporary file of one process in a folder (a checkpoint's
 * "<name>.tmp-<pid>-<hex>" and an out file's "<name>.tmp-<pid>"), no other process's and
 * nothing else. */
static void test_remove_temps(const char *dir) {
    long me = 4242;
    const char *names[] = {"model.safetensors.tmp-4242-1f2e",
                           "summary.json.tmp-4242",
                           "loss.svg.tmp-42421",
                           "plan.svg.tmp-424",
                           "model.safetensors",
                           "notes.tmp-4242x"};
    char path[512];
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        if (f) fclose(f);
    }
    CHECK_MSG(gpt_remove_temps_of(dir, me) == 2, "two temporary files of pid %ld", me);
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK_MSG((access(path, F_OK) == 0) == (i >= 2), "%s %s", names[i],
                  i >= 2 ? "was removed" : "is still there");
        unlink(path);
    }
    CHECK(gpt_remove_temps_of(dir, 0) == 0 && gpt_remove_temps_of("/nonexistent-kiln", me) == 0);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-gpt-XXXXXX";
    kiln_context *ctx = test_private_context(dir);
    if (!ctx) return 1;
    test_forward_vs_reference(ctx);
    test_scanned_forward(ctx);
    test_scanned_step(ctx);
    test_fused_attention_step(ctx);
    test_offloaded_step(ctx);
    test_stacked_layout(ctx);
    test_stacked_step(ctx);
    test_step_vs_reference(ctx);
    test_mixed_precision_step(ctx);
    test_loss_scaled_step(ctx);
    test_gradients_fd(ctx);
    test_checkpoint_round_trip(ctx, dir);
    test_training_lowers_loss(ctx, dir);
    test_resume_identical(ctx, dir);
    test_non_finite(ctx, dir);
    test_diverged_keeps_checkpoint(ctx, dir);
    test_checkpoint_counts(ctx, dir);
    test_schedules();
    test_remove_temps(dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_gpt");
}
