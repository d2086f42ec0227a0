/* blas.h — the CPU backend's GEMM providers (KILN_BLAS): OpenBLAS (linked), BLIS and
 * oneDNN (loaded with dlopen when chosen, so neither is a build or run dependency), and
 * kiln's own blocked kernel (gemm_kiln.c); bf16 and f16 products are always kiln's own
 * (gemm_half.c).
 *
 * Every provider is called single-threaded from kiln's pool (cpu_backend.c splits a
 * product into batch entries and row blocks), so each one's own threading is set to one
 * thread when it is loaded: process-wide for OpenBLAS and BLIS, and for oneDNN, whose
 * OpenMP thread count is per calling thread, before every call. */
#ifndef KILN_CPU_BLAS_H
#define KILN_CPU_BLAS_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>

/* The providers of one context: which one each float dtype uses, and the entry points of
 * the library loaded for them. Read-only once cpu_blas_open has returned, so pool threads
 * share it without locks. */
typedef struct cpu_blas {
    kiln_blas f32, f64; /* never KILN_BLAS_DEFAULT */
    void *handle;       /* dlopen handle of BLIS or oneDNN; NULL: none loaded */
    /* BLIS's typed API (general strides, so transposes are swapped strides) */
    void (*bli_sgemm)(int, int, int64_t, int64_t, int64_t, const float *, const float *, int64_t,
                      int64_t, const float *, int64_t, int64_t, const float *, float *, int64_t,
                      int64_t);
    void (*bli_dgemm)(int, int, int64_t, int64_t, int64_t, const double *, const double *, int64_t,
                      int64_t, const double *, int64_t, int64_t, const double *, double *, int64_t,
                      int64_t);
    /* oneDNN's row-major sgemm, and the OpenMP runtime it brings */
    int (*dnnl_sgemm)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                      const float *, int64_t, float, float *, int64_t);
    void (*omp_set_num_threads)(int);
} cpu_blas;

/* Resolves `want` (KILN_BLAS_DEFAULT: per dtype by measurement, falling back to OpenBLAS
 * when oneDNN is not installed, and from OpenBLAS to kiln's own kernel where OpenBLAS is
 * behind the CPU) and loads what it needs. A provider asked for by name that cannot be
 * loaded is a KILN_STATUS_CONFIG error naming the library and the package. */
kiln_status cpu_blas_open(kiln_context *ctx, kiln_blas want, cpu_blas *out);

/* Whether OpenBLAS's kernels are behind the CPU: its DYNAMIC_ARCH build chooses a core by
 * the CPU's model number, and a model newer than the library gets the oldest x86-64
 * kernels. Debian 12's OpenBLAS 0.3.21 runs "Prescott" (SSE3) on Intel's model 207
 * (Emerald Rapids), well below kiln's own kernels (bench/RESULTS.md, "OpenBLAS behind the CPU").
 * True when the CPU has AVX2 and FMA (avx2_fma) and `core` (openblas_get_corename()) is none of the
 * cores written for them. */
bool cpu_blas_openblas_behind(const char *core, bool avx2_fma);
void cpu_blas_close(kiln_context *ctx, cpu_blas *b);

/* C = op(A) op(B) on one row-major matrix (C is m x n with row stride ldc), on the calling
 * thread only. op(A) is A (m x k, row stride lda) or, with ta, A stored k x m. */
void cpu_blas_sgemm(const cpu_blas *b, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *bm, int64_t ldb, float *c,
                    int64_t ldc);
void cpu_blas_dgemm(const cpu_blas *b, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const double *a, int64_t lda, const double *bm, int64_t ldb, double *c,
                    int64_t ldc);

/* gemm_kiln.c: kiln's own kernel, the same contract as cpu_blas_sgemm. */
void cpu_kiln_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float *c, int64_t ldc);
void cpu_kiln_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                    const double *b, int64_t ldb, double *c, int64_t ldc);

/* gemm_half.c: C = op(A) op(B) for bf16 (bf16 true) or f16 matrices stored as bits, summed
 * in f32 and rounded once to the type; otherwise the contract of cpu_blas_sgemm. */
void cpu_half_gemm(bool bf16, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                   int64_t lda, const uint16_t *b, int64_t ldb, uint16_t *c, int64_t ldc);
/* The kernels a bf16 product can take: widened to f32 (every CPU; f16 always), vdpbf16ps
 * (AVX512_BF16), AMX tiles (AMX-BF16 where the OS grants them). AUTO picks by CPU (the top
 * of gemm_half.c); cpu_half_gemm_force makes every later product take `path` where the CPU
 * has it (tests: each kernel against the reference on one machine), AUTO again after. */
typedef enum cpu_half_path {
    CPU_HALF_AUTO,
    CPU_HALF_F32,
    CPU_HALF_DPBF16,
    CPU_HALF_AMX
} cpu_half_path;
bool cpu_half_gemm_has(cpu_half_path path);
void cpu_half_gemm_force(cpu_half_path path);

#endif
