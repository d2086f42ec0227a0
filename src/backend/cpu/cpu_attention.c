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
#include "cpu_attention.h"
#include "cpu_ops.h"

#include <math.h>
#include <string.h>

/* One thread's scratch, in elements: the score tile, the chunk's P V, the accumulator,
 * and per row the running maximum, sum and rescale factor. */
static int64_t slot_elems(const kn_attention_desc *d) {
    int64_t sk = d->s < CPU_ATTN_SK ? d->s : CPU_ATTN_SK;
    return pad16(CPU_ATTN_TQ * sk) + 2 * pad16(CPU_ATTN_TQ * d->hv) + 3 * pad16(CPU_ATTN_TQ);
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

static uint64_t slot_bytes(const kn_attention_desc *d) {
    return (uint64_t)slot_elems(d) * (uint64_t)attn_elem_size(d->dtype);
}

uint64_t cpu_attention_scratch(const kn_attention_desc *d, int threads) {
    return attn_scratch_bytes(wide_bytes(d), slot_bytes(d), threads);
}

int64_t cpu_attention_slots(const kn_attention_desc *d, uint64_t bytes) {
    return attn_slots(wide_bytes(d), slot_bytes(d), bytes);
}

int64_t cpu_attention_items(const kn_attention_desc *d) {
    return d->batch * d->heads * ((d->t + CPU_ATTN_TQ - 1) / CPU_ATTN_TQ);
}

typedef struct attn_call {
    const cpu_blas *bl;
    const kn_attention_desc *d;
    const void *q, *k, *v;
    void *out, *lse; /* lse: NULL, or the rows' log-sum-exp ([b t, heads], f32 or f64) */
} attn_call;

/* The keys rows i0 .. i0 + rows - 1 do not see, scored `fill`, added to their running
 * maximum mx (which becomes the larger of it and the fill), sum and accumulator acc (rows
 * of hv); vs: hv entries of scratch. Rows are taken last to first so that vs, the sum of
 * the value rows j > i, grows by one row a step. */
#define ATTN_FILL(T, NAME)                                                                         \
    static void NAME##_fill(const attn_call *c, int64_t b, int64_t kh, int64_t i0, int64_t rows,   \
                            T *mx, T *sum, T *acc, T *vs) {                                        \
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
                mx[r] = (T)top;                                                                    \
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
        attn_qblock B = attn_qblock_of(d, it); /* keys [0, seen) */                                \
        int64_t b = B.b, n = B.n, kh = B.kh, i0 = B.i0, rows = B.rows, seen = B.seen;              \
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
        T *l = c->lse ? (T *)c->lse + (b * d->t + i0) * d->heads + n : NULL;                       \
        for (int64_t r = 0; l && r < rows; r++) /* every score -inf: NaN, as the definition's */   \
            l[r * d->heads] = mx[r] == -INFINITY ? (T)NAN : mx[r] + (T)log(sum[r]);                \
    }

#define SGEMM(...) cpu_blas_sgemm(c->bl, __VA_ARGS__)
#define DGEMM(...) cpu_blas_dgemm(c->bl, __VA_ARGS__)
ATTN_FILL(float, cpu_attn_rows_f32)
ATTN_FILL(double, cpu_attn_rows_f64)
ATTN_ITEM(float, cpu_attn_rows_f32, SGEMM)
ATTN_ITEM(double, cpu_attn_rows_f64, DGEMM)

/* Pool task `slot` (one per thread): items from the shared counter until none is left. */
static void attn_task(void *arg, int64_t begin, int64_t end) {
    attn_items *r = arg;
    for (int64_t slot = begin; slot < end; slot++) {
        void *ws = r->scratch + (uint64_t)slot * r->slot_bytes;
        int64_t it;
        while ((it = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed)) < r->items)
            r->item(r->call, it, ws);
    }
}

typedef struct convert_call {
    bool bf, widen;
    const void *src;
    void *dst;
} convert_call;

static void convert_part(void *arg, int64_t begin, int64_t end) {
    const convert_call *c = arg;
    if (c->widen) {
        const uint16_t *x = c->src;
        float *y = c->dst;
        if (c->bf)
            for (int64_t i = begin; i < end; i++) y[i] = kn_bf16_to_f32(x[i]);
        else
            for (int64_t i = begin; i < end; i++) y[i] = kn_f16_to_f32(x[i]);
        return;
    }
    const float *x = c->src;
    uint16_t *y = c->dst;
    if (c->bf)
        for (int64_t i = begin; i < end; i++) y[i] = kn_f32_to_bf16(x[i]);
    else
        for (int64_t i = begin; i < end; i++) y[i] = kn_f32_to_f16(x[i]);
}

void cpu_attn_convert(kn_pool *pool, bool bf, bool widen, const void *src, void *dst, int64_t n) {
    convert_call c = {bf, widen, src, dst};
    if (n < 1) return;
    if (pool)
        pool_parallel_for(pool, n, 1 << 14, convert_part, &c);
    else
        convert_part(&c, 0, n);
}

void cpu_attn_run_items(kn_pool *pool, int threads, attn_items *r) {
    atomic_init(&r->next, 0);
    if (r->items < 1) return;
    if (threads > r->items) threads = (int)r->items;
    if (pool && threads > 1)
        pool_parallel_for(pool, threads, 1, attn_task, r);
    else
        attn_task(r, 0, 1);
}

static void attn_item(const void *call, int64_t it, void *ws) {
    const attn_call *c = call;
    if (c->d->dtype == KILN_DTYPE_F64)
        cpu_attn_rows_f64_item(c, it, ws);
    else
        cpu_attn_rows_f32_item(c, it, ws);
}

static void run_attention(const cpu_blas *bl, kn_pool *pool, int threads,
                          const kn_attention_desc *d, const void *q, const void *k, const void *v,
                          void *out, void *lse, void *scratch) {
    attn_call c = {bl, d, q, k, v, out, lse};
    attn_items r = {attn_item, &c, scratch, slot_bytes(d), d->hv ? cpu_attention_items(d) : 0};
    cpu_attn_run_items(pool, threads, &r);
}

/* bf16 and f16: the whole op in f32 on widened copies, each output rounded once. The
 * copies are the scratch's first wide_bytes, planned with the rest. */
void cpu_attention(const cpu_blas *bl, kn_pool *pool, int threads, const kn_attention_desc *d,
                   const void *q, const void *k, const void *v, void *out, void *lse,
                   void *scratch) {
    if (!is_half(d->dtype)) {
        run_attention(bl, pool, threads, d, q, k, v, out, lse, scratch);
        return;
    }
    bool bf = d->dtype == KILN_DTYPE_BF16;
    wide_sizes w = wide_of(d);
    float *wq = scratch, *wk = wq + w.q, *wv = wk + w.k, *wo = wv + w.v;
    cpu_attn_convert(pool, bf, true, q, wq, w.q), cpu_attn_convert(pool, bf, true, k, wk, w.k);
    cpu_attn_convert(pool, bf, true, v, wv, w.v);
    kn_attention_desc f = *d;
    f.dtype = KILN_DTYPE_F32;
    run_attention(bl, pool, threads, &f, wq, wk, wv, wo, lse, (char *)scratch + wide_bytes(d));
    cpu_attn_convert(pool, bf, false, wo, out, w.out);
}
