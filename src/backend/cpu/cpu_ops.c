/* cpu_ops.c — see cpu_ops.h. Integer products wrap (unsigned arithmetic), as every
 * integer op in kiln does; float products go to OpenBLAS, whose own threads do the work. */
#include "cpu_ops.h"

#include <cblas.h>
#include <string.h>

#define INT_GEMM(T, U)                                                                             \
    static void gemm_##T(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,            \
                         const T *b, T *c) {                                                       \
        for (int64_t i = 0; i < m; i++)                                                            \
            for (int64_t j = 0; j < n; j++) {                                                      \
                U acc = 0;                                                                         \
                for (int64_t p = 0; p < k; p++)                                                    \
                    acc += (U)(ta ? a[p * m + i] : a[i * k + p]) *                                 \
                           (U)(tb ? b[j * k + p] : b[p * n + j]);                                  \
                c[i * n + j] = (T)acc;                                                             \
            }                                                                                      \
    }
INT_GEMM(int32_t, uint32_t)
INT_GEMM(int64_t, uint64_t)

void cpu_gemm(kiln_dtype t, bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k,
              const void *a, const void *b, void *c) {
    size_t es = kiln_dtype_size(t);
    if (m == 0 || n == 0) return;
    if (k == 0) {
        memset(c, 0, (size_t)(batch * m * n) * es);
        return;
    }
    for (int64_t i = 0; i < batch; i++) {
        const char *ai = (const char *)a + (size_t)(i * m * k) * es;
        const char *bi = (const char *)b + (size_t)(i * k * n) * es;
        char *ci = (char *)c + (size_t)(i * m * n) * es;
        enum CBLAS_TRANSPOSE oa = ta ? CblasTrans : CblasNoTrans,
                             ob = tb ? CblasTrans : CblasNoTrans;
        blasint lda = (blasint)(ta ? m : k), ldb = (blasint)(tb ? k : n);
        switch (t) {
        case KILN_F32:
            cblas_sgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0f,
                        (const float *)ai, lda, (const float *)bi, ldb, 0.0f, (float *)ci,
                        (blasint)n);
            break;
        case KILN_F64:
            cblas_dgemm(CblasRowMajor, oa, ob, (blasint)m, (blasint)n, (blasint)k, 1.0,
                        (const double *)ai, lda, (const double *)bi, ldb, 0.0, (double *)ci,
                        (blasint)n);
            break;
        case KILN_I32:
            gemm_int32_t(ta, tb, m, n, k, (const int32_t *)ai, (const int32_t *)bi, (int32_t *)ci);
            break;
        default:
            gemm_int64_t(ta, tb, m, n, k, (const int64_t *)ai, (const int64_t *)bi, (int64_t *)ci);
            break;
        }
    }
}

void cpu_permute(kiln_dtype t, const void *src, const ir_shape *s, const int *perm, void *dst) {
    size_t es = kiln_dtype_size(t);
    int r = s->rank;
    int64_t sstride[KILN_MAX_RANK], dims[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0}, total = 1;
    int64_t st = 1;
    for (int a = r - 1; a >= 0; a--) sstride[a] = st, st *= s->dims[a];
    for (int i = 0; i < r; i++) dims[i] = s->dims[perm[i]], total *= dims[i];
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

#define SCATTER(T, U)                                                                              \
    static void scatter_##T(int64_t rows, int64_t len, int64_t row, const T *u, T *o) {            \
        if (row < 0 || row >= rows) return;                                                        \
        for (int64_t j = 0; j < len; j++) o[row * len + j] = (T)((U)o[row * len + j] + (U)u[j]);   \
    }
SCATTER(float, float)
SCATTER(double, double)
SCATTER(int32_t, uint32_t)
SCATTER(int64_t, uint64_t)

void cpu_scatter_add_rows(kiln_dtype t, kiln_dtype it, const void *operand, int64_t rows,
                          int64_t len, const void *idx, int64_t n_idx, const void *upd, void *out) {
    size_t es = kiln_dtype_size(t);
    if (out != operand) memcpy(out, operand, (size_t)(rows * len) * es);
    for (int64_t i = 0; i < n_idx; i++) {
        int64_t row = it == KILN_I32 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
        const char *u = (const char *)upd + (size_t)(i * len) * es;
        switch (t) {
        case KILN_F32: scatter_float(rows, len, row, (const float *)u, out); break;
        case KILN_F64: scatter_double(rows, len, row, (const double *)u, out); break;
        case KILN_I32: scatter_int32_t(rows, len, row, (const int32_t *)u, out); break;
        default: scatter_int64_t(rows, len, row, (const int64_t *)u, out); break;
        }
    }
}
