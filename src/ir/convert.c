/* convert.c — conversion between dtypes, element by element, by kiln_convert's rules: one
 * definition that the reference interpreter's convert (src/reference/elementwise.c) and the
 * public host helper kiln_convert_host both run, so a C program that converts its floats to
 * bf16 on the host gets the bits a traced kiln_convert would give.
 *
 * The rules (docs/ops.md, convert): float to float rounds to nearest even (f64 -> bf16
 * through f32, as XLA; ml_dtypes rounds once); to its own dtype, the bits; integer to float rounds
 * once (to bf16 through f32, to f16 through f64); float to integer truncates toward zero and
 * saturates, NaN giving 0; integer to integer wraps; anything to bool is "not zero". */
#include "ir.h"
#include "scalar.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Truncates toward zero and saturates at the dtype's range; NaN gives 0. The limits are
 * powers of two, so they are exact doubles. */
static uint64_t float_to_int(double d, kiln_dtype to) {
    if (isnan(d)) return 0;
    bool i32 = to == KILN_DTYPE_I32;
    double lim = i32 ? 2147483648.0 : 9223372036854775808.0;
    d = trunc(d);
    if (d >= lim) return i32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX;
    if (d <= -lim) return i32 ? (uint64_t)(int64_t)INT32_MIN : (uint64_t)INT64_MIN;
    return (uint64_t)(int64_t)d;
}

void ir_convert_one(kiln_dtype from, const void *in, kiln_dtype to, void *out, int64_t i) {
    bool ffrom = ir_dtype_is_float(from);
    if (ir_dtype_is_float(to)) {
        if (ffrom) ir_fput(out, to, i, ir_fget(in, from, i));
        /* int -> float rounds once, directly (i64 -> f32 through double would round
         * twice); to bf16 through f32 and to f16 through f64, as XLA converts (an integer
         * that f64 rounds is far beyond f16's range) */
        else if (to == KILN_DTYPE_F32 || to == KILN_DTYPE_BF16)
            ir_fput(out, to, i, (double)(float)ir_iget(in, from, i));
        else
            ir_fput(out, to, i, (double)ir_iget(in, from, i));
    } else if (to == KILN_DTYPE_BOOL) {
        ((uint8_t *)out)[i] = ffrom ? ir_fget(in, from, i) != 0 : ir_iget(in, from, i) != 0;
    } else {
        ir_iput(out, to, i,
                ffrom ? float_to_int(ir_fget(in, from, i), to) : (uint64_t)ir_iget(in, from, i));
    }
}

static bool known_dtype(kiln_dtype t) {
    return kiln_dtype_itemsize(t) != 0;
}

kiln_status kiln_convert_host(kiln_context *ctx, kiln_dtype from, const void *src, kiln_dtype to,
                              void *dst, int64_t n) {
    const char *op = "kiln_convert_host";
    kiln_status bad = KILN_STATUS_INVALID_ARGUMENT;
    if (!known_dtype(from) || !known_dtype(to))
        return ctx ? ctx_error(ctx, bad, "%s: dtype %d -> %d: %s is not a kiln_dtype", op,
                               (int)from, (int)to, known_dtype(from) ? "the target" : "the source")
                   : bad;
    if (n < 0 || (uint64_t)n > SIZE_MAX / 8 || (n > 0 && (!src || !dst)))
        return ctx ? ctx_error(ctx, bad, "%s: %s -> %s of %lld elements with src %p and dst %p", op,
                               kiln_dtype_name(from), kiln_dtype_name(to), (long long)n, src, dst)
                   : bad;
    size_t a = kiln_dtype_itemsize(from) * (size_t)n, b = kiln_dtype_itemsize(to) * (size_t)n;
    const char *s = src, *d = dst;
    if (n > 0 && s < d + b && d < s + a)
        return ctx ? ctx_error(ctx, bad, "%s: %s -> %s of %lld elements: src and dst overlap", op,
                               kiln_dtype_name(from), kiln_dtype_name(to), (long long)n)
                   : bad;
    if (from == to) /* kiln_convert to the operand's own dtype is the operand: its bits */
        memcpy(dst, src, a);
    else
        for (int64_t i = 0; i < n; i++) ir_convert_one(from, src, to, dst, i);
    return KILN_STATUS_OK;
}
