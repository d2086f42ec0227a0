/* cse.c — common-subexpression elimination: nodes that compute the same value become one.
 *
 * Two nodes are the same when they have the same op, dtype, shape and inputs (after the
 * inputs themselves were merged), the same meaningful attributes (pass_attrs_equal:
 * only the entries up to the operand's rank, since the attribute union may hold garbage
 * beyond them) and, control nodes, sub-graphs alike (ir_region_equal). Constants are the same when
 * their dtype, shape and bytes are: bitwise, so 0.0 and -0.0 stay apart (they are different values)
 * while two NaNs with the same bits merge (no op can tell them apart). Parameters are never merged
 * (the walker copies them). Every op is a pure function of its inputs, so merging never changes a
 * result.
 *
 * One forward walk: the rebuild visits nodes in topological order, so a node's inputs are
 * already merged when it is looked up, and chains of duplicates collapse in one pass. The
 * table maps a node's hash to the id of the first equal node in the new graph. */
#include "passes.h"
#include "ir/side.h"
#include "rewrite.h"
#include "base/hashmap.h"

#include <string.h>

typedef struct cse_state {
    hm_map table;     /* hash -> new id of the first node with that content */
    uint8_t *carry;   /* per old node: the initial carry of a loop (never merged) */
    pass_rebuild *rb; /* the walk, and the old node being looked up */
    uint32_t id;
    uint32_t merged;
} cse_state;

static size_t const_bytes(const ir_node *n) {
    size_t b = 0;
    ir_shape_nbytes(&n->shape, n->dtype, &b); /* fits: the node was typed */
    return b;
}

/* Hash of old node id as it would be in the new graph (inputs remapped). */
static uint64_t node_hash(const pass_rebuild *rb, uint32_t id) {
    const ir_node *o = &rb->old->nodes[id];
    uint64_t h =
        hm_hash_u64(((uint64_t)o->op << 32) ^ ((uint64_t)o->dtype << 8) ^ (uint64_t)o->shape.rank);
    h = hm_hash_bytes(o->shape.dims, (size_t)o->shape.rank * sizeof *o->shape.dims, h);
    for (uint32_t k = 0; k < o->n_in; k++) h = hm_hash_u64(h ^ pass_input(rb, id, k)) + k;
    h = pass_attrs_hash(o->op, pass_in_rank(rb->old, o), &o->a, h);
    if (o->op == IR_CONSTANT && o->data) h = hm_hash_bytes(o->data, const_bytes(o), h);
    return h;
}

/* Equality callback: does new node `key` compute what the old node being looked up does? */
static bool same_node(void *user, uint64_t key) {
    const cse_state *cs = user;
    const pass_rebuild *rb = cs->rb;
    const ir_node *a = &rb->old->nodes[cs->id], *b = &rb->g->nodes[key];
    if (a->op != b->op || a->dtype != b->dtype || a->n_in != b->n_in ||
        !ir_shape_eq(&a->shape, &b->shape))
        return false;
    const uint32_t *bin = ir_in(b);
    for (uint32_t k = 0; k < a->n_in; k++)
        if (pass_input(rb, cs->id, k) != bin[k]) return false;
    if (!pass_attrs_equal(a->op, pass_in_rank(rb->old, a), &a->a, &b->a)) return false;
    /* a control node's computation is its sub-graphs: two conds on one operand with their
     * branches swapped, or a scan and the copy of it kiln_grad extended with residuals,
     * have equal inputs and attributes */
    if ((a->region || b->region) &&
        (!a->region || !b->region || !ir_region_equal(a->region, b->region)))
        return false;
    if (a->op != IR_CONSTANT) return true;
    size_t n = const_bytes(a);
    return !n || !memcmp(a->data, b->data, n);
}

static kiln_status visit(pass_rebuild *rb, uint32_t id, void *user) {
    cse_state *cs = user;
    cs->rb = rb, cs->id = id;
    /* A recomputation is a duplicate on purpose (jax's prevent_cse): merging it into the
     * forward value would keep that value alive until the backward pass again. */
    if (ir_side_hints(rb->old, id) & IR_HINT_RECOMPUTED) return pass_copy(rb, id);
    /* Nor is a second fetch of a host argument (memory_put to the device of a pinned_host
     * parameter): the program fetches it again where it reads it, so that the device holds
     * it only there (the optimiser's update apart from the model's passes). */
    const ir_node *o = &rb->old->nodes[id];
    if (ir_is_fetch(rb->old, o)) return pass_copy(rb, id);
    /* Nor is a loop's initial carry (zeros a gradient sum starts from, say): the loop
     * updates each carry in place over its own initial value, which one value shared by
     * several carries cannot be, and the copies the loop would then make are held beside
     * its carries for the whole loop step. */
    if (cs->carry && cs->carry[id] && o->shape.rank) return pass_copy(rb, id);
    uint64_t h = node_hash(rb, id), found;
    if (hm_find(&cs->table, h, same_node, cs, &found, NULL)) {
        rb->map[id] = (uint32_t)found;
        cs->merged++;
        return KILN_STATUS_OK;
    }
    kiln_status s = pass_copy(rb, id);
    if (!s && !hm_add(&cs->table, h, rb->map[id], 0))
        s = ctx_error(rb->g->ctx, KILN_STATUS_HOST_OOM,
                      "pass cse: host allocation for the table of %zu nodes failed",
                      cs->table.count + 1);
    return s;
}

kiln_status pass_cse_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats) {
    *out = NULL;
    cse_state cs = {.merged = 0};
    hm_init(&cs.table, g->ctx);
    if (!hm_reserve(&cs.table, g->n_nodes))
        return ctx_error(g->ctx, KILN_STATUS_HOST_OOM,
                         "pass cse: host allocation for the table of %u nodes failed", g->n_nodes);
    for (uint32_t id = 1; id < g->n_nodes; id++) { /* loops' initial carries */
        const ir_node *n = &g->nodes[id];
        if (n->op != IR_WHILE && n->op != IR_SCAN) continue;
        if (!cs.carry && !(cs.carry = host_calloc(g->ctx, g->n_nodes, 1))) {
            hm_free(&cs.table);
            return ctx_oom(g->ctx, "pass cse", g->n_nodes);
        }
        for (int k = 0; k < n->a.ctl.n_carry; k++) cs.carry[ir_in(n)[k]] = 1;
    }
    kiln_graph *next = NULL;
    kiln_status s = pass_rebuild_graph(g, "cse", visit, &cs, &next);
    hm_free(&cs.table);
    if (cs.carry) host_free(g->ctx, cs.carry, g->n_nodes);
    if (s) return s;
    if (!cs.merged) {
        kiln_graph_destroy(next);
        return KILN_STATUS_OK;
    }
    if (stats) stats->cse_merged += cs.merged;
    *out = next;
    return KILN_STATUS_OK;
}
