/* test_math_functions.c — JAX's other float functions (kiln_expm1 ... kiln_digamma,
 * kiln_ceil, kiln_round, kiln_round_half_away, kiln_atan2) against exact values:
 * tests/data/math/functions.txt (make_fixture.py) holds, at points an f32 holds, each
 * function's value from mpmath at 60 digits rounded once to f64, and JAX's f64 value.
 * Where a function has no finite value (poles, outside the domain, infinite or NaN
 * arguments) the fixture's value is JAX's: the convention kiln follows. The points are
 * log-spaced magnitudes of both signs over each domain, the domain's edges and poles,
 * zeros, infinities and NaN.
 *
 * Each function runs compiled (the printed C kernels) and in the interpreter, in f64 and in
 * f32, on every point. NaN, the infinities and the sign of a zero must be the fixture's
 * exactly; a finite value must be within the op's bound, in ulps of the exact value rounded
 * to the dtype. lgamma and digamma also get an absolute slack of a few ulps of 1 near
 * their zeros (x ~ 1, 2 and 1.46), where a relative bound means nothing. The worst error
 * of each op, kiln's and JAX's (f64), is printed; docs/ops.md ("Math functions") quotes
 * the bounds. */
#include "compare.h"

#include <float.h>
#include <stdint.h>

typedef kiln_value (*unary_fn)(kiln_graph *, kiln_value);

static const struct {
    const char *name;
    unary_fn fn;
    int ulps_f32, ulps_f64; /* the bound, in ulps of JAX's value rounded to the dtype */
    bool near_zero_slack;
} ops[] = {
    {"expm1", kiln_expm1, 1, 1, false},  {"tan", kiln_tan, 1, 2, false},
    {"sinh", kiln_sinh, 2, 2, false},    {"cosh", kiln_cosh, 2, 2, false},
    {"asin", kiln_asin, 1, 1, false},    {"acos", kiln_acos, 1, 1, false},
    {"atan", kiln_atan, 1, 1, false},    {"asinh", kiln_asinh, 2, 2, false},
    {"acosh", kiln_acosh, 2, 2, false},  {"atanh", kiln_atanh, 2, 2, false},
    {"erfc", kiln_erfc, 1, 4, false},    {"erf_inv", kiln_erf_inv, 4, 2, false},
    {"lgamma", kiln_lgamma, 4, 4, true}, {"digamma", kiln_digamma, 2, 4, true},
    {"cbrt", kiln_cbrt, 1, 1, false},    {"ceil", kiln_ceil, 0, 0, false},
    {"round", kiln_round, 0, 0, false},  {"round_half_away", kiln_round_half_away, 0, 0, false},
};
#define N_OPS      (int)(sizeof ops / sizeof ops[0])
#define MAX_POINTS 256

typedef struct points {
    int n;
    double a[MAX_POINTS], b[MAX_POINTS]; /* b: atan2's second operand */
    double want[MAX_POINTS], jax[MAX_POINTS];
} points;

static double parse(const char *s) {
    if (!strcmp(s, "nan")) return NAN;
    if (!strcmp(s, "inf")) return INFINITY;
    if (!strcmp(s, "-inf")) return -INFINITY;
    return strtod(s, NULL);
}

/* The fixture's points of op: x, exact, jax (atan2: a, b, exact, jax). */
static void load(const char *op, points *p) {
    p->n = 0;
    FILE *f = fopen(KILN_SOURCE_DIR "/tests/data/math/functions.txt", "r");
    CHECK_MSG(f != NULL, "cannot open tests/data/math/functions.txt");
    if (!f) return;
    char line[256], name[64], s[4][64];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        int k = sscanf(line, "%63s %63s %63s %63s %63s", name, s[0], s[1], s[2], s[3]);
        if (k < 4 || strcmp(name, op) || p->n == MAX_POINTS) continue;
        int two = k == 5; /* atan2 */
        p->a[p->n] = parse(s[0]);
        p->b[p->n] = two ? parse(s[1]) : 0;
        p->want[p->n] = parse(s[1 + two]);
        p->jax[p->n] = parse(s[2 + two]);
        p->n++;
    }
    fclose(f);
    CHECK_MSG(p->n > 10, "%s: only %d points in the fixture", op, p->n);
}

/* |got - want| in ulps of want rounded to the dtype; -1 for a special that differs (NaN
 * against a number, an infinity against a finite value or the other infinity, -0 against
 * +0); 0 for equal specials. */
static double ulps_off(double got, double want, bool f32) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : -1;
    if (f32) want = (float)want;
    if (isinf(want) || isinf(got)) return got == want ? 0 : -1;
    if (want == 0 && got == 0) return signbit(want) == signbit(got) ? 0 : -1;
    double w = fabs(want);
    int e;
    frexp(w > (f32 ? FLT_MIN : DBL_MIN) ? w : (f32 ? FLT_MIN : DBL_MIN), &e);
    double ulp = ldexp(1.0, e - (f32 ? 24 : 53));
    return fabs(got - want) / ulp;
}

/* Runs y = f(x) (f binary when fn is NULL: atan2) compiled and interpreted in dtype t on
 * the points; returns the worst error in ulps, counting specials that differ. */
static double run(kiln_context *ctx, const char *op, unary_fn fn, const points *p, kiln_dtype t,
                  int bound, bool slack) {
    bool f32 = t == KILN_DTYPE_F32;
    int64_t n = p->n;
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, op, &g);
    kiln_value a = kiln_parameter(g, "a", t, 1, &n), b = kiln_parameter(g, "b", t, 1, &n);
    kiln_value y = fn ? fn(g, a) : kiln_atan2(g, a, b);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    float fa[MAX_POINTS], fb[MAX_POINTS];
    for (int i = 0; i < p->n; i++) fa[i] = (float)p->a[i], fb[i] = (float)p->b[i];
    kiln_array *args[2] = {NULL, NULL};
    kiln_array_create(ctx, t, 1, &n, f32 ? (const void *)fa : (const void *)p->a, &args[0]);
    kiln_array_create(ctx, t, 1, &n, f32 ? (const void *)fb : (const void *)p->b, &args[1]);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    double worst = 0;
    for (int how = 0; how < 2 && e; how++) {
        kiln_array *out = NULL;
        kiln_status s =
            how ? kiln_interpret(g, 2, args, 1, &out) : kiln_executable_run(e, 2, args, 1, &out);
        CHECK_MSG(s == KILN_STATUS_OK, "%s: %s", op, kiln_last_error(ctx));
        if (s) continue;
        double got[MAX_POINTS];
        float gf[MAX_POINTS];
        kiln_array_copy_to_host(out, f32 ? (void *)gf : (void *)got,
                                (size_t)n * (f32 ? sizeof(float) : sizeof(double)));
        for (int i = 0; i < p->n; i++) {
            double v = f32 ? gf[i] : got[i], x = f32 ? fa[i] : p->a[i];
            double off = ulps_off(v, p->want[i], f32);
            /* near a zero of lgamma or digamma: a few ulps of 1 */
            if (slack && off > bound &&
                fabs(v - p->want[i]) <= 4 * (f32 ? FLT_EPSILON : DBL_EPSILON))
                off = 0;
            CHECK_MSG(off >= 0 && off <= bound,
                      "%s %s (%s) at %a (b = %a): %.17g, exact %.17g (%.1f ulps, bound %d)", op,
                      kiln_dtype_name(t), how ? "interpreted" : "compiled", x, p->b[i], v,
                      p->want[i], off, bound);
            if (off > worst) worst = off;
        }
        kiln_array_destroy(out);
    }
    kiln_executable_destroy(e);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
    return worst;
}

static void test_against_jax(void) {
    kiln_context *ctx = test_context();
    points *p = malloc(sizeof *p);
    for (int k = 0; k <= N_OPS; k++) {
        const char *op = k < N_OPS ? ops[k].name : "atan2";
        load(op, p);
        if (p->n <= 10) continue;
        unary_fn fn = k < N_OPS ? ops[k].fn : NULL;
        int b32 = k < N_OPS ? ops[k].ulps_f32 : 1, b64 = k < N_OPS ? ops[k].ulps_f64 : 1;
        bool slack = k < N_OPS && ops[k].near_zero_slack;
        double w32 = run(ctx, op, fn, p, KILN_DTYPE_F32, b32, slack);
        double w64 = run(ctx, op, fn, p, KILN_DTYPE_F64, b64, slack), wj = 0;
        for (int i = 0; i < p->n; i++) {
            double off = ulps_off(p->jax[i], p->want[i], false);
            if (off > wj) wj = off;
        }
        printf("%-22s %3d points: worst %.0f ulps (f32), %.0f ulps (f64); JAX's f64 %.0f\n", op,
               p->n, w32, w64, wj);
    }
    free(p);
    kiln_context_destroy(ctx);
}

/* bf16 and f16 compute in f32 and round once: within one ulp of the dtype of JAX's value
 * (jnp's f32 computation rounded), on a few points of each function. */
static void test_half(void) {
    kiln_context *ctx = test_context();
    const kiln_dtype ts[2] = {KILN_DTYPE_BF16, KILN_DTYPE_F16};
    for (int d = 0; d < 2; d++) {
        int64_t n = 4;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "half", &g);
        kiln_value x = kiln_parameter(g, "x", ts[d], 1, &n);
        kiln_value outs[3] = {kiln_sinh(g, x),
                              kiln_erf_inv(g, kiln_mul(g, x, kiln_scalar(g, ts[d], 0.25))),
                              kiln_lgamma(g, kiln_abs(g, x))};
        CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
        const double xs[4] = {0.5, -1.5, 2.25, 3.0};
        const double want[3][4] = {
            {sinh(0.5), sinh(-1.5), sinh(2.25), sinh(3.0)},
            /* erf_inv(x / 4), jax.lax.erf_inv in f64 */
            {0.11123545184094995, -0.34561711478320656, 0.5490130923685015, 0.8134198475976187},
            {lgamma(0.5), lgamma(1.5), lgamma(2.25), lgamma(3.0)},
        };
        uint16_t h[4];
        kiln_convert_host(ctx, KILN_DTYPE_F64, xs, ts[d], h, 4);
        kiln_array *arg = NULL, *res[3] = {0};
        kiln_array_create(ctx, ts[d], 1, &n, h, &arg);
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e) CHECK_OK(ctx, kiln_executable_run(e, 1, &arg, 3, res));
        for (int o = 0; o < 3 && res[o]; o++) {
            uint16_t r[4];
            double got[4], rounded[4];
            kiln_array_copy_to_host(res[o], r, sizeof r);
            kiln_convert_host(ctx, ts[d], r, KILN_DTYPE_F64, got, 4);
            uint16_t wr[4];
            kiln_convert_host(ctx, KILN_DTYPE_F64, want[o], ts[d], wr, 4);
            kiln_convert_host(ctx, ts[d], wr, KILN_DTYPE_F64, rounded, 4);
            for (int i = 0; i < 4; i++) {
                double ulp = ldexp(fabs(rounded[i]) > 0 ? fabs(rounded[i]) : 1.0,
                                   d ? -10 : -7); /* within a factor 2 of an ulp */
                CHECK_MSG(fabs(got[i] - rounded[i]) <= ulp, "%s output %d at %g: %.9g, want %.9g",
                          kiln_dtype_name(ts[d]), o, xs[i], got[i], rounded[i]);
            }
            kiln_array_destroy(res[o]);
        }
        kiln_executable_destroy(e);
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(ctx);
}

/* kiln's own vectorised expm1, sinh, cosh, asinh, acosh, atanh (prelude math_f32.h and, in
 * f64, c_math.h) on a dense sweep: every binary exponent in each function's range, both
 * signs, 64 mantissas each, plus the neighbourhoods of their thresholds (0.5, 1, 88.5, 709,
 * 4096, 2^28), against the reference interpreter (libm in double, rounded once for f32):
 * within `bound` ulps (f64: one more, the reference's own), NaN, infinities and zeros'
 * signs the reference's. */
static void test_own_sweep(void) {
    kiln_context *ctx = test_context();
    static const struct {
        const char *name;
        unary_fn fn;
        int lo_exp, hi_exp, bound;
    } fs[] = {{"expm1", kiln_expm1, -30, 10, 2}, {"sinh", kiln_sinh, -30, 10, 2},
              {"cosh", kiln_cosh, -30, 10, 2},   {"asinh", kiln_asinh, -30, 40, 2},
              {"acosh", kiln_acosh, 0, 40, 2},   {"atanh", kiln_atanh, -30, 0, 2}};
    static const double edges[] = {0.5, 1.0, 88.5, 88.7, 89.4, 709.0, 710.0, 4096.0, 0x1p28};
    for (int d = 0; d < 2; d++) {
        bool f32 = d == 0;
        kiln_dtype t = f32 ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
        for (size_t k = 0; k < sizeof fs / sizeof *fs; k++) {
            double *xs = malloc(sizeof(double) * 20000);
            int64_t n = 0;
            for (int e = fs[k].lo_exp; e <= fs[k].hi_exp; e++)
                for (int m = 0; m < 64; m++) {
                    double v = ldexp(1.0 + m / 64.0 + m * 1e-4, e);
                    v = f32 ? (double)(float)v : v;
                    xs[n++] = v, xs[n++] = -v;
                }
            for (size_t i = 0; i < sizeof edges / sizeof *edges; i++)
                for (int s = -8; s <= 8; s++) {
                    double v = f32 ? (double)(float)edges[i] : edges[i];
                    for (int j = 0; j < (s < 0 ? -s : s); j++)
                        v = f32 ? nextafterf((float)v, s < 0 ? 0 : INFINITY)
                                : nextafter(v, s < 0 ? 0 : INFINITY);
                    xs[n++] = v, xs[n++] = -v;
                }
            xs[n++] = 0.0, xs[n++] = -0.0, xs[n++] = INFINITY, xs[n++] = -INFINITY, xs[n++] = NAN;
            float *xf = malloc(sizeof(float) * (size_t)n);
            for (int64_t i = 0; i < n; i++) xf[i] = (float)xs[i];
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, fs[k].name, &g);
            kiln_value x = kiln_parameter(g, "x", t, 1, &n), y = fs[k].fn(g, x);
            CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
            kiln_array *arg = NULL, *out[2] = {NULL, NULL};
            kiln_array_create(ctx, t, 1, &n, f32 ? (const void *)xf : (const void *)xs, &arg);
            kiln_executable *e = NULL;
            CHECK_OK(ctx, kiln_compile(g, NULL, &e));
            if (e) CHECK_OK(ctx, kiln_executable_run(e, 1, &arg, 1, &out[0]));
            CHECK_OK(ctx, kiln_interpret(g, 1, &arg, 1, &out[1]));
            size_t sz = (f32 ? sizeof(float) : sizeof(double)) * (size_t)n;
            void *got = malloc(sz), *want = malloc(sz);
            if (out[0] && out[1]) {
                kiln_array_copy_to_host(out[0], got, sz);
                kiln_array_copy_to_host(out[1], want, sz);
                double worst = 0;
                int bad = 0, bound = fs[k].bound + !f32;
                for (int64_t i = 0; i < n; i++) {
                    double gv = f32 ? ((float *)got)[i] : ((double *)got)[i];
                    double wv = f32 ? ((float *)want)[i] : ((double *)want)[i];
                    double u = ulps_off(gv, wv, f32);
                    if ((u < 0 || u > bound) && bad++ < 3)
                        fprintf(stderr, "%s %s(%a): %a, reference %a\n", kiln_dtype_name(t),
                                fs[k].name, xs[i], gv, wv);
                    if (u > worst) worst = u;
                }
                CHECK_MSG(bad == 0, "%s %s: %d of %lld inputs off by more than %d ulps",
                          kiln_dtype_name(t), fs[k].name, bad, (long long)n, bound);
                printf("%-6s %s sweep: %lld inputs, worst %.2f ulps\n", fs[k].name,
                       kiln_dtype_name(t), (long long)n, worst);
            }
            free(got), free(want), free(xs), free(xf);
            kiln_array_destroy(out[0]), kiln_array_destroy(out[1]), kiln_array_destroy(arg);
            kiln_executable_destroy(e);
            kiln_graph_destroy(g);
        }
    }
    kiln_context_destroy(ctx);
}

/* fn over the n f64 values xs, compiled (out[0]) and interpreted (out[1]); false after a
 * failed check. */
static bool f64_both(kiln_context *ctx, const char *name, unary_fn fn, const double *xs, int64_t n,
                     double *out[2]) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, name, &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, &n), y = fn(g, x);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    kiln_array *arg = NULL, *r = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, &n, xs, &arg);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    bool ok = e != NULL;
    for (int how = 0; how < 2 && ok; how++) {
        kiln_status st =
            how ? kiln_interpret(g, 1, &arg, 1, &r) : kiln_executable_run(e, 1, &arg, 1, &r);
        CHECK_OK(ctx, st);
        ok = !st && !kiln_array_copy_to_host(r, out[how], sizeof(double) * (size_t)n);
        kiln_array_destroy(r), r = NULL;
    }
    kiln_executable_destroy(e);
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
    return ok;
}

/* erf_inv in f64 near +-1, at inputs no f32 holds (the fixture's points are all f32s): a
 * review found inf at 1 - 2^-25 (the f32 start rounded to 1) and thousands of ulps near it.
 * Checked independently of kiln: erfc(y) in long double must give back 1 - |x| (exact) to
 * what y's own rounding allows, compiled and interpreted. */
static void test_erf_inv_tail(void) {
    kiln_context *ctx = test_context();
    enum { N = 16 };
    static const double ks[N / 2] = {1, 2, 3, 7, 0x1p20, 0x1p28, 0x1p28 + 1, 0x1p31 - 5};
    double xs[N], got[2][N];
    for (int i = 0; i < N / 2; i++) {
        xs[2 * i] = 1.0 - ks[i] * 0x1p-53;
        xs[2 * i + 1] = -(1.0 - ks[i] * 0x1p-53 * 3);
    }
    if (f64_both(ctx, "erf_inv_tail", kiln_erf_inv, xs, N, (double *[2]){got[0], got[1]}))
        for (int how = 0; how < 2; how++)
            for (int i = 0; i < N; i++) {
                long double c = 1.0L - fabsl((long double)xs[i]),
                            y = fabsl((long double)got[how][i]);
                /* d erfc/dy = -2/sqrt(pi) e^(-y^2): y's ulp moves erfc by 2 y ulp(y) relative */
                long double tol = 4 * 2 * y * y * 0x1p-52L + 1e-18L, back = erfcl(y);
                CHECK_MSG(isfinite(got[how][i]) && signbit(got[how][i]) == signbit(xs[i]) &&
                              fabsl(back - c) <= tol * c,
                          "erf_inv(%a) %s = %.17g: erfc of it %.6Lg, 1 - |x| %.6Lg", xs[i],
                          how ? "interpreted" : "compiled", got[how][i], back, c);
            }
    kiln_context_destroy(ctx);
}

/* digamma at |x| so small that 1/x overflows: -1/x (-inf for x > 0, +inf below), where the
 * compensated recurrence computed inf - inf (a review). */
static void test_digamma_tiny(void) {
    kiln_context *ctx = test_context();
    const double xs[4] = {1e-320, -1e-320, 4e-309, 1e-300};
    double got[2][4];
    if (f64_both(ctx, "digamma_tiny", kiln_digamma, xs, 4, (double *[2]){got[0], got[1]}))
        for (int how = 0; how < 2; how++)
            CHECK_MSG(got[how][0] == -INFINITY && got[how][1] == INFINITY &&
                          got[how][2] == -INFINITY && fabs(got[how][3] + 1e300) <= 1e285,
                      "%s: %g %g %g %g", how ? "interpreted" : "compiled", got[how][0], got[how][1],
                      got[how][2], got[how][3]);
    kiln_context_destroy(ctx);
}

/* Exact gelu in bf16 and f16 is computed in f32 and rounded once: rounding erf to the
 * dtype first made 1 + erf cancel to 0 from x ~ -3.1 (bf16) and -3.6 (f16), where gelu is
 * still -2e-3 (an outside check). Within one ulp of the exact value, 0.5 x erfc(-x/sqrt 2),
 * from x = -4.5 (f16: a subnormal there) to 0, compiled and interpreted. */
static void test_gelu_half(void) {
    kiln_context *ctx = test_context();
    const kiln_dtype ts[2] = {KILN_DTYPE_BF16, KILN_DTYPE_F16};
    enum { N = 10 };
    double xs[N], exact[N];
    for (int i = 0; i < N; i++) {
        xs[i] = -4.5 + 0.5 * i; /* -4.5 ... 0: exact in both dtypes */
        exact[i] = 0.5 * xs[i] * erfc(-xs[i] * M_SQRT1_2);
    }
    for (int d = 0; d < 2; d++) {
        int64_t n = N;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "gelu16", &g);
        kiln_value x = kiln_parameter(g, "x", ts[d], 1, &n), y = kiln_gelu(g, x, false);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        uint16_t h[N], r[N];
        kiln_convert_host(ctx, KILN_DTYPE_F64, xs, ts[d], h, N);
        kiln_array *arg = NULL, *out = NULL;
        kiln_array_create(ctx, ts[d], 1, &n, h, &arg);
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        for (int how = 0; how < 2 && e; how++) {
            CHECK_OK(ctx, how ? kiln_interpret(g, 1, &arg, 1, &out)
                              : kiln_executable_run(e, 1, &arg, 1, &out));
            if (!out) continue;
            double got[N];
            kiln_array_copy_to_host(out, r, sizeof r);
            kiln_convert_host(ctx, ts[d], r, KILN_DTYPE_F64, got, N);
            for (int i = 0; i < N; i++) {
                int e2;
                frexp(exact[i], &e2);
                double ulp = ldexp(1.0, e2 - (d ? 11 : 8));
                if (d && ulp < 0x1p-24) ulp = 0x1p-24; /* f16's subnormals */
                CHECK_MSG(fabs(got[i] - exact[i]) <= ulp, "%s gelu(%g) %s: %.6g, exact %.6g",
                          kiln_dtype_name(ts[d]), xs[i], how ? "interpreted" : "compiled", got[i],
                          exact[i]);
            }
            kiln_array_destroy(out), out = NULL;
        }
        kiln_executable_destroy(e);
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(ctx);
}

/* is_finite: bool, false for the infinities and NaN, in every float dtype; an integer
 * operand is refused, naming the builder. */
static void test_is_finite(void) {
    kiln_context *ctx = test_context();
    int64_t n = 5;
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "is_finite", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value y = kiln_is_finite(g, x);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    const float xs[5] = {1.0f, INFINITY, -INFINITY, NAN, -0.0f};
    kiln_array *arg = NULL, *out = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, xs, &arg);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    if (e) CHECK_OK(ctx, kiln_executable_run(e, 1, &arg, 1, &out));
    uint8_t r[5] = {9, 9, 9, 9, 9};
    if (out) kiln_array_copy_to_host(out, r, sizeof r);
    CHECK_MSG(r[0] == 1 && r[1] == 0 && r[2] == 0 && r[3] == 0 && r[4] == 1,
              "is_finite: %d %d %d %d %d", r[0], r[1], r[2], r[3], r[4]);
    kiln_array_destroy(out), kiln_array_destroy(arg), kiln_executable_destroy(e);
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "bad", &g);
    kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 1, &n);
    kiln_value r2 = kiln_is_finite(g, i);
    CHECK(r2.id == 0);
    CHECK_MSG(strstr(kiln_graph_error(g), "kiln_is_finite") != NULL, "%s", kiln_graph_error(g));
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

int main(void) {
    RUN(test_against_jax);
    RUN(test_half);
    RUN(test_own_sweep);
    RUN(test_erf_inv_tail);
    RUN(test_digamma_tiny);
    RUN(test_gelu_half);
    RUN(test_is_finite);
    return test_summary("test_math_functions");
}
