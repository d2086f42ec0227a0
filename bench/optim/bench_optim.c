/* bench_optim.c — what an optimiser costs in memory and time: one training step of a
 * two-layer MLP (x[B, D] -> relu(x W1 + b1) [H] -> W2 + b2 [D], mean squared error against
 * y), forward, kiln_grad and update compiled as one program with the parameters and the
 * optimiser state donated, under AdamW, Lion and Adafactor (hyperparameters as
 * bench/optim/optax_jax.py gives optax's). Prints, per optimiser, "name value" lines: the
 * optimiser state's bytes, the planned peak and its parts, the measured allocator peak of
 * a step, and ms per step (the median of reps steps after 5 of warm-up, each feeding the
 * previous one's outputs back), and the loss after the timed steps (the Python side
 * checks it against optax's on the same data). Usage: bench_optim DIR [reps] [B D H].
 * Writes the initial weights and the batch to DIR for the Python side. Not a test. */
#include "kiln.h"
#include "../bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NP = 4, WARMUP = 5, MAXS = 3 };
enum opt { ADAMW, LION, ADAFACTOR, N_OPT };
static const char *const opt_names[N_OPT] = {"adamw", "lion", "adafactor"};
static int64_t B = 64, D = 1024, H = 4096;
static int64_t pdims[NP][2];
static int prank[NP];
static const char *pnames[NP] = {"w1", "b1", "w2", "b2"};

/* The optimiser's state arrays per parameter and their shapes. */
static int n_state(enum opt o) {
    return o == ADAMW ? 2 : o == LION ? 1 : 3;
}
static void state_shape(enum opt o, int i, int k, int *rank, int64_t *dims) {
    if (o != ADAFACTOR) {
        *rank = prank[i];
        memcpy(dims, pdims[i], sizeof pdims[i]);
        return;
    }
    kiln_adafactor_state_shape s;
    kiln_optim_adafactor_state_shape(NULL, prank[i], pdims[i], &s);
    *rank = k == 0 ? s.v_row_rank : k == 1 ? s.v_col_rank : s.v_rank;
    memcpy(dims, k == 0 ? s.v_row : k == 1 ? s.v_col : s.v, sizeof(int64_t) * (size_t)*rank);
}

static kiln_executable *compile(kiln_context *ctx, enum opt which) {
    kiln_graph *g;
    DIE(ctx, kiln_graph_create(ctx, opt_names[which], &g));
    int ns = n_state(which);
    kiln_value p[NP], s[MAXS][NP], grads[NP], outs[(1 + MAXS) * NP + 1];
    for (int i = 0; i < NP; i++)
        p[i] = kiln_parameter(g, pnames[i], KILN_DTYPE_F32, prank[i], pdims[i]);
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < NP; i++) {
            int r;
            int64_t d[KILN_MAX_RANK];
            state_shape(which, i, k, &r, d);
            s[k][i] = kiln_parameter(g, "state", KILN_DTYPE_F32, r, d);
        }
    int64_t xd[2] = {B, D};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, xd);
    kiln_value lr = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
    kiln_value step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_matmul(g, x, p[0]), p[1]));
    kiln_value d = kiln_sub(g, kiln_add(g, kiln_matmul(g, h, p[2]), p[3]), y);
    kiln_value loss = kiln_mean(g, kiln_mul(g, d, d), 0, NULL, false);
    kiln_grad(g, loss, NP, p, grads);
    kiln_value *np = outs, *ns_[MAXS] = {outs + NP, outs + 2 * NP, outs + 3 * NP};
    if (which == ADAMW) {
        kiln_adamw_options o = {
            .lr = lr, .step = step, .weight_decay = kiln_scalar(g, KILN_DTYPE_F64, 1e-4)};
        kiln_optim_adamw(g, &o, NP, p, grads, s[0], s[1], np, ns_[0], ns_[1]);
    } else if (which == LION) {
        kiln_lion_options o = {.lr = lr};
        kiln_optim_lion(g, &o, NP, p, grads, s[0], np, ns_[0]);
    } else {
        kiln_adafactor_options o = {.lr = lr, .step = step};
        kiln_optim_adafactor(g, &o, NP, p, grads, s[0], s[1], s[2], np, ns_[0], ns_[1], ns_[2]);
    }
    outs[(1 + ns) * NP] = loss;
    DIE(ctx, kiln_graph_finish(g, (1 + ns) * NP + 1, outs));
    int donate[(1 + MAXS) * NP];
    for (int i = 0; i < (1 + ns) * NP; i++) donate[i] = i;
    kiln_compile_options co = {.n_donate = (1 + ns) * NP, .donate_argnums = donate};
    kiln_executable *e;
    DIE(ctx, kiln_compile(g, &co, &e));
    kiln_graph_destroy(g);
    return e;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_optim DIR [reps] [B D H]\n");
        return 2;
    }
    const char *dir = argv[1];
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    reps = reps < 5 ? 5 : reps > 1000 ? 1000 : reps;
    if (argc > 5) B = atoll(argv[3]), D = atoll(argv[4]), H = atoll(argv[5]);
    int64_t dd[NP][2] = {{D, H}, {H, 0}, {H, D}, {D, 0}};
    for (int i = 0; i < NP; i++) {
        prank[i] = i % 2 ? 1 : 2;
        memcpy(pdims[i], dd[i], sizeof dd[i]);
    }
    char err[256];
    kiln_context *ctx;
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    printf("shape B %lld D %lld H %lld\n", (long long)B, (long long)D, (long long)H);

    /* torch.nn.Linear's init for the weights and biases; x and y uniform in [-1, 1) */
    uint64_t rng = 7;
    float *init[NP];
    for (int i = 0; i < NP; i++) {
        int64_t n = pdims[i][0] * (prank[i] == 2 ? pdims[i][1] : 1);
        init[i] = malloc((size_t)n * 4);
        double bound = 1 / sqrt((double)(i < 2 ? D : H));
        for (int64_t j = 0; j < n; j++) init[i][j] = (float)(bound * (2 * bench_uniform(&rng) - 1));
        char f[32];
        snprintf(f, sizeof f, "init_%s.f32", pnames[i]);
        bench_write_file(dir, f, init[i], (size_t)n * 4);
    }
    int64_t xd[2] = {B, D};
    float *xy = malloc((size_t)(2 * B * D) * 4);
    for (int64_t j = 0; j < 2 * B * D; j++) xy[j] = (float)(2 * bench_uniform(&rng) - 1);
    bench_write_file(dir, "x.f32", xy, (size_t)(B * D) * 4);
    bench_write_file(dir, "y.f32", xy + B * D, (size_t)(B * D) * 4);
    kiln_array *x, *y;
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, xd, xy, &x));
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, xd, xy + B * D, &y));

    for (int which = 0; which < N_OPT; which++) {
        const char *nm = opt_names[which];
        int ns = n_state(which), n_carry = (1 + ns) * NP;
        kiln_executable *e = compile(ctx, which);
        kiln_memory_analysis ma;
        DIE(ctx, kiln_executable_get_memory_analysis(e, &ma));
        kiln_array *carry[(1 + MAXS) * NP], *args[(1 + MAXS) * NP + 4], *outs[(1 + MAXS) * NP + 1];
        uint64_t state_bytes = 0;
        for (int i = 0; i < NP; i++)
            DIE(ctx,
                kiln_array_create(ctx, KILN_DTYPE_F32, prank[i], pdims[i], init[i], &carry[i]));
        for (int k = 0; k < ns; k++)
            for (int i = 0; i < NP; i++) {
                int r;
                int64_t d[KILN_MAX_RANK];
                state_shape(which, i, k, &r, d);
                kiln_array **a = &carry[(1 + k) * NP + i];
                DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, r, d, NULL, a));
                state_bytes += kiln_array_nbytes(*a);
            }
        double t[1000 + WARMUP];
        float loss = 0;
        uint64_t measured = 0;
        for (int s = 1; s <= WARMUP + reps; s++) {
            float lr = which == LION ? 1e-4f : 1e-3f;
            int32_t step = s;
            memcpy(args, carry, sizeof(kiln_array *) * (size_t)n_carry);
            args[n_carry] = x, args[n_carry + 1] = y;
            DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &lr, &args[n_carry + 2]));
            DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &step, &args[n_carry + 3]));
            kiln_device_reset_peak(ctx, 0);
            double t0 = now();
            DIE(ctx, kiln_executable_run(e, n_carry + 4, args, n_carry + 1, outs));
            DIE(ctx, kiln_array_copy_to_host(outs[n_carry], &loss, sizeof loss));
            t[s - 1] = now() - t0;
            kiln_memory_stats st;
            if (!kiln_device_get_memory_stats(ctx, 0, &st) && st.peak_bytes_in_use > measured)
                measured = st.peak_bytes_in_use;
            kiln_array_destroy(args[n_carry + 2]), kiln_array_destroy(args[n_carry + 3]);
            kiln_array_destroy(outs[n_carry]);
            for (int i = 0; i < n_carry; i++) kiln_array_destroy(carry[i]), carry[i] = outs[i];
        }
        printf("%s_state_bytes %llu\n", nm, (unsigned long long)state_bytes);
        printf("%s_planned_peak_bytes %llu\n", nm, (unsigned long long)ma.peak_bytes);
        printf("%s_argument_bytes %llu\n", nm, (unsigned long long)ma.argument_bytes);
        printf("%s_temp_bytes %llu\n", nm, (unsigned long long)ma.temp_bytes);
        printf("%s_measured_peak_bytes %llu\n", nm, (unsigned long long)measured);
        double ms = median(t + WARMUP, reps) * 1e3;
        /* the products: forward x W1, h W2; backward dW2, dh, dW1 (none for x) */
        printf("%s_step_ms %.3f (%.1f GFLOP/s of products)\n", nm, ms,
               2.0 * 5 * (double)(B * D * H) / (ms * 1e-3) / 1e9);
        printf("%s_loss_after %d %.9g\n", nm, WARMUP + reps, (double)loss);
        for (int i = 0; i < n_carry; i++) kiln_array_destroy(carry[i]);
        kiln_executable_destroy(e);
    }
    const char *lib = "";
    printf("sgemm_1024_GFLOPs %.1f (the ceiling: the same threads)\n",
           sgemm_ceiling_of(reps, &lib));
    printf("sgemm_1024_library %s\n", lib);
    for (int i = 0; i < NP; i++) free(init[i]);
    free(xy);
    kiln_array_destroy(x), kiln_array_destroy(y);
    kiln_context_destroy(ctx);
    return 0;
}
