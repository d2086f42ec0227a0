/* executable.c — compiling a graph into an executable (running it: run.c).
 *
 * Compile: copy and optimise the graph (src/passes), fuse it into kernels, work out how
 * each dot_general maps onto a batched gemm (and what packing scratch it needs), plan the
 * memory (src/plan: schedule, buffers, in place, donation), generate C for the loop
 * kernels (src/codegen; after planning, since a kernel that runs in place must not
 * declare its aliased pointers restrict), compile and load them (src/backend/cpu/cc.c,
 * which keeps the on-disk cache). */
#include "executable.h"
#include "backend/device.h"
#include "backend/cpu/cc.h"
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
        kiln_status s = array_check_live(args[i], op, i);
        if (s) return s;
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

/* Can `ax` (in flattening order) be read as one axis of a row-major array of shape s?
 * Size-1 axes are skipped. Gives the flattened extent and element stride. */
static bool group_view(const ir_shape *s, const int64_t *st, const int *ax, int n, int64_t *extent,
                       int64_t *stride) {
    int prev = -1;
    *extent = 1, *stride = 1;
    for (int i = 0; i < n; i++) {
        int a = ax[i];
        if (s->dims[a] == 1) continue;
        if (prev >= 0 && st[prev] != st[a] * s->dims[a]) return false;
        prev = a;
        *extent *= s->dims[a];
    }
    if (prev >= 0) *stride = st[prev];
    return true;
}

/* The operand as a gemm matrix [rows, cols] without copying: false if it has no such view. */
static bool matrix_view(const ir_shape *s, const int *rows, int nr, const int *cols, int nc,
                        bool *trans, int64_t *ld) {
    int64_t st[KILN_MAX_RANK], R, C, sr, sc, acc = 1;
    for (int a = s->rank - 1; a >= 0; a--) st[a] = acc, acc *= s->dims[a];
    if (!group_view(s, st, rows, nr, &R, &sr) || !group_view(s, st, cols, nc, &C, &sc))
        return false;
    if ((C == 1 || sc == 1) && (R == 1 || sr >= C)) {
        *trans = false, *ld = R == 1 ? (C > 1 ? C : 1) : sr;
        return true;
    }
    if ((R == 1 || sr == 1) && (C == 1 || sc >= R)) {
        *trans = true, *ld = C == 1 ? (R > 1 ? R : 1) : sc;
        return true;
    }
    return false;
}

/* One operand of a dot: a strided view, or a permutation into [batch, rows, cols]. */
static void plan_operand(const ir_shape *s, const int *batch, int nb, const int *rows, int nr,
                         const int *cols, int nc, bool *trans, bool *pack, int *perm, int64_t *ld,
                         int64_t *bstride) {
    int64_t st[KILN_MAX_RANK], acc = 1;
    for (int a = s->rank - 1; a >= 0; a--) st[a] = acc, acc *= s->dims[a];
    if (matrix_view(s, rows, nr, cols, nc, trans, ld)) {
        for (int i = 0; i < nb; i++) bstride[i] = st[batch[i]];
        return;
    }
    int r = 0;
    int64_t cols_size = 1, after = 1;
    for (int i = 0; i < nb; i++) perm[r++] = batch[i];
    for (int i = 0; i < nr; i++) perm[r++] = rows[i];
    for (int i = 0; i < nc; i++) perm[r++] = cols[i], cols_size *= s->dims[cols[i]];
    for (int i = nb; i < s->rank; i++) after *= s->dims[perm[i]];
    for (int i = nb - 1; i >= 0; i--) bstride[i] = after, after *= s->dims[batch[i]];
    *pack = true, *trans = false, *ld = cols_size > 1 ? cols_size : 1;
}

static int free_axes(const ir_shape *s, const int *batch, int nb, const int *con, int nc, int *out,
                     int64_t *size) {
    unsigned used = 0;
    int n = 0;
    *size = 1;
    for (int i = 0; i < nb; i++) used |= 1u << batch[i];
    for (int i = 0; i < nc; i++) used |= 1u << con[i];
    for (int a = 0; a < s->rank; a++)
        if (!(used >> a & 1u)) out[n++] = a, *size *= s->dims[a];
    return n;
}

static void plan_dot(const kiln_graph *g, uint32_t id, exec_dot *d) {
    const ir_node *n = &g->nodes[id];
    const kiln_dot_dims *dd = &n->a.dot;
    const ir_shape *ls = &g->nodes[ir_in(n)[0]].shape, *rs = &g->nodes[ir_in(n)[1]].shape;
    int lf[KILN_MAX_RANK], rf[KILN_MAX_RANK];
    memset(d, 0, sizeof *d);
    cpu_gemm_desc *gd = &d->gemm;
    gd->batch = 1, gd->k = 1, gd->nb = dd->n_batch;
    for (int i = 0; i < dd->n_batch; i++)
        gd->bdims[i] = ls->dims[dd->lhs_batch[i]], gd->batch *= gd->bdims[i];
    for (int i = 0; i < dd->n_contract; i++) gd->k *= ls->dims[dd->lhs_contract[i]];
    int nlf =
        free_axes(ls, dd->lhs_batch, dd->n_batch, dd->lhs_contract, dd->n_contract, lf, &gd->m);
    int nrf =
        free_axes(rs, dd->rhs_batch, dd->n_batch, dd->rhs_contract, dd->n_contract, rf, &gd->n);
    plan_operand(ls, dd->lhs_batch, dd->n_batch, lf, nlf, dd->lhs_contract, dd->n_contract,
                 &gd->trans_a, &d->pack_a, d->perm_a, &gd->lda, gd->bstride_a);
    plan_operand(rs, dd->rhs_batch, dd->n_batch, dd->rhs_contract, dd->n_contract, rf, nrf,
                 &gd->trans_b, &d->pack_b, d->perm_b, &gd->ldb, gd->bstride_b);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The bytes a dot kernel packs its operands into: lhs at 0, rhs after it (aligned). */
static uint64_t dot_scratch(const kiln_graph *g, uint32_t id, const exec_dot *d) {
    const ir_node *n = &g->nodes[id];
    size_t a = 0, b = 0;
    const ir_node *l = &g->nodes[ir_in(n)[0]], *r = &g->nodes[ir_in(n)[1]];
    if (d->pack_a) ir_shape_nbytes(&l->shape, l->dtype, &a);
    if (d->pack_b) ir_shape_nbytes(&r->shape, r->dtype, &b);
    return b ? plan_round(a, PLAN_ALIGN) + b : a;
}

/* Plans the memory (src/plan) and tells codegen which kernels run in place. */
static kiln_status plan_memory(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
    uint32_t nk = e->plan.n_kernels ? e->plan.n_kernels : 1;
    e->info = host_calloc(ctx, nk, sizeof *e->info);
    e->fns = host_calloc(ctx, nk, sizeof *e->fns);
    e->dots = host_calloc(ctx, nk, sizeof *e->dots);
    uint64_t *scratch = host_calloc(ctx, nk, sizeof *scratch);
    kiln_status s = KILN_OK;
    if (!e->info || !e->fns || !e->dots || !scratch)
        s = ctx_oom(ctx, "kiln_compile", nk * sizeof *e->dots);
    for (uint32_t i = 0; !s && i < e->plan.n_kernels; i++) {
        const fkernel *k = &e->plan.kernels[i];
        if (k->kind != FK_DOT) continue;
        plan_dot(e->g, k->roots[0], &e->dots[i]);
        scratch[i] = dot_scratch(e->g, k->roots[0], &e->dots[i]);
    }
    plan_options po = {.donated = e->donated, .scratch = scratch, .granule = BFC_ALIGN};
    if (!s) s = plan_build(e->g, &e->plan, &po, &e->mem);
    for (uint32_t i = 0; !s && i < e->plan.n_kernels; i++)
        e->plan.kernels[i].alias_input = e->mem.alias_input[i];
    host_free(ctx, scratch, nk * sizeof *scratch);
    return s;
}

static kiln_status load_kernels(kiln_executable *e) {
    kiln_context *ctx = e->ctx;
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

/* Checks donate_argnums against the parameters and keeps them as a per-parameter mask. */
static kiln_status take_donations(kiln_executable *e, const kiln_compile_options *o) {
    const kiln_graph *g = e->g;
    if (o->n_donate < 0 || (o->n_donate && !o->donate_argnums))
        return ctx_error(e->ctx, KILN_ERR_INVALID_ARGUMENT,
                         "kiln_compile: n_donate is %d but donate_argnums is %s", o->n_donate,
                         o->donate_argnums ? "set" : "NULL");
    if (!(e->donated = host_calloc(e->ctx, g->n_params + 1, 1)))
        return ctx_oom(e->ctx, "kiln_compile: donations", g->n_params + 1);
    for (int i = 0; i < o->n_donate; i++) {
        int a = o->donate_argnums[i];
        if (a < 0 || (uint32_t)a >= g->n_params)
            return ctx_error(e->ctx, KILN_ERR_INVALID_ARGUMENT,
                             "kiln_compile: donate_argnums[%d] = %d is not a parameter of '%s' "
                             "(it has %u)",
                             i, a, g->name, g->n_params);
        if (e->donated[a])
            return ctx_error(e->ctx, KILN_ERR_INVALID_ARGUMENT,
                             "kiln_compile: argument %d is donated twice", a);
        e->donated[a] = 1;
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
    if (!s) s = take_donations(e, o);
    if (!s) s = fusion_plan_build(e->g, &fo, &e->plan);
    if (!s) s = plan_memory(e);
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
    plan_free(&e->mem);
    if (e->donated) host_free(ctx, e->donated, e->g->n_params + 1);
    fusion_plan_free(&e->plan);
    kiln_graph_destroy(e->g);
    host_free(ctx, e, sizeof *e);
}

void kiln_executable_get_info(const kiln_executable *e, kiln_executable_info *info) {
    if (e && info) *info = e->stats;
}

char *kiln_executable_to_string(const kiln_executable *e) {
    if (!e) return NULL;
    strbuf sb;
    sb_init(&sb, e->ctx);
    ir_print(e->g, &sb);
    sb_printf(&sb, "\n%u kernels (%u ops fused away), in schedule order:\n", e->plan.n_kernels,
              e->plan.n_fused_away);
    static const char *const kinds[] = {"loop", "dot", "scatter"};
    for (uint32_t s = 0; s < e->plan.n_kernels; s++) {
        uint32_t i = e->mem.order[s];
        const fkernel *k = &e->plan.kernels[i];
        sb_printf(&sb, "  %3u: k%u %-7s writes", s, i, kinds[k->kind]);
        for (uint32_t j = 0; j < k->n_roots; j++) sb_printf(&sb, " %%%u", k->roots[j]);
        sb_printf(&sb, " (%u ops) reads", k->n_members);
        for (uint32_t j = 0; j < k->n_inputs; j++) sb_printf(&sb, " %%%u", k->inputs[j]);
        if (k->alias_input) sb_printf(&sb, " (in place over %%%u)", k->inputs[k->alias_input - 1]);
        sb_append(&sb, "\n");
    }
    char *report = plan_report(e->g, &e->plan, &e->mem, e->stats.code_bytes);
    sb_printf(&sb, "\n%s\n%s", report ? report : "", e->source ? e->source : "");
    if (!report) sb.oom = true;
    kiln_string_free(e->ctx, report);
    return sb_take(&sb);
}
