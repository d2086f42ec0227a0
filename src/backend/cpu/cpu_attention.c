/* cpu_attention.c — dot_product_attention as one fused kernel (the backend's attention
 * library op; the op is in include/kiln.h, its primitive form in src/trace/attention.c).
 *
 * A work item is one (batch, query head, block of CPU_ATTN_TQ query rows). It walks the
 * keys the block can see in chunks of CPU_ATTN_SK: the chunk's scores S = Q K^T come from
 * the GEMM provider (one thread, blas.h) into a scratch tile that stays in cache, each row
 * is scaled, masked and exponentiated against its running maximum (the online softmax:
 * rows already summed are rescaled when the maximum grows), and P V is added into the
 * block's accumulator; the end multiplies each row by the reciprocal of its sum. So the
 * [T, S] probabilities are never stored, and with a causal mask the chunks right of the
 * block's diagonal are never computed: at T = S that is about half of both products.
 * A finite fill (the score a written-out attention gave the keys a query does not see,
 * e.g. -1e30) is added at the end, where it is not lost: all those keys share one score,
 * so they add (count) exp(fill - m) to the sum and exp(fill - m) times the sum of their
 * value rows to the accumulator; with any realistic fill that weight is exactly 0.
 *
 * Threads: the pool runs one task per thread, each with its own slot of the planned
 * scratch (no more threads than the scratch has slots: the pool may have grown since the
 * compile), taking work items from a shared counter, the last query blocks (the most keys,
 * when causal) first. Each item reads only its own rows of q and writes only its own rows
 * of out, so the result does not depend on how items are spread over threads.
 *
 * bf16 and f16 run the f32 kernel on f32 copies of q, k and v made in the scratch the plan
 * set aside for them (wide_bytes), and round each output once. */
#include "clones.h"
#include "cpu_ops.h"
#include "base/half.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Entries of a scratch piece rounded up to 64 bytes. */
static int64_t pad16(int64_t n) {
    return (n + 15) / 16 * 16;
}

/* One thread's scratch, in elements: the score tile, the chunk's P V, the accumulator,
 * and per row the running maximum, sum and rescale factor. */
static int64_t slot_elems(const kn_attention_desc *d) {
    int64_t sk = d->s < CPU_ATTN_SK ? d->s : CPU_ATTN_SK;
    return pad16(CPU_ATTN_TQ * sk) + 2 * pad16(CPU_ATTN_TQ * d->hv) + 3 * pad16(CPU_ATTN_TQ);
}

static int64_t elem_size(kiln_dtype t) {
    return t == KILN_DTYPE_F64 ? 8 : 4; /* bf16 and f16 are computed in f32 */
}

static bool is_half(kiln_dtype t) {
    return t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
}

/* bf16 and f16: q, k, v and out widened to f32 (in that order, each contiguous) ahead of
 * the threads' slots; 0 bytes for f32 and f64. */
typedef struct wide_sizes {
    int64_t q, k, v, out;
} wide_sizes;

static wide_sizes wide_of(const kn_attention_desc *d) {
    return (wide_sizes){d->batch * d->t * d->heads * d->h, d->batch * d->s * d->kv_heads * d->h,
                        d->batch * d->s * d->kv_heads * d->hv, d->batch * d->t * d->heads * d->hv};
}

static uint64_t wide_bytes(const kn_attention_desc *d) {
    if (!is_half(d->dtype)) return 0;
    wide_sizes w = wide_of(d);
    return (uint64_t)pad16(w.q + w.k + w.v + w.out) * 4;
}

uint64_t cpu_attention_scratch(const kn_attention_desc *d, int threads) {
    return wide_bytes(d) + (uint64_t)(threads > 0 ? threads : 1) * (uint64_t)slot_elems(d) *
                               (uint64_t)elem_size(d->dtype);
}

int64_t cpu_attention_slots(const kn_attention_desc *d, uint64_t bytes) {
    uint64_t wide = wide_bytes(d);
    if (bytes < wide) return 0;
    return (int64_t)((bytes - wide) / ((uint64_t)slot_elems(d) * (uint64_t)elem_size(d->dtype)));
}

int64_t cpu_attention_items(const kn_attention_desc *d) {
    return d->batch * d->heads * ((d->t + CPU_ATTN_TQ - 1) / CPU_ATTN_TQ);
}

/* The two passes over a row of scores: *_max scales the first n entries in place and
 * returns their maximum (NaN if any is NaN); *_exp replaces them by exp(s - m), zeroes
 * entries [n, w) (keys the row may not see) and returns their sum. f32 is written with
 * GCC's vector extensions, 16 lanes (AVX-512 in the x86-64-v4 clone, two or four narrower
 * registers in the others), because the NaN-propagating max and the exp do not vectorise
 * from scalar code; f64 is scalar (libm's exp), for tests and the rare f64 model. */
typedef float vf32 __attribute__((vector_size(64)));
typedef int32_t vi32 __attribute__((vector_size(64)));
typedef uint32_t vu32 __attribute__((vector_size(64)));

/* take ? a : b, per lane (take: lanes of all ones or zeros, as a vector compare gives) */
#define VBLEND(take, a, b) ((vf32)(((vi32)(a) & (take)) | ((vi32)(b) & ~(take))))

/* exp(x) for x <= 0 (what the softmax feeds it): the generated kernels' kiln_exp_f32
 * (src/codegen/prelude/math_f32.h: Cody-Waite reduction, the Cephes degree-6 polynomial,
 * 2^k into the exponent bits; ~1 ulp) with round-to-nearest by the 1.5 * 2^23 trick, and
 * results below 2^-125 (x < -86.6, far under one ulp of a softmax's sum) flushed to 0;
 * NaN stays. Every lane is clamped into [-86.6, 0] before k is converted to int32 (a NaN
 * and, against the contract, a positive x are taken as 0), so k is in [-125, 0] and 2^k
 * added into the exponent bits cannot overflow, whatever a lane holds; the bits are added
 * unsigned. */
/* In place, through a pointer: a 64-byte vector passed by value would cross the clones'
 * differing ABIs (zmm registers in the AVX-512 clone, memory in the others) wherever gcc
 * does not inline the call (at -O0 it called the baseline helper from the AVX-512 clone,
 * which read its argument from where the caller had not put it). */
__attribute__((always_inline)) static inline void vexp_le0(vf32 *v) {
    vf32 x = *v;
    vi32 tiny = x < -86.6f;
    vf32 xc = VBLEND(x <= 0.0f, x, (vf32){0});
    xc = VBLEND(tiny, (vf32){0} - 86.6f, xc);
    vf32 kf = xc * 1.44269504088896341f + 12582912.0f;
    kf = kf - 12582912.0f;
    vf32 r = xc - kf * 0.693359375f;
    r = r + kf * 2.12194440e-4f;
    vf32 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    vf32 y = p * r * r + r + 1.0f;
    y = (vf32)((vu32)y + ((vu32) __builtin_convertvector(kf, vi32) << 23));
    y = (vf32)((vi32)y & ~tiny);
    *v = VBLEND(x != x, x, y);
}

KILN_CLONES static float rows_f32_max(float *s, int64_t n, float scale) {
    vf32 m = (vf32){0} - INFINITY;
    vi32 nan = {0}; /* kept apart: (t > m) | (t != t) made gcc 12 compare lane by lane */
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vf32 t;
        memcpy(&t, s + i, sizeof t);
        t *= scale;
        memcpy(s + i, &t, sizeof t);
        m = VBLEND(t > m, t, m);
        nan |= t != t;
    }
    float r = -INFINITY;
    for (int j = 0; j < 16; j++) r = m[j] > r || nan[j] ? (nan[j] ? NAN : m[j]) : r;
    for (; i < n; i++) {
        float t = s[i] * scale;
        s[i] = t;
        r = t > r || t != t ? t : r;
    }
    return r;
}

KILN_CLONES static float rows_f32_exp(float *s, int64_t n, int64_t w, float mx) {
    vf32 l = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vf32 t;
        memcpy(&t, s + i, sizeof t);
        t -= mx;
        vexp_le0(&t);
        memcpy(s + i, &t, sizeof t);
        l += t;
    }
    if (i < n) { /* the tail, as a vector padded with -inf: exp gives those lanes 0 (a lane
                  * of 0 would reach the exp at -mx, far above 0 when every score is low) */
        vf32 t = (vf32){0} - INFINITY;
        memcpy(&t, s + i, (size_t)(n - i) * sizeof(float));
        t -= mx;
        vexp_le0(&t);
        memcpy(s + i, &t, (size_t)(n - i) * sizeof(float));
        l += t;
    }
    for (int64_t j = n; j < w; j++) s[j] = 0;
    for (int h = 8; h; h /= 2)
        for (int j = 0; j < h; j++) l[j] += l[j + h];
    return l[0];
}

static double rows_f64_max(double *s, int64_t n, double scale) {
    double r = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double t = s[i] * scale;
        s[i] = t;
        r = t > r || t != t ? t : r;
    }
    return r;
}

static double rows_f64_exp(double *s, int64_t n, int64_t w, double mx) {
    double l = 0;
    for (int64_t i = 0; i < n; i++) l += s[i] = exp(s[i] - mx);
    for (int64_t j = n; j < w; j++) s[j] = 0;
    return l;
}

typedef struct attn_call {
    const cpu_blas *bl;
    const kn_attention_desc *d;
    const void *q, *k, *v;
    void *out, *scratch;
    int64_t items;
    atomic_int_fast64_t next; /* the next work item to take */
} attn_call;

/* The keys rows i0 .. i0 + rows - 1 do not see, scored `fill`, added to their running
 * maximum mx, sum and accumulator acc (rows of hv); vs: hv entries of scratch. Rows are
 * taken last to first so that vs, the sum of the value rows j > i, grows by one row a step. */
#define ATTN_FILL(T, NAME)                                                                         \
    static void NAME##_fill(const attn_call *c, int64_t b, int64_t kh, int64_t i0, int64_t rows,   \
                            const T *mx, T *sum, T *acc, T *vs) {                                  \
        const kn_attention_desc *d = c->d;                                                         \
        int64_t hv = d->hv, ldv = d->kv_heads * hv;                                                \
        double fill = d->fill;                                                                     \
        bool any = false; /* exp(fill - max) is 0 for every row: nothing to add */                 \
        for (int64_t r = 0; r < rows && !any; r++)                                                 \
            any = i0 + r + 1 < d->s && (fill > mx[r] || (T)exp(fill - mx[r]) != 0);                \
        if (!any) return; /* (and with no keys, v may be NULL: no offset taken from it) */         \
        const T *v = (const T *)c->v + (b * d->s * d->kv_heads + kh) * hv; /* row j: v + j ldv */  \
        for (int64_t e = 0; e < hv; e++) vs[e] = 0;                                                \
        for (int64_t j = i0 + rows; j < d->s; j++)                                                 \
            for (int64_t e = 0; e < hv; e++) vs[e] += v[j * ldv + e];                              \
        for (int64_t r = rows - 1; r >= 0; r--) {                                                  \
            int64_t i = i0 + r;                                                                    \
            double m = mx[r], top = m > fill ? m : fill;                                           \
            if (i + 1 < d->s && m == m) { /* (a NaN row stays NaN) */                              \
                T a = (T)exp(m - top), w = (T)exp(fill - top);                                     \
                sum[r] = sum[r] * a + (T)(d->s - 1 - i) * w;                                       \
                for (int64_t e = 0; e < hv; e++)                                                   \
                    acc[r * hv + e] = acc[r * hv + e] * a + w * vs[e];                             \
            }                                                                                      \
            if (i < d->s) /* the row above does not see key i either */                            \
                for (int64_t e = 0; e < hv; e++) vs[e] += v[i * ldv + e];                          \
        }                                                                                          \
    }

/* One work item, per dtype. GEMM(ta, tb, m, n, k, a, lda, b, ldb, c, ldc) is the
 * provider's product on the calling thread. */
#define ATTN_ITEM(T, NAME, GEMM)                                                                   \
    KILN_CLONES static void NAME##_item(const attn_call *c, int64_t it, T *ws) {                   \
        const kn_attention_desc *d = c->d;                                                         \
        int64_t nqb = (d->t + CPU_ATTN_TQ - 1) / CPU_ATTN_TQ, bh = it % (d->batch * d->heads);     \
        int64_t qb = nqb - 1 - it / (d->batch * d->heads), b = bh / d->heads, n = bh % d->heads;   \
        int64_t kh = n / (d->heads / d->kv_heads), i0 = qb * CPU_ATTN_TQ;                          \
        int64_t rows = d->t - i0 < CPU_ATTN_TQ ? d->t - i0 : CPU_ATTN_TQ;                          \
        int64_t seen = d->causal && i0 + rows < d->s ? i0 + rows : d->s; /* keys [0, seen) */      \
        int64_t sk = d->s < CPU_ATTN_SK ? d->s : CPU_ATTN_SK, h = d->h, hv = d->hv;                \
        T *sc = ws, *po = sc + pad16(CPU_ATTN_TQ * sk), *acc = po + pad16(CPU_ATTN_TQ * hv);       \
        T *mx = acc + pad16(CPU_ATTN_TQ * hv), *sum = mx + pad16(CPU_ATTN_TQ),                     \
          *al = sum + pad16(CPU_ATTN_TQ);                                                          \
        /* with h = 0 (no features) q and k may be NULL: no offset is taken from them */           \
        const T *q = h ? (const T *)c->q + ((b * d->t + i0) * d->heads + n) * h : NULL;            \
        int64_t ldq = d->heads * h, ldk = d->kv_heads * h, ldv = d->kv_heads * hv;                 \
        for (int64_t r = 0; r < rows; r++) mx[r] = -INFINITY, sum[r] = 0;                          \
        for (int64_t j0 = 0; j0 < seen; j0 += sk) {                                                \
            int64_t w = seen - j0 < sk ? seen - j0 : sk;                                           \
            const T *kc = h ? (const T *)c->k + ((b * d->s + j0) * d->kv_heads + kh) * h : NULL;   \
            const T *vc = (const T *)c->v + ((b * d->s + j0) * d->kv_heads + kh) * hv;             \
            if (h)                                                                                 \
                GEMM(false, true, rows, w, h, q, ldq, kc, ldk, sc, w);                             \
            else /* no features: every score is 0 (not every provider writes C when k = 0) */      \
                memset(sc, 0, (size_t)(rows * w) * sizeof(T));                                     \
            for (int64_t r = 0; r < rows; r++) {                                                   \
                int64_t cols = d->causal ? i0 + r + 1 - j0 : w; /* keys j <= i */                  \
                cols = cols < 0 ? 0 : cols > w ? w : cols;                                         \
                T *row = sc + r * w;                                                               \
                if (!cols) { /* none of this chunk's keys: nothing changes */                      \
                    memset(row, 0, (size_t)w * sizeof(T));                                         \
                    al[r] = 1;                                                                     \
                    continue;                                                                      \
                }                                                                                  \
                T m = NAME##_max(row, cols, (T)d->scale), mo = mx[r];                              \
                m = m > mo || m != m ? m : mo;                                                     \
                if (m == -INFINITY) { /* every score so far -inf: nothing seen yet (not NaN) */    \
                    memset(row, 0, (size_t)w * sizeof(T));                                         \
                    al[r] = 1;                                                                     \
                    continue;                                                                      \
                }                                                                                  \
                al[r] = j0 ? (T)exp(mo - m) : 0; /* the rows so far, rescaled */                   \
                sum[r] = sum[r] * al[r] + NAME##_exp(row, cols, w, m);                             \
                mx[r] = m;                                                                         \
            }                                                                                      \
            if (!j0) {                                                                             \
                GEMM(false, false, rows, hv, w, sc, w, vc, ldv, acc, hv);                          \
                continue;                                                                          \
            }                                                                                      \
            GEMM(false, false, rows, hv, w, sc, w, vc, ldv, po, hv);                               \
            for (int64_t r = 0; r < rows; r++)                                                     \
                for (int64_t e = 0; e < hv; e++)                                                   \
                    acc[r * hv + e] = acc[r * hv + e] * al[r] + po[r * hv + e];                    \
        }                                                                                          \
        if (d->causal && d->fill != -INFINITY) NAME##_fill(c, b, kh, i0, rows, mx, sum, acc, po);  \
        T *o = (T *)c->out + ((b * d->t + i0) * d->heads + n) * hv;                                \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            T inv = 1 / sum[r], *orow = o + r * d->heads * hv; /* one rounding more than a /: */   \
            const T *arow = acc + r * hv;                      /* within f32's tolerance */        \
            for (int64_t e = 0; e < hv; e++) orow[e] = arow[e] * inv;                              \
        }                                                                                          \
    }

#define SGEMM(...) cpu_blas_sgemm(c->bl, __VA_ARGS__)
#define DGEMM(...) cpu_blas_dgemm(c->bl, __VA_ARGS__)
ATTN_FILL(float, rows_f32)
ATTN_FILL(double, rows_f64)
ATTN_ITEM(float, rows_f32, SGEMM)
ATTN_ITEM(double, rows_f64, DGEMM)

/* Pool task `slot` (one per thread): items from the shared counter until none is left. */
static void attn_task(void *arg, int64_t begin, int64_t end) {
    attn_call *c = arg;
    int64_t elems = slot_elems(c->d);
    for (int64_t slot = begin; slot < end; slot++) {
        void *ws = (char *)c->scratch + slot * elems * elem_size(c->d->dtype);
        int64_t it;
        while ((it = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed)) < c->items) {
            if (c->d->dtype == KILN_DTYPE_F64)
                rows_f64_item(c, it, ws);
            else
                rows_f32_item(c, it, ws);
        }
    }
}

static void run_attention(const cpu_blas *bl, kn_pool *pool, int threads,
                          const kn_attention_desc *d, const void *q, const void *k, const void *v,
                          void *out, void *scratch) {
    attn_call c = {bl, d, q, k, v, out, scratch, d->hv ? cpu_attention_items(d) : 0};
    atomic_init(&c.next, 0);
    if (!c.items) return;
    if (threads > c.items) threads = (int)c.items;
    if (pool && threads > 1)
        pool_parallel_for(pool, threads, 1, attn_task, &c);
    else
        attn_task(&c, 0, 1);
}

static void widen_all(bool bf, const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = bf ? kn_bf16_to_f32(x[i]) : kn_f16_to_f32(x[i]);
}

/* bf16 and f16: the whole op in f32 on widened copies, each output rounded once. The
 * copies are the scratch's first wide_bytes, planned with the rest. */
void cpu_attention(const cpu_blas *bl, kn_pool *pool, int threads, const kn_attention_desc *d,
                   const void *q, const void *k, const void *v, void *out, void *scratch) {
    if (!is_half(d->dtype)) {
        run_attention(bl, pool, threads, d, q, k, v, out, scratch);
        return;
    }
    bool bf = d->dtype == KILN_DTYPE_BF16;
    wide_sizes w = wide_of(d);
    float *wq = scratch, *wk = wq + w.q, *wv = wk + w.k, *wo = wv + w.v;
    widen_all(bf, q, wq, w.q), widen_all(bf, k, wk, w.k), widen_all(bf, v, wv, w.v);
    kn_attention_desc f = *d;
    f.dtype = KILN_DTYPE_F32;
    run_attention(bl, pool, threads, &f, wq, wk, wv, wo, (char *)scratch + wide_bytes(d));
    uint16_t *o = out;
    for (int64_t i = 0; i < w.out; i++) o[i] = bf ? kn_f32_to_bf16(wo[i]) : kn_f32_to_f16(wo[i]);
}
