/* report.c — the rematerialisation lines of the memory report (kiln_memory_report, kiln
 * plan): what recomputing saved and cost, how a budget search weighed offload against
 * recomputation, and a line per recomputation saying why it was made (the region's
 * policy, the budget's strategy, or the default's cheap values) and whether fusion gave it
 * a buffer. Text only: the figures come from remat_info and the final plan. */
#include "internal.h"

#include <stdlib.h>

const char *remat_bytes_str(uint64_t v, char *buf, size_t n) {
    if (v >= (1u << 20))
        snprintf(buf, n, "%.2f MiB", (double)v / (1 << 20));
    else
        snprintf(buf, n, "%.2f KiB", (double)v / 1024);
    return buf;
}

/* The reason of recomputation id, as the report words it. */
static void why_text(strbuf *sb, const kiln_graph *g, uint32_t id) {
    switch (remat_why_of(g, id)) {
    case REMAT_WHY_BUDGET_GREEDY: sb_append(sb, "memory budget, greedy"); break;
    case REMAT_WHY_BUDGET_SEGMENT: sb_append(sb, "memory budget, sqrt(n) segments"); break;
    case REMAT_WHY_CHEAP: sb_append(sb, "cheap elementwise value (disable_cheap_remat)"); break;
    case REMAT_WHY_BUDGET_OFFLOAD: sb_append(sb, "memory budget, offload"); break;
    case REMAT_WHY_FETCH: sb_append(sb, "fetched again from host memory"); break;
    default:
        sb_printf(sb, "checkpoint %s", kiln_checkpoint_policy_name(remat_policy_of(g, id)));
        break;
    }
}

void remat_report(strbuf *sb, const kiln_graph *g, const remat_info *r, uint64_t peak,
                  const uint8_t *materialised) {
    char b1[32], b2[32], b3[32];
    int64_t saved = (int64_t)r->peak_without - (int64_t)peak;
    sb_printf(sb, "rematerialisation (%s): peak %s without recomputation, %s with (%s %s)",
              r->strategy ? r->strategy : "none", remat_bytes_str(r->peak_without, b1, sizeof b1),
              remat_bytes_str(peak, b2, sizeof b2), saved >= 0 ? "saves" : "costs",
              remat_bytes_str((uint64_t)llabs(saved), b3, sizeof b3));
    if (r->budget) sb_printf(sb, "; budget %s", remat_bytes_str(r->budget, b1, sizeof b1));
    sb_printf(sb, "\n  %u ops recomputed, %.4g FLOPs added (%.2f%% of the step's %.4g)\n",
              r->n_recomputed, r->added_flops,
              r->step_flops > 0 ? 100 * r->added_flops / r->step_flops : 0.0, r->step_flops);
    if (r->n_offloaded)
        sb_printf(sb, "  %u values offloaded to pinned_host memory, %s copied each way per call\n",
                  r->n_offloaded, remat_bytes_str(r->offload_bytes, b1, sizeof b1));
    /* how the budget weighed offload against recomputation, so that a choice of one over
     * the other can be read back to the figures behind it */
    if (r->timed) {
        sb_printf(sb, "  budget weighed by time at the device's rates; offload copies %s",
                  r->overlap
                      ? "overlap the kernels on its copy queue: only the part of each not "
                        "hidden behind the compute beside it counts"
                      : "run in order with the kernels (no copy queue): each counts in full");
        if (r->n_offloaded)
            sb_printf(sb, "; the chosen plan's %.3g ms of copies per call count %.3g ms",
                      1e3 * r->copy_s, 1e3 * r->copy_wait_s);
        sb_append(sb, "\n");
    }
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (remat_mark_of(g, id) != REMAT_CLONE) continue;
        char ty[IR_TYPE_STR_MAX];
        /* an offloaded value brought back (a fetch of a host argument is a recomputation) */
        bool back = n->op == IR_MEMORY_PUT && g->nodes[ir_in(n)[0]].op != IR_PARAMETER;
        sb_printf(sb, "  %%%u %s %s: %s", id, back ? "offload of" : ir_ops[n->op].name,
                  ir_type_str(n->dtype, &n->shape, ty, sizeof ty),
                  back ? "back from the host, " : "");
        why_text(sb, g, id);
        sb_printf(sb, ", %s",
                  materialised && materialised[id] ? "own buffer"
                                                   : "fused into its consumer (no buffer)");
        if (n->file) sb_printf(sb, " (%s:%d)", kn_path_base(n->file), n->line);
        sb_append(sb, "\n");
    }
}
