/* local.c — the in-process transport: `size` ranks, one thread each, sharing one group.
 *
 * An all-reduce is two meetings. Each rank posts its send and recv pointers and arrives;
 * once all have, rank r reduces slice r of the elements over every rank's send buffer, in
 * rank order (so every element is summed in the same order whoever computes it, and every
 * rank gets the same bits), and writes it into every rank's recv buffer; the second meeting
 * keeps every send buffer alive until nobody reads it. Memory traffic per rank is that of
 * a reduce-scatter plus an all-gather, as in a ring, with no copies.
 *
 * A meeting waits on a condition variable until the deadline. A rank that times out marks
 * the group failed with a message naming the ranks that never arrived and wakes the others;
 * every later call on the group fails at once. The group is freed with its last
 * communicator. All shared fields are guarded by the mutex; the buffers posted in a round
 * are read only between its two meetings, which order them (also for ThreadSanitizer). */
#include "comm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct local_post {
    const void *send;
    void *recv;
    size_t count;
    kiln_dtype dtype;
    int kind;
} local_post;

typedef struct local_group {
    kiln_context *ctx;
    int size, alive; /* communicators not yet destroyed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen;   /* meetings completed */
    int arrived;    /* in the current meeting */
    uint64_t *seen; /* per rank: 1 + the meeting it last arrived at */
    local_post *post;
    bool failed;
    char why[512];
} local_group;

static size_t group_bytes(int size) {
    return sizeof(local_group) + (size_t)size * (sizeof(uint64_t) + sizeof(local_post));
}

static void deadline_after(double s, struct timespec *ts) {
    clock_gettime(CLOCK_REALTIME, ts);
    double whole = floor(s);
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((s - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

static kiln_status failed_error(kiln_comm *c, const local_group *g, const char *what) {
    return ctx_error(c->ctx, KILN_STATUS_TIMEOUT, "%s on rank %d of %d (local): %s", what, c->rank,
                     c->size, g->why);
}

/* The meeting: returns once every rank has arrived, or fails at the deadline. */
static kiln_status meet(kiln_comm *c, const char *what) {
    local_group *g = c->impl;
    pthread_mutex_lock(&g->mu);
    if (g->failed) {
        kiln_status s = failed_error(c, g, what);
        pthread_mutex_unlock(&g->mu);
        return s;
    }
    uint64_t my = g->gen;
    g->seen[c->rank] = my + 1;
    if (++g->arrived == g->size) {
        g->arrived = 0;
        g->gen++;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        return KILN_STATUS_OK;
    }
    struct timespec dl;
    deadline_after(c->timeout_s, &dl);
    while (g->gen == my && !g->failed) {
        int rc = pthread_cond_timedwait(&g->cv, &g->mu, &dl);
        if (rc != ETIMEDOUT || g->gen != my || g->failed) continue;
        g->failed = true;
        int k = snprintf(g->why, sizeof g->why, "rank %d waited %.3g s at %s for rank(s)", c->rank,
                         c->timeout_s, what);
        for (int r = 0; r < g->size && k < (int)sizeof g->why; r++)
            if (g->seen[r] != my + 1)
                k += snprintf(g->why + k, sizeof g->why - (size_t)k, " %d", r);
        if (k < (int)sizeof g->why)
            snprintf(g->why + k, sizeof g->why - (size_t)k,
                     ", which never arrived (died, stalled, or called other collectives)");
        pthread_cond_broadcast(&g->cv);
    }
    kiln_status s = g->gen != my ? KILN_STATUS_OK : failed_error(c, g, what);
    pthread_mutex_unlock(&g->mu);
    return s;
}

/* Element i of every rank's send buffer, reduced in rank order, written to every recv. */
#define REDUCE_SLICE(T, COMBINE)                                                                   \
    for (size_t i = lo; i < hi; i++) {                                                             \
        T acc = ((const T *)p[0].send)[i];                                                         \
        for (int r = 1; r < n; r++) {                                                              \
            T x = ((const T *)p[r].send)[i];                                                       \
            acc = COMBINE;                                                                         \
        }                                                                                          \
        for (int r = 0; r < n; r++) ((T *)p[r].recv)[i] = acc;                                     \
    }

static void reduce_slice(const local_post *p, int n, kiln_dtype t, int kind, size_t lo, size_t hi) {
    bool sum = kind == KILN_REDUCE_SUM;
    switch (t) {
    case KILN_DTYPE_F32:
        if (sum)
            REDUCE_SLICE(float, acc + x)
        else
            REDUCE_SLICE(float, isnan(acc) || isnan(x) ? acc + x : acc > x ? acc : x)
        break;
    case KILN_DTYPE_F64:
        if (sum)
            REDUCE_SLICE(double, acc + x)
        else
            REDUCE_SLICE(double, isnan(acc) || isnan(x) ? acc + x : acc > x ? acc : x)
        break;
    case KILN_DTYPE_I32:
        if (sum)
            REDUCE_SLICE(int32_t, (int32_t)((uint32_t)acc + (uint32_t)x))
        else
            REDUCE_SLICE(int32_t, acc > x ? acc : x)
        break;
    default:
        if (sum)
            REDUCE_SLICE(int64_t, (int64_t)((uint64_t)acc + (uint64_t)x))
        else
            REDUCE_SLICE(int64_t, acc > x ? acc : x)
        break;
    }
}

static kiln_status local_all_reduce(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k,
                                    const void *send, void *recv, size_t count, const char *what) {
    local_group *g = c->impl;
    g->post[c->rank] = (local_post){send, recv, count, t, (int)k};
    kiln_status s = meet(c, what);
    if (s) return s;
    /* every rank checks every post the same way, so a mismatch fails them all alike */
    for (int r = 1; r < g->size; r++) {
        const local_post *a = &g->post[0], *b = &g->post[r];
        if (a->count == b->count && a->dtype == b->dtype && a->kind == b->kind) continue;
        pthread_mutex_lock(&g->mu);
        if (!g->failed)
            snprintf(g->why, sizeof g->why,
                     "ranks called different collectives: rank 0 all_reduce %zu %s (reduction "
                     "%d), rank %d all_reduce %zu %s (reduction %d)",
                     a->count, kiln_dtype_name(a->dtype), a->kind, r, b->count,
                     kiln_dtype_name(b->dtype), b->kind);
        g->failed = true;
        s = failed_error(c, g, what);
        pthread_mutex_unlock(&g->mu);
        return s;
    }
    size_t per = count / (size_t)g->size, extra = count % (size_t)g->size;
    size_t r = (size_t)c->rank;
    size_t lo = r * per + (r < extra ? r : extra), hi = lo + per + (r < extra);
    reduce_slice(g->post, g->size, t, (int)k, lo, hi);
    return meet(c, what);
}

static kiln_status local_barrier(kiln_comm *c, const char *what) {
    return meet(c, what);
}

static void local_abort(kiln_comm *c, int code) {
    (void)c;
    fflush(NULL);
    _Exit(code);
}

static void local_destroy(kiln_comm *c) {
    local_group *g = c->impl;
    pthread_mutex_lock(&g->mu);
    bool last = --g->alive == 0;
    pthread_mutex_unlock(&g->mu);
    if (!last) return;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    host_free(g->ctx, g, group_bytes(g->size));
}

static const kn_comm_ops local_ops = {
    .kind = "local",
    .all_reduce = local_all_reduce,
    .barrier = local_barrier,
    .abort = local_abort,
    .destroy = local_destroy,
};

kiln_status comm_local_group(kiln_context *ctx, int size, double timeout_s, kiln_comm **comms) {
    local_group *g = host_calloc(ctx, 1, group_bytes(size));
    if (!g) return ctx_oom(ctx, "kiln_comm_create_local: the group", group_bytes(size));
    g->ctx = ctx;
    g->size = size;
    g->seen = (uint64_t *)(g + 1);
    g->post = (local_post *)(g->seen + size);
    int r = 0;
    for (; r < size; r++) {
        if (!(comms[r] = host_calloc(ctx, 1, sizeof **comms))) break;
        *comms[r] = (kiln_comm){.ctx = ctx,
                                .ops = &local_ops,
                                .impl = g,
                                .rank = r,
                                .size = size,
                                .timeout_s = timeout_s};
    }
    if (r < size) {
        for (int i = 0; i < r; i++) host_free(ctx, comms[i], sizeof **comms), comms[i] = NULL;
        host_free(ctx, g, group_bytes(size));
        return ctx_oom(ctx, "kiln_comm_create_local: a communicator", sizeof **comms);
    }
    g->alive = size;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    return KILN_STATUS_OK;
}
