/* base.h — what every room of kiln shares: the context, its host allocator, error
 * messages and overflow-checked size arithmetic.
 *
 * Invariants: every host allocation goes through host_alloc/host_realloc/host_free with
 * the size it was made with (so a test allocator can count and fail them); an error
 * message is set exactly where a status other than KILN_STATUS_OK is first produced, and callers
 * above only pass the status on. */
#ifndef KILN_BASE_H
#define KILN_BASE_H

#include "kiln.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

#define KN_ERR_MAX 8192 /* room for a compiler's first ~40 lines of errors */

#if defined(__GNUC__)
#define KN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KN_PRINTF(f, a)
#endif

/* The resolved configuration: options overridden by the environment (config.c), resolved
 * once per context. The rooms above base read their settings here (passes, exec, comm);
 * the backends never do: runtime/context.c copies theirs into each backend's own options
 * (backend_impl.h), which its open receives. */
typedef struct kn_config {
    kiln_alloc_mode alloc_mode; /* never KILN_ALLOC_MODE_DEFAULT once resolved per device */
    double mem_fraction;
    uint64_t memory_limit;
    uint64_t memory_budget;        /* KILN_MEMORY_BUDGET in bytes; 0: none */
    double memory_budget_fraction; /* KILN_MEMORY_BUDGET as a share ("50%"); 0: none */
    int num_threads;
    char cache_dir[1024];
    uint64_t cache_max_bytes; /* KILN_CACHE_MAX_BYTES; 0: no disk cache */
    char cc[1024];            /* KILN_CC; "": cc, gcc or clang from PATH */
    char cc_flags[1024];      /* KILN_CC_FLAGS: appended to the compiler's flags */
    char alloc_trace[1024];   /* KILN_ALLOC_TRACE: record device 0's allocations here */
    bool alloc_trace_env;     /* alloc_trace came from the variable, not the option field */
    char dump_dir[1024];      /* KILN_DUMP: write each compiled program's IR/kernels/plan */
    bool verify_passes;       /* KILN_VERIFY_PASSES: IR verifier after every pass */
    int cpu_devices;          /* KILN_CPU_DEVICES: 1..KN_MAX_CPU_DEVICES once resolved */
    bool async_dispatch;      /* KILN_ASYNC: calls return once their work is enqueued */
    kiln_blas blas;           /* KILN_BLAS: the CPU backend's GEMM library */
    bool matmul_tf32;         /* KILN_MATMUL_PRECISION=tf32: GPU f32 products on TF32 cores */
    bool profile;             /* KILN_PROFILE: profile every executable, report at destroy */
    char nccl_library[1024];  /* KILN_NCCL_LIBRARY; "": libnccl.so.2 */
    int compile_tiers;        /* KILN_COMPILE_TIERS: 1, 2, or 0: the default (tier_wanted) */
    bool excess_precision;    /* KILN_ALLOW_EXCESS_PRECISION: fused 16-bit values stay f32 */
    bool conv_im2col;         /* KILN_CONV_IM2COL: convolutions as im2col on every device */
    /* KILN_ATTENTION_CUDA_CORES: a GPU's fused bf16/f16 attention without tensor cores */
    bool attention_cuda_cores;
} kn_config;

#define KN_MAX_CPU_DEVICES 64

struct kn_device; /* src/backend: one per device of the context */
struct strbuf;
typedef struct kn_err_slot kn_err_slot; /* error.c: one thread's message */

struct kiln_context {
    kiln_host_allocator host;
    kn_config config;
    /* Error messages (error.c): one slot per thread that failed a call. */
    pthread_mutex_t err_mu;                  /* guards err_fallback and appends to err_slots */
    _Atomic(struct kn_err_slot *) err_slots; /* owned; the list only grows until destroy */
    char err_fallback[KN_ERR_MAX];           /* for threads whose slot could not be allocated */
    atomic_uint next_graph_id;
    atomic_uint next_dump_id;  /* KILN_DUMP: numbers the context's dumped programs */
    struct kn_device *devices; /* owned; n_devices entries; they own their backends' state */
    int n_devices;
    /* Why a compiled-in backend has no device here ("cuda: cannot load the CUDA driver
     * ..."), for the message of a request for a device that does not exist; "" if none. */
    char devices_absent[512];
    /* Tiered compilation: the background compiler's queue and thread (src/runtime/tier.c);
     * made with the context, its thread started by the first program that needs it. */
    struct tier_service *tiers;
};

/* Host memory. host_alloc returns NULL on failure and sets no message: the caller knows
 * what it was doing and says so (usually with ctx_oom). */
void *host_alloc(kiln_context *ctx, size_t size);
void *host_calloc(kiln_context *ctx, size_t n, size_t size); /* overflow -> NULL */
void *host_realloc(kiln_context *ctx, void *p, size_t old_size, size_t new_size);
void host_free(kiln_context *ctx, void *p, size_t size);
char *host_strdup(kiln_context *ctx, const char *s); /* free with host_free(len+1) */

/* Error slots: init gives the calling thread (the context's creator) its slot, so a
 * single-threaded program never allocates while reporting an error; free runs at destroy. */
kiln_status ctx_errors_init(kiln_context *ctx);
void ctx_errors_free(kiln_context *ctx);
/* Sets the calling thread's message on the context and returns code, so `return ctx_error(...)`
 * reads well. */
kiln_status ctx_error(kiln_context *ctx, kiln_status code, const char *fmt, ...) KN_PRINTF(3, 4);
kiln_status ctx_verror(kiln_context *ctx, kiln_status code, const char *fmt, va_list ap);
/* The usual host-OOM message: "<what>: host allocation of N bytes failed". */
kiln_status ctx_oom(kiln_context *ctx, const char *what, size_t size);

/* Resolves options + environment into cfg. On error writes a message naming the variable
 * and its value into err. */
kiln_status config_resolve(const kiln_context_options *opts, kn_config *cfg, char *err,
                           size_t err_size);
/* Parsers shared by config and tests: all return false on junk or overflow. */
bool config_parse_bytes(const char *s, uint64_t *out); /* "512M", "2GiB", "1e9", "123" */
bool config_parse_double(const char *s, double *out);
bool config_parse_int(const char *s, long *out);
bool config_parse_bool(const char *s, bool *out); /* 1/0 true/false yes/no on/off */

/* Overflow-checked arithmetic: false when the true result does not fit. */
/* The last component of a path: how messages, reports and the printed IR name a user's
 * source file (model.c:42), so output does not depend on where a project was built. */
static inline const char *kn_path_base(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static inline bool kn_mul_size(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool kn_add_size(size_t a, size_t b, size_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline bool kn_mul_i64(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

#endif
