/* bench_gather.c — gather and scatter at an embedding table's size on the CPU: a [V, D]
 * f32 table (GPT-2's by default), N row indices; milliseconds per call (the median of REPS
 * after a warm-up, the compiled program alone) and the planned temporary bytes, for
 * jnp.take-style row gathers (kiln_gather), x.at[idx].add(rows) (kiln_index_add, a
 * scatter_add_rows underneath), .set (the last-writer max over [V, N] positions) and .max
 * (a reduction over [V, N, D]: shown at a smaller N, it is O(V N D) work). The JAX side is
 * bench/gather/gather_jax.py; bench/gather/run.sh runs both.
 *
 *   bench_gather [V] [D] [N] [REPS]
 *
 * Correctness is tests/test_gather.c's. */
#include "../bench_util.h"

enum { GATHER, ADD, SET, MAX };

static kiln_executable *build(kiln_context *ctx, int64_t v, int64_t d, int64_t n, int what,
                              uint64_t *temp) {
    kiln_graph *g = NULL;
    if (kiln_graph_create(ctx, "gather", &g)) return NULL;
    kiln_value x = kiln_parameter(g, "table", KILN_DTYPE_F32, 2, (int64_t[]){v, d});
    kiln_value i = kiln_parameter(g, "idx", KILN_DTYPE_I32, 1, &n), y;
    if (what == GATHER) {
        kiln_gather_dims gd = {.n_offset_dims = 1,
                               .offset_dims = {1},
                               .n_collapsed_slice_dims = 1,
                               .n_start_index_map = 1};
        kiln_value ix = kiln_reshape(g, i, 2, (int64_t[]){n, 1});
        y = kiln_gather(g, x, ix, &gd, (int64_t[]){1, d}, KILN_GATHER_FILL, NULL);
    } else {
        kiln_value u = kiln_parameter(g, "rows", KILN_DTYPE_F32, 2, (int64_t[]){n, d});
        kiln_scatter_kind k = what == ADD   ? KILN_SCATTER_ADD
                              : what == SET ? KILN_SCATTER_SET
                                            : KILN_SCATTER_MAX;
        y = kiln_index_update(g, k, x, 0, i, u, KILN_GATHER_FILL);
    }
    kiln_executable *e = NULL;
    kiln_memory_analysis m = {0};
    if (kiln_graph_finish(g, 1, &y) || kiln_compile(g, NULL, &e) ||
        kiln_executable_get_memory_analysis(e, &m)) {
        fprintf(stderr, "bench_gather: %s\n", kiln_last_error(ctx));
        exit(1);
    }
    *temp = m.temp_bytes;
    kiln_graph_destroy(g);
    return e;
}

static double time_it(kiln_executable *e, int n_args, kiln_array **args, int reps) {
    double *t = malloc((size_t)reps * sizeof *t);
    kiln_array *out = NULL;
    for (int r = -2; r < reps; r++) {
        double t0 = now();
        if (kiln_executable_run(e, n_args, args, 1, &out)) exit(1);
        if (r >= 0) t[r] = now() - t0;
        kiln_array_destroy(out);
        out = NULL;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    double m = t[reps / 2];
    free(t);
    return m;
}

static kiln_array *uniform(kiln_context *ctx, int64_t rows, int64_t cols, uint64_t *s) {
    float *h = malloc((size_t)(rows * cols) * sizeof *h);
    for (int64_t k = 0; k < rows * cols; k++) h[k] = (float)(2 * bench_uniform(s) - 1);
    kiln_array *a = NULL;
    if (kiln_array_create(ctx, KILN_DTYPE_F32, 2, (int64_t[]){rows, cols}, h, &a)) exit(1);
    free(h);
    return a;
}

int main(int argc, char **argv) {
    int64_t v = argc > 1 ? atoll(argv[1]) : 50257, d = argc > 2 ? atoll(argv[2]) : 768;
    int64_t n = argc > 3 ? atoll(argv[3]) : 4096;
    int reps = argc > 4 ? atoi(argv[4]) : 20;
    kiln_context *ctx = NULL;
    char err[256];
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "bench_gather: %s\n", err);
        return 1;
    }
    static const char *const names[4] = {"take", "at.add", "at.set", "at.max"};
    uint64_t s = 42;
    kiln_array *table = uniform(ctx, v, d, &s);
    for (int what = GATHER; what <= MAX; what++) {
        int64_t nn = what == MAX ? n / 64 : n; /* O(V N D): a smaller N */
        int32_t *ih = malloc((size_t)nn * sizeof *ih);
        for (int64_t k = 0; k < nn; k++) ih[k] = (int32_t)(bench_uniform(&s) * (double)v);
        kiln_array *args[3] = {table, NULL, what == GATHER ? NULL : uniform(ctx, nn, d, &s)};
        if (kiln_array_create(ctx, KILN_DTYPE_I32, 1, &nn, ih, &args[1])) return 1;
        uint64_t temp = 0;
        kiln_executable *e = build(ctx, v, d, nn, what, &temp);
        double ms = 1e3 * time_it(e, what == GATHER ? 2 : 3, args, reps);
        printf("kiln %-7s [%lld, %lld] N=%lld: %.3f ms, temp %.1f MiB\n", names[what], (long long)v,
               (long long)d, (long long)nn, ms, (double)temp / (1 << 20));
        kiln_executable_destroy(e);
        kiln_array_destroy(args[1]), kiln_array_destroy(args[2]);
        free(ih);
    }
    kiln_array_destroy(table);
    kiln_context_destroy(ctx);
    return 0;
}
