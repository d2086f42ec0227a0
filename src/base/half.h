/* half.h — the 16-bit float formats kiln stores (bf16 and IEEE f16), as bit patterns in a
 * uint16_t, and their exact conversions: widening is exact; narrowing rounds to nearest,
 * ties to even, overflow goes to infinity, NaN stays NaN (quiet, sign kept), as ml_dtypes,
 * NumPy and XLA convert. From f64 there are two rules, and kiln keeps both:
 *  - kn_f64_to_bf16 / kn_f64_to_f16, the convert op's: through f32 (two roundings), as
 *    XLA's compiled convert does (jax.jit(lambda a: a.astype(jnp.bfloat16)) on the CPU,
 *    JAX 0.10.2: 1 + 2^-8 + 2^-30 gives 1, and to f16 1 + 2^-11 + 2^-40 gives 1), and as
 *    the kernels do, which compute a 16-bit value in f32;
 *  - kn_f64_to_bf16_once / kn_f64_to_f16_once, a constant's (kiln_scalar, kiln_full): one
 *    rounding, as ml_dtypes' and NumPy's host conversion and so jnp.asarray(v, dtype) round
 *    (1.0078125 and 1.0009765625 for those two).
 *
 * Branch-light integer arithmetic only, so they need no compiler support for _Float16 or
 * __bf16 and are the same on every host; the generated kernels carry their own copies
 * (src/codegen/prelude/half.h), which tests/test_half.c checks bit for bit against these
 * over every 16-bit pattern and millions of f32 ones. */
#ifndef KILN_BASE_HALF_H
#define KILN_BASE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t kn_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float kn_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float kn_bf16_to_f32(uint16_t h) {
    return kn_bits_f32((uint32_t)h << 16);
}

static inline uint16_t kn_f32_to_bf16(float f) {
    uint32_t u = kn_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* ties to even; the carry may reach the exponent */
    return (uint16_t)(u >> 16);
}

static inline float kn_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return kn_bits_f32(sign | 0x7f800000u | (m << 13)); /* inf, NaN */
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact in f32 */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return kn_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

static inline uint16_t kn_f32_to_f16(float f) {
    uint32_t u = kn_f32_bits(f), sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu)); /* NaN */
    if (u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to 65536 or more: inf */
    if (u < 0x38800000u) { /* below 2^-14: a subnormal f16 (or zero) */
        uint32_t e = u >> 23, m = (u & 0x7fffffu) | 0x800000u;
        if (e < 102) return (uint16_t)sign; /* below half the least subnormal (2^-25) */
        uint32_t shift = 126 - e, q = m >> shift, rest = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        q += rest > half || (rest == half && (q & 1u));
        return (uint16_t)(sign | q);
    }
    u += 0xc8000fffu + ((u >> 13) & 1u); /* rebias (-112 << 23) and round, ties to even */
    return (uint16_t)(sign | (u >> 13));
}

/* f64 to the 16-bit format of `man` mantissa bits and exponent bias `bias` (f16: 10, 15;
 * bf16: 7, 127) in one rounding; a NaN gives the format's quiet NaN with d's sign. */
static inline uint16_t kn_f64_narrow_once(double d, int man, int bias) {
    uint64_t u;
    memcpy(&u, &d, 8);
    uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    uint32_t inf = (uint32_t)(2 * bias + 1) << man;
    u &= 0x7fffffffffffffffull;
    if (u > 0x7ff0000000000000ull) return (uint16_t)(sign | inf | 1u << (man - 1)); /* NaN */
    int e = (int)(u >> 52) - 1023;                                                  /* unbiased */
    if (e > bias) return (uint16_t)(sign | inf);
    if (e < -bias - man) return sign; /* below half the least subnormal */
    uint64_t m = (u & 0xfffffffffffffull) | (1ull << 52);
    /* the quantum at this exponent: 2^(e - man) for normals, 2^(1 - bias - man) for
     * subnormals */
    int sub = e < 1 - bias;
    int q_exp = sub ? 1 - bias - man : e - man;
    int shift = 52 - (e - q_exp); /* bits of m below the quantum */
    uint64_t q = m >> shift, rest = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    q += rest > half || (rest == half && (q & 1));
    /* q counts quanta; for a normal it carries the implicit bit at 2^man */
    uint32_t bits = sub ? (uint32_t)q : ((uint32_t)(e + bias - 1) << man) + (uint32_t)q;
    if (bits >= inf) bits = inf;
    return (uint16_t)(sign | bits);
}

/* A constant's f64 narrowings: one rounding, as ml_dtypes and jnp.asarray (above). */
static inline uint16_t kn_f64_to_f16_once(double d) {
    return kn_f64_narrow_once(d, 10, 15);
}
static inline uint16_t kn_f64_to_bf16_once(double d) {
    return kn_f64_narrow_once(d, 7, 127);
}

/* The convert op's f64 narrowings: through f32, as XLA's compiled convert (above). */
static inline uint16_t kn_f64_to_bf16(double d) {
    return kn_f32_to_bf16((float)d);
}
static inline uint16_t kn_f64_to_f16(double d) {
    return kn_f32_to_f16((float)d);
}

#endif
