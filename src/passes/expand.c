/* expand.c — ops that a backend has no kernel for, rewritten into the primitives that
 * compute them (XLA's "expanders" do the same per backend): today dot_product_attention,
 * whose primitive form (src/trace/attention.c) is the products, select and softmax a
 * user would write. kiln_compile runs it before the other passes when the device's backend
 * leaves the attention slot NULL, so simplification, CSE, fusion and the planner see only
 * what the device runs. Gather and scatter with XLA's dimension numbers are expanded on
 * every device (their primitive forms: src/trace/gather.c).
 *
 * The new nodes are built with the tracer's own builders on the graph being rebuilt (it
 * is not finished until the walk ends); they take the replaced node's source location,
 * and the walker gives them its rematerialisation marks (a value a checkpoint region
 * dropped stays dropped, a backward node stays backward: rewrite.c). Unlike the optimisation passes
 * it changes rounding (the op's fused kernel and its primitives add in different orders), never
 * values. */
#include "passes.h"
#include "rewrite.h"
#include "trace/trace.h"

/* A GATHER or SCATTER node's primitive form (src/trace/gather.c). */
static kiln_value expand_gather(pass_rebuild *rb, uint32_t id, const ir_node *o) {
    kiln_graph *g = rb->g;
    kiln_value x = trace_value(g, pass_input(rb, id, 0)), i = trace_value(g, pass_input(rb, id, 1));
    if (o->op == IR_GATHER) return trace_gather_primitives(g, o, x, i);
    return trace_scatter_primitives(g, o, x, i, trace_value(g, pass_input(rb, id, 2)));
}

static kiln_status expand_visit(pass_rebuild *rb, uint32_t id, void *user) {
    bool attention = *(const bool *)user;
    const ir_node *o = &rb->old->nodes[id];
    bool gs = o->op == IR_GATHER || o->op == IR_SCATTER;
    if (!gs && !(attention && o->op == IR_ATTENTION)) return pass_copy(rb, id);
    kiln_graph *g = rb->g;
    const char *what = gs ? ir_ops[o->op].name : "dot_product_attention";
    g->cur_file = o->file, g->cur_line = o->line;
    kiln_value r = gs ? expand_gather(rb, id, o)
                      : trace_attention_primitives(g, o, trace_value(g, pass_input(rb, id, 0)),
                                                   trace_value(g, pass_input(rb, id, 1)),
                                                   trace_value(g, pass_input(rb, id, 2)));
    if (g->status) /* a host allocation failed; the message is the builder's */
        return ctx_error(g->ctx, g->status, "pass expand: %s %%%u: %s", what, id,
                         g->error ? g->error : kiln_status_name(g->status));
    if (!r.id) /* the op was typed, so its primitives are too: a bug if not */
        return ctx_error(g->ctx, KILN_STATUS_INTERNAL, "pass expand: %s %%%u has no primitive form",
                         what, id);
    rb->map[id] = r.id; /* the walker gives the new nodes o's backward flag and marks */
    return KILN_STATUS_OK;
}

/* Attention only when the device has no kernel for it (attention set); gather and scatter
 * always: no backend has a kernel of its own for them. */
kiln_status pass_expand_run(const kiln_graph *g, bool attention, kiln_graph **out) {
    *out = NULL;
    bool any = false;
    for (uint32_t id = 1; !any && id < g->n_nodes; id++) {
        ir_op op = g->nodes[id].op;
        any = (attention && op == IR_ATTENTION) || op == IR_GATHER || op == IR_SCATTER;
    }
    return any ? pass_rebuild_graph(g, "expand", expand_visit, &attention, out) : KILN_STATUS_OK;
}
