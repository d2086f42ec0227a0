/* collective.c — the builder of the collective ops (kiln_all_reduce). A collective is
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
