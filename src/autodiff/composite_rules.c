/* composite_rules.c — direct VJP rules for the composites the tracer expands (softmax,
 * log_softmax, logsumexp, softmax cross-entropy, layer norm, rms norm), used by the transform in
 * place of their primitives' rules when nothing outside the composite reads its interior.
 *
 * Why: the primitives' rules are correct but keep what the primitives made. Softmax's keep
 * exp(x - max) and the row sums; cross-entropy's keep the [..., C] exponentials and the
 * select of the picked logit; layer norm's keep the centred x. The direct rules need only
 * the composite's result, its operands and a few per-row values, the standard forms:
 *
 *   softmax      y = softmax(x):     dx = y * (g - sum(g * y))
 *   log_softmax  y = log_softmax(x): dx = g - exp(y) * sum(g)
 *   logsumexp    y = lse(x) = m + log(s), s = sum(exp(x - m)):  dx = exp(x - m) * (g / s)
 *   cross-entropy  l = lse(z) - z[label]:  dz = g * (exp(z - m) / s - onehot(label))
 *   relu         y = max(x, 0):      dx = g * (x > 0), 0 at 0 as jax.nn.relu (a max of
 *                two values splits a tie; relu's zero is no value of the program's)
 *   layer norm   xhat = (x - mean) * rstd, gy = g * scale:
 *                dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
 *                dscale = sum over rows (g * xhat), dbias = sum over rows (g)
 *   rms norm     xhat = x * r (r = rsqrt(mean(x^2) + eps)), gy = g * scale:
 *                dx = r * (gy - xhat * mean(gy * xhat)), dscale = sum over rows (g * xhat)
 *
 * with sums and means over the composite's axes, kept as size-1 axes so they broadcast.
 * Every rule is elementwise work plus row reductions, so the backward pass fuses as the
 * forward did. Same conventions as the rules of the primitives (the tests compare both with
 * finite differences). */
#include "autodiff.h"
#include "trace/trace.h"

#include <string.h>

/* The reduced axes of c as a list. */
static int axis_list(const ir_composite *c, int *axes) {
    int n = 0;
    for (int a = 0; a < KILN_MAX_RANK; a++)
        if (c->axes >> a & 1u) axes[n++] = a;
    return n;
}

/* v reshaped to `like` with the composite's axes kept as size 1 (a no-op if it is). */
static kiln_value keep_dims(kiln_graph *g, kiln_value v, const ir_shape *like, uint32_t axes) {
    int64_t dims[KILN_MAX_RANK] = {0};
    for (int a = 0; a < like->rank; a++) dims[a] = axes >> a & 1u ? 1 : like->dims[a];
    return kiln_reshape(g, v, like->rank, dims);
}

static kiln_value softmax_rule(kiln_graph *g, const ir_composite *c, kiln_value ct) {
    int axes[KILN_MAX_RANK], n = axis_list(c, axes);
    kiln_value y = {g->id, c->out};
    kiln_value s = kiln_reduce_sum(g, kiln_mul(g, ct, y), n, axes, true);
    return kiln_mul(g, y, kiln_sub(g, ct, s));
}

static kiln_value log_softmax_rule(kiln_graph *g, const ir_composite *c, kiln_value ct) {
    int axes[KILN_MAX_RANK], n = axis_list(c, axes);
    kiln_value y = {g->id, c->out};
    return kiln_sub(g, ct, kiln_mul(g, kiln_exp(g, y), kiln_reduce_sum(g, ct, n, axes, true)));
}

/* The probabilities exp(x - m) / s from the forward's row max and sum (aux): exp(x - y)
 * with y = m + log(s) rounded would put y's rounding, |y| ulps of relative error, into
 * every one (an outside check: 4e-4 in f32 at logits near 1e4, 0.18 in bf16 near 100). */
static kiln_value logsumexp_rule(kiln_graph *g, const ir_composite *c, kiln_value ct) {
    ir_shape xs = g->nodes[c->in[0]].shape;
    kiln_value x = {g->id, c->in[0]}, m = {g->id, c->aux[0]}, s = {g->id, c->aux[1]};
    if (!c->keepdims) ct = keep_dims(g, ct, &xs, c->axes);
    return kiln_mul(g, kiln_exp(g, kiln_sub(g, x, m)), kiln_div(g, ct, s));
}

static kiln_value cross_entropy_rule(kiln_graph *g, const ir_composite *c, kiln_value ct) {
    ir_shape zs = g->nodes[c->in[0]].shape;
    kiln_dtype t = g->nodes[c->in[0]].dtype;
    kiln_value z = {g->id, c->in[0]}, m = {g->id, c->aux[0]}, hit = {g->id, c->aux[1]};
    kiln_value s = {g->id, c->aux[2]};
    ct = keep_dims(g, ct, &zs, c->axes);
    kiln_value p = kiln_div(g, kiln_exp(g, kiln_sub(g, z, m)), s);
    return kiln_mul(g, ct, kiln_sub(g, p, kiln_convert(g, hit, t)));
}

static kiln_value relu_rule(kiln_graph *g, const ir_composite *c, kiln_value ct) {
    const ir_node *xn = &g->nodes[c->in[0]];
    ir_shape xs = xn->shape;
    kiln_value x = {g->id, c->in[0]}, zero = trace_scalar(g, AD_OP, xn->dtype, 0);
    kiln_value zeros = xs.rank ? kiln_broadcast_in_dim(g, zero, xs.rank, xs.dims, NULL) : zero;
    return kiln_select(g, kiln_compare(g, x, zeros, KILN_CMP_GT), ct, zeros);
}

/* The one axis of a norm composite (*a) and the others (returned: how many). */
static int norm_axes(const ir_composite *c, int rank, int *a, int *others) {
    int n = 0;
    for (int i = 0; i < rank; i++) {
        if (c->axes >> i & 1u)
            *a = i;
        else
            others[n++] = i;
    }
    return n;
}

/* v [dim of axis a] to broadcast along axis a of xs: as it is for the last axis (the
 * product's NumPy broadcasting puts it there), else broadcast explicitly. */
static kiln_value along(kiln_graph *g, uint32_t v, const ir_shape *xs, int a) {
    kiln_value val = {g->id, v};
    if (a == xs->rank - 1) return val;
    return kiln_broadcast_in_dim(g, val, xs->rank, xs->dims, &a);
}

/* layer norm over axis a: sums over the other axes give the [dim of a] gradients of scale
 * and bias. */
static void layer_norm_rule(kiln_graph *g, const ir_composite *c, kiln_value ct, const bool *need,
                            kiln_value *out) {
    ir_shape xs = g->nodes[c->in[0]].shape;
    int a = 0, others[KILN_MAX_RANK], n = norm_axes(c, xs.rank, &a, others);
    kiln_value x = {g->id, c->in[0]};
    kiln_value mean = {g->id, c->aux[0]}, rstd = {g->id, c->aux[1]};
    kiln_value xhat = kiln_mul(g, kiln_sub(g, x, mean), rstd);
    if (need[0]) {
        kiln_value gy = c->in[1] ? kiln_mul(g, ct, along(g, c->in[1], &xs, a)) : ct;
        kiln_value m1 = kiln_mean(g, gy, 1, &a, true);
        kiln_value m2 = kiln_mean(g, kiln_mul(g, gy, xhat), 1, &a, true);
        out[0] = kiln_mul(g, rstd, kiln_sub(g, kiln_sub(g, gy, m1), kiln_mul(g, xhat, m2)));
    }
    if (need[1]) {
        kiln_value p = kiln_mul(g, ct, xhat);
        out[1] = n ? kiln_reduce_sum(g, p, n, others, false) : p;
    }
    if (need[2]) out[2] = n ? kiln_reduce_sum(g, ct, n, others, false) : ct;
}

/* rms norm over axis a: xhat = x * r, gy = g * scale; dx = r * (gy - xhat * mean(gy * xhat)),
 * dscale = sum over the other axes (g * xhat). */
static void rms_norm_rule(kiln_graph *g, const ir_composite *c, kiln_value ct, const bool *need,
                          kiln_value *out) {
    ir_shape xs = g->nodes[c->in[0]].shape;
    int a = 0, others[KILN_MAX_RANK], n = norm_axes(c, xs.rank, &a, others);
    kiln_value x = {g->id, c->in[0]}, r = {g->id, c->aux[0]};
    kiln_value xhat = kiln_mul(g, x, r);
    if (need[0]) {
        kiln_value gy = ct;
        if (c->in[1]) gy = kiln_mul(g, ct, along(g, c->in[1], &xs, a));
        kiln_value m = kiln_mean(g, kiln_mul(g, gy, xhat), 1, &a, true);
        out[0] = kiln_mul(g, r, kiln_sub(g, gy, kiln_mul(g, xhat, m)));
    }
    if (need[1]) {
        kiln_value p = kiln_mul(g, ct, xhat);
        out[1] = n ? kiln_reduce_sum(g, p, n, others, false) : p;
    }
}

void ad_composite_rule(kiln_graph *g, const ir_composite *c, kiln_value ct, const bool *need,
                       kiln_value *out) {
    for (int i = 0; i < 3; i++) out[i] = KN_NONE;
    switch (c->kind) {
    case IR_COMP_SOFTMAX:
        if (need[0]) out[0] = softmax_rule(g, c, ct);
        return;
    case IR_COMP_LOG_SOFTMAX:
        if (need[0]) out[0] = log_softmax_rule(g, c, ct);
        return;
    case IR_COMP_LOGSUMEXP:
        if (need[0]) out[0] = logsumexp_rule(g, c, ct);
        return;
    case IR_COMP_CROSS_ENTROPY: /* labels are integers: no gradient */
        if (need[0]) out[0] = cross_entropy_rule(g, c, ct);
        return;
    case IR_COMP_LAYER_NORM: layer_norm_rule(g, c, ct, need, out); return;
    case IR_COMP_RELU:
        if (need[0]) out[0] = relu_rule(g, c, ct);
        return;
    case IR_COMP_RMS_NORM: rms_norm_rule(g, c, ct, need, out); return;
    }
}
