/* structural.c — the reference kernels of the ops that move or combine elements: iota,
 * the shape ops, reductions, dot_general, row indexing, dynamic slices, cumsum,
 * attention and argsort. Its own
 * table at the end (ref_structural_eval) names each one's evaluator.
 *
 * Every kernel is written as plainly as possible in terms of row-major multi-indices:
 * walk the output (or input) index by index, and find the matching element of the other
 * side by a dot product of the index with a stride vector. broadcast_in_dim, transpose and
 * slice are all such a "strided gather" with different strides. Nothing is clever,
 * because this file is what every backend is judged against.
 *
 * Reductions and dot_general accumulate floats in double and integers in uint64
 * (wrapping), and round once when storing. scatter_add_rows adds one update row at a time
 * in the output's dtype. No pointer is formed from a buffer of zero elements (it may be
 * NULL): loops over zero elements never run. */
#include "reference.h"

#include <math.h>

/* --------------------------------------------------------------- indices ---- */

static void strides_of(const ir_shape *s, int64_t *st) {
    int64_t k = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        st[i] = k;
        k *= s->dims[i];
    }
}

/* Advances a row-major multi-index over dims; false after the last one. */
static bool next_index(int64_t *idx, const int64_t *dims, int rank) {
    for (int i = rank - 1; i >= 0; i--) {
        if (++idx[i] < dims[i]) return true;
        idx[i] = 0;
    }
    return false;
}

static int64_t offset_of(const int64_t *idx, const int64_t *st, int rank) {
    int64_t off = 0;
    for (int i = 0; i < rank; i++) off += idx[i] * st[i];
    return off;
}

static void copy_elem(void *dst, int64_t di, const void *src, int64_t si, size_t es) {
    memcpy((char *)dst + (size_t)di * es, (const char *)src + (size_t)si * es, es);
}

/* out[i] = in[base + idx(i) . st] over every index i of out's shape. */
static void gather(void *out, const ir_shape *os, const void *in, int64_t base, const int64_t *st,
                   size_t es) {
    int64_t idx[KILN_MAX_RANK] = {0}, n = ref_numel(os);
    for (int64_t i = 0; i < n; i++, next_index(idx, os->dims, os->rank))
        copy_elem(out, i, in, base + offset_of(idx, st, os->rank), es);
}

/* out[base + idx(i) . st] = in[i] over every index i of in's shape. */
static void scatter(void *out, int64_t base, const int64_t *st, const void *in, const ir_shape *is,
                    size_t es) {
    int64_t idx[KILN_MAX_RANK] = {0}, n = ref_numel(is);
    for (int64_t i = 0; i < n; i++, next_index(idx, is->dims, is->rank))
        copy_elem(out, base + offset_of(idx, st, is->rank), in, i, es);
}

/* ------------------------------------------------------------- shape ops ---- */

static void run_iota(const ir_node *n, void *out) {
    int64_t st[KILN_MAX_RANK], count = ref_numel(&n->shape);
    strides_of(&n->shape, st);
    int ax = n->a.axis;
    for (int64_t i = 0; i < count; i++) {
        int64_t v = i / st[ax] % n->shape.dims[ax];
        if (ir_dtype_is_float(n->dtype))
            ref_fput(out, n->dtype, i, (double)v);
        else
            ref_iput(out, n->dtype, i, (uint64_t)v);
    }
}

/* Operand axis i is output axis bcast_dims[i]; a size-1 operand axis repeats (stride 0),
 * and output axes the operand lacks repeat it too. */
static void run_broadcast(const ir_node *n, const ir_node *x, const void *in, void *out) {
    int64_t xst[KILN_MAX_RANK], st[KILN_MAX_RANK] = {0};
    strides_of(&x->shape, xst);
    for (int i = 0; i < x->shape.rank; i++)
        st[n->a.bcast_dims[i]] = x->shape.dims[i] == 1 ? 0 : xst[i];
    gather(out, &n->shape, in, 0, st, kiln_dtype_itemsize(n->dtype));
}

/* Output axis i is input axis perm[i]. */
static void run_transpose(const ir_node *n, const ir_node *x, const void *in, void *out) {
    int64_t xst[KILN_MAX_RANK], st[KILN_MAX_RANK];
    strides_of(&x->shape, xst);
    for (int i = 0; i < x->shape.rank; i++) st[i] = xst[n->a.perm[i]];
    gather(out, &n->shape, in, 0, st, kiln_dtype_itemsize(n->dtype));
}

static void run_slice(const ir_node *n, const ir_node *x, const void *in, void *out) {
    int64_t xst[KILN_MAX_RANK], st[KILN_MAX_RANK], base = 0;
    strides_of(&x->shape, xst);
    for (int i = 0; i < x->shape.rank; i++) {
        base += n->a.slice.start[i] * xst[i];
        st[i] = n->a.slice.stride[i] * xst[i];
    }
    gather(out, &n->shape, in, base, st, kiln_dtype_itemsize(n->dtype));
}

/* Each operand lands at its running offset along the axis. */
static void run_concat(const kiln_graph *g, const ir_node *n, const ref_value *vals, void *out) {
    int64_t st[KILN_MAX_RANK], at = 0;
    strides_of(&n->shape, st);
    for (uint32_t k = 0; k < n->n_in; k++) {
        const ir_node *x = ref_in_node(g, n, k);
        scatter(out, at * st[n->a.axis], st, ref_in_data(vals, n, k), &x->shape,
                kiln_dtype_itemsize(n->dtype));
        at += x->shape.dims[n->a.axis];
    }
}

/* Fill with the padding value, then place input element idx at lo + idx * (interior + 1)
 * on each axis, dropping those that fall outside (negative lo/hi crop). */
static void run_pad(const ir_node *n, const ir_node *x, const void *in, const void *pad_value,
                    void *out) {
    size_t es = kiln_dtype_itemsize(n->dtype);
    int64_t ost[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
    int64_t on = ref_numel(&n->shape), xn = ref_numel(&x->shape);
    strides_of(&n->shape, ost);
    for (int64_t i = 0; i < on; i++) copy_elem(out, i, pad_value, 0, es);
    for (int64_t i = 0; i < xn; i++, next_index(idx, x->shape.dims, x->shape.rank)) {
        int64_t off = 0;
        bool inside = true;
        for (int k = 0; k < x->shape.rank && inside; k++) {
            int64_t c = n->a.pad.lo[k] + idx[k] * (n->a.pad.interior[k] + 1);
            inside = c >= 0 && c < n->shape.dims[k];
            off += c * ost[k];
        }
        if (inside) copy_elem(out, off, in, i, es);
    }
}

/* ------------------------------------------------------------ reductions ---- */

/* The axes a reduction (or contraction) walks for one output element. */
typedef struct axes {
    int rank;
    int64_t dims[KILN_MAX_RANK], st[KILN_MAX_RANK], st2[KILN_MAX_RANK];
} axes;

static double reduce_f(ir_op op, kiln_dtype t, const void *in, int64_t base, const axes *r) {
    double acc = op == IR_REDUCE_SUM    ? 0.0
                 : op == IR_REDUCE_PROD ? 1.0
                 : op == IR_REDUCE_MAX  ? -INFINITY
                                        : INFINITY;
    int64_t idx[KILN_MAX_RANK] = {0}, count = 1;
    for (int i = 0; i < r->rank; i++) count *= r->dims[i];
    for (int64_t j = 0; j < count; j++, next_index(idx, r->dims, r->rank)) {
        double v = ref_fget(in, t, base + offset_of(idx, r->st, r->rank));
        switch (op) {
        case IR_REDUCE_SUM: acc += v; break;
        case IR_REDUCE_PROD: acc *= v; break;
        /* once acc is NaN no comparison replaces it: NaN propagates */
        case IR_REDUCE_MAX: acc = isnan(v) || v > acc ? v : acc; break;
        default: acc = isnan(v) || v < acc ? v : acc; break;
        }
    }
    return acc;
}

/* Sum and product wrap in uint64; max and min start from the dtype's extremes. */
static uint64_t reduce_i(ir_op op, kiln_dtype t, const void *in, int64_t base, const axes *r) {
    bool i32 = t == KILN_DTYPE_I32;
    uint64_t acc = op == IR_REDUCE_PROD ? 1 : 0;
    int64_t best =
        op == IR_REDUCE_MAX ? (i32 ? INT32_MIN : INT64_MIN) : (i32 ? INT32_MAX : INT64_MAX);
    int64_t idx[KILN_MAX_RANK] = {0}, count = 1;
    for (int i = 0; i < r->rank; i++) count *= r->dims[i];
    for (int64_t j = 0; j < count; j++, next_index(idx, r->dims, r->rank)) {
        int64_t v = ref_iget(in, t, base + offset_of(idx, r->st, r->rank));
        switch (op) {
        case IR_REDUCE_SUM: acc += (uint64_t)v; break;
        case IR_REDUCE_PROD: acc *= (uint64_t)v; break;
        case IR_REDUCE_MAX: best = v > best ? v : best; break;
        default: best = v < best ? v : best; break;
        }
    }
    return op == IR_REDUCE_SUM || op == IR_REDUCE_PROD ? acc : (uint64_t)best;
}

/* Output axes are the kept input axes in order; each output element reduces the
 * sub-array spanned by the reduced axes. */
static void run_reduce(const ir_node *n, const ir_node *x, const void *in, void *out) {
    int64_t xst[KILN_MAX_RANK], kst[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
    axes r = {0};
    int nk = 0;
    strides_of(&x->shape, xst);
    for (int i = 0; i < x->shape.rank; i++) {
        if (n->a.reduce_axes >> i & 1u)
            r.dims[r.rank] = x->shape.dims[i], r.st[r.rank++] = xst[i];
        else
            kst[nk++] = xst[i];
    }
    int64_t count = ref_numel(&n->shape);
    kiln_dtype t = x->dtype;
    for (int64_t o = 0; o < count; o++, next_index(idx, n->shape.dims, n->shape.rank)) {
        int64_t base = offset_of(idx, kst, nk);
        if (ir_dtype_is_float(t))
            ref_fput(out, t, o, reduce_f(n->op, t, in, base, &r));
        else
            ref_iput(out, t, o, reduce_i(n->op, t, in, base, &r));
    }
}

/* ------------------------------------------------------------ dot_general ---- */

/* Output axes: batch axes, lhs free axes, rhs free axes. For each, the strides it moves
 * lhs and rhs by (0 on the side it does not belong to); the contracting axes move both. */
static void dot_strides(const ir_node *n, const ir_shape *ls, const ir_shape *rs, int64_t *lstep,
                        int64_t *rstep, axes *c) {
    const kiln_dot_dims *d = &n->a.dot;
    int64_t lst[KILN_MAX_RANK], rst[KILN_MAX_RANK];
    unsigned lu = 0, ru = 0;
    int k = 0;
    strides_of(ls, lst);
    strides_of(rs, rst);
    for (int i = 0; i < d->n_batch; i++, k++) {
        lstep[k] = lst[d->lhs_batch[i]], rstep[k] = rst[d->rhs_batch[i]];
        lu |= 1u << d->lhs_batch[i], ru |= 1u << d->rhs_batch[i];
    }
    c->rank = d->n_contract;
    for (int i = 0; i < d->n_contract; i++) {
        c->dims[i] = ls->dims[d->lhs_contract[i]];
        c->st[i] = lst[d->lhs_contract[i]], c->st2[i] = rst[d->rhs_contract[i]];
        lu |= 1u << d->lhs_contract[i], ru |= 1u << d->rhs_contract[i];
    }
    for (int i = 0; i < ls->rank; i++)
        if (!(lu >> i & 1u)) lstep[k] = lst[i], rstep[k++] = 0;
    for (int i = 0; i < rs->rank; i++)
        if (!(ru >> i & 1u)) lstep[k] = 0, rstep[k++] = rst[i];
}

static void run_dot(const ir_node *n, const ir_node *l, const ir_node *r, const void *lhs,
                    const void *rhs, void *out) {
    int64_t lstep[KILN_MAX_RANK], rstep[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0};
    axes c = {0};
    dot_strides(n, &l->shape, &r->shape, lstep, rstep, &c);
    int64_t count = ref_numel(&n->shape), inner = 1;
    for (int i = 0; i < c.rank; i++) inner *= c.dims[i];
    kiln_dtype t = n->dtype;
    bool fl = ir_dtype_is_float(t);
    for (int64_t o = 0; o < count; o++, next_index(idx, n->shape.dims, n->shape.rank)) {
        int64_t lb = offset_of(idx, lstep, n->shape.rank),
                rb = offset_of(idx, rstep, n->shape.rank);
        int64_t ci[KILN_MAX_RANK] = {0};
        double facc = 0;
        uint64_t iacc = 0;
        for (int64_t j = 0; j < inner; j++, next_index(ci, c.dims, c.rank)) {
            int64_t li = lb + offset_of(ci, c.st, c.rank), ri = rb + offset_of(ci, c.st2, c.rank);
            if (fl)
                facc += ref_fget(lhs, t, li) * ref_fget(rhs, t, ri);
            else
                iacc += (uint64_t)ref_iget(lhs, t, li) * (uint64_t)ref_iget(rhs, t, ri);
        }
        if (fl)
            ref_fput(out, t, o, facc);
        else
            ref_iput(out, t, o, iacc);
    }
}

/* --------------------------------------------------------------- indexing ---- */

static int64_t row_elems(const ir_shape *s) {
    int64_t k = 1;
    for (int i = 1; i < s->rank; i++) k *= s->dims[i];
    return k;
}

/* Indices are clamped into [0, rows - 1] (jnp.take's default). With no rows there is
 * nothing to clamp to, so only an output without elements can be made. */
static kiln_status run_take_rows(const kiln_graph *g, uint32_t id, const ir_node *t,
                                 const ir_node *ix, const void *table, const void *idx, void *out) {
    const ir_node *n = &g->nodes[id];
    int64_t rows = t->shape.dims[0], row = row_elems(&t->shape), count = ref_numel(&ix->shape);
    size_t es = kiln_dtype_itemsize(n->dtype);
    if (rows == 0 && ref_numel(&n->shape) > 0) {
        char tt[IR_TYPE_STR_MAX], it[IR_TYPE_STR_MAX];
        return ctx_error(g->ctx, KILN_STATUS_SHAPE,
                         "kiln_interpret: take_rows (node %%%u) reads rows of a table %s with no "
                         "rows, indexed by %s",
                         id, ir_type_str(t->dtype, &t->shape, tt, sizeof tt),
                         ir_type_str(ix->dtype, &ix->shape, it, sizeof it));
    }
    for (int64_t k = 0; k < count && row > 0; k++) {
        int64_t r = ref_iget(idx, ix->dtype, k);
        r = r < 0 ? 0 : r >= rows ? rows - 1 : r;
        memcpy((char *)out + (size_t)(k * row) * es, (const char *)table + (size_t)(r * row) * es,
               (size_t)row * es);
    }
    return KILN_STATUS_OK;
}

/* One step of a row scatter: a added to, multiplied by, or the min or max with b (the
 * node's rows flags). Floats: min and max are NaN if either is, and of -0 and +0 max is
 * +0 and min -0, as the compiled primitives' (kiln_max_f32, lax.max). */
static double rows_fcombine(const ir_node *n, double a, double b) {
    if (n->a.rows.mul) return a * b;
    if (!n->a.rows.min && !n->a.rows.max) return a + b;
    if (isnan(a) || isnan(b)) return NAN;
    if (a == b) return n->a.rows.max ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
    return (n->a.rows.max ? a > b : a < b) ? a : b;
}

static uint64_t rows_icombine(const ir_node *n, int64_t a, int64_t b) {
    if (n->a.rows.mul) return (uint64_t)a * (uint64_t)b;
    if (n->a.rows.min) return (uint64_t)(a < b ? a : b);
    if (n->a.rows.max) return (uint64_t)(a > b ? a : b);
    return (uint64_t)a + (uint64_t)b;
}

/* out = operand, then each update row is combined into the row its index names (added,
 * or multiplied, min or max: the rows flags), in update order; indices out of range are
 * dropped. */
static void run_scatter_add(const ir_node *n, const ir_node *ix, const void *operand,
                            const void *idx, const void *upd, void *out) {
    int64_t rows = n->shape.dims[0], row = row_elems(&n->shape), count = ref_numel(&ix->shape);
    size_t bytes = (size_t)ref_numel(&n->shape) * kiln_dtype_itemsize(n->dtype);
    kiln_dtype t = n->dtype;
    if (bytes) memcpy(out, operand, bytes);
    for (int64_t k = 0; k < count; k++) {
        int64_t r = ref_iget(idx, ix->dtype, k);
        if (r < 0 || r >= rows) continue;
        for (int64_t e = 0; e < row; e++) {
            int64_t o = r * row + e, u = k * row + e;
            if (ir_dtype_is_float(t))
                ref_fput(out, t, o, rows_fcombine(n, ref_fget(out, t, o), ref_fget(upd, t, u)));
            else
                ref_iput(out, t, o, rows_icombine(n, ref_iget(out, t, o), ref_iget(upd, t, u)));
        }
    }
}

/* ------------------------------------------------------------------ entry ---- */

/* The per-op evaluators (the table is in ops.c). */
#define X_OF(n)  ref_in_node(g, n, 0)
#define IN_OF(n) ref_in_data(vals, n, 0)

static kiln_status ref_iota(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    (void)vals;
    run_iota(&g->nodes[id], out);
    return KILN_STATUS_OK;
}

static kiln_status ref_broadcast(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                 void *out) {
    const ir_node *n = &g->nodes[id];
    run_broadcast(n, X_OF(n), IN_OF(n), out);
    return KILN_STATUS_OK;
}

/* Reversed axes read from the end: a gather whose stride on each of them is negative and
 * whose base is the axis's last element. */
static kiln_status ref_rev(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    int64_t st[KILN_MAX_RANK], base = 0;
    strides_of(&n->shape, st);
    for (int i = 0; i < n->shape.rank; i++)
        if (n->a.rev_axes >> i & 1u) {
            base += (n->shape.dims[i] - 1) * st[i];
            st[i] = -st[i];
        }
    gather(out, &n->shape, IN_OF(n), base, st, kiln_dtype_itemsize(n->dtype));
    return KILN_STATUS_OK;
}

/* Row-major on both sides: the bytes do not move. */
static kiln_status ref_reshape(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    if (ref_numel(&n->shape))
        memcpy(out, IN_OF(n), (size_t)ref_numel(&n->shape) * kiln_dtype_itemsize(n->dtype));
    return KILN_STATUS_OK;
}

static kiln_status ref_transpose(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                 void *out) {
    const ir_node *n = &g->nodes[id];
    run_transpose(n, X_OF(n), IN_OF(n), out);
    return KILN_STATUS_OK;
}

static kiln_status ref_slice(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    run_slice(n, X_OF(n), IN_OF(n), out);
    return KILN_STATUS_OK;
}

static kiln_status ref_concat(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    run_concat(g, &g->nodes[id], vals, out);
    return KILN_STATUS_OK;
}

static kiln_status ref_pad(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    run_pad(n, X_OF(n), IN_OF(n), ref_in_data(vals, n, 1), out);
    return KILN_STATUS_OK;
}

static kiln_status ref_reduce(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    run_reduce(n, X_OF(n), IN_OF(n), out);
    return KILN_STATUS_OK;
}

static kiln_status ref_dot(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    run_dot(n, X_OF(n), ref_in_node(g, n, 1), IN_OF(n), ref_in_data(vals, n, 1), out);
    return KILN_STATUS_OK;
}

static kiln_status ref_take_rows(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                 void *out) {
    const ir_node *n = &g->nodes[id];
    return run_take_rows(g, id, X_OF(n), ref_in_node(g, n, 1), IN_OF(n), ref_in_data(vals, n, 1),
                         out);
}

static kiln_status ref_scatter_add_rows(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                        void *out) {
    const ir_node *n = &g->nodes[id];
    run_scatter_add(n, ref_in_node(g, n, 1), IN_OF(n), ref_in_data(vals, n, 1),
                    ref_in_data(vals, n, 2), out);
    return KILN_STATUS_OK;
}

/* The window's offset in x: each start (operand first + a) wrapped when negative (the
 * dimension added once, jax.lax's rule) and clamped into [0, dim - size], as XLA clamps
 * it, then dotted with x's strides. */
static int64_t window_base(const kiln_graph *g, const ir_node *n, const ref_value *vals,
                           uint32_t first, const ir_shape *win) {
    const ir_node *x = X_OF(n);
    int64_t st[KILN_MAX_RANK], base = 0;
    strides_of(&x->shape, st);
    for (int a = 0; a < x->shape.rank; a++) {
        const ir_node *s = ref_in_node(g, n, first + (uint32_t)a);
        int64_t v = ref_iget(ref_in_data(vals, n, first + (uint32_t)a), s->dtype, 0);
        int64_t hi = x->shape.dims[a] - win->dims[a];
        if (v < 0) v += x->shape.dims[a];
        base += (v < 0 ? 0 : v > hi ? hi : v) * st[a];
    }
    return base;
}

static kiln_status ref_dynamic_slice(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                     void *out) {
    const ir_node *n = &g->nodes[id];
    if (!ref_numel(&n->shape)) return KILN_STATUS_OK;
    int64_t st[KILN_MAX_RANK];
    strides_of(&X_OF(n)->shape, st);
    gather(out, &n->shape, IN_OF(n), window_base(g, n, vals, 1, &n->shape), st,
           kiln_dtype_itemsize(n->dtype));
    return KILN_STATUS_OK;
}

/* A copy of x with the update's elements scattered over the window. */
static kiln_status ref_dynamic_update_slice(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                            void *out) {
    const ir_node *n = &g->nodes[id], *u = ref_in_node(g, n, 1);
    size_t es = kiln_dtype_itemsize(n->dtype);
    if (!ref_numel(&n->shape)) return KILN_STATUS_OK;
    memcpy(out, IN_OF(n), (size_t)ref_numel(&n->shape) * es);
    int64_t st[KILN_MAX_RANK];
    strides_of(&n->shape, st);
    if (ref_numel(&u->shape))
        scatter(out, window_base(g, n, vals, 2, &u->shape), st, ref_in_data(vals, n, 1), &u->shape,
                es);
    return KILN_STATUS_OK;
}

/* Prefix sums along attribute scan.axis, each row scanned in order (from the end when
 * reverse): floats in a running f64 sum, each output rounded once to its dtype (so an f32
 * cumsum has one rounding per element); integers in a running sum that wraps. */
static kiln_status ref_cumsum(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    const void *x = IN_OF(n);
    int ax = n->a.scan.axis;
    int64_t len = n->shape.dims[ax], outer = 1, inner = 1, numel = 0;
    /* nothing to sum: the rows around an empty axis may still number ~2^62 */
    if (!ir_shape_numel(&n->shape, &numel) || !numel) return KILN_STATUS_OK;
    for (int i = 0; i < ax; i++) outer *= n->shape.dims[i];
    for (int i = ax + 1; i < n->shape.rank; i++) inner *= n->shape.dims[i];
    bool fl = ir_dtype_is_float(n->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            double f = 0;
            uint64_t u = 0;
            for (int64_t k = 0; k < len; k++) {
                int64_t j = n->a.scan.reverse ? len - 1 - k : k;
                int64_t at = (o * len + j) * inner + q;
                if (fl) {
                    f += ref_fget(x, n->dtype, at);
                    ref_fput(out, n->dtype, at, f);
                } else {
                    u += (uint64_t)ref_iget(x, n->dtype, at);
                    ref_iput(out, n->dtype, at, u);
                }
            }
        }
    return KILN_STATUS_OK;
}

/* The gradient's kinds of dot_product_attention (ir.h, ir_attn_kind) from their
 * definitions, in f64 per (b, i, n) over the keys as the forward pass scores them: LSE
 * writes log sum_j exp(s_j) (as max + log sum exp(s_j - max)); the others take lse and
 * delta as given, p_j = exp(s_j - lse), ds_j = p_j (ct . v_j - delta) (0 at a key scored
 * the fill: a constant), and add scale ds_j k_j into dq, scale ds_j q into dk_j and p_j ct
 * into dv_j, summed in f64 and each output rounded once. */
static kiln_status ref_attention_grad(const kiln_graph *g, const ir_node *n, const ref_value *vals,
                                      void *out) {
    const ir_node *qn = ref_in_node(g, n, 0), *kn = ref_in_node(g, n, 1);
    int kind = n->a.attn.kind, o = qn->shape.rank - 3;
    const ir_node *vn = kind == IR_ATTN_LSE ? kn : ref_in_node(g, n, 2);
    const void *q = ref_in_data(vals, n, 0), *k = ref_in_data(vals, n, 1);
    bool grad = kind != IR_ATTN_LSE; /* (an empty operand's data is NULL) */
    const void *v = grad ? ref_in_data(vals, n, 2) : NULL;
    const void *ct = grad ? ref_in_data(vals, n, 3) : NULL,
               *lse = grad ? ref_in_data(vals, n, 4) : NULL,
               *dl = grad ? ref_in_data(vals, n, 5) : NULL;
    int64_t B = o ? qn->shape.dims[0] : 1, T = qn->shape.dims[o], N = qn->shape.dims[o + 1],
            H = qn->shape.dims[o + 2], S = kn->shape.dims[o], K = kn->shape.dims[o + 1],
            Hv = vn->shape.dims[o + 2], G = N / K;
    kiln_dtype t = qn->dtype, st = ir_attn_sum_dtype(t);
    int64_t n_out = 1;
    for (int a = 0; a < n->shape.rank; a++) n_out *= n->shape.dims[a];
    size_t bytes = (size_t)(S + n_out + 1) * sizeof(double);
    double *s = host_alloc(g->ctx, bytes), *acc = s + S;
    if (!s)
        return ctx_oom(g->ctx, "reference interpreter: dot_product_attention's gradient", bytes);
    for (int64_t x = 0; x < n_out; x++) acc[x] = 0;
    double scale = n->a.attn.scale, fill = n->a.attn.fill;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < T; i++)
            for (int64_t h = 0; h < N; h++) {
                int64_t kh = h / G, seen = n->a.attn.causal && i + 1 < S ? i + 1 : S;
                int64_t keys = isfinite(fill) ? S : seen, row = (b * T + i) * N + h;
                double mx = -INFINITY;
                for (int64_t j = 0; j < keys; j++) {
                    double d = 0;
                    for (int64_t e = 0; j < seen && e < H; e++)
                        d += ref_fget(q, t, row * H + e) *
                             ref_fget(k, t, ((b * S + j) * K + kh) * H + e);
                    s[j] = j < seen ? scale * d : fill;
                    mx = s[j] > mx || s[j] != s[j] ? s[j] : mx; /* NaN propagates */
                }
                if (kind == IR_ATTN_LSE) {
                    double sum = 0;
                    for (int64_t j = 0; j < keys; j++) sum += exp(s[j] - mx);
                    acc[row] = mx + log(sum);
                    continue;
                }
                double l = ref_fget(lse, st, row), dr = ref_fget(dl, st, row);
                for (int64_t j = 0; j < keys; j++) {
                    double p = exp(s[j] - l), dp = 0;
                    int64_t kv = (b * S + j) * K + kh;
                    for (int64_t e = 0; e < Hv; e++)
                        dp += ref_fget(ct, t, row * Hv + e) * ref_fget(v, t, kv * Hv + e);
                    double ds = j < seen ? p * (dp - dr) : 0;
                    if (kind == IR_ATTN_GRAD_Q)
                        for (int64_t e = 0; e < H; e++)
                            acc[row * H + e] += scale * ds * ref_fget(k, t, kv * H + e);
                    else if (kind == IR_ATTN_GRAD_K)
                        for (int64_t e = 0; e < H; e++)
                            acc[kv * H + e] += scale * ds * ref_fget(q, t, row * H + e);
                    else
                        for (int64_t e = 0; e < Hv; e++)
                            acc[kv * Hv + e] += p * ref_fget(ct, t, row * Hv + e);
                }
            }
    for (int64_t x = 0; x < n_out; x++) ref_fput(out, n->dtype, x, acc[x]);
    host_free(g->ctx, s, bytes);
    return KILN_STATUS_OK;
}

/* dot_product_attention straight from its definition (include/kiln.h): per (b, i, n),
 * the scores s_j = scale * (q . k_j) in f64 over the keys it sees (j <= i when causal;
 * a key j > i scores the fill instead when that is finite), p_j = exp(s_j - max s) / sum,
 * out = sum_j p_j v_j, each output rounded once. */
static kiln_status ref_attention(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                 void *out) {
    const ir_node *n = &g->nodes[id];
    if (n->a.attn.kind != IR_ATTN_FORWARD) return ref_attention_grad(g, n, vals, out);
    const ir_node *qn = ref_in_node(g, n, 0), *kn = ref_in_node(g, n, 1),
                  *vn = ref_in_node(g, n, 2);
    const void *q = IN_OF(n), *k = ref_in_data(vals, n, 1), *v = ref_in_data(vals, n, 2);
    int o = qn->shape.rank - 3;
    int64_t B = o ? qn->shape.dims[0] : 1, T = qn->shape.dims[o], N = qn->shape.dims[o + 1],
            H = qn->shape.dims[o + 2], S = kn->shape.dims[o], K = kn->shape.dims[o + 1],
            Hv = vn->shape.dims[o + 2], G = N / K;
    kiln_dtype t = n->dtype;
    size_t bytes = (size_t)(S + Hv) * sizeof(double);
    double *s = host_alloc(g->ctx, bytes ? bytes : 1), *acc = s + S;
    if (!s) return ctx_oom(g->ctx, "reference interpreter: dot_product_attention's scores", bytes);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < T; i++)
            for (int64_t h = 0; h < N; h++) {
                int64_t kh = h / G, seen = n->a.attn.causal && i + 1 < S ? i + 1 : S;
                double mx = -INFINITY, sum = 0, fill = n->a.attn.fill;
                int64_t keys = isfinite(fill) ? S : seen; /* j >= seen score the fill */
                for (int64_t j = seen; j < keys; j++) {
                    s[j] = fill;
                    mx = fill > mx ? fill : mx;
                }
                for (int64_t j = 0; j < seen; j++) {
                    double d = 0;
                    for (int64_t e = 0; e < H; e++)
                        d += ref_fget(q, t, ((b * T + i) * N + h) * H + e) *
                             ref_fget(k, t, ((b * S + j) * K + kh) * H + e);
                    s[j] = n->a.attn.scale * d;
                    mx = s[j] > mx || s[j] != s[j] ? s[j] : mx; /* NaN propagates */
                }
                for (int64_t e = 0; e < Hv; e++) acc[e] = 0;
                for (int64_t j = 0; j < keys; j++) {
                    double p = exp(s[j] - mx);
                    sum += p;
                    for (int64_t e = 0; e < Hv; e++)
                        acc[e] += p * ref_fget(v, t, ((b * S + j) * K + kh) * Hv + e);
                }
                for (int64_t e = 0; e < Hv; e++)
                    ref_fput(out, t, ((b * T + i) * N + h) * Hv + e, acc[e] / sum);
            }
    host_free(g->ctx, s, bytes ? bytes : 1);
    return KILN_STATUS_OK;
}

/* ---------------------------------------------------------------- sorting ---- */

/* One row of an argsort: its elements are at x + (base + j * step), j < len. */
typedef struct sort_row {
    const void *x;
    kiln_dtype t;
    int64_t base, step;
    bool descending, total;
} sort_row;

/* Where a float stands in the order: -1 for a NaN with its sign set (total order only),
 * +1 for every other NaN, 0 for a number. */
static int nan_class(double v, bool total) {
    if (!isnan(v)) return 0;
    return total && signbit(v) ? -1 : 1;
}

/* <0, 0 or >0 as x[i] sorts before, with or after x[j] ascending (JAX's orders, ir.h). */
static int sort_cmp_asc(const sort_row *r, int64_t i, int64_t j) {
    int64_t a = r->base + i * r->step, b = r->base + j * r->step;
    if (!ir_dtype_is_float(r->t)) {
        int64_t u = ref_iget(r->x, r->t, a), v = ref_iget(r->x, r->t, b);
        return (u > v) - (u < v);
    }
    double u = ref_fget(r->x, r->t, a), v = ref_fget(r->x, r->t, b);
    int cu = nan_class(u, r->total), cv = nan_class(v, r->total);
    if (cu || cv) return (cu > cv) - (cu < cv);
    if (u != v) return u < v ? -1 : 1;
    if (r->total && u == 0) return (int)!signbit(u) - (int)!signbit(v); /* -0 < +0 */
    return 0;
}

/* Ties go to the earlier position whichever the direction: the sort is stable. */
static bool sort_before(const sort_row *r, int64_t i, int64_t j) {
    int c = sort_cmp_asc(r, i, j);
    if (r->descending) c = -c;
    return c < 0 || (c == 0 && i < j);
}

/* A plain top-down merge sort of positions p[0..n) (tmp of n as scratch). */
static void merge_sort(const sort_row *r, int64_t *p, int64_t *tmp, int64_t n) {
    if (n < 2) return;
    int64_t h = n / 2;
    merge_sort(r, p, tmp, h);
    merge_sort(r, p + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = sort_before(r, p[j], p[i]) ? p[j++] : p[i++];
    while (i < h) tmp[k++] = p[i++];
    while (j < n) tmp[k++] = p[j++];
    memcpy(p, tmp, (size_t)n * sizeof *p);
}

/* argsort: each row (x as [outer, len, inner]) sorted in full, its first k positions kept. */
static kiln_status ref_argsort(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id], *xn = ref_in_node(g, n, 0);
    int ax = n->a.sort.axis;
    int64_t len = xn->shape.dims[ax], k = n->a.sort.k, outer = 1, inner = 1;
    for (int i = 0; i < ax; i++) outer *= xn->shape.dims[i];
    for (int i = ax + 1; i < xn->shape.rank; i++) inner *= xn->shape.dims[i];
    if (!outer || !inner || !k) return KILN_STATUS_OK;
    size_t bytes = 2 * (size_t)len * sizeof(int64_t);
    int64_t *p = host_alloc(g->ctx, bytes);
    if (!p) return ctx_oom(g->ctx, "reference: argsort's positions", bytes);
    sort_row r = {IN_OF(n), xn->dtype, 0, inner, n->a.sort.descending, n->a.sort.total};
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            r.base = o * len * inner + q;
            for (int64_t j = 0; j < len; j++) p[j] = j;
            merge_sort(&r, p, p + len, len);
            for (int64_t j = 0; j < k; j++)
                ref_iput(out, KILN_DTYPE_I32, (o * k + j) * inner + q, (uint64_t)p[j]);
        }
    host_free(g->ctx, p, bytes);
    return KILN_STATUS_OK;
}

/* ------------------------------------------------------------ convolution ---- */

/* The definition (ir.h's KN_CONV_OPS, backend_impl.h's kn_conv_desc), walked over every
 * (n, o, output position, i, kernel position) once: each term adds to the element its
 * kind computes, in f64 for floats (wrapping uint64 for integers), rounded once at the
 * end. */
static kiln_status ref_conv(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    ir_conv_geom gm;
    char msg[256];
    if (ir_conv_geometry(g, n, &gm, msg, sizeof msg))
        return ctx_error(g->ctx, KILN_STATUS_INTERNAL, "reference interpreter: %s", msg);
    int kind = n->a.conv.kind, ns = gm.ns;
    kiln_dtype t = n->dtype;
    bool fl = ir_dtype_is_float(t);
    int64_t count = ref_numel(&n->shape);
    size_t bytes = (size_t)(count ? count : 1) * sizeof(double);
    void *acc = host_alloc(g->ctx, bytes);
    if (!acc) return ctx_oom(g->ctx, "reference interpreter: convolution's sums", bytes);
    memset(acc, 0, bytes);
    double *facc = acc;
    uint64_t *iacc = acc;
    const int64_t *xs = gm.lhs_st, *ws = gm.rhs_st, *ys = gm.res_st;
    const void *x = kind == IR_CONV_INPUT_GRAD ? NULL : IN_OF(n);
    const void *w = kind == IR_CONV_FILTER_GRAD ? NULL : ref_in_data(vals, n, 1);
    const void *ct = kind == IR_CONV_INPUT_GRAD    ? IN_OF(n)
                     : kind == IR_CONV_FILTER_GRAD ? ref_in_data(vals, n, 1)
                                                   : NULL;
    int64_t kk = 1, pp = 1, og = gm.o / gm.groups;
    for (int d = 0; d < ns; d++) kk *= gm.k[d], pp *= gm.out[d];
    for (int64_t b = 0; b < gm.n; b++)
        for (int64_t o = 0; o < gm.o; o++)
            for (int64_t q = 0; q < pp; q++) {
                int64_t qi[KILN_CONV_MAX_SPATIAL], rest = q, yo = b * ys[0] + o * ys[1];
                for (int d = ns - 1; d >= 0; d--) qi[d] = rest % gm.out[d], rest /= gm.out[d];
                for (int d = 0; d < ns; d++) yo += qi[d] * ys[2 + d];
                for (int64_t k = 0; k < kk; k++) {
                    int64_t xo = b * xs[0], wo = o * ws[0], kr = k;
                    bool inside = true;
                    for (int d = ns - 1; d >= 0; d--) {
                        int64_t kd = kr % gm.k[d];
                        kr /= gm.k[d];
                        int64_t p =
                            qi[d] * n->a.conv.stride[d] + kd * n->a.conv.rd[d] - n->a.conv.lo[d];
                        int64_t ld = n->a.conv.ld[d];
                        inside &= p >= 0 && p % ld == 0 && p / ld < gm.in[d];
                        xo += (p / ld) * xs[2 + d];
                        wo += kd * ws[2 + d];
                    }
                    if (!inside) continue;
                    for (int64_t i = 0; i < gm.i; i++) {
                        int64_t xi = xo + (o / og * gm.i + i) * xs[1], wi = wo + i * ws[1];
                        /* the two operands' elements and where their product goes */
                        int64_t ea = kind == IR_CONV_INPUT_GRAD ? yo : xi;
                        int64_t eb = kind == IR_CONV_FILTER_GRAD ? yo : wi;
                        int64_t er = kind == IR_CONV_FORWARD      ? yo
                                     : kind == IR_CONV_INPUT_GRAD ? xi
                                                                  : wi;
                        const void *pa = kind == IR_CONV_INPUT_GRAD ? ct : x;
                        const void *pb = kind == IR_CONV_FILTER_GRAD ? ct : w;
                        if (fl)
                            facc[er] += ref_fget(pa, t, ea) * ref_fget(pb, t, eb);
                        else
                            iacc[er] +=
                                (uint64_t)ref_iget(pa, t, ea) * (uint64_t)ref_iget(pb, t, eb);
                    }
                }
            }
    for (int64_t e = 0; e < count; e++) {
        if (fl)
            ref_fput(out, t, e, facc[e]);
        else
            ref_iput(out, t, e, iacc[e]);
    }
    host_free(g->ctx, acc, bytes);
    return KILN_STATUS_OK;
}

static const ref_eval_fn evals[IR_NUM_OPS] = {
    [IR_IOTA] = ref_iota,
    [IR_BROADCAST] = ref_broadcast,
    [IR_RESHAPE] = ref_reshape,
    [IR_TRANSPOSE] = ref_transpose,
    [IR_SLICE] = ref_slice,
    [IR_CONCAT] = ref_concat,
    [IR_PAD] = ref_pad,
    [IR_REV] = ref_rev,
    [IR_REDUCE_SUM] = ref_reduce,
    [IR_REDUCE_MAX] = ref_reduce,
    [IR_REDUCE_MIN] = ref_reduce,
    [IR_REDUCE_PROD] = ref_reduce,
    [IR_DOT] = ref_dot,
    [IR_TAKE_ROWS] = ref_take_rows,
    [IR_SCATTER_ADD_ROWS] = ref_scatter_add_rows,
    [IR_DYNAMIC_SLICE] = ref_dynamic_slice,
    [IR_DYNAMIC_UPDATE_SLICE] = ref_dynamic_update_slice,
    [IR_CUMSUM] = ref_cumsum,
    [IR_ATTENTION] = ref_attention,
    [IR_ARGSORT] = ref_argsort,
    [IR_CONV] = ref_conv,
};

ref_eval_fn ref_structural_eval(ir_op op) {
    return (unsigned)op < IR_NUM_OPS ? evals[op] : NULL;
}
