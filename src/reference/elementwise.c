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

static double unary_f(ir_op op, double x) {
    switch (op) {
    case IR_NEG: return -x;
    case IR_ABS: return fabs(x);
    case IR_SIGN: return isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x; /* keeps +-0 */
    case IR_EXP: return exp(x);
    case IR_LOG: return log(x);
    case IR_LOG1P: return log1p(x);
    case IR_SQRT: return sqrt(x);
    case IR_RSQRT: return 1.0 / sqrt(x);
    case IR_TANH: return tanh(x);
    case IR_LOGISTIC: return logistic(x);
    case IR_FLOOR: return floor(x);
    default: return NAN;
    }
}

static uint64_t unary_i(ir_op op, int64_t x) {
    uint64_t u = (uint64_t)x;
    switch (op) {
    case IR_NEG: return 0 - u;
    case IR_ABS: return x < 0 ? 0 - u : u;
    case IR_SIGN: return (uint64_t)(int64_t)((x > 0) - (x < 0));
    case IR_NOT: return !x;
    default: return 0;
    }
}

/* ----------------------------------------------------------------- binary ---- */

static double binary_f(ir_op op, double a, double b) {
    switch (op) {
    case IR_ADD: return a + b;
    case IR_SUB: return a - b;
    case IR_MUL: return a * b;
    case IR_DIV: return a / b;
    case IR_POW: return pow(a, b);
    case IR_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case IR_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    default: return NAN;
    }
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

/* The result's low bits are what the dtype keeps: INT32_MIN/-1 computed in 64 bits is
 * 2^31, whose low 32 bits are INT32_MIN again. */
static uint64_t binary_i(ir_op op, int64_t a, int64_t b) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case IR_ADD: return ua + ub;
    case IR_SUB: return ua - ub;
    case IR_MUL: return ua * ub;
    case IR_DIV: return b == 0 ? (uint64_t)-1 : b == -1 ? 0 - ua : (uint64_t)(a / b);
    case IR_POW: return pow_i(a, b);
    case IR_MAX: return a > b ? ua : ub;
    case IR_MIN: return a < b ? ua : ub;
    case IR_AND: return a && b;
    case IR_OR: return a || b;
    default: return 0;
    }
}

/* NaN compares unequal to everything, so only NE is true for it: C's operators on
 * doubles already behave so. */
static bool compare_f(kiln_compare_dir d, double a, double b) {
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

static bool compare_i(kiln_compare_dir d, int64_t a, int64_t b) {
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

/* Truncates toward zero and saturates at the dtype's range; NaN gives 0. The limits are
 * powers of two, so they are exact doubles. */
static uint64_t float_to_int(double d, kiln_dtype to) {
    if (isnan(d)) return 0;
    bool i32 = to == KILN_I32;
    double lim = i32 ? 2147483648.0 : 9223372036854775808.0;
    d = trunc(d);
    if (d >= lim) return i32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX;
    if (d <= -lim) return i32 ? (uint64_t)(int64_t)INT32_MIN : (uint64_t)INT64_MIN;
    return (uint64_t)(int64_t)d;
}

static void convert_one(kiln_dtype from, const void *in, kiln_dtype to, void *out, int64_t i) {
    bool ffrom = ir_dtype_is_float(from);
    if (ir_dtype_is_float(to)) {
        if (ffrom) ref_fput(out, to, i, ref_fget(in, from, i));
        /* int -> float rounds once, directly (i64 -> f32 through double would round twice) */
        else if (to == KILN_F32)
            ((float *)out)[i] = (float)ref_iget(in, from, i);
        else
            ((double *)out)[i] = (double)ref_iget(in, from, i);
    } else if (to == KILN_BOOL) {
        ((uint8_t *)out)[i] = ffrom ? ref_fget(in, from, i) != 0 : ref_iget(in, from, i) != 0;
    } else {
        ref_iput(out, to, i,
                 ffrom ? float_to_int(ref_fget(in, from, i), to) : (uint64_t)ref_iget(in, from, i));
    }
}

/* ----------------------------------------------------------------- kernels ---- */

static void run_unary(const ir_node *n, kiln_dtype t, const void *x, void *out, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        if (n->op == IR_CONVERT)
            convert_one(t, x, n->dtype, out, i);
        else if (ir_dtype_is_float(t))
            ref_fput(out, t, i, unary_f(n->op, ref_fget(x, t, i)));
        else
            ref_iput(out, t, i, unary_i(n->op, ref_iget(x, t, i)));
    }
}

static void run_binary(const ir_node *n, kiln_dtype t, const void *a, const void *b, void *out,
                       int64_t count) {
    bool fl = ir_dtype_is_float(t);
    for (int64_t i = 0; i < count; i++) {
        if (n->op == IR_COMPARE)
            ((uint8_t *)out)[i] = fl ? compare_f(n->a.cmp, ref_fget(a, t, i), ref_fget(b, t, i))
                                     : compare_i(n->a.cmp, ref_iget(a, t, i), ref_iget(b, t, i));
        else if (fl)
            ref_fput(out, t, i, binary_f(n->op, ref_fget(a, t, i), ref_fget(b, t, i)));
        else
            ref_iput(out, t, i, binary_i(n->op, ref_iget(a, t, i), ref_iget(b, t, i)));
    }
}

static void run_select(const ir_node *n, const void *pred, const void *on_true,
                       const void *on_false, void *out, int64_t count) {
    size_t es = kiln_dtype_size(n->dtype);
    for (int64_t i = 0; i < count; i++) {
        const void *src = ((const uint8_t *)pred)[i] ? on_true : on_false;
        memcpy((char *)out + (size_t)i * es, (const char *)src + (size_t)i * es, es);
    }
}

kiln_status ref_elementwise(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    int64_t count = ref_numel(&n->shape);
    kiln_dtype t = ref_in_node(g, n, n->op == IR_SELECT ? 1 : 0)->dtype;
    switch (ir_ops[n->op].kind) {
    case IRK_UNARY: run_unary(n, t, ref_in_data(vals, n, 0), out, count); break;
    case IRK_BINARY:
        run_binary(n, t, ref_in_data(vals, n, 0), ref_in_data(vals, n, 1), out, count);
        break;
    case IRK_SELECT:
        run_select(n, ref_in_data(vals, n, 0), ref_in_data(vals, n, 1), ref_in_data(vals, n, 2),
                   out, count);
        break;
    default:
        return ctx_error(g->ctx, KILN_ERR_INTERNAL, "kiln_interpret: %s is not elementwise",
                         ir_ops[n->op].name);
    }
    return KILN_OK;
}
