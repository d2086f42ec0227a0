/* reference.h — the reference interpreter: its entry point over host buffers, and the
 * internals shared by its files: the value table the driver (interp.c) keeps, typed element access,
 * and the kernels (elementwise.c, structural.c) that compute one node from its inputs' values.
 *
 * Numerics, once for all kernels: floats are computed in double (libm) and rounded to the
 * node's dtype when stored; integers are computed in 64-bit unsigned arithmetic, so that
 * every overflow wraps and nothing is C undefined behaviour, and stored by truncation to
 * the dtype's width (which equals wrapping in that width). */
#ifndef KILN_REFERENCE_H
#define KILN_REFERENCE_H

#include "base/half.h"
#include "ir/ir.h"
#include "ir/scalar.h"

#include <string.h>

/* One node's value while the graph runs. */
typedef struct ref_value {
    void *data;        /* its bytes; NULL when it has none or is not (or no longer) held */
    size_t nbytes;     /* what data holds */
    uint32_t last_use; /* id of the last node that reads it; 0: never needed;
                        * UINT32_MAX: a graph output, kept to the end */
    bool borrowed;     /* data is a parameter's argument or a constant's: not ours */
    bool claimed;      /* data has been handed to the caller as an output */
    void **extra;      /* a control node: its results 1.. (control.c), owned; else NULL */
    uint32_t n_extra;
} ref_value;

/* Evaluates the finished graph g on host memory, with no array and no device: args[k]
 * holds parameter k's bytes (its node's dtype and shape, which the caller has checked);
 * outs[i] receives output i's bytes in a fresh buffer from the context's host allocator,
 * ir_shape_nbytes of the output node long (NULL when that is 0), which the caller frees
 * with host_free. Every output gets its own buffer, even when one value is listed twice
 * or is a parameter or constant. On failure every outs[i] is NULL, nothing is held, and
 * the context's message says what failed. Constant folding calls this directly (passes
 * never touch a device); kiln_interpret wraps it with arrays (src/runtime/interpret.c). */
kiln_status ref_eval_host(const kiln_graph *g, const void *const *args, void **outs);

/* The reference's part of the op registry (src/ir/ir.h): one evaluator per op that
 * computes node `id` of g into out (which holds the node's bytes), reading its inputs
 * from vals. They fail only where the graph is valid but cannot be evaluated, and then
 * set the context's message. ref_op_eval gives an op's evaluator (NULL: none, which
 * tests/test_registry.c rejects); ref_eval runs it, and is an internal error for an op
 * without one rather than a wrong value. */
typedef kiln_status (*ref_eval_fn)(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                   void *out);
ref_eval_fn ref_op_eval(ir_op op);
kiln_status ref_eval(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
/* Whether the scalar semantics of elementwise op `op` exist for float (or integer/bool)
 * operands: checked against the op's accepted dtypes by tests/test_registry.c. */
bool ref_scalar_supports(ir_op op, bool float_operand);

/* elementwise.c */
kiln_status ref_unary(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
kiln_status ref_binary(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
kiln_status ref_compare(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
kiln_status ref_convert(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
kiln_status ref_bitcast(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
kiln_status ref_select(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
/* structural.c: the evaluators of the ops that move or combine elements (the shape ops,
 * reductions, dot_general, indexing, scans, attention), in a table of its own so that a new
 * structural op is one function and one row there; NULL for an op it does not own. */
ref_eval_fn ref_structural_eval(ir_op op);
/* linalg.c: the evaluators of cholesky and triangular_solve (NULL for other ops) */
ref_eval_fn ref_linalg_eval(ir_op op);
/* control.c: the evaluators of while, scan, cond and result (NULL for other ops) */
ref_eval_fn ref_control_eval(ir_op op);
/* random.c */
kiln_status ref_random(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
/* gather.c: XLA's gather and scatter with dimension numbers */
kiln_status ref_gather(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);
kiln_status ref_scatter(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out);

/* ------------------------------------------------------- element access ---- */

/* The element access of src/ir/scalar.h, under the interpreter's names. */
static inline double ref_fget(const void *p, kiln_dtype t, int64_t i) {
    return ir_fget(p, t, i);
}
static inline void ref_fput(void *p, kiln_dtype t, int64_t i, double v) {
    ir_fput(p, t, i, v);
}
static inline int64_t ref_iget(const void *p, kiln_dtype t, int64_t i) {
    return ir_iget(p, t, i);
}
static inline void ref_iput(void *p, kiln_dtype t, int64_t i, uint64_t v) {
    ir_iput(p, t, i, v);
}

static inline int64_t ref_numel(const ir_shape *s) {
    int64_t n = 0;
    ir_shape_numel(s, &n); /* a node's shape was checked to fit when it was typed */
    return n;
}

/* Node `id`'s k-th input node and its data. */
static inline const ir_node *ref_in_node(const kiln_graph *g, const ir_node *n, uint32_t k) {
    return &g->nodes[ir_in(n)[k]];
}
static inline const void *ref_in_data(const ref_value *vals, const ir_node *n, uint32_t k) {
    return vals[ir_in(n)[k]].data;
}

#endif
