/* test_remat.c — rematerialisation: checkpoint regions and their policies
 * (kiln_checkpoint_begin/_end/_name, src/remat/checkpoint.c), the recomputation pass
 * (src/remat/rewrite.c) and the memory budget (src/remat/budget.c).
 *
 * What is held: gradients with every policy and every budget are bitwise the gradients
 * without recomputation (a recomputation is the same kernel code on the same inputs);
 * the measured allocator peak equals the planned peak of every plan (cmp_run_planned);
 * the planned peak never rises as the budget falls and always fits it; an infeasible
 * budget fails with the budget, the smallest reachable peak and the buffers holding it,
 * and that peak is the analysis's remat_min_peak_bytes (buffer_info marks what is
 * recomputed);
 * nothing_saveable per layer lowers the planned and the measured peak of a deep MLP and
 * of a transformer stack; random programs with random regions and budgets agree with the
 * reference interpreter; a compile under a budget survives every host allocation
 * failure; a policy recomputes the same products however attention's products are
 * spelled; the GPT of `kiln train` gives bitwise the same steps under every strategy.
 * KILN_TEST_PROGRAMS raises the number of random programs. */
#include "compare.h"
#include "fault.h"
#include "randprog.h"
#include "../examples/models.h"
#include "gpt.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "remat/remat.h"

#include <math.h>
#include <stdint.h>

static kiln_context *ctx;

/* --------------------------------------------------------------- programs ---- */

#define MLP_LAYERS 8
#define MLP_B      256
#define MLP_W      64

typedef struct step {
    kiln_graph *g;
    int n_params;
    kiln_value params[MODEL_MAX_PARAMS];
} step;

/* One region per layer under `policy` (-1: no region). The pre-activation is named "pre". */
static void mlp_layers(step *s, int policy, kiln_value *x) {
    kiln_graph *g = s->g;
    int64_t wd[2] = {MLP_W, MLP_W}, bd[1] = {MLP_W};
    for (int l = 0; l < MLP_LAYERS; l++) {
        kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, wd);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, bd);
        s->params[s->n_params++] = w;
        s->params[s->n_params++] = b;
        const char *names[1] = {"pre"};
        int names_policy = policy == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ||
                           policy == KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE;
        if (policy >= 0)
            kiln_checkpoint_begin(g, (kiln_checkpoint_policy)policy, names_policy,
                                  names_policy ? names : NULL);
        kiln_value pre = kiln_checkpoint_name(g, kiln_add(g, kiln_matmul(g, *x, w), b), "pre");
        kiln_value h = kiln_tanh(g, pre);
        *x = kiln_add(g, kiln_mul(g, h, kiln_scalar(g, KILN_DTYPE_F32, 0.5)), *x);
        if (policy >= 0) kiln_checkpoint_end(g);
    }
}

/* loss = mean(x_L^2); outputs: loss, then every gradient. */
static kiln_graph *mlp_step(step *s, int policy) {
    memset(s, 0, sizeof *s);
    kiln_graph_create(ctx, "mlp", &s->g);
    int64_t xd[2] = {MLP_B, MLP_W};
    kiln_value x0 = kiln_parameter(s->g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value x = x0;
    mlp_layers(s, policy, &x);
    kiln_value loss = kiln_mean(s->g, kiln_mul(s->g, x, x), 0, NULL, false);
    kiln_value outs[1 + MODEL_MAX_PARAMS];
    outs[0] = loss;
    CHECK_OK(ctx, kiln_grad(s->g, loss, s->n_params, s->params, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(s->g, 1 + s->n_params, outs));
    s->params[s->n_params] = x0; /* the last argument-making slot: x is parameter 0 */
    return s->g;
}

/* Arguments for every parameter of g, deterministic. */
static kiln_array **make_args(kiln_graph *g) {
    int n = kiln_graph_num_parameters(g);
    kiln_array **a = calloc((size_t)n, sizeof *a);
    uint64_t seed = 0x1234;
    for (int i = 0; i < n; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        a[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, p->shape.dims, &seed);
    }
    return a;
}

static void free_args(kiln_graph *g, kiln_array **a) {
    for (int i = 0; i < kiln_graph_num_parameters(g); i++) kiln_array_destroy(a[i]);
    free(a);
}

/* e's memory analysis; for a NULL e (a failed compile, reported where it happened) an
 * analysis of nothing with empty strings, so the checks on it fail instead of crashing. */
static void analysis_of(const kiln_executable *e, kiln_memory_analysis *an) {
    memset(an, 0, sizeof *an);
    an->schedule = an->remat_strategy = "";
    if (e) kiln_executable_get_memory_analysis(e, an);
}

/* Compiles g with o, runs it with the plan checked and the peak measured (must equal the
 * planned one), and returns the outputs in outs (caller frees); 0 when anything failed.
 * *an receives the memory analysis. */
static int run_planned(kiln_graph *g, kiln_array **args, const kiln_compile_options *o,
                       kiln_array **outs, kiln_memory_analysis *an) {
    kiln_executable *e = NULL;
    int ok = 1;
    kiln_compile_options ko = o ? *o : (kiln_compile_options){0};
    ko.keep_ir = true; /* cmp_run_planned's plan_check reads it */
    if (kiln_compile(g, &ko, &e) != KILN_STATUS_OK) {
        fprintf(stderr, "compile: %s\n", kiln_last_error(ctx));
        analysis_of(NULL, an);
        return 0;
    }
    analysis_of(e, an);
    if (cmp_run_planned(ctx, e, kiln_graph_num_parameters(g), args, kiln_graph_num_outputs(g), outs,
                        &ok) != KILN_STATUS_OK) {
        fprintf(stderr, "run: %s\n", kiln_last_error(ctx));
        ok = 0;
    }
    kiln_executable_destroy(e);
    return ok;
}

/* Bitwise equality of two output lists. */
static int same_bits(kiln_array **a, kiln_array **b, int n, const char *what) {
    int ok = 1;
    for (int i = 0; i < n; i++) {
        size_t na = kiln_array_nbytes(a[i]), nb = kiln_array_nbytes(b[i]);
        void *pa = malloc(na ? na : 1), *pb = malloc(nb ? nb : 1);
        kiln_array_copy_to_host(a[i], pa, na);
        kiln_array_copy_to_host(b[i], pb, nb);
        if (na != nb || memcmp(pa, pb, na)) {
            fprintf(stderr, "%s: output %d differs from the run without recomputation\n", what, i);
            ok = 0;
        }
        free(pa), free(pb);
    }
    return ok;
}

static void free_outs(kiln_array **o, int n) {
    for (int i = 0; i < n; i++) kiln_array_destroy(o[i]);
}

/* ------------------------------------------------- the cost of offload ---- */

/* A budget search's planner without a device: it fuses and plans each trial as the compile
 * does (less the dots' scratch), with copies between memory kinds planned to overlap the
 * kernels or not, and gives the rates it was made with, as src/compile/remat.c gives a
 * device's measured ones. */
typedef struct rated_planner {
    fusion_plan fp;
    mem_plan mp;
    bool overlap;
    double rate[3]; /* FLOP/s of products, bytes/s of the link, bytes/s of memory */
} rated_planner;

static kiln_status rated_plan(void *user, const kiln_graph *g, const mem_plan **mem,
                              const fusion_plan **fp) {
    rated_planner *rp = user;
    fusion_options fo = {0};
    plan_options po = {.granule = 256, .overlap_transfers = rp->overlap};
    kiln_status s = fusion_plan_build(g, &fo, &rp->fp);
    if (!s) s = plan_build(g, &rp->fp, &po, &rp->mp);
    *mem = &rp->mp, *fp = &rp->fp;
    return s;
}

static void rated_release(void *user) {
    rated_planner *rp = user;
    if (rp->mp.ctx) plan_free(&rp->mp);
    if (rp->fp.ctx) fusion_plan_free(&rp->fp);
    memset(&rp->mp, 0, sizeof rp->mp), memset(&rp->fp, 0, sizeof rp->fp);
}

static kiln_status rated_rates(void *user, double *flops, double *link, double *mem) {
    rated_planner *rp = user;
    *flops = rp->rate[0], *link = rp->rate[1], *mem = rp->rate[2];
    return KILN_STATUS_OK;
}

/* The budget search on g (after the compile's passes) under `budget` bytes, with the
 * planner above; *info is what it chose, *report its lines of the memory report (caller
 * frees). */
static kiln_status choose_rated(kiln_graph *g, uint64_t budget, bool overlap, const double *rate,
                                remat_info *info, char **report) {
    kiln_context *c = g->ctx;
    rated_planner rp = {.overlap = overlap, .rate = {rate[0], rate[1], rate[2]}};
    remat_planner pl = {.plan = rated_plan,
                        .release = rated_release,
                        .user = &rp,
                        .rates = rated_rates,
                        .overlap_transfers = overlap};
    kiln_compile_options o = {.memory_budget = budget};
    kiln_graph *tg = NULL;
    kiln_status s = pass_clone(g, &tg);
    if (!s) s = passes_run(&tg, NULL);
    if (!s) s = remat_choose(&tg, &o, &pl, info);
    const mem_plan *m = NULL;
    const fusion_plan *fp = NULL;
    if (!s) s = rated_plan(&rp, tg, &m, &fp);
    if (!s && report) {
        strbuf sb;
        sb_init(&sb, c);
        remat_report(&sb, tg, info, m->peak, fp->materialised);
        if (!(*report = sb_take(&sb))) s = ctx_oom(c, "the report", 0);
    }
    rated_release(&rp);
    kiln_graph_destroy(tg);
    return s;
}

/* The budget's cost model with copies that overlap the kernels (issue 34): with rates at
 * which copying an activation out and back (64 KiB at 65 MB/s, 1.0 ms each way) costs more
 * than recomputing it (a 2.1 MFLOP product at 1.4 GFLOP/s, 1.5 ms) but one way costs less,
 * a device whose copies run in order with its kernels recomputes (sqrt(n) segments), and
 * one that overlaps them offloads: the copies out hide behind the products beside them,
 * and only the copies back, each run just before its reader, are waited for. Without overlap
 * the copies count as they always did, 2 x offloaded bytes / link rate, to the bit; with
 * it never more than that. The report says which way the copies were counted. */
static void test_offload_overlap(void) {
    step s;
    kiln_graph *g = mlp_step(&s, -1);
    const double rate[3] = {1.4e9, 6.5e7, 1e12}; /* FLOP/s, link bytes/s, memory bytes/s */
    remat_info none = {0}, in_order = {0}, overlap = {0};
    CHECK_OK(ctx, choose_rated(g, UINT64_MAX / 2, false, rate, &none, NULL));
    CHECK(none.peak_without > 0 && none.n_offloaded == 0 && none.n_recomputed == 0);
    uint64_t budget = (uint64_t)((double)none.peak_without * 0.85);
    char *r0 = NULL, *r1 = NULL;
    CHECK_OK(ctx, choose_rated(g, budget, false, rate, &in_order, &r0));
    CHECK_OK(ctx, choose_rated(g, budget, true, rate, &overlap, &r1));
    CHECK_MSG(in_order.n_offloaded == 0 && in_order.n_recomputed > 0,
              "in order: %s, %u recomputed, %u offloaded", in_order.strategy, in_order.n_recomputed,
              in_order.n_offloaded);
    CHECK_MSG(overlap.n_offloaded > 0 && overlap.n_recomputed == 0,
              "overlapped: %s, %u recomputed, %u offloaded", overlap.strategy, overlap.n_recomputed,
              overlap.n_offloaded);
    CHECK(in_order.timed && !in_order.overlap && overlap.timed && overlap.overlap);
    printf("budget %llu bytes: copies in order: %s; overlapped: %s, %.3g of %.3g ms waited for\n",
           (unsigned long long)budget, in_order.strategy, overlap.strategy,
           1e3 * overlap.copy_wait_s, 1e3 * overlap.copy_s);
    /* the copies out hidden, the copies back (half the bytes) waited for */
    CHECK(overlap.copy_s == 2.0 * (double)overlap.offload_bytes / rate[1]);
    CHECK_MSG(overlap.copy_wait_s >= 0.5 * overlap.copy_s - 1e-12 &&
                  overlap.copy_wait_s < 0.75 * overlap.copy_s,
              "%.4g s of %.4g s of copies waited for", overlap.copy_wait_s, overlap.copy_s);
    CHECK_CONTAINS(r0, "offload copies run in order with the kernels (no copy queue)");
    CHECK_CONTAINS(r1, "offload copies overlap the kernels on its copy queue");
    CHECK_CONTAINS(r1, "of copies per call count");
    CHECK_CONTAINS(r1, "back from the host, memory budget, offload");
    kiln_string_free(ctx, r0), kiln_string_free(ctx, r1);

    /* a link twice as fast: offload wins in order too, counted in full, exactly as before */
    const double fast[3] = {rate[0], 2 * rate[1], rate[2]};
    remat_info f0 = {0}, f1 = {0};
    CHECK_OK(ctx, choose_rated(g, budget, false, fast, &f0, NULL));
    CHECK_OK(ctx, choose_rated(g, budget, true, fast, &f1, NULL));
    CHECK(f0.n_offloaded > 0 && f1.n_offloaded > 0);
    CHECK(f0.copy_wait_s == 2.0 * (double)f0.offload_bytes / fast[1]);
    CHECK(f0.copy_s == f0.copy_wait_s);
    CHECK(f1.copy_wait_s <= f1.copy_s && f1.copy_wait_s < f0.copy_wait_s);
    /* without rates nothing is timed, whatever the device does */
    const double zero[3] = {0, 0, 0};
    remat_info z = {0};
    CHECK_OK(ctx, choose_rated(g, budget, true, zero, &z, NULL));
    CHECK(!z.timed && z.n_offloaded == 0 && z.copy_s == 0);
    kiln_graph_destroy(g);
}

/* ---------------------------------------------------------------- policies ---- */

static void test_policies(void) {
    step s0;
    kiln_graph *g0 = mlp_step(&s0, -1);
    int n_out = kiln_graph_num_outputs(g0);
    kiln_array **args = make_args(g0);
    kiln_array *want[1 + MODEL_MAX_PARAMS] = {0};
    kiln_memory_analysis a0 = {0};
    CHECK(run_planned(g0, args, NULL, want, &a0));
    CHECK(a0.remat_num_recomputed == 0 && a0.remat_peak_without == 0);
    CHECK(!strcmp(a0.remat_strategy, "none"));
    for (int p = KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE;
         p <= KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE; p++) {
        step s;
        kiln_graph *g = mlp_step(&s, p);
        kiln_array *got[1 + MODEL_MAX_PARAMS] = {0};
        kiln_memory_analysis a = {0};
        const char *name = kiln_checkpoint_policy_name((kiln_checkpoint_policy)p);
        CHECK_MSG(run_planned(g, args, NULL, got, &a), "%s", name);
        CHECK_MSG(same_bits(got, want, n_out, name), "%s", name);
        /* everything_saveable drops nothing: no second plan, no figures */
        CHECK_MSG(a.remat_peak_without ==
                      (p == KILN_CHECKPOINT_POLICY_EVERYTHING_SAVEABLE ? 0 : a0.peak_bytes),
                  "%s: %llu vs %llu", name, (unsigned long long)a.remat_peak_without,
                  (unsigned long long)a0.peak_bytes);
        if (a.remat_peak_without)
            CHECK(a.remat_bytes_saved == (int64_t)a.remat_peak_without - (int64_t)a.peak_bytes);
        if (p == KILN_CHECKPOINT_POLICY_EVERYTHING_SAVEABLE) {
            CHECK_MSG(a.remat_num_recomputed == 0 && a.peak_bytes == a0.peak_bytes, "%s", name);
        } else {
            /* each of these drops at least tanh's result, which the backward reads */
            CHECK_MSG(a.remat_num_recomputed >= MLP_LAYERS, "%s: %d recomputed", name,
                      a.remat_num_recomputed);
            CHECK_MSG(a.remat_added_flops > 0 && a.remat_flops_share > 0 && a.remat_flops_share < 1,
                      "%s: %g FLOPs, share %g", name, a.remat_added_flops, a.remat_flops_share);
            CHECK(!strcmp(a.remat_strategy, "checkpoint"));
        }
        if (p == KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE)
            CHECK_MSG(a.peak_bytes < a0.peak_bytes, "nothing_saveable: peak %llu, without %llu",
                      (unsigned long long)a.peak_bytes, (unsigned long long)a0.peak_bytes);
        /* dots_saveable keeps the products: recomputes no matrix product */
        if (p == KILN_CHECKPOINT_POLICY_DOTS_SAVEABLE ||
            p == KILN_CHECKPOINT_POLICY_DOTS_WITH_NO_BATCH_DIMS_SAVEABLE) {
            double dot_flops = 2.0 * MLP_B * MLP_W * MLP_W;
            CHECK_MSG(a.remat_added_flops < dot_flops, "%s: %g FLOPs", name, a.remat_added_flops);
        }
        free_outs(got, n_out);
        kiln_graph_destroy(g);
    }
    free_outs(want, n_out);
    free_args(g0, args);
    kiln_graph_destroy(g0);
}

/* 8 layers x = t * logistic(t), t = tanh(x . W_l), each a region of `policy` (-1: none),
 * and the gradient of mean(x^2) in every W. */
static kiln_graph *act_layers(int policy) {
    enum { B = 64, W = 64, NL = 8 };
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "act_layers", &g);
    kiln_value w[NL], x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (const int64_t[]){B, W});
    for (int l = 0; l < NL; l++)
        w[l] = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, (const int64_t[]){W, W});
    for (int l = 0; l < NL; l++) {
        if (policy >= 0) kiln_checkpoint_begin(g, (kiln_checkpoint_policy)policy, 0, NULL);
        kiln_value t = kiln_tanh(g, kiln_matmul(g, x, w[l]));
        x = kiln_mul(g, t, kiln_logistic(g, t));
        if (policy >= 0) kiln_checkpoint_end(g);
    }
    kiln_value outs[1 + NL];
    outs[0] = kiln_mean(g, kiln_square(g, x), 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, outs[0], NL, w, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, 1 + NL, outs));
    return g;
}

/* A region's output that is elementwise work on what the policy saves (dots_saveable's
 * activation of its product) is recomputed as the default would with no region, not
 * kept: per-layer dots_saveable regions planned 1.27x the peak of no region (an outside
 * check; XLA's footprint for jax.checkpoint(policy=dots_saveable) equals its own without).
 * Same gradients, measured == planned. */
static void test_region_outputs_recomputed(void) {
    kiln_graph *g0 = act_layers(-1);
    int n_out = kiln_graph_num_outputs(g0);
    kiln_array **args = make_args(g0);
    kiln_array *want[9] = {0}, *got[9] = {0};
    kiln_memory_analysis a0, a;
    CHECK(run_planned(g0, args, NULL, want, &a0));
    const int pols[2] = {KILN_CHECKPOINT_POLICY_DOTS_SAVEABLE,
                         KILN_CHECKPOINT_POLICY_DOTS_WITH_NO_BATCH_DIMS_SAVEABLE};
    for (int k = 0; k < 2; k++) {
        kiln_graph *g = act_layers(pols[k]);
        const char *name = kiln_checkpoint_policy_name((kiln_checkpoint_policy)pols[k]);
        CHECK_MSG(run_planned(g, args, NULL, got, &a), "%s", name);
        CHECK_MSG(same_bits(got, want, n_out, name), "%s", name);
        CHECK_MSG(a.peak_bytes <= a0.peak_bytes, "%s: planned peak %llu, %llu with no region", name,
                  (unsigned long long)a.peak_bytes, (unsigned long long)a0.peak_bytes);
        free_outs(got, n_out);
        kiln_graph_destroy(g);
    }
    free_outs(want, n_out);
    free_args(g0, args);
    kiln_graph_destroy(g0);
}

/* The report names every recomputed value and why; the SVG draws them apart. */
static void test_report(void) {
    step s;
    kiln_graph *g = mlp_step(&s, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    char *r = kiln_executable_memory_report(e);
    CHECK_CONTAINS(r, "rematerialisation (checkpoint)");
    CHECK_CONTAINS(r, "ops recomputed");
    CHECK_CONTAINS(r, "tanh f32[256,64]: checkpoint nothing_saveable");
    CHECK_CONTAINS(r, "test_remat.c:");
    char *svg = kiln_executable_plan_svg(e);
    CHECK_CONTAINS(svg, "recomputed");
    kiln_string_free(ctx, r);
    kiln_string_free(ctx, svg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* ----------------------------------------------------------------- budgets ---- */

static kiln_graph *transformer_step(model *m, bool regions);

/* Budgets from 100% of the peak without recomputation down to `lowest`% in steps of
 * `stride`: every plan fits its budget, is bitwise the gradients of the program with nothing
 * recomputed, plans a peak the allocator measures, never above the default's, and never
 * above the plan of a higher budget. Returns how many budgets fitted; *smallest receives
 * the lowest peak and *a0 the default's analysis. */
static int budget_sweep(kiln_graph *g, int lowest, int stride, uint64_t *smallest,
                        kiln_memory_analysis *a0_out) {
    int n_out = kiln_graph_num_outputs(g);
    kiln_array **args = make_args(g);
    kiln_array *want[1 + MODEL_MAX_PARAMS] = {0}, *dflt[1 + MODEL_MAX_PARAMS] = {0};
    kiln_memory_analysis a0 = {0}, plain = {0};
    kiln_compile_options off = {.keep_ir = true, .disable_cheap_remat = true};
    CHECK(run_planned(g, args, &off, want, &plain));
    CHECK(run_planned(g, args, NULL, dflt, &a0));
    CHECK(same_bits(dflt, want, n_out, "default"));
    free_outs(dflt, n_out);
    *a0_out = a0;
    uint64_t prev = UINT64_MAX;
    *smallest = UINT64_MAX;
    int fitted = 0;
    for (int pct = 100; pct >= lowest; pct -= stride) {
        kiln_compile_options o = {.keep_ir = true, .memory_budget_fraction = pct / 100.0};
        kiln_array *got[1 + MODEL_MAX_PARAMS] = {0};
        kiln_executable *e = NULL;
        kiln_status st = kiln_compile(g, &o, &e);
        kiln_executable_destroy(e);
        if (st == KILN_STATUS_DEVICE_OOM) {
            CHECK_CONTAINS(kiln_last_error(ctx), "smallest planned peak reachable");
            continue;
        }
        CHECK_OK(ctx, st);
        kiln_memory_analysis a = {0};
        CHECK_MSG(run_planned(g, args, &o, got, &a), "budget %d%%", pct);
        CHECK_MSG(same_bits(got, want, n_out, "budget"), "budget %d%%", pct);
        CHECK_MSG(a.peak_bytes <= a.memory_budget, "%d%%: peak %llu over the budget %llu", pct,
                  (unsigned long long)a.peak_bytes, (unsigned long long)a.memory_budget);
        /* the share is of the peak with nothing recomputed, not of the default's */
        uint64_t without = a0.remat_peak_without ? a0.remat_peak_without : a0.peak_bytes;
        CHECK(a.memory_budget == (uint64_t)(pct / 100.0 * (double)without));
        CHECK(a.remat_peak_without == without);
        /* a budget never plans a higher peak than no budget at all */
        CHECK_MSG(a.peak_bytes <= a0.peak_bytes, "%d%%: peak %llu over the default's %llu", pct,
                  (unsigned long long)a.peak_bytes, (unsigned long long)a0.peak_bytes);
        CHECK_MSG(a.peak_bytes <= prev, "%d%%: peak %llu rose from %llu", pct,
                  (unsigned long long)a.peak_bytes, (unsigned long long)prev);
        prev = a.peak_bytes;
        if (a.peak_bytes < *smallest) *smallest = a.peak_bytes;
        fitted++;
        free_outs(got, n_out);
    }
    CHECK(plain.peak_bytes == (a0.remat_peak_without ? a0.remat_peak_without : a0.peak_bytes));
    free_outs(want, n_out);
    free_args(g, args);
    return fitted;
}

static void test_budgets(void) {
    step s;
    kiln_graph *g = mlp_step(&s, -1);
    kiln_memory_analysis a0 = {0};
    uint64_t smallest = 0;
    CHECK(budget_sweep(g, 40, 5, &smallest, &a0) >= 3);
    CHECK_MSG(smallest < a0.peak_bytes, "no budget lowered the peak (%llu)",
              (unsigned long long)a0.peak_bytes);
    /* a budget below the arguments themselves cannot be met */
    kiln_compile_options tiny = {.keep_ir = true, .memory_budget = 4096};
    kiln_executable *e = NULL;
    CHECK_STATUS(kiln_compile(g, &tiny, &e), KILN_STATUS_DEVICE_OOM);
    const char *msg = kiln_last_error(ctx);
    CHECK_CONTAINS(msg, "cannot fit the memory budget of 4096 bytes");
    CHECK_CONTAINS(msg, "the smallest planned peak reachable is");
    CHECK_CONTAINS(msg, "f32[256,64] 65536 bytes (");
    CHECK(e == NULL);
    kiln_compile_options bad = {.keep_ir = true, .memory_budget_fraction = 1.5};
    CHECK_STATUS(kiln_compile(g, &bad, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "memory_budget_fraction");
    kiln_compile_options odd = {.budget_offload = 5}; /* 1, -1 or 0 (an outside check) */
    CHECK_STATUS(kiln_compile(g, &odd, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "budget_offload is 5");
    kiln_graph_destroy(g);
    /* the transformer stack: the default's cheap values, then greedy and segments */
    model m;
    g = transformer_step(&m, false);
    CHECK(budget_sweep(g, 30, 10, &smallest, &a0) >= 3);
    CHECK_MSG(smallest < a0.peak_bytes, "transformer: no budget lowered the peak (%llu)",
              (unsigned long long)a0.peak_bytes);
    kiln_graph_destroy(g);
}

/* The smallest reachable peak and the recomputed buffers as fields, not only text: the
 * figure a budget too small is refused with is remat_min_peak_bytes of every budgeted
 * compile of the program (the proposals do not depend on the budget), a budget of exactly
 * that figure is met at it, and no budget leaves it 0. kiln_buffer_info.recomputed marks
 * the buffers the report lists as recomputed with a buffer of their own. */
/* PyTorch's activation_memory_budget: the share of the saved activations the peak may
 * hold. In bytes, the peak without recomputation less (1 - share) of the bytes saved at
 * that peak (the plan's own class figure); the tightest of several budgets applies. */
static void test_activation_budget(void) {
    step s;
    kiln_graph *g = mlp_step(&s, -1);
    kiln_executable *e = NULL;
    kiln_compile_options plain = {.disable_cheap_remat = true};
    CHECK_OK(ctx, kiln_compile(g, &plain, &e));
    kiln_memory_analysis a = {0};
    analysis_of(e, &a);
    kiln_executable_destroy(e), e = NULL;
    uint64_t without = a.peak_bytes, saved = a.class_bytes_at_peak[KILN_MEMORY_CLASS_ACTIVATION];
    CHECK(saved > 0);
    for (int k = 0; k < 3; k++) {
        double share = k == 0 ? 1.0 : k == 1 ? 0.75 : 0.5;
        kiln_budget_result r;
        kiln_compile_options o = {.activation_memory_budget = share, .budget_result = &r};
        kiln_status st = kiln_compile(g, &o, &e);
        uint64_t want = without - (uint64_t)ceil((1 - share) * (double)saved);
        CHECK_MSG(r.budget_bytes == want, "share %g: budget %llu, want %llu", share,
                  (unsigned long long)r.budget_bytes, (unsigned long long)want);
        CHECK(r.peak_without_bytes == without);
        if (st == KILN_STATUS_OK) {
            analysis_of(e, &a);
            CHECK(r.fits && a.peak_bytes <= want && a.memory_budget == want);
        } else {
            CHECK(st == KILN_STATUS_DEVICE_OOM && !r.fits && r.min_peak_bytes > want);
        }
        kiln_executable_destroy(e), e = NULL;
    }
    /* with a byte budget too: the tighter one */
    kiln_budget_result r;
    kiln_compile_options both = {
        .activation_memory_budget = 1, .memory_budget = without - 4096, .budget_result = &r};
    kiln_compile(g, &both, &e);
    CHECK(r.budget_bytes == without - 4096);
    kiln_executable_destroy(e), e = NULL;
    kiln_compile_options bad = {.activation_memory_budget = 1.5};
    CHECK_STATUS(kiln_compile(g, &bad, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "activation_memory_budget is 1.5");
    kiln_graph_destroy(g);
}

static void test_min_peak_fields(void) {
    step s;
    kiln_graph *g = mlp_step(&s, -1);
    kiln_executable *e = NULL;
    kiln_compile_options tiny = {.keep_ir = true, .memory_budget = 4096};
    CHECK_STATUS(kiln_compile(g, &tiny, &e), KILN_STATUS_DEVICE_OOM);
    const char *msg = kiln_last_error(ctx), *at = strstr(msg, "reachable is ");
    unsigned long long reach = at ? strtoull(at + strlen("reachable is "), NULL, 10) : 0;
    CHECK_MSG(reach > 4096, "no smallest peak in: %s", msg);
    kiln_compile_options exact = {.keep_ir = true, .memory_budget = reach},
                         loose = {.keep_ir = true, .memory_budget_fraction = 1};
    kiln_memory_analysis a = {0};
    CHECK_OK(ctx, kiln_compile(g, &exact, &e));
    analysis_of(e, &a);
    CHECK_MSG(a.remat_min_peak_bytes == reach && a.peak_bytes == reach,
              "min %llu, peak %llu, want %llu", (unsigned long long)a.remat_min_peak_bytes,
              (unsigned long long)a.peak_bytes, reach);
    CHECK(a.remat_num_recomputed > 0);
    int recomputed = 0;
    char *report = kiln_executable_memory_report(e);
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        CHECK_OK(ctx, kiln_executable_get_buffer_info(e, i, &b));
        if (!b.recomputed) continue;
        recomputed++;
        char line[64];
        snprintf(line, sizeof line, "  %%%d %s ", b.node, b.op);
        CHECK_CONTAINS(report, line);
        CHECK(b.kind == KILN_BUFFER_KIND_TEMP);
    }
    int own = 0;
    for (const char *p = report; p && (p = strstr(p, ", own buffer")); p++) own++;
    CHECK_MSG(recomputed > 0 && recomputed == own, "%d buffers recomputed, the report lists %d",
              recomputed, own);
    kiln_string_free(ctx, report);
    kiln_executable_destroy(e);
    CHECK_OK(ctx, kiln_compile(g, &loose, &e));
    analysis_of(e, &a);
    CHECK(a.remat_min_peak_bytes == reach && a.peak_bytes >= reach);
    kiln_executable_destroy(e);
    /* no budget: no search, no recomputation here, nothing marked */
    kiln_compile_options off = {.keep_ir = true, .disable_cheap_remat = true};
    CHECK_OK(ctx, kiln_compile(g, &off, &e));
    analysis_of(e, &a);
    CHECK(a.remat_min_peak_bytes == 0);
    for (int i = 0; i < a.num_buffers; i++) {
        kiln_buffer_info b;
        kiln_executable_get_buffer_info(e, i, &b);
        CHECK(!b.recomputed);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* KILN_MEMORY_BUDGET: bytes or a share, and junk named. */
static void test_environment(void) {
    step s;
    kiln_graph *g = mlp_step(&s, -1);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    kiln_memory_analysis a0 = {0}, a = {0};
    analysis_of(e, &a0);
    kiln_executable_destroy(e);
    char dir[] = "/tmp/kiln-remat-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const char *const values[] = {"75%", "1GiB"};
    for (int i = 0; i < 2; i++) {
        setenv("KILN_MEMORY_BUDGET", values[i], 1);
        kiln_context_options o = {.cache_dir = dir};
        kiln_context *c = NULL;
        char err[256];
        CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_OK);
        kiln_graph *g2 = NULL;
        step s2;
        kiln_context *keep = ctx;
        ctx = c;
        g2 = mlp_step(&s2, -1);
        ctx = keep;
        CHECK_OK(c, kiln_compile(g2, &(kiln_compile_options){.keep_ir = true}, &e));
        analysis_of(e, &a);
        if (i == 0) {
            CHECK(a.memory_budget == (uint64_t)(0.75 * (double)a0.peak_bytes));
            CHECK(a.peak_bytes <= a.memory_budget);
        } else {
            CHECK(a.memory_budget == (uint64_t)1 << 30);
        }
        kiln_executable_destroy(e);
        kiln_graph_destroy(g2);
        kiln_context_destroy(c);
    }
    setenv("KILN_MEMORY_BUDGET", "lots", 1);
    kiln_context_options o = {.cache_dir = dir};
    kiln_context *c = NULL;
    char err[256] = "";
    CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_MEMORY_BUDGET");
    setenv("KILN_MEMORY_BUDGET", "150%", 1);
    CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_CONFIG);
    unsetenv("KILN_MEMORY_BUDGET");
    test_remove_dir(dir);
    kiln_graph_destroy(g);
}

/* ----------------------------------------------------------------- errors ---- */

static void test_errors(void) {
    kiln_graph *g = NULL;
    int64_t d = 4;
    kiln_graph_create(ctx, "e", &g);
    CHECK_STATUS(kiln_checkpoint_end(g), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_graph_error(g), "no checkpoint region is open");
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "e", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &d);
    CHECK_OK(ctx, kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE, 0, NULL));
    x = kiln_exp(g, x);
    CHECK_STATUS(kiln_graph_finish(g, 1, &x), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_graph_error(g),
                   "1 checkpoint region is still open (the innermost began at");
    CHECK_CONTAINS(kiln_graph_error(g), "test_remat.c:");
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "e", &g);
    const char *names[1] = {"a"};
    CHECK_STATUS(kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_DOTS_SAVEABLE, 1, names),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_graph_error(g), "dots_saveable takes no names");
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "e", &g);
    CHECK_STATUS(kiln_checkpoint_begin(g, (kiln_checkpoint_policy)42, 0, NULL),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_graph_error(g), "policy 42 is not a policy");
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "e", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &d);
    kiln_value y = kiln_checkpoint_name(g, x, NULL);
    CHECK(y.id == 0);
    CHECK_CONTAINS(kiln_graph_error(g), "kiln_checkpoint_name: name is NULL");
    kiln_graph_destroy(g);
    CHECK(strcmp(kiln_checkpoint_policy_name((kiln_checkpoint_policy)-1), "?") == 0);
}

/* Nested regions: outer nothing_saveable around an inner everything_saveable drops the
 * inner values too; the other way round drops only the inner ones. Either way the
 * gradients are bitwise those without regions. */
static void test_nested(void) {
    kiln_array *want[2] = {0};
    kiln_array **args = NULL;
    kiln_graph *g0 = NULL;
    int recomputed[3] = {0};
    for (int v = 0; v < 3; v++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "nested", &g);
        int64_t d[2] = {32, 32};
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
        kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d);
        if (v == 1) kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE, 0, NULL);
        if (v == 2) kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_EVERYTHING_SAVEABLE, 0, NULL);
        kiln_value a = kiln_tanh(g, kiln_matmul(g, x, w));
        if (v)
            kiln_checkpoint_begin(g,
                                  v == 1 ? KILN_CHECKPOINT_POLICY_EVERYTHING_SAVEABLE
                                         : KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE,
                                  0, NULL);
        kiln_value t1 = kiln_tanh(g, kiln_matmul(g, a, w)); /* read by tanh's rule below */
        kiln_value b = kiln_tanh(g, kiln_mul(g, t1, t1));
        if (v) kiln_checkpoint_end(g);
        if (v) kiln_checkpoint_end(g);
        kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, b, b), 0, NULL, false);
        kiln_value outs[2] = {loss};
        CHECK_OK(ctx, kiln_grad(g, loss, 1, &w, outs + 1));
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        if (!v) args = make_args(g), g0 = g;
        kiln_array *got[2] = {0};
        kiln_memory_analysis a_ = {0};
        CHECK(run_planned(g, args, NULL, v ? got : want, &a_));
        recomputed[v] = a_.remat_num_recomputed;
        if (v) {
            CHECK(same_bits(got, want, 2, "nested"));
            free_outs(got, 2);
            kiln_graph_destroy(g);
        }
    }
    /* outer nothing: both tanh and both products; inner nothing: the inner ones only */
    CHECK_MSG(recomputed[1] > recomputed[2] && recomputed[2] > 0, "%d %d", recomputed[1],
              recomputed[2]);
    free_outs(want, 2);
    free_args(g0, args);
    kiln_graph_destroy(g0);
}

/* -------------------------------------------------------------- spellings ---- */

/* A policy decides on what a value is, not on how the user spelled it: attention's two
 * products written as the canonical dot_general over [B, T, H, hs], as kiln_matmul of
 * transposes, as dot_general of transposes (the [B, H, T, hs] layout), as a batched
 * product of transposed-then-reshaped operands, and einsum-like (the result's axes
 * permuted after the product) give, under every policy, the same recomputed products;
 * the spellings the passes bring to the canonical program (simplify folds an operand's
 * transpose into the product) give the same memory analysis too; and every spelling's
 * gradients are bitwise its own without recomputation. */
enum { SP_B = 2, SP_T = 16, SP_H = 4, SP_HS = 8, SP_D = SP_H * SP_HS, SP_LAYERS = 2 };
enum { SP_CANONICAL, SP_MATMUL_T, SP_DOT_T, SP_RESHAPED, SP_EINSUM, SP_N };
static const char *const sp_names[SP_N] = {
    "dot_general", "matmul of transposes", "dot_general of transposes",
    "matmul of transposed-then-reshaped operands", "einsum-like (result permuted)"};

static kiln_value sp_perm(kiln_graph *g, kiln_value x, int a, int b, int c, int d) {
    int perm[4] = {a, b, c, d};
    return kiln_transpose(g, x, perm);
}

static kiln_value sp_reshape(kiln_graph *g, kiln_value x, int rank, int64_t a, int64_t b, int64_t c,
                             int64_t d) {
    int64_t dims[4] = {a, b, c, d};
    return kiln_reshape(g, x, rank, dims);
}

/* scores [B, H, T, S] = q . k over hs; q, k, v are [B, T, H, hs]. */
static kiln_value sp_scores(kiln_graph *g, int how, kiln_value q, kiln_value k) {
    kiln_dot_dims d = {.n_contract = 1, .lhs_contract = {3}, .rhs_contract = {3}, .n_batch = 2};
    kiln_value s;
    switch (how) {
    case SP_MATMUL_T:
        s = kiln_matmul(g, sp_perm(g, q, 0, 2, 1, 3), sp_perm(g, k, 0, 2, 3, 1));
        break;
    case SP_DOT_T:
        d.lhs_batch[1] = d.rhs_batch[1] = 1;
        s = kiln_dot_general(g, sp_perm(g, q, 0, 2, 1, 3), sp_perm(g, k, 0, 2, 1, 3), &d);
        break;
    case SP_RESHAPED: {
        kiln_value qr = sp_reshape(g, sp_perm(g, q, 0, 2, 1, 3), 3, SP_B * SP_H, SP_T, SP_HS, 0);
        kiln_value kr = sp_reshape(g, sp_perm(g, k, 0, 2, 3, 1), 3, SP_B * SP_H, SP_HS, SP_T, 0);
        s = kiln_checkpoint_name(g, kiln_matmul(g, qr, kr), "qk");
        return sp_reshape(g, s, 4, SP_B, SP_H, SP_T, SP_T);
    }
    case SP_EINSUM: /* "bthd,bshd->bhts" as [H, B, S, T] = k . q, then permuted */
        d.lhs_batch[0] = d.rhs_batch[0] = 2;
        s = kiln_checkpoint_name(g, kiln_dot_general(g, k, q, &d), "qk");
        return sp_perm(g, s, 1, 0, 3, 2);
    default:
        d.lhs_batch[1] = d.rhs_batch[1] = 2;
        s = kiln_dot_general(g, q, k, &d);
        break;
    }
    return kiln_checkpoint_name(g, s, "qk");
}

/* y [B, T, H, hs] = p . v over S. */
static kiln_value sp_values(kiln_graph *g, int how, kiln_value p, kiln_value v) {
    kiln_dot_dims d = {.n_contract = 1, .lhs_contract = {3}, .rhs_contract = {1}, .n_batch = 2};
    kiln_value y;
    switch (how) {
    case SP_MATMUL_T: y = kiln_matmul(g, p, sp_perm(g, v, 0, 2, 1, 3)); break;
    case SP_DOT_T:
        d.rhs_contract[0] = 2, d.lhs_batch[1] = d.rhs_batch[1] = 1;
        y = kiln_dot_general(g, p, sp_perm(g, v, 0, 2, 1, 3), &d);
        break;
    case SP_RESHAPED: {
        kiln_value pr = sp_reshape(g, p, 3, SP_B * SP_H, SP_T, SP_T, 0);
        kiln_value vr = sp_reshape(g, sp_perm(g, v, 0, 2, 1, 3), 3, SP_B * SP_H, SP_T, SP_HS, 0);
        y = kiln_checkpoint_name(g, kiln_matmul(g, pr, vr), "pv");
        return sp_perm(g, sp_reshape(g, y, 4, SP_B, SP_H, SP_T, SP_HS), 0, 2, 1, 3);
    }
    case SP_EINSUM: /* "bhts,bshd->bthd" as [B, H, T, hs] = p . v, then permuted */
    default:
        d.lhs_batch[1] = 1, d.rhs_batch[1] = 2;
        y = kiln_checkpoint_name(g, kiln_dot_general(g, p, v, &d), "pv");
        return sp_perm(g, y, 0, 2, 1, 3);
    }
    return sp_perm(g, kiln_checkpoint_name(g, y, "pv"), 0, 2, 1, 3);
}

/* Causal attention of x [B*T, D], spelled `how`, plus x. */
static kiln_value sp_block(step *s, int how, kiln_value x) {
    kiln_graph *g = s->g;
    int64_t wd[2] = {SP_D, SP_D}, tt[2] = {SP_T, SP_T};
    kiln_value w[4], qkv[3];
    for (int i = 0; i < 4; i++)
        s->params[s->n_params++] = w[i] = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, wd);
    for (int i = 0; i < 3; i++)
        qkv[i] = sp_reshape(g, kiln_matmul(g, kiln_tanh(g, x), w[i]), 4, SP_B, SP_T, SP_H, SP_HS);
    kiln_value sc = kiln_mul(g, sp_scores(g, how, qkv[0], qkv[1]),
                             kiln_scalar(g, KILN_DTYPE_F32, 1.0 / sqrt((double)SP_HS)));
    kiln_value causal = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, tt, 0),
                                     kiln_iota(g, KILN_DTYPE_I32, 2, tt, 1), KILN_CMP_GE);
    sc = kiln_select(g, causal, sc, kiln_scalar(g, KILN_DTYPE_F32, -1e9));
    kiln_value y = sp_values(g, how, kiln_softmax(g, sc, -1), qkv[2]);
    int64_t nd[2] = {SP_B * SP_T, SP_D};
    return kiln_add(g, x, kiln_matmul(g, kiln_reshape(g, y, 2, nd), w[3]));
}

/* Layers of sp_block, one region each under `policy` (-1: none); loss = mean(x^2). */
static kiln_graph *sp_step(step *s, int how, int policy) {
    memset(s, 0, sizeof *s);
    kiln_graph_create(ctx, "spelling", &s->g);
    int64_t xd[2] = {SP_B * SP_T, SP_D};
    kiln_value x = kiln_parameter(s->g, "x", KILN_DTYPE_F32, 2, xd);
    const char *names[1] = {"qk"};
    int named = policy == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ||
                policy == KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE;
    for (int l = 0; l < SP_LAYERS; l++) {
        if (policy >= 0)
            kiln_checkpoint_begin(s->g, (kiln_checkpoint_policy)policy, named,
                                  named ? names : NULL);
        x = sp_block(s, how, x);
        if (policy >= 0) kiln_checkpoint_end(s->g);
    }
    kiln_value loss = kiln_mean(s->g, kiln_mul(s->g, x, x), 0, NULL, false);
    kiln_value outs[1 + MODEL_MAX_PARAMS] = {loss};
    CHECK_OK(ctx, kiln_grad(s->g, loss, s->n_params, s->params, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(s->g, 1 + s->n_params, outs));
    return s->g;
}

/* What a compile recomputed: the memory analysis, and the products among the
 * recomputations (how many, their FLOPs, how many have batch axes). */
typedef struct sp_outcome {
    kiln_memory_analysis a;
    int dots, batched_dots;
    double dot_flops;
} sp_outcome;

static void sp_compile(kiln_graph *g, sp_outcome *out) {
    kiln_executable *e = NULL;
    memset(out, 0, sizeof *out);
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    analysis_of(e, &out->a);
    if (!e) return;
    for (uint32_t id = 1; id < e->g->n_nodes; id++) {
        const ir_node *n = &e->g->nodes[id];
        if (remat_mark_of(e->g, id) != REMAT_CLONE || n->op != IR_DOT) continue;
        out->dots++;
        out->batched_dots += n->a.dot.n_batch > 0;
        out->dot_flops += remat_node_flops(e->g, id);
    }
    kiln_executable_destroy(e);
}

/* Spelling `how` under `policy` against the canonical spelling's outcome `c`. */
static void sp_case(int how, int policy, const sp_outcome *c) {
    const char *pn = kiln_checkpoint_policy_name((kiln_checkpoint_policy)policy);
    step s0, s1;
    kiln_graph *g0 = sp_step(&s0, how, -1), *g1 = sp_step(&s1, how, policy);
    sp_outcome o;
    sp_compile(g1, &o);
    CHECK_MSG(o.dots == c->dots && o.batched_dots == c->batched_dots && o.dot_flops == c->dot_flops,
              "%s, %s: %d products recomputed (%d batched, %g FLOPs), canonically %d (%d, %g)", pn,
              sp_names[how], o.dots, o.batched_dots, o.dot_flops, c->dots, c->batched_dots,
              c->dot_flops);
    /* the passes fold these spellings' transposes into the products: the same program */
    if (how == SP_MATMUL_T || how == SP_DOT_T)
        CHECK_MSG(o.a.peak_bytes == c->a.peak_bytes &&
                      o.a.remat_peak_without == c->a.remat_peak_without &&
                      o.a.remat_num_recomputed == c->a.remat_num_recomputed &&
                      o.a.remat_added_flops == c->a.remat_added_flops &&
                      !strcmp(o.a.remat_strategy, c->a.remat_strategy),
                  "%s, %s: peak %llu (without %llu), %d recomputed, %g FLOPs, %s; canonically "
                  "%llu (%llu), %d, %g, %s",
                  pn, sp_names[how], (unsigned long long)o.a.peak_bytes,
                  (unsigned long long)o.a.remat_peak_without, o.a.remat_num_recomputed,
                  o.a.remat_added_flops, o.a.remat_strategy, (unsigned long long)c->a.peak_bytes,
                  (unsigned long long)c->a.remat_peak_without, c->a.remat_num_recomputed,
                  c->a.remat_added_flops, c->a.remat_strategy);
    kiln_array **args = make_args(g0);
    int n_out = kiln_graph_num_outputs(g0);
    kiln_array *want[1 + MODEL_MAX_PARAMS] = {0}, *got[1 + MODEL_MAX_PARAMS] = {0};
    kiln_memory_analysis a0 = {0}, a1 = {0};
    kiln_compile_options off = {.keep_ir = true, .disable_cheap_remat = true};
    CHECK(run_planned(g0, args, &off, want, &a0));
    CHECK(run_planned(g1, args, NULL, got, &a1));
    CHECK_MSG(same_bits(got, want, n_out, sp_names[how]), "%s, %s", pn, sp_names[how]);
    free_outs(want, n_out), free_outs(got, n_out);
    free_args(g0, args);
    kiln_graph_destroy(g0), kiln_graph_destroy(g1);
}

static void test_spellings(void) {
    /* the batched products each policy recomputes in the canonical form: both of every
     * layer, none, or one (the names policies keep "qk", or all named values but it) */
    static const int want_dots[] = {2 * SP_LAYERS, 0, 0, 2 * SP_LAYERS, SP_LAYERS, SP_LAYERS};
    for (int p = KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE;
         p <= KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE; p++) {
        step s;
        kiln_graph *g = sp_step(&s, SP_CANONICAL, p);
        sp_outcome c;
        sp_compile(g, &c);
        kiln_graph_destroy(g);
        CHECK_MSG(c.batched_dots == want_dots[p], "%s: %d batched products recomputed",
                  kiln_checkpoint_policy_name((kiln_checkpoint_policy)p), c.batched_dots);
        for (int how = 0; how < SP_N; how++) sp_case(how, p, &c);
    }
}

/* A value a policy saves stays saved when a pass maps it onto another node: here the
 * named h * 1 becomes h (simplify), which the region would drop unnamed. Returns the
 * recomputation's FLOPs (the h * 1 program also recomputes the broadcast 1 for the
 * backward pass, at no cost). */
static double named_recomputed(bool times_one) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "named", &g);
    int64_t d[2] = {32, 32};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d);
    const char *names[1] = {"h"};
    kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES, 1, names);
    kiln_value h = kiln_tanh(g, kiln_matmul(g, x, w));
    if (times_one) h = kiln_mul(g, h, kiln_scalar(g, KILN_DTYPE_F32, 1));
    h = kiln_checkpoint_name(g, h, "h");
    kiln_value y = kiln_tanh(g, kiln_matmul(g, h, w));
    kiln_checkpoint_end(g);
    kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, y, y), 0, NULL, false);
    kiln_value outs[2] = {loss};
    CHECK_OK(ctx, kiln_grad(g, loss, 1, &w, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    sp_outcome o;
    sp_compile(g, &o);
    kiln_graph_destroy(g);
    return o.a.remat_added_flops;
}

static void test_merged_marks(void) {
    double plain = named_recomputed(false), times_one = named_recomputed(true);
    CHECK_MSG(plain == times_one, "h: %g FLOPs recomputed, h * 1: %g", plain, times_one);
}

/* ------------------------------------------------------------ transformer ---- */

/* Two transformer blocks (examples/models.h) and loss = mean(out^2): with and without
 * nothing_saveable per block. */
static kiln_graph *transformer_step(model *m, bool remat) {
    memset(m, 0, sizeof *m);
    kiln_graph_create(ctx, "transformer", &m->g);
    kiln_graph *g = m->g;
    kiln_value x = model_matrix(m, "x", TB_T, TB_D);
    int first = m->n_params;
    for (int l = 0; l < 2; l++) {
        if (remat) kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE, 0, NULL);
        kiln_value s1 = model_vector(m, "ln1_scale", TB_D), b1 = model_vector(m, "ln1_bias", TB_D);
        kiln_value x1 = kiln_add(g, x, tb_attention(m, kiln_layer_norm(g, x, s1, b1, 1e-5)));
        kiln_value s2 = model_vector(m, "ln2_scale", TB_D), b2 = model_vector(m, "ln2_bias", TB_D);
        kiln_value w1 = model_matrix(m, "w1", TB_D, TB_F), c1 = model_vector(m, "b1", TB_F);
        kiln_value w2 = model_matrix(m, "w2", TB_F, TB_D), c2 = model_vector(m, "b2", TB_D);
        kiln_value h = kiln_gelu(
            g, kiln_add(g, kiln_matmul(g, kiln_layer_norm(g, x1, s2, b2, 1e-5), w1), c1), true);
        x = kiln_add(g, x1, kiln_add(g, kiln_matmul(g, h, w2), c2));
        if (remat) kiln_checkpoint_end(g);
    }
    kiln_value loss = kiln_mean(g, kiln_mul(g, x, x), 0, NULL, false);
    kiln_value outs[1 + MODEL_MAX_PARAMS] = {loss};
    int n = m->n_params - first;
    CHECK_OK(ctx, kiln_grad(g, loss, n, m->params + first, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, 1 + n, outs));
    return g;
}

static void test_stacks(void) {
    /* the deep MLP */
    step s0, s1;
    kiln_graph *g0 = mlp_step(&s0, -1),
               *g1 = mlp_step(&s1, KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE);
    kiln_array **args = make_args(g0);
    int n_out = kiln_graph_num_outputs(g0);
    kiln_array *o0[1 + MODEL_MAX_PARAMS] = {0}, *o1[1 + MODEL_MAX_PARAMS] = {0};
    kiln_memory_analysis a0 = {0}, a1 = {0};
    CHECK(run_planned(g0, args, NULL, o0, &a0)); /* measured == planned inside */
    CHECK(run_planned(g1, args, NULL, o1, &a1));
    CHECK(same_bits(o1, o0, n_out, "mlp"));
    CHECK_MSG(a1.peak_bytes < a0.peak_bytes &&
                  a1.class_bytes_at_peak[KILN_MEMORY_CLASS_ACTIVATION] <
                      a0.class_bytes_at_peak[KILN_MEMORY_CLASS_ACTIVATION],
              "mlp: peak %llu -> %llu", (unsigned long long)a0.peak_bytes,
              (unsigned long long)a1.peak_bytes);
    free_outs(o0, n_out), free_outs(o1, n_out);
    free_args(g0, args);
    kiln_graph_destroy(g0), kiln_graph_destroy(g1);

    /* the transformer stack */
    model m0, m1;
    g0 = transformer_step(&m0, false), g1 = transformer_step(&m1, true);
    args = make_args(g0);
    n_out = kiln_graph_num_outputs(g0);
    CHECK(run_planned(g0, args, NULL, o0, &a0));
    CHECK(run_planned(g1, args, NULL, o1, &a1));
    CHECK(same_bits(o1, o0, n_out, "transformer"));
    CHECK_MSG(a1.peak_bytes < a0.peak_bytes, "transformer: peak %llu -> %llu",
              (unsigned long long)a0.peak_bytes, (unsigned long long)a1.peak_bytes);
    free_outs(o0, n_out), free_outs(o1, n_out);
    free_args(g0, args);
    kiln_graph_destroy(g0), kiln_graph_destroy(g1);
}

/* ------------------------------------------------------------ cheap values ---- */

/* The default recomputation of cheap elementwise values: bitwise the gradients of the
 * program with nothing recomputed, measured == planned, a peak never higher, and on the
 * transformer stack (layer norm and gelu outputs read by the weights' gradients) lower;
 * disable_cheap_remat turns it off. */
/* Whether loop kernel k's root `from` reads (through what k computes inline) its root `to`. */
static bool reads_root(const kiln_executable *e, const fkernel *k, uint32_t from, uint32_t to) {
    uint32_t stack[4096], sp = 0;
    stack[sp++] = k->roots[from];
    for (int steps = 0; sp && steps < 100000; steps++) {
        const ir_node *n = &e->g->nodes[stack[--sp]];
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = ir_in(n)[i];
            if (x == k->roots[to]) return true;
            if (!e->plan.materialised[x] && sp < 4096) stack[sp++] = x;
        }
    }
    return false;
}

/* A recomputation (REMAT_CLONE) is placed by the remat pass right before its first
 * reader; fusion may merge it into an earlier kernel it reads from (producer-consumer),
 * but not into an earlier sibling merely reading the same input, which would compute it
 * early and keep it long (a GPT step's layer norms recomputed together at the start of the
 * backward pass: 1 MiB on a 21 MiB peak). A merged kernel lists the earlier kernel's roots
 * first, so a recomputed root after the first reads another root of its kernel. */
static void check_recomputations_apart(kiln_graph *g, const char *what) {
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    for (uint32_t ki = 0; e && ki < e->plan.n_kernels; ki++) {
        const fkernel *k = &e->plan.kernels[ki];
        for (uint32_t r = 1; r < k->n_roots; r++) {
            if (remat_mark_of(e->g, k->roots[r]) != REMAT_CLONE) continue;
            bool linked = false;
            for (uint32_t o = 0; o < r && !linked; o++) linked = reads_root(e, k, r, o);
            CHECK_MSG(linked, "%s: kernel %u joins recomputed %%%u to unrelated roots", what, ki,
                      k->roots[r]);
        }
    }
    kiln_executable_destroy(e);
}

static void cheap_case(kiln_graph *g, const char *what, bool must_lower) {
    kiln_array **args = make_args(g);
    int n_out = kiln_graph_num_outputs(g);
    kiln_array *o0[1 + MODEL_MAX_PARAMS] = {0}, *o1[1 + MODEL_MAX_PARAMS] = {0};
    kiln_memory_analysis a0 = {0}, a1 = {0};
    kiln_compile_options off = {.keep_ir = true, .disable_cheap_remat = true};
    CHECK(run_planned(g, args, &off, o0, &a0));
    CHECK(run_planned(g, args, NULL, o1, &a1));
    CHECK_MSG(same_bits(o1, o0, n_out, what), "%s", what);
    CHECK_MSG(a0.remat_num_recomputed == 0 && !strcmp(a0.remat_strategy, "none"), "%s: %s", what,
              a0.remat_strategy);
    CHECK_MSG(a1.peak_bytes <= a0.peak_bytes, "%s: default peak %llu over %llu", what,
              (unsigned long long)a1.peak_bytes, (unsigned long long)a0.peak_bytes);
    if (a1.remat_num_recomputed) {
        CHECK_MSG(!strcmp(a1.remat_strategy, "elementwise"), "%s: %s", what, a1.remat_strategy);
        CHECK(a1.remat_peak_without == a0.peak_bytes);
        CHECK(a1.remat_bytes_saved == (int64_t)(a0.peak_bytes - a1.peak_bytes));
        CHECK(a1.remat_bytes_saved > 0);
        /* elementwise work only: a few FLOPs per element, never a product */
        CHECK_MSG(a1.remat_flops_share < 0.01, "%s: %.4f of the FLOPs", what, a1.remat_flops_share);
    } else {
        CHECK(a1.remat_peak_without == 0 && !strcmp(a1.remat_strategy, "none"));
    }
    if (must_lower) {
        CHECK_MSG(a1.peak_bytes < a0.peak_bytes, "%s: peak %llu not lowered", what,
                  (unsigned long long)a0.peak_bytes);
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
        char *rep = kiln_executable_memory_report(e);
        CHECK_CONTAINS(rep, "rematerialisation (elementwise)");
        CHECK_CONTAINS(rep, "cheap elementwise value (disable_cheap_remat), own buffer");
        kiln_string_free(ctx, rep);
        kiln_executable_destroy(e);
    }
    free_outs(o0, n_out), free_outs(o1, n_out);
    free_args(g, args);
}

static void test_cheap(void) {
    step s;
    kiln_graph *g = mlp_step(&s, -1);
    cheap_case(g, "mlp", false);
    kiln_graph_destroy(g);
    model m;
    g = transformer_step(&m, false);
    cheap_case(g, "transformer", true);
    check_recomputations_apart(g, "transformer");
    kiln_graph_destroy(g);
}

/* A small CNN's step (conv 3x3 + relu + max pool 2x2 twice, a dense layer, the sum of the
 * logits' squares): its pooling masks (compares of the slices of each window) and im2cols
 * (slices concatenated) are made through several moves, and the default recomputes none
 * of them (budget.c, CHEAP_MOVES): no slice or concatenate is a recomputation; the
 * gradients stay those of the program with nothing recomputed. */
static kiln_value cnn_block(kiln_graph *g, kiln_value x, kiln_value w, kiln_value b) {
    kiln_conv_options co = {.padding = KILN_PADDING_SAME, .layout = KILN_CONV_NHWC};
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_conv_general_dilated(g, x, w, &co), b));
    kiln_window_options po = {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}};
    return kiln_reduce_window(g, h, KILN_WINDOW_MAX, &po);
}

static void test_cheap_moves(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "cnn", &g));
    int64_t xd[4] = {8, 16, 16, 1}, flat[2] = {8, 4 * 4 * 8};
    static const int ranks[5] = {4, 1, 4, 1, 2};
    static const int64_t dims[5][4] = {{3, 3, 1, 8}, {8}, {3, 3, 8, 8}, {8}, {4 * 4 * 8, 10}};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, xd), p[5], outs[6];
    for (int i = 0; i < 5; i++) p[i] = kiln_parameter(g, "p", KILN_DTYPE_F32, ranks[i], dims[i]);
    kiln_value h = cnn_block(g, cnn_block(g, x, p[0], p[1]), p[2], p[3]);
    kiln_value logits = kiln_matmul(g, kiln_reshape(g, h, 2, flat), p[4]);
    outs[0] = kiln_reduce_sum(g, kiln_mul(g, logits, logits), 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, outs[0], 5, p, outs + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, 6, outs));
    cheap_case(g, "cnn", false);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    for (uint32_t id = 1; e && id < e->g->n_nodes; id++) {
        ir_op op = e->g->nodes[id].op;
        CHECK_MSG(remat_mark_of(e->g, id) != REMAT_CLONE || (op != IR_SLICE && op != IR_CONCAT),
                  "%%%u (%s) recomputed", id, ir_ops[op].name);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* -------------------------------------------------------- random programs ---- */

static void test_random_programs(void) {
    uint64_t base = test_seed(0x4e3a7);
    int n = rp_program_count(8);
    for (int p = 0; p < n; p++) {
        rp_state *s = calloc(1, sizeof *s);
        s->seed = base + (uint64_t)p * 104729;
        uint64_t r = s->seed ^ 0x9e3779b97f4a7c15ull;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "random", &g);
        int open = 0;
        for (int i = 0; i < 3; i++) {
            if (test_rng_int(&r, 2)) {
                kiln_checkpoint_begin(g, (kiln_checkpoint_policy)test_rng_int(&r, 4), 0, NULL);
                open++;
            }
            rp_sub_typed(s, g, KILN_DTYPE_F32);
            if (open && test_rng_int(&r, 2)) kiln_checkpoint_end(g), open--;
        }
        while (open--) kiln_checkpoint_end(g);
        kiln_value loss = kiln_scalar(g, KILN_DTYPE_F32, 0);
        for (int i = 0; i < s->n_outs; i++) {
            rp_val o = rp_typed(g, s->outs[i]);
            kiln_value w = rp_param(s, g, KILN_DTYPE_F32, o.rank, o.dims);
            loss = kiln_add(g, loss, kiln_reduce_sum(g, kiln_mul(g, w, o.v), 0, NULL, false));
        }
        kiln_value wrt[RP_MAX_PARAMS], outs[1 + RP_MAX_PARAMS];
        int nw = s->n_params;
        for (int i = 0; i < nw; i++) wrt[i] = s->params[i].v;
        outs[0] = loss;
        CHECK_OK(ctx, kiln_grad(g, loss, nw, wrt, outs + 1));
        CHECK_OK(ctx, kiln_graph_finish(g, 1 + nw, outs));
        if (kiln_graph_status(g) == KILN_STATUS_OK) {
            kiln_array **args = calloc((size_t)nw, sizeof *args);
            uint64_t vs = s->seed;
            for (int i = 0; i < nw; i++)
                args[i] = cmp_random_array(ctx, KILN_DTYPE_F32, s->params[i].rank,
                                           s->params[i].dims, &vs);
            kiln_compile_options o = {.keep_ir = true};
            if (test_rng_int(&r, 2)) o.memory_budget_fraction = 0.5 + 0.5 * test_rng_unit(&r);
            kiln_executable *e = NULL;
            kiln_status st = kiln_compile(g, &o, &e);
            kiln_executable_destroy(e);
            if (st == KILN_STATUS_DEVICE_OOM) o.memory_budget_fraction = 0; /* too tight */
            CHECK_MSG(cmp_graph(ctx, g, nw, args, &o, 2e-3, NULL), "program %d (seed %llu)", p,
                      (unsigned long long)s->seed);
            /* the default's cheap values: bitwise the program with nothing recomputed,
             * measured == planned, never a higher peak */
            kiln_compile_options off = {.keep_ir = true, .disable_cheap_remat = true};
            kiln_array *da[1 + RP_MAX_PARAMS] = {0}, *db[1 + RP_MAX_PARAMS] = {0};
            kiln_memory_analysis ma = {0}, mb = {0};
            CHECK(run_planned(g, args, NULL, da, &ma));
            CHECK(run_planned(g, args, &off, db, &mb));
            CHECK_MSG(same_bits(da, db, 1 + nw, "random program, default"),
                      "program %d (seed %llu)", p, (unsigned long long)s->seed);
            CHECK(ma.peak_bytes <= mb.peak_bytes);
            free_outs(da, 1 + nw), free_outs(db, 1 + nw);
            for (int i = 0; i < nw; i++) kiln_array_destroy(args[i]);
            free(args);
        }
        kiln_graph_destroy(g);
        free(s);
    }
}

/* ------------------------------------------------------------- GPT step ---- */

/* The GPT of `kiln train` (models/gpt): its training step compiled with nothing recomputed,
 * and with each strategy (the default's cheap values, a checkpoint region per block under
 * each policy, and budgets from 100% down, which choose greedy and then segments), run
 * for a few steps from the same state (each step's new parameters and moments are the
 * next one's arguments): every one of the 3P + 1 outputs is bitwise the same at every
 * step. The model is small: softmax rows short enough to be summed unblocked
 * (KD_SMALL_SUM), and a loss whose sum over the rows is computed with the rows' own sums
 * inline in one plan and reads them from a buffer in another (which must not change how
 * it adds: kd_stmt.slices). */
static const gpt_config gpt_small = {
    .vocab = 256, .context = 16, .layers = 3, .heads = 2, .channels = 32};
enum { GPT_B = 4, GPT_STEPS = 3 };

/* A checkpoint region of the policy in user around each block (gpt_block_hook). */
static void region_per_block(kiln_graph *g, int layer, bool begin, void *user) {
    (void)layer;
    if (begin)
        kiln_checkpoint_begin(g, *(const kiln_checkpoint_policy *)user, 0, NULL);
    else
        kiln_checkpoint_end(g);
}

/* The step; checkpoint 0: no regions, else a region per block of policy checkpoint - 1. */
static kiln_graph *gpt_step_graph(int checkpoint) {
    kiln_graph *g = NULL;
    char err[GPT_ERR_SIZE];
    CHECK_OK(ctx, kiln_graph_create(ctx, "gpt_step", &g));
    kiln_checkpoint_policy policy = (kiln_checkpoint_policy)(checkpoint - 1);
    gpt_block_hook hook = {region_per_block, &policy};
    gpt_step_spec spec = {.batch = GPT_B,
                          .seq = gpt_small.context,
                          .weight_decay = 0.1,
                          .clip = 1.0,
                          .hook = checkpoint ? &hook : NULL};
    CHECK_MSG(gpt_trace_step(g, &gpt_small, KILN_DTYPE_F32, &spec, err) == KILN_STATUS_OK, "%s",
              err);
    return g;
}

static kiln_array *host_array(kiln_dtype t, int rank, const int64_t *dims, const void *data) {
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, t, rank, dims, data, &a));
    return a;
}

/* The step's arguments: initial parameters, zero moments, tokens, lr, step 1. */
static void gpt_args(kiln_array **a) {
    int P = gpt_num_params(&gpt_small);
    char err[GPT_ERR_SIZE];
    CHECK_MSG(gpt_init_params(ctx, &gpt_small, KILN_DTYPE_F32, 7, a, err) == KILN_STATUS_OK, "%s",
              err);
    for (int i = 0; i < P; i++) {
        float *z = calloc((size_t)kiln_array_size(a[i]), sizeof *z);
        for (int j = 1; j <= 2; j++)
            a[j * P + i] = host_array(KILN_DTYPE_F32, a[i]->shape.rank, a[i]->shape.dims, z);
        free(z);
    }
    int32_t tok[2][GPT_B * 16];
    uint64_t seed = 11;
    for (int i = 0; i < GPT_B * gpt_small.context; i++)
        for (int k = 0; k < 2; k++) tok[k][i] = (int32_t)test_rng_int(&seed, gpt_small.vocab);
    int64_t bt[2] = {GPT_B, gpt_small.context};
    float lr = 1e-2f; /* large, so that the steps move the parameters */
    int32_t first = 1;
    a[3 * P] = host_array(KILN_DTYPE_I32, 2, bt, tok[0]);
    a[3 * P + 1] = host_array(KILN_DTYPE_I32, 2, bt, tok[1]);
    a[3 * P + 2] = host_array(KILN_DTYPE_F32, 0, NULL, &lr);
    a[3 * P + 3] = host_array(KILN_DTYPE_I32, 0, NULL, &first);
}

/* A copy of device array x as a new array. */
static kiln_array *copy_of(kiln_array *x) {
    size_t n = kiln_array_nbytes(x);
    void *h = malloc(n ? n : 1);
    kiln_array_copy_to_host(x, h, n);
    kiln_array *c = host_array(kiln_array_dtype(x), x->shape.rank, x->shape.dims, h);
    free(h);
    return c;
}

/* Compiles g with o and runs GPT_STEPS steps from gpt_args, each from the state the step
 * before it left (measured peak == planned inside); outs receives every step's outputs
 * (caller frees), *an the memory analysis. The compile's status (a budget may not fit). */
static kiln_status gpt_run(kiln_graph *g, const kiln_compile_options *o, kiln_array **outs,
                           kiln_memory_analysis *an) {
    int P = gpt_num_params(&gpt_small), n_out = 3 * P + 1, n_arg = 3 * P + 4;
    kiln_executable *e = NULL;
    kiln_compile_options ko = o ? *o : (kiln_compile_options){0};
    ko.keep_ir = true; /* cmp_run_planned's plan_check reads it */
    kiln_status st = kiln_compile(g, &ko, &e);
    analysis_of(e, an);
    if (st) return st;
    kiln_array **a = calloc((size_t)n_arg, sizeof *a);
    gpt_args(a);
    for (int s = 0; s < GPT_STEPS; s++) {
        kiln_array **out = outs + s * n_out;
        int planned = 1;
        CHECK_OK(ctx, cmp_run_planned(ctx, e, n_arg, a, n_out, out, &planned));
        CHECK(planned);
        for (int i = 0; i < 3 * P && out[i]; i++) {
            kiln_array_destroy(a[i]);
            a[i] = copy_of(out[i]);
        }
    }
    kiln_executable_destroy(e);
    for (int i = 0; i < n_arg; i++) kiln_array_destroy(a[i]);
    free(a);
    return KILN_STATUS_OK;
}

/* One compile of the step against the outputs want of the step with nothing recomputed. */
static void gpt_case(kiln_graph *g, const kiln_compile_options *o, kiln_array **want,
                     const char *what, char *strategy, size_t strategy_size) {
    int n = GPT_STEPS * (3 * gpt_num_params(&gpt_small) + 1);
    kiln_array **got = calloc((size_t)n, sizeof *got);
    kiln_memory_analysis a = {0};
    kiln_status st = gpt_run(g, o, got, &a);
    if (st == KILN_STATUS_DEVICE_OOM) { /* a budget below every plan */
        snprintf(strategy, strategy_size, "none fits");
        free(got);
        return;
    }
    CHECK_OK(ctx, st);
    snprintf(strategy, strategy_size, "%s", a.remat_strategy);
    CHECK_MSG(same_bits(got, want, n, what), "%s (%s, %d ops recomputed)", what, a.remat_strategy,
              a.remat_num_recomputed);
    free_outs(got, n);
    free(got);
}

static void test_gpt_strategies(void) {
    int n = GPT_STEPS * (3 * gpt_num_params(&gpt_small) + 1);
    kiln_array **want = calloc((size_t)n, sizeof *want);
    kiln_graph *g = gpt_step_graph(0);
    kiln_memory_analysis a0 = {0};
    kiln_compile_options off = {.keep_ir = true, .disable_cheap_remat = true};
    CHECK_OK(ctx, gpt_run(g, &off, want, &a0));
    CHECK(!strcmp(a0.remat_strategy, "none"));
    char strategy[32], what[64];
    bool seen[4] = {false}; /* elementwise, checkpoint, greedy, segments */
    gpt_case(g, NULL, want, "the default", strategy, sizeof strategy);
    seen[0] = !strcmp(strategy, "elementwise");
    for (int pct = 100; pct >= 40; pct -= 3) {
        kiln_compile_options o = {.keep_ir = true, .memory_budget_fraction = pct / 100.0};
        snprintf(what, sizeof what, "budget %d%%", pct);
        gpt_case(g, &o, want, what, strategy, sizeof strategy);
        seen[2] |= !strcmp(strategy, "greedy");
        seen[3] |= !strcmp(strategy, "segments");
    }
    kiln_graph_destroy(g);
    for (int p = KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE;
         p <= KILN_CHECKPOINT_POLICY_DOTS_WITH_NO_BATCH_DIMS_SAVEABLE; p++) {
        g = gpt_step_graph(p + 1);
        const char *pn = kiln_checkpoint_policy_name((kiln_checkpoint_policy)p);
        gpt_case(g, NULL, want, pn, strategy, sizeof strategy);
        seen[1] |= !strcmp(strategy, "checkpoint");
        kiln_graph_destroy(g);
    }
    CHECK_MSG(seen[0] && seen[1] && seen[2] && seen[3],
              "strategies seen: elementwise %d, checkpoint %d, greedy %d, segments %d", seen[0],
              seen[1], seen[2], seen[3]);
    free_outs(want, n);
    free(want);
}

/* ------------------------------------------------------- fault injection ---- */

static kiln_status fault_body(kiln_context *c, int *bad) {
    kiln_graph *g = NULL;
    kiln_status s = kiln_graph_create(c, "f", &g);
    if (s) return s;
    int64_t d[2] = {16, 16};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d);
    const char *names[1] = {"h"};
    kiln_checkpoint_begin(g, KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES, 1, names);
    kiln_value h = kiln_checkpoint_name(g, kiln_tanh(g, kiln_matmul(g, x, w)), "h");
    kiln_value y = kiln_tanh(g, kiln_exp(g, kiln_matmul(g, h, w))); /* exp: recomputed */
    kiln_checkpoint_end(g);
    kiln_value loss = kiln_reduce_sum(g, y, 0, NULL, false);
    kiln_value outs[2] = {loss};
    kiln_grad(g, loss, 1, &w, outs + 1);
    s = kiln_graph_finish(g, 2, outs);
    kiln_executable *e = NULL;
    kiln_compile_options o = {.memory_budget_fraction = 1};
    if (!s) s = kiln_compile(g, &o, &e);
    if (!s) {
        kiln_memory_analysis a = {0};
        analysis_of(e, &a);
        *bad = a.peak_bytes > a.memory_budget || a.remat_num_recomputed == 0;
        if (*bad)
            fprintf(stderr, "peak %llu budget %llu recomputed %d strategy %s\n",
                    (unsigned long long)a.peak_bytes, (unsigned long long)a.memory_budget,
                    a.remat_num_recomputed, a.remat_strategy);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return s;
}

/* The budget's cost model with overlap under allocation failures (test_offload_overlap's
 * search on a small program, its copies timed on the plans): every failure a clean error. */
static kiln_status fault_overlap_body(kiln_context *c, int *bad) {
    kiln_graph *g = NULL;
    kiln_status s = kiln_graph_create(c, "f", &g);
    if (s) return s;
    int64_t d[2] = {32, 32};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d);
    for (int l = 0; l < 3; l++) x = kiln_add(g, kiln_tanh(g, kiln_matmul(g, x, w)), x);
    kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, x, x), 0, NULL, false);
    kiln_value outs[2] = {loss};
    kiln_grad(g, loss, 1, &w, outs + 1);
    s = kiln_graph_finish(g, 2, outs);
    const double rate[3] = {1.4e9, 6.5e7, 1e12};
    remat_info none = {0}, info = {0};
    char *report = NULL;
    if (!s) s = choose_rated(g, UINT64_MAX / 2, true, rate, &none, NULL);
    if (!s) s = choose_rated(g, none.peak_without * 9 / 10, true, rate, &info, &report);
    if (!s) {
        *bad = !info.timed || !info.overlap || !report || !strstr(report, "copy queue");
    }
    kiln_string_free(c, report);
    kiln_graph_destroy(g);
    return s;
}

static void test_fault_overlap(void) {
    char dir[] = "/tmp/kiln-remat-fault-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    fault_ctx_case fc = {.cache_dir = dir,
                         .body = fault_overlap_body,
                         .bad_what = "the search did not say it counted the overlap"};
    fault_sweep sw = {
        .name = "remat overlap", .run = fault_in_context, .user = &fc, .max_runs = 200000};
    long total = fault_sweep_run(&sw);
    CHECK(total > 100);
    test_remove_dir(dir);
}

static void test_fault_injection(void) {
    char dir[] = "/tmp/kiln-remat-fault-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    fault_ctx_case fc = {.cache_dir = dir,
                         .body = fault_body,
                         .bad_what = "the budget was not met or nothing was recomputed"};
    fault_sweep sw = {.name = "remat", .run = fault_in_context, .user = &fc, .max_runs = 200000};
    long total = fault_sweep_run(&sw);
    CHECK(total > 100);
    test_remove_dir(dir);
}

int main(void) {
    ctx = test_context();
    RUN(test_policies);
    RUN(test_region_outputs_recomputed);
    RUN(test_report);
    RUN(test_budgets);
    RUN(test_min_peak_fields);
    RUN(test_activation_budget);
    RUN(test_environment);
    RUN(test_errors);
    RUN(test_nested);
    RUN(test_spellings);
    RUN(test_merged_marks);
    RUN(test_stacks);
    RUN(test_cheap);
    RUN(test_cheap_moves);
    RUN(test_offload_overlap);
    RUN(test_random_programs);
    RUN(test_gpt_strategies);
    RUN(test_fault_injection);
    RUN(test_fault_overlap);
    kiln_context_destroy(ctx);
    return test_summary("test_remat");
}
