/* test_control_grad.c — gradients through control flow (kiln_scan, kiln_fori_loop,
 * kiln_cond, kiln_switch; src/autodiff/control_rules.c), run by the reference
 * interpreter and compiled against it (measured peak = planned checked too): each against central
 * finite differences in f64, and against the gradient of the same program written without control
 * flow (the loop unrolled by hand, the branch chosen at trace time, with the same ops), which must
 * agree to f64 rounding. Also second derivatives through a scan, the refusal of a while loop, and
 * forward mode (kiln_jvp) through every program, a while loop and a gradient's scan.
 */
#include "compare.h"
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>

enum { L = 4, N = 3, M = 2, MAXP = 4 };

/* A program: a scalar f64 loss of np f64 parameters; mode picks a variant (a scan: bit 0
 * reverse, bit 1 checkpoint_body; a cond: the branch taken). */
typedef kiln_value (*prog_fn)(kiln_graph *g, const kiln_value *p, int mode);

typedef struct prog {
    const char *name;
    prog_fn f;
    int np;
    int rank[MAXP];
    int64_t dims[MAXP][3];
} prog;

static int64_t numel(const prog *pr, int i) {
    int64_t n = 1;
    for (int d = 0; d < pr->rank[i]; d++) n *= pr->dims[i][d];
    return n;
}

/* The graph of pr: outputs the loss, then (with_grad) its gradient for each parameter. */
static kiln_graph *build(kiln_context *ctx, const prog *pr, int mode, bool with_grad) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, pr->name, &g);
    kiln_value p[MAXP], outs[MAXP + 1];
    for (int i = 0; i < pr->np; i++)
        p[i] = kiln_parameter(g, "p", KILN_DTYPE_F64, pr->rank[i], pr->dims[i]);
    outs[0] = pr->f(g, p, mode);
    if (with_grad) CHECK_OK(ctx, kiln_grad(g, outs[0], pr->np, p, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, with_grad ? pr->np + 1 : 1, outs));
    return g;
}

/* Deterministic values in (-1, 1), different per parameter. */
static void fill(double *x, int64_t n, int salt) {
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(salt + 1);
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (double)(s >> 11) / 9007199254740992.0 * 1.6 - 0.8;
    }
}

/* Runs g on the values x[i] of the parameters; out receives the n_out outputs' elements,
 * one after another. */
static void run(kiln_context *ctx, kiln_graph *g, const prog *pr, double *const *x, int n_out,
                double *out) {
    kiln_array *args[MAXP] = {0}, *res[MAXP + 1] = {0};
    for (int i = 0; i < pr->np; i++)
        CHECK_OK(ctx,
                 kiln_array_create(ctx, KILN_DTYPE_F64, pr->rank[i], pr->dims[i], x[i], &args[i]));
    CHECK_OK(ctx, kiln_interpret(g, pr->np, args, n_out, res));
    /* a gradient's program also compiled, against the interpreter (and its plan checked) */
    if (n_out > 1)
        CHECK_MSG(cmp_graph(ctx, g, pr->np, args, NULL, 1e-6, NULL), "%s compiled", pr->name);
    size_t at = 0;
    for (int i = 0; i < n_out; i++) {
        size_t n = i ? (size_t)numel(pr, i - 1) : 1;
        if (res[i]) kiln_array_copy_to_host(res[i], out + at, n * sizeof *out);
        at += n;
        kiln_array_destroy(res[i]);
    }
    for (int i = 0; i < pr->np; i++) kiln_array_destroy(args[i]);
}

typedef struct values {
    double *x[MAXP];
    double grad[256]; /* the loss, then every gradient's elements */
    int total;
} values;

static void values_make(values *v, const prog *pr) {
    v->total = 1;
    for (int i = 0; i < pr->np; i++) {
        int64_t n = numel(pr, i);
        v->x[i] = calloc((size_t)n, sizeof(double));
        fill(v->x[i], n, i);
        v->total += (int)n;
    }
}

static void values_free(values *v, const prog *pr) {
    for (int i = 0; i < pr->np; i++) free(v->x[i]);
}

/* The loss and its gradients through the interpreter. */
static void gradients(kiln_context *ctx, const prog *pr, int mode, values *v) {
    kiln_graph *g = build(ctx, pr, mode, true);
    run(ctx, g, pr, v->x, pr->np + 1, v->grad);
    kiln_graph_destroy(g);
}

/* The gradient against central differences of the loss graph alone. */
static void check_fd(kiln_context *ctx, const prog *pr, int mode) {
    values v;
    values_make(&v, pr);
    gradients(ctx, pr, mode, &v);
    kiln_graph *g = build(ctx, pr, mode, false);
    const double h = 1e-5;
    int at = 1, bad = 0;
    double worst = 0;
    for (int i = 0; i < pr->np; i++)
        for (int64_t k = 0; k < numel(pr, i); k++, at++) {
            double x0 = v.x[i][k], lp = 0, lm = 0;
            v.x[i][k] = x0 + h;
            run(ctx, g, pr, v.x, 1, &lp);
            v.x[i][k] = x0 - h;
            run(ctx, g, pr, v.x, 1, &lm);
            v.x[i][k] = x0;
            double fd = (lp - lm) / (2 * h), err = fabs(fd - v.grad[at]);
            double tol = 1e-7 * (1 + fabs(fd));
            if (err > tol) bad++;
            if (err > worst) worst = err;
        }
    CHECK_MSG(!bad, "%s mode %d: %d gradient elements differ from central differences (worst %g)",
              pr->name, mode, bad, worst);
    kiln_graph_destroy(g);
    values_free(&v, pr);
}

/* The gradients of two programs of the same parameters (one with control flow, one
 * without) agree to f64 rounding. */
static void check_same(kiln_context *ctx, const prog *a, const prog *b, int mode) {
    values va, vb;
    values_make(&va, a);
    values_make(&vb, b);
    gradients(ctx, a, mode, &va);
    gradients(ctx, b, mode, &vb);
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < va.total; i++) {
        double err = fabs(va.grad[i] - vb.grad[i]);
        if (err > 1e-13 * (1 + fabs(vb.grad[i]))) bad++;
        if (err > worst) worst = err;
    }
    CHECK_MSG(!bad, "%s mode %d: %d values differ from %s's (worst %g)", a->name, mode, bad,
              b->name, worst);
    values_free(&va, a);
    values_free(&vb, b);
}

/* ------------------------------------------------------------- programs ---- */

static kiln_value sum(kiln_graph *g, kiln_value x) {
    return kiln_reduce_sum(g, x, 0, NULL, false);
}

static kiln_value f64(kiln_graph *g, double v) {
    return kiln_scalar(g, KILN_DTYPE_F64, v);
}

/* Row i of xs [L, ...] as a value of its slice's shape (the unrolled programs' x_i). */
static kiln_value row(kiln_graph *g, kiln_value xs, int rank, const int64_t *dims, int64_t i) {
    int64_t start[3] = {i, 0, 0}, limit[3] = {i + 1, 0, 0};
    for (int d = 1; d < rank; d++) limit[d] = dims[d];
    return kiln_reshape(g, kiln_slice(g, xs, start, limit, NULL), rank - 1, dims + 1);
}

/* ys stacked as a scan stacks them: each [N] as [1, N], concatenated. */
static kiln_value stack(kiln_graph *g, kiln_value *ys, int n, int64_t width) {
    int64_t d[2] = {1, width};
    for (int i = 0; i < n; i++) ys[i] = kiln_reshape(g, ys[i], 2, d);
    return kiln_concatenate(g, n, ys, 0);
}

/* The RNN cell: c' = tanh(c * w + x), y = c' * x. */
static void cell(kiln_graph *g, kiln_value c, kiln_value x, kiln_value w, kiln_value *c2,
                 kiln_value *y) {
    *c2 = kiln_tanh(g, kiln_add(g, kiln_mul(g, c, w), x));
    *y = kiln_mul(g, *c2, x);
}

static int rnn_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    cell(g, in[0], in[1], kiln_capture(g, *(const kiln_value *)user), &outs[0], &outs[1]);
    return 2;
}

/* p: c0 [N], xs [L, N], w [N]; mode 1: reverse. loss = sum(c) + sum(ys^2) */
static kiln_value p_scan(kiln_graph *g, const kiln_value *p, int mode) {
    kiln_value outs[2];
    kiln_scan_options o = {.reverse = mode & 1, .checkpoint_body = mode & 2};
    int n = 0;
    kiln_scan(g, rnn_body, (void *)&p[2], 1, &p[0], 1, &p[1], &o, &n, outs);
    return kiln_add(g, sum(g, outs[0]), sum(g, kiln_mul(g, outs[1], outs[1])));
}

static kiln_value p_scan_unrolled(kiln_graph *g, const kiln_value *p, int mode) {
    int64_t xd[2] = {L, N};
    kiln_value c = p[0], ys[L];
    for (int it = 0; it < L; it++) {
        int i = mode & 1 ? L - 1 - it : it;
        cell(g, c, row(g, p[1], 2, xd, i), p[2], &c, &ys[i]);
    }
    kiln_value y = stack(g, ys, L, N);
    return kiln_add(g, sum(g, c), sum(g, kiln_mul(g, y, y)));
}

/* the ys alone: loss = sum(ys^2) (the final carry unused) */
static kiln_value p_scan_ys(kiln_graph *g, const kiln_value *p, int mode) {
    kiln_value outs[2];
    kiln_scan_options o = {.reverse = mode & 1, .checkpoint_body = mode & 2};
    int n = 0;
    kiln_scan(g, rnn_body, (void *)&p[2], 1, &p[0], 1, &p[1], &o, &n, outs);
    return sum(g, kiln_mul(g, outs[1], outs[1]));
}

static kiln_value p_scan_ys_unrolled(kiln_graph *g, const kiln_value *p, int mode) {
    int64_t xd[2] = {L, N};
    kiln_value c = p[0], ys[L];
    for (int it = 0; it < L; it++) {
        int i = mode & 1 ? L - 1 - it : it;
        cell(g, c, row(g, p[1], 2, xd, i), p[2], &c, &ys[i]);
    }
    kiln_value y = stack(g, ys, L, N);
    return sum(g, kiln_mul(g, y, y));
}

/* a map (no carry): y = sin(x) * w */
static int map_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    outs[0] = kiln_mul(g, kiln_sin(g, in[0]), kiln_capture(g, *(const kiln_value *)user));
    return 1;
}

/* p: xs [L, N], w [N]; loss = sum(ys^2) */
static kiln_value p_map(kiln_graph *g, const kiln_value *p, int mode) {
    kiln_value ys;
    kiln_scan_options o = {.reverse = mode & 1, .checkpoint_body = mode & 2};
    int n = 0;
    kiln_scan(g, map_body, (void *)&p[1], 0, NULL, 1, &p[0], &o, &n, &ys);
    return sum(g, kiln_mul(g, ys, ys));
}

static kiln_value p_map_unrolled(kiln_graph *g, const kiln_value *p, int mode) {
    (void)mode;
    int64_t xd[2] = {L, N};
    kiln_value ys[L];
    for (int i = 0; i < L; i++) ys[i] = kiln_mul(g, kiln_sin(g, row(g, p[0], 2, xd, i)), p[1]);
    kiln_value y = stack(g, ys, L, N);
    return sum(g, kiln_mul(g, y, y));
}

/* two carries and an integer one: a' = a * b + x, b' = b - 0.25 * a * x, k' = k + 1 */
static void two_cell(kiln_graph *g, kiln_value *a, kiln_value *b, kiln_value x) {
    kiln_value a2 = kiln_add(g, kiln_mul(g, *a, *b), x);
    *b = kiln_sub(g, *b, kiln_mul(g, kiln_mul(g, f64(g, 0.25), *a), x));
    *a = a2;
}

static int two_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_value a = in[0], b = in[2];
    two_cell(g, &a, &b, in[3]);
    outs[0] = a;
    outs[1] = kiln_add(g, in[1], kiln_scalar(g, KILN_DTYPE_I32, 1));
    outs[2] = b;
    return 3;
}

/* p: a0 [N], b0 [N], xs [L, N]; loss = sum(a * b) */
static kiln_value p_two(kiln_graph *g, const kiln_value *p, int mode) {
    kiln_value init[3] = {p[0], kiln_scalar(g, KILN_DTYPE_I32, 0), p[1]}, outs[3];
    kiln_scan_options o = {.reverse = mode & 1, .checkpoint_body = mode & 2};
    int n = 0;
    kiln_scan(g, two_body, NULL, 3, init, 1, &p[2], &o, &n, outs);
    return sum(g, kiln_mul(g, outs[0], outs[2]));
}

static kiln_value p_two_unrolled(kiln_graph *g, const kiln_value *p, int mode) {
    int64_t xd[2] = {L, N};
    kiln_value a = p[0], b = p[1];
    for (int it = 0; it < L; it++)
        two_cell(g, &a, &b, row(g, p[2], 2, xd, mode & 1 ? L - 1 - it : it));
    return sum(g, kiln_mul(g, a, b));
}

/* a scan in a scan: the outer one over xs [L, M, N], the inner one over each slice [M, N]
 * with the RNN cell (w captured from two levels out); the outer y is the sum of the
 * inner ys over M */
static int outer_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    kiln_value r[2];
    int n = 0;
    kiln_scan(g, rnn_body, user, 1, &in[0], 1, &in[1], NULL, &n, r);
    int ax = 0;
    outs[0] = r[0];
    outs[1] = kiln_reduce_sum(g, r[1], 1, &ax, false);
    return 2;
}

/* p: c0 [N], xs [L, M, N], w [N]; loss = sum(c) + sum(ys^2) */
static kiln_value p_nested(kiln_graph *g, const kiln_value *p, int mode) {
    kiln_value outs[2];
    kiln_scan_options o = {.reverse = mode & 1, .checkpoint_body = mode & 2};
    int n = 0;
    kiln_scan(g, outer_body, (void *)&p[2], 1, &p[0], 1, &p[1], &o, &n, outs);
    return kiln_add(g, sum(g, outs[0]), sum(g, kiln_mul(g, outs[1], outs[1])));
}

static kiln_value p_nested_unrolled(kiln_graph *g, const kiln_value *p, int mode) {
    int64_t xd[3] = {L, M, N}, sd[2] = {M, N};
    kiln_value c = p[0], ys[L];
    for (int it = 0; it < L; it++) {
        int i = mode & 1 ? L - 1 - it : it;
        kiln_value x = row(g, p[1], 3, xd, i), inner[M];
        for (int j = 0; j < M; j++) cell(g, c, row(g, x, 2, sd, j), p[2], &c, &inner[j]);
        int ax = 0;
        ys[i] = kiln_reduce_sum(g, stack(g, inner, M, N), 1, &ax, false);
    }
    kiln_value y = stack(g, ys, L, N);
    return kiln_add(g, sum(g, c), sum(g, kiln_mul(g, y, y)));
}

/* fori_loop: x = x * w * 0.5 + sin(i) * x for i in [2, 2 + L) */
static kiln_value fori_step(kiln_graph *g, kiln_value i, kiln_value x, kiln_value w) {
    kiln_value s = kiln_sin(g, kiln_convert(g, i, KILN_DTYPE_F64));
    return kiln_add(g, kiln_mul(g, kiln_mul(g, x, w), f64(g, 0.5)), kiln_mul(g, s, x));
}

static int fori_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    outs[0] = fori_step(g, in[0], in[1], kiln_capture(g, *(const kiln_value *)user));
    return 1;
}

/* p: x0 [N], w [N]; loss = sum(x^2) */
static kiln_value p_fori(kiln_graph *g, const kiln_value *p, int mode) {
    (void)mode;
    kiln_value x;
    kiln_fori_loop(g, 2, 2 + L, fori_body, (void *)&p[1], 1, &p[0], &x);
    return sum(g, kiln_mul(g, x, x));
}

static kiln_value p_fori_unrolled(kiln_graph *g, const kiln_value *p, int mode) {
    (void)mode;
    kiln_value x = p[0];
    for (int i = 2; i < 2 + L; i++) x = fori_step(g, kiln_scalar(g, KILN_DTYPE_I32, i), x, p[1]);
    return sum(g, kiln_mul(g, x, x));
}

/* branches over operand x with captures w, v: each returns a float and an integer */
static kiln_value br0(kiln_graph *g, kiln_value x, kiln_value w, kiln_value v) {
    (void)v;
    return kiln_mul(g, kiln_mul(g, x, w), x);
}
static kiln_value br1(kiln_graph *g, kiln_value x, kiln_value w, kiln_value v) {
    (void)w;
    return kiln_add(g, kiln_sin(g, x), v);
}
static kiln_value br2(kiln_graph *g, kiln_value x, kiln_value w, kiln_value v) {
    return kiln_mul(g, kiln_add(g, x, w), v);
}
typedef kiln_value (*branch_fn)(kiln_graph *, kiln_value, kiln_value, kiln_value);
static const branch_fn branch_fns[3] = {br0, br1, br2};

#define KN_BRANCH(k)                                                                               \
    static int branch##k(kiln_graph *g, int n_in, const kiln_value *in, void *user,                \
                         kiln_value *outs) {                                                       \
        (void)n_in;                                                                                \
        const kiln_value *p = user;                                                                \
        kiln_value w = k == 1 ? (kiln_value){0, 0} : kiln_capture(g, p[1]);                        \
        kiln_value v = k == 0 ? (kiln_value){0, 0} : kiln_capture(g, p[2]);                        \
        outs[0] = branch_fns[k](g, in[0], w, v);                                                   \
        outs[1] = kiln_scalar(g, KILN_DTYPE_I32, k);                                               \
        return 2;                                                                                  \
    }
KN_BRANCH(0)
KN_BRANCH(1)
KN_BRANCH(2)

/* p: x [N], w [N], v [N]; cond on mode (0 false, 1 true: branch1 is true_fn), or with mode
 * >= 2 a switch on mode - 2 (5 clamps to the last); loss = sum(out^2) + sum(x) */
static kiln_value p_cond(kiln_graph *g, const kiln_value *p, int mode) {
    kiln_value outs[2];
    int n = 0;
    if (mode < 2) {
        kiln_value pred = kiln_scalar(g, KILN_DTYPE_BOOL, mode);
        kiln_cond(g, pred, branch1, branch0, (void *)p, 1, &p[0], &n, outs);
    } else {
        kiln_fn fns[3] = {branch0, branch1, branch2};
        kiln_switch(g, kiln_scalar(g, KILN_DTYPE_I32, mode - 2), 3, fns, (void *)p, 1, &p[0], &n,
                    outs);
    }
    return kiln_add(g, sum(g, kiln_mul(g, outs[0], outs[0])), sum(g, p[0]));
}

static kiln_value p_cond_unrolled(kiln_graph *g, const kiln_value *p, int mode) {
    int k = mode == 0 ? 0 : mode == 1 ? 1 : mode - 2 > 2 ? 2 : mode - 2;
    kiln_value y = branch_fns[k](g, p[0], p[1], p[2]);
    return kiln_add(g, sum(g, kiln_mul(g, y, y)), sum(g, p[0]));
}

/* a cond inside a scan body: c' = cond(sum(x) > 0, c * w, sin(c) + x) */
static int cond_in_body_t(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                          kiln_value *outs) {
    (void)n_in;
    outs[0] = kiln_mul(g, in[0], kiln_capture(g, *(const kiln_value *)user));
    return 1;
}
static int cond_in_body_f(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                          kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_add(g, kiln_sin(g, in[0]), in[1]);
    return 1;
}
static int scan_cond_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                          kiln_value *outs) {
    (void)n_in;
    kiln_value w = kiln_capture(g, *(const kiln_value *)user);
    kiln_value pred = kiln_compare(g, sum(g, in[1]), f64(g, 0), KILN_CMP_GT);
    int n = 0;
    kiln_cond(g, pred, cond_in_body_t, cond_in_body_f, &w, 2, in, &n, outs);
    return 1;
}

/* p: c0 [N], xs [L, N], w [N]; loss = sum(c^2) */
static kiln_value p_scan_cond(kiln_graph *g, const kiln_value *p, int mode) {
    kiln_value c;
    kiln_scan_options o = {.reverse = mode & 1, .checkpoint_body = mode & 2};
    int n = 0;
    kiln_scan(g, scan_cond_body, (void *)&p[2], 1, &p[0], 1, &p[1], &o, &n, &c);
    return sum(g, kiln_mul(g, c, c));
}

/* --------------------------------------------------------------- tests ---- */

#define V1                                                                                         \
    { N }
#define XS                                                                                         \
    { L, N }
static const prog progs[][2] = {
    {{"scan", p_scan, 3, {1, 2, 1}, {V1, XS, V1}},
     {"scan unrolled", p_scan_unrolled, 3, {1, 2, 1}, {V1, XS, V1}}},
    {{"scan ys only", p_scan_ys, 3, {1, 2, 1}, {V1, XS, V1}},
     {"scan ys only unrolled", p_scan_ys_unrolled, 3, {1, 2, 1}, {V1, XS, V1}}},
    {{"map", p_map, 2, {2, 1}, {XS, V1}}, {"map unrolled", p_map_unrolled, 2, {2, 1}, {XS, V1}}},
    {{"two carries", p_two, 3, {1, 1, 2}, {V1, V1, XS}},
     {"two carries unrolled", p_two_unrolled, 3, {1, 1, 2}, {V1, V1, XS}}},
    {{"nested scan", p_nested, 3, {1, 3, 1}, {V1, {L, M, N}, V1}},
     {"nested scan unrolled", p_nested_unrolled, 3, {1, 3, 1}, {V1, {L, M, N}, V1}}},
    {{"fori_loop", p_fori, 2, {1, 1}, {V1, V1}},
     {"fori_loop unrolled", p_fori_unrolled, 2, {1, 1}, {V1, V1}}},
};

static void test_scans(kiln_context *ctx) {
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
        for (int mode = 0; mode < 4; mode++) { /* reverse x checkpoint_body */
            check_fd(ctx, &progs[i][0], mode);
            check_same(ctx, &progs[i][0], &progs[i][1], mode);
        }
    static const prog sc = {"cond in scan", p_scan_cond, 3, {1, 2, 1}, {V1, XS, V1}};
    for (int mode = 0; mode < 4; mode++) check_fd(ctx, &sc, mode);
}

static void test_conds(kiln_context *ctx) {
    static const prog c = {"cond", p_cond, 3, {1, 1, 1}, {V1, V1, V1}};
    static const prog u = {"cond unrolled", p_cond_unrolled, 3, {1, 1, 1}, {V1, V1, V1}};
    for (int mode = 0; mode < 6; mode++) { /* cond false, true; switch 0, 1, 2, 3 (clamped) */
        check_fd(ctx, &c, mode);
        check_same(ctx, &c, &u, mode);
    }
}

/* Second derivative: d/dw of (d loss / dw) through a scan of c' = sin(c * w) + x, checked
 * against central differences of the first derivative. */
static int sin_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    kiln_value w = kiln_capture(g, *(const kiln_value *)user);
    outs[0] = kiln_add(g, kiln_sin(g, kiln_mul(g, in[0], w)), in[1]);
    return 1;
}

static kiln_graph *second_graph(kiln_context *ctx, bool second, bool ckpt) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "second", &g);
    int64_t xd[1] = {L};
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F64, 0, NULL);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 1, xd), c, d1, d2;
    kiln_value c0 = f64(g, 0.3);
    int n = 0;
    kiln_scan_options o = {.checkpoint_body = ckpt};
    CHECK_OK(ctx, kiln_scan(g, sin_body, &w, 1, &c0, 1, &xs, &o, &n, &c));
    CHECK_OK(ctx, kiln_grad(g, kiln_mul(g, c, c), 1, &w, &d1));
    if (second) CHECK_OK(ctx, kiln_grad(g, d1, 1, &w, &d2));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, second ? &d2 : &d1));
    return g;
}

static double second_at(kiln_context *ctx, kiln_graph *g, double w) {
    double xs[L] = {0.5, -0.25, 0.75, 0.1}, out = NAN;
    int64_t xd[1] = {L};
    kiln_array *a[2] = {0}, *r = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F64, 0, NULL, &w, &a[0]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, xd, xs, &a[1]);
    CHECK_OK(ctx, kiln_interpret(g, 2, a, 1, &r));
    if (r) kiln_array_copy_to_host(r, &out, sizeof out);
    kiln_array_destroy(r);
    kiln_array_destroy(a[0]);
    kiln_array_destroy(a[1]);
    return out;
}

static void test_second_derivative(kiln_context *ctx) {
    for (int ckpt = 0; ckpt < 2; ckpt++) {
        kiln_graph *g1 = second_graph(ctx, false, ckpt), *g2 = second_graph(ctx, true, ckpt);
        const double w = 0.7, h = 1e-5;
        double fd = (second_at(ctx, g1, w + h) - second_at(ctx, g1, w - h)) / (2 * h);
        double got = second_at(ctx, g2, w);
        CHECK_MSG(fabs(got - fd) < 1e-7 * (1 + fabs(fd)),
                  "d2/dw2 through a scan (checkpoint_body %d): %.12g, fd %.12g", ckpt, got, fd);
        kiln_graph_destroy(g1);
        kiln_graph_destroy(g2);
    }
}

/* ------------------------------------------- what each scan VJP mode keeps ---- */

/* c' = tanh(exp(c * w) * v + x): its VJP reads exp's and tanh's results, c and w. */
static int keep_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const kiln_value *p = user;
    kiln_value e = kiln_exp(g, kiln_mul(g, in[0], kiln_capture(g, p[0])));
    outs[0] = kiln_tanh(g, kiln_add(g, kiln_mul(g, e, kiln_capture(g, p[1])), in[1]));
    return 1;
}

/* The gradient of sum(final carry) of a scan of keep_body over xs [len, n] by w and v. */
static kiln_graph *keep_graph(kiln_context *ctx, int64_t len, int64_t n, bool ckpt) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "keep", &g);
    int64_t xd[2] = {len, n};
    kiln_value p[2] = {kiln_parameter(g, "w", KILN_DTYPE_F64, 1, &n),
                       kiln_parameter(g, "v", KILN_DTYPE_F64, 1, &n)};
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 2, xd), c, d[2];
    kiln_value c0 = kiln_broadcast_in_dim(g, f64(g, 0.1), 1, &n, NULL);
    kiln_scan_options o = {.checkpoint_body = ckpt};
    int nr = 0;
    CHECK_OK(ctx, kiln_scan(g, keep_body, p, 1, &c0, 1, &xs, &o, &nr, &c));
    CHECK_OK(ctx, kiln_grad(g, sum(g, c), 2, p, d));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, d));
    return g;
}

/* Nodes of op in the body of the k-th scan of g (graph order), -1 when there is none;
 * *n_out its body's output count. */
static int count_in_scan(const kiln_graph *g, int k, ir_op op, uint32_t *n_out) {
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        if (g->nodes[id].op != IR_SCAN || k--) continue;
        const kiln_graph *b = g->nodes[id].region->graphs[0];
        int c = 0;
        for (uint32_t j = 1; j < b->n_nodes; j++) c += b->nodes[j].op == op;
        *n_out = b->n_outputs;
        return c;
    }
    return -1;
}

/* Residuals saved (the default): the forward scan outputs the values the VJP reads and the
 * backward body computes no forward op again (no exp, no tanh). checkpoint_body: the
 * forward scan saves the carries alone and the backward body recomputes the body. The
 * checkpointed program's planned peak is the lower for a long scan. */
static void test_scan_keeps(kiln_context *ctx) {
    uint64_t peak[2] = {0};
    for (int ckpt = 0; ckpt < 2; ckpt++) {
        kiln_graph *g = keep_graph(ctx, 256, 64, ckpt);
        uint32_t fwd_out = 0, bwd_out = 0;
        int fwd_exp = count_in_scan(g, 0, IR_EXP, &fwd_out);
        int bwd_exp = count_in_scan(g, 1, IR_EXP, &bwd_out);
        int bwd_tanh = count_in_scan(g, 1, IR_TANH, &bwd_out);
        CHECK_MSG(fwd_exp == 1, "checkpoint_body %d: %d exp in the forward body", ckpt, fwd_exp);
        if (ckpt)
            CHECK_MSG(bwd_exp == 1 && bwd_tanh == 1 && fwd_out == 2,
                      "checkpointed: the backward body recomputes (exp %d, tanh %d), the "
                      "forward saves the carry alone (%u outputs)",
                      bwd_exp, bwd_tanh, fwd_out);
        else
            CHECK_MSG(bwd_exp == 0 && bwd_tanh == 0 && fwd_out == 4,
                      "residuals: the backward body recomputes nothing (exp %d, tanh %d), the "
                      "forward saves c, exp and tanh (%u outputs)",
                      bwd_exp, bwd_tanh, fwd_out);
        kiln_executable *e = NULL;
        kiln_memory_analysis m;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e && !kiln_executable_get_memory_analysis(e, &m)) peak[ckpt] = m.peak_bytes;
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    printf("scan of 256 x f64[64], its gradient: planned peak %llu bytes saving the residuals, "
           "%llu checkpointed\n",
           (unsigned long long)peak[0], (unsigned long long)peak[1]);
    CHECK_MSG(peak[1] && peak[1] < peak[0], "planned peak: checkpointed %llu, residuals %llu",
              (unsigned long long)peak[1], (unsigned long long)peak[0]);
}

/* A while loop on the gradient's path is refused, naming it and the alternatives; one off
 * the path (its carries do not depend on the wrt) is not. */
static int w_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_compare(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 3), KILN_CMP_LT);
    return 1;
}
static int w_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 1));
    outs[1] = kiln_mul(g, in[1], in[1]);
    return 2;
}

static void test_while_refused(kiln_context *ctx) {
    for (int live = 0; live < 2; live++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "while", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL);
        kiln_value init[2] = {kiln_scalar(g, KILN_DTYPE_I32, 0), live ? x : f64(g, 2)}, out[2], d;
        CHECK_OK(ctx, kiln_while_loop(g, w_cond, w_body, NULL, 2, init, out));
        kiln_value loss = kiln_add(g, out[1], x);
        kiln_status s = kiln_grad(g, loss, 1, &x, &d);
        if (live) {
            CHECK_STATUS(s, KILN_STATUS_UNIMPLEMENTED);
            const char *m = kiln_last_error(ctx);
            CHECK_CONTAINS(m, "while");
            CHECK_CONTAINS(m, "not differentiable in reverse");
            CHECK_CONTAINS(m, "kiln_scan");
            CHECK_CONTAINS(m, "kiln_fori_loop");
            CHECK_CONTAINS(m, "test_control_grad.c:");
        } else {
            CHECK_OK(ctx, s);
        }
        kiln_graph_destroy(g);
    }
}

/* ----------------------------------------------------------- forward mode ---- */

/* kiln_jvp of pr's loss along directions u (src/autodiff/control_jvp.c), interpreted and
 * compiled: it equals <d loss / d p, u> from the reverse mode above (which is checked
 * against central differences), to f64 rounding. */
static void check_jvp(kiln_context *ctx, const prog *pr, int mode) {
    values v;
    values_make(&v, pr);
    gradients(ctx, pr, mode, &v);
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "jvp", &g);
    kiln_value p[MAXP], t[MAXP], outs[2];
    for (int i = 0; i < pr->np; i++)
        p[i] = kiln_parameter(g, "p", KILN_DTYPE_F64, pr->rank[i], pr->dims[i]);
    for (int i = 0; i < pr->np; i++)
        t[i] = kiln_parameter(g, "t", KILN_DTYPE_F64, pr->rank[i], pr->dims[i]);
    outs[0] = pr->f(g, p, mode);
    CHECK_OK(ctx, kiln_jvp(g, 1, outs, pr->np, p, t, &outs[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    kiln_array *a[2 * MAXP] = {0}, *r[2] = {0};
    double *u[MAXP], want = 0, got[2] = {NAN, NAN};
    for (int i = 0, at = 1; i < pr->np; i++) {
        int64_t n = numel(pr, i);
        u[i] = calloc((size_t)n, sizeof(double));
        fill(u[i], n, 17 + i);
        for (int64_t k = 0; k < n; k++) want += v.grad[at++] * u[i][k];
        kiln_array_create(ctx, KILN_DTYPE_F64, pr->rank[i], pr->dims[i], v.x[i], &a[i]);
        kiln_array_create(ctx, KILN_DTYPE_F64, pr->rank[i], pr->dims[i], u[i], &a[pr->np + i]);
    }
    CHECK_OK(ctx, kiln_interpret(g, 2 * pr->np, a, 2, r));
    for (int i = 0; i < 2; i++)
        if (r[i]) kiln_array_copy_to_host(r[i], &got[i], sizeof(double));
    CHECK_MSG(got[0] == v.grad[0], "%s mode %d: jvp's primal %.17g, the loss %.17g", pr->name, mode,
              got[0], v.grad[0]);
    CHECK_MSG(fabs(got[1] - want) <= 1e-12 * (1 + fabs(want)),
              "%s mode %d: jvp %.17g, <grad, u> %.17g", pr->name, mode, got[1], want);
    CHECK_MSG(cmp_graph(ctx, g, 2 * pr->np, a, NULL, 1e-9, NULL), "%s mode %d: jvp compiled",
              pr->name, mode);
    for (int i = 0; i < pr->np; i++) {
        free(u[i]);
        kiln_array_destroy(a[i]);
        kiln_array_destroy(a[pr->np + i]);
    }
    kiln_array_destroy(r[0]);
    kiln_array_destroy(r[1]);
    kiln_graph_destroy(g);
    values_free(&v, pr);
}

static void test_forward_mode(kiln_context *ctx) {
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
        for (int mode = 0; mode < 4; mode++) check_jvp(ctx, &progs[i][0], mode);
    static const prog sc = {"cond in scan", p_scan_cond, 3, {1, 2, 1}, {V1, XS, V1}};
    static const prog c = {"cond", p_cond, 3, {1, 1, 1}, {V1, V1, V1}};
    for (int mode = 0; mode < 4; mode++) check_jvp(ctx, &sc, mode);
    for (int mode = 0; mode < 6; mode++) check_jvp(ctx, &c, mode);
}

/* Forward mode through a while loop, which reverse mode refuses (as jax.jvp allows
 * lax.while_loop): x squared three times is x^8, whose derivative is 8 x^7; and a
 * Hessian-vector product through a scan (kiln_jvp of kiln_grad) against central
 * differences of the gradient. */
static void test_forward_while(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "jvp while", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL);
    kiln_value init[2] = {kiln_scalar(g, KILN_DTYPE_I32, 0), x}, out[2], res[2], one = f64(g, 1);
    CHECK_OK(ctx, kiln_while_loop(g, w_cond, w_body, NULL, 2, init, out));
    res[0] = out[1];
    CHECK_OK(ctx, kiln_jvp(g, 1, &out[1], 1, &x, &one, &res[1]));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, res));
    double xv = 0.9, got[2] = {0};
    kiln_array *a = NULL, *r[2] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F64, 0, NULL, &xv, &a);
    CHECK_OK(ctx, kiln_interpret(g, 1, &a, 2, r));
    for (int i = 0; i < 2; i++)
        if (r[i]) kiln_array_copy_to_host(r[i], &got[i], sizeof(double));
    double want = 8 * pow(xv, 7);
    CHECK_MSG(fabs(got[0] - pow(xv, 8)) < 1e-15 && fabs(got[1] - want) < 1e-14,
              "jvp through while: x^8 %.17g, d %.17g, want %.17g", got[0], got[1], want);
    CHECK_MSG(cmp_graph(ctx, g, 1, &a, NULL, 1e-12, NULL), "jvp through while compiled");
    kiln_array_destroy(a), kiln_array_destroy(r[0]), kiln_array_destroy(r[1]);
    kiln_graph_destroy(g);

    for (int ckpt = 0; ckpt < 2; ckpt++) { /* hvp: d/dw (d loss / dw) by forward mode */
        kiln_graph *g1 = second_graph(ctx, false, ckpt), *h = NULL;
        kiln_graph_create(ctx, "hvp", &h);
        int64_t xd[1] = {L};
        kiln_value w = kiln_parameter(h, "w", KILN_DTYPE_F64, 0, NULL);
        kiln_value xs = kiln_parameter(h, "xs", KILN_DTYPE_F64, 1, xd), c, d1, d2;
        kiln_value c0 = f64(h, 0.3), dir = f64(h, 1);
        int n = 0;
        kiln_scan_options o = {.checkpoint_body = ckpt};
        CHECK_OK(ctx, kiln_scan(h, sin_body, &w, 1, &c0, 1, &xs, &o, &n, &c));
        CHECK_OK(ctx, kiln_grad(h, kiln_mul(h, c, c), 1, &w, &d1));
        CHECK_OK(ctx, kiln_jvp(h, 1, &d1, 1, &w, &dir, &d2));
        CHECK_OK(ctx, kiln_graph_finish(h, 1, &d2));
        const double wv = 0.7, eps = 1e-5;
        double fd = (second_at(ctx, g1, wv + eps) - second_at(ctx, g1, wv - eps)) / (2 * eps);
        double hv = second_at(ctx, h, wv);
        CHECK_MSG(fabs(hv - fd) < 1e-7 * (1 + fabs(fd)),
                  "hvp through a scan (checkpoint_body %d): %.12g, fd %.12g", ckpt, hv, fd);
        kiln_graph_destroy(g1);
        kiln_graph_destroy(h);
    }
}

/* An empty scan (length 0): the carries pass through, the ys are empty, and the gradient
 * of the initial carry is the final carry's cotangent. Integer xs (scanned, no gradient)
 * beside float ones. */
static int int_x_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_value k = kiln_convert(g, in[2], KILN_DTYPE_F64);
    outs[0] = kiln_add(g, kiln_mul(g, in[0], k), in[1]);
    outs[1] = kiln_mul(g, in[1], in[1]);
    return 2;
}

static void test_edges(kiln_context *ctx) {
    for (int64_t len = 0; len <= 3; len += 3)
        for (int ckpt = 0; ckpt < 2; ckpt++) {
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "edges", &g);
            int64_t xd[1] = {len};
            kiln_value c0 = kiln_parameter(g, "c", KILN_DTYPE_F64, 0, NULL);
            kiln_value xs[2] = {kiln_parameter(g, "x", KILN_DTYPE_F64, 1, xd),
                                kiln_parameter(g, "k", KILN_DTYPE_I32, 1, xd)};
            kiln_value outs[2], d[2], res[3];
            int n = 0;
            kiln_scan_options o = {.checkpoint_body = ckpt};
            CHECK_OK(ctx, kiln_scan(g, int_x_body, NULL, 1, &c0, 2, xs, &o, &n, outs));
            kiln_value loss = kiln_add(g, outs[0], sum(g, outs[1]));
            kiln_value wrt[2] = {c0, xs[0]};
            CHECK_OK(ctx, kiln_grad(g, loss, 2, wrt, d));
            res[0] = loss, res[1] = d[0], res[2] = d[1];
            CHECK_OK(ctx, kiln_graph_finish(g, 3, res));
            double c = 0.5, x[3] = {0.25, -1, 2}, got[3] = {0}, dx[3] = {0};
            int32_t k[3] = {2, -1, 3};
            kiln_array *a[3] = {0}, *r[3] = {0};
            kiln_array_create(ctx, KILN_DTYPE_F64, 0, NULL, &c, &a[0]);
            kiln_array_create(ctx, KILN_DTYPE_F64, 1, xd, x, &a[1]);
            kiln_array_create(ctx, KILN_DTYPE_I32, 1, xd, k, &a[2]);
            CHECK_OK(ctx, kiln_interpret(g, 3, a, 3, r));
            for (int i = 0; i < 2; i++)
                if (r[i]) kiln_array_copy_to_host(r[i], &got[i], sizeof(double));
            if (r[2] && len) kiln_array_copy_to_host(r[2], dx, sizeof dx);
            /* c3 = ((c k0 + x0) k1 + x1) k2 + x2; loss = c3 + sum(x^2) */
            double want_c = len ? (double)k[0] * k[1] * k[2] : 1;
            double want_x[3] = {(double)k[1] * k[2] + 2 * x[0], k[2] + 2 * x[1], 1 + 2 * x[2]};
            CHECK_MSG(got[1] == want_c, "scan of length %lld: dc %g, want %g", (long long)len,
                      got[1], want_c);
            for (int i = 0; i < len; i++)
                CHECK_MSG(fabs(dx[i] - want_x[i]) < 1e-15, "dx[%d] %g, want %g", i, dx[i],
                          want_x[i]);
            for (int i = 0; i < 3; i++) kiln_array_destroy(a[i]), kiln_array_destroy(r[i]);
            kiln_graph_destroy(g);
        }
}

/* The body of the programs below: c' = sin(1.2 c + x c), y = exp(c' / 2). */
static int twice_body(kiln_graph *g, int n, const kiln_value *in, void *u, kiln_value *o) {
    (void)n, (void)u;
    kiln_value k = kiln_scalar(g, KILN_DTYPE_F64, 1.2);
    o[0] = kiln_sin(g, kiln_add(g, kiln_mul(g, in[0], k), kiln_mul(g, in[1], in[0])));
    o[1] = kiln_exp(g, kiln_mul(g, o[0], kiln_scalar(g, KILN_DTYPE_F64, 0.5)));
    return 2;
}

static int swap_a(kiln_graph *g, int n, const kiln_value *in, void *u, kiln_value *o) {
    (void)n, (void)u;
    o[0] = kiln_sin(g, in[0]);
    return 1;
}

static int swap_b(kiln_graph *g, int n, const kiln_value *in, void *u, kiln_value *o) {
    (void)n, (void)u;
    o[0] = kiln_cos(g, in[0]);
    return 1;
}

/* A helper called twice traces the same scan twice, and each copy differentiated for a
 * different output extends its own body with the residuals it saves: the compiled
 * program must not merge the two (an outside check: CSE compared control nodes' inputs
 * and attributes, not their sub-graphs, so the second gradient came out as the first, and
 * two conds with their branches swapped gave one value). Against the interpreter. */
static void test_traced_twice(kiln_context *ctx) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "twice", &g));
    int64_t d1[1] = {1}, dxs[2] = {2, 1};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, d1);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 2, dxs);
    kiln_value a[2], b[2], ga, gb, ca, cb, outs[4];
    int n;
    CHECK_OK(ctx, kiln_scan(g, twice_body, NULL, 1, &x, 1, &xs, NULL, &n, a));
    CHECK_OK(ctx, kiln_grad(g, kiln_reduce_sum(g, a[0], 0, NULL, false), 1, &x, &ga));
    CHECK_OK(ctx, kiln_scan(g, twice_body, NULL, 1, &x, 1, &xs, NULL, &n, b));
    kiln_value lb = kiln_add(g, kiln_reduce_sum(g, b[0], 0, NULL, false),
                             kiln_reduce_sum(g, b[1], 0, NULL, false));
    CHECK_OK(ctx, kiln_grad(g, lb, 1, &x, &gb));
    kiln_value p = kiln_compare(g, kiln_reduce_sum(g, x, 0, NULL, false),
                                kiln_scalar(g, KILN_DTYPE_F64, 0), KILN_CMP_GT);
    CHECK_OK(ctx, kiln_cond(g, p, swap_a, swap_b, NULL, 1, &x, &n, &ca));
    CHECK_OK(ctx, kiln_cond(g, p, swap_b, swap_a, NULL, 1, &x, &n, &cb));
    outs[0] = ga, outs[1] = gb, outs[2] = ca, outs[3] = cb;
    CHECK_OK(ctx, kiln_graph_finish(g, 4, outs));
    const double xv = 0.3, xsv[2] = {0.4, -0.7};
    kiln_array *args[2] = {NULL, NULL};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F64, 1, d1, &xv, &args[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F64, 2, dxs, xsv, &args[1]));
    CHECK(cmp_graph(ctx, g, 2, args, NULL, 1e-6, NULL));
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
}

int main(void) {
    kiln_context *ctx = test_context();
    if (!ctx) return 1;
    test_scans(ctx);
    test_conds(ctx);
    test_second_derivative(ctx);
    test_scan_keeps(ctx);
    test_while_refused(ctx);
    test_forward_mode(ctx);
    test_forward_while(ctx);
    test_edges(ctx);
    test_traced_twice(ctx);
    kiln_context_destroy(ctx);
    return test_summary("test_control_grad");
}
