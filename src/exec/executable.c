/* executable.c — compiling a graph into an executable and running it.
 *
 * Compile: copy and optimise the graph (src/passes), fuse it into kernels, generate C for
 * the loop kernels (src/codegen), compile and load them (src/backend/cpu/cc.c, which keeps
 * the on-disk cache), and precompute how each dot_general maps onto a batched gemm.
 *
 * Run: every materialised node gets a buffer — arguments and constants are used where
 * they are, outputs are the new output arrays, everything else is a temporary for the
 * duration of the call — then the kernels run in order, loop kernels split across the
 * context's thread pool. Nothing is left allocated when a call fails. */
#include "executable.h"
#include "backend/cpu/cc.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/pool.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <string.h>
#include <time.h>

kiln_status exec_check_args(const kiln_graph *g, const char *op, int n_args,
                            kiln_array *const *args) {
    kiln_context *ctx = g->ctx;
    if (n_args != (int)g->n_params)
        return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "%s: '%s' takes %u arguments, got %d", op,
                         g->name, g->n_params, n_args);
    if (n_args && !args) return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "%s: args is NULL", op);
    for (int i = 0; i < n_args; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        char want[IR_TYPE_STR_MAX], got[IR_TYPE_STR_MAX];
        if (!args[i])
            return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "%s: argument %d (\"%s\") is NULL", op,
                             i, p->name ? p->name : "");
        if (args[i]->dtype != p->dtype || !ir_shape_eq(&args[i]->shape, &p->shape))
            return ctx_error(ctx, args[i]->dtype != p->dtype ? KILN_ERR_DTYPE : KILN_ERR_SHAPE,
                             "%s: argument %d (\"%s\") is %s, the parameter is %s", op, i,
                             p->name ? p->name : "",
                             ir_type_str(args[i]->dtype, &args[i]->shape, got, sizeof got),
                             ir_type_str(p->dtype, &p->shape, want, sizeof want));
    }
    return KILN_OK;
}

/* ------------------------------------------------------------ compile ---- */

static bool perm_is_identity(const int *perm, int r) {
    for (int i = 0; i < r; i++)
        if (perm[i] != i) return false;
    return true;
}

/* Builds the permutation [batch..., first..., second...] of an operand's axes, where
 * `first`/`second` are the free axes (ascending) and the contracting axes (given order),
 * in the order asked for. Returns the product of the free axes' sizes. */
static int64_t dot_perm(const ir_shape *s, const int *batch, int nb, const int *con, int nc,
                        bool free_first, int *perm) {
    unsigned used = 0;
    int r = 0;
    int64_t free_size = 1;
    for (int i = 0; i < nb; i++) perm[r++] = batch[i], used |= 1u << batch[i];
    for (int i = 0; i < nc; i++) used |= 1u << con[i];
    int free_axes[KILN_MAX_RANK], nf = 0;
    for (int a = 0; a < s->rank; a++)
        if (!(used >> a & 1u)) free_axes[nf++] = a, free_size *= s->dims[a];
    for (int pass = 0; pass < 2; pass++) {
        bool want_free = (pass == 0) == free_first;
        if (want_free)
            for (int i = 0; i < nf; i++) perm[r++] = free_axes[i];
        else
            for (int i = 0; i < nc; i++) perm[r++] = con[i];
    }
    return free_size;
}

static void plan_dot(const kiln_graph *g, uint32_t id, exec_dot *d) {
    const ir_node *n = &g->nodes[id];
    const kiln_dot_dims *dd = &n->a.dot;
    const ir_shape *ls = &g->nodes[ir_in(n)[0]].shape, *rs = &g->nodes[ir_in(n)[1]].shape;
    int p1[KILN_MAX_RANK], p2[KILN_MAX_RANK];
    memset(d, 0, sizeof *d);
    d->batch = 1, d->k = 1;
    for (int i = 0; i < dd->n_batch; i++) d->batch *= ls->dims[dd->lhs_batch[i]];
    for (int i = 0; i < dd->n_contract; i++) d->k *= ls->dims[dd->lhs_contract[i]];
    /* lhs: [b, M, K] as is, or [b, K, M] transposed, else packed into [b, M, K] */
    d->m = dot_perm(ls, dd->lhs_batch, dd->n_batch, dd->lhs_contract, dd->n_contract, true, p1);
    dot_perm(ls, dd->lhs_batch, dd->n_batch, dd->lhs_contract, dd->n_contract, false, p2);
    if (!perm_is_identity(p1, ls->rank)) {
        if (perm_is_identity(p2, ls->rank))
            d->trans_a = true;
        else
            d->pack_a = true, memcpy(d->perm_a, p1, sizeof p1);
    }
    /* rhs: [b, K, N] as is, or [b, N, K] transposed, else packed into [b, K, N] */
    d->n = dot_perm(rs, dd->rhs_batch, dd->n_batch, dd->rhs_contract, dd->n_contract, false, p1);
    dot_perm(rs, dd->rhs_batch, dd->n_batch, dd->rhs_contract, dd->n_contract, true, p2);
    if (!perm_is_identity(p1, rs->rank)) {
        if (perm_is_identity(p2, rs->rank))
            d->trans_b = true;
        else
            d->pack_b = true, memcpy(d->perm_b, p1, sizeof p1);
    }
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static kiln_status load_kernels(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
    uint32_t nk = e->plan.n_kernels ? e->plan.n_kernels : 1;
    e->info = host_calloc(ctx, nk, sizeof *e->info);
    e->fns = host_calloc(ctx, nk, sizeof *e->fns);
    e->dots = host_calloc(ctx, nk, sizeof *e->dots);
    if (!e->info || !e->fns || !e->dots) return ctx_oom(ctx, "kiln_compile", nk * sizeof *e->dots);
    strbuf sb;
    sb_init(&sb, ctx);
    kiln_status s = cgen_program(e->g, &e->plan, &sb, e->info);
    if (s) {
        sb_free(&sb);
        return s;
    }
    if (!(e->source = sb_take(&sb))) return ctx_oom(ctx, "kiln_compile: source", 0);
    bool cached = false;
    if ((s = cc_module_load(ctx, e->source, strlen(e->source), &e->mod, &cached))) return s;
    e->stats.from_disk_cache = cached;
    e->stats.code_bytes = cc_module_code_bytes(e->mod);
    for (uint32_t i = 0; i < e->plan.n_kernels; i++) {
        const fkernel *k = &e->plan.kernels[i];
        if (k->kind == FK_DOT) plan_dot(e->g, k->roots[0], &e->dots[i]);
        if (k->kind != FK_LOOP) continue;
        char name[32];
        snprintf(name, sizeof name, "kiln_k%u", i);
        void *sym = cc_module_sym(e->mod, name);
        if (!sym)
            return ctx_error(ctx, KILN_ERR_INTERNAL, "kiln_compile: kernel %s is missing", name);
        memcpy(&e->fns[i], &sym, sizeof sym); /* object -> function pointer, as dlsym needs */
    }
    return KILN_OK;
}

kiln_status kiln_compile(kiln_graph *g, const kiln_compile_options *opts, kiln_executable **out) {
    if (!g) return KILN_ERR_INVALID_ARGUMENT;
    kiln_context *ctx = g->ctx;
    if (!out) return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "kiln_compile: out is NULL");
    *out = NULL;
    if (!g->finished)
        return ctx_error(ctx, g->status ? g->status : KILN_ERR_INVALID_ARGUMENT,
                         "kiln_compile: graph '%s' is not finished%s%s", g->name,
                         g->error ? ": " : " (call kiln_graph_finish first)",
                         g->error ? g->error : "");
    double t0 = now_seconds();
    static const kiln_compile_options defaults;
    const kiln_compile_options *o = opts ? opts : &defaults;
    kiln_executable *e = host_calloc(ctx, 1, sizeof *e);
    if (!e) return ctx_oom(ctx, "kiln_compile", sizeof *e);
    e->ctx = ctx;
    kiln_status s = pass_clone(g, &e->g);
    if (!s && !o->disable_passes) s = passes_run(&e->g, NULL);
    fusion_options fo = {.disable = o->disable_fusion};
    if (!s) s = fusion_plan_build(e->g, &fo, &e->plan);
    if (!s) s = load_kernels(e);
    if (s) {
        kiln_executable_destroy(e);
        return s;
    }
    e->stats.num_kernels = (int)e->plan.n_kernels;
    e->stats.num_ops = kiln_graph_num_nodes(e->g);
    e->stats.num_fused_away = (int)e->plan.n_fused_away;
    e->stats.compile_seconds = now_seconds() - t0;
    *out = e;
    return KILN_OK;
}

void kiln_executable_destroy(kiln_executable *e) {
    if (!e) return;
    kiln_context *ctx = e->ctx;
    uint32_t nk = e->plan.n_kernels ? e->plan.n_kernels : 1;
    if (e->mod) cc_module_unload(e->mod);
    if (e->source) kiln_string_free(ctx, e->source);
    host_free(ctx, e->info, nk * sizeof *e->info);
    host_free(ctx, e->fns, nk * sizeof *e->fns);
    host_free(ctx, e->dots, nk * sizeof *e->dots);
    fusion_plan_free(&e->plan);
    kiln_graph_destroy(e->g);
    host_free(ctx, e, sizeof *e);
}

void kiln_executable_get_info(const kiln_executable *e, kiln_executable_info *info) {
    if (e && info) *info = e->stats;
}

/* ---------------------------------------------------------------- run ---- */

typedef struct run_state {
    kiln_executable *e;
    void **buf;     /* per node: its buffer while the call runs */
    uint8_t *owned; /* per node: buf was allocated by this call (temporary) */
    size_t *bytes;
} run_state;

typedef struct loop_call {
    exec_kernel_fn fn;
    void *const *bufs;
} loop_call;

static void loop_trampoline(void *arg, int64_t begin, int64_t end) {
    const loop_call *c = arg;
    c->fn(c->bufs, begin, end);
}

static kiln_status run_loop(run_state *r, uint32_t ki, kn_pool *pool) {
    kiln_executable *e = r->e;
    const fkernel *k = &e->plan.kernels[ki];
    if (!e->info[ki].items) return KILN_OK;
    void *stack[32], **bufs = stack;
    uint32_t nb = k->n_inputs + k->n_roots;
    if (nb > 32 && !(bufs = host_alloc(e->ctx, nb * sizeof *bufs)))
        return ctx_oom(e->ctx, "kiln_executable_run", nb * sizeof *bufs);
    for (uint32_t i = 0; i < k->n_inputs; i++) bufs[i] = r->buf[k->inputs[i]];
    for (uint32_t i = 0; i < k->n_roots; i++) bufs[k->n_inputs + i] = r->buf[k->roots[i]];
    loop_call c = {e->fns[ki], bufs};
    if (pool)
        pool_parallel_for(pool, e->info[ki].items, e->info[ki].grain, loop_trampoline, &c);
    else
        c.fn(bufs, 0, e->info[ki].items);
    if (bufs != stack) host_free(e->ctx, bufs, nb * sizeof *bufs);
    return KILN_OK;
}

static kiln_status run_dot(run_state *r, uint32_t ki) {
    kiln_executable *e = r->e;
    uint32_t id = e->plan.kernels[ki].roots[0];
    const ir_node *n = &e->g->nodes[id];
    const exec_dot *d = &e->dots[ki];
    const void *ops[2] = {r->buf[ir_in(n)[0]], r->buf[ir_in(n)[1]]};
    void *scratch[2] = {NULL, NULL};
    size_t sizes[2] = {0, 0};
    kiln_status s = KILN_OK;
    for (int i = 0; i < 2; i++) {
        if (!(i ? d->pack_b : d->pack_a)) continue;
        const ir_node *x = &e->g->nodes[ir_in(n)[i]];
        ir_shape_nbytes(&x->shape, x->dtype, &sizes[i]);
        if (!(scratch[i] = host_alloc(e->ctx, sizes[i]))) {
            s = ctx_oom(e->ctx, "kiln_executable_run: dot operand", sizes[i]);
            goto done;
        }
        cpu_permute(x->dtype, ops[i], &x->shape, i ? d->perm_b : d->perm_a, scratch[i]);
        ops[i] = scratch[i];
    }
    cpu_gemm(n->dtype, d->trans_a, d->trans_b, d->batch, d->m, d->n, d->k, ops[0], ops[1],
             r->buf[id]);
done:
    for (int i = 0; i < 2; i++) host_free(e->ctx, scratch[i], sizes[i]);
    return s;
}

static void run_scatter(run_state *r, uint32_t ki) {
    const kiln_graph *g = r->e->g;
    uint32_t id = r->e->plan.kernels[ki].roots[0];
    const ir_node *n = &g->nodes[id];
    const uint32_t *in = ir_in(n);
    const ir_node *op = &g->nodes[in[0]], *idx = &g->nodes[in[1]];
    int64_t rows = op->shape.dims[0], total = 0, n_idx = 0;
    ir_shape_numel(&op->shape, &total);
    ir_shape_numel(&idx->shape, &n_idx);
    cpu_scatter_add_rows(n->dtype, idx->dtype, r->buf[in[0]], rows, rows ? total / rows : 0,
                         r->buf[in[1]], n_idx, r->buf[in[2]], r->buf[id]);
}

/* Gives every materialised node a buffer: arguments, constants, outputs, temporaries. */
static kiln_status bind_buffers(run_state *r, kiln_array *const *args, kiln_array **outs) {
    kiln_executable *e = r->e;
    const kiln_graph *g = e->g;
    for (uint32_t i = 0; i < g->n_params; i++) r->buf[g->params[i]] = args[i]->data;
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uint32_t id = g->outputs[i];
        const ir_node *n = &g->nodes[id];
        if (r->buf[id] || n->op == IR_CONSTANT) continue; /* copied after the run */
        r->buf[id] = outs[i]->data;
    }
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (!e->plan.materialised[id] || r->buf[id]) continue;
        if (n->op == IR_CONSTANT) {
            r->buf[id] = n->data;
            continue;
        }
        ir_shape_nbytes(&n->shape, n->dtype, &r->bytes[id]);
        /* temporaries: host memory for now; the device allocator and the planner's arena
         * take this over */
        if (!(r->buf[id] = host_alloc(e->ctx, r->bytes[id] ? r->bytes[id] : 1))) {
            char t[IR_TYPE_STR_MAX];
            return ctx_error(e->ctx, KILN_ERR_HOST_OOM,
                             "kiln_executable_run: temporary %s of %%%u (%s) needs %zu bytes",
                             ir_type_str(n->dtype, &n->shape, t, sizeof t), id, ir_ops[n->op].name,
                             r->bytes[id]);
        }
        r->owned[id] = 1;
    }
    return KILN_OK;
}

static void finish_outputs(run_state *r, kiln_array **outs) {
    const kiln_graph *g = r->e->g;
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        const void *src = r->buf[g->outputs[i]];
        if (outs[i]->data != src && outs[i]->nbytes) {
            const ir_node *n = &g->nodes[g->outputs[i]];
            memcpy(outs[i]->data, src ? src : n->data, outs[i]->nbytes);
        }
    }
}

static kiln_status make_outputs(kiln_executable *e, kiln_array **outs) {
    for (uint32_t i = 0; i < e->g->n_outputs; i++) {
        const ir_node *n = &e->g->nodes[e->g->outputs[i]];
        kiln_status s = array_new(e->ctx, "kiln_executable_run", n->dtype, &n->shape, &outs[i]);
        if (s) {
            while (i--) kiln_array_free(outs[i]), outs[i] = NULL;
            return s;
        }
    }
    return KILN_OK;
}

kiln_status kiln_executable_run(kiln_executable *e, int n_args, kiln_array *const *args, int n_outs,
                                kiln_array **outs) {
    if (!e) return KILN_ERR_INVALID_ARGUMENT;
    kiln_context *ctx = e->ctx;
    const kiln_graph *g = e->g;
    const char *op = "kiln_executable_run";
    kiln_status s = exec_check_args(g, op, n_args, args);
    if (s) return s;
    if (n_outs != (int)g->n_outputs || !outs)
        return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "%s: '%s' has %u outputs, %d asked for%s",
                         op, g->name, g->n_outputs, n_outs, outs ? "" : " (outs is NULL)");
    kiln_array *made[KILN_MAX_OUTPUTS] = {0}, **res = made;
    if (g->n_outputs > KILN_MAX_OUTPUTS && !(res = host_calloc(ctx, g->n_outputs, sizeof *res)))
        return ctx_oom(ctx, op, g->n_outputs * sizeof *res);
    run_state r = {.e = e};
    r.buf = host_calloc(ctx, g->n_nodes, sizeof *r.buf);
    r.owned = host_calloc(ctx, g->n_nodes, 1);
    r.bytes = host_calloc(ctx, g->n_nodes, sizeof *r.bytes);
    kn_pool *pool = NULL;
    if (!r.buf || !r.owned || !r.bytes) s = ctx_oom(ctx, op, g->n_nodes * sizeof *r.buf);
    if (!s) s = make_outputs(e, res);
    if (!s) s = bind_buffers(&r, args, res);
    if (!s) s = pool_for_context(ctx, &pool);
    for (uint32_t ki = 0; !s && ki < e->plan.n_kernels; ki++) {
        switch (e->plan.kernels[ki].kind) {
        case FK_LOOP: s = run_loop(&r, ki, pool); break;
        case FK_DOT: s = run_dot(&r, ki); break;
        case FK_SCATTER: run_scatter(&r, ki); break;
        }
    }
    if (!s) finish_outputs(&r, res);
    for (uint32_t id = 1; r.owned && id < g->n_nodes; id++)
        if (r.owned[id]) host_free(ctx, r.buf[id], r.bytes[id] ? r.bytes[id] : 1);
    host_free(ctx, r.buf, g->n_nodes * sizeof *r.buf);
    host_free(ctx, r.owned, g->n_nodes);
    host_free(ctx, r.bytes, g->n_nodes * sizeof *r.bytes);
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        if (s)
            kiln_array_free(res[i]);
        else
            outs[i] = res[i];
    }
    if (res != made) host_free(ctx, res, g->n_outputs * sizeof *res);
    return s;
}

char *kiln_executable_to_string(const kiln_executable *e) {
    if (!e) return NULL;
    strbuf sb;
    sb_init(&sb, e->ctx);
    ir_print(e->g, &sb);
    sb_printf(&sb, "\n%u kernels (%u ops fused away):\n", e->plan.n_kernels, e->plan.n_fused_away);
    static const char *const kinds[] = {"loop", "dot", "scatter"};
    for (uint32_t i = 0; i < e->plan.n_kernels; i++) {
        const fkernel *k = &e->plan.kernels[i];
        sb_printf(&sb, "  k%u %-7s writes", i, kinds[k->kind]);
        for (uint32_t j = 0; j < k->n_roots; j++) sb_printf(&sb, " %%%u", k->roots[j]);
        sb_printf(&sb, " (%u ops) reads", k->n_members);
        for (uint32_t j = 0; j < k->n_inputs; j++) sb_printf(&sb, " %%%u", k->inputs[j]);
        sb_append(&sb, "\n");
    }
    sb_printf(&sb, "\n%s", e->source ? e->source : "");
    return sb_take(&sb);
}
