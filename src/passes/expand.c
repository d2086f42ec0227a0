/* expand.c — ops that a backend has no kernel for, rewritten into the primitives that
 * compute them (XLA's "expanders" do the same per backend): dot_product_attention, whose
 * primitive form (src/trace/attention.c) is the products, select and softmax a user would
 * write (and its gradient's kinds, whose probabilities CSE then shares), convolutions, whose
 * form (src/trace/conv.c) is im2col's slices and a product (and their transposes for the gradient
 * kinds), and cholesky and triangular_solve, whose form (src/trace/linalg.c) is a loop over
 * rows. kiln_compile runs it before the other passes for the ops the device's backend has no
 * library kernel for (a convolution of integers always: the kernels take floats), so
 * simplification, CSE, fusion and the planner see only what the device runs. Gather and scatter
 * with XLA's dimension numbers are expanded on every device (their primitive forms:
 * src/trace/gather.c).
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

#include <math.h>

/* A GATHER or SCATTER node's primitive form (src/trace/gather.c). */
static kiln_value expand_gather(pass_rebuild *rb, uint32_t id, const ir_node *o) {
    kiln_graph *g = rb->g;
    kiln_value x = trace_value(g, pass_input(rb, id, 0)), i = trace_value(g, pass_input(rb, id, 1));
    if (o->op == IR_GATHER) return trace_gather_primitives(g, o, x, i);
    return trace_scatter_primitives(g, o, x, i, trace_value(g, pass_input(rb, id, 2)));
}

/* Whether node n is expanded under `what` (pass_expand's flags). */
static bool expanded(const ir_node *n, unsigned what) {
    switch (n->op) {
    case IR_GATHER:
    case IR_SCATTER: return true;
    case IR_ATTENTION:
        if (n->a.attn.kind == IR_ATTN_FORWARD) return what & PASS_EXPAND_ATTENTION;
        /* the gradient's kernels take the fill -inf only (backend_impl.h) */
        return (what & PASS_EXPAND_ATTENTION_GRAD) || n->a.attn.fill != -INFINITY;
    case IR_CONV: return (what & PASS_EXPAND_CONV) || !ir_dtype_is_float(n->dtype);
    case IR_CHOLESKY:
    case IR_TRIANGULAR_SOLVE: return what & PASS_EXPAND_LINALG;
    default: return false;
    }
}

static kiln_status expand_visit(pass_rebuild *rb, uint32_t id, void *user) {
    unsigned what = *(const unsigned *)user;
    const ir_node *o = &rb->old->nodes[id];
    if (!expanded(o, what)) return pass_copy(rb, id);
    bool gs = o->op == IR_GATHER || o->op == IR_SCATTER;
    kiln_graph *g = rb->g;
    const char *name = ir_ops[o->op].name;
    g->cur_file = o->file, g->cur_line = o->line;
    kiln_value in[6] = {{0}};
    for (uint32_t k = 0; k < o->n_in && k < 6; k++) in[k] = trace_value(g, pass_input(rb, id, k));
    kiln_value r = gs                     ? expand_gather(rb, id, o)
                   : o->op == IR_CONV     ? trace_conv_primitives(g, o, in[0], in[1])
                   : o->op == IR_CHOLESKY ? trace_cholesky_primitives(g, o, in[0])
                   : o->op == IR_TRIANGULAR_SOLVE
                       ? trace_triangular_solve_primitives(g, o, in[0], in[1])
                       : trace_attention_primitives(g, o, in);
    if (g->status) /* a host allocation failed; the message is the builder's */
        return ctx_error(g->ctx, g->status, "pass expand: %s %%%u: %s", name, id,
                         g->error ? g->error : kiln_status_name(g->status));
    if (!r.id) /* the op was typed, so its primitives are too: a bug if not */
        return ctx_error(g->ctx, KILN_STATUS_INTERNAL, "pass expand: %s %%%u has no primitive form",
                         name, id);
    rb->map[id] = r.id; /* the walker gives the new nodes o's backward flag and marks */
    return KILN_STATUS_OK;
}

/* Attention and float convolutions only when `what` says the device has no kernel for
 * them; gather, scatter, integer convolutions and the attention gradient's kinds with a
 * finite fill always: no backend has a kernel of its own for them. */
kiln_status pass_expand_run(const kiln_graph *g, unsigned what, kiln_graph **out) {
    *out = NULL;
    bool any = false;
    for (uint32_t id = 1; !any && id < g->n_nodes; id++) any = expanded(&g->nodes[id], what);
    return any ? pass_rebuild_graph(g, "expand", expand_visit, &what, out) : KILN_STATUS_OK;
}
