/* control_rules.c — the VJP rules of the control ops (ir.h, "ir_region"), as JAX
 * transposes lax.scan and lax.cond.
 *
 * SCAN: the backward pass is a scan run the other way whose body is the VJP of the forward
 * body. Its carries are the cotangents of the float carries and the cotangents of the
 * captures accumulated so far; it scans over the carries that entered each forward
 * iteration, the forward xs and the cotangents of the ys; it returns the cotangents of the
 * initial carries, of the captures, and (stacked) of the xs. The body's VJP needs the
 * values of the forward body at each iteration: the backward body recomputes the forward
 * body from the carry that entered the iteration (trace_inline) and differentiates that
 * copy with kiln_vjp, so the scan's VJP keeps O(length x carries), never the body's
 * intermediate values (what jax.checkpoint on the body gives; JAX without it would stack
 * the body's residuals instead, O(length x residuals), which this rule does not do).
 *
 * The carries entering each iteration exist nowhere in the forward graph, so the rule
 * makes the forward scan output them: it gives the node a new region whose body returns
 * its carry parameters as extra per-iteration outputs, appended after the others, and
 * appends a RESULT node for each. This is the one exception to "rules only append"
 * (autodiff.h), and it is what JAX's partial evaluation of a scan does (the residuals
 * become outputs of the forward scan). It is safe: result 0 and every existing RESULT
 * index keep their meaning and type (the node is typed again to check it); the new region
 * is the node's own and the old one loses the node's reference (a pass's copy of the graph
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
    const uint32_t *caps;          /* [n_cap]: the outer ids of the captures */
    int fc[KILN_MAX_OUTPUTS], nfc; /* float carries */
    int xn[KILN_MAX_OUTPUTS], nxn; /* float xs that want a cotangent */
    int kc[KILN_MAX_OUTPUTS], nkc; /* float captures that want a cotangent */
    int yc[KILN_MAX_OUTPUTS], nyc; /* ys with a cotangent */
    const kiln_value *cts;         /* the forward results' cotangents */
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

/* Makes scan node id output, stacked, the carries entering each iteration (the file's
 * comment says why this is safe), and puts their RESULT nodes in saved[0..nc). Returns the
 * node's new region with a reference for the caller, or NULL after an error on g (the node
 * is then as it was). */
static ir_region *save_carries(kiln_graph *g, uint32_t id, int nc, kiln_value *saved) {
    const ir_region *old = g->nodes[id].region;
    uint32_t n_out = old->graphs[0]->n_outputs;
    kiln_graph *nb = body_saving_carries(g, old->graphs[0], nc);
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
                      "scan %%%u cannot save its carries per iteration: %s", id,
                      st ? msg : "its result changed type");
        return NULL;
    }
    ir_region_unref(g->ctx, prev);
    for (int j = 0; j < nc && !g->status; j++) {
        ir_node t = {.op = IR_RESULT};
        t.a.result_index = (int)n_out + j;
        saved[j] = trace_emit(g, AD_OP, &t, &id, 1);
    }
    return ir_region_ref(r);
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

static void vjp_scan(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *cts,
                     const bool *need, kiln_value *out) {
    scan_bwd b;
    memset(&b, 0, sizeof b);
    if (!scan_classify(g, id, n, cts, need, &b)) return;
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
    kiln_scan_options o = {.length = n->a.ctl.length, .reverse = !n->a.ctl.reverse};
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
