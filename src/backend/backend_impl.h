/* backend_impl.h — the table of functions a backend provides (DESIGN §3). Code above the
 * backends (src/compile/, src/runtime/) reaches a device only through this table: memory, compiling
 * a program and launching its kernels, the library kernels (one generic slot: gemm, permute,
 * scatter-add, cumsum, attention) and waiting.
 * Adding a backend is one table plus its entry in registry.c.
 *
 * A backend is a const table of function pointers plus an opaque per-context state that
 * the backend itself owns. kiln never stores mutable backend data in globals or on the
 * context: whatever a backend needs (the CPU: its C compiler's identity and cache
 * statistics, its thread pool; a GPU: driver handles and streams) hangs off `state`, made
 * by `open` and released by `close`. `open` runs for every context, so it must be cheap:
 * anything slow (probing a compiler, starting threads) waits until first needed.
 *
 * Every slot says whether it is required and what kiln does when an optional slot is NULL.
 * Device indices are the backend's own (0 .. device_count-1), not the context's. Every
 * slot may be called from several threads at once.
 *
 * Memory contract (what a device's allocator relies on): region_alloc returns `size` bytes
 * aligned to at least `align` (a power of two, at least 256) or reports a refusal; the
 * allocator never writes into device memory, so a region need not be host-addressable.
 * region_free gets back exactly the pointer and size that region_alloc produced.
 *
 * Program contract (what compile/ and runtime/ rely on): a program is one translation unit holding
 * every loop kernel of an executable, printed by src/codegen in the backend's dialect. Kernel i is
 * named "kiln_k<i>" and computes work items [begin, end) of its output given its buffers (its
 * inputs in order, then its outputs), as src/codegen/cgen.h describes; items are independent, so a
 * backend may run them in any order and in parallel. The layouts a library kernel sees (gemm
 * strides, what to permute) are decided by the compiler's lowering (src/codegen/lower_dot.c), never
 * by the backend. */
#ifndef KILN_BACKEND_IMPL_H
#define KILN_BACKEND_IMPL_H

#include "base/base.h"

/* Threads per block of every CUDA kernel: the printer's warp and block code
 * (src/codegen/print_cuda.c) and the GPU backend's launches agree on it. */
#define KN_CUDA_BLOCK 256
/* A CUDA reduction to one value or a few, split over blocks (src/codegen/cgen.h): the parts
 * per value, and the scratch bytes of one part's partial result (the value, then its NaN
 * flag at byte 8). 512 parts keep every multiprocessor of a large GPU busy; the parts are a
 * constant, not the grid, so the result does not depend on the device. */
#define KN_CUDA_PARTS      512
#define KN_CUDA_PART_BYTES 16

/* A compiled program: each backend defines its own struct behind this name. */
typedef struct kn_program kn_program;

/* What compiling a program tells the executable (kiln_executable_info). */
typedef struct kn_program_info {
    size_t code_bytes; /* size of the machine code (the CPU: the shared object) */
    bool from_cache;   /* served from a cache without running the compiler */
} kn_program_info;

/* A batched matrix product over strided operands: C[b] = op(A[b]) * op(B[b]) for every
 * batch index b (an odometer over bdims, last axis fastest), C row-major [batch, M, N]
 * and contiguous. A[b] starts at a + sum(b_i * bstride_a[i]) elements and is [M, K] with
 * row stride lda (or stored [K, M] when trans_a); likewise B is [K, N] / [N, K] with ldb.
 * M, N, K or batch may be 0 (K = 0 writes zeros). Integers wrap, as every integer op in
 * kiln does. */
typedef struct kn_gemm_desc {
    bool trans_a, trans_b;
    int64_t lda, ldb;
    int nb; /* batch axes */
    int64_t bdims[KILN_MAX_RANK];
    int64_t bstride_a[KILN_MAX_RANK], bstride_b[KILN_MAX_RANK];
    int64_t batch, m, n, k; /* batch = product of bdims */
} kn_gemm_desc;

/* What one attention call computes (ir.h, IR_ATTN_*): the forward pass (KN_LIB_ATTENTION),
 * or a part of its gradient (KN_LIB_ATTENTION_GRAD). With s_ij = scale q_i . k_j over the
 * keys query i sees, p_ij = exp(s_ij - lse_i), dp_ij = ct_i . v_j and
 * ds_ij = p_ij (dp_ij - delta_i):
 *   LSE     lse_i = log sum_j exp(s_ij)               [batch, t, heads], the sum's type
 *   GRAD_Q  dq_i = scale sum_j ds_ij k_j              q's shape and dtype
 *   GRAD_K  dk_j = scale sum_(i, heads of j's group) ds_ij q_i    k's
 *   GRAD_V  dv_j = sum_(i, heads of j's group) p_ij ct_i          v's
 * where lse and delta ([batch, t, heads], the sum's type: f32 for f32, bf16 and f16, f64
 * for f64) are LSE's result and rowsum(ct * out). */
typedef enum kn_attention_kind {
    KN_ATTN_FORWARD,
    KN_ATTN_LSE,
    KN_ATTN_GRAD_Q,
    KN_ATTN_GRAD_K,
    KN_ATTN_GRAD_V,
} kn_attention_kind;

/* One dot_product_attention (include/kiln.h): q [batch, t, heads, h], k [batch, s,
 * kv_heads, h], v [batch, s, kv_heads, hv], out [batch, t, heads, hv], all contiguous
 * row-major, query head n reading key/value head n / (heads / kv_heads); or one part of
 * its gradient (kind, above), whose ct is out's shape. */
typedef struct kn_attention_desc {
    kiln_dtype dtype; /* f32, f64, bf16 or f16: q's, k's, v's (lse and delta: the sum's) */
    kn_attention_kind kind;
    int64_t batch, t, s, heads, kv_heads, h, hv;
    double scale;
    bool causal; /* query i sees keys j <= i */
    double fill; /* with causal, the score of a key j > i: -inf (not there) or finite;
                  * always -inf for the gradient's kinds (a finite fill is expanded) */
} kn_attention_desc;

/* ---- options: what each backend's open receives ----
 * Each backend has a plain struct of its own settings. kiln_context_create (runtime/context.c)
 * fills them once from kiln_context_options and the KILN_* environment, whose precedence
 * base/config.c resolves, and open copies what it keeps: no backend reads ctx->config. */

/* The disk cache of compiled objects (objcache.h), one folder and one cap shared by the
 * backends of a context. */
typedef struct kn_cache_options {
    char dir[1024];     /* KILN_CACHE_DIR, absolute (made so when the context is made) */
    uint64_t max_bytes; /* KILN_CACHE_MAX_BYTES; 0: no disk cache */
} kn_cache_options;

/* The CPU backend's settings (src/backend/cpu/). */
typedef struct kn_cpu_options {
    int devices;         /* KILN_CPU_DEVICES: 1 .. KN_MAX_CPU_DEVICES */
    int num_threads;     /* KILN_NUM_THREADS, over all CPU devices; 0: every core */
    kiln_blas blas;      /* KILN_BLAS: the GEMM library */
    char cc[1024];       /* KILN_CC; "": cc, gcc or clang from PATH */
    char cc_flags[1024]; /* KILN_CC_FLAGS: appended to the compiler's flags */
    kn_cache_options cache;
} kn_cpu_options;

/* The CUDA backend's settings (src/backend/cuda/). */
typedef struct kn_cuda_options {
    bool platform_alloc; /* KILN_ALLOCATOR=platform: regions from the stream-ordered pool */
    bool matmul_tf32;    /* KILN_MATMUL_PRECISION=tf32: f32 products on TF32 cores */
    /* KILN_ATTENTION_CUDA_CORES: the fused attention's bf16/f16 products on the CUDA cores */
    bool attention_cuda_cores;
    kn_cache_options cache;
} kn_cuda_options;

/* Every backend's options, one member per backend: a backend's open reads its own. */
typedef struct kn_backend_options {
    kn_cpu_options cpu;
    kn_cuda_options cuda;
} kn_backend_options;

/* A dst = transpose(src, perm) of a contiguous row-major array of `rank` axes `dims`: dst
 * axis i is src axis perm[i]. Packs a dot operand that no strided view reads. */
typedef struct kn_permute_desc {
    int rank;
    int64_t dims[KILN_MAX_RANK];
    int perm[KILN_MAX_RANK];
} kn_permute_desc;

/* out = operand ([rows, row_len]); then out[idx[i], :] += upd[i, :] (or *=, min, max:
 * combine) for i < n_idx in order, skipping indices outside [0, rows); idx_dtype is i32
 * or i64. out may be operand itself (a scatter planned in place): the copy is then
 * skipped. operand NULL: out starts as zeros (all bytes 0; a gather's gradient). Each
 * row's updates happen in index order, whatever the threads, so the result is the
 * interpreter's bits. */
typedef struct kn_scatter_desc {
    kiln_dtype idx_dtype;
    int64_t rows, row_len, n_idx;
    int combine; /* kn_rows_combine: add (0), or the node's mul, min or max */
} kn_scatter_desc;

/* How scatter_add_rows combines an update into its row (the node's rows flags, ir.h): the
 * same order of updates for all. Float min and max are NaN if either is (the first one's
 * if both), and of -0 and +0 max is +0 and min -0, as the compiled primitives'
 * (kiln_max_f32). */
typedef enum kn_rows_combine { KN_ROWS_ADD, KN_ROWS_MUL, KN_ROWS_MIN, KN_ROWS_MAX } kn_rows_combine;

/* Prefix sums of x viewed as [outer, n, inner] (row-major) along its middle axis:
 * out[o, j, i] = sum of x[o, k, i] over k <= j (k >= j when reverse). Floats add in a
 * running f64 sum, in order, and round each output once; integers wrap: the reference
 * interpreter's bits. out may be x itself (planned in place). */
typedef struct kn_cumsum_desc {
    int64_t outer, n, inner;
    bool reverse;
} kn_cumsum_desc;

/* Positions that sort x viewed as [outer, n, inner] (row-major) along its middle axis:
 * out ([outer, k, inner], i32) holds, for each row (o, i), the positions j of its n
 * elements in sorted order, the first k of them. Stable: equal keys keep their order
 * (lower position first), descending too. The order is jax.lax.sort's (-0 == +0, NaNs
 * last and equal) or, with total, IEEE total order (lax.top_k's): ir.h's ARGSORT. out
 * never overlaps x. */
typedef struct kn_sort_desc {
    int64_t outer, n, inner, k;
    bool descending, total;
} kn_sort_desc;

/* A batch of linear algebra calls over row-major matrices (ir.h's KN_LINALG_OPS), each
 * matrix of the batch at its offset of m * m (a) and rows * cols (b, out) elements:
 *   CHOLESKY          a [batch, m, m] -> out, the lower factor of a's lower triangle (of
 *                     (a + a^T) / 2, computed in a's dtype, with symmetrize) with zeros
 *                     above the diagonal; the lower triangle NaN where a pivot is not > 0
 *                     (potrf's failure). rows = cols = m.
 *   TRIANGULAR_SOLVE  a, b [batch, rows, cols] -> out: x with op(a) x = b (left: rows = m)
 *                     or x op(a) = b (cols = m), reading only a's lower or upper triangle
 *                     and its diagonal unless unit (trsm).
 * out may be the operand it replaces (a, or b: planned in place), never the other one. */
typedef struct kn_linalg_desc {
    int64_t batch, m, rows, cols;
    bool left_side, lower, transpose_a, unit_diagonal; /* TRIANGULAR_SOLVE */
    bool symmetrize;                                   /* CHOLESKY */
} kn_linalg_desc;

// clang-format off
/* One convolution node (IR_CONV, ir.h; docs/ops.md "convolution"), in the forward
 * convolution's terms whatever its kind: x [N, G * I, X...] the input, w [G * Og, I, K...]
 * the kernel, y [N, G * Og, Y...] the output, S = ns spatial axes. Output position q reads
 * the dilated, padded input at p = q * stride + k * rd on each spatial axis d, which is x's
 * element (p - lo) / ld when that is a whole number in [0, in); anything else reads 0:
 *   y[n, g * og + o, q...] = sum over i, k... of x[n, g * I + i, that element]
 *                                                * w[g * og + o, i, k...]
 * The three kinds compute y, or one operand's gradient from the other two:
 *   KN_CONV_FORWARD      y = conv(x, w)                          bufs: x, w, y, scratch
 *   KN_CONV_INPUT_GRAD   x[n, c, e] = sum of ct[n, o, q] w[o, i, k] over the (o, q, k)
 *                        whose read is element e of x            bufs: ct, w, x, scratch
 *   KN_CONV_FILTER_GRAD  w[o, i, k] = sum of x(n, that read) ct[n, o, q] over (n, q)
 *                                                                bufs: x, ct, w, scratch
 * (ct: a cotangent of y's shape). Each operand is read, and the result written, through
 * its own element strides per logical axis: [0] the batch axis (O for w), [1] the feature
 * axis (I for w), [2 + d] spatial axis d, so any layout (NCHW, NHWC, the user's specs) is
 * read where it lies. The result is written whole (zeros where nothing is summed). Floats
 * only; 16-bit values accumulate in f32 and round each result once. */
// clang-format on
#define KN_CONV_MAX_SPATIAL 3
_Static_assert(KN_CONV_MAX_SPATIAL == KILN_CONV_MAX_SPATIAL,
               "kn_conv_desc holds every spatial axis kiln_conv_general_dilated takes");
typedef enum kn_conv_kind { KN_CONV_FORWARD, KN_CONV_INPUT_GRAD, KN_CONV_FILTER_GRAD } kn_conv_kind;
typedef struct kn_conv_desc {
    int kind; /* kn_conv_kind */
    int ns;   /* spatial axes, 1 .. KN_CONV_MAX_SPATIAL */
    /* batch, feature groups, input features and output features per group */
    int64_t n, groups, i, og;
    int64_t in[KN_CONV_MAX_SPATIAL], k[KN_CONV_MAX_SPATIAL], out[KN_CONV_MAX_SPATIAL];
    int64_t stride[KN_CONV_MAX_SPATIAL], lo[KN_CONV_MAX_SPATIAL], ld[KN_CONV_MAX_SPATIAL],
        rd[KN_CONV_MAX_SPATIAL];
    /* element strides per logical axis of x, w and y (ct) */
    int64_t xs[KN_CONV_MAX_SPATIAL + 2], ws[KN_CONV_MAX_SPATIAL + 2], ys[KN_CONV_MAX_SPATIAL + 2];
} kn_conv_desc;

/* The library ops (lib_run), each with its buffers in order:
 *   GEMM              a, b, c, scratch           (kn_gemm_desc; floats, i32, i64)
 *   PERMUTE           src, dst                   (kn_permute_desc)
 *   SCATTER_ADD_ROWS  operand or NULL, idx, upd, out, scratch
 *                                                (kn_scatter_desc; floats, i32, i64)
 *   CUMSUM            x, out                     (kn_cumsum_desc; floats, i32, i64)
 *   ATTENTION         q, k, v, out, lse, scratch (kn_attention_desc; floats; lse, when not
 *                                                NULL, also the rows' log-sum-exp, as LSE)
 *   ATTENTION_GRAD    q, k, v, ct, lse, delta, out, scratch
 *                                                (kn_attention_desc, kind LSE or GRAD_*:
 *                                                LSE reads q and k only, the others NULL)
 *   ARGSORT           x, out, scratch            (kn_sort_desc; every dtype)
 *   CONV              (per kind, above), scratch (kn_conv_desc; floats)
 *   CHOLESKY          a, out                     (kn_linalg_desc; f32, f64)
 *   TRIANGULAR_SOLVE  a, b, out                  (kn_linalg_desc; f32, f64)
 * Floats are f32, f64, bf16 and f16: 16-bit ones sum in f32 (or wider) and round each
 * result once, as the reference does; a backend refuses (lib_supports) a dtype it cannot
 * compute, and the compile fails naming op and dtype.
 * ARGSORT's and CONV's scratch, like ATTENTION's, is what lib_scratch asked for (NULL
 * when 0); so are GEMM's and SCATTER_ADD_ROWS's, which a backend may also be given as NULL
 * by a caller outside a compiled program (then it must still compute the op, in whatever
 * way needs no scratch).
 * ATTENTION's scratch is the scratch_bytes the memory plan set aside, what lib_scratch
 * asked for when the program was compiled: a backend whose resources changed since (the
 * CPU's thread count follows the process's affinity) must fit its work into what it got.
 * Its out never overlaps q, k or v, and it must give the reference's values to f32/f64
 * rounding, except that a NaN or infinity in v at a key a query does not see may reach
 * that query (as it reaches every query in the primitive form, and in JAX's). Fusion
 * gives a forward pass the lse buffer of an LSE node over the same q and k (the gradient's
 * log-sum-exp, then saved from the forward pass as FlashAttention-2 saves it). */
typedef enum kn_lib_op {
    KN_LIB_GEMM,
    KN_LIB_PERMUTE,
    KN_LIB_SCATTER_ADD_ROWS,
    KN_LIB_CUMSUM,
    KN_LIB_ATTENTION,
    KN_LIB_ARGSORT,
    KN_LIB_CONV,
    KN_LIB_ATTENTION_GRAD,
    KN_LIB_CHOLESKY,
    KN_LIB_TRIANGULAR_SOLVE,
    KN_LIB_NUM_OPS
} kn_lib_op;

/* One library call, fully computed when the program is compiled. */
typedef struct kn_lib_desc {
    kn_lib_op op;
    kiln_dtype dtype;       /* the values' (attention: also attention.dtype) */
    uint64_t scratch_bytes; /* the scratch buffer's size (lib_scratch); 0: none */
    union {
        kn_gemm_desc gemm;
        kn_permute_desc permute;
        kn_scatter_desc scatter;
        kn_cumsum_desc cumsum;
        kn_attention_desc attention;
        kn_sort_desc sort;
        kn_conv_desc conv;
        kn_linalg_desc linalg;
    };
} kn_lib_desc;

/* "gemm", "permute", "scatter_add_rows", "cumsum", "attention", "argsort", "conv", ...
 * (messages). */
const char *kn_lib_op_name(kn_lib_op op);
/* How many buffers lib_run takes for op (the table above). */
int kn_lib_op_buffers(kn_lib_op op);

/* A kernel the host runs itself over items [begin, end) of bufs (launch_host), with
 * `scratch` (launch_host's scratch_bytes, 64-byte aligned) its own while it runs. */
typedef void (*kn_host_fn)(const void *arg, void *const *bufs, int64_t begin, int64_t end,
                           void *scratch);

typedef struct kn_backend {
    /* Required. Short lower-case name used in messages and device names ("cpu"). */
    const char *name;

    /* Optional; NULL means "c". The language program_compile takes, by name ("c", "cuda"):
     * src/compile/ asks src/codegen for a program in that dialect (cgen_dialect_named). */
    const char *source_language;

    /* Optional; 0 (KILN_ALLOC_MODE_DEFAULT) means PREALLOCATE, which suits a device whose memory
     * is its own. The CPU says GROW: its memory is shared with the rest of the machine. */
    kiln_alloc_mode default_alloc_mode;

    /* Optional; NULL: the backend needs no state and `state` is NULL. Makes the per-context
     * state (driver handles, streams, caches) with the backend's member of opts, which it
     * copies: opts lives only for the call. Sets ctx's message on failure. */
    kiln_status (*open)(kiln_context *ctx, const kn_backend_options *opts, void **state);
    /* Optional; NULL: nothing to release. Called once, after every device of the backend is
     * closed and every program freed; no other call is in flight. */
    void (*close)(kiln_context *ctx, void *state);

    /* Required. How many devices this backend drives (0 is allowed: none present). */
    int (*device_count)(void *state);
    /* Optional. Why the backend has no device (or fewer than the machine has) when that is
     * worth saying ("cuda: cannot load the CUDA driver ..."); "" otherwise. Kept on the
     * context for the message of a request for a device that does not exist. */
    void (*absent_reason)(void *state, char *buf, size_t n);

    /* ---- memory ---- */

    /* Required. Total memory of the device and the part of it that is free now (what a
     * region_alloc could still get, as well as the backend can tell). */
    kiln_status (*memory_info)(void *state, int device, uint64_t *total, uint64_t *free);

    /* Required. A raw region of device memory. Returns KILN_STATUS_OK, or KILN_STATUS_DEVICE_OOM
     * when the device refuses (the allocator then backs off or reports; the backend sets no message
     * for a refusal), or another status with the context's message set. */
    kiln_status (*region_alloc)(void *state, int device, size_t size, size_t align, void **out);
    /* Required. Returns a region; never fails. */
    void (*region_free)(void *state, int device, void *ptr, size_t size);

    /* Optional; NULL: device memory is host memory and a plain memcpy does (the CPU). */
    kiln_status (*copy_h2d)(void *state, int device, void *dst, const void *src, size_t n);
    kiln_status (*copy_d2h)(void *state, int device, void *dst, const void *src, size_t n);
    /* Host offload (memory kinds). Optional both; on a backend whose memory the host
     * addresses (the CPU, copy_h2d NULL) the host pool's regions come from region_alloc
     * and the copies are memcpy. host_region_alloc: a region of host memory the device
     * copies to and from at its full rate (pinned), as region_alloc answers.
     * copy_kinds: n bytes between the device's memory and that host memory (to_host: dst
     * is host memory), ordered after every kernel launched before it and before every one
     * launched after (the compute stream), without waiting for it on the host. */
    kiln_status (*host_region_alloc)(void *state, int device, size_t size, size_t align,
                                     void **out);
    void (*host_region_free)(void *state, int device, void *ptr, size_t size);
    kiln_status (*copy_kinds)(void *state, int device, void *dst, const void *src, size_t n,
                              bool to_host);
    /* Optional, both or neither (NULL: copies between kinds run in order, copy_kinds).
     * copy_kinds_start: copy_kinds's copy on the device's copy queue, after every kernel
     * launched before it, beside those launched after it until copy_kinds_wait; *token
     * names it. copy_kinds_wait: every kernel launched after this call runs after copy
     * `token` completed (the host does not wait); the token is then released. Every started
     * copy is waited for, also after a failure, before the executable's run returns. */
    kiln_status (*copy_kinds_start)(void *state, int device, void *dst, const void *src, size_t n,
                                    bool to_host, int *token);
    kiln_status (*copy_kinds_wait)(void *state, int device, int token);
    /* Optional; NULL: copy_d2h then copy_h2d through a host buffer. */
    kiln_status (*copy_d2d)(void *state, int dst_device, void *dst, int src_device, const void *src,
                            size_t n);

    /* ---- programs ---- */

    /* Optional; NULL: this backend cannot run compiled programs, and kiln_compile for one of
     * its devices fails with KILN_STATUS_UNIMPLEMENTED. Compiles `source` (len bytes, not
     * NUL-terminated necessarily) into a program for `device`, or takes it from the
     * backend's cache; fills *info. The CPU runs the system C compiler and keeps the shared
     * object on disk (cpu/cc.c). Sets ctx's message on failure; *out is NULL then. */
    kiln_status (*program_compile)(void *state, int device, const char *source, size_t len,
                                   kn_program **out, kn_program_info *info);
    /* Required with program_compile. Releases a program; NULL is a no-op. */
    void (*program_free)(void *state, kn_program *prog);
    /* Required with program_compile. The kernel `name` of prog, as a handle that launch
     * takes and that stays valid while prog lives; KILN_STATUS_INTERNAL (message set) when the
     * program has no such kernel. */
    kiln_status (*kernel_get)(void *state, kn_program *prog, const char *name, void **kernel);
    /* Optional; NULL: launching needs nothing made first. Called once per run before its
     * first launch, so that what can fail (the CPU starts its thread pool here on first
     * use) fails before any kernel has written anything. Must be cheap once done: it is on
     * every call's path. Sets ctx's message on failure. */
    kiln_status (*launch_prepare)(void *state, int device);
    /* Required with program_compile. Runs `kernel` over work items [0, items) with the
     * n_bufs pointers `bufs` (the kernel's buffers: its inputs, then its outputs; a CUDA
     * kernel takes them as parameters), in chunks of at least `grain`
     * items wherever it splits the work. May return before the kernel finishes when the
     * backend orders its work (synchronize waits); the CPU runs it on its thread pool and
     * returns when done. A failure (none on the CPU) sets ctx's message. */
    kiln_status (*launch)(void *state, int device, void *kernel, void *const *bufs, int n_bufs,
                          int64_t items, int64_t grain);
    /* Optional; NULL: the device runs no host code (its memory is not the host's). Runs
     * fn(arg, bufs, begin, end, scratch) over items [0, items) in chunks of at least
     * `grain`, where launch would run a compiled kernel, and returns when all are done:
     * the kernels of the first compile tier, which the host runs from their description
     * (src/codegen/kexec.h). Each chunk gets a scratch of scratch_bytes no other chunk
     * uses meanwhile, allocated on the calling thread before any chunk runs (the host
     * allocator is never called from the device's threads): KILN_STATUS_HOST_OOM, the
     * message set and nothing run, when they cannot be. */
    kiln_status (*launch_host)(void *state, int device, kn_host_fn fn, const void *arg,
                               void *const *bufs, int64_t items, int64_t grain,
                               size_t scratch_bytes);

    /* ---- library kernels: the ops that are not generated loops ----
     * Matrix products go to the vendor's BLAS; permute, scatter-add and cumsum are data
     * movement the emitter does not express yet; attention is a fused kernel. They share
     * two slots over kn_lib_desc (above), so a new library op is an enum value and a
     * descriptor here plus a case in each backend that has it, not a new slot. Each op is
     * required only for the programs that need it: kiln_compile fails with
     * KILN_STATUS_UNIMPLEMENTED, naming the op, when lib_supports says no (attention is
     * rewritten into primitives instead). Pointers are device memory of `device`. */

    /* Optional; NULL: the gemm op has no one-time set-up worth hiding. Starts what the
     * first product of `dtype` would otherwise pay once per process (oneDNN generates its
     * kernels in its first call: bench/RESULTS.md, "First calls: where they go, and what was
     * cut"), so that it runs while the program compiles:
     * kiln_compile calls it before program_compile for a program with products of that
     * dtype. The backend may do it on a thread of its own, which program_compile and close
     * wait for. Never fails: what goes wrong is left for the first product to report. */
    void (*gemm_warm)(void *state, int device, kiln_dtype dtype);
    /* Optional; NULL: no library op at all. Whether lib_run can do `op`: any call of it
     * when d is NULL (kiln_compile asks so before fusion, to choose between the fused
     * attention and its primitive form), else the call d describes (d->op == op). Cheap,
     * no side effects; asked only while compiling. */
    bool (*lib_supports)(void *state, int device, kn_lib_op op, const kn_lib_desc *d);
    /* Optional; NULL: no op needs scratch. The scratch bytes one call of d needs (may be
     * 0), asked once per call site by kiln_compile; the memory plan places them and the
     * run passes them as the op's last buffer, with d->scratch_bytes set to this answer. */
    uint64_t (*lib_scratch)(void *state, int device, const kn_lib_desc *d);
    /* Required with lib_supports. Runs d over bufs, laid out as kn_lib_op says per op. A
     * failure sets ctx's message. */
    kiln_status (*lib_run)(void *state, int device, const kn_lib_desc *d, void *const *bufs);

    /* Optional; NULL: every slot above has finished its work when it returns (the CPU).
     * Waits for everything launched on the device; a run calls it before handing its
     * outputs back. */
    kiln_status (*synchronize)(void *state, int device);

    /* ---- device collectives (a GPU communicator, src/comm/nccl.c) ---- */

    /* Optional; NULL: the device offers no stream to a communicator. Makes the device
     * ready and current on the calling thread and gives its compute stream (a CUstream):
     * a collective enqueued there is ordered after the kernels launched before it and
     * before those launched after it. Sets ctx's message on failure. */
    kiln_status (*compute_stream)(void *state, int device, void **stream);
    /* Required with compute_stream. *done: whether everything queued on the compute stream
     * so far has finished. Never waits, so a caller can bound a wait for a collective that
     * never ends (a stalled peer) where synchronize would block. */
    kiln_status (*stream_done)(void *state, int device, bool *done);

    /* ---- tiered compilation (src/runtime/tier.c, docs/performance.md) ---- */

    /* Optional; NULL: one tier, program_compile's (a backend with launch_host runs the
     * first tier itself, from the kernels' descriptions). program_compile, with
     * KN_TIER_CACHED_ONLY: only a look in the backend's cache, returning OK with *out NULL
     * on a miss; with KN_TIER_BACKGROUND: the build runs behind the program's own work
     * (lower priority). */
    kiln_status (*program_compile_tier)(void *state, int device, const char *source, size_t len,
                                        unsigned flags, kn_program **out, kn_program_info *info);
    /* Optional with program_compile_tier; NULL: false. Whether the programs it builds
     * compute each op's expression as the code compiled into this library does (the same
     * compiler, version and flags): the first tier then gives the second's bits, and the
     * default (kiln_context_options.compile_tiers 0) turns tiers on. */
    bool (*tier_same_compiler)(void *state);
} kn_backend;

/* program_compile_tier's flags. */
enum { KN_TIER_CACHED_ONLY = 1u, KN_TIER_BACKGROUND = 2u };

/* The backends compiled into this build, in the order their devices are numbered (the CPU
 * first). The list is constant; *n receives its length. */
const kn_backend *const *backend_list(int *n);

/* The CPU backend (src/backend/cpu/cpu_backend.c). */
extern const kn_backend kn_cpu_backend;
/* The CUDA backend (src/backend/cuda/), loaded at run time: no driver, no device. */
extern const kn_backend kn_cuda_backend;

#endif
