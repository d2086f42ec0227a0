/* bench_random.c — the generator's speed (src/trace/random.c): milliseconds per call and
 * elements per second for uniform f32, normal f32 and dropout(x, 0.1) of a 4096 x 4096
 * f32 array, each one compiled program with the key as an argument, on the CPU's pool.
 * bench/random/run.sh prints JAX's figures for the same calls next to these. Prints only;
 * nothing fails on time. Usage: bench_random [reps] (default 7; figures are medians). */
#include "../bench_util.h"

#define N 4096

static double run_ms(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args, int reps) {
    kiln_executable *e = NULL;
    DIE(ctx, kiln_compile(g, NULL, &e));
    double t[64];
    for (int r = 0; r <= reps; r++) { /* the first run warms the pages and the pool */
        kiln_array *out = NULL;
        double t0 = now();
        DIE(ctx, kiln_executable_run(e, n_args, args, 1, &out));
        DIE(ctx, kiln_array_block_until_ready(out));
        if (r) t[r - 1] = (now() - t0) * 1e3;
        kiln_array_destroy(out);
    }
    kiln_executable_destroy(e);
    return median(t, reps);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 63) reps = 7;
    kiln_context *ctx = NULL;
    char err[512];
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int64_t d[2] = {N, N}, kd[1] = {2};
    int32_t key_words[2] = {0, 42};
    float *ones = malloc((size_t)N * N * sizeof *ones);
    for (size_t i = 0; i < (size_t)N * N; i++) ones[i] = 1;
    kiln_array *args[2] = {0};
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, kd, key_words, &args[0]));
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, ones, &args[1]));
    free(ones);
    static const char *const names[3] = {"uniform f32", "normal f32", "dropout(x, 0.1)"};
    for (int k = 0; k < 3; k++) {
        kiln_graph *g = NULL;
        DIE(ctx, kiln_graph_create(ctx, "draw", &g));
        kiln_value key = kiln_parameter(g, "key", KILN_DTYPE_I32, 1, kd), y;
        if (k == 2) {
            kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
            y = kiln_dropout(g, key, x, 0.1);
        } else {
            y = k ? kiln_random_normal(g, key, KILN_DTYPE_F32, 2, d)
                  : kiln_random_uniform(g, key, KILN_DTYPE_F32, 2, d, 0, 1);
        }
        DIE(ctx, kiln_graph_finish(g, 1, &y));
        double ms = run_ms(ctx, g, k == 2 ? 2 : 1, args, reps);
        printf("%-16s %4dx%d  %8.2f ms  %6.1f M elements/s\n", names[k], N, N, ms,
               (double)N * N / ms * 1e-3);
        kiln_graph_destroy(g);
    }
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_context_destroy(ctx);
    return 0;
}
