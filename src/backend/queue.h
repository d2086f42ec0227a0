/* queue.h — a device's in-order work queues and the events that order work across them
 * (the asynchronous model of docs/devices.md).
 *
 * In asynchronous mode (KILN_ASYNC) each device has two queues, one for compute (runs)
 * and one for copies, each drained in order by a thread of its own that calls the
 * device's backend table. A task is enqueued with an event that the queue completes when
 * the task's work is done; whoever needs the result (a later task on any queue, a host
 * read) waits for the event. Tasks only ever wait for events of tasks enqueued before
 * them, and every queue runs its tasks in the order they were enqueued, so the earliest
 * unfinished task never waits: there is no deadlock.
 *
 * Errors: a task's failure is recorded on its event (status and the full message, which
 * the worker copies from its own per-thread slot, so it can be delivered on the caller's
 * thread later) and, the first since the last queue_drain, on the queue.
 *
 * Invariants: an event's done flag, status and message are written once, under its
 * queue's mutex, before the flag is published; a queue's thread starts at its first task
 * (contexts that never go asynchronous start none); queue_destroy waits for every task. */
#ifndef KILN_QUEUE_H
#define KILN_QUEUE_H

#include "base/base.h"

typedef struct kn_queue kn_queue;
typedef struct kn_event kn_event;
typedef struct kn_task kn_task;

struct kn_task {
    kn_task *next; /* the queue's list */
    /* Runs on the queue's thread. On failure the message is that thread's last error. */
    kiln_status (*exec)(kn_task *t);
    /* Releases the task and what it holds, on the queue's thread, after exec and before its
     * event completes (so a wait that returns has seen the memory freed). Must not fail,
     * and must not wait for the task's own event or for the queue: that would deadlock. */
    void (*release)(kn_task *t);
    kn_event *ev; /* completed with exec's result; the task holds a reference */
};

/* A new event of queue q with one reference (the caller's). */
kiln_status event_new(kiln_context *ctx, kn_queue *q, kn_event **out);
void event_ref(kn_event *ev);
void event_unref(kn_event *ev); /* NULL is a no-op */
/* Waits for the event; returns its status. */
kiln_status event_wait(kn_event *ev);
/* The failed event's message: the first error of the chain that led to it (the part after
 * EVENT_FIRST_ERROR in a dependant's message); "" when it succeeded or its text was lost. */
const char *event_first_error(const kn_event *ev);
/* Waits, and when the work failed sets the calling thread's message: "<what>: <message>". */
kiln_status event_deliver(kiln_context *ctx, kn_event *ev, const char *what);

/* Waits for dep, the event of work that a task needs done first. When that work failed,
 * sets the calling thread's message to the formatted text (what did not run and why),
 * then EVENT_FIRST_ERROR and the first error of dep's chain, and returns dep's status. */
kiln_status event_depend(kiln_context *ctx, kn_event *dep, const char *fmt, ...) KN_PRINTF(3, 4);

/* How a dependant's message introduces the error it inherits. */
#define EVENT_FIRST_ERROR "; the first error: "

struct kn_device;
/* A queue for dev; `kind` ("compute", "copy") names it in messages. No thread starts yet. */
kiln_status queue_create(kiln_context *ctx, struct kn_device *dev, const char *kind,
                         kn_queue **out);
/* Waits for every task enqueued so far (keeping any error for queue_drain). NULL: no-op. */
void queue_idle(kn_queue *q);
/* Waits for every task, stops the thread, frees the queue. NULL is a no-op. A task's
 * release may drop the last reference to an event of another queue (an array made on one
 * queue and read on another), so every queue of the context must be idle before the
 * first is destroyed (device_close_all). */
void queue_destroy(kn_queue *q);
/* Enqueues t (whose ev is set); waits first while the queue holds QUEUE_MAX_PENDING (256)
 * unfinished tasks. Fails only when the queue's thread cannot be started; the task is not
 * taken then (the caller releases it), and the message says why. */
kiln_status queue_submit(kn_queue *q, kn_task *t);
/* Waits for every task enqueued so far; returns the first error since the last drain
 * (setting the calling thread's message, prefixed with `what`) and forgets it. */
kiln_status queue_drain(kn_queue *q, const char *what);
/* *slot (an event guarded by q's mutex) replaced by ev (a reference is taken); the old
 * event's reference goes to the caller, who unrefs it. */
kn_event *queue_event_swap(kn_queue *q, kn_event **slot, kn_event *ev);
/* A new reference to *slot (guarded by q's mutex), or NULL. */
kn_event *queue_event_get(kn_queue *q, kn_event *const *slot);

#endif
