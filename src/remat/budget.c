/* remat_budget.c — choosing what to recompute: checkpoint regions as traced, cheap
 * elementwise values by default, and the automatic mode that fits a memory budget
 * (kiln_compile_options.memory_budget, KILN_MEMORY_BUDGET), in the spirit of XLA's
 * HloRematerialization and PyTorch's activation_memory_budget, but judged by the real
 * planner rather than an estimate.
 *
 * The candidates are the materialised forward values a backward kernel reads and no
 * region dropped already (the activations saved for the backward pass). A dropped value's
 * closure is what its recomputation needs that the backward pass does not hold anyway
 * (close_up drops it too, so a recomputation never keeps a forward temporary alive).
 *  - The base (the default, unless disable_cheap_remat): every candidate whose closure is
 *    elementwise and shape ops (and gathers) of at most CHEAP_FLOPS per element, kept
 *    only when it lowers the planned peak by 1% or more.
 *  - greedy: the candidates ranked by bytes freed per unit of closure cost (FLOPs +
 *    elements written, so cheap elementwise values come first and matrix products last),
 *    and prefixes of that ranking, each adding about 1/GREEDY_STEPS of the candidates'
 *    bytes, over the base; with each buffer go the values computed inline from it;
 *  - segments: the sqrt(n) checkpointing of Chen et al. (2016) over the cuts, the values
 *    no forward edge jumps over (the residual stream between blocks): every other forward
 *    value is dropped, and of the cuts in forward order every s-th is kept, with a buffer
 *    of its own, for s of 1, 2, sqrt(n) and around it (the values of a segment are
 *    recomputed from the cut kept before it).
 * Every proposal is rewritten (src/passes/remat.c), fused and planned in full (all four
 * schedules, packing): its planned peak and its added FLOPs are exact, not guessed. Of
 * the proposals whose peak fits (the base is the first), the one adding the fewest FLOPs
 * wins (ties: lower peak, then the earlier proposal). The proposals do not depend on the
 * budget, so a lower budget can only choose a proposal with a peak at most the higher
 * budget's choice: the planned peak never rises as the budget falls, and never exceeds
 * the peak without a budget. When none fits, the error names the budget, the smallest
 * peak any proposal reached and the buffers live at its peak step. */
#include "executable.h"
#include "passes/passes.h"
#include "base/strbuf.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    uint32_t id;
    double score; /* bytes per unit of cost */
} cand;

static int by_score(const void *x, const void *y) {
    const cand *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* One trial: rewrite with `extra`, fuse, plan. *peak and *st receive the outcome; when
 * keep_peak_detail is set the trial's plan stays in *t for the caller to read (release
 * it with exec_plan_release and free t->g). */
static kiln_status trial(kiln_executable *e, const kiln_compile_options *o, const uint8_t *extra,
                         kiln_executable *t, uint64_t *peak, remat_stats *st) {
    *t = (kiln_executable){.ctx = e->ctx, .dev = e->dev, .donated = e->donated};
    kiln_status s = pass_remat_run(e->g, extra, &t->g, st);
    if (!s) s = exec_fuse_and_plan(t, o);
    if (!s) *peak = t->mem.peak;
    return s;
}

static void trial_free(kiln_executable *t) {
    exec_plan_release(t);
    kiln_graph_destroy(t->g);
    t->g = NULL;
}

/* The plan with nothing recomputed: e->g as it is (drop marks alone change nothing).
 * When mat is not NULL it receives per node 1 for a materialised value, 2 for a
 * materialised activation saved for the backward pass (what the budget may drop). */
static kiln_status plain_peak(kiln_executable *e, const kiln_compile_options *o, uint64_t *peak,
                              uint8_t *mat) {
    kiln_executable t = {.ctx = e->ctx, .dev = e->dev, .donated = e->donated, .g = e->g};
    kiln_status s = exec_fuse_and_plan(&t, o);
    if (!s) *peak = t.mem.peak;
    for (uint32_t id = 1; !s && mat && id < e->g->n_nodes; id++) {
        int32_t b = t.mem.buffer_of[id];
        mat[id] = b < 0 ? 0 : t.mem.buffer_class[b] == PLAN_C_ACTIVATION ? 2 : 1;
    }
    exec_plan_release(&t);
    return s;
}

/* Drops the chosen buffers and, with each, the forward values computed inline from it:
 * a backward kernel reads those through the buffer, so dropping the buffer alone would
 * keep it alive. */
static void spread(const kiln_graph *g, const uint8_t *mat, uint8_t *extra) {
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (extra[id] || mat[id] || n->backward || n->remat || ir_ops[n->op].kind == IRK_SOURCE)
            continue;
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++)
            if (extra[in[k]] && extra[in[k]] != IR_WHY_KEEP) {
                extra[id] = extra[in[k]];
                break;
            }
    }
}

static const char *human(uint64_t v, char *buf, size_t n) {
    if (v >= (1u << 20))
        snprintf(buf, n, "%.2f MiB", (double)v / (1 << 20));
    else
        snprintf(buf, n, "%.2f KiB", (double)v / 1024);
    return buf;
}

/* The infeasible-budget error: the budget, the best peak and what holds it. */
static kiln_status budget_error(kiln_executable *e, const kiln_compile_options *o, uint64_t budget,
                                uint64_t without, const uint8_t *best_extra, uint64_t best_peak) {
    kiln_context *ctx = e->ctx;
    kiln_executable t;
    uint64_t peak = 0;
    kiln_status s = trial(e, o, best_extra, &t, &peak, NULL);
    if (s) {
        trial_free(&t);
        return s;
    }
    strbuf sb;
    sb_init(&sb, ctx);
    char b1[32], b2[32], b3[32];
    sb_printf(&sb,
              "kiln_compile: '%s' cannot fit the memory budget of %" PRIu64
              " bytes (%s) by rematerialisation: the smallest planned peak reachable is %" PRIu64
              " bytes (%s; without recomputation %s). At its peak (step %d of %u) the device "
              "holds, largest first:",
              e->g->name, budget, human(budget, b1, sizeof b1), best_peak,
              human(best_peak, b2, sizeof b2), human(without, b3, sizeof b3), t.mem.peak_step,
              t.mem.n_kernels);
    const mem_plan *p = &t.mem;
    uint8_t *shown = host_calloc(ctx, p->n_buffers ? p->n_buffers : 1, 1);
    if (!shown) sb.oom = true; /* the message would lack its buffers: a host OOM instead */
    for (int n = 0; shown && n < 8; n++) {
        int32_t best = -1;
        for (uint32_t i = 0; i < p->n_buffers; i++) {
            const plan_buffer *b = &p->buffers[i];
            if (shown[i] || b->kind == PLAN_K_CONST || b->shares >= 0 || b->def > p->peak_step ||
                b->last < p->peak_step)
                continue;
            if (best < 0 || b->size > p->buffers[best].size) best = (int32_t)i;
        }
        if (best < 0) break;
        shown[best] = 1;
        const plan_buffer *b = &p->buffers[best];
        const ir_node *nd = &t.g->nodes[b->node];
        char ty[IR_TYPE_STR_MAX];
        sb_printf(&sb, "%s %%%u %s %s %" PRIu64 " bytes (%s)", n ? ";" : "", b->node,
                  plan_buffer_op(t.g, b),
                  b->kind == PLAN_K_SCRATCH ? "scratch"
                                            : ir_type_str(nd->dtype, &nd->shape, ty, sizeof ty),
                  b->size, plan_class_name(p->buffer_class[best]));
    }
    if (shown) host_free(ctx, shown, p->n_buffers ? p->n_buffers : 1);
    trial_free(&t);
    char *msg = sb_take(&sb);
    if (!msg) return ctx_oom(ctx, "kiln_compile: the budget error", 0);
    s = ctx_error(ctx, KILN_STATUS_DEVICE_OOM, "%s", msg);
    kiln_string_free(ctx, msg);
    return s;
}

/* Replaces e->g by its rewrite with `extra` and records what it added. */
static kiln_status adopt(kiln_executable *e, const uint8_t *extra, const char *strategy) {
    kiln_graph *ng;
    remat_stats st;
    kiln_status s = pass_remat_run(e->g, extra, &ng, &st);
    if (s) return s;
    kiln_graph_destroy(e->g);
    e->g = ng;
    e->remat.n_recomputed = st.n_recomputed;
    e->remat.added_flops = st.added_flops;
    e->remat.step_flops = st.step_flops;
    e->remat.strategy = st.n_recomputed ? strategy : NULL;
    return KILN_STATUS_OK;
}

/* Is v held through the backward pass whatever else is dropped: a source, a graph output,
 * a backward value, a region's output, a checkpoint the budget keeps, or an activation
 * (mat 2) not dropped. */
static bool kept(const kiln_graph *g, const uint8_t *mat, const uint8_t *is_out,
                 const uint8_t *extra, uint32_t v) {
    const ir_node *n = &g->nodes[v];
    if (n->backward || (is_out[v] & 1) || ir_ops[n->op].kind == IRK_SOURCE) return true;
    if (n->remat == IR_REMAT_KEEP) return true; /* a region's output: recomputed from */
    if (n->remat == IR_REMAT_DROP) return false;
    if (extra[v] == IR_WHY_KEEP) return true;
    return mat[v] == 2 && !extra[v];
}

/* Drops, with each dropped value, the forward values its recomputation would otherwise
 * read from the forward pass and so keep alive (the scores under a softmax, the product
 * under a bias add): they are recomputed too, back to values held anyway. Inputs have
 * lower ids, so one pass downwards closes the set. */
static void close_up(const kiln_graph *g, const uint8_t *mat, const uint8_t *is_out,
                     uint8_t *extra) {
    for (uint32_t id = g->n_nodes; id-- > 1;) {
        uint8_t why = extra[id];
        if (!why || why == IR_WHY_KEEP) continue;
        const ir_node *n = &g->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++)
            if (!extra[in[k]] && !kept(g, mat, is_out, extra, in[k])) extra[in[k]] = why;
    }
}

/* The cost of recomputing v alone (every other activation kept): the FLOPs of v and of
 * the forward values close_up would add, plus the elements those with buffers write.
 * *cheap: only elementwise and shape ops (and gathers) at most CHEAP_FLOPS per element of
 * v, the kind of value the default recomputes. seen/stack are scratch of n_nodes. */
#define CHEAP_FLOPS 32
static double closure_cost(const kiln_graph *g, const uint8_t *mat, const uint8_t *is_out,
                           const uint8_t *none, uint32_t v, uint32_t stamp, uint32_t *seen,
                           uint32_t *stack, bool *cheap) {
    double flops = 0, written = 0;
    bool elementwise = true;
    uint32_t sp = 0;
    stack[sp++] = v;
    seen[v] = stamp;
    while (sp) {
        uint32_t u = stack[--sp];
        const ir_node *n = &g->nodes[u];
        ir_kind kd = ir_ops[n->op].kind;
        if (kd == IRK_DOT || kd == IRK_REDUCE || kd == IRK_COLLECTIVE || kd == IRK_SCAN ||
            kd == IRK_ATTENTION || (kd == IRK_INDEX && n->op != IR_TAKE_ROWS))
            elementwise = false;
        flops += remat_node_flops(g, u);
        if (mat[u]) {
            int64_t el = 0;
            ir_shape_numel(&n->shape, &el);
            written += (double)el;
        }
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t w = in[k];
            if (seen[w] == stamp || kept(g, mat, is_out, none, w)) continue;
            seen[w] = stamp;
            stack[sp++] = w;
        }
    }
    int64_t el = 0;
    ir_shape_numel(&g->nodes[v].shape, &el);
    *cheap = elementwise && flops <= (double)CHEAP_FLOPS * (double)el;
    return flops + written + 1;
}

/* Completes a proposal: `extra` (the values chosen, with their reasons) joined with the
 * base set, spread downwards and closed upwards. */
static void propose(const kiln_graph *g, const uint8_t *mat, const uint8_t *is_out,
                    const uint8_t *base, uint8_t *extra) {
    for (uint32_t id = 1; id < g->n_nodes; id++) /* the base's reason wins: it is the default's */
        if (base[id] && extra[id] != IR_WHY_KEEP) extra[id] = base[id];
    spread(g, mat, extra);
    close_up(g, mat, is_out, extra);
}

kiln_status exec_remat(kiln_executable *e, const kiln_compile_options *o) {
    kiln_context *ctx = e->ctx;
    uint64_t budget_bytes = o->memory_budget;
    double frac = o->memory_budget_fraction;
    if (!(frac >= 0 && frac <= 1))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: memory_budget_fraction is %g; it must be in (0, 1], "
                         "or 0 for none",
                         frac);
    if (!budget_bytes && frac == 0) {
        budget_bytes = ctx->config.memory_budget;
        frac = ctx->config.memory_budget_fraction;
    }
    bool regions = remat_any(e->g), budgeted = budget_bytes || frac > 0, backward = false;
    for (uint32_t id = 1; id < e->g->n_nodes && !backward; id++)
        backward = e->g->nodes[id].backward;
    bool cheap_on = !o->disable_cheap_remat && backward;
    if (!regions && !budgeted && !cheap_on) return KILN_STATUS_OK;

    uint64_t without = 0;
    uint32_t nn = e->g->n_nodes;
    uint8_t *mat = host_calloc(ctx, nn, 1);
    if (!mat) return ctx_oom(ctx, "kiln_compile: rematerialisation", nn);
    kiln_status s = plain_peak(e, o, &without, mat);
    if (s) {
        host_free(ctx, mat, nn);
        return s;
    }
    e->remat.peak_without = without;
    uint64_t budget = budget_bytes;
    if (!budget && frac > 0) budget = (uint64_t)floor(frac * (double)without);
    if (budgeted && budget && budget_bytes && frac > 0 &&
        (uint64_t)(frac * (double)without) < budget)
        budget = (uint64_t)(frac * (double)without); /* both given: the tighter */
    e->remat.budget = budgeted ? budget : 0;
    if (budgeted && !budget) { /* a fraction so small that it rounds to nothing */
        host_free(ctx, mat, nn);
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: a memory budget of %g of %" PRIu64 " bytes is 0 bytes",
                         frac, without);
    }

    /* the candidates: materialised forward values a backward kernel reads */
    uint8_t *is_out = host_calloc(ctx, nn, 1); /* 1: a graph output; 2: of constants alone */
    uint8_t *extra = host_calloc(ctx, nn, 1), *best_extra = host_calloc(ctx, nn, 1),
            *min_extra = host_calloc(ctx, nn, 1), *base = host_calloc(ctx, nn, 1),
            *none = host_calloc(ctx, nn, 1), *last = host_calloc(ctx, nn, 1);
    cand *c = host_calloc(ctx, nn, sizeof *c);
    uint32_t *cuts = host_calloc(ctx, nn, sizeof *cuts),
             *reach = host_calloc(ctx, nn, sizeof *reach),
             *seen = host_calloc(ctx, nn, sizeof *seen),
             *stack = host_calloc(ctx, nn, sizeof *stack);
    if (!is_out || !extra || !best_extra || !min_extra || !base || !none || !last || !c || !cuts ||
        !reach || !seen || !stack) {
        s = ctx_oom(ctx, "kiln_compile: rematerialisation candidates", (size_t)nn * sizeof *c);
        goto done;
    }
    const kiln_graph *g = e->g;
    for (uint32_t i = 0; i < g->n_outputs; i++) is_out[g->outputs[i]] = 1;
    /* values of constants alone (a broadcast scalar shared by every layer) are held or
     * recomputed for nothing: they do not tie the forward pass together */
    for (uint32_t id = 1; id < nn; id++) {
        const ir_node *n = &g->nodes[id];
        const uint32_t *in = ir_in(n);
        bool fixed = !n->backward && n->op != IR_PARAMETER;
        for (uint32_t k = 0; k < n->n_in && fixed; k++) fixed = is_out[in[k]] & 2;
        if (fixed) is_out[id] |= 2;
    }
    for (uint32_t id = 1; id < nn; id++) {
        const ir_node *n = &g->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) {
            if (!n->backward && !(is_out[in[k]] & 2) &&
                ir_ops[g->nodes[in[k]].op].kind != IRK_SOURCE)
                reach[in[k]] = id; /* the latest forward reader (ids grow) */
        }
    }
    /* A cut is a forward value that every later forward value depends on through it: no
     * forward edge jumps over it. Dropping consecutive cuts chains the recomputations
     * (each needs the one before), which greedy's plans show and segments avoid by
     * keeping every s-th of them, as Chen et al. keep every s-th node of a chain. */
    uint32_t nc = 0, ncut = 0, jump = 0, n_cheap = 0;
    double cand_bytes = 0;
    for (uint32_t id = 1; id < nn; id++) {
        const ir_node *n = &g->nodes[id];
        bool cut = !n->backward && jump <= id;
        if (!n->backward && reach[id] > jump) jump = reach[id];
        if (n->backward || n->remat || is_out[id] || ir_ops[n->op].kind == IRK_SOURCE) continue;
        if (cut) cuts[ncut++] = id;
        if (mat[id] != 2) continue;
        size_t bytes = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &bytes);
        bool cheap = false;
        double cost = closure_cost(g, mat, is_out, none, id, nc + 1, seen, stack, &cheap);
        c[nc++] = (cand){id, (double)bytes / cost};
        cand_bytes += (double)bytes;
        if (cheap && cheap_on) base[id] = IR_WHY_CHEAP, n_cheap++;
    }
    qsort(c, nc, sizeof *c, by_score);

    /* The default: regions alone, or with the cheap elementwise values recomputed when
     * that lowers the peak by 1% or more (the trial says; else base is cleared). */
    uint64_t base_peak = without;
    double base_flops = 0;
    if (regions || n_cheap) {
        kiln_executable t;
        remat_stats st = {0};
        if (regions) {
            s = trial(e, o, none, &t, &base_peak, &st);
            trial_free(&t);
            base_flops = st.added_flops;
        }
        if (!s && n_cheap) {
            uint64_t peak = 0;
            memset(extra, 0, nn);
            propose(g, mat, is_out, base, extra);
            s = trial(e, o, extra, &t, &peak, &st);
            trial_free(&t);
            /* worth it only when it lowers the peak by 1% or more: recomputing to save a
             * few KiB at the peak (the MLP of docs/memory.md saves 20 KiB of 11 MiB) is work
             * no one asked for */
            if (!s && peak < base_peak && (base_peak - peak) * 100 >= base_peak)
                base_peak = peak, base_flops = st.added_flops, memcpy(base, extra, nn);
            else
                memset(base, 0, nn);
        }
        if (s) goto done;
    }
    if (!budgeted) {
        s = adopt(e, base, regions ? "checkpoint" : "elementwise");
        if (!s && !e->remat.n_recomputed) e->remat = (exec_remat_info){0}; /* nothing done */
        goto done;
    }

    /* Proposal 0 is the default; then greedy prefixes over it, each adding about a
     * GREEDY_STEPS-th of the candidates' bytes (so the step from one to the next is a
     * few buffers, not a jump from elementwise values to whole blocks); then segments. */
    enum { GREEDY_STEPS = 32 };
    uint64_t best_peak = UINT64_MAX, min_peak = UINT64_MAX;
    double best_flops = 0;
    const char *best_strategy = NULL;
    uint32_t prefix[GREEDY_STEPS + 1], n_greedy = 0;
    {
        double acc = 0;
        uint32_t k = 1;
        for (uint32_t i = 0; i < nc && k <= GREEDY_STEPS; i++) {
            size_t bytes = 0;
            ir_shape_nbytes(&g->nodes[c[i].id].shape, g->nodes[c[i].id].dtype, &bytes);
            acc += (double)bytes;
            if (acc >= cand_bytes * k / GREEDY_STEPS || i + 1 == nc) {
                prefix[n_greedy++] = i + 1;
                while (k <= GREEDY_STEPS && acc >= cand_bytes * k / GREEDY_STEPS) k++;
            }
        }
    }
    /* s = 1 keeps every cut: each stretch between two cuts is recomputed from the one
     * before it, as a nothing_saveable region per block would */
    uint32_t seg[5] = {0, 0, 0, 0, 0};
    if (ncut >= 1) {
        uint32_t r = (uint32_t)ceil(sqrt((double)ncut));
        seg[0] = 1, seg[1] = ncut >= 2 ? 2 : 0, seg[2] = r > 2 ? r : 0,
        seg[3] = r / 2 > 2 ? r / 2 : 0, seg[4] = 2 * r > 2 ? 2 * r : 0;
    }
    for (uint32_t p = 0; p <= n_greedy + 5 && !s; p++) {
        memset(extra, 0, nn);
        const char *strategy = regions ? "checkpoint" : "elementwise";
        uint64_t peak = 0;
        remat_stats st = {0};
        if (p == 0) {
            memcpy(extra, base, nn);
            peak = base_peak, st.added_flops = base_flops;
        } else {
            if (p <= n_greedy) {
                for (uint32_t i = 0; i < prefix[p - 1]; i++) extra[c[i].id] = IR_WHY_BUDGET_GREEDY;
                strategy = "greedy";
            } else {
                uint32_t step = seg[p - n_greedy - 1];
                if (!step) continue;
                /* every forward value but the kept cuts, as a region's policy would drop */
                for (uint32_t id = 1; id < nn; id++) {
                    const ir_node *n = &g->nodes[id];
                    if (!n->backward && !n->remat && !is_out[id] &&
                        ir_ops[n->op].kind != IRK_SOURCE)
                        extra[id] = IR_WHY_BUDGET_SEGMENT;
                }
                for (uint32_t i = 0; i < ncut; i++)
                    if (i % step == step - 1) extra[cuts[i]] = IR_WHY_KEEP;
                strategy = "segments";
            }
            propose(g, mat, is_out, base, extra);
            if (!memcmp(extra, last, nn)) continue; /* the proposal before it again */
            memcpy(last, extra, nn);
            kiln_executable t;
            s = trial(e, o, extra, &t, &peak, &st);
            trial_free(&t);
            if (s) break;
        }
        if (peak < min_peak) min_peak = peak, memcpy(min_extra, extra, nn);
        if (peak <= budget && (!best_strategy || st.added_flops < best_flops ||
                               (st.added_flops == best_flops && peak < best_peak))) {
            best_peak = peak, best_flops = st.added_flops, best_strategy = strategy;
            memcpy(best_extra, extra, nn);
        }
    }
    e->remat.min_peak = min_peak == UINT64_MAX ? 0 : min_peak;
    if (!s && !best_strategy) s = budget_error(e, o, budget, without, min_extra, min_peak);
    if (!s) s = adopt(e, best_extra, best_strategy);
done:
    host_free(ctx, mat, nn);
    host_free(ctx, is_out, nn);
    host_free(ctx, extra, nn);
    host_free(ctx, best_extra, nn);
    host_free(ctx, min_extra, nn);
    host_free(ctx, base, nn);
    host_free(ctx, none, nn);
    host_free(ctx, last, nn);
    host_free(ctx, c, (size_t)nn * sizeof *c);
    host_free(ctx, cuts, (size_t)nn * sizeof *cuts);
    host_free(ctx, reach, (size_t)nn * sizeof *reach);
    host_free(ctx, seen, (size_t)nn * sizeof *seen);
    host_free(ctx, stack, (size_t)nn * sizeof *stack);
    return s;
}

char *exec_memory_report(const kiln_executable *e) {
    char *base = plan_report(e->g, &e->plan, &e->mem, e->stats.code_bytes);
    if (!base || !e->remat.peak_without) return base;
    strbuf sb;
    sb_init(&sb, e->ctx);
    /* before the per-buffer table, which readers (kiln plan) may cut off */
    const char *table = strstr(base, "\n  value ");
    size_t head = table ? (size_t)(table - base) + 1 : strlen(base);
    sb_printf(&sb, "%.*s", (int)head, base);
    char b1[32], b2[32], b3[32];
    int64_t saved = (int64_t)e->remat.peak_without - (int64_t)e->mem.peak;
    sb_printf(&sb, "rematerialisation (%s): peak %s without recomputation, %s with (%s %s)",
              e->remat.strategy ? e->remat.strategy : "none",
              human(e->remat.peak_without, b1, sizeof b1), human(e->mem.peak, b2, sizeof b2),
              saved >= 0 ? "saves" : "costs", human((uint64_t)llabs(saved), b3, sizeof b3));
    if (e->remat.budget) sb_printf(&sb, "; budget %s", human(e->remat.budget, b1, sizeof b1));
    sb_printf(&sb, "\n  %u ops recomputed, %.4g FLOPs added (%.2f%% of the step's %.4g)\n",
              e->remat.n_recomputed, e->remat.added_flops,
              e->remat.step_flops > 0 ? 100 * e->remat.added_flops / e->remat.step_flops : 0.0,
              e->remat.step_flops);
    for (uint32_t id = 1; id < e->g->n_nodes; id++) {
        const ir_node *n = &e->g->nodes[id];
        if (n->remat != IR_REMAT_CLONE) continue;
        char ty[IR_TYPE_STR_MAX];
        const char *why = n->why == IR_WHY_BUDGET_GREEDY    ? "memory budget, greedy"
                          : n->why == IR_WHY_BUDGET_SEGMENT ? "memory budget, sqrt(n) segments"
                          : n->why == IR_WHY_CHEAP ? "cheap elementwise value (disable_cheap_remat)"
                                                   : NULL;
        sb_printf(&sb, "  %%%u %s %s: ", id, ir_ops[n->op].name,
                  ir_type_str(n->dtype, &n->shape, ty, sizeof ty));
        if (why)
            sb_append(&sb, why);
        else
            sb_printf(&sb, "checkpoint %s",
                      kiln_checkpoint_policy_name((kiln_checkpoint_policy)(n->why - 1)));
        sb_printf(&sb, ", %s",
                  e->plan.materialised && e->plan.materialised[id]
                      ? "own buffer"
                      : "fused into its consumer (no buffer)");
        if (n->file) sb_printf(&sb, " (%s:%d)", kn_path_base(n->file), n->line);
        sb_append(&sb, "\n");
    }
    if (table) sb_printf(&sb, "\n%s", base + head);
    kiln_string_free(e->ctx, base);
    return sb_take(&sb);
}
