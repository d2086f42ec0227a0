/* test.h — the tiny harness every test file uses: CHECK macros that count and report
 * failures with file and line, RUN to call a test function, and a context free of the
 * environment. Fault injection lives in fault.h, random numbers and seeds in rng.h.
 * Each test file ends with `return test_summary("name");`. A test that cannot run here
 * says why through test_skip / test_skip_case, the one way tests skip. */
#ifndef KILN_TEST_H
#define KILN_TEST_H

#include "kiln.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

static int test_passed, test_failed;
/* Which cases RUN and RUN_CC run (test_select_cases): 0 all, 1 only those that call no C
 * compiler, 2 only those that do. */
static int test_case_filter;
/* Set by test_seed (rng.h): 0 no random test ran, 1 the defaults, 2 KILN_TEST_SEED's. */
static int test_seed_chosen;
static unsigned long long test_seed_env;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond)                                                                                  \
            test_passed++;                                                                         \
        else {                                                                                     \
            test_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond)                                                                                  \
            test_passed++;                                                                         \
        else {                                                                                     \
            test_failed++;                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_STATUS(expr, want)                                                                   \
    do {                                                                                           \
        kiln_status s_ = (expr);                                                                   \
        CHECK_MSG(s_ == (want), "%s returned %s, want %s", #expr, kiln_status_name(s_),            \
                  kiln_status_name(want));                                                         \
    } while (0)

#define CHECK_OK(ctx, expr)                                                                        \
    do {                                                                                           \
        kiln_status s_ = (expr);                                                                   \
        CHECK_MSG(s_ == KILN_STATUS_OK, "%s returned %s: %s", #expr, kiln_status_name(s_),         \
                  kiln_last_error(ctx));                                                           \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *h_ = (hay);                                                                    \
        CHECK_MSG(h_ &&strstr(h_, (needle)), "\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", \
                  (needle));                                                                       \
    } while (0)

/* The exit status ctest counts as skipped (SKIP_RETURN_CODE, set for every test in
 * CMakeLists.txt; the shell-script tests exit with it too). */
#define TEST_SKIP_CODE 77

/* The whole test cannot run here (no GPU, no NVRTC, no Python package, ...): one line
 * "SKIP: why" on stdout, then main returns what this returns, so ctest lists the test as
 * skipped and -V or --output-on-failure shows the line (scripts/ctest_skips.sh prints it
 * after every run):   return test_skip("no NVRTC: %s", why); */
static inline int test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("SKIP: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    va_end(ap);
    return TEST_SKIP_CODE;
}

/* One case of a test that otherwise runs cannot (root only, no xmllint, ...): the line
 * "SKIP <what>: why" on stdout; the test still passes or fails on the rest, and
 * scripts/ctest_skips.sh prints the line after the run. */
static inline void test_skip_case(const char *what, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void test_skip_case(const char *what, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("SKIP %s: ", what);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    va_end(ap);
}

/* |a-b| <= atol + rtol*|b|, with NaN == NaN and equal infinities. */
static inline int test_close(double a, double b, double rtol, double atol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}
#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        CHECK_MSG(test_close(a_, b_, (tol), (tol)), "%s = %.17g, want %.17g", #a, a_, b_);         \
    } while (0)

#define RUN(fn)                                                                                    \
    do {                                                                                           \
        int before_ = test_failed;                                                                 \
        if (test_case_filter != 2) fn();                                                           \
        if (test_failed != before_) fprintf(stderr, "  in %s\n", #fn);                             \
    } while (0)

/* A case that calls the system C compiler or NVRTC (it compiles a kernel): left out of the
 * fast tier (make check) when the program runs with --no-cc. */
#define RUN_CC(fn)                                                                                 \
    do {                                                                                           \
        int before_ = test_failed;                                                                 \
        if (test_case_filter != 1) fn();                                                           \
        if (test_failed != before_) fprintf(stderr, "  in %s\n", #fn);                             \
    } while (0)

/* A test program whose cases are split between the tiers takes one argument: --no-cc runs
 * the RUN cases alone (ctest's TEST, labelled fast), --cc the RUN_CC cases alone
 * (TEST_cc); none runs both. CMakeLists.txt registers such a program under both names. */
static inline void test_select_cases(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--no-cc")) test_case_filter = 1;
    if (argc > 1 && !strcmp(argv[1], "--cc")) test_case_filter = 2;
}

/* A whole file as a string (malloc'd; NULL when it cannot be read). */
static inline char *test_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = (char *)malloc(n > 0 ? (size_t)n + 1 : 1);
    size_t got = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    s[got] = 0;
    fclose(f);
    return s;
}

/* KILN_TEST_TIER1=1: every test context compiles in tiers with its tier thread held, so
 * every whole program runs its LOOP kernels from their description (the first compile
 * tier, src/codegen/kexec.c) for the test's whole life: the suites check the interpreter
 * against the reference as they check the compiled kernels (ctest's *_tier1 tests). */
void tier_hold(kiln_context *ctx, bool hold) __attribute__((weak));
int tier_wait(kiln_executable *e) __attribute__((weak));
bool tier_same_bits(const kiln_executable *e) __attribute__((weak));
/* KILN_TEST_TIER1=bits: besides, each program compare.h checks runs again on its optimised
 * build, which must give tier 1's outputs bit for bit where the tiers promise it
 * (tier_same_bits: the interpreter adds every float sum in the compiled kernel's order,
 * and compiles the kernels it cannot: kexec.h). */
static bool test_tier_bits_always; /* a test that checks the bits in every run (test_kexec) */
static inline bool test_tier1_bits(void) {
    const char *v = getenv("KILN_TEST_TIER1");
    return (test_tier_bits_always || (v && !strcmp(v, "bits"))) && tier_hold && tier_wait;
}
/* Without it, a test context compiles the optimised build before kiln_compile returns
 * (compile_tiers 1), so the suites check the printed kernels: with the library's default
 * (tiers where they give the same bits) a program that runs once ran at tier 1 alone, and
 * the printed C kernels went unchecked but by the *_tier1 tests' comparison of bits
 * (a bf16 softmax over rows of 16 summed its kept row's raw 16-bit integers there, found
 * by a review, 2026-12-05). test_tiers.c makes its own contexts. */
static inline bool test_tier1(kiln_context_options *o) {
    const char *v = getenv("KILN_TEST_TIER1");
    if (!v || !*v || !strcmp(v, "0")) {
        o->compile_tiers = 1;
        return false;
    }
    o->compile_tiers = 2;
    o->cache_max_bytes = -1; /* no -O3 build found in a cache: tier 1 always */
    return true;
}
static inline kiln_context *test_tier1_hold(kiln_context *c, bool tier1) {
    if (c && tier1 && tier_hold) tier_hold(c, true);
    return c;
}

/* A context for a test program: no environment, kernels cached in a fresh private folder
 * made from the template in dir (such as "/tmp/kiln-test-NAME-XXXXXX", rewritten in
 * place), so tests never write to the user's cache. NULL, with the reason on stderr, when
 * either cannot be made. */
static inline kiln_context *test_private_context(char *dir) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return NULL;
    }
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = dir;
    bool t1 = test_tier1(&o);
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return test_tier1_hold(c, t1);
}

/* A context of `threads` threads, no environment, kernels cached in cache_dir (a folder
 * test_private_context made). NULL, with the reason on stderr, when it cannot be made. */
static inline kiln_context *test_threads_context(const char *cache_dir, int threads) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = cache_dir;
    o.num_threads = threads;
    /* beside the test's own context, which may hold 75% of a GPU already: allocate on demand */
    o.alloc_mode = KILN_ALLOC_MODE_GROW;
    bool t1 = test_tier1(&o);
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return test_tier1_hold(c, t1);
}

/* Whether `what` occurs in src other than on the line after `#if !KILN_ACROSS_ROWS` (the
 * pragmas a target with AVX-512 goes without: src/codegen/kdesc.h, KD_SHORT_REDUCE);
 * *guarded (may be NULL) counts the occurrences that are. */
static inline bool test_has_unguarded(const char *src, const char *what, int *guarded) {
    static const char guard[] = "#if !KILN_ACROSS_ROWS\n";
    bool found = false;
    if (guarded) *guarded = 0;
    for (const char *at = src ? strstr(src, what) : NULL; at; at = strstr(at + 1, what)) {
        const char *line = at, *prev;
        while (line > src && line[-1] != '\n') line--;
        for (prev = line > src ? line - 1 : line; prev > src && prev[-1] != '\n';) prev--;
        while (prev < line && (*prev == ' ' || *prev == '\t')) prev++;
        bool after = line > src && !strncmp(prev, guard, sizeof guard - 1);
        if (after && guarded) ++*guarded;
        found |= !after;
    }
    return found;
}

/* Removes a folder test_private_context made, with everything in it. */
static inline void test_remove_dir(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
}

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, test_passed, test_failed);
    if (test_failed && test_seed_chosen == 1)
        fprintf(stderr, "%s: random inputs from the fixed default seeds (KILN_TEST_SEED unset)\n",
                name);
    if (test_failed && test_seed_chosen == 2)
        fprintf(stderr, "%s: repeat with KILN_TEST_SEED=%llu\n", name, test_seed_env);
    return test_failed ? 1 : 0;
}

/* A context with default options and no environment influence. */
static inline kiln_context *test_context(void) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    bool t1 = test_tier1(&o);
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err) != KILN_STATUS_OK) {
        fprintf(stderr, "cannot create a context: %s\n", err);
        exit(2);
    }
    return test_tier1_hold(ctx, t1);
}

#endif
