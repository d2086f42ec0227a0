/* test_jit.c — kiln_jit: one trace per signature, cache hits without tracing, static
 * arguments, declared signatures and their errors, clearing, builder errors surfacing
 * through a call, many threads calling one jit at once, and lowering (kiln_jit_lower,
 * kiln_jit_lower_shapes): the executable a call then runs, its analysis what the call
 * measures, errors as a call's, donation, devices, and a fault sweep; arrays of another
 * context refused; kiln_jit_trace: the traced graph, interpreted, gives the call's results. */
#include "compare.h"
#include "fault.h"

#include <pthread.h>
#include <unistd.h>

static kiln_context *ctx;

/* f(x, y) = tanh(x * y + layers) summed over the last axis; static args: int layers */
static int trace_f(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                   kiln_value *outs) {
    (*(int *)user)++;
    if (n_args != 2) return -1;
    int layers = st ? *(const int *)st : 1;
    kiln_dtype t;
    kiln_value_type(g, args[0], &t, NULL, NULL);
    kiln_value h = args[0];
    for (int i = 0; i < layers; i++)
        h = kiln_tanh(g, kiln_add(g, kiln_mul(g, h, args[1]), kiln_scalar(g, t, i)));
    int ax = -1;
    outs[0] = kiln_reduce_sum(g, h, 1, &ax, false);
    outs[1] = h;
    return 2;
}

static double host_f(double x, double y, int layers) {
    double h = x;
    for (int i = 0; i < layers; i++) h = tanh(h * y + i);
    return h;
}

static void test_cache(void) {
    int traces = 0;
    kiln_jit_options o = {.name = "f", .fn = trace_f, .user = &traces};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t d[2] = {3, 4}, d2[2] = {5, 4};
    float xv[12], yv[12];
    for (int i = 0; i < 12; i++) xv[i] = 0.1f * (float)i, yv[i] = 1.0f - 0.05f * (float)i;
    kiln_array *args[2], *outs[2] = {0}; /* a failed call leaves them as they are */
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, xv, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, yv, &args[1]);
    for (int call = 0; call < 3; call++) {
        CHECK_OK(ctx, kiln_jit_call(j, 2, args, NULL, 0, 2, outs));
        float h[12] = {0}, s[3] = {0};
        kiln_array_copy_to_host(outs[1], h, sizeof h);
        kiln_array_copy_to_host(outs[0], s, sizeof s);
        for (int i = 0; i < 12; i++) CHECK_NEAR(h[i], host_f(xv[i], yv[i], 1), 1e-6);
        CHECK_NEAR(s[0],
                   host_f(xv[0], yv[0], 1) + host_f(xv[1], yv[1], 1) + host_f(xv[2], yv[2], 1) +
                       host_f(xv[3], yv[3], 1),
                   1e-5);
        kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    }
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(traces == 1 && st.traces == 1 && st.compiles == 1);
    CHECK(st.hits == 2 && st.misses == 1 && st.entries == 1 && st.bytes > 0);
    /* static args and new shapes trace again; the same ones hit */
    int layers = 3;
    CHECK_OK(ctx, kiln_jit_call(j, 2, args, &layers, sizeof layers, 2, outs));
    float h[12] = {0};
    kiln_array_copy_to_host(outs[1], h, sizeof h);
    CHECK_NEAR(h[5], host_f(xv[5], yv[5], 3), 1e-6);
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    CHECK_OK(ctx, kiln_jit_call(j, 2, args, &layers, sizeof layers, 2, outs));
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    kiln_array *b[2];
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d2, NULL, &b[0]);
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d2, NULL, &b[1]);
    CHECK_OK(ctx, kiln_jit_call(j, 2, b, NULL, 0, 2, outs));
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    kiln_jit_get_stats(j, &st);
    CHECK_MSG(traces == 3 && st.entries == 3 && st.hits == 3, "traces %d entries %llu hits %llu",
              traces, (unsigned long long)st.entries, (unsigned long long)st.hits);
    /* wrong number of outputs asked: clear error, nothing made */
    outs[0] = outs[1] = NULL;
    CHECK_STATUS(kiln_jit_call(j, 2, args, NULL, 0, 1, outs), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(outs[0] == NULL);
    /* the message names the call the user made, not the executable run inside it */
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_call");
    CHECK_CONTAINS(kiln_last_error(ctx), "has 2 outputs, 1 asked for");
    CHECK(!strstr(kiln_last_error(ctx), "kiln_executable_run"));
    kiln_jit_clear(j);
    kiln_jit_get_stats(j, &st);
    CHECK(st.entries == 0 && st.bytes == 0);
    CHECK_OK(ctx, kiln_jit_call(j, 2, args, NULL, 0, 2, outs));
    CHECK(traces == 4);
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]), kiln_array_destroy(b[i]);
    kiln_jit_destroy(j);
}

static void test_declared_signature(void) {
    int traces = 0;
    kiln_arg_spec specs[2] = {{KILN_DTYPE_F32, 2, {-1, 4}}, {KILN_DTYPE_F32, 2, {-1, 4}}};
    kiln_jit_options o = {
        .name = "g", .fn = trace_f, .user = &traces, .n_args = 2, .arg_specs = specs};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t ok_d[2] = {7, 4}, bad_d[2] = {7, 5};
    kiln_array *a[3], *outs[2] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, ok_d, NULL, &a[0]);
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, bad_d, NULL, &a[1]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 2, ok_d, NULL, &a[2]);
    kiln_array *good[2] = {a[0], a[0]}, *shape[2] = {a[0], a[1]}, *dtype[2] = {a[2], a[0]};
    CHECK_OK(ctx, kiln_jit_call(j, 2, good, NULL, 0, 2, outs));
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    CHECK_STATUS(kiln_jit_call(j, 2, shape, NULL, 0, 2, outs), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 1 is f32[7,5], declared f32[?,4]");
    CHECK_STATUS(kiln_jit_call(j, 2, dtype, NULL, 0, 2, outs), KILN_STATUS_DTYPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 0 is f64[7,4]");
    CHECK_STATUS(kiln_jit_call(j, 1, good, NULL, 0, 2, outs), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "declared with 2 arguments, called with 1");
    CHECK(traces == 1);
    for (int i = 0; i < 3; i++) kiln_array_destroy(a[i]);
    kiln_jit_destroy(j);
}

static int trace_bad(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                     kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    int64_t d = 5;
    outs[0] = kiln_add(g, args[0], kiln_parameter(g, "extra", KILN_DTYPE_F32, 1, &d));
    return 1;
}

/* n outputs (static bytes: n), each x + i: every slot of KILN_JIT_MAX_OUTPUTS written */
static int trace_many(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                      kiln_value *outs) {
    (void)n_args, (void)user;
    int n = *(const int *)st;
    for (int i = 0; i < n && i < KILN_JIT_MAX_OUTPUTS; i++)
        outs[i] = kiln_add(g, args[0], kiln_scalar(g, KILN_DTYPE_F32, i));
    return n;
}

/* A step's outputs: a training step returns 1 + 3 per parameter tensor, past the 64 of
 * KILN_MAX_OUTPUTS (an outside check's AdamW step of 23 tensors wrote 70 and crashed);
 * KILN_JIT_MAX_OUTPUTS all work, one more is an error naming the count. */
static void test_many_outputs(void) {
    kiln_jit_options o = {.name = "many", .fn = trace_many};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t d = 2;
    float x[2] = {1, 2};
    kiln_array *a = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, x, &a);
    const int counts[2] = {70, KILN_JIT_MAX_OUTPUTS};
    for (int k = 0; k < 2; k++) {
        int n = counts[k];
        kiln_array **outs = calloc((size_t)n, sizeof *outs);
        CHECK_OK(ctx, kiln_jit_call(j, 1, &a, &n, sizeof n, n, outs));
        float got[2] = {0, 0};
        if (outs[n - 1]) kiln_array_copy_to_host(outs[n - 1], got, sizeof got);
        CHECK_MSG(got[0] == 1.0f + (float)(n - 1) && got[1] == 2.0f + (float)(n - 1),
                  "output %d of %d: %g %g", n - 1, n, got[0], got[1]);
        for (int i = 0; i < n; i++) kiln_array_destroy(outs[i]);
        free(outs);
    }
    int over = KILN_JIT_MAX_OUTPUTS + 1;
    kiln_array *out = NULL;
    CHECK_STATUS(kiln_jit_call(j, 1, &a, &over, sizeof over, 1, &out),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "returned 4097 outputs (1..4096)");
    kiln_array_destroy(a);
    kiln_jit_destroy(j);
}

static void test_builder_error(void) {
    kiln_jit_options o = {.name = "bad", .fn = trace_bad};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t d = 3;
    kiln_array *a, *out = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, NULL, &a);
    CHECK_STATUS(kiln_jit_call(j, 1, &a, NULL, 0, 1, &out), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "operands: f32[3], f32[5]");
    CHECK_CONTAINS(kiln_last_error(ctx), "test_jit.c:");
    CHECK(out == NULL);
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(st.entries == 0);
    kiln_array_destroy(a);
    kiln_jit_destroy(j);
    CHECK_STATUS(kiln_jit_create(ctx, &(kiln_jit_options){0}, &j), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "opts->fn are required");
    kiln_arg_spec spec = {KILN_DTYPE_F32, 1, {3}};
    kiln_jit_options bad_n = {.fn = trace_bad, .n_args = -1, .arg_specs = &spec};
    CHECK_STATUS(kiln_jit_create(ctx, &bad_n, &j), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "n_args -1 is out of range");
    /* static_size without static_args */
    kiln_jit_options ok = {.name = "st", .fn = trace_bad};
    CHECK_OK(ctx, kiln_jit_create(ctx, &ok, &j));
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, NULL, &a);
    CHECK_STATUS(kiln_jit_call(j, 1, &a, NULL, 4, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "static_args is NULL with static_size 4");
    kiln_array_destroy(a);
    kiln_jit_destroy(j);
}

/* x + 1 for a 1-D x; at length 3 the trace function also calls its own jit: on length 2
 * (cached: runs), on length 5 (not built: an error, not a deadlock), and on length 3, the
 * signature being traced (an error); and clears the cache (no deadlock). */
typedef struct reenter_state {
    kiln_jit *j;
    kiln_status cached, fresh, self;
    char fresh_msg[512];
} reenter_state;

static kiln_array *f32_vector(int64_t n) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    kiln_array *a = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, x, &a);
    return a;
}

static int trace_reenter(kiln_graph *g, const kiln_value *args, int n_args, const void *st,
                         void *user, kiln_value *outs) {
    (void)n_args, (void)st;
    reenter_state *r = user;
    int64_t n;
    kiln_value_type(g, args[0], NULL, NULL, &n);
    if (n == 3) {
        kiln_array *a2 = f32_vector(2), *a5 = f32_vector(5), *a3 = f32_vector(3), *o = NULL;
        r->cached = kiln_jit_call(r->j, 1, &a2, NULL, 0, 1, &o);
        kiln_array_destroy(o), o = NULL;
        r->fresh = kiln_jit_call(r->j, 1, &a5, NULL, 0, 1, &o);
        snprintf(r->fresh_msg, sizeof r->fresh_msg, "%s", kiln_last_error(ctx));
        kiln_array_destroy(o), o = NULL;
        r->self = kiln_jit_call(r->j, 1, &a3, NULL, 0, 1, &o);
        kiln_array_destroy(o);
        kiln_jit_clear(r->j);
        kiln_array_destroy(a2), kiln_array_destroy(a5), kiln_array_destroy(a3);
    }
    outs[0] = kiln_add(g, args[0], kiln_scalar(g, KILN_DTYPE_F32, 1));
    return 1;
}

/* A trace function that calls its own jit (an outside check found this hung for ever:
 * the jit's lock was held through the trace). */
static void test_reentrant_trace(void) {
    reenter_state r = {0};
    kiln_jit_options o = {.name = "reenter", .fn = trace_reenter, .user = &r};
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &r.j));
    kiln_array *a2 = f32_vector(2), *a3 = f32_vector(3), *out = NULL;
    CHECK_OK(ctx, kiln_jit_call(r.j, 1, &a2, NULL, 0, 1, &out));
    kiln_array_destroy(out), out = NULL;
    CHECK_OK(ctx, kiln_jit_call(r.j, 1, &a3, NULL, 0, 1, &out));
    float got[3] = {0, 0, 0};
    if (out) kiln_array_copy_to_host(out, got, sizeof got);
    CHECK(got[0] == 2 && got[2] == 4);
    CHECK_STATUS(r.cached, KILN_STATUS_OK);
    CHECK_STATUS(r.fresh, KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(r.fresh_msg, "kiln_jit_call 'reenter': called from inside its own trace "
                                "function on a signature it has not compiled");
    CHECK_STATUS(r.self, KILN_STATUS_INVALID_ARGUMENT);
    kiln_array_destroy(out);
    kiln_array_destroy(a2), kiln_array_destroy(a3);
    kiln_jit_destroy(r.j);
}

/* While one thread traces and compiles a new signature, another's calls of a cached one
 * run (they waited for the whole compile: an outside check). The slow trace waits, up to
 * 30 s, for the other thread's cached call to have returned. */
static volatile int cached_done;
static int saw_cached_done;

static int trace_slow(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                      kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    int64_t n;
    kiln_value_type(g, args[0], NULL, NULL, &n);
    for (int i = 0; n == 5 && i < 30000 && !__atomic_load_n(&cached_done, __ATOMIC_ACQUIRE); i++)
        usleep(1000);
    if (n == 5) saw_cached_done = __atomic_load_n(&cached_done, __ATOMIC_ACQUIRE);
    outs[0] = kiln_mul(g, args[0], kiln_scalar(g, KILN_DTYPE_F32, 2));
    return 1;
}

static void *cached_caller(void *p) {
    kiln_jit *j = p;
    kiln_array *a2 = f32_vector(2), *out = NULL;
    usleep(20000); /* let the main thread start its trace */
    kiln_status s = kiln_jit_call(j, 1, &a2, NULL, 0, 1, &out);
    __atomic_store_n(&cached_done, s == KILN_STATUS_OK ? 1 : 2, __ATOMIC_RELEASE);
    kiln_array_destroy(out), kiln_array_destroy(a2);
    return NULL;
}

static void test_cached_calls_during_a_compile(void) {
    kiln_jit_options o = {.name = "slow", .fn = trace_slow};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *a2 = f32_vector(2), *a5 = f32_vector(5), *out = NULL;
    CHECK_OK(ctx, kiln_jit_call(j, 1, &a2, NULL, 0, 1, &out)); /* cached now */
    kiln_array_destroy(out), out = NULL;
    pthread_t t;
    pthread_create(&t, NULL, cached_caller, j);
    CHECK_OK(ctx, kiln_jit_call(j, 1, &a5, NULL, 0, 1, &out)); /* traces, waiting */
    pthread_join(t, NULL);
    CHECK_MSG(saw_cached_done == 1, "the cached call %s while the other signature traced",
              saw_cached_done ? "failed" : "did not return");
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(st.entries == 2 && st.traces == 2 && st.hits == 1);
    kiln_array_destroy(out), kiln_array_destroy(a2), kiln_array_destroy(a5);
    kiln_jit_destroy(j);
}

static int trace_add2(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                      kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    outs[0] = kiln_add(g, args[0], args[1]);
    return 1;
}

/* An error of the run a call makes names the call (an outside check: a donated array
 * passed twice named kiln_executable_run, which the user never called). */
/* While signature 5 compiles, another thread hits 2 then 1: the new entry is published as
 * the most recently used, so max_entries = 2 evicts 2, not the executable just built (a
 * review found it evicted, and recompiled on every call under such load). */
static void *hit_two_then_one(void *p) {
    kiln_jit *j = p;
    kiln_array *a[2] = {f32_vector(2), f32_vector(1)}, *out = NULL;
    usleep(20000); /* let the main thread start its trace */
    kiln_status s = KILN_STATUS_OK;
    for (int k = 0; k < 2 && !s; k++) {
        s = kiln_jit_call(j, 1, &a[k], NULL, 0, 1, &out);
        kiln_array_destroy(out), out = NULL;
    }
    __atomic_store_n(&cached_done, s == KILN_STATUS_OK ? 1 : 2, __ATOMIC_RELEASE);
    kiln_array_destroy(a[0]), kiln_array_destroy(a[1]);
    return NULL;
}

static void test_published_entry_is_recent(void) {
    kiln_jit_options o = {.name = "lru2", .fn = trace_slow, .max_entries = 2};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *a1 = f32_vector(1), *a2 = f32_vector(2), *a5 = f32_vector(5), *out = NULL;
    CHECK_OK(ctx, kiln_jit_call(j, 1, &a1, NULL, 0, 1, &out));
    kiln_array_destroy(out), out = NULL;
    CHECK_OK(ctx, kiln_jit_call(j, 1, &a2, NULL, 0, 1, &out));
    kiln_array_destroy(out), out = NULL;
    __atomic_store_n(&cached_done, 0, __ATOMIC_RELEASE);
    pthread_t t;
    pthread_create(&t, NULL, hit_two_then_one, j);
    CHECK_OK(ctx, kiln_jit_call(j, 1, &a5, NULL, 0, 1, &out));
    kiln_array_destroy(out), out = NULL;
    pthread_join(t, NULL);
    CHECK_OK(ctx, kiln_jit_call(j, 1, &a5, NULL, 0, 1, &out)); /* a hit */
    kiln_array_destroy(out), out = NULL;
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK_MSG(st.traces == 3 && st.evictions == 1 && st.entries == 2,
              "traces %llu evictions %llu entries %llu", (unsigned long long)st.traces,
              (unsigned long long)st.evictions, (unsigned long long)st.entries);
    kiln_array_destroy(a1), kiln_array_destroy(a2), kiln_array_destroy(a5);
    kiln_jit_destroy(j);
}

static void test_run_errors_name_the_call(void) {
    int don[1] = {0};
    kiln_jit_options o = {
        .name = "addj", .fn = trace_add2, .compile = {.n_donate = 1, .donate_argnums = don}};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *b = f32_vector(4), *out = NULL;
    CHECK_STATUS(kiln_jit_call(j, 2, (kiln_array *[]){b, b}, NULL, 0, 1, &out),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_call 'addj': argument 0 of 'addj' is donated");
    CHECK(out == NULL);
    kiln_array_destroy(b);
    kiln_jit_destroy(j);
}

static int trace_short(kiln_graph *g, const kiln_value *args, int n_args, const void *st,
                       void *user, kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    outs[0] = kiln_neg(g, args[0]);
    return 2; /* one more than it wrote */
}

/* A trace function that returns more outputs than it wrote: kiln's room is zeroed, so the
 * unwritten one is the invalid value, said as such (an outside check found it read
 * uninitialised memory, and the message varied with the stack). */
static void test_unwritten_output(void) {
    kiln_jit_options o = {.name = "short", .fn = trace_short};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *a = f32_vector(2), *outs[2] = {0};
    CHECK_STATUS(kiln_jit_call(j, 1, &a, NULL, 0, 2, outs), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "invalid value");
    kiln_array_destroy(a);
    kiln_jit_destroy(j);
}

/* max_entries: the least recently used executable leaves past it (an outside check's jit
 * on ever new shapes held one file descriptor per shape until compiles failed). */
static void test_max_entries(void) {
    kiln_jit_options o = {.name = "lru", .fn = trace_slow, .max_entries = 2};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *a[4] = {f32_vector(1), f32_vector(2), f32_vector(3), f32_vector(4)}, *out = NULL;
    const int order[6] = {0, 1, 0, 2, 0, 1}; /* 1 is the least recent when 2 arrives */
    for (int k = 0; k < 6; k++) {
        CHECK_OK(ctx, kiln_jit_call(j, 1, &a[order[k]], NULL, 0, 1, &out));
        kiln_array_destroy(out), out = NULL;
    }
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    /* traces: 0, 1, 2 (evicts 1), 1 again (evicts 2); hits: 0 twice */
    CHECK_MSG(st.traces == 4 && st.hits == 2 && st.evictions == 2 && st.entries == 2,
              "traces %llu hits %llu evictions %llu entries %llu", (unsigned long long)st.traces,
              (unsigned long long)st.hits, (unsigned long long)st.evictions,
              (unsigned long long)st.entries);
    kiln_jit_destroy(j);
    kiln_jit_options bad = {.fn = trace_slow, .max_entries = -2};
    CHECK_STATUS(kiln_jit_create(ctx, &bad, &j), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx),
                   "max_entries -2 is not -1 (no limit), 0 (the default, 256)");
    for (int k = 0; k < 4; k++) kiln_array_destroy(a[k]);
}

typedef struct thread_arg {
    kiln_jit *j;
    int ok;
} thread_arg;

static void *caller(void *p) {
    thread_arg *t = p;
    int64_t d[2] = {2, 4};
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0.5f, 0.5f, 0.5f, 0.5f, 1, 1, 1, 1};
    kiln_array *a[2], *outs[2];
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, x, &a[0]);
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, y, &a[1]);
    t->ok = 1;
    for (int i = 0; i < 50; i++) {
        if (kiln_jit_call(t->j, 2, a, NULL, 0, 2, outs) != KILN_STATUS_OK) {
            t->ok = 0;
            break;
        }
        float h[8];
        kiln_array_copy_to_host(outs[1], h, sizeof h);
        t->ok &= fabs(h[7] - host_f(8, 1, 1)) < 1e-6;
        kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
        if (i == 25) kiln_jit_clear(t->j); /* entries in use must survive */
    }
    kiln_array_destroy(a[0]), kiln_array_destroy(a[1]);
    return NULL;
}

static void test_threads(void) {
    int traces = 0;
    kiln_jit_options o = {.name = "mt", .fn = trace_f, .user = &traces};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    pthread_t th[4];
    thread_arg ta[4];
    for (int i = 0; i < 4; i++)
        ta[i] = (thread_arg){j, 0}, pthread_create(&th[i], NULL, caller, &ta[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(ta[i].ok);
    }
    kiln_jit_destroy(j);
}

static void f32_array(kiln_context *c, int device, int64_t rows, int64_t cols, float v,
                      kiln_array **out) {
    int64_t d[2] = {rows, cols};
    float *x = malloc((size_t)(rows * cols) * sizeof *x);
    for (int64_t i = 0; i < rows * cols; i++) x[i] = v + 0.01f * (float)i;
    CHECK_OK(c, kiln_array_create_on(c, device, KILN_DTYPE_F32, 2, d, x, out));
    free(x);
}

/* Lowering compiles the executable a call then runs: no second trace or compile, the
 * same pointer from every lowering of the signature (from arrays or from specs), and the
 * analysis read before the call is what the allocator measures during it. */
static void test_lower(void) {
    int traces = 0;
    kiln_jit_options o = {
        .name = "low", .fn = trace_f, .user = &traces, .compile = {.keep_ir = true}};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *args[2], *outs[2], *again[2];
    f32_array(ctx, 0, 64, 32, 0.5f, &args[0]);
    f32_array(ctx, 0, 64, 32, -0.25f, &args[1]);
    int layers = 2;
    kiln_executable *e = NULL, *e2 = NULL, *e3 = NULL;
    CHECK_OK(ctx, kiln_jit_lower(j, 2, args, &layers, sizeof layers, &e));
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(traces == 1 && st.compiles == 1 && st.misses == 1 && st.hits == 0 && st.entries == 1);
    if (!e) { /* the compile failed (CHECK_OK said why): nothing below has an executable */
        kiln_jit_destroy(j);
        for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
        return;
    }
    kiln_memory_analysis a;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a));
    CHECK(a.argument_bytes == 2 * 64 * 32 * 4 && a.peak_bytes >= a.argument_bytes + a.output_bytes);
    char *svg = kiln_executable_plan_svg(e), *rep = kiln_executable_memory_report(e);
    CHECK_CONTAINS(svg, "memory plan of 'low'");
    CHECK_CONTAINS(rep, "planned peak");
    kiln_string_free(ctx, svg), kiln_string_free(ctx, rep);
    /* the same signature from specs: the same executable, a hit */
    kiln_arg_spec sp[2] = {{KILN_DTYPE_F32, 2, {64, 32}}, {KILN_DTYPE_F32, 2, {64, 32}}};
    CHECK_OK(ctx, kiln_jit_lower_shapes(j, 0, 2, sp, &layers, sizeof layers, &e2));
    CHECK(e2 == e);
    /* the call runs it: no trace, no compile, and the measured rise is the planned one */
    kiln_memory_stats before, after;
    kiln_device_get_memory_stats(ctx, 0, &before);
    kiln_device_reset_peak(ctx, 0);
    CHECK_OK(ctx, kiln_jit_call(j, 2, args, &layers, sizeof layers, 2, outs));
    kiln_device_get_memory_stats(ctx, 0, &after);
    CHECK_MSG(after.peak_bytes_in_use - before.bytes_in_use == a.peak_bytes - a.argument_bytes,
              "measured rise %llu, lowered analysis %llu",
              (unsigned long long)(after.peak_bytes_in_use - before.bytes_in_use),
              (unsigned long long)(a.peak_bytes - a.argument_bytes));
    kiln_jit_get_stats(j, &st);
    CHECK(traces == 1 && st.compiles == 1 && st.hits == 2 && st.misses == 1);
    CHECK_OK(ctx, kiln_jit_lower(j, 2, args, &layers, sizeof layers, &e3));
    CHECK(e3 == e);
    /* running the lowered executable directly computes what the call did */
    CHECK_OK(ctx, kiln_executable_run(e, 2, args, 2, again));
    float h1[64 * 32], h2[64 * 32];
    kiln_array_copy_to_host(outs[1], h1, sizeof h1);
    kiln_array_copy_to_host(again[1], h2, sizeof h2);
    CHECK(!memcmp(h1, h2, sizeof h1));
    CHECK_NEAR(h1[100], host_f(0.5 + 0.01 * 100, -0.25 + 0.01 * 100, 2), 1e-5);
    for (int i = 0; i < 2; i++) kiln_array_destroy(outs[i]), kiln_array_destroy(again[i]);
    /* a new signature from shapes alone compiles once; the call with arrays then hits */
    kiln_arg_spec sp3[2] = {{KILN_DTYPE_F32, 2, {8, 32}}, {KILN_DTYPE_F32, 2, {8, 32}}};
    kiln_executable *e4 = NULL;
    CHECK_OK(ctx, kiln_jit_lower_shapes(j, 0, 2, sp3, NULL, 0, &e4));
    CHECK(e4 && e4 != e);
    kiln_array *small[2];
    f32_array(ctx, 0, 8, 32, 0.1f, &small[0]);
    f32_array(ctx, 0, 8, 32, 0.2f, &small[1]);
    CHECK_OK(ctx, kiln_jit_call(j, 2, small, NULL, 0, 2, outs));
    kiln_jit_get_stats(j, &st);
    CHECK_MSG(traces == 2 && st.compiles == 2 && st.entries == 2, "traces %d compiles %llu", traces,
              (unsigned long long)st.compiles);
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    /* the caller's references outlive the jit's cache and the jit itself */
    kiln_jit_clear(j);
    kiln_jit_destroy(j);
    kiln_memory_analysis a2 = {0};
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &a2));
    CHECK(a2.peak_bytes == a.peak_bytes);
    CHECK_OK(ctx, kiln_executable_run(e4, 2, small, 2, outs));
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    kiln_executable_destroy(e), kiln_executable_destroy(e2), kiln_executable_destroy(e3);
    kiln_executable_destroy(e4);
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]), kiln_array_destroy(small[i]);
}

/* The parameters a jit traces are named after the arrays of the call (else argN), so the
 * lowered plan's listing and picture show the user's names. */
static void test_lower_names(void) {
    int traces = 0;
    kiln_jit_options o = {
        .name = "named", .fn = trace_f, .user = &traces, .compile = {.keep_ir = true}};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t d[2] = {4, 8};
    kiln_array *a[2];
    CHECK_OK(ctx, kiln_array_create_named(ctx, "tokens", 0, KILN_DTYPE_F32, 2, d, NULL, &a[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, NULL, &a[1]));
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_jit_lower(j, 2, a, NULL, 0, &e));
    kiln_memory_analysis an = {0};
    kiln_executable_get_memory_analysis(e, &an);
    const char *names[2] = {NULL, NULL};
    for (int i = 0; i < an.num_buffers; i++) {
        kiln_buffer_info b;
        kiln_executable_get_buffer_info(e, i, &b);
        if (b.kind == KILN_BUFFER_KIND_ARGUMENT && b.place_index < 2) names[b.place_index] = b.name;
    }
    CHECK_MSG(names[0] && !strcmp(names[0], "tokens") && names[1] && !strcmp(names[1], "arg1"),
              "parameters named %s, %s", names[0] ? names[0] : "(none)",
              names[1] ? names[1] : "(none)");
    char *json = kiln_executable_plan_json(e);
    CHECK_CONTAINS(json, "\"name\": \"tokens\"");
    kiln_string_free(ctx, json);
    kiln_executable_destroy(e);
    kiln_array_destroy(a[0]), kiln_array_destroy(a[1]);
    kiln_jit_destroy(j);
}

/* Lowering fails as a call fails, naming kiln_jit_lower(_shapes), and makes nothing. */
static void test_lower_errors(void) {
    int traces = 0;
    kiln_arg_spec specs[2] = {{KILN_DTYPE_F32, 2, {-1, 4}}, {KILN_DTYPE_F32, 2, {-1, 4}}};
    kiln_jit_options o = {
        .name = "decl", .fn = trace_f, .user = &traces, .n_args = 2, .arg_specs = specs};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *ok, *wide, *f64;
    f32_array(ctx, 0, 3, 4, 0, &ok);
    f32_array(ctx, 0, 3, 5, 0, &wide);
    int64_t d[2] = {3, 4};
    kiln_array_create(ctx, KILN_DTYPE_F64, 2, d, NULL, &f64);
    kiln_executable *e = (kiln_executable *)1;
    kiln_array *shape[2] = {ok, wide}, *dtype[2] = {f64, ok}, *null_arg[2] = {ok, NULL};
    CHECK_STATUS(kiln_jit_lower(j, 2, shape, NULL, 0, &e), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower 'decl': argument 1 is f32[3,5], declared "
                                         "f32[?,4]");
    CHECK(e == NULL);
    CHECK_STATUS(kiln_jit_lower(j, 2, dtype, NULL, 0, &e), KILN_STATUS_DTYPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 0 is f64[3,4]");
    CHECK_STATUS(kiln_jit_lower(j, 1, shape, NULL, 0, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "declared with 2 arguments, called with 1");
    CHECK_STATUS(kiln_jit_lower(j, 2, null_arg, NULL, 0, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower 'decl': argument 1 is NULL");
    CHECK_STATUS(kiln_jit_lower(j, 2, shape, NULL, 4, &e), KILN_STATUS_SHAPE);
    kiln_array *two[2] = {ok, ok};
    CHECK_STATUS(kiln_jit_lower(j, 2, two, NULL, 4, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "static_args is NULL with static_size 4");
    CHECK_STATUS(kiln_jit_lower(j, 2, two, NULL, 0, NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower 'decl': out is NULL");
    /* shapes: against the declaration, concrete, real dtypes, an existing device */
    kiln_arg_spec s_wide[2] = {{KILN_DTYPE_F32, 2, {3, 4}}, {KILN_DTYPE_F32, 2, {3, 5}}};
    CHECK_STATUS(kiln_jit_lower_shapes(j, 0, 2, s_wide, NULL, 0, &e), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower_shapes 'decl': argument 1 is f32[3,5]");
    kiln_arg_spec s_any[2] = {{KILN_DTYPE_F32, 2, {-1, 4}}, {KILN_DTYPE_F32, 2, {3, 4}}};
    CHECK_STATUS(kiln_jit_lower_shapes(j, 0, 2, s_any, NULL, 0, &e), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 0 has dimension 0 of -1; lowering needs");
    kiln_arg_spec s_bad[2] = {{(kiln_dtype)77, 2, {3, 4}}, {KILN_DTYPE_F32, 2, {3, 4}}};
    CHECK_STATUS(kiln_jit_lower_shapes(j, 0, 2, s_bad, NULL, 0, &e), KILN_STATUS_DTYPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 0 has dtype 77");
    s_bad[0] = (kiln_arg_spec){KILN_DTYPE_F32, 9, {3, 4}};
    CHECK_STATUS(kiln_jit_lower_shapes(j, 0, 2, s_bad, NULL, 0, &e), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 0 has rank 9");
    /* an extent over kiln's 2^62 whose bytes still fit a size_t (1-byte bool) */
    s_bad[0] = (kiln_arg_spec){KILN_DTYPE_BOOL, 2, {(int64_t)1 << 60, 5}};
    CHECK_STATUS(kiln_jit_lower_shapes(j, 0, 2, s_bad, NULL, 0, &e), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower_shapes 'decl': argument 0 (bool): the "
                                         "shape's extent overflows 2^62");
    kiln_arg_spec s_ok[2] = {{KILN_DTYPE_F32, 2, {3, 4}}, {KILN_DTYPE_F32, 2, {3, 4}}};
    CHECK_STATUS(kiln_jit_lower_shapes(j, 7, 2, s_ok, NULL, 0, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower_shapes 'decl': device 7 does not exist");
    CHECK_STATUS(kiln_jit_lower_shapes(j, 0, 2, NULL, NULL, 0, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "2 argument specs at NULL");
    CHECK(e == NULL && traces == 0);
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(st.entries == 0 && st.misses == 0);
    CHECK_STATUS(kiln_jit_lower(NULL, 2, two, NULL, 0, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower");
    /* a trace function's error surfaces from the lowering */
    kiln_jit_options bo = {.name = "bad", .fn = trace_bad};
    kiln_jit *jb;
    CHECK_OK(ctx, kiln_jit_create(ctx, &bo, &jb));
    kiln_arg_spec one = {KILN_DTYPE_F32, 1, {3}};
    CHECK_STATUS(kiln_jit_lower_shapes(jb, 0, 1, &one, NULL, 0, &e), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "operands: f32[3], f32[5]");
    CHECK(e == NULL);
    kiln_jit_destroy(jb);
    kiln_array_destroy(ok), kiln_array_destroy(wide), kiln_array_destroy(f64);
    kiln_jit_destroy(j);
}

/* kiln_jit_trace: the graph a call compiles, for the reference interpreter. Interpreted, it
 * gives the call's results (to the compiled code's rounding); it is traced anew each time
 * (counted), compiles nothing, leaves the cache alone, names its parameters as a call
 * would, and fails as a call fails. */
static void test_trace_graph(void) {
    int traces = 0;
    kiln_jit_options o = {.name = "traced", .fn = trace_f, .user = &traces};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t d[2] = {3, 4};
    float xv[12], yv[12];
    for (int i = 0; i < 12; i++) xv[i] = 0.1f * (float)i - 0.4f, yv[i] = 1.0f - 0.07f * (float)i;
    kiln_array *args[2], *outs[2] = {NULL, NULL}, *ref[2] = {NULL, NULL};
    CHECK_OK(ctx, kiln_array_create_named(ctx, "x", 0, KILN_DTYPE_F32, 2, d, xv, &args[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, yv, &args[1]));
    int layers = 2;
    CHECK_OK(ctx, kiln_jit_call(j, 2, args, &layers, sizeof layers, 2, outs));
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_jit_trace(j, 2, args, &layers, sizeof layers, &g));
    CHECK(g != NULL && traces == 2);
    if (g) {
        CHECK(kiln_graph_num_parameters(g) == 2 && kiln_graph_num_outputs(g) == 2);
        char *text = kiln_graph_to_string(g);
        CHECK_CONTAINS(text, "\"x\"");
        CHECK_CONTAINS(text, "\"arg1\"");
        kiln_string_free(ctx, text);
        CHECK_OK(ctx, kiln_interpret(g, 2, args, 2, ref));
        for (int k = 0; k < 2 && ref[1] && outs[1]; k++) {
            float got[12] = {0}, want[12] = {0};
            size_t nb = kiln_array_nbytes(outs[k]);
            CHECK(nb == kiln_array_nbytes(ref[k]));
            kiln_array_copy_to_host(outs[k], got, nb);
            kiln_array_copy_to_host(ref[k], want, nb);
            for (size_t i = 0; i < nb / sizeof(float); i++) CHECK_NEAR(got[i], want[i], 1e-6);
            CHECK_NEAR(want[k ? 5 : 0],
                       k ? host_f(xv[5], yv[5], 2)
                         : host_f(xv[0], yv[0], 2) + host_f(xv[1], yv[1], 2) +
                               host_f(xv[2], yv[2], 2) + host_f(xv[3], yv[3], 2),
                       1e-5);
        }
        for (int k = 0; k < 2; k++) kiln_array_destroy(ref[k]);
        kiln_graph_destroy(g);
    }
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK_MSG(st.traces == 2 && st.compiles == 1 && st.entries == 1 && st.misses == 1 &&
                  st.hits == 0,
              "traces %llu compiles %llu entries %llu", (unsigned long long)st.traces,
              (unsigned long long)st.compiles, (unsigned long long)st.entries);
    /* errors: as a call's, named kiln_jit_trace; *out stays NULL */
    g = (kiln_graph *)1;
    CHECK_STATUS(kiln_jit_trace(j, 2, args, NULL, 4, &g), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_trace 'traced': static_args is NULL");
    CHECK(g == NULL);
    kiln_array *null_arg[2] = {args[0], NULL};
    CHECK_STATUS(kiln_jit_trace(j, 2, null_arg, NULL, 0, &g), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 1 is NULL");
    CHECK_STATUS(kiln_jit_trace(j, 2, args, NULL, 0, NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_trace 'traced': out is NULL");
    CHECK_STATUS(kiln_jit_trace(NULL, 2, args, NULL, 0, &g), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_trace");
    /* the trace function's own failure (one argument: trace_f returns -1) */
    CHECK_STATUS(kiln_jit_trace(j, 1, args, NULL, 0, &g), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_trace 'traced': the trace function reported");
    CHECK(g == NULL);
    for (int k = 0; k < 2; k++) kiln_array_destroy(outs[k]), kiln_array_destroy(args[k]);
    kiln_jit_destroy(j);
    /* a declared signature is checked; a builder error surfaces with the user's line */
    kiln_arg_spec specs[2] = {{KILN_DTYPE_F32, 2, {-1, 4}}, {KILN_DTYPE_F32, 2, {-1, 4}}};
    kiln_jit_options od = {
        .name = "decl", .fn = trace_f, .user = &traces, .n_args = 2, .arg_specs = specs};
    CHECK_OK(ctx, kiln_jit_create(ctx, &od, &j));
    kiln_array *wide[2];
    f32_array(ctx, 0, 3, 5, 0, &wide[0]);
    f32_array(ctx, 0, 3, 5, 0, &wide[1]);
    CHECK_STATUS(kiln_jit_trace(j, 2, wide, NULL, 0, &g), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_trace 'decl': argument 0 is f32[3,5], declared");
    kiln_jit_destroy(j);
    kiln_jit_options ob = {.name = "bad", .fn = trace_bad};
    CHECK_OK(ctx, kiln_jit_create(ctx, &ob, &j));
    int64_t three = 3;
    kiln_array *v3;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &three, NULL, &v3));
    CHECK_STATUS(kiln_jit_trace(j, 1, &v3, NULL, 0, &g), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "operands: f32[3], f32[5]");
    CHECK_CONTAINS(kiln_last_error(ctx), "test_jit.c:");
    CHECK(g == NULL);
    kiln_array_destroy(v3);
    kiln_array_destroy(wide[0]), kiln_array_destroy(wide[1]);
    kiln_jit_destroy(j);
}

/* x * 2 + y, x donated: its buffer can hold the output. */
static int trace_axpy(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                      kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    outs[0] = kiln_add(g, kiln_mul(g, args[0], kiln_scalar(g, KILN_DTYPE_F32, 2)), args[1]);
    return 1;
}

/* A context of n CPU devices caching into a fresh folder made from the template dir; NULL
 * (a failed check) if either cannot be made. */
static kiln_context *devices_context(char *dir, int n) {
    if (!mkdtemp(dir)) {
        CHECK(0);
        return NULL;
    }
    kiln_context_options co = {.ignore_environment = true, .cache_dir = dir, .cpu_devices = n};
    kiln_context *c = NULL;
    char err[256];
    if (kiln_context_create(&co, &c, err, sizeof err)) CHECK_MSG(0, "%s", err);
    return c;
}

/* Lowering with donation consumes nothing; the call that follows does, and its analysis
 * says the donated buffer holds the output. With several devices the signature's device
 * is the arguments', and shapes lower for the device named. */
static void test_lower_donation_devices(void) {
    char dir[] = "/tmp/kiln-test-jit-dev-XXXXXX";
    kiln_context *c = devices_context(dir, 2);
    if (!c) return;
    int donate[1] = {0};
    kiln_jit_options o = {
        .name = "axpy", .fn = trace_axpy, .compile = {.n_donate = 1, .donate_argnums = donate}};
    kiln_jit *j;
    CHECK_OK(c, kiln_jit_create(c, &o, &j));
    kiln_array *a[2], *out = NULL, *mixed[2];
    f32_array(c, 1, 16, 16, 1, &a[0]);
    f32_array(c, 1, 16, 16, 2, &a[1]);
    f32_array(c, 0, 16, 16, 2, &mixed[1]);
    mixed[0] = a[0];
    kiln_executable *e = NULL, *e1 = NULL, *e0 = NULL;
    CHECK_STATUS(kiln_jit_lower(j, 2, mixed, NULL, 0, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(c), "kiln_jit_lower 'axpy': the arguments are on different "
                                       "devices (argument 0 on cpu:1, argument 1 on cpu:0)");
    CHECK_OK(c, kiln_jit_lower(j, 2, a, NULL, 0, &e));
    CHECK(!kiln_array_is_consumed(a[0]));
    kiln_memory_analysis an = {0};
    kiln_executable_get_memory_analysis(e, &an);
    CHECK(an.num_donated == 1 && an.num_donations_unused == 0 && an.alias_bytes == 16 * 16 * 4 &&
          an.output_bytes == 0);
    kiln_arg_spec sp[2] = {{KILN_DTYPE_F32, 2, {16, 16}}, {KILN_DTYPE_F32, 2, {16, 16}}};
    CHECK_OK(c, kiln_jit_lower_shapes(j, 1, 2, sp, NULL, 0, &e1));
    CHECK(e1 == e);
    CHECK_OK(c, kiln_jit_lower_shapes(j, 0, 2, sp, NULL, 0, &e0));
    CHECK(e0 && e0 != e);
    /* the cpu:1 executable refuses cpu:0 arrays: it really was built for the arguments' device */
    kiln_array *on0[2] = {mixed[1], mixed[1]};
    CHECK_STATUS(kiln_executable_run(e, 2, on0, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_OK(c, kiln_jit_call(j, 2, a, NULL, 0, 1, &out));
    CHECK(kiln_array_is_consumed(a[0]));
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(st.compiles == 2 && st.entries == 2 && st.hits == 2);
    float h[256] = {0};
    kiln_array_copy_to_host(out, h, sizeof h);
    CHECK_NEAR(h[3], 2 * (1 + 0.03) + 2 + 0.03, 1e-5);
    kiln_array_destroy(out);
    kiln_executable_destroy(e), kiln_executable_destroy(e1), kiln_executable_destroy(e0);
    kiln_jit_destroy(j);
    for (int i = 0; i < 2; i++) kiln_array_destroy(a[i]);
    kiln_array_destroy(mixed[1]);
    kiln_context_destroy(c);
    test_remove_dir(dir);
}

/* Arguments of another context (here on its cpu:2, a device this one does not have) are
 * refused by a call and a lowering, naming the argument, with nothing consumed. */
static void test_other_context(void) {
    char dir[] = "/tmp/kiln-test-jit-other-XXXXXX";
    kiln_context *c = devices_context(dir, 3);
    if (!c) return;
    int donate[1] = {0};
    kiln_jit_options o = {
        .name = "axpy", .fn = trace_axpy, .compile = {.n_donate = 1, .donate_argnums = donate}};
    kiln_jit *j;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    kiln_array *theirs[2], *out = NULL;
    kiln_executable *e = NULL;
    f32_array(c, 2, 4, 4, 1, &theirs[0]);
    f32_array(c, 2, 4, 4, 2, &theirs[1]);
    CHECK_STATUS(kiln_jit_call(j, 2, theirs, NULL, 0, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_call: argument 0 belongs to another context");
    CHECK(out == NULL && !kiln_array_is_consumed(theirs[0]));
    CHECK_STATUS(kiln_jit_lower(j, 2, theirs, NULL, 0, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_jit_lower: argument 0 belongs to another context");
    CHECK(e == NULL);
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK(st.traces == 0 && st.compiles == 0);
    kiln_jit_destroy(j);
    for (int i = 0; i < 2; i++) kiln_array_destroy(theirs[i]);
    kiln_context_destroy(c);
    test_remove_dir(dir);
}

/* Every host allocation of create, lower, lower_shapes (a hit) and reading the plan fails
 * in turn: each a clean KILN_STATUS_HOST_OOM, nothing leaked. */
static kiln_status lower_body(kiln_context *c, int *bad) {
    int traces = 0, layers = 2;
    kiln_jit_options o = {
        .name = "sweep", .fn = trace_f, .user = &traces, .compile = {.keep_ir = true}};
    kiln_jit *j = NULL;
    kiln_array *args[2] = {0};
    kiln_executable *e = NULL, *e2 = NULL;
    int64_t d[2] = {4, 8};
    kiln_arg_spec sp[2] = {{KILN_DTYPE_F32, 2, {4, 8}}, {KILN_DTYPE_F32, 2, {4, 8}}};
    kiln_status s = kiln_jit_create(c, &o, &j);
    for (int i = 0; !s && i < 2; i++)
        s = kiln_array_create(c, KILN_DTYPE_F32, 2, d, NULL, &args[i]);
    if (!s) s = kiln_jit_lower(j, 2, args, &layers, sizeof layers, &e);
    if (!s) s = kiln_jit_lower_shapes(j, 0, 2, sp, &layers, sizeof layers, &e2);
    if (!s) *bad |= e2 != e;
    char *svg = s ? NULL : kiln_executable_plan_svg(e);
    if (!s && !svg) s = KILN_STATUS_HOST_OOM; /* NULL is the string API's host OOM */
    kiln_string_free(c, svg);
    kiln_jit_destroy(j); /* before the executables: they hold their own references */
    kiln_executable_destroy(e), kiln_executable_destroy(e2);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    return s;
}

static void test_lower_fault_sweep(const char *dir) {
    fault_ctx_case fc = {dir, lower_body, "lower_shapes of the lowered signature gave another"};
    fault_sweep sw = {.name = "jit lower", .run = fault_in_context, .user = &fc, .max_runs = 5000};
    long n = fault_sweep_run(&sw);
    CHECK(n > 10);
    printf("fault injection: %ld host allocations of a jit lowering failed in turn\n", n);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-jit-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    /* one compile tier: test_cache counts the compiled code's bytes, which a program on the
     * first tier (no machine code yet) does not have */
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .compile_tiers = 1};
    char err[256];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
    RUN(test_cache);
    RUN(test_declared_signature);
    RUN(test_builder_error);
    RUN(test_many_outputs);
    RUN(test_reentrant_trace);
    RUN(test_cached_calls_during_a_compile);
    RUN(test_max_entries);
    RUN(test_run_errors_name_the_call);
    RUN(test_published_entry_is_recent);
    RUN(test_unwritten_output);
    RUN(test_threads);
    RUN(test_lower);
    RUN(test_lower_names);
    RUN(test_lower_errors);
    RUN(test_lower_donation_devices);
    RUN(test_other_context);
    RUN(test_trace_graph);
    test_lower_fault_sweep(dir);
    kiln_context_destroy(ctx);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return test_summary("test_jit");
}
