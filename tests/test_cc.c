/* test_cc.c — the CPU backend's JIT compiler and its disk cache: compile and call, cache
 * hits in this process and in a second one (no compiler run), corrupt entries rebuilt and
 * never loaded, compiler errors, a missing compiler, the size cap, concurrent loads, host
 * OOM, entries truncated under loaded modules, full and read-only caches, relative paths,
 * and SHA-256 against the standard vectors. Every test uses its own mkdtemp cache.
 * Compiles take tens of milliseconds, so the tests share few distinct sources. */
#include "fault.h"

#include "backend/cpu/cpu.h"
#include "backend/device.h"
#include "backend/objcache.h"
#include "base/base.h"
#include "base/sha256.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char SRC_ADD[] = "int kiln_add(int a, int b) { return a + b; }\n"
                              "const int kiln_magic = 0x5a17c0de;\n";
static const char SRC_MUL[] = "double kiln_mul(double a, double b) { return a * b; }\n";
static const char SRC_SUB[] = "long kiln_sub(long a, long b) { return a - b; }\n";

/* ------------------------------------------------------------- helpers ---- */

static void rm_rf(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (!lstat(p, &sb) && S_ISDIR(sb.st_mode))
            rm_rf(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void make_tmpdir(char out[PATH_MAX]) {
    const char *t = getenv("TMPDIR");
    snprintf(out, PATH_MAX, "%s/kiln-test-cc-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* A context caching in dir, reading no environment (ignore_environment). */
static kiln_context *cache_context(const char *dir, const kiln_host_allocator *h) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = dir;
    o.host_allocator = h;
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) return NULL;
    return ctx;
}

/* The context's C compiler: the CPU backend's state hangs off device 0. */
static cc_compiler *cc_of(kiln_context *ctx) {
    return cpu_backend_compiler(ctx->devices[0].state);
}

/* The CPU backend's options, which its compiler reads at every load. */
static kn_cpu_options *opt_of(kiln_context *ctx) {
    return cpu_backend_options(ctx->devices[0].state);
}

static cc_stats stats_of(kiln_context *ctx) {
    cc_stats s;
    cc_get_stats(cc_of(ctx), &s);
    return s;
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int call_add(const cc_module *m, int a, int b) {
    int (*f)(int, int);
    void *p = cc_module_sym(m, "kiln_add");
    if (!p) return -999999;
    memcpy(&f, &p, sizeof f);
    return f(a, b);
}

static void entry_path(char out[PATH_MAX], const char *dir, const cc_module *m,
                       const char *suffix) {
    snprintf(out, PATH_MAX, "%s/%s%s", dir, cc_module_key(m), suffix);
}

static long file_bytes(const char *path) {
    struct stat sb;
    return stat(path, &sb) ? -1 : (long)sb.st_size;
}

static bool exists(const char *path) {
    return access(path, F_OK) == 0;
}

/* Loads src into ctx and checks the status and where it came from. */
static cc_module *load(kiln_context *ctx, const char *src, bool want_cached) {
    cc_module *m = NULL;
    bool cached = !want_cached;
    CHECK_OK(ctx, cc_module_load(cc_of(ctx), src, strlen(src), &m, &cached));
    CHECK_MSG(cached == want_cached, "from_cache = %d, want %d", cached, want_cached);
    return m;
}

/* --------------------------------------------------------------- SHA-256 ---- */

static void check_sha(const void *msg, size_t len, const char *want) {
    uint8_t d[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES];
    sha256(msg, len, d);
    sha256_hex(d, hex);
    CHECK_MSG(!strcmp(hex, want), "sha256 of %zu bytes = %s, want %s", len, hex, want);
    /* The same digest fed a byte at a time, then in uneven pieces. */
    sha256_ctx c;
    sha256_init(&c);
    for (size_t i = 0; i < len && len < 4096; i++) sha256_update(&c, (const char *)msg + i, 1);
    if (len >= 4096)
        for (size_t i = 0; i < len; i += 997)
            sha256_update(&c, (const char *)msg + i, len - i < 997 ? len - i : 997);
    sha256_final(&c, d);
    sha256_hex(d, hex);
    CHECK_MSG(!strcmp(hex, want), "streamed sha256 of %zu bytes = %s", len, hex);
}

static void test_sha256(void) {
    /* FIPS 180-4 / NIST examples, then the padding boundaries (55, 56, 64, 119 bytes). */
    check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha(m448, strlen(m448),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    check_sha(m896, strlen(m896),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    check_sha(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    check_sha(a, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    check_sha(a, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    check_sha(a, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    check_sha(a, 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
    free(a);
}

/* ------------------------------------------------- compile, load, reload ---- */

static void test_compile_and_hit(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    double t0 = seconds_now();
    cc_module *m = load(ctx, SRC_ADD, false);
    double cold = seconds_now() - t0;
    if (!m) goto out;
    CHECK(call_add(m, 2, 40) == 42);
    CHECK(cc_module_sym(m, "no_such_symbol") == NULL);
    char so[PATH_MAX], meta[PATH_MAX];
    entry_path(so, dir, m, ".so");
    entry_path(meta, dir, m, ".meta");
    CHECK(exists(meta));
    CHECK((long)cc_module_code_bytes(m) == file_bytes(so) && file_bytes(so) > 0);
    cc_stats s = stats_of(ctx);
    CHECK(s.compiles == 1 && s.disk_misses == 1 && s.disk_hits == 0 && s.compile_seconds > 0);

    t0 = seconds_now();
    cc_module *m2 = load(ctx, SRC_ADD, true); /* while m is loaded: a copy of its own */
    double warm = seconds_now() - t0;
    CHECK(m2 && call_add(m2, 1, 2) == 3);
    cc_module_unload(m);
    cc_module_unload(m2);
    cc_module *m3 = load(ctx, SRC_ADD, true); /* after both were closed */
    CHECK(m3 && call_add(m3, -5, 5) == 0);
    cc_module_unload(m3);
    s = stats_of(ctx);
    CHECK_MSG(s.compiles == 1 && s.disk_hits == 2, "compiles %llu, hits %llu",
              (unsigned long long)s.compiles, (unsigned long long)s.disk_hits);
    printf("compile (cold) %.1f ms, load from the disk cache %.3f ms\n", cold * 1e3, warm * 1e3);
out:
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* Two different cached modules held at once (a program's training step and its
 * evaluation): each is opened through the fd of its verified copy, which it holds; were
 * the first one's fd closed, the second copy would get its number, and with it the name
 * dlopen knows the first by. Both must come from the cache, each its own code. */
static void test_two_held(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module_unload(load(ctx, SRC_ADD, false));
    cc_module_unload(load(ctx, SRC_MUL, false));
    cc_module *a = load(ctx, SRC_ADD, true), *b = load(ctx, SRC_MUL, true);
    CHECK(a && call_add(a, 2, 3) == 5);
    CHECK(b && cc_module_sym(b, "kiln_mul") && !cc_module_sym(b, "kiln_add"));
    cc_stats s = stats_of(ctx);
    CHECK_MSG(s.compiles == 2 && s.disk_hits == 2, "compiles %llu, hits %llu",
              (unsigned long long)s.compiles, (unsigned long long)s.disk_hits);
    cc_module_unload(a);
    cc_module_unload(b);
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* A second process with its own context and the same cache directory. */
static void test_second_process(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module_unload(load(ctx, SRC_ADD, false));
    kiln_context_destroy(ctx);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* Exit code: 0 ok, 1 load failed, 2 not from the cache, 3 the compiler ran, 4 wrong
         * result. */
        kiln_context *c2 = cache_context(dir, NULL);
        cc_module *m = NULL;
        bool cached = false;
        int code = 0;
        if (cc_module_load(cc_of(c2), SRC_ADD, strlen(SRC_ADD), &m, &cached))
            code = 1;
        else if (!cached)
            code = 2;
        else if (stats_of(c2).compiles)
            code = 3;
        else if (call_add(m, 20, 22) != 42)
            code = 4;
        cc_module_unload(m);
        kiln_context_destroy(c2);
        _exit(code);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    rm_rf(dir);
}

/* ------------------------------------------------------ corrupt entries ---- */

typedef enum { TRUNCATE, FLIP_MAGIC, GARBAGE_META, WRONG_SIZE_META, EMPTY_SO } damage;

/* Changes the bytes of kiln_magic inside the .so: were it loaded, it would read back
 * differently, so the check below shows the damaged object never was. */
static void flip_magic(const char *so) {
    FILE *f = fopen(so, "r+b");
    if (!f) return;
    unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    const unsigned char want[4] = {0xde, 0xc0, 0x17, 0x5a}; /* little-endian 0x5a17c0de */
    bool found = false;
    for (size_t i = 0; i + 4 <= n && !found; i++)
        if (!memcmp(buf + i, want, 4)) {
            fseek(f, (long)i, SEEK_SET);
            fputc(0x11, f);
            found = true;
        }
    fclose(f);
    CHECK(found);
}

static void do_damage(damage d, const char *so, const char *meta) {
    FILE *f;
    switch (d) {
    case TRUNCATE: CHECK(truncate(so, file_bytes(so) / 2) == 0); break;
    case FLIP_MAGIC: flip_magic(so); break;
    case EMPTY_SO: CHECK(truncate(so, 0) == 0); break;
    case GARBAGE_META:
        if ((f = fopen(meta, "wb"))) fputs("\x01garbage\xff not a sidecar\n", f), fclose(f);
        break;
    case WRONG_SIZE_META: {
        char text[512] = "";
        if ((f = fopen(meta, "rb"))) text[fread(text, 1, sizeof text - 1, f)] = 0, fclose(f);
        char *p = strstr(text, "size ");
        if (p) p[5] = p[5] == '9' ? '1' : (char)(p[5] + 1);
        if ((f = fopen(meta, "wb"))) fputs(text, f), fclose(f);
        break;
    }
    }
}

static void test_corrupt(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module *m = load(ctx, SRC_ADD, false);
    char so[PATH_MAX], meta[PATH_MAX];
    if (!m) goto out;
    entry_path(so, dir, m, ".so");
    entry_path(meta, dir, m, ".meta");
    cc_module_unload(m);
    static const damage kinds[] = {TRUNCATE, FLIP_MAGIC, GARBAGE_META, WRONG_SIZE_META, EMPTY_SO};
    for (int i = 0; i < 5; i++) {
        do_damage(kinds[i], so, meta);
        cc_stats before = stats_of(ctx);
        m = load(ctx, SRC_ADD, false);
        cc_stats after = stats_of(ctx);
        CHECK_MSG(after.corrupt_rebuilt == before.corrupt_rebuilt + 1, "damage %d not detected", i);
        CHECK(after.compiles == before.compiles + 1);
        const int *magic = m ? cc_module_sym(m, "kiln_magic") : NULL;
        CHECK_MSG(magic && *magic == 0x5a17c0de, "damage %d: a damaged object was loaded", i);
        CHECK(m && call_add(m, 3, 4) == 7);
        cc_module_unload(m);
        cc_module_unload(load(ctx, SRC_ADD, true)); /* rebuilt entry is good again */
    }
    /* A missing sidecar is a plain miss (a writer may be between its two renames). */
    unlink(meta);
    cc_stats before = stats_of(ctx);
    cc_module_unload(load(ctx, SRC_ADD, false));
    CHECK(stats_of(ctx).corrupt_rebuilt == before.corrupt_rebuilt);
out:
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* Another entry's object, with a sidecar that vouches for its bytes under our key: only the
 * key embedded in the object can tell. */
static void test_wrong_object(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module *a = load(ctx, SRC_ADD, false), *b = load(ctx, SRC_MUL, false);
    if (!a || !b) goto out;
    char a_so[PATH_MAX], a_meta[PATH_MAX], b_so[PATH_MAX], cmd[3 * PATH_MAX];
    entry_path(a_so, dir, a, ".so");
    entry_path(a_meta, dir, a, ".meta");
    entry_path(b_so, dir, b, ".so");
    char akey[SHA256_HEX_BYTES];
    memcpy(akey, cc_module_key(a), sizeof akey);
    cc_module_unload(a);
    cc_module_unload(b);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", b_so, a_so);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(b_so, "rb");
    static unsigned char bytes[1 << 20];
    size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
    if (f) fclose(f);
    uint8_t d[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES];
    sha256(bytes, n, d);
    sha256_hex(d, hex);
    if ((f = fopen(a_meta, "wb")))
        fprintf(f, "kiln-cc-entry 1\nkey %s\nsize %zu\nsha256 %s\n", akey, n, hex), fclose(f);
    cc_stats before = stats_of(ctx);
    cc_module *m = load(ctx, SRC_ADD, false);
    CHECK(stats_of(ctx).corrupt_rebuilt == before.corrupt_rebuilt + 1);
    CHECK(m && call_add(m, 1, 1) == 2);
    cc_module_unload(m);
out:
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* ------------------------------------------------------------- errors ---- */

static void test_syntax_error(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    const char *bad = "int kiln_broken(int x) { return x +; }\n";
    cc_module *m = (cc_module *)1;
    mode_t old_mask = umask(022);
    CHECK_STATUS(cc_module_load(cc_of(ctx), bad, strlen(bad), &m, NULL), KILN_STATUS_BACKEND);
    CHECK(m == NULL);
    const char *msg = kiln_last_error(ctx);
    CHECK_CONTAINS(msg, "the C compiler failed (exit status");
    CHECK_CONTAINS(msg, "command: ");
    CHECK_CONTAINS(msg, " -march=native");
    CHECK_CONTAINS(msg, "-O3");
    CHECK_CONTAINS(msg, "error"); /* the compiler's own words */
    CHECK_CONTAINS(msg, "kiln_broken");
    const char *kept = strstr(msg, "kept at ");
    char path[PATH_MAX] = "";
    if (kept) sscanf(kept + 8, "%4095s", path);
    CHECK_MSG(exists(path) && strstr(path, ".failed.c"), "source not kept: \"%s\"", path);
    struct stat sb; /* readable by its owner only, under the usual umask 022 (set above) */
    CHECK_MSG(!stat(path, &sb) && (sb.st_mode & 0777) == 0600, "kept source %s has mode %04o", path,
              (unsigned)(sb.st_mode & 0777));
    umask(old_mask);
    CHECK(stats_of(ctx).compiles == 1);
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* A source in the printer's layout: a prelude (a helper every kernel calls), then n
 * top-level KILN_EXPORT kernels, each after a comment line; `extra` (may be "") is
 * placed after kernel 2, and kernel `broken` (-1: none) does not compile. */
static char *kernels_source(int n, const char *extra, int broken) {
    size_t cap = 4096 + (size_t)n * 160 + strlen(extra);
    char *s = malloc(cap);
    size_t used = (size_t)snprintf(s, cap,
                                   "#include <stdint.h>\n"
                                   "#define KILN_EXPORT __attribute__((visibility(\"default\")))\n"
                                   "static inline int kiln_helper(int x) { return 3 * x; }\n");
    for (int i = 0; i < n; i++) {
        used += (size_t)snprintf(s + used, cap - used,
                                 "/* k%d: a kernel */\nKILN_EXPORT int kiln_t%d(int x) {\n"
                                 "    return kiln_helper(x) + %d%s;\n}\n",
                                 i, i, i, i == broken ? " +" : "");
        if (i == 2) used += (size_t)snprintf(s + used, cap - used, "%s", extra);
    }
    return s;
}

static kiln_context *threads_context(const char *dir, int threads) {
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .num_threads = threads};
    kiln_context *ctx = NULL;
    char err[512];
    CHECK_MSG(!kiln_context_create(&o, &ctx, err, sizeof err), "%s", err);
    return ctx;
}

static int call_t(const cc_module *m, int i, int x) {
    char name[32];
    snprintf(name, sizeof name, "kiln_t%d", i);
    int (*f)(int);
    void *p = cc_module_sym(m, name);
    if (!p) return -999999;
    memcpy(&f, &p, sizeof f);
    return f(x);
}

/* A source with two or more kernels compiles as several translation units at once (one
 * per thread, at most one per kernel): every kernel works and can call the prelude, and
 * the split is part of the key (so one thread and two make different entries; a single
 * kernel is one unit, the same entry for any thread count). A top-level line the split cannot
 * place (a table after the prelude) keeps one unit: the same key for any thread count. A
 * compiler error in one part is reported as for an unsplit source. */
static void test_split_compile(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *one = threads_context(dir, 1), *two = threads_context(dir, 2);
    char *src = kernels_source(12, "", -1);
    cc_module *m1 = load(one, src, false), *m2 = load(two, src, false);
    CHECK(m1 && m2);
    for (int i = 0; m1 && m2 && i < 12; i++)
        CHECK_MSG(call_t(m1, i, 5) == 15 + i && call_t(m2, i, 5) == 15 + i, "kernel %d", i);
    if (m1 && m2) CHECK(strcmp(cc_module_key(m1), cc_module_key(m2)) != 0);
    cc_module_unload(m1), cc_module_unload(m2);
    free(src);
    src = kernels_source(2, "", -1);
    m1 = load(one, src, false), m2 = load(two, src, false);
    CHECK(m1 && m2 && call_t(m1, 1, 5) == 16 && call_t(m2, 0, 5) == 15 && call_t(m2, 1, 5) == 16);
    if (m1 && m2) CHECK(strcmp(cc_module_key(m1), cc_module_key(m2)) != 0);
    cc_module_unload(m1), cc_module_unload(m2);
    free(src);
    src = kernels_source(1, "", -1);
    m1 = load(one, src, false), m2 = load(two, src, true);
    CHECK(m1 && m2 && call_t(m2, 0, 5) == 15);
    cc_module_unload(m1), cc_module_unload(m2);
    free(src);

    src = kernels_source(12, "static const int kiln_table[2] = {1, 2};\n", -1);
    m1 = load(one, src, false);
    m2 = load(two, src, true); /* one unit either way: the entry the first load made */
    CHECK(m1 && m2 && call_t(m2, 11, 1) == 14);
    cc_module_unload(m1), cc_module_unload(m2);
    free(src);

    src = kernels_source(12, "", 9);
    cc_module *m = (cc_module *)1;
    CHECK_STATUS(cc_module_load(cc_of(two), src, strlen(src), &m, NULL), KILN_STATUS_BACKEND);
    CHECK(m == NULL);
    const char *msg = kiln_last_error(two);
    CHECK_CONTAINS(msg, "the C compiler failed (exit status");
    CHECK_CONTAINS(msg, "kernels.c"); /* the whole source's command, not a part's */
    CHECK_CONTAINS(msg, "kiln_t9");
    CHECK(strstr(msg, "part1.c") == NULL);
    free(src);
    kiln_context_destroy(one), kiln_context_destroy(two);
    rm_rf(dir);
}

/* kiln_context_create with the environment and KILN_CACHE_DIR=dir (when dir is not NULL):
 * its status, and its message in err. */
static kiln_status env_create(const char *dir, char *err, size_t n) {
    char *saved = getenv("KILN_CACHE_DIR") ? strdup(getenv("KILN_CACHE_DIR")) : NULL;
    if (dir) setenv("KILN_CACHE_DIR", dir, 1);
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    kiln_context *ctx = NULL;
    kiln_status s = kiln_context_create(&o, &ctx, err, n);
    kiln_context_destroy(ctx);
    if (saved)
        setenv("KILN_CACHE_DIR", saved, 1), free(saved);
    else
        unsetenv("KILN_CACHE_DIR");
    return s;
}

static void test_missing_compiler(void) {
    char dir[PATH_MAX], empty[PATH_MAX], err[1024];
    make_tmpdir(dir);
    make_tmpdir(empty);
    cc_module *m = NULL;
    /* A KILN_CC that names nothing is an error of kiln_context_create, not of the first
     * compile. */
    setenv("KILN_CC", "/nonexistent/kiln-no-such-cc", 1);
    CHECK(env_create(dir, err, sizeof err) == KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_CC=\"/nonexistent/kiln-no-such-cc\"");
    setenv("KILN_CC", "kiln-no-such-cc", 1);
    CHECK(env_create(dir, err, sizeof err) == KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "on PATH");
    setenv("KILN_CC", "cc", 1);
    setenv("KILN_CC_FLAGS", "-g -o /tmp/elsewhere", 1);
    CHECK(env_create(dir, err, sizeof err) == KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_CC_FLAGS=\"-g -o /tmp/elsewhere\": '-o' is not allowed");
    unsetenv("KILN_CC_FLAGS");
    unsetenv("KILN_CC");
    char file[PATH_MAX + 16];
    snprintf(file, sizeof file, "%s/file", dir);
    int fd = open(file, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK(env_create(file, err, sizeof err) == KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "(KILN_CACHE_DIR) is not a directory");
    /* No KILN_CC and nothing on PATH. */
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", empty, 1);
    kiln_context *ctx = cache_context(dir, NULL);
    CHECK_STATUS(cc_module_load(cc_of(ctx), SRC_ADD, strlen(SRC_ADD), &m, NULL),
                 KILN_STATUS_BACKEND);
    CHECK_CONTAINS(kiln_last_error(ctx), "no C compiler found");
    CHECK_CONTAINS(kiln_last_error(ctx), "KILN_CC");
    kiln_context_destroy(ctx);
    if (old) setenv("PATH", old, 1), free(old);
    CHECK(m == NULL);
    rm_rf(dir);
    rm_rf(empty);
}

static void test_config(void) {
    kn_config c;
    char err[512];
    kiln_context_options o = {0};
    setenv("KILN_CACHE_MAX_BYTES", "64M", 1);
    setenv("KILN_CC", "/opt/cc", 1);
    setenv("KILN_CC_FLAGS", "-DX=1 -g", 1);
    CHECK(config_resolve(&o, &c, err, sizeof err) == KILN_STATUS_OK);
    CHECK(c.cache_max_bytes == 64u << 20);
    CHECK(!strcmp(c.cc, "/opt/cc") && !strcmp(c.cc_flags, "-DX=1 -g"));
    setenv("KILN_CACHE_MAX_BYTES", "lots", 1);
    CHECK(config_resolve(&o, &c, err, sizeof err) == KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_CACHE_MAX_BYTES");
    setenv("KILN_CACHE_MAX_BYTES", "0", 1);
    CHECK(config_resolve(&o, &c, err, sizeof err) == KILN_STATUS_OK && c.cache_max_bytes == 0);
    unsetenv("KILN_CACHE_MAX_BYTES");
    unsetenv("KILN_CC");
    unsetenv("KILN_CC_FLAGS");
    CHECK(config_resolve(&o, &c, err, sizeof err) == KILN_STATUS_OK);
    CHECK(c.cache_max_bytes == 1u << 30 && !c.cc[0] && !c.cc_flags[0]);
}

/* KILN_CC_FLAGS reach the compiler and the key (a different key: a fresh compile). */
static void test_extra_flags(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    const char *src = "int kiln_value(void) { return KILN_TEST_VALUE; }\n";
    snprintf(opt_of(ctx)->cc_flags, sizeof opt_of(ctx)->cc_flags, " -DKILN_TEST_VALUE=7\t-g0 ");
    cc_module *m = load(ctx, src, false);
    int (*f)(void) = NULL;
    void *p = m ? cc_module_sym(m, "kiln_value") : NULL;
    if (p) memcpy(&f, &p, sizeof f);
    CHECK(f && f() == 7);
    cc_module_unload(m);
    snprintf(opt_of(ctx)->cc_flags, sizeof opt_of(ctx)->cc_flags, "-DKILN_TEST_VALUE=8");
    m = load(ctx, src, false);
    p = m ? cc_module_sym(m, "kiln_value") : NULL;
    if (p) memcpy(&f, &p, sizeof f);
    CHECK(p && f() == 8);
    cc_module_unload(m);
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* ------------------------------------------------------------- the cap ---- */

static void set_age(const char *dir, const cc_module *m, int seconds_ago) {
    char p[PATH_MAX];
    struct timespec ts[2] = {{time(NULL) - seconds_ago, 0}, {time(NULL) - seconds_ago, 0}};
    entry_path(p, dir, m, ".so");
    utimensat(AT_FDCWD, p, ts, 0);
    entry_path(p, dir, m, ".meta");
    utimensat(AT_FDCWD, p, ts, 0);
}

static void test_eviction(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module *a = load(ctx, SRC_ADD, false), *b = load(ctx, SRC_MUL, false);
    if (!a || !b) goto out;
    char a_so[PATH_MAX], b_so[PATH_MAX], b_meta[PATH_MAX], a_meta[PATH_MAX];
    entry_path(a_so, dir, a, ".so"), entry_path(a_meta, dir, a, ".meta");
    entry_path(b_so, dir, b, ".so"), entry_path(b_meta, dir, b, ".meta");
    long entry = file_bytes(a_so) + file_bytes(a_meta);
    set_age(dir, a, 200);
    set_age(dir, b, 100); /* b is newer ... */
    cc_module_unload(a);
    cc_module_unload(load(ctx, SRC_ADD, true)); /* ... until a hit makes a the newest */
    opt_of(ctx)->cache.max_bytes = (uint64_t)(entry * 5 / 2); /* room for two entries */
    cc_module *c = load(ctx, SRC_SUB, false);
    CHECK(c != NULL);
    CHECK(stats_of(ctx).evictions == 1);
    CHECK_MSG(!exists(b_so) && !exists(b_meta), "the least recently used entry survived");
    CHECK(exists(a_so) && exists(a_meta));
    double (*mul)(double, double);
    void *p = cc_module_sym(b, "kiln_mul"); /* still mapped though its files are gone */
    memcpy(&mul, &p, sizeof mul);
    CHECK(p && mul(3, 4) == 12);
    cc_module_unload(b);
    cc_module_unload(c);
    /* A cap smaller than one entry keeps the entry just written. */
    opt_of(ctx)->cache.max_bytes = 1;
    cc_module_unload(load(ctx, SRC_MUL, false));
    CHECK(exists(b_so) && !exists(a_so));
out:
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* KILN_CACHE_MAX_BYTES=0: nothing on disk, every load compiles. */
static void test_cache_off(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    char sub[PATH_MAX + 8];
    snprintf(sub, sizeof sub, "%s/cache", dir);
    kiln_context *ctx = cache_context(sub, NULL);
    opt_of(ctx)->cache.max_bytes = 0;
    cc_module *m = load(ctx, SRC_ADD, false);
    CHECK(m && call_add(m, 5, 6) == 11);
    cc_module_unload(m);
    cc_module_unload(load(ctx, SRC_ADD, false));
    cc_stats s = stats_of(ctx);
    CHECK(s.compiles == 2 && s.disk_hits == 0 && s.disk_misses == 0);
    CHECK(!exists(sub));
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* ------------------------------------------------------------ concurrency ---- */

typedef struct loader {
    kiln_context *ctx;
    pthread_barrier_t *go;
    const char *src;
    kiln_status status;
    int result;
} loader;

static void *load_thread(void *arg) {
    loader *l = arg;
    cc_module *m = NULL;
    pthread_barrier_wait(l->go);
    l->status = cc_module_load(cc_of(l->ctx), l->src, strlen(l->src), &m, NULL);
    l->result = m ? call_add(m, 100, 23) : -1;
    cc_module_unload(m);
    return NULL;
}

/* Threads of one context, and of two contexts (as two processes would be), load the same
 * new source at the same moment: all get a working module, the entry is left whole. */
static void test_concurrent(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    enum { N = 4 };
    kiln_context *ctx[2] = {cache_context(dir, NULL), cache_context(dir, NULL)};
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    loader l[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        l[i] = (loader){.ctx = ctx[i % 2], .go = &go, .src = SRC_ADD};
        pthread_create(&t[i], NULL, load_thread, &l[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK_MSG(l[i].status == KILN_STATUS_OK && l[i].result == 123, "thread %d: %s, %d", i,
                  kiln_status_name(l[i].status), l[i].result);
    }
    pthread_barrier_destroy(&go);
    cc_stats s0 = stats_of(ctx[0]), s1 = stats_of(ctx[1]);
    CHECK(s0.corrupt_rebuilt + s1.corrupt_rebuilt == 0);
    cc_module_unload(load(ctx[0], SRC_ADD, true));
    /* No temp folders are left behind. */
    DIR *d = opendir(dir);
    int tmp = 0;
    for (struct dirent *e; d && (e = readdir(d));) tmp += !strncmp(e->d_name, ".tmp-", 5);
    if (d) closedir(d);
    CHECK(tmp == 0);
    kiln_context_destroy(ctx[0]);
    kiln_context_destroy(ctx[1]);
    rm_rf(dir);
}

/* ---------------------------------------------------- host memory, unsafe dirs ---- */

/* One cached load of SRC_ADD in a context of its own, caching in the folder r->user. */
static kiln_status fault_load(fault_run *r) {
    kiln_context *ctx = NULL;
    kiln_status s = fault_context(r, (const char *)r->user, &ctx);
    if (s) return s;
    cc_module *m = NULL;
    s = fault_note(r, ctx, cc_module_load(cc_of(ctx), SRC_ADD, strlen(SRC_ADD), &m, NULL));
    CHECK_MSG(s == KILN_STATUS_OK ? m && call_add(m, 1, 2) == 3 : m == NULL,
              "allocation %ld: %s with module %p", r->n, kiln_status_name(s), (void *)m);
    cc_module_unload(m);
    kiln_context_destroy(ctx);
    return s;
}

/* Fail the 1st, 2nd, ... host allocation of a context's life around a cached load: each
 * ends in KILN_STATUS_HOST_OOM with nothing leaked, until none fails. */
static void test_host_oom(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *warm = cache_context(dir, NULL);
    cc_module_unload(load(warm, SRC_ADD, false));
    kiln_context_destroy(warm);
    fault_sweep sw = {.name = "cached load", .run = fault_load, .user = dir, .max_runs = 50};
    CHECK(fault_sweep_run(&sw) > 0);
    rm_rf(dir);
}

static void test_unsafe_dir(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    /* Refused when the context is made, and again at a compile if it became unsafe since. */
    char err[1024];
    chmod(dir, 0777);
    CHECK(env_create(dir, err, sizeof err) == KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_CACHE_DIR");
    chmod(dir, 0700);
    kiln_context *ctx = cache_context(dir, NULL);
    chmod(dir, 0777);
    cc_module *m = NULL;
    CHECK_STATUS(cc_module_load(cc_of(ctx), SRC_ADD, strlen(SRC_ADD), &m, NULL),
                 KILN_STATUS_CONFIG);
    CHECK_CONTAINS(kiln_last_error(ctx), "KILN_CACHE_DIR");
    kiln_context_destroy(ctx);
    /* Parents are created as needed. */
    char deep[PATH_MAX + 16];
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    chmod(dir, 0700);
    ctx = cache_context(deep, NULL);
    CHECK_OK(ctx, cc_module_load(cc_of(ctx), SRC_ADD, strlen(SRC_ADD), &m, NULL));
    cc_module_unload(m);
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* A directory that its group may write is refused like a world-writable one: a group
 * member could replace an entry and have its constructor run at dlopen (hardening issue,
 * defect 3). */
static void test_group_writable_dir(void) {
    static const unsigned modes[] = {0770, 0720, 0730, 0702};
    for (int i = 0; i < 4; i++) {
        char dir[PATH_MAX];
        make_tmpdir(dir);
        char err[1024];
        chmod(dir, modes[i]);
        CHECK(env_create(dir, err, sizeof err) == KILN_STATUS_CONFIG);
        CHECK_CONTAINS(err, "its group");
        chmod(dir, 0700);
        kiln_context *ctx = cache_context(dir, NULL);
        chmod(dir, modes[i]);
        cc_module *m = NULL;
        CHECK_STATUS(cc_module_load(cc_of(ctx), SRC_ADD, strlen(SRC_ADD), &m, NULL),
                     KILN_STATUS_CONFIG);
        CHECK_CONTAINS(kiln_last_error(ctx), "its group");
        CHECK(m == NULL && stats_of(ctx).compiles == 0);
        kiln_context_destroy(ctx);
        chmod(dir, 0700);
        rm_rf(dir);
    }
}

/* Entries that are not private regular files are never read or loaded, and never hang:
 * a FIFO in place of the sidecar or the object (defect 4), a link, an object its group may
 * write, and (as root) an object another user owns. Each is a corrupt entry, rebuilt. */
static void test_odd_entries(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module *m = load(ctx, SRC_ADD, false);
    char so[PATH_MAX], meta[PATH_MAX], other[PATH_MAX + 8];
    if (!m) goto out;
    entry_path(so, dir, m, ".so");
    entry_path(meta, dir, m, ".meta");
    snprintf(other, sizeof other, "%s/other", dir);
    cc_module_unload(m);
    alarm(60); /* a hang fails the test instead of stalling the suite */
    for (int kind = 0; kind < 5; kind++) {
        if (kind == 4 && geteuid() != 0) continue;
        switch (kind) {
        case 0: unlink(meta), mkfifo(meta, 0600); break;
        case 1: unlink(so), mkfifo(so, 0600); break;
        case 2: rename(so, other), symlink(other, so); break;
        case 3: chmod(so, 0660); break;
        case 4: CHECK(chown(so, 65534, 65534) == 0); break;
        }
        cc_stats before = stats_of(ctx);
        m = load(ctx, SRC_ADD, false);
        CHECK_MSG(stats_of(ctx).corrupt_rebuilt == before.corrupt_rebuilt + 1,
                  "odd entry %d not refused", kind);
        CHECK(m && call_add(m, 2, 5) == 7);
        cc_module_unload(m);
        cc_module_unload(load(ctx, SRC_ADD, true)); /* the rebuilt entry is good */
        unlink(other);
    }
    alarm(0);
out:
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* A cache directory that cannot be written (read-only, full, or not creatable): the
 * program is compiled privately and loads, once-per-context notice on stderr, instead of
 * failing. As root, permission bits do not stop writes, so the directory is made
 * immutable (chattr +i) where the file system allows; otherwise the case is skipped. */
static void test_unwritable_dir(void) {
    char dir[PATH_MAX], cmd[PATH_MAX + 32];
    make_tmpdir(dir);
    bool locked;
    if (geteuid() == 0) {
        snprintf(cmd, sizeof cmd, "chattr +i '%s' 2>/dev/null", dir);
        locked = system(cmd) == 0;
    } else {
        locked = chmod(dir, 0500) == 0;
    }
    if (!locked) {
        test_skip_case("test_unwritable_dir", "cannot make a read-only directory here");
        rm_rf(dir);
        return;
    }
    kiln_context *ctx = cache_context(dir, NULL);
    for (int i = 0; i < 2; i++) {
        cc_module *m = NULL;
        CHECK_OK(ctx, cc_module_load(cc_of(ctx), SRC_ADD, strlen(SRC_ADD), &m, NULL));
        CHECK(m && call_add(m, 20, 22) == 42);
        cc_module_unload(m);
    }
    CHECK(stats_of(ctx).unwritable == 2 && stats_of(ctx).compiles == 2);
    kiln_context_destroy(ctx);
    /* A cache directory that cannot even be created under it: the same. */
    char deep[PATH_MAX + 8];
    snprintf(deep, sizeof deep, "%s/sub", dir);
    ctx = cache_context(deep, NULL);
    cc_module *m = NULL;
    CHECK_OK(ctx, cc_module_load(cc_of(ctx), SRC_ADD, strlen(SRC_ADD), &m, NULL));
    CHECK(m && call_add(m, 1, 1) == 2);
    cc_module_unload(m);
    CHECK(stats_of(ctx).unwritable == 1);
    kiln_context_destroy(ctx);
    if (geteuid() == 0) {
        snprintf(cmd, sizeof cmd, "chattr -i '%s'", dir);
        if (system(cmd)) fprintf(stderr, "could not unlock %s\n", dir);
    } else {
        chmod(dir, 0700);
    }
    rm_rf(dir);
}

/* --------------------------------------------------------------- a full disk ---- */

/* Runs body(dir) in a child process and checks that it exits cleanly: a module still mapped
 * from a file another process truncates dies of SIGBUS, which must fail this test, not end
 * the suite. The child's CHECKs print their own failures; its exit status says whether any
 * failed. */
static void in_child(const char *what, void (*body)(const char *), const char *dir) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int failed = test_failed;
        body(dir);
        fflush(NULL);
        _exit(test_failed != failed);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child %s %d", what,
              WIFSIGNALED(status) ? "was killed by signal" : "exited with status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* Fills the file system under dir: *filler is the open filler file, *bytes what it holds.
 * Leaving room for n bytes is then ftruncate(filler, bytes - n). */
static bool fill_disk(const char *dir, int *filler, long *bytes) {
    char p[PATH_MAX + 16], block[4096];
    snprintf(p, sizeof p, "%s/filler", dir);
    memset(block, 'f', sizeof block);
    *filler = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    *bytes = 0;
    for (ssize_t w; *filler >= 0 && (w = write(*filler, block, sizeof block)) > 0;) *bytes += w;
    return *filler >= 0 && errno == ENOSPC;
}

/* Counts the unwritable-cache notices in what was written to stderr (the file `log`). */
static int count_notices(const char *log) {
    FILE *f = fopen(log, "r");
    char line[2048];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, "cannot be written") != NULL;
    if (f) fclose(f);
    return n;
}

/* The loads of test_full_dir, on a cache whose file system has `room` bytes left. */
static void full_disk_loads(kiln_context *ctx, const char *cache) {
    cc_module *m = load(ctx, SRC_ADD, false);
    CHECK(m && call_add(m, 2, 2) == 4);
    cc_module_unload(m);
    m = load(ctx, SRC_MUL, false);
    CHECK(m && cc_module_sym(m, "kiln_mul"));
    cc_module_unload(m);
    /* A source that does not compile is still reported, and kept where it can be. */
    const char *bad = "int kiln_broken(int x) { return x +; }\n";
    CHECK_STATUS(cc_module_load(cc_of(ctx), bad, strlen(bad), &m, NULL), KILN_STATUS_BACKEND);
    const char *kept = strstr(kiln_last_error(ctx), "kept at ");
    char path[PATH_MAX] = "";
    if (kept) sscanf(kept + 8, "%4095s", path);
    CHECK_MSG(exists(path), "source not kept: \"%s\"", path);
    if (strncmp(path, cache, strlen(cache))) { /* kept in a private folder: remove it */
        char *slash = strrchr(path, '/');
        if (slash) *slash = 0, rm_rf(path);
    }
    DIR *d = opendir(cache);
    for (struct dirent *e; d && (e = readdir(d));)
        CHECK_MSG(e->d_name[0] != '.' || !strncmp(e->d_name, ".", 2) || !strcmp(e->d_name, ".."),
                  "left in the full cache: %s", e->d_name);
    if (d) closedir(d);
}

/* test_full_dir in a child with a mount namespace of its own: the small tmpfs at mnt goes
 * away with the child, however it ends. */
static void full_disk_child(const char *mnt) {
    char cache[PATH_MAX + 8], log[PATH_MAX + 8];
    snprintf(cache, sizeof cache, "%s/cache", mnt);
    snprintf(log, sizeof log, "%s.log", mnt);
    if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
        mount("kiln-test", mnt, "tmpfs", 0, "size=256k,mode=0700")) {
        test_skip_case("test_full_dir", "cannot mount a small tmpfs (%s)", strerror(errno));
        return;
    }
    kiln_context *ctx = cache_context(cache, NULL);
    int filler = -1;
    long filled = 0;
    CHECK(mkdir(cache, 0700) == 0 && fill_disk(mnt, &filler, &filled));
    fflush(stderr);
    int saved = dup(2), logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(logfd, 2);
    full_disk_loads(ctx, cache); /* no room at all */
    CHECK(ftruncate(filler, filled - 4096) == 0);
    full_disk_loads(ctx, cache); /* room for the source, not for the object */
    cc_stats s = stats_of(ctx);
    CHECK_MSG(s.unwritable == 4 && s.disk_hits == 0, "unwritable %llu, hits %llu",
              (unsigned long long)s.unwritable, (unsigned long long)s.disk_hits);
    CHECK(ftruncate(filler, 0) == 0); /* room again: published, then a hit */
    cc_module_unload(load(ctx, SRC_ADD, false));
    cc_module_unload(load(ctx, SRC_ADD, true));
    fflush(stderr);
    dup2(saved, 2);
    close(saved), close(logfd), close(filler);
    FILE *f = fopen(log, "r"); /* what was said meanwhile, failed CHECKs included */
    for (int c; f && (c = fgetc(f)) != EOF;) fputc(c, stderr);
    if (f) fclose(f);
    CHECK_MSG(count_notices(log) == 1, "%d notices, want 1 per context", count_notices(log));
    kiln_context_destroy(ctx);
}

/* A cache directory on a full file system (as full as it gets, then with room for a
 * source but not for an object) is no error: every load compiles in a private temporary
 * folder and works, once-per-context notice; when room comes back the cache fills again.
 * Needs a small tmpfs, so root and a kernel that lets us mount one; else skipped. */
static void test_full_dir(void) {
    char mnt[PATH_MAX], log[PATH_MAX + 8];
    make_tmpdir(mnt);
    in_child("a full cache", full_disk_child, mnt);
    snprintf(log, sizeof log, "%s.log", mnt);
    unlink(log);
    rm_rf(mnt);
}

/* ------------------------------------------- entries rewritten under a loaded module ---- */

/* What another process may do to a cache file after truncating it (`truncate -s 0`):
 * write garbage over the same inode (open(O_TRUNC) + write), n bytes, as many as it had.
 * 0xcc is int3: code run from it traps. */
static void clobber(const char *path, long n) {
    CHECK(n > 0);
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    char junk[4096];
    memset(junk, 0xcc, sizeof junk);
    for (long left = n; fd >= 0 && left > 0;) {
        ssize_t w = write(fd, junk, left < (long)sizeof junk ? (size_t)left : sizeof junk);
        if (w <= 0) break;
        left -= w;
    }
    if (fd >= 0) close(fd);
    CHECK(file_bytes(path) == n);
}

/* The module still runs its own code and reads its own data. */
static void check_add_module(const cc_module *m, const char *when) {
    const int *magic = m ? cc_module_sym(m, "kiln_magic") : NULL;
    CHECK_MSG(magic && *magic == 0x5a17c0de, "%s: kiln_magic reads back wrong", when);
    CHECK_MSG(m && call_add(m, 19, 23) == 42, "%s: kiln_add is wrong", when);
}

/* Two contexts hold modules loaded from the entry (cache hits); the entry's .so is then
 * truncated, and rewritten with garbage. */
static void truncate_hits(const char *dir) {
    kiln_context *a = cache_context(dir, NULL), *b = cache_context(dir, NULL);
    cc_module *ma = load(a, SRC_ADD, true), *mb = load(b, SRC_ADD, true);
    char so[PATH_MAX];
    if (!ma || !mb) goto out;
    entry_path(so, dir, ma, ".so");
    long n = file_bytes(so);
    check_add_module(ma, "before");
    CHECK(truncate(so, 0) == 0);
    check_add_module(ma, "truncated, first context");
    check_add_module(mb, "truncated, second context");
    clobber(so, n);
    check_add_module(ma, "garbage, first context");
    check_add_module(mb, "garbage, second context");
    /* The damaged entry is not loaded: rebuilt, and the held modules are untouched. */
    cc_module *mc = load(a, SRC_ADD, false);
    check_add_module(mc, "rebuilt");
    CHECK(stats_of(a).corrupt_rebuilt == 1);
    cc_module_unload(mc);
out:
    cc_module_unload(ma), cc_module_unload(mb);
    kiln_context_destroy(a), kiln_context_destroy(b);
}

/* A module compiled here (not a hit): the entry it published is truncated and rewritten. */
static void truncate_fresh(const char *dir) {
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module *m = load(ctx, SRC_ADD, false);
    char so[PATH_MAX];
    if (m) {
        entry_path(so, dir, m, ".so");
        long n = file_bytes(so);
        CHECK(truncate(so, 0) == 0);
        check_add_module(m, "fresh, truncated");
        clobber(so, n);
        check_add_module(m, "fresh, garbage");
    }
    cc_module_unload(m);
    kiln_context_destroy(ctx);
}

/* Another process truncates or rewrites a cache entry while modules loaded from it run
 * (4 of 4 concurrent runs died of SIGBUS): what a module maps is a private copy, so
 * nothing done to the cache's files reaches it. */
static void test_entry_truncated_while_loaded(void) {
    char dir[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module_unload(load(ctx, SRC_ADD, false));
    kiln_context_destroy(ctx);
    in_child("cache hits", truncate_hits, dir);
    rm_rf(dir);
    make_tmpdir(dir);
    in_child("a fresh compile", truncate_fresh, dir);
    rm_rf(dir);
}

/* The copy a module is loaded from, both kinds: the sealed memfd (its size and bytes
 * cannot change) and the fallback, an unlinked file in the given folder. Each holds the
 * object's bytes, loads through /proc/self/fd, and outlives the entry's truncation. */
static void test_private_copy(void) {
    char dir[PATH_MAX], so[PATH_MAX];
    make_tmpdir(dir);
    kiln_context *ctx = cache_context(dir, NULL);
    cc_module *m = load(ctx, SRC_ADD, false);
    if (!m) goto out;
    entry_path(so, dir, m, ".so");
    cc_module_unload(m);
    long n = file_bytes(so);
    for (int kind = 0; kind < 2; kind++) {
        int fd = open(so, O_RDONLY);
        int copy = kind ? objcache_file_copy(fd, dir) : objcache_private_copy(fd, dir, "t");
        close(fd);
        struct stat sb;
        CHECK_MSG(copy >= 0 && !fstat(copy, &sb) && sb.st_size == n && sb.st_nlink == 0,
                  "copy %d: not a nameless copy of %ld bytes", kind, n);
        CHECK(lseek(copy, 0, SEEK_CUR) == 0);
        if (!kind) {
            int seals = fcntl(copy, F_GET_SEALS);
            CHECK_MSG(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_WRITE),
                      "memfd seals %#x", seals);
            CHECK(ftruncate(copy, 0) != 0);
        }
        char via[64];
        snprintf(via, sizeof via, "/proc/self/fd/%d", copy);
        void *h = dlopen(via, RTLD_NOW | RTLD_LOCAL);
        CHECK_MSG(h != NULL, "copy %d: %s", kind, dlerror());
        CHECK(truncate(so, 0) == 0);
        int (*add)(int, int) = NULL;
        void *p = h ? dlsym(h, "kiln_add") : NULL;
        if (p) memcpy(&add, &p, sizeof add);
        CHECK(add && add(20, 22) == 42);
        if (h) dlclose(h);
        close(copy);
        cc_module_unload(load(ctx, SRC_ADD, false)); /* the truncated entry, rebuilt */
    }
    DIR *d = opendir(dir); /* the fallback's file left no name behind */
    for (struct dirent *e; d && (e = readdir(d));)
        CHECK_MSG(strncmp(e->d_name, ".tmp-", 5), "left behind: %s", e->d_name);
    if (d) closedir(d);
out:
    kiln_context_destroy(ctx);
    rm_rf(dir);
}

/* --------------------------------------------------------------- relative paths ---- */

/* A relative KILN_CACHE_DIR (and a relative TMPDIR) is taken against the folder the
 * context was made in: compiles work (the compiler runs in a temp folder, elsewhere), and
 * a later chdir of the process still finds the same entries. */
static void test_relative_dir(void) {
    char base[PATH_MAX], old_cwd[PATH_MAX], abs_so[PATH_MAX + 64];
    make_tmpdir(base);
    char *old_tmpdir = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    CHECK(getcwd(old_cwd, sizeof old_cwd) != NULL);
    CHECK(chdir(base) == 0);
    kiln_context *ctx = cache_context("rel/cache", NULL);
    CHECK(ctx != NULL);
    cc_module *m = ctx ? load(ctx, SRC_ADD, false) : NULL;
    CHECK(m && call_add(m, 40, 2) == 42);
    if (m) {
        snprintf(abs_so, sizeof abs_so, "%s/rel/cache/%s.so", base, cc_module_key(m));
        CHECK_MSG(exists(abs_so), "no entry at %s", abs_so);
    }
    cc_module_unload(m);
    CHECK(chdir("/") == 0); /* the context keeps the folder it was given, not "./rel/cache" */
    m = ctx ? load(ctx, SRC_ADD, true) : NULL;
    CHECK(m && call_add(m, 1, 2) == 3);
    cc_module_unload(m);
    kiln_context_destroy(ctx);
    /* No disk cache: the private temp folder under a relative TMPDIR. */
    CHECK(chdir(base) == 0);
    CHECK(mkdir("rel-tmp", 0700) == 0);
    setenv("TMPDIR", "rel-tmp", 1);
    ctx = cache_context("rel/cache", NULL);
    if (ctx) {
        opt_of(ctx)->cache.max_bytes = 0;
        m = load(ctx, SRC_MUL, false);
        CHECK(m && cc_module_sym(m, "kiln_mul"));
        cc_module_unload(m);
    }
    kiln_context_destroy(ctx);
    if (old_tmpdir)
        setenv("TMPDIR", old_tmpdir, 1), free(old_tmpdir);
    else
        unsetenv("TMPDIR");
    CHECK(chdir(old_cwd) == 0);
    rm_rf(base);
}

/* TMPDIR missing: the compile falls back to /tmp (an outside check found every compile
 * failing, naming neither TMPDIR nor a way out). And a temp folder a dead process left
 * (kiln-cc-<pid>-...) is removed by a context's first compile once it is six hours old;
 * a fresh one, one of a live process, one a message named (its mark) and a link of that
 * name (its target) stay. */
static void test_tmpdir(void) {
    char base[PATH_MAX], dead[PATH_MAX + 64], young[PATH_MAX + 64], live[PATH_MAX + 64];
    make_tmpdir(base);
    char *old_tmpdir = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    /* a pid that is not running: the highest the kernel hands out is below 2^22 */
    snprintf(dead, sizeof dead, "%s/kiln-cc-4194999-0-AAAAAA", base);
    snprintf(young, sizeof young, "%s/kiln-cc-4194998-0-BBBBBB", base);
    snprintf(live, sizeof live, "%s/kiln-cc-1-0-CCCCCC", base);
    char kept[PATH_MAX + 64], link[PATH_MAX + 64], target[PATH_MAX + 64], victim[PATH_MAX + 96],
        mark[PATH_MAX + 96];
    snprintf(kept, sizeof kept, "%s/kiln-cc-4194997-0-DDDDDD", base);
    snprintf(link, sizeof link, "%s/kiln-cc-4194996-0-EEEEEE", base);
    snprintf(target, sizeof target, "%s/elsewhere", base);
    snprintf(victim, sizeof victim, "%s/precious", target);
    snprintf(mark, sizeof mark, "%s/kept-for-its-message", kept);
    CHECK(!mkdir(dead, 0700) && !mkdir(young, 0700) && !mkdir(live, 0700));
    CHECK(!mkdir(kept, 0700) && !mkdir(target, 0700) && !symlink(target, link));
    FILE *mf = fopen(mark, "w"), *vf = fopen(victim, "w");
    if (mf) fclose(mf);
    if (vf) fclose(vf);
    struct timespec old_times[2] = {{.tv_sec = time(NULL) - 7 * 3600},
                                    {.tv_sec = time(NULL) - 7 * 3600}};
    CHECK(!utimensat(AT_FDCWD, dead, old_times, 0) && !utimensat(AT_FDCWD, live, old_times, 0));
    CHECK(!utimensat(AT_FDCWD, kept, old_times, 0) && !utimensat(AT_FDCWD, target, old_times, 0));
    setenv("TMPDIR", base, 1);
    kiln_context *ctx = cache_context(base, NULL);
    if (ctx) opt_of(ctx)->cache.max_bytes = 0; /* no disk cache: every load compiles */
    cc_module *m = ctx ? load(ctx, SRC_ADD, false) : NULL;
    CHECK(m && call_add(m, 40, 2) == 42);
    cc_module_unload(m);
    kiln_context_destroy(ctx);
    CHECK_MSG(!exists(dead), "%s stayed", dead);
    CHECK_MSG(exists(young) && exists(live), "a young or live folder was removed");
    /* a folder a message named, and what a link of the right name points to, stay */
    CHECK_MSG(exists(mark) && exists(victim), "a kept folder or a link's target was emptied");
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s/not-here", base);
    setenv("TMPDIR", missing, 1);
    ctx = cache_context(base, NULL);
    if (ctx) opt_of(ctx)->cache.max_bytes = 0;
    m = ctx ? load(ctx, SRC_MUL, false) : NULL;
    CHECK_MSG(m && cc_module_sym(m, "kiln_mul"), "TMPDIR missing: %s",
              ctx ? kiln_last_error(ctx) : "no context");
    cc_module_unload(m);
    kiln_context_destroy(ctx);
    if (old_tmpdir)
        setenv("TMPDIR", old_tmpdir, 1), free(old_tmpdir);
    else
        unsetenv("TMPDIR");
    rm_rf(base);
}

int main(void) {
    RUN(test_sha256);
    RUN(test_config);
    RUN(test_missing_compiler); /* touches the environment: before any thread starts */
    RUN(test_relative_dir);     /* so does this (TMPDIR), and it changes folder */
    RUN(test_tmpdir);           /* and this (TMPDIR) */
    RUN(test_compile_and_hit);
    RUN(test_second_process);
    RUN(test_two_held);
    RUN(test_corrupt);
    RUN(test_wrong_object);
    RUN(test_syntax_error);
    RUN(test_split_compile);
    RUN(test_extra_flags);
    RUN(test_eviction);
    RUN(test_cache_off);
    RUN(test_host_oom);
    RUN(test_unsafe_dir);
    RUN(test_group_writable_dir);
    RUN(test_odd_entries);
    RUN(test_unwritable_dir);
    RUN(test_full_dir);
    RUN(test_concurrent);
    RUN(test_entry_truncated_while_loaded);
    RUN(test_private_copy);
    return test_summary("test_cc");
}
