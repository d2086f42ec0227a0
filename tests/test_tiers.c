/* test_tiers.c — tiered compilation (src/runtime/tier.c; docs/performance.md, "Compile
 * tiers"): a program's first calls run its kernels from their descriptions (no compiler)
 * and give the reference's values, with the optimised build's bits, the sum's too, where
 * the tiers promise them (tier_same_bits), else within rounding; the default is two tiers
 * exactly there; the optimised build swapped in gives one tier's bits; calls
 * running on other threads (and calls queued on an asynchronous device) across the swap
 * each give one tier's result, never a mixture; destroying an executable or its context
 * while its optimised build is queued or compiling is safe; the optimised build cached on
 * disk skips the first tier; KILN_CC_FLAGS leaves the first tier as it is; and
 * KILN_COMPILE_TIERS=1 compiles as before tiers. The tier thread is held (tier_hold) while a
 * case needs tier 1 for certain, and waited for (tier_wait), never slept on. The suites
 * that cover the kernel forms run at tier 1 too (KILN_TEST_TIER1, ctest's *_tier1). */
#include "test.h"
#include "codegen/kexec.h"
#include "runtime/tier.h"
#include "trace/trace.h"

#include <ftw.h>
#include <pthread.h>
#include <unistd.h>

enum { N = 4099 }; /* not a multiple of any vector width: vector and scalar tails both run */

static char cache_dir[] = "/tmp/kiln-test-tiers-XXXXXX";

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes a case's cache folder and what it holds. */
static void remove_tree(const char *dir) {
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A context with options o, no environment, its kernels cached in dir; NULL (the reason
 * on stderr) if it cannot be made. */
static kiln_context *context_with(kiln_context_options o, const char *dir) {
    o.ignore_environment = true;
    o.cache_dir = dir;
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return c;
}

static kiln_context *tiers_context(int tiers, bool async, const char *dir) {
    return context_with(
        (kiln_context_options){.num_threads = 2, .compile_tiers = tiers, .async_dispatch = async},
        dir);
}

/* sum(exp(sin(x) * 1.5) * x) and tanh(x) * x + shift: a simd reduction, whose order is
 * what the vectoriser chooses, and products followed by sums, which contract into FMAs
 * only where the compiler forms them: both differ between builds that do not agree. */
static kiln_graph *program_with(kiln_context *c, const char *name, double shift) {
    kiln_graph *g = NULL;
    if (kiln_graph_create(c, name, &g)) return NULL;
    int64_t d[1] = {N};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value e =
        kiln_exp(g, kiln_mul(g, kiln_sin(g, x), kiln_full(g, KILN_DTYPE_F32, 1, d, 1.5)));
    int axes[1] = {0};
    kiln_value outs[2] = {
        kiln_reduce_sum(g, kiln_mul(g, e, x), 1, axes, false),
        kiln_add(g, kiln_mul(g, kiln_tanh(g, x), x), kiln_full(g, KILN_DTYPE_F32, 1, d, shift))};
    if (kiln_graph_finish(g, 2, outs)) {
        kiln_graph_destroy(g);
        return NULL;
    }
    return g;
}

static kiln_graph *program(kiln_context *c, const char *name) {
    return program_with(c, name, 0.25);
}

static kiln_array *input(kiln_context *c) {
    static float h[N];
    for (int i = 0; i < N; i++) h[i] = (float)((i * 37) % 1001 - 500) * 0.00731f;
    int64_t d[1] = {N};
    kiln_array *a = NULL;
    CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 1, d, h, &a));
    return a;
}

/* Both outputs' bytes, back to back. */
typedef struct result {
    float sum, ew[N];
} result;

static bool run_once(kiln_executable *e, kiln_array *x, result *r) {
    kiln_array *out[2] = {0};
    kiln_status s = kiln_executable_run(e, 1, &x, 2, out);
    bool ok = !s && !kiln_array_copy_to_host(out[0], &r->sum, sizeof r->sum) &&
              !kiln_array_copy_to_host(out[1], r->ew, sizeof r->ew);
    kiln_array_destroy(out[0]);
    kiln_array_destroy(out[1]);
    return ok;
}

static int tier_of(const kiln_executable *e) {
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    return info.compile_tier;
}

/* The result with one tier (KILN_COMPILE_TIERS=1, today's -O3 build), in its own cache. */
static result one_tier;
static bool one_tier_ok;

static void test_one_tier_as_before(void) {
    char dir[] = "/tmp/kiln-test-tiers1-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context *c = tiers_context(1, false, dir);
    CHECK(c != NULL);
    if (!c) return;
    kiln_graph *g = program(c, "one_tier");
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, NULL, &e));
    kiln_array *x = input(c);
    if (e) {
        CHECK(tier_of(e) == 2); /* compiled at -O3 before kiln_compile returned */
        CHECK(e->tier == 2 && !e->tier_pending);
        CHECK(run_once(e, x, &one_tier));
        one_tier_ok = true;
        /* and against the reference interpreter: an outside check of the values */
        kiln_array *ref[2] = {0};
        CHECK_OK(c, kiln_interpret(g, 1, &x, 2, ref));
        float rs, rew[N];
        CHECK_OK(c, kiln_array_copy_to_host(ref[0], &rs, sizeof rs));
        CHECK_OK(c, kiln_array_copy_to_host(ref[1], rew, sizeof rew));
        CHECK(test_close(one_tier.sum, rs, 1e-4, 1e-3));
        int bad = 0;
        for (int i = 0; i < N; i++) bad += !test_close(one_tier.ew[i], rew[i], 1e-5, 1e-6);
        CHECK(bad == 0);
        kiln_array_destroy(ref[0]);
        kiln_array_destroy(ref[1]);
    }
    kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(c);
    remove_tree(dir);
}

/* tier 1's result against one tier's: the bits, the sum's too, where the tiers promise
 * them (tier_same_bits), else within rounding */
static bool tier1_agrees(const kiln_executable *e, const result *r) {
    if (tier_same_bits(e)) return memcmp(r, &one_tier, sizeof *r) == 0;
    for (int i = 0; i < N; i++)
        if (!test_close(r->ew[i], one_tier.ew[i], 1e-6, 1e-7)) return false;
    return test_close(r->sum, one_tier.sum, 1e-6, 1e-6);
}

/* Tier 1 first (held), then the swap: tier 1 agrees with one tier's result, tier 2 is it. */
static void test_swap_gives_tier2_bits(void) {
    kiln_context *c = tiers_context(2, false, cache_dir);
    CHECK(c != NULL);
    if (!c) return;
    tier_hold(c, true);
    kiln_graph *g = program(c, "swap");
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, NULL, &e));
    kiln_graph_destroy(g);
    kiln_array *x = input(c);
    static result r1, r2;
    if (e) {
        CHECK_OK(c, kiln_executable_set_profiling(e, true));
        CHECK(tier_of(e) == 1);
        CHECK(run_once(e, x, &r1));
        CHECK(run_once(e, x, &r1));
        CHECK(tier_of(e) == 1); /* held: no swap yet */
        tier_hold(c, false);
        CHECK(tier_wait(e) == 2);
        CHECK(tier_of(e) == 2);
        CHECK(run_once(e, x, &r2));
        CHECK(!one_tier_ok || tier1_agrees(e, &r1));
        CHECK(!one_tier_ok || memcmp(&r2, &one_tier, sizeof r2) == 0);
        char *rep = kiln_executable_profile_report(e);
        CHECK_CONTAINS(rep, "compile tiers: 2 profiled runs on the kernels' descriptions (tier "
                            "1), 1 on the optimised build (tier 2)");
        kiln_string_free(c, rep);
    }
    kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_context_destroy(c);
}

/* A later process: tier 2 is in the disk cache now, so no first tier at all. */
static void test_cached_tier2_skips_tier1(void) {
    kiln_context *c = tiers_context(2, false, cache_dir);
    CHECK(c != NULL);
    if (!c) return;
    kiln_graph *g = program(c, "swap");
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, NULL, &e));
    kiln_graph_destroy(g);
    if (e) {
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        CHECK(info.compile_tier == 2 && info.from_disk_cache);
        CHECK(e->tier == 2 && !e->tier_pending);
    }
    kiln_executable_destroy(e);
    kiln_context_destroy(c);
}

/* Calls on several threads while the swap happens: each gives tier 1's result or tier 2's,
 * bit for bit, never a mixture. */
typedef struct caller {
    kiln_executable *e;
    kiln_array *x;
    const result *want, *want2;
    atomic_int *stop;
    int runs, wrong, failed;
} caller;

static void *caller_main(void *arg) {
    caller *k = arg;
    static _Thread_local result r;
    while (!atomic_load(k->stop) || k->runs < 3) {
        if (!run_once(k->e, k->x, &r))
            k->failed++;
        else if (memcmp(&r, k->want, sizeof r) && memcmp(&r, k->want2, sizeof r))
            k->wrong++;
        k->runs++;
    }
    return NULL;
}

static void swap_under_calls(bool async) {
    char dir[] = "/tmp/kiln-test-tiers-calls-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context *c = tiers_context(2, async, dir);
    CHECK(c != NULL);
    if (!c) return;
    tier_hold(c, true);
    kiln_graph *g = program(c, "calls");
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, NULL, &e));
    kiln_graph_destroy(g);
    kiln_array *x = input(c);
    static result want;
    if (e && run_once(e, x, &want) && one_tier_ok) {
        CHECK(tier1_agrees(e, &want));
        enum { T = 3 };
        pthread_t th[T];
        caller k[T];
        atomic_int stop = 0;
        for (int i = 0; i < T; i++) {
            k[i] = (caller){.e = e, .x = x, .want = &want, .want2 = &one_tier, .stop = &stop};
            pthread_create(&th[i], NULL, caller_main, &k[i]);
        }
        tier_hold(c, false); /* the swap, while they call */
        CHECK(tier_wait(e) == 2);
        atomic_store(&stop, 1);
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            CHECK(k[i].failed == 0 && k[i].wrong == 0 && k[i].runs >= 3);
        }
    }
    kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_context_destroy(c);
    remove_tree(dir);
}

static void test_swap_under_concurrent_calls(void) {
    swap_under_calls(false);
}

static void test_swap_under_async_calls(void) {
    swap_under_calls(true);
}

/* Destroying while tier 2 is queued (dropped), compiling (finished, then freed), and a
 * context destroyed right after its executable's build started. */
static void test_destroy_during_background_compile(void) {
    char dir[] = "/tmp/kiln-test-tiers-destroy-XXXXXX";
    if (!mkdtemp(dir)) return;
    for (int round = 0; round < 3; round++) {
        kiln_context *c = tiers_context(2, false, dir);
        CHECK(c != NULL);
        if (!c) return;
        tier_hold(c, true);
        char name[32];
        snprintf(name, sizeof name, "destroy%d", round);
        kiln_graph *g = program_with(c, name, 0.5 + round); /* another source: not cached */
        kiln_executable *e = NULL;
        CHECK_OK(c, kiln_compile(g, NULL, &e));
        kiln_graph_destroy(g);
        CHECK(e && e->tier == 1 && e->tier_pending);
        if (round == 0) { /* queued: dropped by destroy */
            kiln_executable_destroy(e);
        } else { /* compiling (or about to): finished in the background, then freed */
            tier_hold(c, false);
            if (round == 1) kiln_executable_destroy(e);
            if (round == 2) {
                kiln_array *x = input(c);
                result r;
                CHECK(run_once(e, x, &r));
                kiln_array_destroy(x);
                kiln_executable_destroy(e);
            }
        }
        kiln_context_destroy(c); /* joins the tier thread */
    }
    remove_tree(dir);
}

/* KILN_CC_FLAGS changes the optimised build, not the first tier: still tier 1 first. */
static void test_cc_flags_keep_tier1(void) {
    char dir[] = "/tmp/kiln-test-tiers-flags-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context *c =
        context_with((kiln_context_options){.cc_flags = "-O2", .compile_tiers = 2}, dir);
    CHECK(c != NULL);
    if (!c) return;
    kiln_graph *g = program(c, "flags");
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, NULL, &e));
    kiln_graph_destroy(g);
    CHECK(e && e->tier == 1);
    CHECK(e && tier_wait(e) == 2);
    kiln_executable_destroy(e);
    kiln_context_destroy(c);
    remove_tree(dir);
}

/* KILN_COMPILE_TIERS=2 with a compiler that fails: tier 1 needs none, so a program runs
 * (an f64 sum the C compiler would vectorise in its own order included: with no bits
 * promised it is interpreted, not compiled for tier 1), gives the reference's values, and
 * stays on tier 1 when its optimised build fails, which the listing says. */
static void test_broken_compiler_keeps_tier1(void) {
    char dir[] = "/tmp/kiln-test-tiers-nocc-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context *c =
        context_with((kiln_context_options){.cc = "/bin/false", .compile_tiers = 2}, dir);
    CHECK(c != NULL);
    if (!c) return;
    kiln_graph *g = NULL;
    CHECK_OK(c, kiln_graph_create(c, "nocc", &g));
    int64_t d[2] = {37, 101};
    int ax = 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d);
    kiln_value out = kiln_reduce_sum(g, kiln_exp(g, x), 1, &ax, false);
    CHECK_OK(c, kiln_graph_finish(g, 1, &out));
    kiln_executable *e = NULL;
    kiln_compile_options co = {.keep_ir = true};
    CHECK_OK(c, kiln_compile(g, &co, &e));
    if (e) {
        CHECK(e->tier == 1 && !tier_same_bits(e) && !e->tier1_compiled);
        static double h[37 * 101];
        for (int i = 0; i < 37 * 101; i++) h[i] = (double)(i % 17) * 0.125 - 1.0;
        kiln_array *a = NULL, *got = NULL, *want = NULL;
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F64, 2, d, h, &a));
        CHECK_OK(c, kiln_executable_run(e, 1, &a, 1, &got));
        CHECK_OK(c, kiln_interpret(g, 1, &a, 1, &want));
        double r1[37], r2[37];
        CHECK_OK(c, kiln_array_copy_to_host(got, r1, sizeof r1));
        CHECK_OK(c, kiln_array_copy_to_host(want, r2, sizeof r2));
        int bad = 0;
        for (int i = 0; i < 37; i++) bad += !test_close(r1[i], r2[i], 1e-12, 1e-12);
        CHECK(bad == 0);
        CHECK(tier_wait(e) == 1); /* the optimised build failed: tier 1 stays */
        char *text = kiln_executable_to_string(e);
        CHECK_CONTAINS(text, "the optimised build failed to compile");
        kiln_string_free(c, text);
        kiln_array_destroy(a), kiln_array_destroy(got), kiln_array_destroy(want);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(c);
    remove_tree(dir);
}

/* KILN_COMPILE_TIERS: 1 and 2 are taken, anything else names the variable. */
static void test_environment(void) {
    char dir[] = "/tmp/kiln-test-tiers-env-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.cache_dir = dir;
    kiln_context *c = NULL;
    char err[512];
    setenv("KILN_COMPILE_TIERS", "1", 1);
    CHECK(kiln_context_create(&o, &c, err, sizeof err) == KILN_STATUS_OK);
    CHECK(c && c->config.compile_tiers == 1);
    kiln_context_destroy(c);
    c = NULL;
    setenv("KILN_COMPILE_TIERS", "3", 1);
    CHECK(kiln_context_create(&o, &c, err, sizeof err) != KILN_STATUS_OK);
    CHECK_CONTAINS(err, "KILN_COMPILE_TIERS");
    unsetenv("KILN_COMPILE_TIERS");
    o.compile_tiers = 5;
    CHECK(kiln_context_create(&o, &c, err, sizeof err) != KILN_STATUS_OK);
    CHECK_CONTAINS(err, "compile_tiers");
    o.compile_tiers = 0;
    o.ignore_environment = true;
    CHECK(kiln_context_create(&o, &c, err, sizeof err) == KILN_STATUS_OK);
    CHECK(c && c->config.compile_tiers == 0); /* the default: tier_wanted decides */
    kiln_context_destroy(c);
    remove_tree(dir);
}

/* Every float function of the op registry, f32, on a dense grid of [-4, 4): tier 1 gives
 * the optimised build's bits wherever the tiers promise them. erf differed in 16 of 65536
 * (an outside check): the op library's clone called kiln_exp_f32 out of line, built for
 * the baseline without FMA (now flattened, tools/gen_oplib.c). */
static void test_functions_same_bits(void) {
    enum { M = 65536 };
    char dir[] = "/tmp/kiln-test-tiers-fn-XXXXXX";
    if (!mkdtemp(dir)) return;
    kiln_context *c = tiers_context(0, false, dir);
    CHECK(c != NULL);
    if (!c) return;
    tier_hold(c, true);
    kiln_graph *g = NULL;
    kiln_graph_create(c, "functions", &g);
    int64_t d[1] = {M};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value outs[16];
    const char *names[16];
    int n = 0;
    for (int op = 0; op < IR_NUM_OPS && n < 16; op++) {
        const ir_op_info *o = &ir_ops[op];
        if (o->kind != IRK_UNARY || !(o->flags & IRF_PLAIN) || o->types != IRT_FLOAT ||
            !o->kexpr[0] || strncmp(o->kexpr[0], "kiln_", 5))
            continue; /* kiln's own functions: libm's are one call in both tiers */
        names[n] = o->name;
        outs[n++] = trace_emit(g, o->name, &(ir_node){.op = (ir_op)op}, &x.id, 1);
    }
    CHECK(n >= 8);
    CHECK_OK(c, kiln_graph_finish(g, n, outs));
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, NULL, &e));
    float *h = malloc(sizeof(float) * M * (1 + 2 * (size_t)n));
    for (int i = 0; i < M; i++) h[i] = -4.0f + 8.0f * (float)i / M;
    kiln_array *a = NULL;
    CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 1, d, h, &a));
    if (e && tier_same_bits(e)) {
        kiln_array *r[16] = {0};
        CHECK(tier_of(e) == 1);
        CHECK_OK(c, kiln_executable_run(e, 1, &a, n, r));
        for (int k = 0; k < n; k++) {
            if (r[k]) kiln_array_copy_to_host(r[k], h + M * (1 + k), sizeof(float) * M);
            kiln_array_destroy(r[k]);
        }
        tier_hold(c, false);
        CHECK(tier_wait(e) == 2);
        CHECK_OK(c, kiln_executable_run(e, 1, &a, n, r));
        for (int k = 0; k < n; k++) {
            float *t1 = h + M * (1 + k), *t2 = h + M * (1 + n + k);
            if (r[k]) kiln_array_copy_to_host(r[k], t2, sizeof(float) * M);
            kiln_array_destroy(r[k]);
            int differ = 0, first = -1;
            for (int i = 0; i < M; i++)
                if (memcmp(&t1[i], &t2[i], 4) && differ++ == 0) first = i;
            CHECK_MSG(differ == 0, "%s: %d of %d differ between the tiers (first at %.9g)",
                      names[k], differ, M, first >= 0 ? h[first] : 0.0);
        }
    }
    tier_hold(c, false);
    free(h);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(c);
    remove_tree(dir);
}

/* The default (compile_tiers 0): two tiers where they give the same bits (tier_same_bits:
 * this gcc, no KILN_CC_FLAGS, the op library's clones), else one; and with two, tier 1's
 * sum and elementwise values have the optimised build's bits. */
static void test_default_tiers(void) {
    for (int flags = 0; flags < 2; flags++) {
        char dir[] = "/tmp/kiln-test-tiers-default-XXXXXX";
        if (!mkdtemp(dir)) return;
        kiln_context *c =
            context_with((kiln_context_options){.cc_flags = flags ? "-O2" : NULL}, dir);
        CHECK(c != NULL);
        if (!c) return;
        tier_hold(c, true);
        kiln_graph *g = program(c, "default");
        kiln_executable *e = NULL;
        CHECK_OK(c, kiln_compile(g, NULL, &e));
        kiln_graph_destroy(g);
        if (e) {
            bool same = tier_same_bits(e);
            CHECK(!flags || !same); /* KILN_CC_FLAGS: the build may compute otherwise */
            CHECK(tier_of(e) == (same ? 1 : 2));
            kiln_array *x = input(c);
            static result r;
            CHECK(run_once(e, x, &r));
            CHECK(!same || !one_tier_ok || memcmp(&r, &one_tier, sizeof r) == 0);
            kiln_array_destroy(x);
        }
        tier_hold(c, false);
        kiln_executable_destroy(e);
        kiln_context_destroy(c);
        remove_tree(dir);
    }
}

int main(void) {
    if (!mkdtemp(cache_dir)) return 1;
    RUN(test_environment);
    RUN_CC(test_one_tier_as_before);
    RUN_CC(test_swap_gives_tier2_bits);
    RUN_CC(test_cached_tier2_skips_tier1);
    RUN_CC(test_swap_under_concurrent_calls);
    RUN_CC(test_swap_under_async_calls);
    RUN_CC(test_destroy_during_background_compile);
    RUN_CC(test_cc_flags_keep_tier1);
    RUN_CC(test_default_tiers);
    RUN_CC(test_functions_same_bits);
    RUN_CC(test_broken_compiler_keeps_tier1);
    remove_tree(cache_dir);
    return test_summary("tiers");
}
