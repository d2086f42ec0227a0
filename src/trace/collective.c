/* collective.c — the builders of the collective ops (kiln_all_reduce, kiln_reduce_scatter,
 * kiln_all_gather). A collective is
 * typed like its operand; what it computes across replicas is decided when the program
 * runs, by the communicator it was compiled with (src/comm, src/runtime/run.c). */
#include "trace.h"

kiln_value kiln_all_reduce(kiln_graph *g, kiln_value x, kiln_reduce_kind kind) {
    const char *op = "kiln_all_reduce";
    if (!trace_ready(g, op) || !trace_node(g, op, x, "the operand")) return KN_NONE;
    ir_node n = {.op = IR_ALL_REDUCE};
    n.a.reduce_kind = (int)kind;
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_value kiln_reduce_scatter(kiln_graph *g, kiln_value x, kiln_reduce_kind kind, int ranks) {
    const char *op = "kiln_reduce_scatter";
    if (!trace_ready(g, op) || !trace_node(g, op, x, "the operand")) return KN_NONE;
    ir_node n = {.op = IR_REDUCE_SCATTER};
    n.a.shard.kind = (int)kind;
    n.a.shard.ranks = ranks;
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_value kiln_all_gather(kiln_graph *g, kiln_value x, int ranks) {
    const char *op = "kiln_all_gather";
    if (!trace_ready(g, op) || !trace_node(g, op, x, "the operand")) return KN_NONE;
    ir_node n = {.op = IR_ALL_GATHER};
    n.a.shard.ranks = ranks;
    return trace_emit(g, op, &n, &x.id, 1);
}
