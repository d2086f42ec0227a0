/* compile.c — kiln_compile: a graph into an executable (its lifetime and checks:
 * src/runtime/executable.c; running it: src/runtime/run.c).
 *
 * Compile: copy and optimise the graph (src/passes), fuse it into kernels, lower each
 * dot_general onto the backend's batched gemm (src/codegen/lower_dot.c: layouts and the
 * packing scratch it needs), plan the memory (src/plan: schedule, buffers, in place,
 * donation), generate the loop kernels' source (src/codegen; after planning, since a
 * kernel that runs in place must not declare its aliased pointers restrict), and have
 * the device's backend compile it into a program and find each kernel in it; then turn
 * it all into the step list a call walks (steps.c) and free the IR, unless
 * kiln_compile_options.keep_ir keeps it for the reports that print it. Only the backend
 * table (backend_impl.h) is seen here: the program is an opaque handle. */
#include "compile.h"
#include "runtime/tier.h"
#include "comm/comm.h"
#include "report/dump.h"
#include "report/report.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <stdio.h>
#include <math.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether the device's backend has library op `op` at all. */
static bool lib_has(const kn_device *dev, kn_lib_op op) {
    const kn_backend *b = dev->backend;
    return b->lib_supports && b->lib_supports(dev->state, dev->index, op, NULL);
}

/* Whether the device's kernels take every node of g of the attention gradient's kinds,
 * each asked with its own description (a GPU's take 16-bit operands on tensor cores, and
 * leave f32 to the products of the primitive form): the kinds are expanded together or
 * not at all. Those with a finite fill are expanded whatever the answer (expand.c). */
static bool grad_kernels_take_all(const kn_device *dev, const kiln_graph *g) {
    if (!lib_has(dev, KN_LIB_ATTENTION_GRAD)) return false;
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->op != IR_ATTENTION || n->a.attn.kind == IR_ATTN_FORWARD ||
            n->a.attn.fill != -INFINITY)
            continue;
        kn_lib_desc d = {.op = KN_LIB_ATTENTION_GRAD};
        exec_attention_desc(g, id, &d.attention);
        d.dtype = d.attention.dtype;
        if (!dev->backend->lib_supports(dev->state, dev->index, d.op, &d)) return false;
    }
    return true;
}

/* The library ops this program calls, each one the backend may not have: the first one
 * missing fails the compile, naming the op and the backend. */
static kiln_status check_backend(const kiln_executable *e) {
    const kn_backend *b = e->dev->backend;
    if (!b->program_compile)
        return ctx_error(e->ctx, KILN_STATUS_UNIMPLEMENTED,
                         "kiln_compile: device %s cannot run compiled programs (the %s backend "
                         "has no program_compile)",
                         e->dev->name, b->name);
    for (uint32_t i = 0; i < e->plan.n_kernels; i++) {
        const fkernel *k = &e->plan.kernels[i];
        int op = -1;
        if (k->kind == FK_DOT && !lib_has(e->dev, KN_LIB_GEMM)) op = KN_LIB_GEMM;
        if (k->kind == FK_DOT && !lib_has(e->dev, KN_LIB_PERMUTE) &&
            (e->dots[i].pack_a || e->dots[i].pack_b))
            op = KN_LIB_PERMUTE;
        if (k->kind == FK_SCATTER && !lib_has(e->dev, KN_LIB_SCATTER_ADD_ROWS))
            op = KN_LIB_SCATTER_ADD_ROWS;
        if (k->kind == FK_SCAN && !lib_has(e->dev, KN_LIB_CUMSUM)) op = KN_LIB_CUMSUM;
        if (k->kind == FK_SORT && !lib_has(e->dev, KN_LIB_ARGSORT)) op = KN_LIB_ARGSORT;
        if (k->kind == FK_CONV && !lib_has(e->dev, KN_LIB_CONV)) op = KN_LIB_CONV;
        if (k->kind == FK_LINALG)
            op = e->g->nodes[k->roots[0]].op == IR_CHOLESKY
                     ? (lib_has(e->dev, KN_LIB_CHOLESKY) ? -1 : KN_LIB_CHOLESKY)
                     : (lib_has(e->dev, KN_LIB_TRIANGULAR_SOLVE) ? -1 : KN_LIB_TRIANGULAR_SOLVE);
        if (op >= 0)
            return ctx_error(e->ctx, KILN_STATUS_UNIMPLEMENTED,
                             "kiln_compile: node %%%u (%s) of '%s' needs the %s backend's %s, "
                             "which it does not have (device %s)",
                             k->roots[0], ir_ops[e->g->nodes[k->roots[0]].op].name, e->g->name,
                             b->name, kn_lib_op_name((kn_lib_op)op), e->dev->name);
    }
    return KILN_STATUS_OK;
}

/* Each library call as the step list has it: one the backend refuses (a dtype or size it
 * cannot do) fails the compile, naming the kernel, the op and its dtype. */
static kiln_status check_lib_calls(const kiln_executable *e) {
    const kn_backend *b = e->dev->backend;
    for (uint32_t i = 0; i < e->n_steps; i++) {
        const exec_step *st = &e->steps[i];
        if (st->kind != EXEC_STEP_LIB) continue;
        const kn_lib_desc *d = &e->libs[st->lib];
        if (b->lib_supports(e->dev->state, e->dev->index, d->op, d)) continue;
        uint32_t root = e->plan.kernels[st->kernel].roots[0];
        char size[128] = "";
        if (d->op == KN_LIB_GEMM)
            snprintf(size, sizeof size, " (m=%lld n=%lld k=%lld batch=%lld)", (long long)d->gemm.m,
                     (long long)d->gemm.n, (long long)d->gemm.k, (long long)d->gemm.batch);
        return ctx_error(e->ctx, KILN_STATUS_UNIMPLEMENTED,
                         "kiln_compile: node %%%u (%s) of '%s' needs the %s backend's %s for "
                         "%s%s, which it cannot do (device %s)",
                         root, ir_ops[e->g->nodes[root].op].name, e->g->name, b->name,
                         kn_lib_op_name(d->op), kiln_dtype_name(d->dtype), size, e->dev->name);
    }
    return KILN_STATUS_OK;
}

kn_lib_op exec_attention_op(const kiln_graph *g, uint32_t id) {
    return g->nodes[id].a.attn.kind == IR_ATTN_FORWARD ? KN_LIB_ATTENTION : KN_LIB_ATTENTION_GRAD;
}

/* Any kind (ir.h, ir_attn_kind: the same values as kn_attention_kind's); LSE reads no
 * value, so its hv is 0. */
void exec_attention_desc(const kiln_graph *g, uint32_t id, kn_attention_desc *d) {
    const ir_node *n = &g->nodes[id], *qn = &g->nodes[ir_in(n)[0]];
    const ir_shape *q = &qn->shape, *k = &g->nodes[ir_in(n)[1]].shape;
    int o = q->rank - 3, kind = n->a.attn.kind;
    const ir_shape *v = kind == IR_ATTN_LSE ? NULL : &g->nodes[ir_in(n)[2]].shape;
    *d = (kn_attention_desc){.dtype = qn->dtype,
                             .kind = (kn_attention_kind)kind,
                             .batch = o ? q->dims[0] : 1,
                             .t = q->dims[o],
                             .s = k->dims[o],
                             .heads = q->dims[o + 1],
                             .kv_heads = k->dims[o + 1],
                             .h = q->dims[o + 2],
                             .hv = v ? v->dims[o + 2] : 0,
                             .scale = n->a.attn.scale,
                             .causal = n->a.attn.causal,
                             .fill = n->a.attn.fill};
}

void exec_sort_desc(const kiln_graph *g, uint32_t id, kn_lib_desc *d) {
    const ir_node *n = &g->nodes[id], *x = &g->nodes[ir_in(n)[0]];
    int ax = n->a.sort.axis;
    *d = (kn_lib_desc){.op = KN_LIB_ARGSORT, .dtype = x->dtype};
    d->sort = (kn_sort_desc){.outer = 1,
                             .n = x->shape.dims[ax],
                             .inner = 1,
                             .k = n->a.sort.k,
                             .descending = n->a.sort.descending,
                             .total = n->a.sort.total};
    for (int i = 0; i < ax; i++) d->sort.outer *= x->shape.dims[i];
    for (int i = ax + 1; i < x->shape.rank; i++) d->sort.inner *= x->shape.dims[i];
}

void exec_conv_desc(const kiln_graph *g, uint32_t id, kn_lib_desc *d) {
    const ir_node *n = &g->nodes[id];
    ir_conv_geom gm;
    char msg[256];
    *d = (kn_lib_desc){.op = KN_LIB_CONV, .dtype = n->dtype};
    if (ir_conv_geometry(g, n, &gm, msg, sizeof msg)) return; /* typed: cannot fail */
    kn_conv_desc *c = &d->conv;
    c->kind = n->a.conv.kind == IR_CONV_FORWARD      ? KN_CONV_FORWARD
              : n->a.conv.kind == IR_CONV_INPUT_GRAD ? KN_CONV_INPUT_GRAD
                                                     : KN_CONV_FILTER_GRAD;
    c->ns = gm.ns;
    c->n = gm.n, c->groups = gm.groups, c->i = gm.i, c->og = gm.o / gm.groups;
    for (int s = 0; s < gm.ns; s++) {
        c->in[s] = gm.in[s], c->k[s] = gm.k[s], c->out[s] = gm.out[s];
        c->stride[s] = n->a.conv.stride[s], c->lo[s] = n->a.conv.lo[s];
        c->ld[s] = n->a.conv.ld[s], c->rd[s] = n->a.conv.rd[s];
    }
    memcpy(c->xs, gm.lhs_st, sizeof c->xs);
    memcpy(c->ws, gm.rhs_st, sizeof c->ws);
    memcpy(c->ys, gm.res_st, sizeof c->ys);
}

void exec_scatter_desc(const kiln_graph *g, uint32_t id, kn_lib_desc *d) {
    const ir_node *n = &g->nodes[id];
    const uint32_t *in = ir_in(n);
    const ir_node *op = &g->nodes[in[0]], *idx = &g->nodes[in[1]];
    int64_t rows = op->shape.dims[0], total = 0, n_idx = 0;
    ir_shape_numel(&op->shape, &total);
    ir_shape_numel(&idx->shape, &n_idx);
    *d = (kn_lib_desc){.op = KN_LIB_SCATTER_ADD_ROWS, .dtype = n->dtype};
    d->scatter = (kn_scatter_desc){
        .idx_dtype = idx->dtype, .rows = rows, .row_len = rows ? total / rows : 0, .n_idx = n_idx};
    d->scatter.combine = n->a.rows.mul   ? KN_ROWS_MUL
                         : n->a.rows.min ? KN_ROWS_MIN
                         : n->a.rows.max ? KN_ROWS_MAX
                                         : KN_ROWS_ADD;
}

/* Plans the memory (src/plan) and tells codegen which kernels run in place. */
/* The library call of kernel k when it is one whose scratch the backend sizes (attention,
 * argsort, a convolution, a scatter): its description, no scratch yet; false otherwise. */
static bool lib_call_desc(const kiln_executable *e, const fkernel *k, kn_lib_desc *d) {
    uint32_t id = k->roots[0];
    switch (k->kind) {
    case FK_ATTENTION:
        *d = (kn_lib_desc){.op = exec_attention_op(e->g, id)};
        exec_attention_desc(e->g, id, &d->attention);
        d->dtype = d->attention.dtype;
        return true;
    case FK_SORT: exec_sort_desc(e->g, id, d); return true;
    case FK_CONV: exec_conv_desc(e->g, id, d); return true;
    case FK_SCATTER: exec_scatter_desc(e->g, id, d); return true;
    default: return false;
    }
}

static kiln_status plan_memory(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
    uint32_t nk = e->plan.n_kernels ? e->plan.n_kernels : 1;
    e->info = host_calloc(ctx, nk, sizeof *e->info);
    e->kernels = host_calloc(ctx, nk, sizeof *e->kernels);
    e->dots = host_calloc(ctx, nk, sizeof *e->dots);
    uint64_t *scratch = host_calloc(ctx, nk, sizeof *scratch);
    kiln_status s = KILN_STATUS_OK;
    if (!e->info || !e->kernels || !e->dots || !scratch)
        s = ctx_oom(ctx, "kiln_compile", nk * sizeof *e->dots);
    for (uint32_t i = 0; !s && i < e->plan.n_kernels; i++) {
        const fkernel *k = &e->plan.kernels[i];
        const kn_backend *b = e->dev->backend;
        kn_lib_desc d; /* the backend says how much scratch, the planner where */
        if (b->lib_scratch && lib_call_desc(e, k, &d))
            scratch[i] = b->lib_scratch(e->dev->state, e->dev->index, &d);
        if (k->kind == FK_CONTROL) scratch[i] = exec_control_scratch(e, &e->g->nodes[k->roots[0]]);
        if (k->kind != FK_DOT) continue;
        lower_dot *ld = &e->dots[i];
        lower_dot_plan(e->g, k->roots[0], ld);
        if (b->lib_scratch && ld->gemm.k) { /* the gemm's own, after the packed operands */
            d = (kn_lib_desc){
                .op = KN_LIB_GEMM, .dtype = e->g->nodes[k->roots[0]].dtype, .gemm = ld->gemm};
            ld->gemm_scratch = b->lib_scratch(e->dev->state, e->dev->index, &d);
            ld->gemm_offset = ld->gemm_scratch ? plan_round(ld->scratch, PLAN_ALIGN) : 0;
            if (ld->gemm_scratch) ld->scratch = ld->gemm_offset + ld->gemm_scratch;
        }
        scratch[i] = ld->scratch;
    }
    plan_options po = {.donated = e->donated,
                       .donate_to = e->donate_to,
                       .scratch = scratch,
                       .granule = BFC_ALIGN,
                       .overlap_collectives = e->overlap,
                       .overlap_transfers = e->dev->backend->copy_kinds_start != NULL};
    if (!s) s = check_backend(e);
    if (!s) s = plan_build(e->g, &e->plan, &po, &e->mem);
    if (!s) s = plan_apply_aliases(&e->mem, &e->plan);
    host_free(ctx, scratch, nk * sizeof *scratch);
    return s;
}

kiln_status exec_fuse_and_plan(kiln_executable *e, const kiln_compile_options *o) {
    fusion_options fo = {.disable = o->disable_fusion,
                         .excess_precision =
                             o->allow_excess_precision || e->ctx->config.excess_precision};
    kiln_status s = fusion_plan_build(e->g, &fo, &e->plan);
    return s ? s : plan_memory(e);
}

void exec_plan_release(kiln_executable *e) {
    uint32_t nk = e->plan.n_kernels ? e->plan.n_kernels : 1;
    host_free(e->ctx, e->info, nk * sizeof *e->info);
    host_free(e->ctx, e->kernels, nk * sizeof *e->kernels);
    host_free(e->ctx, e->dots, nk * sizeof *e->dots);
    e->info = NULL, e->kernels = NULL, e->dots = NULL;
    plan_free(&e->mem);
    fusion_plan_free(&e->plan);
}

static kiln_status load_kernels(kiln_executable *e, const exec_dump *dump) {
    kiln_context *ctx = e->ctx;
    const kn_backend *b = e->dev->backend;
    strbuf sb;
    sb_init(&sb, ctx);
    cgen_dialect dialect;
    if (!cgen_dialect_named(b->source_language, &dialect))
        return ctx_error(ctx, KILN_STATUS_INTERNAL,
                         "kiln_compile: backend %s takes programs in %s, which kiln cannot print",
                         b->name, b->source_language);
    kiln_status s = cgen_program_dialect(e->g, &e->plan, dialect, &sb, e->info);
    if (s) {
        sb_free(&sb);
        return s;
    }
    if (!(e->source = sb_take(&sb))) return ctx_oom(ctx, "kiln_compile: source", 0);
    if ((s = dump_write(ctx, dump, "2-kernels.c", e->source))) return s;
    /* a GEMM library's one-time set-up, on the backend's time while the compiler runs */
    unsigned warmed = 0;
    for (uint32_t i = 0; i < e->plan.n_kernels && b->gemm_warm; i++) {
        kiln_dtype t = e->g->nodes[e->plan.kernels[i].roots[0]].dtype;
        if (e->plan.kernels[i].kind != FK_DOT || warmed >> t & 1u) continue;
        warmed |= 1u << t;
        b->gemm_warm(e->dev->state, e->dev->index, t);
    }
    kn_program_info pi;
    e->tier = 2;
    if (tier_wanted(e)) /* tiered compilation: tier.c */
        s = tier_program_compile(e, &e->prog, &pi);
    else
        s = b->program_compile(e->dev->state, e->dev->index, e->source, strlen(e->source), &e->prog,
                               &pi);
    if (s) return s;
    e->stats.from_disk_cache = pi.from_cache;
    e->stats.code_bytes = pi.code_bytes;
    for (uint32_t i = 0; i < e->plan.n_kernels && !s && e->prog; i++) {
        /* at tier 1, prog holds only the kernels the interpreter does not run (tier.c) */
        if (e->plan.kernels[i].kind != FK_LOOP || (e->interp && e->interp[i])) continue;
        char name[32];
        snprintf(name, sizeof name, "kiln_k%u", i);
        s = b->kernel_get(e->dev->state, e->prog, name, &e->kernels[i]);
    }
    return s;
}

/* The communicator must belong to this context. A device whose memory the host cannot
 * address (a GPU) needs a device transport bound to it (NCCL) once there is more than one
 * replica; a device transport runs only on its own device. */
static kiln_status check_comm(const kiln_executable *e) {
    const kiln_comm *c = e->comm;
    if (!c) return KILN_STATUS_OK;
    if (c->ctx != e->ctx)
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: kiln_compile_options.comm belongs to another context");
    bool device_memory = e->dev->backend->copy_h2d != NULL;
    if (!c->dev && (c->size == 1 || !device_memory)) return KILN_STATUS_OK;
    if (c->dev == e->dev) return KILN_STATUS_OK;
    for (uint32_t id = 1; id < e->g->n_nodes; id++) {
        if (ir_ops[e->g->nodes[id].op].kind != IRK_COLLECTIVE) continue;
        if (c->dev)
            return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "kiln_compile: %%%u (%s) of '%s' would run over rank %d of the %s "
                             "communicator, which is bound to %s, but the program is compiled "
                             "for %s (kiln_compile_options.device)",
                             id, ir_ops[e->g->nodes[id].op].name, e->g->name, c->rank, c->ops->kind,
                             c->dev->name, e->dev->name);
        return ctx_error(e->ctx, KILN_STATUS_UNIMPLEMENTED,
                         "kiln_compile: %%%u (%s) of '%s' would run over the %s communicator on "
                         "%s, whose memory the host cannot address; collectives on GPUs need an "
                         "NCCL communicator (kiln_comm_create_nccl, docs/scaling.md)",
                         id, ir_ops[e->g->nodes[id].op].name, e->g->name, c->ops->kind,
                         e->dev->name);
    }
    return KILN_STATUS_OK;
}

/* A reduce_scatter or all_gather says the size of its group (its shapes depend on it):
 * the communicator must have that many ranks (none: one). */
static kiln_status check_group_sizes(const kiln_executable *e) {
    int size = e->comm ? e->comm->size : 1;
    for (uint32_t id = 1; id < e->g->n_nodes; id++) {
        const ir_node *n = &e->g->nodes[id];
        if ((n->op != IR_REDUCE_SCATTER && n->op != IR_ALL_GATHER) || n->a.shard.ranks == size)
            continue;
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: %%%u (%s) of '%s' is over %d ranks, but the program is "
                         "compiled for %d (%s)",
                         id, ir_ops[n->op].name, e->g->name, n->a.shard.ranks, size,
                         e->comm ? "the size of kiln_compile_options.comm"
                                 : "no communicator: one replica");
    }
    return KILN_STATUS_OK;
}

/* Checks donate_argnums against the parameters and keeps them as a per-parameter mask. */
static kiln_status take_donations(kiln_executable *e, const kiln_compile_options *o) {
    const kiln_graph *g = e->g;
    if (o->n_donate < 0 || (o->n_donate && !o->donate_argnums))
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: n_donate is %d but donate_argnums is %s", o->n_donate,
                         o->donate_argnums ? "set" : "NULL");
    e->n_params = g->n_params;
    if (!(e->donated = host_calloc(e->ctx, g->n_params + 1, 1)))
        return ctx_oom(e->ctx, "kiln_compile: donations", g->n_params + 1);
    for (int i = 0; i < o->n_donate; i++) {
        int a = o->donate_argnums[i];
        if (a < 0 || (uint32_t)a >= g->n_params)
            return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "kiln_compile: donate_argnums[%d] = %d is not a parameter of '%s' "
                             "(it has %u)",
                             i, a, g->name, g->n_params);
        if (e->donated[a])
            return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                             "kiln_compile: argument %d is donated twice", a);
        e->donated[a] = 1;
    }
    return KILN_STATUS_OK;
}

/* KILN_DUMP's plan stage: the report (with the kernels in schedule order), JSON, SVG. */
static kiln_status dump_plan(const kiln_executable *e, const exec_dump *dump) {
    char *text = kiln_executable_to_string(e), *json = kiln_executable_plan_json(e),
         *svg = kiln_executable_plan_svg(e);
    kiln_status s = dump_write(e->ctx, dump, "3-plan.txt", text);
    if (!s) s = dump_write(e->ctx, dump, "3-plan.json", json);
    if (!s) s = dump_write(e->ctx, dump, "3-plan.svg", svg);
    kiln_string_free(e->ctx, text);
    kiln_string_free(e->ctx, json);
    kiln_string_free(e->ctx, svg);
    return s;
}

/* kiln_compile_options.budget_result from the budget's search (s: how it ended). */
static void budget_result(const kiln_executable *e, const kiln_compile_options *o, kiln_status s) {
    if (!o->budget_result) return;
    const remat_info *r = &e->remat;
    *o->budget_result = (kiln_budget_result){0};
    if (!r->budget) return;
    *o->budget_result =
        (kiln_budget_result){.budget_bytes = r->budget,
                             .peak_without_bytes = r->peak_without,
                             .min_peak_bytes = r->min_peak ? r->min_peak : r->peak_without,
                             .fits = s == KILN_STATUS_OK,
                             .num_offloaded = (int)r->n_offloaded,
                             .offload_bytes = r->offload_bytes};
}

kiln_status kiln_compile(kiln_graph *g, const kiln_compile_options *opts, kiln_executable **out) {
    return exec_compile(g, opts, NULL, false, out);
}

kiln_status exec_compile(kiln_graph *g, const kiln_compile_options *opts, const int32_t *donate_to,
                         bool sub_graph, kiln_executable **out) {
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_context *ctx = g->ctx;
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_compile: out is NULL");
    *out = NULL;
    if (!g->finished)
        return ctx_error(ctx, g->status ? g->status : KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_compile: graph '%s' is not finished%s%s", g->name,
                         g->error ? ": " : " (call kiln_graph_finish first)",
                         g->error ? g->error : "");
    double t0 = now_seconds();
    static const kiln_compile_options defaults;
    const kiln_compile_options *o = opts ? opts : &defaults;
    if (o->budget_result) *o->budget_result = (kiln_budget_result){0};
    kn_device *dev = device_get(ctx, o->device, "kiln_compile: kiln_compile_options.device");
    if (!dev) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_executable *e = host_calloc(ctx, 1, sizeof *e);
    if (!e) return ctx_oom(ctx, "kiln_compile", sizeof *e);
    e->ctx = ctx;
    atomic_init(&e->refs, 1);
    e->dev = dev;
    e->comm = o->comm;
    e->donate_to = donate_to;
    e->sub_graph = sub_graph;
    /* one replica copies at the start: nothing to overlap */
    e->overlap = o->comm && o->comm->size > 1 && !o->disable_overlap;
    exec_dump dump;
    kiln_status s = dump_begin(ctx, g, &dump);
    bool attention = lib_has(dev, KN_LIB_ATTENTION);
    bool conv = lib_has(dev, KN_LIB_CONV) && !ctx->config.conv_im2col;
    bool linalg = lib_has(dev, KN_LIB_CHOLESKY) && lib_has(dev, KN_LIB_TRIANGULAR_SOLVE);
    unsigned expand = (attention ? 0u : PASS_EXPAND_ATTENTION) | (conv ? 0u : PASS_EXPAND_CONV) |
                      (grad_kernels_take_all(dev, g) ? 0u : PASS_EXPAND_ATTENTION_GRAD) |
                      (linalg ? 0u : PASS_EXPAND_LINALG);
    if (!s) s = pass_clone(g, &e->g);
    if (!s) /* what the device has no kernel for becomes primitives (check_backend: none) */
        s = pass_expand(&e->g, expand);
    if (!s && !o->disable_passes) s = passes_run(&e->g, NULL);
    if (!s && !o->disable_passes && attention) {
        bool changed = false; /* written-out attention becomes the op the device has a kernel for */
        s = pass_attention(&e->g, &changed, NULL);
        if (!s && changed) s = passes_run(&e->g, NULL);
    }
    if (!s) s = dump_graph(ctx, &dump, "1-optimized.ir", e->g);
    if (!s) s = check_comm(e);
    if (!s) s = check_group_sizes(e);
    if (!s) s = take_donations(e, o);
    if (!s) s = exec_controls_compile(e, o);
    if (!s) {
        s = exec_remat(e, o);
        budget_result(e, o, s);
    }
    if (!s) s = exec_fuse_and_plan(e, o);
    if (!s) s = load_kernels(e, &dump);
    if (!s) s = exec_steps_build(e);
    if (!s) s = check_lib_calls(e);
    if (!s) s = exec_profile_describe(e);
    if (!s) exec_analysis_compute(e);
    if (!s && dump.on) s = dump_plan(e, &dump);
    if (s) {
        kiln_executable_destroy(e);
        return s;
    }
    e->stats.num_kernels = (int)e->plan.n_kernels;
    e->stats.num_kernels_compiled = e->stats.num_kernels;
    for (uint32_t i = 0; i < e->n_ctls; i++)
        for (uint32_t k = 0; k < e->ctls[i].n_subs; k++)
            e->stats.num_kernels_compiled += e->ctls[i].subs[k]->stats.num_kernels_compiled;
    e->stats.num_ops = kiln_graph_num_nodes(e->g);
    e->stats.num_fused_away = (int)e->plan.n_fused_away;
    e->donate_to = NULL; /* the caller's, read while compiling only */
    /* tiered compilation: the optimised build of a program that runs tier 1, in the
     * background (runtime/tier.c) */
    if ((s = tier_schedule(e, e->source))) {
        kiln_executable_destroy(e);
        return s;
    }
    if (!o->keep_ir) exec_ir_free(e);
    e->stats.compile_seconds = now_seconds() - t0;
    if (ctx->config.profile && (s = kiln_executable_set_profiling(e, true))) {
        kiln_executable_destroy(e);
        return s;
    }
    *out = e;
    return KILN_STATUS_OK;
}
