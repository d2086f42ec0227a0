/* test_config.c — options and KILN_* environment variables: every unparseable value is a
 * KILN_STATUS_CONFIG whose message names the variable and the value; good values reach the
 * device allocator (mode, limit, fraction, trace file); every variable is also an option
 * field, checked the same way, which the variable overrides. */
#include "test.h"

#include "base/base.h"

#include <stdlib.h>
#include <unistd.h>

static const char *const vars[] = {
    "KILN_ALLOCATOR",    "KILN_PREALLOCATE",         "KILN_MEM_FRACTION",
    "KILN_MEMORY_LIMIT", "KILN_NUM_THREADS",         "KILN_CACHE_DIR",
    "KILN_ALLOC_TRACE",  "KILN_CACHE_MAX_BYTES",     "KILN_CC",
    "KILN_CC_FLAGS",     "KILN_VERIFY_PASSES",       "KILN_DUMP",
    "KILN_BLAS",         "KILN_NCCL_LIBRARY",        "KILN_ALLOW_EXCESS_PRECISION",
    "KILN_CONV_IM2COL",  "KILN_ATTENTION_CUDA_CORES"};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* Creates a context that reads the environment; returns its status, message in err. */
static kiln_status create(kiln_context **ctx, const kiln_context_options *o, char *err, size_t n) {
    *ctx = NULL;
    return kiln_context_create(o, ctx, err, n);
}

static void expect_env_error(const char *var, const char *value) {
    clear_env();
    setenv(var, value, 1);
    kiln_context *ctx;
    char err[4096] = "";
    CHECK_STATUS(create(&ctx, NULL, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK(ctx == NULL);
    CHECK_CONTAINS(err, var);
    CHECK_CONTAINS(err, value);
    clear_env();
}

static void test_bad_values(void) {
    expect_env_error("KILN_ALLOCATOR", "fastest");
    expect_env_error("KILN_PREALLOCATE", "maybe");
    expect_env_error("KILN_MEM_FRACTION", "1.5");
    expect_env_error("KILN_MEM_FRACTION", "0");
    expect_env_error("KILN_MEM_FRACTION", "half");
    expect_env_error("KILN_MEMORY_LIMIT", "12Q");
    expect_env_error("KILN_MEMORY_LIMIT", "-5M");
    expect_env_error("KILN_NUM_THREADS", "-1");
    expect_env_error("KILN_NUM_THREADS", "four");
    char long_path[1100];
    memset(long_path, 'x', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = 0;
    expect_env_error("KILN_ALLOC_TRACE", long_path);
    expect_env_error("KILN_CACHE_DIR", long_path);
    expect_env_error("KILN_CC", long_path);
    expect_env_error("KILN_CC_FLAGS", long_path);
    expect_env_error("KILN_DUMP", long_path);
    expect_env_error("KILN_CACHE_MAX_BYTES", "lots");
    expect_env_error("KILN_CACHE_MAX_BYTES", "-1");
    expect_env_error("KILN_VERIFY_PASSES", "maybe");
    expect_env_error("KILN_NUM_THREADS", "5000");
    expect_env_error("KILN_BLAS", "mkl");
    expect_env_error("KILN_ALLOW_EXCESS_PRECISION", "sometimes");
    expect_env_error("KILN_CONV_IM2COL", "cudnn");
    expect_env_error("KILN_ATTENTION_CUDA_CORES", "wmma");
}

static void test_disagreeing_variables(void) {
    clear_env();
    setenv("KILN_ALLOCATOR", "grow", 1);
    setenv("KILN_PREALLOCATE", "true", 1);
    kiln_context *ctx;
    char err[512];
    CHECK_STATUS(create(&ctx, NULL, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_ALLOCATOR=grow");
    CHECK_CONTAINS(err, "KILN_PREALLOCATE=true");
    clear_env();
}

static void test_bad_options(void) {
    clear_env();
    kiln_context *ctx;
    char err[512];
    kiln_context_options o = {.mem_fraction = 1.5};
    CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "mem_fraction");
    o = (kiln_context_options){.alloc_mode = (kiln_alloc_mode)42};
    CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "alloc_mode");
    o = (kiln_context_options){.blas = (kiln_blas)9};
    CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "blas");
    o = (kiln_context_options){.num_threads = 5000};
    CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "num_threads");
    o = (kiln_context_options){.cache_max_bytes = -2};
    CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "cache_max_bytes");
    /* Every string field is checked, and the message names the field. */
    char long_path[1100];
    memset(long_path, 'x', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = 0;
    static const char *const fields[] = {"cache_dir",   "cc",       "cc_flags",
                                         "alloc_trace", "dump_dir", "nccl_library"};
    for (int i = 0; i < 6; i++) {
        o = (kiln_context_options){0};
        const char **f[] = {&o.cache_dir,   &o.cc,       &o.cc_flags,
                            &o.alloc_trace, &o.dump_dir, &o.nccl_library};
        *f[i] = long_path;
        CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_CONFIG);
        CHECK(ctx == NULL);
        CHECK_CONTAINS(err, fields[i]);
        CHECK_CONTAINS(err, "longer than 1023 bytes");
    }
}

/* The resolved configuration of a context made with o and one variable set (or none). */
static kn_config config_with(const char *var, const char *value, const kiln_context_options *o) {
    clear_env();
    if (var) setenv(var, value, 1);
    kn_config c;
    memset(&c, 0, sizeof c);
    kiln_context *ctx;
    char err[512] = "";
    CHECK_STATUS(create(&ctx, o, err, sizeof err), KILN_STATUS_OK);
    if (ctx)
        c = ctx->config, kiln_context_destroy(ctx);
    else
        fprintf(stderr, "  %s\n", err);
    clear_env();
    return c;
}

/* Each setting that has no observable effect in a test of its own reaches the resolved
 * configuration from its option field, and its variable overrides the field. */
static void test_option_fields(void) {
    /* The compiler named must exist when the context is made (any executable will do). */
    kiln_context_options o = {.cc = "/bin/sh",
                              .cc_flags = "-fno-math-errno",
                              .dump_dir = "/tmp/kiln-dump-opt",
                              .nccl_library = "/opt/nccl/libnccl.so.2",
                              .cache_max_bytes = 5 << 20,
                              .verify_passes = true,
                              .blas = KILN_BLAS_KILN};
    kn_config c = config_with(NULL, NULL, &o);
    CHECK(c.blas == KILN_BLAS_KILN);
    c = config_with("KILN_BLAS", "OneDNN", &o);
    CHECK(c.blas == KILN_BLAS_ONEDNN);
    c = config_with("KILN_BLAS", "default", &o);
    CHECK(c.blas == KILN_BLAS_DEFAULT);
    CHECK(!strcmp(c.cc, "/bin/sh") && !strcmp(c.cc_flags, "-fno-math-errno"));
    CHECK(!strcmp(c.dump_dir, "/tmp/kiln-dump-opt"));
    CHECK(c.cache_max_bytes == 5u << 20 && c.verify_passes);

    c = config_with("KILN_DUMP", "/tmp/kiln-dump-env", &o);
    CHECK(!strcmp(c.dump_dir, "/tmp/kiln-dump-env"));
    CHECK(!strcmp(c.nccl_library, "/opt/nccl/libnccl.so.2"));
    c = config_with("KILN_NCCL_LIBRARY", "libnccl.so.2.27", &o);
    CHECK(!strcmp(c.nccl_library, "libnccl.so.2.27"));
    c = config_with("KILN_CC", "sh", &o);
    CHECK(!strcmp(c.cc, "sh"));
    c = config_with("KILN_CC_FLAGS", "-O1", &o);
    CHECK(!strcmp(c.cc_flags, "-O1"));
    c = config_with("KILN_VERIFY_PASSES", "off", &o);
    CHECK(!c.verify_passes);
    c = config_with("KILN_ALLOW_EXCESS_PRECISION", "yes", &o);
    CHECK(c.excess_precision);
    o.allow_excess_precision = true;
    CHECK(config_with(NULL, NULL, &o).excess_precision);
    CHECK(!config_with("KILN_ALLOW_EXCESS_PRECISION", "0", &o).excess_precision);
    o.allow_excess_precision = false;
    CHECK(config_with("KILN_CONV_IM2COL", "on", &o).conv_im2col);
    CHECK(!config_with("KILN_CONV_IM2COL", "no", &o).conv_im2col);
    o.conv_im2col = true;
    CHECK(config_with(NULL, NULL, &o).conv_im2col);
    o.conv_im2col = false;
    CHECK(config_with("KILN_ATTENTION_CUDA_CORES", "1", &o).attention_cuda_cores);
    CHECK(!config_with("KILN_ATTENTION_CUDA_CORES", "off", &o).attention_cuda_cores);
    o.attention_cuda_cores = true;
    CHECK(config_with(NULL, NULL, &o).attention_cuda_cores);
    o.attention_cuda_cores = false;
    c = config_with("KILN_CACHE_MAX_BYTES", "0", &o); /* the variable's "no disk cache" */
    CHECK(c.cache_max_bytes == 0);
    o.ignore_environment = true;
    c = config_with("KILN_DUMP", "/tmp/kiln-dump-env", &o);
    CHECK(!strcmp(c.dump_dir, "/tmp/kiln-dump-opt"));

    /* Zero is the default; -1 is the option's "no disk cache". */
    c = config_with(NULL, NULL, &(kiln_context_options){0});
    CHECK(c.cache_max_bytes == 1u << 30 && !c.dump_dir[0] && !c.cc[0] && !c.cc_flags[0]);
    c = config_with(NULL, NULL, &(kiln_context_options){.cache_max_bytes = -1});
    CHECK(c.cache_max_bytes == 0);
}

static kiln_memory_stats stats_with_env(const char *var, const char *value,
                                        const kiln_context_options *o) {
    clear_env();
    if (var) setenv(var, value, 1);
    kiln_memory_stats st;
    memset(&st, 0, sizeof st);
    kiln_context *ctx;
    char err[512];
    CHECK_STATUS(create(&ctx, o, err, sizeof err), KILN_STATUS_OK);
    if (ctx) {
        void *p = NULL;
        CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 1000, "probe", &p));
        CHECK_OK(ctx, kiln_device_get_memory_stats(ctx, 0, &st));
        CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
        kiln_context_destroy(ctx);
    }
    clear_env();
    return st;
}

static void test_good_values(void) {
    CHECK(stats_with_env(NULL, NULL, NULL).mode == KILN_ALLOC_MODE_GROW); /* the CPU's default */
    CHECK(stats_with_env("KILN_ALLOCATOR", "platform", NULL).mode == KILN_ALLOC_MODE_PLATFORM);
    CHECK(stats_with_env("KILN_ALLOCATOR", "BFC", NULL).mode == KILN_ALLOC_MODE_GROW);
    kiln_memory_stats st = stats_with_env("KILN_MEMORY_LIMIT", "16M", NULL);
    CHECK(st.bytes_limit == 16u << 20);
    st = stats_with_env("KILN_PREALLOCATE", "true",
                        &(kiln_context_options){.memory_limit = 8u << 20});
    CHECK(st.mode == KILN_ALLOC_MODE_PREALLOCATE && st.bytes_reserved == 8u << 20);
    st = stats_with_env("KILN_PREALLOCATE", "0",
                        &(kiln_context_options){.alloc_mode = KILN_ALLOC_MODE_PREALLOCATE});
    CHECK(st.mode == KILN_ALLOC_MODE_GROW); /* the environment overrides the options */
    /* ignore_environment: the variable is not even parsed. */
    st = stats_with_env("KILN_ALLOCATOR", "junk",
                        &(kiln_context_options){.ignore_environment = true});
    CHECK(st.mode == KILN_ALLOC_MODE_GROW);
}

/* The default cache folder: $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln, each only when
 * absolute (the XDG spec: a relative one is ignored; an outside check found kiln creating
 * ./relative/dir/kiln), else /tmp/kiln-cache. */
static void test_cache_dir_default(void) {
    const char *xdg0 = getenv("XDG_CACHE_HOME"), *home0 = getenv("HOME");
    char *xdg = xdg0 ? strdup(xdg0) : NULL, *home = home0 ? strdup(home0) : NULL;
    static const struct {
        const char *xdg, *home, *want;
    } cases[] = {{"/x/cache", "/h", "/x/cache/kiln"},
                 {"relative/dir", "/h", "/h/.cache/kiln"},
                 {"", "/h", "/h/.cache/kiln"},
                 {"relative", "also/relative", "/tmp/kiln-cache"},
                 {NULL, NULL, "/tmp/kiln-cache"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].xdg)
            setenv("XDG_CACHE_HOME", cases[i].xdg, 1);
        else
            unsetenv("XDG_CACHE_HOME");
        if (cases[i].home)
            setenv("HOME", cases[i].home, 1);
        else
            unsetenv("HOME");
        kn_config cfg;
        char err[256];
        CHECK_STATUS(config_resolve(&(kiln_context_options){.ignore_environment = true}, &cfg, err,
                                    sizeof err),
                     KILN_STATUS_OK);
        CHECK_MSG(!strcmp(cfg.cache_dir, cases[i].want), "XDG_CACHE_HOME %s, HOME %s: %s",
                  cases[i].xdg ? cases[i].xdg : "unset", cases[i].home ? cases[i].home : "unset",
                  cfg.cache_dir);
    }
    if (xdg)
        setenv("XDG_CACHE_HOME", xdg, 1), free(xdg);
    else
        unsetenv("XDG_CACHE_HOME");
    if (home)
        setenv("HOME", home, 1), free(home);
    else
        unsetenv("HOME");
}

static void test_byte_parser(void) {
    uint64_t v = 0;
    CHECK(config_parse_bytes("123", &v) && v == 123);
    CHECK(config_parse_bytes("512M", &v) && v == 512ull << 20);
    CHECK(config_parse_bytes("2GiB", &v) && v == 2ull << 30);
    CHECK(config_parse_bytes("1.5k", &v) && v == 1536);
    CHECK(config_parse_bytes("1e9", &v) && v == 1000000000ull);
    CHECK(!config_parse_bytes("0.5", &v)); /* half a byte is a typo, not "no limit" */
    CHECK(!config_parse_bytes("1.3", &v));
    CHECK(!config_parse_bytes("0x10", &v)); /* hex floats are not byte counts */
    CHECK(!config_parse_bytes("nan", &v));
    CHECK(config_parse_bytes("0.5K", &v) && v == 512);
    CHECK(!config_parse_bytes("", &v) && !config_parse_bytes("M", &v));
    CHECK(!config_parse_bytes("5 MiBs", &v) && !config_parse_bytes("1e30", &v));
}

/* The alloc_trace field starts the same trace as its variable. */
static void test_alloc_trace_option(void) {
    clear_env();
    char path[64];
    snprintf(path, sizeof path, "/tmp/kiln_test_config_trace_opt_%d.txt", (int)getpid());
    kiln_context_options o = {.alloc_trace = path, .ignore_environment = true};
    kiln_context *ctx;
    char err[512];
    CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_OK);
    if (ctx) {
        void *p;
        CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 555, "opt", &p));
        CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
        kiln_context_destroy(ctx);
    }
    FILE *f = fopen(path, "r");
    char text[512] = "";
    if (f) text[fread(text, 1, sizeof text - 1, f)] = 0, fclose(f);
    CHECK_CONTAINS(text, "a 1 555 ");
    unlink(path);
    /* a path that cannot be opened is named with where it came from: the field */
    o.alloc_trace = "/nonexistent/dir/t.txt";
    CHECK_STATUS(create(&ctx, &o, err, sizeof err), KILN_STATUS_IO);
    CHECK_CONTAINS(err, "kiln_context_options.alloc_trace=\"/nonexistent/dir/t.txt\"");
    CHECK(!strstr(err, "environment variable"));
}

static void test_alloc_trace_variable(void) {
    clear_env();
    char path[64];
    snprintf(path, sizeof path, "/tmp/kiln_test_config_trace_%d.txt", (int)getpid());
    setenv("KILN_ALLOC_TRACE", path, 1);
    kiln_context *ctx;
    char err[512];
    CHECK_STATUS(create(&ctx, NULL, err, sizeof err), KILN_STATUS_OK);
    if (ctx) {
        void *p;
        CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 777, "traced", &p));
        CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
        kiln_context_destroy(ctx);
    }
    FILE *f = fopen(path, "r");
    char text[512] = "";
    if (f) text[fread(text, 1, sizeof text - 1, f)] = 0, fclose(f);
    CHECK_CONTAINS(text, "a 1 777 ");
    CHECK_CONTAINS(text, " traced\nf 1 ");
    unlink(path);
    setenv("KILN_ALLOC_TRACE", "/nonexistent/dir/t.txt", 1);
    CHECK_STATUS(create(&ctx, NULL, err, sizeof err), KILN_STATUS_IO);
    CHECK_CONTAINS(err, "environment variable KILN_ALLOC_TRACE=");
    CHECK_CONTAINS(err, "/nonexistent/dir/t.txt");
    /* a file that is not a trace is refused, naming the variable and the file, and kept */
    static const char other[] = "not a trace\n";
    f = fopen(path, "w");
    if (f) fputs(other, f), fclose(f);
    setenv("KILN_ALLOC_TRACE", path, 1);
    CHECK_STATUS(create(&ctx, NULL, err, sizeof err), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(err, "KILN_ALLOC_TRACE");
    CHECK_CONTAINS(err, path);
    CHECK_CONTAINS(err, "is not a kiln allocation trace");
    f = fopen(path, "r");
    text[0] = 0;
    if (f) text[fread(text, 1, sizeof text - 1, f)] = 0, fclose(f);
    CHECK(!strcmp(text, other));
    unlink(path);
    clear_env();
}

int main(void) {
    RUN(test_bad_values);
    RUN(test_disagreeing_variables);
    RUN(test_bad_options);
    RUN(test_good_values);
    RUN(test_byte_parser);
    RUN(test_cache_dir_default);
    RUN(test_alloc_trace_variable);
    RUN(test_option_fields);
    RUN(test_alloc_trace_option);
    return test_summary("test_config");
}
