/* memory.c — the memory-kind builder (kiln_memory_put, jax.device_put to a memory kind
 * inside jit). The op is a copy; what makes it matter is the planner, which keeps a value
 * in pinned_host memory in the host arena, outside the device's peak (src/plan), and the
 * offload checkpoint policies, whose rewrite emits these copies (src/remat/rewrite.c).
 * That a host value is read only by a copy back is ir_infer's rule, so it holds for every
 * graph, traced, loaded or rewritten. */
#include "trace.h"

const char *kiln_memory_kind_name(kiln_memory_kind kind) {
    const char *s = ir_memory_kind_name((int)kind);
    return s ? s : "?";
}

kiln_value kiln_memory_put(kiln_graph *g, kiln_value x, kiln_memory_kind kind) {
    const char *op = "kiln_memory_put";
    if (!trace_ready(g, op) || !trace_node(g, op, x, "the operand")) return KN_NONE;
    /* already there: jax.device_put to the memory kind a value has is the value itself */
    if (ir_memory_kind_name((int)kind) && ir_in_host(g, x.id) == (kind == KILN_MEMORY_PINNED_HOST))
        return x;
    ir_node n = {.op = IR_MEMORY_PUT};
    n.a.memory_kind = (int)kind;
    return trace_emit(g, op, &n, &x.id, 1);
}
