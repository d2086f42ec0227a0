/* control.c — control nodes compiled (executable.h, "exec_control"): each sub-graph of a
 * while, scan or cond becomes an executable of its own for the same device, compiled once
 * per region (the passes and the budget search rebuild the graph around a control node
 * many times; its region, shared by reference, stays the same), and the control step's
 * scratch is laid out for the run (src/runtime/run_control.c).
 *
 * Loop-carried values are updated in place: the body is compiled with its carries donated,
 * each only to its own new value (plan_options.donate_to), so where the body's plan writes
 * a carry's new value over the old one, the loop needs nothing more; for a carry it cannot
 * (the old value is read after the new one is written), the scratch holds a spare the two
 * generations alternate in. The scratch also holds the arena of the sub-graph that runs
 * (the largest of them: one runs at a time) and, for a while loop, the condition's flag.
 * So the outer plan holds a loop's whole memory, planned once, whatever its trip count. */
#include "compile.h"

#include <string.h>

#define ALIGNED(x) (((x) + PLAN_ALIGN - 1) & ~(PLAN_ALIGN - 1))

static uint64_t bytes_of(kiln_dtype t, const ir_shape *s) {
    size_t b = 0;
    ir_shape_nbytes(s, t, &b);
    return b;
}

const exec_control *exec_control_of(const kiln_executable *e, const ir_region *r, uint32_t *index) {
    for (uint32_t i = 0; i < e->n_ctls; i++)
        if (e->ctls[i].region == r) {
            if (index) *index = i;
            return &e->ctls[i];
        }
    return NULL;
}

/* Compiles sub-graph k of control node n; a loop body with its carries donated to their
 * own new values. */
static kiln_status compile_sub(const kiln_executable *e, const kiln_compile_options *o,
                               const ir_node *n, uint32_t k, kiln_executable **out) {
    kiln_graph *s = n->region->graphs[k];
    bool body = (n->op == IR_WHILE && k == 1) || n->op == IR_SCAN;
    uint32_t nc = body ? (uint32_t)n->a.ctl.n_carry : 0;
    int donate[KILN_MAX_OUTPUTS + 1];
    int32_t *to = host_alloc(e->ctx, (s->n_params + 1) * sizeof *to);
    if (!to) return ctx_oom(e->ctx, "kiln_compile: a loop body's donations", s->n_params);
    for (uint32_t p = 0; p < s->n_params; p++) to[p] = p < nc ? (int32_t)p : -1;
    for (uint32_t j = 0; j < nc; j++) donate[j] = (int)j;
    kiln_compile_options so = *o;
    so.donate_argnums = nc ? donate : NULL;
    so.n_donate = (int)nc;
    so.budget_result = NULL; /* the program's, not its bodies' */
    /* a program whose IR is kept keeps its sub-graphs' too (the reports and the CUDA
     * emulation read them) */
    kiln_status st = exec_compile(s, &so, nc ? to : NULL, true, out);
    host_free(e->ctx, to, (s->n_params + 1) * sizeof *to);
    if (st) {
        char msg[KN_ERR_MAX - 96];
        kiln_last_error_copy(e->ctx, msg, sizeof msg);
        return ctx_error(e->ctx, st, "kiln_compile: %s's sub-graph '%s': %s", ir_ops[n->op].name,
                         s->name, msg);
    }
    return KILN_STATUS_OK;
}

/* The scratch layout: the largest arena, then the spares, then the flag. */
static void lay_out(exec_control *c) {
    uint64_t at = 0;
    for (uint32_t k = 0; k < c->n_subs; k++)
        if (c->subs[k]->arena > at) at = c->subs[k]->arena;
    at = ALIGNED(at);
    for (uint32_t j = 0; j < c->n_carry && c->op != IR_COND; j++) {
        c->in_place[j] = c->subs[c->n_subs - 1]->output_donor[j] == (int32_t)j;
        if (c->in_place[j] || !c->res_bytes[j]) continue;
        c->spare_at[j] = at;
        at += ALIGNED(c->res_bytes[j]);
    }
    c->flag_at = at;
    if (c->op == IR_WHILE) at += PLAN_ALIGN;
    c->scratch = at;
}

static kiln_status fill(kiln_executable *e, const kiln_compile_options *o, const ir_node *n,
                        exec_control *c) {
    kiln_context *ctx = e->ctx;
    const ir_region *r = n->region;
    c->op = (uint8_t)n->op;
    c->reverse = n->a.ctl.reverse;
    c->n_subs = r->n_graphs;
    c->n_in = n->n_in;
    c->n_res = ir_control_n_results(n);
    c->n_carry = (uint32_t)n->a.ctl.n_carry;
    c->n_xs = (uint32_t)n->a.ctl.n_xs;
    c->length = n->a.ctl.length;
    c->subs = host_calloc(ctx, c->n_subs, sizeof *c->subs);
    c->res_bytes = host_calloc(ctx, c->n_res, sizeof *c->res_bytes);
    c->x_bytes = host_calloc(ctx, c->n_xs + 1, sizeof *c->x_bytes);
    c->cap_base = host_calloc(ctx, c->n_subs, sizeof *c->cap_base);
    c->in_place = host_calloc(ctx, c->n_carry + 1, 1);
    c->spare_at = host_calloc(ctx, c->n_carry + 1, sizeof *c->spare_at);
    if (!c->subs || !c->res_bytes || !c->x_bytes || !c->cap_base || !c->in_place || !c->spare_at)
        return ctx_oom(ctx, "kiln_compile: a control node", c->n_res * sizeof *c->res_bytes);
    for (uint32_t i = 0; i < c->n_res; i++) {
        kiln_dtype t;
        ir_shape s;
        ir_control_result_type(n, i, &t, &s);
        if (n->op == IR_SCAN && i >= c->n_carry) { /* one slice of a stacked y */
            s.rank--;
            memmove(s.dims, s.dims + 1, (size_t)s.rank * sizeof *s.dims);
        }
        c->res_bytes[i] = bytes_of(t, &s);
    }
    const kiln_graph *b = r->graphs[0];
    for (uint32_t x = 0; x < c->n_xs; x++) {
        const ir_node *p = &b->nodes[b->params[c->n_carry + x]];
        c->x_bytes[x] = bytes_of(p->dtype, &p->shape);
    }
    for (uint32_t k = 0; k < c->n_subs; k++) c->cap_base[k] = ir_control_capture_base(n, k);
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t k = 0; k < c->n_subs && !s; k++) s = compile_sub(e, o, n, k, &c->subs[k]);
    if (!s) lay_out(c);
    return s;
}

kiln_status exec_controls_compile(kiln_executable *e, const kiln_compile_options *o) {
    const kiln_graph *g = e->g;
    uint32_t count = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++)
        count += ir_ops[g->nodes[id].op].kind == IRK_CONTROL;
    if (!count) return KILN_STATUS_OK;
    if (!(e->ctls = host_calloc(e->ctx, count, sizeof *e->ctls)))
        return ctx_oom(e->ctx, "kiln_compile: control nodes", count * sizeof *e->ctls);
    e->cap_ctls = count;
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t id = 1; id < g->n_nodes && !s; id++) {
        const ir_node *n = &g->nodes[id];
        if (ir_ops[n->op].kind != IRK_CONTROL || exec_control_of(e, n->region, NULL)) continue;
        exec_control *c = &e->ctls[e->n_ctls++];
        c->region = ir_region_ref(n->region);
        s = fill(e, o, n, c);
    }
    return s;
}

uint64_t exec_control_scratch(const kiln_executable *e, const ir_node *n) {
    const exec_control *c = exec_control_of(e, n->region, NULL);
    return c ? c->scratch : 0;
}

void exec_controls_forget_regions(kiln_executable *e) {
    for (uint32_t i = 0; i < e->n_ctls; i++) {
        ir_region_unref(e->ctx, (ir_region *)e->ctls[i].region);
        e->ctls[i].region = NULL;
    }
}

void exec_controls_free(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
    exec_controls_forget_regions(e);
    for (uint32_t i = 0; i < e->n_ctls; i++) {
        exec_control *c = &e->ctls[i];
        for (uint32_t k = 0; c->subs && k < c->n_subs; k++) kiln_executable_destroy(c->subs[k]);
        host_free(ctx, c->subs, c->n_subs * sizeof *c->subs);
        host_free(ctx, c->res_bytes, c->n_res * sizeof *c->res_bytes);
        host_free(ctx, c->x_bytes, (c->n_xs + 1) * sizeof *c->x_bytes);
        host_free(ctx, c->cap_base, c->n_subs * sizeof *c->cap_base);
        host_free(ctx, c->in_place, c->n_carry + 1);
        host_free(ctx, c->spare_at, (c->n_carry + 1) * sizeof *c->spare_at);
    }
    if (e->ctls) host_free(ctx, e->ctls, e->cap_ctls * sizeof *e->ctls);
    e->ctls = NULL, e->n_ctls = e->cap_ctls = 0;
}
