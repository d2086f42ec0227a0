/* mpi.c — the MPI transport: one rank per process over a duplicate of MPI_COMM_WORLD
 * (built when CMake found MPICH: KILN_HAVE_MPI; otherwise only comm_mpi_built, false).
 *
 * libkiln does not link MPI: kiln_comm_create_mpi loads it with dlopen (the library CMake
 * found, KILN_MPI_LIBRARY, then MPICH's soname), as the CUDA backend loads the driver, so
 * a program that never asks for MPI never loads it (nor UCX's memory hooks, which crash
 * sanitizer runtimes). Only MPICH's ABI allows this: its handles (MPI_COMM_WORLD,
 * MPI_FLOAT, MPI_SUM, ...) are integer constants of mpi.h, where Open MPI's are addresses
 * of library symbols. The library stays loaded once opened: MPI cannot be unloaded after
 * MPI_Init, and the entry points live in each communicator's own table.
 *
 * MPI's blocking collectives wait forever for a dead or stalled peer, so every collective
 * is the nonblocking one (MPI_Iallreduce, MPI_Ibarrier): an all-reduce's start issues it,
 * its wait polls it with MPI_Test until it completes or the group's deadline passes
 * (counted from the wait); between kernels the run calls MPI_Test on it once (progress),
 * since MPICH moves a nonblocking collective only inside MPI calls of the process; then the call
 * fails with KILN_STATUS_TIMEOUT and the communicator is marked failed (the request cannot be
 * cancelled, so it is neither freed nor is MPI finalised afterwards). Errors are returned, not
 * fatal (MPI_ERRORS_RETURN on the duplicate), and become KILN_STATUS_BACKEND with MPI's text. MPI
 * is initialised with MPI_THREAD_FUNNELED when the program has not done so, and finalised by the
 * communicator that initialised it. */
#include "comm.h"

#ifndef KILN_HAVE_MPI

bool comm_mpi_built(void) {
    return false;
}

kiln_status comm_mpi_open(kiln_comm *c) {
    return ctx_error(c->ctx, KILN_STATUS_UNIMPLEMENTED, "kiln was built without MPI");
}

#else

#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef MPICH_VERSION
#error "kiln's MPI transport loads MPI at run time, which needs MPICH's ABI (CMake checks this)"
#endif
_Static_assert(sizeof(MPI_Request) == sizeof(int), "kn_comm_req keeps an MPI_Request in an int");

/* The MPI entry points kiln calls, from the loaded library. */
typedef struct mpi_api {
    int (*Initialized)(int *);
    int (*Finalized)(int *);
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Finalize)(void);
    int (*Abort)(MPI_Comm, int);
    int (*Error_string)(int, char *, int *);
    int (*Comm_dup)(MPI_Comm, MPI_Comm *);
    int (*Comm_free)(MPI_Comm *);
    int (*Comm_set_errhandler)(MPI_Comm, MPI_Errhandler);
    int (*Comm_rank)(MPI_Comm, int *);
    int (*Comm_size)(MPI_Comm, int *);
    int (*Iallreduce)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
    int (*Ireduce_scatter_block)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm,
                                 MPI_Request *);
    int (*Iallgather)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm,
                      MPI_Request *);
    int (*Ibarrier)(MPI_Comm, MPI_Request *);
    int (*Test)(MPI_Request *, int *, MPI_Status *);
} mpi_api;

typedef struct mpi_impl {
    mpi_api api;
    MPI_Comm comm;
    bool initialised_here;
} mpi_impl;

bool comm_mpi_built(void) {
    return true;
}

/* Opens MPI and fills api; the message names the libraries tried or the missing symbol. */
static kiln_status mpi_load(kiln_comm *c, mpi_api *api) {
    static const char *const libs[] = {KILN_MPI_LIBRARY, "libmpich.so.12", "libmpi.so.12"};
    char tried[512] = "", why[256] = "";
    void *lib = NULL;
    for (size_t i = 0; !lib && i < sizeof libs / sizeof libs[0]; i++) {
        lib = dlopen(libs[i], RTLD_NOW | RTLD_GLOBAL); /* GLOBAL: MPICH loads plugins */
        if (lib) break;
        const char *e = dlerror();
        size_t at = strlen(tried);
        snprintf(tried + at, sizeof tried - at, "%s%s", i ? ", " : "", libs[i]);
        snprintf(why, sizeof why, "%s", e ? e : "");
    }
    if (!lib)
        return ctx_error(c->ctx, KILN_STATUS_BACKEND,
                         "kiln_comm_create_mpi: cannot load MPI (tried %s): %s (install MPICH: "
                         "apt-get install -y libmpich12 mpich)",
                         tried, why);
#define MPI_SYM(name)                                                                              \
    do {                                                                                           \
        *(void **)&api->name = dlsym(lib, "MPI_" #name);                                           \
        if (!api->name)                                                                            \
            return ctx_error(c->ctx, KILN_STATUS_BACKEND,                                          \
                             "kiln_comm_create_mpi: the MPI library has no MPI_" #name);           \
    } while (0)
    MPI_SYM(Initialized);
    MPI_SYM(Finalized);
    MPI_SYM(Init_thread);
    MPI_SYM(Finalize);
    MPI_SYM(Abort);
    MPI_SYM(Error_string);
    MPI_SYM(Comm_dup);
    MPI_SYM(Comm_free);
    MPI_SYM(Comm_set_errhandler);
    MPI_SYM(Comm_rank);
    MPI_SYM(Comm_size);
    MPI_SYM(Iallreduce);
    MPI_SYM(Ireduce_scatter_block);
    MPI_SYM(Iallgather);
    MPI_SYM(Ibarrier);
    MPI_SYM(Test);
#undef MPI_SYM
    return KILN_STATUS_OK;
}

static kiln_status mpi_fail(kiln_comm *c, const mpi_api *api, int rc, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (api->Error_string(rc, text, &n) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
    return ctx_error(c->ctx, KILN_STATUS_BACKEND, "%s on rank %d of %d (mpi): %s", what, c->rank,
                     c->size, text);
}

/* Polls req until done or the deadline: spins briefly (a collective between processes of
 * one machine completes in microseconds), then sleeps in growing steps up to 1 ms. */
static kiln_status wait_request(kiln_comm *c, MPI_Request *req, const char *what) {
    const mpi_api *api = &((mpi_impl *)c->impl)->api;
    double deadline = comm_now() + c->timeout_s;
    long nap = 1000; /* ns */
    for (int spin = 0;; spin++) {
        int done = 0, rc = api->Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(c, api, rc, what);
        if (done) return KILN_STATUS_OK;
        if (comm_now() > deadline)
            return ctx_error(c->ctx, KILN_STATUS_TIMEOUT,
                             "%s on rank %d of %d (mpi): not finished after %.3g s: a rank died "
                             "or stalls (kiln_comm_abort ends the job)",
                             what, c->rank, c->size, c->timeout_s);
        if (spin < 200) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, nap};
        nanosleep(&ts, NULL);
        if (nap < 1000000) nap *= 2;
    }
}

static MPI_Datatype mpi_type(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return MPI_FLOAT;
    case KILN_DTYPE_F64: return MPI_DOUBLE;
    case KILN_DTYPE_I32: return MPI_INT32_T;
    default: return MPI_INT64_T;
    }
}

/* Issues the piece of r that starts at element r->u.mpi.at (MPI counts are int: larger
 * buffers go in pieces, one in flight at a time). */
static kiln_status issue_shard(kiln_comm *c, kn_comm_req *r);

static kiln_status issue_piece(kiln_comm *c, kn_comm_req *r) {
    mpi_impl *m = c->impl;
    if (r->coll != KN_COLL_ALL_REDUCE) return issue_shard(c, r);
    size_t item = kiln_dtype_itemsize(r->dtype), at = r->u.mpi.at;
    size_t n = r->count - at < (size_t)INT_MAX ? r->count - at : (size_t)INT_MAX;
    MPI_Request req;
    int rc = m->api.Iallreduce((const char *)r->send + at * item, (char *)r->recv + at * item,
                               (int)n, mpi_type(r->dtype),
                               r->op == KILN_REDUCE_MAX ? MPI_MAX : MPI_SUM, m->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(c, &m->api, rc, r->what);
    r->u.mpi.handle = (int)req;
    r->u.mpi.active = true;
    return KILN_STATUS_OK;
}

/* MPI_Ireduce_scatter_block or MPI_Iallgather (as bytes: any dtype) in one piece: a shard
 * must fit MPI's int count (larger ones are refused, naming the limit). */
static kiln_status issue_shard(kiln_comm *c, kn_comm_req *r) {
    mpi_impl *m = c->impl;
    size_t per = r->count / (size_t)c->size, item = kiln_dtype_itemsize(r->dtype);
    bool gather = r->coll == KN_COLL_ALL_GATHER;
    if ((gather ? per * item : per) > (size_t)INT_MAX)
        return ctx_error(c->ctx, KILN_STATUS_UNIMPLEMENTED,
                         "%s on rank %d of %d (mpi): a shard of %zu elements is more than MPI's "
                         "int count holds; split the buffer",
                         r->what, c->rank, c->size, per);
    MPI_Request req;
    int rc = gather ? m->api.Iallgather(r->send, (int)(per * item), MPI_BYTE, r->recv,
                                        (int)(per * item), MPI_BYTE, m->comm, &req)
                    : m->api.Ireduce_scatter_block(r->send, r->recv, (int)per, mpi_type(r->dtype),
                                                   r->op == KILN_REDUCE_MAX ? MPI_MAX : MPI_SUM,
                                                   m->comm, &req);
    if (rc != MPI_SUCCESS) return mpi_fail(c, &m->api, rc, r->what);
    r->u.mpi.handle = (int)req;
    r->u.mpi.active = true;
    return KILN_STATUS_OK;
}

/* The piece in flight completed: the next one goes, if any. */
static kiln_status next_piece(kiln_comm *c, kn_comm_req *r) {
    if (r->coll != KN_COLL_ALL_REDUCE) { /* one piece */
        r->u.mpi.active = false;
        r->u.mpi.at = r->count;
        return KILN_STATUS_OK;
    }
    size_t left = r->count - r->u.mpi.at;
    r->u.mpi.active = false;
    r->u.mpi.at += left < (size_t)INT_MAX ? left : (size_t)INT_MAX;
    return r->u.mpi.at < r->count ? issue_piece(c, r) : KILN_STATUS_OK;
}

/* MPI_Iallreduce of the first piece. MPI moves it only as far as it progresses on its own:
 * MPICH between processes of one machine progresses inside MPI calls of the process, which
 * the run makes between kernels (mpi_progress) and at the wait. */
static kiln_status mpi_start(kiln_comm *c, kn_comm_req *r) {
    r->u.mpi.at = 0;
    r->u.mpi.active = r->u.mpi.failed = false;
    return r->count ? issue_piece(c, r) : KILN_STATUS_OK;
}

/* One MPI_Test of the piece in flight (MPICH moves every pending operation of the process
 * inside it); a finished piece makes way for the next. Errors are left to the wait, which
 * tests the same request again. */
static void mpi_progress(kiln_comm *c, kn_comm_req *r) {
    mpi_impl *m = c->impl;
    if (!r->u.mpi.active) return;
    MPI_Request req = (MPI_Request)r->u.mpi.handle;
    int done = 0;
    if (m->api.Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) return;
    if (next_piece(c, r)) r->u.mpi.failed = true;
}

static kiln_status mpi_wait(kiln_comm *c, kn_comm_req *r) {
    if (r->u.mpi.failed) return KILN_STATUS_BACKEND; /* issue_piece set the message */
    while (r->u.mpi.active) {
        MPI_Request req = (MPI_Request)r->u.mpi.handle;
        kiln_status s = wait_request(c, &req, r->what);
        if (s) return s; /* the request stays MPI's: it cannot be cancelled */
        if ((s = next_piece(c, r))) return s;
    }
    return KILN_STATUS_OK;
}

static kiln_status mpi_barrier(kiln_comm *c, const char *what) {
    mpi_impl *m = c->impl;
    MPI_Request req;
    int rc = m->api.Ibarrier(m->comm, &req);
    return rc != MPI_SUCCESS ? mpi_fail(c, &m->api, rc, what) : wait_request(c, &req, what);
}

static void mpi_abort(kiln_comm *c, int code) {
    mpi_impl *m = c->impl;
    fflush(NULL);
    m->api.Abort(MPI_COMM_WORLD, code);
}

static void mpi_destroy(kiln_comm *c) {
    mpi_impl *m = c->impl;
    if (!c->failed) {
        m->api.Comm_free(&m->comm);
        int fin = 0;
        m->api.Finalized(&fin);
        if (m->initialised_here && !fin) m->api.Finalize();
    }
    host_free(c->ctx, m, sizeof *m);
}

static const kn_comm_ops mpi_ops = {
    .kind = "mpi",
    .start = mpi_start,
    .wait = mpi_wait,
    .progress = mpi_progress,
    .barrier = mpi_barrier,
    .abort = mpi_abort,
    .destroy = mpi_destroy,
};

kiln_status comm_mpi_open(kiln_comm *c) {
    mpi_impl *m = host_calloc(c->ctx, 1, sizeof *m);
    if (!m) return ctx_oom(c->ctx, "kiln_comm_create_mpi", sizeof *m);
    kiln_status s = mpi_load(c, &m->api);
    if (s) {
        host_free(c->ctx, m, sizeof *m);
        return s;
    }
    const mpi_api *api = &m->api;
    int init = 0, fin = 0, rc = MPI_SUCCESS;
    api->Initialized(&init);
    api->Finalized(&fin);
    if (fin) {
        host_free(c->ctx, m, sizeof *m);
        return ctx_error(c->ctx, KILN_STATUS_BACKEND,
                         "kiln_comm_create_mpi: MPI was finalised already; it cannot start again");
    }
    if (!init) {
        int provided = 0;
        rc = api->Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        m->initialised_here = rc == MPI_SUCCESS;
    }
    if (rc == MPI_SUCCESS) rc = api->Comm_dup(MPI_COMM_WORLD, &m->comm);
    if (rc == MPI_SUCCESS) rc = api->Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = api->Comm_rank(m->comm, &c->rank);
    if (rc == MPI_SUCCESS) rc = api->Comm_size(m->comm, &c->size);
    if (rc != MPI_SUCCESS) {
        s = mpi_fail(c, api, rc, "kiln_comm_create_mpi");
        host_free(c->ctx, m, sizeof *m);
        return s;
    }
    c->ops = &mpi_ops;
    c->impl = m;
    return KILN_STATUS_OK;
}

#endif
