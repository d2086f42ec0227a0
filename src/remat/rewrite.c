/* rewrite.c — the recomputation pass: every backward read of a forward value that is not
 * saved reads a recomputation of it instead (DESIGN §2.3).
 *
 * A value is dropped when a checkpoint region marked it (REMAT_DROP, by its policy:
 * checkpoint.c) or when the caller's `extra` names it (the memory budget's choice,
 * budget.c); `extra` may instead mark a value REMAT_WHY_KEEP, a checkpoint the budget
 * keeps, which becomes REMAT_KEEP (fusion gives it a buffer). Sources and
 * graph outputs are never dropped: they are held anyway. The pass rebuilds the graph in node order;
 * just before the first backward node (ir_node.backward) that reads a dropped value, it emits a
 * copy of that value, and, first, copies of each dropped value the copy needs in turn, so a
 * recomputation reads only values that are kept. Each dropped value is recomputed once and shared
 * by every later backward reader. The copies are REMAT_CLONE and `backward`: CSE never merges
 * them into the forward value (cse.c), fusion never joins them to a forward kernel
 * (fusion.c) but may inline them into their consumer, and the list scheduler runs them as
 * late as their readers allow (schedule.c). Forward nodes keep reading the originals, so
 * a dropped value dies with its last forward reader: that is the memory saved.
 *
 * Every copy computes exactly what its original did from the same inputs, so the
 * outputs are bitwise those of the graph without recomputation.
 *
 * An offloaded value (REMAT_OFFLOAD, or the budget's REMAT_WHY_BUDGET_OFFLOAD) is not
 * recomputed but moved: right after the value the pass emits a memory_put of it to
 * pinned_host memory (a forward node, so the device copy still dies with its last forward
 * reader), and just before its first backward reader a memory_put of that host copy back
 * to the device, REMAT_CLONE and `backward` like a recomputation (so the scheduler runs it
 * as late as its readers allow), which every backward reader, recomputations included,
 * then reads. The bytes are the same bytes, so the outputs are bitwise unchanged too. */
#include "internal.h"
#include "passes/rewrite.h"

#include <math.h>
#include <string.h>

typedef struct remat_state {
    const uint8_t *extra; /* per old node: a reason to drop it (remat_why), 0: none */
    uint8_t *output;      /* per old node: a graph output */
    uint32_t *clone;      /* per old node: the new id of its recomputation, 0: none yet */
    uint32_t *host;       /* per old node: the new id of its host copy (offloaded), 0: none */
    uint32_t *back;       /* per old node: the new id of the host copy brought back, 0: none */
    uint8_t *read_back;   /* per old node: the backward pass reads it, directly or through
                           * the recomputation of a dropped value it reads */
    remat_stats *st;
} remat_state;

/* Why old node id is dropped (REMAT_WHY_NONE: it is not). */
static remat_why drop_why(const pass_rebuild *rb, const remat_state *rs, uint32_t id) {
    const ir_node *n = &rb->old->nodes[id];
    if (n->backward || rs->output[id] || remat_fixed(rb->old, n)) return REMAT_WHY_NONE;
    remat_row r = remat_row_of(rb->old, id);
    if (r.mark == REMAT_DROP) return r.why ? (remat_why)r.why : REMAT_WHY_POLICY;
    if (r.mark == REMAT_OFFLOAD || !rs->extra) return REMAT_WHY_NONE;
    remat_why w = (remat_why)rs->extra[id];
    return w == REMAT_WHY_KEEP || w == REMAT_WHY_BUDGET_OFFLOAD ? REMAT_WHY_NONE : w;
}

/* Is old node id saved in host memory (and not recomputed)? */
static bool offloaded(const pass_rebuild *rb, const remat_state *rs, uint32_t id) {
    const ir_node *n = &rb->old->nodes[id];
    if (n->backward || rs->output[id] || !rs->read_back[id] || remat_fixed(rb->old, n) ||
        ir_is_fetch(rb->old, n) || drop_why(rb, rs, id))
        return false;
    if (remat_row_of(rb->old, id).mark == REMAT_OFFLOAD) return true;
    return rs->extra && rs->extra[id] == REMAT_WHY_BUDGET_OFFLOAD;
}

/* Emits memory_put(x, kind) of new node x, under x's name; its new id goes to *id. */
static kiln_status emit_put(pass_rebuild *rb, uint32_t x, kiln_memory_kind kind, uint32_t *id) {
    const ir_node *n = &rb->g->nodes[x];
    ir_node t = {.op = IR_MEMORY_PUT, .file = n->file, .line = n->line};
    t.a.memory_kind = (int)kind;
    if (n->name && !(t.name = host_strdup(rb->g->ctx, n->name)))
        return ctx_oom(rb->g->ctx, "pass remat: a name", strlen(n->name) + 1);
    kiln_status s = pass_emit(rb, &t, &x, 1, id);
    if (s && t.name) host_free(rb->g->ctx, t.name, strlen(t.name) + 1);
    return s;
}

/* Brings offloaded old node u back to the device (once), as a recomputation would be. */
static kiln_status emit_back(pass_rebuild *rb, remat_state *rs, uint32_t u) {
    if (rs->back[u]) return KILN_STATUS_OK;
    uint32_t nid;
    kiln_status s = emit_put(rb, rs->host[u], KILN_MEMORY_DEVICE, &nid);
    if (s) return s;
    remat_row *w = remat_row_make(rb->g, nid);
    if (!w) return ctx_oom(rb->g->ctx, "pass remat: the marks", sizeof *w);
    remat_row o_row = remat_row_of(rb->old, u);
    *w = (remat_row){.mark = REMAT_CLONE, .why = o_row.why, .policy = o_row.policy};
    if (o_row.mark != REMAT_OFFLOAD) /* the budget's choice (offloaded()), not a region's */
        w->why = REMAT_WHY_BUDGET_OFFLOAD, w->policy = 0;
    rb->g->nodes[nid].backward = true;
    rs->back[u] = nid;
    return KILN_STATUS_OK;
}

double remat_node_flops(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    int64_t out = 0;
    ir_shape_numel(&n->shape, &out);
    switch (ir_ops[n->op].kind) {
    case IRK_UNARY:
    case IRK_BINARY:
    case IRK_SELECT: return (double)out;
    case IRK_REDUCE: {
        int64_t in = 0;
        ir_shape_numel(&g->nodes[ir_in(n)[0]].shape, &in);
        return (double)in;
    }
    case IRK_DOT: {
        const ir_node *l = &g->nodes[ir_in(n)[0]];
        double k = 1;
        for (int i = 0; i < n->a.dot.n_contract; i++)
            k *= (double)l->shape.dims[n->a.dot.lhs_contract[i]];
        return 2.0 * (double)out * k;
    }
    case IRK_INDEX: return n->op == IR_SCATTER_ADD_ROWS ? (double)out : 0;
    case IRK_SCAN: return (double)out;
    case IRK_SORT: { /* n log2 n comparisons per row */
        const ir_node *x = &g->nodes[ir_in(n)[0]];
        int64_t in = 0;
        ir_shape_numel(&x->shape, &in);
        double len = (double)x->shape.dims[n->a.sort.axis];
        return (double)in * (len > 1 ? log2(len) : 1);
    }
    case IRK_ATTENTION: { /* the products over the (b, n, i, j) pairs seen: q k^T and p v;
                           * LSE q k^T; GRAD_V also p^T ct; GRAD_Q and GRAD_K q k^T, ct v^T
                           * and one more of H */
        const ir_node *q = &g->nodes[ir_in(n)[0]], *k = &g->nodes[ir_in(n)[1]];
        int r = q->shape.rank, kind = n->a.attn.kind;
        double T = (double)q->shape.dims[r - 3], S = (double)k->shape.dims[r - 3];
        double H = (double)q->shape.dims[r - 1];
        double Hv = kind == IR_ATTN_LSE ? 0 : (double)g->nodes[ir_in(n)[2]].shape.dims[r - 1];
        if (kind == IR_ATTN_FORWARD) Hv = (double)n->shape.dims[r - 1];
        if (kind == IR_ATTN_GRAD_Q || kind == IR_ATTN_GRAD_K) H *= 2;
        double heads = (double)q->shape.dims[r - 2] * (r == 4 ? (double)q->shape.dims[0] : 1);
        double pairs = !n->a.attn.causal ? T * S
                       : T <= S          ? T * (T + 1) / 2
                                         : S * (S + 1) / 2 + (T - S) * S;
        return heads * pairs * 2 * (H + Hv);
    }
    case IRK_CONV: { /* every kind makes the forward's products: 2 N O P I K */
        ir_conv_geom gm;
        char msg[128];
        if (ir_conv_geometry(g, n, &gm, msg, sizeof msg)) return 0;
        double macs = (double)gm.n * (double)gm.o * (double)gm.i;
        for (int d = 0; d < gm.ns; d++) macs *= (double)gm.out[d] * (double)gm.k[d];
        return 2 * macs;
    }
    case IRK_LINALG: { /* LAPACK's counts: potrf m^3 / 3, trsm m^2 per right-hand side */
        const ir_node *a = &g->nodes[ir_in(n)[0]];
        double m = (double)a->shape.dims[a->shape.rank - 1];
        int64_t na = 0;
        ir_shape_numel(&a->shape, &na);
        return n->op == IR_CHOLESKY ? (double)na * m / 3 : (double)out * m;
    }
    default: return 0; /* sources and shape ops move data only */
    }
}

/* Emits the recomputation of old node u (and, first, of the dropped values it reads). */
static kiln_status emit_clone(pass_rebuild *rb, remat_state *rs, uint32_t u) {
    if (rs->clone[u]) return KILN_STATUS_OK;
    const ir_node *o = &rb->old->nodes[u];
    const uint32_t *in = ir_in(o);
    for (uint32_t k = 0; k < o->n_in; k++) {
        kiln_status s = drop_why(rb, rs, in[k])    ? emit_clone(rb, rs, in[k])
                        : offloaded(rb, rs, in[k]) ? emit_back(rb, rs, in[k])
                                                   : KILN_STATUS_OK;
        if (s) return s;
    }
    /* pass_copy reads the map: point the dropped inputs at their copies meanwhile */
    uint32_t saved_u = rb->map[u];
    uint32_t stack[16], *saved = stack;
    if (o->n_in > 16 && !(saved = host_alloc(rb->g->ctx, o->n_in * sizeof *saved)))
        return ctx_oom(rb->g->ctx, "pass remat: an input list", o->n_in * sizeof *saved);
    for (uint32_t k = 0; k < o->n_in; k++) saved[k] = rb->map[in[k]];
    for (uint32_t k = 0; k < o->n_in; k++)
        if (drop_why(rb, rs, in[k]))
            rb->map[in[k]] = rs->clone[in[k]];
        else if (rs->back[in[k]])
            rb->map[in[k]] = rs->back[in[k]];
    kiln_status s = pass_copy(rb, u);
    uint32_t nid = rb->map[u];
    for (uint32_t k = o->n_in; k-- > 0;) rb->map[in[k]] = saved[k];
    rb->map[u] = saved_u;
    if (saved != stack) host_free(rb->g->ctx, saved, o->n_in * sizeof *saved);
    if (s) return s;
    remat_row *w = remat_row_make(rb->g, nid);
    if (!w) return ctx_oom(rb->g->ctx, "pass remat: the marks", sizeof *w);
    remat_row o_row = remat_row_of(rb->old, u);
    *w = (remat_row){
        .mark = REMAT_CLONE, .why = (uint8_t)drop_why(rb, rs, u), .policy = o_row.policy};
    rb->g->nodes[nid].backward = true;
    rs->clone[u] = nid;
    rs->st->n_recomputed++;
    rs->st->added_flops += remat_node_flops(rb->old, u);
    size_t bytes = 0;
    ir_shape_nbytes(&o->shape, o->dtype, &bytes);
    rs->st->added_bytes += (double)bytes;
    return KILN_STATUS_OK;
}

static kiln_status visit(pass_rebuild *rb, uint32_t id, void *user) {
    remat_state *rs = user;
    const ir_node *o = &rb->old->nodes[id];
    if (!o->backward) {
        kiln_status s = pass_copy(rb, id);
        if (!s && offloaded(rb, rs, id)) {
            size_t bytes = 0;
            ir_shape_nbytes(&o->shape, o->dtype, &bytes);
            s = emit_put(rb, rb->map[id], KILN_MEMORY_PINNED_HOST, &rs->host[id]);
            rs->st->n_offloaded++;
            rs->st->offload_bytes += bytes;
        }
        if (s || !rs->extra || rs->extra[id] != REMAT_WHY_KEEP) return s;
        remat_row *w = remat_row_make(rb->g, rb->map[id]);
        if (!w) return ctx_oom(rb->g->ctx, "pass remat: the marks", sizeof *w);
        remat_row o_row = remat_row_of(rb->old, id); /* a dropped value kept keeps its reason */
        *w = (remat_row){.mark = REMAT_KEEP, .why = o_row.why, .policy = o_row.policy};
        return KILN_STATUS_OK;
    }
    const uint32_t *in = ir_in(o);
    bool any = false;
    for (uint32_t k = 0; k < o->n_in; k++) {
        bool drop = drop_why(rb, rs, in[k]) != REMAT_WHY_NONE;
        if (!drop && !offloaded(rb, rs, in[k])) continue;
        kiln_status s = drop ? emit_clone(rb, rs, in[k]) : emit_back(rb, rs, in[k]);
        if (s) return s;
        any = true;
    }
    if (!any) return pass_copy(rb, id);
    uint32_t stack[16], *saved = stack;
    if (o->n_in > 16 && !(saved = host_alloc(rb->g->ctx, o->n_in * sizeof *saved)))
        return ctx_oom(rb->g->ctx, "pass remat: an input list", o->n_in * sizeof *saved);
    for (uint32_t k = 0; k < o->n_in; k++) saved[k] = rb->map[in[k]];
    for (uint32_t k = 0; k < o->n_in; k++)
        if (drop_why(rb, rs, in[k]))
            rb->map[in[k]] = rs->clone[in[k]];
        else if (rs->back[in[k]])
            rb->map[in[k]] = rs->back[in[k]];
    uint32_t keep = rb->map[id];
    kiln_status s = pass_copy(rb, id);
    uint32_t nid = rb->map[id];
    for (uint32_t k = o->n_in; k-- > 0;) rb->map[in[k]] = saved[k];
    rb->map[id] = s ? keep : nid;
    if (saved != stack) host_free(rb->g->ctx, saved, o->n_in * sizeof *saved);
    return s;
}

kiln_status remat_rewrite(const kiln_graph *g, const uint8_t *extra, kiln_graph **out,
                          remat_stats *st) {
    kiln_context *ctx = g->ctx;
    *out = NULL;
    remat_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    remat_state rs = {.extra = extra, .st = st};
    rs.output = host_calloc(ctx, g->n_nodes, 1);
    rs.clone = host_calloc(ctx, g->n_nodes, sizeof *rs.clone);
    rs.host = host_calloc(ctx, g->n_nodes, sizeof *rs.host);
    rs.back = host_calloc(ctx, g->n_nodes, sizeof *rs.back);
    rs.read_back = host_calloc(ctx, g->n_nodes, 1);
    kiln_status s = KILN_STATUS_OK;
    if (!rs.output || !rs.clone || !rs.host || !rs.back || !rs.read_back)
        s = ctx_oom(ctx, "pass remat: work arrays", (size_t)g->n_nodes * sizeof *rs.clone);
    for (uint32_t i = 0; !s && i < g->n_outputs; i++) rs.output[g->outputs[i]] = 1;
    /* readers have higher ids: one pass downwards sees every reader first */
    pass_rebuild probe = {.old = g};
    for (uint32_t id = g->n_nodes; !s && id-- > 1;) {
        const ir_node *n = &g->nodes[id];
        if (!n->backward && !(rs.read_back[id] && drop_why(&probe, &rs, id))) continue;
        for (uint32_t k = 0; k < n->n_in; k++) rs.read_back[ir_in(n)[k]] = 1;
    }
    if (!s) s = pass_rebuild_graph(g, "remat", visit, &rs, out);
    if (!s)
        for (uint32_t id = 1; id < (*out)->n_nodes; id++)
            st->step_flops += remat_node_flops(*out, id);
    host_free(ctx, rs.output, g->n_nodes);
    host_free(ctx, rs.clone, (size_t)g->n_nodes * sizeof *rs.clone);
    host_free(ctx, rs.host, (size_t)g->n_nodes * sizeof *rs.host);
    host_free(ctx, rs.back, (size_t)g->n_nodes * sizeof *rs.back);
    host_free(ctx, rs.read_back, g->n_nodes);
    return s;
}
