/* control_rules.c — the VJP rules of the control ops (ir.h, "ir_region"), as JAX
 * transposes lax.scan and lax.cond.
 *
 * SCAN: the backward pass is a scan run the other way whose body is the VJP of the forward
 * body. Its carries are the cotangents of the float carries and the cotangents of the
 * captures accumulated so far; it scans over the forward xs, the cotangents of the ys and
 * what the forward scan saved per iteration; it returns the cotangents of the initial
 * carries, of the captures, and (stacked) of the xs. The body's VJP needs the values of the
 * forward body at each iteration, and the scan's checkpoint flag (kiln_scan_options.
 * checkpoint_body) says where they come from:
 *  - residuals (the default, as lax.scan): the body and its VJP are traced together once,
 *    in a scratch graph; the values of the body part that the VJP part reads and that vary
 *    per iteration (the residuals) become extra per-iteration outputs of the forward scan,
 *    and the backward body is the VJP part copied with the saved slices in their place
 *    (trace_inline_part): O(length x residuals), nothing computed twice but what depends
 *    on the captures alone (loop-invariant, not worth a slot per iteration). Past
 *    KILN_MAX_OUTPUTS residuals the rule falls back to recomputing.
 *  - checkpoint: the forward scan saves the carries entering each iteration; the backward
 *    body recomputes the forward body from them (trace_inline) and differentiates that
 *    copy with kiln_vjp: O(length x carries), what jax.checkpoint on the body gives.
 *
 * What is saved exists nowhere in the forward graph, so the rule makes the forward scan
 * output it: it gives the node a new region whose body returns it as extra per-iteration
 * outputs, appended after the others, and appends a RESULT node for each. This is the one
 * exception to "rules only append" (autodiff.h), and it is what JAX's partial evaluation
 * of a scan does (the residuals become outputs of the forward scan). It is safe: result 0 and every
 * existing RESULT index keep their meaning and type (the node is typed again to check it); the new
 * region is the node's own and the old one loses the node's reference (a pass's copy of the graph
 * that shares it keeps it alive); the inputs do not change.
 *
 * COND: a backward cond on the same index whose branch k recomputes branch k on the
 * operands and its captures and returns their cotangents (zeros for the other branches'
 * captures). The index gets none.
 *
 * WHILE: not differentiable in reverse (as in JAX: its trip count is known only when it
 * runs, so there is nothing to scan back over); a live while loop is an error that names
 * it and the alternatives. Integer and bool results carry no cotangent. */
#include "autodiff.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>

static kiln_value val(const kiln_graph *g, uint32_t id) {
    return trace_value(g, id);
}

/* Zeros of a type: a broadcast scalar (never a constant of full size). */
static kiln_value zeros(kiln_graph *g, kiln_dtype t, const ir_shape *s) {
    kiln_value z = trace_scalar(g, AD_OP, t, 0);
    if (!z.id || s->rank == 0) return z;
    return kiln_broadcast_in_dim(g, z, s->rank, s->dims, NULL);
}

/* Zeros of x's type (x may be a node of g, whose array the builders move: read first). */
static kiln_value zeros_like(kiln_graph *g, const ir_node *x) {
    kiln_dtype t = x->dtype;
    ir_shape sh = x->shape;
    return zeros(g, t, &sh);
}

static bool too_many(kiln_graph *g, uint32_t id, const char *what, int count) {
    if (count <= KILN_MAX_OUTPUTS) return false;
    trace_fail_on(g, &id, 1, KILN_STATUS_UNIMPLEMENTED, AD_OP,
                  "the VJP of %s %%%u needs %d %s; a loop or branch takes at most %d",
                  ir_ops[g->nodes[id].op].name, id, count, what, KILN_MAX_OUTPUTS);
    return true;
}

/* ---------------------------------------------------------------- while ---- */

static void vjp_while(kiln_graph *g, uint32_t id, const ir_node *n) {
    char at[96] = "";
    if (n->file) snprintf(at, sizeof at, " (made at %s:%d)", kn_path_base(n->file), n->line);
    trace_fail_on(g, &id, 1, KILN_STATUS_UNIMPLEMENTED, AD_OP,
                  "while %%%u%s is not differentiable in reverse mode (as in JAX: its trip "
                  "count is known only when it runs); write the loop with kiln_scan or "
                  "kiln_fori_loop (a fixed trip count), or cut the gradient with "
                  "kiln_stop_gradient",
                  id, at);
}

/* ----------------------------------------------------------------- scan ---- */

/* What the backward scan's body needs (scan_bwd_body), gathered before it is traced. */
typedef struct scan_bwd {
    kiln_graph *g;          /* the graph of the forward scan */
    const kiln_graph *body; /* the forward body: outputs [0, n_out) are the original ones */
    uint32_t n_out;
    int nc, nx;
    uint32_t n_cap;
    const uint32_t *caps;           /* [n_cap]: the outer ids of the captures */
    int fc[KILN_MAX_OUTPUTS], nfc;  /* float carries */
    int xn[KILN_MAX_OUTPUTS], nxn;  /* float xs that want a cotangent */
    int kc[KILN_MAX_OUTPUTS], nkc;  /* float captures that want a cotangent */
    int yc[KILN_MAX_OUTPUTS], nyc;  /* ys with a cotangent */
    const kiln_value *cts;          /* the forward results' cotangents */
    const struct scan_split *split; /* when the residuals are saved (scan_res_body) */
} scan_bwd;

/* The backward body: parameters the carry cotangents [nfc], the capture cotangents so far
 * [nkc], then per iteration the carry-in [nc], the xs' slices [nx] and the ys' cotangents
 * [nyc]. Returns the carry-ins' cotangents, the captures' accumulated, and the xs'. */
static int scan_bwd_body(kiln_graph *s, int n_in, const kiln_value *in, void *user,
                         kiln_value *outs) {
    (void)n_in;
    const scan_bwd *b = user;
    const kiln_value *ctc = in, *acc = in + b->nfc, *cin = acc + b->nkc, *x = cin + b->nc;
    const kiln_value *cty = x + b->nx;
    uint32_t np = b->body->n_params, no = b->body->n_outputs;
    kiln_value *args = host_calloc(s->ctx, (size_t)np + no, sizeof *args), *fo = args + np;
    if (!args) return trace_fail(s, KILN_STATUS_HOST_OOM, AD_OP, "host allocation failed"), -1;
    for (int j = 0; j < b->nc; j++) args[j] = cin[j];
    for (int i = 0; i < b->nx; i++) args[b->nc + i] = x[i];
    for (uint32_t c = 0; c < b->n_cap; c++)
        args[b->nc + b->nx + (int)c] = kiln_capture(s, val(b->g, b->caps[c]));
    trace_inline(s, AD_OP, b->body, args, fo);
    kiln_value vo[2 * KILN_MAX_OUTPUTS], vc[2 * KILN_MAX_OUTPUTS], wrt[3 * KILN_MAX_OUTPUTS];
    kiln_value gr[3 * KILN_MAX_OUTPUTS];
    int nv = 0, nw = 0;
    for (int k = 0; k < b->nfc; k++) vo[nv] = fo[b->fc[k]], vc[nv++] = ctc[k];
    for (int k = 0; k < b->nyc; k++) vo[nv] = fo[b->nc + b->yc[k]], vc[nv++] = cty[k];
    for (int k = 0; k < b->nfc; k++) wrt[nw++] = cin[b->fc[k]];
    for (int k = 0; k < b->nxn; k++) wrt[nw++] = x[b->xn[k]];
    for (int k = 0; k < b->nkc; k++) wrt[nw++] = args[b->nc + b->nx + b->kc[k]];
    if (!s->status) kiln_vjp(s, nv, vo, vc, nw, wrt, gr);
    host_free(s->ctx, args, ((size_t)np + no) * sizeof *args);
    if (s->status) return -1;
    int r = 0;
    for (int k = 0; k < b->nfc; k++) outs[r++] = gr[k];
    for (int k = 0; k < b->nkc; k++) outs[r++] = kiln_add(s, acc[k], gr[b->nfc + b->nxn + k]);
    for (int k = 0; k < b->nxn; k++) outs[r++] = gr[b->nfc + k];
    return r;
}

/* A copy of body whose outputs are its own and then its first nc parameters (the carries
 * entering the iteration), finished; NULL after an error on g. */
static kiln_graph *body_saving_carries(kiln_graph *g, const kiln_graph *body, int nc) {
    kiln_graph *nb = NULL;
    if (kiln_graph_create(g->ctx, body->name, &nb)) {
        trace_fail(g, KILN_STATUS_HOST_OOM, AD_OP, "host allocation for a scan body failed");
        return NULL;
    }
    uint32_t np = body->n_params, no = body->n_outputs;
    kiln_value *v = host_calloc(g->ctx, (size_t)np + no + (size_t)nc, sizeof *v);
    if (v) {
        for (uint32_t p = 0; p < np; p++) {
            const ir_node *q = &body->nodes[body->params[p]];
            v[p] = kiln_parameter(nb, q->name, q->dtype, q->shape.rank, q->shape.dims);
        }
        trace_inline(nb, AD_OP, body, v, v + np);
        for (int j = 0; j < nc; j++) v[np + no + (uint32_t)j] = v[j];
        kiln_graph_finish(nb, (int)(no + (uint32_t)nc), v + np);
        host_free(g->ctx, v, ((size_t)np + no + (size_t)nc) * sizeof *v);
    }
    if (!v || nb->status) {
        trace_fail(g, v ? nb->status : KILN_STATUS_HOST_OOM, AD_OP,
                   "saving the carries of a scan: %s", nb->error ? nb->error : "host OOM");
        kiln_graph_destroy(nb);
        return NULL;
    }
    return nb;
}

/* Gives scan node id the body nb (its own outputs, then n_extra more, per iteration: the
 * file's comment says why this is safe), and puts the RESULT nodes of the extra ones,
 * stacked, in saved[0..n_extra). Takes nb. Returns the node's new region with a reference
 * for the caller, or NULL after an error on g (the node is then as it was). */
static ir_region *swap_body(kiln_graph *g, uint32_t id, kiln_graph *nb, int n_extra,
                            kiln_value *saved) {
    uint32_t n_out = g->nodes[id].region->graphs[0]->n_outputs;
    ir_region *r = nb ? ir_region_new(g->ctx, 1, &nb) : NULL;
    if (!r) {
        if (nb) trace_fail(g, KILN_STATUS_HOST_OOM, AD_OP, "host allocation for a region failed");
        return NULL;
    }
    ir_node *n = &g->nodes[id];
    ir_region *prev = n->region;
    n->region = r;
    ir_node copy = *n;
    char msg[512];
    kiln_status st = ir_infer(g, &copy, msg, sizeof msg);
    if (st || copy.dtype != n->dtype || !ir_shape_eq(&copy.shape, &n->shape)) {
        n->region = prev;
        ir_region_unref(g->ctx, r);
        trace_fail_on(g, &id, 1, st ? st : KILN_STATUS_INTERNAL, AD_OP,
                      "scan %%%u cannot save values per iteration: %s", id,
                      st ? msg : "its result changed type");
        return NULL;
    }
    ir_region_unref(g->ctx, prev);
    for (int j = 0; j < n_extra && !g->status; j++) {
        ir_node t = {.op = IR_RESULT};
        t.a.result_index = (int)n_out + j;
        saved[j] = trace_emit(g, AD_OP, &t, &id, 1);
    }
    return ir_region_ref(r);
}

/* Makes scan node id output, stacked, the carries entering each iteration, in saved[0..nc). */
static ir_region *save_carries(kiln_graph *g, uint32_t id, int nc, kiln_value *saved) {
    kiln_graph *nb = body_saving_carries(g, g->nodes[id].region->graphs[0], nc);
    return nb ? swap_body(g, id, nb, nc, saved) : NULL;
}

/* Sorts the scan's inputs and results into the lists of b; false when there is nothing
 * to compute. */
static bool scan_classify(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *cts,
                          const bool *need, scan_bwd *b) {
    const kiln_graph *body = n->region->graphs[0];
    const uint32_t *in = ir_in(n);
    uint32_t base = ir_control_capture_base(n, 0);
    b->g = g;
    b->nc = n->a.ctl.n_carry, b->nx = n->a.ctl.n_xs;
    b->n_out = body->n_outputs;
    b->n_cap = ir_control_n_captures(n, 0);
    b->caps = in + base;
    b->cts = cts;
    for (int j = 0; j < b->nc; j++)
        if (ir_dtype_is_float(g->nodes[in[j]].dtype)) b->fc[b->nfc++] = j;
    for (int i = 0; i < b->nx; i++)
        if (need[b->nc + i] && ir_dtype_is_float(g->nodes[in[b->nc + i]].dtype))
            b->xn[b->nxn++] = i;
    for (uint32_t y = 0; y + (uint32_t)b->nc < b->n_out; y++)
        if (cts[(uint32_t)b->nc + y].id) b->yc[b->nyc++] = (int)y;
    int nkc = 0;
    for (uint32_t c = 0; c < b->n_cap; c++)
        if (need[base + c] && ir_dtype_is_float(g->nodes[in[base + c]].dtype)) nkc++;
    if (too_many(g, id, "carries in its backward scan (float carries and captures)",
                 b->nfc + nkc) ||
        too_many(g, id, "outputs in its backward body", b->nfc + nkc + b->nxn) ||
        too_many(g, id, "scanned arrays in its backward scan", b->nc + b->nx + b->nyc))
        return false;
    for (uint32_t c = 0; c < b->n_cap; c++)
        if (need[base + c] && ir_dtype_is_float(g->nodes[in[base + c]].dtype))
            b->kc[b->nkc++] = (int)c;
    return b->nfc + b->nkc + b->nxn > 0;
}

/* ------------------------------------------------ scan, saving residuals ---- */

/* The forward body traced with its VJP in a scratch graph sg, and how that splits between
 * the forward scan (which also outputs the residuals, per iteration) and the backward scan
 * (which reads them). sg's parameters: the body's [np], then the float carries' cotangents
 * [nfc], then the ys' [nyc]. */
typedef struct scan_split {
    kiln_graph *sg;
    uint32_t fo[KILN_MAX_OUTPUTS];     /* the body's outputs */
    uint32_t gr[3 * KILN_MAX_OUTPUTS]; /* the VJP's: carries', xs', captures' (scan_bwd order) */
    int ngr;
    uint32_t res[KILN_MAX_OUTPUTS]; /* the residuals: forward values the VJP part reads */
    int nres;
} scan_split;

/* sg's parameter p mirroring node q. */
static kiln_value param_like_node(kiln_graph *sg, const ir_node *q, const char *name) {
    return kiln_parameter(sg, name, q->dtype, q->shape.rank, q->shape.dims);
}

/* Traces the body and its VJP into sp->sg; the node count before the VJP in *boundary. */
static bool split_trace(kiln_graph *g, const scan_bwd *b, scan_split *sp, uint32_t *boundary) {
    const kiln_graph *body = b->body;
    uint32_t np = body->n_params, no = body->n_outputs;
    if (kiln_graph_create(g->ctx, body->name, &sp->sg))
        return trace_fail(g, KILN_STATUS_HOST_OOM, AD_OP, "host allocation failed"), false;
    kiln_graph *sg = sp->sg;
    kiln_value v[KILN_MAX_OUTPUTS * 3], fo[KILN_MAX_OUTPUTS], ct[2 * KILN_MAX_OUTPUTS];
    kiln_value vo[2 * KILN_MAX_OUTPUTS], wrt[3 * KILN_MAX_OUTPUTS], gr[3 * KILN_MAX_OUTPUTS];
    char name[32];
    for (uint32_t p = 0; p < np; p++) {
        const ir_node *q = &body->nodes[body->params[p]];
        v[p] = param_like_node(sg, q, q->name);
    }
    for (int k = 0; k < b->nfc + b->nyc; k++) {
        uint32_t o = k < b->nfc ? (uint32_t)b->fc[k] : (uint32_t)(b->nc + b->yc[k - b->nfc]);
        snprintf(name, sizeof name, "ct%d", k);
        ct[k] = param_like_node(sg, &body->nodes[body->outputs[o]], name);
    }
    trace_inline(sg, AD_OP, body, v, fo);
    *boundary = sg->n_nodes;
    int nv = 0, nw = 0;
    for (int k = 0; k < b->nfc; k++) vo[nv++] = fo[b->fc[k]];
    for (int k = 0; k < b->nyc; k++) vo[nv++] = fo[b->nc + b->yc[k]];
    for (int k = 0; k < b->nfc; k++) wrt[nw++] = v[b->fc[k]];
    for (int k = 0; k < b->nxn; k++) wrt[nw++] = v[b->nc + b->xn[k]];
    for (int k = 0; k < b->nkc; k++) wrt[nw++] = v[b->nc + b->nx + b->kc[k]];
    if (!sg->status) kiln_vjp(sg, nv, vo, ct, nw, wrt, gr);
    if (sg->status) {
        trace_fail(g, sg->status, AD_OP, "the VJP of a scan body: %s",
                   sg->error ? sg->error : "failed");
        return false;
    }
    for (uint32_t o = 0; o < no; o++) sp->fo[o] = fo[o].id;
    for (int k = 0; k < nw; k++) sp->gr[k] = gr[k].id;
    sp->ngr = nw;
    return true;
}

/* The residuals: values of the forward part (the body's nodes, and the RESULT nodes of its
 * nested control nodes the VJP added) that the VJP part reads, and that vary per
 * iteration (carries and what depends on a carry or an x). The xs and the captures are
 * read from the outer graph instead; what depends only on captures and constants is
 * computed again by the backward body (saving it per iteration would only waste memory).
 * False when there are more than the scans can pass (the caller then recomputes). */
static bool split_residuals(kiln_graph *g, const scan_bwd *b, scan_split *sp, uint32_t boundary) {
    const kiln_graph *sg = sp->sg;
    uint32_t nn = sg->n_nodes, np = b->body->n_params;
    uint8_t *f = host_calloc(g->ctx, nn, 4); /* forward, varying, read by the VJP, a carry */
    if (!f) return trace_fail(g, KILN_STATUS_HOST_OOM, AD_OP, "host allocation failed"), false;
    uint8_t *var = f + nn, *isr = var + nn, *car = isr + nn;
    for (uint32_t p = 0; p < sg->n_params; p++) {
        var[sg->params[p]] = p < (uint32_t)(b->nc + b->nx) || p >= np;
        car[sg->params[p]] = p < (uint32_t)b->nc;
    }
    for (uint32_t id = 1; id < nn; id++) {
        const ir_node *n = &sg->nodes[id];
        const uint32_t *in = ir_in(n);
        f[id] = id < boundary || (n->op == IR_RESULT && f[in[0]]);
        for (uint32_t k = 0; k < n->n_in; k++) var[id] |= var[in[k]];
    }
    /* what the gradients read, through the VJP part's live nodes (isr 2: live, not forward) */
    for (int k = 0; k < sp->ngr; k++) isr[sp->gr[k]] = f[sp->gr[k]] ? 1 : 2;
    for (uint32_t id = nn; id-- > 1;) {
        const ir_node *n = &sg->nodes[id];
        if (isr[id] != 2) continue;
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t i = ir_in(n)[k];
            if (!isr[i]) isr[i] = f[i] ? 1 : 2;
        }
    }
    bool ok = true;
    sp->nres = 0;
    for (uint32_t id = 1; id < nn && ok; id++) {
        const ir_node *n = &sg->nodes[id];
        if (isr[id] != 1 || !var[id] || (n->op == IR_PARAMETER && !car[id])) continue;
        if (sp->nres == KILN_MAX_OUTPUTS)
            ok = false;
        else
            sp->res[sp->nres++] = id;
    }
    host_free(g->ctx, f, (size_t)nn * 4);
    return ok && b->n_out + (uint32_t)sp->nres <= KILN_MAX_OUTPUTS &&
           b->nx + b->nyc + sp->nres <= KILN_MAX_OUTPUTS;
}

/* The forward scan's new body: the body's outputs, then the residuals. */
static kiln_graph *body_saving_residuals(kiln_graph *g, const scan_bwd *b, const scan_split *sp) {
    kiln_graph *nb = NULL;
    const kiln_graph *body = b->body;
    if (kiln_graph_create(g->ctx, body->name, &nb))
        return trace_fail(g, KILN_STATUS_HOST_OOM, AD_OP, "host allocation failed"), NULL;
    kiln_value args[3 * KILN_MAX_OUTPUTS] = {{0}}, outs[2 * KILN_MAX_OUTPUTS];
    uint32_t want[2 * KILN_MAX_OUTPUTS], no = body->n_outputs;
    for (uint32_t p = 0; p < body->n_params; p++) {
        const ir_node *q = &body->nodes[body->params[p]];
        args[p] = param_like_node(nb, q, q->name);
    }
    for (uint32_t o = 0; o < no; o++) want[o] = sp->fo[o];
    for (int r = 0; r < sp->nres; r++) want[no + (uint32_t)r] = sp->res[r];
    int nw = (int)no + sp->nres;
    trace_inline_part(nb, AD_OP, sp->sg, args, 0, NULL, NULL, nw, want, outs);
    /* a nested scan's RESULT nodes were made by sg's VJP: here they are forward values */
    for (uint32_t id = 1; id < nb->n_nodes; id++) nb->nodes[id].backward = false;
    if (!nb->status) kiln_graph_finish(nb, nw, outs);
    if (nb->status) {
        trace_fail(g, nb->status, AD_OP, "saving the residuals of a scan: %s",
                   nb->error ? nb->error : "failed");
        kiln_graph_destroy(nb);
        return NULL;
    }
    return nb;
}

/* The backward body when the residuals are saved: parameters the carry cotangents [nfc],
 * the capture cotangents so far [nkc], then per iteration the xs' slices [nx], the ys'
 * cotangents [nyc] and the residuals [nres]. The VJP part of sg is copied with the
 * residuals in place of the forward values: only what depends on the captures alone is
 * computed again. Returns what scan_bwd_body returns. */
static int scan_res_body(kiln_graph *s, int n_in, const kiln_value *in, void *user,
                         kiln_value *outs) {
    (void)n_in;
    const scan_bwd *b = user;
    const scan_split *sp = b->split;
    const kiln_value *ctc = in, *acc = in + b->nfc, *x = acc + b->nkc, *cty = x + b->nx;
    const kiln_value *rv = cty + b->nyc;
    uint32_t np = b->body->n_params;
    kiln_value args[4 * KILN_MAX_OUTPUTS] = {{0}}, gr[3 * KILN_MAX_OUTPUTS];
    for (int i = 0; i < b->nx; i++) args[b->nc + i] = x[i];
    for (uint32_t c = 0; c < b->n_cap; c++)
        args[b->nc + b->nx + (int)c] = kiln_capture(s, val(b->g, b->caps[c]));
    for (int k = 0; k < b->nfc; k++) args[np + (uint32_t)k] = ctc[k];
    for (int k = 0; k < b->nyc; k++) args[np + (uint32_t)(b->nfc + k)] = cty[k];
    trace_inline_part(s, AD_OP, sp->sg, args, sp->nres, sp->res, rv, sp->ngr, sp->gr, gr);
    if (s->status) return -1;
    int r = 0;
    for (int k = 0; k < b->nfc; k++) outs[r++] = gr[k];
    for (int k = 0; k < b->nkc; k++) outs[r++] = kiln_add(s, acc[k], gr[b->nfc + b->nxn + k]);
    for (int k = 0; k < b->nxn; k++) outs[r++] = gr[b->nfc + k];
    return r;
}

/* The backward scan over the residuals saved by the forward scan (saved[0..nres)); its
 * results to out. */
static void scan_res_backward(kiln_graph *g, const ir_node *n, const scan_bwd *b,
                              const kiln_value *cts, const bool *need, const kiln_value *saved,
                              kiln_value *out) {
    const uint32_t *in = ir_in(n);
    uint32_t base = ir_control_capture_base(n, 0);
    kiln_value init[2 * KILN_MAX_OUTPUTS], xs[2 * KILN_MAX_OUTPUTS], res[2 * KILN_MAX_OUTPUTS];
    int ni = 0, nxs = 0, n_res = 0;
    for (int k = 0; k < b->nfc; k++) {
        int j = b->fc[k];
        init[ni++] = cts[j].id ? cts[j] : zeros_like(g, &g->nodes[in[j]]);
    }
    for (int k = 0; k < b->nkc; k++) init[ni++] = zeros_like(g, &g->nodes[in[base + b->kc[k]]]);
    for (int i = 0; i < b->nx; i++) xs[nxs++] = val(g, in[b->nc + i]);
    for (int k = 0; k < b->nyc; k++) xs[nxs++] = cts[b->nc + b->yc[k]];
    for (int k = 0; k < b->split->nres; k++) xs[nxs++] = saved[k];
    kiln_scan_options o = {.length = n->a.ctl.length, .reverse = !n->a.ctl.reverse};
    if (!g->status) kiln_scan(g, scan_res_body, (void *)b, ni, init, nxs, xs, &o, &n_res, res);
    if (g->status) return;
    for (int k = 0; k < b->nfc; k++)
        if (need[b->fc[k]]) out[b->fc[k]] = res[k];
    for (int k = 0; k < b->nkc; k++) out[base + (uint32_t)b->kc[k]] = res[b->nfc + k];
    for (int k = 0; k < b->nxn; k++) out[b->nc + b->xn[k]] = res[b->nfc + b->nkc + k];
}

/* The VJP of scan id saving the body's residuals per iteration. False, having changed
 * nothing, when they are more than a scan can pass (the caller recomputes instead). n is
 * the caller's copy of the node: its region may go, its inputs stay. */
static bool vjp_scan_saving(kiln_graph *g, uint32_t id, const ir_node *n, scan_bwd *b,
                            const kiln_value *cts, const bool *need, kiln_value *out) {
    scan_split sp;
    memset(&sp, 0, sizeof sp);
    b->body = n->region->graphs[0];
    if (b->body->n_params > 2 * KILN_MAX_OUTPUTS) return false; /* the arrays below */
    b->split = &sp;
    uint32_t boundary = 0;
    bool handled = true;
    if (split_trace(g, b, &sp, &boundary)) {
        if (!split_residuals(g, b, &sp, boundary)) {
            handled = g->status != KILN_STATUS_OK;
        } else {
            kiln_value saved[KILN_MAX_OUTPUTS];
            kiln_graph *nb = body_saving_residuals(g, b, &sp);
            ir_region *r = nb ? swap_body(g, id, nb, sp.nres, saved) : NULL;
            if (r) {
                b->body = r->graphs[0]; /* n->region may be gone now */
                if (!g->status) scan_res_backward(g, n, b, cts, need, saved, out);
                ir_region_unref(g->ctx, r);
            }
        }
    }
    if (sp.sg) kiln_graph_destroy(sp.sg);
    b->split = NULL;
    return handled;
}

static void vjp_scan(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *cts,
                     const bool *need, kiln_value *out) {
    scan_bwd b;
    memset(&b, 0, sizeof b);
    if (!scan_classify(g, id, n, cts, need, &b)) return;
    if (!n->a.ctl.checkpoint && vjp_scan_saving(g, id, n, &b, cts, need, out)) return;
    const uint32_t *in = ir_in(n); /* the node's input list: the swap below keeps it */
    uint32_t base = ir_control_capture_base(n, 0);
    kiln_value saved[KILN_MAX_OUTPUTS];
    ir_region *r = b.nc ? save_carries(g, id, b.nc, saved) : ir_region_ref(n->region);
    if (!r || g->status) {
        if (r) ir_region_unref(g->ctx, r);
        return;
    }
    /* n->region may be gone now: only r is read from here on */
    b.body = r->graphs[0];
    kiln_value init[KILN_MAX_OUTPUTS], xs[KILN_MAX_OUTPUTS], res[KILN_MAX_OUTPUTS];
    int ni = 0, nxs = 0, n_res = 0;
    for (int k = 0; k < b.nfc; k++) {
        int j = b.fc[k];
        init[ni++] = cts[j].id ? cts[j] : zeros_like(g, &g->nodes[in[j]]);
    }
    for (int k = 0; k < b.nkc; k++) init[ni++] = zeros_like(g, &g->nodes[in[base + b.kc[k]]]);
    for (int j = 0; j < b.nc; j++) xs[nxs++] = saved[j];
    for (int i = 0; i < b.nx; i++) xs[nxs++] = val(g, in[b.nc + i]);
    for (int k = 0; k < b.nyc; k++) xs[nxs++] = cts[b.nc + b.yc[k]];
    kiln_scan_options o = {
        .length = n->a.ctl.length, .reverse = !n->a.ctl.reverse, .checkpoint_body = true};
    if (!g->status) kiln_scan(g, scan_bwd_body, &b, ni, init, nxs, xs, &o, &n_res, res);
    ir_region_unref(g->ctx, r);
    if (g->status) return;
    for (int k = 0; k < b.nfc; k++)
        if (need[b.fc[k]]) out[b.fc[k]] = res[k];
    for (int k = 0; k < b.nkc; k++) out[base + (uint32_t)b.kc[k]] = res[b.nfc + k];
    for (int k = 0; k < b.nxn; k++) out[b.nc + b.xn[k]] = res[b.nfc + b.nkc + k];
}

/* ----------------------------------------------------------------- cond ---- */

/* What the backward branches need (cond_bwd_branch), gathered before they are traced. */
typedef struct cond_bwd {
    kiln_graph *g;
    const ir_node *n;              /* the forward cond (a copy: its region and inputs) */
    const kiln_value *cts;         /* its results' cotangents */
    int branch;                    /* the branch traced next: kiln_switch traces 0, 1, ... */
    int on[KILN_MAX_OUTPUTS], non; /* float operands that want a cotangent */
    uint32_t ci[KILN_MAX_OUTPUTS]; /* inputs that are float captures wanting one */
    int nci;
    int rc[KILN_MAX_OUTPUTS], nrc; /* results with a cotangent */
} cond_bwd;

/* Branch k of the backward cond: branch k recomputed on the operands (passed, as forward,
 * so that an operand that is also a capture stays two parameters) and its captures,
 * differentiated; zeros for the other branches' captures. */
static int cond_bwd_branch(kiln_graph *s, int n_in, const kiln_value *in, void *user,
                           kiln_value *outs) {
    (void)n_in;
    cond_bwd *b = user;
    const ir_node *n = b->n;
    uint32_t k = (uint32_t)b->branch++;
    const kiln_graph *br = n->region->graphs[k];
    uint32_t np = (uint32_t)n->a.ctl.n_carry, base = ir_control_capture_base(n, k);
    uint32_t ncap = ir_control_n_captures(n, k);
    kiln_value *args = host_calloc(s->ctx, (size_t)br->n_params + br->n_outputs, sizeof *args);
    kiln_value *fo = args ? args + br->n_params : NULL;
    if (!args) return trace_fail(s, KILN_STATUS_HOST_OOM, AD_OP, "host allocation failed"), -1;
    for (uint32_t j = 0; j < np; j++) args[j] = in[j];
    for (uint32_t c = 0; c < ncap; c++)
        args[np + c] = kiln_capture(s, val(b->g, ir_in(n)[base + c]));
    trace_inline(s, AD_OP, br, args, fo);
    kiln_value vo[KILN_MAX_OUTPUTS], vc[KILN_MAX_OUTPUTS], wrt[2 * KILN_MAX_OUTPUTS];
    kiln_value gr[2 * KILN_MAX_OUTPUTS];
    int nw = 0;
    for (int i = 0; i < b->nrc; i++)
        vo[i] = fo[b->rc[i]], vc[i] = kiln_capture(s, b->cts[b->rc[i]]);
    for (int i = 0; i < b->non; i++) wrt[nw++] = args[b->on[i]];
    for (int i = 0; i < b->nci; i++)
        if (b->ci[i] >= base && b->ci[i] < base + ncap) wrt[nw++] = args[np + b->ci[i] - base];
    if (!s->status && nw) kiln_vjp(s, b->nrc, vo, vc, nw, wrt, gr);
    int r = 0, w = b->non;
    for (int i = 0; i < b->non && !s->status; i++) outs[r++] = nw ? gr[i] : KN_NONE;
    for (int i = 0; i < b->nci && !s->status; i++) {
        bool mine = b->ci[i] >= base && b->ci[i] < base + ncap;
        outs[r++] = mine ? gr[w++] : zeros_like(s, &b->g->nodes[ir_in(n)[b->ci[i]]]);
    }
    host_free(s->ctx, args, ((size_t)br->n_params + br->n_outputs) * sizeof *args);
    return s->status ? -1 : r;
}

static void vjp_cond(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *cts,
                     const bool *need, kiln_value *out) {
    cond_bwd b;
    memset(&b, 0, sizeof b);
    b.g = g, b.n = n, b.cts = cts;
    const uint32_t *in = ir_in(n);
    uint32_t np = (uint32_t)n->a.ctl.n_carry, nres = ir_control_n_results(n);
    for (uint32_t j = 0; j < np; j++)
        if (need[1 + j] && ir_dtype_is_float(g->nodes[in[1 + j]].dtype)) b.on[b.non++] = (int)j;
    int nci = 0;
    for (uint32_t k = 1 + np; k < n->n_in; k++)
        nci += need[k] && ir_dtype_is_float(g->nodes[in[k]].dtype);
    if (too_many(g, id, "outputs in its backward branches", b.non + nci)) return;
    for (uint32_t k = 1 + np; k < n->n_in; k++)
        if (need[k] && ir_dtype_is_float(g->nodes[in[k]].dtype)) b.ci[b.nci++] = k;
    for (uint32_t i = 0; i < nres; i++)
        if (cts[i].id) b.rc[b.nrc++] = (int)i;
    if (!b.nrc || !(b.non + b.nci)) return;
    kiln_fn fns[KILN_MAX_OUTPUTS];
    int nb = (int)n->region->n_graphs, n_res = 0;
    for (int k = 0; k < nb; k++) fns[k] = cond_bwd_branch;
    kiln_value res[KILN_MAX_OUTPUTS], ops[KILN_MAX_OUTPUTS];
    for (uint32_t j = 0; j < np; j++) ops[j] = val(g, in[1 + j]);
    kiln_switch(g, val(g, in[0]), nb, fns, &b, (int)np, ops, &n_res, res);
    if (g->status) return;
    for (int i = 0; i < b.non; i++) out[1 + b.on[i]] = res[i];
    for (int i = 0; i < b.nci; i++) out[b.ci[i]] = res[b.non + i];
}

/* ---------------------------------------------------------------- entry ---- */

void ad_control_vjp(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *cts,
                    const bool *need, kiln_value *out) {
    switch (n->op) {
    case IR_WHILE: vjp_while(g, id, n); break;
    case IR_SCAN: vjp_scan(g, id, n, cts, need, out); break;
    case IR_COND: vjp_cond(g, id, n, cts, need, out); break;
    default:
        trace_fail(g, KILN_STATUS_INTERNAL, AD_OP, "%s is not a control op", ir_ops[n->op].name);
    }
}

void ad_control_rule(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                     kiln_value *out) {
    uint32_t nr = ir_control_n_results(n);
    kiln_value *cts = host_calloc(g->ctx, nr, sizeof *cts);
    if (!cts) {
        trace_fail(g, KILN_STATUS_HOST_OOM, AD_OP, "host allocation for %u cotangents failed", nr);
        return;
    }
    cts[0] = ct;
    ad_control_vjp(g, id, n, cts, need, out);
    host_free(g->ctx, cts, nr * sizeof *cts);
}

void ad_result_rule(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out) {
    (void)g, (void)id, (void)n, (void)ct, (void)need, (void)out;
}
