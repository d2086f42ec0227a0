/* bench_linalg.c — kiln's linear algebra on the CPU: the Cholesky factor of one large
 * matrix and of a batch of small ones, a triangular solve with many right-hand sides, and
 * a Gaussian process's negative log marginal likelihood with its gradient with respect to
 * the kernel matrix (cholesky, cho_solve and their VJPs in one program). Prints "kiln NAME
 * ms" lines, the median of REPS runs after two of warm-up (the compile not timed), the
 * GFLOP/s of LAPACK's count where it has one, and the sgemm ceiling of the same run.
 * Writes each input and result to DIR for bench/linalg/linalg_jax.py, which runs the same
 * work in JAX and compares. Usage: bench_linalg DIR [REPS]. Not a test: test_linalg.c
 * holds the values. */
#include "../bench_util.h"

#include <math.h>

typedef enum { CHOLESKY, SOLVE, GP } kind;

typedef struct bcase {
    const char *name;
    kind k;
    kiln_dtype t;
    int64_t n, batch, nrhs;
} bcase;

static const bcase cases[] = {
    {"cholesky_1024", CHOLESKY, KILN_DTYPE_F32, 1024, 1, 0},
    {"cholesky_1024", CHOLESKY, KILN_DTYPE_F64, 1024, 1, 0},
    {"cholesky_256x64", CHOLESKY, KILN_DTYPE_F32, 64, 256, 0},
    {"solve_1024x256", SOLVE, KILN_DTYPE_F32, 1024, 1, 256},
    {"gp_nll_grad_512", GP, KILN_DTYPE_F64, 512, 1, 0},
};

static const char *dir;
static int reps = 11;

/* A positive definite batch: x x^T / n + I from uniform x; host values of t. */
static void *spd(kiln_dtype t, int64_t batch, int64_t n, uint64_t *s) {
    double *x = malloc((size_t)(n * n) * sizeof *x), *m = malloc((size_t)(n * n) * sizeof *m);
    size_t isz = kiln_dtype_itemsize(t);
    char *out = malloc((size_t)(batch * n * n) * isz);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < n * n; i++) x[i] = 2 * bench_uniform(s) - 1;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
                    1.0 / (double)n, x, (int)n, x, (int)n, 0.0, m, (int)n);
        for (int64_t i = 0; i < n; i++) m[i * n + i] += 1;
        for (int64_t i = 0; i < n * n; i++) {
            if (t == KILN_DTYPE_F32)
                ((float *)out)[b * n * n + i] = (float)m[i];
            else
                ((double *)out)[b * n * n + i] = m[i];
        }
    }
    free(x), free(m);
    return out;
}

static void *uniform(kiln_dtype t, int64_t n, uint64_t *s) {
    size_t isz = kiln_dtype_itemsize(t);
    char *out = malloc((size_t)n * isz);
    for (int64_t i = 0; i < n; i++) {
        double v = 2 * bench_uniform(s) - 1;
        if (t == KILN_DTYPE_F32)
            ((float *)out)[i] = (float)v;
        else
            ((double *)out)[i] = v;
    }
    return out;
}

static void run_case(kiln_context *ctx, const bcase *c, FILE *list) {
    uint64_t s = 7;
    int64_t n = c->n, ad[3] = {c->batch, n, n}, bd[2] = {n, c->nrhs ? c->nrhs : 1};
    int ar = c->batch > 1 ? 3 : 2;
    const int64_t *adims = c->batch > 1 ? ad : ad + 1;
    size_t isz = kiln_dtype_itemsize(c->t), abytes = (size_t)(c->batch * n * n) * isz;
    void *ah = spd(c->t, c->batch, n, &s);
    if (c->k == SOLVE) /* a lower triangle with a strong diagonal: a Cholesky factor's shape */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t at = i * n + j;
                double v = c->t == KILN_DTYPE_F32 ? ((float *)ah)[at] : ((double *)ah)[at];
                v = j > i ? 0 : i == j ? 2 : v / (double)n;
                if (c->t == KILN_DTYPE_F32)
                    ((float *)ah)[at] = (float)v;
                else
                    ((double *)ah)[at] = v;
            }
    int64_t nb = c->k == SOLVE ? n * c->nrhs : n;
    void *bh = uniform(c->t, nb, &s);
    char file[256];
    snprintf(file, sizeof file, "%s_a.bin", c->name);
    bench_write_file(dir, file, ah, abytes);
    snprintf(file, sizeof file, "%s_b.bin", c->name);
    bench_write_file(dir, file, bh, (size_t)nb * isz);

    kiln_graph *g = NULL;
    DIE(ctx, kiln_graph_create(ctx, c->name, &g));
    kiln_value a = kiln_parameter(g, "a", c->t, ar, adims), out[2];
    kiln_value b = {0};
    int n_out = 1;
    if (c->k == CHOLESKY)
        out[0] = kiln_cholesky(g, a);
    else if (c->k == SOLVE) {
        b = kiln_parameter(g, "b", c->t, 2, bd);
        kiln_triangular_solve_options o = {.left_side = true, .lower = true};
        out[0] = kiln_triangular_solve(g, a, b, &o);
    } else { /* 0.5 y^T K^-1 y + sum log diag L, and d/dK */
        b = kiln_parameter(g, "y", c->t, 1, &n);
        kiln_value l = kiln_cholesky(g, a);
        kiln_value alpha = kiln_cho_solve(g, l, true, b);
        kiln_value diag = kiln_diagonal(g, l, 0, 0, 1);
        kiln_value nll =
            kiln_add(g,
                     kiln_mul(g, kiln_scalar(g, c->t, 0.5),
                              kiln_reduce_sum(g, kiln_mul(g, b, alpha), 0, NULL, false)),
                     kiln_reduce_sum(g, kiln_log(g, diag), 0, NULL, false));
        out[0] = nll;
        DIE(ctx, kiln_grad(g, nll, 1, &a, &out[1]));
        out[0] = out[1], out[1] = nll, n_out = 2;
    }
    DIE(ctx, kiln_graph_finish(g, n_out, out));
    kiln_executable *e = NULL;
    DIE(ctx, kiln_compile(g, NULL, &e));
    kiln_array *args[2] = {0}, *res[2] = {0};
    DIE(ctx, kiln_array_create(ctx, c->t, ar, adims, ah, &args[0]));
    int n_args = 1;
    if (c->k != CHOLESKY) {
        DIE(ctx, kiln_array_create(ctx, c->t, c->k == SOLVE ? 2 : 1, c->k == SOLVE ? bd : &n, bh,
                                   &args[1]));
        n_args = 2;
    }
    double *t = malloc((size_t)reps * sizeof *t);
    for (int r = -2; r < reps; r++) {
        for (int i = 0; i < n_out; i++) kiln_array_destroy(res[i]), res[i] = NULL;
        double t0 = now();
        DIE(ctx, kiln_executable_run(e, n_args, args, n_out, res));
        if (r >= 0) t[r] = now() - t0;
    }
    double ms = 1e3 * median(t, reps);
    double flops = c->k == CHOLESKY ? (double)c->batch * (double)n * (double)n * (double)n / 3
                   : c->k == SOLVE  ? (double)n * (double)n * (double)c->nrhs
                                    : 0;
    printf("kiln %-16s %s %9.3f ms", c->name, kiln_dtype_name(c->t), ms);
    if (flops) printf("   %6.1f GFLOP/s", flops / ms * 1e-6);
    printf("\n");
    size_t rbytes = kiln_array_nbytes(res[0]);
    void *rh = malloc(rbytes);
    DIE(ctx, kiln_array_copy_to_host(res[0], rh, rbytes));
    snprintf(file, sizeof file, "kiln_%s.bin", c->name);
    bench_write_file(dir, file, rh, rbytes);
    fprintf(list, "%s %s %lld %lld %lld\n", c->name, kiln_dtype_name(c->t), (long long)n,
            (long long)c->batch, (long long)c->nrhs);
    free(rh), free(t), free(ah), free(bh);
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]), kiln_array_destroy(res[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_linalg DIR [REPS]\n");
        return 2;
    }
    dir = argv[1];
    if (argc > 2) reps = atoi(argv[2]) > 0 ? atoi(argv[2]) : reps;
    bench_one_tier();
    kiln_context *ctx = NULL;
    char err[256];
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "bench_linalg: %s\n", err);
        return 1;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *list = fopen(path, "w");
    if (!list) {
        fprintf(stderr, "bench_linalg: cannot write %s\n", path);
        return 1;
    }
    /* each case's files carry its name and dtype */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bcase *c = &cases[i];
        char name[64];
        snprintf(name, sizeof name, "%s_%s", c->name, kiln_dtype_name(c->t));
        bcase cc = *c;
        cc.name = name;
        run_case(ctx, &cc, list);
    }
    fclose(list);
    printf("sgemm ceiling %.1f GFLOP/s\n", sgemm_ceiling(5));
    kiln_context_destroy(ctx);
    return 0;
}
