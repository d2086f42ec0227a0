/* print_random.c — the kernel helpers of the RANDOM op (src/ir/ir.h), written once for both
 * dialects (KILN_FN is each dialect's qualifier; see print_c.c). The reference interpreter
 * has the same functions in plain C (src/reference/random.c); tests/test_random.c holds the
 * two to the same bits, and both to bits computed with jax.random.
 *
 * Invariants: every integer step is on uint32_t or uint64_t (wrapping, defined in C and
 * CUDA alike: the sanitizers run the suite), and a value reaches int32_t only through a
 * conversion from uint32_t, which both compilers define as two's complement.
 *
 * Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC 2011; the Random123 constants; JAX's threefry2x32): a 64-bit counter block
 * (c0, c1) enciphered under the key (k0, k1). Five groups of four add-rotate-xor rounds,
 * with the key schedule (k0, k1, k2 = k0 ^ k1 ^ 0x1BD11BDA) injected between groups. A
 * counter-based generator needs no state: element c of a draw is a pure function of the
 * key and c, so any element can be computed alone, in any order, on any device.
 *
 * From the two output words, as jax.random does with jax_threefry_partitionable (the
 * default since JAX 0.5): bits are x0 ^ x1; an f32 in [0, 1) puts the top 23 bits in the
 * mantissa of a float in [1, 2) and subtracts 1, which is exactly (bits >> 9) * 2^-23 and
 * is written so (no bit casts); an f64 uses all 64 bits, x0:x1 >> 12 times 2^-52 (built
 * as the bits of 1 + that, less 1: the same number). Normal
 * f32 is XLA's: sqrt(2) erfinv(u) with u uniform on [nextafter(-1, 0), 1), erfinv by
 * Giles' single-precision polynomials ("Approximating the erfinv function", GPU Computing
 * Gems, 2011). Normal f64 is the quantile Phi^-1((1 + u) / 2), the same number, by
 * Acklam's rational approximation (relative error 1.2e-9) and one Halley step, which
 * brings it to double precision: for |u| < 0.9 in terms of u / 2 itself, on erf, so values
 * near 0 keep their relative precision; beyond, on erfc of the tail mass, taken from
 * whichever of 1 + u and 1 - u is exact, so the far tails keep their digits. */
#include "cgen.h"

const char cgen_random_prelude[] =
    "KILN_FN uint32_t kiln_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }\n"
    "#define KILN_TF(r) x0 += x1; x1 = kiln_rotl32(x1, r) ^ x0;\n"
    "#define KILN_TF_A KILN_TF(13) KILN_TF(15) KILN_TF(26) KILN_TF(6)\n"
    "#define KILN_TF_B KILN_TF(17) KILN_TF(29) KILN_TF(16) KILN_TF(24)\n"
    "KILN_FN uint64_t kiln_threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1) {\n"
    "    uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu, x0 = c0 + k0, x1 = c1 + k1;\n"
    "    KILN_TF_A x0 += k1; x1 += k2 + 1u;\n"
    "    KILN_TF_B x0 += k2; x1 += k0 + 2u;\n"
    "    KILN_TF_A x0 += k0; x1 += k1 + 3u;\n"
    "    KILN_TF_B x0 += k1; x1 += k2 + 4u;\n"
    "    KILN_TF_A x0 += k2; x1 += k0 + 5u;\n"
    "    return (uint64_t)x0 << 32 | x1;\n"
    "}\n"
    "KILN_FN uint64_t kiln_random_words(int32_t k0, int32_t k1, int32_t c) {\n"
    "    return kiln_threefry2x32((uint32_t)k0, (uint32_t)k1, 0u, (uint32_t)c);\n"
    "}\n"
    "KILN_FN int32_t kiln_random_bits_i32(int32_t k0, int32_t k1, int32_t c) {\n"
    "    uint64_t w = kiln_random_words(k0, k1, c);\n"
    "    return (int32_t)(uint32_t)((w >> 32) ^ w);\n"
    "}\n"
    "KILN_FN int32_t kiln_random_word0_i32(int32_t k0, int32_t k1, int32_t c) {\n"
    "    return (int32_t)(uint32_t)(kiln_random_words(k0, k1, c) >> 32);\n"
    "}\n"
    "KILN_FN int32_t kiln_random_word1_i32(int32_t k0, int32_t k1, int32_t c) {\n"
    "    return (int32_t)(uint32_t)kiln_random_words(k0, k1, c);\n"
    "}\n"
    /* b >> 9 < 2^23 converted as int32: the same value, and AVX2 has no unsigned vector
     * conversion (the loop would stay scalar) */
    "KILN_FN float kiln_random_uniform_f32(int32_t k0, int32_t k1, int32_t c) {\n"
    "    uint32_t b = (uint32_t)kiln_random_bits_i32(k0, k1, c);\n"
    "    return (float)(int32_t)(b >> 9) * 1.1920928955078125e-7f;\n"
    "}\n"
    /* (w >> 12) * 2^-52 as the double 1 + (w >> 12) * 2^-52, built from its bits, less 1:
     * both steps are exact, so the same value, and AVX2 has no 64-bit integer to double
     * vector conversion (the loop would stay scalar) */
    "KILN_FN double kiln_random_uniform_f64(int32_t k0, int32_t k1, int32_t c) {\n"
    "    return kiln_bits_f64(0x3FF0000000000000ull | kiln_random_words(k0, k1, c) >> 12) - "
    "1.0;\n"
    "}\n"
    /* (kiln_log_f32, ln x branch-free, is the math prelude's: src/codegen/print_c.c) */
    /* XLA's ErfInv32: both polynomials evaluated and one selected, so loops vectorise.
     * XLA's w = -log1p(-x^2) is taken as -ln((1 - x)(1 + x)): the product is within an
     * ulp of 1 - x^2 (1 - x is exact near x = 1, 1 + x near -1), and an absolute error
     * of 1e-7 in w moves the result by far less than an ulp */
    "KILN_FN float kiln_erfinv_f32(float x) {\n"
    "    float w = -kiln_log_f32((1.0f - x) * (1.0f + x));\n"
    "    float a = w - 2.5f, b = sqrtf(w) - 3.0f;\n"
    "    float p = 2.81022636e-08f, q = -0.000200214257f;\n"
    "    p = 3.43273939e-07f + p * a;  q = 0.000100950558f + q * b;\n"
    "    p = -3.5233877e-06f + p * a;  q = 0.00134934322f + q * b;\n"
    "    p = -4.39150654e-06f + p * a; q = -0.00367342844f + q * b;\n"
    "    p = 0.00021858087f + p * a;   q = 0.00573950773f + q * b;\n"
    "    p = -0.00125372503f + p * a;  q = -0.0076224613f + q * b;\n"
    "    p = -0.00417768164f + p * a;  q = 0.00943887047f + q * b;\n"
    "    p = 0.246640727f + p * a;     q = 1.00167406f + q * b;\n"
    "    p = 1.50140941f + p * a;      q = 2.83297682f + q * b;\n"
    "    return (w < 5.0f ? p : q) * x;\n"
    "}\n"
    "KILN_FN float kiln_random_normal_f32(int32_t k0, int32_t k1, int32_t c) {\n"
    "    const float lo = -0.999999940395355224609375f; /* nextafter(-1, 0) */\n"
    "    float u = kiln_random_uniform_f32(k0, k1, c) * 2.0f + lo;\n"
    "    u = u < lo ? lo : u;\n"
    "    return 1.41421356237309505f * kiln_erfinv_f32(u);\n"
    "}\n"
    /* Acklam's central rational, Phi^-1(1/2 + r) for |r| <= 0.47575 (relative error 1.2e-9) */
    "KILN_FN double kiln_acklam_central_f64(double r) {\n"
    "    double s = r * r;\n"
    "    return (((((-3.969683028665376e+01 * s + 2.209460984245205e+02) * s - "
    "2.759285104469687e+02) * s + 1.383577518672690e+02) * s - 3.066479806614716e+01) * s + "
    "2.506628277459239e+00) * r /\n"
    "           (((((-5.447609879822406e+01 * s + 1.615858368580409e+02) * s - "
    "1.556989798598866e+02) * s + 6.680131188771972e+01) * s - 1.328068155288572e+01) * s + "
    "1.0);\n"
    "}\n"
    /* one Halley step towards Phi(x) = target, given e = Phi(x) - target */
    "KILN_FN double kiln_ndtri_halley_f64(double x, double e) {\n"
    "    double h = e * 2.50662827463100050242 * exp(0.5 * x * x);\n"
    "    return x - h / (1.0 + 0.5 * x * h);\n"
    "}\n"
    /* Phi^-1 of the tail mass t = min(p, 1 - p) <= 1/2, negative; the caller flips it */
    "KILN_FN double kiln_ndtri_tail_f64(double t) {\n"
    "    double x;\n"
    "    if (t < 0.02425) {\n"
    "        double r = sqrt(-2.0 * log(t));\n"
    "        x = (((((-7.784894002430293e-03 * r - 3.223964580411365e-01) * r - "
    "2.400758277161838e+00) * r - 2.549732539343734e+00) * r + 4.374664141464968e+00) * r + "
    "2.938163982698783e+00) /\n"
    "            ((((7.784695709041462e-03 * r + 3.224671290700398e-01) * r + "
    "2.445134137142996e+00) * r + 3.754408661907416e+00) * r + 1.0);\n"
    "    } else {\n"
    "        x = kiln_acklam_central_f64(t - 0.5);\n"
    "    }\n"
    "    return kiln_ndtri_halley_f64(x, 0.5 * erfc(-x * 0.70710678118654752440) - t);\n"
    "}\n"
    /* Phi^-1(1/2 + r) for |r| < 0.45 with r = u / 2 exact: the central form in r itself and
     * a Halley step on erf, so a result near 0 keeps its relative precision (through
     * (1 + u) / 2 it had an absolute error of ~1e-16: 4078 ulp at z = 1.1e-4) */
    "KILN_FN double kiln_ndtri_central_f64(double r) {\n"
    "    double x = kiln_acklam_central_f64(r);\n"
    "    return kiln_ndtri_halley_f64(x, 0.5 * erf(x * 0.70710678118654752440) - r);\n"
    "}\n"
    "KILN_FN double kiln_random_normal_f64(int32_t k0, int32_t k1, int32_t c) {\n"
    "    const double lo = -0.99999999999999988897769753748434595763683319091796875;\n"
    "    double u = kiln_random_uniform_f64(k0, k1, c) * 2.0 + lo;\n"
    "    u = u < lo ? lo : u;\n"
    "    if (fabs(u) < 0.9) return kiln_ndtri_central_f64(0.5 * u);\n"
    "    double p = (1.0 + u) * 0.5, q = (1.0 - u) * 0.5;\n"
    "    double x = kiln_ndtri_tail_f64(p < q ? p : q);\n"
    "    return p < q ? x : -x;\n"
    "}\n";
