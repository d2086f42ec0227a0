/* decode.c — the GPT with a KV cache, for sampling (gpt_decode_*; docs/training.md).
 *
 * One graph serves the prefill and every step: S new tokens at positions pos .. pos+S-1
 * (pos a traced i32, so the step compiles once for all positions) go through the blocks;
 * each block writes its S keys and values into its cache ([T, C] per layer, one for keys
 * and one for values) with dynamic_update_slice at pos, and its queries attend over the
 * whole cache with the keys past each query's position masked. The caches are donated, so
 * each update runs in place over them. The prefill is the graph at S = T (the prompt padded
 * with zeros: what the padding writes past the prompt is masked, and overwritten by the
 * step at that position before any query sees it); a step is the graph at S = 1.
 *
 * The math is gpt.c's (gpt_hidden): the same layer norms, products, scale, -1e9 mask fill,
 * softmax and GELU, in the same order per row, so the logits differ from the recomputing
 * path's only by the rounding of sums of another length (a product over the T cached keys
 * instead of the S window's). Written with kiln.h only, as gpt.c is, and kept apart from it
 * so the two files change independently. */
#include "gpt_internal.h"

#include <math.h>
#include <stdlib.h>

/* the per-layer tensors, in gpt.h's order */
enum { LN1_W, LN1_B, ATTN_W, ATTN_B, APROJ_W, APROJ_B, LN2_W, LN2_B, FC_W, FC_B, MPROJ_W, MPROJ_B };

static kiln_value reshape_to(kiln_graph *g, kiln_value x, int rank, int64_t a, int64_t b,
                             int64_t c) {
    int64_t d[3] = {a, b, c};
    return kiln_reshape(g, x, rank, d);
}

static kiln_value linear(kiln_graph *g, kiln_value x, kiln_value w, kiln_value b) {
    return kiln_add(g, kiln_matmul(g, x, w), b);
}

/* Writes x [S, C] (keys or values) into cache [T, C] at row pos. */
static kiln_value cache_write(kiln_graph *g, kiln_value cache, kiln_value x, kiln_value pos) {
    kiln_value st[2] = {pos, kiln_scalar(g, KILN_DTYPE_I32, 0)};
    return kiln_dynamic_update_slice(g, cache, x, 2, st);
}

/* Attention of q [S, C] over the caches kc, vc [T, C]: query i (at position pos + i) sees
 * keys j <= pos + i. Returns [S, C]. */
static kiln_value cached_attention(kiln_graph *g, const gpt_config *cfg, kiln_value q,
                                   kiln_value kc, kiln_value vc, kiln_value pos, int64_t S) {
    int64_t T = cfg->context, H = cfg->heads, C = cfg->channels, hs = C / H;
    kiln_value q3 = reshape_to(g, q, 3, S, H, hs);
    kiln_value k3 = reshape_to(g, kc, 3, T, H, hs), v3 = reshape_to(g, vc, 3, T, H, hs);
    kiln_dot_dims qk = {.n_contract = 1,
                        .lhs_contract = {2},
                        .rhs_contract = {2},
                        .n_batch = 1,
                        .lhs_batch = {1},
                        .rhs_batch = {1}};
    kiln_value s = kiln_dot_general(g, q3, k3, &qk); /* [H, S, T] */
    s = kiln_mul(g, s, kiln_scalar(g, KILN_DTYPE_F32, 1.0 / sqrt((double)hs)));
    int64_t st[2] = {S, T};
    kiln_value row = kiln_add(g, kiln_iota(g, KILN_DTYPE_I32, 2, st, 0), pos);
    kiln_value seen = kiln_compare(g, row, kiln_iota(g, KILN_DTYPE_I32, 2, st, 1), KILN_CMP_GE);
    s = kiln_select(g, seen, s, kiln_scalar(g, KILN_DTYPE_F32, -1e9));
    kiln_value p = kiln_softmax(g, s, -1);
    kiln_dot_dims pv = {.n_contract = 1,
                        .lhs_contract = {2},
                        .rhs_contract = {0},
                        .n_batch = 1,
                        .lhs_batch = {0},
                        .rhs_batch = {1}};
    kiln_value y = kiln_dot_general(g, p, v3, &pv); /* [H, S, hs] */
    int perm[3] = {1, 0, 2};
    int64_t sc[2] = {S, C};
    return kiln_reshape(g, kiln_transpose(g, y, perm), 2, sc);
}

/* The graph: parameters (P), caches (2L: layer l's keys at P + 2l, values at P + 2l + 1),
 * tokens [S] i32, pos (rank 0 i32), row (rank 0 i32: whose logits to return). Outputs:
 * logits [1, V], then the 2L updated caches. */
static void trace_decode(kiln_graph *g, const gpt_config *cfg, int64_t S, kiln_value *p) {
    int P = gpt_num_params(cfg), L = cfg->layers;
    int64_t T = cfg->context, C = cfg->channels;
    gpt_make_params(g, cfg, KILN_DTYPE_F32, p);
    int64_t tc[2] = {T, C};
    kiln_value *cache = p + P, *outs = p + P + 2 * L + 3;
    for (int i = 0; i < 2 * L; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s_cache.%d", i % 2 ? "v" : "k", i / 2);
        cache[i] = kiln_parameter(g, name, KILN_DTYPE_F32, 2, tc);
    }
    kiln_value tok = kiln_parameter(g, "tokens", KILN_DTYPE_I32, 1, &S);
    kiln_value pos = kiln_parameter(g, "position", KILN_DTYPE_I32, 0, NULL);
    kiln_value row = kiln_parameter(g, "row", KILN_DTYPE_I32, 0, NULL);
    kiln_value st[2] = {pos, kiln_scalar(g, KILN_DTYPE_I32, 0)};
    kiln_value wpe = kiln_dynamic_slice(g, p[1], 2, st, (const int64_t[]){S, C});
    kiln_value x = kiln_add(g, kiln_take_rows(g, p[0], tok), wpe); /* [S, C] */
    for (int l = 0; l < L; l++) {
        const kiln_value *lp = p + 2 + GPT_PARAMS_PER_LAYER * l;
        kiln_value a = kiln_layer_norm(g, x, lp[LN1_W], lp[LN1_B], 1e-5);
        kiln_value qkv = linear(g, a, lp[ATTN_W], lp[ATTN_B]), part[3];
        for (int j = 0; j < 3; j++) {
            int64_t lo[2] = {0, j * C}, hi[2] = {S, (j + 1) * C};
            part[j] = kiln_slice(g, qkv, lo, hi, NULL);
        }
        outs[1 + 2 * l] = cache_write(g, cache[2 * l], part[1], pos);
        outs[2 + 2 * l] = cache_write(g, cache[2 * l + 1], part[2], pos);
        kiln_value y = cached_attention(g, cfg, part[0], outs[1 + 2 * l], outs[2 + 2 * l], pos, S);
        x = kiln_add(g, x, linear(g, y, lp[APROJ_W], lp[APROJ_B]));
        kiln_value m = kiln_layer_norm(g, x, lp[LN2_W], lp[LN2_B], 1e-5);
        m = kiln_gelu(g, linear(g, m, lp[FC_W], lp[FC_B]), true);
        x = kiln_add(g, x, linear(g, m, lp[MPROJ_W], lp[MPROJ_B]));
    }
    int64_t one = 1;
    kiln_value h = kiln_layer_norm(g, x, p[P - 2], p[P - 1], 1e-5);
    h = kiln_take_rows(g, h, kiln_reshape(g, row, 1, &one)); /* [1, C] */
    outs[0] = gpt_head(g, p, h);
}

kiln_status gpt_decode_compile(kiln_context *ctx, const gpt_config *cfg, int64_t S,
                               kiln_executable **e, char *err) {
    int P = gpt_num_params(cfg), L = cfg->layers;
    kiln_graph *g;
    kiln_status st = kiln_graph_create(ctx, S == 1 ? "gpt_decode_step" : "gpt_prefill", &g);
    if (st) {
        gpt_errf(err, "%s", kiln_last_error(ctx));
        return st;
    }
    /* params, caches, three scalars' room, then the outputs: logits and the caches */
    kiln_value *v = malloc(((size_t)P + 4 * (size_t)L + 4) * sizeof *v);
    int *donate = malloc(2 * (size_t)L * sizeof *donate);
    if (!v || !donate) {
        free(v), free(donate), kiln_graph_destroy(g);
        gpt_errf(err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    trace_decode(g, cfg, S, v);
    for (int i = 0; i < 2 * L; i++) donate[i] = P + i;
    kiln_compile_options o = {.n_donate = 2 * L, .donate_argnums = donate};
    if ((st = kiln_graph_finish(g, 1 + 2 * L, v + P + 2 * L + 3)) || (st = kiln_compile(g, &o, e)))
        gpt_errf(err, "compiling the cached sampler (S = %lld): %s", (long long)S,
                 kiln_last_error(ctx));
    free(v), free(donate);
    kiln_graph_destroy(g);
    return st;
}

kiln_status gpt_decode_run(kiln_context *ctx, kiln_executable *e, const gpt_config *cfg,
                           kiln_array *const *params, kiln_array **caches, const int32_t *tokens,
                           int64_t S, int32_t pos, int32_t row, float *logits, char *err) {
    int P = gpt_num_params(cfg), L = cfg->layers, n = P + 2 * L + 3;
    kiln_array **args = calloc((size_t)n + 1 + 2 * (size_t)L, sizeof *args), **outs = args + n;
    if (!args) {
        gpt_errf(err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    for (int i = 0; i < P; i++) args[i] = params[i];
    for (int i = 0; i < 2 * L; i++) args[P + i] = caches[i];
    kiln_status st = kiln_array_create(ctx, KILN_DTYPE_I32, 1, &S, tokens, &args[n - 3]);
    if (!st) st = kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &pos, &args[n - 2]);
    if (!st) st = kiln_array_create(ctx, KILN_DTYPE_I32, 0, NULL, &row, &args[n - 1]);
    if (!st) st = kiln_executable_run(e, n, args, 1 + 2 * L, outs);
    if (!st) { /* the donated caches are consumed: their updates take their place */
        for (int i = 0; i < 2 * L; i++) kiln_array_destroy(caches[i]), caches[i] = outs[1 + i];
        st = kiln_array_copy_to_host(outs[0], logits, (size_t)cfg->vocab * sizeof *logits);
        kiln_array_destroy(outs[0]);
    }
    if (st) gpt_errf(err, "sampling with the KV cache: %s", kiln_last_error(ctx));
    for (int i = n - 3; i < n; i++) kiln_array_destroy(args[i]);
    free(args);
    return st;
}
