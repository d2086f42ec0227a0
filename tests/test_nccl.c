/* test_nccl.c — the NCCL transport on a real GPU (scripts/gpu-check.sh runs it): a
 * one-rank communicator on cuda:0 (NCCL refuses two ranks on one GPU, so one rank is what
 * a one-GPU machine can check: loading libnccl, ncclCommInitAll, ncclAllReduce enqueued on
 * the compute stream between kernels, the polled wait, destroy). Compiled programs whose
 * all-reduce sits between fused kernels, for every reduction and float dtype, and a large
 * one, run twice each and are compared with the reference interpreter, where one
 * replica's all-reduce is the identity. Skipped (77), saying why, without a GPU or without
 * libnccl.so.2 (KILN_NCCL_LIBRARY names it where the loader does not find it). The
 * multi-rank behaviour (sums over ranks, mismatches, stalls) is test_nccl_mock's. */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static kiln_context *ctx;

/* y = all_reduce(tanh(x * 2 + 1), k) * 3 + x on `dev` over c, against the interpreter. */
static void check_program(kiln_comm *c, int dev, kiln_dtype t, kiln_reduce_kind k, int64_t n) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "nccl_step", &g));
    kiln_value x = kiln_parameter(g, "x", t, 1, &n);
    kiln_value u =
        kiln_tanh(g, kiln_add(g, kiln_mul(g, x, kiln_scalar(g, t, 2)), kiln_scalar(g, t, 1)));
    kiln_value y = kiln_add(g, kiln_mul(g, kiln_all_reduce(g, u, k), kiln_scalar(g, t, 3)), x);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    size_t es = kiln_dtype_itemsize(t), bytes = (size_t)n * es;
    char *host = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    for (int64_t i = 0; i < n; i++) {
        double v = sin((double)i * 0.37) * 1.5;
        if (t == KILN_DTYPE_F32)
            ((float *)host)[i] = (float)v;
        else
            ((double *)host)[i] = v;
    }
    kiln_array *hx = NULL, *hy = NULL, *dx = NULL, *dy = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, t, 1, &n, host, &hx));
    CHECK_OK(ctx, kiln_interpret(g, 1, &hx, 1, &hy));
    if (hy) CHECK_OK(ctx, kiln_array_copy_to_host(hy, want, bytes));
    kiln_compile_options o = {.device = dev, .comm = c};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    CHECK_OK(ctx, kiln_array_create_on(ctx, dev, t, 1, &n, host, &dx));
    for (int run = 0; run < 2 && e && dx && hy; run++) {
        kiln_status s = kiln_executable_run(e, 1, &dx, 1, &dy);
        CHECK_MSG(s == KILN_STATUS_OK, "%s[%lld] reduction %d, run %d: %s", kiln_dtype_name(t),
                  (long long)n, (int)k, run, kiln_last_error(ctx));
        if (s) break;
        CHECK_OK(ctx, kiln_array_copy_to_host(dy, got, bytes));
        int bad = 0;
        for (int64_t i = 0; i < n && !bad; i++) {
            double a = t == KILN_DTYPE_F32 ? ((float *)got)[i] : ((double *)got)[i];
            double b = t == KILN_DTYPE_F32 ? ((float *)want)[i] : ((double *)want)[i];
            bad = !test_close(a, b, t == KILN_DTYPE_F32 ? 1e-5 : 1e-12, 1e-5);
            CHECK_MSG(!bad, "%s[%lld] reduction %d, run %d: element %lld is %.9g, want %.9g",
                      kiln_dtype_name(t), (long long)n, (int)k, run, (long long)i, a, b);
        }
        printf("%s nccl %s[%lld] reduction %d run %d\n", bad ? "FAIL" : "PASS", kiln_dtype_name(t),
               (long long)n, (int)k, run);
        kiln_array_destroy(dy);
        dy = NULL;
    }
    kiln_array_destroy(dx);
    kiln_array_destroy(hx);
    kiln_array_destroy(hy);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    free(host);
    free(want);
    free(got);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-nccl-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    /* the environment applies (KILN_NCCL_LIBRARY); the cache is private, memory grows */
    kiln_context_options opts = {.cache_dir = dir, .alloc_mode = KILN_ALLOC_MODE_GROW};
    char err[1024];
    if (kiln_context_create(&opts, &ctx, err, sizeof err)) {
        fprintf(stderr, "test_nccl: %s\n", err);
        return 1;
    }
    int dev = -1;
    for (int i = 0; i < kiln_device_count(ctx) && dev < 0; i++)
        if (!strcmp(kiln_device_name(ctx, i), "cuda:0")) dev = i;
    kiln_comm *c = NULL;
    kiln_status s =
        dev < 0 ? KILN_STATUS_INVALID_ARGUMENT : kiln_comm_create_nccl(ctx, 1, &dev, 30, &c);
    if (dev < 0 || (s == KILN_STATUS_BACKEND && strstr(kiln_last_error(ctx), "cannot load NCCL"))) {
        int rc = test_skip("%s", dev < 0 ? "no GPU (no cuda:0 device in this context)"
                                         : kiln_last_error(ctx));
        kiln_context_destroy(ctx);
        test_remove_dir(dir);
        return rc;
    }
    CHECK_MSG(s == KILN_STATUS_OK, "kiln_comm_create_nccl on cuda:0: %s", kiln_last_error(ctx));
    if (c) {
        CHECK(!strcmp(kiln_comm_get_kind(c), "nccl") && kiln_comm_get_size(c) == 1);
        static const kiln_reduce_kind kinds[] = {KILN_REDUCE_SUM, KILN_REDUCE_MAX,
                                                 KILN_REDUCE_MEAN};
        for (int k = 0; k < 3; k++) {
            check_program(c, dev, KILN_DTYPE_F32, kinds[k], 1000);
            check_program(c, dev, KILN_DTYPE_F64, kinds[k], 77);
        }
        check_program(c, dev, KILN_DTYPE_F32, KILN_REDUCE_SUM, (int64_t)1 << 24);
        kiln_comm_stats st;
        kiln_comm_get_stats(c, &st);
        CHECK_MSG(st.calls == 14, "%llu collectives counted, 14 made",
                  (unsigned long long)st.calls);
        float one[3] = {1, 2, 3}, back[3] = {0};
        CHECK_OK(ctx, kiln_comm_all_reduce(c, KILN_DTYPE_F32, KILN_REDUCE_SUM, one, back, 3));
        CHECK(!memcmp(one, back, sizeof one));
        kiln_comm_destroy(c);
    }
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_nccl");
}
