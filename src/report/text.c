/* text.c — kiln_executable_to_string: the optimised graph, its kernels in schedule order
 * (what each writes and reads, in place, in flight), the memory report and the generated
 * source, for a reader. It prints the IR, so it needs kiln_compile_options.keep_ir. */
#include "report.h"
#include "runtime/tier.h"
#include "passes/passes.h"
#include "base/strbuf.h"

char *kiln_executable_to_string(const kiln_executable *e) {
    if (!e || exec_need_ir(e, "kiln_executable_to_string")) return NULL;
    strbuf sb;
    sb_init(&sb, e->ctx);
    ir_print(e->g, &sb);
    sb_printf(&sb, "\n%u kernels (%u ops fused away), in schedule order:\n", e->plan.n_kernels,
              e->plan.n_fused_away);
    if (e->plan.excess_precision)
        sb_append(&sb, "  excess precision: 16-bit values stay f32 inside a kernel, rounded where "
                       "stored (allow_excess_precision)\n");
    for (uint32_t s = 0; s < e->plan.n_kernels; s++) {
        uint32_t i = e->mem.order[s];
        const fkernel *k = &e->plan.kernels[i];
        sb_printf(&sb, "  %3u: k%u %-7s writes", s, i, fusion_kind_name(k->kind));
        for (uint32_t j = 0; j < k->n_roots; j++) sb_printf(&sb, " %%%u", k->roots[j]);
        sb_printf(&sb, " (%u ops) reads", k->n_members);
        for (uint32_t j = 0; j < k->n_inputs; j++) sb_printf(&sb, " %%%u", k->inputs[j]);
        for (uint32_t j = 0; k->alias && j < k->n_roots; j++)
            if (k->alias[j])
                sb_printf(&sb, " (%%%u in place over %%%u)", k->roots[j],
                          k->inputs[k->alias[j] - 1]);
        if (e->mem.wait_step[i] != (int32_t)s) /* an overlapped collective or copy (run.c) */
            sb_printf(&sb, " (in flight until step %d)", e->mem.wait_step[i]);
        sb_append(&sb, "\n");
    }
    if (e->tier == 1) /* tiered compilation (src/runtime/tier.c): which build calls run now */
        sb_printf(&sb, "compile tier: %s\n",
                  tier_current(e) == 2
                      ? "2, the optimised build (swapped in for the kernels' descriptions)"
                  : atomic_load_explicit(&((kiln_executable *)e)->tier_failed, memory_order_relaxed)
                      ? "1, the kernels run from their descriptions (the optimised build failed "
                        "to compile)"
                      : "1, the kernels run from their descriptions (the optimised build is "
                        "compiling in the background)");
    if (e->tier == 1 && e->tier1_compiled && tier_current(e) == 1)
        sb_printf(&sb,
                  "  %u kernel(s) compiled for tier 1: a float sum the C compiler vectorises in "
                  "an order of its own, which the descriptions cannot replay\n",
                  e->tier1_compiled);
    char *report = exec_memory_report(e);
    sb_printf(&sb, "\n%s\n%s", report ? report : "", e->source ? e->source : "");
    if (!report) sb.oom = true;
    kiln_string_free(e->ctx, report);
    return sb_take(&sb);
}
