/* pool.h — a small persistent thread pool that kernels split their loops over.
 *
 * The CPU backend's state owns one pool per context (cpu_backend.c), made at the first
 * launch with KILN_NUM_THREADS threads counting the caller. Tiny loops never reach the workers:
 * they run inline. */
#ifndef KILN_CPU_POOL_H
#define KILN_CPU_POOL_H

#include "base/base.h"

typedef struct kn_pool kn_pool;

/* Starts n_threads - 1 workers (n_threads counts the calling thread; 0: one per core this
 * process may run on). */
kiln_status pool_create(kiln_context *ctx, int n_threads, kn_pool **out);
/* Stops and joins the workers. No call may be in flight. NULL is a no-op. */
void pool_destroy(kn_pool *p);

typedef void (*pool_fn)(void *arg, int64_t begin, int64_t end);

/* Runs fn over [0, n) split into contiguous chunks of at least `grain` items across the
 * workers and the calling thread; returns when all are done. Runs inline when n < 2*grain,
 * when the pool has one thread, or when called from inside a pool_fn of the same pool
 * (so nesting cannot deadlock). Safe to call from several threads at once (calls
 * serialize). grain <= 0 means 1. */
void pool_parallel_for(kn_pool *p, int64_t n, int64_t grain, pool_fn fn, void *arg);
int pool_num_threads(const kn_pool *p);
/* The cores this process may run on (its affinity mask): what n_threads 0 means. */
int pool_online_cores(void);

#endif
