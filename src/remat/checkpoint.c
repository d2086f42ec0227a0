/* checkpoint.c — checkpoint regions (kiln_checkpoint_begin/_end) and named values
 * (kiln_checkpoint_name): the tracing half of rematerialisation. Their bookkeeping is the
 * marks table's per-graph state (internal.h), so the graph's core holds none of it.
 *
 * A region only records where it began. Its end decides, for every forward node traced
 * inside it, whether the policy saves it, and marks those it does not REMAT_DROP (with
 * the policy as the reason). Marks only accumulate, so nested regions need nothing more:
 * a value is kept only when every region around it saves it. A region's outputs are kept,
 * as jax.checkpoint keeps a function's results: kiln_graph_finish, once every reader is
 * known, keeps a value that a forward node after the outermost region that dropped it
 * reads (remat_regions_finish), and marks it REMAT_KEEP: fusion gives it a buffer,
 * so the next region's recomputations read it, not the buffers of the ops it sums. Parameters,
 * constants, iotas and backward nodes (a kiln_grad inside the region) are never marked. The
 * recomputation itself is made at compile time (rewrite.c), after the passes, so nothing here
 * changes what a graph computes. Errors are builder errors; names are owned by the graph until
 * kiln_graph_finish. */
#include "internal.h"
#include "trace/trace.h"

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

/* The regions' state of g, attached if need be; NULL after recording op's error. */
static remat_regions *regions(kiln_graph *g, const char *op) {
    remat_regions *r = ir_side_state_make(g, &remat_kind);
    if (!r)
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of the checkpoint state failed");
    return r;
}

static void free_names(kiln_context *ctx, char **names, int n) {
    for (int k = 0; k < n; k++) host_free(ctx, names[k], strlen(names[k]) + 1);
    host_free(ctx, names, (size_t)n * sizeof *names);
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
    remat_regions *r = regions(g, op);
    if (!r) return g->status;
    if (r->n_open == r->cap_open) {
        uint32_t cap = r->cap_open ? 2 * r->cap_open : 4;
        remat_region *v = host_realloc(g->ctx, r->open, r->cap_open * sizeof *v, cap * sizeof *v);
        if (!v)
            return trace_fail(g, KILN_STATUS_HOST_OOM, op,
                              "host allocation for %u open regions failed", cap),
                   g->status;
        r->open = v, r->cap_open = cap;
    }
    remat_region c = {
        .policy = policy, .first = g->n_nodes, .file = g->cur_file, .line = g->cur_line};
    if (n_names && !(c.names = host_calloc(g->ctx, (size_t)n_names, sizeof *c.names)))
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d names failed",
                          n_names),
               g->status;
    for (; c.n_names < n_names; c.n_names++)
        if (!(c.names[c.n_names] = host_strdup(g->ctx, names[c.n_names]))) break;
    if (c.n_names < n_names) {
        int got = c.n_names;
        for (int k = 0; k < got; k++) host_free(g->ctx, c.names[k], strlen(c.names[k]) + 1);
        host_free(g->ctx, c.names, (size_t)n_names * sizeof *c.names);
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of name %d failed", got),
               g->status;
    }
    r->open[r->n_open++] = c;
    return KILN_STATUS_OK;
}

/* Does region c's policy save node id? */
static bool saves(const kiln_graph *g, const remat_regions *r, const remat_region *c, uint32_t id) {
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
    for (uint32_t i = 0; i < r->n_names; i++) {
        if (r->names[i].id != id) continue;
        named = true;
        for (int k = 0; k < c->n_names; k++) listed |= !strcmp(c->names[k], r->names[i].name);
    }
    return c->policy == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ? listed : named && !listed;
}

kiln_status kiln_checkpoint_end(kiln_graph *g) {
    const char *op = "kiln_checkpoint_end";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    remat_regions *r = ir_side_state(g, &remat_kind);
    if (!r || !r->n_open)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "no checkpoint region is open (kiln_checkpoint_begin opens one)"),
               g->status;
    remat_region c = r->open[--r->n_open];
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t id = c.first; id < g->n_nodes && !s; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->backward || remat_fixed(n) || saves(g, r, &c, id)) continue;
        remat_row *w = remat_row_make(g, id);
        if (!w) {
            trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of the marks failed");
            s = g->status;
            break;
        }
        if (!w->mark) w->why = REMAT_WHY_POLICY, w->policy = (uint8_t)c.policy;
        w->mark = REMAT_DROP;
        w->region_end = g->n_nodes; /* outer regions end later: the last one wins */
    }
    free_names(g->ctx, c.names, c.n_names);
    return s;
}

kiln_status remat_regions_finish_check(kiln_graph *g) {
    const remat_regions *r = ir_side_state(g, &remat_kind);
    if (!r || !r->n_open) return KILN_STATUS_OK;
    const remat_region *c = &r->open[r->n_open - 1];
    return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_finish",
                      "%u checkpoint region%s still open (the innermost began at %s:%d); "
                      "close each with kiln_checkpoint_end",
                      r->n_open, r->n_open == 1 ? " is" : "s are", c->file ? c->file : "?",
                      c->line),
           g->status;
}

void remat_regions_release(kiln_context *ctx, void *state) {
    remat_regions *r = state;
    for (uint32_t i = 0; i < r->n_open; i++) free_names(ctx, r->open[i].names, r->open[i].n_names);
    host_free(ctx, r->open, r->cap_open * sizeof *r->open);
    for (uint32_t i = 0; i < r->n_names; i++)
        host_free(ctx, r->names[i].name, strlen(r->names[i].name) + 1);
    host_free(ctx, r->names, r->cap_names * sizeof *r->names);
    *r = (remat_regions){0};
}

/* Keeps the regions' outputs (see the top of the file), then frees the names: no region
 * can read them any more. */
void remat_regions_finish(kiln_graph *g) {
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->backward) continue;
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) {
            remat_row *u = ir_side_row_edit(g, &remat_kind, in[k]);
            if (u && u->mark == REMAT_DROP && id >= u->region_end) u->mark = REMAT_KEEP;
        }
    }
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        remat_row *u = ir_side_row_edit(g, &remat_kind, id);
        if (u) u->region_end = 0;
    }
    remat_regions *r = ir_side_state(g, &remat_kind);
    if (r) remat_regions_release(g->ctx, r);
}

kiln_value kiln_checkpoint_name(kiln_graph *g, kiln_value x, const char *name) {
    const char *op = "kiln_checkpoint_name";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!trace_node(g, op, x, "the value")) return KN_NONE;
    if (!name) return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op, "name is NULL");
    remat_regions *r = regions(g, op);
    if (!r) return KN_NONE;
    if (r->n_names == r->cap_names) {
        uint32_t cap = r->cap_names ? 2 * r->cap_names : 8;
        remat_name *v = host_realloc(g->ctx, r->names, r->cap_names * sizeof *v, cap * sizeof *v);
        if (!v)
            return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %u names failed",
                              cap);
        r->names = v, r->cap_names = cap;
    }
    char *copy = host_strdup(g->ctx, name);
    if (!copy) return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of the name failed");
    r->names[r->n_names++] = (remat_name){x.id, copy};
    /* The node keeps the name too (the first one given; a parameter keeps its own): the
     * passes carry it to the compiled graph, where the plan's listings show it. */
    ir_node *n = &g->nodes[x.id];
    if (!n->name && !(n->name = host_strdup(g->ctx, name)))
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of the name failed");
    return x;
}
