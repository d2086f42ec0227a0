/* fusion.h — decides which values get a buffer ("materialised") and groups the rest into
 * kernels, so that chains of elementwise ops, broadcasts, shape ops and reductions run as
 * one loop nest and their intermediates never exist in memory.
 *
 * The result is a list of kernels in execution order. A LOOP kernel writes one or more
 * materialised roots of the same shape; every other node it needs and that is not
 * materialised is computed inline, per output element (codegen's elemental lowering,
 * src/codegen/lower.c). DOT and SCATTER kernels are library calls or runtime loops over
 * materialised operands.
 *
 * Invariants: parameters and graph outputs are materialised; an inlined node is evaluated
 * at most once per output element of any kernel that contains a reduction, or once per
 * row when it is a row value (so a reduction is never recomputed per broadcast element);
 * expensive nodes (dot, scatter) and
 * nodes whose inlined expression contains a reduction are never duplicated into several
 * kernels. */
#ifndef KILN_FUSION_H
#define KILN_FUSION_H

#include "ir/ir.h"

typedef enum fk_kind {
    FK_LOOP,       /* generated loop nest over the roots' shape */
    FK_DOT,        /* dot_general: BLAS for floats, a generated loop for integers */
    FK_SCATTER,    /* scatter_add_rows: runtime loop */
    FK_SCAN,       /* cumsum: the backend's scan, in place when the plan allows */
    FK_ATTENTION,  /* dot_product_attention: the backend's fused kernel, with planned scratch */
    FK_COLLECTIVE, /* all_reduce: the communicator, out of place, its own step */
    FK_SORT,       /* argsort: the backend's sort, out of place, with planned scratch */
    FK_CONTROL,    /* while, scan, cond: its sub-graphs' executables, run by the host; its
                    * roots are the control node and its RESULT nodes (all its results) */
    FK_TRANSFER,   /* memory_put: a copy into another memory kind, out of place */
    FK_CONV,       /* convolution: the backend's kernel, out of place, with planned scratch */
    FK_LINALG,     /* cholesky, triangular_solve: the backend's LAPACK kernel, in place (over
                    * a, or b) when the plan allows */
} fk_kind;
#define FK_NUM_KINDS (FK_LINALG + 1)

/* "loop", "dot", "scatter", ..., "control": a kernel's kind in reports. */
const char *fusion_kind_name(fk_kind k);

typedef struct fkernel {
    fk_kind kind;
    uint32_t *roots, n_roots;   /* materialised nodes it writes */
    uint32_t *inputs, n_inputs; /* materialised nodes it reads (params, constants, roots) */
    uint32_t n_members;         /* nodes computed in it (roots + inlined), for reports */
    /* Set by the memory planner before codegen (plan_apply_aliases), NULL when no root runs
     * in place; else per root: 1 + the input slot whose buffer that root overwrites element
     * for element, 0 if none. No two roots name the same input. Codegen must then not
     * declare such an input and its root `restrict`, and with several roots must compute
     * every root's element before storing any. Owned by the plan (fusion_plan_free). */
    uint32_t *alias;
} fkernel;

/* Row values. A value broadcast along the last axis of a kernel's index space, [A..., 1]
 * or [A...] -> [A..., n] (a softmax's max and sum, a norm's mean and variance), is one
 * value per row of that kernel. Instead of a buffer and a kernel of its own it may be
 * computed in the consumer's kernel once per row, before the row's elements (lower.c):
 * then a softmax or a layer norm is one kernel that reads its input row while it is in
 * cache, not one kernel per reduction each reading the whole input again. Fusion allows it
 * when every use of the value, up to the kernel's roots, keeps the leading axes A (through
 * elementwise ops, broadcasts along the last axis, reductions over the last axis and the
 * keepdims reshape) and there are at least FUSION_ROW_MIN rows (with fewer, the kernel's
 * work items, one per row, would leave threads idle). */
#define FUSION_ROW_MIN 16

/* Reductions that keep their operand's last axis (a bias gradient, a layer norm's gain and
 * bias gradients) are lowered together in the column form (lower.c: a row of accumulators
 * each, the operand read row by row) up to this many per kernel; past it a kernel falls
 * back to walking each column with a stride of a whole row, an order of magnitude slower,
 * so sibling fusion never merges kernels past it. */
#define FUSION_MAX_COLUMN_REDUCTIONS 8

typedef struct fusion_plan {
    kiln_context *ctx;
    uint32_t n_nodes;      /* the graph's n_nodes (slot 0 unused) */
    uint8_t *materialised; /* per node: 1 if it has a buffer */
    uint8_t *inline_const; /* per node: 1 if a scalar constant emitted as a literal */
    uint8_t *row;          /* per node: 1 if a row value (above) computed once per row */
    fkernel *kernels;
    uint32_t n_kernels, cap_kernels;
    uint32_t n_fused_away; /* non-source nodes that got no buffer */
    /* 16-bit float values stay f32 inside a kernel and round only where stored
     * (kiln_compile_options.allow_excess_precision; kd_lower reads it) */
    bool excess_precision;
} fusion_plan;

typedef struct fusion_options {
    bool disable;          /* one kernel per op (every node materialised): for tests and reports */
    bool excess_precision; /* fusion_plan.excess_precision */
} fusion_options;

kiln_status fusion_plan_build(const kiln_graph *g, const fusion_options *o, fusion_plan *out);
void fusion_plan_free(fusion_plan *p);

/* Consumers of every node, as CSR arrays (users[start[i] .. start[i+1])). */
typedef struct ir_users {
    uint32_t *start, *users;
} ir_users;
kiln_status ir_users_build(const kiln_graph *g, ir_users *u);
void ir_users_free(const kiln_graph *g, ir_users *u);

#endif
