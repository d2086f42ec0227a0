/* nccl.c — the NCCL transport: one rank per GPU, reducing device memory on the device's
 * compute stream (docs/scaling.md, "NCCL").
 *
 * libnccl.so.2 (or KILN_NCCL_LIBRARY) is loaded with dlopen when a communicator is made,
 * and the few entry points used are declared here with nccl.h's documented ABI, so kiln
 * builds without NCCL or the CUDA toolkit and a program that never asks for NCCL never
 * loads it. Like the CUDA driver, a library that loaded is never dlclose'd (NCCL keeps
 * proxy threads and a CUDA runtime of its own); each communicator holds its own table.
 *
 * Two ways to make a group: kiln_comm_create_nccl, several GPUs of one process
 * (ncclCommInitAll, the in-process analogue of the local transport, one thread per rank),
 * and kiln_comm_create_nccl_rank, one GPU per process, NCCL's unique id going from rank 0
 * to the others as an all-reduce over a host communicator (MPI). Each communicator is
 * bound to its device (c->dev): a program's all-reduce is enqueued on that device's compute
 * stream between the kernels before and after it, with no host synchronisation, and
 * run_kernels waits for it in nccl_wait_device. That wait polls the stream and
 * ncclCommGetAsyncError until the group's timeout: NCCL's own kernels wait forever for a
 * peer that died or stalls, and a plain stream synchronisation would too. A timeout or an
 * asynchronous error aborts the NCCL communicator (ncclCommAbort, which also ends its
 * kernels on the stream) and every later call is refused (comm.c's `failed`).
 *
 * Host buffers (kiln_comm_all_reduce, kiln_comm_barrier) are staged through the device:
 * copied in, reduced, waited for, copied out. MEAN on the device is ncclAvg (each rank's
 * value scaled by 1/N before the sum, within rounding of the host transports' sum then
 * division); on the host path comm.c divides, as for every host transport. */
#include "backend/device.h"
#include "comm.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- the ABI ---- */

typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} ncclUniqueId;
typedef int ncclResult_t; /* an enum of nccl.h: C passes it as an int */
#define NCCL_SUCCESS     0
#define NCCL_IN_PROGRESS 7
typedef int ncclDataType_t;
#define NCCL_UINT8    1
#define NCCL_INT32    2
#define NCCL_INT64    4
#define NCCL_FLOAT16  6
#define NCCL_FLOAT32  7
#define NCCL_FLOAT64  8
#define NCCL_BFLOAT16 9 /* NCCL 2.10 on, built with CUDA 11 or later */
typedef int ncclRedOp_t;
#define NCCL_SUM 0
#define NCCL_MAX 2
#define NCCL_AVG 4 /* since NCCL 2.10 */

/* The oldest NCCL kiln accepts: 2.10 (ncclAvg); ncclGetVersion gives major*10000 +
 * minor*100 + patch from 2.9 on. */
#define KN_NCCL_MIN_VERSION 21000

typedef struct nccl_api {
    ncclResult_t (*GetVersion)(int *version);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*CommInitAll)(ncclComm_t *comms, int ndev, const int *devlist);
    ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, ncclDataType_t t,
                              ncclRedOp_t op, ncclComm_t comm, void *stream);
    ncclResult_t (*ReduceScatter)(const void *send, void *recv, size_t recvcount, ncclDataType_t t,
                                  ncclRedOp_t op, ncclComm_t comm, void *stream);
    ncclResult_t (*AllGather)(const void *send, void *recv, size_t sendcount, ncclDataType_t t,
                              ncclComm_t comm, void *stream);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*CommAbort)(ncclComm_t comm);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *error);
    const char *(*GetErrorString)(ncclResult_t r);
    int version;
} nccl_api;

typedef struct nccl_impl {
    nccl_api api;
    ncclComm_t comm;
    bool aborted; /* ncclCommAbort freed comm */
} nccl_impl;

/* ------------------------------------------------------------- loading ---- */

/* Opens NCCL and fills api; the message names the file, the loader's reason or the
 * missing symbol. */
static kiln_status nccl_load(kiln_context *ctx, const char *op, nccl_api *api) {
    const char *name = ctx->config.nccl_library[0] ? ctx->config.nccl_library : "libnccl.so.2";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        return ctx_error(
            ctx, KILN_STATUS_BACKEND,
            "%s: cannot load NCCL (%s%s): %s (pip's nvidia-nccl-cu13 or "
            "nvidia-nccl-cu12 installs it in site-packages/nvidia/nccl/lib: point "
            "KILN_NCCL_LIBRARY at its libnccl.so.2)",
            op, name,
            ctx->config.nccl_library[0] ? ", as KILN_NCCL_LIBRARY or nccl_library named it" : "",
            e ? e : "no reason given");
    }
    static const struct {
        size_t offset;
        const char *name;
    } syms[] = {
        {offsetof(nccl_api, GetVersion), "ncclGetVersion"},
        {offsetof(nccl_api, GetUniqueId), "ncclGetUniqueId"},
        {offsetof(nccl_api, CommInitRank), "ncclCommInitRank"},
        {offsetof(nccl_api, CommInitAll), "ncclCommInitAll"},
        {offsetof(nccl_api, AllReduce), "ncclAllReduce"},
        {offsetof(nccl_api, ReduceScatter), "ncclReduceScatter"},
        {offsetof(nccl_api, AllGather), "ncclAllGather"},
        {offsetof(nccl_api, CommDestroy), "ncclCommDestroy"},
        {offsetof(nccl_api, CommAbort), "ncclCommAbort"},
        {offsetof(nccl_api, CommGetAsyncError), "ncclCommGetAsyncError"},
        {offsetof(nccl_api, GetErrorString), "ncclGetErrorString"},
    };
    *api = (nccl_api){0};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *f = dlsym(lib, syms[i].name);
        if (!f) {
            dlclose(lib);
            return ctx_error(ctx, KILN_STATUS_BACKEND,
                             "%s: %s has no %s (not NCCL, or a version older than 2.10)", op, name,
                             syms[i].name);
        }
        memcpy((char *)api + syms[i].offset, &f, sizeof f);
    }
    ncclResult_t r = api->GetVersion(&api->version);
    if (r || api->version < KN_NCCL_MIN_VERSION) {
        int v = api->version;
        dlclose(lib);
        if (r)
            return ctx_error(ctx, KILN_STATUS_BACKEND, "%s: ncclGetVersion of %s failed (%d)", op,
                             name, r);
        return ctx_error(ctx, KILN_STATUS_BACKEND,
                         "%s: %s is NCCL %d.%d.%d; kiln needs 2.10 or newer (ncclAvg)", op, name,
                         v / 10000, v / 100 % 100, v % 100);
    }
    return KILN_STATUS_OK; /* stays loaded: see the top of the file */
}

/* The GPU of context device `id`, its context made current on this thread (NCCL's runtime
 * works in the device's primary context, which the CUDA backend uses too). */
static kiln_status nccl_device(kiln_context *ctx, const char *op, int id, kn_device **out) {
    kn_device *d = device_get(ctx, id, op);
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    if (!d->backend->compute_stream)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: device %d (%s) is not a GPU: NCCL reduces GPU memory (CPU devices "
                         "take kiln_comm_create_local or kiln_comm_create_mpi)",
                         op, id, d->name);
    void *stream;
    kiln_status s = d->backend->compute_stream(d->state, d->index, &stream);
    if (!s) *out = d;
    return s;
}

static const char *nccl_text(const nccl_api *api, ncclResult_t r) {
    const char *t = api->GetErrorString ? api->GetErrorString(r) : NULL;
    return t ? t : "unknown ncclResult_t";
}

static kiln_status nccl_fail(kiln_comm *c, ncclResult_t r, const char *call, const char *what) {
    const nccl_impl *m = c->impl;
    return ctx_error(c->ctx, KILN_STATUS_BACKEND, "%s on rank %d of %d (nccl, %s): %s failed: %s",
                     what, c->rank, c->size, c->dev->name, call, nccl_text(&m->api, r));
}

/* Ends the NCCL communicator now: its kernels stop, and it is never used again. */
static void nccl_abort_comm(nccl_impl *m) {
    if (m->aborted) return;
    m->aborted = true;
    m->api.CommAbort(m->comm);
}

/* ---------------------------------------------------------- collectives ---- */

static ncclDataType_t nccl_type(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return NCCL_FLOAT32;
    case KILN_DTYPE_F64: return NCCL_FLOAT64;
    case KILN_DTYPE_I32: return NCCL_INT32;
    case KILN_DTYPE_F16: return NCCL_FLOAT16;
    case KILN_DTYPE_BF16: return NCCL_BFLOAT16; /* device buffers: NCCL reduces them itself */
    default: return NCCL_INT64;
    }
}

static kiln_status nccl_all_reduce_device(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k,
                                          const void *send, void *recv, size_t count,
                                          const char *what) {
    nccl_impl *m = c->impl;
    kn_device *d = c->dev;
    void *stream = NULL;
    kiln_status s = d->backend->compute_stream(d->state, d->index, &stream);
    if (s) return s;
    ncclRedOp_t op = k == KILN_REDUCE_SUM ? NCCL_SUM : k == KILN_REDUCE_MAX ? NCCL_MAX : NCCL_AVG;
    ncclResult_t r = m->api.AllReduce(send, recv, count, nccl_type(t), op, m->comm, stream);
    return r ? nccl_fail(c, r, "ncclAllReduce", what) : KILN_STATUS_OK;
}

/* ncclReduceScatter (recvcount: a shard) or ncclAllGather (as bytes, ncclUint8: any
 * dtype), enqueued on the compute stream as the all-reduce is. */
static kiln_status nccl_shard_device(kiln_comm *c, kn_coll coll, kiln_dtype t, kiln_reduce_kind k,
                                     const void *send, void *recv, size_t count, const char *what) {
    nccl_impl *m = c->impl;
    kn_device *d = c->dev;
    void *stream = NULL;
    kiln_status s = d->backend->compute_stream(d->state, d->index, &stream);
    if (s) return s;
    size_t per = count / (size_t)c->size;
    if (coll == KN_COLL_ALL_GATHER) {
        ncclResult_t r =
            m->api.AllGather(send, recv, per * kiln_dtype_itemsize(t), NCCL_UINT8, m->comm, stream);
        return r ? nccl_fail(c, r, "ncclAllGather", what) : KILN_STATUS_OK;
    }
    ncclRedOp_t op = k == KILN_REDUCE_SUM ? NCCL_SUM : k == KILN_REDUCE_MAX ? NCCL_MAX : NCCL_AVG;
    ncclResult_t r = m->api.ReduceScatter(send, recv, per, nccl_type(t), op, m->comm, stream);
    return r ? nccl_fail(c, r, "ncclReduceScatter", what) : KILN_STATUS_OK;
}

/* Polls the stream and NCCL's asynchronous error until the stream is idle or the deadline:
 * spins briefly (a small all-reduce between GPUs of one machine takes microseconds), then
 * sleeps in growing steps up to 1 ms. */
static kiln_status nccl_wait_device(kiln_comm *c, const char *what) {
    nccl_impl *m = c->impl;
    kn_device *d = c->dev;
    double deadline = comm_now() + c->timeout_s;
    long nap = 1000; /* ns */
    for (int spin = 0;; spin++) {
        ncclResult_t ae = NCCL_SUCCESS, r = m->api.CommGetAsyncError(m->comm, &ae);
        if (r || (ae != NCCL_SUCCESS && ae != NCCL_IN_PROGRESS)) {
            nccl_abort_comm(m);
            return ctx_error(c->ctx, KILN_STATUS_BACKEND,
                             "%s on rank %d of %d (nccl, %s): NCCL reports %s; the communicator "
                             "was aborted and the group cannot go on",
                             what, c->rank, c->size, d->name, nccl_text(&m->api, r ? r : ae));
        }
        bool done = false;
        kiln_status s = d->backend->stream_done(d->state, d->index, &done);
        if (s) return s;
        if (done) return KILN_STATUS_OK;
        if (comm_now() > deadline) {
            nccl_abort_comm(m);
            return ctx_error(c->ctx, KILN_STATUS_TIMEOUT,
                             "%s on rank %d of %d (nccl, %s): not finished after %.3g s: a rank "
                             "died or stalls; the NCCL communicator was aborted (ncclCommAbort)",
                             what, c->rank, c->size, d->name, c->timeout_s);
        }
        if (spin < 200) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (nap < 1000000) nap *= 2;
    }
}

/* Host buffers: through a staging block of the device (two 256-byte aligned halves). */
static kiln_status nccl_all_reduce(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                                   void *recv, size_t count, const char *what) {
    kn_device *d = c->dev;
    size_t bytes = count * kiln_dtype_itemsize(t), half = (bytes + 255) & ~(size_t)255;
    if (!bytes) return KILN_STATUS_OK;
    void *buf = NULL;
    kiln_status s = device_alloc(d, 2 * half, "nccl staging", &buf);
    if (s) return s;
    char *dsend = buf, *drecv = dsend + half;
    s = device_copy_h2d(d, dsend, send, bytes);
    if (!s) s = nccl_all_reduce_device(c, t, k, dsend, drecv, count, what);
    if (!s) s = nccl_wait_device(c, what);
    if (!s) s = device_copy_d2h(d, recv, drecv, bytes);
    device_free(d, buf);
    return s;
}

/* A host reduce-scatter or all-gather: staged through the device as the all-reduce is. */
static kiln_status nccl_shard_host(kiln_comm *c, const kn_comm_req *q) {
    kn_device *d = c->dev;
    size_t item = kiln_dtype_itemsize(q->dtype), whole = q->count * item;
    size_t nsend = comm_send_count(q, c->size) * item, nrecv = comm_recv_count(q, c->size) * item;
    size_t half = (whole + 255) & ~(size_t)255;
    if (!whole) return KILN_STATUS_OK;
    void *buf = NULL;
    kiln_status s = device_alloc(d, 2 * half, "nccl staging", &buf);
    if (s) return s;
    char *dsend = buf, *drecv = dsend + half;
    s = device_copy_h2d(d, dsend, q->send, nsend);
    if (!s) s = nccl_shard_device(c, q->coll, q->dtype, q->op, dsend, drecv, q->count, q->what);
    if (!s) s = nccl_wait_device(c, q->what);
    if (!s) s = device_copy_d2h(d, q->recv, drecv, nrecv);
    device_free(d, buf);
    return s;
}

static kiln_status nccl_barrier(kiln_comm *c, const char *what) {
    int32_t one = 1, all = 0;
    return nccl_all_reduce(c, KILN_DTYPE_I32, KILN_REDUCE_SUM, &one, &all, 1, what);
}

static void nccl_abort(kiln_comm *c, int code) {
    (void)code;
    nccl_abort_comm(c->impl); /* peers then see a remote error rather than waiting */
    fflush(NULL);
}

/* A communicator that failed may have collectives that never end on its stream:
 * ncclCommDestroy would wait for them, ncclCommAbort does not. */
static void nccl_destroy(kiln_comm *c) {
    nccl_impl *m = c->impl;
    if (c->failed)
        nccl_abort_comm(m);
    else if (!m->aborted)
        m->api.CommDestroy(m->comm);
    host_free(c->ctx, m, sizeof *m);
}

static const kn_comm_ops nccl_ops = {
    .kind = "nccl",
    .all_reduce = nccl_all_reduce,
    .barrier = nccl_barrier,
    .abort = nccl_abort,
    .destroy = nccl_destroy,
    .all_reduce_device = nccl_all_reduce_device,
    .wait_device = nccl_wait_device,
    .shard_host = nccl_shard_host,
    .shard_device = nccl_shard_device,
};

/* ---------------------------------------------------------- constructors ---- */

kiln_status comm_nccl_group(kiln_context *ctx, int n, const int *devices, double timeout_s,
                            kiln_comm **comms) {
    const char *op = "kiln_comm_create_nccl";
    kn_device *devs[KN_MAX_DEVICES];
    int ordinals[KN_MAX_DEVICES];
    kiln_status s = KILN_STATUS_OK;
    for (int i = 0; i < n && !s; i++) {
        if ((s = nccl_device(ctx, op, devices[i], &devs[i]))) break;
        ordinals[i] = devs[i]->index; /* the CUDA backend's device i is CUDA ordinal i */
        for (int j = 0; j < i; j++)
            if (devs[j] == devs[i])
                return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                                 "%s: devices[%d] and devices[%d] are both %s: NCCL puts one rank "
                                 "on a GPU",
                                 op, j, i, devs[i]->name);
    }
    nccl_api api;
    if (s || (s = nccl_load(ctx, op, &api))) return s;
    ncclComm_t raw[KN_MAX_DEVICES];
    ncclResult_t r = api.CommInitAll(raw, n, ordinals);
    if (r) {
        char names[256] = "";
        for (int i = 0, k = 0; i < n && k < (int)sizeof names - 40; i++)
            k +=
                snprintf(names + k, sizeof names - (size_t)k, "%s%s", i ? ", " : "", devs[i]->name);
        return ctx_error(ctx, KILN_STATUS_BACKEND, "%s: ncclCommInitAll over %s failed: %s", op,
                         names, nccl_text(&api, r));
    }
    int made = 0;
    for (; made < n; made++) {
        kiln_comm *c = host_calloc(ctx, 1, sizeof *c);
        nccl_impl *m = c ? host_calloc(ctx, 1, sizeof *m) : NULL;
        if (!m) {
            if (c) host_free(ctx, c, sizeof *c);
            break;
        }
        *m = (nccl_impl){.api = api, .comm = raw[made]};
        *c = (kiln_comm){.ctx = ctx,
                         .ops = &nccl_ops,
                         .impl = m,
                         .rank = made,
                         .size = n,
                         .timeout_s = timeout_s,
                         .dev = devs[made]};
        comms[made] = c;
    }
    if (made == n) return KILN_STATUS_OK;
    for (int i = 0; i < made; i++) {
        host_free(ctx, comms[i]->impl, sizeof(nccl_impl));
        host_free(ctx, comms[i], sizeof *comms[i]);
        comms[i] = NULL;
    }
    for (int i = 0; i < n; i++) api.CommDestroy(raw[i]);
    return ctx_oom(ctx, "kiln_comm_create_nccl: a communicator",
                   sizeof(kiln_comm) + sizeof(nccl_impl));
}

/* Every rank of boot takes part in the exchange even when its own set-up failed, so that
 * none waits for it: word 16 counts the ranks that failed, words 0..15 carry rank 0's id. */
kiln_status comm_nccl_rank(kiln_comm *c, kiln_comm *boot, int device) {
    kiln_context *ctx = c->ctx;
    const char *op = "kiln_comm_create_nccl_rank";
    kn_device *dev = NULL;
    nccl_impl *m = host_calloc(ctx, 1, sizeof *m);
    kiln_status s = m ? KILN_STATUS_OK : ctx_oom(ctx, op, sizeof *m);
    if (!s) s = nccl_device(ctx, op, device, &dev);
    if (!s) s = nccl_load(ctx, op, &m->api);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (!s && boot->rank == 0) {
        ncclResult_t r = m->api.GetUniqueId(&id);
        if (r)
            s = ctx_error(ctx, KILN_STATUS_BACKEND, "%s: ncclGetUniqueId failed: %s", op,
                          nccl_text(&m->api, r));
    }
    int64_t mine[17] = {0}, all[17];
    _Static_assert(sizeof id == 16 * sizeof(int64_t), "the unique id is 16 words");
    memcpy(mine, &id, sizeof id);
    mine[16] = s != KILN_STATUS_OK;
    char keep[KN_ERR_MAX];
    if (s) kiln_last_error_copy(ctx, keep, sizeof keep); /* the exchange may overwrite it */
    kiln_status x =
        comm_all_reduce(boot, KILN_DTYPE_I64, KILN_REDUCE_SUM, mine, all, 17, "NCCL's unique id");
    if (s || x) {
        if (s) ctx_error(ctx, s, "%s", keep);
        if (m) host_free(ctx, m, sizeof *m);
        return s ? s : x;
    }
    if (all[16]) {
        host_free(ctx, m, sizeof *m);
        return ctx_error(ctx, KILN_STATUS_BACKEND,
                         "%s: %lld of the %d ranks could not set NCCL up (their messages say why)",
                         op, (long long)all[16], boot->size);
    }
    memcpy(&id, all, sizeof id);
    void *stream; /* makes the device's context current for NCCL's initialisation */
    if ((s = dev->backend->compute_stream(dev->state, dev->index, &stream))) {
        host_free(ctx, m, sizeof *m);
        return s;
    }
    ncclResult_t r = m->api.CommInitRank(&m->comm, boot->size, id, boot->rank);
    if (r) {
        s = ctx_error(ctx, KILN_STATUS_BACKEND,
                      "%s: ncclCommInitRank (rank %d of %d on %s) failed: %s", op, boot->rank,
                      boot->size, dev->name, nccl_text(&m->api, r));
        host_free(ctx, m, sizeof *m);
        return s;
    }
    c->ops = &nccl_ops;
    c->impl = m;
    c->rank = boot->rank;
    c->size = boot->size;
    c->dev = dev;
    return KILN_STATUS_OK;
}
