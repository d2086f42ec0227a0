/* cpu_ops.c — see cpu_ops.h. Integer products wrap (unsigned arithmetic), as every
 * integer op in kiln does; f32 and f64 products go to the context's GEMM provider (blas.h),
 * bf16 and f16 ones to gemm_half.c (f32 sums, rounded once),
 * called single-threaded from kiln's own pool (cpu_backend.c splits a product into batch
 * entries and row blocks). */
#include "cpu_ops.h"
#include "base/half.h"
#include "clones.h"

#include <string.h>

#define INT_GEMM(T, U)                                                                             \
    static void gemm_##T(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,            \
                         int64_t lda, const T *b, int64_t ldb, T *c) {                             \
        for (int64_t i = 0; i < m; i++)                                                            \
            for (int64_t j = 0; j < n; j++) {                                                      \
                U acc = 0;                                                                         \
                for (int64_t p = 0; p < k; p++)                                                    \
                    acc += (U)(ta ? a[p * lda + i] : a[i * lda + p]) *                             \
                           (U)(tb ? b[j * ldb + p] : b[p * ldb + j]);                              \
                c[i * n + j] = (T)acc;                                                             \
            }                                                                                      \
    }
INT_GEMM(int32_t, uint32_t)
INT_GEMM(int64_t, uint64_t)

static void gemm_one(const cpu_blas *bl, kiln_dtype t, const kn_gemm_desc *d, const char *a,
                     const char *b, char *c) {
    switch (t) {
    case KILN_DTYPE_F32:
        cpu_blas_sgemm(bl, d->trans_a, d->trans_b, d->m, d->n, d->k, (const float *)a, d->lda,
                       (const float *)b, d->ldb, (float *)c, d->n);
        break;
    case KILN_DTYPE_F64:
        cpu_blas_dgemm(bl, d->trans_a, d->trans_b, d->m, d->n, d->k, (const double *)a, d->lda,
                       (const double *)b, d->ldb, (double *)c, d->n);
        break;
    case KILN_DTYPE_BF16:
    case KILN_DTYPE_F16:
        cpu_half_gemm(t == KILN_DTYPE_BF16, d->trans_a, d->trans_b, d->m, d->n, d->k,
                      (const uint16_t *)a, d->lda, (const uint16_t *)b, d->ldb, (uint16_t *)c,
                      d->n);
        break;
    case KILN_DTYPE_I32:
        gemm_int32_t(d->trans_a, d->trans_b, d->m, d->n, d->k, (const int32_t *)a, d->lda,
                     (const int32_t *)b, d->ldb, (int32_t *)c);
        break;
    case KILN_DTYPE_I64:
        gemm_int64_t(d->trans_a, d->trans_b, d->m, d->n, d->k, (const int64_t *)a, d->lda,
                     (const int64_t *)b, d->ldb, (int64_t *)c);
        break;
    default: break; /* refused at compile: cpu_lib_dtype_ok */
    }
}

/* Rows [r0, r1) of batch entry bi: op(A)'s rows start r0 rows (or, transposed, r0
 * columns) in, C's r0 rows in; B is whole. */
static void gemm_rows(const cpu_blas *bl, kiln_dtype t, const kn_gemm_desc *d, const char *a,
                      const char *b, char *c, int64_t bi, int64_t r0, int64_t r1) {
    size_t es = kiln_dtype_itemsize(t);
    int64_t oa = 0, ob = 0, rest = bi;
    for (int i = d->nb - 1; i >= 0; i--) { /* bi as a multi-index, last axis fastest */
        int64_t ix = rest % d->bdims[i];
        rest /= d->bdims[i];
        oa += ix * d->bstride_a[i], ob += ix * d->bstride_b[i];
    }
    oa += d->trans_a ? r0 : r0 * d->lda;
    kn_gemm_desc part = *d;
    part.m = r1 - r0;
    gemm_one(bl, t, &part, a + (size_t)oa * es, b + (size_t)ob * es,
             c + (size_t)((bi * d->m + r0) * d->n) * es);
}

int64_t cpu_gemm_blocks(const kn_gemm_desc *d, int threads) {
    if (d->m == 0 || d->n == 0 || d->batch == 0 || d->k == 0) return 0;
    /* enough batch entries to go round, or a product too small to be worth splitting:
     * whole matrices; else row blocks of at least 32 rows, a few per thread */
    double flops = 2.0 * (double)d->m * (double)d->n * (double)d->k;
    if (threads <= 1 || d->batch >= threads || flops < 4e6) return 1;
    int64_t blocks = d->m / 32 < 2 * threads ? d->m / 32 : 2 * threads;
    return blocks > 1 ? blocks : 1;
}

void cpu_gemm_part(const cpu_blas *bl, kiln_dtype t, const kn_gemm_desc *d, const void *a,
                   const void *b, void *c, int64_t blocks, int64_t begin, int64_t end) {
    for (int64_t it = begin; it < end; it++) {
        int64_t bi = it / blocks, blk = it % blocks;
        int64_t r0 = d->m * blk / blocks, r1 = d->m * (blk + 1) / blocks;
        if (r1 > r0) gemm_rows(bl, t, d, a, b, c, bi, r0, r1);
    }
}

void cpu_gemm(const cpu_blas *bl, kiln_dtype t, const kn_gemm_desc *d, const void *a, const void *b,
              void *c) {
    if (d->m == 0 || d->n == 0 || d->batch == 0) return;
    if (d->k == 0) {
        memset(c, 0, (size_t)(d->batch * d->m * d->n) * kiln_dtype_itemsize(t));
        return;
    }
    cpu_gemm_part(bl, t, d, a, b, c, 1, 0, d->batch);
}

void cpu_permute(kiln_dtype t, const void *src, int r, const int64_t *sdims, const int *perm,
                 void *dst) {
    size_t es = kiln_dtype_itemsize(t);
    int64_t sstride[KILN_MAX_RANK], dims[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0}, total = 1;
    int64_t st = 1;
    for (int a = r - 1; a >= 0; a--) sstride[a] = st, st *= sdims[a];
    for (int i = 0; i < r; i++) dims[i] = sdims[perm[i]], total *= dims[i];
    const char *sp = src;
    char *dp = dst;
    for (int64_t o = 0; o < total; o++) {
        int64_t off = 0;
        for (int i = 0; i < r; i++) off += idx[i] * sstride[perm[i]];
        memcpy(dp + (size_t)o * es, sp + (size_t)off * es, es);
        for (int i = r - 1; i >= 0; i--) { /* odometer over the destination index */
            if (++idx[i] < dims[i]) break;
            idx[i] = 0;
        }
    }
}

/* Scatter-add over the rows [lo, hi) of the table: those rows of out start as the
 * operand's (or zeros), then every update whose index falls among them is added (or
 * multiplied, or min-ed or max-ed: combine), in index order. Parts own disjoint rows, so
 * each row sees the sequential order whatever the threads: the interpreter's bits. A row
 * is combined by a function of restrict parameters (the updates are an input, never the
 * table: only the operand may be written in place), which gcc vectorises; the loop in
 * place was scalar, an overlap of the two rows being possible to it (bench/RESULTS.md,
 * "Segment sums"). */
#define ROW_FN(NAME, K, T, F)                                                                      \
    static inline void row_##NAME##_##K(T *restrict d, const T *restrict u, int64_t n) {           \
        for (int64_t j = 0; j < n; j++) d[j] = F(d[j], u[j]);                                      \
    }
#define SCATTER(NAME, T, ADD, MUL, MIN, MAX)                                                       \
    ROW_FN(NAME, add, T, ADD)                                                                      \
    ROW_FN(NAME, mul, T, MUL)                                                                      \
    ROW_FN(NAME, min, T, MIN)                                                                      \
    ROW_FN(NAME, max, T, MAX)                                                                      \
    KILN_CLONES static void scatter_##NAME(const T *operand, int64_t len, const int64_t lo,        \
                                           const int64_t hi, bool wide, int combine,               \
                                           const void *idx, int64_t n_idx, const T *upd, T *o) {   \
        T *rows = o + lo * len;                                                                    \
        size_t bytes = (size_t)((hi - lo) * len) * sizeof(T);                                      \
        if (!operand)                                                                              \
            memset(rows, 0, bytes);                                                                \
        else if (operand != o)                                                                     \
            memcpy(rows, operand + lo * len, bytes);                                               \
        for (int64_t i = 0; i < n_idx; i++) {                                                      \
            int64_t row = wide ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i];            \
            if (row < lo || row >= hi) continue;                                                   \
            T *dst = o + row * len;                                                                \
            const T *u = upd + i * len;                                                            \
            switch (combine) {                                                                     \
            case KN_ROWS_MUL: row_##NAME##_mul(dst, u, len); break;                                \
            case KN_ROWS_MIN: row_##NAME##_min(dst, u, len); break;                                \
            case KN_ROWS_MAX: row_##NAME##_max(dst, u, len); break;                                \
            default: row_##NAME##_add(dst, u, len); break;                                         \
            }                                                                                      \
        }                                                                                          \
    }
/* Each step rounds to the table's dtype, as the reference's does (16-bit values combine in
 * f32, where the sum of two of them is exact but for far-apart exponents). */
#define ADD_PLAIN(x, y)  ((x) + (y))
#define MUL_PLAIN(x, y)  ((x) * (y))
#define ADD_WRAP32(x, y) ((int32_t)((uint32_t)(x) + (uint32_t)(y)))
#define ADD_WRAP64(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define MUL_WRAP32(x, y) ((int32_t)((uint32_t)(x) * (uint32_t)(y)))
#define MUL_WRAP64(x, y) ((int64_t)((uint64_t)(x) * (uint64_t)(y)))
#define MIN_INT(x, y)    ((x) < (y) ? (x) : (y))
#define MAX_INT(x, y)    ((x) > (y) ? (x) : (y))

/* min and max as the compiled primitives (kiln_min_f32, kiln_max_f32): a NaN operand wins
 * (the first if both), and of -0 and +0 min takes -0 and max +0 (the sign bits or-ed and
 * and-ed). */
#define MIN_MAX_FLOAT(T, U, sfx)                                                                   \
    static inline T min_##sfx(T a, T b) {                                                          \
        if (a < b || a != a) return a;                                                             \
        if (a != b) return b;                                                                      \
        U x, y;                                                                                    \
        memcpy(&x, &a, sizeof x), memcpy(&y, &b, sizeof y), x |= y;                                \
        return memcpy(&a, &x, sizeof x), a;                                                        \
    }                                                                                              \
    static inline T max_##sfx(T a, T b) {                                                          \
        if (a > b || a != a) return a;                                                             \
        if (a != b) return b;                                                                      \
        U x, y;                                                                                    \
        memcpy(&x, &a, sizeof x), memcpy(&y, &b, sizeof y), x &= y;                                \
        return memcpy(&a, &x, sizeof x), a;                                                        \
    }
MIN_MAX_FLOAT(float, uint32_t, f32)
MIN_MAX_FLOAT(double, uint64_t, f64)
#undef MIN_MAX_FLOAT
#define ADD_BF16(x, y) kn_f32_to_bf16(kn_bf16_to_f32(x) + kn_bf16_to_f32(y))
#define MUL_BF16(x, y) kn_f32_to_bf16(kn_bf16_to_f32(x) * kn_bf16_to_f32(y))
#define MIN_BF16(x, y) kn_f32_to_bf16(min_f32(kn_bf16_to_f32(x), kn_bf16_to_f32(y)))
#define MAX_BF16(x, y) kn_f32_to_bf16(max_f32(kn_bf16_to_f32(x), kn_bf16_to_f32(y)))
#define ADD_F16(x, y)  kn_f32_to_f16(kn_f16_to_f32(x) + kn_f16_to_f32(y))
#define MUL_F16(x, y)  kn_f32_to_f16(kn_f16_to_f32(x) * kn_f16_to_f32(y))
#define MIN_F16(x, y)  kn_f32_to_f16(min_f32(kn_f16_to_f32(x), kn_f16_to_f32(y)))
#define MAX_F16(x, y)  kn_f32_to_f16(max_f32(kn_f16_to_f32(x), kn_f16_to_f32(y)))
SCATTER(f32, float, ADD_PLAIN, MUL_PLAIN, min_f32, max_f32)
SCATTER(f64, double, ADD_PLAIN, MUL_PLAIN, min_f64, max_f64)
SCATTER(i32, int32_t, ADD_WRAP32, MUL_WRAP32, MIN_INT, MAX_INT)
SCATTER(i64, int64_t, ADD_WRAP64, MUL_WRAP64, MIN_INT, MAX_INT)
SCATTER(bf16, uint16_t, ADD_BF16, MUL_BF16, MIN_BF16, MAX_BF16)
SCATTER(f16, uint16_t, ADD_F16, MUL_F16, MIN_F16, MAX_F16)

int64_t cpu_scatter_parts(int64_t rows, int64_t row_len, int64_t n_idx, int threads) {
    /* a part's fixed cost is a pass over all the indices: worth it from CPU_SCATTER_PART
     * elements of fill and additions a part, and no more parts than threads (each would
     * pass over the indices once more: 39 parts on one thread took more than twice as long
     * as one part; bench/RESULTS.md, "Scatter-add of rows: no more parts than threads") */
    int64_t work = (rows + n_idx) * row_len, parts = work / CPU_SCATTER_PART;
    /* and a part skips the other parts' indices on a branch it cannot predict: over short
     * rows that costs more than the row's combination (CPU_SCATTER_SPLIT_ROW) */
    if (row_len < CPU_SCATTER_SPLIT_ROW) parts = 1;
    if (parts > CPU_SCATTER_MAX_PARTS) parts = CPU_SCATTER_MAX_PARTS;
    if (parts > threads) parts = threads;
    if (parts > rows) parts = rows;
    return parts < 1 ? 1 : parts;
}

void cpu_scatter_add_rows_part(kiln_dtype t, kiln_dtype it, int combine, const void *operand,
                               int64_t rows, int64_t len, const void *idx, int64_t n_idx,
                               const void *upd, void *out, int64_t parts, int64_t begin,
                               int64_t end) {
    bool wide = it == KILN_DTYPE_I64;
    for (int64_t p = begin; p < end; p++) {
        int64_t lo = rows * p / parts, hi = rows * (p + 1) / parts;
        switch (t) {
        case KILN_DTYPE_F32:
            scatter_f32(operand, len, lo, hi, wide, combine, idx, n_idx, upd, out);
            break;
        case KILN_DTYPE_F64:
            scatter_f64(operand, len, lo, hi, wide, combine, idx, n_idx, upd, out);
            break;
        case KILN_DTYPE_I32:
            scatter_i32(operand, len, lo, hi, wide, combine, idx, n_idx, upd, out);
            break;
        case KILN_DTYPE_I64:
            scatter_i64(operand, len, lo, hi, wide, combine, idx, n_idx, upd, out);
            break;
        case KILN_DTYPE_BF16:
            scatter_bf16(operand, len, lo, hi, wide, combine, idx, n_idx, upd, out);
            break;
        case KILN_DTYPE_F16:
            scatter_f16(operand, len, lo, hi, wide, combine, idx, n_idx, upd, out);
            break;
        default: break; /* refused at compile: cpu_lib_dtype_ok */
        }
    }
}

/* Cumsum: a work item is one row o and one chunk of up to CPU_SCAN_CHUNK columns of the
 * inner axes, scanned along n with a running accumulator per column (f64 for floats, 16-bit
 * ones included, so each output is the exact prefix sum rounded once, as the reference's;
 * wrapping unsigned for integers): consecutive columns side by side, so the inner loop is
 * contiguous and vectorises; with inner = 1 it is a plain sequential scan of the row. Each
 * output is stored right after its input is read, so out may be x. LD widens an element
 * to A, ST narrows the running sum back. */
#define SCAN(NAME, T, A, LD, ST)                                                                   \
    static void scan_##NAME(const T *x, T *out, int64_t n, int64_t inner, int64_t o, int64_t c0,   \
                            int64_t c1, bool reverse) {                                            \
        if (inner == 1) { /* one column: the running sum in a register, not a stack array */       \
            const T *xr = x + o * n;                                                               \
            T *yr = out + o * n;                                                                   \
            A a = 0;                                                                               \
            for (int64_t k = 0; k < n; k++) {                                                      \
                int64_t j = reverse ? n - 1 - k : k;                                               \
                a += LD(xr[j]);                                                                    \
                yr[j] = ST(a);                                                                     \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        A acc[CPU_SCAN_CHUNK] = {0};                                                               \
        for (int64_t k = 0; k < n; k++) {                                                          \
            int64_t at = (o * n + (reverse ? n - 1 - k : k)) * inner;                              \
            for (int64_t c = c0; c < c1; c++) {                                                    \
                acc[c - c0] += LD(x[at + c]);                                                      \
                out[at + c] = ST(acc[c - c0]);                                                     \
            }                                                                                      \
        }                                                                                          \
    }
#define LD_F64(x)  ((double)(x))
#define LD_U64(x)  ((uint64_t)(x))
#define LD_BF16(x) ((double)kn_bf16_to_f32(x))
#define LD_F16(x)  ((double)kn_f16_to_f32(x))
#define ST_F32(a)  ((float)(a))
#define ST_F64(a)  (a)
#define ST_I32(a)  ((int32_t)(uint32_t)(a))
#define ST_I64(a)  ((int64_t)(a))
SCAN(f32, float, double, LD_F64, ST_F32)
SCAN(f64, double, double, LD_F64, ST_F64)
SCAN(i32, int32_t, uint64_t, LD_U64, ST_I32)
SCAN(i64, int64_t, uint64_t, LD_U64, ST_I64)
SCAN(bf16, uint16_t, double, LD_BF16, kn_f64_to_bf16)
SCAN(f16, uint16_t, double, LD_F16, kn_f64_to_f16)

int64_t cpu_cumsum_items(int64_t outer, int64_t inner) {
    return outer * ((inner + CPU_SCAN_CHUNK - 1) / CPU_SCAN_CHUNK);
}

void cpu_cumsum_part(kiln_dtype t, const void *x, void *out, int64_t outer, int64_t n,
                     int64_t inner, bool reverse, int64_t begin, int64_t end) {
    (void)outer;
    int64_t chunks = (inner + CPU_SCAN_CHUNK - 1) / CPU_SCAN_CHUNK;
    for (int64_t it = begin; it < end; it++) {
        int64_t o = it / chunks, c0 = it % chunks * CPU_SCAN_CHUNK;
        int64_t c1 = c0 + CPU_SCAN_CHUNK < inner ? c0 + CPU_SCAN_CHUNK : inner;
        switch (t) {
        case KILN_DTYPE_F32: scan_f32(x, out, n, inner, o, c0, c1, reverse); break;
        case KILN_DTYPE_F64: scan_f64(x, out, n, inner, o, c0, c1, reverse); break;
        case KILN_DTYPE_I32: scan_i32(x, out, n, inner, o, c0, c1, reverse); break;
        case KILN_DTYPE_I64: scan_i64(x, out, n, inner, o, c0, c1, reverse); break;
        case KILN_DTYPE_BF16: scan_bf16(x, out, n, inner, o, c0, c1, reverse); break;
        case KILN_DTYPE_F16: scan_f16(x, out, n, inner, o, c0, c1, reverse); break;
        default: break; /* refused at compile: cpu_lib_dtype_ok */
        }
    }
}

bool cpu_lib_dtype_ok(kn_lib_op op, kiln_dtype t) {
    bool fl =
        t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
    switch (op) {
    case KN_LIB_GEMM:
    case KN_LIB_SCATTER_ADD_ROWS:
    case KN_LIB_CUMSUM: return fl || t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64;
    case KN_LIB_PERMUTE: return kiln_dtype_itemsize(t) != 0; /* moves bytes */
    case KN_LIB_ATTENTION:
    case KN_LIB_ATTENTION_GRAD: return fl;
    case KN_LIB_ARGSORT:
        return fl || t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64 || t == KILN_DTYPE_BOOL;
    case KN_LIB_CHOLESKY:
    case KN_LIB_TRIANGULAR_SOLVE: return t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64;
    default: return false;
    }
}
