/* test_async.c — asynchronous execution (KILN_ASYNC; docs/devices.md): ordering by events
 * (a run that reads an array waits for the copy that writes it, a copy to the host waits
 * for the run that writes the array, a donating run waits for the copy that reads its
 * argument), many small runs and copies across 4 CPU devices against the same program run
 * synchronously, an OOM in the third of ten enqueued runs (its message at the next
 * synchronising call, dependants naming it, the context usable afterwards), destroying
 * arrays, executables and the context with work in flight, and every host allocation of
 * an asynchronous compile-and-run failed in turn. Also run under ThreadSanitizer. */
#include "fault.h"
#include "rng.h"
#include "test.h"

#include <pthread.h>

static char dir[] = "/tmp/kiln-test-async-XXXXXX";

static kiln_context *make_context(bool async, int n, uint64_t limit,
                                  const kiln_host_allocator *host) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = dir;
    o.cpu_devices = n;
    o.num_threads = n;
    o.memory_limit = limit;
    o.async_dispatch = async;
    o.host_allocator = host;
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return c;
}

/* x * 2 + y */
static int axpy_fn(kiln_graph *g, const kiln_value *a, int n, const void *st, void *user,
                   kiln_value *outs) {
    (void)n, (void)st, (void)user;
    outs[0] = kiln_add(g, kiln_mul(g, a[0], kiln_scalar(g, KILN_DTYPE_F32, 2)), a[1]);
    return 1;
}

/* (x * 2 + 1) * 3, one kernel per op: the intermediate values live in the arena */
static kiln_executable *compile_unfused(kiln_context *c, int64_t n, int device) {
    kiln_graph *g;
    if (kiln_graph_create(c, "unfused", &g)) return NULL;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value t = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 2)),
                            kiln_scalar(g, KILN_DTYPE_F32, 1));
    kiln_value r = kiln_mul(g, t, kiln_scalar(g, KILN_DTYPE_F32, 3));
    kiln_executable *e = NULL;
    kiln_compile_options co = {.device = device, .disable_fusion = true};
    if (!kiln_graph_finish(g, 1, &r)) kiln_compile(g, &co, &e);
    kiln_graph_destroy(g);
    return e;
}

/* sum(x) for f32[n], or x * 2 + 1 for a scalar (n < 0) */
static kiln_executable *compile_small(kiln_context *c, int64_t n, int device) {
    kiln_graph *g;
    if (kiln_graph_create(c, n < 0 ? "scale" : "sum", &g)) return NULL;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, n < 0 ? 0 : 1, &n);
    kiln_value r = n < 0 ? kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 2)),
                                    kiln_scalar(g, KILN_DTYPE_F32, 1))
                         : kiln_reduce_sum(g, x, 0, NULL, false);
    kiln_executable *e = NULL;
    kiln_compile_options co = {.device = device};
    if (!kiln_graph_finish(g, 1, &r)) kiln_compile(g, &co, &e);
    kiln_graph_destroy(g);
    return e;
}

static bool all_equal(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* ------------------------------------------------------------- ordering ---- */

static void test_ordering(void) {
    kiln_context *c = make_context(true, 2, 0, NULL);
    if (!c) return;
    const int64_t n = 1 << 20; /* 4 MiB: copies that take long enough to be overtaken */
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *got = malloc(n * sizeof *got),
          *want = malloc(n * sizeof *want);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 1000), y[i] = (float)(i % 7);
    kiln_jit *j;
    kiln_jit_options jo = {.name = "axpy", .fn = axpy_fn};
    CHECK_OK(c, kiln_jit_create(c, &jo, &j));

    /* a run that reads an array waits for the copy that writes it */
    kiln_array *a[2], *r = NULL, *r0 = NULL;
    CHECK_OK(c, kiln_array_create_async(c, 1, KILN_DTYPE_F32, 1, &n, x, &a[0]));
    CHECK_OK(c, kiln_array_create_async(c, 1, KILN_DTYPE_F32, 1, &n, y, &a[1]));
    CHECK_OK(c, kiln_jit_call(j, 2, a, NULL, 0, 1, &r));
    /* a copy of the run's output to another device waits for the run, and the host
     * read waits for that copy */
    CHECK_OK(c, kiln_array_copy_to_device(r, 0, &r0));
    CHECK_OK(c, kiln_array_copy_to_host(r0, got, n * sizeof *got));
    for (int64_t i = 0; i < n; i++) want[i] = x[i] * 2 + y[i];
    CHECK(all_equal(got, want, n));
    /* a copy to the host waits for the run that writes the array */
    kiln_array *r2 = NULL, *b[2] = {r, a[1]};
    CHECK_OK(c, kiln_jit_call(j, 2, b, NULL, 0, 1, &r2));
    CHECK_OK(c, kiln_array_copy_to_host(r2, got, n * sizeof *got));
    for (int64_t i = 0; i < n; i++) want[i] = (x[i] * 2 + y[i]) * 2 + y[i];
    CHECK(all_equal(got, want, n));

    /* a run that donates an array waits for the copy that reads it (the copy sees the old
     * contents), then writes its result over the same bytes */
    kiln_jit *jd;
    int donate0[] = {0};
    kiln_jit_options jdo = {.name = "axpy_donate",
                            .fn = axpy_fn,
                            .compile = {.n_donate = 1, .donate_argnums = donate0}};
    CHECK_OK(c, kiln_jit_create(c, &jdo, &jd));
    kiln_array *src, *copy = NULL, *r3 = NULL;
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &n, x, &src));
    CHECK_OK(c, kiln_array_copy_to_device(src, 0, &copy));
    kiln_array *d[2] = {src, a[1]};
    CHECK_OK(c, kiln_jit_call(jd, 2, d, NULL, 0, 1, &r3));
    CHECK(kiln_array_is_consumed(src));
    CHECK_OK(c, kiln_array_copy_to_host(copy, got, n * sizeof *got));
    CHECK(all_equal(got, x, n));
    CHECK_OK(c, kiln_array_copy_to_host(r3, got, n * sizeof *got));
    for (int64_t i = 0; i < n; i++) want[i] = x[i] * 2 + y[i];
    CHECK(all_equal(got, want, n));
    CHECK_STATUS(kiln_array_block_until_ready(src), KILN_STATUS_CONSUMED);

    /* the reference interpreter reads its arguments on the caller's thread: it waits */
    kiln_graph *g;
    CHECK_OK(c, kiln_graph_create(c, "twice", &g));
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, &n);
    v = kiln_add(g, v, v);
    CHECK_OK(c, kiln_graph_finish(g, 1, &v));
    kiln_array *pending = NULL, *twice = NULL, *xy[2] = {a[0], a[1]};
    CHECK_OK(c, kiln_jit_call(j, 2, xy, NULL, 0, 1, &pending));
    kiln_array *pending0 = NULL;
    CHECK_OK(c, kiln_array_copy_to_device(pending, 0, &pending0));
    CHECK_OK(c, kiln_interpret(g, 1, &pending0, 1, &twice));
    CHECK_OK(c, kiln_array_copy_to_host(twice, got, n * sizeof *got));
    for (int64_t i = 0; i < n; i++) want[i] = (x[i] * 2 + y[i]) * 2;
    CHECK(all_equal(got, want, n));
    kiln_graph_destroy(g);
    kiln_array_destroy(pending), kiln_array_destroy(pending0), kiln_array_destroy(twice);

    kiln_array *all[] = {a[0], a[1], r, r0, r2, src, copy, r3};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_array_destroy(all[i]);
    kiln_jit_destroy(j);
    kiln_jit_destroy(jd);
    for (int dev = 0; dev < 2; dev++) {
        kiln_memory_stats st;
        CHECK_OK(c, kiln_device_synchronize(c, dev));
        CHECK_OK(c, kiln_device_get_memory_stats(c, dev, &st));
        CHECK_MSG(st.bytes_in_use == 0, "device %d: %llu bytes in use after synchronize", dev,
                  (unsigned long long)st.bytes_in_use);
    }
    kiln_context_destroy(c);
    free(x), free(y), free(got), free(want);
}

/* ----------------------------------------- many runs across 4 devices ---- */

enum { SLOTS = 8, STEPS = 300, LEN = 64 };

/* A random program of runs and copies over SLOTS arrays spread on 4 devices, the same in
 * both modes (the generator is seeded alike); returns the slots' final contents. */
static void random_program(bool async, uint64_t seed, float *out) {
    kiln_context *c = make_context(async, 4, 0, NULL);
    if (!c) return;
    kiln_jit *j;
    kiln_jit_options jo = {.name = "axpy", .fn = axpy_fn};
    CHECK_OK(c, kiln_jit_create(c, &jo, &j));
    uint64_t rs = seed;
    kiln_array *slot[SLOTS];
    int64_t n = LEN;
    float init[LEN];
    for (int s = 0; s < SLOTS; s++) {
        for (int i = 0; i < LEN; i++) init[i] = (float)((s * 31 + i) % 17) / 8;
        CHECK_OK(c, kiln_array_create_on(c, s % 4, KILN_DTYPE_F32, 1, &n, init, &slot[s]));
    }
    for (int step = 0; step < STEPS; step++) {
        int a = (int)(test_rng_next(&rs) % SLOTS), b = (int)(test_rng_next(&rs) % SLOTS);
        int to = (int)(test_rng_next(&rs) % 4);
        kiln_array *made = NULL;
        if (test_rng_next(&rs) % 2 || kiln_array_device(slot[a]) != kiln_array_device(slot[b])) {
            CHECK_OK(c, kiln_array_copy_to_device(slot[a], to, &made)); /* b := a on `to` */
        } else {
            kiln_array *args[2] = {slot[a], slot[b]}; /* b := a * 2 + b, scaled down */
            kiln_array *t = NULL;
            CHECK_OK(c, kiln_jit_call(j, 2, args, NULL, 0, 1, &t));
            kiln_array *half[2] = {t, t};
            CHECK_OK(c, kiln_jit_call(j, 2, half, NULL, 0, 1, &made)); /* 3t: stays exact-ish */
            kiln_array_destroy(t);
        }
        kiln_array_destroy(slot[b]); /* maybe still read by work in flight */
        slot[b] = made;
        if (!made) break;
    }
    for (int s = 0; s < SLOTS; s++) {
        if (slot[s]) CHECK_OK(c, kiln_array_copy_to_host(slot[s], out + s * LEN, LEN * 4));
        kiln_array_destroy(slot[s]);
    }
    kiln_jit_destroy(j);
    kiln_context_destroy(c);
}

static void test_many_across_devices(void) {
    static float sync_out[SLOTS * LEN], async_out[SLOTS * LEN];
    for (uint64_t seed = 1; seed <= 3; seed++) {
        memset(sync_out, 0, sizeof sync_out);
        memset(async_out, 0xff, sizeof async_out);
        random_program(false, seed, sync_out);
        random_program(true, seed, async_out);
        CHECK_MSG(!memcmp(sync_out, async_out, sizeof sync_out),
                  "seed %llu: asynchronous results differ from synchronous ones",
                  (unsigned long long)seed);
    }
}

/* --------------------------------------------------------------- errors ---- */

/* Errors are delivered on the thread that synchronises, whichever thread enqueued. */
typedef struct waiter {
    kiln_context *c;
    kiln_array *a;
    kiln_status s;
    char msg[512];
} waiter;

static void *wait_in_thread(void *arg) {
    waiter *w = arg;
    w->s = kiln_array_block_until_ready(w->a);
    snprintf(w->msg, sizeof w->msg, "%s", w->s ? kiln_last_error(w->c) : "");
    return NULL;
}

/* A training loop's pattern under a tight limit: make a batch, run on it, read the result,
 * destroy both, make the next. Once the read has returned, the run's arrays are freed: the
 * next batch's bytes are there (the queue's thread once completed the run before it let go
 * of them, and about a third of such allocations failed: an outside report); so are the
 * statistics, and a waited-for copy likewise. */
static void test_freed_when_waited(void) {
    const int64_t n = (3 << 20) / 4; /* 3 MiB under a 4 MiB limit: one batch at a time */
    kiln_context *c = make_context(true, 1, 4u << 20, NULL);
    if (!c) return;
    kiln_executable *sum = compile_small(c, n, 0);
    CHECK(sum);
    float *h = calloc((size_t)n, sizeof *h);
    for (int64_t i = 0; sum && h && i < n; i++) h[i] = 1;
    int failed = 0, counted = 0;
    for (int i = 0; sum && h && i < 200; i++) {
        kiln_array *x = NULL, *y = NULL;
        float got = 0;
        if (kiln_array_create_on(c, 0, KILN_DTYPE_F32, 1, &n, h, &x)) {
            failed++;
            kiln_device_synchronize(c, 0);
            continue;
        }
        CHECK_OK(c, kiln_executable_run(sum, 1, &x, 1, &y));
        CHECK_OK(c, kiln_array_copy_to_host(y, &got, sizeof got));
        CHECK(got == (float)n);
        kiln_array_destroy(x);
        kiln_array_destroy(y);
        /* an asynchronous copy waited for, destroyed: its bytes are free at once too */
        CHECK_OK(c, kiln_array_create_async(c, 0, KILN_DTYPE_F32, 1, &n, h, &x));
        CHECK_OK(c, kiln_array_block_until_ready(x));
        kiln_array_destroy(x);
        kiln_memory_stats ms;
        CHECK_OK(c, kiln_device_get_memory_stats(c, 0, &ms));
        counted += ms.bytes_in_use != 0;
    }
    CHECK_MSG(!failed, "%d of 200 batches could not be made after the last run's were freed",
              failed);
    CHECK_MSG(!counted, "%d of 200 times the destroyed arrays were still in use", counted);
    free(h);
    kiln_executable_destroy(sum);
    kiln_context_destroy(c);
}

/* Ten runs enqueued on cpu:1; the third's arena does not fit under the memory limit. */
static void test_oom_in_third_run(void) {
    const int64_t big = 1 << 20; /* 4 MiB: x + output fit under 10 MiB, the arena does not */
    kiln_context *c = make_context(true, 2, 10u << 20, NULL);
    if (!c) return;
    kiln_executable *unfused = compile_unfused(c, big, 1), *sum = compile_small(c, big, 1),
                    *scale = compile_small(c, -1, 1);
    CHECK(unfused && sum && scale);
    if (!unfused || !sum || !scale) return;
    kiln_memory_analysis ma;
    CHECK_OK(c, kiln_executable_get_memory_analysis(unfused, &ma));
    CHECK(ma.temp_bytes >= (uint64_t)big * 4);
    float one = 1, got = 0;
    kiln_array *s0, *x, *r[10] = {0};
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 0, NULL, &one, &s0));
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &big, NULL, &x));
    CHECK_OK(c, kiln_executable_run(scale, 1, &s0, 1, &r[0]));   /* 3 */
    CHECK_OK(c, kiln_executable_run(scale, 1, &r[0], 1, &r[1])); /* 7 */
    CHECK_OK(c, kiln_executable_run(unfused, 1, &x, 1, &r[2]));  /* its arena: OOM */
    CHECK_OK(c, kiln_executable_run(sum, 1, &r[2], 1, &r[3]));   /* depends on the third */
    for (int i = 4; i < 10; i++) CHECK_OK(c, kiln_executable_run(scale, 1, &r[i - 1], 1, &r[i]));
    kiln_array *ok = NULL; /* independent of the failure */
    CHECK_OK(c, kiln_executable_run(scale, 1, &r[1], 1, &ok));

    CHECK_STATUS(kiln_array_block_until_ready(r[2]), KILN_STATUS_DEVICE_OOM);
    char first[8192];
    kiln_last_error_copy(c, first, sizeof first);
    CHECK_CONTAINS(first, "kiln_array_block_until_ready: cpu:1: out of memory");
    CHECK_CONTAINS(first, "arena unfused");
    CHECK_STATUS(kiln_array_copy_to_host(r[9], &got, sizeof got), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(c), "the run of 'scale' on cpu:1 did not happen: its "
                                       "argument 0 comes from work that failed; the first "
                                       "error: cpu:1: out of memory");
    waiter w = {.c = c, .a = r[5]};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, wait_in_thread, &w) == 0);
    pthread_join(th, NULL);
    CHECK(w.s == KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(w.msg, "the first error: cpu:1: out of memory");
    CHECK_STATUS(kiln_array_block_until_ready(r[3]), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(c), "the run of 'sum' on cpu:1");
    CHECK_OK(c, kiln_array_copy_to_host(ok, &got, sizeof got));
    CHECK(got == 15);
    /* the device reports the first error once, then is clean */
    CHECK_STATUS(kiln_device_synchronize(c, 1), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(c), "kiln_device_synchronize(cpu:1): cpu:1: out of memory");
    CHECK_OK(c, kiln_device_synchronize(c, 1));
    CHECK_OK(c, kiln_device_synchronize(c, 0));

    /* the context is usable: the failed arrays go, and a run on the same device works */
    for (int i = 2; i < 10; i++) kiln_array_destroy(r[i]), r[i] = NULL;
    kiln_array *again = NULL;
    CHECK_OK(c, kiln_executable_run(sum, 1, &x, 1, &again));
    got = -1;
    CHECK_OK(c, kiln_array_copy_to_host(again, &got, sizeof got));
    CHECK(got == 0);
    CHECK_OK(c, kiln_device_synchronize(c, 1));
    kiln_array *rest[] = {s0, x, r[0], r[1], ok, again};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) kiln_array_destroy(rest[i]);
    kiln_executable_destroy(unfused);
    kiln_executable_destroy(sum);
    kiln_executable_destroy(scale);
    kiln_context_destroy(c);
}

/* More calls than a queue holds (256): the caller waits for room, nothing is lost. */
static int halve_fn(kiln_graph *g, const kiln_value *a, int n, const void *st, void *user,
                    kiln_value *outs) {
    (void)n, (void)st, (void)user;
    outs[0] = kiln_add(g, kiln_mul(g, a[0], kiln_scalar(g, KILN_DTYPE_F32, 0.5)),
                       kiln_scalar(g, KILN_DTYPE_F32, 1));
    return 1;
}

static void test_long_chain(void) {
    kiln_context *c = make_context(true, 1, 0, NULL);
    if (!c) return;
    kiln_jit *j;
    kiln_jit_options jo = {.name = "halve", .fn = halve_fn};
    CHECK_OK(c, kiln_jit_create(c, &jo, &j));
    float zero = 0, got = -1;
    kiln_array *x;
    CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 0, NULL, &zero, &x));
    for (int i = 0; i < 1000 && x; i++) { /* x -> x/2 + 1: 1, 1.5, 1.75, ... 2 */
        kiln_array *next = NULL;
        CHECK_OK(c, kiln_jit_call(j, 1, &x, NULL, 0, 1, &next));
        kiln_array_destroy(x);
        x = next;
    }
    CHECK_OK(c, kiln_array_copy_to_host(x, &got, sizeof got));
    CHECK(got == 2);
    kiln_array_destroy(x);
    kiln_jit_destroy(j);
    kiln_context_destroy(c);
}

/* ------------------------------------------------ destroy in flight ---- */

static void test_destroy_in_flight(void) {
    kiln_context *c = make_context(true, 2, 0, NULL);
    if (!c) return;
    const int64_t n = 1 << 16;
    kiln_executable *e = compile_unfused(c, n, 0);
    CHECK(e != NULL);
    if (!e) return;
    float *host = calloc(n, sizeof *host);
    kiln_array *x;
    CHECK_OK(c, kiln_array_create_async(c, 0, KILN_DTYPE_F32, 1, &n, host, &x));
    for (int i = 0; i < 20; i++) {
        kiln_array *r = NULL, *moved = NULL;
        CHECK_OK(c, kiln_executable_run(e, 1, &x, 1, &r));
        CHECK_OK(c, kiln_array_copy_to_device(r, 1, &moved));
        kiln_array_destroy(r); /* the copy still reads it */
        kiln_array_destroy(moved);
    }
    kiln_array_destroy(x);
    kiln_executable_destroy(e); /* runs still enqueued hold it */
    CHECK_OK(c, kiln_device_synchronize(c, 0));
    CHECK_OK(c, kiln_device_synchronize(c, 1));
    for (int d = 0; d < 2; d++) {
        kiln_memory_stats st;
        CHECK_OK(c, kiln_device_get_memory_stats(c, d, &st));
        CHECK_MSG(st.bytes_in_use == 0, "device %d: %llu bytes in use", d,
                  (unsigned long long)st.bytes_in_use);
    }
    /* and the context itself, with runs and copies still in its queues */
    e = compile_unfused(c, n, 1);
    CHECK_OK(c, kiln_array_create_async(c, 1, KILN_DTYPE_F32, 1, &n, host, &x));
    for (int i = 0; i < 20 && e; i++) {
        kiln_array *r = NULL, *moved = NULL;
        CHECK_OK(c, kiln_executable_run(e, 1, &x, 1, &r));
        CHECK_OK(c, kiln_array_copy_to_device(r, 0, &moved));
        kiln_array_destroy(r);
        kiln_array_destroy(moved);
    }
    kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_context_destroy(c);
    free(host);
}

/* -------------------------------------------------------------- prefetch ---- */

typedef struct feed {
    int64_t batches, fail_at; /* fill reports the end at `batches`, failure at fail_at */
    int64_t filled;
} feed;

/* Batch k: x[i] = k * 1000 + i, y[i] = k. */
static int feed_fill(void *user, int64_t step, void *const *host, const size_t *sizes) {
    feed *f = user;
    if (step == f->fail_at) return -1;
    if (step >= f->batches) return 1;
    float *x = host[0], *y = host[1];
    for (size_t i = 0; i < sizes[0] / sizeof *x; i++) x[i] = (float)(step * 1000 + (int64_t)i);
    for (size_t i = 0; i < sizes[1] / sizeof *y; i++) y[i] = (float)step;
    f->filled++;
    return 0;
}

static void run_pipeline(bool async, int depth) {
    kiln_context *c = make_context(async, 2, 0, NULL);
    if (!c) return;
    enum { N = 512 };
    kiln_arg_spec specs[2] = {{KILN_DTYPE_F32, 1, {N}}, {KILN_DTYPE_F32, 1, {N}}};
    feed f = {.batches = 7, .fail_at = -1};
    kiln_prefetch_options po = {
        .device = 1, .n_arrays = 2, .specs = specs, .fill = feed_fill, .user = &f, .depth = depth};
    kiln_prefetch *p = NULL;
    CHECK_OK(c, kiln_prefetch_create(c, &po, &p));
    kiln_jit *j;
    kiln_jit_options jo = {.name = "axpy", .fn = axpy_fn};
    CHECK_OK(c, kiln_jit_create(c, &jo, &j));
    kiln_array *out[7] = {0};
    int64_t steps = 0;
    for (;;) {
        kiln_array *b[2];
        bool end = false;
        CHECK_OK(c, kiln_prefetch_next(p, b, &end));
        if (end) break;
        CHECK(kiln_array_device(b[0]) == 1 && kiln_array_device(b[1]) == 1);
        CHECK_OK(c, kiln_jit_call(j, 2, b, NULL, 0, 1, &out[steps]));
        kiln_array_destroy(b[0]);
        kiln_array_destroy(b[1]);
        if (++steps > 7) break;
    }
    CHECK(steps == 7);
    float got[N];
    for (int64_t k = 0; k < steps && k < 7; k++) {
        CHECK_OK(c, kiln_array_copy_to_host(out[k], got, sizeof got));
        bool ok = true;
        for (int i = 0; i < N; i++) ok &= got[i] == (float)(k * 1000 + i) * 2 + (float)k;
        CHECK_MSG(ok, "depth %d: batch %lld arrived wrong", depth, (long long)k);
        kiln_array_destroy(out[k]);
    }
    kiln_prefetch_destroy(p);

    /* a fill that fails: the call that stages it says which batch */
    f = (feed){.batches = 7, .fail_at = 3};
    CHECK_OK(c, kiln_prefetch_create(c, &po, &p));
    kiln_status s = KILN_STATUS_OK;
    for (int k = 0; k < 7 && !s; k++) {
        kiln_array *b[2];
        bool end = false;
        s = kiln_prefetch_next(p, b, &end);
        if (!s) kiln_array_destroy(b[0]), kiln_array_destroy(b[1]);
    }
    CHECK(s == KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(c), "the fill function failed for batch 3");
    kiln_prefetch_destroy(p);
    kiln_jit_destroy(j);
    kiln_context_destroy(c);
}

static void test_prefetch(void) {
    run_pipeline(true, 0);
    run_pipeline(true, 3);
    run_pipeline(false, 2);
}

/* ------------------------------------------------------ fault injection ---- */

/* The sweep's counting allocator is not thread-safe and queue threads free (and, failing,
 * allocate) too: every call goes through one lock. */
typedef struct locked_alloc {
    pthread_mutex_t mu;
    test_alloc *inner;
} locked_alloc;

static void *l_alloc(void *u, size_t n) {
    locked_alloc *l = u;
    pthread_mutex_lock(&l->mu);
    void *p = test_alloc_fn(l->inner, n);
    pthread_mutex_unlock(&l->mu);
    return p;
}
static void *l_realloc(void *u, void *p, size_t o, size_t n) {
    locked_alloc *l = u;
    pthread_mutex_lock(&l->mu);
    void *q = test_realloc_fn(l->inner, p, o, n);
    pthread_mutex_unlock(&l->mu);
    return q;
}
static void l_free(void *u, void *p, size_t n) {
    locked_alloc *l = u;
    pthread_mutex_lock(&l->mu);
    test_free_fn(l->inner, p, n);
    pthread_mutex_unlock(&l->mu);
}

/* Compile for cpu:1, feed it asynchronously, run, copy the result to cpu:0 and read it. */
static kiln_status async_scenario(fault_run *fr) {
    locked_alloc l = {PTHREAD_MUTEX_INITIALIZER, fr->alloc};
    kiln_host_allocator h = {l_alloc, l_realloc, l_free, &l};
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = dir;
    o.cpu_devices = 2;
    o.num_threads = 2;
    o.async_dispatch = true;
    o.host_allocator = &h;
    o.compile_tiers = 1; /* fault.h: no background build */
    kiln_context *c = NULL;
    kiln_status s = kiln_context_create(&o, &c, fr->message, sizeof fr->message);
    if (s) return s;
    int64_t n = 4;
    float x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8}, got[4] = {0};
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    kiln_array *a = NULL, *b = NULL, *r = NULL, *r0 = NULL;
    s = kiln_graph_create(c, "axpy", &g);
    if (!s) {
        kiln_value v[2] = {kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n),
                           kiln_parameter(g, "y", KILN_DTYPE_F32, 1, &n)},
                   out;
        axpy_fn(g, v, 2, NULL, NULL, &out);
        s = kiln_graph_finish(g, 1, &out);
    }
    kiln_compile_options co = {.device = 1};
    if (!s) s = kiln_compile(g, &co, &e);
    if (!s) s = kiln_array_create_async(c, 1, KILN_DTYPE_F32, 1, &n, x, &a);
    if (!s) s = kiln_array_create_async(c, 1, KILN_DTYPE_F32, 1, &n, y, &b);
    kiln_array *args[2] = {a, b};
    if (!s) s = kiln_executable_run(e, 2, args, 1, &r);
    if (!s) s = kiln_array_copy_to_device(r, 0, &r0);
    if (!s) s = kiln_array_copy_to_host(r0, got, sizeof got);
    if (!s) s = kiln_device_synchronize(c, 1);
    fault_note(fr, c, s);
    for (int i = 0; !s && i < 4; i++)
        CHECK_MSG(got[i] == x[i] * 2 + y[i], "allocation %ld: wrong result", fr->n);
    kiln_array_destroy(a);
    kiln_array_destroy(b);
    kiln_array_destroy(r);
    kiln_array_destroy(r0);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(c);
    pthread_mutex_destroy(&l.mu);
    return s;
}

static void test_fault_injection(void) {
    fault_sweep sw = {.name = "async compile-and-run", .run = async_scenario, .max_runs = 3000};
    long n = fault_sweep_run(&sw);
    CHECK(n > 0);
    printf("fault injection over an asynchronous compile-and-run: %ld host allocations failed "
           "in turn\n",
           n);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    RUN(test_ordering);
    RUN(test_many_across_devices);
    RUN(test_oom_in_third_run);
    RUN(test_freed_when_waited);
    RUN(test_long_chain);
    RUN(test_destroy_in_flight);
    RUN(test_prefetch);
    RUN(test_fault_injection);
    test_remove_dir(dir);
    return test_summary("test_async");
}
