/* checkpoint.c — checkpoint regions (kiln_checkpoint_begin/_end) and named values
 * (kiln_checkpoint_name): the tracing half of rematerialisation. Their bookkeeping is the
 * marks table's per-graph state (internal.h), so the graph's core holds none of it.
 *
 * A region only records where it began. Its end decides, for every forward node traced
 * inside it, whether the policy saves it, offloads it (REMAT_OFFLOAD: the two offload
 * policies) or recomputes it (REMAT_DROP), with the policy as the reason. Marks only accumulate, so
 * nested regions need nothing more: a value is kept only when every region around it saves it. A
 * region's outputs are kept, as jax.checkpoint keeps a function's results: kiln_graph_finish, once
 * every reader is known, keeps a value that a forward node after the outermost region that dropped
 * it reads (remat_regions_finish), and marks it REMAT_KEEP: fusion gives it a buffer, so the next
 * region's recomputations read it, not the buffers of the ops it sums. Parameters, constants, iotas
 * and backward nodes (a kiln_grad inside the region) are never marked. The recomputation itself is
 * made at compile time (rewrite.c), after the passes, so nothing here changes what a graph
 * computes. Errors are builder errors; names are owned by the graph until kiln_graph_finish. */
#include "internal.h"
#include "trace/trace.h"

#include <string.h>

static const char *const policy_names[] = {
    "nothing_saveable",
    "everything_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "save_only_these_names",
    "save_any_names_but_these",
    "offload_dot_with_no_batch_dims",
    "save_and_offload_only_these_names",
};

const char *kiln_checkpoint_policy_name(kiln_checkpoint_policy p) {
    return (unsigned)p < sizeof policy_names / sizeof *policy_names ? policy_names[p] : "?";
}

static bool names_policy(int p) {
    return p == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ||
           p == KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE ||
           p == KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES;
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

/* Copies n names into *out (NULL for none); false after recording op's error. */
static bool copy_names(kiln_graph *g, const char *op, int n, const char *const *names,
                       char ***out) {
    *out = NULL;
    if (!n) return true;
    char **c = host_calloc(g->ctx, (size_t)n, sizeof *c);
    if (!c) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d names failed", n);
        return false;
    }
    for (int k = 0; k < n; k++)
        if (!(c[k] = host_strdup(g->ctx, names[k]))) {
            for (int j = 0; j < k; j++) host_free(g->ctx, c[j], strlen(c[j]) + 1);
            host_free(g->ctx, c, (size_t)n * sizeof *c);
            trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of name %d failed", k);
            return false;
        }
    *out = c;
    return true;
}

static kiln_status begin(kiln_graph *g, const char *op, kiln_checkpoint_policy policy, int n_names,
                         const char *const *names, int n_off, const char *const *off);

kiln_status kiln_checkpoint_begin_offload(kiln_graph *g, int n_save, const char *const *save_names,
                                          int n_offload, const char *const *offload_names) {
    const char *op = "kiln_checkpoint_begin_offload";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    return begin(g, op, KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES, n_save,
                 save_names, n_offload, offload_names);
}

kiln_status kiln_checkpoint_begin(kiln_graph *g, kiln_checkpoint_policy policy, int n_names,
                                  const char *const *names) {
    const char *op = "kiln_checkpoint_begin";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if (policy == KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "save_and_offload_only_these_names takes two lists of names: open its "
                          "region with kiln_checkpoint_begin_offload"),
               g->status;
    return begin(g, op, policy, n_names, names, 0, NULL);
}

static kiln_status begin(kiln_graph *g, const char *op, kiln_checkpoint_policy policy, int n_names,
                         const char *const *names, int n_off, const char *const *off) {
    if ((unsigned)policy >= sizeof policy_names / sizeof *policy_names)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "policy %d is not a policy",
                          (int)policy),
               g->status;
    if (n_off < 0 || (n_off && !off))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "offload_names: n_offload = %d with offload_names %s", n_off,
                          off ? "set" : "NULL"),
               g->status;
    for (int i = 0; i < n_off; i++)
        if (!off[i])
            return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "offload_names[%d] is NULL", i),
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
    if (!copy_names(g, op, n_names, names, &c.names)) return g->status;
    c.n_names = n_names;
    if (!copy_names(g, op, n_off, off, &c.offload)) {
        free_names(g->ctx, c.names, c.n_names);
        return g->status;
    }
    c.n_offload = n_off;
    r->open[r->n_open++] = c;
    return KILN_STATUS_OK;
}

/* Is node id named one of names[0..n)? (*named: it has a name at all) */
static bool listed(const remat_regions *r, uint32_t id, char *const *names, int n, bool *named) {
    bool hit = false;
    *named = false;
    for (uint32_t i = 0; i < r->n_names; i++) {
        if (r->names[i].id != id) continue;
        *named = true;
        for (int k = 0; k < n; k++) hit |= !strcmp(names[k], r->names[i].name);
    }
    return hit;
}

/* What region c's policy does with node id. */
typedef enum { CHOOSE_SAVE, CHOOSE_DROP, CHOOSE_OFFLOAD } choice;
static choice choose(const kiln_graph *g, const remat_regions *r, const remat_region *c,
                     uint32_t id) {
    const ir_node *n = &g->nodes[id];
    bool named;
    switch (c->policy) {
    case KILN_CHECKPOINT_POLICY_EVERYTHING_SAVEABLE: return CHOOSE_SAVE;
    case KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE: return CHOOSE_DROP;
    case KILN_CHECKPOINT_POLICY_DOTS_SAVEABLE: /* jax's: products and convolutions */
        return n->op == IR_DOT || n->op == IR_CONV ? CHOOSE_SAVE : CHOOSE_DROP;
    case KILN_CHECKPOINT_POLICY_DOTS_WITH_NO_BATCH_DIMS_SAVEABLE:
        return n->op == IR_DOT && n->a.dot.n_batch == 0 ? CHOOSE_SAVE : CHOOSE_DROP;
    case KILN_CHECKPOINT_POLICY_OFFLOAD_DOT_WITH_NO_BATCH_DIMS:
        return n->op == IR_DOT && n->a.dot.n_batch == 0 ? CHOOSE_OFFLOAD : CHOOSE_DROP;
    case KILN_CHECKPOINT_POLICY_SAVE_AND_OFFLOAD_ONLY_THESE_NAMES:
        if (listed(r, id, c->names, c->n_names, &named)) return CHOOSE_SAVE;
        return listed(r, id, c->offload, c->n_offload, &named) ? CHOOSE_OFFLOAD : CHOOSE_DROP;
    case KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES:
        return listed(r, id, c->names, c->n_names, &named) ? CHOOSE_SAVE : CHOOSE_DROP;
    default: /* save_any_names_but_these */
        return listed(r, id, c->names, c->n_names, &named) || !named ? CHOOSE_DROP : CHOOSE_SAVE;
    }
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
        choice what = n->backward || remat_fixed(g, n) ? CHOOSE_SAVE : choose(g, r, &c, id);
        if (what == CHOOSE_SAVE) continue;
        remat_row *w = remat_row_make(g, id);
        if (!w) {
            trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of the marks failed");
            s = g->status;
            break;
        }
        /* a recomputation outranks an offload: an outer region that recomputes a value an
         * inner one offloaded recomputes it (its own reason then) */
        if (what == CHOOSE_OFFLOAD && w->mark == REMAT_DROP) continue;
        if (!w->mark || (what == CHOOSE_DROP && w->mark == REMAT_OFFLOAD))
            w->why = REMAT_WHY_POLICY, w->policy = (uint8_t)c.policy;
        w->mark = what == CHOOSE_DROP ? REMAT_DROP : REMAT_OFFLOAD;
        w->region_end = g->n_nodes; /* outer regions end later: the last one wins */
    }
    free_names(g->ctx, c.names, c.n_names);
    free_names(g->ctx, c.offload, c.n_offload);
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
    for (uint32_t i = 0; i < r->n_open; i++) {
        free_names(ctx, r->open[i].names, r->open[i].n_names);
        free_names(ctx, r->open[i].offload, r->open[i].n_offload);
    }
    host_free(ctx, r->open, r->cap_open * sizeof *r->open);
    for (uint32_t i = 0; i < r->n_names; i++)
        host_free(ctx, r->names[i].name, strlen(r->names[i].name) + 1);
    host_free(ctx, r->names, r->cap_names * sizeof *r->names);
    *r = (remat_regions){0};
}

/* Whether forward value id is elementwise work on values the regions save (or that no
 * region dropped), through at most `depth` more elementwise steps over dropped ones: then
 * recomputing it reads only saved buffers, as cheaply as the values kiln recomputes by
 * default (budget.c, REMAT_WHY_CHEAP). */
static bool cheap_from_saved(const kiln_graph *g, uint32_t id, int depth) {
    const ir_node *n = &g->nodes[id];
    const ir_op_info *o = &ir_ops[n->op];
    if (n->backward || !(o->flags & IRF_ELEMENTWISE) || o->kind == IRK_SOURCE || depth < 0)
        return false;
    const uint32_t *in = ir_in(n);
    for (uint32_t k = 0; k < n->n_in; k++) {
        const remat_row *u = ir_side_row(g, &remat_kind, in[k]);
        bool dropped = u && (u->mark == REMAT_DROP || u->mark == REMAT_OFFLOAD);
        if (dropped && !cheap_from_saved(g, in[k], depth - 1)) return false;
    }
    return true;
}

/* Keeps the regions' outputs (see the top of the file), then frees the names: no region
 * can read them any more. An output that is elementwise work on what the regions save
 * (dots_saveable's dot followed by its activation) is left unmarked instead: the default
 * recomputes it where that lowers the peak, as it would with no region at all (kept,
 * per-layer dots_saveable regions planned above no region at all: an outside check). */
kiln_status remat_regions_finish(kiln_graph *g) {
    /* decided on the regions' own marks, then applied: an output left unmarked must not
     * count as saved for the next one's chain */
    uint32_t nn = g->n_nodes ? g->n_nodes : 1;
    uint8_t *cheap = host_calloc(g->ctx, nn, 1);
    if (!cheap)
        return trace_fail(g, KILN_STATUS_HOST_OOM, "kiln_graph_finish",
                          "host allocation of %u bytes for the checkpoint regions failed", nn),
               g->status;
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->backward) continue;
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) {
            const remat_row *u = ir_side_row(g, &remat_kind, in[k]);
            if (u && u->mark == REMAT_DROP && id >= u->region_end && !cheap[in[k]])
                cheap[in[k]] = cheap_from_saved(g, in[k], 4) ? 1 : 2;
        }
    }
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->backward) continue;
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) {
            remat_row *u = ir_side_row_edit(g, &remat_kind, in[k]);
            if (!u || (u->mark != REMAT_DROP && u->mark != REMAT_OFFLOAD) || id < u->region_end)
                continue;
            if (cheap[in[k]] == 1)
                *u = (remat_row){.region_end = u->region_end}; /* unmarked, no reason left */
            else
                u->mark = REMAT_KEEP;
        }
    }
    host_free(g->ctx, cheap, nn);
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        remat_row *u = ir_side_row_edit(g, &remat_kind, id);
        if (u) u->region_end = 0;
    }
    remat_regions *r = ir_side_state(g, &remat_kind);
    if (r) remat_regions_release(g->ctx, r);
    return KILN_STATUS_OK;
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
