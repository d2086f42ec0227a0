/* bench_sample_kv.c — `kiln sample`'s tokens per second with the KV cache and without
 * (gpt_sample_options.no_kv_cache), greedy, on a checkpoint (docs/training.md).
 *
 *   bench_sample_kv CHECKPOINT [PROMPT] [LENGTH]
 *
 * A run of LENGTH bytes minus a run of 20 bytes, each the fastest of 5, timed per path
 * and interleaved: what is left is the bytes' own cost, without the compile (which the
 * first runs leave in the cache) or the prefill. The outputs are compared too. */
#include "gpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double run(kiln_context *ctx, gpt_sample_options *o, unsigned char *out) {
    char err[GPT_ERR_SIZE];
    double t0 = now();
    if (gpt_sample(ctx, o, out, err)) {
        fprintf(stderr, "bench_sample_kv: %s\n", err);
        exit(1);
    }
    return now() - t0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_sample_kv CHECKPOINT [PROMPT] [LENGTH]\n");
        return 2;
    }
    const char *prompt = argc > 2 ? argv[2] : "The GNU General Public License ";
    int length = argc > 3 ? atoi(argv[3]) : 220;
    kiln_context *ctx = NULL;
    char err[256];
    /* kiln sample's default threads; the -O3 build from the first call */
    kiln_context_options co = {.num_threads = 1, .compile_tiers = 1};
    if (kiln_context_create(&co, &ctx, err, sizeof err)) {
        fprintf(stderr, "bench_sample_kv: %s\n", err);
        return 1;
    }
    unsigned char *out[2] = {malloc((size_t)length), malloc((size_t)length)};
    double best[2][2] = {{1e9, 1e9}, {1e9, 1e9}}; /* [path][short, long] */
    for (int rep = 0; rep < 5; rep++)
        for (int path = 0; path < 2; path++)
            for (int k = 0; k < 2; k++) {
                gpt_sample_options o = {.checkpoint = argv[1],
                                        .prompt = prompt,
                                        .length = k ? length : 20,
                                        .temperature = 0,
                                        .seed = 1,
                                        .no_kv_cache = path == 1};
                double t = run(ctx, &o, out[path]);
                if (t < best[path][k]) best[path][k] = t;
            }
    double tps[2];
    for (int path = 0; path < 2; path++) {
        tps[path] = (length - 20) / (best[path][1] - best[path][0]);
        printf("%-12s %8.1f tokens/s\n", path ? "recompute" : "kv cache", tps[path]);
    }
    printf("speedup      %8.1fx\ngreedy output %s\n", tps[0] / tps[1],
           memcmp(out[0], out[1], (size_t)length) ? "differs" : "equal");
    free(out[0]), free(out[1]);
    kiln_context_destroy(ctx);
    return 0;
}
