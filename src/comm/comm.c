/* comm.c — the public communicator API over the transports' tables (comm.h): argument
 * checks, the MEAN division, call numbering, timing and the refusal after a failure, and
 * the routing of a program's collective on device memory to a device transport.
 * A blocking all-reduce is its start and its wait; the MEAN division happens at the wait,
 * when the sum is there. bf16 and f16 travel as f32 on the host transports (half_begin):
 * summed in f32, divided in f32, rounded once to the dtype at the wait. Calls are numbered when
 * they start (the order every rank issues them in), bytes are counted when they complete. */
#include "comm.h"
#include "backend/device.h"
#include "base/half.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double comm_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *kind_name(kiln_reduce_kind k) {
    return k == KILN_REDUCE_SUM ? "sum" : k == KILN_REDUCE_MEAN ? "mean" : "max";
}

static void divide(kiln_dtype t, void *buf, size_t count, int size) {
    if (t == KILN_DTYPE_F32) {
        float *p = buf, d = (float)size;
        for (size_t i = 0; i < count; i++) p[i] /= d;
    } else {
        double *p = buf, d = (double)size;
        for (size_t i = 0; i < count; i++) p[i] /= d;
    }
}

static bool is_half(kiln_dtype t) {
    return t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
}

const char *comm_coll_name(kn_coll coll) {
    return coll == KN_COLL_REDUCE_SCATTER ? "reduce_scatter"
           : coll == KN_COLL_ALL_GATHER   ? "all_gather"
                                          : "all_reduce";
}

static kiln_status check_args(kiln_comm *c, const char *op, kn_coll coll, kiln_dtype t,
                              kiln_reduce_kind k, const void *send, void *recv, int64_t count) {
    kiln_context *ctx = c->ctx;
    bool gather = coll == KN_COLL_ALL_GATHER; /* moves bytes: any dtype, no reduction */
    if (!gather && (unsigned)k > KILN_REDUCE_MAX)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: the reduction %d is not KILN_REDUCE_SUM, _MEAN or _MAX", op, (int)k);
    bool fl = t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || is_half(t);
    if (gather && (t <= KILN_DTYPE_INVALID || !kiln_dtype_itemsize(t)))
        return ctx_error(ctx, KILN_STATUS_DTYPE, "%s: %d is not a dtype", op, (int)t);
    if (!gather && !fl && t != KILN_DTYPE_I32 && t != KILN_DTYPE_I64)
        return ctx_error(ctx, KILN_STATUS_DTYPE,
                         "%s: %s cannot be reduced (f32, f64, bf16, f16, i32, i64)", op,
                         kiln_dtype_name(t));
    if (!gather && k == KILN_REDUCE_MEAN && !fl)
        return ctx_error(ctx, KILN_STATUS_DTYPE,
                         "%s: a mean needs a float dtype (f32, f64, bf16, f16), not %s", op,
                         kiln_dtype_name(t));
    if (count < 0 || (count && (!send || !recv)))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: count %lld with send %p and recv %p", op, (long long)count, send,
                         recv);
    if (coll != KN_COLL_ALL_REDUCE && count % c->size)
        return ctx_error(ctx, KILN_STATUS_SHAPE,
                         "%s: %lld elements do not split into %d equal shards (one per rank)", op,
                         (long long)count, c->size);
    size_t item = kiln_dtype_itemsize(t), whole = (size_t)count * item;
    size_t part = coll == KN_COLL_ALL_REDUCE ? whole : whole / (size_t)c->size;
    size_t ns = coll == KN_COLL_ALL_GATHER ? part : whole,
           nr = coll == KN_COLL_REDUCE_SCATTER ? part : whole;
    const char *s = send, *r = recv;
    if (ns && nr && s < r + nr && r < s + ns)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: send and recv overlap (collectives run out of place)", op);
    if (c->failed)
        return ctx_error(ctx, KILN_STATUS_TIMEOUT,
                         "%s: rank %d of this %s communicator already failed a collective; the "
                         "group cannot go on",
                         op, c->rank, c->ops->kind);
    return KILN_STATUS_OK;
}

/* A bf16/f16 request (after the checks): the transport will reduce f32 copies in r->wide,
 * so that every rank's sum is taken in f32 and rounded once (half_finish), as kiln's own
 * reductions of 16-bit values accumulate in f32. */
static kiln_status half_begin(kiln_comm *c, kn_comm_req *r) {
    size_t n = r->count, m = comm_recv_count(r, c->size);
    r->half = r->dtype, r->half_recv = r->recv, r->dtype = KILN_DTYPE_F32;
    if (!n) return KILN_STATUS_OK;
    r->wide = host_alloc(c->ctx, (n + m) * sizeof(float));
    if (!r->wide) return ctx_oom(c->ctx, r->what, (n + m) * sizeof(float));
    const uint16_t *x = r->send;
    for (size_t i = 0; i < n; i++)
        r->wide[i] = r->half == KILN_DTYPE_BF16 ? kn_bf16_to_f32(x[i]) : kn_f16_to_f32(x[i]);
    r->send = r->wide, r->recv = r->wide + n;
    return KILN_STATUS_OK;
}

/* Rounds the f32 result into the caller's recv (when ok) and frees the block, unless a
 * failed MPI request still owns it: MPI cannot cancel one that timed out (mpi.c), so the
 * block is left to it, as the caller's buffers are. */
static void half_finish(kiln_comm *c, kn_comm_req *r, bool ok) {
    if (!r->half) return;
    uint16_t *y = r->half_recv;
    const float *v = r->recv;
    size_t m = comm_recv_count(r, c->size);
    for (size_t i = 0; ok && r->wide && i < m; i++)
        y[i] = r->half == KILN_DTYPE_BF16 ? kn_f32_to_bf16(v[i]) : kn_f32_to_f16(v[i]);
    bool held = !ok && !strcmp(c->ops->kind, "mpi") && r->u.mpi.active;
    if (r->wide && !held) host_free(c->ctx, r->wide, (r->count + m) * sizeof(float));
    r->wide = NULL;
    r->dtype = r->half, r->recv = r->half_recv, r->half = KILN_DTYPE_INVALID;
}

kiln_status comm_collective_start(kiln_comm *c, kn_coll coll, kiln_dtype t, kiln_reduce_kind k,
                                  const void *send, void *recv, size_t count, const char *node,
                                  kn_comm_req *r) {
    size_t bytes = count * kiln_dtype_itemsize(t);
    memset(r, 0, sizeof *r);
    if (!c || c->size == 1) { /* one replica: every reduction is the value, a shard the whole */
        if (bytes && recv != send) memmove(recv, send, bytes);
        return KILN_STATUS_OK;
    }
    const char *name = comm_coll_name(coll);
    kiln_status s = check_args(c, name, coll, t, k, send, recv, (int64_t)count);
    if (s) return s;
    bool gather = coll == KN_COLL_ALL_GATHER;
    *r = (kn_comm_req){.c = c,
                       .coll = coll,
                       .dtype = t,
                       .kind = gather ? KILN_REDUCE_SUM : k,
                       .op = k == KILN_REDUCE_MAX && !gather ? KILN_REDUCE_MAX : KILN_REDUCE_SUM,
                       .send = send,
                       .recv = recv,
                       .count = count,
                       .t0 = comm_now(),
                       .in_program = node != NULL};
    if (gather)
        snprintf(r->what, sizeof r->what, "collective #%llu, all_gather of %zu %s (%s)",
                 (unsigned long long)c->calls + 1, count, kiln_dtype_name(t),
                 node ? node : "host buffer");
    else
        snprintf(r->what, sizeof r->what, "collective #%llu, %s %s of %zu %s (%s)",
                 (unsigned long long)c->calls + 1, name, kind_name(k), count, kiln_dtype_name(t),
                 node ? node : "host buffer");
    c->calls++; /* numbered at the start: the order every rank issues them in */
    if (!gather && is_half(t) && (s = half_begin(c, r))) { /* this rank misses the call */
        c->failed = true;
        r->c = NULL;
        return s;
    }
    if (c->ops->start)
        s = c->ops->start(c, r);
    else if (coll != KN_COLL_ALL_REDUCE) /* a blocking transport: the whole call is here */
        s = c->ops->shard_host(c, r);
    else
        s = c->ops->all_reduce(c, r->dtype, r->op, r->send, r->recv, count, r->what);
    double took = comm_now() - r->t0;
    c->seconds += took;
    if (r->in_program) c->program += took;
    if (s) {
        half_finish(c, r, false);
        c->failed = true;
        r->c = NULL;
        return s;
    }
    c->in_flight++;
    return KILN_STATUS_OK;
}

kiln_status comm_all_reduce_start(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                                  void *recv, size_t count, const char *node, kn_comm_req *r) {
    return comm_collective_start(c, KN_COLL_ALL_REDUCE, t, k, send, recv, count, node, r);
}

kiln_status comm_wait(kn_comm_req *r) {
    kiln_comm *c = r->c;
    if (!c) return KILN_STATUS_OK;
    double t0 = comm_now();
    kiln_status s = c->ops->start ? c->ops->wait(c, r) : KILN_STATUS_OK;
    r->c = NULL;
    c->in_flight--;
    if (!s && r->kind == KILN_REDUCE_MEAN)
        divide(r->dtype, r->recv, comm_recv_count(r, c->size), c->size);
    half_finish(c, r, !s);
    double t1 = comm_now();
    c->seconds += t1 - t0;
    if (r->in_program) c->program += t1 - t0;
    if (s) {
        c->failed = true;
        return s;
    }
    c->bytes += comm_send_count(r, c->size) * kiln_dtype_itemsize(r->dtype);
    c->span += t1 - r->t0;
    return KILN_STATUS_OK;
}

kiln_status comm_collective_on(kiln_context *ctx, kiln_comm *c, kn_device *dev, kn_coll coll,
                               kiln_dtype t, kiln_reduce_kind k, const void *send, void *recv,
                               size_t count, const char *node) {
    size_t bytes = count * kiln_dtype_itemsize(t);
    const char *name = comm_coll_name(coll);
    bool reduce = coll == KN_COLL_ALL_REDUCE;
    if (!c || (c->size == 1 && !c->ops->all_reduce_device)) /* one replica: a copy */
        return bytes && recv != send ? device_copy(ctx, dev, recv, dev, send, bytes)
                                     : KILN_STATUS_OK;
    if (!(reduce ? (void *)c->ops->all_reduce_device : (void *)c->ops->shard_device))
        return ctx_error(ctx, KILN_STATUS_UNIMPLEMENTED,
                         "%s (%s) on %s: the %s communicator reduces host memory, and "
                         "the host cannot address %s's buffers (kiln_comm_create_nccl makes a "
                         "communicator for GPUs)",
                         name, node, dev->name, c->ops->kind, dev->name);
    if (c->dev != dev)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s (%s): rank %d of the %s communicator is bound to %s, but the "
                         "program runs on %s",
                         name, node, c->rank, c->ops->kind, c->dev ? c->dev->name : "the host",
                         dev->name);
    kiln_status s = check_args(c, name, coll, t, k, send, recv, (int64_t)count);
    if (s) return s;
    char what[160];
    snprintf(what, sizeof what, "collective #%llu, %s %s of %zu %s (%s)",
             (unsigned long long)c->calls + 1, name, coll == KN_COLL_ALL_GATHER ? "" : kind_name(k),
             count, kiln_dtype_name(t), node);
    double t0 = comm_now();
    s = reduce ? c->ops->all_reduce_device(c, t, k, send, recv, count, what)
               : c->ops->shard_device(c, coll, t, k, send, recv, count, what);
    if (s) {
        c->failed = true;
        return s;
    }
    c->calls++;
    c->bytes += coll == KN_COLL_ALL_GATHER ? bytes / (size_t)c->size : bytes;
    c->seconds += comm_now() - t0;
    return KILN_STATUS_OK;
}

kiln_status comm_all_reduce_on(kiln_context *ctx, kiln_comm *c, kn_device *dev, kiln_dtype t,
                               kiln_reduce_kind k, const void *send, void *recv, size_t count,
                               const char *node) {
    return comm_collective_on(ctx, c, dev, KN_COLL_ALL_REDUCE, t, k, send, recv, count, node);
}

kiln_status comm_wait_on(kiln_comm *c, kn_device *dev, const char *name) {
    if (!c || !c->ops->wait_device || c->dev != dev) return KILN_STATUS_OK;
    char what[160];
    snprintf(what, sizeof what, "waiting for collective #%llu of '%s'",
             (unsigned long long)c->calls, name);
    kiln_status s = c->ops->wait_device(c, what);
    if (s) c->failed = true;
    return s;
}

void comm_progress(kn_comm_req *r) {
    kiln_comm *c = r->c;
    if (c && c->ops->progress) c->ops->progress(c, r);
}

kiln_status comm_all_reduce(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                            void *recv, size_t count, const char *node) {
    kn_comm_req r;
    kiln_status s = comm_all_reduce_start(c, t, k, send, recv, count, node, &r);
    return s ? s : comm_wait(&r);
}

/* --------------------------------------------------------------- public ---- */

/* A constructor's timeout: NaN or over 1e9 s is refused; <= 0 means the default. */
static kiln_status group_timeout(kiln_context *ctx, const char *op, double timeout_s, double *out) {
    if (!(timeout_s <= 1e9))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: timeout %g s is not a number of seconds", op, timeout_s);
    *out = timeout_s > 0 ? timeout_s : KN_COMM_DEFAULT_TIMEOUT_S;
    return KILN_STATUS_OK;
}

kiln_status kiln_comm_create_local(kiln_context *ctx, int size, double timeout_s,
                                   kiln_comm **comms) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!comms)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_comm_create_local: comms is NULL");
    if (size < 1 || size > 4096)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_comm_create_local: size %d is outside [1, 4096]", size);
    double timeout = 0;
    kiln_status s = group_timeout(ctx, "kiln_comm_create_local", timeout_s, &timeout);
    if (s) return s;
    for (int i = 0; i < size; i++) comms[i] = NULL;
    return comm_local_group(ctx, size, timeout, comms);
}

bool kiln_comm_mpi_available(void) {
    return comm_mpi_built();
}

kiln_status kiln_comm_create_mpi(kiln_context *ctx, double timeout_s, kiln_comm **out) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_comm_create_mpi: out is NULL");
    *out = NULL;
    if (!comm_mpi_built())
        return ctx_error(ctx, KILN_STATUS_UNIMPLEMENTED,
                         "kiln_comm_create_mpi: this kiln was built without MPI (CMake did not "
                         "find it); install MPICH (sudo apt-get install -y libmpich-dev mpich, "
                         "or scripts/deps.sh as root) and reconfigure");
    double timeout = 0;
    kiln_status s = group_timeout(ctx, "kiln_comm_create_mpi", timeout_s, &timeout);
    if (s) return s;
    kiln_comm *c = host_calloc(ctx, 1, sizeof *c);
    if (!c) return ctx_oom(ctx, "kiln_comm_create_mpi", sizeof *c);
    c->ctx = ctx;
    c->timeout_s = timeout;
    if ((s = comm_mpi_open(c))) {
        host_free(ctx, c, sizeof *c);
        return s;
    }
    *out = c;
    return KILN_STATUS_OK;
}

kiln_status kiln_comm_create_nccl(kiln_context *ctx, int n, const int *devices, double timeout_s,
                                  kiln_comm **comms) {
    const char *op = "kiln_comm_create_nccl";
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!comms || !devices)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", op,
                         comms ? "devices" : "comms");
    if (n < 1 || n > KN_MAX_DEVICES)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: n %d is outside [1, %d]", op, n,
                         KN_MAX_DEVICES);
    double timeout = 0;
    kiln_status s = group_timeout(ctx, op, timeout_s, &timeout);
    if (s) return s;
    for (int i = 0; i < n; i++) comms[i] = NULL;
    return comm_nccl_group(ctx, n, devices, timeout, comms);
}

kiln_status kiln_comm_create_nccl_rank(kiln_context *ctx, kiln_comm *boot, int device,
                                       double timeout_s, kiln_comm **out) {
    const char *op = "kiln_comm_create_nccl_rank";
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out || !boot)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", op,
                         out ? "boot" : "out");
    *out = NULL;
    if (boot->ctx != ctx)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: the bootstrap communicator belongs to another context", op);
    if (boot->dev)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: the bootstrap communicator must be a host one (mpi or local), not "
                         "%s",
                         op, boot->ops->kind);
    double timeout = 0;
    kiln_status s = group_timeout(ctx, op, timeout_s, &timeout);
    if (s) return s;
    kiln_comm *c = host_calloc(ctx, 1, sizeof *c);
    if (!c) return ctx_oom(ctx, op, sizeof *c);
    c->ctx = ctx;
    c->timeout_s = timeout;
    if ((s = comm_nccl_rank(c, boot, device))) {
        host_free(ctx, c, sizeof *c);
        return s;
    }
    *out = c;
    return KILN_STATUS_OK;
}

void kiln_comm_destroy(kiln_comm *c) {
    if (!c) return;
    kiln_context *ctx = c->ctx;
    c->ops->destroy(c);
    host_free(ctx, c, sizeof *c);
}

int kiln_comm_get_rank(const kiln_comm *c) {
    return c ? c->rank : 0;
}

int kiln_comm_get_size(const kiln_comm *c) {
    return c ? c->size : 1;
}

const char *kiln_comm_get_kind(const kiln_comm *c) {
    return c ? c->ops->kind : "none";
}

void kiln_comm_get_stats(const kiln_comm *c, kiln_comm_stats *out) {
    if (!out) return;
    *out = (kiln_comm_stats){0};
    if (!c) return;
    out->calls = c->calls;
    out->bytes = c->bytes;
    out->seconds = c->seconds;
    out->span_seconds = c->span;
    out->program_seconds = c->program;
}

kiln_status kiln_comm_all_reduce(kiln_comm *c, kiln_dtype dtype, kiln_reduce_kind kind,
                                 const void *send, void *recv, int64_t count) {
    if (!c) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_status s =
        check_args(c, "kiln_comm_all_reduce", KN_COLL_ALL_REDUCE, dtype, kind, send, recv, count);
    return s ? s : comm_all_reduce(c, dtype, kind, send, recv, (size_t)count, NULL);
}

/* The host calls of the two sharding collectives take the per-rank count, as MPI's do. */
static kiln_status host_shard_call(kiln_comm *c, const char *op, kn_coll coll, kiln_dtype dtype,
                                   kiln_reduce_kind kind, const void *send, void *recv,
                                   int64_t per_rank) {
    if (!c) return KILN_STATUS_INVALID_ARGUMENT;
    if (per_rank < 0 || per_rank > INT64_MAX / c->size)
        return ctx_error(c->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: count %lld per rank", op,
                         (long long)per_rank);
    int64_t count = per_rank * c->size;
    kiln_status s = check_args(c, op, coll, dtype, kind, send, recv, count);
    kn_comm_req r;
    if (!s) s = comm_collective_start(c, coll, dtype, kind, send, recv, (size_t)count, NULL, &r);
    return s ? s : comm_wait(&r);
}

kiln_status kiln_comm_reduce_scatter(kiln_comm *c, kiln_dtype dtype, kiln_reduce_kind kind,
                                     const void *send, void *recv, int64_t recv_count) {
    return host_shard_call(c, "kiln_comm_reduce_scatter", KN_COLL_REDUCE_SCATTER, dtype, kind, send,
                           recv, recv_count);
}

kiln_status kiln_comm_all_gather(kiln_comm *c, kiln_dtype dtype, const void *send, void *recv,
                                 int64_t send_count) {
    return host_shard_call(c, "kiln_comm_all_gather", KN_COLL_ALL_GATHER, dtype, KILN_REDUCE_SUM,
                           send, recv, send_count);
}

kiln_status kiln_comm_barrier(kiln_comm *c) {
    if (!c) return KILN_STATUS_INVALID_ARGUMENT;
    if (c->failed)
        return ctx_error(c->ctx, KILN_STATUS_TIMEOUT,
                         "kiln_comm_barrier: rank %d of this %s communicator already failed a "
                         "collective; the group cannot go on",
                         c->rank, c->ops->kind);
    if (c->size == 1) return KILN_STATUS_OK;
    char what[64];
    snprintf(what, sizeof what, "collective #%llu, barrier", (unsigned long long)c->calls + 1);
    kiln_status s = c->ops->barrier(c, what);
    if (s)
        c->failed = true;
    else
        c->calls++;
    return s;
}

void kiln_comm_abort(kiln_comm *c, int code) {
    if (c) c->ops->abort(c, code);
    _Exit(code);
}
