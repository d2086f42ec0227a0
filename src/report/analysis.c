/* analysis.c — the memory analysis API (kiln.h, "memory analysis"): the executable's
 * memory plan (src/plan) read back as public structs, text, JSON and SVG.
 *
 * The analysis itself is computed once when compiling (exec_analysis_compute) and kept:
 * it is a few numbers. The per-buffer listing, the report, JSON and SVG print the graph
 * and the plans, which the executable keeps only under kiln_compile_options.keep_ir. */
#include "report.h"
#include "base/strbuf.h"

#include <string.h>

/* The public enums mirror the planner's, so the listing is a cast. */
_Static_assert(PLAN_K_SCRATCH == (int)KILN_BUFFER_KIND_SCRATCH &&
                   PLAN_K_TEMP == (int)KILN_BUFFER_KIND_TEMP,
               "kiln_buffer_kind follows plan_kind");
_Static_assert(PLAN_P_DONATED == (int)KILN_BUFFER_PLACE_DONATED &&
                   PLAN_P_ARENA == (int)KILN_BUFFER_PLACE_ARENA &&
                   PLAN_P_HOST == (int)KILN_BUFFER_PLACE_HOST,
               "kiln_buffer_place follows plan_place");

_Static_assert(PLAN_C_PARAMETER == (int)KILN_MEMORY_CLASS_PARAMETER &&
                   PLAN_C_ACTIVATION == (int)KILN_MEMORY_CLASS_ACTIVATION &&
                   PLAN_C_CONSTANT == (int)KILN_MEMORY_CLASS_CONSTANT &&
                   PLAN_NUM_CLASSES <= KILN_MAX_MEMORY_CLASSES,
               "kiln_memory_class follows plan_class");

const char *kiln_memory_class_name(kiln_memory_class c) {
    return plan_class_name((int)c);
}

void exec_analysis_compute(kiln_executable *e) {
    const mem_plan *p = &e->mem;
    kiln_memory_analysis *out = &e->analysis;
    *out = (kiln_memory_analysis){
        .argument_bytes = p->argument_bytes,
        .output_bytes = p->output_bytes,
        .temp_bytes = p->temp_bytes,
        .alias_bytes = p->alias_bytes,
        .generated_code_bytes = e->stats.code_bytes,
        .constant_bytes = p->constant_bytes,
        .peak_bytes = p->peak,
        .temp_lower_bound = p->lower_bound,
        .arena_bytes = p->arena,
        .inplace_bytes = p->inplace_bytes,
        .num_buffers = (int)p->n_buffers,
        .num_steps = (int)p->n_kernels,
        .schedule = p->strategy,
        .peak_step = p->peak_step,
        .host_temp_bytes = p->host_bytes,
        .host_arena_bytes = p->host_arena,
        .offload_bytes = p->offload_bytes,
        .num_offloaded = (int)p->n_offloaded,
        .host_argument_bytes = p->host_argument_bytes,
        .host_output_bytes = p->host_output_bytes,
        .host_alias_bytes = p->host_alias_bytes,
    };
    const remat_info *r = &e->remat;
    if (r->peak_without) {
        out->remat_peak_without = r->peak_without;
        out->remat_bytes_saved = (int64_t)r->peak_without - (int64_t)p->peak;
        out->remat_num_recomputed = (int)r->n_recomputed;
        out->remat_added_flops = r->added_flops;
        out->remat_flops_share = r->step_flops > 0 ? r->added_flops / r->step_flops : 0;
        out->memory_budget = r->budget;
        out->remat_min_peak_bytes = r->min_peak;
    }
    out->remat_strategy = r->strategy ? r->strategy : "none";
    for (int c = 0; c < PLAN_NUM_CLASSES; c++) {
        out->class_bytes_at_peak[c] = p->class_peak[c];
        out->class_bytes_total[c] = p->class_total[c];
    }
    _Static_assert(PLAN_NUM_DTYPES == KILN_MAX_DTYPES, "one count per dtype, both sides");
    for (int t = 0; t < PLAN_NUM_DTYPES; t++) {
        out->dtype_bytes_at_peak[t] = p->dtype_peak[t];
        out->dtype_bytes_total[t] = p->dtype_total[t];
    }
    for (uint32_t i = 0; i < p->n_params; i++) {
        out->num_donated += p->donated[i];
        out->num_donations_unused += p->donated[i] && !p->donation_used[i];
    }
    /* A loop's sub-graphs take their own host arenas while its step runs, all of them at
     * once (run_control.c): the call's host peak is the largest step's sum on top. */
    uint64_t subs_host = 0;
    for (uint32_t i = 0; i < e->n_ctls; i++) {
        uint64_t sum = 0;
        for (uint32_t k = 0; k < e->ctls[i].n_subs; k++)
            sum += e->ctls[i].subs[k]->analysis.host_temp_bytes;
        if (sum > subs_host) subs_host = sum;
    }
    out->host_temp_bytes += subs_host;
}

kiln_status kiln_executable_get_memory_analysis(const kiln_executable *e,
                                                kiln_memory_analysis *out) {
    if (!e) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out)
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_executable_get_memory_analysis: out is NULL");
    *out = e->analysis;
    return KILN_STATUS_OK;
}

kiln_status kiln_executable_get_buffer_info(const kiln_executable *e, int i,
                                            kiln_buffer_info *out) {
    if (!e) return KILN_STATUS_INVALID_ARGUMENT;
    kiln_status s = exec_need_ir(e, "kiln_executable_get_buffer_info");
    if (s) return s;
    if (!out || i < 0 || (uint32_t)i >= e->mem.n_buffers)
        return ctx_error(e->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_executable_get_buffer_info: buffer %d of %u%s", i, e->mem.n_buffers,
                         out ? "" : " (out is NULL)");
    const plan_buffer *b = &e->mem.buffers[i];
    const ir_node *n = &e->g->nodes[b->node];
    bool scratch = b->kind == PLAN_K_SCRATCH;
    /* a copy of host offload: out to the host, or back; not a fetch of a host argument
     * (its input is a parameter) nor a host output */
    bool offload_copy = !scratch && n->op == IR_MEMORY_PUT && b->kind != PLAN_K_OUTPUT &&
                        e->g->nodes[ir_in(n)[0]].op != IR_PARAMETER;
    *out = (kiln_buffer_info){
        .node = (int)b->node,
        .op = plan_buffer_op(e->g, b),
        .kind = (kiln_buffer_kind)b->kind,
        .place = (kiln_buffer_place)b->place,
        .place_index = (int)b->place_index,
        .dtype = scratch ? KILN_DTYPE_INVALID : n->dtype,
        .rank = scratch ? 0 : n->shape.rank,
        .bytes = b->size,
        .offset = b->offset,
        .first_step = b->def,
        .last_step = b->last,
        .shares_with = b->shares >= 0 ? (int)e->mem.buffers[b->shares].node : 0,
        .memory_class = (kiln_memory_class)e->mem.buffer_class[i],
        .file = n->file,
        .line = n->line,
        .name = scratch || !n->name || !*n->name ? NULL : n->name,
        .recomputed = !scratch && remat_mark_of(e->g, b->node) == REMAT_CLONE && !offload_copy,
        .offloaded = offload_copy,
        .memory_kind = plan_buffer_in_host(e->g, b) ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE,
    };
    for (int a = 0; a < out->rank; a++) out->dims[a] = n->shape.dims[a];
    return KILN_STATUS_OK;
}

char *kiln_executable_memory_report(const kiln_executable *e) {
    if (!e || exec_need_ir(e, "kiln_executable_memory_report")) return NULL;
    return exec_memory_report(e);
}

char *kiln_executable_plan_json(const kiln_executable *e) {
    if (!e || exec_need_ir(e, "kiln_executable_plan_json")) return NULL;
    return plan_json(e->g, &e->plan, &e->mem, e->stats.code_bytes);
}

char *kiln_executable_plan_svg(const kiln_executable *e) {
    if (!e || exec_need_ir(e, "kiln_executable_plan_svg")) return NULL;
    return plan_svg(e->g, &e->plan, &e->mem);
}

char *exec_memory_report(const kiln_executable *e) {
    char *base = plan_report(e->g, &e->plan, &e->mem, e->stats.code_bytes);
    if (!base || !e->remat.peak_without) return base;
    strbuf sb;
    sb_init(&sb, e->ctx);
    /* before the per-buffer table, which readers (kiln plan) may cut off */
    const char *table = strstr(base, "\n  value ");
    size_t head = table ? (size_t)(table - base) + 1 : strlen(base);
    sb_printf(&sb, "%.*s", (int)head, base);
    remat_report(&sb, e->g, &e->remat, e->mem.peak, e->plan.materialised);
    if (table) sb_printf(&sb, "\n%s", base + head);
    kiln_string_free(e->ctx, base);
    return sb_take(&sb);
}
