/* role.c — the role table (role.h): one byte per node, a side table of the graph
 * (ir/side.h), carried by every pass to what a node became. */
#include "trace.h"
#include "ir/side.h"

static bool carry(const kiln_graph *old, uint32_t oid, kiln_graph *g, uint32_t nid, ir_carry how) {
    trace_role r = trace_role_of(old, oid);
    if (how == IR_CARRY_PART || !r) return true;
    return trace_role_put(g, nid, r);
}

static const ir_side_kind role_kind = {.name = "role", .row_size = 1, .carry = carry};

trace_role trace_role_of(const kiln_graph *g, uint32_t id) {
    const uint8_t *r = ir_side_row(g, &role_kind, id);
    return r ? (trace_role)*r : TRACE_ROLE_NONE;
}

bool trace_role_put(kiln_graph *g, uint32_t id, trace_role r) {
    if (!r || trace_role_of(g, id)) return true;
    uint8_t *row = ir_side_row_make(g, &role_kind, id);
    if (!row) return false;
    *row = (uint8_t)r;
    return true;
}

void trace_set_role(kiln_graph *g, const char *op, kiln_value v, trace_role r) {
    if (!v.id || v.graph != g->id || v.id >= g->n_nodes) return;
    if (!trace_role_put(g, v.id, r))
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for the role of %%%u failed",
                   v.id);
}
