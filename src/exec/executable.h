/* executable.h — a compiled program (see kiln_compile in kiln.h) and what the jit and
 * the memory planner need to see of it. */
#ifndef KILN_EXECUTABLE_H
#define KILN_EXECUTABLE_H

#include "backend/device.h"
#include "codegen/cgen.h"
#include "codegen/lower_dot.h"
#include "exec/array.h"
#include "plan/plan.h"

struct kiln_executable {
    kiln_context *ctx;
    kn_device *dev; /* where it runs (kiln_compile_options.device) */
    kiln_graph *g;  /* the optimised graph (owned) */
    fusion_plan plan;
    cgen_kernel *info; /* per kernel */
    void **kernels;    /* per kernel: the backend's handle of a LOOP kernel, else NULL */
    lower_dot *dots;   /* per kernel; meaningful for DOT */
    kn_program *prog;  /* the backend's compiled program (owned; opaque here) */
    char *source;      /* the generated source (owned) */
    kiln_executable_info stats;
    mem_plan mem;     /* schedule, buffers, arena (src/plan) */
    uint8_t *donated; /* per parameter (n_params + 1 bytes): consumed by every call */
    /* A device whose memory is not the host's gets the constants copied at compile time:
     * per node (n_nodes entries) its device copy or NULL; NULL when not needed. */
    void **consts;
};

/* Checks that args match g's parameters; the message names `op`, the argument index,
 * the parameter's name and both types. */
kiln_status exec_check_args(const kiln_graph *g, const char *op, int n_args,
                            kiln_array *const *args);

#endif
