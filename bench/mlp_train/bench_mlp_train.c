/* bench_mlp_train.c — kiln's side of the training-step benchmark (issue 9, "Figures"):
 * MLP 784-512-512-10 (ReLU), batch 256, mean softmax cross-entropy, AdamW, f32, the whole
 * step (forward, kiln_grad, update) compiled as one program with the parameters and the
 * optimiser state donated.
 *
 * Usage: bench_mlp_train DIR [reps]
 * Writes the initial weights and the batch to DIR as raw little-endian files (the JAX and
 * PyTorch sides read them, so every side starts from the same numbers), then kiln's loss
 * and gradients at step 0 and its parameters after one AdamW step (the Python side
 * compares them with JAX's), then times the step: ms per step is the median of `reps`
 * (>= 20) steps after 5 of warm-up, each step feeding the previous one's outputs back as
 * a training loop does. Prints "name value" lines; also the sgemm rate of the machine
 * (OpenBLAS, 1024^3, the same threads) as the ceiling. Not a test: never fails on time. */
#include "kiln.h"
#include "../bench_util.h"

#include <cblas.h>
#include <sys/resource.h>
#include <unistd.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { B = 256, D0 = 784, D1 = 512, D2 = 512, D3 = 10, NP = 6, WARMUP = 5 };
enum { ARG_M = NP, ARG_V = 2 * NP, ARG_X = 3 * NP, ARG_Y, ARG_LR, ARG_STEP, N_ARGS };
enum { OUT_LOSS = 3 * NP, N_OUTS };

static const int64_t dims[NP][2] = {{D0, D1}, {D1, 0}, {D1, D2}, {D2, 0}, {D2, D3}, {D3, 0}};
static const char *names[NP] = {"w1", "b1", "w2", "b2", "w3", "b3"};
static int rank_of(int i) {
    return i % 2 ? 1 : 2;
}
static int64_t size_of(int i) {
    return dims[i][0] * (i % 2 ? 1 : dims[i][1]);
}

static void write_array(const char *dir, const char *name, const kiln_array *a) {
    size_t n = kiln_array_nbytes(a);
    void *p = malloc(n);
    if (!p || kiln_array_copy_to_host(a, p, n)) exit(1);
    bench_write_file(dir, name, p, n);
    free(p);
}

/* The model and its loss; `with_update` appends the AdamW step (else the outputs are the
 * loss and the gradients, for the comparison with JAX). */
static kiln_status trace(kiln_graph *g, bool with_update) {
    kiln_value a[N_ARGS];
    char name[16];
    int nstate = with_update ? 3 : 1;
    for (int k = 0; k < nstate; k++)
        for (int i = 0; i < NP; i++) {
            snprintf(name, sizeof name, "%s%s", k == 0 ? "" : k == 1 ? "m_" : "v_", names[i]);
            a[k * NP + i] = kiln_parameter(g, name, KILN_DTYPE_F32, rank_of(i), dims[i]);
        }
    int64_t xd[2] = {B, D0}, yd[1] = {B};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_I32, 1, yd);
    const kiln_value *p = a;
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_matmul(g, x, p[0]), p[1]));
    h = kiln_relu(g, kiln_add(g, kiln_matmul(g, h, p[2]), p[3]));
    kiln_value logits = kiln_add(g, kiln_matmul(g, h, p[4]), p[5]);
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, y), 0, NULL, false);
    kiln_value grads[NP], outs[N_OUTS];
    kiln_grad(g, loss, NP, p, grads);
    if (!with_update) {
        outs[0] = loss;
        memcpy(outs + 1, grads, sizeof grads);
        return kiln_graph_finish(g, 1 + NP, outs);
    }
    kiln_adamw_options o = {.lr = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL),
                            .step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL),
                            .weight_decay = kiln_scalar(g, KILN_DTYPE_F64, 1e-2)};
    kiln_optim_adamw(g, &o, NP, p, grads, a + ARG_M, a + ARG_V, outs, outs + NP, outs + 2 * NP);
    outs[OUT_LOSS] = loss;
    return kiln_graph_finish(g, N_OUTS, outs);
}

/* User + system CPU seconds of the child processes waited for so far (the C compiler). */
static double children_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static kiln_executable *compile(kiln_context *ctx, bool with_update) {
    kiln_graph *g;
    kiln_executable *e;
    DIE(ctx, kiln_graph_create(ctx, with_update ? "mlp_train_step" : "mlp_loss_grad", &g));
    DIE(ctx, trace(g, with_update));
    int donate[3 * NP];
    for (int i = 0; i < 3 * NP; i++) donate[i] = i;
    kiln_compile_options o = {.n_donate = with_update ? 3 * NP : 0, .donate_argnums = donate};
    DIE(ctx, kiln_compile(g, &o, &e));
    kiln_graph_destroy(g);
    return e;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_mlp_train DIR [reps >= 20]\n");
        return 2;
    }
    const char *dir = argv[1];
    int reps = argc > 2 ? atoi(argv[2]) : 30;
    reps = reps < 20 ? 20 : reps > 1000 ? 1000 : reps;
    char err[256];
    kiln_context *ctx;
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;

    /* The shared starting point: torch.nn.Linear's init, U(-1/sqrt(fan_in), 1/sqrt(fan_in))
     * for weights and biases; pixels in [0, 1); labels uniform over the classes. */
    uint64_t rng = 42;
    kiln_array *state[3 * NP], *x, *y;
    for (int i = 0; i < NP; i++) {
        int64_t n = size_of(i);
        float *w = malloc((size_t)n * 4);
        if (!w) return 1;
        double bound = 1 / sqrt((double)dims[i - i % 2][0]);
        for (int64_t j = 0; j < n; j++) w[j] = (float)(bound * (2 * bench_uniform(&rng) - 1));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank_of(i), dims[i], w, &state[i]));
        char fname[32];
        snprintf(fname, sizeof fname, "init_%s.f32", names[i]);
        bench_write_file(dir, fname, w, (size_t)n * 4);
        free(w);
        for (int k = 1; k < 3; k++)
            DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank_of(i), dims[i], NULL,
                                       &state[k * NP + i]));
    }
    {
        static float xb[B * D0];
        static int32_t yb[B];
        for (int j = 0; j < B * D0; j++) xb[j] = (float)bench_uniform(&rng);
        for (int j = 0; j < B; j++) yb[j] = (int32_t)(bench_uniform(&rng) * D3);
        int64_t xd[2] = {B, D0}, yd[1] = {B};
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, xd, xb, &x));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, yd, yb, &y));
        bench_write_file(dir, "x.f32", xb, sizeof xb);
        bench_write_file(dir, "y.i32", yb, sizeof yb);
    }

    /* Loss and gradients at step 0. */
    kiln_executable *lg = compile(ctx, false);
    kiln_array *args[N_ARGS], *outs[N_OUTS];
    for (int i = 0; i < NP; i++) args[i] = state[i];
    args[NP] = x, args[NP + 1] = y;
    DIE(ctx, kiln_executable_run(lg, NP + 2, args, 1 + NP, outs));
    write_array(dir, "kiln_loss.f32", outs[0]);
    for (int i = 0; i < NP; i++) {
        char fname[32];
        snprintf(fname, sizeof fname, "kiln_grad_%s.f32", names[i]);
        write_array(dir, fname, outs[1 + i]);
    }
    for (int i = 0; i <= NP; i++) kiln_array_destroy(outs[i]);
    kiln_executable_destroy(lg);

    /* The training step: timed over a loop that feeds its outputs back. Its first call
     * (trace + compile, with the empty kernel cache run.sh gives, + the first step) is
     * timed as JAX's first call of a fresh jit is. */
    double first0 = now(), cpu0 = children_cpu();
    kiln_executable *e = compile(ctx, true);
    double compile_s = now() - first0, compile_cpu = children_cpu() - cpu0;
    kiln_executable_info info;
    kiln_memory_analysis ma;
    kiln_executable_get_info(e, &info);
    DIE(ctx, kiln_executable_get_memory_analysis(e, &ma));
    args[ARG_X] = x, args[ARG_Y] = y;
    double t[1024 + WARMUP];
    for (int s = 1; s <= WARMUP + reps; s++) {
        float lr = 1e-3f;
        int32_t step = s;
        double t0 = now();
        for (int i = 0; i < 3 * NP; i++) args[i] = state[i];
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[ARG_LR]));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step, &args[ARG_STEP]));
        DIE(ctx, kiln_executable_run(e, N_ARGS, args, N_OUTS, outs));
        kiln_array_destroy(args[ARG_LR]), kiln_array_destroy(args[ARG_STEP]);
        for (int i = 0; i < 3 * NP; i++) kiln_array_destroy(state[i]), state[i] = outs[i];
        float loss;
        DIE(ctx, kiln_array_copy_to_host(outs[OUT_LOSS], &loss, sizeof loss));
        kiln_array_destroy(outs[OUT_LOSS]);
        t[s - 1] = now() - t0;
        if (s == 1) /* the parameters after one step, for the comparison */
            for (int i = 0; i < NP; i++) {
                char fname[32];
                snprintf(fname, sizeof fname, "kiln_step1_%s.f32", names[i]);
                write_array(dir, fname, state[i]);
            }
    }
    double ms = median(t + WARMUP, reps) * 1e3;
    /* Matrix-product flops: forward (3 products), weight gradients (3), input gradients of
     * layers 2 and 3 (the input x needs none). */
    double flops = 2.0 * B * (2.0 * D0 * D1 + 3.0 * D1 * D2 + 3.0 * D2 * D3);
    printf("kiln_step_ms %.3f\n", ms);
    printf("kiln_first_call_ms %.1f\n", (compile_s + t[0]) * 1e3);
    printf("kiln_compile_ms %.1f\n", compile_s * 1e3);
    /* the C compiler's own CPU time: on a busy machine, where wall time is mostly waiting */
    printf("kiln_compiler_cpu_ms %.1f\n", compile_cpu * 1e3);
    printf("kiln_step_GFLOPs %.1f\n", flops / (ms * 1e-3) / 1e9);
    printf("step_gemm_MFLOP %.1f\n", flops / 1e6);
    printf("kiln_kernels %d\n", info.num_kernels);
    printf("kiln_peak_bytes %llu\n", (unsigned long long)ma.peak_bytes);
    printf("kiln_argument_bytes %llu\n", (unsigned long long)ma.argument_bytes);
    printf("kiln_output_bytes %llu\n", (unsigned long long)ma.output_bytes);
    printf("kiln_temp_bytes %llu\n", (unsigned long long)ma.temp_bytes);
    printf("kiln_alias_bytes %llu\n", (unsigned long long)ma.alias_bytes);
    printf("kiln_donations_unused %d\n", ma.num_donations_unused);
    const char *lib = "";
    printf("sgemm_1024_GFLOPs %.1f\n", sgemm_ceiling_of(reps, &lib));
    printf("sgemm_1024_library %s\n", lib);

    for (int i = 0; i < 3 * NP; i++) kiln_array_destroy(state[i]);
    kiln_array_destroy(x), kiln_array_destroy(y);
    kiln_executable_destroy(e);
    kiln_context_destroy(ctx);
    return 0;
}
