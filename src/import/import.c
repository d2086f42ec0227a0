/* import.c — the public entry points kiln_import_stablehlo and kiln_import_hlo: argument
 * checks, the cursor's set-up, and the promise that a failed import leaves nothing
 * behind (*out NULL, every graph made on the way destroyed by the front end). A training
 * step's backward part is marked as kiln_grad marks its own (mark_backward), so that the
 * plan knows its saved activations and rematerialisation has its candidates; the mark
 * only steers the plan, never a value. */
#include "import.h"

#include "ir/ir.h"

#include <string.h>

/* JAX's training step returns its loss first (jax.value_and_grad): a float scalar output 0
 * among several. Its ancestors are the forward pass; every other op (the gradients, the
 * optimiser's update) is marked backward, as if kiln_grad had appended it. A program of
 * another form keeps no mark. */
static void mark_backward(kiln_context *ctx, kiln_graph *g) {
    if (g->n_outputs < 2) return;
    const ir_node *loss = &g->nodes[g->outputs[0]];
    if (loss->shape.rank != 0 || !ir_dtype_is_float(loss->dtype)) return;
    size_t size = g->n_nodes;
    bool *forward = host_alloc(ctx, size);
    if (!forward) return; /* a plan without the marks: only less informed */
    memset(forward, 0, size);
    forward[g->outputs[0]] = true;
    for (uint32_t id = g->n_nodes - 1; id >= 1; id--) /* inputs have smaller ids */
        for (uint32_t k = 0; forward[id] && k < g->nodes[id].n_in; k++)
            forward[ir_in(&g->nodes[id])[k]] = true;
    for (uint32_t id = 1; id < g->n_nodes; id++)
        if (!forward[id] && g->nodes[id].op != IR_PARAMETER) g->nodes[id].backward = true;
    host_free(ctx, forward, size);
}

static kiln_status run(kiln_context *ctx, const char *api, const char *text, size_t len,
                       kiln_graph **out, kiln_status (*front)(imp_lex *, kiln_graph **)) {
    if (out) *out = NULL;
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out || (!text && len))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", api,
                         out ? "text" : "out");
    if (len > IMP_MAX_BYTES)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: the text is %zu bytes, more than the %zu an import reads", api, len,
                         IMP_MAX_BYTES);
    imp_lex L = {.ctx = ctx, .api = api, .src = text ? text : "", .len = len, .line = 1};
    kiln_status s = front(&L, out);
    if (!s) mark_backward(ctx, *out);
    if (s) *out = NULL;
    if (s && L.msg[0]) ctx_error(ctx, s, "%s", L.msg); /* the import's own, not a later one */
    return s;
}

kiln_status kiln_import_stablehlo(kiln_context *ctx, const char *text, size_t len,
                                  kiln_graph **out) {
    return run(ctx, "kiln_import_stablehlo", text, len, out, imp_stablehlo);
}

kiln_status kiln_import_hlo(kiln_context *ctx, const char *text, size_t len, kiln_graph **out) {
    return run(ctx, "kiln_import_hlo", text, len, out, imp_hlo);
}
