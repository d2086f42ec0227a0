/* vmap.c — kiln_vmap: fn traced once per example on a sub-graph, then re-emitted into the
 * graph being traced as one batched computation (jax.vmap; kiln.h, docs/autodiff.md "vmap").
 *
 * The transform follows trace_inline (src/trace/inline.c), which copies a sub-graph into
 * another graph, but every copy goes through its op's batching rule (vmap_rules.c) when one
 * of its inputs is batched. Invariants: a value of the sub-graph maps to a value of g that
 * is unbatched (its own type) or batched at axis 0 ([B, its type...]); the arguments' batch
 * axes are moved to the front once, on entry, and the outputs' to out_axes once, on exit.
 * Nodes the outputs do not read are not emitted. The sub-graph is never changed (rules read
 * it and append to g only) and is destroyed before kiln_vmap returns.
 *
 * Errors are builder errors on g named "kiln_vmap (batching <op>)" while a rule runs, with
 * the location of the sub-graph's node (the user's line in fn). */
#include "autodiff.h"
#include "ir/side.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------- shared helpers ---- */

kiln_value ad_vmap_emit(kiln_graph *dst, const char *op, const ir_node *tmpl, const kiln_value *in,
                        uint32_t n_in) {
    ir_node t = *tmpl;
    size_t bytes = 0;
    uint32_t stack[8], *ids = n_in <= 8 ? stack : host_alloc(dst->ctx, n_in * sizeof *ids);
    t.name = NULL, t.data = NULL, t.in_heap = NULL, t.region = NULL, t.backward = false;
    if (!ids) goto oom;
    for (uint32_t k = 0; k < n_in; k++) {
        if (!in[k].id) { /* an earlier step failed: its error is on dst already */
            if (ids != stack) host_free(dst->ctx, ids, n_in * sizeof *ids);
            return KN_NONE;
        }
        ids[k] = in[k].id;
    }
    if (tmpl->name && !(t.name = host_strdup(dst->ctx, tmpl->name))) goto oom;
    if (tmpl->data && ir_shape_nbytes(&tmpl->shape, tmpl->dtype, &bytes) && bytes) {
        if (!(t.data = host_alloc(dst->ctx, bytes))) goto oom;
        memcpy(t.data, tmpl->data, bytes);
    }
    t.region = ir_region_ref(tmpl->region);
    kiln_value v = trace_emit(dst, op, &t, ids, n_in);
    if (!v.id) ir_node_release(dst->ctx, &t); /* trace_emit failed before the node took them */
    if (ids != stack) host_free(dst->ctx, ids, n_in * sizeof *ids);
    return v;
oom:
    if (ids && ids != stack) host_free(dst->ctx, ids, n_in * sizeof *ids);
    if (t.name) host_free(dst->ctx, t.name, strlen(t.name) + 1);
    return trace_fail(dst, KILN_STATUS_HOST_OOM, op, "host allocation copying a node failed");
}

kiln_value ad_vmap_moveaxis(ad_vmap *w, kiln_value x, int from, int to) {
    if (!x.id || from == to) return x;
    const ir_node *n = &w->g->nodes[x.id];
    int rank = n->shape.rank, order[KILN_MAX_RANK], k = 0;
    for (int i = 0; i < rank; i++)
        if (i != from) order[k++] = i;
    ir_node t = {.op = IR_TRANSPOSE};
    for (int i = 0, j = 0; i < rank; i++) t.a.perm[i] = i == to ? from : order[j++];
    return trace_emit(w->g, w->op, &t, &x.id, 1);
}

kiln_value ad_vmap_reshape(ad_vmap *w, kiln_value x, int rank, const int64_t *dims) {
    if (!x.id) return x;
    ir_node t = {.op = IR_RESHAPE};
    t.shape.rank = rank;
    for (int i = 0; i < rank; i++) t.shape.dims[i] = dims[i];
    return trace_emit(w->g, w->op, &t, &x.id, 1);
}

kiln_value ad_vmap_broadcast(kiln_graph *g, const char *op, int64_t size, kiln_value v) {
    if (!v.id) return v;
    const ir_node *n = &g->nodes[v.id];
    if (n->shape.rank + 1 > KILN_MAX_RANK)
        return trace_fail_on(g, &v.id, 1, KILN_STATUS_SHAPE, op,
                             "a batch axis does not fit: rank %d is the most", KILN_MAX_RANK);
    ir_node t = {.op = IR_BROADCAST};
    t.shape.rank = n->shape.rank + 1;
    t.shape.dims[0] = size;
    for (int i = 0; i < n->shape.rank; i++)
        t.shape.dims[i + 1] = n->shape.dims[i], t.a.bcast_dims[i] = i + 1;
    return trace_emit(g, op, &t, &v.id, 1);
}

static kiln_value batch_broadcast(ad_vmap *w, kiln_value v) {
    return ad_vmap_broadcast(w->g, w->op, w->size, v);
}

kiln_value ad_vmap_in(ad_vmap *w, const ir_node *n, uint32_t k) {
    uint32_t id = ir_in(n)[k];
    return w->batched[id] ? w->map[id] : batch_broadcast(w, w->map[id]);
}

/* ------------------------------------------------ the sequential path ---- */

/* The body of the scan over the batch: n once, on one example. Batched inputs are the
 * scan's xs (slot[k] their index, deduplicated), the others captures. */
typedef struct seq_body {
    ad_vmap *w;
    const ir_node *n;
    const int *slot; /* [n->n_in]: the xs index of a batched input, -1 for a capture */
} seq_body;

static int seq_fn(kiln_graph *b, int n_in, const kiln_value *x, void *user, kiln_value *outs) {
    (void)n_in;
    seq_body *sb = user;
    const ir_node *n = sb->n;
    const uint32_t *in = ir_in(n);
    kiln_value *vals = host_alloc(b->ctx, (n->n_in ? n->n_in : 1) * sizeof *vals);
    if (!vals) return trace_fail(b, KILN_STATUS_HOST_OOM, sb->w->op, "host allocation failed"), -1;
    for (uint32_t k = 0; k < n->n_in; k++)
        vals[k] = sb->slot[k] >= 0 ? x[sb->slot[k]] : kiln_capture(b, sb->w->map[in[k]]);
    kiln_value v = ad_vmap_emit(b, sb->w->op, n, vals, n->n_in);
    host_free(b->ctx, vals, (n->n_in ? n->n_in : 1) * sizeof *vals);
    if (!v.id) return -1;
    uint32_t count = ir_ops[n->op].kind == IRK_CONTROL ? ir_control_n_results(&b->nodes[v.id]) : 1;
    outs[0] = v;
    for (uint32_t i = 1; i < count; i++) {
        ir_node t = {.op = IR_RESULT};
        t.a.result_index = (int)i;
        outs[i] = trace_emit(b, sb->w->op, &t, &v.id, 1);
    }
    return b->status ? -1 : (int)count;
}

void ad_vmap_sequential(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out) {
    (void)id;
    const uint32_t *in = ir_in(n);
    int *slot = host_alloc(w->g->ctx, (n->n_in ? n->n_in : 1) * sizeof *slot);
    kiln_value xs[KILN_MAX_OUTPUTS];
    int n_xs = 0, n_outs = 0;
    if (!slot) {
        trace_fail(w->g, KILN_STATUS_HOST_OOM, w->op, "host allocation failed");
        return;
    }
    for (uint32_t k = 0; k < n->n_in && !w->g->status; k++) {
        slot[k] = -1;
        if (!w->batched[in[k]]) continue;
        for (uint32_t j = 0; j < k; j++)
            if (in[j] == in[k]) slot[k] = slot[j];
        if (slot[k] >= 0) continue;
        if (n_xs == KILN_MAX_OUTPUTS) {
            trace_fail(w->g, KILN_STATUS_INVALID_ARGUMENT, w->op,
                       "the sequential fallback scans at most %d batched operands; %s has more",
                       KILN_MAX_OUTPUTS, ir_ops[n->op].name);
            break;
        }
        slot[k] = n_xs;
        xs[n_xs++] = w->map[in[k]];
    }
    seq_body sb = {w, n, slot};
    if (!w->g->status) kiln_scan(w->g, seq_fn, &sb, 0, NULL, n_xs, xs, NULL, &n_outs, out);
    host_free(w->g->ctx, slot, (n->n_in ? n->n_in : 1) * sizeof *slot);
}

/* ------------------------------------------------------------ the walk ---- */

/* Marks the nodes of s the outputs read. */
static void mark_used(const kiln_graph *s, uint8_t *used) {
    for (uint32_t i = 0; i < s->n_outputs; i++) used[s->outputs[i]] = 1;
    for (uint32_t id = s->n_nodes; id-- > 1;) {
        if (!used[id]) continue;
        const ir_node *n = &s->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in; k++) used[in[k]] = 1;
        if (n->op == IR_RESULT) used[in[0]] = 1;
    }
    /* a control node's RESULT nodes travel with it: mark them all */
    for (uint32_t id = 1; id < s->n_nodes; id++)
        if (s->nodes[id].op == IR_RESULT && used[ir_in(&s->nodes[id])[0]]) used[id] = 1;
}

/* Node id of s (not a parameter) emitted into g: as it is, or by its rule. */
static void walk_node(ad_vmap *w, uint32_t id) {
    const kiln_graph *s = w->s;
    ir_node n = s->nodes[id];
    const uint32_t *in = ir_in(&n);
    bool any = false;
    for (uint32_t k = 0; k < n.n_in; k++) any |= w->batched[in[k]] != 0;
    uint32_t count = ir_ops[n.op].kind == IRK_CONTROL ? ir_control_n_results(&n) : 1;
    kiln_value out[2 * KILN_MAX_OUTPUTS + 2] = {{0, 0}};
    if (count > sizeof out / sizeof *out) {
        trace_fail(w->g, KILN_STATUS_INTERNAL, w->op, "%u results", count);
        return;
    }
    snprintf(w->op, sizeof w->op, "%s (batching %s)", AD_VMAP_OP, ir_ops[n.op].name);
    w->g->cur_file = n.file, w->g->cur_line = n.line;
    if (!any) {
        kiln_value *vals = host_alloc(w->g->ctx, (n.n_in ? n.n_in : 1) * sizeof *vals);
        if (!vals) {
            trace_fail(w->g, KILN_STATUS_HOST_OOM, w->op, "host allocation failed");
            return;
        }
        for (uint32_t k = 0; k < n.n_in; k++) vals[k] = w->map[in[k]];
        out[0] = ad_vmap_emit(w->g, w->op, &n, vals, n.n_in);
        host_free(w->g->ctx, vals, (n.n_in ? n.n_in : 1) * sizeof *vals);
        for (uint32_t i = 1; i < count && out[0].id; i++) {
            ir_node t = {.op = IR_RESULT};
            t.a.result_index = (int)i;
            out[i] = trace_emit(w->g, w->op, &t, &out[0].id, 1);
        }
    } else {
        const ad_vmap_entry *e = ad_vmap_entry_for(n.op);
        if (!e->rule) {
            trace_fail(w->g, KILN_STATUS_INVALID_ARGUMENT, w->op, "%s", e->refusal);
            return;
        }
        /* every rule adds the batch axis in front: a value of the most rank has no room */
        int most = ir_ops[n.op].kind == IRK_CONTROL ? 0 : n.shape.rank;
        for (uint32_t k = 0; k < n.n_in; k++)
            if (w->batched[in[k]] && s->nodes[in[k]].shape.rank > most)
                most = s->nodes[in[k]].shape.rank;
        if (most >= KILN_MAX_RANK) {
            trace_fail(w->g, KILN_STATUS_SHAPE, w->op,
                       "a batch axis does not fit: a value of %s has rank %d, the most there is",
                       ir_ops[n.op].name, KILN_MAX_RANK);
            return;
        }
        e->rule(w, id, &n, out);
    }
    if (w->g->status) return;
    w->map[id] = out[0], w->batched[id] = any;
    if (count > 1) {
        uint32_t rids[2 * KILN_MAX_OUTPUTS + 2];
        ir_control_results(s, id, rids);
        for (uint32_t i = 1; i < count; i++)
            if (rids[i]) w->map[rids[i]] = out[i], w->batched[rids[i]] = any;
    }
}

/* ------------------------------------------------- custom_vjp calls ---- */

/* A kiln_custom_vjp call in fn becomes one call on g whose fwd is kiln_vmap of the user's
 * fwd and whose bwd is kiln_vmap of the user's bwd, as jax.vmap batches a custom_vjp
 * function: the residuals and outputs come out batched, and the cotangent of an arg that
 * was not batched is the sum over the batch of its per-example ones. What the two
 * functions need lives as long as g (the call's user pointer): a side table of g owns it. */
typedef struct vmap_cvjp {
    kiln_fn fwd, bwd;
    void *user;
    int n_in, n_out, n_res;
    int in_axes[KILN_MAX_OUTPUTS];   /* 0 for a batched arg, KILN_VMAP_NONE otherwise */
    kiln_dtype dt[KILN_MAX_OUTPUTS]; /* each arg's, and its per-example shape */
    ir_shape shape[KILN_MAX_OUTPUTS];
} vmap_cvjp;

static void cvjp_release(kiln_context *ctx, void *state) {
    trace_log *l = state;
    vmap_cvjp *const *all = l->v;
    for (uint32_t i = 0; i < l->n; i++) host_free(ctx, all[i], sizeof **all);
    trace_log_release(ctx, state);
}

static const ir_side_kind cvjp_kind = {
    .name = "vmap_custom_vjp", .state_size = sizeof(trace_log), .release = cvjp_release};

static int cvjp_fwd(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    const vmap_cvjp *c = user;
    int n = c->n_out + c->n_res;
    return kiln_vmap(g, c->fwd, c->user, n_in, in, c->in_axes, n, NULL, outs) ? -1 : n;
}

/* The user's bwd for one example, a zero cotangent (KILN_VALUE_NONE) made concrete: a
 * batched function returns values. */
static int cvjp_bwd_one(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                        kiln_value *grads) {
    const vmap_cvjp *c = user;
    int got = c->bwd(g, n_in, in, c->user, grads);
    for (int i = 0; got == c->n_in && i < c->n_in && !g->status; i++) {
        if (grads[i].id) continue;
        kiln_dtype t = ir_dtype_is_float(c->dt[i]) ? c->dt[i] : KILN_DTYPE_F32;
        grads[i] = kiln_broadcast_in_dim(g, trace_scalar(g, AD_VMAP_OP, t, 0), c->shape[i].rank,
                                         c->shape[i].dims, NULL);
    }
    return got;
}

static int cvjp_bwd(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *grads) {
    vmap_cvjp *c = user;
    if (kiln_vmap(g, cvjp_bwd_one, c, n_in, in, NULL, c->n_in, NULL, grads)) return -1;
    for (int i = 0; i < c->n_in; i++) {
        if (!ir_dtype_is_float(c->dt[i]))
            grads[i] = KILN_VALUE_NONE;           /* an integer arg has none */
        else if (c->in_axes[i] == KILN_VMAP_NONE) /* an unbatched arg: its cotangents summed */
            grads[i] = kiln_reduce_sum(g, grads[i], 1, (const int[]){0}, false);
    }
    return g->status ? -1 : c->n_in;
}

/* The call r of s, batched onto g; its outputs and residuals mapped (batched). */
static void walk_custom_vjp(ad_vmap *w, const trace_custom_vjp *r) {
    kiln_graph *g = w->g;
    snprintf(w->op, sizeof w->op, "%s (batching kiln_custom_vjp)", AD_VMAP_OP);
    vmap_cvjp *c = host_calloc(g->ctx, 1, sizeof *c);
    if (!c) {
        trace_fail(g, KILN_STATUS_HOST_OOM, w->op, "host allocation failed");
        return;
    }
    *c = (vmap_cvjp){.fwd = r->fwd,
                     .bwd = r->bwd,
                     .user = r->user,
                     .n_in = r->n_in,
                     .n_out = r->n_out,
                     .n_res = r->n_res};
    trace_log_push(g, w->op, &cvjp_kind, sizeof c, &c);
    if (g->status) {
        host_free(g->ctx, c, sizeof *c);
        return;
    }
    kiln_value args[KILN_MAX_OUTPUTS], outs[2 * KILN_MAX_OUTPUTS];
    bool any = false;
    for (int i = 0; i < r->n_in; i++) {
        args[i] = w->map[r->in[i]];
        any |= w->batched[r->in[i]] != 0;
        c->in_axes[i] = w->batched[r->in[i]] ? 0 : KILN_VMAP_NONE;
        c->dt[i] = w->s->nodes[r->in[i]].dtype, c->shape[i] = w->s->nodes[r->in[i]].shape;
    }
    g->cur_file = r->file, g->cur_line = r->line;
    if (any)
        kiln_custom_vjp(g, cvjp_fwd, cvjp_bwd, c, r->n_in, args, r->n_out, outs);
    else /* nothing batched reaches it: the call as it was */
        kiln_custom_vjp(g, r->fwd, r->bwd, r->user, r->n_in, args, r->n_out, outs);
    if (g->status) return;
    /* the residuals too: the call's record on g lists them after the outputs */
    uint32_t n_rec = 0;
    const trace_custom_vjp *all = trace_custom_vjps(g, &n_rec);
    const trace_custom_vjp *mine = n_rec ? &all[n_rec - 1] : NULL;
    for (int j = 0; mine && j < r->n_out + r->n_res; j++) {
        w->map[r->out[j]] = trace_value(g, mine->out[j]);
        w->batched[r->out[j]] = any;
    }
}

/* The call of s whose fwd's nodes start at id, or NULL. */
static const trace_custom_vjp *call_at(const kiln_graph *s, uint32_t id) {
    uint32_t n = 0;
    const trace_custom_vjp *all = trace_custom_vjps(s, &n);
    for (uint32_t i = 0; i < n; i++)
        if (all[i].first == id) return &all[i];
    return NULL;
}

/* Whether id lies inside a call's fwd (first..last) and is none of its outputs or
 * residuals: such a value exists only in the per-example trace. */
static const trace_custom_vjp *inside_call(const kiln_graph *s, uint32_t id) {
    uint32_t n = 0;
    const trace_custom_vjp *all = trace_custom_vjps(s, &n);
    for (uint32_t i = 0; i < n; i++) {
        if (id < all[i].first || id > all[i].last) continue;
        for (int j = 0; j < all[i].n_out + all[i].n_res; j++)
            if (all[i].out[j] == id) return NULL;
        return &all[i];
    }
    return NULL;
}

static void walk(ad_vmap *w, const uint8_t *used) {
    const kiln_graph *s = w->s;
    const char *file = w->g->cur_file;
    int line = w->g->cur_line;
    uint32_t skip_to = 0; /* past a batched custom_vjp call's fwd */
    for (uint32_t id = 1; id < s->n_nodes && !w->g->status; id++) {
        const ir_node *o = &s->nodes[id];
        const trace_custom_vjp *cv = id >= skip_to ? call_at(s, id) : NULL;
        if (cv) {
            walk_custom_vjp(w, cv);
            skip_to = cv->last + 1;
            continue;
        }
        if (id < skip_to) continue;
        for (uint32_t k = 0; k < o->n_in && used[id]; k++) {
            const trace_custom_vjp *in = inside_call(s, ir_in(o)[k]);
            if (!in || id <= in->last) continue;
            trace_fail(w->g, KILN_STATUS_UNIMPLEMENTED, AD_VMAP_OP,
                       "fn reads %%%u, a value inside the kiln_custom_vjp called at %s:%d that "
                       "is none of its outputs or residuals; kiln_vmap batches the call whole",
                       ir_in(o)[k], in->file ? kn_path_base(in->file) : "?", in->line);
            break;
        }
        if (!used[id] || o->op == IR_PARAMETER || (o->op == IR_RESULT && w->map[id].id)) continue;
        if (o->op == IR_RESULT) { /* its control node was not emitted: an internal error */
            trace_fail(w->g, KILN_STATUS_INTERNAL, AD_VMAP_OP, "result %%%u has no value", id);
            break;
        }
        walk_node(w, id);
    }
    w->g->cur_file = file, w->g->cur_line = line;
    snprintf(w->op, sizeof w->op, "%s", AD_VMAP_OP);
}

void ad_vmap_deps(const kiln_graph *s, const uint8_t *param_batched, uint8_t *out_batched,
                  uint8_t *flags) {
    memset(flags, 0, s->n_nodes);
    for (uint32_t p = 0; p < s->n_params; p++) flags[s->params[p]] = param_batched[p];
    for (uint32_t id = 1; id < s->n_nodes; id++) {
        const ir_node *n = &s->nodes[id];
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in && !flags[id]; k++) flags[id] = flags[in[k]];
    }
    for (uint32_t j = 0; j < s->n_outputs; j++) out_batched[j] = flags[s->outputs[j]];
}

kiln_status ad_vmap_subgraph(kiln_graph *dst, const kiln_graph *s, int64_t size,
                             const kiln_value *vals, const uint8_t *batched, kiln_value *outs,
                             uint8_t *out_batched) {
    ad_vmap w = {.g = dst, .s = s, .size = size};
    uint8_t *used = host_calloc(dst->ctx, s->n_nodes, 1);
    w.map = host_calloc(dst->ctx, s->n_nodes, sizeof *w.map);
    w.batched = host_calloc(dst->ctx, s->n_nodes, 1);
    snprintf(w.op, sizeof w.op, "%s", AD_VMAP_OP);
    if (!used || !w.map || !w.batched) {
        trace_fail(dst, KILN_STATUS_HOST_OOM, AD_VMAP_OP, "host allocation for %u nodes failed",
                   s->n_nodes);
    } else {
        mark_used(s, used);
        for (uint32_t p = 0; p < s->n_params; p++)
            w.map[s->params[p]] = vals[p], w.batched[s->params[p]] = batched[p];
        walk(&w, used);
        for (uint32_t j = 0; j < s->n_outputs && !dst->status; j++)
            outs[j] = w.map[s->outputs[j]], out_batched[j] = w.batched[s->outputs[j]];
    }
    if (used) host_free(dst->ctx, used, s->n_nodes);
    if (w.map) host_free(dst->ctx, w.map, (size_t)s->n_nodes * sizeof *w.map);
    if (w.batched) host_free(dst->ctx, w.batched, s->n_nodes);
    return dst->status;
}

/* ------------------------------------------------------------ the call ---- */

static kiln_status fail_all(kiln_graph *g, int n_out, kiln_value *outs) {
    for (int j = 0; outs && j < n_out && j < KILN_MAX_OUTPUTS; j++) outs[j] = KN_NONE;
    return g && g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT;
}

/* Checks args and in_axes; sets the batch size. */
static bool check_args(kiln_graph *g, int n, const kiln_value *args, const int *in_axes,
                       int64_t *size) {
    const char *op = AD_VMAP_OP;
    int first = -1;
    for (int i = 0; i < n; i++) {
        char what[32], t[IR_TYPE_STR_MAX], t0[IR_TYPE_STR_MAX];
        snprintf(what, sizeof what, "args[%d]", i);
        const ir_node *a = trace_node(g, op, args[i], what);
        if (!a) return false;
        int ax = in_axes ? in_axes[i] : 0;
        ir_type_str(a->dtype, &a->shape, t, sizeof t);
        if (ax == KILN_VMAP_NONE) continue;
        if (ax < 0 || ax >= a->shape.rank) {
            trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                       "in_axes[%d] = %d is out of range for args[%d] %s: an axis in [0, %d) or "
                       "KILN_VMAP_NONE (negative axes are not counted from the end)",
                       i, ax, i, t, a->shape.rank);
            return false;
        }
        if (first < 0) {
            first = i, *size = a->shape.dims[ax];
            continue;
        }
        if (a->shape.dims[ax] != *size) {
            const ir_node *f = &g->nodes[args[first].id];
            trace_fail(g, KILN_STATUS_SHAPE, op,
                       "batch sizes differ: args[%d] %s has %lld at axis %d, args[%d] %s has "
                       "%lld at axis %d",
                       first, ir_type_str(f->dtype, &f->shape, t0, sizeof t0), (long long)*size,
                       in_axes ? in_axes[first] : 0, i, t, (long long)a->shape.dims[ax], ax);
            return false;
        }
    }
    if (first < 0)
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "no argument is batched (every in_axes entry is KILN_VMAP_NONE): at least one "
                   "must be, as in jax.vmap");
    return first >= 0;
}

/* Traces fn on a new sub-graph of g with the per-example parameters; NULL after an error. */
static kiln_graph *trace_fn(kiln_graph *g, kiln_fn fn, void *user, int n, const kiln_value *args,
                            const int *in_axes, int n_out) {
    const char *op = AD_VMAP_OP;
    kiln_graph *s = NULL;
    if (kiln_graph_create(g->ctx, "vmap_fn", &s)) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for fn's graph failed");
        return NULL;
    }
    s->parent = g;
    s->cur_file = g->cur_file, s->cur_line = g->cur_line;
    kiln_value in[KILN_MAX_OUTPUTS], outs[KILN_MAX_OUTPUTS];
    for (int i = 0; i < n && !s->status; i++) {
        const ir_node *a = &g->nodes[args[i].id];
        int ax = in_axes ? in_axes[i] : 0, r = 0;
        int64_t dims[KILN_MAX_RANK];
        for (int d = 0; d < a->shape.rank; d++)
            if (d != ax) dims[r++] = a->shape.dims[d];
        char name[32];
        snprintf(name, sizeof name, "x%d", i);
        in[i] = ax == KILN_VMAP_NONE
                    ? trace_parameter(s, op, name, a->dtype, a->shape.rank, a->shape.dims)
                    : trace_parameter(s, op, name, a->dtype, r, dims);
    }
    int got = s->status ? -1 : fn(s, n, in, user, outs);
    if (!s->status && got >= 0 && got == n_out) kiln_graph_finish(s, n_out, outs);
    s->parent = NULL;
    if (s->status)
        trace_fail(g, s->status, op, "in fn: %s", s->error ? s->error : "");
    else if (got < 0)
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "fn returned %d (an error of its own)",
                   got);
    else if (got != n_out)
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "fn returned %d values; n_out is %d", got,
                   n_out);
    if (g->status) {
        kiln_graph_destroy(s);
        return NULL;
    }
    return s;
}

/* Maps s's parameters: the args (batch moved to axis 0), then its captures (unbatched). */
static void map_params(ad_vmap *w, int n, const kiln_value *args, const int *in_axes) {
    const kiln_graph *s = w->s;
    for (int i = 0; i < n; i++) {
        uint32_t p = s->params[i];
        int ax = in_axes ? in_axes[i] : 0;
        w->batched[p] = ax != KILN_VMAP_NONE;
        w->map[p] = w->batched[p] ? ad_vmap_moveaxis(w, args[i], ax, 0) : args[i];
    }
    uint32_t first = s->n_params - s->n_captures;
    for (uint32_t c = 0; c < s->n_captures; c++)
        w->map[s->params[first + c]] = trace_value(w->g, s->captures[c]);
}

/* The value of output j of s with its batch axis at out_axes[j]. */
static kiln_value place_output(ad_vmap *w, int j, const int *out_axes) {
    uint32_t id = w->s->outputs[j];
    kiln_value v = w->map[id];
    const ir_node *o = &w->s->nodes[id];
    int ax = out_axes ? out_axes[j] : 0, r = o->shape.rank;
    char t[IR_TYPE_STR_MAX];
    ir_type_str(o->dtype, &o->shape, t, sizeof t);
    if (ax == KILN_VMAP_NONE && !w->batched[id]) return v;
    if (ax == KILN_VMAP_NONE)
        return trace_fail(w->g, KILN_STATUS_INVALID_ARGUMENT, AD_VMAP_OP,
                          "out_axes[%d] is KILN_VMAP_NONE but output %d (%s per example) depends "
                          "on a batched argument",
                          j, j, t);
    if (ax < 0 || ax > r || r + 1 > KILN_MAX_RANK)
        return trace_fail(w->g, KILN_STATUS_INVALID_ARGUMENT, AD_VMAP_OP,
                          "out_axes[%d] = %d is out of range for output %d (%s per example): an "
                          "axis in [0, %d]",
                          j, ax, j, t, r);
    if (!w->batched[id]) v = batch_broadcast(w, v);
    return ad_vmap_moveaxis(w, v, 0, ax);
}

static kiln_status run(kiln_graph *g, kiln_graph *s, int64_t size, int n, const kiln_value *args,
                       const int *in_axes, int n_out, const int *out_axes, kiln_value *outs) {
    ad_vmap w = {.g = g, .s = s, .size = size};
    uint8_t *used = host_calloc(g->ctx, s->n_nodes, 1);
    w.map = host_calloc(g->ctx, s->n_nodes, sizeof *w.map);
    w.batched = host_calloc(g->ctx, s->n_nodes, 1);
    snprintf(w.op, sizeof w.op, "%s", AD_VMAP_OP);
    if (!used || !w.map || !w.batched) {
        trace_fail(g, KILN_STATUS_HOST_OOM, AD_VMAP_OP, "host allocation for %u nodes failed",
                   s->n_nodes);
    } else {
        mark_used(s, used);
        map_params(&w, n, args, in_axes);
        walk(&w, used);
        for (int j = 0; j < n_out && !g->status; j++) outs[j] = place_output(&w, j, out_axes);
    }
    if (used) host_free(g->ctx, used, s->n_nodes);
    if (w.map) host_free(g->ctx, w.map, (size_t)s->n_nodes * sizeof *w.map);
    if (w.batched) host_free(g->ctx, w.batched, s->n_nodes);
    return g->status;
}

kiln_status kiln_vmap(kiln_graph *g, kiln_fn fn, void *user, int n, const kiln_value *args,
                      const int *in_axes, int n_out, const int *out_axes, kiln_value *outs) {
    const char *op = AD_VMAP_OP;
    int64_t size = 0;
    if (!trace_ready(g, op)) return fail_all(g, n_out, outs);
    if (!outs) return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "outs is NULL"), g->status;
    if (n < 1 || n > KILN_MAX_OUTPUTS || n_out < 1 || n_out > KILN_MAX_OUTPUTS) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "n is %d and n_out %d; both must be in [1, %d]", n, n_out, KILN_MAX_OUTPUTS);
        return fail_all(g, n_out, outs);
    }
    if (!fn || !args) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "%s is NULL", fn ? "args" : "fn");
        return fail_all(g, n_out, outs);
    }
    if (!check_args(g, n, args, in_axes, &size)) return fail_all(g, n_out, outs);
    kiln_graph *s = trace_fn(g, fn, user, n, args, in_axes, n_out);
    if (!s) return fail_all(g, n_out, outs);
    run(g, s, size, n, args, in_axes, n_out, out_axes, outs);
    kiln_graph_destroy(s);
    return g->status ? fail_all(g, n_out, outs) : KILN_STATUS_OK;
}
