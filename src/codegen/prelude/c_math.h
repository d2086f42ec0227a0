// c_math.h — C only. The exact rerun of a fast-trig loop (print_c.c), scalar anyway,
// reduces an argument of 2^21 or more through the runtime table (pio2_f32) rather than
// inline: the same bits as kiln_sin_f32 and kiln_cos_f32. Then kiln's own f64 exp, tanh, log
// and log1p, so that loops over them vectorise (libm's are calls, one element at a time:
// bench/RESULTS.md, "f64 elementwise functions against JAX, one core"): exp by Taylor's
// series to r^13 after a reduction by ln2 in two parts, 2^n applied in two factors; tanh
// from exp or, below 0.55, from expm1's series; log from the bits and an atanh series;
// log1p as log(u) x / (u - 1) (Goldberg, theorem 4). Against long double libm
// (tests/test_math.c): exp and log within 1 ulp, tanh and log1p within 2.4 and 2 ulp.
KILN_FN kiln_pio2 kiln_reduce_pio2_rerun_f32(float x) {
    float a = fabsf(x);
    if (a < 0x1p21f) return kiln_reduce_pio2_small_f32(a);
    kiln_pio2 v;
    v.r = KILN_RUNTIME()->pio2_f32(a, &v.quadrant);
    return v;
}
KILN_FN float kiln_sin_rerun_f32(float x) {
    return kiln_sin_of_f32(x, kiln_reduce_pio2_rerun_f32(x));
}
KILN_FN float kiln_cos_rerun_f32(float x) {
    return kiln_cos_of_f32(x, kiln_reduce_pio2_rerun_f32(x));
}
KILN_FN double kiln_exp_f64(double x) {
    x = x > 710.0 ? 710.0 : x;
    x = x < -746.0 ? -746.0 : x;
    double t = x * 0x1.71547652b82fep+0 + 0x1.8p52, n = t - 0x1.8p52;
    double r = x - n * 0x1.62e42fee00000p-1 - n * 0x1.a39ef35793c76p-33;
    double p = 0x1.6124613a86d09p-33;
    p = p * r + 0x1.1eed8eff8d898p-29; p = p * r + 0x1.ae64567f544e4p-26;
    p = p * r + 0x1.27e4fb7789f5cp-22; p = p * r + 0x1.71de3a556c734p-19;
    p = p * r + 0x1.a01a01a01a01ap-16; p = p * r + 0x1.a01a01a01a01ap-13;
    p = p * r + 0x1.6c16c16c16c17p-10; p = p * r + 0x1.1111111111111p-7;
    p = p * r + 0x1.5555555555555p-5; p = p * r + 0x1.5555555555555p-3;
    p = p * r + 0.5; p = p * r + 1.0; p = p * r + 1.0;
    int64_t k = (int64_t)(kiln_f64_bits(t) - kiln_f64_bits(0x1.8p52)), k1 = k >> 1;
    return p * kiln_bits_f64((uint64_t)(k1 + 1023) << 52) *
           kiln_bits_f64((uint64_t)(k - k1 + 1023) << 52);
}
/* expm1's Taylor series to s^20, for |s| <= 1.1: tanh's small branch and expm1's */
KILN_FN double kiln_expm1_series_f64(double s) {
    double m = 0x1.2f49b46814157p-57;
    m = m * s + 0x1.6827863b97d97p-53; m = m * s + 0x1.952c77030ad4ap-49;
    m = m * s + 0x1.ae7f3e733b81fp-45; m = m * s + 0x1.ae7f3e733b81fp-41;
    m = m * s + 0x1.93974a8c07c9dp-37; m = m * s + 0x1.6124613a86d09p-33;
    m = m * s + 0x1.1eed8eff8d898p-29; m = m * s + 0x1.ae64567f544e4p-26;
    m = m * s + 0x1.27e4fb7789f5cp-22; m = m * s + 0x1.71de3a556c734p-19;
    m = m * s + 0x1.a01a01a01a01ap-16; m = m * s + 0x1.a01a01a01a01ap-13;
    m = m * s + 0x1.6c16c16c16c17p-10; m = m * s + 0x1.1111111111111p-7;
    m = m * s + 0x1.5555555555555p-5; m = m * s + 0x1.5555555555555p-3;
    m = m * s + 0.5;
    return m * s * s + s;
}
KILN_FN double kiln_tanh_f64(double x) {
    double a = fabs(x), y = 2.0 * a;
    double big = 1.0 - 2.0 / (kiln_exp_f64(y) + 1.0);
    double m = kiln_expm1_series_f64(y < 1.1 ? y : 1.1);
    return copysign(a < 0.55 ? m / (m + 2.0) : big, x);
}
KILN_FN double kiln_log_f64(double x) {
    int sub = x < 0x1p-1022;
    uint64_t u = kiln_f64_bits(sub ? x * 0x1p54 : x);
    int64_t k = (int64_t)(u >> 52) - (sub ? 1077 : 1023);
    uint64_t m = (u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    int big = m >= 0x3ff6a09e667f3bcdull;
    m = big ? m - 0x0010000000000000ull : m;
    k += big;
    double f = kiln_bits_f64(m) - 1.0, s = f / (2.0 + f), z = s * s, h = 0.5 * f * f;
    double q = 0x1.642c8590b2164p-4;
    q = q * z + 0x1.8618618618618p-4; q = q * z + 0x1.af286bca1af28p-4;
    q = q * z + 0x1.e1e1e1e1e1e1ep-4; q = q * z + 0x1.1111111111111p-3;
    q = q * z + 0x1.3b13b13b13b14p-3; q = q * z + 0x1.745d1745d1746p-3;
    q = q * z + 0x1.c71c71c71c71cp-3; q = q * z + 0x1.2492492492492p-2;
    q = q * z + 0x1.999999999999ap-2; q = q * z + 0x1.5555555555555p-1;
    q *= z;
    double dk = kiln_bits_f64(0x4330000000000000ull + (uint64_t)(k + 2048)) -
                0x1.0000000000800p52;
    double r = dk * 0x1.62e42fee00000p-1 +
               (((dk * 0x1.a39ef35793c76p-33 + s * (h + q)) - h) + f);
    r = x == 0 ? -(double)INFINITY : r;
    r = x < 0 ? (double)NAN : r;
    return x == (double)INFINITY || x != x ? x : r;
}
KILN_FN double kiln_log1p_f64(double x) {
    double u = 1.0 + x, d = u - 1.0;
    double r = kiln_log_f64(u) * (x / (d == 0 ? 1.0 : d));
    r = d == 0 ? x : r;
    return x == (double)INFINITY ? x : r;
}
// expm1, sinh, cosh, asinh, acosh, atanh in f64 as math_f32.h writes them in f32, from
// kiln's own f64 exp, log and log1p above, so that their loops vectorise: expm1 below
// |x| = 0.5 and sinh below 1 by Taylor's series (to x^20 and x^21), else exp(x) - 1 and
// (e - 1/e) / 2; past exp's overflow (709) (e/2) e with e = exp(|x| / 2); atanh
// log1p(2a / (1 - a)) / 2; asinh and acosh through log1p below 2^28, log(x / 2) + 2 log 2
// above. (CUDA's are its own: cuda_math.cuh.)
KILN_FN double kiln_expm1_f64(double x) {
    double small = kiln_expm1_series_f64(x), big = kiln_exp_f64(x) - 1.0;
    double r = fabs(x) < 0.5 ? small : big;
    return x == 0.0 || x != x ? x : r;
}
KILN_FN double kiln_exp_half_squared_f64(double a) { /* e^a / 2, finite up to a = 710.47 */
    double e = kiln_exp_f64(a * 0.5);
    return (0.5 * e) * e;
}
KILN_FN double kiln_cosh_f64(double x) {
    double a = fabs(x), e = kiln_exp_f64(a);
    double r = a < 709.0 ? 0.5 * e + 0.5 / e : kiln_exp_half_squared_f64(a);
    return x != x ? x : r;
}
KILN_FN double kiln_sinh_f64(double x) {
    double a = fabs(x), z = x * x;
    double p = 0x1.71b8ef6dcf572p-66;
    p = p * z + 0x1.2f49b46814157p-57;
    p = p * z + 0x1.952c77030ad4ap-49;
    p = p * z + 0x1.ae7f3e733b81fp-41;
    p = p * z + 0x1.6124613a86d09p-33;
    p = p * z + 0x1.ae64567f544e4p-26;
    p = p * z + 0x1.71de3a556c734p-19;
    p = p * z + 0x1.a01a01a01a01ap-13;
    p = p * z + 0x1.1111111111111p-7;
    p = p * z + 0x1.5555555555555p-3;
    double small = x + x * (z * p), e = kiln_exp_f64(a);
    double big = a < 709.0 ? 0.5 * e - 0.5 / e : kiln_exp_half_squared_f64(a);
    double r = a < 1.0 ? small : copysign(big, x);
    return x != x ? x : r;
}
KILN_FN double kiln_atanh_f64(double x) {
    double a = fabs(x);
    double r = copysign(0.5 * kiln_log1p_f64((a + a) / (1.0 - a)), x);
    return x != x ? x : r;
}
KILN_FN double kiln_asinh_f64(double x) {
    double a = fabs(x), z = a * a;
    double near = kiln_log1p_f64(a + z / (1.0 + sqrt(1.0 + z)));
    double far = kiln_log_f64(a * 0.5) + 0x1.62e42fefa39efp+0; /* 2 log 2 */
    double r = copysign(a < 0x1p28 ? near : far, x);
    return x != x ? x : r;
}
KILN_FN double kiln_acosh_f64(double x) {
    double t = x - 1.0;
    double near = kiln_log1p_f64(t + sqrt(t * (x + 1.0)));
    double far = kiln_log_f64(x * 0.5) + 0x1.62e42fefa39efp+0;
    double r = x < 0x1p28 ? near : far;
    return x < 1.0 ? (double)NAN : x != x ? x : r;
}
// lgamma: libm's reentrant form (lgamma writes the sign to the global signgam, a race
// between the threads of a parallel loop). Declared here: math.h has it only with
// _DEFAULT_SOURCE.
float lgammaf_r(float, int *);
double lgamma_r(double, int *);
KILN_FN float kiln_lgamma_f32(float x) {
    int sign;
    return lgammaf_r(x, &sign);
}
KILN_FN double kiln_lgamma_f64(double x) {
    int sign;
    return lgamma_r(x, &sign);
}
// erfc in f32, on the CPU: computed in double and rounded once, branch-free so that its
// loops vectorise (libm's erfcf is a call per element; the GPU takes CUDA's erfcf, fast
// there): for a = |x|, erfc(a) = exp(-a^2) R(t), t = 2 / (2 + a), where a^2 is exact in
// double and R, erfc(a) exp(a^2), is fitted to 1e-10 relative on a <= 12
// (scripts/fit_erfc.py; f32's erfc is 0 past 10.06), and 2 - erfc(a) for x < 0. So the
// f32 result is within one rounding of the exact value, for every f32 input.
KILN_FN float kiln_erfc_f32(float x) {
    double a = fabs((double)x);
    a = a < 12.0 ? a : 12.0;
    double t = 2.0 / (2.0 + a), r = -0x1.164ae171343dap-5;
    r = r * t + 0x1.019ea705a2d6ep-2; r = r * t - 0x1.99028c77a892ep-1;
    r = r * t + 0x1.61b5218bfd8d6p+0; r = r * t - 0x1.5b5c082ed2352p+0;
    r = r * t + 0x1.8157ad961c728p-1; r = r * t - 0x1.6b3a3fd5cbbd7p-2;
    r = r * t + 0x1.881228e7b9dfdp-3; r = r * t + 0x1.3914bbe94c0a7p-3;
    r = r * t + 0x1.005dfb7048868p-2; r = r * t + 0x1.208240f333355p-2;
    r = r * t + 0x1.20e2c194a8001p-2; r = r * t - 0x1.18a72cfa1a4d4p-21;
    double y = kiln_exp_f64(-a * a) * r;
    y = x < 0 ? 2.0 - y : y;
    return x != x ? x : (float)y;
}
