/* schedule.c — orders of the kernel DAG that the planner tries (plan.c keeps the one with
 * the lowest planned peak).
 *
 * The peak of a schedule is decided by what is live at once, and no single greedy rule
 * is best on every program, so several cheap ones are tried, as XLA does with its list,
 * DFS and post-order schedulers:
 *
 *  fusion     the kernels in the order fusion made them (node order: the user's trace).
 *  list       a list scheduler: of the kernels whose inputs are ready, run the one that
 *             frees the most bytes net of what it defines (its temporary inputs whose last
 *             reader it is, minus its temporary result). Frees a branch's big
 *             intermediates before starting the next branch. Recomputations
 *             (rematerialisation) and copies back from host memory run only when no
 *             other kernel is ready: as late as their first reader allows; copies to
 *             host memory (offload) run as soon as they are ready, so the device copy
 *             can die with its last forward reader. Host memory is not counted.
 *  dfs        depth-first post-order from the outputs, visiting the producer with the
 *             heavier cone first (cone weight: its result's bytes plus its producers'
 *             weights, saturating) — Sethi-Ullman's rule: finish the subtree that needs
 *             the most memory while little else is live.
 *  postorder  plain depth-first post-order from the outputs, producers in operand order.
 *
 * Every strategy is deterministic: ties go to the lower kernel index. A kernel no output
 * depends on (possible only with passes disabled) is scheduled after a post-order walk
 * from the outputs reaches nothing more, in kernel order. */
#include "plan_internal.h"
#include "ir/side.h"

#include <string.h>

const char *const plan_strategy_names[PLAN_S_COUNT] = {"fusion", "list", "dfs", "postorder"};

/* Net bytes a kernel frees if it runs now: temporaries it reads for the last time, minus
 * the temporaries it writes. */
static int64_t net_freed(const plan_ctx *c, uint32_t k, const uint32_t *remaining,
                         const uint8_t *donated_buf) {
    const fkernel *kn = &c->fp->kernels[k];
    int64_t net = 0;
    for (uint32_t i = 0; i < kn->n_inputs; i++) {
        int32_t b = c->buffer_of[kn->inputs[i]];
        if (b < 0 || remaining[b] != 1 || plan_is_host(c, &c->base[b])) continue;
        if (c->base[b].kind == PLAN_K_TEMP || donated_buf[b]) net += (int64_t)c->base[b].size;
    }
    for (uint32_t i = 0; i < kn->n_roots; i++) {
        int32_t b = c->buffer_of[kn->roots[i]];
        if (b >= 0 && c->base[b].kind == PLAN_K_TEMP && !plan_is_host(c, &c->base[b]))
            net -= (int64_t)c->base[b].size;
    }
    return net;
}

/* A copy to host memory (offload): run first, whatever it frees now. */
static bool offloads(const plan_ctx *c, uint32_t k) {
    const fkernel *kn = &c->fp->kernels[k];
    return kn->kind == FK_TRANSFER && ir_in_host(c->g, kn->roots[0]);
}

/* A kernel writing a recomputation (IR_HINT_RECOMPUTED): its inputs are ready from the forward
 * pass on, but running it before the backward pass needs it would hold its result for
 * nothing, so the list scheduler runs it only when nothing else is ready. */
static bool recomputes(const plan_ctx *c, uint32_t k) {
    const fkernel *kn = &c->fp->kernels[k];
    for (uint32_t i = 0; i < kn->n_roots; i++)
        if (ir_side_hints(c->g, kn->roots[i]) & IR_HINT_RECOMPUTED) return true;
    return false;
}

/* A fetch: a copy to the device of an argument in pinned_host memory (host offload of
 * parameters or optimiser state). Its input is there from the start, so it is ready at
 * once; run then, it would hold its result on the device for the whole step. */
static bool fetches(const plan_ctx *c, uint32_t k) {
    const fkernel *kn = &c->fp->kernels[k];
    return kn->kind == FK_TRANSFER && ir_is_fetch(c->g, &c->g->nodes[kn->roots[0]]);
}

/* A kernel of the backward pass that reads forward values only (a derivative factor such
 * as gelu'(x)): ready during the forward pass, and run then, its result would wait for the
 * backward pass on the device; it runs late, as a recomputation does. */
static bool backward_early(const plan_ctx *c, uint32_t k) {
    const fkernel *kn = &c->fp->kernels[k];
    if (!c->g->nodes[kn->roots[0]].backward) return false;
    for (uint32_t i = 0; i < kn->n_inputs; i++)
        if (c->g->nodes[kn->inputs[i]].backward) return false;
    return true;
}

/* Whether fetch k is due: one of its readers waits for fetches alone (nfetch: per kernel,
 * its producers that are fetches not run yet), so fetching now lets it run. */
static bool fetch_due(const plan_ctx *c, uint32_t k, const uint32_t *npred,
                      const uint32_t *nfetch) {
    for (uint32_t p = c->succ_start[k]; p < c->succ_start[k + 1]; p++)
        if (npred[c->succs[p]] == nfetch[c->succs[p]]) return true;
    return false;
}

/* The list scheduler's tiers, first run first: copies to host memory; ordinary kernels;
 * fetches that are due; recomputations and backward kernels of forward values alone;
 * fetches not due yet (an optimiser's state whose gradient is not ready). */
enum { TIER_OFFLOAD, TIER_NORMAL, TIER_FETCH_DUE, TIER_LATE, TIER_FETCH_EARLY };

static int tier_of(const plan_ctx *c, uint32_t k, const uint32_t *npred, const uint32_t *nfetch) {
    if (offloads(c, k)) return TIER_OFFLOAD;
    if (fetches(c, k)) return fetch_due(c, k, npred, nfetch) ? TIER_FETCH_DUE : TIER_FETCH_EARLY;
    return recomputes(c, k) || backward_early(c, k) ? TIER_LATE : TIER_NORMAL;
}

static kiln_status list_schedule(const plan_ctx *c, uint32_t *order) {
    size_t bytes = (size_t)c->nb * (sizeof(uint32_t) + 1) + (size_t)c->nk * 3 * sizeof(uint32_t);
    char *mem = host_calloc(c->ctx, 1, bytes ? bytes : 1);
    if (!mem) return ctx_oom(c->ctx, "kiln_compile: list scheduler", bytes);
    uint32_t *remaining = (uint32_t *)mem, *npred = remaining + c->nb, *ready = npred + c->nk;
    uint32_t *nfetch = ready + c->nk;
    uint8_t *donated_buf = (uint8_t *)(nfetch + c->nk);
    memcpy(remaining, c->users, (size_t)c->nb * sizeof *remaining);
    for (uint32_t b = 0; b < c->nb; b++)
        donated_buf[b] = c->base[b].kind == PLAN_K_PARAM && c->o->donated &&
                         c->o->donated[c->g->nodes[c->base[b].node].a.param_index];
    uint32_t n_ready = 0;
    for (uint32_t k = 0; k < c->nk; k++) {
        npred[k] = c->pred_start[k + 1] - c->pred_start[k];
        for (uint32_t p = c->pred_start[k]; p < c->pred_start[k + 1]; p++)
            nfetch[k] += fetches(c, c->preds[p]);
        if (!npred[k]) ready[n_ready++] = k;
    }
    for (uint32_t step = 0; step < c->nk; step++) {
        uint32_t best = 0;
        int64_t best_net = 0;
        int best_tier = 0;
        for (uint32_t r = 0; r < n_ready; r++) {
            int64_t net = net_freed(c, ready[r], remaining, donated_buf);
            int tier = tier_of(c, ready[r], npred, nfetch);
            if (r == 0 || tier < best_tier ||
                (tier == best_tier &&
                 (net > best_net || (net == best_net && ready[r] < ready[best]))))
                best = r, best_net = net, best_tier = tier;
        }
        uint32_t k = ready[best];
        ready[best] = ready[--n_ready];
        order[step] = k;
        const fkernel *kn = &c->fp->kernels[k];
        for (uint32_t i = 0; i < kn->n_inputs; i++) {
            int32_t b = c->buffer_of[kn->inputs[i]];
            if (b >= 0 && remaining[b]) remaining[b]--;
        }
        bool fetch = fetches(c, k);
        for (uint32_t p = c->succ_start[k]; p < c->succ_start[k + 1]; p++) {
            if (fetch) nfetch[c->succs[p]]--;
            if (--npred[c->succs[p]] == 0) ready[n_ready++] = c->succs[p];
        }
    }
    host_free(c->ctx, mem, bytes ? bytes : 1);
    return KILN_STATUS_OK;
}

/* Sorts kernel k's producers by weight, heaviest first (insertion sort: short lists). */
static void sort_preds(uint32_t *p, uint32_t n, const uint64_t *w) {
    for (uint32_t i = 1; i < n; i++) {
        uint32_t x = p[i], j = i;
        while (j > 0 && (w[p[j - 1]] < w[x] || (w[p[j - 1]] == w[x] && p[j - 1] > x))) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

/* Post-order from kernel `start`: producers first, in the order of preds[]. */
static void post_order(const plan_ctx *c, const uint32_t *preds, uint32_t start, uint8_t *done,
                       uint32_t *stack, uint32_t *pos, uint32_t *order, uint32_t *n) {
    if (done[start]) return;
    uint32_t sp = 0;
    stack[sp] = start, pos[sp++] = c->pred_start[start];
    done[start] = 1;
    while (sp) {
        uint32_t k = stack[sp - 1], at = pos[sp - 1];
        if (at < c->pred_start[k + 1]) {
            pos[sp - 1]++;
            uint32_t p = preds[at];
            if (!done[p]) done[p] = 1, stack[sp] = p, pos[sp++] = c->pred_start[p];
            continue;
        }
        order[(*n)++] = k;
        sp--;
    }
}

static kiln_status dfs_schedule(const plan_ctx *c, bool heavy_first, uint32_t *order) {
    uint32_t np = c->pred_start[c->nk];
    size_t bytes = (size_t)c->nk * (2 * sizeof(uint32_t) + sizeof(uint64_t) + 1) +
                   (size_t)np * sizeof(uint32_t);
    char *mem = host_calloc(c->ctx, 1, bytes ? bytes : 1);
    if (!mem) return ctx_oom(c->ctx, "kiln_compile: depth-first scheduler", bytes);
    uint64_t *w = (uint64_t *)mem;
    uint32_t *stack = (uint32_t *)(w + c->nk), *pos = stack + c->nk, *preds = pos + c->nk;
    uint8_t *done = (uint8_t *)(preds + np);
    memcpy(preds, c->preds, (size_t)np * sizeof *preds);
    if (heavy_first) {
        /* kernels are in topological index order, so producers are weighed first */
        for (uint32_t k = 0; k < c->nk; k++) {
            int32_t b = c->buffer_of[c->fp->kernels[k].roots[0]];
            uint64_t x = b >= 0 ? c->base[b].size : 0;
            for (uint32_t p = c->pred_start[k]; p < c->pred_start[k + 1]; p++)
                x = x + w[preds[p]] < x ? UINT64_MAX : x + w[preds[p]];
            w[k] = x;
            sort_preds(preds + c->pred_start[k], c->pred_start[k + 1] - c->pred_start[k], w);
        }
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->g->n_outputs; i++) {
        uint32_t k = c->kernel_of[c->g->outputs[i]];
        if (k != PLAN_NONE) post_order(c, preds, k, done, stack, pos, order, &n);
    }
    for (uint32_t k = 0; k < c->nk; k++) post_order(c, preds, k, done, stack, pos, order, &n);
    host_free(c->ctx, mem, bytes ? bytes : 1);
    return KILN_STATUS_OK;
}

kiln_status plan_schedule(const plan_ctx *c, int s, uint32_t *order) {
    switch (s) {
    case PLAN_S_LIST: return list_schedule(c, order);
    case PLAN_S_DFS: return dfs_schedule(c, true, order);
    case PLAN_S_POSTORDER: return dfs_schedule(c, false, order);
    default:
        for (uint32_t k = 0; k < c->nk; k++) order[k] = k;
        return KILN_STATUS_OK;
    }
}

/* ------------------------------------------------ overlapping collectives ---- */

static bool is_collective(const plan_ctx *c, uint32_t k) {
    return c->fp->kernels[k].kind == FK_COLLECTIVE;
}

/* k exists only to feed collectives (a bucket's concatenation of gradients). */
static bool feeds_only_collectives(const plan_ctx *c, uint32_t k) {
    uint32_t a = c->succ_start[k], b = c->succ_start[k + 1];
    if (a == b) return false;
    for (uint32_t e = a; e < b; e++)
        if (!is_collective(c, c->succs[e])) return false;
    return true;
}

static bool reads_a_collective(const plan_ctx *c, uint32_t k) {
    for (uint32_t e = c->pred_start[k]; e < c->pred_start[k + 1]; e++)
        if (is_collective(c, c->preds[e])) return true;
    return false;
}

static bool listed(const uint32_t *list, uint32_t from, uint32_t to, uint32_t k) {
    for (uint32_t e = from; e < to; e++)
        if (list[e] == k) return true;
    return false;
}

/* Why: a collective that overlaps (run.c starts it at its step and waits before its first
 * reader) hides its transfer behind the kernels between those two steps, so it should
 * start as soon as its operand exists — DDP issues a gradient bucket the moment its last
 * gradient is written — and its readers (the optimiser's updates, the global norm) should
 * run as late as their own readers allow, after the rest of the backward pass. The
 * memory-driven strategies place them by bytes freed instead (an all-reduce frees as much
 * as it defines), often right before their readers, which would leave nothing to overlap.
 * The cost: operands and results live longer, and the planner's peak counts that.
 *
 * Forward, each collective (and a kernel that only feeds collectives, before it) moves up
 * to just after the latest of its producers; backward, each reader of a collective moves
 * down to just before the earliest of its readers (or of the readers of collectives moved
 * already, so that they keep their order and the run waits for the collectives roughly in
 * the order it started them). Both moves keep every producer before its readers, and both
 * are deterministic, so every replica gets the same order. */
void plan_overlap_order(const plan_ctx *c, uint32_t *order) {
    uint32_t nk = c->nk;
    for (uint32_t s = 0; s < nk; s++) {
        uint32_t k = order[s];
        if (!is_collective(c, k) && !feeds_only_collectives(c, k)) continue;
        uint32_t to = 0; /* just after the latest producer */
        for (uint32_t j = s; j-- > 0;)
            if (listed(c->preds, c->pred_start[k], c->pred_start[k + 1], order[j])) {
                to = j + 1;
                break;
            }
        memmove(order + to + 1, order + to, (s - to) * sizeof *order);
        order[to] = k;
    }
    for (uint32_t s = nk; s-- > 0;) {
        uint32_t k = order[s];
        if (!reads_a_collective(c, k) || is_collective(c, k)) continue;
        uint32_t to = nk - 1; /* just before the earliest reader, or a reader moved before */
        for (uint32_t j = s + 1; j < nk; j++)
            if (listed(c->succs, c->succ_start[k], c->succ_start[k + 1], order[j]) ||
                reads_a_collective(c, order[j])) {
                to = j - 1;
                break;
            }
        memmove(order + s, order + s + 1, (to - s) * sizeof *order);
        order[to] = k;
    }
}

/* ------------------------------------------------------------ prefetches ---- */

/* Why: a fetch (a copy to the device of a value in pinned_host memory: an offloaded
 * parameter, optimiser state or activation) that overlaps runs on the copy queue from its
 * step until its first reader's (plan.c, collective_waits). Every strategy places it right
 * before that reader: the list scheduler as late as it can, to hold its device bytes for
 * the least time, the depth-first ones where its reader's operands start. Nothing is left
 * to hide the copy behind: on an H200 the offloaded steps took as long as their copies
 * added, on the copy queue as on the kernels' (bench/RESULTS.md, "copies on the copy
 * stream"). So each fetch moves up to `window` steps before its first reader, never before
 * its own producer (an offloaded activation's put: the fetch reads the host bytes the put
 * writes), to overlap that many kernels, as a put overlaps the kernels after it. The cost:
 * its result lives that much longer on the device; plan.c's plan_one takes the widest
 * window that does not raise the peak. Deterministic, and every producer stays before its
 * readers. True when a fetch moved. */
bool plan_prefetch_order(const plan_ctx *c, uint32_t *order, uint32_t window) {
    uint32_t nk = c->nk;
    bool moved = false;
    for (uint32_t s = 0; s < nk; s++) {
        uint32_t k = order[s];
        if (!fetches(c, k)) continue;
        uint32_t r = nk; /* the first reader's step */
        for (uint32_t j = s + 1; j < nk && r == nk; j++)
            if (listed(c->succs, c->succ_start[k], c->succ_start[k + 1], order[j])) r = j;
        if (r == nk) continue;
        uint32_t to = r > window ? r - 1 - window : 0;
        for (uint32_t j = s; j-- > to;) /* never before a producer */
            if (listed(c->preds, c->pred_start[k], c->pred_start[k + 1], order[j])) {
                to = j + 1;
                break;
            }
        if (to >= s) continue;
        memmove(order + to + 1, order + to, (s - to) * sizeof *order);
        order[to] = k;
        moved = true;
    }
    return moved;
}

bool plan_has_fetches(const plan_ctx *c) {
    for (uint32_t k = 0; k < c->nk; k++)
        if (fetches(c, k)) return true;
    return false;
}
