/* bench_sort.c — kiln_top_k and kiln_sort of a [B, V] f32 logits array (GPT-2's
 * vocabulary by default) on the CPU: milliseconds per call, the median of REPS calls after
 * a warm-up, each the compiled program alone (the compile is not timed). The JAX side is
 * bench/sort/sort_jax.py; bench/sort/run.sh runs both.
 *
 *   bench_sort [B] [V] [K] [REPS]
 *
 * Correctness is tests/test_sort.c's (the same [4, 50257] top_k and sort against the
 * reference). */
#include "../bench_util.h"

static kiln_executable *build(kiln_context *ctx, int64_t b, int64_t v, int k, int what) {
    kiln_graph *g = NULL;
    int64_t d[2] = {b, v};
    if (kiln_graph_create(ctx, "sort", &g)) return NULL;
    kiln_value x = kiln_parameter(g, "logits", KILN_DTYPE_F32, 2, d), outs[2];
    int n = 1;
    if (what == 0) {
        kiln_top_k(g, x, k, &outs[0], &outs[1]);
        n = 2;
    } else if (what == 1)
        kiln_sort(g, 1, &x, 1, 1, false, outs);
    else
        outs[0] = kiln_argsort(g, x, 1, false);
    kiln_executable *e = NULL;
    if (kiln_graph_finish(g, n, outs) || kiln_compile(g, NULL, &e)) {
        fprintf(stderr, "bench_sort: %s\n", kiln_last_error(ctx));
        exit(1);
    }
    kiln_graph_destroy(g);
    return e;
}

static double time_it(kiln_executable *e, int n_out, kiln_array *x, int reps) {
    double *t = malloc((size_t)reps * sizeof *t);
    kiln_array *outs[2] = {0};
    for (int r = -2; r < reps; r++) {
        double t0 = now();
        if (kiln_executable_run(e, 1, &x, n_out, outs)) exit(1);
        if (r >= 0) t[r] = now() - t0;
        kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
        outs[0] = outs[1] = NULL;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    double m = t[reps / 2];
    free(t);
    return m;
}

int main(int argc, char **argv) {
    int64_t b = argc > 1 ? atoll(argv[1]) : 64, v = argc > 2 ? atoll(argv[2]) : 50257;
    int k = argc > 3 ? atoi(argv[3]) : 50, reps = argc > 4 ? atoi(argv[4]) : 20;
    kiln_context *ctx = NULL;
    char err[256];
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "bench_sort: %s\n", err);
        return 1;
    }
    float *h = malloc((size_t)(b * v) * sizeof *h);
    uint64_t s = 42;
    for (int64_t i = 0; i < b * v; i++) h[i] = (float)(8 * bench_uniform(&s) - 4);
    int64_t d[2] = {b, v};
    kiln_array *x = NULL;
    if (kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, h, &x)) return 1;
    static const char *const names[3] = {"top_k", "sort", "argsort"};
    for (int what = 0; what < 3; what++) {
        kiln_executable *e = build(ctx, b, v, k, what);
        printf("kiln %-8s [%lld, %lld]%s: %.3f ms\n", names[what], (long long)b, (long long)v,
               what ? "" : " k=50", 1e3 * time_it(e, what ? 1 : 2, x, reps));
        kiln_executable_destroy(e);
    }
    kiln_array_destroy(x);
    free(h);
    kiln_context_destroy(ctx);
    return 0;
}
