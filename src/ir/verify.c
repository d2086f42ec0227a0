/* verify.c — the IR verifier: checks the invariants listed in ir.h on a graph. Run by
 * kiln_graph_finish and (later) after every pass in debug builds. A failure is a bug in
 * whoever produced the graph, so the message names the node and what is wrong with it. */
#include "ir.h"
#include "base/strbuf.h"

#include <stdio.h>
#include <string.h>

static kiln_status bad(const kiln_graph *g, uint32_t id, const char *what) {
    strbuf sb;
    sb_init(&sb, g->ctx);
    if (id) ir_print_node(g, id, &sb);
    char where[32] = "";
    if (id) snprintf(where, sizeof where, ", node %%%u", id);
    kiln_status s = ctx_error(g->ctx, KILN_STATUS_INTERNAL, "IR verifier: graph '%s'%s: %s%s%s",
                              g->name, where, what, sb.data ? "\n  " : "", sb.data ? sb.data : "");
    sb_free(&sb);
    return s;
}

static kiln_status verify_node(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    char msg[768];
    if ((unsigned)n->op >= IR_NUM_OPS) return bad(g, id, "op is out of range");
    if (n->n_in > IR_INLINE_INPUTS && !n->in_heap) {
        snprintf(msg, sizeof msg, "node %%%u has %u inputs but no input array", id, n->n_in);
        return bad(g, 0, msg); /* not printable */
    }
    const uint32_t *in = ir_in(n);
    for (uint32_t i = 0; i < n->n_in; i++)
        if (in[i] == 0 || in[i] >= id) {
            snprintf(msg, sizeof msg, "input %u (%%%u) does not precede the node", i, in[i]);
            return bad(g, id, msg);
        }
    if (n->op == IR_PARAMETER) {
        int k = n->a.param_index;
        if (k < 0 || (uint32_t)k >= g->n_params || g->params[k] != id)
            return bad(g, id, "parameter index does not match the parameter list");
        if (!ir_memory_kind_name(n->a.param_memory_kind))
            return bad(g, id, "parameter memory kind is not a kiln_memory_kind");
    }
    if (n->op == IR_CONSTANT) {
        size_t bytes;
        if (!ir_shape_nbytes(&n->shape, n->dtype, &bytes) || (bytes && !n->data))
            return bad(g, id, "constant without data");
    }
    bool control = ir_ops[n->op].kind == IRK_CONTROL;
    if (!control && n->region) return bad(g, id, "a region on an op that runs none");
    if (control && n->region)
        for (uint32_t k = 0; k < n->region->n_graphs; k++) {
            kiln_status s = ir_verify(n->region->graphs[k]);
            if (s) return s;
        }
    if (n->op == IR_RESULT)
        for (uint32_t k = in[0] + 1; k < id; k++) {
            const ir_node *r = &g->nodes[k];
            if (r->op == IR_RESULT && ir_in(r)[0] == in[0] &&
                r->a.result_index == n->a.result_index)
                return bad(g, id, "a second node for one result of a control op");
        }
    ir_node copy = *n;
    if (ir_infer(g, &copy, msg, sizeof msg)) return bad(g, id, msg);
    if (copy.dtype != n->dtype || !ir_shape_eq(&copy.shape, &n->shape)) {
        char want[IR_TYPE_STR_MAX], have[IR_TYPE_STR_MAX];
        snprintf(msg, sizeof msg, "recorded type %s differs from the inferred type %s",
                 ir_type_str(n->dtype, &n->shape, have, sizeof have),
                 ir_type_str(copy.dtype, &copy.shape, want, sizeof want));
        return bad(g, id, msg);
    }
    return KILN_STATUS_OK;
}

kiln_status ir_verify(const kiln_graph *g) {
    char msg[128];
    uint32_t n_params = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        kiln_status s = verify_node(g, id);
        if (s) return s;
        n_params += g->nodes[id].op == IR_PARAMETER;
    }
    if (n_params != g->n_params) {
        snprintf(msg, sizeof msg, "the parameter list has %u entries for %u parameter nodes",
                 g->n_params, n_params);
        return bad(g, 0, msg);
    }
    for (uint32_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == 0 || g->outputs[i] >= g->n_nodes) {
            snprintf(msg, sizeof msg, "output %u (%%%u) is not a node of the graph", i,
                     g->outputs[i]);
            return bad(g, 0, msg);
        }
    return KILN_STATUS_OK;
}
