/* check.c — plan_check: proves a memory plan sound, independently of how it was made.
 *
 * The checks are the plan's whole contract with the runtime: the schedule is a
 * topological order of the kernels; every value a kernel reads is live at its step (so
 * nothing reuses its bytes before that read); every buffer lies inside its place and is
 * aligned; and no two buffers of the same place that are live at the same step share a
 * byte, except a result written in place over an input that dies at that very step
 * (same offset, same size, the input's last step is the result's first), where the
 * in-place analysis (inplace.c, run again here) allows it, one root per input; and a
 * collective waited for after its step keeps its operand and result live until then and
 * has no reader before it. All pairs
 * are compared — O(buffers^2) per place — which is fine for a check that runs in debug
 * builds and tests; the planner itself never relies on it. */
#include "plan.h"

#include <inttypes.h>
#include <stdlib.h>

static kiln_status fail(const kiln_graph *g, const char *fmt, ...) KN_PRINTF(2, 3);
static kiln_status fail(const kiln_graph *g, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ctx_error(g->ctx, KILN_STATUS_INTERNAL, "memory plan of '%s' is wrong: %s", g->name,
                     msg);
}

static kiln_status check_schedule(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p) {
    for (uint32_t s = 0; s < p->n_kernels; s++) {
        uint32_t k = p->order[s];
        if (k >= fp->n_kernels || p->step_of[k] != s)
            return fail(g, "step %u runs kernel %u, which is not a permutation", s, k);
        const fkernel *kn = &fp->kernels[k];
        for (uint32_t i = 0; i < kn->n_inputs; i++) {
            int32_t b = p->buffer_of[kn->inputs[i]];
            if (b < 0)
                return fail(g, "kernel %u reads %%%u, which has no buffer", k, kn->inputs[i]);
            const plan_buffer *x = &p->buffers[b];
            if (x->def >= (int32_t)s || x->last < (int32_t)s)
                return fail(g, "kernel %u at step %u reads %%%u, live only in [%d, %d]", k, s,
                            x->node, x->def, x->last);
        }
        for (uint32_t r = 0; r < kn->n_roots; r++) {
            int32_t b = p->buffer_of[kn->roots[r]];
            if (b < 0 || p->buffers[b].def != (int32_t)s)
                return fail(g, "kernel %u at step %u writes %%%u, defined elsewhere", k, s,
                            kn->roots[r]);
        }
        int32_t sb = p->scratch_of[k];
        if (sb >= 0 && (p->buffers[sb].def != (int32_t)s || p->buffers[sb].last != (int32_t)s))
            return fail(g, "kernel %u's scratch is not live exactly at its step %u", k, s);
    }
    return KILN_STATUS_OK;
}

/* A collective or a copy between memory kinds waited for after its step (an overlapping
 * one: run.c starts it at its step and waits before the kernel at its wait step) is read
 * and written by the transport or the copy engine until then: its wait comes before every
 * reader of its result, and its operand and result are live through the wait step, so no
 * buffer defined in between shares their bytes. */
static kiln_status check_waits(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p) {
    for (uint32_t k = 0; k < p->n_kernels; k++) {
        const fkernel *kn = &fp->kernels[k];
        int32_t s = (int32_t)p->step_of[k], w = p->wait_step[k];
        if (w == s) continue;
        if ((kn->kind != FK_COLLECTIVE && kn->kind != FK_TRANSFER) || w < s ||
            w >= (int32_t)p->n_kernels)
            return fail(g, "kernel %u at step %d is waited for at step %d", k, s, w);
        for (uint32_t r = 0; r < fp->n_kernels; r++)
            for (uint32_t i = 0; i < fp->kernels[r].n_inputs; i++)
                if (fp->kernels[r].inputs[i] == kn->roots[0] && (int32_t)p->step_of[r] < w)
                    return fail(g,
                                "kernel %u at step %u reads %%%u of an overlapped %s before its "
                                "wait at step %d",
                                r, p->step_of[r], kn->roots[0],
                                kn->kind == FK_TRANSFER ? "copy" : "collective", w);
        for (uint32_t i = 0; i < kn->n_inputs + kn->n_roots; i++) {
            uint32_t id = i < kn->n_inputs ? kn->inputs[i] : kn->roots[i - kn->n_inputs];
            const plan_buffer *x = &p->buffers[p->buffer_of[id]];
            if (x->last < w)
                return fail(g,
                            "%%%u, which %s kernel %u uses until its wait at step %d, is live "
                            "only in [%d, %d]",
                            id, kn->kind == FK_TRANSFER ? "copy" : "collective", k, w, x->def,
                            x->last);
        }
    }
    return KILN_STATUS_OK;
}

/* Which place a buffer's bytes belong to: arena 0, argument q 1+q, output j 1+np+j, the
 * host arena 1+np+no. */
static int64_t bin_of(const mem_plan *p, const plan_buffer *b) {
    switch (b->place) {
    case PLAN_P_ARENA: return 0;
    case PLAN_P_HOST: return 1 + (int64_t)p->n_params + p->n_outputs;
    case PLAN_P_ARG:
    case PLAN_P_DONATED: return 1 + (int64_t)b->place_index;
    case PLAN_P_OUTPUT: return 1 + (int64_t)p->n_params + b->place_index;
    default: return -1;
    }
}

static kiln_status check_place(const kiln_graph *g, const mem_plan *p, const plan_buffer *b) {
    uint64_t room = UINT64_MAX;
    bool ok;
    switch (b->place) {
    case PLAN_P_ARG:
        ok = b->kind == PLAN_K_PARAM && b->place_index < p->n_params &&
             g->params[b->place_index] == b->node && b->offset == 0;
        break;
    case PLAN_P_CONST: ok = b->kind == PLAN_K_CONST; break;
    case PLAN_P_OUTPUT:
        ok = b->kind == PLAN_K_OUTPUT && b->place_index < p->n_outputs &&
             g->outputs[b->place_index] == b->node && b->offset == 0;
        break;
    case PLAN_P_ARENA:
        ok = b->kind == PLAN_K_TEMP || b->kind == PLAN_K_SCRATCH;
        room = p->arena;
        break;
    case PLAN_P_HOST:
        ok = b->kind == PLAN_K_TEMP && ir_in_host(g, b->node);
        room = p->host_arena;
        break;
    case PLAN_P_DONATED: /* in a donated argument of its own memory kind */
        ok = b->kind != PLAN_K_PARAM && b->kind != PLAN_K_CONST && b->place_index < p->n_params &&
             p->donated[b->place_index] &&
             plan_buffer_in_host(g, b) == ir_in_host(g, g->params[b->place_index]);
        if (ok) room = p->buffers[p->buffer_of[g->params[b->place_index]]].size;
        break;
    default: ok = false;
    }
    if (!ok)
        return fail(g, "%%%u (kind %d) cannot live in place %d/%u", b->node, b->kind, b->place,
                    b->place_index);
    if (room != UINT64_MAX &&
        (b->offset % PLAN_ALIGN || b->offset > room || b->size > room - b->offset))
        return fail(g,
                    "%%%u at offset %" PRIu64 " (%" PRIu64
                    " bytes) is misaligned or outside its place of %" PRIu64 " bytes",
                    b->node, b->offset, b->size, room);
    return KILN_STATUS_OK;
}

/* b is written in place over a at the one step both are live. */
static bool in_place_pair(const mem_plan *p, const plan_buffer *a, const plan_buffer *b) {
    return b->shares >= 0 && &p->buffers[b->shares] == a && a->last == b->def &&
           a->offset == b->offset && a->size == b->size;
}

static kiln_status check_pair(const kiln_graph *g, const mem_plan *p, const plan_buffer *a,
                              const plan_buffer *b) {
    if (!a->size || !b->size || a->def > b->last || b->def > a->last) return KILN_STATUS_OK;
    if (a->offset >= b->offset + b->size || b->offset >= a->offset + a->size) return KILN_STATUS_OK;
    if (in_place_pair(p, a, b) || in_place_pair(p, b, a)) return KILN_STATUS_OK;
    return fail(g,
                "%%%u (%s, [%d, %d], bytes %" PRIu64 "+%" PRIu64
                ") and %%%u (%s, [%d, %d], bytes %" PRIu64 "+%" PRIu64 ") overlap in place %d/%u",
                a->node, plan_buffer_op(g, a), a->def, a->last, a->offset, a->size, b->node,
                plan_buffer_op(g, b), b->def, b->last, b->offset, b->size, b->place,
                b->place_index);
}

static int cmp_bin(const void *x, const void *y) {
    const int64_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

/* Every pair of buffers in the same place. */
static kiln_status check_overlaps(const kiln_graph *g, const mem_plan *p) {
    size_t bytes = (size_t)(p->n_buffers + 1) * 2 * sizeof(int64_t);
    int64_t *keys = host_alloc(g->ctx, bytes);
    if (!keys) return ctx_oom(g->ctx, "plan_check", bytes);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        int64_t bin = bin_of(p, &p->buffers[i]);
        if (bin >= 0) keys[2 * n] = bin, keys[2 * n + 1] = i, n++;
    }
    qsort(keys, n, 2 * sizeof *keys, cmp_bin);
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t i = 0; i < n && !s; i++)
        for (uint32_t j = i + 1; j < n && keys[2 * j] == keys[2 * i] && !s; j++)
            s = check_pair(g, p, &p->buffers[keys[2 * i + 1]], &p->buffers[keys[2 * j + 1]]);
    host_free(g->ctx, keys, bytes);
    return s;
}

/* Root r of kernel k agrees with its buffer's sharing, takes an input no other root of k
 * takes, and that input may legally be overwritten by it (legal: plan_inplace_legal's). */
static kiln_status check_root_alias(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p,
                                    const uint8_t *legal, uint32_t k, uint32_t r) {
    const fkernel *kn = &fp->kernels[k];
    const plan_buffer *b = &p->buffers[p->buffer_of[kn->roots[r]]];
    uint32_t a = p->alias_of[kn->roots[r]];
    bool shares = b->shares >= 0;
    if (shares != (a != 0) ||
        (a && (a > kn->n_inputs || kn->kind == FK_DOT || kn->kind == FK_COLLECTIVE ||
               b->shares != p->buffer_of[kn->inputs[a - 1]])))
        return fail(g, "kernel %u's in-place input (%u) and %%%u's sharing disagree", k, a,
                    kn->roots[r]);
    if (!a) return KILN_STATUS_OK;
    if (!legal[a - 1])
        return fail(g, "kernel %u writes %%%u over %%%u, which it reads at other elements", k,
                    kn->roots[r], kn->inputs[a - 1]);
    for (uint32_t o = 0; o < r; o++)
        if (p->alias_of[kn->roots[o]] == a)
            return fail(g, "kernel %u writes both %%%u and %%%u over %%%u", k, kn->roots[o],
                        kn->roots[r], kn->inputs[a - 1]);
    if (kn->n_roots > 1 && g->nodes[kn->roots[r]].dtype != g->nodes[kn->inputs[a - 1]].dtype)
        return fail(g, "kernel %u writes %%%u over %%%u, of another dtype, among several roots", k,
                    kn->roots[r], kn->inputs[a - 1]);
    return KILN_STATUS_OK;
}

/* In-place results against the legality analysis, redone here from the graph alone. */
static kiln_status check_aliases(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p) {
    size_t n_in = 1;
    for (uint32_t k = 0; k < fp->n_kernels; k++) n_in += fp->kernels[k].n_inputs;
    uint8_t *legal = host_alloc(g->ctx, n_in);
    if (!legal) return ctx_oom(g->ctx, "plan_check", n_in);
    kiln_status s = plan_inplace_legal(g, fp, legal);
    for (uint32_t k = 0, at = 0; !s && k < p->n_kernels; at += fp->kernels[k++].n_inputs)
        for (uint32_t r = 0; !s && r < fp->kernels[k].n_roots; r++)
            s = check_root_alias(g, fp, p, legal + at, k, r);
    host_free(g->ctx, legal, n_in);
    if (s) return s;
    for (uint32_t j = 0; j < p->n_outputs; j++) {
        int32_t d = p->output_donor[j];
        if (d < 0) continue;
        const plan_buffer *o = &p->buffers[p->buffer_of[g->outputs[j]]];
        bool ok = (uint32_t)d < p->n_params && p->donated[d] &&
                  ((o->place == PLAN_P_DONATED && o->place_index == (uint32_t)d) ||
                   (o->kind == PLAN_K_PARAM && o->place_index == (uint32_t)d));
        if (!ok)
            return fail(g, "output %u is said to take argument %d's buffer, but lives elsewhere", j,
                        d);
    }
    return KILN_STATUS_OK;
}

kiln_status plan_check(const kiln_graph *g, const fusion_plan *fp, const mem_plan *p) {
    if (p->n_kernels != fp->n_kernels)
        return fail(g, "the plan has %u kernels, fusion %u", p->n_kernels, fp->n_kernels);
    kiln_status s = check_schedule(g, fp, p);
    if (!s) s = check_waits(g, fp, p);
    for (uint32_t i = 0; !s && i < p->n_buffers; i++) s = check_place(g, p, &p->buffers[i]);
    if (!s) s = check_aliases(g, fp, p);
    if (!s) s = check_overlaps(g, p);
    return s;
}
