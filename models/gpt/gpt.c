/* gpt.c — the GPT model traced on a kiln graph (forward, loss, the training step), its
 * parameters and their initialisation, the learning-rate schedule and the corpus.
 *
 * The model is traced for whatever float dtype its parameters have (f32 for training,
 * f64 for the gradient tests): every constant is made in that dtype. Linear layers work on
 * [B*S, C] matrices (one 2-D product each); attention keeps the [B, S, H, hs] layout the
 * qkv product gives and contracts with dot_generals batched over (B, H), so no loop over
 * heads or batch entries exists anywhere. The causal mask is a compare of two iotas under
 * a select, which fusion folds into the softmax's loops (no [T, T] constant is stored).
 * Builder errors are sticky on the graph, so the tracing functions check nothing
 * themselves: kiln_graph_finish reports the first error.
 *
 * Mixed precision (gpt_trace_options.compute, docs/mixed_precision.md): the parameters
 * keep their dtype (the f32 masters the optimiser updates) and each is converted to the
 * compute dtype where it is used, so kiln_convert's gradient hands back f32 gradients. The
 * products and what the backward pass saves are in the compute dtype; the residual stream
 * (and the embedding gather that starts it), the layer norms (statistics and affine), the
 * attention softmax, the GELU and the loss run in f32 ("wide"), as torch.autocast runs
 * layer_norm, softmax and cross-entropy in f32 and its adds promote, each island
 * converted back where a product reads it. At compute == the
 * parameters' dtype every conversion is the identity and the trace is the plain one. */
#include "gpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void gpt_errf(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, GPT_ERR_SIZE, fmt, ap);
    va_end(ap);
}

static const char *const layer_tensor[GPT_PARAMS_PER_LAYER] = {
    "ln_1.weight",        "ln_1.bias",        "attn.c_attn.weight", "attn.c_attn.bias",
    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight",        "ln_2.bias",
    "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
enum { LN1_W, LN1_B, ATTN_W, ATTN_B, APROJ_W, APROJ_B, LN2_W, LN2_B, FC_W, FC_B, MPROJ_W, MPROJ_B };

kiln_status gpt_config_check(const gpt_config *c, char *err) {
    const struct {
        const char *name;
        int v, max;
    } f[] = {{"vocab", c->vocab, 1 << 20},
             {"context", c->context, 1 << 16},
             {"layers", c->layers, 1024},
             {"heads", c->heads, 1024},
             {"channels", c->channels, 1 << 16}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v < 1 || f[i].v > f[i].max) {
            gpt_errf(err, "gpt config: %s is %d; it must be in [1, %d]", f[i].name, f[i].v,
                     f[i].max);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
    if (c->channels % c->heads) {
        gpt_errf(err, "gpt config: channels (%d) must be a multiple of heads (%d)", c->channels,
                 c->heads);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    return KILN_STATUS_OK;
}

int gpt_num_params(const gpt_config *cfg) {
    return GPT_PARAMS_PER_LAYER * cfg->layers + 4;
}

int gpt_num_params_layout(const gpt_config *cfg, bool stacked) {
    return stacked ? GPT_PARAMS_PER_LAYER + 4 : gpt_num_params(cfg);
}

bool gpt_param_info(const gpt_config *c, int i, char *name, int *rank, int64_t *dims) {
    int n = gpt_num_params(c);
    int64_t C = c->channels;
    if (i < 0 || i >= n) return false;
    if (i < 2) {
        snprintf(name, GPT_NAME_MAX, "%s", i ? "wpe" : "wte");
        *rank = 2, dims[0] = i ? c->context : c->vocab, dims[1] = C;
        return true;
    }
    if (i >= n - 2) {
        snprintf(name, GPT_NAME_MAX, "ln_f.%s", i == n - 2 ? "weight" : "bias");
        *rank = 1, dims[0] = C;
        return true;
    }
    int l = (i - 2) / GPT_PARAMS_PER_LAYER, t = (i - 2) % GPT_PARAMS_PER_LAYER;
    snprintf(name, GPT_NAME_MAX, "h.%d.%s", l, layer_tensor[t]);
    static const int64_t in[GPT_PARAMS_PER_LAYER] = {0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 0};
    static const int64_t out[GPT_PARAMS_PER_LAYER] = {1, 1, 3, 3, 1, 1, 1, 1, 4, 4, 1, 1};
    if (in[t]) {
        *rank = 2, dims[0] = in[t] * C, dims[1] = out[t] * C;
    } else {
        *rank = 1, dims[0] = out[t] * C;
    }
    return true;
}

/* The stacked layout's parameter i in the per-layer layout: itself for the embeddings and
 * ln_f, layer 0's tensor for a stack. */
static int unstacked_index(const gpt_config *c, int i) {
    return i < 2                          ? i
           : i < 2 + GPT_PARAMS_PER_LAYER ? i
                                          : gpt_num_params(c) - (GPT_PARAMS_PER_LAYER + 4 - i);
}

bool gpt_param_info_layout(const gpt_config *c, bool stacked, int i, char *name, int *rank,
                           int64_t *dims) {
    if (!stacked) return gpt_param_info(c, i, name, rank, dims);
    if (i < 0 || i >= gpt_num_params_layout(c, true)) return false;
    bool stack = i >= 2 && i < 2 + GPT_PARAMS_PER_LAYER;
    if (!gpt_param_info(c, unstacked_index(c, i), name, rank, dims + stack)) return false;
    if (stack) {
        snprintf(name, GPT_NAME_MAX, "h.%s", layer_tensor[i - 2]);
        dims[0] = c->layers, ++*rank;
    }
    return true;
}

bool gpt_param_decays(const gpt_config *cfg, int i) {
    char name[GPT_NAME_MAX];
    int rank;
    int64_t dims[2];
    return gpt_param_info(cfg, i, name, &rank, dims) && rank == 2;
}

bool gpt_param_decays_layout(const gpt_config *cfg, bool stacked, int i) {
    if (!stacked) return gpt_param_decays(cfg, i);
    return i >= 0 && i < gpt_num_params_layout(cfg, true) &&
           gpt_param_decays(cfg, unstacked_index(cfg, i));
}

int64_t gpt_count_scalars(const gpt_config *cfg) {
    int64_t total = 0, dims[2];
    int rank;
    char name[GPT_NAME_MAX];
    for (int i = 0; gpt_param_info(cfg, i, name, &rank, dims); i++)
        total += dims[0] * (rank == 2 ? dims[1] : 1);
    return total;
}

/* ------------------------------------------------------------ generator ---- */

uint64_t gpt_rng_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_normal(uint64_t *s) { /* Box-Muller, one value per call */
    double u1 = ((double)(gpt_rng_next(s) >> 11) + 0.5) * 0x1p-53;
    double u2 = (double)(gpt_rng_next(s) >> 11) * 0x1p-53;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

kiln_status gpt_init_params(kiln_context *ctx, const gpt_config *cfg, kiln_dtype dtype,
                            uint64_t seed, kiln_array **params, char *err) {
    return gpt_init_params_in(ctx, cfg, dtype, seed, KILN_MEMORY_DEVICE, params, err);
}

kiln_status gpt_init_params_in(kiln_context *ctx, const gpt_config *cfg, kiln_dtype dtype,
                               uint64_t seed, kiln_memory_kind kind, kiln_array **params,
                               char *err) {
    kiln_status st = gpt_config_check(cfg, err);
    if (st) return st;
    if (dtype != KILN_DTYPE_F32 && dtype != KILN_DTYPE_F64) {
        gpt_errf(err, "gpt_init_params: dtype %s; the model is f32 or f64", kiln_dtype_name(dtype));
        return KILN_STATUS_DTYPE;
    }
    int n = gpt_num_params(cfg);
    for (int i = 0; i < n; i++) params[i] = NULL;
    double proj_std = 0.02 / sqrt(2.0 * cfg->layers);
    for (int i = 0; i < n && !st; i++) {
        char name[GPT_NAME_MAX];
        int rank;
        int64_t dims[2];
        gpt_param_info(cfg, i, name, &rank, dims);
        int64_t count = dims[0] * (rank == 2 ? dims[1] : 1);
        double *v = malloc((size_t)count * sizeof *v);
        void *buf = malloc((size_t)count * kiln_dtype_itemsize(dtype));
        if (!v || !buf) {
            free(v), free(buf);
            gpt_errf(err, "gpt_init_params: out of host memory for %s", name);
            st = KILN_STATUS_HOST_OOM;
            break;
        }
        const char *dot = strrchr(name, '.');
        bool is_ln = strstr(name, "ln_") != NULL;
        for (int64_t j = 0; j < count; j++) {
            if (rank == 2)
                v[j] = rng_normal(&seed) * (strstr(name, "c_proj") ? proj_std : 0.02);
            else
                v[j] = is_ln && dot && !strcmp(dot, ".weight") ? 1.0 : 0.0;
        }
        for (int64_t j = 0; j < count; j++) {
            if (dtype == KILN_DTYPE_F32)
                ((float *)buf)[j] = (float)v[j];
            else
                ((double *)buf)[j] = v[j];
        }
        st = kiln_array_create_in_memory(ctx, 0, kind, dtype, rank, dims, buf, &params[i]);
        if (st) gpt_errf(err, "gpt_init_params: %s: %s", name, kiln_last_error(ctx));
        free(v), free(buf);
    }
    if (st)
        for (int i = 0; i < n; i++) kiln_array_destroy(params[i]), params[i] = NULL;
    return st;
}

/* --------------------------------------------------------------- model ---- */

void gpt_make_params(kiln_graph *g, const gpt_config *cfg, kiln_dtype dtype, kiln_value *p) {
    gpt_make_params_layout(g, cfg, false, dtype, p);
}

void gpt_make_params_layout(kiln_graph *g, const gpt_config *cfg, bool stacked, kiln_dtype dtype,
                            kiln_value *p) {
    gpt_make_params_in(g, cfg, stacked, dtype, KILN_MEMORY_DEVICE, p);
}

void gpt_make_params_in(kiln_graph *g, const gpt_config *cfg, bool stacked, kiln_dtype dtype,
                        kiln_memory_kind kind, kiln_value *p) {
    char name[GPT_NAME_MAX];
    int rank;
    int64_t dims[3];
    for (int i = 0; gpt_param_info_layout(cfg, stacked, i, name, &rank, dims); i++)
        p[i] = kiln_parameter_in_memory(g, name, dtype, rank, dims, kind);
}

static kiln_dtype dtype_of(kiln_graph *g, kiln_value v) {
    kiln_dtype t = KILN_DTYPE_F32;
    kiln_value_type(g, v, &t, NULL, NULL);
    return t;
}

static kiln_value reshape2(kiln_graph *g, kiln_value x, int64_t a, int64_t b) {
    int64_t d[2] = {a, b};
    return kiln_reshape(g, x, 2, d);
}

static kiln_value reshape4(kiln_graph *g, kiln_value x, int64_t a, int64_t b, int64_t c,
                           int64_t e) {
    int64_t d[4] = {a, b, c, e};
    return kiln_reshape(g, x, 4, d);
}

/* How a trace is written: the dtypes it works in (compute for the products and the saved
 * activations; wide, f32 when compute is 16-bit, else compute, for the islands the file's
 * opening comment lists) and attention's form. */
typedef struct trace_form {
    kiln_dtype compute, wide;
    bool fused_attention; /* gpt_trace_options.fused_attention */
} trace_form;

static trace_form form_of(kiln_graph *g, const kiln_value *p, const gpt_trace_options *o) {
    trace_form pr = {.compute = o->compute ? o->compute : dtype_of(g, p[0]),
                     .fused_attention = o->fused_attention};
    pr.wide =
        pr.compute == KILN_DTYPE_BF16 || pr.compute == KILN_DTYPE_F16 ? KILN_DTYPE_F32 : pr.compute;
    return pr;
}

/* x [N, in] @ w [in, out] + b [out], the parameters converted to the compute dtype */
static kiln_value linear(kiln_graph *g, const trace_form *pr, kiln_value x, kiln_value w,
                         kiln_value b) {
    return kiln_add(g, kiln_matmul(g, x, kiln_convert(g, w, pr->compute)),
                    kiln_convert(g, b, pr->compute));
}

/* LayerNorm over the channels, computed wide (the statistics of a 16-bit row in f32 and
 * the affine with the f32 scale and bias), its result back in the compute dtype. */
static kiln_value norm(kiln_graph *g, const trace_form *pr, kiln_value x, kiln_value w,
                       kiln_value b) {
    kiln_value y = kiln_layer_norm(g, kiln_convert(g, x, pr->wide), kiln_convert(g, w, pr->wide),
                                   kiln_convert(g, b, pr->wide), 1e-5);
    return kiln_convert(g, y, pr->compute);
}

/* Causal self-attention of a [B*S, C] input; returns [B*S, C] before c_proj. Written out
 * by default rather than kiln_dot_product_attention: in training that op's gradient
 * recomputes the probabilities with no fused backward kernel, and the step measured no
 * faster, for a smaller peak (bench/RESULTS.md, "Training with the op: a trade, not yet a
 * gain" and "The GPT step with attention as the op, again"; docs/ops.md, "Attention"). Programs
 * without the backward pass (evaluation, sampling) get the op's fused kernel all the same:
 * kiln_compile recognises this form (src/passes/attention.c). With fused_attention it is the op:
 * the forward pass one kernel on a device that has it (on a GPU, bf16/f16 on tensor cores) and the
 * [B, H, S, S] probabilities never saved for the backward pass, which recomputes them. */
static kiln_value attention(kiln_graph *g, const gpt_config *cfg, const trace_form *pr,
                            const kiln_value *lp, kiln_value a, int64_t B, int64_t S) {
    int64_t C = cfg->channels, H = cfg->heads, hs = C / H;
    kiln_dtype dt = pr->wide;
    kiln_value qkv = kiln_checkpoint_name(g, linear(g, pr, a, lp[ATTN_W], lp[ATTN_B]), "qkv");
    kiln_value part[3];
    for (int j = 0; j < 3; j++) {
        int64_t lo[2] = {0, j * C}, hi[2] = {B * S, (j + 1) * C};
        part[j] = reshape4(g, kiln_slice(g, qkv, lo, hi, NULL), B, S, H, hs); /* [B,S,H,hs] */
    }
    if (pr->fused_attention) { /* JAX's [B, T, N, H] layout, the scale 1/sqrt(hs) */
        kiln_attention_options o = {.is_causal = true};
        kiln_value y = kiln_dot_product_attention(g, part[0], part[1], part[2], &o);
        return kiln_checkpoint_name(g, reshape2(g, y, B * S, C), "attn");
    }
    /* scores[b, h, t, s] = q[b, t, h, :] . k[b, s, h, :] */
    kiln_dot_dims qk = {.n_contract = 1,
                        .lhs_contract = {3},
                        .rhs_contract = {3},
                        .n_batch = 2,
                        .lhs_batch = {0, 2},
                        .rhs_batch = {0, 2}};
    /* the scores widened before the scale and the mask: -1e9 is -inf in f16 */
    kiln_value s = kiln_convert(g, kiln_dot_general(g, part[0], part[1], &qk), dt); /* [B,H,S,S] */
    s = kiln_mul(g, s, kiln_scalar(g, dt, 1.0 / sqrt((double)hs)));
    int64_t ss[2] = {S, S};
    kiln_value causal = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, ss, 0),
                                     kiln_iota(g, KILN_DTYPE_I32, 2, ss, 1), KILN_CMP_GE);
    s = kiln_select(g, causal, s, kiln_scalar(g, dt, -1e9));
    kiln_value p = kiln_convert(g, kiln_softmax(g, s, -1), pr->compute);
    /* y[b, h, t, :] = sum_s p[b, h, t, s] v[b, s, h, :] */
    kiln_dot_dims pv = {.n_contract = 1,
                        .lhs_contract = {3},
                        .rhs_contract = {1},
                        .n_batch = 2,
                        .lhs_batch = {0, 1},
                        .rhs_batch = {0, 2}};
    kiln_value y = kiln_dot_general(g, p, part[2], &pv); /* [B, H, S, hs] */
    int perm[4] = {0, 2, 1, 3};
    return kiln_checkpoint_name(g, reshape2(g, kiln_transpose(g, y, perm), B * S, C), "attn");
}

kiln_value gpt_hidden(kiln_graph *g, const gpt_config *cfg, const kiln_value *p, kiln_value idx) {
    return gpt_hidden_with(g, cfg, p, idx, NULL);
}

kiln_value gpt_hidden_hooked(kiln_graph *g, const gpt_config *cfg, const kiln_value *p,
                             kiln_value idx, const gpt_block_hook *hook) {
    gpt_trace_options o = {.hook = hook};
    return gpt_hidden_with(g, cfg, p, idx, &o);
}

/* One transformer block on the residual stream x [B*S, C] (wide); lp its 12 parameters. */
static kiln_value block(kiln_graph *g, const gpt_config *cfg, const trace_form *pr,
                        const kiln_value *lp, kiln_value x, int64_t B, int64_t S) {
    kiln_value a = norm(g, pr, x, lp[LN1_W], lp[LN1_B]);
    kiln_value y = linear(g, pr, attention(g, cfg, pr, lp, a, B, S), lp[APROJ_W], lp[APROJ_B]);
    x = kiln_add(g, x, kiln_convert(g, y, pr->wide));
    kiln_value m = norm(g, pr, x, lp[LN2_W], lp[LN2_B]);
    m = kiln_checkpoint_name(g, linear(g, pr, m, lp[FC_W], lp[FC_B]), "mlp_fc");
    /* GELU-tanh is eight elementwise ops: in 16 bits each would round (kiln rounds
     * every 16-bit op, fused or not); widened, the fused kernel rounds once, as
     * torch's one-kernel GELU does. Its input, the product, is what is saved. */
    m = kiln_convert(g, kiln_gelu(g, kiln_convert(g, m, pr->wide), true), pr->compute);
    return kiln_add(g, x, kiln_convert(g, linear(g, pr, m, lp[MPROJ_W], lp[MPROJ_B]), pr->wide));
}

/* What the scanned block needs besides its carry and its layer's parameters. */
typedef struct scan_block {
    const gpt_config *cfg;
    trace_form pr;
    int64_t B, S;
} scan_block;

/* The scan's body: the carry x, then one layer's 12 parameters (slices of the stacks). */
static int scan_block_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                           kiln_value *outs) {
    const scan_block *sb = user;
    if (n_in != 1 + GPT_PARAMS_PER_LAYER) return -1;
    outs[0] = block(g, sb->cfg, &sb->pr, in + 1, in[0], sb->B, sb->S);
    return 1;
}

/* The blocks as one kiln_scan over the layers, the body traced and compiled once whatever
 * L. stacked: p holds the stacked layout, and the scan reads its 12 stacks as they are (so
 * the gradients come out stacked and the program has no op per layer). Otherwise each of
 * the 12 per-layer parameters is stacked into [L, ...] here (the parameters stay one array
 * per layer, as the spec and the checkpoints have them; their gradients are the stacks'
 * sliced back): O(L) ops around the scan. */
static kiln_value scanned_blocks(kiln_graph *g, const gpt_config *cfg, const trace_form *pr,
                                 const kiln_value *p, bool stacked, bool keep, kiln_value x,
                                 int64_t B, int64_t S) {
    kiln_value built[GPT_PARAMS_PER_LAYER], one[1024];
    const kiln_value *stacks = stacked ? p + 2 : built;
    int L = cfg->layers;
    for (int t = 0; t < GPT_PARAMS_PER_LAYER && !stacked; t++) {
        for (int l = 0; l < L; l++) {
            kiln_value w = p[2 + GPT_PARAMS_PER_LAYER * l + t];
            int64_t d[KILN_MAX_RANK + 1] = {1};
            int rank = 0;
            kiln_value_type(g, w, NULL, &rank, d + 1);
            one[l] = kiln_reshape(g, w, rank + 1, d);
        }
        built[t] = L == 1 ? one[0] : kiln_concatenate(g, L, one, 0);
    }
    scan_block sb = {cfg, *pr, B, S};
    kiln_value out = {0, 0};
    int n = 0;
    /* the backward pass recomputes each block unless asked to keep its residuals (gpt.h) */
    kiln_scan_options o = {.checkpoint_body = !keep};
    kiln_scan(g, scan_block_body, &sb, 1, &x, GPT_PARAMS_PER_LAYER, stacks, &o, &n, &out);
    return out;
}

kiln_value gpt_hidden_with(kiln_graph *g, const gpt_config *cfg, const kiln_value *p,
                           kiln_value idx, const gpt_trace_options *opts) {
    gpt_trace_options none = {0};
    if (!opts) opts = &none;
    const gpt_block_hook *hook = opts->hook;
    trace_form pr = form_of(g, p, opts);
    int64_t d[KILN_MAX_RANK] = {0};
    int rank = 0;
    kiln_value_type(g, idx, NULL, &rank, d);
    int64_t B = d[0], S = rank == 2 ? d[1] : 0, C = cfg->channels;
    int64_t lo[2] = {0, 0}, hi[2] = {S, C};
    kiln_value pos = kiln_slice(g, p[1], lo, hi, NULL); /* [S, C] */
    /* The residual stream is wide: the rows gathered from the f32 parameters (the
     * gradient's scatter-add stays f32), each block's output widened before it is added,
     * as torch.autocast's adds promote to f32. Its cotangent then accumulates in f32
     * through the blocks (bf16 cotangents there measured several times the gradients'
     * error), and it costs no saved bytes: the sums are cheap to recompute from the
     * saved 16-bit products. */
    kiln_value x = kiln_add(g, kiln_take_rows(g, p[0], idx), pos); /* [B, S, C] */
    x = kiln_convert(g, reshape2(g, x, B * S, C), pr.wide);
    if (opts->scan_layers || opts->stacked) {
        x = scanned_blocks(g, cfg, &pr, p, opts->stacked, opts->scan_keep_residuals, x, B, S);
    } else {
        for (int l = 0; l < cfg->layers; l++) {
            if (hook && hook->fn) hook->fn(g, l, true, hook->user);
            x = block(g, cfg, &pr, p + 2 + GPT_PARAMS_PER_LAYER * l, x, B, S);
            if (hook && hook->fn) hook->fn(g, l, false, hook->user);
        }
    }
    int n = gpt_num_params_layout(cfg, opts->stacked);
    return norm(g, &pr, x, p[n - 2], p[n - 1]);
}

kiln_value gpt_head(kiln_graph *g, const kiln_value *p, kiln_value h) {
    kiln_dot_dims nt = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    /* h @ wte^T, wte in h's dtype (the compute dtype's copy under mixed precision) */
    return kiln_dot_general(g, h, kiln_convert(g, p[0], dtype_of(g, h)), &nt);
}

kiln_value gpt_loss(kiln_graph *g, const gpt_config *cfg, const kiln_value *p, kiln_value idx,
                    kiln_value targets) {
    return gpt_loss_with(g, cfg, p, idx, targets, NULL);
}

kiln_value gpt_loss_hooked(kiln_graph *g, const gpt_config *cfg, const kiln_value *p,
                           kiln_value idx, kiln_value targets, const gpt_block_hook *hook) {
    gpt_trace_options o = {.hook = hook};
    return gpt_loss_with(g, cfg, p, idx, targets, &o);
}

kiln_value gpt_loss_with(kiln_graph *g, const gpt_config *cfg, const kiln_value *p, kiln_value idx,
                         kiln_value targets, const gpt_trace_options *opts) {
    kiln_value logits = gpt_head(g, p, gpt_hidden_with(g, cfg, p, idx, opts));
    int64_t n = -1;
    kiln_value flat = kiln_reshape(g, targets, 1, &n);
    /* the loss in the parameters' dtype (f32 under mixed precision): the log-softmax of
     * 16-bit logits in f32 */
    logits = kiln_convert(g, logits,
                          dtype_of(g, p[0]) == KILN_DTYPE_F64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32);
    return kiln_mean(g, kiln_softmax_cross_entropy(g, logits, flat), 0, NULL, false);
}

/* Averages the gradients over the replicas: consecutive gradients are flattened and
 * concatenated into buckets of at most `cap` bytes (a larger gradient is a bucket alone),
 * one all-reduce per bucket, and sliced back. A call costs a latency per step of the ring
 * (docs/scaling.md), so few large calls beat one per gradient; the price is one copy of the
 * gradients into the bucket (the slices are read in place by the optimiser's kernels).
 * Buckets are formed from the last parameter back, as PyTorch's DDP forms them: the
 * backward pass finishes the last layers' gradients first, so the first bucket can start
 * while the earlier layers' backward still runs (the plan overlaps them, run.c). Every
 * element is reduced alike whatever its bucket, so the order changes no result.
 * cap 0: one all-reduce per gradient. */
static void all_reduce_buckets(kiln_graph *g, const gpt_config *cfg, bool stacked, kiln_dtype dtype,
                               uint64_t cap, kiln_value *grads) {
    enum { MAX_BUCKET = 64 };
    int P = gpt_num_params_layout(cfg, stacked);
    uint64_t item = kiln_dtype_itemsize(dtype);
    for (int hi = P, lo; hi > 0; hi = lo) { /* the bucket [lo, hi) */
        int64_t n[MAX_BUCKET], dims[MAX_BUCKET][3];
        int rank[MAX_BUCKET];
        char name[GPT_NAME_MAX];
        uint64_t bytes = 0;
        for (lo = hi; lo > 0 && hi - lo < MAX_BUCKET; lo--) {
            int r;
            int64_t d[3] = {1, 1, 1};
            gpt_param_info_layout(cfg, stacked, lo - 1, name, &r, d);
            uint64_t b = (uint64_t)(d[0] * (r > 1 ? d[1] : 1) * (r > 2 ? d[2] : 1)) * item;
            if (lo < hi && (!cap || bytes + b > cap)) break;
            bytes += b;
        }
        for (int k = lo; k < hi; k++) {
            int64_t *d = dims[k - lo];
            gpt_param_info_layout(cfg, stacked, k, name, &rank[k - lo], d);
            n[k - lo] = d[0] * (rank[k - lo] > 1 ? d[1] : 1) * (rank[k - lo] > 2 ? d[2] : 1);
        }
        if (hi - lo == 1) {
            grads[lo] = kiln_all_reduce(g, grads[lo], KILN_REDUCE_MEAN);
            continue;
        }
        kiln_value flat[MAX_BUCKET];
        for (int k = lo; k < hi; k++) flat[k - lo] = kiln_reshape(g, grads[k], 1, &n[k - lo]);
        kiln_value sum =
            kiln_all_reduce(g, kiln_concatenate(g, hi - lo, flat, 0), KILN_REDUCE_MEAN);
        for (int k = lo, at = 0; k < hi; at += (int)n[k - lo], k++) {
            int64_t a = at, b = at + n[k - lo];
            grads[k] =
                kiln_reshape(g, kiln_slice(g, sum, &a, &b, NULL), rank[k - lo], dims[k - lo]);
        }
    }
}

/* What the micro-batch body reads (micro_body). The gradients are carried in groups of
 * consecutive parameters, as many groups as a loop's outputs allow: a group of one is the
 * gradient's own shape (added in place, no copy), a larger one the group's gradients
 * flattened and concatenated. */
typedef struct micro {
    const gpt_config *cfg;
    const kiln_value *params; /* of the step's graph: captured */
    int P, groups;
    const gpt_trace_options *to;
    kiln_value scale; /* the loss scale, or {0, 0} */
} micro;

/* The first parameter of group j of m. */
static int group_start(const micro *m, int j) {
    return (int)((int64_t)j * m->P / m->groups);
}

/* Group j of the gradients gr as one value: the gradient itself, or the flat concatenation. */
static kiln_value group_of(kiln_graph *g, const micro *m, int j, kiln_value *gr) {
    int lo = group_start(m, j), hi = group_start(m, j + 1);
    if (hi - lo == 1) return gr[lo];
    for (int i = lo; i < hi; i++) {
        int64_t n = -1;
        gr[i] = kiln_reshape(g, gr[i], 1, &n);
    }
    return kiln_concatenate(g, hi - lo, gr + lo, 0);
}

/* One micro-batch: carries the loss sum and the gradient groups' sums, scans idx and
 * targets [B/k, T]; returns them with this micro-batch's added. */
static int micro_body(kiln_graph *b, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in;
    const micro *m = user;
    kiln_value *p = calloc((size_t)(2 * m->P), sizeof *p), *gr = p ? p + m->P : NULL;
    if (!p) return -1;
    /* parameters kept in host memory are fetched in here, for this micro-batch */
    for (int i = 0; i < m->P; i++)
        p[i] = kiln_memory_put(b, kiln_capture(b, m->params[i]), KILN_MEMORY_DEVICE);
    const kiln_value *x = in + 1 + m->groups;
    kiln_value loss = gpt_loss_with(b, m->cfg, p, x[0], x[1], m->to);
    kiln_value scaled = loss;
    if (m->scale.id)
        scaled = kiln_mul(b, loss, kiln_convert(b, kiln_capture(b, m->scale), dtype_of(b, loss)));
    kiln_grad(b, scaled, m->P, p, gr);
    outs[0] = kiln_add(b, in[0], loss);
    for (int j = 0; j < m->groups; j++) outs[1 + j] = kiln_add(b, in[1 + j], group_of(b, m, j, gr));
    free(p);
    return 1 + m->groups;
}

/* The loss and the gradients of the step: at once, or (s->micro_batches > 1) as the mean of
 * micro-batches' run one after another by a kiln_scan, the gradients accumulated in place
 * in its carries: the peak holds one micro-batch's activations. */
static kiln_value loss_and_grads(kiln_graph *g, const gpt_config *cfg, const gpt_step_spec *s,
                                 kiln_value *a, int P, kiln_value idx, kiln_value targets,
                                 const gpt_trace_options *to, kiln_value scale, kiln_value *grads) {
    int k = s->micro_batches > 1 ? s->micro_batches : 1;
    if (k == 1) {
        kiln_value loss = gpt_loss_with(g, cfg, a, idx, targets, to);
        kiln_grad(g, scale.id ? kiln_mul(g, loss, kiln_convert(g, scale, dtype_of(g, loss))) : loss,
                  P, a, grads);
        return loss;
    }
    micro m = {.cfg = cfg,
               .params = a,
               .P = P,
               .groups = P < KILN_MAX_OUTPUTS - 1 ? P : KILN_MAX_OUTPUTS - 1,
               .to = to,
               .scale = scale};
    kiln_dtype pt = dtype_of(g, a[0]);
    kiln_value init[KILN_MAX_OUTPUTS], out[KILN_MAX_OUTPUTS];
    init[0] = kiln_scalar(g, pt == KILN_DTYPE_F64 ? pt : KILN_DTYPE_F32, 0);
    kiln_value *z = calloc((size_t)P, sizeof *z);
    if (!z) return KILN_VALUE_NONE; /* the builders that read it fail */
    for (int i = 0; i < P; i++) {
        int64_t d[KILN_MAX_RANK];
        int r = 0;
        kiln_value_type(g, a[i], NULL, &r, d);
        z[i] = kiln_broadcast_in_dim(g, kiln_scalar(g, pt, 0), r, d, NULL);
    }
    for (int j = 0; j < m.groups; j++) init[1 + j] = group_of(g, &m, j, z);
    free(z);
    int64_t mb[3] = {k, s->batch / k, s->seq};
    kiln_value xs[2] = {kiln_reshape(g, idx, 3, mb), kiln_reshape(g, targets, 3, mb)};
    int n = 0;
    kiln_scan(g, micro_body, &m, 1 + m.groups, init, 2, xs, NULL, &n, out);
    kiln_value inv = kiln_scalar(g, KILN_DTYPE_F64, 1.0 / k);
    for (int j = 0; j < m.groups; j++) {
        int lo = group_start(&m, j), hi = group_start(&m, j + 1);
        kiln_value sum = kiln_mul(g, out[1 + j], kiln_convert(g, inv, pt));
        int64_t at = 0;
        for (int i = lo; i < hi; i++) {
            int64_t d[KILN_MAX_RANK], n_el = 1;
            int r = 0;
            kiln_value_type(g, a[i], NULL, &r, d);
            for (int q = 0; q < r; q++) n_el *= d[q];
            int64_t b0 = at, b1 = at + n_el;
            grads[i] =
                hi - lo == 1 ? sum : kiln_reshape(g, kiln_slice(g, sum, &b0, &b1, NULL), r, d);
            at += n_el;
        }
    }
    return kiln_mul(g, out[0], kiln_convert(g, inv, dtype_of(g, out[0])));
}

/* ------------------------------------------------------------------ ZeRO ---- */

/* Each parameter is sharded on its own: flattened, padded with zeros to ranks x s, and
 * cut into `ranks` runs of s = ceil(n / ranks) elements, rank r owning the r-th. Per
 * parameter rather than ZeRO's one flat buffer of everything: each gradient's
 * reduce-scatter can start as soon as the backward pass has produced it (as the
 * all-reduce buckets do), no copy of every gradient or parameter into one buffer is
 * needed, and the two AdamW groups (decayed or not) stay whole lists; the price is at
 * most ranks - 1 padding elements per parameter. Buckets (gpt_step_spec.bucket_bytes)
 * join consecutive parameters as [ranks, s] blocks side by side, so that rank r's part of
 * the bucket's reduce-scatter is its shards of those parameters, one after the other. */
int64_t gpt_zero_shard(int64_t n, int ranks) {
    return ranks > 1 ? (n + ranks - 1) / ranks : n;
}

/* Parameter i's elements (and rank and dims). */
static int64_t param_numel(const gpt_config *cfg, bool stacked, int i, int *rank, int64_t *dims) {
    char name[GPT_NAME_MAX];
    dims[0] = dims[1] = dims[2] = 1;
    gpt_param_info_layout(cfg, stacked, i, name, rank, dims);
    return dims[0] * (*rank > 1 ? dims[1] : 1) * (*rank > 2 ? dims[2] : 1);
}

/* The bucket that ends at parameter hi (exclusive): its first parameter, going back while
 * the padded gradients fit cap bytes (a larger one alone; cap 0: one per bucket). */
static int zero_bucket_start(const gpt_config *cfg, bool stacked, uint64_t item, uint64_t cap,
                             int ranks, int hi) {
    enum { MAX_BUCKET = 64 };
    uint64_t bytes = 0;
    int lo = hi;
    for (; lo > 0 && hi - lo < MAX_BUCKET; lo--) {
        int r;
        int64_t d[3];
        uint64_t b =
            (uint64_t)(ranks * gpt_zero_shard(param_numel(cfg, stacked, lo - 1, &r, d), ranks)) *
            item;
        if (lo < hi && (!cap || bytes + b > cap)) break;
        bytes += b;
    }
    return lo;
}

/* x flattened, padded with zeros to ranks x s elements, as [ranks, s]. */
static kiln_value zero_blocks(kiln_graph *g, kiln_value x, int64_t n, int64_t sh, int ranks) {
    kiln_value f = kiln_reshape(g, x, 1, &n);
    if (ranks * sh > n) {
        int64_t lo = 0, hi = ranks * sh - n, in = 0;
        f = kiln_pad(g, f, kiln_scalar(g, dtype_of(g, x), 0), &lo, &hi, &in);
    }
    int64_t d2[2] = {ranks, sh};
    return kiln_reshape(g, f, 2, d2);
}

/* This replica's run [rank s, (rank + 1) s) of a flat [ranks s] value. */
static kiln_value zero_mine(kiln_graph *g, kiln_value flat, kiln_value rank, int64_t sh) {
    kiln_value at = kiln_mul(g, rank, kiln_scalar(g, KILN_DTYPE_I32, (double)sh));
    return kiln_dynamic_slice(g, flat, 1, &at, &sh);
}

/* The gradients averaged over the replicas, each replica keeping its shard: grads[i]
 * becomes [s_i]; pshard[i] is the replica's shard of parameter i. */
static void zero_scatter(kiln_graph *g, const gpt_config *cfg, bool stacked, kiln_dtype dtype,
                         const gpt_step_spec *s, kiln_value rank, const kiln_value *params,
                         kiln_value *grads, kiln_value *pshard) {
    int P = gpt_num_params_layout(cfg, stacked), N = s->shard_ranks;
    uint64_t item = kiln_dtype_itemsize(dtype);
    for (int hi = P, lo; hi > 0; hi = lo) {
        lo = zero_bucket_start(cfg, stacked, item, s->bucket_bytes, N, hi);
        kiln_value blocks[64];
        int64_t S = 0;
        for (int k = lo; k < hi; k++) {
            int r;
            int64_t d[3], n = param_numel(cfg, stacked, k, &r, d), sh = gpt_zero_shard(n, N);
            blocks[k - lo] = zero_blocks(g, grads[k], n, sh, N);
            pshard[k] = zero_mine(
                g, kiln_reshape(g, zero_blocks(g, params[k], n, sh, N), 1, (int64_t[]){N * sh}),
                rank, sh);
            S += sh;
        }
        int64_t whole = N * S;
        kiln_value x = hi - lo == 1 ? blocks[0] : kiln_concatenate(g, hi - lo, blocks, 1);
        x = kiln_reshape(g, x, 1, &whole);
        kiln_value mine = s->zero_stage == 1
                              ? zero_mine(g, kiln_all_reduce(g, x, KILN_REDUCE_MEAN), rank, S)
                              : kiln_reduce_scatter(g, x, KILN_REDUCE_MEAN, N);
        for (int k = lo, at = 0; k < hi; k++) {
            int r;
            int64_t d[3], sh = gpt_zero_shard(param_numel(cfg, stacked, k, &r, d), N);
            int64_t a0 = at, a1 = at + sh;
            grads[k] = hi - lo == 1 ? mine : kiln_slice(g, mine, &a0, &a1, NULL);
            at += (int)sh;
        }
    }
}

/* The new parameters whole again: every replica's updated shards all-gathered (in the
 * scatter's buckets) and cut back to each parameter's shape. */
static void zero_gather(kiln_graph *g, const gpt_config *cfg, bool stacked, kiln_dtype dtype,
                        const gpt_step_spec *s, kiln_value *news) {
    int P = gpt_num_params_layout(cfg, stacked), N = s->shard_ranks;
    uint64_t item = kiln_dtype_itemsize(dtype);
    for (int hi = P, lo; hi > 0; hi = lo) {
        lo = zero_bucket_start(cfg, stacked, item, s->bucket_bytes, N, hi);
        int64_t S = 0;
        for (int k = lo; k < hi; k++) {
            int r;
            int64_t d[3];
            S += gpt_zero_shard(param_numel(cfg, stacked, k, &r, d), N);
        }
        kiln_value all = kiln_all_gather(
            g, hi - lo == 1 ? news[lo] : kiln_concatenate(g, hi - lo, news + lo, 0), N);
        int64_t d2[2] = {N, S};
        kiln_value rows = kiln_reshape(g, all, 2, d2);
        for (int k = lo, at = 0; k < hi; k++) {
            int r;
            int64_t d[3], n = param_numel(cfg, stacked, k, &r, d), sh = gpt_zero_shard(n, N);
            int64_t a0[2] = {0, at}, a1[2] = {N, at + sh}, flat = N * sh, z = 0;
            kiln_value f = kiln_reshape(g, kiln_slice(g, rows, a0, a1, NULL), 1, &flat);
            if (flat > n) f = kiln_slice(g, f, &z, &n, NULL);
            news[k] = kiln_reshape(g, f, r, d);
            at += (int)sh;
        }
    }
}

/* optax.clip_by_global_norm over sharded gradients: the sum of squares of this replica's
 * shards, summed over the replicas (the padding is zero), then kiln_optim_clip's rule. */
static void zero_clip(kiln_graph *g, double max_norm, int P, kiln_value *grads) {
    kiln_value sq = {0};
    for (int i = 0; i < P; i++) {
        kiln_value t = kiln_convert(
            g, kiln_reduce_sum(g, kiln_mul(g, grads[i], grads[i]), 0, NULL, false), KILN_DTYPE_F64);
        sq = i ? kiln_add(g, sq, t) : t;
    }
    kiln_value norm64 = kiln_sqrt(g, kiln_all_reduce(g, sq, KILN_REDUCE_SUM));
    kiln_value max64 = kiln_scalar(g, KILN_DTYPE_F64, max_norm);
    kiln_value keep = kiln_compare(g, norm64, max64, KILN_CMP_LT);
    for (int i = 0; i < P; i++) {
        kiln_dtype t = dtype_of(g, grads[i]);
        kiln_value scaled = kiln_mul(g, kiln_div(g, grads[i], kiln_convert(g, norm64, t)),
                                     kiln_convert(g, max64, t));
        grads[i] = kiln_select(g, keep, grads[i], scaled);
    }
}

kiln_status gpt_trace_step(kiln_graph *g, const gpt_config *cfg, kiln_dtype dtype,
                           const gpt_step_spec *s, char *err) {
    bool stacked = s->stacked, zero = s->all_reduce && s->shard_ranks > 1;
    int P = gpt_num_params_layout(cfg, stacked);
    if (zero && s->offload_params) {
        gpt_errf(err,
                 "gpt step: offload_params is not supported with a sharded optimiser "
                 "(shard_ranks %d): offload the optimiser state alone",
                 s->shard_ranks);
        return KILN_STATUS_UNIMPLEMENTED;
    }
    kiln_memory_kind pk = s->offload_params ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE;
    kiln_memory_kind ok = s->offload_optimizer ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE;
    /* a: params, m, v (3P); grads (P); outs (3P + 1, and 3 of loss scaling); per group: 4
     * input lists, 3 output lists (7P) and the indices; ZeRO: the parameters' shards (P);
     * the parameters as the model reads them, on the device (P) */
    kiln_value *a = calloc((size_t)(16 * P + 4), sizeof *a);
    int *idxs = calloc((size_t)P, sizeof *idxs);
    if (!a || !idxs) {
        free(a), free(idxs);
        gpt_errf(err, "gpt step: out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    kiln_value *grads = a + 3 * P, *outs = a + 4 * P, *lists = a + 7 * P + 4;
    kiln_value *pshard = a + 14 * P + 4, *pd = a + 15 * P + 4;
    gpt_make_params_in(g, cfg, stacked, dtype, pk, a);
    /* fetched for the model's passes (the value itself when on the device already) */
    for (int i = 0; i < P; i++) pd[i] = kiln_memory_put(g, a[i], KILN_MEMORY_DEVICE);
    char name[GPT_NAME_MAX + 8];
    for (int k = 1; k < 3; k++)
        for (int i = 0; i < P; i++) {
            int rank;
            int64_t dims[3];
            char pn[GPT_NAME_MAX];
            gpt_param_info_layout(cfg, stacked, i, pn, &rank, dims);
            snprintf(name, sizeof name, "opt.%c.%s", "mv"[k - 1], pn);
            if (zero) { /* this replica's shard of the flattened moment */
                int64_t n = dims[0] * (rank > 1 ? dims[1] : 1) * (rank > 2 ? dims[2] : 1);
                int64_t sh = gpt_zero_shard(n, s->shard_ranks);
                a[k * P + i] = kiln_parameter_in_memory(g, name, dtype, 1, &sh, ok);
                continue;
            }
            a[k * P + i] = kiln_parameter_in_memory(g, name, dtype, rank, dims, ok);
        }
    int64_t bt[2] = {s->batch, s->seq};
    kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt);
    kiln_value targets = kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt);
    kiln_value lr = kiln_parameter(g, "lr", KILN_DTYPE_F32, 0, NULL);
    kiln_value step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL);
    bool scaled =
        s->loss_scaling == GPT_LOSS_SCALING_STATIC || s->loss_scaling == GPT_LOSS_SCALING_DYNAMIC;
    kiln_loss_scale_options ls = {.growth_interval = s->growth_interval};
    if (scaled) ls.scale = kiln_parameter(g, "loss_scale", KILN_DTYPE_F32, 0, NULL);
    if (s->loss_scaling == GPT_LOSS_SCALING_DYNAMIC)
        ls.good_steps = kiln_parameter(g, "loss_scale_good", KILN_DTYPE_I32, 0, NULL);
    kiln_value shard_rank =
        zero ? kiln_parameter(g, "shard_rank", KILN_DTYPE_I32, 0, NULL) : (kiln_value){0};

    gpt_trace_options to = {.hook = s->hook,
                            .compute = s->compute,
                            .scan_layers = s->scan_layers,
                            .stacked = stacked,
                            .scan_keep_residuals = s->scan_keep_residuals,
                            .fused_attention = s->fused_attention};
    /* the micro-batches' loop fetches host parameters in its body: given them as they are */
    kiln_value loss = loss_and_grads(g, cfg, s, s->micro_batches > 1 ? a : pd, P, idx, targets, &to,
                                     scaled ? ls.scale : KILN_VALUE_NONE, grads);
    /* Data parallel: each replica's loss is the mean over its shard of the batch, so the
     * mean of the replicas' gradients is the gradient of the whole batch's mean loss, and
     * clipping and AdamW then see exactly what one process on the whole batch would. */
    if (zero) {
        zero_scatter(g, cfg, stacked, dtype, s, shard_rank, pd, grads, pshard);
        loss = kiln_all_reduce(g, loss, KILN_REDUCE_MEAN);
    } else if (s->all_reduce) {
        all_reduce_buckets(g, cfg, stacked, dtype, s->bucket_bytes, grads);
        loss = kiln_all_reduce(g, loss, KILN_REDUCE_MEAN);
    }
    /* Unscaled after the all-reduce, so every replica sees the same sums and takes or
     * skips the step alike. */
    kiln_value finite = {0}, new_scale = {0}, new_good = {0};
    if (scaled) kiln_loss_scale_unscale(g, &ls, P, grads, grads, &finite, &new_scale, &new_good);
    if (s->clip > 0 && zero)
        zero_clip(g, s->clip, P, grads);
    else if (s->clip > 0)
        kiln_optim_clip_by_global_norm(g, kiln_scalar(g, KILN_DTYPE_F64, s->clip), P, grads, grads,
                                       NULL);
    /* Two AdamW groups, as torch's param_groups: the decayed matrices and the undecayed
     * vectors, each passed to kiln_optim_adamw as lists of its own. */
    /* With state in host memory, each parameter's update is traced on its own, right
     * after its fetches and before its values go back, so that the device holds one
     * parameter's state at a time (AdamW is elementwise: the same values either way). */
    bool one_by_one = pk == KILN_MEMORY_PINNED_HOST || ok == KILN_MEMORY_PINNED_HOST;
    for (int group = 0; group < 2; group++) {
        int k = 0;
        for (int i = 0; i < P; i++)
            if (gpt_param_decays_layout(cfg, stacked, i) == (group == 0)) idxs[k++] = i;
        int chunk = one_by_one ? 1 : k;
        for (int at = 0; at < k; at += chunk) {
            const int *ix = idxs + at;
            kiln_value *gp = lists, *gg = lists + P, *gm = lists + 2 * P, *gv = lists + 3 * P;
            kiln_value *np = lists + 4 * P, *nm = lists + 5 * P, *nv = lists + 6 * P;
            for (int j = 0; j < chunk; j++) { /* host values fetched again for the update */
                gp[j] = zero ? pshard[ix[j]] : kiln_memory_put(g, a[ix[j]], KILN_MEMORY_DEVICE);
                gg[j] = grads[ix[j]];
                gm[j] = kiln_memory_put(g, a[P + ix[j]], KILN_MEMORY_DEVICE);
                gv[j] = kiln_memory_put(g, a[2 * P + ix[j]], KILN_MEMORY_DEVICE);
            }
            kiln_adamw_options o = {
                .lr = lr,
                .step = step,
                .b1 = kiln_scalar(g, KILN_DTYPE_F64, s->beta1 > 0 ? s->beta1 : 0.9),
                .b2 = kiln_scalar(g, KILN_DTYPE_F64, s->beta2 > 0 ? s->beta2 : 0.95),
                .eps = kiln_scalar(g, KILN_DTYPE_F64, s->eps > 0 ? s->eps : 1e-8),
                .weight_decay = kiln_scalar(g, KILN_DTYPE_F64, group == 0 ? s->weight_decay : 0.0)};
            kiln_optim_adamw(g, &o, chunk, gp, gg, gm, gv, np, nm, nv);
            if (scaled) { /* a skipped step keeps the state it was given */
                kiln_select_each(g, finite, chunk, np, gp, np);
                kiln_select_each(g, finite, chunk, nm, gm, nm);
                kiln_select_each(g, finite, chunk, nv, gv, nv);
            }
            for (int j = 0; j < chunk; j++) {
                outs[ix[j]] = np[j], outs[P + ix[j]] = nm[j], outs[2 * P + ix[j]] = nv[j];
                if (zero) continue; /* the parameters are all-gathered first */
                outs[ix[j]] = kiln_memory_put(g, np[j], pk); /* back where they are kept */
                outs[P + ix[j]] = kiln_memory_put(g, nm[j], ok);
                outs[2 * P + ix[j]] = kiln_memory_put(g, nv[j], ok);
            }
        }
    }
    if (zero) {
        zero_gather(g, cfg, stacked, dtype, s, outs);
        for (int i = P; i < 3 * P; i++) outs[i] = kiln_memory_put(g, outs[i], ok);
    }
    outs[3 * P] = loss;
    int n_out = 3 * P + 1;
    if (scaled) outs[n_out++] = kiln_add(g, step, kiln_convert(g, finite, KILN_DTYPE_I32));
    if (s->loss_scaling == GPT_LOSS_SCALING_DYNAMIC)
        outs[n_out++] = new_scale, outs[n_out++] = new_good;
    kiln_status st = kiln_graph_finish(g, n_out, outs);
    if (st) gpt_errf(err, "gpt step: %s", kiln_graph_error(g));
    free(a), free(idxs);
    return st;
}

double gpt_lr_at(int64_t s, int64_t total, int64_t warmup, double peak) {
    return gpt_lr_schedule(s, total, warmup, peak, 0.1 * peak, GPT_SCHEDULE_COSINE);
}

double gpt_lr_schedule(int64_t s, int64_t total, int64_t warmup, double peak, double min_lr,
                       gpt_schedule kind) {
    if (s < warmup) return peak * (double)(s + 1) / (double)warmup;
    double span = total - warmup > 1 ? (double)(total - warmup) : 1;
    double t = (double)(s - warmup) / span; /* 0 at the end of warmup, to 1 at the end */
    switch (kind) {
    case GPT_SCHEDULE_CONSTANT: return peak;
    case GPT_SCHEDULE_LINEAR: return peak + (min_lr - peak) * t;
    default: return min_lr + 0.5 * (1 + cos(3.141592653589793 * t)) * (peak - min_lr);
    }
}

const char *gpt_loss_scaling_name(gpt_loss_scaling k) {
    switch (k) {
    case GPT_LOSS_SCALING_AUTO: return "auto";
    case GPT_LOSS_SCALING_NONE: return "none";
    case GPT_LOSS_SCALING_STATIC: return "static";
    case GPT_LOSS_SCALING_DYNAMIC: return "dynamic";
    }
    return "?";
}

const char *gpt_schedule_name(gpt_schedule kind) {
    switch (kind) {
    case GPT_SCHEDULE_COSINE: return "cosine";
    case GPT_SCHEDULE_LINEAR: return "linear";
    case GPT_SCHEDULE_CONSTANT: return "constant";
    }
    return "?";
}

kiln_status gpt_open_regular(const char *path, const char *what, FILE **out, int64_t *size,
                             char *err) {
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        gpt_errf(err, "cannot open %s '%s': %s", what, path, strerror(errno));
        return KILN_STATUS_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb)) {
        gpt_errf(err, "cannot read %s '%s': %s", what, path, strerror(errno));
        close(fd);
        return KILN_STATUS_IO;
    }
    if (!S_ISREG(sb.st_mode)) {
        gpt_errf(err, "%s '%s' is not a regular file (%s): kiln reads only files", what, path,
                 S_ISFIFO(sb.st_mode)   ? "a FIFO"
                 : S_ISDIR(sb.st_mode)  ? "a folder"
                 : S_ISCHR(sb.st_mode)  ? "a character device"
                 : S_ISBLK(sb.st_mode)  ? "a block device"
                 : S_ISSOCK(sb.st_mode) ? "a socket"
                                        : "not a file");
        close(fd);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ? NULL : fdopen(fd, "rb");
    if (!f) {
        gpt_errf(err, "cannot open %s '%s': %s", what, path, strerror(errno));
        close(fd);
        return KILN_STATUS_IO;
    }
    *size = (int64_t)sb.st_size;
    *out = f;
    return KILN_STATUS_OK;
}

/* Reads the whole regular file f of size bytes (as fstat said; a file that grows or
 * shrinks meanwhile is read as far as it is). */
static kiln_status read_corpus(FILE *f, const char *p, int64_t size, gpt_data *d, char *err) {
    unsigned char *buf = malloc(size ? (size_t)size : 1);
    if (!buf) {
        fclose(f);
        gpt_errf(err, "out of host memory reading the corpus '%s' (%lld bytes)", p,
                 (long long)size);
        return KILN_STATUS_HOST_OOM;
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    bool bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        free(buf);
        gpt_errf(err, "cannot read the corpus '%s': %s", p, strerror(e));
        return KILN_STATUS_IO;
    }
    d->bytes = buf, d->n = (int64_t)got;
    return KILN_STATUS_OK;
}

/* ---------------------------------------------------------------- data ---- */

/* The fallback corpus when the system has no GPL-3 text: sentences of plain English
 * words from a seeded generator, so a byte model still has structure to learn. */
static unsigned char *generated_corpus(int64_t *n) {
    static const char *const words[] = {
        "the",   "a",      "model",  "learns", "to",    "predict", "next",    "byte",  "of",
        "text",  "and",    "memory", "is",     "shown", "at",      "every",   "step",  "when",
        "it",    "trains", "on",     "small",  "files", "with",    "kiln",    "which", "plans",
        "where", "each",   "buffer", "lives",  "so",    "that",    "nothing", "is",    "wasted"};
    const int nw = (int)(sizeof words / sizeof words[0]);
    int64_t cap = 300000, len = 0;
    unsigned char *buf = malloc((size_t)cap + 64);
    if (!buf) return NULL;
    uint64_t s = 42;
    while (len < cap) {
        int sentence = 4 + (int)(gpt_rng_next(&s) % 9);
        for (int w = 0; w < sentence && len < cap; w++) {
            const char *word = words[gpt_rng_next(&s) % (uint64_t)nw];
            size_t k = strlen(word);
            memcpy(buf + len, word, k);
            if (w == 0) buf[len] = (unsigned char)(buf[len] - 'a' + 'A');
            len += (int64_t)k;
            buf[len++] = w + 1 == sentence ? '.' : ' ';
        }
        buf[len++] = gpt_rng_next(&s) % 4 ? ' ' : '\n';
    }
    *n = len;
    return buf;
}

kiln_status gpt_data_load(kiln_context *ctx, const char *path, int context, gpt_data *d,
                          char *err) {
    (void)ctx;
    memset(d, 0, sizeof *d);
    const char *fallback = "/usr/share/common-licenses/GPL-3";
    bool user = path && *path;
    const char *p = user ? path : fallback;
    int64_t size = 0;
    FILE *f;
    kiln_status st = gpt_open_regular(p, "the corpus", &f, &size, err);
    /* without the default file, a generated text */
    if (st && (user || access(p, F_OK) == 0)) return st;
    if (f && size > GPT_MAX_CORPUS_BYTES) {
        fclose(f);
        gpt_errf(err,
                 "the corpus '%s' has %lld bytes, more than the %lld kiln train reads (it "
                 "holds the whole corpus in memory): give it a part of the file",
                 p, (long long)size, (long long)GPT_MAX_CORPUS_BYTES);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (f && (st = read_corpus(f, p, size, d, err))) return st;
    if (!f) {
        d->bytes = generated_corpus(&d->n);
        if (!d->bytes) {
            gpt_errf(err, "out of host memory making the generated corpus");
            return KILN_STATUS_HOST_OOM;
        }
    }
    d->hash = gpt_fnv1a(GPT_FNV_START, d->bytes, (size_t)d->n);
    d->n_train = d->n - d->n / 10;
    if (d->n_train < context + 2 || d->n - d->n_train < context + 2) {
        gpt_errf(err,
                 "the corpus '%s' has %lld bytes: too short for a context of %d (each split "
                 "needs %d bytes; the validation split is the last 10%%)",
                 user ? path : "(default)", (long long)d->n, context, context + 2);
        gpt_data_free(ctx, d);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    return KILN_STATUS_OK;
}

void gpt_data_free(kiln_context *ctx, gpt_data *d) {
    (void)ctx;
    free(d->bytes);
    memset(d, 0, sizeof *d);
}

void gpt_data_batch(const gpt_data *d, bool validation, uint64_t *rng, int B, int T, int32_t *tok) {
    int64_t lo = validation ? d->n_train : 0, hi = validation ? d->n : d->n_train;
    uint64_t windows = (uint64_t)(hi - lo - (T + 1) + 1);
    for (int b = 0; b < B; b++) {
        int64_t start = lo + (int64_t)(gpt_rng_next(rng) % windows);
        for (int t = 0; t <= T; t++) tok[(int64_t)b * (T + 1) + t] = d->bytes[start + t];
    }
}
