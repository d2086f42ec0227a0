/* vmap_rules.c — the batching rule of every op, in a table indexed by op (autodiff.h,
 * ad_vmap_entry; tests/test_registry.c checks that every op has a rule or a refusal).
 *
 * A rule is called only when at least one input of the node is batched, and every batched
 * value has its batch axis first, so most rules shift the node's axis attributes by one and
 * prepend the batch dimension (jax.vmap's batching rules, with its choice of moving the
 * batch axis to the front). Unbatched operands are broadcast to [B, ...] where the op needs
 * every operand batched (elementwise ops; fusion inlines the broadcast, so no buffer of B
 * copies is made for them). Control flow has its rules in vmap_control.c. Every op has a
 * direct rule; SEQ, the sequential path (ad_vmap_sequential: a kiln_scan over the batch
 * axis, correct for any op but a loop), is the row for an op added before its rule is. */
#include "autodiff.h"

#include <string.h>

/* Elementwise ops (and random, elementwise in its counter), and the linear algebra ops,
 * whose batch axes lead: every operand batched, the node as it was. */
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

/* reduce_scatter and all_gather split or join the leading axis of the per-example value:
 * the batch axis moves behind it for the collective and back to the front after. */
static void rule_shard(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    kiln_value x = ad_vmap_moveaxis(w, ad_vmap_in(w, n, 0), 0, 1);
    out[0] = ad_vmap_moveaxis(w, ad_vmap_emit(w->g, w->op, n, &x, 1), 1, 0);
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

/* pad: the operand batched, the pad value (a scalar) shared. A batched pad value differs
 * per example: x padded with any value where x's elements land (a pad of true with false
 * says where), the example's own value elsewhere. */
static void rule_pad(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    ir_node t = *n;
    int r = n->shape.rank;
    for (int i = r; i > 0; i--) {
        t.a.pad.lo[i] = n->a.pad.lo[i - 1];
        t.a.pad.hi[i] = n->a.pad.hi[i - 1];
        t.a.pad.interior[i] = n->a.pad.interior[i - 1];
    }
    t.a.pad.lo[0] = t.a.pad.hi[0] = t.a.pad.interior[0] = 0;
    kiln_graph *g = w->g;
    uint32_t vid = ir_in(n)[1];
    kiln_value x = ad_vmap_in(w, n, 0);
    if (!w->batched[vid]) {
        out[0] = ad_vmap_emit(g, w->op, &t, (kiln_value[]){x, w->map[vid]}, 2);
        return;
    }
    if (!x.id) return;
    ir_shape xs = g->nodes[x.id].shape;
    kiln_value padded =
        ad_vmap_emit(g, w->op, &t, (kiln_value[]){x, trace_scalar(g, w->op, n->dtype, 0)}, 2);
    kiln_value ones = kiln_full(g, KILN_DTYPE_BOOL, xs.rank, xs.dims, 1);
    ir_node tm = t;
    tm.dtype = KILN_DTYPE_BOOL;
    kiln_value mask = ad_vmap_emit(
        g, w->op, &tm, (kiln_value[]){ones, trace_scalar(g, w->op, KILN_DTYPE_BOOL, 0)}, 2);
    if (!padded.id) return;
    ir_shape ps = g->nodes[padded.id].shape;
    kiln_value val = kiln_broadcast_in_dim(g, w->map[vid], ps.rank, ps.dims, (const int[]){0});
    out[0] = kiln_select(g, mask, padded, val);
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

/* x (batch at axis 0, per-example axes after it) with the batch merged into per-example
 * axis `ax`, as its outer factor ([B, ..., X, ...] -> [..., B * X, ...]) or, inner, its
 * inner one ([..., X * B, ...]: element x * B + b). */
static kiln_value fold_into(ad_vmap *w, kiln_value x, int ax, bool inner) {
    if (!x.id) return x;
    kiln_value m = ad_vmap_moveaxis(w, x, 0, inner ? ax + 1 : ax);
    const ir_shape *sh = &w->g->nodes[m.id].shape;
    int64_t dims[KILN_MAX_RANK];
    int r = sh->rank - 1;
    for (int a = 0, k = 0; a < sh->rank; a++) {
        if (a == ax + 1) continue;
        dims[k++] = a == ax ? sh->dims[ax] * sh->dims[ax + 1] : sh->dims[a];
    }
    return ad_vmap_reshape(w, m, r, dims);
}

/* The inverse of fold_into for the result y of node n (batched: its axis `ax` holds B
 * times n's extent there): [B, ..., X, ...]. */
static kiln_value unfold_from(ad_vmap *w, const ir_node *n, kiln_value y, int ax, bool inner) {
    if (!y.id) return y;
    int64_t dims[KILN_MAX_RANK];
    int r = n->shape.rank + 1;
    for (int a = 0, k = 0; a < n->shape.rank; a++) {
        if (a == ax && !inner) dims[k++] = w->size;
        dims[k++] = n->shape.dims[a];
        if (a == ax && inner) dims[k++] = w->size;
    }
    return ad_vmap_moveaxis(w, ad_vmap_reshape(w, y, r, dims), inner ? ax + 1 : ax, 0);
}

/* A convolution of any kind, jax's rule without its broadcasts. With one operand batched,
 * the batch joins an axis of it that indexes the result's elements without being summed
 * (the forward: lhs N -> out N, kernel O -> out features; the input gradient: cotangent
 * N -> lhs N, kernel I -> lhs features; the filter gradient: lhs features -> kernel I,
 * cotangent features -> kernel O), as that axis' inner factor, which keeps each feature
 * group's channels together for any number of groups. With both batched it joins the
 * feature groups: merged as the outer factor of the axis the groups split (the lhs's
 * features, the kernel's output features, the output's features), the node runs with B
 * times the groups, example b being groups b * G .. b * G + G - 1. An empty batch gives
 * zeros. */
static void rule_conv(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const uint32_t *in = ir_in(n);
    int kind = n->a.conv.kind, rank = n->shape.rank;
    const int *ls = n->a.conv.lhs, *rs = n->a.conv.rhs, *os = n->a.conv.out;
    bool b0 = w->batched[in[0]], b1 = w->batched[in[1]];
    if (w->size == 0) {
        int64_t dims[KILN_MAX_RANK] = {0};
        for (int a = 0; a < rank; a++) dims[1 + a] = n->shape.dims[a];
        out[0] = kiln_full(w->g, n->dtype, rank + 1, dims, 0);
        return;
    }
    ir_node t = *n;
    kiln_value x[2] = {w->map[in[0]], w->map[in[1]]};
    if (b0 != b1) {
        int k = b0 ? 0 : 1, from, to;
        switch (kind) {
        case IR_CONV_FORWARD: from = k ? rs[0] : ls[0], to = k ? os[1] : os[0]; break;
        case IR_CONV_INPUT_GRAD: from = k ? rs[1] : os[0], to = k ? ls[1] : ls[0]; break;
        default: from = k ? os[1] : ls[1], to = k ? rs[0] : rs[1]; break;
        }
        x[k] = fold_into(w, x[k], from, true);
        out[0] = unfold_from(w, n, ad_vmap_emit(w->g, w->op, &t, x, 2), to, true);
        return;
    }
    if ((int64_t)n->a.conv.groups * w->size > INT32_MAX) {
        out[0] = trace_fail(w->g, KILN_STATUS_SHAPE, w->op,
                            "%d feature groups times a batch of %lld is above 2^31 - 1",
                            n->a.conv.groups, (long long)w->size);
        return;
    }
    t.a.conv.groups = (int)(n->a.conv.groups * w->size);
    /* the axis the groups split in operand 0, operand 1 and the result, by kind */
    int g0 = kind == IR_CONV_INPUT_GRAD ? os[1] : ls[1];
    int g1 = kind == IR_CONV_FILTER_GRAD ? os[1] : rs[0];
    int gr = kind == IR_CONV_FORWARD ? os[1] : kind == IR_CONV_INPUT_GRAD ? ls[1] : rs[0];
    x[0] = fold_into(w, x[0], g0, false), x[1] = fold_into(w, x[1], g1, false);
    out[0] = unfold_from(w, n, ad_vmap_emit(w->g, w->op, &t, x, 2), gr, false);
}

/* Attention takes [T, N, H] or [B, T, N, H]: a batched rank-3 call is a rank-4 one; a
 * batched rank-4 call folds the two leading axes into one and unfolds the result. */
/* Every kind: operands with a batch axis of their own ([B, T, N, H] per example) have it
 * joined with the vmapped one; rank-3 ones ([T, N, H]) take the vmapped axis as theirs.
 * lse and delta ([B, T, N] or [T, N]) follow q. */
static void rule_attention(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    kiln_value x[6];
    uint32_t n_in = n->n_in < 6 ? n->n_in : 6;
    bool batched = w->s->nodes[ir_in(n)[0]].shape.rank == 4; /* each example has a batch axis */
    for (uint32_t k = 0; k < n_in; k++) {
        x[k] = ad_vmap_in(w, n, k);
        if (batched && x[k].id) {
            const ir_shape *sh = &w->g->nodes[x[k].id].shape;
            int64_t dims[KILN_MAX_RANK];
            dims[0] = sh->dims[0] * sh->dims[1];
            for (int a = 2; a < sh->rank; a++) dims[a - 1] = sh->dims[a];
            x[k] = ad_vmap_reshape(w, x[k], sh->rank - 1, dims);
        }
    }
    kiln_value y = ad_vmap_emit(w->g, w->op, n, x, n_in);
    if (batched && y.id) {
        int64_t dims[KILN_MAX_RANK] = {w->size};
        for (int a = 0; a < n->shape.rank; a++) dims[a + 1] = n->shape.dims[a];
        y = ad_vmap_reshape(w, y, n->shape.rank + 1, dims);
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

/* Rows pos[b, i] (positions along axis a of example b's x, [B, n] i64) of x [B, ...]:
 * axis a moved next to the batch axis, the two flattened, take_rows at b * dim + pos, and
 * the axis moved back: [B, ..., n at a, ...]. */
static kiln_value take_along(ad_vmap *w, kiln_value x, int a, kiln_value pos) {
    kiln_graph *g = w->g;
    if (!x.id || !pos.id) return KN_NONE;
    x = ad_vmap_moveaxis(w, x, a, 1);
    if (!x.id) return x;
    ir_shape sh = g->nodes[x.id].shape, ps = g->nodes[pos.id].shape;
    int64_t dim = sh.dims[1];
    kiln_value base = kiln_mul(g, kiln_iota(g, KILN_DTYPE_I64, 2, ps.dims, 0),
                               trace_scalar(g, w->op, KILN_DTYPE_I64, (double)dim));
    kiln_value y = kiln_take_rows(g, flat_table(w, x), kiln_add(g, base, pos));
    return ad_vmap_moveaxis(w, y, 1, a);
}

/* Start k of n clamped into [0, hi] as XLA clamps it, as i64 [B, 1] (or a scalar when it
 * is not batched). */
static kiln_value clamped_start(ad_vmap *w, const ir_node *n, uint32_t k, int64_t dim, int64_t hi) {
    kiln_graph *g = w->g;
    uint32_t id = ir_in(n)[k];
    kiln_value s = kiln_convert(g, w->map[id], KILN_DTYPE_I64);
    kiln_value zero = trace_scalar(g, w->op, KILN_DTYPE_I64, 0);
    s = kiln_select(g, kiln_compare(g, s, zero, KILN_CMP_LT),
                    kiln_add(g, s, trace_scalar(g, w->op, KILN_DTYPE_I64, (double)dim)), s);
    s = kiln_min(g, kiln_max(g, s, zero), trace_scalar(g, w->op, KILN_DTYPE_I64, (double)hi));
    return w->batched[id] ? ad_vmap_reshape(w, s, 2, (const int64_t[]){w->size, 1}) : s;
}

/* dynamic_slice with batched starts: one take_rows per axis that is sliced (a gather: each
 * example's window starts elsewhere), positions clamped start + i. */
static void dynamic_slice_batched(ad_vmap *w, const ir_node *n, kiln_value *out) {
    kiln_graph *g = w->g;
    const ir_shape *xs = &w->s->nodes[ir_in(n)[0]].shape;
    kiln_value x = ad_vmap_in(w, n, 0);
    for (int a = 0; a < xs->rank && x.id; a++) {
        int64_t size = n->a.dyn_sizes[a], dim = xs->dims[a];
        if (size == dim) continue; /* the start clamps to 0: the whole axis */
        kiln_value s = clamped_start(w, n, 1 + (uint32_t)a, dim, dim - size);
        int64_t pd[2] = {w->size, size};
        kiln_value pos = kiln_add(g, kiln_iota(g, KILN_DTYPE_I64, 2, pd, 1), s);
        x = take_along(w, x, a + 1, pos);
    }
    out[0] = x;
}

/* dynamic_update_slice with batched starts: the update gathered to x's extent (position p
 * reads update[p - start], clamped) and selected where p lies in the window. */
static void dynamic_update_batched(ad_vmap *w, const ir_node *n, kiln_value *out) {
    kiln_graph *g = w->g;
    const ir_shape *xs = &w->s->nodes[ir_in(n)[0]].shape;
    const ir_shape *us = &w->s->nodes[ir_in(n)[1]].shape;
    kiln_value x = ad_vmap_in(w, n, 0), u = ad_vmap_in(w, n, 1), in = KN_NONE;
    if (!x.id) return;
    ir_shape full = g->nodes[x.id].shape;
    for (int a = 0; a < xs->rank && u.id; a++) {
        int64_t dim = xs->dims[a], size = us->dims[a];
        kiln_value s = clamped_start(w, n, 2 + (uint32_t)a, dim, dim - size);
        int64_t pd[2] = {w->size, dim};
        kiln_value p = kiln_iota(g, KILN_DTYPE_I64, 2, pd, 1), rel = kiln_sub(g, p, s);
        kiln_value lo = trace_scalar(g, w->op, KILN_DTYPE_I64, 0);
        kiln_value hi = trace_scalar(g, w->op, KILN_DTYPE_I64, (double)size - 1);
        kiln_value inside = kiln_logical_and(g, kiln_compare(g, rel, lo, KILN_CMP_GE),
                                             kiln_compare(g, rel, hi, KILN_CMP_LE));
        inside = kiln_broadcast_in_dim(g, inside, full.rank, full.dims, (const int[]){0, a + 1});
        in = in.id ? kiln_logical_and(g, in, inside) : inside;
        u = take_along(w, u, a + 1, kiln_min(g, kiln_max(g, rel, lo), hi));
    }
    out[0] = in.id ? kiln_select(g, in, u, x) : u; /* rank 0: the update replaces x */
}

/* dynamic_slice / dynamic_update_slice with shared starts: one more start, 0, for the batch
 * axis (and the whole batch as its size). Batched starts differ per example: a gather per
 * sliced axis (take_rows over the flattened batch and axis). */
static void rule_dynamic(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const uint32_t *in = ir_in(n);
    uint32_t first = n->op == IR_DYNAMIC_UPDATE_SLICE ? 2 : 1;
    for (uint32_t k = first; k < n->n_in; k++)
        if (w->batched[in[k]]) {
            if (n->op == IR_DYNAMIC_SLICE)
                dynamic_slice_batched(w, n, out);
            else
                dynamic_update_batched(w, n, out);
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

/* Gather and scatter batch by their dimension numbers (ir.h, ir_attrs.gs), as JAX's rules
 * do: the operand's new leading axis (when batched) becomes a batching axis paired with the
 * indices' new leading axis, or, when the indices are not batched, a window taking the whole
 * batch; batched indices alone are one more batch axis of theirs. Every window moves one
 * output (updates) axis up, so the axis the indices' batch lands on is the first. */
static void shift_dims(const ir_node *n, int rank, bool idx_batched, ir_node *t) {
    for (int a = rank; a > 0; a--) {
        int wa = n->a.gs.window[a - 1], ba = n->a.gs.batch[a - 1];
        t->a.gs.window[a] = wa >= 0 ? wa + 1 : -1;
        t->a.gs.index[a] = n->a.gs.index[a - 1];
        t->a.gs.batch[a] = ba >= 0 ? ba + idx_batched : -1;
        t->a.gs.sizes[a] = n->a.gs.sizes[a - 1];
    }
}

static void rule_gather(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const uint32_t *in = ir_in(n);
    bool xb = w->batched[in[0]], ib = w->batched[in[1]];
    int rank = w->s->nodes[in[0]].shape.rank;
    if (!xb) { /* only the indices: one more batch axis of theirs */
        ir_node t = *n;
        for (int a = 0; a < rank; a++) {
            t.a.gs.window[a] = n->a.gs.window[a] >= 0 ? n->a.gs.window[a] + 1 : -1;
            t.a.gs.batch[a] = n->a.gs.batch[a] >= 0 ? n->a.gs.batch[a] + 1 : -1;
        }
        kiln_value x[2] = {w->map[in[0]], w->map[in[1]]};
        out[0] = ad_vmap_emit(w->g, w->op, &t, x, 2);
        return;
    }
    ir_node t = *n;
    shift_dims(n, rank, ib, &t);
    t.a.gs.index[0] = -1;
    t.a.gs.window[0] = ib ? -1 : 0; /* paired with the indices' batch, or a whole window */
    t.a.gs.batch[0] = ib ? 0 : -1;
    t.a.gs.sizes[0] = ib ? 1 : w->size;
    kiln_value x[2] = {w->map[in[0]], w->map[in[1]]};
    out[0] = ad_vmap_emit(w->g, w->op, &t, x, 2);
}

/* A scatter's result is batched when any input is: every input batched (the unbatched ones
 * broadcast), the operand's batch axis paired with the indices'. */
static void rule_scatter(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    int rank = w->s->nodes[ir_in(n)[0]].shape.rank;
    ir_node t = *n;
    shift_dims(n, rank, true, &t);
    t.a.gs.index[0] = -1, t.a.gs.window[0] = -1, t.a.gs.batch[0] = 0, t.a.gs.sizes[0] = 1;
    kiln_value x[3] = {ad_vmap_in(w, n, 0), ad_vmap_in(w, n, 1), ad_vmap_in(w, n, 2)};
    out[0] = ad_vmap_emit(w->g, w->op, &t, x, 3);
}

#define EW                                                                                         \
    { rule_elementwise, "elementwise", NULL }
/* The row of an op with no direct rule yet: correct for any op, but a loop over the batch. */
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
    [IR_BITCAST] = EW,
    [IR_COMPARE] = EW,
    [IR_SELECT] = EW,
    [IR_RANDOM] = EW,
    [IR_BROADCAST] = {rule_broadcast, "axis shift", NULL},
    [IR_RESHAPE] = {rule_reshape, "axis shift", NULL},
    [IR_TRANSPOSE] = {rule_transpose, "axis shift", NULL},
    [IR_SLICE] = {rule_slice, "axis shift", NULL},
    [IR_CONCAT] = {rule_concat, "axis shift", NULL},
    [IR_PAD] = {rule_pad, "axis shift (a select for a batched pad value)", NULL},
    [IR_REV] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_SUM] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_MAX] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_MIN] = {rule_axes, "axis shift", NULL},
    [IR_REDUCE_PROD] = {rule_axes, "axis shift", NULL},
    [IR_CUMSUM] = {rule_axis, "axis shift", NULL},
    [IR_ARGSORT] = {rule_axis, "axis shift", NULL},
    [IR_CHOLESKY] = {rule_elementwise, "one more batch axis", NULL},
    [IR_TRIANGULAR_SOLVE] = {rule_elementwise, "one more batch axis (both operands)", NULL},
    [IR_DOT] = {rule_dot, "dot batch dimension", NULL},
    [IR_TAKE_ROWS] = {rule_take_rows, "row offsets into a flattened table", NULL},
    [IR_SCATTER_ADD_ROWS] = {rule_scatter_add_rows, "row offsets into a flattened operand", NULL},
    [IR_DYNAMIC_SLICE] = {rule_dynamic, "leading start 0 (a gather for batched starts)", NULL},
    [IR_DYNAMIC_UPDATE_SLICE] = {rule_dynamic,
                                 "leading start 0 (a gather and a select for batched starts)",
                                 NULL},
    [IR_ATTENTION] = {rule_attention, "leading batch dimension", NULL},
    [IR_CONV] = {rule_conv, "batch or feature-group dimension", NULL},
    [IR_GATHER] = {rule_gather, "dimension numbers (a batching or window axis)", NULL},
    [IR_SCATTER] = {rule_scatter, "dimension numbers (a batching axis)", NULL},
    [IR_ALL_REDUCE] = {rule_same, "unchanged (elementwise across replicas)", NULL},
    [IR_MEMORY_PUT] = {rule_same, "unchanged (a copy)", NULL},
    [IR_REDUCE_SCATTER] = {rule_shard, "batch axis behind the split one", NULL},
    [IR_ALL_GATHER] = {rule_shard, "batch axis behind the joined one", NULL},
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
