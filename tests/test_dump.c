/* test_dump.c — KILN_DUMP / kiln_context_options.dump_dir: every compiled program's
 * stages written to files (src/report/dump.h): the file set and their contents, names made
 * safe for a file system, the environment variable, a compile that fails part way, a
 * dump that cannot be written, and every host allocation of a dumping compile failed. */
#include "fault.h"
#include "test.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static char root[64];

/* How many files in dir end with `suffix` (and contain `part`, when not NULL); the last
 * one's path goes to path. */
static int count_files(const char *dir, const char *part, const char *suffix, char *path,
                       size_t n) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int k = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name), sl = strlen(suffix);
        if (l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
        if (part && !strstr(e->d_name, part)) continue;
        k++;
        if (path) snprintf(path, n, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return k;
}

static kiln_context *dump_context(const char *dir, const kiln_host_allocator *h) {
    kiln_context_options o = {.ignore_environment = true, .dump_dir = dir, .host_allocator = h};
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return ctx;
}

/* x -> exp(x) * 2 + reduce_sum(x): a loop kernel, a reduction, a plan. */
static kiln_graph *small_graph(kiln_context *ctx, const char *name) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, name, &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, DIMS(4, 8));
    int ax = 1;
    kiln_value s = kiln_reduce_sum(g, x, 1, &ax, true);
    kiln_value y = kiln_add(g, kiln_mul(g, kiln_exp(g, x), kiln_scalar(g, KILN_DTYPE_F32, 2.0)), s);
    kiln_graph_finish(g, 1, &y);
    return g;
}

static void test_files_and_contents(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/made/on/demand", root); /* missing: it is created */
    kiln_context *ctx = dump_context(dir, NULL);
    CHECK(ctx != NULL);
    if (!ctx) return;
    kiln_graph *g = small_graph(ctx, "my model/v1");
    kiln_executable *e1 = NULL, *e2 = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e1));
    CHECK_OK(ctx, kiln_compile(g, NULL, &e2)); /* a second program: new files, none lost */
    static const char *const stages[] = {".0-traced.ir", ".1-optimized.ir", ".2-kernels.c",
                                         ".3-plan.txt",  ".3-plan.json",    ".3-plan.svg"};
    for (int i = 0; i < 6; i++)
        CHECK_MSG(count_files(dir, ".my_model_v1.", stages[i], NULL, 0) == 2, "%s twice",
                  stages[i]);
    char path[512];
    struct {
        const char *stage, *want;
    } content[] = {{".0-traced.ir", "graph \"my model/v1\"(%1: f32[4,8] \"x\") {\n"},
                   {".0-traced.ir", "exp(%1)"},
                   {".1-optimized.ir", "graph \"my model/v1\"("},
                   {".2-kernels.c", "KILN_EXPORT void kiln_k"},
                   {".2-kernels.c", "/* k"},
                   {".3-plan.txt", "memory plan of 'my model/v1'"},
                   {".3-plan.json", "{"},
                   {".3-plan.svg", "<svg"}};
    for (size_t i = 0; i < sizeof content / sizeof content[0]; i++) {
        count_files(dir, NULL, content[i].stage, path, sizeof path);
        char *text = test_read_file(path);
        CHECK_MSG(text && strstr(text, content[i].want), "%s lacks %s", path, content[i].want);
        free(text);
    }
    kiln_executable_destroy(e1);
    kiln_executable_destroy(e2);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* KILN_DUMP in the environment turns it on, as the other KILN_* variables do. */
static void test_environment(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/from_env", root);
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", root);
    setenv("KILN_DUMP", dir, 1);
    kiln_context_options o = {.cache_dir = cache};
    kiln_context *ctx = NULL;
    CHECK_OK(ctx, kiln_context_create(&o, &ctx, NULL, 0));
    unsetenv("KILN_DUMP");
    if (!ctx) return;
    kiln_graph *g = small_graph(ctx, "env");
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK(count_files(dir, ".env.", ".2-kernels.c", NULL, 0) == 1);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* A compile that fails in the C compiler leaves the stages it reached: the kernel source
 * the user needs to see, and no plan of a program that does not exist. */
static void test_failed_compile_keeps_stages(void) {
    char dir[128], cache[128];
    snprintf(dir, sizeof dir, "%s/failing", root);
    snprintf(cache, sizeof cache, "%s/cache2", root);
    kiln_context_options o = {.ignore_environment = true,
                              .dump_dir = dir,
                              .cache_dir = cache,
                              .cc_flags = "-include /nonexistent/kiln_test_dump.h"};
    kiln_context *ctx = NULL;
    CHECK_OK(ctx, kiln_context_create(&o, &ctx, NULL, 0));
    if (!ctx) return;
    kiln_graph *g = small_graph(ctx, "broken");
    kiln_executable *e = NULL;
    CHECK(kiln_compile(g, NULL, &e) != KILN_STATUS_OK && !e);
    CHECK(count_files(dir, ".broken.", ".0-traced.ir", NULL, 0) == 1);
    CHECK(count_files(dir, ".broken.", ".2-kernels.c", NULL, 0) == 1);
    CHECK(count_files(dir, ".broken.", ".3-plan.txt", NULL, 0) == 0);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* A dump directory that is a file: the compile fails with KILN_STATUS_IO naming it. */
static void test_unwritable(void) {
    char file[128];
    snprintf(file, sizeof file, "%s/a_file", root);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    char dir[160];
    snprintf(dir, sizeof dir, "%s/sub", file);
    for (int i = 0; i < 2; i++) {
        kiln_context *ctx = dump_context(i ? file : dir, NULL);
        CHECK(ctx != NULL);
        if (!ctx) continue;
        kiln_graph *g = small_graph(ctx, "x");
        kiln_executable *e = NULL;
        CHECK_STATUS(kiln_compile(g, NULL, &e), KILN_STATUS_IO);
        CHECK(e == NULL);
        CHECK_CONTAINS(kiln_last_error(ctx), "KILN_DUMP");
        CHECK_CONTAINS(kiln_last_error(ctx), file);
        kiln_graph_destroy(g);
        kiln_context_destroy(ctx);
    }
}

/* Every host allocation of a compile that dumps, failed in turn. */
static kiln_status dump_scenario(fault_run *r) {
    char dir[128], cache[128];
    snprintf(dir, sizeof dir, "%s/sweep", root);
    snprintf(cache, sizeof cache, "%s/cache3", root);
    kiln_context_options o = {.ignore_environment = true,
                              .dump_dir = dir,
                              .cache_dir = cache,
                              .host_allocator = &r->host,
                              .compile_tiers = 1};
    kiln_context *ctx = NULL;
    kiln_status s = kiln_context_create(&o, &ctx, r->message, sizeof r->message);
    if (s) return s;
    kiln_graph *g = small_graph(ctx, "sweep");
    kiln_executable *e = NULL;
    s = fault_note(r, ctx, g ? kiln_graph_status(g) : KILN_STATUS_HOST_OOM);
    if (!s) s = fault_note(r, ctx, kiln_compile(g, NULL, &e));
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    return s;
}

/* Cold: the first run that reaches the compiler fills the cache (the cache eviction that
 * follows a fresh compile is swept too); later runs load from it. */
static void test_fault_injection(void) {
    fault_sweep sw = {.name = "compile with KILN_DUMP", .run = dump_scenario, .max_runs = 5000};
    CHECK(fault_sweep_run(&sw) > 0);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/kiln_test_dump_XXXXXX");
    if (!mkdtemp(root)) return 1;
    RUN(test_files_and_contents);
    RUN(test_environment);
    RUN(test_failed_compile_keeps_stages);
    RUN(test_unwritable);
    RUN(test_fault_injection);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", root);
    return test_summary("test_dump");
}
