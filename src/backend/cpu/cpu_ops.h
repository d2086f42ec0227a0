/* cpu_ops.h — the CPU backend's hand-written kernels: batched matrix products (OpenBLAS
 * for floats, plain loops with wrapping arithmetic for integers), a strided permute used
 * to bring dot operands into a layout BLAS accepts, and scatter-add of rows. */
#ifndef KILN_CPU_OPS_H
#define KILN_CPU_OPS_H

#include "ir/ir.h"

/* A batched matrix product over strided operands: C[b] = op(A[b]) * op(B[b]) for every
 * batch index b (an odometer over bdims), C row-major [batch, M, N] and contiguous.
 * A[b] starts at a + sum(b_i * bstride_a[i]) elements and is [M, K] with row stride lda
 * (or stored [K, M] when trans_a); likewise B is [K, N] / [N, K] with ldb. */
typedef struct cpu_gemm_desc {
    bool trans_a, trans_b;
    int64_t lda, ldb;
    int nb;
    int64_t bdims[KILN_MAX_RANK];
    int64_t bstride_a[KILN_MAX_RANK], bstride_b[KILN_MAX_RANK];
    int64_t batch, m, n, k;
} cpu_gemm_desc;

void cpu_gemm(kiln_dtype t, const cpu_gemm_desc *d, const void *a, const void *b, void *c);

/* dst = transpose(src, perm): dst axis i is src axis perm[i]. */
void cpu_permute(kiln_dtype t, const void *src, const ir_shape *src_shape, const int *perm,
                 void *dst);

/* out = operand; out[idx[i], :] += upd[i, :] for every i; indices out of range are skipped. */
void cpu_scatter_add_rows(kiln_dtype t, kiln_dtype idx_t, const void *operand, int64_t rows,
                          int64_t row_len, const void *idx, int64_t n_idx, const void *upd,
                          void *out);

#endif
