/* rewrite.c — cloning and rebuilding graphs for the passes (see rewrite.h).
 *
 * Invariants kept here so no pass has to: the new graph is topologically ordered because
 * nodes are appended in visit order and every input is mapped before its consumers are
 * visited; parameters keep their order and indices; everything a node owns (name,
 * constant data, a spilled input list) is deep-copied, so the old and new graphs can be
 * freed in either order; on any failure the half-built graph is freed and the old graph
 * was never written to.
 *
 * The backward flag and the graph's side tables (ir/side.h: roles, checkpoint marks) survive
 * every pass, and the walker carries them so that no rewrite can forget to (carry_marks):
 * every node a visit makes in place of an old one takes that node's backward flag (unless
 * it is a recomputation or a source), and each table is carried by its owner's rule, told
 * whether the new node is what the old one became, another node made in its place, or an
 * earlier node the old one was merged into (CSE, x * 1 -> x). A merged node is forward if
 * either was: a value the forward pass computes anyway is not a backward temporary. */
#include "rewrite.h"
#include "ir/side.h"
#include "base/hashmap.h"

#include <string.h>

/* Replaces the context's message m by "pass <name>: m", keeping the status. */
static kiln_status prefixed(kiln_context *ctx, kiln_status s, const char *pass) {
    char msg[KN_ERR_MAX - 64];
    kiln_last_error_copy(ctx, msg, sizeof msg);
    return ctx_error(ctx, s, "pass %s: %s", pass, msg);
}

static kiln_status oom(const pass_rebuild *rb, const char *what, size_t size) {
    return ctx_error(rb->g ? rb->g->ctx : rb->old->ctx, KILN_STATUS_HOST_OOM,
                     "pass %s: host allocation of %zu bytes for %s failed (graph '%s')", rb->pass,
                     size, what, rb->old->name);
}

static kiln_status internal(const pass_rebuild *rb, uint32_t id, const char *what) {
    return ctx_error(rb->old->ctx, KILN_STATUS_INTERNAL, "pass %s: graph '%s', node %%%u (%s): %s",
                     rb->pass, rb->old->name, id, ir_ops[rb->old->nodes[id].op].name, what);
}

/* Remaps old node id's inputs into in[], checking each new input has the old one's type:
 * a pass that maps a value to one of another type has a bug, and this is where it shows. */
static kiln_status remap_inputs(const pass_rebuild *rb, uint32_t id, uint32_t *in) {
    const ir_node *o = &rb->old->nodes[id];
    const uint32_t *old_in = ir_in(o);
    for (uint32_t k = 0; k < o->n_in; k++) {
        uint32_t m = rb->map[old_in[k]];
        if (!m) return internal(rb, id, "an input was dropped but the node is kept");
        const ir_node *a = &rb->old->nodes[old_in[k]], *b = &rb->g->nodes[m];
        if (a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape))
            return internal(rb, id, "an input was replaced by a value of another type");
        in[k] = m;
    }
    return KILN_STATUS_OK;
}

/* Deep copies of what a node owns; false on OOM (nothing left allocated). */
static bool copy_owned(kiln_context *ctx, const ir_node *o, ir_node *t, size_t *bytes) {
    t->name = NULL, t->data = NULL, t->in_heap = NULL;
    *bytes = 0;
    if (o->name && !(t->name = host_strdup(ctx, o->name)))
        return *bytes = strlen(o->name) + 1, false;
    if (o->data && ir_shape_nbytes(&o->shape, o->dtype, bytes) && *bytes) {
        if (!(t->data = host_alloc(ctx, *bytes))) {
            if (t->name) host_free(ctx, t->name, strlen(t->name) + 1);
            t->name = NULL;
            return false;
        }
        memcpy(t->data, o->data, *bytes);
    }
    t->region = ir_region_ref(o->region); /* shared: sub-graphs never change */
    return true;
}

kiln_status pass_copy(pass_rebuild *rb, uint32_t id) {
    kiln_context *ctx = rb->g->ctx;
    const ir_node *o = &rb->old->nodes[id];
    uint32_t stack[16], *in = stack;
    if (o->n_in > 16 && !(in = host_alloc(ctx, o->n_in * sizeof *in)))
        return oom(rb, "an input list", o->n_in * sizeof *in);
    kiln_status s = remap_inputs(rb, id, in);
    ir_node t = *o;
    size_t bytes = 0;
    if (!s && !copy_owned(ctx, o, &t, &bytes)) s = oom(rb, "a node's name or data", bytes);
    if (!s) {
        if (o->op == IR_PARAMETER) t.a.param_index = (int)rb->g->n_params;
        uint32_t nid = ir_graph_append(rb->g, &t, in, o->n_in);
        if (nid)
            rb->map[id] = nid;
        else {
            ir_node_release(ctx, &t);
            s = oom(rb, "a node", sizeof t);
        }
    }
    if (in != stack) host_free(ctx, in, o->n_in * sizeof *in);
    return s;
}

kiln_status pass_emit(pass_rebuild *rb, ir_node *tmpl, const uint32_t *in, uint32_t n_in,
                      uint32_t *id) {
    kiln_context *ctx = rb->g->ctx;
    if (tmpl->op == IR_PARAMETER)
        return ctx_error(ctx, KILN_STATUS_INTERNAL, "pass %s: passes cannot make parameters",
                         rb->pass);
    for (uint32_t k = 0; k < n_in; k++)
        if (!in[k] || in[k] >= rb->g->n_nodes)
            return ctx_error(ctx, KILN_STATUS_INTERNAL,
                             "pass %s: a new %s node has input %u = %%%u", rb->pass,
                             ir_ops[tmpl->op].name, k, in[k]);
    tmpl->n_in = n_in;
    tmpl->in_heap = NULL;
    if (n_in <= IR_INLINE_INPUTS) {
        if (n_in) memcpy(tmpl->in_inline, in, n_in * sizeof *in);
    } else {
        tmpl->in_heap = (uint32_t *)in; /* read by ir_infer only; append copies it */
    }
    char msg[512];
    kiln_status s = ir_infer(rb->g, tmpl, msg, sizeof msg);
    tmpl->in_heap = NULL;
    if (s)
        return ctx_error(ctx, KILN_STATUS_INTERNAL, "pass %s: a new %s node does not type: %s",
                         rb->pass, ir_ops[tmpl->op].name, msg);
    uint32_t nid = ir_graph_append(rb->g, tmpl, in, n_in);
    if (!nid) return oom(rb, "a node", sizeof *tmpl);
    *id = nid;
    return KILN_STATUS_OK;
}

kiln_status pass_emit_copy(pass_rebuild *rb, const ir_node *src, const uint32_t *in, uint32_t *id) {
    kiln_context *ctx = rb->g->ctx;
    ir_node t = *src;
    size_t bytes = 0;
    if (!copy_owned(ctx, src, &t, &bytes)) return oom(rb, "a node's name or data", bytes);
    kiln_status s = pass_emit(rb, &t, in, src->n_in, id);
    if (s) ir_node_release(ctx, &t);
    return s;
}

static kiln_status set_outputs(pass_rebuild *rb) {
    const kiln_graph *old = rb->old;
    if (!old->n_outputs) return KILN_STATUS_OK;
    size_t size = old->n_outputs * sizeof *old->outputs;
    uint32_t *outs = host_alloc(rb->g->ctx, size);
    if (!outs) return oom(rb, "the output list", size);
    for (uint32_t i = 0; i < old->n_outputs; i++) {
        if (!(outs[i] = rb->map[old->outputs[i]])) {
            host_free(rb->g->ctx, outs, size);
            return internal(rb, old->outputs[i], "a graph output was dropped");
        }
    }
    rb->g->outputs = outs;
    rb->g->n_outputs = old->n_outputs;
    return KILN_STATUS_OK;
}

/* After old node id's visit (the new graph had `first` nodes before it): the backward flag
 * and every side table go where id went (see the top of the file). */
static bool carry_marks(pass_rebuild *rb, uint32_t id, uint32_t first) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t nid = rb->map[id];
    if (!o->backward) rb->g->nodes[nid].backward = false;
    if (nid < first) return ir_side_carry(rb->old, id, rb->g, nid, IR_CARRY_MERGED);
    for (uint32_t k = first; k < rb->g->n_nodes; k++) {
        ir_node *n = &rb->g->nodes[k];
        if (!(ir_side_hints(rb->g, k) & IR_HINT_RECOMPUTED) && ir_ops[n->op].kind != IRK_SOURCE)
            n->backward = o->backward;
        if (!ir_side_carry(rb->old, id, rb->g, k, k == nid ? IR_CARRY_RESULT : IR_CARRY_PART))
            return false;
    }
    return true;
}

kiln_status pass_rebuild_graph(const kiln_graph *old, const char *pass, pass_visit_fn visit,
                               void *user, kiln_graph **out) {
    kiln_context *ctx = old->ctx;
    *out = NULL;
    if (old->status)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "pass %s: graph '%s' holds a builder error (%s)", pass, old->name,
                         kiln_status_name(old->status));
    pass_rebuild rb = {.old = old, .pass = pass};
    if (!(rb.map = host_calloc(ctx, old->n_nodes, sizeof *rb.map)))
        return oom(&rb, "the id map", old->n_nodes * sizeof *rb.map);
    kiln_status s = kiln_graph_create(ctx, old->name, &rb.g);
    if (s) s = prefixed(ctx, s, pass);
    for (uint32_t id = 1; !s && id < old->n_nodes; id++) {
        uint32_t first = rb.g->n_nodes;
        s = old->nodes[id].op == IR_PARAMETER ? pass_copy(&rb, id) : visit(&rb, id, user);
        if (!s && rb.map[id] && !carry_marks(&rb, id, first))
            s = oom(&rb, "the side tables", sizeof(uint64_t));
    }
    if (!s) s = set_outputs(&rb);
    host_free(ctx, rb.map, old->n_nodes * sizeof *rb.map);
    if (s) {
        kiln_graph_destroy(rb.g);
        return s;
    }
    rb.g->finished = old->finished;
    *out = rb.g;
    return KILN_STATUS_OK;
}

static kiln_status copy_visit(pass_rebuild *rb, uint32_t id, void *user) {
    (void)user;
    return pass_copy(rb, id);
}

kiln_status pass_clone(const kiln_graph *g, kiln_graph **out) {
    return pass_rebuild_graph(g, "clone", copy_visit, NULL, out);
}

/* ----------------------------------------------------------- attributes ---- */

bool pass_attrs_equal(ir_op op, int in_rank, const ir_attrs *a, const ir_attrs *b) {
    int64_t x[IR_ATTRS_FLAT_MAX], y[IR_ATTRS_FLAT_MAX];
    int n = ir_attrs_flatten(op, in_rank, a, x);
    return n == ir_attrs_flatten(op, in_rank, b, y) && !memcmp(x, y, (size_t)n * sizeof *x);
}

uint64_t pass_attrs_hash(ir_op op, int in_rank, const ir_attrs *a, uint64_t seed) {
    int64_t x[IR_ATTRS_FLAT_MAX];
    int n = ir_attrs_flatten(op, in_rank, a, x);
    return hm_hash_bytes(x, (size_t)n * sizeof *x, seed);
}
