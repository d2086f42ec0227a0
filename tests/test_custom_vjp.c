/* test_custom_vjp.c — kiln_custom_vjp (jax.custom_vjp; src/trace/custom_vjp.c, the transform's
 * side in src/autodiff/grad.c): the user's backward function is what kiln_grad uses.
 *
 * The classic examples, each against values computed by hand here (not kiln's output): a
 * log(1 + exp(x)) whose rule is the stable logistic(x) where autodiff's overflows to NaN,
 * a gradient clip and a straight-through estimator (custom gradients on purpose unlike the
 * true ones, so a test that passes has used them), a rule equal to the true derivative
 * against central finite differences, and nesting and gradients of gradients. Then the
 * places a call lives in: kiln_jit, a kiln_scan body (whose VJP recomputes the body on a
 * graph of its own and must call bwd there), a checkpoint region; compiled against the
 * reference interpreter; and the errors, with their messages and lines. */
#include "compare.h"

#include <math.h>
#include <string.h>

static kiln_context *ctx;

static kiln_value sum(kiln_graph *g, kiln_value x) {
    return kiln_reduce_sum(g, x, 0, NULL, false);
}

/* ------------------------------------------------------- the functions ---- */

/* log(1 + exp(x)) traced naively; residual: x itself (a value made before the call). */
static int log1pexp_fwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = kiln_log1p(g, kiln_exp(g, in[0]));
    outs[1] = in[0];
    return 2;
}

/* d/dx = logistic(x), which never overflows. in: x, then the output's cotangent. */
static int log1pexp_bwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = kiln_mul(g, in[1], kiln_logistic(g, in[0]));
    return 1;
}

/* The same with its residual computed inside fwd (logistic(x)), for the checkpoint test. */
static int log1pexp_fwd2(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = kiln_log1p(g, kiln_exp(g, in[0]));
    outs[1] = kiln_logistic(g, in[0]);
    return 2;
}

static int log1pexp_bwd2(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = kiln_mul(g, in[1], in[0]);
    return 1;
}

/* Identity forward (it returns its argument); the backward clips the cotangent to [-1, 1]. */
static int clip_fwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)g, (void)n, (void)user;
    outs[0] = in[0];
    return 1;
}

static int clip_bwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_dtype t;
    kiln_value_type(g, in[0], &t, NULL, NULL);
    outs[0] = kiln_min(g, kiln_max(g, in[0], kiln_scalar(g, t, -1)), kiln_scalar(g, t, 1));
    return 1;
}

static kiln_value clip_grad(kiln_graph *g, kiln_value x) {
    kiln_value y = KILN_VALUE_NONE;
    kiln_custom_vjp(g, clip_fwd, clip_bwd, NULL, 1, &x, 1, &y);
    return y;
}

/* Straight-through estimator: floor(x) forward (no gradient of its own), identity backward. */
static int ste_fwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = kiln_floor(g, in[0]);
    return 1;
}

static int ste_bwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)g, (void)n, (void)user;
    outs[0] = in[0];
    return 1;
}

/* Two args, two outputs, residuals inside: o1 = sin(x) * y, o2 = exp(x); the true rule. */
static int two_fwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_value s = kiln_sin(g, in[0]), c = kiln_cos(g, in[0]);
    outs[0] = kiln_mul(g, s, in[1]);
    outs[1] = kiln_exp(g, in[0]);
    outs[2] = s, outs[3] = c, outs[4] = in[1], outs[5] = outs[1];
    return 6;
}

static int two_bwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user; /* in: sin, cos, y, exp, then g1, g2 */
    kiln_value g1 = in[4], g2 = in[5];
    outs[0] = kiln_add(g, kiln_mul(g, kiln_mul(g, g1, in[1]), in[2]), kiln_mul(g, g2, in[3]));
    outs[1] = kiln_mul(g, g1, in[0]);
    return 2;
}

/* x^3 with its residual x * x made inside: d/dx = 3 r. */
static int cube_fwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_value r = kiln_mul(g, in[0], in[0]);
    outs[0] = kiln_mul(g, r, in[0]);
    outs[1] = r;
    return 2;
}

static int cube_bwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_dtype t;
    kiln_value_type(g, in[0], &t, NULL, NULL);
    outs[0] = kiln_mul(g, kiln_mul(g, in[1], in[0]), kiln_scalar(g, t, 3));
    return 1;
}

/* Outer call whose fwd returns an inner call's output as its own; its bwd doubles. */
static int outer_fwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = clip_grad(g, in[0]);
    return 1;
}

static int double_bwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = kiln_add(g, in[0], in[0]);
    return 1;
}

/* ------------------------------------------------------------- helpers ---- */

/* Runs g (interpreted) on the f64 or f32 host values given; out[i] receives output i. */
static void run(kiln_graph *g, kiln_dtype t, int n_args, const int *rank, const int64_t (*dims)[2],
                const void *const *vals, int n_out, kiln_array **out) {
    kiln_array *args[4] = {0};
    for (int i = 0; i < n_args; i++)
        CHECK_OK(ctx, kiln_array_create(ctx, t, rank[i], dims[i], vals[i], &args[i]));
    CHECK_OK(ctx, kiln_interpret(g, n_args, args, n_out, out));
    CHECK_MSG(cmp_graph(ctx, g, n_args, args, NULL, 1e-5, NULL), "compiled as interpreted");
    for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
}

static void host(kiln_array *a, void *dst, size_t bytes) {
    CHECK_OK(ctx, kiln_array_copy_to_host(a, dst, bytes));
    kiln_array_destroy(a);
}

/* --------------------------------------------------------------- tests ---- */

/* log1pexp at x = 100 in f32: the naive gradient is exp(100) / (1 + exp(100)) = inf / inf;
 * the custom one is logistic(x). */
static void test_log1pexp(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "log1pexp", &g);
    int64_t d[1] = {4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d), y, outs[2];
    CHECK_OK(ctx, kiln_custom_vjp(g, log1pexp_fwd, log1pexp_bwd, NULL, 1, &x, 1, &y));
    outs[0] = sum(g, y);
    CHECK_OK(ctx, kiln_grad(g, outs[0], 1, &x, &outs[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    float xv[4] = {-3, 0, 2, 100}, gv[4];
    const void *vals[1] = {xv};
    int rank[1] = {1};
    const int64_t dims[1][2] = {{4}};
    kiln_array *res[2] = {0};
    run(g, KILN_DTYPE_F32, 1, rank, dims, vals, 2, res);
    kiln_array_destroy(res[0]);
    host(res[1], gv, sizeof gv);
    for (int i = 0; i < 4; i++) CHECK_NEAR(gv[i], 1 / (1 + exp(-(double)xv[i])), 1e-6);
    kiln_graph_destroy(g);
}

/* loss = sum(c * clip_grad(x)), c = [3, -0.5, -7]: the true gradient is c, the clipped one
 * clip(c, -1, 1). */
static void test_clip(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "clip", &g);
    int64_t d[1] = {3};
    double cv[3] = {3, -0.5, -7};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, d), outs[3];
    kiln_value c = kiln_constant(g, KILN_DTYPE_F64, 1, d, cv);
    kiln_value y = clip_grad(g, x);
    outs[0] = sum(g, kiln_mul(g, c, y));
    CHECK_OK(ctx, kiln_grad(g, outs[0], 1, &x, &outs[1]));
    outs[2] = y; /* the forward is the identity */
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    double xv[3] = {0.25, -2, 5}, gv[3], yv[3];
    const void *vals[1] = {xv};
    int rank[1] = {1};
    const int64_t dims[1][2] = {{3}};
    kiln_array *res[3] = {0};
    run(g, KILN_DTYPE_F64, 1, rank, dims, vals, 3, res);
    kiln_array_destroy(res[0]);
    host(res[1], gv, sizeof gv);
    host(res[2], yv, sizeof yv);
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(gv[i], fmax(-1, fmin(1, cv[i])), 0);
        CHECK_NEAR(yv[i], xv[i], 0);
    }
    kiln_graph_destroy(g);
}

/* loss = sum(floor(x) * w) with floor straight-through: d/dx = w (autodiff: 0), d/dw =
 * floor(x). */
static void test_straight_through(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "ste", &g);
    int64_t d[1] = {3};
    kiln_value p[2] = {kiln_parameter(g, "x", KILN_DTYPE_F64, 1, d),
                       kiln_parameter(g, "w", KILN_DTYPE_F64, 1, d)};
    kiln_value y, outs[3];
    CHECK_OK(ctx, kiln_custom_vjp(g, ste_fwd, ste_bwd, NULL, 1, &p[0], 1, &y));
    outs[0] = sum(g, kiln_mul(g, y, p[1]));
    CHECK_OK(ctx, kiln_grad(g, outs[0], 2, p, &outs[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    double xv[3] = {1.5, -0.25, 3}, wv[3] = {2, -3, 0.5}, gx[3], gw[3];
    const void *vals[2] = {xv, wv};
    int rank[2] = {1, 1};
    const int64_t dims[2][2] = {{3}, {3}};
    kiln_array *res[3] = {0};
    run(g, KILN_DTYPE_F64, 2, rank, dims, vals, 3, res);
    kiln_array_destroy(res[0]);
    host(res[1], gx, sizeof gx);
    host(res[2], gw, sizeof gw);
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(gx[i], wv[i], 0);
        CHECK_NEAR(gw[i], floor(xv[i]), 0);
    }
    kiln_graph_destroy(g);
}

/* The loss of the two-output call: sum(o1^2) + sum(o2 * o1). */
static kiln_graph *two_graph(bool with_grad) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "two", &g);
    int64_t d[1] = {3};
    kiln_value p[2] = {kiln_parameter(g, "x", KILN_DTYPE_F64, 1, d),
                       kiln_parameter(g, "y", KILN_DTYPE_F64, 1, d)};
    kiln_value o[2], outs[3];
    CHECK_OK(ctx, kiln_custom_vjp(g, two_fwd, two_bwd, NULL, 2, p, 2, o));
    outs[0] = kiln_add(g, sum(g, kiln_mul(g, o[0], o[0])), sum(g, kiln_mul(g, o[1], o[0])));
    if (with_grad) CHECK_OK(ctx, kiln_grad(g, outs[0], 2, p, &outs[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, with_grad ? 3 : 1, outs));
    return g;
}

/* A rule equal to the true derivative: central differences of the loss, interpreted. */
static void test_true_rule_fd(void) {
    kiln_graph *g = two_graph(true), *f = two_graph(false);
    double xy[2][3] = {{0.3, -1.1, 2.0}, {0.7, 0.2, -0.4}}, grads[2][3];
    const void *vals[2] = {xy[0], xy[1]};
    int rank[2] = {1, 1};
    const int64_t dims[2][2] = {{3}, {3}};
    kiln_array *res[3] = {0};
    run(g, KILN_DTYPE_F64, 2, rank, dims, vals, 3, res);
    kiln_array_destroy(res[0]);
    host(res[1], grads[0], sizeof grads[0]);
    host(res[2], grads[1], sizeof grads[1]);
    const double h = 1e-6;
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < 3; i++) {
            double x0 = xy[a][i], l[2];
            for (int s = 0; s < 2; s++) {
                xy[a][i] = x0 + (s ? -h : h);
                kiln_array *args[2], *out = NULL;
                for (int k = 0; k < 2; k++)
                    kiln_array_create(ctx, KILN_DTYPE_F64, 1, dims[k], xy[k], &args[k]);
                CHECK_OK(ctx, kiln_interpret(f, 2, args, 1, &out));
                host(out, &l[s], sizeof l[s]);
                kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
            }
            xy[a][i] = x0;
            double fd = (l[0] - l[1]) / (2 * h);
            CHECK_MSG(fabs(fd - grads[a][i]) < 1e-6 * (1 + fabs(fd)), "arg %d [%d]: %g, fd %g", a,
                      i, grads[a][i], fd);
        }
    kiln_graph_destroy(g);
    kiln_graph_destroy(f);
}

/* The outer call's rule (doubling) is used, not the inner clip its fwd returns; and a second
 * kiln_grad differentiates a bwd's ops (x^3's rule 3 x^2, again: 6 x). */
static void test_nested_and_second_order(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "nested", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL), y, c, outs[3];
    CHECK_OK(ctx, kiln_custom_vjp(g, outer_fwd, double_bwd, NULL, 1, &x, 1, &y));
    kiln_value l1 = kiln_mul(g, y, kiln_scalar(g, KILN_DTYPE_F64, 5));
    CHECK_OK(ctx, kiln_grad(g, l1, 1, &x, &outs[0])); /* 2 * 5, not clip(5) = 1 */
    CHECK_OK(ctx, kiln_custom_vjp(g, cube_fwd, cube_bwd, NULL, 1, &x, 1, &c));
    CHECK_OK(ctx, kiln_grad(g, c, 1, &x, &outs[1]));       /* 3 x^2 */
    CHECK_OK(ctx, kiln_grad(g, outs[1], 1, &x, &outs[2])); /* 6 x */
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    double xv = -1.5, r[3];
    const void *vals[1] = {&xv};
    int rank[1] = {0};
    const int64_t dims[1][2] = {{0}};
    kiln_array *res[3] = {0};
    run(g, KILN_DTYPE_F64, 1, rank, dims, vals, 3, res);
    for (int i = 0; i < 3; i++) host(res[i], &r[i], sizeof r[i]);
    CHECK_NEAR(r[0], 10, 0);
    CHECK_NEAR(r[1], 3 * xv * xv, 1e-15);
    CHECK_NEAR(r[2], 6 * xv, 1e-15);
    kiln_graph_destroy(g);
}

/* jit: loss = sum(c * clip_grad(x)) and its gradient, traced by kiln_jit. */
static int jit_fn(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                  kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    kiln_value y = clip_grad(g, args[0]);
    outs[0] = sum(g, kiln_mul(g, y, kiln_scalar(g, KILN_DTYPE_F32, -4)));
    kiln_grad(g, outs[0], 1, args, &outs[1]);
    return 2;
}

static void test_jit(void) {
    kiln_jit_options o = {.name = "custom", .fn = jit_fn};
    kiln_jit *j = NULL;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t d[1] = {5};
    float xv[5] = {1, 2, 3, 4, 5}, gv[5], lv;
    kiln_array *a = NULL, *outs[2] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, d, xv, &a);
    CHECK_OK(ctx, kiln_jit_call(j, 1, &a, NULL, 0, 2, outs));
    host(outs[0], &lv, sizeof lv);
    host(outs[1], gv, sizeof gv);
    CHECK_NEAR(lv, -60, 0);
    for (int i = 0; i < 5; i++) CHECK_NEAR(gv[i], -1, 0);
    kiln_array_destroy(a);
    kiln_jit_destroy(j);
}

/* A scan body c' = clip_grad(3 c) + x: the cotangent of c is 3 clip(ct), so d c_L / d c0 = 3
 * (the true one 3^L) and d c_L / d x_i = 3 but 1 for the last. */
static int scan_body(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_value t = kiln_mul(g, in[0], kiln_scalar(g, KILN_DTYPE_F64, 3));
    outs[0] = kiln_add(g, clip_grad(g, t), in[1]);
    return 1;
}

static void test_scan(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "scan", &g);
    int64_t d[1] = {4};
    kiln_value p[2] = {kiln_parameter(g, "c0", KILN_DTYPE_F64, 0, NULL),
                       kiln_parameter(g, "xs", KILN_DTYPE_F64, 1, d)};
    kiln_value c, outs[3];
    int n = 0;
    CHECK_OK(ctx, kiln_scan(g, scan_body, NULL, 1, &p[0], 1, &p[1], NULL, &n, &c));
    outs[0] = c;
    CHECK_OK(ctx, kiln_grad(g, c, 2, p, &outs[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    double c0 = 0.5, xs[4] = {1, -1, 2, 0.5}, r, gc, gx[4];
    const void *vals[2] = {&c0, xs};
    int rank[2] = {0, 1};
    const int64_t dims[2][2] = {{0}, {4}};
    kiln_array *res[3] = {0};
    run(g, KILN_DTYPE_F64, 2, rank, dims, vals, 3, res);
    host(res[0], &r, sizeof r);
    host(res[1], &gc, sizeof gc);
    host(res[2], gx, sizeof gx);
    double want = c0;
    for (int i = 0; i < 4; i++) want = 3 * want + xs[i];
    CHECK_NEAR(r, want, 1e-12);
    CHECK_NEAR(gc, 3, 0);
    for (int i = 0; i < 4; i++) CHECK_NEAR(gx[i], i == 3 ? 1 : 3, 0);
    kiln_graph_destroy(g);
}

/* A cond whose true branch rounds straight-through: d/dx = 3 there (autodiff: 0), 2 in the
 * false branch (plain ops). */
static int ste_branch(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    kiln_value y = KILN_VALUE_NONE;
    kiln_custom_vjp(g, ste_fwd, ste_bwd, NULL, 1, in, 1, &y);
    outs[0] = kiln_mul(g, y, kiln_scalar(g, KILN_DTYPE_F64, 3));
    return 1;
}

static int plain_branch(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = kiln_add(g, in[0], in[0]);
    return 1;
}

static void test_cond(void) {
    for (int taken = 0; taken < 2; taken++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "cond", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL), y, outs[2];
        kiln_value pred = kiln_compare(g, kiln_scalar(g, KILN_DTYPE_F64, taken),
                                       kiln_scalar(g, KILN_DTYPE_F64, 0.5), KILN_CMP_GT);
        int n = 0;
        CHECK_OK(ctx, kiln_cond(g, pred, ste_branch, plain_branch, NULL, 1, &x, &n, &y));
        outs[0] = y;
        CHECK_OK(ctx, kiln_grad(g, y, 1, &x, &outs[1]));
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        double xv = 2.75, r[2];
        const void *vals[1] = {&xv};
        int rank[1] = {0};
        const int64_t dims[1][2] = {{0}};
        kiln_array *res[2] = {0};
        run(g, KILN_DTYPE_F64, 1, rank, dims, vals, 2, res);
        host(res[0], &r[0], sizeof r[0]);
        host(res[1], &r[1], sizeof r[1]);
        CHECK_NEAR(r[0], taken ? 6 : 5.5, 0);
        CHECK_NEAR(r[1], taken ? 3 : 2, 0);
        kiln_graph_destroy(g);
    }
}

/* In a nothing_saveable region: the residual logistic(x), made inside fwd, is recomputed for
 * the backward pass when compiled; the gradient is the same (run checks compiled against
 * interpreted) and the custom one (x = 100 in f32 is finite). */
static void test_checkpoint(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "remat", &g);
    int64_t d[1] = {4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d), y, outs[2];
    CHECK_OK(ctx, kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE, 0, NULL));
    kiln_value t = kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 2));
    CHECK_OK(ctx, kiln_custom_vjp(g, log1pexp_fwd2, log1pexp_bwd2, NULL, 1, &t, 1, &y));
    y = kiln_tanh(g, y);
    CHECK_OK(ctx, kiln_checkpoint_end(g));
    outs[0] = sum(g, y);
    CHECK_OK(ctx, kiln_grad(g, outs[0], 1, &x, &outs[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    float xv[4] = {-1, 0, 0.5, 50}, gv[4];
    const void *vals[1] = {xv};
    int rank[1] = {1};
    const int64_t dims[1][2] = {{4}};
    kiln_array *res[2] = {0};
    run(g, KILN_DTYPE_F32, 1, rank, dims, vals, 2, res);
    kiln_array_destroy(res[0]);
    host(res[1], gv, sizeof gv);
    kiln_executable *e = NULL;
    kiln_memory_analysis ma;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &ma));
    CHECK_MSG(ma.remat_num_recomputed > 0, "nothing recomputed (%d)", ma.remat_num_recomputed);
    kiln_executable_destroy(e);
    for (int i = 0; i < 4; i++) {
        double tt = 2.0 * xv[i], sp = tt > 30 ? tt : log1p(exp(tt)), th = tanh(sp);
        CHECK_NEAR(gv[i], (1 - th * th) * 2 / (1 + exp(-tt)), 1e-5);
    }
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------------- errors ---- */

static int short_fwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)g, (void)n, (void)user, (void)in, (void)outs;
    return 0;
}

static int two_count_bwd(kiln_graph *g, int n, const kiln_value *in, void *user, kiln_value *outs) {
    (void)g, (void)n, (void)user;
    outs[0] = outs[1] = in[0];
    return 2;
}

static int wrong_type_bwd(kiln_graph *g, int n, const kiln_value *in, void *user,
                          kiln_value *outs) {
    (void)n, (void)user;
    outs[0] = sum(g, in[0]);
    return 1;
}

static void test_errors(void) {
    for (int i = 0; i < 5; i++) {
        kiln_graph *g = NULL, *other = NULL;
        kiln_graph_create(ctx, "bad", &g);
        kiln_graph_create(ctx, "other", &other);
        int64_t d[1] = {3};
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d), y, gr;
        kiln_value z = kiln_parameter(other, "z", KILN_DTYPE_F32, 1, d);
        const char *want = NULL;
        // clang-format off
        int line = __LINE__ + 2;
        switch (i) {
        case 0: kiln_custom_vjp(g, NULL, clip_bwd, NULL, 1, &x, 1, &y); want = "kiln_custom_vjp: the fwd function is NULL"; break;
        case 1: kiln_custom_vjp(g, clip_fwd, NULL, NULL, 1, &x, 1, &y); want = "kiln_custom_vjp: the bwd function is NULL"; break;
        case 2: kiln_custom_vjp(g, clip_fwd, clip_bwd, NULL, 1, &z, 1, &y); want = "kiln_custom_vjp: args[0] is not a value of graph 'bad'"; break;
        case 3: kiln_custom_vjp(g, short_fwd, clip_bwd, NULL, 1, &x, 1, &y); want = "kiln_custom_vjp: the fwd function returned 0 values, not the 1 outputs"; break;
        case 4: kiln_custom_vjp(g, clip_fwd, two_count_bwd, NULL, 1, &x, 1, &y); want = "kiln_custom_vjp: the bwd function returned 2 cotangents for 1 args"; break;
        }
        // clang-format on
        if (i == 4) {
            CHECK_OK(ctx, kiln_graph_status(g));
            kiln_grad(g, sum(g, y), 1, &x, &gr);
        }
        CHECK_MSG(kiln_graph_status(g) != KILN_STATUS_OK, "error case %d passed", i);
        CHECK_CONTAINS(kiln_graph_error(g), want);
        char at[64];
        snprintf(at, sizeof at, "(at test_custom_vjp.c:%d)", line + i);
        CHECK_CONTAINS(kiln_graph_error(g), at);
        kiln_graph_destroy(g);
        kiln_graph_destroy(other);
    }
    /* a cotangent of the wrong type names both types and the call's line */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "bad", &g);
    int64_t d[1] = {3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d), y, gr;
    int line = __LINE__ + 1;
    kiln_custom_vjp(g, clip_fwd, wrong_type_bwd, NULL, 1, &x, 1, &y);
    CHECK_STATUS(kiln_grad(g, sum(g, y), 1, &x, &gr), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(
        kiln_graph_error(g),
        "kiln_custom_vjp: the bwd function's cotangent 0 is f32[], but args[0] is f32[3]");
    char at[64];
    snprintf(at, sizeof at, "(at test_custom_vjp.c:%d)", line);
    CHECK_CONTAINS(kiln_graph_error(g), at);
    CHECK(!gr.id);
    kiln_graph_destroy(g);

    /* forward mode through it is refused, as jax.jvp refuses a custom_vjp function */
    char at2[128];
    kiln_graph_create(ctx, "jvp", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    line = __LINE__ + 1;
    kiln_custom_vjp(g, ste_fwd, ste_bwd, NULL, 1, &x, 1, &y);
    CHECK_STATUS(kiln_jvp(g, 1, &y, 1, &x, &x, &gr), KILN_STATUS_UNIMPLEMENTED);
    snprintf(at2, sizeof at2,
             "forward mode through the kiln_custom_vjp called at test_custom_vjp.c:%d", line);
    CHECK_CONTAINS(kiln_graph_error(g), at2);
    kiln_graph_destroy(g);
}

int main(void) {
    ctx = test_context();
    if (!ctx) return 1;
    RUN(test_log1pexp);
    RUN(test_clip);
    RUN(test_straight_through);
    RUN(test_true_rule_fd);
    RUN(test_nested_and_second_order);
    RUN(test_jit);
    RUN(test_scan);
    RUN(test_cond);
    RUN(test_checkpoint);
    RUN(test_errors);
    kiln_context_destroy(ctx);
    return test_summary("test_custom_vjp");
}
