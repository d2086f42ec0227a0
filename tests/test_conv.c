/* test_conv.c — kiln_conv_general_dilated, kiln_reduce_window and kiln_avg_pool
 * (src/trace/conv.c): against a direct loop written here from lax's definitions (not
 * from conv.c's im2col) on every layout (NCHW/OIHW, NHWC/HWIO, general specs), 1 to 3
 * spatial axes, strides, explicit (negative too), VALID, SAME and SAME_LOWER padding, lhs
 * and rhs dilation, feature groups, empty results; compiled (fused and unfused, held to
 * planned peak == measured by cmp_graph) against the reference interpreter with the
 * gradients in the same program, in f32, f64, i32, bf16 and f16; against values JAX
 * computed (tests/conv_jax.h, forward and both gradients, max-pool ties included); and the
 * errors. Finite-difference gradient checks of the same ops are cases of test_autodiff.c. */
#include "compare.h"
#include "conv_jax.h"

#include <math.h>
#include <stdint.h>

static kiln_context *C;
static uint64_t seed;

static int64_t numel(int rank, const int64_t *d) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    return n;
}

/* The inputs conv_jax_values.py makes: f32(i * 7919 % 61) / 61 - 0.5, floored to quarters
 * when tied. */
static void fill(float *v, int64_t n, bool tied) {
    for (int64_t i = 0; i < n; i++) {
        v[i] = (float)(i * 7919 % 61) / 61.0f - 0.5f;
        if (tied) v[i] = floorf(v[i] * 4.0f) / 4.0f;
    }
}

static kiln_array *filled(int rank, const int64_t *dims, bool tied) {
    int64_t n = numel(rank, dims);
    float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    fill(v, n, tied);
    kiln_array *a = NULL;
    kiln_array_create(C, KILN_DTYPE_F32, rank, dims, v, &a);
    free(v);
    return a;
}

static double *host_f64(const kiln_array *a) {
    int64_t n = kiln_array_size(a);
    size_t bytes = kiln_array_nbytes(a);
    void *raw = malloc(bytes ? bytes : 1);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    kiln_array_copy_to_host(a, raw, bytes);
    for (int64_t i = 0; i < n; i++) v[i] = cmp_elem(raw, kiln_array_dtype(a), i);
    free(raw);
    return v;
}

static int close_to(const kiln_array *got, const double *want, int64_t n, double tol,
                    const char *what) {
    CHECK_MSG(kiln_array_size(got) == n, "%s: %lld elements, want %lld", what,
              (long long)kiln_array_size(got), (long long)n);
    if (kiln_array_size(got) != n) return 0;
    double *v = host_f64(got);
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++)
        if (!(fabs(v[i] - want[i]) <= tol * (1 + fabs(want[i])))) {
            fprintf(stderr, "%s: element %lld: got %.9g, want %.9g\n", what, (long long)i, v[i],
                    want[i]);
            ok = 0;
        }
    free(v);
    return ok;
}

/* ------------------------------------------------- the direct definitions ---- */

/* lax.padtype_to_pads, written again from its documentation. */
static void pads(kiln_padding p, int64_t in, int64_t w, int64_t s, int64_t *lo, int64_t *hi) {
    if (p == KILN_PADDING_EXPLICIT) return;
    int64_t out = (in + s - 1) / s, t = p == KILN_PADDING_VALID ? 0 : (out - 1) * s + w - in;
    if (t < 0) t = 0;
    *lo = p == KILN_PADDING_SAME_LOWER ? t - t / 2 : t / 2;
    *hi = t - *lo;
}

static int64_t one(int64_t v) {
    return v ? v : 1;
}

/* The (lhs, rhs, out) specs of a layout. */
static void layout_specs(const kiln_conv_options *o, int rank, int *l, int *r, int *out) {
    int ns = rank - 2;
    if (o->layout == KILN_CONV_SPECS) {
        memcpy(l, o->lhs_spec, sizeof(int) * (size_t)rank);
        memcpy(r, o->rhs_spec, sizeof(int) * (size_t)rank);
        memcpy(out, o->out_spec, sizeof(int) * (size_t)rank);
        return;
    }
    bool nhwc = o->layout == KILN_CONV_NHWC;
    l[0] = out[0] = 0, l[1] = out[1] = nhwc ? rank - 1 : 1;
    r[0] = nhwc ? rank - 1 : 0, r[1] = nhwc ? rank - 2 : 1;
    for (int d = 0; d < ns; d++)
        l[2 + d] = out[2 + d] = nhwc ? 1 + d : 2 + d, r[2 + d] = nhwc ? d : 2 + d;
}

static int64_t at(int rank, const int64_t *dims, const int64_t *idx) {
    int64_t k = 0;
    for (int i = 0; i < rank; i++) k = k * dims[i] + idx[i];
    return k;
}

typedef struct conv_shape {
    int rank;
    int64_t out[5];
    int l[5], r[5], o[5];
    int64_t lo[3], hi[3], s[3], ld[3], rd[3];
} conv_shape;

static void conv_shape_of(int rank, const int64_t *ld, const int64_t *rd,
                          const kiln_conv_options *o, conv_shape *cs) {
    int ns = rank - 2;
    cs->rank = rank;
    layout_specs(o, rank, cs->l, cs->r, cs->o);
    cs->out[cs->o[0]] = ld[cs->l[0]], cs->out[cs->o[1]] = rd[cs->r[0]];
    for (int d = 0; d < ns; d++) {
        int64_t in = ld[cs->l[2 + d]], k = rd[cs->r[2 + d]];
        cs->s[d] = one(o->window_strides[d]), cs->ld[d] = one(o->lhs_dilation[d]);
        cs->rd[d] = one(o->rhs_dilation[d]);
        cs->lo[d] = o->pad_lo[d], cs->hi[d] = o->pad_hi[d];
        int64_t w = (k - 1) * cs->rd[d] + 1;
        pads(o->padding, in, w, cs->s[d], &cs->lo[d], &cs->hi[d]);
        int64_t p = (in ? (in - 1) * cs->ld[d] + 1 : 0) + cs->lo[d] + cs->hi[d];
        cs->out[cs->o[2 + d]] = p < w ? 0 : (p - w) / cs->s[d] + 1;
    }
}

/* out[n, o, y] = sum_{i, k} x[n, g I + i, (y s + k rd - lo) / ld] w[o, i, k], the x term
 * present where that position is a multiple of ld inside the input. */
static double *naive_conv(const double *x, const int64_t *xd, const double *w, const int64_t *wd,
                          const kiln_conv_options *o, const conv_shape *cs) {
    int rank = cs->rank, ns = rank - 2;
    int64_t n_out = numel(rank, cs->out), G = one(o->feature_group_count);
    int64_t I = wd[cs->r[1]], O = wd[cs->r[0]];
    double *y = calloc((size_t)(n_out ? n_out : 1), sizeof *y);
    int64_t oi[5], xi[5], wi[5];
    for (int64_t e = 0; e < n_out; e++) {
        for (int i = rank - 1, r = (int)e; i >= 0; i--)
            oi[i] = r % cs->out[i], r /= (int)cs->out[i];
        int64_t on = oi[cs->o[0]], of = oi[cs->o[1]], grp = of / (O / G), kn = 1;
        for (int d = 0; d < ns; d++) kn *= wd[cs->r[2 + d]];
        double acc = 0;
        for (int64_t i = 0; i < I; i++)
            for (int64_t k = 0; k < kn; k++) {
                bool in = true;
                int64_t rest = k;
                xi[cs->l[0]] = on, xi[cs->l[1]] = grp * I + i;
                wi[cs->r[0]] = of, wi[cs->r[1]] = i;
                for (int d = ns - 1; d >= 0; d--) {
                    int64_t kd = rest % wd[cs->r[2 + d]];
                    rest /= wd[cs->r[2 + d]];
                    wi[cs->r[2 + d]] = kd;
                    int64_t p = oi[cs->o[2 + d]] * cs->s[d] + kd * cs->rd[d] - cs->lo[d];
                    if (p < 0 || p % cs->ld[d] || p / cs->ld[d] >= xd[cs->l[2 + d]])
                        in = false;
                    else
                        xi[cs->l[2 + d]] = p / cs->ld[d];
                }
                if (in) acc += x[at(rank, xd, xi)] * w[at(rank, wd, wi)];
            }
        y[e] = acc;
    }
    return y;
}

/* ------------------------------------------------------------ conv cases ---- */

typedef struct conv_case {
    const char *name;
    int rank;
    int64_t lhs[5], rhs[5];
    kiln_conv_options o;
} conv_case;

static const conv_case conv_cases[] = {
    {"NCHW plain", 4, {2, 3, 5, 4}, {4, 3, 3, 2}, {.padding = KILN_PADDING_EXPLICIT}},
    {"NCHW SAME stride 2",
     4,
     {1, 2, 7, 6},
     {3, 2, 3, 3},
     {.window_strides = {2, 2}, .padding = KILN_PADDING_SAME}},
    {"NCHW SAME_LOWER, even kernel",
     4,
     {1, 2, 5, 5},
     {2, 2, 2, 4},
     {.window_strides = {1, 2}, .padding = KILN_PADDING_SAME_LOWER}},
    {"NCHW VALID, rhs dilation",
     4,
     {2, 1, 7, 6},
     {2, 1, 3, 2},
     {.padding = KILN_PADDING_VALID, .rhs_dilation = {2, 3}}},
    {"NCHW explicit, negative, lhs dilation",
     4,
     {1, 2, 4, 5},
     {3, 2, 2, 3},
     {.pad_lo = {2, -1}, .pad_hi = {-1, 3}, .lhs_dilation = {2, 3}, .window_strides = {1, 2}}},
    {"NHWC/HWIO SAME",
     4,
     {2, 5, 4, 3},
     {3, 3, 3, 4},
     {.layout = KILN_CONV_NHWC, .padding = KILN_PADDING_SAME}},
    /* 16 channels: the patches' split loop is unrolled by pragma (print_c.c, c_loop) */
    {"NHWC/HWIO SAME, 16 channels",
     4,
     {2, 5, 4, 16},
     {3, 3, 16, 4},
     {.layout = KILN_CONV_NHWC, .padding = KILN_PADDING_SAME}},
    {"NHWC groups 3, strides, dilation",
     4,
     {1, 6, 7, 6},
     {2, 2, 2, 9},
     {.layout = KILN_CONV_NHWC,
      .feature_group_count = 3,
      .window_strides = {2, 1},
      .rhs_dilation = {2, 2},
      .pad_lo = {1, 1},
      .pad_hi = {1, 0}}},
    {"NCHW depthwise",
     4,
     {2, 4, 5, 5},
     {8, 1, 3, 3},
     {.feature_group_count = 4, .padding = KILN_PADDING_SAME}},
    {"1-d NCW stride 3", 3, {2, 3, 11}, {2, 3, 4}, {.window_strides = {3}, .pad_hi = {2}}},
    {"1-d NWC, lhs and rhs dilation",
     3,
     {1, 9, 2},
     {3, 2, 4},
     {.layout = KILN_CONV_NHWC, .lhs_dilation = {2}, .rhs_dilation = {2}, .pad_lo = {1}}},
    {"3-d NCDHW SAME",
     5,
     {1, 2, 4, 3, 5},
     {2, 2, 2, 3, 2},
     {.padding = KILN_PADDING_SAME, .window_strides = {2, 1, 2}}},
    {"3-d NDHWC groups",
     5,
     {1, 3, 4, 3, 4},
     {2, 2, 1, 2, 4},
     {.layout = KILN_CONV_NHWC, .feature_group_count = 2, .padding = KILN_PADDING_VALID}},
    {"general specs",
     4,
     {3, 5, 2, 4},
     {4, 2, 2, 6},
     {.layout = KILN_CONV_SPECS,
      .lhs_spec = {2, 3, 0, 1},
      .rhs_spec = {3, 0, 1, 2},
      .out_spec = {1, 0, 3, 2},
      .window_strides = {2, 1},
      .padding = KILN_PADDING_SAME}},
    {"1x1 kernel", 4, {2, 3, 4, 4}, {5, 3, 1, 1}, {.padding = KILN_PADDING_EXPLICIT}},
    /* fewer output positions than window positions: the patches cut by output position */
    {"window past the output (P < K)",
     4,
     {2, 3, 6, 5},
     {4, 3, 5, 4},
     {.pad_lo = {1, 0}, .pad_hi = {0, 1}}},
    {"P < K, strides and rhs dilation",
     4,
     {1, 2, 9, 8},
     {3, 2, 4, 3},
     {.padding = KILN_PADDING_VALID, .window_strides = {2, 3}, .rhs_dilation = {2, 2}}},
    {"P < K, NHWC groups 2",
     4,
     {1, 5, 5, 4},
     {4, 4, 2, 6},
     {.layout = KILN_CONV_NHWC, .feature_group_count = 2, .padding = KILN_PADDING_VALID}},
    {"kernel past the input: empty",
     4,
     {1, 2, 2, 2},
     {1, 2, 3, 3},
     {.padding = KILN_PADDING_EXPLICIT}},
    {"empty batch", 4, {0, 2, 4, 4}, {3, 2, 2, 2}, {.padding = KILN_PADDING_SAME}},
};
#define N_CONV (int)(sizeof conv_cases / sizeof *conv_cases)

/* The case's conv and both its gradients (against a random cotangent), one program. */
static kiln_graph *conv_program(const conv_case *c, kiln_dtype t, const conv_shape *cs) {
    kiln_graph *g = NULL;
    kiln_graph_create(C, c->name, &g);
    kiln_value x = kiln_parameter(g, "x", t, c->rank, c->lhs);
    kiln_value w = kiln_parameter(g, "w", t, c->rank, c->rhs);
    kiln_value y = kiln_conv_general_dilated(g, x, w, &c->o), outs[3] = {y};
    int n = 1;
    if (t != KILN_DTYPE_I32) {
        kiln_value ct = kiln_parameter(g, "ct", t, c->rank, cs->out);
        kiln_value wrt[2] = {x, w};
        kiln_vjp(g, 1, &y, &ct, 2, wrt, outs + 1);
        n = 3;
    }
    CHECK_OK(C, kiln_graph_finish(g, n, outs));
    return g;
}

static void conv_case_run(const conv_case *c, kiln_dtype t) {
    conv_shape cs;
    conv_shape_of(c->rank, c->lhs, c->rhs, &c->o, &cs);
    kiln_graph *g = conv_program(c, t, &cs);
    int n_args = t == KILN_DTYPE_I32 ? 2 : 3;
    kiln_array *args[3] = {cmp_random_array(C, t, c->rank, c->lhs, &seed),
                           cmp_random_array(C, t, c->rank, c->rhs, &seed),
                           n_args == 3 ? cmp_random_array(C, t, c->rank, cs.out, &seed) : NULL};
    /* the interpreter's forward against the direct loop (in f64 from the same values) */
    kiln_array *want[3] = {0};
    CHECK_OK(C, kiln_interpret(g, n_args, args, n_args == 3 ? 3 : 1, want));
    double *x = host_f64(args[0]), *w = host_f64(args[1]);
    double *y = naive_conv(x, c->lhs, w, c->rhs, &c->o, &cs);
    double tol = t == KILN_DTYPE_F32   ? 1e-5
                 : t == KILN_DTYPE_F64 ? 1e-12
                 : t == KILN_DTYPE_I32 ? 0
                                       : 3e-2;
    char what[128];
    snprintf(what, sizeof what, "%s (%s) vs the direct loop", c->name, kiln_dtype_name(t));
    CHECK_MSG(want[0] && close_to(want[0], y, numel(c->rank, cs.out), tol, what), "%s", what);
    free(x), free(w), free(y);
    for (int i = 0; i < 3; i++) kiln_array_destroy(want[i]);
    /* compiled, fused and not, against the interpreter (gradients included) */
    kiln_compile_options unfused = {.disable_fusion = true};
    CHECK_MSG(cmp_graph(C, g, n_args, args, NULL, 1e-4, NULL), "%s (%s) compiled", c->name,
              kiln_dtype_name(t));
    if (t == KILN_DTYPE_F32)
        CHECK_MSG(cmp_graph(C, g, n_args, args, &unfused, 1e-4, NULL), "%s unfused", c->name);
    for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void conv_all(void) {
    for (int i = 0; i < N_CONV; i++) conv_case_run(&conv_cases[i], KILN_DTYPE_F32);
}

/* f64, i32 (exact sums) and the 16-bit floats on a few cases of every layout. */
static void conv_dtypes(void) {
    static const int pick[] = {1, 6, 9, 12};
    static const kiln_dtype ts[] = {KILN_DTYPE_F64, KILN_DTYPE_I32, KILN_DTYPE_BF16,
                                    KILN_DTYPE_F16};
    for (size_t i = 0; i < sizeof pick / sizeof *pick; i++)
        for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
            conv_case_run(&conv_cases[pick[i]], ts[k]);
}

/* ---------------------------------------------------------- window cases ---- */

typedef struct win_case {
    const char *name;
    kiln_window_kind kind;
    int rank;
    int64_t dims[4];
    kiln_window_options o;
} win_case;

static const win_case win_cases[] = {
    {"max pool 2x2 NHWC",
     KILN_WINDOW_MAX,
     4,
     {2, 6, 6, 3},
     {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}}},
    {"max pool 3x3 stride 2 SAME",
     KILN_WINDOW_MAX,
     4,
     {1, 7, 5, 2},
     {.window_dimensions = {1, 3, 3, 1},
      .window_strides = {1, 2, 2, 1},
      .padding = KILN_PADDING_SAME}},
    {"max, SAME_LOWER, window dilation",
     KILN_WINDOW_MAX,
     3,
     {2, 9, 3},
     {.window_dimensions = {1, 3, 2},
      .window_dilation = {1, 2, 2},
      .padding = KILN_PADDING_SAME_LOWER}},
    {"min, explicit, base dilation",
     KILN_WINDOW_MIN,
     2,
     {4, 5},
     {.window_dimensions = {3, 2},
      .pad_lo = {1, 0},
      .pad_hi = {2, 1},
      .base_dilation = {2, 1},
      .window_strides = {2, 1}}},
    {"sum NCHW 2x2",
     KILN_WINDOW_SUM,
     4,
     {1, 2, 5, 4},
     {.window_dimensions = {1, 1, 2, 2},
      .window_strides = {1, 1, 2, 2},
      .padding = KILN_PADDING_SAME}},
    {"sum 1-d over everything", KILN_WINDOW_SUM, 1, {7}, {.window_dimensions = {7}}},
    {"sum, all dilations",
     KILN_WINDOW_SUM,
     2,
     {3, 6},
     {.window_dimensions = {2, 2},
      .base_dilation = {3, 1},
      .window_dilation = {2, 3},
      .pad_lo = {0, 2},
      .pad_hi = {1, 0}}},
    {"empty result", KILN_WINDOW_MAX, 2, {2, 3}, {.window_dimensions = {1, 4}}},
    /* rows of 16 channels: the gradient's saved masks select through print_c.c's blend */
    {"max pool 2x2 NHWC, 16 channels",
     KILN_WINDOW_MAX,
     4,
     {2, 6, 8, 16},
     {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}}},
};
#define N_WIN (int)(sizeof win_cases / sizeof *win_cases)

/* reduce over the window, the identity where the position is padding or a hole */
static double *naive_window(const double *x, const win_case *c, int64_t *od) {
    int r = c->rank;
    int64_t lo[4], hi[4], s[4], bd[4], wd[4], w[4], idx[4], xi[4];
    for (int a = 0; a < r; a++) {
        w[a] = one(c->o.window_dimensions[a]), s[a] = one(c->o.window_strides[a]);
        bd[a] = one(c->o.base_dilation[a]), wd[a] = one(c->o.window_dilation[a]);
        lo[a] = c->o.pad_lo[a], hi[a] = c->o.pad_hi[a];
        pads(c->o.padding, c->dims[a], (w[a] - 1) * wd[a] + 1, s[a], &lo[a], &hi[a]);
        int64_t p = (c->dims[a] - 1) * bd[a] + 1 + lo[a] + hi[a], e = (w[a] - 1) * wd[a] + 1;
        od[a] = p < e ? 0 : (p - e) / s[a] + 1;
    }
    int64_t n = numel(r, od), kn = numel(r, w);
    double init = c->kind == KILN_WINDOW_SUM   ? 0
                  : c->kind == KILN_WINDOW_MAX ? -INFINITY
                                               : INFINITY;
    double *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    for (int64_t e = 0; e < n; e++) {
        for (int a = r - 1, q = (int)e; a >= 0; a--) idx[a] = q % od[a], q /= (int)od[a];
        double acc = init;
        for (int64_t k = 0; k < kn; k++) {
            bool in = true;
            for (int a = r - 1, q = (int)k; a >= 0; a--) {
                int64_t p = idx[a] * s[a] + (q % w[a]) * wd[a] - lo[a];
                q /= (int)w[a];
                if (p < 0 || p % bd[a] || p / bd[a] >= c->dims[a])
                    in = false;
                else
                    xi[a] = p / bd[a];
            }
            double v = in ? x[at(r, c->dims, xi)] : init;
            acc = c->kind == KILN_WINDOW_SUM   ? acc + v
                  : c->kind == KILN_WINDOW_MAX ? fmax(acc, v)
                                               : fmin(acc, v);
        }
        y[e] = acc;
    }
    return y;
}

static void win_case_run(const win_case *c, kiln_dtype t) {
    int64_t od[4];
    kiln_array *xa = cmp_random_array(C, t, c->rank, c->dims, &seed);
    double *x = host_f64(xa), *y = naive_window(x, c, od);
    kiln_graph *g = NULL;
    kiln_graph_create(C, c->name, &g);
    kiln_value xv = kiln_parameter(g, "x", t, c->rank, c->dims);
    kiln_value out = kiln_reduce_window(g, xv, c->kind, &c->o), outs[2] = {out};
    int n = 1, n_args = 1;
    kiln_array *args[2] = {xa, NULL};
    if (t != KILN_DTYPE_I32) {
        kiln_value ct = kiln_parameter(g, "ct", t, c->rank, od);
        kiln_vjp(g, 1, &out, &ct, 1, &xv, outs + 1);
        n = n_args = 2;
        args[1] = cmp_random_array(C, t, c->rank, od, &seed);
    }
    CHECK_OK(C, kiln_graph_finish(g, n, outs));
    kiln_array *want[2] = {0};
    CHECK_OK(C, kiln_interpret(g, n_args, args, n, want));
    char what[128];
    snprintf(what, sizeof what, "%s (%s) vs the direct loop", c->name, kiln_dtype_name(t));
    double tol = t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 ? 1e-6 : t == KILN_DTYPE_I32 ? 0 : 3e-2;
    CHECK_MSG(want[0] && close_to(want[0], y, numel(c->rank, od), tol, what), "%s", what);
    CHECK_MSG(cmp_graph(C, g, n_args, args, NULL, 1e-5, NULL), "%s (%s) compiled", c->name,
              kiln_dtype_name(t));
    for (int i = 0; i < n; i++) kiln_array_destroy(want[i]);
    for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
    free(x), free(y);
    kiln_graph_destroy(g);
}

static void windows(void) {
    for (int i = 0; i < N_WIN; i++) win_case_run(&win_cases[i], KILN_DTYPE_F32);
    static const kiln_dtype ts[] = {KILN_DTYPE_F64, KILN_DTYPE_I32, KILN_DTYPE_BF16,
                                    KILN_DTYPE_F16};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++) {
        win_case_run(&win_cases[1], ts[k]);
        win_case_run(&win_cases[3], ts[k]);
        win_case_run(&win_cases[4], ts[k]);
        win_case_run(&win_cases[N_WIN - 1], ts[k]);
    }
}

/* avg_pool against the sums divided by hand: the window size, or the count of real
 * elements (a SUM window over ones). */
static void avg_pool(void) {
    int64_t dims[4] = {1, 5, 4, 2};
    kiln_window_options o = {.window_dimensions = {1, 3, 2, 1},
                             .window_strides = {1, 2, 1, 1},
                             .padding = KILN_PADDING_SAME};
    win_case sc = {"avg", KILN_WINDOW_SUM, 4, {1, 5, 4, 2}, o};
    win_case ones = sc;
    kiln_array *xa = filled(4, dims, false);
    double *x = host_f64(xa), *u = malloc(40 * sizeof *u);
    for (int i = 0; i < 40; i++) u[i] = 1;
    int64_t od[4];
    double *s = naive_window(x, &sc, od), *cnt = naive_window(u, &ones, od);
    int64_t n = numel(4, od);
    for (int flag = 0; flag < 2; flag++) {
        kiln_graph *g = NULL;
        kiln_graph_create(C, "avg_pool", &g);
        kiln_value y = kiln_avg_pool(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 4, dims), &o, flag);
        CHECK_OK(C, kiln_graph_finish(g, 1, &y));
        double *want = malloc((size_t)n * sizeof *want);
        for (int64_t i = 0; i < n; i++) want[i] = s[i] / (flag ? 6.0 : cnt[i]);
        kiln_array *got = NULL;
        kiln_executable *e = NULL;
        CHECK_OK(C, kiln_compile(g, NULL, &e));
        CHECK_OK(C, kiln_executable_run(e, 1, &xa, 1, &got));
        CHECK_MSG(got && close_to(got, want, n, 1e-6, "avg_pool"), "count_include_pad %d", flag);
        kiln_array_destroy(got);
        kiln_executable_destroy(e);
        free(want);
        kiln_graph_destroy(g);
    }
    free(x), free(u), free(s), free(cnt);
    kiln_array_destroy(xa);
}

/* ------------------------------------------------------------ against JAX ---- */

/* The JAX case conv_jax_values.py computed: inputs by formula, the cotangent too. */
static void jax_conv(const char *name, int rank, const int64_t *ld, const int64_t *rd,
                     const kiln_conv_options *o, const double *y, const double *dl,
                     const double *dr) {
    conv_shape cs;
    conv_shape_of(rank, ld, rd, o, &cs);
    kiln_graph *g = NULL;
    kiln_graph_create(C, name, &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, rank, ld);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, rank, rd);
    kiln_value ct = kiln_parameter(g, "ct", KILN_DTYPE_F32, rank, cs.out);
    kiln_value outs[3] = {kiln_conv_general_dilated(g, x, w, o)}, wrt[2] = {x, w};
    kiln_vjp(g, 1, outs, &ct, 2, wrt, outs + 1);
    CHECK_OK(C, kiln_graph_finish(g, 3, outs));
    kiln_array *args[3] = {filled(rank, ld, false), filled(rank, rd, false),
                           filled(rank, cs.out, false)};
    kiln_array *got[3] = {0};
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    CHECK_OK(C, kiln_executable_run(e, 3, args, 3, got));
    const double *want[3] = {y, dl, dr};
    int64_t n[3] = {numel(rank, cs.out), numel(rank, ld), numel(rank, rd)};
    for (int i = 0; i < 3; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s %s vs JAX", name, i ? i == 1 ? "d lhs" : "d rhs" : "out");
        CHECK_MSG(got[i] && close_to(got[i], want[i], n[i], 1e-5, what), "%s", what);
        kiln_array_destroy(got[i]), kiln_array_destroy(args[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static void jax_window(const char *name, kiln_window_kind kind, bool tied, int rank,
                       const int64_t *dims, const int64_t *od, const kiln_window_options *o,
                       const double *y, const double *dx) {
    kiln_graph *g = NULL;
    kiln_graph_create(C, name, &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, rank, dims);
    kiln_value ct = kiln_parameter(g, "ct", KILN_DTYPE_F32, rank, od);
    kiln_value outs[2] = {kiln_reduce_window(g, x, kind, o)};
    kiln_vjp(g, 1, outs, &ct, 1, &x, outs + 1);
    CHECK_OK(C, kiln_graph_finish(g, 2, outs));
    kiln_array *args[2] = {filled(rank, dims, tied), filled(rank, od, false)}, *got[2] = {0};
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    CHECK_OK(C, kiln_executable_run(e, 2, args, 2, got));
    CHECK_MSG(got[0] && close_to(got[0], y, numel(rank, od), 1e-6, name), "%s out vs JAX", name);
    CHECK_MSG(got[1] && close_to(got[1], dx, numel(rank, dims), 1e-6, name), "%s dx vs JAX", name);
    for (int i = 0; i < 2; i++) kiln_array_destroy(got[i]), kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static void against_jax(void) {
    kiln_conv_options a = {
        .window_strides = {2, 1}, .padding = KILN_PADDING_SAME, .rhs_dilation = {1, 2}};
    jax_conv("nchw_same", 4, (const int64_t[]){2, 3, 7, 6}, (const int64_t[]){4, 3, 3, 2}, &a,
             nchw_same, nchw_same_dlhs, nchw_same_drhs);
    kiln_conv_options b = {.layout = KILN_CONV_NHWC,
                           .window_strides = {1, 2},
                           .pad_lo = {1, 2},
                           .pad_hi = {0, 1},
                           .lhs_dilation = {2, 1},
                           .feature_group_count = 2};
    jax_conv("nhwc_groups", 4, (const int64_t[]){1, 6, 5, 4}, (const int64_t[]){3, 3, 2, 6}, &b,
             nhwc_groups, nhwc_groups_dlhs, nhwc_groups_drhs);
    kiln_conv_options c = {.window_strides = {3}, .pad_lo = {-1}, .pad_hi = {2}};
    jax_conv("ncw_crop", 3, (const int64_t[]){2, 2, 9}, (const int64_t[]){3, 2, 4}, &c, ncw_crop,
             ncw_crop_dlhs, ncw_crop_drhs);
    kiln_conv_options d = {.window_strides = {1, 2, 1}, .padding = KILN_PADDING_SAME_LOWER};
    jax_conv("ncdhw_same_lower", 5, (const int64_t[]){1, 2, 4, 3, 3},
             (const int64_t[]){2, 2, 2, 2, 1}, &d, ncdhw_same_lower, ncdhw_same_lower_dlhs,
             ncdhw_same_lower_drhs);
    kiln_conv_options e = {.layout = KILN_CONV_SPECS,
                           .padding = KILN_PADDING_VALID,
                           .lhs_spec = {2, 3, 0, 1},
                           .rhs_spec = {3, 0, 1, 2},
                           .out_spec = {1, 0, 3, 2}};
    jax_conv("specs", 4, (const int64_t[]){3, 5, 2, 4}, (const int64_t[]){4, 2, 2, 2}, &e, specs,
             specs_dlhs, specs_drhs);
    kiln_window_options m = {.window_dimensions = {1, 3, 2, 1},
                             .window_strides = {1, 2, 2, 1},
                             .padding = KILN_PADDING_SAME};
    jax_window("maxpool_same (ties)", KILN_WINDOW_MAX, true, 4, (const int64_t[]){2, 5, 6, 3},
               (const int64_t[]){2, 3, 3, 3}, &m, maxpool_same, maxpool_same_dx);
    kiln_window_options s = {.window_dimensions = {2, 3},
                             .window_strides = {1, 2},
                             .pad_lo = {1, 0},
                             .pad_hi = {0, 2},
                             .base_dilation = {2, 1},
                             .window_dilation = {1, 2}};
    jax_window("sum_dilated", KILN_WINDOW_SUM, false, 2, (const int64_t[]){4, 5},
               (const int64_t[]){7, 2}, &s, sum_dilated, sum_dilated_dx);
    kiln_window_options n = {
        .window_dimensions = {2, 3}, .window_strides = {1, 2}, .padding = KILN_PADDING_VALID};
    jax_window("min_valid (ties)", KILN_WINDOW_MIN, true, 2, (const int64_t[]){3, 7},
               (const int64_t[]){2, 3}, &n, min_valid, min_valid_dx);
}

/* ---------------------------------------------------------------- errors ---- */

static kiln_graph *new_graph(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(C, "errors", &g);
    return g;
}

typedef kiln_value (*err_fn)(kiln_graph *g);

static void expect_error(const char *what, err_fn call, kiln_status want, const char *a,
                         const char *b, const char *c) {
    kiln_graph *g = new_graph();
    kiln_value r = call(g);
    CHECK_MSG(!kiln_value_ok(r), "%s: gave a valid value", what);
    kiln_status s = kiln_graph_finish(g, 1, &r);
    CHECK_MSG(s == want, "%s: status %s, want %s (%s)", what, kiln_status_name(s),
              kiln_status_name(want), kiln_last_error(C));
    const char *msg = kiln_last_error(C);
    const char *need[4] = {a, b, c, "test_conv.c:"};
    for (int i = 0; i < 4; i++)
        if (need[i]) CHECK_MSG(strstr(msg, need[i]), "%s: \"%s\" lacks \"%s\"", what, msg, need[i]);
    kiln_graph_destroy(g);
}

#define P(g, t, ...)                                                                               \
    kiln_parameter(g, NULL, t, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),          \
                   (const int64_t[]){__VA_ARGS__})
#define F32                KILN_DTYPE_F32
#define CONV(g, x, w, ...) kiln_conv_general_dilated(g, x, w, &(kiln_conv_options){__VA_ARGS__})
#define E(name, body)                                                                              \
    static kiln_value name(kiln_graph *g) {                                                        \
        return body;                                                                               \
    }
E(e_channels, CONV(g, P(g, F32, 1, 3, 5, 5), P(g, F32, 2, 4, 3, 3), .padding = 0))
E(e_groups, CONV(g, P(g, F32, 1, 4, 5, 5), P(g, F32, 3, 2, 3, 3), .feature_group_count = 2))
E(e_groups_in, CONV(g, P(g, F32, 1, 6, 5, 5), P(g, F32, 4, 2, 3, 3), .feature_group_count = 2))
E(e_dtype, CONV(g, P(g, F32, 1, 2, 5), P(g, KILN_DTYPE_F64, 1, 2, 3), .padding = 0))
E(e_rank, CONV(g, P(g, F32, 1, 2, 5, 5), P(g, F32, 1, 2, 3), .padding = 0))
E(e_rank_big, CONV(g, P(g, F32, 1, 1, 2, 2, 2, 2), P(g, F32, 1, 1, 1, 1, 1, 1), .padding = 0))
E(e_crop, CONV(g, P(g, F32, 1, 1, 4), P(g, F32, 1, 1, 2), .pad_lo = {-3}, .pad_hi = {-2}))
E(e_stride, CONV(g, P(g, F32, 1, 1, 4), P(g, F32, 1, 1, 2), .window_strides = {-1}))
/* sizes whose products would overflow: a dilation past 2^40, a dilated lhs past 2^62, a
 * kernel of 2^40 input features in 2^24 groups (the product wraps to 0 in 64 bits) */
E(e_dilation_big, CONV(g, P(g, F32, 1, 1, 4), P(g, F32, 1, 1, 2), .lhs_dilation = {1LL << 41}))
E(e_dilated_past,
  CONV(g, P(g, F32, 1, 1, (1LL << 41) + 1), P(g, F32, 1, 1, 2), .lhs_dilation = {1LL << 40}))
E(e_groups_wrap,
  CONV(g, P(g, F32, 1, 0, 4), P(g, F32, 0, 1LL << 40, 1), .feature_group_count = 1LL << 24))
E(e_spec, CONV(g, P(g, F32, 1, 1, 4), P(g, F32, 1, 1, 2), .layout = KILN_CONV_SPECS,
               .lhs_spec = {0, 1, 1}, .rhs_spec = {0, 1, 2}, .out_spec = {0, 1, 2}))
E(e_batch_groups, CONV(g, P(g, F32, 2, 1, 4), P(g, F32, 2, 1, 2), .batch_group_count = 2))
E(e_same_dilated, CONV(g, P(g, F32, 1, 1, 4), P(g, F32, 1, 1, 2), .padding = KILN_PADDING_SAME,
                       .lhs_dilation = {2}))
E(e_padding_kind, CONV(g, P(g, F32, 1, 1, 4), P(g, F32, 1, 1, 2), .padding = (kiln_padding)9))
E(e_kernel_empty, CONV(g, P(g, F32, 1, 1, 4), P(g, F32, 1, 1, 0), .padding = 0))
E(e_win_bool, kiln_reduce_window(g, P(g, KILN_DTYPE_BOOL, 4), KILN_WINDOW_MAX, NULL))
E(e_win_pad,
  kiln_reduce_window(g, P(g, F32, 4), KILN_WINDOW_SUM, &(kiln_window_options){.pad_lo = {-1}}))
E(e_win_dim, kiln_reduce_window(g, P(g, F32, 4, 4), KILN_WINDOW_SUM,
                                &(kiln_window_options){.window_dimensions = {2, -2}}))
E(e_win_kind, kiln_reduce_window(g, P(g, F32, 4), (kiln_window_kind)5, NULL))
E(e_avg_int, kiln_avg_pool(g, P(g, KILN_DTYPE_I32, 4), NULL, true))

static void errors(void) {
    expect_error("channels", e_channels, KILN_STATUS_SHAPE,
                 "kiln_conv_general_dilated:", "3 input features", "f32[1,3,5,5], f32[2,4,3,3]");
    expect_error("groups divide outputs", e_groups, KILN_STATUS_SHAPE, "feature_group_count 2",
                 "3 output features", "f32[1,4,5,5]");
    expect_error("groups times inputs", e_groups_in, KILN_STATUS_SHAPE, "6 input features",
                 "2 group(s) = 4", NULL);
    expect_error("dtype", e_dtype, KILN_STATUS_DTYPE, "kiln_conv_general_dilated:", "one numeric",
                 "f32[1,2,5], f64[1,2,3]");
    expect_error("rank", e_rank, KILN_STATUS_SHAPE, "one rank", "f32[1,2,5,5], f32[1,2,3]", NULL);
    expect_error("rank 6", e_rank_big, KILN_STATUS_SHAPE, "3 to 5", NULL, NULL);
    expect_error("crop", e_crop, KILN_STATUS_SHAPE, "padding (-3, -2)", "-1 elements", NULL);
    expect_error("stride", e_stride, KILN_STATUS_SHAPE, "window_strides -1", NULL, NULL);
    expect_error("dilation past 2^40", e_dilation_big, KILN_STATUS_SHAPE,
                 "lhs_dilation 2199023255552", "[1, 2^40]", NULL);
    expect_error("dilated past 2^62", e_dilated_past, KILN_STATUS_SHAPE, "larger than 2^62", NULL,
                 NULL);
    expect_error("groups wrap", e_groups_wrap, KILN_STATUS_SHAPE, "overflows", NULL, NULL);
    expect_error("spec", e_spec, KILN_STATUS_SHAPE, "lhs_spec is not a permutation", NULL, NULL);
    expect_error("batch groups", e_batch_groups, KILN_STATUS_SHAPE, "batch_group_count 2", NULL,
                 NULL);
    expect_error("SAME, lhs dilation", e_same_dilated, KILN_STATUS_SHAPE, "string padding",
                 "lhs_dilation 2", NULL);
    expect_error("padding kind", e_padding_kind, KILN_STATUS_INVALID_ARGUMENT, "padding 9", NULL,
                 NULL);
    expect_error("empty kernel", e_kernel_empty, KILN_STATUS_SHAPE, "size 0", NULL, NULL);
    expect_error("window bool", e_win_bool, KILN_STATUS_DTYPE, "kiln_reduce_window:", "numeric",
                 "bool[4]");
    expect_error("window padding", e_win_pad, KILN_STATUS_SHAPE,
                 "kiln_reduce_window:", "padding (-1, 0)", "f32[4]");
    expect_error("window dims", e_win_dim, KILN_STATUS_SHAPE, "axis 1", "window_dimensions -2",
                 NULL);
    expect_error("window kind", e_win_kind, KILN_STATUS_INVALID_ARGUMENT, "kind 5", NULL, NULL);
    expect_error("avg int", e_avg_int, KILN_STATUS_DTYPE, "kiln_avg_pool:", "float", "i32[4]");
}

/* The im2col buffer is planned memory: a conv's program holds its patches [N*P, K*C] as a
 * temp, and cmp_graph above already holds every run to planned peak == measured. */
static void patches_planned(void) {
    int64_t xd[4] = {4, 16, 16, 8}, wd[4] = {3, 3, 8, 16};
    kiln_graph *g = NULL;
    kiln_graph_create(C, "patches", &g);
    kiln_conv_options o = {.layout = KILN_CONV_NHWC, .padding = KILN_PADDING_SAME};
    kiln_value y = kiln_conv_general_dilated(g, kiln_parameter(g, "x", F32, 4, xd),
                                             kiln_parameter(g, "w", F32, 4, wd), &o);
    CHECK_OK(C, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    kiln_memory_analysis a;
    CHECK_OK(C, kiln_executable_get_memory_analysis(e, &a));
    uint64_t patches = 4ull * 16 * 16 * 9 * 8 * sizeof(float);
    CHECK_MSG(a.temp_bytes >= patches, "temps %llu B, the patches alone are %llu B",
              (unsigned long long)a.temp_bytes, (unsigned long long)patches);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The node in text: a convolution and both gradient kinds printed and parsed back give a
 * graph that computes the same bits (the reference on both); a line whose attributes lie
 * is refused with the line and what is wrong. */
static void text_round_trip(void) {
    const conv_case *c = &conv_cases[0]; /* the general specs: stride [2, 1], SAME */
    for (int i = 0; i < N_CONV; i++)
        if (!strcmp(conv_cases[i].name, "general specs")) c = &conv_cases[i];
    conv_shape cs;
    conv_shape_of(c->rank, c->lhs, c->rhs, &c->o, &cs);
    kiln_graph *g = conv_program(c, KILN_DTYPE_F32, &cs), *h = NULL;
    char *text = kiln_graph_to_string(g);
    CHECK(text && strstr(text, "convolution(") && strstr(text, " input_grad ") &&
          strstr(text, " filter_grad "));
    CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "conv.kir", &h));
    kiln_array *args[3] = {cmp_random_array(C, KILN_DTYPE_F32, c->rank, c->lhs, &seed),
                           cmp_random_array(C, KILN_DTYPE_F32, c->rank, c->rhs, &seed),
                           cmp_random_array(C, KILN_DTYPE_F32, c->rank, cs.out, &seed)};
    kiln_array *a[3] = {0}, *b[3] = {0};
    CHECK_OK(C, kiln_interpret(g, 3, args, 3, a));
    if (h) CHECK_OK(C, kiln_interpret(h, 3, args, 3, b));
    for (int i = 0; i < 3 && a[i] && b[i]; i++) {
        size_t n = kiln_array_nbytes(a[i]);
        void *x = malloc(n + 1), *y = malloc(n + 1);
        kiln_array_copy_to_host(a[i], x, n), kiln_array_copy_to_host(b[i], y, n);
        CHECK_MSG(!memcmp(x, y, n), "output %d differs after the round trip", i);
        free(x), free(y);
    }
    /* attributes that lie: each is a parse error naming the line and the fault */
    static const struct {
        const char *from, *to, *why;
    } lies[] = {{" forward ", " sideways ", "needs a kind: forward, input_grad or filter_grad"},
                {"stride=[2", "stride=[0", "stride 0"},
                {"lhs_spec=[2,", "lhs_spec=[3,", "permutation"},
                {"groups=", "groups=-", "groups"},
                {"sizes=[", "sizes=[1,", "sizes has 3 entries for 2 spatial axes"},
                {"rhs_dilation=[1,", "rhs_dilation=[1099511627777,", "[1, 2^40]"}};
    for (size_t k = 0; text && k < sizeof lies / sizeof *lies; k++) {
        const char *at = strstr(text, lies[k].from);
        CHECK_MSG(at, "no %s in the text", lies[k].from);
        if (!at) continue;
        size_t pre = (size_t)(at - text), n = strlen(text) + 64;
        char *bad = malloc(n);
        snprintf(bad, n, "%.*s%s%s", (int)pre, text, lies[k].to, at + strlen(lies[k].from));
        kiln_graph *x = NULL;
        kiln_status st = kiln_graph_parse(C, bad, strlen(bad), "bad.kir", &x);
        CHECK_MSG(st != KILN_STATUS_OK && strstr(kiln_last_error(C), "bad.kir:") &&
                      strstr(kiln_last_error(C), lies[k].why),
                  "%s -> %s: %s", lies[k].from, lies[k].to, st ? kiln_last_error(C) : "accepted");
        kiln_graph_destroy(x);
        free(bad);
    }
    for (int i = 0; i < 3; i++)
        kiln_array_destroy(args[i]), kiln_array_destroy(a[i]), kiln_array_destroy(b[i]);
    kiln_string_free(C, text);
    kiln_graph_destroy(h);
    kiln_graph_destroy(g);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-conv-XXXXXX";
    C = test_private_context(dir);
    if (!C) return 1;
    seed = test_seed(35);
    RUN(errors);
    RUN(against_jax);
    RUN(conv_all);
    RUN(conv_dtypes);
    RUN(windows);
    RUN(avg_pool);
    RUN(patches_planned);
    RUN(text_round_trip);
    kiln_context_destroy(C);
    test_remove_dir(dir);
    return test_summary("test_conv");
}
