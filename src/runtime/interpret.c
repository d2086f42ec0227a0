/* interpret.c — kiln_interpret: the reference interpreter (src/reference) called on
 * arrays. It checks the call the way kiln_executable_run does, evaluates on host memory
 * with ref_eval_host and copies each output into a new array.
 *
 * Arguments are read where they lie: arrays live on device 0, the CPU, whose memory is
 * host memory. On failure every outs[i] is NULL and nothing is held. */
#include "array.h"
#include "backend/device.h"
#include "reference/reference.h"

#include <stdio.h>
#include <string.h>

#define ARGS_ON_STACK 16

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
        return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: graph '%s' has %u parameters, got %d arguments", op, g->name,
                         g->n_params, n_args);
    if (n_args && !args)
        return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: args is NULL", op);
    for (int k = 0; k < n_args; k++) {
        const ir_node *p = &g->nodes[g->params[k]];
        param_label(g, k, label, sizeof label);
        if (!args[k])
            return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", op, label);
        kiln_status s = array_check_owner(args[k], g->ctx, op, k);
        if (s || (s = array_check_live(args[k], op, k))) return s;
        if (args[k]->dtype == p->dtype && ir_shape_eq(&args[k]->shape, &p->shape)) continue;
        return ctx_error(g->ctx, args[k]->dtype != p->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE,
                         "%s: %s is %s, the parameter is %s", op, label,
                         ir_type_str(args[k]->dtype, &args[k]->shape, got, sizeof got),
                         ir_type_str(p->dtype, &p->shape, want, sizeof want));
    }
    return KILN_STATUS_OK;
}

static kiln_status check_call(kiln_graph *g, int n_args, kiln_array *const *args, int n_outs,
                              kiln_array **outs) {
    const char *op = "kiln_interpret";
    if (!g->finished)
        return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: graph '%s' is not finished (call kiln_graph_finish first%s)", op,
                         g->name, g->status ? "; it holds a builder error" : "");
    if (n_outs != (int)g->n_outputs)
        return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: graph '%s' has %u outputs, n_outs is %d", op, g->name, g->n_outputs,
                         n_outs);
    if (!outs) return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: outs is NULL", op);
    return check_args(g, n_args, args);
}

static size_t node_bytes(const kiln_graph *g, uint32_t id) {
    size_t b = 0;
    ir_shape_nbytes(&g->nodes[id].shape, g->nodes[id].dtype, &b);
    return b;
}

/* Moves the host results into new arrays; frees every host buffer either way. */
static kiln_status make_arrays(kiln_graph *g, void **host, kiln_array **outs) {
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        const ir_node *n = &g->nodes[g->outputs[i]];
        char what[96];
        snprintf(what, sizeof what, "kiln_interpret: output %u (node %%%u, %s)", i, g->outputs[i],
                 ir_ops[n->op].name);
        int kind = ir_in_host(g, g->outputs[i]) ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE;
        if (!s) s = array_new_in(g->ctx, what, 0, kind, n->dtype, &n->shape, &outs[i]);
        if (!s && outs[i]->nbytes) memcpy(outs[i]->data, host[i], outs[i]->nbytes);
        host_free(g->ctx, host[i], node_bytes(g, g->outputs[i]));
    }
    if (s)
        for (uint32_t i = 0; i < g->n_outputs; i++) kiln_array_destroy(outs[i]), outs[i] = NULL;
    return s;
}

kiln_status kiln_interpret(kiln_graph *g, int n_args, kiln_array *const *args, int n_outs,
                           kiln_array **outs) {
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    /* cleared first, so that no error leaves a stale pointer there; of a finished graph only
     * as many as both counts allow: a wrong n_outs (check_call's error) is often an array
     * of the graph's size */
    for (int i = 0; outs && i < n_outs && (!g->finished || (uint32_t)i < g->n_outputs); i++)
        outs[i] = NULL;
    kiln_status s = check_call(g, n_args, args, n_outs, outs);
    /* the interpreter reads the arguments' bytes on this thread: asynchronous work writing
     * them must be done (their memory is the host's on every device that exists today) */
    for (int k = 0; k < n_args && !s; k++)
        if (args[k]->ready) s = event_deliver(g->ctx, args[k]->ready, "kiln_interpret");
    if (s) return s;
    for (int k = 0; k < n_args; k++) /* the reference reads arguments in host memory */
        if (!array_host_addressable(args[k]))
            return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "kiln_interpret: argument %d is on %s; the interpreter reads host "
                             "memory (copy it to the CPU first)",
                             k, g->ctx->devices[args[k]->device].name);
    const void *arg_stack[ARGS_ON_STACK] = {0}, **data = arg_stack;
    void *out_stack[ARGS_ON_STACK], **host = out_stack;
    size_t na = (size_t)n_args, no = g->n_outputs;
    if (na > ARGS_ON_STACK && !(data = host_alloc(g->ctx, na * sizeof *data)))
        return ctx_oom(g->ctx, "kiln_interpret: argument list", na * sizeof *data);
    if (no > ARGS_ON_STACK && !(host = host_alloc(g->ctx, no * sizeof *host)))
        s = ctx_oom(g->ctx, "kiln_interpret: output list", no * sizeof *host);
    for (int k = 0; k < n_args; k++) data[k] = args[k]->data;
    if (!s) s = ref_eval_host(g, data, host);
    if (!s) s = make_arrays(g, host, outs);
    if (data != arg_stack) host_free(g->ctx, data, na * sizeof *data);
    if (host != out_stack) host_free(g->ctx, host, no * sizeof *host);
    return s;
}
