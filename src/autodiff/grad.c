/* grad.c — kiln_grad and kiln_vjp: reverse mode appended to the graph being traced.
 *
 * The transform works on the graph in place, in three sweeps over node ids (the graph's
 * order is topological, so no sort is needed):
 *
 *  1. forward, from the earliest wrt: a node is "varying" when it is a wrt or a
 *     differentiable float op with a varying input. Integer and bool values, NONDIFF ops
 *     (stop_gradient, compare, floor, ...) and sources other than the wrt stop the flow.
 *  2. backward, from the outputs: a varying node is "live" when an output is, or when it
 *     feeds a live node. Only live nodes get a cotangent, so the backward pass touches
 *     neither what the outputs do not depend on nor what does not depend on a wrt.
 *  3. backward again, over the live nodes from the latest output down to the earliest wrt:
 *     each node's rule (rules.c) turns its cotangent into contributions for its live
 *     inputs; several contributions to one value are summed with add. A node that is the
 *     result of a composite the tracer recorded (softmax, cross-entropy, layer norm, ...)
 *     whose interior no later node reads gets the composite's direct rule instead
 *     (composite_rules.c), and its interior nodes get none: less kept, more stable.
 *
 * A kiln_custom_vjp call (trace.h: trace_custom_vjp) replaces its forward nodes' rules by the
 * user's bwd: its outputs vary when one of its float args does, a live output makes the
 * varying args live (not the forward nodes), and sweep 3, at the call's latest output (every
 * reader of an output is later, so the outputs' cotangents are complete), calls bwd with the
 * residuals and the outputs' cotangents and adds what it returns to the live args. The
 * outputs' own rules never run. bwd's nodes are ordinary ops: a later transform
 * differentiates them by their rules.
 *
 * Control nodes (while, scan, cond) have several results: the node is result 0, a RESULT
 * node each other one (ir.h). Their flags are kept apart (CTL_VARYING, CTL_LIVE) so that an
 * integer result 0 never varies while a float RESULT does; a RESULT node's cotangent stays
 * on it, and the control node's rule (control_rules.c) receives the cotangents of all its
 * results at once. A scan's rule appends RESULT nodes past the forward graph's ids; the
 * sweeps never read them.
 *
 * Every backward node is made by the public builders, so it is typed and checked, and
 * carries the user's location of the kiln_grad call. The nodes the transform appends are
 * flagged `backward`, the wrt that are graph parameters get the parameter role and the
 * results the gradient role (ir.h): the planner reports a forward value a backward node
 * reads as an activation saved for the backward pass, and the rest by role. The graph's node count
 * only grows: ids below the first new node keep their meaning, which is all the sweeps need. Errors
 * are the builder's (sticky, first one kept, message names the call). */
#include "autodiff.h"
#include "ir/side.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>

/* VARYING, LIVE: the node's value (its result 0) depends on a wrt, and gets a cotangent.
 * CTL_VARYING, CTL_LIVE (control nodes only): some result of the node depends on a wrt,
 * and some result gets a cotangent, so the node's rule runs. */
enum { VARYING = 1, LIVE = 2, CTL_VARYING = 4, CTL_LIVE = 8 };
/* CV_OUT: an output of a kiln_custom_vjp call (trace.h: trace_custom_vjp); CV_ANCHOR: the
 * latest output of one, where the sweep calls its backward function. */
enum { CV_OUT = 16, CV_ANCHOR = 32 };

/* Host memory of one transform: a flag byte and a cotangent per node of the forward graph. */
typedef struct ad_work {
    kiln_graph *g;
    const char *op;
    uint32_t n;          /* nodes (ids) before the transform, slot 0 included */
    uint8_t *flags;      /* [n] */
    kiln_value *ct;      /* [n]: the cotangent so far, {0,0} for none */
    uint32_t *last_user; /* [n]: the latest node reading each node, 0 for none */
    uint32_t n_cv;       /* kiln_custom_vjp records before the transform (bwd may add more) */
} ad_work;

static bool work_init(ad_work *w, kiln_graph *g, const char *op) {
    w->g = g;
    w->op = op;
    w->n = g->n_nodes;
    w->flags = host_alloc(g->ctx, w->n);
    w->ct = host_alloc(g->ctx, (size_t)w->n * sizeof *w->ct);
    w->last_user = host_alloc(g->ctx, (size_t)w->n * sizeof *w->last_user);
    if (!w->flags || !w->ct || !w->last_user) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op,
                   "host allocation of the work arrays for %u nodes failed", w->n);
        return false;
    }
    memset(w->flags, 0, w->n);
    memset(w->ct, 0, (size_t)w->n * sizeof *w->ct);
    memset(w->last_user, 0, (size_t)w->n * sizeof *w->last_user);
    for (uint32_t id = 1; id < w->n; id++) {
        const ir_node *n = &g->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) w->last_user[in[k]] = id;
    }
    uint32_t n_cv;
    const trace_custom_vjp *cv = trace_custom_vjps(g, &n_cv);
    for (uint32_t i = 0; i < n_cv; i++) {
        uint32_t anchor = 0;
        for (int j = 0; j < cv[i].n_out; j++) {
            w->flags[cv[i].out[j]] |= CV_OUT;
            if (cv[i].out[j] > anchor) anchor = cv[i].out[j];
        }
        w->flags[anchor] |= CV_ANCHOR;
    }
    w->n_cv = n_cv;
    return true;
}

static void work_free(ad_work *w) {
    kiln_context *ctx = w->g->ctx;
    if (w->flags) host_free(ctx, w->flags, w->n);
    if (w->ct) host_free(ctx, w->ct, (size_t)w->n * sizeof *w->ct);
    if (w->last_user) host_free(ctx, w->last_user, (size_t)w->n * sizeof *w->last_user);
}

/* Adds a contribution to id's cotangent. */
static void accumulate(ad_work *w, uint32_t id, kiln_value c) {
    if (!c.id) return;
    w->ct[id] = w->ct[id].id ? kiln_add(w->g, w->ct[id], c) : c;
}

static bool any_input(const ad_work *w, const ir_node *n, uint8_t flag) {
    const uint32_t *in = ir_in(n);
    for (uint32_t k = 0; k < n->n_in; k++)
        if (w->flags[in[k]] & flag) return true;
    return false;
}

/* The kiln_custom_vjp record that output id answers to: the outermost one of those it is an
 * output of, as a call in a fwd may return an inner call's output: the earliest first, and of
 * two with one first the later recorded (a call is recorded when its fwd returns, after the
 * calls inside it; two calls one after the other never share a first). */
static uint32_t cv_of(const ad_work *w, uint32_t id) {
    uint32_t n, best = UINT32_MAX;
    const trace_custom_vjp *cv = trace_custom_vjps(w->g, &n);
    for (uint32_t i = 0; i < w->n_cv; i++)
        for (int j = 0; j < cv[i].n_out; j++)
            if (cv[i].out[j] == id && (best == UINT32_MAX || cv[i].first <= cv[best].first))
                best = i;
    return best;
}

/* Sweeps 1 and 2 for an output of a custom_vjp call: it varies when a float arg does, it
 * being a float (the forward's ops are not asked: a straight-through estimator's rounding
 * has no rule), and a live one makes the varying args live, not the forward's nodes. */
static void mark_custom(ad_work *w, uint32_t id, bool live) {
    const trace_custom_vjp *r = &trace_custom_vjps(w->g, &(uint32_t){0})[cv_of(w, id)];
    for (int i = 0; i < r->n_in; i++) {
        uint32_t a = r->in[i];
        if (!a || !(w->flags[a] & VARYING)) continue;
        if (live && (w->flags[id] & LIVE)) w->flags[a] |= LIVE;
        if (!live && ir_dtype_is_float(w->g->nodes[id].dtype)) w->flags[id] |= VARYING;
    }
}

/* Sweep 1 for one node. A control node has several results (ir.h) of which only the float
 * ones vary: CTL_VARYING says some do, VARYING keeps meaning "its result 0 does", so an
 * integer result 0 (fori_loop's index) never varies. A RESULT node varies when it is a
 * float and its control node has a varying input. */
static void mark_varying(ad_work *w, uint32_t id) {
    const ir_node *n = &w->g->nodes[id];
    ir_kind kind = ir_ops[n->op].kind;
    if (kind == IRK_RESULT) {
        if (ir_dtype_is_float(n->dtype) && (w->flags[ir_in(n)[0]] & CTL_VARYING))
            w->flags[id] |= VARYING;
        return;
    }
    if (w->flags[id] & VARYING) return;
    if (w->flags[id] & CV_OUT) {
        mark_custom(w, id, false);
        return;
    }
    if (!ad_rule_for(n->op)) return;
    if (kind == IRK_CONTROL) {
        if (any_input(w, n, VARYING)) w->flags[id] |= CTL_VARYING;
        if ((w->flags[id] & CTL_VARYING) && ir_dtype_is_float(n->dtype)) w->flags[id] |= VARYING;
        return;
    }
    if (ir_dtype_is_float(n->dtype) && any_input(w, n, VARYING)) w->flags[id] |= VARYING;
}

/* Sweep 2 for one node: a live RESULT node makes its control node's rule run (CTL_LIVE)
 * without giving the control node's own result a cotangent. */
static void mark_live(ad_work *w, uint32_t id) {
    const ir_node *n = &w->g->nodes[id];
    if (n->op == IR_RESULT) {
        if (w->flags[id] & LIVE) w->flags[ir_in(n)[0]] |= CTL_LIVE;
        return;
    }
    if (w->flags[id] & CV_OUT) {
        mark_custom(w, id, true);
        return;
    }
    if (!(w->flags[id] & (LIVE | CTL_LIVE)) || !ad_rule_for(n->op)) return;
    const uint32_t *in = ir_in(n);
    for (uint32_t k = 0; k < n->n_in; k++)
        if (w->flags[in[k]] & VARYING) w->flags[in[k]] |= LIVE;
}

/* Sweeps 1 and 2: marks the varying nodes from lo and the live ones below hi. */
static void mark(ad_work *w, const uint32_t *wrt, int n_wrt, const uint32_t *outs, int n_out,
                 uint32_t lo, uint32_t hi) {
    for (int i = 0; i < n_wrt; i++) w->flags[wrt[i]] |= VARYING;
    for (uint32_t id = lo; id <= hi; id++) mark_varying(w, id);
    for (int i = 0; i < n_out; i++)
        if (w->flags[outs[i]] & VARYING) w->flags[outs[i]] |= LIVE;
    for (uint32_t id = hi; id >= lo && id > 0; id--) mark_live(w, id);
}

/* Checks one contribution's type against its input: a rule that got it wrong is a kiln
 * bug, reported as such rather than left to confuse a later op. */
static bool check_contribution(ad_work *w, uint32_t node, uint32_t input, kiln_value c) {
    const ir_node *x = &w->g->nodes[input], *v = &w->g->nodes[c.id];
    if (v->dtype == x->dtype && ir_shape_eq(&v->shape, &x->shape)) return true;
    char want[IR_TYPE_STR_MAX], got[IR_TYPE_STR_MAX];
    trace_fail(w->g, KILN_STATUS_INTERNAL, w->op,
               "the VJP rule of %s (%%%u) gave %s for its input %%%u of type %s",
               ir_ops[w->g->nodes[node].op].name, node,
               ir_type_str(v->dtype, &v->shape, got, sizeof got), input,
               ir_type_str(x->dtype, &x->shape, want, sizeof want));
    return false;
}

/* Autodiff's options of a graph (ad_set_primitive_rules_only). */
typedef struct ad_options {
    bool primitive_rules_only;
} ad_options;

static const ir_side_kind ad_options_kind = {.name = "autodiff options",
                                             .state_size = sizeof(ad_options)};

bool ad_set_primitive_rules_only(kiln_graph *g, bool on) {
    ad_options *o = ir_side_state_make(g, &ad_options_kind);
    if (o) o->primitive_rules_only = on;
    return o != NULL;
}

bool ad_primitive_rules_only(const kiln_graph *g) {
    const ad_options *o = ir_side_state(g, &ad_options_kind);
    return o && o->primitive_rules_only;
}

/* The composite whose result is id and whose interior nothing after it reads, or NULL. */
static const ir_composite *closed_composite(const ad_work *w, uint32_t id) {
    const kiln_graph *g = w->g;
    if (ad_primitive_rules_only(g)) return NULL;
    uint32_t n;
    const ir_composite *all = trace_composites(g, &n);
    for (uint32_t i = n; i-- > 0;) {
        const ir_composite *c = &all[i];
        if (c->out != id || c->first >= id) continue;
        bool closed = true;
        for (uint32_t k = c->first; closed && k < id; k++) closed = w->last_user[k] <= id;
        return closed ? c : NULL;
    }
    return NULL;
}

/* The direct rule of composite c: contributions to its live operands, and no cotangent
 * for its interior (its nodes' rules never run). */
static bool composite_backward(ad_work *w, const ir_composite *c) {
    kiln_graph *g = w->g;
    bool need[3];
    kiln_value out[3];
    for (int i = 0; i < 3; i++) need[i] = c->in[i] && (w->flags[c->in[i]] & LIVE);
    ad_composite_rule(g, c, w->ct[c->out], need, out);
    for (int i = 0; i < 3 && !g->status; i++) {
        if (!need[i] || !out[i].id) continue;
        if (check_contribution(w, c->out, c->in[i], out[i])) accumulate(w, c->in[i], out[i]);
    }
    for (uint32_t k = c->first; k < c->out; k++) {
        w->flags[k] &= (uint8_t)~LIVE;
        w->ct[k] = KN_NONE;
    }
    return g->status == KILN_STATUS_OK;
}

/* Zeros of node id's type (a broadcast scalar). */
static kiln_value zeros_of(kiln_graph *g, const char *op, uint32_t id) {
    kiln_dtype t = g->nodes[id].dtype;
    ir_shape s = g->nodes[id].shape;
    kiln_value z = trace_scalar(g, op, t, 0);
    return z.id && s.rank ? kiln_broadcast_in_dim(g, z, s.rank, s.dims, NULL) : z;
}

/* Checks what custom_vjp record r's bwd returned (count values in got): n cotangents, each
 * the invalid value (zero) or a value of g of its arg's type. Errors name kiln_custom_vjp
 * and, through the location the caller pushed, its line. */
static bool check_bwd(kiln_graph *g, const trace_custom_vjp *r, int count, const kiln_value *got) {
    const char *op = "kiln_custom_vjp";
    if (g->status) return false;
    if (count != r->n_in) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   count < 0 ? "the bwd function returned %d (an error of its own)"
                             : "the bwd function returned %d cotangents for %d args",
                   count, r->n_in);
        return false;
    }
    for (int i = 0; i < count; i++) {
        char what[48];
        snprintf(what, sizeof what, "the bwd function's cotangent %d", i);
        if (!got[i].id || !r->in[i]) continue;
        const ir_node *c = trace_node(g, op, got[i], what), *x = &g->nodes[r->in[i]];
        if (!c) return false;
        if (c->dtype == x->dtype && ir_shape_eq(&c->shape, &x->shape)) continue;
        char want[IR_TYPE_STR_MAX], have[IR_TYPE_STR_MAX];
        uint32_t both[2] = {got[i].id, r->in[i]};
        trace_fail_on(g, both, 2, c->dtype != x->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, op,
                      "the bwd function's cotangent %d is %s, but args[%d] is %s", i,
                      ir_type_str(c->dtype, &c->shape, have, sizeof have), i,
                      ir_type_str(x->dtype, &x->shape, want, sizeof want));
        return false;
    }
    return true;
}

/* Record ri's backward function in place of its forward nodes' rules: called with the
 * residuals and the outputs' cotangents (zeros for an output none reached), its results
 * added to the live args. A copy of the record is used: bwd may trace another call, which
 * moves the table. */
static bool custom_backward(ad_work *w, uint32_t ri) {
    kiln_graph *g = w->g;
    uint32_t n_cv;
    trace_custom_vjp r = trace_custom_vjps(g, &n_cv)[ri];
    kiln_value in[KILN_MAX_OUTPUTS], got[KILN_MAX_OUTPUTS];
    for (int k = 0; k < r.n_res; k++) in[k] = trace_value(g, r.out[r.n_out + k]);
    for (int j = 0; j < r.n_out && !g->status; j++) {
        uint32_t o = r.out[j];
        kiln_value c = (w->flags[o] & LIVE) ? w->ct[o] : KN_NONE;
        in[r.n_res + j] = c.id ? c : zeros_of(g, w->op, o);
    }
    if (g->status) return false;
    for (int i = 0; i < r.n_in; i++) got[i] = KN_NONE;
    kiln_graph_push_at(g, r.file, r.line);
    int count = r.bwd(g, r.n_res + r.n_out, in, r.user, got);
    bool ok = check_bwd(g, &r, count, got);
    for (int i = 0; ok && i < r.n_in; i++) {
        if (!got[i].id || !r.in[i] || !(w->flags[r.in[i]] & LIVE)) continue;
        accumulate(w, r.in[i], got[i]);
        ok = g->status == KILN_STATUS_OK;
    }
    kiln_graph_pop_at_status(g, g->status);
    return ok;
}

/* The custom_vjp calls whose latest output is id, each run if an output that answers to it is
 * live (an inner call that shares its output with the outer one is the outer one's part). */
static bool custom_calls(ad_work *w, uint32_t id) {
    uint32_t n_cv;
    for (uint32_t i = 0; i < w->n_cv; i++) {
        const trace_custom_vjp *r = &trace_custom_vjps(w->g, &n_cv)[i];
        uint32_t anchor = 0;
        bool run = false;
        for (int j = 0; j < r->n_out; j++) {
            uint32_t o = r->out[j];
            if (o > anchor) anchor = o;
            run |= (w->flags[o] & LIVE) && w->ct[o].id && cv_of(w, o) == i;
        }
        if (anchor == id && run && !custom_backward(w, i)) return false;
    }
    return true;
}

/* The cotangents of control node id's results (cts[i] for result i, {0, 0} for none: a
 * result nothing live reads), its own and its RESULT nodes'. */
static kiln_value *result_cts(ad_work *w, uint32_t id, uint32_t *count) {
    kiln_graph *g = w->g;
    uint32_t nr = ir_control_n_results(&g->nodes[id]);
    uint32_t *ids = host_calloc(g->ctx, nr, sizeof *ids);
    kiln_value *cts = host_calloc(g->ctx, nr, sizeof *cts);
    if (!ids || !cts) {
        if (ids) host_free(g->ctx, ids, nr * sizeof *ids);
        if (cts) host_free(g->ctx, cts, nr * sizeof *cts);
        trace_fail(g, KILN_STATUS_HOST_OOM, w->op,
                   "host allocation for the %u results of %%%u failed", nr, id);
        return NULL;
    }
    ir_control_results(g, id, ids);
    for (uint32_t i = 0; i < nr; i++)
        if (ids[i] && ids[i] < w->n && (w->flags[ids[i]] & LIVE)) cts[i] = w->ct[ids[i]];
    host_free(g->ctx, ids, nr * sizeof *ids);
    *count = nr;
    return cts;
}

/* Runs the rule of node id (a control node's with the cotangents of all its results) and
 * adds its contributions to its live inputs. */
static bool run_rule(ad_work *w, uint32_t id) {
    kiln_graph *g = w->g;
    ir_node n = g->nodes[id]; /* a copy: builders may move the node array */
    bool control = ir_ops[n.op].kind == IRK_CONTROL;
    ad_rule rule = ad_rule_for(n.op);
    if (!rule) return true; /* a wrt that is a parameter or NONDIFF: nothing above it */
    bool need[16];
    kiln_value stack_out[16], *cts = NULL;
    bool *needp = need;
    kiln_value *out = stack_out;
    uint32_t n_cts = 0;
    if (n.n_in > 16) { /* a wide concatenate or control node */
        needp = host_alloc(g->ctx, n.n_in * sizeof *needp);
        out = host_alloc(g->ctx, n.n_in * sizeof *out);
        if (!needp || !out) {
            if (needp) host_free(g->ctx, needp, n.n_in * sizeof *needp);
            if (out) host_free(g->ctx, out, n.n_in * sizeof *out);
            trace_fail(g, KILN_STATUS_HOST_OOM, w->op,
                       "host allocation for the %u inputs of %%%u failed", n.n_in, id);
            return false;
        }
    }
    const uint32_t *in = ir_in(&n);
    for (uint32_t k = 0; k < n.n_in; k++) {
        needp[k] = (w->flags[in[k]] & LIVE) != 0;
        out[k] = KN_NONE;
    }
    if (control && (cts = result_cts(w, id, &n_cts)))
        ad_control_vjp(g, id, &n, cts, needp, out);
    else if (!control)
        rule(g, id, &n, w->ct[id], needp, out);
    bool ok = g->status == KILN_STATUS_OK;
    for (uint32_t k = 0; ok && k < n.n_in; k++) {
        if (!needp[k] || !out[k].id) continue;
        if (!(ok = check_contribution(w, id, in[k], out[k]))) break;
        accumulate(w, in[k], out[k]);
        ok = g->status == KILN_STATUS_OK;
    }
    if (cts) host_free(g->ctx, cts, n_cts * sizeof *cts);
    if (needp != need) {
        host_free(g->ctx, needp, n.n_in * sizeof *needp);
        host_free(g->ctx, out, n.n_in * sizeof *out);
    }
    return ok;
}

/* Sweep 3: runs the rules of the live nodes from hi down to lo. A RESULT node's cotangent
 * stays on it: its control node's rule reads it (result_cts), as the control node comes
 * first in the graph and so later in this sweep. */
static bool backward(ad_work *w, uint32_t lo, uint32_t hi) {
    kiln_graph *g = w->g;
    for (uint32_t id = hi; id >= lo && id > 0; id--) {
        if ((w->flags[id] & CV_ANCHOR) && !custom_calls(w, id)) return false;
        if (w->flags[id] & CV_OUT) continue; /* its call's bwd took its cotangent */
        ir_kind kind = ir_ops[g->nodes[id].op].kind;
        if (kind == IRK_RESULT) continue;
        if (kind == IRK_CONTROL ? !(w->flags[id] & CTL_LIVE) && !w->ct[id].id
                                : !(w->flags[id] & LIVE) || !w->ct[id].id)
            continue;
        const ir_composite *c = kind == IRK_CONTROL ? NULL : closed_composite(w, id);
        if (c) {
            if (!composite_backward(w, c)) return false;
            continue;
        }
        if (!run_rule(w, id)) return false;
    }
    return true;
}

void ad_vjp_region(kiln_graph *g, uint32_t first, uint32_t last, kiln_value ct, int n,
                   const uint32_t *seeds, const bool *need, kiln_value *out) {
    ad_work w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < n; i++) out[i] = KN_NONE;
    if (work_init(&w, g, AD_OP)) {
        for (int i = 0; i < n; i++)
            if (need[i]) w.flags[seeds[i]] |= VARYING;
        for (uint32_t id = first; id <= last; id++) mark_varying(&w, id);
        if (w.flags[last] & VARYING) w.flags[last] |= LIVE;
        for (uint32_t id = last; id >= first; id--) mark_live(&w, id);
        if (w.flags[last] & LIVE) {
            accumulate(&w, last, ct);
            if (!g->status) backward(&w, first, last);
        }
        for (int i = 0; i < n && !g->status; i++)
            if (need[i]) out[i] = w.ct[seeds[i]];
    }
    work_free(&w);
}

/* Checks the wrt list: float values of this graph. */
static bool check_wrt(kiln_graph *g, const char *op, int n, const kiln_value *wrt,
                      kiln_value *grads) {
    if (n <= 0 || !wrt || !grads) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   n <= 0 ? "needs at least one value to differentiate with respect to (got %d)"
                          : "wrt and grads must not be NULL (n = %d)",
                   n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        char what[48];
        snprintf(what, sizeof what, "wrt[%d]", i);
        const ir_node *x = trace_node(g, op, wrt[i], what);
        if (!x) return false;
        if (!ir_dtype_is_float(x->dtype)) {
            trace_fail_on(g, &wrt[i].id, 1, KILN_STATUS_DTYPE, op,
                          "wrt[%d] is %s: only float values (f32, f64, bf16, f16) have gradients",
                          i, kiln_dtype_name(x->dtype));
            return false;
        }
    }
    return true;
}

/* The shared core: seeds[i] is the cotangent of outs[i]; nodes from first_new on (the
 * seed kiln_grad made, and all the transform appends) are the backward pass. */
static kiln_status transform(kiln_graph *g, const char *op, uint32_t first_new, int n_out,
                             const kiln_value *outs, const kiln_value *seeds, int n_wrt,
                             const kiln_value *wrt, kiln_value *grads) {
    ad_work w;
    memset(&w, 0, sizeof w);
    if (!work_init(&w, g, op)) {
        work_free(&w);
        return g->status;
    }
    uint32_t wid[KILN_MAX_OUTPUTS], oid[KILN_MAX_OUTPUTS], *wids = wid, *oids = oid;
    size_t wbytes = (size_t)n_wrt * sizeof *wids, obytes = (size_t)n_out * sizeof *oids;
    if (n_wrt > KILN_MAX_OUTPUTS) wids = host_alloc(g->ctx, wbytes);
    if (n_out > KILN_MAX_OUTPUTS) oids = host_alloc(g->ctx, obytes);
    if (!wids || !oids) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d values failed",
                   n_wrt + n_out);
        goto done;
    }
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int i = 0; i < n_wrt; i++) {
        wids[i] = wrt[i].id;
        if (wids[i] < lo) lo = wids[i];
    }
    for (int i = 0; i < n_out; i++) {
        oids[i] = outs[i].id;
        if (oids[i] > hi) hi = oids[i];
    }
    if (lo <= hi) {
        mark(&w, wids, n_wrt, oids, n_out, lo, hi);
        for (int i = 0; i < n_out && !g->status; i++)
            if (w.flags[oids[i]] & LIVE) accumulate(&w, oids[i], seeds[i]);
        if (!g->status) backward(&w, lo, hi);
    }
    for (int i = 0; i < n_wrt && !g->status; i++) {
        kiln_value c = w.ct[wids[i]];
        if (!c.id) { /* the outputs do not depend on it: zeros, as a broadcast scalar */
            const ir_node *x = &g->nodes[wids[i]];
            ir_shape s = x->shape;
            kiln_dtype t = x->dtype;
            c = trace_scalar(g, op, t, 0);
            if (c.id && s.rank) c = kiln_broadcast_in_dim(g, c, s.rank, s.dims, NULL);
        }
        grads[i] = c;
    }
    for (uint32_t id = first_new; id < g->n_nodes; id++) g->nodes[id].backward = true;
    for (int i = 0; i < n_wrt && !g->status; i++) {
        if (g->nodes[wrt[i].id].op == IR_PARAMETER)
            trace_set_role(g, op, wrt[i], TRACE_ROLE_PARAMETER);
        trace_set_role(g, op, grads[i], TRACE_ROLE_GRADIENT);
    }
done:
    if (wids && wids != wid) host_free(g->ctx, wids, wbytes);
    if (oids && oids != oid) host_free(g->ctx, oids, obytes);
    work_free(&w);
    if (g->status)
        for (int i = 0; i < n_wrt; i++) grads[i] = KN_NONE;
    return g->status;
}

kiln_status kiln_grad(kiln_graph *g, kiln_value loss, int n, const kiln_value *wrt,
                      kiln_value *grads) {
    const char *op = "kiln_grad";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (grads && n > 0)
        for (int i = 0; i < n; i++) grads[i] = KN_NONE;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    const ir_node *l = trace_node(g, op, loss, "the loss");
    if (!l) return g->status;
    if (!ir_dtype_is_float(l->dtype) || l->shape.rank != 0) {
        trace_fail_on(g, &loss.id, 1,
                      ir_dtype_is_float(l->dtype) ? KILN_STATUS_SHAPE : KILN_STATUS_DTYPE, op,
                      "the loss must be a float scalar (f32, f64, bf16 or f16; rank 0)");
        return g->status;
    }
    if (!check_wrt(g, op, n, wrt, grads)) return g->status;
    uint32_t first_new = g->n_nodes;
    kiln_value one = trace_scalar(g, op, l->dtype, 1);
    if (!one.id) return g->status;
    return transform(g, op, first_new, 1, &loss, &one, n, wrt, grads);
}

kiln_status kiln_vjp(kiln_graph *g, int n_out, const kiln_value *outs, const kiln_value *cotangents,
                     int n_wrt, const kiln_value *wrt, kiln_value *grads) {
    const char *op = "kiln_vjp";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (grads && n_wrt > 0)
        for (int i = 0; i < n_wrt; i++) grads[i] = KN_NONE;
    if (!trace_ready(g, op)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if (n_out <= 0 || !outs || !cotangents) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   n_out <= 0 ? "needs at least one output (got %d)"
                              : "outs and cotangents must not be NULL (n_out = %d)",
                   n_out);
        return g->status;
    }
    int n_float = 0;
    for (int i = 0; i < n_out; i++) {
        char what[48];
        snprintf(what, sizeof what, "outs[%d]", i);
        const ir_node *o = trace_node(g, op, outs[i], what);
        if (!o) return g->status;
        /* an integer or bool output carries no gradient (JAX's float0 cotangent): its
         * cotangent may be KILN_VALUE_NONE and is not read */
        bool flt = ir_dtype_is_float(o->dtype);
        n_float += flt;
        if (!flt && !cotangents[i].id) continue;
        snprintf(what, sizeof what, "cotangents[%d]", i);
        const ir_node *c = trace_node(g, op, cotangents[i], what);
        if (!c) return g->status;
        uint32_t both[2] = {outs[i].id, cotangents[i].id};
        if (c->dtype != o->dtype || !ir_shape_eq(&c->shape, &o->shape)) {
            trace_fail_on(g, both, 2, c->dtype != o->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE,
                          op, "cotangents[%d] must have the type of outs[%d]", i, i);
            return g->status;
        }
    }
    if (!check_wrt(g, op, n_wrt, wrt, grads)) return g->status;
    if (n_float == n_out)
        return transform(g, op, g->n_nodes, n_out, outs, cotangents, n_wrt, wrt, grads);
    /* the float outputs alone */
    size_t bytes = (size_t)(n_float ? n_float : 1) * sizeof(kiln_value);
    kiln_value *fo = host_alloc(g->ctx, bytes), *fc = host_alloc(g->ctx, bytes);
    if (!fo || !fc) {
        host_free(g->ctx, fo, bytes), host_free(g->ctx, fc, bytes);
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d outputs failed", n_out);
        return g->status;
    }
    int k = 0;
    for (int i = 0; i < n_out; i++)
        if (ir_dtype_is_float(g->nodes[outs[i].id].dtype)) fo[k] = outs[i], fc[k++] = cotangents[i];
    kiln_status s = transform(g, op, g->n_nodes, n_float, fo, fc, n_wrt, wrt, grads);
    host_free(g->ctx, fo, bytes), host_free(g->ctx, fc, bytes);
    return s;
}
