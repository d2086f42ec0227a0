/* control.c — control nodes (while, scan, cond): the lifetime of their sub-graphs (ir.h,
 * "ir_region"), the layout of their inputs and results, and their typing rule, written
 * once here so that the tracer, the verifier, the interpreter, autodiff and the compiler
 * read them the same way. */
#include "ir.h"

#include <stdio.h>
#include <string.h>

ir_region *ir_region_new(kiln_context *ctx, uint32_t n, kiln_graph *const *graphs) {
    ir_region *r = host_calloc(ctx, 1, sizeof *r);
    kiln_graph **gs = r ? host_calloc(ctx, n ? n : 1, sizeof *gs) : NULL;
    if (!gs) {
        if (r) host_free(ctx, r, sizeof *r);
        for (uint32_t i = 0; i < n; i++) kiln_graph_destroy(graphs[i]);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) gs[i] = graphs[i];
    atomic_init(&r->refs, 1);
    r->n_graphs = n;
    r->graphs = gs;
    return r;
}

ir_region *ir_region_ref(ir_region *r) {
    if (r) atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    return r;
}

void ir_region_unref(kiln_context *ctx, ir_region *r) {
    if (!r || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1) return;
    for (uint32_t i = 0; i < r->n_graphs; i++) kiln_graph_destroy(r->graphs[i]);
    host_free(ctx, r->graphs, (r->n_graphs ? r->n_graphs : 1) * sizeof *r->graphs);
    host_free(ctx, r, sizeof *r);
}

static bool graph_equal(const kiln_graph *a, const kiln_graph *b) {
    if (a->n_nodes != b->n_nodes || a->n_params != b->n_params || a->n_outputs != b->n_outputs)
        return false;
    if (memcmp(a->params, b->params, a->n_params * sizeof *a->params) ||
        memcmp(a->outputs, b->outputs, a->n_outputs * sizeof *a->outputs))
        return false;
    for (uint32_t id = 1; id < a->n_nodes; id++) {
        const ir_node *x = &a->nodes[id], *y = &b->nodes[id];
        if (x->op != y->op || x->dtype != y->dtype || x->n_in != y->n_in ||
            !ir_shape_eq(&x->shape, &y->shape))
            return false;
        if (x->n_in && memcmp(ir_in(x), ir_in(y), x->n_in * sizeof(uint32_t))) return false;
        int rank = x->n_in ? a->nodes[ir_in(x)[0]].shape.rank : 0;
        int64_t fx[IR_ATTRS_FLAT_MAX], fy[IR_ATTRS_FLAT_MAX];
        int nx = ir_attrs_flatten(x->op, rank, &x->a, fx);
        if (nx != ir_attrs_flatten(y->op, rank, &y->a, fy) || memcmp(fx, fy, nx * sizeof *fx))
            return false;
        if (x->op == IR_CONSTANT) {
            size_t n = 0;
            ir_shape_nbytes(&x->shape, x->dtype, &n);
            if (n && (!x->data || !y->data || memcmp(x->data, y->data, n))) return false;
        }
        if ((x->region || y->region) &&
            (!x->region || !y->region || !ir_region_equal(x->region, y->region)))
            return false;
    }
    return true;
}

bool ir_region_equal(const ir_region *a, const ir_region *b) {
    if (a == b) return true;
    if (!a || !b || a->n_graphs != b->n_graphs) return false;
    for (uint32_t i = 0; i < a->n_graphs; i++)
        if (!graph_equal(a->graphs[i], b->graphs[i])) return false;
    return true;
}

/* The parameters of sub-graph k that are not captures. */
static uint32_t passed(const ir_node *n, uint32_t k) {
    (void)k;
    if (n->op == IR_SCAN) return (uint32_t)(n->a.ctl.n_carry + n->a.ctl.n_xs);
    return (uint32_t)n->a.ctl.n_carry;
}

uint32_t ir_control_n_captures(const ir_node *n, uint32_t k) {
    const kiln_graph *s = n->region->graphs[k];
    uint32_t p = passed(n, k);
    return s->n_params > p ? s->n_params - p : 0;
}

uint32_t ir_control_capture_base(const ir_node *n, uint32_t k) {
    uint32_t at = n->op == IR_COND ? 1u + (uint32_t)n->a.ctl.n_carry : passed(n, 0);
    for (uint32_t j = 0; j < k; j++) at += ir_control_n_captures(n, j);
    return at;
}

uint32_t ir_control_n_results(const ir_node *n) {
    const kiln_graph *s = n->region->graphs[n->op == IR_WHILE ? 1 : 0];
    return s->n_outputs;
}

void ir_control_result_type(const ir_node *n, uint32_t i, kiln_dtype *dtype, ir_shape *shape) {
    const kiln_graph *s = n->region->graphs[n->op == IR_WHILE ? 1 : 0];
    const ir_node *o = &s->nodes[s->outputs[i]];
    *dtype = o->dtype;
    *shape = o->shape;
    if (n->op != IR_SCAN || i < (uint32_t)n->a.ctl.n_carry) return;
    /* a per-iteration output, stacked along a new leading axis */
    for (int d = shape->rank; d > 0; d--) shape->dims[d] = shape->dims[d - 1];
    shape->dims[0] = n->a.ctl.length;
    shape->rank++;
}

void ir_control_results(const kiln_graph *g, uint32_t id, uint32_t *ids) {
    const ir_node *n = &g->nodes[id];
    uint32_t count = ir_control_n_results(n);
    for (uint32_t i = 0; i < count; i++) ids[i] = 0;
    ids[0] = id;
    for (uint32_t k = id + 1; k < g->n_nodes; k++) {
        const ir_node *r = &g->nodes[k];
        if (r->op != IR_RESULT || ir_in(r)[0] != id) continue;
        int i = r->a.result_index;
        if (i > 0 && (uint32_t)i < count && !ids[i]) ids[i] = k;
    }
}

/* ------------------------------------------------------------- typing ---- */

#define FAIL(code, ...) return (snprintf(msg, msg_size, __VA_ARGS__), (code))

static bool same_type(const ir_node *a, kiln_dtype t, const ir_shape *s) {
    return a->dtype == t && ir_shape_eq(&a->shape, s);
}

/* Parameter p of sub-graph s must have value v's type (v: an input of the control node, or
 * for a scanned array, its slice). */
static kiln_status check_param(const kiln_graph *s, uint32_t p, kiln_dtype t, const ir_shape *sh,
                               const char *what, char *msg, size_t msg_size) {
    const ir_node *q = &s->nodes[s->params[p]];
    if (same_type(q, t, sh)) return KILN_STATUS_OK;
    char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
    FAIL(KILN_STATUS_SHAPE, "'%s' takes its parameter %u (a %s) as %s, but it is %s", s->name, p,
         what, ir_type_str(q->dtype, &q->shape, a, sizeof a), ir_type_str(t, sh, b, sizeof b));
}

/* The carried (or passed) values and the captures of sub-graph k against n's inputs. */
static kiln_status check_params(const kiln_graph *g, const ir_node *n, uint32_t k, char *msg,
                                size_t msg_size) {
    const kiln_graph *s = n->region->graphs[k];
    const uint32_t *in = ir_in(n);
    uint32_t first = n->op == IR_COND ? 1 : 0, np = (uint32_t)n->a.ctl.n_carry;
    if (s->n_params < passed(n, k))
        FAIL(KILN_STATUS_INTERNAL, "sub-graph '%s' has %u parameters, fewer than the %u passed",
             s->name, s->n_params, passed(n, k));
    kiln_status st = KILN_STATUS_OK;
    for (uint32_t p = 0; p < np && !st; p++) {
        const ir_node *v = &g->nodes[in[first + p]];
        st = check_param(s, p, v->dtype, &v->shape, "carry", msg, msg_size);
    }
    for (uint32_t x = 0; n->op == IR_SCAN && x < (uint32_t)n->a.ctl.n_xs && !st; x++) {
        const ir_node *v = &g->nodes[in[np + x]];
        if (v->shape.rank < 1 || v->shape.dims[0] != n->a.ctl.length)
            FAIL(KILN_STATUS_SHAPE, "scanned array %u must have a leading axis of the length %d", x,
                 n->a.ctl.length);
        ir_shape sl = v->shape;
        sl.rank--;
        for (int d = 0; d < sl.rank; d++) sl.dims[d] = v->shape.dims[d + 1];
        st = check_param(s, np + x, v->dtype, &sl, "slice", msg, msg_size);
    }
    uint32_t base = ir_control_capture_base(n, k), nc = ir_control_n_captures(n, k);
    if (base + nc > n->n_in)
        FAIL(KILN_STATUS_INTERNAL, "%u inputs, too few for the captures of '%s'", n->n_in, s->name);
    for (uint32_t c = 0; c < nc && !st; c++) {
        const ir_node *v = &g->nodes[in[base + c]];
        uint32_t p = passed(n, k) + c;
        st = check_param(s, p, v->dtype, &v->shape, "capture", msg, msg_size);
        if (!st && ir_in_host(g, in[base + c]) != ir_in_host(s, s->params[p]))
            FAIL(KILN_STATUS_INVALID_ARGUMENT,
                 "'%s' takes its parameter %u (a capture) in %s memory, but it is in %s memory",
                 s->name, p, ir_in_host(s, s->params[p]) ? "pinned_host" : "device",
                 ir_in_host(g, in[base + c]) ? "pinned_host" : "device");
    }
    return st;
}

/* Output o of sub-graph s must have the type t/sh. */
static kiln_status check_output(const kiln_graph *s, uint32_t o, kiln_dtype t, const ir_shape *sh,
                                const char *what, char *msg, size_t msg_size) {
    const ir_node *q = &s->nodes[s->outputs[o]];
    if (same_type(q, t, sh)) return KILN_STATUS_OK;
    char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
    FAIL(KILN_STATUS_SHAPE, "'%s' returns %s as its output %u, where %s is %s", s->name,
         ir_type_str(q->dtype, &q->shape, a, sizeof a), o, what, ir_type_str(t, sh, b, sizeof b));
}

static kiln_status check_outputs(const kiln_graph *g, const ir_node *n, char *msg,
                                 size_t msg_size) {
    const ir_region *r = n->region;
    const uint32_t *in = ir_in(n);
    uint32_t nc = (uint32_t)n->a.ctl.n_carry;
    kiln_status st = KILN_STATUS_OK;
    if (n->op == IR_WHILE) {
        const kiln_graph *c = r->graphs[0];
        ir_shape scalar = {0};
        if (c->n_outputs != 1) FAIL(KILN_STATUS_SHAPE, "the condition must return one value");
        if ((st = check_output(c, 0, KILN_DTYPE_BOOL, &scalar, "the condition, bool[]", msg,
                               msg_size)))
            return st;
    }
    if (n->op != IR_COND) {
        const kiln_graph *b = r->graphs[n->op == IR_WHILE ? 1 : 0];
        if (b->n_outputs < nc || (n->op == IR_WHILE && b->n_outputs != nc))
            FAIL(KILN_STATUS_SHAPE, "the body returns %u values for %u carries", b->n_outputs, nc);
        for (uint32_t j = 0; j < nc && !st; j++) {
            const ir_node *v = &g->nodes[in[j]];
            st = check_output(b, j, v->dtype, &v->shape, "the carry", msg, msg_size);
        }
        for (uint32_t j = nc; j < b->n_outputs && !st; j++)
            if (b->nodes[b->outputs[j]].shape.rank >= KILN_MAX_RANK)
                FAIL(KILN_STATUS_SHAPE,
                     "per-iteration output %u has rank %d: stacked it would "
                     "pass the largest rank, %d",
                     j - nc, b->nodes[b->outputs[j]].shape.rank, KILN_MAX_RANK);
        return st;
    }
    const kiln_graph *b0 = r->graphs[0];
    for (uint32_t k = 1; k < r->n_graphs && !st; k++) {
        const kiln_graph *b = r->graphs[k];
        if (b->n_outputs != b0->n_outputs)
            FAIL(KILN_STATUS_SHAPE, "branch %u returns %u values, branch 0 %u", k, b->n_outputs,
                 b0->n_outputs);
        for (uint32_t j = 0; j < b->n_outputs && !st; j++) {
            const ir_node *v = &b0->nodes[b0->outputs[j]];
            st = check_output(b, j, v->dtype, &v->shape, "branch 0's", msg, msg_size);
        }
    }
    return st;
}

static kiln_status check_layout(const kiln_graph *g, const ir_node *n, char *msg, size_t msg_size) {
    const ir_region *r = n->region;
    uint32_t want = n->op == IR_WHILE ? 2 : n->op == IR_SCAN ? 1 : 0;
    if (!r || !r->n_graphs || (want && r->n_graphs != want))
        FAIL(KILN_STATUS_INTERNAL, "%s without its sub-graphs", ir_ops[n->op].name);
    for (uint32_t k = 0; k < r->n_graphs; k++)
        if (!r->graphs[k]->finished || r->graphs[k]->status)
            FAIL(KILN_STATUS_INTERNAL, "sub-graph '%s' is not finished", r->graphs[k]->name);
    if (n->a.ctl.n_carry < 0 || n->a.ctl.n_xs < 0 || n->a.ctl.length < 0 ||
        (n->op != IR_SCAN &&
         (n->a.ctl.n_xs || n->a.ctl.length || n->a.ctl.reverse || n->a.ctl.checkpoint)))
        FAIL(KILN_STATUS_INTERNAL, "bad counts: carries=%d xs=%d length=%d", n->a.ctl.n_carry,
             n->a.ctl.n_xs, n->a.ctl.length);
    uint32_t need = ir_control_capture_base(n, r->n_graphs);
    if (n->n_in != need)
        FAIL(KILN_STATUS_INTERNAL, "%s has %u inputs, its layout %u", ir_ops[n->op].name, n->n_in,
             need);
    if (n->op == IR_COND) {
        const ir_node *ix = &g->nodes[ir_in(n)[0]];
        if (ix->dtype != KILN_DTYPE_I32 || ix->shape.rank != 0)
            FAIL(KILN_STATUS_DTYPE, "the branch index must be an i32 scalar, not %s",
                 kiln_dtype_name(ix->dtype));
    }
    if (ir_control_n_results(n) < 1)
        FAIL(KILN_STATUS_SHAPE, "%s returns nothing", ir_ops[n->op].name);
    return KILN_STATUS_OK;
}

kiln_status ir_infer_control(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    kiln_status s = check_layout(g, n, msg, msg_size);
    for (uint32_t k = 0; !s && k < n->region->n_graphs; k++)
        s = check_params(g, n, k, msg, msg_size);
    if (!s) s = check_outputs(g, n, msg, msg_size);
    if (!s) ir_control_result_type(n, 0, &n->dtype, &n->shape);
    return s;
}

kiln_status ir_infer_result(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *c = &g->nodes[ir_in(n)[0]];
    if (ir_ops[c->op].kind != IRK_CONTROL)
        FAIL(KILN_STATUS_INTERNAL, "result reads %s, not a control op", ir_ops[c->op].name);
    int i = n->a.result_index;
    if (i < 1 || (uint32_t)i >= ir_control_n_results(c))
        FAIL(KILN_STATUS_INTERNAL, "result index %d outside [1, %u)", i, ir_control_n_results(c));
    ir_control_result_type(c, (uint32_t)i, &n->dtype, &n->shape);
    return KILN_STATUS_OK;
}
