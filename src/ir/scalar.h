/* scalar.h — one element of a host buffer of any dtype, read as a double (floats) or an
 * int64 (integers and bool), and written back rounded or wrapped to the dtype: the element
 * access the reference interpreter computes through (src/reference, as ref_fget etc.) and
 * the conversions between dtypes (convert.c: kiln_convert's rules, kiln_convert_host) are
 * built on, so both convert the same way. No context, no failure: callers check dtypes. */
#ifndef KILN_IR_SCALAR_H
#define KILN_IR_SCALAR_H

#include "base/half.h"
#include "ir.h"

#include <string.h>

static inline double ir_fget(const void *p, kiln_dtype t, int64_t i) {
    switch (t) {
    case KILN_DTYPE_F32: return (double)((const float *)p)[i];
    case KILN_DTYPE_BF16: return (double)kn_bf16_to_f32(((const uint16_t *)p)[i]);
    case KILN_DTYPE_F16: return (double)kn_f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const double *)p)[i];
    }
}

/* Rounds to the dtype, to nearest even: f64 -> f32 in one rounding, f64 -> bf16 and f16
 * through f32, as the convert op (src/base/half.h says why). An op on bf16 or f16 is thus computed
 * in f64 and rounded once to f32 and once more to 16 bits, where the kernels compute in f32 (one
 * rounding per arithmetic step): the two agree but for rare double roundings, within the tolerance
 * tests/test_registry.c documents per op. */
static inline void ir_fput(void *p, kiln_dtype t, int64_t i, double v) {
    switch (t) {
    case KILN_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case KILN_DTYPE_BF16: ((uint16_t *)p)[i] = kn_f64_to_bf16(v); break;
    case KILN_DTYPE_F16: ((uint16_t *)p)[i] = kn_f64_to_f16(v); break;
    default: ((double *)p)[i] = v; break;
    }
}

/* Integers and bools as int64 (bool is 0 or 1). */
static inline int64_t ir_iget(const void *p, kiln_dtype t, int64_t i) {
    switch (t) {
    case KILN_DTYPE_I32: return ((const int32_t *)p)[i];
    case KILN_DTYPE_I64: return ((const int64_t *)p)[i];
    case KILN_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

/* Stores the low bits of v (two's complement wrap, with no signed overflow anywhere);
 * bool stores v != 0. */
static inline void ir_iput(void *p, kiln_dtype t, int64_t i, uint64_t v) {
    if (t == KILN_DTYPE_I32) {
        uint32_t u = (uint32_t)v;
        memcpy((char *)p + (size_t)i * 4, &u, 4);
    } else if (t == KILN_DTYPE_I64) {
        memcpy((char *)p + (size_t)i * 8, &v, 8);
    } else if (t == KILN_DTYPE_BOOL) {
        ((uint8_t *)p)[i] = v != 0;
    }
}

/* Element i of `in` (dtype from) converted to dtype `to` into element i of `out`, by
 * kiln_convert's rules (convert.c). */
void ir_convert_one(kiln_dtype from, const void *in, kiln_dtype to, void *out, int64_t i);

#endif
