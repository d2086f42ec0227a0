/* cpu_attention_grad.c — the gradient of dot_product_attention as fused kernels (the
 * backend's attention_grad library op; its kinds in backend_impl.h, kn_attention_kind):
 * each row's log-sum-exp of the scores (LSE), and dq, dk and dv each in a pass of its own
 * (GRAD_Q, GRAD_K, GRAD_V), as FlashAttention-2 computes them: the probabilities
 * p = exp(scale q k^T - lse) are recomputed a tile at a time from q, k and the rows' lse,
 * so no [T, S] matrix is ever stored.
 *
 * LSE and GRAD_Q: a work item is one (batch, query head, block of CPU_ATTN_TQ query rows),
 * as in the forward kernel (cpu_attention.c); it walks the keys the block can see in
 * chunks of CPU_ATTN_GK, the chunks right of the block's diagonal never computed when
 * causal. LSE is the forward's online softmax without its P V: each row's running maximum
 * and sum. GRAD_Q takes the chunk's S = Q K^T and dP = ct V^T from the GEMM provider (one
 * thread, blas.h) into scratch tiles, turns S into P = exp(scale S - lse) and then into
 * dS = P (dP - delta) row by row (keys a row does not see: 0), and adds dS K into the
 * block's accumulator; the end scales it once.
 * GRAD_K and GRAD_V: a work item is one (batch, key/value head, block of CPU_ATTN_TQ key
 * rows). It walks the query heads of the head's group in order, and for each the query
 * rows that can see the block (when causal, those from the block's first key on) in chunks
 * of CPU_ATTN_GK, recomputes the chunk's P (and for dk its dS, as above) and adds
 * dS^T Q (dk) or P^T ct (dv), products with a transposed operand, into the block's
 * accumulator. A key no query sees (causal, S > T) gets 0.
 *
 * Threads: as the forward's (cpu_attention.h, cpu_attn_run_items): one pool task per
 * thread, each with its own slot of the planned scratch (no more threads than slots: the
 * pool may have grown since the compile), items from a shared counter, those with the most
 * work first when causal (the last query blocks, the first key blocks). An item writes
 * only its own rows of out and adds its chunks in one fixed order, so the result is the
 * same bits for any number of threads.
 *
 * bf16 and f16 run the f32 kernel on f32 copies of q, k, v and ct (those the kind reads)
 * made in the scratch the plan set aside for them; each item rounds its rows of out once
 * (lse and delta are f32 already, and so is LSE's out). f64 runs the same code in f64,
 * its exponentials libm's. */
#include "cpu_attention.h"
#include "cpu_ops.h"

#include <math.h>
#include <string.h>

static bool by_keys(const kn_attention_desc *d) {
    return d->kind == KN_ATTN_GRAD_K || d->kind == KN_ATTN_GRAD_V;
}

/* Rows of the other side in one chunk: keys for LSE and GRAD_Q, queries for GRAD_K and
 * GRAD_V (at least 1, so that a slot is never empty). */
static int64_t chunk_of(const kn_attention_desc *d) {
    int64_t n = by_keys(d) ? d->t : d->s;
    return n < 1 ? 1 : n < CPU_ATTN_GK ? n : CPU_ATTN_GK;
}

/* The length of out's rows, and of the accumulator's: h for dq and dk, hv for dv (LSE: 0). */
static int64_t width_of(const kn_attention_desc *d) {
    return d->kind == KN_ATTN_GRAD_V ? d->hv : d->kind == KN_ATTN_LSE ? 0 : d->h;
}

/* Whether the kind needs dP = ct V^T (and so v, ct and delta). */
static bool needs_dp(const kn_attention_desc *d) {
    return d->kind == KN_ATTN_GRAD_Q || d->kind == KN_ATTN_GRAD_K;
}

/* One thread's scratch, in elements: the tile of S (then P, then dS), the tile of dP
 * (GRAD_Q and GRAD_K), the accumulator and the chunk's product added into it, and per row
 * the running maximum and sum (LSE). */
static int64_t slot_elems(const kn_attention_desc *d) {
    int64_t tile = pad16(CPU_ATTN_TQ * chunk_of(d)), acc = pad16(CPU_ATTN_TQ * width_of(d));
    return (needs_dp(d) ? 2 : 1) * tile + 2 * acc + 2 * pad16(CPU_ATTN_TQ);
}

static uint64_t slot_bytes(const kn_attention_desc *d) {
    return (uint64_t)slot_elems(d) * (uint64_t)attn_elem_size(d->dtype);
}

/* bf16 and f16: q, k, v and ct widened to f32 (in that order, each contiguous; v and ct
 * only where the kind reads them) ahead of the threads' slots; 0 bytes for f32 and f64. */
typedef struct wide_sizes {
    int64_t q, k, v, ct;
} wide_sizes;

static wide_sizes wide_of(const kn_attention_desc *d) {
    bool ct = d->kind != KN_ATTN_LSE;
    return (wide_sizes){d->batch * d->t * d->heads * d->h, d->batch * d->s * d->kv_heads * d->h,
                        needs_dp(d) ? d->batch * d->s * d->kv_heads * d->hv : 0,
                        ct ? d->batch * d->t * d->heads * d->hv : 0};
}

static uint64_t wide_bytes(const kn_attention_desc *d) {
    if (!is_half(d->dtype)) return 0;
    wide_sizes w = wide_of(d);
    return (uint64_t)pad16(w.q + w.k + w.v + w.ct) * 4;
}

uint64_t cpu_attention_grad_scratch(const kn_attention_desc *d, int threads) {
    return attn_scratch_bytes(wide_bytes(d), slot_bytes(d), threads);
}

int64_t cpu_attention_grad_slots(const kn_attention_desc *d, uint64_t bytes) {
    return attn_slots(wide_bytes(d), slot_bytes(d), bytes);
}

/* Blocks of CPU_ATTN_TQ rows of q (LSE, GRAD_Q) or of k (GRAD_K, GRAD_V) per head; none
 * when out is empty. */
int64_t cpu_attention_grad_items(const kn_attention_desc *d) {
    if (d->kind != KN_ATTN_LSE && !width_of(d)) return 0;
    int64_t rows = by_keys(d) ? d->s : d->t;
    return d->batch * (by_keys(d) ? d->kv_heads : d->heads) *
           ((rows + CPU_ATTN_TQ - 1) / CPU_ATTN_TQ);
}

typedef struct grad_call {
    const cpu_blas *bl;
    const kn_attention_desc *d; /* dtype f32 or f64: the type computed in */
    const void *q, *k, *v, *ct, *lse, *delta;
    void *out;
    kiln_dtype out_t; /* out's elements: d->dtype's, or bf16 or f16 rounded from f32 */
} grad_call;

/* The row passes of the gradient, over the first n entries of a row of raw scores s:
 * *_prob makes them p = exp(scale s - lse) and zeroes [n, w) (keys the row does not see);
 * *_ds makes p into ds = p (dp - delta). f32 in 16-lane vectors (cpu_attention.h's
 * vexp_any: with lse the row's log-sum-exp scale s - lse <= 0 but for rounding, but an lse
 * given by hand may be below the scores), f64 scalar. */
KILN_CLONES static void grad_f32_prob(float *s, int64_t n, int64_t w, float scale, float lse) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vf32 t;
        memcpy(&t, s + i, sizeof t);
        t = t * scale - lse;
        vexp_any(&t);
        memcpy(s + i, &t, sizeof t);
    }
    if (i < n) { /* the tail, as a vector padded with zeros (their lanes are not stored) */
        vf32 t = {0};
        memcpy(&t, s + i, (size_t)(n - i) * sizeof(float));
        t = t * scale - lse;
        vexp_any(&t);
        memcpy(s + i, &t, (size_t)(n - i) * sizeof(float));
    }
    if (w > n) memset(s + n, 0, (size_t)(w - n) * sizeof(float));
}

KILN_CLONES static void grad_f32_ds(float *p, const float *dp, int64_t n, float delta) {
    for (int64_t i = 0; i < n; i++) p[i] *= dp[i] - delta;
}

static void grad_f64_prob(double *s, int64_t n, int64_t w, double scale, double lse) {
    for (int64_t i = 0; i < n; i++) s[i] = exp(s[i] * scale - lse);
    for (int64_t j = n; j < w; j++) s[j] = 0;
}

static void grad_f64_ds(double *p, const double *dp, int64_t n, double delta) {
    for (int64_t i = 0; i < n; i++) p[i] *= dp[i] - delta;
}

/* Out's rows r0 .. r0 + rows - 1 of head `head` in a [batch row, heads, width] layout
 * (row stride heads * width), each mul times the accumulator's (rows of width), rounded
 * once to out's type. */
#define GRAD_STORE(T, NAME)                                                                        \
    static void NAME##_store(const grad_call *c, const T *acc, int64_t rows, int64_t width, T mul, \
                             int64_t r0, int64_t heads, int64_t head) {                            \
        int64_t off = (r0 * heads + head) * width, ld = heads * width;                             \
        bool bf = c->out_t == KILN_DTYPE_BF16;                                                     \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const T *a = acc + r * width;                                                          \
            if (!is_half(c->out_t)) {                                                              \
                T *o = (T *)c->out + off + r * ld;                                                 \
                for (int64_t e = 0; e < width; e++) o[e] = a[e] * mul;                             \
                continue;                                                                          \
            }                                                                                      \
            uint16_t *o = (uint16_t *)c->out + off + r * ld;                                       \
            for (int64_t e = 0; e < width; e++)                                                    \
                o[e] =                                                                             \
                    bf ? kn_f32_to_bf16((float)(a[e] * mul)) : kn_f32_to_f16((float)(a[e] * mul)); \
        }                                                                                          \
    }

/* The work items, per dtype: NAME##_lse_item, NAME##_q_item and NAME##_kv_item (GRAD_K and
 * GRAD_V). ROWS: the forward's row passes (cpu_attention.h). GEMM(ta, tb, m, n, k, a, lda,
 * b, ldb, c, ldc) is the provider's product on the calling thread; NAME##_abt is
 * out = a b^T (m x n, both of k columns), zeros when k = 0 (not every provider writes C
 * then, and a and b may be NULL). Base pointers are taken only where their operand has
 * elements. */
#define GRAD_ITEMS(T, NAME, ROWS, GEMM)                                                            \
    static void NAME##_abt(const grad_call *c, int64_t m, int64_t n, int64_t k, const T *a,        \
                           int64_t lda, const T *b, int64_t ldb, T *out) {                         \
        if (k)                                                                                     \
            GEMM(false, true, m, n, k, a, lda, b, ldb, out, n);                                    \
        else                                                                                       \
            memset(out, 0, (size_t)(m * n) * sizeof(T));                                           \
    }                                                                                              \
                                                                                                   \
    /* acc += add (rows of width) */                                                               \
    static void NAME##_add(T *acc, const T *add, int64_t rows, int64_t width) {                    \
        for (int64_t i = 0; i < rows * width; i++) acc[i] += add[i];                               \
    }                                                                                              \
                                                                                                   \
    /* LSE and GRAD_Q's item: query block qb (the last first), rows [i0, i0 + rows) */             \
    KILN_CLONES static void NAME##_lse_item(const grad_call *c, int64_t it, void *ws) {            \
        const kn_attention_desc *d = c->d;                                                         \
        attn_qblock B = attn_qblock_of(d, it); /* keys [0, seen) */                                \
        int64_t b = B.b, n = B.n, kh = B.kh, i0 = B.i0, rows = B.rows, seen = B.seen;              \
        int64_t sk = chunk_of(d), h = d->h, ldq = d->heads * h, ldk = d->kv_heads * h;             \
        T *sc = ws, *mx = sc + pad16(CPU_ATTN_TQ * sk), *sum = mx + pad16(CPU_ATTN_TQ);            \
        const T *q = h ? (const T *)c->q + ((b * d->t + i0) * d->heads + n) * h : NULL;            \
        for (int64_t r = 0; r < rows; r++) mx[r] = -INFINITY, sum[r] = 0;                          \
        for (int64_t j0 = 0; j0 < seen; j0 += sk) {                                                \
            int64_t w = seen - j0 < sk ? seen - j0 : sk;                                           \
            const T *kc = h ? (const T *)c->k + ((b * d->s + j0) * d->kv_heads + kh) * h : NULL;   \
            NAME##_abt(c, rows, w, h, q, ldq, kc, ldk, sc);                                        \
            for (int64_t r = 0; r < rows; r++) {                                                   \
                int64_t cols = d->causal ? i0 + r + 1 - j0 : w; /* keys j <= i */                  \
                cols = cols < 0 ? 0 : cols > w ? w : cols;                                         \
                if (!cols) continue;                                                               \
                T *row = sc + r * w, m = ROWS##_max(row, cols, (T)d->scale), mo = mx[r];           \
                m = m > mo || m != m ? m : mo;                                                     \
                if (m == -INFINITY) continue; /* every score so far -inf (not NaN) */              \
                sum[r] = sum[r] * (T)exp(mo - m) + ROWS##_exp(row, cols, cols, m);                 \
                mx[r] = m;                                                                         \
            }                                                                                      \
        }                                                                                          \
        T *o = (T *)c->out + (b * d->t + i0) * d->heads + n;                                       \
        for (int64_t r = 0; r < rows; r++) /* every score -inf: NaN, as the definition's */        \
            o[r * d->heads] = mx[r] == -INFINITY ? (T)NAN : mx[r] + (T)log(sum[r]);                \
    }                                                                                              \
                                                                                                   \
    KILN_CLONES static void NAME##_q_item(const grad_call *c, int64_t it, void *ws) {              \
        const kn_attention_desc *d = c->d;                                                         \
        attn_qblock B = attn_qblock_of(d, it); /* keys [0, seen) */                                \
        int64_t b = B.b, n = B.n, kh = B.kh, i0 = B.i0, rows = B.rows, seen = B.seen;              \
        int64_t sk = chunk_of(d), h = d->h, hv = d->hv, ldq = d->heads * h;                        \
        int64_t ldk = d->kv_heads * h, ldv = d->kv_heads * hv, ldct = d->heads * hv;               \
        T *sc = ws, *dp = sc + pad16(CPU_ATTN_TQ * sk), *acc = dp + pad16(CPU_ATTN_TQ * sk);       \
        T *po = acc + pad16(CPU_ATTN_TQ * h);                                                      \
        int64_t row0 = (b * d->t + i0) * d->heads + n; /* row i0's index in [b t, heads] */        \
        const T *q = (const T *)c->q + row0 * h, *lse = (const T *)c->lse + row0;                  \
        const T *ct = hv ? (const T *)c->ct + row0 * hv : NULL, *dl = (const T *)c->delta + row0;  \
        for (int64_t j0 = 0; j0 < seen; j0 += sk) {                                                \
            int64_t w = seen - j0 < sk ? seen - j0 : sk, kv0 = (b * d->s + j0) * d->kv_heads + kh; \
            const T *kc = (const T *)c->k + kv0 * h, *vc = hv ? (const T *)c->v + kv0 * hv : NULL; \
            NAME##_abt(c, rows, w, h, q, ldq, kc, ldk, sc);                                        \
            NAME##_abt(c, rows, w, hv, ct, ldct, vc, ldv, dp);                                     \
            for (int64_t r = 0; r < rows; r++) {                                                   \
                int64_t cols = d->causal ? i0 + r + 1 - j0 : w; /* keys j <= i */                  \
                cols = cols < 0 ? 0 : cols > w ? w : cols;                                         \
                NAME##_prob(sc + r * w, cols, w, (T)d->scale, lse[r * d->heads]);                  \
                NAME##_ds(sc + r * w, dp + r * w, cols, dl[r * d->heads]);                         \
            }                                                                                      \
            GEMM(false, false, rows, h, w, sc, w, kc, ldk, j0 ? po : acc, h);                      \
            if (j0) NAME##_add(acc, po, rows, h);                                                  \
        }                                                                                          \
        NAME##_store(c, acc, rows, h, (T)d->scale, b * d->t + i0, d->heads, n);                    \
    }                                                                                              \
                                                                                                   \
    /* GRAD_K and GRAD_V's item: key block it / (batch kv_heads) (the first first), keys           \
     * [j0, j0 + keys) */                                                                          \
    KILN_CLONES static void NAME##_kv_item(const grad_call *c, int64_t it, void *ws) {             \
        const kn_attention_desc *d = c->d;                                                         \
        bool dk = d->kind == KN_ATTN_GRAD_K;                                                       \
        int64_t bk = it % (d->batch * d->kv_heads),                                                \
                j0 = it / (d->batch * d->kv_heads) * CPU_ATTN_TQ;                                  \
        int64_t b = bk / d->kv_heads, kh = bk % d->kv_heads, group = d->heads / d->kv_heads;       \
        int64_t keys = d->s - j0 < CPU_ATTN_TQ ? d->s - j0 : CPU_ATTN_TQ, qc = chunk_of(d);        \
        int64_t h = d->h, hv = d->hv, width = dk ? h : hv, ldq = d->heads * h;                     \
        int64_t ldk = d->kv_heads * h, ldv = d->kv_heads * hv, ldct = d->heads * hv;               \
        T *sc = ws, *dp = sc + pad16(CPU_ATTN_TQ * qc);                                            \
        T *acc = dk ? dp + pad16(CPU_ATTN_TQ * qc) : dp, *po = acc + pad16(CPU_ATTN_TQ * width);   \
        int64_t kv0 = (b * d->s + j0) * d->kv_heads + kh; /* key j0's row in [b s, kv_heads] */    \
        const T *kb = h ? (const T *)c->k + kv0 * h : NULL;                                        \
        const T *vb = dk && hv ? (const T *)c->v + kv0 * hv : NULL;                                \
        bool any = false; /* a chunk is in acc */                                                  \
        for (int64_t n = kh * group; n < (kh + 1) * group; n++) {                                  \
            for (int64_t i0 = d->causal ? j0 : 0; i0 < d->t; i0 += qc) {                           \
                int64_t rows = d->t - i0 < qc ? d->t - i0 : qc;                                    \
                int64_t row0 = (b * d->t + i0) * d->heads + n; /* row i0 in [b t, heads] */        \
                const T *q = h ? (const T *)c->q + row0 * h : NULL,                                \
                        *lse = (const T *)c->lse + row0;                                           \
                const T *ct = hv ? (const T *)c->ct + row0 * hv : NULL;                            \
                NAME##_abt(c, rows, keys, h, q, ldq, kb, ldk, sc);                                 \
                if (dk) NAME##_abt(c, rows, keys, hv, ct, ldct, vb, ldv, dp);                      \
                for (int64_t r = 0; r < rows; r++) {                                               \
                    int64_t cols = d->causal ? i0 + r + 1 - j0 : keys; /* keys j <= i */           \
                    cols = cols < 0 ? 0 : cols > keys ? keys : cols;                               \
                    NAME##_prob(sc + r * keys, cols, keys, (T)d->scale, lse[r * d->heads]);        \
                    if (dk)                                                                        \
                        NAME##_ds(sc + r * keys, dp + r * keys, cols,                              \
                                  ((const T *)c->delta)[row0 + r * d->heads]);                     \
                }                                                                                  \
                GEMM(true, false, keys, width, rows, sc, keys, dk ? q : ct, dk ? ldq : ldct,       \
                     any ? po : acc, width);                                                       \
                if (any) NAME##_add(acc, po, keys, width);                                         \
                any = true;                                                                        \
            }                                                                                      \
        }                                                                                          \
        if (!any) memset(acc, 0, (size_t)(keys * width) * sizeof(T));                              \
        NAME##_store(c, acc, keys, width, dk ? (T)d->scale : 1, b * d->s + j0, d->kv_heads, kh);   \
    }

#define SGEMM(...) cpu_blas_sgemm(c->bl, __VA_ARGS__)
#define DGEMM(...) cpu_blas_dgemm(c->bl, __VA_ARGS__)
GRAD_STORE(float, grad_f32)
GRAD_STORE(double, grad_f64)
GRAD_ITEMS(float, grad_f32, cpu_attn_rows_f32, SGEMM)
GRAD_ITEMS(double, grad_f64, cpu_attn_rows_f64, DGEMM)

typedef void (*grad_item_fn)(const grad_call *c, int64_t it, void *ws);

static void grad_item(const void *call, int64_t it, void *ws) {
    const grad_call *c = call;
    static const grad_item_fn items[2][3] = {
        {grad_f32_lse_item, grad_f32_q_item, grad_f32_kv_item},
        {grad_f64_lse_item, grad_f64_q_item, grad_f64_kv_item},
    };
    int kind = c->d->kind == KN_ATTN_LSE ? 0 : c->d->kind == KN_ATTN_GRAD_Q ? 1 : 2;
    items[c->d->dtype == KILN_DTYPE_F64][kind](c, it, ws);
}

void cpu_attention_grad(const cpu_blas *bl, kn_pool *pool, int threads, const kn_attention_desc *d,
                        const void *q, const void *k, const void *v, const void *ct,
                        const void *lse, const void *delta, void *out, void *scratch) {
    kn_attention_desc f = *d;
    kiln_dtype out_t =
        d->kind == KN_ATTN_LSE && d->dtype != KILN_DTYPE_F64 ? KILN_DTYPE_F32 : d->dtype;
    grad_call c = {bl, &f, q, k, v, ct, lse, delta, out, out_t};
    attn_items r = {grad_item, &c, (char *)scratch + wide_bytes(d), slot_bytes(d),
                    cpu_attention_grad_items(d)};
    if (r.items < 1) return; /* (before the copies: empty operands may be NULL) */
    if (is_half(d->dtype)) { /* the f32 kernel on widened copies */
        bool bf = d->dtype == KILN_DTYPE_BF16;
        wide_sizes w = wide_of(d);
        float *wq = scratch, *wk = wq + w.q, *wv = wk + w.k, *wct = wv + w.v;
        cpu_attn_convert(pool, bf, true, q, wq, w.q), cpu_attn_convert(pool, bf, true, k, wk, w.k);
        cpu_attn_convert(pool, bf, true, v, wv, w.v);
        cpu_attn_convert(pool, bf, true, ct, wct, w.ct);
        c.q = wq, c.k = wk, c.v = wv, c.ct = wct;
        f.dtype = KILN_DTYPE_F32;
    }
    cpu_attn_run_items(pool, threads, &r);
}
