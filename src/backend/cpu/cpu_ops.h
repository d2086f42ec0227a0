/* cpu_ops.h — the CPU backend's hand-written kernels: batched matrix products (OpenBLAS
 * for floats, plain loops with wrapping arithmetic for integers), a strided permute used
 * to bring dot operands into a layout BLAS accepts, and scatter-add of rows. */
#ifndef KILN_CPU_OPS_H
#define KILN_CPU_OPS_H

#include "ir/ir.h"

/* C[b] = op(A[b]) * op(B[b]) for b < batch, row-major, C is [M, N]. A is [M, K] (or
 * [K, M] when trans_a), B is [K, N] (or [N, K] when trans_b). Batches are contiguous. */
void cpu_gemm(kiln_dtype t, bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n,
              int64_t k, const void *a, const void *b, void *c);

/* dst = transpose(src, perm): dst axis i is src axis perm[i]. */
void cpu_permute(kiln_dtype t, const void *src, const ir_shape *src_shape, const int *perm,
                 void *dst);

/* out = operand; out[idx[i], :] += upd[i, :] for every i; indices out of range are skipped. */
void cpu_scatter_add_rows(kiln_dtype t, kiln_dtype idx_t, const void *operand, int64_t rows,
                          int64_t row_len, const void *idx, int64_t n_idx, const void *upd,
                          void *out);

#endif
