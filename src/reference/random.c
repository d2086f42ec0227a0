/* random.c — the reference evaluation of RANDOM (src/ir/ir.h): Threefry-2x32 of the key
 * (k0, k1) on the counter (0, c), reduced as the node's `rng` attribute says.
 *
 * The same functions as the kernel helpers (src/codegen/prelude/random.h, which explains
 * the algorithm and where each formula comes from), in plain C: tests/test_random.c holds
 * the two to the same bits (the normal forms to a few ulp, since the kernel compiler may
 * contract a*b+c into one rounding). Integer steps are on uint32_t/uint64_t only. */
#include "reference.h"

#include <math.h>
#include <string.h>

static uint32_t rotl32(uint32_t x, int r) {
    return (x << r) | (x >> (32 - r));
}

/* Four rounds with the rotation constants rot[0..3]. */
static void rounds(uint32_t *x0, uint32_t *x1, const int *rot) {
    for (int i = 0; i < 4; i++) {
        *x0 += *x1;
        *x1 = rotl32(*x1, rot[i]) ^ *x0;
    }
}

static uint64_t threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1) {
    static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
    uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
    for (uint32_t g = 1; g <= 5; g++) {
        rounds(&x0, &x1, rot[(g - 1) & 1]);
        x0 += ks[g % 3];
        x1 += ks[(g + 1) % 3] + g;
    }
    return (uint64_t)x0 << 32 | x1;
}

/* ln x of a positive normal float: the kernel's branch-free Cephes logf (kiln_log_f32,
 * src/codegen/prelude/math_f32.h, which says why it is not libm's). */
static float log_f32(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    float e = (float)((int32_t)(b >> 23) - 126), m;
    uint32_t mb = (b & 0x007fffffu) | 0x3f000000u;
    memcpy(&m, &mb, 4);
    bool small = m < 0.707106781186547524f;
    e = small ? e - 1.0f : e;
    m = small ? m + m - 1.0f : m - 1.0f;
    static const float c[] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                              -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                              2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
    float z = m * m, y = c[0];
    for (int i = 1; i < 9; i++) y = y * m + c[i];
    y = y * m * z - 2.12194440e-4f * e - 0.5f * z;
    return m + y + 0.693359375f * e;
}

static float erfinv_f32(float x) {
    static const float lt5[] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                -0.00417768164f,  0.246640727f,    1.50140941f};
    static const float ge5[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                0.00943887047f,   1.00167406f,     2.83297682f};
    float w = -log_f32((1.0f - x) * (1.0f + x));
    bool small = w < 5.0f;
    const float *c = small ? lt5 : ge5;
    w = small ? w - 2.5f : sqrtf(w) - 3.0f;
    float p = c[0];
    for (int i = 1; i < 9; i++) p = c[i] + p * w;
    return p * x;
}

/* Acklam's central rational: Phi^-1(1/2 + r) for |r| <= 0.47575, relative error 1.2e-9. */
static double acklam_central(double r) {
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01, 1.0};
    double s = r * r, num = a[0], den = b[0];
    for (int i = 1; i < 6; i++) num = num * s + a[i];
    for (int i = 1; i < 6; i++) den = den * s + b[i];
    return num * r / den;
}

/* One Halley step towards Phi(x) = target, given e = Phi(x) - target. */
static double ndtri_halley(double x, double e) {
    double h = e * 2.50662827463100050242 * exp(0.5 * x * x);
    return x - h / (1.0 + 0.5 * x * h);
}

/* Phi^-1(t) for a tail mass t in (0, 1/2]: Acklam's approximation and one Halley step. */
static double ndtri_tail(double t) {
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00, 1.0};
    double x;
    if (t < 0.02425) {
        double r = sqrt(-2.0 * log(t)), num = c[0], den = d[0];
        for (int i = 1; i < 6; i++) num = num * r + c[i];
        for (int i = 1; i < 5; i++) den = den * r + d[i];
        x = num / den;
    } else {
        x = acklam_central(t - 0.5);
    }
    return ndtri_halley(x, 0.5 * erfc(-x * 0.70710678118654752440) - t);
}

/* Phi^-1(1/2 + r) for |r| < 0.45, r = u / 2 exactly: Acklam's central form in r itself and
 * one Halley step on erf, so a result near 0 keeps its relative precision (1/2 + r
 * rounded first would leave it an absolute error of ~1e-16). */
static double ndtri_central(double r) {
    double x = acklam_central(r);
    return ndtri_halley(x, 0.5 * erf(x * 0.70710678118654752440) - r);
}

/* rnd16(t, x): x rounded to the 16-bit dtype t (bf16 or f16), as a float. */
static float rnd16(kiln_dtype t, float x) {
    return t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(kn_f32_to_bf16(x))
                                : kn_f16_to_f32(kn_f32_to_f16(x));
}

/* A 16-bit draw from the random bits, as the kernels' kiln_random_{uniform,normal}_{bf16,
 * f16} (prelude/random.h says why these bits and roundings): the value in f32, which the
 * dtype holds exactly. */
static float draw16(int what, kiln_dtype t, uint32_t bits) {
    bool bf = t == KILN_DTYPE_BF16;
    float u = bf ? (float)((bits & 0xffu) >> 1) * 0.0078125f
                 : (float)((bits & 0xffffu) >> 6) * 0.0009765625f;
    if (what != IR_RNG_NORMAL) return u;
    const float lo = bf ? -0.99609375f : -0.99951171875f; /* nextafter(-1, 0) in t */
    u = rnd16(t, u * 2.0f + lo);
    u = u < lo ? lo : u;
    return rnd16(t, 1.4140625f * rnd16(t, erfinv_f32(u))); /* sqrt(2) as t holds it */
}

/* One element: the draw `what` of dtype t for key (k0, k1) and counter c. */
static void draw(int what, kiln_dtype t, uint32_t k0, uint32_t k1, uint32_t c, void *out,
                 int64_t i) {
    uint64_t w = threefry2x32(k0, k1, 0, c);
    uint32_t bits = (uint32_t)(w >> 32) ^ (uint32_t)w;
    switch (what) {
    case IR_RNG_BITS: ref_iput(out, t, i, bits); return;
    case IR_RNG_WORD0: ref_iput(out, t, i, (uint32_t)(w >> 32)); return;
    case IR_RNG_WORD1: ref_iput(out, t, i, (uint32_t)w); return;
    default: break;
    }
    if (ir_dtype_is_half(t)) {
        ref_fput(out, t, i, (double)draw16(what, t, bits)); /* exact: a value of t */
        return;
    }
    if (t == KILN_DTYPE_F32) {
        float u = (float)(bits >> 9) * 1.1920928955078125e-7f;
        if (what == IR_RNG_NORMAL) {
            const float lo = -0.999999940395355224609375f; /* nextafter(-1, 0) */
            u = u * 2.0f + lo;
            u = u < lo ? lo : u;
            u = 1.41421356237309505f * erfinv_f32(u);
        }
        ((float *)out)[i] = u;
        return;
    }
    double u = (double)(w >> 12) * 2.220446049250313080847263336181640625e-16;
    if (what == IR_RNG_NORMAL) {
        const double lo = -0.99999999999999988897769753748434595763683319091796875;
        u = u * 2.0 + lo;
        u = u < lo ? lo : u;
        if (fabs(u) < 0.9) {
            u = ndtri_central(0.5 * u);
        } else {
            double p = (1.0 + u) * 0.5, q = (1.0 - u) * 0.5, x = ndtri_tail(p < q ? p : q);
            u = p < q ? x : -x;
        }
    }
    ((double *)out)[i] = u;
}

kiln_status ref_random(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    const int32_t *k0 = ref_in_data(vals, n, 0), *k1 = ref_in_data(vals, n, 1),
                  *c = ref_in_data(vals, n, 2);
    int64_t count = ref_numel(&n->shape);
    for (int64_t i = 0; i < count; i++)
        draw(n->a.rng, n->dtype, (uint32_t)k0[i], (uint32_t)k1[i], (uint32_t)c[i], out, i);
    return KILN_STATUS_OK;
}
