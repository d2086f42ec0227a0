/* bench_rnn_scan.c — kiln's side of the scanned-program twin (bench/control/rnn_jax.py is
 * JAX's): a tanh RNN over T steps written with kiln_scan, its loss (the mean square of
 * every hidden state) and the gradients of W, U and b through the scan's VJP, compiled
 * once and run; prints the compile time, the planned peak, the step's median time, and
 * writes the loss and gradients for the twin to compare.
 *
 *   bench_rnn_scan DIR [RUNS] [T B D H]
 *
 * Values come from formulas both sides compute (sin and cos of the flat index), so the two
 * programs see the same numbers without a file between them. */
#include "kiln.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void check(kiln_context *ctx, kiln_status s, const char *what) {
    if (!s) return;
    fprintf(stderr, "bench_rnn_scan: %s: %s\n", what, kiln_last_error(ctx));
    exit(1);
}

typedef struct rnn {
    kiln_value w, u, b;
} rnn;

/* h' = tanh(h W + x U + b); the new carry, and h' as this step's output */
static int cell(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const rnn *r = user;
    kiln_value w = kiln_capture(g, r->w), u = kiln_capture(g, r->u), b = kiln_capture(g, r->b);
    kiln_value z = kiln_add(g, kiln_add(g, kiln_matmul(g, in[0], w), kiln_matmul(g, in[1], u)), b);
    outs[0] = outs[1] = kiln_tanh(g, z);
    return 2;
}

static kiln_array *filled(kiln_context *ctx, int rank, const int64_t *dims, double scale,
                          double freq, int kind) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(scale * (kind ? cos(freq * (double)i) : sin(freq * (double)i)));
    kiln_array *a = NULL;
    check(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank, dims, v, &a), "array");
    free(v);
    return a;
}

static void write_array(const char *dir, const char *name, kiln_array *a) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.f32", dir, name);
    size_t n = kiln_array_nbytes(a);
    void *h = malloc(n);
    kiln_array_copy_to_host(a, h, n);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(h, 1, n, f) != n) {
        fprintf(stderr, "bench_rnn_scan: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
    free(h);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_rnn_scan DIR [RUNS] [T B D H]\n");
        return 2;
    }
    const char *dir = argv[1];
    int runs = argc > 2 ? atoi(argv[2]) : 20;
    int64_t T = argc > 6 ? atoll(argv[3]) : 64, B = argc > 6 ? atoll(argv[4]) : 32,
            D = argc > 6 ? atoll(argv[5]) : 128, H = argc > 6 ? atoll(argv[6]) : 256;
    kiln_context *ctx = NULL;
    char err[512];
    kiln_context_options co = {.compile_tiers = 1}; /* the -O3 build */
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "bench_rnn_scan: %s\n", err);
        return 1;
    }
    kiln_graph *g = NULL;
    check(ctx, kiln_graph_create(ctx, "rnn", &g), "graph");
    int64_t dw[2] = {H, H}, du[2] = {D, H}, db[1] = {H}, dx[3] = {T, B, D}, dh[2] = {B, H};
    rnn r = {kiln_parameter(g, "W", KILN_DTYPE_F32, 2, dw),
             kiln_parameter(g, "U", KILN_DTYPE_F32, 2, du),
             kiln_parameter(g, "b", KILN_DTYPE_F32, 1, db)};
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F32, 3, dx);
    kiln_value h0 = kiln_broadcast_to(g, kiln_scalar(g, KILN_DTYPE_F32, 0), 2, dh), res[2];
    int n = 0;
    check(ctx, kiln_scan(g, cell, &r, 1, &h0, 1, &xs, NULL, &n, res), "scan");
    kiln_value ys = res[1];
    kiln_value loss = kiln_mean(g, kiln_mul(g, ys, ys), 0, NULL, false);
    kiln_value outs[4] = {loss};
    kiln_value wrt[3] = {r.w, r.u, r.b};
    check(ctx, kiln_grad(g, loss, 3, wrt, outs + 1), "grad");
    check(ctx, kiln_graph_finish(g, 4, outs), "finish");
    double t0 = now();
    kiln_executable *e = NULL;
    check(ctx, kiln_compile(g, NULL, &e), "compile");
    double compile_s = now() - t0;
    kiln_memory_analysis ma;
    kiln_executable_get_memory_analysis(e, &ma);
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_array *args[4] = {filled(ctx, 2, dw, 0.05, 0.37, 0), filled(ctx, 2, du, 0.05, 0.11, 1),
                           filled(ctx, 1, db, 0.01, 1.0, 0), filled(ctx, 3, dx, 1.0, 0.013, 0)};
    kiln_array *got[4] = {0};
    double *ms = calloc((size_t)runs + 1, sizeof *ms);
    for (int i = 0; i <= runs; i++) {
        for (int j = 0; j < 4; j++) kiln_array_destroy(got[j]), got[j] = NULL;
        double t1 = now();
        check(ctx, kiln_executable_run(e, 4, args, 4, got), "run");
        ms[i] = (now() - t1) * 1e3;
    }
    qsort(ms + 1, (size_t)runs, sizeof *ms, cmp_dbl);
    static const char *const names[4] = {"loss", "dW", "dU", "db"};
    for (int j = 0; j < 4; j++) write_array(dir, names[j], got[j]);
    printf("T=%lld B=%lld D=%lld H=%lld\n", (long long)T, (long long)B, (long long)D, (long long)H);
    printf("kiln compile_s %.3f\n", compile_s);
    printf("kiln kernels %d compiled %d\n", info.num_kernels, info.num_kernels_compiled);
    printf("kiln peak_bytes %llu arguments %llu outputs %llu temps %llu\n",
           (unsigned long long)ma.peak_bytes, (unsigned long long)ma.argument_bytes,
           (unsigned long long)ma.output_bytes, (unsigned long long)ma.temp_bytes);
    printf("kiln step_ms %.3f\n", ms[1 + runs / 2]);
    free(ms);
    for (int j = 0; j < 4; j++) kiln_array_destroy(got[j]), kiln_array_destroy(args[j]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    return 0;
}
