/* test_nccl_mock.c — the NCCL transport (src/comm/nccl.c) against stand-ins for the CUDA
 * driver and NCCL (tests/mock_cuda.c with four pretend GPUs, tests/mock_nccl.c, loaded as
 * libcuda.so.1 and libnccl.so.2 through LD_LIBRARY_PATH, which CMake sets for this test
 * only). Checked: 1, 2 and 4 ranks of one process (ncclCommInitAll) give the sum, max and
 * mean of compiled all-reduces, one after another and as two in one program, on device
 * memory enqueued on the compute stream; host buffers staged through the device
 * (kiln_comm_all_reduce, barrier); ranks made from a host bootstrap communicator
 * (ncclCommInitRank after the unique id's exchange); mismatched calls, an asynchronous
 * error, a stall and a peer that never runs end in clear errors (at the timeout for the
 * last two) and abort the NCCL communicators; a GPU program with no communicator copies;
 * the wrong kinds of communicator or device are refused at compile; a missing library is
 * named; and the fault sweep of making a group and a bootstrapped rank. Skipped (77) when
 * the loaded libcuda.so.1 is not the stand-in. */
#include "base/half.h"
#include "fault.h"
#include "test.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GPUS 4
#define GPU0 1 /* the context's device id of cuda:0: the CPU is device 0 */

static char dir[] = "/tmp/kiln-nccl-mock-XXXXXX";
static kiln_context *ctx;
static void (*set_fault)(int);
static int (*live)(void);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static kiln_context *make(const char *nccl_library) {
    kiln_context_options o = {.ignore_environment = true,
                              .cache_dir = dir,
                              .alloc_mode = KILN_ALLOC_MODE_GROW,
                              .nccl_library = nccl_library};
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return c;
}

typedef struct replica {
    kiln_executable *e;
    kiln_array *in, *out;
    kiln_status s;
    char err[1024];
} replica;

static void *run_replica(void *p) {
    replica *r = p;
    r->s = kiln_executable_run(r->e, 1, &r->in, 1, &r->out);
    if (r->s) snprintf(r->err, sizeof r->err, "%s", kiln_last_error(ctx));
    return NULL;
}

static void run_all(replica *r, int n) {
    pthread_t t[GPUS];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run_replica, &r[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

/* y = all_reduce(x, k), or all_reduce(all_reduce(x, k), MAX) when twice. */
static kiln_graph *program(const char *name, kiln_dtype t, int64_t n, kiln_reduce_kind k,
                           bool twice) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, name, &g));
    kiln_value y = kiln_all_reduce(g, kiln_parameter(g, "x", t, 1, &n), k);
    if (twice) y = kiln_all_reduce(g, y, KILN_REDUCE_MAX);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    return g;
}

static double value(kiln_dtype t, int rank, int64_t i) {
    double v = (double)((rank * 7 + i * 3) % 11) - 4.5 + 0.25 * rank;
    return t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64 ? floor(v) : v;
}

static void put(kiln_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case KILN_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case KILN_DTYPE_F64: ((double *)p)[i] = v; break;
    case KILN_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KILN_DTYPE_BF16: ((uint16_t *)p)[i] = kn_f64_to_bf16(v); break;
    case KILN_DTYPE_F16: ((uint16_t *)p)[i] = kn_f64_to_f16(v); break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

static double get(kiln_dtype t, const void *p, int64_t i) {
    switch (t) {
    case KILN_DTYPE_F32: return ((const float *)p)[i];
    case KILN_DTYPE_F64: return ((const double *)p)[i];
    case KILN_DTYPE_I32: return ((const int32_t *)p)[i];
    case KILN_DTYPE_BF16: return kn_bf16_to_f32(((const uint16_t *)p)[i]);
    case KILN_DTYPE_F16: return kn_f16_to_f32(((const uint16_t *)p)[i]);
    default: return (double)((const int64_t *)p)[i];
    }
}

/* Every rank runs the program on its GPU; each result must be the host's reduction. */
static void check_case(kiln_comm **comms, int ranks, kiln_dtype t, kiln_reduce_kind k, bool twice) {
    int64_t n = 37;
    kiln_graph *g = program("ar", t, n, k, twice);
    size_t bytes = (size_t)n * kiln_dtype_itemsize(t);
    replica r[GPUS];
    memset(r, 0, sizeof r);
    void *host = malloc(bytes), *got = malloc(bytes);
    for (int i = 0; i < ranks; i++) {
        for (int64_t e = 0; e < n; e++) put(t, host, e, value(t, i, e));
        kiln_compile_options o = {.device = GPU0 + i, .comm = comms[i]};
        CHECK_OK(ctx, kiln_compile(g, &o, &r[i].e));
        CHECK_OK(ctx, kiln_array_create_on(ctx, GPU0 + i, t, 1, &n, host, &r[i].in));
    }
    run_all(r, ranks);
    for (int i = 0; i < ranks; i++) {
        CHECK_MSG(r[i].s == KILN_STATUS_OK, "%d ranks, rank %d: %s", ranks, i, r[i].err);
        if (r[i].s) continue;
        CHECK_OK(ctx, kiln_array_copy_to_host(r[i].out, got, bytes));
        int bad = 0;
        for (int64_t e = 0; e < n && !bad; e++) {
            double acc = 0;
            for (int q = 0; q < ranks; q++)
                acc = k == KILN_REDUCE_MAX ? (q ? fmax(acc, value(t, q, e)) : value(t, q, e))
                                           : acc + value(t, q, e);
            if (k == KILN_REDUCE_MEAN) acc /= ranks;
            /* the values are exact in every dtype; a 16-bit mean rounds once (the mock
             * reduces in f32) */
            double tol = t == KILN_DTYPE_BF16 ? 0x1p-8 : t == KILN_DTYPE_F16 ? 0x1p-11 : 1e-6;
            bad = !test_close(get(t, got, e), acc, tol, 1e-6);
            CHECK_MSG(!bad, "%d ranks, %s reduction %d%s, rank %d: element %lld is %g, want %g",
                      ranks, kiln_dtype_name(t), (int)k, twice ? " then max" : "", i, (long long)e,
                      get(t, got, e), acc);
        }
    }
    for (int i = 0; i < ranks; i++) {
        kiln_array_destroy(r[i].in);
        kiln_array_destroy(r[i].out);
        kiln_executable_destroy(r[i].e);
    }
    free(host);
    free(got);
    kiln_graph_destroy(g);
}

/* ZeRO's pair on the GPUs: y = reduce_scatter(x, MEAN) (ncclReduceScatter, ncclAvg) or
 * all_gather(x) (ncclAllGather of bytes), each rank's against the host's math. */
static void check_shard_case(kiln_comm **comms, int ranks, kiln_dtype t, bool gather) {
    int64_t n = 9 * ranks, m = gather ? n * ranks : n / ranks;
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, gather ? "ag" : "rs", &g));
    kiln_value x = kiln_parameter(g, "x", t, 1, &n);
    kiln_value y =
        gather ? kiln_all_gather(g, x, ranks) : kiln_reduce_scatter(g, x, KILN_REDUCE_MEAN, ranks);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    size_t item = kiln_dtype_itemsize(t);
    replica r[GPUS];
    memset(r, 0, sizeof r);
    void *host = malloc((size_t)n * item), *got = malloc((size_t)m * item);
    for (int i = 0; i < ranks; i++) {
        for (int64_t e = 0; e < n; e++) put(t, host, e, value(t, i, e));
        kiln_compile_options o = {.device = GPU0 + i, .comm = comms[i]};
        CHECK_OK(ctx, kiln_compile(g, &o, &r[i].e));
        CHECK_OK(ctx, kiln_array_create_on(ctx, GPU0 + i, t, 1, &n, host, &r[i].in));
    }
    run_all(r, ranks);
    for (int i = 0; i < ranks; i++) {
        CHECK_MSG(r[i].s == KILN_STATUS_OK, "%d ranks, rank %d: %s", ranks, i, r[i].err);
        if (r[i].s) continue;
        CHECK_OK(ctx, kiln_array_copy_to_host(r[i].out, got, (size_t)m * item));
        int bad = 0;
        for (int64_t e = 0; e < m && !bad; e++) {
            double want = 0;
            if (gather) {
                want = value(t, (int)(e / n), e % n);
            } else {
                for (int q = 0; q < ranks; q++) want += value(t, q, i * m + e);
                want /= ranks;
            }
            bad = !test_close(get(t, got, e), want, 1e-6, 1e-6);
            CHECK_MSG(!bad, "%s over %d ranks, %s, rank %d: element %lld is %g, want %g",
                      gather ? "all_gather" : "reduce_scatter", ranks, kiln_dtype_name(t), i,
                      (long long)e, get(t, got, e), want);
        }
    }
    for (int i = 0; i < ranks; i++) {
        kiln_array_destroy(r[i].in);
        kiln_array_destroy(r[i].out);
        kiln_executable_destroy(r[i].e);
    }
    free(host);
    free(got);
    kiln_graph_destroy(g);
}

typedef struct host_case {
    kiln_comm *c;
    kiln_status s;
    int64_t got[3];
    int gather_ok;
    int64_t scatter;
} host_case;

static void *host_reduce(void *p) {
    host_case *h = p;
    int64_t mine[3] = {kiln_comm_get_rank(h->c), 10 - kiln_comm_get_rank(h->c), 1};
    h->s = kiln_comm_all_reduce(h->c, KILN_DTYPE_I64, KILN_REDUCE_MAX, mine, h->got, 3);
    if (!h->s) h->s = kiln_comm_barrier(h->c);
    /* ZeRO's pair on host buffers, staged through the device: rank r's element sent to
     * every rank (the gather), then shard r of every rank's (r + 1, ...) summed */
    int n = kiln_comm_get_size(h->c), r = kiln_comm_get_rank(h->c);
    int64_t one = r, all[GPUS], many[GPUS];
    for (int i = 0; i < n; i++) many[i] = r + 1 + i;
    if (!h->s) h->s = kiln_comm_all_gather(h->c, KILN_DTYPE_I64, &one, all, 1);
    for (int i = 0; i < n && !h->s; i++) h->gather_ok += all[i] == i;
    if (!h->s)
        h->s = kiln_comm_reduce_scatter(h->c, KILN_DTYPE_I64, KILN_REDUCE_SUM, many, &one, 1);
    h->scatter = one; /* sum over q of (q + 1 + r) */
    return NULL;
}

static void test_ranks(void) {
    static const int sizes[] = {1, 2, 4};
    for (int z = 0; z < 3; z++) {
        int ranks = sizes[z];
        int devs[GPUS] = {GPU0, GPU0 + 1, GPU0 + 2, GPU0 + 3};
        kiln_comm *comms[GPUS] = {0};
        CHECK_OK(ctx, kiln_comm_create_nccl(ctx, ranks, devs, 10, comms));
        if (!comms[0]) continue;
        CHECK(!strcmp(kiln_comm_get_kind(comms[0]), "nccl"));
        CHECK(kiln_comm_get_size(comms[ranks - 1]) == ranks);
        CHECK(kiln_comm_get_rank(comms[ranks - 1]) == ranks - 1);
        check_case(comms, ranks, KILN_DTYPE_F32, KILN_REDUCE_SUM, false);
        check_case(comms, ranks, KILN_DTYPE_F32, KILN_REDUCE_MAX, false);
        check_case(comms, ranks, KILN_DTYPE_F32, KILN_REDUCE_MEAN, false);
        check_case(comms, ranks, KILN_DTYPE_F64, KILN_REDUCE_MEAN, false);
        check_case(comms, ranks, KILN_DTYPE_I32, KILN_REDUCE_SUM, false);
        check_case(comms, ranks, KILN_DTYPE_I64, KILN_REDUCE_MAX, false);
        check_case(comms, ranks, KILN_DTYPE_F32, KILN_REDUCE_SUM, true);
        /* 16-bit device buffers: ncclBfloat16 and ncclFloat16 */
        check_case(comms, ranks, KILN_DTYPE_BF16, KILN_REDUCE_SUM, false);
        check_case(comms, ranks, KILN_DTYPE_BF16, KILN_REDUCE_MEAN, false);
        check_case(comms, ranks, KILN_DTYPE_F16, KILN_REDUCE_MAX, false);
        check_case(comms, ranks, KILN_DTYPE_F16, KILN_REDUCE_MEAN, false);
        kiln_comm_stats st;
        kiln_comm_get_stats(comms[0], &st);
        CHECK_MSG(st.calls == 12 && st.bytes > 0, "%d ranks: %llu calls", ranks,
                  (unsigned long long)st.calls);
        check_shard_case(comms, ranks, KILN_DTYPE_F32, false);
        check_shard_case(comms, ranks, KILN_DTYPE_F64, false);
        check_shard_case(comms, ranks, KILN_DTYPE_F32, true);
        check_shard_case(comms, ranks, KILN_DTYPE_I64, true);
        /* host buffers, through the device */
        host_case h[GPUS];
        pthread_t th[GPUS];
        for (int i = 0; i < ranks; i++) {
            h[i] = (host_case){.c = comms[i]};
            pthread_create(&th[i], NULL, host_reduce, &h[i]);
        }
        for (int i = 0; i < ranks; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < ranks; i++) {
            CHECK_MSG(h[i].s == KILN_STATUS_OK, "host all-reduce, rank %d of %d", i, ranks);
            CHECK(h[i].got[0] == ranks - 1 && h[i].got[1] == 10 && h[i].got[2] == 1);
            CHECK_MSG(h[i].gather_ok == ranks, "host all-gather, rank %d of %d", i, ranks);
            CHECK_MSG(h[i].scatter == (int64_t)ranks * (ranks + 1) / 2 + (int64_t)ranks * i,
                      "host reduce-scatter, rank %d of %d: %lld", i, ranks,
                      (long long)h[i].scatter);
        }
        for (int i = 0; i < ranks; i++) kiln_comm_destroy(comms[i]);
        CHECK_MSG(live() == 0, "%d NCCL communicators left", live());
    }
}

/* Ranks made from a host bootstrap group: the unique id goes from rank 0 to the others. */
typedef struct boot_case {
    kiln_comm *boot, *c;
    int device;
    kiln_status s;
    float got[4];
    char err[1024];
} boot_case;

static void *boot_rank(void *p) {
    boot_case *b = p;
    b->s = kiln_comm_create_nccl_rank(ctx, b->boot, b->device, 5, &b->c);
    if (!b->s) {
        float mine[4] = {1, 2, 3, (float)kiln_comm_get_rank(b->c)};
        b->s = kiln_comm_all_reduce(b->c, KILN_DTYPE_F32, KILN_REDUCE_SUM, mine, b->got, 4);
    }
    if (b->s) snprintf(b->err, sizeof b->err, "%s", kiln_last_error(ctx));
    return NULL;
}

static void test_bootstrap(void) {
    for (int bad = 0; bad < 2; bad++) {
        kiln_comm *boot[2];
        CHECK_OK(ctx, kiln_comm_create_local(ctx, 2, 10, boot));
        boot_case b[2] = {{.boot = boot[0], .device = GPU0}, {.boot = boot[1], .device = GPU0 + 1}};
        if (bad) b[1].device = 0; /* the CPU: rank 1 cannot take part, and rank 0 hears so */
        pthread_t th[2];
        for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, boot_rank, &b[i]);
        for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
        if (!bad) {
            for (int i = 0; i < 2; i++) {
                CHECK_MSG(b[i].s == KILN_STATUS_OK, "bootstrapped rank %d: %s", i, b[i].err);
                CHECK(b[i].c && kiln_comm_get_rank(b[i].c) == i && kiln_comm_get_size(b[i].c) == 2);
                CHECK(b[i].got[0] == 2 && b[i].got[2] == 6 && b[i].got[3] == 1);
            }
        } else {
            CHECK_STATUS(b[1].s, KILN_STATUS_INVALID_ARGUMENT);
            CHECK_CONTAINS(b[1].err, "not a GPU");
            CHECK_STATUS(b[0].s, KILN_STATUS_BACKEND);
            CHECK_CONTAINS(b[0].err, "1 of the 2 ranks could not set NCCL up");
            CHECK(!b[0].c && !b[1].c);
        }
        for (int i = 0; i < 2; i++) {
            kiln_comm_destroy(b[i].c);
            kiln_comm_destroy(boot[i]);
        }
    }
    CHECK_MSG(live() == 0, "%d NCCL communicators left", live());
}

/* Two ranks whose programs do not match, or whose collectives never end: every rank fails
 * with the error, the communicators are aborted and refuse later calls. */
static void check_failure(int fault, bool mismatch, kiln_status want, const char *says) {
    int devs[2] = {GPU0, GPU0 + 1};
    kiln_comm *comms[2] = {0};
    CHECK_OK(ctx, kiln_comm_create_nccl(ctx, 2, devs, 0.3, comms));
    if (!comms[0]) return;
    replica r[2];
    memset(r, 0, sizeof r);
    kiln_graph *g[2];
    for (int i = 0; i < 2; i++) {
        int64_t n = mismatch && i ? 9 : 8;
        g[i] = program("failing", KILN_DTYPE_F32, n, KILN_REDUCE_SUM, false);
        kiln_compile_options o = {.device = GPU0 + i, .comm = comms[i]};
        CHECK_OK(ctx, kiln_compile(g[i], &o, &r[i].e));
        CHECK_OK(ctx, kiln_array_create_on(ctx, GPU0 + i, KILN_DTYPE_F32, 1, &n, NULL, &r[i].in));
    }
    set_fault(fault);
    double t0 = now();
    run_all(r, 2);
    double took = now() - t0;
    set_fault(0);
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(r[i].s, want);
        CHECK_CONTAINS(r[i].err, says);
        CHECK_CONTAINS(r[i].err, "of 'failing'");
        CHECK_CONTAINS(r[i].err, "aborted");
        CHECK(r[i].out == NULL);
    }
    if (want == KILN_STATUS_TIMEOUT) CHECK_MSG(took >= 0.3 && took < 10, "took %.3f s", took);
    CHECK_MSG(live() == 0, "%d NCCL communicators were not aborted", live());
    float x = 1, y;
    CHECK_STATUS(kiln_comm_all_reduce(comms[0], KILN_DTYPE_F32, KILN_REDUCE_SUM, &x, &y, 1),
                 KILN_STATUS_TIMEOUT);
    CHECK_CONTAINS(kiln_last_error(ctx), "already failed");
    for (int i = 0; i < 2; i++) {
        kiln_array_destroy(r[i].in);
        kiln_executable_destroy(r[i].e);
        kiln_graph_destroy(g[i]);
        kiln_comm_destroy(comms[i]);
    }
}

/* A rank whose peer never runs (died before the step) ends with the timeout, not a hang. */
static void test_lonely_rank(void) {
    int devs[2] = {GPU0, GPU0 + 1};
    kiln_comm *comms[2] = {0};
    CHECK_OK(ctx, kiln_comm_create_nccl(ctx, 2, devs, 0.2, comms));
    if (!comms[0]) return;
    int64_t n = 16;
    kiln_graph *g = program("lonely", KILN_DTYPE_F32, n, KILN_REDUCE_SUM, false);
    replica r = {0};
    kiln_compile_options o = {.device = GPU0, .comm = comms[0]};
    CHECK_OK(ctx, kiln_compile(g, &o, &r.e));
    CHECK_OK(ctx, kiln_array_create_on(ctx, GPU0, KILN_DTYPE_F32, 1, &n, NULL, &r.in));
    run_replica(&r);
    CHECK_STATUS(r.s, KILN_STATUS_TIMEOUT);
    CHECK_CONTAINS(r.err, "waiting for collective #1 of 'lonely' on rank 0 of 2 (nccl, cuda:0)");
    CHECK_CONTAINS(r.err, "not finished after 0.2 s");
    CHECK(r.out == NULL);
    kiln_array_destroy(r.in);
    kiln_executable_destroy(r.e);
    kiln_graph_destroy(g);
    for (int i = 0; i < 2; i++) kiln_comm_destroy(comms[i]);
    CHECK_MSG(live() == 0, "%d NCCL communicators left", live());
}

static void test_failures(void) {
    check_failure(0, true, KILN_STATUS_BACKEND, "different collectives");
    check_failure(1, false, KILN_STATUS_TIMEOUT, "not finished after 0.3 s");
    check_failure(2, false, KILN_STATUS_BACKEND, "remote process exited");
}

/* A GPU program with no communicator (or a host one of one rank) copies; host
 * communicators of several ranks and NCCL ones of another device are refused at compile. */
static void test_wrong_kinds(void) {
    int64_t n = 5;
    float in[5] = {1, -2, 3, 4.5f, 0}, out[5];
    kiln_graph *g = program("kinds", KILN_DTYPE_F32, n, KILN_REDUCE_MEAN, false);
    kiln_comm *local[2], *one[1], *nccl[1];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, 2, 1, local));
    CHECK_OK(ctx, kiln_comm_create_local(ctx, 1, 1, one));
    int dev = GPU0;
    CHECK_OK(ctx, kiln_comm_create_nccl(ctx, 1, &dev, 1, nccl));
    kiln_comm *alone[2] = {NULL, one[0]};
    for (int i = 0; i < 2; i++) {
        replica r = {0};
        kiln_compile_options o = {.device = GPU0 + 1, .comm = alone[i]};
        CHECK_OK(ctx, kiln_compile(g, &o, &r.e));
        CHECK_OK(ctx, kiln_array_create_on(ctx, GPU0 + 1, KILN_DTYPE_F32, 1, &n, in, &r.in));
        run_replica(&r);
        CHECK_MSG(r.s == KILN_STATUS_OK, "%s", r.err);
        if (!r.s) CHECK_OK(ctx, kiln_array_copy_to_host(r.out, out, sizeof out));
        CHECK(!r.s && !memcmp(in, out, sizeof in));
        kiln_array_destroy(r.in);
        kiln_array_destroy(r.out);
        kiln_executable_destroy(r.e);
    }
    kiln_executable *e = NULL;
    kiln_compile_options o = {.device = GPU0, .comm = local[0]};
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_UNIMPLEMENTED);
    CHECK_CONTAINS(kiln_last_error(ctx), "NCCL communicator (kiln_comm_create_nccl");
    o = (kiln_compile_options){.device = GPU0 + 2, .comm = nccl[0]};
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "bound to cuda:0");
    o = (kiln_compile_options){.device = 0, .comm = nccl[0]};
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "compiled for cpu:0");
    CHECK(e == NULL);
    int dup[2] = {GPU0 + 1, GPU0 + 1}, cpu = 0;
    kiln_comm *c2[2];
    CHECK_STATUS(kiln_comm_create_nccl(ctx, 2, dup, 1, c2), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "both cuda:1");
    CHECK_STATUS(kiln_comm_create_nccl(ctx, 1, &cpu, 1, c2), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "device 0 (cpu:0) is not a GPU");
    for (int i = 0; i < 2; i++) kiln_comm_destroy(local[i]);
    kiln_comm_destroy(one[0]);
    kiln_comm_destroy(nccl[0]);
    kiln_graph_destroy(g);
}

static void test_no_library(void) {
    kiln_context *c = make("/nonexistent/libnccl.so.2");
    int dev = GPU0;
    kiln_comm *comm = (kiln_comm *)1;
    CHECK_STATUS(kiln_comm_create_nccl(c, 1, &dev, 1, &comm), KILN_STATUS_BACKEND);
    CHECK(comm == NULL);
    CHECK_CONTAINS(kiln_last_error(c), "cannot load NCCL (/nonexistent/libnccl.so.2, as");
    CHECK_CONTAINS(kiln_last_error(c), "No such file");
    kiln_context_destroy(c);
    /* the variable overrides the option, and the message says where the name came from */
    setenv("KILN_NCCL_LIBRARY", "libnccl-absent.so.9", 1);
    kiln_context_options o = {.cache_dir = dir, .alloc_mode = KILN_ALLOC_MODE_GROW};
    c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    unsetenv("KILN_NCCL_LIBRARY");
    CHECK(c != NULL);
    if (!c) return;
    CHECK_STATUS(kiln_comm_create_nccl(c, 1, &dev, 1, &comm), KILN_STATUS_BACKEND);
    CHECK_CONTAINS(kiln_last_error(c), "libnccl-absent.so.9, as KILN_NCCL_LIBRARY");
    kiln_context_destroy(c);
}

/* Making and destroying a group, and a rank from a one-rank bootstrap group, failing each
 * host allocation. */
static kiln_status fault_body(kiln_context *c, int *bad) {
    int devs[3] = {GPU0, GPU0 + 1, GPU0 + 2};
    kiln_comm *comms[3] = {0}, *boot = NULL, *rank = NULL;
    kiln_status s = kiln_comm_create_nccl(c, 3, devs, 1, comms);
    if (!s) *bad = kiln_comm_get_rank(comms[2]) != 2;
    if (!s) s = kiln_comm_create_local(c, 1, 1, &boot);
    if (!s) s = kiln_comm_create_nccl_rank(c, boot, GPU0 + 3, 1, &rank);
    if (!s) *bad |= kiln_comm_get_size(rank) != 1 || strcmp(kiln_comm_get_kind(rank), "nccl");
    kiln_comm_destroy(rank);
    kiln_comm_destroy(boot);
    for (int i = 0; i < 3; i++) kiln_comm_destroy(comms[i]);
    return s;
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    ctx = make(NULL);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *nccl = dlopen("libnccl.so.2", RTLD_NOW);
    if (cuda && nccl) {
        *(void **)&set_fault = dlsym(nccl, "mock_nccl_set_fault");
        *(void **)&live = dlsym(nccl, "mock_nccl_live");
    }
    if (!ctx || !cuda || !dlsym(cuda, "mock_cuda_stream_hold") || !set_fault || !live ||
        kiln_device_count(ctx) != 1 + GPUS) {
        int rc = test_skip("the libcuda.so.1 and libnccl.so.2 loaded are not tests/mock_cuda.c "
                           "(with KILN_MOCK_CUDA_DEVICES=%d) and tests/mock_nccl.c",
                           GPUS);
        kiln_context_destroy(ctx);
        test_remove_dir(dir);
        return rc;
    }
    RUN(test_ranks);
    RUN(test_bootstrap);
    RUN(test_failures);
    RUN(test_lonely_rank);
    RUN(test_wrong_kinds);
    RUN(test_no_library);
    fault_ctx_case fc = {dir, fault_body, "a communicator has the wrong rank, size or kind"};
    fault_sweep sw = {"nccl group", fault_in_context, &fc, 500, NULL};
    CHECK(fault_sweep_run(&sw) > 3);
    CHECK_MSG(live() == 0, "%d NCCL communicators left", live());
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_nccl_mock");
}
