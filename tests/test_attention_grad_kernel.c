/* test_attention_grad_kernel.c — the CPU backend's kernels for the gradient of attention
 * (src/backend/cpu/cpu_attention_grad.c), called through the backend table as a compiled
 * program calls them (lib_supports, lib_scratch, lib_run of KN_LIB_ATTENTION_GRAD), each
 * kind (LSE, GRAD_Q, GRAD_K, GRAD_V) against a plain double loop of its definition
 * (backend_impl.h, kn_attention_kind):
 *  - causal and not, T < S and T > S, grouped heads (4 query heads on 2 and on 1), H != Hv,
 *    T and S not multiples of the kernel's blocks and in several chunks, batch 2, scores
 *    large enough that an unstable log-sum-exp would overflow;
 *  - f32 and f64, and bf16 and f16 against the loop on the rounded inputs;
 *  - zero sizes (T = 0, H = 0, Hv = 0, batch 0): what the definition gives, empty operands
 *    passed as NULL, every element of out written;
 *  - the same bits with one thread and with three, and in one thread's slot of scratch;
 *  - what lib_supports refuses (kind FORWARD, a finite fill, integer dtypes).
 * KILN_ATTN_GRAD_BENCH=1 also prints each kind's time beside the forward kernel's on one
 * shape (no assertion on it). */
#include "test.h"
#include "rng.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/device.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

typedef struct grad_case {
    int64_t batch, t, s, heads, kv_heads, h, hv;
    bool causal;
    double scale; /* 0: 1 / sqrt(h) */
} grad_case;

static const grad_case cases[] = {
    {2, 37, 37, 4, 4, 16, 16, true, 0},   /* one block each way */
    {2, 70, 300, 4, 2, 24, 40, false, 0}, /* T < S, keys in two chunks, H != Hv */
    {1, 300, 130, 4, 1, 32, 8, true, 0},  /* T > S causal, queries in two chunks */
    {2, 130, 290, 4, 2, 8, 12, true, 0},  /* T < S causal: keys no query sees */
    {1, 257, 257, 2, 1, 17, 33, true, 0}, /* one past a chunk */
    {1, 65, 65, 1, 1, 64, 64, false, 0},  /* one past a block */
    {2, 40, 50, 2, 1, 8, 8, false, 20.0}, /* scores of hundreds */
    {1, 0, 5, 2, 1, 4, 4, true, 0},       /* T = 0 */
    {2, 9, 11, 2, 2, 0, 5, true, 0},      /* H = 0 */
    {2, 9, 11, 4, 2, 6, 0, false, 0},     /* Hv = 0 */
    {0, 9, 11, 2, 1, 6, 6, true, 0},      /* batch 0 */
};
#define N_CASES (sizeof cases / sizeof *cases)

static kn_attention_desc desc_of(const grad_case *g, kiln_dtype dt, kn_attention_kind kind) {
    return (kn_attention_desc){.dtype = dt,
                               .kind = kind,
                               .batch = g->batch,
                               .t = g->t,
                               .s = g->s,
                               .heads = g->heads,
                               .kv_heads = g->kv_heads,
                               .h = g->h,
                               .hv = g->hv,
                               .scale = g->scale ? g->scale : 1 / sqrt(g->h ? (double)g->h : 1),
                               .causal = g->causal,
                               .fill = -INFINITY};
}

/* ------------------------------------------------------------- the loop ---- */

typedef struct ref_in {
    double *q, *k, *v, *ct;
} ref_in;

static double score(const kn_attention_desc *d, const ref_in *x, int64_t b, int64_t n, int64_t i,
                    int64_t j) {
    int64_t kh = n / (d->heads / d->kv_heads);
    const double *q = x->q + ((b * d->t + i) * d->heads + n) * d->h;
    const double *k = x->k + ((b * d->s + j) * d->kv_heads + kh) * d->h;
    double dot = 0;
    for (int64_t e = 0; e < d->h; e++) dot += q[e] * k[e];
    return d->scale * dot;
}

static int64_t seen_by(const kn_attention_desc *d, int64_t i) {
    return d->causal && i + 1 < d->s ? i + 1 : d->s;
}

/* lse [b, t, heads]: max + log sum exp(s - max) */
static void ref_lse(const kn_attention_desc *d, const ref_in *x, double *lse) {
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t i = 0; i < d->t; i++)
            for (int64_t n = 0; n < d->heads; n++) {
                double m = -INFINITY, sum = 0;
                for (int64_t j = 0; j < seen_by(d, i); j++) m = fmax(m, score(d, x, b, n, i, j));
                for (int64_t j = 0; j < seen_by(d, i); j++) sum += exp(score(d, x, b, n, i, j) - m);
                lse[(b * d->t + i) * d->heads + n] = m + log(sum);
            }
}

/* delta [b, t, heads] = rowsum(ct * out), out the forward's output from lse */
static void ref_delta(const kn_attention_desc *d, const ref_in *x, const double *lse,
                      double *delta) {
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t i = 0; i < d->t; i++)
            for (int64_t n = 0; n < d->heads; n++) {
                int64_t row = (b * d->t + i) * d->heads + n, kh = n / (d->heads / d->kv_heads);
                double acc = 0;
                for (int64_t e = 0; e < d->hv; e++) {
                    double o = 0;
                    for (int64_t j = 0; j < seen_by(d, i); j++)
                        o += exp(score(d, x, b, n, i, j) - lse[row]) *
                             x->v[((b * d->s + j) * d->kv_heads + kh) * d->hv + e];
                    acc += x->ct[row * d->hv + e] * o;
                }
                delta[row] = acc;
            }
}

/* dq, dk and dv by the definition, lse and delta as given */
static void ref_grads(const kn_attention_desc *d, const ref_in *x, const double *lse,
                      const double *delta, double *dq, double *dk, double *dv) {
    memset(dq, 0, (size_t)(d->batch * d->t * d->heads * d->h) * sizeof *dq);
    memset(dk, 0, (size_t)(d->batch * d->s * d->kv_heads * d->h) * sizeof *dk);
    memset(dv, 0, (size_t)(d->batch * d->s * d->kv_heads * d->hv) * sizeof *dv);
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t i = 0; i < d->t; i++)
            for (int64_t n = 0; n < d->heads; n++) {
                int64_t row = (b * d->t + i) * d->heads + n, kh = n / (d->heads / d->kv_heads);
                for (int64_t j = 0; j < seen_by(d, i); j++) {
                    int64_t kr = (b * d->s + j) * d->kv_heads + kh;
                    double p = exp(score(d, x, b, n, i, j) - lse[row]), dp = 0;
                    for (int64_t e = 0; e < d->hv; e++)
                        dp += x->ct[row * d->hv + e] * x->v[kr * d->hv + e];
                    double ds = p * (dp - delta[row]);
                    for (int64_t e = 0; e < d->h; e++) {
                        dq[row * d->h + e] += d->scale * ds * x->k[kr * d->h + e];
                        dk[kr * d->h + e] += d->scale * ds * x->q[row * d->h + e];
                    }
                    for (int64_t e = 0; e < d->hv; e++)
                        dv[kr * d->hv + e] += p * x->ct[row * d->hv + e];
                }
            }
}

/* ----------------------------------------------------------- the kernel ---- */

static kiln_dtype sum_type(kiln_dtype t) {
    return t == KILN_DTYPE_F64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
}

static double get(kiln_dtype t, const void *p, int64_t i) {
    switch (t) {
    case KILN_DTYPE_F64: return ((const double *)p)[i];
    case KILN_DTYPE_F32: return ((const float *)p)[i];
    case KILN_DTYPE_BF16: return kn_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return kn_f16_to_f32(((const uint16_t *)p)[i]);
    }
}

static void put(kiln_dtype t, void *p, int64_t i, double x) {
    switch (t) {
    case KILN_DTYPE_F64: ((double *)p)[i] = x; break;
    case KILN_DTYPE_F32: ((float *)p)[i] = (float)x; break;
    case KILN_DTYPE_BF16: ((uint16_t *)p)[i] = kn_f64_to_bf16(x); break;
    default: ((uint16_t *)p)[i] = kn_f64_to_f16(x); break;
    }
}

/* n elements of type t (NULL when n is 0: the kernel must not read an empty operand) */
static void *buffer(kiln_dtype t, int64_t n) {
    return n ? malloc((size_t)n * kiln_dtype_itemsize(t)) : NULL;
}

/* One lib_run of ATTENTION_GRAD on context ctx's CPU device, with exactly the scratch
 * lib_scratch asks for (or `scratch_bytes` when not 0). out is first filled with NaN bits,
 * so every element the kernel leaves unwritten shows. */
static kiln_status run_kind(kiln_context *ctx, const kn_attention_desc *d, void *const bufs[7],
                            int64_t out_n, uint64_t scratch_bytes) {
    void *st = ctx->devices[0].state;
    kiln_status s = kn_cpu_backend.launch_prepare(st, 0); /* the pool and the provider */
    if (s) return s;
    kn_lib_desc ld = {.op = KN_LIB_ATTENTION_GRAD, .dtype = d->dtype, .attention = *d};
    CHECK(kn_cpu_backend.lib_supports(st, 0, KN_LIB_ATTENTION_GRAD, &ld));
    ld.scratch_bytes = scratch_bytes ? scratch_bytes : kn_cpu_backend.lib_scratch(st, 0, &ld);
    void *ws = malloc(ld.scratch_bytes ? ld.scratch_bytes : 1);
    kiln_dtype out_t = d->kind == KN_ATTN_LSE ? sum_type(d->dtype) : d->dtype;
    if (out_n) memset(bufs[6], 0xff, (size_t)out_n * kiln_dtype_itemsize(out_t));
    void *b[8] = {bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5], bufs[6], ws};
    s = kn_cpu_backend.lib_run(st, 0, &ld, b);
    free(ws);
    return s;
}

/* |got - want| <= tol * max |want| for every element; returns the largest error over that
 * magnitude (0 for an empty output) */
static double compare(const char *what, kiln_dtype t, const void *got, const double *want,
                      int64_t n, double tol) {
    double mag = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) mag = fmax(mag, fabs(want[i]));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = get(t, got, i), err = fabs(g - want[i]);
        if (!(err <= tol * mag + 1e-300)) {
            if (bad++ < 3)
                fprintf(stderr, "  %s[%lld] = %.9g, want %.9g (magnitude %.3g)\n", what,
                        (long long)i, g, want[i], mag);
            err = INFINITY;
        }
        worst = fmax(worst, mag ? err / mag : err);
    }
    CHECK_MSG(!bad, "%s: %d of %lld elements off by more than %g of the magnitude", what, bad,
              (long long)n, tol);
    return worst;
}

/* bf16/f16 outputs round once: two of their ulps at the magnitude; f32 sums of a few
 * hundred terms, and with scores of hundreds (`large`) what p = exp(s - lse) loses to the
 * rounding of s and lse (an f32 ulp at 256 is 3e-5) */
static double tolerance(kiln_dtype t, bool large) {
    switch (t) {
    case KILN_DTYPE_F64: return 1e-12;
    case KILN_DTYPE_F32: return large ? 5e-5 : 1e-5;
    case KILN_DTYPE_BF16: return 2.0 / 256;
    default: return 2.0 / 2048;
    }
}

static double worst_err[4];

static void check_case(kiln_context *ctx, const grad_case *g, kiln_dtype dt, uint64_t *seed) {
    kn_attention_desc d = desc_of(g, dt, KN_ATTN_LSE);
    kiln_dtype st = sum_type(dt);
    bool large = g->scale > 1;
    int64_t nq = d.batch * d.t * d.heads * d.h, nk = d.batch * d.s * d.kv_heads * d.h;
    int64_t nv = d.batch * d.s * d.kv_heads * d.hv, nct = d.batch * d.t * d.heads * d.hv;
    int64_t nl = d.batch * d.t * d.heads;
    void *q = buffer(dt, nq), *k = buffer(dt, nk), *v = buffer(dt, nv), *ct = buffer(dt, nct);
    if (q) test_fill_uniform(dt, nq, q, seed);
    if (k) test_fill_uniform(dt, nk, k, seed);
    if (v) test_fill_uniform(dt, nv, v, seed);
    if (ct) test_fill_uniform(dt, nct, ct, seed);
    double *all = calloc((size_t)(nq + nk + nv + nct + 2 * nl + 1), sizeof(double));
    ref_in x = {all, all + nq, all + nq + nk, all + nq + nk + nv};
    double *p = all + nq + nk + nv + nct;
    for (int64_t i = 0; i < nq; i++) x.q[i] = get(dt, q, i);
    for (int64_t i = 0; i < nk; i++) x.k[i] = get(dt, k, i);
    for (int64_t i = 0; i < nv; i++) x.v[i] = get(dt, v, i);
    for (int64_t i = 0; i < nct; i++) x.ct[i] = get(dt, ct, i);
    double *lse = p, *delta = p + nl;
    double *dq = malloc((size_t)(nq + 1) * sizeof *dq), *dk = malloc((size_t)(nk + 1) * sizeof *dk);
    double *dv = malloc((size_t)(nv + 1) * sizeof *dv);
    ref_lse(&d, &x, lse);
    char what[96];
    const char *dn = kiln_dtype_name(dt);

    /* LSE: q and k only */
    void *out = buffer(st, nl);
    snprintf(what, sizeof what, "lse %s %lldx%lldx%lld", dn, (long long)d.batch, (long long)d.t,
             (long long)d.s);
    CHECK_OK(ctx, run_kind(ctx, &d, (void *[]){q, k, NULL, NULL, NULL, NULL, out}, nl, 0));
    worst_err[0] = fmax(worst_err[0], compare(what, st, out, lse, nl, tolerance(st, large)));

    /* the kernel's lse and delta are the sum type's: the loop takes the same values */
    void *lse_in = buffer(st, nl), *delta_in = buffer(st, nl);
    for (int64_t i = 0; i < nl; i++) put(st, lse_in, i, lse[i]), lse[i] = get(st, lse_in, i);
    ref_delta(&d, &x, lse, delta);
    for (int64_t i = 0; i < nl; i++)
        put(st, delta_in, i, delta[i]), delta[i] = get(st, delta_in, i);
    ref_grads(&d, &x, lse, delta, dq, dk, dv);
    static const kn_attention_kind kinds[3] = {KN_ATTN_GRAD_Q, KN_ATTN_GRAD_K, KN_ATTN_GRAD_V};
    const int64_t sizes[3] = {nq, nk, nv};
    const double *want[3] = {dq, dk, dv};
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int r = 0; r < 3; r++) {
        d.kind = kinds[r];
        void *o = buffer(dt, sizes[r]);
        CHECK_OK(ctx, run_kind(ctx, &d, (void *[]){q, k, v, ct, lse_in, delta_in, o}, sizes[r], 0));
        snprintf(what, sizeof what, "%s %s %lldx%lldx%lld %s", names[r], dn, (long long)d.batch,
                 (long long)d.t, (long long)d.s, d.causal ? "causal" : "full");
        double e = compare(what, dt, o, want[r], sizes[r], tolerance(dt, large));
        if (dt == KILN_DTYPE_F32) worst_err[1 + r] = fmax(worst_err[1 + r], e);
        free(o);
    }
    free(out), free(lse_in), free(delta_in), free(dq), free(dk), free(dv), free(all);
    free(q), free(k), free(v), free(ct);
}

static kiln_context *C;
static uint64_t seed;

static void f32_cases(void) {
    for (size_t i = 0; i < N_CASES; i++) check_case(C, &cases[i], KILN_DTYPE_F32, &seed);
    printf("f32: largest error over the magnitude: lse %.2g dq %.2g dk %.2g dv %.2g\n",
           worst_err[0], worst_err[1], worst_err[2], worst_err[3]);
}

static void f64_cases(void) {
    for (size_t i = 0; i < N_CASES; i++) check_case(C, &cases[i], KILN_DTYPE_F64, &seed);
}

static void half_cases(void) {
    for (size_t i = 0; i < N_CASES; i++) {
        check_case(C, &cases[i], KILN_DTYPE_BF16, &seed);
        check_case(C, &cases[i], KILN_DTYPE_F16, &seed);
    }
}

/* A NaN in a query row makes that row's lse NaN and leaves the others alone. */
static void nan_propagates(void) {
    grad_case g = {1, 20, 20, 1, 1, 8, 8, true, 0};
    kn_attention_desc d = desc_of(&g, KILN_DTYPE_F32, KN_ATTN_LSE);
    float q[20 * 8], k[20 * 8], out[20];
    test_fill_uniform(KILN_DTYPE_F32, 160, q, &seed);
    test_fill_uniform(KILN_DTYPE_F32, 160, k, &seed);
    q[7 * 8 + 3] = NAN;
    CHECK_OK(C, run_kind(C, &d, (void *[]){q, k, NULL, NULL, NULL, NULL, out}, 20, 0));
    for (int i = 0; i < 20; i++) CHECK_MSG(isnan(out[i]) == (i == 7), "row %d: %g", i, out[i]);
}

/* ---------------------------------------------------------------- threads ---- */

/* Every kind of cases[2] (and of cases[3], T < S causal), f32 and bf16: the same bits
 * with one thread, with three, and with three threads given one thread's slot. */
static void same_bits_any_threads(void) {
    char dir[] = "/tmp/kiln-test-attention-grad-threads-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context *one = test_threads_context(dir, 1), *three = test_threads_context(dir, 3);
    if (!one || !three) {
        CHECK(one && three);
        kiln_context_destroy(one), kiln_context_destroy(three);
        return;
    }
    static const kiln_dtype dts[2] = {KILN_DTYPE_F32, KILN_DTYPE_BF16};
    for (int c = 2; c <= 3; c++)
        for (int t = 0; t < 2; t++) {
            const grad_case *g = &cases[c];
            kiln_dtype dt = dts[t], st = sum_type(dt);
            kn_attention_desc d = desc_of(g, dt, KN_ATTN_LSE);
            int64_t nq = d.batch * d.t * d.heads * d.h, nk = d.batch * d.s * d.kv_heads * d.h;
            int64_t nv = d.batch * d.s * d.kv_heads * d.hv, nct = d.batch * d.t * d.heads * d.hv;
            int64_t nl = d.batch * d.t * d.heads;
            void *q = buffer(dt, nq), *k = buffer(dt, nk), *v = buffer(dt, nv);
            void *ct = buffer(dt, nct), *lse = buffer(st, nl), *delta = buffer(st, nl);
            test_fill_uniform(dt, nq, q, &seed), test_fill_uniform(dt, nk, k, &seed);
            test_fill_uniform(dt, nv, v, &seed), test_fill_uniform(dt, nct, ct, &seed);
            test_fill_uniform(st, nl, delta, &seed);
            CHECK_OK(one, run_kind(one, &d, (void *[]){q, k, NULL, NULL, NULL, NULL, lse}, nl, 0));
            for (int kind = KN_ATTN_LSE; kind <= KN_ATTN_GRAD_V; kind++) {
                d.kind = (kn_attention_kind)kind;
                kiln_dtype ot = kind == KN_ATTN_LSE ? st : dt;
                int64_t n = kind == KN_ATTN_LSE      ? nl
                            : kind == KN_ATTN_GRAD_Q ? nq
                            : kind == KN_ATTN_GRAD_K ? nk
                                                     : nv;
                size_t bytes = (size_t)n * kiln_dtype_itemsize(ot);
                void *r1 = malloc(bytes), *r3 = malloc(bytes), *rs = malloc(bytes);
                void *in[3][7] = {{q, k, v, ct, lse, delta, r1},
                                  {q, k, v, ct, lse, delta, r3},
                                  {q, k, v, ct, lse, delta, rs}};
                CHECK_OK(one, run_kind(one, &d, in[0], n, 0));
                CHECK_OK(three, run_kind(three, &d, in[1], n, 0));
                /* three threads in the scratch of one: the kernel fits itself to it */
                CHECK(cpu_attention_grad_slots(&d, cpu_attention_grad_scratch(&d, 3)) == 3);
                CHECK_OK(three, run_kind(three, &d, in[2], n, cpu_attention_grad_scratch(&d, 1)));
                CHECK_MSG(!memcmp(r1, r3, bytes) && !memcmp(r1, rs, bytes),
                          "case %d %s kind %d: the bits depend on the threads", c,
                          kiln_dtype_name(dt), kind);
                free(r1), free(r3), free(rs);
            }
            free(q), free(k), free(v), free(ct), free(lse), free(delta);
        }
    kiln_context_destroy(one), kiln_context_destroy(three);
    test_remove_dir(dir);
}

/* ------------------------------------------------------------- supports ---- */

static void supports(void) {
    void *st = C->devices[0].state;
    const kn_backend *b = &kn_cpu_backend;
    CHECK(b->lib_supports(st, 0, KN_LIB_ATTENTION_GRAD, NULL));
    static const kiln_dtype floats[4] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_BF16,
                                         KILN_DTYPE_F16};
    for (int t = 0; t < 4; t++)
        for (int kind = KN_ATTN_FORWARD; kind <= KN_ATTN_GRAD_V; kind++) {
            kn_lib_desc ld = {.op = KN_LIB_ATTENTION_GRAD, .dtype = floats[t]};
            ld.attention = desc_of(&cases[0], floats[t], (kn_attention_kind)kind);
            CHECK_MSG(b->lib_supports(st, 0, ld.op, &ld) == (kind != KN_ATTN_FORWARD), "%s kind %d",
                      kiln_dtype_name(floats[t]), kind);
            ld.attention.fill = -1e30; /* a finite fill is expanded, never the kernel's */
            CHECK(!b->lib_supports(st, 0, ld.op, &ld));
            /* and the forward op computes only the forward */
            ld.op = KN_LIB_ATTENTION, ld.attention.fill = -INFINITY;
            CHECK(b->lib_supports(st, 0, ld.op, &ld) == (kind == KN_ATTN_FORWARD));
        }
    static const kiln_dtype ints[3] = {KILN_DTYPE_I32, KILN_DTYPE_I64, KILN_DTYPE_BOOL};
    for (int t = 0; t < 3; t++) {
        kn_lib_desc ld = {.op = KN_LIB_ATTENTION_GRAD, .dtype = ints[t]};
        ld.attention = desc_of(&cases[0], ints[t], KN_ATTN_GRAD_Q);
        CHECK_MSG(!b->lib_supports(st, 0, ld.op, &ld), "%s", kiln_dtype_name(ints[t]));
    }
}

/* ------------------------------------------------------------ benchmark ---- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of `reps` runs of one lib call, in milliseconds. */
static double time_call(kiln_context *ctx, kn_lib_desc *ld, void **bufs, int reps) {
    void *st = ctx->devices[0].state;
    ld->scratch_bytes = kn_cpu_backend.lib_scratch(st, 0, ld);
    void *ws = malloc(ld->scratch_bytes);
    int nb = ld->op == KN_LIB_ATTENTION ? 5 : 7; /* the forward's lse is NULL */
    bufs[nb] = ws;
    double t[64];
    kn_cpu_backend.lib_run(st, 0, ld, bufs); /* warm */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        kn_cpu_backend.lib_run(st, 0, ld, bufs);
        t[r] = (now() - t0) * 1e3;
    }
    free(ws);
    qsort(t, (size_t)reps, sizeof *t, by_value);
    return t[reps / 2];
}

static void bench(int threads) {
    char dir[] = "/tmp/kiln-test-attention-grad-bench-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context *ctx = test_threads_context(dir, threads);
    if (!ctx) return;
    CHECK_OK(ctx, kn_cpu_backend.launch_prepare(ctx->devices[0].state, 0));
    grad_case g = {8, 128, 128, 4, 4, 64, 64, true, 0};
    kn_attention_desc d = desc_of(&g, KILN_DTYPE_F32, KN_ATTN_FORWARD);
    int64_t n = 8 * 128 * 4 * 64, nl = 8 * 128 * 4;
    float *q = malloc((size_t)n * 4), *k = malloc((size_t)n * 4), *v = malloc((size_t)n * 4);
    float *ct = malloc((size_t)n * 4), *out = malloc((size_t)n * 4), *lse = malloc((size_t)nl * 4);
    float *delta = malloc((size_t)nl * 4);
    uint64_t s = 3;
    test_fill_uniform(KILN_DTYPE_F32, n, q, &s), test_fill_uniform(KILN_DTYPE_F32, n, k, &s);
    test_fill_uniform(KILN_DTYPE_F32, n, v, &s), test_fill_uniform(KILN_DTYPE_F32, n, ct, &s);
    test_fill_uniform(KILN_DTYPE_F32, nl, delta, &s);
    kn_lib_desc fw = {.op = KN_LIB_ATTENTION, .dtype = KILN_DTYPE_F32, .attention = d};
    void *fb[6] = {q, k, v, out, NULL};
    double forward = time_call(ctx, &fw, fb, 31);
    static const char *names[4] = {"lse", "grad_q", "grad_k", "grad_v"};
    double t[4];
    for (int kind = KN_ATTN_LSE; kind <= KN_ATTN_GRAD_V; kind++) {
        kn_lib_desc ld = {.op = KN_LIB_ATTENTION_GRAD, .dtype = KILN_DTYPE_F32, .attention = d};
        ld.attention.kind = (kn_attention_kind)kind;
        if (kind == KN_ATTN_LSE) {
            void *b[8] = {q, k, NULL, NULL, NULL, NULL, lse};
            t[0] = time_call(ctx, &ld, b, 31);
            continue;
        }
        void *b[8] = {q, k, v, ct, lse, delta, out};
        t[kind - 1] = time_call(ctx, &ld, b, 31);
    }
    printf("bench f32 B8 N4 T=S=128 H=Hv=64 causal, %d thread(s), median of 31 (ms): forward "
           "%.3f",
           threads, forward);
    for (int i = 0; i < 4; i++) printf("  %s %.3f (%.2fx)", names[i], t[i], t[i] / forward);
    printf("\n");
    free(q), free(k), free(v), free(ct), free(out), free(lse), free(delta);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-attention-grad-kernel-XXXXXX";
    C = test_private_context(dir);
    if (!C) return 1;
    seed = test_seed(47);
    RUN(supports);
    RUN(f32_cases);
    RUN(f64_cases);
    RUN(half_cases);
    RUN(nan_propagates);
    RUN(same_bits_any_threads);
    const char *b = getenv("KILN_ATTN_GRAD_BENCH");
    if (b && *b && strcmp(b, "0")) {
        bench(1);
        bench(pool_online_cores());
    }
    kiln_context_destroy(C);
    test_remove_dir(dir);
    return test_summary("test_attention_grad_kernel");
}
