/* test_errors.c — kiln_last_error is per thread: threads failing different calls on one
 * context at once each read back their own message; a message survives other threads'
 * failures; reporting an error never allocates for the creating thread, a thread whose
 * slot cannot be allocated falls back to the shared slot, and every slot is freed with the
 * context. Runs under ThreadSanitizer too (label tsan). */
#include "fault.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>

#define N_THREADS 6
#define N_ROUNDS  300

static kiln_context *shared_ctx;
static pthread_barrier_t barrier;

typedef struct worker {
    int id;
    int wrong;      /* rounds whose message was not this thread's own */
    int wrong_copy; /* the same through kiln_last_error_copy */
    int wrong_code; /* rounds whose call did not fail as expected */
    char last[256]; /* the last message read, for the report */
} worker;

/* Fails one of three calls with a value unique to (thread, round) and writes the text
 * the message must contain into want. */
static kiln_status fail_once(kiln_context *ctx, int id, int round, char *want, size_t n) {
    int tag = 100000 + id * 1000 + round;
    kiln_array *a = NULL;
    void *p = NULL;
    int64_t dim = 2;
    switch (id % 3) {
    case 0:
        snprintf(want, n, "dtype %d is not a kiln_dtype", tag);
        return kiln_array_create(ctx, (kiln_dtype)tag, 1, &dim, NULL, &a);
    case 1:
        snprintf(want, n, "rank %d is outside", tag);
        return kiln_array_create(ctx, KILN_DTYPE_F32, tag, &dim, NULL, &a);
    default:
        snprintf(want, n, "device %d does not exist", tag);
        return kiln_device_alloc(ctx, tag, 64, "t", &p);
    }
}

static void *work(void *arg) {
    worker *w = arg;
    char want[128], copy[256];
    for (int r = 0; r < N_ROUNDS; r++) {
        pthread_barrier_wait(&barrier);
        if (fail_once(shared_ctx, w->id, r, want, sizeof want) == KILN_STATUS_OK) w->wrong_code++;
        /* every thread has failed its call before any reads its message */
        pthread_barrier_wait(&barrier);
        const char *m = kiln_last_error(shared_ctx);
        if (!strstr(m, want)) w->wrong++, snprintf(w->last, sizeof w->last, "%s", m);
        kiln_last_error_copy(shared_ctx, copy, sizeof copy);
        if (!strstr(copy, want)) w->wrong_copy++;
    }
    return NULL;
}

static void test_threads_read_their_own_messages(void) {
    shared_ctx = test_context();
    pthread_barrier_init(&barrier, NULL, N_THREADS);
    pthread_t th[N_THREADS];
    worker w[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N_THREADS; i++) {
        CHECK_MSG(w[i].wrong == 0, "thread %d read another's message %d times (\"%s\")", i,
                  w[i].wrong, w[i].last);
        CHECK_MSG(w[i].wrong_copy == 0, "thread %d: kiln_last_error_copy wrong %d times", i,
                  w[i].wrong_copy);
        CHECK(w[i].wrong_code == 0);
    }
    /* The main thread failed nothing: its message is still empty. */
    CHECK(strcmp(kiln_last_error(shared_ctx), "") == 0);
    pthread_barrier_destroy(&barrier);
    kiln_context_destroy(shared_ctx);
}

typedef struct other {
    kiln_context *ctx;
    char msg[256];
    pthread_barrier_t *hold; /* NULL: return at once */
} other;

static void *fail_in_thread(void *arg) {
    other *o = arg;
    void *p;
    kiln_device_alloc(o->ctx, 77, 64, "t", &p);
    snprintf(o->msg, sizeof o->msg, "%s", kiln_last_error(o->ctx));
    if (o->hold) pthread_barrier_wait(o->hold), pthread_barrier_wait(o->hold);
    return NULL;
}

static void *read_in_thread(void *arg) {
    other *o = arg;
    snprintf(o->msg, sizeof o->msg, "%s", kiln_last_error(o->ctx));
    return NULL;
}

static void test_message_survives_other_threads(void) {
    kiln_context *ctx = test_context();
    void *p;
    CHECK_STATUS(kiln_device_alloc(ctx, 55, 64, "t", &p), KILN_STATUS_INVALID_ARGUMENT);
    const char *mine = kiln_last_error(ctx);
    CHECK_CONTAINS(mine, "device 55");
    pthread_barrier_t hold;
    pthread_barrier_init(&hold, NULL, 2);
    other o = {ctx, "", &hold}, fresh = {ctx, "", NULL};
    pthread_t t, t2;
    CHECK(pthread_create(&t, NULL, fail_in_thread, &o) == 0);
    pthread_barrier_wait(&hold); /* o's thread has failed and is still alive */
    CHECK_CONTAINS(o.msg, "device 77");
    /* The pointer read before is still this thread's message, unchanged. */
    CHECK(kiln_last_error(ctx) == mine);
    CHECK_CONTAINS(mine, "device 55");
    /* A thread that failed nothing reads "" (it cannot reuse a live thread's id). */
    CHECK(pthread_create(&t2, NULL, read_in_thread, &fresh) == 0);
    pthread_join(t2, NULL);
    CHECK(strcmp(fresh.msg, "") == 0);
    pthread_barrier_wait(&hold);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&hold);
    kiln_context_destroy(ctx);
}

/* The creating thread never allocates to report an error; another thread whose slot cannot
 * be allocated uses the fallback slot; destroy frees every slot. */
static void test_no_allocation_when_reporting(void) {
    test_alloc ta = {0};
    kiln_host_allocator h = test_allocator(&ta);
    kiln_context_options opts = {
        .host_allocator = &h, .ignore_environment = true, .compile_tiers = 1};
    kiln_context *ctx = NULL;
    CHECK_OK(ctx, kiln_context_create(&opts, &ctx, NULL, 0));
    if (!ctx) return;
    void *p;
    long before = ta.count;
    ta.fail_at = ta.count + 1; /* fail any allocation made from here on */
    CHECK_STATUS(kiln_device_alloc(ctx, 9, 64, "t", &p), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(ta.count == before);
    CHECK_CONTAINS(kiln_last_error(ctx), "device 9");

    /* A second thread: its slot allocation fails, so its message goes to the fallback. */
    other o = {ctx, "", NULL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fail_in_thread, &o) == 0);
    pthread_join(t, NULL);
    CHECK(ta.count == before + 1); /* the one failed attempt at a slot */
    CHECK_CONTAINS(o.msg, "device 77");
    CHECK_CONTAINS(kiln_last_error(ctx), "device 9"); /* the creator's slot is its own */

    /* A third thread gets a slot of its own; all are freed with the context. */
    ta.fail_at = 0;
    CHECK(pthread_create(&t, NULL, fail_in_thread, &o) == 0);
    pthread_join(t, NULL);
    CHECK_CONTAINS(o.msg, "device 77");
    kiln_context_destroy(ctx);
    CHECK(ta.live == 0 && ta.bad_size == 0);
}

/* Context creation (which allocates the creator's error slot) fails cleanly wherever an
 * allocation fails: the shared sweep of fault.h. */
static kiln_status create_scenario(fault_run *r) {
    kiln_context *ctx = NULL;
    kiln_status s = fault_context(r, NULL, &ctx);
    if (s) {
        CHECK(!ctx);
        CHECK_CONTAINS(r->message, "host allocation");
    }
    kiln_context_destroy(ctx);
    return s;
}

/* A call on a NULL executable or jit sets its own message (on its argument's context),
 * replacing an older one, so kiln_last_error never describes an earlier failure. */
static void test_null_object_sets_message(void) {
    kiln_context *ctx = test_context();
    kiln_array *a = NULL, *out = NULL;
    int64_t dims[1] = {4};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, dims, NULL, &a));
    void *p;
    CHECK_STATUS(kiln_device_alloc(ctx, 55, 64, "t", &p), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "device 55"); /* the stale one */
    CHECK_STATUS(kiln_executable_run(NULL, 1, &a, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_executable_run: the executable is NULL");
    CHECK(out == NULL);
    CHECK_STATUS(kiln_jit_call(NULL, 1, &a, NULL, 0, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_call: the jit is NULL");
    /* Without arguments there is no context: the status alone. */
    CHECK_STATUS(kiln_executable_run(NULL, 0, NULL, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    kiln_array_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_create_fails_cleanly(void) {
    fault_sweep sw = {.name = "kiln_context_create", .run = create_scenario, .max_runs = 50};
    CHECK(fault_sweep_run(&sw) > 0);
}

int main(void) {
    RUN(test_threads_read_their_own_messages);
    RUN(test_message_survives_other_threads);
    RUN(test_no_allocation_when_reporting);
    RUN(test_null_object_sets_message);
    RUN(test_create_fails_cleanly);
    return test_summary("test_errors");
}
