/* bench_half.c — 16-bit storage on the CPU (issue 31, item 2): element rates of one
 * elementwise chain in f32, bf16 and f16 at a size far beyond the caches (the 16-bit
 * chains move half the bytes), and GFLOP/s of one matrix product in the three types, with
 * the machine's copy bandwidth and OpenBLAS's sgemm rate measured in the same run.
 * bench/half/run.sh prints JAX's figures for the same work next to these. Prints only;
 * nothing fails on time. The 16-bit chains run twice: rounding after every op (the default)
 * and with allow_excess_precision (rounding where stored). Usage: bench_half [reps]
 * [chain|matmul] [row] (default 9 reps, both; figures are medians; a skipped part prints
 * ones; row: the chain over rows of that many elements, about 64 Mi in all, where a row
 * that is no multiple of 32 ends in a partial block of the staged stores, print_c.c). */
#include "../bench_util.h"

#include <string.h>

#define CHAIN_N (64ll << 20) /* 64 Mi elements: 256 MiB in f32, 128 MiB in 16 bits */
#define MM      2048

static int64_t chain_row; /* > 0: the chain over [CHAIN_N / chain_row, chain_row] */

static double run_s(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args, int reps,
                    const kiln_compile_options *o) {
    kiln_executable *e = NULL;
    DIE(ctx, kiln_compile(g, o, &e));
    double t[64];
    for (int r = 0; r <= reps; r++) { /* the first run warms the pages and the pool */
        kiln_array *out = NULL;
        double t0 = now();
        DIE(ctx, kiln_executable_run(e, n_args, args, 1, &out));
        DIE(ctx, kiln_array_block_until_ready(out));
        if (r) t[r - 1] = now() - t0;
        kiln_array_destroy(out);
    }
    kiln_executable_destroy(e);
    return median(t, reps);
}

/* Writes n values of dtype t, uniform in [-1, 1), to buf (for f16 the top bits of the f32
 * value's pattern: any finite value below 1 will do). */
static void fill(kiln_dtype t, size_t n, unsigned char *buf, uint64_t *seed) {
    for (size_t j = 0; j < n; j++) {
        float v = (float)(bench_uniform(seed) * 2 - 1);
        if (t == KILN_DTYPE_F32)
            memcpy(buf + j * 4, &v, 4);
        else {
            uint32_t u;
            memcpy(&u, &v, 4);
            uint16_t h = t == KILN_DTYPE_BF16 ? (uint16_t)(u >> 16) : (uint16_t)(u >> 19 & 0x3bff);
            memcpy(buf + j * 2, &h, 2);
        }
    }
}

/* y = ((x * 1.5 + 0.25) * x - 0.5) * 0.75: five ops, one read and one write per element;
 * excess: allow_excess_precision (a 16-bit chain rounds once, where stored). */
static double chain_rate(kiln_context *ctx, kiln_dtype t, int reps, bool excess) {
    kiln_graph *g;
    DIE(ctx, kiln_graph_create(ctx, "chain", &g));
    int64_t d[2] = {CHAIN_N, 1};
    int rank = 1;
    if (chain_row > 0) d[0] = CHAIN_N / chain_row, d[1] = chain_row, rank = 2;
    int64_t n = d[0] * d[1];
    kiln_value x = kiln_parameter(g, "x", t, rank, d);
    kiln_value y = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, t, 1.5)), kiln_scalar(g, t, 0.25));
    y = kiln_mul(g, kiln_sub(g, kiln_mul(g, y, x), kiln_scalar(g, t, 0.5)),
                 kiln_scalar(g, t, 0.75));
    DIE(ctx, kiln_graph_finish(g, 1, &y));
    kiln_array *a = NULL;
    unsigned char *xs = malloc((size_t)n * kiln_dtype_itemsize(t));
    uint64_t seed = 11;
    fill(t, (size_t)n, xs, &seed);
    DIE(ctx, kiln_array_create(ctx, t, rank, d, xs, &a));
    free(xs);
    kiln_compile_options o = {.allow_excess_precision = excess};
    double s = run_s(ctx, g, 1, &a, reps, &o);
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
    return (double)n / s;
}

static double matmul_gflops(kiln_context *ctx, kiln_dtype t, int reps) {
    kiln_graph *g;
    DIE(ctx, kiln_graph_create(ctx, "matmul", &g));
    int64_t d[2] = {MM, MM};
    kiln_value y = kiln_matmul(g, kiln_parameter(g, "a", t, 2, d), kiln_parameter(g, "b", t, 2, d));
    DIE(ctx, kiln_graph_finish(g, 1, &y));
    kiln_array *args[2] = {0};
    uint64_t seed = 7;
    size_t n = (size_t)MM * MM, es = kiln_dtype_itemsize(t);
    unsigned char *buf = malloc(n * es);
    for (int i = 0; i < 2; i++) {
        fill(t, n, buf, &seed);
        DIE(ctx, kiln_array_create(ctx, t, 2, d, buf, &args[i]));
    }
    free(buf);
    double s = run_s(ctx, g, 2, args, reps, NULL);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
    return 2.0 * MM * MM * MM / s / 1e9;
}

/* memcpy of 256 MiB on one thread: bytes read plus bytes written per second. */
static double copy_gbs(int reps) {
    size_t n = (size_t)CHAIN_N * 4;
    char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n), memset(b, 2, n);
    double t[64];
    for (int r = 0; r <= reps; r++) {
        double t0 = now();
        memcpy(b, a, n);
        if (r) t[r - 1] = now() - t0;
    }
    free(a), free(b);
    return 2.0 * (double)n / median(t, reps) / 1e9;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 9;
    const char *only = argc > 2 ? argv[2] : "";
    chain_row = argc > 3 ? atoll(argv[3]) : 0;
    if (argc > 3 && (chain_row < 1 || chain_row > CHAIN_N)) {
        fprintf(stderr, "bench_half: row %s: give a row length from 1 to %lld elements\n", argv[3],
                (long long)CHAIN_N);
        return 2;
    }
    bool chains = strcmp(only, "matmul") != 0, products = strcmp(only, "chain") != 0;
    if (reps < 1 || reps > 63) reps = 9;
    kiln_context *ctx = NULL;
    char err[512];
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("copy (memcpy, 1 thread): %.1f GB/s read+write\n", copy_gbs(reps));
    const char *lib = "";
    double ceiling = sgemm_ceiling_of(reps, &lib);
    printf("sgemm 1024^3 (%s): %.1f GFLOP/s\n", lib, ceiling);
    static const kiln_dtype ts[3] = {KILN_DTYPE_F32, KILN_DTYPE_BF16, KILN_DTYPE_F16};
    double f32_chain = 0, f32_mm = 0;
    printf("| dtype | chain 64Mi (Gelem/s) | vs f32 | chain, excess precision | vs f32 | matmul "
           "%d^3 (GFLOP/s) | vs f32 |\n",
           MM);
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < 3; i++) {
        double c = chains ? chain_rate(ctx, ts[i], reps, false) : 0;
        double x = chains && i ? chain_rate(ctx, ts[i], reps, true) : c;
        double m = products ? matmul_gflops(ctx, ts[i], reps) : 0;
        if (!i) f32_chain = c, f32_mm = m;
        if (!chains) c = x = f32_chain = 1;
        if (!products) m = f32_mm = 1;
        printf("| %s | %.3f | %.2fx | %.3f | %.2fx | %.1f | %.2fx |\n", kiln_dtype_name(ts[i]),
               c / 1e9, c / f32_chain, x / 1e9, x / f32_chain, m, m / f32_mm);
        fflush(stdout);
    }
    kiln_context_destroy(ctx);
    return 0;
}
