/* bench_math.c — the elementwise math functions, f32 and f64, one op on N elements a
 * program, compiled, timed warm: ns per element (median of R runs), beside
 * bench/math/math_jax.py's figures for jax.jit of the same functions (run.sh runs both).
 * Usage: bench_math [N] [R]. KILN_NUM_THREADS sets the threads (run.sh: 1). */
#include "kiln.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef kiln_value (*unary_fn)(kiln_graph *, kiln_value);
static const struct {
    const char *name;
    unary_fn fn;
    double lo, hi; /* the inputs: uniform on [lo, hi) */
} ops[] = {
    {"exp", kiln_exp, -10, 10},         {"tanh", kiln_tanh, -5, 5},
    {"erf", kiln_erf, -4, 4},           {"expm1", kiln_expm1, -10, 10},
    {"tan", kiln_tan, -1.5, 1.5},       {"sinh", kiln_sinh, -10, 10},
    {"cosh", kiln_cosh, -10, 10},       {"asin", kiln_asin, -1, 1},
    {"acos", kiln_acos, -1, 1},         {"atan", kiln_atan, -10, 10},
    {"asinh", kiln_asinh, -10, 10},     {"acosh", kiln_acosh, 1, 10},
    {"atanh", kiln_atanh, -1, 1},       {"erfc", kiln_erfc, -4, 4},
    {"erf_inv", kiln_erf_inv, -1, 1},   {"lgamma", kiln_lgamma, 0.1, 10},
    {"digamma", kiln_digamma, 0.1, 10}, {"cbrt", kiln_cbrt, -10, 10},
    {"round", kiln_round, -10, 10},     {"ceil", kiln_ceil, -10, 10},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 1 << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 15;
    kiln_context *ctx = NULL;
    char err[512];
    /* the optimised build from the first call (compile_tiers 1): else, with kernels not yet
     * in the disk cache, the timed calls run on the first tier's interpreter */
    kiln_context_options copts = {.compile_tiers = 1};
    if (kiln_context_create(&copts, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double *h = malloc(sizeof(double) * (size_t)n), *t = malloc(sizeof(double) * (size_t)reps);
    float *hf = malloc(sizeof(float) * (size_t)n);
    printf("kiln: ns per element, %lld elements, median of %d (f32, f64)\n", (long long)n, reps);
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        printf("%-8s", ops[k].name);
        for (int d = 0; d < 2; d++) {
            kiln_dtype dt = d ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
            uint64_t s = 12345;
            for (int64_t i = 0; i < n; i++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                double u = (double)(s >> 11) * 0x1p-53;
                h[i] = ops[k].lo + (ops[k].hi - ops[k].lo) * u;
                hf[i] = (float)h[i];
            }
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, ops[k].name, &g);
            kiln_value x = kiln_parameter(g, "x", dt, 1, &n), y = ops[k].fn(g, x);
            kiln_executable *e = NULL;
            kiln_array *a = NULL, *o = NULL;
            if (kiln_graph_finish(g, 1, &y) || kiln_compile(g, NULL, &e) ||
                kiln_array_create(ctx, dt, 1, &n, d ? (void *)h : (void *)hf, &a)) {
                fprintf(stderr, "%s: %s\n", ops[k].name, kiln_last_error(ctx));
                return 1;
            }
            for (int r = -2; r < reps; r++) { /* two warm-up runs */
                double t0 = now();
                kiln_executable_run(e, 1, &a, 1, &o);
                double dt_s = now() - t0;
                kiln_array_destroy(o);
                if (r >= 0) t[r] = dt_s;
            }
            qsort(t, (size_t)reps, sizeof *t, cmp);
            printf(" %8.2f", t[reps / 2] * 1e9 / (double)n);
            kiln_array_destroy(a);
            kiln_executable_destroy(e);
            kiln_graph_destroy(g);
        }
        printf("\n");
    }
    free(h), free(hf), free(t);
    kiln_context_destroy(ctx);
    return 0;
}
