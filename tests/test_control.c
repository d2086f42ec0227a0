/* test_control.c — control flow (kiln_while_loop, kiln_fori_loop, kiln_scan, kiln_cond,
 * kiln_switch, kiln_capture): each against values worked out by hand in plain C here (the
 * reference interpreter's semantics), then compiled against the reference on every
 * device (cmp_graph); nesting and captures from several levels out; the memory plan of a
 * loop (its body's arena held once, its carries in place); the text form; and the errors,
 * each naming the op, both types and the line. Gradients are in test_autodiff.c. */
#include "compare.h"
#include "runtime/executable.h"

#include <math.h>
#include <stdint.h>

/* Runs g on args through the interpreter, and compiled against it on every device. */
static void run_both(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args, int n_outs,
                     kiln_array **outs) {
    CHECK_OK(ctx, kiln_interpret(g, n_args, args, n_outs, outs));
    CHECK(cmp_graph(ctx, g, n_args, args, NULL, 1e-6, NULL));
}

static kiln_array *scalar_f64(kiln_context *ctx, double v) {
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F64, 0, NULL, &v, &a));
    return a;
}

static kiln_array *scalar_i32(kiln_context *ctx, int32_t v) {
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &v, &a));
    return a;
}

static double get_f64(kiln_array *a) {
    double v = NAN;
    if (a) kiln_array_copy_to_host(a, &v, sizeof v);
    return v;
}

static int32_t get_i32(kiln_array *a) {
    int32_t v = -1;
    if (a) kiln_array_copy_to_host(a, &v, sizeof v);
    return v;
}

static void destroy_all(kiln_array **a, int n) {
    for (int i = 0; i < n; i++) kiln_array_destroy(a[i]), a[i] = NULL;
}

/* ---------------------------------------------------------------- while ---- */

typedef struct outer {
    kiln_value v[4];
} outer;

/* i < n, with n captured from the enclosing graph */
static int while_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_compare(g, in[0], kiln_capture(g, o->v[0]), KILN_CMP_LT);
    return 1;
}

/* i += 1; acc += i * i (as f64) */
static int while_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_value i = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 1));
    kiln_value f = kiln_convert(g, i, KILN_DTYPE_F64);
    outs[0] = i;
    outs[1] = kiln_add(g, in[1], kiln_mul(g, f, f));
    return 2;
}

static void test_while(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "while", &g);
    kiln_value n = kiln_parameter(g, "n", KILN_DTYPE_I32, 0, NULL);
    kiln_value acc0 = kiln_parameter(g, "acc", KILN_DTYPE_F64, 0, NULL);
    kiln_value init[2] = {kiln_scalar(g, KILN_DTYPE_I32, 0), acc0}, out[2];
    outer o = {{n}};
    CHECK_OK(ctx, kiln_while_loop(g, while_cond, while_body, &o, 2, init, out));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, out));
    int32_t counts[] = {10, 0, -3, 1};
    for (int c = 0; c < 4; c++) {
        kiln_array *args[2] = {scalar_i32(ctx, counts[c]), scalar_f64(ctx, 0.5)}, *res[2] = {0};
        run_both(ctx, g, 2, args, 2, res);
        int32_t k = counts[c] > 0 ? counts[c] : 0;
        double want = 0.5 + (double)k * (k + 1) * (2 * k + 1) / 6;
        CHECK_MSG(get_i32(res[0]) == k, "while n=%d: i = %d, want %d", counts[c], get_i32(res[0]),
                  k);
        CHECK_MSG(get_f64(res[1]) == want, "while n=%d: acc = %g, want %g", counts[c],
                  get_f64(res[1]), want);
        destroy_all(args, 2);
        destroy_all(res, 2);
    }
    char *text = kiln_graph_to_string(g);
    CHECK_CONTAINS(text, "= while(");
    CHECK_CONTAINS(text, "    graph cond(");
    CHECK_CONTAINS(text, "    graph body(");
    free(text);
    kiln_graph_destroy(g);
}

/* ----------------------------------------------------------- fori_loop ---- */

/* x = x * 0.5 + i */
static int fori_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_value i = kiln_convert(g, in[0], KILN_DTYPE_F64);
    outs[0] = kiln_add(g, kiln_mul(g, in[1], kiln_scalar(g, KILN_DTYPE_F64, 0.5)), i);
    return 1;
}

static void test_fori(kiln_context *ctx) {
    int64_t bounds[][2] = {{3, 10}, {0, 1}, {5, 5}, {7, 2}, {-4, 3}};
    for (int c = 0; c < 5; c++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "fori", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL), out;
        CHECK_OK(ctx, kiln_fori_loop(g, bounds[c][0], bounds[c][1], fori_body, NULL, 1, &x, &out));
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
        kiln_array *arg = scalar_f64(ctx, 3.0), *res = NULL;
        run_both(ctx, g, 1, &arg, 1, &res);
        double want = 3.0;
        for (int64_t i = bounds[c][0]; i < bounds[c][1]; i++) want = want * 0.5 + (double)i;
        CHECK_MSG(get_f64(res) == want, "fori [%lld, %lld): %g, want %g", (long long)bounds[c][0],
                  (long long)bounds[c][1], get_f64(res), want);
        kiln_array_destroy(arg);
        kiln_array_destroy(res);
        kiln_graph_destroy(g);
    }
}

/* ---------------------------------------------------------------- scan ---- */

/* c = c * w + x; y0 = 2 c; y1 = sum(x) (w captured) */
static int scan_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    kiln_value c = kiln_add(g, kiln_mul(g, in[0], kiln_capture(g, o->v[0])), in[1]);
    outs[0] = c;
    outs[1] = kiln_mul(g, c, kiln_scalar(g, KILN_DTYPE_F64, 2));
    outs[2] = kiln_reduce_sum(g, in[1], 0, NULL, false);
    return 3;
}

static void test_scan(kiln_context *ctx, bool reverse) {
    enum { L = 5, N = 3 };
    int64_t xd[2] = {L, N}, cd[1] = {N};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "scan", &g);
    kiln_value c0 = kiln_parameter(g, "c", KILN_DTYPE_F64, 1, cd);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 2, xd);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F64, 1, cd), outs[3];
    outer o = {{w}};
    kiln_scan_options opt = {.reverse = reverse};
    int n_outs = 0;
    CHECK_OK(ctx, kiln_scan(g, scan_body, &o, 1, &c0, 1, &xs, &opt, &n_outs, outs));
    CHECK(n_outs == 3);
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    double c[N] = {1, -2, 0.5}, x[L * N], wv[N] = {0.5, 1.5, -1};
    for (int i = 0; i < L * N; i++) x[i] = (double)(i % 7) - 2.5;
    kiln_array *args[3] = {0}, *res[3] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, cd, c, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 2, xd, x, &args[1]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, cd, wv, &args[2]);
    run_both(ctx, g, 3, args, 3, res);
    double y0[L * N], y1[L], got0[L * N], got1[L], gotc[N];
    for (int it = 0; it < L; it++) {
        int i = reverse ? L - 1 - it : it;
        y1[i] = 0;
        for (int j = 0; j < N; j++) {
            c[j] = c[j] * wv[j] + x[i * N + j];
            y0[i * N + j] = 2 * c[j];
            y1[i] += x[i * N + j];
        }
    }
    kiln_array_copy_to_host(res[0], gotc, sizeof gotc);
    kiln_array_copy_to_host(res[1], got0, sizeof got0);
    kiln_array_copy_to_host(res[2], got1, sizeof got1);
    CHECK_MSG(!memcmp(gotc, c, sizeof c), "scan%s: final carry differs", reverse ? " reverse" : "");
    CHECK_MSG(!memcmp(got0, y0, sizeof y0), "scan%s: ys differ", reverse ? " reverse" : "");
    CHECK_MSG(!memcmp(got1, y1, sizeof y1), "scan%s: ys[1] differs", reverse ? " reverse" : "");
    destroy_all(args, 3);
    destroy_all(res, 3);
    kiln_graph_destroy(g);
}

/* no carry: ys = x * x (a map), and a scan of a given length over no xs at all */
static int square_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                       kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_mul(g, in[0], in[0]);
    return 1;
}

static int count_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 3));
    outs[1] = in[0];
    return 2;
}

static void test_scan_shapes(kiln_context *ctx) {
    int64_t xd[3] = {4, 2, 3};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "map", &g);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F64, 3, xd), ys;
    int n = 0;
    CHECK_OK(ctx, kiln_scan(g, square_body, NULL, 0, NULL, 1, &xs, NULL, &n, &ys));
    CHECK(n == 1);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &ys));
    uint64_t seed = 5;
    kiln_array *arg = cmp_random_array(ctx, KILN_DTYPE_F64, 3, xd, &seed), *res = NULL;
    run_both(ctx, g, 1, &arg, 1, &res);
    double x[24], y[24];
    kiln_array_copy_to_host(arg, x, sizeof x);
    kiln_array_copy_to_host(res, y, sizeof y);
    int bad = 0;
    for (int i = 0; i < 24; i++) bad += y[i] != x[i] * x[i];
    CHECK_MSG(!bad, "map: %d elements differ", bad);
    kiln_array_destroy(arg);
    kiln_array_destroy(res);
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "count", &g);
    kiln_value c0 = kiln_scalar(g, KILN_DTYPE_I32, 1), outs[2];
    kiln_scan_options o = {.length = 6};
    CHECK_OK(ctx, kiln_scan(g, count_body, NULL, 1, &c0, 0, NULL, &o, &n, outs));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    kiln_array *r[2] = {0};
    run_both(ctx, g, 0, NULL, 2, r);
    int32_t seq[6], want[6] = {1, 4, 7, 10, 13, 16};
    kiln_array_copy_to_host(r[1], seq, sizeof seq);
    CHECK(get_i32(r[0]) == 19);
    CHECK(!memcmp(seq, want, sizeof want));
    destroy_all(r, 2);
    kiln_graph_destroy(g);
}

/* ----------------------------------------------------------------- cond ---- */

static int br_add(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_add(g, in[0], kiln_capture(g, o->v[0]));
    outs[1] = kiln_scalar(g, KILN_DTYPE_I32, 10);
    return 2;
}

static int br_mul(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_mul(g, in[0], in[0]);
    outs[1] = kiln_scalar(g, KILN_DTYPE_I32, 20);
    return 2;
}

static int br_neg(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_neg(g, kiln_capture(g, o->v[1]));
    outs[1] = kiln_scalar(g, KILN_DTYPE_I32, 30);
    (void)in;
    return 2;
}

static void test_cond(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "cond", &g);
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_BOOL, 0, NULL);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL);
    kiln_value k = kiln_parameter(g, "k", KILN_DTYPE_F64, 0, NULL), outs[2];
    outer o = {{k, x}};
    int n = 0;
    CHECK_OK(ctx, kiln_cond(g, p, br_add, br_mul, &o, 1, &x, &n, outs));
    CHECK(n == 2);
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    for (int t = 0; t < 2; t++) {
        bool pv = t;
        kiln_array *args[3] = {0}, *res[2] = {0};
        kiln_array_create(ctx, KILN_DTYPE_BOOL, 0, NULL, &pv, &args[0]);
        args[1] = scalar_f64(ctx, 3), args[2] = scalar_f64(ctx, 0.25);
        run_both(ctx, g, 3, args, 2, res);
        CHECK(get_f64(res[0]) == (pv ? 3.25 : 9.0));
        CHECK(get_i32(res[1]) == (pv ? 10 : 20));
        destroy_all(args, 3);
        destroy_all(res, 2);
    }
    kiln_graph_destroy(g);

    /* switch: an i64 index, clamped into range (-5 -> 0, 9 -> 2) */
    kiln_graph_create(ctx, "switch", &g);
    kiln_value ix = kiln_parameter(g, "i", KILN_DTYPE_I64, 0, NULL);
    x = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL);
    k = kiln_parameter(g, "k", KILN_DTYPE_F64, 0, NULL);
    o = (outer){{k, x}};
    kiln_fn fns[3] = {br_add, br_mul, br_neg};
    CHECK_OK(ctx, kiln_switch(g, ix, 3, fns, &o, 1, &x, &n, outs));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    int64_t idx[] = {-5, 0, 1, 2, 9};
    double want[] = {3.25, 3.25, 9, -3, -3};
    for (int t = 0; t < 5; t++) {
        kiln_array *args[3] = {0}, *res[2] = {0};
        kiln_array_create(ctx, KILN_DTYPE_I64, 0, NULL, &idx[t], &args[0]);
        args[1] = scalar_f64(ctx, 3), args[2] = scalar_f64(ctx, 0.25);
        run_both(ctx, g, 3, args, 2, res);
        CHECK_MSG(get_f64(res[0]) == want[t], "switch %lld: %g, want %g", (long long)idx[t],
                  get_f64(res[0]), want[t]);
        destroy_all(args, 3);
        destroy_all(res, 2);
    }
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------------- nesting ---- */

/* The inner body: acc += x_i * s, s captured from two levels out. */
static int inner_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_add(g, in[0], kiln_mul(g, in[1], kiln_capture(g, o->v[0])));
    return 1;
}

/* The outer body: each row of a matrix reduced by the inner scan, then carried on. */
static int outer_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    kiln_value zero = kiln_scalar(g, KILN_DTYPE_F64, 0), r;
    int n = 0;
    if (kiln_scan(g, inner_body, user, 1, &zero, 1, &in[1], NULL, &n, &r)) return -1;
    outs[0] = kiln_add(g, in[0], r);
    outs[1] = r;
    return 2;
}

static void test_nested(kiln_context *ctx) {
    int64_t md[2] = {3, 4};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "nested", &g);
    kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F64, 2, md);
    kiln_value s = kiln_parameter(g, "s", KILN_DTYPE_F64, 0, NULL), outs[2];
    kiln_value c0 = kiln_scalar(g, KILN_DTYPE_F64, 0);
    outer o = {{s}};
    int n = 0;
    CHECK_OK(ctx, kiln_scan(g, outer_body, &o, 1, &c0, 1, &m, NULL, &n, outs));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    double mv[12];
    for (int i = 0; i < 12; i++) mv[i] = i * 0.5;
    kiln_array *args[2] = {0}, *res[2] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F64, 2, md, mv, &args[0]);
    args[1] = scalar_f64(ctx, 2);
    run_both(ctx, g, 2, args, 2, res);
    double rows[3], total = 0, want[3];
    for (int r = 0; r < 3; r++) {
        want[r] = 0;
        for (int c = 0; c < 4; c++) want[r] += mv[r * 4 + c] * 2;
        total += want[r];
    }
    kiln_array_copy_to_host(res[1], rows, sizeof rows);
    CHECK(get_f64(res[0]) == total);
    CHECK(!memcmp(rows, want, sizeof want));
    destroy_all(args, 2);
    destroy_all(res, 2);
    kiln_graph_destroy(g);
}

/* ---------------------------------------------------------------- memory ---- */

/* x = x * 0.5 + slice: elementwise, so the body's plan writes the new carry over the old */
static int decay_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_add(g, kiln_mul(g, in[0], kiln_scalar(g, KILN_DTYPE_F32, 0.5)), in[1]);
    return 1;
}

/* x = rev(x) + 1: the new carry reads the old at other elements, so it needs a spare */
static int rev_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    int ax = 0;
    outs[0] = kiln_add(g, kiln_rev(g, in[0], 1, &ax), kiln_scalar(g, KILN_DTYPE_F32, 1));
    return 1;
}

/* (a, b) -> (b, a + b): a carry becomes another's value; each keeps its own buffer */
static int swap_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = in[1];
    outs[1] = kiln_add(g, in[0], in[1]);
    return 2;
}

static int swap_body_fori(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                          kiln_value *outs) {
    return swap_body(g, n_in - 1, in + 1, user, outs);
}

/* The loop's memory: planned once (its body's arena and spares are the control step's
 * scratch, so measured = planned holds, which cmp_graph checks), the carry updated in place
 * where the body allows (no spare), with a spare where it does not, and carries that trade
 * values kept apart. */
static void test_memory(kiln_context *ctx) {
    enum { L = 6, N = 1024 };
    int64_t xd[2] = {L, N}, cd[1] = {N};
    uint64_t seed = 11;
    kiln_fn bodies[2] = {decay_body, rev_body};
    for (int b = 0; b < 2; b++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "carry", &g);
        kiln_value c0 = kiln_parameter(g, "c", KILN_DTYPE_F32, 1, cd), out;
        kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F32, 2, xd);
        int n = 0;
        CHECK_OK(ctx, kiln_scan(g, bodies[b], NULL, 1, &c0, b ? 0 : 1, &xs,
                                &(kiln_scan_options){.length = L}, &n, &out));
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
        kiln_array *args[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 1, cd, &seed),
                               cmp_random_array(ctx, KILN_DTYPE_F32, 2, xd, &seed)};
        CHECK(cmp_graph(ctx, g, 2, args, NULL, 1e-6, NULL));
        kiln_executable *e = NULL;
        /* passes off: the rev body's loop (no scanned arrays) would be unrolled */
        CHECK_OK(ctx, kiln_compile(
                          g, &(kiln_compile_options){.keep_ir = true, .disable_passes = true}, &e));
        if (e && e->n_ctls == 1) {
            const exec_control *c = &e->ctls[0];
            CHECK_MSG(c->in_place[0] == !b, "%s body: in place %d", b ? "rev" : "decay",
                      c->in_place[0]);
            uint64_t spare = b ? N * sizeof(float) : 0;
            CHECK_MSG(c->scratch >= spare && c->scratch < spare + N * sizeof(float),
                      "scratch %llu bytes for a carry of %zu (spare %llu)",
                      (unsigned long long)c->scratch, N * sizeof(float), (unsigned long long)spare);
        } else {
            CHECK_MSG(0, "expected one compiled control node");
        }
        kiln_executable_destroy(e);
        destroy_all(args, 2);
        kiln_graph_destroy(g);
    }
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "fib", &g);
    kiln_value init[2] = {kiln_parameter(g, "a", KILN_DTYPE_F64, 1, cd),
                          kiln_parameter(g, "b", KILN_DTYPE_F64, 1, cd)},
               out[2];
    CHECK_OK(ctx, kiln_fori_loop(g, 0, 10, swap_body_fori, NULL, 2, init, out));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, out));
    kiln_array *args[2] = {cmp_random_array(ctx, KILN_DTYPE_F64, 1, cd, &seed),
                           cmp_random_array(ctx, KILN_DTYPE_F64, 1, cd, &seed)},
               *res[2] = {0};
    run_both(ctx, g, 2, args, 2, res);
    /* the loop unrolled (above) and kept as a control step (passes off) */
    CHECK(cmp_graph(ctx, g, 2, args, &(kiln_compile_options){.disable_passes = true}, 0, NULL));
    double a[N], bb[N], ga[N], gb[N];
    kiln_array_copy_to_host(args[0], a, sizeof a);
    kiln_array_copy_to_host(args[1], bb, sizeof bb);
    kiln_array_copy_to_host(res[0], ga, sizeof ga);
    kiln_array_copy_to_host(res[1], gb, sizeof gb);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double x = a[i], y = bb[i];
        for (int k = 0; k < 10; k++) {
            double t = x + y;
            x = y, y = t;
        }
        bad += ga[i] != x || gb[i] != y;
    }
    CHECK_MSG(!bad, "fibonacci carries: %d elements differ", bad);
    destroy_all(args, 2);
    destroy_all(res, 2);
    kiln_graph_destroy(g);
}

/* -------------------------------------------------------------- errors ---- */

static int bad_type_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                         kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_convert(g, in[0], KILN_DTYPE_F64); /* the carry was f32 */
    return 1;
}

/* returns a value of the enclosing graph as its carry, not captured */
static int returns_outer_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                              kiln_value *outs) {
    (void)g, (void)n_in, (void)in;
    outs[0] = ((const outer *)user)->v[0];
    return 1;
}

static int uses_outer_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                           kiln_value *outs) {
    (void)n_in;
    const outer *o = user;
    outs[0] = kiln_add(g, in[0], o->v[0]); /* not captured */
    return 1;
}

static int failing_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                        kiln_value *outs) {
    (void)g, (void)n_in, (void)user, (void)outs;
    (void)in;
    return -1;
}

static int f32_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)g, (void)n_in, (void)user;
    outs[0] = in[0];
    return 1;
}

static int same_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)g, (void)n_in, (void)user;
    outs[0] = in[0];
    return 1;
}

static int vec_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    int64_t d[1] = {2};
    outs[0] = kiln_broadcast_to(g, in[0], 1, d);
    return 1;
}

static int param_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_add(g, in[0], kiln_parameter(g, "extra", KILN_DTYPE_F32, 0, NULL));
    return 1;
}

static void test_errors(kiln_context *ctx) {
    int64_t v3[1] = {3}, m34[2] = {3, 4}, m44[2] = {4, 4};
    for (int i = 0; i < 13; i++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "bad", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 0, NULL);
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, m34);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 2, m44);
        kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_BOOL, 0, NULL), out[4], xs2[2] = {a, b};
        outer o = {{x}};
        int n = 0;
        kiln_fn three[2] = {same_body, vec_body};
        const char *want = NULL;
        (void)v3;
        // clang-format off
        int line = __LINE__ + 2;
        switch (i) {
        case 0: kiln_while_loop(g, same_body, bad_type_body, NULL, 1, &p, out); want = "kiln_while_loop: the body returns carry 0 as f64[] (made at test_control.c:"; break;
        case 1: kiln_fori_loop(g, 0, 3, bad_type_body, NULL, 1, &x, out); want = "kiln_fori_loop: the body returns carry 0 as f64[] (made at test_control.c:"; break;
        case 2: kiln_scan(g, uses_outer_body, &o, 1, &x, 0, NULL, NULL, &n, out); want = "is a value of graph 'bad', which encloses the body 'body' being traced: read it through kiln_capture"; break;
        case 3: kiln_while_loop(g, f32_cond, same_body, NULL, 1, &x, out); want = "the cond must return one bool scalar; it returns 1 values, the first f32[]"; break;
        case 4: kiln_scan(g, failing_body, NULL, 1, &x, 0, NULL, NULL, &n, out); want = "kiln_scan: in the body: kiln_scan: it returned -1 (an error of its own)"; break;
        case 5: kiln_scan(g, square_body, NULL, 0, NULL, 2, xs2, NULL, &n, out); want = "xs[1] is f32[4,4]: its leading axis must be the length, 3"; break;
        case 6: kiln_switch(g, kiln_scalar(g, KILN_DTYPE_I32, 0), 2, three, NULL, 1, &x, &n, out); want = "kiln_switch: branches[1] returns output 0 as f32[2] (made at test_control.c:"; break;
        case 7: kiln_cond(g, x, same_body, same_body, NULL, 1, &x, &n, out); want = "kiln_cond: the predicate is f32[]; it must be a bool scalar"; break;
        case 8: kiln_capture(g, x); want = "kiln_capture: graph 'bad' is not the body of a loop or branch being traced"; break;
        case 9: kiln_switch(g, kiln_scalar(g, KILN_DTYPE_F32, 0), 2, three, NULL, 1, &x, &n, out); want = "kiln_switch: the index is f32[]; it must be an integer scalar"; break;
        case 10: kiln_scan(g, param_body, NULL, 1, &x, 0, NULL, &(kiln_scan_options){.length = 2}, &n, out); want = "kiln_parameter: graph 'body' is the body of a loop or branch: kiln makes its parameters"; break;
        case 11: kiln_cond(g, p, bad_type_body, same_body, NULL, 1, &x, &n, out); want = "kiln_cond: true_fn returns output 0 as f64[] (made at test_control.c:"; break;
        case 12: kiln_fori_loop(g, 0, 3, returns_outer_body, &o, 1, &x, out); want = "kiln_fori_loop: in the body: kiln_fori_loop: carry 0 is a value of graph 'bad', which encloses"; break;
        }
        // clang-format on
        CHECK_MSG(kiln_graph_status(g) != KILN_STATUS_OK, "error case %d passed", i);
        CHECK_CONTAINS(kiln_graph_error(g), want);
        char at[64];
        snprintf(at, sizeof at, "(at test_control.c:%d)", line + i);
        CHECK_CONTAINS(kiln_graph_error(g), at);
        /* said once, though a body's error passed up ends with the same line */
        const char *first_at = strstr(kiln_graph_error(g), at);
        CHECK_MSG(!first_at || !strstr(first_at + 1, at), "case %d: %s", i, kiln_graph_error(g));
        /* a type that differs in its dtype alone is a dtype error */
        if (i == 0 || i == 1 || i == 11) CHECK(kiln_graph_status(g) == KILN_STATUS_DTYPE);
        CHECK(i == 9 || kiln_graph_num_nodes(g) <= 6); /* no control node left behind */
        kiln_graph_destroy(g);
    }
}

/* A loop's carry is written over its initial value when that dies at the loop and is no
 * other input of it (src/plan/inplace.c): exp(c) feeds a scan and nothing else, so the
 * scan's result shares its buffer; a carry whose initial value the body also captures does not.
 * Both against the reference, so the aliasing changes no value. */
static int decay_capture_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                              kiln_value *outs) {
    decay_body(g, n_in, in, NULL, outs);
    outs[0] = kiln_add(g, outs[0], kiln_capture(g, *(const kiln_value *)user));
    return 1;
}

static void test_carry_over_init(kiln_context *ctx) {
    enum { L = 3, N = 4096 };
    int64_t xd[2] = {L, N}, cd[1] = {N};
    uint64_t seed = 5;
    for (int shared = 0; shared < 2; shared++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "carry over init", &g);
        kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F32, 1, cd), out, y;
        kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F32, 2, xd);
        kiln_value c0 = kiln_exp(g, c);
        int n = 0;
        CHECK_OK(ctx, kiln_scan(g, shared ? decay_capture_body : decay_body, &c0, 1, &c0, 1, &xs,
                                NULL, &n, &out));
        y = kiln_mul(g, out, out);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        kiln_array *args[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 1, cd, &seed),
                               cmp_random_array(ctx, KILN_DTYPE_F32, 2, xd, &seed)};
        CHECK(cmp_graph(ctx, g, 2, args, NULL, 1e-6, NULL));
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
        int shares = -1;
        kiln_memory_analysis ma = {0};
        if (e) kiln_executable_get_memory_analysis(e, &ma);
        for (int i = 0; e && i < ma.num_buffers; i++) {
            kiln_buffer_info b;
            if (!kiln_executable_get_buffer_info(e, i, &b) && !strcmp(b.op, "scan"))
                shares = b.shares_with;
        }
        if (shared)
            CHECK_MSG(shares == 0,
                      "the scan's carry shares %d, but its body reads its initial value", shares);
        else
            CHECK_MSG(shares > 0, "the scan's carry is not written over its dying initial value");
        kiln_executable_destroy(e);
        destroy_all(args, 2);
        kiln_graph_destroy(g);
    }
}

/* A memory budget counts a loop's scratch (its body's arena): the budget's search plans its
 * trials with the compiled bodies, so a budget below the loop's peak is refused (nothing in
 * this program can be recomputed) rather than met on paper and exceeded at run time. */
static int big_temp_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                         kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_dot_dims none = {0}; /* c c^T: a large temporary in the body */
    kiln_value m = kiln_tanh(g, kiln_dot_general(g, in[1], in[1], &none));
    outs[0] = kiln_add(g, in[1], kiln_reduce_sum(g, m, 1, (int[]){0}, false));
    return 1;
}

static void test_budget_counts_loops(kiln_context *ctx) {
    int64_t cd[1] = {256};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "budget", &g);
    kiln_value c0 = kiln_parameter(g, "c", KILN_DTYPE_F32, 1, cd), out;
    CHECK_OK(ctx, kiln_fori_loop(g, 0, 3, big_temp_body, NULL, 1, &c0, &out));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
    kiln_executable *e = NULL;
    kiln_memory_analysis ma = {0};
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    if (e) kiln_executable_get_memory_analysis(e, &ma);
    kiln_executable_destroy(e);
    e = NULL;
    CHECK_MSG(ma.peak_bytes > 256 * 256 * 4, "the loop's peak %llu holds its body's temporary",
              (unsigned long long)ma.peak_bytes);
    kiln_budget_result br = {.fits = true};
    kiln_compile_options o = {.memory_budget = ma.peak_bytes - 1024, .budget_result = &br};
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(ctx), "the smallest planned peak reachable is");
    /* the same figures in fields */
    CHECK(!br.fits && br.budget_bytes == ma.peak_bytes - 1024);
    CHECK_MSG(br.min_peak_bytes == ma.peak_bytes && br.peak_without_bytes == ma.peak_bytes,
              "budget result: min %llu, without %llu, the peak %llu",
              (unsigned long long)br.min_peak_bytes, (unsigned long long)br.peak_without_bytes,
              (unsigned long long)ma.peak_bytes);
    kiln_executable_destroy(e);
    e = NULL;
    o.memory_budget = ma.peak_bytes;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    CHECK(br.fits && br.budget_bytes == ma.peak_bytes);
    o.memory_budget = 0;
    kiln_executable_destroy(e);
    e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    CHECK_MSG(!br.fits && !br.budget_bytes && !br.min_peak_bytes, "no budget: all zero");
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static int gelu_block(kiln_graph *g, int n, const kiln_value *in, void *u, kiln_value *out) {
    (void)n, (void)u;
    kiln_value h = in[0], w = in[1];
    kiln_value a = kiln_gelu(g, kiln_matmul(g, h, w), false);
    kiln_value b = kiln_tanh(g, kiln_matmul(g, a, w));
    out[0] = kiln_add(g, h, kiln_sin(g, kiln_matmul(g, b, w)));
    return 1;
}

/* A budget the program meets without one changes nothing: the differentiated scan of a
 * checkpointed body plans the same peak under 1 GiB, and under exactly its peak without a
 * budget, as with none (an outside check: its loop body, planned under the budget, gave up
 * the default's cheap recomputations, so any budget raised the peak by 512 KiB and its own
 * peak without a budget was refused). */
static void test_budget_keeps_default(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "keeps", &g);
    int64_t dh[2] = {256, 128}, dw[3] = {4, 128, 128};
    kiln_value h0 = kiln_parameter(g, "h0", KILN_DTYPE_F32, 2, dh);
    kiln_value ws = kiln_parameter(g, "ws", KILN_DTYPE_F32, 3, dw), o[1], gw;
    kiln_scan_options so = {.checkpoint_body = true};
    int n = 0;
    CHECK_OK(ctx, kiln_scan(g, gelu_block, NULL, 1, &h0, 1, &ws, &so, &n, o));
    kiln_value loss = kiln_mean(g, kiln_square(g, o[0]), 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, loss, 1, &ws, &gw));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, (kiln_value[]){loss, gw}));
    uint64_t peak[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        kiln_budget_result br = {0};
        kiln_compile_options op = {.memory_budget = k == 0   ? 0
                                                    : k == 1 ? 1ull << 30
                                                             : peak[0],
                                   .budget_result = &br};
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, &op, &e));
        kiln_memory_analysis ma = {0};
        if (e) kiln_executable_get_memory_analysis(e, &ma);
        peak[k] = ma.peak_bytes;
        CHECK(k == 0 || (br.fits && br.peak_without_bytes == peak[0]));
        kiln_executable_destroy(e);
    }
    CHECK_MSG(peak[1] == peak[0] && peak[2] == peak[0], "peaks: %llu none, %llu 1 GiB, %llu own",
              (unsigned long long)peak[0], (unsigned long long)peak[1],
              (unsigned long long)peak[2]);
    kiln_graph_destroy(g);
}

int main(void) {
    kiln_context *ctx = test_context();
    if (!ctx) return 1;
    test_while(ctx);
    test_fori(ctx);
    test_scan(ctx, false);
    test_scan(ctx, true);
    test_scan_shapes(ctx);
    test_cond(ctx);
    test_nested(ctx);
    test_memory(ctx);
    test_budget_counts_loops(ctx);
    test_budget_keeps_default(ctx);
    test_carry_over_init(ctx);
    test_errors(ctx);
    kiln_context_destroy(ctx);
    return test_summary("test_control");
}
