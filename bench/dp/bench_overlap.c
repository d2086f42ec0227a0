/* bench_overlap.c — the all-reduces of the data-parallel step overlapped with the backward
 * pass against blocking ones (bench/dp/run_overlap.sh; bench/RESULTS.md, issue 17): trains
 * the GPT of `kiln train` (its default model) for a few steps, alternately with
 * kiln_compile_options.disable_overlap off and on, `reps` times each (the order flips every
 * repetition, so drift on a shared machine falls on both), and prints from rank 0, per
 * mode, the medians over the repetitions of: the step time (gpt_train's median), the time
 * rank 0 spent inside collective calls per step (blocked or reducing: kiln_comm_stats
 * .seconds; it includes the per-step stop-flag all-reduce of gpt_train, where a rank that
 * finished its step early waits for the others), the part of it inside the compiled step
 * (.program_seconds: what the step did not hide), and the mean time an all-reduce was in
 * flight, from its start to its completion (.span_seconds / .calls); and the step's planned
 * peak (overlap keeps buffers longer).
 *
 * Usage: bench_overlap mpi STEPS BATCH BUCKET_KB REPS        (under mpiexec -np N)
 *        bench_overlap local N STEPS BATCH BUCKET_KB REPS    (N threads, one CPU device each)
 * BUCKET_KB 0: one all-reduce per gradient. */
#include "../bench_util.h"
#include "gpt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPS  32
#define MAX_LOCAL 8

typedef struct job {
    kiln_context *ctx;
    gpt_train_options o;
    gpt_train_result r;
    kiln_status st;
    char err[GPT_ERR_SIZE];
} job;

static void *train(void *p) {
    job *j = p;
    j->st = gpt_train(j->ctx, &j->o, &j->r, j->err);
    return NULL;
}

static void fail(const char *what, const char *err) {
    fprintf(stderr, "bench_overlap: %s: %s\n", what, err);
    exit(1);
}

int main(int argc, char **argv) {
    bool mpi = argc > 1 && !strcmp(argv[1], "mpi");
    int a = mpi ? 2 : 3;
    if (argc != a + 4 || (!mpi && strcmp(argv[1], "local"))) {
        fprintf(stderr, "usage: bench_overlap mpi STEPS BATCH BUCKET_KB REPS\n"
                        "       bench_overlap local N STEPS BATCH BUCKET_KB REPS\n");
        return 2;
    }
    int n = mpi ? 0 : atoi(argv[2]), steps = atoi(argv[a]), batch = atoi(argv[a + 1]);
    int64_t bucket = atoll(argv[a + 2]) * 1024;
    int reps = atoi(argv[a + 3]);
    if (steps < 1 || batch < 1 || reps < 1 || reps > MAX_REPS || (!mpi && (n < 1 || n > MAX_LOCAL)))
        fail("arguments", "steps, batch, reps in [1, 32] and N in [1, 8] expected");
    kiln_context_options co = {.num_threads = mpi ? 1 : n, .cpu_devices = mpi ? 1 : n};
    kiln_context *ctx = NULL;
    char err[GPT_ERR_SIZE];
    bench_one_tier();
    if (kiln_context_create(&co, &ctx, err, sizeof err)) fail("context", err);
    kiln_comm *comms[MAX_LOCAL] = {0};
    if (mpi ? kiln_comm_create_mpi(ctx, 300, &comms[0])
            : kiln_comm_create_local(ctx, n, 300, comms))
        fail("communicator", kiln_last_error(ctx));
    if (mpi) n = kiln_comm_get_size(comms[0]);
    int rank = kiln_comm_get_rank(comms[0]), local = mpi ? 1 : n;
    double step_ms[2][MAX_REPS], coll_ms[2][MAX_REPS], span_ms[2][MAX_REPS], loss[2] = {0, 0};
    double prog_ms[2][MAX_REPS], peak_mib[2] = {0, 0};
    double calls[2] = {0, 0};
    for (int rep = 0; rep < reps; rep++)
        for (int i = 0; i < 2; i++) {
            int off = rep % 2 ? 1 - i : i; /* 0: overlapped, 1: blocking */
            job jobs[MAX_LOCAL];
            pthread_t th[MAX_LOCAL];
            kiln_comm_stats s0, s1;
            kiln_comm_get_stats(comms[0], &s0);
            for (int k = 0; k < local; k++) {
                jobs[k] = (job){.ctx = ctx};
                gpt_train_defaults(&jobs[k].o);
                jobs[k].o.batch = batch, jobs[k].o.steps = steps, jobs[k].o.eval_every = 0;
                jobs[k].o.out_dir = NULL, jobs[k].o.check_every = steps;
                jobs[k].o.comm = comms[k], jobs[k].o.device = mpi ? 0 : k;
                jobs[k].o.bucket_bytes = bucket ? bucket : -1, jobs[k].o.no_overlap = off;
                pthread_create(&th[k], NULL, train, &jobs[k]);
            }
            for (int k = 0; k < local; k++) pthread_join(th[k], NULL);
            for (int k = 0; k < local; k++)
                if (jobs[k].st) fail("gpt_train", jobs[k].err);
            kiln_comm_get_stats(comms[0], &s1);
            /* per step; compile and the first step are in the counters too, a few calls */
            step_ms[off][rep] = jobs[0].r.ms_per_step_median;
            coll_ms[off][rep] = (s1.seconds - s0.seconds) * 1e3 / steps;
            prog_ms[off][rep] = (s1.program_seconds - s0.program_seconds) * 1e3 / steps;
            calls[off] = (double)(s1.calls - s0.calls) / steps;
            span_ms[off][rep] =
                (s1.span_seconds - s0.span_seconds) * 1e3 / (double)(s1.calls - s0.calls);
            loss[off] = jobs[0].r.final_loss;
            peak_mib[off] = (double)jobs[0].r.planned_peak_bytes / 1048576.0;
        }
    if (rank == 0) {
        const char *how = mpi ? "MPI processes" : "in-process devices";
        for (int off = 0; off < 2; off++)
            printf("%d %s, bucket %s, %d steps x %d reps, overlap %-3s: step %.2f ms, in "
                   "collectives %.2f ms/step (in the step %.2f), %.1f calls/step, each in flight "
                   "%.3f ms (mean), planned "
                   "peak %.2f MiB, loss %.6f\n",
                   n, how, bucket ? argv[a + 2] : "per-gradient", steps, reps, off ? "off" : "on",
                   median(step_ms[off], reps), median(coll_ms[off], reps),
                   median(prog_ms[off], reps), calls[off], median(span_ms[off], reps),
                   peak_mib[off], loss[off]);
        if (loss[0] != loss[1]) printf("bench_overlap: the losses differ!\n");
    }
    for (int k = 0; k < local; k++) kiln_comm_destroy(comms[k]);
    kiln_context_destroy(ctx);
    return loss[0] != loss[1];
}
