/* mock_nccl.c — a stand-in libnccl.so.2 for tests/test_nccl_mock.c: the entry points
 * src/comm/nccl.c loads, for ranks of one process over tests/mock_cuda.c's "device" memory
 * (host memory), so the NCCL transport's host side (loading, the two ways of making a
 * group, the unique id's exchange, enqueueing on the compute stream, the timed wait, abort
 * and destroy) runs on machines without a GPU.
 *
 * Like the real library, ncclAllReduce only enqueues: the call returns at once and holds
 * the stream (mock_cuda_stream_hold, so cuStreamQuery says "not ready"), and the
 * collective completes when every rank of the group has enqueued it: the last rank to
 * arrive reduces, in rank order, into every rank's recv buffer and releases the streams.
 * Each rank's collectives queue in order, so a rank may enqueue several before its peers
 * arrive. It checks what the real one cannot: the buffers are device memory
 * (mock_cuda_owns) and every rank called the same collective (a mismatch is reported
 * through ncclCommGetAsyncError as ncclInvalidUsage, where NCCL would hang or corrupt).
 *
 * mock_nccl_set_fault injects failures: 1, every collective stalls (never completes);
 * 2, it stalls and ncclCommGetAsyncError reports ncclRemoteError, as a peer's death does.
 * mock_nccl_live counts the communicators not yet destroyed or aborted. Test code: one
 * mutex guards everything. */
#include "base/half.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    char internal[128];
} ncclUniqueId;
typedef int ncclResult_t;
enum { OK = 0, SYSTEM_ERROR = 2, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, REMOTE_ERROR = 6 };

typedef struct op {
    const void *send;
    void *recv;
    size_t count; /* all-reduce: elements; reduce-scatter: a shard's; all-gather: a shard's */
    int dtype, red;
    int kind; /* 0 all-reduce, 1 reduce-scatter, 2 all-gather */
    void *stream;
    struct op *next;
} op;

struct ncclComm;
typedef struct group {
    ncclUniqueId id;
    int n, joined, alive;
    struct ncclComm **ranks;
    struct group *next;
} group;

struct ncclComm {
    group *g;
    int rank;
    op *head, *tail;
    int async_error, posted;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t joined_cv = PTHREAD_COND_INITIALIZER;
static group *groups;
static int fault, live;
static unsigned long ids;
static void (*hold)(void *, long);
static int (*owns)(const void *, size_t);

#define API __attribute__((visibility("default")))

API void mock_nccl_set_fault(int f);
API void mock_nccl_set_fault(int f) {
    pthread_mutex_lock(&mu);
    fault = f;
    pthread_mutex_unlock(&mu);
}
API int mock_nccl_live(void);
API int mock_nccl_live(void) {
    pthread_mutex_lock(&mu);
    int n = live;
    pthread_mutex_unlock(&mu);
    return n;
}

/* mock_cuda's hooks, when it is the driver that is loaded (under mu). */
static void find_cuda(void) {
    if (hold) return;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) return;
    *(void **)&hold = dlsym(h, "mock_cuda_stream_hold");
    *(void **)&owns = dlsym(h, "mock_cuda_owns");
    dlclose(h);
}

static size_t item(int dtype) {
    return dtype == 1                 ? 1
           : dtype == 6 || dtype == 9 ? 2
           : dtype == 2               ? 4
           : dtype == 4               ? 8
           : dtype == 7               ? 4
                                      : 8;
}

/* ncclFloat16 (6) and ncclBfloat16 (9): widened to float, reduced there in rank order and
 * rounded once (NCCL itself rounds after each step of its ring; the mock's rank-order
 * reduction has no steps). */
static float half_get(int dtype, const void *p, size_t i) {
    uint16_t h = ((const uint16_t *)p)[i];
    return dtype == 9 ? kn_bf16_to_f32(h) : kn_f16_to_f32(h);
}

static void half_put(int dtype, void *p, size_t i, float v) {
    ((uint16_t *)p)[i] = dtype == 9 ? kn_f32_to_bf16(v) : kn_f32_to_f16(v);
}

#define REDUCE(T)                                                                                  \
    for (size_t i = 0; i < o[0]->count; i++) {                                                     \
        T acc = ((const T *)o[0]->send)[i];                                                        \
        for (int r = 1; r < n; r++) {                                                              \
            T x = ((const T *)o[r]->send)[i];                                                      \
            acc = o[0]->red == 2 ? (x > acc ? x : acc) : (T)(acc + x);                             \
        }                                                                                          \
        if (o[0]->red == 4) acc = (T)(acc / (T)n);                                                 \
        for (int r = 0; r < n; r++) ((T *)o[r]->recv)[i] = acc;                                    \
    }

/* Shard r of every rank's send reduced, in rank order, into rank r's recv. */
#define REDUCE_SCATTER(T)                                                                          \
    for (int d = 0; d < n; d++)                                                                    \
        for (size_t i = 0; i < o[0]->count; i++) {                                                 \
            size_t at = (size_t)d * o[0]->count + i;                                               \
            T acc = ((const T *)o[0]->send)[at];                                                   \
            for (int r = 1; r < n; r++) {                                                          \
                T x = ((const T *)o[r]->send)[at];                                                 \
                acc = o[0]->red == 2 ? (x > acc ? x : acc) : (T)(acc + x);                         \
            }                                                                                      \
            if (o[0]->red == 4) acc = (T)(acc / (T)n);                                             \
            ((T *)o[d]->recv)[i] = acc;                                                            \
        }

/* ncclReduceScatter and ncclAllGather of one round (every rank's o[r]). */
static void shard_round(op **o, int n) {
    if (o[0]->kind == 2) {
        size_t b = o[0]->count * item(o[0]->dtype);
        for (int d = 0; d < n; d++)
            for (int r = 0; r < n; r++) memcpy((char *)o[d]->recv + (size_t)r * b, o[r]->send, b);
        return;
    }
    switch (o[0]->dtype) {
    case 2: REDUCE_SCATTER(int32_t) break;
    case 4: REDUCE_SCATTER(int64_t) break;
    case 7: REDUCE_SCATTER(float) break;
    default: REDUCE_SCATTER(double) break;
    }
}

/* Completes the collectives every rank has enqueued (under mu). */
static void progress(group *g) {
    if (fault) return;
    int n = g->n;
    op *o[64];
    for (;;) {
        for (int r = 0; r < n; r++)
            if (!g->ranks[r] || !(o[r] = g->ranks[r]->head)) return;
        for (int r = 1; r < n; r++)
            if (o[r]->count != o[0]->count || o[r]->dtype != o[0]->dtype ||
                o[r]->red != o[0]->red || o[r]->kind != o[0]->kind) {
                for (int q = 0; q < n; q++) g->ranks[q]->async_error = INVALID_USAGE;
                return;
            }
        if (o[0]->kind) shard_round(o, n);
        switch (o[0]->kind ? -1 : o[0]->dtype) {
        case -1: break;
        case 6:
        case 9:
            for (size_t i = 0; i < o[0]->count; i++) {
                int t = o[0]->dtype;
                float acc = half_get(t, o[0]->send, i);
                for (int r = 1; r < n; r++) {
                    float x = half_get(t, o[r]->send, i);
                    acc = o[0]->red == 2 ? (x > acc ? x : acc) : acc + x;
                }
                if (o[0]->red == 4) acc /= (float)n;
                for (int r = 0; r < n; r++) half_put(t, o[r]->recv, i, acc);
            }
            break;
        case 2: REDUCE(int32_t) break;
        case 4: REDUCE(int64_t) break;
        case 7: REDUCE(float) break;
        default: REDUCE(double) break;
        }
        for (int r = 0; r < n; r++) {
            struct ncclComm *c = g->ranks[r];
            c->head = o[r]->next;
            if (!c->head) c->tail = NULL;
            if (hold) hold(o[r]->stream, -1);
            free(o[r]);
        }
    }
}

/* Takes c out of its group, dropping what it had enqueued (under mu). */
static void leave(struct ncclComm *c) {
    for (op *o = c->head, *next; o; o = next) {
        next = o->next;
        if (hold) hold(o->stream, -1);
        free(o);
    }
    group *g = c->g;
    g->ranks[c->rank] = NULL;
    if (--g->alive == 0) {
        for (group **p = &groups; *p; p = &(*p)->next)
            if (*p == g) {
                *p = g->next;
                break;
            }
        free(g->ranks);
        free(g);
    }
    free(c);
    live--;
}

static group *new_group(int n) {
    group *g = calloc(1, sizeof *g);
    if (!g || !(g->ranks = calloc((size_t)n, sizeof *g->ranks))) {
        free(g);
        return NULL;
    }
    g->n = n;
    g->next = groups;
    groups = g;
    return g;
}

static struct ncclComm *join(group *g, int rank) {
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->g = g;
    c->rank = rank;
    g->ranks[rank] = c;
    g->joined++;
    g->alive++;
    live++;
    return c;
}

API ncclResult_t ncclGetVersion(int *v);
API ncclResult_t ncclGetVersion(int *v) {
    *v = 22703; /* 2.27.3 */
    return OK;
}

API const char *ncclGetErrorString(ncclResult_t r);
API const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case OK: return "no error";
    case SYSTEM_ERROR: return "unhandled system error (mock)";
    case INVALID_ARGUMENT: return "invalid argument (mock)";
    case INVALID_USAGE: return "invalid usage (mock: the ranks called different collectives)";
    case REMOTE_ERROR: return "remote process exited or there was a network error (mock)";
    default: return "unknown result (mock)";
    }
}

API ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
API ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    pthread_mutex_lock(&mu);
    unsigned long k = ++ids;
    pthread_mutex_unlock(&mu);
    snprintf(id->internal, sizeof id->internal, "mock-nccl-%ld-%lu", (long)getpid(), k);
    return OK;
}

API ncclResult_t ncclCommInitAll(struct ncclComm **comms, int n, const int *devs);
API ncclResult_t ncclCommInitAll(struct ncclComm **comms, int n, const int *devs) {
    if (n < 1 || n > 64) return INVALID_ARGUMENT;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (devs[i] == devs[j]) return INVALID_USAGE; /* "Duplicate GPU detected" */
    pthread_mutex_lock(&mu);
    find_cuda();
    group *g = new_group(n);
    ncclResult_t r = g ? OK : SYSTEM_ERROR;
    for (int i = 0; i < n && !r; i++)
        if (!(comms[i] = join(g, i))) r = SYSTEM_ERROR;
    pthread_mutex_unlock(&mu);
    return r;
}

/* Waits up to 30 s for the other ranks, as NCCL's bootstrap does (for ever there). */
API ncclResult_t ncclCommInitRank(struct ncclComm **comm, int n, ncclUniqueId id, int rank);
API ncclResult_t ncclCommInitRank(struct ncclComm **comm, int n, ncclUniqueId id, int rank) {
    if (n < 1 || n > 64 || rank < 0 || rank >= n) return INVALID_ARGUMENT;
    pthread_mutex_lock(&mu);
    find_cuda();
    group *g = groups;
    while (g && memcmp(&g->id, &id, sizeof id)) g = g->next;
    if (!g && (g = new_group(n))) g->id = id;
    if (!g || g->n != n || g->ranks[rank]) {
        pthread_mutex_unlock(&mu);
        return g ? INVALID_USAGE : SYSTEM_ERROR;
    }
    struct ncclComm *c = join(g, rank);
    if (!c) {
        pthread_mutex_unlock(&mu);
        return SYSTEM_ERROR;
    }
    pthread_cond_broadcast(&joined_cv);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    int rc = 0;
    while (g->joined < n && rc == 0) rc = pthread_cond_timedwait(&joined_cv, &mu, &dl);
    if (g->joined < n) {
        leave(c);
        pthread_mutex_unlock(&mu);
        return SYSTEM_ERROR;
    }
    pthread_mutex_unlock(&mu);
    *comm = c;
    return OK;
}

API ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int red,
                               struct ncclComm *c, void *stream);
API ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int red,
                               struct ncclComm *c, void *stream) {
    if (!c || !stream || dtype < 2 || dtype > 9 || dtype == 3 || dtype == 5 ||
        (red != 0 && red != 2 && red != 4) || (red == 4 && (dtype == 2 || dtype == 4)))
        return INVALID_ARGUMENT;
    pthread_mutex_lock(&mu);
    size_t bytes = count * item(dtype);
    if (owns && count && (!owns(send, bytes) || !owns(recv, bytes))) {
        pthread_mutex_unlock(&mu);
        return INVALID_ARGUMENT; /* host memory where the device's was due */
    }
    op *o = calloc(1, sizeof *o);
    if (!o) {
        pthread_mutex_unlock(&mu);
        return SYSTEM_ERROR;
    }
    *o = (op){send, recv, count, dtype, red, 0, stream, NULL};
    if (c->tail)
        c->tail->next = o;
    else
        c->head = o;
    c->tail = o;
    c->posted++;
    if (hold) hold(stream, 1);
    progress(c->g);
    pthread_mutex_unlock(&mu);
    return OK;
}

/* Enqueues one op of kind on c (under no lock): as ncclAllReduce does. */
static ncclResult_t enqueue(struct ncclComm *c, op o, size_t send_bytes, size_t recv_bytes) {
    pthread_mutex_lock(&mu);
    if (owns && (send_bytes || recv_bytes) &&
        (!owns(o.send, send_bytes) || !owns(o.recv, recv_bytes))) {
        pthread_mutex_unlock(&mu);
        return INVALID_ARGUMENT;
    }
    op *p = calloc(1, sizeof *p);
    if (!p) {
        pthread_mutex_unlock(&mu);
        return SYSTEM_ERROR;
    }
    *p = o;
    if (c->tail)
        c->tail->next = p;
    else
        c->head = p;
    c->tail = p;
    c->posted++;
    if (hold) hold(o.stream, 1);
    progress(c->g);
    pthread_mutex_unlock(&mu);
    return OK;
}

API ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, int dtype,
                                   int red, struct ncclComm *c, void *stream);
API ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, int dtype,
                                   int red, struct ncclComm *c, void *stream) {
    if (!c || !stream || (dtype != 2 && dtype != 4 && dtype != 7 && dtype != 8) ||
        (red != 0 && red != 2 && red != 4) || (red == 4 && (dtype == 2 || dtype == 4)))
        return INVALID_ARGUMENT; /* the mock reduces 32/64-bit ints and floats */
    size_t b = recvcount * item(dtype);
    op o = {send, recv, recvcount, dtype, red, 1, stream, NULL};
    return enqueue(c, o, b * (size_t)c->g->n, b);
}

API ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, int dtype,
                               struct ncclComm *c, void *stream);
API ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, int dtype,
                               struct ncclComm *c, void *stream) {
    if (!c || !stream || dtype < 1 || dtype > 9 || dtype == 3 || dtype == 5)
        return INVALID_ARGUMENT;
    size_t b = sendcount * item(dtype);
    op o = {send, recv, sendcount, dtype, 0, 2, stream, NULL};
    return enqueue(c, o, b, b * (size_t)c->g->n);
}

API ncclResult_t ncclCommGetAsyncError(struct ncclComm *c, ncclResult_t *e);
API ncclResult_t ncclCommGetAsyncError(struct ncclComm *c, ncclResult_t *e) {
    pthread_mutex_lock(&mu);
    *e = fault == 2 && c->posted ? REMOTE_ERROR : c->async_error;
    pthread_mutex_unlock(&mu);
    return OK;
}

API ncclResult_t ncclCommAbort(struct ncclComm *c);
API ncclResult_t ncclCommAbort(struct ncclComm *c) {
    if (!c) return INVALID_ARGUMENT;
    pthread_mutex_lock(&mu);
    leave(c);
    pthread_mutex_unlock(&mu);
    return OK;
}

/* NCCL's waits for the collectives still queued; here nothing is running to wait for. */
API ncclResult_t ncclCommDestroy(struct ncclComm *c);
API ncclResult_t ncclCommDestroy(struct ncclComm *c) {
    return ncclCommAbort(c);
}
