/* custom_vjp.c — kiln_custom_vjp (jax.custom_vjp): a forward function traced inline on the
 * graph, and a record (trace.h: trace_custom_vjp) that tells autodiff to call the user's
 * backward function in place of the rules of the forward's nodes (src/autodiff/grad.c).
 *
 * Invariants the record keeps, which grad.c relies on: the forward's nodes are the contiguous
 * ids first .. last; each output is a node of that range that is no other output, so a value
 * read after `last` reaches the forward only through an output, and an output's cotangent is
 * complete when the backward sweep comes down to `last`. A returned argument (or an outer
 * value, or a value returned twice) is copied by a reshape to its own shape, which the
 * simplifier removes when compiling. The record is a side table of the tracer's, like the
 * composites: not carried by passes (compiling ignores it), copied by trace_inline. */
#include "ir/side.h"
#include "trace.h"

#include <stdio.h>
#include <string.h>

/* The records of a graph: a log of the tracer's (trace.h, trace_log). */
static const ir_side_kind custom_vjp_kind = {
    .name = "custom_vjp", .state_size = sizeof(trace_log), .release = trace_log_release};

void trace_custom_vjp_add(kiln_graph *g, const char *op, const trace_custom_vjp *r) {
    trace_log_push(g, op, &custom_vjp_kind, sizeof *r, r);
}

const trace_custom_vjp *trace_custom_vjps(const kiln_graph *g, uint32_t *n) {
    return trace_log_items(g, &custom_vjp_kind, n);
}

/* Checks what kiln_custom_vjp is given before anything is traced. */
static bool check_call(kiln_graph *g, const char *op, kiln_fn fwd, kiln_fn bwd, int n,
                       const kiln_value *args, int n_out, kiln_value *outs) {
    if (!fwd || !bwd) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "the %s function is NULL",
                   !fwd ? "fwd" : "bwd");
        return false;
    }
    if (n < 0 || n > KILN_MAX_OUTPUTS || (n > 0 && !args)) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   n > 0 && n <= KILN_MAX_OUTPUTS ? "args is NULL for n = %d"
                                                  : "n = %d is not in 0..KILN_MAX_OUTPUTS",
                   n);
        return false;
    }
    if (n_out < 1 || n_out > KILN_MAX_OUTPUTS || !outs) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   !outs ? "outs is NULL (n_out = %d)" : "n_out = %d is not in 1..KILN_MAX_OUTPUTS",
                   n_out);
        return false;
    }
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "args[%d]", i);
        if (!trace_node(g, op, args[i], what)) return false;
    }
    return true;
}

/* Value v that fwd returned as its result j (`what`), checked; 0 after an error. */
static uint32_t returned(kiln_graph *g, const char *op, kiln_value v, int j, int n_out) {
    char what[48];
    if (j < n_out)
        snprintf(what, sizeof what, "the fwd function's output %d", j);
    else
        snprintf(what, sizeof what, "the fwd function's residual %d", j - n_out);
    return trace_node(g, op, v, what) ? v.id : 0;
}

/* An output that is no node of fwd's own, or one returned before: a copy of it (a reshape
 * to its own shape), so that the record's invariant holds. */
static uint32_t own_output(kiln_graph *g, const char *op, uint32_t id, uint32_t first,
                           const uint32_t *before, int j) {
    bool fresh = id >= first;
    for (int k = 0; fresh && k < j; k++) fresh = before[k] != id;
    if (fresh) return id;
    ir_node n = {.op = IR_RESHAPE, .shape = g->nodes[id].shape};
    return trace_emit(g, op, &n, &id, 1).id;
}

kiln_status kiln_custom_vjp(kiln_graph *g, kiln_fn fwd, kiln_fn bwd, void *user, int n,
                            const kiln_value *args, int n_out, kiln_value *outs) {
    const char *op = "kiln_custom_vjp";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (outs && n_out > 0)
        for (int j = 0; j < n_out && j < KILN_MAX_OUTPUTS; j++) outs[j] = KN_NONE;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if (!check_call(g, op, fwd, bwd, n, args, n_out, outs)) return g->status;
    trace_custom_vjp r = {.first = g->n_nodes,
                          .n_in = n,
                          .n_out = n_out,
                          .fwd = fwd,
                          .bwd = bwd,
                          .user = user,
                          .file = g->cur_file,
                          .line = g->cur_line};
    for (int i = 0; i < n; i++) r.in[i] = args[i].id;
    kiln_value in[KILN_MAX_OUTPUTS], res[KILN_MAX_OUTPUTS];
    memcpy(in, args, (size_t)n * sizeof *in);
    int count = fwd(g, n, in, user, res);
    if (!g->status && count < 0)
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "the fwd function returned %d (an error of its own)", count);
    else if (!g->status && (count < n_out || count > KILN_MAX_OUTPUTS))
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "the fwd function returned %d values, not the %d outputs then at most %d "
                   "residuals",
                   count, n_out, KILN_MAX_OUTPUTS - n_out);
    for (int j = 0; j < count && !g->status; j++) r.out[j] = returned(g, op, res[j], j, n_out);
    for (int j = 0; j < n_out && !g->status; j++)
        r.out[j] = own_output(g, op, r.out[j], r.first, r.out, j);
    if (g->status) return g->status;
    r.n_res = count - n_out;
    r.last = g->n_nodes - 1;
    trace_custom_vjp_add(g, op, &r);
    for (int j = 0; j < n_out && !g->status; j++) outs[j] = trace_value(g, r.out[j]);
    return g->status;
}
