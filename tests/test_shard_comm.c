/* test_shard_comm.c — ZeRO's collectives, reduce_scatter and all_gather, over 2 and 4
 * in-process replicas against the math: the host calls (kiln_comm_reduce_scatter,
 * kiln_comm_all_gather) in f32, f64, i32, i64, bf16 and bool, and compiled programs
 * (kiln_reduce_scatter SUM and MEAN, kiln_all_gather, fused with the ops around them, with
 * and without overlap) whose every replica holds different inputs; their VJPs (each the
 * other's) against the derivative written out; the shape error, the compile's check of the
 * group size, and mismatched calls. The single-replica identity is test_registry's; the
 * NCCL transport's are test_nccl_mock's. */
#include "comm/comm.h"
#include "base/half.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 4

static kiln_context *ctx;

typedef struct replica {
    kiln_executable *e;
    kiln_comm *c;
    int n_in;
    kiln_array *in[3];
    kiln_array *out[2];
    int n_out;
    kiln_status s;
    char err[512];
    /* host calls */
    int coll; /* kn_coll */
    kiln_dtype t;
    kiln_reduce_kind k;
    const void *send;
    void *recv;
    int64_t per;
} replica;

static void *run_program(void *p) {
    replica *r = p;
    r->s = kiln_executable_run(r->e, r->n_in, r->in, r->n_out, r->out);
    if (r->s) snprintf(r->err, sizeof r->err, "%s", kiln_last_error(ctx));
    return NULL;
}

static void *run_host_call(void *p) {
    replica *r = p;
    r->s = r->coll == KN_COLL_REDUCE_SCATTER
               ? kiln_comm_reduce_scatter(r->c, r->t, r->k, r->send, r->recv, r->per)
               : kiln_comm_all_gather(r->c, r->t, r->send, r->recv, r->per);
    if (r->s) snprintf(r->err, sizeof r->err, "%s", kiln_last_error(ctx));
    return NULL;
}

static void run_all(replica *r, int n, void *(*fn)(void *)) {
    pthread_t t[MAX_RANKS];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, fn, &r[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static double get(kiln_dtype t, const void *p, int64_t i) {
    switch (t) {
    case KILN_DTYPE_BF16: return kn_bf16_to_f32(((const uint16_t *)p)[i]);
    case KILN_DTYPE_F32: return ((const float *)p)[i];
    case KILN_DTYPE_F64: return ((const double *)p)[i];
    case KILN_DTYPE_I32: return ((const int32_t *)p)[i];
    case KILN_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}

static void put(kiln_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case KILN_DTYPE_BF16: ((uint16_t *)p)[i] = kn_f32_to_bf16((float)v); break;
    case KILN_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case KILN_DTYPE_F64: ((double *)p)[i] = v; break;
    case KILN_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KILN_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

/* Rank q's element i: small integers, exact in every dtype and in any order of sums. */
static double value_of(kiln_dtype t, int q, int64_t i) {
    if (t == KILN_DTYPE_BOOL) return (double)((q + i) % 3 == 0);
    return (double)((q * 7 + i * 3) % 11) - 5;
}

/* The host calls over n ranks: rank r's shard of the sum (mean) of every rank's values;
 * every rank's values concatenated. */
static void check_host_calls(kiln_comm **comms, int n) {
    static const kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                     KILN_DTYPE_I64, KILN_DTYPE_BF16, KILN_DTYPE_BOOL};
    const int64_t per = 37; /* not a multiple of the transport's pieces */
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
        kiln_dtype t = dts[d];
        size_t item = kiln_dtype_itemsize(t);
        for (int coll = KN_COLL_REDUCE_SCATTER; coll <= KN_COLL_ALL_GATHER; coll++) {
            if (t == KILN_DTYPE_BOOL && coll == KN_COLL_REDUCE_SCATTER) continue;
            bool fl = t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || t == KILN_DTYPE_BF16;
            kiln_reduce_kind k = fl && d % 2 ? KILN_REDUCE_MEAN : KILN_REDUCE_SUM;
            int64_t ns = coll == KN_COLL_REDUCE_SCATTER ? per * n : per;
            int64_t nr = coll == KN_COLL_REDUCE_SCATTER ? per : per * n;
            replica r[MAX_RANKS];
            memset(r, 0, sizeof r);
            for (int q = 0; q < n; q++) {
                void *s = malloc((size_t)ns * item);
                for (int64_t i = 0; i < ns; i++) put(t, s, i, value_of(t, q, i));
                r[q] = (replica){.c = comms[q],
                                 .coll = coll,
                                 .t = t,
                                 .k = k,
                                 .send = s,
                                 .recv = calloc((size_t)nr, item),
                                 .per = per};
            }
            run_all(r, n, run_host_call);
            for (int q = 0; q < n; q++) {
                CHECK_MSG(!r[q].s, "rank %d of %d: %s", q, n, r[q].err);
                int bad = 0;
                for (int64_t i = 0; i < nr && !r[q].s && !bad; i++) {
                    double want = 0;
                    if (coll == KN_COLL_ALL_GATHER) {
                        want = value_of(t, (int)(i / per), i % per);
                    } else {
                        for (int p = 0; p < n; p++) want += value_of(t, p, q * per + i);
                        if (k == KILN_REDUCE_MEAN) want /= n;
                        if (t == KILN_DTYPE_BF16)
                            want = kn_bf16_to_f32(kn_f32_to_bf16((float)want));
                        if (t == KILN_DTYPE_F32) want = (float)want;
                    }
                    double have = get(t, r[q].recv, i);
                    bad = have != want;
                    CHECK_MSG(!bad, "%s %s over %d, rank %d: [%lld] is %g, want %g",
                              comm_coll_name((kn_coll)coll), kiln_dtype_name(t), n, q, (long long)i,
                              have, want);
                }
            }
            for (int q = 0; q < n; q++) free((void *)r[q].send), free(r[q].recv);
        }
    }
}

static void test_host_calls(void) {
    for (int n = 2; n <= MAX_RANKS; n += 2) {
        kiln_comm *comms[MAX_RANKS];
        CHECK_OK(ctx, kiln_comm_create_local(ctx, n, 10, comms));
        check_host_calls(comms, n);
        kiln_comm_stats st;
        kiln_comm_get_stats(comms[0], &st);
        CHECK(st.calls > 0 && st.bytes > 0);
        for (int q = 0; q < n; q++) kiln_comm_destroy(comms[q]);
    }
}

/* x [n * 3, 5] on each replica; y = reduce_scatter(2x + 1) * 3 (SUM or MEAN) and
 * z = all_gather(x * x) [n * n * 3, 5]: the math written out. */
static void check_program(int n, kiln_reduce_kind k, bool overlap) {
    kiln_comm *comms[MAX_RANKS];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, n, 10, comms));
    int64_t dims[2] = {3 * n, 5}, nx = 15 * n, ny = nx / n, nz = nx * n;
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "zero", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dims);
    kiln_value u = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 2)),
                            kiln_scalar(g, KILN_DTYPE_F32, 1));
    kiln_value y[2] = {
        kiln_mul(g, kiln_reduce_scatter(g, u, k, n), kiln_scalar(g, KILN_DTYPE_F32, 3)),
        kiln_all_gather(g, kiln_mul(g, x, x), n)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, y));
    replica r[MAX_RANKS];
    memset(r, 0, sizeof r);
    float *host[MAX_RANKS];
    for (int q = 0; q < n; q++) {
        host[q] = malloc((size_t)nx * sizeof(float));
        for (int64_t i = 0; i < nx; i++) host[q][i] = (float)value_of(KILN_DTYPE_F32, q, i);
        kiln_compile_options o = {.device = q, .comm = comms[q], .disable_overlap = !overlap};
        CHECK_OK(ctx, kiln_compile(g, &o, &r[q].e));
        CHECK_OK(ctx, kiln_array_create_on(ctx, q, KILN_DTYPE_F32, 2, dims, host[q], &r[q].in[0]));
        r[q].n_in = 1, r[q].n_out = 2;
    }
    run_all(r, n, run_program);
    float *got = malloc((size_t)nz * sizeof(float));
    for (int q = 0; q < n; q++) {
        CHECK_MSG(!r[q].s, "rank %d of %d: %s", q, n, r[q].err);
        if (r[q].s) continue;
        CHECK(kiln_array_rank(r[q].out[0]) == 2 && kiln_array_dim(r[q].out[0], 0) == 3 &&
              kiln_array_dim(r[q].out[0], 1) == 5);
        kiln_array_copy_to_host(r[q].out[0], got, (size_t)ny * sizeof(float));
        int bad = 0;
        for (int64_t i = 0; i < ny && !bad; i++) {
            double want = 0;
            for (int p = 0; p < n; p++) want += 2 * host[p][q * ny + i] + 1;
            if (k == KILN_REDUCE_MEAN) want /= n;
            want *= 3;
            bad = !test_close(got[i], want, 1e-6, 1e-6);
            CHECK_MSG(!bad, "reduce_scatter %d over %d, rank %d: [%lld] is %g, want %g", (int)k, n,
                      q, (long long)i, got[i], want);
        }
        kiln_array_copy_to_host(r[q].out[1], got, (size_t)nz * sizeof(float));
        for (int64_t i = 0; i < nz && !bad; i++) {
            double v = host[i / nx][i % nx];
            bad = got[i] != (float)(v * v);
            CHECK_MSG(!bad, "all_gather over %d, rank %d: [%lld] is %g, want %g", n, q,
                      (long long)i, got[i], v * v);
        }
    }
    for (int q = 0; q < n; q++) {
        kiln_array_destroy(r[q].in[0]);
        for (int j = 0; j < 2; j++) kiln_array_destroy(r[q].out[j]);
        kiln_executable_destroy(r[q].e);
        kiln_comm_destroy(comms[q]);
        free(host[q]);
    }
    free(got);
    kiln_graph_destroy(g);
}

static void test_programs(void) {
    for (int n = 2; n <= MAX_RANKS; n += 2)
        for (int k = KILN_REDUCE_SUM; k <= KILN_REDUCE_MEAN; k++)
            for (int ov = 0; ov < 2; ov++) check_program(n, (kiln_reduce_kind)k, ov);
}

/* Each replica's loss L_q = sum(w * reduce_scatter(x * x, MEAN)) + sum(v * all_gather(x));
 * the program's loss is their sum, so dL/dx_q = 2 x_q * all_gather(w) / n + (the sum over
 * replicas of their v, shard q): the VJPs are each other's, checked against that. */
static void test_vjp(void) {
    const int n = MAX_RANKS;
    kiln_comm *comms[MAX_RANKS];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, n, 10, comms));
    int64_t xd[1] = {2 * n}, wd[1] = {2}, vd[1] = {2 * n * n};
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "zero_vjp", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, xd);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F64, 1, wd);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F64, 1, vd);
    kiln_value rs = kiln_reduce_scatter(g, kiln_mul(g, x, x), KILN_REDUCE_MEAN, n);
    kiln_value loss =
        kiln_add(g, kiln_reduce_sum(g, kiln_mul(g, w, rs), 0, NULL, false),
                 kiln_reduce_sum(g, kiln_mul(g, v, kiln_all_gather(g, x, n)), 0, NULL, false));
    kiln_value dx;
    CHECK_OK(ctx, kiln_grad(g, loss, 1, &x, &dx));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &dx));
    double hx[MAX_RANKS][8], hw[MAX_RANKS][2], hv[MAX_RANKS][32];
    replica r[MAX_RANKS];
    memset(r, 0, sizeof r);
    for (int q = 0; q < n; q++) {
        for (int i = 0; i < 8; i++) hx[q][i] = 0.5 * q + 0.25 * i - 1;
        for (int i = 0; i < 2; i++) hw[q][i] = 1 + q + 0.5 * i;
        for (int i = 0; i < 32; i++) hv[q][i] = 0.125 * (q + 1) * (i % 5);
        kiln_compile_options o = {.device = q, .comm = comms[q]};
        CHECK_OK(ctx, kiln_compile(g, &o, &r[q].e));
        CHECK_OK(ctx, kiln_array_create_on(ctx, q, KILN_DTYPE_F64, 1, xd, hx[q], &r[q].in[0]));
        CHECK_OK(ctx, kiln_array_create_on(ctx, q, KILN_DTYPE_F64, 1, wd, hw[q], &r[q].in[1]));
        CHECK_OK(ctx, kiln_array_create_on(ctx, q, KILN_DTYPE_F64, 1, vd, hv[q], &r[q].in[2]));
        r[q].n_in = 3, r[q].n_out = 1;
    }
    run_all(r, n, run_program);
    for (int q = 0; q < n; q++) {
        CHECK_MSG(!r[q].s, "rank %d: %s", q, r[q].err);
        if (r[q].s) continue;
        double got[8];
        kiln_array_copy_to_host(r[q].out[0], got, sizeof got);
        for (int i = 0; i < 8; i++) {
            double want = 2 * hx[q][i] * hw[i / 2][i % 2] / n;
            for (int p = 0; p < n; p++) want += hv[p][q * 8 + i];
            CHECK_MSG(test_close(got[i], want, 1e-12, 1e-12), "rank %d: dx[%d] is %g, want %g", q,
                      i, got[i], want);
        }
    }
    for (int q = 0; q < n; q++) {
        kiln_array_destroy(r[q].in[0]), kiln_array_destroy(r[q].in[1]);
        kiln_array_destroy(r[q].in[2]), kiln_array_destroy(r[q].out[0]);
        kiln_executable_destroy(r[q].e);
        kiln_comm_destroy(comms[q]);
    }
    kiln_graph_destroy(g);
}

/* The text form: printed with the reduction and the group size, read back the same. */
static void test_text(void) {
    const char *text = "graph t(%1: f32[8] \"x\") {\n"
                       "  %1 = parameter 0 \"x\" : f32[8]\n"
                       "  %2 = reduce_scatter(%1) mean ranks=4 : f32[2]\n"
                       "  %3 = all_gather(%2) ranks=4 : f32[8]\n"
                       "  return (%3)\n}\n";
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_parse(ctx, text, strlen(text), "t.kir", &g));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (g && f) CHECK_OK(ctx, kiln_graph_print(g, f));
    if (f) fclose(f);
    CHECK_MSG(buf && strstr(buf, "reduce_scatter(%1) mean ranks=4 : f32[2]") &&
                  strstr(buf, "all_gather(%2) ranks=4 : f32[8]"),
              "printed: %s", buf ? buf : "(nothing)");
    free(buf);
    kiln_graph_destroy(g);
}

/* Bad shapes and group sizes are refused, naming the numbers; ranks calling different
 * collectives fail every rank of the group. */
static void test_errors(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "zero_bad", &g));
    int64_t dims[2] = {6, 3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dims);
    CHECK(kiln_reduce_scatter(g, x, KILN_REDUCE_SUM, 4).id == 0);
    CHECK_CONTAINS(kiln_graph_error(g), "leading axis (6) does not split into 4");
    kiln_graph_destroy(g);
    CHECK_OK(ctx, kiln_graph_create(ctx, "zero_size", &g));
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dims);
    kiln_value y = kiln_all_gather(g, x, 2);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    kiln_comm *comms[4];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, 4, 1, comms));
    kiln_executable *e = NULL;
    kiln_compile_options o = {.comm = comms[0]};
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "is over 2 ranks, but the program is compiled for 4");
    CHECK_STATUS(kiln_compile(g, NULL, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "no communicator");
    float buf[8] = {0}, out[8];
    CHECK_STATUS(kiln_comm_reduce_scatter(comms[0], KILN_DTYPE_BOOL, KILN_REDUCE_SUM, buf, out, 1),
                 KILN_STATUS_DTYPE);
    for (int q = 0; q < 4; q++) kiln_comm_destroy(comms[q]);
    kiln_graph_destroy(g);
    /* rank 0 gathers what rank 1 reduce-scatters: both fail, naming the two calls */
    CHECK_OK(ctx, kiln_comm_create_local(ctx, 2, 1, comms));
    replica r[2];
    memset(r, 0, sizeof r);
    float s0[4] = {1, 2, 3, 4}, r0[4], s1[4] = {1, 2, 3, 4}, r1[4];
    r[0] = (replica){.c = comms[0],
                     .coll = KN_COLL_ALL_GATHER,
                     .t = KILN_DTYPE_F32,
                     .send = s0,
                     .recv = r0,
                     .per = 2};
    r[1] = (replica){.c = comms[1],
                     .coll = KN_COLL_REDUCE_SCATTER,
                     .t = KILN_DTYPE_F32,
                     .send = s1,
                     .recv = r1,
                     .per = 2};
    run_all(r, 2, run_host_call);
    for (int q = 0; q < 2; q++) {
        CHECK(r[q].s != KILN_STATUS_OK);
        CHECK_CONTAINS(r[q].err, "different collectives");
    }
    for (int q = 0; q < 2; q++) kiln_comm_destroy(comms[q]);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-shard-comm-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = dir;
    o.cpu_devices = MAX_RANKS;
    o.num_threads = MAX_RANKS;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    RUN(test_host_calls);
    RUN(test_programs);
    RUN(test_vjp);
    RUN(test_text);
    RUN(test_errors);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_shard_comm");
}
