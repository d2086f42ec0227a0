/* cpu_linalg.c — the CPU's cholesky and triangular_solve library ops (backend_impl.h,
 * kn_linalg_desc) on OpenBLAS, which the backend links for its products: LAPACK's potrf
 * and CBLAS's trsm. A row-major matrix is its transpose to LAPACK, so the upper factor
 * potrf computes of a column-major matrix is, read row-major, the lower factor kiln wants.
 *
 * Work items are whole matrices of the batch (a small one factored by kiln's own loop,
 * a large one by a blocked factorisation whose panels and updates are the items), and for
 * a solve fixed chunks of right-hand sides (CPU_LINALG_RHS of them, each solved on its own
 * by trsm), on the device's pool: OpenBLAS runs single-threaded inside kiln's threads
 * (blas.c), and every split is fixed by the shapes alone, not the thread count, so the
 * bits do not depend on it. */
#include "clones.h"
#include "cpu_ops.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

/* LAPACK's Cholesky factorisation in OpenBLAS, declared here with the Fortran ABI's
 * hidden length of the character argument (Debian's OpenBLAS installs no lapack.h). */
void spotrf_(const char *uplo, const blasint *n, float *a, const blasint *lda, blasint *info,
             size_t uplo_len);
void dpotrf_(const char *uplo, const blasint *n, double *a, const blasint *lda, blasint *info,
             size_t uplo_len);

/* right-hand sides per work item of a solve */
#define CPU_LINALG_RHS 64

bool cpu_linalg_fits(const kn_linalg_desc *l) {
    return l->m <= INT_MAX && l->rows <= INT_MAX && l->cols <= INT_MAX;
}

typedef struct linalg_call {
    const kn_lib_desc *d;
    const char *a, *b;
    char *out;
    int64_t chunks; /* work items per matrix */
} linalg_call;

/* Matrices up to this order are factored by small_cholesky below, larger ones by potrf
 * (where OpenBLAS's blocking pays: bench/RESULTS.md, "Linear algebra"). */
#define CPU_LINALG_SMALL 24

/* The right-looking Cholesky factorisation of the n x n row-major lower triangle of a, in
 * place: column j scaled by its pivot, then the rows below it updated by an axpy each with
 * the column (copied to col, contiguous), so every inner loop is elementwise over a row
 * and vectorises without reordering a sum. For the small matrices where potrf's blocking
 * and packing cost more than its flops. False where a pivot is not > 0. */
#define SMALL_CHOLESKY(NAME, T, SQRT)                                                              \
    KILN_CLONES static bool NAME(T *a, int64_t n, T *col) {                                        \
        for (int64_t j = 0; j < n; j++) {                                                          \
            T d = a[j * n + j];                                                                    \
            if (!(d > 0)) return false;                                                            \
            d = SQRT(d);                                                                           \
            a[j * n + j] = d;                                                                      \
            T inv = 1 / d;                                                                         \
            for (int64_t i = j + 1; i < n; i++) col[i] = a[i * n + j] *= inv;                      \
            for (int64_t i = j + 1; i < n; i++) {                                                  \
                T c = col[i], *row = a + i * n;                                                    \
                for (int64_t k = j + 1; k <= i; k++) row[k] -= c * col[k];                         \
            }                                                                                      \
        }                                                                                          \
        return true;                                                                               \
    }
SMALL_CHOLESKY(small_cholesky_f32, float, sqrtf)
SMALL_CHOLESKY(small_cholesky_f64, double, sqrt)
#undef SMALL_CHOLESKY

/* The blocked Cholesky of one matrix on the whole pool, for orders from CPU_LINALG_BLOCKED
 * (each matrix of a batch in turn: it has work enough for every thread): block columns of
 * CPU_LINALG_PANEL, each potrf's diagonal block, the panel below it solved against it
 * (trsm, in row chunks) and the trailing lower triangle updated (gemm left of each row
 * chunk's diagonal block, syrk on it), the chunks on the pool. The chunks are fixed by
 * the order alone, so the bits do not depend on the thread count; an update item pairs
 * chunk i with the (equal-work) chunk counted from the end. */
#define CPU_LINALG_BLOCKED 384
#define CPU_LINALG_PANEL   128

typedef struct blocked_call {
    bool f32;
    char *a;          /* the matrix, row-major n x n, factored in place */
    int64_t n, k, kb; /* the block column [k, k + kb) */
} blocked_call;

static char *at(const blocked_call *c, int64_t i, int64_t j) {
    return c->a + (size_t)(i * c->n + j) * (c->f32 ? 4 : 8);
}

/* Row chunk `it` below the diagonal block: L21 = A21 L11^-T. */
static void panel_rows(void *arg, int64_t begin, int64_t end) {
    const blocked_call *c = arg;
    for (int64_t it = begin; it < end; it++) {
        int64_t r0 = c->k + c->kb + it * CPU_LINALG_PANEL;
        int64_t r1 = r0 + CPU_LINALG_PANEL < c->n ? r0 + CPU_LINALG_PANEL : c->n;
        blasint m = (blasint)(r1 - r0), kb = (blasint)c->kb, ld = (blasint)c->n;
        if (c->f32)
            cblas_strsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, m, kb,
                        1.0f, (const float *)at(c, c->k, c->k), ld, (float *)at(c, r0, c->k), ld);
        else
            cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, m, kb, 1.0,
                        (const double *)at(c, c->k, c->k), ld, (double *)at(c, r0, c->k), ld);
    }
}

/* Row chunk b of the trailing matrix: A22[r0:r1, :r1] -= L21[r0:r1] L21[:r1]^T, lower. */
static void update_chunk(const blocked_call *c, int64_t b) {
    int64_t t0 = c->k + c->kb, r0 = t0 + b * CPU_LINALG_PANEL;
    int64_t r1 = r0 + CPU_LINALG_PANEL < c->n ? r0 + CPU_LINALG_PANEL : c->n;
    blasint m = (blasint)(r1 - r0), w = (blasint)(r0 - t0), kb = (blasint)c->kb;
    blasint ld = (blasint)c->n;
    if (c->f32) {
        if (w)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, w, kb, -1.0f,
                        (const float *)at(c, r0, c->k), ld, (const float *)at(c, t0, c->k), ld,
                        1.0f, (float *)at(c, r0, t0), ld);
        cblas_ssyrk(CblasRowMajor, CblasLower, CblasNoTrans, m, kb, -1.0f,
                    (const float *)at(c, r0, c->k), ld, 1.0f, (float *)at(c, r0, r0), ld);
    } else {
        if (w)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, w, kb, -1.0,
                        (const double *)at(c, r0, c->k), ld, (const double *)at(c, t0, c->k), ld,
                        1.0, (double *)at(c, r0, t0), ld);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, m, kb, -1.0,
                    (const double *)at(c, r0, c->k), ld, 1.0, (double *)at(c, r0, r0), ld);
    }
}

static void update_rows(void *arg, int64_t begin, int64_t end) {
    const blocked_call *c = arg;
    int64_t chunks = (c->n - c->k - c->kb + CPU_LINALG_PANEL - 1) / CPU_LINALG_PANEL;
    for (int64_t it = begin; it < end; it++) {
        update_chunk(c, it);
        if (chunks - 1 - it != it) update_chunk(c, chunks - 1 - it);
    }
}

/* potrf's info for the n x n row-major lower triangle at a, factored in place on pool. */
static blasint blocked_cholesky(kn_pool *pool, bool f32, char *a, int64_t n) {
    blocked_call c = {.f32 = f32, .a = a, .n = n};
    for (c.k = 0; c.k < n; c.k += CPU_LINALG_PANEL) {
        c.kb = n - c.k < CPU_LINALG_PANEL ? n - c.k : CPU_LINALG_PANEL;
        blasint kb = (blasint)c.kb, ld = (blasint)n, info = 0;
        if (f32)
            spotrf_("U", &kb, (float *)at(&c, c.k, c.k), &ld, &info, 1);
        else
            dpotrf_("U", &kb, (double *)at(&c, c.k, c.k), &ld, &info, 1);
        if (info) return info;
        int64_t rows = n - c.k - c.kb, chunks = (rows + CPU_LINALG_PANEL - 1) / CPU_LINALG_PANEL;
        if (!rows) break;
        if (pool) {
            pool_parallel_for(pool, chunks, 1, panel_rows, &c);
            pool_parallel_for(pool, (chunks + 1) / 2, 1, update_rows, &c);
        } else {
            panel_rows(&c, 0, chunks);
            update_rows(&c, 0, (chunks + 1) / 2);
        }
    }
    return 0;
}

/* The lower triangle of o, n x n, set to (a + a^T) / 2 in T, tile by tile so that the
 * transposed reads stay in cache. o may be a: the upper triangle is only read (the factor
 * zeroes it last). */
#define SYMMETRIZE(NAME, T)                                                                        \
    KILN_CLONES static void NAME(const T *a, T *o, int64_t n) {                                    \
        enum { TILE = 32 };                                                                        \
        for (int64_t i0 = 0; i0 < n; i0 += TILE)                                                   \
            for (int64_t j0 = 0; j0 <= i0; j0 += TILE) {                                           \
                int64_t i1 = i0 + TILE < n ? i0 + TILE : n;                                        \
                for (int64_t i = i0; i < i1; i++) {                                                \
                    int64_t j1 = j0 + TILE < i + 1 ? j0 + TILE : i + 1;                            \
                    for (int64_t j = j0; j < j1; j++)                                              \
                        o[i * n + j] = (a[i * n + j] + a[j * n + i]) * (T)0.5;                     \
                }                                                                                  \
            }                                                                                      \
    }
SYMMETRIZE(symmetrize_f32, float)
SYMMETRIZE(symmetrize_f64, double)
#undef SYMMETRIZE

/* Matrix `mi` of a batch copied into out (unless it is the operand: in place), or its
 * symmetric part's lower triangle with symmetrize. */
static char *cholesky_copy(const linalg_call *c, int64_t mi) {
    const kn_linalg_desc *l = &c->d->linalg;
    size_t bytes = (size_t)(l->m * l->m) * kiln_dtype_itemsize(c->d->dtype);
    char *o = c->out + (size_t)mi * bytes;
    const char *a = c->a + (size_t)mi * bytes;
    if (l->symmetrize && c->d->dtype == KILN_DTYPE_F32)
        symmetrize_f32((const float *)a, (float *)o, l->m);
    else if (l->symmetrize)
        symmetrize_f64((const double *)a, (double *)o, l->m);
    else if (o != a)
        memcpy(o, a, bytes);
    return o;
}

/* The factor at o after its factorisation gave info: the strict upper triangle zeroed,
 * and the lower triangle NaN where a pivot was not > 0 (info, or a NaN pivot, which
 * potrf lets through). */
static void cholesky_finish(const kn_linalg_desc *l, bool f32, char *o, blasint info) {
    bool ok = info == 0;
    for (int64_t i = 0; ok && i < l->m; i++) {
        double d = f32 ? ((float *)o)[i * l->m + i] : ((double *)o)[i * l->m + i];
        ok = d > 0;
    }
    for (int64_t i = 0; i < l->m; i++)
        for (int64_t j = 0; j < l->m; j++) {
            if (j <= i && ok) continue;
            if (f32)
                ((float *)o)[i * l->m + j] = j > i ? 0.0f : NAN;
            else
                ((double *)o)[i * l->m + j] = j > i ? 0.0 : NAN;
        }
}

/* Matrix `mi` of a batch on this thread: the small factorisation or potrf. */
static void cholesky_one(const linalg_call *c, int64_t mi) {
    const kn_linalg_desc *l = &c->d->linalg;
    char *o = cholesky_copy(c, mi);
    blasint n = (blasint)l->m, info = 0;
    bool f32 = c->d->dtype == KILN_DTYPE_F32;
    if (l->m <= CPU_LINALG_SMALL) {
        double col[CPU_LINALG_SMALL]; /* room for either type's column */
        bool fine = f32 ? small_cholesky_f32((float *)o, l->m, (float *)col)
                        : small_cholesky_f64((double *)o, l->m, col);
        info = fine ? 0 : 1;
    } else if (f32)
        spotrf_("U", &n, (float *)o, &n, &info, 1);
    else
        dpotrf_("U", &n, (double *)o, &n, &info, 1);
    cholesky_finish(l, f32, o, info);
}

/* Chunk `ci` of the right-hand sides of matrix `mi`: columns of b (left side, each
 * column a system) or rows (right side), copied into out unless it is b, then trsm. */
static void solve_one(const linalg_call *c, int64_t mi, int64_t ci) {
    const kn_linalg_desc *l = &c->d->linalg;
    size_t isz = kiln_dtype_itemsize(c->d->dtype);
    int64_t nrhs = l->left_side ? l->cols : l->rows;
    int64_t r0 = ci * CPU_LINALG_RHS, r1 = r0 + CPU_LINALG_RHS < nrhs ? r0 + CPU_LINALG_RHS : nrhs;
    size_t mat = (size_t)(l->rows * l->cols) * isz;
    const char *a = c->a + (size_t)mi * (size_t)(l->m * l->m) * isz;
    const char *b = c->b + (size_t)mi * mat;
    char *o = c->out + (size_t)mi * mat;
    /* the chunk's first element and its rows x cols within the row-major [rows, cols] */
    size_t first = (size_t)(l->left_side ? r0 : r0 * l->cols) * isz;
    int64_t rows = l->left_side ? l->rows : r1 - r0, cols = l->left_side ? r1 - r0 : l->cols;
    if (o != b)
        for (int64_t i = 0; i < rows; i++)
            memcpy(o + first + (size_t)(i * l->cols) * isz, b + first + (size_t)(i * l->cols) * isz,
                   (size_t)cols * isz);
    enum CBLAS_SIDE side = l->left_side ? CblasLeft : CblasRight;
    enum CBLAS_UPLO uplo = l->lower ? CblasLower : CblasUpper;
    enum CBLAS_TRANSPOSE tr = l->transpose_a ? CblasTrans : CblasNoTrans;
    enum CBLAS_DIAG diag = l->unit_diagonal ? CblasUnit : CblasNonUnit;
    if ((l->left_side ? cols : rows) == 1) { /* one system: trsv, which packs nothing */
        /* a column x of op(a) x = b; a row x of x op(a) = b is op(a)^T x^T = b^T */
        enum CBLAS_TRANSPOSE t1 = l->left_side == l->transpose_a ? CblasTrans : CblasNoTrans;
        blasint inc = l->left_side ? (blasint)l->cols : 1;
        if (c->d->dtype == KILN_DTYPE_F32)
            cblas_strsv(CblasRowMajor, uplo, t1, diag, (blasint)l->m, (const float *)a,
                        (blasint)l->m, (float *)(o + first), inc);
        else
            cblas_dtrsv(CblasRowMajor, uplo, t1, diag, (blasint)l->m, (const double *)a,
                        (blasint)l->m, (double *)(o + first), inc);
        return;
    }
    if (c->d->dtype == KILN_DTYPE_F32)
        cblas_strsm(CblasRowMajor, side, uplo, tr, diag, (blasint)rows, (blasint)cols, 1.0f,
                    (const float *)a, (blasint)l->m, (float *)(o + first), (blasint)l->cols);
    else
        cblas_dtrsm(CblasRowMajor, side, uplo, tr, diag, (blasint)rows, (blasint)cols, 1.0,
                    (const double *)a, (blasint)l->m, (double *)(o + first), (blasint)l->cols);
}

static void linalg_items(void *arg, int64_t begin, int64_t end) {
    const linalg_call *c = arg;
    for (int64_t it = begin; it < end; it++) {
        if (c->d->op == KN_LIB_CHOLESKY)
            cholesky_one(c, it);
        else
            solve_one(c, it / c->chunks, it % c->chunks);
    }
}

void cpu_linalg(kn_pool *pool, const kn_lib_desc *d, void *const *bufs) {
    const kn_linalg_desc *l = &d->linalg;
    if (!l->batch || !l->rows || !l->cols) return;
    bool chol = d->op == KN_LIB_CHOLESKY;
    int64_t nrhs = l->left_side ? l->cols : l->rows;
    linalg_call c = {.d = d,
                     .a = bufs[0],
                     .b = chol ? NULL : bufs[1],
                     .out = bufs[chol ? 1 : 2],
                     .chunks = chol ? 1 : (nrhs + CPU_LINALG_RHS - 1) / CPU_LINALG_RHS};
    int64_t items = l->batch * c.chunks;
    if (chol && l->m >= CPU_LINALG_BLOCKED) {
        bool f32 = d->dtype == KILN_DTYPE_F32;
        for (int64_t mi = 0; mi < l->batch; mi++) { /* each on the whole pool */
            char *o = cholesky_copy(&c, mi);
            cholesky_finish(l, f32, o, blocked_cholesky(pool, f32, o, l->m));
        }
        return;
    }
    if (pool && items > 1)
        pool_parallel_for(pool, items, 1, linalg_items, &c);
    else
        linalg_items(&c, 0, items);
}
