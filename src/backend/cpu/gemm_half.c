/* gemm_half.c — products of bf16 and f16 matrices (blas.h, cpu_half_gemm): f32
 * accumulation and one rounding of each result to the 16-bit type, as XLA's CPU backend
 * and the reference interpreter compute them.
 *
 * The GotoBLAS blocking of gemm_kiln.c, with the loops ordered so that one MC x NC block of
 * C is finished over all of K before it is rounded: its f32 sums stay in a stack buffer
 * (cb) and C itself is written once. MC is large (a few hundred rows) because each block
 * packs its own panels of B: a small MC repacked B for every few rows of A, and that
 * packing, not the multiply-adds, was the product's cost. Packing widens the 16-bit
 * operands to f32, so the portable micro-kernel is gemm_kiln's f32 one (vector extensions,
 * cloned per ISA); on AVX-512 the packing converts 16 values per instruction (F16C's
 * vcvtph2ps for f16, a shift for bf16). Where the CPU has AVX512_BF16 (checked at run
 * time), bf16 operands are packed as pairs along K instead and multiplied with vdpbf16ps,
 * which reads half the bytes and does two multiply-adds per lane: the same f32 sums but for
 * the order of two additions and the flushing of bf16 subnormals to zero (inputs below
 * 2^-126), which the instruction does. There an untransposed A is not packed at all: a
 * pair along K is already one 32-bit word of its row, which the tile broadcasts straight
 * from A. Where the CPU also has AMX-BF16 and the OS grants its tiles, products of more
 * than AMX_MIN_MNK multiply-adds go to the AMX kernel (block_amx) instead, several times
 * the rate of the others. Which of the other two pays depends on the core: on Intel's
 * (Sapphire and Emerald Rapids, also where a hypervisor hides AMX) vdpbf16ps issues at
 * half the rate of an f32 FMA, so it does as many multiply-adds a cycle as the f32
 * kernel and loses to it (bench/RESULTS.md, "bf16 products where AMX is hidden");
 * on AMD's Zen 4 and 5 it issues as fast as the FMA, twice the multiply-adds. So bf16
 * takes vdpbf16ps on AMD and the widening f32 kernel on Intel (half_path); the two give
 * the same sums but for the order of two additions and vdpbf16ps's flushing, within the
 * tests' tolerance, and the choice depends on the CPU alone, so a machine's results do
 * not change from run to run.
 *
 * Invariants: every buffer is on the calling thread's stack (at most ~450 KiB, well inside
 * the 8 MiB glibc gives threads), so the kernel allocates nothing; padded lanes of a panel
 * are zeros and padded rows and columns of a tile are never stored. */
#include "blas.h"
#include "clones.h"
#include "base/half.h"

#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define HALF_X86    1
#define HALF_DPBF16 1
#else
#define HALF_X86    0
#define HALF_DPBF16 0
#endif

#define MR 6
#define NR 32  /* two vectors of 16 f32 */
#define KC 128 /* even: the bf16 pairs never straddle a panel */
#define MC 192 /* a multiple of MR and MRB */
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
#pragma GCC unroll 6
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

/* ------------------------------------------------- AVX-512 packing ---- */

#if HALF_X86
#define TARGET_512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* src[0:n] (n <= 16, zeros past it: a masked load, which never touches memory past n)
 * widened to f32: bf16 by a shift, f16 by vcvtph2ps (exact, as kn_f16_to_f32; a
 * signalling NaN comes out quiet, which no product's result can tell). */
TARGET_512 static inline __m512 widen16(bool bf, const uint16_t *src, int64_t n) {
    __mmask16 m = n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
    __m256i h = _mm256_maskz_loadu_epi16(m, src);
    return bf ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
              : _mm512_cvtph_ps(h);
}

/* dst[p * ld + r] = X[r][p] for r < nr, p < kc, widened, where row r of X starts at
 * src + r * lds and runs along p; rows nr..ld are zero (a panel's padding). */
TARGET_512 static void widen_across(bool bf, const uint16_t *src, int64_t lds, int64_t nr,
                                    int64_t kc, float *dst, int64_t ld) {
    _Alignas(64) float t[16];
    for (int64_t r = 0; r < ld; r++)
        for (int64_t p0 = 0; p0 < kc; p0 += 16) {
            int64_t n = kc - p0 < 16 ? kc - p0 : 16;
            if (r < nr) _mm512_store_ps(t, widen16(bf, src + r * lds + p0, n));
            for (int64_t q = 0; q < n; q++) dst[(p0 + q) * ld + r] = r < nr ? t[q] : 0;
        }
}

/* widen_across for an A panel (ld == MR == 6), 16 values of each row at a time in
 * registers: the scalar stores of widen_across, 96 of them for 16 values of six rows, were
 * the largest cost of a bf16 product outside its multiply-adds (perf; bench/RESULTS.md).
 * The six rows widened, rows r and r + 1 are interleaved into pairs (one double's worth
 * each: unpacklo/hi give pairs q = 0, 1, 4, 5, ... and 2, 3, 6, 7, ...), and each of the
 * six output vectors (8 pairs: p-major, the three pairs of a p side by side) is three
 * two-source permutes blended by mask. The rest of a panel (past the last 16 of kc) goes
 * through widen_across. */
_Static_assert(MR == 6, "widen_across6 interleaves the six rows of an A panel");
TARGET_512 static void widen_across6(bool bf, const uint16_t *src, int64_t lds, int64_t nr,
                                     int64_t kc, float *dst) {
    __m512i idx[6][3];
    __mmask8 sel[6][3];
    for (int j = 0; j < 6; j++)
        for (int s = 0; s < 3; s++) {
            _Alignas(64) int64_t ix[8] = {0};
            unsigned m = 0;
            for (int i = 0; i < 8; i++) {
                int o = 8 * j + i, q = o / 3;
                if (o % 3 != s) continue;
                m |= 1u << i;
                ix[i] = (q % 4 < 2 ? 0 : 8) + q / 4 * 2 + q % 2;
            }
            idx[j][s] = _mm512_load_si512(ix);
            sel[j][s] = (__mmask8)m;
        }
    int64_t full = kc / 16 * 16;
    for (int64_t p0 = 0; p0 < full; p0 += 16) {
        __m512 r[6];
        for (int i = 0; i < 6; i++)
            r[i] = i < nr ? widen16(bf, src + i * lds + p0, 16) : _mm512_setzero_ps();
        __m512d lo[3], hi[3];
        for (int s = 0; s < 3; s++) {
            lo[s] = _mm512_castps_pd(_mm512_unpacklo_ps(r[2 * s], r[2 * s + 1]));
            hi[s] = _mm512_castps_pd(_mm512_unpackhi_ps(r[2 * s], r[2 * s + 1]));
        }
        for (int j = 0; j < 6; j++) {
            __m512d o = _mm512_permutex2var_pd(lo[0], idx[j][0], hi[0]);
            o = _mm512_mask_mov_pd(o, sel[j][1], _mm512_permutex2var_pd(lo[1], idx[j][1], hi[1]));
            o = _mm512_mask_mov_pd(o, sel[j][2], _mm512_permutex2var_pd(lo[2], idx[j][2], hi[2]));
            _mm512_storeu_pd((double *)(dst + p0 * 6) + 8 * j, o);
        }
    }
    if (full < kc) widen_across(bf, src + full, lds, nr, kc - full, dst + full * 6, 6);
}

/* dst[p * ld : p * ld + ld] = src[p * lds : p * lds + w] widened, zeros past w (ld <= 32). */
TARGET_512 static void widen_along(bool bf, const uint16_t *src, int64_t lds, int64_t w, int64_t kc,
                                   float *dst, int64_t ld) {
    __mmask16 lo = ld >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << ld) - 1);
    for (int64_t p = 0; p < kc; p++, src += lds, dst += ld) {
        _mm512_mask_storeu_ps(dst, lo, widen16(bf, src, w));
        if (ld > 16) _mm512_storeu_ps(dst + 16, widen16(bf, src + 16, w - 16));
    }
}

/* pack_b_f32 and pack_a_f32 (below) with the conversions in AVX-512 registers. */
TARGET_512 static void pack_b_f32_512(bool bf, bool tb, const uint16_t *b, int64_t ldb, int64_t p0,
                                      int64_t kc, int64_t j0, int64_t nc, float *bp) {
    for (int64_t jp = 0; jp < nc; jp += NR) {
        int64_t w = nc - jp < NR ? nc - jp : NR;
        if (tb)
            widen_across(bf, b + (j0 + jp) * ldb + p0, ldb, w, kc, bp + jp * kc, NR);
        else
            widen_along(bf, b + p0 * ldb + j0 + jp, ldb, w, kc, bp + jp * kc, NR);
    }
}

TARGET_512 static void pack_a_f32_512(bool bf, bool ta, const uint16_t *a, int64_t lda, int64_t i0,
                                      int64_t mc, int64_t p0, int64_t kc, float *ap) {
    for (int64_t ip = 0; ip < mc; ip += MR) {
        int64_t h = mc - ip < MR ? mc - ip : MR;
        if (ta)
            widen_along(bf, a + p0 * lda + i0 + ip, lda, h, kc, ap + ip * kc, MR);
        else
            widen_across6(bf, a + (i0 + ip) * lda + p0, lda, h, kc, ap + ip * kc);
    }
}

/* Whether this CPU has AVX-512 F, BW and VL (and the OS keeps their state). */
static bool has_avx512(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}
#endif

/* cb[0:mc, 0:nc] = op(A)[i0:i0+mc, :] op(B)[:, j0:j0+nc] in f32; vec: pack with AVX-512. */
KILN_CLONES static void block_f32(bool bf, bool vec, bool ta, bool tb, int64_t k, const uint16_t *a,
                                  int64_t lda, const uint16_t *b, int64_t ldb, int64_t i0,
                                  int64_t mc, int64_t j0, int64_t nc, float *cb) {
    _Alignas(64) float bp[KC * NC];
    _Alignas(64) float ap[KC * MC];
    (void)vec; /* the AVX-512 packing exists only on x86 (HALF_X86) */
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC;
#if HALF_X86
        if (vec) {
            pack_b_f32_512(bf, tb, b, ldb, p0, kc, j0, nc, bp);
            pack_a_f32_512(bf, ta, a, lda, i0, mc, p0, kc, ap);
        } else
#endif
        {
            pack_b_f32(bf, tb, b, ldb, p0, kc, j0, nc, bp);
            pack_a_f32(bf, ta, a, lda, i0, mc, p0, kc, ap);
        }
        for (int64_t jp = 0; jp < nc; jp += NR)
            for (int64_t ip = 0; ip < mc; ip += MR)
                tile_f32(kc, ap + ip * kc, bp + jp * kc, cb + ip * NC + jp, p0 > 0);
    }
}

/* --------------------------------------------------- AVX512_BF16 kernel ---- */

#if HALF_DPBF16
#define MRB         12 /* rows of the bf16 tile: 24 accumulators, two B vectors, a broadcast */
#define TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* The pairs of rows r0 and r1 (r1 NULL: zeros, past an odd kc) of a 16-bit matrix, n <= 16
 * columns from each, as 32-bit words: r0's value low, r1's high; zeros past n. */
TARGET_BF16 static inline __m512i pairs16(const uint16_t *r0, const uint16_t *r1, int64_t n) {
    __mmask16 m = n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
    __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r0));
    if (!r1) return lo;
    __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, r1));
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

/* One 32-bit word of two 16-bit values side by side, from any (2-byte aligned) address. */
typedef uint32_t half_pair __attribute__((aligned(2), may_alias));

/* Bp[kpp][NR][2]: for each pair of K rows, each column's two values side by side (the
 * pairs vdpbf16ps and AMX multiply), zero beyond nc, past an odd kc and from pair kc/2 to
 * kpp (AMX's tiles take 16 pairs at a time). Untransposed, a pair
 * joins two rows of B; transposed (B stored n x k), it is already one word of a row. */
TARGET_BF16 static void pack_b_pairs(bool tb, const uint16_t *b, int64_t ldb, int64_t p0,
                                     int64_t kc, int64_t j0, int64_t nc, int64_t kpp,
                                     uint16_t *bp) {
    int64_t kp = (kc + 1) / 2;
    for (int64_t jp = 0; jp < nc; jp += NR) {
        int64_t w = nc - jp < NR ? nc - jp : NR;
        uint32_t *dst = (uint32_t *)(bp + jp * 2 * kpp);
        memset(dst + kp * NR, 0, (size_t)(kpp - kp) * NR * 4);
        for (int64_t p = 0; p < kp; p++, dst += NR) {
            bool odd = 2 * p + 1 == kc;
            if (!tb) {
                const uint16_t *r0 = b + (p0 + 2 * p) * ldb + j0 + jp;
                _mm512_storeu_si512(dst, pairs16(r0, odd ? NULL : r0 + ldb, w));
                _mm512_storeu_si512(dst + 16, pairs16(r0 + 16, odd ? NULL : r0 + ldb + 16, w - 16));
                continue;
            }
            const uint16_t *c0 = b + (j0 + jp) * ldb + p0 + 2 * p;
            for (int64_t j = 0; j < w; j++)
                dst[j] = odd ? c0[j * ldb] : *(const half_pair *)(c0 + j * ldb);
            for (int64_t j = w; j < NR; j++) dst[j] = 0;
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
            bool odd = 2 * p + 1 == kc;
            if (ta) {
                const uint16_t *r0 = a + (p0 + 2 * p) * lda + i0 + ip;
                _mm512_mask_storeu_epi32(dst, (1u << MRB) - 1,
                                         pairs16(r0, odd ? NULL : r0 + lda, h));
                continue;
            }
            for (int64_t i = 0; i < h; i++) {
                const uint16_t *x = a + (i0 + ip + i) * lda + p0 + 2 * p;
                dst[i] = odd ? x[0] : *(const half_pair *)x;
            }
            for (int64_t i = h; i < MRB; i++) dst[i] = 0;
        }
    }
}

/* cb[0:MRB, 0:NR] (+)= A's rows times one B panel, the pair p of row i the word at
 * ap + p * sp + i * si (in 16-bit units): a packed panel (sp 2 MRB, si 2) or A itself
 * (sp 2, si lda). */
TARGET_BF16 static void tile_bf16(int64_t kp, const uint16_t *ap, int64_t sp, int64_t si,
                                  const uint16_t *bp, float *cb, bool accumulate) {
    __m512 acc[MRB][2]; /* in registers only with the loops over i unrolled: -O2 does not */
#pragma GCC unroll 12
    for (int i = 0; i < MRB; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < kp; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + p * 2 * NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + p * 2 * NR + 32);
#pragma GCC unroll 12
        for (int i = 0; i < MRB; i++) {
            uint32_t w = *(const half_pair *)(ap + p * sp + i * si);
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)w);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
        }
    }
#pragma GCC unroll 12
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

/* An untransposed A's full tiles over an even kc read A in place (two bf16 of a row along K
 * are the pair vdpbf16ps wants); the rest read the packed panel. lda odd still works: the
 * words are loaded unaligned. */
TARGET_BF16 static void block_bf16(bool ta, bool tb, int64_t k, const uint16_t *a, int64_t lda,
                                   const uint16_t *b, int64_t ldb, int64_t i0, int64_t mc,
                                   int64_t j0, int64_t nc, float *cb) {
    _Alignas(64) uint16_t bp[KC * NC];
    _Alignas(64) uint32_t ap[KC / 2 * MC];
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC, kp = (kc + 1) / 2;
        bool direct = !ta && kc % 2 == 0;
        pack_b_pairs(tb, b, ldb, p0, kc, j0, nc, kp, bp);
        if (!direct || mc % MRB) pack_a_pairs(ta, a, lda, i0, mc, p0, kc, ap);
        for (int64_t jp = 0; jp < nc; jp += NR)
            for (int64_t ip = 0; ip < mc; ip += MRB) {
                bool in_place = direct && mc - ip >= MRB;
                const uint16_t *x =
                    in_place ? a + (i0 + ip) * lda + p0 : (const uint16_t *)(ap + ip * kp);
                tile_bf16(kp, x, 2 * (in_place ? 1 : MRB), in_place ? lda : 2, bp + jp * 2 * kp,
                          cb + ip * NC + jp, p0 > 0);
            }
    }
}

/* ------------------------------------------------------------ AMX kernel ---- */

/* With AMX (Sapphire Rapids on), a tile instruction multiplies a 16 x 32 bf16 tile of A by
 * a 32 x 16 one of B (in the pair layout above) into a 16 x 16 f32 tile: 16 vdpbf16ps in
 * one. A block of C is 32 x 32 (four accumulator tiles, two of A, two of B, all 16 rows of
 * 64 bytes: one configuration). It sums each 32-long run of K in the tile unit's own
 * order, and flushes bf16 subnormal inputs and f32 subnormal results to zero; the tests'
 * tolerance for products covers both. Linux hands out the tile state only on request
 * (arch_prctl ARCH_REQ_XCOMP_PERM, once per process; repeating it is harmless), so the
 * path is taken only when that request succeeds. */
#define TARGET_AMX  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))
#define AMX_K       32        /* K per tile */
#define AMX_MIN_MNK (1 << 18) /* smaller products do not pay for the configuration */

/* Ap[MC][KC]: op(A)[i0:i0+mc, p0:p0+kc] row-major, zero past kc up to kcp (a multiple of
 * AMX_K) and from row mc to the next multiple of 32. */
TARGET_AMX static void pack_a_rows(bool ta, const uint16_t *a, int64_t lda, int64_t i0, int64_t mc,
                                   int64_t p0, int64_t kc, int64_t kcp, uint16_t *ap) {
    int64_t rows = (mc + 31) / 32 * 32;
    for (int64_t i = 0; i < rows; i++) {
        uint16_t *dst = ap + i * KC;
        if (i < mc && !ta)
            memcpy(dst, a + (i0 + i) * lda + p0, (size_t)kc * 2);
        else
            for (int64_t p = 0; p < kc; p++) dst[p] = i < mc ? a[(p0 + p) * lda + i0 + i] : 0;
        memset(dst + kc, 0, (size_t)(kcp - kc) * 2);
    }
}

struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

TARGET_AMX static void block_amx(bool ta, bool tb, int64_t k, const uint16_t *a, int64_t lda,
                                 const uint16_t *b, int64_t ldb, int64_t i0, int64_t mc, int64_t j0,
                                 int64_t nc, float *cb) {
    _Alignas(64) uint16_t bp[KC * NC];
    _Alignas(64) uint16_t ap[MC * KC];
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC, kcp = (kc + AMX_K - 1) / AMX_K * AMX_K;
        pack_b_pairs(tb, b, ldb, p0, kc, j0, nc, kcp / 2, bp);
        pack_a_rows(ta, a, lda, i0, mc, p0, kc, kcp, ap);
        for (int64_t jp = 0; jp < nc; jp += NR)
            for (int64_t ip = 0; ip < mc; ip += 32) {
                float *c = cb + ip * NC + jp;
                if (p0 > 0) {
                    _tile_loadd(0, c, NC * 4);
                    _tile_loadd(1, c + 16, NC * 4);
                    _tile_loadd(2, c + 16 * NC, NC * 4);
                    _tile_loadd(3, c + 16 * NC + 16, NC * 4);
                } else {
                    _tile_zero(0);
                    _tile_zero(1);
                    _tile_zero(2);
                    _tile_zero(3);
                }
                const uint16_t *bq = bp + jp * kcp, *aq = ap + ip * KC;
                for (int64_t q = 0; q < kcp; q += AMX_K) {
                    _tile_loadd(4, aq + q, KC * 2);
                    _tile_loadd(5, aq + 16 * KC + q, KC * 2);
                    _tile_loadd(6, bq + q * NR, NR * 4);
                    _tile_loadd(7, bq + q * NR + 32, NR * 4);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
                _tile_stored(0, c, NC * 4);
                _tile_stored(1, c + 16, NC * 4);
                _tile_stored(2, c + 16 * NC, NC * 4);
                _tile_stored(3, c + 16 * NC + 16, NC * 4);
            }
    }
}

/* Whether the CPU has AMX-BF16 (cpuid) and the OS granted this process the tile state:
 * asked once, since cpuid traps to the hypervisor in a VM (asked per product, it was a
 * visible share of a bf16 GPT step's time: bench/RESULTS.md) and the grant is the
 * process's for good. */
static _Atomic int amx_state; /* 0 not asked yet, 1 usable, 2 not */

static bool amx_cpuid(void) {
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 22)) &&
           (edx & (1u << 24));
}

static bool amx_usable(void) {
    int st = amx_state;
    if (!st) {
        bool ok = amx_cpuid() && syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                                         18 /* XTILEDATA */) == 0;
        amx_state = st = ok ? 1 : 2;
    }
    return st == 1;
}

/* Configures the eight tiles (16 rows of 64 bytes each) for this thread; false where the
 * CPU has no AMX-BF16 or the OS does not grant the tile state. */
TARGET_AMX static bool amx_begin(void) {
    if (!amx_usable()) return false;
    /* constant data: gcc 12's _tile_loadconfig tells the compiler it reads only 8 bytes of
     * its operand, so stores into a local configuration could be dropped as dead */
    static const struct amx_config cfg = {
        .palette = 1,
        .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
        .rows = {16, 16, 16, 16, 16, 16, 16, 16},
    };
    _tile_loadconfig(&cfg);
    return true;
}

TARGET_AMX static void amx_end(void) {
    _tile_release();
}

/* Whether this CPU has vdpbf16ps (and the OS keeps AVX-512 state: cpu_supports checks). */
static bool has_dpbf16(void) {
    return __builtin_cpu_supports("avx512bf16") && has_avx512();
}
#endif

/* ------------------------------------------------------------ the product ---- */

static _Atomic int forced_path; /* cpu_half_gemm_force (tests): 0 none */

void cpu_half_gemm_force(cpu_half_path path) {
    forced_path = (int)path;
}

bool cpu_half_gemm_has(cpu_half_path path) {
#if HALF_DPBF16
    if (path == CPU_HALF_DPBF16) return has_dpbf16();
    if (path == CPU_HALF_AMX) return has_dpbf16() && amx_usable();
#endif
    return path == CPU_HALF_AUTO || path == CPU_HALF_F32;
}

#if HALF_DPBF16
/* The kernel bf16 products of m x n x k take (the top of the file says why), before AMX's
 * tile state is asked for. (Elsewhere every product takes the f32 kernel.) */
static cpu_half_path half_path(bool bf16, int64_t m, int64_t n, int64_t k) {
    cpu_half_path f = (cpu_half_path)forced_path;
    if (!bf16) return CPU_HALF_F32;
    if (f != CPU_HALF_AUTO) return cpu_half_gemm_has(f) ? f : CPU_HALF_F32;
    if (!has_dpbf16()) return CPU_HALF_F32;
    if ((double)m * (double)n * (double)k >= AMX_MIN_MNK && cpu_half_gemm_has(CPU_HALF_AMX))
        return CPU_HALF_AMX;
    return __builtin_cpu_is("amd") ? CPU_HALF_DPBF16 : CPU_HALF_F32;
}
#endif

/* C[i0:i0+mc, j0:j0+nc] = cb rounded to the 16-bit type. bf16 is kn_f32_to_bf16 written
 * without a branch, so that gcc vectorises it (cloned per ISA): one rounding an element, as
 * a scalar call with its NaN test was, showed in a bf16 GPT step's profile on the CPU
 * (products of K = 256 do few multiply-adds per element of C; bench/RESULTS.md). */
KILN_CLONES static void store_block(bool bf, const float *cb, int64_t mc, int64_t nc, uint16_t *c,
                                    int64_t ldc) {
    for (int64_t i = 0; i < mc; i++) {
        const float *src = cb + i * NC;
        uint16_t *dst = c + i * ldc;
        if (!bf) {
            for (int64_t j = 0; j < nc; j++) dst[j] = kn_f32_to_f16(src[j]);
            continue;
        }
        for (int64_t j = 0; j < nc; j++) {
            uint32_t u;
            memcpy(&u, &src[j], 4);
            uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, q = (u >> 16) | 0x0040u;
            dst[j] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
        }
    }
}

void cpu_half_gemm(bool bf16, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                   int64_t lda, const uint16_t *b, int64_t ldb, uint16_t *c, int64_t ldc) {
    _Alignas(64) float cb[MC * NC];
#if HALF_DPBF16
    cpu_half_path path = half_path(bf16, m, n, k);
    bool vec = has_avx512(), amx = path == CPU_HALF_AMX && amx_begin();
    bool dp = path == CPU_HALF_DPBF16 || (path == CPU_HALF_AMX && !amx);
#else
    bool dp = false, vec = false;
    (void)dp;
#endif
    for (int64_t j0 = 0; j0 < n; j0 += NC) {
        int64_t nc = n - j0 < NC ? n - j0 : NC;
        for (int64_t i0 = 0; i0 < m; i0 += MC) {
            int64_t mc = m - i0 < MC ? m - i0 : MC;
            if (k == 0) memset(cb, 0, sizeof cb);
#if HALF_DPBF16
            else if (amx)
                block_amx(ta, tb, k, a, lda, b, ldb, i0, mc, j0, nc, cb);
            else if (dp)
                block_bf16(ta, tb, k, a, lda, b, ldb, i0, mc, j0, nc, cb);
#endif
            else
                block_f32(bf16, vec, ta, tb, k, a, lda, b, ldb, i0, mc, j0, nc, cb);
            store_block(bf16, cb, mc, nc, c + i0 * ldc + j0, ldc);
        }
    }
#if HALF_DPBF16
    if (amx) amx_end();
#endif
}
