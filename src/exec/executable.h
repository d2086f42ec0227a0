/* executable.h — a compiled program (see kiln_compile in kiln.h) and what the jit and
 * the memory planner need to see of it. */
#ifndef KILN_EXECUTABLE_H
#define KILN_EXECUTABLE_H

#include "backend/cpu/cpu_ops.h"
#include "codegen/cgen.h"
#include "exec/array.h"
#include "plan/plan.h"

struct cc_module;

typedef void (*exec_kernel_fn)(void *const *bufs, int64_t begin, int64_t end);

/* How a dot_general kernel calls gemm once per batch index: each operand is read where
 * it lies as a strided matrix (row stride lda/ldb, transposed or not, batch axes at their
 * own strides) whenever its free and contracting axes each flatten into one strided axis
 * with one of the two unit-stride; otherwise it is permuted into scratch first
 * ([batch, M, K] / [batch, K, N], contiguous). */
typedef struct exec_dot {
    cpu_gemm_desc gemm;
    bool pack_a, pack_b; /* permute into scratch first */
    int perm_a[KILN_MAX_RANK], perm_b[KILN_MAX_RANK];
} exec_dot;

struct kiln_executable {
    kiln_context *ctx;
    kiln_graph *g; /* the optimised graph (owned) */
    fusion_plan plan;
    cgen_kernel *info;   /* per kernel */
    exec_kernel_fn *fns; /* per kernel; NULL for DOT/SCATTER */
    exec_dot *dots;      /* per kernel; meaningful for DOT */
    struct cc_module *mod;
    char *source; /* the generated C (owned) */
    kiln_executable_info stats;
    mem_plan mem;     /* schedule, buffers, arena (src/plan) */
    uint8_t *donated; /* per parameter (n_params + 1 bytes): consumed by every call */
};

/* Checks that args match g's parameters; the message names `op`, the argument index,
 * the parameter's name and both types. */
kiln_status exec_check_args(const kiln_graph *g, const char *op, int n_args,
                            kiln_array *const *args);

#endif
