/* bench_hvp.c — kiln's side of the Hessian-vector product figure (issue 35, forward mode):
 * MLP 784-512-512-10 (tanh), batch 256, mean softmax cross-entropy, f32; H v over all six
 * parameters as kiln_jvp of kiln_grad (forward over reverse), compiled as one program.
 *
 * Usage: bench_hvp DIR [reps]
 * Writes the weights, the direction v and the batch to DIR as raw little-endian files (the
 * JAX side, hvp_jax.py, reads them and computes jax.jvp(jax.grad(f)) from the same numbers),
 * then kiln's H v, then times it: the median of `reps` (>= 10) runs after 3 of warm-up.
 * Prints "name value" lines. Not a test: never fails on time. */
#include "kiln.h"
#include "../bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 256, D0 = 784, D1 = 512, D2 = 512, D3 = 10, NP = 6, WARMUP = 3 };
enum { N_ARGS = 2 * NP + 2 };

static const int64_t dims[NP][2] = {{D0, D1}, {D1, 0}, {D1, D2}, {D2, 0}, {D2, D3}, {D3, 0}};
static const char *names[NP] = {"w1", "b1", "w2", "b2", "w3", "b3"};
static int rank_of(int i) {
    return i % 2 ? 1 : 2;
}
static int64_t size_of(int i) {
    return dims[i][0] * (i % 2 ? 1 : dims[i][1]);
}

/* Arguments: the parameters, the direction (one per parameter), x, y. Outputs: H v. */
static kiln_status trace(kiln_graph *g) {
    kiln_value p[NP], v[NP], gr[NP], hv[NP];
    char name[16];
    for (int i = 0; i < NP; i++)
        p[i] = kiln_parameter(g, names[i], KILN_DTYPE_F32, rank_of(i), dims[i]);
    for (int i = 0; i < NP; i++) {
        snprintf(name, sizeof name, "v_%s", names[i]);
        v[i] = kiln_parameter(g, name, KILN_DTYPE_F32, rank_of(i), dims[i]);
    }
    int64_t xd[2] = {B, D0}, yd[1] = {B};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_I32, 1, yd);
    kiln_value h = kiln_tanh(g, kiln_add(g, kiln_matmul(g, x, p[0]), p[1]));
    h = kiln_tanh(g, kiln_add(g, kiln_matmul(g, h, p[2]), p[3]));
    kiln_value logits = kiln_add(g, kiln_matmul(g, h, p[4]), p[5]);
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, y), 0, NULL, false);
    kiln_grad(g, loss, NP, p, gr);
    kiln_jvp(g, NP, gr, NP, p, v, hv);
    return kiln_graph_finish(g, NP, hv);
}

static kiln_array *random_array(kiln_context *ctx, const char *dir, const char *file, int i,
                                double bound, uint64_t *rng) {
    int64_t n = size_of(i);
    float *w = malloc((size_t)n * 4);
    if (!w) exit(1);
    for (int64_t j = 0; j < n; j++) w[j] = (float)(bound * (2 * bench_uniform(rng) - 1));
    kiln_array *a;
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank_of(i), dims[i], w, &a));
    bench_write_file(dir, file, w, (size_t)n * 4);
    free(w);
    return a;
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: bench_hvp DIR [reps >= 10]\n"), 2;
    const char *dir = argv[1];
    int reps = argc > 2 ? atoi(argv[2]) : 30;
    reps = reps < 10 ? 10 : reps > 1000 ? 1000 : reps;
    char err[256], file[32];
    kiln_context *ctx;
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    uint64_t rng = 42;
    kiln_array *args[N_ARGS], *outs[NP];
    for (int i = 0; i < NP; i++) {
        snprintf(file, sizeof file, "p_%s.f32", names[i]);
        args[i] = random_array(ctx, dir, file, i, 1 / sqrt((double)dims[i - i % 2][0]), &rng);
    }
    for (int i = 0; i < NP; i++) {
        snprintf(file, sizeof file, "v_%s.f32", names[i]);
        args[NP + i] = random_array(ctx, dir, file, i, 1, &rng);
    }
    float *xs = malloc((size_t)B * D0 * 4);
    int32_t ys[B];
    if (!xs) return 1;
    for (int64_t j = 0; j < (int64_t)B * D0; j++) xs[j] = (float)bench_uniform(&rng);
    for (int j = 0; j < B; j++) ys[j] = (int32_t)(bench_uniform(&rng) * D3);
    bench_write_file(dir, "x.f32", xs, (size_t)B * D0 * 4);
    bench_write_file(dir, "y.i32", ys, sizeof ys);
    int64_t xd[2] = {B, D0}, yd[1] = {B};
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, xd, xs, &args[2 * NP]));
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, yd, ys, &args[2 * NP + 1]));
    free(xs);

    kiln_graph *g;
    kiln_executable *e;
    DIE(ctx, kiln_graph_create(ctx, "mlp_hvp", &g));
    DIE(ctx, trace(g));
    double t0 = now();
    DIE(ctx, kiln_compile(g, NULL, &e));
    printf("kiln_compile_ms %.1f\n", (now() - t0) * 1e3);
    kiln_graph_destroy(g);
    double t[1000];
    for (int r = 0; r < WARMUP + reps; r++) {
        double s = now();
        DIE(ctx, kiln_executable_run(e, N_ARGS, args, NP, outs));
        if (r >= WARMUP) t[r - WARMUP] = now() - s;
        if (r + 1 < WARMUP + reps)
            for (int i = 0; i < NP; i++) kiln_array_destroy(outs[i]);
    }
    for (int i = 0; i < NP; i++) {
        snprintf(file, sizeof file, "hv_%s.f32", names[i]);
        size_t n = kiln_array_nbytes(outs[i]);
        void *h = malloc(n);
        if (!h || kiln_array_copy_to_host(outs[i], h, n)) return 1;
        bench_write_file(dir, file, h, n);
        free(h);
        kiln_array_destroy(outs[i]);
    }
    printf("kiln_hvp_ms %.3f\n", median(t, reps) * 1e3);
    for (int i = 0; i < N_ARGS; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_context_destroy(ctx);
    return 0;
}
