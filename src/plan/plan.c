/* plan.c — the planner's driver (see plan.h): what every candidate schedule shares, one
 * schedule planned in full, and the choice between them.
 *
 * Planning one schedule:
 *  0. with overlapping collectives, the schedule moves them early and their readers late
 *     (plan_overlap_order);
 *  1. liveness: each buffer's interval [def, last] in steps (an overlapping collective's or
 *     copy's operand and result through its wait step);
 *  2. in place: walking the steps in order, a LOOP or SCATTER kernel whose input dies
 *     at that step, has a result's byte size and may legally be overwritten (inplace.c),
 *     writes that result over it. The result joins the input's unit (they share bytes),
 *     or, when the input is a donated argument, takes that buffer. A multi-output kernel
 *     gives each root at most one input and each input to at most one root, its roots
 *     needing the input's dtype too (codegen puts an element's loads before its stores,
 *     but C's type-based aliasing rules let a compiler reorder accesses of different
 *     types). Roots that are outputs choose first, since only a donated argument can
 *     hold one; roots that are temporaries then prefer a dying temporary, leaving
 *     donated buffers to outputs of later kernels;
 *  3. donation: a donated argument that is itself an output becomes that output with no
 *     copy; every other donated argument is matched with an output of its byte size
 *     that is written only after the argument's last read (earliest such output first,
 *     arguments by last read: the greedy that is optimal for this interval matching);
 *  4. packing (pack.c): temporaries and scratch into donated buffers' free gaps and the
 *     arena;
 *  5. figures: bytes live per step, the lower bound, the planned peak.
 *
 * The candidate with the lowest planned peak wins (then the smaller arena, the smaller
 * lower bound, the earlier strategy), so the result is deterministic. */
#include "plan_internal.h"

#include <string.h>

/* --------------------------------------------------------- shared ---- */

static plan_kind kind_of(const kiln_graph *g, uint32_t id, const int32_t *first_output) {
    switch (g->nodes[id].op) {
    case IR_PARAMETER: return PLAN_K_PARAM;
    case IR_CONSTANT: return PLAN_K_CONST;
    default: return first_output[id] >= 0 ? PLAN_K_OUTPUT : PLAN_K_TEMP;
    }
}

/* Carves plan_ctx's arrays from one block (measure with base NULL, then carve). */
static void ctx_layout(plan_ctx *c, plan_bump *b, uint32_t n_edges, uint32_t n_inputs) {
    c->base = plan_take(b, c->nb, sizeof *c->base);
    c->buffer_of = plan_take(b, c->n_nodes, sizeof *c->buffer_of);
    c->scratch_of = plan_take(b, c->nk + 1, sizeof *c->scratch_of);
    c->kernel_of = plan_take(b, c->n_nodes, sizeof *c->kernel_of);
    c->pred_start = plan_take(b, c->nk + 1, sizeof *c->pred_start);
    c->preds = plan_take(b, n_edges + 1, sizeof *c->preds);
    c->succ_start = plan_take(b, c->nk + 1, sizeof *c->succ_start);
    c->succs = plan_take(b, n_edges + 1, sizeof *c->succs);
    c->users = plan_take(b, c->nb + 1, sizeof *c->users);
    c->in_start = plan_take(b, c->nk + 1, sizeof *c->in_start);
    c->legal = plan_take(b, n_inputs + 1, 1);
    c->first_output = plan_take(b, c->n_nodes, sizeof *c->first_output);
}

/* The kernel DAG: producers (and consumers) of every kernel, each listed once. Producers
 * always have a smaller index (kernels are made in node order). */
static void build_dag(plan_ctx *c) {
    const fusion_plan *fp = c->fp;
    uint32_t ne = 0;
    for (uint32_t k = 0; k < c->nk; k++) {
        c->pred_start[k] = ne;
        const fkernel *kn = &fp->kernels[k];
        for (uint32_t i = 0; i < kn->n_inputs; i++) {
            uint32_t p = c->kernel_of[kn->inputs[i]];
            bool dup = p == PLAN_NONE;
            for (uint32_t e = c->pred_start[k]; e < ne && !dup; e++) dup = c->preds[e] == p;
            if (!dup) c->preds[ne++] = p;
        }
    }
    c->pred_start[c->nk] = ne;
    /* consumers: count, prefix-sum, fill with the start as cursor, shift back */
    memset(c->succ_start, 0, (c->nk + 1) * sizeof *c->succ_start);
    for (uint32_t e = 0; e < ne; e++) c->succ_start[c->preds[e] + 1]++;
    for (uint32_t k = 0; k < c->nk; k++) c->succ_start[k + 1] += c->succ_start[k];
    for (uint32_t k = 0; k < c->nk; k++)
        for (uint32_t e = c->pred_start[k]; e < c->pred_start[k + 1]; e++)
            c->succs[c->succ_start[c->preds[e]]++] = k;
    for (uint32_t k = c->nk; k > 0; k--) c->succ_start[k] = c->succ_start[k - 1];
    c->succ_start[0] = 0;
}

/* One buffer per materialised value (node order), then one per kernel with scratch. */
static void make_buffers(plan_ctx *c) {
    const kiln_graph *g = c->g;
    uint32_t nb = 0;
    for (uint32_t id = 1; id < c->n_nodes; id++) {
        c->buffer_of[id] = -1;
        if (!c->fp->materialised[id]) continue;
        const ir_node *n = &g->nodes[id];
        plan_buffer *b = &c->base[nb];
        size_t size = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &size);
        *b = (plan_buffer){.node = id, .kernel = c->kernel_of[id], .size = size, .shares = -1};
        b->kind = (uint8_t)kind_of(g, id, c->first_output);
        c->buffer_of[id] = (int32_t)nb++;
    }
    for (uint32_t k = 0; k < c->nk; k++) {
        c->scratch_of[k] = -1;
        if (!c->o->scratch || !c->o->scratch[k]) continue;
        c->base[nb] = (plan_buffer){.node = c->fp->kernels[k].roots[0],
                                    .kernel = k,
                                    .kind = PLAN_K_SCRATCH,
                                    .size = c->o->scratch[k],
                                    .shares = -1};
        c->scratch_of[k] = (int32_t)nb++;
    }
    memset(c->users, 0, (size_t)c->nb * sizeof *c->users);
    for (uint32_t k = 0; k < c->nk; k++)
        for (uint32_t i = 0; i < c->fp->kernels[k].n_inputs; i++)
            c->users[c->buffer_of[c->fp->kernels[k].inputs[i]]]++;
}

static kiln_status ctx_init(plan_ctx *c, const kiln_graph *g, const fusion_plan *fp,
                            const plan_options *o) {
    *c = (plan_ctx){.g = g,
                    .fp = fp,
                    .o = o,
                    .ctx = g->ctx,
                    .nk = fp->n_kernels,
                    .n_nodes = g->n_nodes,
                    .n_params = g->n_params};
    uint32_t n_inputs = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++) c->nb += fp->materialised[id];
    for (uint32_t k = 0; k < c->nk; k++) {
        n_inputs += fp->kernels[k].n_inputs;
        c->nb += o->scratch && o->scratch[k];
    }
    plan_bump b = {NULL, 0};
    ctx_layout(c, &b, n_inputs, n_inputs);
    if (!(b.base = host_calloc(c->ctx, 1, b.used)))
        return ctx_oom(c->ctx, "kiln_compile: memory planner", b.used);
    c->block = b.base, c->block_size = b.used, b.used = 0;
    ctx_layout(c, &b, n_inputs, n_inputs);
    for (uint32_t id = 0; id < g->n_nodes; id++)
        c->kernel_of[id] = PLAN_NONE, c->first_output[id] = -1;
    for (uint32_t j = g->n_outputs; j-- > 0;) c->first_output[g->outputs[j]] = (int32_t)j;
    for (uint32_t k = 0; k < c->nk; k++)
        for (uint32_t r = 0; r < fp->kernels[k].n_roots; r++)
            c->kernel_of[fp->kernels[k].roots[r]] = k;
    for (uint32_t k = 0, at = 0; k < c->nk; at += fp->kernels[k++].n_inputs) c->in_start[k] = at;
    c->in_start[c->nk] = n_inputs;
    make_buffers(c);
    build_dag(c);
    return plan_inplace_legal(g, fp, c->legal);
}

static void ctx_free(plan_ctx *c) {
    host_free(c->ctx, c->block, c->block_size);
    c->block = NULL;
}

/* ------------------------------------------------------ candidates ---- */

static void cand_layout(const plan_ctx *c, plan_cand *cd, plan_bump *b) {
    cd->order = plan_take(b, c->nk + 1, sizeof *cd->order);
    cd->step_of = plan_take(b, c->nk + 1, sizeof *cd->step_of);
    cd->wait_step = plan_take(b, c->nk + 1, sizeof *cd->wait_step);
    cd->buf = plan_take(b, c->nb + 1, sizeof *cd->buf);
    cd->leader = plan_take(b, c->nb + 1, sizeof *cd->leader);
    cd->unit_last = plan_take(b, c->nb + 1, sizeof *cd->unit_last);
    cd->alias_of = plan_take(b, c->n_nodes, sizeof *cd->alias_of);
    cd->output_donor = plan_take(b, c->g->n_outputs + 1, sizeof *cd->output_donor);
    cd->donor_state = plan_take(b, c->n_params + 1, 1);
    cd->live = plan_take(b, c->nk + 1, sizeof *cd->live);
}

static kiln_status cand_alloc(const plan_ctx *c, plan_cand *cd) {
    plan_bump b = {NULL, 0};
    cand_layout(c, cd, &b);
    if (!(b.base = host_alloc(c->ctx, b.used)))
        return ctx_oom(c->ctx, "kiln_compile: memory planner", b.used);
    cd->block = b.base, cd->block_size = b.used, b.used = 0;
    cand_layout(c, cd, &b);
    return KILN_STATUS_OK;
}

static void cand_free(const plan_ctx *c, plan_cand *cd) {
    if (cd->block) host_free(c->ctx, cd->block, cd->block_size);
    cd->block = NULL;
}

static bool is_donated(const plan_ctx *c, uint32_t param) {
    return c->o->donated && c->o->donated[param];
}

/* Where the run waits for each collective, and each copy between memory kinds when they
 * overlap (plan.h, wait_step): before its first reader,
 * and before the last step at the latest, so that the last kernel never runs beside a
 * transfer (an in-place write there over the operand, whose interval ends at that step,
 * would be a write under the transfer). The operand and the result are read and written
 * by the transport until the wait: their intervals reach the wait step, so no buffer
 * defined in between may take their bytes (the in-place rule lets the kernel at the wait
 * step itself write over the operand: it runs after the wait). */
static void collective_waits(const plan_ctx *c, plan_cand *cd) {
    for (uint32_t k = 0; k < c->nk; k++) {
        int32_t s = (int32_t)cd->step_of[k], w = s;
        const fkernel *kn = &c->fp->kernels[k];
        cd->wait_step[k] = s;
        bool transfer = kn->kind == FK_TRANSFER && c->o->overlap_transfers;
        if (!transfer && (kn->kind != FK_COLLECTIVE || !c->o->overlap_collectives)) continue;
        w = (int32_t)c->nk - 1;
        for (uint32_t e = c->succ_start[k]; e < c->succ_start[k + 1]; e++)
            if ((int32_t)cd->step_of[c->succs[e]] < w) w = (int32_t)cd->step_of[c->succs[e]];
        /* a copy to host memory frees its operand's device bytes: it holds them only for a
         * few steps, the kernels its copy runs beside, not until its result's reader (a
         * fetch in the backward pass) */
        if (transfer && c->g->nodes[kn->roots[0]].a.memory_kind == KILN_MEMORY_PINNED_HOST &&
            w > s + PLAN_TRANSFER_WINDOW)
            w = s + PLAN_TRANSFER_WINDOW;
        if (w <= s) continue;
        cd->wait_step[k] = w;
        for (uint32_t i = 0; i < kn->n_inputs; i++) {
            plan_buffer *x = &cd->buf[c->buffer_of[kn->inputs[i]]];
            if (x->last < w) x->last = w;
        }
        for (uint32_t r = 0; r < kn->n_roots; r++) {
            plan_buffer *x = &cd->buf[c->buffer_of[kn->roots[r]]];
            if (x->last < w) x->last = w;
        }
    }
}

/* Intervals: def is the writing kernel's step (-1 for parameters and constants), last the
 * latest reading step; outputs and parameters that are outputs live to the end. */
static void liveness(const plan_ctx *c, plan_cand *cd) {
    int32_t end = (int32_t)c->nk;
    for (uint32_t s = 0; s < c->nk; s++) cd->step_of[cd->order[s]] = s;
    for (uint32_t b = 0; b < c->nb; b++) {
        plan_buffer *x = &cd->buf[b];
        *x = c->base[b];
        x->def = x->kernel == PLAN_NONE ? -1 : (int32_t)cd->step_of[x->kernel];
        x->last = x->def;
        cd->leader[b] = (int32_t)b;
        const ir_node *n = &c->g->nodes[x->node];
        switch (x->kind) {
        case PLAN_K_PARAM:
            x->place = PLAN_P_ARG, x->place_index = (uint32_t)n->a.param_index;
            break;
        case PLAN_K_CONST: x->place = PLAN_P_CONST; break;
        case PLAN_K_OUTPUT:
            x->place = PLAN_P_OUTPUT, x->place_index = (uint32_t)c->first_output[x->node];
            break;
        default: x->place = plan_is_host(c, x) ? PLAN_P_HOST : PLAN_P_ARENA; break;
        }
        if (x->kind != PLAN_K_SCRATCH && c->first_output[x->node] >= 0) x->last = end;
    }
    for (uint32_t k = 0; k < c->nk; k++) {
        const fkernel *kn = &c->fp->kernels[k];
        int32_t s = (int32_t)cd->step_of[k];
        for (uint32_t i = 0; i < kn->n_inputs; i++) {
            plan_buffer *x = &cd->buf[c->buffer_of[kn->inputs[i]]];
            if (x->last < s) x->last = s;
        }
    }
    collective_waits(c, cd);
    memset(cd->alias_of, 0, c->n_nodes * sizeof *cd->alias_of);
    for (uint32_t p = 0; p < c->n_params; p++)
        cd->donor_state[p] = is_donated(c, p) ? DONOR_FREE : DONOR_NONE;
    for (uint32_t j = 0; j < c->g->n_outputs; j++) cd->output_donor[j] = -1;
    cd->inplace_bytes = 0;
}

/* Result buffer rb (of root node `root`) takes over input buffer xb (its kernel's input
 * `slot`), if it can. */
/* Whether donated parameter p's buffer may become output j (plan_options.donate_to). */
static bool donation_fits(const plan_ctx *c, uint32_t p, uint32_t j) {
    return !c->o->donate_to || c->o->donate_to[p] < 0 || c->o->donate_to[p] == (int32_t)j;
}

static bool take_over(const plan_ctx *c, plan_cand *cd, uint32_t root, uint32_t slot, int32_t rb,
                      int32_t xb) {
    plan_buffer *r = &cd->buf[rb], *x = &cd->buf[xb];
    if (x->last != r->def || x->size != r->size) return false;
    if (plan_in_host(c, x) != plan_in_host(c, r)) return false; /* bytes of one memory kind */
    if (x->kind == PLAN_K_PARAM && r->kind == PLAN_K_OUTPUT &&
        !donation_fits(c, x->place_index, r->place_index))
        return false;
    if (x->kind == PLAN_K_TEMP) {
        if (r->kind != PLAN_K_TEMP) return false; /* an output must outlive the arena */
        cd->leader[rb] = cd->leader[xb];
    } else if (x->kind == PLAN_K_PARAM && cd->donor_state[x->place_index] == DONOR_FREE) {
        uint32_t p = x->place_index;
        if (r->kind == PLAN_K_OUTPUT) cd->output_donor[r->place_index] = (int32_t)p;
        cd->donor_state[p] = r->kind == PLAN_K_OUTPUT ? DONOR_OUTPUT : DONOR_INPLACE;
        r->place = PLAN_P_DONATED, r->place_index = p, r->offset = 0;
    } else {
        return false;
    }
    r->shares = xb;
    cd->alias_of[root] = slot + 1;
    cd->inplace_bytes += r->size;
    return true;
}

/* May root r of kernel k take input slot i? Legal, not taken by another root, and with
 * several roots of the same dtype (the file comment says why). */
static bool may_take(const plan_ctx *c, const plan_cand *cd, const fkernel *kn, uint32_t k,
                     uint32_t r, uint32_t i) {
    if (!c->legal[c->in_start[k] + i]) return false;
    for (uint32_t o = 0; o < kn->n_roots; o++)
        if (cd->alias_of[kn->roots[o]] == i + 1) return false;
    return kn->n_roots == 1 || c->g->nodes[kn->roots[r]].dtype == c->g->nodes[kn->inputs[i]].dtype;
}

/* Root r of kernel k over the first input it may take; with `temps_only`, only a dying
 * temporary. */
static void place_root(const plan_ctx *c, plan_cand *cd, uint32_t k, uint32_t r, bool temps_only) {
    const fkernel *kn = &c->fp->kernels[k];
    int32_t rb = c->buffer_of[kn->roots[r]];
    if (!cd->buf[rb].size || cd->buf[rb].shares >= 0) return;
    for (uint32_t i = 0; i < kn->n_inputs; i++) {
        int32_t xb = c->buffer_of[kn->inputs[i]];
        if (temps_only && cd->buf[xb].kind != PLAN_K_TEMP) continue;
        if (may_take(c, cd, kn, k, r, i) && take_over(c, cd, kn->roots[r], i, rb, xb)) return;
    }
}

/* A loop's carry j over its own initial value only (inplace.c says why), never another. */
static void place_carry(const plan_ctx *c, plan_cand *cd, uint32_t k, uint32_t j, bool temps_only) {
    const fkernel *kn = &c->fp->kernels[k];
    const ir_node *n = &c->g->nodes[kn->roots[0]];
    int32_t rb = c->buffer_of[kn->roots[j]];
    if (!cd->buf[rb].size || cd->buf[rb].shares >= 0) return;
    uint32_t init = ir_in(n)[j];
    for (uint32_t i = 0; i < kn->n_inputs; i++) {
        if (kn->inputs[i] != init) continue;
        int32_t xb = c->buffer_of[init];
        if (temps_only && cd->buf[xb].kind != PLAN_K_TEMP) return;
        if (may_take(c, cd, kn, k, j, i)) take_over(c, cd, kn->roots[j], i, rb, xb);
        return;
    }
}

/* Step 2 of the file comment: results written over inputs that die where they are read:
 * outputs first (into donated arguments), then temporaries (a dying temporary first, then
 * a donated argument). */
static void assign_inplace(const plan_ctx *c, plan_cand *cd) {
    for (uint32_t s = 0; s < c->nk; s++) {
        uint32_t k = cd->order[s];
        const fkernel *kn = &c->fp->kernels[k];
        if (kn->kind == FK_DOT || kn->kind == FK_COLLECTIVE) continue;
        const ir_node *n = &c->g->nodes[kn->roots[0]];
        bool loop = kn->kind == FK_CONTROL;
        if (loop && n->op != IR_WHILE && n->op != IR_SCAN) continue;
        uint32_t roots = loop ? (uint32_t)n->a.ctl.n_carry : kn->n_roots;
        for (int pass = 0; pass < 3; pass++)
            for (uint32_t r = 0; r < roots; r++) {
                bool out = cd->buf[c->buffer_of[kn->roots[r]]].kind == PLAN_K_OUTPUT;
                if (out != (pass == 0)) continue;
                if (loop)
                    place_carry(c, cd, k, r, pass == 1);
                else
                    place_root(c, cd, k, r, pass == 1);
            }
    }
}

/* Step 3: donated arguments that still hold nothing take an output. */
static void assign_donations(const plan_ctx *c, plan_cand *cd) {
    const kiln_graph *g = c->g;
    for (uint32_t j = 0; j < g->n_outputs; j++) { /* an argument returned as is */
        int32_t b = c->buffer_of[g->outputs[j]];
        plan_buffer *x = &cd->buf[b];
        if (x->kind == PLAN_K_PARAM && c->first_output[x->node] == (int32_t)j && x->size &&
            cd->donor_state[x->place_index] == DONOR_FREE && donation_fits(c, x->place_index, j)) {
            cd->output_donor[j] = (int32_t)x->place_index;
            cd->donor_state[x->place_index] = DONOR_OUTPUT;
        }
    }
    for (;;) { /* the free argument read last the earliest, with the earliest output after */
        int32_t pb = -1, ob = -1;
        for (uint32_t p = 0; p < c->n_params; p++) {
            int32_t b = c->buffer_of[g->params[p]];
            if (cd->donor_state[p] != DONOR_FREE || b < 0 || !cd->buf[b].size) continue;
            if (pb < 0 || cd->buf[b].last < cd->buf[pb].last) pb = b;
        }
        if (pb < 0) return;
        const plan_buffer *pp = &cd->buf[pb];
        for (uint32_t b = 0; b < c->nb; b++) {
            const plan_buffer *x = &cd->buf[b];
            if (x->kind != PLAN_K_OUTPUT || x->place != PLAN_P_OUTPUT || x->size != pp->size ||
                x->def <= pp->last || !donation_fits(c, pp->place_index, x->place_index) ||
                plan_in_host(c, x) != plan_in_host(c, pp))
                continue;
            if (ob < 0 || x->def < cd->buf[ob].def) ob = (int32_t)b;
        }
        uint32_t p = pp->place_index;
        if (ob < 0) {
            cd->donor_state[p] = DONOR_UNMATCHED; /* temporaries may still use it */
            continue;
        }
        plan_buffer *o = &cd->buf[ob];
        cd->output_donor[o->place_index] = (int32_t)p;
        cd->donor_state[p] = DONOR_OUTPUT;
        o->place = PLAN_P_DONATED, o->place_index = p, o->offset = 0;
    }
}

/* Step 5: bytes of temporaries and scratch live at each step (each unit once: a chain of
 * in-place results is one buffer), the lower bound, and the planned peak. */
static void figures(const plan_ctx *c, plan_cand *cd) {
    uint64_t gr = c->o->granule ? c->o->granule : 1;
    int64_t *diff = (int64_t *)cd->live; /* a difference array, summed in place below */
    memset(cd->live, 0, (c->nk + 1) * sizeof *cd->live);
    for (uint32_t b = 0; b < c->nb; b++) cd->unit_last[b] = cd->buf[b].last;
    for (uint32_t b = 0; b < c->nb; b++) /* a chain lives until its last member's last read */
        if (cd->buf[b].last > cd->unit_last[cd->leader[b]])
            cd->unit_last[cd->leader[b]] = cd->buf[b].last;
    for (uint32_t b = 0; b < c->nb; b++) {
        const plan_buffer *x = &cd->buf[b];
        if ((x->kind != PLAN_K_TEMP && x->kind != PLAN_K_SCRATCH) || cd->leader[b] != (int32_t)b ||
            x->place == PLAN_P_HOST)
            continue;
        int32_t last = cd->unit_last[b];
        if (x->def < 0 || !c->nk) continue;
        diff[x->def] += (int64_t)x->size;
        diff[last + 1 <= (int32_t)c->nk ? last + 1 : (int32_t)c->nk] -= (int64_t)x->size;
    }
    int64_t run = 0;
    cd->lower_bound = 0;
    for (uint32_t s = 0; s < c->nk; s++) {
        run += diff[s];
        cd->live[s] = (uint64_t)run;
        if (cd->live[s] > cd->lower_bound) cd->lower_bound = cd->live[s];
    }
    /* device bytes only: arguments and outputs in pinned_host memory are counted apart */
    uint64_t args = 0;
    cd->output_bytes = cd->alias_bytes = 0;
    cd->host_args = cd->host_outputs = cd->host_alias = 0;
    for (uint32_t p = 0; p < c->n_params; p++) {
        uint64_t size = plan_round(cd->buf[c->buffer_of[c->g->params[p]]].size, gr);
        bool host = plan_param_in_host(c, p);
        *(host ? &cd->host_args : &args) += size;
        uint8_t st = cd->donor_state[p];
        if (st == DONOR_INPLACE || st == DONOR_OUTPUT || st == DONOR_TEMPS)
            *(host ? &cd->host_alias : &cd->alias_bytes) += size;
    }
    for (uint32_t j = 0; j < c->g->n_outputs; j++) {
        const plan_buffer *x = &cd->buf[c->buffer_of[c->g->outputs[j]]];
        if (cd->output_donor[j] < 0)
            *(plan_in_host(c, x) ? &cd->host_outputs : &cd->output_bytes) +=
                plan_round(x->size, gr);
    }
    cd->peak = args + cd->output_bytes + plan_round(cd->arena, gr);
}

/* ---------------------------------------------------------- result ---- */

static void result_layout(const plan_ctx *c, mem_plan *p, plan_bump *b) {
    uint32_t no = c->g->n_outputs + 1, np = c->n_params + 1;
    p->order = plan_take(b, c->nk + 1, sizeof *p->order);
    p->step_of = plan_take(b, c->nk + 1, sizeof *p->step_of);
    p->wait_step = plan_take(b, c->nk + 1, sizeof *p->wait_step);
    p->buffers = plan_take(b, c->nb + 1, sizeof *p->buffers);
    p->buffer_of = plan_take(b, c->n_nodes, sizeof *p->buffer_of);
    p->scratch_of = plan_take(b, c->nk + 1, sizeof *p->scratch_of);
    p->alias_of = plan_take(b, c->n_nodes, sizeof *p->alias_of);
    p->output_home = plan_take(b, no, sizeof *p->output_home);
    p->output_donor = plan_take(b, no, sizeof *p->output_donor);
    p->donated = plan_take(b, np, 1);
    p->donation_used = plan_take(b, np, 1);
    p->live_bytes = plan_take(b, c->nk + 1, sizeof *p->live_bytes);
    p->buffer_class = plan_take(b, c->nb + 1, 1);
    p->saved = plan_take(b, c->n_nodes, 1);
    p->resident_last = plan_take(b, c->nb + 1, sizeof *p->resident_last);
    p->in_use = plan_take(b, c->nk + 1, sizeof *p->in_use);
}

static kiln_status fill_result(const plan_ctx *c, const plan_cand *cd, mem_plan *p) {
    plan_bump b = {NULL, 0};
    result_layout(c, p, &b);
    if (!(b.base = host_calloc(c->ctx, 1, b.used)))
        return ctx_oom(c->ctx, "kiln_compile: memory plan", b.used);
    p->block = b.base, p->block_size = b.used, b.used = 0;
    result_layout(c, p, &b);
    p->ctx = c->ctx, p->n_nodes = c->n_nodes, p->n_kernels = c->nk, p->n_buffers = c->nb;
    p->n_params = c->n_params, p->n_outputs = c->g->n_outputs, p->strategy = cd->strategy;
    memcpy(p->order, cd->order, c->nk * sizeof *p->order);
    memcpy(p->step_of, cd->step_of, c->nk * sizeof *p->step_of);
    memcpy(p->wait_step, cd->wait_step, c->nk * sizeof *p->wait_step);
    memcpy(p->buffers, cd->buf, c->nb * sizeof *p->buffers);
    memcpy(p->buffer_of, c->buffer_of, c->n_nodes * sizeof *p->buffer_of);
    memcpy(p->scratch_of, c->scratch_of, c->nk * sizeof *p->scratch_of);
    memcpy(p->alias_of, cd->alias_of, c->n_nodes * sizeof *p->alias_of);
    memcpy(p->output_donor, cd->output_donor, p->n_outputs * sizeof *p->output_donor);
    memcpy(p->live_bytes, cd->live, c->nk * sizeof *p->live_bytes);
    for (uint32_t j = 0; j < p->n_outputs; j++) {
        int32_t b0 = c->buffer_of[c->g->outputs[j]];
        /* the first listing of a computed value is that value (wherever it lives) */
        bool home =
            p->buffers[b0].kind == PLAN_K_OUTPUT && c->first_output[c->g->outputs[j]] == (int32_t)j;
        p->output_home[j] = home ? b0 : -1;
    }
    for (uint32_t i = 0; i < c->n_params; i++) {
        uint8_t st = cd->donor_state[i];
        p->donated[i] = st != DONOR_NONE;
        p->donation_used[i] = st == DONOR_INPLACE || st == DONOR_OUTPUT || st == DONOR_TEMPS;
    }
    uint64_t gr = c->o->granule ? c->o->granule : 1;
    p->arena = cd->arena, p->lower_bound = cd->lower_bound, p->inplace_bytes = cd->inplace_bytes;
    p->output_bytes = cd->output_bytes, p->alias_bytes = cd->alias_bytes, p->peak = cd->peak;
    p->temp_bytes = plan_round(cd->arena, gr);
    p->host_arena = cd->host_arena, p->host_bytes = plan_round(cd->host_arena, gr);
    for (uint32_t i = 0; i < c->nb; i++)
        if (p->buffers[i].place == PLAN_P_HOST)
            p->offload_bytes += p->buffers[i].size, p->n_offloaded++;
    p->argument_bytes = cd->peak - cd->output_bytes - p->temp_bytes;
    p->host_argument_bytes = cd->host_args, p->host_output_bytes = cd->host_outputs;
    p->host_alias_bytes = cd->host_alias;
    for (uint32_t i = 0; i < c->nb; i++)
        if (p->buffers[i].kind == PLAN_K_CONST) p->constant_bytes += p->buffers[i].size;
    plan_classify(c->g, c->fp, p);
    return KILN_STATUS_OK;
}

/* Is a better than b? Lower peak, then smaller arena, then lower bound. */
static bool better(const plan_cand *a, const plan_cand *b) {
    if (a->peak != b->peak) return a->peak < b->peak;
    if (a->arena != b->arena) return a->arena < b->arena;
    return a->lower_bound < b->lower_bound;
}

/* One schedule of `strategy`, fetches moved ahead by up to `window` steps (0: none; *moved
 * says whether any was), planned and packed into cd. */
static kiln_status plan_pass(const plan_ctx *c, int strategy, uint32_t window, plan_cand *cd,
                             bool *moved) {
    kiln_status s = plan_schedule(c, strategy, cd->order);
    if (s) return s;
    if (c->o->overlap_collectives) plan_overlap_order(c, cd->order);
    *moved = window && plan_prefetch_order(c, cd->order, window);
    liveness(c, cd);
    assign_inplace(c, cd);
    assign_donations(c, cd);
    if ((s = plan_pack(c, cd))) return s;
    figures(c, cd);
    return KILN_STATUS_OK;
}

/* A strategy's plan. Where copies overlap the kernels, its fetches from host memory run
 * ahead of their readers (plan_prefetch_order) only as far as that costs no device bytes:
 * a fetch moved ahead holds its result longer, and memory comes first (a budget fitted
 * without prefetching must still fit). So the plan without prefetches sets the peak, and
 * the widest window of PLAN_TRANSFER_WINDOW and 2 steps that keeps it is taken. */
static kiln_status plan_one(const plan_ctx *c, int strategy, plan_cand *cd) {
    cd->strategy = plan_strategy_names[strategy];
    bool moved = false;
    kiln_status s = plan_pass(c, strategy, 0, cd, &moved);
    if (s || !c->o->overlap_transfers || !plan_has_fetches(c)) return s;
    uint64_t base = cd->peak;
    for (uint32_t w = PLAN_TRANSFER_WINDOW; w >= 2; w /= 4) {
        if ((s = plan_pass(c, strategy, w, cd, &moved))) return s;
        if (!moved || cd->peak <= base) return KILN_STATUS_OK;
    }
    return plan_pass(c, strategy, 0, cd, &moved);
}

kiln_status plan_build(const kiln_graph *g, const fusion_plan *fp, const plan_options *o,
                       mem_plan *out) {
    static const plan_options defaults;
    memset(out, 0, sizeof *out);
    plan_ctx c;
    kiln_status s = ctx_init(&c, g, fp, o ? o : &defaults);
    plan_cand cur = {0}, best = {0};
    if (!s) s = cand_alloc(&c, &cur);
    if (!s) s = cand_alloc(&c, &best);
    for (int i = 0; !s && i < PLAN_S_COUNT; i++) {
        if ((s = plan_one(&c, i, &cur))) break;
        out->tries[out->n_tries++] = (plan_try){cur.strategy, cur.peak, cur.arena, cur.lower_bound};
        if (i == 0 || better(&cur, &best)) {
            plan_cand t = best;
            best = cur, cur = t;
        }
    }
    if (!s) s = fill_result(&c, &best, out);
    cand_free(&c, &cur);
    cand_free(&c, &best);
    if (c.block) ctx_free(&c);
#ifndef NDEBUG
    if (!s) s = plan_check(g, fp, out); /* exhaustive: every pair of buffers */
#endif
    if (s) plan_free(out);
    return s;
}

void plan_free(mem_plan *p) {
    if (p->block) host_free(p->ctx, p->block, p->block_size);
    memset(p, 0, sizeof *p);
}

kiln_status plan_apply_aliases(const mem_plan *p, fusion_plan *fp) {
    kiln_context *ctx = fp->ctx;
    uint32_t **made = host_calloc(ctx, fp->n_kernels + 1, sizeof *made);
    if (!made) return ctx_oom(ctx, "kiln_compile: in-place kernels", fp->n_kernels);
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t k = 0; k < fp->n_kernels && !s; k++) { /* all or nothing */
        const fkernel *kn = &fp->kernels[k];
        bool any = false;
        for (uint32_t r = 0; r < kn->n_roots; r++) any |= p->alias_of[kn->roots[r]] != 0;
        if (!any) continue;
        if (!(made[k] = host_alloc(ctx, kn->n_roots * sizeof *made[k])))
            s = ctx_oom(ctx, "kiln_compile: in-place kernels", kn->n_roots * sizeof *made[k]);
        for (uint32_t r = 0; !s && r < kn->n_roots; r++) made[k][r] = p->alias_of[kn->roots[r]];
    }
    for (uint32_t k = 0; k < fp->n_kernels; k++) {
        fkernel *kn = &fp->kernels[k];
        if (s) {
            host_free(ctx, made[k], kn->n_roots * sizeof *made[k]);
            continue;
        }
        host_free(ctx, kn->alias, kn->n_roots * sizeof *kn->alias);
        kn->alias = made[k];
    }
    host_free(ctx, made, (fp->n_kernels + 1) * sizeof *made);
    return s;
}

const char *plan_buffer_op(const kiln_graph *g, const plan_buffer *b) {
    if (b->kind != PLAN_K_SCRATCH) return ir_ops[g->nodes[b->node].op].name;
    /* a loop's scratch is where its body runs: the body's arena and the carries' spares */
    switch (g->nodes[b->node].op) {
    case IR_WHILE: return "while body";
    case IR_SCAN: return "scan body";
    case IR_COND: return "cond branch";
    default: return "scratch";
    }
}
