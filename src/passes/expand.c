/* expand.c — ops that a backend has no kernel for, rewritten into the primitives that
 * compute them (XLA's "expanders" do the same per backend): today dot_product_attention,
 * whose primitive form (src/trace/attention.c) is the products, select and softmax a
 * user would write. kiln_compile runs it before the other passes when the device's backend
 * leaves the attention slot NULL, so simplification, CSE, fusion and the planner see only
 * what the device runs.
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

static kiln_status expand_visit(pass_rebuild *rb, uint32_t id, void *user) {
    (void)user;
    const ir_node *o = &rb->old->nodes[id];
    if (o->op != IR_ATTENTION) return pass_copy(rb, id);
    kiln_graph *g = rb->g;
    g->cur_file = o->file, g->cur_line = o->line;
    kiln_value r = trace_attention_primitives(g, o, trace_value(g, pass_input(rb, id, 0)),
                                              trace_value(g, pass_input(rb, id, 1)),
                                              trace_value(g, pass_input(rb, id, 2)));
    if (g->status) /* a host allocation failed; the message is the builder's */
        return ctx_error(g->ctx, g->status, "pass expand: dot_product_attention %%%u: %s", id,
                         g->error ? g->error : kiln_status_name(g->status));
    if (!r.id) /* the op was typed, so its primitives are too: a bug if not */
        return ctx_error(g->ctx, KILN_STATUS_INTERNAL,
                         "pass expand: dot_product_attention %%%u has no primitive form", id);
    rb->map[id] = r.id; /* the walker gives the new nodes o's backward flag and marks */
    return KILN_STATUS_OK;
}

kiln_status pass_expand_run(const kiln_graph *g, bool attention, kiln_graph **out) {
    *out = NULL;
    bool any = false;
    for (uint32_t id = 1; attention && !any && id < g->n_nodes; id++)
        any = g->nodes[id].op == IR_ATTENTION;
    return any ? pass_rebuild_graph(g, "expand", expand_visit, NULL, out) : KILN_STATUS_OK;
}
