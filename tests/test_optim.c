/* test_optim.c — the optimisers (src/trace/optim.c): one step of SGD, Adam and AdamW
 * against updates derived by hand in f64 (in optax's arrangement, so the library's torch
 * arrangement is checked against an independent form), through the reference interpreter
 * and compiled; a learning-rate schedule and a traced step count through one jit without
 * retracing; AdamW converging on a quadratic; clipping by global norm below, above and at
 * the threshold and on a zero gradient; donation; builder errors; fault injection. */
#include "compare.h"
#include "fault.h"

static kiln_context *ctx;
static uint64_t seed;

/* ------------------------------------------------------------- helpers ---- */

static kiln_array *arr(kiln_dtype t, int rank, const int64_t *dims, const double *v) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    unsigned char *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        if (t == KILN_DTYPE_F32) ((float *)buf)[i] = (float)v[i];
        if (t == KILN_DTYPE_F64) ((double *)buf)[i] = v[i];
        if (t == KILN_DTYPE_I32) ((int32_t *)buf)[i] = (int32_t)v[i];
    }
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, t, rank, dims, buf, &a));
    free(buf);
    return a;
}

static kiln_array *scalar_arr(kiln_dtype t, double v) {
    return arr(t, 0, NULL, &v);
}

/* n random values in [lo, hi), rounded to dtype t (what the arrays will hold). */
static void random_values(kiln_dtype t, double *v, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) {
        v[i] = lo + (hi - lo) * test_rng_unit(&seed);
        if (t == KILN_DTYPE_F32) v[i] = (float)v[i];
    }
}

/* The array's elements as doubles into out (room for its size). */
static void read_doubles(const kiln_array *a, double *out) {
    size_t nb = kiln_array_nbytes(a);
    void *buf = malloc(nb ? nb : 1);
    kiln_array_copy_to_host(a, buf, nb);
    for (int64_t i = 0; i < kiln_array_size(a); i++) out[i] = cmp_elem(buf, kiln_array_dtype(a), i);
    free(buf);
}

/* Runs the finished g compiled (its plan checked: sound, and the measured peak the
 * planned one) and through the reference interpreter; every output of both, in order and
 * concatenated, must match want within tol (per output dtype; relative, and absolute for
 * values near 0 that cancel from inputs of size ~1). */
static void run_both(kiln_graph *g, int n_args, kiln_array **args, const double *want,
                     double rtol_f32, double rtol_f64, const char *what) {
    int n_out = kiln_graph_num_outputs(g);
    kiln_array *outs[16] = {0};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    for (int path = 0; path < 2 && e; path++) {
        int ok = 1;
        if (path == 0)
            CHECK_OK(ctx, cmp_run_planned(ctx, e, n_args, args, n_out, outs, &ok));
        else
            CHECK_OK(ctx, kiln_interpret(g, n_args, args, n_out, outs));
        CHECK_MSG(ok, "%s: the memory plan did not hold", what);
        int64_t at = 0;
        for (int k = 0; k < n_out && outs[k]; k++) {
            int64_t n = kiln_array_size(outs[k]);
            double *got = malloc((size_t)(n ? n : 1) * sizeof *got);
            read_doubles(outs[k], got);
            double tol = kiln_array_dtype(outs[k]) == KILN_DTYPE_F32 ? rtol_f32 : rtol_f64;
            for (int64_t i = 0; i < n; i++)
                CHECK_MSG(test_close(got[i], want[at + i], tol, tol),
                          "%s (%s): output %d element %lld: got %.17g, want %.17g", what,
                          path ? "interpreted" : "compiled", k, (long long)i, got[i], want[at + i]);
            at += n;
            free(got);
            kiln_array_destroy(outs[k]);
            outs[k] = NULL;
        }
    }
    kiln_executable_destroy(e);
}

/* Two parameters of different dtypes and shapes, to check that an optimiser keeps each
 * entry's own dtype: [0] f32[3,4], [1] f64[5]. */
enum { NP = 2 };
static const kiln_dtype P_DTYPE[NP] = {KILN_DTYPE_F32, KILN_DTYPE_F64};
static const int P_RANK[NP] = {2, 1};
static const int64_t P_DIMS[NP][2] = {{3, 4}, {5, 0}};
static const int64_t P_SIZE[NP] = {12, 5};
#define MAXE 12

/* One state array (parameter, gradient or optimiser state) per entry, as host values
 * and graph parameters. */
typedef struct entry_set {
    double v[NP][MAXE];
    kiln_value val[NP];
} entry_set;

static void make_set(kiln_graph *g, entry_set *s, const char *name, double lo, double hi) {
    for (int i = 0; i < NP; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "%s%d", name, i);
        random_values(P_DTYPE[i], s->v[i], P_SIZE[i], lo, hi);
        s->val[i] = kiln_parameter(g, nm, P_DTYPE[i], P_RANK[i], P_DIMS[i]);
    }
}

static void push_args(const entry_set *s, kiln_array **args, int *n) {
    for (int i = 0; i < NP; i++) args[(*n)++] = arr(P_DTYPE[i], P_RANK[i], P_DIMS[i], s->v[i]);
}

/* --------------------------------------------------------------- one step ---- */

/* Adam or AdamW, one step at t = 3 with a traced lr (f32) and step (i32), the other
 * hyperparameters as f64 constants; optionally weight decay. */
static void adam_one_step(bool decoupled, bool with_wd) {
    const double lr = 0.01, b1 = 0.8, b2 = 0.99, eps = 1e-3, wd = with_wd ? 0.1 : 0;
    const int t = 3;
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "adam", &g));
    entry_set p, gr, m, v;
    make_set(g, &p, "p", -1, 1);
    make_set(g, &gr, "g", -1, 1);
    make_set(g, &m, "m", -0.5, 0.5);
    make_set(g, &v, "v", 0, 0.5);
    kiln_value lr_v = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
    kiln_value step_v = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);
    kiln_adam_options o = {.lr = lr_v,
                           .b1 = kiln_scalar(g, KILN_DTYPE_F64, b1),
                           .b2 = kiln_scalar(g, KILN_DTYPE_F64, b2),
                           .eps = kiln_scalar(g, KILN_DTYPE_F64, eps),
                           .step = step_v};
    if (with_wd) o.weight_decay = kiln_scalar(g, KILN_DTYPE_F64, wd);
    kiln_value outs[3 * NP];
    kiln_status s = decoupled ? kiln_optim_adamw(g, &o, NP, p.val, gr.val, m.val, v.val, outs,
                                                 outs + NP, outs + 2 * NP)
                              : kiln_optim_adam(g, &o, NP, p.val, gr.val, m.val, v.val, outs,
                                                outs + NP, outs + 2 * NP);
    CHECK_OK(ctx, s);
    CHECK_OK(ctx, kiln_graph_finish(g, 3 * NP, outs));

    /* by hand, in optax's arrangement: the lr is what the f32 array holds */
    double want[3 * NP * MAXE], *w = want, lrf = (float)lr;
    double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
    double np_[NP][MAXE], nm[NP][MAXE], nv[NP][MAXE];
    for (int i = 0; i < NP; i++)
        for (int k = 0; k < P_SIZE[i]; k++) {
            double pk = p.v[i][k], gk = gr.v[i][k] + (decoupled ? 0 : wd * pk);
            nm[i][k] = b1 * m.v[i][k] + (1 - b1) * gk;
            nv[i][k] = b2 * v.v[i][k] + (1 - b2) * gk * gk;
            double u = (nm[i][k] / bc1) / (sqrt(nv[i][k] / bc2) + eps);
            if (decoupled) u += (with_wd ? wd : 1e-2) * pk; /* AdamW's default decay */
            np_[i][k] = pk - lrf * u;
        }
    double(*parts[3])[MAXE] = {np_, nm, nv}; /* the outputs' order */
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < NP; i++) {
            memcpy(w, parts[k][i], (size_t)P_SIZE[i] * sizeof *w);
            w += P_SIZE[i];
        }

    kiln_array *args[4 * NP + 2];
    int n = 0;
    push_args(&p, args, &n), push_args(&gr, args, &n), push_args(&m, args, &n);
    push_args(&v, args, &n);
    args[n++] = scalar_arr(KILN_DTYPE_F32, lr);
    args[n++] = scalar_arr(KILN_DTYPE_I32, t);
    char what[64];
    snprintf(what, sizeof what, "%s%s", decoupled ? "adamw" : "adam", with_wd ? " + decay" : "");
    run_both(g, n, args, want, 2e-6, 1e-13, what);
    for (int i = 0; i < n; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void test_adam_one_step(void) {
    adam_one_step(false, false);
    adam_one_step(false, true);
    adam_one_step(true, false); /* the default weight decay, 1e-2 */
    adam_one_step(true, true);
}

/* SGD: plain, with momentum, Nesterov, weight decay; hyperparameters as f64 constants. */
static void sgd_one_step(bool momentum, bool nesterov, bool with_wd) {
    const double lr = 0.05, mu = 0.9, wd = with_wd ? 0.01 : 0;
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "sgd", &g));
    entry_set p, gr, b;
    make_set(g, &p, "p", -1, 1);
    make_set(g, &gr, "g", -1, 1);
    if (momentum) make_set(g, &b, "b", -0.5, 0.5);
    kiln_sgd_options o = {.lr = kiln_scalar(g, KILN_DTYPE_F64, lr), .nesterov = nesterov};
    if (momentum) o.momentum = kiln_scalar(g, KILN_DTYPE_F64, mu);
    if (with_wd) o.weight_decay = kiln_scalar(g, KILN_DTYPE_F64, wd);
    kiln_value outs[2 * NP];
    CHECK_OK(ctx, kiln_optim_sgd(g, &o, NP, p.val, gr.val, momentum ? b.val : NULL, outs,
                                 momentum ? outs + NP : NULL));
    CHECK_OK(ctx, kiln_graph_finish(g, momentum ? 2 * NP : NP, outs));
    double want[2 * NP * MAXE];
    int at = 0, atb = momentum ? (int)(P_SIZE[0] + P_SIZE[1]) : 0;
    for (int i = 0; i < NP; i++)
        for (int k = 0; k < P_SIZE[i]; k++) {
            double d = gr.v[i][k] + wd * p.v[i][k];
            if (momentum) {
                double nb = mu * b.v[i][k] + d;
                want[atb++] = nb;
                d = nesterov ? d + mu * nb : nb;
            }
            want[at++] = p.v[i][k] - lr * d;
        }
    kiln_array *args[3 * NP];
    int n = 0;
    push_args(&p, args, &n), push_args(&gr, args, &n);
    if (momentum) push_args(&b, args, &n);
    run_both(g, n, args, want, 2e-6, 1e-14, nesterov ? "sgd nesterov" : "sgd");
    for (int i = 0; i < n; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void test_sgd_one_step(void) {
    sgd_one_step(false, false, false);
    sgd_one_step(false, false, true);
    sgd_one_step(true, false, false);
    sgd_one_step(true, true, true);
}

/* ------------------------------------------------------ a schedule, one jit ---- */

enum { SCHED_N = 6 };

/* args: p, g, m, v (f32[SCHED_N]), lr (f32), step (i32) -> p', m', v' */
static int trace_step(kiln_graph *g, const kiln_value *a, int n_args, const void *st, void *user,
                      kiln_value *outs) {
    (void)st, (void)user;
    if (n_args != 6) return -1;
    kiln_adamw_options o = {.lr = a[4], .step = a[5]};
    if (kiln_optim_adamw(g, &o, 1, &a[0], &a[1], &a[2], &a[3], &outs[0], &outs[1], &outs[2]))
        return -1;
    return 3;
}

/* A learning rate that changes every call and a traced step count: one trace, one
 * compile, and every step as the f64 recurrence says; p, m, v donated and fed back. */
static void test_schedule_without_retrace(void) {
    int donate[3] = {0, 2, 3};
    kiln_jit_options jo = {.name = "adamw_step",
                           .fn = trace_step,
                           .compile = {.n_donate = 3, .donate_argnums = donate}};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &jo, &j));
    int64_t d[1] = {SCHED_N};
    double p[SCHED_N], gr[SCHED_N], m[SCHED_N] = {0}, v[SCHED_N] = {0};
    random_values(KILN_DTYPE_F32, p, SCHED_N, -1, 1);
    random_values(KILN_DTYPE_F32, gr, SCHED_N, -1, 1);
    kiln_array *pa = arr(KILN_DTYPE_F32, 1, d, p), *ga = arr(KILN_DTYPE_F32, 1, d, gr);
    kiln_array *ma = arr(KILN_DTYPE_F32, 1, d, m), *va = arr(KILN_DTYPE_F32, 1, d, v);
    static const double lrs[5] = {0.1, 0.05, 0.2, 0.001, 0.03};
    for (int t = 1; t <= 5; t++) {
        double lr = (float)lrs[t - 1];
        kiln_array *lra = scalar_arr(KILN_DTYPE_F32, lr), *sa = scalar_arr(KILN_DTYPE_I32, t);
        kiln_array *args[6] = {pa, ga, ma, va, lra, sa}, *outs[3] = {0};
        CHECK_OK(ctx, kiln_jit_call(j, 6, args, NULL, 0, 3, outs));
        CHECK(kiln_array_is_consumed(pa) && kiln_array_is_consumed(ma));
        kiln_array_destroy(pa), kiln_array_destroy(ma), kiln_array_destroy(va);
        kiln_array_destroy(lra), kiln_array_destroy(sa);
        pa = outs[0], ma = outs[1], va = outs[2];
        double got[SCHED_N];
        read_doubles(pa, got);
        for (int k = 0; k < SCHED_N; k++) {
            m[k] = 0.9 * m[k] + 0.1 * gr[k];
            v[k] = 0.999 * v[k] + 0.001 * gr[k] * gr[k];
            double u = m[k] / (1 - pow(0.9, t)) / (sqrt(v[k] / (1 - pow(0.999, t))) + 1e-8);
            p[k] -= lr * (u + 1e-2 * p[k]);
            CHECK_MSG(test_close(got[k], p[k], 1e-5, 1e-7),
                      "step %d element %d: got %.9g, want %.9g", t, k, got[k], p[k]);
        }
    }
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK_MSG(st.traces == 1 && st.compiles == 1 && st.hits == 4,
              "traces %llu compiles %llu hits %llu", (unsigned long long)st.traces,
              (unsigned long long)st.compiles, (unsigned long long)st.hits);
    kiln_array_destroy(pa), kiln_array_destroy(ga), kiln_array_destroy(ma);
    kiln_array_destroy(va);
    kiln_jit_destroy(j);
}

/* ------------------------------------------------- AdamW on a quadratic ---- */

enum { QN = 64 };

/* f(x) = 0.5 sum a (x - b)^2 with its gradient a (x - b) written by hand; AdamW with a
 * cosine learning-rate schedule fed each step, x, m and v donated. After 100 steps the
 * loss has fallen by orders of magnitude, x is near b (within the pull of the small weight
 * decay), and every step matched the f64 recurrence. The memory analysis shows the
 * donated buffers reused. */
static void test_adamw_converges(void) {
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "quadratic", &g));
    int64_t d[1] = {QN};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F32, 1, d);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, d);
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, d);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, d);
    kiln_value lr = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
    kiln_value step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);
    kiln_value diff = kiln_sub(g, x, b);
    kiln_value loss =
        kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 0.5),
                 kiln_reduce_sum(g, kiln_mul(g, a, kiln_mul(g, diff, diff)), 0, NULL, false));
    kiln_value grad = kiln_mul(g, a, diff);
    kiln_adamw_options o = {
        .lr = lr, .step = step, .weight_decay = kiln_scalar(g, KILN_DTYPE_F64, 1e-4)};
    kiln_value outs[4];
    CHECK_OK(ctx, kiln_optim_adamw(g, &o, 1, &x, &grad, &m, &v, &outs[0], &outs[1], &outs[2]));
    outs[3] = loss;
    CHECK_OK(ctx, kiln_graph_finish(g, 4, outs));
    int donate[3] = {0, 1, 2};
    kiln_compile_options co = {.n_donate = 3, .donate_argnums = donate};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &co, &e));
    if (!e) {
        kiln_graph_destroy(g);
        return;
    }
    kiln_memory_analysis ma;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &ma));
    /* x', m', v' in the donated x, m, v: the only new output is the loss */
    CHECK_MSG(ma.num_donations_unused == 0 && ma.alias_bytes == 3 * 256 && ma.output_bytes == 256,
              "donations unused %d, aliased %llu bytes, outputs %llu bytes",
              ma.num_donations_unused, (unsigned long long)ma.alias_bytes,
              (unsigned long long)ma.output_bytes);

    double hx[QN], ha[QN], hb[QN], hm[QN] = {0}, hv[QN] = {0};
    random_values(KILN_DTYPE_F32, hx, QN, -1, 1);
    random_values(KILN_DTYPE_F32, ha, QN, 0.5, 2);
    random_values(KILN_DTYPE_F32, hb, QN, -1, 1);
    kiln_array *xa = arr(KILN_DTYPE_F32, 1, d, hx), *mav = arr(KILN_DTYPE_F32, 1, d, hm);
    kiln_array *va = arr(KILN_DTYPE_F32, 1, d, hv), *aa = arr(KILN_DTYPE_F32, 1, d, ha);
    kiln_array *ba = arr(KILN_DTYPE_F32, 1, d, hb);
    double first_loss = 0, last_loss = 0, worst = 0;
    for (int t = 1; t <= 100; t++) {
        double lrt = (float)(0.15 * 0.5 * (1 + cos(M_PI * (t - 1) / 100.0)));
        kiln_array *la = scalar_arr(KILN_DTYPE_F32, lrt), *sa = scalar_arr(KILN_DTYPE_I32, t);
        kiln_array *args[7] = {xa, mav, va, aa, ba, la, sa}, *res[4] = {0};
        kiln_status s = kiln_executable_run(e, 7, args, 4, res);
        CHECK_OK(ctx, s);
        kiln_array_destroy(la), kiln_array_destroy(sa);
        if (s) break;
        kiln_array_destroy(xa), kiln_array_destroy(mav), kiln_array_destroy(va);
        xa = res[0], mav = res[1], va = res[2];
        float lf;
        kiln_array_copy_to_host(res[3], &lf, sizeof lf);
        kiln_array_destroy(res[3]);
        if (t == 1) first_loss = lf;
        last_loss = lf;
        for (int k = 0; k < QN; k++) { /* the f64 recurrence */
            double gk = ha[k] * (hx[k] - hb[k]);
            hm[k] = 0.9 * hm[k] + 0.1 * gk;
            hv[k] = 0.999 * hv[k] + 0.001 * gk * gk;
            double u = hm[k] / (1 - pow(0.9, t)) / (sqrt(hv[k] / (1 - pow(0.999, t))) + 1e-8);
            hx[k] -= lrt * (u + 1e-4 * hx[k]);
        }
        double got[QN];
        read_doubles(xa, got);
        for (int k = 0; k < QN; k++)
            if (fabs(got[k] - hx[k]) > worst) worst = fabs(got[k] - hx[k]);
    }
    double far = 0;
    for (int k = 0; k < QN; k++) far = fmax(far, fabs(hx[k] - hb[k]));
    CHECK_MSG(last_loss < 1e-3 * first_loss && far < 0.05,
              "loss %g -> %g, farthest coordinate %g from the minimum", first_loss, last_loss, far);
    CHECK_MSG(worst < 1e-4, "compiled steps drifted %g from the f64 recurrence", worst);
    kiln_array_destroy(xa), kiln_array_destroy(mav), kiln_array_destroy(va);
    kiln_array_destroy(aa), kiln_array_destroy(ba);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* --------------------------------------------------------------- clipping ---- */

/* grads f64[4] and f32[2,3] clipped by a traced max_norm, feeding the norm out too. */
static void test_clip_by_global_norm(void) {
    kiln_graph *g;
    CHECK_OK(ctx, kiln_graph_create(ctx, "clip", &g));
    int64_t d0[1] = {4}, d1[2] = {2, 3};
    kiln_value gs[2] = {kiln_parameter(g, "g0", KILN_DTYPE_F64, 1, d0),
                        kiln_parameter(g, "g1", KILN_DTYPE_F32, 2, d1)};
    kiln_value max_norm = kiln_parameter(g, "max_norm", KILN_DTYPE_F64, 0, NULL);
    kiln_value outs[3];
    CHECK_OK(ctx, kiln_optim_clip_by_global_norm(g, max_norm, 2, gs, outs, &outs[2]));
    kiln_dtype nt;
    int nr;
    CHECK(kiln_value_type(g, outs[2], &nt, &nr, NULL) && nt == KILN_DTYPE_F64 && nr == 0);
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    double h[10];
    random_values(KILN_DTYPE_F32, h, 10, -1, 1);
    /* as kiln and optax compute it: each sum of squares in its gradient's dtype (the f32
     * squares rounded, their sum accumulated wider and rounded once), added in f64 */
    double s0 = 0, s1 = 0;
    for (int i = 0; i < 4; i++) s0 += h[i] * h[i];
    for (int i = 4; i < 10; i++) s1 += (float)(h[i] * h[i]);
    double norm = sqrt(s0 + (float)s1);
    kiln_array *g0 = arr(KILN_DTYPE_F64, 1, d0, h), *g1 = arr(KILN_DTYPE_F32, 2, d1, h + 4);
    /* below: unchanged; above: scaled to the threshold; at: the scaled form, equal up to
     * rounding (norm < max_norm is false) */
    static const double factor[3] = {2.0, 0.25, 1.0};
    for (int c = 0; c < 3; c++) {
        double mx = norm * factor[c], want[11];
        for (int i = 0; i < 10; i++) {
            want[i] = factor[c] >= 1 ? h[i] : h[i] / norm * mx;
            if (i >= 4) want[i] = (float)want[i];
        }
        want[10] = norm;
        kiln_array *mxa = scalar_arr(KILN_DTYPE_F64, mx), *args[3] = {g0, g1, mxa};
        run_both(g, 3, args, want, 1e-6, 1e-14, factor[c] > 1 ? "clip below" : "clip above/at");
        kiln_array_destroy(mxa);
    }
    /* a zero gradient stays zero (no 0/0), its norm 0 */
    double zeros[10] = {0}, want0[11] = {0};
    kiln_array *z0 = arr(KILN_DTYPE_F64, 1, d0, zeros), *z1 = arr(KILN_DTYPE_F32, 2, d1, zeros);
    kiln_array *one = scalar_arr(KILN_DTYPE_F64, 1.0), *zargs[3] = {z0, z1, one};
    run_both(g, 3, zargs, want0, 0, 0, "clip zero gradient");
    kiln_array_destroy(z0), kiln_array_destroy(z1), kiln_array_destroy(one);
    kiln_array_destroy(g0), kiln_array_destroy(g1);
    kiln_graph_destroy(g);
}

/* ----------------------------------------------------------------- errors ---- */

/* A fresh graph with f32[3] parameters p, g, m, v. */
static kiln_graph *error_graph(kiln_value *p, kiln_value *gr, kiln_value *m, kiln_value *v) {
    kiln_graph *g;
    kiln_graph_create(ctx, "errors", &g);
    int64_t d[1] = {3};
    *p = kiln_parameter(g, "p", KILN_DTYPE_F32, 1, d);
    *gr = kiln_parameter(g, "g", KILN_DTYPE_F32, 1, d);
    *m = kiln_parameter(g, "m", KILN_DTYPE_F32, 1, d);
    *v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, d);
    return g;
}

/* The optimiser's status is want, its message (on the graph and the context) holds every
 * needle, the outputs are invalid, and kiln_graph_finish returns the same error. */
static void expect_error(kiln_graph *g, kiln_status got, kiln_status want, const kiln_value *outs,
                         int n_outs, const char *needle1, const char *needle2) {
    CHECK_STATUS(got, want);
    CHECK_CONTAINS(kiln_graph_error(g), needle1);
    CHECK_CONTAINS(kiln_graph_error(g), needle2);
    CHECK_CONTAINS(kiln_last_error(ctx), needle1);
    for (int i = 0; i < n_outs; i++) CHECK(!kiln_value_ok(outs[i]));
    kiln_value any = {1, 1};
    CHECK_STATUS(kiln_graph_finish(g, 1, &any), want);
    kiln_graph_destroy(g);
}

static void test_errors(void) {
    kiln_value p, gr, m, v, o[3] = {{1, 1}, {1, 1}, {1, 1}};
    kiln_graph *g = error_graph(&p, &gr, &m, &v);
    kiln_adamw_options ao = {.step = kiln_scalar(g, KILN_DTYPE_I32, 1)};
    expect_error(g, kiln_optim_adamw(g, &ao, 0, &p, &gr, &m, &v, &o[0], &o[1], &o[2]),
                 KILN_STATUS_INVALID_ARGUMENT, o, 0, "kiln_optim_adamw: n is 0", "test_optim.c:");

    g = error_graph(&p, &gr, &m, &v);
    kiln_value ps[2] = {p, p}, gs[2] = {gr, kiln_reshape(g, gr, 2, (int64_t[]){1, 3})};
    kiln_value out2[2] = {{1, 1}, {1, 1}};
    expect_error(g, kiln_optim_sgd(g, NULL, 2, ps, gs, NULL, out2, NULL), KILN_STATUS_SHAPE, out2,
                 2, "kiln_optim_sgd: grads[1] is f32[1,3] but params[1] is f32[3]",
                 "operands: f32[3], f32[1,3]");

    g = error_graph(&p, &gr, &m, &v);
    kiln_value mi = kiln_convert(g, m, KILN_DTYPE_F64);
    ao = (kiln_adamw_options){.step = kiln_scalar(g, KILN_DTYPE_I32, 1)};
    expect_error(g, kiln_optim_adamw(g, &ao, 1, &p, &gr, &mi, &v, &o[0], &o[1], &o[2]),
                 KILN_STATUS_DTYPE, o, 3, "m[0] is f64[3] but params[0] is f32[3]", "same dtype");

    g = error_graph(&p, &gr, &m, &v);
    kiln_value pi = kiln_convert(g, p, KILN_DTYPE_I32);
    expect_error(g, kiln_optim_sgd(g, NULL, 1, &pi, &pi, NULL, o, NULL), KILN_STATUS_DTYPE, o, 1,
                 "kiln_optim_sgd: params[0] is i32", "float values only");

    g = error_graph(&p, &gr, &m, &v);
    expect_error(g, kiln_optim_adam(g, NULL, 1, &p, &gr, &m, &v, &o[0], &o[1], &o[2]),
                 KILN_STATUS_INVALID_ARGUMENT, o, 3, "kiln_optim_adam: step is unset", "required");

    g = error_graph(&p, &gr, &m, &v);
    ao = (kiln_adamw_options){.step = kiln_scalar(g, KILN_DTYPE_I32, 1), .lr = p};
    expect_error(g, kiln_optim_adamw(g, &ao, 1, &p, &gr, &m, &v, &o[0], &o[1], &o[2]),
                 KILN_STATUS_SHAPE, o, 3, "lr must be a rank-0", "not f32[3]");

    g = error_graph(&p, &gr, &m, &v);
    ao = (kiln_adamw_options){.step = kiln_scalar(g, KILN_DTYPE_I32, 1),
                              .b1 = kiln_scalar(g, KILN_DTYPE_F64, 1.5)};
    expect_error(g, kiln_optim_adamw(g, &ao, 1, &p, &gr, &m, &v, &o[0], &o[1], &o[2]),
                 KILN_STATUS_INVALID_ARGUMENT, o, 3, "b1 = 1.5 must be in [0, 1)", "adamw");

    g = error_graph(&p, &gr, &m, &v);
    ao = (kiln_adamw_options){.step = kiln_scalar(g, KILN_DTYPE_I32, 0)};
    expect_error(g, kiln_optim_adamw(g, &ao, 1, &p, &gr, &m, &v, &o[0], &o[1], &o[2]),
                 KILN_STATUS_INVALID_ARGUMENT, o, 3, "step = 0 must be >= 1", "1-based");

    g = error_graph(&p, &gr, &m, &v);
    kiln_sgd_options so = {.nesterov = true};
    expect_error(g, kiln_optim_sgd(g, &so, 1, &p, &gr, NULL, o, NULL), KILN_STATUS_INVALID_ARGUMENT,
                 o, 1, "nesterov needs momentum", "kiln_optim_sgd");

    g = error_graph(&p, &gr, &m, &v);
    so = (kiln_sgd_options){.momentum = kiln_scalar(g, KILN_DTYPE_F32, 0.9f)};
    expect_error(g, kiln_optim_sgd(g, &so, 1, &p, &gr, NULL, o, &o[1]),
                 KILN_STATUS_INVALID_ARGUMENT, o, 2, "momentum is NULL for n = 1", "sgd");

    g = error_graph(&p, &gr, &m, &v);
    expect_error(g, kiln_optim_sgd(g, NULL, 1, &p, &gr, &m, o, &o[1]), KILN_STATUS_INVALID_ARGUMENT,
                 o, 1, "momentum buffers were given", "o->momentum is unset");

    g = error_graph(&p, &gr, &m, &v);
    kiln_value norm = {1, 1};
    expect_error(
        g, kiln_optim_clip_by_global_norm(g, kiln_scalar(g, KILN_DTYPE_F32, 0), 1, &gr, o, &norm),
        KILN_STATUS_INVALID_ARGUMENT, o, 1, "max_norm = 0 must be > 0",
        "kiln_optim_clip_by_global_norm");
    CHECK(!kiln_value_ok(norm));

    /* a value of another graph */
    kiln_graph *other = error_graph(&p, &gr, &m, &v);
    g = error_graph(&p, &gr, &m, &v);
    kiln_value foreign = kiln_parameter(other, "q", KILN_DTYPE_F32, 1, (int64_t[]){3});
    expect_error(g, kiln_optim_sgd(g, NULL, 1, &p, &foreign, NULL, o, NULL),
                 KILN_STATUS_INVALID_ARGUMENT, o, 1, "grads[0] is not a value of graph 'errors'",
                 "kiln_optim_sgd");
    kiln_graph_destroy(other);

    /* Lion and Adafactor: their arrays, their required step, a state of the wrong shape */
    kiln_value o4[4] = {{1, 1}, {1, 1}, {1, 1}, {1, 1}};
    g = error_graph(&p, &gr, &m, &v);
    kiln_value mv = kiln_reshape(g, m, 2, (int64_t[]){3, 1});
    expect_error(g, kiln_optim_lion(g, NULL, 1, &p, &gr, &mv, &o[0], &o[1]), KILN_STATUS_SHAPE, o,
                 2, "kiln_optim_lion: m[0] is f32[3,1] but params[0] is f32[3]", "same dtype");
    g = error_graph(&p, &gr, &m, &v);
    kiln_lion_options lo = {.b2 = kiln_scalar(g, KILN_DTYPE_F64, 1.0)};
    expect_error(g, kiln_optim_lion(g, &lo, 1, &p, &gr, &m, &o[0], &o[1]),
                 KILN_STATUS_INVALID_ARGUMENT, o, 2, "b2 = 1 must be in [0, 1)", "lion");
    g = error_graph(&p, &gr, &m, &v);
    kiln_value one = kiln_parameter(g, "one", KILN_DTYPE_F32, 1, (int64_t[]){1});
    expect_error(
        g,
        kiln_optim_adafactor(g, NULL, 1, &p, &gr, &one, &one, &v, &o4[0], &o4[1], &o4[2], &o4[3]),
        KILN_STATUS_INVALID_ARGUMENT, o4, 4, "kiln_optim_adafactor: step is unset", "required");
    g = error_graph(&p, &gr, &m, &v);
    one = kiln_parameter(g, "one", KILN_DTYPE_F32, 1, (int64_t[]){1});
    kiln_adafactor_options fo = {.step = kiln_scalar(g, KILN_DTYPE_I32, 1)};
    expect_error(
        g,
        kiln_optim_adafactor(g, &fo, 1, &p, &gr, &one, &one, &one, &o4[0], &o4[1], &o4[2], &o4[3]),
        KILN_STATUS_SHAPE, o4, 4, "v[0] is f32[1] but params[0] (f32[3]) needs f32[3]",
        "kiln_optim_adafactor_state_shape");
    g = error_graph(&p, &gr, &m, &v);
    one = kiln_parameter(g, "one", KILN_DTYPE_F32, 1, (int64_t[]){1});
    kiln_value big = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, (int64_t[]){128, 256});
    kiln_value wrong_row = kiln_parameter(g, "r", KILN_DTYPE_F32, 1, (int64_t[]){256});
    kiln_value col = kiln_parameter(g, "c", KILN_DTYPE_F32, 1, (int64_t[]){256});
    fo = (kiln_adafactor_options){.step = kiln_scalar(g, KILN_DTYPE_I32, 1)};
    expect_error(g,
                 kiln_optim_adafactor(g, &fo, 1, &big, &big, &wrong_row, &col, &one, &o4[0], &o4[1],
                                      &o4[2], &o4[3]),
                 KILN_STATUS_SHAPE, o4, 4,
                 "v_row[0] is f32[256] but params[0] (f32[128,256]) "
                 "needs f32[128]",
                 "state_shape");
    g = error_graph(&p, &gr, &m, &v);
    one = kiln_parameter(g, "one", KILN_DTYPE_F32, 1, (int64_t[]){1});
    fo = (kiln_adafactor_options){.step = kiln_scalar(g, KILN_DTYPE_I32, 1)};
    expect_error(
        g, kiln_optim_adafactor(g, &fo, 1, &p, &gr, NULL, &one, &v, &o4[0], &o4[1], &o4[2], &o4[3]),
        KILN_STATUS_INVALID_ARGUMENT, o4, 4, "v_row is NULL for n = 1", "adafactor");
    g = error_graph(&p, &gr, &m, &v);
    one = kiln_parameter(g, "one", KILN_DTYPE_F32, 1, (int64_t[]){1});
    fo = (kiln_adafactor_options){.step = kiln_scalar(g, KILN_DTYPE_I32, 1),
                                  .min_dim_size_to_factor = -1};
    expect_error(
        g, kiln_optim_adafactor(g, &fo, 1, &p, &gr, &one, &one, &v, &o4[0], &o4[1], &o4[2], &o4[3]),
        KILN_STATUS_INVALID_ARGUMENT, o4, 4, "min_dim_size_to_factor is -1", ">= 0");
    kiln_adafactor_state_shape sh;
    CHECK_STATUS(kiln_optim_adafactor_state_shape(&fo, 1, (int64_t[]){4}, &sh),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_optim_adafactor_state_shape(NULL, 2, (int64_t[]){4, -1}, &sh),
                 KILN_STATUS_SHAPE);
    CHECK_STATUS(kiln_optim_adafactor_state_shape(NULL, 9, (int64_t[9]){0}, &sh),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_OK(ctx, kiln_optim_adafactor_state_shape(NULL, 2, (int64_t[]){128, 256}, &sh));
    CHECK(sh.factored && sh.v_row_rank == 1 && sh.v_row[0] == 128 && sh.v_col[0] == 256 &&
          sh.v_rank == 1 && sh.v[0] == 1);
    CHECK_OK(ctx, kiln_optim_adafactor_state_shape(NULL, 2, (int64_t[]){127, 256}, &sh));
    CHECK(!sh.factored && sh.v_rank == 2 && sh.v[0] == 127 && sh.v_row[0] == 1);

    /* sticky: after an error, a correct call fails with the first error, outputs invalid */
    g = error_graph(&p, &gr, &m, &v);
    kiln_exp(g, kiln_convert(g, p, KILN_DTYPE_I32)); /* exp of an integer: the first error */
    o[0] = (kiln_value){1, 1};
    CHECK_STATUS(kiln_optim_sgd(g, NULL, 1, &p, &gr, NULL, o, NULL), KILN_STATUS_DTYPE);
    expect_error(g, kiln_graph_status(g), KILN_STATUS_DTYPE, o, 1, "kiln_exp", "i32");
}

/* --------------------------------------------------------- fault injection ---- */

/* Clip, then AdamW, built, compiled and run in a context of its own; r->user is the
 * kernel cache folder. */
static kiln_status fault_step(fault_run *r) {
    kiln_context *c = NULL;
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    kiln_array *args[6] = {0}, *outs[4] = {0};
    kiln_status s = fault_context(r, (const char *)r->user, &c);
    if (!s) s = kiln_graph_create(c, "fault", &g);
    if (!s) {
        int64_t d[1] = {8};
        kiln_value in[4];
        static const char *const names[4] = {"p", "g", "m", "v"};
        for (int i = 0; i < 4; i++) in[i] = kiln_parameter(g, names[i], KILN_DTYPE_F32, 1, d);
        kiln_value lr = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
        kiln_value step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);
        kiln_value cg, o[4];
        kiln_adamw_options ao = {.lr = lr, .step = step};
        s = kiln_optim_clip_by_global_norm(g, kiln_scalar(g, KILN_DTYPE_F32, 1), 1, &in[1], &cg,
                                           &o[3]);
        if (!s) s = kiln_optim_adamw(g, &ao, 1, &in[0], &cg, &in[2], &in[3], &o[0], &o[1], &o[2]);
        if (!s) s = kiln_graph_finish(g, 4, o);
    }
    int donate[3] = {0, 2, 3};
    kiln_compile_options co = {.n_donate = 3, .donate_argnums = donate};
    if (!s) s = kiln_compile(g, &co, &e);
    for (int i = 0; !s && i < 6; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        s = kiln_array_create(c, p->dtype, p->shape.rank, p->shape.dims, NULL, &args[i]);
    }
    if (!s) {
        int32_t one = 1;
        kiln_array_destroy(args[5]);
        args[5] = NULL;
        s = kiln_array_create(c, KILN_DTYPE_I32, 0, NULL, &one, &args[5]);
    }
    if (!s) s = kiln_executable_run(e, 6, args, 4, outs);
    fault_note(r, c, s);
    for (int i = 0; i < 6; i++) kiln_array_destroy(args[i]);
    for (int i = 0; i < 4; i++) kiln_array_destroy(outs[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(c);
    return s;
}

/* Every host allocation of the step fails in turn: each must end in a clean
 * KILN_STATUS_HOST_OOM with nothing leaked. One clean run first puts the program in the
 * disk cache, so the sweep's runs load it rather than each running the C compiler. */
static void test_fault_injection(const char *dir) {
    test_alloc clean = {0};
    fault_run warm = {.alloc = &clean, .host = test_allocator(&clean), .user = (void *)dir};
    CHECK_MSG(fault_step(&warm) == KILN_STATUS_OK, "the clean run: %s", warm.message);
    fault_sweep sw = {.name = "optimiser build + compile + run",
                      .run = fault_step,
                      .user = (void *)dir,
                      .max_runs = 20000};
    long n = fault_sweep_run(&sw);
    CHECK(n > 0);
    printf("fault injection: %ld host allocations of an optimiser step failed in turn\n", n);
}

/* One AdamW step and one gradient clip over parameters of four float dtypes at once (an
 * f32 master beside bf16, f16 and f64 ones): each gets its hyperparameters in its own
 * dtype, and the compiled step equals the interpreter's. */
static void test_mixed_dtypes(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "adamw_mixed", &g);
    enum { N = 4 };
    static const kiln_dtype ts[N] = {KILN_DTYPE_F32, KILN_DTYPE_BF16, KILN_DTYPE_F16,
                                     KILN_DTYPE_F64};
    int64_t d[1] = {16};
    kiln_value p[N], gr[N], m[N], v[N], np[N], nm[N], nv[N], cl[N], norm;
    for (int i = 0; i < N; i++) {
        p[i] = kiln_parameter(g, "p", ts[i], 1, d);
        gr[i] = kiln_parameter(g, "g", ts[i], 1, d);
        m[i] = kiln_parameter(g, "m", ts[i], 1, d);
        v[i] = kiln_parameter(g, "v", ts[i], 1, d);
    }
    CHECK_OK(ctx, kiln_optim_clip_by_global_norm(g, kiln_scalar(g, KILN_DTYPE_F32, 1.0), N, gr, cl,
                                                 &norm));
    kiln_adamw_options o = {.lr = kiln_scalar(g, KILN_DTYPE_F64, 1e-2),
                            .step = kiln_scalar(g, KILN_DTYPE_I32, 3)};
    CHECK_OK(ctx, kiln_optim_adamw(g, &o, N, p, cl, m, v, np, nm, nv));
    kiln_value outs[3 * N];
    for (int i = 0; i < N; i++)
        outs[3 * i] = np[i], outs[3 * i + 1] = nm[i], outs[3 * i + 2] = nv[i];
    CHECK_OK(ctx, kiln_graph_finish(g, 3 * N, outs));
    for (int i = 0; i < N; i++) {
        kiln_dtype t;
        int r;
        int64_t dd[KILN_MAX_RANK];
        CHECK(kiln_value_type(g, np[i], &t, &r, dd) && t == ts[i]);
    }
    kiln_array *args[4 * N];
    uint64_t draw = 11;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 4; k++) {
            args[4 * i + k] = cmp_random_array(ctx, ts[i], 1, d, &draw);
            if (k == 3) { /* v >= 0 */
                kiln_array_destroy(args[4 * i + k]);
                unsigned char zero[16 * 8] = {0};
                kiln_array_create(ctx, ts[i], 1, d, zero, &args[4 * i + k]);
            }
        }
    CHECK_MSG(cmp_graph(ctx, g, 4 * N, args, NULL, 1e-5, NULL), "mixed-dtype AdamW step");
    for (int i = 0; i < 4 * N; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------- Lion and Adafactor, optax ---- */

/* Three steps of optax.lion and optax.adafactor in f32 (tests/data/optim/optax.txt, from
 * make_fixture.py), the same parameters and gradients computed here by the same formulas,
 * a learning rate fed each step (one executable, three runs, each step's outputs the next
 * step's arguments), compiled and interpreted: every final parameter and state array
 * within 2e-5 of optax's. Shapes: factored over the two largest axes (including a tie),
 * a rank-3 one, a vector, and a matrix too small to factor. */
enum { OX_N = 5, OX_STEPS = 3, OX_MAXE = 24 };
static const int OX_RANK[OX_N] = {2, 3, 1, 2, 2};
static const int64_t OX_DIMS[OX_N][3] = {{3, 4}, {2, 3, 4}, {5}, {4, 4}, {2, 3}};

static int64_t ox_size(int k) {
    int64_t n = 1;
    for (int i = 0; i < OX_RANK[k]; i++) n *= OX_DIMS[k][i];
    return n;
}

/* The fixture's array `key` of parameter k in case `name` into v (room for OX_MAXE);
 * its length, or -1. */
static int ox_load(const char *name, int k, const char *key, double *v) {
    FILE *f = fopen(KILN_SOURCE_DIR "/tests/data/optim/optax.txt", "r");
    CHECK_MSG(f != NULL, "cannot open tests/data/optim/optax.txt");
    if (!f) return -1;
    char line[4096];
    int n = -1;
    while (n < 0 && fgets(line, sizeof line, f)) {
        char c[32], a[16];
        int kk, off;
        if (sscanf(line, "%31s %d %15s%n", c, &kk, a, &off) != 3 || strcmp(c, name) || kk != k ||
            strcmp(a, key))
            continue;
        n = 0;
        for (char *q = line + off, *e; n < OX_MAXE; q = e, n++) {
            v[n] = strtod(q, &e);
            if (e == q) break;
        }
    }
    fclose(f);
    CHECK_MSG(n > 0, "optax.txt: no %s %d %s", name, k, key);
    return n;
}

/* A case's hyperparameters (NAN: unset, the default) and switches. */
typedef struct ox_opts {
    double b1, b2, wd, decay_rate, eps, clip;
    int min_dim;
    bool unfactored, no_scale, no_clip;
} ox_opts;

static kiln_value ox_hp(kiln_graph *g, double v) {
    return isnan(v) ? KILN_VALUE_NONE : kiln_scalar(g, KILN_DTYPE_F64, v);
}

/* case "lion..." (one state per parameter, m) or "adafactor..." (v_row, v_col, v) */
static void optax_case(const char *name, double base_lr, const ox_opts *x) {
    bool lion = !strncmp(name, "lion", 4);
    int ns = lion ? 1 : 3;
    static const char *const keys[4] = {"p", "v_row", "v_col", "v"};
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, name, &g));
    kiln_value p[OX_N], gr[OX_N], st[3][OX_N], np[OX_N], ns_[3][OX_N];
    kiln_lion_options lo = {
        .b1 = ox_hp(g, x->b1), .b2 = ox_hp(g, x->b2), .weight_decay = ox_hp(g, x->wd)};
    kiln_adafactor_options ao = {.decay_rate = ox_hp(g, x->decay_rate),
                                 .clipping_threshold = ox_hp(g, x->clip),
                                 .weight_decay = ox_hp(g, x->wd),
                                 .eps = ox_hp(g, x->eps),
                                 .min_dim_size_to_factor = x->min_dim,
                                 .unfactored = x->unfactored,
                                 .no_parameter_scale = x->no_scale,
                                 .no_clipping = x->no_clip};
    int64_t sdims[3][OX_N][KILN_MAX_RANK];
    int srank[3][OX_N];
    for (int k = 0; k < OX_N; k++) {
        p[k] = kiln_parameter(g, "p", KILN_DTYPE_F32, OX_RANK[k], OX_DIMS[k]);
        gr[k] = kiln_parameter(g, "g", KILN_DTYPE_F32, OX_RANK[k], OX_DIMS[k]);
        kiln_adafactor_state_shape sh = {0};
        if (!lion)
            CHECK_OK(ctx, kiln_optim_adafactor_state_shape(&ao, OX_RANK[k], OX_DIMS[k], &sh));
        for (int j = 0; j < ns; j++) {
            srank[j][k] = lion     ? OX_RANK[k]
                          : j == 0 ? sh.v_row_rank
                          : j == 1 ? sh.v_col_rank
                                   : sh.v_rank;
            const int64_t *d = lion ? OX_DIMS[k] : j == 0 ? sh.v_row : j == 1 ? sh.v_col : sh.v;
            memcpy(sdims[j][k], d, sizeof(int64_t) * (size_t)srank[j][k]);
            st[j][k] = kiln_parameter(g, "s", KILN_DTYPE_F32, srank[j][k], sdims[j][k]);
        }
    }
    kiln_value lr = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
    kiln_value step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);
    if (lion) {
        lo.lr = lr;
        CHECK_OK(ctx, kiln_optim_lion(g, &lo, OX_N, p, gr, st[0], np, ns_[0]));
    } else {
        ao.lr = lr, ao.step = step;
        CHECK_OK(ctx, kiln_optim_adafactor(g, &ao, OX_N, p, gr, st[0], st[1], st[2], np, ns_[0],
                                           ns_[1], ns_[2]));
    }
    kiln_value outs[4 * OX_N];
    for (int k = 0; k < OX_N; k++) {
        outs[k] = np[k];
        for (int j = 0; j < ns; j++) outs[(j + 1) * OX_N + k] = ns_[j][k];
    }
    int n_out = (ns + 1) * OX_N;
    CHECK_OK(ctx, kiln_graph_finish(g, n_out, outs));
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    for (int path = 0; path < 2 && e; path++) {
        /* arguments in the graph's order: per parameter p, g, its states; then lr, step */
        kiln_array *cur[4 * OX_N] = {0}; /* p, then each state: the values carried */
        for (int k = 0; k < OX_N; k++) {
            double v[OX_MAXE];
            for (int64_t i = 0; i < ox_size(k); i++) v[i] = (float)sin(0.7 * (double)i + 0.3 * k);
            cur[k] = arr(KILN_DTYPE_F32, OX_RANK[k], OX_DIMS[k], v);
            for (int j = 0; j < ns; j++) {
                double z[OX_MAXE] = {0};
                cur[(j + 1) * OX_N + k] = arr(KILN_DTYPE_F32, srank[j][k], sdims[j][k], z);
            }
        }
        for (int t = 1; t <= OX_STEPS; t++) {
            kiln_array *args[5 * OX_N + 2], *grads[OX_N], *out[4 * OX_N] = {0};
            int n = 0;
            for (int k = 0; k < OX_N; k++) {
                double v[OX_MAXE];
                for (int64_t i = 0; i < ox_size(k); i++)
                    v[i] = (float)(cos(1.3 * (double)i + 0.5 * k + 0.9 * t) * (1 + 0.1 * t));
                grads[k] = arr(KILN_DTYPE_F32, OX_RANK[k], OX_DIMS[k], v);
                args[n++] = cur[k], args[n++] = grads[k];
                for (int j = 0; j < ns; j++) args[n++] = cur[(j + 1) * OX_N + k];
            }
            args[n++] = scalar_arr(KILN_DTYPE_F32, (float)(base_lr * (1 + 0.5 * (t - 1))));
            args[n++] = scalar_arr(KILN_DTYPE_I32, t);
            if (path == 0)
                CHECK_OK(ctx, kiln_executable_run(e, n, args, n_out, out));
            else
                CHECK_OK(ctx, kiln_interpret(g, n, args, n_out, out));
            for (int k = 0; k < OX_N; k++) kiln_array_destroy(grads[k]);
            kiln_array_destroy(args[n - 1]), kiln_array_destroy(args[n - 2]);
            for (int i = 0; i < n_out; i++) kiln_array_destroy(cur[i]), cur[i] = out[i];
        }
        for (int j = 0; j <= ns; j++)
            for (int k = 0; k < OX_N && cur[j * OX_N + k]; k++) {
                double want[OX_MAXE], got[OX_MAXE];
                const char *key = lion && j == 1 ? "m" : keys[j];
                int len = ox_load(name, k, key, want);
                CHECK_MSG(len == kiln_array_size(cur[j * OX_N + k]),
                          "%s %d %s: %lld elements, optax %d", name, k, key,
                          (long long)kiln_array_size(cur[j * OX_N + k]), len);
                if (len != kiln_array_size(cur[j * OX_N + k])) continue;
                read_doubles(cur[j * OX_N + k], got);
                for (int i = 0; i < len; i++)
                    CHECK_MSG(test_close(got[i], want[i], 2e-5, 1e-7),
                              "%s (%s): parameter %d's %s[%d] = %.9g, optax %.9g", name,
                              path ? "interpreted" : "compiled", k, key, i, got[i], want[i]);
            }
        for (int i = 0; i < n_out; i++) kiln_array_destroy(cur[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static void test_lion_adafactor_optax(void) {
    const double U = NAN;
    optax_case("lion", 0.01, &(ox_opts){.b1 = 0.8, .b2 = 0.95, .wd = 0.1, U, U, U});
    optax_case("lion_default", 1e-4, &(ox_opts){U, U, U, U, U, U});
    optax_case("adafactor", 0.05, &(ox_opts){U, U, .wd = 0.01, U, U, U, .min_dim = 3});
    optax_case("adafactor_plain", 0.02,
               &(ox_opts){U, U, U, .decay_rate = 0.5, U, U, .unfactored = true, .no_scale = true,
                          .no_clip = true});
    optax_case("adafactor_clip", 2.0,
               &(ox_opts){U, U, U, U, .eps = 1e-3, .clip = 1.5, .min_dim = 2});
}

int main(void) {
    seed = test_seed(0x5eed0971ull);
    char dir[] = "/tmp/kiln-test-optim-XXXXXX";
    if (!(ctx = test_private_context(dir))) return 2;
    RUN(test_adam_one_step);
    RUN(test_sgd_one_step);
    RUN(test_schedule_without_retrace);
    RUN(test_adamw_converges);
    RUN(test_clip_by_global_norm);
    RUN(test_errors);
    RUN_CC(test_mixed_dtypes);
    RUN(test_lion_adafactor_optax);
    test_fault_injection(dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_optim");
}
