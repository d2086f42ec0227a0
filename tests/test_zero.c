/* test_zero.c — sharded optimiser state (ZeRO stages 1 and 2, gpt_train_options
 * .shard_optimizer) against the unsharded data-parallel run of models/gpt: the same losses
 * step by step and the same parameters to f32 rounding (clipping on, so the sharded global
 * norm is exercised); the planned optimiser state of a rank is 1/N of the unsharded
 * rank's (up to the padding of each parameter to a multiple of N), and the planned peak
 * is the measured one; checkpoints stay whole, so a sharded run resumes an unsharded one's
 * checkpoint and the other way round, continuing as the uninterrupted run does.
 *
 *   test_zero       2 and 4 in-process CPU devices
 *   test_zero mpi   under mpiexec -np N: the unsharded and the sharded run over MPI, one
 *                   after the other, compared on rank 0 (tests/mpi_zero.sh) */
#include "gpt.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS     12
#define MAX_RANKS 4

static void options(gpt_train_options *o, const char *out) {
    gpt_train_defaults(o);
    o->model = (gpt_config){.vocab = 256, .context = 16, .layers = 1, .heads = 2, .channels = 32};
    o->batch = 8, o->steps = STEPS, o->warmup = 3, o->lr = 1e-2, o->clip = 1.0;
    o->eval_every = 0, o->out_dir = out, o->check_every = 4;
}

typedef struct replica {
    kiln_context *ctx;
    gpt_train_options o;
    gpt_train_result r;
    kiln_status st;
    char err[GPT_ERR_SIZE];
} replica;

static void *replica_main(void *p) {
    replica *x = p;
    x->st = gpt_train(x->ctx, &x->o, &x->r, x->err);
    return NULL;
}

/* How a run differs from options(). */
typedef struct variant {
    bool shard;
    int stage;
    int64_t stop_after;
    const char *resume;
} variant;

/* n replicas on devices 0..n-1 into out; rank 0's result in *res. */
static void run_devices(kiln_context *ctx, int n, const char *out, variant v,
                        gpt_train_result *res) {
    kiln_comm *comms[MAX_RANKS];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, n, 60, comms));
    replica x[MAX_RANKS];
    pthread_t th[MAX_RANKS];
    for (int i = 0; i < n; i++) {
        x[i] = (replica){.ctx = ctx};
        options(&x[i].o, out);
        x[i].o.comm = comms[i], x[i].o.device = i;
        x[i].o.shard_optimizer = v.shard, x[i].o.zero_stage = v.stage;
        x[i].o.stop_after = v.stop_after, x[i].o.resume = v.resume;
        pthread_create(&th[i], NULL, replica_main, &x[i]);
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(x[i].st == KILN_STATUS_OK, "%d ranks, shard %d, rank %d: %s", n, v.shard, i,
                  x[i].err);
        kiln_comm_destroy(comms[i]);
    }
    *res = x[0].r;
}

/* The losses of dir/losses.csv, step by step; how many. */
static int read_losses(const char *dir, double *loss, int max) {
    char path[700], line[256];
    snprintf(path, sizeof path, "%s/losses.csv", dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "no %s", path);
    if (!f) return 0;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        int step;
        double l;
        if (sscanf(line, "%d,%lf", &step, &l) == 2 && step >= 1 && step <= max)
            loss[step - 1] = l, n++;
    }
    fclose(f);
    return n;
}

/* The largest difference between the parameters and the moments of the checkpoints in
 * dirs a and b, relative to the largest magnitude of each array. */
static double state_diff(kiln_context *ctx, const char *dir_a, const char *dir_b) {
    gpt_train_options o;
    options(&o, NULL);
    int P = gpt_num_params(&o.model);
    kiln_array **s = calloc((size_t)(6 * P), sizeof *s);
    char path[700], err[GPT_ERR_SIZE];
    for (int m = 0; m < 2; m++) {
        snprintf(path, sizeof path, "%s/model.safetensors", m ? dir_b : dir_a);
        kiln_array **x = s + 3 * P * m;
        CHECK_MSG(gpt_checkpoint_load(ctx, path, &o.model, x, x + P, x + 2 * P, err) ==
                      KILN_STATUS_OK,
                  "%s", err);
    }
    double worst = 0;
    for (int i = 0; i < 3 * P && s[i] && s[3 * P + i]; i++) {
        int64_t n = kiln_array_size(s[i]);
        float *a = malloc((size_t)n * 8), *b = a + n;
        kiln_array_copy_to_host(s[i], a, (size_t)n * 4);
        kiln_array_copy_to_host(s[3 * P + i], b, (size_t)n * 4);
        double big = 1e-30, d = 0;
        for (int64_t k = 0; k < n; k++) {
            big = fmax(big, fabs(a[k]));
            d = fmax(d, fabs((double)a[k] - b[k]));
        }
        worst = fmax(worst, d / big);
        free(a);
    }
    for (int i = 0; i < 6 * P; i++) kiln_array_destroy(s[i]);
    free(s);
    return worst;
}

/* Step by step, the same losses to f32 rounding; the same final state to f32 rounding.
 * The global norm of the clipping is summed per shard and then across the ranks, and the
 * kernels around the collectives are fused differently (a bias gradient's sum may be
 * split another way), so the gradients can differ in their last bits, and AdamW's
 * m / sqrt(v) turns that into a rounding-sized step either way for an element whose
 * gradient is near zero: relative to the largest element of its array, about 1e-4 after
 * 12 steps (test_dp sees the same between N ranks and one process). */
static void compare_runs(kiln_context *ctx, const char *a, const char *b, const char *what,
                         double tol) {
    double la[STEPS], lb[STEPS];
    int na = read_losses(a, la, STEPS), nb = read_losses(b, lb, STEPS);
    CHECK_MSG(na == STEPS && nb == STEPS, "%s: %d and %d steps logged", what, na, nb);
    for (int i = 0; i < STEPS && i < na && i < nb; i++)
        CHECK_MSG(fabs(la[i] - lb[i]) <= 2e-6 * fabs(la[i]), "%s: step %d loss %.9g, want %.9g",
                  what, i + 1, lb[i], la[i]);
    double d = state_diff(ctx, a, b);
    CHECK_MSG(tol ? d < tol : d == 0, "%s: parameters and moments differ by %.3g (relative)", what,
              d);
    printf("test_zero: %s: %d steps, losses equal, state within %.2g\n", what, STEPS, d);
}

/* The optimiser state the step plans for one rank, over the step (inputs and outputs),
 * and the whole plan's peak: sharded (ZeRO-2) and not, compiled for rank 0 of n. */
static void planned_state(kiln_context *ctx, int n, bool shard, uint64_t *state, uint64_t *peak) {
    gpt_train_options o;
    options(&o, NULL);
    kiln_comm *comms[MAX_RANKS];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, n, 60, comms));
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "zero_step", &g));
    gpt_step_spec spec = {.batch = o.batch / n,
                          .seq = o.model.context,
                          .weight_decay = o.weight_decay,
                          .clip = o.clip,
                          .all_reduce = true,
                          .shard_ranks = shard ? n : 0};
    char err[GPT_ERR_SIZE];
    CHECK_MSG(gpt_trace_step(g, &o.model, KILN_DTYPE_F32, &spec, err) == KILN_STATUS_OK, "%s", err);
    kiln_compile_options co = {.comm = comms[0]};
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, &co, &e));
    kiln_memory_analysis ma = {0};
    if (e) kiln_executable_get_memory_analysis(e, &ma);
    *state = ma.class_bytes_total[KILN_MEMORY_CLASS_OPTIMIZER_STATE];
    *peak = ma.peak_bytes;
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    for (int i = 0; i < n; i++) kiln_comm_destroy(comms[i]);
}

static void check_memory(kiln_context *ctx, int n) {
    gpt_train_options o;
    options(&o, NULL);
    uint64_t whole, part, pw, ps;
    planned_state(ctx, n, false, &whole, &pw);
    planned_state(ctx, n, true, &part, &ps);
    /* m and v, in and out: 4 arrays of 4-byte values; each parameter pads < n values */
    uint64_t pad = 4 * 4 * (uint64_t)gpt_num_params(&o.model) * (uint64_t)(n - 1);
    CHECK_MSG(whole > 0 && part * n >= whole && part * n <= whole + pad,
              "%d ranks: optimiser state %llu bytes sharded, %llu whole", n,
              (unsigned long long)part, (unsigned long long)whole);
    CHECK_MSG(ps < pw, "%d ranks: planned peak %llu sharded, %llu whole", n, (unsigned long long)ps,
              (unsigned long long)pw);
    printf("test_zero: %d ranks: planned optimiser state %llu -> %llu bytes (x%.3f), peak "
           "%llu -> %llu\n",
           n, (unsigned long long)whole, (unsigned long long)part, (double)part / (double)whole,
           (unsigned long long)pw, (unsigned long long)ps);
}

static int in_process(void) {
    char dir[] = "/tmp/kiln-test-zero-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    kiln_context_options co;
    memset(&co, 0, sizeof co);
    co.ignore_environment = true;
    co.cache_dir = dir;
    co.cpu_devices = MAX_RANKS;
    co.num_threads = MAX_RANKS;
    kiln_context *ctx = NULL;
    char err[512], a[600], b[600], c[600], what[64];
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    gpt_train_result r;
    for (int n = 2; n <= MAX_RANKS; n *= 2) {
        snprintf(a, sizeof a, "%s/whole%d", dir, n);
        run_devices(ctx, n, a, (variant){0}, &r);
        for (int stage = 2; stage >= (n == 2 ? 1 : 2); stage--) {
            snprintf(b, sizeof b, "%s/zero%d-%d", dir, stage, n);
            run_devices(ctx, n, b, (variant){.shard = true, .stage = stage}, &r);
            CHECK_MSG(r.planned_peak_bytes == r.measured_peak_bytes,
                      "ZeRO-%d over %d: planned %llu, measured %llu", stage, n,
                      (unsigned long long)r.planned_peak_bytes,
                      (unsigned long long)r.measured_peak_bytes);
            snprintf(what, sizeof what, "ZeRO-%d over %d devices", stage, n);
            compare_runs(ctx, a, b, what, 1e-3);
        }
        check_memory(ctx, n);
    }
    /* resume across the two: an unsharded run's checkpoint at step 5 continued sharded,
     * and a sharded one's continued unsharded, each as the uninterrupted run (whole2) */
    snprintf(a, sizeof a, "%s/whole2", dir);
    for (int m = 0; m < 2; m++) {
        snprintf(b, sizeof b, "%s/half%d", dir, m);
        run_devices(ctx, 2, b, (variant){.shard = m == 1, .stop_after = 5}, &r);
        CHECK(r.steps_done == 5);
        snprintf(c, sizeof c, "%s/half%d/model.safetensors", dir, m);
        snprintf(b, sizeof b, "%s/resumed%d", dir, m);
        run_devices(ctx, 2, b, (variant){.shard = m == 0, .resume = c}, &r);
        CHECK(r.steps_done == STEPS);
        double d = state_diff(ctx, a, b);
        CHECK_MSG(d < 1e-3, "resumed %s: state differs by %.3g", m ? "unsharded" : "sharded", d);
        printf("test_zero: a%s checkpoint resumed %s: state within %.2g of the uninterrupted "
               "run\n",
               m ? " sharded run's" : "n unsharded run's", m ? "unsharded" : "sharded", d);
    }
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_zero");
}

/* Under mpiexec: the unsharded then the sharded run over MPI, compared on rank 0. */
static int under_mpi(void) {
    char dir[] = "/tmp/kiln-test-zero-mpi-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    kiln_context_options co = {.ignore_environment = true, .cache_dir = dir, .num_threads = 1};
    kiln_context *ctx = NULL;
    char err[GPT_ERR_SIZE], out[2][600];
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    kiln_comm *comm = NULL;
    CHECK_OK(ctx, kiln_comm_create_mpi(ctx, 60, &comm));
    if (!comm) return test_summary("test_zero mpi");
    int rank = kiln_comm_get_rank(comm);
    for (int m = 0; m < 2; m++) {
        snprintf(out[m], sizeof out[m], "%s/%s", dir, m ? "zero" : "whole");
        gpt_train_options o;
        options(&o, out[m]);
        o.comm = comm, o.shard_optimizer = m == 1;
        o.bucket_bytes = 8 << 10; /* several buckets of reduce-scatters */
        gpt_train_result r;
        CHECK_MSG(gpt_train(ctx, &o, &r, err) == KILN_STATUS_OK, "rank %d: %s", rank, err);
    }
    if (rank == 0) {
        char what[64];
        snprintf(what, sizeof what, "ZeRO-2 over %d MPI ranks", kiln_comm_get_size(comm));
        compare_runs(ctx, out[0], out[1], what, 1e-3);
    }
    kiln_comm_destroy(comm);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_zero mpi");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "mpi")) return under_mpi();
    return in_process();
}
