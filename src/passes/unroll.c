/* unroll.c — small loops of a known trip count become straight-line code, as XLA's while
 * loop unroller makes them, so that fusion sees through the iterations: the carries of
 * one iteration are computed in registers by the next instead of being written to memory
 * and read back once per iteration by a control step. What JAX writes for jax.random's
 * Threefry (a while of 5 rounds on the counter array) is the case that asked for it: an
 * imported draw ran its 5 iterations as 5 passes over memory.
 *
 * A loop is unrolled when
 *  - it is a WHILE whose condition is `i < N` on one carry i (an i32 or i64 scalar) and N a
 *    constant (of the condition, or a captured constant), whose body returns i + s for a
 *    constant s > 0, and whose i starts from a constant: trip count ceil((N - i0) / s); or a
 *    SCAN with no scanned arrays, no per-iteration outputs and no checkpoint (kiln_fori_loop
 *    with static bounds): trip count its length;
 *  - its body holds nothing but elementwise and shape ops (no product, reduction, library
 *    kernel or nested control: unrolling those would grow the program, not its fusion);
 *  - the trip count is at most UNROLL_MAX_TRIP and times the body's size at most
 *    UNROLL_MAX_NODES (compile options' disable_passes keeps every loop).
 * Each iteration is the body's nodes copied in order, its parameters bound to the current
 * carries and the loop's captures, so the result is bitwise the loop's (the same ops in the
 * same order); the loop's results become the last carries. */
#include "passes.h"
#include "rewrite.h"

#include <string.h>

#define UNROLL_MAX_TRIP  64   /* iterations, as XLA's full unroll */
#define UNROLL_MAX_NODES 2048 /* trip count x body nodes */

/* The value of a rank-0 integer constant node, or false. Read from its bytes: an i64
 * beyond 2^53 does not pass through a double. */
static bool int_constant(const ir_node *c, int64_t *v) {
    if (c->op != IR_CONSTANT || c->shape.rank != 0 || !ir_dtype_is_int(c->dtype) || !c->data)
        return false;
    if (c->dtype == KILN_DTYPE_I32) {
        int32_t w;
        memcpy(&w, c->data, sizeof w);
        *v = w;
    } else {
        memcpy(v, c->data, sizeof *v);
    }
    return true;
}

/* The parameter position of sub-graph node p, or -1. */
static int param_index(const ir_node *p) {
    return p->op == IR_PARAMETER ? p->a.param_index : -1;
}

/* Whether every node of body is one an unrolled copy fuses: sources, elementwise and
 * shape ops. */
static bool body_fuses(const kiln_graph *body) {
    for (uint32_t i = 1; i < body->n_nodes; i++) {
        const ir_node *b = &body->nodes[i];
        const ir_op_info *o = &ir_ops[b->op];
        bool ok = b->op == IR_PARAMETER || b->op == IR_CONSTANT || b->op == IR_IOTA ||
                  (o->flags & IRF_ELEMENTWISE) || o->kind == IRK_SHAPE;
        if (!ok || (o->flags & IRF_EXPENSIVE)) return false;
    }
    return true;
}

/* Loop node id of g: its body and trip count when it is one this pass unrolls. */
static bool unrollable(const kiln_graph *g, uint32_t id, const kiln_graph **body_out,
                       int64_t *trip) {
    const ir_node *n = &g->nodes[id];
    if ((n->op != IR_WHILE && n->op != IR_SCAN) || !n->region) return false;
    int nc = n->a.ctl.n_carry;
    const kiln_graph *body = n->region->graphs[n->op == IR_WHILE ? 1 : 0];
    if (body->n_outputs != (uint32_t)nc || !body_fuses(body)) return false;
    if (n->op == IR_SCAN) {
        if (n->a.ctl.n_xs || n->a.ctl.checkpoint) return false;
        *trip = n->a.ctl.length;
    } else {
        const kiln_graph *cond = n->region->graphs[0];
        if (cond->n_outputs != 1) return false;
        const ir_node *c = &cond->nodes[cond->outputs[0]];
        if (c->op != IR_COMPARE || c->a.cmp != KILN_CMP_LT) return false;
        const ir_node *i = &cond->nodes[ir_in(c)[0]], *bound = &cond->nodes[ir_in(c)[1]];
        int k = param_index(i), bk = param_index(bound);
        if (k < 0 || k >= nc || i->shape.rank != 0 || !ir_dtype_is_int(i->dtype)) return false;
        int64_t limit, start, step;
        if (bk >= nc) /* a captured bound: the loop's input for that capture */
            bound = &g->nodes[ir_in(n)[ir_control_capture_base(n, 0) + (uint32_t)(bk - nc)]];
        if (!int_constant(bound, &limit) || !int_constant(&g->nodes[ir_in(n)[k]], &start))
            return false;
        const ir_node *next = &body->nodes[body->outputs[k]];
        if (next->op != IR_ADD) return false;
        const ir_node *a = &body->nodes[ir_in(next)[0]], *b = &body->nodes[ir_in(next)[1]];
        if (param_index(a) != k) { /* s + i */
            const ir_node *t = a;
            a = b, b = t;
        }
        if (param_index(a) != k || !int_constant(b, &step) || step <= 0) return false;
        /* exact in 128 bits; and the counter must reach its last value, start + trip *
         * step, without wrapping (a wrapped counter runs another number of times) */
        __int128 t = limit > start ? ((__int128)limit - start + step - 1) / step : 0;
        __int128 last = (__int128)start + t * step;
        __int128 top = i->dtype == KILN_DTYPE_I32 ? INT32_MAX : INT64_MAX;
        if (t > UNROLL_MAX_TRIP || last > top) return false;
        *trip = (int64_t)t;
    }
    *body_out = body;
    return *trip >= 0 && *trip <= UNROLL_MAX_TRIP &&
           *trip * (int64_t)body->n_nodes <= UNROLL_MAX_NODES;
}

typedef struct unroll_state {
    uint32_t **results; /* per old loop node unrolled: the new ids of its results */
    pass_stats *stats;
} unroll_state;

/* One copy of body's nodes with its parameters bound to params[] (new ids); the new ids
 * of its outputs into outs. */
static kiln_status iteration(pass_rebuild *rb, const kiln_graph *body, const uint32_t *params,
                             uint32_t *outs) {
    kiln_context *ctx = rb->g->ctx;
    uint32_t *smap = host_calloc(ctx, body->n_nodes, sizeof *smap);
    if (!smap) return ctx_error(ctx, KILN_STATUS_HOST_OOM, "pass unroll: host allocation failed");
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t i = 0; i < body->n_params; i++) smap[body->params[i]] = params[i];
    for (uint32_t b = 1; !s && b < body->n_nodes; b++) {
        const ir_node *o = &body->nodes[b];
        if (o->op == IR_PARAMETER) continue;
        uint32_t in[IR_INLINE_INPUTS * 4], *inp = in;
        if (o->n_in > sizeof in / sizeof *in && !(inp = host_alloc(ctx, o->n_in * sizeof *inp))) {
            s = ctx_error(ctx, KILN_STATUS_HOST_OOM, "pass unroll: host allocation failed");
            break;
        }
        for (uint32_t k = 0; k < o->n_in; k++) inp[k] = smap[ir_in(o)[k]];
        s = pass_emit_copy(rb, o, inp, &smap[b]);
        if (inp != in) host_free(ctx, inp, o->n_in * sizeof *inp);
    }
    for (uint32_t i = 0; !s && i < body->n_outputs; i++) outs[i] = smap[body->outputs[i]];
    host_free(ctx, smap, body->n_nodes * sizeof *smap);
    return s;
}

static kiln_status visit(pass_rebuild *rb, uint32_t id, void *user) {
    unroll_state *st = user;
    const kiln_graph *g = rb->old;
    const ir_node *n = &g->nodes[id];
    if (n->op == IR_RESULT && st->results[ir_in(n)[0]]) {
        rb->map[id] = st->results[ir_in(n)[0]][n->a.result_index];
        return KILN_STATUS_OK;
    }
    const kiln_graph *body;
    int64_t trip;
    if (!unrollable(g, id, &body, &trip)) return pass_copy(rb, id);
    kiln_context *ctx = rb->g->ctx;
    uint32_t nc = (uint32_t)n->a.ctl.n_carry, np = body->n_params;
    uint32_t base = ir_control_capture_base(n, n->op == IR_WHILE ? 1 : 0);
    uint32_t *params = host_alloc(ctx, (np + nc) * sizeof *params);
    if (!params) return ctx_error(ctx, KILN_STATUS_HOST_OOM, "pass unroll: host allocation failed");
    uint32_t *cur = params + np;
    for (uint32_t i = 0; i < nc; i++) cur[i] = pass_input(rb, id, i);
    for (uint32_t j = nc; j < np; j++) params[j] = pass_input(rb, id, base + (j - nc));
    kiln_status s = KILN_STATUS_OK;
    for (int64_t t = 0; !s && t < trip; t++) {
        memcpy(params, cur, nc * sizeof *cur);
        s = iteration(rb, body, params, cur);
    }
    if (!s && nc) {
        st->results[id] = host_alloc(ctx, nc * sizeof *cur);
        if (!st->results[id])
            s = ctx_error(ctx, KILN_STATUS_HOST_OOM, "pass unroll: host allocation failed");
        else
            memcpy(st->results[id], cur, nc * sizeof *cur);
    }
    if (!s) {
        rb->map[id] = nc ? cur[0] : 0;
        if (st->stats) st->stats->unrolled++;
    }
    host_free(ctx, params, (np + nc) * sizeof *params);
    return s;
}

kiln_status pass_unroll_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats) {
    *out = NULL;
    const kiln_graph *body;
    int64_t trip;
    bool any = false;
    for (uint32_t id = 1; id < g->n_nodes && !any; id++) any = unrollable(g, id, &body, &trip);
    if (!any) return KILN_STATUS_OK;
    unroll_state st = {.stats = stats};
    st.results = host_calloc(g->ctx, g->n_nodes, sizeof *st.results);
    if (!st.results)
        return ctx_error(g->ctx, KILN_STATUS_HOST_OOM, "pass unroll: host allocation failed");
    kiln_status s = pass_rebuild_graph(g, "unroll", visit, &st, out);
    for (uint32_t i = 0; i < g->n_nodes; i++)
        if (st.results[i])
            host_free(g->ctx, st.results[i],
                      (uint32_t)g->nodes[i].a.ctl.n_carry * sizeof *st.results[i]);
    host_free(g->ctx, st.results, g->n_nodes * sizeof *st.results);
    return s;
}
