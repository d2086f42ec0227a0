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
    atomic_int refs; /* the user's (or jit entry's) + one per run in flight */
    kn_device *dev;  /* where it runs: kiln_compile_options.device */
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
};

/* Checks that args match g's parameters; the message names `op`, the argument index,
 * the parameter's name and both types. */
kiln_status exec_check_args(const kiln_graph *g, const char *op, int n_args,
                            kiln_array *const *args);
/* Writes "argument 0 on cpu:0, argument 1 on cpu:1" (for the mixed-device messages). */
void exec_devices_str(kiln_context *ctx, int n_args, kiln_array *const *args, char *buf,
                      size_t size);
/* A run in flight holds the executable: the last reference frees it. */
void exec_ref(kiln_executable *e);
void exec_unref(kiln_executable *e);

#endif
