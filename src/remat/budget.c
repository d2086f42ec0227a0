/* budget.c — choosing what to recompute: checkpoint regions as traced, cheap
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
 *    elementwise and shape ops (and gathers) of at most CHEAP_FLOPS per element and
 *    CHEAP_MOVES moves, kept only when it lowers the planned peak by 1% or more.
 *  - greedy: the candidates ranked by bytes freed per unit of closure cost (FLOPs +
 *    elements written, so cheap elementwise values come first and matrix products last),
 *    and prefixes of that ranking, each adding about 1/GREEDY_STEPS of the candidates'
 *    bytes, over the base; with each buffer go the values computed inline from it;
 *  - segments: the sqrt(n) checkpointing of Chen et al. (2016) over the cuts, the values
 *    no forward edge jumps over (the residual stream between blocks): every other forward
 *    value is dropped, and of the cuts in forward order every s-th is kept, with a buffer
 *    of its own, for s of 1, 2, sqrt(n) and around it (the values of a segment are
 *    recomputed from the cut kept before it).
 *  - offload (when the planner gives the device's rates: kiln_compile_options.budget_offload):
 *    the candidates ranked by bytes freed per second of their cheaper way out, recomputing
 *    the closure at the device's product rate or copying the value to pinned_host memory
 *    and back at its link rate; prefixes of that ranking, each value taking its cheaper
 *    way; then every candidate offloaded.
 * Every proposal is rewritten (rewrite.c), fused and planned in full (all four schedules,
 * packing) by the caller's remat_planner: its planned peak, its added FLOPs and its
 * offloaded bytes are exact, not guessed. Of the proposals whose peak fits (the base is
 * the first), the cheapest wins: the fewest FLOPs added, or with rates the least time
 * (FLOPs / product rate + 2 x recomputed bytes / memory rate + the copies' seconds the
 * step waits for). On a device whose copies run in order with its kernels (the CPU's
 * memcpy) every copy is waited for: 2 x offloaded bytes / link rate. On one that overlaps
 * them (remat_planner.overlap_transfers, from the backend's copy queue) the proposal's
 * plan is run as a timeline (step_time): kernels at their roofline time one after
 * another, each copy on the one copy queue from its step to its wait step
 * (mem_plan.wait_step), and only the delay the offload copies add to the step counts: a
 * copy out hides behind the kernels of its PLAN_TRANSFER_WINDOW, a copy back, run just
 * before its reader, mostly does not. Ties: lower peak, then the earlier proposal. The
 * proposals do not depend on the budget, so a lower budget can only choose a proposal with a peak
 * at most the higher budget's choice: the planned peak never rises as the budget falls, and never
 * exceeds the peak without a budget. When none fits, the error names the budget, the smallest peak
 * any proposal reached and the buffers live at its peak step. */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    uint32_t id;
    double score; /* bytes per unit of cost */
} cand;

static uint64_t value_bytes(const kiln_graph *g, uint32_t id) {
    size_t bytes = 0;
    ir_shape_nbytes(&g->nodes[id].shape, g->nodes[id].dtype, &bytes);
    return bytes;
}

static int by_score(const void *x, const void *y) {
    const cand *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* What the search works on: the graph (replaced at the end), the planner, the outcome, and
 * the device's product, link and memory rates (remat_planner.rates; zero: none). */
typedef struct search {
    kiln_context *ctx;
    kiln_graph **g;
    const remat_planner *pl;
    remat_info *info;
    double rate[3];
} search;

static bool rated(const double *rate) {
    return rate[0] > 0 && rate[1] > 0 && rate[2] > 0;
}

/* ------------------------------------------------------ the copies' time ---- */

/* The seconds kernel kn of fp takes at the device's rates, at the least: the longer of its
 * FLOPs (its roots' and those of the values inlined into it, computed without a buffer of
 * their own) at the product rate and the bytes it reads and writes at the memory's rate.
 * A lower bound (elementwise FLOPs run below the product rate), so that a copy is never
 * counted hidden behind time its kernels may not take. seen/stack: scratch of n_nodes,
 * stamp a new value per call. */
static double kernel_seconds(const kiln_graph *g, const fusion_plan *fp, const fkernel *kn,
                             const double *rate, uint32_t stamp, uint32_t *seen, uint32_t *stack) {
    double flops = 0, bytes = 0;
    uint32_t sp = 0;
    for (uint32_t i = 0; i < kn->n_inputs; i++) bytes += (double)value_bytes(g, kn->inputs[i]);
    for (uint32_t r = 0; r < kn->n_roots; r++) {
        bytes += (double)value_bytes(g, kn->roots[r]);
        if (seen[kn->roots[r]] != stamp) seen[kn->roots[r]] = stamp, stack[sp++] = kn->roots[r];
    }
    while (sp) {
        uint32_t u = stack[--sp];
        flops += remat_node_flops(g, u);
        const uint32_t *in = ir_in(&g->nodes[u]);
        for (uint32_t k = 0; k < g->nodes[u].n_in; k++)
            if (!fp->materialised[in[k]] && seen[in[k]] != stamp)
                seen[in[k]] = stamp, stack[sp++] = in[k];
    }
    double f = flops / rate[0], b = bytes / rate[2];
    return f > b ? f : b;
}

/* A plan's steps in seconds: per step, what its kernel computes (kernel_seconds) or, for a
 * copy between memory kinds, the copy at the link rate; kind[step] says which: STEP_COPY,
 * or STEP_OFFLOAD for a copy the search's offload made (rewrite.c: a value's put to
 * pinned_host memory, and the recomputation-marked put that brings it back; no other copy
 * is marked so but a fetch of a host argument, remat_fixed). due: scratch for step_time. */
enum { STEP_KERNEL, STEP_COPY, STEP_OFFLOAD };
typedef struct step_times {
    uint32_t nk;
    double *dur, *due;
    uint8_t *kind;
} step_times;

static void step_times_free(kiln_context *ctx, step_times *t) {
    size_t n = (size_t)t->nk + 1;
    host_free(ctx, t->dur, n * sizeof *t->dur);
    host_free(ctx, t->due, n * sizeof *t->due);
    host_free(ctx, t->kind, n);
    *t = (step_times){0};
}

static kiln_status step_times_make(const search *sr, const kiln_graph *g, const fusion_plan *fp,
                                   const mem_plan *m, step_times *t) {
    kiln_context *ctx = sr->ctx;
    uint32_t nn = g->n_nodes, nk = m->n_kernels;
    size_t n = (size_t)nk + 1;
    *t = (step_times){.nk = nk,
                      .dur = host_calloc(ctx, n, sizeof *t->dur),
                      .due = host_calloc(ctx, n, sizeof *t->due),
                      .kind = host_calloc(ctx, n, 1)};
    uint32_t *seen = host_calloc(ctx, nn, sizeof *seen),
             *stack = host_calloc(ctx, nn, sizeof *stack);
    uint8_t *off = host_calloc(ctx, nn, 1);
    kiln_status s = KILN_STATUS_OK;
    if (!t->dur || !t->due || !t->kind || !seen || !stack || !off) {
        s = ctx_oom(ctx, "kiln_compile: the budget's cost model", n * sizeof *t->dur);
        step_times_free(ctx, t);
    }
    for (uint32_t id = 1; !s && id < nn; id++) { /* the offload copies, there and back */
        const ir_node *nd = &g->nodes[id];
        if (nd->op == IR_MEMORY_PUT && nd->a.memory_kind == KILN_MEMORY_DEVICE &&
            remat_mark_of(g, id) == REMAT_CLONE && !ir_is_fetch(g, nd))
            off[id] = off[ir_in(nd)[0]] = 1;
    }
    for (uint32_t st = 0; !s && st < nk; st++) {
        const fkernel *kn = &fp->kernels[m->order[st]];
        if (kn->kind == FK_TRANSFER) {
            t->dur[st] = (double)value_bytes(g, kn->roots[0]) / sr->rate[1];
            t->kind[st] = off[kn->roots[0]] ? STEP_OFFLOAD : STEP_COPY;
        } else
            t->dur[st] = kernel_seconds(g, fp, kn, sr->rate, st + 1, seen, stack);
    }
    host_free(ctx, seen, (size_t)nn * sizeof *seen);
    host_free(ctx, stack, (size_t)nn * sizeof *stack);
    host_free(ctx, off, nn);
    return s;
}

/* The step's seconds on plan m with the copies run as run.c runs them on a device that
 * overlaps them (run_copy): the kernels one after another; a copy the plan waits for after
 * its own step starts once the kernels before it are done and the copy queue is free (one
 * queue: copies one at a time, in order), and the kernel at its wait step starts no sooner
 * than it ends; a copy waited for at its own step runs in order. With `offload` false the
 * offload copies take no time: the difference is the part of them the step waits for. */
static double step_time(const mem_plan *m, const step_times *t, bool offload) {
    double now = 0, queue = 0;
    for (uint32_t st = 0; st < t->nk; st++) t->due[st] = 0;
    for (uint32_t st = 0; st < t->nk; st++) {
        if (t->due[st] > now) now = t->due[st];
        double d = t->kind[st] == STEP_OFFLOAD && !offload ? 0 : t->dur[st];
        int32_t w = m->wait_step[m->order[st]];
        if (t->kind[st] == STEP_KERNEL || w <= (int32_t)st || w >= (int32_t)t->nk) {
            now += d;
            continue;
        }
        queue = (queue > now ? queue : now) + d;
        if (queue > t->due[w]) t->due[w] = queue;
    }
    return now > queue ? now : queue;
}

/* The seconds of a trial's offload copies (st->offload_bytes, each way at the link rate)
 * and the part of them the step waits for: all of it on a device whose copies run in
 * order with its kernels (the sum today's estimate always was); on one that overlaps them,
 * what the plan's schedule leaves uncovered (step_time with and without them). */
static kiln_status copy_seconds(const search *sr, const kiln_graph *g, const fusion_plan *fp,
                                const mem_plan *m, remat_stats *st) {
    st->copy_s = st->copy_wait_s = 2.0 * (double)st->offload_bytes / sr->rate[1];
    if (!st->offload_bytes || !sr->pl->overlap_transfers) return KILN_STATUS_OK;
    step_times t;
    kiln_status s = step_times_make(sr, g, fp, m, &t);
    if (s) return s;
    double wait = step_time(m, &t, true) - step_time(m, &t, false);
    st->copy_wait_s = wait < 0 ? 0 : wait < st->copy_s ? wait : st->copy_s;
    step_times_free(sr->ctx, &t);
    return KILN_STATUS_OK;
}

/* One trial: rewrite with `extra`, fuse, plan. *peak and *st receive the outcome (with
 * rates, the copies' seconds too); the trial's graph goes to *tg and its plan to *mem
 * (when not NULL) for the caller to read, until trial_free. */
static kiln_status trial(const search *sr, const uint8_t *extra, kiln_graph **tg,
                         const mem_plan **mem, uint64_t *peak, remat_stats *st) {
    const mem_plan *m = NULL;
    const fusion_plan *fp = NULL;
    kiln_status s = remat_rewrite(*sr->g, extra, tg, st);
    if (!s) s = sr->pl->plan(sr->pl->user, *tg, &m, &fp);
    if (!s) *peak = m->peak;
    if (!s && st && rated(sr->rate)) s = copy_seconds(sr, *tg, fp, m, st);
    if (mem) *mem = m;
    return s;
}

static void trial_free(const search *sr, kiln_graph **tg) {
    sr->pl->release(sr->pl->user);
    kiln_graph_destroy(*tg);
    *tg = NULL;
}

/* The plan with nothing recomputed: the graph as it is (drop marks alone change nothing).
 * When mat is not NULL it receives per node 1 for a materialised value, 2 for a
 * materialised activation saved for the backward pass (what the budget may drop). */
static kiln_status plain_peak(const search *sr, uint64_t *peak, uint64_t *saved, uint8_t *mat) {
    const kiln_graph *g = *sr->g;
    const mem_plan *m = NULL;
    const fusion_plan *fp = NULL;
    kiln_status s = sr->pl->plan(sr->pl->user, g, &m, &fp);
    if (!s) *peak = m->peak, *saved = m->class_peak[PLAN_C_ACTIVATION];
    for (uint32_t id = 1; !s && mat && id < g->n_nodes; id++) {
        int32_t b = m->buffer_of[id];
        mat[id] = b < 0 ? 0 : m->buffer_class[b] == PLAN_C_ACTIVATION ? 2 : 1;
    }
    sr->pl->release(sr->pl->user);
    return s;
}

/* Drops the chosen buffers and, with each, the forward values computed inline from it:
 * a backward kernel reads those through the buffer, so dropping the buffer alone would
 * keep it alive. */
static void spread(const kiln_graph *g, const uint8_t *mat, uint8_t *extra) {
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (extra[id] || mat[id] || n->backward || remat_mark_of(g, id) || remat_fixed(g, n))
            continue;
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++)
            if (extra[in[k]] && extra[in[k]] != REMAT_WHY_KEEP &&
                extra[in[k]] != REMAT_WHY_BUDGET_OFFLOAD) {
                extra[id] = extra[in[k]];
                break;
            }
    }
}

/* The infeasible-budget error: the budget, the best peak and what holds it. */
static kiln_status budget_error(const search *sr, uint64_t budget, uint64_t without,
                                const uint8_t *best_extra, uint64_t best_peak) {
    kiln_context *ctx = sr->ctx;
    kiln_graph *tg = NULL;
    const mem_plan *p = NULL;
    uint64_t peak = 0;
    kiln_status s = trial(sr, best_extra, &tg, &p, &peak, NULL);
    if (s) {
        trial_free(sr, &tg);
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
              (*sr->g)->name, budget, remat_bytes_str(budget, b1, sizeof b1), best_peak,
              remat_bytes_str(best_peak, b2, sizeof b2), remat_bytes_str(without, b3, sizeof b3),
              p->peak_step, p->n_kernels);
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
        const ir_node *nd = &tg->nodes[b->node];
        char ty[IR_TYPE_STR_MAX];
        sb_printf(&sb, "%s %%%u %s %s %" PRIu64 " bytes (%s)", n ? ";" : "", b->node,
                  plan_buffer_op(tg, b),
                  b->kind == PLAN_K_SCRATCH ? "scratch"
                                            : ir_type_str(nd->dtype, &nd->shape, ty, sizeof ty),
                  b->size, plan_class_name(p->buffer_class[best]));
    }
    if (shown) host_free(ctx, shown, p->n_buffers ? p->n_buffers : 1);
    trial_free(sr, &tg);
    char *msg = sb_take(&sb);
    if (!msg) return ctx_oom(ctx, "kiln_compile: the budget error", 0);
    s = ctx_error(ctx, KILN_STATUS_DEVICE_OOM, "%s", msg);
    kiln_string_free(ctx, msg);
    return s;
}

/* Replaces the graph by its rewrite with `extra` and records what it added. */
static kiln_status adopt(const search *sr, const uint8_t *extra, const char *strategy) {
    kiln_graph *ng;
    remat_stats st;
    kiln_status s = remat_rewrite(*sr->g, extra, &ng, &st);
    if (s) return s;
    kiln_graph_destroy(*sr->g);
    *sr->g = ng;
    sr->info->n_recomputed = st.n_recomputed;
    sr->info->added_flops = st.added_flops;
    sr->info->step_flops = st.step_flops;
    sr->info->n_offloaded = st.n_offloaded;
    sr->info->offload_bytes = st.offload_bytes;
    sr->info->strategy = st.n_recomputed || st.n_offloaded ? strategy : NULL;
    return KILN_STATUS_OK;
}

/* Is v held through the backward pass whatever else is dropped: a source, a graph output,
 * a backward value, a region's output, a checkpoint the budget keeps, or an activation
 * (mat 2) not dropped. */
static bool kept(const kiln_graph *g, const uint8_t *mat, const uint8_t *is_out,
                 const uint8_t *extra, uint32_t v) {
    const ir_node *n = &g->nodes[v];
    if (n->backward || (is_out[v] & 1) || remat_fixed(g, n)) return true;
    remat_mark m = remat_mark_of(g, v);
    if (m == REMAT_KEEP) return true; /* a region's output: recomputed from */
    if (m == REMAT_DROP) return false;
    if (m == REMAT_OFFLOAD) return true; /* held: in host memory, brought back */
    if (extra[v] == REMAT_WHY_KEEP || extra[v] == REMAT_WHY_BUDGET_OFFLOAD) return true;
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
        if (!why || why == REMAT_WHY_KEEP || why == REMAT_WHY_BUDGET_OFFLOAD) continue;
        const ir_node *n = &g->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++)
            if (!extra[in[k]] && !kept(g, mat, is_out, extra, in[k])) extra[in[k]] = why;
    }
}

/* The cost of recomputing v alone (every other activation kept): the FLOPs of v and of
 * the forward values close_up would add, plus the elements those with buffers write.
 * *cheap: only elementwise and shape ops (and gathers) at most CHEAP_FLOPS per element of
 * v, through at most CHEAP_MOVES moves (ops reading their operand at other positions:
 * slices, pads, concatenates, transposes, gathers), the kind of value the default
 * recomputes. A recomputation through several moves is computed again for each of them
 * where it is inlined (fusion.c, count_moves) or writes a buffer of its own: a CNN's
 * first pooling masks and im2col recomputed in the backward pass lowered its peak by a
 * few percent for a markedly slower step (bench/RESULTS.md, "The CNN step: guards on the
 * row and cheap recomputation"). seen/stack are scratch of n_nodes. */
#define CHEAP_FLOPS 32
#define CHEAP_MOVES 1
static double closure_cost(const kiln_graph *g, const uint8_t *mat, const uint8_t *is_out,
                           const uint8_t *none, uint32_t v, uint32_t stamp, uint32_t *seen,
                           uint32_t *stack, bool *cheap) {
    double flops = 0, written = 0;
    bool elementwise = true;
    uint32_t moves = 0;
    uint32_t sp = 0;
    stack[sp++] = v;
    seen[v] = stamp;
    while (sp) {
        uint32_t u = stack[--sp];
        const ir_node *n = &g->nodes[u];
        ir_kind kd = ir_ops[n->op].kind;
        if (kd == IRK_DOT || kd == IRK_REDUCE || kd == IRK_COLLECTIVE || kd == IRK_SCAN ||
            kd == IRK_ATTENTION || kd == IRK_SORT || kd == IRK_CONV || kd == IRK_LINALG ||
            (kd == IRK_TRANSFER && !ir_is_fetch(g, n)) ||
            (kd == IRK_INDEX && n->op == IR_SCATTER_ADD_ROWS))
            elementwise = false;
        moves +=
            (kd == IRK_SHAPE && n->op != IR_RESHAPE && n->op != IR_BROADCAST) || kd == IRK_INDEX;
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
    *cheap = elementwise && moves <= CHEAP_MOVES && flops <= (double)CHEAP_FLOPS * (double)el;
    return flops + written + 1;
}

/* Completes a proposal: `extra` (the values chosen, with their reasons) joined with the
 * base set, spread downwards and closed upwards. */
static void propose(const kiln_graph *g, const uint8_t *mat, const uint8_t *is_out,
                    const uint8_t *base, uint8_t *extra) {
    for (uint32_t id = 1; id < g->n_nodes; id++) /* the base's reason wins: it is the default's */
        if (base[id] && extra[id] != REMAT_WHY_KEEP && extra[id] != REMAT_WHY_BUDGET_OFFLOAD)
            extra[id] = base[id];
    spread(g, mat, extra);
    close_up(g, mat, is_out, extra);
}

/* One trial of the default: the reasons `with` proposed (into extra) and planned in full;
 * taken into base, with its peak and stats, when it lowers *base_peak by 1% or more. */
static kiln_status try_default(const search *sr, const uint8_t *mat, const uint8_t *is_out,
                               const uint8_t *with, uint8_t *extra, uint8_t *base,
                               uint64_t *base_peak, remat_stats *base_st, bool *taken) {
    const kiln_graph *g = *sr->g;
    uint32_t nn = g->n_nodes;
    kiln_graph *tg = NULL;
    remat_stats st = {0};
    uint64_t peak = 0;
    memset(extra, 0, nn);
    propose(g, mat, is_out, with, extra);
    kiln_status s = trial(sr, extra, &tg, NULL, &peak, &st);
    trial_free(sr, &tg);
    *taken = !s && peak < *base_peak && (*base_peak - peak) * 100 >= *base_peak;
    if (*taken) *base_peak = peak, *base_st = st, memcpy(base, extra, nn);
    return s;
}

/* Prefixes of the ranking c[0..n) adding about a GREEDY_STEPS-th of its bytes each (so
 * the step from one to the next is a few buffers, not a jump from elementwise values to
 * whole blocks); returns how many, their lengths in prefix. */
enum { GREEDY_STEPS = 32 };
static uint32_t prefixes(const kiln_graph *g, const cand *c, uint32_t n, uint32_t *prefix) {
    double total = 0, acc = 0;
    for (uint32_t i = 0; i < n; i++) total += (double)value_bytes(g, c[i].id);
    uint32_t k = 1, np = 0;
    for (uint32_t i = 0; i < n && k <= GREEDY_STEPS; i++) {
        acc += (double)value_bytes(g, c[i].id);
        if (acc >= total * k / GREEDY_STEPS || i + 1 == n) {
            prefix[np++] = i + 1;
            while (k <= GREEDY_STEPS && acc >= total * k / GREEDY_STEPS) k++;
        }
    }
    return np;
}

/* What a proposal costs, in seconds: its recomputation, FLOPs at the device's product rate
 * and the bytes it writes (and about as many read) at its memory's rate, since most of what
 * is recomputed is elementwise and bound by memory; and its offload, the part of its copies
 * there and back at the link's rate that the step waits for (copy_seconds: all of them
 * unless the device overlaps them with its kernels). The FLOPs alone without rates. */
static double cost_of(const remat_stats *st, const double *rate) {
    if (!rated(rate)) return st->added_flops;
    return st->added_flops / rate[0] + 2.0 * st->added_bytes / rate[2] + st->copy_wait_s;
}

/* The proposals' outcome so far: the cheapest that fits and the one of the smallest peak. */
typedef struct choice {
    uint64_t budget, best_peak, min_peak;
    double best_cost;
    double rate[3]; /* the device's product, link and memory rates (remat_planner.rates) */
    const char *best_strategy, *min_strategy;
    uint8_t *best_extra, *min_extra;
    remat_stats best_st; /* the cheapest's, for its copies' seconds */
    uint32_t nn;
} choice;

static void consider(choice *ch, const uint8_t *extra, const char *strategy, uint64_t peak,
                     const remat_stats *st) {
    double cost = cost_of(st, ch->rate);
    if (peak < ch->min_peak)
        ch->min_peak = peak, ch->min_strategy = strategy, memcpy(ch->min_extra, extra, ch->nn);
    if (peak <= ch->budget && (!ch->best_strategy || cost < ch->best_cost ||
                               (cost == ch->best_cost && peak < ch->best_peak))) {
        ch->best_peak = peak, ch->best_cost = cost, ch->best_strategy = strategy;
        ch->best_st = *st;
        memcpy(ch->best_extra, extra, ch->nn);
    }
}

/* Every forward value the search may drop dropped, but with `dots` every matrix product
 * (and convolution) offloaded, and the cuts (n of them) offloaded or, with keep_cuts, kept on the
 * device: offload_dot_with_no_batch_dims over the whole program (with each block's output kept, as
 * a region per block keeps it), and sqrt(n) segments with s = 1 whose cuts go to host memory. */
static void offload_kept(const kiln_graph *g, const uint8_t *is_out, const uint32_t *cuts,
                         uint32_t n, bool dots, bool keep_cuts, uint8_t *extra) {
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *nd = &g->nodes[id];
        if (nd->backward || remat_mark_of(g, id) || is_out[id] || remat_fixed(g, nd)) continue;
        bool product = nd->op == IR_DOT || nd->op == IR_CONV; /* a GPU's convolutions */
        extra[id] = dots && product ? REMAT_WHY_BUDGET_OFFLOAD : REMAT_WHY_BUDGET_SEGMENT;
    }
    for (uint32_t i = 0; i < n; i++)
        if (extra[cuts[i]] != REMAT_WHY_BUDGET_OFFLOAD)
            extra[cuts[i]] = keep_cuts ? REMAT_WHY_KEEP : REMAT_WHY_BUDGET_OFFLOAD;
}

/* For the ranking of offload_proposals, on a device that overlaps copies with its kernels:
 * per candidate, the seconds of compute its copy out runs beside, in the plan of the
 * program as it is: the kernels of the PLAN_TRANSFER_WINDOW - 1 steps after the one that
 * writes it (its put runs at the next step, as the scheduler runs offloads at once, and is
 * waited for PLAN_TRANSFER_WINDOW steps later, before the last step at the latest).
 * A coarse figure for ordering only: each proposal's own plan is timed exactly
 * (copy_seconds). */
static kiln_status copy_cover(const search *sr, const cand *c, uint32_t nc, double *cover) {
    const kiln_graph *g = *sr->g;
    const mem_plan *m = NULL;
    const fusion_plan *fp = NULL;
    step_times t = {0};
    kiln_status s = sr->pl->plan(sr->pl->user, g, &m, &fp);
    if (!s) s = step_times_make(sr, g, fp, m, &t);
    for (uint32_t i = 0; !s && i < nc; i++) {
        int32_t b = m->buffer_of[c[i].id];
        if (b < 0 || m->buffers[b].def < 0) continue;
        int32_t from = m->buffers[b].def + 1, to = from + PLAN_TRANSFER_WINDOW - 2;
        if (to > (int32_t)t.nk - 2) to = (int32_t)t.nk - 2;
        for (int32_t st = from; st <= to; st++)
            if (t.kind[st] == STEP_KERNEL) cover[i] += t.dur[st];
    }
    step_times_free(sr->ctx, &t);
    sr->pl->release(sr->pl->user);
    return s;
}

/* The offload proposals (the device has a pinned_host memory kind and a link to it): the
 * candidates ranked by bytes freed per second of their cheaper way out (recomputing their
 * closure, or copying them out and back: with overlap, the copy back in full, as the
 * scheduler brings a value back just before its reader with nothing to run beside it, and
 * of the copy out what copy_cover leaves), prefixes of that ranking each taking its
 * values' cheaper way; every candidate offloaded; and everything recomputed but the
 * products, or but the cuts, which are offloaded. Each is planned in full. */
static kiln_status offload_proposals(const search *sr, choice *ch, const cand *c, uint32_t nc,
                                     const uint32_t *cuts, uint32_t ncut, const uint8_t *mat,
                                     const uint8_t *is_out, const uint8_t *base, uint8_t *extra) {
    const kiln_graph *g = *sr->g;
    kiln_context *ctx = sr->ctx;
    cand *mix = host_calloc(ctx, nc + 1, sizeof *mix);
    uint8_t *out = host_calloc(ctx, ch->nn, 1);
    double *cover = host_calloc(ctx, nc + 1, sizeof *cover);
    if (!mix || !out || !cover) {
        host_free(ctx, mix, (size_t)(nc + 1) * sizeof *mix);
        host_free(ctx, out, ch->nn);
        host_free(ctx, cover, (size_t)(nc + 1) * sizeof *cover);
        return ctx_oom(ctx, "kiln_compile: offload proposals", (size_t)nc * sizeof *mix);
    }
    kiln_status s = sr->pl->overlap_transfers ? copy_cover(sr, c, nc, cover) : KILN_STATUS_OK;
    for (uint32_t i = 0; i < nc && !s; i++) {
        double bytes = (double)value_bytes(g, c[i].id), way = bytes / ch->rate[1];
        double recompute = bytes / c[i].score / ch->rate[0] + 2 * bytes / ch->rate[2],
               copy = sr->pl->overlap_transfers ? way + fmax(0, way - cover[i]) : 2 * way;
        mix[i] = (cand){c[i].id, bytes / (copy < recompute ? copy : recompute)};
        out[c[i].id] = copy < recompute;
    }
    qsort(mix, nc, sizeof *mix, by_score);
    uint32_t prefix[GREEDY_STEPS + 1], np = s ? 0 : prefixes(g, mix, nc, prefix);
    static const char *const names[] = {"offload+greedy", "offload", "offload dots", "offload cuts",
                                        "offload dots, keep cuts"};
    for (uint32_t p = 0; p <= np + 3 && !s; p++) {
        memset(extra, 0, ch->nn);
        int what = p < np ? 0 : (int)(p - np) + 1;
        if (what == 0)
            for (uint32_t i = 0; i < prefix[p]; i++)
                extra[mix[i].id] =
                    out[mix[i].id] ? REMAT_WHY_BUDGET_OFFLOAD : REMAT_WHY_BUDGET_GREEDY;
        else if (what == 1)
            for (uint32_t i = 0; i < nc; i++) extra[mix[i].id] = REMAT_WHY_BUDGET_OFFLOAD;
        else
            offload_kept(g, is_out, cuts, what == 2 ? 0 : ncut, what != 3, what == 4, extra);
        propose(g, mat, is_out, base, extra);
        kiln_graph *tg = NULL;
        uint64_t peak = 0;
        remat_stats st = {0};
        s = trial(sr, extra, &tg, NULL, &peak, &st);
        trial_free(sr, &tg);
        if (!s) consider(ch, extra, names[what], peak, &st);
    }
    host_free(ctx, mix, (size_t)(nc + 1) * sizeof *mix);
    host_free(ctx, out, ch->nn);
    host_free(ctx, cover, (size_t)(nc + 1) * sizeof *cover);
    return s;
}

kiln_status remat_choose(kiln_graph **gp, const kiln_compile_options *o, const remat_planner *pl,
                         remat_info *info) {
    kiln_context *ctx = (*gp)->ctx;
    search sr = {.ctx = ctx, .g = gp, .pl = pl, .info = info};
    *info = (remat_info){0};
    uint64_t budget_bytes = o->memory_budget;
    double frac = o->memory_budget_fraction, act = o->activation_memory_budget;
    if (!(frac >= 0 && frac <= 1))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: memory_budget_fraction is %g; it must be in (0, 1], "
                         "or 0 for none",
                         frac);
    if (o->budget_offload < -1 || o->budget_offload > 1)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: budget_offload is %d; it must be 1 (consider offload), "
                         "-1 (never) or 0 (the device's default)",
                         o->budget_offload);
    if (!(act >= 0 && act <= 1))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: activation_memory_budget is %g; it must be in (0, 1] "
                         "(the share of the saved activations the peak may hold), or 0 for none",
                         act);
    if (!budget_bytes && frac == 0 && act == 0) {
        budget_bytes = ctx->config.memory_budget;
        frac = ctx->config.memory_budget_fraction;
    }
    if (pl->sub_graph) frac = act = 0; /* shares of the whole program's peak, not the body's */
    bool regions = remat_any(*gp), budgeted = budget_bytes || frac > 0 || act > 0;
    bool backward = false;
    for (uint32_t id = 1; id < (*gp)->n_nodes && !backward; id++)
        backward = (*gp)->nodes[id].backward;
    bool cheap_on = !o->disable_cheap_remat && backward;
    if (!regions && !budgeted && !cheap_on) return KILN_STATUS_OK;

    uint64_t without = 0, saved = 0;
    uint32_t nn = (*gp)->n_nodes;
    uint8_t *mat = host_calloc(ctx, nn, 1);
    if (!mat) return ctx_oom(ctx, "kiln_compile: rematerialisation", nn);
    kiln_status s = plain_peak(&sr, &without, &saved, mat);
    if (s) {
        host_free(ctx, mat, nn);
        return s;
    }
    info->peak_without = without;
    /* every way of saying it resolves to bytes; given several, the tightest applies */
    uint64_t budget = budget_bytes;
    if (frac > 0) {
        uint64_t b = (uint64_t)floor(frac * (double)without);
        if (!budget || b < budget) budget = b;
    }
    if (act > 0) { /* PyTorch's: keep that share of what is saved for the backward pass */
        uint64_t cut = (uint64_t)ceil((1 - act) * (double)saved);
        uint64_t b = without > cut ? without - cut : 0;
        if (!budget || b < budget) budget = b;
    }
    info->budget = budgeted ? budget : 0;
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
            *none = host_calloc(ctx, nn, 1), *last = host_calloc(ctx, nn, 1),
            *fetch = host_calloc(ctx, nn, 1);
    cand *c = host_calloc(ctx, nn, sizeof *c);
    uint32_t *cuts = host_calloc(ctx, nn, sizeof *cuts),
             *reach = host_calloc(ctx, nn, sizeof *reach),
             *seen = host_calloc(ctx, nn, sizeof *seen),
             *stack = host_calloc(ctx, nn, sizeof *stack);
    if (!is_out || !extra || !best_extra || !min_extra || !base || !none || !last || !fetch || !c ||
        !cuts || !reach || !seen || !stack) {
        s = ctx_oom(ctx, "kiln_compile: rematerialisation candidates", (size_t)nn * sizeof *c);
        goto done;
    }
    /* the rates before the first trial, so that every trial's copies are timed alike (a
     * region's offload policy puts copies in the base too) */
    if (budgeted && pl->rates && (s = pl->rates(pl->user, &sr.rate[0], &sr.rate[1], &sr.rate[2])))
        goto done;
    const kiln_graph *g = *gp;
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
    uint32_t nc = 0, ncut = 0, jump = 0, n_cheap = 0, n_fetch = 0;
    for (uint32_t id = 1; id < nn; id++) {
        const ir_node *n = &g->nodes[id];
        bool cut = !n->backward && jump <= id;
        if (!n->backward && reach[id] > jump) jump = reach[id];
        if (n->backward || remat_mark_of(g, id) || is_out[id] || remat_fixed(g, n)) continue;
        if (cut) cuts[ncut++] = id;
        if (mat[id] != 2) continue;
        size_t bytes = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &bytes);
        bool cheap = false;
        double cost = closure_cost(g, mat, is_out, none, id, nc + 1, seen, stack, &cheap);
        c[nc++] = (cand){id, (double)bytes / cost};
        if (cheap_on && ir_is_fetch(g, n))
            fetch[id] = REMAT_WHY_FETCH, n_fetch++;
        else if (cheap && cheap_on)
            base[id] = REMAT_WHY_CHEAP, n_cheap++;
    }
    qsort(c, nc, sizeof *c, by_score);

    /* The default: regions alone, or with the cheap elementwise values recomputed, and
     * host arguments fetched again, each when that lowers the peak by 1% or more (the
     * trial says; else base is cleared). */
    uint64_t base_peak = without;
    remat_stats base_st = {0};
    if (regions || n_cheap || n_fetch) {
        kiln_graph *tg = NULL;
        remat_stats st = {0};
        if (regions) {
            s = trial(&sr, none, &tg, NULL, &base_peak, &st);
            trial_free(&sr, &tg);
            base_st = st;
        }
        /* the cheap values, then host arguments fetched again for the backward pass
         * (ir_is_fetch) on top of what the default keeps, each worth it only when it
         * lowers the peak by 1% or more: recomputing to save a few KiB at the peak (the
         * MLP of docs/memory.md saves 20 KiB of 11 MiB) is work no one asked for */
        if (!s && n_cheap) {
            bool taken = false;
            s = try_default(&sr, mat, is_out, base, extra, base, &base_peak, &base_st, &taken);
            if (!taken) memset(base, 0, nn);
        }
        if (!s && n_fetch) {
            bool taken = false;
            uint8_t *with = last; /* scratch until the search uses it */
            for (uint32_t id = 0; id < nn; id++) with[id] = fetch[id] ? fetch[id] : base[id];
            s = try_default(&sr, mat, is_out, with, extra, base, &base_peak, &base_st, &taken);
            memset(last, 0, nn);
        }
        if (s) goto done;
    }
    if (!budgeted) {
        s = adopt(&sr, base, regions ? "checkpoint" : "elementwise");
        if (!s && !info->n_recomputed && !info->n_offloaded) *info = (remat_info){0}; /* none */
        goto done;
    }

    /* Proposal 0 is the default; then greedy prefixes over it; then segments; then, where
     * the search may offload, the offload proposals. */
    choice ch = {.budget = budget,
                 .best_peak = UINT64_MAX,
                 .min_peak = UINT64_MAX,
                 .best_extra = best_extra,
                 .min_extra = min_extra,
                 .nn = nn};
    memcpy(ch.rate, sr.rate, sizeof ch.rate);
    uint32_t prefix[GREEDY_STEPS + 1], n_greedy = prefixes(g, c, nc, prefix);
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
            peak = base_peak, st = base_st;
        } else {
            if (p <= n_greedy) {
                for (uint32_t i = 0; i < prefix[p - 1]; i++)
                    extra[c[i].id] = REMAT_WHY_BUDGET_GREEDY;
                strategy = "greedy";
            } else {
                uint32_t step = seg[p - n_greedy - 1];
                if (!step) continue;
                /* every forward value but the kept cuts, as a region's policy would drop */
                for (uint32_t id = 1; id < nn; id++) {
                    const ir_node *n = &g->nodes[id];
                    if (!n->backward && !remat_mark_of(g, id) && !is_out[id] && !remat_fixed(g, n))
                        extra[id] = REMAT_WHY_BUDGET_SEGMENT;
                }
                for (uint32_t i = 0; i < ncut; i++)
                    if (i % step == step - 1) extra[cuts[i]] = REMAT_WHY_KEEP;
                strategy = "segments";
            }
            propose(g, mat, is_out, base, extra);
            if (!memcmp(extra, last, nn)) continue; /* the proposal before it again */
            memcpy(last, extra, nn);
            kiln_graph *tg = NULL;
            s = trial(&sr, extra, &tg, NULL, &peak, &st);
            trial_free(&sr, &tg);
            if (s) break;
        }
        consider(&ch, extra, strategy, peak, &st);
    }
    if (!s && rated(ch.rate) && nc)
        s = offload_proposals(&sr, &ch, c, nc, cuts, ncut, mat, is_out, base, extra);
    info->min_peak = ch.min_peak == UINT64_MAX ? 0 : ch.min_peak;
    /* A budget the default meets changes nothing: what no budget plans is adopted, though a
     * proposal recomputing less might fit too. Else a loop body, planned under its
     * program's budget, would trade the default's cheap recomputations for a higher peak of
     * its own, and the program's peak would rise with any budget (an outside check: a
     * differentiated checkpoint_body scan planned 7.75 MiB under 1 GiB, 7.25 without). */
    if (!s && base_peak <= budget) {
        ch.best_strategy = regions ? "checkpoint" : "elementwise";
        ch.best_st = base_st;
        memcpy(best_extra, base, nn);
    }
    if (!s && !ch.best_strategy && pl->sub_graph && ch.min_strategy) /* as far as it goes */
        ch.best_strategy = ch.min_strategy, memcpy(best_extra, min_extra, nn);
    if (!s && !ch.best_strategy) s = budget_error(&sr, budget, without, min_extra, ch.min_peak);
    if (!s) s = adopt(&sr, best_extra, ch.best_strategy);
    if (!s && rated(sr.rate)) {
        info->timed = true, info->overlap = pl->overlap_transfers;
        info->copy_s = ch.best_st.copy_s, info->copy_wait_s = ch.best_st.copy_wait_s;
    }
done:
    host_free(ctx, mat, nn);
    host_free(ctx, is_out, nn);
    host_free(ctx, extra, nn);
    host_free(ctx, best_extra, nn);
    host_free(ctx, min_extra, nn);
    host_free(ctx, base, nn);
    host_free(ctx, none, nn);
    host_free(ctx, last, nn);
    host_free(ctx, fetch, nn);
    host_free(ctx, c, (size_t)nn * sizeof *c);
    host_free(ctx, cuts, (size_t)nn * sizeof *cuts);
    host_free(ctx, reach, (size_t)nn * sizeof *reach);
    host_free(ctx, seen, (size_t)nn * sizeof *seen);
    host_free(ctx, stack, (size_t)nn * sizeof *stack);
    return s;
}
