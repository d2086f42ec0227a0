/* bench_scan_gpt.c — the GPT training step with its blocks unrolled and as one scan over
 * the layers over the stacked parameter layout (gpt_step_spec.scan_layers and .stacked:
 * 16 arrays whatever L, docs/control_flow.md): compile time (a new,
 * empty code cache for every compile), kernels run per call and kernels compiled, ops in
 * the optimised program, planned peak, and the step's time, at several depths.
 *
 *   bench_scan_gpt [LAYERS...] [--forward] [--runs N]
 *
 * Default depths 4 12 48; the demo model's width (C 128, 4 heads, context 64, batch 8).
 * --forward times the loss alone (no backward pass). Five forms: unrolled, unrolled with
 * each block a nothing_saveable checkpoint region ("remat": the same recomputation as the
 * scanned backward pass), scanned with per-layer parameters stacked inside the program
 * ("scan-perl": O(L) ops around the scan), scanned over the stacked layout (each block
 * recomputed in the backward pass, as jax.checkpoint on the body), and scanned over the
 * stacked layout keeping each block's residuals ("scan-keep": nothing recomputed, as
 * lax.scan's default). Step times are the median of N runs after one warm-up. */
#include "gpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(kiln_context *ctx, const char *what) {
    fprintf(stderr, "bench_scan_gpt: %s: %s\n", what, ctx ? kiln_last_error(ctx) : "");
    exit(1);
}

typedef struct figures {
    double compile_s, step_ms;
    int kernels, compiled, ops, recomputed;
    uint64_t peak;
} figures;

/* A context with a fresh code cache of its own, so the compile is a cold one. */
static kiln_context *fresh_context(char *dir) {
    strcpy(dir, "/tmp/kiln-bench-scan-XXXXXX");
    if (!mkdtemp(dir)) die(NULL, "mkdtemp");
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .compile_tiers = 1};
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) {
        fprintf(stderr, "bench_scan_gpt: %s\n", err);
        exit(1);
    }
    return ctx;
}

/* The unrolled form with each block a checkpoint region that saves nothing (kiln train
 * --remat nothing_saveable): the same recomputation as the scanned form's backward pass. */
static void remat_block(kiln_graph *g, int layer, bool begin, void *user) {
    (void)layer, (void)user;
    if (begin)
        kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE, 0, NULL);
    else
        kiln_checkpoint_end(g);
}

enum { UNROLLED, UNROLLED_REMAT, SCANNED_PER_LAYER, SCANNED, SCANNED_KEEP, N_FORMS };
static const char *const form_names[N_FORMS] = {"unrolled", "remat", "scan-perl", "scanned",
                                                "scan-keep"};

static figures measure(const gpt_config *cfg, int B, int form, bool forward, int runs) {
    bool scan = form >= SCANNED_PER_LAYER, stacked = form >= SCANNED, keep = form == SCANNED_KEEP;
    gpt_block_hook hook = {remat_block, NULL};
    char dir[64];
    kiln_context *ctx = fresh_context(dir);
    int P = gpt_num_params_layout(cfg, stacked);
    kiln_graph *g = NULL;
    if (kiln_graph_create(ctx, "step", &g)) die(ctx, "graph");
    char err[GPT_ERR_SIZE];
    int n_args, n_outs;
    if (forward) {
        kiln_value *p = calloc((size_t)P, sizeof *p);
        gpt_make_params_layout(g, cfg, stacked, KILN_DTYPE_F32, p);
        int64_t bt[2] = {B, cfg->context};
        kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt);
        kiln_value tgt = kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt);
        gpt_trace_options o = {.scan_layers = scan,
                               .stacked = stacked,
                               .scan_keep_residuals = keep,
                               .hook = form == UNROLLED_REMAT ? &hook : NULL};
        kiln_value loss = gpt_loss_with(g, cfg, p, idx, tgt, &o);
        if (kiln_graph_finish(g, 1, &loss)) die(ctx, "trace");
        free(p);
        n_args = P + 2, n_outs = 1;
    } else {
        gpt_step_spec s = {.batch = B,
                           .seq = cfg->context,
                           .weight_decay = 0.1,
                           .clip = 1.0,
                           .scan_layers = scan,
                           .hook = form == UNROLLED_REMAT ? &hook : NULL,
                           .stacked = stacked,
                           .scan_keep_residuals = keep};
        if (gpt_trace_step(g, cfg, KILN_DTYPE_F32, &s, err)) {
            fprintf(stderr, "bench_scan_gpt: %s\n", err);
            exit(1);
        }
        n_args = 3 * P + 4, n_outs = 3 * P + 1;
    }
    figures f = {0};
    double t0 = now();
    kiln_executable *e = NULL;
    if (kiln_compile(g, NULL, &e)) die(ctx, "compile");
    f.compile_s = now() - t0;
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    f.kernels = info.num_kernels, f.compiled = info.num_kernels_compiled, f.ops = info.num_ops;
    kiln_memory_analysis ma;
    kiln_executable_get_memory_analysis(e, &ma);
    f.peak = ma.peak_bytes;
    f.recomputed = ma.remat_num_recomputed;
    kiln_array **args = calloc((size_t)n_args, sizeof *args);
    kiln_array **outs = calloc((size_t)n_outs, sizeof *outs);
    if (stacked) { /* initialised per layer, then stacked, as kiln train --scan-layers does */
        kiln_array **per = calloc((size_t)gpt_num_params(cfg), sizeof *per);
        if (gpt_init_params(ctx, cfg, KILN_DTYPE_F32, 1, per, err) ||
            gpt_params_stack(ctx, cfg, per, args, err))
            die(ctx, err);
        for (int i = 0; i < gpt_num_params(cfg); i++) kiln_array_destroy(per[i]);
        free(per);
    } else if (gpt_init_params(ctx, cfg, KILN_DTYPE_F32, 1, args, err)) {
        die(ctx, err);
    }
    for (int i = P; i < n_args; i++) {
        kiln_dtype t;
        int rank;
        int64_t dims[KILN_MAX_RANK];
        if (!forward && i < 3 * P) { /* moments: the parameters' shapes, zeros */
            rank = kiln_array_rank(args[i % P]);
            for (int a = 0; a < rank; a++) dims[a] = kiln_array_dim(args[i % P], a);
            kiln_array_create(ctx, KILN_DTYPE_F32, rank, dims, NULL, &args[i]);
            continue;
        }
        int k = forward ? i - P : i - 3 * P; /* idx, targets, lr, step */
        int64_t bt[2] = {B, cfg->context};
        t = k < 2 ? KILN_DTYPE_I32 : k == 2 ? KILN_DTYPE_F32 : KILN_DTYPE_I32;
        if (k < 2) {
            int32_t *tok = malloc((size_t)(B * cfg->context) * sizeof *tok);
            for (int j = 0; j < B * cfg->context; j++) tok[j] = (j * 7 + k) % cfg->vocab;
            kiln_array_create(ctx, t, 2, bt, tok, &args[i]);
            free(tok);
        } else {
            float lr = 1e-4f;
            int32_t step = 1;
            kiln_array_create(ctx, t, 0, NULL, k == 2 ? (void *)&lr : &step, &args[i]);
        }
    }
    double *ms = calloc((size_t)runs + 1, sizeof *ms);
    for (int r = 0; r <= runs; r++) {
        double t1 = now();
        if (kiln_executable_run(e, n_args, args, n_outs, outs)) die(ctx, "run");
        ms[r] = (now() - t1) * 1e3;
        for (int j = 0; j < n_outs; j++) kiln_array_destroy(outs[j]);
    }
    qsort(ms + 1, (size_t)runs, sizeof *ms, cmp_dbl);
    f.step_ms = ms[1 + runs / 2];
    free(ms);
    for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
    free(args), free(outs);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) fprintf(stderr, "bench_scan_gpt: could not remove %s\n", dir);
    return f;
}

int main(int argc, char **argv) {
    int layers[16], n = 0, runs = 5;
    bool forward = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--forward"))
            forward = true;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (n < 16)
            layers[n++] = atoi(argv[i]);
    }
    if (!n) layers[0] = 4, layers[1] = 12, layers[2] = 48, n = 3;
    if (runs < 1) runs = 1;
    printf("GPT %s, C 128, 4 heads, context 64, batch 8; median of %d runs\n",
           forward ? "loss (forward)" : "training step (AdamW)", runs);
    printf("%6s %-9s %10s %8s %9s %7s %11s %12s %10s\n", "layers", "form", "compile_s", "kernels",
           "compiled", "ops", "recomputed", "peak_bytes", "step_ms");
    for (int i = 0; i < n; i++) {
        gpt_config cfg = {
            .vocab = 256, .context = 64, .layers = layers[i], .heads = 4, .channels = 128};
        for (int form = 0; form < N_FORMS; form++) {
            if (forward && form == UNROLLED_REMAT) continue;
            figures f = measure(&cfg, 8, form, forward, runs);
            printf("%6d %-9s %10.2f %8d %9d %7d %11d %12llu %10.2f\n", layers[i], form_names[form],
                   f.compile_s, f.kernels, f.compiled, f.ops, f.recomputed,
                   (unsigned long long)f.peak, f.step_ms);
            fflush(stdout);
        }
    }
    return 0;
}
