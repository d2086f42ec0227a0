/* local.c — the in-process transport: `size` ranks, one thread each, sharing one group.
 *
 * An all-reduce is a round: the ranks' k-th all-reduces form round k. Starting one posts
 * the rank's request (send, recv, count) in its queue and returns. Waiting for it: once
 * every rank has posted the round, its requests are chained in rank order, and the element
 * range is cut into one slice per rank. A waiting rank reduces every slice nobody has taken
 * yet (its own first), each element over every rank's send buffer in rank order (so every
 * element is combined in the same order whoever computes it, and every rank gets the same
 * bits), and writes it into every rank's recv; the round is complete when every slice is
 * written. So the ranks that wait first do the work while the others still run kernels
 * (the overlap of run.c), and with every rank waiting at once the work is split as a
 * reduce-scatter plus an all-gather would be, with no copies. Rounds may be waited for in
 * any order. A reduce-scatter and an all-gather are rounds too, cut into one slice per
 * rank along the shards: slice r of a reduce-scatter is reduced into rank r's recv alone,
 * slice r of an all-gather is rank r's send copied into every rank's recv at shard r.
 *
 * Waits use a condition variable until the deadline. A rank that times out waiting for a
 * round some rank never posted marks the group failed with a message naming those ranks
 * and wakes the others; every later call on the group fails at once. A request leaves its
 * rank's queue only when its round is complete or the group failed and nobody is reducing
 * anything (another rank may be writing this rank's recv), so the caller may reuse the
 * buffers when the wait returns. Barriers are meetings (every rank arrives). The group is
 * freed with its last communicator. All shared fields and the requests' transport fields
 * are guarded by the mutex; a slice's buffers are read and written outside it only between
 * the claim and the `reduced` mark, which the mutex orders (also for ThreadSanitizer). */
#include "comm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct local_group {
    kiln_context *ctx;
    int size, alive; /* communicators not yet destroyed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen;        /* meetings (barriers) completed */
    int arrived;         /* in the current meeting */
    uint64_t *seen;      /* per rank: 1 + the meeting it last arrived at */
    uint64_t *posted;    /* per rank: all-reduces started (the next round's number) */
    kn_comm_req **queue; /* per rank: its requests in flight, oldest first */
    int reducing;        /* slices being reduced outside the mutex, any round */
    bool failed;
    char why[512];
} local_group;

static size_t group_bytes(int size) {
    return sizeof(local_group) + (size_t)size * (2 * sizeof(uint64_t) + sizeof(kn_comm_req *));
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

/* Ends a timed-out wait's message (why, k bytes written): the ranks it names met another
 * call (a barrier against a collective; `likely` where that is a guess), or never came. */
static void why_tail(local_group *g, int k, bool mismatch, bool likely) {
    if (k >= (int)sizeof g->why) return;
    if (mismatch)
        snprintf(g->why + k, sizeof g->why - (size_t)k,
                 ": the ranks %scalled different collectives (a barrier against a collective)",
                 likely ? "likely " : "");
    else
        snprintf(g->why + k, sizeof g->why - (size_t)k,
                 ", which never arrived (died, stalled, or called other collectives)");
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
        bool other = false; /* one of them waits in a collective of its own: a mismatch */
        for (int r = 0; r < g->size && k < (int)sizeof g->why; r++)
            if (g->seen[r] != my + 1) {
                bool busy = g->queue[r] != NULL;
                other |= busy;
                k += snprintf(g->why + k, sizeof g->why - (size_t)k, " %d%s", r,
                              busy ? " (with a collective in flight)" : "");
            }
        why_tail(g, k, other, true);
        pthread_cond_broadcast(&g->cv);
    }
    kiln_status s = g->gen != my ? KILN_STATUS_OK : failed_error(c, g, what);
    pthread_mutex_unlock(&g->mu);
    return s;
}

/* Elements [lo, hi) of round `first` (rank 0's request; round_next leads through the
 * ranks in order): the reduction in rank order into acc, then copied to every rank's recv.
 * Rank-major over cache-sized pieces; each element is still combined in rank order, so
 * every rank gets the same bits whoever reduces its slice. */
#define REDUCE_PIECE(T, COMBINE)                                                                   \
    do {                                                                                           \
        T *acc = (T *)acc_recv;                                                                    \
        const T *x0 = first->send;                                                                 \
        for (size_t i = lo; i < hi; i++) acc[i - base] = x0[i];                                    \
        for (const kn_comm_req *q = first->u.local.round_next; q; q = q->u.local.round_next) {     \
            const T *xs = q->send;                                                                 \
            for (size_t i = lo; i < hi; i++) {                                                     \
                T a = acc[i - base], x = xs[i];                                                    \
                acc[i - base] = COMBINE;                                                           \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Elements [lo, hi) of the round's send buffers into acc_recv[i - base]. */
static void reduce_piece(const kn_comm_req *first, void *acc_recv, size_t base, size_t lo,
                         size_t hi) {
    bool sum = first->op == KILN_REDUCE_SUM;
    switch (first->dtype) {
    case KILN_DTYPE_F32:
        if (sum)
            REDUCE_PIECE(float, a + x);
        else
            REDUCE_PIECE(float, isnan(a) || isnan(x) ? a + x : a > x ? a : x);
        break;
    case KILN_DTYPE_F64:
        if (sum)
            REDUCE_PIECE(double, a + x);
        else
            REDUCE_PIECE(double, isnan(a) || isnan(x) ? a + x : a > x ? a : x);
        break;
    case KILN_DTYPE_I32:
        if (sum)
            REDUCE_PIECE(int32_t, (int32_t)((uint32_t)a + (uint32_t)x));
        else
            REDUCE_PIECE(int32_t, a > x ? a : x);
        break;
    default:
        if (sum)
            REDUCE_PIECE(int64_t, (int64_t)((uint64_t)a + (uint64_t)x));
        else
            REDUCE_PIECE(int64_t, a > x ? a : x);
        break;
    }
}

/* Slice `slice` of the round: reduced into the slice's own rank's recv, then copied into
 * every other rank's, a piece at a time so the piece is still in cache. */
static void reduce_slice(const kn_comm_req *first, const kn_comm_req *owner, int size, int slice) {
    size_t count = first->count, item = kiln_dtype_itemsize(first->dtype);
    size_t per = count / (size_t)size, extra = count % (size_t)size, r = (size_t)slice;
    size_t lo = r * per + (r < extra ? r : extra), hi = lo + per + (r < extra);
    const size_t piece = 8192;               /* elements: 32-64 KiB, an L2's share */
    if (first->coll == KN_COLL_ALL_GATHER) { /* the owner's shard, to every rank at lo */
        for (const kn_comm_req *q = first; q && hi > lo; q = q->u.local.round_next)
            memcpy((char *)q->recv + lo * item, owner->send, (hi - lo) * item);
        return;
    }
    if (first->coll == KN_COLL_REDUCE_SCATTER) { /* the owner's shard, to the owner alone */
        for (size_t at = lo; at < hi; at += piece)
            reduce_piece(first, owner->recv, lo, at, hi - at < piece ? hi : at + piece);
        return;
    }
    for (size_t at = lo; at < hi; at += piece) {
        size_t end = hi - at < piece ? hi : at + piece;
        reduce_piece(first, owner->recv, 0, at, end);
        for (const kn_comm_req *q = first; q; q = q->u.local.round_next)
            if (q != owner)
                memcpy((char *)q->recv + at * item, (const char *)owner->recv + at * item,
                       (end - at) * item);
    }
}

/* This rank's request of round `seq`, while it is in flight (under the mutex). */
static kn_comm_req *find_req(const local_group *g, int rank, uint64_t seq) {
    kn_comm_req *q = g->queue[rank];
    while (q && q->u.local.seq != seq) q = q->u.local.next;
    return q;
}

static void unqueue(local_group *g, int rank, kn_comm_req *r) {
    kn_comm_req **at = &g->queue[rank];
    while (*at && *at != r) at = &(*at)->u.local.next;
    if (*at) *at = r->u.local.next;
}

static kiln_status local_start(kiln_comm *c, kn_comm_req *r) {
    local_group *g = c->impl;
    pthread_mutex_lock(&g->mu);
    if (g->failed) {
        kiln_status s = failed_error(c, g, r->what);
        pthread_mutex_unlock(&g->mu);
        return s;
    }
    r->u.local.seq = g->posted[c->rank]++;
    kn_comm_req **at = &g->queue[c->rank];
    while (*at) at = &(*at)->u.local.next;
    *at = r;
    pthread_cond_broadcast(&g->cv); /* a rank may be waiting for this round to be posted */
    pthread_mutex_unlock(&g->mu);
    return KILN_STATUS_OK;
}

/* Under the mutex, once every rank has posted round seq: chains its requests in rank
 * order. Every rank's post must describe the same call; a mismatch fails the group. */
static kn_comm_req *link_round(local_group *g, uint64_t seq) {
    kn_comm_req *first = find_req(g, 0, seq), *prev = first;
    for (int p = 1; p < g->size; p++) {
        kn_comm_req *q = find_req(g, p, seq);
        if (q->count != first->count || q->dtype != first->dtype || q->op != first->op ||
            q->coll != first->coll) {
            snprintf(g->why, sizeof g->why,
                     "ranks called different collectives: rank 0 %s %zu %s (reduction "
                     "%d), rank %d %s %zu %s (reduction %d)",
                     comm_coll_name(first->coll), first->count, kiln_dtype_name(first->dtype),
                     (int)first->op, p, comm_coll_name(q->coll), q->count,
                     kiln_dtype_name(q->dtype), (int)q->op);
            g->failed = true;
            pthread_cond_broadcast(&g->cv);
            return NULL;
        }
        prev->u.local.round_next = q;
        prev = q;
    }
    prev->u.local.round_next = NULL;
    for (kn_comm_req *q = first; q; q = q->u.local.round_next) q->u.local.linked = true;
    return first;
}

static bool all_posted(const local_group *g, uint64_t seq) {
    for (int p = 0; p < g->size; p++)
        if (g->posted[p] <= seq) return false;
    return true;
}

static void timed_out(kiln_comm *c, local_group *g, uint64_t seq, const char *what) {
    g->failed = true;
    int k = snprintf(g->why, sizeof g->why, "rank %d waited %.3g s at %s for rank(s)", c->rank,
                     c->timeout_s, what);
    bool barrier = false; /* one of them waits in a barrier: a mismatch, not a stall */
    for (int p = 0; p < g->size && k < (int)sizeof g->why; p++)
        if (g->posted[p] <= seq) {
            bool in = g->arrived && g->seen[p] == g->gen + 1;
            barrier |= in;
            k += snprintf(g->why + k, sizeof g->why - (size_t)k, " %d%s", p,
                          in ? " (waiting in a barrier)" : "");
        }
    why_tail(g, k, barrier, false);
    pthread_cond_broadcast(&g->cv);
}

/* Completes r: once every rank has posted its round, this rank reduces every slice of the
 * round nobody has taken yet (its own first), so the ranks that wait first do the work
 * while the others still compute; then it waits until the last slice is written. On a
 * failure of the group it still waits until nobody reduces anything (another rank may be
 * writing this rank's recv), so the caller may free the buffers when this returns. */
static kiln_status local_wait(kiln_comm *c, kn_comm_req *r) {
    local_group *g = c->impl;
    uint64_t seq = r->u.local.seq;
    struct timespec dl;
    deadline_after(c->timeout_s, &dl);
    kiln_status s = KILN_STATUS_OK;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        if (r->u.local.complete) break;
        /* not complete: no rank has left the round, so its requests are all in flight */
        kn_comm_req *first = r->u.local.linked ? find_req(g, 0, seq) : NULL;
        if (g->failed) {
            while (g->reducing) pthread_cond_wait(&g->cv, &g->mu);
            s = failed_error(c, g, r->what);
            break;
        }
        if (!first && all_posted(g, seq) && !(first = link_round(g, seq))) continue;
        if (first) { /* a slice nobody has taken: this rank's own first, then the others' */
            kn_comm_req *take = r->u.local.claimed ? NULL : r;
            int slice = c->rank, p = 0;
            for (kn_comm_req *q = first; q && !take; q = q->u.local.round_next, p++)
                if (!q->u.local.claimed) take = q, slice = p;
            if (take) {
                take->u.local.claimed = true;
                g->reducing++;
                pthread_mutex_unlock(&g->mu);
                reduce_slice(first, take, g->size, slice);
                pthread_mutex_lock(&g->mu);
                take->u.local.reduced = true;
                g->reducing--;
                bool done = true;
                for (const kn_comm_req *q = first; q && done; q = q->u.local.round_next)
                    done = q->u.local.reduced;
                for (kn_comm_req *q = first; q && done; q = q->u.local.round_next)
                    q->u.local.complete = true;
                pthread_cond_broadcast(&g->cv);
                continue;
            }
        }
        /* Once the round is posted every slice is taken by a waiter, so only reductions in
         * progress remain, which end without anyone's help: no deadline for those. Before,
         * the deadline names the ranks that never came. */
        if (first) {
            pthread_cond_wait(&g->cv, &g->mu);
        } else if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) == ETIMEDOUT && !g->failed &&
                   !all_posted(g, seq)) {
            timed_out(c, g, seq, r->what);
        }
    }
    unqueue(g, c->rank, r);
    pthread_mutex_unlock(&g->mu);
    return s;
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
    .start = local_start,
    .wait = local_wait,
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
    g->posted = g->seen + size;
    g->queue = (kn_comm_req **)(g->posted + size);
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
