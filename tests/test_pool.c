/* test_pool.c — the kernel thread pool: every index of [0, n) is visited exactly once, in
 * chunks of at least `grain`, for many (n, grain, threads) combinations, including n = 0,
 * one thread, more threads than items, huge n, nested calls and several callers at once.
 * Labelled tsan: `make test-tsan` runs it under ThreadSanitizer. */
#include "fault.h"

#include "backend/cpu/cpu.h"
#include "backend/device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

typedef struct cover {
    atomic_int *hits;
    int64_t grain, n;
    atomic_int small_chunks; /* chunks below grain when the loop was split */
    atomic_int calls;
} cover;

static void mark(void *arg, int64_t begin, int64_t end) {
    cover *c = arg;
    atomic_fetch_add(&c->calls, 1);
    if (end - begin < c->grain && end - begin != c->n) atomic_fetch_add(&c->small_chunks, 1);
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
}

/* Runs one loop; returns NULL if it covered [0, n) as promised, else what went wrong.
 * Touches no CHECK counters, so threads may call it. */
static const char *run_cover(kn_pool *p, int64_t n, int64_t grain) {
    cover c = {.grain = grain < 1 ? 1 : grain, .n = n};
    c.hits = calloc((size_t)(n ? n : 1), sizeof *c.hits);
    pool_parallel_for(p, n, grain, mark, &c);
    bool once = true;
    for (int64_t i = 0; i < n && once; i++) once = atomic_load(&c.hits[i]) == 1;
    free(c.hits);
    int calls = atomic_load(&c.calls);
    bool inline_expected = n > 0 && (n < 2 * c.grain || pool_num_threads(p) == 1);
    if (!once) return "an index was not visited exactly once";
    if (atomic_load(&c.small_chunks)) return "a chunk was smaller than grain";
    if (n ? calls < 1 : calls != 0) return "fn was called for an empty loop, or never";
    if (inline_expected && calls != 1) return "a loop too small to split was split";
    return NULL;
}

static bool check_cover(kn_pool *p, int64_t n, int64_t grain) {
    const char *why = run_cover(p, n, grain);
    CHECK_MSG(!why, "threads %d n %lld grain %lld: %s", pool_num_threads(p), (long long)n,
              (long long)grain, why);
    return !why;
}

static void test_cover(void) {
    kiln_context *ctx = test_context();
    static const int threads[] = {1, 2, 3, 8, 33};
    static const int64_t ns[] = {0, 1, 2, 3, 7, 64, 1000, 4097, 100003};
    static const int64_t grains[] = {0, 1, 2, 3, 16, 1000, 1 << 20};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        kn_pool *p = NULL;
        CHECK_OK(ctx, pool_create(ctx, threads[t], &p));
        if (!p) continue;
        CHECK(pool_num_threads(p) == threads[t]);
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            for (size_t g = 0; g < sizeof grains / sizeof *grains; g++)
                check_cover(p, ns[i], grains[g]);
        for (int rep = 0; rep < 200; rep++) check_cover(p, 64, 1); /* back-to-back jobs */
        pool_destroy(p);
    }
    kiln_context_destroy(ctx);
}

/* Chunk bounds must not overflow when n is near the int64 range. */
typedef struct spans {
    pthread_mutex_t mu;
    int64_t b[64], e[64];
    int n;
} spans;

static void record(void *arg, int64_t begin, int64_t end) {
    spans *s = arg;
    pthread_mutex_lock(&s->mu);
    if (s->n < 64) s->b[s->n] = begin, s->e[s->n] = end, s->n++;
    pthread_mutex_unlock(&s->mu);
}

static void test_huge_n(void) {
    kiln_context *ctx = test_context();
    kn_pool *p = NULL;
    CHECK_OK(ctx, pool_create(ctx, 4, &p));
    const int64_t n = INT64_MAX - 5, grain = INT64_MAX / 8;
    spans s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    pool_parallel_for(p, n, grain, record, &s);
    int64_t covered = 0;
    for (int i = 0; i < s.n; i++) {
        CHECK(s.e[i] - s.b[i] >= grain);
        covered += s.e[i] - s.b[i];
        int next = 0; /* every chunk but the last is followed by one starting at its end */
        for (int j = 0; j < s.n; j++) next += s.b[j] == s.e[i];
        CHECK(next == 1 || s.e[i] == n);
    }
    CHECK(s.n == 8 && covered == n); /* n / grain = 8 chunks, under the 4-per-thread cap */
    pool_destroy(p);
    kiln_context_destroy(ctx);
}

/* A pool_fn that itself calls pool_parallel_for on the same pool runs it inline. */
typedef struct nested {
    kn_pool *p;
    atomic_int *hits;
} nested;

static void inner(void *arg, int64_t begin, int64_t end) {
    atomic_int *hits = arg;
    for (int64_t i = begin; i < end; i++) atomic_fetch_add(&hits[i], 1);
}

static void outer(void *arg, int64_t begin, int64_t end) {
    nested *x = arg;
    for (int64_t i = begin; i < end; i++) pool_parallel_for(x->p, 100, 1, inner, x->hits + 100 * i);
}

static void test_nested(void) {
    kiln_context *ctx = test_context();
    kn_pool *p = NULL;
    CHECK_OK(ctx, pool_create(ctx, 4, &p));
    atomic_int *hits = calloc(64 * 100, sizeof *hits);
    nested x = {p, hits};
    pool_parallel_for(p, 64, 1, outer, &x);
    int bad = 0;
    for (int i = 0; i < 64 * 100; i++) bad += atomic_load(&hits[i]) != 1;
    CHECK(bad == 0);
    free(hits);
    pool_destroy(p);
    kiln_context_destroy(ctx);
}

/* Several threads share one pool (calls serialize). */
typedef struct caller {
    kn_pool *p;
    int ok;
} caller;

static void *caller_main(void *arg) {
    caller *c = arg;
    c->ok = 1;
    /* run_cover, not check_cover: the CHECK counters are not for threads */
    for (int rep = 0; rep < 100; rep++) c->ok &= run_cover(c->p, 1000 + rep, 1 + rep % 7) == NULL;
    return NULL;
}

static void test_concurrent_callers(void) {
    kiln_context *ctx = test_context();
    cpu_backend_options(ctx->devices[0].state)->num_threads = 3;
    kn_pool *p = NULL, *again = NULL;
    CHECK_OK(ctx, cpu_backend_pool(ctx->devices[0].state, &p));
    CHECK_OK(ctx, cpu_backend_pool(ctx->devices[0].state, &again));
    CHECK(p && p == again && pool_num_threads(p) == 3);
    enum { N = 4 };
    caller c[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        c[i] = (caller){p, 0}, pthread_create(&t[i], NULL, caller_main, &c[i]);
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK(c[i].ok);
    }
    kiln_context_destroy(ctx); /* destroys the pool */
}

/* A context of its own and a pool of 3 threads in it. */
static kiln_status fault_pool_create(fault_run *r) {
    kiln_context *c = NULL;
    kiln_status s = fault_context(r, NULL, &c);
    if (s) return s;
    kn_pool *q = NULL;
    s = fault_note(r, c, pool_create(c, 3, &q));
    CHECK(s == KILN_STATUS_OK ? q != NULL && pool_num_threads(q) == 3 : q == NULL);
    pool_destroy(q);
    kiln_context_destroy(c);
    return s;
}

static void test_defaults_and_errors(void) {
    kiln_context *ctx = test_context();
    kn_pool *p = NULL;
    CHECK_OK(ctx, pool_create(ctx, 0, &p));
    CHECK(p && pool_num_threads(p) >= 1);
    pool_destroy(p);
    CHECK_STATUS(pool_create(ctx, -1, &p), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(p == NULL);
    pool_destroy(NULL);
    kiln_context_destroy(ctx);
    fault_sweep sw = {.name = "pool_create", .run = fault_pool_create, .max_runs = 100};
    CHECK(fault_sweep_run(&sw) > 1);
}

/* Not a test: the cost of one split loop of trivial work, to keep an eye on. */
static void noop(void *arg, int64_t begin, int64_t end) {
    (void)arg, (void)begin, (void)end;
}

static void measure_dispatch(void) {
    kiln_context *ctx = test_context();
    kn_pool *p = NULL;
    CHECK_OK(ctx, pool_create(ctx, 0, &p));
    if (!p) return;
    enum { REPS = 2000 };
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < REPS; i++) pool_parallel_for(p, 1 << 20, 1, noop, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double us =
        ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / REPS / 1e3;
    printf("pool_parallel_for over %d threads: %.2f us per call\n", pool_num_threads(p), us);
    pool_destroy(p);
    kiln_context_destroy(ctx);
}

int main(void) {
    RUN(test_cover);
    RUN(test_huge_n);
    RUN(test_nested);
    RUN(test_concurrent_callers);
    RUN(test_defaults_and_errors);
    measure_dispatch();
    return test_summary("test_pool");
}
