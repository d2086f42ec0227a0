/* pool.c — persistent workers that split a loop [0, n) into contiguous chunks.
 *
 * One call at a time owns the pool (call_mu). The caller publishes a job under mu — fn,
 * arg, n, the chunk count and how many workers take part — then bumps `generation` and
 * wakes sleepers. Each worker remembers the last generation it saw; when it moves, the
 * worker copies the job under mu, and if its index is below the job's worker count it
 * claims chunks from the atomic `next_chunk` until none are left, then decrements
 * `pending`. The caller claims chunks too, then waits for pending == 0. So:
 *   - a job's participants finish before the next job is published, so no worker can
 *     run chunks of a stale job (its copy is taken under mu, against one generation);
 *   - workers that do not take part never touch next_chunk or pending, so a job that
 *     needs 2 threads does not wait for 63 of them to wake;
 *   - once pending reaches 0 no worker touches fn or arg again, so the caller may free them.
 * Waiting spins briefly (a kernel that follows another is common, and a futex wake costs
 * tens of microseconds), yielding now and then, then sleeps on a condition variable. A
 * pool with more threads than cores never spins: there a spinning thread holds the core
 * that the thread everyone waits for needs, and each call costs a scheduler tick.
 *
 * Chunks: k = min(n / grain, 4 * threads); chunk i is [i*q + min(i, r), ...) with
 * q = n / k, r = n % k, so every chunk holds q or q+1 >= grain items and nothing
 * overflows. Four chunks per thread let a thread that woke late take less of the work. */
#include "pool.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

enum { SPIN_ITERS = 20000, YIELD_EVERY = 256, CHUNKS_PER_THREAD = 4 };

typedef struct pool_job {
    pool_fn fn;
    void *arg;
    int64_t n, n_chunks;
    int workers; /* workers taking part, not counting the caller */
} pool_job;

typedef struct pool_worker {
    kn_pool *pool;
    pthread_t thread;
    int index;
} pool_worker;

struct kn_pool {
    kiln_context *ctx;
    int n_threads; /* the workers and the calling thread */
    int n_workers; /* started and not yet joined */
    int spin;      /* SPIN_ITERS, or 0 when the threads outnumber the cores */
    pool_worker *workers;
    pthread_key_t inside; /* set while a thread runs this pool's chunks: nested calls inline */
    pthread_mutex_t call_mu;

    pthread_mutex_t mu; /* guards job, stop, sleepers, caller_sleeping */
    pthread_cond_t wake_cv, done_cv;
    pool_job job;
    bool stop, caller_sleeping;
    int sleepers;
    atomic_uint_fast64_t generation; /* stored under mu, loaded without it while spinning */
    atomic_int_fast64_t next_chunk;
    atomic_int pending;
};

static void run_chunks(kn_pool *p, const pool_job *j) {
    int64_t q = j->n / j->n_chunks, r = j->n % j->n_chunks;
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&p->next_chunk, 1, memory_order_relaxed);
        if (i >= j->n_chunks) return;
        int64_t begin = i * q + (i < r ? i : r);
        j->fn(j->arg, begin, begin + q + (i < r));
    }
}

static void spin_pause(int i) {
    if (i % YIELD_EVERY == YIELD_EVERY - 1)
        sched_yield();
    else
        cpu_relax();
}

/* Waits for a generation other than *seen (or stop); copies the job. False on stop. */
static bool wait_for_job(kn_pool *p, uint64_t *seen, pool_job *job) {
    for (int i = 0; i < p->spin; i++) {
        if (atomic_load_explicit(&p->generation, memory_order_acquire) != *seen) break;
        spin_pause(i);
    }
    pthread_mutex_lock(&p->mu);
    while (!p->stop && atomic_load_explicit(&p->generation, memory_order_relaxed) == *seen) {
        p->sleepers++;
        pthread_cond_wait(&p->wake_cv, &p->mu);
        p->sleepers--;
    }
    bool stop = p->stop;
    *seen = atomic_load_explicit(&p->generation, memory_order_relaxed);
    *job = p->job;
    pthread_mutex_unlock(&p->mu);
    return !stop;
}

static void *worker_main(void *arg) {
    pool_worker *w = arg;
    kn_pool *p = w->pool;
    pthread_setspecific(p->inside, p);
    uint64_t seen = 0;
    pool_job job;
    while (wait_for_job(p, &seen, &job)) {
        if (w->index >= job.workers) continue;
        run_chunks(p, &job);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            if (p->caller_sleeping) pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

static void publish(kn_pool *p, const pool_job *job) {
    pthread_mutex_lock(&p->mu);
    p->job = *job;
    atomic_store_explicit(&p->next_chunk, 0, memory_order_relaxed);
    atomic_store_explicit(&p->pending, job->workers, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    if (p->sleepers) pthread_cond_broadcast(&p->wake_cv);
    pthread_mutex_unlock(&p->mu);
}

static void wait_done(kn_pool *p) {
    for (int i = 0; i < p->spin; i++) {
        if (!atomic_load_explicit(&p->pending, memory_order_acquire)) return;
        spin_pause(i);
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->pending, memory_order_acquire)) {
        p->caller_sleeping = true;
        pthread_cond_wait(&p->done_cv, &p->mu);
        p->caller_sleeping = false;
    }
    pthread_mutex_unlock(&p->mu);
}

void pool_parallel_for(kn_pool *p, int64_t n, int64_t grain, pool_fn fn, void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (p->n_threads == 1 || n / 2 < grain || pthread_getspecific(p->inside)) {
        fn(arg, 0, n);
        return;
    }
    int64_t k = n / grain, most = (int64_t)p->n_threads * CHUNKS_PER_THREAD;
    pool_job job = {fn, arg, n, k < most ? k : most, 0};
    job.workers = (int)(job.n_chunks < p->n_threads ? job.n_chunks : p->n_threads) - 1;
    pthread_mutex_lock(&p->call_mu);
    pthread_setspecific(p->inside, p);
    publish(p, &job);
    run_chunks(p, &job);
    wait_done(p);
    pthread_setspecific(p->inside, NULL);
    pthread_mutex_unlock(&p->call_mu);
}

int pool_num_threads(const kn_pool *p) {
    return p->n_threads;
}

/* Threads this process may run on (its affinity mask, which containers and taskset set). */
int pool_online_cores(void) {
#ifdef CPU_COUNT
    cpu_set_t set;
    if (!sched_getaffinity(0, sizeof set, &set) && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < 4096 ? n : 4096) : 1;
}

/* Workers block all signals, so a process's signal handlers run on its own threads. */
static kiln_status start_workers(kn_pool *p) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = 0;
    for (int i = 0; i < p->n_threads - 1 && !err; i++) {
        p->workers[i] = (pool_worker){.pool = p, .index = i};
        err = pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]);
        if (!err) p->n_workers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!err) return KILN_STATUS_OK;
    return ctx_error(p->ctx, KILN_STATUS_BACKEND,
                     "thread pool: could not start worker thread %d of %d: %s", p->n_workers + 1,
                     p->n_threads - 1, strerror(err));
}

static void init_sync(kn_pool *p) {
    pthread_mutex_init(&p->call_mu, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->next_chunk, 0);
    atomic_init(&p->pending, 0);
}

kiln_status pool_create(kiln_context *ctx, int n_threads, kn_pool **out) {
    *out = NULL;
    if (n_threads < 0)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "thread pool: n_threads is %d; want >= 0 (0: all cores)", n_threads);
    int cores = pool_online_cores();
    if (!n_threads) n_threads = cores;
    kn_pool *p = host_calloc(ctx, 1, sizeof *p);
    if (!p) return ctx_oom(ctx, "thread pool", sizeof *p);
    p->ctx = ctx;
    p->n_threads = n_threads;
    p->spin = n_threads <= cores ? SPIN_ITERS : 0;
    size_t wbytes = sizeof(pool_worker) * (size_t)n_threads;
    if (!(p->workers = host_calloc(ctx, (size_t)n_threads, sizeof(pool_worker)))) {
        host_free(ctx, p, sizeof *p);
        return ctx_oom(ctx, "thread pool workers", wbytes);
    }
    int err = pthread_key_create(&p->inside, NULL);
    if (err) {
        host_free(ctx, p->workers, wbytes);
        host_free(ctx, p, sizeof *p);
        return ctx_error(ctx, KILN_STATUS_BACKEND, "thread pool: pthread_key_create: %s",
                         strerror(err));
    }
    init_sync(p);
    kiln_status s = start_workers(p);
    if (s) {
        pool_destroy(p);
        return s;
    }
    *out = p;
    return KILN_STATUS_OK;
}

void pool_destroy(kn_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_workers; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_cond_destroy(&p->wake_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->call_mu);
    pthread_key_delete(p->inside);
    kiln_context *ctx = p->ctx;
    host_free(ctx, p->workers, sizeof(pool_worker) * (size_t)p->n_threads);
    host_free(ctx, p, sizeof *p);
}
