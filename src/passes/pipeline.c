/* pipeline.c — runs the passes in order (unroll -> simplify -> cse -> dce) until a round changes
 * nothing or the round limit is reached, verifying the IR after each pass that changed
 * the graph when verification is on; and the in-place forms pass_X(&g) of each pass.
 *
 * Why this order: unrolling copies a loop's body once per iteration, leaving constants to
 * fold (its counter) and copies to merge; simplification makes duplicates (rewritten subtrees that
 * now match) and dead values (whatever a rewrite bypassed); CSE merges the duplicates, which can
 * make more values dead; DCE then removes all dead values at once. A merge can expose a
 * new simplification (select(p, a, b) with a and b now one value), hence the rounds.
 *
 * Invariant: the caller's graph is never changed and only freed at the very end, after
 * every pass succeeded; intermediate graphs belong to this file and are freed as soon as
 * the next one exists. */
#include "passes.h"
#include "rewrite.h"

#define PIPELINE_DEFAULT_ROUNDS 4

typedef kiln_status (*pass_run_fn)(const kiln_graph *g, kiln_graph **out, pass_stats *stats);

/* Debug builds verify always; release builds when KILN_VERIFY_PASSES is set. */
static bool verify_enabled(const kiln_context *ctx) {
#ifndef NDEBUG
    (void)ctx;
    return true;
#else
    return ctx->config.verify_passes;
#endif
}

/* Verifies g, which `pass` just produced; a failure is a bug in that pass. */
static kiln_status verify_after(const kiln_graph *g, const char *pass) {
    if (!verify_enabled(g->ctx)) return KILN_STATUS_OK;
    kiln_status s = ir_verify(g);
    if (!s) return KILN_STATUS_OK;
    char msg[KN_ERR_MAX - 64];
    kiln_last_error_copy(g->ctx, msg, sizeof msg);
    return ctx_error(g->ctx, s, "after pass %s: %s", pass, msg);
}

/* One pass on *cur: on success *cur becomes the new graph (the previous one is freed
 * unless it is `keep`, the caller's graph) and *changed says whether there was one. */
static kiln_status step(kiln_graph **cur, const kiln_graph *keep, const char *name, pass_run_fn run,
                        pass_stats *stats, bool *changed) {
    kiln_graph *next = NULL;
    kiln_status s = run(*cur, &next, stats);
    if (!s && next) s = verify_after(next, name);
    if (s) {
        kiln_graph_destroy(next);
        return s;
    }
    if (!next) return KILN_STATUS_OK;
    if (*cur != keep) kiln_graph_destroy(*cur);
    *cur = next;
    *changed = true;
    return KILN_STATUS_OK;
}

static kiln_status check_graph(const kiln_graph *g, const char *what) {
    if (!g->finished || g->status)
        return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: graph '%s' is not a finished graph without errors (%s)", what,
                         g->name, g->status ? kiln_status_name(g->status) : "not finished");
    return KILN_STATUS_OK;
}

kiln_status passes_run(kiln_graph **g, const pass_options *o) {
    static const pass_options defaults;
    if (!g || !*g) return KILN_STATUS_INVALID_ARGUMENT;
    if (!o) o = &defaults;
    kiln_graph *orig = *g, *cur = orig;
    kiln_status s = check_graph(orig, "passes_run");
    if (s) return s;
    pass_stats local, *st = o->stats ? o->stats : &local;
    *st = (pass_stats){.nodes_before = orig->n_nodes - 1};
    const struct {
        const char *name;
        pass_run_fn run;
        bool off;
    } steps[] = {{"unroll", pass_unroll_run, o->no_unroll},
                 {"simplify", pass_simplify_run, o->no_simplify},
                 {"cse", pass_cse_run, o->no_cse},
                 {"dce", pass_dce_run, o->no_dce}};
    int rounds = o->max_rounds > 0 ? o->max_rounds : PIPELINE_DEFAULT_ROUNDS;
    bool changed = true;
    for (int r = 0; r < rounds && changed; r++) {
        changed = false;
        st->rounds++;
        for (size_t i = 0; !s && i < sizeof steps / sizeof steps[0]; i++)
            if (!steps[i].off) s = step(&cur, orig, steps[i].name, steps[i].run, st, &changed);
        if (s) {
            if (cur != orig) kiln_graph_destroy(cur);
            return s;
        }
    }
    if (cur != orig) kiln_graph_destroy(orig);
    *g = cur;
    st->nodes_after = cur->n_nodes - 1;
    return KILN_STATUS_OK;
}

/* pass_X(&g): one pass, replacing *g on success; *changed (may be NULL) says whether it
 * rewrote anything, stats (may be NULL) gathers its counts. */
static kiln_status apply_counted(kiln_graph **g, const char *name, pass_run_fn run,
                                 pass_stats *stats, bool *changed) {
    if (!g || !*g) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_graph *cur = *g;
    bool any = false;
    kiln_status s = step(&cur, NULL, name, run, stats, &any);
    if (!s) *g = cur;
    if (changed) *changed = !s && any;
    return s;
}

static kiln_status apply(kiln_graph **g, const char *name, pass_run_fn run) {
    return apply_counted(g, name, run, NULL, NULL);
}

/* One run function per set of expand flags (pass_run_fn carries no argument). */
#define EXPAND_RUN(what)                                                                           \
    static kiln_status expand_run_##what(const kiln_graph *g, kiln_graph **out, pass_stats *st) {  \
        (void)st;                                                                                  \
        return pass_expand_run(g, what, out);                                                      \
    }
EXPAND_RUN(0)
EXPAND_RUN(1)
EXPAND_RUN(2)
EXPAND_RUN(3)
EXPAND_RUN(4)
EXPAND_RUN(5)
EXPAND_RUN(6)
EXPAND_RUN(7)
EXPAND_RUN(8)
EXPAND_RUN(9)
EXPAND_RUN(10)
EXPAND_RUN(11)
EXPAND_RUN(12)
EXPAND_RUN(13)
EXPAND_RUN(14)
EXPAND_RUN(15)
#undef EXPAND_RUN

kiln_status pass_expand(kiln_graph **g, unsigned what) {
    static const pass_run_fn runs[16] = {
        expand_run_0,  expand_run_1,  expand_run_2,  expand_run_3, expand_run_4,  expand_run_5,
        expand_run_6,  expand_run_7,  expand_run_8,  expand_run_9, expand_run_10, expand_run_11,
        expand_run_12, expand_run_13, expand_run_14, expand_run_15};
    _Static_assert(PASS_EXPAND_LINALG == 8u, "one run function per set of flags");
    return apply(g, "expand", runs[what & 15u]);
}

kiln_status pass_attention(kiln_graph **g, bool *changed, pass_stats *stats) {
    return apply_counted(g, "attention", pass_attention_run, stats, changed);
}

kiln_status pass_dce(kiln_graph **g) {
    return apply(g, "dce", pass_dce_run);
}
kiln_status pass_cse(kiln_graph **g) {
    return apply(g, "cse", pass_cse_run);
}
kiln_status pass_simplify(kiln_graph **g) {
    return apply(g, "simplify", pass_simplify_run);
}
