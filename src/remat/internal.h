/* internal.h — what the files of the remat room share and no one else reads: the row of
 * the marks table and the table's per-graph state (checkpoint regions being traced). */
#ifndef KILN_REMAT_INTERNAL_H
#define KILN_REMAT_INTERNAL_H

#include "remat.h"
#include "ir/side.h"

/* A node recomputation never touches: a source (nothing to recompute), a control node or
 * one of its results (a loop is run once; its results are kept, as its sub-graphs run
 * their own checkpoint regions), a copy between memory kinds (offload's own) other than a
 * fetch (ir_is_fetch: fetching a host parameter again for the backward pass costs one
 * copy and frees the device of it in between, as ZeRO-3 and FSDP gather parameters
 * again; it is recomputed like a cheap value, never offloaded: it is on the host). */
static inline bool remat_fixed(const kiln_graph *g, const ir_node *n) {
    ir_kind k = ir_ops[n->op].kind;
    return k == IRK_SOURCE || k == IRK_CONTROL || k == IRK_RESULT ||
           (k == IRK_TRANSFER && !ir_is_fetch(g, n));
}

/* A node's row of the marks table (marks.c): all zero is "nothing". */
typedef struct remat_row {
    uint8_t mark;        /* remat_mark */
    uint8_t why;         /* remat_why: REMAT_DROP's reason; a REMAT_CLONE's, from its original */
    uint8_t policy;      /* kiln_checkpoint_policy, with REMAT_WHY_POLICY */
    uint32_t region_end; /* REMAT_DROP while tracing: the end (first id after) of the
                          * outermost region that dropped it; kiln_graph_finish keeps the
                          * value when a forward node at or after that id reads it */
} remat_row;

/* An open checkpoint region (kiln_checkpoint_begin .. _end). */
typedef struct remat_region {
    kiln_checkpoint_policy policy;
    uint32_t first; /* the first node traced inside it */
    char **names;   /* the policy's names (owned copies): saved ones for save_and_offload */
    int n_names;
    char **offload; /* save_and_offload_only_these_names: the offloaded names (owned) */
    int n_offload;
    const char *file; /* where it began */
    int line;
} remat_region;

/* A value named by kiln_checkpoint_name. */
typedef struct remat_name {
    uint32_t id;
    char *name; /* owned */
} remat_name;

/* The table's per-graph state: the tracing half's bookkeeping, freed by kiln_graph_finish
 * once no region can use it. */
typedef struct remat_regions {
    remat_region *open; /* innermost last */
    uint32_t n_open, cap_open;
    remat_name *names;
    uint32_t n_names, cap_names;
} remat_regions;

extern const ir_side_kind remat_kind;

/* Node id's row (the all-zero row when it has none), and its row for writing (NULL on
 * host OOM, no message set). */
remat_row remat_row_of(const kiln_graph *g, uint32_t id);
remat_row *remat_row_make(kiln_graph *g, uint32_t id);

/* checkpoint.c: the kind's hooks (see ir_side_kind). */
void remat_regions_release(kiln_context *ctx, void *state);
kiln_status remat_regions_finish_check(kiln_graph *g);
kiln_status remat_regions_finish(kiln_graph *g);

/* "1.50 MiB" or "12.00 KiB" into buf (report.c). */
const char *remat_bytes_str(uint64_t v, char *buf, size_t n);

#endif
