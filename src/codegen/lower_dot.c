/* lower_dot.c — see lower_dot.h: the strided views BLAS can read in place, and the
 * permutation into [batch, rows, cols] for an operand it cannot.
 *
 * A view exists when each group of axes (the rows, the columns) flattens into one strided
 * axis (size-1 axes skipped) and one of the two groups is unit-stride: the other's stride
 * is then the leading dimension, and which group is unit-stride is the trans flag. Batch
 * axes keep their own strides, walked by the gemm's odometer. */
#include "lower_dot.h"
#include "plan/plan.h"

#include <string.h>

/* The bytes a dot kernel packs its operands into: lhs at 0, rhs after it (aligned). */
static void scratch_layout(const kiln_graph *g, uint32_t id, lower_dot *d) {
    const ir_node *n = &g->nodes[id];
    size_t a = 0, b = 0;
    const ir_node *l = &g->nodes[ir_in(n)[0]], *r = &g->nodes[ir_in(n)[1]];
    if (d->pack_a) ir_shape_nbytes(&l->shape, l->dtype, &a);
    if (d->pack_b) ir_shape_nbytes(&r->shape, r->dtype, &b);
    d->rhs_offset = plan_round(a, PLAN_ALIGN);
    d->scratch = b ? d->rhs_offset + b : a;
}

/* Can `ax` (in flattening order) be read as one axis of a row-major array of shape s?
 * Size-1 axes are skipped. Gives the flattened extent and element stride. */
static bool group_view(const ir_shape *s, const int64_t *st, const int *ax, int n, int64_t *extent,
                       int64_t *stride) {
    int prev = -1;
    *extent = 1, *stride = 1;
    for (int i = 0; i < n; i++) {
        int a = ax[i];
        if (s->dims[a] == 1) continue;
        if (prev >= 0 && st[prev] != st[a] * s->dims[a]) return false;
        prev = a;
        *extent *= s->dims[a];
    }
    if (prev >= 0) *stride = st[prev];
    return true;
}

/* The operand as a gemm matrix [rows, cols] without copying: false if it has no such view. */
static bool matrix_view(const ir_shape *s, const int *rows, int nr, const int *cols, int nc,
                        bool *trans, int64_t *ld) {
    int64_t st[KILN_MAX_RANK], R, C, sr, sc, acc = 1;
    for (int a = s->rank - 1; a >= 0; a--) st[a] = acc, acc *= s->dims[a];
    if (!group_view(s, st, rows, nr, &R, &sr) || !group_view(s, st, cols, nc, &C, &sc))
        return false;
    if ((C == 1 || sc == 1) && (R == 1 || sr >= C)) {
        *trans = false, *ld = R == 1 ? (C > 1 ? C : 1) : sr;
        return true;
    }
    if ((R == 1 || sr == 1) && (C == 1 || sc >= R)) {
        *trans = true, *ld = C == 1 ? (R > 1 ? R : 1) : sc;
        return true;
    }
    return false;
}

/* One operand of a dot: a strided view, or a permutation into [batch, rows, cols]. */
static void plan_operand(const ir_shape *s, const int *batch, int nb, const int *rows, int nr,
                         const int *cols, int nc, bool *trans, bool *pack, int *perm, int64_t *ld,
                         int64_t *bstride) {
    int64_t st[KILN_MAX_RANK], acc = 1;
    for (int a = s->rank - 1; a >= 0; a--) st[a] = acc, acc *= s->dims[a];
    if (matrix_view(s, rows, nr, cols, nc, trans, ld)) {
        for (int i = 0; i < nb; i++) bstride[i] = st[batch[i]];
        return;
    }
    int r = 0;
    int64_t cols_size = 1, after = 1;
    for (int i = 0; i < nb; i++) perm[r++] = batch[i];
    for (int i = 0; i < nr; i++) perm[r++] = rows[i];
    for (int i = 0; i < nc; i++) perm[r++] = cols[i], cols_size *= s->dims[cols[i]];
    for (int i = nb; i < s->rank; i++) after *= s->dims[perm[i]];
    for (int i = nb - 1; i >= 0; i--) bstride[i] = after, after *= s->dims[batch[i]];
    *pack = true, *trans = false, *ld = cols_size > 1 ? cols_size : 1;
}

static int free_axes(const ir_shape *s, const int *batch, int nb, const int *con, int nc, int *out,
                     int64_t *size) {
    unsigned used = 0;
    int n = 0;
    *size = 1;
    for (int i = 0; i < nb; i++) used |= 1u << batch[i];
    for (int i = 0; i < nc; i++) used |= 1u << con[i];
    for (int a = 0; a < s->rank; a++)
        if (!(used >> a & 1u)) out[n++] = a, *size *= s->dims[a];
    return n;
}

void lower_dot_plan(const kiln_graph *g, uint32_t id, lower_dot *d) {
    const ir_node *n = &g->nodes[id];
    const kiln_dot_dims *dd = &n->a.dot;
    const ir_shape *ls = &g->nodes[ir_in(n)[0]].shape, *rs = &g->nodes[ir_in(n)[1]].shape;
    int lf[KILN_MAX_RANK], rf[KILN_MAX_RANK];
    memset(d, 0, sizeof *d);
    kn_gemm_desc *gd = &d->gemm;
    gd->batch = 1, gd->k = 1, gd->nb = dd->n_batch;
    for (int i = 0; i < dd->n_batch; i++)
        gd->bdims[i] = ls->dims[dd->lhs_batch[i]], gd->batch *= gd->bdims[i];
    for (int i = 0; i < dd->n_contract; i++) gd->k *= ls->dims[dd->lhs_contract[i]];
    int nlf =
        free_axes(ls, dd->lhs_batch, dd->n_batch, dd->lhs_contract, dd->n_contract, lf, &gd->m);
    int nrf =
        free_axes(rs, dd->rhs_batch, dd->n_batch, dd->rhs_contract, dd->n_contract, rf, &gd->n);
    plan_operand(ls, dd->lhs_batch, dd->n_batch, lf, nlf, dd->lhs_contract, dd->n_contract,
                 &gd->trans_a, &d->pack_a, d->perm_a, &gd->lda, gd->bstride_a);
    plan_operand(rs, dd->rhs_batch, dd->n_batch, dd->rhs_contract, dd->n_contract, rf, nrf,
                 &gd->trans_b, &d->pack_b, d->perm_b, &gd->ldb, gd->bstride_b);
    scratch_layout(g, id, d);
}
