/* comm.h — communicators: one replica's handle on a group that meets at collectives.
 *
 * The interface is a table of function pointers (kn_comm_ops), as the backends are, so a
 * transport is one more table: local.c (threads of one process, one CPU device each),
 * mpi.c (processes, MPI_COMM_WORLD; only when CMake found MPI), and NCCL later (GPUs,
 * dlopen'd like the rest of CUDA; docs/scaling.md says what it needs). An implementation
 * reduces with SUM or MAX only; MEAN is SUM then a division here, so every transport gives
 * the same mean. Buffers are host-addressable (a CPU device's memory); a GPU transport
 * would take device pointers and a stream instead.
 *
 * Invariants: every rank of a group calls the same collectives in the same order with the
 * same dtype, count and reduction (a mismatch that the transport can see is an error on
 * every rank); every rank gets bitwise the same result; no call waits longer than the
 * group's timeout; once a call failed, the communicator refuses every later one. */
#ifndef KILN_COMM_H
#define KILN_COMM_H

#include "base/base.h"

typedef struct kn_comm_ops {
    const char *kind; /* "local", "mpi" */
    /* recv = reduction (KILN_REDUCE_SUM or _MAX) of send over the ranks; `what` names the
     * call for messages ("collective #3, all_reduce f32[128] sum"). */
    kiln_status (*all_reduce)(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                              void *recv, size_t count, const char *what);
    kiln_status (*barrier)(kiln_comm *c, const char *what);
    void (*abort)(kiln_comm *c, int code);
    void (*destroy)(kiln_comm *c); /* frees impl (not c) */
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
    double seconds; /* wall time inside collectives */
};

/* The timeout used when none is given. */
#define KN_COMM_DEFAULT_TIMEOUT_S 60.0

/* A collective of a running program (src/exec/run.c): recv = the reduction of send over
 * c's ranks (c NULL: one replica, a copy). `node` names the IR value in messages. */
kiln_status comm_all_reduce(kiln_comm *c, kiln_dtype t, kiln_reduce_kind k, const void *send,
                            void *recv, size_t count, const char *node);

/* The transports' constructors: fill c (rank, size, ops, impl) or set a message. */
kiln_status comm_local_group(kiln_context *ctx, int size, double timeout_s, kiln_comm **comms);
kiln_status comm_mpi_open(kiln_comm *c);
bool comm_mpi_built(void);

/* Seconds on the monotonic clock. */
double comm_now(void);

#endif
