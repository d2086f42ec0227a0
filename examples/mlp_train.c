/* mlp_train.c — trains a small MLP classifier (2 -> 64 -> 64 -> 3, ReLU) on three
 * interleaved spirals, the whole training step compiled as one program:
 *
 *   forward -> softmax cross-entropy -> kiln_grad -> AdamW update
 *
 * traced once, compiled once with the parameters and the optimiser state donated, so the
 * update writes its results over them in place. The learning rate (warm-up, then cosine
 * decay) and the step count are fed as rank-0 arguments each call: the schedule changes
 * what the step computes without retracing or recompiling. Prints the step's memory
 * analysis once, then the loss falling and the accuracy rising every N steps.
 *
 * Usage: mlp_train [steps] [print_every]      (defaults: 400, 50)
 * Exits 1 if the last loss is not below half the first or the accuracy did not rise by
 * 20 points: the test suite runs it with few steps as a smoke test. */
#include "kiln.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum {
    CLASSES = 3,
    PER_CLASS = 256,
    N = CLASSES * PER_CLASS, /* the whole dataset: 768 points in the plane */
    BATCH = 128,
    IN = 2,
    HIDDEN = 64,
    NP = 6, /* parameters: W1, b1, W2, b2, W3, b3 */
};

/* The step's arguments, in order: params, m, v (NP each; donated), then the batch and the
 * two scalars. Its outputs: new params, new m, new v (in the same order), then the loss. */
enum { ARG_M = NP, ARG_V = 2 * NP, ARG_X = 3 * NP, ARG_Y, ARG_LR, ARG_STEP, N_ARGS };
enum { OUT_LOSS = 3 * NP, N_OUTS };

static const int64_t param_dims[NP][2] = {{IN, HIDDEN}, {HIDDEN, 0},       {HIDDEN, HIDDEN},
                                          {HIDDEN, 0},  {HIDDEN, CLASSES}, {CLASSES, 0}};
static int param_rank(int i) {
    return i % 2 ? 1 : 2;
} /* weights are matrices, biases vectors */

#define CHECK(ctx, expr)                                                                           \
    do {                                                                                           \
        if ((expr) != KILN_STATUS_OK) {                                                            \
            fprintf(stderr, "mlp_train: %s failed: %s\n", #expr, kiln_last_error(ctx));            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the model: the same function traces the training step and the evaluation ---- */

static kiln_value logits_of(kiln_graph *g, const kiln_value *p, kiln_value x) {
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_matmul(g, x, p[0]), p[1]));
    h = kiln_relu(g, kiln_add(g, kiln_matmul(g, h, p[2]), p[3]));
    return kiln_add(g, kiln_matmul(g, h, p[4]), p[5]);
}

/* The whole training step as one graph. Builder errors are sticky: the first one is kept
 * and kiln_graph_finish returns it, so no call below needs its own check. */
static kiln_status trace_step(kiln_graph *g) {
    kiln_value a[N_ARGS];
    char name[8];
    for (int k = 0; k < 3; k++) /* parameters are numbered in the order they are made */
        for (int i = 0; i < NP; i++) {
            snprintf(name, sizeof name, "%c%d", "pmv"[k], i);
            a[k * NP + i] = kiln_parameter(g, name, KILN_DTYPE_F32, param_rank(i), param_dims[i]);
        }
    int64_t xd[2] = {BATCH, IN}, yd[1] = {BATCH};
    a[ARG_X] = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    a[ARG_Y] = kiln_parameter(g, "labels", KILN_DTYPE_I32, 1, yd);
    a[ARG_LR] = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
    a[ARG_STEP] = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);

    const kiln_value *params = a;
    kiln_value per_example =
        kiln_softmax_cross_entropy(g, logits_of(g, params, a[ARG_X]), a[ARG_Y]);
    kiln_value loss = kiln_mean(g, per_example, 0, NULL, false); /* naxes 0: over all axes */

    kiln_value grads[NP], outs[N_OUTS];
    kiln_grad(g, loss, NP, params, grads);
    kiln_adamw_options o = {
        .lr = a[ARG_LR], .step = a[ARG_STEP], .weight_decay = kiln_scalar(g, KILN_DTYPE_F64, 1e-4)};
    kiln_optim_adamw(g, &o, NP, params, grads, a + ARG_M, a + ARG_V, outs, outs + NP,
                     outs + 2 * NP);
    outs[OUT_LOSS] = loss;
    return kiln_graph_finish(g, N_OUTS, outs);
}

/* Logits over the whole dataset, for the accuracy (parameters read, not donated). */
static kiln_status trace_eval(kiln_graph *g) {
    kiln_value p[NP];
    char name[8];
    for (int i = 0; i < NP; i++) {
        snprintf(name, sizeof name, "p%d", i);
        p[i] = kiln_parameter(g, name, KILN_DTYPE_F32, param_rank(i), param_dims[i]);
    }
    int64_t xd[2] = {N, IN};
    kiln_value logits = logits_of(g, p, kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd));
    return kiln_graph_finish(g, 1, &logits);
}

/* ---- data: seeded, so every run trains on the same points from the same weights ---- */

static double uniform(uint64_t *s) { /* xorshift64*, in [0, 1) */
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (double)((*s * 0x2545f4914f6cdd1du) >> 11) * 0x1p-53;
}
static double normal(uint64_t *s) { /* Box-Muller */
    double u = uniform(s);
    return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * uniform(s));
}

/* Class c's spiral arm: radius grows from 0 to 1 over 1.5 turns, with a little noise. */
static void make_spirals(uint64_t *rng, float *x, int32_t *y) {
    for (int c = 0; c < CLASSES; c++)
        for (int i = 0; i < PER_CLASS; i++) {
            double r = (double)i / PER_CLASS, t = 4.0 * c + 4.7 * r + 0.2 * normal(rng);
            int k = c * PER_CLASS + i;
            x[2 * k] = (float)(r * sin(t)), x[2 * k + 1] = (float)(r * cos(t)), y[k] = c;
        }
}

/* Weights ~ N(0, 2 / fan_in) (He, for ReLU); biases and optimiser state zero. */
static void init_state(kiln_context *ctx, uint64_t *rng, kiln_array **state) {
    for (int i = 0; i < NP; i++) {
        int64_t n = param_dims[i][0] * (param_rank(i) == 2 ? param_dims[i][1] : 1);
        float *w = calloc((size_t)n, sizeof *w);
        if (!w) exit(1);
        for (int64_t j = 0; i % 2 == 0 && j < n; j++)
            w[j] = (float)(normal(rng) * sqrt(2.0 / (double)param_dims[i][0]));
        CHECK(ctx,
              kiln_array_create(ctx, KILN_DTYPE_F32, param_rank(i), param_dims[i], w, &state[i]));
        free(w);
        for (int k = 1; k < 3; k++) /* m and v: data NULL gives zeros */
            CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, param_rank(i), param_dims[i], NULL,
                                         &state[k * NP + i]));
    }
}

/* Linear warm-up over the first 5% of the steps, then cosine decay to 0. */
static float schedule(int t, int steps) {
    const double peak = 1e-2;
    int warm = steps / 20 > 0 ? steps / 20 : 1;
    if (t <= warm) return (float)(peak * t / warm);
    return (float)(peak * 0.5 * (1 + cos(3.141592653589793 * (t - warm) / (steps - warm))));
}

static double accuracy(kiln_context *ctx, kiln_executable *eval, kiln_array **params,
                       kiln_array *data_x, const int32_t *labels) {
    kiln_array *args[NP + 1], *out;
    for (int i = 0; i < NP; i++) args[i] = params[i];
    args[NP] = data_x;
    CHECK(ctx, kiln_executable_run(eval, NP + 1, args, 1, &out));
    float logits[N * CLASSES];
    CHECK(ctx, kiln_array_copy_to_host(out, logits, sizeof logits));
    kiln_array_destroy(out);
    int right = 0;
    for (int k = 0; k < N; k++) {
        int best = 0;
        for (int c = 1; c < CLASSES; c++)
            if (logits[k * CLASSES + c] > logits[k * CLASSES + best]) best = c;
        right += best == labels[k];
    }
    return (double)right / N;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 400, every = argc > 2 ? atoi(argv[2]) : 50;
    if (steps < 20 || every < 1) {
        fprintf(stderr, "usage: mlp_train [steps >= 20] [print_every >= 1] (exits 1 if it did not "
                        "learn: give it 120 steps or more)\n");
        return 2;
    }
    char err[256];
    kiln_context *ctx;
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "mlp_train: %s\n", err);
        return 1;
    }

    /* Trace and compile the step once. Donating params, m and v (arguments 0 .. 3 NP - 1)
     * lets the plan write p', m', v' over them: the step needs no second copy of the
     * model or of the optimiser state. */
    kiln_graph *g;
    kiln_executable *step, *eval;
    CHECK(ctx, kiln_graph_create(ctx, "mlp_train_step", &g));
    CHECK(ctx, trace_step(g));
    int donate[3 * NP];
    for (int i = 0; i < 3 * NP; i++) donate[i] = i;
    /* keep_ir: the memory report below prints the plan */
    kiln_compile_options co = {.n_donate = 3 * NP, .donate_argnums = donate, .keep_ir = true};
    CHECK(ctx, kiln_compile(g, &co, &step));
    kiln_graph_destroy(g);
    CHECK(ctx, kiln_graph_create(ctx, "mlp_eval", &g));
    CHECK(ctx, trace_eval(g));
    CHECK(ctx, kiln_compile(g, NULL, &eval));
    kiln_graph_destroy(g);

    char *report = kiln_executable_memory_report(step);
    kiln_executable_info info;
    kiln_executable_get_info(step, &info);
    printf("training step: %d kernels, %d ops\n%s\n", info.num_kernels, info.num_ops,
           report ? report : "(memory report: out of host memory)\n");
    kiln_string_free(ctx, report);

    uint64_t rng = 0x9e3779b97f4a7c15u; /* the seed */
    float data[N * IN];
    int32_t labels[N];
    make_spirals(&rng, data, labels);
    int64_t xd[2] = {N, IN};
    kiln_array *data_x, *state[3 * NP];
    CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, xd, data, &data_x));
    init_state(ctx, &rng, state);

    double acc0 = accuracy(ctx, eval, state, data_x, labels), acc = acc0;
    float loss0 = 0, loss = 0;
    printf("%6s %10s %8s %10s\n", "step", "lr", "loss", "accuracy");
    printf("%6d %10s %8s %9.1f%%\n", 0, "", "", 100 * acc0);
    for (int t = 1; t <= steps; t++) {
        /* A batch drawn at random from the dataset (with replacement). */
        float bx[BATCH * IN];
        int32_t by[BATCH];
        for (int b = 0; b < BATCH; b++) {
            int k = (int)(uniform(&rng) * N);
            bx[2 * b] = data[2 * k], bx[2 * b + 1] = data[2 * k + 1], by[b] = labels[k];
        }
        float lr = schedule(t, steps);
        int32_t step_no = t;
        int64_t bd[2] = {BATCH, IN};
        kiln_array *args[N_ARGS], *outs[N_OUTS];
        for (int i = 0; i < 3 * NP; i++) args[i] = state[i];
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, bd, bx, &args[ARG_X]));
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, bd, by, &args[ARG_Y]));
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[ARG_LR]));
        CHECK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step_no, &args[ARG_STEP]));
        CHECK(ctx, kiln_executable_run(step, N_ARGS, args, N_OUTS, outs));
        for (int i = ARG_X; i < N_ARGS; i++) kiln_array_destroy(args[i]);
        /* The donated arrays are consumed (their buffers now hold the outputs): drop the
         * handles and carry the new state into the next step. */
        for (int i = 0; i < 3 * NP; i++) {
            kiln_array_destroy(state[i]);
            state[i] = outs[i];
        }
        CHECK(ctx, kiln_array_copy_to_host(outs[OUT_LOSS], &loss, sizeof loss));
        kiln_array_destroy(outs[OUT_LOSS]);
        if (t == 1) loss0 = loss;
        if (t % every == 0 || t == steps) {
            acc = accuracy(ctx, eval, state, data_x, labels);
            printf("%6d %10.2e %8.4f %9.1f%%\n", t, (double)lr, (double)loss, 100 * acc);
        }
    }

    for (int i = 0; i < 3 * NP; i++) kiln_array_destroy(state[i]);
    kiln_array_destroy(data_x);
    kiln_executable_destroy(step);
    kiln_executable_destroy(eval);
    kiln_context_destroy(ctx);
    if (!(loss < 0.5f * loss0) || acc < acc0 + 0.2) {
        fprintf(stderr, "mlp_train: did not learn (loss %.4f -> %.4f, accuracy %.1f%% -> %.1f%%)\n",
                (double)loss0, (double)loss, 100 * acc0, 100 * acc);
        return 1;
    }
    return 0;
}
