// random.h — the kernel helpers of the RANDOM op (src/ir/ir.h), for both dialects. The
// reference interpreter has the same functions in plain C (src/reference/random.c);
// tests/test_random.c holds the two to the same bits, and both to bits computed with
// jax.random. Every integer step is on uint32_t or uint64_t (wrapping, defined in C and CUDA
// alike), and a value reaches int32_t only through a conversion from uint32_t.
// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011; JAX's threefry2x32): a 64-bit counter block enciphered under the key, five
// groups of four add-rotate-xor rounds with the key schedule injected between groups; element
// c of a draw is a pure function of the key and c. From the two output words, as jax.random
// does with jax_threefry_partitionable: bits are x0 ^ x1; an f32 in [0, 1) is
// (bits >> 9) * 2^-23; an f64 uses x0:x1 >> 12 times 2^-52. Normal f32 is XLA's:
// sqrt(2) erfinv(u) with u uniform on [nextafter(-1, 0), 1), erfinv by Giles'
// single-precision polynomials (math_f32.h); normal f64 is Phi^-1((1 + u) / 2) by Acklam's rational
// approximation and one Halley step. The 16-bit draws (value in f32, a kernel's compute
// dtype, already one of the dtype's values) are jax.random's for those dtypes: uniform
// takes nmant random bits of x0 ^ x1 (JAX draws 8 bits for bf16, whose 7 mantissa bits are
// fewer than 8, and 16 for f16) into the mantissa of 1.0 and subtracts 1; normal is the
// f32 one's formula with each op rounded to the dtype as XLA does (u * 2 + lo, erfinv
// computed in f32, its product with sqrt(2) as the dtype holds it: 1.4140625). Needs half.h.
KILN_FN uint32_t kiln_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
#define KILN_TF(r) x0 += x1; x1 = kiln_rotl32(x1, r) ^ x0;
#define KILN_TF_A KILN_TF(13) KILN_TF(15) KILN_TF(26) KILN_TF(6)
#define KILN_TF_B KILN_TF(17) KILN_TF(29) KILN_TF(16) KILN_TF(24)
KILN_FN uint64_t kiln_threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1) {
    uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu, x0 = c0 + k0, x1 = c1 + k1;
    KILN_TF_A x0 += k1; x1 += k2 + 1u;
    KILN_TF_B x0 += k2; x1 += k0 + 2u;
    KILN_TF_A x0 += k0; x1 += k1 + 3u;
    KILN_TF_B x0 += k1; x1 += k2 + 4u;
    KILN_TF_A x0 += k2; x1 += k0 + 5u;
    return (uint64_t)x0 << 32 | x1;
}
KILN_FN uint64_t kiln_random_words(int32_t k0, int32_t k1, int32_t c) {
    return kiln_threefry2x32((uint32_t)k0, (uint32_t)k1, 0u, (uint32_t)c);
}
KILN_FN int32_t kiln_random_bits_i32(int32_t k0, int32_t k1, int32_t c) {
    uint64_t w = kiln_random_words(k0, k1, c);
    return (int32_t)(uint32_t)((w >> 32) ^ w);
}
KILN_FN int32_t kiln_random_word0_i32(int32_t k0, int32_t k1, int32_t c) {
    return (int32_t)(uint32_t)(kiln_random_words(k0, k1, c) >> 32);
}
KILN_FN int32_t kiln_random_word1_i32(int32_t k0, int32_t k1, int32_t c) {
    return (int32_t)(uint32_t)kiln_random_words(k0, k1, c);
}
KILN_FN float kiln_random_uniform_f32(int32_t k0, int32_t k1, int32_t c) {
    uint32_t b = (uint32_t)kiln_random_bits_i32(k0, k1, c);
    return (float)(int32_t)(b >> 9) * 1.1920928955078125e-7f;
}
KILN_FN double kiln_random_uniform_f64(int32_t k0, int32_t k1, int32_t c) {
    return kiln_bits_f64(0x3FF0000000000000ull | kiln_random_words(k0, k1, c) >> 12) - 1.0;
}
KILN_FN float kiln_random_normal_f32(int32_t k0, int32_t k1, int32_t c) {
    const float lo = -0.999999940395355224609375f; /* nextafter(-1, 0) */
    float u = kiln_random_uniform_f32(k0, k1, c) * 2.0f + lo;
    u = u < lo ? lo : u;
    return 1.41421356237309505f * kiln_erfinv_f32(u);
}
KILN_FN double kiln_acklam_central_f64(double r) {
    double s = r * r;
    return (((((-3.969683028665376e+01 * s + 2.209460984245205e+02) * s - 2.759285104469687e+02) * s + 1.383577518672690e+02) * s - 3.066479806614716e+01) * s + 2.506628277459239e+00) * r /
           (((((-5.447609879822406e+01 * s + 1.615858368580409e+02) * s - 1.556989798598866e+02) * s + 6.680131188771972e+01) * s - 1.328068155288572e+01) * s + 1.0);
}
KILN_FN double kiln_ndtri_halley_f64(double x, double e) {
    double h = e * 2.50662827463100050242 * exp(0.5 * x * x);
    return x - h / (1.0 + 0.5 * x * h);
}
KILN_FN double kiln_ndtri_tail_f64(double t) {
    double x;
    if (t < 0.02425) {
        double r = sqrt(-2.0 * log(t));
        x = (((((-7.784894002430293e-03 * r - 3.223964580411365e-01) * r - 2.400758277161838e+00) * r - 2.549732539343734e+00) * r + 4.374664141464968e+00) * r + 2.938163982698783e+00) /
            ((((7.784695709041462e-03 * r + 3.224671290700398e-01) * r + 2.445134137142996e+00) * r + 3.754408661907416e+00) * r + 1.0);
    } else {
        x = kiln_acklam_central_f64(t - 0.5);
    }
    return kiln_ndtri_halley_f64(x, 0.5 * erfc(-x * 0.70710678118654752440) - t);
}
KILN_FN double kiln_ndtri_central_f64(double r) {
    double x = kiln_acklam_central_f64(r);
    return kiln_ndtri_halley_f64(x, 0.5 * erf(x * 0.70710678118654752440) - r);
}
KILN_FN double kiln_random_normal_f64(int32_t k0, int32_t k1, int32_t c) {
    const double lo = -0.99999999999999988897769753748434595763683319091796875;
    double u = kiln_random_uniform_f64(k0, k1, c) * 2.0 + lo;
    u = u < lo ? lo : u;
    if (fabs(u) < 0.9) return kiln_ndtri_central_f64(0.5 * u);
    double p = (1.0 + u) * 0.5, q = (1.0 - u) * 0.5;
    double x = kiln_ndtri_tail_f64(p < q ? p : q);
    return p < q ? x : -x;
}
KILN_FN float kiln_random_uniform_bf16(int32_t k0, int32_t k1, int32_t c) {
    uint32_t b = (uint32_t)kiln_random_bits_i32(k0, k1, c) & 0xffu;
    return (float)(int32_t)(b >> 1) * 0.0078125f; /* 2^-7 */
}
KILN_FN float kiln_random_uniform_f16(int32_t k0, int32_t k1, int32_t c) {
    uint32_t b = (uint32_t)kiln_random_bits_i32(k0, k1, c) & 0xffffu;
    return (float)(int32_t)(b >> 6) * 0.0009765625f; /* 2^-10 */
}
KILN_FN float kiln_random_normal_bf16(int32_t k0, int32_t k1, int32_t c) {
    const float lo = -0.99609375f; /* nextafter(-1, 0) in bf16 */
    float u = kiln_rnd_bf16(kiln_random_uniform_bf16(k0, k1, c) * 2.0f + lo);
    u = u < lo ? lo : u;
    return kiln_rnd_bf16(1.4140625f * kiln_rnd_bf16(kiln_erfinv_f32(u)));
}
KILN_FN float kiln_random_normal_f16(int32_t k0, int32_t k1, int32_t c) {
    const float lo = -0.99951171875f; /* nextafter(-1, 0) in f16 */
    float u = kiln_rnd_f16(kiln_random_uniform_f16(k0, k1, c) * 2.0f + lo);
    u = u < lo ? lo : u;
    return kiln_rnd_f16(1.4140625f * kiln_rnd_f16(kiln_erfinv_f32(u)));
}
