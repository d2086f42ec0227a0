// math_f64.h — the f64 forms of the remaining helpers the registry's kernel expressions
// name, for both dialects, on top of the dialect's kiln_exp_f64 (c_math.h, cuda_math.cuh).
// erf_inv: Giles' f32 value (math_f32.h, within ~1e-7 relative) refined by Halley steps
// (cubic) until one changes nothing, on erf(y) - x below 0.5 and on erfc(y) - (1 - |x|)
// above, where 1 - |x| is exact and erfc keeps the tail's relative precision. Where
// 1 - |x| < 2^-12 the f32 argument's rounding moves 1 - |x| too far (at 2^-25 it rounds to
// 1), so the start there is the tail's leading term sqrt(w - log(w) / 2) with
// w = -log(1 - |x|) - log(pi) / 2.
// digamma: psi(x) = psi(1 - x) - pi / tan(pi x) below 0 (the tangent of x's distance to
// the nearest integer, so that large |x| keep their precision), psi(x) = psi(x + 1) - 1/x
// up to 10, its sum compensated (the result near psi's zero at 1.46 is the difference of
// two numbers near 2.3), then the asymptotic series to x^-14; NaN at 0 and the negative
// integers, as XLA's. In f64 for the f32 form too (f32's own series would need its own constants).
KILN_FN double kiln_sin_f64(double x) { return sin(x); }
KILN_FN double kiln_cos_f64(double x) { return cos(x); }
KILN_FN double kiln_erf_f64(double x) { return erf(x); }
KILN_FN double kiln_erfc_f64(double x) { return erfc(x); }
KILN_FN double kiln_logistic_f64(double x) {
    double e = kiln_exp_f64(-fabs(x));
    return (x >= 0 ? 1.0 : e) / (1.0 + e);
}
KILN_FN double kiln_erf_inv_f64(double x) {
    double a = fabs(x), c = 1.0 - a, y;
    if (!(a < 1.0)) return a == 1.0 ? x * INFINITY : NAN;
    if (c >= 0x1p-12) {
        y = fabs((double)kiln_erfinv_f32((float)a));
    } else {
        double w = -log(c) - 0.5723649429247001; /* log(sqrt(pi)) */
        y = sqrt(w - 0.5 * log(w));
    }
    for (int i = 0; i < 6; i++) {
        double d = 1.1283791670955126 * exp(-y * y), step; /* erf'(y) */
        if (a < 0.5) {
            double f = erf(y) - a;
            step = -f / (d + f * y);
        } else {
            double f = erfc(y) - c;
            step = f / (d - f * y);
        }
        y += step;
        if (fabs(step) <= 0x1p-53 * y) break;
    }
    return copysign(y, x);
}
KILN_FN double kiln_digamma_f64(double x) {
    if (x != x || x == -INFINITY) return NAN;
    if (x <= 0.0 && floor(x) == x) return NAN;
    if (fabs(x) < 0x1p-1000) return -1.0 / x; /* -1/x - gamma, 1/x overflowing below 2^-1023 */
    double r = 0.0;
    if (x < 0.0) {
        double f = x - floor(x + 0.5); /* in [-0.5, 0.5] */
        r = -3.14159265358979323846 / tan(3.14159265358979323846 * f);
        x = 1.0 - x;
    }
    double rc = 0.0; /* r + rc: the recurrence's sum, compensated (TwoSum, fma's remainder) */
    for (; x < 10.0; x += 1.0) {
        double q = 1.0 / x, e = fma(-q, x, 1.0) / x; /* 1/x = q + e */
        double t = r - q, v = t - r;
        rc += (r - (t - v)) + (-q - v) - e;
        r = t;
    }
    double z = 1.0 / (x * x);
    double s = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
    return (r + (log(x) - 0.5 / x - s)) + rc;
}
KILN_FN float kiln_digamma_f32(float x) { return (float)kiln_digamma_f64((double)x); }
