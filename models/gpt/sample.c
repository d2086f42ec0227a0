/* sample.c — text generation from a checkpoint (gpt_sample).
 *
 * The recomputing path (o->no_kv_cache, and every byte past the context) is one program
 * per checkpoint: the model over a full window of `context` tokens, returning the logits at
 * one position given as an argument. Because attention is causal, what follows that
 * position in the window (zeros) cannot change its logits, so the same program serves every
 * prompt length; once the text is longer than the context, the window slides. It costs one
 * forward pass over the window per byte. By default the bytes that fit the context are
 * generated with a KV cache instead (decode.c): a prefill over the prompt, then one step
 * per byte that computes only the new position and attends over the cached keys and
 * values. A sliding window moves every byte's learned position, so past the context both
 * paths recompute (docs/training.md).
 * Sampling itself (temperature, top-k, the seeded draw) happens on the host over 256
 * logits. */
#include "gpt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static kiln_status compile_window(kiln_context *ctx, const gpt_config *cfg, kiln_executable **e,
                                  char *err) {
    int P = gpt_num_params(cfg);
    kiln_graph *g;
    kiln_status st = kiln_graph_create(ctx, "gpt_sample", &g);
    if (st) {
        gpt_errf(err, "%s", kiln_last_error(ctx));
        return st;
    }
    kiln_value *p = malloc((size_t)P * sizeof *p);
    if (!p) {
        kiln_graph_destroy(g);
        gpt_errf(err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    gpt_make_params(g, cfg, KILN_DTYPE_F32, p);
    int64_t wd[2] = {1, cfg->context}, one = 1;
    kiln_value idx = kiln_parameter(g, "window", KILN_DTYPE_I32, 2, wd);
    kiln_value pos = kiln_parameter(g, "position", KILN_DTYPE_I32, 1, &one);
    kiln_value h = kiln_take_rows(g, gpt_hidden(g, cfg, p, idx), pos); /* [1, C] */
    kiln_value logits = gpt_head(g, p, h);                             /* [1, V] */
    free(p);
    if ((st = kiln_graph_finish(g, 1, &logits)) || (st = kiln_compile(g, NULL, e)))
        gpt_errf(err, "compiling the sampler: %s", kiln_last_error(ctx));
    kiln_graph_destroy(g);
    return st;
}

/* Draws a byte from logits: greedy at temperature 0, else softmax(logits / temperature)
 * over the top_k largest (all when 0). */
static int draw(const float *logits, int V, double temperature, int top_k, uint64_t *rng) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temperature <= 0) return best;
    double kth = -INFINITY;
    if (top_k > 0 && top_k < V) { /* the k-th largest: V is 256, a selection pass suffices */
        float *tmp = malloc((size_t)V * sizeof *tmp);
        if (tmp) {
            memcpy(tmp, logits, (size_t)V * sizeof *tmp);
            for (int k = 0; k < top_k; k++) {
                int m = k;
                for (int i = k + 1; i < V; i++)
                    if (tmp[i] > tmp[m]) m = i;
                float t = tmp[k];
                tmp[k] = tmp[m], tmp[m] = t;
            }
            kth = tmp[top_k - 1];
            free(tmp);
        }
    }
    double total = 0, w[1024];
    for (int i = 0; i < V && i < 1024; i++) {
        w[i] = logits[i] >= kth ? exp((logits[i] - logits[best]) / temperature) : 0;
        total += w[i];
    }
    double u = (double)(gpt_rng_next(rng) >> 11) * 0x1p-53 * total;
    for (int i = 0; i < V && i < 1024; i++) {
        if (u < w[i]) return i;
        u -= w[i];
    }
    return best;
}

/* The recomputing path's logits before byte n: the model over the last (at most T) bytes
 * of text, read at the last of them. */
static kiln_status window_logits(kiln_context *ctx, kiln_executable *e, const gpt_config *cfg,
                                 kiln_array **args, const int32_t *text, size_t n, int32_t *window,
                                 float *logits, char *err) {
    int P = gpt_num_params(cfg), T = cfg->context;
    size_t lo = n > (size_t)T ? n - (size_t)T : 0;
    memset(window, 0, (size_t)T * sizeof *window);
    for (size_t i = lo; i < n; i++) window[i - lo] = text[i];
    int32_t pos = (int32_t)(n - lo - 1);
    int64_t wd[2] = {1, T}, one = 1;
    kiln_array *logit_arr = NULL;
    kiln_status st = kiln_array_create(ctx, KILN_DTYPE_I32, 2, wd, window, &args[P]);
    if (!st) st = kiln_array_create(ctx, KILN_DTYPE_I32, 1, &one, &pos, &args[P + 1]);
    if (!st) st = kiln_executable_run(e, P + 2, args, 1, &logit_arr);
    if (!st) st = kiln_array_copy_to_host(logit_arr, logits, (size_t)cfg->vocab * sizeof(float));
    if (st) gpt_errf(err, "sampling: %s", kiln_last_error(ctx));
    kiln_array_destroy(logit_arr);
    kiln_array_destroy(args[P]), kiln_array_destroy(args[P + 1]);
    args[P] = args[P + 1] = NULL;
    return st;
}

/* The gap between the two largest logits. */
static double top_margin(const float *logits, int V) {
    double a = -INFINITY, b = -INFINITY;
    for (int i = 0; i < V; i++)
        if (logits[i] > a)
            b = a, a = logits[i];
        else if (logits[i] > b)
            b = logits[i];
    return a - b;
}

/* The cached path's state: the prefill and step programs and the 2L caches. */
typedef struct kv_state {
    kiln_executable *prefill, *step;
    kiln_array **caches;
    int n_caches;
} kv_state;

static void kv_free(kv_state *kv) {
    for (int i = 0; kv->caches && i < kv->n_caches; i++) kiln_array_destroy(kv->caches[i]);
    free(kv->caches);
    kiln_executable_destroy(kv->prefill);
    kiln_executable_destroy(kv->step);
}

static kiln_status kv_init(kiln_context *ctx, const gpt_config *cfg, kv_state *kv, char *err) {
    kv->n_caches = 2 * cfg->layers;
    int64_t tc[2] = {cfg->context, cfg->channels};
    if (!(kv->caches = calloc((size_t)kv->n_caches, sizeof *kv->caches))) {
        gpt_errf(err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    kiln_status st = gpt_decode_compile(ctx, cfg, cfg->context, &kv->prefill, err);
    if (!st) st = gpt_decode_compile(ctx, cfg, 1, &kv->step, err);
    for (int i = 0; !st && i < kv->n_caches; i++)
        if ((st = kiln_array_create(ctx, KILN_DTYPE_F32, 2, tc, NULL, &kv->caches[i])))
            gpt_errf(err, "the KV cache: %s", kiln_last_error(ctx));
    return st;
}

/* The logits before byte n (text[0..n) known): with the cache while n <= T (the prefill at
 * the first call, then one step per byte), else recomputed over the window, which slides
 * every byte's learned position and so cannot keep a cache. */
static kiln_status next_logits(kiln_context *ctx, const gpt_sample_options *o,
                               const gpt_config *cfg, kiln_executable *window_e, kv_state *kv,
                               kiln_array **args, const int32_t *text, size_t n, bool first,
                               int32_t *window, float *logits, char *err) {
    int T = cfg->context;
    if (o->no_kv_cache || n > (size_t)T)
        return window_logits(ctx, window_e, cfg, args, text, n, window, logits, err);
    if (first) {
        memset(window, 0, (size_t)T * sizeof *window);
        for (size_t i = 0; i < n; i++) window[i] = text[i];
        return gpt_decode_run(ctx, kv->prefill, cfg, args, kv->caches, window, T, 0, (int32_t)n - 1,
                              logits, err);
    }
    return gpt_decode_run(ctx, kv->step, cfg, args, kv->caches, &text[n - 1], 1, (int32_t)n - 1, 0,
                          logits, err);
}

kiln_status gpt_sample(kiln_context *ctx, const gpt_sample_options *o, unsigned char *out,
                       char *err) {
    gpt_config cfg;
    kiln_status st = gpt_checkpoint_config(ctx, o->checkpoint, &cfg, err);
    if (st) return st;
    if (cfg.vocab > 1024 || cfg.vocab < 1) {
        gpt_errf(err, "%s: vocab %d; sampling supports at most 1024", o->checkpoint, cfg.vocab);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->length < 0 || !(o->temperature >= 0) || o->top_k < 0) {
        gpt_errf(err, "sample: length (%d), temperature (%g) and top-k (%d) must be >= 0",
                 o->length, o->temperature, o->top_k);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    int P = gpt_num_params(&cfg), T = cfg.context;
    const char *prompt = o->prompt && *o->prompt ? o->prompt : "\n";
    size_t np = strlen(prompt);
    kiln_array **args = calloc((size_t)P + 2, sizeof *args);
    int32_t *text = malloc((np + (size_t)o->length) * sizeof *text);
    int32_t *window = calloc((size_t)T, sizeof *window);
    kiln_executable *e = NULL;
    kv_state kv = {0};
    if (!args || !text || !window) {
        free(args), free(text), free(window);
        gpt_errf(err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    for (size_t i = 0; i < np; i++) text[i] = (unsigned char)prompt[i];
    bool cached = !o->no_kv_cache && np <= (size_t)T && o->length > 0;
    bool windowed = o->no_kv_cache || np + (size_t)o->length > (size_t)T + 1;
    if ((st = gpt_checkpoint_load(ctx, o->checkpoint, &cfg, args, NULL, NULL, err))) goto out;
    if (windowed && (st = compile_window(ctx, &cfg, &e, err))) goto out;
    if (cached && (st = kv_init(ctx, &cfg, &kv, err))) goto out;
    uint64_t rng = o->seed;
    float logits[1024];
    size_t n = np;
    for (int k = 0; k < o->length; k++) {
        st = next_logits(ctx, o, &cfg, e, &kv, args, text, n, k == 0, window, logits, err);
        if (st) break;
        if (o->margins) o->margins[k] = top_margin(logits, cfg.vocab);
        int c = draw(logits, cfg.vocab, o->temperature, o->top_k, &rng);
        text[n++] = c;
        out[k] = (unsigned char)c;
    }
out:
    kv_free(&kv);
    for (int i = 0; i < P + 2; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    free(args), free(text), free(window);
    return st;
}
