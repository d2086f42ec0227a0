/* test_reference.c — the reference interpreter's numerics, op by op, against values worked
 * out by hand or by plain independent code in this file (never by the interpreter):
 * broadcasting, rank 0, zero-size dims, NaN/Inf, integer wrap and division edge cases,
 * conversions, every shape op, reductions, dot_general/matmul, row indexing, the
 * composites, memory released at last use, and the interpreter's own errors; and
 * kiln_convert_host (the same conversions on the host) against ml_dtypes' and NumPy's bits,
 * every dtype pair against the interpreter's kiln_convert, and its argument errors. */
#include "fault.h"
#include "rng.h"

#include <float.h>
#include <stdint.h>

static kiln_context *C;

/* ---------------------------------------------------------------- helpers ---- */

static kiln_graph *new_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "t", &g));
    return g;
}

/* Elements given as doubles (or int64) stored in dtype t. */
static void pack(kiln_dtype t, const double *x, int64_t n, void *buf) {
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case KILN_DTYPE_F32: ((float *)buf)[i] = (float)x[i]; break;
        case KILN_DTYPE_F64: ((double *)buf)[i] = x[i]; break;
        case KILN_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)x[i]; break;
        case KILN_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)x[i]; break;
        default: ((uint8_t *)buf)[i] = x[i] != 0; break;
        }
    }
}

static void pack_i(kiln_dtype t, const int64_t *x, int64_t n, void *buf) {
    for (int64_t i = 0; i < n; i++) {
        if (t == KILN_DTYPE_I32)
            ((int32_t *)buf)[i] = (int32_t)x[i];
        else
            ((int64_t *)buf)[i] = x[i];
    }
}

static kiln_array *mk(kiln_dtype t, int rank, const int64_t *dims, const void *data) {
    kiln_array *a = NULL;
    CHECK_OK(C, kiln_array_create(C, t, rank, dims, data, &a));
    return a;
}

/* An array of dtype t from doubles. */
static kiln_array *mkd(kiln_dtype t, int rank, const int64_t *dims, const double *x) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    pack(t, x, n, buf);
    kiln_array *a = mk(t, rank, dims, buf);
    free(buf);
    return a;
}

/* Finishes g with its outputs, interprets it on args, then frees args and g. */
static bool run(kiln_graph *g, int nout, const kiln_value *outv, int nargs, kiln_array **args,
                kiln_array **res) {
    kiln_status s = kiln_graph_finish(g, nout, outv);
    CHECK_MSG(s == KILN_STATUS_OK, "kiln_graph_finish: %s", kiln_last_error(C));
    if (s == KILN_STATUS_OK) {
        s = kiln_interpret(g, nargs, args, nout, res);
        CHECK_MSG(s == KILN_STATUS_OK, "kiln_interpret: %s", kiln_last_error(C));
    }
    for (int i = 0; i < nargs; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
    return s == KILN_STATUS_OK;
}

static bool run1(kiln_graph *g, kiln_value out, int nargs, kiln_array **args, kiln_array **res) {
    *res = NULL;
    return run(g, 1, &out, nargs, args, res);
}

static void check_type(const kiln_array *a, kiln_dtype t, int rank, const int64_t *dims) {
    CHECK_MSG(kiln_array_dtype(a) == t, "dtype %s, want %s", kiln_dtype_name(kiln_array_dtype(a)),
              kiln_dtype_name(t));
    CHECK_MSG(kiln_array_rank(a) == rank, "rank %d, want %d", kiln_array_rank(a), rank);
    for (int i = 0; i < rank && kiln_array_rank(a) == rank; i++)
        CHECK_MSG(kiln_array_dim(a, i) == dims[i], "dim %d is %lld, want %lld", i,
                  (long long)kiln_array_dim(a, i), (long long)dims[i]);
}

/* An array's elements as doubles / int64, whatever its dtype. */
static void fetch(const kiln_array *a, double *x) {
    int64_t n = kiln_array_size(a);
    size_t nb = kiln_array_nbytes(a);
    void *buf = malloc(nb ? nb : 1);
    CHECK_OK(C, kiln_array_copy_to_host(a, buf, nb));
    for (int64_t i = 0; i < n; i++) {
        switch (kiln_array_dtype(a)) {
        case KILN_DTYPE_F32: x[i] = ((float *)buf)[i]; break;
        case KILN_DTYPE_F64: x[i] = ((double *)buf)[i]; break;
        case KILN_DTYPE_I32: x[i] = ((int32_t *)buf)[i]; break;
        case KILN_DTYPE_I64: x[i] = (double)((int64_t *)buf)[i]; break;
        default: x[i] = ((uint8_t *)buf)[i]; break;
        }
    }
    free(buf);
}

static void fetch_i(const kiln_array *a, int64_t *x) {
    int64_t n = kiln_array_size(a);
    size_t nb = kiln_array_nbytes(a);
    void *buf = malloc(nb ? nb : 1);
    CHECK_OK(C, kiln_array_copy_to_host(a, buf, nb));
    for (int64_t i = 0; i < n; i++)
        x[i] = kiln_array_dtype(a) == KILN_DTYPE_I32 ? ((int32_t *)buf)[i] : ((int64_t *)buf)[i];
    free(buf);
}

/* Checks every element of a against want (tolerance tol, NaN == NaN). */
static void check_values(const kiln_array *a, const double *want, int64_t n, double tol) {
    CHECK_MSG(kiln_array_size(a) == n, "size %lld, want %lld", (long long)kiln_array_size(a),
              (long long)n);
    if (kiln_array_size(a) != n) return;
    double *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    fetch(a, got);
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(test_close(got[i], want[i], tol, tol), "element %lld is %.17g, want %.17g",
                  (long long)i, got[i], want[i]);
    free(got);
}

static void check_ints(const kiln_array *a, const int64_t *want, int64_t n) {
    CHECK(kiln_array_size(a) == n);
    if (kiln_array_size(a) != n) return;
    int64_t got[64];
    fetch_i(a, got);
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(got[i] == want[i], "element %lld is %lld, want %lld", (long long)i,
                  (long long)got[i], (long long)want[i]);
}

typedef kiln_value (*unop)(kiln_graph *, kiln_value);
typedef kiln_value (*binop)(kiln_graph *, kiln_value, kiln_value);

/* op(x) for a rank-1 x of dtype t; result unpacked as doubles into y. */
static void eval_unary(unop op, kiln_dtype t, const double *x, int64_t n, double *y) {
    kiln_graph *g = new_graph();
    kiln_value p = kiln_parameter(g, "x", t, 1, &n);
    kiln_array *args[1] = {mkd(t, 1, &n, x)}, *r;
    if (run1(g, op(g, p), 1, args, &r)) fetch(r, y);
    kiln_array_destroy(r);
}

/* op(a, b) on rank-1 int arrays of dtype t; result into y. */
static void eval_binary_i(binop op, kiln_dtype t, const int64_t *a, const int64_t *b, int64_t n,
                          int64_t *y) {
    kiln_graph *g = new_graph();
    kiln_value pa = kiln_parameter(g, "a", t, 1, &n), pb = kiln_parameter(g, "b", t, 1, &n);
    int64_t ba[16], bb[16];
    pack_i(t, a, n, ba);
    pack_i(t, b, n, bb);
    kiln_array *args[2] = {mk(t, 1, &n, ba), mk(t, 1, &n, bb)}, *r;
    if (run1(g, op(g, pa, pb), 2, args, &r)) {
        check_type(r, t, 1, &n);
        fetch_i(r, y);
    }
    kiln_array_destroy(r);
}

/* --------------------------------------------------------- elementwise float ---- */

static double r_neg(double x) {
    return -x;
}
static double r_sign(double x) {
    return isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0;
}
static double r_rsqrt(double x) {
    return 1 / sqrt(x);
}
static double r_logistic(double x) {
    return 1 / (1 + exp(-x));
}

static void test_unary_float(void) {
    static const struct {
        unop op;
        double (*ref)(double);
    } cases[] = {
        {kiln_neg, r_neg},   {kiln_abs, fabs},
        {kiln_sign, r_sign}, {kiln_exp, exp},
        {kiln_log, log},     {kiln_log1p, log1p},
        {kiln_sqrt, sqrt},   {kiln_rsqrt, r_rsqrt},
        {kiln_tanh, tanh},   {kiln_logistic, r_logistic},
        {kiln_floor, floor}, {kiln_sin, sin},
        {kiln_cos, cos},     {kiln_erf, erf},
    };
    const double x[] = {-3.5, -1, -0.0, 0.0, 0.25, 1, 2.5, 40, 800, -800, INFINITY, -INFINITY, NAN};
    const int64_t n = sizeof x / sizeof x[0];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double y[16], want;
        eval_unary(cases[c].op, KILN_DTYPE_F64, x, n, y);
        for (int64_t i = 0; i < n; i++) {
            want = cases[c].ref(x[i]);
            CHECK_MSG(test_close(y[i], want, 1e-15, 0), "case %zu, x = %g: %.17g, want %.17g", c,
                      x[i], y[i], want);
        }
        eval_unary(cases[c].op, KILN_DTYPE_F32, x, n, y);
        for (int64_t i = 0; i < n; i++) {
            want = (float)cases[c].ref((float)x[i]); /* f32 in, rounded once to f32 */
            CHECK_MSG(test_close(y[i], want, 2e-7, 0), "f32 case %zu, x = %g: %.9g, want %.9g", c,
                      x[i], y[i], want);
        }
    }
    /* a few by hand */
    double y[16];
    const double s[] = {-0.0, 0.0, NAN, -7, 7};
    eval_unary(kiln_sign, KILN_DTYPE_F32, s, 5, y);
    CHECK(y[0] == 0 && y[1] == 0 && isnan(y[2]) && y[3] == -1 && y[4] == 1);
    const double l[] = {0, -1, 1};
    eval_unary(kiln_log, KILN_DTYPE_F64, l, 3, y);
    CHECK(y[0] == -INFINITY && isnan(y[1]) && y[2] == 0);
    const double r[] = {4, 0, -1};
    eval_unary(kiln_rsqrt, KILN_DTYPE_F32, r, 3, y);
    CHECK(y[0] == 0.5 && y[1] == INFINITY && isnan(y[2]));
    const double e[] = {100, -INFINITY, 0};
    eval_unary(kiln_exp, KILN_DTYPE_F32, e, 3, y); /* e^100 overflows f32 */
    CHECK(y[0] == INFINITY && y[1] == 0 && y[2] == 1);
    const double lg[] = {0, -1000, 1000, NAN};
    eval_unary(kiln_logistic, KILN_DTYPE_F64, lg, 4, y); /* stable at both ends, no NaN */
    CHECK(y[0] == 0.5 && y[1] >= 0 && y[1] < 1e-300 && y[2] == 1 && isnan(y[3]));
    const double f[] = {-3.5, 2.9999, -0.0};
    eval_unary(kiln_floor, KILN_DTYPE_F32, f, 3, y);
    CHECK(y[0] == -4 && y[1] == 2 && y[2] == 0);
}

static double r_add(double a, double b) {
    return a + b;
}
static double r_sub(double a, double b) {
    return a - b;
}
static double r_mul(double a, double b) {
    return a * b;
}
static double r_div(double a, double b) {
    return a / b;
}
static double r_max(double a, double b) {
    return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}
static double r_min(double a, double b) {
    return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}

/* a[2,3] op b[3]: b broadcasts along the rows. */
static void test_binary_float(void) {
    static const struct {
        binop op;
        double (*ref)(double, double);
    } cases[] = {{kiln_add, r_add}, {kiln_sub, r_sub}, {kiln_mul, r_mul}, {kiln_div, r_div},
                 {kiln_pow, pow},   {kiln_max, r_max}, {kiln_min, r_min}, {kiln_rem, fmod}};
    const double a[] = {1, -2, 3.5, 0, INFINITY, NAN}, b[] = {2, 0, -INFINITY};
    int64_t ad[] = {2, 3}, bd[] = {3};
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            kiln_graph *g = new_graph();
            kiln_value pa = kiln_parameter(g, "a", dt, 2, ad),
                       pb = kiln_parameter(g, "b", dt, 1, bd);
            kiln_array *args[2] = {mkd(dt, 2, ad, a), mkd(dt, 1, bd, b)}, *r;
            if (!run1(g, cases[c].op(g, pa, pb), 2, args, &r)) continue;
            check_type(r, dt, 2, ad);
            double want[6];
            for (int i = 0; i < 6; i++) want[i] = cases[c].ref(a[i], b[i % 3]);
            check_values(r, want, 6, 0);
            kiln_array_destroy(r);
        }
    }
    /* by hand: IEEE specials */
    double y[8];
    kiln_graph *g = new_graph();
    int64_t n = 6;
    kiln_value pa = kiln_parameter(g, "a", KILN_DTYPE_F64, 1, &n),
               pb = kiln_parameter(g, "b", KILN_DTYPE_F64, 1, &n);
    const double da[] = {1, -1, 0, INFINITY, 2, -8}, db[] = {0, 0, 0, INFINITY, 10, 1.0 / 3};
    kiln_value outs[2] = {kiln_div(g, pa, pb), kiln_pow(g, pa, pb)};
    kiln_array *args[2] = {mkd(KILN_DTYPE_F64, 1, &n, da), mkd(KILN_DTYPE_F64, 1, &n, db)},
               *res[2] = {0};
    if (run(g, 2, outs, 2, args, res)) {
        fetch(res[0], y);
        CHECK(y[0] == INFINITY && y[1] == -INFINITY && isnan(y[2]) && isnan(y[3]) && y[4] == 0.2);
        fetch(res[1], y);
        CHECK(y[0] == 1 && y[1] == 1 && y[2] == 1 && y[3] == INFINITY && y[4] == 1024 &&
              isnan(y[5]));
    }
    kiln_array_destroy(res[0]), kiln_array_destroy(res[1]);
    /* f32 rem is exact, as jax.lax.rem's (values from JAX 0.10.2): a - trunc(a / b) * b
     * computed in f32 gives 0 for the first */
    int64_t m = 7;
    kiln_graph *h = new_graph();
    kiln_value ra = kiln_parameter(h, "a", KILN_DTYPE_F32, 1, &m),
               rb = kiln_parameter(h, "b", KILN_DTYPE_F32, 1, &m);
    const double xa[] = {1e10, -0.0, 5.5, -5.5, INFINITY, 1, 3},
                 xb[] = {3.3, 2, 0, 2, 2, INFINITY, -2};
    kiln_array *rargs[2] = {mkd(KILN_DTYPE_F32, 1, &m, xa), mkd(KILN_DTYPE_F32, 1, &m, xb)}, *rr;
    if (run1(h, kiln_rem(h, ra, rb), 2, rargs, &rr)) {
        fetch(rr, y);
        CHECK(y[0] == (double)0.29611063f && y[1] == 0 && signbit(y[1]) && isnan(y[2]) &&
              y[3] == -1.5 && isnan(y[4]) && y[5] == 1 && y[6] == 1);
        kiln_array_destroy(rr);
    }
}

/* NumPy broadcasting: [2,1] with [1,3], a rank-0 operand on either side, zero-size. */
static void test_broadcasting(void) {
    int64_t cd[] = {2, 1}, rd[] = {1, 3}, od[] = {2, 3};
    const double col[] = {10, 20}, row[] = {1, 2, 3}, s = 100;
    kiln_graph *g = new_graph();
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F32, 2, cd),
               r = kiln_parameter(g, "r", KILN_DTYPE_F32, 2, rd);
    kiln_value sc = kiln_parameter(g, "s", KILN_DTYPE_F32, 0, NULL);
    kiln_value outs[3] = {kiln_add(g, c, r), kiln_sub(g, sc, r), kiln_mul(g, c, sc)};
    kiln_array *args[3] = {mkd(KILN_DTYPE_F32, 2, cd, col), mkd(KILN_DTYPE_F32, 2, rd, row),
                           mkd(KILN_DTYPE_F32, 0, NULL, &s)};
    kiln_array *res[3] = {0};
    if (run(g, 3, outs, 3, args, res)) {
        check_type(res[0], KILN_DTYPE_F32, 2, od);
        check_values(res[0], (const double[]){11, 12, 13, 21, 22, 23}, 6, 0);
        check_type(res[1], KILN_DTYPE_F32, 2, rd);
        check_values(res[1], (const double[]){99, 98, 97}, 3, 0);
        check_type(res[2], KILN_DTYPE_F32, 2, cd);
        check_values(res[2], (const double[]){1000, 2000}, 2, 0);
    }
    for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);

    /* rank 0 with rank 0, and a zero-size dim */
    g = new_graph();
    int64_t zd[] = {2, 0}, one[] = {1};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F64, 0, NULL),
               b = kiln_parameter(g, "b", KILN_DTYPE_F64, 0, NULL);
    kiln_value z = kiln_parameter(g, "z", KILN_DTYPE_F64, 2, zd),
               o = kiln_parameter(g, "o", KILN_DTYPE_F64, 1, one);
    kiln_value outs2[2] = {kiln_mul(g, a, b), kiln_add(g, z, o)};
    const double av = -1.5, bv = 4, ov = 1;
    kiln_array *args2[4] = {mkd(KILN_DTYPE_F64, 0, NULL, &av), mkd(KILN_DTYPE_F64, 0, NULL, &bv),
                            mk(KILN_DTYPE_F64, 2, zd, NULL), mkd(KILN_DTYPE_F64, 1, one, &ov)};
    if (run(g, 2, outs2, 4, args2, res)) {
        check_type(res[0], KILN_DTYPE_F64, 0, NULL);
        check_values(res[0], (const double[]){-6}, 1, 0);
        check_type(res[1], KILN_DTYPE_F64, 2, zd);
        CHECK(kiln_array_nbytes(res[1]) == 0);
    }
    kiln_array_destroy(res[0]), kiln_array_destroy(res[1]);
}

/* ----------------------------------------------------------- elementwise int ---- */

static void test_int_arith_i32(void) {
    const kiln_dtype t = KILN_DTYPE_I32;
    const int64_t MX = INT32_MAX, MN = INT32_MIN;
    int64_t y[16];
    {
        const int64_t a[] = {MX, MN, 65536, 100000, -5, 0}, b[] = {1, 1, 65536, 100000, 3, 0};
        eval_binary_i(kiln_add, t, a, b, 6, y);
        const int64_t add[] = {MN, MN + 1, 131072, 200000, -2, 0};
        for (int i = 0; i < 6; i++) CHECK_MSG(y[i] == add[i], "add %d: %lld", i, (long long)y[i]);
        eval_binary_i(kiln_sub, t, a, b, 6, y);
        const int64_t sub[] = {MX - 1, MX, 0, 0, -8, 0}; /* MN - 1 wraps to MX */
        for (int i = 0; i < 6; i++) CHECK_MSG(y[i] == sub[i], "sub %d: %lld", i, (long long)y[i]);
        eval_binary_i(kiln_mul, t, a, b, 6, y);
        /* 2^16 * 2^16 = 2^32 wraps to 0; 10^10 mod 2^32 = 1410065408 */
        const int64_t mul[] = {MX, MN, 0, 1410065408, -15, 0};
        for (int i = 0; i < 6; i++) CHECK_MSG(y[i] == mul[i], "mul %d: %lld", i, (long long)y[i]);
        eval_binary_i(kiln_max, t, a, b, 6, y);
        const int64_t mx[] = {MX, 1, 65536, 100000, 3, 0};
        for (int i = 0; i < 6; i++) CHECK(y[i] == mx[i]);
        eval_binary_i(kiln_min, t, a, b, 6, y);
        const int64_t mn[] = {1, MN, 65536, 100000, -5, 0};
        for (int i = 0; i < 6; i++) CHECK(y[i] == mn[i]);
    }
    {
        /* truncating division; x/0 = -1; MIN/-1 = MIN (XLA) */
        const int64_t a[] = {7, -7, 7, -7, 5, 0, MN, MN, MX}, b[] = {2, 2, -2, -2, 0, 0, -1, 1, -1};
        eval_binary_i(kiln_div, t, a, b, 9, y);
        const int64_t d[] = {3, -3, -3, 3, -1, -1, MN, MN, -MX};
        for (int i = 0; i < 9; i++) CHECK_MSG(y[i] == d[i], "div %d: %lld", i, (long long)y[i]);
    }
    {
        /* jax.lax.rem: the dividend's sign; x % 0 = x; MIN % -1 = 0 (XLA) */
        const int64_t a[] = {7, -7, 7, -7, 5, 0, MN, MN, MX}, b[] = {2, 2, -2, -2, 0, 0, -1, 1, -1};
        eval_binary_i(kiln_rem, t, a, b, 9, y);
        const int64_t r[] = {1, -1, 1, -1, 5, 0, 0, 0, 0};
        for (int i = 0; i < 9; i++) CHECK_MSG(y[i] == r[i], "rem %d: %lld", i, (long long)y[i]);
    }
    {
        /* pow by squaring with wrap; negative exponents */
        const int64_t a[] = {2, 2, 3, -2, 0, 3, 1, -1, -1, 0, 2, -7},
                      b[] = {10, 31, 21, 3, 0, -1, -5, -3, -2, -1, 32, 11};
        eval_binary_i(kiln_pow, t, a, b, 12, y);
        const int64_t p[] = {1024, MN, 1870418611, -8, 1, 0, 1, -1, 1, 0, 0, -1977326743};
        for (int i = 0; i < 12; i++) CHECK_MSG(y[i] == p[i], "pow %d: %lld", i, (long long)y[i]);
    }
    {
        int64_t n = 5;
        const double x[] = {(double)MN, -3, 0, 4, (double)MX};
        double r[8];
        eval_unary(kiln_neg, t, x, n, r);
        CHECK(r[0] == MN && r[1] == 3 && r[2] == 0 && r[3] == -4 && r[4] == -MX);
        eval_unary(kiln_abs, t, x, n, r);
        CHECK(r[0] == MN && r[1] == 3 && r[2] == 0 && r[3] == 4 && r[4] == MX);
        eval_unary(kiln_sign, t, x, n, r);
        CHECK(r[0] == -1 && r[1] == -1 && r[2] == 0 && r[3] == 1 && r[4] == 1);
    }
}

static void test_int_arith_i64(void) {
    const kiln_dtype t = KILN_DTYPE_I64;
    const int64_t MX = INT64_MAX, MN = INT64_MIN;
    int64_t y[16];
    const int64_t a[] = {MX, MN, 3037000500, MX, 5, MN, -9}, b[] = {1, -1, 3037000500, 2, 0, 1, 4};
    eval_binary_i(kiln_add, t, a, b, 7, y);
    const int64_t add[] = {MN, MX, 6074001000, MN + 1, 5, MN + 1, -5};
    for (int i = 0; i < 7; i++) CHECK_MSG(y[i] == add[i], "add %d: %lld", i, (long long)y[i]);
    eval_binary_i(kiln_sub, t, a, b, 7, y);
    const int64_t sub[] = {MX - 1, MN + 1, 0, MX - 2, 5, MX, -13};
    for (int i = 0; i < 7; i++) CHECK_MSG(y[i] == sub[i], "sub %d: %lld", i, (long long)y[i]);
    eval_binary_i(kiln_mul, t, a, b, 7, y);
    /* 3037000500^2 = 9223372037000250000 wraps to -9223372036709301616; MAX*2 = -2 */
    const int64_t mul[] = {MX, MN, -9223372036709301616, -2, 0, MN, -36};
    for (int i = 0; i < 7; i++) CHECK_MSG(y[i] == mul[i], "mul %d: %lld", i, (long long)y[i]);
    eval_binary_i(kiln_div, t, a, b, 7, y);
    const int64_t div[] = {MX, MN, 1, MX / 2, -1, MN, -2};
    for (int i = 0; i < 7; i++) CHECK_MSG(y[i] == div[i], "div %d: %lld", i, (long long)y[i]);
    const int64_t pa[] = {2, 2, 3, -2, 10}, pb[] = {63, 64, 40, 63, -2};
    eval_binary_i(kiln_pow, t, pa, pb, 5, y);
    const int64_t pw[] = {MN, 0, -6289078614652622815, MN, 0};
    for (int i = 0; i < 5; i++) CHECK_MSG(y[i] == pw[i], "pow %d: %lld", i, (long long)y[i]);

    /* neg/abs of MIN wrap to MIN: checked exactly through an int64 read-back */
    kiln_graph *g = new_graph();
    int64_t n = 3;
    kiln_value p = kiln_parameter(g, "x", t, 1, &n);
    kiln_value outs[2] = {kiln_neg(g, p), kiln_abs(g, p)};
    const int64_t x[] = {MN, -1, MX};
    kiln_array *args[1] = {mk(t, 1, &n, x)}, *res[2] = {0};
    if (run(g, 2, outs, 1, args, res)) {
        check_ints(res[0], (const int64_t[]){MN, 1, -MX}, 3);
        check_ints(res[1], (const int64_t[]){MN, 1, MX}, 3);
    }
    kiln_array_destroy(res[0]), kiln_array_destroy(res[1]);
}

/* ------------------------------------------------- compare, select, logic ---- */

static void test_compare_select_logic(void) {
    int64_t n = 5;
    const double a[] = {1, NAN, NAN, -INFINITY, 2}, b[] = {1, 1, NAN, -INFINITY, 3};
    const kiln_cmp dirs[] = {KILN_CMP_EQ, KILN_CMP_NE, KILN_CMP_LT,
                             KILN_CMP_LE, KILN_CMP_GT, KILN_CMP_GE};
    /* by hand: rows are EQ NE LT LE GT GE; NaN is only NE */
    const double want[6][5] = {{1, 0, 0, 1, 0}, {0, 1, 1, 0, 1}, {0, 0, 0, 0, 1},
                               {1, 0, 0, 1, 1}, {0, 0, 0, 0, 0}, {1, 0, 0, 1, 0}};
    for (int d = 0; d < 6; d++) {
        kiln_graph *g = new_graph();
        kiln_value pa = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, &n),
                   pb = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, &n);
        kiln_array *args[2] = {mkd(KILN_DTYPE_F32, 1, &n, a), mkd(KILN_DTYPE_F32, 1, &n, b)}, *r;
        if (run1(g, kiln_compare(g, pa, pb, dirs[d]), 2, args, &r)) {
            check_type(r, KILN_DTYPE_BOOL, 1, &n);
            check_values(r, want[d], 5, 0);
        }
        kiln_array_destroy(r);
    }
    /* integers compare exactly even where doubles would not (2^53 + 1 vs 2^53) */
    kiln_graph *g = new_graph();
    int64_t two = 2;
    kiln_value pa = kiln_parameter(g, "a", KILN_DTYPE_I64, 1, &two),
               pb = kiln_parameter(g, "b", KILN_DTYPE_I64, 1, &two);
    const int64_t ia[] = {9007199254740993, INT64_MIN}, ib[] = {9007199254740992, INT64_MAX};
    kiln_array *args[2] = {mk(KILN_DTYPE_I64, 1, &two, ia), mk(KILN_DTYPE_I64, 1, &two, ib)}, *r;
    if (run1(g, kiln_compare(g, pa, pb, KILN_CMP_GT), 2, args, &r))
        check_values(r, (const double[]){1, 0}, 2, 0);
    kiln_array_destroy(r);

    /* select(pred[3], on_true[2,3], on_false scalar) broadcast together; and/or/not */
    g = new_graph();
    int64_t pd[] = {3}, td[] = {2, 3};
    kiln_value pred = kiln_parameter(g, "p", KILN_DTYPE_BOOL, 1, pd);
    kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_BOOL, 1, pd);
    kiln_value on_t = kiln_parameter(g, "t", KILN_DTYPE_I32, 2, td);
    kiln_value on_f = kiln_scalar(g, KILN_DTYPE_I32, -1);
    kiln_value outs[4] = {kiln_select(g, pred, on_t, on_f), kiln_logical_and(g, pred, q),
                          kiln_logical_or(g, pred, q), kiln_logical_not(g, pred)};
    const uint8_t pv[] = {1, 0, 1}, qv[] = {1, 1, 0};
    const int32_t tv[] = {1, 2, 3, 4, 5, 6};
    kiln_array *args3[3] = {mk(KILN_DTYPE_BOOL, 1, pd, pv), mk(KILN_DTYPE_BOOL, 1, pd, qv),
                            mk(KILN_DTYPE_I32, 2, td, tv)};
    kiln_array *res[4] = {0};
    if (run(g, 4, outs, 3, args3, res)) {
        check_type(res[0], KILN_DTYPE_I32, 2, td);
        check_values(res[0], (const double[]){1, -1, 3, 4, -1, 6}, 6, 0);
        check_values(res[1], (const double[]){1, 0, 0}, 3, 0);
        check_values(res[2], (const double[]){1, 1, 1}, 3, 0);
        check_values(res[3], (const double[]){0, 1, 0}, 3, 0);
    }
    for (int i = 0; i < 4; i++) kiln_array_destroy(res[i]);
}

/* ---------------------------------------------------------------- convert ---- */

static kiln_array *convert1(kiln_dtype from, kiln_dtype to, int64_t n, const void *data) {
    kiln_graph *g = new_graph();
    kiln_value p = kiln_parameter(g, "x", from, 1, &n);
    kiln_array *args[1] = {mk(from, 1, &n, data)}, *r;
    if (!run1(g, kiln_convert(g, p, to), 1, args, &r)) return NULL;
    check_type(r, to, 1, &n);
    return r;
}

static void test_convert(void) {
    const double MX = INT32_MAX, MN = INT32_MIN;
    /* float -> int: truncate toward zero, saturate, NaN -> 0 */
    const double f[] = {1.9,      -1.9,      3e9,          -3e9,          NAN,
                        INFINITY, -INFINITY, 2147483647.5, -2147483648.9, -0.5};
    kiln_array *r = convert1(KILN_DTYPE_F64, KILN_DTYPE_I32, 10, f);
    if (r) check_values(r, (const double[]){1, -1, MX, MN, 0, MX, MN, MX, MN, 0}, 10, 0);
    kiln_array_destroy(r);
    const double big[] = {1e19, -1e19,     9223372036854775808.0, -9223372036854775808.0,
                          NAN,  1e15 + 0.5};
    if ((r = convert1(KILN_DTYPE_F64, KILN_DTYPE_I64, 6, big)))
        check_ints(
            r, (const int64_t[]){INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 0, 1000000000000000},
            6);
    kiln_array_destroy(r);
    const float ff[] = {16777216.0f, -2.5f, 3e10f};
    if ((r = convert1(KILN_DTYPE_F32, KILN_DTYPE_I32, 3, ff)))
        check_values(r, (const double[]){16777216, -2, MX}, 3, 0);
    kiln_array_destroy(r);

    /* anything -> bool is x != 0 (NaN is nonzero) */
    const float fb[] = {0.0f, -0.0f, 0.5f, NAN, -INFINITY};
    if ((r = convert1(KILN_DTYPE_F32, KILN_DTYPE_BOOL, 5, fb)))
        check_values(r, (const double[]){0, 0, 1, 1, 1}, 5, 0);
    kiln_array_destroy(r);
    const int32_t ib[] = {0, -7, 1};
    if ((r = convert1(KILN_DTYPE_I32, KILN_DTYPE_BOOL, 3, ib)))
        check_values(r, (const double[]){0, 1, 1}, 3, 0);
    kiln_array_destroy(r);
    /* bool -> number is 0/1 */
    const uint8_t bv[] = {1, 0, 1};
    if ((r = convert1(KILN_DTYPE_BOOL, KILN_DTYPE_F32, 3, bv)))
        check_values(r, (const double[]){1, 0, 1}, 3, 0);
    kiln_array_destroy(r);
    if ((r = convert1(KILN_DTYPE_BOOL, KILN_DTYPE_I64, 3, bv)))
        check_ints(r, (const int64_t[]){1, 0, 1}, 3);
    kiln_array_destroy(r);

    /* i64 -> i32 keeps the low 32 bits */
    const int64_t wide[] = {(int64_t)1 << 32 | 5, (int64_t)1 << 31, -1, INT64_MIN};
    if ((r = convert1(KILN_DTYPE_I64, KILN_DTYPE_I32, 4, wide)))
        check_ints(r, (const int64_t[]){5, INT32_MIN, -1, 0}, 4);
    kiln_array_destroy(r);
    /* i64 -> f32 rounds once: 2^60 + 2^36 + 1 is just above a tie, so it rounds up;
     * through double it would first land on the tie and then round to even (2^60). */
    const int64_t iv[] = {((int64_t)1 << 60) + ((int64_t)1 << 36) + 1, -3, 16777217};
    if ((r = convert1(KILN_DTYPE_I64, KILN_DTYPE_F32, 3, iv))) {
        double y[3];
        fetch(r, y);
        CHECK(y[0] == ldexp(1, 60) + ldexp(1, 37));
        CHECK(y[1] == -3 && y[2] == 16777216); /* 2^24 + 1 ties to even */
    }
    kiln_array_destroy(r);
    /* f64 -> f32 rounds (overflow to inf, underflow to 0); f32 -> f64 is exact */
    const double d[] = {1e300, -1e300, 1e-50, 0.1, NAN};
    if ((r = convert1(KILN_DTYPE_F64, KILN_DTYPE_F32, 5, d)))
        check_values(r, (const double[]){INFINITY, -INFINITY, 0, (float)0.1, NAN}, 5, 0);
    kiln_array_destroy(r);
    const float fs[] = {0.1f, -INFINITY};
    if ((r = convert1(KILN_DTYPE_F32, KILN_DTYPE_F64, 2, fs)))
        check_values(r, (const double[]){(double)0.1f, -INFINITY}, 2, 0);
    kiln_array_destroy(r);
    const int32_t i32s[] = {INT32_MIN, 7};
    if ((r = convert1(KILN_DTYPE_I32, KILN_DTYPE_F64, 2, i32s)))
        check_values(r, (const double[]){MN, 7}, 2, 0);
    kiln_array_destroy(r);
}

/* -------------------------------------------------------------- sources ---- */

static void test_sources(void) {
    kiln_graph *g = new_graph();
    int64_t d23[] = {2, 3}, d322[] = {3, 2, 2};
    const float cdata[] = {1.5f, -2, 0, 4, 5, 6};
    kiln_value outs[5] = {
        kiln_iota(g, KILN_DTYPE_I32, 2, d23, 1), kiln_iota(g, KILN_DTYPE_I64, 2, d23, 0),
        kiln_iota(g, KILN_DTYPE_F32, 3, d322, -2), kiln_constant(g, KILN_DTYPE_F32, 2, d23, cdata),
        kiln_full(g, KILN_DTYPE_F64, 2, d23, -0.25)};
    kiln_array *res[5] = {0};
    if (run(g, 5, outs, 0, NULL, res)) {
        check_type(res[0], KILN_DTYPE_I32, 2, d23);
        check_values(res[0], (const double[]){0, 1, 2, 0, 1, 2}, 6, 0);
        check_values(res[1], (const double[]){0, 0, 0, 1, 1, 1}, 6, 0);
        check_type(res[2], KILN_DTYPE_F32, 3, d322);
        check_values(res[2], (const double[]){0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}, 12, 0);
        check_values(res[3], (const double[]){1.5, -2, 0, 4, 5, 6}, 6, 0);
        check_values(res[4], (const double[]){-0.25, -0.25, -0.25, -0.25, -0.25, -0.25}, 6, 0);
    }
    for (int i = 0; i < 5; i++) kiln_array_destroy(res[i]);
}

/* Outputs that are a parameter, a constant, or one node twice are independent arrays. */
static void test_output_aliasing(void) {
    kiln_graph *g = new_graph();
    int64_t n = 3;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    const float cv[] = {7, 8, 9};
    kiln_value c = kiln_constant(g, KILN_DTYPE_F32, 1, &n, cv);
    kiln_value y = kiln_add(g, x, c);
    kiln_value outs[6] = {x, y, y, c, x, c};
    const double xv[] = {1, 2, 3};
    kiln_array *args[1] = {mkd(KILN_DTYPE_F32, 1, &n, xv)};
    kiln_array *argx = args[0];
    kiln_array *res[6] = {0};
    kiln_status s = kiln_graph_finish(g, 6, outs);
    CHECK_OK(C, s);
    if (!s) CHECK_OK(C, kiln_interpret(g, 1, args, 6, res));
    for (int i = 0; i < 6; i++) {
        CHECK(res[i] && res[i] != argx);
        for (int j = 0; j < i; j++) CHECK(res[i] != res[j]);
    }
    if (res[5]) {
        kiln_array_destroy(argx); /* outputs do not borrow the argument */
        check_values(res[0], (const double[]){1, 2, 3}, 3, 0);
        check_values(res[4], (const double[]){1, 2, 3}, 3, 0);
        check_values(res[1], (const double[]){8, 10, 12}, 3, 0);
        check_values(res[2], (const double[]){8, 10, 12}, 3, 0);
        check_values(res[3], (const double[]){7, 8, 9}, 3, 0);
        kiln_graph_destroy(g); /* ... nor the constant */
        g = NULL;
        check_values(res[5], (const double[]){7, 8, 9}, 3, 0);
    } else {
        kiln_array_destroy(argx);
    }
    kiln_graph_destroy(g);
    for (int i = 0; i < 6; i++) kiln_array_destroy(res[i]);
}

/* --------------------------------------------------------------- shape ops ---- */

static void test_broadcast_in_dim(void) {
    kiln_graph *g = new_graph();
    int64_t d3[] = {3}, d2[] = {2}, d13[] = {1, 3}, o23[] = {2, 3}, o423[] = {4, 2, 3},
            o22[] = {2, 2};
    int64_t d0[] = {0}, o20[] = {2, 0}, d31[] = {3, 1}, o234[] = {2, 3, 4};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_I32, 1, d3),
               b = kiln_parameter(g, "b", KILN_DTYPE_I32, 1, d2);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_I32, 2, d13),
               s = kiln_parameter(g, "s", KILN_DTYPE_I32, 0, NULL);
    kiln_value z = kiln_parameter(g, "z", KILN_DTYPE_I32, 1, d0),
               e = kiln_parameter(g, "e", KILN_DTYPE_I32, 2, d31);
    kiln_value outs[6] = {
        kiln_broadcast_in_dim(g, a, 2, o23, (const int[]){1}),
        kiln_broadcast_in_dim(g, b, 2, o23, (const int[]){0}),
        kiln_broadcast_in_dim(g, c, 3, o423, (const int[]){1, 2}), /* size-1 axis repeats */
        kiln_broadcast_in_dim(g, s, 2, o22, NULL),
        kiln_broadcast_in_dim(g, z, 2, o20, (const int[]){1}),
        kiln_broadcast_to(g, e, 3, o234),
    };
    const int32_t av[] = {1, 2, 3}, bv[] = {10, 20}, cv[] = {4, 5, 6}, sv[] = {9}, ev[] = {1, 2, 3};
    kiln_array *args[6] = {mk(KILN_DTYPE_I32, 1, d3, av),   mk(KILN_DTYPE_I32, 1, d2, bv),
                           mk(KILN_DTYPE_I32, 2, d13, cv),  mk(KILN_DTYPE_I32, 0, NULL, sv),
                           mk(KILN_DTYPE_I32, 1, d0, NULL), mk(KILN_DTYPE_I32, 2, d31, ev)};
    kiln_array *res[6] = {0};
    if (run(g, 6, outs, 6, args, res)) {
        check_values(res[0], (const double[]){1, 2, 3, 1, 2, 3}, 6, 0);
        check_values(res[1], (const double[]){10, 10, 10, 20, 20, 20}, 6, 0);
        check_type(res[2], KILN_DTYPE_I32, 3, o423);
        double want[24];
        for (int i = 0; i < 24; i++) want[i] = 4 + i % 3;
        check_values(res[2], want, 24, 0);
        check_values(res[3], (const double[]){9, 9, 9, 9}, 4, 0);
        check_type(res[4], KILN_DTYPE_I32, 2, o20);
        check_type(res[5], KILN_DTYPE_I32, 3, o234);
        for (int i = 0; i < 24; i++) want[i] = 1 + (i / 4) % 3; /* [3,1] -> [.,3,4]: by row */
        check_values(res[5], want, 24, 0);
    }
    for (int i = 0; i < 6; i++) kiln_array_destroy(res[i]);
}

static void test_reshape_transpose(void) {
    kiln_graph *g = new_graph();
    int64_t d23[] = {2, 3}, d32[] = {3, 2}, dm1[] = {-1}, d234[] = {2, 3, 4}, d6[] = {6};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d23);
    kiln_value t3 = kiln_parameter(g, "t", KILN_DTYPE_I64, 3, d234);
    kiln_value s = kiln_parameter(g, "s", KILN_DTYPE_F32, 0, NULL);
    kiln_value outs[5] = {kiln_reshape(g, x, 2, d32), kiln_reshape(g, x, 1, dm1),
                          kiln_transpose(g, x, (const int[]){1, 0}),
                          kiln_transpose(g, t3, (const int[]){2, 0, 1}),
                          kiln_transpose(g, s, NULL)};
    const double xv[] = {1, 2, 3, 4, 5, 6}, sv = 3;
    int64_t tv[24];
    for (int i = 0; i < 24; i++) tv[i] = 100 + i;
    kiln_array *args[3] = {mkd(KILN_DTYPE_F32, 2, d23, xv), mk(KILN_DTYPE_I64, 3, d234, tv),
                           mkd(KILN_DTYPE_F32, 0, NULL, &sv)};
    kiln_array *res[5] = {0};
    if (run(g, 5, outs, 3, args, res)) {
        check_type(res[0], KILN_DTYPE_F32, 2, d32);
        check_values(res[0], xv, 6, 0);
        check_type(res[1], KILN_DTYPE_F32, 1, d6);
        check_values(res[1], xv, 6, 0);
        check_type(res[2], KILN_DTYPE_F32, 2, d32);
        check_values(res[2], (const double[]){1, 4, 2, 5, 3, 6}, 6, 0);
        /* out[i][j][k] = t[j][k][i], out shape [4,2,3] */
        int64_t od[] = {4, 2, 3}, want[24];
        check_type(res[3], KILN_DTYPE_I64, 3, od);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 2; j++)
                for (int k = 0; k < 3; k++) want[(i * 2 + j) * 3 + k] = tv[(j * 3 + k) * 4 + i];
        int64_t got[24];
        fetch_i(res[3], got);
        for (int i = 0; i < 24; i++) CHECK_MSG(got[i] == want[i], "transpose %d", i);
        check_type(res[4], KILN_DTYPE_F32, 0, NULL);
        check_values(res[4], &sv, 1, 0);
    }
    for (int i = 0; i < 5; i++) kiln_array_destroy(res[i]);
}

static void test_slice(void) {
    kiln_graph *g = new_graph();
    int64_t d45[] = {4, 5}, d10[] = {10};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d45),
               v = kiln_parameter(g, "v", KILN_DTYPE_I32, 1, d10);
    kiln_value outs[4] = {
        kiln_slice(g, x, (const int64_t[]){1, 0}, (const int64_t[]){4, 5}, (const int64_t[]){2, 2}),
        kiln_slice(g, x, (const int64_t[]){0, 1}, (const int64_t[]){2, 3}, NULL),
        kiln_slice(g, x, (const int64_t[]){2, 2}, (const int64_t[]){2, 5}, NULL), /* empty */
        kiln_slice(g, v, (const int64_t[]){1}, (const int64_t[]){10}, (const int64_t[]){3}),
    };
    double xv[20];
    for (int i = 0; i < 20; i++) xv[i] = i;
    const int32_t vv[] = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90};
    kiln_array *args[2] = {mkd(KILN_DTYPE_F64, 2, d45, xv), mk(KILN_DTYPE_I32, 1, d10, vv)};
    kiln_array *res[4] = {0};
    if (run(g, 4, outs, 2, args, res)) {
        check_type(res[0], KILN_DTYPE_F64, 2, (const int64_t[]){2, 3});
        check_values(res[0], (const double[]){5, 7, 9, 15, 17, 19}, 6, 0);
        check_values(res[1], (const double[]){1, 2, 6, 7}, 4, 0);
        check_type(res[2], KILN_DTYPE_F64, 2, (const int64_t[]){0, 3});
        check_values(res[3], (const double[]){10, 40, 70}, 3, 0);
    }
    for (int i = 0; i < 4; i++) kiln_array_destroy(res[i]);
}

static void test_concatenate(void) {
    kiln_graph *g = new_graph();
    int64_t d21[] = {2, 1}, d22[] = {2, 2}, d20[] = {2, 0}, d12[] = {1, 2}, d02[] = {0, 2};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_I32, 2, d21),
               b = kiln_parameter(g, "b", KILN_DTYPE_I32, 2, d22);
    kiln_value e = kiln_parameter(g, "e", KILN_DTYPE_I32, 2, d20),
               r = kiln_parameter(g, "r", KILN_DTYPE_I32, 2, d12);
    kiln_value z = kiln_parameter(g, "z", KILN_DTYPE_I32, 2, d02);
    /* three along axis 1 (one empty); five along axis 0 (inputs held on the heap) */
    kiln_value three[3] = {a, e, b}, five[5] = {r, b, z, r, b};
    kiln_value outs[2] = {kiln_concatenate(g, 3, three, -1), kiln_concatenate(g, 5, five, 0)};
    const int32_t av[] = {1, 2}, bv[] = {3, 4, 5, 6}, rv[] = {7, 8};
    kiln_array *args[5] = {mk(KILN_DTYPE_I32, 2, d21, av), mk(KILN_DTYPE_I32, 2, d22, bv),
                           mk(KILN_DTYPE_I32, 2, d20, NULL), mk(KILN_DTYPE_I32, 2, d12, rv),
                           mk(KILN_DTYPE_I32, 2, d02, NULL)};
    kiln_array *res[2] = {0};
    if (run(g, 2, outs, 5, args, res)) {
        check_type(res[0], KILN_DTYPE_I32, 2, (const int64_t[]){2, 3});
        check_values(res[0], (const double[]){1, 3, 4, 2, 5, 6}, 6, 0);
        check_type(res[1], KILN_DTYPE_I32, 2, (const int64_t[]){6, 2});
        check_values(res[1], (const double[]){7, 8, 3, 4, 5, 6, 7, 8, 3, 4, 5, 6}, 12, 0);
    }
    for (int i = 0; i < 2; i++) kiln_array_destroy(res[i]);
}

static void test_pad(void) {
    kiln_graph *g = new_graph();
    int64_t d23[] = {2, 3}, d5[] = {5}, d3[] = {3}, d0[] = {0};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d23),
               v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, d5);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 1, d3),
               z = kiln_parameter(g, "z", KILN_DTYPE_F32, 1, d0);
    kiln_value nine = kiln_scalar(g, KILN_DTYPE_F32, 9);
    kiln_value outs[5] = {
        kiln_pad(g, x, nine, (const int64_t[]){1, 0}, (const int64_t[]){0, 2},
                 (const int64_t[]){1, 1}),
        kiln_pad(g, v, nine, (const int64_t[]){-1}, (const int64_t[]){-2}, NULL), /* crop */
        kiln_pad(g, w, nine, (const int64_t[]){-1}, (const int64_t[]){-1}, (const int64_t[]){1}),
        kiln_pad(g, w, nine, (const int64_t[]){-2}, (const int64_t[]){1}, (const int64_t[]){1}),
        kiln_pad(g, z, nine, (const int64_t[]){2}, (const int64_t[]){1}, (const int64_t[]){4}),
    };
    const double xv[] = {1, 2, 3, 4, 5, 6}, vv[] = {1, 2, 3, 4, 5}, wv[] = {1, 2, 3};
    kiln_array *args[4] = {mkd(KILN_DTYPE_F32, 2, d23, xv), mkd(KILN_DTYPE_F32, 1, d5, vv),
                           mkd(KILN_DTYPE_F32, 1, d3, wv), mk(KILN_DTYPE_F32, 1, d0, NULL)};
    kiln_array *res[5] = {0};
    if (run(g, 5, outs, 4, args, res)) {
        check_type(res[0], KILN_DTYPE_F32, 2, (const int64_t[]){4, 7});
        check_values(res[0], (const double[]){9, 9, 9, 9, 9, 9, 9, /**/ 1, 9, 2, 9, 3, 9, 9,
                                              9, 9, 9, 9, 9, 9, 9, /**/ 4, 9, 5, 9, 6, 9, 9},
                     28, 0);
        check_values(res[1], (const double[]){2, 3}, 2, 0);
        check_values(res[2], (const double[]){9, 2, 9}, 3, 0);    /* 1 9 2 9 3 cropped by 1 each */
        check_values(res[3], (const double[]){2, 9, 3, 9}, 4, 0); /* drop "1 9", add one 9 */
        check_values(res[4], (const double[]){9, 9, 9}, 3, 0);
    }
    for (int i = 0; i < 5; i++) kiln_array_destroy(res[i]);
}

/* -------------------------------------------------------------- reductions ---- */

static void test_reductions(void) {
    kiln_graph *g = new_graph();
    int64_t d23[] = {2, 3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d23);
    int ax0 = 0, ax1 = 1, axm1 = -1;
    kiln_value outs[10] = {
        kiln_reduce_sum(g, x, 1, &ax0, false),  kiln_reduce_sum(g, x, 1, &ax1, false),
        kiln_reduce_sum(g, x, 0, NULL, false),  kiln_reduce_sum(g, x, 1, &axm1, true),
        kiln_reduce_max(g, x, 1, &ax1, false),  kiln_reduce_min(g, x, 1, &ax0, false),
        kiln_reduce_prod(g, x, 1, &ax1, false), kiln_mean(g, x, 1, &ax1, false),
        kiln_mean(g, x, 0, NULL, true),         kiln_reduce_sum(g, x, 0, (const int[]){0}, false),
    };
    const double xv[] = {1, -2, 3, 4, 5, -6};
    kiln_array *args[1] = {mkd(KILN_DTYPE_F32, 2, d23, xv)};
    kiln_array *res[10] = {0};
    if (run(g, 10, outs, 1, args, res)) {
        check_type(res[0], KILN_DTYPE_F32, 1, (const int64_t[]){3});
        check_values(res[0], (const double[]){5, 3, -3}, 3, 0);
        check_values(res[1], (const double[]){2, 3}, 2, 0);
        check_type(res[2], KILN_DTYPE_F32, 0, NULL);
        check_values(res[2], (const double[]){5}, 1, 0);
        check_type(res[3], KILN_DTYPE_F32, 2, (const int64_t[]){2, 1});
        check_values(res[3], (const double[]){2, 3}, 2, 0);
        check_values(res[4], (const double[]){3, 5}, 2, 0);
        check_values(res[5], (const double[]){1, -2, -6}, 3, 0);
        check_values(res[6], (const double[]){-6, -120}, 2, 0);
        check_values(res[7], (const double[]){2.0 / 3, 1}, 2, 1e-7);
        check_type(res[8], KILN_DTYPE_F32, 2, (const int64_t[]){1, 1});
        check_values(res[8], (const double[]){5.0 / 6}, 1, 1e-7);
        check_type(res[9], KILN_DTYPE_F32, 2, d23); /* zero axes: the identity */
        check_values(res[9], xv, 6, 0);
    }
    for (int i = 0; i < 10; i++) kiln_array_destroy(res[i]);

    /* rank 3, middle axis; NaN and Inf; accumulation in double */
    g = new_graph();
    int64_t d234[] = {2, 3, 4}, d4[] = {4}, d3[] = {3};
    kiln_value t = kiln_parameter(g, "t", KILN_DTYPE_F64, 3, d234);
    kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F32, 1, d4),
               c = kiln_parameter(g, "c", KILN_DTYPE_F32, 1, d3);
    kiln_value outs2[5] = {
        kiln_reduce_sum(g, t, 1, &ax1, false), kiln_reduce_max(g, q, 0, NULL, false),
        kiln_reduce_min(g, q, 0, NULL, false), kiln_reduce_sum(g, c, 0, NULL, false),
        kiln_reduce_max(g, c, 0, NULL, false)};
    double tv[24];
    for (int i = 0; i < 24; i++) tv[i] = i;
    const double qv[] = {1, NAN, -INFINITY, 5}, cv[] = {1e8, 1, -1e8};
    kiln_array *args2[3] = {mkd(KILN_DTYPE_F64, 3, d234, tv), mkd(KILN_DTYPE_F32, 1, d4, qv),
                            mkd(KILN_DTYPE_F32, 1, d3, cv)};
    if (run(g, 5, outs2, 3, args2, res)) {
        check_type(res[0], KILN_DTYPE_F64, 2, (const int64_t[]){2, 4});
        double want[8];
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++)
                want[i * 4 + k] = tv[i * 12 + k] + tv[i * 12 + 4 + k] + tv[i * 12 + 8 + k];
        check_values(res[0], want, 8, 0);
        check_values(res[1], (const double[]){NAN}, 1, 0);
        check_values(res[2], (const double[]){NAN}, 1, 0);
        check_values(res[3], (const double[]){1}, 1, 0); /* f32 left to right would give 0 */
        check_values(res[4], (const double[]){1e8}, 1, 0);
    }
    for (int i = 0; i < 5; i++) kiln_array_destroy(res[i]);
}

static void test_reductions_int_and_empty(void) {
    kiln_graph *g = new_graph();
    int64_t d3[] = {3}, d03[] = {0, 3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_I32, 1, d3);
    kiln_value e = kiln_parameter(g, "e", KILN_DTYPE_F32, 2, d03);
    kiln_value ei = kiln_parameter(g, "ei", KILN_DTYPE_I32, 2, d03);
    kiln_value el = kiln_parameter(g, "el", KILN_DTYPE_I64, 2, d03);
    int ax0 = 0, ax1 = 1;
    kiln_value outs[13] = {
        kiln_reduce_sum(g, x, 0, NULL, false),  kiln_reduce_prod(g, x, 0, NULL, false),
        kiln_reduce_max(g, x, 0, NULL, false),  kiln_reduce_min(g, x, 0, NULL, false),
        kiln_reduce_sum(g, e, 1, &ax0, false),  kiln_reduce_prod(g, e, 1, &ax0, false),
        kiln_reduce_max(g, e, 1, &ax0, false),  kiln_reduce_min(g, e, 1, &ax0, false),
        kiln_reduce_max(g, ei, 1, &ax0, false), kiln_reduce_min(g, ei, 1, &ax0, false),
        kiln_reduce_max(g, el, 1, &ax0, true),  kiln_mean(g, e, 1, &ax0, false),
        kiln_reduce_sum(g, e, 1, &ax1, false),
    };
    const int32_t xv[] = {INT32_MAX, 1, 65536};
    kiln_array *args[4] = {mk(KILN_DTYPE_I32, 1, d3, xv), mk(KILN_DTYPE_F32, 2, d03, NULL),
                           mk(KILN_DTYPE_I32, 2, d03, NULL), mk(KILN_DTYPE_I64, 2, d03, NULL)};
    kiln_array *res[13] = {0};
    if (run(g, 13, outs, 4, args, res)) {
        /* MAX + 1 + 65536 wraps to MIN + 65536; MAX * 65536 = (2^31-1) 2^16 mod 2^32 = -65536 */
        check_ints(res[0], (const int64_t[]){(int64_t)INT32_MIN + 65536}, 1);
        check_ints(res[1], (const int64_t[]){-65536}, 1);
        check_ints(res[2], (const int64_t[]){INT32_MAX}, 1);
        check_ints(res[3], (const int64_t[]){1}, 1);
        check_values(res[4], (const double[]){0, 0, 0}, 3, 0);
        check_values(res[5], (const double[]){1, 1, 1}, 3, 0);
        check_values(res[6], (const double[]){-INFINITY, -INFINITY, -INFINITY}, 3, 0);
        check_values(res[7], (const double[]){INFINITY, INFINITY, INFINITY}, 3, 0);
        check_ints(res[8], (const int64_t[]){INT32_MIN, INT32_MIN, INT32_MIN}, 3);
        check_ints(res[9], (const int64_t[]){INT32_MAX, INT32_MAX, INT32_MAX}, 3);
        check_type(res[10], KILN_DTYPE_I64, 2, (const int64_t[]){1, 3});
        check_ints(res[10], (const int64_t[]){INT64_MIN, INT64_MIN, INT64_MIN}, 3);
        check_values(res[11], (const double[]){NAN, NAN, NAN}, 3, 0); /* 0/0, as NumPy */
        check_type(res[12], KILN_DTYPE_F32, 1, (const int64_t[]){0});
    }
    for (int i = 0; i < 13; i++) kiln_array_destroy(res[i]);
}

/* ------------------------------------------------------------- dot, matmul ---- */

/* out[b][m][n] = sum_k l[b][m][k] r[b][k][n], written out plainly. */
static void naive_bmm(const double *l, const double *r, double *o, int B, int M, int K, int N) {
    for (int b = 0; b < B; b++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double s = 0;
                for (int k = 0; k < K; k++) s += l[(b * M + m) * K + k] * r[(b * K + k) * N + n];
                o[(b * M + m) * N + n] = s;
            }
}

static void test_dot_general(void) {
    kiln_graph *g = new_graph();
    int64_t l3[] = {2, 2, 3}, r3[] = {2, 3, 2}, l32[] = {3, 2}, r34[] = {3, 4}, a23[] = {2, 3};
    int64_t v2[] = {2}, v3[] = {3};
    kiln_value L = kiln_parameter(g, "L", KILN_DTYPE_F64, 3, l3),
               R = kiln_parameter(g, "R", KILN_DTYPE_F64, 3, r3);
    kiln_value A = kiln_parameter(g, "A", KILN_DTYPE_F32, 2, l32),
               B = kiln_parameter(g, "B", KILN_DTYPE_F32, 2, r34);
    kiln_value P = kiln_parameter(g, "P", KILN_DTYPE_F32, 2, a23);
    kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_I32, 1, v2),
               w = kiln_parameter(g, "w", KILN_DTYPE_I32, 1, v3);
    kiln_dot_dims bmm = {.n_contract = 1,
                         .lhs_contract = {2},
                         .rhs_contract = {1},
                         .n_batch = 1,
                         .lhs_batch = {0},
                         .rhs_batch = {0}};
    kiln_dot_dims tn = {.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}}; /* A^T B */
    /* batch axis last on lhs, first on rhs: out[b] = sum_k A[k][b] P[b][k] */
    kiln_dot_dims odd = {.n_contract = 1,
                         .lhs_contract = {0},
                         .rhs_contract = {1},
                         .n_batch = 1,
                         .lhs_batch = {1},
                         .rhs_batch = {0}};
    kiln_dot_dims outer = {0};
    kiln_value outs[4] = {kiln_dot_general(g, L, R, &bmm), kiln_dot_general(g, A, B, &tn),
                          kiln_dot_general(g, A, P, &odd), kiln_dot_general(g, u, w, &outer)};
    double lv[12], rv[12], av[6], bv[12], pv[6];
    for (int i = 0; i < 12; i++) lv[i] = i - 5, rv[i] = 0.5 * i, bv[i] = i % 5 - 2;
    for (int i = 0; i < 6; i++) av[i] = i + 1, pv[i] = 2 - i;
    const int32_t uv[] = {2, -3}, wv[] = {1, 10, 100};
    kiln_array *args[7] = {mkd(KILN_DTYPE_F64, 3, l3, lv),  mkd(KILN_DTYPE_F64, 3, r3, rv),
                           mkd(KILN_DTYPE_F32, 2, l32, av), mkd(KILN_DTYPE_F32, 2, r34, bv),
                           mkd(KILN_DTYPE_F32, 2, a23, pv), mk(KILN_DTYPE_I32, 1, v2, uv),
                           mk(KILN_DTYPE_I32, 1, v3, wv)};
    kiln_array *res[4] = {0};
    if (run(g, 4, outs, 7, args, res)) {
        double want[12];
        check_type(res[0], KILN_DTYPE_F64, 3, (const int64_t[]){2, 2, 2});
        naive_bmm(lv, rv, want, 2, 2, 3, 2);
        check_values(res[0], want, 8, 1e-12);
        check_type(res[1], KILN_DTYPE_F32, 2, (const int64_t[]){2, 4});
        for (int m = 0; m < 2; m++)
            for (int n = 0; n < 4; n++) {
                want[m * 4 + n] = 0;
                for (int k = 0; k < 3; k++) want[m * 4 + n] += av[k * 2 + m] * bv[k * 4 + n];
            }
        check_values(res[1], want, 8, 1e-6);
        check_type(res[2], KILN_DTYPE_F32, 1, v2);
        /* b=0: 1*2 + 3*1 + 5*0 = 5;  b=1: 2*(-1) + 4*(-2) + 6*(-3) = -28 */
        check_values(res[2], (const double[]){5, -28}, 2, 0);
        check_type(res[3], KILN_DTYPE_I32, 2, a23);
        check_values(res[3], (const double[]){2, 20, 200, -3, -30, -300}, 6, 0);
    }
    for (int i = 0; i < 4; i++) kiln_array_destroy(res[i]);

    /* integer dot wraps; a contraction of size 0 gives zeros; f32 accumulates in double */
    g = new_graph();
    int64_t d2[] = {2}, z0[] = {2, 0}, z1[] = {0, 3};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_I32, 1, d2);
    kiln_value za = kiln_parameter(g, "za", KILN_DTYPE_F32, 2, z0),
               zb = kiln_parameter(g, "zb", KILN_DTYPE_F32, 2, z1);
    kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 1, v3),
               ones = kiln_full(g, KILN_DTYPE_F32, 1, v3, 1);
    kiln_dot_dims inner = {.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
    kiln_value outs2[3] = {kiln_dot_general(g, a, a, &inner), kiln_matmul(g, za, zb),
                           kiln_dot_general(g, f, ones, &inner)};
    const int32_t iv[] = {65536, 65536};
    const double fv[] = {1e8, 1, -1e8};
    kiln_array *args2[4] = {mk(KILN_DTYPE_I32, 1, d2, iv), mk(KILN_DTYPE_F32, 2, z0, NULL),
                            mk(KILN_DTYPE_F32, 2, z1, NULL), mkd(KILN_DTYPE_F32, 1, v3, fv)};
    if (run(g, 3, outs2, 4, args2, res)) {
        check_ints(res[0], (const int64_t[]){0}, 1); /* 2 * 2^32 wraps to 0 */
        check_type(res[1], KILN_DTYPE_F32, 2, a23);
        check_values(res[1], (const double[]){0, 0, 0, 0, 0, 0}, 6, 0);
        check_values(res[2], (const double[]){1}, 1, 0); /* in f32 the 1 would be lost */
    }
    for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);
}

static void test_matmul(void) {
    kiln_graph *g = new_graph();
    int64_t a23[] = {2, 3}, b32[] = {3, 2}, c223[] = {2, 2, 3}, d232[] = {2, 3, 2},
            e432[] = {4, 3, 2};
    int64_t v3[] = {3};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F64, 2, a23),
               b = kiln_parameter(g, "b", KILN_DTYPE_F64, 2, b32);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F64, 3, c223),
               d = kiln_parameter(g, "d", KILN_DTYPE_F64, 3, d232);
    kiln_value e = kiln_parameter(g, "e", KILN_DTYPE_F64, 3, e432),
               v = kiln_parameter(g, "v", KILN_DTYPE_F64, 1, v3);
    kiln_value outs[7] = {kiln_matmul(g, a, b), kiln_matmul(g, c, d), kiln_matmul(g, a, e),
                          kiln_matmul(g, v, b), kiln_matmul(g, a, v), kiln_matmul(g, v, v),
                          kiln_matmul(g, c, b)};
    const double av[] = {1, 2, 3, 4, 5, 6}, bv[] = {1, 0, 0, 1, 2, -1}, vv[] = {1, -1, 2};
    double cv[12], dv[12], ev[24];
    for (int i = 0; i < 12; i++) cv[i] = i, dv[i] = 11 - i;
    for (int i = 0; i < 24; i++) ev[i] = (i * 7) % 5;
    kiln_array *args[6] = {mkd(KILN_DTYPE_F64, 2, a23, av),  mkd(KILN_DTYPE_F64, 2, b32, bv),
                           mkd(KILN_DTYPE_F64, 3, c223, cv), mkd(KILN_DTYPE_F64, 3, d232, dv),
                           mkd(KILN_DTYPE_F64, 3, e432, ev), mkd(KILN_DTYPE_F64, 1, v3, vv)};
    kiln_array *res[7] = {0};
    if (run(g, 7, outs, 6, args, res)) {
        double want[32], tile[24];
        check_type(res[0], KILN_DTYPE_F64, 2, (const int64_t[]){2, 2});
        /* [1 2 3; 4 5 6] x [1 0; 0 1; 2 -1] = [7 -1; 16 -1] */
        check_values(res[0], (const double[]){7, -1, 16, -1}, 4, 0);
        check_type(res[1], KILN_DTYPE_F64, 3, (const int64_t[]){2, 2, 2});
        naive_bmm(cv, dv, want, 2, 2, 3, 2);
        check_values(res[1], want, 8, 0);
        check_type(res[2], KILN_DTYPE_F64, 3, (const int64_t[]){4, 2, 2}); /* a broadcast over e */
        for (int k = 0; k < 4; k++) memcpy(tile + 6 * k, av, sizeof av);
        naive_bmm(tile, ev, want, 4, 2, 3, 2);
        check_values(res[2], want, 16, 0);
        check_type(res[3], KILN_DTYPE_F64, 1, (const int64_t[]){2});
        check_values(res[3], (const double[]){5, -3}, 2, 0); /* [1 -1 2] x b */
        check_values(res[4], (const double[]){5, 11}, 2, 0); /* a x [1 -1 2] */
        check_type(res[5], KILN_DTYPE_F64, 0, NULL);
        check_values(res[5], (const double[]){6}, 1, 0);
        check_type(res[6], KILN_DTYPE_F64, 3, (const int64_t[]){2, 2, 2}); /* batch x matrix */
        memcpy(tile, bv, sizeof bv), memcpy(tile + 6, bv, sizeof bv);
        naive_bmm(cv, tile, want, 2, 2, 3, 2);
        check_values(res[6], want, 8, 0);
    }
    for (int i = 0; i < 7; i++) kiln_array_destroy(res[i]);
}

/* --------------------------------------------------------------- indexing ---- */

static void test_take_rows(void) {
    kiln_graph *g = new_graph();
    int64_t t42[] = {4, 2}, i4[] = {4}, i22[] = {2, 2}, t4[] = {4}, t02[] = {0, 2}, i0[] = {0};
    kiln_value t = kiln_parameter(g, "t", KILN_DTYPE_F32, 2, t42),
               ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, i4);
    kiln_value jx = kiln_parameter(g, "jx", KILN_DTYPE_I64, 2, i22),
               v = kiln_parameter(g, "v", KILN_DTYPE_BOOL, 1, t4);
    kiln_value e = kiln_parameter(g, "e", KILN_DTYPE_F32, 2, t02),
               ex = kiln_parameter(g, "ex", KILN_DTYPE_I32, 1, i0);
    kiln_value outs[4] = {kiln_take_rows(g, t, ix), kiln_take_rows(g, t, jx),
                          kiln_take_rows(g, v, ix), kiln_take_rows(g, e, ex)};
    const double tv[] = {0, 1, 10, 11, 20, 21, 30, 31};
    const int32_t iv[] = {3, -1, 10, 2};
    const int64_t jv[] = {1, INT64_MIN, INT64_MAX, 0};
    const uint8_t bv[] = {0, 1, 1, 0};
    kiln_array *args[6] = {mkd(KILN_DTYPE_F32, 2, t42, tv),  mk(KILN_DTYPE_I32, 1, i4, iv),
                           mk(KILN_DTYPE_I64, 2, i22, jv),   mk(KILN_DTYPE_BOOL, 1, t4, bv),
                           mk(KILN_DTYPE_F32, 2, t02, NULL), mk(KILN_DTYPE_I32, 1, i0, NULL)};
    kiln_array *res[4] = {0};
    if (run(g, 4, outs, 6, args, res)) {
        check_type(res[0], KILN_DTYPE_F32, 2, t42);
        check_values(res[0], (const double[]){30, 31, 0, 1, 30, 31, 20, 21}, 8, 0); /* clamped */
        check_type(res[1], KILN_DTYPE_F32, 3, (const int64_t[]){2, 2, 2});
        check_values(res[1], (const double[]){10, 11, 0, 1, 30, 31, 0, 1}, 8, 0);
        check_type(res[2], KILN_DTYPE_BOOL, 1, i4);
        check_values(res[2], (const double[]){0, 0, 0, 1}, 4, 0);
        check_type(res[3], KILN_DTYPE_F32, 2, (const int64_t[]){0, 2});
    }
    for (int i = 0; i < 4; i++) kiln_array_destroy(res[i]);

    /* a table with no rows cannot give a non-empty result: shapes are static, so the
     * builder says so */
    g = new_graph();
    int64_t i1[] = {1};
    e = kiln_parameter(g, "e", KILN_DTYPE_F32, 2, t02);
    ex = kiln_parameter(g, "ex", KILN_DTYPE_I32, 1, i1);
    kiln_value r = kiln_take_rows(g, e, ex);
    CHECK_STATUS(kiln_graph_finish(g, 1, &r), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(C), "take_rows");
    CHECK_CONTAINS(kiln_last_error(C), "no rows");
    CHECK_CONTAINS(kiln_last_error(C), "f32[0,2]");
    kiln_graph_destroy(g);
}

static void test_scatter_add_rows(void) {
    kiln_graph *g = new_graph();
    int64_t o32[] = {3, 2}, i5[] = {5}, u52[] = {5, 2}, o4[] = {4}, i22[] = {2, 2}, i0[] = {0},
            u02[] = {0, 2};
    kiln_value op = kiln_parameter(g, "op", KILN_DTYPE_F32, 2, o32),
               ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, i5);
    kiln_value up = kiln_parameter(g, "up", KILN_DTYPE_F32, 2, u52);
    kiln_value oi = kiln_parameter(g, "oi", KILN_DTYPE_I32, 1, o4),
               jx = kiln_parameter(g, "jx", KILN_DTYPE_I64, 2, i22);
    kiln_value ui = kiln_parameter(g, "ui", KILN_DTYPE_I32, 2, i22);
    kiln_value ex = kiln_parameter(g, "ex", KILN_DTYPE_I32, 1, i0),
               eu = kiln_parameter(g, "eu", KILN_DTYPE_F32, 2, u02);
    kiln_value outs[3] = {kiln_scatter_add_rows(g, op, ix, up),
                          kiln_scatter_add_rows(g, oi, jx, ui),
                          kiln_scatter_add_rows(g, op, ex, eu)};
    const double opv[] = {1, 1, 1, 1, 1, 1};
    const int32_t iv[] = {0, 2, 0, 5, -1};
    const double uv[] = {1, 2, 10, 20, 100, 200, 1000, 2000, 5, 5};
    const int32_t oiv[] = {0, 0, 0, INT32_MAX};
    const int64_t jv[] = {3, 3, 1, 4};
    const int32_t uiv[] = {1, 2, 7, 8};
    kiln_array *args[8] = {mkd(KILN_DTYPE_F32, 2, o32, opv), mk(KILN_DTYPE_I32, 1, i5, iv),
                           mkd(KILN_DTYPE_F32, 2, u52, uv),  mk(KILN_DTYPE_I32, 1, o4, oiv),
                           mk(KILN_DTYPE_I64, 2, i22, jv),   mk(KILN_DTYPE_I32, 2, i22, uiv),
                           mk(KILN_DTYPE_I32, 1, i0, NULL),  mk(KILN_DTYPE_F32, 2, u02, NULL)};
    kiln_array *res[3] = {0};
    if (run(g, 3, outs, 8, args, res)) {
        check_type(res[0], KILN_DTYPE_F32, 2, o32);
        /* row 0 += (1,2) + (100,200); row 2 += (10,20); indices 5 and -1 dropped */
        check_values(res[0], (const double[]){102, 203, 1, 1, 11, 21}, 6, 0);
        /* rank-2 indices into a rank-1 operand; MAX + 1 + 2 wraps */
        check_ints(res[1], (const int64_t[]){0, 7, 0, (int64_t)INT32_MIN + 2}, 4);
        check_values(res[2], opv, 6, 0);
    }
    for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);
}

/* -------------------------------------------------------------- composites ---- */

static void test_softmax_family(void) {
    kiln_graph *g = new_graph();
    int64_t d23[] = {2, 3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d23),
               n = kiln_parameter(g, "n", KILN_DTYPE_F32, 2, d23);
    int ax1 = 1;
    kiln_value outs[6] = {kiln_softmax(g, x, -1),
                          kiln_softmax(g, x, 0),
                          kiln_log_softmax(g, x, 1),
                          kiln_logsumexp(g, x, 1, &ax1, false),
                          kiln_logsumexp(g, n, 1, &ax1, true),
                          kiln_logsumexp(g, x, 0, NULL, false)};
    const double xv[] = {1, 2, 3, -1000, 0, 1000};
    const double nv[] = {-INFINITY, -INFINITY, -INFINITY, 1000, 1000, -INFINITY};
    kiln_array *args[2] = {mkd(KILN_DTYPE_F64, 2, d23, xv), mkd(KILN_DTYPE_F32, 2, d23, nv)};
    kiln_array *res[6] = {0};
    if (run(g, 6, outs, 2, args, res)) {
        double sm[6], sm0[6], ls[6], lse[2];
        for (int i = 0; i < 2; i++) {
            const double *r = xv + 3 * i;
            double m = fmax(r[0], fmax(r[1], r[2]));
            double s = exp(r[0] - m) + exp(r[1] - m) + exp(r[2] - m);
            lse[i] = m + log(s);
            for (int j = 0; j < 3; j++)
                sm[3 * i + j] = exp(r[j] - m) / s, ls[3 * i + j] = r[j] - lse[i];
        }
        for (int j = 0; j < 3; j++) {
            double a = xv[j], b = xv[3 + j], m = fmax(a, b);
            double s = exp(a - m) + exp(b - m);
            sm0[j] = exp(a - m) / s, sm0[3 + j] = exp(b - m) / s;
        }
        check_type(res[0], KILN_DTYPE_F64, 2, d23);
        check_values(res[0], sm, 6, 1e-15);
        check_values(res[1], sm0, 6, 1e-15);
        check_values(res[2], ls, 6, 1e-12);
        check_type(res[3], KILN_DTYPE_F64, 1, (const int64_t[]){2});
        check_values(res[3], lse, 2, 1e-12);
        check_values(res[3], (const double[]){3 + log(1 + exp(-1) + exp(-2)), 1000}, 2, 1e-12);
        check_type(res[4], KILN_DTYPE_F32, 2, (const int64_t[]){2, 1});
        check_values(res[4], (const double[]){-INFINITY, 1000 + log(2.0)}, 2, 1e-6);
        check_type(res[5], KILN_DTYPE_F64, 0, NULL);
        check_values(res[5], (const double[]){1000}, 1, 1e-12);
    }
    for (int i = 0; i < 6; i++) kiln_array_destroy(res[i]);
}

static void test_layer_norm_gelu(void) {
    kiln_graph *g = new_graph();
    int64_t d24[] = {2, 4}, d4[] = {4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d24);
    kiln_value sc = kiln_parameter(g, "scale", KILN_DTYPE_F64, 1, d4),
               bi = kiln_parameter(g, "bias", KILN_DTYPE_F64, 1, d4);
    kiln_value none = {0, 0};
    const double eps = 1e-5;
    kiln_value outs[3] = {kiln_layer_norm(g, x, sc, bi, eps),
                          kiln_layer_norm(g, x, none, none, eps), kiln_gelu(g, x, true)};
    const double xv[] = {1, 2, 3, 4, -3, 0, 0, 7}, sv[] = {1, 2, 0.5, -1}, bv[] = {0, 1, -1, 0.25};
    kiln_array *args[3] = {mkd(KILN_DTYPE_F64, 2, d24, xv), mkd(KILN_DTYPE_F64, 1, d4, sv),
                           mkd(KILN_DTYPE_F64, 1, d4, bv)};
    kiln_array *res[3] = {0};
    if (run(g, 3, outs, 3, args, res)) {
        double ln[8], plain[8], ge[8];
        for (int i = 0; i < 2; i++) {
            const double *r = xv + 4 * i;
            double mean = (r[0] + r[1] + r[2] + r[3]) / 4, var = 0;
            for (int j = 0; j < 4; j++) var += (r[j] - mean) * (r[j] - mean) / 4;
            for (int j = 0; j < 4; j++) {
                plain[4 * i + j] = (r[j] - mean) / sqrt(var + eps);
                ln[4 * i + j] = plain[4 * i + j] * sv[j] + bv[j];
            }
        }
        for (int i = 0; i < 8; i++) {
            double v = xv[i];
            ge[i] = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        }
        check_type(res[0], KILN_DTYPE_F64, 2, d24);
        check_values(res[0], ln, 8, 1e-12);
        check_values(res[1], plain, 8, 1e-12);
        check_values(res[2], ge, 8, 1e-12);
        double g0[8];
        fetch(res[2], g0);
        CHECK(g0[5] == 0); /* gelu(0) = 0 */
    }
    for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);

    /* f32 layer_norm of a constant row: variance 0, so the result is the bias */
    g = new_graph();
    kiln_value xf = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d24),
               bf = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, d4);
    kiln_value r = kiln_layer_norm(g, xf, none, bf, eps);
    const double cv[] = {5, 5, 5, 5, 1, 2, 3, 4};
    kiln_array *args2[2] = {mkd(KILN_DTYPE_F32, 2, d24, cv), mkd(KILN_DTYPE_F32, 1, d4, bv)}, *out;
    if (run1(g, r, 2, args2, &out)) {
        double want[8];
        for (int j = 0; j < 4; j++) want[j] = bv[j];
        for (int j = 0; j < 4; j++) want[4 + j] = (cv[4 + j] - 2.5) / sqrt(1.25 + eps) + bv[j];
        check_values(out, want, 8, 1e-6);
    }
    kiln_array_destroy(out);
}

/* sin, cos and erf on random inputs over many magnitudes (1e-4 .. 1e3, both signs, zeros)
 * against libm in f64, and f32 rounded once from f32 inputs; then identities that hold
 * whatever libm does: sin^2 + cos^2 = 1, erf odd and bounded by 1, its limits. */
static void test_sin_cos_erf(void) {
    enum { N = 96 };
    uint64_t seed = test_seed(0x51ce);
    double x[N];
    for (int i = 0; i < N; i++) {
        double mag = pow(10, -4 + 7 * test_rng_unit(&seed));
        x[i] = i % 16 == 0 ? 0.0 : test_rng_unit(&seed) < 0.5 ? -mag : mag;
    }
    unop ops[3] = {kiln_sin, kiln_cos, kiln_erf};
    double (*ref[3])(double) = {sin, cos, erf};
    double y[3][N], yf[N];
    for (int k = 0; k < 3; k++) {
        eval_unary(ops[k], KILN_DTYPE_F64, x, N, y[k]);
        eval_unary(ops[k], KILN_DTYPE_F32, x, N, yf);
        for (int i = 0; i < N; i++) {
            CHECK_MSG(test_close(y[k][i], ref[k](x[i]), 1e-15, 1e-300), "op %d at %.17g: %.17g", k,
                      x[i], y[k][i]);
            double want = (float)ref[k]((float)x[i]);
            CHECK_MSG(yf[i] == want, "f32 op %d at %.9g: %.9g, want %.9g", k, x[i], yf[i], want);
        }
    }
    for (int i = 0; i < N; i++) {
        CHECK_NEAR(y[0][i] * y[0][i] + y[1][i] * y[1][i], 1, 4e-16);
        CHECK(fabs(y[2][i]) <= 1 && (x[i] >= 0) == (y[2][i] >= 0));
    }
    double neg[N], en[N];
    for (int i = 0; i < N; i++) neg[i] = -x[i];
    eval_unary(kiln_erf, KILN_DTYPE_F64, neg, N, en);
    for (int i = 0; i < N; i++) CHECK_MSG(en[i] == -y[2][i], "erf(-x) != -erf(x) at %g", x[i]);
    const double e[] = {0, INFINITY, -INFINITY, 7, -0.0};
    double ye[5];
    eval_unary(kiln_erf, KILN_DTYPE_F32, e, 5, ye);
    CHECK(ye[0] == 0 && ye[1] == 1 && ye[2] == -1 && ye[3] == 1 && ye[4] == 0 && signbit(ye[4]));
}

/* gelu's exact form against jax.nn.gelu(x, approximate=False), computed once with jax 0.10.2
 * (jax_enable_x64, printed with %.17g) at these points; the identities gelu(x) - gelu(-x) = x
 * and gelu(x) + gelu(-x) = x erf(x / sqrt 2); the tanh form within 4.8e-4 of it (JAX's two
 * forms differ by at most 4.73e-4 on [-8, 8]). silu against jax.nn.silu, computed so too. */
static void test_gelu_exact_silu(void) {
    static const double x[12] = {-6, -3, -1.5, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2.5, 4, 6};
    static const double jax_gelu[12] = {
        -5.9195258702261662e-09, -0.0040496940948902792,  -0.10021080190328709,
        -0.15426876936299344,    -0.00049960105778608897, 0,
        0.00050039894221391105,  0.34573123063700656,     0.84134474606854293,
        2.4844758366855597,      3.9998733150326675,      5.9999999940804738};
    static const double xs[7] = {-3, -1.5, -0.5, 0, 0.5, 1, 2.5};
    static const double jax_silu[7] = {
        -0.14227761953270035, -0.27363828570953452, -0.1887703343990727, 0,
        0.3112296656009273,   0.7310585786300049,   2.3103545499468914};
    for (int t = 0; t < 2; t++) {
        kiln_dtype ft = t ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
        double tol = t ? 2e-7 : 1e-15;
        int64_t n = 12, n7 = 7;
        kiln_graph *g = new_graph();
        kiln_value p = kiln_parameter(g, "x", ft, 1, &n), q = kiln_parameter(g, "s", ft, 1, &n7);
        kiln_value outs[4] = {kiln_gelu(g, p, false), kiln_gelu(g, kiln_neg(g, p), false),
                              kiln_gelu(g, p, true), kiln_silu(g, q)};
        kiln_array *args[2] = {mkd(ft, 1, &n, x), mkd(ft, 1, &n7, xs)}, *res[4] = {0};
        if (run(g, 4, outs, 2, args, res)) {
            double ge[12], gn[12], gt[12], si[7];
            fetch(res[0], ge), fetch(res[1], gn), fetch(res[2], gt), fetch(res[3], si);
            for (int i = 0; i < 12; i++) {
                /* left of 0, 1 + erf(x / sqrt 2) cancels (JAX's erfc does not), so the error
                 * there is bounded absolutely: |x| / 2 times erf's rounding error near 1 */
                double atol = fabs(x[i]) * (t ? 6e-8 : 1.2e-16);
                CHECK_MSG(test_close(ge[i], jax_gelu[i], tol * 4, atol),
                          "%s gelu(%g) = %.17g, jax %.17g", kiln_dtype_name(ft), x[i], ge[i],
                          jax_gelu[i]);
                CHECK_MSG(test_close(ge[i] - gn[i], x[i], tol * 4, tol),
                          "gelu(x) - gelu(-x) = %.17g at %g", ge[i] - gn[i], x[i]);
                CHECK_MSG(test_close(ge[i] + gn[i], x[i] * erf(x[i] * M_SQRT1_2), tol * 8, tol),
                          "gelu(x) + gelu(-x) = %.17g at %g", ge[i] + gn[i], x[i]);
                CHECK_MSG(fabs(gt[i] - ge[i]) <= 4.8e-4, "tanh form %.17g, exact %.17g at %g",
                          gt[i], ge[i], x[i]);
            }
            for (int i = 0; i < 7; i++)
                CHECK_MSG(test_close(si[i], jax_silu[i], tol * 4, tol), "silu(%g) = %.17g", xs[i],
                          si[i]);
        }
        for (int i = 0; i < 4; i++) kiln_array_destroy(res[i]);
    }
}

/* rms_norm by hand: [2, 3] over the last axis with a scale, over axis 0 without, f64/f32. */
static void test_rms_norm(void) {
    const double xv[] = {1, -2, 3, 0.5, 0, -4}, sv[] = {2, -1, 0.5}, eps = 1e-6;
    for (int t = 0; t < 2; t++) {
        kiln_dtype ft = t ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
        int64_t d23[] = {2, 3}, d3 = 3;
        kiln_graph *g = new_graph();
        kiln_value x = kiln_parameter(g, "x", ft, 2, d23), s = kiln_parameter(g, "s", ft, 1, &d3);
        kiln_value outs[2] = {kiln_rms_norm(g, x, s, -1, eps),
                              kiln_rms_norm(g, x, (kiln_value){0, 0}, 0, eps)};
        kiln_array *args[2] = {mkd(ft, 2, d23, xv), mkd(ft, 1, &d3, sv)}, *res[2] = {0};
        if (run(g, 2, outs, 2, args, res)) {
            double last[6], first[6];
            for (int i = 0; i < 2; i++) {
                const double *r = xv + 3 * i;
                double ms = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) / 3;
                for (int j = 0; j < 3; j++) last[3 * i + j] = r[j] / sqrt(ms + eps) * sv[j];
            }
            for (int j = 0; j < 3; j++) {
                double ms = (xv[j] * xv[j] + xv[3 + j] * xv[3 + j]) / 2;
                for (int i = 0; i < 2; i++) first[3 * i + j] = xv[3 * i + j] / sqrt(ms + eps);
            }
            check_type(res[0], ft, 2, d23);
            check_type(res[1], ft, 2, d23);
            check_values(res[0], last, 6, t ? 1e-6 : 1e-14);
            check_values(res[1], first, 6, t ? 1e-6 : 1e-14);
        }
        for (int i = 0; i < 2; i++) kiln_array_destroy(res[i]);
    }
}

/* where: a bool condition broadcast with x and y; non-bool conditions are nonzero tests
 * (NaN true, -0 false). clip: broadcast bounds, NaN propagation, lo > hi, integers. */
static void test_where_clip(void) {
    kiln_graph *g = new_graph();
    int64_t d3 = 3, d21[] = {2, 1}, d23[] = {2, 3}, d5 = 5;
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_BOOL, 1, &d3);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d21);
    kiln_value cf = kiln_parameter(g, "cf", KILN_DTYPE_F32, 1, &d5);
    kiln_value ci = kiln_parameter(g, "ci", KILN_DTYPE_I32, 1, &d5);
    kiln_value xi = kiln_parameter(g, "xi", KILN_DTYPE_I32, 1, &d5);
    kiln_value outs[3] = {
        kiln_where(g, c, x, kiln_scalar(g, KILN_DTYPE_F64, -1)),
        kiln_where(g, cf, kiln_scalar(g, KILN_DTYPE_I32, 1), kiln_scalar(g, KILN_DTYPE_I32, 0)),
        kiln_where(g, ci, xi, kiln_neg(g, xi))};
    kiln_array *args[5] = {mkd(KILN_DTYPE_BOOL, 1, &d3, (const double[]){1, 0, 1}),
                           mkd(KILN_DTYPE_F64, 2, d21, (const double[]){10, 20}),
                           mkd(KILN_DTYPE_F32, 1, &d5, (const double[]){0, -0.0, NAN, 0.5, -3}),
                           mkd(KILN_DTYPE_I32, 1, &d5, (const double[]){0, 1, -1, 0, 7}),
                           mkd(KILN_DTYPE_I32, 1, &d5, (const double[]){1, 2, 3, 4, 5})},
               *res[3] = {0};
    if (run(g, 3, outs, 5, args, res)) {
        check_type(res[0], KILN_DTYPE_F64, 2, d23);
        check_values(res[0], (const double[]){10, -1, 10, 20, -1, 20}, 6, 0);
        check_type(res[1], KILN_DTYPE_I32, 1, &d5);
        check_values(res[1], (const double[]){0, 0, 1, 1, 1}, 5, 0);
        check_values(res[2], (const double[]){-1, 2, 3, -4, 5}, 5, 0);
    }
    for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);

    g = new_graph();
    int64_t d6 = 6;
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, &d6);
    kiln_value hi = kiln_parameter(g, "hi", KILN_DTYPE_F32, 1, &d6);
    kiln_value vi = kiln_parameter(g, "vi", KILN_DTYPE_I64, 1, &d6);
    kiln_value outs2[2] = {
        kiln_clip(g, v, kiln_scalar(g, KILN_DTYPE_F32, -1), hi),
        kiln_clip(g, vi, kiln_scalar(g, KILN_DTYPE_I64, -2), kiln_scalar(g, KILN_DTYPE_I64, 3))};
    kiln_array *args2[3] = {mkd(KILN_DTYPE_F32, 1, &d6, (const double[]){-5, 0.5, 9, NAN, 0, 2}),
                            mkd(KILN_DTYPE_F32, 1, &d6, (const double[]){1, 1, 2, 1, -3, NAN}),
                            mkd(KILN_DTYPE_I64, 1, &d6, (const double[]){-9, -2, 0, 3, 4, 100})},
               *res2[2] = {0};
    if (run(g, 2, outs2, 3, args2, res2)) {
        /* lo > hi (-1 > -3) gives hi, as jnp.clip; NaN in x or in a bound propagates */
        check_values(res2[0], (const double[]){-1, 0.5, 2, NAN, -3, NAN}, 6, 0);
        check_type(res2[1], KILN_DTYPE_I64, 1, &d6);
        check_values(res2[1], (const double[]){-2, -2, 0, 3, 3, 3}, 6, 0);
    }
    for (int i = 0; i < 2; i++) kiln_array_destroy(res2[i]);
}

static void test_softmax_cross_entropy(void) {
    for (int t = 0; t < 2; t++) {
        kiln_dtype ft = t ? KILN_DTYPE_F32 : KILN_DTYPE_F64,
                   it = t ? KILN_DTYPE_I64 : KILN_DTYPE_I32;
        kiln_graph *g = new_graph();
        int64_t d34[] = {3, 4}, d3[] = {3};
        kiln_value lg = kiln_parameter(g, "logits", ft, 2, d34),
                   lb = kiln_parameter(g, "labels", it, 1, d3);
        kiln_value r = kiln_softmax_cross_entropy(g, lg, lb);
        const double lv[] = {1, 2, 3, 4, -50, 0, 50, 0.5, 0.25, 0.25, 0.25, 0.25};
        const double yv[] = {0, 3, 1};
        kiln_array *args[2] = {mkd(ft, 2, d34, lv), mkd(it, 1, d3, yv)}, *out;
        if (run1(g, r, 2, args, &out)) {
            double want[3];
            for (int i = 0; i < 3; i++) {
                const double *row = lv + 4 * i;
                double m = -INFINITY, s = 0;
                for (int j = 0; j < 4; j++) m = fmax(m, row[j]);
                for (int j = 0; j < 4; j++) s += exp(row[j] - m);
                want[i] = m + log(s) - row[(int)yv[i]];
            }
            check_type(out, ft, 1, d3);
            check_values(out, want, 3, t ? 1e-6 : 1e-12);
            CHECK_NEAR(want[2], log(4.0), 1e-15); /* uniform logits: log C */
        }
        kiln_array_destroy(out);
    }
    /* logits masked with -inf (other than the label's) stay finite, as in optax */
    kiln_graph *g = new_graph();
    int64_t d24[] = {2, 4}, d2[] = {2};
    kiln_value lg = kiln_parameter(g, "logits", KILN_DTYPE_F32, 2, d24);
    kiln_value lb = kiln_parameter(g, "labels", KILN_DTYPE_I32, 1, d2);
    const double lv[] = {0, -INFINITY, 1, -INFINITY, 0, -INFINITY, 1, -INFINITY}, yv[] = {0, 2};
    kiln_array *args[2] = {mkd(KILN_DTYPE_F32, 2, d24, lv), mkd(KILN_DTYPE_I32, 1, d2, yv)}, *out;
    if (run1(g, kiln_softmax_cross_entropy(g, lg, lb), 2, args, &out))
        check_values(out, (const double[]){log(1 + M_E), log(1 + M_E) - 1}, 2, 1e-6);
    kiln_array_destroy(out);
    /* a label outside [0, C) picks no logit: the row's logsumexp (kiln.h) */
    g = new_graph();
    lg = kiln_parameter(g, "logits", KILN_DTYPE_F64, 2, d24);
    lb = kiln_parameter(g, "labels", KILN_DTYPE_I32, 1, d2);
    const double lo[] = {0, 1, 2, 3, 0, 1, 2, 3}, yo[] = {-1, 4};
    kiln_array *oargs[2] = {mkd(KILN_DTYPE_F64, 2, d24, lo), mkd(KILN_DTYPE_I32, 1, d2, yo)};
    double lse = log(1 + M_E + exp(2.0) + exp(3.0));
    if (run1(g, kiln_softmax_cross_entropy(g, lg, lb), 2, oargs, &out))
        check_values(out, (const double[]){lse, lse}, 2, 1e-12);
    kiln_array_destroy(out);
}

/* ----------------------------------------------------- memory and errors ---- */

/* A chain of 12 elementwise ops over 1 MiB values holds about two values at a time. */
static void test_memory_released_at_last_use(void) {
    test_alloc t = {0};
    kiln_host_allocator ha = test_allocator(&t);
    kiln_context_options o = {
        .host_allocator = &ha, .ignore_environment = true, .compile_tiers = 1};
    kiln_context *ctx;
    char err[256];
    CHECK_STATUS(kiln_context_create(&o, &ctx, err, sizeof err), KILN_STATUS_OK);
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "chain", &g));
    int64_t n = 1 << 18; /* f32: 1 MiB */
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n), y = x;
    for (int i = 0; i < 12; i++) y = i % 2 ? kiln_neg(g, y) : kiln_add(g, y, x);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    kiln_array *a, *out = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, NULL, &a));
    size_t before = t.bytes;
    t.peak = before;
    CHECK_OK(ctx, kiln_interpret(g, 1, &a, 1, &out));
    size_t mib = (size_t)n * 4;
    /* the output plus at most one live intermediate (its input), plus small tables */
    CHECK_MSG(t.peak - before <= 2 * mib + 65536, "peak %zu bytes over %zu", t.peak - before,
              before);
    kiln_array_destroy(out);
    CHECK(t.bytes == before);
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    CHECK(t.live == 0 && t.bad_size == 0);
}

static void test_errors(void) {
    int64_t d34[] = {3, 4}, d43[] = {4, 3};
    kiln_graph *g = new_graph();
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (const int64_t[]){2});
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d43);
    (void)kiln_parameter(g, NULL, KILN_DTYPE_I32, 0, NULL);
    kiln_value y = kiln_neg(g, x);
    kiln_array *good[3] = {mk(KILN_DTYPE_F32, 1, (const int64_t[]){2}, NULL),
                           mk(KILN_DTYPE_F32, 2, d43, NULL), mk(KILN_DTYPE_I32, 0, NULL, NULL)};
    kiln_array *out = (kiln_array *)1;

    /* not finished */
    CHECK_STATUS(kiln_interpret(g, 3, good, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(out == NULL);
    CHECK_CONTAINS(kiln_last_error(C), "not finished");
    kiln_value outs[2] = {y, w};
    CHECK_OK(C, kiln_graph_finish(g, 2, outs));
    kiln_array *res[2] = {(kiln_array *)1, (kiln_array *)1};

    CHECK_STATUS(kiln_interpret(NULL, 3, good, 2, res), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_interpret(g, 2, good, 2, res), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(res[0] == NULL && res[1] == NULL);
    CHECK_CONTAINS(kiln_last_error(C), "3 parameters, got 2 arguments");
    CHECK_STATUS(kiln_interpret(g, 3, NULL, 2, res), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "args is NULL");
    CHECK_STATUS(kiln_interpret(g, 3, good, 1, res), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "2 outputs, n_outs is 1");
    CHECK_STATUS(kiln_interpret(g, 3, good, 2, NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "outs is NULL");

    kiln_array *bad_shape = mk(KILN_DTYPE_F32, 2, d34, NULL),
               *bad_type = mk(KILN_DTYPE_F64, 1, (const int64_t[]){2}, NULL);
    kiln_array *bad_rank = mk(KILN_DTYPE_I32, 1, (const int64_t[]){1}, NULL);
    kiln_array *args[3] = {good[0], bad_shape, good[2]};
    CHECK_STATUS(kiln_interpret(g, 3, args, 2, res), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(C),
                   "kiln_interpret: argument 1 (\"w\") is f32[3,4], the parameter is f32[4,3]");
    args[1] = good[1], args[0] = bad_type;
    CHECK_STATUS(kiln_interpret(g, 3, args, 2, res), KILN_STATUS_DTYPE);
    CHECK_CONTAINS(kiln_last_error(C), "argument 0 (\"x\") is f64[2], the parameter is f32[2]");
    args[0] = good[0], args[2] = bad_rank;
    CHECK_STATUS(kiln_interpret(g, 3, args, 2, res), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(C), "argument 2 (unnamed) is i32[1], the parameter is i32[]");
    args[2] = NULL;
    CHECK_STATUS(kiln_interpret(g, 3, args, 2, res), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "argument 2 (unnamed) is NULL");
    CHECK(res[0] == NULL && res[1] == NULL);

    /* and it still works after all that */
    CHECK_OK(C, kiln_interpret(g, 3, good, 2, res));
    kiln_array_destroy(res[0]), kiln_array_destroy(res[1]);
    kiln_array_destroy(bad_shape), kiln_array_destroy(bad_type), kiln_array_destroy(bad_rank);
    kiln_graph_destroy(g);

    /* a graph whose build failed is not finished either */
    g = new_graph();
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, d34),
               b = kiln_parameter(g, "b", KILN_DTYPE_F32, 2, d43);
    kiln_value c = kiln_add(g, a, b);
    CHECK_STATUS(kiln_graph_finish(g, 1, &c), KILN_STATUS_SHAPE);
    kiln_array *ab[2] = {mk(KILN_DTYPE_F32, 2, d34, NULL), mk(KILN_DTYPE_F32, 2, d43, NULL)};
    CHECK_STATUS(kiln_interpret(g, 2, ab, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "not finished");
    kiln_array_destroy(ab[0]), kiln_array_destroy(ab[1]);
    kiln_graph_destroy(g);
    for (int i = 0; i < 3; i++) kiln_array_destroy(good[i]);
}

/* Dead nodes are not evaluated: a 4 TiB broadcast that no output needs does not fail the
 * call (evaluating it would be a host out-of-memory error). */
static void test_dead_nodes_skipped(void) {
    kiln_graph *g = new_graph();
    int64_t i1[] = {1}, huge[] = {1 << 20, 1 << 20};
    kiln_value ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, i1);
    (void)kiln_broadcast_to(g, kiln_scalar(g, KILN_DTYPE_F32, 1), 2, huge);
    kiln_value r = kiln_add(g, ix, ix);
    const int32_t one = 21;
    kiln_array *args[1] = {mk(KILN_DTYPE_I32, 1, i1, &one)}, *out;
    if (run1(g, r, 1, args, &out)) check_ints(out, (const int64_t[]){42}, 1);
    kiln_array_destroy(out);
}

/* ------------------------------------------------------- kiln_convert_host ---- */

/* Edge values converted to bf16 and f16. Expected bits from ml_dtypes 0.5 (bf16) and NumPy
 * (f16) in bench/.venv: np.array(v, f64 or f32).astype(bfloat16 / float16), and for the
 * integers np.array(i, int64).astype(float32).astype(bfloat16) / .astype(float16). One
 * exception, marked: f64 -> bf16 of 1 + 2^-8 + 2^-30 is 0x3f81 in ml_dtypes (one rounding)
 * and 0x3f80 in JAX (jnp.float64 array .astype(bfloat16), x64 on: through f32, two
 * roundings), whose rule kiln_convert follows. */
static const double cvt_edges[21] = {0.0,
                                     -0.0,
                                     1.0,
                                     1.0 / 3.0,
                                     -2.5,
                                     NAN,
                                     INFINITY,
                                     -INFINITY,
                                     65504.0,
                                     65520.0,
                                     65519.99,
                                     3.3895313892515355e38,
                                     3.4e38,
                                     1e-40,
                                     5.960464477539063e-08,
                                     2.9802322387695312e-08,
                                     3e-08,
                                     1.00390625,
                                     1.01171875,
                                     1.0 + 0x1p-8 + 0x1p-30,
                                     -1e-45};
static const uint16_t cvt_f64_bf16[21] = {
    0x0000, 0x8000, 0x3f80, 0x3eab, 0xc020,
    0x7fc0, 0x7f80, 0xff80, 0x4780, 0x4780,
    0x4780, 0x7f7f, 0x7f80, 0x0001, 0x3380,
    0x3300, 0x3301, 0x3f80, 0x3f82, 0x3f80 /* JAX's; ml_dtypes 0x3f81 */,
    0x8000};
static const uint16_t cvt_f64_f16[21] = {0x0000, 0x8000, 0x3c00, 0x3555, 0xc100, 0x7e00, 0x7c00,
                                         0xfc00, 0x7bff, 0x7c00, 0x7bff, 0x7c00, 0x7c00, 0x0000,
                                         0x0001, 0x0000, 0x0001, 0x3c04, 0x3c0c, 0x3c04, 0x8000};
static const uint16_t cvt_f32_bf16[21] = {0x0000, 0x8000, 0x3f80, 0x3eab, 0xc020, 0x7fc0, 0x7f80,
                                          0xff80, 0x4780, 0x4780, 0x4780, 0x7f7f, 0x7f80, 0x0001,
                                          0x3380, 0x3300, 0x3301, 0x3f80, 0x3f82, 0x3f80, 0x8000};
static const int64_t cvt_ints[13] = {0,        1,         -1,        255,
                                     257,      65519,     65520,     -65536,
                                     16777217, INT32_MAX, INT32_MIN, (1LL << 53) + 1,
                                     INT64_MAX};
static const uint16_t cvt_i64_bf16[13] = {0x0000, 0x3f80, 0xbf80, 0x437f, 0x4380, 0x4780, 0x4780,
                                          0xc780, 0x4b80, 0x4f00, 0xcf00, 0x5a00, 0x5f00};
static const uint16_t cvt_i64_f16[13] = {0x0000, 0x3c00, 0xbc00, 0x5bf8, 0x5c04, 0x7bff, 0x7c00,
                                         0xfc00, 0x7c00, 0x7c00, 0xfc00, 0x7c00, 0x7c00};

static void check_bits16(const char *what, const uint16_t *got, const uint16_t *want, int n) {
    for (int i = 0; i < n; i++)
        CHECK_MSG(got[i] == want[i], "%s[%d] = 0x%04x, want 0x%04x", what, i, got[i], want[i]);
}

static void test_convert_host_edges(void) {
    uint16_t out[21];
    float f32[21];
    for (int i = 0; i < 21; i++) f32[i] = (float)cvt_edges[i];
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_F64, cvt_edges, KILN_DTYPE_BF16, out, 21));
    check_bits16("f64 -> bf16", out, cvt_f64_bf16, 21);
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_F64, cvt_edges, KILN_DTYPE_F16, out, 21));
    check_bits16("f64 -> f16", out, cvt_f64_f16, 21);
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_F32, f32, KILN_DTYPE_BF16, out, 21));
    check_bits16("f32 -> bf16", out, cvt_f32_bf16, 21);
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_F32, f32, KILN_DTYPE_F16, out, 21));
    check_bits16("f32 -> f16", out, cvt_f64_f16, 21); /* NumPy gives the same from f32 */
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_I64, cvt_ints, KILN_DTYPE_BF16, out, 13));
    check_bits16("i64 -> bf16", out, cvt_i64_bf16, 13);
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_I64, cvt_ints, KILN_DTYPE_F16, out, 13));
    check_bits16("i64 -> f16", out, cvt_i64_f16, 13);

    /* 16-bit to integers: truncation toward zero, saturation, NaN to 0 (bf16 0x4f00 is 2^31,
     * 0x7f7f bf16's largest, 0x0001 its least subnormal) */
    static const uint16_t b[7] = {0x7f7f, 0x4f00, 0xcf00, 0x3f80, 0xbfc0, 0x7fc0, 0x0001};
    static const int32_t want_i32[7] = {INT32_MAX, INT32_MAX, INT32_MIN, 1, -1, 0, 0};
    int32_t i32[7];
    uint8_t bl[7];
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_BF16, b, KILN_DTYPE_I32, i32, 7));
    for (int i = 0; i < 7; i++) CHECK_MSG(i32[i] == want_i32[i], "bf16 -> i32[%d] = %d", i, i32[i]);
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_BF16, b, KILN_DTYPE_BOOL, bl, 7));
    for (int i = 0; i < 7; i++) CHECK_MSG(bl[i] == 1, "bf16 -> bool[%d] = %d", i, bl[i]);

    /* widening is exact: every bf16 pattern is its f32 with 16 zero bits below; every f16
     * pattern but NaN comes back from f32 and from f64 unchanged */
    static uint16_t all[65536], back[65536];
    static float wide[65536];
    static double wider[65536];
    for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_BF16, all, KILN_DTYPE_F32, wide, 65536));
    int bad = 0;
    for (int i = 0; i < 65536 && bad < 5; i++) {
        uint32_t u;
        memcpy(&u, &wide[i], 4);
        bool nan = (i & 0x7fff) > 0x7f80;
        bool ok = nan ? isnan(wide[i]) : u == (uint32_t)i << 16;
        CHECK_MSG(ok, "bf16 0x%04x -> f32 0x%08x", i, u);
        bad += !ok;
    }
    kiln_dtype halves[2] = {KILN_DTYPE_BF16, KILN_DTYPE_F16};
    for (int h = 0; h < 2; h++) {
        kiln_dtype t = halves[h];
        CHECK_OK(C, kiln_convert_host(C, t, all, KILN_DTYPE_F32, wide, 65536));
        CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_F32, wide, t, back, 65536));
        CHECK_OK(C, kiln_convert_host(C, t, all, KILN_DTYPE_F64, wider, 65536));
        for (int i = 0, nb = 0; i < 65536 && nb < 5; i++) {
            bool nan = h ? (i & 0x7fff) > 0x7c00 : (i & 0x7fff) > 0x7f80;
            bool ok = nan ? isnan(wide[i]) && isnan(wider[i])
                          : back[i] == i && (double)wide[i] == wider[i];
            CHECK_MSG(ok, "%s 0x%04x -> f32 -> 0x%04x", kiln_dtype_name(t), i, back[i]);
            nb += !ok;
        }
    }
}

/* Every pair of dtypes: the host helper gives the bytes the interpreter's kiln_convert
 * gives, over special and ordinary values. */
static void test_convert_host_every_pair(void) {
    static const kiln_dtype all[7] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                      KILN_DTYPE_I64, KILN_DTYPE_BOOL, KILN_DTYPE_BF16,
                                      KILN_DTYPE_F16};
    uint64_t seed = test_seed(0xc0417);
    const int64_t n = 300;
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 7; b++) {
            kiln_dtype from = all[a], to = all[b];
            unsigned char src[300 * 8], got[300 * 8], want[300 * 8];
            test_fill_special(from, n, src, &seed);
            memset(got, 0xa5, sizeof got);
            CHECK_OK(C, kiln_convert_host(C, from, src, to, got, n));
            kiln_graph *g = new_graph();
            kiln_value y = kiln_convert(g, kiln_parameter(g, "x", from, 1, &n), to);
            CHECK_OK(C, kiln_graph_finish(g, 1, &y));
            kiln_array *x = NULL, *r = NULL;
            CHECK_OK(C, kiln_array_create(C, from, 1, &n, src, &x));
            CHECK_OK(C, kiln_interpret(g, 1, &x, 1, &r));
            size_t bytes = (size_t)n * kiln_dtype_itemsize(to);
            if (r) CHECK_OK(C, kiln_array_copy_to_host(r, want, bytes));
            CHECK_MSG(r && !memcmp(got, want, bytes), "%s -> %s differs from kiln_convert",
                      kiln_dtype_name(from), kiln_dtype_name(to));
            kiln_array_destroy(x), kiln_array_destroy(r);
            kiln_graph_destroy(g);
        }
}

static void test_convert_host_errors(void) {
    float f[4] = {1, 2, 3, 4};
    uint16_t h[4];
    CHECK_STATUS(kiln_convert_host(C, (kiln_dtype)77, f, KILN_DTYPE_BF16, h, 4),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "kiln_convert_host: dtype 77 -> ");
    CHECK_CONTAINS(kiln_last_error(C), "the source is not a kiln_dtype");
    CHECK_STATUS(kiln_convert_host(C, KILN_DTYPE_F32, f, KILN_DTYPE_INVALID, h, 4),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "the target is not a kiln_dtype");
    CHECK_STATUS(kiln_convert_host(C, KILN_DTYPE_F32, f, KILN_DTYPE_BF16, h, -1),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "kiln_convert_host: f32 -> bf16 of -1 elements");
    CHECK_STATUS(kiln_convert_host(C, KILN_DTYPE_F32, NULL, KILN_DTYPE_F16, h, 4),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "f32 -> f16 of 4 elements with src");
    CHECK_STATUS(kiln_convert_host(C, KILN_DTYPE_F32, f, KILN_DTYPE_F16, NULL, 4),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_convert_host(C, KILN_DTYPE_F32, f, KILN_DTYPE_BF16, (char *)f + 2, 4),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(C), "src and dst overlap");
    /* no context: the status alone; nothing to do: no buffers needed */
    CHECK_STATUS(kiln_convert_host(NULL, KILN_DTYPE_F32, NULL, KILN_DTYPE_BF16, h, 4),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_OK(C, kiln_convert_host(C, KILN_DTYPE_F32, NULL, KILN_DTYPE_BF16, NULL, 0));
    CHECK_OK(C, kiln_convert_host(NULL, KILN_DTYPE_F32, f, KILN_DTYPE_BF16, h, 4));
    CHECK(h[0] == 0x3f80 && h[3] == 0x4080);
}

int main(void) {
    C = test_context();
    RUN(test_unary_float);
    RUN(test_binary_float);
    RUN(test_broadcasting);
    RUN(test_int_arith_i32);
    RUN(test_int_arith_i64);
    RUN(test_compare_select_logic);
    RUN(test_convert);
    RUN(test_sources);
    RUN(test_output_aliasing);
    RUN(test_broadcast_in_dim);
    RUN(test_reshape_transpose);
    RUN(test_slice);
    RUN(test_concatenate);
    RUN(test_pad);
    RUN(test_reductions);
    RUN(test_reductions_int_and_empty);
    RUN(test_dot_general);
    RUN(test_matmul);
    RUN(test_take_rows);
    RUN(test_scatter_add_rows);
    RUN(test_softmax_family);
    RUN(test_layer_norm_gelu);
    RUN(test_sin_cos_erf);
    RUN(test_gelu_exact_silu);
    RUN(test_rms_norm);
    RUN(test_where_clip);
    RUN(test_softmax_cross_entropy);
    RUN(test_memory_released_at_last_use);
    RUN(test_errors);
    RUN(test_dead_nodes_skipped);
    RUN(test_convert_host_edges);
    RUN(test_convert_host_every_pair);
    RUN(test_convert_host_errors);
    kiln_context_destroy(C);
    return test_summary("test_reference");
}
