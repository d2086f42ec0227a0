/* control_jvp.c — forward mode through the control ops (ir.h, "ir_region"), as jax.jvp
 * goes through lax.while_loop, lax.scan and lax.cond: the tangent of a loop is a loop of
 * the same kind that carries the primal values and their tangents side by side, whose body
 * is the primal body followed by its JVP (kiln_jvp on the body graph, which recurses into
 * nested control ops); the tangent of a cond is a cond on the same index whose branches are
 * the primal branches followed by their JVPs.
 *
 * kiln appends rather than rewrites (autodiff.h), and a new node cannot feed an older one,
 * so the new loop recomputes the primal values it differentiates: the original control
 * node keeps computing the results the program already reads (DCE drops it when nothing
 * does, as in a jvp of a function whose primal outputs are unused). So forward mode
 * through a loop runs its primal body twice; memory stays O(carries), as JAX's jvp of a
 * loop keeps it (no per-iteration residuals are saved).
 *
 * Which values get a tangent: every float carry of a loop (a carry whose initial tangent is
 * zero gets zeros: the body may still give it one, and finding out would be a fixed point
 * over the body, which JAX does and which saves a little work only); a scanned array, a
 * cond operand or a capture only where its tangent is not a symbolic zero. Integer and bool
 * values never carry one. A while loop's condition reads only the primal carries. */
#include "autodiff.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>

static kiln_value val(const kiln_graph *g, uint32_t id) {
    return trace_value(g, id);
}

/* Zeros of the type of value id of g (a broadcast scalar). */
static kiln_value zeros_of(kiln_graph *g, uint32_t id) {
    kiln_dtype t = g->nodes[id].dtype;
    ir_shape s = g->nodes[id].shape;
    kiln_value z = trace_scalar(g, AD_JVP_OP, t, 0);
    if (!z.id || !s.rank) return z;
    return kiln_broadcast_in_dim(g, z, s.rank, s.dims, NULL);
}

static bool is_float(const kiln_graph *g, uint32_t id) {
    return ir_dtype_is_float(g->nodes[id].dtype);
}

/* What a loop body or branch of the tangent node needs while it is traced. */
typedef struct jvp_ctl {
    kiln_graph *g;            /* the outer graph */
    const ir_node *n;         /* the control node (a copy) */
    const kiln_value *t;      /* its inputs' tangents ({0, 0}: zero) */
    int np;                   /* the primal values passed per iteration: carries (+ slices) */
    int tp[KILN_MAX_OUTPUTS]; /* which of them have a tangent parameter, in order */
    int ntp;
    int branch; /* cond: the branch traced next (kiln_switch traces 0, 1, ...) */
} jvp_ctl;

/* Traces sub-graph k on s: the primal parameters in[0..np) (their tangents follow, one per
 * tp entry), the captures from the outer graph with their tangents captured too, then the
 * JVP of the copy. fo receives the primal outputs, to the tangents of the float ones
 * (KN_NONE elsewhere). False after an error on s. */
static bool trace_with_jvp(kiln_graph *s, const jvp_ctl *c, uint32_t k, const kiln_value *in,
                           kiln_value *fo, kiln_value *to) {
    const ir_node *n = c->n;
    const kiln_graph *sub = n->region->graphs[k];
    uint32_t ncap = ir_control_n_captures(n, k), base = ir_control_capture_base(n, k);
    uint32_t np = (uint32_t)c->np, all = np + ncap;
    kiln_value *args = host_calloc(s->ctx, (size_t)all * 3 + 1, sizeof *args);
    if (!args)
        return trace_fail(s, KILN_STATUS_HOST_OOM, AD_JVP_OP, "host allocation failed"), false;
    kiln_value *prim = args + all, *tan = prim + all;
    int nw = 0;
    for (uint32_t j = 0; j < np; j++) args[j] = in[j];
    for (int i = 0; i < c->ntp; i++) prim[nw] = in[c->tp[i]], tan[nw++] = in[(int)np + i];
    for (uint32_t q = 0; q < ncap && !s->status; q++) {
        uint32_t outer = ir_in(n)[base + q];
        args[np + q] = kiln_capture(s, val(c->g, outer));
        kiln_value tq = c->t[base + q];
        if (tq.id && is_float(c->g, outer))
            prim[nw] = args[np + q], tan[nw++] = kiln_capture(s, tq);
    }
    if (!s->status) trace_inline(s, AD_JVP_OP, sub, args, fo);
    int no = (int)sub->n_outputs;
    for (int j = 0; j < no; j++) to[j] = KN_NONE;
    if (!s->status && nw) kiln_jvp(s, no, fo, nw, prim, tan, to);
    host_free(s->ctx, args, ((size_t)all * 3 + 1) * sizeof *args);
    for (int j = 0; j < no && !s->status; j++) /* float outputs nothing reached: zeros */
        if (!to[j].id && ir_dtype_is_float(s->nodes[fo[j].id].dtype)) to[j] = zeros_of(s, fo[j].id);
    return !s->status;
}

/* The outputs of a body or branch from its primal outputs fo and their tangents to: the
 * first `split` primal (a loop's carries, a branch's results), their float ones' tangents,
 * then the rest primal (a scan's ys) and their float ones' tangents. */
static int emit(const kiln_graph *s, int no, const kiln_value *fo, const kiln_value *to, int split,
                kiln_value *outs) {
    int r = 0;
    for (int j = 0; j < split; j++) outs[r++] = fo[j];
    for (int j = 0; j < split; j++)
        if (ir_dtype_is_float(s->nodes[fo[j].id].dtype)) outs[r++] = to[j];
    for (int j = split; j < no; j++) outs[r++] = fo[j];
    for (int j = split; j < no; j++)
        if (ir_dtype_is_float(s->nodes[fo[j].id].dtype)) outs[r++] = to[j];
    return r;
}

/* A loop body's parameters: the primal carries, their tangents, the primal slices, their
 * tangents. trace_with_jvp wants the primal values first: reorder. */
static int loop_body(kiln_graph *s, int n_in, const kiln_value *in, void *user, kiln_value *outs,
                     uint32_t k, int nc) {
    (void)n_in;
    const jvp_ctl *c = user;
    kiln_value pin[2 * KILN_MAX_OUTPUTS], fo[KILN_MAX_OUTPUTS], to[KILN_MAX_OUTPUTS];
    int ntc = 0;
    while (ntc < c->ntp && c->tp[ntc] < nc) ntc++;
    int r = 0;
    for (int j = 0; j < nc; j++) pin[r++] = in[j];
    for (int j = nc; j < c->np; j++) pin[r++] = in[ntc + j];
    for (int i = 0; i < ntc; i++) pin[r++] = in[nc + i];
    for (int i = ntc; i < c->ntp; i++) pin[r++] = in[c->np + i];
    if (!trace_with_jvp(s, c, k, pin, fo, to)) return -1;
    return emit(s, (int)c->n->region->graphs[k]->n_outputs, fo, to, nc, outs);
}

static int scan_body(kiln_graph *s, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    const jvp_ctl *c = user;
    return loop_body(s, n_in, in, user, outs, 0, (int)c->n->a.ctl.n_carry);
}

static int while_body(kiln_graph *s, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    const jvp_ctl *c = user;
    return loop_body(s, n_in, in, user, outs, 1, (int)c->n->a.ctl.n_carry);
}

/* The condition reads the primal carries and its own captures only. */
static int while_cond(kiln_graph *s, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const jvp_ctl *c = user;
    const ir_node *n = c->n;
    const kiln_graph *cg = n->region->graphs[0];
    kiln_value args[2 * KILN_MAX_OUTPUTS + 64], *a = args;
    if (cg->n_params > sizeof args / sizeof *args &&
        !(a = host_calloc(s->ctx, cg->n_params, sizeof *a)))
        return trace_fail(s, KILN_STATUS_HOST_OOM, AD_JVP_OP, "host allocation failed"), -1;
    uint32_t nc = (uint32_t)n->a.ctl.n_carry, base = ir_control_capture_base(n, 0);
    for (uint32_t j = 0; j < nc; j++) a[j] = in[j];
    for (uint32_t q = 0; q < ir_control_n_captures(n, 0) && !s->status; q++)
        a[nc + q] = kiln_capture(s, val(c->g, ir_in(n)[base + q]));
    if (!s->status) trace_inline(s, AD_JVP_OP, cg, a, outs);
    if (a != args) host_free(s->ctx, a, cg->n_params * sizeof *a);
    return s->status ? -1 : 1;
}

static int cond_branch(kiln_graph *s, int n_in, const kiln_value *in, void *user,
                       kiln_value *outs) {
    (void)n_in;
    jvp_ctl *c = user;
    uint32_t k = (uint32_t)c->branch++;
    kiln_value fo[KILN_MAX_OUTPUTS], to[KILN_MAX_OUTPUTS];
    if (!trace_with_jvp(s, c, k, in, fo, to)) return -1;
    int no = (int)c->n->region->graphs[k]->n_outputs;
    return emit(s, no, fo, to, no, outs);
}

static bool too_many(kiln_graph *g, uint32_t id, int count) {
    if (count <= KILN_MAX_OUTPUTS) return false;
    trace_fail_on(g, &id, 1, KILN_STATUS_UNIMPLEMENTED, AD_JVP_OP,
                  "the JVP of %s %%%u needs %d carried or passed values with their tangents; a "
                  "loop or branch takes at most %d",
                  ir_ops[g->nodes[id].op].name, id, count, KILN_MAX_OUTPUTS);
    return true;
}

/* Fills c->tp with the passed values that get a tangent: float carries [0, nc) always,
 * then the float values in [nc, np) whose tangent is not zero; their tangents go to tin. */
static void choose(jvp_ctl *c, int nc, int np, int first, kiln_value *tin) {
    const uint32_t *in = ir_in(c->n);
    c->ntp = 0;
    for (int j = 0; j < np && c->ntp < KILN_MAX_OUTPUTS; j++) {
        uint32_t v = in[first + j];
        if (!is_float(c->g, v) || (j >= nc && !c->t[first + j].id)) continue;
        kiln_value t = c->t[first + j];
        tin[c->ntp] = t.id ? t : zeros_of(c->g, v);
        c->tp[c->ntp++] = j;
    }
}

/* Maps the new node's outputs back to tangents of the old node's results: result i of the
 * old one, when float, is output i's tangent in the layout emit() wrote. */
static void scatter_results(const jvp_ctl *c, int split, int n_res, const kiln_value *outs,
                            kiln_value *res_t) {
    int r = split;
    for (uint32_t i = 0; i < (uint32_t)n_res; i++) {
        kiln_dtype t;
        ir_shape sh;
        ir_control_result_type(c->n, i, &t, &sh);
        if ((int)i == split) r += n_res - split; /* past the primal ys */
        res_t[i] = ir_dtype_is_float(t) ? outs[r++] : KN_NONE;
    }
}

static void jvp_scan(jvp_ctl *c, uint32_t id, kiln_value *res_t) {
    kiln_graph *g = c->g;
    const ir_node *n = c->n;
    int nc = n->a.ctl.n_carry, nx = n->a.ctl.n_xs, n_res = (int)ir_control_n_results(n);
    kiln_value tin[KILN_MAX_OUTPUTS], init[KILN_MAX_OUTPUTS], xs[KILN_MAX_OUTPUTS];
    kiln_value outs[KILN_MAX_OUTPUTS];
    c->np = nc + nx;
    choose(c, nc, nc + nx, 0, tin);
    int ntc = 0;
    while (ntc < c->ntp && c->tp[ntc] < nc) ntc++;
    int n_float_res = 0;
    for (int i = 0; i < n_res; i++) {
        kiln_dtype t;
        ir_shape sh;
        ir_control_result_type(n, (uint32_t)i, &t, &sh);
        n_float_res += ir_dtype_is_float(t);
    }
    if (too_many(g, id, nc + ntc) || too_many(g, id, nx + c->ntp - ntc) ||
        too_many(g, id, n_res + n_float_res))
        return;
    int ni = 0, nxs = 0, n_outs = 0;
    for (int j = 0; j < nc; j++) init[ni++] = val(g, ir_in(n)[j]);
    for (int i = 0; i < ntc; i++) init[ni++] = tin[i];
    for (int j = 0; j < nx; j++) xs[nxs++] = val(g, ir_in(n)[nc + j]);
    for (int i = ntc; i < c->ntp; i++) xs[nxs++] = tin[i];
    kiln_scan_options o = {.length = n->a.ctl.length,
                           .reverse = n->a.ctl.reverse,
                           .checkpoint_body = n->a.ctl.checkpoint};
    kiln_scan(g, scan_body, c, ni, init, nxs, xs, &o, &n_outs, outs);
    if (!g->status) scatter_results(c, nc, n_res, outs, res_t);
}

static void jvp_while(jvp_ctl *c, uint32_t id, kiln_value *res_t) {
    kiln_graph *g = c->g;
    const ir_node *n = c->n;
    int nc = n->a.ctl.n_carry;
    kiln_value tin[KILN_MAX_OUTPUTS], init[KILN_MAX_OUTPUTS], outs[KILN_MAX_OUTPUTS];
    c->np = nc;
    choose(c, nc, nc, 0, tin);
    /* the captures of the condition have no say in the tangents: only the body's are read */
    if (too_many(g, id, nc + c->ntp)) return;
    int ni = 0;
    for (int j = 0; j < nc; j++) init[ni++] = val(g, ir_in(n)[j]);
    for (int i = 0; i < c->ntp; i++) init[ni++] = tin[i];
    /* while_loop's kiln_fn pair shares user: the condition ignores the tangent carries */
    kiln_while_loop(g, while_cond, while_body, c, ni, init, outs);
    if (!g->status) scatter_results(c, nc, nc, outs, res_t);
}

static void jvp_cond(jvp_ctl *c, uint32_t id, kiln_value *res_t) {
    kiln_graph *g = c->g;
    const ir_node *n = c->n;
    int np = n->a.ctl.n_carry, n_res = (int)ir_control_n_results(n), nb = (int)n->region->n_graphs;
    kiln_value tin[KILN_MAX_OUTPUTS], ops[KILN_MAX_OUTPUTS], outs[KILN_MAX_OUTPUTS];
    c->np = np;
    choose(c, 0, np, 1, tin);
    if (too_many(g, id, np + c->ntp) || too_many(g, id, 2 * n_res)) return;
    int no = 0, n_outs = 0;
    for (int j = 0; j < np; j++) ops[no++] = val(g, ir_in(n)[1 + j]);
    for (int i = 0; i < c->ntp; i++) ops[no++] = tin[i];
    kiln_fn fns[KILN_MAX_OUTPUTS];
    for (int k = 0; k < nb; k++) fns[k] = cond_branch;
    c->branch = 0;
    kiln_switch(g, val(g, ir_in(n)[0]), nb, fns, c, no, ops, &n_outs, outs);
    if (!g->status) scatter_results(c, n_res, n_res, outs, res_t);
}

void ad_control_jvp(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *t,
                    kiln_value *res_t) {
    jvp_ctl c;
    memset(&c, 0, sizeof c);
    c.g = g, c.n = n, c.t = t;
    for (uint32_t i = 0; i < ir_control_n_results(n); i++) res_t[i] = KN_NONE;
    ir_region *keep = ir_region_ref(n->region); /* the sub-graphs outlive any swap */
    switch (n->op) {
    case IR_SCAN: jvp_scan(&c, id, res_t); break;
    case IR_WHILE: jvp_while(&c, id, res_t); break;
    case IR_COND: jvp_cond(&c, id, res_t); break;
    default:
        trace_fail(g, KILN_STATUS_INTERNAL, AD_JVP_OP, "%s is not a control op",
                   ir_ops[n->op].name);
    }
    ir_region_unref(g->ctx, keep);
}
