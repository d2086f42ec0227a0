/* test_compile_random.c — random programs (randprog.h) compiled by kiln_compile and
 * compared with the reference interpreter, every one also held to its memory plan
 * (compare.h). By default 2000 programs from fixed seeds; KILN_TEST_PROGRAMS and
 * KILN_TEST_SEED change the count and the seeds for long runs.
 *
 * Programs are built 25 to a graph, and graph i depends only on the seed and i (its
 * argument data too), so a graph's result does not depend on which others ran: ctest runs
 * the graphs in shards (`test_compile_random K N` checks graphs i with i % N == K - 1) in
 * parallel, and a failing graph is repeated by its seed alone. */
#include "compare.h"
#include "randprog.h"

#include <stdlib.h>

enum { PER_GRAPH = 25 };

/* Builds graph gi of the run from seed s0, compiles it and compares it with the
 * reference; returns whether it agreed (a graph that does not build is a failure). */
static bool check_graph(kiln_context *ctx, uint64_t s0, int gi, int n_progs) {
    rp_state *s = (rp_state *)calloc(1, sizeof *s);
    if (!s) {
        CHECK_MSG(0, "out of host memory");
        return false;
    }
    s->seed = s0 * 6364136223846793005ull + (uint64_t)gi * 1442695040888963407ull + 1;
    uint64_t data = s->seed ^ 0x5851f42d4c957f2dull; /* the arguments' own stream */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "random", &g);
    for (int i = 0; i < n_progs; i++) rp_sub(s, g);
    bool ok = kiln_graph_finish(g, s->n_outs, s->outs) == KILN_STATUS_OK;
    if (!ok) {
        CHECK_MSG(0, "random graph %d (KILN_TEST_SEED=%llu) did not build: %s", gi,
                  (unsigned long long)s0, kiln_last_error(ctx));
    } else {
        kiln_array *args[RP_MAX_PARAMS];
        for (int i = 0; i < s->n_params; i++)
            args[i] =
                cmp_random_array(ctx, s->params[i].t, s->params[i].rank, s->params[i].dims, &data);
        ok = cmp_graph(ctx, g, s->n_params, args, NULL, 1e-4, NULL);
        if (!ok) kiln_graph_print(g, stderr);
        CHECK_MSG(ok, "random graph %d (KILN_TEST_SEED=%llu) differs from the reference", gi,
                  (unsigned long long)s0);
        for (int i = 0; i < s->n_params; i++) kiln_array_destroy(args[i]);
    }
    kiln_graph_destroy(g);
    free(s);
    return ok;
}

int main(int argc, char **argv) {
    int shard = 1, shards = 1;
    if (argc == 3) shard = atoi(argv[1]), shards = atoi(argv[2]);
    if (argc != 1 && (argc != 3 || shards < 1 || shard < 1 || shard > shards)) {
        fprintf(stderr, "usage: %s [K N]  (check shard K of N, 1 <= K <= N)\n", argv[0]);
        return 2;
    }
    char dir[] = "/tmp/kiln-test-compile-random-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir};
    bool tier1 = test_tier1(&o); /* KILN_TEST_TIER1: test.h */
    kiln_context *ctx = NULL;
    char err[256];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    test_tier1_hold(ctx, tier1);
    uint64_t s0 = test_seed(12345);
    int total = rp_program_count(2000), done = 0, failed = 0;
    int graphs = (total + PER_GRAPH - 1) / PER_GRAPH;
    for (int gi = shard - 1; gi < graphs && failed <= 3; gi += shards) {
        int n = total - gi * PER_GRAPH < PER_GRAPH ? total - gi * PER_GRAPH : PER_GRAPH;
        failed += !check_graph(ctx, s0, gi, n);
        done += n;
    }
    printf("random programs: %d of %d checked (shard %d of %d, KILN_TEST_SEED=%llu)\n", done, total,
           shard, shards, (unsigned long long)s0);
    kiln_context_destroy(ctx);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
    return test_summary("test_compile_random");
}
