/* interp.c — kiln_interpret: the reference interpreter's driver. It checks the call,
 * works out which nodes the outputs need and when each value is read for the last time,
 * then runs the needed nodes in id order (a topological order, ir.h) with the kernels of
 * elementwise.c and structural.c.
 *
 * Invariants:
 *  - every buffer comes from the context's host allocator; a value is freed right after
 *    the last node that reads it has run, so at any time only live values are held;
 *  - parameters borrow their argument's bytes and constants the node's: neither is copied
 *    nor freed here;
 *  - an output node is computed straight into a new kiln_array; an output that is a
 *    parameter, a constant, or a node listed a second time is copied, so the caller always
 *    gets independent arrays;
 *  - on any failure everything made so far is freed, every outs[i] is NULL, and the
 *    context's message says what failed. */
#include "reference.h"
#include "exec/array.h"

#include <stdio.h>

#define OUTPUT_USE UINT32_MAX /* last_use of a graph output: kept to the end */

/* "argument 1 ("w")" or "argument 1 (unnamed)". */
static const char *param_label(const kiln_graph *g, int k, char *buf, size_t size) {
    const ir_node *p = &g->nodes[g->params[k]];
    if (p->name)
        snprintf(buf, size, "argument %d (\"%s\")", k, p->name);
    else
        snprintf(buf, size, "argument %d (unnamed)", k);
    return buf;
}

static kiln_status check_args(const kiln_graph *g, int n_args, kiln_array *const *args) {
    const char *op = "kiln_interpret";
    char label[160], want[IR_TYPE_STR_MAX], got[IR_TYPE_STR_MAX];
    if (n_args != (int)g->n_params)
        return ctx_error(g->ctx, KILN_ERR_INVALID_ARGUMENT,
                         "%s: graph '%s' has %u parameters, got %d arguments", op, g->name,
                         g->n_params, n_args);
    if (n_args && !args)
        return ctx_error(g->ctx, KILN_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
    for (int k = 0; k < n_args; k++) {
        const ir_node *p = &g->nodes[g->params[k]];
        param_label(g, k, label, sizeof label);
        if (!args[k])
            return ctx_error(g->ctx, KILN_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, label);
        kiln_status s = array_check_live(args[k], op, k);
        if (s) return s;
        if (args[k]->dtype == p->dtype && ir_shape_eq(&args[k]->shape, &p->shape)) continue;
        return ctx_error(g->ctx, args[k]->dtype != p->dtype ? KILN_ERR_DTYPE : KILN_ERR_SHAPE,
                         "%s: %s is %s, the parameter is %s", op, label,
                         ir_type_str(args[k]->dtype, &args[k]->shape, got, sizeof got),
                         ir_type_str(p->dtype, &p->shape, want, sizeof want));
    }
    return KILN_OK;
}

static kiln_status check_call(kiln_graph *g, int n_args, kiln_array *const *args, int n_outs,
                              kiln_array **outs) {
    const char *op = "kiln_interpret";
    if (!g->finished)
        return ctx_error(g->ctx, KILN_ERR_INVALID_ARGUMENT,
                         "%s: graph '%s' is not finished (call kiln_graph_finish first%s)", op,
                         g->name, g->status ? "; it holds a builder error" : "");
    if (n_outs != (int)g->n_outputs)
        return ctx_error(g->ctx, KILN_ERR_INVALID_ARGUMENT,
                         "%s: graph '%s' has %u outputs, n_outs is %d", op, g->name, g->n_outputs,
                         n_outs);
    if (!outs) return ctx_error(g->ctx, KILN_ERR_INVALID_ARGUMENT, "%s: outs is NULL", op);
    return check_args(g, n_args, args);
}

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

static void release(kiln_context *ctx, ref_value *v) {
    if (!v->borrowed && !v->array) host_free(ctx, v->data, v->nbytes);
    v->data = NULL;
}

/* Gives node id its bytes: borrowed for sources, an output array for outputs, else a
 * fresh host buffer (none for zero bytes). */
static kiln_status new_array(kiln_graph *g, const char *what, const ir_node *n, bool host,
                             kiln_array **out) {
    return host ? array_new_on_host(g->ctx, what, n->dtype, &n->shape, out)
                : array_new(g->ctx, what, n->dtype, &n->shape, out);
}

static kiln_status make_value(kiln_graph *g, uint32_t id, ref_value *v, kiln_array *const *args,
                              bool host) {
    const ir_node *n = &g->nodes[id];
    char what[96], t[IR_TYPE_STR_MAX];
    if (n->op == IR_PARAMETER || n->op == IR_CONSTANT) {
        v->data = n->op == IR_PARAMETER ? args[n->a.param_index]->data : n->data;
        v->borrowed = true;
        return KILN_OK;
    }
    ir_shape_nbytes(&n->shape, n->dtype, &v->nbytes);
    if (v->last_use == OUTPUT_USE) {
        snprintf(what, sizeof what, "kiln_interpret: output node %%%u (%s)", id,
                 ir_ops[n->op].name);
        kiln_status s = new_array(g, what, n, host, &v->array);
        if (!s) v->data = v->array->data;
        return s;
    }
    if (v->nbytes && !(v->data = host_alloc(g->ctx, v->nbytes)))
        return ctx_error(
            g->ctx, KILN_ERR_HOST_OOM,
            "kiln_interpret: host allocation of %zu bytes for node %%%u (%s %s) failed", v->nbytes,
            id, ir_ops[n->op].name, ir_type_str(n->dtype, &n->shape, t, sizeof t));
    return KILN_OK;
}

static kiln_status run_node(kiln_graph *g, uint32_t id, ref_value *vals, kiln_array *const *args,
                            bool host) {
    const ir_node *n = &g->nodes[id];
    kiln_status s = make_value(g, id, &vals[id], args, host);
    if (s || vals[id].borrowed) return s;
    if ((s = ref_eval(g, id, vals, vals[id].data))) return s;
    const uint32_t *in = ir_in(n);
    for (uint32_t k = 0; k < n->n_in; k++)
        if (vals[in[k]].last_use == id) release(g->ctx, &vals[in[k]]);
    return KILN_OK;
}

/* Hands each output its array: the one computed for it the first time it is listed, a
 * copy otherwise. On failure frees what it handed out. */
static kiln_status collect_outputs(kiln_graph *g, ref_value *vals, kiln_array **outs, bool host) {
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t id = g->outputs[i];
        ref_value *v = &vals[id];
        if (v->array && !v->claimed) {
            outs[i] = v->array;
            v->claimed = true;
            continue;
        }
        const ir_node *n = &g->nodes[id];
        char what[96];
        snprintf(what, sizeof what, "kiln_interpret: output %u (node %%%u, %s)", i, id,
                 ir_ops[n->op].name);
        kiln_status s = new_array(g, what, n, host, &outs[i]);
        if (s) {
            for (uint32_t j = 0; j < i; j++) kiln_array_free(outs[j]), outs[j] = NULL;
            return s;
        }
        if (outs[i]->nbytes) memcpy(outs[i]->data, v->data, outs[i]->nbytes);
    }
    return KILN_OK;
}

static void free_values(kiln_context *ctx, ref_value *vals, uint32_t n) {
    for (uint32_t id = 1; id < n; id++) {
        if (vals[id].array && !vals[id].claimed) kiln_array_free(vals[id].array);
        release(ctx, &vals[id]);
    }
}

kiln_status kiln_interpret(kiln_graph *g, int n_args, kiln_array *const *args, int n_outs,
                           kiln_array **outs) {
    return ref_interpret(g, n_args, args, n_outs, outs, false);
}

kiln_status ref_interpret(kiln_graph *g, int n_args, kiln_array *const *args, int n_outs,
                          kiln_array **outs, bool host_outputs) {
    for (int i = 0; outs && i < n_outs; i++) outs[i] = NULL;
    if (!g) return KILN_ERR_INVALID_ARGUMENT;
    kiln_status s = check_call(g, n_args, args, n_outs, outs);
    if (s) return s;
    ref_value *vals = host_calloc(g->ctx, g->n_nodes, sizeof *vals);
    if (!vals) return ctx_oom(g->ctx, "kiln_interpret: the value table", g->n_nodes * sizeof *vals);
    plan_lifetimes(g, vals);
    for (uint32_t id = 1; id < g->n_nodes && !s; id++)
        if (vals[id].last_use) s = run_node(g, id, vals, args, host_outputs);
    if (!s) s = collect_outputs(g, vals, outs, host_outputs);
    free_values(g->ctx, vals, g->n_nodes);
    host_free(g->ctx, vals, g->n_nodes * sizeof *vals);
    return s;
}
