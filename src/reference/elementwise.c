/* elementwise.c — the reference kernels of the elementwise ops (unary, binary, compare,
 * select, convert). Operands of a node have identical shapes (the tracer made implicit
 * broadcasts explicit), so each kernel is one flat loop over the elements.
 *
 * Floats go through double and libm and are rounded once when stored. Integers go
 * through uint64, so add/sub/mul/neg/abs/pow wrap as two's complement in the dtype's
 * width and no input reaches C undefined behaviour; division follows XLA (x/0 = -1,
 * INT_MIN/-1 = INT_MIN). */
#include "reference.h"

#include <math.h>

/* ------------------------------------------------------------------ unary ---- */

/* 1/(1+exp(-x)) without overflow: for x < 0 use exp(x)/(1+exp(x)). */
static double logistic(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* Scalar semantics of the plain elementwise ops, by op: the reference's part of the op
 * registry (src/ir/ir.h). f* take floats (as double), i* integers or bools (as int64) and
 * return the bits to store. An op that accepts a class of dtypes has its function for it;
 * tests/test_registry.c checks that for every op. */
static double f_neg(double x) {
    return -x;
}
static double f_abs(double x) {
    return fabs(x);
}
static double f_sign(double x) {
    return isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x;
} /* +-0 */
static double f_exp(double x) {
    return exp(x);
}
static double f_log(double x) {
    return log(x);
}
static double f_log1p(double x) {
    return log1p(x);
}
static double f_sqrt(double x) {
    return sqrt(x);
}
static double f_rsqrt(double x) {
    return 1.0 / sqrt(x);
}
static double f_tanh(double x) {
    return tanh(x);
}
static double f_sin(double x) {
    return sin(x);
}
static double f_cos(double x) {
    return cos(x);
}
static double f_erf(double x) {
    return erf(x);
}
static double f_floor(double x) {
    return floor(x);
}
static double f_ceil(double x) {
    return ceil(x);
}
static double f_round_even(double x) {
    return rint(x); /* the default rounding mode: halves to even */
}
static double f_round_afz(double x) {
    return round(x);
}
static double f_lgamma(double x) {
    int sign;
    return lgamma_r(x, &sign); /* lgamma would write the global signgam */
}

/* erf_inv in long double, independent of the kernels' (prelude math_f64.h): Winitzki's
 * closed form (within ~2e-3; its series near 0, where the form cancels) refined by Halley steps on
 * erf (below 0.5) or on erfc of the exact 1 - |x| (above: the tail's relative precision) until a
 * step changes nothing. */
static double f_erf_inv(double x) {
    double a = fabs(x);
    if (!(a < 1.0)) return a == 1.0 ? copysign(INFINITY, x) : NAN;
    if (a < 0x1p-40) return x * 0.88622692545275801365; /* sqrt(pi) / 2: erf's slope at 0 */
    const long double pi = 3.14159265358979323846264338327950288L, k = 0.147L;
    long double c = 1.0L - a, l = logl(c * (1.0L + a));
    long double b = 2.0L / (pi * k) + l / 2.0L;
    long double y = a < 1e-3 ? a * sqrtl(pi) / 2 * (1 + pi * a * a / 12) /* the series */
                             : sqrtl(sqrtl(b * b - l / k) - b);
    for (int i = 0; i < 8; i++) {
        long double d = 2.0L / sqrtl(pi) * expl(-y * y), step;
        if (a < 0.5) {
            long double f = erfl(y) - a;
            step = -f / (d + f * y);
        } else {
            long double f = erfcl(y) - c;
            step = f / (d - f * y);
        }
        y += step;
        if (fabsl(step) <= 1e-19L * y) break;
    }
    return (double)(x < 0 ? -y : y);
}

/* digamma in long double: reflection below 0 (pi / tan of the distance to the nearest
 * integer), the recurrence up to 20, then the asymptotic series to x^-14. NaN at 0 and
 * the negative integers, as XLA's. */
static double f_digamma(double xd) {
    if (isnan(xd) || xd == -INFINITY) return NAN;
    if (xd <= 0 && floor(xd) == xd) return NAN;
    const long double pi = 3.14159265358979323846264338327950288L;
    long double x = xd, r = 0;
    if (x < 0) {
        long double f = x - floorl(x + 0.5L);
        r = -pi / tanl(pi * f);
        x = 1 - x;
    }
    for (; x < 20; x += 1) r -= 1 / x;
    long double z = 1 / (x * x);
    long double s =
        z * (1.0L / 12 -
             z * (1.0L / 120 -
                  z * (1.0L / 252 -
                       z * (1.0L / 240 - z * (1.0L / 132 - z * (691.0L / 32760 - z / 12))))));
    return (double)(r + logl(x) - 0.5L / x - s);
}
static uint64_t i_neg(int64_t x) {
    return 0 - (uint64_t)x;
}
static uint64_t i_abs(int64_t x) {
    return x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
}
static uint64_t i_sign(int64_t x) {
    return (uint64_t)(int64_t)((x > 0) - (x < 0));
}
static uint64_t i_not(int64_t x) {
    return !x;
}
/* stop_gradient is the identity on values (autodiff passes it no cotangent) */
static double f_identity(double x) {
    return x;
}
static uint64_t i_identity(int64_t x) {
    return (uint64_t)x;
}

static double f_add(double a, double b) {
    return a + b;
}
static double f_sub(double a, double b) {
    return a - b;
}
static double f_mul(double a, double b) {
    return a * b;
}
static double f_div(double a, double b) {
    return a / b;
}
static double f_rem(double a, double b) {
    return fmod(a, b); /* exact: two f32 (or 16-bit) operands give the f32 fmodf's value */
}
static double f_pow(double a, double b) {
    return pow(a, b);
}
/* NaN propagates; -0 < +0 (jnp.maximum / jnp.minimum): of two equal operands max takes
 * the one without a sign bit, min the one with. */
static double f_max(double a, double b) {
    return isnan(a) || isnan(b) ? NAN : a > b ? a : a < b ? b : signbit(a) ? b : a;
}
static double f_min(double a, double b) {
    return isnan(a) || isnan(b) ? NAN : a < b ? a : a > b ? b : signbit(a) ? a : b;
}

/* Integer power by squaring, wrapping. A negative exponent gives 0, except for the bases
 * 1 (always 1) and -1 (+-1 by the exponent's parity). */
static uint64_t pow_i(int64_t base, int64_t e) {
    if (e < 0) {
        if (base == 1) return 1;
        if (base == -1) return ((uint64_t)e & 1) ? (uint64_t)-1 : 1;
        return 0;
    }
    uint64_t r = 1, x = (uint64_t)base, k = (uint64_t)e;
    for (; k; k >>= 1, x *= x)
        if (k & 1) r *= x;
    return r;
}

/* Integers go through uint64: the result's low bits are what the dtype keeps, so
 * INT32_MIN/-1 computed in 64 bits is 2^31, whose low 32 bits are INT32_MIN again. */
static uint64_t i_add(int64_t a, int64_t b) {
    return (uint64_t)a + (uint64_t)b;
}
static uint64_t i_sub(int64_t a, int64_t b) {
    return (uint64_t)a - (uint64_t)b;
}
static uint64_t i_mul(int64_t a, int64_t b) {
    return (uint64_t)a * (uint64_t)b;
}
static uint64_t i_div(int64_t a, int64_t b) {
    return b == 0 ? (uint64_t)-1 : b == -1 ? 0 - (uint64_t)a : (uint64_t)(a / b);
}
static uint64_t i_rem(int64_t a, int64_t b) {
    return b == 0 ? (uint64_t)a : b == -1 ? 0 : (uint64_t)(a % b);
}
static uint64_t i_max(int64_t a, int64_t b) {
    return (uint64_t)(a > b ? a : b);
}
static uint64_t i_min(int64_t a, int64_t b) {
    return (uint64_t)(a < b ? a : b);
}
/* Bitwise on integers; on bools (0 or 1) the same is logical. */
static uint64_t i_and(int64_t a, int64_t b) {
    return (uint64_t)a & (uint64_t)b;
}
static uint64_t i_or(int64_t a, int64_t b) {
    return (uint64_t)a | (uint64_t)b;
}
static uint64_t i_xor(int64_t a, int64_t b) {
    return (uint64_t)a ^ (uint64_t)b;
}

/* The ops that need the operand's width in bits (32 or 64): XLA's shifts (an amount
 * outside [0, width) gives 0, or the sign for the arithmetic shift) and the bit counts
 * of the two's complement pattern. */
static uint64_t low_bits(int64_t a, int bits) {
    return bits == 64 ? (uint64_t)a : (uint64_t)a & ((UINT64_C(1) << bits) - 1);
}
static uint64_t w_shl(int64_t a, int64_t b, int bits) {
    return b >= 0 && b < bits ? (uint64_t)a << b : 0;
}
static uint64_t w_shrl(int64_t a, int64_t b, int bits) {
    return b >= 0 && b < bits ? low_bits(a, bits) >> b : 0;
}
static uint64_t w_shra(int64_t a, int64_t b, int bits) {
    /* a is sign-extended to 64 bits; the low `bits` of the result are kept */
    return (uint64_t)(b >= 0 && b < bits ? a >> b : a < 0 ? -1 : 0);
}
static uint64_t w_popcnt(int64_t a, int bits) {
    uint64_t u = low_bits(a, bits), n = 0;
    for (; u; u &= u - 1) n++;
    return n;
}
static uint64_t w_clz(int64_t a, int bits) {
    uint64_t u = low_bits(a, bits), n = (uint64_t)bits;
    for (; u; u >>= 1) n--;
    return n;
}

typedef struct ref_scalar {
    double (*f1)(double);                  /* unary, float operand */
    uint64_t (*i1)(int64_t);               /* unary, integer or bool operand */
    double (*f2)(double, double);          /* binary, float operands */
    uint64_t (*i2)(int64_t, int64_t);      /* binary, integer or bool operands */
    uint64_t (*w1)(int64_t, int);          /* unary, integer operand of that many bits */
    uint64_t (*w2)(int64_t, int64_t, int); /* binary, integer operands of that many bits */
} ref_scalar;

static const ref_scalar scalar[IR_NUM_OPS] = {
    [IR_NEG] = {.f1 = f_neg, .i1 = i_neg},
    [IR_ABS] = {.f1 = f_abs, .i1 = i_abs},
    [IR_SIGN] = {.f1 = f_sign, .i1 = i_sign},
    [IR_EXP] = {.f1 = f_exp},
    [IR_LOG] = {.f1 = f_log},
    [IR_LOG1P] = {.f1 = f_log1p},
    [IR_SQRT] = {.f1 = f_sqrt},
    [IR_RSQRT] = {.f1 = f_rsqrt},
    [IR_TANH] = {.f1 = f_tanh},
    [IR_LOGISTIC] = {.f1 = logistic},
    [IR_SIN] = {.f1 = f_sin},
    [IR_COS] = {.f1 = f_cos},
    [IR_ERF] = {.f1 = f_erf},
    [IR_FLOOR] = {.f1 = f_floor},
    [IR_CEIL] = {.f1 = f_ceil},
    [IR_ROUND] = {.f1 = f_round_even},
    [IR_ROUND_AFZ] = {.f1 = f_round_afz},
    [IR_EXPM1] = {.f1 = expm1},
    [IR_TAN] = {.f1 = tan},
    [IR_SINH] = {.f1 = sinh},
    [IR_COSH] = {.f1 = cosh},
    [IR_ASIN] = {.f1 = asin},
    [IR_ACOS] = {.f1 = acos},
    [IR_ATAN] = {.f1 = atan},
    [IR_ASINH] = {.f1 = asinh},
    [IR_ACOSH] = {.f1 = acosh},
    [IR_ATANH] = {.f1 = atanh},
    [IR_ERFC] = {.f1 = erfc},
    [IR_CBRT] = {.f1 = cbrt},
    [IR_ERF_INV] = {.f1 = f_erf_inv},
    [IR_LGAMMA] = {.f1 = f_lgamma},
    [IR_DIGAMMA] = {.f1 = f_digamma},
    [IR_NOT] = {.i1 = i_not},
    [IR_STOP_GRADIENT] = {.f1 = f_identity, .i1 = i_identity},
    [IR_ADD] = {.f2 = f_add, .i2 = i_add},
    [IR_SUB] = {.f2 = f_sub, .i2 = i_sub},
    [IR_MUL] = {.f2 = f_mul, .i2 = i_mul},
    [IR_DIV] = {.f2 = f_div, .i2 = i_div},
    [IR_POW] = {.f2 = f_pow, .i2 = pow_i},
    [IR_REM] = {.f2 = f_rem, .i2 = i_rem},
    [IR_ATAN2] = {.f2 = atan2},
    [IR_MAX] = {.f2 = f_max, .i2 = i_max},
    [IR_MIN] = {.f2 = f_min, .i2 = i_min},
    [IR_AND] = {.i2 = i_and},
    [IR_OR] = {.i2 = i_or},
    [IR_XOR] = {.i2 = i_xor},
    [IR_SHL] = {.w2 = w_shl},
    [IR_SHR_LOGICAL] = {.w2 = w_shrl},
    [IR_SHR_ARITH] = {.w2 = w_shra},
    [IR_POPCNT] = {.w1 = w_popcnt},
    [IR_CLZ] = {.w1 = w_clz},
};

bool ref_scalar_supports(ir_op op, bool float_operand) {
    if ((unsigned)op >= IR_NUM_OPS) return false;
    const ref_scalar *f = &scalar[op];
    return float_operand ? (f->f1 || f->f2) : (f->i1 || f->i2 || f->w1 || f->w2);
}

/* NaN compares unequal to everything, so only NE is true for it: C's operators on
 * doubles already behave so. */
static bool compare_f(kiln_cmp d, double a, double b) {
    switch (d) {
    case KILN_CMP_EQ: return a == b;
    case KILN_CMP_NE: return a != b;
    case KILN_CMP_LT: return a < b;
    case KILN_CMP_LE: return a <= b;
    case KILN_CMP_GT: return a > b;
    case KILN_CMP_GE: return a >= b;
    }
    return false;
}

static bool compare_i(kiln_cmp d, int64_t a, int64_t b) {
    switch (d) {
    case KILN_CMP_EQ: return a == b;
    case KILN_CMP_NE: return a != b;
    case KILN_CMP_LT: return a < b;
    case KILN_CMP_LE: return a <= b;
    case KILN_CMP_GT: return a > b;
    case KILN_CMP_GE: return a >= b;
    }
    return false;
}

/* ---------------------------------------------------------------- convert ---- */

/* ----------------------------------------------------------------- kernels ---- */

static kiln_status no_scalar(const kiln_graph *g, const ir_node *n, kiln_dtype t) {
    return ctx_error(g->ctx, KILN_STATUS_INTERNAL,
                     "kiln_interpret: no reference semantics for %s on %s operands",
                     ir_ops[n->op].name, kiln_dtype_name(t));
}

kiln_status ref_unary(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    kiln_dtype t = ref_in_node(g, n, 0)->dtype;
    const void *x = ref_in_data(vals, n, 0);
    int64_t count = ref_numel(&n->shape);
    const ref_scalar *f = &scalar[n->op];
    bool fl = ir_dtype_is_float(t);
    int bits = (int)kiln_dtype_itemsize(t) * 8;
    if (fl ? !f->f1 : !f->i1 && !f->w1) return no_scalar(g, n, t);
    for (int64_t i = 0; i < count; i++) {
        if (fl)
            ref_fput(out, t, i, f->f1(ref_fget(x, t, i)));
        else if (f->w1)
            ref_iput(out, t, i, f->w1(ref_iget(x, t, i), bits));
        else
            ref_iput(out, t, i, f->i1(ref_iget(x, t, i)));
    }
    return KILN_STATUS_OK;
}

kiln_status ref_binary(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    kiln_dtype t = ref_in_node(g, n, 0)->dtype;
    const void *a = ref_in_data(vals, n, 0), *b = ref_in_data(vals, n, 1);
    int64_t count = ref_numel(&n->shape);
    const ref_scalar *f = &scalar[n->op];
    bool fl = ir_dtype_is_float(t);
    int bits = (int)kiln_dtype_itemsize(t) * 8;
    if (fl ? !f->f2 : !f->i2 && !f->w2) return no_scalar(g, n, t);
    for (int64_t i = 0; i < count; i++) {
        if (fl)
            ref_fput(out, t, i, f->f2(ref_fget(a, t, i), ref_fget(b, t, i)));
        else if (f->w2)
            ref_iput(out, t, i, f->w2(ref_iget(a, t, i), ref_iget(b, t, i), bits));
        else
            ref_iput(out, t, i, f->i2(ref_iget(a, t, i), ref_iget(b, t, i)));
    }
    return KILN_STATUS_OK;
}

kiln_status ref_compare(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    kiln_dtype t = ref_in_node(g, n, 0)->dtype;
    const void *a = ref_in_data(vals, n, 0), *b = ref_in_data(vals, n, 1);
    int64_t count = ref_numel(&n->shape);
    bool fl = ir_dtype_is_float(t);
    for (int64_t i = 0; i < count; i++)
        ((uint8_t *)out)[i] = fl ? compare_f(n->a.cmp, ref_fget(a, t, i), ref_fget(b, t, i))
                                 : compare_i(n->a.cmp, ref_iget(a, t, i), ref_iget(b, t, i));
    return KILN_STATUS_OK;
}

kiln_status ref_convert(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    kiln_dtype t = ref_in_node(g, n, 0)->dtype;
    const void *x = ref_in_data(vals, n, 0);
    int64_t count = ref_numel(&n->shape);
    for (int64_t i = 0; i < count; i++) ir_convert_one(t, x, n->dtype, out, i);
    return KILN_STATUS_OK;
}

/* The same bytes under another dtype of their width (ir_infer checked the pair). */
kiln_status ref_bitcast(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    size_t bytes = 0;
    ir_shape_nbytes(&n->shape, n->dtype, &bytes);
    if (bytes) memcpy(out, ref_in_data(vals, n, 0), bytes);
    return KILN_STATUS_OK;
}

kiln_status ref_select(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    const uint8_t *pred = ref_in_data(vals, n, 0);
    const void *on_true = ref_in_data(vals, n, 1), *on_false = ref_in_data(vals, n, 2);
    int64_t count = ref_numel(&n->shape);
    size_t es = kiln_dtype_itemsize(n->dtype);
    for (int64_t i = 0; i < count; i++) {
        const void *src = pred[i] ? on_true : on_false;
        memcpy((char *)out + (size_t)i * es, (const char *)src + (size_t)i * es, es);
    }
    return KILN_STATUS_OK;
}
