/* marks.c — the marks table: a side table of the graph (ir/side.h) holding, per node,
 * whether the value is dropped, kept or a recomputation and why (remat_row), and, per
 * graph, the checkpoint regions being traced (checkpoint.c).
 *
 * Marks survive every pass, and the table's carry rule is where they are kept so that no
 * rewrite can forget to: every node a visit makes in place of an old one (a copy, simplify
 * folding a transpose into a product, expand's primitives, attention's op) takes that
 * node's mark unless it has one (a recomputation, or a source, never does); and when a pass
 * maps a node onto another (CSE merging duplicates, simplify replacing x * 1 by x) the kept
 * node is saved if a forward node merged into it was, and kept as a checkpoint if one was
 * (merge). Without that, whether a checkpoint policy saved a value would depend on how
 * the user spelled it: kiln_matmul(q, kiln_transpose(k)) lost its region's mark when
 * simplify made the product read k directly. Passes below this room see a mark only as
 * hints: a recomputation, a value to materialise, a node a pattern rewrite leaves alone. */
#include "internal.h"

remat_row remat_row_of(const kiln_graph *g, uint32_t id) {
    const remat_row *r = ir_side_row(g, &remat_kind, id);
    return r ? *r : (remat_row){0};
}

remat_row *remat_row_make(kiln_graph *g, uint32_t id) {
    return ir_side_row_make(g, &remat_kind, id);
}

remat_mark remat_mark_of(const kiln_graph *g, uint32_t id) {
    return (remat_mark)remat_row_of(g, id).mark;
}

remat_why remat_why_of(const kiln_graph *g, uint32_t id) {
    return (remat_why)remat_row_of(g, id).why;
}

kiln_checkpoint_policy remat_policy_of(const kiln_graph *g, uint32_t id) {
    return (kiln_checkpoint_policy)remat_row_of(g, id).policy;
}

bool remat_any(const kiln_graph *g) {
    for (uint32_t id = 1; id < g->n_nodes; id++)
        if (remat_mark_of(g, id) == REMAT_DROP || remat_mark_of(g, id) == REMAT_OFFLOAD)
            return true;
    return false;
}

/* Old node o was mapped onto t, a node made before: t keeps o's value in the checkpoint
 * sense too. A forward o that was kept (or is a region's output, REMAT_KEEP) keeps t: a
 * policy that saved one spelling of a value saves the value. A backward o changes nothing
 * (the forward value it duplicates is what a recomputation would give it), nor does a
 * recomputation on either side. */
static bool merge(const kiln_graph *old, uint32_t oid, kiln_graph *g, uint32_t nid) {
    remat_row o = remat_row_of(old, oid), t = remat_row_of(g, nid);
    if (old->nodes[oid].backward || o.mark == REMAT_CLONE || t.mark == REMAT_CLONE) return true;
    if (o.mark == REMAT_KEEP && t.mark != REMAT_KEEP) {
        t.mark = REMAT_KEEP;
        if (!t.why) t.why = o.why, t.policy = o.policy;
    } else if (o.mark == REMAT_NONE && (t.mark == REMAT_DROP || t.mark == REMAT_OFFLOAD)) {
        t.mark = REMAT_NONE, t.why = REMAT_WHY_NONE, t.policy = 0;
    } else {
        return true;
    }
    remat_row *w = remat_row_make(g, nid);
    if (w) *w = t;
    return w != NULL;
}

static bool carry(const kiln_graph *old, uint32_t oid, kiln_graph *g, uint32_t nid, ir_carry how) {
    if (how == IR_CARRY_MERGED) return merge(old, oid, g, nid);
    remat_row o = remat_row_of(old, oid);
    if (!o.mark || remat_mark_of(g, nid) || remat_fixed(g, &g->nodes[nid])) return true;
    remat_row *w = remat_row_make(g, nid);
    if (w) *w = (remat_row){.mark = o.mark, .why = o.why, .policy = o.policy};
    return w != NULL;
}

static unsigned hints(const void *row) {
    switch (((const remat_row *)row)->mark) {
    case REMAT_DROP: return IR_HINT_PINNED;
    case REMAT_CLONE: return IR_HINT_PINNED | IR_HINT_RECOMPUTED;
    case REMAT_KEEP:
    case REMAT_OFFLOAD: return IR_HINT_PINNED | IR_HINT_MATERIALISE;
    default: return 0;
    }
}

const ir_side_kind remat_kind = {
    .name = "remat",
    .state_size = sizeof(remat_regions),
    .row_size = sizeof(remat_row),
    .release = remat_regions_release,
    .carry = carry,
    .hints = hints,
    .finish_check = remat_regions_finish_check,
    .finish = remat_regions_finish,
};
