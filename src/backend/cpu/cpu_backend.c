/* cpu_backend.c — the CPU backend's table (backend_impl.h) and its per-context state.
 *
 * A program is a shared object built by the system C compiler (cc.c, with its on-disk
 * cache); a kernel handle (cpu_kernel) holds the address dlsym gives for "kiln_k<i>", and
 * for a split reduction its part function; a launch splits the kernel's work items (or
 * parts) over the thread pool (pool.c); the library ops (lib_run: gemm, permute,
 * scatter-add, cumsum, attention and its gradient, argsort) are the hand-written kernels of
 * cpu_ops.c, cpu_attention.c and cpu_attention_grad.c, gemm through the GEMM provider of
 * KILN_BLAS (blas.h).
 * Every call is synchronous, so there is no synchronize.
 *
 * Invariants:
 *   - the backend drives opt.devices devices (KILN_CPU_DEVICES), all host memory;
 *     they share the compiler and its cache (a program runs on any of them), and each has
 *     its own thread pool with an equal share of the KILN_NUM_THREADS threads (the first
 *     devices take one more when they do not divide evenly; every device has at least
 *     one), so work on two devices never waits for the other's pool;
 *   - open is cheap (tests make many contexts): it allocates the state and the compiler's
 *     record, and nothing runs; the compiler is probed at the first compile, a device's
 *     pool threads start at its first launch_prepare, and the GEMM provider is loaded at
 *     the first launch_prepare or gemm;
 *   - a pool pointer and the provider flag are written once, under pool_mu, with release
 *     order, and read without the lock (acquire) on every run: a run that finds them set
 *     pays no lock;
 *   - close runs after every program is freed and no call is in flight: it joins the
 *     pools' workers, then frees the compiler. */
#include "cpu.h"
#include "cpu_ops.h"

#include <math.h>
#include <string.h>

typedef struct cpu_state {
    kiln_context *ctx;
    kn_cpu_options opt; /* as open received them; the compiler reads them too */
    cc_compiler *cc;
    int n_devices;
    pthread_mutex_t pool_mu;                     /* guards the pools' and the provider's creation */
    _Atomic(kn_pool *) pool[KN_MAX_CPU_DEVICES]; /* per device; NULL until its first launch */
    _Atomic(bool) blas_ready;                    /* blas is set: written once, after blas */
    cpu_blas blas;
    /* cpu_gemm_warm's thread: 0 not started, 1 running (warm_thread to join), 2 done */
    pthread_mutex_t warm_mu;
    int warm;
    pthread_t warm_thread;
} cpu_state;

static void warm_join(cpu_state *st);

static kiln_status cpu_open(kiln_context *ctx, const kn_backend_options *opts, void **out) {
    cpu_state *st = host_calloc(ctx, 1, sizeof *st);
    *out = st;
    if (!st) return ctx_oom(ctx, "kiln_context_create: CPU backend state", sizeof *st);
    st->ctx = ctx;
    st->opt = opts->cpu;
    st->n_devices = st->opt.devices > 0 ? st->opt.devices : 1;
    pthread_mutex_init(&st->pool_mu, NULL);
    pthread_mutex_init(&st->warm_mu, NULL);
    for (int i = 0; i < KN_MAX_CPU_DEVICES; i++) atomic_init(&st->pool[i], NULL);
    atomic_init(&st->blas_ready, false);
    kiln_status s = cc_compiler_create(ctx, &st->opt, &st->cc);
    if (s) {
        pthread_mutex_destroy(&st->pool_mu);
        pthread_mutex_destroy(&st->warm_mu);
        host_free(ctx, st, sizeof *st);
        *out = NULL;
    }
    return s;
}

static void cpu_close(kiln_context *ctx, void *state) {
    cpu_state *st = state;
    if (!st) return;
    warm_join(st);                          /* it calls the provider closed below */
    for (int i = 0; i < st->n_devices; i++) /* before anything the workers might still reach */
        pool_destroy(atomic_load(&st->pool[i]));
    if (atomic_load(&st->blas_ready)) cpu_blas_close(ctx, &st->blas);
    cc_compiler_destroy(st->cc);
    pthread_mutex_destroy(&st->pool_mu);
    pthread_mutex_destroy(&st->warm_mu);
    host_free(ctx, st, sizeof *st);
}

cc_compiler *cpu_backend_compiler(void *state) {
    return ((cpu_state *)state)->cc;
}

kn_cpu_options *cpu_backend_options(void *state) {
    return &((cpu_state *)state)->opt;
}

int cpu_backend_device_count(void *state) {
    return ((cpu_state *)state)->n_devices;
}

/* Device d's share of the threads: KILN_NUM_THREADS (0: every core) split evenly. */
static int pool_share(const cpu_state *st, int device) {
    int total = st->opt.num_threads ? st->opt.num_threads : pool_online_cores();
    int share = total / st->n_devices + (device < total % st->n_devices);
    return share > 0 ? share : 1;
}

kiln_status cpu_backend_device_pool(void *state, int device, kn_pool **out) {
    cpu_state *st = state;
    kn_pool *p = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    kiln_status s = KILN_STATUS_OK;
    if (!p) {
        pthread_mutex_lock(&st->pool_mu);
        p = atomic_load_explicit(&st->pool[device], memory_order_relaxed);
        if (!p && !(s = pool_create(st->ctx, pool_share(st, device), &p)))
            atomic_store_explicit(&st->pool[device], p, memory_order_release);
        pthread_mutex_unlock(&st->pool_mu);
    }
    *out = p;
    return s;
}

kiln_status cpu_backend_pool(void *state, kn_pool **out) {
    return cpu_backend_device_pool(state, 0, out);
}

/* The GEMM provider, loaded on first use (blas.h); it runs single-threaded inside the
 * pool's threads (cpu_lib_gemm): its own threads would only compete with them. */
static kiln_status cpu_backend_blas(cpu_state *st, const cpu_blas **out) {
    kiln_status s = KILN_STATUS_OK;
    if (!atomic_load_explicit(&st->blas_ready, memory_order_acquire)) {
        pthread_mutex_lock(&st->pool_mu);
        if (!atomic_load_explicit(&st->blas_ready, memory_order_relaxed) &&
            !(s = cpu_blas_open(st->ctx, st->opt.blas, &st->blas)))
            atomic_store_explicit(&st->blas_ready, true, memory_order_release);
        pthread_mutex_unlock(&st->pool_mu);
    }
    *out = &st->blas;
    return s;
}

/* oneDNN generates its sgemm kernels, all of them, in the first call of a process that
 * takes its JIT path (any product of 8 or more; what it costs is measured in
 * bench/RESULTS.md, "First calls: where they go, and what was cut"): one such call on a
 * thread of its own, started by kiln_compile before the compiler runs (gemm_warm) and
 * joined when it is done (cpu_program_compile), moves that cost off the first run. The
 * other providers generate nothing. */
static void *warm_main(void *arg) {
    const cpu_blas *bl = arg;
    float a[64] = {0}, b[64] = {0}, c[64];
    cpu_blas_sgemm(bl, false, false, 8, 8, 8, a, 8, b, 8, c, 8);
    return NULL;
}

static void cpu_gemm_warm(void *state, int device, kiln_dtype t) {
    cpu_state *st = state;
    const cpu_blas *bl;
    (void)device;
    if (t != KILN_DTYPE_F32) return;
    pthread_mutex_lock(&st->warm_mu);
    if (!st->warm) {
        st->warm = 2;
        if (!cpu_backend_blas(st, &bl) && bl->f32 == KILN_BLAS_ONEDNN &&
            !pthread_create(&st->warm_thread, NULL, warm_main, (void *)bl))
            st->warm = 1;
    }
    pthread_mutex_unlock(&st->warm_mu);
}

static void warm_join(cpu_state *st) {
    pthread_mutex_lock(&st->warm_mu);
    if (st->warm == 1) {
        pthread_join(st->warm_thread, NULL);
        st->warm = 2;
    }
    pthread_mutex_unlock(&st->warm_mu);
}

/* ------------------------------------------------------------ programs ---- */

/* A kn_program of this backend is a cc_module: the casts below are the only place that
 * knows it. */
static kiln_status cpu_program_compile(void *state, int device, const char *source, size_t len,
                                       kn_program **out, kn_program_info *info) {
    cpu_state *st = state;
    (void)device;
    cc_module *m = NULL;
    *info = (kn_program_info){0};
    kiln_status s = cc_module_load(st->cc, source, len, &m, &info->from_cache);
    warm_join(st);
    if (!s) {
        cpu_runtime_bind(m);
        info->code_bytes = cc_module_code_bytes(m);
    }
    *out = (kn_program *)m;
    return s;
}

/* ---- tiered compilation (src/runtime/tier.c): the optimised build, looked for in the
 * cache or built in the background ---- */
static kiln_status cpu_program_compile_tier(void *state, int device, const char *source, size_t len,
                                            unsigned flags, kn_program **out,
                                            kn_program_info *info) {
    cpu_state *st = state;
    (void)device;
    cc_module *m = NULL;
    *info = (kn_program_info){0};
    *out = NULL;
    unsigned f = (flags & KN_TIER_CACHED_ONLY ? CC_LOAD_CACHED_ONLY : 0) |
                 (flags & KN_TIER_BACKGROUND ? CC_LOAD_BACKGROUND : 0);
    kiln_status s = cc_module_load_tier(st->cc, source, len, f, &m, &info->from_cache);
    if (!(flags & KN_TIER_BACKGROUND)) warm_join(st); /* see cpu_program_compile */
    if (!s && m) {
        cpu_runtime_bind(m);
        info->code_bytes = cc_module_code_bytes(m);
    }
    *out = (kn_program *)m;
    return s;
}

static bool cpu_tier_same_compiler(void *state) {
    return cc_compiler_matches_library(((cpu_state *)state)->cc);
}

static void cpu_program_free(void *state, kn_program *prog) {
    (void)state;
    cc_module_unload((cc_module *)prog);
}

static kiln_status cpu_kernel_get(void *state, kn_program *prog, const char *name, void **kernel) {
    cpu_state *st = state;
    cc_module *m = (cc_module *)prog;
    *kernel = NULL;
    void *fn = cc_module_sym(m, name);
    if (!fn)
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                         "CPU backend: compiled program %s has no kernel %s", cc_module_key(m),
                         name);
    char sub[128];
    snprintf(sub, sizeof sub, "%s_part", name);
    void *part = cc_module_sym(m, sub);
    snprintf(sub, sizeof sub, "%s_parts", name);
    const int64_t *parts = cc_module_sym(m, sub);
    if (part && (!parts || parts[0] < 1 || parts[1] < 1))
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                         "CPU backend: compiled program %s: kernel %s has a part function but "
                         "no valid %s",
                         cc_module_key(m), name, sub);
    cpu_kernel *k = cc_module_alloc(m, sizeof *k);
    if (!k) return ctx_oom(st->ctx, "CPU backend: kernel handle", sizeof *k);
    memcpy(&k->fn, &fn, sizeof k->fn); /* object -> function pointer, as dlsym needs */
    if (part) {
        memcpy(&k->part, &part, sizeof k->part);
        k->parts = parts[0];
        k->part_bytes = parts[1];
    }
    *kernel = k;
    return KILN_STATUS_OK;
}

static kiln_status cpu_launch_prepare(void *state, int device) {
    kn_pool *p;
    const cpu_blas *bl;
    kiln_status s = cpu_backend_device_pool(state, device, &p);
    return s ? s : cpu_backend_blas(state, &bl);
}

typedef struct cpu_call {
    cpu_kernel_fn fn;
    void *const *bufs;
} cpu_call;

static void run_chunk(void *arg, int64_t begin, int64_t end) {
    const cpu_call *c = arg;
    c->fn(c->bufs, begin, end);
}

/* launch_prepare has made the pool: a run calls it before its first launch. A split
 * kernel runs its parts on the pool, each into its own slice of a scratch buffer passed
 * after the kernel's buffers, then the kernel itself, which combines them in order. */
static kiln_status cpu_launch(void *state, int device, void *kernel, void *const *bufs, int n_bufs,
                              int64_t items, int64_t grain) {
    cpu_state *st = state;
    const cpu_kernel *k = kernel;
    kn_pool *pool = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    if (!k->part) {
        cpu_call c = {.fn = k->fn, .bufs = bufs};
        pool_parallel_for(pool, items, grain, run_chunk, &c);
        return KILN_STATUS_OK;
    }
    size_t ptrs = ((size_t)n_bufs + 1) * sizeof(void *);
    size_t bytes = ptrs + (size_t)k->parts * (size_t)k->part_bytes;
    void **all = host_alloc(st->ctx, bytes);
    if (!all) return ctx_oom(st->ctx, "CPU backend: partial results of a split reduction", bytes);
    memcpy(all, bufs, (size_t)n_bufs * sizeof *all);
    all[n_bufs] = (char *)all + ptrs;
    cpu_call c = {.fn = k->part, .bufs = all};
    pool_parallel_for(pool, k->parts, 1, run_chunk, &c);
    k->fn(all, 0, items);
    host_free(st->ctx, all, bytes);
    return KILN_STATUS_OK;
}

/* A launch_host call: one scratch per thread of the pool, each taken by the chunk that
 * runs on it (at most that many chunks run at once) and given back after it. */
typedef struct host_call {
    kn_host_fn fn;
    const void *arg;
    void *const *bufs;
    char *scratch;
    size_t stride; /* bytes of one scratch, a multiple of 64 */
    int n;
    _Atomic(bool) *busy;
} host_call;

static void run_host_chunk(void *arg, int64_t begin, int64_t end) {
    host_call *c = arg;
    int i = 0;
    for (;; i = (i + 1) % c->n) { /* a free one: there is one for every running chunk */
        bool was = false;
        if (atomic_compare_exchange_strong_explicit(&c->busy[i], &was, true, memory_order_acquire,
                                                    memory_order_relaxed))
            break;
    }
    c->fn(c->arg, c->bufs, begin, end, c->scratch + (size_t)i * c->stride);
    atomic_store_explicit(&c->busy[i], false, memory_order_release);
}

/* A kernel the host runs from its description (the first compile tier), on the pool as
 * cpu_launch runs a compiled one. */
static kiln_status cpu_launch_host(void *state, int device, kn_host_fn fn, const void *arg,
                                   void *const *bufs, int64_t items, int64_t grain,
                                   size_t scratch_bytes) {
    cpu_state *st = state;
    kn_pool *pool = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    int n = pool ? pool_num_threads(pool) : 1;
    size_t stride = (scratch_bytes + 63) & ~(size_t)63, flags = (size_t)n * sizeof(_Atomic(bool));
    size_t bytes = (size_t)n * stride + 64 + flags;
    char *mem = host_alloc(st->ctx, bytes);
    if (!mem)
        return ctx_oom(st->ctx, "CPU backend: the scratch of a kernel run from its description",
                       bytes);
    host_call c = {.fn = fn,
                   .arg = arg,
                   .bufs = bufs,
                   .scratch = (char *)(((uintptr_t)mem + 63) & ~(uintptr_t)63),
                   .stride = stride,
                   .n = n};
    c.busy = (_Atomic(bool) *)(c.scratch + (size_t)n * stride);
    for (int i = 0; i < n; i++) atomic_init(&c.busy[i], false);
    pool_parallel_for(pool, items, grain, run_host_chunk, &c);
    host_free(st->ctx, mem, bytes);
    return KILN_STATUS_OK;
}

/* ----------------------------------------------------- library kernels ---- */

typedef struct gemm_call {
    const cpu_blas *bl;
    kiln_dtype t;
    const kn_gemm_desc *d;
    const void *a, *b;
    void *c;
    int64_t blocks;
} gemm_call;

static void gemm_chunk(void *arg, int64_t begin, int64_t end) {
    const gemm_call *g = arg;
    cpu_gemm_part(g->bl, g->t, g->d, g->a, g->b, g->c, g->blocks, begin, end);
}

/* Products run on kiln's pool, one single-threaded provider call per batch entry or row
 * block, as XLA runs its matmuls on its own pool: one set of threads per process part, so
 * the pool's workers (which spin briefly between kernels) never fight a library's own
 * threads for the cores. A run calls launch_prepare first; without a pool (a direct call)
 * the product runs on the calling thread. */
static kiln_status cpu_lib_gemm(void *state, int device, kiln_dtype t, const kn_gemm_desc *d,
                                const void *a, const void *b, void *c) {
    cpu_state *st = state;
    const cpu_blas *bl;
    kiln_status s = cpu_backend_blas(st, &bl);
    if (s) return s;
    kn_pool *p = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    int64_t blocks = cpu_gemm_blocks(d, p ? pool_num_threads(p) : 1);
    if (!p || blocks == 0 || d->batch * blocks == 1) {
        cpu_gemm(bl, t, d, a, b, c);
        return KILN_STATUS_OK;
    }
    gemm_call g = {bl, t, d, a, b, c, blocks};
    pool_parallel_for(p, d->batch * blocks, 1, gemm_chunk, &g);
    return KILN_STATUS_OK;
}

typedef struct scatter_call {
    kiln_dtype t, it;
    int combine;
    const void *operand, *idx, *upd;
    void *out;
    int64_t rows, row_len, n_idx, parts;
} scatter_call;

static void scatter_chunk(void *arg, int64_t begin, int64_t end) {
    const scatter_call *c = arg;
    cpu_scatter_add_rows_part(c->t, c->it, c->combine, c->operand, c->rows, c->row_len, c->idx,
                              c->n_idx, c->upd, c->out, c->parts, begin, end);
}

/* Runs of the table's rows on the pool (cpu_ops.h): each row is filled and updated by one
 * part, in index order, so the result does not depend on the threads. */
static kiln_status cpu_lib_scatter(void *state, int device, kiln_dtype t, kiln_dtype it,
                                   int combine, const void *operand, int64_t rows, int64_t row_len,
                                   const void *idx, int64_t n_idx, const void *upd, void *out) {
    cpu_state *st = state;
    /* empty rows or operand: the buffers may be NULL, and there is nothing to add */
    if (!rows || !row_len) return KILN_STATUS_OK;
    kn_pool *p = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    int threads = p ? pool_num_threads(p) : 1;
    scatter_call c = {.t = t,
                      .it = it,
                      .combine = combine,
                      .operand = operand,
                      .idx = idx,
                      .upd = upd,
                      .out = out,
                      .rows = rows,
                      .row_len = row_len,
                      .n_idx = n_idx,
                      .parts = cpu_scatter_parts(rows, row_len, n_idx, threads)};
    if (p && c.parts > 1)
        pool_parallel_for(p, c.parts, 1, scatter_chunk, &c);
    else
        scatter_chunk(&c, 0, c.parts);
    return KILN_STATUS_OK;
}

typedef struct scan_call {
    kiln_dtype t;
    const void *x;
    void *out;
    int64_t outer, n, inner;
    bool reverse;
} scan_call;

static void scan_chunk(void *arg, int64_t begin, int64_t end) {
    const scan_call *c = arg;
    cpu_cumsum_part(c->t, c->x, c->out, c->outer, c->n, c->inner, c->reverse, begin, end);
}

/* Rows (and chunks of columns) of the scan on the pool; each item is scanned in order, so
 * the result does not depend on the threads. */
static kiln_status cpu_lib_cumsum(void *state, int device, kiln_dtype t, const void *x, void *out,
                                  int64_t outer, int64_t n, int64_t inner, bool reverse) {
    cpu_state *st = state;
    int64_t items = cpu_cumsum_items(outer, inner);
    if (!items || !n) return KILN_STATUS_OK;
    scan_call c = {t, x, out, outer, n, inner, reverse};
    kn_pool *p = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    if (p && items > 1)
        pool_parallel_for(p, items, 1, scan_chunk, &c);
    else
        scan_chunk(&c, 0, items);
    return KILN_STATUS_OK;
}

/* The fused attention (cpu_attention.c) or a part of its gradient (cpu_attention_grad.c,
 * ATTENTION_GRAD) on the device's pool, one scratch slot per thread of its share as
 * compile time saw it (cpu_lib_scratch). */
static kiln_status cpu_lib_attention(void *state, int device, const kn_lib_desc *ld,
                                     void *const *b) {
    cpu_state *st = state;
    const kn_attention_desc *d = &ld->attention;
    bool grad = ld->op == KN_LIB_ATTENTION_GRAD;
    const cpu_blas *bl;
    kiln_status s = cpu_backend_blas(st, &bl);
    if (s) return s;
    kn_pool *p = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    /* as many threads as the pool has and the planned scratch has slots for (the pool's
     * size follows the affinity when it is made, which may be after the compile) */
    int threads = p ? pool_num_threads(p) : 1;
    int64_t slots = grad ? cpu_attention_grad_slots(d, ld->scratch_bytes)
                         : cpu_attention_slots(d, ld->scratch_bytes);
    if (slots < 1)
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                         "cpu attention: %llu bytes of scratch hold no thread's slot",
                         (unsigned long long)ld->scratch_bytes);
    if (slots < threads) threads = (int)slots;
    if (grad)
        cpu_attention_grad(bl, p, threads, d, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
    else
        cpu_attention(bl, p, threads, d, b[0], b[1], b[2], b[3], b[4], b[5]);
    return KILN_STATUS_OK;
}

typedef struct sort_call {
    kiln_dtype t;
    const kn_sort_desc *d;
    const void *x;
    int32_t *out;
    char *scratch;
    uint64_t slot;
    int64_t rows, tasks;
} sort_call;

/* Pool task `task`: a contiguous run of rows, in the task's own slot of the scratch. */
static void sort_chunk(void *arg, int64_t begin, int64_t end) {
    const sort_call *c = arg;
    for (int64_t task = begin; task < end; task++) /* (rows of one element: no scratch) */
        cpu_sort_part(c->t, c->d, c->x, c->out, c->scratch ? c->scratch + task * c->slot : NULL,
                      task * c->rows / c->tasks, (task + 1) * c->rows / c->tasks);
}

/* argsort's rows on the pool, no more tasks than the planned scratch has slots. */
static kiln_status cpu_lib_sort(void *state, int device, const kn_lib_desc *ld, const void *x,
                                void *out, void *scratch) {
    cpu_state *st = state;
    const kn_sort_desc *d = &ld->sort;
    int64_t rows = d->outer * d->inner;
    if (!rows || !d->k) return KILN_STATUS_OK;
    /* rows of fewer than two elements need no workspace */
    uint64_t slot = d->n < 2 ? 0 : cpu_sort_slot_bytes(d, ld->dtype);
    int64_t slots = slot ? (int64_t)(ld->scratch_bytes / slot) : rows;
    if (slots < 1)
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                         "cpu argsort: %llu bytes of scratch hold no row of %lld elements",
                         (unsigned long long)ld->scratch_bytes, (long long)d->n);
    kn_pool *p = atomic_load_explicit(&st->pool[device], memory_order_acquire);
    int64_t tasks = p ? pool_num_threads(p) : 1;
    if (tasks > slots) tasks = slots;
    if (tasks > rows) tasks = rows;
    sort_call c = {ld->dtype, d, x, out, scratch, slot, rows, tasks};
    if (p && tasks > 1)
        pool_parallel_for(p, tasks, 1, sort_chunk, &c);
    else
        sort_chunk(&c, 0, tasks);
    return KILN_STATUS_OK;
}

/* Every library op but CONV, in the dtypes cpu_lib_dtype_ok names (backend_impl.h). A
 * convolution runs as its primitive form here (src/passes/expand.c): the im2col patches
 * fuse into one loop kernel and the product is the GEMM library's, which measures level
 * with PyTorch's oneDNN convolution on the CNN (bench/RESULTS.md). ATTENTION computes the
 * forward pass, ATTENTION_GRAD the gradient's kinds (LSE, GRAD_*) with no finite fill. */
static bool cpu_lib_supports(void *state, int device, kn_lib_op op, const kn_lib_desc *d) {
    (void)state, (void)device;
    if ((unsigned)op >= KN_LIB_NUM_OPS || op == KN_LIB_CONV) return false;
    if (!d) return true;
    if (!cpu_lib_dtype_ok(op, d->dtype)) return false;
    const kn_attention_desc *a = &d->attention;
    if (op == KN_LIB_ATTENTION) return a->kind == KN_ATTN_FORWARD;
    if (op == KN_LIB_CHOLESKY || op == KN_LIB_TRIANGULAR_SOLVE) return cpu_linalg_fits(&d->linalg);
    if (op == KN_LIB_ATTENTION_GRAD)
        return a->kind >= KN_ATTN_LSE && a->kind <= KN_ATTN_GRAD_V && a->fill == -INFINITY;
    return true;
}

static uint64_t cpu_lib_scratch(void *state, int device, const kn_lib_desc *d) {
    if (d->op == KN_LIB_ARGSORT)
        return cpu_sort_scratch(&d->sort, d->dtype, pool_share(state, device));
    if (d->op == KN_LIB_ATTENTION_GRAD)
        return cpu_attention_grad_scratch(&d->attention, pool_share(state, device));
    if (d->op != KN_LIB_ATTENTION) return 0;
    return cpu_attention_scratch(&d->attention, pool_share(state, device));
}

static kiln_status cpu_lib_run(void *state, int device, const kn_lib_desc *d, void *const *b) {
    switch (d->op) {
    case KN_LIB_GEMM: return cpu_lib_gemm(state, device, d->dtype, &d->gemm, b[0], b[1], b[2]);
    case KN_LIB_PERMUTE:
        cpu_permute(d->dtype, b[0], d->permute.rank, d->permute.dims, d->permute.perm, b[1]);
        return KILN_STATUS_OK;
    case KN_LIB_SCATTER_ADD_ROWS: {
        const kn_scatter_desc *c = &d->scatter;
        return cpu_lib_scatter(state, device, d->dtype, c->idx_dtype, c->combine, b[0], c->rows,
                               c->row_len, b[1], c->n_idx, b[2], b[3]);
    }
    case KN_LIB_CUMSUM: {
        const kn_cumsum_desc *c = &d->cumsum;
        return cpu_lib_cumsum(state, device, d->dtype, b[0], b[1], c->outer, c->n, c->inner,
                              c->reverse);
    }
    case KN_LIB_ATTENTION:
    case KN_LIB_ATTENTION_GRAD: return cpu_lib_attention(state, device, d, b);
    case KN_LIB_ARGSORT: return cpu_lib_sort(state, device, d, b[0], b[1], b[2]);
    case KN_LIB_CHOLESKY:
    case KN_LIB_TRIANGULAR_SOLVE:
        cpu_linalg(atomic_load_explicit(&((cpu_state *)state)->pool[device], memory_order_acquire),
                   d, b);
        return KILN_STATUS_OK;
    default: break;
    }
    cpu_state *st = state;
    return ctx_error(st->ctx, KILN_STATUS_INTERNAL, "cpu backend: no library op %d", (int)d->op);
}

const kn_backend kn_cpu_backend = {
    .name = "cpu",
    .default_alloc_mode = KILN_ALLOC_MODE_GROW,
    .open = cpu_open,
    .close = cpu_close,
    .device_count = cpu_backend_device_count,
    .memory_info = cpu_memory_info,
    .region_alloc = cpu_region_alloc,
    .region_free = cpu_region_free,
    .program_compile = cpu_program_compile,
    .program_compile_tier = cpu_program_compile_tier,
    .tier_same_compiler = cpu_tier_same_compiler,
    .program_free = cpu_program_free,
    .kernel_get = cpu_kernel_get,
    .launch_prepare = cpu_launch_prepare,
    .launch = cpu_launch,
    .launch_host = cpu_launch_host,
    .gemm_warm = cpu_gemm_warm,
    .lib_supports = cpu_lib_supports,
    .lib_scratch = cpu_lib_scratch,
    .lib_run = cpu_lib_run,
};
