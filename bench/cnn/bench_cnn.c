/* bench_cnn.c — kiln's side of the small-CNN benchmark (issue 35, item 7): a CNN trained
 * with AdamW on the CPU, the whole step (forward, kiln_grad, update) one compiled program
 * with the parameters and both moments donated.
 *
 * The network, NHWC f32, batch 64: conv 3x3 SAME (1 -> 16) + relu + max pool 2x2/2, conv
 * 3x3 SAME (16 -> 32) + relu + max pool 2x2/2, flatten (h, w, c order) and dense
 * 7*7*32 -> 10, mean softmax cross-entropy. AdamW lr 1e-3, betas 0.9/0.999, eps 1e-8,
 * weight decay 1e-2. The task: 28x28 images holding one bright Gaussian blob near one of
 * ten fixed centres (jittered, on faint noise); the label is the centre's index, so the
 * loss falls from ln 10 within a few tens of steps. NB batches are made once and the
 * steps cycle through them.
 *
 * Usage: bench_cnn DIR [steps]   (steps >= 20, default 100)
 * Writes the initial parameters (torch's Conv2d/Linear init, U(+-1/sqrt(fan_in)), HWIO and
 * [in, out]) and the batches to DIR as raw little-endian files, so the JAX and PyTorch
 * sides start from the same numbers and see the same data; then trains `steps` steps,
 * printing the loss every 10, writes every step's loss (kiln_losses.f32) for the Python
 * sides to compare, and prints "name value" lines: the median step time of the steps
 * after 5 of warm-up, compile time and the planned memory (kiln_memory_analysis). Not a
 * test: never fails on time. */
#include "kiln.h"
#include "../bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 64, H = 28, C1 = 16, C2 = 32, NCLS = 10, NB = 8, NP = 6, WARMUP = 5 };
enum { FLAT = (H / 4) * (H / 4) * C2 };
enum { ARG_M = NP, ARG_V = 2 * NP, ARG_X = 3 * NP, ARG_Y, ARG_LR, ARG_STEP, N_ARGS };
enum { OUT_LOSS = 3 * NP, N_OUTS };

static const int ranks[NP] = {4, 1, 4, 1, 2, 1};
static const int64_t dims[NP][4] = {{3, 3, 1, C1}, {C1},         {3, 3, C1, C2},
                                    {C2},          {FLAT, NCLS}, {NCLS}};
static const int64_t fan_in[NP] = {9, 9, 9 * C1, 9 * C1, FLAT, FLAT};
static const char *names[NP] = {"w1", "b1", "w2", "b2", "w3", "b3"};

static int64_t size_of(int i) {
    int64_t n = 1;
    for (int k = 0; k < ranks[i]; k++) n *= dims[i][k];
    return n;
}

/* conv 3x3 SAME (NHWC, HWIO) + bias + relu + max pool 2x2 stride 2. */
static kiln_value conv_block(kiln_graph *g, kiln_value x, kiln_value w, kiln_value b) {
    kiln_conv_options co = {.padding = KILN_PADDING_SAME, .layout = KILN_CONV_NHWC};
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_conv_general_dilated(g, x, w, &co), b));
    kiln_window_options po = {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}};
    return kiln_reduce_window(g, h, KILN_WINDOW_MAX, &po);
}

static kiln_status trace(kiln_graph *g) {
    kiln_value a[N_ARGS], outs[N_OUTS], grads[NP];
    char name[16];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < NP; i++) {
            snprintf(name, sizeof name, "%s%s", k == 0 ? "" : k == 1 ? "m_" : "v_", names[i]);
            a[k * NP + i] = kiln_parameter(g, name, KILN_DTYPE_F32, ranks[i], dims[i]);
        }
    int64_t xd[4] = {B, H, H, 1}, yd[1] = {B}, flat[2] = {B, FLAT};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, xd);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_I32, 1, yd);
    const kiln_value *p = a;
    kiln_value h = conv_block(g, conv_block(g, x, p[0], p[1]), p[2], p[3]);
    kiln_value logits = kiln_add(g, kiln_matmul(g, kiln_reshape(g, h, 2, flat), p[4]), p[5]);
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, y), 0, NULL, false);
    kiln_grad(g, loss, NP, p, grads);
    kiln_adamw_options o = {.lr = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL),
                            .step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL),
                            .weight_decay = kiln_scalar(g, KILN_DTYPE_F64, 1e-2)};
    kiln_optim_adamw(g, &o, NP, p, grads, a + ARG_M, a + ARG_V, outs, outs + NP, outs + 2 * NP);
    outs[OUT_LOSS] = loss;
    return kiln_graph_finish(g, N_OUTS, outs);
}

static kiln_executable *compile(kiln_context *ctx) {
    kiln_graph *g;
    kiln_executable *e;
    DIE(ctx, kiln_graph_create(ctx, "cnn_train_step", &g));
    DIE(ctx, trace(g));
    int donate[3 * NP];
    for (int i = 0; i < 3 * NP; i++) donate[i] = i;
    kiln_compile_options o = {.n_donate = 3 * NP, .donate_argnums = donate};
    DIE(ctx, kiln_compile(g, &o, &e));
    kiln_graph_destroy(g);
    return e;
}

/* The parameters (written to DIR) and zero moments. */
static void init_state(kiln_context *ctx, const char *dir, uint64_t *rng, kiln_array **state) {
    for (int i = 0; i < NP; i++) {
        int64_t n = size_of(i);
        float *w = malloc((size_t)n * 4);
        if (!w) exit(1);
        double bound = 1 / sqrt((double)fan_in[i]);
        for (int64_t j = 0; j < n; j++) w[j] = (float)(bound * (2 * bench_uniform(rng) - 1));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, ranks[i], dims[i], w, &state[i]));
        char fname[32];
        snprintf(fname, sizeof fname, "init_%s.f32", names[i]);
        bench_write_file(dir, fname, w, (size_t)n * 4);
        free(w);
        for (int k = 1; k < 3; k++)
            DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, ranks[i], dims[i], NULL,
                                       &state[k * NP + i]));
    }
}

/* NB batches of blob images (written to DIR as x.f32 [NB, B, H, H, 1], y.i32 [NB, B]). */
static void make_batches(kiln_context *ctx, const char *dir, uint64_t *rng, kiln_array **x,
                         kiln_array **y) {
    static float xb[NB * B * H * H];
    static int32_t yb[NB * B];
    /* Ten centres spread over the image: two rows of five. */
    static const double cr[NCLS] = {7, 7, 7, 7, 7, 20, 20, 20, 20, 20};
    static const double cc[NCLS] = {4, 9, 14, 19, 24, 4, 9, 14, 19, 24};
    for (int e = 0; e < NB * B; e++) {
        int c = (int)(bench_uniform(rng) * NCLS);
        double r0 = cr[c] + 4 * bench_uniform(rng) - 2, c0 = cc[c] + 4 * bench_uniform(rng) - 2;
        yb[e] = c;
        for (int r = 0; r < H; r++)
            for (int q = 0; q < H; q++) {
                double d2 = (r - r0) * (r - r0) + (q - c0) * (q - c0);
                xb[(e * H + r) * H + q] = (float)(exp(-d2 / 8) + 0.2 * bench_uniform(rng));
            }
    }
    bench_write_file(dir, "x.f32", xb, sizeof xb);
    bench_write_file(dir, "y.i32", yb, sizeof yb);
    int64_t xd[4] = {B, H, H, 1}, yd[1] = {B};
    for (int k = 0; k < NB; k++) {
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 4, xd, xb + k * B * H * H, &x[k]));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, yd, yb + k * B, &y[k]));
    }
}

static void print_memory(kiln_executable *e, kiln_context *ctx) {
    kiln_executable_info info;
    kiln_memory_analysis ma;
    kiln_executable_get_info(e, &info);
    DIE(ctx, kiln_executable_get_memory_analysis(e, &ma));
    printf("kiln_kernels %d\n", info.num_kernels);
    printf("kiln_peak_bytes %llu\n", (unsigned long long)ma.peak_bytes);
    printf("kiln_argument_bytes %llu\n", (unsigned long long)ma.argument_bytes);
    printf("kiln_output_bytes %llu\n", (unsigned long long)ma.output_bytes);
    printf("kiln_temp_bytes %llu\n", (unsigned long long)ma.temp_bytes);
    printf("kiln_alias_bytes %llu\n", (unsigned long long)ma.alias_bytes);
    printf("kiln_donations_unused %d\n", ma.num_donations_unused);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_cnn DIR [steps >= 20]\n");
        return 2;
    }
    const char *dir = argv[1];
    int steps = argc > 2 ? atoi(argv[2]) : 100;
    steps = steps < 20 ? 20 : steps > 2000 ? 2000 : steps;
    char err[256];
    kiln_context *ctx;
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    uint64_t rng = 35;
    kiln_array *state[3 * NP], *x[NB], *y[NB], *args[N_ARGS], *outs[N_OUTS];
    init_state(ctx, dir, &rng, state);
    make_batches(ctx, dir, &rng, x, y);

    double t0 = now();
    kiln_executable *e = compile(ctx);
    double compile_ms = (now() - t0) * 1e3;
    float *losses = malloc((size_t)steps * sizeof *losses);
    double *t = malloc((size_t)steps * sizeof *t);
    if (!losses || !t) return 1;
    for (int s = 1; s <= steps; s++) {
        float lr = 1e-3f;
        int32_t step = s;
        double ts = now();
        for (int i = 0; i < 3 * NP; i++) args[i] = state[i];
        args[ARG_X] = x[(s - 1) % NB], args[ARG_Y] = y[(s - 1) % NB];
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[ARG_LR]));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step, &args[ARG_STEP]));
        DIE(ctx, kiln_executable_run(e, N_ARGS, args, N_OUTS, outs));
        kiln_array_destroy(args[ARG_LR]), kiln_array_destroy(args[ARG_STEP]);
        for (int i = 0; i < 3 * NP; i++) kiln_array_destroy(state[i]), state[i] = outs[i];
        DIE(ctx, kiln_array_copy_to_host(outs[OUT_LOSS], &losses[s - 1], sizeof *losses));
        kiln_array_destroy(outs[OUT_LOSS]);
        t[s - 1] = now() - ts;
        if (s == 1 || s % 10 == 0) fprintf(stderr, "kiln step %4d loss %.5f\n", s, losses[s - 1]);
    }
    bench_write_file(dir, "kiln_losses.f32", losses, (size_t)steps * sizeof *losses);
    printf("kiln_steps %d\n", steps);
    printf("kiln_first_loss %.6f\n", losses[0]);
    printf("kiln_last_loss %.6f\n", losses[steps - 1]);
    printf("kiln_step_ms %.3f\n", median(t + WARMUP, steps - WARMUP) * 1e3);
    printf("kiln_compile_ms %.1f\n", compile_ms);
    print_memory(e, ctx);

    free(losses), free(t);
    for (int i = 0; i < 3 * NP; i++) kiln_array_destroy(state[i]);
    for (int k = 0; k < NB; k++) kiln_array_destroy(x[k]), kiln_array_destroy(y[k]);
    kiln_executable_destroy(e);
    kiln_context_destroy(ctx);
    return 0;
}
