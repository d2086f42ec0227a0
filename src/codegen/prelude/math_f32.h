// math_f32.h — f32 exp, tanh, log, log1p, erf, sin, cos and logistic written out,
// branch-free, so that loops calling them vectorise (libm's are scalar calls), for both
// dialects. exp: Cody-Waite range reduction exp(x) = 2^k exp(r) with |r| <= ln2/2, a
// degree-6 polynomial (the Cephes coefficients), 2^k put into the exponent bits (two steps
// below 2^-120 so subnormal results come out right); within ~1 ulp. tanh: an odd polynomial
// for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1), and x itself below 2^-12. log: Cephes'
// logf (a positive normal x takes exactly the arithmetic the random normals were drawn with,
// random.h). erf: fitted polynomials (scripts/fit_erf.py; within 1 ulp over all 2^32
// inputs, test_math). sin and cos: |x| reduced by pi/2, below 2^21 by Cody and Waite in
// double, from 2^21 exactly by Payne and Hanek (@KN_C_PIO2_BIG@: the steps of
// src/backend/c_runtime.h, which the CPU backend's runtime table runs for the exact rerun
// of a fast-trig loop), then Taylor polynomials in double rounded once to f32; the _fast
// forms take Cody and Waite alone and kiln_trig_big_f32 flags the arguments that need the
// rerun (print_c.c). logistic: exp(x)/(1+exp(x)) for x < 0, so it does not flush to 0 early.
// The GPU runs the same code without contracting products into FMAs, so the two dialects
// can differ in the last bit.
// exp(x) 2^s for s 0 or -1 (cosh and sinh take e^x / 2, finite up to 89.4), a finite
// result only: the callers put in the overflow.
KILN_FN float kiln_exp_scaled_f32(float x, int32_t s) {
    float xc = x < -104.0f ? -104.0f : x > 89.5f ? 89.5f : x == x ? x : 0.0f;
    float kf = floorf(xc * 1.44269504088896341f + 0.5f);
    float r = xc - kf * 0.693359375f;
    r = r + kf * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    int32_t k = (int32_t)kf + s, kk = k < -120 ? k + 100 : k;
    y = kiln_bits_f32(kiln_f32_bits(y) + ((uint32_t)kk << 23));
    return k < -120 ? y * 7.8886090522101181e-31f : y;
}
KILN_FN float kiln_exp_f32(float x) {
    float y = kiln_exp_scaled_f32(x, 0);
    y = x >= 88.72283935546875f ? INFINITY : y;
    return x != x ? x : y;
}
KILN_FN float kiln_tanh_f32(float x) {
    float a = fabsf(x), z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = a < 0x1p-12f ? x : p * z * x + x;
    float big = 1.0f - 2.0f / (kiln_exp_f32(2.0f * a) + 1.0f);
    big = x < 0 ? -big : big;
    return a < 0.625f ? small : big;
}
KILN_FN float kiln_log_f32(float x) {
    int sub = x < 0x1p-126f;
    uint32_t b = kiln_f32_bits(sub ? x * 0x1p23f : x);
    float e = (float)((int32_t)(b >> 23) - 126) - (sub ? 23.0f : 0.0f);
    float m = kiln_bits_f32((b & 0x007fffffu) | 0x3f000000u);
    int small = m < 0.707106781186547524f;
    e = small ? e - 1.0f : e;
    m = small ? m + m - 1.0f : m - 1.0f;
    float z = m * m, y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f; y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f; y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f; y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f; y = y * m + 3.3333331174e-1f;
    y = y * m * z - 2.12194440e-4f * e - 0.5f * z;
    float r = m + y + 0.693359375f * e;
    r = x == 0 ? -INFINITY : x < 0 ? NAN : x == INFINITY ? x : r;
    return x != x ? x : r;
}
KILN_FN float kiln_log1p_f32(float x) {
    float u = 1.0f + x;
    float r = kiln_log_f32(u) + (x - (u - 1.0f)) / u;
    r = u == 1.0f ? x : x == -1.0f ? -INFINITY : x == INFINITY ? x : r;
    return x != x ? x : r;
}
KILN_FN float kiln_erf_f32(float x) {
    float a = fabsf(x), z = a * a, t = 1.0f / a;
    float p = 7.84726217e-05f;
    p = p * z - 0.000800819311f; p = p * z + 0.00518809957f;
    p = p * z - 0.0268536918f; p = p * z + 0.112835824f;
    p = p * z - 0.37612626f; p = p * z + 0.128379166f;
    float q = -0.00710721128f;
    q = q * t + 0.0168464519f; q = q * t + 0.048697006f;
    q = q * t - 0.271449566f; q = q * t + 0.518165529f;
    q = q * t - 0.481054515f; q = q * t + 0.0445161834f;
    q = q * t + 0.558677077f; q = q * t + 0.00029260997f;
    float r = a < 1.0f ? a + a * p : a < 3.92f ? 1.0f - kiln_exp_f32(-z) * q : 1.0f;
    r = kiln_bits_f32(kiln_f32_bits(r) | (kiln_f32_bits(x) & 0x80000000u));
    return x != x ? x : r;
}
typedef struct kiln_pio2 { double r; uint32_t quadrant; } kiln_pio2;
KILN_FN kiln_pio2 kiln_reduce_pio2_small_f32(float a) { /* 0 <= a < 2^21 */
    kiln_pio2 v;
    double d = a, k = (d * 0x1.45f306dc9c883p-1 + 0x1.8p52) - 0x1.8p52;
    v.r = ((d - k * 0x1.921fb544p+0) - k * 0x1.0b4611a626331p-34) - k * 0x1.1701b839a2520p-88;
    v.quadrant = (uint32_t)(int32_t)k; /* k < 2^21: AVX2 converts it */
    return v;
}
KILN_FN kiln_pio2 kiln_reduce_pio2_f32(float x) {
    float a = fabsf(x);
    kiln_pio2 v;
    if (a < 0x1p21f) return kiln_reduce_pio2_small_f32(a);
    @KN_C_PIO2_BIG@;
    return v;
}
KILN_FN double kiln_sin_poly(double r) {
    double z = r * r, p = -2.5052108385441720e-08;
    p = p * z + 2.7557319223985893e-06; p = p * z - 1.9841269841269841e-04;
    p = p * z + 8.3333333333333333e-03; p = p * z - 1.6666666666666667e-01;
    return r + r * z * p;
}
KILN_FN double kiln_cos_poly(double r) {
    double z = r * r, p = 2.0876756987868099e-09;
    p = p * z - 2.7557319223985888e-07; p = p * z + 2.4801587301587302e-05;
    p = p * z - 1.3888888888888889e-03; p = p * z + 4.1666666666666667e-02;
    return 1.0 - 0.5 * z + z * z * p;
}
KILN_FN float kiln_sin_of_f32(float x, kiln_pio2 p) {
    uint32_t n = p.quadrant;
    double v = n & 1u ? kiln_cos_poly(p.r) : kiln_sin_poly(p.r);
    v = (n & 2u) != (x < 0 ? 2u : 0u) ? -v : v;
    return fabsf(x) < 0x1p-12f ? x : x - x != 0 ? x - x : (float)v;
}
KILN_FN float kiln_cos_of_f32(float x, kiln_pio2 p) {
    uint32_t n = p.quadrant;
    double v = n & 1u ? kiln_sin_poly(p.r) : kiln_cos_poly(p.r);
    v = ((n + 1u) & 2u) ? -v : v;
    return x - x != 0 ? x - x : (float)v;
}
KILN_FN float kiln_sin_f32(float x) { return kiln_sin_of_f32(x, kiln_reduce_pio2_f32(x)); }
KILN_FN float kiln_cos_f32(float x) { return kiln_cos_of_f32(x, kiln_reduce_pio2_f32(x)); }
KILN_FN kiln_pio2 kiln_reduce_fast_f32(float x) {
    float a = fabsf(x);
    return kiln_reduce_pio2_small_f32(a < 0x1p21f ? a : 0.0f);
}
KILN_FN uint32_t kiln_trig_big_f32(float x) {
    float a = fabsf(x);
    return a >= 0x1p21f && a <= 0x1.fffffep127f;
}
KILN_FN float kiln_sin_fast_f32(float x) { return kiln_sin_of_f32(x, kiln_reduce_fast_f32(x)); }
KILN_FN float kiln_cos_fast_f32(float x) { return kiln_cos_of_f32(x, kiln_reduce_fast_f32(x)); }
KILN_FN float kiln_logistic_f32(float x) {
    float e = kiln_exp_f32(-fabsf(x));
    return (x >= 0 ? 1.0f : e) / (1.0f + e);
}
// erf_inv: Giles' single-precision polynomials in w = -log(1 - x^2) (M. Giles,
// "Approximating the erfinv function", GPU Computing Gems, 2011), the same as XLA's: the
// random normals (random.h) and the op (kiln_erf_inv_f32: +-inf at +-1, where the
// polynomial alone gives the infinity of the wrong sign; NaN beyond, as log gives).
KILN_FN float kiln_erfinv_f32(float x) {
    float w = -kiln_log_f32((1.0f - x) * (1.0f + x));
    float a = w - 2.5f, b = sqrtf(w) - 3.0f;
    float p = 2.81022636e-08f, q = -0.000200214257f;
    p = 3.43273939e-07f + p * a;  q = 0.000100950558f + q * b;
    p = -3.5233877e-06f + p * a;  q = 0.00134934322f + q * b;
    p = -4.39150654e-06f + p * a; q = -0.00367342844f + q * b;
    p = 0.00021858087f + p * a;   q = 0.00573950773f + q * b;
    p = -0.00125372503f + p * a;  q = -0.0076224613f + q * b;
    p = -0.00417768164f + p * a;  q = 0.00943887047f + q * b;
    p = 0.246640727f + p * a;     q = 1.00167406f + q * b;
    p = 1.50140941f + p * a;      q = 2.83297682f + q * b;
    return (w < 5.0f ? p : q) * x;
}
KILN_FN float kiln_erf_inv_f32(float x) {
    return fabsf(x) == 1.0f ? x * INFINITY : kiln_erfinv_f32(x);
}
// expm1, sinh, cosh, asinh, acosh, atanh in f32 from the functions above, branch-free so
// that their loops vectorise (libm's are a call per element: bench/RESULTS.md, "JAX's
// other math functions"). expm1 and sinh below |x| = 0.5 and 1:
// Taylor polynomials (the first term left out below 2^-60 of the value); above, exp(x) - 1
// and h -+ 1 / (4 h) with h = e^|x| / 2, which cancel by at most a bit there; h is exp with
// its exponent one less, so cosh and sinh stay finite past exp's overflow, up to 89.4.
// atanh: log1p(2a / (1 - a)) / 2; asinh: log1p(a + a^2 / (1 + sqrt(1 + a^2))), log(a / 2) +
// 2 log 2 above 2^12; acosh: log1p((x - 1) + sqrt((x - 1)(x + 1))), log(x / 2) + 2 log 2
// above 2^12 (of x / 2, not x: gcc merged kiln_log_f32(x) here with a log op of the same x
// in one kernel and fused its products otherwise, so that op's bits differed between the
// compile tiers). tests/test_math_functions.c holds them to mpmath's values.
KILN_FN float kiln_expm1_f32(float x) {
    float p = 2.75573192e-6f;
    p = p * x + 2.48015873e-5f; p = p * x + 1.98412698e-4f;
    p = p * x + 1.38888889e-3f; p = p * x + 8.33333333e-3f;
    p = p * x + 4.16666667e-2f; p = p * x + 1.66666667e-1f; p = p * x + 0.5f;
    float small = x + (x * x) * p, big = kiln_exp_f32(x) - 1.0f;
    float r = fabsf(x) < 0.5f ? small : big;
    return x == 0.0f ? x : r;
}
KILN_FN float kiln_cosh_f32(float x) {
    float a = fabsf(x), h = kiln_exp_scaled_f32(a, -1); /* e^a / 2 */
    float r = a >= 0x1.65a9fap+6f ? INFINITY : h + 0.25f / h;
    return x != x ? x : r;
}
KILN_FN float kiln_sinh_f32(float x) {
    float a = fabsf(x), z = x * x;
    float p = 1.60590438e-10f;
    p = p * z + 2.50521084e-8f; p = p * z + 2.75573192e-6f;
    p = p * z + 1.98412698e-4f; p = p * z + 8.33333333e-3f; p = p * z + 1.66666667e-1f;
    float small = x + x * (z * p), h = kiln_exp_scaled_f32(a, -1);
    float big = a >= 0x1.65a9fap+6f ? INFINITY : h - 0.25f / h;
    big = kiln_bits_f32(kiln_f32_bits(big) | (kiln_f32_bits(x) & 0x80000000u));
    float r = a < 1.0f ? small : big;
    return x != x ? x : r;
}
KILN_FN float kiln_atanh_f32(float x) {
    float a = fabsf(x);
    float r = 0.5f * kiln_log1p_f32((a + a) / (1.0f - a));
    r = kiln_bits_f32(kiln_f32_bits(r) | (kiln_f32_bits(x) & 0x80000000u));
    return x != x ? x : r;
}
KILN_FN float kiln_asinh_f32(float x) {
    float a = fabsf(x), z = a * a;
    float near = kiln_log1p_f32(a + z / (1.0f + sqrtf(1.0f + z)));
    float far = kiln_log_f32(a * 0.5f) + 1.38629436f;
    float r = a < 4096.0f ? near : far;
    r = kiln_bits_f32(kiln_f32_bits(r) | (kiln_f32_bits(x) & 0x80000000u));
    return x != x ? x : r;
}
KILN_FN float kiln_acosh_f32(float x) {
    float t = x - 1.0f;
    float near = kiln_log1p_f32(t + sqrtf(t * (x + 1.0f)));
    float far = kiln_log_f32(x * 0.5f) + 1.38629436f;
    float r = x < 4096.0f ? near : far;
    return x < 1.0f ? NAN : x != x ? x : r;
}
