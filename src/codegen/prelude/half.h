// half.h — the 16-bit floats (bf16, f16) for both dialects: a buffer holds their bits as
// uint16_t, a kernel computes in f32. kiln_ld_<t> widens (exact), kiln_st_<t> narrows to
// nearest even (overflow to infinity, NaN kept quiet with its sign), kiln_rnd_<t> is the
// two: the f32 value an op on t gives after rounding (kd_stmt.round). The same results as
// src/base/half.h, which tests/test_half.c checks against these bit for bit; written so
// that gcc 12 vectorises a loop of them (-fopt-info-vec): integer arithmetic in 32-bit
// lanes, selects in sequence rather than ||, && or one nested chain (either left the f16
// loop scalar), kiln_rnd_<t> without the trip through 16 bits (the pack and unpack cost
// more than the rounding). The f16 subnormals round in f32 arithmetic: below 2^-14,
// x + 0.5f lands where the f32 quantum is the f16 subnormal's (2^-24), so the add itself
// rounds to nearest even, and the operands are normal numbers (a subnormal operand costs
// x86 a microcode assist); this needs IEEE f32 in the default rounding mode without
// flush-to-zero, which neither the kernels nor the runtime change. The hardware's
// conversions (vcvtneps2bf16, vcvtps2ph) are not used here: gcc 12 vectorises neither from
// scalar code, and vcvtneps2bf16 flushes f32 subnormals, which these must not.
// On the GPU (__CUDA_ARCH__: NVRTC, not the C dialect nor the emulator of
// tests/test_cuda_emulate.c) the conversions are the hardware's cvt, which rounds the same
// way (to nearest even, subnormals kept: no .ftz) but makes a canonical NaN: NaN takes the
// integer path's bits by a select, so the GPU's bits are the CPU's for every input.
KILN_FN float kiln_ld_bf16(uint16_t h) { return kiln_bits_f32((uint32_t)h << 16); }
KILN_FN uint16_t kiln_st_bf16(float f) {
    uint32_t u = kiln_f32_bits(f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
#else
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
#endif
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x0040u : r);
}
KILN_FN float kiln_rnd_bf16(float f) {
#ifdef __CUDA_ARCH__
    return kiln_ld_bf16(kiln_st_bf16(f));
#else
    uint32_t u = kiln_f32_bits(f);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return kiln_bits_f32((u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) & 0xffff0000u : r);
#endif
}
// kiln_rnd_bf16 of +, -, * or / on bf16 values (kd_stmt.round_arith). Such a NaN is an
// operand's, quieted, or the default NaN: its 16 low bits are zero, so the add below
// cannot carry out of them, and it keeps its bits, as kiln_rnd_bf16's NaN branch would
// give; finite values and infinities round as there. (One exception, and harmless: gcc
// folds x * -1 and x - 0 without the hardware's quieting, so a signalling NaN operand may
// come out still signalling, where kiln_rnd_bf16 sets its quiet bit; a NaN either way, and
// every store quiets it.) Without that branch a rounding takes about two thirds of the
// instructions. tests/test_half.c checks every bf16 NaN operand.
KILN_FN float kiln_rnd_bf16_arith(float f) {
#ifdef __CUDA_ARCH__
    return kiln_rnd_bf16(f);
#else
    uint32_t u = kiln_f32_bits(f);
    return kiln_bits_f32((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
#endif
}
KILN_FN float kiln_ld_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
#ifdef __CUDA_ARCH__
    uint32_t m = h & 0x3ffu;
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"((unsigned short)h));
    return (h & 0x7fffu) > 0x7c00u ? kiln_bits_f32(sign | 0x7f800000u | (m << 13)) : r;
#else
    uint32_t x = (uint32_t)(h & 0x7fffu) << 13; /* exponent and mantissa, f32-aligned */
    float sub = kiln_bits_f32(0x3f000000u | x >> 13) - 0.5f; /* m 2^-24, exact */
    uint32_t r = x + (x >= 0x0f800000u ? 0x70000000u : 0x38000000u); /* rebias */
    r = x < 0x00800000u ? kiln_f32_bits(sub) : r;
    return kiln_bits_f32(sign | r);
#endif
}
KILN_FN uint16_t kiln_st_f16(float f) {
    uint32_t u = kiln_f32_bits(f), sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
#ifdef __CUDA_ARCH__
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return u > 0x7f800000u ? (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu)) : h;
#else
    uint32_t r = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13; /* rebias, ties to even */
    r = u < 0x38800000u ? kiln_f32_bits(kiln_bits_f32(u) + 0.5f) - 0x3f000000u : r;
    r = u >= 0x477ff000u ? 0x7c00u : r; /* rounds to 65536 or more */
    r = u > 0x7f800000u ? 0x7e00u | ((u >> 13) & 0x3ffu) : r;
    return (uint16_t)(sign | r);
#endif
}
KILN_FN float kiln_rnd_f16(float f) {
#ifdef __CUDA_ARCH__
    return kiln_ld_f16(kiln_st_f16(f));
#else
    uint32_t u = kiln_f32_bits(f), sign = u & 0x80000000u;
    u &= 0x7fffffffu;
    uint32_t r = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    r = u < 0x38800000u ? kiln_f32_bits((kiln_bits_f32(u) + 0.5f) - 0.5f) : r;
    r = u >= 0x477ff000u ? 0x7f800000u : r;
    r = u > 0x7f800000u ? (u | 0x00400000u) & 0xffffe000u : r;
    return kiln_bits_f32(sign | r);
#endif
}
// kiln_rnd_f16 of +, -, * or / on f16 values (kd_stmt.round_arith), in float arithmetic:
// adding and then subtracting c, a power of two 2^13 times the value's (and at least 2^-1),
// rounds the value to nearest even at f16's quantum for its binade (below 2^-14 the
// subnormals' 2^-24) in the one f32 addition; from 65520 up it overflows to infinity; a
// zero gets its sign back. Such a NaN has its 13 low bits zero (an operand's or the default
// NaN), which the additions keep (and quiet), as kiln_rnd_f16's NaN branch would give.
// tests/test_half.c checks every f16 pattern against it.
KILN_FN float kiln_rnd_f16_arith(float f) {
#ifdef __CUDA_ARCH__
    return kiln_rnd_f16(f);
#else
    uint32_t u = kiln_f32_bits(f), sign = u & 0x80000000u, a = u & 0x7fffffffu;
    uint32_t cb = (u & 0x7f800000u) + 0x06800000u;
    cb = cb < 0x3f000000u ? 0x3f000000u : cb;
    float c = kiln_bits_f32(cb | sign);
    uint32_t r = kiln_f32_bits((f + c) - c) | sign;
    return kiln_bits_f32(a - 0x477ff000u < 0x7f800000u - 0x477ff000u ? sign | 0x7f800000u : r);
#endif
}
// kiln_st32_<t>: out[0..31] = kiln_st_<t>(t[0..31]), the C dialect's staged store of 32
// values (kdesc.h, KD_STAGE; print_c.c, print_staged_loop), where the target has the
// conversion in hardware (c_head.h, KILN_STAGED_<t>). vcvtps2ph rounds to f16 exactly as
// kiln_st_f16 (to nearest even, subnormals kept: the kernels run without flush-to-zero; a
// NaN quieted, its sign and high payload kept). vcvtne2ps2bf16 rounds to bf16 as
// kiln_st_bf16 but for f32 subnormals, which it flushes to zero: a block holding one (a
// vfpclassps test) takes the integer path. Both checked against kiln_st_<t> over every
// f32 pattern (tests/test_half_ops.c, the staged stores). The 32 values are read from a
// local array the loop fills, which gcc 12 keeps in registers (its stores forwarded).
#ifdef KILN_STAGED_BF16 /* the C dialect (c_head.h defines both, 0 or 1): not CUDA's */
typedef float kiln_v8f __attribute__((vector_size(32)));
typedef float kiln_v16f __attribute__((vector_size(64)));
typedef short kiln_v8s __attribute__((vector_size(16)));
typedef short kiln_v16s __attribute__((vector_size(32)));
typedef short kiln_v32s __attribute__((vector_size(64)));
KILN_FN void kiln_st32_bf16(uint16_t *out, const float *t) {
#if KILN_STAGED_BF16
    kiln_v16f lo, hi;
    memcpy(&lo, t, 64);
    memcpy(&hi, t + 16, 64);
    if (!(__builtin_ia32_fpclassps512_mask(lo, 0x20, 0xffff) |
          __builtin_ia32_fpclassps512_mask(hi, 0x20, 0xffff))) { /* 0x20: subnormal */
#if defined(__clang__)
        kiln_v32s r = (kiln_v32s)__builtin_ia32_cvtne2ps2bf16_512(hi, lo);
#elif __GNUC__ >= 13 /* the intrinsics' bf16 became __bf16 there, and the builtin's name */
        kiln_v32s r = (kiln_v32s)__builtin_ia32_cvtne2ps2bf16_v32bf(hi, lo);
#else
        kiln_v32s r = (kiln_v32s)__builtin_ia32_cvtne2ps2bf16_v32hi(hi, lo);
#endif
        memcpy(out, &r, 64);
        return;
    }
#endif
    for (int k = 0; k < 32; k++) out[k] = kiln_st_bf16(t[k]);
}
KILN_FN void kiln_st32_f16(uint16_t *out, const float *t) {
#if KILN_STAGED_F16 && defined(__AVX512F__)
    for (int h = 0; h < 32; h += 16) { /* imm 0: to nearest even */
        kiln_v16f a;
        memcpy(&a, t + h, 64);
        kiln_v16s r = (kiln_v16s)__builtin_ia32_vcvtps2ph512_mask(a, 0, (kiln_v16s){0}, 0xffff);
        memcpy(out + h, &r, 32);
    }
#elif KILN_STAGED_F16
    for (int h = 0; h < 32; h += 8) {
        kiln_v8f a;
        memcpy(&a, t + h, 32);
        kiln_v8s r = (kiln_v8s)__builtin_ia32_vcvtps2ph256(a, 0);
        memcpy(out + h, &r, 16);
    }
#else
    for (int k = 0; k < 32; k++) out[k] = kiln_st_f16(t[k]);
#endif
}
#endif
