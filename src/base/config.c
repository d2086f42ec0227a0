/* config.c — options and the KILN_* environment variables, resolved once per context.
 *
 * Environment variables override the options struct (as JAX's XLA_PYTHON_CLIENT_* do).
 * A value that cannot be parsed is an error that names the variable and the value; it
 * never falls back to a default silently. Every variable is also a field of
 * kiln_context_options (zero: the default). The table is in docs/memory.md and README.md. */
#include "base.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool config_parse_int(const char *s, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || errno) return false;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return false;
    *out = v;
    return true;
}

bool config_parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v)) return false;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return false;
    *out = v;
    return true;
}

bool config_parse_bool(const char *s, bool *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no",
                                                                                "off"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) return *out = true, true;
        if (!strcasecmp(s, no[i])) return *out = false, true;
    }
    return false;
}

/* A byte count: a number (integer or decimal) and an optional unit: K, M, G, T with
 * an optional "i" and "B" (KiB = K = 1024; binary units throughout, as memory is). */
bool config_parse_bytes(const char *s, uint64_t *out) {
    char *end;
    if (strpbrk(s, "xXnN")) return false; /* no hex floats, nan or inf spelled out */
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0) return false;
    while (isspace((unsigned char)*end)) end++;
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1024.0, end++; break;
    case 'M': mult = 1024.0 * 1024, end++; break;
    case 'G': mult = 1024.0 * 1024 * 1024, end++; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024, end++; break;
    default: break;
    }
    if (mult > 1 && (*end == 'i' || *end == 'I')) end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return false;
    double bytes = v * mult;
    /* a fraction of a byte ("0.5", "1.3") is a mistake, not a request for 0 = no limit */
    if (bytes >= 18446744073709551616.0 || bytes != floor(bytes)) return false;
    *out = (uint64_t)bytes;
    return true;
}

static bool parse_mode(const char *s, kiln_alloc_mode *out) {
    static const struct {
        const char *name;
        kiln_alloc_mode mode;
    } modes[] = {{"default", KILN_ALLOC_MODE_DEFAULT},
                 {"grow", KILN_ALLOC_MODE_GROW},
                 {"bfc", KILN_ALLOC_MODE_DEFAULT},
                 {"preallocate", KILN_ALLOC_MODE_PREALLOCATE},
                 {"platform", KILN_ALLOC_MODE_PLATFORM}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcasecmp(s, modes[i].name)) return *out = modes[i].mode, true;
    return false;
}

static bool parse_blas(const char *s, kiln_blas *out) {
    static const char *const names[] = {"default", "openblas", "blis", "onednn", "kiln"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(s, names[i])) return *out = (kiln_blas)i, true;
    return false;
}

static kiln_status bad_env(char *err, size_t n, const char *var, const char *val,
                           const char *expected) {
    snprintf(err, n, "environment variable %s=\"%s\" cannot be used: expected %s", var, val,
             expected);
    return KILN_STATUS_CONFIG;
}

static kiln_status bad_opt(char *err, size_t n, const char *what) {
    snprintf(err, n, "kiln_context_options: %s", what);
    return KILN_STATUS_CONFIG;
}

#define PATH_CAP       sizeof((kn_config *)0)->cache_dir /* every string setting's buffer */
#define KN_SAME_CAP(f) _Static_assert(sizeof((kn_config *)0)->f == PATH_CAP, #f " size")
KN_SAME_CAP(cc);
KN_SAME_CAP(cc_flags);
KN_SAME_CAP(alloc_trace);
KN_SAME_CAP(dump_dir);
KN_SAME_CAP(nccl_library);

static kiln_status check_options(const kiln_context_options *o, char *err, size_t n) {
    if ((unsigned)o->alloc_mode > KILN_ALLOC_MODE_PLATFORM)
        return bad_opt(err, n, "alloc_mode is not a kiln_alloc_mode value");
    if ((unsigned)o->blas > KILN_BLAS_KILN) return bad_opt(err, n, "blas is not a kiln_blas value");
    if (o->mem_fraction < 0 || o->mem_fraction > 1 || isnan(o->mem_fraction))
        return bad_opt(err, n, "mem_fraction must be in (0, 1], or 0 for the default");
    if (o->num_threads < 0 || o->num_threads > 4096)
        return bad_opt(err, n, "num_threads must be in [0, 4096] (0: all cores)");
    if (!(o->memory_budget_fraction >= 0 && o->memory_budget_fraction <= 1))
        return bad_opt(err, n, "memory_budget_fraction must be in (0, 1], or 0 for none");
    if (o->cpu_devices < 0 || o->cpu_devices > KN_MAX_CPU_DEVICES)
        return bad_opt(err, n, "cpu_devices must be in [0, 64] (0: one CPU device)");
    if (o->compile_tiers < 0 || o->compile_tiers > 2)
        return bad_opt(err, n,
                       "compile_tiers must be 1, 2 or 0 for the default (2 where the tiers give "
                       "the same bits, else 1)");
    if (o->cache_max_bytes < -1)
        return bad_opt(err, n,
                       "cache_max_bytes must be a byte count, 0 for the default (1 GiB) or -1 "
                       "for no disk cache");
    static const struct {
        const char *name;
        size_t offset;
    } strs[] = {{"cache_dir", offsetof(kiln_context_options, cache_dir)},
                {"cc", offsetof(kiln_context_options, cc)},
                {"cc_flags", offsetof(kiln_context_options, cc_flags)},
                {"alloc_trace", offsetof(kiln_context_options, alloc_trace)},
                {"dump_dir", offsetof(kiln_context_options, dump_dir)},
                {"nccl_library", offsetof(kiln_context_options, nccl_library)}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        const char *s = *(const char *const *)((const char *)o + strs[i].offset);
        if (s && strlen(s) >= PATH_CAP) {
            snprintf(err, n, "kiln_context_options: %s is longer than %zu bytes", strs[i].name,
                     PATH_CAP - 1);
            return KILN_STATUS_CONFIG;
        }
    }
    return KILN_STATUS_OK;
}

/* A string variable (a path, flags): copied into dst when set and not empty. */
static kiln_status env_str(char *dst, const char *var, const char *expected, char *err, size_t n) {
    const char *v = getenv(var);
    if (!v || !*v) return KILN_STATUS_OK;
    if (strlen(v) >= PATH_CAP) return bad_env(err, n, var, v, expected);
    snprintf(dst, PATH_CAP, "%s", v);
    return KILN_STATUS_OK;
}

/* The C compiler the CPU backend runs, its extra flags, the disk cache's size cap and the
 * files written for debugging. */
static kiln_status apply_env_strings(kn_config *c, char *err, size_t n) {
    const char *v;
    kiln_status s;
    if ((v = getenv("KILN_CACHE_MAX_BYTES")) && *v) {
        if (!config_parse_bytes(v, &c->cache_max_bytes))
            return bad_env(err, n, "KILN_CACHE_MAX_BYTES", v,
                           "a byte count such as 1073741824, 512M or 2GiB (0: no disk cache)");
    }
    if ((s = env_str(c->cc, "KILN_CC", "a path shorter than 1024 bytes", err, n)) ||
        (s = env_str(c->cc_flags, "KILN_CC_FLAGS", "flags shorter than 1024 bytes in all", err,
                     n)) ||
        (s = env_str(c->cache_dir, "KILN_CACHE_DIR", "a path shorter than 1024 bytes", err, n)) ||
        (s = env_str(c->alloc_trace, "KILN_ALLOC_TRACE", "a path shorter than 1024 bytes", err,
                     n)) ||
        (s = env_str(c->dump_dir, "KILN_DUMP", "a directory path shorter than 1024 bytes", err,
                     n)) ||
        (s = env_str(c->nccl_library, "KILN_NCCL_LIBRARY", "a path shorter than 1024 bytes", err,
                     n)))
        return s;
    const char *trace = getenv("KILN_ALLOC_TRACE");
    c->alloc_trace_env = trace && *trace;
    return KILN_STATUS_OK;
}

static kiln_status apply_env(kn_config *c, char *err, size_t n) {
    const char *v;
    bool prealloc_set = false, prealloc = false, mode_set = false;
    if ((v = getenv("KILN_ALLOCATOR")) && *v) {
        if (!parse_mode(v, &c->alloc_mode))
            return bad_env(err, n, "KILN_ALLOCATOR", v,
                           "one of default, grow, preallocate, platform");
        mode_set = true;
    }
    if ((v = getenv("KILN_PREALLOCATE")) && *v) {
        if (!config_parse_bool(v, &prealloc))
            return bad_env(err, n, "KILN_PREALLOCATE", v, "true or false (1/0, yes/no, on/off)");
        prealloc_set = true;
    }
    if (prealloc_set && mode_set && c->alloc_mode != KILN_ALLOC_MODE_DEFAULT &&
        (c->alloc_mode == KILN_ALLOC_MODE_PREALLOCATE) != prealloc) {
        snprintf(err, n,
                 "environment variables KILN_ALLOCATOR=%s and KILN_PREALLOCATE=%s disagree; "
                 "set only one",
                 getenv("KILN_ALLOCATOR"), getenv("KILN_PREALLOCATE"));
        return KILN_STATUS_CONFIG;
    }
    if (prealloc_set && c->alloc_mode != KILN_ALLOC_MODE_PLATFORM)
        c->alloc_mode = prealloc ? KILN_ALLOC_MODE_PREALLOCATE : KILN_ALLOC_MODE_GROW;
    if ((v = getenv("KILN_MEM_FRACTION")) && *v) {
        double f;
        if (!config_parse_double(v, &f) || !(f > 0 && f <= 1))
            return bad_env(err, n, "KILN_MEM_FRACTION", v, "a number in (0, 1], such as 0.5");
        c->mem_fraction = f;
    }
    if ((v = getenv("KILN_MEMORY_LIMIT")) && *v) {
        if (!config_parse_bytes(v, &c->memory_limit))
            return bad_env(err, n, "KILN_MEMORY_LIMIT", v,
                           "a byte count such as 1073741824, 512M or 2GiB (0: no limit)");
    }
    if ((v = getenv("KILN_MEMORY_BUDGET")) && *v) {
        size_t len = strlen(v);
        double f;
        if (v[len - 1] == '%') {
            char num[64];
            if (len >= sizeof num) len = sizeof num; /* too long to be a number: junk */
            snprintf(num, sizeof num, "%.*s", (int)(len - 1), v);
            if (!config_parse_double(num, &f) || !(f > 0 && f <= 100))
                return bad_env(err, n, "KILN_MEMORY_BUDGET", v,
                               "bytes such as 268435456 or 256MiB, or a share of the peak "
                               "without rematerialisation in (0%, 100%] such as 50%");
            c->memory_budget_fraction = f / 100, c->memory_budget = 0;
        } else {
            if (!config_parse_bytes(v, &c->memory_budget))
                return bad_env(err, n, "KILN_MEMORY_BUDGET", v,
                               "bytes such as 268435456 or 256MiB, or a share of the peak "
                               "without rematerialisation such as 50% (0: none)");
            c->memory_budget_fraction = 0;
        }
    }
    if ((v = getenv("KILN_NUM_THREADS")) && *v) {
        long t;
        if (!config_parse_int(v, &t) || t < 0 || t > 4096)
            return bad_env(err, n, "KILN_NUM_THREADS", v, "an integer in [0, 4096] (0: all cores)");
        c->num_threads = (int)t;
    }
    if ((v = getenv("KILN_CPU_DEVICES")) && *v) {
        long d;
        if (!config_parse_int(v, &d) || d < 1 || d > KN_MAX_CPU_DEVICES)
            return bad_env(err, n, "KILN_CPU_DEVICES", v, "an integer in [1, 64]");
        c->cpu_devices = (int)d;
    }
    if ((v = getenv("KILN_ASYNC")) && *v) {
        if (!config_parse_bool(v, &c->async_dispatch))
            return bad_env(err, n, "KILN_ASYNC", v, "true or false (1/0, yes/no, on/off)");
    }
    if ((v = getenv("KILN_BLAS")) && *v) {
        if (!parse_blas(v, &c->blas))
            return bad_env(err, n, "KILN_BLAS", v, "one of default, openblas, blis, onednn, kiln");
    }
    if ((v = getenv("KILN_MATMUL_PRECISION")) && *v) {
        if (!strcasecmp(v, "tf32") || !strcasecmp(v, "tensorfloat32"))
            c->matmul_tf32 = true;
        else if (!strcasecmp(v, "highest") || !strcasecmp(v, "float32") ||
                 !strcasecmp(v, "default"))
            c->matmul_tf32 = false;
        else
            return bad_env(err, n, "KILN_MATMUL_PRECISION", v,
                           "tf32 (or tensorfloat32) for TF32 products on a GPU, or highest "
                           "(float32, default) for exact f32");
    }
    if ((v = getenv("KILN_COMPILE_TIERS")) && *v) {
        long t;
        if (!config_parse_int(v, &t) || t < 1 || t > 2)
            return bad_env(err, n, "KILN_COMPILE_TIERS", v,
                           "1 (the -O3 build only) or 2 (the kernels run from their "
                           "descriptions first, -O3 in the background)");
        c->compile_tiers = (int)t;
    }
    if ((v = getenv("KILN_ALLOW_EXCESS_PRECISION")) && *v) {
        if (!config_parse_bool(v, &c->excess_precision))
            return bad_env(err, n, "KILN_ALLOW_EXCESS_PRECISION", v,
                           "true or false (1/0, yes/no, on/off)");
    }
    if ((v = getenv("KILN_CONV_IM2COL")) && *v) {
        if (!config_parse_bool(v, &c->conv_im2col))
            return bad_env(err, n, "KILN_CONV_IM2COL", v, "true or false (1/0, yes/no, on/off)");
    }
    if ((v = getenv("KILN_ATTENTION_CUDA_CORES")) && *v) {
        if (!config_parse_bool(v, &c->attention_cuda_cores))
            return bad_env(err, n, "KILN_ATTENTION_CUDA_CORES", v,
                           "true or false (1/0, yes/no, on/off)");
    }
    if ((v = getenv("KILN_PROFILE")) && *v) {
        if (!config_parse_bool(v, &c->profile))
            return bad_env(err, n, "KILN_PROFILE", v, "true or false (1/0, yes/no, on/off)");
    }
    if ((v = getenv("KILN_VERIFY_PASSES")) && *v) {
        if (!config_parse_bool(v, &c->verify_passes))
            return bad_env(err, n, "KILN_VERIFY_PASSES", v, "true or false (1/0, yes/no, on/off)");
    }
    return apply_env_strings(c, err, n);
}

/* The option's spelling of the disk cache's cap (0: default, -1: none) in kn_config's
 * (0: none), which is the variable's. */
static uint64_t cache_cap(int64_t option) {
    if (option == 0) return (uint64_t)1 << 30;
    return option < 0 ? 0 : (uint64_t)option;
}

kiln_status config_resolve(const kiln_context_options *opts, kn_config *cfg, char *err,
                           size_t err_size) {
    static const kiln_context_options zero;
    const kiln_context_options *o = opts ? opts : &zero;
    kiln_status s = check_options(o, err, err_size);
    if (s) return s;
    *cfg = (kn_config){.alloc_mode = o->alloc_mode,
                       .mem_fraction = o->mem_fraction,
                       .memory_limit = o->memory_limit,
                       .memory_budget = o->memory_budget,
                       .memory_budget_fraction = o->memory_budget_fraction,
                       .num_threads = o->num_threads,
                       .verify_passes = o->verify_passes,
                       .cpu_devices = o->cpu_devices,
                       .async_dispatch = o->async_dispatch,
                       .blas = o->blas,
                       .matmul_tf32 = o->matmul_tf32,
                       .profile = o->profile,
                       .compile_tiers = o->compile_tiers,
                       .excess_precision = o->allow_excess_precision,
                       .conv_im2col = o->conv_im2col,
                       .attention_cuda_cores = o->attention_cuda_cores,
                       .cache_max_bytes = cache_cap(o->cache_max_bytes)};
    /* lengths were checked above */
    if (o->cache_dir) snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s", o->cache_dir);
    if (o->cc) snprintf(cfg->cc, sizeof cfg->cc, "%s", o->cc);
    if (o->cc_flags) snprintf(cfg->cc_flags, sizeof cfg->cc_flags, "%s", o->cc_flags);
    if (o->alloc_trace) snprintf(cfg->alloc_trace, sizeof cfg->alloc_trace, "%s", o->alloc_trace);
    if (o->dump_dir) snprintf(cfg->dump_dir, sizeof cfg->dump_dir, "%s", o->dump_dir);
    if (o->nccl_library)
        snprintf(cfg->nccl_library, sizeof cfg->nccl_library, "%s", o->nccl_library);
    if (!o->ignore_environment && (s = apply_env(cfg, err, err_size))) return s;
    if (cfg->mem_fraction == 0) cfg->mem_fraction = 0.75;
    if (cfg->cpu_devices == 0) cfg->cpu_devices = 1;
    if (!cfg->cache_dir[0]) {
        /* the XDG base directory spec: a relative XDG_CACHE_HOME is invalid, ignored */
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/')
            snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s/kiln", xdg);
        else if (home && home[0] == '/')
            snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s/.cache/kiln", home);
        else
            snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "/tmp/kiln-cache");
    }
    return KILN_STATUS_OK;
}
