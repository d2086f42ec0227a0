/* bench_dp.c — data-parallel training figures (bench/dp/run.sh): run under mpiexec -np N
 * (or alone for N = 1), trains the GPT of `kiln train` (its default model) for a few steps
 * with the global batch split over the ranks, then prints, from rank 0: the step time
 * (median), the collectives' time and bytes per step from the communicator's counters,
 * their share of the step, and, in the same run, an osu_allreduce-style timing of
 * MPI_Allreduce itself and of kiln_comm_all_reduce on one buffer of the step's gradient
 * bytes (the median of 20 after 5 warm-ups, a barrier before each).
 *
 * Usage: bench_dp [steps (30)] [global batch (16)] */
#include "../bench_util.h"
#include "gpt.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void die(kiln_context *ctx, const char *what, const char *err) {
    fprintf(stderr, "bench_dp: %s: %s\n", what, err ? err : kiln_last_error(ctx));
    exit(1);
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 30, batch = argc > 2 ? atoi(argv[2]) : 16;
    kiln_context_options co = {.num_threads = 1};
    kiln_context *ctx = NULL;
    char err[GPT_ERR_SIZE];
    bench_one_tier();
    if (kiln_context_create(&co, &ctx, err, sizeof err)) die(NULL, "context", err);
    kiln_comm *comm = NULL;
    if (kiln_comm_create_mpi(ctx, 300, &comm)) die(ctx, "kiln_comm_create_mpi", NULL);
    int rank = kiln_comm_get_rank(comm), n = kiln_comm_get_size(comm);
    gpt_train_options o;
    gpt_train_defaults(&o);
    o.batch = batch, o.steps = steps, o.eval_every = 0, o.out_dir = NULL;
    o.comm = n > 1 ? comm : NULL;
    o.check_every = steps;
    gpt_train_result r;
    if (gpt_train(ctx, &o, &r, err)) die(ctx, "gpt_train", err);
    kiln_comm_stats st;
    kiln_comm_get_stats(comm, &st);
    /* one step's gradients: every parameter, f32 */
    size_t grad_bytes = (size_t)r.params * 4, count = grad_bytes / 4;
    float *a = calloc(count, 4), *b = calloc(count, 4);
    double mpi_t[20], kiln_t[20];
    for (int rep = 0; rep < 25; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        MPI_Allreduce(a, b, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t1 = now();
        MPI_Barrier(MPI_COMM_WORLD);
        double t2 = now();
        if (kiln_comm_all_reduce(comm, KILN_DTYPE_F32, KILN_REDUCE_SUM, a, b, (int64_t)count))
            die(ctx, "kiln_comm_all_reduce", NULL);
        double t3 = now();
        if (rep >= 5) mpi_t[rep - 5] = t1 - t0, kiln_t[rep - 5] = t3 - t2;
    }
    if (rank == 0) {
        /* the step's collectives: per step, the gradients (one per parameter) and the loss,
         * plus the stop flag; the hash comparison once at the end */
        double per_step_ms = n > 1 ? st.seconds * 1e3 / steps : 0;
        double bytes_step = n > 1 ? (double)grad_bytes : 0;
        printf("ranks %d  batch %d/rank  params %lld  step %.2f ms (median)  collectives %.2f "
               "ms/step (%.0f%%)  %llu calls  reduced %.2f MB/step/rank  ring traffic %.2f "
               "MB/step/rank  MPI_Allreduce %.0f KB: %.3f ms  kiln_comm_all_reduce: %.3f ms\n",
               n, batch / n, (long long)r.params, r.ms_per_step_median, per_step_ms,
               r.ms_per_step_median > 0 ? 100 * per_step_ms / r.ms_per_step_median : 0,
               (unsigned long long)st.calls, bytes_step / 1e6,
               n > 1 ? 2.0 * (n - 1) / n * bytes_step / 1e6 : 0, grad_bytes / 1e3,
               median(mpi_t, 20) * 1e3, median(kiln_t, 20) * 1e3);
    }
    free(a), free(b);
    kiln_comm_destroy(comm);
    kiln_context_destroy(ctx);
    return 0;
}
