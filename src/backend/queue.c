/* queue.c — in-order work queues with a thread each, and events (see queue.h).
 *
 * A queue is a FIFO of tasks under one mutex. Its thread pops a task, runs it without the
 * lock, releases it (the arrays and arenas it held go back to the allocator), and only then
 * completes the task's event and counts the task as finished under the lock, waking every
 * waiter (done_cv: waiters of any event of this queue, and drains). So a wait that returns
 * has seen the memory freed: a loop that reads a result, destroys its arrays and allocates
 * again finds the bytes free, as it would without the queue (an outside report: completing
 * first made such allocations fail now and then under a tight limit).
 *
 * Per-thread errors (base/error.c): a task that fails leaves its message in the worker
 * thread's slot, where no caller would ever look. The worker copies it into the event (and
 * into the queue's first error) right away; event_deliver and queue_drain then set it as
 * the message of the thread that synchronises. When even that copy cannot be allocated,
 * the status still travels and the message says it was lost.
 *
 * Signals are blocked on the queue's thread, as on the pool's workers. */
#include "queue.h"
#include "device.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

/* Tasks a queue holds before queue_submit waits for its thread to finish one: the host may
 * run ahead of the device, but not without bound (every queued run holds its outputs'
 * device memory), as XLA bounds the executions in flight per device. */
enum { QUEUE_MAX_PENDING = 256 };

struct kn_event {
    atomic_int refs;
    kiln_context *ctx;
    kn_queue *q;
    atomic_bool done;   /* set under q->mu after status and msg */
    kiln_status status; /* valid once done */
    char *msg;          /* owned; NULL when the work succeeded or the text was lost */
};

struct kn_queue {
    kiln_context *ctx;
    kn_device *dev;
    const char *kind;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    kn_task *head, *tail;
    bool started, stop, sleeping;
    pthread_t thread;
    uint64_t submitted, finished; /* tasks enqueued; tasks run, completed and released */
    kiln_status first_status;     /* the first failure since the last drain */
    char *first_msg;              /* owned; may be NULL (lost) */
};

/* ------------------------------------------------------------- events ---- */

kiln_status event_new(kiln_context *ctx, kn_queue *q, kn_event **out) {
    kn_event *ev = host_alloc(ctx, sizeof *ev);
    *out = ev;
    if (!ev) return ctx_oom(ctx, "enqueueing work: event", sizeof *ev);
    atomic_init(&ev->refs, 1);
    ev->ctx = ctx;
    ev->q = q;
    atomic_init(&ev->done, false);
    ev->status = KILN_STATUS_OK;
    ev->msg = NULL;
    return KILN_STATUS_OK;
}

void event_ref(kn_event *ev) {
    atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed);
}

void event_unref(kn_event *ev) {
    if (!ev || atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) != 1) return;
    kiln_context *ctx = ev->ctx; /* not ev->q: its queue may be going away (queue_destroy) */
    if (ev->msg) host_free(ctx, ev->msg, strlen(ev->msg) + 1);
    host_free(ctx, ev, sizeof *ev);
}

kiln_status event_wait(kn_event *ev) {
    if (!atomic_load_explicit(&ev->done, memory_order_acquire)) {
        kn_queue *q = ev->q;
        pthread_mutex_lock(&q->mu);
        while (!atomic_load_explicit(&ev->done, memory_order_relaxed))
            pthread_cond_wait(&q->done_cv, &q->mu);
        pthread_mutex_unlock(&q->mu);
    }
    return ev->status;
}

const char *event_first_error(const kn_event *ev) {
    if (!ev->msg) return "";
    const char *p = strstr(ev->msg, EVENT_FIRST_ERROR);
    return p ? p + strlen(EVENT_FIRST_ERROR) : ev->msg;
}

kiln_status event_depend(kiln_context *ctx, kn_event *dep, const char *fmt, ...) {
    kiln_status s = event_wait(dep);
    if (!s) return KILN_STATUS_OK;
    char head[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    return ctx_error(ctx, s, "%s" EVENT_FIRST_ERROR "%s", head,
                     dep->msg ? event_first_error(dep) : "(its message was lost)");
}

static kiln_status deliver(kiln_context *ctx, kiln_status s, const char *msg, const char *what,
                           const kn_queue *q) {
    if (msg) return ctx_error(ctx, s, "%s: %s", what, msg);
    return ctx_error(ctx, s,
                     "%s: work on %s's %s queue failed with %s; its message was lost (host out "
                     "of memory while copying it)",
                     what, q->dev->name, q->kind, kiln_status_name(s));
}

kiln_status event_deliver(kiln_context *ctx, kn_event *ev, const char *what) {
    kiln_status s = event_wait(ev);
    return s ? deliver(ctx, s, ev->msg, what, ev->q) : KILN_STATUS_OK;
}

/* ------------------------------------------------------------- queues ---- */

kiln_status queue_create(kiln_context *ctx, kn_device *dev, const char *kind, kn_queue **out) {
    kn_queue *q = host_calloc(ctx, 1, sizeof *q);
    *out = q;
    if (!q) return ctx_oom(ctx, "kiln_context_create: device queue", sizeof *q);
    q->ctx = ctx;
    q->dev = dev;
    q->kind = kind;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work_cv, NULL);
    pthread_cond_init(&q->done_cv, NULL);
    return KILN_STATUS_OK;
}

/* A copy of the worker's last message, or NULL when the host has no memory for it. */
static char *take_message(kiln_context *ctx) {
    char buf[KN_ERR_MAX];
    kiln_last_error_copy(ctx, buf, sizeof buf);
    return host_strdup(ctx, buf);
}

static void finish(kn_queue *q, kn_task *t, kiln_status s) {
    char *msg = s ? take_message(q->ctx) : NULL, *first = s ? take_message(q->ctx) : NULL;
    kn_event *ev = t->ev;
    event_ref(ev); /* the release drops the task's reference */
    t->release(t);
    pthread_mutex_lock(&q->mu);
    ev->status = s;
    ev->msg = msg;
    atomic_store_explicit(&ev->done, true, memory_order_release);
    if (s && !q->first_status) {
        q->first_status = s;
        q->first_msg = first;
        first = NULL;
    }
    q->finished++;
    pthread_cond_broadcast(&q->done_cv);
    pthread_mutex_unlock(&q->mu);
    if (first) host_free(q->ctx, first, strlen(first) + 1);
    event_unref(ev);
}

static void *queue_main(void *arg) {
    kn_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->stop) {
            q->sleeping = true;
            pthread_cond_wait(&q->work_cv, &q->mu);
            q->sleeping = false;
        }
        kn_task *t = q->head;
        if (!t) break; /* stopping, and nothing left */
        q->head = t->next;
        if (!q->head) q->tail = NULL;
        pthread_mutex_unlock(&q->mu);
        finish(q, t, t->exec(t));
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static kiln_status start(kn_queue *q) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&q->thread, NULL, queue_main, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err)
        return ctx_error(q->ctx, KILN_STATUS_BACKEND,
                         "could not start the thread of %s's %s queue: %s", q->dev->name, q->kind,
                         strerror(err));
    q->started = true;
    return KILN_STATUS_OK;
}

kiln_status queue_submit(kn_queue *q, kn_task *t) {
    t->next = NULL;
    pthread_mutex_lock(&q->mu);
    kiln_status s = q->started ? KILN_STATUS_OK : start(q);
    /* no deadlock: the queue's thread never waits for the caller */
    while (!s && q->submitted - q->finished >= QUEUE_MAX_PENDING)
        pthread_cond_wait(&q->done_cv, &q->mu);
    if (!s) {
        if (q->tail)
            q->tail->next = t;
        else
            q->head = t;
        q->tail = t;
        q->submitted++;
        if (q->sleeping) pthread_cond_signal(&q->work_cv);
    }
    pthread_mutex_unlock(&q->mu);
    return s;
}

kiln_status queue_drain(kn_queue *q, const char *what) {
    pthread_mutex_lock(&q->mu);
    uint64_t upto = q->submitted;
    while (q->finished < upto) pthread_cond_wait(&q->done_cv, &q->mu);
    kiln_status s = q->first_status;
    char *msg = q->first_msg;
    q->first_status = KILN_STATUS_OK;
    q->first_msg = NULL;
    pthread_mutex_unlock(&q->mu);
    if (!s) return KILN_STATUS_OK;
    deliver(q->ctx, s, msg, what, q);
    if (msg) host_free(q->ctx, msg, strlen(msg) + 1);
    return s;
}

void queue_idle(kn_queue *q) {
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    while (q->finished < q->submitted) pthread_cond_wait(&q->done_cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

void queue_destroy(kn_queue *q) {
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    while (q->finished < q->submitted) pthread_cond_wait(&q->done_cv, &q->mu);
    q->stop = true;
    pthread_cond_signal(&q->work_cv);
    pthread_mutex_unlock(&q->mu);
    if (q->started) pthread_join(q->thread, NULL);
    if (q->first_msg) host_free(q->ctx, q->first_msg, strlen(q->first_msg) + 1);
    pthread_cond_destroy(&q->work_cv);
    pthread_cond_destroy(&q->done_cv);
    pthread_mutex_destroy(&q->mu);
    host_free(q->ctx, q, sizeof *q);
}

kn_event *queue_event_swap(kn_queue *q, kn_event **slot, kn_event *ev) {
    if (ev) event_ref(ev);
    pthread_mutex_lock(&q->mu);
    kn_event *old = *slot;
    *slot = ev;
    pthread_mutex_unlock(&q->mu);
    return old;
}

kn_event *queue_event_get(kn_queue *q, kn_event *const *slot) {
    pthread_mutex_lock(&q->mu);
    kn_event *ev = *slot;
    if (ev) event_ref(ev);
    pthread_mutex_unlock(&q->mu);
    return ev;
}
