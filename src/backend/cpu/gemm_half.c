/* gemm_half.c — products of bf16 and f16 matrices (blas.h, cpu_half_gemm): f32
 * accumulation and one rounding of each result to the 16-bit type, as XLA's CPU backend
 * and the reference interpreter compute them.
 *
 * The GotoBLAS blocking of gemm_kiln.c, with the loops ordered so that one MC x NC block of
 * C is finished over all of K before it is rounded: its f32 sums stay in a stack buffer
 * (cb) and C itself is written once. Packing widens the 16-bit operands to f32, so the
 * portable micro-kernel is gemm_kiln's f32 one (vector extensions, cloned per ISA). Where
 * the CPU has AVX512_BF16 (checked at run time), bf16 operands are packed as pairs along K
 * instead and multiplied with vdpbf16ps, which reads half the bytes and does two
 * multiply-adds per lane: the same f32 sums but for the order of two additions and the
 * flushing of bf16 subnormals to zero (inputs below 2^-126), which the instruction does.
 *
 * Invariants: every buffer is on the calling thread's stack (at most ~300 KiB, well inside
 * the 8 MiB glibc gives threads), so the kernel allocates nothing; padded lanes of a panel
 * are zeros and padded rows and columns of a tile are never stored. */
#include "blas.h"
#include "clones.h"
#include "base/half.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#define HALF_DPBF16 1
#else
#define HALF_DPBF16 0
#endif

#define MR 6
#define NR 32  /* two vectors of 16 f32 */
#define KC 128 /* even: the bf16 pairs never straddle a panel */
#define MC 96  /* a multiple of MR */
#define NC 256 /* a multiple of NR */

typedef float v16f __attribute__((vector_size(64), aligned(64)));

/* Element (r, c) of op(X) for X stored row-major with leading dimension ld. */
static inline uint16_t at(const uint16_t *x, bool t, int64_t ld, int64_t r, int64_t c) {
    return t ? x[c * ld + r] : x[r * ld + c];
}

static inline float widen(bool bf, uint16_t h) {
    return bf ? kn_bf16_to_f32(h) : kn_f16_to_f32(h);
}

/* ------------------------------------------------------ portable kernel ---- */

/* Bp[kc][NR] f32 panels of op(B)[p0:p0+kc, j0:j0+nc], zero beyond nc. */
static inline void pack_b_f32(bool bf, bool tb, const uint16_t *b, int64_t ldb, int64_t p0,
                              int64_t kc, int64_t j0, int64_t nc, float *bp) {
    for (int64_t jp = 0; jp < nc; jp += NR) {
        int64_t w = nc - jp < NR ? nc - jp : NR;
        float *dst = bp + jp * kc;
        for (int64_t p = 0; p < kc; p++, dst += NR) {
            for (int64_t j = 0; j < w; j++) dst[j] = widen(bf, at(b, tb, ldb, p0 + p, j0 + jp + j));
            for (int64_t j = w; j < NR; j++) dst[j] = 0;
        }
    }
}

/* Ap[kc][MR] f32 panels of op(A)[i0:i0+mc, p0:p0+kc], zero beyond mc. */
static inline void pack_a_f32(bool bf, bool ta, const uint16_t *a, int64_t lda, int64_t i0,
                              int64_t mc, int64_t p0, int64_t kc, float *ap) {
    for (int64_t ip = 0; ip < mc; ip += MR) {
        int64_t h = mc - ip < MR ? mc - ip : MR;
        float *dst = ap + ip * kc;
        for (int64_t p = 0; p < kc; p++, dst += MR) {
            for (int64_t i = 0; i < h; i++) dst[i] = widen(bf, at(a, ta, lda, i0 + ip + i, p0 + p));
            for (int64_t i = h; i < MR; i++) dst[i] = 0;
        }
    }
}

/* cb[0:MR, 0:NR] (+)= one A panel times one B panel (cb's row stride NC). */
static inline void tile_f32(int64_t kc, const float *ap, const float *bp, float *cb,
                            bool accumulate) {
    v16f acc[MR][2];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kc; p++) {
        v16f b0, b1;
        memcpy(&b0, bp + p * NR, sizeof b0);
        memcpy(&b1, bp + p * NR + 16, sizeof b1);
        for (int i = 0; i < MR; i++) {
            float av = ap[p * MR + i];
            acc[i][0] += av * b0;
            acc[i][1] += av * b1;
        }
    }
    for (int i = 0; i < MR; i++) {
        float row[NR];
        memcpy(row, acc[i], sizeof row);
        float *ci = cb + i * NC;
        if (accumulate)
            for (int j = 0; j < NR; j++) ci[j] += row[j];
        else
            memcpy(ci, row, sizeof row);
    }
}

/* cb[0:mc, 0:nc] = op(A)[i0:i0+mc, :] op(B)[:, j0:j0+nc] in f32. */
KILN_CLONES static void block_f32(bool bf, bool ta, bool tb, int64_t k, const uint16_t *a,
                                  int64_t lda, const uint16_t *b, int64_t ldb, int64_t i0,
                                  int64_t mc, int64_t j0, int64_t nc, float *cb) {
    _Alignas(64) float bp[KC * NC];
    _Alignas(64) float ap[KC * MC];
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC;
        pack_b_f32(bf, tb, b, ldb, p0, kc, j0, nc, bp);
        pack_a_f32(bf, ta, a, lda, i0, mc, p0, kc, ap);
        for (int64_t jp = 0; jp < nc; jp += NR)
            for (int64_t ip = 0; ip < mc; ip += MR)
                tile_f32(kc, ap + ip * kc, bp + jp * kc, cb + ip * NC + jp, p0 > 0);
    }
}

/* --------------------------------------------------- AVX512_BF16 kernel ---- */

#if HALF_DPBF16
#define MRB         12 /* rows of the bf16 tile: 24 accumulators, two B vectors, a broadcast */
#define TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* Bp[kc/2][NR][2]: for each pair of K rows, each column's two values side by side (the
 * pairs vdpbf16ps multiplies), zero beyond nc and past an odd kc. */
TARGET_BF16 static void pack_b_pairs(bool tb, const uint16_t *b, int64_t ldb, int64_t p0,
                                     int64_t kc, int64_t j0, int64_t nc, uint16_t *bp) {
    int64_t kp = (kc + 1) / 2;
    for (int64_t jp = 0; jp < nc; jp += NR) {
        int64_t w = nc - jp < NR ? nc - jp : NR;
        uint16_t *dst = bp + jp * 2 * kp;
        for (int64_t p = 0; p < kp; p++, dst += 2 * NR) {
            for (int64_t j = 0; j < w; j++)
                for (int64_t h = 0; h < 2; h++)
                    dst[2 * j + h] =
                        2 * p + h < kc ? at(b, tb, ldb, p0 + 2 * p + h, j0 + jp + j) : 0;
            for (int64_t j = 2 * w; j < 2 * NR; j++) dst[j] = 0;
        }
    }
}

/* Ap[kc/2][MRB] pairs of op(A)[i0:i0+mc, p0:p0+kc] as 32-bit words, zero beyond mc. */
TARGET_BF16 static void pack_a_pairs(bool ta, const uint16_t *a, int64_t lda, int64_t i0,
                                     int64_t mc, int64_t p0, int64_t kc, uint32_t *ap) {
    int64_t kp = (kc + 1) / 2;
    for (int64_t ip = 0; ip < mc; ip += MRB) {
        int64_t h = mc - ip < MRB ? mc - ip : MRB;
        uint32_t *dst = ap + ip * kp;
        for (int64_t p = 0; p < kp; p++, dst += MRB) {
            for (int64_t i = 0; i < h; i++) {
                uint32_t lo = at(a, ta, lda, i0 + ip + i, p0 + 2 * p);
                uint32_t hi = 2 * p + 1 < kc ? at(a, ta, lda, i0 + ip + i, p0 + 2 * p + 1) : 0;
                dst[i] = lo | hi << 16;
            }
            for (int64_t i = h; i < MRB; i++) dst[i] = 0;
        }
    }
}

TARGET_BF16 static void tile_bf16(int64_t kp, const uint32_t *ap, const uint16_t *bp, float *cb,
                                  bool accumulate) {
    __m512 acc[MRB][2];
    for (int i = 0; i < MRB; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < kp; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + p * 2 * NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + p * 2 * NR + 32);
        for (int i = 0; i < MRB; i++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)ap[p * MRB + i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
        }
    }
    for (int i = 0; i < MRB; i++) {
        float *ci = cb + i * NC;
        if (accumulate) {
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(ci));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(ci + 16));
        }
        _mm512_storeu_ps(ci, acc[i][0]);
        _mm512_storeu_ps(ci + 16, acc[i][1]);
    }
}

TARGET_BF16 static void block_bf16(bool ta, bool tb, int64_t k, const uint16_t *a, int64_t lda,
                                   const uint16_t *b, int64_t ldb, int64_t i0, int64_t mc,
                                   int64_t j0, int64_t nc, float *cb) {
    _Alignas(64) uint16_t bp[KC * NC];
    _Alignas(64) uint32_t ap[KC / 2 * MC];
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC, kp = (kc + 1) / 2;
        pack_b_pairs(tb, b, ldb, p0, kc, j0, nc, bp);
        pack_a_pairs(ta, a, lda, i0, mc, p0, kc, ap);
        for (int64_t jp = 0; jp < nc; jp += NR)
            for (int64_t ip = 0; ip < mc; ip += MRB)
                tile_bf16(kp, ap + ip * kp, bp + jp * 2 * kp, cb + ip * NC + jp, p0 > 0);
    }
}

/* Whether this CPU has vdpbf16ps (and the OS keeps AVX-512 state: cpu_supports checks). */
static bool has_dpbf16(void) {
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
}
#endif

/* ------------------------------------------------------------ the product ---- */

/* C[i0:i0+mc, j0:j0+nc] = cb rounded to the 16-bit type. */
static void store_block(bool bf, const float *cb, int64_t mc, int64_t nc, uint16_t *c,
                        int64_t ldc) {
    for (int64_t i = 0; i < mc; i++)
        for (int64_t j = 0; j < nc; j++)
            c[i * ldc + j] = bf ? kn_f32_to_bf16(cb[i * NC + j]) : kn_f32_to_f16(cb[i * NC + j]);
}

void cpu_half_gemm(bool bf16, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                   int64_t lda, const uint16_t *b, int64_t ldb, uint16_t *c, int64_t ldc) {
    _Alignas(64) float cb[MC * NC];
#if HALF_DPBF16
    bool dp = bf16 && has_dpbf16();
#else
    bool dp = false;
    (void)dp;
#endif
    for (int64_t j0 = 0; j0 < n; j0 += NC) {
        int64_t nc = n - j0 < NC ? n - j0 : NC;
        for (int64_t i0 = 0; i0 < m; i0 += MC) {
            int64_t mc = m - i0 < MC ? m - i0 : MC;
            if (k == 0) memset(cb, 0, sizeof cb);
#if HALF_DPBF16
            else if (dp)
                block_bf16(ta, tb, k, a, lda, b, ldb, i0, mc, j0, nc, cb);
#endif
            else
                block_f32(bf16, ta, tb, k, a, lda, b, ldb, i0, mc, j0, nc, cb);
            store_block(bf16, cb, mc, nc, c + i0 * ldc + j0, ldc);
        }
    }
}
