/* trace.h — the tracer's internals shared by its files: checking the values a user
 * passes, recording the builder's first error, and emitting typed nodes.
 *
 * Location handling: kiln_graph_at (called by the header's macros) records the user's
 * file and line; every node emitted until the public call returns carries them. Public
 * calls that emit several nodes (implicit broadcasts, composites) wrap themselves in
 * trace_hold/trace_release so all their nodes get the caller's location. */
#ifndef KILN_TRACE_H
#define KILN_TRACE_H

#include "ir/ir.h"

static const kiln_value KN_NONE = {0, 0};

/* True if the graph can take another op: not NULL, not finished, no earlier error. On a
 * finished graph it records the error. */
bool trace_ready(kiln_graph *g, const char *op);
/* Records the builder's first error (message gets " (at file:line)") and returns the
 * invalid value. */
kiln_value trace_fail(kiln_graph *g, kiln_status code, const char *op, const char *fmt, ...)
    KN_PRINTF(4, 5);
/* The node behind a user value, or NULL after recording an error naming `what`. */
const ir_node *trace_node(kiln_graph *g, const char *op, kiln_value v, const char *what);
/* Types tmpl (ir_infer) and appends it. On a type error the message names the op, its
 * operands' types and the reason. */
kiln_value trace_emit(kiln_graph *g, const char *op, ir_node *tmpl, const uint32_t *in,
                      uint32_t n_in);
static inline kiln_value trace_value(const kiln_graph *g, uint32_t id) {
    return (kiln_value){g->id, id};
}
void trace_hold(kiln_graph *g);
kiln_value trace_release(kiln_graph *g, kiln_value result);

/* Normalises an axis (negative counts from the end); false if out of range. */
bool trace_axis(int axis, int rank, int *out);
/* NumPy broadcasting of value v to shape `to` (no-op when already that shape). */
kiln_value trace_broadcast_to(kiln_graph *g, const char *op, kiln_value v, const ir_shape *to);
/* Rank-0 constant of dtype t. */
kiln_value trace_scalar(kiln_graph *g, const char *op, kiln_dtype t, double value);

#endif
