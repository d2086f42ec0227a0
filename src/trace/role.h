/* role.h — what a value is to a training step, recorded by whoever knows: kiln_grad and
 * kiln_vjp (the parameters they differentiate with respect to, the gradients they return)
 * and the optimisers (their state, the new parameters). The planner reports it
 * (src/plan/classes.c); passes carry it (a side table of the graph, ir/side.h).
 *
 * First writer wins: a value keeps the first role it was given. A pass carries a node's
 * role to what the node became, and a node another one merged into takes the merged
 * one's role when it had none. Nodes a pass makes beside the result have none unless the
 * pass gives them one (trace_role_put). */
#ifndef KILN_TRACE_ROLE_H
#define KILN_TRACE_ROLE_H

#include "ir/ir.h"

typedef enum trace_role {
    TRACE_ROLE_NONE,
    TRACE_ROLE_PARAMETER,
    TRACE_ROLE_GRADIENT,
    TRACE_ROLE_OPT_STATE,
} trace_role;

/* Node id's role in g (TRACE_ROLE_NONE when it has none). */
trace_role trace_role_of(const kiln_graph *g, uint32_t id);
/* Gives node id role r unless it has one already; false on host OOM (no message set). */
bool trace_role_put(kiln_graph *g, uint32_t id, trace_role r);

#endif
