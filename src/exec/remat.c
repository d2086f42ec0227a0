/* remat.c — the compile's side of rematerialisation (src/remat): exec_remat hands the
 * budget search a planner that fuses and plans each trial exactly as kiln_compile will
 * (exec_fuse_and_plan, on a scratch executable sharing e's device and donations), and
 * exec_memory_report puts the search's lines into the memory report. The search never sees
 * an executable: this file is the one place the two meet. */
#include "executable.h"

#include <string.h>

/* A trial's scratch executable: one at a time, released before the next. */
typedef struct trial_planner {
    kiln_executable *e;
    const kiln_compile_options *o;
    kiln_executable t;
} trial_planner;

static kiln_status plan_trial(void *user, const kiln_graph *g, const mem_plan **mem) {
    trial_planner *tp = user;
    kiln_executable *e = tp->e;
    /* the scratch executable borrows g: exec_plan_release frees the plan, never g */
    tp->t = (kiln_executable){
        .ctx = e->ctx, .dev = e->dev, .donated = e->donated, .g = (kiln_graph *)g};
    kiln_status s = exec_fuse_and_plan(&tp->t, tp->o);
    *mem = &tp->t.mem;
    return s;
}

static void release_trial(void *user) {
    trial_planner *tp = user;
    if (tp->t.ctx) exec_plan_release(&tp->t);
    tp->t = (kiln_executable){0};
}

kiln_status exec_remat(kiln_executable *e, const kiln_compile_options *o) {
    trial_planner tp = {.e = e, .o = o};
    remat_planner pl = {.plan = plan_trial, .release = release_trial, .user = &tp};
    return remat_choose(&e->g, o, &pl, &e->remat);
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
