/* checkpoint.c — GPT checkpoints as safetensors files (the spec's layout): the parameters
 * under their spec names, the AdamW moments under "opt.m.<name>" / "opt.v.<name>", and the
 * model config and training state as "__metadata__" strings. kiln_safetensors_* does the
 * format and the atomic write; this file checks that a file is a checkpoint of the model
 * asked for: every tensor present, f32, of the right shape and finite, and every number in
 * the metadata a number in range. Non-finite values are never written either: a diverged
 * state must not replace a good checkpoint. The file is always per layer ("h.<l>.<tensor>");
 * the stacked layout a scanned run holds (gpt_param_info_layout) converts to and from it
 * here, by copying bytes, so either layout resumes the other's checkpoint bit for bit. */
#include "gpt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int gpt_checkpoint_remove_temps(const char *path, long pid) {
    /* kiln_safetensors_save's temporary files: "<path>.tmp-<pid>-<hex>" (kiln.h) */
    const char *slash = strrchr(path, '/');
    char dir[4200], prefix[512];
    if (slash && (size_t)(slash - path) >= sizeof dir) return 0;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path) snprintf(dir, sizeof dir, "/");
    int np = snprintf(prefix, sizeof prefix, "%s.tmp-", slash ? slash + 1 : path);
    if (np < 0 || (size_t)np >= sizeof prefix) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, (size_t)np)) continue;
        char *end;
        errno = 0;
        long owner = strtol(e->d_name + np, &end, 10);
        if (errno || end == e->d_name + np || *end != '-' || owner <= 0) continue;
        /* pid 0: only a dead process's (kill says ESRCH); a live run may be writing it */
        if (pid ? owner != pid : !(kill((pid_t)owner, 0) && errno == ESRCH)) continue;
        char full[4200 + 256];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        removed += !unlink(full);
    }
    closedir(d);
    return removed;
}

/* Whether file name is a temporary file of the process whose ".tmp-<pid>" is mark. */
static bool own_temp(const char *name, const char *mark, int nm) {
    const char *at = strstr(name, mark);
    return at && (!at[nm] || at[nm] == '-');
}

/* Reads the folder with getdents64 into a buffer on the stack: no allocation, since the
 * signal thread calls it while the thread it parked may hold the allocator's lock. */
int gpt_remove_temps_of(const char *dir, long pid) {
    char mark[48];
    int nm = snprintf(mark, sizeof mark, ".tmp-%ld", pid);
    if (pid <= 0) return 0;
    int removed = 0;
#ifdef __linux__
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    _Alignas(8) char buf[8192];
    for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
        for (long at = 0; at < n;) {
            struct dirent64_raw {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *e = (struct dirent64_raw *)(buf + at);
            at += e->reclen;
            removed += own_temp(e->name, mark, nm) && !unlinkat(fd, e->name, 0);
        }
    close(fd);
#else
    DIR *d = opendir(dir);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char full[4200 + 256];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        removed += own_temp(e->d_name, mark, nm) && !unlink(full);
    }
    closedir(d);
#endif
    return removed;
}

/* The first element of a that is not finite (NaN or inf), as its index; -1 if none. */
static int64_t first_non_finite(kiln_array *a, kiln_status *st) {
    size_t n = kiln_array_nbytes(a) / sizeof(float);
    float *b = malloc(n ? n * sizeof *b : 1);
    if (!b) {
        *st = KILN_STATUS_HOST_OOM;
        return -1;
    }
    int64_t at = -1;
    *st = kiln_array_copy_to_host(a, b, n * sizeof *b);
    for (size_t i = 0; i < n && !*st && at < 0; i++)
        if (!isfinite(b[i])) at = (int64_t)i;
    free(b);
    return at;
}

/* INVALID_ARGUMENT naming the tensor if a holds a NaN or an infinity; saving: the tensor
 * is about to be written (the message then says the last checkpoint is kept). */
static kiln_status check_finite(kiln_context *ctx, kiln_array *a, const char *path,
                                const char *name, bool saving, char *err) {
    const char *doing = saving ? "saving" : "reading";
    kiln_status st;
    int64_t at = first_non_finite(a, &st);
    if (st) {
        gpt_errf(err, "%s: %s '%s': %s", path, doing, name,
                 st == KILN_STATUS_HOST_OOM ? "out of host memory" : kiln_last_error(ctx));
        return st;
    }
    if (at < 0) return KILN_STATUS_OK;
    gpt_errf(err, "%s: %s '%s': element %lld is not finite (NaN or infinity)%s", path, doing, name,
             (long long)at,
             saving ? "; a diverged state is not saved, the last checkpoint is kept" : "");
    return KILN_STATUS_INVALID_ARGUMENT;
}

/* A metadata number: the whole string a decimal integer in [lo, hi]. */
static kiln_status meta_int(kiln_safetensors *f, const char *path, const char *key, long long lo,
                            long long hi, long long *out, char *err) {
    const char *v = kiln_safetensors_get_metadata(f, key);
    if (!v) {
        gpt_errf(err, "%s: not a kiln-gpt checkpoint: its metadata has no '%s'", path, key);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        gpt_errf(err, "%s: metadata '%s' is '%s'; want an integer in [%lld, %lld]", path, key, v,
                 lo, hi);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    *out = x;
    return KILN_STATUS_OK;
}

static kiln_status open_checked(kiln_context *ctx, const char *path, kiln_safetensors **f,
                                char *err) {
    kiln_status st = kiln_safetensors_open(ctx, path, f);
    if (st) {
        gpt_errf(err, "checkpoint: %s", kiln_last_error(ctx));
        return st;
    }
    const char *fmt = kiln_safetensors_get_metadata(*f, "format");
    if (!fmt || strcmp(fmt, "kiln-gpt")) {
        gpt_errf(err, "%s: not a kiln-gpt checkpoint (metadata 'format' is %s%s%s)", path,
                 fmt ? "'" : "", fmt ? fmt : "missing", fmt ? "'" : "");
        kiln_safetensors_close(*f);
        *f = NULL;
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    return KILN_STATUS_OK;
}

static kiln_status read_config(kiln_safetensors *f, const char *path, gpt_config *cfg, char *err) {
    long long v[5];
    static const char *const keys[5] = {"vocab", "context", "layers", "heads", "channels"};
    for (int i = 0; i < 5; i++) {
        kiln_status st = meta_int(f, path, keys[i], 1, 1 << 20, &v[i], err);
        if (st) return st;
    }
    *cfg = (gpt_config){(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4]};
    char why[GPT_ERR_SIZE];
    if (gpt_config_check(cfg, why)) {
        gpt_errf(err, "%s: %s", path, why);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    return KILN_STATUS_OK;
}

kiln_status gpt_checkpoint_config(kiln_context *ctx, const char *path, gpt_config *cfg, char *err) {
    kiln_safetensors *f;
    kiln_status st = open_checked(ctx, path, &f, err);
    if (st) return st;
    st = read_config(f, path, cfg, err);
    kiln_safetensors_close(f);
    return st;
}

/* The mixed-precision part of the recipe (a checkpoint from before it was recorded
 * trained in f32 without loss scaling: the defaults). */
static kiln_status read_precision(kiln_safetensors *f, const char *path, gpt_train_options *o,
                                  char *err) {
    const char *dt = kiln_safetensors_get_metadata(f, "dtype");
    const char *ls = kiln_safetensors_get_metadata(f, "loss_scaling");
    if (dt) {
        static const kiln_dtype ok[3] = {KILN_DTYPE_F32, KILN_DTYPE_BF16, KILN_DTYPE_F16};
        int k = 0;
        while (k < 3 && strcmp(dt, kiln_dtype_name(ok[k]))) k++;
        if (k == 3) {
            gpt_errf(err, "%s: metadata 'dtype' is '%s'; want f32, bf16 or f16", path, dt);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        o->dtype = ok[k];
    }
    if (ls) {
        int k = GPT_LOSS_SCALING_NONE;
        while (k <= GPT_LOSS_SCALING_DYNAMIC && strcmp(ls, gpt_loss_scaling_name(k))) k++;
        if (k > GPT_LOSS_SCALING_DYNAMIC) {
            gpt_errf(err, "%s: metadata 'loss_scaling' is '%s'; want none, static or dynamic", path,
                     ls);
            return KILN_STATUS_INVALID_ARGUMENT;
        }
        o->loss_scaling = (gpt_loss_scaling)k;
    }
    const char *init = kiln_safetensors_get_metadata(f, "loss_scale_init");
    char *end = NULL;
    double x = init ? strtod(init, &end) : 0;
    if (init && (end == init || *end || !(x > 0 && x <= 3.4e38))) {
        gpt_errf(err, "%s: metadata 'loss_scale_init' is '%s'; want a number in (0, 3.4e38]", path,
                 init);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    if (init) o->loss_scale = x;
    long long every = 0;
    if (kiln_safetensors_get_metadata(f, "loss_scale_growth_interval")) {
        kiln_status st = meta_int(f, path, "loss_scale_growth_interval", 1, INT32_MAX, &every, err);
        if (st) return st;
        o->loss_scale_growth_interval = every;
    }
    return KILN_STATUS_OK;
}

kiln_status gpt_checkpoint_read_options(kiln_context *ctx, const char *path, gpt_train_options *o,
                                        char *err) {
    kiln_safetensors *f;
    kiln_status st = open_checked(ctx, path, &f, err);
    if (st) return st;
    long long batch = 0, steps = 0, warmup = 0, seed = 0;
    if (!(st = read_config(f, path, &o->model, err)) &&
        !(st = meta_int(f, path, "batch", 1, 1 << 20, &batch, err)) &&
        !(st = meta_int(f, path, "steps", 1, GPT_MAX_STEPS, &steps, err)) &&
        !(st = meta_int(f, path, "warmup", 0, GPT_MAX_STEPS, &warmup, err)) &&
        !(st = meta_int(f, path, "seed", 0, (long long)(~0ULL >> 1), &seed, err))) {
        /* lr, weight decay and clip are always there; the rest (later additions) keep
         * their defaults when missing */
        const char *keys[7] = {"lr", "weight_decay", "clip", "beta1", "beta2", "eps", "min_lr"};
        double *dst[7] = {&o->lr,    &o->weight_decay, &o->clip,  &o->beta1,
                          &o->beta2, &o->eps,          &o->min_lr};
        double hi[7] = {1e6, 1e6, 1e6, 0.999999999999, 0.999999999999, 1, 1e6};
        for (int i = 0; i < 7 && !st; i++) {
            const char *v = kiln_safetensors_get_metadata(f, keys[i]);
            if (!v && i >= 3) continue;
            char *end = NULL;
            double x = v ? strtod(v, &end) : 0;
            if (!v || end == v || *end || !(x >= 0) || x > hi[i] || (i == 5 && !(x > 0))) {
                gpt_errf(err, "%s: metadata '%s' is %s; want a number in [0, %g]", path, keys[i],
                         v ? v : "missing", hi[i]);
                st = KILN_STATUS_INVALID_ARGUMENT;
            } else
                *dst[i] = x;
        }
        const char *sched = kiln_safetensors_get_metadata(f, "schedule");
        int k = 0;
        while (sched && k <= GPT_SCHEDULE_CONSTANT && strcmp(sched, gpt_schedule_name(k))) k++;
        if (!st && sched && k > GPT_SCHEDULE_CONSTANT) {
            gpt_errf(err, "%s: metadata 'schedule' is '%s'; want cosine, linear or constant", path,
                     sched);
            st = KILN_STATUS_INVALID_ARGUMENT;
        } else if (sched)
            o->schedule = (gpt_schedule)k;
        o->batch = (int)batch, o->steps = steps, o->warmup = warmup;
        o->seed = (uint64_t)seed;
        if (!st) st = read_precision(f, path, o, err);
    }
    kiln_safetensors_close(f);
    return st;
}

kiln_status gpt_checkpoint_save(kiln_context *ctx, const char *path, const gpt_config *cfg,
                                kiln_array *const *params, kiln_array *const *m,
                                kiln_array *const *v, int n_meta, const char *const *meta_kv,
                                char *err) {
    int P = gpt_num_params(cfg), n = m && v ? 3 * P : P;
    char(*names)[GPT_NAME_MAX + 8] = malloc((size_t)n * sizeof *names);
    const char **np = malloc((size_t)n * sizeof *np);
    kiln_array **arrays = malloc((size_t)n * sizeof *arrays);
    const char **kv = malloc((size_t)(2 * n_meta + 12) * sizeof *kv);
    kiln_status st = KILN_STATUS_OK;
    if (!names || !np || !arrays || !kv) {
        gpt_errf(err, "checkpoint %s: out of host memory", path);
        st = KILN_STATUS_HOST_OOM;
        goto done;
    }
    for (int i = 0; i < P; i++) {
        char base[GPT_NAME_MAX];
        int rank;
        int64_t dims[2];
        gpt_param_info(cfg, i, base, &rank, dims);
        for (int k = 0; k < n / P; k++) {
            snprintf(names[k * P + i], sizeof names[0], "%s%s",
                     k == 0   ? ""
                     : k == 1 ? "opt.m."
                              : "opt.v.",
                     base);
            np[k * P + i] = names[k * P + i];
            arrays[k * P + i] = k == 0 ? params[i] : k == 1 ? m[i] : v[i];
        }
    }
    char num[5][24];
    int cv[5] = {cfg->vocab, cfg->context, cfg->layers, cfg->heads, cfg->channels};
    static const char *const keys[5] = {"vocab", "context", "layers", "heads", "channels"};
    int k = 0;
    kv[k++] = "format", kv[k++] = "kiln-gpt";
    for (int i = 0; i < 5; i++) {
        snprintf(num[i], sizeof num[i], "%d", cv[i]);
        kv[k++] = keys[i], kv[k++] = num[i];
    }
    for (int i = 0; i < 2 * n_meta; i++) kv[k++] = meta_kv[i];
    for (int i = 0; i < n && !st; i++) st = check_finite(ctx, arrays[i], path, np[i], true, err);
    if (st) goto done;
    st = kiln_safetensors_save(ctx, path, n, np, arrays, k / 2, kv);
    if (st) gpt_errf(err, "saving the checkpoint: %s", kiln_last_error(ctx));
done:
    free(names), free(np), free(arrays), free(kv);
    return st;
}

/* Reads tensor name into *out after checking it is f32 of the shape wanted. */
static kiln_status read_tensor(kiln_context *ctx, kiln_safetensors *f, const char *path,
                               const char *name, int rank, const int64_t *dims, kiln_array **out,
                               char *err) {
    kiln_dtype t;
    int r;
    int64_t d[KILN_MAX_RANK];
    if (kiln_safetensors_get_info(f, name, &t, &r, d)) {
        gpt_errf(err, "%s: no tensor '%s' (the model needs it)", path, name);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    bool same = t == KILN_DTYPE_F32 && r == rank;
    for (int i = 0; same && i < rank; i++) same = d[i] == dims[i];
    if (!same) {
        char got[128], want[128];
        int a = snprintf(got, sizeof got, "%s[", kiln_dtype_name(t));
        for (int i = 0; i < r && a < 100; i++)
            a +=
                snprintf(got + a, sizeof got - (size_t)a, "%s%lld", i ? ", " : "", (long long)d[i]);
        snprintf(got + a, sizeof got - (size_t)a, "]");
        a = snprintf(want, sizeof want, "f32[");
        for (int i = 0; i < rank; i++)
            a += snprintf(want + a, sizeof want - (size_t)a, "%s%lld", i ? ", " : "",
                          (long long)dims[i]);
        snprintf(want + a, sizeof want - (size_t)a, "]");
        gpt_errf(err, "%s: tensor '%s' is %s; the model needs %s", path, name, got, want);
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    kiln_status st = kiln_safetensors_read(f, name, out);
    if (st) gpt_errf(err, "%s: reading '%s': %s", path, name, kiln_last_error(ctx));
    if (!st) st = check_finite(ctx, *out, path, name, false, err);
    return st;
}

kiln_status gpt_checkpoint_load(kiln_context *ctx, const char *path, const gpt_config *cfg,
                                kiln_array **params, kiln_array **m, kiln_array **v, char *err) {
    const kiln_memory_kind dev[3] = {KILN_MEMORY_DEVICE, KILN_MEMORY_DEVICE, KILN_MEMORY_DEVICE};
    return gpt_checkpoint_load_in(ctx, path, cfg, dev, params, m, v, err);
}

kiln_status gpt_checkpoint_load_in(kiln_context *ctx, const char *path, const gpt_config *cfg,
                                   const kiln_memory_kind kinds[3], kiln_array **params,
                                   kiln_array **m, kiln_array **v, char *err) {
    kiln_safetensors *f;
    kiln_status st = kiln_safetensors_open(ctx, path, &f);
    if (st) {
        gpt_errf(err, "%s", kiln_last_error(ctx));
        return st;
    }
    int P = gpt_num_params(cfg), groups = m && v ? 3 : 1;
    kiln_array **dst[3] = {params, m, v};
    for (int k = 0; k < groups; k++)
        for (int i = 0; i < P; i++) dst[k][i] = NULL;
    for (int k = 0; k < groups && !st; k++)
        for (int i = 0; i < P && !st; i++) {
            char base[GPT_NAME_MAX], name[GPT_NAME_MAX + 8];
            int rank;
            int64_t dims[2];
            gpt_param_info(cfg, i, base, &rank, dims);
            snprintf(name, sizeof name, "%s%s", k == 0 ? "" : k == 1 ? "opt.m." : "opt.v.", base);
            st = read_tensor(ctx, f, path, name, rank, dims, &dst[k][i], err);
            kiln_array *h = NULL;
            if (!st && kinds[k] != KILN_MEMORY_DEVICE) { /* moved there tensor by tensor */
                st = kiln_array_copy_to_memory(dst[k][i], kinds[k], &h);
                if (st)
                    gpt_errf(err, "%s: moving '%s' to host memory: %s", path, name,
                             kiln_last_error(ctx));
                kiln_array_destroy(dst[k][i]);
                dst[k][i] = h;
            }
        }
    kiln_safetensors_close(f);
    if (st)
        for (int k = 0; k < groups; k++)
            for (int i = 0; i < P; i++) kiln_array_destroy(dst[k][i]), dst[k][i] = NULL;
    return st;
}

/* ------------------------------------------------------------ layouts ---- */

/* The stacked layout's stack t is its layers' tensor t back to back, so converting either
 * way is a copy of bytes through the host: no rounding, bit-identical both ways. */

/* Frees the first n of a and clears them. */
static void destroy_all(kiln_array **a, int n) {
    for (int i = 0; i < n; i++) kiln_array_destroy(a[i]), a[i] = NULL;
}

/* Stack t ([L, ...] of dtype) from the L arrays src[l * GPT_PARAMS_PER_LAYER] (stack) or
 * into them (unstack), through one host buffer. */
static kiln_status convert_stack(kiln_context *ctx, const gpt_config *cfg, int t, bool stack,
                                 kiln_array **per, kiln_array **st_arr, char *err) {
    int L = cfg->layers, rank;
    int64_t dims[3];
    char name[GPT_NAME_MAX];
    gpt_param_info_layout(cfg, true, 2 + t, name, &rank, dims);
    kiln_dtype dt = kiln_array_dtype(stack ? per[0] : *st_arr);
    size_t one = kiln_array_nbytes(stack ? per[0] : *st_arr) / (stack ? 1 : (size_t)L);
    unsigned char *buf = malloc(one ? one * (size_t)L : 1);
    if (!buf) {
        gpt_errf(err, "out of host memory converting %s", name);
        return KILN_STATUS_HOST_OOM;
    }
    kiln_status s = KILN_STATUS_OK;
    if (stack) {
        for (int l = 0; l < L && !s; l++) {
            kiln_array *a = per[l * GPT_PARAMS_PER_LAYER];
            if (kiln_array_nbytes(a) != one || kiln_array_dtype(a) != dt)
                s = KILN_STATUS_INVALID_ARGUMENT;
            else
                s = kiln_array_copy_to_host(a, buf + (size_t)l * one, one);
        }
        if (!s) s = kiln_array_create(ctx, dt, rank, dims, buf, st_arr);
    } else {
        s = kiln_array_copy_to_host(*st_arr, buf, one * (size_t)L);
        for (int l = 0; l < L && !s; l++)
            s = kiln_array_create(ctx, dt, rank - 1, dims + 1, buf + (size_t)l * one,
                                  &per[l * GPT_PARAMS_PER_LAYER]);
    }
    free(buf);
    if (s)
        gpt_errf(err, "%s %s (%s, %d layers): %s", stack ? "stacking" : "unstacking", name,
                 kiln_dtype_name(dt), L,
                 s == KILN_STATUS_INVALID_ARGUMENT && stack ? "the layers' arrays differ"
                                                            : kiln_last_error(ctx));
    return s;
}

/* The arrays the two layouts share (wte, wpe, ln_f) are copied: each layout owns its own. */
static kiln_status copy_shared(kiln_context *ctx, kiln_array *src, kiln_array **dst, char *err) {
    size_t n = kiln_array_nbytes(src);
    unsigned char *buf = malloc(n ? n : 1);
    int rank = kiln_array_rank(src);
    int64_t dims[KILN_MAX_RANK];
    for (int i = 0; i < rank; i++) dims[i] = kiln_array_dim(src, i);
    kiln_status s = buf ? kiln_array_copy_to_host(src, buf, n) : KILN_STATUS_HOST_OOM;
    if (!s) s = kiln_array_create(ctx, kiln_array_dtype(src), rank, dims, buf, dst);
    if (s) gpt_errf(err, "copying a parameter: %s", buf ? kiln_last_error(ctx) : "out of memory");
    free(buf);
    return s;
}

static kiln_status convert_layout(kiln_context *ctx, const gpt_config *cfg, bool stack,
                                  kiln_array **per, kiln_array **stacked, char *err) {
    kiln_status s = gpt_config_check(cfg, err);
    if (s) return s;
    int n = gpt_num_params(cfg), ns = gpt_num_params_layout(cfg, true);
    kiln_array **dst = stack ? stacked : per, **src = stack ? per : stacked;
    int n_dst = stack ? ns : n;
    for (int i = 0; i < n_dst; i++) dst[i] = NULL;
    /* wte, wpe, ln_f.weight, ln_f.bias: the first two and last two of either layout */
    for (int k = 0; k < 4 && !s; k++) {
        int di = k < 2 ? k : n_dst - 4 + k, si = k < 2 ? k : (stack ? n : ns) - 4 + k;
        s = copy_shared(ctx, src[si], &dst[di], err);
    }
    for (int t = 0; t < GPT_PARAMS_PER_LAYER && !s; t++)
        s = convert_stack(ctx, cfg, t, stack, per + 2 + t, &stacked[2 + t], err);
    if (s) destroy_all(dst, n_dst);
    return s;
}

kiln_status gpt_params_stack(kiln_context *ctx, const gpt_config *cfg, kiln_array *const *per_layer,
                             kiln_array **stacked, char *err) {
    return convert_layout(ctx, cfg, true, (kiln_array **)per_layer, stacked, err);
}

kiln_status gpt_params_unstack(kiln_context *ctx, const gpt_config *cfg, kiln_array *const *stacked,
                               kiln_array **per_layer, char *err) {
    return convert_layout(ctx, cfg, false, per_layer, (kiln_array **)stacked, err);
}
