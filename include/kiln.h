/* kiln.h — the public API of kiln, a memory-aware array runtime for C.
 *
 * A program is traced into a graph with the builder functions below (kiln_add,
 * kiln_dot_general, ...), which check shapes and dtypes at each call. A finished graph
 * can be evaluated by the reference interpreter (kiln_interpret) and, later, compiled.
 *
 * Names: functions are kiln_<object>_<verb>, enum values KILN_<TYPE>_<VALUE> (TYPE: the
 * enum's type name without kiln_). One verb per action: an object made by kiln_*_create is
 * destroyed with kiln_*_destroy; memory is freed (kiln_device_alloc's with
 * kiln_device_free, strings kiln returns with kiln_string_free); a call that fills the
 * caller's struct is kiln_<object>_get_<what>.
 *
 * Ownership: a context owns nothing the caller created: destroy graphs, arrays, executables
 * and jits before destroying the context that made them. Strings returned by
 * kiln_*_to_string, *_report, *_json and *_svg are freed with kiln_string_free.
 *
 * Errors: every fallible call returns a kiln_status. The message that goes with it
 * (op, shapes, sizes, variable names, user file and line) is kept on the context per
 * calling thread, as errno is: kiln_last_error(ctx) reads the message of the calling
 * thread's last failing call on ctx, so threads sharing a context never read each other's
 * errors. The graph builder also keeps its first error on the graph: later ops return an
 * invalid value and kiln_graph_finish returns that first error.
 *
 * Threads: calls on one context are safe from several threads, except that one graph is
 * built by one thread at a time.
 */
#ifndef KILN_H
#define KILN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_STATIC_DEFINE)
#define KILN_API
#elif defined(_WIN32)
#ifdef KILN_BUILDING
#define KILN_API __declspec(dllexport)
#else
#define KILN_API __declspec(dllimport)
#endif
#else
#define KILN_API __attribute__((visibility("default")))
#endif

/* Marks an old name kept for programs written against an earlier header (the "Deprecated
 * names" section at the end of this file): GCC and clang warn where it is used, naming
 * its replacement; other compilers accept it silently. */
#if defined(__GNUC__) || defined(__clang__)
#define KILN_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define KILN_DEPRECATED(msg)
#endif

/* The version of this header. The build reads it from here (CMakeLists.txt), so it is the
 * one place the version is written; the shared library's SONAME carries the major part. */
#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 2
#define KILN_VERSION_PATCH 0
#define KILN_MAX_RANK      8

/* The version of the library actually linked, "MAJOR.MINOR.PATCH": compare it with the
 * KILN_VERSION_* of the header a program was built with when it loads libkiln.so. */
KILN_API const char *kiln_version(void);

/* ---------------------------------------------------------------- status ---- */

typedef enum kiln_status {
    KILN_STATUS_OK = 0,
    KILN_STATUS_INVALID_ARGUMENT, /* a bad value passed by the caller */
    KILN_STATUS_SHAPE,            /* shapes that do not fit the op */
    KILN_STATUS_DTYPE,            /* dtypes that do not fit the op */
    KILN_STATUS_HOST_OOM,         /* the host allocator returned NULL */
    KILN_STATUS_DEVICE_OOM,       /* the device allocator could not satisfy a request */
    KILN_STATUS_CONFIG,           /* an option or environment variable could not be used */
    KILN_STATUS_UNIMPLEMENTED,    /* valid, but not supported (yet) on this path */
    KILN_STATUS_INTERNAL,         /* a bug in kiln: please report it */
    KILN_STATUS_IO,               /* a file could not be read or written */
    KILN_STATUS_BACKEND,          /* the device or its driver refused */
    KILN_STATUS_CONSUMED,         /* an array was used after it was donated or freed */
    KILN_STATUS_TIMEOUT,          /* a peer of a collective did not arrive in time */
} kiln_status;

/* A short constant name for a status ("KILN_STATUS_SHAPE"). Never NULL. */
KILN_API const char *kiln_status_name(kiln_status s);

/* --------------------------------------------------------- host memory ---- */

/* All host memory kiln uses for its own objects (graphs, messages, reference arrays)
 * comes through this interface. free and realloc receive the size that was asked for.
 * alloc and realloc return NULL on failure; kiln turns that into KILN_STATUS_HOST_OOM and
 * leaves everything as it was. Pointers must be aligned for any standard type. */
typedef struct kiln_host_allocator {
    void *(*alloc)(void *user, size_t size);
    void *(*realloc)(void *user, void *ptr, size_t old_size, size_t new_size);
    void (*free)(void *user, void *ptr, size_t size);
    void *user;
} kiln_host_allocator;

/* --------------------------------------------------------------- context ---- */

typedef struct kiln_context kiln_context;

/* How device memory is obtained (docs/memory.md). Zero means the device's default:
 * GROW for the CPU, PREALLOCATE for accelerators. */
typedef enum kiln_alloc_mode {
    KILN_ALLOC_MODE_DEFAULT = 0,
    KILN_ALLOC_MODE_GROW,        /* regions added on demand, each >= 1/16 of those held */
    KILN_ALLOC_MODE_PREALLOCATE, /* reserve mem_fraction of the device at first use */
    KILN_ALLOC_MODE_PLATFORM,    /* no caching: every request goes to the backend */
} kiln_alloc_mode;

/* Which library computes the CPU backend's float matrix products (docs/memory.md, "Configuration";
 * bench/RESULTS.md has the measurements). DEFAULT picks per dtype by measurement on the machines
 * kiln was tuned on: oneDNN's sgemm for f32 when libdnnl is installed, OpenBLAS otherwise and for
 * f64. The others are loaded at run time when chosen; one that is not installed fails the first
 * run, naming it. */
typedef enum kiln_blas {
    KILN_BLAS_DEFAULT = 0,
    KILN_BLAS_OPENBLAS, /* linked: always present */
    KILN_BLAS_BLIS,     /* libblis.so.4 (f32 and f64) */
    KILN_BLAS_ONEDNN,   /* libdnnl.so.2's dnnl_sgemm (f32; f64 stays on OpenBLAS) */
    KILN_BLAS_KILN,     /* kiln's own blocked kernel: no library at all */
} kiln_blas;

/* Options for kiln_context_create. Zero-initialise; zero means the default. Every KILN_*
 * environment variable has a field here, named in its comment; the variable overrides the
 * field unless ignore_environment is set (docs/memory.md and README list them). Strings
 * are copied and must be shorter than 1024 bytes; NULL or "" means the default. */
typedef struct kiln_context_options {
    const kiln_host_allocator *host_allocator; /* NULL: malloc/realloc/free */
    kiln_alloc_mode alloc_mode;                /* KILN_ALLOCATOR, KILN_PREALLOCATE */
    double mem_fraction;                       /* KILN_MEM_FRACTION; 0: 0.75 */
    uint64_t memory_limit;                     /* KILN_MEMORY_LIMIT, bytes; 0: none */
    int num_threads;                           /* KILN_NUM_THREADS, <= 4096; 0: all cores */
    const char *cache_dir;                     /* KILN_CACHE_DIR; NULL: user cache */
    bool ignore_environment;                   /* true: read no KILN_* variable */
    /* KILN_CACHE_MAX_BYTES: the kernel disk cache's size cap in bytes; 0: 1 GiB; -1: no
     * disk cache (the variable spells that 0). */
    int64_t cache_max_bytes;
    const char *cc;          /* KILN_CC: C compiler, a path or a name on PATH; NULL: cc, gcc
                                or clang from PATH */
    const char *cc_flags;    /* KILN_CC_FLAGS: extra compiler flags; NULL: none */
    bool verify_passes;      /* KILN_VERIFY_PASSES: IR verifier after every pass (always in
                                debug builds) */
    const char *alloc_trace; /* KILN_ALLOC_TRACE: record device 0's allocations to this file
                                from creation on (kiln_device_trace_start, with its rules on
                                existing files); NULL: none */
    const char *dump_dir;    /* KILN_DUMP: a directory where each compiled program's IR,
                                kernels and memory plan are written; NULL: none */
    /* KILN_MEMORY_BUDGET ("268435456", "256MiB" or "50%"): the default of
     * kiln_compile_options.memory_budget (bytes) or .memory_budget_fraction (the share);
     * 0: none. The variable sets one and clears the other. */
    uint64_t memory_budget;
    double memory_budget_fraction;
    /* KILN_CPU_DEVICES: how many CPU devices the context has (1..64; 0: 1), as XLA's forced
     * host device count: each has its own allocator, stats and an equal share of the
     * KILN_NUM_THREADS threads, so multi-device code runs on any machine (docs/devices.md). */
    int cpu_devices;
    /* KILN_ASYNC: runs, jit calls and copies return once enqueued on their device's queue
     * and their outputs become ready later (docs/devices.md, "the asynchronous model");
     * false: every call has finished its work when it returns. */
    bool async_dispatch;
    kiln_blas blas; /* KILN_BLAS: openblas, blis, onednn or kiln; 0: by dtype */
    /* KILN_MATMUL_PRECISION=tf32 (or tensorfloat32; highest/float32/default: off): f32
     * matrix products on a GPU use TF32 tensor cores (10-bit mantissa inputs), as
     * jax_default_matmul_precision="tensorfloat32" does. Off: exact f32. The CPU ignores it. */
    bool matmul_tf32;
    /* KILN_PROFILE: every executable the context compiles starts with profiling on
     * (kiln_executable_set_profiling) and prints its profile report to stderr when it is
     * destroyed, if it ran. */
    bool profile;
    /* KILN_NCCL_LIBRARY: the NCCL library kiln_comm_create_nccl loads (a path or a soname);
     * NULL: libnccl.so.2 from the loader's search path. */
    const char *nccl_library;

    /* ---- tiered compilation (docs/performance.md, "Compile tiers") ----
     * KILN_COMPILE_TIERS: 2 runs a new program's first calls with no wait for the C
     * compiler, each fused kernel run from its description by a library of precompiled
     * loops (tier 1), while the -O3 build compiles on a thread of the context in the
     * background; it replaces the first between two calls once ready (a call runs one tier
     * from its start to its end). Tier 1 adds every float sum in the -O3 build's order and
     * compiles at once the few kernels whose order only the compiler knows, so where the
     * kernel compiler is the gcc this library was built with (no KILN_CC_FLAGS), every
     * value has the same bits in both tiers (a NaN's sign and payload aside). A program
     * whose -O3 build is in the disk cache starts on it. 1: the -O3 build only, compiled
     * before kiln_compile returns. 0, the default: 2 where the tiers give the same bits,
     * else 1. Loop and branch bodies, and devices that run no host code (CUDA), have one
     * tier. kiln_executable_info.compile_tier says which tier an executable runs now, and
     * the profile counts runs per tier. */
    int compile_tiers;
    /* KILN_ALLOW_EXCESS_PRECISION: the default of kiln_compile_options.allow_excess_precision
     * for every program the context compiles (docs/mixed_precision.md, "Excess precision"). */
    bool allow_excess_precision;
    /* KILN_CONV_IM2COL: every convolution runs as im2col + GEMM (its primitive form) also on
     * a device with a convolution kernel of its own (CUDA's implicit GEMM), which it
     * otherwise takes: to compare the two, or as a fallback (docs/cuda.md). The CPU runs
     * im2col either way. */
    bool conv_im2col;
    /* KILN_ATTENTION_CUDA_CORES: a GPU's fused attention does its bf16 and f16 products on
     * the CUDA cores in f32, as it does f32's, where it would otherwise use tensor cores
     * (compute capability 8.0 and up; the probabilities rounded to the dtype as the second
     * product's operand), and its gradient is the written-out products rather than the
     * tensor-core gradient kernels: to compare the two, or as a fallback (docs/cuda.md). */
    bool attention_cuda_cores;
} kiln_context_options;

/* Creates a context. opts may be NULL. On failure *out is NULL and, when err is not NULL,
 * the message is written there (truncated to err_size, always terminated). */
KILN_API kiln_status kiln_context_create(const kiln_context_options *opts, kiln_context **out,
                                         char *err, size_t err_size);
KILN_API void kiln_context_destroy(kiln_context *ctx);

/* The message of the calling thread's last failing call on ctx ("" if it has none). Valid
 * until that thread's next failing call on ctx or kiln_context_destroy.
 *
 * Per-thread messages were chosen over per-call status objects (IREE's iree_status_t) so
 * that every call keeps returning a plain enum. Each thread that fails a call gets an
 * 8 KiB slot on the context, kept until kiln_context_destroy (a thread id the system
 * reuses reuses its slot); the creating thread's slot is made with the context, so
 * reporting an error never allocates for it. When another thread's slot cannot be
 * allocated (host out of memory) its message goes to one slot shared by such threads,
 * which can change under this pointer: kiln_last_error_copy reads that slot safely. */
KILN_API const char *kiln_last_error(const kiln_context *ctx);
/* Copies the calling thread's last message into buf (always terminated when size > 0);
 * returns its full length. */
KILN_API size_t kiln_last_error_copy(const kiln_context *ctx, char *buf, size_t size);
KILN_API void kiln_string_free(kiln_context *ctx, char *s);

/* ---------------------------------------------------------- device memory ---- */

/* Device memory is managed per device by kiln's allocator (docs/memory.md): best fit with
 * coalescing over regions obtained from the device, in the mode of kiln_alloc_mode. Device
 * 0 is the CPU, whose "device memory" is host RAM. Every call here is thread-safe. */

/* Counters of one device's allocator, named as JAX's Device.memory_stats() names them.
 * Sizes are bytes; allocations count rounded up to a multiple of 256. */
typedef struct kiln_memory_stats {
    uint64_t bytes_in_use;             /* held by live allocations */
    uint64_t peak_bytes_in_use;        /* highest bytes_in_use since creation or reset */
    uint64_t bytes_reserved;           /* obtained from the device (live + cached free) */
    uint64_t peak_bytes_reserved;      /* highest bytes_reserved since creation or reset */
    uint64_t bytes_limit;              /* the most the allocator will reserve */
    uint64_t num_allocs;               /* allocations made so far (a running count) */
    uint64_t largest_alloc_size;       /* the largest single allocation made so far */
    uint64_t largest_free_block_bytes; /* the largest request that fits without growing */
    double fragmentation;              /* 1 - largest free block / free bytes; 0: none free */
    uint64_t num_live_allocs;          /* allocations not yet freed */
    uint64_t num_regions;              /* regions held from the device */
    kiln_alloc_mode mode;              /* the mode in force (never KILN_ALLOC_MODE_DEFAULT) */
    /* What the device itself reports now (a GPU: cuMemGetInfo, whatever else holds it;
     * the CPU: the machine's RAM), beside the allocator's own counts above. */
    uint64_t device_total_bytes;
    uint64_t device_free_bytes;
} kiln_memory_stats;

/* Number of devices of the context (at least 1: device 0 is the CPU). The CPU devices
 * (kiln_context_options.cpu_devices) come first, then those of other backends. */
KILN_API int kiln_device_count(const kiln_context *ctx);
/* A name such as "cpu:0"; NULL for a bad index. Owned by the context. */
KILN_API const char *kiln_device_name(const kiln_context *ctx, int device);

typedef struct kiln_device_info {
    const char *platform; /* "cpu" (later "cuda"); owned by kiln */
    int index;            /* the device's number within its platform: cpu:<index> */
    const char *name;     /* "cpu:1"; owned by the context */
} kiln_device_info;
/* What device `device` (0 .. kiln_device_count - 1) is. */
KILN_API kiln_status kiln_device_get_info(const kiln_context *ctx, int device,
                                          kiln_device_info *out);
/* Waits for all work enqueued on the device so far (runs and copies, and copies into it
 * from other devices; docs/devices.md).
 * Returns the first error of that work since the device's last synchronize, with its full
 * message, and forgets it: the device stays usable. Immediate in synchronous mode. */
KILN_API kiln_status kiln_device_synchronize(kiln_context *ctx, int device);

KILN_API kiln_status kiln_device_get_memory_stats(kiln_context *ctx, int device,
                                                  kiln_memory_stats *out);
/* The same counters for one memory kind of the device (kiln_memory_kind, declared below
 * as an int here: KILN_MEMORY_DEVICE 0 is kiln_device_get_memory_stats, KILN_MEMORY_PINNED_HOST
 * 1 the pool that host offload's arena comes from). A device without a pinned_host kind
 * is KILN_STATUS_UNIMPLEMENTED. */
KILN_API kiln_status kiln_device_get_memory_kind_stats(kiln_context *ctx, int device,
                                                       int memory_kind, kiln_memory_stats *out);
/* Sets peak_bytes_in_use and peak_bytes_reserved to the current values (of both memory
 * kinds). */
KILN_API kiln_status kiln_device_reset_peak(kiln_context *ctx, int device);
/* Returns every wholly free region to the device. released (may be NULL) receives the
 * number of bytes given back. kiln also does this by itself before reporting OOM. */
KILN_API kiln_status kiln_device_trim(kiln_context *ctx, int device, uint64_t *released);

/* Raw device memory, for tests and for users who manage buffers themselves. The pointer is
 * 256-byte aligned; size 0 gives NULL and KILN_STATUS_OK. tag (may be NULL) names the owner in
 * out-of-memory messages and traces; it is copied (the first 23 bytes). Failing with
 * KILN_STATUS_DEVICE_OOM leaves the allocator as it was, apart from wholly free regions it
 * returned to the device to make room; the message lists the largest live allocations. */
KILN_API kiln_status kiln_device_alloc(kiln_context *ctx, int device, size_t size, const char *tag,
                                       void **out);
/* Frees a pointer from kiln_device_alloc on the same device; NULL is a no-op. A pointer the
 * allocator does not know (freed twice, foreign) is KILN_STATUS_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_device_free(kiln_context *ctx, int device, void *ptr);
/* The allocator's state as text (stats, regions, largest live allocations), for logs.
 * Free with kiln_string_free. NULL on a bad device or host OOM. */
KILN_API char *kiln_device_memory_report(kiln_context *ctx, int device);

/* Records every allocation and free of the device to a text file (one event a line: see
 * docs/memory.md) until kiln_device_trace_stop; bench/alloc replays such a file. Live
 * allocations are written first, so the file stands alone. The variable KILN_ALLOC_TRACE
 * starts a trace of device 0 at context creation. path is created, or replaces a previous
 * trace; a symbolic link, a file that is not regular or an existing file that is not a
 * kiln trace is KILN_STATUS_INVALID_ARGUMENT and left as it was. */
KILN_API kiln_status kiln_device_trace_start(kiln_context *ctx, int device, const char *path);
KILN_API kiln_status kiln_device_trace_stop(kiln_context *ctx, int device);

/* ----------------------------------------------------------------- dtypes ---- */

typedef enum kiln_dtype {
    KILN_DTYPE_INVALID = 0,
    KILN_DTYPE_F32,
    KILN_DTYPE_F64,
    KILN_DTYPE_I32,
    KILN_DTYPE_I64,
    KILN_DTYPE_BOOL, /* stored as one byte, 0 or 1 */
    /* 16-bit floats: bfloat16 (8 exponent bits, 7 mantissa bits: f32's range) and IEEE
     * binary16 (5 and 10: largest finite 65504). Stored in 2 bytes (a uint16_t's bits),
     * computed in f32 and rounded to nearest even after every op, as XLA on the CPU does
     * for all but a few ops (logistic: docs/mixed_precision.md): so a result is the same
     * bits fused or not. Sums and products accumulate in f32 or
     * wider. docs/ops.md, "16-bit floats". Enums only grow here. */
    KILN_DTYPE_BF16,
    KILN_DTYPE_F16,
} kiln_dtype;

KILN_API const char *kiln_dtype_name(kiln_dtype t); /* "f32", ...; "invalid" */
KILN_API size_t kiln_dtype_itemsize(kiln_dtype t);  /* bytes; 0 if invalid */
/* jnp.promote_types over kiln's dtypes, with x64 on: the least dtype both convert to on
 * JAX's lattice bool < i32 < i64 < {bf16, f16} < f32 < f64, where an integer joined with a
 * float is that float (i64 with f32 is f32, i32 with bf16 is bf16, as in JAX; NumPy says
 * f64) and bf16 joined with f16 is f32. KILN_DTYPE_INVALID if either is invalid. kiln's ops
 * never promote on their own: kiln_promote asks for it. */
KILN_API kiln_dtype kiln_promote_types(kiln_dtype a, kiln_dtype b);
/* Converts n elements of dtype `from` at src into dtype `to` at dst, on the host, by exactly
 * kiln_convert's rules (the same code as the reference's): floats round to nearest even
 * (f64 -> bf16 and f16 through f32, as XLA: ml_dtypes rounds once, which differs in rare
 * ties),
 * float -> int truncates toward zero and
 * saturates (NaN gives 0), int -> int wraps, anything -> bool is x != 0. For C programs
 * that hold f32 data and want bf16 or f16 arrays (or read them back): convert, then
 * kiln_array_create. ctx only receives the message (NULL: none is kept). n == 0 does
 * nothing (src and dst may be NULL); src and dst must not overlap. An invalid dtype, n < 0,
 * a NULL buffer or overlapping buffers are KILN_STATUS_INVALID_ARGUMENT. Thread-safe. */
KILN_API kiln_status kiln_convert_host(kiln_context *ctx, kiln_dtype from, const void *src,
                                       kiln_dtype to, void *dst, int64_t n);

/* ----------------------------------------------------------------- arrays ---- */

typedef struct kiln_array kiln_array;

/* Where a value lives (jax.memory.Space / memory kinds). Every device has two: its own
 * memory and host memory it copies to and from (page-locked on a GPU, so the copies run on
 * the copy engines; on a CPU device a pool of its own, so the copies are real and the
 * device's allocator limit counts only device bytes). */
typedef enum kiln_memory_kind {
    KILN_MEMORY_DEVICE = 0,  /* "device" */
    KILN_MEMORY_PINNED_HOST, /* "pinned_host" */
} kiln_memory_kind;

/* An array's bytes live in device memory (device 0, the CPU: host RAM), taken from the
 * device's allocator, so kiln_device_get_memory_stats counts them (rounded up to 256 bytes).
 *
 * Donation: an array passed as a donated argument (kiln_compile_options.donate_argnums)
 * is consumed by a successful call: its buffer now belongs to the call's outputs or was
 * freed. Using it again is KILN_STATUS_CONSUMED; its dtype and shape can still be read (as
 * in JAX), and kiln_array_destroy still frees the handle. */

/* Creates an array of the given dtype and shape (row-major) on device 0 and copies data
 * into it; data NULL gives zeros. Elements are in the dtype's C form (float, double,
 * int32_t, int64_t, one byte per bool); a bf16 or f16 element is its 16 bits as a
 * uint16_t (as ml_dtypes stores them), and kiln_array_copy_to_host gives them back so. The shape
 * obeys the builder's rules (as kiln_parameter's: non-negative dimensions whose product, a zero
 * counted as 1, is at most 2^62; else KILN_STATUS_SHAPE naming the dimension). */
KILN_API kiln_status kiln_array_create(kiln_context *ctx, kiln_dtype dtype, int rank,
                                       const int64_t *dims, const void *data, kiln_array **out);
/* The same on device `device`: data has been copied when it returns. */
KILN_API kiln_status kiln_array_create_on(kiln_context *ctx, int device, kiln_dtype dtype, int rank,
                                          const int64_t *dims, const void *data, kiln_array **out);
/* The same with a name ("params/embedding") that tags its storage: out-of-memory messages,
 * kiln_device_memory_report and allocation traces show it instead of "kiln_array_create"
 * (the allocator keeps its first 23 bytes). name may not be NULL or empty. */
KILN_API kiln_status kiln_array_create_named(kiln_context *ctx, const char *name, int device,
                                             kiln_dtype dtype, int rank, const int64_t *dims,
                                             const void *data, kiln_array **out);
/* The same in memory kind `kind` of device `device` (jax.device_put(x,
 * SingleDeviceSharding(dev, memory_kind=...))): KILN_MEMORY_PINNED_HOST takes the bytes from
 * the device's pinned_host pool (kiln_device_get_memory_kind_stats counts them, the device's
 * own memory does not), which the host can read and write directly. Such an array is an
 * argument for a parameter of that kind (kiln_parameter_in_memory; a kiln_jit traces its
 * parameter so) and copies to and from the host without staging. A device without a host
 * memory kind gives KILN_STATUS_UNIMPLEMENTED. */
KILN_API kiln_status kiln_array_create_in_memory(kiln_context *ctx, int device,
                                                 kiln_memory_kind kind, kiln_dtype dtype, int rank,
                                                 const int64_t *dims, const void *data,
                                                 kiln_array **out);
/* A new array on a's device in memory kind `kind` with a's contents (jax.device_put to a
 * memory kind): waits for a, copies, and is ready when it returns. */
KILN_API kiln_status kiln_array_copy_to_memory(const kiln_array *a, kiln_memory_kind kind,
                                               kiln_array **out);
/* The memory kind the array's bytes live in (kiln_memory_kind; -1 for NULL). */
KILN_API int kiln_array_memory_kind(const kiln_array *a);
/* The same, with the copy from data enqueued on the device's copy queue (as
 * cudaMemcpyAsync): data (not NULL) must stay valid and unchanged until the array is
 * ready (kiln_array_block_until_ready, or any later call that waits for it). The device
 * memory is taken now, so a device OOM is reported here. Synchronous mode copies now. */
KILN_API kiln_status kiln_array_create_async(kiln_context *ctx, int device, kiln_dtype dtype,
                                             int rank, const int64_t *dims, const void *data,
                                             kiln_array **out);
/* A new array on device `device` with a's contents: enqueued on a's device's copy queue
 * after the work that writes a, so it overlaps the runs of both devices (synchronous mode:
 * copied now). The destination's memory is taken now: its OOM is reported here. The new
 * array is in the device's own memory whatever a's memory kind. */
KILN_API kiln_status kiln_array_copy_to_device(const kiln_array *a, int device, kiln_array **out);
/* The device the array lives on (-1 for NULL). */
KILN_API int kiln_array_device(const kiln_array *a);
/* The context that made the array (NULL for NULL): the only one whose calls take it. */
KILN_API kiln_context *kiln_array_context(const kiln_array *a);
/* Waits until the work that writes the array is done. When that work failed (or work it
 * depended on), returns its status with its full message; the array then holds nothing
 * usable. */
KILN_API kiln_status kiln_array_block_until_ready(const kiln_array *a);
/* Frees the array. Work in flight that reads or writes it keeps it alive until done. */
KILN_API void kiln_array_destroy(kiln_array *a);
/* Copies the array's bytes to dst, which holds size bytes: size must equal
 * kiln_array_nbytes(a). Waits for the array (as kiln_array_block_until_ready does). */
KILN_API kiln_status kiln_array_copy_to_host(const kiln_array *a, void *dst, size_t size);
KILN_API kiln_dtype kiln_array_dtype(const kiln_array *a);
KILN_API int kiln_array_rank(const kiln_array *a);
KILN_API int64_t kiln_array_dim(const kiln_array *a, int axis); /* -1 if out of range */
KILN_API int64_t kiln_array_size(const kiln_array *a);          /* element count */
KILN_API size_t kiln_array_nbytes(const kiln_array *a);
/* True once the array was donated to a call (its data is gone; see above). */
KILN_API bool kiln_array_is_consumed(const kiln_array *a);

/* ---------------------------------------------------------------- tracing ---- */

typedef struct kiln_graph kiln_graph;

/* A value in a graph under construction. Copy it freely; it is only meaningful with the
 * graph that made it. id 0 is the invalid value ops return after an error. */
typedef struct kiln_value {
    uint32_t graph;
    uint32_t id;
} kiln_value;

/* The invalid value, {0, 0}, by name: what an optional operand is given to leave it out
 * (kiln_layer_norm's scale and bias, kiln_rms_norm's scale; an unset optimiser
 * hyperparameter is the same zero value) and what ops return after an error. It is the
 * zero value, so a zero-initialised kiln_value or options struct holds it already. An
 * expression (a compound literal in C, a temporary in C++), not a constant for a static
 * initialiser: write {0, 0} there. */
#ifdef __cplusplus
#define KILN_VALUE_NONE (kiln_value{0, 0})
#else
#define KILN_VALUE_NONE ((kiln_value){0, 0})
#endif

static inline bool kiln_value_ok(kiln_value v) {
    return v.id != 0;
}

KILN_API kiln_status kiln_graph_create(kiln_context *ctx, const char *name, kiln_graph **out);
KILN_API void kiln_graph_destroy(kiln_graph *g);

/* Sets the user's source location for the ops that follow, until the next call or macro
 * (error messages and the printed IR say "model.c:42"). The macros at the end of this
 * file do it for you around each builder call (kiln_graph_push_at, kiln_graph_pop_at): a
 * location set here is replaced during every macro call and is current again after it;
 * for code calling the plain functions (KILN_NO_LOCATION_MACROS, a binding) this is the
 * only way. file is kept, not copied: it must outlive the graph, as a string literal such
 * as __FILE__ does. NULL clears the location. */
KILN_API void kiln_graph_at(kiln_graph *g, const char *file, int line);

/* Marks the outputs, checks the graph and closes it to further ops. Returns the builder's
 * first error if any op failed (its message is on the context), else the verifier's. */
KILN_API kiln_status kiln_graph_finish(kiln_graph *g, int n_outputs, const kiln_value *outputs);
/* The builder's first error (KILN_STATUS_OK if none) and its message ("" if none). */
KILN_API kiln_status kiln_graph_status(const kiln_graph *g);
KILN_API const char *kiln_graph_error(const kiln_graph *g);

/* Type of a value: returns false for an invalid or foreign value. dims may be NULL. */
KILN_API bool kiln_value_type(const kiln_graph *g, kiln_value v, kiln_dtype *dtype, int *rank,
                              int64_t *dims);

/* The graph as text, one op a line (docs/architecture.md shows the form). */
KILN_API kiln_status kiln_graph_print(const kiln_graph *g, FILE *f);
KILN_API char *kiln_graph_to_string(const kiln_graph *g); /* NULL on host OOM */
KILN_API int kiln_graph_num_nodes(const kiln_graph *g);
KILN_API int kiln_graph_num_parameters(const kiln_graph *g);
KILN_API int kiln_graph_num_outputs(const kiln_graph *g);
/* Parameter i (in the order they were made) and output i of a graph, as values of it: how
 * a program reaches the values of a graph it did not trace (kiln_graph_load), for example
 * to read their types with kiln_value_type. The invalid value when i is out of range (an
 * unfinished graph has no outputs yet). */
KILN_API kiln_value kiln_graph_parameter(const kiln_graph *g, int i);
KILN_API kiln_value kiln_graph_output(const kiln_graph *g, int i);

/* Graphs as text files: the form kiln_graph_print writes (docs/architecture.md), with every
 * constant's values, so `kiln plan FILE` and other programs can plan and run a graph that a
 * program built. kiln_graph_save needs a finished graph and writes atomically (a temporary
 * file renamed over path). Loading replays the text through the builders, so a loaded
 * graph is checked as a traced one is, and each value's written type must be what its op
 * gives; a fault is KILN_STATUS_INVALID_ARGUMENT with "file:line: what is wrong". The
 * loaded graph is finished. Not kept: composite records (gradients are the same, through
 * the composites' parts), checkpoint regions and names (kiln_checkpoint_*), and the roles
 * kiln_grad gives values. kiln_graph_parse reads
 * len bytes of text (no terminator needed); name is what messages call it. The sub-graphs
 * of control flow (kiln_while_loop, kiln_scan, kiln_cond, ...) are nested blocks after
 * their node's line, read back to at most 64 levels. */
KILN_API kiln_status kiln_graph_save(const kiln_graph *g, const char *path);
KILN_API kiln_status kiln_graph_load(kiln_context *ctx, const char *path, kiln_graph **out);
KILN_API kiln_status kiln_graph_parse(kiln_context *ctx, const char *text, size_t len,
                                      const char *name, kiln_graph **out);

/* Programs exported from JAX (docs/import.md). kiln_import_stablehlo reads the StableHLO
 * text of jax.jit(f).lower(*args).as_text() (MLIR's pretty form, and the generic form for
 * the ops it prints so), kiln_import_hlo the HLO text of .as_text(dialect="hlo"); each reads
 * len bytes of text (no terminator needed) and gives a finished graph: the entry function's
 * (@main, ENTRY) arguments are its parameters in order (named arg0, arg1, ...), its results
 * its outputs. Private functions and HLO computations that are called are inlined; while
 * and case (conditional) become kiln_while_loop and kiln_switch; a reduction's body must be
 * one of add, multiply, maximum, minimum (and, or over bool), or over (values, indices)
 * jnp.argmax's or argmin's (kiln_argmax, kiln_argmin). The graph is traced through
 * the public builders, so it is checked as a traced one is, and each op's result must have
 * the type the text declares. Ignored: shardings, layouts, result names, precision
 * config; donations (tf.aliasing_output, input_output_alias) are not carried (pass
 * kiln_compile_options.donate_argnums: every flattened leaf of each argument JAX donated).
 * An op kiln cannot import, or malformed text, is an
 * error (KILN_STATUS_UNIMPLEMENTED or KILN_STATUS_INVALID_ARGUMENT, or the builder's own)
 * whose message names the op, its line and column and kiln's version; *out is then NULL
 * and nothing is left allocated. */
KILN_API kiln_status kiln_import_stablehlo(kiln_context *ctx, const char *text, size_t len,
                                           kiln_graph **out);
KILN_API kiln_status kiln_import_hlo(kiln_context *ctx, const char *text, size_t len,
                                     kiln_graph **out);

/* Inputs and constants. Parameters are numbered in the order they are made. kiln_scalar's
 * value is rounded to dtype as a host conversion (jnp.asarray(value, dtype)): floats to
 * nearest even in one rounding; integers truncated toward zero and, where jnp.asarray
 * raises an OverflowError, saturated at the dtype's range (NaN gives 0), as kiln_convert. */
KILN_API kiln_value kiln_parameter(kiln_graph *g, const char *name, kiln_dtype dtype, int rank,
                                   const int64_t *dims);
KILN_API kiln_value kiln_constant(kiln_graph *g, kiln_dtype dtype, int rank, const int64_t *dims,
                                  const void *data);
KILN_API kiln_value kiln_scalar(kiln_graph *g, kiln_dtype dtype, double value);
KILN_API kiln_value kiln_full(kiln_graph *g, kiln_dtype dtype, int rank, const int64_t *dims,
                              double value);
/* 0, 1, 2, ... along `axis`, broadcast over the other axes. */
KILN_API kiln_value kiln_iota(kiln_graph *g, kiln_dtype dtype, int rank, const int64_t *dims,
                              int axis);

/* Elementwise unary. Float-only: exp, log, log1p, sqrt, rsqrt, tanh, logistic, sin, cos,
 * erf, floor and the functions below kiln_floor. Numeric: neg, abs, sign. Bool only:
 * logical_not. Each is the jnp / jax.lax function of the same name, with its values at
 * the edges (docs/ops.md, "Math functions": NaN outside the domain, +-inf at poles). */
KILN_API kiln_value kiln_neg(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_abs(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_exp(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_log(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_log1p(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_sqrt(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_rsqrt(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_tanh(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_logistic(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_sin(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_cos(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_erf(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_sign(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_floor(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_ceil(kiln_graph *g, kiln_value x);
/* jnp.round (numpy.round): halves to even, 2.5 -> 2. */
KILN_API kiln_value kiln_round(kiln_graph *g, kiln_value x);
/* jax.lax.round's default (C's round): halves away from zero, 2.5 -> 3. */
KILN_API kiln_value kiln_round_half_away(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_expm1(kiln_graph *g, kiln_value x); /* exp(x) - 1, exact near 0 */
KILN_API kiln_value kiln_tan(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_sinh(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_cosh(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_asin(kiln_graph *g, kiln_value x); /* jnp.arcsin */
KILN_API kiln_value kiln_acos(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_atan(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_asinh(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_acosh(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_atanh(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_cbrt(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_erfc(kiln_graph *g, kiln_value x); /* 1 - erf(x), exact in the tail */
/* The inverse of erf on (-1, 1); +-inf at +-1 and NaN beyond (jax.lax.erf_inv). */
KILN_API kiln_value kiln_erf_inv(kiln_graph *g, kiln_value x);
/* log|gamma(x)| (jax.lax.lgamma): +inf at 0 and the negative integers. */
KILN_API kiln_value kiln_lgamma(kiln_graph *g, kiln_value x);
/* The derivative of lgamma (jax.lax.digamma): NaN at 0 and the negative integers. */
KILN_API kiln_value kiln_digamma(kiln_graph *g, kiln_value x);
/* isfinite(x), bool (jnp.isfinite): false for +-inf and NaN. Float operands. */
KILN_API kiln_value kiln_is_finite(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_logical_not(kiln_graph *g, kiln_value x);
/* x itself, through which no gradient flows (jax.lax.stop_gradient): kiln_grad treats it
 * as a constant. Any dtype. */
KILN_API kiln_value kiln_stop_gradient(kiln_graph *g, kiln_value x);
/* Converts between any two dtypes: float->int truncates toward zero and saturates (NaN
 * gives 0), anything->bool is x != 0. */
KILN_API kiln_value kiln_convert(kiln_graph *g, kiln_value x, kiln_dtype to);
/* Promotion, asked for: out[i] is xs[i] converted to the kiln_promote_types of all n
 * operands' dtypes (n >= 1), or xs[i] itself when it has that dtype already; out may be
 * xs. What JAX does implicitly to the operands of `x + n`, done where the user can see it
 * (docs/ops.md, "Mixed dtypes"): kiln_promote(g, 2, (kiln_value[]){x, n}, v), then
 * kiln_add(g, v[0], v[1]). Shapes are left alone (the op broadcasts). Returns the graph's
 * status; on an error every out[i] is the invalid value. */
KILN_API kiln_status kiln_promote(kiln_graph *g, int n, const kiln_value *xs, kiln_value *out);

/* Elementwise binary with NumPy broadcasting; both operands must have the same dtype.
 * Integer division truncates; x/0 is -1 and INT_MIN/-1 is INT_MIN (as in XLA). Integer
 * pow with a negative exponent is 0 unless the base is 1 or -1. max/min propagate NaN.
 * kiln_rem is jax.lax.rem (jnp.fmod): a - trunc(a / b) * b with the sign of a, exact for
 * floats (C's fmod: x rem 0 and inf rem y are NaN); for integers x rem 0 is x and INT_MIN
 * rem -1 is 0, as in XLA. jnp.mod / jnp.remainder (the sign of b) is r = kiln_rem(a, b),
 * then r + b where r != 0 and (r < 0) != (b < 0) (docs/ops.md). */
KILN_API kiln_value kiln_add(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_sub(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_mul(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_div(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_pow(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_rem(kiln_graph *g, kiln_value a, kiln_value b);
/* jnp.arctan2(a, b): the angle of the point (b, a) in [-pi, pi], with C's signed zeros and
 * infinities (atan2(+-0, -0) = +-pi). Floats. */
KILN_API kiln_value kiln_atan2(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_max(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_min(kiln_graph *g, kiln_value a, kiln_value b);
/* Logical and / or of two bools (jnp.logical_and on bools); other dtypes are refused,
 * naming the bitwise builder. */
KILN_API kiln_value kiln_logical_and(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_logical_or(kiln_graph *g, kiln_value a, kiln_value b);

/* Bits (jax.lax.bitwise_and ... clz; docs/ops.md "Bits"). and / or / xor / not are bitwise
 * on i32 and i64 and logical on bool. The shifts take i32 or i64 of one dtype, the amount
 * elementwise; an amount outside [0, width) gives 0 (the arithmetic right shift: 0 or -1
 * by the sign), as XLA's. The logical right shift moves the unsigned pattern, so that
 * uint32 values held in i32 (jax.random's words) shift as JAX's ui32 do. population_count
 * counts set bits, clz the zero bits above the highest set one (32 or 64 for 0). */
KILN_API kiln_value kiln_bitwise_and(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_bitwise_or(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_bitwise_xor(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_bitwise_not(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_shift_left(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_shift_right_logical(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_shift_right_arithmetic(kiln_graph *g, kiln_value a, kiln_value b);
KILN_API kiln_value kiln_population_count(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_clz(kiln_graph *g, kiln_value x);
/* x's bits read as dtype `to` (jax.lax.bitcast_convert_type of the same width): f32 <->
 * i32 and f64 <-> i64; x itself when it has that dtype. No gradient flows through it. */
KILN_API kiln_value kiln_bitcast_convert(kiln_graph *g, kiln_value x, kiln_dtype to);

typedef enum kiln_cmp {
    KILN_CMP_EQ = 0,
    KILN_CMP_NE,
    KILN_CMP_LT,
    KILN_CMP_LE,
    KILN_CMP_GT,
    KILN_CMP_GE,
} kiln_cmp;
/* Elementwise comparison with broadcasting; the result is bool. NaN compares unequal. */
KILN_API kiln_value kiln_compare(kiln_graph *g, kiln_value a, kiln_value b, kiln_cmp dir);
/* pred (bool) ? on_true : on_false, elementwise, all three broadcast together. */
KILN_API kiln_value kiln_select(kiln_graph *g, kiln_value pred, kiln_value on_true,
                                kiln_value on_false);

/* Shapes. */
/* XLA's broadcast_in_dim: operand axis i becomes output axis broadcast_dims[i]
 * (strictly increasing); each operand dim is 1 or equal to the output dim. */
KILN_API kiln_value kiln_broadcast_in_dim(kiln_graph *g, kiln_value x, int rank,
                                          const int64_t *dims, const int *broadcast_dims);
/* NumPy's broadcast_to: aligns trailing axes. */
KILN_API kiln_value kiln_broadcast_to(kiln_graph *g, kiln_value x, int rank, const int64_t *dims);
/* Row-major reshape; one dim may be -1 and is then inferred. */
KILN_API kiln_value kiln_reshape(kiln_graph *g, kiln_value x, int rank, const int64_t *dims);
/* Output axis i is input axis perm[i]; perm has rank(x) entries. */
KILN_API kiln_value kiln_transpose(kiln_graph *g, kiln_value x, const int *perm);
/* jax.lax.rev / jnp.flip: the elements of x in reverse order along each of the n_axes axes
 * (negative axes count from the end; axes NULL reverses every axis), same shape and dtype.
 * An axis out of range, or given twice, is an error that names it and x's rank. */
KILN_API kiln_value kiln_rev(kiln_graph *g, kiln_value x, int n_axes, const int *axes);
/* Elements start[i], start[i]+stride[i], ... < limit[i]; stride NULL means all 1.
 * Requires 0 <= start <= limit <= dim and stride >= 1. */
KILN_API kiln_value kiln_slice(kiln_graph *g, kiln_value x, const int64_t *start,
                               const int64_t *limit, const int64_t *stride);
KILN_API kiln_value kiln_concatenate(kiln_graph *g, int n, const kiln_value *xs, int axis);
/* XLA's pad: lo/hi elements of pad_value (a rank-0 value of x's dtype) before/after each
 * axis, `interior` between elements (NULL: 0). Negative lo/hi crop, past the operand too
 * (lax.pad of 3 elements with lo = -4, hi = 5 is 4 padding values), as long as each
 * axis comes out of size >= 0; crops of 2^62 or more are refused. */
KILN_API kiln_value kiln_pad(kiln_graph *g, kiln_value x, kiln_value pad_value, const int64_t *lo,
                             const int64_t *hi, const int64_t *interior);

/* Reductions over `axes` (negative counts from the end; NULL means every axis). keepdims
 * keeps reduced axes with size 1. Sum of an empty set is 0, prod 1, max -inf (or the
 * dtype's lowest), min +inf (or the highest). mean is float-only. */
KILN_API kiln_value kiln_reduce_sum(kiln_graph *g, kiln_value x, int naxes, const int *axes,
                                    bool keepdims);
KILN_API kiln_value kiln_reduce_max(kiln_graph *g, kiln_value x, int naxes, const int *axes,
                                    bool keepdims);
KILN_API kiln_value kiln_reduce_min(kiln_graph *g, kiln_value x, int naxes, const int *axes,
                                    bool keepdims);
KILN_API kiln_value kiln_reduce_prod(kiln_graph *g, kiln_value x, int naxes, const int *axes,
                                     bool keepdims);
KILN_API kiln_value kiln_mean(kiln_graph *g, kiln_value x, int naxes, const int *axes,
                              bool keepdims);

/* XLA's dot_general. The output's axes are: batch axes (in the order given), then lhs's
 * remaining axes, then rhs's remaining axes. Operands must share a numeric dtype. */
typedef struct kiln_dot_dims {
    int n_contract;
    int lhs_contract[KILN_MAX_RANK], rhs_contract[KILN_MAX_RANK];
    int n_batch;
    int lhs_batch[KILN_MAX_RANK], rhs_batch[KILN_MAX_RANK];
} kiln_dot_dims;
KILN_API kiln_value kiln_dot_general(kiln_graph *g, kiln_value lhs, kiln_value rhs,
                                     const kiln_dot_dims *dims);
/* NumPy's matmul for rank >= 1: vectors are promoted and their axis dropped; leading
 * (batch) axes must be equal or broadcast. */
KILN_API kiln_value kiln_matmul(kiln_graph *g, kiln_value a, kiln_value b);

/* Indexing along axis 0. take_rows: out[i..., :] = table[clamp(idx[i...]), :] (embedding
 * lookup; indices i32/i64, clamped into [0, rows - 1]: jnp.take's mode="clip", which is
 * not jnp.take's default; kiln_take below offers every mode on any axis).
 * scatter_add_rows: out = operand; out[idx[i...], :] += updates[i..., :], indices out of
 * range are dropped (its transpose). */
KILN_API kiln_value kiln_take_rows(kiln_graph *g, kiln_value table, kiln_value indices);
KILN_API kiln_value kiln_scatter_add_rows(kiln_graph *g, kiln_value operand, kiln_value indices,
                                          kiln_value updates);

/* Slices at traced offsets (jax.lax.dynamic_slice / dynamic_update_slice). start_indices
 * holds n_indices rank-0 i32 or i64 values, one per axis of x (n_indices == rank(x)); the
 * sizes are static. As jax.lax does, a negative start first counts from the end of its
 * axis (the dimension added once, as Python indexing does: -1 is the last window), then
 * every start is clamped into [0, dim - size] (size: the slice's, or the update's
 * dimension), as XLA clamps it, so the window always lies inside x: a start past the end
 * moves the window back, one still negative to 0.
 * dynamic_slice: out[i] = x[start + i], shape sizes (0 <= sizes[a] <= dim a of x).
 * dynamic_update_slice: x with update (x's dtype and rank, no dimension larger than x's)
 * written at start; over a donated x it runs in place. Gradients: the slice's is its
 * cotangent written into zeros; the update's operand gets the cotangent with the window
 * zeroed and the update the window of the cotangent; the indices get none. A wrong count
 * of indices, an index that is not a rank-0 integer, a size beyond its dimension, an
 * update larger than x or of another dtype is an error naming the op, the shapes and the
 * caller's line. */
KILN_API kiln_value kiln_dynamic_slice(kiln_graph *g, kiln_value x, int n_indices,
                                       const kiln_value *start_indices, const int64_t *sizes);
KILN_API kiln_value kiln_dynamic_update_slice(kiln_graph *g, kiln_value x, kiln_value update,
                                              int n_indices, const kiln_value *start_indices);

/* Collectives (docs/scaling.md). all_reduce: every replica of the program gets the sum,
 * mean or maximum over all replicas of x (same dtype and shape; MEAN needs a float). Which
 * replicas take part is the communicator the executable was compiled with
 * (kiln_compile_options.comm); with none, and in kiln_interpret, there is one replica and
 * all_reduce is the identity. Its VJP is the all_reduce of the cotangent (SUM and MEAN; MAX
 * splits it among the replicas that hold the maximum, as reduce_max does among positions). */
typedef enum kiln_reduce_kind {
    KILN_REDUCE_SUM = 0,
    KILN_REDUCE_MEAN,
    KILN_REDUCE_MAX,
} kiln_reduce_kind;
KILN_API kiln_value kiln_all_reduce(kiln_graph *g, kiln_value x, kiln_reduce_kind kind);
/* ZeRO's collectives (MPI_Reduce_scatter_block / MPI_Allgather, ncclReduceScatter /
 * ncclAllGather), over a group of `ranks` replicas: the program must be compiled with a
 * communicator of that size (as jax.lax.psum_scatter's axis has a size when traced);
 * ranks = 1 is the identity, also in kiln_interpret. reduce_scatter: x's leading axis
 * (divisible by ranks) is cut into `ranks` equal shards; replica r gets shard r of the sum
 * (or mean: SUM and MEAN only) over every replica's x, the leading axis / ranks.
 * all_gather: every replica gets the replicas' x concatenated along the leading axis in
 * rank order (leading axis x ranks; any dtype). Each is the other's VJP (the VJP of a MEAN
 * reduce_scatter divides by ranks). */
KILN_API kiln_value kiln_reduce_scatter(kiln_graph *g, kiln_value x, kiln_reduce_kind kind,
                                        int ranks);
KILN_API kiln_value kiln_all_gather(kiln_graph *g, kiln_value x, int ranks);
/* Indexing and shape ops (docs/ops.md). They are composites of the ops above, so they fuse,
 * differentiate and save as those do; errors name the call (kiln_take, ...).
 *
 * What an index outside [0, n) of an axis of n elements does. FILL is jnp.take's and
 * jnp.take_along_axis' default: a negative index wraps once (-1 is n - 1, as in NumPy), and
 * what is still out of range reads the fill value: NaN for floats, the dtype's minimum for
 * i32/i64, true for bool (JAX's fill values). CLIP clamps into [0, n - 1] (no wrap). WRAP
 * takes the index modulo n (non-negative). Gradients reach the element that was read: none
 * for a filled one, the clamped or wrapped one otherwise. */
typedef enum kiln_gather_mode {
    KILN_GATHER_FILL = 0,
    KILN_GATHER_CLIP,
    KILN_GATHER_WRAP,
} kiln_gather_mode;
/* jnp.take(x, indices, axis, mode): out has shape x.shape[:axis] + indices.shape +
 * x.shape[axis+1:], out[p..., i..., q...] = x[p..., indices[i...], q...]. x has rank >= 1,
 * indices are i32 or i64 of any shape; axis may be negative. Taking a non-empty set from
 * an empty axis is an error (as in JAX), in every mode. */
KILN_API kiln_value kiln_take(kiln_graph *g, kiln_value x, kiln_value indices, int axis,
                              kiln_gather_mode mode);
/* jnp.take_along_axis(x, indices, axis, mode): indices (i32/i64) has x's rank; along every
 * other axis the two broadcast (dims equal, or 1); out[..., j, ...] = x[..., indices[..., j,
 * ...], ...] with the shape of that broadcast and indices' extent on `axis`. As in JAX, a
 * negative index wraps once in CLIP mode too (-1 is the last, not the first). WRAP is
 * kiln's (JAX's take_along_axis has fill and clip only). */
KILN_API kiln_value kiln_take_along_axis(kiln_graph *g, kiln_value x, kiln_value indices, int axis,
                                         kiln_gather_mode mode);

/* General gather and scatter with XLA's dimension numbers (jax.lax.gather, jax.lax.scatter,
 * scatter_add, scatter_mul, scatter_min, scatter_max; docs/ops.md "gather and scatter").
 * The index vector is the last axis of `indices` (i32 or i64, rank >= 1), as in jax.lax:
 * its length K is the count of start_index_map (gather) or scatter_dims_to_operand_dims
 * (scatter), and the other axes of indices are the batch axes. Every list of axes is
 * given with its count; the axes of one list are distinct and in range, and offset_dims,
 * collapsed_slice_dims, update_window_dims, inserted_window_dims and operand_batching_dims
 * must be sorted (XLA's rules); operand_batching_dims[i] pairs with
 * start_indices_batching_dims[i] (scatter_indices_batching_dims[i]), which name indices
 * axes other than the last, of equal size. An operand axis is collapsed (inserted),
 * batching, or a window axis; an axis named in start_index_map must not be batching. */
typedef struct kiln_gather_dims {
    int n_offset_dims, offset_dims[KILN_MAX_RANK];                   /* output axes */
    int n_collapsed_slice_dims, collapsed_slice_dims[KILN_MAX_RANK]; /* operand axes */
    int n_start_index_map, start_index_map[KILN_MAX_RANK];           /* operand axes */
    int n_operand_batching_dims, operand_batching_dims[KILN_MAX_RANK];
    int start_indices_batching_dims[KILN_MAX_RANK]; /* n_operand_batching_dims of them */
} kiln_gather_dims;
/* jax.lax.gather(operand, indices, dims, slice_sizes, mode, fill_value). The output has
 * rank (rank(indices) - 1) + n_offset_dims: the offset_dims axes hold the window (sizes
 * slice_sizes[a] of the operand axes a that are neither collapsed nor batching, in order),
 * the other axes are the batch axes of indices, in order. out[b, w] = operand[start(b) +
 * w], start(b)[start_index_map[k]] = indices[b, k], start(b)[operand_batching_dims[i]] =
 * b's position on start_indices_batching_dims[i], 0 elsewhere. slice_sizes has one entry
 * per operand axis, 0 <= size <= dim, 1 for collapsed and batching axes.
 * Modes (kiln_gather_mode; jax.lax.GatherScatterMode): KILN_GATHER_CLIP clamps each start
 * into [0, dim - size], so the window lies inside the operand (also what XLA does, and so
 * what PROMISE_IN_BOUNDS gives, which kiln does not name separately); KILN_GATHER_FILL is
 * FILL_OR_DROP: a window with any start outside [0, dim - size] reads fill_value entirely.
 * fill_value NULL is JAX's default: NaN for floats, the dtype's minimum for i32/i64, true
 * for bool; a given one is rounded to a float dtype, and must be a value of an integer or
 * bool dtype (an error otherwise). Negative indices are out of range (no wrap: lax's rule).
 * KILN_GATHER_WRAP is kiln_take's only: an error here. Any dtype. Gradient
 * (docs/autodiff.md): the cotangent scatter-added into zeros with the same dimension numbers
 * and mode (filled windows get none); indices none. Errors name kiln_gather, the operands'
 * types, the dimension-number field at fault (offset_dims, slice_sizes, ...) and the
 * caller's line. */
KILN_API kiln_value kiln_gather(kiln_graph *g, kiln_value operand, kiln_value indices,
                                const kiln_gather_dims *dims, const int64_t *slice_sizes,
                                kiln_gather_mode mode, const double *fill_value);

/* How a scatter combines an update with what is there (jax.lax.scatter, scatter_add, ...). */
typedef enum kiln_scatter_kind {
    KILN_SCATTER_SET = 0, /* jax.lax.scatter: the update replaces it */
    KILN_SCATTER_ADD,     /* jax.lax.scatter_add */
    KILN_SCATTER_MUL,     /* jax.lax.scatter_mul */
    KILN_SCATTER_MIN,     /* jax.lax.scatter_min (a NaN wins, as lax.min) */
    KILN_SCATTER_MAX,     /* jax.lax.scatter_max (a NaN wins, as lax.max) */
} kiln_scatter_kind;
typedef struct kiln_scatter_dims {
    int n_update_window_dims, update_window_dims[KILN_MAX_RANK];     /* updates axes */
    int n_inserted_window_dims, inserted_window_dims[KILN_MAX_RANK]; /* operand axes */
    int n_scatter_dims_to_operand_dims, scatter_dims_to_operand_dims[KILN_MAX_RANK];
    int n_operand_batching_dims, operand_batching_dims[KILN_MAX_RANK];
    int scatter_indices_batching_dims[KILN_MAX_RANK]; /* n_operand_batching_dims of them */
} kiln_scatter_dims;
/* jax.lax.scatter*(operand, indices, updates, dims, mode): operand with every update
 * element combined (kind) into the element it addresses. updates has the operand's dtype and
 * rank (rank(indices) - 1) + n_update_window_dims: its update_window_dims axes are the
 * window (one per operand axis neither inserted nor batching, in order, each no larger than
 * that axis), its other axes the batch axes of indices, in order and of equal sizes.
 * updates[b, w] goes to operand[start(b) + w], start as kiln_gather's.
 * Modes: KILN_GATHER_FILL (FILL_OR_DROP, jax's default for scatter) drops every update of a
 * window with any start outside [0, dim - window]; KILN_GATHER_CLIP clamps the starts into
 * that range. Updates are combined in row-major order of updates, so every kind is
 * deterministic: duplicate indices combine all (add, mul, min, max) and, for SET, the
 * last update in that order wins (JAX leaves which one unspecified). Kinds other than SET
 * take numeric dtypes (not bool); SET takes any.
 * Gradients (docs/autodiff.md): ADD: operand the cotangent, updates its gather; SET: operand
 * the cotangent with the written elements zeroed, updates the gather of the cotangent for
 * the update that won (others zero, as JAX); MIN/MAX: the cotangent shared equally among
 * the operand element and the updates equal to the result (JAX's rule); MUL: operand the
 * cotangent times the product of its updates; the updates' gradient of MUL is refused
 * (UNIMPLEMENTED, as JAX refuses it without unique_indices). Errors as kiln_gather's. */
KILN_API kiln_value kiln_scatter(kiln_graph *g, kiln_scatter_kind kind, kiln_value operand,
                                 kiln_value indices, kiln_value updates,
                                 const kiln_scatter_dims *dims, kiln_gather_mode mode);
/* x[i0, i1, ..., i(n-1)] with n integer index arrays on x's first n axes (NumPy's advanced
 * indexing, jnp's x.at[i, j].get(mode=...)): the arrays (i32/i64) broadcast together,
 * NumPy-style, to a shape B; out has shape B + x.shape[n:], out[b, ...] = x[i0[b], ...,
 * i(n-1)[b], ...]. One gather with start_index_map {0..n-1}. A negative index wraps once
 * (-1 is the last); then KILN_GATHER_FILL reads the fill value (NaN for floats, the dtype's
 * minimum for i32/i64, true for bool) for a point still out of range, KILN_GATHER_CLIP
 * clamps (jnp's x[i, j] without a mode gives the clamped values), KILN_GATHER_WRAP takes the
 * index modulo the axis length. Index arrays for other axes (x[:, i, j]) are a transpose of
 * x first. Errors name kiln_index_get, the operands and the caller's line. */
KILN_API kiln_value kiln_index_get(kiln_graph *g, kiln_value x, int n, const kiln_value *indices,
                                   kiln_gather_mode mode);
/* x.at[(slice(None),) * axis + (indices,)].set/add/mul/min/max(updates, mode=...): the
 * elements x[p..., indices[i...], q...] combined with updates[p..., i..., q...] (updates has
 * the shape of kiln_take(x, indices, axis) or broadcasts to it, NumPy-style; x's dtype).
 * A scatter over one axis. A negative index wraps once, as jnp's indexing does (-1 is the
 * last); then KILN_GATHER_FILL drops an update still out of range (jnp's mode="drop", the
 * default of .at[]), KILN_GATHER_CLIP clamps it; KILN_GATHER_WRAP takes the index modulo
 * the axis length (kiln's). kiln_index_update takes the kind; the others are its shorthands. */
KILN_API kiln_value kiln_index_update(kiln_graph *g, kiln_scatter_kind kind, kiln_value x, int axis,
                                      kiln_value indices, kiln_value updates,
                                      kiln_gather_mode mode);
KILN_API kiln_value kiln_index_set(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                                   kiln_value updates, kiln_gather_mode mode);
KILN_API kiln_value kiln_index_add(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                                   kiln_value updates, kiln_gather_mode mode);
KILN_API kiln_value kiln_index_mul(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                                   kiln_value updates, kiln_gather_mode mode);
KILN_API kiln_value kiln_index_min(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                                   kiln_value updates, kiln_gather_mode mode);
KILN_API kiln_value kiln_index_max(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                                   kiln_value updates, kiln_gather_mode mode);
/* jnp.stack: n >= 1 values of one dtype and shape joined along a new axis `axis` of the
 * result (in [-(rank + 1), rank]; negative counts from the end of the result). */
KILN_API kiln_value kiln_stack(kiln_graph *g, int n, const kiln_value *xs, int axis);
/* jnp.argmax / jnp.argmin along one axis, i32, that axis removed. Ties give the first
 * index; a NaN wins over every number, so a row holding NaN gives its first NaN (as JAX).
 * Numeric or bool x; the axis must be non-empty and shorter than 2^31. No gradient. */
KILN_API kiln_value kiln_argmax(kiln_graph *g, kiln_value x, int axis);
KILN_API kiln_value kiln_argmin(kiln_graph *g, kiln_value x, int axis);
/* lax.cumsum: out[..., j, ...] = sum of x[..., k, ...] over k <= j (reverse: k >= j), the
 * dtype and shape of x (numeric; axis may count from the end). One pass per row, in order:
 * floats accumulate in f64 and each output is rounded once (bf16 and f16 through f32, as
 * the convert op; an f32 cumsum is more accurate than a sequential f32 scan), integers wrap; the
 * same bits on every device and thread count (docs/ops.md). The gradient is the reverse cumsum of
 * the cotangent. */
KILN_API kiln_value kiln_cumsum(kiln_graph *g, kiln_value x, int axis, bool reverse);
/* Sorting and selection (docs/ops.md, "sort"). The positions come from one op (argsort, a
 * library kernel of each backend); the values are a take_along_axis of them, so their
 * gradient is the gather's (JAX's: the cotangent scattered back to where each value came
 * from); positions have none.
 *
 * The order (JAX's): integers and bool (false < true) by value; floats by value with -0.0
 * and +0.0 equal and every NaN after +inf, all NaNs equal (jax.lax.sort). Sorts are stable:
 * equal keys keep their order, ascending and descending alike (descending puts NaNs first).
 * Positions are i32: an axis longer than 2^31 - 1 is an error.
 *
 * jnp.argsort(x, axis, stable=True, descending): i32, x's shape, the positions along
 * `axis` (negative counts from the end) that sort each row of x. Any dtype, rank >= 1. */
KILN_API kiln_value kiln_argsort(kiln_graph *g, kiln_value x, int axis, bool descending);
/* jax.lax.sort(operands, dimension=axis, is_stable=True, num_keys): n_operands >= 1 values
 * of one shape (any dtypes) sorted together along `axis`, ordered lexicographically by the
 * first num_keys of them (1 <= num_keys <= n_operands); outs[i] receives operand i
 * rearranged. descending reverses the order of the keys but keeps equal keys in their
 * order, as jnp.argsort(descending=True) (jnp.sort(descending=True) instead reverses the
 * ascending sort, which differs only in the order of equal keys: -0.0 and +0.0, NaNs of
 * either sign). Returns the graph's status; on an error (n_operands < 1, outs NULL,
 * num_keys out of range, shapes that differ, axis out of range) every outs[i] is the
 * invalid value. */
KILN_API kiln_status kiln_sort(kiln_graph *g, int n_operands, const kiln_value *operands, int axis,
                               int num_keys, bool descending, kiln_value *outs);
/* jax.lax.top_k(x, k): the k largest entries of each row along the last axis, largest
 * first: *values (x's dtype) and *indices (i32), both x's shape with the last axis k.
 * Equal values come lower index first. Its order is IEEE total order, as XLA's TopK:
 * -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN (so a +NaN is the largest).
 * 0 <= k <= the last axis' length; either output pointer may be NULL (not both). Returns
 * the graph's status; on an error both outputs are the invalid value. The selection is
 * partial (a row is not fully sorted when k is small). */
KILN_API kiln_status kiln_top_k(kiln_graph *g, kiln_value x, int k, kiln_value *values,
                                kiln_value *indices);
/* jax.nn.one_hot(indices, n, dtype): indices (i32/i64) of shape [...] -> [..., n] of dtype,
 * 1 where the last index equals the value, else 0; an index outside [0, n) gives a row of
 * zeros (-1 does not wrap). */
KILN_API kiln_value kiln_one_hot(kiln_graph *g, kiln_value indices, int64_t n, kiln_dtype dtype);
/* jnp.split(x, sections or indices, axis): outs receives n parts of x along `axis`
 * (negative counts from the end), each a slice of x (composite: the gradient of each part
 * goes back to its place). indices NULL: n equal parts, the axis's size a multiple of n
 * (jnp.split(x, n)). Otherwise n - 1 split points indices[0] <= ... <= indices[n - 2] in
 * [0, size]: part i runs from indices[i - 1] to indices[i], the first from 0 and the last
 * to the size (jnp.split(x, indices)); equal points give empty parts. Returns the graph's
 * status; errors are builder errors naming kiln_split (n < 1, outs NULL, rank 0, axis out
 * of range, a size that does not divide, points out of order or of range), and on an error
 * every outs[i] is the invalid value. */
KILN_API kiln_status kiln_split(kiln_graph *g, kiln_value x, int n, const int64_t *indices,
                                int axis, kiln_value *outs);
/* flax.linen.make_causal_mask's values, for T query and S key positions: a [T, S] mask,
 * true (or 1 in a numeric dtype, as flax's dtype= gives) where key j <= query i and false
 * (0) above the diagonal: the lower triangle aligned at the top left, the mask
 * jax.nn.dot_product_attention's is_causal applies (jnp.tril(jnp.ones((T, S), bool))).
 * It broadcasts against [..., T, S] scores; flax's [batch..., 1, L, L] is a reshape away.
 * Use it as kiln_where(g, mask, scores, fill) with a bool mask (written-out attention with
 * this mask gets the fused kernel: docs/ops.md), or multiply by a 0/1 one. Built from two
 * iotas and a compare (no constant is stored). T, S >= 0; any dtype. */
KILN_API kiln_value kiln_make_causal_mask(kiln_graph *g, int64_t T, int64_t S, kiln_dtype dtype);

/* ------------------------------------------------- convolutions and pooling ---- */

/* Convolutions and windowed reductions (docs/ops.md, "Convolutions and pooling"). A
 * convolution is one op, which a GPU runs as its own kernel and the CPU as an im2col (the
 * patches of every output position, a buffer of the memory plan) times the kernel through
 * dot_general's GEMM. A window reduction is a composite of the ops above: one strided
 * slice per window position, reduced axis by axis, so it fuses, differentiates, plans and
 * runs on every backend as those do. */
#define KILN_CONV_MAX_SPATIAL 3

/* How a convolution or window pads its operand, as JAX's padding strings: EXPLICIT uses
 * the lo/hi pairs given (negative crops); VALID pads nothing; SAME pads so that each
 * output spatial size is ceil(input size / stride), the odd element of padding at the end
 * (lax.padtype_to_pads: pad = max(0, (out - 1) * stride + window - in), lo = pad / 2);
 * SAME_LOWER puts the odd element first. The window is the dilated one
 * ((k - 1) * dilation + 1); the input size is the undilated operand's, as in JAX. */
typedef enum kiln_padding {
    KILN_PADDING_EXPLICIT = 0,
    KILN_PADDING_VALID,
    KILN_PADDING_SAME,
    KILN_PADDING_SAME_LOWER,
} kiln_padding;

/* Where the batch, feature and spatial axes are (lax.ConvDimensionNumbers). NCHW: lhs
 * [N, C, spatial...], rhs [O, I, spatial...], out [N, O, spatial...] (lax's default,
 * dimension_numbers=None); NHWC: lhs [N, spatial..., C], rhs [spatial..., I, O] (HWIO),
 * out [N, spatial..., O] (flax's nn.Conv, ("NHWC", "HWIO", "NHWC")); SPECS: the
 * permutations in kiln_conv_options lhs_spec, rhs_spec and out_spec, as
 * ConvDimensionNumbers holds them. */
typedef enum kiln_conv_layout {
    KILN_CONV_NCHW = 0,
    KILN_CONV_NHWC,
    KILN_CONV_SPECS,
} kiln_conv_layout;

/* Options of kiln_conv_general_dilated; zero (or a NULL pointer) means the default of each
 * field. Arrays hold one entry per spatial axis, in the order of the spatial axes of the
 * layout (the "H", "W" of NCHW; lhs_spec[2..]). */
typedef struct kiln_conv_options {
    int64_t window_strides[KILN_CONV_MAX_SPATIAL]; /* >= 1; 0 means 1 */
    kiln_padding padding;                          /* EXPLICIT (default): pad_lo/pad_hi */
    int64_t pad_lo[KILN_CONV_MAX_SPATIAL];         /* EXPLICIT only; negative crops */
    int64_t pad_hi[KILN_CONV_MAX_SPATIAL];
    int64_t lhs_dilation[KILN_CONV_MAX_SPATIAL]; /* >= 1 (0 means 1): a transposed conv */
    int64_t rhs_dilation[KILN_CONV_MAX_SPATIAL]; /* >= 1 (0 means 1): atrous */
    int64_t feature_group_count;                 /* >= 1 (0 means 1) */
    int64_t batch_group_count;                   /* 0 or 1: other counts are refused */
    kiln_conv_layout layout;                     /* NCHW (default), NHWC or SPECS */
    /* SPECS only: lhs_spec = {batch axis, feature axis, spatial axes...} of lhs, rhs_spec =
     * {output feature axis, input feature axis, spatial axes...} of rhs, out_spec = {batch
     * axis, feature axis, spatial axes...} of the result; each a permutation of 0..rank-1. */
    int lhs_spec[KILN_CONV_MAX_SPATIAL + 2];
    int rhs_spec[KILN_CONV_MAX_SPATIAL + 2];
    int out_spec[KILN_CONV_MAX_SPATIAL + 2];
} kiln_conv_options;

/* jax.lax.conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
 * rhs_dilation, dimension_numbers, feature_group_count). lhs and rhs have one numeric
 * dtype (no promotion) and rank 2 + S, S = 1, 2 or 3 spatial axes. With lhs as [N, C, X...]
 * and rhs as [O, I, K...] (whatever the layout), the base-dilated (lhs_dilation - 1 zeros
 * between elements) and padded input xp and G = feature_group_count:
 *   out[n, o, y...] = sum over i < I and k... of xp[n, g * I + i, y * stride + k * rhs_dilation]
 *                     * rhs[o, i, k...],   g = o / (O / G)
 * so C must be I * G and O a multiple of G; each output size is
 * floor((padded - (K - 1) * rhs_dilation - 1) / stride) + 1, or 0 when the dilated kernel
 * is longer than the padded input. String padding (VALID, SAME, SAME_LOWER) with an
 * lhs_dilation other than 1 is refused, as JAX refuses it. One op ("convolution" in the
 * IR), with gradients (kiln_grad, kiln_jvp, kiln_vmap, any order) that are convolutions
 * too: the lhs's and the kernel's, XLA's transposed convolutions. A CUDA device runs all
 * of them as one implicit-GEMM kernel, without the patch matrix; the CPU runs im2col (a
 * fused patch kernel) and its GEMM library. Integers sum with wraparound. Errors,
 * naming kiln_conv_general_dilated, the operands' types and the caller's line: mixed or
 * non-numeric dtypes, ranks, a spec that is not a permutation, channels that disagree,
 * groups that do not divide the features, strides or dilations < 1, a padding that
 * leaves a spatial axis of negative size, batch_group_count > 1, a kernel spatial size 0,
 * a stride, dilation or padding beyond 2^40, a dilated extent beyond 2^62. */
KILN_API kiln_value kiln_conv_general_dilated(kiln_graph *g, kiln_value lhs, kiln_value rhs,
                                              const kiln_conv_options *opts);

/* The reduction of kiln_reduce_window. The initial value is the reduction's identity: 0
 * for SUM, -inf for MAX (the dtype's lowest for integers), +inf for MIN (the highest), so
 * padding changes a max or a sum only where a window holds nothing but padding, as
 * jax.lax.reduce_window with those init values (flax's max_pool, avg_pool). */
typedef enum kiln_window_kind {
    KILN_WINDOW_SUM = 0,
    KILN_WINDOW_MAX,
    KILN_WINDOW_MIN,
} kiln_window_kind;

/* Options of kiln_reduce_window and kiln_avg_pool: one entry per axis of the operand (up
 * to its rank); zero (or a NULL pointer) means the default of each field. */
typedef struct kiln_window_options {
    int64_t window_dimensions[KILN_MAX_RANK]; /* >= 1; 0 means 1 (no window on that axis) */
    int64_t window_strides[KILN_MAX_RANK];    /* >= 1; 0 means 1 */
    kiln_padding padding;                     /* as kiln_conv_options' */
    int64_t pad_lo[KILN_MAX_RANK];            /* EXPLICIT only; >= 0 */
    int64_t pad_hi[KILN_MAX_RANK];
    int64_t base_dilation[KILN_MAX_RANK];   /* >= 1; 0 means 1 */
    int64_t window_dilation[KILN_MAX_RANK]; /* >= 1; 0 means 1 */
} kiln_window_options;

/* jax.lax.reduce_window(x, init, computation, window_dimensions, window_strides, padding,
 * base_dilation, window_dilation) with computation add, max or min and its identity as
 * init (kiln_window_kind). x is numeric, of any rank >= 1; with xp the base-dilated and
 * padded x (the identity in the holes and the padding):
 *   out[y...] = reduce over k... of xp[y * stride + k * window_dilation]
 * each output size as in kiln_conv_general_dilated. Max pooling (flax's nn.max_pool over
 * NHWC) is MAX with windows {1, h, w, 1}. Gradients: SUM spreads the cotangent over each
 * window; MAX and MIN give each window's cotangent to its first extreme element in
 * row-major window order, as XLA's select_and_scatter does (a NaN counts as the extreme).
 * Errors name kiln_reduce_window, x's type, the caller's line and the bad option:
 * bool x, windows, strides or dilations < 1, negative explicit padding, string padding
 * with a base dilation. */
KILN_API kiln_value kiln_reduce_window(kiln_graph *g, kiln_value x, kiln_window_kind kind,
                                       const kiln_window_options *opts);
/* flax.linen.avg_pool(x, window, strides, padding, count_include_pad) over the windows of
 * opts: the SUM window reduction of a float x divided by the window's size
 * (count_include_pad: padding counts, flax's default) or by how many elements of x each
 * window holds (not counting padding or base-dilation holes). */
KILN_API kiln_value kiln_avg_pool(kiln_graph *g, kiln_value x, const kiln_window_options *opts,
                                  bool count_include_pad);

/* ------------------------------------------------------- linear algebra ---- */

/* Over the last two axes of each operand, with any batch axes before them (the same on
 * both operands), in f32 or f64 (LAPACK's types: a 16-bit matrix is an error; convert it
 * first). The CPU runs them with OpenBLAS's LAPACK (potrf, trsm); a device without such a
 * kernel runs a loop over the rows of the same flops (docs/ops.md, "Linear algebra").
 * Differentiable in both modes (their rules are JAX's) and batched by kiln_vmap. Errors
 * name the call, the operands' types and the caller's line. */

/* jnp.linalg.cholesky(a): the lower triangular L with L L^T = (a + a^T) / 2, a [..., m, m];
 * zeros above the diagonal. A matrix that is not positive definite gives NaN on and below
 * the diagonal (JAX's result; LAPACK's potrf reports it), the others of the batch their
 * factors. */
KILN_API kiln_value kiln_cholesky(kiln_graph *g, kiln_value a);

/* jax.lax.linalg.cholesky(a, symmetrize_input=False): the lower factor of a's lower
 * triangle as it stands (its upper triangle is never read), with kiln_cholesky's zeros and
 * NaN. Its gradient is JAX's for that call: the cotangent of a symmetric perturbation, so
 * not zero above the diagonal. For a matrix known to be symmetric it skips kiln_cholesky's
 * (a + a^T) / 2. */
KILN_API kiln_value kiln_cholesky_from_lower(kiln_graph *g, kiln_value a);

/* jax.lax.linalg.triangular_solve's options: zero (or a NULL pointer) is its defaults. */
typedef struct kiln_triangular_solve_options {
    bool left_side;     /* solve op(a) x = b; false: x op(a) = b */
    bool lower;         /* read a's lower triangle; false: its upper */
    bool transpose_a;   /* op(a) = a^T; false: a */
    bool unit_diagonal; /* a's diagonal is taken as ones and never read */
} kiln_triangular_solve_options;

/* jax.lax.linalg.triangular_solve(a, b, ...): x, with a [..., m, m] and b [..., m, n]
 * (left_side) or [..., n, m], of b's type. Only the triangle of a that opts names (and its
 * diagonal unless unit_diagonal) is read. A zero on the diagonal gives infinities and
 * NaNs, as LAPACK's trsm does. */
KILN_API kiln_value kiln_triangular_solve(kiln_graph *g, kiln_value a, kiln_value b,
                                          const kiln_triangular_solve_options *opts);

/* jnp.eye(n, m, k, dtype): ones where column - row == k, an [n, m] array. */
KILN_API kiln_value kiln_eye(kiln_graph *g, kiln_dtype dtype, int64_t n, int64_t m, int64_t k);
/* jnp.tril(x, k) / jnp.triu(x, k): x (rank >= 2) with zeros above (tril) or below (triu)
 * diagonal k of its last two axes (k > 0 above the main diagonal, k < 0 below). */
KILN_API kiln_value kiln_tril(kiln_graph *g, kiln_value x, int64_t k);
KILN_API kiln_value kiln_triu(kiln_graph *g, kiln_value x, int64_t k);
/* jnp.diagonal(x, offset, axis1, axis2): the elements x[..., i, i + offset] of the plane
 * of axes axis1 and axis2 (negative ones count from the end; jnp's defaults are 0 and 1,
 * a batch of matrices wants -2 and -1), on a new last axis after x's other axes, in order;
 * empty when the offset is past the plane. */
KILN_API kiln_value kiln_diagonal(kiln_graph *g, kiln_value x, int64_t offset, int axis1,
                                  int axis2);

/* jax.scipy.linalg.cho_solve((c, lower), b): x with a x = b for a = c c^T (lower) or
 * c^T c, c a Cholesky factor [..., m, m] (kiln_cholesky's, lower). b is [..., m, n], or
 * [..., m] for one right-hand side per matrix. */
KILN_API kiln_value kiln_cho_solve(kiln_graph *g, kiln_value c, bool lower, kiln_value b);

/* jax.nn.dot_product_attention (torch's scaled_dot_product_attention). For batch b, query
 * head n and query position i, with kv = n / G the key/value head it reads:
 *   p_j = softmax over j of scale * (q[b, i, n, :] . k[b, j, kv, :])
 *   out[b, i, n, :] = sum over j of p_j v[b, j, kv, :]
 * over the key positions j (only j <= i when is_causal: the lower triangle, aligned at the
 * top left as JAX and PyTorch align it). q is [B, T, N, H], k [B, S, K, H], v [B, S, K, Hv]
 * (or all three without B), f32, f64, bf16 or f16; the N query heads share the K key/value heads in
 * groups of G = N / K (grouped-query attention; K = N is plain multi-head attention). The
 * result is [B, T, N, Hv]. Errors (builder errors): mixed dtypes, ranks other than 3 or 4,
 * shapes that disagree, N not a multiple of K, S = 0, a scale that is not finite.
 *
 * One op, not a composite: the CPU runs it as a fused kernel that keeps each block of
 * scores in cache, never stores the [T, S] probabilities, and with is_causal skips the
 * key blocks a query block cannot see (about half the products at T = S); so does the
 * GPU's forward kernel; a backend without such a kernel runs the same primitives a user
 * would write. The
 * gradient recomputes the probabilities from q and k (as FlashAttention's backward does),
 * so training keeps q, k, v and the output, not the [T, S] scores: less memory for one more
 * [T, S] product per call in the backward pass, which has no fused kernel yet (docs/ops.md
 * measures both). A mask or bias other than causal: write it with kiln_dot_general,
 * kiln_where and kiln_softmax. Written out (q k^T, a scale, a causal where with -inf or a
 * finite fill such as -1e9, softmax, times v), a forward-only program gets this op's
 * kernel anyway: kiln_compile recognises the pattern when nothing else reads the scores
 * or probabilities, keeping a finite fill's meaning exactly (docs/ops.md). */
typedef struct kiln_attention_options {
    double scale;   /* multiplies q . k; 0 means 1 / sqrt(H), JAX's default (scale=None); 1
                     * when H = 0 */
    bool is_causal; /* query i attends to keys j <= i only */
} kiln_attention_options;
/* o may be NULL: scale 1 / sqrt(H), not causal. */
KILN_API kiln_value kiln_dot_product_attention(kiln_graph *g, kiln_value q, kiln_value k,
                                               kiln_value v, const kiln_attention_options *o);

/* Composites, built from the ops above (so autodiff and fusion see their parts). */
KILN_API kiln_value kiln_relu(kiln_graph *g, kiln_value x);
KILN_API kiln_value kiln_softmax(kiln_graph *g, kiln_value x, int axis);
KILN_API kiln_value kiln_log_softmax(kiln_graph *g, kiln_value x, int axis);
KILN_API kiln_value kiln_logsumexp(kiln_graph *g, kiln_value x, int naxes, const int *axes,
                                   bool keepdims);
/* Normalises over the last axis: (x - mean) / sqrt(var + eps) * scale + bias. scale and
 * bias have the last axis's shape; pass KILN_VALUE_NONE to leave either out. */
KILN_API kiln_value kiln_layer_norm(kiln_graph *g, kiln_value x, kiln_value scale, kiln_value bias,
                                    double eps);
/* kiln_layer_norm along `axis` (negative counts from the end), as flax's
 * LayerNorm(reduction_axes=axis, feature_axes=axis): mean and variance over that axis,
 * scale and bias of shape [dim of that axis] broadcast along it (KILN_VALUE_NONE leaves
 * either out). axis -1 is kiln_layer_norm. Direct rule, as kiln_layer_norm's. */
KILN_API kiln_value kiln_layer_norm_axis(kiln_graph *g, kiln_value x, kiln_value scale,
                                         kiln_value bias, int axis, double eps);
/* LLaMA's RMSNorm along `axis` (negative counts from the end):
 * x * rsqrt(mean(x^2 over axis) + eps) * scale. scale has the shape [dim of that axis] and
 * is broadcast along it; pass KILN_VALUE_NONE to leave it out. */
KILN_API kiln_value kiln_rms_norm(kiln_graph *g, kiln_value x, kiln_value scale, int axis,
                                  double eps);
/* jax.nn.gelu. approximate: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (GPT-2's);
 * otherwise the exact 0.5 x (1 + erf(x / sqrt 2)), which reaches 0 rather than a tiny
 * negative value far left (below about -5.6 in f32 and -8.4 in f64, with its relative
 * error growing on the way there; JAX's erfc form keeps those: docs/ops.md). */
KILN_API kiln_value kiln_gelu(kiln_graph *g, kiln_value x, bool approximate);
/* x * logistic(x) (jax.nn.silu, a.k.a. swish). */
KILN_API kiln_value kiln_silu(kiln_graph *g, kiln_value x);
/* jnp.square: x * x, numeric (integers wrap); the gradient is 2 x. */
KILN_API kiln_value kiln_square(kiln_graph *g, kiln_value x);
/* jnp.where: x where cond else y, all three broadcast together. cond is bool, or any
 * dtype and then true where nonzero (NaN counts as nonzero); x and y share a dtype. */
KILN_API kiln_value kiln_where(kiln_graph *g, kiln_value cond, kiln_value x, kiln_value y);
/* jnp.clip: min(max(x, lo), hi), with lo and hi values of the graph of x's dtype (numeric),
 * all three broadcast together. NaN propagates; lo > hi gives hi. The gradient is JAX's:
 * it reaches x where lo < x < hi, the bound beyond it, and splits 0.5/0.5 between x and the
 * bound where they are equal (docs/autodiff.md). */
KILN_API kiln_value kiln_clip(kiln_graph *g, kiln_value x, kiln_value lo, kiln_value hi);
/* logits [..., C] float, labels [...] integer in [0, C): per-example
 * logsumexp(logits) - logits[label], shape [...]. A label outside [0, C) picks no logit:
 * its loss is logsumexp(logits) and its gradient softmax(logits), as if that logit were 0
 * (optax's formula would wrap -1 to the last class and give NaN past C; PyTorch raises). */
KILN_API kiln_value kiln_softmax_cross_entropy(kiln_graph *g, kiln_value logits, kiln_value labels);

/* ----------------------------------------------------------- control flow ---- */

/* Loops and branches traced once (jax.lax.while_loop, fori_loop, scan, cond, switch):
 * the body is traced into a graph of its own, compiled once, and run as many times as
 * the loop needs, so a program's size and compile time do not grow with its trip count
 * (docs/control_flow.md). Loop-carried values are updated in place where the body allows.
 *
 * A body is a kiln_fn: it receives its own graph g (a sub-graph of the one being traced)
 * and n_in parameters kiln made for it, traces its computation on g, writes its results
 * to outs (room for KILN_MAX_OUTPUTS) and returns how many, or -1 after an error (a
 * builder error on g is reported as the loop's). user is passed through.
 *
 * A body reads a value of an enclosing graph (a weight, a mask) through kiln_capture;
 * using such a value directly is an error that says so. Every builder's error inside a
 * body becomes the error of the loop or branch on the enclosing graph, with the body's
 * message and line. */
typedef int (*kiln_fn)(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs);

/* Inside a body traced on g: value x of an enclosing graph (any level), as a value of g.
 * Capturing the same value twice gives the same value. */
KILN_API kiln_value kiln_capture(kiln_graph *g, kiln_value x);

/* while cond(carry) is true: carry = body(carry) (jax.lax.while_loop). init holds the n
 * carried values; cond returns one bool scalar; body returns n values of the carries'
 * dtypes and shapes (a carry that changes type is an error naming both types and the
 * body's line). out receives the n final carries. Not differentiable in reverse (as in
 * JAX): kiln_grad through it is an error; use kiln_scan or kiln_fori_loop. kiln_jvp
 * (forward mode) goes through it. */
KILN_API kiln_status kiln_while_loop(kiln_graph *g, kiln_fn cond, kiln_fn body, void *user, int n,
                                     const kiln_value *init, kiln_value *out);

/* for i in [lower, upper): carry = body(i, carry) (jax.lax.fori_loop with static bounds).
 * body receives n + 1 values: i (an i32 scalar), then the carries; it returns the n new
 * carries. Run as a scan, so it is differentiable (saving the body's residuals per
 * iteration: kiln_scan_options.checkpoint_body false). out receives the n final carries. */
KILN_API kiln_status kiln_fori_loop(kiln_graph *g, int64_t lower, int64_t upper, kiln_fn body,
                                    void *user, int n, const kiln_value *init, kiln_value *out);

/* Scan options: zero-initialised is jax.lax.scan's default. */
typedef struct kiln_scan_options {
    int64_t length; /* iterations; 0: the xs' leading axis (and 0 when there are none) */
    bool reverse;   /* from the last slice to the first; ys are still stored in order */
    /* What reverse mode keeps of each iteration. false (the default, as jax.lax.scan): the
     * forward scan also outputs, stacked per iteration, the values of the body its VJP
     * reads (its residuals), and the backward scan reads them instead of recomputing:
     * memory O(length x residuals), no recomputation. true (jax.checkpoint on the body):
     * the forward scan saves only the carries entering each iteration and the backward
     * scan recomputes the body from them: memory O(length x carries), the body run twice.
     * No effect on the forward computation. */
    bool checkpoint_body;
} kiln_scan_options;

/* carry, ys = scan(body, init, xs) (jax.lax.scan): for each i, body receives the n_carry
 * carries and the i-th slice of each of the n_xs arrays xs (their leading axis, of one
 * length, dropped) and returns n_carry new carries followed by any number of
 * per-iteration outputs. outs receives the n_carry final carries, then each per-iteration
 * output stacked along a new leading axis; *n_outs their count. opts may be NULL.
 * Differentiable (kiln_grad): the backward pass is a scan the other way over the body's
 * VJP, reading the residuals the forward scan saved per iteration, or, with
 * opts->checkpoint_body, recomputing the body from the carries it saved (docs/autodiff.md). */
KILN_API kiln_status kiln_scan(kiln_graph *g, kiln_fn body, void *user, int n_carry,
                               const kiln_value *init, int n_xs, const kiln_value *xs,
                               const kiln_scan_options *opts, int *n_outs, kiln_value *outs);

/* One of two branches, by a bool scalar (jax.lax.cond): true_fn(operands) if pred, else
 * false_fn(operands). Both are traced and must return values of the same dtypes and
 * shapes; only the chosen one runs. outs receives them, *n_outs their count.
 * Differentiable: the backward pass is a cond on the same predicate over the branches'
 * VJPs. */
KILN_API kiln_status kiln_cond(kiln_graph *g, kiln_value pred, kiln_fn true_fn, kiln_fn false_fn,
                               void *user, int n, const kiln_value *operands, int *n_outs,
                               kiln_value *outs);
/* branches[index](operands) (jax.lax.switch): index is an integer scalar, clamped into
 * [0, n_branches). */
KILN_API kiln_status kiln_switch(kiln_graph *g, kiln_value index, int n_branches,
                                 const kiln_fn *branches, void *user, int n,
                                 const kiln_value *operands, int *n_outs, kiln_value *outs);

/* --------------------------------------------------------------- autodiff ---- */

/* Reverse-mode differentiation inside the graph being traced (jax.grad / jax.vjp, but
 * appended to g rather than made a new function): the backward computation is added to g
 * as ordinary ops, so the caller keeps tracing (an optimiser update uses the gradients)
 * and forward, backward and update compile, fuse and are planned as one program. It works
 * inside a kiln_jit trace function and on a graph that already holds a backward pass
 * (gradients of gradients). docs/autodiff.md gives the conventions at non-smooth points.
 *
 * kiln_grad: loss is a float scalar (rank 0) of g; grads[i] receives d loss / d
 * wrt[i], of wrt[i]'s dtype and shape. wrt[i] may be a parameter or any float value of g;
 * one the loss does not depend on gets zeros. Integer and bool values carry no gradient,
 * nor do values behind kiln_stop_gradient, compare, floor or sign.
 * kiln_vjp: the same for several outputs with given cotangents: grads[i] receives
 * sum_j cotangents[j] . d outs[j] / d wrt[i]; cotangents[j] has outs[j]'s type. An integer
 * or bool output carries no gradient (JAX's float0 cotangent): its cotangent may be
 * KILN_VALUE_NONE, and is not read.
 *
 * Errors are builder errors (sticky on g, as for the ops above): a non-scalar or integer
 * loss, a value of another graph, an integer wrt, n <= 0 or NULL arrays, a cotangent of
 * the wrong type. On error every grads[i] is the invalid value. */
KILN_API kiln_status kiln_grad(kiln_graph *g, kiln_value loss, int n, const kiln_value *wrt,
                               kiln_value *grads);
KILN_API kiln_status kiln_vjp(kiln_graph *g, int n_out, const kiln_value *outs,
                              const kiln_value *cotangents, int n_wrt, const kiln_value *wrt,
                              kiln_value *grads);

/* Forward-mode differentiation inside the graph being traced (jax.jvp, appended to g as
 * kiln_vjp's backward pass is; docs/autodiff.md, "Forward mode"): the primal computation is
 * the nodes g already holds, and tangents_out[j] receives
 *   sum_i d outs[j] / d primals_in[i] . tangents_in[i],
 * built as ordinary ops of g, so it fuses and compiles with the rest and may be
 * differentiated again (kiln_jvp of a kiln_grad's gradient is a Hessian-vector product).
 * primals_in[i] may be a parameter or any value of g; it is treated as an input of its own
 * (its own inputs' tangents do not reach it). tangents_in[i] is a value of g of
 * primals_in[i]'s dtype and shape (bf16/f16 tangents for bf16/f16 primals), or
 * KILN_VALUE_NONE for a zero tangent, which builds nothing. Integer and bool values carry no
 * tangent (JAX's float0): an integer primal's tangent is ignored, and an integer or bool
 * output's tangents_out[j] is the invalid value. Values behind kiln_stop_gradient, compare,
 * floor, sign, random numbers and constants have a zero tangent; a float output that does
 * not depend on any primal gets zeros (a broadcast scalar: no buffer). Zero tangents are
 * tracked symbolically, as JAX does: no node is built for them. Loops and branches
 * (kiln_while_loop, kiln_scan, kiln_cond, ...) get a loop or branch of the same kind that
 * carries primal and tangent values together, as jax.jvp gives (while loops included).
 *
 * Errors are builder errors (sticky on g): n_out or n_in <= 0, NULL arrays, a value of
 * another graph, a tangent whose dtype or shape differs from its primal's (the message
 * names both types). On error every tangents_out[j] is the invalid value. */
KILN_API kiln_status kiln_jvp(kiln_graph *g, int n_out, const kiln_value *outs, int n_in,
                              const kiln_value *primals_in, const kiln_value *tangents_in,
                              kiln_value *tangents_out);

/* A function with a gradient of the user's own (jax.custom_vjp): out = fwd(args) whose VJP is
 * bwd, not the derivative of fwd's ops. For a numerically stable or cheaper rule than autodiff
 * finds (log1p(exp(x))), a gradient on purpose different from the true one (gradient clipping,
 * a straight-through estimator through a rounding), or a rule autodiff has none for.
 *
 * fwd and bwd are kiln_fn (the bodies' type of control flow above), both traced on g itself,
 * not on a sub-graph: fwd(g, n, args, user, outs) traces the computation of the n values args
 * (the caller's own values, passed as they are) and writes n_out outputs followed by any
 * residuals, the forward values bwd needs, returning how many (n_out to KILN_MAX_OUTPUTS).
 * outs receives the n_out outputs. fwd's ops are ordinary ops of g: they are interpreted,
 * fused, compiled and planned as any others, and a checkpoint region around the call drops and
 * recomputes the residuals as any forward value.
 *
 * When kiln_grad or kiln_vjp reaches an output, it calls bwd once, on the graph being
 * differentiated, with residuals then the outputs' cotangents (a float output no gradient
 * reaches, or an integer one, gets zeros of its type): bwd(g, n_res + n_out, in, user, grads)
 * writes the cotangent of each of the n args, of the arg's dtype and shape, or
 * KILN_VALUE_NONE for zero (always so for an integer arg), and returns n. Its ops are
 * appended as the rest of the backward pass is, so a second kiln_grad differentiates them by
 * their ordinary rules (gradients of gradients; the residuals' own derivatives come from
 * fwd's ops). The args are the only values whose gradient bwd gives: another value of g that
 * fwd reads gets no gradient through the outputs, and bwd must build from its inputs (and
 * constants) only, because it may run on another graph than g: inside a kiln_scan or
 * kiln_cond body, the loop's VJP recomputes the body on a graph of its own and calls bwd
 * there. So user must stay valid until the last kiln_grad, kiln_vjp or kiln_graph_destroy of g
 * (and of any graph g is the body of). Nested calls work (a call inside fwd or bwd).
 *
 * What differs from JAX: no pytrees (flat value lists; fwd says which values are residuals by
 * returning them after the n_out outputs); fwd's ops stay in g, where JAX's custom_vjp is an
 * opaque call. kiln_jvp through one is refused (KILN_STATUS_UNIMPLEMENTED, naming the call's
 * line), as JAX refuses forward mode on a custom_vjp.
 *
 * Errors are builder errors (sticky on g) naming kiln_custom_vjp and the line of the call: NULL
 * fwd or bwd, n outside 0..KILN_MAX_OUTPUTS, n_out < 1, an arg of another graph, fwd returning
 * fewer than n_out values or an error of its own; at kiln_grad: bwd returning a count other
 * than n, or a cotangent whose dtype or shape differs from its arg's (both types named). On
 * error every outs[j] is the invalid value. */
KILN_API kiln_status kiln_custom_vjp(kiln_graph *g, kiln_fn fwd, kiln_fn bwd, void *user, int n,
                                     const kiln_value *args, int n_out, kiln_value *outs);

/* Vectorising map (jax.vmap): fn applied to every example of a batch, as one batched
 * computation appended to g (no loop for the ops that have a direct batching rule).
 *
 * fn is a kiln_fn (the bodies' type of control flow above), traced once on a sub-graph of g
 * whose n parameters have the per-example types: args[i]'s type with axis in_axes[i]
 * removed, or args[i]'s own type when in_axes[i] is KILN_VMAP_NONE (not batched, JAX's
 * None: every example sees the whole value). fn reads other values of g (weights) through
 * kiln_capture, as a loop body does; they are not batched. fn returns n_out values (its
 * count must be n_out). Then a batching rule per op (docs/autodiff.md, "Batching"; the kind of
 * each op's rule in docs/ops.md) rewrites fn's ops into ops of g over the whole batch: an
 * op none of whose inputs is batched is emitted as it is; elementwise, shape, reduction,
 * dot, indexing (batched indices and starts become gathers over the flattened batch),
 * sorting, attention, collective ops and control flow (a loop or branch inside fn runs once,
 * over batched bodies, as in JAX) get direct batched forms, none of them a loop over the
 * batch. An op without a direct rule would fall back to a kiln_scan over the batch axis that
 * runs it once per example (JAX's sequential fallback): no op of the registry needs it now.
 *
 * in_axes[i] is the axis of args[i] that is batched, in [0, rank), or KILN_VMAP_NONE; NULL
 * means 0 for every arg. Negative axes are refused (-1 is KILN_VMAP_NONE, so counting from
 * the end, as JAX does, would be ambiguous). The batch size B is the extent of that axis,
 * the same for every batched arg; at least one arg must be batched (as in JAX). outs[j]
 * receives output j with the batch axis at out_axes[j], in [0, rank of the per-example
 * output]: an output that no batched value reaches is broadcast along it (as JAX does);
 * out_axes NULL means 0 for every output. KILN_VMAP_NONE in out_axes is allowed for an
 * output that is not batched only (it is returned as fn made it).
 *
 * Composes with the other transforms: kiln_grad, kiln_vjp or kiln_jvp inside fn give
 * per-example derivatives (vmap(grad(loss))); kiln_grad of values kiln_vmap made
 * differentiates the batched ops, which are ordinary ops of g; kiln_vmap inside fn nests,
 * and works inside loop bodies. A kiln_custom_vjp call inside fn is batched whole, as
 * jax.vmap batches a custom_vjp function: its fwd and bwd run under kiln_vmap (bwd's
 * cotangent for an unbatched arg summed over the batch), so kiln_grad keeps the user's rule.
 *
 * Errors are builder errors (sticky on g) naming kiln_vmap: n or n_out outside
 * 1..KILN_MAX_OUTPUTS, NULL fn, args or outs, an in_axes or out_axes entry out of range (the
 * message names the entry, the axis and the arg's type), batched args whose batch sizes
 * differ (both args and sizes named), no batched arg, fn returning another count than n_out
 * or an error of its own, and a rule that fails (the message names the op being batched,
 * its operands' types and the line of fn that made it). On error every outs[j] is the
 * invalid value. */
#define KILN_VMAP_NONE (-1)
KILN_API kiln_status kiln_vmap(kiln_graph *g, kiln_fn fn, void *user, int n, const kiln_value *args,
                               const int *in_axes, int n_out, const int *out_axes,
                               kiln_value *outs);

/* ------------------------------------------------------------ checkpoints ---- */

/* Rematerialisation (jax.checkpoint): the values traced between kiln_checkpoint_begin and
 * kiln_checkpoint_end on g are not kept for the backward pass unless the region's policy
 * saves them; when a backward pass (kiln_grad, kiln_vjp) reads one, kiln_compile
 * recomputes it there, just before its first use, from the values that were kept (the
 * region's inputs and what the policy saves). The gradients are the same; the peak is
 * lower and the step does more work (docs/memory.md, "Rematerialisation").
 *
 * Regions nest: a value is kept only if every region open around it saves it (an outer
 * nothing_saveable recomputes an inner region's saved values too, as nested
 * jax.checkpoint does). Parameters and constants are never recomputed, nor a value the
 * graph returns. A region must end before kiln_graph_finish, and kiln_grad may be called
 * inside or after it. Policies, with JAX's names (jax.checkpoint_policies) and meanings: */
typedef enum kiln_checkpoint_policy {
    KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE,    /* jax.checkpoint's default: recompute all */
    KILN_CHECKPOINT_POLICY_EVERYTHING_SAVEABLE, /* save all: the region changes nothing */
    KILN_CHECKPOINT_POLICY_DOTS_SAVEABLE,       /* save matrix products (dot_general) and
                                                 * convolutions, as jax's */
    KILN_CHECKPOINT_POLICY_DOTS_WITH_NO_BATCH_DIMS_SAVEABLE, /* ... with no batch axes */
    KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES,            /* save values named one of names */
    KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE,         /* save named values not in names */
    /* Host offload (docs/memory.md, "Host offload"): an offloaded value is copied to the
     * device's host memory kind (kiln_memory_put) once the forward pass has made it, its
     * device bytes are free after its last forward read, and it is copied back just before
     * the backward pass first reads it. */
    KILN_CHECKPOINT_POLICY_OFFLOAD_DOT_WITH_NO_BATCH_DIMS,    /* offload products with no batch
                                                               * axes, recompute the rest */
    KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES, /* kiln_checkpoint_begin_offload */
} kiln_checkpoint_policy;
/* "nothing_saveable", "everything_saveable", ...; "?" for anything else. Static. */
KILN_API const char *kiln_checkpoint_policy_name(kiln_checkpoint_policy p);

/* Opens a region. names (n_names strings, copied) are the names of the two names
 * policies and must be NULL/0 for the others. Errors are builder errors (sticky). */
KILN_API kiln_status kiln_checkpoint_begin(kiln_graph *g, kiln_checkpoint_policy policy,
                                           int n_names, const char *const *names);
/* Opens a region of KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES
 * (jax.checkpoint_policies.save_and_offload_only_these_names with offload_src "device",
 * offload_dst "pinned_host"): values named one of save_names are saved on the device, those
 * named one of offload_names (and not of save_names) are offloaded to host memory, the rest
 * are recomputed. Names are copied; either list may be empty. */
KILN_API kiln_status kiln_checkpoint_begin_offload(kiln_graph *g, int n_save,
                                                   const char *const *save_names, int n_offload,
                                                   const char *const *offload_names);
/* Closes the innermost open region; a graph with no open region is an error. */
KILN_API kiln_status kiln_checkpoint_end(kiln_graph *g);

/* ----------------------------------------------------------- memory kinds ---- */

/* (kiln_memory_kind: see "arrays" above) */
/* x in memory kind `kind` (jax.device_put(x, memory_kind) inside jit): a copy, or x itself
 * when it is in that kind already. A value in pinned_host memory is not computed on: the
 * only op that reads it is a kiln_memory_put back to the device (anything else is an error
 * naming the op), and it may be a graph output (an array of that kind), though not a
 * loop's or branch's result. The memory plan keeps host temporaries in a host arena of
 * their own (kiln_memory_analysis.host_temp_bytes), outside the device's peak. Its
 * gradient is the cotangent, on the device. */
KILN_API kiln_value kiln_memory_put(kiln_graph *g, kiln_value x, kiln_memory_kind kind);
/* A parameter whose argument lives in memory kind `kind` (jax.jit's in_shardings with a
 * memory kind): with KILN_MEMORY_PINNED_HOST the call takes an array made in that kind
 * (kiln_array_create_in_memory) and the program reads it only through kiln_memory_put(g,
 * x, KILN_MEMORY_DEVICE), as any host value. Parameters and optimiser state kept in host
 * memory between steps (ZeRO-Offload's layout) are such parameters, and the step returns
 * their new values with kiln_memory_put(g, y, KILN_MEMORY_PINNED_HOST): a graph output in
 * pinned_host memory is an array of that kind, and donating the argument lets the output
 * take its buffer. Neither counts in the device's peak (kiln_memory_analysis's host_*
 * fields count them). KILN_MEMORY_DEVICE is kiln_parameter. */
KILN_API kiln_value kiln_parameter_in_memory(kiln_graph *g, const char *name, kiln_dtype dtype,
                                             int rank, const int64_t *dims, kiln_memory_kind kind);
/* The memory kind of value v of g (kiln_memory_kind), or -1 for a value not of g. */
KILN_API int kiln_value_memory_kind(const kiln_graph *g, kiln_value v);
/* "device", "pinned_host"; "?" for anything else. Static. */
KILN_API const char *kiln_memory_kind_name(kiln_memory_kind kind);
/* Names x for the names policies of the regions that end after this call
 * (jax.ad_checkpoint.checkpoint_name) and returns x itself. A value may take several
 * names; name is copied. */
KILN_API kiln_value kiln_checkpoint_name(kiln_graph *g, kiln_value x, const char *name);

/* ----------------------------------------------------------------- random ---- */

/* Random numbers as traced values, as jax.random (docs/random.md). A key is an i32[2]
 * value: two uint32 words held as i32 bit patterns (kiln has no unsigned dtype), the same
 * bits as jax.random.key_data. Keys are values, not state: a step can take its key as a
 * parameter and return the next one, and a jitted function never retraces for a new key.
 * Draws are Threefry-2x32 of the key on each element's row-major position, computed inside
 * the compiled program (fused into whatever consumes them, on every backend); kiln_random_bits
 * and f32 kiln_random_uniform (on [0, 1) and, rounding once as XLA does, on other bounds)
 * give the same bits as jax.random for the same key, on every backend and in the
 * interpreter (f64 bounded and normal draws: to a few ulp, docs/random.md), and so do bf16
 * and f16 uniform and normal draws (bounded f16: JAX's on CPUs with AVX512-FP16; JAX's own
 * differ elsewhere, docs/random.md). A draw holds at most 2^32 elements. The draws have no
 * gradient (the key is not differentiable). Errors (a key that is not i32[2], p or rate
 * outside [0, 1], bounds that are not finite lo < hi in the dtype, or whose difference is
 * not) are the builder's, named after the function. */

/* jax.random.PRNGKey(seed): the constant key {seed >> 32, seed & 0xffffffff}; JAX gives
 * that with jax_enable_x64 on, and with its default (off) for seeds in [0, 2^31) only: it
 * takes a negative or larger seed's low 32 bits as {0, seed & 0xffffffff}. */
KILN_API kiln_value kiln_random_key(kiln_graph *g, uint64_t seed);
/* jax.random.split: n >= 1 new keys written to keys[0..n). One draw makes all n (a key
 * per element of an [n, 2] result, sliced out for each), but C reads best with an array of
 * values to pass on: keys[1] rather than a slice and a reshape per use. Returns the
 * graph's status; on an error every keys[i] is the invalid value. */
KILN_API kiln_status kiln_random_split(kiln_graph *g, kiln_value key, int n, kiln_value *keys);
/* jax.random.fold_in: a new key from key and data, a rank-0 i32 or i64 value (an i64
 * counts modulo 2^32), traced: fold in a step number passed as a parameter to get a
 * fresh key per step without retracing. fold_in(key, i) is split(key, n)[i], as in JAX. */
KILN_API kiln_value kiln_random_fold_in(kiln_graph *g, kiln_value key, kiln_value data);
/* jax.random.bits: 32 random bits per element, as i32 bit patterns. */
KILN_API kiln_value kiln_random_bits(kiln_graph *g, kiln_value key, int rank, const int64_t *dims);
/* Uniform on [lo, hi) of dtype f32, f64, bf16 or f16 (lo and hi rounded to it first; both
 * finite, lo < hi). The [0, 1) draw fills the mantissa as jax.random.uniform does; scaled bounds
 * are clamped below hi (where JAX's may round up to hi). */
KILN_API kiln_value kiln_random_uniform(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                                        const int64_t *dims, double lo, double hi);
/* Standard normal (mean 0, variance 1) of dtype f32, f64, bf16 or f16: sqrt(2) erfinv(u),
 * u uniform on (-1, 1), as jax.random.normal (16-bit: rounded to the dtype as it does). */
KILN_API kiln_value kiln_random_normal(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                                       const int64_t *dims);
/* bool, true with probability p in [0, 1] (uniform f32 < p, as jax.random.bernoulli). */
KILN_API kiln_value kiln_random_bernoulli(kiln_graph *g, kiln_value key, double p, int rank,
                                          const int64_t *dims);
/* jax.random's other samplers, written as JAX writes them (docs/random.md, "Other
 * distributions"): the integer ones give JAX's values bit for bit, the float ones to a few
 * ulps (log, log1p, erf and erf_inv are kiln's, not XLA's). Each checks what the uniform
 * and normal draws check, and names itself in its errors.
 *
 * jax.random.randint: i32 uniform on [minval, maxval) (bounds clipped to i32; an empty
 * range gives minval), from 64 random bits an element folded in modulo the span, as
 * JAX does (so a span that is not a power of two is biased by at most span / 2^32). */
KILN_API kiln_value kiln_random_randint(kiln_graph *g, kiln_value key, int rank,
                                        const int64_t *dims, int64_t minval, int64_t maxval);
/* jax.random.gumbel (its default mode): -log(-log(u)), u uniform on [tiny, 1). */
KILN_API kiln_value kiln_random_gumbel(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                                       const int64_t *dims);
/* jax.random.exponential: -log1p(-u), u uniform on [0, 1). */
KILN_API kiln_value kiln_random_exponential(kiln_graph *g, kiln_value key, kiln_dtype dtype,
                                            int rank, const int64_t *dims);
/* jax.random.truncated_normal: a standard normal draw conditioned on (lower, upper),
 * lower < upper (either may be infinite): sqrt(2) erf_inv(u), u uniform between the
 * bounds' erf(x / sqrt(2)), clamped strictly inside the bounds. A range so far in a tail
 * that both bounds' erf round to one value is refused. */
KILN_API kiln_value kiln_random_truncated_normal(kiln_graph *g, kiln_value key, kiln_dtype dtype,
                                                 int rank, const int64_t *dims, double lower,
                                                 double upper);
/* jax.random.categorical(key, logits, axis): i32 samples of the distributions softmax(logits)
 * along `axis` (negative counts from the end), that axis removed: argmax(logits +
 * gumbel). Float logits; -inf marks an impossible category. */
KILN_API kiln_value kiln_random_categorical(kiln_graph *g, kiln_value key, kiln_value logits,
                                            int axis);
/* jax.random.permutation(key, n): i32[n], a random order of 0 .. n-1 (JAX's: rounds of a
 * stable sort by fresh 32-bit keys, one round up to n = 1625). Permute an array with
 * kiln_take(x, perm, axis). */
KILN_API kiln_value kiln_random_permutation(kiln_graph *g, kiln_value key, int64_t n);
/* Inverted dropout of a float x: each element is dropped (0) with probability rate in
 * [0, 1] and the rest divided by 1 - rate, so the expectation is x (flax's
 * nn.Dropout: where(bernoulli(key, 1 - rate), x / (1 - rate), 0)); rate 0 returns x,
 * rate 1 zeros. Differentiable in x; use a fresh key per step (kiln_random_fold_in). */
KILN_API kiln_value kiln_dropout(kiln_graph *g, kiln_value key, kiln_value x, double rate);

#if !defined(KILN_NO_LOCATION_MACROS) && !defined(KILN_BUILDING)
#define kiln_random_key(g, ...)         KILN__V(g, kiln_random_key((g), __VA_ARGS__))
#define kiln_random_split(g, ...)       KILN__S(g, kiln_random_split((g), __VA_ARGS__))
#define kiln_random_fold_in(g, ...)     KILN__V(g, kiln_random_fold_in((g), __VA_ARGS__))
#define kiln_random_bits(g, ...)        KILN__V(g, kiln_random_bits((g), __VA_ARGS__))
#define kiln_random_uniform(g, ...)     KILN__V(g, kiln_random_uniform((g), __VA_ARGS__))
#define kiln_random_normal(g, ...)      KILN__V(g, kiln_random_normal((g), __VA_ARGS__))
#define kiln_random_bernoulli(g, ...)   KILN__V(g, kiln_random_bernoulli((g), __VA_ARGS__))
#define kiln_dropout(g, ...)            KILN__V(g, kiln_dropout((g), __VA_ARGS__))
#define kiln_random_randint(g, ...)     KILN__V(g, kiln_random_randint((g), __VA_ARGS__))
#define kiln_random_gumbel(g, ...)      KILN__V(g, kiln_random_gumbel((g), __VA_ARGS__))
#define kiln_random_exponential(g, ...) KILN__V(g, kiln_random_exponential((g), __VA_ARGS__))
#define kiln_random_truncated_normal(g, ...)                                                       \
    KILN__V(g, kiln_random_truncated_normal((g), __VA_ARGS__))
#define kiln_random_categorical(g, ...) KILN__V(g, kiln_random_categorical((g), __VA_ARGS__))
#define kiln_random_permutation(g, ...) KILN__V(g, kiln_random_permutation((g), __VA_ARGS__))
#endif

/* ------------------------------------------------------------- optimisers ---- */

/* Optimisers as traced functions (docs/optimisers.md): each call appends the update of
 * every parameter to the graph, so forward pass, backward pass (kiln_grad) and update
 * compile as one program; with the parameters and the optimiser state donated
 * (kiln_compile_options.donate_argnums), the update overwrites them in place. Each
 * parameter's update is elementwise, so it fuses into a few loop kernels of its own, with
 * no full-size temporary.
 *
 * Hyperparameters are rank-0 values of the graph, of any numeric dtype: a parameter fed
 * each call (a learning-rate schedule, the step count: no retrace, no recompile) or a
 * constant (kiln_scalar(g, KILN_DTYPE_F64, 3e-4)). An unset one (KILN_VALUE_NONE, the zero
 * value a zero-initialised options struct holds) takes the default named beside it. Scalar
 * arithmetic on them (bias corrections, products of hyperparameters) is done in f64; the
 * elementwise update in each parameter's dtype.
 *
 * Arrays: params[i], grads[i] and the state arrays' [i] must agree in dtype (a float:
 * f32, f64, bf16 or f16; mixed precision keeps f32 masters and state, docs/ops.md) and
 * shape; outputs are written per index after its inputs are read, so an output array
 * may be the input array itself (new values replace the old, as in a training loop).
 * Optimiser state starts as zeros: kiln_array_create(ctx, dtype, rank, dims, NULL, &m)
 * for each parameter. Errors are builder errors (sticky; kiln_graph_finish returns the
 * first), naming the optimiser, the array and the index of the bad entry; on any error
 * every output is set to the invalid value. */

/* torch.optim.SGD / optax.sgd: with weight decay wd, momentum mu and buffer b,
 *   g' = g + wd p;  b' = mu b + g';  d = nesterov ? g' + mu b' : b';  p' = p - lr d
 * (without momentum d = g'). The buffer starts at zeros, so b' = g' at the first step, as
 * torch sets it. */
typedef struct kiln_sgd_options {
    kiln_value lr;           /* unset: 1e-3 */
    kiln_value momentum;     /* unset: none (plain SGD: no buffers) */
    kiln_value weight_decay; /* unset: none (L2, added to the gradient as torch does) */
    bool nesterov;           /* Nesterov momentum; needs momentum */
} kiln_sgd_options;
/* momentum / new_momentum: one buffer per parameter when o->momentum is set, else NULL. */
KILN_API kiln_status kiln_optim_sgd(kiln_graph *g, const kiln_sgd_options *o, int n,
                                    const kiln_value *params, const kiln_value *grads,
                                    const kiln_value *momentum, kiln_value *new_params,
                                    kiln_value *new_momentum);

/* Adam and AdamW (torch.optim.Adam/AdamW, optax.adam/adamw; their updates are the same
 * formula), at step t = 1, 2, ... (the number of this update):
 *   m' = b1 m + (1 - b1) g;   v' = b2 v + (1 - b2) g^2
 *   p' = p - (lr / (1 - b1^t) * m' / (sqrt(v') / sqrt(1 - b2^t) + eps) + lr wd p)
 * with eps outside the square root, and p rounded once (as optax.adamw; torch's
 * p (1 - lr wd) - step rounds twice, which in bf16 quantises the decay). kiln_optim_adamw
 * decays the weights decoupled as written (wd unset: 1e-2, torch's default; optax.adamw's
 * is 1e-4); kiln_optim_adam has
 * no decay unless weight_decay is set, and then adds wd p to the gradient (L2, as
 * torch.optim.Adam does) instead. */
typedef struct kiln_adam_options {
    kiln_value lr;           /* unset: 1e-3 */
    kiln_value b1;           /* unset: 0.9 */
    kiln_value b2;           /* unset: 0.999 */
    kiln_value eps;          /* unset: 1e-8 */
    kiln_value weight_decay; /* see above */
    kiln_value step;         /* required: t, the 1-based number of this update */
} kiln_adam_options;
typedef kiln_adam_options kiln_adamw_options;
KILN_API kiln_status kiln_optim_adam(kiln_graph *g, const kiln_adam_options *o, int n,
                                     const kiln_value *params, const kiln_value *grads,
                                     const kiln_value *m, const kiln_value *v,
                                     kiln_value *new_params, kiln_value *new_m, kiln_value *new_v);
KILN_API kiln_status kiln_optim_adamw(kiln_graph *g, const kiln_adamw_options *o, int n,
                                      const kiln_value *params, const kiln_value *grads,
                                      const kiln_value *m, const kiln_value *v,
                                      kiln_value *new_params, kiln_value *new_m, kiln_value *new_v);

/* Lion (optax.lion; Chen et al., "Symbolic Discovery of Optimization Algorithms", 2023):
 *   c = b1 m + (1 - b1) g;   m' = b2 m + (1 - b2) g;   p' = p - lr (sign(c) + wd p)
 * with p rounded once, as optax's chain (scale_by_lion, add_decayed_weights, scale by -lr).
 * One state array per parameter, m, where Adam keeps two: half Adam's optimiser state.
 * Every step moves each element by lr (the sign), so Lion's lr is typically 3-10x smaller
 * than AdamW's and its weight decay as much larger. */
typedef struct kiln_lion_options {
    kiln_value lr;           /* unset: 1e-4 */
    kiln_value b1;           /* unset: 0.9 */
    kiln_value b2;           /* unset: 0.99 */
    kiln_value weight_decay; /* unset: 1e-3 (optax.lion's) */
} kiln_lion_options;
KILN_API kiln_status kiln_optim_lion(kiln_graph *g, const kiln_lion_options *o, int n,
                                     const kiln_value *params, const kiln_value *grads,
                                     const kiln_value *m, kiln_value *new_params,
                                     kiln_value *new_m);

/* Adafactor (optax.adafactor; Shazeer and Stern, "Adafactor: Adaptive Learning Rates with
 * Sublinear Memory Cost", 2018), at step t = 1, 2, ... (optax's count + 1). The second
 * moments decay by d = 1 - t^-decay_rate. A parameter of rank >= 2 whose second largest
 * dimension is at least min_dim_size_to_factor is factored: with a0 its largest axis and
 * a1 the second largest (of equal sizes the later axis is the larger: a stable sort's order,
 * which NumPy's argsort in optax also gives up to rank 3; from rank 4 its unstable sort may
 * order tied axes otherwise, so optax's state of such a parameter can hold v_row and v_col
 * the other way round),
 *   s = g^2 + eps;  r' = d r + (1 - d) mean(s, a0);  c' = d c + (1 - d) mean(s, a1)
 *   u = g * rsqrt(r' / mean(r' over a1)) [along a0] * rsqrt(c') [along a1]
 * so its state is a row and a column of moments, not a full-size one; any other parameter
 * keeps v' = d v + (1 - d) s and u = g * rsqrt(v'). Then, per parameter as optax chains them:
 * u /= max(1, rms(u) / clipping_threshold); u *= lr; u *= max(rms(p), 1e-3) (the parameter
 * scale); u += wd p; and p' = p - u. Momentum (optax's momentum, off by default) is not
 * offered. The state arrays' shapes: kiln_optim_adafactor_state_shape. */
typedef struct kiln_adafactor_options {
    kiln_value lr;                 /* unset: 1e-2 (optax has none: kiln_scalar 1 is its
                                      update without a learning rate) */
    kiln_value step;               /* required: t, the 1-based number of this update
                                      (optax's decay_offset: pass t - offset) */
    kiln_value decay_rate;         /* unset: 0.8 */
    kiln_value clipping_threshold; /* unset: 1 (clip to an RMS of 1); see no_clipping */
    kiln_value weight_decay;       /* unset: none */
    kiln_value eps;                /* unset: 1e-30 */
    int min_dim_size_to_factor;    /* 0: 128 (optax's default; 1 factors every matrix, as
                                      optax's 0 does); negative: an error */
    bool unfactored;               /* optax's factored=False: a full-size v for every one */
    bool no_parameter_scale;       /* optax's multiply_by_parameter_scale=False */
    bool no_clipping;              /* optax's clipping_threshold=None */
} kiln_adafactor_options;
/* One parameter's state under o, as optax.adafactor's init makes it: factored, v_row and
 * v_col are the parameter's shape without its largest and its second largest axis, and v is
 * [1]; otherwise v_row and v_col are [1] and v is the parameter's shape. Each array is
 * zeros of the parameter's dtype at the start. */
typedef struct kiln_adafactor_state_shape {
    bool factored;
    int v_row_rank, v_col_rank, v_rank;
    int64_t v_row[KILN_MAX_RANK], v_col[KILN_MAX_RANK], v[KILN_MAX_RANK];
} kiln_adafactor_state_shape;
KILN_API kiln_status kiln_optim_adafactor_state_shape(const kiln_adafactor_options *o, int rank,
                                                      const int64_t *dims,
                                                      kiln_adafactor_state_shape *out);
/* v_row[i], v_col[i], v[i]: parameter i's state, of its dtype and the shapes above. */
KILN_API kiln_status kiln_optim_adafactor(kiln_graph *g, const kiln_adafactor_options *o, int n,
                                          const kiln_value *params, const kiln_value *grads,
                                          const kiln_value *v_row, const kiln_value *v_col,
                                          const kiln_value *v, kiln_value *new_params,
                                          kiln_value *new_v_row, kiln_value *new_v_col,
                                          kiln_value *new_v);

/* optax.clip_by_global_norm: norm = sqrt(sum over i of sum(grads[i]^2)); each gradient
 * is kept as it is when norm < max_norm, else replaced by grads[i] / norm * max_norm (so a
 * zero gradient stays zero, and at norm == max_norm the scaled form, equal up to
 * rounding, is used). max_norm (a rank-0 value, required) should be > 0; a constant
 * <= 0 is an error. global_norm (may be NULL) receives the norm before clipping, rank 0,
 * f64 if any gradient is f64, else f32. */
KILN_API kiln_status kiln_optim_clip_by_global_norm(kiln_graph *g, kiln_value max_norm, int n,
                                                    const kiln_value *grads, kiln_value *clipped,
                                                    kiln_value *global_norm);

/* ---------------------------------------------------------- loss scaling ---- */

/* Mixed precision (docs/mixed_precision.md) keeps the parameters and the optimiser state
 * in f32 and computes in bf16 or f16, converting each parameter where it is used
 * (kiln_convert, whose gradient hands back an f32 gradient). f16's range is narrow (its
 * smallest normal is 6.1e-5, its largest finite 65504), so small gradients of an f16
 * backward pass flush to zero: loss scaling multiplies the loss by a scale S before
 * kiln_grad, so every cotangent is S times larger, and divides the gradients by S again
 * before the update (torch.amp.GradScaler, jmp.DynamicLossScale). bf16 has f32's range and
 * needs none.
 *
 * kiln_loss_scale_unscale divides grads[i] by S into unscaled[i] (by 1 / S computed in
 * f64 and rounded once to f32, or f64 for an f64 gradient; a bf16 or f16 gradient is
 * multiplied in f32 and rounded once to its dtype, as torch's unscale), sets *finite (rank-0 bool)
 * to whether every element of every gradient is finite, and gives the scale and counter of the next
 * step by GradScaler's rule:
 *   all finite:  good' = good + 1; when good' reaches growth_interval, S' = S *
 *                growth_factor (S' = S if that product is not a finite f32) and good' = 0
 *   otherwise:   S' = S * backoff_factor, good' = 0
 * With good_steps unset the scale is static: *new_scale is S and *new_good_steps the
 * invalid value. A step whose gradients are not all finite must be skipped: the
 * parameters and optimiser state kept as they were (kiln_select_each with *finite, which
 * fuses into the update: nothing is copied) and the optimiser's step count not advanced
 * (step' = step + convert(*finite, i32)); GradScaler skips optimizer.step() so. The scale
 * and the counter are state of the training step like the optimiser's: arguments fed each
 * call, outputs fed to the next, saved with a checkpoint. S starts at 65536 in GradScaler.
 * finite, new_scale and new_good_steps may each be NULL. Errors are builder errors naming
 * the call and the bad entry; on any error every output is the invalid value. */
typedef struct kiln_loss_scale_options {
    kiln_value scale;        /* required: S, a rank-0 float value (f32 arithmetic) */
    kiln_value good_steps;   /* rank-0 i32 or i64: finite steps since S last changed; unset:
                              * a static scale */
    double growth_factor;    /* > 1; 0: 2 */
    double backoff_factor;   /* in (0, 1); 0: 0.5 */
    int64_t growth_interval; /* >= 1; 0: 2000 */
} kiln_loss_scale_options;
KILN_API kiln_status kiln_loss_scale_unscale(kiln_graph *g, const kiln_loss_scale_options *o, int n,
                                             const kiln_value *grads, kiln_value *unscaled,
                                             kiln_value *finite, kiln_value *new_scale,
                                             kiln_value *new_good_steps);
/* out[i] = pred ? on_true[i] : on_false[i] for i < n (jmp.select_tree), pred a rank-0
 * bool value; on_true[i] and on_false[i] share dtype and shape. Each out[i] keeps
 * on_true[i]'s role in a training step (a new parameter, optimiser state) for the memory
 * report. out may be on_true or on_false itself. */
KILN_API kiln_status kiln_select_each(kiln_graph *g, kiln_value pred, int n,
                                      const kiln_value *on_true, const kiln_value *on_false,
                                      kiln_value *out);

/* ------------------------------------------------------------ interpreter ---- */

/* Evaluates a finished graph op by op on the host (the reference every backend is tested
 * against). args match the parameters in order, by dtype and shape, and belong to the
 * graph's context. outs receives kiln_graph_num_outputs(g) new arrays, owned by the
 * caller; on failure none is made. */
KILN_API kiln_status kiln_interpret(kiln_graph *g, int n_args, kiln_array *const *args, int n_outs,
                                    kiln_array **outs);

/* ------------------------------------------------------------- compiling ---- */

/* A compiled program: the graph optimised (simplify, CSE, DCE), fused into kernels,
 * turned into C, compiled by the system C compiler (cached on disk, KILN_CACHE_DIR) and
 * loaded. Running it is safe from several threads at once. */
typedef struct kiln_executable kiln_executable;

typedef struct kiln_compile_options {
    bool disable_fusion; /* one kernel per op: for comparisons and debugging */
    bool disable_passes; /* no unrolling, simplify/CSE/DCE, or recognising attention */
    /* Arguments each call consumes, by parameter index (jax.jit's donate_argnums). Their
     * buffers may hold outputs or temporaries, which lowers the peak; a successful run
     * marks those arrays consumed (KILN_STATUS_CONSUMED afterwards). A donation the plan could
     * not use is listed by kiln_executable_memory_report (the array is still consumed and
     * its buffer freed after the call, as JAX does). The list is copied. */
    int n_donate;
    const int *donate_argnums;
    /* Rematerialisation under a budget (docs/memory.md): the planned peak (peak_bytes of
     * the memory analysis) must not exceed memory_budget bytes, or memory_budget_fraction
     * (in (0, 1]) of the peak the program has with no recomputation at all. kiln_compile
     * then chooses forward values to recompute in the backward pass, with the least
     * added work it finds; when no choice fits it fails with KILN_STATUS_DEVICE_OOM naming
     * the smallest peak reachable and the buffers that hold it. 0: none (both 0: the
     * context's KILN_MEMORY_BUDGET). Checkpoint regions apply either way. */
    uint64_t memory_budget;
    double memory_budget_fraction;
    /* The device it runs on (kiln_device_count, kiln_device_name): 0, the CPU, by default;
     * a GPU is "cuda:0" after the CPU's devices. kiln_executable_run's arguments must live
     * there. kiln_jit ignores it when a call has arguments: a jit call runs on the device
     * of its arguments. */
    int device;
    /* The replicas this program's collectives (kiln_all_reduce) run over: one communicator
     * of a group (kiln_comm_create_local, kiln_comm_create_mpi; for a GPU program of
     * several replicas, kiln_comm_create_nccl or _nccl_rank, bound to that GPU), borrowed,
     * which must outlive the executable. NULL: one replica. Every replica compiles the same
     * graph, so all of them run the collectives in the same order. */
    struct kiln_comm *comm;
    /* Run every all-reduce to completion where it stands in the schedule. By default (with a
     * communicator of more than one rank) an all-reduce is started as soon as its operand
     * exists, the kernels that do not need its result run while it is in flight, and the
     * run waits for it only before the first kernel that reads the result, as PyTorch's
     * DDP overlaps gradient buckets with the backward pass (docs/scaling.md). Results are
     * bitwise the same either way; overlap keeps the operand and result buffers alive
     * until the wait, which can raise the planned peak. */
    bool disable_overlap;
    /* By default a training step's activations that are cheap elementwise functions of
     * values the backward pass holds anyway (a gelu's or a layer norm's output, read by a
     * weight's gradient) are recomputed in the backward pass instead of kept, when that
     * lowers the planned peak by 1% or more (docs/memory.md, "Cheap values, recomputed
     * by default"). true: keep them. */
    bool disable_cheap_remat;
    /* Keep the optimised graph, its kernels' plan, the memory plan and the generated
     * source after compiling, for the reports that print them: kiln_executable_to_string,
     * kiln_executable_memory_report, kiln_executable_get_buffer_info,
     * kiln_executable_plan_json and kiln_executable_plan_svg. By default (false) the
     * executable keeps only what a call runs (a list of precomputed steps), the memory
     * analysis, the info and the profile, and those five reports fail with
     * KILN_STATUS_INVALID_ARGUMENT saying keep_ir is needed. KILN_DUMP's files are
     * written either way. Running is the same either way. */
    bool keep_ir;
    /* When not NULL, kiln_compile fills it whether it succeeds or not (a NULL out or an
     * unfinished graph aside): what a memory budget's search found, in fields rather than
     * only in the error's text. A program that cannot fit can then try another lever
     * (gradient accumulation, a smaller batch) against the same budget in bytes. Loop
     * bodies compiled with the program do not write it. */
    struct kiln_budget_result *budget_result;
    /* Whether the memory budget's search may offload saved activations to the device's
     * pinned_host memory (docs/memory.md, "Host offload") as well as recompute them,
     * choosing per proposal by cost: recomputed FLOPs at the device's measured product rate
     * against the bytes copied there and back at its measured link rate. 0: the device's
     * default (where the device has memory of its own, a GPU; not on a CPU device, whose
     * host memory is the same RAM), 1: consider offload, -1: never. */
    int budget_offload;
    /* A budget as PyTorch's activation_memory_budget means it (torch._functorch.config):
     * in (0, 1], the share of the activations saved for the backward pass that the peak
     * may still hold. In bytes: the peak without recomputation, less (1 - share) of the
     * bytes saved for the backward pass at that peak; 1 changes nothing. 0: unset. With
     * memory_budget or memory_budget_fraction as well, the tightest applies; all of them
     * resolve to the one figure kiln_budget_result.budget_bytes reports (docs/memory.md,
     * "A memory budget"). */
    double activation_memory_budget;
    /* Let the 16-bit float values (bf16, f16) a fused kernel computes stay in f32 until it
     * stores them, as XLA's xla_allow_excess_precision and torch.compile (Inductor without
     * emulate_precision_casts) allow: a chain of elementwise ops rounds once, where its
     * result is written, not after every op. Faster, where the roundings and not the
     * memory bound a kernel, and no less accurate; but a value's bits then depend on what
     * is fused with what, and differ from kiln_interpret's and from JAX's on the CPU, which
     * round after every op as kiln does by default (docs/mixed_precision.md, "Excess
     * precision"; rematerialised values and bounded 16-bit uniforms lose their usual bits
     * too). Every value a kernel reads or compares is then f32 inside it; a kiln_convert
     * from a wider dtype to a 16-bit one, random draws and iotas still round, and a value
     * stored to memory always has its dtype. false: the context's
     * KILN_ALLOW_EXCESS_PRECISION (off unless set). */
    bool allow_excess_precision;
} kiln_compile_options;

/* kiln_compile_options.budget_result. All zero when no budget was set (no search made). */
typedef struct kiln_budget_result {
    uint64_t budget_bytes;       /* the budget in bytes: memory_budget, or the fraction resolved
                                  * against peak_without_bytes (the tighter when both are set) */
    uint64_t peak_without_bytes; /* the planned peak with nothing recomputed */
    uint64_t min_peak_bytes;     /* the smallest planned peak any recomputation reached: the
                                  * lowest budget this program can meet by recomputation */
    bool fits;                   /* a plan within the budget was found (the compile went on) */
    /* what the plan kept offloads (kiln_compile_options.budget_offload, or offload policies
     * of checkpoint regions): values copied to pinned_host memory, and their bytes */
    int num_offloaded;
    uint64_t offload_bytes;
} kiln_budget_result;

/* Compiles a finished graph (the graph is not changed and may be destroyed afterwards).
 * opts may be NULL. Compiling plans the program's memory (docs/memory.md): the order
 * kernels run in, where every buffer lives, what is written in place. */
KILN_API kiln_status kiln_compile(kiln_graph *g, const kiln_compile_options *opts,
                                  kiln_executable **out);
/* Runs it: args match the parameters by dtype and shape, belong to the executable's
 * context (else KILN_STATUS_INVALID_ARGUMENT naming the argument) and live on its device
 * (kiln_compile_options.device; else KILN_STATUS_INVALID_ARGUMENT naming every
 * argument's device); outs receives new arrays on that device, owned by the caller (on
 * failure none is made, and no donated argument is consumed). During the call the device
 * holds the arguments, the outputs and one temporary arena (taken with a single allocation
 * and freed before returning): exactly the planned peak. In asynchronous mode
 * (docs/devices.md) the call returns once enqueued: the outputs become ready later, the
 * arena is taken and freed when the run executes, donated arguments are consumed at once,
 * and a failure in the run itself is reported by the next call that waits for an output
 * or synchronises the device. A NULL e is KILN_STATUS_INVALID_ARGUMENT, its message on the
 * context of the first argument (none: no context to hold one). */
KILN_API kiln_status kiln_executable_run(kiln_executable *e, int n_args, kiln_array *const *args,
                                         int n_outs, kiln_array **outs);
KILN_API void kiln_executable_destroy(kiln_executable *e);

/* ------------------------------------------------------- communicators ---- */

/* A communicator is one replica's handle on a group of replicas that run the same program
 * and meet at its collectives (kiln_all_reduce; docs/scaling.md). Every call of a group
 * waits at most timeout_s seconds for the others; a replica that never arrives (died,
 * stalled) fails the waiting ones with KILN_STATUS_TIMEOUT naming the missing ranks, and a
 * group that timed out stays failed. Collectives on a communicator are not thread-safe:
 * one thread per rank at a time. */
typedef struct kiln_comm kiln_comm;

/* In-process: `size` replicas, one per thread (for several CPU devices of one context).
 * comms receives `size` communicators, rank i in comms[i]; destroy each. timeout_s <= 0:
 * 60 seconds. */
KILN_API kiln_status kiln_comm_create_local(kiln_context *ctx, int size, double timeout_s,
                                            kiln_comm **comms);
/* Across processes over MPI_COMM_WORLD (mpirun -np N): initialises MPI if the program has
 * not. KILN_STATUS_UNIMPLEMENTED, saying so, when kiln was built without MPI. */
KILN_API kiln_status kiln_comm_create_mpi(kiln_context *ctx, double timeout_s, kiln_comm **out);
/* Whether this build has MPI (kiln_comm_create_mpi can succeed). */
KILN_API bool kiln_comm_mpi_available(void);
/* NCCL over GPUs (docs/scaling.md), libnccl.so.2 loaded at run time (KILN_NCCL_LIBRARY,
 * kiln_context_options.nccl_library, names another file): `n` ranks in this process, rank i
 * on devices[i] (a "cuda:K" device of ctx, all different: NCCL puts one rank on a GPU);
 * comms receives n communicators, each bound to its device, to be used by one thread each
 * (as a local group's). A program compiled with one runs its all-reduces on the device's
 * compute stream between its kernels; kiln_comm_all_reduce's host buffers are staged
 * through the device. Fails naming the library and the loader's reason when NCCL cannot
 * be loaded, the device when it is not a GPU. timeout_s <= 0: 60 seconds. */
KILN_API kiln_status kiln_comm_create_nccl(kiln_context *ctx, int n, const int *devices,
                                           double timeout_s, kiln_comm **comms);
/* One NCCL rank per process on `device`, in the group of `boot` (a host communicator,
 * usually kiln_comm_create_mpi's: the rank and size are its own, and NCCL's unique id goes
 * from its rank 0 to the others over it). Every rank of boot calls this together. boot is
 * borrowed only during the call. */
KILN_API kiln_status kiln_comm_create_nccl_rank(kiln_context *ctx, kiln_comm *boot, int device,
                                                double timeout_s, kiln_comm **out);
/* Destroys it (NULL is ignored). The MPI communicator finalises MPI if it initialised it,
 * unless a collective failed (an unfinished collective cannot be finalised). */
KILN_API void kiln_comm_destroy(kiln_comm *c);
KILN_API int kiln_comm_get_rank(const kiln_comm *c);
KILN_API int kiln_comm_get_size(const kiln_comm *c);
/* "local", "mpi" or "nccl". */
KILN_API const char *kiln_comm_get_kind(const kiln_comm *c);
/* recv = the reduction over every rank of send: `count` elements of dtype (f32, f64, bf16,
 * f16, i32, i64) in host-addressable memory (a CPU device's array data or host memory); send
 * and recv may not overlap. Every rank gets bitwise the same result. MEAN needs a float
 * dtype. bf16 and f16 are summed (and a MEAN divided) in f32 and rounded once to the dtype,
 * so this call allocates 8 bytes an element of host scratch for them; a program's
 * all-reduce of them over NCCL reduces the device buffers with ncclBfloat16 / ncclFloat16. */
KILN_API kiln_status kiln_comm_all_reduce(kiln_comm *c, kiln_dtype dtype, kiln_reduce_kind kind,
                                          const void *send, void *recv, int64_t count);
/* MPI_Reduce_scatter_block: the reduction over every rank of send (recv_count x size
 * elements) is cut into `size` equal shards in rank order, and rank r receives shard r
 * (recv_count elements). Dtypes, MEAN and the 16-bit rounding as kiln_comm_all_reduce. */
KILN_API kiln_status kiln_comm_reduce_scatter(kiln_comm *c, kiln_dtype dtype, kiln_reduce_kind kind,
                                              const void *send, void *recv, int64_t recv_count);
/* MPI_Allgather: recv (send_count x size elements) = every rank's send (send_count
 * elements) concatenated in rank order. Any dtype: it only moves bytes. */
KILN_API kiln_status kiln_comm_all_gather(kiln_comm *c, kiln_dtype dtype, const void *send,
                                          void *recv, int64_t send_count);
/* What this rank's collectives did so far: calls, bytes it contributed, and times. */
typedef struct kiln_comm_stats {
    uint64_t calls, bytes;
    /* Wall time this rank spent inside collective calls (waiting for the others, or
     * reducing): the time the collectives cost the program. For a GPU program's
     * all-reduces over NCCL, which are only enqueued: the time to enqueue them. */
    double seconds;
    /* Per all-reduce, the time from its start to its completion, summed. A compiled
     * program overlaps an all-reduce with the kernels that run before its result is needed
     * (kiln_compile_options.disable_overlap), so this exceeds `seconds` by the time the
     * collectives were in flight while this rank computed. */
    double span_seconds;
    /* The part of `seconds` spent by compiled programs' all-reduces (kiln_all_reduce in a
     * step, not kiln_comm_all_reduce): the communication time a step did not hide. */
    double program_seconds;
} kiln_comm_stats;
KILN_API void kiln_comm_get_stats(const kiln_comm *c, kiln_comm_stats *out);
/* Waits until every rank has arrived (or the timeout). */
KILN_API kiln_status kiln_comm_barrier(kiln_comm *c);
/* Ends every rank of the group now (MPI_Abort for MPI; the process exits with `code` for
 * a local or NCCL group): for a program that cannot go on after a rank failed. */
KILN_API void kiln_comm_abort(kiln_comm *c, int code);

typedef struct kiln_executable_info {
    int num_kernels;        /* kernels run per call (loops, products, scatters, scans, ...) */
    int num_ops;            /* ops in the optimised graph */
    int num_fused_away;     /* ops that got no buffer of their own */
    size_t code_bytes;      /* size of the loaded machine code (the shared object) */
    bool from_disk_cache;   /* the code was loaded from KILN_CACHE_DIR, not compiled */
    double compile_seconds; /* wall time of kiln_compile */
    /* kernels compiled for it: num_kernels plus, once each, those of the sub-graphs its
     * loops and branches run (docs/control_flow.md), whatever their trip counts */
    int num_kernels_compiled;
    /* Tiered compilation (kiln_context_options.compile_tiers): the tier its calls run now,
     * 1 (the kernels run from their descriptions, the -O3 build still compiling in the
     * background) or 2 (-O3, or the only build). */
    int compile_tier;
} kiln_executable_info;
KILN_API void kiln_executable_get_info(const kiln_executable *e, kiln_executable_info *info);
/* The optimised graph, its kernels and the generated C source, as text. Needs
 * kiln_compile_options.keep_ir (NULL with the context's message otherwise). */
KILN_API char *kiln_executable_to_string(const kiln_executable *e);

/* Profiling: where a program's time goes, kernel by kernel (docs/performance.md).
 * While profiling is on, every run of e times each of its kernels and adds the time to
 * e's totals; the device is waited for after each kernel, so a GPU's kernels are timed on
 * their own (and the run is slower than an unprofiled one). Several threads may run a
 * profiled executable at once. KILN_PROFILE (kiln_context_options.profile) turns it on for
 * every executable of a context. The first profiled run is kept apart once another has
 * finished: it pays one-time work (a GEMM library generating its kernels, first touches of
 * memory); the report shows it on a line of its own. */
KILN_API kiln_status kiln_executable_set_profiling(kiln_executable *e, bool on);
/* Zeroes the totals (e.g. after warm-up runs); no later run is set apart as the first. */
KILN_API void kiln_executable_profile_reset(kiln_executable *e);
/* A table of the kernels by time: per run, share, rate (GFLOP/s of a product, GB/s of a
 * loop: the bytes of every buffer it reads and writes, once), what each computes and
 * where it was traced; totals by kind first. Free with kiln_string_free. NULL on host OOM
 * or a NULL e. Says so when no profiled run has finished yet. */
KILN_API char *kiln_executable_profile_report(const kiln_executable *e);
typedef struct kiln_kernel_profile {
    const char *kind; /* "loop", "dot", "scatter" or "collective" (static) */
    int num_ops;      /* ops computed in it (fused) */
    double flops;     /* per run: 2*M*N*K summed over batches for a dot, else 0 */
    double bytes;     /* per run: bytes of its input and output buffers, each once */
    uint64_t runs;    /* profiled runs counted: after the first, or the first alone */
    double seconds;   /* its time summed over those runs */
} kiln_kernel_profile;
/* Kernel i (0 <= i < kiln_executable_info.num_kernels, in the order of
 * kiln_executable_to_string's "k<i>"). */
KILN_API kiln_status kiln_executable_get_kernel_profile(const kiln_executable *e, int i,
                                                        kiln_kernel_profile *out);

/* ------------------------------------------------------ memory analysis ---- */

/* What a call of an executable will need, known before running it (jax's
 * compiled.memory_analysis()). argument, output and temp bytes count allocations rounded
 * up to the device allocator's 256 bytes, so peak_bytes is exactly the rise of the
 * allocator's peak_bytes_in_use during a call, over the arguments it already held. */
/* What a buffer is to a training step, named as PyTorch's memory snapshot names them.
 * Roles come from where a value was made: kiln_grad/kiln_vjp mark the parameters they
 * differentiate with respect to and the gradients they return, the optimisers their state
 * and new parameters; a forward value that the backward pass reads is an activation saved
 * for it (docs/memory.md, "Where a training step's memory goes"). */
typedef enum kiln_memory_class {
    KILN_MEMORY_CLASS_PARAMETER,       /* weights, and the new weights an optimiser returns */
    KILN_MEMORY_CLASS_GRADIENT,        /* the gradients kiln_grad/kiln_vjp return (clipped too) */
    KILN_MEMORY_CLASS_OPTIMIZER_STATE, /* momentum, Adam's m and v, given and returned */
    KILN_MEMORY_CLASS_ACTIVATION,      /* a forward value saved for the backward pass */
    KILN_MEMORY_CLASS_INPUT,           /* any other argument (a batch, labels, a step) */
    KILN_MEMORY_CLASS_OUTPUT,          /* any other output (a loss) */
    KILN_MEMORY_CLASS_TEMPORARY,       /* any other value, and kernels' scratch */
    KILN_MEMORY_CLASS_CONSTANT,        /* a constant held by the executable (host memory) */
} kiln_memory_class;
#define KILN_MAX_MEMORY_CLASSES 16 /* room in kiln_memory_analysis: the enum may grow */
#define KILN_MAX_DTYPES         16 /* room in kiln_memory_analysis: kiln_dtype may grow */
/* "parameter", "gradient", "optimizer_state", "activation", "input", "output",
 * "temporary", "constant"; "?" for anything else. Static. */
KILN_API const char *kiln_memory_class_name(kiln_memory_class c);

typedef struct kiln_memory_analysis {
    uint64_t argument_bytes; /* the parameters' arrays */
    uint64_t output_bytes;   /* output arrays a call allocates (not those in donated buffers) */
    uint64_t temp_bytes;     /* the temporary arena: one allocation per call */
    uint64_t alias_bytes;    /* donated arguments whose buffers the plan reuses */
    uint64_t generated_code_bytes; /* the loaded machine code */
    uint64_t constant_bytes;       /* constants held by the executable (host memory) */
    uint64_t peak_bytes;           /* argument + output + temp */
    uint64_t temp_lower_bound;     /* most temporary bytes live at one step of the schedule */
    uint64_t arena_bytes;          /* the arena's exact extent (temp_bytes before rounding) */
    uint64_t inplace_bytes;        /* results written over inputs that die there */
    int num_buffers;               /* entries of kiln_executable_get_buffer_info */
    int num_steps;                 /* kernels, in the order of the chosen schedule */
    int num_donated;               /* arguments donated */
    int num_donations_unused;      /* donated arguments the plan found no use for */
    const char *schedule;          /* the schedule strategy chosen ("list", "dfs", ...) */
    /* Where a training step's memory goes, by kiln_memory_class (index). At peak: the exact
     * bytes of each class in use at peak_step, the step with the most device bytes in use
     * (arguments, outputs, live temporaries and scratch; -1 when there is no kernel): they
     * sum to at most peak_bytes, the rest being the arena's gaps and rounding. In total:
     * every buffer of the class at its exact size, as if none shared memory (a parameter
     * updated in place counts twice there: the old and the new). Constants are host memory:
     * in the totals only. */
    int peak_step;
    uint64_t class_bytes_at_peak[KILN_MAX_MEMORY_CLASSES];
    uint64_t class_bytes_total[KILN_MAX_MEMORY_CLASSES];
    /* Rematerialisation (checkpoint regions, memory budget): what recomputing values in
     * the backward pass did. All zero when nothing is recomputed. */
    uint64_t remat_peak_without; /* peak_bytes of the same program with no recomputation */
    int64_t remat_bytes_saved;   /* remat_peak_without - peak_bytes (negative: it cost) */
    int remat_num_recomputed;    /* ops recomputed in the backward pass */
    double remat_added_flops;    /* their FLOPs (2 M N K per product, 1 per element else) */
    double remat_flops_share;    /* remat_added_flops / the FLOPs of the whole step */
    uint64_t memory_budget;      /* the budget it was planned under in bytes; 0: none */
    const char *remat_strategy;  /* "none", "elementwise", "checkpoint", "greedy", "segments" */
    /* Under a memory budget: the smallest planned peak any recomputation kiln_compile tried
     * reaches (every proposal is planned in full, whichever fits), the figure a budget
     * that cannot be met is refused with ("the smallest planned peak reachable is ...").
     * It may lie below peak_bytes: the plan kept is the one adding the fewest FLOPs among
     * those that fit. 0 when no budget was set (no search was made). Fields are only ever
     * appended to this struct. */
    uint64_t remat_min_peak_bytes;
    /* The same bytes as class_bytes_at_peak / class_bytes_total, by the values' dtype
     * (index: kiln_dtype): what storing activations in bf16 saves shows here. Index 0
     * (KILN_DTYPE_INVALID) holds the kernels' scratch, which has no dtype. */
    uint64_t dtype_bytes_at_peak[KILN_MAX_DTYPES];
    uint64_t dtype_bytes_total[KILN_MAX_DTYPES];
    /* Host offload (kiln_memory_put, the offload checkpoint policies): the values kept in
     * the device's host memory kind during a call live in one host arena, allocated per
     * call from the device's host pool and never counted in peak_bytes. */
    uint64_t host_temp_bytes;  /* the host arena, rounded as temp_bytes is, with the host
                                * arenas of the loop bodies the largest loop step takes */
    uint64_t host_arena_bytes; /* its exact extent */
    uint64_t offload_bytes;    /* bytes copied to host memory per call (each value once) */
    int num_offloaded;         /* values copied to host memory */
    /* Arguments and outputs in pinned_host memory (kiln_parameter_in_memory, an output made
     * by kiln_memory_put to that kind), as JAX's host_argument_size_in_bytes,
     * host_output_size_in_bytes and host_alias_size_in_bytes: rounded as argument_bytes
     * is, never in peak_bytes or argument_bytes/output_bytes/alias_bytes. A call's pinned_host
     * pool holds host_argument_bytes + host_output_bytes + host_temp_bytes at most:
     * host_alias_bytes, the donated host arguments an output took over, are counted in
     * host_argument_bytes alone (not in host_output_bytes, so not to be subtracted). */
    uint64_t host_argument_bytes;
    uint64_t host_output_bytes;
    uint64_t host_alias_bytes;
} kiln_memory_analysis;

typedef enum kiln_buffer_kind {
    KILN_BUFFER_KIND_ARGUMENT, /* a parameter: the caller's array */
    KILN_BUFFER_KIND_CONSTANT, /* a constant held by the executable */
    KILN_BUFFER_KIND_OUTPUT,   /* an output (the first time it is listed) */
    KILN_BUFFER_KIND_TEMP,     /* a value that lives only during a call */
    KILN_BUFFER_KIND_SCRATCH,  /* a kernel's runtime scratch (a matrix product's packed operand) */
} kiln_buffer_kind;

typedef enum kiln_buffer_place {
    KILN_BUFFER_PLACE_ARGUMENT, /* in argument place_index */
    KILN_BUFFER_PLACE_CONSTANT, /* in the executable */
    KILN_BUFFER_PLACE_OUTPUT,   /* in the new output array place_index */
    KILN_BUFFER_PLACE_ARENA,    /* in the temporary arena, at offset */
    KILN_BUFFER_PLACE_DONATED,  /* in the buffer of donated argument place_index, at offset */
    KILN_BUFFER_PLACE_HOST,     /* in the host arena (a value in pinned_host memory), at offset */
} kiln_buffer_place;

/* One buffer of the plan. Steps number the kernels in schedule order; -1 is "before the
 * first" (arguments, constants) and num_steps "after the last" (outputs, kept by the
 * caller). A buffer is live from first_step to last_step inclusive. */
typedef struct kiln_buffer_info {
    int node;       /* the value, %node in kiln_executable_to_string's graph */
    const char *op; /* its op ("dot_general", "exp", ...; "scratch"); static */
    kiln_buffer_kind kind;
    kiln_buffer_place place;
    int place_index;
    kiln_dtype dtype; /* scratch: KILN_DTYPE_INVALID and rank 0 (it is raw bytes) */
    int rank;
    int64_t dims[KILN_MAX_RANK];
    uint64_t bytes;  /* exact size */
    uint64_t offset; /* within its place */
    int first_step, last_step;
    int shares_with; /* written in place over this value's buffer; 0 if none */
    kiln_memory_class memory_class;
    /* the user's location of the op that made the value (file NULL if unknown) */
    const char *file;
    int line;
    /* the parameter's name, or the kiln_checkpoint_name given to the value; NULL if none
     * (valid while the executable lives) */
    const char *name;
    /* true for a value recomputed in the backward pass (rematerialisation: a checkpoint
     * region, the memory budget or a cheap elementwise value; the memory report lists each
     * with its reason): this buffer holds the second computation of the value, made from
     * kept values just before its first backward reader. false for scratch. Fields are only
     * ever appended to this struct. */
    bool recomputed;
    /* true for the two buffers of an offloaded value: its copy in host memory (place
     * KILN_BUFFER_PLACE_HOST) and the copy back on the device the backward pass reads. */
    bool offloaded;
    /* the memory kind of its bytes (kiln_memory_kind): KILN_MEMORY_PINNED_HOST for host
     * temporaries and for arguments and outputs of that kind (kiln_parameter_in_memory) */
    int memory_kind;
} kiln_buffer_info;

KILN_API kiln_status kiln_executable_get_memory_analysis(const kiln_executable *e,
                                                         kiln_memory_analysis *out);
/* Buffer i, 0 <= i < num_buffers: values in graph order, then kernels' scratch. Needs
 * kiln_compile_options.keep_ir (KILN_STATUS_INVALID_ARGUMENT otherwise); the analysis
 * above does not. */
KILN_API kiln_status kiln_executable_get_buffer_info(const kiln_executable *e, int i,
                                                     kiln_buffer_info *out);
/* The analysis, the donations and the per-buffer listing as text; the plan as JSON; the
 * plan as an SVG timeline (x: schedule step, y: offset in the arena, one box per buffer).
 * docs/memory.md shows how to read them. Free with kiln_string_free; NULL on host OOM, and
 * (with the context's message) for an executable compiled without keep_ir. */
KILN_API char *kiln_executable_memory_report(const kiln_executable *e);
KILN_API char *kiln_executable_plan_json(const kiln_executable *e);
KILN_API char *kiln_executable_plan_svg(const kiln_executable *e);

/* ------------------------------------------------------------------- jit ---- */

/* jit: trace once per input signature, compile, cache, reuse (jax.jit for C).
 *
 * The trace function receives one parameter per argument (made by kiln with the
 * arguments' dtypes and shapes), builds the program on g and writes its outputs to outs
 * (room for KILN_JIT_MAX_OUTPUTS: a training step returns its loss and, with Adam, three
 * arrays per parameter tensor), returning how many (or -1 to report its own error). It is
 * called again only for a new signature: a new shape, dtype, number of arguments or new
 * static_args bytes (values that shape the program, such as a layer count). The parameters
 * are named after the arrays of the call that traced them (kiln_array_create_named), else
 * arg0, arg1, ...: the names the memory report and the plan's picture show.
 *
 * Threads may share a jit. One trace runs at a time per jit (the trace function need not
 * be reentrant); compiles run side by side, and calls of a cached signature never wait for
 * another signature's trace or compile (a call of the signature being built waits for
 * it). A trace function may call (or lower) its own jit on a signature already compiled;
 * on any other, and kiln_jit_trace of its own jit, the call is KILN_STATUS_INVALID_ARGUMENT
 * (it would wait for itself). Two jits whose trace functions call each other can still
 * wait for each other: do not. */
/* KILN_MAX_OUTPUTS bounds a control-flow body's, kiln_custom_vjp's and kiln_vmap's values */
#define KILN_MAX_OUTPUTS     64
#define KILN_JIT_MAX_OUTPUTS 4096
typedef int (*kiln_trace_fn)(kiln_graph *g, const kiln_value *args, int n_args,
                             const void *static_args, void *user, kiln_value *outs);

/* A declared argument: dtype, rank and dims; a dim of -1 accepts any size. */
typedef struct kiln_arg_spec {
    kiln_dtype dtype;
    int rank;
    int64_t dims[KILN_MAX_RANK];
} kiln_arg_spec;

typedef struct kiln_jit_options {
    const char *name;               /* for messages and the IR; NULL: "jit" */
    kiln_trace_fn fn;               /* required */
    void *user;                     /* passed to fn */
    int n_args;                     /* with arg_specs: the declared signature; else ignored */
    const kiln_arg_spec *arg_specs; /* NULL: any arguments */
    kiln_compile_options compile;   /* donate_argnums here: each call consumes those arguments */
    /* The most executables the jit keeps (0: 256). Past it the least recently used one is
     * dropped (kiln_jit_stats.evictions), freed once no call runs it: each loaded
     * executable holds its kernels' memory and one file descriptor, so a jit called on
     * ever new shapes would otherwise exhaust them. A signature called again after its
     * eviction is traced and compiled again (its machine code usually from the disk
     * cache). -1: no limit. */
    int max_entries;
} kiln_jit_options;

typedef struct kiln_jit kiln_jit;
KILN_API kiln_status kiln_jit_create(kiln_context *ctx, const kiln_jit_options *opts,
                                     kiln_jit **out);
/* Calls the function: traces and compiles on a new signature, else reuses. outs receives
 * n_outs new arrays (n_outs must equal what the trace function returned). The arguments
 * belong to the jit's context (else KILN_STATUS_INVALID_ARGUMENT). The call runs on
 * the device of its arguments (all on one: else KILN_STATUS_INVALID_ARGUMENT naming each
 * argument's device), compiling once per device; without arguments on compile.device. */
KILN_API kiln_status kiln_jit_call(kiln_jit *j, int n_args, kiln_array *const *args,
                                   const void *static_args, size_t static_size, int n_outs,
                                   kiln_array **outs);
KILN_API void kiln_jit_destroy(kiln_jit *j);

/* The executable a call with these arguments would run, compiled now if this signature
 * has none yet, without running it (jax.jit(f).lower(*args).compile()): read its memory
 * analysis, report, JSON and SVG (docs/memory.md) before any call. Same arguments, static
 * bytes and errors as kiln_jit_call (arity, dtype and shape against a declared signature,
 * consumed or NULL arrays, arguments on different devices); nothing is run and nothing
 * donated is consumed. The signature's device is that of the arguments, as for a call.
 * *out is a new reference to the very executable the jit caches for the signature (a later
 * call runs it with no trace and no compile): the caller owns that reference and drops it
 * with kiln_executable_destroy, which frees nothing the jit still holds; it stays valid
 * after kiln_jit_clear and kiln_jit_destroy (destroy it before the context). */
KILN_API kiln_status kiln_jit_lower(kiln_jit *j, int n_args, kiln_array *const *args,
                                    const void *static_args, size_t static_size,
                                    kiln_executable **out);
/* The same from dtypes and shapes alone, no arrays (jax.ShapeDtypeStruct): specs[i] is
 * argument i (every dim given: -1 is an error here), on device `device`. */
KILN_API kiln_status kiln_jit_lower_shapes(kiln_jit *j, int device, int n_args,
                                           const kiln_arg_spec *specs, const void *static_args,
                                           size_t static_size, kiln_executable **out);

/* The graph a call with these arguments would compile (jax.jit(f).trace(*args).jaxpr, or
 * jax.make_jaxpr): the trace function is called on a new graph exactly as for a call of a
 * new signature (parameters named as kiln_jit_call names them, the same static bytes), and
 * the finished graph, not optimised, is returned in *out, ready for kiln_interpret (the
 * reference interpreter), kiln_graph_print, kiln_graph_save or kiln_compile. The cache
 * keeps executables, not graphs, so this traces again each time (counted in
 * kiln_jit_stats.traces), compiles nothing and leaves the cache as it was. Same checks and
 * errors as kiln_jit_call for the arguments and static bytes (arity, dtype and shape
 * against a declared signature, NULL or consumed arrays); the arrays are only read for
 * their types and names, so they may be on any devices, and nothing is consumed. *out is
 * the caller's: destroy it with kiln_graph_destroy (before the context; it does not
 * depend on the jit). On failure *out is NULL. */
KILN_API kiln_status kiln_jit_trace(kiln_jit *j, int n_args, kiln_array *const *args,
                                    const void *static_args, size_t static_size, kiln_graph **out);

typedef struct kiln_jit_stats {
    uint64_t traces;    /* trace function calls */
    uint64_t compiles;  /* executables built (each may still hit the disk cache) */
    uint64_t hits;      /* calls and lowerings served by a cached executable */
    uint64_t misses;    /* calls and lowerings that needed a new one */
    uint64_t entries;   /* executables held now */
    uint64_t bytes;     /* their code bytes */
    uint64_t evictions; /* executables dropped for max_entries */
} kiln_jit_stats;
KILN_API void kiln_jit_get_stats(const kiln_jit *j, kiln_jit_stats *stats);
/* Drops every cached executable and frees what it holds. */
KILN_API void kiln_jit_clear(kiln_jit *j);

/* ------------------------------------------------------------- prefetch ---- */

/* A double-buffered input pipeline (docs/devices.md, "prefetch"), as flax's
 * prefetch_to_device: while the device computes step k, the host fills the batch of a
 * later step into a host staging buffer and its copy to the device runs on the device's
 * copy queue, so the copy overlaps the compute. Needs asynchronous mode to overlap
 * anything (synchronously every batch is copied when filled); not thread-safe: one thread
 * drives a pipeline. */
typedef struct kiln_prefetch kiln_prefetch;

/* Fills batch `step` (0, 1, ...): host[i] holds sizes[i] bytes for array i, in the dtype
 * and shape of specs[i]. Runs on the thread calling kiln_prefetch_next. Returns 0 when
 * filled, 1 when there is no batch `step` (the data is exhausted), -1 on failure. */
typedef int (*kiln_prefetch_fill_fn)(void *user, int64_t step, void *const *host,
                                     const size_t *sizes);

typedef struct kiln_prefetch_options {
    int device;                 /* where the batches go */
    int n_arrays;               /* arrays per batch (inputs, labels, ...): 1..16 */
    const kiln_arg_spec *specs; /* their dtypes and shapes (no -1); copied */
    kiln_prefetch_fill_fn fill; /* required */
    void *user;                 /* passed to fill */
    int depth;                  /* staging buffers, batches in flight; 0: 2 (double
                                   buffering); at most 8 */
} kiln_prefetch_options;

KILN_API kiln_status kiln_prefetch_create(kiln_context *ctx, const kiln_prefetch_options *opts,
                                          kiln_prefetch **out);
/* The next batch: batch[i] receives array i (the caller's to destroy; its copy may still
 * be in flight: a run that reads it waits for it, on the device). Also fills the batch
 * depth steps ahead into the staging buffer this one used (waiting for this batch's copy
 * to have read it) and enqueues its copy; when that fails, nothing is handed out and the
 * next call tries again. *end is set true, and nothing returned, once fill reported the
 * end. */
KILN_API kiln_status kiln_prefetch_next(kiln_prefetch *p, kiln_array **batch, bool *end);
/* Waits for the copies in flight (they read the staging buffers) and frees everything. */
KILN_API void kiln_prefetch_destroy(kiln_prefetch *p);

/* ------------------------------------------------------------ safetensors ---- */

/* Arrays to and from files in the safetensors format (the format PyTorch, JAX and the
 * Hugging Face hub exchange weights in: an 8-byte little-endian header length, a JSON header
 * naming each tensor's dtype, shape and byte range, then the bytes). kiln reads and writes
 * the safetensors dtypes F32, F64, BF16 (KILN_DTYPE_BF16), F16 (KILN_DTYPE_F16), I32, I64
 * and BOOL (KILN_DTYPE_BOOL, one byte 0 or 1), the 16-bit ones bit for bit as PyTorch and
 * ml_dtypes store them; a header naming another dtype (U8, F8_E4M3, ...) is an error that
 * says which tensor and which dtype. A kiln_safetensors belongs to its context: use it from one
 * thread at a time. The JSON is parsed and written with cJSON, whose own nodes live only inside
 * each call and come from cJSON's allocator (kiln never changes the process's cJSON hooks);
 * everything kiln keeps comes from the context's host allocator. */

typedef struct kiln_safetensors kiln_safetensors;

/* Writes n arrays under names[i] to path, with n_meta string pairs meta_kv[2*i] = key,
 * meta_kv[2*i+1] = value in the header's "__metadata__" map (n_meta may be 0). The file
 * appears whole or not at all: it is written to a temporary file in the same folder, named
 * "<path>.tmp-<pid>-<hex>" (pid: the writing process's, in decimal), fsync'd, then renamed
 * over path; on any failure the temporary file is removed and a file already at path is
 * left as it was (a process killed while writing leaves its temporary file: the name says
 * whose it was, so a later run can remove it). Tensors lie back to back in the order
 * given, the data section 8-byte aligned (the header padded with spaces). Duplicate, empty
 * or non-UTF-8 names, the name "__metadata__", duplicate metadata keys, arrays of another
 * context and what open would refuse (a dimension or an offset above 2^53 - 1, where JSON
 * numbers stop being exact; dimensions whose product overflows before a zero among them)
 * are KILN_STATUS_INVALID_ARGUMENT; a folder that cannot be written is KILN_STATUS_IO. */
KILN_API kiln_status kiln_safetensors_save(kiln_context *ctx, const char *path, int n,
                                           const char *const *names, kiln_array *const *arrays,
                                           int n_meta, const char *const *meta_kv);
/* Opens and fully checks a file: header length within the file and at most 100 MB (the
 * reference implementation's limit), UTF-8 JSON object, every tensor's dtype known, its
 * shape non-negative integers whose byte size does not overflow and equals its byte range,
 * and the ranges in offset order tiling the data section exactly (no overlap, no gap, none
 * past the end: a truncated file is caught here). A fault in the content is
 * KILN_STATUS_INVALID_ARGUMENT with a message naming the file and what is wrong (truncated,
 * at which tensor); a file that cannot be opened or read is KILN_STATUS_IO with the
 * system's reason. The file stays open until kiln_safetensors_close; the data section may
 * start at any offset (nothing relies on its alignment). */
KILN_API kiln_status kiln_safetensors_open(kiln_context *ctx, const char *path,
                                           kiln_safetensors **out);
KILN_API void kiln_safetensors_close(kiln_safetensors *f);
/* Tensors in the file, in the order of their byte offsets. */
KILN_API int kiln_safetensors_count(const kiln_safetensors *f);
KILN_API const char *kiln_safetensors_name(const kiln_safetensors *f, int i);
/* The dtype and shape of tensor `name`; KILN_STATUS_INVALID_ARGUMENT (naming the file and
 * the tensor) if there is none. dims may be NULL; it receives up to KILN_MAX_RANK values. */
KILN_API kiln_status kiln_safetensors_get_info(const kiln_safetensors *f, const char *name,
                                               kiln_dtype *dtype, int *rank, int64_t *dims);
/* The value of a "__metadata__" key, or NULL if the file has none by that name. */
KILN_API const char *kiln_safetensors_get_metadata(const kiln_safetensors *f, const char *key);
/* Reads tensor `name` into a new array (device 0). A BOOL byte other than 0 or 1 is
 * KILN_STATUS_INVALID_ARGUMENT; a file cut short since it was opened is KILN_STATUS_IO. */
KILN_API kiln_status kiln_safetensors_read(kiln_safetensors *f, const char *name, kiln_array **out);

/* ------------------------------------------------------ source locations ---- */

/* Each builder call records the caller's file and line, so that errors and the printed IR
 * point at user code. Define KILN_NO_LOCATION_MACROS to call the plain functions. The
 * graph argument is evaluated more than once.
 *
 * A call's location is pushed before its arguments are evaluated and popped when it
 * returns, so builder calls among the arguments, from a helper function on another line,
 * do not take it over: in kiln_add(g, make_x(g), make_n(g)) an error of kiln_add names
 * this line, not the line in make_n that made a parameter. The functions below are what
 * the macros call (a graph keeps 64 saved locations; calls nested deeper than that report
 * the innermost one). */
KILN_API void kiln_graph_push_at(kiln_graph *g, const char *file, int line);
KILN_API kiln_value kiln_graph_pop_at(kiln_graph *g, kiln_value v);
KILN_API kiln_status kiln_graph_pop_at_status(kiln_graph *g, kiln_status s);
#if !defined(KILN_NO_LOCATION_MACROS) && !defined(KILN_BUILDING)
#define KILN__V(g, call) (kiln_graph_push_at((g), __FILE__, __LINE__), kiln_graph_pop_at((g), call))
#define KILN__S(g, call)                                                                           \
    (kiln_graph_push_at((g), __FILE__, __LINE__), kiln_graph_pop_at_status((g), call))
#define kiln_graph_finish(g, ...)        KILN__S(g, kiln_graph_finish((g), __VA_ARGS__))
#define kiln_parameter(g, ...)           KILN__V(g, kiln_parameter((g), __VA_ARGS__))
#define kiln_constant(g, ...)            KILN__V(g, kiln_constant((g), __VA_ARGS__))
#define kiln_scalar(g, ...)              KILN__V(g, kiln_scalar((g), __VA_ARGS__))
#define kiln_full(g, ...)                KILN__V(g, kiln_full((g), __VA_ARGS__))
#define kiln_iota(g, ...)                KILN__V(g, kiln_iota((g), __VA_ARGS__))
#define kiln_neg(g, ...)                 KILN__V(g, kiln_neg((g), __VA_ARGS__))
#define kiln_abs(g, ...)                 KILN__V(g, kiln_abs((g), __VA_ARGS__))
#define kiln_exp(g, ...)                 KILN__V(g, kiln_exp((g), __VA_ARGS__))
#define kiln_log(g, ...)                 KILN__V(g, kiln_log((g), __VA_ARGS__))
#define kiln_log1p(g, ...)               KILN__V(g, kiln_log1p((g), __VA_ARGS__))
#define kiln_sqrt(g, ...)                KILN__V(g, kiln_sqrt((g), __VA_ARGS__))
#define kiln_rsqrt(g, ...)               KILN__V(g, kiln_rsqrt((g), __VA_ARGS__))
#define kiln_tanh(g, ...)                KILN__V(g, kiln_tanh((g), __VA_ARGS__))
#define kiln_logistic(g, ...)            KILN__V(g, kiln_logistic((g), __VA_ARGS__))
#define kiln_sin(g, ...)                 KILN__V(g, kiln_sin((g), __VA_ARGS__))
#define kiln_cos(g, ...)                 KILN__V(g, kiln_cos((g), __VA_ARGS__))
#define kiln_erf(g, ...)                 KILN__V(g, kiln_erf((g), __VA_ARGS__))
#define kiln_sign(g, ...)                KILN__V(g, kiln_sign((g), __VA_ARGS__))
#define kiln_floor(g, ...)               KILN__V(g, kiln_floor((g), __VA_ARGS__))
#define kiln_ceil(g, ...)                KILN__V(g, kiln_ceil((g), __VA_ARGS__))
#define kiln_round(g, ...)               KILN__V(g, kiln_round((g), __VA_ARGS__))
#define kiln_round_half_away(g, ...)     KILN__V(g, kiln_round_half_away((g), __VA_ARGS__))
#define kiln_expm1(g, ...)               KILN__V(g, kiln_expm1((g), __VA_ARGS__))
#define kiln_tan(g, ...)                 KILN__V(g, kiln_tan((g), __VA_ARGS__))
#define kiln_sinh(g, ...)                KILN__V(g, kiln_sinh((g), __VA_ARGS__))
#define kiln_cosh(g, ...)                KILN__V(g, kiln_cosh((g), __VA_ARGS__))
#define kiln_asin(g, ...)                KILN__V(g, kiln_asin((g), __VA_ARGS__))
#define kiln_acos(g, ...)                KILN__V(g, kiln_acos((g), __VA_ARGS__))
#define kiln_atan(g, ...)                KILN__V(g, kiln_atan((g), __VA_ARGS__))
#define kiln_asinh(g, ...)               KILN__V(g, kiln_asinh((g), __VA_ARGS__))
#define kiln_acosh(g, ...)               KILN__V(g, kiln_acosh((g), __VA_ARGS__))
#define kiln_atanh(g, ...)               KILN__V(g, kiln_atanh((g), __VA_ARGS__))
#define kiln_cbrt(g, ...)                KILN__V(g, kiln_cbrt((g), __VA_ARGS__))
#define kiln_erfc(g, ...)                KILN__V(g, kiln_erfc((g), __VA_ARGS__))
#define kiln_erf_inv(g, ...)             KILN__V(g, kiln_erf_inv((g), __VA_ARGS__))
#define kiln_lgamma(g, ...)              KILN__V(g, kiln_lgamma((g), __VA_ARGS__))
#define kiln_digamma(g, ...)             KILN__V(g, kiln_digamma((g), __VA_ARGS__))
#define kiln_is_finite(g, ...)           KILN__V(g, kiln_is_finite((g), __VA_ARGS__))
#define kiln_logical_not(g, ...)         KILN__V(g, kiln_logical_not((g), __VA_ARGS__))
#define kiln_stop_gradient(g, ...)       KILN__V(g, kiln_stop_gradient((g), __VA_ARGS__))
#define kiln_convert(g, ...)             KILN__V(g, kiln_convert((g), __VA_ARGS__))
#define kiln_promote(g, ...)             KILN__S(g, kiln_promote((g), __VA_ARGS__))
#define kiln_add(g, ...)                 KILN__V(g, kiln_add((g), __VA_ARGS__))
#define kiln_sub(g, ...)                 KILN__V(g, kiln_sub((g), __VA_ARGS__))
#define kiln_mul(g, ...)                 KILN__V(g, kiln_mul((g), __VA_ARGS__))
#define kiln_div(g, ...)                 KILN__V(g, kiln_div((g), __VA_ARGS__))
#define kiln_pow(g, ...)                 KILN__V(g, kiln_pow((g), __VA_ARGS__))
#define kiln_rem(g, ...)                 KILN__V(g, kiln_rem((g), __VA_ARGS__))
#define kiln_atan2(g, ...)               KILN__V(g, kiln_atan2((g), __VA_ARGS__))
#define kiln_max(g, ...)                 KILN__V(g, kiln_max((g), __VA_ARGS__))
#define kiln_min(g, ...)                 KILN__V(g, kiln_min((g), __VA_ARGS__))
#define kiln_logical_and(g, ...)         KILN__V(g, kiln_logical_and((g), __VA_ARGS__))
#define kiln_logical_or(g, ...)          KILN__V(g, kiln_logical_or((g), __VA_ARGS__))
#define kiln_bitwise_and(g, ...)         KILN__V(g, kiln_bitwise_and((g), __VA_ARGS__))
#define kiln_bitwise_or(g, ...)          KILN__V(g, kiln_bitwise_or((g), __VA_ARGS__))
#define kiln_bitwise_xor(g, ...)         KILN__V(g, kiln_bitwise_xor((g), __VA_ARGS__))
#define kiln_bitwise_not(g, ...)         KILN__V(g, kiln_bitwise_not((g), __VA_ARGS__))
#define kiln_shift_left(g, ...)          KILN__V(g, kiln_shift_left((g), __VA_ARGS__))
#define kiln_shift_right_logical(g, ...) KILN__V(g, kiln_shift_right_logical((g), __VA_ARGS__))
#define kiln_shift_right_arithmetic(g, ...)                                                        \
    KILN__V(g, kiln_shift_right_arithmetic((g), __VA_ARGS__))
#define kiln_population_count(g, ...) KILN__V(g, kiln_population_count((g), __VA_ARGS__))
#define kiln_clz(g, ...)              KILN__V(g, kiln_clz((g), __VA_ARGS__))
#define kiln_bitcast_convert(g, ...)  KILN__V(g, kiln_bitcast_convert((g), __VA_ARGS__))
#define kiln_compare(g, ...)          KILN__V(g, kiln_compare((g), __VA_ARGS__))
#define kiln_select(g, ...)           KILN__V(g, kiln_select((g), __VA_ARGS__))
#define kiln_broadcast_in_dim(g, ...) KILN__V(g, kiln_broadcast_in_dim((g), __VA_ARGS__))
#define kiln_broadcast_to(g, ...)     KILN__V(g, kiln_broadcast_to((g), __VA_ARGS__))
#define kiln_reshape(g, ...)          KILN__V(g, kiln_reshape((g), __VA_ARGS__))
#define kiln_transpose(g, ...)        KILN__V(g, kiln_transpose((g), __VA_ARGS__))
#define kiln_rev(g, ...)              KILN__V(g, kiln_rev((g), __VA_ARGS__))
#define kiln_slice(g, ...)            KILN__V(g, kiln_slice((g), __VA_ARGS__))
#define kiln_concatenate(g, ...)      KILN__V(g, kiln_concatenate((g), __VA_ARGS__))
#define kiln_pad(g, ...)              KILN__V(g, kiln_pad((g), __VA_ARGS__))
#define kiln_reduce_sum(g, ...)       KILN__V(g, kiln_reduce_sum((g), __VA_ARGS__))
#define kiln_reduce_max(g, ...)       KILN__V(g, kiln_reduce_max((g), __VA_ARGS__))
#define kiln_reduce_min(g, ...)       KILN__V(g, kiln_reduce_min((g), __VA_ARGS__))
#define kiln_reduce_prod(g, ...)      KILN__V(g, kiln_reduce_prod((g), __VA_ARGS__))
#define kiln_mean(g, ...)             KILN__V(g, kiln_mean((g), __VA_ARGS__))
#define kiln_dot_general(g, ...)      KILN__V(g, kiln_dot_general((g), __VA_ARGS__))
#define kiln_matmul(g, ...)           KILN__V(g, kiln_matmul((g), __VA_ARGS__))
#define kiln_take_rows(g, ...)        KILN__V(g, kiln_take_rows((g), __VA_ARGS__))
#define kiln_scatter_add_rows(g, ...) KILN__V(g, kiln_scatter_add_rows((g), __VA_ARGS__))
#define kiln_all_reduce(g, ...)       KILN__V(g, kiln_all_reduce((g), __VA_ARGS__))
#define kiln_reduce_scatter(g, ...)   KILN__V(g, kiln_reduce_scatter((g), __VA_ARGS__))
#define kiln_all_gather(g, ...)       KILN__V(g, kiln_all_gather((g), __VA_ARGS__))
#define kiln_take(g, ...)             KILN__V(g, kiln_take((g), __VA_ARGS__))
#define kiln_take_along_axis(g, ...)  KILN__V(g, kiln_take_along_axis((g), __VA_ARGS__))
#define kiln_gather(g, ...)           KILN__V(g, kiln_gather((g), __VA_ARGS__))
#define kiln_scatter(g, ...)          KILN__V(g, kiln_scatter((g), __VA_ARGS__))
#define kiln_index_get(g, ...)        KILN__V(g, kiln_index_get((g), __VA_ARGS__))
#define kiln_index_update(g, ...)     KILN__V(g, kiln_index_update((g), __VA_ARGS__))
#define kiln_index_set(g, ...)        KILN__V(g, kiln_index_set((g), __VA_ARGS__))
#define kiln_index_add(g, ...)        KILN__V(g, kiln_index_add((g), __VA_ARGS__))
#define kiln_index_mul(g, ...)        KILN__V(g, kiln_index_mul((g), __VA_ARGS__))
#define kiln_index_min(g, ...)        KILN__V(g, kiln_index_min((g), __VA_ARGS__))
#define kiln_index_max(g, ...)        KILN__V(g, kiln_index_max((g), __VA_ARGS__))
#define kiln_stack(g, ...)            KILN__V(g, kiln_stack((g), __VA_ARGS__))
#define kiln_argmax(g, ...)           KILN__V(g, kiln_argmax((g), __VA_ARGS__))
#define kiln_argmin(g, ...)           KILN__V(g, kiln_argmin((g), __VA_ARGS__))
#define kiln_cumsum(g, ...)           KILN__V(g, kiln_cumsum((g), __VA_ARGS__))
#define kiln_argsort(g, ...)          KILN__V(g, kiln_argsort((g), __VA_ARGS__))
#define kiln_sort(g, ...)             KILN__S(g, kiln_sort((g), __VA_ARGS__))
#define kiln_top_k(g, ...)            KILN__S(g, kiln_top_k((g), __VA_ARGS__))
#define kiln_one_hot(g, ...)          KILN__V(g, kiln_one_hot((g), __VA_ARGS__))
#define kiln_split(g, ...)            KILN__S(g, kiln_split((g), __VA_ARGS__))
#define kiln_make_causal_mask(g, ...) KILN__V(g, kiln_make_causal_mask((g), __VA_ARGS__))
#define kiln_relu(g, ...)             KILN__V(g, kiln_relu((g), __VA_ARGS__))
#define kiln_softmax(g, ...)          KILN__V(g, kiln_softmax((g), __VA_ARGS__))
#define kiln_log_softmax(g, ...)      KILN__V(g, kiln_log_softmax((g), __VA_ARGS__))
#define kiln_logsumexp(g, ...)        KILN__V(g, kiln_logsumexp((g), __VA_ARGS__))
#define kiln_layer_norm(g, ...)       KILN__V(g, kiln_layer_norm((g), __VA_ARGS__))
#define kiln_layer_norm_axis(g, ...)  KILN__V(g, kiln_layer_norm_axis((g), __VA_ARGS__))
#define kiln_square(g, ...)           KILN__V(g, kiln_square((g), __VA_ARGS__))
#define kiln_gelu(g, ...)             KILN__V(g, kiln_gelu((g), __VA_ARGS__))
#define kiln_silu(g, ...)             KILN__V(g, kiln_silu((g), __VA_ARGS__))
#define kiln_rms_norm(g, ...)         KILN__V(g, kiln_rms_norm((g), __VA_ARGS__))
#define kiln_where(g, ...)            KILN__V(g, kiln_where((g), __VA_ARGS__))
#define kiln_clip(g, ...)             KILN__V(g, kiln_clip((g), __VA_ARGS__))
#define kiln_optim_sgd(g, ...)        KILN__S(g, kiln_optim_sgd((g), __VA_ARGS__))
#define kiln_optim_adam(g, ...)       KILN__S(g, kiln_optim_adam((g), __VA_ARGS__))
#define kiln_optim_adamw(g, ...)      KILN__S(g, kiln_optim_adamw((g), __VA_ARGS__))
#define kiln_optim_lion(g, ...)       KILN__S(g, kiln_optim_lion((g), __VA_ARGS__))
#define kiln_optim_adafactor(g, ...)  KILN__S(g, kiln_optim_adafactor((g), __VA_ARGS__))
#define kiln_optim_clip_by_global_norm(g, ...)                                                     \
    KILN__S(g, kiln_optim_clip_by_global_norm((g), __VA_ARGS__))
#define kiln_loss_scale_unscale(g, ...)    KILN__S(g, kiln_loss_scale_unscale((g), __VA_ARGS__))
#define kiln_select_each(g, ...)           KILN__S(g, kiln_select_each((g), __VA_ARGS__))
#define kiln_dynamic_slice(g, ...)         KILN__V(g, kiln_dynamic_slice((g), __VA_ARGS__))
#define kiln_dynamic_update_slice(g, ...)  KILN__V(g, kiln_dynamic_update_slice((g), __VA_ARGS__))
#define kiln_capture(g, ...)               KILN__V(g, kiln_capture((g), __VA_ARGS__))
#define kiln_while_loop(g, ...)            KILN__S(g, kiln_while_loop((g), __VA_ARGS__))
#define kiln_fori_loop(g, ...)             KILN__S(g, kiln_fori_loop((g), __VA_ARGS__))
#define kiln_scan(g, ...)                  KILN__S(g, kiln_scan((g), __VA_ARGS__))
#define kiln_cond(g, ...)                  KILN__S(g, kiln_cond((g), __VA_ARGS__))
#define kiln_switch(g, ...)                KILN__S(g, kiln_switch((g), __VA_ARGS__))
#define kiln_softmax_cross_entropy(g, ...) KILN__V(g, kiln_softmax_cross_entropy((g), __VA_ARGS__))
#define kiln_dot_product_attention(g, ...) KILN__V(g, kiln_dot_product_attention((g), __VA_ARGS__))
#define kiln_grad(g, ...)                  KILN__S(g, kiln_grad((g), __VA_ARGS__))
#define kiln_checkpoint_begin(g, ...)      KILN__S(g, kiln_checkpoint_begin((g), __VA_ARGS__))
#define kiln_checkpoint_end(g)             KILN__S(g, kiln_checkpoint_end(g))
#define kiln_checkpoint_begin_offload(g, ...)                                                      \
    KILN__S(g, kiln_checkpoint_begin_offload((g), __VA_ARGS__))
#define kiln_memory_put(g, ...)           KILN__V(g, kiln_memory_put((g), __VA_ARGS__))
#define kiln_parameter_in_memory(g, ...)  KILN__V(g, kiln_parameter_in_memory((g), __VA_ARGS__))
#define kiln_checkpoint_name(g, ...)      KILN__V(g, kiln_checkpoint_name((g), __VA_ARGS__))
#define kiln_vjp(g, ...)                  KILN__S(g, kiln_vjp((g), __VA_ARGS__))
#define kiln_conv_general_dilated(g, ...) KILN__V(g, kiln_conv_general_dilated((g), __VA_ARGS__))
#define kiln_reduce_window(g, ...)        KILN__V(g, kiln_reduce_window((g), __VA_ARGS__))
#define kiln_avg_pool(g, ...)             KILN__V(g, kiln_avg_pool((g), __VA_ARGS__))
#define kiln_cholesky(g, ...)             KILN__V(g, kiln_cholesky((g), __VA_ARGS__))
#define kiln_cholesky_from_lower(g, ...)  KILN__V(g, kiln_cholesky_from_lower((g), __VA_ARGS__))
#define kiln_triangular_solve(g, ...)     KILN__V(g, kiln_triangular_solve((g), __VA_ARGS__))
#define kiln_cho_solve(g, ...)            KILN__V(g, kiln_cho_solve((g), __VA_ARGS__))
#define kiln_eye(g, ...)                  KILN__V(g, kiln_eye((g), __VA_ARGS__))
#define kiln_tril(g, ...)                 KILN__V(g, kiln_tril((g), __VA_ARGS__))
#define kiln_triu(g, ...)                 KILN__V(g, kiln_triu((g), __VA_ARGS__))
#define kiln_diagonal(g, ...)             KILN__V(g, kiln_diagonal((g), __VA_ARGS__))
#define kiln_jvp(g, ...)                  KILN__S(g, kiln_jvp((g), __VA_ARGS__))
#define kiln_custom_vjp(g, ...)           KILN__S(g, kiln_custom_vjp((g), __VA_ARGS__))
#define kiln_vmap(g, ...)                 KILN__S(g, kiln_vmap((g), __VA_ARGS__))
#endif

/* ------------------------------------------------------ deprecated names ---- */

/* Names an earlier header used, kept so that programs written against it still build
 * (CHANGELOG.md: a renamed name keeps its old spelling here for at least one release
 * before it may go). Each one means exactly its replacement. New code uses the
 * replacements; define KILN_NO_DEPRECATED before including kiln.h to hide this section
 * and find every old name a program still uses (kiln's own build does). Error messages
 * name the replacement, which is what runs.
 *
 * Functions are real exported functions that call their replacement, so a program may
 * take their address and one linked against an older libkiln.so.0 still finds them;
 * GCC and clang warn at each use (-Wdeprecated-declarations). The enum values are
 * macros, which GCC cannot mark: they compile without a warning there, while clang 14
 * and later warn through its "deprecated" pragma (-Wdeprecated-pragma). A typedef keeps
 * the old enum type name (the tag spelling "enum kiln_compare_dir" is not kept).
 *
 * Not kept, having no alias that could mean the same: KILN__AT(g), an internal helper of
 * the location macros (its public form is kiln_graph_at(g, __FILE__, __LINE__)), and the
 * two-argument kiln_gelu(g, x), whose name stayed when it gained `approximate` (pass true
 * for the tanh form the old call computed). */
#ifndef KILN_NO_DEPRECATED

/* Renamed before 0.1.0 (to the naming rule at the top of this file), without aliases at the
 * time; kept here since 0.2.0. */
#define KILN_OK                   KILN_STATUS_OK
#define KILN_ERR_INVALID_ARGUMENT KILN_STATUS_INVALID_ARGUMENT
#define KILN_ERR_SHAPE            KILN_STATUS_SHAPE
#define KILN_ERR_DTYPE            KILN_STATUS_DTYPE
#define KILN_ERR_HOST_OOM         KILN_STATUS_HOST_OOM
#define KILN_ERR_DEVICE_OOM       KILN_STATUS_DEVICE_OOM
#define KILN_ERR_CONFIG           KILN_STATUS_CONFIG
#define KILN_ERR_UNIMPLEMENTED    KILN_STATUS_UNIMPLEMENTED
#define KILN_ERR_INTERNAL         KILN_STATUS_INTERNAL
#define KILN_ERR_IO               KILN_STATUS_IO
#define KILN_ERR_BACKEND          KILN_STATUS_BACKEND
#define KILN_ERR_CONSUMED         KILN_STATUS_CONSUMED
#define KILN_ALLOC_DEFAULT        KILN_ALLOC_MODE_DEFAULT
#define KILN_ALLOC_GROW           KILN_ALLOC_MODE_GROW
#define KILN_ALLOC_PREALLOCATE    KILN_ALLOC_MODE_PREALLOCATE
#define KILN_ALLOC_PLATFORM       KILN_ALLOC_MODE_PLATFORM
#define KILN_INVALID_DTYPE        KILN_DTYPE_INVALID
#define KILN_F32                  KILN_DTYPE_F32
#define KILN_F64                  KILN_DTYPE_F64
#define KILN_I32                  KILN_DTYPE_I32
#define KILN_I64                  KILN_DTYPE_I64
#define KILN_BOOL                 KILN_DTYPE_BOOL
#define KILN_BUFFER_ARGUMENT      KILN_BUFFER_KIND_ARGUMENT
#define KILN_BUFFER_CONSTANT      KILN_BUFFER_KIND_CONSTANT
#define KILN_BUFFER_OUTPUT        KILN_BUFFER_KIND_OUTPUT
#define KILN_BUFFER_TEMP          KILN_BUFFER_KIND_TEMP
#define KILN_BUFFER_SCRATCH       KILN_BUFFER_KIND_SCRATCH
#define KILN_PLACE_ARGUMENT       KILN_BUFFER_PLACE_ARGUMENT
#define KILN_PLACE_CONSTANT       KILN_BUFFER_PLACE_CONSTANT
#define KILN_PLACE_OUTPUT         KILN_BUFFER_PLACE_OUTPUT
#define KILN_PLACE_ARENA          KILN_BUFFER_PLACE_ARENA
#define KILN_PLACE_DONATED        KILN_BUFFER_PLACE_DONATED

typedef kiln_cmp kiln_compare_dir KILN_DEPRECATED("use kiln_cmp");

KILN_DEPRECATED("use kiln_array_destroy") KILN_API void kiln_array_free(kiln_array *a);
KILN_DEPRECATED("use kiln_dtype_itemsize") KILN_API size_t kiln_dtype_size(kiln_dtype t);
KILN_DEPRECATED("use kiln_device_get_memory_stats")
KILN_API kiln_status kiln_device_memory_stats(kiln_context *ctx, int device,
                                              kiln_memory_stats *out);
KILN_DEPRECATED("use kiln_device_memory_report")
KILN_API char *kiln_device_memory_summary(kiln_context *ctx, int device);
KILN_DEPRECATED("use kiln_executable_get_memory_analysis")
KILN_API kiln_status kiln_executable_memory_analysis(const kiln_executable *e,
                                                     kiln_memory_analysis *out);
KILN_DEPRECATED("use kiln_executable_get_buffer_info")
KILN_API kiln_status kiln_executable_buffer_info(const kiln_executable *e, int i,
                                                 kiln_buffer_info *out);

#if defined(__clang__) && defined(__has_warning)
#if __has_warning("-Wdeprecated-pragma")
#pragma clang deprecated(KILN_OK, "use KILN_STATUS_OK")
#pragma clang deprecated(KILN_ERR_INVALID_ARGUMENT, "use KILN_STATUS_INVALID_ARGUMENT")
#pragma clang deprecated(KILN_ERR_SHAPE, "use KILN_STATUS_SHAPE")
#pragma clang deprecated(KILN_ERR_DTYPE, "use KILN_STATUS_DTYPE")
#pragma clang deprecated(KILN_ERR_HOST_OOM, "use KILN_STATUS_HOST_OOM")
#pragma clang deprecated(KILN_ERR_DEVICE_OOM, "use KILN_STATUS_DEVICE_OOM")
#pragma clang deprecated(KILN_ERR_CONFIG, "use KILN_STATUS_CONFIG")
#pragma clang deprecated(KILN_ERR_UNIMPLEMENTED, "use KILN_STATUS_UNIMPLEMENTED")
#pragma clang deprecated(KILN_ERR_INTERNAL, "use KILN_STATUS_INTERNAL")
#pragma clang deprecated(KILN_ERR_IO, "use KILN_STATUS_IO")
#pragma clang deprecated(KILN_ERR_BACKEND, "use KILN_STATUS_BACKEND")
#pragma clang deprecated(KILN_ERR_CONSUMED, "use KILN_STATUS_CONSUMED")
#pragma clang deprecated(KILN_ALLOC_DEFAULT, "use KILN_ALLOC_MODE_DEFAULT")
#pragma clang deprecated(KILN_ALLOC_GROW, "use KILN_ALLOC_MODE_GROW")
#pragma clang deprecated(KILN_ALLOC_PREALLOCATE, "use KILN_ALLOC_MODE_PREALLOCATE")
#pragma clang deprecated(KILN_ALLOC_PLATFORM, "use KILN_ALLOC_MODE_PLATFORM")
#pragma clang deprecated(KILN_INVALID_DTYPE, "use KILN_DTYPE_INVALID")
#pragma clang deprecated(KILN_F32, "use KILN_DTYPE_F32")
#pragma clang deprecated(KILN_F64, "use KILN_DTYPE_F64")
#pragma clang deprecated(KILN_I32, "use KILN_DTYPE_I32")
#pragma clang deprecated(KILN_I64, "use KILN_DTYPE_I64")
#pragma clang deprecated(KILN_BOOL, "use KILN_DTYPE_BOOL")
#pragma clang deprecated(KILN_BUFFER_ARGUMENT, "use KILN_BUFFER_KIND_ARGUMENT")
#pragma clang deprecated(KILN_BUFFER_CONSTANT, "use KILN_BUFFER_KIND_CONSTANT")
#pragma clang deprecated(KILN_BUFFER_OUTPUT, "use KILN_BUFFER_KIND_OUTPUT")
#pragma clang deprecated(KILN_BUFFER_TEMP, "use KILN_BUFFER_KIND_TEMP")
#pragma clang deprecated(KILN_BUFFER_SCRATCH, "use KILN_BUFFER_KIND_SCRATCH")
#pragma clang deprecated(KILN_PLACE_ARGUMENT, "use KILN_BUFFER_PLACE_ARGUMENT")
#pragma clang deprecated(KILN_PLACE_CONSTANT, "use KILN_BUFFER_PLACE_CONSTANT")
#pragma clang deprecated(KILN_PLACE_OUTPUT, "use KILN_BUFFER_PLACE_OUTPUT")
#pragma clang deprecated(KILN_PLACE_ARENA, "use KILN_BUFFER_PLACE_ARENA")
#pragma clang deprecated(KILN_PLACE_DONATED, "use KILN_BUFFER_PLACE_DONATED")
#endif
#endif

#endif /* KILN_NO_DEPRECATED */

#ifdef __cplusplus
}
#endif
#endif /* KILN_H */
