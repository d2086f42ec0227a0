/* dce.c — dead-code elimination: drops every node that no graph output depends on,
 * except the results of a control node that stays (its kernel writes every one).
 *
 * Parameters stay even when dead: they are the graph's signature, and callers pass
 * arguments by position. Liveness is one backward sweep: ids are a topological order, so
 * walking them downward reaches every consumer of a node before the node itself, and a
 * node is live exactly when an output or a live consumer reads it. */
#include "passes.h"
#include "rewrite.h"

/* Marks live nodes in live[] (one byte per id); returns how many nodes are dead. */
static uint32_t mark_live(const kiln_graph *g, uint8_t *live) {
    for (uint32_t i = 0; i < g->n_outputs; i++) live[g->outputs[i]] = 1;
    uint32_t dead = 0;
    for (uint32_t id = g->n_nodes - 1; id >= 1; id--) {
        const ir_node *n = &g->nodes[id];
        if (n->op == IR_PARAMETER) live[id] = 1;
        if (!live[id]) {
            dead++;
            continue;
        }
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) live[in[k]] = 1;
    }
    /* A control node writes all its results: one that is kept keeps them all (a result
     * nothing reads is a buffer the loop writes and the plan frees at once). */
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->op == IR_RESULT && !live[id] && live[ir_in(n)[0]]) live[id] = 1, dead--;
    }
    return dead;
}

static kiln_status keep_live(pass_rebuild *rb, uint32_t id, void *user) {
    const uint8_t *live = user;
    return live[id] ? pass_copy(rb, id) : KILN_STATUS_OK;
}

kiln_status pass_dce_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats) {
    *out = NULL;
    uint8_t *live = host_calloc(g->ctx, g->n_nodes, 1);
    if (!live)
        return ctx_error(g->ctx, KILN_STATUS_HOST_OOM,
                         "pass dce: host allocation of %u bytes for the liveness map failed",
                         g->n_nodes);
    uint32_t dead = mark_live(g, live);
    kiln_status s = dead ? pass_rebuild_graph(g, "dce", keep_live, live, out) : KILN_STATUS_OK;
    host_free(g->ctx, live, g->n_nodes);
    if (!s && stats) stats->dce_removed += *out ? dead : 0;
    return s;
}
