/* executable.h — a compiled program (see kiln_compile in kiln.h) and what the jit and
 * the memory planner need to see of it. */
#ifndef KILN_EXECUTABLE_H
#define KILN_EXECUTABLE_H

#include "backend/device.h"
#include "codegen/cgen.h"
#include "codegen/lower_dot.h"
#include "exec/array.h"
#include "plan/plan.h"
#include "remat/remat.h"

struct kiln_executable {
    kiln_context *ctx;
    atomic_int refs; /* the user's (or jit entry's) + one per run in flight */
    kn_device *dev;  /* where it runs: kiln_compile_options.device */
    kiln_comm *comm; /* its collectives' replicas (borrowed); NULL: one replica */
    bool overlap;    /* all-reduces run beside later kernels (mem.wait_step; run.c) */
    kiln_graph *g;   /* the optimised graph (owned) */
    fusion_plan plan;
    cgen_kernel *info; /* per kernel */
    void **kernels;    /* per kernel: the backend's handle of a LOOP kernel, else NULL */
    lower_dot *dots;   /* per kernel; meaningful for DOT */
    kn_program *prog;  /* the backend's compiled program (owned; opaque here) */
    char *source;      /* the generated source (owned) */
    kiln_executable_info stats;
    mem_plan mem;     /* schedule, buffers, arena (src/plan) */
    uint8_t *donated; /* per parameter (n_params + 1 bytes): consumed by every call */
    remat_info remat; /* what rematerialisation did (src/remat) */
    /* A device whose memory is not the host's gets the constants copied at compile time:
     * per node (n_nodes entries) its device copy or NULL; NULL when not needed. */
    void **consts;
    /* Profiling (profile.c): run.c times each kernel while `profiling` is set; the counters
     * are made the first time it is turned on and freed with the executable. */
    atomic_bool profiling;
    struct exec_profile *prof;
};

/* Chooses and applies the recomputation (remat.c, through remat_choose): the checkpoint
 * regions of e->g and, under a budget, the cheapest extra choice whose planned peak fits.
 * On return e->g is the graph to fuse and plan, e->remat says what was done. */
kiln_status exec_remat(kiln_executable *e, const kiln_compile_options *o);
/* Fusion, dot layouts and the memory plan of e->g into e (executable.c). */
kiln_status exec_fuse_and_plan(kiln_executable *e, const kiln_compile_options *o);
/* The backend's description of attention node id of g. */
void exec_attention_desc(const kiln_graph *g, uint32_t id, kn_attention_desc *d);
/* Frees what exec_fuse_and_plan made (a trial plan of the budget search). */
void exec_plan_release(kiln_executable *e);
/* The memory report (plan_report) with the rematerialisation lines (remat.c); NULL on host
 * OOM. */
char *exec_memory_report(const kiln_executable *e);

/* The error of a call whose own object (executable, jit) is NULL: the message goes to the
 * context of its first argument that is not NULL, so kiln_last_error reads this failure and
 * not an older one. KILN_STATUS_INVALID_ARGUMENT either way (with no argument there is no
 * context to hold a message). */
kiln_status exec_null_object(const char *op, const char *what, int n_args, kiln_array *const *args);
/* Checks that args match g's parameters; the message names `op`, the argument index,
 * the parameter's name and both types. */
kiln_status exec_check_args(const kiln_graph *g, const char *op, int n_args,
                            kiln_array *const *args);
/* Writes "argument 0 on cpu:0, argument 1 on cpu:1" (for the mixed-device messages). */
void exec_devices_str(kiln_context *ctx, int n_args, kiln_array *const *args, char *buf,
                      size_t size);
/* Profiling counters (profile.c). */
typedef struct exec_profile exec_profile;
uint64_t exec_profile_now_ns(void);
/* True for exactly one run of a profiled executable, its first: that run's times go to
 * counters of their own (`first` below), since it pays one-time work. */
bool exec_profile_begin_run(kiln_executable *e);
void exec_profile_add_kernel(kiln_executable *e, uint32_t ki, uint64_t ns, bool first);
void exec_profile_add_run(kiln_executable *e, uint64_t ns, bool first);
void exec_profile_free(kiln_executable *e);

/* A run in flight holds the executable: the last reference frees it. */
void exec_ref(kiln_executable *e);
void exec_unref(kiln_executable *e);

#endif
