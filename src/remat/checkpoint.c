/* checkpoint.c — checkpoint regions (kiln_checkpoint_begin/_end) and named values
 * (kiln_checkpoint_name): the tracing half of rematerialisation.
 *
 * A region only records where it began. Its end decides, for every forward node traced
 * inside it, whether the policy saves it, and marks those it does not IR_REMAT_DROP (with
 * the policy as the reason). Marks only accumulate, so nested regions need nothing more:
 * a value is kept only when every region around it saves it. A region's outputs are kept,
 * as jax.checkpoint keeps a function's results: kiln_graph_finish, once every reader is
 * known, keeps a value that a forward node after the outermost region that dropped it
 * reads (trace_checkpoint_outputs), and marks it IR_REMAT_KEEP: fusion gives it a buffer,
 * so the next region's recomputations read it, not the buffers of the ops it sums. Parameters,
 * constants, iotas and backward nodes (a kiln_grad inside the region) are never marked. The
 * recomputation itself is made at compile time (src/passes/remat.c), after the passes, so nothing
 * here changes what a graph computes. Errors are builder errors; names are owned by the graph until
 * kiln_graph_finish. */
#include "trace.h"

#include <string.h>

static const char *const policy_names[] = {
    "nothing_saveable",      "everything_saveable",
    "dots_saveable",         "dots_with_no_batch_dims_saveable",
    "save_only_these_names", "save_any_names_but_these",
};

const char *kiln_checkpoint_policy_name(kiln_checkpoint_policy p) {
    return (unsigned)p < sizeof policy_names / sizeof *policy_names ? policy_names[p] : "?";
}

static bool names_policy(int p) {
    return p == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ||
           p == KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE;
}

kiln_status kiln_checkpoint_begin(kiln_graph *g, kiln_checkpoint_policy policy, int n_names,
                                  const char *const *names) {
    const char *op = "kiln_checkpoint_begin";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if ((unsigned)policy >= sizeof policy_names / sizeof *policy_names)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "policy %d is not a policy",
                          (int)policy),
               g->status;
    if (n_names < 0 || (n_names && !names) || (n_names && !names_policy(policy)))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "%s takes %s names (got n_names = %d, names %s)", policy_names[policy],
                          names_policy(policy) ? "a list of" : "no", n_names,
                          names ? "set" : "NULL"),
               g->status;
    for (int i = 0; i < n_names; i++)
        if (!names[i])
            return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "names[%d] is NULL", i),
                   g->status;
    if (g->n_ckpt == g->cap_ckpt) {
        uint32_t cap = g->cap_ckpt ? 2 * g->cap_ckpt : 4;
        ir_checkpoint *v = host_realloc(g->ctx, g->ckpt, g->cap_ckpt * sizeof *v, cap * sizeof *v);
        if (!v)
            return trace_fail(g, KILN_STATUS_HOST_OOM, op,
                              "host allocation for %u open regions failed", cap),
                   g->status;
        g->ckpt = v, g->cap_ckpt = cap;
    }
    ir_checkpoint c = {
        .policy = policy, .first = g->n_nodes, .file = g->cur_file, .line = g->cur_line};
    if (n_names && !(c.names = host_calloc(g->ctx, (size_t)n_names, sizeof *c.names)))
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d names failed",
                          n_names),
               g->status;
    for (; c.n_names < n_names; c.n_names++)
        if (!(c.names[c.n_names] = host_strdup(g->ctx, names[c.n_names]))) break;
    if (c.n_names < n_names) {
        for (int k = 0; k < c.n_names; k++) host_free(g->ctx, c.names[k], strlen(c.names[k]) + 1);
        host_free(g->ctx, c.names, (size_t)n_names * sizeof *c.names);
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of name %d failed",
                          c.n_names),
               g->status;
    }
    g->ckpt[g->n_ckpt++] = c;
    return KILN_STATUS_OK;
}

/* Does the region's policy save node id? */
static bool saves(const kiln_graph *g, const ir_checkpoint *c, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    switch (c->policy) {
    case KILN_CHECKPOINT_POLICY_EVERYTHING_SAVEABLE: return true;
    case KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE: return false;
    case KILN_CHECKPOINT_POLICY_DOTS_SAVEABLE: return n->op == IR_DOT;
    case KILN_CHECKPOINT_POLICY_DOTS_WITH_NO_BATCH_DIMS_SAVEABLE:
        return n->op == IR_DOT && n->a.dot.n_batch == 0;
    default: break;
    }
    bool named = false, listed = false;
    for (uint32_t i = 0; i < g->n_ckpt_names; i++) {
        if (g->ckpt_names[i].id != id) continue;
        named = true;
        for (int k = 0; k < c->n_names; k++) listed |= !strcmp(c->names[k], g->ckpt_names[i].name);
    }
    return c->policy == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ? listed : named && !listed;
}

kiln_status kiln_checkpoint_end(kiln_graph *g) {
    const char *op = "kiln_checkpoint_end";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if (!g->n_ckpt)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "no checkpoint region is open (kiln_checkpoint_begin opens one)"),
               g->status;
    ir_checkpoint c = g->ckpt[--g->n_ckpt];
    for (uint32_t id = c.first; id < g->n_nodes; id++) {
        ir_node *n = &g->nodes[id];
        if (n->backward || ir_ops[n->op].kind == IRK_SOURCE || saves(g, &c, id)) continue;
        if (!n->remat) n->why = (uint8_t)(c.policy + 1);
        n->remat = IR_REMAT_DROP;
        n->remat_end = g->n_nodes; /* outer regions end later: the last one wins */
    }
    for (int k = 0; k < c.n_names; k++) host_free(g->ctx, c.names[k], strlen(c.names[k]) + 1);
    host_free(g->ctx, c.names, (size_t)c.n_names * sizeof *c.names);
    return KILN_STATUS_OK;
}

void trace_checkpoint_outputs(kiln_graph *g) {
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->backward) continue;
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) {
            ir_node *u = &g->nodes[in[k]];
            if (u->remat == IR_REMAT_DROP && id >= u->remat_end) u->remat = IR_REMAT_KEEP;
        }
    }
    for (uint32_t id = 1; id < g->n_nodes; id++) g->nodes[id].remat_end = 0;
}

kiln_value kiln_checkpoint_name(kiln_graph *g, kiln_value x, const char *name) {
    const char *op = "kiln_checkpoint_name";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!trace_node(g, op, x, "the value")) return KN_NONE;
    if (!name) return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op, "name is NULL");
    if (g->n_ckpt_names == g->cap_ckpt_names) {
        uint32_t cap = g->cap_ckpt_names ? 2 * g->cap_ckpt_names : 8;
        ir_ckpt_name *v =
            host_realloc(g->ctx, g->ckpt_names, g->cap_ckpt_names * sizeof *v, cap * sizeof *v);
        if (!v)
            return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %u names failed",
                              cap);
        g->ckpt_names = v, g->cap_ckpt_names = cap;
    }
    char *copy = host_strdup(g->ctx, name);
    if (!copy) return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of the name failed");
    g->ckpt_names[g->n_ckpt_names++] = (ir_ckpt_name){x.id, copy};
    /* The node keeps the name too (the first one given; a parameter keeps its own): the
     * passes carry it to the compiled graph, where the plan's listings show it. */
    ir_node *n = &g->nodes[x.id];
    if (!n->name && !(n->name = host_strdup(g->ctx, name)))
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of the name failed");
    return x;
}
