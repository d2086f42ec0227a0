/* composite.c — named composites built from primitive ops, so autodiff, fusion and the
 * reference interpreter see only primitives. Formulas follow jax.nn where it has the op.
 * Every composite checks its operand up front so its errors name the composite, not one
 * of its parts. */
#include "trace.h"

#include <math.h>
#include <stdio.h>

/* The operand if it is of the dtype class `types` (IRT_FLOAT or IRT_NUMERIC), else NULL
 * after recording an error that names the composite. */
static const ir_node *checked_operand(kiln_graph *g, const char *op, kiln_value x, int types) {
    if (!trace_ready(g, op)) return NULL;
    const ir_node *n = trace_node(g, op, x, "the operand");
    if (n && !ir_dtype_accepts(types, n->dtype)) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_DTYPE, op, "takes %s, not %s",
                      types == IRT_FLOAT ? "f32, f64, bf16 or f16"
                                         : "f32, f64, bf16, f16, i32 or i64",
                      kiln_dtype_name(n->dtype));
        return NULL;
    }
    return n;
}

static const ir_node *float_operand(kiln_graph *g, const char *op, kiln_value x) {
    return checked_operand(g, op, x, IRT_FLOAT);
}

static kiln_value scalar_like(kiln_graph *g, const char *op, kiln_value x, double v) {
    return trace_scalar(g, op, g->nodes[x.id].dtype, v);
}

kiln_value kiln_relu(kiln_graph *g, kiln_value x) {
    const char *op = "kiln_relu";
    if (!checked_operand(g, op, x, IRT_NUMERIC)) return KN_NONE;
    ir_composite c = {.kind = IR_COMP_RELU, .first = g->n_nodes, .in = {x.id}};
    kiln_value r = kiln_max(g, x, scalar_like(g, op, x, 0));
    c.out = r.id;
    trace_composite(g, op, &c);
    return r;
}

/* max over `axis` with keepdims, replaced by 0 where it is not finite, so that a row of
 * -inf gives -inf (logsumexp) rather than NaN, as jax.nn.logsumexp does. */
static kiln_value safe_max(kiln_graph *g, const char *op, kiln_value x, int naxes,
                           const int *axes) {
    kiln_value m = kiln_reduce_max(g, x, naxes, axes, true);
    kiln_value finite =
        kiln_compare(g, kiln_abs(g, m), scalar_like(g, op, x, INFINITY), KILN_CMP_LT);
    return kiln_select(g, finite, m, scalar_like(g, op, x, 0));
}

/* logsumexp as kiln_logsumexp traces it (a composite of its own), and its row max m and
 * sum s = sum(exp(x - m)), both with the axes kept: the gradient rules read them
 * (exp(x - m) / s keeps its precision where exp(x - lse) would carry lse's rounding, a
 * relative error of |lse| ulps, into every probability). */
static kiln_value logsumexp_parts(kiln_graph *g, const char *op, kiln_value x, int naxes,
                                  const int *axes, bool keepdims, kiln_value *m_out,
                                  kiln_value *s_out) {
    *m_out = *s_out = KN_NONE;
    const ir_node *xn = float_operand(g, op, x);
    if (!xn) return KN_NONE;
    ir_shape in = xn->shape;
    uint32_t mask;
    if (!trace_axes_mask(g, op, x, naxes, axes, &mask)) return KN_NONE;
    ir_composite c = {.kind = IR_COMP_LOGSUMEXP,
                      .first = g->n_nodes,
                      .in = {x.id},
                      .axes = mask,
                      .keepdims = keepdims};
    kiln_value m = safe_max(g, op, x, naxes, axes);
    kiln_value s = kiln_reduce_sum(g, kiln_exp(g, kiln_sub(g, x, m)), naxes, axes, true);
    kiln_value r = kiln_add(g, kiln_log(g, s), m);
    if (!keepdims && r.id) {
        int64_t dims[KILN_MAX_RANK];
        int rank = 0;
        for (int i = 0; i < in.rank; i++)
            if (!(mask >> i & 1u)) dims[rank++] = in.dims[i];
        r = kiln_reshape(g, r, rank, dims);
    }
    c.out = r.id, c.aux[0] = m.id, c.aux[1] = s.id;
    trace_composite(g, op, &c);
    *m_out = m, *s_out = s;
    return r;
}

kiln_value kiln_logsumexp(kiln_graph *g, kiln_value x, int naxes, const int *axes, bool keepdims) {
    kiln_value m, s;
    return logsumexp_parts(g, "kiln_logsumexp", x, naxes, axes, keepdims, &m, &s);
}

kiln_value kiln_softmax(kiln_graph *g, kiln_value x, int axis) {
    const char *op = "kiln_softmax";
    const ir_node *xn = float_operand(g, op, x);
    if (!xn) return KN_NONE;
    int a;
    if (!trace_axis(axis, xn->shape.rank, &a))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for rank %d", axis, xn->shape.rank);
    ir_composite c = {.kind = IR_COMP_SOFTMAX, .first = g->n_nodes, .in = {x.id}, .axes = 1u << a};
    kiln_value m = kiln_reduce_max(g, x, 1, &a, true);
    kiln_value e = kiln_exp(g, kiln_sub(g, x, m));
    kiln_value r = kiln_div(g, e, kiln_reduce_sum(g, e, 1, &a, true));
    c.out = r.id;
    trace_composite(g, op, &c);
    return r;
}

kiln_value kiln_log_softmax(kiln_graph *g, kiln_value x, int axis) {
    const char *op = "kiln_log_softmax";
    const ir_node *xn = float_operand(g, op, x);
    if (!xn) return KN_NONE;
    int a;
    if (!trace_axis(axis, xn->shape.rank, &a))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for rank %d", axis, xn->shape.rank);
    ir_composite c = {
        .kind = IR_COMP_LOG_SOFTMAX, .first = g->n_nodes, .in = {x.id}, .axes = 1u << a};
    kiln_value shifted = kiln_sub(g, x, kiln_reduce_max(g, x, 1, &a, true));
    kiln_value lse = kiln_log(g, kiln_reduce_sum(g, kiln_exp(g, shifted), 1, &a, true));
    kiln_value r = kiln_sub(g, shifted, lse);
    c.out = r.id;
    trace_composite(g, op, &c);
    return r;
}

/* Checks layer norm's scale or bias (the invalid value: absent): dtype t, shape [dim]
 * where dim is x's size along axis a; `which` says how the message names that axis. */
static bool norm_param_ok(kiln_graph *g, const char *op, kiln_value x, kiln_value p,
                          const char *what, kiln_dtype t, int64_t dim, const char *which) {
    if (!p.id) return true;
    const ir_node *pn = trace_node(g, op, p, what);
    if (!pn) return false;
    if (pn->shape.rank == 1 && pn->shape.dims[0] == dim && pn->dtype == t) return true;
    char have[IR_TYPE_STR_MAX];
    uint32_t in[2] = {x.id, p.id};
    trace_fail_on(g, in, 2, pn->dtype != t ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, op,
                  "%s must be %s[%lld] (%s of x), not %s", what, kiln_dtype_name(t), (long long)dim,
                  which, ir_type_str(pn->dtype, &pn->shape, have, sizeof have));
    return false;
}

/* v [dim of axis a] broadcast along axis a of shape xs: NumPy broadcasting does it for the
 * last axis (the graph kiln_layer_norm always made), broadcast_in_dim for any other. */
static kiln_value along_axis(kiln_graph *g, kiln_value v, const ir_shape *xs, int a) {
    if (a == xs->rank - 1) return v;
    return kiln_broadcast_in_dim(g, v, xs->rank, xs->dims, &a);
}

/* Layer norm over axis a (normalised, in range) of x, checked: the composite both public
 * forms trace. The mean and the reciprocal standard deviation, one value a row, are kept
 * for the direct rule (src/autodiff/composite_rules.c). */
static kiln_value layer_norm_at(kiln_graph *g, const char *op, kiln_value x, kiln_value scale,
                                kiln_value bias, int a, double eps) {
    const ir_node *xn = &g->nodes[x.id];
    ir_shape xs = xn->shape;
    ir_composite c = {.kind = IR_COMP_LAYER_NORM,
                      .first = g->n_nodes,
                      .in = {x.id, scale.id, bias.id},
                      .axes = 1u << a};
    kiln_value mean = kiln_mean(g, x, 1, &a, true);
    kiln_value xc = kiln_sub(g, x, mean);
    kiln_value var = kiln_mean(g, kiln_mul(g, xc, xc), 1, &a, true);
    kiln_value rstd = kiln_rsqrt(g, kiln_add(g, var, scalar_like(g, op, x, eps)));
    kiln_value y = kiln_mul(g, xc, rstd);
    if (scale.id) y = kiln_mul(g, y, along_axis(g, scale, &xs, a));
    if (bias.id) y = kiln_add(g, y, along_axis(g, bias, &xs, a));
    c.out = y.id, c.aux[0] = mean.id, c.aux[1] = rstd.id;
    trace_composite(g, op, &c);
    return y;
}

kiln_value kiln_layer_norm(kiln_graph *g, kiln_value x, kiln_value scale, kiln_value bias,
                           double eps) {
    const char *op = "kiln_layer_norm";
    const ir_node *xn = float_operand(g, op, x);
    if (!xn) return KN_NONE;
    if (xn->shape.rank < 1)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "needs rank >= 1 (it normalises the last axis)");
    if (!(eps >= 0))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op, "eps %g must be >= 0",
                             eps);
    int last = xn->shape.rank - 1;
    int64_t dim = xn->shape.dims[last];
    if (!norm_param_ok(g, op, x, scale, "scale", xn->dtype, dim, "the last axis") ||
        !norm_param_ok(g, op, x, bias, "bias", xn->dtype, dim, "the last axis"))
        return KN_NONE;
    return layer_norm_at(g, op, x, scale, bias, last, eps);
}

/* flax's LayerNorm(reduction_axes=axis, feature_axes=axis): kiln_layer_norm along any one
 * axis, scale and bias broadcast along it. */
kiln_value kiln_layer_norm_axis(kiln_graph *g, kiln_value x, kiln_value scale, kiln_value bias,
                                int axis, double eps) {
    const char *op = "kiln_layer_norm_axis";
    const ir_node *xn = float_operand(g, op, x);
    if (!xn) return KN_NONE;
    int a;
    if (xn->shape.rank < 1)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "needs rank >= 1 (it normalises along an axis)");
    if (!trace_axis(axis, xn->shape.rank, &a))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for rank %d", axis, xn->shape.rank);
    if (!(eps >= 0))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op, "eps %g must be >= 0",
                             eps);
    char which[32];
    snprintf(which, sizeof which, "axis %d", a);
    int64_t dim = xn->shape.dims[a];
    if (!norm_param_ok(g, op, x, scale, "scale", xn->dtype, dim, which) ||
        !norm_param_ok(g, op, x, bias, "bias", xn->dtype, dim, which))
        return KN_NONE;
    return layer_norm_at(g, op, x, scale, bias, a, eps);
}

/* jnp.square: x * x, whose product rule gives the gradient 2 x g. */
kiln_value kiln_square(kiln_graph *g, kiln_value x) {
    if (!checked_operand(g, "kiln_square", x, IRT_NUMERIC)) return KN_NONE;
    return kiln_mul(g, x, x);
}

/* |x| < inf: false for the infinities and NaN (which compares unequal). */
kiln_value kiln_is_finite(kiln_graph *g, kiln_value x) {
    const char *op = "kiln_is_finite";
    if (!float_operand(g, op, x)) return KN_NONE;
    return kiln_compare(g, kiln_abs(g, x), scalar_like(g, op, x, INFINITY), KILN_CMP_LT);
}

/* approximate: jax.nn.gelu(approximate=True), GPT-2's tanh form. Exact: 0.5 x (1 + erf(x /
 * sqrt 2)), jax.nn.gelu(approximate=False) up to how the CDF is written: JAX uses
 * erfc(-x / sqrt 2), which keeps relative precision in the far left tail where 1 + erf(...)
 * cancels. kiln_erf is an inline f32 polynomial and kiln_erfc (computed in double) costs
 * about twice it, so the erf form is kept: the absolute difference in the tail is below 1e-7 (f32)
 * and the result goes to 0 rather than to a tiny negative number below x ~ -5.6 (f32). */
kiln_value kiln_gelu(kiln_graph *g, kiln_value x, bool approximate) {
    const char *op = "kiln_gelu";
    const ir_node *xn = float_operand(g, op, x);
    if (!xn) return KN_NONE;
    kiln_dtype t = xn->dtype;
    if (!approximate && t != KILN_DTYPE_F32 && t != KILN_DTYPE_F64) {
        /* bf16, f16: in f32, rounded once. Rounding erf to 8 or 11 bits first made 1 + erf
         * cancel from x ~ -3.1 (bf16) and -3.6 (f16), where gelu is still -2e-3 (an outside
         * check: 2040 ulps in f16, where JAX's erfc form has 15) */
        kiln_value y = kiln_gelu(g, kiln_convert(g, x, KILN_DTYPE_F32), false);
        return kiln_convert(g, y, t);
    }
    kiln_value half_x = kiln_mul(g, scalar_like(g, op, x, 0.5), x);
    if (!approximate) {
        kiln_value u = kiln_mul(g, x, scalar_like(g, op, x, M_SQRT1_2));
        return kiln_mul(g, half_x, kiln_add(g, scalar_like(g, op, x, 1), kiln_erf(g, u)));
    }
    kiln_value x3 = kiln_mul(g, kiln_mul(g, x, x), x);
    kiln_value inner = kiln_mul(g, scalar_like(g, op, x, sqrt(2.0 / M_PI)),
                                kiln_add(g, x, kiln_mul(g, scalar_like(g, op, x, 0.044715), x3)));
    return kiln_mul(g, half_x, kiln_add(g, scalar_like(g, op, x, 1), kiln_tanh(g, inner)));
}

/* x * logistic(x) (jax.nn.silu): two elementwise primitives that fuse into their
 * neighbours; their rules give g * (s + x s (1 - s)) with s the forward logistic, which is
 * what a direct rule would compute, so none is recorded. */
kiln_value kiln_silu(kiln_graph *g, kiln_value x) {
    if (!float_operand(g, "kiln_silu", x)) return KN_NONE;
    return kiln_mul(g, x, kiln_logistic(g, x));
}

/* LLaMA's RMSNorm: x * rsqrt(mean(x^2 over axis) + eps) * scale. The composite keeps the
 * reciprocal root mean square (one value a row) for its direct rule, which then needs x, it
 * and scale, not the full-size x * rsqrt(...) the primitives' rules would keep. */
kiln_value kiln_rms_norm(kiln_graph *g, kiln_value x, kiln_value scale, int axis, double eps) {
    const char *op = "kiln_rms_norm";
    const ir_node *xn = float_operand(g, op, x);
    if (!xn) return KN_NONE;
    ir_shape xs = xn->shape;
    int a;
    if (xs.rank < 1)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "needs rank >= 1 (it normalises along an axis)");
    if (!trace_axis(axis, xs.rank, &a))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for rank %d", axis, xs.rank);
    if (!(eps >= 0))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op, "eps %g must be >= 0",
                             eps);
    if (scale.id) {
        const ir_node *p = trace_node(g, op, scale, "scale");
        if (!p) return KN_NONE;
        if (p->shape.rank != 1 || p->shape.dims[0] != xs.dims[a] || p->dtype != xn->dtype) {
            char have[IR_TYPE_STR_MAX];
            uint32_t in[2] = {x.id, scale.id};
            return trace_fail_on(
                g, in, 2, p->dtype != xn->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, op,
                "scale must be %s[%lld] (axis %d of x), not %s", kiln_dtype_name(xn->dtype),
                (long long)xs.dims[a], a, ir_type_str(p->dtype, &p->shape, have, sizeof have));
        }
    }
    ir_composite c = {
        .kind = IR_COMP_RMS_NORM, .first = g->n_nodes, .in = {x.id, scale.id}, .axes = 1u << a};
    kiln_value ms = kiln_mean(g, kiln_mul(g, x, x), 1, &a, true);
    kiln_value r = kiln_rsqrt(g, kiln_add(g, ms, scalar_like(g, op, x, eps)));
    kiln_value y = kiln_mul(g, x, r);
    if (scale.id) y = kiln_mul(g, y, kiln_broadcast_in_dim(g, scale, xs.rank, xs.dims, &a));
    c.out = y.id, c.aux[0] = r.id;
    trace_composite(g, op, &c);
    return y;
}

/* jnp.where: a condition that is not bool is true where it is nonzero (NaN included). All
 * three broadcast together; x and y share a dtype. Checked before the condition's compare
 * is emitted, so every mistake names kiln_where and leaves no node. */
kiln_value kiln_where(kiln_graph *g, kiln_value cond, kiln_value x, kiln_value y) {
    const char *op = "kiln_where";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *cn = trace_node(g, op, cond, "the condition");
    const ir_node *xn = cn ? trace_node(g, op, x, "x") : NULL;
    const ir_node *yn = xn ? trace_node(g, op, y, "y") : NULL;
    if (!yn) return KN_NONE;
    kiln_value all[3] = {cond, x, y};
    uint32_t in[3] = {cond.id, x.id, y.id};
    if (xn->dtype != yn->dtype)
        return trace_fail_on(g, in, 3, KILN_STATUS_DTYPE, op,
                             "x and y must share a dtype (%s vs %s); convert one first",
                             kiln_dtype_name(xn->dtype), kiln_dtype_name(yn->dtype));
    ir_shape out;
    if (!trace_broadcast_shape(g, op, all, 3, &out)) return KN_NONE;
    if (cn->dtype != KILN_DTYPE_BOOL)
        all[0] = kiln_compare(g, cond, trace_scalar(g, op, cn->dtype, 0), KILN_CMP_NE);
    ir_node n = {.op = IR_SELECT};
    return trace_nary(g, op, &n, all, 3);
}

/* jnp.clip: min(max(x, lo), hi), so values and gradients are JAX's: NaN in any operand
 * propagates, lo > hi gives hi, and at x == lo (or hi) the cotangent splits evenly
 * between x and the bound (max/min's tie rule). lo and hi are values of the graph of x's
 * dtype; all three broadcast together. */
kiln_value kiln_clip(kiln_graph *g, kiln_value x, kiln_value lo, kiln_value hi) {
    const char *op = "kiln_clip";
    const ir_node *xn = checked_operand(g, op, x, IRT_NUMERIC);
    if (!xn) return KN_NONE;
    const ir_node *ln = trace_node(g, op, lo, "lo");
    const ir_node *hn = ln ? trace_node(g, op, hi, "hi") : NULL;
    if (!hn) return KN_NONE;
    kiln_value all[3] = {x, lo, hi};
    uint32_t in[3] = {x.id, lo.id, hi.id};
    if (ln->dtype != xn->dtype || hn->dtype != xn->dtype)
        return trace_fail_on(g, in, 3, KILN_STATUS_DTYPE, op,
                             "lo and hi must have x's dtype %s (lo %s, hi %s); convert them first",
                             kiln_dtype_name(xn->dtype), kiln_dtype_name(ln->dtype),
                             kiln_dtype_name(hn->dtype));
    ir_shape out;
    if (!trace_broadcast_shape(g, op, all, 3, &out)) return KN_NONE;
    return kiln_min(g, kiln_max(g, x, lo), hi);
}

kiln_value kiln_softmax_cross_entropy(kiln_graph *g, kiln_value logits, kiln_value labels) {
    const char *op = "kiln_softmax_cross_entropy";
    const ir_node *ln = float_operand(g, op, logits);
    if (!ln) return KN_NONE;
    const ir_node *yn = trace_node(g, op, labels, "the labels");
    if (!yn) return KN_NONE;
    uint32_t in[2] = {logits.id, labels.id};
    if (!ir_dtype_is_int(yn->dtype))
        return trace_fail_on(g, in, 2, KILN_STATUS_DTYPE, op, "labels must be i32 or i64, not %s",
                             kiln_dtype_name(yn->dtype));
    bool fits = ln->shape.rank == yn->shape.rank + 1;
    for (int i = 0; fits && i < yn->shape.rank; i++) fits = ln->shape.dims[i] == yn->shape.dims[i];
    if (!fits)
        return trace_fail_on(g, in, 2, KILN_STATUS_SHAPE, op,
                             "logits [..., C] and labels [...] must agree on [...]");
    ir_shape s = ln->shape, ys = yn->shape; /* copies: the nodes move as the graph grows */
    kiln_dtype t = ln->dtype, it = yn->dtype;
    int last = s.rank - 1, bdims[KILN_MAX_RANK];
    for (int i = 0; i < last; i++) bdims[i] = i;
    /* the picked logit, read where the label points (a pass over the row for it, summing a
     * one-hot select, was a third read of the logits: 1.4x XLA's forward pass, which
     * gathers; bench/RESULTS.md), 0 for a label outside [0, C); the gradient rule reads
     * hit, the one-hot mask (composite_rules.c) */
    ir_composite c = {.kind = IR_COMP_CROSS_ENTROPY,
                      .first = g->n_nodes,
                      .in = {logits.id, labels.id},
                      .axes = 1u << last};
    kiln_value classes = kiln_iota(g, it, s.rank, s.dims, last);
    kiln_value lab = kiln_broadcast_in_dim(g, labels, s.rank, s.dims, bdims);
    kiln_value hit = kiln_compare(g, classes, lab, KILN_CMP_EQ);
    int64_t at_dims[KILN_MAX_RANK];
    for (int i = 0; i < last; i++) at_dims[i] = s.dims[i];
    at_dims[last] = 1;
    kiln_value at = kiln_reshape(g, labels, s.rank, at_dims);
    kiln_value read = kiln_take_along_axis(g, logits, at, last, KILN_GATHER_CLIP);
    read = kiln_reshape(g, read, ys.rank, ys.dims);
    kiln_value valid = kiln_logical_and(
        g, kiln_compare(g, labels, trace_scalar(g, op, it, 0), KILN_CMP_GE),
        kiln_compare(g, labels, trace_scalar(g, op, it, (double)s.dims[last]), KILN_CMP_LT));
    kiln_value picked = kiln_select(g, valid, read, trace_scalar(g, op, t, 0));
    kiln_value m, sum;
    kiln_value lse = logsumexp_parts(g, "kiln_logsumexp", logits, 1, &last, false, &m, &sum);
    kiln_value r = kiln_sub(g, lse, picked);
    c.out = r.id, c.aux[0] = m.id, c.aux[1] = hit.id, c.aux[2] = sum.id;
    trace_composite(g, op, &c);
    return r;
}
