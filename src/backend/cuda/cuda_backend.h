/* cuda_backend.h — the GPU backend's state, shared by its files: cuda_backend.c (devices,
 * memory, copies, launches), cuda_program.c (NVRTC, the cubin cache, kernel lookup) and
 * cuda_lib.c (cuBLAS products and kiln's own library kernels) with cuda_attention.c (the
 * fused attention), cuda_sort.c, cuda_scatter.c and cuda_conv.c (convolutions).
 *
 * Invariants: a cu_dev's driver objects exist once `ready` is set (under its lock, by
 * cu_dev_ready) and live until the state is closed; st->n devices were counted at open,
 * st->n_alloc entries are allocated. */
#ifndef KILN_CUDA_BACKEND_H
#define KILN_CUDA_BACKEND_H

#include "backend/backend_impl.h"
#include "cuda_api.h"

#include <pthread.h>
#include <stdatomic.h>

/* cuda_attention.c's kernels: four on the CUDA cores (cu_float_type's order), then from
 * CU_ATTN_TC the four on tensor cores. */
#define CU_ATTN_TC      4
#define CU_ATTN_KERNELS 8
/* cuda_attention_grad.c's: LSE, GRAD_Q, GRAD_K, GRAD_V for bf16 with head sizes up to 64,
 * up to 128, then f16 likewise (cu_attention_grad_kernel). */
#define CU_ATTN_GRAD_KERNELS 16

/* A device's library kernels (cuda_lib.c), loaded together from one program. */
typedef struct cu_libk {
    struct kn_program *prog;
    CUfunction permute[4];        /* by element size: 1, 2, 4, 8 */
    CUfunction scatter[6][2];     /* [f32 f64 i32 i64 bf16 f16][idx i32 i64] (cu_lib.c, lib_type) */
    CUfunction igemm[2];          /* i32, i64 */
    CUfunction gemm_ptrs;         /* a batched product's matrix pointers (cuBLAS's arrays) */
    CUfunction scan[6];           /* cumsum: f32 f64 i32 i64 bf16 f16 */
    struct kn_program *attn_prog; /* cuda_attention.c's, loaded at the first attention */
    /* f32 f64 bf16 f16 on the CUDA cores, then the tensor-core ones: bf16 with head sizes
     * up to 64, up to 128, then f16 likewise (cu_attention_kernel) */
    CUfunction attn[CU_ATTN_KERNELS];
    struct kn_program *attn_grad_prog; /* cuda_attention_grad.c's, at the first gradient */
    CUfunction attn_grad[CU_ATTN_GRAD_KERNELS];
    struct kn_program *sort_prog;    /* cuda_sort.c's, loaded at the first argsort */
    CUfunction sort[7];              /* f32 f64 i32 i64 bf16 f16 bool (CU_SORT_TYPES) */
    struct kn_program *conv_prog;    /* cuda_conv.c's, loaded at the first convolution */
    CUfunction conv[2][4];           /* [the product, a split's sum][f32 f64 bf16 f16] */
    struct kn_program *scatter_prog; /* cuda_scatter.c's, loaded at its first scatter */
    /* [0, 2): the index sorts by index dtype (i32, i64); [2, 8): the row kernels, f32 f64
     * i32 i64 bf16 f16 (CU_SCATTER_TYPES) */
    CUfunction sorted_scatter[8];
} cu_libk;

typedef struct cu_dev {
    CUdevice dev;
    char name[96];
    int cc_major, cc_minor, sms, pools;
    size_t total;
    pthread_mutex_t lock; /* set-up below */
    atomic_bool ready;
    CUcontext cctx; /* the device's primary context, retained */
    CUstream compute, copy;
    CUevent ev_compute, ev_copy; /* ordering between the two streams (under stage_lock) */
    pthread_mutex_t stage_lock;
    void *stage[2]; /* pinned host staging buffers, STAGE_BYTES each, made at first copy */
    CUevent stage_ev[2];
    bool stage_busy[2];
    /* overlapped copies between memory kinds (cuda_copy_kinds_start): each in flight has a
     * token, the index of the event recorded on the copy stream after it (under
     * stage_lock; grown on demand, made at first use) */
    CUevent *kind_ev;
    bool *kind_busy;
    int n_kind_ev;
    cublasHandle_t blas; /* at the first product */
    /* the partial results of split reductions (cgen.h), grown on demand; part_lock keeps a
     * split kernel's two launches together, so another thread's cannot come between */
    pthread_mutex_t part_lock;
    CUdeviceptr part_scratch;
    size_t part_bytes;
    bool lib_ready;
    cu_libk lib;
} cu_dev;

typedef struct cu_state {
    kiln_context *ctx;
    kn_cuda_options opt; /* as open received them */
    cu_driver drv;
    int driver_version;
    int n, n_alloc;
    cu_dev *devs;
    char absent[480];     /* why there is no device (n == 0) */
    pthread_mutex_t lock; /* NVRTC and cuBLAS loading */
    bool nvrtc_tried, blas_tried;
    char nvrtc_why[256], blas_why[256];
    cu_nvrtc nvrtc;
    cu_cublas blas;
} cu_state;

/* KILN_STATUS_BACKEND naming the driver call, its error and what kiln was doing. */
kiln_status cu_fail(cu_state *st, CUresult e, const char *call, const char *what);
#define CU_TRY(st, call, what)                                                                     \
    do {                                                                                           \
        CUresult e_ = (call);                                                                      \
        if (e_ != CUDA_SUCCESS) return cu_fail((st), e_, #call, (what));                           \
    } while (0)

/* Makes device i's context current on this thread, creating its streams and events on
 * first use. Sets the message on failure (the primary context's creation can fail: out of
 * memory, a device in exclusive mode held by another process). */
kiln_status cu_dev_ready(cu_state *st, int i, const char *what);
/* Loads NVRTC once per state; KILN_STATUS_BACKEND naming the library otherwise. */
kiln_status cu_nvrtc_ready(cu_state *st, const char *what);

/* A loop kernel's handle (kernel_get): the kernel, and for a reduction split over blocks
 * (src/codegen/cgen.h) its part kernel, kiln_k<i>_part. Owned by the program. */
typedef struct cu_kernel {
    CUfunction fn, part;
    int64_t part_items, part_bytes; /* the part kernel's items, the scratch's bytes */
    struct cu_kernel *next;         /* the program's handles */
} cu_kernel;

/* cuda_program.c: a program is a loaded module of one device. */
struct kn_program {
    CUmodule mod;
    int device;
    size_t bytes;
    cu_kernel *kernels;
};
kiln_status cu_program_compile(void *state, int device, const char *source, size_t len,
                               kn_program **out, kn_program_info *info);
void cu_program_free(void *state, kn_program *prog);
/* kernel_get: a cu_kernel handle for a printed loop kernel. */
kiln_status cu_kernel_get(void *state, kn_program *prog, const char *name, void **kernel);
/* The function `name` of prog (the library's kernels). */
kiln_status cu_function_get(cu_state *st, kn_program *prog, const char *name, CUfunction *f);

/* cuda_lib.c: the library ops (backend_impl.h, lib_supports and lib_run). */
bool cu_lib_supports(void *state, int device, kn_lib_op op, const kn_lib_desc *d);
kiln_status cu_lib_run(void *state, int device, const kn_lib_desc *d, void *const *bufs);
/* A library program of its own (attention's, argsort's, the sorted scatter's, the
 * convolution's: most programs need none of them), compiled and loaded at the device's
 * first call that needs it, once, under the device's lock: source src (len bytes), its n
 * kernels names[i] into fns[i], the program into *prog. `what` names the call in
 * messages. cu_lib_program_unload releases it when the device's library goes (NULL: no
 * program). */
kiln_status cu_lib_program(cu_state *st, int device, const char *what, const char *src, size_t len,
                           int n, const char *const *names, struct kn_program **prog,
                           CUfunction *fns);
void cu_lib_program_unload(cu_state *st, struct kn_program **prog);
uint64_t cu_lib_scratch(void *state, int device, const kn_lib_desc *d);
/* The dtypes the scatter_add_rows and cumsum kernels take, as indices of their tables in
 * cu_libk (f32 f64 i32 i64 bf16 f16: 0..5); -1 for any other (cu_lib_supports refuses it). */
int cu_lib_type(kiln_dtype t);
/* The index of float dtype t among the kernels made for f32, f64, bf16 and f16, in that
 * order (the fused attention's and the convolution's), -1 for any other dtype. */
int cu_float_type(kiln_dtype t);
void cu_lib_release(cu_state *st, cu_dev *d);

/* cuda_attention.c: the fused attention's kernels, CU_ATTN_THREADS threads a block. */
#define CU_ATTN_THREADS 256
/* Whether the kernel takes a's dtype (f32, f64, bf16, f16: every shape). */
bool cu_attention_supports(const kn_attention_desc *a);
/* The kernel that runs a, an index into kn_cuda_lib's attn: the tensor-core form (4 and
 * up) for bf16 and f16 on compute capability 8.0 or later, H and Hv multiples of 8 up to
 * 128, and every operand 16-byte aligned (`align`: the four pointers or'ed together),
 * unless cuda_cores (KILN_ATTENTION_CUDA_CORES) asks for the CUDA-core form; that form
 * (cu_float_type's index) otherwise. */
int cu_attention_kernel(const kn_attention_desc *a, int cc_major, uintptr_t align, bool cuda_cores);
/* Query rows a block takes in kernel `kernel` (cu_attention_kernel) for dtype a->dtype. */
int64_t cu_attention_block_rows(const kn_attention_desc *a, int kernel);
/* Enqueues a on the device's compute stream (compiling the kernels at the first call);
 * lse, when not NULL, gets the rows' log-sum-exp too ([batch, t, heads], f64 for f64 else
 * f32). */
kiln_status cu_attention_run(cu_state *st, int device, const kn_attention_desc *a, const void *q,
                             const void *k, const void *v, void *out, void *lse);
/* cuda_attention_grad.c: the attention gradient's kinds (backend_impl.h, kn_attention_kind)
 * on tensor cores, CU_ATTN_THREADS threads a block. cu_attention_grad_supports: bf16 or f16
 * on compute capability 8.0 and up, the fill -inf, H and Hv multiples of 8 up to 128 (any
 * alignment). cu_attention_grad_kernel: a's index into kn_cuda_lib's attn_grad.
 * cu_attention_grad_run: enqueues a over b (q, k, v, ct, lse, delta, out) on the compute
 * stream, compiling the kernels at the first call. */
const char *cu_attention_grad_source(size_t *len);
bool cu_attention_grad_supports(const kn_attention_desc *a, int cc_major);
int cu_attention_grad_kernel(const kn_attention_desc *a);
kiln_status cu_attention_grad_run(cu_state *st, int device, const kn_attention_desc *a,
                                  void *const *b);
/* cuda_conv.c: the convolution's kernels (implicit GEMM), CU_CONV_THREADS threads a block. */
#define CU_CONV_THREADS 256
/* The most chunks a filter gradient's reduction is split into (its partial sums' scratch
 * is at most this many copies of the result, in the accumulation type). */
#define CU_CONV_SPLIT 16
/* The kernels' parameter (cuda_conv.c's conv_params, the same layout: int64 fields only):
 * a kind's product per group as the one kernel reads it. Rows, reduction: mixed-radix
 * digits (dims r/kdim, slowest first), each adding its value times ra/ka to A's offset,
 * times ro to the result's, kb to B's, and on spatial axis rsp/ksp (-1: none) mul * digit
 * + add to the position t, whose element of A is t / div when whole and in [0, lim), at
 * stride ss. Columns add cb to B's offset and co to the result's, group g g * ga, gb, go.
 * ak, bc, rf: consecutive threads load A along the reduction, B along the columns, and
 * own the result's rows. The reduction runs in `chunks` of clen indices (filter gradients;
 * 1 otherwise), whose partial sums the second kernel adds. */
typedef struct cu_conv_params {
    int64_t ns, groups, m, cols, red, chunks, clen, nr, nk;
    int64_t rdim[4], ra[4], ro[4], rsp[4], rmul[4], radd[4];
    int64_t kdim[4], ka[4], kb[4], ksp[4], kmul[4], kadd[4];
    int64_t div[KN_CONV_MAX_SPATIAL], lim[KN_CONV_MAX_SPATIAL], ss[KN_CONV_MAX_SPATIAL];
    int64_t cb, co, ga, gb, go, ak, bc, rf;
} cu_conv_params;
_Static_assert(KN_CONV_MAX_SPATIAL + 1 == 4,
               "cu_conv_params' digit arrays: the batch (or feature) digit and one per spatial "
               "axis, as the kernel source's conv_params declares them");
/* Whether the kernels take c (1 to 3 spatial axes, sizes >= 0, strides and dilations >= 1;
 * the caller checks the dtype is a float). */
bool cu_conv_supports(const kn_conv_desc *c);
/* The scratch c needs in dtype t: a split filter gradient's partial sums; 0 otherwise. */
uint64_t cu_conv_scratch(const kn_conv_desc *c, kiln_dtype t);
/* The kernels' parameter for c (what cu_conv_run launches with; tests/test_cuda_emulate.c
 * launches the same); split false: the reduction in one chunk (no scratch). */
void cu_conv_plan(const kn_conv_desc *c, kiln_dtype t, bool split, cu_conv_params *p);
/* Enqueues c on the device's compute stream (compiling the kernels at the first call): a
 * and b the kind's operands, out its result (bufs 0, 1 and 2, backend_impl.h), scratch
 * cu_conv_scratch's bytes, or NULL (then the reduction is not split). */
kiln_status cu_conv_run(void *state, int device, kiln_dtype dtype, const kn_conv_desc *c,
                        const void *a, const void *b, void *out, void *scratch);
/* cuda_sort.c: argsort's kernels, CU_SORT_THREADS threads a block, one per dtype. */
#define CU_SORT_THREADS 256
#define CU_SORT_TYPES   7
/* Whether a kernel takes d's dtype (every dtype kiln has: every shape). */
bool cu_sort_supports(const kn_lib_desc *d);
/* Enqueues argsort d on the device's compute stream (compiling at the first call). */
kiln_status cu_sort_run(cu_state *st, int device, const kn_lib_desc *d, const void *x, void *out);
/* cuda_scatter.c: scatter_add_rows through sorted indices, CU_SCATTER_THREADS threads a
 * block (the caller keeps cuda_lib.c's column kernel where this path does not run). */
#define CU_SCATTER_THREADS 256
#define CU_SCATTER_TYPES   6
/* Positions a block sorts: the source's SCATTER_SHARED, its shared array's length (8 bytes
 * a pair: 32 KiB, under the 48 KiB a block may have statically). */
#define CU_SCATTER_CHUNK 4096
/* The most chunks the sorted path takes (each slot searches every earlier chunk). */
#define CU_SCATTER_MAX_CHUNKS 64
/* Bytes of scratch the sorted scatter needs for c (0 when it would not be used). */
uint64_t cu_scatter_scratch(const kn_scatter_desc *c);
/* Adds the updates of scatter_add_rows c into out (which already holds the operand or zeros),
 * on the compute stream; false in *used when it did not run (the caller then runs the column
 * kernel). */
kiln_status cu_scatter_sorted_run(cu_state *st, int device, kiln_dtype dtype,
                                  const kn_scatter_desc *c, const void *idx, const void *upd,
                                  void *out, void *scratch, uint64_t scratch_bytes, bool *used);
/* The CUDA source (for tests). */
const char *cu_scatter_source(size_t *len);
/* Grid size for `items` blocks' worth of work on device d. */
unsigned cu_grid(const cu_dev *d, int64_t items);

#endif
