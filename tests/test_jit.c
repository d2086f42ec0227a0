/* test_jit.c — kiln_jit: one trace per signature, cache hits without tracing, static
 * arguments, declared signatures and their errors, clearing, builder errors surfacing
 * through a call, and many threads calling one jit at once. */
#include "compare.h"

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
    kiln_array *args[2], *outs[2];
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, xv, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, yv, &args[1]);
    for (int call = 0; call < 3; call++) {
        CHECK_OK(ctx, kiln_jit_call(j, 2, args, NULL, 0, 2, outs));
        float h[12], s[3];
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
    float h[12];
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
    kiln_array *a[3], *outs[2];
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

int main(void) {
    char dir[] = "/tmp/kiln-test-jit-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir};
    char err[256];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
    RUN(test_cache);
    RUN(test_declared_signature);
    RUN(test_builder_error);
    RUN(test_threads);
    kiln_context_destroy(ctx);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return test_summary("test_jit");
}
