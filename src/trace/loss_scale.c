/* loss_scale.c — loss scaling for 16-bit training as traced functions: unscaling the
 * gradients, the all-finite test and the scale's next value by torch.amp.GradScaler's rule
 * (kiln_loss_scale_unscale), and the select that keeps the old state when a step is
 * skipped (kiln_select_each). docs/mixed_precision.md.
 *
 * Invariants:
 * - Every input is checked before a node is added; on any error every output is the
 *   invalid value and the graph holds the builder's error naming the call.
 * - The scale's arithmetic is rank 0 (f32, as GradScaler keeps its scale): a growth that
 *   would overflow f32 is refused, so the scale is always finite and positive when it
 *   starts so, and 1 / scale never divides by zero.
 * - The finite test reads each gradient once, as sum(g * 0): 0 when every element is
 *   finite, NaN as soon as one is inf or NaN (inf * 0 is NaN, and NaN survives the sum).
 *   The simplifier never folds a float x * 0 (it is not 0 for inf and NaN), and the CPU
 *   kernels are compiled without -ffinite-math-only, so the test is exact.
 * - Unscaled gradients are marked as gradients, and each output of kiln_select_each takes
 *   the role of its on_true entry (parameter, optimiser state), so the memory report
 *   classes a skipped-step-aware update as it classes a plain one. */
#include "trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

static kiln_status fail_all(kiln_graph *g, int n, kiln_value *const *outs, int n_outs) {
    for (int k = 0; k < n_outs; k++)
        for (int i = 0; outs[k] && i < n; i++) outs[k][i] = KN_NONE;
    kiln_status s = g ? kiln_graph_status(g) : KILN_STATUS_INVALID_ARGUMENT;
    return s ? s : KILN_STATUS_INVALID_ARGUMENT;
}

/* v as a rank-0 value of the dtype class `types`, else NULL after an error naming it. */
static const ir_node *rank0(kiln_graph *g, const char *op, kiln_value v, const char *name,
                            int types, const char *want) {
    if (!v.id) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "%s is unset: it is required (a rank-0 value: a parameter fed each call)", name);
        return NULL;
    }
    const ir_node *x = trace_node(g, op, v, name);
    if (!x) return NULL;
    if (x->shape.rank != 0 || !ir_dtype_accepts(types, x->dtype)) {
        char have[IR_TYPE_STR_MAX];
        trace_fail_on(g, &v.id, 1, x->shape.rank ? KILN_STATUS_SHAPE : KILN_STATUS_DTYPE, op,
                      "%s must be a rank-0 %s value, not %s", name, want,
                      ir_type_str(x->dtype, &x->shape, have, sizeof have));
        return NULL;
    }
    return x;
}

static bool check_options(kiln_graph *g, const char *op, const kiln_loss_scale_options *o) {
    if (!rank0(g, op, o->scale, "scale", IRT_FLOAT, "float")) return false;
    if (!o->good_steps.id) return true; /* a static scale: the rest is not read */
    const ir_node *c = trace_node(g, op, o->good_steps, "good_steps");
    if (!c) return false;
    if (c->shape.rank != 0 || (c->dtype != KILN_DTYPE_I32 && c->dtype != KILN_DTYPE_I64)) {
        char have[IR_TYPE_STR_MAX];
        trace_fail_on(g, &o->good_steps.id, 1,
                      c->shape.rank ? KILN_STATUS_SHAPE : KILN_STATUS_DTYPE, op,
                      "good_steps must be a rank-0 i32 or i64 value, not %s",
                      ir_type_str(c->dtype, &c->shape, have, sizeof have));
        return false;
    }
    if (o->growth_factor != 0 && !(o->growth_factor > 1 && isfinite(o->growth_factor))) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "growth_factor = %g must be > 1 (0: the default, 2)", o->growth_factor);
        return false;
    }
    if (o->backoff_factor != 0 && !(o->backoff_factor > 0 && o->backoff_factor < 1)) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "backoff_factor = %g must be in (0, 1) (0: the default, 0.5)",
                   o->backoff_factor);
        return false;
    }
    if (o->growth_interval < 0 || o->growth_interval > INT32_MAX) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "growth_interval = %lld must be in [1, 2^31 - 1] (0: the default, 2000)",
                   (long long)o->growth_interval);
        return false;
    }
    return true;
}

/* Each grads[i] a float value of g. */
static bool check_grads(kiln_graph *g, const char *op, int n, const kiln_value *grads) {
    if (n <= 0 || !grads) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   n <= 0 ? "n is %d: it needs at least one gradient" : "grads is NULL for n = %d",
                   n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "grads[%d]", i);
        const ir_node *x = trace_node(g, op, grads[i], what);
        if (!x) return false;
        if (!ir_dtype_is_float(x->dtype)) {
            trace_fail_on(g, &grads[i].id, 1, KILN_STATUS_DTYPE, op,
                          "%s is %s: gradients are float values", what, kiln_dtype_name(x->dtype));
            return false;
        }
    }
    return true;
}

/* The next scale and counter of a dynamic scale, GradScaler's _amp_update_scale_:
 * finite: good + 1, and at growth_interval the scale grows (unless that overflows) and
 * the counter restarts; not finite: the scale backs off and the counter restarts. */
static void next_dynamic(kiln_graph *g, const char *op, const kiln_loss_scale_options *o,
                         kiln_value scale, kiln_value finite, kiln_value *new_scale,
                         kiln_value *new_good) {
    kiln_dtype ct = g->nodes[o->good_steps.id].dtype;
    double growth = o->growth_factor ? o->growth_factor : 2.0;
    double backoff = o->backoff_factor ? o->backoff_factor : 0.5;
    int64_t interval = o->growth_interval ? o->growth_interval : 2000;
    kiln_value zero = trace_scalar(g, op, ct, 0);
    kiln_value good1 = kiln_add(g, o->good_steps, trace_scalar(g, op, ct, 1));
    kiln_value due = kiln_compare(g, good1, trace_scalar(g, op, ct, (double)interval), KILN_CMP_GE);
    kiln_value grown = kiln_mul(g, scale, trace_scalar(g, op, KILN_DTYPE_F32, growth));
    kiln_value grown_ok = kiln_compare(g, kiln_abs(g, grown),
                                       trace_scalar(g, op, KILN_DTYPE_F32, INFINITY), KILN_CMP_LT);
    kiln_value kept = kiln_select(g, kiln_logical_and(g, due, grown_ok), grown, scale);
    kiln_value backed = kiln_mul(g, scale, trace_scalar(g, op, KILN_DTYPE_F32, backoff));
    *new_scale = kiln_select(g, finite, kept, backed);
    *new_good = kiln_select(g, finite, kiln_select(g, due, zero, good1), zero);
}

kiln_status kiln_loss_scale_unscale(kiln_graph *g, const kiln_loss_scale_options *o, int n,
                                    const kiln_value *grads, kiln_value *unscaled,
                                    kiln_value *finite, kiln_value *new_scale,
                                    kiln_value *new_good_steps) {
    const char *op = "kiln_loss_scale_unscale";
    kiln_value *outs[1] = {unscaled};
    kiln_value *scalars[3] = {finite, new_scale, new_good_steps};
    for (int k = 0; k < 3; k++)
        if (scalars[k]) *scalars[k] = KN_NONE;
    if (!trace_ready(g, op)) return fail_all(g, n, outs, 1);
    if (!o || !unscaled) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s is NULL", !o ? "o" : "unscaled");
        return fail_all(g, n, outs, 1);
    }
    if (!check_options(g, op, o) || !check_grads(g, op, n, grads)) return fail_all(g, n, outs, 1);

    kiln_value scale = kiln_convert(g, o->scale, KILN_DTYPE_F32);
    /* 1 / scale in f64, then rounded once to f32, or to an f64 gradient's dtype (torch: the
     * reciprocal in double, then float); a 16-bit gradient is multiplied in f32 and the
     * product rounded once, as torch's unscale does in its f32 opmath: 1/S rounded to f16
     * would be 0 above 2^24 and a subnormal with few bits from 2^14 */
    kiln_value inv64 =
        kiln_div(g, trace_scalar(g, op, KILN_DTYPE_F64, 1), kiln_convert(g, scale, KILN_DTYPE_F64));
    kiln_value bad = KN_NONE; /* sum over i of sum(grads[i] * 0), f32: 0 or NaN */
    for (int i = 0; i < n && !g->status; i++) {
        kiln_dtype t = g->nodes[grads[i].id].dtype;
        kiln_value z =
            kiln_reduce_sum(g, kiln_mul(g, grads[i], trace_scalar(g, op, t, 0)), 0, NULL, false);
        z = kiln_convert(g, z, KILN_DTYPE_F32);
        bad = i ? kiln_add(g, bad, z) : z;
        if (t == KILN_DTYPE_F64 || t == KILN_DTYPE_F32) {
            unscaled[i] = kiln_mul(g, grads[i], kiln_convert(g, inv64, t));
        } else {
            kiln_value wide = kiln_convert(g, grads[i], KILN_DTYPE_F32);
            unscaled[i] =
                kiln_convert(g, kiln_mul(g, wide, kiln_convert(g, inv64, KILN_DTYPE_F32)), t);
        }
        trace_set_role(g, op, unscaled[i], TRACE_ROLE_GRADIENT);
    }
    kiln_value ok = kiln_compare(g, bad, trace_scalar(g, op, KILN_DTYPE_F32, 0), KILN_CMP_EQ);
    kiln_value ns = scale, ng = KN_NONE;
    if (o->good_steps.id) next_dynamic(g, op, o, scale, ok, &ns, &ng);
    if (g->status) return fail_all(g, n, outs, 1);
    if (finite) *finite = ok;
    if (new_scale) *new_scale = ns;
    if (new_good_steps) *new_good_steps = ng;
    return KILN_STATUS_OK;
}

kiln_status kiln_select_each(kiln_graph *g, kiln_value pred, int n, const kiln_value *on_true,
                             const kiln_value *on_false, kiln_value *out) {
    const char *op = "kiln_select_each";
    kiln_value *outs[1] = {out};
    if (!trace_ready(g, op)) return fail_all(g, n, outs, 1);
    if (n <= 0 || !on_true || !on_false || !out) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "needs n >= 1 and three arrays of n values (n = %d%s%s%s)", n,
                   on_true ? "" : ", on_true NULL", on_false ? "" : ", on_false NULL",
                   out ? "" : ", out NULL");
        return fail_all(g, n, outs, 1);
    }
    const ir_node *p = trace_node(g, op, pred, "pred");
    if (!p) return fail_all(g, n, outs, 1);
    if (p->dtype != KILN_DTYPE_BOOL || p->shape.rank != 0) {
        char have[IR_TYPE_STR_MAX];
        trace_fail_on(g, &pred.id, 1, KILN_STATUS_DTYPE, op,
                      "pred must be a rank-0 bool value, not %s",
                      ir_type_str(p->dtype, &p->shape, have, sizeof have));
        return fail_all(g, n, outs, 1);
    }
    for (int i = 0; i < n; i++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "on_true[%d]", i), snprintf(b, sizeof b, "on_false[%d]", i);
        const ir_node *x = trace_node(g, op, on_true[i], a);
        const ir_node *y = x ? trace_node(g, op, on_false[i], b) : NULL;
        if (!y) return fail_all(g, n, outs, 1);
        if (x->dtype != y->dtype || !ir_shape_eq(&x->shape, &y->shape)) {
            char tx[IR_TYPE_STR_MAX], ty[IR_TYPE_STR_MAX];
            uint32_t in[2] = {on_true[i].id, on_false[i].id};
            trace_fail_on(g, in, 2, x->dtype != y->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE,
                          op, "%s is %s but %s is %s: they must have the same dtype and shape", a,
                          ir_type_str(x->dtype, &x->shape, tx, sizeof tx), b,
                          ir_type_str(y->dtype, &y->shape, ty, sizeof ty));
            return fail_all(g, n, outs, 1);
        }
    }
    for (int i = 0; i < n && !g->status; i++) {
        trace_role r = trace_role_of(g, on_true[i].id);
        out[i] = kiln_select(g, pred, on_true[i], on_false[i]);
        if (r != TRACE_ROLE_NONE) trace_set_role(g, op, out[i], r);
    }
    return g->status ? fail_all(g, n, outs, 1) : KILN_STATUS_OK;
}
