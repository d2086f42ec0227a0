/* test_dp.c — data-parallel training of models/gpt: N replicas give the parameters one
 * process gets on the combined batch, to f32 tolerance, after 20 steps; replicas that
 * diverge are caught by the parameter hash; the all-reduces overlapped with the backward
 * pass give bitwise the parameters of blocking ones.
 *
 *   test_dp              4 in-process CPU devices (threads; also under ThreadSanitizer)
 *   test_dp mpi          under mpiexec -np N: one replica per process over MPI; rank 0
 *                        also trains the single process and compares (tests/mpi_dp.sh)
 *   test_dp mpi-overlap  under mpiexec: overlapped and blocking all-reduces, bitwise
 *   test_dp mpi-stall S [DIR]  under mpiexec: rank 1 stops itself (SIGSTOP) at its 4th
 *                        collective, or kills itself (SIGKILL) when S is "kill"; the
 *                        others must fail with the timeout error, which each also
 *                        writes to DIR/rank<r> before aborting the job (tests/mpi_dp.sh:
 *                        MPI_Abort may end the job before mpiexec forwards a rank's
 *                        stdout, so a file is the only record that cannot be lost) */
#include "gpt.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 20

static void options(gpt_train_options *o, const char *out) {
    gpt_train_defaults(o);
    o->model = (gpt_config){.vocab = 256, .context = 16, .layers = 1, .heads = 2, .channels = 32};
    o->batch = 8, o->steps = STEPS, o->warmup = 4, o->lr = 1e-2, o->clip = 1.0;
    o->eval_every = 0, o->out_dir = out, o->check_every = 5;
}

/* Trains one process on the whole batch into dir/one and compares its parameters with
 * dir/dp's (written by rank 0 of the data-parallel run). */
static void compare_with_one_process(kiln_context *ctx, const char *dir, double dp_loss) {
    char one[600], dp[600], err[GPT_ERR_SIZE];
    snprintf(one, sizeof one, "%s/one", dir);
    gpt_train_options o;
    options(&o, one);
    gpt_train_result r;
    CHECK_MSG(gpt_train(ctx, &o, &r, err) == KILN_STATUS_OK, "one process: %s", err);
    CHECK_MSG(test_close(r.final_loss, dp_loss, 1e-4, 1e-5), "loss %g (one process) vs %g",
              r.final_loss, dp_loss);
    int P = gpt_num_params(&o.model);
    kiln_array **a = calloc((size_t)(2 * P), sizeof *a), **b = a + P;
    snprintf(one, sizeof one, "%s/one/model.safetensors", dir);
    snprintf(dp, sizeof dp, "%s/dp/model.safetensors", dir);
    CHECK_MSG(gpt_checkpoint_load(ctx, one, &o.model, a, NULL, NULL, err) == KILN_STATUS_OK, "%s",
              err);
    CHECK_MSG(gpt_checkpoint_load(ctx, dp, &o.model, b, NULL, NULL, err) == KILN_STATUS_OK, "%s",
              err);
    double worst = 0, worst_abs = 0, sum_abs = 0;
    int64_t compared = 0;
    for (int i = 0; i < P && a[i] && b[i]; i++) {
        int64_t n = kiln_array_size(a[i]);
        float *x = malloc((size_t)n * 8), *y = x + n;
        kiln_array_copy_to_host(a[i], x, (size_t)n * 4);
        kiln_array_copy_to_host(b[i], y, (size_t)n * 4);
        for (int64_t k = 0; k < n; k++, compared++) {
            double e = fabs((double)x[k] - y[k]), d = e / (1e-3 + fabs((double)x[k]));
            if (d > worst) worst = d;
            if (e > worst_abs) worst_abs = e;
            sum_abs += e;
        }
        free(x);
    }
    /* f32: the gradients are summed in another order (per shard, then across ranks), and
     * AdamW divides by sqrt(v), so an element whose gradient is near zero may take a
     * rounding-sized step either way: the bound on the worst element is a few percent of
     * one step (lr 1e-2), the mean must be at rounding level */
    CHECK_MSG(compared > 1000 && worst_abs < 5e-4 && sum_abs / (double)compared < 1e-6,
              "%lld parameters: worst absolute difference %g, mean %g", (long long)compared,
              worst_abs, sum_abs / (double)compared);
    printf("test_dp: %lld parameters after %d steps: worst relative difference %.3g, worst "
           "absolute %.3g, mean absolute %.3g\n",
           (long long)compared, STEPS, worst, worst_abs, sum_abs / (double)compared);
    for (int i = 0; i < 2 * P; i++) kiln_array_destroy(a[i]);
    free(a);
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

/* How a run differs from options(): steps (0: STEPS), buckets, blocking all-reduces. */
typedef struct variant {
    int steps;
    int64_t bucket_bytes;
    bool no_overlap;
} variant;

/* Runs n replicas on devices 0..n-1; seed_skew changes rank 1's seed (diverging);
 * quit_after > 0 makes rank 1 leave after that many steps (a rank that dies). */
static void run_devices(kiln_context *ctx, int n, const char *out, int seed_skew, int quit_after,
                        const variant *v, replica *x) {
    kiln_comm *comms[8];
    CHECK_OK(ctx, kiln_comm_create_local(ctx, n, quit_after ? 1.0 : 60, comms));
    pthread_t th[8];
    for (int i = 0; i < n; i++) {
        x[i] = (replica){.ctx = ctx};
        options(&x[i].o, out);
        x[i].o.comm = comms[i], x[i].o.device = i;
        if (i == 1) x[i].o.seed += (uint64_t)seed_skew, x[i].o.stop_after = quit_after;
        if (quit_after) x[i].o.save_every = 1;
        if (v && v->steps) x[i].o.steps = v->steps, x[i].o.warmup = 1;
        if (v) x[i].o.bucket_bytes = v->bucket_bytes, x[i].o.no_overlap = v->no_overlap;
        pthread_create(&th[i], NULL, replica_main, &x[i]);
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++) kiln_comm_destroy(comms[i]);
}

/* Rank 0's checkpoints in dirs a and b hold bitwise the same parameters: how many are. */
static int same_parameters(kiln_context *ctx, const char *dir_a, const char *dir_b) {
    gpt_train_options o;
    options(&o, NULL);
    int P = gpt_num_params(&o.model), same = 0;
    kiln_array **a = calloc((size_t)(2 * P), sizeof *a), **b = a + P;
    char path[700], err[GPT_ERR_SIZE];
    for (int m = 0; m < 2; m++) {
        snprintf(path, sizeof path, "%s/model.safetensors", m ? dir_b : dir_a);
        CHECK_MSG(gpt_checkpoint_load(ctx, path, &o.model, m ? b : a, NULL, NULL, err) ==
                      KILN_STATUS_OK,
                  "%s", err);
    }
    for (int i = 0; i < P && a[i] && b[i]; i++) {
        size_t bytes = (size_t)kiln_array_size(a[i]) * 4;
        char *x0 = malloc(2 * bytes), *x1 = x0 + bytes;
        kiln_array_copy_to_host(a[i], x0, bytes);
        kiln_array_copy_to_host(b[i], x1, bytes);
        CHECK_MSG(!memcmp(x0, x1, bytes), "parameter %d differs with overlap (%s, %s)", i, dir_a,
                  dir_b);
        same += !memcmp(x0, x1, bytes);
        free(x0);
    }
    CHECK_MSG(same == P, "%d of %d parameters bitwise the same", same, P);
    for (int i = 0; i < 2 * P; i++) kiln_array_destroy(a[i]);
    free(a);
    return same;
}

/* The all-reduces overlapped with the backward pass (the default) and not: bitwise the
 * same parameters and loss, at 2 ranks with small buckets (several concatenations) and at
 * 4 with one all-reduce per gradient. */
static void overlap_bitwise(kiln_context *ctx, const char *dir) {
    static const variant vs[2][2] = {{{6, 8 << 10, false}, {6, 8 << 10, true}},
                                     {{6, -1, false}, {6, -1, true}}};
    for (int c = 0; c < 2; c++) {
        int n = c ? 4 : 2;
        replica x[4];
        double loss[2] = {0, 0};
        char out[2][600];
        for (int m = 0; m < 2; m++) {
            snprintf(out[m], sizeof out[m], "%s/ovl%d-%d", dir, n, m);
            run_devices(ctx, n, out[m], 0, 0, &vs[c][m], x);
            for (int i = 0; i < n; i++)
                CHECK_MSG(x[i].st == KILN_STATUS_OK, "%d ranks, overlap %s, rank %d: %s", n,
                          m ? "off" : "on", i, x[i].err);
            loss[m] = x[0].r.final_loss;
        }
        CHECK_MSG(loss[0] == loss[1], "%d ranks: loss %.9g with overlap, %.9g without", n, loss[0],
                  loss[1]);
        int same = same_parameters(ctx, out[0], out[1]);
        printf("test_dp: %d ranks, %d steps: %d parameters bitwise the same with and without "
               "overlap\n",
               n, vs[c][0].steps, same);
    }
}

static int in_process(void) {
    char dir[] = "/tmp/kiln-test-dp-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    kiln_context_options co;
    memset(&co, 0, sizeof co);
    co.ignore_environment = true;
    co.cache_dir = dir;
    co.cpu_devices = 4;
    co.num_threads = 4;
    kiln_context *ctx = NULL;
    char err[512], out[600];
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    replica x[4];
    snprintf(out, sizeof out, "%s/dp", dir);
    run_devices(ctx, 4, out, 0, 0, NULL, x);
    for (int i = 0; i < 4; i++) CHECK_MSG(x[i].st == KILN_STATUS_OK, "rank %d: %s", i, x[i].err);
    CHECK(x[0].r.steps_done == STEPS);
    if (!x[0].st) compare_with_one_process(ctx, dir, x[0].r.final_loss);

    overlap_bitwise(ctx, dir);

    /* a replica that started elsewhere: the hash check stops every rank at step 5 */
    snprintf(out, sizeof out, "%s/diverged", dir);
    run_devices(ctx, 4, out, 1, 0, NULL, x);
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(x[i].st, KILN_STATUS_INTERNAL);
        CHECK_CONTAINS(x[i].err, "step 5: the parameters of the 4 ranks differ");
    }

    /* a rank that leaves after 3 steps: the others fail in step 4 with the timeout error
     * naming it, and rank 0 keeps the checkpoint of step 3 (step 4 is torn: its kernels
     * may have updated the donated state before the collective failed) */
    snprintf(out, sizeof out, "%s/quit", dir);
    run_devices(ctx, 4, out, 0, 3, NULL, x);
    CHECK_MSG(x[1].st == KILN_STATUS_OK && x[1].r.steps_done == 3, "rank 1: %s", x[1].err);
    for (int i = 0; i < 4; i += 1 + (i == 0)) {
        CHECK_STATUS(x[i].st, KILN_STATUS_TIMEOUT);
        CHECK_CONTAINS(x[i].err, "step 4:");
        CHECK_CONTAINS(x[i].err, "for rank(s) 1, which never arrived");
    }
    char ckpt[700];
    snprintf(ckpt, sizeof ckpt, "%s/model.safetensors", out);
    kiln_safetensors *f = NULL;
    CHECK_OK(ctx, kiln_safetensors_open(ctx, ckpt, &f));
    if (f) CHECK(strcmp(kiln_safetensors_get_metadata(f, "step"), "3") == 0);
    kiln_safetensors_close(f);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_dp");
}

/* An MPI rank's context: one thread (the ranks share the cores), its own kernel cache in
 * dir (a mkdtemp template, filled in). NULL after saying why. */
static kiln_context *rank_context(char *dir) {
    if (!mkdtemp(dir)) return NULL;
    kiln_context_options co = {.ignore_environment = true, .cache_dir = dir, .num_threads = 1};
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    return ctx;
}

static int under_mpi(void) {
    char dir[] = "/tmp/kiln-test-dp-mpi-XXXXXX";
    kiln_context *ctx = rank_context(dir);
    if (!ctx) return 1;
    char err[GPT_ERR_SIZE], out[600];
    kiln_comm *comm = NULL;
    CHECK_OK(ctx, kiln_comm_create_mpi(ctx, 60, &comm));
    int rank = kiln_comm_get_rank(comm);
    snprintf(out, sizeof out, "%s/dp", dir);
    gpt_train_options o;
    options(&o, out);
    o.comm = comm;
    gpt_train_result r;
    kiln_status st = gpt_train(ctx, &o, &r, err);
    CHECK_MSG(st == KILN_STATUS_OK, "rank %d: %s", rank, err);
    if (!st && rank == 0) {
        printf("test_dp: %d MPI ranks\n", kiln_comm_get_size(comm));
        compare_with_one_process(ctx, dir, r.final_loss);
    }
    kiln_comm_destroy(comm);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_dp mpi");
}

/* Under mpiexec: the same 6 steps with the all-reduces overlapped and not (8 KiB buckets,
 * so there are several) give bitwise the same loss and parameters (rank 0's checkpoints;
 * the hash check keeps the other ranks' equal to rank 0's). */
static int under_mpi_overlap(void) {
    char dir[] = "/tmp/kiln-test-dp-ovl-XXXXXX";
    kiln_context *ctx = rank_context(dir);
    if (!ctx) return 1;
    char err[GPT_ERR_SIZE], out[2][600];
    kiln_comm *comm = NULL;
    CHECK_OK(ctx, kiln_comm_create_mpi(ctx, 60, &comm));
    int rank = kiln_comm_get_rank(comm);
    double loss[2] = {0, 0};
    for (int m = 0; m < 2; m++) {
        snprintf(out[m], sizeof out[m], "%s/ovl-%d", dir, m);
        gpt_train_options o;
        options(&o, out[m]);
        o.comm = comm, o.steps = 6, o.warmup = 1, o.check_every = 3;
        o.bucket_bytes = 8 << 10, o.no_overlap = m;
        gpt_train_result r;
        CHECK_MSG(gpt_train(ctx, &o, &r, err) == KILN_STATUS_OK, "rank %d: %s", rank, err);
        loss[m] = r.final_loss;
    }
    CHECK_MSG(loss[0] == loss[1], "rank %d: loss %.9g with overlap, %.9g without", rank, loss[0],
              loss[1]);
    if (rank == 0) {
        int same = same_parameters(ctx, out[0], out[1]);
        printf("test_dp: %d MPI ranks, 6 steps: %d parameters bitwise the same with and without "
               "overlap\n",
               kiln_comm_get_size(comm), same);
    }
    kiln_comm_destroy(comm);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_dp mpi-overlap");
}

static int stall(const char *how, const char *dir) {
    kiln_context *ctx = test_context();
    kiln_comm *comm = NULL;
    if (!ctx || kiln_comm_create_mpi(ctx, 2.0, &comm)) {
        fprintf(stderr, "test_dp: %s\n", ctx ? kiln_last_error(ctx) : "no context");
        return 1;
    }
    int rank = kiln_comm_get_rank(comm);
    double in[64] = {1}, outb[64];
    for (int i = 0; i < 10; i++) {
        if (rank == 1 && i == 3) raise(strcmp(how, "kill") ? SIGSTOP : SIGKILL);
        kiln_status st = kiln_comm_all_reduce(comm, KILN_DTYPE_F64, KILN_REDUCE_SUM, in, outb, 64);
        if (st) {
            /* the expected end: say so, then end the job (the stalled rank too) */
            printf("test_dp: rank %d: %s: %s\n", rank, kiln_status_name(st), kiln_last_error(ctx));
            fflush(stdout);
            if (dir) {
                char path[600];
                snprintf(path, sizeof path, "%s/rank%d", dir, rank);
                FILE *f = fopen(path, "w");
                if (f) {
                    fprintf(f, "test_dp: rank %d: %s: %s\n", rank, kiln_status_name(st),
                            kiln_last_error(ctx));
                    fclose(f);
                }
            }
            kiln_comm_abort(comm, 3);
        }
    }
    printf("test_dp: rank %d finished every collective: the stall went unnoticed\n", rank);
    kiln_comm_destroy(comm);
    kiln_context_destroy(ctx);
    return 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "mpi")) return under_mpi();
    if (argc > 1 && !strcmp(argv[1], "mpi-overlap")) return under_mpi_overlap();
    if (argc > 2 && !strcmp(argv[1], "mpi-stall")) return stall(argv[2], argc > 3 ? argv[3] : NULL);
    return in_process();
}
