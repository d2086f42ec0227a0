/* rewrite.h — what every graph-to-graph pass shares: cloning a graph, and the "rebuild"
 * walker that makes a new graph from an old one through an old-id -> new-id map.
 *
 * A pass never edits a graph in place. It walks the old graph in id order (a topological
 * order) and, for each node, decides what the node becomes in the new graph: the same
 * node with its inputs remapped (pass_copy), an existing new node (set map[id], e.g. CSE
 * or x*1 -> x), one or more new nodes (pass_emit), or nothing (dropped, e.g. DCE).
 *
 * The walker keeps what is the graph's contract and no pass may change:
 *  - every parameter, in order, even when dead (they are the signature); parameters are
 *    copied by the walker itself and never shown to the visitor;
 *  - the outputs, remapped (a dropped output is an internal error);
 *  - the graph's name and `finished`; source locations travel with the nodes.
 * On failure (host OOM, or a pass bug caught by the walker's checks) the new graph is
 * freed, the old one is untouched and the context's message names the pass. */
#ifndef KILN_PASSES_REWRITE_H
#define KILN_PASSES_REWRITE_H

#include "ir/ir.h"

typedef struct pass_rebuild {
    const kiln_graph *old;
    kiln_graph *g;    /* the graph being built */
    uint32_t *map;    /* old id -> new id; 0 while unvisited, or when dropped */
    const char *pass; /* for messages: "pass <name>: ..." */
} pass_rebuild;

/* Decides what old node `id` becomes (see above); leaves rb->map[id] = 0 to drop it. */
typedef kiln_status (*pass_visit_fn)(pass_rebuild *rb, uint32_t id, void *user);

/* Rebuilds old through visit. On success *out is the new graph (owned by the caller). */
kiln_status pass_rebuild_graph(const kiln_graph *old, const char *pass, pass_visit_fn visit,
                               void *user, kiln_graph **out);

/* A deep copy of g (names, constant data, spilled input lists); a new graph id. */
kiln_status pass_clone(const kiln_graph *g, kiln_graph **out);

/* Re-emits old node id unchanged except for its inputs, which are remapped; checks that
 * each remapped input has the old input's dtype and shape (a pass bug otherwise). */
kiln_status pass_copy(pass_rebuild *rb, uint32_t id);

/* Emits a node made from tmpl (op, attrs, file/line; dtype for CONVERT and sources; shape
 * for sources, BROADCAST and RESHAPE) with inputs `in` (new ids): types it with ir_infer,
 * then appends it. Takes ownership of tmpl->name and tmpl->data on success only. The new
 * id goes to *id. */
kiln_status pass_emit(pass_rebuild *rb, ir_node *tmpl, const uint32_t *in, uint32_t n_in,
                      uint32_t *id);

/* Emits a copy of node src of another graph (a sub-graph a pass inlines): its op,
 * attributes, location and what it owns (name, constant data, region), with inputs `in`
 * (new ids, src->n_in of them), typed by ir_infer. The new id goes to *id. */
kiln_status pass_emit_copy(pass_rebuild *rb, const ir_node *src, const uint32_t *in, uint32_t *id);

/* The new id of old node id's k-th input (0 if that input was dropped). */
static inline uint32_t pass_input(const pass_rebuild *rb, uint32_t id, uint32_t k) {
    return rb->map[ir_in(&rb->old->nodes[id])[k]];
}
/* The new node behind old node id's k-th input. */
static inline const ir_node *pass_input_node(const pass_rebuild *rb, uint32_t id, uint32_t k) {
    return &rb->g->nodes[pass_input(rb, id, k)];
}

/* Attribute equality and hashing, by op, reading only the entries that mean something
 * for an operand of rank in_rank (the union may hold garbage beyond them). */
bool pass_attrs_equal(ir_op op, int in_rank, const ir_attrs *a, const ir_attrs *b);
uint64_t pass_attrs_hash(ir_op op, int in_rank, const ir_attrs *a, uint64_t seed);

/* The rank of a node's first operand in g (0 for sources). */
static inline int pass_in_rank(const kiln_graph *g, const ir_node *n) {
    return n->n_in ? g->nodes[ir_in(n)[0]].shape.rank : 0;
}

#endif
