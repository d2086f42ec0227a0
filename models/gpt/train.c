/* train.c — the GPT training loop as library code (gpt_train): data and seeded batches,
 * the learning-rate schedule, one compiled training step (forward, kiln_grad, AdamW) with
 * the parameters and the optimiser state donated, validation every N steps, checkpoints,
 * progress, and the files of --out (losses.csv, summary.json, loss.svg, plan.svg).
 *
 * The step is compiled with kiln_compile, not kiln_jit: it has 3P + 1 outputs (P = 12L +
 * 4 parameters: 157 at four layers) and kiln_jit holds at most KILN_MAX_OUTPUTS (64). Its
 * shape never changes during a run, so one compile is all a jit would do anyway.
 *
 * Resuming is exact: a checkpoint holds the parameters, both moments, the number of steps
 * done and the batch generator's state, and the step is a pure function of those and the
 * step number, so a resumed run computes the same losses bit for bit as an uninterrupted
 * one (the test suite checks it). The recipe (model, batch, steps, warmup, lr, decay, clip,
 * seed) is stored too, and a resumed run must use the same one. */
#include "gpt_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void gpt_train_defaults(gpt_train_options *o) {
    memset(o, 0, sizeof *o);
    o->model = (gpt_config){.vocab = 256, .context = 64, .layers = 2, .heads = 4, .channels = 128};
    o->batch = 16, o->steps = 1000, o->warmup = 30;
    o->lr = 3e-3, o->weight_decay = 0.1, o->clip = 0;
    o->seed = 1337;
    o->eval_every = 100, o->eval_batches = 4;
    o->out_dir = "kiln-train";
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
    int GB;               /* the global batch: B on each of the `ranks` replicas */
    int rank, ranks, dev; /* data parallel: this replica, how many, its device */
    kiln_comm *comm;      /* NULL: one replica */
    kiln_array **state;   /* params, m, v: 3P */
    kiln_executable *step, *eval;
    gpt_data data;
    FILE *batches; /* the --batches file, or NULL */
    uint64_t rng;
    int done;                /* steps done */
    double *loss, *val, *ms; /* per step of this run (val NaN when not evaluated) */
    int n_rec, first_rec;    /* records kept; the step number of record 0 */
    double last_print;       /* when the progress line was last drawn (now_ms) */
    char *err;
} run;

static void state_free(run *r) {
    if (!r->state) return;
    for (int i = 0; i < 3 * r->P; i++) kiln_array_destroy(r->state[i]);
    free(r->state);
    r->state = NULL;
}

static kiln_status save(run *r, const char *path) {
    char step[24], seed[24], rng[24], batch[24], steps[24], warm[24], lr[32], wd[32], clip[32];
    snprintf(step, sizeof step, "%d", r->done);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->o->seed);
    snprintf(rng, sizeof rng, "%llu", (unsigned long long)r->rng);
    snprintf(batch, sizeof batch, "%d", r->GB);
    snprintf(steps, sizeof steps, "%d", r->o->steps);
    snprintf(warm, sizeof warm, "%d", r->o->warmup);
    snprintf(lr, sizeof lr, "%.17g", r->o->lr);
    snprintf(wd, sizeof wd, "%.17g", r->o->weight_decay);
    snprintf(clip, sizeof clip, "%.17g", r->o->clip);
    const char *kv[] = {"step",  step,  "seed",         seed,  "rng_state", rng,
                        "batch", batch, "steps",        steps, "warmup",    warm,
                        "lr",    lr,    "weight_decay", wd,    "clip",      clip};
    return gpt_checkpoint_save(r->ctx, path, &r->cfg, r->state, r->state + r->P,
                               r->state + 2 * r->P, (int)(sizeof kv / sizeof kv[0]) / 2, kv,
                               r->err);
}

/* The parameters and moments a run starts from: a checkpoint, an --init file or the
 * seeded initialisation. */
static kiln_status load_state(run *r) {
    const gpt_train_options *o = r->o;
    int P = r->P;
    kiln_status st;
    if (!(r->state = calloc((size_t)(3 * P), sizeof *r->state))) {
        gpt_errf(r->err, "out of host memory");
        return KILN_STATUS_HOST_OOM;
    }
    if (o->resume) {
        gpt_train_options saved = *o;
        if ((st = gpt_checkpoint_read_options(r->ctx, o->resume, &saved, r->err))) return st;
        const char *what = NULL;
        if (memcmp(&saved.model, &o->model, sizeof o->model))
            what = "model shape (vocab, context, layers, heads, channels)";
        else if (saved.batch != o->batch)
            what = "batch";
        else if (saved.steps != o->steps)
            what = "steps";
        else if (saved.warmup != o->warmup)
            what = "warmup";
        else if (saved.lr != o->lr)
            what = "lr";
        else if (saved.weight_decay != o->weight_decay)
            what = "weight decay";
        else if (saved.clip != o->clip)
            what = "clip";
        else if (saved.seed != o->seed)
            what = "seed";
        if (what) {
            gpt_errf(r->err,
                     "%s: the run to resume used another %s; a resumed run continues the same "
                     "run (leave the flag out to take the checkpoint's)",
                     o->resume, what);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        if ((st = gpt_checkpoint_load(r->ctx, o->resume, &r->cfg, r->state, r->state + P,
                                      r->state + 2 * P, r->err)))
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
        bool ok =
            sv && rv && !*e1 && !*e2 && e1 != sv && e2 != rv && !errno && s >= 0 && s <= o->steps;
        kiln_safetensors_close(f);
        if (!ok) {
            gpt_errf(r->err, "%s: metadata 'step' or 'rng_state' missing or not a number in range",
                     o->resume);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        r->done = (int)s, r->rng = rs;
        return KILN_STATUS_OK;
    }
    if (o->init)
        st = gpt_checkpoint_load(r->ctx, o->init, &r->cfg, r->state, NULL, NULL, r->err);
    else
        st = gpt_init_params(r->ctx, &r->cfg, KILN_DTYPE_F32, o->seed, r->state, r->err);
    if (st) return st;
    for (int i = 0; i < P && !st; i++) {
        int rank;
        int64_t dims[2];
        char name[GPT_NAME_MAX];
        gpt_param_info(&r->cfg, i, name, &rank, dims);
        for (int k = 1; k < 3 && !st; k++)
            if ((st = kiln_array_create_on(r->ctx, r->dev, KILN_DTYPE_F32, rank, dims, NULL,
                                           &r->state[k * P + i])))
                gpt_errf(r->err, "optimiser state of %s: %s", name, kiln_last_error(r->ctx));
    }
    r->rng = o->seed;
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

/* FNV-1a over the bytes of every parameter (host copies). */
static kiln_status params_hash(run *r, uint64_t *out) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < r->P; i++) {
        size_t n = kiln_array_nbytes(r->state[i]);
        unsigned char *b = malloc(n ? n : 1);
        if (!b) {
            gpt_errf(r->err, "out of host memory");
            return KILN_STATUS_HOST_OOM;
        }
        kiln_status st = kiln_array_copy_to_host(r->state[i], b, n);
        for (size_t k = 0; k < n && !st; k++) h = (h ^ b[k]) * 0x100000001b3ull;
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

static kiln_status compile_programs(run *r, double *compile_ms) {
    kiln_graph *g;
    kiln_status st;
    double t0 = now_ms();
    if ((st = kiln_graph_create(r->ctx, "gpt_train_step", &g))) goto kiln_fail;
    gpt_step_spec spec = {.batch = r->B,
                          .seq = r->T,
                          .weight_decay = r->o->weight_decay,
                          .clip = r->o->clip,
                          .all_reduce = r->ranks > 1,
                          .bucket_bytes = bucket_bytes(r)};
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
        kiln_compile_options co = {.n_donate = 3 * r->P,
                                   .donate_argnums = donate,
                                   .memory_budget = r->o->memory_budget,
                                   .memory_budget_fraction = r->o->memory_budget_fraction,
                                   .device = r->dev,
                                   .comm = r->comm,
                                   .disable_overlap = r->o->no_overlap};
        st = kiln_compile(g, &co, &r->step);
        free(donate);
        if (st) gpt_errf(r->err, "compiling the training step: %s", kiln_last_error(r->ctx));
    }
    kiln_graph_destroy(g);
    if (st) return st;

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
    gpt_make_params(g, &r->cfg, KILN_DTYPE_F32, p);
    int64_t bt[2] = {r->GB, r->T};
    kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, bt);
    kiln_value tgt = kiln_parameter(g, "targets", KILN_DTYPE_I32, 2, bt);
    kiln_value loss = gpt_loss(g, &r->cfg, p, idx, tgt);
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
static kiln_status next_batch(run *r, int s, int32_t *tok) {
    size_t n = (size_t)r->GB * (size_t)(r->T + 1);
    if (!r->batches) {
        gpt_data_batch(&r->data, false, &r->rng, r->GB, r->T, tok);
        return KILN_STATUS_OK;
    }
    if (fseeko(r->batches, (off_t)((size_t)s * n * 4), SEEK_SET) ||
        fread(tok, 4, n, r->batches) != n) {
        gpt_errf(r->err, "%s: cannot read the batch of step %d", r->o->batches, s);
        return KILN_STATUS_IO;
    }
    unsigned char *b = (unsigned char *)tok; /* the file is little-endian */
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                     (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
        int32_t v = (int32_t)u;
        if (v < 0 || v >= r->cfg.vocab) {
            gpt_errf(r->err, "%s: step %d holds token %d, outside [0, %d)", r->o->batches, s, v,
                     r->cfg.vocab);
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

static FILE *open_out(run *r, const char *name, char *path, size_t n) {
    snprintf(path, n, "%s/%s", r->o->out_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) gpt_errf(r->err, "cannot write '%s': %s", path, strerror(errno));
    return f;
}

static kiln_status close_out(run *r, FILE *f, const char *path) {
    if (ferror(f) | fclose(f)) {
        gpt_errf(r->err, "writing '%s' failed", path);
        return KILN_STATUS_IO;
    }
    return KILN_STATUS_OK;
}

static kiln_status write_losses(run *r) {
    char path[4200];
    FILE *f = open_out(r, "losses.csv", path, sizeof path);
    if (!f) return KILN_STATUS_IO;
    fprintf(f, "step,loss,val_loss,ms\n");
    for (int i = 0; i < r->n_rec; i++) {
        fprintf(f, "%d,%.6f,", r->first_rec + i + 1, r->loss[i]);
        if (!isnan(r->val[i])) fprintf(f, "%.6f", r->val[i]);
        fprintf(f, ",%.3f\n", r->ms[i]);
    }
    return close_out(r, f, path);
}

/* A "nice" tick step: 1, 2 or 5 times a power of ten, about span / 5. */
static double tick_step(double span) {
    double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

static kiln_status write_loss_svg(run *r) {
    char path[4200];
    FILE *f = open_out(r, "loss.svg", path, sizeof path);
    if (!f) return KILN_STATUS_IO;
    const double W = 720, H = 420, L = 70, R = 20, TOP = 40, BOT = 60;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < r->n_rec; i++) {
        double v[2] = {r->loss[i], r->val[i]};
        for (int k = 0; k < 2; k++)
            if (isfinite(v[k])) lo = fmin(lo, v[k]), hi = fmax(hi, v[k]);
    }
    if (!(lo < hi)) lo = isfinite(lo) ? lo - 1 : 0, hi = isfinite(hi) ? hi + 1 : 1;
    double ystep = tick_step(hi - lo);
    lo = floor(lo / ystep) * ystep, hi = ceil(hi / ystep) * ystep;
    double x0 = r->first_rec + 1, x1 = r->first_rec + (r->n_rec > 1 ? r->n_rec : 2);
    double xstep = tick_step(x1 - x0 > 1 ? x1 - x0 : 1);
#define PX(s) (L + ((s)-x0) / (x1 - x0) * (W - L - R))
#define PY(v) (TOP + (hi - (v)) / (hi - lo) * (H - TOP - BOT))
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%g\" y=\"22\" font-size=\"15\">kiln train: loss (cross-entropy, nats "
            "per byte)</text>\n",
            W, H, L);
    for (double y = lo; y <= hi + ystep / 2; y += ystep)
        fprintf(f,
                "<line x1=\"%g\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                L, W - R, PY(y), PY(y), L - 6, PY(y) + 4, y);
    for (double x = ceil(x0 / xstep) * xstep; x <= x1; x += xstep)
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\" stroke=\"#333\"/>"
                "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n",
                PX(x), PX(x), H - BOT, H - BOT + 5, PX(x), H - BOT + 19, x);
    fprintf(f,
            "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"#333\"/>"
            "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"#333\"/>\n"
            "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">step</text>\n"
            "<text transform=\"translate(18 %g) rotate(-90)\" text-anchor=\"middle\">loss</text>\n",
            L, W - R, H - BOT, H - BOT, L, L, TOP, H - BOT, (L + W - R) / 2, H - 18,
            (TOP + H - BOT) / 2);
    const char *colour[2] = {"#1f77b4", "#d62728"};
    for (int k = 0; k < 2; k++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", colour[k],
                k ? "2" : "1.2");
        for (int i = 0; i < r->n_rec; i++) {
            double v = k ? r->val[i] : r->loss[i];
            if (isfinite(v)) fprintf(f, "%.1f,%.1f ", PX(r->first_rec + i + 1), PY(v));
        }
        fprintf(f, "\"/>\n");
        for (int i = 0; k && i < r->n_rec; i++)
            if (isfinite(r->val[i]))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                        PX(r->first_rec + i + 1), PY(r->val[i]), colour[1]);
        fprintf(f,
                "<line x1=\"%g\" x2=\"%g\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
                "<text x=\"%g\" y=\"%d\">%s</text>\n",
                W - R - 170, W - R - 145, 52 + 18 * k, 52 + 18 * k, colour[k], W - R - 140,
                56 + 18 * k, k ? "validation loss" : "training loss");
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    return close_out(r, f, path);
}

static kiln_status write_text(run *r, const char *name, const char *text) {
    char path[4200];
    if (!text) {
        gpt_errf(r->err, "out of host memory writing %s", name);
        return KILN_STATUS_HOST_OOM;
    }
    FILE *f = open_out(r, name, path, sizeof path);
    if (!f) return KILN_STATUS_IO;
    fputs(text, f);
    return close_out(r, f, path);
}

/* ---------------------------------------------------------------- loop ---- */

static void progress(run *r, int s, double loss, double val, double ms_med, uint64_t planned,
                     uint64_t measured, bool final) {
    FILE *p = r->o->progress;
    if (!p) return;
    int every = r->o->print_every > 0 ? r->o->print_every : 10;
    bool tty = r->o->progress_is_tty;
    if (!tty && !final && s % every && isnan(val)) return;
    /* A terminal line is redrawn at most ten times a second (small models run thousands of
     * steps a second). */
    double t = now_ms();
    if (tty && !final && isnan(val) && t - r->last_print < 100) return;
    r->last_print = t;
    char pl[32], me[32], v[32] = "", eta[32] = "";
    human_bytes(planned, pl, sizeof pl), human_bytes(measured, me, sizeof me);
    if (!isnan(val)) snprintf(v, sizeof v, " | val %.4f", val);
    double left = ms_med * (r->o->steps - s) / 1e3;
    if (!final) snprintf(eta, sizeof eta, " | ETA %.0f s", left);
    fprintf(p,
            "%sstep %*d/%d | loss %.4f%s | %.1f ms/step | %.0f tok/s | peak %s planned, %s "
            "measured%s%s",
            tty ? "\r\033[K" : "", (int)snprintf(NULL, 0, "%d", r->o->steps), s, r->o->steps, loss,
            v, ms_med, ms_med > 0 ? r->GB * r->T / (ms_med / 1e3) : 0, pl, me, eta,
            tty && !final && isnan(val) ? "" : "\n");
    fflush(p);
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
    fprintf(p, "compile: %.0f ms (step %s%s%s)\n", res->compile_ms,
            si->from_disk_cache ? "from the kernel cache" : "compiled",
            r->eval ? ", evaluation " : "",
            !r->eval              ? ""
            : ei->from_disk_cache ? "from the kernel cache"
                                  : "compiled");
    if (r->n_rec)
        fprintf(p, "time: %.1f ms/step median, %.0f tokens/s; loss %.4f -> %.4f",
                res->ms_per_step_median, res->tokens_per_s, res->first_loss, res->final_loss);
    else
        fprintf(p, "no step run: the checkpoint had done all %d steps", res->steps_done);
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

static kiln_status write_summary_json(run *r, const gpt_train_result *res,
                                      const kiln_memory_analysis *ma, bool cache_step) {
    char path[4200];
    FILE *f = open_out(r, "summary.json", path, sizeof path);
    if (!f) return KILN_STATUS_IO;
    fprintf(
        f,
        "{\n  \"layers\": %d, \"heads\": %d, \"channels\": %d, \"context\": %d, \"batch\": %d,\n"
        "  \"steps\": %d, \"params\": %lld,\n  \"planned_peak_bytes\": %llu,\n"
        "  \"measured_peak_bytes\": %llu,\n  \"compile_ms\": %.1f,\n"
        "  \"step_from_disk_cache\": %s,\n",
        r->cfg.layers, r->cfg.heads, r->cfg.channels, r->cfg.context, r->GB, res->steps_done,
        (long long)res->params, (unsigned long long)res->planned_peak_bytes,
        (unsigned long long)res->measured_peak_bytes, res->compile_ms,
        cache_step ? "true" : "false");
    json_num(f, "ms_per_step_median", r->n_rec ? res->ms_per_step_median : NAN, false);
    json_num(f, "tokens_per_s", r->n_rec ? res->tokens_per_s : NAN, false);
    json_num(f, "first_loss", res->first_loss, false);
    json_num(f, "final_loss", res->final_loss, false);
    json_num(f, "final_val_loss", res->final_val_loss, false);
    fprintf(f, "  \"memory_at_peak\": {");
    for (int c = 0; c <= KILN_MEMORY_CLASS_TEMPORARY; c++)
        fprintf(f, "%s\"%s\": %llu", c ? ", " : "", kiln_memory_class_name((kiln_memory_class)c),
                (unsigned long long)ma->class_bytes_at_peak[c]);
    fprintf(f, "}\n}\n");
    return close_out(r, f, path);
}

kiln_status gpt_train(kiln_context *ctx, const gpt_train_options *o_in, gpt_train_result *res,
                      char *err) {
    gpt_train_options oo = *o_in, *o = &oo;
    if (kiln_comm_get_rank(o->comm) > 0) { /* rank 0 alone validates, prints and writes */
        o->progress = NULL, o->out_dir = NULL, o->eval_every = 0;
    }
    run rr = {.ctx = ctx, .o = o, .cfg = o->model, .err = err}, *r = &rr;
    memset(res, 0, sizeof *res);
    res->final_val_loss = res->first_loss = res->final_loss = NAN;
    kiln_status st = gpt_config_check(&o->model, err);
    if (st) return st;
    if (o->batch < 1 || o->steps < 1 || o->warmup < 0 || !(o->lr > 0) || !(o->weight_decay >= 0) ||
        !(o->clip >= 0)) {
        gpt_errf(err,
                 "gpt_train: batch (%d) and steps (%d) must be >= 1, warmup (%d) >= 0, lr "
                 "(%g) > 0, weight decay (%g) and clip (%g) >= 0",
                 o->batch, o->steps, o->warmup, o->lr, o->weight_decay, o->clip);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (o->model.vocab != 256) {
        gpt_errf(err, "gpt_train: the corpus is bytes, so vocab must be 256 (not %d)",
                 o->model.vocab);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    r->P = gpt_num_params(&r->cfg), r->T = r->cfg.context;
    r->comm = o->comm, r->dev = o->device;
    r->rank = kiln_comm_get_rank(o->comm), r->ranks = kiln_comm_get_size(o->comm);
    r->GB = o->batch, r->B = o->batch / r->ranks;
    if (o->batch % r->ranks) {
        gpt_errf(err, "gpt_train: the batch (%d) must split evenly over the %d ranks", o->batch,
                 r->ranks);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    res->params = gpt_count_scalars(&r->cfg);
    kiln_array **args = NULL;
    int32_t *tok = NULL;
    kiln_memory_analysis ma = {0};
    kiln_executable_info si = {0}, ei = {0};
    double *sorted = NULL;

    if (o->out_dir && (st = make_dirs(o->out_dir, err))) return st;
    if ((st = gpt_data_load(ctx, o->data, r->T, &r->data, err))) return st;
    if (o->batches) {
        if (!(r->batches = fopen(o->batches, "rb"))) {
            gpt_errf(err, "cannot open the batches file '%s': %s", o->batches, strerror(errno));
            st = KILN_STATUS_IO;
            goto out;
        }
        struct stat sb;
        int64_t want = (int64_t)o->steps * r->GB * (r->T + 1) * 4;
        if (fstat(fileno(r->batches), &sb) || sb.st_size != want) {
            gpt_errf(err,
                     "the batches file '%s' has %lld bytes; [steps %d, batch %d, context + 1 "
                     "%d] int32 is %lld",
                     o->batches, (long long)sb.st_size, o->steps, r->GB, r->T + 1, (long long)want);
            st = KILN_STATUS_INVALID_ARGUMENT;
            goto out;
        }
    }
    if ((st = load_state(r)) || (st = state_to_device(r))) goto out;
    int first = r->done, todo = o->steps - first;
    r->first_rec = first;
    r->loss = malloc((size_t)(3 * (todo > 0 ? todo : 1)) * sizeof(double));
    r->val = r->loss + todo, r->ms = r->val + todo;
    sorted = malloc((size_t)(todo > 0 ? todo : 1) * sizeof *sorted);
    args = malloc((size_t)(3 * r->P + 4) * sizeof *args);
    tok = malloc((size_t)r->GB * (size_t)(r->T + 1) * sizeof *tok);
    if (!r->loss || !sorted || !args || !tok) {
        gpt_errf(err, "out of host memory");
        st = KILN_STATUS_HOST_OOM;
        goto out;
    }
    if ((st = compile_programs(r, &res->compile_ms))) goto out;
    kiln_executable_get_memory_analysis(r->step, &ma);
    kiln_executable_get_info(r->step, &si);
    if (r->eval) kiln_executable_get_info(r->eval, &ei);
    res->planned_peak_bytes = ma.peak_bytes;

    int P = r->P, nargs = 3 * P + 4;
    double med = 0;
    bool diverged = false;
    for (int s = first; s < o->steps; s++) {
        int32_t stop = o->stop && *o->stop, any = stop;
        /* Ctrl-C reaches the ranks at different steps: they stop together, at the first
         * step any of them saw it */
        if (r->ranks > 1 &&
            (st = kiln_comm_all_reduce(r->comm, KILN_DTYPE_I32, KILN_REDUCE_MAX, &stop, &any, 1))) {
            gpt_errf(err, "step %d: %s", s + 1, kiln_last_error(ctx));
            break;
        }
        if (any || (o->stop_after && s - first >= o->stop_after)) {
            res->interrupted = any;
            break;
        }
        if ((st = next_batch(r, s, tok))) break;
        for (int i = 0; i < 3 * P; i++) args[i] = r->state[i];
        if ((st = batch_arrays(r, tok + (size_t)r->rank * r->B * (r->T + 1), r->B, &args[3 * P],
                               &args[3 * P + 1])))
            break;
        float lr = (float)gpt_lr_at(s, o->steps, o->warmup, o->lr);
        int32_t t = s + 1;
        args[3 * P + 2] = args[3 * P + 3] = NULL;
        if (!(st = kiln_array_create_on(ctx, r->dev, KILN_DTYPE_F32, 0, NULL, &lr,
                                        &args[3 * P + 2])))
            st = kiln_array_create_on(ctx, r->dev, KILN_DTYPE_I32, 0, NULL, &t, &args[3 * P + 3]);
        kiln_memory_stats ms1;
        kiln_array **outs = NULL;
        if (!st) st = kiln_device_reset_peak(ctx, r->dev);
        if (!st && !(outs = malloc((size_t)(3 * P + 1) * sizeof *outs))) st = KILN_STATUS_HOST_OOM;
        double t0 = now_ms();
        if (!st) st = kiln_executable_run(r->step, nargs, args, 3 * P + 1, outs);
        double dt = now_ms() - t0;
        for (int i = 3 * P; i < nargs; i++) kiln_array_destroy(args[i]);
        if (st) {
            gpt_errf(err, "step %d: %s", s + 1,
                     st == KILN_STATUS_HOST_OOM ? "out of host memory" : kiln_last_error(ctx));
            /* a collective fails mid-step: kernels before it may have updated donated
             * state in place, so the state is torn and must not replace the checkpoint */
            diverged |= st == KILN_STATUS_TIMEOUT || st == KILN_STATUS_BACKEND;
            free(outs);
            break;
        }
        kiln_device_get_memory_stats(ctx, r->dev, &ms1);
        if (ms1.peak_bytes_in_use > res->measured_peak_bytes)
            res->measured_peak_bytes = ms1.peak_bytes_in_use;
        for (int i = 0; i < 3 * P; i++) {
            kiln_array_destroy(r->state[i]); /* consumed by the call */
            r->state[i] = outs[i];
        }
        float loss = NAN;
        st = kiln_array_copy_to_host(outs[3 * P], &loss, sizeof loss);
        kiln_array_destroy(outs[3 * P]);
        free(outs);
        if (st) {
            gpt_errf(err, "step %d: %s", s + 1, kiln_last_error(ctx));
            break;
        }
        r->done = s + 1;
        int every = o->check_every > 0 ? o->check_every : 100;
        if (r->ranks > 1 && (r->done % every == 0 || r->done == o->steps) &&
            (st = check_replicas(r, r->done))) {
            diverged = true;
            break;
        }
        int k = r->n_rec++;
        r->loss[k] = loss, r->ms[k] = dt, r->val[k] = NAN;
        if (k == 0) res->first_loss = loss;
        res->final_loss = loss;
        bool last = s + 1 == o->steps;
        if (o->eval_every > 0 && ((s + 1) % o->eval_every == 0 || last)) {
            if ((st = evaluate(r, &r->val[k]))) break;
            res->final_val_loss = r->val[k];
        }
        memcpy(sorted, r->ms, (size_t)r->n_rec * sizeof *sorted);
        qsort(sorted, (size_t)r->n_rec, sizeof *sorted, cmp_double);
        med = sorted[r->n_rec / 2];
        progress(r, s + 1, loss, r->val[k], med, ma.peak_bytes, res->measured_peak_bytes, last);
        if (o->save_every > 0 && (s + 1) % o->save_every == 0 && !last && o->out_dir) {
            char path[4200];
            snprintf(path, sizeof path, "%s/model.safetensors", o->out_dir);
            if ((st = save(r, path))) break;
        }
        if (!isfinite(loss)) {
            gpt_errf(err,
                     "step %d: the loss is %g (diverged: try a lower --lr); the last "
                     "checkpoint was kept",
                     s + 1, (double)loss);
            st = KILN_STATUS_INVALID_ARGUMENT;
            diverged = true;
            break;
        }
    }
    res->steps_done = r->done;
    res->ms_per_step_median = med;
    res->tokens_per_s = med > 0 ? r->GB * r->T / (med / 1e3) : 0;
    if (o->progress && o->progress_is_tty && r->n_rec && r->done < o->steps)
        fputc('\n', o->progress); /* end the \r-updated line */
    /* The checkpoint is saved even after a failing step, when the state is whole: a run
     * stopped by a bad batch can be resumed once the file is fixed. A diverged state (a
     * loss gone to inf, replicas that differ, a step torn by a failed collective) is not
     * worth keeping: it would replace the last good checkpoint. */
    if (o->out_dir && !diverged && r->state && r->state[0] &&
        !kiln_array_is_consumed(r->state[0])) {
        char path[4200];
        snprintf(path, sizeof path, "%s/model.safetensors", o->out_dir);
        if (!st)
            st = save(r, path);
        else { /* keep the first error's message */
            char e2[GPT_ERR_SIZE];
            r->err = e2;
            save(r, path);
            r->err = err;
        }
    }
    if (!st && o->out_dir) {
        char path[4200];
        FILE *f = open_out(r, "summary.txt", path, sizeof path);
        if (!o->no_summary) summary(r, o->progress, res, &ma, &si, &ei);
        summary(r, f, res, &ma, &si, &ei);
        if (!f)
            st = KILN_STATUS_IO;
        else if (!(st = close_out(r, f, path)) && !(st = write_losses(r)) &&
                 !(st = write_loss_svg(r)) &&
                 !(st = write_summary_json(r, res, &ma, si.from_disk_cache))) {
            char *svg = kiln_executable_plan_svg(r->step);
            st = write_text(r, "plan.svg", svg);
            kiln_string_free(ctx, svg);
        }
    }
out:
    if (r->batches) fclose(r->batches);
    state_free(r);
    kiln_executable_destroy(r->step);
    kiln_executable_destroy(r->eval);
    gpt_data_free(ctx, &r->data);
    free(r->loss), free(sorted), free(args), free(tok);
    return st;
}
