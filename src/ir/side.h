/* side.h — side tables: what a room records about a graph and its nodes, kept beside the
 * graph instead of in ir_node or kiln_graph, so the IR's core holds only what every room
 * reads (op, type, inputs, attributes, location).
 *
 * A side table is described by a kind (a static const ir_side_kind, defined by the room
 * that owns the facts: the remat room's marks, the tracer's roles, autodiff's options).
 * Attached to a graph it holds, each part optional, a state object of the kind's
 * state_size (per-graph facts: open checkpoint regions) and a row of row_size bytes per
 * node (per-node facts), zero until written. Invariants:
 *  - a row never read as written reads as zeros: a graph without the table, or a node
 *    appended after the last write, has the all-zero row, so zero must mean "nothing";
 *  - the graph owns its tables: kiln_graph_destroy frees them (release, then the memory);
 *  - a pass rebuilding a graph (passes/rewrite.c) carries every table of the old graph
 *    through its kind's carry rule, so copies and rewrites keep what the tracer recorded;
 *  - ir/ knows no kind: a kind says what its facts mean to the rooms below its owner
 *    through hints (IR_HINT_*), and what kiln_graph_finish must check or settle through
 *    its finish hooks. */
#ifndef KILN_IR_SIDE_H
#define KILN_IR_SIDE_H

#include "ir/ir.h"

/* What a node's facts mean to passes that do not own them (ir_side_hints). */
enum {
    IR_HINT_RECOMPUTED = 1u,  /* a recomputation of a forward value for the backward pass:
                               * CSE never merges it into its original, fusion never joins it
                               * to an earlier kernel, the scheduler runs it late */
    IR_HINT_MATERIALISE = 2u, /* fusion gives it a buffer of its own */
    IR_HINT_PINNED = 4u,      /* a pattern rewrite (attention) leaves it alone: replacing it
                               * would lose what its table says of it */
};

/* How old node `oid` relates to new node `nid` when a pass carries a table: */
typedef enum ir_carry {
    IR_CARRY_RESULT, /* nid is what oid became, made by this visit (a copy or a rewrite) */
    IR_CARRY_PART,   /* nid is another node the visit made in oid's place */
    IR_CARRY_MERGED, /* oid was mapped onto nid, made before (CSE, x * 1 -> x) */
} ir_carry;

typedef struct ir_side_kind {
    const char *name;  /* for messages */
    size_t state_size; /* per-graph state (0: none) */
    size_t row_size;   /* per-node row (0: none) */
    /* Frees what the state owns (NULL: nothing). */
    void (*release)(kiln_context *ctx, void *state);
    /* Writes what new node nid of g learns from old node oid of old (NULL: the table is not
     * carried). False on host OOM. */
    bool (*carry)(const kiln_graph *old, uint32_t oid, kiln_graph *g, uint32_t nid, ir_carry how);
    /* IR_HINT_* bits of a row (NULL: none). */
    unsigned (*hints)(const void *row);
    /* kiln_graph_finish, before it checks the outputs: a builder error to record (with the
     * tracer) or OK (NULL: nothing to check). */
    kiln_status (*finish_check)(kiln_graph *g);
    /* kiln_graph_finish, once the graph is complete and verified (NULL: nothing): a
     * failure (a host allocation) is recorded as a builder error and its status returned,
     * with nothing of the table changed. */
    kiln_status (*finish)(kiln_graph *g);
} ir_side_kind;

/* One attached table (the graph's `side` array). */
typedef struct ir_side {
    const ir_side_kind *kind;
    void *state;
    unsigned char *rows;
    uint32_t n_rows; /* rows held; rows at or after it read as zeros */
} ir_side;

/* The state of kind k on g, or NULL when g has none. */
void *ir_side_state(const kiln_graph *g, const ir_side_kind *k);
/* The state of kind k on g, attached (zeroed) if g had none; NULL on host OOM (no message
 * set). */
void *ir_side_state_make(kiln_graph *g, const ir_side_kind *k);
/* Node id's row of kind k, or NULL for the all-zero row (read only). */
const void *ir_side_row(const kiln_graph *g, const ir_side_kind *k, uint32_t id);
/* Node id's row of kind k for writing when it has one, else NULL (nothing allocated). */
void *ir_side_row_edit(kiln_graph *g, const ir_side_kind *k, uint32_t id);
/* Node id's row of kind k for writing, attaching and growing the table as needed; NULL on
 * host OOM (no message set). */
void *ir_side_row_make(kiln_graph *g, const ir_side_kind *k, uint32_t id);
/* Frees kind k's table of g, if any. */
void ir_side_drop(kiln_graph *g, const ir_side_kind *k);
/* Frees every table of g (kiln_graph_destroy). */
void ir_side_free_all(kiln_graph *g);

/* The IR_HINT_* bits every table of g gives node id. */
unsigned ir_side_hints(const kiln_graph *g, uint32_t id);
/* Carries every table of old: old node oid to new node nid of g (see ir_carry). False on
 * host OOM (no message set). */
bool ir_side_carry(const kiln_graph *old, uint32_t oid, kiln_graph *g, uint32_t nid, ir_carry how);
/* kiln_graph_finish's hooks over every table of g: the first failed check's status. */
kiln_status ir_side_finish_check(kiln_graph *g);
kiln_status ir_side_finish(kiln_graph *g);

#endif
