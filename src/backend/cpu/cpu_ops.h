/* cpu_ops.h — the CPU backend's hand-written kernels: batched matrix products (the
 * context's GEMM provider, blas.h, for floats, plain loops with wrapping arithmetic for integers),
 * a strided permute used to bring dot operands into a layout BLAS accepts, scatter-add of rows,
 * cumsum's scan, the fused attention (cpu_attention.c) and its gradient
 * (cpu_attention_grad.c), and argsort (cpu_sort.c). */
#ifndef KILN_CPU_OPS_H
#define KILN_CPU_OPS_H

#include "backend/backend_impl.h"
#include "blas.h"
#include "pool.h"

/* Whether library op `op` computes dtype t (every dtype kiln has but bool, and attention on
 * floats only): cpu_lib_supports refuses the rest at compile, naming op and dtype, rather
 * than a kernel giving a wrong value. */
bool cpu_lib_dtype_ok(kn_lib_op op, kiln_dtype t);

/* The backend's gemm, permute, scatter_add_rows and cumsum library ops (backend_impl.h
 * says what each computes), without the state and device arguments the CPU does not need. */
void cpu_gemm(const cpu_blas *bl, kiln_dtype t, const kn_gemm_desc *d, const void *a, const void *b,
              void *c);
/* The product as independent work items for a pool of `threads`: batch entries times row
 * blocks (cpu_gemm_blocks blocks per entry; 0: nothing to compute, K = 0 included), and
 * cpu_gemm_part computing items [begin, end) of it. */
int64_t cpu_gemm_blocks(const kn_gemm_desc *d, int threads);
void cpu_gemm_part(const cpu_blas *bl, kiln_dtype t, const kn_gemm_desc *d, const void *a,
                   const void *b, void *c, int64_t blocks, int64_t begin, int64_t end);

/* dst = transpose(src, perm): dst axis i is src axis perm[i]. */
void cpu_permute(kiln_dtype t, const void *src, int rank, const int64_t *dims, const int *perm,
                 void *dst);

/* The cumsum op as independent work items (a row of the outer axes times a chunk of
 * CPU_SCAN_CHUNK inner columns; cpu_cumsum_items of them) and cpu_cumsum_part computing
 * items [begin, end): the same bits however the items are spread over threads. */
#define CPU_SCAN_CHUNK 64
int64_t cpu_cumsum_items(int64_t outer, int64_t inner);
void cpu_cumsum_part(kiln_dtype t, const void *x, void *out, int64_t outer, int64_t n,
                     int64_t inner, bool reverse, int64_t begin, int64_t end);

/* cholesky and triangular_solve (cpu_linalg.c: OpenBLAS's potrf and trsm) over the
 * buffers backend_impl.h names, on pool (NULL: the calling thread). cpu_linalg_fits: the
 * sizes OpenBLAS's int arguments hold (the dtypes are cpu_lib_dtype_ok's). */
bool cpu_linalg_fits(const kn_linalg_desc *l);
void cpu_linalg(kn_pool *pool, const kn_lib_desc *d, void *const *bufs);

/* The attention op (cpu_attention.c): work items of CPU_ATTN_TQ query rows, keys in
 * chunks of CPU_ATTN_SK. cpu_attention_scratch: the bytes `threads` threads need (one
 * slot each); cpu_attention runs on up to `threads` of the pool's threads (pool may be
 * NULL: the calling thread), scratch holding cpu_attention_scratch(d, threads) bytes, and
 * writes the rows' log-sum-exp to lse ([batch, t, heads], f64 for f64 else f32) unless it
 * is NULL. */
#define CPU_ATTN_TQ 64
#define CPU_ATTN_SK 512
uint64_t cpu_attention_scratch(const kn_attention_desc *d, int threads);
/* How many threads' slots `bytes` of scratch hold (a slot is never empty). */
int64_t cpu_attention_slots(const kn_attention_desc *d, uint64_t bytes);
int64_t cpu_attention_items(const kn_attention_desc *d);
void cpu_attention(const cpu_blas *bl, kn_pool *pool, int threads, const kn_attention_desc *d,
                   const void *q, const void *k, const void *v, void *out, void *lse,
                   void *scratch);

/* The attention's gradient (cpu_attention_grad.c), d->kind LSE or GRAD_*: work items of
 * CPU_ATTN_TQ query rows (LSE, GRAD_Q) or key rows (GRAD_K, GRAD_V), the other side in
 * chunks of CPU_ATTN_GK rows; scratch, slots and threads as for the forward above. lse and
 * delta are [batch, t, heads] in the sum's type (f64 for f64, else f32), as is LSE's out;
 * pointers a kind does not read may be NULL. */
#define CPU_ATTN_GK 256
uint64_t cpu_attention_grad_scratch(const kn_attention_desc *d, int threads);
int64_t cpu_attention_grad_slots(const kn_attention_desc *d, uint64_t bytes);
int64_t cpu_attention_grad_items(const kn_attention_desc *d);
void cpu_attention_grad(const cpu_blas *bl, kn_pool *pool, int threads, const kn_attention_desc *d,
                        const void *q, const void *k, const void *v, const void *ct,
                        const void *lse, const void *delta, void *out, void *scratch);

/* The argsort op (cpu_sort.c). cpu_sort_scratch: the bytes `threads` threads need, one
 * slot of cpu_sort_slot_bytes each (0 when no row needs sorting); cpu_sort_part sorts
 * rows [begin, end) of the outer * inner rows with one slot as its workspace. */
uint64_t cpu_sort_scratch(const kn_sort_desc *d, kiln_dtype t, int threads);
uint64_t cpu_sort_slot_bytes(const kn_sort_desc *d, kiln_dtype t);
void cpu_sort_part(kiln_dtype t, const kn_sort_desc *d, const void *x, int32_t *out, void *slot,
                   int64_t begin, int64_t end);

/* out = operand (zeros when operand is NULL); out[idx[i], :] += upd[i, :] for every i in
 * order; indices out of range are skipped. The table's rows are split into `parts` runs of
 * rows (cpu_scatter_parts: a part reads every index once, so a part is at least
 * CPU_SCATTER_PART elements of work, and there are at most CPU_SCATTER_MAX_PARTS and no
 * more than `threads`); part p fills its rows and adds the updates that land in them, so
 * parts run on any threads and every row still sees its updates in index order: the
 * result is the same bits whatever the parts. */
#define CPU_SCATTER_PART      (1 << 17)
#define CPU_SCATTER_MAX_PARTS 64
/* Rows shorter than this are scattered by one part: two parts over rows of 16 f32 took
 * twice one part's time (each mispredicting on about every other index), over rows of 128
 * three quarters of it (bench/RESULTS.md, "Segment sums"). */
#define CPU_SCATTER_SPLIT_ROW 64
int64_t cpu_scatter_parts(int64_t rows, int64_t row_len, int64_t n_idx, int threads);
/* combine (kn_rows_combine): multiplies, or takes the min or max, instead of adding, in
 * the same order. */
void cpu_scatter_add_rows_part(kiln_dtype t, kiln_dtype idx_t, int combine, const void *operand,
                               int64_t rows, int64_t row_len, const void *idx, int64_t n_idx,
                               const void *upd, void *out, int64_t parts, int64_t begin,
                               int64_t end);

#endif
