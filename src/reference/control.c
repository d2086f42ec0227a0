/* control.c — the reference evaluation of control nodes (while, scan, cond) and of their
 * RESULT nodes, by running their sub-graphs (ir.h, "ir_region") with the interpreter
 * itself (ref_eval_host), one iteration or branch at a time.
 *
 * A control node's results: the driver (interp.c) gives the node its result 0 as its own
 * value and a buffer per further result in its ref_value's `extra`; a RESULT node copies
 * its result from there. Carries are held in fresh buffers between iterations, each
 * iteration's outputs replacing the last's, so the reference holds two generations of
 * carries at most. */
#include "reference.h"

#include <stdio.h>

static size_t bytes_of(const ir_node *n) {
    size_t b = 0;
    ir_shape_nbytes(&n->shape, n->dtype, &b);
    return b;
}

static size_t param_bytes(const kiln_graph *s, uint32_t p) {
    return bytes_of(&s->nodes[s->params[p]]);
}

/* The buffer of result i of control node `id`. */
static void *result_buf(const ref_value *vals, uint32_t id, uint32_t i, void *out) {
    return i ? vals[id].extra[i - 1] : out;
}

static void free_outs(const kiln_graph *s, void **outs) {
    for (uint32_t i = 0; i < s->n_outputs; i++) {
        host_free(s->ctx, outs[i], bytes_of(&s->nodes[s->outputs[i]]));
        outs[i] = NULL;
    }
}

/* Runs sub-graph s on args; its outputs in fresh buffers (outs). The message says which
 * control node failed. */
static kiln_status run_sub(const kiln_graph *g, uint32_t id, const kiln_graph *s,
                           const void *const *args, void **outs) {
    kiln_status st = ref_eval_host(s, args, outs);
    if (st) {
        char msg[KN_ERR_MAX - 96];
        kiln_last_error_copy(g->ctx, msg, sizeof msg);
        return ctx_error(g->ctx, st, "%s %%%u, sub-graph '%s': %s", ir_ops[g->nodes[id].op].name,
                         id, s->name, msg);
    }
    return KILN_STATUS_OK;
}

/* The arguments of sub-graph k: the first n_passed given, then its captures. */
static void capture_args(const kiln_graph *g, uint32_t id, uint32_t k, const ref_value *vals,
                         const void **args, uint32_t n_passed) {
    const ir_node *n = &g->nodes[id];
    uint32_t base = ir_control_capture_base(n, k), nc = ir_control_n_captures(n, k);
    for (uint32_t c = 0; c < nc; c++) args[n_passed + c] = vals[ir_in(n)[base + c]].data;
}

/* Carries: fresh copies of the inputs first (the sub-graph's outputs replace them). */
static kiln_status copy_carries(const kiln_graph *g, uint32_t id, const ref_value *vals,
                                const kiln_graph *s, uint32_t first, uint32_t nc, void **cur) {
    const ir_node *n = &g->nodes[id];
    for (uint32_t j = 0; j < nc; j++) {
        size_t b = param_bytes(s, j);
        cur[j] = NULL;
        if (b && !(cur[j] = host_alloc(g->ctx, b))) {
            for (uint32_t i = 0; i < j; i++) host_free(g->ctx, cur[i], param_bytes(s, i));
            return ctx_oom(g->ctx, "reference interpreter: a loop's carry", b);
        }
        if (b) memcpy(cur[j], vals[ir_in(n)[first + j]].data, b);
    }
    return KILN_STATUS_OK;
}

static void free_carries(const kiln_graph *s, void **cur, uint32_t nc) {
    for (uint32_t j = 0; j < nc; j++) host_free(s->ctx, cur[j], param_bytes(s, j)), cur[j] = NULL;
}

/* The final carries into the node's results [0, nc). */
static void store_carries(const kiln_graph *s, const ref_value *vals, uint32_t id, void *out,
                          void **cur, uint32_t nc) {
    for (uint32_t j = 0; j < nc; j++) {
        size_t b = param_bytes(s, j);
        if (b) memcpy(result_buf(vals, id, j, out), cur[j], b);
    }
}

static kiln_status ref_while(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    const kiln_graph *cs = n->region->graphs[0], *bs = n->region->graphs[1];
    uint32_t nc = (uint32_t)n->a.ctl.n_carry;
    void **cur = host_calloc(g->ctx, 2 * nc + 1, sizeof *cur);
    const void **args = host_calloc(g->ctx, cs->n_params + bs->n_params + 1, sizeof *args);
    kiln_status st = cur && args ? copy_carries(g, id, vals, bs, 0, nc, cur)
                                 : ctx_oom(g->ctx, "reference interpreter: a loop", nc);
    while (!st) {
        for (uint32_t j = 0; j < nc; j++) args[j] = cur[j];
        capture_args(g, id, 0, vals, args, nc);
        void *c = NULL;
        if ((st = run_sub(g, id, cs, args, &c))) break;
        bool go = *(const bool *)c;
        host_free(g->ctx, c, 1);
        if (!go) break;
        capture_args(g, id, 1, vals, args, nc);
        void **next = cur + nc;
        if ((st = run_sub(g, id, bs, args, next))) break;
        free_carries(bs, cur, nc);
        for (uint32_t j = 0; j < nc; j++) cur[j] = next[j], next[j] = NULL;
    }
    if (!st) store_carries(bs, vals, id, out, cur, nc);
    if (cur) free_carries(bs, cur, nc);
    if (cur) host_free(g->ctx, cur, (2 * nc + 1) * sizeof *cur);
    if (args) host_free(g->ctx, args, (cs->n_params + bs->n_params + 1) * sizeof *args);
    return st;
}

/* One scan iteration at slice i: the body on (carries, slices, captures); its new carries
 * replace cur, its per-iteration outputs go to slice i of the stacked results. */
static kiln_status scan_step(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out,
                             void **cur, const void **args, void **outs, int64_t i) {
    const ir_node *n = &g->nodes[id];
    const kiln_graph *bs = n->region->graphs[0];
    uint32_t nc = (uint32_t)n->a.ctl.n_carry, nx = (uint32_t)n->a.ctl.n_xs;
    for (uint32_t j = 0; j < nc; j++) args[j] = cur[j];
    for (uint32_t x = 0; x < nx; x++) {
        const char *base = vals[ir_in(n)[nc + x]].data;
        args[nc + x] = base ? base + (size_t)i * param_bytes(bs, nc + x) : NULL;
    }
    capture_args(g, id, 0, vals, args, nc + nx);
    kiln_status st = run_sub(g, id, bs, args, outs);
    if (st) return st;
    free_carries(bs, cur, nc);
    for (uint32_t j = 0; j < nc; j++) cur[j] = outs[j], outs[j] = NULL;
    for (uint32_t y = nc; y < bs->n_outputs; y++) {
        size_t b = bytes_of(&bs->nodes[bs->outputs[y]]);
        if (b) memcpy((char *)result_buf(vals, id, y, out) + (size_t)i * b, outs[y], b);
        host_free(g->ctx, outs[y], b);
        outs[y] = NULL;
    }
    return KILN_STATUS_OK;
}

static kiln_status ref_scan(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    const kiln_graph *bs = n->region->graphs[0];
    uint32_t nc = (uint32_t)n->a.ctl.n_carry;
    void **cur = host_calloc(g->ctx, nc + bs->n_outputs + 1, sizeof *cur);
    const void **args = host_calloc(g->ctx, bs->n_params + 1, sizeof *args);
    kiln_status st = cur && args ? copy_carries(g, id, vals, bs, 0, nc, cur)
                                 : ctx_oom(g->ctx, "reference interpreter: a scan", nc);
    int64_t len = n->a.ctl.length;
    for (int64_t it = 0; it < len && !st; it++)
        st = scan_step(g, id, vals, out, cur, args, cur + nc, n->a.ctl.reverse ? len - 1 - it : it);
    if (!st) store_carries(bs, vals, id, out, cur, nc);
    if (cur) {
        free_carries(bs, cur, nc);
        free_outs(bs, cur + nc);
        host_free(g->ctx, cur, (nc + bs->n_outputs + 1) * sizeof *cur);
    }
    if (args) host_free(g->ctx, args, (bs->n_params + 1) * sizeof *args);
    return st;
}

static kiln_status ref_cond(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    const ir_region *r = n->region;
    int32_t k = *(const int32_t *)vals[ir_in(n)[0]].data;
    if (k < 0) k = 0; /* clamped, as lax.switch clamps */
    if ((uint32_t)k >= r->n_graphs) k = (int32_t)r->n_graphs - 1;
    const kiln_graph *s = r->graphs[k];
    uint32_t np = (uint32_t)n->a.ctl.n_carry;
    const void **args = host_calloc(g->ctx, s->n_params + 1, sizeof *args);
    void **outs = host_calloc(g->ctx, s->n_outputs + 1, sizeof *outs);
    kiln_status st = KILN_STATUS_OK;
    if (!args || !outs) st = ctx_oom(g->ctx, "reference interpreter: a cond", s->n_params);
    for (uint32_t j = 0; !st && j < np; j++) args[j] = vals[ir_in(n)[1 + j]].data;
    if (!st) capture_args(g, id, (uint32_t)k, vals, args, np);
    if (!st) st = run_sub(g, id, s, args, outs);
    for (uint32_t j = 0; !st && j < s->n_outputs; j++) {
        size_t b = bytes_of(&s->nodes[s->outputs[j]]);
        if (b) memcpy(result_buf(vals, id, j, out), outs[j], b);
    }
    if (outs) free_outs(s, outs), host_free(g->ctx, outs, (s->n_outputs + 1) * sizeof *outs);
    if (args) host_free(g->ctx, args, (s->n_params + 1) * sizeof *args);
    return st;
}

static kiln_status ref_result(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id];
    size_t b = bytes_of(n);
    if (b) memcpy(out, vals[ir_in(n)[0]].extra[n->a.result_index - 1], b);
    return KILN_STATUS_OK;
}

ref_eval_fn ref_control_eval(ir_op op) {
    switch (op) {
    case IR_WHILE: return ref_while;
    case IR_SCAN: return ref_scan;
    case IR_COND: return ref_cond;
    case IR_RESULT: return ref_result;
    default: return NULL;
    }
}
