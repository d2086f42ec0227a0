/* models.h — the example programs that `make demo`, the `kiln` tool (kiln plan <name>)
 * and the planner's benchmark (bench/bench_plan.c) share, written with the public API
 * only, as a user would write them. bench/plan_jax.py writes the same programs in JAX.
 *
 * Each builder traces one program onto a graph and records its parameters (so callers
 * can make arguments of the right types) and its outputs; it returns the number of
 * outputs, or -1 if the builder reported an error (kiln_graph_status says which). */
#ifndef KILN_EXAMPLES_MODELS_H
#define KILN_EXAMPLES_MODELS_H

#include "kiln.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_MAX_PARAMS 256

typedef struct model {
    kiln_graph *g;
    int n_params;
    kiln_value params[MODEL_MAX_PARAMS];
    kiln_value outs[KILN_MAX_OUTPUTS];
    int n_donate; /* the arguments a caller donates by default (a training step's state) */
    int donate[MODEL_MAX_PARAMS];
} model;

static inline kiln_value model_param(model *m, const char *name, int rank, const int64_t *dims) {
    kiln_value v = kiln_parameter(m->g, name, KILN_DTYPE_F32, rank, dims);
    if (m->n_params < MODEL_MAX_PARAMS) m->params[m->n_params++] = v;
    return v;
}

static inline kiln_value model_matrix(model *m, const char *name, int64_t r, int64_t c) {
    int64_t d[2] = {r, c};
    return model_param(m, name, 2, d);
}

static inline kiln_value model_vector(model *m, const char *name, int64_t n) {
    return model_param(m, name, 1, &n);
}

/* ------------------------------------------------------------ programs ---- */

/* A transformer block's forward pass, pre-norm as in GPT-2: x + attention(ln(x)), then
 * + mlp(ln(.)). T tokens of width D, H heads, a 4D hidden layer, causal attention. */
#define TB_T 256
#define TB_D 256
#define TB_H 4
#define TB_F 1024

/* [T, D] -> [H, T, D/H] */
static inline kiln_value tb_heads(kiln_graph *g, kiln_value x) {
    int64_t d[3] = {TB_T, TB_H, TB_D / TB_H};
    int perm[3] = {1, 0, 2};
    return kiln_transpose(g, kiln_reshape(g, x, 3, d), perm);
}

/* Parameters are made one statement at a time: the order of arguments in one call is
 * unspecified in C, and parameter numbers must not depend on the compiler. */
static inline kiln_value tb_attention(model *m, kiln_value x) {
    kiln_graph *g = m->g;
    kiln_value wq = model_matrix(m, "wq", TB_D, TB_D);
    kiln_value wk = model_matrix(m, "wk", TB_D, TB_D);
    kiln_value wv = model_matrix(m, "wv", TB_D, TB_D);
    kiln_value wo = model_matrix(m, "wo", TB_D, TB_D);
    kiln_value q = tb_heads(g, kiln_matmul(g, x, wq));
    kiln_value k = tb_heads(g, kiln_matmul(g, x, wk));
    kiln_value v = tb_heads(g, kiln_matmul(g, x, wv));
    kiln_dot_dims qk = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {2}, .n_batch = 1};
    kiln_value s = kiln_dot_general(g, q, k, &qk); /* [H, T, T] */
    s = kiln_mul(g, s, kiln_scalar(g, KILN_DTYPE_F32, 1.0 / sqrt((double)(TB_D / TB_H))));
    int64_t tt[2] = {TB_T, TB_T};
    kiln_value causal = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, tt, 0),
                                     kiln_iota(g, KILN_DTYPE_I32, 2, tt, 1), KILN_CMP_GE);
    int64_t htt[3] = {TB_H, TB_T, TB_T};
    causal = kiln_broadcast_to(g, causal, 3, htt);
    s = kiln_select(g, causal, s, kiln_full(g, KILN_DTYPE_F32, 3, htt, -1e9));
    kiln_value p = kiln_softmax(g, s, -1);
    kiln_dot_dims pv = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}, .n_batch = 1};
    kiln_value a = kiln_dot_general(g, p, v, &pv); /* [H, T, D/H] */
    int perm[3] = {1, 0, 2};
    int64_t td[2] = {TB_T, TB_D};
    a = kiln_reshape(g, kiln_transpose(g, a, perm), 2, td);
    return kiln_matmul(g, a, wo);
}

static inline int model_transformer(model *m) {
    kiln_graph *g = m->g;
    kiln_value x = model_matrix(m, "x", TB_T, TB_D);
    kiln_value ln1_scale = model_vector(m, "ln1_scale", TB_D);
    kiln_value ln1_bias = model_vector(m, "ln1_bias", TB_D);
    kiln_value ln1 = kiln_layer_norm(g, x, ln1_scale, ln1_bias, 1e-5);
    kiln_value x1 = kiln_add(g, x, tb_attention(m, ln1));
    kiln_value ln2_scale = model_vector(m, "ln2_scale", TB_D);
    kiln_value ln2_bias = model_vector(m, "ln2_bias", TB_D);
    kiln_value w1 = model_matrix(m, "w1", TB_D, TB_F), b1 = model_vector(m, "b1", TB_F);
    kiln_value w2 = model_matrix(m, "w2", TB_F, TB_D), b2 = model_vector(m, "b2", TB_D);
    kiln_value ln2 = kiln_layer_norm(g, x1, ln2_scale, ln2_bias, 1e-5);
    kiln_value h = kiln_gelu(g, kiln_add(g, kiln_matmul(g, ln2, w1), b1), true);
    m->outs[0] = kiln_add(g, x1, kiln_add(g, kiln_matmul(g, h, w2), b2));
    return 1;
}

/* bench_jit's 3-layer MLP at batch 256: 784 -> 1024 -> 1024 -> 10. */
static inline int model_mlp(model *m) {
    kiln_graph *g = m->g;
    kiln_value x = model_matrix(m, "x", 256, 784);
    kiln_value w1 = model_matrix(m, "w1", 784, 1024), b1 = model_vector(m, "b1", 1024);
    kiln_value w2 = model_matrix(m, "w2", 1024, 1024), b2 = model_vector(m, "b2", 1024);
    kiln_value w3 = model_matrix(m, "w3", 1024, 10), b3 = model_vector(m, "b3", 10);
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_matmul(g, x, w1), b1));
    h = kiln_relu(g, kiln_add(g, kiln_matmul(g, h, w2), b2));
    m->outs[0] = kiln_add(g, kiln_matmul(g, h, w3), b3);
    return 1;
}

/* Eight independent branches, each a large intermediate reduced to a small one, feeding
 * one reduction — traced breadth-first (every branch's first op, then every second op),
 * which is the worst order to run them in: only the schedule keeps the peak low. */
#define BR_N 8
static inline int model_branches(model *m) {
    kiln_graph *g = m->g;
    kiln_value x = model_matrix(m, "x", 256, 256), v = model_matrix(m, "v", 256, 1);
    kiln_value d[BR_N], t[BR_N], r[BR_N];
    char name[8];
    for (int i = 0; i < BR_N; i++) {
        snprintf(name, sizeof name, "w%d", i);
        d[i] = kiln_matmul(g, x, model_matrix(m, name, 256, 256));
    }
    for (int i = 0; i < BR_N; i++) t[i] = kiln_tanh(g, d[i]);
    for (int i = 0; i < BR_N; i++) r[i] = kiln_matmul(g, t[i], v); /* [256, 1] */
    kiln_value all = kiln_concatenate(g, BR_N, r, 1);
    int ax = 1;
    m->outs[0] = kiln_reduce_sum(g, all, 1, &ax, false);
    return 1;
}

/* bench_jit's programs: softmax and layer norm over 4096 x 4096; an 8-op chain over 16M. */
static inline int model_softmax(model *m) {
    m->outs[0] = kiln_softmax(m->g, model_matrix(m, "x", 4096, 4096), -1);
    return 1;
}

static inline int model_layer_norm(model *m) {
    kiln_value none = {0, 0};
    m->outs[0] = kiln_layer_norm(m->g, model_matrix(m, "x", 4096, 4096), none, none, 1e-5);
    return 1;
}

static inline int model_chain(model *m) {
    kiln_graph *g = m->g;
    kiln_value x = model_vector(m, "x", 16 << 20), y = model_vector(m, "y", 16 << 20);
    kiln_value v = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1.5)),
                            kiln_scalar(g, KILN_DTYPE_F32, 0.5));
    v = kiln_mul(g, kiln_max(g, v, kiln_scalar(g, KILN_DTYPE_F32, 0)), x);
    v = kiln_abs(g, kiln_sub(g, v, kiln_scalar(g, KILN_DTYPE_F32, 0.25)));
    m->outs[0] = kiln_add(g,
                          kiln_mul(g, kiln_min(g, v, kiln_scalar(g, KILN_DTYPE_F32, 4)),
                                   kiln_scalar(g, KILN_DTYPE_F32, 0.75)),
                          y);
    return 1;
}

/* One Adam update over 4M parameters, as optax writes it (no bias correction): m and v
 * from the gradient g, then p from m and v; outputs (p, m, v). With p, m and v donated
 * every output is written in place over its own argument: the step needs the arguments
 * alone. */
static inline int model_adam(model *m) {
    kiln_graph *g = m->g;
    int64_t n = 4 << 20;
    kiln_value p = model_vector(m, "p", n), mm = model_vector(m, "m", n),
               v = model_vector(m, "v", n), gr = model_vector(m, "g", n);
    kiln_value m2 = kiln_add(g, kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 0.9), mm),
                             kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 0.1), gr));
    kiln_value v2 =
        kiln_add(g, kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 0.999), v),
                 kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 0.001), kiln_mul(g, gr, gr)));
    kiln_value den = kiln_add(g, kiln_sqrt(g, v2), kiln_scalar(g, KILN_DTYPE_F32, 1e-8));
    kiln_value step = kiln_div(g, kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 1e-3), m2), den);
    m->outs[0] = kiln_sub(g, p, step);
    m->outs[1] = m2;
    m->outs[2] = v2;
    return 3;
}

/* One training step of an MLP classifier 784-512-512-10 at batch 256 (the figure):
 * forward, mean softmax cross-entropy, kiln_grad, AdamW, as one program. Arguments: the
 * batch x, its labels, the step t, then the 6 weights, Adam's 6 m and 6 v; outputs: the
 * loss, the new weights, m and v. Weights and state are donated, so the step updates them
 * in place; `kiln plan train_mlp` shows where its memory goes by class. */
#define TM_B     256
#define TM_LAYER 3
static inline int model_train_mlp(model *m) {
    kiln_graph *g = m->g;
    static const int64_t widths[TM_LAYER + 1] = {784, 512, 512, 10};
    kiln_value x = model_matrix(m, "x", TM_B, widths[0]);
    int64_t b = TM_B;
    kiln_value labels = kiln_parameter(g, "labels", KILN_DTYPE_I32, 1, &b);
    m->params[m->n_params++] = labels;
    kiln_value step = model_param(m, "step", 0, NULL);
    kiln_value w[2 * TM_LAYER], mo[2 * TM_LAYER], vo[2 * TM_LAYER];
    char name[16];
    for (int l = 0; l < TM_LAYER; l++) {
        snprintf(name, sizeof name, "w%d", l + 1);
        w[2 * l] = model_matrix(m, name, widths[l], widths[l + 1]);
        snprintf(name, sizeof name, "b%d", l + 1);
        w[2 * l + 1] = model_vector(m, name, widths[l + 1]);
    }
    for (int k = 0; k < 2 * TM_LAYER; k++) { /* Adam's moments: the shapes of the weights */
        int rank;
        int64_t dims[KILN_MAX_RANK];
        kiln_dtype t;
        kiln_value_type(g, w[k], &t, &rank, dims);
        snprintf(name, sizeof name, "m%d", k);
        mo[k] = model_param(m, name, rank, dims);
    }
    for (int k = 0; k < 2 * TM_LAYER; k++) {
        int rank;
        int64_t dims[KILN_MAX_RANK];
        kiln_dtype t;
        kiln_value_type(g, w[k], &t, &rank, dims);
        snprintf(name, sizeof name, "v%d", k);
        vo[k] = model_param(m, name, rank, dims);
    }
    kiln_value h = x;
    for (int l = 0; l < TM_LAYER; l++) {
        h = kiln_add(g, kiln_matmul(g, h, w[2 * l]), w[2 * l + 1]);
        if (l + 1 < TM_LAYER) h = kiln_relu(g, h);
    }
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, h, labels), 0, NULL, false);
    kiln_value grads[2 * TM_LAYER];
    if (kiln_grad(g, loss, 2 * TM_LAYER, w, grads)) return -1;
    kiln_adamw_options o = {.lr = kiln_scalar(g, KILN_DTYPE_F32, 1e-3), .step = step};
    m->outs[0] = loss;
    if (kiln_optim_adamw(g, &o, 2 * TM_LAYER, w, grads, mo, vo, m->outs + 1,
                         m->outs + 1 + 2 * TM_LAYER, m->outs + 1 + 4 * TM_LAYER))
        return -1;
    for (int i = 3; i < m->n_params; i++) m->donate[m->n_donate++] = i;
    return 1 + 6 * TM_LAYER;
}

typedef struct model_entry {
    const char *name, *what;
    int (*build)(model *m);
} model_entry;

static const model_entry models[] = {
    {"transformer", "a transformer block forward: layer norm, causal attention, MLP (T=256, D=256)",
     model_transformer},
    {"mlp", "3-layer MLP 784-1024-1024-10 at batch 256", model_mlp},
    {"branches", "8 branches (matmul, tanh, matvec) traced breadth-first into one reduction",
     model_branches},
    {"softmax", "softmax over 4096 x 4096", model_softmax},
    {"layer_norm", "layer norm over 4096 x 4096", model_layer_norm},
    {"chain", "8 elementwise ops over 16M floats", model_chain},
    {"adam", "an Adam update of 4M parameters (p, m, v from g): outputs p, m, v", model_adam},
    {"train_mlp",
     "a training step: MLP 784-512-512-10, batch 256, cross-entropy, kiln_grad, AdamW; "
     "weights and state donated",
     model_train_mlp},
};
#define N_MODELS ((int)(sizeof models / sizeof *models))

static inline const model_entry *model_find(const char *name) {
    for (int i = 0; i < N_MODELS; i++)
        if (!strcmp(models[i].name, name)) return &models[i];
    return NULL;
}

/* Traces model `e` into a new graph named after it and finishes it. */
static inline kiln_status model_build(kiln_context *ctx, const model_entry *e, model *m) {
    memset(m, 0, sizeof *m);
    kiln_status s = kiln_graph_create(ctx, e->name, &m->g);
    if (s) return s;
    int n = e->build(m);
    s = kiln_graph_finish(m->g, n < 0 ? 0 : n, m->outs);
    if (s) {
        kiln_graph_destroy(m->g);
        m->g = NULL;
    }
    return s;
}

/* Makes arguments for m's parameters, filled with small deterministic values of each
 * parameter's dtype: floats in [-0.1, 0.1), integers (class labels, a loop's count) in
 * [0, 10), bools 0 or 1, a float scalar (a step count) 1. The values are made as f64 and
 * converted by kiln_convert_host. */
static inline kiln_status model_args(kiln_context *ctx, const model *m, kiln_array **args) {
    for (int i = 0; i < m->n_params; i++) {
        kiln_dtype t;
        int rank;
        int64_t dims[KILN_MAX_RANK], n = 1;
        kiln_value_type(m->g, m->params[i], &t, &rank, dims);
        for (int a = 0; a < rank; a++) n *= dims[a];
        size_t k1 = (size_t)(n ? n : 1);
        double *v = (double *)malloc(k1 * sizeof *v);
        void *p = malloc(k1 * kiln_dtype_itemsize(t));
        if (!v || !p) {
            free(v), free(p);
            return KILN_STATUS_HOST_OOM;
        }
        bool flt = t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || t == KILN_DTYPE_BF16 ||
                   t == KILN_DTYPE_F16;
        uint32_t seed = 2654435761u * (uint32_t)(i + 1);
        for (int64_t k = 0; k < n; k++) {
            seed = seed * 1664525u + 1013904223u;
            uint32_t label = (seed >> 8) % 10;
            float f = rank ? ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.2f : 1.0f;
            v[k] = flt ? f : t == KILN_DTYPE_BOOL ? label & 1 : label;
        }
        kiln_status s = kiln_convert_host(ctx, KILN_DTYPE_F64, v, t, p, n);
        if (!s) s = kiln_array_create(ctx, t, rank, dims, p, &args[i]);
        free(v), free(p);
        if (s) return s;
    }
    return KILN_STATUS_OK;
}

#endif
