/* rules.c — one VJP rule per differentiable op, in a table indexed by op.
 *
 * Each rule is the transpose of its op's linearisation, written with the public builders
 * so the backward nodes are ordinary, typed nodes that the passes fuse and a second
 * kiln_grad differentiates again. Rules reuse forward values rather than recompute them
 * (exp's rule multiplies by the forward exp node, tanh's and logistic's use the forward
 * result), and build zeros as broadcast scalars, so the backward graph needs no buffer the
 * forward one did not.
 *
 * Conventions at non-smooth points follow JAX's lax rules (docs/autodiff.md lists them):
 * abs'(0) = 1 (select(x >= 0, g, -g)); max/min split a tie 0.5/0.5 (kiln_relu's 0 at 0
 * is its composite rule's, composite_rules.c); sqrt'(0) = inf;
 * pow's d/db uses log(x) with x = 0 replaced by 1; reduce_max/min divide the cotangent
 * among the positions equal to the result.
 *
 * No mutable state: the table is const and rules touch only the graph they are given. */
#include "autodiff.h"
#include "trace/trace.h"

#include <string.h>

/* ------------------------------------------------------------- helpers ---- */

static kiln_value val(const kiln_graph *g, uint32_t id) {
    return trace_value(g, id);
}

static kiln_value scalar(kiln_graph *g, kiln_dtype t, double v) {
    return trace_scalar(g, AD_OP, t, v);
}

static ir_shape shape_of(const kiln_graph *g, uint32_t id) {
    return g->nodes[id].shape;
}

/* Zeros of the given type: a scalar broadcast, which fusion inlines (never materialised). */
static kiln_value zeros(kiln_graph *g, kiln_dtype t, const ir_shape *s) {
    kiln_value z = scalar(g, t, 0);
    if (!z.id || s->rank == 0) return z;
    return kiln_broadcast_in_dim(g, z, s->rank, s->dims, NULL);
}

/* Sum of x over the axes of mask (dropped); x itself for an empty mask. */
static kiln_value sum_axes(kiln_graph *g, kiln_value x, int rank, uint32_t mask) {
    int axes[KILN_MAX_RANK], n = 0;
    for (int i = 0; i < rank; i++)
        if (mask >> i & 1u) axes[n++] = i;
    return n ? kiln_reduce_sum(g, x, n, axes, false) : x;
}

/* The inverse of a reduction's shape change: r (the reduced shape) broadcast back over
 * the axes of mask to shape `to`. */
static kiln_value expand(kiln_graph *g, kiln_value r, const ir_shape *to, uint32_t mask) {
    if (!mask) return r;
    int bd[KILN_MAX_RANK], n = 0;
    for (int i = 0; i < to->rank; i++)
        if (!(mask >> i & 1u)) bd[n++] = i;
    return kiln_broadcast_in_dim(g, r, to->rank, to->dims, bd);
}

/* ---------------------------------------------------------------- unary ---- */

static void vjp_neg(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)n, (void)need;
    out[0] = kiln_neg(g, ct);
}

/* JAX: select(x >= 0, g, -g), so abs'(0) = 1. */
static void vjp_abs(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)need;
    kiln_value x = val(g, ir_in(n)[0]);
    kiln_value pos = kiln_compare(g, x, scalar(g, n->dtype, 0), KILN_CMP_GE);
    out[0] = kiln_select(g, pos, ct, kiln_neg(g, ct));
}

static void vjp_exp(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)n, (void)need;
    out[0] = kiln_mul(g, ct, val(g, id)); /* the forward exp, reused */
}

static void vjp_log(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)need;
    out[0] = kiln_div(g, ct, val(g, ir_in(n)[0]));
}

static void vjp_log1p(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                      kiln_value *out) {
    (void)id, (void)need;
    kiln_value x = val(g, ir_in(n)[0]);
    out[0] = kiln_div(g, ct, kiln_add(g, x, scalar(g, n->dtype, 1)));
}

/* JAX: g * (0.5 / sqrt(x)): infinite at 0. */
static void vjp_sqrt(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                     kiln_value *out) {
    (void)need;
    out[0] = kiln_mul(g, ct, kiln_div(g, scalar(g, n->dtype, 0.5), val(g, id)));
}

/* JAX: g * (-0.5 * rsqrt(x) / x). */
static void vjp_rsqrt(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                      kiln_value *out) {
    (void)need;
    kiln_value q = kiln_div(g, val(g, id), val(g, ir_in(n)[0]));
    out[0] = kiln_mul(g, ct, kiln_mul(g, scalar(g, n->dtype, -0.5), q));
}

/* JAX's form, (g + g*y) * (1 - y), which keeps precision where y is near +-1. */
static void vjp_tanh(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                     kiln_value *out) {
    (void)need;
    kiln_value y = val(g, id);
    kiln_value a = kiln_add(g, ct, kiln_mul(g, ct, y));
    out[0] = kiln_mul(g, a, kiln_sub(g, scalar(g, n->dtype, 1), y));
}

static void vjp_logistic(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                         const bool *need, kiln_value *out) {
    (void)need;
    kiln_value y = val(g, id);
    kiln_value d = kiln_mul(g, y, kiln_sub(g, scalar(g, n->dtype, 1), y));
    out[0] = kiln_mul(g, ct, d);
}

static void vjp_sin(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)need;
    out[0] = kiln_mul(g, ct, kiln_cos(g, val(g, ir_in(n)[0])));
}

static void vjp_cos(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)need;
    out[0] = kiln_mul(g, kiln_neg(g, ct), kiln_sin(g, val(g, ir_in(n)[0])));
}

/* erf'(x) = 2/sqrt(pi) exp(-x^2); exp underflows to 0 for |x| > ~27 (f64), as erf is flat. */
static void vjp_erf(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)need;
    kiln_value x = val(g, ir_in(n)[0]);
    kiln_value d = kiln_mul(g, scalar(g, n->dtype, 1.1283791670955126), /* 2/sqrt(pi) */
                            kiln_exp(g, kiln_neg(g, kiln_mul(g, x, x))));
    out[0] = kiln_mul(g, ct, d);
}

/* float -> float only: to or from an integer or bool there is no gradient (and the
 * transform never asks, as such values carry no cotangent). */
static void vjp_convert(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                        const bool *need, kiln_value *out) {
    (void)id, (void)need;
    kiln_dtype from = g->nodes[ir_in(n)[0]].dtype;
    if (ir_dtype_is_float(from) && ir_dtype_is_float(n->dtype)) out[0] = kiln_convert(g, ct, from);
}

/* --------------------------------------------------------------- binary ---- */

static void vjp_add(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)g, (void)id, (void)n, (void)need;
    out[0] = out[1] = ct;
}

static void vjp_sub(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)n;
    out[0] = ct;
    if (need[1]) out[1] = kiln_neg(g, ct);
}

static void vjp_mul(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id;
    const uint32_t *in = ir_in(n);
    if (need[0]) out[0] = kiln_mul(g, ct, val(g, in[1]));
    if (need[1]) out[1] = kiln_mul(g, val(g, in[0]), ct);
}

/* JAX: g / b, and -g * a / b^2. */
static void vjp_div(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id;
    kiln_value a = val(g, ir_in(n)[0]), b = val(g, ir_in(n)[1]);
    if (need[0]) out[0] = kiln_div(g, ct, b);
    if (need[1]) out[1] = kiln_div(g, kiln_mul(g, kiln_neg(g, ct), a), kiln_mul(g, b, b));
}

kiln_value ad_trunc_quotient(kiln_graph *g, kiln_value a, kiln_value b) {
    kiln_value q = kiln_div(g, a, b);
    return kiln_mul(g, kiln_sign(g, q), kiln_floor(g, kiln_abs(g, q)));
}

/* JAX: d/da = g, d/db = -g * trunc(a / b) (the quotient rem took away). */
static void vjp_rem(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id;
    kiln_value a = val(g, ir_in(n)[0]), b = val(g, ir_in(n)[1]);
    if (need[0]) out[0] = ct;
    if (need[1]) out[1] = kiln_mul(g, kiln_neg(g, ct), ad_trunc_quotient(g, a, b));
}

/* JAX (float exponent): d/da = g * b * a^(b-1); d/db = g * log(a == 0 ? 1 : a) * a^b, so
 * the exponent's gradient is 0 (not NaN) at a = 0. */
static void vjp_pow(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    kiln_value a = val(g, ir_in(n)[0]), b = val(g, ir_in(n)[1]);
    kiln_dtype t = n->dtype;
    if (need[0]) {
        kiln_value p = kiln_pow(g, a, kiln_sub(g, b, scalar(g, t, 1)));
        out[0] = kiln_mul(g, ct, kiln_mul(g, b, p));
    }
    if (need[1]) {
        kiln_value zero = kiln_compare(g, a, scalar(g, t, 0), KILN_CMP_EQ);
        kiln_value safe = kiln_select(g, zero, scalar(g, t, 1), a);
        out[1] = kiln_mul(g, ct, kiln_mul(g, kiln_log(g, safe), val(g, id)));
    }
}

/* JAX's _balanced_eq: operand i gets g * (x_i == out) / (x_other == out ? 2 : 1), so a
 * tie splits the cotangent evenly. (kiln_relu is a composite with a rule of its own,
 * composite_rules.c: 0 at 0, as jax.nn.relu.) */
static void minmax(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                   kiln_value *out) {
    const uint32_t *in = ir_in(n);
    kiln_dtype t = n->dtype;
    kiln_value y = val(g, id);
    for (int i = 0; i < 2; i++) {
        if (!need[i]) continue;
        kiln_value x = val(g, in[i]), other = val(g, in[1 - i]);
        kiln_value mine = kiln_compare(g, x, y, KILN_CMP_EQ);
        kiln_value theirs = kiln_compare(g, other, y, KILN_CMP_EQ);
        kiln_value num = kiln_select(g, mine, scalar(g, t, 1), scalar(g, t, 0));
        kiln_value den = kiln_select(g, theirs, scalar(g, t, 2), scalar(g, t, 1));
        out[i] = kiln_mul(g, ct, kiln_div(g, num, den));
    }
}

static void vjp_select(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                       const bool *need, kiln_value *out) {
    (void)id;
    kiln_value p = val(g, ir_in(n)[0]);
    if (need[1]) out[1] = kiln_select(g, p, ct, zeros(g, n->dtype, &n->shape));
    if (need[2]) out[2] = kiln_select(g, p, zeros(g, n->dtype, &n->shape), ct);
}

/* --------------------------------------------------------------- shapes ---- */

/* Sum over the axes the broadcast made: the new ones and the size-1 ones it stretched. */
static void vjp_broadcast(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                          const bool *need, kiln_value *out) {
    (void)id, (void)need;
    ir_shape xs = shape_of(g, ir_in(n)[0]);
    uint32_t mask = (uint32_t)((1u << n->shape.rank) - 1);
    for (int i = 0; i < xs.rank; i++) {
        int o = n->a.bcast_dims[i];
        if (xs.dims[i] == n->shape.dims[o]) mask &= ~(1u << o);
    }
    kiln_value r = sum_axes(g, ct, n->shape.rank, mask);
    out[0] = kiln_reshape(g, r, xs.rank, xs.dims); /* puts back the stretched size-1 axes */
}

static void vjp_reshape(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                        const bool *need, kiln_value *out) {
    (void)id, (void)need;
    ir_shape xs = shape_of(g, ir_in(n)[0]);
    out[0] = kiln_reshape(g, ct, xs.rank, xs.dims);
}

static void vjp_transpose(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                          const bool *need, kiln_value *out) {
    (void)id, (void)need;
    int inv[KILN_MAX_RANK];
    for (int i = 0; i < n->shape.rank; i++) inv[n->a.perm[i]] = i;
    out[0] = kiln_transpose(g, ct, inv);
}

/* rev is its own transpose: the cotangent reversed along the same axes. */
static void vjp_rev(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id, (void)need;
    int axes[KILN_MAX_RANK], k = 0;
    for (int i = 0; i < n->shape.rank; i++)
        if (n->a.rev_axes >> i & 1u) axes[k++] = i;
    out[0] = kiln_rev(g, ct, k, axes);
}

/* A slice's cotangent is padded back to the operand: lo = start, interior = stride - 1,
 * hi whatever remains after the last element taken. */
static void vjp_slice(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                      kiln_value *out) {
    (void)id, (void)need;
    ir_shape xs = shape_of(g, ir_in(n)[0]);
    int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK], interior[KILN_MAX_RANK];
    for (int i = 0; i < xs.rank; i++) {
        int64_t k = n->shape.dims[i], s = n->a.slice.stride[i];
        interior[i] = s - 1;
        if (k == 0) {
            lo[i] = xs.dims[i], hi[i] = 0;
        } else {
            lo[i] = n->a.slice.start[i];
            hi[i] = xs.dims[i] - (lo[i] + (k - 1) * s + 1);
        }
    }
    out[0] = kiln_pad(g, ct, scalar(g, n->dtype, 0), lo, hi, interior);
}

/* JAX's pad transpose: undo lo/hi (a negative one, a crop, becomes zeros), then take every
 * (interior+1)-th element; the padding value gets the cotangent of every padded position,
 * sum(g) - sum(operand's part). */
static void vjp_pad(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id;
    int rank = n->shape.rank;
    int64_t start[KILN_MAX_RANK], limit[KILN_MAX_RANK], stride[KILN_MAX_RANK];
    int64_t nlo[KILN_MAX_RANK], nhi[KILN_MAX_RANK];
    bool crop = false;
    for (int i = 0; i < rank; i++) {
        crop |= n->a.pad.lo[i] < 0 || n->a.pad.hi[i] < 0;
        nlo[i] = -n->a.pad.lo[i], nhi[i] = -n->a.pad.hi[i];
        stride[i] = n->a.pad.interior[i] + 1;
    }
    kiln_value base = ct;
    ir_shape bs = n->shape;
    if (crop) { /* one unpad over every axis, then a plain strided slice */
        base = kiln_pad(g, ct, scalar(g, n->dtype, 0), nlo, nhi, NULL);
        for (int i = 0; i < rank; i++) {
            start[i] = 0;
            bs.dims[i] -= n->a.pad.lo[i] + n->a.pad.hi[i];
            limit[i] = bs.dims[i];
        }
    } else {
        for (int i = 0; i < rank; i++) {
            start[i] = n->a.pad.lo[i];
            limit[i] = n->shape.dims[i] - n->a.pad.hi[i];
        }
    }
    kiln_value x = kiln_slice(g, base, start, limit, stride);
    if (need[0]) out[0] = x;
    if (need[1]) {
        kiln_value all = sum_axes(g, ct, rank, (uint32_t)((1u << rank) - 1));
        kiln_value mine = sum_axes(g, x, rank, (uint32_t)((1u << rank) - 1));
        out[1] = kiln_sub(g, all, mine);
    }
}

static void vjp_concat(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                       const bool *need, kiln_value *out) {
    (void)id;
    int rank = n->shape.rank, ax = n->a.axis;
    int64_t start[KILN_MAX_RANK] = {0}, limit[KILN_MAX_RANK];
    for (int i = 0; i < rank; i++) limit[i] = n->shape.dims[i];
    int64_t at = 0;
    const uint32_t *in = ir_in(n);
    for (uint32_t k = 0; k < n->n_in; k++) {
        int64_t d = g->nodes[in[k]].shape.dims[ax];
        start[ax] = at, limit[ax] = at + d;
        if (need[k]) out[k] = kiln_slice(g, ct, start, limit, NULL);
        at += d;
    }
}

/* ----------------------------------------------------------- reductions ---- */

static void vjp_reduce_sum(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                           const bool *need, kiln_value *out) {
    (void)id, (void)need;
    ir_shape xs = shape_of(g, ir_in(n)[0]);
    out[0] = expand(g, ct, &xs, n->a.reduce_axes);
}

/* JAX's chooser rule: the positions equal to the result share the cotangent evenly. */
static void vjp_reduce_chooser(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                               const bool *need, kiln_value *out) {
    (void)need;
    uint32_t xid = ir_in(n)[0], mask = n->a.reduce_axes;
    ir_shape xs = shape_of(g, xid);
    kiln_dtype t = n->dtype;
    kiln_value hit = kiln_compare(g, val(g, xid), expand(g, val(g, id), &xs, mask), KILN_CMP_EQ);
    kiln_value loc = kiln_convert(g, hit, t);
    kiln_value count = sum_axes(g, loc, xs.rank, mask);
    out[0] = kiln_mul(g, loc, expand(g, kiln_div(g, ct, count), &xs, mask));
}

/* The product of the others, exactly, with zeros: where a group has no zero it is
 * prod / x; where it has one, the zero's position gets the product of the rest and the
 * others 0; with two or more every position gets 0 (as JAX's rule gives). */
static void vjp_reduce_prod(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                            const bool *need, kiln_value *out) {
    (void)id, (void)need;
    uint32_t xid = ir_in(n)[0], mask = n->a.reduce_axes;
    ir_shape xs = shape_of(g, xid);
    kiln_dtype t = n->dtype;
    kiln_value x = val(g, xid), one = scalar(g, t, 1), zero = scalar(g, t, 0);
    kiln_value is0 = kiln_compare(g, x, zero, KILN_CMP_EQ);
    kiln_value x1 = kiln_select(g, is0, one, x);                           /* zeros as ones */
    kiln_value rest = sum_axes(g, kiln_convert(g, is0, t), xs.rank, mask); /* zeros per group */
    int axes[KILN_MAX_RANK], na = 0;
    for (int i = 0; i < xs.rank; i++)
        if (mask >> i & 1u) axes[na++] = i;
    kiln_value p1 = na ? kiln_reduce_prod(g, x1, na, axes, false) : x1; /* prod of nonzeros */
    kiln_value nz = expand(g, rest, &xs, mask), pb = expand(g, p1, &xs, mask);
    kiln_value none = kiln_compare(g, nz, zero, KILN_CMP_EQ);
    kiln_value single = kiln_logical_and(g, kiln_compare(g, nz, one, KILN_CMP_EQ), is0);
    kiln_value others =
        kiln_select(g, none, kiln_div(g, pb, x1), kiln_select(g, single, pb, zeros(g, t, &xs)));
    out[0] = kiln_mul(g, others, expand(g, ct, &xs, mask));
}

/* ---------------------------------------------------------------- dot ---- */

/* JAX's _dot_general_transpose_lhs: the cotangent of x in dot_general(x, y) contracts g's
 * y-kept axes with y's kept axes and batches the batch axes. swap says the cotangent's
 * kept axes come in (y, x) order, as for the rhs.
 *
 * The product can be written with g or with y as its left operand: dot_general(g, y) has
 * axes (batch, x's kept, x's contracting), dot_general(y, g) has (batch, x's contracting,
 * x's kept). When one of them is already in x's axis order it is taken, so the gradient
 * of a weight (x^T . g for y = x . w) is produced in the weight's layout and the
 * optimiser update reads it contiguously, rather than a transposed copy that every
 * consumer then reads across rows. Otherwise the first form, transposed back. */
static kiln_value dot_transpose(kiln_graph *g, kiln_value ct, uint32_t xid, uint32_t yid,
                                const int *xc, const int *yc, const int *xb, const int *yb, int nc,
                                int nb, bool swap) {
    int xr = g->nodes[xid].shape.rank, yr = g->nodes[yid].shape.rank;
    int xk[KILN_MAX_RANK], yk[KILN_MAX_RANK], nxk = 0, nyk = 0;
    uint32_t xu = 0, yu = 0;
    for (int i = 0; i < nc; i++) xu |= 1u << xc[i], yu |= 1u << yc[i];
    for (int i = 0; i < nb; i++) xu |= 1u << xb[i], yu |= 1u << yb[i];
    for (int i = 0; i < xr; i++)
        if (!(xu >> i & 1u)) xk[nxk++] = i;
    for (int i = 0; i < yr; i++)
        if (!(yu >> i & 1u)) yk[nyk++] = i;
    /* the cotangent's axes: batch, then the kept axes of (x, y), or of (y, x) if swapped */
    int y_at = swap ? nb : nb + nxk;
    /* x's contracting axes sorted by their y partner: the order both products give them */
    int xc_by_y[KILN_MAX_RANK], n = 0;
    for (int a = 0; a < yr; a++)
        for (int i = 0; i < nc; i++)
            if (yc[i] == a) xc_by_y[n++] = xc[i];
    /* order[i]: the axis of x that axis i of the product is, for g first and for y first */
    int order[2][KILN_MAX_RANK];
    bool identity[2] = {true, true};
    for (int form = 0; form < 2; form++) {
        int k = 0;
        for (int i = 0; i < nb; i++) order[form][k++] = xb[i];
        for (int i = 0; i < nxk && !form; i++) order[form][k++] = xk[i];
        for (int i = 0; i < nc; i++) order[form][k++] = xc_by_y[i];
        for (int i = 0; i < nxk && form; i++) order[form][k++] = xk[i];
        for (int i = 0; i < xr; i++) identity[form] &= order[form][i] == i;
    }
    int form = !identity[0] && identity[1];
    kiln_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contract = nyk;
    d.n_batch = nb;
    int *ct_con = form ? d.rhs_contract : d.lhs_contract,
        *y_con = form ? d.lhs_contract : d.rhs_contract;
    int *ct_bat = form ? d.rhs_batch : d.lhs_batch, *y_bat = form ? d.lhs_batch : d.rhs_batch;
    for (int i = 0; i < nyk; i++) ct_con[i] = y_at + i, y_con[i] = yk[i];
    for (int i = 0; i < nb; i++) ct_bat[i] = i, y_bat[i] = yb[i];
    kiln_value r =
        form ? kiln_dot_general(g, val(g, yid), ct, &d) : kiln_dot_general(g, ct, val(g, yid), &d);
    if (identity[form]) return r;
    int perm[KILN_MAX_RANK];
    for (int i = 0; i < xr; i++) perm[order[form][i]] = i;
    return kiln_transpose(g, r, perm);
}

static void vjp_dot(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)id;
    const kiln_dot_dims *d = &n->a.dot;
    const uint32_t *in = ir_in(n);
    if (need[0])
        out[0] = dot_transpose(g, ct, in[0], in[1], d->lhs_contract, d->rhs_contract, d->lhs_batch,
                               d->rhs_batch, d->n_contract, d->n_batch, false);
    if (need[1])
        out[1] = dot_transpose(g, ct, in[1], in[0], d->rhs_contract, d->lhs_contract, d->rhs_batch,
                               d->lhs_batch, d->n_contract, d->n_batch, true);
}

/* ------------------------------------------------------------- indexing ---- */

/* The transpose of a gather is a scatter-add into zeros. take_rows clamps its indices and
 * scatter_add_rows drops those out of range, so the indices are clamped here too. */
static void vjp_take_rows(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                          const bool *need, kiln_value *out) {
    (void)id, (void)need;
    uint32_t tid = ir_in(n)[0], iid = ir_in(n)[1];
    ir_shape ts = shape_of(g, tid);
    kiln_dtype it = g->nodes[iid].dtype;
    kiln_value idx = val(g, iid);
    if (ts.dims[0] > 0) {
        idx = kiln_max(g, idx, scalar(g, it, 0));
        idx = kiln_min(g, idx, scalar(g, it, (double)(ts.dims[0] - 1)));
    }
    out[0] = kiln_scatter_add_rows(g, zeros(g, n->dtype, &ts), idx, ct);
}

/* The traced starts of a dynamic slice, operands first.. of n. */
static void starts_of(kiln_graph *g, const ir_node *n, uint32_t first, kiln_value *st) {
    for (uint32_t i = first; i < n->n_in; i++) st[i - first] = val(g, ir_in(n)[i]);
}

/* The cotangent written into zeros at the same starts: they clamp as they did forward,
 * since the window has the same size. The starts are integers: no cotangent. */
static void vjp_dynamic_slice(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                              const bool *need, kiln_value *out) {
    (void)id;
    if (!need[0]) return;
    kiln_value st[KILN_MAX_RANK];
    starts_of(g, n, 1, st);
    ir_shape xs = shape_of(g, ir_in(n)[0]);
    out[0] = kiln_dynamic_update_slice(g, zeros(g, n->dtype, &xs), ct, (int)n->n_in - 1, st);
}

/* operand: the cotangent with the window zeroed (those elements were overwritten);
 * update: the window of the cotangent. */
static void vjp_dynamic_update_slice(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                                     const bool *need, kiln_value *out) {
    (void)id;
    kiln_value st[KILN_MAX_RANK];
    starts_of(g, n, 2, st);
    ir_shape us = shape_of(g, ir_in(n)[1]);
    int k = (int)n->n_in - 2;
    if (need[0]) out[0] = kiln_dynamic_update_slice(g, ct, zeros(g, n->dtype, &us), k, st);
    if (need[1]) out[1] = kiln_dynamic_slice(g, ct, k, st, us.dims);
}

/* operand: the cotangent itself; updates: the rows they were added to, and zero for the
 * updates whose index was out of range (they were dropped). */
static void vjp_scatter_add_rows(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                                 const bool *need, kiln_value *out) {
    if (n->a.rows.mul || n->a.rows.min || n->a.rows.max) { /* the expansion's, after autodiff */
        trace_fail_on(g, &id, 1, KILN_STATUS_UNIMPLEMENTED, AD_OP,
                      "scatter_add_rows with mul, min or max has no gradient rule: "
                      "differentiate the kiln_scatter it expands");
        return;
    }
    uint32_t iid = ir_in(n)[1], uid = ir_in(n)[2];
    ir_shape us = shape_of(g, uid), is = shape_of(g, iid);
    kiln_dtype it = g->nodes[iid].dtype;
    int64_t rows = n->shape.dims[0];
    if (need[0]) out[0] = ct;
    if (!need[2]) return;
    if (rows == 0) { /* every update was dropped */
        out[2] = zeros(g, n->dtype, &us);
        return;
    }
    kiln_value idx = val(g, iid);
    kiln_value ok =
        kiln_logical_and(g, kiln_compare(g, idx, scalar(g, it, 0), KILN_CMP_GE),
                         kiln_compare(g, idx, scalar(g, it, (double)rows), KILN_CMP_LT));
    int bd[KILN_MAX_RANK];
    for (int i = 0; i < is.rank; i++) bd[i] = i;
    kiln_value okb = kiln_broadcast_in_dim(g, ok, us.rank, us.dims, bd);
    out[2] = kiln_select(g, okb, kiln_take_rows(g, ct, idx), zeros(g, n->dtype, &us));
}

/* y = cumsum(x) along an axis: x_k reaches every y_j with j >= k (j <= k reversed), so its
 * cotangent is the cumsum of ct the other way. */
static void vjp_cumsum(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                       const bool *need, kiln_value *out) {
    (void)id;
    if (need[0]) out[0] = kiln_cumsum(g, ct, n->a.scan.axis, !n->a.scan.reverse);
}

/* cholesky and triangular_solve: JAX's rules (src/trace/linalg.c), from the result. */
static void vjp_cholesky(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                         const bool *need, kiln_value *out) {
    if (need[0]) out[0] = trace_cholesky_vjp(g, n, val(g, id), ct);
}

static void vjp_triangular_solve(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                                 const bool *need, kiln_value *out) {
    trace_triangular_solve_vjp(g, n, val(g, ir_in(n)[0]), val(g, id), ct, need, out);
}

/* dot_product_attention: the primitive form's gradient, with the probabilities recomputed
 * from q and k (src/trace/attention.c). */
/* The forward pass: the gradient's kinds (src/trace/attention.c). A gradient kind (second
 * order): reverse mode through its primitive form, an operand passed twice (q = k = v)
 * given its contribution once. */
static void vjp_attention(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                          const bool *need, kiln_value *out) {
    const uint32_t *in = ir_in(n);
    if (n->a.attn.kind == IR_ATTN_FORWARD) {
        trace_attention_vjp(g, n, val(g, in[0]), val(g, in[1]), val(g, in[2]), val(g, id), ct, need,
                            out);
        return;
    }
    uint32_t n_in = n->n_in < 6 ? n->n_in : 6, seeds[6];
    kiln_value args[6];
    bool want[6];
    for (uint32_t i = 0; i < n_in; i++) {
        bool dup = false;
        for (uint32_t j = 0; j < i; j++) dup |= in[j] == in[i];
        seeds[i] = in[i], args[i] = val(g, in[i]), want[i] = need[i] && !dup;
    }
    uint32_t first = g->n_nodes;
    kiln_value y = trace_attention_primitives(g, n, args);
    if (y.id) ad_vjp_region(g, first, y.id, ct, (int)n_in, seeds, want, out);
}

/* A convolution is bilinear, and each kind's partial maps are the others' transposes
 * (cuDNN's forward, backward-data and backward-filter over one geometry): with B(x, w) the
 * forward, input_grad(c, w) = B(., w)^T c and filter_grad(x, c) = B(x, .)^T c, so
 *   forward(x, w):        dx = input_grad(g, w)   dw = filter_grad(x, g)
 *   input_grad(c, w):     dc = forward(g, w)      dw = filter_grad(g, c)
 *   filter_grad(x, c):    dx = input_grad(c, g)   dc = forward(x, g)
 * and gradients of any order stay convolutions a backend can run as one kernel. */
static void vjp_conv(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                     kiln_value *out) {
    (void)id;
    const char *op = "kiln_conv_general_dilated (gradient)";
    ir_node c = *n; /* n may move while the rule appends */
    kiln_value a = val(g, ir_in(&c)[0]), b = val(g, ir_in(&c)[1]);
    switch (c.a.conv.kind) {
    case IR_CONV_FORWARD:
        if (need[0]) out[0] = trace_conv(g, op, &c, IR_CONV_INPUT_GRAD, ct, b);
        if (need[1]) out[1] = trace_conv(g, op, &c, IR_CONV_FILTER_GRAD, a, ct);
        break;
    case IR_CONV_INPUT_GRAD:
        if (need[0]) out[0] = trace_conv(g, op, &c, IR_CONV_FORWARD, ct, b);
        if (need[1]) out[1] = trace_conv(g, op, &c, IR_CONV_FILTER_GRAD, ct, a);
        break;
    default:
        if (need[0]) out[0] = trace_conv(g, op, &c, IR_CONV_INPUT_GRAD, b, ct);
        if (need[1]) out[1] = trace_conv(g, op, &c, IR_CONV_FORWARD, a, ct);
        break;
    }
}

/* y = all_reduce(x) over replicas, each with its own loss L_r; the program's loss is their
 * sum. SUM: dL/dx_r = sum over replicas of ct; MEAN: their mean. MAX: the summed cotangent
 * goes to the replicas holding the maximum, split evenly among ties (reduce_max's rule
 * across replicas). */
/* A copy between memory kinds: the cotangent itself, on the device, whichever way the
 * value went (a host value's only reader is the copy back, whose cotangent is a device
 * value already). */
static void vjp_memory_put(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                           const bool *need, kiln_value *out) {
    (void)g, (void)id, (void)n;
    if (need[0]) out[0] = ct;
}

static void vjp_all_reduce(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                           const bool *need, kiln_value *out) {
    if (!need[0]) return;
    if (n->a.reduce_kind != KILN_REDUCE_MAX) {
        out[0] = kiln_all_reduce(g, ct, (kiln_reduce_kind)n->a.reduce_kind);
        return;
    }
    kiln_value x = val(g, ir_in(n)[0]), y = val(g, id);
    kiln_value hit = kiln_convert(g, kiln_compare(g, x, y, KILN_CMP_EQ), n->dtype);
    kiln_value ties = kiln_all_reduce(g, hit, KILN_REDUCE_SUM);
    kiln_value total = kiln_all_reduce(g, ct, KILN_REDUCE_SUM);
    out[0] = kiln_div(g, kiln_mul(g, hit, total), ties);
}

/* y_r = shard r of the sum over replicas of x_q (MEAN: / N): dL/dx_q gathers every
 * replica's cotangent of its shard, so the VJP is the all_gather of ct (/ N). */
static void vjp_reduce_scatter(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                               const bool *need, kiln_value *out) {
    (void)id;
    if (!need[0]) return;
    kiln_value all = kiln_all_gather(g, ct, n->a.shard.ranks);
    out[0] = n->a.shard.kind == KILN_REDUCE_MEAN
                 ? kiln_div(g, all, kiln_scalar(g, n->dtype, (double)n->a.shard.ranks))
                 : all;
}

/* y = every replica's x_q concatenated: dL/dx_q sums, over replicas, their cotangent's
 * shard q: the reduce_scatter (SUM) of ct. */
static void vjp_all_gather(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                           const bool *need, kiln_value *out) {
    (void)id;
    if (need[0]) out[0] = kiln_reduce_scatter(g, ct, KILN_REDUCE_SUM, n->a.shard.ranks);
}

/* ---------------------------------------------------------------- table ---- */

/* ------------------------------------------------------- gather/scatter ---- */

/* The cotangent scatter-added back where the windows were read, with the same dimension
 * numbers and mode: a clamped window clamps the same way, a filled (FILL) one is dropped. */
static void vjp_gather(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                       const bool *need, kiln_value *out) {
    (void)id;
    if (!need[0]) return;
    ir_shape xs = shape_of(g, ir_in(n)[0]);
    out[0] = trace_scatter_like(g, AD_OP, n, KILN_SCATTER_ADD, zeros(g, n->dtype, &xs),
                                val(g, ir_in(n)[1]), ct);
}

/* ADD: the operand's is the cotangent, the updates' its gather (0 for a dropped window).
 * SET: the operand's with the written elements zeroed, the updates' the gather for the
 * winning update only. MIN/MAX: shared among the operand and the updates equal to the
 * result. MUL: the operand's times the product of its updates; the updates' is refused
 * as JAX refuses it (it needs unique indices to be a plain product). */
static void vjp_scatter(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                        const bool *need, kiln_value *out) {
    const uint32_t *in = ir_in(n);
    kiln_value idx = val(g, in[1]);
    ir_shape xs = shape_of(g, in[0]), us = shape_of(g, in[2]);
    kiln_value gct = need[2] ? trace_gather_like(g, AD_OP, n, ct, idx, 0) : KN_NONE;
    switch (n->a.gs.kind) {
    case KILN_SCATTER_ADD:
        if (need[0]) out[0] = ct;
        if (need[2]) out[2] = gct;
        return;
    case KILN_SCATTER_SET:
        if (need[0])
            out[0] =
                trace_scatter_like(g, AD_OP, n, KILN_SCATTER_SET, ct, idx, zeros(g, n->dtype, &us));
        if (need[2])
            out[2] = kiln_select(g, trace_scatter_set_winners(g, AD_OP, n, idx), gct,
                                 zeros(g, n->dtype, &us));
        return;
    case KILN_SCATTER_MUL:
        if (need[2]) {
            trace_fail_on(g, &id, 1, KILN_STATUS_UNIMPLEMENTED, AD_OP,
                          "the gradient of scatter mul with respect to its updates is not "
                          "defined for duplicate indices (JAX refuses it too)");
            return;
        }
        if (need[0])
            out[0] = kiln_mul(g, ct,
                              trace_scatter_like(g, AD_OP, n, KILN_SCATTER_MUL,
                                                 kiln_full(g, n->dtype, xs.rank, xs.dims, 1), idx,
                                                 val(g, in[2])));
        return;
    default: {
        kiln_value xc, uc;
        trace_scatter_extremal_coefs(g, AD_OP, n, val(g, id), &xc, &uc);
        if (need[0]) out[0] = kiln_mul(g, ct, xc);
        if (need[2]) out[2] = kiln_mul(g, gct, uc);
    }
    }
}

/* The math functions of derivatives.c: the cotangent times the derivative. */
static void vjp_math(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                     kiln_value *out) {
    (void)need;
    out[0] = kiln_mul(g, ct, ad_math_derivative(g, AD_OP, id, n));
}

static void vjp_atan2(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                      kiln_value *out) {
    (void)id;
    kiln_value d[2];
    ad_atan2_partials(g, n, need, d);
    for (int k = 0; k < 2; k++)
        if (need[k]) out[k] = kiln_mul(g, ct, d[k]);
}

static const ad_rule rules[IR_NUM_OPS] = {
    [IR_NEG] = vjp_neg,
    [IR_ABS] = vjp_abs,
    [IR_EXP] = vjp_exp,
    [IR_LOG] = vjp_log,
    [IR_LOG1P] = vjp_log1p,
    [IR_SQRT] = vjp_sqrt,
    [IR_RSQRT] = vjp_rsqrt,
    [IR_TANH] = vjp_tanh,
    [IR_LOGISTIC] = vjp_logistic,
    [IR_SIN] = vjp_sin,
    [IR_COS] = vjp_cos,
    [IR_ERF] = vjp_erf,
    [IR_EXPM1] = vjp_math,
    [IR_TAN] = vjp_math,
    [IR_SINH] = vjp_math,
    [IR_COSH] = vjp_math,
    [IR_ASIN] = vjp_math,
    [IR_ACOS] = vjp_math,
    [IR_ATAN] = vjp_math,
    [IR_ASINH] = vjp_math,
    [IR_ACOSH] = vjp_math,
    [IR_ATANH] = vjp_math,
    [IR_ERFC] = vjp_math,
    [IR_ERF_INV] = vjp_math,
    [IR_LGAMMA] = vjp_math,
    [IR_DIGAMMA] = vjp_math,
    [IR_CBRT] = vjp_math,
    [IR_CONVERT] = vjp_convert,
    [IR_ADD] = vjp_add,
    [IR_SUB] = vjp_sub,
    [IR_MUL] = vjp_mul,
    [IR_DIV] = vjp_div,
    [IR_POW] = vjp_pow,
    [IR_REM] = vjp_rem,
    [IR_ATAN2] = vjp_atan2,
    [IR_MAX] = minmax,
    [IR_MIN] = minmax,
    [IR_SELECT] = vjp_select,
    [IR_BROADCAST] = vjp_broadcast,
    [IR_RESHAPE] = vjp_reshape,
    [IR_TRANSPOSE] = vjp_transpose,
    [IR_SLICE] = vjp_slice,
    [IR_CONCAT] = vjp_concat,
    [IR_PAD] = vjp_pad,
    [IR_REV] = vjp_rev,
    [IR_REDUCE_SUM] = vjp_reduce_sum,
    [IR_REDUCE_MAX] = vjp_reduce_chooser,
    [IR_REDUCE_MIN] = vjp_reduce_chooser,
    [IR_REDUCE_PROD] = vjp_reduce_prod,
    [IR_DOT] = vjp_dot,
    [IR_TAKE_ROWS] = vjp_take_rows,
    [IR_SCATTER_ADD_ROWS] = vjp_scatter_add_rows,
    [IR_DYNAMIC_SLICE] = vjp_dynamic_slice,
    [IR_DYNAMIC_UPDATE_SLICE] = vjp_dynamic_update_slice,
    [IR_CUMSUM] = vjp_cumsum,
    [IR_CHOLESKY] = vjp_cholesky,
    [IR_TRIANGULAR_SOLVE] = vjp_triangular_solve,
    [IR_GATHER] = vjp_gather,
    [IR_SCATTER] = vjp_scatter,
    [IR_ATTENTION] = vjp_attention,
    [IR_CONV] = vjp_conv,
    [IR_ALL_REDUCE] = vjp_all_reduce,
    [IR_REDUCE_SCATTER] = vjp_reduce_scatter,
    [IR_ALL_GATHER] = vjp_all_gather,
    [IR_MEMORY_PUT] = vjp_memory_put,
    /* control flow: control_rules.c; a RESULT node's cotangent goes to its control node's */
    [IR_WHILE] = ad_control_rule,
    [IR_SCAN] = ad_control_rule,
    [IR_COND] = ad_control_rule,
    [IR_RESULT] = ad_result_rule,
};

ad_rule ad_rule_for(ir_op op) {
    return (unsigned)op < IR_NUM_OPS ? rules[op] : NULL;
}
