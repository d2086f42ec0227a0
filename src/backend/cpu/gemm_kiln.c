/* gemm_kiln.c — kiln's own matrix product (KILN_BLAS=kiln): the GotoBLAS/BLIS blocking
 * (B packed into KC x NR panels, A into MR x KC panels, an MR x NR register tile
 * accumulated in vector registers), written with GCC vector extensions so one source
 * serves every ISA; on x86-64 with GCC the function is cloned for AVX-512 and AVX2 and
 * picked at load time (ifunc).
 *
 * It exists so a product never needs a library, and to measure a generated kernel against
 * the libraries (bench/RESULTS.md): it does not replace them by default.
 *
 * Invariants: packing buffers live on the calling thread's stack (at most ~180 KiB, well
 * inside the 8 MiB glibc gives threads) so the kernel allocates nothing; padded lanes of
 * a packed panel are zeros and the tile's padded rows and columns are never stored. */
#include "blas.h"
#include "clones.h"

#include <string.h>

#define MR 6
#define KC 128
#define MC 48 /* a multiple of MR */

/* T: element type, V: its 64-byte vector, NR: 2 vectors of T, NC: B columns per block. */
#define KILN_GEMM(NAME, T, NC)                                                                     \
    typedef T NAME##_v __attribute__((vector_size(64), aligned(64)));                              \
    enum { NAME##_VL = 64 / sizeof(T), NAME##_NR = 2 * NAME##_VL };                                \
                                                                                                   \
    /* Bp[kc][NR] panels of op(B)[p0:p0+kc, j0:j0+nc], zero beyond n */                            \
    static inline void NAME##_pack_b(bool tb, const T *b, int64_t ldb, int64_t p0, int64_t kc,     \
                                     int64_t j0, int64_t nc, T *bp) {                              \
        for (int64_t jp = 0; jp < nc; jp += NAME##_NR) {                                           \
            int64_t w = nc - jp < NAME##_NR ? nc - jp : NAME##_NR;                                 \
            T *dst = bp + jp * kc;                                                                 \
            for (int64_t p = 0; p < kc; p++, dst += NAME##_NR) {                                   \
                for (int64_t j = 0; j < w; j++)                                                    \
                    dst[j] =                                                                       \
                        tb ? b[(j0 + jp + j) * ldb + p0 + p] : b[(p0 + p) * ldb + j0 + jp + j];    \
                for (int64_t j = w; j < NAME##_NR; j++) dst[j] = 0;                                \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Ap[kc][MR] panels of op(A)[i0:i0+mc, p0:p0+kc], zero beyond m */                            \
    static inline void NAME##_pack_a(bool ta, const T *a, int64_t lda, int64_t i0, int64_t mc,     \
                                     int64_t p0, int64_t kc, T *ap) {                              \
        for (int64_t ip = 0; ip < mc; ip += MR) {                                                  \
            int64_t h = mc - ip < MR ? mc - ip : MR;                                               \
            T *dst = ap + ip * kc;                                                                 \
            for (int64_t p = 0; p < kc; p++, dst += MR) {                                          \
                for (int64_t i = 0; i < h; i++)                                                    \
                    dst[i] =                                                                       \
                        ta ? a[(p0 + p) * lda + i0 + ip + i] : a[(i0 + ip + i) * lda + p0 + p];    \
                for (int64_t i = h; i < MR; i++) dst[i] = 0;                                       \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* C[0:h, 0:w] (+)= the tile of one A panel and one B panel */                                 \
    static inline void NAME##_tile(int64_t kc, const T *ap, const T *bp, T *c, int64_t ldc,        \
                                   int64_t h, int64_t w, bool accumulate) {                        \
        NAME##_v acc[MR][2];                                                                       \
        memset(acc, 0, sizeof acc);                                                                \
        for (int64_t p = 0; p < kc; p++) {                                                         \
            NAME##_v b0, b1;                                                                       \
            memcpy(&b0, bp + p * NAME##_NR, sizeof b0);                                            \
            memcpy(&b1, bp + p * NAME##_NR + NAME##_VL, sizeof b1);                                \
            for (int i = 0; i < MR; i++) {                                                         \
                T av = ap[p * MR + i];                                                             \
                acc[i][0] += av * b0;                                                              \
                acc[i][1] += av * b1;                                                              \
            }                                                                                      \
        }                                                                                          \
        for (int64_t i = 0; i < h; i++) {                                                          \
            T row[NAME##_NR];                                                                      \
            memcpy(row, acc[i], sizeof row);                                                       \
            T *ci = c + i * ldc;                                                                   \
            if (accumulate)                                                                        \
                for (int64_t j = 0; j < w; j++) ci[j] += row[j];                                   \
            else                                                                                   \
                memcpy(ci, row, (size_t)w * sizeof(T));                                            \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    KILN_CLONES static void NAME##_blocked(bool ta, bool tb, int64_t m, int64_t n, int64_t k,      \
                                           const T *a, int64_t lda, const T *b, int64_t ldb, T *c, \
                                           int64_t ldc) {                                          \
        _Alignas(64) T bp[KC * NC];                                                                \
        _Alignas(64) T ap[KC * MC];                                                                \
        if (k == 0) {                                                                              \
            for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof(T));         \
            return;                                                                                \
        }                                                                                          \
        for (int64_t j0 = 0; j0 < n; j0 += NC) {                                                   \
            int64_t nc = n - j0 < NC ? n - j0 : NC;                                                \
            for (int64_t p0 = 0; p0 < k; p0 += KC) {                                               \
                int64_t kc = k - p0 < KC ? k - p0 : KC;                                            \
                NAME##_pack_b(tb, b, ldb, p0, kc, j0, nc, bp);                                     \
                for (int64_t i0 = 0; i0 < m; i0 += MC) {                                           \
                    int64_t mc = m - i0 < MC ? m - i0 : MC;                                        \
                    NAME##_pack_a(ta, a, lda, i0, mc, p0, kc, ap);                                 \
                    for (int64_t jp = 0; jp < nc; jp += NAME##_NR)                                 \
                        for (int64_t ip = 0; ip < mc; ip += MR)                                    \
                            NAME##_tile(kc, ap + ip * kc, bp + jp * kc,                            \
                                        c + (i0 + ip) * ldc + j0 + jp, ldc,                        \
                                        mc - ip < MR ? mc - ip : MR,                               \
                                        nc - jp < NAME##_NR ? nc - jp : NAME##_NR, p0 > 0);        \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* the clones' resolver stays local (a static function): only this symbol is global */         \
    void cpu_kiln_##NAME(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,            \
                         int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc) {                \
        NAME##_blocked(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);                                   \
    }

/* NC: a multiple of NR; bp is KC * NC elements (128 KiB for both types) */
KILN_GEMM(sgemm, float, 256)
KILN_GEMM(dgemm, double, 128)
