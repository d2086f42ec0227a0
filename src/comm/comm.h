/* comm.h — communicators: one replica's handle on a group that meets at collectives.
 *
 * The interface is a table of function pointers (kn_comm_ops), as the backends are, so a
 * transport is one more table: local.c (threads of one process, one CPU device each),
 * mpi.c (processes, MPI_COMM_WORLD; only when CMake found MPI) and nccl.c (GPUs, one rank
 * per GPU, libnccl dlopen'd like the rest of CUDA). A host transport reduces with SUM or
 * MAX only; MEAN is SUM then a division here, so every host transport gives the same mean.
 * Host buffers are host-addressable (a CPU device's memory). A device transport (NCCL) is
 * bound to one device (`dev`) and also reduces that device's memory: all_reduce_device
 * enqueues on the device's compute stream and returns, and wait_device is where a run
 * that enqueued collectives waits, bounded by the group's timeout.
 *
 * Invariants: every rank of a group calls the same collectives in the same order with the
 * same dtype, count and reduction (a mismatch that the transport can see is an error on
 * every rank); every rank gets bitwise the same result; no call waits longer than the
 * group's timeout; once a call failed, the communicator refuses every later one.
 *
 * Nonblocking: an all-reduce may be started (comm_all_reduce_start) and completed later
 * (comm_wait), with other work and other collectives started in between, so a program's
 * all-reduces overlap its remaining kernels (run.c). Ranks start their collectives in the
 * same order; they may wait for them in any order. */
#ifndef KILN_COMM_H
#define KILN_COMM_H

#include "base/base.h"

struct kn_device;

/* What a request does. count (below) is always the number of elements of the whole
 * buffer, the larger of the two: all_reduce reduces count into count; reduce_scatter
 * reduces count and gives rank r the r-th of `size` equal shards (count / size elements;
 * count must divide); all_gather concatenates every rank's count / size elements into
 * count, in rank order (any dtype: it only moves bytes). */
typedef enum kn_coll {
    KN_COLL_ALL_REDUCE = 0,
    KN_COLL_REDUCE_SCATTER,
    KN_COLL_ALL_GATHER,
} kn_coll;

/* One all-reduce in flight, from comm_all_reduce_start to comm_wait. The storage is the
 * caller's (run.c makes one per collective kernel before the run starts, so starting a
 * collective never allocates) and must stay put, with the send and recv buffers, until
 * comm_wait returns. The transports keep their state in the union. */
typedef struct kn_comm_req {
    kiln_comm *c; /* NULL: nothing in flight (one replica: done at the start) */
    kn_coll coll; /* which collective (count is the whole buffer's elements: kn_coll) */
    /* what the transport reduces: what was asked, but f32 for bf16 and f16, which travel
     * widened (below) */
    kiln_dtype dtype;
    kiln_reduce_kind kind; /* as asked: MEAN divides at the wait */
    kiln_reduce_kind op;   /* what the transport reduces with: SUM or MAX */
    const void *send;      /* the transport's buffers: the caller's, or `wide` */
    void *recv;
    size_t count;
    /* bf16/f16 on a host transport: the dtype asked, the caller's recv, and one host block
     * of 2 * count floats (send widened, then the f32 result), so the sum is taken in f32
     * and rounded once to the dtype at the wait, after a MEAN's division. The block is
     * allocated at the start (the one allocation a start makes) and freed at the wait. */
    kiln_dtype half;
    void *half_recv;
    float *wide;
    double t0;       /* when it started */
    bool in_program; /* a compiled program's (node given): counted in `program` */
    char what[160];  /* "collective #3, all_reduce sum of 128 f32 (%7 of 'step')" */
    union {
        struct {                      /* local.c: the request is the rank's post for its round */
            struct kn_comm_req *next; /* this rank's requests in flight, oldest first */
            struct kn_comm_req *round_next; /* the next rank's request of the same round */
            uint64_t seq;                   /* the round: the rank's collectives numbered */
            bool linked;                    /* round_next is set for the whole round */
            bool claimed, reduced;          /* slice `rank` of the round: taken, written */
            bool complete;                  /* every slice written: recv is the result */
        } local;
        struct {         /* mpi.c */
            int handle;  /* MPI_Request (an int in MPICH's ABI) */
            size_t at;   /* elements whose piece was issued before the current one */
            bool active; /* handle is a request MPI still owns */
            bool failed; /* issuing the next piece failed in progress (the message is set) */
        } mpi;
    } u;
} kn_comm_req;

typedef struct kn_comm_ops {
    const char *kind; /* "local", "mpi", "nccl" */
    /* The nonblocking pair: start posts r (r->op is SUM or MAX; r->what names the call in
     * messages) and returns at once; wait returns once r->recv holds the reduction over
     * the ranks, or fails at the group's timeout. After a failed start, wait is not called;
     * a wait that fails has still stopped every use of r's buffers by the transport that
     * it can stop (an MPI request that timed out cannot be cancelled: comm.c marks the
     * communicator failed). NULL start: the transport only has the blocking all_reduce,
     * which comm.c then calls at the start. */
    kiln_status (*start)(kiln_comm *c, kn_comm_req *r);
    kiln_status (*wait)(kiln_comm *c, kn_comm_req *r);
    /* Optional: lets the transport move r along without blocking (MPI progresses a
     * nonblocking collective only inside MPI calls of the process); an error here is
     * reported again by the wait. */
    void (*progress)(kiln_comm *c, kn_comm_req *r);
    /* recv = reduction (KILN_REDUCE_SUM or _MAX) of send over the ranks; `what` names the
     * call for messages ("collective #3, all_reduce f32[128] sum"). Optional when start
     * and wait exist (comm.c does start + wait). */
    kiln_status (*all_reduce)(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                              void *recv, size_t count, const char *what);
    kiln_status (*barrier)(kiln_comm *c, const char *what);
    void (*abort)(kiln_comm *c, int code);
    void (*destroy)(kiln_comm *c); /* frees impl (not c) */
    /* Optional (a device transport); NULL: host memory only. recv = reduction (SUM, MAX or
     * MEAN) of send, `count` elements at device pointers of c->dev, enqueued on its compute
     * stream after the work queued there; returns once enqueued. */
    kiln_status (*all_reduce_device)(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k,
                                     const void *send, void *recv, size_t count, const char *what);
    /* Required with all_reduce_device: returns once the work queued on c->dev's compute
     * stream has finished; KILN_STATUS_TIMEOUT after the group's timeout (the group is then
     * aborted), a transport error as soon as the transport reports one. */
    kiln_status (*wait_device)(kiln_comm *c, const char *what);
    /* Optional, for a transport without start: a blocking reduce-scatter or all-gather of
     * r (r->coll; host buffers). */
    kiln_status (*shard_host)(kiln_comm *c, const kn_comm_req *r);
    /* Optional (a device transport): reduce-scatter or all-gather (kn_coll; k SUM, MAX or
     * MEAN for the reduce-scatter) of device pointers, enqueued as all_reduce_device is.
     * count: the whole buffer's elements. */
    kiln_status (*shard_device)(kiln_comm *c, kn_coll coll, kiln_dtype t, kiln_reduce_kind k,
                                const void *send, void *recv, size_t count, const char *what);
} kn_comm_ops;

struct kiln_comm {
    kiln_context *ctx;
    const kn_comm_ops *ops;
    void *impl;
    int rank, size;
    double timeout_s;
    bool failed;    /* a call failed: later ones are refused */
    uint64_t calls; /* collectives made, numbering them in messages */
    uint64_t bytes; /* bytes reduced (this rank's send size, summed) */
    /* wall time inside collective calls: starts, waits, blocking calls (a device
     * collective's: the time to enqueue it) */
    double seconds;
    double span;           /* per all-reduce, from its start to its wait's return, summed */
    double program;        /* the part of seconds spent by compiled programs' collectives */
    int in_flight;         /* all-reduces started and not yet waited for */
    struct kn_device *dev; /* a device transport's device; NULL: a host transport */
};

/* The timeout used when none is given. */
#define KN_COMM_DEFAULT_TIMEOUT_S 60.0

/* A collective of a running program (src/runtime/run.c): recv = the reduction of send over
 * c's ranks (c NULL: one replica, a copy). `node` names the IR value in messages. */
kiln_status comm_all_reduce(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                            void *recv, size_t count, const char *node);

/* A collective of a running program on a device whose memory the host cannot address
 * (dev's backend has copy_h2d): enqueued on dev by c's device transport; c NULL (or a host
 * transport of one rank): a device copy. Sets the message naming the transport when c
 * cannot reduce device memory. */
kiln_status comm_all_reduce_on(kiln_context *ctx, kiln_comm *c, struct kn_device *dev, kiln_dtype t,
                               kiln_reduce_kind k, const void *send, void *recv, size_t count,
                               const char *node);
/* After a run of program `name` enqueued collectives on dev: waits for them through the
 * device transport (bounded by the group's timeout); KILN_STATUS_OK at once for a host
 * transport. */
kiln_status comm_wait_on(kiln_comm *c, struct kn_device *dev, const char *name);
/* The same in two halves: the start posts the all-reduce and returns, comm_wait (on the
 * same thread, before send or recv are touched again) completes it. Every started request
 * must be waited for, also after an error elsewhere: the other ranks need this rank's part.
 * A start that fails leaves nothing in flight (r->c NULL; comm_wait of it is a no-op). */
kiln_status comm_all_reduce_start(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                                  void *recv, size_t count, const char *node, kn_comm_req *r);
kiln_status comm_wait(kn_comm_req *r);
/* Between kernels: gives the transport of r (in flight) a chance to progress. */
void comm_progress(kn_comm_req *r);

/* The same for any collective (kn_coll): comm_all_reduce_start is this with
 * KN_COLL_ALL_REDUCE. count is the whole buffer's elements; one replica: a copy. */
kiln_status comm_collective_start(kiln_comm *c, kn_coll coll, kiln_dtype t, kiln_reduce_kind k,
                                  const void *send, void *recv, size_t count, const char *node,
                                  kn_comm_req *r);
kiln_status comm_collective_on(kiln_context *ctx, kiln_comm *c, struct kn_device *dev, kn_coll coll,
                               kiln_dtype t, kiln_reduce_kind k, const void *send, void *recv,
                               size_t count, const char *node);
/* "all_reduce", "reduce_scatter", "all_gather". */
const char *comm_coll_name(kn_coll coll);
/* Elements of r's send and recv buffers (count or count / size, by r->coll). */
static inline size_t comm_send_count(const kn_comm_req *r, int size) {
    return r->coll == KN_COLL_ALL_GATHER ? r->count / (size_t)size : r->count;
}
static inline size_t comm_recv_count(const kn_comm_req *r, int size) {
    return r->coll == KN_COLL_REDUCE_SCATTER ? r->count / (size_t)size : r->count;
}

/* The transports' constructors: fill c (rank, size, ops, impl) or set a message. */
kiln_status comm_local_group(kiln_context *ctx, int size, double timeout_s, kiln_comm **comms);
kiln_status comm_mpi_open(kiln_comm *c);
bool comm_mpi_built(void);
/* NCCL (nccl.c): ranks of this process on `devices` (context device ids of GPUs), or one
 * rank on `device` whose group and rank are those of `boot` (a host communicator that
 * carries NCCL's unique id). Each fills whole kiln_comm structs (allocated by the caller). */
kiln_status comm_nccl_group(kiln_context *ctx, int n, const int *devices, double timeout_s,
                            kiln_comm **comms);
kiln_status comm_nccl_rank(kiln_comm *c, kiln_comm *boot, int device);

/* Seconds on the monotonic clock. */
double comm_now(void);

#endif
