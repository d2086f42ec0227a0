/* tier.c — tiered compilation: the kernels run from their descriptions first, the
 * optimised build compiled in the background
 * (tier.h; docs/performance.md, "Compile tiers").
 *
 * Invariants:
 *   - a call runs one build from its first kernel to its last: run.c loads e->tier_code
 *     once (acquire) at the start of its steps, and the tier thread stores it once
 *     (release), after every kernel handle in it is found; it is never changed again;
 *   - neither build is freed while the executable lives (e->interp, tier 1, and
 *     tier_code, tier 2, both go in exec_unref), so no call in flight, synchronous or queued on the
 *     device, can lose the code it runs;
 *   - a job never outlives its executable: kiln_executable_destroy (tier_cancel), the one
 *     way an owner lets an executable go, drops its job if still queued and waits for it
 *     if compiling, before dropping its reference. So destroying is synchronous as before
 *     (the executable is gone when it returns, unless a run holds it), and the thread
 *     never frees an executable;
 *   - e->tier_pending, the queue and `running` change only under the service's mutex;
 *     `done` is broadcast whenever a job ends or is dropped (tier_wait's and
 *     tier_cancel's condition);
 *   - the context stops the thread (tier_service_destroy) before its backends close: the
 *     job in progress compiles through the backend. */
#include "tier.h"

#include "codegen/cgen.h"
#include "codegen/kexec.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct tier_job {
    struct tier_job *next;
    kiln_executable *e; /* alive until the job ends (tier_cancel waits for it) */
    char *source;       /* a copy of the generated source, len + 1 bytes */
    size_t len;
    struct timespec start_by; /* CLOCK_MONOTONIC: starts then even before a first call */
} tier_job;

/* A queued build waits for its program's first call to finish, up to this long after
 * kiln_compile, so that the first call (the one tiers are for) has the cores to itself: a
 * compiler beside it, even at nice 10, takes a core from one of the pool's threads for a
 * time slice, and the others wait for that thread at the kernel's end. A longer first call
 * has the build start beside it after this while, so that the optimised build still comes
 * about one compile after kiln_compile. */
enum { TIER_FIRST_CALL_MS = 250 };

struct tier_service {
    kiln_context *ctx;
    pthread_mutex_t mu;
    pthread_cond_t work; /* a job was queued, or stop */
    pthread_cond_t done; /* a job finished or was dropped */
    tier_job *head, *tail;
    kiln_executable *running; /* whose build is compiling now, or NULL */
    bool started, stop;
    bool held; /* tier_hold: the thread starts no job */
    pthread_t thread;
};

/* The second tier's build of e, as run.c reads it. */
struct exec_tier_code {
    kn_program *prog;
    void **fns; /* per step: its kernel in prog for a loop step, else NULL */
    uint32_t n_steps;
};

kiln_status tier_service_create(kiln_context *ctx) {
    tier_service *t = host_calloc(ctx, 1, sizeof *t);
    if (!t) return ctx_oom(ctx, "kiln_context_create: the compile tiers' queue", sizeof *t);
    t->ctx = ctx;
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca; /* `work` is waited for with a deadline on the monotonic clock */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&t->done, NULL);
    ctx->tiers = t;
    return KILN_STATUS_OK;
}

static void job_free(kiln_context *ctx, tier_job *j) {
    host_free(ctx, j->source, j->len + 1);
    host_free(ctx, j, sizeof *j);
}

void tier_service_destroy(kiln_context *ctx) {
    tier_service *t = ctx->tiers;
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    tier_job *left = t->head; /* executables the user never destroyed */
    t->head = t->tail = NULL;
    for (tier_job *j = left; j; j = j->next) j->e->tier_pending = false;
    pthread_cond_broadcast(&t->work);
    pthread_cond_broadcast(&t->done);
    bool started = t->started;
    pthread_mutex_unlock(&t->mu);
    if (started) pthread_join(t->thread, NULL);
    while (left) {
        tier_job *next = left->next;
        job_free(ctx, left);
        left = next;
    }
    pthread_cond_destroy(&t->work);
    pthread_cond_destroy(&t->done);
    pthread_mutex_destroy(&t->mu);
    host_free(ctx, t, sizeof *t);
    ctx->tiers = NULL;
}

/* ------------------------------------------------------------ loading ---- */

bool tier_wanted(const kiln_executable *e) {
    const kn_backend *b = e->dev->backend;
    int tiers = e->ctx->config.compile_tiers;
    if (tiers == 1 || e->sub_graph || !b->program_compile_tier || !b->launch_host) return false;
    if (tiers == 0 && !tier_same_bits(e)) return false; /* the default */
    for (uint32_t i = 0; i < e->plan.n_kernels; i++)    /* only loop kernels are compiled code */
        if (e->plan.kernels[i].kind == FK_LOOP) return true;
    return false;
}

/* Tier 1's compiled part: the LOOP kernels the interpreter cannot run with the optimised
 * build's bits (kx_replays: a float sum the C compiler vectorises in an order of its own),
 * printed as in the whole program and compiled now, in the foreground, as one program of
 * their own (*prog, NULL when there are none). The same text under the same flags gives
 * the same code, so the swap to tier 2 changes no bit of theirs either. */
static kiln_status compile_unreplayed(kiln_executable *e, const bool *need, kn_program **prog,
                                      kn_program_info *info) {
    const kn_backend *b = e->dev->backend;
    uint32_t nk = e->plan.n_kernels;
    cgen_kernel *ci = host_calloc(e->ctx, nk ? nk : 1, sizeof *ci);
    if (!ci) return ctx_oom(e->ctx, "kiln_compile: tier 1's compiled kernels", nk * sizeof *ci);
    strbuf sb;
    sb_init(&sb, e->ctx);
    kiln_status s = cgen_program_kernels(e->g, &e->plan, CGEN_DIALECT_C, need, &sb, ci);
    host_free(e->ctx, ci, (nk ? nk : 1) * sizeof *ci);
    char *src = s ? NULL : sb_take(&sb);
    if (!s && !src) s = ctx_oom(e->ctx, "kiln_compile: tier 1's compiled kernels", 0);
    if (!s) s = b->program_compile(e->dev->state, e->dev->index, src, strlen(src), prog, info);
    if (src) kiln_string_free(e->ctx, src);
    sb_free(&sb);
    return s;
}

bool tier_same_bits(const kiln_executable *e) {
    const kn_backend *b = e->dev->backend;
    return kx_same_bits() && b->tier_same_compiler && b->tier_same_compiler(e->dev->state);
}

kiln_status tier_program_compile(kiln_executable *e, kn_program **prog, kn_program_info *info) {
    const kn_backend *b = e->dev->backend;
    e->tier = 2;
    kiln_status s = b->program_compile_tier(e->dev->state, e->dev->index, e->source,
                                            strlen(e->source), KN_TIER_CACHED_ONLY, prog, info);
    if (s || *prog) return s; /* the optimised build is cached: no first tier */
    *info = (kn_program_info){0};
    e->tier = 1;
    uint32_t nk = e->plan.n_kernels, n_need = 0;
    if (!(e->interp = host_calloc(e->ctx, nk ? nk : 1, sizeof *e->interp)))
        return ctx_oom(e->ctx, "kiln_compile: the first tier's kernels", nk * sizeof *e->interp);
    e->n_interp = nk ? nk : 1;
    bool *need = host_calloc(e->ctx, nk ? nk : 1, sizeof *need);
    if (!need) return ctx_oom(e->ctx, "kiln_compile: the first tier's kernels", nk);
    /* compiling the kernels tier 1 cannot replay keeps the bits promise; where there is
     * none (KILN_COMPILE_TIERS=2 with another compiler, or none at all) tier 1 runs them
     * too, within their rounding, and needs no compiler */
    bool exact = tier_same_bits(e);
    uint32_t loops = 0;
    for (uint32_t i = 0; i < nk && !s; i++) {
        if (e->plan.kernels[i].kind != FK_LOOP) continue;
        loops++;
        s = kx_prepare(e->g, &e->plan, i, &e->interp[i]);
        if (!s && exact && !kx_replays(e->interp[i], NULL)) {
            kx_free(e->interp[i]);
            e->interp[i] = NULL;
            need[i] = true, n_need++;
        }
    }
    if (!s && n_need == loops) { /* nothing to interpret: one tier, the whole build now */
        host_free(e->ctx, need, (nk ? nk : 1) * sizeof *need);
        tier_interp_free(e);
        e->tier = 2;
        return b->program_compile(e->dev->state, e->dev->index, e->source, strlen(e->source), prog,
                                  info);
    }
    if (!s && n_need) s = compile_unreplayed(e, need, prog, info);
    e->tier1_compiled = n_need;
    host_free(e->ctx, need, (nk ? nk : 1) * sizeof *need);
    return s;
}

void tier_interp_free(kiln_executable *e) {
    if (!e->interp) return;
    for (uint32_t i = 0; i < e->n_interp; i++) kx_free(e->interp[i]);
    host_free(e->ctx, e->interp, e->n_interp * sizeof *e->interp);
    e->interp = NULL;
}

/* ------------------------------------------------------- the second tier ---- */

void tier_code_free(kiln_executable *e) {
    exec_tier_code *c = atomic_load_explicit(&e->tier_code, memory_order_acquire);
    if (!c) return;
    e->dev->backend->program_free(e->dev->state, c->prog);
    host_free(e->ctx, c->fns, (c->n_steps + 1) * sizeof *c->fns);
    host_free(e->ctx, c, sizeof *c);
    atomic_store_explicit(&e->tier_code, NULL, memory_order_relaxed);
}

/* The kernel of every loop step of e in prog. */
static kiln_status find_kernels(kiln_executable *e, kn_program *prog, void **fns) {
    const kn_backend *b = e->dev->backend;
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t i = 0; i < e->n_steps && !s; i++) {
        if (e->steps[i].kind != EXEC_STEP_LOOP) continue;
        char name[32];
        snprintf(name, sizeof name, "kiln_k%u", e->steps[i].kernel);
        s = b->kernel_get(e->dev->state, prog, name, &fns[i]);
    }
    return s;
}

/* Builds tier 2 of e and publishes it; on failure e stays on tier 1 (tier_failed), which
 * computes the same values. */
static void build_tier2(kiln_executable *e, const char *source, size_t len, unsigned flags) {
    const kn_backend *b = e->dev->backend;
    kn_program *prog = NULL;
    kn_program_info info;
    exec_tier_code *c = host_calloc(e->ctx, 1, sizeof *c);
    void **fns = host_calloc(e->ctx, e->n_steps + 1, sizeof *fns);
    kiln_status s = c && fns ? KILN_STATUS_OK : KILN_STATUS_HOST_OOM;
    if (!s)
        s = b->program_compile_tier(e->dev->state, e->dev->index, source, len, flags, &prog, &info);
    if (!s) s = find_kernels(e, prog, fns);
    if (s) {
        if (prog) b->program_free(e->dev->state, prog);
        host_free(e->ctx, fns, (e->n_steps + 1) * sizeof *fns);
        host_free(e->ctx, c, sizeof *c);
        e->tier_failed = true;
        return;
    }
    *c = (exec_tier_code){.prog = prog, .fns = fns, .n_steps = e->n_steps};
    atomic_store_explicit(&e->tier_code, c, memory_order_release);
}

/* Whether a before b. */
static bool ts_before(const struct timespec *a, const struct timespec *b) {
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *tier_main(void *arg) {
    tier_service *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while ((!t->head || t->held) && !t->stop) pthread_cond_wait(&t->work, &t->mu);
        if (t->stop) break;
        tier_job *j = t->head;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!atomic_load_explicit(&j->e->tier_ran, memory_order_relaxed) &&
            ts_before(&now, &j->start_by)) { /* its first call first (TIER_FIRST_CALL_MS) */
            pthread_cond_timedwait(&t->work, &t->mu, &j->start_by);
            continue;
        }
        t->head = j->next;
        if (!t->head) t->tail = NULL;
        t->running = j->e;
        pthread_mutex_unlock(&t->mu);
        build_tier2(j->e, j->source, j->len, KN_TIER_BACKGROUND);
        job_free(t->ctx, j);
        pthread_mutex_lock(&t->mu);
        t->running->tier_pending = false;
        t->running = NULL;
        pthread_cond_broadcast(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* Queues j, starting the thread the first time; false when the thread cannot start. */
static bool enqueue(tier_service *t, tier_job *j) {
    pthread_mutex_lock(&t->mu);
    bool ok = !t->stop && (t->started || !pthread_create(&t->thread, NULL, tier_main, t));
    if (ok) {
        t->started = true;
        j->e->tier_pending = true;
        if (t->tail)
            t->tail->next = j;
        else
            t->head = j;
        t->tail = j;
        pthread_cond_signal(&t->work);
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

kiln_status tier_schedule(kiln_executable *e, const char *source) {
    if (e->tier != 1) return KILN_STATUS_OK;
    kiln_context *ctx = e->ctx;
    size_t len = strlen(source);
    tier_job *j = host_calloc(ctx, 1, sizeof *j);
    char *copy = j ? host_alloc(ctx, len + 1) : NULL;
    if (!copy) {
        if (j) host_free(ctx, j, sizeof *j);
        return ctx_oom(ctx, "kiln_compile: queueing the optimised build", len + 1);
    }
    memcpy(copy, source, len + 1);
    *j = (tier_job){.e = e, .source = copy, .len = len};
    clock_gettime(CLOCK_MONOTONIC, &j->start_by);
    j->start_by.tv_nsec += (long)TIER_FIRST_CALL_MS * 1000000L;
    j->start_by.tv_sec += j->start_by.tv_nsec / 1000000000L;
    j->start_by.tv_nsec %= 1000000000L;
    if (ctx->tiers && enqueue(ctx->tiers, j)) return KILN_STATUS_OK;
    job_free(ctx, j);
    /* the thread cannot start: the optimised build now, on the caller's thread */
    build_tier2(e, source, len, 0);
    return KILN_STATUS_OK;
}

void tier_note_run(const kiln_executable *e) {
    tier_service *t = e->ctx->tiers;
    kiln_executable *m = (kiln_executable *)e;
    if (!t || atomic_load_explicit(&m->tier_ran, memory_order_relaxed) ||
        atomic_exchange_explicit(&m->tier_ran, true, memory_order_relaxed))
        return;
    pthread_mutex_lock(&t->mu);
    pthread_cond_broadcast(&t->work);
    pthread_mutex_unlock(&t->mu);
}

void tier_cancel(kiln_executable *e) {
    tier_service *t = e->ctx->tiers;
    if (!t) return;
    tier_job *dropped = NULL;
    pthread_mutex_lock(&t->mu);
    for (tier_job **p = &t->head, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
        if ((*p)->e != e) continue;
        dropped = *p;
        *p = dropped->next;
        if (t->tail == dropped) t->tail = prev;
        e->tier_pending = false;
        pthread_cond_broadcast(&t->done);
        pthread_cond_broadcast(&t->work); /* the thread may be waiting on its first call */
        break;
    }
    while (t->running == e) pthread_cond_wait(&t->done, &t->mu); /* compiling: wait for it */
    pthread_mutex_unlock(&t->mu);
    if (dropped) job_free(e->ctx, dropped);
}

int tier_wait(kiln_executable *e) {
    tier_service *t = e->ctx->tiers;
    if (t) {
        pthread_mutex_lock(&t->mu);
        while (e->tier_pending) pthread_cond_wait(&t->done, &t->mu);
        pthread_mutex_unlock(&t->mu);
    }
    return tier_current(e);
}

void tier_hold(kiln_context *ctx, bool hold) {
    tier_service *t = ctx->tiers;
    pthread_mutex_lock(&t->mu);
    t->held = hold;
    pthread_cond_broadcast(&t->work);
    pthread_mutex_unlock(&t->mu);
}

int tier_current(const kiln_executable *e) {
    if (atomic_load_explicit(&((kiln_executable *)e)->tier_code, memory_order_acquire)) return 2;
    return e->tier == 1 ? 1 : 2;
}

void *exec_tier_kernel(const exec_tier_code *c, uint32_t i) {
    return c->fns[i];
}
