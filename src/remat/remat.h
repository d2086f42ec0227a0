/* remat.h — rematerialisation (gradient checkpointing) in one room: which forward values
 * are not saved for the backward pass, and their recomputation there (DESIGN §2.3).
 *
 * The room, in the order a value goes through it:
 *   marks.c       the marks: a side table of the graph (ir/side.h), a row per node saying
 *                 whether the value is dropped, kept or a recomputation, and why; every
 *                 pass carries it, and passes below this room read it only as hints
 *                 (IR_HINT_*), never by including this header
 *   checkpoint.c  kiln_checkpoint_begin/_end/_name: regions whose policy marks what they
 *                 do not save, while tracing (the room's builder state rides the same table)
 *   rewrite.c     the compile-time pass giving every backward read of a dropped value a
 *                 recomputation of it (remat_rewrite)
 *   budget.c      what to drop: the regions, cheap elementwise values by default, and under
 *                 a memory budget the cheapest proposal whose planned peak fits
 *                 (remat_choose); it plans each trial through a callback (remat_planner),
 *                 so nothing here reaches the executable
 *   report.c      the rematerialisation lines of the memory report
 *
 * Dependency order (tests/check_includes.sh): after plan/, before codegen/: it reads the
 * tracer (regions record builder errors), the passes (the rewrite walker) and the planner
 * (a trial's plan); src/compile/remat.c calls it. */
#ifndef KILN_REMAT_H
#define KILN_REMAT_H

#include "base/strbuf.h"
#include "ir/ir.h"
#include "plan/plan.h"

/* A node's mark. */
typedef enum remat_mark {
    REMAT_NONE,
    REMAT_DROP,    /* not saved for the backward pass: a region's policy left it out */
    REMAT_CLONE,   /* a recomputation the rewrite made (also `backward`) */
    REMAT_KEEP,    /* a checkpoint kept (a region's output, or the budget's cut): fusion gives
                    * it a buffer, so recomputations read it rather than what it is made of */
    REMAT_OFFLOAD, /* saved in host memory: copied there once made, and back (a REMAT_CLONE
                    * memory_put) just before its first backward reader */
} remat_mark;

/* Why a value is dropped (and so why its recomputation exists): a mark's reason, and the
 * entries of remat_rewrite's `extra`. */
typedef enum remat_why {
    REMAT_WHY_NONE,
    REMAT_WHY_POLICY,         /* a checkpoint region's policy (remat_policy_of says which) */
    REMAT_WHY_BUDGET_GREEDY,  /* the memory budget: greedy by bytes per FLOP */
    REMAT_WHY_BUDGET_SEGMENT, /* the memory budget: sqrt(n) segments */
    REMAT_WHY_CHEAP,          /* a cheap elementwise value, recomputed by default */
    REMAT_WHY_KEEP,           /* in `extra` only: keep it (REMAT_KEEP), a cut of the budget's */
    REMAT_WHY_BUDGET_OFFLOAD, /* in `extra`: offload it (the memory budget's choice) */
    REMAT_WHY_FETCH,          /* a host argument fetched again for the backward pass */
} remat_why;

/* Node id's mark, reason and (for REMAT_WHY_POLICY) kiln_checkpoint_policy. */
remat_mark remat_mark_of(const kiln_graph *g, uint32_t id);
remat_why remat_why_of(const kiln_graph *g, uint32_t id);
kiln_checkpoint_policy remat_policy_of(const kiln_graph *g, uint32_t id);
/* True if a checkpoint region dropped any value of g. */
bool remat_any(const kiln_graph *g);

/* The cost model's FLOPs of one node: an element per elementwise op, an input element per
 * reduction, 2 M N K per matrix product, nothing for shape ops and sources. */
double remat_node_flops(const kiln_graph *g, uint32_t id);

/* The rewrite (rewrite.c): gives every backward read of a dropped forward value (one a
 * checkpoint region marked REMAT_DROP, or with extra[id] a remat_why other than
 * REMAT_WHY_KEEP and REMAT_WHY_BUDGET_OFFLOAD) a recomputation of it, made just before its
 * first backward reader; and every backward read of an offloaded one (REMAT_OFFLOAD, or
 * extra[id] REMAT_WHY_BUDGET_OFFLOAD) a copy of it brought back from host memory there.
 * *out is always a new graph. What it added goes to *st (may be NULL). */
typedef struct remat_stats {
    uint32_t n_recomputed;  /* nodes recomputed (REMAT_CLONE) */
    double added_flops;     /* their FLOPs (remat_node_flops) */
    double added_bytes;     /* the bytes of their results (what recomputing writes) */
    double step_flops;      /* FLOPs of the whole rewritten program */
    uint32_t n_offloaded;   /* values copied to host memory and back */
    uint64_t offload_bytes; /* their bytes (each copied once each way) */
    /* set by the budget search from a trial's plan, not by the rewrite (0 without rates):
     * the seconds of those copies at the link rate, and the part of them the step waits
     * for (all of it unless the device overlaps copies with its kernels) */
    double copy_s, copy_wait_s;
} remat_stats;
kiln_status remat_rewrite(const kiln_graph *g, const uint8_t *extra, kiln_graph **out,
                          remat_stats *st);

/* What rematerialisation did, for the memory analysis and the report. */
typedef struct remat_info {
    uint64_t peak_without; /* the planned peak with nothing recomputed (0: not planned) */
    uint64_t budget;       /* the budget in bytes (0: none) */
    uint64_t min_peak;     /* the smallest peak a proposal reached under a budget (0: none) */
    uint32_t n_recomputed;
    double added_flops, step_flops;
    uint32_t n_offloaded;   /* values offloaded to host memory (remat_stats) */
    uint64_t offload_bytes; /* their bytes */
    const char *strategy;   /* NULL: nothing recomputed or offloaded */
    /* how the budget search weighed its proposals: by time at the device's rates (else
     * by FLOPs), with copies overlapping the kernels counted (remat_planner's
     * overlap_transfers); and the chosen proposal's copy seconds (remat_stats) */
    bool timed, overlap;
    double copy_s, copy_wait_s;
} remat_info;

/* How the search plans a trial: plan fuses and plans g in full (the compile's own fusion,
 * dot layouts and memory plan) and points *mem and *fp at the result, which stays valid
 * until release; one trial at a time. */
typedef struct remat_planner {
    kiln_status (*plan)(void *user, const kiln_graph *g, const mem_plan **mem,
                        const fusion_plan **fp);
    void (*release)(void *user);
    void *user;
    /* g is a loop body or branch, compiled on its own under its program's options: a
     * fraction budget (a share of the whole program's peak) does not apply to it, and a
     * byte budget it cannot meet alone is met as far as it can be (the proposal of the
     * smallest peak) rather than refused: the program's own search, which counts the body
     * as its loop's scratch, decides whether the whole fits. */
    bool sub_graph;
    /* Optional (NULL: never offload): the device's f32 product rate in FLOP/s, its link
     * to pinned_host memory in bytes/s, both ways, and its memory's copy rate in bytes/s
     * (0: none), asked for only by a budget search allowed to offload
     * (kiln_compile_options.budget_offload). */
    kiln_status (*rates)(void *user, double *flop_rate, double *link_rate, double *mem_rate);
    /* The device runs copies between memory kinds on a queue of its own beside its kernels,
     * and plan plans them so (plan_options.overlap_transfers: each copy started at its step
     * and waited for at mem_plan.wait_step): a copy then costs only the part of it the
     * kernels it runs beside do not cover. False: copies run in order with the kernels,
     * and each costs all of its time. Read only with rates. */
    bool overlap_transfers;
} remat_planner;

/* Chooses and applies the recomputation (budget.c): the checkpoint regions of *g and, under
 * a budget (o->memory_budget, o->memory_budget_fraction, else the context's
 * KILN_MEMORY_BUDGET), the cheapest extra choice whose planned peak fits. On return *g is
 * the graph to fuse and plan (the old one freed when replaced), *info says what was done. */
kiln_status remat_choose(kiln_graph **g, const kiln_compile_options *o, const remat_planner *pl,
                         remat_info *info);

/* Appends the rematerialisation lines of the memory report (report.c): the peaks with and
 * without recomputation, the FLOPs added, and a line per recomputation with its reason;
 * peak is the final plan's, materialised (per node, may be NULL) fusion's buffers. */
void remat_report(strbuf *sb, const kiln_graph *g, const remat_info *r, uint64_t peak,
                  const uint8_t *materialised);

#endif
