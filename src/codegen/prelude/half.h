// half.h — the 16-bit floats (bf16, f16) for both dialects: a buffer holds their bits as
// uint16_t, a kernel computes in f32. kiln_ld_<t> widens (exact), kiln_st_<t> narrows to
// nearest even (overflow to infinity, NaN kept quiet with its sign), kiln_rnd_<t> is the
// two: the f32 value an op on t gives after rounding (kd_stmt.round). Integer arithmetic
// only, with selects rather than branches so that loops over them vectorise; the same
// arithmetic as src/base/half.h, which tests/test_half.c checks against these bit for bit.
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
KILN_FN float kiln_rnd_bf16(float f) { return kiln_ld_bf16(kiln_st_bf16(f)); }
KILN_FN float kiln_ld_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, m = h & 0x3ffu;
#ifdef __CUDA_ARCH__
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"((unsigned short)h));
    return (h & 0x7fffu) > 0x7c00u ? kiln_bits_f32(sign | 0x7f800000u | (m << 13)) : r;
#else
    uint32_t e = (h >> 10) & 0x1fu;
    float sub = (float)(int32_t)m * 5.9604644775390625e-8f;
    uint32_t norm = sign | (e == 0x1fu ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13));
    return e == 0 ? (sign ? -sub : sub) : kiln_bits_f32(norm);
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
    uint32_t e = u >> 23, m = (u & 0x7fffffu) | 0x800000u;
    uint32_t shift = e < 102u ? 24u : 126u - e; /* the subnormal case's, in 1..24 */
    shift = shift > 24u ? 24u : shift < 1u ? 1u : shift;
    uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    uint32_t sub = e < 102u ? 0u : q + (rest > half || (rest == half && (q & 1u)));
    uint32_t norm = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
    uint32_t r = u > 0x7f800000u   ? 0x7e00u | ((u >> 13) & 0x3ffu)
                 : u >= 0x477ff000u ? 0x7c00u
                 : u < 0x38800000u  ? sub
                                    : norm;
    return (uint16_t)(sign | r);
#endif
}
KILN_FN float kiln_rnd_f16(float f) { return kiln_ld_f16(kiln_st_f16(f)); }
