/* fuzz_config.c — libFuzzer target: configuration parsing.
 *
 * Each input sets every KILN_* variable of the README's table (or leaves it unset) and
 * the fields of kiln_context_options from its bytes, creates a context and, when that
 * works, takes and frees a little device memory so the resolved allocator settings are
 * used; it also feeds the same strings to the parsers (config_parse_bytes/double/int/
 * bool) directly. What must hold: no crash; a refused configuration comes with a message
 * (naming the variable or field); a parsed byte count reads back the same when printed.
 *
 * Paths (KILN_ALLOC_TRACE, KILN_CACHE_DIR, KILN_DUMP, KILN_NCCL_LIBRARY and the fields)
 * are confined to a private folder under /tmp: the input supplies a name with its slashes
 * replaced, so the fuzzer never writes outside that folder or loads a library from
 * elsewhere. Context creation runs no compiler, so KILN_CC is safe to set to anything;
 * the threads it starts (the pool, the queues of KILN_ASYNC, one device each of
 * KILN_CPU_DEVICES) end with the context. */
#include "fuzz_common.h"

#include "base/base.h"

#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every variable of README's table. */
// clang-format off
static const char *const vars[] = {
    "KILN_ALLOCATOR",        "KILN_PREALLOCATE",     "KILN_MEM_FRACTION",
    "KILN_MEMORY_LIMIT",     "KILN_ALLOC_TRACE",     "KILN_NUM_THREADS",
    "KILN_CACHE_DIR",        "KILN_CACHE_MAX_BYTES", "KILN_CC",
    "KILN_CC_FLAGS",         "KILN_VERIFY_PASSES",   "KILN_DUMP",
    "KILN_NCCL_LIBRARY",     "KILN_MEMORY_BUDGET",   "KILN_BLAS",
    "KILN_CPU_DEVICES",      "KILN_ASYNC",           "KILN_PROFILE",
    "KILN_MATMUL_PRECISION", "KILN_COMPILE_TIERS",   "KILN_ALLOW_EXCESS_PRECISION",
    "KILN_CONV_IM2COL",      "KILN_ATTENTION_CUDA_CORES"};
// clang-format on
#define N_VARS ((int)(sizeof vars / sizeof vars[0]))

static char fz_dir[64]; /* the private folder; set once */

static bool is_path_var(int i) {
    return i == 4 || i == 6 || i == 11 || i == 12;
}

/* A path inside fz_dir named by the input (slashes replaced: no way out of the folder). */
static void confine(char *out, size_t cap, const char *name) {
    int n = snprintf(out, cap, "%s/", fz_dir);
    for (size_t i = 0; name[i] && (size_t)n + 1 < cap; i++)
        out[n++] = name[i] == '/' ? '_' : name[i];
    out[n] = 0;
}

/* A string for a variable or field: usually one of the meaningful spellings, with the
 * input's bytes after it (the fuzzer finds the boundaries), else raw bytes. */
static void draw_value(fz_bytes *b, char *out, size_t cap) {
    static const char *const seeds[] = {"grow",
                                        "preallocate",
                                        "platform",
                                        "bfc",
                                        "true",
                                        "off",
                                        "0.5",
                                        "1e-9",
                                        "512M",
                                        "2GiB",
                                        "1.5K",
                                        "0x10",
                                        "-1",
                                        "4096",
                                        "4097",
                                        " 7 ",
                                        "nan",
                                        "1e400",
                                        "18446744073709551615",
                                        "16E",
                                        "cc",
                                        "-O2 -g",
                                        "50%",
                                        "openblas",
                                        "onednn",
                                        "blis",
                                        "kiln",
                                        "64",
                                        "65",
                                        "tf32",
                                        "highest",
                                        "1"};
    size_t at = 0;
    uint8_t k = fz_u8(b);
    if (k < 2 * (sizeof seeds / sizeof seeds[0]))
        at = (size_t)snprintf(out, cap, "%s", seeds[k / 2]);
    if (k % 2 || k >= 2 * (sizeof seeds / sizeof seeds[0])) fz_string(b, out + at, cap - 1 - at);
}

static void check_parsers(const char *v) {
    uint64_t bytes, again;
    double d;
    long l;
    bool flag;
    if (config_parse_bytes(v, &bytes)) {
        char text[32];
        snprintf(text, sizeof text, "%llu", (unsigned long long)bytes);
        if (!config_parse_bytes(text, &again) || again != bytes) {
            fprintf(stderr, "config_parse_bytes(\"%s\") = %s, which does not read back\n", v, text);
            abort();
        }
    }
    if (config_parse_double(v, &d) && !isfinite(d)) {
        fprintf(stderr, "config_parse_double(\"%s\") accepted a non-finite value\n", v);
        abort();
    }
    (void)config_parse_int(v, &l);
    (void)config_parse_bool(v, &flag);
}

/* Touches the allocator the configuration made, unless it would reserve a large part of
 * the machine (preallocate with no small limit). */
static void use_context(kiln_context *ctx) {
    const kn_config *c = &ctx->config;
    if (c->alloc_mode == KILN_ALLOC_MODE_PREALLOCATE &&
        !(c->memory_limit && c->memory_limit <= ((uint64_t)64 << 20)))
        return;
    void *p = NULL;
    if (kiln_device_alloc(ctx, 0, 4096, "fuzz", &p) == KILN_STATUS_OK)
        kiln_device_free(ctx, 0, p);
    else if (!kiln_last_error(ctx)[0])
        fprintf(stderr, "kiln_device_alloc failed without a message\n"), abort();
    if (c->alloc_trace[0]) unlink(c->alloc_trace);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    snprintf(fz_dir, sizeof fz_dir, "/tmp/kiln-fuzz-config-%u", (unsigned)geteuid());
    mkdir(fz_dir, 0700);
    unsetenv("XDG_CACHE_HOME"); /* the default cache folder is not the fuzzer's business */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char values[N_VARS][1200], fields[5][1200], tmp[1200];
    fz_bytes b = {data, size, 0};
    uint32_t set = (uint32_t)fz_u8(&b) << 16 | (uint32_t)fz_u8(&b) << 8 | fz_u8(&b);
    for (int i = 0; i < N_VARS; i++) {
        if (!(set >> i & 1)) {
            fz_setenv(vars[i], NULL);
            continue;
        }
        draw_value(&b, tmp, sizeof tmp);
        if (is_path_var(i) && tmp[0])
            confine(values[i], sizeof values[i], tmp);
        else
            memcpy(values[i], tmp, sizeof tmp);
        check_parsers(values[i]);
        fz_setenv(vars[i], values[i]);
    }

    kiln_context_options o;
    memset(&o, 0, sizeof o);
    uint8_t f = fz_u8(&b);
    o.ignore_environment = f & 1;
    o.verify_passes = f & 2;
    o.alloc_mode = (kiln_alloc_mode)(f >> 2 & 7); /* 4..7: not modes */
    uint64_t r = fz_u64(&b);
    o.mem_fraction = (f & 0x20) ? (double)(r & 0xffff) / 32768.0 - 0.25 : 0;
    if (f & 0x40) memcpy(&o.mem_fraction, &r, sizeof r); /* any bits: NaN, inf, subnormal */
    o.memory_limit = fz_u8(&b) < 128 ? 0 : fz_u64(&b);
    o.num_threads = (int)(int32_t)(fz_u8(&b) < 200 ? fz_u8(&b) : (uint32_t)fz_u64(&b));
    o.cache_max_bytes = (int64_t)(fz_u8(&b) < 200 ? fz_u8(&b) - 2 : fz_u64(&b));
    const char **strs[5] = {&o.cache_dir, &o.cc, &o.cc_flags, &o.alloc_trace, &o.dump_dir};
    uint8_t given = fz_u8(&b);
    for (int i = 0; i < 5; i++) {
        if (!(given >> i & 1)) continue;
        draw_value(&b, tmp, sizeof tmp);
        if (i == 0 || i >= 3)
            confine(fields[i], sizeof fields[i], tmp);
        else
            memcpy(fields[i], tmp, sizeof tmp);
        *strs[i] = fields[i];
    }

    kiln_context *ctx = NULL;
    char err[512];
    kiln_status s = kiln_context_create(&o, &ctx, err, sizeof err);
    if (s == KILN_STATUS_OK) {
        use_context(ctx);
        kiln_context_destroy(ctx);
    } else if (!err[0] || ctx) {
        fprintf(stderr, "kiln_context_create failed (%s) without a message or left a context\n",
                kiln_status_name(s));
        abort();
    }
    return 0;
}
