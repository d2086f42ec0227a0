/* cpu_backend.c — the CPU backend's table (backend_impl.h) and its per-context state.
 *
 * A program is a shared object built by the system C compiler (cc.c, with its on-disk
 * cache); a kernel handle is the address dlsym gives for "kiln_k<i>"; a launch splits the
 * kernel's work items over the thread pool (pool.c); gemm, permute and scatter-add are the
 * hand-written kernels of cpu_ops.c. Every call is synchronous, so there is no
 * synchronize.
 *
 * Invariants:
 *   - open is cheap (tests make many contexts): it allocates the state and the compiler's
 *     record, and nothing runs; the compiler is probed at the first compile and the
 *     pool's threads start at the first launch_prepare;
 *   - the pool pointer is written once, under pool_mu, with release order, and read
 *     without the lock (acquire) on every run: a run that finds it set pays no lock;
 *   - close runs after every program is freed and no call is in flight: it joins the
 *     pool's workers, then frees the compiler. */
#include "cpu.h"
#include "cpu_ops.h"

#include <cblas.h>

#include <string.h>

typedef struct cpu_state {
    kiln_context *ctx;
    cc_compiler *cc;
    pthread_mutex_t pool_mu; /* guards the pool's creation */
    _Atomic(kn_pool *) pool; /* NULL until the first launch_prepare */
} cpu_state;

/* Loop kernels, as src/codegen prints them. */
typedef void (*cpu_kernel_fn)(void *const *bufs, int64_t begin, int64_t end);

static kiln_status cpu_open(kiln_context *ctx, void **out) {
    cpu_state *st = host_calloc(ctx, 1, sizeof *st);
    *out = st;
    if (!st) return ctx_oom(ctx, "kiln_context_create: CPU backend state", sizeof *st);
    st->ctx = ctx;
    pthread_mutex_init(&st->pool_mu, NULL);
    atomic_init(&st->pool, NULL);
    kiln_status s = cc_compiler_create(ctx, &st->cc);
    if (s) {
        pthread_mutex_destroy(&st->pool_mu);
        host_free(ctx, st, sizeof *st);
        *out = NULL;
    }
    return s;
}

static void cpu_close(kiln_context *ctx, void *state) {
    cpu_state *st = state;
    if (!st) return;
    pool_destroy(atomic_load(&st->pool)); /* before anything its workers might still reach */
    cc_compiler_destroy(st->cc);
    pthread_mutex_destroy(&st->pool_mu);
    host_free(ctx, st, sizeof *st);
}

cc_compiler *cpu_backend_compiler(void *state) {
    return ((cpu_state *)state)->cc;
}

kiln_status cpu_backend_pool(void *state, kn_pool **out) {
    cpu_state *st = state;
    kn_pool *p = atomic_load_explicit(&st->pool, memory_order_acquire);
    kiln_status s = KILN_STATUS_OK;
    if (!p) {
        pthread_mutex_lock(&st->pool_mu);
        p = atomic_load_explicit(&st->pool, memory_order_relaxed);
        if (!p && !(s = pool_create(st->ctx, st->ctx->config.num_threads, &p))) {
            /* BLAS runs inside the pool's threads (cpu_gemm_slot): its own would only
             * compete with them. Process-wide, as torch.set_num_threads is. */
            openblas_set_num_threads(1);
            atomic_store_explicit(&st->pool, p, memory_order_release);
        }
        pthread_mutex_unlock(&st->pool_mu);
    }
    *out = p;
    return s;
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
    if (!s) info->code_bytes = cc_module_code_bytes(m);
    *out = (kn_program *)m;
    return s;
}

static void cpu_program_free(void *state, kn_program *prog) {
    (void)state;
    cc_module_unload((cc_module *)prog);
}

static kiln_status cpu_kernel_get(void *state, kn_program *prog, const char *name, void **kernel) {
    cpu_state *st = state;
    *kernel = cc_module_sym((cc_module *)prog, name);
    if (*kernel) return KILN_STATUS_OK;
    return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                     "CPU backend: compiled program %s has no kernel %s",
                     cc_module_key((cc_module *)prog), name);
}

static kiln_status cpu_launch_prepare(void *state, int device) {
    kn_pool *p;
    (void)device;
    return cpu_backend_pool(state, &p);
}

typedef struct cpu_call {
    cpu_kernel_fn fn;
    void *const *bufs;
} cpu_call;

static void run_chunk(void *arg, int64_t begin, int64_t end) {
    const cpu_call *c = arg;
    c->fn(c->bufs, begin, end);
}

/* launch_prepare has made the pool: a run calls it before its first launch. */
static kiln_status cpu_launch(void *state, int device, void *kernel, void *const *bufs, int n_bufs,
                              int64_t items, int64_t grain) {
    cpu_state *st = state;
    (void)device;
    (void)n_bufs; /* the C kernel reads its buffers from the array */
    cpu_call c = {.bufs = bufs};
    memcpy(&c.fn, &kernel, sizeof c.fn); /* object -> function pointer, as dlsym needs */
    pool_parallel_for(atomic_load_explicit(&st->pool, memory_order_acquire), items, grain,
                      run_chunk, &c);
    return KILN_STATUS_OK;
}

/* ----------------------------------------------------- library kernels ---- */

typedef struct gemm_call {
    kiln_dtype t;
    const kn_gemm_desc *d;
    const void *a, *b;
    void *c;
    int64_t blocks;
} gemm_call;

static void gemm_chunk(void *arg, int64_t begin, int64_t end) {
    const gemm_call *g = arg;
    cpu_gemm_part(g->t, g->d, g->a, g->b, g->c, g->blocks, begin, end);
}

/* Products run on kiln's pool, one single-threaded BLAS call per batch entry or row block,
 * as XLA runs its matmuls on its own pool: one set of threads per process part, so the
 * pool's workers (which spin briefly between kernels) never fight BLAS's own threads for
 * the cores. The pool exists: a run calls launch_prepare first. */
static kiln_status cpu_gemm_slot(void *state, int device, kiln_dtype t, const kn_gemm_desc *d,
                                 const void *a, const void *b, void *c) {
    cpu_state *st = state;
    (void)device;
    kn_pool *p = atomic_load_explicit(&st->pool, memory_order_acquire);
    int64_t blocks = cpu_gemm_blocks(d, p ? pool_num_threads(p) : 1);
    if (!p || blocks == 0 || d->batch * blocks == 1) {
        cpu_gemm(t, d, a, b, c);
        return KILN_STATUS_OK;
    }
    gemm_call g = {t, d, a, b, c, blocks};
    pool_parallel_for(p, d->batch * blocks, 1, gemm_chunk, &g);
    return KILN_STATUS_OK;
}

static kiln_status cpu_permute_slot(void *state, int device, kiln_dtype t, const void *src,
                                    int rank, const int64_t *dims, const int *perm, void *dst) {
    (void)state, (void)device;
    cpu_permute(t, src, rank, dims, perm, dst);
    return KILN_STATUS_OK;
}

static kiln_status cpu_scatter_slot(void *state, int device, kiln_dtype t, kiln_dtype it,
                                    const void *operand, int64_t rows, int64_t row_len,
                                    const void *idx, int64_t n_idx, const void *upd, void *out) {
    (void)state, (void)device;
    cpu_scatter_add_rows(t, it, operand, rows, row_len, idx, n_idx, upd, out);
    return KILN_STATUS_OK;
}

const kn_backend kn_cpu_backend = {
    .name = "cpu",
    .default_alloc_mode = KILN_ALLOC_MODE_GROW,
    .open = cpu_open,
    .close = cpu_close,
    .device_count = cpu_device_count,
    .memory_info = cpu_memory_info,
    .region_alloc = cpu_region_alloc,
    .region_free = cpu_region_free,
    .program_compile = cpu_program_compile,
    .program_free = cpu_program_free,
    .kernel_get = cpu_kernel_get,
    .launch_prepare = cpu_launch_prepare,
    .launch = cpu_launch,
    .gemm = cpu_gemm_slot,
    .permute = cpu_permute_slot,
    .scatter_add_rows = cpu_scatter_slot,
};
