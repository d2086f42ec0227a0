/* inline.c — trace_inline: a finished graph's computation appended to the graph being
 * traced, its parameters replaced by given values (trace.h).
 *
 * Autodiff uses it to recompute a loop body or a branch inside the backward body it traces
 * (src/autodiff/control_rules.c), to rebuild a scan's body with extra outputs, and
 * (trace_inline_part) to split a body traced with its VJP into the part a forward scan
 * computes and the part its backward scan computes from the saved residuals. Only
 * the nodes the outputs depend on are copied. Each copy owns deep copies of the name and
 * the constant data, and takes a reference on a nested control node's region (sub-graphs
 * never change, so sharing them is safe: ir.h, "ir_region"). Every copy is typed again by
 * trace_emit, and keeps the location of the node it copies, so an error in the copy names
 * the user's line. Side tables (checkpoint marks, composites) are not copied, except the
 * kiln_custom_vjp records: a loop's VJP differentiates the copy of its body, which must call
 * the user's backward functions as the body would. A call whose outputs are copied has its
 * residuals copied too (bwd reads them, though no output does); one whose outputs are not
 * copied (dropped, or substituted: its VJP was taken already) is dropped. */
#include "trace.h"

#include <string.h>

/* Marks the inputs of the nodes marked used (1), transitively, up to the substituted ones
 * (used 2: mapped already, never copied, their inputs not followed). */
static void mark_inputs(const kiln_graph *s, uint8_t *used) {
    for (uint32_t id = s->n_nodes; id-- > 1;) {
        if (used[id] != 1) continue;
        const ir_node *n = &s->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++)
            if (!used[in[k]]) used[in[k]] = 1;
    }
}

/* Marks the outputs and residuals of the custom_vjp calls with an output copied (its bwd
 * reads them all: the outputs' types, the residuals' values); true if that marked any
 * node not marked before. */
static bool mark_residuals(const kiln_graph *s, uint8_t *used) {
    uint32_t n;
    const trace_custom_vjp *cv = trace_custom_vjps(s, &n);
    bool more = false;
    for (uint32_t i = 0; i < n; i++) {
        bool any = false;
        for (int j = 0; j < cv[i].n_out; j++) any |= used[cv[i].out[j]] == 1;
        for (int j = 0; any && j < cv[i].n_out + cv[i].n_res; j++) {
            if (used[cv[i].out[j]]) continue;
            used[cv[i].out[j]] = 1;
            more = true;
        }
    }
    return more;
}

/* Marks the nodes of s the wanted ones depend on, and the residuals of the custom_vjp calls
 * they depend on (until no more: a residual may read another call's output). */
static void mark_used(const kiln_graph *s, int n_want, const uint32_t *want, uint8_t *used) {
    for (int i = 0; i < n_want; i++)
        if (!used[want[i]]) used[want[i]] = 1;
    do mark_inputs(s, used);
    while (mark_residuals(s, used));
}

/* Copies the custom_vjp records of s whose outputs and residuals were all copied (map: s's
 * ids to g's). */
static void copy_custom_vjps(kiln_graph *g, const char *op, const kiln_graph *s,
                             const uint8_t *used, const uint32_t *map) {
    uint32_t n;
    const trace_custom_vjp *cv = trace_custom_vjps(s, &n);
    for (uint32_t i = 0; i < n && !g->status; i++) {
        trace_custom_vjp r = cv[i];
        bool all = true;
        for (int j = 0; j < r.n_out + r.n_res; j++) {
            all &= used[r.out[j]] == 1 && map[r.out[j]] != 0;
            r.out[j] = map[r.out[j]];
        }
        if (!all) continue;
        for (int k = 0; k < r.n_in; k++) r.in[k] = map[r.in[k]];
        uint32_t first = UINT32_MAX, last = 0; /* the copies of its nodes, not of captures */
        for (uint32_t id = cv[i].first; id <= cv[i].last; id++) {
            if (!map[id] || used[id] != 1 || s->nodes[id].op == IR_PARAMETER) continue;
            if (map[id] < first) first = map[id];
            if (map[id] > last) last = map[id];
        }
        if (first > last) continue;
        r.first = first, r.last = last;
        trace_custom_vjp_add(g, op, &r);
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

/* Maps s's parameters to args, checking their types (a parameter not used may have none). */
static bool map_params(kiln_graph *g, const char *op, const kiln_graph *s, const kiln_value *args,
                       const uint8_t *used, uint32_t *map) {
    for (uint32_t p = 0; p < s->n_params; p++) {
        const ir_node *q = &s->nodes[s->params[p]];
        if (used[s->params[p]] != 1 && !args[p].id) continue;
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

/* Maps the substituted nodes, checking their types. */
static bool map_subs(kiln_graph *g, const char *op, const kiln_graph *s, int n_sub,
                     const uint32_t *sub, const kiln_value *vals, uint8_t *used, uint32_t *map) {
    for (int i = 0; i < n_sub; i++) {
        const ir_node *q = &s->nodes[sub[i]];
        const ir_node *a = trace_node(g, op, vals[i], "an inlined graph's substitute");
        if (!a) return false;
        if (a->dtype != q->dtype || !ir_shape_eq(&a->shape, &q->shape)) {
            trace_fail(g, KILN_STATUS_INTERNAL, op, "inlining '%s': node %%%u's substitute differs",
                       s->name, sub[i]);
            return false;
        }
        map[sub[i]] = vals[i].id, used[sub[i]] = 2;
    }
    return true;
}

kiln_status trace_inline_part(kiln_graph *g, const char *op, const kiln_graph *s,
                              const kiln_value *args, int n_sub, const uint32_t *sub,
                              const kiln_value *sub_vals, int n_want, const uint32_t *want,
                              kiln_value *outs) {
    if (!trace_ready(g, op)) return g && g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    size_t mb = (size_t)s->n_nodes * sizeof(uint32_t);
    uint32_t *map = host_calloc(g->ctx, s->n_nodes, sizeof *map);
    uint8_t *used = host_calloc(g->ctx, s->n_nodes, 1);
    uint32_t stack[16], *in = stack, cap = 16;
    if (!map || !used) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation inlining '%s' failed", s->name);
        goto done;
    }
    if (!map_subs(g, op, s, n_sub, sub, sub_vals, used, map)) goto done;
    mark_used(s, n_want, want, used);
    if (!map_params(g, op, s, args, used, map)) goto done;
    for (uint32_t id = 1; id < s->n_nodes && !g->status; id++) {
        const ir_node *o = &s->nodes[id];
        if (used[id] != 1 || o->op == IR_PARAMETER) continue;
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
    copy_custom_vjps(g, op, s, used, map);
    for (int i = 0; i < n_want && !g->status; i++) {
        if (!want[i])
            outs[i] = KN_NONE; /* nothing wanted there (a VJP's absent gradient) */
        else if (!map[want[i]])
            trace_fail(g, KILN_STATUS_INTERNAL, op, "inlining '%s': node %%%u has no value",
                       s->name, want[i]);
        else
            outs[i] = trace_value(g, map[want[i]]);
    }
done:
    if (in != stack) host_free(g->ctx, in, cap * sizeof *in);
    if (map) host_free(g->ctx, map, mb);
    if (used) host_free(g->ctx, used, s->n_nodes);
    if (g->status)
        for (int i = 0; i < n_want; i++) outs[i] = KN_NONE;
    return g->status;
}

kiln_status trace_inline(kiln_graph *g, const char *op, const kiln_graph *s, const kiln_value *args,
                         kiln_value *outs) {
    if (!trace_ready(g, op)) return g && g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if (!s->finished)
        return trace_fail(g, KILN_STATUS_INTERNAL, op, "inlining '%s', which is not finished",
                          s->name),
               g->status;
    return trace_inline_part(g, op, s, args, 0, NULL, NULL, (int)s->n_outputs, s->outputs, outs);
}
