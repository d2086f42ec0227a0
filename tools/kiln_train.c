/* kiln_train.c — `kiln train` and `kiln sample`: command-line flags onto models/gpt
 * (gpt_train, gpt_sample), nothing more. docs/training.md documents the flags; the tables
 * train_flags and sample_flags below are the only list of them (tools/flags.h).
 *
 * Exit status: 0 done, 1 a runtime error (a file that cannot be read, a bad checkpoint, a
 * kiln error: the message says which), 2 a usage error (unknown flag, missing value, bad
 * number), 130 / 143 stopped by SIGINT / SIGTERM after the step in progress, saved
 * (tools/stop_signals.c). */
#include "kiln_train.h"

#include "flags.h"
#include "gpt.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What `kiln train`'s flags set: gpt_train's options and the tool's own. */
typedef struct train_args {
    gpt_train_options o;
    long long threads, devices;
    double timeout, bucket_mb; /* bucket_mb < 0: not given */
    bool cuda, mpi;
    char remat_buf[512]; /* --remat's names point into it */
    const char *remat_names[16];
} train_args;
_Static_assert(offsetof(train_args, o) == 0, "train_defaults_agree reads o's offsets as o's");

static bool parse_data(const char *v, void *opts) {
    train_args *a = opts;
    a->o.data = v, a->o.data_explicit = true;
    return true;
}

static bool parse_schedule(const char *v, void *opts) {
    int k = 0;
    while (k <= GPT_SCHEDULE_CONSTANT && strcmp(v, gpt_schedule_name(k))) k++;
    if (k > GPT_SCHEDULE_CONSTANT) return false;
    ((train_args *)opts)->o.schedule = (gpt_schedule)k;
    return true;
}

/* --dtype: the dtypes the model computes in (the parameters stay f32). */
static bool parse_dtype(const char *v, void *opts) {
    static const kiln_dtype ok[3] = {KILN_DTYPE_F32, KILN_DTYPE_BF16, KILN_DTYPE_F16};
    for (int k = 0; k < 3; k++)
        if (!strcmp(v, kiln_dtype_name(ok[k]))) {
            ((train_args *)opts)->o.dtype = ok[k];
            return true;
        }
    return false;
}

static bool parse_loss_scaling(const char *v, void *opts) {
    int k = 0;
    while (k <= GPT_LOSS_SCALING_DYNAMIC && strcmp(v, gpt_loss_scaling_name(k))) k++;
    if (k > GPT_LOSS_SCALING_DYNAMIC) return false;
    ((train_args *)opts)->o.loss_scaling = (gpt_loss_scaling)k;
    return true;
}

static bool parse_memory_budget(const char *v, void *opts) {
    train_args *a = opts;
    return kiln_tool_parse_bytes(v, &a->o.memory_budget, &a->o.memory_budget_fraction);
}

static bool parse_device(const char *v, void *opts) {
    ((train_args *)opts)->cuda = !strcmp(v, "cuda");
    return !strcmp(v, "cuda") || !strcmp(v, "cpu");
}

/* --remat POLICY or POLICY:NAME,NAME (the names policies): each block a checkpoint region
 * of that policy, the names pointing into remat_buf. */
static bool parse_remat(const char *v, void *opts) {
    train_args *a = opts;
    char *buf = a->remat_buf;
    snprintf(buf, sizeof a->remat_buf, "%s", v);
    char *colon = strchr(buf, ':');
    if (colon) *colon = 0;
    int p = 0;
    while (p <= KILN_CHECKPOINT_POLICY_OFFLOAD_DOT_WITH_NO_BATCH_DIMS &&
           strcmp(buf, kiln_checkpoint_policy_name((kiln_checkpoint_policy)p)))
        p++;
    bool named = p == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ||
                 p == KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE;
    if (p > KILN_CHECKPOINT_POLICY_OFFLOAD_DOT_WITH_NO_BATCH_DIMS || named != (colon != NULL))
        return false;
    int n = 0, max = (int)(sizeof a->remat_names / sizeof a->remat_names[0]);
    for (char *t = colon ? strtok(colon + 1, ",") : NULL; t && n < max; t = strtok(NULL, ",")) {
        /* the GPT's names (gpt.h): another would name nothing, and save or recompute
         * something else than was meant */
        if (strcmp(t, "qkv") && strcmp(t, "attn") && strcmp(t, "mlp_fc")) return false;
        a->remat_names[n++] = t;
    }
    if (named && !n) return false;
    a->o.remat = true, a->o.remat_policy = (kiln_checkpoint_policy)p;
    a->o.remat_n_names = n, a->o.remat_names = n ? a->remat_names : NULL;
    return true;
}

#define T_AT(field) offsetof(train_args, field)
#define T_INT(n, f, l, h)                                                                          \
    .name = n, .arg = "N", .kind = TOOL_FLAG_INT, .offset = T_AT(f), .lo = l, .hi = h
#define T_I64(n, f, l, h)                                                                          \
    .name = n, .arg = "N", .kind = TOOL_FLAG_INT64, .offset = T_AT(f), .lo = l, .hi = h
#define T_DBL(n, f, l, h)                                                                          \
    .name = n, .arg = "X", .kind = TOOL_FLAG_DOUBLE, .offset = T_AT(f), .flo = l, .fhi = h
#define T_STR(n, a, f) .name = n, .arg = a, .kind = TOOL_FLAG_STRING, .offset = T_AT(f)
#define T_FN(n, a, fn) .name = n, .arg = a, .kind = TOOL_FLAG_CUSTOM, .parse = fn
#define T_SW(n, f)     .name = n, .kind = TOOL_FLAG_SWITCH, .offset = T_AT(f)

/* The defaults are gpt_train_defaults's (what C callers of the library get), written out
 * for the help; train_defaults_agree holds them to the library's on every run. They are
 * stored before the flags are read, so the help shows the values a run uses. */
static const tool_flag train_flags[] = {
    {T_FN("--data", "FILE", parse_data),
     .help = "the corpus (any file: bytes); default /usr/share/common-licenses/GPL-3"},
    {T_INT("--layers", o.model.layers, 1, 1024), .def = "2",
     .help = "transformer blocks (default {})"},
    {T_INT("--heads", o.model.heads, 1, 1024), .def = "4", .help = "attention heads ({})"},
    {T_INT("--channels", o.model.channels, 1, 65536), .def = "128",
     .help = "width C, a multiple of heads ({})"},
    {T_INT("--context", o.model.context, 1, 65536), .def = "64", .help = "sequence length T ({})"},
    {T_INT("--batch", o.batch, 1, 1 << 20), .def = "16", .help = "sequences per step B ({})"},
    {T_I64("--steps", o.steps, 1, GPT_MAX_STEPS), .def = "1000", .help = "training steps ({})"},
    {T_DBL("--lr", o.lr, 1e-12, 10), .def = "3e-3", .help = "peak learning rate of AdamW ({})"},
    {T_I64("--warmup", o.warmup, 0, GPT_MAX_STEPS), .def = "30",
     .help = "linear warmup steps ({}), then the schedule"},
    {T_FN("--schedule", "S", parse_schedule), .def = "cosine",
     .bad = "is not cosine, linear or constant",
     .help = "after the warmup: {} (default), linear or constant"},
    {T_DBL("--min-lr", o.min_lr, 0, 10),
     .help = "the rate cosine and linear decay to (default lr/10)"},
    {T_DBL("--beta1", o.beta1, 0, 0.999999999999), .def = "0.9", .label = "--beta1 X, --beta2 X",
     .help = "AdamW's moment decays ({}, {--beta2})"},
    {T_DBL("--beta2", o.beta2, 0, 0.999999999999), .def = "0.95"},
    {T_DBL("--eps", o.eps, 1e-30, 1), .def = "1e-8", .help = "AdamW's epsilon ({})"},
    {T_DBL("--weight-decay", o.weight_decay, 0, 10), .def = "0.1",
     .help = "AdamW decay of the matrices ({})"},
    {T_DBL("--clip", o.clip, 0, 10),
     .help = "clip gradients to global norm X (default: no clipping)"},
    {.name = "--seed",
     .arg = "N",
     .kind = TOOL_FLAG_UINT64,
     .offset = T_AT(o.seed),
     .lo = 0,
     .hi = LLONG_MAX,
     .def = "1337",
     .help = "initialisation and batches ({})"},
    {.name = "--threads",
     .arg = "N",
     .kind = TOOL_FLAG_LLONG,
     .offset = T_AT(threads),
     .lo = 1,
     .hi = 4096,
     .help = "kiln's threads (default: all cores)"},
    {T_STR("--out", "DIR", o.out_dir), .def = "kiln-train",
     .help = "losses.csv, summary.json, loss.svg, plan.svg, model.safetensors\n(default {})"},
    {T_I64("--eval-every", o.eval_every, 0, GPT_MAX_STEPS), .def = "100",
     .help = "validation loss every N steps ({}; 0: never)"},
    {T_I64("--save-every", o.save_every, 0, GPT_MAX_STEPS),
     .help = "checkpoint every N steps (default: at the end only)"},
    {T_STR("--resume", "FILE", o.resume),
     .help = "continue a run from its checkpoint (same losses as never stopping)"},
    {T_SW("--overwrite", o.overwrite),
     .help = "start a new run in an --out folder that holds an earlier run's\n"
             "checkpoint, replacing it (without this such a run is refused)"},
    {T_STR("--init", "FILE", o.init),
     .help = "start from these parameters (safetensors, names as docs/training.md)"},
    {T_STR("--batches", "FILE", o.batches),
     .help = "training batches from a raw int32 file [steps, batch, context+1]"},
    {T_FN("--dtype", "T", parse_dtype), .def = "f32", .bad = "is not f32, bf16 or f16",
     .help = "what the model computes in: {} (default), bf16 or f16 (mixed\n"
             "precision: parameters, gradients, AdamW moments and the\n"
             "checkpoint stay f32; docs/mixed_precision.md). Every 16-bit op\n"
             "rounds; KILN_ALLOW_EXCESS_PRECISION=1 rounds only what a fused\n"
             "kernel stores"},
    {T_FN("--loss-scaling", "S", parse_loss_scaling), .def = "auto",
     .bad = "is not auto, none, static or dynamic",
     .help = "none, static or dynamic (GradScaler's); {} (default): dynamic\n"
             "for f16, none otherwise"},
    {T_DBL("--loss-scale", o.loss_scale, 1e-30, 3.4e38), .def = "65536",
     .help = "the static scale, or the dynamic one's first ({})"},
    {T_I64("--growth-interval", o.loss_scale_growth_interval, 1, INT32_MAX), .def = "2000",
     .help = "finite steps before a dynamic scale doubles ({})"},
    {T_FN("--memory-budget", "X", parse_memory_budget),
     .bad = "is not a size (bytes such as 64MiB, 2GB, 1000000, or a share such as 50%)",
     .help = "the step's peak device memory at most X bytes (64MiB, 2GB) or X%\n"
             "of its peak without recomputation (50%): kiln recomputes\n"
             "activations in the backward pass to fit (docs/memory.md)"},
    {T_DBL("--activation-memory-budget", o.activation_memory_budget, 1e-9, 1),
     .help = "a budget as PyTorch's activation_memory_budget: the step's peak\n"
             "may hold X (in (0, 1]) of the activations saved for the backward\n"
             "pass (0.5: half of them); with --memory-budget, the tighter"},
    {T_INT("--micro-batches", o.micro_batches, 1, 1 << 20),
     .help = "split each step's batch into N micro-batches run one after another,\n"
             "their gradients accumulated (the same step, less memory); default:\n"
             "one, or under --memory-budget the fewest that fit when recomputing\n"
             "activations alone cannot"},
    {T_FN("--remat", "POLICY", parse_remat),
     .bad = "is not a policy: nothing_saveable, everything_saveable, dots_saveable, "
            "dots_with_no_batch_dims_saveable, offload_dot_with_no_batch_dims, or "
            "save_only_these_names:NAMES / save_any_names_but_these:NAMES (NAMES: a comma "
            "list of qkv, attn, mlp_fc)",
     .help = "each block a checkpoint region of POLICY: nothing_saveable,\n"
             "dots_saveable, dots_with_no_batch_dims_saveable,\n"
             "everything_saveable, save_only_these_names:qkv,attn,mlp_fc,\n"
             "save_any_names_but_these:NAMES, or offload_dot_with_no_batch_dims\n"
             "(the products to host memory, the rest recomputed; docs/memory.md)"},
    {T_SW("--offload", o.offload),
     .help = "under --memory-budget, activations may also wait in host memory\n"
             "(copied out and back) where that is cheaper than recomputing\n"
             "them; the default on a GPU, off on a CPU device (docs/memory.md)"},
    {T_SW("--offload-optimizer", o.offload_optimizer),
     .help = "keep the AdamW moments in host (pinned_host) memory between steps,\n"
             "fetched for the update (ZeRO-Offload); chosen by itself under a\n"
             "--memory-budget recomputation cannot meet (docs/memory.md)"},
    {T_SW("--offload-params", o.offload_params),
     .help = "keep the parameters in host memory too, fetched where the step\n"
             "reads them (implies --offload-optimizer; not with --shard-optimizer)"},
    {T_SW("--scan-layers", o.scan_layers),
     .help = "the blocks as one scan over the layers: compiled once whatever the\n"
             "depth, each block recomputed in the backward pass (not with\n"
             "--remat; docs/control_flow.md); the parameters held stacked [L, ...],\n"
             "the checkpoint per layer as always"},
    {T_SW("--fused-attention", o.fused_attention),
     .help = "attention as kiln_dot_product_attention: one fused kernel forward (on\n"
             "a GPU, bf16/f16 on tensor cores), its probabilities recomputed in the\n"
             "backward pass rather than saved (a smaller peak; docs/training.md)"},
    {T_SW("--no-summary", o.no_summary),
     .help = "leave the summary out of the output (it is still written to\nDIR/summary.txt)"},
    {.kind = TOOL_FLAG_HEADING,
     .help = "data parallel (docs/scaling.md): --batch is the global batch, split over the ranks"},
    {.name = "--devices",
     .arg = "N",
     .kind = TOOL_FLAG_LLONG,
     .offset = T_AT(devices),
     .lo = 1,
     .hi = 64,
     .def = "1",
     .help = "N replicas in this process, one device and thread each"},
    {T_FN("--device", "cpu|cuda", parse_device), .def = "cpu", .bad = "is neither cpu nor cuda",
     .help = "what the replicas run on ({}): cuda puts rank r on GPU cuda:r\n"
             "(cuda:(r mod GPUs) under MPI) and all-reduces over NCCL"},
    {T_SW("--mpi", mpi), .help = "one replica per MPI process (implied under mpirun -np N > 1)"},
    {T_DBL("--comm-timeout", timeout, 1e-3, 1e6), .def = "60",
     .help = "a rank that waits X seconds for the others fails ({})"},
    {T_I64("--check-every", o.check_every, 0, GPT_MAX_STEPS), .def = "100",
     .help = "compare the ranks' parameter hashes every N steps ({})"},
    {T_DBL("--bucket-mb", bucket_mb, 0, 1e6),
     .help = "gradients per all-reduce, in MiB (0: one per gradient; default\n"
             "25 over MPI, 0 for --devices)"},
    {T_SW("--no-overlap", o.no_overlap),
     .help = "finish each all-reduce before the next kernel, instead of\n"
             "running the rest of the backward pass while it is in flight"},
    {T_SW("--shard-optimizer", o.shard_optimizer),
     .help = "ZeRO: each rank keeps 1/N of the AdamW moments, updates its\n"
             "shard of the parameters and all-gathers them; checkpoints stay\n"
             "whole (not with f16's loss scaling)"},
    {T_INT("--zero-stage", o.zero_stage, 1, 2), .def = "2",
     .help = "with --shard-optimizer: 2 reduce-scatters the gradients, 1\n"
             "all-reduces them whole ({})"},
    {.name = "--help", .kind = TOOL_FLAG_HELP},
};

static const tool_command train_command = {
    .name = "train",
    .noun = "flag",
    .usage = "usage: kiln train [flags]\n",
    .column = 20,
    .flags = train_flags,
    .n_flags = sizeof train_flags / sizeof train_flags[0],
};

/* What `kiln sample`'s flags set. */
typedef struct sample_args {
    gpt_sample_options o;
    long long threads;
    bool positional; /* the checkpoint was given as an argument */
} sample_args;

/* --top-p: a probability mass in (0, 1] (0 would keep nothing: refused, as torch does). */
static bool parse_top_p(const char *v, void *opts) {
    char *end;
    errno = 0;
    double p = strtod(v, &end);
    if (end == v || *end || errno || !(p > 0 && p <= 1)) return false;
    ((sample_args *)opts)->o.top_p = p;
    return true;
}

/* The checkpoint, once: kiln sample FILE. */
static int sample_positional(const tool_command *c, const char *arg, void *opts) {
    sample_args *a = opts;
    if (a->positional)
        return kiln_tool_usage(c, "unexpected argument '%s': the checkpoint is '%s'", arg,
                               a->o.checkpoint);
    a->o.checkpoint = arg, a->positional = true;
    return 0;
}

#define S_AT(field) offsetof(sample_args, field)
/* One thread by default: generating a byte runs ~100 kernels of a few microseconds each,
 * and waking pool threads for each cost far more than it saved (300 bytes of the demo's
 * model on one thread and on two of a loaded 2-core machine: docs/training.md;
 * bench/RESULTS.md, "Figures moved out of code comments (2026-12-03)"). */
static const tool_flag sample_flags[] = {
    {.name = "--checkpoint",
     .arg = "FILE",
     .kind = TOOL_FLAG_STRING,
     .offset = S_AT(o.checkpoint),
     .def = "kiln-train/model.safetensors",
     .help = "the model (default {})"},
    {.name = "--prompt",
     .arg = "TEXT",
     .kind = TOOL_FLAG_STRING,
     .offset = S_AT(o.prompt),
     .def = "\n",
     .help = "the text to continue (default, and for \"\": a newline)"},
    {.name = "--length",
     .arg = "N",
     .kind = TOOL_FLAG_INT,
     .offset = S_AT(o.length),
     .lo = 0,
     .hi = 1 << 24,
     .def = "300",
     .help = "bytes to generate ({})"},
    {.name = "--temperature",
     .arg = "X",
     .kind = TOOL_FLAG_DOUBLE,
     .offset = S_AT(o.temperature),
     .flo = 0,
     .fhi = 100,
     .def = "0.8",
     .help = "in [0, 100]; 0: always the likeliest byte ({})"},
    {.name = "--top-k",
     .arg = "N",
     .kind = TOOL_FLAG_INT,
     .offset = S_AT(o.top_k),
     .lo = 0,
     .hi = 1 << 20,
     .def = "40",
     .help = "draw among the N likeliest ({}; 0: all)"},
    {.name = "--top-p",
     .arg = "P",
     .kind = TOOL_FLAG_CUSTOM,
     .parse = parse_top_p,
     .bad = "is not a valid value (a number in (0, 1])",
     .def = "1",
     .help = "then among the likeliest whose probability reaches P ({}: all)"},
    {.name = "--seed",
     .arg = "N",
     .kind = TOOL_FLAG_UINT64,
     .offset = S_AT(o.seed),
     .lo = 0,
     .hi = LLONG_MAX,
     .def = "1",
     .help = "({})"},
    {.name = "--threads",
     .arg = "N",
     .kind = TOOL_FLAG_LLONG,
     .offset = S_AT(threads),
     .lo = 1,
     .hi = 4096,
     .def = "1",
     .help = "kiln's threads (default {}: a byte is ~100 tiny kernels, which\n"
             "handing to a pool only slows)"},
    {.name = "--no-kv-cache",
     .kind = TOOL_FLAG_SWITCH,
     .offset = S_AT(o.no_kv_cache),
     .help = "recompute the whole window for every byte (no KV cache)"},
    {.name = "--help", .kind = TOOL_FLAG_HELP},
};

static const tool_command sample_command = {
    .name = "sample",
    .noun = "flag",
    .usage = "usage: kiln sample [flags] [CHECKPOINT]\n",
    .column = 20,
    .flags = sample_flags,
    .n_flags = sizeof sample_flags / sizeof sample_flags[0],
    .positional = sample_positional,
};

/* Whether x and y, gpt_train_options one of whose fields f stored, agree: the field at
 * `at` by its text for a string (two copies of one literal may differ as pointers), the
 * whole struct's bytes otherwise (both were filled by gpt_train_defaults's memset). */
static bool same_options(const tool_flag *f, const gpt_train_options *x, const gpt_train_options *y,
                         size_t at) {
    if (f->kind != TOOL_FLAG_STRING) return !memcmp(x, y, sizeof *x);
    const char *s = *(const char *const *)((const char *)x + at),
               *t = *(const char *const *)((const char *)y + at);
    return t && !strcmp(s, t);
}

/* Each default of the table, stored alone over gpt_train_defaults's options, must leave
 * them as they were; the defaults of the tool's own flags (--devices, --device,
 * --comm-timeout) land outside them. 0, or 2 naming the flag: the table and
 * models/gpt/train.c have drifted apart, and no run starts (every test of `kiln train`
 * fails) until they agree again. */
static int train_defaults_agree(void) {
    gpt_train_options lib;
    gpt_train_defaults(&lib);
    for (size_t i = 0; i < train_command.n_flags; i++) {
        const tool_flag *f = &train_flags[i];
        size_t at = f->offset; /* o opens train_args; a custom row's 0 stands for all of o */
        if (!f->def || at >= sizeof lib) continue;
        train_args a;
        memset(&a, 0, sizeof a);
        memcpy(&a.o, &lib, sizeof lib);
        tool_command one = train_command;
        one.flags = f, one.n_flags = 1;
        if (kiln_tool_flags_defaults(&one, &a)) return 2;
        if (!same_options(f, &a.o, &lib, at)) {
            fprintf(stderr,
                    "kiln train: the default of %s, '%s', is not gpt_train_defaults's "
                    "(tools/kiln_train.c and models/gpt/train.c must agree)\n",
                    f->name, f->def);
            return 2;
        }
    }
    return 0;
}

void kiln_tool_train_help(FILE *f) {
    kiln_tool_flags_help(&train_command, f);
}

void kiln_tool_sample_help(FILE *f) {
    kiln_tool_flags_help(&sample_command, f);
}

/* kiln train compiles its step with one tier (KILN_COMPILE_TIERS, set, still decides): a
 * job of many steps gains nothing from starting on the kernels' descriptions, whose steps
 * are several times the optimised build's while that build compiles beside them
 * (docs/performance.md, "Compile tiers"). kiln sample keeps the default: its first token
 * sooner. */
static kiln_context *make_context(const char *cmd, int threads, int devices) {
    kiln_context_options co = {.num_threads = threads,
                               .cpu_devices = devices,
                               .compile_tiers = !strcmp(cmd, "train") ? 1 : 0};
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "kiln %s: %s\n", cmd, err);
        return NULL;
    }
    return ctx;
}

static void print_recipe(const gpt_train_options *o, int ranks, const char *what) {
    printf("kiln train: %d layers, %d heads, %d channels, context %d, batch %d, %lld steps%s%s",
           o->model.layers, o->model.heads, o->model.channels, o->model.context, o->batch,
           (long long)o->steps, o->resume ? ", resuming " : "", o->resume ? o->resume : "");
    if (ranks > 1)
        printf(", data parallel over %d %s (batch %d per rank)", ranks, what, o->batch / ranks);
    if (ranks > 1 && o->shard_optimizer)
        printf(", optimiser state sharded (ZeRO-%d)", o->zero_stage ? o->zero_stage : 2);
    printf("\n");
    fflush(stdout);
}

/* One replica of --devices: gpt_train on its own device and communicator, in a thread. */
typedef struct replica {
    kiln_context *ctx;
    gpt_train_options o;
    gpt_train_result r;
    kiln_status st;
    char err[GPT_ERR_SIZE];
} replica;

static void *replica_main(void *p) {
    replica *x = p;
    if (x->o.progress) kiln_tool_set_saver_thread(); /* rank 0 writes */
    x->st = gpt_train(x->ctx, &x->o, &x->r, x->err);
    return NULL;
}

/* --devices N: N replicas in this process, rank r on CPU device r (local communicator) or,
 * given gpus, on GPU gpus[r] (NCCL); rank 0 prints and writes. The first error is rank 0's
 * if it failed, else the first failing rank's. */
static kiln_status train_devices(kiln_context *ctx, const gpt_train_options *o, int n,
                                 double timeout, const int *gpus, gpt_train_result *res,
                                 char *err) {
    kiln_comm *comms[64] = {0};
    replica *x = calloc((size_t)n, sizeof *x);
    pthread_t th[64];
    kiln_status st = !x     ? KILN_STATUS_HOST_OOM
                     : gpus ? kiln_comm_create_nccl(ctx, n, gpus, timeout, comms)
                            : kiln_comm_create_local(ctx, n, timeout, comms);
    if (st) {
        snprintf(err, GPT_ERR_SIZE, "%s", x ? kiln_last_error(ctx) : "out of host memory");
        free(x);
        return st;
    }
    print_recipe(o, n, gpus ? "GPUs over NCCL" : "CPU devices");
    int started = 0;
    for (int i = 0; i < n; i++) {
        x[i].ctx = ctx;
        x[i].o = *o;
        x[i].o.comm = comms[i];
        x[i].o.device = gpus ? gpus[i] : i;
        x[i].o.progress = i ? NULL : stdout;
        if (pthread_create(&th[i], NULL, replica_main, &x[i])) break;
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    st = started < n ? KILN_STATUS_INTERNAL : KILN_STATUS_OK;
    if (st) snprintf(err, GPT_ERR_SIZE, "cannot start the thread of device %d", started);
    for (int i = 0; i < started && !st; i++)
        if (x[i].st) {
            st = x[i].st;
            snprintf(err, GPT_ERR_SIZE, "rank %d: %.900s", i, x[i].err);
        }
    *res = x[0].r;
    for (int i = 0; i < n; i++) kiln_comm_destroy(comms[i]);
    free(x);
    return st;
}

/* The checks that take more than one flag (and the environment): 0, or 2 having said why. */
static int train_checks(train_args *a) {
    const tool_command *c = &train_command;
    const gpt_train_options *o = &a->o;
    if (o->model.channels % o->model.heads)
        return kiln_tool_usage(c, "--channels (%d) must be a multiple of --heads (%d)",
                               o->model.channels, o->model.heads);
    if (o->init && o->resume) return kiln_tool_usage(c, "--init and --resume exclude each other");
    /* Under mpirun every process is a rank (MPICH's PMI_SIZE, Open MPI's variable). */
    const char *launched = getenv("PMI_SIZE") ? getenv("PMI_SIZE") : getenv("OMPI_COMM_WORLD_SIZE");
    if (launched && atoi(launched) > 1) a->mpi = true;
    if (a->mpi && a->devices > 1)
        return kiln_tool_usage(c, "--devices and --mpi exclude each other (one replica per "
                                  "process under MPI)");
    if (o->batch % a->devices)
        return kiln_tool_usage(c, "--batch (%d) must split evenly over --devices (%lld)", o->batch,
                               a->devices);
    return 0;
}

/* kiln train once its flags are read and checked. */
static int train_run(const train_args *a) {
    gpt_train_options o = a->o;
    long long threads = a->threads, devices = a->devices;
    double timeout = a->timeout, bucket_mb = a->bucket_mb;
    bool cuda = a->cuda, mpi = a->mpi;
    char err[GPT_ERR_SIZE];
    if (bucket_mb >= 0) o.bucket_bytes = bucket_mb > 0 ? (int64_t)(bucket_mb * 1048576) : -1;
    kiln_context *ctx = make_context("train", (int)threads, cuda ? 1 : (int)devices);
    if (!ctx) return 1;
    int gpus[64], n_gpus = 0;
    for (int i = 0; cuda && i < kiln_device_count(ctx) && n_gpus < 64; i++)
        if (!strncmp(kiln_device_name(ctx, i), "cuda:", 5)) gpus[n_gpus++] = i;
    if (cuda && n_gpus < (mpi ? 1 : devices)) {
        kiln_array *none = NULL; /* asking for the missing device gets the reason it is missing */
        int64_t one = 1;
        if (!n_gpus)
            kiln_array_create_on(ctx, kiln_device_count(ctx), KILN_DTYPE_F32, 1, &one, NULL, &none);
        fprintf(stderr, "kiln train: --device cuda: %d GPU(s) here, %lld wanted%s%s\n", n_gpus,
                mpi ? 1 : devices, n_gpus ? "" : ": ", n_gpus ? "" : kiln_last_error(ctx));
        kiln_context_destroy(ctx);
        return 1;
    }
    o.stop = kiln_tool_stop_flag();
    if (o.out_dir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/model.safetensors", o.out_dir);
        kiln_tool_set_checkpoint_path(path);
    }
    o.progress_is_tty = isatty(fileno(stdout));
    kiln_status st;
    gpt_train_result r;
    if (mpi) {
        kiln_comm *comm = NULL;
        if ((st = kiln_comm_create_mpi(ctx, timeout, &comm))) {
            fprintf(stderr, "kiln train: --mpi: %s\n", kiln_last_error(ctx));
            kiln_context_destroy(ctx);
            return 1;
        }
        int rank = kiln_comm_get_rank(comm);
        kiln_comm *nccl = NULL; /* --device cuda: gradients over NCCL, MPI carried its id */
        if (cuda &&
            (st = kiln_comm_create_nccl_rank(ctx, comm, gpus[rank % n_gpus], timeout, &nccl))) {
            fprintf(stderr, "kiln train: rank %d: --device cuda: %s\n", rank, kiln_last_error(ctx));
            if (kiln_comm_get_size(comm) > 1) kiln_comm_abort(comm, 1);
            kiln_comm_destroy(comm);
            kiln_context_destroy(ctx);
            return 1;
        }
        o.comm = nccl ? nccl : comm;
        o.device = nccl ? gpus[rank % n_gpus] : 0;
        o.progress = rank ? NULL : stdout;
        if (!rank)
            print_recipe(&o, kiln_comm_get_size(comm),
                         nccl ? "MPI processes, GPUs over NCCL" : "MPI processes");
        st = gpt_train(ctx, &o, &r, err);
        if (st) {
            fprintf(stderr, "kiln train: rank %d: %s\n", rank, err);
            /* the other ranks would wait for this one until their timeout: end them now */
            if (kiln_comm_get_size(comm) > 1) kiln_comm_abort(comm, 1);
        }
        kiln_comm_destroy(nccl);
        kiln_comm_destroy(comm);
    } else if (devices > 1) {
        st = train_devices(ctx, &o, (int)devices, timeout, cuda ? gpus : NULL, &r, err);
    } else {
        o.device = cuda ? gpus[0] : 0;
        o.progress = stdout;
        print_recipe(&o, 1, NULL);
        st = gpt_train(ctx, &o, &r, err);
    }
    kiln_context_destroy(ctx);
    if (st) {
        if (!mpi) fprintf(stderr, "kiln train: %s\n", err);
        return 1;
    }
    if (!r.interrupted) return 0;
    if (o.progress)
        printf("interrupted after step %lld of %lld: saved %s/model.safetensors (continue with "
               "--resume)\n",
               (long long)r.steps_done, (long long)o.steps, o.out_dir);
    /* a rank of an MPI run can stop because another one was signalled */
    return 128 + (*o.stop ? *o.stop : SIGINT);
}

int kiln_tool_train(int argc, char **argv) {
    train_args a = {.bucket_mb = -1};
    gpt_train_options *op = &a.o;
    gpt_train_defaults(op);
    if (train_defaults_agree() || kiln_tool_flags_defaults(&train_command, &a)) return 2;
    char err[GPT_ERR_SIZE];
    /* Before any thread is made (the first context's below): they all inherit the mask. */
    if (kiln_tool_block_stop_signals()) {
        fprintf(stderr, "kiln train: cannot start the thread that takes SIGINT and SIGTERM\n");
        return 1;
    }

    /* A resumed run takes its recipe from the checkpoint; flags given with --resume must
     * agree with it (gpt_train says which one does not). So --resume is read first. */
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--resume") && i + 1 < argc)
            v = argv[i + 1];
        else if (!strncmp(argv[i], "--resume=", 9))
            v = argv[i] + 9;
        if (!v) continue;
        kiln_context *ctx = make_context("train", 1, 0);
        if (!ctx) return 1;
        kiln_status st = gpt_checkpoint_read_options(ctx, v, op, err);
        kiln_context_destroy(ctx);
        if (st) {
            fprintf(stderr, "kiln train: --resume: %s\n", err);
            return 1;
        }
        op->resume = v;
    }
    int rc = kiln_tool_flags_parse(&train_command, argc, argv, 2, &a);
    if (rc) return rc == KILN_TOOL_HELP ? 0 : rc;
    return train_checks(&a) ? 2 : train_run(&a);
}

int kiln_tool_sample(int argc, char **argv) {
    sample_args a = {0};
    if (kiln_tool_flags_defaults(&sample_command, &a)) return 2;
    int rc = kiln_tool_flags_parse(&sample_command, argc, argv, 2, &a);
    if (rc) return rc == KILN_TOOL_HELP ? 0 : rc;
    gpt_sample_options o = a.o;
    long long threads = a.threads;
    kiln_context *ctx = make_context("sample", (int)threads, 0);
    if (!ctx) return 1;
    unsigned char *out = malloc((size_t)o.length + 1);
    char err[GPT_ERR_SIZE];
    kiln_status st = out ? gpt_sample(ctx, &o, out, err) : KILN_STATUS_HOST_OOM;
    if (!out) snprintf(err, sizeof err, "out of host memory");
    kiln_context_destroy(ctx);
    if (st) {
        free(out);
        fprintf(stderr, "kiln sample: %s\n", err);
        return 1;
    }
    fputs(o.prompt, stdout);
    fwrite(out, 1, (size_t)o.length, stdout);
    putchar('\n');
    free(out);
    return 0;
}
