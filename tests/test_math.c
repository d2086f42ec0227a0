/* test_math.c — the compiled f32 transcendental kernels (exp, tanh, logistic, log, log1p,
 * erf, sin, cos: kiln's own polynomials; erfc in double; rsqrt as 1 / sqrtf) against the reference
 * interpreter (libm in double, rounded once to f32), measured in ulps; and the f64 exp,
 * tanh, logistic, log and log1p, also kiln's own, against long double libm.
 *
 * By default a dense sweep: every exponent of both signs with its first, last and 61
 * spread mantissas, plus the neighbourhoods (+-64 ulps) of every threshold the kernels
 * select on (exp's overflow at ln(FLT_MAX), its subnormal and zero ranges, tanh's switch
 * to the exp form, logistic's change of form at 0, sin's at pi/4 and 2^-12, the floats
 * closest to multiples of pi/2, erfc's subnormal results, its zero and its clamp at 12)
 * — about 50,000 inputs per op. NaN,
 * infinities and zeros, with the sign of a zero, must be the reference's exactly.
 * KILN_TEST_EXHAUSTIVE=1 runs all 2^32 floats instead (minutes). The bounds asserted are
 * the ones docs/architecture.md states. */
#include "compare.h"

#include <float.h>
#include <stdint.h>

enum { N_OPS = 10 };
static const char *const op_names[N_OPS] = {"exp",   "tanh", "logistic", "log", "log1p",
                                            "rsqrt", "erf",  "sin",      "cos", "erfc"};
/* Largest error allowed, in ulps of the correctly rounded result. */
static const int64_t ulp_bound[N_OPS] = {1, 1, 2, 1, 1, 1, 1, 1, 1, 1};

static kiln_context *ctx;

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static unsigned bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Position of a float on the number line in ulps (monotonic in the value, +0 == -0). */
static int64_t ordinal(float f) {
    int32_t i;
    memcpy(&i, &f, 4);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

typedef struct stats {
    int64_t worst[N_OPS];
    float worst_at[N_OPS];
    int64_t mismatched_specials[N_OPS]; /* NaN vs number, inf vs finite, +0 vs -0 */
    int64_t checked;
} stats;

static kiln_executable *exe;
static kiln_graph *graph;

static void build(int64_t n) {
    kiln_graph_create(ctx, "math", &graph);
    kiln_value x = kiln_parameter(graph, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value outs[N_OPS] = {kiln_exp(graph, x), kiln_tanh(graph, x),  kiln_logistic(graph, x),
                              kiln_log(graph, x), kiln_log1p(graph, x), kiln_rsqrt(graph, x),
                              kiln_erf(graph, x), kiln_sin(graph, x),   kiln_cos(graph, x),
                              kiln_erfc(graph, x)};
    CHECK_OK(ctx, kiln_graph_finish(graph, N_OPS, outs));
    CHECK_OK(ctx, kiln_compile(graph, NULL, &exe));
}

/* Runs both sides over xs (n values; the graph was built for n) and folds the errors. */
static void check_chunk(const float *xs, int64_t n, stats *st) {
    kiln_array *arg = NULL, *got[N_OPS] = {0}, *want[N_OPS] = {0};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, xs, &arg));
    CHECK_OK(ctx, kiln_executable_run(exe, 1, &arg, N_OPS, got));
    CHECK_OK(ctx, kiln_interpret(graph, 1, &arg, N_OPS, want));
    float *g = malloc((size_t)n * 4), *w = malloc((size_t)n * 4);
    for (int op = 0; op < N_OPS && got[op] && want[op]; op++) {
        kiln_array_copy_to_host(got[op], g, (size_t)n * 4);
        kiln_array_copy_to_host(want[op], w, (size_t)n * 4);
        for (int64_t i = 0; i < n; i++) {
            /* NaN, infinities and zeros (with their sign: tanh(-0) is -0) must agree */
            if (isnan(g[i]) || isnan(w[i]) || isinf(g[i]) || isinf(w[i]) ||
                (g[i] == 0 && w[i] == 0)) {
                bool same = (isnan(g[i]) && isnan(w[i])) ||
                            (g[i] == w[i] && signbit(g[i]) == signbit(w[i]));
                if (!same && st->mismatched_specials[op]++ < 3)
                    fprintf(stderr, "%s(%.9g = 0x%08x): got %.9g, want %.9g\n", op_names[op],
                            (double)xs[i], bits_of(xs[i]), (double)g[i], (double)w[i]);
                continue;
            }
            int64_t d = llabs(ordinal(g[i]) - ordinal(w[i]));
            if (d > st->worst[op]) st->worst[op] = d, st->worst_at[op] = xs[i];
        }
    }
    st->checked += n;
    free(g), free(w);
    kiln_array_destroy(arg);
    for (int op = 0; op < N_OPS; op++) kiln_array_destroy(got[op]), kiln_array_destroy(want[op]);
}

/* The thresholds the kernels select on, as floats whose neighbourhoods are swept. */
static const float thresholds[] = {88.72283935546875f,
                                   -87.3365478515625f,
                                   -103.97208f,
                                   -104.0f,
                                   88.75f,
                                   -88.72283935546875f,
                                   44.361419677734375f,
                                   -44.361419677734375f,
                                   0.625f,
                                   -0.625f,
                                   0.0f,
                                   1.0f,
                                   -1.0f,
                                   0.3465736f,
                                   -0.3465736f,
                                   FLT_MIN,
                                   0.785398185f,
                                   -0.785398185f,
                                   0x1p-12f,
                                   1.57079637f,
                                   3.14159274f,
                                   4.71238899f,
                                   6.28318548f,
                                   102618.0f,
                                   16367173.0f,
                                   1.0e22f,
                                   9.19454956f, /* erfc: FLT_MIN, its results subnormal above */
                                   10.0541945f, /* erfc: the last nonzero result */
                                   12.0f,       /* erfc's clamp */
                                   -12.0f};

static int64_t dense_inputs(float *xs) {
    int64_t n = 0;
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t e = 0; e < 256; e++)
            for (uint32_t k = 0; k < 64; k++) {
                uint32_t m = k == 63 ? 0x7fffff : k * (0x7fffffu / 62);
                xs[n++] = from_bits(sign << 31 | e << 23 | m);
            }
    for (size_t t = 0; t < sizeof thresholds / sizeof thresholds[0]; t++) {
        float f = thresholds[t];
        for (int d = -64; d <= 64; d++) {
            int32_t i;
            memcpy(&i, &f, 4);
            xs[n++] = from_bits((uint32_t)(i + d));
        }
    }
    return n;
}

static void report(const stats *st, const char *what) {
    printf("%s: %lld inputs per op\n", what, (long long)st->checked);
    for (int op = 0; op < N_OPS; op++) {
        printf("  %-8s max error %lld ulp (at %.9g), special-value mismatches %lld\n", op_names[op],
               (long long)st->worst[op], (double)st->worst_at[op],
               (long long)st->mismatched_specials[op]);
        CHECK_MSG(st->worst[op] <= ulp_bound[op], "%s: %lld ulp > bound %lld", op_names[op],
                  (long long)st->worst[op], (long long)ulp_bound[op]);
        CHECK_MSG(st->mismatched_specials[op] == 0, "%s: %lld NaN/inf/signed-zero mismatches",
                  op_names[op], (long long)st->mismatched_specials[op]);
    }
}

/* exp(88.72283935546875f), the float just above ln(FLT_MAX), overflows to inf; the
 * generated exp used to produce a NaN pattern there (and tanh(+-44.36...) through it). */
static void test_named_values(void) {
    stats st = {0};
    float xs[4] = {88.72283935546875f, 44.361419677734375f, -44.361419677734375f,
                   -88.72283935546875f};
    int64_t n = 4;
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "named", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value outs[3] = {kiln_exp(g, x), kiln_tanh(g, x), kiln_logistic(g, x)};
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    kiln_array *arg = NULL, *got[3] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, xs, &arg);
    CHECK_OK(ctx, kiln_executable_run(e, 1, &arg, 3, got));
    float r[3][4];
    for (int i = 0; i < 3; i++) kiln_array_copy_to_host(got[i], r[i], sizeof r[i]);
    CHECK(isinf(r[0][0]) && r[0][0] > 0);
    CHECK(r[1][1] == 1.0f && r[1][2] == -1.0f);
    CHECK(r[2][3] > 0 && r[2][3] < 1e-38f); /* a subnormal, not 0 or NaN */
    for (int i = 0; i < 3; i++) kiln_array_destroy(got[i]);
    kiln_array_destroy(arg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    (void)st;
}

/* ------------------------------------------------------------------ f64 ---- */

/* exp, tanh, logistic, log and log1p of f64 are kiln's own on the CPU
 * (src/codegen/prelude/c_math.h; logistic on its exp in math_f64.h), so they are measured
 * against long double expl, tanhl, logl and log1pl (64 mantissa bits or more), in
 * ulps of the double nearest to that: every exponent of both signs with 31 spread
 * mantissas, the neighbourhoods (+-64 ulps) of where the kernels change form (exp's
 * overflow, its subnormal results and zero, tanh's switch at 0.55, the clamps), and 2^16
 * pseudo-random arguments in [-40, 40]. */
static int64_t ordinal64(double f) {
    int64_t i;
    memcpy(&i, &f, 8);
    return i < 0 ? -(i & INT64_MAX) : i;
}

static double want64(int op, double x) {
    long double l = (long double)x;
    switch (op) {
    case 0: return (double)expl(l);
    case 1: return (double)tanhl(l);
    case 3: return (double)logl(l);
    case 4: return (double)log1pl(l);
    default: return (double)(x >= 0 ? 1.0L / (1.0L + expl(-l)) : expl(l) / (1.0L + expl(l)));
    }
}

static void test_f64_exp_tanh_logistic(void) {
#if LDBL_MANT_DIG < 64
    test_skip_case("f64 exp, tanh, logistic, log, log1p",
                   "long double has %d mantissa bits, too few for a reference", LDBL_MANT_DIG);
    return;
#endif
    static const char *const names[5] = {"exp", "tanh", "logistic", "log", "log1p"};
    static const int64_t bound[5] = {1, 2, 2, 1, 2};
    static const double edges[] = {709.782712893384,
                                   -708.3964185322641,
                                   -745.1332191019411,
                                   -745.1332191019412,
                                   710.0,
                                   -746.0,
                                   0.55,
                                   -0.55,
                                   1.0,
                                   0.3465735902799727,
                                   0.0,
                                   -20.0};
    int64_t cap = 2 * 2048 * 32 + (int64_t)(sizeof edges / sizeof *edges) * 129 + 65536, n = 0;
    double *xs = malloc((size_t)cap * sizeof *xs);
    for (uint64_t sign = 0; sign < 2; sign++)
        for (uint64_t e = 0; e < 2047; e++) /* every finite exponent, subnormals included */
            for (uint64_t k = 0; k < 32; k++) {
                uint64_t m = k == 31 ? 0xfffffffffffffull : k * (0xfffffffffffffull / 30);
                uint64_t u = sign << 63 | e << 52 | m;
                memcpy(&xs[n++], &u, 8);
            }
    for (size_t t = 0; t < sizeof edges / sizeof *edges; t++)
        for (int d = -64; d <= 64; d++) {
            int64_t i;
            memcpy(&i, &edges[t], 8);
            i += edges[t] == 0 ? (d < 0 ? INT64_MIN - d : d) : d; /* around 0: both signs */
            memcpy(&xs[n++], &i, 8);
        }
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 65536; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        xs[n++] = ((double)(r >> 11) * 0x1p-53 - 0.5) * 80;
    }
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "math64", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, &n);
    kiln_value outs[5] = {kiln_exp(g, x), kiln_tanh(g, x), kiln_logistic(g, x), kiln_log(g, x),
                          kiln_log1p(g, x)};
    CHECK_OK(ctx, kiln_graph_finish(g, 5, outs));
    kiln_executable *e = NULL;
    kiln_array *arg = NULL, *got[5] = {0};
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F64, 1, &n, xs, &arg));
    if (e && arg) CHECK_OK(ctx, kiln_executable_run(e, 1, &arg, 5, got));
    double *v = malloc((size_t)n * sizeof *v);
    for (int op = 0; op < 5 && got[op]; op++) {
        kiln_array_copy_to_host(got[op], v, (size_t)n * sizeof *v);
        int64_t worst = 0, bad_specials = 0;
        double at = 0;
        for (int64_t i = 0; i < n; i++) {
            double w = want64(op, xs[i]);
            if (isnan(v[i]) || isnan(w) || isinf(v[i]) || isinf(w) || (v[i] == 0 && w == 0)) {
                bool same = (isnan(v[i]) && isnan(w)) || (v[i] == w && signbit(v[i]) == signbit(w));
                if (!same && bad_specials++ < 3)
                    fprintf(stderr, "f64 %s(%.17g): got %.17g, want %.17g\n", names[op], xs[i],
                            v[i], w);
                continue;
            }
            int64_t d = llabs(ordinal64(v[i]) - ordinal64(w));
            if (d > worst) worst = d, at = xs[i];
        }
        printf("  f64 %-8s max error %lld ulp (at %.17g) over %lld inputs\n", names[op],
               (long long)worst, at, (long long)n);
        CHECK_MSG(worst <= bound[op], "f64 %s: %lld ulp at %.17g > bound %lld", names[op],
                  (long long)worst, at, (long long)bound[op]);
        CHECK_MSG(bad_specials == 0, "f64 %s: %lld NaN/inf/signed-zero mismatches", names[op],
                  (long long)bad_specials);
    }
    /* the special values themselves */
    double sp[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0}, out[5][5];
    int64_t five = 5;
    kiln_array *sa = NULL, *so[5] = {0};
    kiln_graph *g5 = NULL;
    kiln_executable *e5 = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "math64s", &g5));
    x = kiln_parameter(g5, "x", KILN_DTYPE_F64, 1, &five);
    kiln_value o5[5] = {kiln_exp(g5, x), kiln_tanh(g5, x), kiln_logistic(g5, x), kiln_log(g5, x),
                        kiln_log1p(g5, x)};
    CHECK_OK(ctx, kiln_graph_finish(g5, 5, o5));
    CHECK_OK(ctx, kiln_compile(g5, NULL, &e5));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F64, 1, &five, sp, &sa));
    if (e5 && sa && !kiln_executable_run(e5, 1, &sa, 5, so)) {
        for (int op = 0; op < 5; op++) kiln_array_copy_to_host(so[op], out[op], sizeof out[op]);
        CHECK(isnan(out[0][0]) && isnan(out[1][0]) && isnan(out[2][0]));
        CHECK(isinf(out[0][1]) && out[0][2] == 0 && out[0][3] == 1 && out[0][4] == 1);
        CHECK(out[1][1] == 1 && out[1][2] == -1 && out[1][3] == 0 && signbit(out[1][4]));
        CHECK(out[2][1] == 1 && out[2][2] == 0 && out[2][3] == 0.5 && out[2][4] == 0.5);
        CHECK(isinf(out[3][1]) && out[3][1] > 0 && isnan(out[3][2]));
        CHECK(isinf(out[3][3]) && out[3][3] < 0 && isinf(out[3][4]) && out[3][4] < 0);
        CHECK(isnan(out[4][0]) && isinf(out[4][1]) && out[4][1] > 0 && isnan(out[4][2]));
        CHECK(out[4][3] == 0 && !signbit(out[4][3]) && out[4][4] == 0 && signbit(out[4][4]));
    }
    for (int op = 0; op < 5; op++) kiln_array_destroy(got[op]);
    for (int op = 0; op < 5; op++) kiln_array_destroy(so[op]);
    kiln_array_destroy(arg), kiln_array_destroy(sa);
    kiln_executable_destroy(e), kiln_executable_destroy(e5);
    kiln_graph_destroy(g), kiln_graph_destroy(g5);
    free(xs), free(v);
}

int main(void) {
    char dir[] = "/tmp/kiln_test_math_XXXXXX";
    if (!(ctx = test_private_context(dir))) return 1;
    RUN(test_named_values);
    RUN(test_f64_exp_tanh_logistic);
    const char *ex = getenv("KILN_TEST_EXHAUSTIVE");
    stats st = {0};
    if (ex && *ex && strcmp(ex, "0")) {
        const int64_t chunk = (int64_t)1 << 24;
        build(chunk);
        float *xs = malloc((size_t)chunk * 4);
        for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += (uint64_t)chunk) {
            for (int64_t i = 0; i < chunk; i++) xs[i] = from_bits((uint32_t)(base + (uint64_t)i));
            check_chunk(xs, chunk, &st);
        }
        free(xs);
        report(&st, "all 2^32 floats");
    } else {
        float *xs = malloc(64 * 1024 * sizeof *xs);
        int64_t n = dense_inputs(xs);
        build(n);
        check_chunk(xs, n, &st);
        free(xs);
        report(&st, "dense sweep");
    }
    kiln_executable_destroy(exe);
    kiln_graph_destroy(graph);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_math");
}
