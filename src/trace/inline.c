/* inline.c — trace_inline: a finished graph's computation appended to the graph being
 * traced, its parameters replaced by given values (trace.h).
 *
 * Autodiff uses it to recompute a loop body or a branch inside the backward body it traces
 * (src/autodiff/control_rules.c), and to rebuild a scan's body with extra outputs. Only
 * the nodes the outputs depend on are copied. Each copy owns deep copies of the name and
 * the constant data, and takes a reference on a nested control node's region (sub-graphs
 * never change, so sharing them is safe: ir.h, "ir_region"). Every copy is typed again by
 * trace_emit, and keeps the location of the node it copies, so an error in the copy names
 * the user's line. Side tables (checkpoint marks, composites) are not copied. */
#include "trace.h"

#include <string.h>

/* Marks the nodes of s the outputs depend on. */
static void mark_used(const kiln_graph *s, uint8_t *used) {
    for (uint32_t i = 0; i < s->n_outputs; i++) used[s->outputs[i]] = 1;
    for (uint32_t id = s->n_nodes; id-- > 1;) {
        if (!used[id]) continue;
        const ir_node *n = &s->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) used[in[k]] = 1;
    }
}

/* The copy of node o of s on g, its inputs already mapped to in; 0 after an error. */
static uint32_t copy_node(kiln_graph *g, const char *op, const ir_node *o, const uint32_t *in) {
    ir_node t = *o;
    size_t bytes = 0;
    t.name = NULL, t.data = NULL, t.in_heap = NULL, t.region = NULL;
    if (o->name && !(t.name = host_strdup(g->ctx, o->name))) goto oom;
    if (o->data && ir_shape_nbytes(&o->shape, o->dtype, &bytes) && bytes) {
        if (!(t.data = host_alloc(g->ctx, bytes))) goto oom;
        memcpy(t.data, o->data, bytes);
    }
    t.region = ir_region_ref(o->region);
    kiln_value v = trace_emit(g, op, &t, in, o->n_in);
    if (!v.id) {
        ir_node_release(g->ctx, &t); /* trace_emit failed before the node took them */
        return 0;
    }
    g->nodes[v.id].file = o->file, g->nodes[v.id].line = o->line;
    return v.id;
oom:
    if (t.name) host_free(g->ctx, t.name, strlen(t.name) + 1);
    trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation copying a node of '%s' failed",
               o->name ? o->name : ir_ops[o->op].name);
    return 0;
}

/* Maps s's parameters to args, checking their types. */
static bool map_params(kiln_graph *g, const char *op, const kiln_graph *s, const kiln_value *args,
                       uint32_t *map) {
    for (uint32_t p = 0; p < s->n_params; p++) {
        const ir_node *q = &s->nodes[s->params[p]];
        const ir_node *a = trace_node(g, op, args[p], "an inlined graph's argument");
        if (!a) return false;
        if (a->dtype != q->dtype || !ir_shape_eq(&a->shape, &q->shape)) {
            char t1[IR_TYPE_STR_MAX], t2[IR_TYPE_STR_MAX];
            trace_fail(g, KILN_STATUS_INTERNAL, op, "inlining '%s': parameter %u is %s, given %s",
                       s->name, p, ir_type_str(q->dtype, &q->shape, t1, sizeof t1),
                       ir_type_str(a->dtype, &a->shape, t2, sizeof t2));
            return false;
        }
        map[s->params[p]] = args[p].id;
    }
    return true;
}

kiln_status trace_inline(kiln_graph *g, const char *op, const kiln_graph *s, const kiln_value *args,
                         kiln_value *outs) {
    if (!trace_ready(g, op)) return g && g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if (!s->finished)
        return trace_fail(g, KILN_STATUS_INTERNAL, op, "inlining '%s', which is not finished",
                          s->name),
               g->status;
    size_t mb = (size_t)s->n_nodes * sizeof(uint32_t);
    uint32_t *map = host_calloc(g->ctx, s->n_nodes, sizeof *map);
    uint8_t *used = host_calloc(g->ctx, s->n_nodes, 1);
    uint32_t stack[16], *in = stack, cap = 16;
    if (!map || !used) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation inlining '%s' failed", s->name);
        goto done;
    }
    mark_used(s, used);
    if (!map_params(g, op, s, args, map)) goto done;
    for (uint32_t id = 1; id < s->n_nodes && !g->status; id++) {
        const ir_node *o = &s->nodes[id];
        if (!used[id] || o->op == IR_PARAMETER) continue;
        if (o->n_in > cap) {
            if (in != stack) host_free(g->ctx, in, cap * sizeof *in);
            cap = o->n_in;
            if (!(in = host_alloc(g->ctx, cap * sizeof *in))) {
                in = stack, cap = 16;
                trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation inlining '%s' failed",
                           s->name);
                break;
            }
        }
        const uint32_t *oin = ir_in(o);
        for (uint32_t k = 0; k < o->n_in; k++) in[k] = map[oin[k]];
        map[id] = copy_node(g, op, o, in);
    }
    for (uint32_t i = 0; i < s->n_outputs && !g->status; i++)
        outs[i] = trace_value(g, map[s->outputs[i]]);
done:
    if (in != stack) host_free(g->ctx, in, cap * sizeof *in);
    if (map) host_free(g->ctx, map, mb);
    if (used) host_free(g->ctx, used, s->n_nodes);
    if (g->status)
        for (uint32_t i = 0; i < s->n_outputs; i++) outs[i] = KN_NONE;
    return g->status;
}
