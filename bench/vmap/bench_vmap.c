/* bench_vmap.c — kiln's side of the per-example gradient figure (issue 35, item 1 and 7):
 * MLP 784-128-10 (tanh), softmax cross-entropy, f32; the gradient of each of B examples'
 * losses for all four parameters as kiln_vmap of kiln_grad (jax.vmap(jax.grad(loss),
 * in_axes=(None, 0, 0))), compiled as one program.
 *
 * Usage: bench_vmap DIR [batch] [reps]
 * Writes the weights and the batch to DIR as raw little-endian files (the JAX side,
 * vmap_jax.py, reads them and computes jax.vmap(jax.grad(loss)) from the same numbers),
 * then kiln's per-example gradients, then times the call: the median of `reps` (>= 10) runs
 * after 3 of warm-up. Prints "name value" lines: the time, the planned peak
 * (kiln_executable_get_memory_analysis) and the measured one (the rise of the device
 * allocator's peak during a call, plus the arguments it held). Not a test: never fails on
 * time. */
#include "kiln.h"
#include "../bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D0 = 784, D1 = 128, D2 = 10, NP = 4, WARMUP = 3 };

static const int64_t dims[NP][2] = {{D0, D1}, {D1, 0}, {D1, D2}, {D2, 0}};
static const char *names[NP] = {"w1", "b1", "w2", "b2"};
static int rank_of(int i) {
    return i % 2 ? 1 : 2;
}
static int64_t size_of(int i) {
    return dims[i][0] * (i % 2 ? 1 : dims[i][1]);
}

/* One example: in = w1, b1, w2, b2, x [D0], y (i32 scalar); out: the four gradients. */
static int grad_fn(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_value h = kiln_tanh(g, kiln_add(g, kiln_matmul(g, in[4], in[0]), in[1]));
    kiln_value z = kiln_add(g, kiln_matmul(g, h, in[2]), in[3]);
    kiln_value loss = kiln_softmax_cross_entropy(g, z, in[5]);
    return kiln_grad(g, loss, NP, in, outs) ? -1 : NP;
}

static kiln_status trace(kiln_graph *g, int64_t batch) {
    kiln_value a[NP + 2], pe[NP];
    for (int i = 0; i < NP; i++)
        a[i] = kiln_parameter(g, names[i], KILN_DTYPE_F32, rank_of(i), dims[i]);
    a[NP] = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (const int64_t[]){batch, D0});
    a[NP + 1] = kiln_parameter(g, "y", KILN_DTYPE_I32, 1, (const int64_t[]){batch});
    const int in_axes[NP + 2] = {
        KILN_VMAP_NONE, KILN_VMAP_NONE, KILN_VMAP_NONE, KILN_VMAP_NONE, 0, 0};
    kiln_vmap(g, grad_fn, NULL, NP + 2, a, in_axes, NP, NULL, pe);
    return kiln_graph_finish(g, NP, pe);
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: bench_vmap DIR [batch] [reps >= 10]\n"), 2;
    const char *dir = argv[1];
    int64_t batch = argc > 2 ? atoll(argv[2]) : 64;
    int reps = argc > 3 ? atoi(argv[3]) : 30;
    reps = reps < 10 ? 10 : reps > 1000 ? 1000 : reps;
    if (batch < 1 || batch > 65536) return fprintf(stderr, "batch out of range\n"), 2;
    char err[256], file[32];
    kiln_context *ctx;
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    uint64_t rng = 42;
    kiln_array *args[NP + 2], *outs[NP];
    for (int i = 0; i < NP; i++) {
        int64_t n = size_of(i);
        float *w = malloc((size_t)n * 4);
        if (!w) return 1;
        double bound = 1 / sqrt((double)dims[i - i % 2][0]);
        for (int64_t j = 0; j < n; j++) w[j] = (float)(bound * (2 * bench_uniform(&rng) - 1));
        snprintf(file, sizeof file, "p_%s.f32", names[i]);
        bench_write_file(dir, file, w, (size_t)n * 4);
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank_of(i), dims[i], w, &args[i]));
        free(w);
    }
    float *xs = malloc((size_t)batch * D0 * 4);
    int32_t *ys = malloc((size_t)batch * 4);
    if (!xs || !ys) return 1;
    for (int64_t j = 0; j < batch * D0; j++) xs[j] = (float)bench_uniform(&rng);
    for (int64_t j = 0; j < batch; j++) ys[j] = (int32_t)(bench_uniform(&rng) * D2);
    bench_write_file(dir, "x.f32", xs, (size_t)batch * D0 * 4);
    bench_write_file(dir, "y.i32", ys, (size_t)batch * 4);
    DIE(ctx,
        kiln_array_create(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){batch, D0}, xs, &args[NP]));
    DIE(ctx,
        kiln_array_create(ctx, KILN_DTYPE_I32, 1, (const int64_t[]){batch}, ys, &args[NP + 1]));
    free(xs), free(ys);

    kiln_graph *g;
    kiln_executable *e;
    DIE(ctx, kiln_graph_create(ctx, "per_example_grads", &g));
    DIE(ctx, trace(g, batch));
    double t0 = now();
    DIE(ctx, kiln_compile(g, NULL, &e));
    printf("kiln_compile_ms %.1f\n", (now() - t0) * 1e3);
    kiln_graph_destroy(g);
    kiln_memory_analysis ma;
    kiln_memory_stats before, after;
    DIE(ctx, kiln_executable_get_memory_analysis(e, &ma));
    double t[1000];
    uint64_t measured = 0;
    for (int r = 0; r < WARMUP + reps; r++) {
        DIE(ctx, kiln_device_reset_peak(ctx, 0));
        DIE(ctx, kiln_device_get_memory_stats(ctx, 0, &before));
        double s = now();
        DIE(ctx, kiln_executable_run(e, NP + 2, args, NP, outs));
        if (r >= WARMUP) t[r - WARMUP] = now() - s;
        DIE(ctx, kiln_device_get_memory_stats(ctx, 0, &after));
        uint64_t m = after.peak_bytes_in_use - before.bytes_in_use + ma.argument_bytes;
        if (m > measured) measured = m;
        if (r + 1 < WARMUP + reps)
            for (int i = 0; i < NP; i++) kiln_array_destroy(outs[i]);
    }
    for (int i = 0; i < NP; i++) {
        snprintf(file, sizeof file, "g_%s.f32", names[i]);
        size_t n = kiln_array_nbytes(outs[i]);
        void *h = malloc(n);
        if (!h || kiln_array_copy_to_host(outs[i], h, n)) return 1;
        bench_write_file(dir, file, h, n);
        free(h);
        kiln_array_destroy(outs[i]);
    }
    printf("kiln_batch %lld\n", (long long)batch);
    printf("kiln_ms %.3f\n", median(t, reps) * 1e3);
    printf("kiln_peak_bytes %llu\n", (unsigned long long)ma.peak_bytes);
    printf("kiln_measured_peak_bytes %llu\n", (unsigned long long)measured);
    printf("kiln_argument_bytes %llu\n", (unsigned long long)ma.argument_bytes);
    printf("kiln_output_bytes %llu\n", (unsigned long long)ma.output_bytes);
    printf("kiln_temp_bytes %llu\n", (unsigned long long)ma.temp_bytes);
    for (int i = 0; i < NP + 2; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_context_destroy(ctx);
    return 0;
}
