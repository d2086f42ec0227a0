/* train.c — the GPT training loop as library code (gpt_train): data and seeded batches,
 * the learning-rate schedule, one compiled training step (forward, kiln_grad, AdamW) with
 * the parameters and the optimiser state donated, validation every N steps, checkpoints,
 * progress, and the files of --out (losses.csv, summary.json, loss.svg, plan.svg).
 *
 * The step is compiled with kiln_compile, not kiln_jit: it has 3P + 1 outputs (P = 12L +
 * 4 parameters: 157 at four layers) and kiln_jit holds at most KILN_MAX_OUTPUTS (64). Its
 * shape never changes during a run, so one compile is all a jit would do anyway.
 *
 * With scan_layers the run holds the stacked layout (P = 16 whatever L: the step's program
 * then has no op per layer); checkpoints stay per layer, the state stacked after loading
 * and unstacked (copies) to save, so scanned and unscanned runs resume each other.
 *
 * Resuming is exact: a checkpoint holds the parameters, both moments, the number of steps
 * done and the batch generator's state, and the step is a pure function of those and the
 * step number, so a resumed run computes the same losses bit for bit as an uninterrupted
 * one (the test suite checks it). The recipe (model, batch, steps, warmup, lr, decay, clip,
 * seed) and the corpus (its path, size and hash) are stored too, and a resumed run uses
 * them: another recipe is refused, except more steps (a finished run can be extended: the
 * schedule then runs over the new total, which the run says), and another corpus only when
 * named on purpose (gpt_train_options.data_explicit).
 *
 * A checkpoint is only ever written from a state whose loss and values are finite, so a
 * diverged step never replaces the last good one; the folder it goes to is checked to be
 * a writable folder before anything else, so a run cannot train for hours and then find it
 * cannot save. */
#include "gpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ms/step is the median of this run's last MEDIAN_WINDOW steps: steady state, in bounded
 * memory, however long the run. */
#define MEDIAN_WINDOW 1001

void gpt_train_defaults(gpt_train_options *o) {
    memset(o, 0, sizeof *o);
    o->model = (gpt_config){.vocab = 256, .context = 64, .layers = 2, .heads = 4, .channels = 128};
    o->batch = 16, o->steps = 1000, o->warmup = 30;
    o->lr = 3e-3, o->weight_decay = 0.1, o->clip = 0;
    o->seed = 1337;
    o->eval_every = 100, o->eval_batches = 4, o->check_every = 100;
    o->out_dir = "kiln-train";
    o->beta1 = 0.9, o->beta2 = 0.95, o->eps = 1e-8;
    o->schedule = GPT_SCHEDULE_COSINE, o->min_lr = NAN;
    o->dtype = KILN_DTYPE_F32, o->loss_scaling = GPT_LOSS_SCALING_AUTO;
    o->loss_scale = 65536, o->loss_scale_growth_interval = 2000;
    o->zero_stage = 2;
}

/* The dtype the model computes in (0: f32). */
static kiln_dtype compute_of(const gpt_train_options *o) {
    return o->dtype ? o->dtype : KILN_DTYPE_F32;
}

/* AUTO resolved: dynamic for f16, none otherwise. */
static gpt_loss_scaling scaling_of(const gpt_train_options *o) {
    if (o->loss_scaling != GPT_LOSS_SCALING_AUTO) return o->loss_scaling;
    return compute_of(o) == KILN_DTYPE_F16 ? GPT_LOSS_SCALING_DYNAMIC : GPT_LOSS_SCALING_NONE;
}

static double first_scale_of(const gpt_train_options *o) {
    return o->loss_scale > 0 ? o->loss_scale : 65536;
}

static int64_t interval_of(const gpt_train_options *o) {
    return o->loss_scale_growth_interval > 0 ? o->loss_scale_growth_interval : 2000;
}

/* The rate the schedule ends at: min_lr, or lr / 10 when it is NaN (the default). */
static double min_lr_of(const gpt_train_options *o) {
    return isnan(o->min_lr) ? 0.1 * o->lr : o->min_lr;
}

static double lr_at(const gpt_train_options *o, int64_t s, int64_t total) {
    return gpt_lr_schedule(s, total, o->warmup, o->lr, min_lr_of(o), o->schedule);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* mkdir -p */
static kiln_status make_dirs(const char *dir, char *err) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        gpt_errf(err, "the output folder name is too long");
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    for (char *p = path + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = 0;
        if (mkdir(path, 0777) && errno != EEXIST) {
            gpt_errf(err, "cannot make the folder '%s': %s", path, strerror(errno));
            return KILN_STATUS_IO;
        }
        if (!c) break;
        *p = c;
    }
    return KILN_STATUS_OK;
}

/* --out must be a folder this process can create files in (a regular file of that name, a
 * read-only file system or a folder of another user would only fail the final save). */
static kiln_status check_out_dir(const char *dir, char *err) {
    kiln_status st = make_dirs(dir, err);
    if (st) return st;
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
        gpt_errf(err, "the output folder '%s' is not a folder", dir);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.kiln-write-check-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        gpt_errf(err, "cannot write in the output folder '%s': %s", dir, strerror(errno));
        return KILN_STATUS_IO;
    }
    close(fd);
    unlink(probe);
    return KILN_STATUS_OK;
}

static void human_bytes(uint64_t b, char *out, size_t n) {
    if (b >= (1u << 30))
        snprintf(out, n, "%.2f GiB", (double)b / (1u << 30));
    else if (b >= (1u << 20))
        snprintf(out, n, "%.1f MiB", (double)b / (1u << 20));
    else
        snprintf(out, n, "%.1f KiB", (double)b / 1024);
}

/* --------------------------------------------------------------- state ---- */

typedef struct run {
    kiln_context *ctx;
    const gpt_train_options *o;
    gpt_config cfg;
    int P, B, T;
    bool stacked;         /* state in the stacked layout (scan_layers): P = 16 */
    int GB;               /* the global batch: B on each of the `ranks` replicas */
    int rank, ranks, dev; /* data parallel: this replica, how many, its device */
    kiln_comm *comm;      /* NULL: one replica */
    /* ZeRO (gpt_train_options.shard_optimizer): the replicas the moments are sharded over
     * (0: not sharded); m and v in state are then this rank's flat shards
     * (gpt_zero_shard), the parameters whole */
    int zero, zero_stage;
    bool saves;         /* the run writes checkpoints (rank 0's out_dir): every rank gathers */
    kiln_array **state; /* params, m, v: 3P */
    kiln_executable *step, *eval;
    gpt_data data;
    char data_path[4200];    /* the corpus as the checkpoint records it ("": the default) */
    FILE *batches;           /* the --batches file, or NULL */
    int out_lock;            /* the output folder, open and locked for this run (-1: none) */
    char batches_path[4200]; /* its absolute path, as the checkpoint records it ("": none) */
    uint64_t bhash;          /* FNV-1a over the bytes of its steps [0, bhashed) */
    int64_t bhashed;
    uint64_t rng;
    int64_t done; /* steps done */
    /* Loss scaling (gpt_step_spec): updates applied (done less the skipped steps of the
     * whole run), the scale and its counter of finite steps, steps skipped by this run. */
    gpt_loss_scaling scaling; /* resolved: never AUTO */
    int64_t applied, skipped;
    float scale;
    int32_t good;
    int micro;                    /* the step's micro-batches (gpt_step_spec) */
    char micro_why[600];          /* why there are several when the budget chose it, or "" */
    bool off_opt, off_params;     /* state kept in pinned_host memory (gpt_step_spec) */
    char offload_why[200];        /* why, when the budget chose it, or "" */
    int64_t n_rec;                /* steps run by this run */
    double ms_win[MEDIAN_WINDOW]; /* the last steps' times, a ring */
    gpt_log log;                  /* losses.csv */
    double last_print;            /* when the progress line was last drawn (now_ms) */
    char *err;
} run;

/* The median of the times in the window. */
static double median_ms(const run *r) {
    int n = r->n_rec < MEDIAN_WINDOW ? (int)r->n_rec : MEDIAN_WINDOW;
    if (!n) return 0;
    double sorted[MEDIAN_WINDOW];
    memcpy(sorted, r->ms_win, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    return sorted[n / 2];
}

static void state_free(run *r) {
    if (!r->state) return;
    for (int i = 0; i < 3 * r->P; i++) kiln_array_destroy(r->state[i]);
    free(r->state);
    r->state = NULL;
}

static kiln_status batches_hash_to(run *r, int64_t upto);
static kiln_status same_batches(run *r, kiln_safetensors *f, int64_t done);

static kiln_status save_moments(run *r, const char *path, kiln_array **mv) {
    char step[24], seed[24], rng[24], batch[24], steps[24], warm[24], lr[32], wd[32], clip[32];
    char dbytes[24], dhash[24], b1[32], b2[32], eps[32], minlr[32], bhash[24] = "";
    char ls0[32], lsi[24], lsn[32], lsg[24], applied[24];
    snprintf(step, sizeof step, "%lld", (long long)r->done);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->o->seed);
    snprintf(rng, sizeof rng, "%llu", (unsigned long long)r->rng);
    snprintf(batch, sizeof batch, "%d", r->GB);
    snprintf(steps, sizeof steps, "%lld", (long long)r->o->steps);
    snprintf(warm, sizeof warm, "%lld", (long long)r->o->warmup);
    snprintf(lr, sizeof lr, "%.17g", r->o->lr);
    snprintf(wd, sizeof wd, "%.17g", r->o->weight_decay);
    snprintf(clip, sizeof clip, "%.17g", r->o->clip);
    snprintf(dbytes, sizeof dbytes, "%lld", (long long)r->data.n);
    snprintf(dhash, sizeof dhash, "%016llx", (unsigned long long)r->data.hash);
    snprintf(b1, sizeof b1, "%.17g", r->o->beta1);
    snprintf(b2, sizeof b2, "%.17g", r->o->beta2);
    snprintf(eps, sizeof eps, "%.17g", r->o->eps);
    snprintf(minlr, sizeof minlr, "%.17g", min_lr_of(r->o));
    snprintf(ls0, sizeof ls0, "%.17g", first_scale_of(r->o));
    snprintf(lsi, sizeof lsi, "%lld", (long long)interval_of(r->o));
    snprintf(lsn, sizeof lsn, "%.9g", (double)r->scale);
    snprintf(lsg, sizeof lsg, "%d", (int)r->good);
    snprintf(applied, sizeof applied, "%lld", (long long)r->applied);
    /* the log covers at least the steps of the checkpoint */
    kiln_status st = gpt_log_flush(&r->log, r->err);
    if (!st) st = batches_hash_to(r, r->done);
    if (st) return st;
    if (r->batches) snprintf(bhash, sizeof bhash, "%016llx", (unsigned long long)r->bhash);
    const char *kv[] = {
        "step", step, "seed", seed, "rng_state", rng, "batch", batch, "steps", steps, "warmup",
        warm, "lr", lr, "weight_decay", wd, "clip", clip, "data", r->data_path, "data_bytes",
        dbytes, "data_hash", dhash, "beta1", b1, "beta2", b2, "eps", eps, "schedule",
        gpt_schedule_name(r->o->schedule), "min_lr", minlr,
        /* mixed precision: the recipe, then the loss scale's state */
        "dtype", kiln_dtype_name(compute_of(r->o)), "loss_scaling",
        gpt_loss_scaling_name(r->scaling), "loss_scale_init", ls0, "loss_scale_growth_interval",
        lsi, "loss_scale", lsn, "loss_scale_good_steps", lsg, "optimizer_steps", applied,
        /* the batches file ("": the corpus's seeded draws) and its steps' fingerprint */
        "batches", r->batches_path, "batches_hash", bhash};
    int n_kv = (int)(sizeof kv / sizeof kv[0]) / 2, Pu = gpt_num_params(&r->cfg);
    if (!r->stacked)
        return gpt_checkpoint_save(r->ctx, path, &r->cfg, r->state, mv, mv + r->P, n_kv, kv,
                                   r->err);
    /* the file is per layer whatever the run holds */
    kiln_array **per = calloc((size_t)(3 * Pu), sizeof *per);
    if (!per) {
        gpt_errf(r->err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    for (int k = 0; k < 3 && !st; k++)
        st = gpt_params_unstack(r->ctx, &r->cfg, k ? mv + (k - 1) * r->P : r->state, per + k * Pu,
                                r->err);
    if (!st)
        st = gpt_checkpoint_save(r->ctx, path, &r->cfg, per, per + Pu, per + 2 * Pu, n_kv, kv,
                                 r->err);
    for (int i = 0; i < 3 * Pu; i++) kiln_array_destroy(per[i]);
    free(per);
    return st;
}

/* --------------------------------------------------------------- ZeRO ---- */

/* Parameter i's elements and shape in the run's layout. */
static int64_t param_shape(const run *r, int i, int *rank, int64_t *dims) {
    char name[GPT_NAME_MAX];
    dims[0] = dims[1] = dims[2] = 1;
    gpt_param_info_layout(&r->cfg, r->stacked, i, name, rank, dims);
    return dims[0] * (*rank > 1 ? dims[1] : 1) * (*rank > 2 ? dims[2] : 1);
}

/* Checkpoints hold whole moments whatever the run: a sharded run cuts its rank's shard out
 * of each loaded (or zero) moment, replacing it in state (gpt_zero_shard's layout). */
static kiln_status shard_moments(run *r) {
    kiln_status st = KILN_STATUS_OK;
    for (int i = r->P; i < 3 * r->P && !st; i++) {
        int rank;
        int64_t dims[3], n = param_shape(r, i % r->P, &rank, dims);
        int64_t sh = gpt_zero_shard(n, r->zero), lo = r->rank * sh;
        float *whole = calloc((size_t)(r->zero * sh), sizeof *whole);
        if (!whole) {
            gpt_errf(r->err, "out of host memory");
            return KILN_STATUS_HOST_OOM;
        }
        kiln_array *a = NULL;
        st = kiln_array_copy_to_host(r->state[i], whole, (size_t)n * sizeof *whole);
        if (!st) st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_F32, 1, &sh, whole + lo, &a);
        free(whole);
        if (st) {
            gpt_errf(r->err, "sharding the optimiser state: %s", kiln_last_error(r->ctx));
            return st;
        }
        kiln_array_destroy(r->state[i]);
        r->state[i] = a;
    }
    return st;
}

/* The whole moments of a sharded run, into mv (2P arrays on this rank's device, in the
 * run's layout): every rank's shards all-gathered (a collective: every rank calls it at
 * the same save points), cut back to each parameter's shape. */
static kiln_status gather_moments(run *r, kiln_array **mv) {
    kiln_status st = KILN_STATUS_OK;
    for (int i = r->P; i < 3 * r->P && !st; i++) {
        int rank;
        int64_t dims[3], n = param_shape(r, i % r->P, &rank, dims);
        int64_t sh = gpt_zero_shard(n, r->zero);
        float *buf = malloc((size_t)(r->zero + 1) * (size_t)sh * sizeof *buf);
        if (!buf) {
            gpt_errf(r->err, "out of host memory");
            return KILN_STATUS_HOST_OOM;
        }
        float *all = buf + sh;
        st = kiln_array_copy_to_host(r->state[i], buf, (size_t)sh * sizeof *buf);
        if (!st) st = kiln_comm_all_gather(r->comm, KILN_DTYPE_F32, buf, all, sh);
        if (!st)
            st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_F32, rank, dims, all,
                                      &mv[i - r->P]);
        free(buf);
        if (st) gpt_errf(r->err, "gathering the optimiser state: %s", kiln_last_error(r->ctx));
    }
    return st;
}

/* A save point, reached by every rank alike: path is rank 0's file (NULL on the others,
 * which only take part in gathering a sharded run's moments). */
static kiln_status save(run *r, const char *path) {
    if (!r->zero) return path ? save_moments(r, path, r->state + r->P) : KILN_STATUS_OK;
    kiln_array **mv = calloc((size_t)(2 * r->P), sizeof *mv);
    if (!mv) {
        gpt_errf(r->err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    kiln_status st = gather_moments(r, mv);
    if (!st && path) st = save_moments(r, path, mv);
    for (int i = 0; i < 2 * r->P; i++) kiln_array_destroy(mv[i]);
    free(mv);
    return st;
}

/* A resumed run is checked to train on the corpus its checkpoint records (size and hash; a
 * checkpoint from before they were recorded is not checked). Another file is refused
 * unless it was named on purpose, and then said once. */
static kiln_status same_corpus(run *r, kiln_safetensors *f) {
    const char *b = kiln_safetensors_get_metadata(f, "data_bytes");
    const char *h = kiln_safetensors_get_metadata(f, "data_hash");
    if (!b || !h) return KILN_STATUS_OK;
    char now[24];
    snprintf(now, sizeof now, "%016llx", (unsigned long long)r->data.hash);
    if (atoll(b) == r->data.n && !strcmp(h, now)) return KILN_STATUS_OK;
    const char *was = kiln_safetensors_get_metadata(f, "data");
    const char *is = r->o->data && *r->o->data ? r->o->data
                     : r->data_path[0]         ? r->data_path /* the recorded file, changed */
                                               : "the default corpus";
    was = was && *was ? was : "the default corpus";
    if (r->o->data_explicit) {
        if (r->o->progress)
            fprintf(r->o->progress,
                    "note: resuming on %s (%lld bytes), not on the corpus the run trained on "
                    "(%s, %s bytes), as --data asks\n",
                    is, (long long)r->data.n, was, b);
        return KILN_STATUS_OK;
    }
    if (!strcmp(was, is))
        gpt_errf(r->err,
                 "%s: the run trained on %s (%s bytes, hash %s), which has changed since (now "
                 "%lld bytes, hash %s): give --data FILE to resume on it as it is, on purpose",
                 r->o->resume, was, b, h, (long long)r->data.n, now);
    else
        gpt_errf(r->err,
                 "%s: the run trained on %s (%s bytes, hash %s); %s is another file (%lld "
                 "bytes, hash %s): give --data FILE to resume on another corpus on purpose",
                 r->o->resume, was, b, h, is, (long long)r->data.n, now);
    return KILN_STATUS_INVALID_ARGUMENT;
}

/* Metadata `key` of the checkpoint a run resumes into buf ("" when absent); false when the
 * file has no such key (or cannot be opened: loading it says why). */
static bool resume_meta(run *r, const char *key, char *buf, size_t size) {
    kiln_safetensors *f;
    buf[0] = 0;
    if (!r->o->resume || kiln_safetensors_open(r->ctx, r->o->resume, &f)) return false;
    const char *v = kiln_safetensors_get_metadata(f, key);
    if (v) snprintf(buf, size, "%s", v);
    kiln_safetensors_close(f);
    return v != NULL;
}

/* The corpus a run reads: the one named, else the one a resumed checkpoint records, else
 * the default. r->data_path receives it as a checkpoint records it: an absolute path, or
 * "" for the default. */
static kiln_status load_corpus(run *r) {
    const gpt_train_options *o = r->o;
    bool named = o->data && *o->data, recorded = !named && o->resume;
    if (recorded) { /* the checkpoint's corpus, already absolute ("": the default) */
        resume_meta(r, "data", r->data_path, sizeof r->data_path);
    } else if (named) {
        char real[PATH_MAX];
        snprintf(r->data_path, sizeof r->data_path, "%s", realpath(o->data, real) ? real : o->data);
    }
    kiln_status st = gpt_data_load(r->ctx, named ? o->data : r->data_path, r->T, &r->data, r->err);
    if (st && recorded && r->data_path[0]) {
        char why[GPT_ERR_SIZE];
        snprintf(why, sizeof why, "%s", r->err);
        gpt_errf(r->err, "%s: the corpus the run trained on: %.900s (give --data FILE)", o->resume,
                 why);
    }
    return st;
}

/* A resumed run's loss-scale state and update count (a checkpoint from before they were
 * recorded skipped no step: its updates are its steps). */
static kiln_status read_scale_state(run *r, kiln_safetensors *f, long long done) {
    const char *keys[3] = {"optimizer_steps", "loss_scale", "loss_scale_good_steps"};
    double v[3] = {(double)done, r->scale, r->good};
    for (int i = 0; i < 3; i++) {
        const char *t = kiln_safetensors_get_metadata(f, keys[i]);
        if (!t) continue;
        char *end = NULL;
        double x = strtod(t, &end);
        bool ok = end != t && !*end && (i == 1 ? x > 0 && x <= FLT_MAX : x >= 0 && x <= done);
        if (!ok) {
            gpt_errf(r->err, "%s: metadata '%s' is '%s'; want a number in %s", r->o->resume,
                     keys[i], t, i == 1 ? "(0, 3.4e38]" : "[0, the steps done]");
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        v[i] = x;
    }
    r->applied = (int64_t)v[0], r->scale = (float)v[1], r->good = (int32_t)v[2];
    return KILN_STATUS_OK;
}

/* --init FILE names no tensor the model lacks (a file of another model's shape, whose
 * extra layers would be dropped unsaid): every tensor is a parameter, or a moment of one
 * (opt.m.NAME, opt.v.NAME: a training checkpoint). Its parameters are checked by loading. */
static kiln_status init_names_known(run *r) {
    kiln_safetensors *f;
    if (kiln_safetensors_open(r->ctx, r->o->init, &f)) {
        gpt_errf(r->err, "%s", kiln_last_error(r->ctx));
        return KILN_STATUS_IO;
    }
    int n = kiln_safetensors_count(f), P = gpt_num_params(&r->cfg), unknown = 0;
    char first[GPT_NAME_MAX + 16] = "", more[40] = "";
    for (int i = 0; i < n; i++) {
        const char *name = kiln_safetensors_name(f, i), *base = name;
        if (!strncmp(base, "opt.m.", 6) || !strncmp(base, "opt.v.", 6)) base += 6;
        bool known = false;
        for (int p = 0; p < P && !known; p++) {
            char want[GPT_NAME_MAX];
            int rank;
            int64_t dims[2];
            gpt_param_info(&r->cfg, p, want, &rank, dims);
            known = !strcmp(base, want);
        }
        if (!known && !unknown++) snprintf(first, sizeof first, "%s", name);
    }
    kiln_safetensors_close(f);
    if (!unknown) return KILN_STATUS_OK;
    if (unknown > 1) snprintf(more, sizeof more, " (and %d more)", unknown - 1);
    gpt_errf(r->err,
             "%s: tensor '%s'%s is not one of this model's (%d layers, %d channels, context "
             "%d): --init takes the parameters of a model of the same shape",
             r->o->init, first, more, r->cfg.layers, r->cfg.channels, r->cfg.context);
    return KILN_STATUS_INVALID_ARGUMENT;
}

/* A recipe's number as the checkpoint holds it (printed to 17 digits) and as given now: the
 * same up to the last digits of a decimal the user typed (--min-lr 0.0003 against lr / 10
 * computed, 0.00030000000000000003). */
static bool same_number(double a, double b) {
    return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* The parameters and moments a run starts from, per layer into state (3 gpt_num_params
 * arrays): a checkpoint, an --init file or the seeded initialisation. */
static kiln_status load_per_layer(run *r, kiln_array **state) {
    const gpt_train_options *o = r->o;
    int P = gpt_num_params(&r->cfg);
    kiln_status st;
    /* host offload's state made in host memory from the start, so that the device never
     * holds it whole (it may not fit: that is why it is offloaded); where it is stacked,
     * sharded or on another device, it moves later (state_to_kinds) */
    bool direct = r->dev == 0 && !r->stacked && !r->zero;
    kiln_memory_kind host = KILN_MEMORY_PINNED_HOST, dev = KILN_MEMORY_DEVICE;
    const kiln_memory_kind kinds[3] = {direct && r->off_params ? host : dev,
                                       direct && r->off_opt ? host : dev,
                                       direct && r->off_opt ? host : dev};
    if (o->resume) {
        gpt_train_options saved = *o;
        if ((st = gpt_checkpoint_read_options(r->ctx, o->resume, &saved, r->err))) return st;
        const char *what = NULL;
        if (memcmp(&saved.model, &o->model, sizeof o->model))
            what = "model shape (vocab, context, layers, heads, channels)";
        else if (saved.batch != o->batch)
            what = "batch";
        else if (saved.warmup != o->warmup)
            what = "warmup";
        else if (!same_number(saved.lr, o->lr))
            what = "lr";
        else if (!same_number(saved.weight_decay, o->weight_decay))
            what = "weight decay";
        else if (!same_number(saved.clip, o->clip))
            what = "clip";
        else if (saved.seed != o->seed)
            what = "seed";
        else if (!same_number(saved.beta1, o->beta1) || !same_number(saved.beta2, o->beta2))
            what = "beta1 or beta2";
        else if (!same_number(saved.eps, o->eps))
            what = "eps";
        else if (saved.schedule != o->schedule)
            what = "schedule";
        else if (!same_number(min_lr_of(&saved), min_lr_of(o)))
            what = "min lr";
        else if (compute_of(&saved) != compute_of(o))
            what = "dtype";
        else if (scaling_of(&saved) != scaling_of(o) ||
                 (scaling_of(o) != GPT_LOSS_SCALING_NONE &&
                  !same_number(first_scale_of(&saved), first_scale_of(o))) ||
                 (scaling_of(o) == GPT_LOSS_SCALING_DYNAMIC &&
                  interval_of(&saved) != interval_of(o)))
            what = "loss scaling";
        if (what) {
            gpt_errf(r->err,
                     "%s: the run to resume used another %s; a resumed run continues the same "
                     "run (leave the flag out to take the checkpoint's)",
                     o->resume, what);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        if ((st = gpt_checkpoint_load_in(r->ctx, o->resume, &r->cfg, kinds, state, state + P,
                                         state + 2 * P, r->err)))
            return st;
        kiln_safetensors *f;
        if ((st = kiln_safetensors_open(r->ctx, o->resume, &f))) {
            gpt_errf(r->err, "%s", kiln_last_error(r->ctx));
            return st;
        }
        const char *sv = kiln_safetensors_get_metadata(f, "step");
        const char *rv = kiln_safetensors_get_metadata(f, "rng_state");
        char *e1 = NULL, *e2 = NULL;
        errno = 0;
        long long s = sv ? strtoll(sv, &e1, 10) : -1;
        unsigned long long rs = rv ? strtoull(rv, &e2, 10) : 0;
        bool ok = sv && rv && !*e1 && !*e2 && e1 != sv && e2 != rv && !errno && s >= 0 &&
                  s <= GPT_MAX_STEPS;
        if (ok && s > saved.steps) {
            kiln_safetensors_close(f);
            gpt_errf(r->err,
                     "%s: metadata 'step' (%lld, the steps done) is past 'steps' (%lld, the "
                     "run's length): the file contradicts itself",
                     o->resume, s, (long long)saved.steps);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        if (ok && s > o->steps) { /* before the batches' hash reads that many steps */
            kiln_safetensors_close(f);
            gpt_errf(r->err,
                     "%s: the run has done %lld steps; --steps %lld would end it before that "
                     "(give at least %lld)",
                     o->resume, s, (long long)o->steps, s);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        if (ok) st = same_corpus(r, f);
        if (ok && !st) st = same_batches(r, f, s);
        if (ok && !st) st = read_scale_state(r, f, s);
        kiln_safetensors_close(f);
        if (!ok) {
            gpt_errf(r->err, "%s: metadata 'step' or 'rng_state' missing or not a number in range",
                     o->resume);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        if (st) return st;
        r->done = s, r->rng = rs;
        if (saved.steps != o->steps && o->progress)
            fprintf(o->progress,
                    "%s the run from %lld to %lld steps: the learning rate now follows the "
                    "schedule over %lld steps (%.3g at step %lld, where it was %.3g)\n",
                    o->steps > saved.steps ? "extending" : "shortening", (long long)saved.steps,
                    (long long)o->steps, (long long)o->steps, lr_at(o, s, o->steps), s + 1,
                    lr_at(o, s, saved.steps));
        return KILN_STATUS_OK;
    }
    if (o->init && !(st = init_names_known(r)))
        st = gpt_checkpoint_load_in(r->ctx, o->init, &r->cfg, kinds, state, NULL, NULL, r->err);
    else if (o->init)
        return st;
    else
        st = gpt_init_params_in(r->ctx, &r->cfg, KILN_DTYPE_F32, o->seed, kinds[0], state, r->err);
    if (st) return st;
    for (int i = 0; i < P && !st; i++) {
        int rank;
        int64_t dims[2];
        char name[GPT_NAME_MAX];
        gpt_param_info(&r->cfg, i, name, &rank, dims);
        for (int k = 1; k < 3 && !st; k++)
            if ((st = kiln_array_create_in_memory(r->ctx, r->dev, kinds[k], KILN_DTYPE_F32, rank,
                                                  dims, NULL, &state[k * P + i])))
                gpt_errf(r->err, "optimiser state of %s: %s", name, kiln_last_error(r->ctx));
    }
    r->rng = o->seed;
    return st;
}

/* The state the run holds: per layer as loaded, or stacked from it (scan_layers). */
static kiln_status load_state(run *r) {
    int Pu = gpt_num_params(&r->cfg), P = r->P;
    r->state = calloc((size_t)(3 * P), sizeof *r->state);
    kiln_array **per = r->stacked ? calloc((size_t)(3 * Pu), sizeof *per) : r->state;
    if (!r->state || !per) {
        if (per != r->state) free(per);
        gpt_errf(r->err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    kiln_status st = load_per_layer(r, per);
    if (!r->stacked) return st;
    for (int k = 0; k < 3 && !st; k++)
        st = gpt_params_stack(r->ctx, &r->cfg, per + k * Pu, r->state + k * P, r->err);
    for (int i = 0; i < 3 * Pu; i++) kiln_array_destroy(per[i]);
    free(per);
    return st;
}

/* Checkpoints and the initialisation make arrays on device 0; a replica on another device
 * moves its state there. */
static kiln_status state_to_device(run *r) {
    for (int i = 0; r->dev && i < 3 * r->P; i++) {
        kiln_array *a = r->state[i], *b = NULL;
        if (kiln_array_device(a) == r->dev) continue;
        kiln_status st = kiln_array_copy_to_device(a, r->dev, &b);
        if (st) {
            gpt_errf(r->err, "moving the state to device %d: %s", r->dev, kiln_last_error(r->ctx));
            return st;
        }
        kiln_array_destroy(a);
        r->state[i] = b;
    }
    return KILN_STATUS_OK;
}

/* The state where the step keeps it: the moments (off_opt) and parameters (off_params)
 * moved to the device's pinned_host memory. */
static kiln_status state_to_kinds(run *r) {
    for (int i = 0; i < 3 * r->P; i++) {
        bool host = i < r->P ? r->off_params : r->off_opt;
        kiln_array *a = r->state[i], *b = NULL;
        if (!host || kiln_array_memory_kind(a) == KILN_MEMORY_PINNED_HOST) continue;
        kiln_status st = kiln_array_copy_to_memory(a, KILN_MEMORY_PINNED_HOST, &b);
        if (st) {
            gpt_errf(r->err, "moving the %s to host memory: %s",
                     i < r->P ? "parameters" : "optimiser state", kiln_last_error(r->ctx));
            return st;
        }
        kiln_array_destroy(a);
        r->state[i] = b;
    }
    return KILN_STATUS_OK;
}

/* FNV-1a over the bytes of every parameter (host copies). */
static kiln_status params_hash(run *r, uint64_t *out) {
    uint64_t h = GPT_FNV_START;
    for (int i = 0; i < r->P; i++) {
        size_t n = kiln_array_nbytes(r->state[i]);
        unsigned char *b = malloc(n ? n : 1);
        if (!b) {
            gpt_errf(r->err, "out of host memory");
            return KILN_STATUS_HOST_OOM;
        }
        kiln_status st = kiln_array_copy_to_host(r->state[i], b, n);
        if (!st) h = gpt_fnv1a(h, b, n);
        free(b);
        if (st) {
            gpt_errf(r->err, "hashing the parameters: %s", kiln_last_error(r->ctx));
            return st;
        }
    }
    *out = h;
    return KILN_STATUS_OK;
}

/* Every replica must hold the same parameters: the largest hash and the smallest (the
 * largest of the negated 62-bit hashes) agree only when all do. */
static kiln_status check_replicas(run *r, int step) {
    uint64_t h;
    kiln_status st = params_hash(r, &h);
    if (st) return st;
    int64_t mine[2] = {(int64_t)(h >> 2), -(int64_t)(h >> 2)}, all[2];
    if ((st = kiln_comm_all_reduce(r->comm, KILN_DTYPE_I64, KILN_REDUCE_MAX, mine, all, 2))) {
        gpt_errf(r->err, "step %d: comparing the parameters across ranks: %s", step,
                 kiln_last_error(r->ctx));
        return st;
    }
    if (all[0] == -all[1]) return KILN_STATUS_OK;
    gpt_errf(r->err,
             "step %d: the parameters of the %d ranks differ (rank %d's hash %016llx; the "
             "largest %016llx, the smallest %016llx): the replicas diverged, so the run stops "
             "(a transport that does not give every rank the same sum, or ranks that ran "
             "different programs or data)",
             step, r->ranks, r->rank, (unsigned long long)(h >> 2), (unsigned long long)all[0],
             (unsigned long long)-all[1]);
    return KILN_STATUS_INTERNAL;
}

/* Buckets pay where a call has a latency (between processes, hosts); threads of one
 * process meet in microseconds, and there the bucket's copy cost more than it saved
 * (bench/RESULTS.md, "Data parallel"). */
static uint64_t bucket_bytes(const run *r) {
    if (r->o->bucket_bytes) return r->o->bucket_bytes < 0 ? 0 : (uint64_t)r->o->bucket_bytes;
    return strcmp(kiln_comm_get_kind(r->comm), "local") ? (uint64_t)25 << 20 : 0;
}

/* --remat: each block a checkpoint region of the run's policy. */
static void remat_block(kiln_graph *g, int layer, bool begin, void *user) {
    const gpt_train_options *o = user;
    (void)layer;
    if (begin)
        kiln_checkpoint_begin(g, o->remat_policy, o->remat_n_names, o->remat_names);
    else
        kiln_checkpoint_end(g);
}

/* Traces and compiles the training step with micro micro-batches into r->step; recompute:
 * each block a nothing_saveable checkpoint region where the run asked for none (the
 * recomputation inside a micro-batch, which the budget's search over the step cannot reach:
 * it plans the loop of micro-batches as one step). budget: the budget in bytes (0: the
 * run's own, a fraction resolved against this step); br receives what its search found. */
static kiln_status compile_step(run *r, int micro, bool recompute, uint64_t budget,
                                kiln_budget_result *br) {
    kiln_graph *g;
    kiln_status st;
    if ((st = kiln_graph_create(r->ctx, "gpt_train_step", &g))) {
        gpt_errf(r->err, "%s", kiln_last_error(r->ctx));
        return st;
    }
    gpt_step_spec spec = {.batch = r->B,
                          .seq = r->T,
                          .weight_decay = r->o->weight_decay,
                          .clip = r->o->clip,
                          .all_reduce = r->ranks > 1,
                          .bucket_bytes = bucket_bytes(r),
                          .beta1 = r->o->beta1,
                          .beta2 = r->o->beta2,
                          .eps = r->o->eps,
                          .compute = compute_of(r->o),
                          .loss_scaling = r->scaling,
                          .growth_interval = interval_of(r->o),
                          .scan_layers = r->o->scan_layers,
                          .stacked = r->stacked,
                          .fused_attention = r->o->fused_attention,
                          .micro_batches = micro,
                          .shard_ranks = r->zero,
                          .zero_stage = r->zero_stage,
                          .offload_optimizer = r->off_opt,
                          .offload_params = r->off_params};
    gpt_train_options all = *r->o;
    if (recompute && !all.remat && !all.scan_layers)
        all.remat = true, all.remat_policy = KILN_CHECKPOINT_POLICY_NOTHING_SAVEABLE,
        all.remat_n_names = 0, all.remat_names = NULL;
    gpt_block_hook hook = {remat_block, &all};
    if (all.remat) spec.hook = &hook;
    st = gpt_trace_step(g, &r->cfg, KILN_DTYPE_F32, &spec, r->err);
    if (!st) {
        int *donate = malloc((size_t)(3 * r->P) * sizeof *donate);
        if (!donate) {
            kiln_graph_destroy(g);
            gpt_errf(r->err, "out of host memory");
            return KILN_STATUS_HOST_OOM;
        }
        for (int i = 0; i < 3 * r->P; i++) donate[i] = i;
        /* --memory-budget: kiln recomputes forward values in the backward pass until the
         * step's planned peak fits (docs/memory.md, rematerialisation). */
        kiln_compile_options co = {
            .n_donate = 3 * r->P,
            .donate_argnums = donate,
            .memory_budget = budget ? budget : r->o->memory_budget,
            .memory_budget_fraction = budget ? 0 : r->o->memory_budget_fraction,
            .activation_memory_budget = budget ? 0 : r->o->activation_memory_budget,
            .budget_result = br,
            .budget_offload = r->o->offload ? 1 : 0,
            .device = r->dev,
            .comm = r->comm,
            .disable_overlap = r->o->no_overlap,
            /* the plan's SVG, written with the other files at the end */
            .keep_ir = r->o->out_dir != NULL};
        st = kiln_compile(g, &co, &r->step);
        free(donate);
        if (st) gpt_errf(r->err, "compiling the training step: %s", kiln_last_error(r->ctx));
    }
    kiln_graph_destroy(g);
    return st;
}

/* The step, split into micro-batches when a budget recomputation alone cannot meet: the
 * fewest of 2, 4, 8, ... that divide the batch and fit, each tried as it is and then with
 * every block recomputed inside the micro-batch (gradient accumulation is exact up to
 * rounding; recomputation is tried first, as it leaves the step's math as it is). */
static kiln_status compile_step_fitting(run *r) {
    const gpt_train_options *o = r->o;
    r->micro = o->micro_batches > 0 ? o->micro_batches : 1;
    r->micro_why[0] = r->offload_why[0] = 0;
    r->off_params = o->offload_params;
    r->off_opt = o->offload_optimizer || o->offload_params;
    kiln_budget_result first = {0}, br;
    kiln_status st = compile_step(r, r->micro, false, 0, &first);
    bool budgeted =
        o->memory_budget || o->memory_budget_fraction > 0 || o->activation_memory_budget > 0;
    if (st != KILN_STATUS_DEVICE_OOM || !budgeted || o->micro_batches > 0) return st;
    /* the budget in bytes as the whole step resolved it: a fraction means the unsplit
     * step's peak, whatever the split */
    uint64_t budget = first.budget_bytes;
    if (!budget) return st; /* the failure was not the budget's */
    char need[32], have[32];
    human_bytes(first.min_peak_bytes, need, sizeof need);
    human_bytes(budget, have, sizeof have);
    uint64_t best = first.min_peak_bytes;
    /* Then the state to host memory (ZeRO-Offload): the AdamW moments, then the parameters
     * too. Each costs copies of the state over the host link per step, which is less than
     * splitting the batch costs, and leaves the step's math as it is. */
    while (!r->off_params && !(r->off_opt && r->zero)) {
        if (r->off_opt)
            r->off_params = true;
        else
            r->off_opt = true;
        snprintf(r->offload_why, sizeof r->offload_why,
                 "recomputation alone reaches %s, above the budget of %s", need, have);
        st = compile_step(r, r->micro, false, budget, &br);
        if (st == KILN_STATUS_DEVICE_OOM && br.min_peak_bytes && br.min_peak_bytes < best)
            best = br.min_peak_bytes;
        if (st != KILN_STATUS_DEVICE_OOM) return st;
    }
    int best_k = 1;
    for (int k = 2; k <= r->B && r->B % k == 0; k *= 2)
        for (int rc = 0; rc < 2; rc++) {
            if (rc && (o->remat || o->scan_layers)) continue; /* the blocks recompute already */
            st = compile_step(r, k, rc, budget, &br);
            if (st == KILN_STATUS_DEVICE_OOM && br.min_peak_bytes && br.min_peak_bytes < best)
                best = br.min_peak_bytes, best_k = k;
            if (st == KILN_STATUS_DEVICE_OOM) continue;
            if (!st) {
                r->micro = k;
                snprintf(r->micro_why, sizeof r->micro_why,
                         "recomputation alone reaches %s, above the budget of %s%s", need, have,
                         rc ? "; each block is recomputed inside the micro-batch" : "");
            }
            return st;
        }
    char low[32];
    human_bytes(best, low, sizeof low);
    gpt_errf(r->err,
             "the training step cannot fit the memory budget of %s: recomputation alone reaches "
             "%s, and the lowest planned peak with the batch of %d split into micro-batches "
             "(gradient accumulation, 2, 4, 8, ... of them, blocks recomputed or not%s) is "
             "%s, with %d; the gradients and what stays on the device of the parameters and "
             "AdamW moments are the floor (--memory-budget docs/memory.md). The last try's "
             "plan: %.1200s",
             have, need, r->B,
             r->off_params ? ", parameters and moments in host memory"
             : r->off_opt  ? ", moments in host memory"
                           : "",
             low, best_k, kiln_last_error(r->ctx));
    return st;
}

static kiln_status compile_programs(run *r, double *compile_ms) {
    kiln_graph *g;
    kiln_status st;
    double t0 = now_ms();
    if ((st = compile_step_fitting(r))) return st;
    *compile_ms = now_ms() - t0;
    if (r->o->eval_every <= 0 || r->rank) /* no validation (rank 0 alone validates) */
        return KILN_STATUS_OK;
    if ((st = kiln_graph_create(r->ctx, "gpt_eval", &g))) goto kiln_fail;
    kiln_value *p = malloc((size_t)(r->P + 1) * sizeof *p);
    if (!p) {
        kiln_graph_destroy(g);
        gpt_errf(r->err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    gpt_make_params_in(g, &r->cfg, r->stacked, KILN_DTYPE_F32,
                       r->off_params ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE, p);
    for (int i = 0; i < r->P; i++) p[i] = kiln_memory_put(g, p[i], KILN_MEMORY_DEVICE);
    int64_t bt[2] = {r->GB, r->T};
    kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt);
    kiln_value tgt = kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt);
    /* validated as it trains: in the compute dtype */
    gpt_trace_options to = {.compute = compute_of(r->o),
                            .scan_layers = r->o->scan_layers,
                            .stacked = r->stacked,
                            .fused_attention = r->o->fused_attention};
    kiln_value loss = gpt_loss_with(g, &r->cfg, p, idx, tgt, &to);
    free(p);
    kiln_compile_options eo = {.device = r->dev};
    if ((st = kiln_graph_finish(g, 1, &loss)) || (st = kiln_compile(g, &eo, &r->eval)))
        gpt_errf(r->err, "compiling the evaluation: %s", kiln_last_error(r->ctx));
    kiln_graph_destroy(g);
    *compile_ms = now_ms() - t0;
    return st;
kiln_fail:
    gpt_errf(r->err, "%s", kiln_last_error(r->ctx));
    return st;
}

/* Fills tok [GB, T+1] with the (global) training batch of step s: every replica draws the
 * whole batch, so the generator's state stays the same on all of them. */
static kiln_status next_batch(run *r, int64_t s, int32_t *tok) {
    size_t n = (size_t)r->GB * (size_t)(r->T + 1);
    if (!r->batches) {
        gpt_data_batch(&r->data, false, &r->rng, r->GB, r->T, tok);
        return KILN_STATUS_OK;
    }
    if (fseeko(r->batches, (off_t)s * (off_t)n * 4, SEEK_SET) ||
        fread(tok, 4, n, r->batches) != n) {
        gpt_errf(r->err, "%s: cannot read the batch of step %lld", r->batches_path, (long long)s);
        return KILN_STATUS_IO;
    }
    unsigned char *b = (unsigned char *)tok; /* the file is little-endian */
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                     (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
        int32_t v = (int32_t)u;
        if (v < 0 || v >= r->cfg.vocab) {
            gpt_errf(r->err, "%s: step %lld holds token %d, outside [0, %d)", r->batches_path,
                     (long long)s, v, r->cfg.vocab);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        tok[i] = v;
    }
    return KILN_STATUS_OK;
}

/* Splits this replica's B rows of tok [ranks * B, T+1] (all of them with one replica, and
 * for validation) into idx and targets arrays. */
static kiln_status batch_arrays(run *r, const int32_t *tok, int B, kiln_array **idx,
                                kiln_array **tgt) {
    int T = r->T;
    int32_t *buf = malloc((size_t)(2 * B * T) * sizeof *buf);
    if (!buf) {
        gpt_errf(r->err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            buf[b * T + t] = tok[b * (T + 1) + t];
            buf[B * T + b * T + t] = tok[b * (T + 1) + t + 1];
        }
    int64_t d[2] = {B, T};
    *idx = *tgt = NULL;
    kiln_status st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_I32, 2, d, buf, idx);
    if (!st) st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_I32, 2, d, buf + B * T, tgt);
    if (st) {
        gpt_errf(r->err, "%s", kiln_last_error(r->ctx));
        kiln_array_destroy(*idx), *idx = NULL;
    }
    free(buf);
    return st;
}

/* The mean loss over the same eval_batches validation batches every time. */
static kiln_status evaluate(run *r, double *out) {
    int nb = r->o->eval_batches > 0 ? r->o->eval_batches : 4;
    uint64_t rng = r->o->seed ^ 0x76616c6964617465ull; /* "validate" */
    int32_t *tok = malloc((size_t)r->GB * (size_t)(r->T + 1) * sizeof *tok);
    kiln_array **args = malloc((size_t)(r->P + 2) * sizeof *args);
    kiln_status st = KILN_STATUS_OK;
    double sum = 0;
    if (!tok || !args) {
        gpt_errf(r->err, "out of host memory");
        st = KILN_STATUS_HOST_OOM;
    }
    for (int k = 0; k < nb && !st; k++) {
        gpt_data_batch(&r->data, true, &rng, r->GB, r->T, tok);
        for (int i = 0; i < r->P; i++) args[i] = r->state[i];
        if ((st = batch_arrays(r, tok, r->GB, &args[r->P], &args[r->P + 1]))) break;
        kiln_array *loss;
        float l = 0;
        st = kiln_executable_run(r->eval, r->P + 2, args, 1, &loss);
        if (!st) {
            st = kiln_array_copy_to_host(loss, &l, sizeof l);
            kiln_array_destroy(loss);
        }
        if (st) gpt_errf(r->err, "validation: %s", kiln_last_error(r->ctx));
        kiln_array_destroy(args[r->P]), kiln_array_destroy(args[r->P + 1]);
        sum += l;
    }
    free(tok), free(args);
    *out = sum / nb;
    return st;
}

/* ------------------------------------------------------------- outputs ---- */

static kiln_status write_text(run *r, const char *name, const char *text) {
    if (!text) {
        gpt_errf(r->err, "out of host memory writing %s", name);
        return KILN_STATUS_HOST_OOM;
    }
    gpt_out out;
    FILE *f = gpt_out_open(r->o->out_dir, name, &out, r->err);
    if (!f) return KILN_STATUS_IO;
    fputs(text, f);
    return gpt_out_close(f, &out, r->err);
}

/* ---------------------------------------------------------------- loop ---- */

/* Draws the progress line when it is due; true if it did (the log is flushed with it). */
static bool progress(run *r, int64_t s, double loss, double val, uint64_t planned,
                     uint64_t measured, bool final) {
    FILE *p = r->o->progress;
    if (!p) return false;
    int every = r->o->print_every > 0 ? r->o->print_every : 10;
    bool tty = r->o->progress_is_tty;
    if (!tty && !final && s % every && isnan(val)) return false;
    /* A terminal line is redrawn at most ten times a second (small models run thousands of
     * steps a second). */
    double t = now_ms();
    if (tty && !final && isnan(val) && t - r->last_print < 100) return false;
    r->last_print = t;
    double ms_med = median_ms(r);
    char pl[32], me[32], v[32] = "", eta[32] = "";
    human_bytes(planned, pl, sizeof pl), human_bytes(measured, me, sizeof me);
    if (!isnan(val)) snprintf(v, sizeof v, " | val %.4f", val);
    double left = ms_med * (double)(r->o->steps - s) / 1e3;
    if (!final) snprintf(eta, sizeof eta, " | ETA %.0f s", left);
    fprintf(p,
            "%sstep %*lld/%lld | loss %.4f%s | %.1f ms/step | %.0f tok/s | peak %s planned, %s "
            "measured%s%s",
            tty ? "\r\033[K" : "", (int)snprintf(NULL, 0, "%lld", (long long)r->o->steps),
            (long long)s, (long long)r->o->steps, loss, v, ms_med,
            ms_med > 0 ? r->GB * r->T / (ms_med / 1e3) : 0, pl, me, eta,
            tty && !final && isnan(val) ? "" : "\n");
    fflush(p);
    return true;
}

static void summary(run *r, FILE *p, const gpt_train_result *res, const kiln_memory_analysis *ma,
                    const kiln_executable_info *si, const kiln_executable_info *ei) {
    if (!p) return;
    char b[8][32];
    static const kiln_memory_class cls[] = {
        KILN_MEMORY_CLASS_PARAMETER,       KILN_MEMORY_CLASS_GRADIENT,
        KILN_MEMORY_CLASS_OPTIMIZER_STATE, KILN_MEMORY_CLASS_ACTIVATION,
        KILN_MEMORY_CLASS_TEMPORARY,       KILN_MEMORY_CLASS_INPUT,
        KILN_MEMORY_CLASS_OUTPUT};
    static const char *const label[] = {"parameters",        "gradients",   "optimiser state",
                                        "saved activations", "temporaries", "inputs (batch)",
                                        "outputs (loss)"};
    fprintf(p, "\nmodel: %d layers, %d heads, %d channels, context %d: %lld parameters (%.2f M)\n",
            r->cfg.layers, r->cfg.heads, r->cfg.channels, r->cfg.context, (long long)res->params,
            (double)res->params / 1e6);
    if (compute_of(r->o) != KILN_DTYPE_F32)
        fprintf(p,
                "mixed precision: computed in %s; parameters, gradients and AdamW moments "
                "f32\n",
                kiln_dtype_name(compute_of(r->o)));
    if (r->scaling != GPT_LOSS_SCALING_NONE)
        fprintf(p, "loss scaling: %s, scale %g at the end, %lld step%s skipped in this run\n",
                gpt_loss_scaling_name(r->scaling), (double)r->scale, (long long)r->skipped,
                r->skipped == 1 ? "" : "s");
    if (r->off_opt)
        fprintf(p, "host offload: the AdamW moments%s kept in pinned_host memory%s%s\n",
                r->off_params ? " and the parameters" : "", r->offload_why[0] ? ": " : "",
                r->offload_why);
    if (r->micro > 1)
        fprintf(p, "gradient accumulation: %d micro-batches of %d rows%s%s\n", r->micro,
                r->B / r->micro, r->micro_why[0] ? ": " : "", r->micro_why);
    fprintf(p, "training step: %d kernels; memory at the planned peak (step %d of %d), by class:\n",
            si->num_kernels, ma->peak_step, ma->num_steps);
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof cls / sizeof cls[0]; i++) {
        human_bytes(ma->class_bytes_at_peak[cls[i]], b[0], sizeof b[0]);
        human_bytes(ma->class_bytes_total[cls[i]], b[1], sizeof b[1]);
        fprintf(p, "  %-18s %11s   (%s over the step, if nothing shared memory)\n", label[i], b[0],
                b[1]);
        sum += ma->class_bytes_at_peak[cls[i]];
    }
    human_bytes(ma->peak_bytes - (sum < ma->peak_bytes ? sum : ma->peak_bytes), b[0], sizeof b[0]);
    fprintf(p, "  %-18s %11s\n", "arena gaps", b[0]);
    if (r->zero) /* the memory report names the sharded optimiser state */
        fprintf(p,
                "  (the optimiser state is this rank's 1/%d shard of the AdamW moments: ZeRO-%d, "
                "--shard-optimizer)\n",
                r->zero, r->zero_stage);
    human_bytes(res->planned_peak_bytes, b[0], sizeof b[0]);
    human_bytes(res->measured_peak_bytes, b[1], sizeof b[1]);
    fprintf(p, "peak device memory: %s planned, %s measured (the allocator's peak during a step)\n",
            b[0], b[1]);
    if (ma->remat_num_recomputed) {
        human_bytes(ma->remat_peak_without, b[0], sizeof b[0]);
        human_bytes(ma->remat_bytes_saved > 0 ? (uint64_t)ma->remat_bytes_saved : 0, b[1],
                    sizeof b[1]);
        fprintf(p,
                "rematerialisation (%s): %d ops recomputed, %s saved of %s, %.1f%% more FLOPs "
                "per step\n",
                ma->remat_strategy, ma->remat_num_recomputed, b[1], b[0],
                100 * ma->remat_flops_share);
    }
    if (ma->num_offloaded) {
        human_bytes(ma->offload_bytes, b[0], sizeof b[0]);
        human_bytes(ma->host_temp_bytes, b[1], sizeof b[1]);
        fprintf(p,
                "host offload: %d activations (%s) wait in pinned_host memory between the "
                "forward and backward passes, a host arena of %s\n",
                ma->num_offloaded, b[0], b[1]);
    }
    fprintf(p, "compile: %.0f ms (step %s%s%s)\n", res->compile_ms,
            si->from_disk_cache ? "from the kernel cache" : "compiled",
            r->eval ? ", evaluation " : "",
            !r->eval              ? ""
            : ei->from_disk_cache ? "from the kernel cache"
                                  : "compiled");
    if (r->n_rec)
        fprintf(p, "time: %.1f ms/step median, %.0f tokens/s; loss %.4f -> %.4f",
                res->ms_per_step_median, res->tokens_per_s, res->first_loss, res->final_loss);
    else if (res->interrupted)
        fprintf(p, "no step run: interrupted before the first");
    else
        fprintf(p, "no step run: the checkpoint had done all %lld steps",
                (long long)res->steps_done);
    if (!isnan(res->final_val_loss)) fprintf(p, ", validation %.4f", res->final_val_loss);
    fprintf(p,
            "\nfiles: %s/{losses.csv, summary.txt, summary.json, loss.svg, plan.svg, "
            "model.safetensors}\n",
            r->o->out_dir);
    fflush(p);
}

/* A number, or null where there is none (JSON has no NaN). */
static void json_num(FILE *f, const char *key, double v, bool last) {
    if (isfinite(v))
        fprintf(f, "  \"%s\": %.6f%s\n", key, v, last ? "" : ",");
    else
        fprintf(f, "  \"%s\": null%s\n", key, last ? "" : ",");
}

/* s as a JSON string (quotes, backslashes and control bytes escaped). */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    fputc('"', f);
}

static kiln_status write_summary_json(run *r, const gpt_train_result *res,
                                      const kiln_memory_analysis *ma,
                                      const kiln_executable_info *si) {
    bool cache_step = si->from_disk_cache;
    gpt_out out;
    FILE *f = gpt_out_open(r->o->out_dir, "summary.json", &out, r->err);
    if (!f) return KILN_STATUS_IO;
    const gpt_train_options *o = r->o;
    fprintf(
        f,
        "{\n  \"layers\": %d, \"heads\": %d, \"channels\": %d, \"context\": %d, \"batch\": %d,\n"
        "  \"steps\": %lld, \"params\": %lld,\n  \"planned_peak_bytes\": %llu,\n"
        "  \"measured_peak_bytes\": %llu,\n  \"compile_ms\": %.1f,\n"
        "  \"step_from_disk_cache\": %s,\n  \"step_kernels\": %d,\n  \"micro_batches\": %d,\n"
        "  \"offload_optimizer\": %s, \"offload_params\": %s,\n",
        r->cfg.layers, r->cfg.heads, r->cfg.channels, r->cfg.context, r->GB,
        (long long)res->steps_done, (long long)res->params,
        (unsigned long long)res->planned_peak_bytes, (unsigned long long)res->measured_peak_bytes,
        res->compile_ms, cache_step ? "true" : "false", si->num_kernels, r->micro,
        r->off_opt ? "true" : "false", r->off_params ? "true" : "false");
    fprintf(f, "  \"data\": {\"path\": ");
    json_str(f, r->data_path);
    fprintf(f, ", \"bytes\": %lld, \"hash\": \"%016llx\"},\n", (long long)r->data.n,
            (unsigned long long)r->data.hash);
    fprintf(f,
            "  \"optimizer\": {\"name\": \"adamw\", \"lr\": %.9g, \"beta1\": %.9g, "
            "\"beta2\": %.9g, \"eps\": %.9g, \"weight_decay\": %.9g, \"clip\": %.9g, "
            "\"warmup\": %lld, \"schedule\": \"%s\", \"min_lr\": %.9g, \"seed\": %llu},\n",
            o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, o->clip, (long long)o->warmup,
            gpt_schedule_name(o->schedule), min_lr_of(o), (unsigned long long)o->seed);
    fprintf(f,
            "  \"remat_policy\": \"%s\", \"memory_budget_bytes\": %llu, "
            "\"remat_strategy\": \"%s\", \"remat_ops_recomputed\": %d, "
            "\"remat_peak_without_bytes\": %llu, \"offloaded_values\": %d, "
            "\"offload_bytes\": %llu, \"host_arena_bytes\": %llu, "
            "\"host_argument_bytes\": %llu,\n",
            o->remat ? kiln_checkpoint_policy_name(o->remat_policy) : "none",
            (unsigned long long)ma->memory_budget, ma->remat_strategy ? ma->remat_strategy : "none",
            ma->remat_num_recomputed, (unsigned long long)ma->remat_peak_without, ma->num_offloaded,
            (unsigned long long)ma->offload_bytes, (unsigned long long)ma->host_temp_bytes,
            (unsigned long long)ma->host_argument_bytes);
    fprintf(f, "  \"dtype\": \"%s\", \"loss_scaling\": \"%s\", \"skipped_steps\": %lld,\n",
            kiln_dtype_name(compute_of(o)), gpt_loss_scaling_name(r->scaling),
            (long long)r->skipped);
    json_num(f, "final_loss_scale", res->final_loss_scale, false);
    json_num(f, "ms_per_step_median", r->n_rec ? res->ms_per_step_median : NAN, false);
    json_num(f, "tokens_per_s", r->n_rec ? res->tokens_per_s : NAN, false);
    json_num(f, "first_loss", res->first_loss, false);
    json_num(f, "final_loss", res->final_loss, false);
    json_num(f, "final_val_loss", res->final_val_loss, false);
    fprintf(f, "  \"memory_at_peak\": {");
    for (int c = 0; c <= KILN_MEMORY_CLASS_TEMPORARY; c++)
        fprintf(f, "%s\"%s\": %llu", c ? ", " : "", kiln_memory_class_name((kiln_memory_class)c),
                (unsigned long long)ma->class_bytes_at_peak[c]);
    /* data parallel: the ranks, and this rank's optimiser state (the moments it holds:
     * 1/N of them with ZeRO, each parameter padded to a multiple of N) */
    uint64_t held = 0;
    for (int i = 0; i < r->P; i++) {
        int rank;
        int64_t dims[3], n = param_shape(r, i, &rank, dims);
        held += 2 * sizeof(float) * (uint64_t)gpt_zero_shard(n, r->zero ? r->zero : 1);
    }
    fprintf(
        f, "},\n  \"ranks\": %d, \"zero_stage\": %d, \"optimizer_state_bytes_per_rank\": %llu\n}\n",
        r->ranks, r->zero ? r->zero_stage : 0, (unsigned long long)held);
    return gpt_out_close(f, &out, r->err);
}

static kiln_status check_options(const gpt_train_options *o, char *err) {
    kiln_status st = gpt_config_check(&o->model, err);
    if (st) return st;
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps > 0) ||
        !(isnan(o->min_lr) || o->min_lr >= 0) ||
        (unsigned)o->schedule > (unsigned)GPT_SCHEDULE_CONSTANT) {
        gpt_errf(err,
                 "gpt_train: beta1 (%g) and beta2 (%g) must be in [0, 1), eps (%g) > 0, min lr "
                 "(%g) >= 0 (NaN: lr / 10), the schedule one of gpt_schedule (%d)",
                 o->beta1, o->beta2, o->eps, o->min_lr, (int)o->schedule);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->batch < 1 || o->steps < 1 || o->steps > GPT_MAX_STEPS || o->warmup < 0 ||
        o->warmup > GPT_MAX_STEPS || !(o->lr > 0) || !(o->weight_decay >= 0) || !(o->clip >= 0)) {
        gpt_errf(err,
                 "gpt_train: batch (%d) must be >= 1, steps (%lld) in [1, %lld], warmup (%lld) "
                 "in [0, %lld], lr (%g) > 0, weight decay (%g) and clip (%g) >= 0",
                 o->batch, (long long)o->steps, GPT_MAX_STEPS, (long long)o->warmup, GPT_MAX_STEPS,
                 o->lr, o->weight_decay, o->clip);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->remat && o->scan_layers) {
        gpt_errf(err, "gpt_train: remat and scan_layers together: a scanned block is recomputed "
                      "in the backward pass already (docs/control_flow.md)");
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    kiln_dtype dt = compute_of(o);
    if (dt != KILN_DTYPE_F32 && dt != KILN_DTYPE_BF16 && dt != KILN_DTYPE_F16) {
        gpt_errf(err, "gpt_train: dtype %s; the model trains in f32, bf16 or f16",
                 kiln_dtype_name(dt));
        return KILN_STATUS_DTYPE;
    }
    if ((unsigned)o->loss_scaling > (unsigned)GPT_LOSS_SCALING_DYNAMIC ||
        !(o->loss_scale >= 0 && o->loss_scale <= FLT_MAX) || o->loss_scale_growth_interval < 0 ||
        o->loss_scale_growth_interval > INT32_MAX) {
        gpt_errf(err,
                 "gpt_train: the loss scaling must be one of gpt_loss_scaling (%d), the loss "
                 "scale (%g) in [0, 3.4e38] (0: 65536), the growth interval (%lld) in [0, "
                 "2^31 - 1] (0: 2000)",
                 (int)o->loss_scaling, o->loss_scale, (long long)o->loss_scale_growth_interval);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->shard_optimizer && o->offload_params) {
        gpt_errf(err, "gpt_train: offload_params (--offload-params) is not supported with "
                      "shard_optimizer (--shard-optimizer): offload the optimiser state alone "
                      "(--offload-optimizer)");
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->shard_optimizer && (o->zero_stage < 0 || o->zero_stage > 2)) {
        gpt_errf(err, "gpt_train: shard_optimizer needs zero_stage 1 or 2 (0: 2), not %d",
                 o->zero_stage);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->shard_optimizer && scaling_of(o) != GPT_LOSS_SCALING_NONE) {
        gpt_errf(err,
                 "gpt_train: shard_optimizer (--shard-optimizer) needs no loss scaling, and dtype "
                 "%s has %s loss scaling: a skipped step would need every rank's verdict, which "
                 "the sharded step does not gather yet (bf16 needs none: --dtype bf16)",
                 kiln_dtype_name(compute_of(o)), gpt_loss_scaling_name(scaling_of(o)));
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->model.vocab != 256) {
        gpt_errf(err, "gpt_train: the corpus is bytes, so vocab must be 256 (not %d)",
                 o->model.vocab);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    return KILN_STATUS_OK;
}

/* --batches: a regular file of exactly [steps, batch, context + 1] int32. A resumed run
 * without --batches reads the file its checkpoint records, as it does the corpus. */
static kiln_status open_batches(run *r) {
    const gpt_train_options *o = r->o;
    if (o->batches && *o->batches) {
        char real[PATH_MAX];
        snprintf(r->batches_path, sizeof r->batches_path, "%s",
                 realpath(o->batches, real) ? real : o->batches);
    } else if (!resume_meta(r, "batches", r->batches_path, sizeof r->batches_path) ||
               !r->batches_path[0]) {
        r->batches_path[0] = 0;
        return KILN_STATUS_OK; /* batches drawn from the corpus */
    }
    const char *path = r->batches_path;
    int64_t size = 0, want;
    kiln_status st = gpt_open_regular(path, "the batches file", &r->batches, &size, r->err);
    if (st) {
        if (!o->batches) { /* the recorded file */
            char why[GPT_ERR_SIZE];
            snprintf(why, sizeof why, "%s", r->err);
            gpt_errf(r->err, "%s: the batches the run trained on: %.900s (give --batches FILE)",
                     o->resume, why);
        }
        return st;
    }
    bool over = __builtin_mul_overflow(o->steps, (int64_t)r->GB * (r->T + 1) * 4, &want);
    if (over || size != want) {
        gpt_errf(r->err,
                 "the batches file '%s' has %lld bytes; [steps %lld, batch %d, context + 1 "
                 "%d] int32 is %s%lld",
                 path, (long long)size, (long long)o->steps, r->GB, r->T + 1,
                 over ? "more than " : "", over ? (long long)INT64_MAX : (long long)want);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    return KILN_STATUS_OK;
}

/* Extends r->bhash, the batches file's fingerprint, over its steps up to `upto` (the steps a
 * checkpoint has trained on): reads only the steps not hashed yet, so a run reads its file
 * once more in all, however often it saves. */
static kiln_status batches_hash_to(run *r, int64_t upto) {
    if (!r->batches) return KILN_STATUS_OK;
    size_t n = (size_t)r->GB * (size_t)(r->T + 1) * 4;
    unsigned char *b = r->bhashed < upto ? malloc(n) : NULL;
    if (r->bhashed < upto && !b) {
        gpt_errf(r->err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    if (!r->bhashed) r->bhash = GPT_FNV_START;
    for (int64_t s = r->bhashed; s < upto; s++) {
        if (fseeko(r->batches, (off_t)s * (off_t)n, SEEK_SET) || fread(b, 1, n, r->batches) != n) {
            free(b);
            gpt_errf(r->err, "%s: cannot read the batch of step %lld", r->batches_path,
                     (long long)s);
            return KILN_STATUS_IO;
        }
        r->bhash = gpt_fnv1a(r->bhash, b, n);
    }
    free(b);
    if (r->bhashed < upto) r->bhashed = upto;
    return KILN_STATUS_OK;
}

/* A resumed run trains on the batches its checkpoint records (a checkpoint from before
 * they were recorded is not checked): the corpus's seeded draws, or a batches file whose
 * steps done so far hold the same bytes (a longer file extends the run). */
static kiln_status same_batches(run *r, kiln_safetensors *f, int64_t done) {
    const char *was = kiln_safetensors_get_metadata(f, "batches");
    const char *h = kiln_safetensors_get_metadata(f, "batches_hash");
    if (!was) return KILN_STATUS_OK;
    if (!*was && r->batches) {
        gpt_errf(r->err,
                 "%s: the run trained on batches drawn from its corpus; --batches %s would "
                 "train the rest on others (start a new run to train on the file)",
                 r->o->resume, r->batches_path);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (!*was) return KILN_STATUS_OK;
    kiln_status st = batches_hash_to(r, done);
    if (st) return st;
    char now[24];
    snprintf(now, sizeof now, "%016llx", (unsigned long long)r->bhash);
    if (h && !strcmp(h, now)) return KILN_STATUS_OK;
    gpt_errf(r->err,
             "%s: the batches file %s differs from the one the run trained on (%s) in its "
             "first %lld steps (hash %s, not %s): give --batches the file the run trained on",
             r->o->resume, r->batches_path, was, (long long)done, now, h ? h : "missing");
    return KILN_STATUS_INVALID_ARGUMENT;
}

/* Refuses, before a byte of state is allocated, a run whose step cannot fit the device:
 * the plan's peak holds the parameters, both moments, the batch and the step's
 * temporaries. */
static kiln_status check_fits(run *r, const kiln_memory_analysis *ma) {
    kiln_memory_stats ms;
    if (kiln_device_get_memory_stats(r->ctx, r->dev, &ms) || !ms.bytes_limit) return KILN_STATUS_OK;
    kiln_memory_analysis ea = {0};
    if (r->eval) kiln_executable_get_memory_analysis(r->eval, &ea);
    /* ZeRO: the moments are a shard (1/N, up to padding) */
    uint64_t nsc = (uint64_t)gpt_count_scalars(&r->cfg);
    uint64_t moments = 2 * (r->zero ? (nsc + (uint64_t)r->zero - 1) / (uint64_t)r->zero : nsc);
    /* what of it the device keeps between steps (host offload keeps the rest) */
    uint64_t state = ((r->off_params ? 0 : nsc) + (r->off_opt ? 0 : moments)) * sizeof(float);
    uint64_t eval_extra = ea.temp_bytes + ea.output_bytes;
    uint64_t need = ma->peak_bytes > state + eval_extra ? ma->peak_bytes : state + eval_extra;
    if (need <= ms.bytes_limit) return KILN_STATUS_OK;
    char n[32], l[32], p[32], rest[32];
    human_bytes(need, n, sizeof n), human_bytes(ms.bytes_limit, l, sizeof l);
    human_bytes(state, p, sizeof p);
    human_bytes(need > state ? need - state : 0, rest, sizeof rest);
    /* the limit as --memory-budget reads it: whole MiB, or KiB or bytes below one */
    char hint[32];
    unsigned long long lim = ms.bytes_limit;
    if (lim >= 1u << 20)
        snprintf(hint, sizeof hint, "%lluMiB", lim >> 20);
    else if (lim >= 1024)
        snprintf(hint, sizeof hint, "%lluKiB", lim >> 10);
    else
        snprintf(hint, sizeof hint, "%llu", lim);
    if (state >= ms.bytes_limit)
        gpt_errf(r->err,
                 "the model cannot fit device %d (%s): its parameters and AdamW moments alone "
                 "take %s (3 x %lld f32 values), and the step %s more; no memory budget can go "
                 "below the state: train a smaller model (--layers, --channels)",
                 r->dev, l, p, (long long)gpt_count_scalars(&r->cfg), rest);
    else
        gpt_errf(r->err,
                 "the training step cannot fit device %d (%s): its planned peak is %s "
                 "(parameters and AdamW moments %s, activations and temporaries %s); give "
                 "--memory-budget %s or less to recompute activations instead of keeping "
                 "them (docs/memory.md), or a smaller --batch or --context",
                 r->dev, l, n, p, rest, hint);
    return KILN_STATUS_DEVICE_OOM;
}

/* One training step: s (0-based) from the state in r->state to the next; *loss receives
 * the step's loss, *ms its time. A collective that fails mid-step may have updated donated
 * state in place: *torn says so. */
/* The step's arguments after step and outputs after the loss that loss scaling adds. */
static int scale_args(const run *r) {
    return r->scaling == GPT_LOSS_SCALING_DYNAMIC ? 2 : r->scaling == GPT_LOSS_SCALING_STATIC;
}
static int scale_outs(const run *r) {
    return r->scaling == GPT_LOSS_SCALING_DYNAMIC ? 3 : r->scaling == GPT_LOSS_SCALING_STATIC;
}

/* The rank-0 arguments after the batch: lr, the update's number, the loss scale and its
 * counter (those of them the step takes). */
static kiln_status scalar_args(run *r, int64_t s, kiln_array **a) {
    float lr = (float)lr_at(r->o, s, r->o->steps);
    /* Adam's bias correction is 1 long before the count overflows */
    int32_t t = (int32_t)(r->applied + 1 > INT32_MAX ? INT32_MAX : r->applied + 1);
    kiln_status st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_F32, 0, NULL, &lr, &a[0]);
    if (!st) st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_I32, 0, NULL, &t, &a[1]);
    if (!st && scale_args(r))
        st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_F32, 0, NULL, &r->scale, &a[2]);
    if (!st && scale_args(r) > 1)
        st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_I32, 0, NULL, &r->good, &a[3]);
    int32_t rank = r->rank; /* ZeRO: whose shards this replica updates (after the others) */
    if (!st && r->zero)
        st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_I32, 0, NULL, &rank,
                                  &a[2 + scale_args(r)]);
    return st;
}

/* After a step with loss scaling: the update count, the scale and its counter the step
 * returned (outs after the loss). */
static kiln_status read_scale_outs(run *r, kiln_array **outs) {
    int32_t next = 0;
    kiln_status st = kiln_array_copy_to_host(outs[0], &next, sizeof next);
    if (!st && scale_outs(r) > 1) st = kiln_array_copy_to_host(outs[1], &r->scale, sizeof r->scale);
    if (!st && scale_outs(r) > 1) st = kiln_array_copy_to_host(outs[2], &r->good, sizeof r->good);
    if (st) return st;
    /* next is the number the next update will have: this one's, plus one if it was taken */
    if (next == r->applied + 1) r->skipped++;
    r->applied = next - 1;
    return st;
}

static kiln_status run_step(run *r, int64_t s, int32_t *tok, kiln_array **args, float *loss,
                            double *ms, uint64_t *peak, bool *torn) {
    int P = r->P, nargs = 3 * P + 4 + scale_args(r) + (r->zero > 0),
        nouts = 3 * P + 1 + scale_outs(r);
    kiln_context *ctx = r->ctx;
    kiln_status st = next_batch(r, s, tok);
    if (st) return st;
    for (int i = 0; i < 3 * P; i++) args[i] = r->state[i];
    if ((st = batch_arrays(r, tok + (size_t)r->rank * r->B * (r->T + 1), r->B, &args[3 * P],
                           &args[3 * P + 1])))
        return st;
    for (int i = 3 * P + 2; i < nargs; i++) args[i] = NULL;
    st = scalar_args(r, s, args + 3 * P + 2);
    kiln_memory_stats ms1;
    kiln_array **outs = NULL;
    if (!st) st = kiln_device_reset_peak(ctx, r->dev);
    if (!st && !(outs = calloc((size_t)nouts, sizeof *outs))) st = KILN_STATUS_HOST_OOM;
    double t0 = now_ms();
    if (!st) st = kiln_executable_run(r->step, nargs, args, nouts, outs);
    *ms = now_ms() - t0; /* the enqueue alone when dispatch is asynchronous: set again below */
    for (int i = 3 * P; i < nargs; i++) kiln_array_destroy(args[i]);
    if (st) {
        gpt_errf(r->err, "step %lld: %s", (long long)s + 1,
                 st == KILN_STATUS_HOST_OOM ? "out of host memory" : kiln_last_error(ctx));
        *torn = st == KILN_STATUS_TIMEOUT || st == KILN_STATUS_BACKEND;
        free(outs);
        return st;
    }
    for (int i = 0; i < 3 * P; i++) {
        kiln_array_destroy(r->state[i]); /* consumed by the call */
        r->state[i] = outs[i];
    }
    *loss = NAN;
    st = kiln_array_copy_to_host(outs[3 * P], loss, sizeof *loss);
    /* the loss is the step's last value: with asynchronous dispatch (KILN_ASYNC) the step
     * has run only now, so its time and the allocator's peak are read after it */
    if (!st) st = kiln_device_synchronize(ctx, r->dev);
    *ms = now_ms() - t0;
    kiln_device_get_memory_stats(ctx, r->dev, &ms1);
    if (ms1.peak_bytes_in_use > *peak) *peak = ms1.peak_bytes_in_use;
    if (!st && scale_outs(r))
        st = read_scale_outs(r, outs + 3 * P + 1);
    else if (!st)
        r->applied++; /* without loss scaling every step is an update */
    for (int i = 3 * P; i < nouts; i++) kiln_array_destroy(outs[i]);
    free(outs);
    if (st) gpt_errf(r->err, "step %lld: %s", (long long)s + 1, kiln_last_error(ctx));
    return st;
}

/* The steps from r->done to o->steps. *diverged: the state must not be saved. */
static kiln_status train_loop(run *r, gpt_train_result *res, const kiln_memory_analysis *ma,
                              kiln_array **args, int32_t *tok, bool *diverged) {
    const gpt_train_options *o = r->o;
    kiln_status st = KILN_STATUS_OK;
    const int64_t first = r->done;
    for (int64_t s = first; s < o->steps; s++) {
        int32_t stop = o->stop && *o->stop, any = stop;
        /* a signal reaches the ranks at different steps: they stop together, at the first
         * step any of them saw it */
        if (r->ranks > 1 &&
            (st = kiln_comm_all_reduce(r->comm, KILN_DTYPE_I32, KILN_REDUCE_MAX, &stop, &any, 1))) {
            gpt_errf(r->err, "step %lld: %s", (long long)s + 1, kiln_last_error(r->ctx));
            return st;
        }
        if (any || (o->stop_after && s - first >= o->stop_after)) {
            res->interrupted = any;
            return KILN_STATUS_OK;
        }
        float loss;
        double ms;
        if ((st = run_step(r, s, tok, args, &loss, &ms, &res->measured_peak_bytes, diverged)))
            return st;
        if (!isfinite(loss)) {
            char ck[4200 + 32];
            struct stat sb;
            snprintf(ck, sizeof ck, "%s/model.safetensors", o->out_dir ? o->out_dir : "");
            bool saved = r->saves && o->out_dir && !stat(ck, &sb);
            gpt_errf(r->err, "step %lld: the loss is %g (diverged: try a lower --lr); %s%s%s",
                     (long long)s + 1, (double)loss,
                     saved ? "the last checkpoint was kept (" : "nothing was saved",
                     saved ? ck : "", saved ? ")" : "");
            *diverged = true;
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        r->done = s + 1;
        int64_t every = o->check_every > 0 ? o->check_every : 100;
        if (r->ranks > 1 && (r->done % every == 0 || r->done == o->steps) &&
            (st = check_replicas(r, r->done))) {
            *diverged = true;
            return st;
        }
        r->ms_win[r->n_rec++ % MEDIAN_WINDOW] = ms;
        if (r->n_rec == 1) res->first_loss = loss;
        res->final_loss = loss;
        bool last = s + 1 == o->steps;
        double val = NAN;
        if (o->eval_every > 0 && ((s + 1) % o->eval_every == 0 || last)) {
            if ((st = evaluate(r, &val))) return st;
            res->final_val_loss = val;
        }
        if ((st = gpt_log_step(&r->log, s + 1, loss, val, ms, r->err))) return st;
        /* the log is flushed as often as progress is drawn, not every step */
        if (progress(r, s + 1, loss, val, ma->peak_bytes, res->measured_peak_bytes, last) &&
            (st = gpt_log_flush(&r->log, r->err)))
            return st;
        if (o->save_every > 0 && (s + 1) % o->save_every == 0 && !last && r->saves) {
            char path[4200];
            if (o->out_dir) snprintf(path, sizeof path, "%s/model.safetensors", o->out_dir);
            /* a state that cannot be saved (non-finite values) has diverged */
            if ((st = save(r, o->out_dir ? path : NULL))) {
                *diverged = st == KILN_STATUS_INVALID_ARGUMENT;
                return st;
            }
        }
    }
    return st;
}

/* The end of a run: the checkpoint (unless the state is torn or diverged), then the
 * summaries and pictures. */
static kiln_status finish(run *r, kiln_status st, bool diverged, gpt_train_result *res,
                          const kiln_memory_analysis *ma, const kiln_executable_info *si,
                          const kiln_executable_info *ei) {
    const gpt_train_options *o = r->o;
    char *err = r->err, e2[GPT_ERR_SIZE];
    if (r->saves && !diverged && r->state && r->state[0] && !kiln_array_is_consumed(r->state[0])) {
        char path[4200];
        if (o->out_dir) snprintf(path, sizeof path, "%s/model.safetensors", o->out_dir);
        r->err = st ? e2 : err; /* after a failure, keep the first error's message */
        kiln_status s2 = save(r, o->out_dir ? path : NULL);
        if (!st) st = s2;
        r->err = err;
    }
    kiln_status s3 = gpt_log_close(&r->log, st ? e2 : err);
    if (!st) st = s3;
    if (st || !o->out_dir) return st;
    gpt_out out;
    FILE *f = gpt_out_open(o->out_dir, "summary.txt", &out, err);
    if (!o->no_summary) summary(r, o->progress, res, ma, si, ei);
    if (!f) return KILN_STATUS_IO;
    summary(r, f, res, ma, si, ei);
    if ((st = gpt_out_close(f, &out, err)) || (st = gpt_log_svg(o->out_dir, err)) ||
        (st = write_summary_json(r, res, ma, si)))
        return st;
    char *svg = kiln_executable_plan_svg(r->step);
    st = write_text(r, "plan.svg", svg);
    kiln_string_free(r->ctx, svg);
    return st;
}

/* The folder's checkpoint (path) is an earlier run's: only a run that continues it
 * (--resume of that same file) or asked to start over (overwrite) may replace it. */
static kiln_status check_no_other_checkpoint(const gpt_train_options *o, const char *path,
                                             char *err) {
    struct stat cb, rb;
    if (o->overwrite || stat(path, &cb)) return KILN_STATUS_OK; /* none there */
    if (o->resume && !stat(o->resume, &rb) && rb.st_dev == cb.st_dev && rb.st_ino == cb.st_ino)
        return KILN_STATUS_OK;
    gpt_errf(err,
             "the output folder '%s' holds an earlier run's checkpoint (%s), which this run "
             "would replace: continue that run with --resume %s, start over with --overwrite "
             "(also with --resume of another checkpoint), or give another --out",
             o->out_dir, path, path);
    return KILN_STATUS_INVALID_ARGUMENT;
}

/* Before anything is computed: the output folder (writable, no stale temporaries, no
 * earlier run's checkpoint to lose), the corpus, the batches file. */
static kiln_status prepare_files(run *r) {
    const gpt_train_options *o = r->o;
    kiln_status st;
    if (o->out_dir) {
        if ((st = check_out_dir(o->out_dir, r->err))) return st;
        /* one run writes a folder at a time: a second one would interleave its losses.csv
         * and checkpoints with the first's. The lock is the folder's own (flock on it),
         * so no file is left behind, and a run that dies releases it. */
        r->out_lock = open(o->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (r->out_lock >= 0 && flock(r->out_lock, LOCK_EX | LOCK_NB)) {
            bool busy = errno == EWOULDBLOCK;
            close(r->out_lock);
            r->out_lock = -1;
            if (busy) {
                gpt_errf(r->err,
                         "the output folder '%s' is in use by another kiln train (it holds the "
                         "folder's lock): give another --out, or wait for that run to end",
                         o->out_dir);
                return KILN_STATUS_INVALID_ARGUMENT;
            }
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/model.safetensors", o->out_dir);
        if ((st = check_no_other_checkpoint(o, path, r->err))) return st;
        int n = gpt_checkpoint_remove_temps(path, 0);
        if (n && o->progress)
            fprintf(o->progress,
                    "removed %d temporary checkpoint file%s left in %s by a run killed while "
                    "saving\n",
                    n, n > 1 ? "s" : "", o->out_dir);
    }
    if ((st = load_corpus(r))) return st;
    return open_batches(r);
}

kiln_status gpt_train(kiln_context *ctx, const gpt_train_options *o_in, gpt_train_result *res,
                      char *err) {
    gpt_train_options oo = *o_in, *o = &oo;
    if (kiln_comm_get_rank(o->comm) > 0) { /* rank 0 alone validates, prints and writes */
        o->progress = NULL, o->out_dir = NULL, o->eval_every = 0;
    }
    run *r = calloc(1, sizeof *r);
    memset(res, 0, sizeof *res);
    res->final_val_loss = res->first_loss = res->final_loss = res->final_loss_scale = NAN;
    if (!r) {
        gpt_errf(err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    *r = (run){.ctx = ctx, .o = o, .cfg = o->model, .err = err, .out_lock = -1};
    kiln_status st = check_options(o, err);
    if (st) {
        free(r);
        return st;
    }
    r->stacked = o->scan_layers;
    r->P = gpt_num_params_layout(&r->cfg, r->stacked), r->T = r->cfg.context;
    r->scaling = scaling_of(o), r->scale = (float)first_scale_of(o);
    r->comm = o->comm, r->dev = o->device;
    r->rank = kiln_comm_get_rank(o->comm), r->ranks = kiln_comm_get_size(o->comm);
    r->GB = o->batch, r->B = o->batch / r->ranks;
    r->zero = o->shard_optimizer && r->ranks > 1 ? r->ranks : 0; /* one replica: nothing to shard */
    r->zero_stage = o->zero_stage ? o->zero_stage : 2;
    r->saves = o_in->out_dir != NULL;
    res->params = gpt_count_scalars(&r->cfg);
    kiln_array **args = NULL;
    int32_t *tok = NULL;
    kiln_memory_analysis ma = {0};
    kiln_executable_info si = {0}, ei = {0};
    bool diverged = false;
    if (o->batch % r->ranks) {
        gpt_errf(err, "gpt_train: the batch (%d) must split evenly over the %d ranks", o->batch,
                 r->ranks);
        st = KILN_STATUS_INVALID_ARGUMENT;
        goto out;
    }
    if (o->micro_batches < 0 || (o->micro_batches > 0 && r->B % o->micro_batches)) {
        gpt_errf(err,
                 "gpt_train: %d micro-batches: they must split the batch of each rank (%d) "
                 "evenly",
                 o->micro_batches, r->B);
        st = KILN_STATUS_INVALID_ARGUMENT;
        goto out;
    }
    if ((st = prepare_files(r))) goto out;
    args = malloc((size_t)(3 * r->P + 6) * sizeof *args);
    tok = malloc((size_t)r->GB * (size_t)(r->T + 1) * sizeof *tok);
    if (!args || !tok) {
        gpt_errf(err, "out of host memory");
        st = KILN_STATUS_HOST_OOM;
        goto out;
    }
    if ((st = compile_programs(r, &res->compile_ms))) goto out;
    kiln_executable_get_memory_analysis(r->step, &ma);
    kiln_executable_get_info(r->step, &si);
    if (r->eval) kiln_executable_get_info(r->eval, &ei);
    res->planned_peak_bytes = ma.peak_bytes;
    res->micro_batches = r->micro;
    res->offload_optimizer = r->off_opt, res->offload_params = r->off_params;
    if ((st = check_fits(r, &ma)) || (st = load_state(r)) || (st = state_to_device(r)) ||
        (r->zero && (st = shard_moments(r))) || (st = state_to_kinds(r)))
        goto out;
    res->steps_done = r->done;
    if (o->out_dir && (st = gpt_log_open(&r->log, o->out_dir, r->done, err))) goto out;
    st = train_loop(r, res, &ma, args, tok, &diverged);
    res->steps_done = r->done;
    res->skipped_steps = r->skipped;
    res->final_loss_scale = r->scaling == GPT_LOSS_SCALING_NONE ? NAN : r->scale;
    res->ms_per_step_median = median_ms(r);
    res->tokens_per_s =
        res->ms_per_step_median > 0 ? r->GB * r->T / (res->ms_per_step_median / 1e3) : 0;
    if (o->progress && o->progress_is_tty && r->n_rec && r->done < o->steps)
        fputc('\n', o->progress); /* end the \r-updated line */
    st = finish(r, st, diverged, res, &ma, &si, &ei);
out:
    if (r->out_lock >= 0) close(r->out_lock); /* and with it the lock */
    if (r->log.f) fclose(r->log.f);
    if (r->batches) fclose(r->batches);
    state_free(r);
    kiln_executable_destroy(r->step);
    kiln_executable_destroy(r->eval);
    gpt_data_free(ctx, &r->data);
    free(args), free(tok), free(r);
    return st;
}
