/* bench_devices.c — the device layer's figures (issue 12): the cost of dispatching a cached
 * jit call of a tiny function synchronously and asynchronously, measured side by side in
 * one run (reps alternate between the two contexts), and the asynchronous calls' throughput
 * once their queue has drained. Prints one "name value unit" line per figure (medians of
 * --reps runs). Not a test: it never fails on time.
 *
 *   bench_devices [reps=7] [iters=20000]
 *
 * "async enqueue" is what the caller's thread spends per call (checks, output arrays, the
 * task, the queue); the device's queue thread runs the calls meanwhile, and "async
 * throughput" divides the time until kiln_device_synchronize returns by the calls. */
#include "kiln.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>

static int tiny_fn(kiln_graph *g, const kiln_value *a, int n, const void *st, void *u,
                   kiln_value *o) {
    (void)n, (void)st, (void)u;
    o[0] = kiln_add(g, kiln_mul(g, a[0], a[0]), kiln_scalar(g, KILN_DTYPE_F32, 1));
    return 1;
}

typedef struct side {
    kiln_context *ctx;
    kiln_jit *j;
    kiln_array *a;
} side;

static side open_side(bool async) {
    side s;
    kiln_context_options o = {.async_dispatch = async};
    char err[512];
    bench_one_tier();
    if (kiln_context_create(&o, &s.ctx, err, sizeof err)) fprintf(stderr, "%s\n", err), exit(1);
    kiln_jit_options jo = {.name = "tiny", .fn = tiny_fn};
    DIE(s.ctx, kiln_jit_create(s.ctx, &jo, &s.j));
    int64_t n = 4;
    float x[4] = {1, 2, 3, 4};
    DIE(s.ctx, kiln_array_create(s.ctx, KILN_DTYPE_F32, 1, &n, x, &s.a));
    kiln_array *out;
    DIE(s.ctx, kiln_jit_call(s.j, 1, &s.a, NULL, 0, 1, &out)); /* compiles */
    DIE(s.ctx, kiln_array_block_until_ready(out));
    kiln_array_destroy(out);
    return s;
}

/* Seconds per call to enqueue (or, synchronously, run) iters calls, and per call until
 * the device is idle again. */
static void calls(side *s, int iters, double *per_call, double *per_call_drained) {
    double t0 = now();
    for (int i = 0; i < iters; i++) {
        kiln_array *out;
        DIE(s->ctx, kiln_jit_call(s->j, 1, &s->a, NULL, 0, 1, &out));
        kiln_array_destroy(out); /* an asynchronous call keeps it until it has run */
    }
    double t1 = now();
    DIE(s->ctx, kiln_device_synchronize(s->ctx, 0));
    *per_call = (t1 - t0) / iters;
    *per_call_drained = (now() - t0) / iters;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 7, iters = argc > 2 ? atoi(argv[2]) : 20000;
    if (reps < 1 || reps > 64 || iters < 1) return fprintf(stderr, "bad arguments\n"), 2;
    side sync = open_side(false), async = open_side(true);
    double ts[64], ta[64], tad[64], unused;
    for (int r = 0; r < reps; r++) {
        calls(&sync, iters, &ts[r], &unused);
        calls(&async, iters, &ta[r], &tad[r]);
    }
    printf("dispatch_sync_us %.3f\n", median(ts, reps) * 1e6);
    printf("dispatch_async_enqueue_us %.3f\n", median(ta, reps) * 1e6);
    printf("dispatch_async_throughput_us %.3f\n", median(tad, reps) * 1e6);
    side *both[2] = {&sync, &async};
    for (int i = 0; i < 2; i++) {
        kiln_array_destroy(both[i]->a);
        kiln_jit_destroy(both[i]->j);
        kiln_context_destroy(both[i]->ctx);
    }
    return 0;
}
