/* jvp_rules.c — one JVP rule per differentiable op, in a table indexed by op.
 *
 * Each rule is its op's linearisation applied to the tangents of its inputs, written with
 * the public builders (so every tangent node is typed and verified, fuses, and is
 * differentiated again by a later kiln_grad or kiln_jvp). Rules reuse forward values where
 * the derivative is a function of the result (exp: t * y; tanh, logistic, sqrt, rsqrt read
 * y), as the VJP rules do, so the tangent pass needs no buffer the forward did not.
 *
 * Symbolic zeros: a tangent {0, 0} is a zero that has no node (JAX's ad.Zero). The
 * transform calls a rule only when at least one input has a tangent; a rule builds nothing
 * for an input whose tangent is zero, and materialises zeros (a broadcast scalar, fused
 * away) only where an op needs an operand in that slot (select, concatenate, pad, the
 * dynamic and scatter ops). A rule may return {0, 0}: its result's tangent is then zero too.
 *
 * Conventions at non-smooth points are JAX's JVPs (jax/_src/lax/lax.py), the same as the
 * VJP rules' (rules.c), so <u, J v> agrees both ways at every point: abs'(0) = 1; max/min
 * split a tie 0.5/0.5 (_balanced_eq); sqrt'(0) = inf; pow's d/db uses log(a) with a = 0
 * replaced by 1; reduce_max/min average the tangents of the tied positions
 * (_reduce_chooser_jvp_rule). kiln_relu's 0 at 0 is applied by the transform (jvp.c).
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
    return trace_scalar(g, AD_JVP_OP, t, v);
}

/* t, or zeros of input id's type when t is a symbolic zero. */
static kiln_value or_zeros(kiln_graph *g, kiln_value t, uint32_t id) {
    if (t.id) return t;
    const ir_node *x = &g->nodes[id];
    kiln_dtype dt = x->dtype;
    ir_shape s = x->shape;
    kiln_value z = scalar(g, dt, 0);
    if (!z.id || s.rank == 0) return z;
    return kiln_broadcast_in_dim(g, z, s.rank, s.dims, NULL);
}

/* a + b where either may be a symbolic zero. */
static kiln_value add_tangents(kiln_graph *g, kiln_value a, kiln_value b) {
    if (!a.id) return b;
    if (!b.id) return a;
    return kiln_add(g, a, b);
}

/* t * d, zero when t is. */
static kiln_value scaled(kiln_graph *g, kiln_value t, kiln_value d) {
    return t.id ? kiln_mul(g, t, d) : KN_NONE;
}

/* The axes of a mask as a list; returns how many. */
static int axis_list(uint32_t mask, int rank, int *axes) {
    int n = 0;
    for (int i = 0; i < rank; i++)
        if (mask >> i & 1u) axes[n++] = i;
    return n;
}

/* r (a reduction's result) broadcast back over the reduced axes of mask to shape `to`. */
static kiln_value expand(kiln_graph *g, kiln_value r, const ir_shape *to, uint32_t mask) {
    if (!mask) return r;
    int bd[KILN_MAX_RANK], n = 0;
    for (int i = 0; i < to->rank; i++)
        if (!(mask >> i & 1u)) bd[n++] = i;
    return kiln_broadcast_in_dim(g, r, to->rank, to->dims, bd);
}

static kiln_value sum_over(kiln_graph *g, kiln_value x, int rank, uint32_t mask) {
    int axes[KILN_MAX_RANK], n = axis_list(mask, rank, axes);
    return n ? kiln_reduce_sum(g, x, n, axes, false) : x;
}

#define RULE(name)                                                                                 \
    static kiln_value name(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *t)

/* ---------------------------------------------------------------- unary ---- */

RULE(jvp_neg) {
    (void)id, (void)n;
    return kiln_neg(g, t[0]);
}

/* JAX: select(x >= 0, t, -t), so abs'(0) = 1. */
RULE(jvp_abs) {
    (void)id;
    kiln_value x = val(g, ir_in(n)[0]);
    kiln_value pos = kiln_compare(g, x, scalar(g, n->dtype, 0), KILN_CMP_GE);
    return kiln_select(g, pos, t[0], kiln_neg(g, t[0]));
}

RULE(jvp_exp) {
    (void)n;
    return kiln_mul(g, t[0], val(g, id)); /* the forward exp, reused */
}

RULE(jvp_log) {
    (void)id;
    return kiln_div(g, t[0], val(g, ir_in(n)[0]));
}

RULE(jvp_log1p) {
    (void)id;
    kiln_value x = val(g, ir_in(n)[0]);
    return kiln_div(g, t[0], kiln_add(g, x, scalar(g, n->dtype, 1)));
}

/* JAX: t * (0.5 / sqrt(x)): infinite at 0. */
RULE(jvp_sqrt) {
    return kiln_mul(g, t[0], kiln_div(g, scalar(g, n->dtype, 0.5), val(g, id)));
}

/* JAX: t * (-0.5 * rsqrt(x) / x). */
RULE(jvp_rsqrt) {
    kiln_value q = kiln_div(g, val(g, id), val(g, ir_in(n)[0]));
    return kiln_mul(g, t[0], kiln_mul(g, scalar(g, n->dtype, -0.5), q));
}

/* JAX's form, (t + t*y) * (1 - y), which keeps precision where y is near +-1. */
RULE(jvp_tanh) {
    kiln_value y = val(g, id);
    kiln_value a = kiln_add(g, t[0], kiln_mul(g, t[0], y));
    return kiln_mul(g, a, kiln_sub(g, scalar(g, n->dtype, 1), y));
}

RULE(jvp_logistic) {
    kiln_value y = val(g, id);
    return kiln_mul(g, t[0], kiln_mul(g, y, kiln_sub(g, scalar(g, n->dtype, 1), y)));
}

RULE(jvp_sin) {
    (void)id;
    return kiln_mul(g, t[0], kiln_cos(g, val(g, ir_in(n)[0])));
}

RULE(jvp_cos) {
    (void)id;
    return kiln_mul(g, kiln_neg(g, t[0]), kiln_sin(g, val(g, ir_in(n)[0])));
}

/* erf'(x) = 2/sqrt(pi) exp(-x^2). */
RULE(jvp_erf) {
    (void)id;
    kiln_value x = val(g, ir_in(n)[0]);
    kiln_value d = kiln_mul(g, scalar(g, n->dtype, 1.1283791670955126), /* 2/sqrt(pi) */
                            kiln_exp(g, kiln_neg(g, kiln_mul(g, x, x))));
    return kiln_mul(g, t[0], d);
}

/* The math functions of derivatives.c: the tangent times the derivative. */
RULE(jvp_math) {
    return scaled(g, t[0], ad_math_derivative(g, AD_JVP_OP, id, n));
}

RULE(jvp_atan2) {
    (void)id;
    bool need[2] = {t[0].id != 0, t[1].id != 0};
    kiln_value d[2];
    ad_atan2_partials(g, n, need, d);
    return add_tangents(g, scaled(g, t[0], d[0]), scaled(g, t[1], d[1]));
}

/* float -> float: the tangent converted. From an integer or bool there is no tangent (the
 * transform never gives one), to one the result carries none. */
RULE(jvp_convert) {
    (void)id;
    if (!ir_dtype_is_float(g->nodes[ir_in(n)[0]].dtype) || !ir_dtype_is_float(n->dtype))
        return KN_NONE;
    return kiln_convert(g, t[0], n->dtype);
}

/* --------------------------------------------------------------- binary ---- */

RULE(jvp_add) {
    (void)id, (void)n;
    return add_tangents(g, t[0], t[1]);
}

RULE(jvp_sub) {
    (void)id, (void)n;
    if (!t[1].id) return t[0];
    return t[0].id ? kiln_sub(g, t[0], t[1]) : kiln_neg(g, t[1]);
}

RULE(jvp_mul) {
    (void)id;
    const uint32_t *in = ir_in(n);
    kiln_value a = scaled(g, t[0], val(g, in[1]));
    kiln_value b = t[1].id ? kiln_mul(g, val(g, in[0]), t[1]) : KN_NONE;
    return add_tangents(g, a, b);
}

/* JAX: t_a / b, and -t_b * a / b^2. */
RULE(jvp_div) {
    (void)id;
    kiln_value a = val(g, ir_in(n)[0]), b = val(g, ir_in(n)[1]);
    kiln_value da = t[0].id ? kiln_div(g, t[0], b) : KN_NONE, db = KN_NONE;
    if (t[1].id) db = kiln_div(g, kiln_mul(g, kiln_neg(g, t[1]), a), kiln_mul(g, b, b));
    return add_tangents(g, da, db);
}

/* JAX: t_a - t_b * trunc(a / b). */
RULE(jvp_rem) {
    (void)id;
    kiln_value a = val(g, ir_in(n)[0]), b = val(g, ir_in(n)[1]), db = KN_NONE;
    if (t[1].id) db = kiln_mul(g, kiln_neg(g, t[1]), ad_trunc_quotient(g, a, b));
    return add_tangents(g, t[0], db);
}

/* JAX (float exponent): t_a * b * a^(b-1) + t_b * log(a == 0 ? 1 : a) * a^b. */
RULE(jvp_pow) {
    kiln_value a = val(g, ir_in(n)[0]), b = val(g, ir_in(n)[1]), da = KN_NONE, db = KN_NONE;
    kiln_dtype dt = n->dtype;
    if (t[0].id) {
        kiln_value p = kiln_pow(g, a, kiln_sub(g, b, scalar(g, dt, 1)));
        da = kiln_mul(g, t[0], kiln_mul(g, b, p));
    }
    if (t[1].id) {
        kiln_value zero = kiln_compare(g, a, scalar(g, dt, 0), KILN_CMP_EQ);
        kiln_value safe = kiln_select(g, zero, scalar(g, dt, 1), a);
        db = kiln_mul(g, t[1], kiln_mul(g, kiln_log(g, safe), val(g, id)));
    }
    return add_tangents(g, da, db);
}

/* JAX's _balanced_eq: operand i's tangent weighs (x_i == y) / (x_other == y ? 2 : 1), so a
 * tie averages the two tangents. */
RULE(jvp_minmax) {
    const uint32_t *in = ir_in(n);
    kiln_dtype dt = n->dtype;
    kiln_value y = val(g, id), sum = KN_NONE;
    for (int i = 0; i < 2; i++) {
        if (!t[i].id) continue;
        kiln_value mine = kiln_compare(g, val(g, in[i]), y, KILN_CMP_EQ);
        kiln_value theirs = kiln_compare(g, val(g, in[1 - i]), y, KILN_CMP_EQ);
        kiln_value num = kiln_select(g, mine, scalar(g, dt, 1), scalar(g, dt, 0));
        kiln_value den = kiln_select(g, theirs, scalar(g, dt, 2), scalar(g, dt, 1));
        sum = add_tangents(g, sum, kiln_mul(g, t[i], kiln_div(g, num, den)));
    }
    return sum;
}

/* The predicate has no tangent; the branches' tangents are selected by it. */
RULE(jvp_select) {
    (void)id;
    const uint32_t *in = ir_in(n);
    return kiln_select(g, val(g, in[0]), or_zeros(g, t[1], in[1]), or_zeros(g, t[2], in[2]));
}

/* --------------------------------------------------------------- shapes ---- */

/* The linear shape ops: the same op, attributes and all, applied to the tangent. */
RULE(jvp_broadcast) {
    (void)id;
    return kiln_broadcast_in_dim(g, t[0], n->shape.rank, n->shape.dims, n->a.bcast_dims);
}

RULE(jvp_reshape) {
    (void)id;
    return kiln_reshape(g, t[0], n->shape.rank, n->shape.dims);
}

RULE(jvp_transpose) {
    (void)id;
    return kiln_transpose(g, t[0], n->a.perm);
}

RULE(jvp_rev) {
    (void)id;
    int axes[KILN_MAX_RANK], k = axis_list(n->a.rev_axes, n->shape.rank, axes);
    return kiln_rev(g, t[0], k, axes);
}

RULE(jvp_slice) {
    (void)id;
    return kiln_slice(g, t[0], n->a.slice.start, n->a.slice.limit, n->a.slice.stride);
}

/* A part without a tangent contributes zeros of its size. */
RULE(jvp_concat) {
    (void)id;
    kiln_value stack[16] = {{0, 0}}, *parts = stack;
    const uint32_t *in = ir_in(n);
    if (n->n_in > 16 && !(parts = host_alloc(g->ctx, n->n_in * sizeof *parts)))
        return trace_fail(g, KILN_STATUS_HOST_OOM, AD_JVP_OP,
                          "host allocation for the %u tangents of a concatenate failed", n->n_in);
    for (uint32_t k = 0; k < n->n_in; k++) parts[k] = or_zeros(g, t[k], in[k]);
    kiln_value r = kiln_concatenate(g, (int)n->n_in, parts, n->a.axis);
    if (parts != stack) host_free(g->ctx, parts, n->n_in * sizeof *parts);
    return r;
}

/* pad is linear in (operand, padding value) jointly. */
RULE(jvp_pad) {
    (void)id;
    const uint32_t *in = ir_in(n);
    return kiln_pad(g, or_zeros(g, t[0], in[0]), or_zeros(g, t[1], in[1]), n->a.pad.lo, n->a.pad.hi,
                    n->a.pad.interior);
}

/* ----------------------------------------------------------- reductions ---- */

RULE(jvp_reduce_sum) {
    (void)id;
    return sum_over(g, t[0], g->nodes[ir_in(n)[0]].shape.rank, n->a.reduce_axes);
}

/* JAX's _reduce_chooser_jvp_rule: the mean of the tangents at the positions equal to the
 * result. */
RULE(jvp_reduce_chooser) {
    uint32_t xid = ir_in(n)[0], mask = n->a.reduce_axes;
    ir_shape xs = g->nodes[xid].shape;
    kiln_value hit = kiln_compare(g, val(g, xid), expand(g, val(g, id), &xs, mask), KILN_CMP_EQ);
    kiln_value loc = kiln_convert(g, hit, n->dtype);
    kiln_value picked = sum_over(g, kiln_mul(g, t[0], loc), xs.rank, mask);
    return kiln_div(g, picked, sum_over(g, loc, xs.rank, mask));
}

/* sum(t * product of the others). The product of the others, exact with zeros, is what
 * the VJP rule multiplies its cotangent by: that rule, given a cotangent of ones, builds it,
 * so the zero handling lives in one place (rules.c). */
RULE(jvp_reduce_prod) {
    uint32_t xid = ir_in(n)[0];
    ir_shape xs = g->nodes[xid].shape, ys = n->shape;
    kiln_value one = scalar(g, n->dtype, 1);
    if (ys.rank) one = kiln_broadcast_in_dim(g, one, ys.rank, ys.dims, NULL);
    bool need = true;
    kiln_value others = KN_NONE;
    ad_rule_for(IR_REDUCE_PROD)(g, id, n, one, &need, &others);
    if (!others.id) return KN_NONE; /* the builder's error is on g */
    return sum_over(g, kiln_mul(g, t[0], others), xs.rank, n->a.reduce_axes);
}

/* ---------------------------------------------------------------- dot ---- */

/* Bilinear: dot(t_a, b) + dot(a, t_b) with the same dimension numbers. */
RULE(jvp_dot) {
    (void)id;
    const uint32_t *in = ir_in(n);
    kiln_dot_dims d = n->a.dot;
    kiln_value a = t[0].id ? kiln_dot_general(g, t[0], val(g, in[1]), &d) : KN_NONE;
    kiln_value b = t[1].id ? kiln_dot_general(g, val(g, in[0]), t[1], &d) : KN_NONE;
    return add_tangents(g, a, b);
}

/* Bilinear: the node's kind over (t_a, b) plus over (a, t_b), with its geometry. */
RULE(jvp_conv) {
    (void)id;
    const uint32_t *in = ir_in(n);
    int kind = n->a.conv.kind;
    kiln_value a = t[0].id ? trace_conv(g, AD_JVP_OP, n, kind, t[0], val(g, in[1])) : KN_NONE;
    kiln_value b = t[1].id ? trace_conv(g, AD_JVP_OP, n, kind, val(g, in[0]), t[1]) : KN_NONE;
    return add_tangents(g, a, b);
}

/* ------------------------------------------------------------- indexing ---- */

/* Linear in the table at fixed (integer) indices: the same gather of the tangent. */
RULE(jvp_take_rows) {
    (void)id;
    return kiln_take_rows(g, t[0], val(g, ir_in(n)[1]));
}

/* Linear in (operand, updates): the same scatter of the tangents; without an updates
 * tangent nothing is added, so the operand's tangent passes as it is. */
RULE(jvp_scatter_add_rows) {
    const uint32_t *in = ir_in(n);
    if (n->a.rows.mul || n->a.rows.min || n->a.rows.max) /* the expansion's, after autodiff */
        return trace_fail_on(g, &id, 1, KILN_STATUS_UNIMPLEMENTED, AD_JVP_OP,
                             "scatter_add_rows with mul, min or max has no derivative rule: "
                             "differentiate the kiln_scatter it expands");
    if (!t[2].id) return t[0];
    return kiln_scatter_add_rows(g, or_zeros(g, t[0], in[0]), val(g, in[1]), t[2]);
}

/* The traced starts of a dynamic slice, operands first.. of n. */
static int starts_of(const kiln_graph *g, const ir_node *n, uint32_t first, kiln_value *st) {
    for (uint32_t i = first; i < n->n_in; i++) st[i - first] = val(g, ir_in(n)[i]);
    return (int)(n->n_in - first);
}

/* The same window of the tangent, at the same (clamped) starts. */
RULE(jvp_dynamic_slice) {
    (void)id;
    kiln_value st[KILN_MAX_RANK];
    int k = starts_of(g, n, 1, st);
    return kiln_dynamic_slice(g, t[0], k, st, n->a.dyn_sizes);
}

RULE(jvp_dynamic_update_slice) {
    (void)id;
    const uint32_t *in = ir_in(n);
    kiln_value st[KILN_MAX_RANK];
    int k = starts_of(g, n, 2, st);
    return kiln_dynamic_update_slice(g, or_zeros(g, t[0], in[0]), or_zeros(g, t[1], in[1]), k, st);
}

RULE(jvp_cumsum) {
    (void)id;
    return kiln_cumsum(g, t[0], n->a.scan.axis, n->a.scan.reverse);
}

/* cholesky and triangular_solve: JAX's rules (src/trace/linalg.c), from the result. */
RULE(jvp_cholesky) {
    return trace_cholesky_jvp(g, n, val(g, id), t[0]);
}

RULE(jvp_triangular_solve) {
    const uint32_t *in = ir_in(n);
    return trace_triangular_solve_jvp(g, n, val(g, in[0]), val(g, id), t[0], t[1]);
}

/* dot_product_attention, any kind, through its primitive form (src/trace/attention.c): the
 * probabilities are recomputed from q and k, as the VJP rule does, and the forward sweep
 * runs over those primitives (softmax, dot_general, select) with q, k, v's tangents. The
 * primitive form's own output is not read, so compiling removes it. An operand passed
 * twice (self-attention, q = k = v) is seeded once. */
RULE(jvp_attention) {
    (void)id;
    const uint32_t *in = ir_in(n);
    uint32_t seeds[6];
    kiln_value tan[6];
    int ns = 0;
    for (int i = 0; i < (int)n->n_in && i < 6; i++) {
        bool dup = false;
        for (int j = 0; j < i; j++) dup |= in[j] == in[i];
        if (!dup) seeds[ns] = in[i], tan[ns++] = t[i];
    }
    uint32_t first = g->n_nodes;
    kiln_value args[6];
    for (uint32_t i = 0; i < n->n_in && i < 6; i++) args[i] = val(g, in[i]);
    kiln_value y = trace_attention_primitives(g, n, args);
    if (!y.id) return KN_NONE;
    return ad_jvp_region(g, first, y.id, ns, seeds, tan);
}

/* all_reduce over replicas. SUM and MEAN are linear: the tangents reduced the same way.
 * MAX: the mean of the tangents of the replicas holding the maximum (reduce_max's rule
 * across replicas). */
RULE(jvp_all_reduce) {
    if (n->a.reduce_kind != KILN_REDUCE_MAX)
        return kiln_all_reduce(g, t[0], (kiln_reduce_kind)n->a.reduce_kind);
    kiln_value x = val(g, ir_in(n)[0]), y = val(g, id);
    kiln_value hit = kiln_convert(g, kiln_compare(g, x, y, KILN_CMP_EQ), n->dtype);
    kiln_value picked = kiln_all_reduce(g, kiln_mul(g, hit, t[0]), KILN_REDUCE_SUM);
    return kiln_div(g, picked, kiln_all_reduce(g, hit, KILN_REDUCE_SUM));
}

/* A copy between memory kinds: the tangent goes where the value goes. */
RULE(jvp_memory_put) {
    (void)id;
    return kiln_memory_put(g, t[0], (kiln_memory_kind)n->a.memory_kind);
}

/* reduce_scatter (SUM, MEAN) and all_gather are linear: the tangents go the same way. */
RULE(jvp_reduce_scatter) {
    (void)id;
    return kiln_reduce_scatter(g, t[0], (kiln_reduce_kind)n->a.shard.kind, n->a.shard.ranks);
}

RULE(jvp_all_gather) {
    (void)id;
    return kiln_all_gather(g, t[0], n->a.shard.ranks);
}

/* Gather is linear in the operand: the same gather of its tangent. */
RULE(jvp_gather) {
    (void)id;
    return trace_gather_like(g, AD_JVP_OP, n, t[0], val(g, ir_in(n)[1]), 0);
}

/* ADD and SET: the same scatter of the tangents (SET's winner is the values' winner, since
 * kiln's order is defined). MUL: the operand's tangent times the product of the updates
 * (the updates' tangent refused, as JAX refuses it). MIN/MAX: JAX's shared coefficients. */
RULE(jvp_scatter) {
    const uint32_t *in = ir_in(n);
    kiln_value idx = val(g, in[1]);
    ir_shape xs = g->nodes[in[0]].shape;
    int kind = n->a.gs.kind;
    if (kind == KILN_SCATTER_ADD && !t[2].id) return t[0];
    if (kind == KILN_SCATTER_ADD || kind == KILN_SCATTER_SET)
        return trace_scatter_like(g, AD_JVP_OP, n, kind, or_zeros(g, t[0], in[0]), idx,
                                  or_zeros(g, t[2], in[2]));
    if (kind == KILN_SCATTER_MUL) {
        if (t[2].id)
            return trace_fail_on(g, &id, 1, KILN_STATUS_UNIMPLEMENTED, AD_JVP_OP,
                                 "the derivative of scatter mul with respect to its updates is "
                                 "not defined for duplicate indices (JAX refuses it too)");
        if (!t[0].id) return t[0];
        kiln_value p =
            trace_scatter_like(g, AD_JVP_OP, n, KILN_SCATTER_MUL,
                               kiln_full(g, n->dtype, xs.rank, xs.dims, 1), idx, val(g, in[2]));
        return kiln_mul(g, t[0], p);
    }
    kiln_value xc, uc, r = KN_NONE;
    trace_scatter_extremal_coefs(g, AD_JVP_OP, n, val(g, id), &xc, &uc);
    if (t[0].id) r = kiln_mul(g, t[0], xc);
    if (!t[2].id) return r;
    kiln_value z = kiln_full(g, n->dtype, xs.rank, xs.dims, 0);
    kiln_value s =
        trace_scatter_like(g, AD_JVP_OP, n, KILN_SCATTER_ADD, z, idx, kiln_mul(g, t[2], uc));
    return r.id ? kiln_add(g, r, s) : s;
}

#undef RULE

/* ---------------------------------------------------------------- table ---- */

/* Control flow (while, scan, cond and their results): jvp.c gives a control node the
 * tangents of all its results at once (control_jvp.c), so these entries only say the ops
 * carry tangents. Called directly, it is a kiln bug. */
static kiln_value jvp_control(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *t) {
    (void)t;
    return trace_fail(g, KILN_STATUS_INTERNAL, AD_JVP_OP,
                      "%s (%%%u) reached the one-result JVP rule table", ir_ops[n->op].name, id);
}

static const ad_jvp_rule rules[IR_NUM_OPS] = {
    [IR_NEG] = jvp_neg,
    [IR_ABS] = jvp_abs,
    [IR_EXP] = jvp_exp,
    [IR_LOG] = jvp_log,
    [IR_LOG1P] = jvp_log1p,
    [IR_SQRT] = jvp_sqrt,
    [IR_RSQRT] = jvp_rsqrt,
    [IR_TANH] = jvp_tanh,
    [IR_LOGISTIC] = jvp_logistic,
    [IR_SIN] = jvp_sin,
    [IR_COS] = jvp_cos,
    [IR_ERF] = jvp_erf,
    [IR_EXPM1] = jvp_math,
    [IR_TAN] = jvp_math,
    [IR_SINH] = jvp_math,
    [IR_COSH] = jvp_math,
    [IR_ASIN] = jvp_math,
    [IR_ACOS] = jvp_math,
    [IR_ATAN] = jvp_math,
    [IR_ASINH] = jvp_math,
    [IR_ACOSH] = jvp_math,
    [IR_ATANH] = jvp_math,
    [IR_ERFC] = jvp_math,
    [IR_ERF_INV] = jvp_math,
    [IR_LGAMMA] = jvp_math,
    [IR_DIGAMMA] = jvp_math,
    [IR_CBRT] = jvp_math,
    [IR_CONVERT] = jvp_convert,
    [IR_ADD] = jvp_add,
    [IR_SUB] = jvp_sub,
    [IR_MUL] = jvp_mul,
    [IR_DIV] = jvp_div,
    [IR_POW] = jvp_pow,
    [IR_REM] = jvp_rem,
    [IR_ATAN2] = jvp_atan2,
    [IR_MAX] = jvp_minmax,
    [IR_MIN] = jvp_minmax,
    [IR_SELECT] = jvp_select,
    [IR_BROADCAST] = jvp_broadcast,
    [IR_RESHAPE] = jvp_reshape,
    [IR_TRANSPOSE] = jvp_transpose,
    [IR_SLICE] = jvp_slice,
    [IR_CONCAT] = jvp_concat,
    [IR_PAD] = jvp_pad,
    [IR_REV] = jvp_rev,
    [IR_REDUCE_SUM] = jvp_reduce_sum,
    [IR_REDUCE_MAX] = jvp_reduce_chooser,
    [IR_REDUCE_MIN] = jvp_reduce_chooser,
    [IR_REDUCE_PROD] = jvp_reduce_prod,
    [IR_DOT] = jvp_dot,
    [IR_CONV] = jvp_conv,
    [IR_TAKE_ROWS] = jvp_take_rows,
    [IR_SCATTER_ADD_ROWS] = jvp_scatter_add_rows,
    [IR_DYNAMIC_SLICE] = jvp_dynamic_slice,
    [IR_DYNAMIC_UPDATE_SLICE] = jvp_dynamic_update_slice,
    [IR_CUMSUM] = jvp_cumsum,
    [IR_CHOLESKY] = jvp_cholesky,
    [IR_TRIANGULAR_SOLVE] = jvp_triangular_solve,
    [IR_GATHER] = jvp_gather,
    [IR_SCATTER] = jvp_scatter,
    [IR_ATTENTION] = jvp_attention,
    [IR_ALL_REDUCE] = jvp_all_reduce,
    [IR_REDUCE_SCATTER] = jvp_reduce_scatter,
    [IR_ALL_GATHER] = jvp_all_gather,
    [IR_MEMORY_PUT] = jvp_memory_put,
    [IR_WHILE] = jvp_control,
    [IR_SCAN] = jvp_control,
    [IR_COND] = jvp_control,
    [IR_RESULT] = jvp_control,
};

ad_jvp_rule ad_jvp_rule_for(ir_op op) {
    return (unsigned)op < IR_NUM_OPS ? rules[op] : NULL;
}
