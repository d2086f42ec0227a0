/* jvp.c — kiln_jvp: forward mode appended to the graph being traced (jax.jvp, with the
 * primal computation being the nodes already there, as kiln_vjp's is).
 *
 * Two sweeps over node ids, which are a topological order:
 *
 *  1. backward, from the outputs down to the earliest primal: a node is "needed" when an
 *     output is it or reads it through float nodes with a rule that are not primals (a
 *     primal's tangent is the caller's, whatever its own inputs' are; an integer or NONDIFF
 *     node's is zero, whatever its inputs' are), so no tangent is built for a value the
 *     outputs' tangents do not read (argmax's float interior, a select's predicate);
 *  2. forward, from the earliest primal up to the latest output: each needed float node
 *     with a rule (jvp_rules.c) and at least one input with a tangent gets its tangent from
 *     that rule. A result of kiln_relu (a composite the tracer recorded) gets select(x > 0,
 *     t, 0), jax.nn.relu's JVP, rather than max's tie rule at 0.
 *
 * Symbolic zeros: a tangent is {0, 0} until something gives it one, as JAX's ad.Zero: an
 * integer or bool value, the result of a NONDIFF op (stop_gradient, compare, random, ...),
 * a source that is not a primal, or a node none of whose inputs has a tangent gets none,
 * and no node is built for it. Only an output's tangent is made concrete, as zeros of a
 * broadcast scalar (which fusion inlines), and only for a float output; an integer or bool
 * output gets the invalid value (JAX's float0).
 *
 * The transform only appends: ids below the first new node keep their meaning, and rules
 * read forward values rather than recompute them. Errors are the builder's (sticky, first
 * one kept, the message names kiln_jvp and the user's line). */
#include "autodiff.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>

enum { SEED = 1, NEEDED = 2 };

/* Host memory of one sweep: a flag byte and a tangent per node id below n. */
typedef struct jvp_work {
    kiln_graph *g;
    uint32_t n;
    uint8_t *flags;  /* [n] */
    kiln_value *tan; /* [n]: the tangent, {0, 0} for a symbolic zero */
} jvp_work;

static bool work_init(jvp_work *w, kiln_graph *g, uint32_t n) {
    w->g = g;
    w->n = n;
    w->flags = host_alloc(g->ctx, n);
    w->tan = host_alloc(g->ctx, (size_t)n * sizeof *w->tan);
    if (!w->flags || !w->tan) {
        trace_fail(g, KILN_STATUS_HOST_OOM, AD_JVP_OP,
                   "host allocation of the work arrays for %u nodes failed", n);
        return false;
    }
    memset(w->flags, 0, n);
    memset(w->tan, 0, (size_t)n * sizeof *w->tan);
    return true;
}

static void work_free(jvp_work *w) {
    kiln_context *ctx = w->g->ctx;
    if (w->flags) host_free(ctx, w->flags, w->n);
    if (w->tan) host_free(ctx, w->tan, (size_t)w->n * sizeof *w->tan);
}

/* Seeds value id with tangent t ({0, 0}: a zero); a value seeded twice gets their sum. */
static void seed(jvp_work *w, uint32_t id, kiln_value t) {
    w->flags[id] |= SEED;
    if (!t.id || !ir_dtype_is_float(w->g->nodes[id].dtype)) return;
    w->tan[id] = w->tan[id].id ? kiln_add(w->g, w->tan[id], t) : t;
}

/* Whether node n carries a tangent: a float value, or a control node with a float result
 * (a fori_loop's result 0 is its i32 index, its carries float). */
static bool differentiable(const ir_node *n) {
    if (ir_dtype_is_float(n->dtype)) return true;
    if (ir_ops[n->op].kind != IRK_CONTROL) return false;
    for (uint32_t i = 0; i < ir_control_n_results(n); i++) {
        kiln_dtype t;
        ir_shape s;
        ir_control_result_type(n, i, &t, &s);
        if (ir_dtype_is_float(t)) return true;
    }
    return false;
}

/* Sweep 1: from the needed nodes the caller marked (the outputs) down to lo, the nodes in
 * lo..hi whose tangent they read. */
static void mark_needed(jvp_work *w, uint32_t lo, uint32_t hi) {
    for (uint32_t id = hi; id >= lo && id > 0; id--) {
        if ((w->flags[id] & (NEEDED | SEED)) != NEEDED) continue;
        const ir_node *n = &w->g->nodes[id];
        if (!differentiable(n) || !ad_jvp_rule_for(n->op)) continue; /* always 0 */
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) w->flags[in[k]] |= NEEDED;
    }
}

/* The operand of the kiln_relu whose result is id, or 0. */
static uint32_t relu_operand(const kiln_graph *g, uint32_t id) {
    if (ad_primitive_rules_only(g)) return 0;
    uint32_t n;
    const ir_composite *all = trace_composites(g, &n);
    for (uint32_t i = n; i-- > 0;)
        if (all[i].out == id) return all[i].kind == IR_COMP_RELU ? all[i].in[0] : 0;
    return 0;
}

/* jax.nn.relu's JVP: select(x > 0, t, 0), so 0 at 0. */
static kiln_value relu_tangent(kiln_graph *g, uint32_t x, kiln_value t) {
    if (!t.id) return KN_NONE;
    ir_shape s = g->nodes[x].shape;
    kiln_value zero = trace_scalar(g, AD_JVP_OP, g->nodes[x].dtype, 0);
    kiln_value zeros = s.rank ? kiln_broadcast_in_dim(g, zero, s.rank, s.dims, NULL) : zero;
    kiln_value pos = kiln_compare(g, trace_value(g, x), zeros, KILN_CMP_GT);
    return kiln_select(g, pos, t, zeros);
}

/* A rule that gave a tangent of another type than its result is a kiln bug, reported as
 * such rather than left to confuse a later op. */
static bool check_tangent(kiln_graph *g, uint32_t id, kiln_value t) {
    const ir_node *y = &g->nodes[id], *v = &g->nodes[t.id];
    if (v->dtype == y->dtype && ir_shape_eq(&v->shape, &y->shape)) return true;
    char want[IR_TYPE_STR_MAX], got[IR_TYPE_STR_MAX];
    trace_fail(g, KILN_STATUS_INTERNAL, AD_JVP_OP,
               "the JVP rule of %s (%%%u) gave %s for a result of type %s", ir_ops[y->op].name, id,
               ir_type_str(v->dtype, &v->shape, got, sizeof got),
               ir_type_str(y->dtype, &y->shape, want, sizeof want));
    return false;
}

/* A tangent through a kiln_custom_vjp's forward function is refused, as jax.jvp refuses a
 * custom_vjp function: the user gave its reverse rule only, and differentiating its ops
 * would silently ignore that rule (a straight-through estimator's tangent would be 0).
 * False after recording the error. */
static bool custom_vjp_free(kiln_graph *g, uint32_t id) {
    uint32_t n = 0;
    const trace_custom_vjp *cv = trace_custom_vjps(g, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (id < cv[i].first || id > cv[i].last) continue;
        trace_fail(g, KILN_STATUS_UNIMPLEMENTED, AD_JVP_OP,
                   "forward mode through the kiln_custom_vjp called at %s:%d: it has a reverse "
                   "rule only (jax.jvp refuses a custom_vjp function too)",
                   cv[i].file ? kn_path_base(cv[i].file) : "?", cv[i].line);
        return false;
    }
    return true;
}

/* A control node's tangents (control_jvp.c): one per result, given to the node (result 0)
 * and to the RESULT nodes that hold the others, unless one of those is a primal itself. */
static void control_tangents(jvp_work *w, uint32_t id, const ir_node *n, const kiln_value *t) {
    kiln_graph *g = w->g;
    uint32_t nr = ir_control_n_results(n);
    kiln_value *rt = host_calloc(g->ctx, nr, sizeof *rt);
    uint32_t *ids = host_calloc(g->ctx, nr, sizeof *ids);
    if (!rt || !ids) {
        trace_fail(g, KILN_STATUS_HOST_OOM, AD_JVP_OP,
                   "host allocation for the %u results of %%%u failed", nr, id);
    } else {
        ad_control_jvp(g, id, n, t, rt);
        ir_control_results(g, id, ids);
        for (uint32_t i = 0; i < nr && !g->status; i++) {
            uint32_t r = ids[i];
            if (r && r < w->n && rt[i].id && !(w->flags[r] & SEED) && check_tangent(g, r, rt[i]))
                w->tan[r] = rt[i];
        }
    }
    if (rt) host_free(g->ctx, rt, nr * sizeof *rt);
    if (ids) host_free(g->ctx, ids, nr * sizeof *ids);
}

/* The tangent of node id from its inputs' (sweep 2, one node). */
static bool step(jvp_work *w, uint32_t id) {
    kiln_graph *g = w->g;
    ir_node n = g->nodes[id];           /* a copy: builders may move the node array */
    if (n.op == IR_RESULT) return true; /* its control node gave it its tangent */
    ad_jvp_rule rule = ad_jvp_rule_for(n.op);
    const uint32_t *in = ir_in(&n);
    bool reached = false; /* a tangent reaches it, whether or not its op has a rule */
    for (uint32_t k = 0; k < n.n_in; k++) reached |= w->tan[in[k]].id != 0;
    if (reached && !custom_vjp_free(g, id)) return false;
    if (!rule || !differentiable(&n)) return true; /* a symbolic zero */
    kiln_value stack[16], *t = stack;
    if (n.n_in > 16 && !(t = host_alloc(g->ctx, n.n_in * sizeof *t))) {
        trace_fail(g, KILN_STATUS_HOST_OOM, AD_JVP_OP,
                   "host allocation for the %u inputs of %%%u failed", n.n_in, id);
        return false;
    }
    bool any = false;
    for (uint32_t k = 0; k < n.n_in; k++) any |= (t[k] = w->tan[in[k]]).id != 0;
    if (any && ir_ops[n.op].kind == IRK_CONTROL) {
        control_tangents(w, id, &n, t);
    } else if (any) {
        uint32_t x = relu_operand(g, id);
        kiln_value r = x ? relu_tangent(g, x, w->tan[x]) : rule(g, id, &n, t);
        if (!g->status && r.id && check_tangent(g, id, r)) w->tan[id] = r;
    }
    if (t != stack) host_free(g->ctx, t, n.n_in * sizeof *t);
    return g->status == KILN_STATUS_OK;
}

/* Sweep 2 over lo..hi. */
static bool sweep(jvp_work *w, uint32_t lo, uint32_t hi) {
    for (uint32_t id = lo; id <= hi && id > 0; id++)
        if ((w->flags[id] & (NEEDED | SEED)) == NEEDED && !step(w, id)) return false;
    return true;
}

kiln_value ad_jvp_region(kiln_graph *g, uint32_t first, uint32_t last, int n, const uint32_t *seeds,
                         const kiln_value *tangents) {
    jvp_work w;
    memset(&w, 0, sizeof w);
    kiln_value r = KN_NONE;
    if (work_init(&w, g, last + 1)) {
        for (int i = 0; i < n && !g->status; i++) seed(&w, seeds[i], tangents[i]);
        w.flags[last] |= NEEDED;
        mark_needed(&w, first, last);
        if (!g->status && sweep(&w, first, last)) r = w.tan[last];
    }
    work_free(&w);
    return r;
}

/* Checks the arguments: values of g; each tangent the invalid value (a zero) or of its
 * primal's dtype and shape. */
static bool check_args(kiln_graph *g, int n_out, const kiln_value *outs, int n_in,
                       const kiln_value *primals, const kiln_value *tangents,
                       const kiln_value *tangents_out) {
    const char *op = AD_JVP_OP;
    if (n_out <= 0 || n_in <= 0) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "needs at least one output and one primal (got n_out = %d, n_in = %d)", n_out,
                   n_in);
        return false;
    }
    if (!outs || !primals || !tangents || !tangents_out) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "outs, primals_in, tangents_in and tangents_out must not be NULL");
        return false;
    }
    char what[48];
    for (int j = 0; j < n_out; j++) {
        snprintf(what, sizeof what, "outs[%d]", j);
        if (!trace_node(g, op, outs[j], what)) return false;
    }
    for (int i = 0; i < n_in; i++) {
        snprintf(what, sizeof what, "primals_in[%d]", i);
        const ir_node *p = trace_node(g, op, primals[i], what);
        if (!p) return false;
        if (!tangents[i].id && !tangents[i].graph) continue; /* a symbolic zero */
        snprintf(what, sizeof what, "tangents_in[%d]", i);
        const ir_node *t = trace_node(g, op, tangents[i], what);
        if (!t) return false;
        p = &g->nodes[primals[i].id];
        if (t->dtype == p->dtype && ir_shape_eq(&t->shape, &p->shape)) continue;
        char pt[IR_TYPE_STR_MAX], tt[IR_TYPE_STR_MAX];
        uint32_t both[2] = {primals[i].id, tangents[i].id};
        trace_fail_on(g, both, 2, t->dtype != p->dtype ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, op,
                      "tangents_in[%d] is %s but primals_in[%d] is %s: a tangent has its primal's "
                      "dtype and shape",
                      i, ir_type_str(t->dtype, &t->shape, tt, sizeof tt), i,
                      ir_type_str(p->dtype, &p->shape, pt, sizeof pt));
        return false;
    }
    return true;
}

/* tangents_out[j]: the tangent of outs[j], zeros when it has none (float), or the invalid
 * value (integer, bool). */
static void results(jvp_work *w, int n_out, const kiln_value *outs, kiln_value *tangents_out) {
    kiln_graph *g = w->g;
    for (int j = 0; j < n_out && !g->status; j++) {
        const ir_node *o = &g->nodes[outs[j].id];
        kiln_value t = w->tan[outs[j].id];
        if (!t.id && ir_dtype_is_float(o->dtype)) {
            ir_shape s = o->shape;
            t = trace_scalar(g, AD_JVP_OP, o->dtype, 0);
            if (t.id && s.rank) t = kiln_broadcast_in_dim(g, t, s.rank, s.dims, NULL);
        }
        tangents_out[j] = t;
    }
}

kiln_status kiln_jvp(kiln_graph *g, int n_out, const kiln_value *outs, int n_in,
                     const kiln_value *primals_in, const kiln_value *tangents_in,
                     kiln_value *tangents_out) {
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (tangents_out && n_out > 0)
        for (int j = 0; j < n_out; j++) tangents_out[j] = KN_NONE;
    if (!trace_ready(g, AD_JVP_OP)) return g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
    if (!check_args(g, n_out, outs, n_in, primals_in, tangents_in, tangents_out)) return g->status;
    jvp_work w;
    memset(&w, 0, sizeof w);
    if (work_init(&w, g, g->n_nodes)) {
        uint32_t lo = UINT32_MAX, hi = 0;
        for (int i = 0; i < n_in && !g->status; i++) {
            seed(&w, primals_in[i].id, tangents_in[i]);
            if (primals_in[i].id < lo) lo = primals_in[i].id;
        }
        for (int j = 0; j < n_out; j++)
            if (outs[j].id > hi) hi = outs[j].id;
        if (!g->status && lo <= hi) {
            for (int j = 0; j < n_out; j++) w.flags[outs[j].id] |= NEEDED;
            mark_needed(&w, lo, hi);
            sweep(&w, lo, hi);
        }
        results(&w, n_out, outs, tangents_out);
    }
    work_free(&w);
    if (g->status)
        for (int j = 0; j < n_out; j++) tangents_out[j] = KN_NONE;
    return g->status;
}
