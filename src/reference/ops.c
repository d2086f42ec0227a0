/* ops.c — the reference evaluation of every op, by op: the reference interpreter's part of
 * the op registry (src/ir/ir.h). Parameters and constants are never evaluated: the driver
 * (interp.c) binds them to their argument's or their own bytes. Every other op names its
 * evaluator here, or in structural.c's table for the ops that move or combine elements
 * (ref_structural_eval); tests/test_registry.c walks IR_NUM_OPS and fails for a missing one. */
#include "reference.h"

#include <string.h>

/* Sources bound by the driver: reaching this is a driver bug, never a wrong value. */
static kiln_status ref_bound(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    (void)vals, (void)out;
    return ctx_error(g->ctx, KILN_STATUS_INTERNAL,
                     "kiln_interpret: %s %%%u is bound, not evaluated",
                     ir_ops[g->nodes[id].op].name, id);
}

/* The reference runs one replica, and over one replica every reduction is the value
 * itself (the mean of one is itself too: x / 1 is exact). The size comes from the node:
 * a parameter's or constant's value is borrowed and holds no nbytes of its own. */
static kiln_status ref_all_reduce(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                  void *out) {
    const ir_node *n = &g->nodes[id];
    size_t bytes = 0;
    ir_shape_nbytes(&n->shape, n->dtype, &bytes);
    if (bytes) memcpy(out, vals[ir_in(n)[0]].data, bytes);
    return KILN_STATUS_OK;
}

/* reduce_scatter and all_gather over one replica are the value itself; over more, the
 * shapes say a group of that size, which one replica cannot be. */
static kiln_status ref_shard(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    if (n->a.shard.ranks != 1)
        return ctx_error(g->ctx, KILN_STATUS_UNIMPLEMENTED,
                         "kiln_interpret: %s %%%u is over %d ranks; the reference runs one "
                         "replica (compile the program with a communicator of %d ranks)",
                         ir_ops[n->op].name, id, n->a.shard.ranks, n->a.shard.ranks);
    return ref_all_reduce(g, id, vals, out);
}

static const ref_eval_fn evals[IR_NUM_OPS] = {
    [IR_PARAMETER] = ref_bound,
    [IR_CONSTANT] = ref_bound,
#define KN_REF_UNARY(e, ...) [IR_##e] = ref_unary,
    KN_UNARY_OPS(KN_REF_UNARY)
#undef KN_REF_UNARY
        [IR_CONVERT] = ref_convert,
    [IR_BITCAST] = ref_bitcast,
#define KN_REF_BINARY(e, ...) [IR_##e] = ref_binary,
    KN_BINARY_OPS(KN_REF_BINARY)
#undef KN_REF_BINARY
        [IR_COMPARE] = ref_compare,
    [IR_SELECT] = ref_select,
    [IR_RANDOM] = ref_random,
    [IR_GATHER] = ref_gather,
    [IR_SCATTER] = ref_scatter,
    [IR_ALL_REDUCE] = ref_all_reduce,
    [IR_REDUCE_SCATTER] = ref_shard,
    [IR_ALL_GATHER] = ref_shard,
    [IR_MEMORY_PUT] = ref_all_reduce, /* a copy: one replica's all-reduce is one too */
};

ref_eval_fn ref_op_eval(ir_op op) {
    if ((unsigned)op >= IR_NUM_OPS) return NULL;
    if (evals[op]) return evals[op];
    ref_eval_fn f = ref_structural_eval(op);
    if (!f) f = ref_linalg_eval(op);
    return f ? f : ref_control_eval(op);
}

kiln_status ref_eval(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    ir_op op = g->nodes[id].op;
    ref_eval_fn fn = ref_op_eval(op);
    if (!fn)
        return ctx_error(g->ctx, KILN_STATUS_INTERNAL,
                         "kiln_interpret: no reference evaluation for %s",
                         (unsigned)op < IR_NUM_OPS ? ir_ops[op].name : "an unknown op");
    return fn(g, id, vals, out);
}
