/* describe.c — what the profile says of each kernel (kind, ops, FLOPs, bytes, a label),
 * computed once when compiling from the fusion plan and the graph, so that profiling and
 * its report (src/runtime/profile.c) read no IR: the executable may free it. */
#include "compile.h"
#include "passes/passes.h"
#include "base/strbuf.h"

/* What kernel ki does, in numbers: FLOPs of a product or an attention, bytes a loop or scatter
 * moves (every buffer it reads once plus every buffer it writes: the least it can touch). */
static void kernel_work(const kiln_executable *e, uint32_t ki, double *flops, double *bytes) {
    const fkernel *k = &e->plan.kernels[ki];
    *flops = 0, *bytes = 0;
    if (k->kind == FK_DOT) {
        const kn_gemm_desc *d = &e->dots[ki].gemm;
        *flops = 2.0 * (double)d->batch * (double)d->m * (double)d->n * (double)d->k;
    }
    if (k->kind == FK_ATTENTION || k->kind == FK_CONV ||
        k->kind == FK_LINALG) /* attention: both products, over the key positions each query
                               * sees */
        *flops = remat_node_flops(e->g, k->roots[0]);
    for (int pass = 0; pass < 2; pass++) {
        uint32_t n = pass ? k->n_roots : k->n_inputs;
        const uint32_t *ids = pass ? k->roots : k->inputs;
        for (uint32_t j = 0; j < n; j++) {
            const ir_node *x = &e->g->nodes[ids[j]];
            size_t b = 0;
            if (ir_shape_nbytes(&x->shape, x->dtype, &b)) *bytes += (double)b;
        }
    }
}

/* "dot_general f32[256,512] <- f32[256,784] f32[784,512]" or "loop f32[256,512] (7 ops:
 * add max ...)": the roots' types (and an attention gradient's kind), and for a loop the
 * distinct ops of its roots. */
static void kernel_label(const kiln_executable *e, uint32_t ki, strbuf *sb) {
    const fkernel *k = &e->plan.kernels[ki];
    char t[IR_TYPE_STR_MAX];
    sb_printf(sb, "k%-3u %-7s", ki, fusion_kind_name(k->kind));
    for (uint32_t j = 0; j < k->n_roots && j < 3; j++) {
        const ir_node *r = &e->g->nodes[k->roots[j]];
        sb_printf(sb, " %s", ir_ops[r->op].name);
        if (r->op == IR_ATTENTION && r->a.attn.kind != IR_ATTN_FORWARD) /* which gradient */
            sb_printf(sb, " %s", ir_attn_kind_name(r->a.attn.kind));
        sb_printf(sb, " %s", ir_type_str(r->dtype, &r->shape, t, sizeof t));
    }
    if (k->n_roots > 3) sb_printf(sb, " (+%u outputs)", k->n_roots - 3);
    if (k->kind == FK_LOOP) sb_printf(sb, ", %u ops", k->n_members);
    const ir_node *r0 = &e->g->nodes[k->roots[0]];
    if (r0->file) sb_printf(sb, "  %s:%d", kn_path_base(r0->file), r0->line);
}

kiln_status exec_profile_describe(kiln_executable *e) {
    uint32_t nk = e->n_kernels = e->plan.n_kernels;
    e->kernel_info = host_calloc(e->ctx, nk + 1, sizeof *e->kernel_info);
    if (!e->kernel_info) return ctx_oom(e->ctx, "kiln_compile: kernel descriptions", nk);
    strbuf sb;
    sb_init(&sb, e->ctx);
    for (uint32_t ki = 0; ki < nk; ki++) {
        exec_kernel_info *d = &e->kernel_info[ki];
        d->kind = (uint8_t)e->plan.kernels[ki].kind;
        d->n_members = e->plan.kernels[ki].n_members;
        kernel_work(e, ki, &d->flops, &d->bytes);
        d->label = (uint32_t)sb.len;
        kernel_label(e, ki, &sb);
        sb_append(&sb, "\n"); /* the separator, made a NUL below */
    }
    size_t len = sb.len;
    if (!(e->kernel_labels = sb_take(&sb)))
        return ctx_oom(e->ctx, "kiln_compile: kernel descriptions", len);
    e->kernel_labels_size = len + 1;
    for (size_t i = 0; i < len; i++)
        if (e->kernel_labels[i] == '\n') e->kernel_labels[i] = 0;
    return KILN_STATUS_OK;
}
