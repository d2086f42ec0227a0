/* control.c — control flow while tracing: kiln_while_loop, kiln_fori_loop, kiln_scan,
 * kiln_cond, kiln_switch and kiln_capture (kiln.h, "control flow").
 *
 * Each body is traced into a graph of its own (a sub-graph: parent set while it is
 * traced, so kiln_capture can reach the enclosing graphs), finished, and handed to a
 * region (ir.h: ir_region) that the control node owns. The node's inputs follow the
 * layout ir.h gives: the carried or passed values, the scanned arrays, then each
 * sub-graph's captures in order. Result 0 is the node itself; every other result gets a
 * RESULT node right after it, so the user receives one value per result.
 *
 * Errors: every check the typing rule makes is made here first, with a message that
 * names the op, the body and both types, and the user's line; a builder error inside a
 * body becomes the enclosing graph's error, with the body's message. On any error no node
 * is left behind on the enclosing graph (captures may have added parameters to enclosing
 * sub-graphs, which fail with it). */
#include "trace.h"

#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------- captures ---- */

/* The graph among g's enclosing ones that made value x, or NULL. */
static kiln_graph *owner_of(kiln_graph *g, kiln_value x) {
    for (kiln_graph *p = g->parent; p; p = p->parent)
        if (p->id == x.graph) return p;
    return NULL;
}

static kiln_value capture_from(kiln_graph *g, const char *op, kiln_value x) {
    kiln_graph *p = g->parent, *owner = owner_of(g, x);
    if (!owner)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "the value is not one of a graph that encloses '%s'", g->name);
    if (owner != p) { /* from further out: p captures it first */
        x = capture_from(p, op, x);
        if (!x.id) return trace_fail(g, p->status, op, "%s", p->error ? p->error : "");
    }
    if (!x.id || x.id >= p->n_nodes)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "the value is no value graph '%s' made (id %u)", p->name, x.id);
    uint32_t first = g->n_params - g->n_captures;
    for (uint32_t i = 0; i < g->n_captures; i++)
        if (g->captures[i] == x.id) return trace_value(g, g->params[first + i]);
    if (g->n_captures == g->cap_captures) {
        uint32_t cap = g->cap_captures ? 2 * g->cap_captures : 8;
        uint32_t *c =
            host_realloc(g->ctx, g->captures, g->cap_captures * sizeof *c, cap * sizeof *c);
        if (!c) return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation failed");
        g->captures = c, g->cap_captures = cap;
    }
    const ir_node *o = &p->nodes[x.id];
    char name[64];
    snprintf(name, sizeof name, "%.40s", o->name && o->op == IR_PARAMETER ? o->name : "capture");
    kiln_value v = trace_parameter(g, op, name, o->dtype, o->shape.rank, o->shape.dims);
    if (v.id) { /* of the captured value's memory kind: a host value is fetched in here */
        g->nodes[v.id].a.param_memory_kind =
            ir_in_host(p, x.id) ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE;
        g->captures[g->n_captures++] = x.id;
    }
    return v;
}

kiln_value kiln_capture(kiln_graph *g, kiln_value x) {
    const char *op = "kiln_capture";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!g->parent)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "graph '%s' is not the body of a loop or branch being traced", g->name);
    if (x.id && x.graph == g->id) return x;
    if (!x.id)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "the value is the invalid value (an earlier op failed)");
    return capture_from(g, op, x);
}

/* ------------------------------------------------------------ tracing ---- */

/* The type and name of one parameter of a body. */
typedef struct body_param {
    kiln_dtype dtype;
    ir_shape shape;
    char name[32];
} body_param;

static void param_like(body_param *p, const ir_node *n, const char *name, int i) {
    p->dtype = n->dtype;
    p->shape = n->shape;
    snprintf(p->name, sizeof p->name, "%s%d", name, i);
}

/* A traced body: its graph (finished) and how many values it returns. */
typedef struct body {
    kiln_graph *g;
    int n_out;
    char label[24]; /* what messages call it: "the body", or the caller's name, "true_fn" */
} body;

static void bodies_free(body *b, int n) {
    for (int i = 0; i < n; i++) kiln_graph_destroy(b[i].g), b[i].g = NULL;
}

/* Traces fn into a new sub-graph of g named `name` with the parameters ps; messages call
 * it `label` (the caller's name for the function: "true_fn"), or "the <name>" when label is
 * NULL. On failure the sub-graph is gone and g holds the error, named op. */
static kiln_status trace_body(kiln_graph *g, const char *op, const char *name, const char *label,
                              kiln_fn fn, void *user, int n_in, const body_param *ps, body *b) {
    b->g = NULL;
    if (label)
        snprintf(b->label, sizeof b->label, "%s", label);
    else
        snprintf(b->label, sizeof b->label, "the %s", name);
    if (!fn) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s%s is NULL", b->label,
                   label ? "" : " function");
        return g->status;
    }
    kiln_graph *s = NULL;
    if (kiln_graph_create(g->ctx, name, &s)) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %s failed", b->label);
        return g->status;
    }
    s->parent = g;
    kiln_graph_at(s, g->cur_file, g->cur_line);
    kiln_value in[KILN_MAX_OUTPUTS + 1], outs[KILN_MAX_OUTPUTS];
    for (int i = 0; i < n_in; i++)
        in[i] = trace_parameter(s, op, ps[i].name, ps[i].dtype, ps[i].shape.rank, ps[i].shape.dims);
    int n = s->status ? -1 : fn(s, n_in, in, user, outs);
    if (!s->status && n < 0)
        trace_fail(s, KILN_STATUS_INVALID_ARGUMENT, op, "it returned %d (an error of its own)", n);
    else if (!s->status && (n < 1 || n > KILN_MAX_OUTPUTS))
        trace_fail(s, KILN_STATUS_INVALID_ARGUMENT, op, "it returned %d values, not 1 to %d", n,
                   KILN_MAX_OUTPUTS);
    if (!s->status) kiln_graph_finish(s, n, outs);
    s->parent = NULL;
    if (s->status) {
        trace_fail(g, s->status, op, "in %s: %s", b->label, s->error ? s->error : "");
        kiln_graph_destroy(s);
        return g->status;
    }
    b->g = s;
    b->n_out = n;
    return KILN_STATUS_OK;
}

/* Output j of body b must have want's dtype and shape: a carry's (first NULL), else the
 * output j of the branch named first. The message names both types and where the body
 * made the value; a dtype alone that differs is KILN_STATUS_DTYPE. want is a copy, not a
 * node of g: tracing a body may append to g (a capture from further out adds a parameter
 * to each graph between), which moves g's nodes. */
static kiln_status check_out(kiln_graph *g, const char *op, const body *b, int j,
                             const body_param *want, const char *first, int hidden) {
    const ir_node *o = &b->g->nodes[b->g->outputs[j]];
    bool same_shape = ir_shape_eq(&o->shape, &want->shape);
    if (o->dtype == want->dtype && same_shape) return KILN_STATUS_OK;
    char t1[IR_TYPE_STR_MAX], t2[IR_TYPE_STR_MAX], at[96] = "";
    if (o->file) snprintf(at, sizeof at, " (made at %s:%d)", kn_path_base(o->file), o->line);
    trace_fail(g, same_shape ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, op,
               "%s returns %s %d as %s%s, but %s %s %s", b->label, first ? "output" : "carry",
               j - hidden, ir_type_str(o->dtype, &o->shape, t1, sizeof t1), at,
               first ? first : "it", first ? "returns it as" : "enters as",
               ir_type_str(want->dtype, &want->shape, t2, sizeof t2));
    return g->status;
}

/* Checks the user's values vals[0..n) (each a value of g) and puts their nodes in nodes. */
static bool check_values(kiln_graph *g, const char *op, const char *what, int n,
                         const kiln_value *vals, const ir_node **nodes) {
    if (n > 0 && !vals) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s is NULL for %d values", what, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        char w[48];
        snprintf(w, sizeof w, "%s[%d]", what, i);
        if (!(nodes[i] = trace_node(g, op, vals[i], w))) return false;
    }
    return true;
}

/* Emits control node tmpl (op and attributes set) over the passed inputs and the
 * captures of subs[0..n_subs), which the node's region takes over, then a RESULT node per
 * further result. outs receives one value per result, *n_outs their count. */
static kiln_status emit_control(kiln_graph *g, const char *op, ir_node *tmpl,
                                const uint32_t *passed, uint32_t n_passed, body *subs,
                                uint32_t n_subs, kiln_value *outs, int *n_outs) {
    uint32_t n_in = n_passed;
    for (uint32_t k = 0; k < n_subs; k++) n_in += subs[k].g->n_captures;
    uint32_t *in = host_alloc(g->ctx, (n_in ? n_in : 1) * sizeof *in);
    kiln_graph *graphs[KILN_MAX_OUTPUTS];
    for (uint32_t k = 0; k < n_subs; k++) graphs[k] = subs[k].g, subs[k].g = NULL;
    ir_region *r = in ? ir_region_new(g->ctx, n_subs, graphs) : NULL;
    if (!r) {
        if (in)
            host_free(g->ctx, in, n_in * sizeof *in);
        else
            for (uint32_t k = 0; k < n_subs; k++) kiln_graph_destroy(graphs[k]);
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for the node failed");
        return g->status;
    }
    if (n_passed) memcpy(in, passed, n_passed * sizeof *in);
    for (uint32_t k = 0, at = n_passed; k < n_subs; k++) {
        const kiln_graph *s = graphs[k];
        if (s->n_captures) /* none: captures is NULL, which memcpy may not be given */
            memcpy(in + at, s->captures, s->n_captures * sizeof *in);
        at += s->n_captures;
    }
    tmpl->region = r;
    kiln_value v = trace_emit(g, op, tmpl, in, n_in);
    host_free(g->ctx, in, (n_in ? n_in : 1) * sizeof *in);
    if (!v.id) {
        ir_region_unref(g->ctx, r);
        return g->status;
    }
    uint32_t count = ir_control_n_results(&g->nodes[v.id]);
    outs[0] = v;
    for (uint32_t i = 1; i < count; i++) {
        ir_node t = {.op = IR_RESULT};
        t.a.result_index = (int)i;
        outs[i] = trace_emit(g, op, &t, &v.id, 1);
    }
    if (n_outs) *n_outs = g->status ? 0 : (int)count;
    return g->status;
}

static kiln_status fail_outs(kiln_graph *g, int n, kiln_value *outs, int *n_outs) {
    for (int i = 0; outs && i < n; i++) outs[i] = KN_NONE;
    if (n_outs) *n_outs = 0;
    return g && g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
}

static bool check_count(kiln_graph *g, const char *op, const char *what, int n, int lo) {
    if (n >= lo && n <= KILN_MAX_OUTPUTS) return true;
    trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s is %d; it must be in [%d, %d]", what, n, lo,
               KILN_MAX_OUTPUTS);
    return false;
}

/* --------------------------------------------------------------- while ---- */

kiln_status kiln_while_loop(kiln_graph *g, kiln_fn cond, kiln_fn body_fn, void *user, int n,
                            const kiln_value *init, kiln_value *out) {
    const char *op = "kiln_while_loop";
    const ir_node *carry[KILN_MAX_OUTPUTS];
    body_param ps[KILN_MAX_OUTPUTS];
    body b[2] = {{0}};
    if (!trace_ready(g, op)) return fail_outs(g, 0, NULL, NULL);
    if (!out) return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "out is NULL"), g->status;
    if (!check_count(g, op, "the number of carries", n, 1) ||
        !check_values(g, op, "init", n, init, carry))
        return fail_outs(g, n > 0 && n <= KILN_MAX_OUTPUTS ? n : 0, out, NULL);
    for (int i = 0; i < n; i++) param_like(&ps[i], carry[i], "carry", i);
    if (trace_body(g, op, "cond", NULL, cond, user, n, ps, &b[0]) ||
        trace_body(g, op, "body", NULL, body_fn, user, n, ps, &b[1]))
        goto fail;
    const ir_node *c = &b[0].g->nodes[b[0].g->outputs[0]];
    if (b[0].n_out != 1 || c->dtype != KILN_DTYPE_BOOL || c->shape.rank != 0) {
        char t[IR_TYPE_STR_MAX];
        trace_fail(g, KILN_STATUS_SHAPE, op,
                   "the cond must return one bool scalar; it returns %d values, the first %s",
                   b[0].n_out, ir_type_str(c->dtype, &c->shape, t, sizeof t));
        goto fail;
    }
    if (b[1].n_out != n) {
        trace_fail(g, KILN_STATUS_SHAPE, op, "the body returns %d values for %d carries",
                   b[1].n_out, n);
        goto fail;
    }
    for (int j = 0; j < n; j++)
        if (check_out(g, op, &b[1], j, &ps[j], NULL, 0)) goto fail;
    uint32_t passed[KILN_MAX_OUTPUTS];
    for (int i = 0; i < n; i++) passed[i] = init[i].id;
    ir_node t = {.op = IR_WHILE};
    t.a.ctl.n_carry = n;
    if (emit_control(g, op, &t, passed, (uint32_t)n, b, 2, out, NULL))
        return fail_outs(g, n, out, 0);
    return KILN_STATUS_OK;
fail:
    bodies_free(b, 2);
    return fail_outs(g, n, out, NULL);
}

/* ---------------------------------------------------------------- scan ---- */

/* The scan's length: opts' if set, else the xs' leading axis, which must agree. */
static bool scan_length(kiln_graph *g, const char *op, const kiln_scan_options *o, int n_xs,
                        const ir_node **xs, int64_t *length) {
    *length = o ? o->length : 0;
    if (*length < 0 || *length > INT32_MAX) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "length %lld is outside [0, %d]",
                   (long long)*length, INT32_MAX);
        return false;
    }
    for (int i = 0; i < n_xs; i++) {
        char t[IR_TYPE_STR_MAX];
        if (xs[i]->shape.rank < 1) {
            trace_fail(g, KILN_STATUS_SHAPE, op, "xs[%d] is %s: a scanned array needs an axis", i,
                       ir_type_str(xs[i]->dtype, &xs[i]->shape, t, sizeof t));
            return false;
        }
        int64_t d = xs[i]->shape.dims[0];
        if (!*length && !i) *length = d;
        if (d != *length || d > INT32_MAX) {
            trace_fail(g, KILN_STATUS_SHAPE, op,
                       "xs[%d] is %s: its leading axis must be the length, %lld", i,
                       ir_type_str(xs[i]->dtype, &xs[i]->shape, t, sizeof t), (long long)*length);
            return false;
        }
    }
    return true;
}

/* kiln_scan under the name op; the first `hidden` carries are kiln's own (fori_loop's
 * index), which messages do not count. */
static kiln_status scan_named(kiln_graph *g, const char *op, int hidden, kiln_fn body_fn,
                              void *user, int n_carry, const kiln_value *init, int n_xs,
                              const kiln_value *xs, const kiln_scan_options *opts, int *n_outs,
                              kiln_value *outs) {
    const ir_node *nodes[2 * KILN_MAX_OUTPUTS];
    body_param ps[2 * KILN_MAX_OUTPUTS];
    body b = {0};
    int64_t length = 0;
    if (n_outs) *n_outs = 0;
    if (!trace_ready(g, op)) return fail_outs(g, 0, NULL, NULL);
    if (!outs) return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "outs is NULL"), g->status;
    if (!check_count(g, op, "n_carry", n_carry, 0) || !check_count(g, op, "n_xs", n_xs, 0) ||
        !check_values(g, op, "init", n_carry, init, nodes) ||
        !check_values(g, op, "xs", n_xs, xs, nodes + n_carry) ||
        !scan_length(g, op, opts, n_xs, nodes + n_carry, &length))
        return fail_outs(g, 0, outs, n_outs);
    for (int i = 0; i < n_carry; i++) param_like(&ps[i], nodes[i], "carry", i);
    for (int i = 0; i < n_xs; i++) {
        body_param *p = &ps[n_carry + i];
        param_like(p, nodes[n_carry + i], "x", i);
        p->shape.rank--;
        for (int d = 0; d < p->shape.rank; d++) p->shape.dims[d] = p->shape.dims[d + 1];
    }
    if (trace_body(g, op, "body", NULL, body_fn, user, n_carry + n_xs, ps, &b)) goto fail;
    if (b.n_out < n_carry || b.n_out > KILN_MAX_OUTPUTS) {
        trace_fail(g, KILN_STATUS_SHAPE, op, "the body returns %d values for %d carries",
                   b.n_out - hidden, n_carry - hidden);
        goto fail;
    }
    for (int j = 0; j < n_carry; j++)
        if (check_out(g, op, &b, j, &ps[j], NULL, hidden)) goto fail;
    uint32_t passed[2 * KILN_MAX_OUTPUTS];
    for (int i = 0; i < n_carry; i++) passed[i] = init[i].id;
    for (int i = 0; i < n_xs; i++) passed[n_carry + i] = xs[i].id;
    ir_node t = {.op = IR_SCAN};
    t.a.ctl.n_carry = n_carry;
    t.a.ctl.n_xs = n_xs;
    t.a.ctl.length = (int)length;
    t.a.ctl.reverse = opts && opts->reverse;
    t.a.ctl.checkpoint = opts && opts->checkpoint_body;
    if (emit_control(g, op, &t, passed, (uint32_t)(n_carry + n_xs), &b, 1, outs, n_outs))
        return fail_outs(g, 0, outs, n_outs);
    return KILN_STATUS_OK;
fail:
    bodies_free(&b, 1);
    return fail_outs(g, 0, outs, n_outs);
}

kiln_status kiln_scan(kiln_graph *g, kiln_fn body_fn, void *user, int n_carry,
                      const kiln_value *init, int n_xs, const kiln_value *xs,
                      const kiln_scan_options *opts, int *n_outs, kiln_value *outs) {
    return scan_named(g, "kiln_scan", 0, body_fn, user, n_carry, init, n_xs, xs, opts, n_outs,
                      outs);
}

/* ---------------------------------------------------------- fori_loop ---- */

typedef struct fori {
    kiln_fn body;
    void *user;
    int n;
} fori;

/* The scan body of kiln_fori_loop: the user's body on (i, carries), then i + 1. */
static int fori_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    const fori *f = user;
    int r = f->body(g, n_in, in, f->user, outs + 1);
    if (r < 0 || g->status) return -1;
    if (r != f->n) {
        trace_fail(g, KILN_STATUS_SHAPE, "kiln_fori_loop",
                   "the body returns %d values for %d carries", r, f->n);
        return -1;
    }
    for (int j = 0; j < r; j++) { /* checked here, so that the message counts the user's */
        char what[32];
        snprintf(what, sizeof what, "carry %d", j);
        if (!trace_node(g, "kiln_fori_loop", outs[1 + j], what)) return -1;
    }
    outs[0] = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 1));
    return r + 1;
}

kiln_status kiln_fori_loop(kiln_graph *g, int64_t lower, int64_t upper, kiln_fn body_fn, void *user,
                           int n, const kiln_value *init, kiln_value *out) {
    const char *op = "kiln_fori_loop";
    if (!trace_ready(g, op)) return fail_outs(g, 0, NULL, NULL);
    if (!out) return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "out is NULL"), g->status;
    if (!check_count(g, op, "the number of carries", n, 0) || n >= KILN_MAX_OUTPUTS)
        return fail_outs(g, 0, out, NULL);
    if (lower < INT32_MIN || lower > INT32_MAX || upper < INT32_MIN || upper > INT32_MAX) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "the bounds [%lld, %lld) must fit an i32 (the index is one)", (long long)lower,
                   (long long)upper);
        return fail_outs(g, n, out, NULL);
    }
    if (!body_fn) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "the body function is NULL");
        return fail_outs(g, n, out, NULL);
    }
    kiln_value carries[KILN_MAX_OUTPUTS], res[KILN_MAX_OUTPUTS];
    carries[0] = trace_scalar(g, op, KILN_DTYPE_I32, (double)lower);
    for (int i = 0; i < n; i++) carries[i + 1] = init ? init[i] : KN_NONE;
    if (n && !init) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "init is NULL for %d carries", n);
        return fail_outs(g, n, out, NULL);
    }
    fori f = {body_fn, user, n};
    kiln_scan_options o = {.length = upper > lower ? upper - lower : 0};
    int got = 0;
    kiln_status s = scan_named(g, op, 1, fori_body, &f, n + 1, carries, 0, NULL, &o, &got, res);
    if (s) return fail_outs(g, n, out, NULL);
    for (int i = 0; i < n; i++) out[i] = res[i + 1];
    return KILN_STATUS_OK;
}

/* ---------------------------------------------------------- cond, switch ---- */

/* What messages call branch k: the caller's name for it, kiln_cond's true_fn and false_fn
 * (index 1 and 0, lax.cond's order), kiln_switch's branches[k]. */
static const char *branch_label(const char *op, int k, char *buf, size_t size) {
    if (!strcmp(op, "kiln_cond")) return k ? "true_fn" : "false_fn";
    snprintf(buf, size, "branches[%d]", k);
    return buf;
}

static kiln_status branches(kiln_graph *g, const char *op, kiln_value index, int n_br,
                            const kiln_fn *fns, void *user, int n, const kiln_value *operands,
                            int *n_outs, kiln_value *outs) {
    const ir_node *nodes[KILN_MAX_OUTPUTS];
    body_param ps[KILN_MAX_OUTPUTS];
    body b[KILN_MAX_OUTPUTS] = {{0}};
    if (!check_count(g, op, "the number of operands", n, 0) ||
        !check_values(g, op, "operands", n, operands, nodes))
        return fail_outs(g, 0, outs, n_outs);
    for (int i = 0; i < n; i++) param_like(&ps[i], nodes[i], "operand", i);
    for (int k = 0; k < n_br; k++) {
        char name[24], label[24];
        snprintf(name, sizeof name, "branch%d", k);
        if (trace_body(g, op, name, branch_label(op, k, label, sizeof label), fns[k], user, n, ps,
                       &b[k]))
            goto fail;
        if (k && b[k].n_out != b[0].n_out) {
            trace_fail(g, KILN_STATUS_SHAPE, op, "%s returns %d values, %s %d", b[k].label,
                       b[k].n_out, b[0].label, b[0].n_out);
            goto fail;
        }
        for (int j = 0; k && j < b[k].n_out; j++) {
            body_param w;
            param_like(&w, &b[0].g->nodes[b[0].g->outputs[j]], "output", j);
            if (check_out(g, op, &b[k], j, &w, b[0].label, 0)) goto fail;
        }
    }
    uint32_t passed[KILN_MAX_OUTPUTS + 1];
    passed[0] = index.id;
    for (int i = 0; i < n; i++) passed[1 + i] = operands[i].id;
    ir_node t = {.op = IR_COND};
    t.a.ctl.n_carry = n;
    if (emit_control(g, op, &t, passed, (uint32_t)n + 1, b, (uint32_t)n_br, outs, n_outs))
        return fail_outs(g, 0, outs, n_outs);
    return KILN_STATUS_OK;
fail:
    bodies_free(b, n_br);
    return fail_outs(g, 0, outs, n_outs);
}

kiln_status kiln_switch(kiln_graph *g, kiln_value index, int n_branches, const kiln_fn *fns,
                        void *user, int n, const kiln_value *operands, int *n_outs,
                        kiln_value *outs) {
    const char *op = "kiln_switch";
    if (n_outs) *n_outs = 0;
    if (!trace_ready(g, op)) return fail_outs(g, 0, NULL, NULL);
    if (!outs) return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "outs is NULL"), g->status;
    if (!check_count(g, op, "the number of branches", n_branches, 1) || !fns) {
        if (!g->status) trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "branches is NULL");
        return fail_outs(g, 0, outs, n_outs);
    }
    const ir_node *ix = trace_node(g, op, index, "the index");
    if (!ix) return fail_outs(g, 0, outs, n_outs);
    if (!ir_dtype_is_int(ix->dtype) || ix->shape.rank != 0) {
        char t[IR_TYPE_STR_MAX];
        trace_fail(g, KILN_STATUS_DTYPE, op, "the index is %s; it must be an integer scalar",
                   ir_type_str(ix->dtype, &ix->shape, t, sizeof t));
        return fail_outs(g, 0, outs, n_outs);
    }
    kiln_dtype it = ix->dtype;  /* ix moves once a node is appended */
    if (it != KILN_DTYPE_I32) { /* clamped before it narrows, so it cannot wrap */
        kiln_value lo = trace_scalar(g, op, it, 0);
        kiln_value hi = trace_scalar(g, op, it, n_branches - 1);
        index = kiln_convert(g, kiln_clip(g, index, lo, hi), KILN_DTYPE_I32);
    }
    return branches(g, op, index, n_branches, fns, user, n, operands, n_outs, outs);
}

kiln_status kiln_cond(kiln_graph *g, kiln_value pred, kiln_fn true_fn, kiln_fn false_fn, void *user,
                      int n, const kiln_value *operands, int *n_outs, kiln_value *outs) {
    const char *op = "kiln_cond";
    if (n_outs) *n_outs = 0;
    if (!trace_ready(g, op)) return fail_outs(g, 0, NULL, NULL);
    if (!outs) return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "outs is NULL"), g->status;
    const ir_node *p = trace_node(g, op, pred, "the predicate");
    if (!p) return fail_outs(g, 0, outs, n_outs);
    if (p->dtype != KILN_DTYPE_BOOL || p->shape.rank != 0) {
        char t[IR_TYPE_STR_MAX];
        trace_fail(g, KILN_STATUS_DTYPE, op, "the predicate is %s; it must be a bool scalar",
                   ir_type_str(p->dtype, &p->shape, t, sizeof t));
        return fail_outs(g, 0, outs, n_outs);
    }
    kiln_fn fns[2] = {false_fn, true_fn}; /* lax.cond: index 1 is the true branch */
    kiln_value index = kiln_convert(g, pred, KILN_DTYPE_I32);
    return branches(g, op, index, 2, fns, user, n, operands, n_outs, outs);
}
