/* test_linalg.c — kiln_cholesky, kiln_triangular_solve and kiln_cho_solve (src/trace/
 * linalg.c, the cholesky and triangular_solve ops and their kernels):
 *  - JAX's values and gradients (tests/linalg_jax.h, from tests/linalg_jax_values.py): the
 *    factor of a batch of non-symmetric inputs, every one of the 16 combinations of a
 *    solve's flags with large values in the triangle a solve must not read, cho_solve with
 *    vectors and either factor; the reference, the CPU's LAPACK kernels and the primitive
 *    form other backends run (src/passes/expand.c) must all give them in f64;
 *  - random shapes (batch axes, m from 0 to 70, f32 and f64) compiled against the reference
 *    under the memory plan, and the primitive form against the reference;
 *  - gradients and JVPs against central differences of the reference in f64, and the
 *    batching rule against the batched op;
 *  - a matrix that is not positive definite: NaN there, the rest of the batch factored;
 *  - every builder error: status, op, operand types and the caller's line. */
#include "compare.h"
#include "linalg_jax.h"
#include "passes/passes.h"
#include "rng.h"

#include <math.h>

static kiln_context *C;
static uint64_t seed;

static kiln_array *array(kiln_dtype t, int rank, const int64_t *dims, const double *v) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    size_t isz = kiln_dtype_itemsize(t);
    char *buf = malloc((size_t)(n ? n : 1) * isz);
    for (int64_t i = 0; i < n; i++) {
        if (t == KILN_DTYPE_F32)
            ((float *)buf)[i] = (float)v[i];
        else
            ((double *)buf)[i] = v[i];
    }
    kiln_array *a = NULL;
    CHECK_OK(C, kiln_array_create(C, t, rank, dims, buf, &a));
    free(buf);
    return a;
}

/* |got - want| <= tol (1 + |want|) everywhere, NaN where want is NaN. */
static int near_values(const kiln_array *a, const double *want, int64_t n, double tol,
                       const char *what) {
    kiln_dtype t = kiln_array_dtype(a);
    size_t isz = kiln_dtype_itemsize(t);
    char *buf = malloc((size_t)(n ? n : 1) * isz);
    CHECK_OK(C, kiln_array_copy_to_host(a, buf, (size_t)n * isz));
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++) {
        double g = t == KILN_DTYPE_F32 ? ((float *)buf)[i] : ((double *)buf)[i];
        bool good = isnan(want[i]) ? isnan(g) : fabs(g - want[i]) <= tol * (1 + fabs(want[i]));
        if (!good) {
            fprintf(stderr, "%s: element %lld is %.17g, want %.17g\n", what, (long long)i, g,
                    want[i]);
            ok = 0;
        }
    }
    free(buf);
    return ok;
}

enum { REFERENCE, COMPILED, PRIMITIVES, N_WAYS };
static const char *const way_name[N_WAYS] = {"reference", "compiled", "primitive form"};

/* g's outputs by `way`: the interpreter, the CPU's kernels, or g's primitive form
 * (expand.c, as a device without the kernels gets it) compiled for the CPU. */
static kiln_status run_way(kiln_graph *g, int way, int n_args, kiln_array **args, int n_out,
                           kiln_array **outs) {
    if (way == REFERENCE) return kiln_interpret(g, n_args, args, n_out, outs);
    kiln_graph *x = NULL;
    if (way == PRIMITIVES) {
        kiln_status s = pass_expand_run(g, PASS_EXPAND_LINALG, &x);
        if (s) return s; /* x NULL: g holds no linear algebra op */
    }
    kiln_executable *e = NULL;
    kiln_status s = kiln_compile(x ? x : g, NULL, &e);
    if (!s) s = kiln_executable_run(e, n_args, args, n_out, outs);
    kiln_executable_destroy(e);
    kiln_graph_destroy(x);
    return s;
}

/* Runs g every way and checks output i against want[i] (n[i] elements). */
static void check_ways(const char *name, kiln_graph *g, int n_args, kiln_array **args, int n_out,
                       const double *const *want, const int64_t *n, double tol) {
    for (int way = 0; way < N_WAYS; way++) {
        kiln_array *outs[8] = {0};
        CHECK_OK(C, run_way(g, way, n_args, args, n_out, outs));
        for (int i = 0; i < n_out; i++) {
            char what[160];
            snprintf(what, sizeof what, "%s, %s, output %d", name, way_name[way], i);
            if (outs[i]) CHECK_MSG(near_values(outs[i], want[i], n[i], tol, what), "%s", what);
            kiln_array_destroy(outs[i]);
        }
    }
}

/* sum(w * y) for a constant w of y's type. */
static kiln_value weighted(kiln_graph *g, kiln_value y, int rank, const int64_t *dims,
                           const double *w) {
    kiln_value wc = kiln_constant(g, KILN_DTYPE_F64, rank, dims, w);
    return kiln_reduce_sum(g, kiln_mul(g, wc, y), 0, NULL, false);
}

/* ------------------------------------------------------- JAX's values ---- */

static void jax_cholesky(void) {
    int64_t d[3] = {2, 4, 4};
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "jax cholesky", &g));
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F64, 3, d);
    kiln_value l = kiln_cholesky(g, a), ga;
    CHECK_OK(C, kiln_grad(g, weighted(g, l, 3, d, CHOL_W), 1, &a, &ga));
    kiln_value outs[2] = {l, ga};
    CHECK_OK(C, kiln_graph_finish(g, 2, outs));
    kiln_graph *prim = NULL; /* the primitive form replaces the op */
    CHECK_OK(C, pass_expand_run(g, PASS_EXPAND_LINALG, &prim));
    CHECK(prim != NULL);
    kiln_graph_destroy(prim);
    kiln_array *arg = array(KILN_DTYPE_F64, 3, d, CHOL_A);
    check_ways("jax cholesky", g, 1, &arg, 2, (const double *[]){CHOL_L, CHOL_GRAD},
               (int64_t[]){32, 32}, 1e-12);
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);

    /* lax's cholesky without symmetrize_input: the lower triangle as it stands (large
     * values above it), the same factor, and JAX's gradient for that call */
    CHECK_OK(C, kiln_graph_create(C, "cholesky from lower", &g));
    a = kiln_parameter(g, "a", KILN_DTYPE_F64, 3, d);
    l = kiln_cholesky_from_lower(g, a);
    CHECK_OK(C, kiln_grad(g, weighted(g, l, 3, d, CHOL_W), 1, &a, &ga));
    kiln_value raw_outs[2] = {l, ga};
    CHECK_OK(C, kiln_graph_finish(g, 2, raw_outs));
    arg = array(KILN_DTYPE_F64, 3, d, CHOL_RAW_A);
    check_ways("cholesky from lower", g, 1, &arg, 2, (const double *[]){CHOL_L, CHOL_RAW_GRAD},
               (int64_t[]){32, 32}, 1e-12);
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);

    /* not positive definite: NaN on and below the diagonal, as jnp.linalg.cholesky gives */
    int64_t d2[2] = {2, 2};
    CHECK_OK(C, kiln_graph_create(C, "not positive definite", &g));
    a = kiln_parameter(g, "a", KILN_DTYPE_F64, 2, d2);
    l = kiln_cholesky(g, a);
    CHECK_OK(C, kiln_graph_finish(g, 1, &l));
    arg = array(KILN_DTYPE_F64, 2, d2, (const double[]){1, 2, 2, 1});
    check_ways("not positive definite", g, 1, &arg, 1, (const double *[]){CHOL_NOT_PD_L},
               (int64_t[]){4}, 0);
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
}

static void jax_triangular_solve(void) {
    for (int i = 0; i < 16; i++) {
        const ts_case *c = &TS_CASES[i];
        int64_t da[3] = {2, 4, 4}, db[3] = {2, c->left ? 4 : 3, c->left ? 3 : 4};
        char name[96];
        snprintf(name, sizeof name, "jax solve left=%d lower=%d transpose=%d unit=%d", c->left,
                 c->lower, c->transpose, c->unit);
        kiln_graph *g = NULL;
        CHECK_OK(C, kiln_graph_create(C, name, &g));
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F64, 3, da);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F64, 3, db);
        kiln_triangular_solve_options o = {c->left, c->lower, c->transpose, c->unit};
        kiln_value x = kiln_triangular_solve(g, a, b, &o), grads[2];
        kiln_value wrt[2] = {a, b};
        CHECK_OK(C, kiln_grad(g, weighted(g, x, 3, db, c->left ? TS_W_LEFT : TS_W_RIGHT), 2, wrt,
                              grads));
        kiln_value outs[3] = {x, grads[0], grads[1]};
        CHECK_OK(C, kiln_graph_finish(g, 3, outs));
        kiln_array *args[2] = {array(KILN_DTYPE_F64, 3, da, c->a),
                               array(KILN_DTYPE_F64, 3, db, c->left ? TS_B_LEFT : TS_B_RIGHT)};
        check_ways(name, g, 2, args, 3, (const double *[]){c->x, c->ga, c->gb},
                   (int64_t[]){24, 32, 24}, 1e-12);
        kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
        kiln_graph_destroy(g);
    }
}

static void jax_cho_solve(void) {
    for (int lower = 0; lower < 2; lower++) {
        int64_t dc[3] = {2, 4, 4}, dbv[2] = {2, 4};
        kiln_graph *g = NULL;
        CHECK_OK(C, kiln_graph_create(C, lower ? "cho_solve lower" : "cho_solve upper", &g));
        kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F64, 3, dc);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F64, 2, dbv);
        kiln_value x = kiln_cho_solve(g, c, lower, b), grads[2], wrt[2] = {c, b};
        CHECK_OK(C, kiln_grad(g, weighted(g, x, 2, dbv, CHO_W), 2, wrt, grads));
        kiln_value outs[3] = {x, grads[0], grads[1]};
        CHECK_OK(C, kiln_graph_finish(g, 3, outs));
        kiln_array *args[2] = {array(KILN_DTYPE_F64, 3, dc, lower ? CHO_LOWER_C : CHO_UPPER_C),
                               array(KILN_DTYPE_F64, 2, dbv, CHO_B)};
        const double *want[3] = {lower ? CHO_LOWER_X : CHO_UPPER_X,
                                 lower ? CHO_LOWER_GC : CHO_UPPER_GC,
                                 lower ? CHO_LOWER_GB : CHO_UPPER_GB};
        check_ways(lower ? "cho_solve lower" : "cho_solve upper", g, 2, args, 3, want,
                   (int64_t[]){8, 32, 8}, 1e-12);
        kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
        kiln_graph_destroy(g);
    }
}

/* ------------------------------------------------- random, vs reference ---- */

/* A well-conditioned batch: symmetric positive definite (x x^T / m + I), or a triangle
 * with a diagonal in [1.5, 2.5] and off-diagonal entries in [-1, 1] / m (the other
 * triangle random too: it must not be read). */
static double *matrices(int64_t batch, int64_t m, bool spd, uint64_t *r) {
    double *a = calloc((size_t)(batch * m * m) + 1, sizeof *a);
    double *x = malloc((size_t)(m * m + 1) * sizeof *x);
    for (int64_t b = 0; b < batch; b++) {
        double *o = a + b * m * m;
        for (int64_t i = 0; i < m * m; i++) x[i] = test_rng_unit(r) * 2 - 1;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < m; j++) {
                if (spd) {
                    double s = i == j;
                    for (int64_t k = 0; k < m; k++) s += x[i * m + k] * x[j * m + k] / (double)m;
                    o[i * m + j] = s;
                } else
                    o[i * m + j] = i == j ? 1.5 + test_rng_unit(r) : x[i * m + j] / (double)m;
            }
    }
    free(x);
    return a;
}

static double *uniforms(int64_t n, uint64_t *r) {
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = test_rng_unit(r) * 2 - 1;
    return v;
}

static void random_shapes(void) {
    uint64_t r = seed;
    static const int64_t ms[] = {0, 1, 2, 5, 17, 70};
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
        double tol = t ? 1e-11 : 2e-4;
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            /* one right-hand side (trsv on the CPU) for every other order */
            int64_t m = ms[mi], n = mi % 2 ? 1 : 1 + (int64_t)(test_rng_unit(&r) * 300);
            int rank = 2 + (int)(test_rng_unit(&r) * 3); /* 0 to 2 batch axes */
            int64_t da[4], db[4], batch = 1;
            for (int i = 0; i < rank - 2; i++) da[i] = db[i] = 1 + (int64_t)(test_rng_unit(&r) * 3);
            for (int i = 0; i < rank - 2; i++) batch *= da[i];
            da[rank - 2] = da[rank - 1] = m;
            int flags = (int)(test_rng_unit(&r) * 16);
            if (n == 1) /* both sides, each dtype */
                flags = (flags & ~1) | (int)((mi / 2 + (size_t)t) & 1);
            kiln_triangular_solve_options o = {flags & 1, flags >> 1 & 1, flags >> 2 & 1,
                                               flags >> 3 & 1};
            db[rank - 2] = o.left_side ? m : n, db[rank - 1] = o.left_side ? n : m;
            double *spd = matrices(batch, m, true, &r), *tri = matrices(batch, m, false, &r);
            double *bv = uniforms(batch * m * n, &r);
            kiln_graph *g = NULL;
            char name[96];
            snprintf(name, sizeof name, "random %s m=%lld n=%lld rank %d flags %d",
                     kiln_dtype_name(dt), (long long)m, (long long)n, rank, flags);
            CHECK_OK(C, kiln_graph_create(C, name, &g));
            kiln_value pa = kiln_parameter(g, "spd", dt, rank, da);
            kiln_value pt = kiln_parameter(g, "tri", dt, rank, da);
            kiln_value pb = kiln_parameter(g, "b", dt, rank, db);
            /* the third factors a value that dies there into a temporary: planned in place
             * (symmetrised in place, then potrf over it) */
            kiln_value outs[3] = {kiln_cholesky(g, pa), kiln_triangular_solve(g, pt, pb, &o),
                                  kiln_neg(g, kiln_cholesky(g, kiln_add(g, pa, pa)))};
            CHECK_OK(C, kiln_graph_finish(g, 3, outs));
            kiln_array *args[3] = {array(dt, rank, da, spd), array(dt, rank, da, tri),
                                   array(dt, rank, db, bv)};
            CHECK_MSG(cmp_graph(C, g, 3, args, NULL, tol, NULL), "%s: compiled", name);
            /* the primitive form against the reference */
            kiln_array *want[3] = {0}, *got[3] = {0};
            CHECK_OK(C, run_way(g, REFERENCE, 3, args, 3, want));
            CHECK_OK(C, run_way(g, PRIMITIVES, 3, args, 3, got));
            for (int i = 0; i < 3; i++) {
                if (got[i] && want[i])
                    CHECK_MSG(cmp_arrays(got[i], want[i], tol, tol, name), "%s: primitives %d",
                              name, i);
                kiln_array_destroy(got[i]), kiln_array_destroy(want[i]);
            }
            for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
            kiln_graph_destroy(g);
            free(spd), free(tri), free(bv);
        }
    }
}

/* Orders from 384 are factored in blocks of 128 on the whole pool: against the reference
 * (f32 and f64, 4 blocks, the last one short), a failure in the third block, and the same
 * bits on one thread as on the default pool. */
static void blocked(void) {
    uint64_t r = seed + 4;
    int64_t m = 450, d[3] = {2, m, m};
    double *a = matrices(2, m, true, &r);
    a[m * m + 300 * m + 300] = -1e3; /* matrix 1: a pivot in the third block fails */
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
        kiln_graph *g = NULL;
        CHECK_OK(C, kiln_graph_create(C, "blocked", &g));
        kiln_value l = kiln_cholesky(g, kiln_parameter(g, "a", dt, 3, d));
        CHECK_OK(C, kiln_graph_finish(g, 1, &l));
        kiln_array *arg = array(dt, 3, d, a);
        CHECK_MSG(cmp_graph(C, g, 1, &arg, NULL, t ? 1e-11 : 1e-4, NULL), "blocked %s",
                  kiln_dtype_name(dt));
        char dir[] = "/tmp/kiln-linalg-XXXXXX";
        kiln_context *one = mkdtemp(dir) ? test_threads_context(dir, 1) : NULL;
        kiln_array *x1 = NULL, *y1 = NULL, *y2 = NULL;
        kiln_executable *e1 = NULL, *e2 = NULL;
        size_t bytes = (size_t)(2 * m * m) * kiln_dtype_itemsize(dt);
        char *h = malloc(bytes), *h1 = malloc(bytes), *h2 = malloc(bytes);
        CHECK_OK(C, kiln_array_copy_to_host(arg, h, bytes));
        if (one) {
            kiln_graph *g1 = NULL;
            CHECK_OK(one, kiln_graph_create(one, "blocked one thread", &g1));
            kiln_value l1 = kiln_cholesky(g1, kiln_parameter(g1, "a", dt, 3, d));
            CHECK_OK(one, kiln_graph_finish(g1, 1, &l1));
            CHECK_OK(one, kiln_array_create(one, dt, 3, d, h, &x1));
            CHECK_OK(one, kiln_compile(g1, NULL, &e1));
            if (e1) CHECK_OK(one, kiln_executable_run(e1, 1, &x1, 1, &y1));
            kiln_graph_destroy(g1);
        }
        CHECK_OK(C, kiln_compile(g, NULL, &e2));
        if (e2) CHECK_OK(C, kiln_executable_run(e2, 1, &arg, 1, &y2));
        if (y1 && y2) {
            CHECK_OK(C, kiln_array_copy_to_host(y1, h1, bytes));
            CHECK_OK(C, kiln_array_copy_to_host(y2, h2, bytes));
            CHECK_MSG(!memcmp(h1, h2, bytes), "blocked %s: one thread and the pool differ",
                      kiln_dtype_name(dt));
            bool nan_ok = true; /* matrix 1 failed: NaN on and below its diagonal */
            for (int64_t i = 0; i < m * m && nan_ok; i++) {
                double v = t ? ((double *)h2)[m * m + i] : ((float *)h2)[m * m + i];
                nan_ok = isnan(v) == (i % m <= i / m);
            }
            CHECK_MSG(nan_ok, "blocked %s: the failed matrix", kiln_dtype_name(dt));
        }
        kiln_executable_destroy(e1), kiln_executable_destroy(e2);
        kiln_array_destroy(x1), kiln_array_destroy(y1), kiln_array_destroy(y2);
        if (one) kiln_context_destroy(one), test_remove_dir(dir);
        free(h), free(h1), free(h2);
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }
    free(a);
}

/* Matrix 1 of a batch of 3 is not positive definite: NaN in its lower triangle only,
 * every way. */
static void batch_with_a_failure(void) {
    uint64_t r = seed + 1;
    int64_t d[3] = {3, 6, 6};
    double *a = matrices(3, 6, true, &r);
    a[36 + 2 * 6 + 2] = -1; /* a negative pivot */
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "one failure", &g));
    kiln_value l = kiln_cholesky(g, kiln_parameter(g, "a", KILN_DTYPE_F64, 3, d));
    CHECK_OK(C, kiln_graph_finish(g, 1, &l));
    kiln_array *arg = array(KILN_DTYPE_F64, 3, d, a), *want = NULL;
    CHECK_OK(C, kiln_interpret(g, 1, &arg, 1, &want));
    double *w = malloc(108 * sizeof *w);
    CHECK_OK(C, kiln_array_copy_to_host(want, w, 108 * sizeof *w));
    for (int i = 0; i < 108; i++) /* NaN on and below the diagonal of matrix 1 */
        CHECK_MSG(isnan(w[i]) == (i >= 36 && i < 72 && i % 6 <= (i - 36) / 6), "element %d", i);
    check_ways("one failure", g, 1, &arg, 1, (const double *[]){w}, (int64_t[]){108}, 1e-12);
    free(w), free(a);
    kiln_array_destroy(arg), kiln_array_destroy(want);
    kiln_graph_destroy(g);
}

/* -------------------------------------------- derivatives, vs differences ---- */

/* f(a, b) = sum(w1 * cholesky(a)) + sum(w2 * solve(t, b, flags)) in f64 at (a, t, b); the
 * gradient and a JVP checked against central differences of the reference. */
static double eval_f(kiln_graph *g, kiln_array **args) {
    kiln_array *out = NULL;
    CHECK_OK(C, kiln_interpret(g, 3, args, 1, &out));
    double v = NAN;
    if (out) CHECK_OK(C, kiln_array_copy_to_host(out, &v, sizeof v));
    kiln_array_destroy(out);
    return v;
}

static void derivatives(void) {
    uint64_t r = seed + 2;
    for (int flags = 0; flags < 16; flags += 5) {
        int64_t m = 5, n = 3, da[3] = {2, 5, 5};
        kiln_triangular_solve_options o = {flags & 1, flags >> 1 & 1, flags >> 2 & 1,
                                           flags >> 3 & 1};
        int64_t db[3] = {2, o.left_side ? m : n, o.left_side ? n : m};
        double *a = matrices(2, m, true, &r), *t = matrices(2, m, false, &r);
        double *b = uniforms(2 * m * n, &r), *w1 = uniforms(50, &r), *w2 = uniforms(30, &r);
        double *dirs[3] = {uniforms(50, &r), uniforms(50, &r), uniforms(30, &r)};
        kiln_graph *g = NULL;
        CHECK_OK(C, kiln_graph_create(C, "derivatives", &g));
        kiln_value p[3] = {kiln_parameter(g, "a", KILN_DTYPE_F64, 3, da),
                           kiln_parameter(g, "t", KILN_DTYPE_F64, 3, da),
                           kiln_parameter(g, "b", KILN_DTYPE_F64, 3, db)};
        kiln_value f = kiln_add(g, weighted(g, kiln_cholesky(g, p[0]), 3, da, w1),
                                weighted(g, kiln_triangular_solve(g, p[1], p[2], &o), 3, db, w2));
        kiln_value grads[3], tans[3], jv;
        CHECK_OK(C, kiln_grad(g, f, 3, p, grads));
        for (int i = 0; i < 3; i++)
            tans[i] = kiln_constant(g, KILN_DTYPE_F64, 3, i < 2 ? da : db, dirs[i]);
        CHECK_OK(C, kiln_jvp(g, 1, &f, 3, p, tans, &jv));
        kiln_value outs[5] = {f, grads[0], grads[1], grads[2], jv};
        CHECK_OK(C, kiln_graph_finish(g, 5, outs));
        kiln_graph *fg = NULL; /* f alone, for the differences */
        CHECK_OK(C, kiln_graph_create(C, "f", &fg));
        kiln_value q[3] = {kiln_parameter(fg, "a", KILN_DTYPE_F64, 3, da),
                           kiln_parameter(fg, "t", KILN_DTYPE_F64, 3, da),
                           kiln_parameter(fg, "b", KILN_DTYPE_F64, 3, db)};
        kiln_value fq =
            kiln_add(fg, weighted(fg, kiln_cholesky(fg, q[0]), 3, da, w1),
                     weighted(fg, kiln_triangular_solve(fg, q[1], q[2], &o), 3, db, w2));
        CHECK_OK(C, kiln_graph_finish(fg, 1, &fq));

        double *vals[3] = {a, t, b};
        int64_t sizes[3] = {50, 50, 30};
        kiln_array *args[3];
        for (int i = 0; i < 3; i++) args[i] = array(KILN_DTYPE_F64, 3, i < 2 ? da : db, vals[i]);
        for (int way = 0; way < N_WAYS; way++) {
            kiln_array *res[5] = {0};
            CHECK_OK(C, run_way(g, way, 3, args, 5, res));
            double gbuf[50], jvp = 0, want_jvp = 0, h = 1e-6;
            for (int i = 0; i < 3; i++) {
                if (!res[i + 1]) continue;
                CHECK_OK(C, kiln_array_copy_to_host(res[i + 1], gbuf,
                                                    (size_t)sizes[i] * sizeof(double)));
                for (int64_t k = 0; k < sizes[i]; k++) {
                    double keep = vals[i][k], fp, fm;
                    kiln_array *save = args[i];
                    vals[i][k] = keep + h;
                    args[i] = array(KILN_DTYPE_F64, 3, i < 2 ? da : db, vals[i]);
                    fp = eval_f(fg, args);
                    kiln_array_destroy(args[i]);
                    vals[i][k] = keep - h;
                    args[i] = array(KILN_DTYPE_F64, 3, i < 2 ? da : db, vals[i]);
                    fm = eval_f(fg, args);
                    kiln_array_destroy(args[i]);
                    args[i] = save, vals[i][k] = keep;
                    double fd = (fp - fm) / (2 * h);
                    CHECK_MSG(fabs(gbuf[k] - fd) <= 1e-6 * (1 + fabs(fd)),
                              "%s: flags %d, d f / d %s[%lld] is %.12g, differences give %.12g",
                              way_name[way], flags,
                              i == 0   ? "a"
                              : i == 1 ? "t"
                                       : "b",
                              (long long)k, gbuf[k], fd);
                    want_jvp += fd * dirs[i][k];
                }
            }
            if (res[4]) CHECK_OK(C, kiln_array_copy_to_host(res[4], &jvp, sizeof jvp));
            CHECK_MSG(fabs(jvp - want_jvp) <= 1e-6 * (1 + fabs(want_jvp)),
                      "%s: flags %d: jvp %.12g, differences %.12g", way_name[way], flags, jvp,
                      want_jvp);
            for (int i = 0; i < 5; i++) kiln_array_destroy(res[i]);
        }
        for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]), free(dirs[i]);
        kiln_graph_destroy(g), kiln_graph_destroy(fg);
        free(a), free(t), free(b), free(w1), free(w2);
    }
}

/* ------------------------------------------------------------ batching ---- */

static int vmapped(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_triangular_solve_options o = {.left_side = true, .lower = true};
    outs[0] = kiln_cholesky(g, in[0]);
    outs[1] = kiln_triangular_solve(g, outs[0], in[1], &o);
    return 2;
}

/* kiln_vmap over a's leading axis (b unbatched) against the ops on the batch. */
static void batching(void) {
    uint64_t r = seed + 3;
    int64_t da[3] = {3, 4, 4}, db[2] = {4, 2};
    double *a = matrices(3, 4, true, &r), *b = uniforms(8, &r);
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "vmap", &g));
    kiln_value pa = kiln_parameter(g, "a", KILN_DTYPE_F64, 3, da);
    kiln_value pb = kiln_parameter(g, "b", KILN_DTYPE_F64, 2, db);
    kiln_value args[2] = {pa, pb}, v[2];
    CHECK_OK(C, kiln_vmap(g, vmapped, NULL, 2, args, (const int[]){0, -1}, 2, NULL, v));
    kiln_value l = kiln_cholesky(g, pa);
    kiln_value bb =
        kiln_broadcast_in_dim(g, pb, 3, (const int64_t[]){3, 4, 2}, (const int[]){1, 2});
    kiln_triangular_solve_options o = {.left_side = true, .lower = true};
    kiln_value x = kiln_triangular_solve(g, l, bb, &o);
    kiln_value outs[2] = {kiln_sub(g, v[0], l), kiln_sub(g, v[1], x)};
    CHECK_OK(C, kiln_graph_finish(g, 2, outs));
    kiln_array *in[2] = {array(KILN_DTYPE_F64, 3, da, a), array(KILN_DTYPE_F64, 2, db, b)};
    double zeros[48] = {0};
    check_ways("vmap", g, 2, in, 2, (const double *[]){zeros, zeros}, (int64_t[]){48, 24}, 0);
    kiln_array_destroy(in[0]), kiln_array_destroy(in[1]);
    kiln_graph_destroy(g);
    free(a), free(b);
}

/* ------------------------------------------------------ matrix helpers ---- */

/* x[i] = i + 1 over [2, 3, 4]: kiln_tril, kiln_triu and kiln_diagonal against the
 * definitions, index by index (numpy's: x[..., i, j] kept where j - i <= k, or >= k;
 * x[..., i, i + offset] over the chosen plane), kiln_eye likewise, and the diagonal's
 * gradient (ones where it reads). */
static void matrix_helpers(void) {
    int64_t d[3] = {2, 3, 4};
    double xv[24];
    for (int i = 0; i < 24; i++) xv[i] = i + 1;
    kiln_array *x = array(KILN_DTYPE_F64, 3, d, xv);
    for (int k = -3; k <= 4; k++) {
        double lo[24], up[24];
        for (int i = 0; i < 24; i++) {
            int r = i / 4 % 3, c = i % 4;
            lo[i] = c - r <= k ? xv[i] : 0;
            up[i] = c - r >= k ? xv[i] : 0;
        }
        kiln_graph *g = NULL;
        CHECK_OK(C, kiln_graph_create(C, "tril/triu", &g));
        kiln_value p = kiln_parameter(g, "x", KILN_DTYPE_F64, 3, d);
        kiln_value outs[3] = {kiln_tril(g, p, k), kiln_triu(g, p, k),
                              kiln_eye(g, KILN_DTYPE_F32, 3, 4, k)};
        CHECK_OK(C, kiln_graph_finish(g, 3, outs));
        double eye[12];
        for (int i = 0; i < 12; i++) eye[i] = i % 4 - i / 4 == k;
        char name[48];
        snprintf(name, sizeof name, "tril/triu/eye k=%d", k);
        check_ways(name, g, 1, &x, 3, (const double *[]){lo, up, eye}, (int64_t[]){24, 24, 12}, 0);
        kiln_graph_destroy(g);
    }
    static const int planes[][2] = {{0, 1}, {1, 2}, {-1, -2}, {2, 0}};
    for (int pl = 0; pl < 4; pl++)
        for (int off = -4; off <= 4; off++) {
            int a1 = planes[pl][0] < 0 ? planes[pl][0] + 3 : planes[pl][0];
            int a2 = planes[pl][1] < 0 ? planes[pl][1] + 3 : planes[pl][1];
            int other = 3 - a1 - a2;
            double want[16], grad[24] = {0};
            int n = 0;
            for (int o = 0; o < d[other]; o++)
                for (int i = 0; i < d[a1]; i++) {
                    int j = i + off;
                    if (j < 0 || j >= d[a2]) continue;
                    int idx[3];
                    idx[other] = o, idx[a1] = i, idx[a2] = j;
                    int at = (idx[0] * 3 + idx[1]) * 4 + idx[2];
                    want[n++] = xv[at], grad[at] = 1;
                }
            kiln_graph *g = NULL;
            CHECK_OK(C, kiln_graph_create(C, "diagonal", &g));
            kiln_value p = kiln_parameter(g, "x", KILN_DTYPE_F64, 3, d), gx;
            kiln_value dg = kiln_diagonal(g, p, off, planes[pl][0], planes[pl][1]);
            CHECK_OK(C, kiln_grad(g, kiln_reduce_sum(g, dg, 0, NULL, false), 1, &p, &gx));
            kiln_value outs[2] = {dg, gx};
            CHECK_OK(C, kiln_graph_finish(g, 2, outs));
            kiln_array *got = NULL, *got_grad = NULL, *two[2] = {0};
            CHECK_OK(C, run_way(g, COMPILED, 1, &x, 2, two));
            got = two[0], got_grad = two[1];
            kiln_array_destroy(got_grad);
            CHECK_MSG(got && kiln_array_size(got) == n &&
                          kiln_array_dim(got, 1) == (d[other] ? n / d[other] : 0),
                      "diagonal plane %d offset %d: %lld elements, want %d", pl, off,
                      got ? (long long)kiln_array_size(got) : -1LL, n);
            kiln_array_destroy(got);
            char name[64];
            snprintf(name, sizeof name, "diagonal plane %d offset %d", pl, off);
            check_ways(name, g, 1, &x, 2, (const double *[]){want, grad}, (int64_t[]){n, 24}, 0);
            kiln_graph_destroy(g);
        }
    kiln_array_destroy(x);
}

/* --------------------------------------------------------------- errors ---- */

static void expect_error(kiln_graph *g, kiln_status want, const char *op, const char *what) {
    CHECK_STATUS(kiln_graph_status(g), want);
    const char *msg = kiln_last_error(C);
    CHECK_CONTAINS(msg, op);
    CHECK_CONTAINS(msg, what);
    CHECK_CONTAINS(msg, "test_linalg.c:");
    kiln_graph_destroy(g);
}

static kiln_graph *fresh(void) {
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "errors", &g));
    return g;
}

static void errors(void) {
    int64_t sq[3] = {2, 3, 3}, rect[2] = {3, 4}, d3[2] = {3, 2}, d4[2] = {4, 2};
    kiln_graph *g = fresh();
    kiln_cholesky(g, kiln_parameter(g, "a", KILN_DTYPE_BF16, 3, sq));
    expect_error(g, KILN_STATUS_DTYPE, "kiln_cholesky", "bf16[2,3,3]");
    g = fresh();
    kiln_cholesky(g, kiln_parameter(g, "a", KILN_DTYPE_I32, 3, sq));
    expect_error(g, KILN_STATUS_DTYPE, "kiln_cholesky", "f32 or f64");
    g = fresh();
    kiln_cholesky(g, kiln_parameter(g, "a", KILN_DTYPE_F32, 2, rect));
    expect_error(g, KILN_STATUS_SHAPE, "kiln_cholesky", "square matrices");
    g = fresh();
    kiln_cholesky(g, kiln_parameter(g, "a", KILN_DTYPE_F32, 1, rect));
    expect_error(g, KILN_STATUS_SHAPE, "kiln_cholesky", "f32[3]");
    g = fresh();
    kiln_cholesky_from_lower(g, kiln_parameter(g, "a", KILN_DTYPE_F16, 2, rect));
    expect_error(g, KILN_STATUS_DTYPE, "kiln_cholesky_from_lower", "f16[3,4]");

    kiln_triangular_solve_options left = {.left_side = true};
    g = fresh();
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, (const int64_t[]){3, 3});
    kiln_triangular_solve(g, a, kiln_parameter(g, "b", KILN_DTYPE_F64, 2, d3), &left);
    expect_error(g, KILN_STATUS_DTYPE, "kiln_triangular_solve", "f64[3,2]");
    g = fresh();
    a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, (const int64_t[]){3, 3});
    kiln_triangular_solve(g, a, kiln_parameter(g, "b", KILN_DTYPE_F32, 2, d4), &left);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_triangular_solve", "m = 3");
    g = fresh(); /* right side: b is [n, m] */
    a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, (const int64_t[]){3, 3});
    kiln_triangular_solve(g, a, kiln_parameter(g, "b", KILN_DTYPE_F32, 2, d3), NULL);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_triangular_solve", "not left_side");
    g = fresh(); /* batch axes differ */
    a = kiln_parameter(g, "a", KILN_DTYPE_F32, 3, sq);
    kiln_triangular_solve(g, a, kiln_parameter(g, "b", KILN_DTYPE_F32, 2, d3), &left);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_triangular_solve", "batch axes");
    g = fresh();
    a = kiln_parameter(g, "a", KILN_DTYPE_F32, 3, sq);
    kiln_cho_solve(g, a, true, kiln_parameter(g, "b", KILN_DTYPE_F32, 1, (const int64_t[]){3}));
    expect_error(g, KILN_STATUS_SHAPE, "kiln_cho_solve", "[..., m] or [..., m, n]");
    g = fresh();
    kiln_cho_solve(g, KILN_VALUE_NONE, true, KILN_VALUE_NONE);
    expect_error(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_cho_solve", "invalid value");

    g = fresh();
    kiln_tril(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (const int64_t[]){3}), 0);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_tril", "two axes");
    g = fresh();
    kiln_diagonal(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 3, sq), 0, 1, -2);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_diagonal", "axis1 = 1 and axis2 = -2");
    g = fresh();
    kiln_eye(g, KILN_DTYPE_F32, -1, 3, 0);
    expect_error(g, KILN_STATUS_SHAPE, "kiln_eye", "n = -1");

    /* the text form round-trips the flags, and a loaded graph is typed by the same rules */
    g = fresh();
    a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, (const int64_t[]){3, 3});
    kiln_triangular_solve_options lu = {.left_side = true, .unit_diagonal = true};
    kiln_value x = kiln_triangular_solve(g, a, kiln_parameter(g, "b", KILN_DTYPE_F32, 2, d3), &lu);
    CHECK_OK(C, kiln_graph_finish(g, 1, &x));
    char *text = kiln_graph_to_string(g), *again = NULL;
    CHECK(text && strstr(text, "triangular_solve") && strstr(text, " left_side unit_diagonal"));
    kiln_graph *lg = NULL;
    if (text) CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "text", &lg));
    if (lg) again = kiln_graph_to_string(lg);
    CHECK_MSG(again && !strcmp(text, again), "round trip:\n%s\n%s", text ? text : "(none)",
              again ? again : "(none)");
    kiln_graph_destroy(lg), lg = NULL;
    for (char *p = text ? strstr(text, "f32[3,2]") : NULL; p; p = strstr(p, "f32[3,2]")) p[4] = '4';
    if (text) CHECK_STATUS(kiln_graph_parse(C, text, strlen(text), "text", &lg), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(C), "triangular_solve");
    kiln_graph_destroy(lg);
    kiln_string_free(C, text), kiln_string_free(C, again);
    kiln_graph_destroy(g);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    C = test_context();
    seed = test_seed(0x11a1ab);
    RUN(jax_cholesky);
    RUN(jax_triangular_solve);
    RUN(jax_cho_solve);
    RUN(random_shapes);
    RUN(batch_with_a_failure);
    RUN(blocked);
    RUN(derivatives);
    RUN(batching);
    RUN(matrix_helpers);
    RUN(errors);
    kiln_context_destroy(C);
    return test_summary("test_linalg");
}
