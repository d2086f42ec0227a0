/* plan_internal.h — what the planner's files share (plan.c drives; schedule.c orders the
 * kernels; pack.c places temporaries in the arena and in donated buffers).
 *
 * plan_ctx holds what every candidate schedule shares (the kernel DAG, the buffers'
 * kinds and sizes); plan_cand is one schedule planned in full. plan.c plans every
 * strategy into a scratch candidate and keeps the best, so a candidate's arrays are
 * carved from one host allocation (plan_bump) and swapped, never copied field by field. */
#ifndef KILN_PLAN_INTERNAL_H
#define KILN_PLAN_INTERNAL_H

#include "plan.h"

#define PLAN_NONE UINT32_MAX

typedef struct plan_ctx {
    const kiln_graph *g;
    const fusion_plan *fp;
    const plan_options *o;
    kiln_context *ctx;
    uint32_t nk, nb, n_nodes, n_params;
    plan_buffer *base;            /* kind, node, kernel, size of every buffer; the rest unset */
    int32_t *buffer_of;           /* node -> buffer */
    int32_t *scratch_of;          /* kernel -> scratch buffer */
    uint32_t *kernel_of;          /* node -> the kernel whose root it is, PLAN_NONE */
    uint32_t *pred_start, *preds; /* kernel -> kernels producing its inputs (CSR) */
    uint32_t *succ_start, *succs; /* kernel -> kernels reading its roots (CSR) */
    uint32_t *users;              /* buffer -> how many kernels read it */
    uint32_t *in_start;           /* kernel -> first entry of its inputs in `legal` */
    uint8_t *legal;               /* per kernel input: may be overwritten in place */
    int32_t *first_output;        /* node -> the first output listing it, -1 */
    void *block;                  /* the one allocation behind all of the above */
    size_t block_size;
} plan_ctx;

/* One schedule, planned in full. */
typedef struct plan_cand {
    const char *strategy;
    uint32_t *order, *step_of;
    int32_t *wait_step; /* kernel -> step whose kernel waits for it (mem_plan.wait_step) */
    plan_buffer *buf;
    int32_t *leader;       /* buffer -> the buffer whose memory it shares (itself if none) */
    int32_t *unit_last;    /* leader -> last step of its whole in-place chain */
    uint32_t *alias_of;    /* root node -> 1 + input slot it overwrites in place */
    int32_t *output_donor; /* output -> donated argument holding it */
    uint8_t *donor_state;  /* per parameter: DONOR_* */
    uint64_t *live;        /* per step: temp + scratch bytes live */
    uint64_t arena, lower_bound, peak, output_bytes, alias_bytes, inplace_bytes;
    uint64_t host_arena; /* the host arena's extent (PLAN_P_HOST buffers) */
    uint64_t host_args, host_outputs, host_alias; /* pinned_host arguments and outputs */
    void *block;
    size_t block_size;
} plan_cand;

/* What a parameter's buffer holds beyond the argument: NONE (not donated), FREE (donated,
 * nothing yet), UNMATCHED (no output fits; temporaries still may), INPLACE (an in-place
 * chain of temporaries starts there), OUTPUT (it becomes an output), TEMPS (the packer put
 * temporaries into its free gaps). */
enum { DONOR_NONE, DONOR_FREE, DONOR_UNMATCHED, DONOR_INPLACE, DONOR_OUTPUT, DONOR_TEMPS };

/* A bump allocator over one block: measured first (base NULL), then carved. */
typedef struct plan_bump {
    char *base;
    size_t used;
} plan_bump;

static inline void *plan_take(plan_bump *b, size_t n, size_t size) {
    size_t at = (b->used + 15) & ~(size_t)15;
    b->used = at + n * size;
    return b->base ? b->base + at : NULL;
}

/* Schedule strategies, in the order they are tried (the first wins ties). */
enum { PLAN_S_FUSION, PLAN_S_LIST, PLAN_S_DFS, PLAN_S_POSTORDER, PLAN_S_COUNT };
extern const char *const plan_strategy_names[PLAN_S_COUNT];

/* Writes a topological order of the kernels (step -> kernel) for strategy s. */
kiln_status plan_schedule(const plan_ctx *c, int s, uint32_t *order);
/* With overlapping collectives: moves each collective (and the kernels that only feed
 * collectives) to just after its last producer, and each reader of a collective to just
 * before its first reader, keeping the order topological. */
void plan_overlap_order(const plan_ctx *c, uint32_t *order);
/* With overlapping copies: moves each fetch from host memory up to `window` steps before
 * its first reader (after its producer), keeping the order topological; true if any moved. */
bool plan_prefetch_order(const plan_ctx *c, uint32_t *order, uint32_t window);
/* Whether any kernel is a fetch from host memory (nothing for plan_prefetch_order). */
bool plan_has_fetches(const plan_ctx *c);

/* A temporary in pinned_host memory: it lives in the host arena. */
static inline bool plan_is_host(const plan_ctx *c, const plan_buffer *x) {
    return x->kind == PLAN_K_TEMP && ir_in_host(c->g, x->node);
}

/* Any buffer in pinned_host memory: a host temporary, or an argument or output of that
 * kind (kiln_parameter_in_memory), which is the caller's and never a device bin. */
static inline bool plan_in_host(const plan_ctx *c, const plan_buffer *x) {
    return plan_buffer_in_host(c->g, x);
}

/* Donated parameter p is in pinned_host memory: its buffer may only become a host output. */
static inline bool plan_param_in_host(const plan_ctx *c, uint32_t p) {
    return ir_in_host(c->g, c->g->params[p]);
}

/* Places every temporary and scratch buffer of cand (def/last/leader/places of in-place
 * and donation already decided): tries several orders of decreasing-size best fit and
 * keeps the one with the smallest arena. Sets buf[].place/offset and cand->arena; the host
 * temporaries are packed the same way into the host arena (cand->host_arena). */
kiln_status plan_pack(const plan_ctx *c, plan_cand *cand);

#endif
