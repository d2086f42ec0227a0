/* per_example_grads.c — per-example gradients with kiln_vmap of kiln_grad, as DP-SGD needs
 * them: a small MLP classifier (x [16] -> tanh 32 -> 4 logits, softmax cross-entropy), the
 * gradient of each example's loss for every parameter in one batched program
 * (jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))), each example's gradient norm, and the
 * DP-SGD update direction: the mean of the gradients each clipped to norm at most C
 * (Abadi et al. 2016; the noise is left out).
 *
 * The per-example program is traced once, on a sub-graph, and batched by kiln_vmap's rules
 * (no loop: the products become batched products), then compiled with the rest. The
 * example checks its figures against a program that takes kiln_grad of one example at a
 * time, and prints the planned peak (kiln_executable_get_memory_analysis) beside the
 * measured one (the device allocator's peak during the call).
 *
 * Usage: per_example_grads [batch]      (default 32)
 * Exits 1 when a per-example gradient differs from the one-example program's: the test
 * suite runs it as a smoke test. */
#include "kiln.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { D = 16, H = 32, C = 4, NP = 4 };
#define CLIP 1.0

static const int ranks[NP] = {2, 1, 2, 1};
static const int64_t pdims[NP][2] = {{D, H}, {H, 0}, {H, C}, {C, 0}};

#define CHECK(ctx, expr)                                                                           \
    do {                                                                                           \
        if ((expr) != KILN_STATUS_OK) {                                                            \
            fprintf(stderr, "per_example_grads: %s failed: %s\n", #expr, kiln_last_error(ctx));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* One example's loss: in = w1, b1, w2, b2, x [D], label (i32 scalar). */
static kiln_value loss_of(kiln_graph *g, const kiln_value *in) {
    kiln_value h = kiln_tanh(g, kiln_add(g, kiln_matmul(g, in[4], in[0]), in[1]));
    kiln_value z = kiln_add(g, kiln_matmul(g, h, in[2]), in[3]);
    return kiln_softmax_cross_entropy(g, z, in[5]);
}

/* The function kiln_vmap batches: the gradient of one example's loss for each parameter. */
static int grad_fn(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_value loss = loss_of(g, in);
    return kiln_grad(g, loss, NP, in, outs) ? -1 : NP;
}

/* sum of squares of v over every axis but the leading (batch) one: [B]. */
static kiln_value sq_norm(kiln_graph *g, kiln_value v, int rank) {
    int axes[2] = {1, 2};
    return kiln_reduce_sum(g, kiln_square(g, v), rank - 1, axes, false);
}

/* Arguments: w1, b1, w2, b2, x [B, D], y [B]. Outputs: the per-example gradients
 * [B, ...] of each parameter, the norms [B], then the clipped mean of each parameter. */
static kiln_status trace_batched(kiln_graph *g, int64_t batch) {
    kiln_value a[NP + 2], pe[NP], outs[2 * NP + 1];
    const char *names[NP] = {"w1", "b1", "w2", "b2"};
    for (int i = 0; i < NP; i++)
        a[i] = kiln_parameter(g, names[i], KILN_DTYPE_F32, ranks[i], pdims[i]);
    a[NP] = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (const int64_t[]){batch, D});
    a[NP + 1] = kiln_parameter(g, "y", KILN_DTYPE_I32, 1, (const int64_t[]){batch});
    const int in_axes[NP + 2] = {
        KILN_VMAP_NONE, KILN_VMAP_NONE, KILN_VMAP_NONE, KILN_VMAP_NONE, 0, 0};
    kiln_vmap(g, grad_fn, NULL, NP + 2, a, in_axes, NP, NULL, pe);
    kiln_value total = sq_norm(g, pe[0], 3);
    for (int i = 1; i < NP; i++) total = kiln_add(g, total, sq_norm(g, pe[i], ranks[i] + 1));
    kiln_value norm = kiln_sqrt(g, total);
    /* DP-SGD: each example's gradient scaled by min(1, C / norm), then averaged */
    kiln_value scale = kiln_div(g, kiln_scalar(g, KILN_DTYPE_F32, CLIP),
                                kiln_max(g, norm, kiln_scalar(g, KILN_DTYPE_F32, CLIP)));
    for (int i = 0; i < NP; i++) {
        int64_t bd[3] = {batch, pdims[i][0], pdims[i][1]};
        kiln_value s = kiln_broadcast_in_dim(g, scale, ranks[i] + 1, bd, (const int[]){0});
        outs[i] = pe[i];
        outs[NP + 1 + i] = kiln_mean(g, kiln_mul(g, pe[i], s), 1, (const int[]){0}, false);
    }
    outs[NP] = norm;
    return kiln_graph_finish(g, 2 * NP + 1, outs);
}

/* One example at a time: the same loss, kiln_grad of a batch of one. */
static kiln_status trace_one(kiln_graph *g) {
    kiln_value a[NP + 2], gr[NP];
    for (int i = 0; i < NP; i++) a[i] = kiln_parameter(g, "p", KILN_DTYPE_F32, ranks[i], pdims[i]);
    a[NP] = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (const int64_t[]){D});
    a[NP + 1] = kiln_parameter(g, "y", KILN_DTYPE_I32, 0, NULL);
    kiln_grad(g, loss_of(g, a), NP, a, gr);
    return kiln_graph_finish(g, NP, gr);
}

static double uniform(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static int64_t numel(int i) {
    return pdims[i][0] * (ranks[i] == 2 ? pdims[i][1] : 1);
}

int main(int argc, char **argv) {
    int64_t batch = argc > 1 ? atoll(argv[1]) : 32;
    if (batch < 1 || batch > 4096) return fprintf(stderr, "batch must be in [1, 4096]\n"), 2;
    char err[256];
    kiln_context *ctx;
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    uint64_t rng = 7;
    kiln_array *args[NP + 2];
    float *host[NP + 2];
    for (int i = 0; i < NP; i++) {
        host[i] = malloc((size_t)numel(i) * sizeof(float));
        double bound = 1 / sqrt((double)pdims[i - i % 2][0]);
        for (int64_t j = 0; j < numel(i); j++)
            host[i][j] = (float)(bound * (2 * uniform(&rng) - 1));
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, ranks[i], pdims[i], host[i], &args[i]));
    }
    host[NP] = malloc((size_t)batch * D * sizeof(float));
    host[NP + 1] = NULL; /* the labels have their own buffer */
    int32_t *labels = malloc((size_t)batch * sizeof *labels);
    for (int64_t j = 0; j < batch * D; j++) host[NP][j] = (float)(2 * uniform(&rng) - 1);
    for (int64_t j = 0; j < batch; j++) labels[j] = (int32_t)(uniform(&rng) * C);
    CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){batch, D}, host[NP],
                                 &args[NP]));
    CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, (const int64_t[]){batch}, labels,
                                 &args[NP + 1]));

    kiln_graph *g, *g1;
    kiln_executable *e, *e1;
    CHECK(ctx, kiln_graph_create(ctx, "per_example_grads", &g));
    CHECK(ctx, trace_batched(g, batch));
    CHECK(ctx, kiln_compile(g, NULL, &e));
    CHECK(ctx, kiln_graph_create(ctx, "one_example_grad", &g1));
    CHECK(ctx, trace_one(g1));
    CHECK(ctx, kiln_compile(g1, NULL, &e1));

    kiln_memory_analysis ma;
    kiln_memory_stats before, after;
    CHECK(ctx, kiln_executable_get_memory_analysis(e, &ma));
    CHECK(ctx, kiln_device_reset_peak(ctx, 0));
    CHECK(ctx, kiln_device_get_memory_stats(ctx, 0, &before));
    kiln_array *outs[2 * NP + 1];
    CHECK(ctx, kiln_executable_run(e, NP + 2, args, 2 * NP + 1, outs));
    CHECK(ctx, kiln_device_get_memory_stats(ctx, 0, &after));

    /* each example against the one-example program */
    float *norms = malloc((size_t)batch * sizeof *norms);
    CHECK(ctx, kiln_array_copy_to_host(outs[NP], norms, (size_t)batch * sizeof *norms));
    double worst = 0;
    for (int64_t b = 0; b < batch; b++) {
        kiln_array *one[NP + 2], *gr[NP];
        for (int i = 0; i < NP; i++) one[i] = args[i];
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (const int64_t[]){D}, host[NP] + b * D,
                                     &one[NP]));
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, labels + b, &one[NP + 1]));
        CHECK(ctx, kiln_executable_run(e1, NP + 2, one, NP, gr));
        for (int i = 0; i < NP; i++) {
            int64_t n = numel(i);
            float *want = malloc((size_t)n * sizeof *want),
                  *got = malloc((size_t)(batch * n) * sizeof *got);
            CHECK(ctx, kiln_array_copy_to_host(gr[i], want, (size_t)n * sizeof *want));
            CHECK(ctx, kiln_array_copy_to_host(outs[i], got, (size_t)(batch * n) * sizeof *got));
            for (int64_t j = 0; j < n; j++) {
                double d = fabs(got[b * n + j] - want[j]) / (1 + fabs(want[j]));
                if (d > worst) worst = d;
            }
            free(want), free(got);
            kiln_array_destroy(gr[i]);
        }
        kiln_array_destroy(one[NP]), kiln_array_destroy(one[NP + 1]);
    }
    printf("per-example gradient norms (first 8 of %lld):", (long long)batch);
    for (int64_t b = 0; b < batch && b < 8; b++) printf(" %.4f", norms[b]);
    printf("\nclipped to %.1f and averaged: the DP-SGD direction (outputs %d..%d)\n", CLIP, NP + 1,
           2 * NP);
    printf("largest difference from one-example kiln_grad: %.2e (relative)\n", worst);
    printf("planned peak %llu bytes, measured %llu bytes\n", (unsigned long long)ma.peak_bytes,
           (unsigned long long)(after.peak_bytes_in_use - before.bytes_in_use + ma.argument_bytes));
    for (int i = 0; i < 2 * NP + 1; i++) kiln_array_destroy(outs[i]);
    for (int i = 0; i < NP + 2; i++) kiln_array_destroy(args[i]), free(host[i]);
    free(labels), free(norms);
    kiln_executable_destroy(e), kiln_executable_destroy(e1);
    kiln_graph_destroy(g), kiln_graph_destroy(g1);
    kiln_context_destroy(ctx);
    return worst < 1e-5 ? 0 : 1;
}
