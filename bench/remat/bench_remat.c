/* bench_remat.c — rematerialisation figures (issue 11): a GPT-2-style training step
 * (the main job's model, /work/wt/prompts/gpt_spec.md: vocab 256, context 128, 4 layers,
 * 4 heads, 256 channels, batch 8, AdamW, f32) traced with the public API, compiled
 *  - as written with nothing recomputed (disable_cheap_remat), and with the default
 *    recomputation of cheap elementwise values,
 *  - under memory budgets of 100%, 75%, 50% and 35% of its activation memory (the peak
 *    without recomputation, less the given share of the activations saved at the peak)
 *    and at the smallest budget any choice reaches,
 *  - with a checkpoint region per block under nothing_saveable and dots_saveable,
 * and for each: the planned peak, the allocator's measured peak during a step, the
 * planned temporaries, the recomputed ops and FLOPs, the compile time, and the median
 * ms/step with its ratio to the program with nothing recomputed. Every variant is
 * compiled first, then the steps are interleaved (one step of each in turn, rounds of
 * them), so the load of a shared machine moves all alike; the ratios are within one
 * process and one stretch of time.
 * Prints "name value" lines then a Markdown table. Usage: bench_remat [reps]. Nothing here
 * fails on time. */
#include "../bench_util.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

enum { V = 256, T = 128, L = 4, H = 4, C = 256, B = 8, HS = C / H };
#define N_PARAMS (4 + 12 * L)

typedef struct step {
    kiln_graph *g;
    kiln_value p[N_PARAMS], m[N_PARAMS], v[N_PARAMS];
    int rank[N_PARAMS];
    int64_t dims[N_PARAMS][2];
    char names[N_PARAMS][64];
    int n;
} step;

static kiln_value param(step *s, const char *name, int rank, int64_t d0, int64_t d1) {
    int i = s->n++;
    snprintf(s->names[i], sizeof s->names[i], "%s", name);
    s->rank[i] = rank, s->dims[i][0] = d0, s->dims[i][1] = d1;
    return s->p[i] = kiln_parameter(s->g, s->names[i], KILN_DTYPE_F32, rank, s->dims[i]);
}

static kiln_value dense(kiln_graph *g, kiln_value x, kiln_value w, kiln_value b) {
    kiln_dot_dims d = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {0}};
    return kiln_add(g, kiln_dot_general(g, x, w, &d), b);
}

/* [B, T, C] slice [off, off + C) of qkv [B, T, 3C] -> [B, H, T, HS] */
static kiln_value heads(kiln_graph *g, kiln_value qkv, int64_t off) {
    int64_t lo[3] = {0, 0, off}, hi[3] = {B, T, off + C}, d[4] = {B, T, H, HS};
    int perm[4] = {0, 2, 1, 3};
    return kiln_transpose(g, kiln_reshape(g, kiln_slice(g, qkv, lo, hi, NULL), 4, d), perm);
}

static kiln_value block(step *s, kiln_value x, int l, kiln_value mask) {
    kiln_graph *g = s->g;
    char n[64];
#define P(name, r, a, b) (snprintf(n, sizeof n, "h.%d." name, l), param(s, n, r, a, b))
    kiln_value ln1w = P("ln_1.weight", 1, C, 0), ln1b = P("ln_1.bias", 1, C, 0);
    kiln_value aw = P("attn.c_attn.weight", 2, C, 3 * C), ab = P("attn.c_attn.bias", 1, 3 * C, 0);
    kiln_value pw = P("attn.c_proj.weight", 2, C, C), pb = P("attn.c_proj.bias", 1, C, 0);
    kiln_value ln2w = P("ln_2.weight", 1, C, 0), ln2b = P("ln_2.bias", 1, C, 0);
    kiln_value fw = P("mlp.c_fc.weight", 2, C, 4 * C), fb = P("mlp.c_fc.bias", 1, 4 * C, 0);
    kiln_value mw = P("mlp.c_proj.weight", 2, 4 * C, C), mb = P("mlp.c_proj.bias", 1, C, 0);
#undef P
    kiln_value qkv = dense(g, kiln_layer_norm(g, x, ln1w, ln1b, 1e-5), aw, ab);
    kiln_value q = heads(g, qkv, 0), k = heads(g, qkv, C), v = heads(g, qkv, 2 * C);
    kiln_dot_dims qk = {.n_contract = 1,
                        .lhs_contract = {3},
                        .rhs_contract = {3},
                        .n_batch = 2,
                        .lhs_batch = {0, 1},
                        .rhs_batch = {0, 1}};
    kiln_value att = kiln_mul(g, kiln_dot_general(g, q, k, &qk),
                              kiln_scalar(g, KILN_DTYPE_F32, 1.0 / sqrt((double)HS)));
    att = kiln_select(g, mask, att, kiln_scalar(g, KILN_DTYPE_F32, -1e9));
    att = kiln_softmax(g, att, -1);
    kiln_dot_dims av = {.n_contract = 1,
                        .lhs_contract = {3},
                        .rhs_contract = {2},
                        .n_batch = 2,
                        .lhs_batch = {0, 1},
                        .rhs_batch = {0, 1}};
    int perm[4] = {0, 2, 1, 3};
    int64_t btc[3] = {B, T, C};
    kiln_value y =
        kiln_reshape(g, kiln_transpose(g, kiln_dot_general(g, att, v, &av), perm), 3, btc);
    x = kiln_add(g, x, dense(g, y, pw, pb));
    kiln_value m = kiln_gelu(g, dense(g, kiln_layer_norm(g, x, ln2w, ln2b, 1e-5), fw, fb), true);
    return kiln_add(g, x, dense(g, m, mw, mb));
}

/* The training step; policy < 0: no checkpoint region, else one per block. Parameters:
 * idx, targets, then the model's, then AdamW's m and v; outputs: loss, new params, m, v. */
static void build(kiln_context *ctx, step *s, int policy) {
    memset(s, 0, sizeof *s);
    DIE(ctx, kiln_graph_create(ctx, "gpt_step", &s->g));
    kiln_graph *g = s->g;
    int64_t bt[2] = {B, T};
    kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt);
    kiln_value tgt = kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt);
    kiln_value wte = param(s, "wte", 2, V, C), wpe = param(s, "wpe", 2, T, C);
    kiln_value x = kiln_add(g, kiln_take_rows(g, wte, idx), wpe);
    int64_t tt[2] = {T, T}, bhtt[4] = {B, H, T, T};
    kiln_value mask = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, tt, 0),
                                   kiln_iota(g, KILN_DTYPE_I32, 2, tt, 1), KILN_CMP_GE);
    mask = kiln_broadcast_to(g, mask, 4, bhtt);
    for (int l = 0; l < L; l++) {
        if (policy >= 0) kiln_checkpoint_begin(g, (kiln_checkpoint_policy)policy, 0, NULL);
        x = block(s, x, l, mask);
        if (policy >= 0) kiln_checkpoint_end(g);
    }
    kiln_value lnw = param(s, "ln_f.weight", 1, C, 0), lnb = param(s, "ln_f.bias", 1, C, 0);
    x = kiln_layer_norm(g, x, lnw, lnb, 1e-5);
    kiln_dot_dims head = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}};
    kiln_value logits = kiln_dot_general(g, x, wte, &head); /* [B, T, V] */
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, tgt), 0, NULL, false);
    kiln_value grads[N_PARAMS];
    DIE(ctx, kiln_grad(g, loss, s->n, s->p, grads));
    for (int i = 0; i < s->n; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "opt.m.%s", s->names[i]);
        s->m[i] = kiln_parameter(g, nm, KILN_DTYPE_F32, s->rank[i], s->dims[i]);
    }
    for (int i = 0; i < s->n; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "opt.v.%s", s->names[i]);
        s->v[i] = kiln_parameter(g, nm, KILN_DTYPE_F32, s->rank[i], s->dims[i]);
    }
    /* decay 0.1 on rank-2 weights, 0 elsewhere: two updates over the two groups */
    kiln_value outs[1 + 3 * N_PARAMS];
    outs[0] = loss;
    for (int group = 0; group < 2; group++) {
        kiln_value p[N_PARAMS], gr[N_PARAMS], m[N_PARAMS], v[N_PARAMS], np[N_PARAMS], nm[N_PARAMS],
            nv[N_PARAMS];
        int at[N_PARAMS], n = 0;
        for (int i = 0; i < s->n; i++)
            if ((s->rank[i] == 2) == (group == 0))
                at[n] = i, p[n] = s->p[i], gr[n] = grads[i], m[n] = s->m[i], v[n] = s->v[i], n++;
        kiln_adamw_options o = {.lr = kiln_scalar(g, KILN_DTYPE_F32, 3e-4),
                                .b2 = kiln_scalar(g, KILN_DTYPE_F32, 0.95),
                                .weight_decay = kiln_scalar(g, KILN_DTYPE_F32, group ? 0 : 0.1),
                                .step = kiln_scalar(g, KILN_DTYPE_F32, 1)};
        DIE(ctx, kiln_optim_adamw(g, &o, n, p, gr, m, v, np, nm, nv));
        for (int j = 0; j < n; j++) {
            outs[1 + at[j]] = np[j];
            outs[1 + s->n + at[j]] = nm[j];
            outs[1 + 2 * s->n + at[j]] = nv[j];
        }
    }
    DIE(ctx, kiln_graph_finish(g, 1 + 3 * s->n, outs));
}

typedef struct variant {
    char name[48];
    kiln_executable *e;
    kiln_array **args, **outs;
    int np, nout;
    uint64_t budget, planned, measured, temp, act;
    int recomputed;
    double share, compile_s, t[64], ratio;
    const char *strategy;
} variant;

static int reps = 10;

/* Compiles s under o (donating params and state, as a training loop does) and makes its
 * arguments; 0 when the budget cannot be met. */
static int prepare(kiln_context *ctx, step *s, const kiln_compile_options *o0, variant *r) {
    r->np = kiln_graph_num_parameters(s->g), r->nout = kiln_graph_num_outputs(s->g);
    int donate[3 * N_PARAMS];
    for (int i = 0; i < 3 * s->n; i++) donate[i] = 2 + i;
    kiln_compile_options o = *o0;
    o.n_donate = 3 * s->n, o.donate_argnums = donate;
    /* twice: the first fills the kernel cache, the second is the compile time a user sees
     * with a warm cache (the planning and the budget's search, not the C compiler) */
    for (int k = 0; k < 2; k++) {
        kiln_executable_destroy(r->e);
        r->e = NULL;
        double t0 = now();
        if (kiln_compile(s->g, &o, &r->e) != KILN_STATUS_OK) {
            printf("%s infeasible: %s\n", r->name, kiln_last_error(ctx));
            return 0;
        }
        r->compile_s = now() - t0;
    }
    kiln_memory_analysis a;
    DIE(ctx, kiln_executable_get_memory_analysis(r->e, &a));
    r->budget = a.memory_budget, r->planned = a.peak_bytes, r->temp = a.temp_bytes;
    r->act = a.class_bytes_at_peak[KILN_MEMORY_CLASS_ACTIVATION];
    r->recomputed = a.remat_num_recomputed, r->share = a.remat_flops_share;
    r->strategy = a.remat_strategy;
    r->args = calloc((size_t)r->np, sizeof *r->args);
    r->outs = calloc((size_t)r->nout, sizeof *r->outs);
    int32_t tok[B * T];
    uint32_t seed = 12345;
    int64_t bt[2] = {B, T};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < B * T; i++)
            seed = seed * 1664525u + 1013904223u, tok[i] = (int32_t)(seed >> 24);
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 2, bt, tok, &r->args[k]));
    }
    for (int i = 0; i < s->n; i++) {
        int64_t n = s->dims[i][0] * (s->rank[i] == 2 ? s->dims[i][1] : 1);
        float *p = malloc(sizeof(float) * (size_t)n);
        for (int64_t j = 0; j < n; j++) {
            seed = seed * 1664525u + 1013904223u;
            p[j] = s->rank[i] == 2 ? ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.04f
                                   : (strstr(s->names[i], "weight") ? 1.0f : 0.0f);
        }
        DIE(ctx,
            kiln_array_create(ctx, KILN_DTYPE_F32, s->rank[i], s->dims[i], p, &r->args[2 + i]));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, s->rank[i], s->dims[i], NULL,
                                   &r->args[2 + s->n + i]));
        DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, s->rank[i], s->dims[i], NULL,
                                   &r->args[2 + 2 * s->n + i]));
        free(p);
    }
    printf("%s: compiled in %.2f s, planned peak %" PRIu64 ", temp %" PRIu64
           ", recomputed %d, added FLOPs %.2f%%, strategy %s\n",
           r->name, r->compile_s, r->planned, r->temp, r->recomputed, 100 * r->share, r->strategy);
    fflush(stdout);
    return 1;
}

/* One step of r; its time goes to r->t[slot] (slot < 0: a warm-up). The new parameters
 * and state become the next step's arguments. */
static void step_once(kiln_context *ctx, variant *r, int slot, int n_state) {
    kiln_memory_stats before, after;
    kiln_device_get_memory_stats(ctx, 0, &before);
    kiln_device_reset_peak(ctx, 0);
    double t0 = now();
    DIE(ctx, kiln_executable_run(r->e, r->np, r->args, r->nout, r->outs));
    double dt = now() - t0;
    kiln_device_get_memory_stats(ctx, 0, &after);
    /* the peak over what the device held before (every variant's arguments), plus this
     * call's arguments: the call's own peak */
    kiln_memory_analysis a;
    DIE(ctx, kiln_executable_get_memory_analysis(r->e, &a));
    uint64_t m = after.peak_bytes_in_use - before.bytes_in_use + a.argument_bytes;
    if (m > r->measured) r->measured = m;
    if (slot >= 0) r->t[slot] = dt;
    kiln_array_destroy(r->outs[0]);
    for (int i = 0; i < n_state; i++) {
        kiln_array_destroy(r->args[2 + i]); /* consumed: the handle only */
        r->args[2 + i] = r->outs[1 + i];
    }
}

static double mib(uint64_t b) {
    return (double)b / (1 << 20);
}

int main(int argc, char **argv) {
    if (argc > 1) reps = atoi(argv[1]) < 1 ? 1 : atoi(argv[1]) > 60 ? 60 : atoi(argv[1]);
    kiln_context *ctx = NULL;
    char err[512];
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    variant r[12];
    memset(r, 0, sizeof r);
    int nr = 0;
    step s;
    build(ctx, &s, -1);
    /* the reference: nothing recomputed at all (the default recomputes cheap values) */
    kiln_compile_options plain = {.disable_cheap_remat = true}, none = {0};
    snprintf(r[nr].name, sizeof r[nr].name, "no recomputation");
    if (!prepare(ctx, &s, &plain, &r[nr++])) return 1;
    snprintf(r[nr].name, sizeof r[nr].name, "default (cheap values recomputed)");
    nr += prepare(ctx, &s, &none, &r[nr]);
    uint64_t peak0 = r[0].planned, act0 = r[0].act;
    static const int pct[4] = {100, 75, 50, 35};
    for (int i = 0; i < 4; i++) {
        kiln_compile_options o = {.memory_budget =
                                      peak0 - (uint64_t)((100 - pct[i]) / 100.0 * (double)act0)};
        snprintf(r[nr].name, sizeof r[nr].name, "budget %d%% of activations", pct[i]);
        nr += prepare(ctx, &s, &o, &r[nr]);
    }
    /* the smallest feasible budget: the error of an impossible one names it */
    int donate[3 * N_PARAMS];
    for (int i = 0; i < 3 * s.n; i++) donate[i] = 2 + i;
    kiln_compile_options tiny = {.memory_budget = 1, .n_donate = 3 * s.n, .donate_argnums = donate};
    kiln_executable *e = NULL;
    if (kiln_compile(s.g, &tiny, &e) == KILN_STATUS_DEVICE_OOM) {
        const char *m = strstr(kiln_last_error(ctx), "reachable is ");
        kiln_compile_options o = {.memory_budget = m ? strtoull(m + 13, NULL, 10) : 0};
        snprintf(r[nr].name, sizeof r[nr].name, "smallest feasible budget");
        if (o.memory_budget) nr += prepare(ctx, &s, &o, &r[nr]);
    }
    int n_state = 3 * s.n;
    kiln_graph_destroy(s.g);
    static const int policies[2] = {KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE,
                                    KILN_CHECKPOINT_POLICY_DOTS_SAVEABLE};
    for (int i = 0; i < 2; i++) {
        build(ctx, &s, policies[i]);
        snprintf(r[nr].name, sizeof r[nr].name, "%s per block",
                 kiln_checkpoint_policy_name((kiln_checkpoint_policy)policies[i]));
        nr += prepare(ctx, &s, &none, &r[nr]);
        kiln_graph_destroy(s.g);
    }
    /* Interleaved: round k runs every variant once, in turn (ABC..ABC..), so the machine's
     * drift hits them all alike; two warm-up rounds first. */
    for (int k = -2; k < reps; k++)
        for (int i = 0; i < nr; i++) step_once(ctx, &r[i], k, n_state);
    /* the ratio to the reference step of the same round, then the median over rounds:
     * drift between rounds cancels */
    double ratio[64];
    for (int i = 0; i < nr; i++) {
        for (int k = 0; k < reps; k++) ratio[k] = r[i].t[k] / r[0].t[k];
        r[i].ratio = median(ratio, reps);
    }
    for (int i = 0; i < nr; i++) {
        double ms = 1e3 * median(r[i].t, reps);
        printf("%s budget %" PRIu64 " planned %" PRIu64 " measured %" PRIu64 " temp %" PRIu64
               " activations %" PRIu64 " recomputed %d share %.4f compile_s %.2f ms %.1f "
               "x %.3f strategy %s\n",
               r[i].name, r[i].budget, r[i].planned, r[i].measured, r[i].temp, r[i].act,
               r[i].recomputed, r[i].share, r[i].compile_s, ms, r[i].ratio, r[i].strategy);
    }
    printf(
        "\n| kiln | budget MiB | planned peak MiB | measured peak MiB | temp MiB | activations at "
        "peak MiB | recomputed ops | added FLOPs | strategy | compile s | ms/step (median of "
        "%d, interleaved) | x no recomputation (median of per-round ratios) |\n",
        reps);
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nr; i++) {
        double ms = 1e3 * median(r[i].t, reps);
        char budget[32] = "-";
        if (r[i].budget) snprintf(budget, sizeof budget, "%.1f", mib(r[i].budget));
        printf("| %s | %s | %.1f | %.1f | %.1f | %.1f | %d | %.2f%% | %s | %.2f | %.1f | %.2f |\n",
               r[i].name, budget, mib(r[i].planned), mib(r[i].measured), mib(r[i].temp),
               mib(r[i].act), r[i].recomputed, 100 * r[i].share, r[i].strategy, r[i].compile_s, ms,
               r[i].ratio);
    }
    for (int i = 0; i < nr; i++) {
        for (int a = 0; a < r[i].np; a++) kiln_array_destroy(r[i].args[a]);
        free(r[i].args), free(r[i].outs);
        kiln_executable_destroy(r[i].e);
    }
    kiln_context_destroy(ctx);
    return 0;
}
