/* test_comm.c — collectives: kiln_all_reduce against a host reduction of every replica's
 * input over 4 in-process CPU devices (random shapes, dtypes and reductions, fused with
 * the ops around it), its VJP, the single-replica identity (reference, no communicator),
 * the text form, timeouts and mismatched calls, and the fault sweep of the group and the
 * compile; all-reduces overlapped with the kernels after them (the default) against the
 * same programs with kiln_compile_options.disable_overlap, bitwise, the lifetime of an
 * overlapped all-reduce's buffers, and a peer that never comes while several are in
 * flight; bf16 and f16 summed in f32 and rounded once. Also run under ThreadSanitizer
 * (label tsan). */
#include "comm/comm.h"
#include "runtime/executable.h"
#include "fault.h"
#include "rng.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RANKS 4

static kiln_context *ctx;

typedef struct replica {
    kiln_executable *e;
    int n_in;
    kiln_array *in[2];
    kiln_array *out;
    kiln_status s;
    char err[512];
} replica;

static void *run_replica(void *p) {
    replica *r = p;
    r->s = kiln_executable_run(r->e, r->n_in, r->in, 1, &r->out);
    if (r->s) snprintf(r->err, sizeof r->err, "%s", kiln_last_error(ctx));
    return NULL;
}

/* Runs every replica in a thread of its own. */
static void run_all(replica *r, int n) {
    pthread_t t[RANKS];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run_replica, &r[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static double elem(kiln_dtype t, const void *p, int64_t i) {
    switch (t) {
    case KILN_DTYPE_BF16: return kn_bf16_to_f32(((const uint16_t *)p)[i]);
    case KILN_DTYPE_F16: return kn_f16_to_f32(((const uint16_t *)p)[i]);
    case KILN_DTYPE_F32: return ((const float *)p)[i];
    case KILN_DTYPE_F64: return ((const double *)p)[i];
    case KILN_DTYPE_I32: return ((const int32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}

/* v rounded to the 16-bit dtype t (from f32, as a kernel rounds). */
static float rnd16(kiln_dtype t, float v) {
    return t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(kn_f32_to_bf16(v))
                                : kn_f16_to_f32(kn_f32_to_f16(v));
}

/* What all_reduce(x * 2 + 1) * 3 gives in a 16-bit dtype, element e: every op rounded to
 * the dtype, the all-reduce summed in f32 in rank order and rounded once. */
static double half_case(kiln_dtype t, kiln_reduce_kind k, void *const *host, int64_t e) {
    float acc = 0;
    for (int q = 0; q < RANKS; q++) {
        float v = rnd16(t, (float)elem(t, host[q], e) * 2 + 1);
        acc = k == KILN_REDUCE_MAX ? (q ? fmaxf(acc, v) : v) : acc + v;
    }
    if (k == KILN_REDUCE_MEAN) acc /= RANKS;
    return rnd16(t, rnd16(t, acc) * 3);
}

/* y = all_reduce(x * 2 + 1) * 3 on every replica vs the same on the host. */
static void check_random_case(uint64_t *seed, kiln_comm **comms) {
    static const kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                     KILN_DTYPE_I64, KILN_DTYPE_BF16, KILN_DTYPE_F16};
    kiln_dtype t = dts[test_rng_int(seed, 6)];
    kiln_reduce_kind k = (kiln_reduce_kind)test_rng_int(seed, 3);
    if (k == KILN_REDUCE_MEAN && (t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64)) k = KILN_REDUCE_SUM;
    int rank = test_rng_int(seed, 4);
    int64_t dims[4], n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i] = 1 + test_rng_int(seed, i == rank - 1 ? 37 : 5);
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "ar", &g));
    kiln_value x = kiln_parameter(g, "x", t, rank, dims);
    kiln_value u = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, t, 2)), kiln_scalar(g, t, 1));
    kiln_value y = kiln_mul(g, kiln_all_reduce(g, u, k), kiln_scalar(g, t, 3));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    size_t bytes = (size_t)n * kiln_dtype_itemsize(t);
    void *host[RANKS], *got = malloc(bytes);
    replica r[RANKS];
    memset(r, 0, sizeof r);
    for (int i = 0; i < RANKS; i++) {
        host[i] = malloc(bytes);
        test_fill_uniform(t, n, host[i], seed);
        kiln_compile_options o = {.device = i, .comm = comms[i]};
        CHECK_OK(ctx, kiln_compile(g, &o, &r[i].e));
        CHECK_OK(ctx, kiln_array_create_on(ctx, i, t, rank, dims, host[i], &r[i].in[0]));
        r[i].n_in = 1;
    }
    run_all(r, RANKS);
    int bad = 0;
    void *first = malloc(bytes);
    for (int i = 0; i < RANKS; i++) {
        CHECK_MSG(r[i].s == KILN_STATUS_OK, "rank %d: %s", i, r[i].err);
        if (r[i].s) continue;
        kiln_array_copy_to_host(r[i].out, got, bytes);
        if (i == 0) memcpy(first, got, bytes);
        CHECK_MSG(!memcmp(first, got, bytes), "rank %d's result differs from rank 0's", i);
        for (int64_t e = 0; e < n && !bad; e++) {
            double acc = 0;
            for (int q = 0; q < RANKS; q++) {
                double v = elem(t, host[q], e) * 2 + 1;
                acc = k == KILN_REDUCE_MAX ? (q ? fmax(acc, v) : v) : acc + v;
            }
            if (k == KILN_REDUCE_MEAN) acc /= RANKS;
            double want = acc * 3, have = elem(t, got, e);
            if (kiln_dtype_itemsize(t) == 2) { /* bf16, f16: the same bits */
                want = half_case(t, k, host, e);
                bad = !(have == want || (isnan(have) && isnan(want)));
            } else {
                bad = !test_close(have, want, t == KILN_DTYPE_F32 ? 1e-6 : 1e-13, 1e-6);
            }
            CHECK_MSG(!bad, "%s[%lld] reduction %d rank %d: element %lld is %g, want %g",
                      kiln_dtype_name(t), (long long)n, (int)k, i, (long long)e, have, want);
        }
    }
    for (int i = 0; i < RANKS; i++) {
        kiln_array_destroy(r[i].in[0]);
        kiln_array_destroy(r[i].out);
        kiln_executable_destroy(r[i].e);
        free(host[i]);
    }
    free(first);
    free(got);
    kiln_graph_destroy(g);
}

static void test_random_shapes(void) {
    kiln_comm *comms[RANKS];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, RANKS, 30, comms));
    CHECK(kiln_comm_get_size(comms[2]) == RANKS && kiln_comm_get_rank(comms[2]) == 2);
    CHECK(strcmp(kiln_comm_get_kind(comms[0]), "local") == 0);
    uint64_t seed = test_seed(0xa11);
    for (int c = 0; c < 24; c++) check_random_case(&seed, comms);
    kiln_comm_stats st;
    kiln_comm_get_stats(comms[1], &st);
    CHECK(st.calls == 24 && st.bytes > 0);
    for (int i = 0; i < RANKS; i++) kiln_comm_destroy(comms[i]);
}

/* kiln_comm_all_reduce of bf16 and f16 host buffers over a local group: summed in f32 and
 * rounded once. 256 + 1 + 1 + 1 is 259 in f32 and 260 in bf16 (a tie, to even), where
 * adding in bf16 step by step would stay at 256; f16's 2048 + 1 + 1 + 1 likewise gives 2052
 * (2048 step by step). MEAN divides the f32 sum; MAX picks. Also every finite bf16 pattern
 * of a block, summed against a host f32 sum. */
typedef struct half_call {
    kiln_comm *c;
    kiln_dtype t;
    kiln_reduce_kind k;
    const uint16_t *send;
    uint16_t *recv;
    int64_t n;
    kiln_status s;
} half_call;

static void *half_call_run(void *p) {
    half_call *h = p;
    h->s = kiln_comm_all_reduce(h->c, h->t, h->k, h->send, h->recv, h->n);
    return NULL;
}

static void half_reduce(kiln_comm **comms, kiln_dtype t, kiln_reduce_kind k, uint16_t (*send)[512],
                        uint16_t (*recv)[512], int64_t n) {
    half_call h[RANKS];
    pthread_t th[RANKS];
    for (int i = 0; i < RANKS; i++) {
        h[i] = (half_call){comms[i], t, k, send[i], recv[i], n, KILN_STATUS_OK};
        pthread_create(&th[i], NULL, half_call_run, &h[i]);
    }
    for (int i = 0; i < RANKS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < RANKS; i++)
        CHECK_MSG(h[i].s == KILN_STATUS_OK, "rank %d: %s", i, kiln_status_name(h[i].s));
    for (int i = 1; i < RANKS; i++)
        CHECK_MSG(!memcmp(recv[0], recv[i], (size_t)n * 2), "rank %d's result differs", i);
}

static void test_half_host_all_reduce(void) {
    kiln_comm *comms[RANKS];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, RANKS, 30, comms));
    static uint16_t send[RANKS][512], recv[RANKS][512];
    /* bf16: 256 = 0x4380, 1 = 0x3f80; f16: 2048 = 0x6800, 1 = 0x3c00 */
    for (int i = 0; i < RANKS; i++) send[i][0] = i ? 0x3f80 : 0x4380;
    half_reduce(comms, KILN_DTYPE_BF16, KILN_REDUCE_SUM, send, recv, 1);
    CHECK_MSG(recv[0][0] == 0x4382, "bf16 256+1+1+1 = 0x%04x, want 0x4382 (260)", recv[0][0]);
    half_reduce(comms, KILN_DTYPE_BF16, KILN_REDUCE_MEAN, send, recv, 1);
    CHECK_MSG(recv[0][0] == 0x4282, "bf16 mean = 0x%04x, want 0x4282 (65)", recv[0][0]);
    half_reduce(comms, KILN_DTYPE_BF16, KILN_REDUCE_MAX, send, recv, 1);
    CHECK_MSG(recv[0][0] == 0x4380, "bf16 max = 0x%04x, want 0x4380", recv[0][0]);
    for (int i = 0; i < RANKS; i++) send[i][0] = i ? 0x3c00 : 0x6800;
    half_reduce(comms, KILN_DTYPE_F16, KILN_REDUCE_SUM, send, recv, 1);
    CHECK_MSG(recv[0][0] == 0x6802, "f16 2048+1+1+1 = 0x%04x, want 0x6802 (2052)", recv[0][0]);
    half_reduce(comms, KILN_DTYPE_F16, KILN_REDUCE_MEAN, send, recv, 1);
    CHECK_MSG(recv[0][0] == 0x6002, "f16 mean = 0x%04x, want 0x6002 (513)", recv[0][0]);
    /* a block of random bits (NaN and inf included) in both dtypes */
    uint64_t seed = test_seed(0x16b);
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_F16 : KILN_DTYPE_BF16;
        for (int i = 0; i < RANKS; i++)
            for (int e = 0; e < 512; e++) send[i][e] = (uint16_t)(test_rng_next(&seed) >> 48);
        for (int k = 0; k < 3; k++) {
            half_reduce(comms, t, (kiln_reduce_kind)k, send, recv, 512);
            for (int e = 0; e < 512; e++) {
                float acc = 0;
                for (int q = 0; q < RANKS; q++) {
                    float v = (float)elem(t, send[q], e);
                    acc = k == KILN_REDUCE_MAX ? (q == 0                   ? v
                                                  : isnan(acc) || isnan(v) ? acc + v
                                                                           : fmaxf(acc, v))
                                               : acc + v;
                }
                if (k == KILN_REDUCE_MEAN) acc /= RANKS;
                double want = rnd16(t, acc), have = elem(t, recv[0], e);
                CHECK_MSG(have == want || (isnan(have) && isnan(want)),
                          "%s reduction %d element %d: %g, want %g", kiln_dtype_name(t), k, e, have,
                          want);
            }
        }
    }
    kiln_comm_stats st;
    kiln_comm_get_stats(comms[0], &st);
    CHECK_MSG(st.bytes == 5 * 2 + 6 * 512 * 2, "bytes %llu: the 16-bit sizes sent",
              (unsigned long long)st.bytes);
    for (int i = 0; i < RANKS; i++) kiln_comm_destroy(comms[i]);
}

/* One replica: the reference interpreter and a compile without a communicator agree that
 * every reduction is the identity. */
static void test_one_replica_identity(void) {
    for (int k = 0; k < 3; k++) {
        kiln_graph *g = NULL;
        int64_t d[2] = {3, 5};
        CHECK_OK(ctx, kiln_graph_create(ctx, "one", &g));
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
        kiln_value y = kiln_all_reduce(g, kiln_exp(g, x), (kiln_reduce_kind)k);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        float in[15], a[15], b[15];
        for (int i = 0; i < 15; i++) in[i] = (float)i / 7 - 1;
        kiln_array *xa = NULL, *ya = NULL, *yb = NULL;
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, in, &xa));
        CHECK_OK(ctx, kiln_interpret(g, 1, &xa, 1, &ya));
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        CHECK_OK(ctx, kiln_executable_run(e, 1, &xa, 1, &yb));
        kiln_array_copy_to_host(ya, a, sizeof a);
        kiln_array_copy_to_host(yb, b, sizeof b);
        for (int i = 0; i < 15; i++) CHECK_NEAR(a[i], expf(in[i]), 1e-6);
        CHECK(!memcmp(a, b, sizeof a));
        kiln_array_destroy(xa), kiln_array_destroy(ya), kiln_array_destroy(yb);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
}

/* The text form keeps the reduction, and a wrong operand is the builder's error. */
static void test_text_and_errors(void) {
    const char *text = "graph t(%1: f32[4] \"x\") {\n"
                       "  %1 = parameter 0 \"x\" : f32[4]\n"
                       "  %2 = all_reduce(%1) max : f32[4]\n"
                       "  return (%2)\n}\n";
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_parse(ctx, text, strlen(text), "t.kir", &g));
    kiln_graph_destroy(g);
    g = NULL;
    const char *bad = "graph t(%1: f32[4] \"x\") {\n"
                      "  %1 = parameter 0 \"x\" : f32[4]\n"
                      "  %2 = all_reduce(%1) : f32[4]\n"
                      "  return (%2)\n}\n";
    CHECK_STATUS(kiln_graph_parse(ctx, bad, strlen(bad), "t.kir", &g),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "sum, mean or max");
    int64_t d = 4;
    CHECK_OK(ctx, kiln_graph_create(ctx, "bad", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_I32, 1, &d);
    kiln_value y = kiln_all_reduce(g, x, KILN_REDUCE_MEAN);
    CHECK_STATUS(kiln_graph_finish(g, 1, &y), KILN_STATUS_DTYPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_all_reduce");
    CHECK_CONTAINS(kiln_last_error(ctx), "needs a float dtype (f32, f64, bf16, f16), not i32");
    kiln_graph_destroy(g);

    /* a timeout that is not a number of seconds, refused by every constructor before it
     * makes anything (NCCL's before it loads the library) */
    kiln_comm *comms[2] = {NULL, NULL};
    int devs[2] = {0, 1};
    CHECK_STATUS(kiln_comm_create_local(ctx, 2, NAN, comms), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_comm_create_local: timeout nan s");
    CHECK(!comms[0] && !comms[1]);
    CHECK_STATUS(kiln_comm_create_nccl(ctx, 2, devs, 1e10, comms), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_comm_create_nccl: timeout 1e+10 s");
    CHECK_CONTAINS(kiln_last_error(ctx), "is not a number of seconds");
}

/* Each replica r has loss L_r = sum(w_r * all_reduce(x_r)); the program's loss is their
 * sum, so dL/dx_r is the all_reduce of the w's for SUM (mean for MEAN), and for MAX the
 * summed w where x_r holds the maximum. */
static void test_vjp(void) {
    kiln_comm *comms[RANKS];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, RANKS, 30, comms));
    const int64_t n = 6;
    uint64_t seed = test_seed(0xd1ff);
    for (int k = 0; k < 3; k++) {
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "vjp", &g));
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, &n);
        kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F64, 1, &n);
        int ax = 0;
        kiln_value loss = kiln_reduce_sum(
            g, kiln_mul(g, w, kiln_all_reduce(g, x, (kiln_reduce_kind)k)), 1, &ax, false);
        kiln_value dx;
        CHECK_OK(ctx, kiln_grad(g, loss, 1, &x, &dx));
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &dx));
        double xs[RANKS][6], ws[RANKS][6];
        replica r[RANKS];
        memset(r, 0, sizeof r);
        for (int i = 0; i < RANKS; i++) {
            for (int e = 0; e < n; e++)
                xs[i][e] = (double)test_rng_int(&seed, 1000) + 0.25 * i, /* distinct */
                    ws[i][e] = test_rng_unit(&seed) - 0.5;
            kiln_compile_options o = {.device = i, .comm = comms[i]};
            CHECK_OK(ctx, kiln_compile(g, &o, &r[i].e));
            CHECK_OK(ctx, kiln_array_create_on(ctx, i, KILN_DTYPE_F64, 1, &n, xs[i], &r[i].in[0]));
            CHECK_OK(ctx, kiln_array_create_on(ctx, i, KILN_DTYPE_F64, 1, &n, ws[i], &r[i].in[1]));
            r[i].n_in = 2;
        }
        run_all(r, RANKS);
        for (int i = 0; i < RANKS; i++) {
            CHECK_MSG(r[i].s == KILN_STATUS_OK, "rank %d: %s", i, r[i].err);
            double got[6] = {0};
            if (!r[i].s) kiln_array_copy_to_host(r[i].out, got, sizeof got);
            for (int e = 0; e < n; e++) {
                double sw = 0, mx = -INFINITY;
                for (int q = 0; q < RANKS; q++) sw += ws[q][e], mx = fmax(mx, xs[q][e]);
                double want = k == KILN_REDUCE_SUM    ? sw
                              : k == KILN_REDUCE_MEAN ? sw / RANKS
                              : xs[i][e] == mx        ? sw
                                                      : 0;
                CHECK_MSG(test_close(got[e], want, 1e-12, 1e-12),
                          "reduction %d rank %d: dx[%d] = %g, want %g", k, i, e, got[e], want);
            }
            kiln_array_destroy(r[i].in[0]), kiln_array_destroy(r[i].in[1]);
            kiln_array_destroy(r[i].out);
            kiln_executable_destroy(r[i].e);
        }
        kiln_graph_destroy(g);
    }
    for (int i = 0; i < RANKS; i++) kiln_comm_destroy(comms[i]);
}

typedef struct caller {
    kiln_comm *c;
    int64_t count;
    kiln_status s;
    char err[512];
} caller;

static void *call_all_reduce(void *p) {
    caller *a = p;
    float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    a->s = kiln_comm_all_reduce(a->c, KILN_DTYPE_F32, KILN_REDUCE_SUM, in, out, a->count);
    if (a->s) snprintf(a->err, sizeof a->err, "%s", kiln_last_error(ctx));
    return NULL;
}

static void *call_barrier(void *p) {
    caller *a = p;
    a->s = kiln_comm_barrier(a->c);
    if (a->s) snprintf(a->err, sizeof a->err, "%s", kiln_last_error(ctx));
    return NULL;
}

/* A rank that never arrives fails the others within the timeout, naming it; the group
 * stays failed. Ranks that disagree on the call fail alike, and a barrier against an
 * all-reduce is named so (it said "never arrived": an outside report). */
static void test_timeout_and_mismatch(void) {
    kiln_comm *comms[3];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, 3, 0.2, comms));
    caller a[3] = {{comms[0], 8, 0, ""}, {comms[1], 8, 0, ""}, {comms[2], 8, 0, ""}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, call_all_reduce, &a[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(a[i].s, KILN_STATUS_TIMEOUT);
        CHECK_CONTAINS(a[i].err, "rank(s) 2");
        CHECK_CONTAINS(a[i].err, "never arrived");
    }
    call_all_reduce(&a[2]); /* the late rank fails at once */
    CHECK_STATUS(a[2].s, KILN_STATUS_TIMEOUT);
    CHECK_CONTAINS(a[2].err, "rank(s) 2, which never arrived"); /* the cause, not its own wait */
    for (int i = 0; i < 3; i++) kiln_comm_destroy(comms[i]);

    CHECK_OK(ctx, kiln_comm_create_local(ctx, 2, 5, comms));
    caller m[2] = {{comms[0], 8, 0, ""}, {comms[1], 5, 0, ""}};
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, call_all_reduce, &m[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(m[i].s, KILN_STATUS_TIMEOUT);
        CHECK_CONTAINS(m[i].err, "different collectives");
    }
    for (int i = 0; i < 2; i++) kiln_comm_destroy(comms[i]);

    CHECK_OK(ctx, kiln_comm_create_local(ctx, 3, 0.2, comms));
    caller b[3] = {{comms[0], 8, 0, ""}, {comms[1], 8, 0, ""}, {comms[2], 8, 0, ""}};
    pthread_t tb[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&tb[i], NULL, i == 2 ? call_barrier : call_all_reduce, &b[i]);
    for (int i = 0; i < 3; i++) pthread_join(tb[i], NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(b[i].s, KILN_STATUS_TIMEOUT);
        CHECK_CONTAINS(b[i].err, "different collectives (a barrier against a collective)");
    }
    for (int i = 0; i < 3; i++) kiln_comm_destroy(comms[i]);
}

/* A compiled program whose peer never runs ends with the timeout, not a hang. */
static void test_program_timeout(void) {
    kiln_comm *comms[2];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, 2, 0.2, comms));
    kiln_graph *g = NULL;
    int64_t d = 16;
    CHECK_OK(ctx, kiln_graph_create(ctx, "lonely", &g));
    kiln_value y =
        kiln_all_reduce(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &d), KILN_REDUCE_SUM);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    replica r = {.n_in = 1};
    kiln_compile_options o = {.comm = comms[0]};
    CHECK_OK(ctx, kiln_compile(g, &o, &r.e));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, NULL, &r.in[0]));
    run_replica(&r);
    CHECK_STATUS(r.s, KILN_STATUS_TIMEOUT);
    CHECK_CONTAINS(r.err, "of 'lonely'");
    CHECK_CONTAINS(r.err, "rank(s) 1");
    CHECK(r.out == NULL);
    kiln_array_destroy(r.in[0]);
    kiln_executable_destroy(r.e);
    kiln_graph_destroy(g);
    for (int i = 0; i < 2; i++) kiln_comm_destroy(comms[i]);
}

/* ---------------------------------------------------------------- overlap ---- */

/* Runs rank i's executable e[i] on in[i] (n_in arguments each) in a thread per rank; the
 * outputs' bytes go to out[i] (bytes each). */
static void run_ranks(kiln_executable **e, int n, kiln_array *(*in)[2], int n_in, void **out,
                      size_t bytes) {
    replica r[RANKS];
    memset(r, 0, sizeof r);
    for (int i = 0; i < n; i++) {
        r[i].e = e[i], r[i].n_in = n_in;
        for (int a = 0; a < n_in; a++) r[i].in[a] = in[i][a];
    }
    run_all(r, n);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(r[i].s == KILN_STATUS_OK, "rank %d: %s", i, r[i].err);
        if (!r[i].s) kiln_array_copy_to_host(r[i].out, out[i], bytes);
        kiln_array_destroy(r[i].out);
    }
}

/* The kernel of the first all-reduce and its dot's, in e's plan. */
static uint32_t kernel_of_kind(const kiln_executable *e, int kind) {
    for (uint32_t k = 0; k < e->plan.n_kernels; k++)
        if ((int)e->plan.kernels[k].kind == kind) return k;
    return UINT32_MAX;
}

/* The all-reduce's operand dies at the all-reduce (nothing else reads it) and a dot of the
 * same size runs while the all-reduce is in flight: unless the plan keeps the operand live
 * until the wait, the dot's result takes its bytes, and the local transport, which reduces
 * at the wait, would sum the dot's result instead. out = all_reduce(3 x) + x @ x. */
static void test_overlap_keeps_buffers(void) {
    enum { N = 48, RK = 2 };
    kiln_comm *comms[RK];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, RK, 30, comms));
    int64_t d[2] = {N, N};
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "lifetime", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value r =
        kiln_all_reduce(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 3)), KILN_REDUCE_SUM);
    kiln_value y = kiln_add(g, r, kiln_matmul(g, x, x));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    float host[RK][N * N], got[RK][N * N];
    uint64_t seed = test_seed(0x11fe);
    kiln_executable *e[RK] = {0};
    kiln_array *in[RK][2] = {{0}};
    for (int i = 0; i < RK; i++) {
        test_fill_uniform(KILN_DTYPE_F32, N * N, host[i], &seed);
        kiln_compile_options o = {.keep_ir = true, .device = i, .comm = comms[i]};
        CHECK_OK(ctx, kiln_compile(g, &o, &e[i]));
        CHECK_OK(ctx, kiln_array_create_on(ctx, i, KILN_DTYPE_F32, 2, d, host[i], &in[i][0]));
    }
    if (!e[0] || !e[1]) goto done; /* a compile failed: CHECK_OK said why */
    /* the plan this test is about: the dot runs between the all-reduce's start and wait */
    const mem_plan *p = &e[0]->mem;
    uint32_t ka = kernel_of_kind(e[0], FK_COLLECTIVE), kd = kernel_of_kind(e[0], FK_DOT);
    CHECK(ka != UINT32_MAX && kd != UINT32_MAX);
    if (ka == UINT32_MAX || kd == UINT32_MAX) goto done;
    int32_t sa = (int32_t)p->step_of[ka], sd = (int32_t)p->step_of[kd];
    CHECK_MSG(sa < sd && sd < p->wait_step[ka],
              "all-reduce at step %d, waited for at %d; the dot at step %d", sa, p->wait_step[ka],
              sd);
    CHECK_OK(ctx, plan_check(e[0]->g, &e[0]->plan, p));
    char *text = kiln_executable_to_string(e[0]), line[160];
    snprintf(line, sizeof line,
             "collective writes %%%u (1 ops) reads %%%u (in flight until step %d)",
             e[0]->plan.kernels[ka].roots[0], e[0]->plan.kernels[ka].inputs[0], p->wait_step[ka]);
    CHECK_CONTAINS(text, line);
    kiln_string_free(ctx, text);
    const plan_buffer *op = &p->buffers[p->buffer_of[e[0]->plan.kernels[ka].inputs[0]]];
    CHECK_MSG(op->last >= p->wait_step[ka], "the operand is live in [%d, %d], the wait is at %d",
              op->def, op->last, p->wait_step[ka]);
    void *outs[RK] = {got[0], got[1]};
    for (int rep = 0; rep < 3; rep++) { /* the arena is reused: stale bytes would show */
        run_ranks(e, RK, in, 1, outs, sizeof got[0]);
        int bad = 0;
        for (int i = 0; i < RK && !bad; i++)
            for (int a = 0; a < N && !bad; a++)
                for (int b = 0; b < N && !bad; b++) {
                    double want = 3.0 * host[0][a * N + b] + 3.0 * host[1][a * N + b];
                    for (int k = 0; k < N; k++)
                        want += (double)host[i][a * N + k] * host[i][k * N + b];
                    double have = got[i][a * N + b];
                    bad = !test_close(have, want, 1e-4, 1e-4);
                    CHECK_MSG(!bad, "rank %d [%d, %d]: %g, want %g", i, a, b, have, want);
                }
    }
done:
    for (int i = 0; i < RK; i++) {
        kiln_array_destroy(in[i][0]);
        kiln_executable_destroy(e[i]);
        kiln_comm_destroy(comms[i]);
    }
    kiln_graph_destroy(g);
}

/* A backward-pass-like program: a chain of layers, each giving a "gradient" that is
 * all-reduced (mean) and applied to its own parameter at the end, plus a summed loss;
 * one output, the updates and the loss (broadcast) stacked. */
static kiln_graph *layered_program(int layers, int64_t n) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "layers", &g));
    int64_t d[2] = {n, n};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, d);
    kiln_value h = x, outs[8], grads[8];
    for (int l = 0; l < layers; l++) {
        h = kiln_tanh(g, kiln_matmul(g, h, w));
        grads[l] = kiln_all_reduce(g, kiln_mul(g, h, kiln_scalar(g, KILN_DTYPE_F32, 0.5 + l)),
                                   KILN_REDUCE_MEAN);
    }
    for (int l = 0; l < layers; l++)
        outs[l] = kiln_sub(g, w, kiln_mul(g, grads[l], kiln_scalar(g, KILN_DTYPE_F32, 0.1)));
    kiln_value loss = kiln_all_reduce(g, kiln_reduce_sum(g, h, 0, NULL, false), KILN_REDUCE_SUM);
    outs[layers] = kiln_broadcast_to(g, loss, 2, d);
    kiln_value all = kiln_concatenate(g, layers + 1, outs, 0);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &all));
    return g;
}

/* Overlapped and not: the same bits on every rank, at 2 and 4 ranks, over three runs. */
static void test_overlap_bitwise(void) {
    enum { L = 5, N = 40 };
    kiln_graph *g = layered_program(L, N);
    int64_t d[2] = {N, N};
    size_t bytes = (size_t)(L + 1) * N * N * sizeof(float);
    for (int n = 2; n <= RANKS; n += 2) {
        kiln_comm *comms[RANKS];
        CHECK_OK(ctx, kiln_comm_create_local(ctx, n, 30, comms));
        kiln_executable *e[2][RANKS] = {{0}};
        kiln_array *in[RANKS][2] = {{0}};
        void *out[2][RANKS];
        uint64_t seed = test_seed(0x0de7 + (uint64_t)n);
        bool compiled = true;
        for (int i = 0; i < n; i++) {
            float xs[N * N], ws[N * N];
            test_fill_uniform(KILN_DTYPE_F32, N * N, xs, &seed);
            test_fill_uniform(KILN_DTYPE_F32, N * N, ws, &seed);
            CHECK_OK(ctx, kiln_array_create_on(ctx, i, KILN_DTYPE_F32, 2, d, xs, &in[i][0]));
            CHECK_OK(ctx, kiln_array_create_on(ctx, i, KILN_DTYPE_F32, 2, d, ws, &in[i][1]));
            for (int m = 0; m < 2; m++) {
                kiln_compile_options o = {
                    .keep_ir = true, .device = i, .comm = comms[i], .disable_overlap = m};
                CHECK_OK(ctx, kiln_compile(g, &o, &e[m][i]));
                out[m][i] = calloc(1, bytes);
                if (!e[m][i]) compiled = false;
            }
        }
        if (!compiled) goto release; /* CHECK_OK said why */
        int overlapped = 0;          /* collectives of the overlapped plan waited for later */
        for (uint32_t k = 0; k < e[0][0]->plan.n_kernels; k++) {
            overlapped += e[0][0]->mem.wait_step[k] > (int32_t)e[0][0]->mem.step_of[k];
            CHECK(e[1][0]->mem.wait_step[k] == (int32_t)e[1][0]->mem.step_of[k]);
        }
        CHECK_MSG(overlapped >= L, "%d of the %d all-reduces overlap", overlapped, L + 1);
        CHECK_OK(ctx, plan_check(e[0][0]->g, &e[0][0]->plan, &e[0][0]->mem));
        kiln_comm_stats before, after;
        kiln_comm_get_stats(comms[0], &before);
        for (int rep = 0; rep < 3; rep++)
            for (int m = 0; m < 2; m++) run_ranks(e[m], n, in, 2, out[m], bytes);
        kiln_comm_get_stats(comms[0], &after);
        CHECK(after.calls - before.calls == 6 * (L + 1));
        CHECK(after.span_seconds >= after.seconds);
        CHECK(after.program_seconds > before.program_seconds &&
              after.program_seconds <= after.seconds);
        for (int i = 0; i < n; i++) {
            CHECK_MSG(!memcmp(out[0][i], out[1][i], bytes),
                      "%d ranks: rank %d's outputs differ with and without overlap", n, i);
            size_t loss_at = (size_t)L * N * N; /* the all-reduced loss, broadcast */
            CHECK_MSG(!memcmp((float *)out[0][i] + loss_at, (float *)out[0][0] + loss_at,
                              N * N * sizeof(float)),
                      "%d ranks: rank %d's loss differs from rank 0's", n, i);
        }
    release:
        for (int i = 0; i < n; i++) {
            for (int m = 0; m < 2; m++) kiln_executable_destroy(e[m][i]), free(out[m][i]);
            kiln_array_destroy(in[i][0]);
            kiln_array_destroy(in[i][1]);
            kiln_comm_destroy(comms[i]);
        }
    }
    kiln_graph_destroy(g);
}

/* Several all-reduces in flight when the peer never comes: the run ends with the timeout
 * naming it (nothing hangs), nothing is left in flight, and a later run says the group
 * failed. */
static void test_overlap_timeout(void) {
    kiln_comm *comms[2];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, 2, 0.2, comms));
    kiln_graph *g = layered_program(3, 8);
    kiln_executable *e = NULL;
    kiln_compile_options o = {.comm = comms[0]};
    CHECK_OK(ctx, kiln_compile(g, &o, &e));
    int64_t d[2] = {8, 8};
    replica r = {.e = e, .n_in = 2};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, NULL, &r.in[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, NULL, &r.in[1]));
    run_replica(&r);
    CHECK_STATUS(r.s, KILN_STATUS_TIMEOUT);
    CHECK_CONTAINS(r.err, "rank(s) 1, which never arrived");
    CHECK(r.out == NULL && comms[0]->in_flight == 0);
    run_replica(&r);
    CHECK_STATUS(r.s, KILN_STATUS_TIMEOUT);
    CHECK_CONTAINS(r.err, "already failed a collective");
    kiln_array_destroy(r.in[0]);
    kiln_array_destroy(r.in[1]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    for (int i = 0; i < 2; i++) kiln_comm_destroy(comms[i]);
}

static void test_mpi_absent_or_present(void) {
    kiln_comm *c = (kiln_comm *)1;
    if (kiln_comm_mpi_available()) { /* tests/mpi_train.sh runs it under mpiexec */
        CHECK_STATUS(kiln_comm_create_mpi(ctx, -NAN, &c), KILN_STATUS_INVALID_ARGUMENT);
        CHECK(c == NULL); /* refused before MPI is started */
        CHECK_CONTAINS(kiln_last_error(ctx), "kiln_comm_create_mpi: timeout");
        return;
    }
    CHECK_STATUS(kiln_comm_create_mpi(ctx, 1, &c), KILN_STATUS_UNIMPLEMENTED);
    CHECK(c == NULL);
    CHECK_CONTAINS(kiln_last_error(ctx), "built without MPI");
}

/* The group and the compile of a program with a collective, failing each allocation. */
static kiln_status fault_body(kiln_context *c, int *bad) {
    kiln_comm *comms[3] = {0};
    kiln_status s = kiln_comm_create_local(c, 3, 1, comms);
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    int64_t d[2] = {4, 8};
    if (!s) s = kiln_graph_create(c, "fault", &g);
    if (!s) {
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
        kiln_value y = kiln_exp(g, kiln_all_reduce(g, kiln_tanh(g, x), KILN_REDUCE_MEAN));
        s = kiln_graph_finish(g, 1, &y);
    }
    kiln_compile_options o = {.comm = comms[1]};
    if (!s) s = kiln_compile(g, &o, &e);
    if (!s) *bad = kiln_comm_get_rank(comms[1]) != 1;
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    for (int i = 0; i < 3; i++) kiln_comm_destroy(comms[i]);
    return s;
}

static void test_fault_sweep(const char *dir) {
    fault_ctx_case fc = {dir, fault_body, "the communicator has the wrong rank"};
    fault_sweep sw = {"comm+compile", fault_in_context, &fc, 2000, NULL};
    CHECK(fault_sweep_run(&sw) > 10);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-comm-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = dir;
    o.cpu_devices = RANKS;
    o.num_threads = RANKS;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    RUN(test_random_shapes);
    RUN(test_half_host_all_reduce);
    RUN(test_one_replica_identity);
    RUN(test_text_and_errors);
    RUN(test_vjp);
    RUN(test_timeout_and_mismatch);
    RUN(test_program_timeout);
    RUN(test_overlap_keeps_buffers);
    RUN(test_overlap_bitwise);
    RUN(test_overlap_timeout);
    RUN(test_mpi_absent_or_present);
    test_fault_sweep(dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_comm");
}
