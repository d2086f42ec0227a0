/* cnn_train.c — trains a small convolutional classifier: which quadrant of a 16x16 image
 * holds a bright blob. The network, NHWC f32:
 *
 *   conv 3x3 SAME (1 -> 8) + relu + max pool 2x2  ->  conv 3x3 SAME (8 -> 16) + relu +
 *   max pool 2x2  ->  flatten  ->  dense 4x4x16 -> 4  ->  softmax cross-entropy
 *
 * and the whole training step (forward, kiln_grad, AdamW) traced once and compiled once
 * with the parameters and the optimiser state donated, as examples/mlp_train.c does for an
 * MLP. The convolutions follow jax.lax.conv_general_dilated (kiln_conv_general_dilated,
 * flax's NHWC/HWIO layout), the pools flax's max_pool (kiln_reduce_window with MAX). Each
 * step draws a fresh batch, so the accuracy printed is on images the step has not seen.
 *
 * Usage: cnn_train [steps] [print_every]      (defaults: 200, 20)
 * Exits 1 if the last loss is not below half the first or the last batch's accuracy is
 * under 80%: the test suite runs it with few steps as a smoke test. */
#include "kiln.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { BATCH = 32, SIDE = 16, C1 = 8, C2 = 16, CLASSES = 4, NP = 6 };
enum { FLAT = (SIDE / 4) * (SIDE / 4) * C2 };

/* Arguments: params, m, v (NP each; donated), then the batch and the two scalars.
 * Outputs: new params, m, v, then the loss and the batch's accuracy. */
enum { ARG_M = NP, ARG_V = 2 * NP, ARG_X = 3 * NP, ARG_Y, ARG_LR, ARG_STEP, N_ARGS };
enum { OUT_LOSS = 3 * NP, OUT_ACC, N_OUTS };

static const int ranks[NP] = {4, 1, 4, 1, 2, 1};
static const int64_t dims[NP][4] = {{3, 3, 1, C1},   {C1},     {3, 3, C1, C2}, {C2},
                                    {FLAT, CLASSES}, {CLASSES}};
static const int64_t fan_in[NP] = {9, 9, 9 * C1, 9 * C1, FLAT, FLAT};

#define CHECK(ctx, expr)                                                                           \
    do {                                                                                           \
        if ((expr) != KILN_STATUS_OK) {                                                            \
            fprintf(stderr, "cnn_train: %s failed: %s\n", #expr, kiln_last_error(ctx));            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* conv 3x3 SAME + bias + relu, then max pool 2x2 stride 2 (windows 1 over N and C). */
static kiln_value conv_block(kiln_graph *g, kiln_value x, kiln_value w, kiln_value b) {
    kiln_conv_options co = {.padding = KILN_PADDING_SAME, .layout = KILN_CONV_NHWC};
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_conv_general_dilated(g, x, w, &co), b));
    kiln_window_options po = {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}};
    return kiln_reduce_window(g, h, KILN_WINDOW_MAX, &po);
}

/* The training step. Builder errors are sticky: kiln_graph_finish returns the first. */
static kiln_status trace_step(kiln_graph *g) {
    kiln_value a[N_ARGS], outs[N_OUTS], grads[NP];
    char name[8];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < NP; i++) {
            snprintf(name, sizeof name, "%c%d", "pmv"[k], i);
            a[k * NP + i] = kiln_parameter(g, name, KILN_DTYPE_F32, ranks[i], dims[i]);
        }
    int64_t xd[4] = {BATCH, SIDE, SIDE, 1}, yd[1] = {BATCH}, flat[2] = {BATCH, FLAT};
    a[ARG_X] = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, xd);
    a[ARG_Y] = kiln_parameter(g, "labels", KILN_DTYPE_I32, 1, yd);
    a[ARG_LR] = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
    a[ARG_STEP] = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);

    const kiln_value *p = a;
    kiln_value h = conv_block(g, conv_block(g, a[ARG_X], p[0], p[1]), p[2], p[3]);
    kiln_value logits = kiln_add(g, kiln_matmul(g, kiln_reshape(g, h, 2, flat), p[4]), p[5]);
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, a[ARG_Y]), 0, NULL, false);
    kiln_grad(g, loss, NP, p, grads);
    kiln_adamw_options o = {.lr = a[ARG_LR], .step = a[ARG_STEP]};
    kiln_optim_adamw(g, &o, NP, p, grads, a + ARG_M, a + ARG_V, outs, outs + NP, outs + 2 * NP);
    kiln_value right = kiln_compare(g, kiln_argmax(g, logits, 1), a[ARG_Y], KILN_CMP_EQ);
    outs[OUT_LOSS] = loss;
    outs[OUT_ACC] = kiln_mean(g, kiln_convert(g, right, KILN_DTYPE_F32), 0, NULL, false);
    return kiln_graph_finish(g, N_OUTS, outs);
}

static double uniform(uint64_t *s) { /* xorshift64*, in [0, 1) */
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (double)((*s * 0x2545f4914f6cdd1du) >> 11) * 0x1p-53;
}

/* A batch: each image is noise plus a Gaussian blob at a random point of one quadrant
 * (the label: 0 top left, 1 top right, 2 bottom left, 3 bottom right). */
static void make_batch(uint64_t *rng, float *x, int32_t *y) {
    for (int e = 0; e < BATCH; e++) {
        int c = (int)(uniform(rng) * CLASSES);
        double r0 = (c / 2) * SIDE / 2 + 1.5 + 5 * uniform(rng);
        double c0 = (c % 2) * SIDE / 2 + 1.5 + 5 * uniform(rng);
        y[e] = c;
        for (int r = 0; r < SIDE; r++)
            for (int q = 0; q < SIDE; q++) {
                double d2 = (r - r0) * (r - r0) + (q - c0) * (q - c0);
                x[(e * SIDE + r) * SIDE + q] = (float)(exp(-d2 / 4) + 0.3 * uniform(rng));
            }
    }
}

/* Weights and biases U(+-1/sqrt(fan_in)) (torch's Conv2d and Linear); m and v zero. */
static void init_state(kiln_context *ctx, uint64_t *rng, kiln_array **state) {
    for (int i = 0; i < NP; i++) {
        int64_t n = 1;
        for (int k = 0; k < ranks[i]; k++) n *= dims[i][k];
        float *w = malloc((size_t)n * sizeof *w);
        if (!w) exit(1);
        for (int64_t j = 0; j < n; j++)
            w[j] = (float)((2 * uniform(rng) - 1) / sqrt((double)fan_in[i]));
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, ranks[i], dims[i], w, &state[i]));
        free(w);
        for (int k = 1; k < 3; k++) /* data NULL gives zeros */
            CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, ranks[i], dims[i], NULL,
                                         &state[k * NP + i]));
    }
}

static kiln_executable *compile_step(kiln_context *ctx) {
    kiln_graph *g;
    kiln_executable *step;
    CHECK(ctx, kiln_graph_create(ctx, "cnn_train_step", &g));
    CHECK(ctx, trace_step(g));
    int donate[3 * NP];
    for (int i = 0; i < 3 * NP; i++) donate[i] = i;
    kiln_compile_options co = {.n_donate = 3 * NP, .donate_argnums = donate};
    CHECK(ctx, kiln_compile(g, &co, &step));
    kiln_graph_destroy(g);
    return step;
}

/* One step: feeds the state and a fresh batch, takes the new state back. */
static void run_step(kiln_context *ctx, kiln_executable *step, kiln_array **state, uint64_t *rng,
                     int t, float *loss, float *acc) {
    static float x[BATCH * SIDE * SIDE];
    static int32_t y[BATCH];
    make_batch(rng, x, y);
    int64_t xd[4] = {BATCH, SIDE, SIDE, 1}, yd[1] = {BATCH};
    float lr = 1e-3f;
    int32_t st = t;
    kiln_array *args[N_ARGS], *outs[N_OUTS];
    for (int i = 0; i < 3 * NP; i++) args[i] = state[i];
    CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 4, xd, x, &args[ARG_X]));
    CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, yd, y, &args[ARG_Y]));
    CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[ARG_LR]));
    CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &st, &args[ARG_STEP]));
    CHECK(ctx, kiln_executable_run(step, N_ARGS, args, N_OUTS, outs));
    for (int i = ARG_X; i < N_ARGS; i++) kiln_array_destroy(args[i]);
    /* the donated state's buffers now belong to the outputs */
    for (int i = 0; i < 3 * NP; i++) kiln_array_destroy(state[i]), state[i] = outs[i];
    CHECK(ctx, kiln_array_copy_to_host(outs[OUT_LOSS], loss, sizeof *loss));
    CHECK(ctx, kiln_array_copy_to_host(outs[OUT_ACC], acc, sizeof *acc));
    kiln_array_destroy(outs[OUT_LOSS]), kiln_array_destroy(outs[OUT_ACC]);
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 200, every = argc > 2 ? atoi(argv[2]) : 20;
    if (steps < 20 || every < 1) {
        fprintf(stderr, "usage: cnn_train [steps >= 20] [print_every >= 1] (exits 1 if it did not "
                        "learn: give it 60 steps or more)\n");
        return 2;
    }
    char err[256];
    kiln_context *ctx;
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "cnn_train: %s\n", err);
        return 1;
    }
    kiln_executable *step = compile_step(ctx);
    kiln_memory_analysis ma;
    CHECK(ctx, kiln_executable_get_memory_analysis(step, &ma));
    printf("training step: planned peak %.2f MiB (temporaries %.2f MiB, the patch matrices "
           "of the convolutions among them)\n",
           (double)ma.peak_bytes / 1048576.0, (double)ma.temp_bytes / 1048576.0);

    uint64_t rng = 2024;
    kiln_array *state[3 * NP];
    init_state(ctx, &rng, state);
    float first = 0, loss = 0, acc = 0;
    for (int t = 1; t <= steps; t++) {
        run_step(ctx, step, state, &rng, t, &loss, &acc);
        if (t == 1) first = loss;
        if (t == 1 || t % every == 0 || t == steps)
            printf("step %4d  loss %.4f  batch accuracy %3.0f%%\n", t, loss, 100 * acc);
    }
    for (int i = 0; i < 3 * NP; i++) kiln_array_destroy(state[i]);
    kiln_executable_destroy(step);
    kiln_context_destroy(ctx);
    if (!(loss < first / 2) || acc < 0.8f) {
        fprintf(stderr, "cnn_train: did not learn (loss %.4f -> %.4f, accuracy %.0f%%)\n", first,
                loss, 100 * acc);
        return 1;
    }
    return 0;
}
