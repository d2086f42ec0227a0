/* passes.h — the graph-to-graph optimisation passes and the pipeline that runs them
 * before fusion: unrolling of small loops (unroll.c), algebraic simplification with
 * constant folding (simplify.c), common-subexpression elimination (cse.c) and dead-code
 * elimination (dce.c).
 *
 * Every pass keeps a graph's meaning exactly: for any arguments, the rewritten graph's
 * outputs are bitwise what the reference interpreter gives for the original (NaN
 * payloads of quiet NaNs and signed zeros included). A pass keeps every parameter, in
 * order, even a dead one (they are the signature), the outputs (remapped), the name and
 * `finished`.
 *
 * Two forms of each pass:
 *  - pass_X(&g): replaces *g by the rewritten graph and frees the old one on success;
 *    leaves *g untouched on failure (the message is on the context);
 *  - pass_X_run(g, &out, stats): reads g, never changes it; *out is the new graph (the
 *    caller owns it), or NULL when the pass found nothing to do.
 * stats may be NULL; counts are added to it, so one struct can gather a whole pipeline. */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "ir/ir.h"

/* What the passes did, for tests and reports (KILN_DUMP-style). */
typedef struct pass_stats {
    uint32_t rounds;       /* pipeline rounds run */
    uint32_t simplified;   /* algebraic rewrites (x*1 -> x, transpose chains, ...) */
    uint32_t folded;       /* nodes replaced by a computed constant */
    uint32_t cse_merged;   /* nodes merged into an equal earlier node */
    uint32_t dce_removed;  /* dead nodes removed */
    uint32_t attention;    /* written-out attentions made dot_product_attention */
    uint32_t unrolled;     /* small loops of a known trip count made straight-line code */
    uint32_t nodes_before; /* node counts around passes_run */
    uint32_t nodes_after;
} pass_stats;

/* Options for passes_run; zero-initialise, zero is the default. */
typedef struct pass_options {
    int max_rounds; /* unroll -> simplify -> cse -> dce rounds, stopping early at a fixed point;
                     * 0: 4 */
    bool no_unroll; /* leave out a pass (for tests and for bisecting a bug) */
    bool no_simplify;
    bool no_cse;
    bool no_dce;
    pass_stats *stats; /* NULL, or receives what the passes did (zeroed first) */
} pass_options;

/* Runs the pipeline on *g (a finished graph without a builder error). Replaces *g with the
 * optimised graph and frees the old one on success; leaves *g untouched on failure. The
 * IR verifier runs after every pass that changed the graph in builds without NDEBUG, or
 * when KILN_VERIFY_PASSES=1 (kn_config.verify_passes); a verifier failure is
 * KILN_STATUS_INTERNAL naming the pass. o may be NULL. */
kiln_status passes_run(kiln_graph **g, const pass_options *o);

/* The passes, one file each (see the top of each file for what exactly they do). */
kiln_status pass_dce(kiln_graph **g);
kiln_status pass_cse(kiln_graph **g);
kiln_status pass_simplify(kiln_graph **g);

kiln_status pass_dce_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats);

/* Expansion (expand.c): gather, scatter and integer convolutions always become their
 * primitive form, and with the flags every dot_product_attention's forward pass
 * (PASS_EXPAND_ATTENTION), every one of its gradient's kinds (PASS_EXPAND_ATTENTION_GRAD;
 * with a finite fill always), every convolution (PASS_EXPAND_CONV) and every cholesky and
 * triangular_solve (PASS_EXPAND_LINALG, a loop over rows): what a backend has
 * no library kernel for (kiln_compile decides). Unlike the passes above it may change
 * rounding, not values, but for where a NaN or infinity reaches in attention, whose
 * primitive form spreads one along a row as its kernels do within a block (docs/ops.md). */
enum {
    PASS_EXPAND_ATTENTION = 1u,
    PASS_EXPAND_CONV = 2u,
    PASS_EXPAND_ATTENTION_GRAD = 4u,
    PASS_EXPAND_LINALG = 8u,
};
kiln_status pass_expand(kiln_graph **g, unsigned what);

/* Attention (attention.c): a written-out attention (q k^T, scale, causal select, softmax,
 * times v, none of it read elsewhere) becomes dot_product_attention, for a backend with
 * the fused kernel (kiln_compile decides, after passes_run, and runs the pipeline again
 * when it changed something). Like expansion it may change rounding, not values. *changed
 * says whether it found any; stats may be NULL. */
kiln_status pass_attention(kiln_graph **g, bool *changed, pass_stats *stats);
kiln_status pass_attention_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats);
kiln_status pass_expand_run(const kiln_graph *g, unsigned what, kiln_graph **out);
kiln_status pass_cse_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats);
kiln_status pass_simplify_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats);
/* Unrolling (unroll.c): a while of `i < N` steps or a fori_loop-style scan, whose body is
 * elementwise and shape ops only, becomes its iterations in line when small enough. */
kiln_status pass_unroll_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats);

/* Limits of constant folding (simplify.c): a node whose inputs are all constants is
 * evaluated when its result has at most PASS_FOLD_MAX_ELEMS elements and is no larger
 * than its largest constant input, or has at most PASS_FOLD_SMALL_ELEMS elements; and
 * no input has more than PASS_FOLD_MAX_INPUT_ELEMS elements (so that folding a sum over
 * a broadcast scalar never materialises a huge array at compile time). */
#define PASS_FOLD_MAX_ELEMS       1024
#define PASS_FOLD_SMALL_ELEMS     64
#define PASS_FOLD_MAX_INPUT_ELEMS 65536

#endif
