/* derivatives.c — the derivative of an elementwise math function, built as values of the
 * graph: dy/dx of the unary functions below and both partials of atan2. The VJP rule
 * multiplies the cotangent by it and the JVP rule the tangent (rules.c, jvp_rules.c), so
 * the two modes share one formula per function, as a JAX primitive's defjvp serves both.
 * The formulas are the ones JAX differentiates with (in y, the forward value, where JAX
 * reuses it), so gradients agree with jax.grad to rounding; trigamma, digamma's derivative,
 * is kiln's own (JAX's polygamma(1, x) is wrong for x < 0 in f32).
 *
 * No mutable state: rules touch only the graph they are given. */
#include "autodiff.h"
#include "trace/trace.h"

#include <math.h>

static kiln_value c(kiln_graph *g, const char *op, kiln_dtype t, double v) {
    return trace_scalar(g, op, t, v);
}

/* polygamma(1, x): sum_{k<10} 1/(x+k)^2 plus the asymptotic series at w = x + 10 to
 * w^-15 (its first dropped term is below 1e-16 of the value), for x >= 0; below 0 the
 * reflection pi^2 / sin^2(pi x) - trigamma(1 - x), the sine taken of x's distance to the
 * nearest integer so that large |x| keep their precision. +inf at 0 and the negative
 * integers. */
static kiln_value trigamma(kiln_graph *g, const char *op, kiln_dtype t, kiln_value x) {
    kiln_value neg = kiln_compare(g, x, c(g, op, t, 0), KILN_CMP_LT);
    kiln_value z = kiln_select(g, neg, kiln_sub(g, c(g, op, t, 1), x), x);
    kiln_value acc = c(g, op, t, 0);
    for (int k = 0; k < 10; k++) {
        kiln_value w = k ? kiln_add(g, z, c(g, op, t, k)) : z;
        acc = kiln_add(g, acc, kiln_div(g, c(g, op, t, 1), kiln_mul(g, w, w)));
    }
    kiln_value w = kiln_add(g, z, c(g, op, t, 10));
    kiln_value r = kiln_div(g, c(g, op, t, 1), w), u = kiln_mul(g, r, r);
    /* B2/w^3 + B4/w^5 + ... + B14/w^15 = r u (1/6 - u (1/30 - u (1/42 - ...))) */
    static const double coef[7] = {1.0 / 6,  1.0 / 30,     1.0 / 42, 1.0 / 30,
                                   5.0 / 66, 691.0 / 2730, 7.0 / 6};
    kiln_value p = c(g, op, t, coef[6]);
    for (int i = 5; i >= 0; i--) p = kiln_sub(g, c(g, op, t, coef[i]), kiln_mul(g, u, p));
    kiln_value tail = kiln_mul(g, r, kiln_add(g, c(g, op, t, 1), kiln_mul(g, r, c(g, op, t, 0.5))));
    tail = kiln_add(g, tail, kiln_mul(g, kiln_mul(g, r, u), p));
    kiln_value pos = kiln_add(g, acc, tail);
    kiln_value f = kiln_sub(g, x, kiln_round(g, x));
    kiln_value s = kiln_sin(g, kiln_mul(g, c(g, op, t, M_PI), f));
    /* 1 where the reflection is not taken: its 1/0 at x = 1, 2, ... would make the
     * derivative of this derivative NaN through the select (0 * inf) */
    s = kiln_select(g, neg, s, c(g, op, t, 1));
    kiln_value refl = kiln_div(g, c(g, op, t, M_PI * M_PI), kiln_mul(g, s, s));
    return kiln_select(g, neg, kiln_sub(g, refl, pos), pos);
}

kiln_value ad_math_derivative(kiln_graph *g, const char *op, uint32_t id, const ir_node *n) {
    kiln_dtype t = n->dtype;
    kiln_value x = trace_value(g, ir_in(n)[0]), y = trace_value(g, id);
    kiln_value one = c(g, op, t, 1), xx = kiln_mul(g, x, x);
    switch (n->op) {
    case IR_EXPM1: return kiln_add(g, y, one);
    case IR_TAN: return kiln_add(g, one, kiln_mul(g, y, y));
    case IR_SINH: return kiln_cosh(g, x);
    case IR_COSH: return kiln_sinh(g, x);
    case IR_ASIN: return kiln_rsqrt(g, kiln_sub(g, one, xx));
    case IR_ACOS: return kiln_neg(g, kiln_rsqrt(g, kiln_sub(g, one, xx)));
    case IR_ATAN: return kiln_div(g, one, kiln_add(g, one, xx));
    case IR_ASINH: return kiln_rsqrt(g, kiln_add(g, xx, one));
    case IR_ACOSH: return kiln_rsqrt(g, kiln_mul(g, kiln_sub(g, x, one), kiln_add(g, x, one)));
    case IR_ATANH: return kiln_div(g, one, kiln_mul(g, kiln_sub(g, one, x), kiln_add(g, one, x)));
    case IR_ERFC: /* -2/sqrt(pi) exp(-x^2) */
        return kiln_mul(g, c(g, op, t, -M_2_SQRTPI), kiln_exp(g, kiln_neg(g, xx)));
    case IR_ERF_INV: /* sqrt(pi)/2 exp(y^2) */
        return kiln_mul(g, c(g, op, t, 0.88622692545275801365), kiln_exp(g, kiln_mul(g, y, y)));
    case IR_LGAMMA: return kiln_digamma(g, x);
    case IR_DIGAMMA:
        if (t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64) return trigamma(g, op, t, x);
        /* bf16, f16: its ~60 ops in f32, rounded once */
        return kiln_convert(g, trigamma(g, op, KILN_DTYPE_F32, kiln_convert(g, x, KILN_DTYPE_F32)),
                            t);
    case IR_CBRT: /* 1 / (3 y^2) */ return kiln_div(g, c(g, op, t, 1.0 / 3), kiln_mul(g, y, y));
    default: return KN_NONE;
    }
}

void ad_atan2_partials(kiln_graph *g, const ir_node *n, const bool *need, kiln_value *d) {
    kiln_value a = trace_value(g, ir_in(n)[0]), b = trace_value(g, ir_in(n)[1]);
    kiln_value den = kiln_add(g, kiln_mul(g, a, a), kiln_mul(g, b, b));
    d[0] = need[0] ? kiln_div(g, b, den) : KN_NONE;
    d[1] = need[1] ? kiln_neg(g, kiln_div(g, a, den)) : KN_NONE;
}
