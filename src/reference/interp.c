/* interp.c — the reference interpreter's driver over host memory (ref_eval_host): works
 * out which nodes the outputs need and when each value is read for the last time, then
 * runs the needed nodes in id order (a topological order, ir.h) with the kernels of
 * elementwise.c and structural.c. It knows nothing of arrays or devices, so compile-time
 * passes can call it; kiln_interpret (src/runtime/interpret.c) checks a call and wraps it.
 *
 * Invariants:
 *  - every buffer comes from the context's host allocator; a value is freed right after
 *    the last node that reads it has run, so at any time only live values are held;
 *  - parameters borrow their argument's bytes and constants the node's: neither is copied
 *    nor freed here;
 *  - an output node's buffer is handed to the caller as it is; an output that is a
 *    parameter, a constant, or a node listed a second time is copied, so the caller
 *    always gets independent buffers;
 *  - on any failure everything made so far is freed, every outs[i] is NULL, and the
 *    context's message says what failed. */
#include "reference.h"

#include <stdio.h>

#define OUTPUT_USE UINT32_MAX /* last_use of a graph output: kept to the end */

/* Marks what the outputs need and each value's last reader. Walking ids downward visits
 * every consumer of a node before the node itself, so its last_use is final by then. */
static void plan_lifetimes(const kiln_graph *g, ref_value *vals) {
    for (uint32_t i = 0; i < g->n_outputs; i++) vals[g->outputs[i]].last_use = OUTPUT_USE;
    for (uint32_t id = g->n_nodes - 1; id >= 1; id--) {
        if (!vals[id].last_use) continue; /* dead: its inputs need not live for it */
        const ir_node *n = &g->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++)
            if (vals[in[k]].last_use < id) vals[in[k]].last_use = id;
    }
}

/* The bytes of result i of control node n. */
static size_t result_bytes(const ir_node *n, uint32_t i) {
    kiln_dtype t;
    ir_shape s;
    size_t b = 0;
    ir_control_result_type(n, i, &t, &s);
    ir_shape_nbytes(&s, t, &b);
    return b;
}

static void release(const kiln_graph *g, uint32_t id, ref_value *v) {
    if (!v->borrowed && !v->claimed) host_free(g->ctx, v->data, v->nbytes);
    v->data = NULL;
    for (uint32_t i = 0; i < v->n_extra; i++)
        host_free(g->ctx, v->extra[i], result_bytes(&g->nodes[id], i + 1));
    if (v->extra) host_free(g->ctx, v->extra, v->n_extra * sizeof *v->extra);
    v->extra = NULL, v->n_extra = 0;
}

/* A control node's results past the first: a buffer each in v->extra (control.c). */
static kiln_status make_extra(const kiln_graph *g, uint32_t id, ref_value *v) {
    const ir_node *n = &g->nodes[id];
    uint32_t count = ir_control_n_results(n) - 1;
    if (!count) return KILN_STATUS_OK;
    if (!(v->extra = host_calloc(g->ctx, count, sizeof *v->extra)))
        return ctx_oom(g->ctx, "reference interpreter: a control node's results", count);
    v->n_extra = count;
    for (uint32_t i = 0; i < count; i++) {
        size_t b = result_bytes(n, i + 1);
        if (b && !(v->extra[i] = host_alloc(g->ctx, b)))
            return ctx_oom(g->ctx, "reference interpreter: a control node's result", b);
    }
    return KILN_STATUS_OK;
}

/* Gives node id its bytes: borrowed for sources, else a fresh host buffer (none for zero
 * bytes). */
static kiln_status make_value(const kiln_graph *g, uint32_t id, ref_value *v,
                              const void *const *args) {
    const ir_node *n = &g->nodes[id];
    char t[IR_TYPE_STR_MAX];
    if (n->op == IR_PARAMETER || n->op == IR_CONSTANT) {
        v->data = n->op == IR_PARAMETER ? (void *)args[n->a.param_index] : n->data;
        v->borrowed = true;
        return KILN_STATUS_OK;
    }
    ir_shape_nbytes(&n->shape, n->dtype, &v->nbytes);
    if (v->nbytes && !(v->data = host_alloc(g->ctx, v->nbytes)))
        return ctx_error(g->ctx, KILN_STATUS_HOST_OOM,
                         "reference interpreter: host allocation of %zu bytes for node %%%u (%s "
                         "%s) failed",
                         v->nbytes, id, ir_ops[n->op].name,
                         ir_type_str(n->dtype, &n->shape, t, sizeof t));
    return ir_ops[n->op].kind == IRK_CONTROL ? make_extra(g, id, v) : KILN_STATUS_OK;
}

static kiln_status run_node(const kiln_graph *g, uint32_t id, ref_value *vals,
                            const void *const *args) {
    const ir_node *n = &g->nodes[id];
    kiln_status s = make_value(g, id, &vals[id], args);
    if (s || vals[id].borrowed) return s;
    if ((s = ref_eval(g, id, vals, vals[id].data))) return s;
    const uint32_t *in = ir_in(n);
    for (uint32_t k = 0; k < n->n_in; k++)
        if (vals[in[k]].last_use == id) release(g, in[k], &vals[in[k]]);
    return KILN_STATUS_OK;
}

/* Hands each output its buffer: the one computed for it the first time it is listed, a
 * copy otherwise. On failure frees what it handed out. */
static kiln_status collect_outputs(const kiln_graph *g, ref_value *vals, void **outs) {
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t id = g->outputs[i];
        ref_value *v = &vals[id];
        if (!v->borrowed && !v->claimed) {
            outs[i] = v->data;
            v->claimed = true;
            continue;
        }
        const ir_node *n = &g->nodes[id];
        size_t bytes = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &bytes);
        if (bytes && !(outs[i] = host_alloc(g->ctx, bytes))) {
            for (uint32_t j = 0; j < i; j++) {
                const ir_node *o = &g->nodes[g->outputs[j]];
                size_t b = 0;
                ir_shape_nbytes(&o->shape, o->dtype, &b);
                host_free(g->ctx, outs[j], b);
                outs[j] = NULL;
            }
            return ctx_error(g->ctx, KILN_STATUS_HOST_OOM,
                             "reference interpreter: host allocation of %zu bytes for output %u "
                             "(node %%%u, %s) failed",
                             bytes, i, id, ir_ops[n->op].name);
        }
        if (bytes) memcpy(outs[i], v->data, bytes);
    }
    return KILN_STATUS_OK;
}

/* Frees every value not handed out. A claimed value is the caller's even on failure of a
 * later output: collect_outputs has freed it then. */
static void free_values(const kiln_graph *g, ref_value *vals, uint32_t n) {
    for (uint32_t id = 1; id < n; id++) release(g, id, &vals[id]);
}

kiln_status ref_eval_host(const kiln_graph *g, const void *const *args, void **outs) {
    for (uint32_t i = 0; i < g->n_outputs; i++) outs[i] = NULL;
    ref_value *vals = host_calloc(g->ctx, g->n_nodes, sizeof *vals);
    if (!vals)
        return ctx_oom(g->ctx, "reference interpreter: the value table", g->n_nodes * sizeof *vals);
    plan_lifetimes(g, vals);
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t id = 1; id < g->n_nodes && !s; id++)
        if (vals[id].last_use) s = run_node(g, id, vals, args);
    if (!s) s = collect_outputs(g, vals, outs);
    free_values(g, vals, g->n_nodes);
    host_free(g->ctx, vals, g->n_nodes * sizeof *vals);
    return s;
}
