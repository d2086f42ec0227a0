/* remat.c — the compile's side of rematerialisation (src/remat): exec_remat hands the
 * budget search a planner that fuses and plans each trial exactly as kiln_compile will
 * (exec_fuse_and_plan, on a scratch executable sharing e's device and donations). The search
 * never sees an executable: this file is the one place the two meet (the search's lines in
 * the memory report are src/report/analysis.c's exec_memory_report). */
#include "compile.h"

#include <string.h>

/* A trial's scratch executable: one at a time, released before the next. */
typedef struct trial_planner {
    kiln_executable *e;
    const kiln_compile_options *o;
    kiln_executable t;
} trial_planner;

static kiln_status plan_trial(void *user, const kiln_graph *g, const mem_plan **mem,
                              const fusion_plan **fp) {
    trial_planner *tp = user;
    kiln_executable *e = tp->e;
    /* the scratch executable borrows g and e's compiled loop bodies (whose arenas are
     * their control steps' scratch, so a trial's peak counts them): exec_plan_release
     * frees the plan, never g nor those */
    tp->t = (kiln_executable){.ctx = e->ctx,
                              .dev = e->dev,
                              .donated = e->donated,
                              .g = (kiln_graph *)g,
                              .ctls = e->ctls,
                              .n_ctls = e->n_ctls};
    kiln_status s = exec_fuse_and_plan(&tp->t, tp->o);
    *mem = &tp->t.mem;
    *fp = &tp->t.plan;
    return s;
}

static void release_trial(void *user) {
    trial_planner *tp = user;
    if (tp->t.ctx) exec_plan_release(&tp->t);
    tp->t = (kiln_executable){0};
}

/* The device's rates, for a search that may offload. */
static kiln_status trial_rates(void *user, double *flop_rate, double *link_rate, double *mem_rate) {
    trial_planner *tp = user;
    return device_rates(tp->e->ctx, tp->e->dev, flop_rate, link_rate, mem_rate);
}

kiln_status exec_remat(kiln_executable *e, const kiln_compile_options *o) {
    trial_planner tp = {.e = e, .o = o};
    remat_planner pl = {
        .plan = plan_trial, .release = release_trial, .user = &tp, .sub_graph = e->sub_graph};
    /* offload where the device has memory of its own, or where asked; never inside a loop
     * body (its program's search decides for the loop as a whole) */
    bool offload = o->budget_offload > 0 || (o->budget_offload == 0 && e->dev->backend->copy_h2d);
    if (offload && !e->sub_graph && e->dev->host_alloc) pl.rates = trial_rates;
    /* what plan_memory tells the planner (compile.c), so the search's cost model counts the
     * overlap its trials' plans are made with */
    pl.overlap_transfers = e->dev->backend->copy_kinds_start != NULL;
    return remat_choose(&e->g, o, &pl, &e->remat);
}
