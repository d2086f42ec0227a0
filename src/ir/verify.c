/* verify.c — the IR verifier: checks the invariants listed in ir.h on a graph. Run by
 * kiln_graph_finish and (later) after every pass in debug builds. A failure is a bug in
 * whoever produced the graph, so the message names the node and what is wrong with it. */
#include "ir.h"
#include "base/strbuf.h"

#include <string.h>

static kiln_status bad(const kiln_graph *g, uint32_t id, const char *what) {
    strbuf sb;
    sb_init(&sb, g->ctx);
    if (id) ir_print_node(g, id, &sb);
    kiln_status s = ctx_error(g->ctx, KILN_ERR_INTERNAL, "IR verifier: graph '%s', node %%%u: %s%s%s",
                              g->name, id, what, sb.data ? "\n  " : "", sb.data ? sb.data : "");
    sb_free(&sb);
    return s;
}

static kiln_status verify_node(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    if ((unsigned)n->op >= IR_NUM_OPS) return bad(g, id, "op is out of range");
    const uint32_t *in = ir_in(n);
    for (uint32_t i = 0; i < n->n_in; i++)
        if (in[i] == 0 || in[i] >= id) return bad(g, id, "an input does not precede the node");
    if (n->op == IR_PARAMETER) {
        int k = n->a.param_index;
        if (k < 0 || (uint32_t)k >= g->n_params || g->params[k] != id)
            return bad(g, id, "parameter index does not match the parameter list");
    }
    if (n->op == IR_CONSTANT) {
        size_t bytes;
        if (!ir_shape_nbytes(&n->shape, n->dtype, &bytes) || (bytes && !n->data))
            return bad(g, id, "constant without data");
    }
    ir_node copy = *n;
    char msg[512];
    if (ir_infer(g, &copy, msg, sizeof msg)) return bad(g, id, msg);
    if (copy.dtype != n->dtype || !ir_shape_eq(&copy.shape, &n->shape))
        return bad(g, id, "recorded type differs from the inferred type");
    return KILN_OK;
}

kiln_status ir_verify(const kiln_graph *g) {
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        kiln_status s = verify_node(g, id);
        if (s) return s;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == 0 || g->outputs[i] >= g->n_nodes)
            return bad(g, 0, "an output is not a node of the graph");
    return KILN_OK;
}
