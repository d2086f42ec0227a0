/* bench_matmul.c — kiln_matmul through the public API, f32 and f64, square products of
 * 1024 and 2048, with the context's default GEMM provider (KILN_BLAS to choose another):
 * GFLOP/s, the median of reps calls after a warm-up. bench/gemm/matmul.sh prints JAX's and
 * NumPy's figures for the same products beside these. Also prints which core OpenBLAS
 * runs here (openblas_get_corename): on a CPU model newer than the library it falls back to
 * its oldest kernels, and kiln's default then leaves it (src/backend/cpu/blas.h). Prints
 * only; nothing fails on time. Usage: bench_matmul [reps] (default 7). */
#include "../bench_util.h"

#include <string.h>

static double gflops(kiln_context *ctx, kiln_dtype t, int n, int reps) {
    kiln_graph *g;
    DIE(ctx, kiln_graph_create(ctx, "matmul", &g));
    int64_t d[2] = {n, n};
    kiln_value y = kiln_matmul(g, kiln_parameter(g, "a", t, 2, d), kiln_parameter(g, "b", t, 2, d));
    DIE(ctx, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = NULL;
    DIE(ctx, kiln_compile(g, NULL, &e));
    size_t es = kiln_dtype_itemsize(t), m = (size_t)n * n;
    unsigned char *buf = malloc(m * es);
    uint64_t seed = 3;
    kiln_array *args[2];
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; j < m; j++) {
            double v = bench_uniform(&seed) * 2 - 1;
            if (t == KILN_DTYPE_F64)
                memcpy(buf + j * 8, &v, 8);
            else {
                float f = (float)v;
                memcpy(buf + j * 4, &f, 4);
            }
        }
        DIE(ctx, kiln_array_create(ctx, t, 2, d, buf, &args[i]));
    }
    free(buf);
    double ts[64];
    for (int r = 0; r <= reps; r++) {
        kiln_array *out = NULL;
        double t0 = now();
        DIE(ctx, kiln_executable_run(e, 2, args, 1, &out));
        DIE(ctx, kiln_array_block_until_ready(out));
        if (r) ts[r - 1] = now() - t0;
        kiln_array_destroy(out);
    }
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return 2.0 * n * n * n / median(ts, reps) / 1e9;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1 || reps > 63) reps = 7;
    bench_one_tier();
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const char *blas = getenv("KILN_BLAS");
    printf("OpenBLAS core here: %s; KILN_BLAS=%s\n", openblas_get_corename(),
           blas && *blas ? blas : "(default)");
    printf("| product | kiln f32 (GFLOP/s) | kiln f64 (GFLOP/s) |\n|---|---|---|\n");
    for (int n = 1024; n <= 2048; n *= 2) {
        double f = gflops(ctx, KILN_DTYPE_F32, n, reps), d = gflops(ctx, KILN_DTYPE_F64, n, reps);
        printf("| %d^3 | %.1f | %.1f |\n", n, f, d);
        fflush(stdout);
    }
    kiln_context_destroy(ctx);
    return 0;
}
