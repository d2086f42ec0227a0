/* linalg.c — the reference kernels of the linear algebra ops (ir.h, KN_LINALG_OPS): the
 * textbook algorithms, one matrix of the batch at a time, in double, each result rounded
 * once when stored. cholesky is the Cholesky-Banachiewicz recurrence over a's lower
 * triangle, a pivot not > 0 (or NaN) making its lower triangle NaN as potrf's failure
 * does in JAX; triangular_solve substitutes forward or backward, one right-hand side at a time,
 * reading only the triangle (and diagonal) of op(a) the attributes name. */
#include "reference.h"

#include <math.h>

/* the matrices of a batch: the product of every dimension but the last two */
static int64_t batch_of(const ir_shape *s) {
    int64_t b = 1;
    for (int i = 0; i < s->rank - 2; i++) b *= s->dims[i];
    return b;
}

static kiln_status ref_cholesky(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                void *out) {
    const ir_node *n = &g->nodes[id];
    const void *a = ref_in_data(vals, n, 0);
    int64_t m = n->shape.dims[n->shape.rank - 1], batch = batch_of(&n->shape);
    if (!m || !batch) return KILN_STATUS_OK;
    size_t bytes = (size_t)(m * m) * sizeof(double);
    double *l = host_alloc(g->ctx, bytes);
    if (!l) return ctx_oom(g->ctx, "reference cholesky", bytes);
    bool sym = n->a.symmetrize;
    for (int64_t b = 0; b < batch; b++) {
        int64_t base = b * m * m;
        bool ok = true;
        /* a[i][j] for i >= j: the lower triangle, or the symmetric part's */
#define A(i, j)                                                                                    \
    (sym ? (ref_fget(a, n->dtype, base + (i)*m + (j)) +                                            \
            ref_fget(a, n->dtype, base + (j)*m + (i))) /                                           \
               2                                                                                   \
         : ref_fget(a, n->dtype, base + (i)*m + (j)))
        for (int64_t i = 0; i < m * m; i++) l[i] = 0;
        for (int64_t j = 0; ok && j < m; j++) {
            double d = A(j, j);
            for (int64_t k = 0; k < j; k++) d -= l[j * m + k] * l[j * m + k];
            if (!(d > 0)) {
                ok = false;
                break;
            }
            double djj = sqrt(d);
            l[j * m + j] = djj;
            for (int64_t i = j + 1; i < m; i++) {
                double s = A(i, j);
                for (int64_t k = 0; k < j; k++) s -= l[i * m + k] * l[j * m + k];
                l[i * m + j] = s / djj;
            }
        }
        /* a failure is NaN in the lower triangle; above it stays 0, as jnp gives */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < m; j++)
                ref_fput(out, n->dtype, base + i * m + j, ok || j > i ? l[i * m + j] : NAN);
    }
#undef A
    host_free(g->ctx, l, bytes);
    return KILN_STATUS_OK;
}

/* op(a)[i][j] of matrix `base` of a, m x m. */
static double op_a(const void *a, kiln_dtype t, int64_t base, int64_t m, bool transpose, int64_t i,
                   int64_t j) {
    return transpose ? ref_fget(a, t, base + j * m + i) : ref_fget(a, t, base + i * m + j);
}

static kiln_status ref_triangular_solve(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                        void *out) {
    const ir_node *n = &g->nodes[id];
    const void *a = ref_in_data(vals, n, 0), *b = ref_in_data(vals, n, 1);
    int r = n->shape.rank;
    int64_t rows = n->shape.dims[r - 2], cols = n->shape.dims[r - 1], batch = batch_of(&n->shape);
    bool left = n->a.tri.left_side, unit = n->a.tri.unit_diagonal;
    /* x op(a) = b is op(a)^T x^T = b^T: op(a)^T is T below, left side */
    bool tr = n->a.tri.transpose_a != !left, lower = n->a.tri.lower != tr;
    int64_t m = left ? rows : cols, nrhs = left ? cols : rows;
    if (!m || !nrhs || !batch) return KILN_STATUS_OK;
    size_t bytes = (size_t)m * sizeof(double);
    double *x = host_alloc(g->ctx, bytes);
    if (!x) return ctx_oom(g->ctx, "reference triangular_solve", bytes);
    for (int64_t bi = 0; bi < batch; bi++) {
        int64_t abase = bi * m * m, bbase = bi * rows * cols;
        for (int64_t c = 0; c < nrhs; c++) {
            /* element k of right-hand side c: b[k][c] (left) or b[c][k] */
            for (int64_t step = 0; step < m; step++) {
                int64_t i = lower ? step : m - 1 - step;
                double s = ref_fget(b, n->dtype, bbase + (left ? i * cols + c : c * cols + i));
                for (int64_t q = 0; q < step; q++) {
                    int64_t k = lower ? q : m - 1 - q;
                    s -= op_a(a, n->dtype, abase, m, tr, i, k) * x[k];
                }
                x[i] = unit ? s : s / op_a(a, n->dtype, abase, m, tr, i, i);
            }
            for (int64_t k = 0; k < m; k++)
                ref_fput(out, n->dtype, bbase + (left ? k * cols + c : c * cols + k), x[k]);
        }
    }
    host_free(g->ctx, x, bytes);
    return KILN_STATUS_OK;
}

ref_eval_fn ref_linalg_eval(ir_op op) {
    return op == IR_CHOLESKY           ? ref_cholesky
           : op == IR_TRIANGULAR_SOLVE ? ref_triangular_solve
                                       : NULL;
}
