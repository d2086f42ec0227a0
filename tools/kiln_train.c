/* kiln_train.c — `kiln train` and `kiln sample`: command-line flags onto models/gpt
 * (gpt_train, gpt_sample), nothing more. docs/training.md documents the flags.
 *
 * Exit status: 0 done, 1 a runtime error (a file that cannot be read, a bad checkpoint, a
 * kiln error: the message says which), 2 a usage error (unknown flag, missing value, bad
 * number), 130 / 143 stopped by SIGINT / SIGTERM after the step in progress, saved
 * (tools/stop_signals.c). */
#include "kiln_train.h"

#include "gpt.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char train_usage[] =
    "usage: kiln train [flags]\n"
    "  --data FILE          the corpus (any file: bytes); default "
    "/usr/share/common-licenses/GPL-3\n"
    "  --layers N           transformer blocks (default 2)\n"
    "  --heads N            attention heads (4)\n"
    "  --channels N         width C, a multiple of heads (128)\n"
    "  --context N          sequence length T (64)\n"
    "  --batch N            sequences per step B (16)\n"
    "  --steps N            training steps (1000)\n"
    "  --lr X               peak learning rate of AdamW (3e-3)\n"
    "  --warmup N           linear warmup steps (30), then the schedule\n"
    "  --schedule S         after the warmup: cosine (default), linear or constant\n"
    "  --min-lr X           the rate cosine and linear decay to (default lr/10)\n"
    "  --beta1 X, --beta2 X AdamW's moment decays (0.9, 0.95)\n"
    "  --eps X              AdamW's epsilon (1e-8)\n"
    "  --weight-decay X     AdamW decay of the matrices (0.1)\n"
    "  --clip X             clip gradients to global norm X (default: no clipping)\n"
    "  --seed N             initialisation and batches (1337)\n"
    "  --threads N          kiln's threads (default: all cores)\n"
    "  --out DIR            losses.csv, summary.json, loss.svg, plan.svg, model.safetensors\n"
    "                       (default kiln-train)\n"
    "  --eval-every N       validation loss every N steps (100; 0: never)\n"
    "  --save-every N       checkpoint every N steps (default: at the end only)\n"
    "  --resume FILE        continue a run from its checkpoint (same losses as never stopping)\n"
    "  --init FILE          start from these parameters (safetensors, names as docs/training.md)\n"
    "  --batches FILE       training batches from a raw int32 file [steps, batch, context+1]\n"
    "  --memory-budget X    the step's peak device memory at most X bytes (64MiB, 2GB) or X%\n"
    "                       of its peak without recomputation (50%): kiln recomputes\n"
    "                       activations in the backward pass to fit (docs/memory.md)\n"
    "  --remat POLICY       each block a checkpoint region of POLICY: nothing_saveable,\n"
    "                       dots_saveable, dots_with_no_batch_dims_saveable,\n"
    "                       everything_saveable, save_only_these_names:qkv,attn,mlp_fc\n"
    "                       or save_any_names_but_these:NAMES (docs/memory.md)\n"
    "  --no-summary         leave the summary out of the output (it is still written to\n"
    "                       DIR/summary.txt)\n"
    "data parallel (docs/scaling.md): --batch is the global batch, split over the ranks\n"
    "  --devices N          N replicas in this process, one device and thread each\n"
    "  --device cpu|cuda    what the replicas run on (cpu): cuda puts rank r on GPU cuda:r\n"
    "                       (cuda:(r mod GPUs) under MPI) and all-reduces over NCCL\n"
    "  --mpi                one replica per MPI process (implied under mpirun -np N > 1)\n"
    "  --comm-timeout X     a rank that waits X seconds for the others fails (60)\n"
    "  --check-every N      compare the ranks' parameter hashes every N steps (100)\n"
    "  --bucket-mb X        gradients per all-reduce, in MiB (0: one per gradient; default\n"
    "                       25 over MPI, 0 for --devices)\n"
    "  --no-overlap         finish each all-reduce before the next kernel, instead of\n"
    "                       running the rest of the backward pass while it is in flight\n";

static const char sample_usage[] =
    "usage: kiln sample [flags] [CHECKPOINT]\n"
    "  --checkpoint FILE    the model (default kiln-train/model.safetensors)\n"
    "  --prompt TEXT        the text to continue (default: a newline)\n"
    "  --length N           bytes to generate (300)\n"
    "  --temperature X      0: always the likeliest byte (0.8)\n"
    "  --top-k N            draw among the N likeliest (40; 0: all)\n"
    "  --seed N             (1)\n"
    "  --threads N          kiln's threads (default 1: a byte is ~100 tiny kernels, which\n"
    "                       handing to a pool only slows)\n";

static int usage_error(const char *cmd, const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "kiln %s: ", cmd);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(kiln %s --help lists the flags)\n", cmd);
    return 2;
}

/* Edit distance with adjacent transpositions (optimal string alignment): "mpl" is one
 * typo from "mlp". Names longer than 64 bytes are never close. */
static size_t edit_distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b), d[65][65];
    if (na > 64 || nb > 64) return SIZE_MAX;
    for (size_t i = 0; i <= na; i++) d[i][0] = i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}

const char *kiln_tool_closest(const char *word, const char *const *names, size_t n) {
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    /* A suggestion further than half the word away is noise, not a typo. */
    size_t len = strlen(word);
    return best && best_d <= (len < 4 ? 1 : len / 2) ? best : NULL;
}

/* "unknown flag '--layer'; did you mean --layers?" */
static int unknown_flag(const char *cmd, const char *arg, const char *name,
                        const char *const *names, size_t n) {
    const char *near = kiln_tool_closest(name, names, n);
    fprintf(stderr, "kiln %s: unknown flag '%s'", cmd, arg);
    if (near) fprintf(stderr, "; did you mean %s?", near);
    fprintf(stderr, "\n(kiln %s --help lists the flags)\n", cmd);
    return 2;
}

static bool parse_long(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

bool kiln_tool_parse_bytes(const char *s, uint64_t *bytes, double *fraction) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0)) return false;
    *bytes = 0, *fraction = 0;
    if (!strcmp(end, "%")) {
        if (v > 100) return false;
        *fraction = v / 100;
        return true;
    }
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1},          {"B", 1},
                 {"K", 1024},      {"KB", 1e3},
                 {"KiB", 1024},    {"M", 1 << 20},
                 {"MB", 1e6},      {"MiB", 1 << 20},
                 {"G", 1 << 30},   {"GB", 1e9},
                 {"GiB", 1 << 30}, {"T", 1099511627776.0},
                 {"TB", 1e12},     {"TiB", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix)) {
            double b = v * units[i].scale;
            if (b < 1 || b > 1.8e19) return false;
            *bytes = (uint64_t)b;
            return true;
        }
    return false;
}

/* Flags take their value as the next argument or after '='. */
typedef struct flag_iter {
    int argc, i;
    char **argv;
    const char *cmd;
    char name[64];
    const char *value;
} flag_iter;

/* Advances to the next argument: 1 a flag (name, value filled lazily), 0 a positional,
 * -1 the end. */
static int next_arg(flag_iter *it) {
    if (++it->i >= it->argc) return -1;
    const char *a = it->argv[it->i];
    it->value = NULL;
    if (strncmp(a, "--", 2)) return 0;
    const char *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    if (n >= sizeof it->name) n = sizeof it->name - 1;
    memcpy(it->name, a, n);
    it->name[n] = 0;
    if (eq) it->value = eq + 1;
    return 1;
}

static const char *value_of(flag_iter *it) {
    if (it->value) return it->value;
    if (it->i + 1 >= it->argc) return NULL;
    return it->value = it->argv[++it->i];
}

/* --remat POLICY or POLICY:NAME,NAME (the names policies): each block a checkpoint region
 * of that policy. names receive pointers into buf. Nonzero (having said why) if it is not
 * one. */
static int parse_remat(const char *v, gpt_train_options *o, char *buf, size_t cap,
                       const char **names, int max_names) {
    snprintf(buf, cap, "%s", v);
    char *colon = strchr(buf, ':');
    if (colon) *colon = 0;
    int p = 0;
    while (p <= KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE &&
           strcmp(buf, kiln_checkpoint_policy_name((kiln_checkpoint_policy)p)))
        p++;
    bool named = p == KILN_CHECKPOINT_POLICY_SAVE_ONLY_THESE_NAMES ||
                 p == KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE;
    if (p > KILN_CHECKPOINT_POLICY_SAVE_ANY_NAMES_BUT_THESE || named != (colon != NULL)) {
        fprintf(stderr,
                "kiln train: --remat: '%s' is not a policy: nothing_saveable, "
                "everything_saveable, dots_saveable, dots_with_no_batch_dims_saveable, or "
                "save_only_these_names:NAMES / save_any_names_but_these:NAMES (NAMES: a comma "
                "list of qkv, attn, mlp_fc)\n",
                v);
        return 2;
    }
    int n = 0;
    for (char *t = colon ? strtok(colon + 1, ",") : NULL; t && n < max_names; t = strtok(NULL, ","))
        names[n++] = t;
    o->remat = true, o->remat_policy = (kiln_checkpoint_policy)p;
    o->remat_n_names = n, o->remat_names = n ? names : NULL;
    return 0;
}

static kiln_context *make_context(const char *cmd, int threads, int devices) {
    kiln_context_options co = {.num_threads = threads, .cpu_devices = devices};
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

int kiln_tool_train(int argc, char **argv) {
    gpt_train_options o;
    gpt_train_defaults(&o);
    long long threads = 0, devices = 1;
    double timeout = 60, bucket_mb = -1;
    const char *budget = NULL, *device = "cpu", *schedule = NULL, *remat = NULL;
    char remat_buf[512];
    const char *remat_names[16];
    bool no_summary = false, mpi = false;
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
        kiln_status st = gpt_checkpoint_read_options(ctx, v, &o, err);
        kiln_context_destroy(ctx);
        if (st) {
            fprintf(stderr, "kiln train: --resume: %s\n", err);
            return 1;
        }
        o.resume = v;
    }

    flag_iter it = {.argc = argc, .argv = argv, .i = 1, .cmd = "train"};
    for (int k; (k = next_arg(&it)) >= 0;) {
        if (k == 0 && !strcmp(argv[it.i], "-h")) {
            fputs(train_usage, stdout);
            return 0;
        }
        if (k == 0) return usage_error("train", "unexpected argument '%s'%s", argv[it.i], "");
        const char *f = it.name;
        if (!strcmp(f, "--help")) {
            fputs(train_usage, stdout);
            return 0;
        }
        if (!strcmp(f, "--no-summary")) {
            no_summary = true;
            continue;
        }
        if (!strcmp(f, "--mpi")) {
            mpi = true;
            continue;
        }
        if (!strcmp(f, "--no-overlap")) {
            o.no_overlap = true;
            continue;
        }
        static const struct {
            const char *name;
            long long lo, hi;
        } ints[] = {{"--layers", 1, 1024},
                    {"--heads", 1, 1024},
                    {"--channels", 1, 65536},
                    {"--context", 1, 65536},
                    {"--batch", 1, 1 << 20},
                    {"--steps", 1, GPT_MAX_STEPS},
                    {"--warmup", 0, GPT_MAX_STEPS},
                    {"--seed", 0, LLONG_MAX},
                    {"--threads", 1, 4096},
                    {"--eval-every", 0, GPT_MAX_STEPS},
                    {"--save-every", 0, GPT_MAX_STEPS},
                    {"--devices", 1, 64},
                    {"--check-every", 0, GPT_MAX_STEPS}};
        static const char *const strs[] = {"--data",   "--out",      "--resume",
                                           "--init",   "--batches",  "--memory-budget",
                                           "--device", "--schedule", "--remat"};
        static const struct {
            const char *name;
            double lo, hi;
        } dbls[] = {{"--lr", 1e-12, 10},
                    {"--weight-decay", 0, 10},
                    {"--clip", 0, 10},
                    {"--comm-timeout", 1e-3, 1e6},
                    {"--bucket-mb", 0, 1e6},
                    {"--beta1", 0, 0.999999999999},
                    {"--beta2", 0, 0.999999999999},
                    {"--eps", 1e-30, 1},
                    {"--min-lr", 0, 10}};
        int which = -1, kind = 0;
        for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
            if (!strcmp(f, ints[j].name)) which = (int)j, kind = 1;
        for (size_t j = 0; j < sizeof strs / sizeof strs[0]; j++)
            if (!strcmp(f, strs[j])) which = (int)j, kind = 2;
        for (size_t j = 0; j < sizeof dbls / sizeof dbls[0]; j++)
            if (!strcmp(f, dbls[j].name)) which = (int)j, kind = 3;
        if (which < 0) {
            static const char *const all[] = {
                "--help",         "--no-summary",  "--layers",        "--heads",
                "--channels",     "--context",     "--batch",         "--steps",
                "--warmup",       "--seed",        "--threads",       "--eval-every",
                "--save-every",   "--data",        "--out",           "--resume",
                "--init",         "--batches",     "--memory-budget", "--lr",
                "--weight-decay", "--clip",        "--devices",       "--mpi",
                "--comm-timeout", "--check-every", "--bucket-mb",     "--device",
                "--no-overlap",   "--beta1",       "--beta2",         "--eps",
                "--schedule",     "--min-lr",      "--remat"};
            return unknown_flag("train", argv[it.i], f, all, sizeof all / sizeof all[0]);
        }
        const char *v = value_of(&it);
        if (!v) return usage_error("train", "%s needs a value%s", f, "");
        if (kind == 1) {
            long long x;
            if (!parse_long(v, ints[which].lo, ints[which].hi, &x)) {
                char range[64];
                snprintf(range, sizeof range, " (an integer in [%lld, %lld])", ints[which].lo,
                         ints[which].hi);
                fprintf(stderr, "kiln train: %s: '%s' is not a valid value%s\n", f, v, range);
                return 2;
            }
            /* the int flags (ranges within int), then the 64-bit counts */
            int *small[] = {&o.model.layers, &o.model.heads, &o.model.channels, &o.model.context,
                            &o.batch};
            int64_t *count[] = {&o.steps,      &o.warmup,     NULL, NULL,
                                &o.eval_every, &o.save_every, NULL, &o.check_every};
            if (which < 5)
                *small[which] = (int)x;
            else if (count[which - 5])
                *count[which - 5] = x;
            else if (which == 7)
                o.seed = (uint64_t)x;
            else if (which == 8)
                threads = x;
            else
                devices = x;
        } else if (kind == 2) {
            const char **dst[] = {&o.data, &o.out_dir, &o.resume, &o.init, &o.batches,
                                  &budget, &device,    &schedule, &remat};
            *dst[which] = v;
            if (which == 0) o.data_explicit = true;
        } else {
            double *dst[] = {&o.lr,    &o.weight_decay, &o.clip, &timeout, &bucket_mb,
                             &o.beta1, &o.beta2,        &o.eps,  &o.min_lr};
            if (!parse_double(v, dbls[which].lo, dbls[which].hi, dst[which])) {
                fprintf(stderr,
                        "kiln train: %s: '%s' is not a valid value (a number in [%g, %g])\n", f, v,
                        dbls[which].lo, dbls[which].hi);
                return 2;
            }
        }
    }
    if (o.model.channels % o.model.heads) {
        fprintf(stderr, "kiln train: --channels (%d) must be a multiple of --heads (%d)\n",
                o.model.channels, o.model.heads);
        return 2;
    }
    if (o.init && o.resume)
        return usage_error("train", "--init and --resume exclude each other%s%s", "", "");
    if (schedule) {
        int k = 0;
        while (k <= GPT_SCHEDULE_CONSTANT && strcmp(schedule, gpt_schedule_name(k))) k++;
        if (k > GPT_SCHEDULE_CONSTANT)
            return usage_error("train", "--schedule: '%s' is not cosine, linear or constant%s",
                               schedule, "");
        o.schedule = (gpt_schedule)k;
    }
    if (remat && parse_remat(remat, &o, remat_buf, sizeof remat_buf, remat_names, 16)) return 2;
    if (budget && !kiln_tool_parse_bytes(budget, &o.memory_budget, &o.memory_budget_fraction))
        return usage_error("train",
                           "--memory-budget: '%s' is not a size (bytes such as 64MiB, 2GB, "
                           "1000000, or a share such as 50%%)%s",
                           budget, "");

    /* Under mpirun every process is a rank (MPICH's PMI_SIZE, Open MPI's variable). */
    const char *launched = getenv("PMI_SIZE") ? getenv("PMI_SIZE") : getenv("OMPI_COMM_WORLD_SIZE");
    if (launched && atoi(launched) > 1) mpi = true;
    if (mpi && devices > 1)
        return usage_error("train",
                           "--devices and --mpi exclude each other (one replica per "
                           "process under MPI)%s%s",
                           "", "");
    if (o.batch % devices) {
        fprintf(stderr, "kiln train: --batch (%d) must split evenly over --devices (%lld)\n",
                o.batch, devices);
        return 2;
    }
    bool cuda = !strcmp(device, "cuda");
    if (!cuda && strcmp(device, "cpu"))
        return usage_error("train", "--device: '%s' is neither cpu nor cuda%s", device, "");
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
    o.no_summary = no_summary;
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

int kiln_tool_sample(int argc, char **argv) {
    gpt_sample_options o = {.checkpoint = "kiln-train/model.safetensors",
                            .prompt = "\n",
                            .length = 300,
                            .temperature = 0.8,
                            .top_k = 40,
                            .seed = 1};
    /* One thread: generating a byte runs ~100 kernels of a few microseconds each, and
     * waking pool threads for each cost far more than it saved (300 bytes of the demo's
     * model on one thread and on two of a loaded 2-core machine: docs/training.md;
     * bench/RESULTS.md, "Figures moved out of code comments (2026-12-03)"). */
    long long threads = 1, x = 0; /* x: what the last parse_long read */
    flag_iter it = {.argc = argc, .argv = argv, .i = 1, .cmd = "sample"};
    bool positional = false;
    for (int k; (k = next_arg(&it)) >= 0;) {
        if (k == 0 && !strcmp(argv[it.i], "-h")) {
            fputs(sample_usage, stdout);
            return 0;
        }
        if (k == 0) {
            if (positional)
                return usage_error("sample", "unexpected argument '%s': the checkpoint is '%s'",
                                   argv[it.i], o.checkpoint);
            o.checkpoint = argv[it.i];
            positional = true;
            continue;
        }
        const char *f = it.name;
        if (!strcmp(f, "--help")) {
            fputs(sample_usage, stdout);
            return 0;
        }
        static const char *const known[] = {"--checkpoint", "--prompt", "--length", "--temperature",
                                            "--top-k",      "--seed",   "--threads"};
        int which = -1;
        for (size_t j = 0; j < sizeof known / sizeof known[0]; j++)
            if (!strcmp(f, known[j])) which = (int)j;
        if (which < 0) {
            static const char *const all[] = {"--help",   "--checkpoint",  "--prompt",
                                              "--length", "--temperature", "--top-k",
                                              "--seed",   "--threads"};
            return unknown_flag("sample", argv[it.i], f, all, sizeof all / sizeof all[0]);
        }
        const char *v = value_of(&it);
        if (!v) return usage_error("sample", "%s needs a value%s", f, "");
        bool ok = true;
        switch (which) {
        case 0: o.checkpoint = v; break;
        case 1: o.prompt = v; break;
        case 2: ok = parse_long(v, 0, 1 << 24, &x), o.length = (int)x; break;
        case 3: ok = parse_double(v, 0, 100, &o.temperature); break;
        case 4: ok = parse_long(v, 0, 1 << 20, &x), o.top_k = (int)x; break;
        case 5: ok = parse_long(v, 0, LLONG_MAX, &x), o.seed = (uint64_t)x; break;
        default: ok = parse_long(v, 1, 4096, &threads); break;
        }
        if (!ok) return usage_error("sample", "%s: '%s' is not a valid value", f, v);
    }
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
