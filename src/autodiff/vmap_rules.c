/* vmap_rules.c — the batching rule of every op, in a table indexed by op (autodiff.h,
 * ad_vmap_entry; tests/test_registry.c checks that every op has a rule or a refusal).
 *
 * A rule is called only when at least one input of the node is batched, and every batched
 * value has its batch axis first, so most rules shift the node's axis attributes by one and
 * prepend the batch dimension (jax.vmap's batching rules, with its choice of moving the
 * batch axis to the front). Unbatched operands are broadcast to [B, ...] where the op needs
 * every operand batched (elementwise ops; fusion inlines the broadcast, so no buffer of B
 * copies is made for them). Control flow has its rules in vmap_control.c. The ops with no
 * direct rule (dynamic_slice/dynamic_update_slice with batched starts, pad with a batched
 * pad value) take the sequential path, ad_vmap_sequential: a kiln_scan over the batch axis. */
#include "autodiff.h"

#include <string.h>

/* Elementwise ops (and random, elementwise in its counter): every operand batched. */
static void rule_elementwise(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    kiln_value in[3];
    for (uint32_t k = 0; k < n->n_in; k++) in[k] = ad_vmap_in(w, n, k);
    out[0] = ad_vmap_emit(w->g, w->op, n, in, n->n_in);
}

/* Sources have no inputs, so they are never batched; the walker emits them as they are. */
static void rule_source(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    out[0] = ad_vmap_emit(w->g, w->op, n, NULL, 0);
}

/* all_reduce combines each element across replicas: the batch axis is one more axis. */
static void rule_same(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    kiln_value x = ad_vmap_in(w, n, 0);
    out[0] = ad_vmap_emit(w->g, w->op, n, &x, 1);
}

/* n's shape with the batch dimension in front. */
static void batch_shape(const ad_vmap *w, ir_node *t) {
    for (int i = t->shape.rank; i > 0; i--) t->shape.dims[i] = t->shape.dims[i - 1];
    t->shape.dims[0] = w->size;
    t->shape.rank++;
}

static void rule_broadcast(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    ir_node t = *n;
    int in_rank = w->s->nodes[ir_in(n)[0]].shape.rank;
    batch_shape(w, &t);
    t.a.bcast_dims[0] = 0;
    for (int i = 0; i < in_rank; i++) t.a.bcast_dims[i + 1] = n->a.bcast_dims[i] + 1;
    kiln_value x = ad_vmap_in(w, n, 0);
    out[0] = ad_vmap_emit(w->g, w->op, &t, &x, 1);
}

static void rule_reshape(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    ir_node t = *n;
    batch_shape(w, &t);
    kiln_value x = ad_vmap_in(w, n, 0);
    out[0] = ad_vmap_emit(w->g, w->op, &t, &x, 1);
}

static void rule_transpose(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    ir_node t = *n;
    t.a.perm[0] = 0;
    for (int i = 0; i < n->shape.rank; i++) t.a.perm[i + 1] = n->a.perm[i] + 1;
    kiln_value x = ad_vmap_in(w, n, 0);
    out[0] = ad_vmap_emit(w->g, w->op, &t, &x, 1);
}

static void rule_slice(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    ir_node t = *n;
    for (int i = n->shape.rank; i > 0; i--) {
        t.a.slice.start[i] = n->a.slice.start[i - 1];
        t.a.slice.limit[i] = n->a.slice.limit[i - 1];
        t.a.slice.stride[i] = n->a.slice.stride[i - 1];
    }
    t.a.slice.start[0] = 0, t.a.slice.limit[0] = w->size, t.a.slice.stride[0] = 1;
    kiln_value x = ad_vmap_in(w, n, 0);
    out[0] = ad_vmap_emit(w->g, w->op, &t, &x, 1);
}

static void rule_concat(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    kiln_value *in = host_alloc(w->g->ctx, n->n_in * sizeof *in);
    if (!in) {
        trace_fail(w->g, KILN_STATUS_HOST_OOM, w->op, "host allocation failed");
        return;
    }
    for (uint32_t k = 0; k < n->n_in; k++) in[k] = ad_vmap_in(w, n, k);
    ir_node t = *n;
    t.a.axis = n->a.axis + 1;
    out[0] = ad_vmap_emit(w->g, w->op, &t, in, n->n_in);
    host_free(w->g->ctx, in, n->n_in * sizeof *in);
}

/* pad: the operand batched, the pad value (a scalar) shared; a batched pad value differs
 * per example and takes the sequential path. */
static void rule_pad(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    if (w->batched[ir_in(n)[1]]) {
        ad_vmap_sequential(w, id, n, out);
        return;
    }
    ir_node t = *n;
    int r = n->shape.rank;
    for (int i = r; i > 0; i--) {
        t.a.pad.lo[i] = n->a.pad.lo[i - 1];
        t.a.pad.hi[i] = n->a.pad.hi[i - 1];
        t.a.pad.interior[i] = n->a.pad.interior[i - 1];
    }
    t.a.pad.lo[0] = t.a.pad.hi[0] = t.a.pad.interior[0] = 0;
    kiln_value in[2] = {ad_vmap_in(w, n, 0), w->map[ir_in(n)[1]]};
    out[0] = ad_vmap_emit(w->g, w->op, &t, in, 2);
}

/* rev and the reductions: an axis set, shifted by one. */
static void rule_axes(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    ir_node t = *n;
    if (n->op == IR_REV)
        t.a.rev_axes = n->a.rev_axes << 1;
    else
        t.a.reduce_axes = n->a.reduce_axes << 1;
    kiln_value x = ad_vmap_in(w, n, 0);
    out[0] = ad_vmap_emit(w->g, w->op, &t, &x, 1);
}

/* cumsum and argsort: one axis, shifted by one. */
static void rule_axis(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    ir_node t = *n;
    if (n->op == IR_CUMSUM)
        t.a.scan.axis = n->a.scan.axis + 1;
    else
        t.a.sort.axis = n->a.sort.axis + 1;
    kiln_value x = ad_vmap_in(w, n, 0);
    out[0] = ad_vmap_emit(w->g, w->op, &t, &x, 1);
}

static void shift_axes(int *a, int n) {
    for (int i = 0; i < n; i++) a[i]++;
}

/* dot_general: both batched, the batch axis becomes a batch dimension of the product, the
 * first (so the result has it first); one batched, it is a free axis of that side, moved to
 * the front of the result afterwards. */
static void rule_dot(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const uint32_t *in = ir_in(n);
    bool lb = w->batched[in[0]], rb = w->batched[in[1]];
    kiln_dot_dims d = n->a.dot;
    int lrank = w->s->nodes[in[0]].shape.rank, at = 0;
    if (lb) shift_axes(d.lhs_contract, d.n_contract), shift_axes(d.lhs_batch, d.n_batch);
    if (rb) shift_axes(d.rhs_contract, d.n_contract), shift_axes(d.rhs_batch, d.n_batch);
    if (lb && rb) {
        for (int i = d.n_batch; i > 0; i--)
            d.lhs_batch[i] = d.lhs_batch[i - 1], d.rhs_batch[i] = d.rhs_batch[i - 1];
        d.lhs_batch[0] = d.rhs_batch[0] = 0;
        d.n_batch++;
    } else if (lb) {
        at = n->a.dot.n_batch; /* the first of the lhs free axes */
    } else {
        at = lrank - n->a.dot.n_contract; /* batch axes, then lhs free axes, then rhs free */
    }
    ir_node t = *n;
    t.a.dot = d;
    kiln_value x[2] = {w->map[in[0]], w->map[in[1]]};
    out[0] = ad_vmap_moveaxis(w, ad_vmap_emit(w->g, w->op, &t, x, 2), at, 0);
}

/* Attention takes [T, N, H] or [B, T, N, H]: a batched rank-3 call is a rank-4 one; a
 * batched rank-4 call folds the two leading axes into one and unfolds the result. */
static void rule_attention(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    kiln_value x[3];
    int rank = n->shape.rank;
    for (uint32_t k = 0; k < 3; k++) {
        x[k] = ad_vmap_in(w, n, k);
        if (rank == 4 && x[k].id) {
            const ir_shape *sh = &w->g->nodes[x[k].id].shape;
            int64_t dims[4] = {sh->dims[0] * sh->dims[1], sh->dims[2], sh->dims[3], sh->dims[4]};
            x[k] = ad_vmap_reshape(w, x[k], 4, dims);
        }
    }
    kiln_value y = ad_vmap_emit(w->g, w->op, n, x, 3);
    if (rank == 4 && y.id) {
        int64_t dims[5] = {w->size, n->shape.dims[0], n->shape.dims[1], n->shape.dims[2],
                           n->shape.dims[3]};
        y = ad_vmap_reshape(w, y, 5, dims);
    }
    out[0] = y;
}

/* The row index b * rows + idx of example b's row idx in the flattened [B * rows, ...]
 * table, for idx [B, ...]: idx clamped first (take_rows clamps), or, for a scatter, an
 * index out of range kept out of range (-1, which scatter_add_rows drops) so it cannot land
 * in another example's rows. */
static kiln_value flat_rows(ad_vmap *w, kiln_value idx, int64_t rows, bool clamp) {
    kiln_graph *g = w->g;
    if (!idx.id) return idx;
    const ir_node *in = &g->nodes[idx.id];
    kiln_dtype t = in->dtype;
    ir_shape sh = in->shape;
    kiln_value lo = trace_scalar(g, w->op, t, 0), hi = trace_scalar(g, w->op, t, (double)rows - 1);
    kiln_value base =
        kiln_mul(g, kiln_iota(g, t, sh.rank, sh.dims, 0), trace_scalar(g, w->op, t, (double)rows));
    if (clamp) return kiln_add(g, kiln_min(g, kiln_max(g, idx, lo), hi), base);
    kiln_value ok = kiln_logical_and(g, kiln_compare(g, idx, lo, KILN_CMP_GE),
                                     kiln_compare(g, idx, hi, KILN_CMP_LE));
    return kiln_where(g, ok, kiln_add(g, idx, base), trace_scalar(g, w->op, t, -1));
}

/* table [B, rows, ...] -> [B * rows, ...]. */
static kiln_value flat_table(ad_vmap *w, kiln_value x) {
    if (!x.id) return x;
    const ir_shape *sh = &w->g->nodes[x.id].shape;
    int64_t dims[KILN_MAX_RANK];
    dims[0] = sh->dims[0] * sh->dims[1];
    for (int i = 2; i < sh->rank; i++) dims[i - 1] = sh->dims[i];
    return ad_vmap_reshape(w, x, sh->rank - 1, dims);
}

/* take_rows: batched indices into a shared table are a take_rows of their own (the result
 * has the indices' batch axis first); a batched table is flattened and indexed by
 * b * rows + idx. */
static void rule_take_rows(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const uint32_t *in = ir_in(n);
    if (!w->batched[in[0]]) {
        kiln_value x[2] = {w->map[in[0]], w->map[in[1]]};
        out[0] = ad_vmap_emit(w->g, w->op, n, x, 2);
        return;
    }
    int64_t rows = w->s->nodes[in[0]].shape.dims[0];
    kiln_value x[2] = {flat_table(w, w->map[in[0]]), flat_rows(w, ad_vmap_in(w, n, 1), rows, true)};
    out[0] = ad_vmap_emit(w->g, w->op, n, x, 2);
}

/* scatter_add_rows: everything batched, the operand flattened to [B * rows, ...] and the
 * indices offset by b * rows, then the result unflattened. */
static void rule_scatter_add_rows(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    int64_t rows = w->s->nodes[ir_in(n)[0]].shape.dims[0];
    kiln_value x[3] = {flat_table(w, ad_vmap_in(w, n, 0)),
                       flat_rows(w, ad_vmap_in(w, n, 1), rows, false), ad_vmap_in(w, n, 2)};
    ir_node t = *n;
    kiln_value y = ad_vmap_emit(w->g, w->op, &t, x, 3);
    ir_shape sh = n->shape;
    int64_t dims[KILN_MAX_RANK + 1] = {w->size};
    for (int i = 0; i < sh.rank; i++) dims[i + 1] = sh.dims[i];
    out[0] = ad_vmap_reshape(w, y, sh.rank + 1, dims);
}

/* dynamic_slice / dynamic_update_slice with shared starts: one more start, 0, for the batch
 * axis (and the whole batch as its size). Batched starts differ per example: the sequential
 * path (a gather would do it in one op; kiln has none yet). */
static void rule_dynamic(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    const uint32_t *in = ir_in(n);
    uint32_t first = n->op == IR_DYNAMIC_UPDATE_SLICE ? 2 : 1;
    for (uint32_t k = first; k < n->n_in; k++)
        if (w->batched[in[k]]) {
            ad_vmap_sequential(w, id, n, out);
            return;
        }
    kiln_value x[2 * KILN_MAX_RANK + 2];
    uint32_t m = 0;
    for (uint32_t k = 0; k < first; k++) x[m++] = ad_vmap_in(w, n, k);
    x[m++] = trace_scalar(w->g, w->op, w->s->nodes[in[first]].dtype, 0);
    for (uint32_t k = first; k < n->n_in; k++) x[m++] = w->map[in[k]];
    ir_node t = *n;
    if (n->op == IR_DYNAMIC_SLICE) {
        for (int i = n->shape.rank; i > 0; i--) t.a.dyn_sizes[i] = n->a.dyn_sizes[i - 1];
        t.a.dyn_sizes[0] = w->size;
    }
    out[0] = ad_vmap_emit(w->g, w->op, &t, x, m);
}

#define EW                                                                                         \
    { rule_elementwise, "elementwise", NULL }
#define SEQ                                                                                        \
    { ad_vmap_sequential, "sequential (a kiln_scan over the batch)", NULL }

static const ad_vmap_entry entries[IR_NUM_OPS] = {
    [IR_PARAMETER] = {NULL, "mapped by kiln_vmap itself",
                      "a parameter of fn is one of kiln_vmap's args or captures: it has no rule"},
    [IR_CONSTANT] = {rule_source, "source (never batched)", NULL},
    [IR_IOTA] = {rule_source, "source (never batched)", NULL},
#define UN(e, name, ident, arity, kind, types, flags, cost, kf, ki) [IR_##e] = EW,
    KN_UNARY_OPS(UN) KN_BINARY_OPS(UN)
#undef UN
        [IR_CONVERT] = EW,
    [IR_COMPARE] = EW,
    [IR_SELECT] = EW,
    [IR_RANDOM] = EW,
    [IR_BROADCAST] = {rule_broadcast, "axis shift", NULL},
    [IR_RESHAPE] = {rule_reshape, "axis shift", NULL},
    [IR_TRANSPOSE] = {rule_transpose, "axis shift", NULL},
    [IR_SLICE] = {rule_slice, "axis shift", NULL},
    [IR_CONCAT] = {rule_concat, "axis shift", NULL},
    [IR_PAD] = {rule_pad, "axis shift (sequential for a batched pad value)", NULL},
    [IR_REV] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_SUM] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_MAX] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_MIN] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_PROD] = {rule_axes, "axis shift", NULL},
    [IR_CUMSUM] = {rule_axis, "axis shift", NULL},
    [IR_ARGSORT] = {rule_axis, "axis shift", NULL},
    [IR_DOT] = {rule_dot, "dot batch dimension", NULL},
    [IR_TAKE_ROWS] = {rule_take_rows, "row offsets into a flattened table", NULL},
    [IR_SCATTER_ADD_ROWS] = {rule_scatter_add_rows, "row offsets into a flattened operand", NULL},
    [IR_DYNAMIC_SLICE] = {rule_dynamic, "leading start 0 (sequential for batched starts)", NULL},
    [IR_DYNAMIC_UPDATE_SLICE] = {rule_dynamic, "leading start 0 (sequential for batched starts)",
                                 NULL},
    [IR_ATTENTION] = {rule_attention, "leading batch dimension", NULL},
    [IR_ALL_REDUCE] = {rule_same, "unchanged (elementwise across replicas)", NULL},
    [IR_WHILE] = {ad_vmap_while,
                  "batched body (masked and run while any holds when the "
                  "predicate is batched)",
                  NULL},
    [IR_SCAN] = {ad_vmap_scan, "batched body", NULL},
    [IR_COND] = {ad_vmap_cond,
                 "batched branches (all run and selected when the index is "
                 "batched)",
                 NULL},
    [IR_RESULT] = {NULL, "batched with its control node",
                   "a result is batched with the control node that makes it"},
};

const ad_vmap_entry *ad_vmap_entry_for(ir_op op) {
    static const ad_vmap_entry none = {NULL, NULL, "no batching rule"};
    return (unsigned)op < IR_NUM_OPS ? &entries[op] : &none;
}
