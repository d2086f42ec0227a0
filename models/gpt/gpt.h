/* gpt.h — a GPT-2-style byte-level language model written on kiln's public API, and the
 * library behind `kiln train` and `kiln sample` (docs/training.md).
 *
 * The model, its parameter names and shapes, the optimiser, the schedule, the data split
 * and the checkpoint layout follow one shared spec (the JAX and PyTorch side-by-side
 * scripts in bench/gpt/ follow it too): learned token and position embeddings,
 * pre-LayerNorm blocks of causal multi-head attention and a GELU-tanh MLP (4C), a final
 * LayerNorm and an LM head tied to the token embedding. Parameters are in "x @ W" layout
 * (W is [in, out]). Everything here uses kiln.h only, as a user's program would.
 *
 * Parameter order (the index used by every array of parameters below):
 *   0 wte [V, C], 1 wpe [T, C], then per layer l the 12 tensors
 *   ln_1.weight, ln_1.bias, attn.c_attn.weight, attn.c_attn.bias, attn.c_proj.weight,
 *   attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight, mlp.c_fc.bias,
 *   mlp.c_proj.weight, mlp.c_proj.bias (named "h.<l>.<tensor>"), then ln_f.weight, ln_f.bias.
 */
#ifndef KILN_GPT_H
#define KILN_GPT_H

#include "kiln.h"

#include <signal.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpt_config {
    int vocab;    /* V: 256 for bytes */
    int context;  /* T: the longest sequence, the rows of wpe */
    int layers;   /* L */
    int heads;    /* H; channels % heads == 0 */
    int channels; /* C */
} gpt_config;

#define GPT_PARAMS_PER_LAYER 12
#define GPT_NAME_MAX         64

/* Errors: every fallible gpt_* call takes err, a buffer of GPT_ERR_SIZE bytes, and on
 * failure writes there what went wrong and where (a kiln call's failure carries kiln's
 * message). The returned status is kiln's (INVALID_ARGUMENT for a bad value or file
 * content, IO for a file that cannot be read or written). */
#define GPT_ERR_SIZE 1024

/* Checks the config (positive sizes, C % H == 0, sizes that fit an int64 product);
 * KILN_STATUS_INVALID_ARGUMENT with a message naming the field otherwise. */
kiln_status gpt_config_check(const gpt_config *cfg, char *err);
/* 12 L + 4 */
int gpt_num_params(const gpt_config *cfg);
/* Parameter i's name (into name, GPT_NAME_MAX bytes), rank and dims. False if i is out of
 * range. */
bool gpt_param_info(const gpt_config *cfg, int i, char *name, int *rank, int64_t *dims);
/* True for the parameters AdamW decays: the rank-2 ones (matrices and embeddings). */
bool gpt_param_decays(const gpt_config *cfg, int i);
/* The stacked layout of the parameters, the scanned model's (gpt_trace_options.stacked,
 * `kiln train --scan-layers`; jax.lax.scan over stacked layers): 16 arrays whatever L,
 *   0 wte, 1 wpe, 2..13 the 12 per-layer tensors in the order above, each stacked over the
 *   layers with the layer axis first ([L, ...], named "h.<tensor>"), 14 ln_f.weight,
 *   15 ln_f.bias.
 * Stack t holds layer l's tensor t at [l]: the same bytes as the per-layer arrays one
 * after another. Checkpoints stay per layer (gpt_params_stack / gpt_params_unstack
 * convert). The _layout functions with stacked false are the functions above; dims needs
 * 3 entries (a stack of matrices is rank 3). A stack decays when its layers' tensor does. */
int gpt_num_params_layout(const gpt_config *cfg, bool stacked);
bool gpt_param_info_layout(const gpt_config *cfg, bool stacked, int i, char *name, int *rank,
                           int64_t *dims);
bool gpt_param_decays_layout(const gpt_config *cfg, bool stacked, int i);
/* The stacked arrays (16) of the per-layer ones (gpt_num_params), and back: copies made on
 * the host, of the arrays' dtype, on device 0 (the inputs stay theirs, wherever they are);
 * on failure none is left. */
kiln_status gpt_params_stack(kiln_context *ctx, const gpt_config *cfg, kiln_array *const *per_layer,
                             kiln_array **stacked, char *err);
kiln_status gpt_params_unstack(kiln_context *ctx, const gpt_config *cfg, kiln_array *const *stacked,
                               kiln_array **per_layer, char *err);
/* The number of scalars in all parameters. */
int64_t gpt_count_scalars(const gpt_config *cfg);

/* Makes the parameters as arrays of dtype (f32 or f64), initialised as the spec says
 * (normal(0, 0.02); c_proj weights normal(0, 0.02 / sqrt(2L)); biases 0; LayerNorm
 * weights 1) from seed. params receives gpt_num_params arrays; on failure none is left. */
kiln_status gpt_init_params(kiln_context *ctx, const gpt_config *cfg, kiln_dtype dtype,
                            uint64_t seed, kiln_array **params, char *err);

/* Traces the model on g. params: gpt_num_params values (the dtype of wte is the model's:
 * f32 or f64). idx: [B, S] i32 tokens, S <= context. Returns the final hidden states
 * after ln_f, [B*S, C] (the invalid value on a builder error, sticky on g). */
kiln_value gpt_hidden(kiln_graph *g, const gpt_config *cfg, const kiln_value *params,
                      kiln_value idx);
/* Called as each transformer block is traced: before its first op (begin true) and after
 * its last (begin false), on the graph being traced. A hook can open and close a
 * checkpoint region per block (kiln_checkpoint_begin/end: what `kiln train --remat` does),
 * name values, or count; it changes no value. Inside a block these values carry
 * kiln_checkpoint_name names for the names policies: "qkv" (the qkv product), "attn" (the
 * heads' output before c_proj), "mlp_fc" (the MLP's first product, before the GELU). */
typedef struct gpt_block_hook {
    void (*fn)(kiln_graph *g, int layer, bool begin, void *user);
    void *user;
} gpt_block_hook;
/* gpt_hidden and gpt_loss with a hook around each block (NULL: none). */
kiln_value gpt_hidden_hooked(kiln_graph *g, const gpt_config *cfg, const kiln_value *params,
                             kiln_value idx, const gpt_block_hook *hook);
kiln_value gpt_loss_hooked(kiln_graph *g, const gpt_config *cfg, const kiln_value *params,
                           kiln_value idx, kiln_value targets, const gpt_block_hook *hook);
/* How the model is traced (zero: the plain trace). compute is the mixed-precision policy's
 * compute dtype (jmp.Policy's compute_dtype; docs/mixed_precision.md): 0 or the
 * parameters' dtype traces the model in that dtype; KILN_DTYPE_BF16 or KILN_DTYPE_F16
 * keeps the parameters as they are (the f32 masters) and converts each where it is used,
 * so the products and the activations saved for the backward pass are 16-bit, while the
 * residual stream, the layer norms, the attention softmax, the GELU and the loss are
 * computed in f32, and the gradients of the f32 parameters are f32. */
typedef struct gpt_trace_options {
    const gpt_block_hook *hook; /* around each block; NULL: none (not called with scan_layers) */
    kiln_dtype compute;         /* 0: the parameters' dtype */
    /* The blocks as one kiln_scan over the layers (jax.lax.scan over stacked layers): the
     * block is traced and compiled once, so the program's size and compile time do not
     * grow with L; its backward pass recomputes each block from the activations entering
     * it, as jax.checkpoint on the scanned body does (docs/control_flow.md). */
    bool scan_layers;
    /* params are the stacked layout (gpt_num_params_layout): the blocks are scanned (as
     * scan_layers) over the stacks as they are, with no op per layer around the scan. */
    bool stacked;
    /* With scan_layers: the scan keeps each block's residuals per layer for the backward
     * pass (lax.scan's default: nothing recomputed, the unrolled form's memory) instead of
     * recomputing each block (kiln_scan_options.checkpoint_body). */
    bool scan_keep_residuals;
    /* Attention as kiln_dot_product_attention instead of its primitives: the forward pass
     * is the op's fused kernel where the device has one (on a GPU from compute capability
     * 8.0, bf16/f16 on tensor cores), and the [B, H, S, S] probabilities are not saved for
     * the backward pass, which recomputes them from q and k (the op's gradient is still
     * the primitive form): a smaller peak, at a recomputation's cost. The scores and
     * softmax are computed in f32 inside the op, its output rounded once to the compute
     * dtype. */
    bool fused_attention;
} gpt_trace_options;
/* gpt_hidden and gpt_loss with options (NULL: none). gpt_hidden_with's result is in the
 * compute dtype; the loss is f32 (f64 for f64 parameters) whatever it is. */
kiln_value gpt_hidden_with(kiln_graph *g, const gpt_config *cfg, const kiln_value *params,
                           kiln_value idx, const gpt_trace_options *o);
kiln_value gpt_loss_with(kiln_graph *g, const gpt_config *cfg, const kiln_value *params,
                         kiln_value idx, kiln_value targets, const gpt_trace_options *o);
/* The logits of hidden rows h [N, C] through the tied head: [N, V], in h's dtype (wte is
 * converted to it). */
kiln_value gpt_head(kiln_graph *g, const kiln_value *params, kiln_value h);
/* The mean cross-entropy of the next-byte prediction: idx, targets [B, S] i32. Rank 0. */
kiln_value gpt_loss(kiln_graph *g, const gpt_config *cfg, const kiln_value *params, kiln_value idx,
                    kiln_value targets);

/* Makes one parameter of g per model parameter, in order, with its spec name. */
void gpt_make_params(kiln_graph *g, const gpt_config *cfg, kiln_dtype dtype, kiln_value *params);
/* The same in either layout (stacked: the 16 of gpt_param_info_layout). */
void gpt_make_params_layout(kiln_graph *g, const gpt_config *cfg, bool stacked, kiln_dtype dtype,
                            kiln_value *params);
/* The same in memory kind `kind` (KILN_MEMORY_PINNED_HOST: the parameters kept in host
 * memory, which the model reads through kiln_memory_put to the device). */
void gpt_make_params_in(kiln_graph *g, const gpt_config *cfg, bool stacked, kiln_dtype dtype,
                        kiln_memory_kind kind, kiln_value *params);

/* Loss scaling of a training step (kiln_loss_scale_unscale; docs/mixed_precision.md):
 * for a step computed in f16, whose small gradients would otherwise flush to zero. */
typedef enum gpt_loss_scaling {
    GPT_LOSS_SCALING_AUTO,    /* gpt_train: dynamic for f16, none otherwise */
    GPT_LOSS_SCALING_NONE,    /* none */
    GPT_LOSS_SCALING_STATIC,  /* a fixed scale */
    GPT_LOSS_SCALING_DYNAMIC, /* torch.amp.GradScaler's: grows and backs off */
} gpt_loss_scaling;
/* "auto", "none", "static", "dynamic"; "?" for anything else. */
const char *gpt_loss_scaling_name(gpt_loss_scaling k);

/* The training step as one graph: arguments params (P), m (P), v (P), idx [B, T] i32,
 * targets [B, T] i32, lr (rank 0, f32), step (rank 0 i32: the 1-based update number);
 * outputs new params (P), new m (P), new v (P), then the loss (the loss before the update).
 * AdamW with beta1, beta2 and eps (0: 0.9, 0.95, 1e-8), weight decay wd on the decayed
 * parameters and 0 on the rest; clip (> 0) clips the gradients by their global norm
 * first.
 *
 * With loss scaling (static or dynamic) the loss is multiplied by the scale before the
 * gradients, which are unscaled after the all-reduce and before clipping, and a step whose
 * gradients are not all finite is skipped: its outputs are the parameters and moments
 * given, bit for bit. Further arguments after step: scale (rank 0 f32), then, dynamic,
 * good (rank 0 i32, finite steps since the scale last changed); further outputs after the
 * loss: the next step number (step + 1, or step for a skipped step), then, dynamic, the
 * next scale and good (GradScaler's rule, growth every growth_interval finite steps). */
typedef struct gpt_step_spec {
    int batch;
    int seq; /* T of the batches; <= context */
    double weight_decay;
    double clip;                /* 0: none */
    bool all_reduce;            /* data parallel: average gradients and loss over the replicas */
    uint64_t bucket_bytes;      /* gradients per all-reduce, at most (one alone if larger); 0:
                                 * one all-reduce per gradient */
    double beta1, beta2, eps;   /* AdamW's; 0: the defaults above */
    const gpt_block_hook *hook; /* around each block of the forward pass; NULL: none */
    /* Mixed precision (gpt_trace_options.compute): the parameters, the gradients and the
     * AdamW moments stay in the step's dtype, the model computes in this one. 0: the
     * step's dtype. */
    kiln_dtype compute;
    gpt_loss_scaling loss_scaling; /* AUTO counts as NONE here */
    int64_t growth_interval;       /* dynamic: 0: 2000 */
    bool scan_layers;              /* gpt_trace_options.scan_layers (hook: not called) */
    /* The step's params, m, v and new ones are the stacked layout (P = 16 whatever L;
     * gpt_trace_options.stacked, which scans the blocks): the program's ops do not grow
     * with L (no stacking, no slicing of gradients, AdamW on 16 arrays). */
    bool stacked;
    bool scan_keep_residuals; /* gpt_trace_options.scan_keep_residuals */
    bool fused_attention;     /* gpt_trace_options.fused_attention */
    /* Gradient accumulation: the batch split into this many micro-batches (batch must be a
     * multiple), run one after another by a kiln_scan whose carry accumulates the gradients
     * in place; the loss and gradients are their mean, the unsplit step's to rounding. The
     * peak holds one micro-batch's activations. 0 or 1: none. */
    int micro_batches;
    /* ZeRO (docs/scaling.md): > 1, with all_reduce, shards the AdamW moments over this many
     * replicas. Each parameter is flattened and padded with zeros to a multiple of
     * shard_ranks; replica r owns elements [r s, (r+1) s) of it (s = ceil(n / ranks)):
     * the m and v arguments and outputs are those shards ([s], 1-D), the update runs on
     * the shard, and the new parameters are all-gathered, so the params outputs stay
     * whole. A further rank-0 i32 argument after the others is the replica's rank.
     * zero_stage 2 (or 0) reduce-scatters the gradients, so only their shard is summed
     * into each replica; 1 all-reduces them whole and each replica slices its shard.
     * Gradients travel in buckets of bucket_bytes as for the all-reduce. Loss scaling is
     * not supported with it. */
    int shard_ranks;
    int zero_stage;
    /* ZeRO-Offload's layout (docs/memory.md, "Host offload"): the AdamW moments, and with
     * offload_params the parameters too, are arguments and outputs in pinned_host memory
     * (kiln_parameter_in_memory). The step fetches each to the device where it reads it
     * (the model's passes and the update apart: a parameter is fetched again for the
     * backward pass when that lowers the peak) and returns the new values there. The
     * values are the same as kept on the device. offload_params is not supported with
     * shard_ranks. */
    bool offload_optimizer;
    bool offload_params;
} gpt_step_spec;
kiln_status gpt_trace_step(kiln_graph *g, const gpt_config *cfg, kiln_dtype dtype,
                           const gpt_step_spec *s, char *err);
/* ZeRO's shard of a parameter of n elements over `ranks` replicas: ceil(n / ranks)
 * elements (n for one replica); replica r owns [r s, (r + 1) s) of the zero-padded flat
 * parameter. */
int64_t gpt_zero_shard(int64_t n, int ranks);

/* The learning-rate schedules after the warmup (torch's and optax's names). */
typedef enum gpt_schedule {
    GPT_SCHEDULE_COSINE,   /* cosine decay from peak to min_lr (the default) */
    GPT_SCHEDULE_LINEAR,   /* linear decay from peak to min_lr */
    GPT_SCHEDULE_CONSTANT, /* peak throughout */
} gpt_schedule;
/* "cosine", "linear", "constant"; "?" for anything else. */
const char *gpt_schedule_name(gpt_schedule kind);
/* The learning rate at step s (0-based) of total: linear warmup from peak / warmup to peak
 * over warmup steps, then the schedule, reaching min_lr at the last step. */
double gpt_lr_schedule(int64_t s, int64_t total, int64_t warmup, double peak, double min_lr,
                       gpt_schedule kind);
/* gpt_lr_schedule with cosine decay to 0.1 peak. */
double gpt_lr_at(int64_t s, int64_t total, int64_t warmup, double peak);

/* The most steps a run may have (a checkpoint saying more is refused): counts are 64-bit
 * throughout, and this keeps every product of steps and a batch's bytes in range. */
#define GPT_MAX_STEPS 1000000000000LL

/* ---------------------------------------------------------------- data ---- */

/* A corpus: the bytes of a file, split into training (first 90%) and validation (last 10%). */
typedef struct gpt_data {
    unsigned char *bytes;
    int64_t n, n_train;
    uint64_t hash; /* FNV-1a of the bytes: which corpus a checkpoint was trained on */
} gpt_data;

/* Reads path (NULL or "": the default corpus, /usr/share/common-licenses/GPL-3, else a
 * generated English-like text). KILN_STATUS_IO naming the file if it cannot be read;
 * INVALID_ARGUMENT if it is not a regular file (a FIFO or a device would block or never
 * end), is larger than GPT_MAX_CORPUS_BYTES, or either split is too short for a window of
 * context + 1 bytes. */
#define GPT_MAX_CORPUS_BYTES (4LL << 30)
kiln_status gpt_data_load(kiln_context *ctx, const char *path, int context, gpt_data *d, char *err);
void gpt_data_free(kiln_context *ctx, gpt_data *d);
/* The seeded generator of the batches (splitmix64): its whole state is one uint64. */
uint64_t gpt_rng_next(uint64_t *state);
/* B random windows of T + 1 bytes from [lo, hi) of the corpus into tok ([B, T+1]). */
void gpt_data_batch(const gpt_data *d, bool validation, uint64_t *rng, int B, int T, int32_t *tok);

/* ----------------------------------------------------------- training ---- */

typedef struct gpt_train_options {
    gpt_config model;
    int batch;
    int64_t steps, warmup; /* steps in [1, GPT_MAX_STEPS] */
    double lr, weight_decay, clip;
    uint64_t seed;
    const char *data; /* corpus file; NULL: the default */
    /* Resuming on a corpus other than the one the checkpoint records (its size and hash
     * differ) is refused unless this is set: the user named the new file on purpose. */
    bool data_explicit;
    const char *out_dir; /* where losses.csv, summary.json, the SVGs and model.safetensors go */
    const char *init;    /* start from these parameters (safetensors), or NULL */
    const char *batches; /* raw int32 [steps, B, T+1] training batches, or NULL */
    const char *resume;  /* a checkpoint to continue from, or NULL */
    int64_t eval_every;  /* validation loss every N steps (and at the last); 0: never */
    int eval_batches;    /* batches of B in each validation; 0: 4 */
    int64_t save_every;  /* checkpoint every N steps; 0: at the end only */
    int64_t stop_after;  /* stop (and save) after this many steps in this run; 0: none */
    /* A device memory budget for the step (rematerialisation, docs/memory.md): bytes, or a
     * share in (0, 1] of the step's peak without recomputation; 0: none. */
    uint64_t memory_budget;
    double memory_budget_fraction;
    /* PyTorch's activation_memory_budget (kiln_compile_options.activation_memory_budget):
     * the share in (0, 1] of the activations saved for the backward pass the step's peak
     * may hold; 0: none. */
    double activation_memory_budget;
    /* Gradient accumulation (gpt_step_spec.micro_batches): the batch of each replica split
     * into this many micro-batches run one after another (it must divide it). 0: one, or,
     * under a memory budget that recomputation alone cannot meet, the fewest of 2, 4, 8, ...
     * that divide the batch and fit (the summary says how many and why). */
    int micro_batches;
    /* Host offload under the memory budget (kiln_compile_options.budget_offload = 1): the
     * search may offload activations to pinned_host memory too. false: the device's
     * default (on a GPU, not on a CPU device). */
    bool offload;
    /* ZeRO-Offload's layout (gpt_step_spec.offload_optimizer, offload_params): the AdamW
     * moments, and with offload_params the parameters too, kept in the device's
     * pinned_host memory between steps. Under a memory budget that recomputation alone
     * cannot meet, the run turns them on itself (moments first, then parameters) before
     * it splits the batch; the summary says what and why. Not with shard_optimizer's
     * parameters (offload_params). */
    bool offload_optimizer;
    bool offload_params;
    FILE *progress;              /* where progress lines and the summary go; NULL: none */
    bool progress_is_tty;        /* \r-updated line instead of one line per report */
    int print_every;             /* plain-line progress every N steps; 0: 10 */
    bool no_summary;             /* the summary to DIR/summary.txt only, not to progress */
    volatile sig_atomic_t *stop; /* set (by a signal's thread) to stop after this step */
    /* Data parallel (docs/scaling.md): this replica's communicator (NULL: one replica) and
     * the device it runs on. batch is the global batch, split evenly over the ranks; rank
     * r trains on rows [r B/N, (r+1) B/N) of every batch. Only rank 0 evaluates, prints
     * and writes files (progress and out_dir are ignored on the others). Every check_every
     * steps (0: 100) the ranks compare a hash of their parameters. */
    kiln_comm *comm;
    int device;
    int64_t check_every;
    /* Gradients are all-reduced in buckets of at most this many bytes (a larger gradient
     * alone); a negative value: one all-reduce per gradient; 0 (the default): 25 MiB as
     * DDP's between processes, one per gradient between threads (local). */
    int64_t bucket_bytes;
    /* Each all-reduce completes where it stands (kiln_compile_options.disable_overlap)
     * instead of overlapping the rest of the backward pass. */
    bool no_overlap;
    /* ZeRO (gpt_step_spec.shard_ranks; docs/scaling.md): with several ranks, each keeps
     * only its 1/N shard of the AdamW moments and updates only its shard of the
     * parameters, which are then all-gathered. zero_stage 2 (0 counts as 2) also
     * reduce-scatters the gradients; 1 all-reduces them. Checkpoints stay whole (the
     * moments gathered to save, re-sharded at resume), so sharded and unsharded runs
     * resume each other. Not part of the recipe; excludes loss scaling (f16). */
    bool shard_optimizer;
    int zero_stage;
    /* AdamW and the schedule (gpt_train_defaults: 0.9, 0.95, 1e-8, cosine, min_lr NaN =
     * lr / 10). Part of the recipe a checkpoint records. */
    double beta1, beta2, eps;
    gpt_schedule schedule;
    double min_lr;
    /* Rematerialisation per block: each transformer block a checkpoint region of this
     * policy (names: the names policies' names, the values gpt_block_hook lists). Not part
     * of the recipe: a resumed run may recompute differently. */
    bool remat;
    kiln_checkpoint_policy remat_policy;
    int remat_n_names;
    const char *const *remat_names;
    /* The blocks as one scan over the layers (gpt_trace_options.scan_layers): the program
     * and its compile time stay the same size whatever the depth; the backward pass
     * recomputes each block, so it excludes remat. Not part of the recipe. */
    bool scan_layers;
    /* Attention as the op (gpt_trace_options.fused_attention), in the step and the
     * validation: its probabilities are not saved for the backward pass. Not part of the
     * recipe. */
    bool fused_attention;
    /* Mixed precision (docs/mixed_precision.md): the dtype the step and the validation
     * compute in, KILN_DTYPE_F32 (0 counts as f32), KILN_DTYPE_BF16 or KILN_DTYPE_F16
     * (gpt_trace_options.compute). The parameters, gradients and AdamW moments stay f32
     * whatever it is, and so does the checkpoint. Loss scaling: AUTO is dynamic for f16
     * and none otherwise; loss_scale is the static scale or the dynamic one's first (0:
     * 65536, GradScaler's), loss_scale_growth_interval the finite steps before a dynamic
     * scale doubles (0: 2000). Part of the recipe a checkpoint records, with the dynamic
     * scale's state. */
    kiln_dtype dtype;
    gpt_loss_scaling loss_scaling;
    double loss_scale;
    int64_t loss_scale_growth_interval;
    /* out_dir/model.safetensors left by an earlier run is replaced only by a run that
     * resumes from that very file or sets this (with resume or without): a fresh run into
     * the folder is refused, so that a forgotten --resume does not lose the trained model.
     * Last, so that the fields before it keep their places. */
    bool overwrite;
} gpt_train_options;

/* What a run did (filled by gpt_train, also on most failures, as far as it got). */
typedef struct gpt_train_result {
    int64_t steps_done; /* the step count of the final state (includes resumed steps) */
    double first_loss, final_loss, final_val_loss; /* val NaN if never evaluated */
    double compile_ms, ms_per_step_median, tokens_per_s;
    uint64_t planned_peak_bytes, measured_peak_bytes;
    int64_t params;
    bool interrupted;
    /* Loss scaling: steps skipped for a non-finite gradient (in this run), and the scale
     * at the end (NaN without loss scaling). */
    int64_t skipped_steps;
    double final_loss_scale;
    int micro_batches;                      /* the step's micro-batches (1: the batch at once) */
    bool offload_optimizer, offload_params; /* where the state was kept (the options, or the
                                             * budget's choice) */
} gpt_train_result;

/* Sets the defaults the CLI documents (a small model that trains on 2 cores). */
void gpt_train_defaults(gpt_train_options *o);
/* Reads a checkpoint's recipe (model config, batch, steps, warmup, lr, weight decay,
 * clip, seed, betas, eps, schedule, min lr) into o, so that a resumed run is the same run;
 * what an older checkpoint does not record keeps its default. */
kiln_status gpt_checkpoint_read_options(kiln_context *ctx, const char *path, gpt_train_options *o,
                                        char *err);
kiln_status gpt_train(kiln_context *ctx, const gpt_train_options *o, gpt_train_result *r,
                      char *err);

/* Saves params (and, when m and v are not NULL, the AdamW moments and the training state
 * in the metadata) atomically to path. */
kiln_status gpt_checkpoint_save(kiln_context *ctx, const char *path, const gpt_config *cfg,
                                kiln_array *const *params, kiln_array *const *m,
                                kiln_array *const *v, int n_meta, const char *const *meta_kv,
                                char *err);
/* Loads the parameters of cfg from path (every name present, every dtype f32 and shape
 * right, every value finite, else INVALID_ARGUMENT naming the tensor); m and v likewise
 * when not NULL. Saving refuses non-finite values the same way. */
kiln_status gpt_checkpoint_load(kiln_context *ctx, const char *path, const gpt_config *cfg,
                                kiln_array **params, kiln_array **m, kiln_array **v, char *err);
/* Removes the temporary files that kiln_safetensors_save left next to the checkpoint path
 * ("<path>.tmp-<pid>-<hex>"): those of process pid, or with pid 0 those whose process is
 * gone (a run killed while saving). Returns how many it removed. */
int gpt_checkpoint_remove_temps(const char *path, long pid);
/* Removes every temporary file process pid (> 0) has in folder dir, whatever it was
 * writing: kiln_safetensors_save's "<name>.tmp-<pid>-<hex>" and the --out files'
 * "<name>.tmp-<pid>" (gpt_out_open). What a run stopped at once leaves behind. Returns how
 * many it removed. */
int gpt_remove_temps_of(const char *dir, long pid);
/* The model config stored in a checkpoint's metadata. */
kiln_status gpt_checkpoint_config(kiln_context *ctx, const char *path, gpt_config *cfg, char *err);

/* ----------------------------------------------------------- sampling ---- */

typedef struct gpt_sample_options {
    const char *checkpoint;
    const char *prompt; /* bytes to start from; NULL or "": a newline */
    int length;         /* bytes to generate */
    double temperature; /* 0: greedy */
    int top_k;          /* 0: all */
    /* Nucleus sampling after top-k (as torch/Hugging Face's top_p): the smallest set of the
     * likeliest bytes whose probability reaches top_p, never fewer than one. In (0, 1];
     * 0 (what a zeroed struct holds) and 1 keep them all. */
    double top_p;
    uint64_t seed;
    /* Recompute the whole window for every byte instead of keeping a KV cache (the path
     * the cache is compared with; docs/training.md). Past the context both recompute. */
    bool no_kv_cache;
    /* When not NULL (o->length entries): the gap between the two largest logits before each
     * generated byte (how near a greedy choice was to a tie). */
    double *margins;
} gpt_sample_options;

/* Generates o->length bytes after the prompt and writes them to out (a buffer of
 * o->length bytes). */
kiln_status gpt_sample(kiln_context *ctx, const gpt_sample_options *o, unsigned char *out,
                       char *err);

#ifdef __cplusplus
}
#endif
#endif /* KILN_GPT_H */
