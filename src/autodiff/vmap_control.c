/* vmap_control.c — the batching rules of scan, cond and while (autodiff.h; jax.vmap's rules
 * for lax.scan, lax.cond and lax.while_loop): the loop runs once, over batched bodies, rather
 * than once per example.
 *
 * A body is batched into a new sub-graph by the same walk kiln_vmap runs on fn
 * (ad_vmap_subgraph): its parameters get the batch axis first where their value is batched.
 * A carry is batched when its initial value is or when the body makes it so (a fixpoint over
 * the carries: a carry that starts unbatched and picks up a batched value becomes batched
 * from the start, as in JAX). Invariants: the new node has the old one's layout and
 * attributes (the scan's length, reverse and checkpoint; the cond's operand count), only its
 * region and input types change; every result comes out batched at axis 0, as a rule's must.
 *
 * Where the batch cannot stay outside the control node, JAX's conversions are used: a cond
 * whose branch index is batched runs every branch (batched) and selects per example; a while
 * loop whose predicate is batched runs while any example's predicate holds, and an example
 * whose predicate is false keeps its carries (a select per carry). */
#include "autodiff.h"

#include <stdio.h>
#include <string.h>

/* A new body for w->g, named as old, with one parameter per type in ps (old's parameters,
 * the batched ones with the batch axis first); its parameter values in params. */
static kiln_graph *new_body(ad_vmap *w, const kiln_graph *old, const uint8_t *pb,
                            kiln_value *params) {
    kiln_graph *nb = NULL;
    if (kiln_graph_create(w->g->ctx, old->name, &nb)) {
        trace_fail(w->g, KILN_STATUS_HOST_OOM, w->op, "host allocation for a body failed");
        return NULL;
    }
    nb->cur_file = w->g->cur_file, nb->cur_line = w->g->cur_line;
    for (uint32_t p = 0; p < old->n_params; p++) {
        const ir_node *q = &old->nodes[old->params[p]];
        ir_shape sh = q->shape;
        if (pb[p]) {
            if (sh.rank + 1 > KILN_MAX_RANK) {
                trace_fail(w->g, KILN_STATUS_SHAPE, w->op,
                           "a batch axis does not fit on parameter %u of '%s': rank %d is the most",
                           p, old->name, KILN_MAX_RANK);
                kiln_graph_destroy(nb);
                return NULL;
            }
            for (int i = sh.rank; i > 0; i--) sh.dims[i] = sh.dims[i - 1];
            sh.dims[0] = w->size, sh.rank++;
        }
        params[p] = trace_parameter(nb, w->op, q->name ? q->name : "p", q->dtype, sh.rank, sh.dims);
    }
    return nb;
}

/* Finishes body nb with outs (each made batched where want[j] says and it is not); NULL
 * after an error, which moves to w->g. */
static kiln_graph *finish_body(ad_vmap *w, kiln_graph *nb, uint32_t n, kiln_value *outs,
                               const uint8_t *is, const uint8_t *want) {
    for (uint32_t j = 0; j < n && !nb->status; j++)
        if (want[j] && !is[j]) outs[j] = ad_vmap_broadcast(nb, w->op, w->size, outs[j]);
    if (!nb->status) kiln_graph_finish(nb, (int)n, outs);
    if (nb->status) {
        trace_fail(w->g, nb->status, w->op, "batching '%s': %s", nb->name,
                   nb->error ? nb->error : "");
        kiln_graph_destroy(nb);
        return NULL;
    }
    return nb;
}

/* Emits control node n with the new region of graphs[0..n_graphs) (taken over) and inputs
 * in; out receives its results (as they come: batched per the new bodies). */
static bool emit_node(ad_vmap *w, const ir_node *n, kiln_graph **graphs, uint32_t n_graphs,
                      const kiln_value *in, uint32_t n_in, kiln_value *out) {
    uint32_t *ids = host_alloc(w->g->ctx, (n_in ? n_in : 1) * sizeof *ids);
    ir_region *r = ids ? ir_region_new(w->g->ctx, n_graphs, graphs) : NULL;
    if (!r) {
        if (ids)
            host_free(w->g->ctx, ids, (n_in ? n_in : 1) * sizeof *ids);
        else
            for (uint32_t k = 0; k < n_graphs; k++) kiln_graph_destroy(graphs[k]);
        trace_fail(w->g, KILN_STATUS_HOST_OOM, w->op, "host allocation for the node failed");
        return false;
    }
    bool ok = true;
    for (uint32_t k = 0; k < n_in; k++) ok &= (ids[k] = in[k].id) != 0;
    ir_node t = *n;
    t.name = NULL, t.data = NULL, t.in_heap = NULL, t.backward = false, t.region = r;
    kiln_value v = ok ? trace_emit(w->g, w->op, &t, ids, n_in) : KN_NONE;
    host_free(w->g->ctx, ids, (n_in ? n_in : 1) * sizeof *ids);
    if (!v.id) {
        ir_region_unref(w->g->ctx, r);
        return false;
    }
    uint32_t count = ir_control_n_results(&w->g->nodes[v.id]);
    out[0] = v;
    for (uint32_t i = 1; i < count; i++) {
        ir_node rt = {.op = IR_RESULT};
        rt.a.result_index = (int)i;
        out[i] = trace_emit(w->g, w->op, &rt, &v.id, 1);
    }
    return !w->g->status;
}

/* Host scratch of a rule: flags and values per parameter and output. */
typedef struct scratch {
    kiln_context *ctx;
    size_t bytes;
    void *p;
} scratch;

static void *scratch_get(ad_vmap *w, scratch *s, size_t bytes) {
    s->ctx = w->g->ctx, s->bytes = bytes ? bytes : 1;
    s->p = host_calloc(s->ctx, 1, s->bytes);
    if (!s->p) trace_fail(w->g, KILN_STATUS_HOST_OOM, w->op, "host allocation failed");
    return s->p;
}

static void scratch_free(scratch *s) {
    if (s->p) host_free(s->ctx, s->p, s->bytes);
    s->p = NULL;
}

/* Sets pb[0..n_carry) for the carries the body makes batched, until none changes. */
static void carry_fixpoint(ad_vmap *w, const kiln_graph *body, uint8_t *pb, int n_carry) {
    scratch fs, os;
    uint8_t *flags = scratch_get(w, &fs, body->n_nodes);
    uint8_t *ob = scratch_get(w, &os, body->n_outputs);
    for (bool changed = flags && ob; changed;) {
        changed = false;
        ad_vmap_deps(body, pb, ob, flags);
        for (int i = 0; i < n_carry; i++)
            if (ob[i] && !pb[i]) pb[i] = 1, changed = true;
    }
    scratch_free(&fs), scratch_free(&os);
}

/* The value of input k of n for a new node: batched at axis 0 where want says (broadcast
 * when it is not yet), else as it is. */
static kiln_value input_as(ad_vmap *w, const ir_node *n, uint32_t k, bool want) {
    uint32_t id = ir_in(n)[k];
    if (want && !w->batched[id]) return ad_vmap_broadcast(w->g, w->op, w->size, w->map[id]);
    return w->map[id];
}

/* ---------------------------------------------------------------- scan ---- */

/* The body batched where its carries, slices or captures are; the batched xs scanned over
 * their second axis (moved to the front: [L, B, ...]), the batched ys likewise stacked as
 * [L, B, ...] and moved back. */
void ad_vmap_scan(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const kiln_graph *body = n->region->graphs[0];
    int nc = n->a.ctl.n_carry, nx = n->a.ctl.n_xs;
    uint32_t np = body->n_params, no = body->n_outputs;
    scratch s1, s2, s3, s4;
    uint8_t *pb = scratch_get(w, &s1, np + 2 * no);
    kiln_value *params = scratch_get(w, &s2, np * sizeof *params);
    kiln_value *outs = scratch_get(w, &s3, no * sizeof *outs);
    kiln_value *ins = scratch_get(w, &s4, n->n_in * sizeof *ins);
    if (!pb || !params || !outs || !ins) goto done;
    uint8_t *ob = pb + np, *want = ob + no;
    for (uint32_t p = 0; p < np; p++) pb[p] = w->batched[ir_in(n)[p]];
    carry_fixpoint(w, body, pb, nc);
    kiln_graph *nb = new_body(w, body, pb, params);
    if (!nb || ad_vmap_subgraph(nb, body, w->size, params, pb, outs, ob)) {
        if (nb) trace_fail(w->g, nb->status, w->op, "batching '%s': %s", nb->name, nb->error);
        kiln_graph_destroy(nb);
        goto done;
    }
    for (uint32_t j = 0; j < no; j++) want[j] = j < (uint32_t)nc ? pb[j] : ob[j];
    if (!(nb = finish_body(w, nb, no, outs, ob, want))) goto done;
    for (uint32_t k = 0; k < n->n_in; k++) {
        ins[k] = input_as(w, n, k, pb[k]);
        if (k >= (uint32_t)nc && k < (uint32_t)(nc + nx) && pb[k])
            ins[k] = ad_vmap_moveaxis(w, ins[k], 0, 1);
    }
    if (!emit_node(w, n, &nb, 1, ins, n->n_in, out)) goto done;
    for (uint32_t j = 0; j < no && !w->g->status; j++) {
        if (!want[j])
            out[j] = ad_vmap_broadcast(w->g, w->op, w->size, out[j]);
        else if (j >= (uint32_t)nc)
            out[j] = ad_vmap_moveaxis(w, out[j], 1, 0);
    }
done:
    scratch_free(&s1), scratch_free(&s2), scratch_free(&s3), scratch_free(&s4);
}

/* ---------------------------------------------------------------- cond ---- */

/* Every branch batched into g itself (each reads the operands and its captures), then the
 * results picked per example: branch k where the index is k, clamped (lax.switch's rule),
 * i.e. the first k with index <= k, the last branch past them all. */
static void cond_select(ad_vmap *w, const ir_node *n, kiln_value *out) {
    const ir_region *r = n->region;
    int nops = n->a.ctl.n_carry;
    uint32_t no = r->graphs[0]->n_outputs;
    kiln_value idx = w->map[ir_in(n)[0]]; /* [B] i32 */
    for (uint32_t k = r->n_graphs; k-- > 0 && !w->g->status;) {
        const kiln_graph *b = r->graphs[k];
        scratch s1, s2, s3;
        uint8_t *pb = scratch_get(w, &s1, b->n_params + no);
        kiln_value *vals = scratch_get(w, &s2, b->n_params * sizeof *vals);
        kiln_value *res = scratch_get(w, &s3, no * sizeof *res);
        if (pb && vals && res) {
            uint32_t base = ir_control_capture_base(n, k);
            for (uint32_t p = 0; p < b->n_params; p++) {
                uint32_t in = ir_in(n)[p < (uint32_t)nops ? 1 + p : base + p - nops];
                vals[p] = w->map[in], pb[p] = w->batched[in];
            }
            ad_vmap_subgraph(w->g, b, w->size, vals, pb, res, pb + b->n_params);
            for (uint32_t j = 0; j < no && !w->g->status; j++) {
                kiln_value v =
                    pb[b->n_params + j] ? res[j] : ad_vmap_broadcast(w->g, w->op, w->size, res[j]);
                if (k + 1 == r->n_graphs) {
                    out[j] = v;
                    continue;
                }
                kiln_graph *g = w->g;
                /* a copy: tracing the comparison appends nodes, which may move g->nodes */
                ir_shape vs = g->nodes[v.id].shape;
                int bd[1] = {0};
                kiln_value pick =
                    kiln_compare(g, idx, trace_scalar(g, w->op, KILN_DTYPE_I32, k), KILN_CMP_LE);
                pick = kiln_broadcast_in_dim(g, pick, vs.rank, vs.dims, bd);
                out[j] = kiln_select(g, pick, v, out[j]);
            }
        }
        scratch_free(&s1), scratch_free(&s2), scratch_free(&s3);
    }
}

/* An unbatched index: one cond over batched branches (an output batched in any branch is
 * batched in all). A batched index: cond_select. */
void ad_vmap_cond(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    if (w->batched[ir_in(n)[0]]) {
        cond_select(w, n, out);
        return;
    }
    const ir_region *r = n->region;
    int nops = n->a.ctl.n_carry;
    uint32_t no = r->graphs[0]->n_outputs, ng = r->n_graphs;
    kiln_graph *graphs[KILN_MAX_OUTPUTS] = {0};
    scratch s1, s2, s3, s4;
    uint8_t *want = scratch_get(w, &s1, no + n->n_in);
    kiln_value *outs = scratch_get(w, &s2, ng * no * sizeof *outs);
    uint8_t *obs = scratch_get(w, &s3, ng * no);
    kiln_value *ins = scratch_get(w, &s4, n->n_in * sizeof *ins);
    if (!want || !outs || !obs || !ins) goto done;
    if (ng > KILN_MAX_OUTPUTS) {
        trace_fail(w->g, KILN_STATUS_INVALID_ARGUMENT, w->op, "%u branches: %d at most", ng,
                   KILN_MAX_OUTPUTS);
        goto done;
    }
    uint8_t *inb = want + no;
    for (uint32_t k = 0; k < n->n_in; k++) inb[k] = w->batched[ir_in(n)[k]];
    for (uint32_t k = 0; k < ng && !w->g->status; k++) {
        const kiln_graph *b = r->graphs[k];
        uint32_t base = ir_control_capture_base(n, k);
        scratch sp, sv;
        uint8_t *pb = scratch_get(w, &sp, b->n_params);
        kiln_value *params = scratch_get(w, &sv, b->n_params * sizeof *params);
        if (pb && params) {
            for (uint32_t p = 0; p < b->n_params; p++)
                pb[p] = inb[p < (uint32_t)nops ? 1 + p : base + p - nops];
            graphs[k] = new_body(w, b, pb, params);
            if (graphs[k] &&
                ad_vmap_subgraph(graphs[k], b, w->size, params, pb, outs + k * no, obs + k * no))
                trace_fail(w->g, graphs[k]->status, w->op, "batching '%s': %s", b->name,
                           graphs[k]->error);
        }
        scratch_free(&sp), scratch_free(&sv);
    }
    for (uint32_t j = 0; j < no; j++)
        for (uint32_t k = 0; k < ng; k++) want[j] |= obs[k * no + j];
    for (uint32_t k = 0; k < ng && !w->g->status; k++)
        if (!(graphs[k] = finish_body(w, graphs[k], no, outs + k * no, obs + k * no, want)))
            goto done;
    if (w->g->status) goto done;
    for (uint32_t k = 0; k < n->n_in; k++) ins[k] = w->map[ir_in(n)[k]];
    if (!emit_node(w, n, graphs, ng, ins, n->n_in, out)) {
        memset(graphs, 0, sizeof graphs); /* the region took them over */
        goto done;
    }
    memset(graphs, 0, sizeof graphs);
    for (uint32_t j = 0; j < no && !w->g->status; j++)
        if (!want[j]) out[j] = ad_vmap_broadcast(w->g, w->op, w->size, out[j]);
done:
    for (uint32_t k = 0; k < ng && k < KILN_MAX_OUTPUTS; k++) kiln_graph_destroy(graphs[k]);
    scratch_free(&s1), scratch_free(&s2), scratch_free(&s3), scratch_free(&s4);
}

/* --------------------------------------------------------------- while ---- */

/* The new body of a while loop whose predicate is batched: every carry batched; the body's
 * update kept only where the example's own predicate still holds. Its parameters: the
 * carries, the cond's captures, then the body's. */
static kiln_graph *masked_body(ad_vmap *w, const ir_node *n, const uint8_t *cb,
                               const uint8_t *kb_cond, const uint8_t *kb_body) {
    const kiln_graph *cg = n->region->graphs[0], *bg = n->region->graphs[1];
    int nc = n->a.ctl.n_carry;
    uint32_t ncc = cg->n_params - (uint32_t)nc, nbc = bg->n_params - (uint32_t)nc;
    uint32_t np = (uint32_t)nc + ncc + nbc;
    scratch s1, s2, s3;
    uint8_t *pb = scratch_get(w, &s1, np + bg->n_params + cg->n_params + 2 * (uint32_t)nc + 1);
    kiln_value *params = scratch_get(w, &s2, np * sizeof *params);
    kiln_value *vals = scratch_get(w, &s3, (bg->n_params + cg->n_params + nc + 1) * sizeof *vals);
    kiln_graph *nb = NULL;
    if (!pb || !params || !vals) goto done;
    /* a stand-in graph for new_body: the parameters' types are cg's and bg's */
    for (int i = 0; i < nc; i++) pb[i] = cb[i];
    for (uint32_t c = 0; c < ncc; c++) pb[nc + c] = kb_cond[c];
    for (uint32_t c = 0; c < nbc; c++) pb[nc + ncc + c] = kb_body[c];
    if (kiln_graph_create(w->g->ctx, bg->name, &nb)) {
        trace_fail(w->g, KILN_STATUS_HOST_OOM, w->op, "host allocation for a body failed");
        goto done;
    }
    nb->cur_file = w->g->cur_file, nb->cur_line = w->g->cur_line;
    for (uint32_t p = 0; p < np; p++) {
        const kiln_graph *from = p < (uint32_t)nc + ncc ? cg : bg;
        uint32_t q = p < (uint32_t)nc ? p : p < (uint32_t)nc + ncc ? p : p - ncc;
        const ir_node *o = &from->nodes[from->params[q]];
        ir_shape sh = o->shape;
        if (pb[p]) {
            for (int i = sh.rank; i > 0; i--) sh.dims[i] = sh.dims[i - 1];
            sh.dims[0] = w->size, sh.rank++;
        }
        params[p] = trace_parameter(nb, w->op, o->name ? o->name : "p", o->dtype, sh.rank, sh.dims);
    }
    uint8_t *vb = pb + np, *ob = vb + bg->n_params + cg->n_params;
    kiln_value *res = vals + bg->n_params + cg->n_params;
    /* the predicate per example, [B] */
    for (uint32_t p = 0; p < cg->n_params; p++) vals[p] = params[p], vb[p] = pb[p];
    kiln_value pred;
    uint8_t pred_b = 0;
    if (ad_vmap_subgraph(nb, cg, w->size, vals, vb, &pred, &pred_b)) goto fail;
    /* the update */
    for (int i = 0; i < nc; i++) vals[i] = params[i], vb[i] = pb[i];
    for (uint32_t c = 0; c < nbc; c++)
        vals[nc + c] = params[nc + ncc + c], vb[nc + c] = pb[nc + ncc + c];
    if (ad_vmap_subgraph(nb, bg, w->size, vals, vb, res, ob)) goto fail;
    for (int i = 0; i < nc && !nb->status; i++) {
        kiln_value v = ob[i] ? res[i] : ad_vmap_broadcast(nb, w->op, w->size, res[i]);
        ir_shape vs = nb->nodes[v.id].shape; /* a copy: the broadcast appends to nb */
        int bd[1] = {0};
        kiln_value keep = kiln_broadcast_in_dim(nb, pred, vs.rank, vs.dims, bd);
        res[i] = kiln_select(nb, keep, v, params[i]);
    }
    if (!nb->status) kiln_graph_finish(nb, nc, res);
fail:
    if (nb && nb->status) {
        trace_fail(w->g, nb->status, w->op, "batching '%s': %s", bg->name,
                   nb->error ? nb->error : "");
        kiln_graph_destroy(nb);
        nb = NULL;
    }
done:
    scratch_free(&s1), scratch_free(&s2), scratch_free(&s3);
    return nb;
}

/* The new condition of a while loop whose predicate is batched: any example's holds. */
static kiln_graph *any_cond(ad_vmap *w, const kiln_graph *cg, const uint8_t *pb) {
    scratch s1;
    kiln_value *params = scratch_get(w, &s1, cg->n_params * sizeof *params);
    kiln_graph *nb = params ? new_body(w, cg, pb, params) : NULL;
    kiln_value pred;
    uint8_t pred_b = 0;
    if (nb && !ad_vmap_subgraph(nb, cg, w->size, params, pb, &pred, &pred_b)) {
        kiln_value any =
            kiln_reduce_max(nb, kiln_convert(nb, pred, KILN_DTYPE_I32), 0, NULL, false);
        pred = kiln_compare(nb, any, trace_scalar(nb, w->op, KILN_DTYPE_I32, 0), KILN_CMP_GT);
        if (!nb->status) kiln_graph_finish(nb, 1, &pred);
    }
    if (nb && nb->status) {
        trace_fail(w->g, nb->status, w->op, "batching '%s': %s", cg->name,
                   nb->error ? nb->error : "");
        kiln_graph_destroy(nb);
        nb = NULL;
    }
    scratch_free(&s1);
    return nb;
}

/* Carries batched by the fixpoint over the body; an unbatched predicate keeps the loop as it
 * is over batched bodies; a batched one makes every carry batched, the condition "any", and
 * the body masked (masked_body). */
void ad_vmap_while(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const kiln_graph *cg = n->region->graphs[0], *bg = n->region->graphs[1];
    int nc = n->a.ctl.n_carry;
    uint32_t cb0 = ir_control_capture_base(n, 0), cb1 = ir_control_capture_base(n, 1);
    uint32_t ncc = cg->n_params - (uint32_t)nc, nbc = bg->n_params - (uint32_t)nc;
    scratch s1, s2, s3, s4;
    uint8_t *pbb = scratch_get(w, &s1, bg->n_params + cg->n_params + bg->n_outputs + 1);
    kiln_value *params = scratch_get(w, &s2, (bg->n_params + cg->n_params) * sizeof *params);
    kiln_value *outs = scratch_get(w, &s3, (bg->n_outputs + 1) * sizeof *outs);
    kiln_value *ins = scratch_get(w, &s4, (n->n_in + ncc) * sizeof *ins);
    kiln_graph *graphs[2] = {NULL, NULL};
    if (!pbb || !params || !outs || !ins) goto done;
    uint8_t *pbc = pbb + bg->n_params, *ob = pbc + cg->n_params;
    for (int i = 0; i < nc; i++) pbb[i] = w->batched[ir_in(n)[i]];
    for (uint32_t c = 0; c < nbc; c++) pbb[nc + c] = w->batched[ir_in(n)[cb1 + c]];
    carry_fixpoint(w, bg, pbb, nc);
    for (int i = 0; i < nc; i++) pbc[i] = pbb[i];
    for (uint32_t c = 0; c < ncc; c++) pbc[nc + c] = w->batched[ir_in(n)[cb0 + c]];
    uint8_t pred_b = 0;
    scratch fs;
    uint8_t *flags = scratch_get(w, &fs, cg->n_nodes);
    if (flags) ad_vmap_deps(cg, pbc, &pred_b, flags);
    scratch_free(&fs);
    if (w->g->status) goto done;
    if (pred_b) {
        for (int i = 0; i < nc; i++) pbb[i] = pbc[i] = 1;
        graphs[0] = any_cond(w, cg, pbc);
        if (graphs[0]) graphs[1] = masked_body(w, n, pbc, pbc + nc, pbb + nc);
        if (!graphs[1]) goto done;
        /* inputs: the carries, the cond's captures, then the body's: the cond's and its own */
        uint32_t m = 0;
        for (int i = 0; i < nc; i++) ins[m++] = input_as(w, n, (uint32_t)i, true);
        for (uint32_t c = 0; c < ncc; c++) ins[m++] = w->map[ir_in(n)[cb0 + c]];
        for (uint32_t c = 0; c < ncc; c++) ins[m++] = w->map[ir_in(n)[cb0 + c]];
        for (uint32_t c = 0; c < nbc; c++) ins[m++] = w->map[ir_in(n)[cb1 + c]];
        bool ok = emit_node(w, n, graphs, 2, ins, m, out);
        graphs[0] = graphs[1] = NULL;
        (void)ok;
        goto done;
    }
    graphs[0] = new_body(w, cg, pbc, params);
    kiln_value pred;
    if (!graphs[0] || ad_vmap_subgraph(graphs[0], cg, w->size, params, pbc, &pred, ob)) goto fail;
    uint8_t no_b = 0;
    if (!(graphs[0] = finish_body(w, graphs[0], 1, &pred, &no_b, &no_b))) goto done;
    graphs[1] = new_body(w, bg, pbb, params);
    if (!graphs[1] || ad_vmap_subgraph(graphs[1], bg, w->size, params, pbb, outs, ob)) goto fail;
    if (!(graphs[1] = finish_body(w, graphs[1], (uint32_t)nc, outs, ob, pbb))) goto done;
    for (uint32_t k = 0; k < n->n_in; k++) ins[k] = input_as(w, n, k, k < (uint32_t)nc && pbb[k]);
    emit_node(w, n, graphs, 2, ins, n->n_in, out);
    graphs[0] = graphs[1] = NULL;
    for (int i = 0; i < nc && !w->g->status; i++)
        if (!pbb[i]) out[i] = ad_vmap_broadcast(w->g, w->op, w->size, out[i]);
    goto done;
fail:
    for (int k = 0; k < 2; k++)
        if (graphs[k] && graphs[k]->status)
            trace_fail(w->g, graphs[k]->status, w->op, "batching a while loop: %s",
                       graphs[k]->error ? graphs[k]->error : "");
done:
    kiln_graph_destroy(graphs[0]), kiln_graph_destroy(graphs[1]);
    scratch_free(&s1), scratch_free(&s2), scratch_free(&s3), scratch_free(&s4);
}
