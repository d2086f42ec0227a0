/* bench_jit.c — the compiler's figures (issue 4): an 8-op elementwise chain over 16M
 * floats, softmax and layer norm over 4096x4096, a 3-layer MLP forward at batch 256,
 * dispatch overhead of a cached jit call on a tiny function, and compile time cold and
 * from the disk cache; with the machine's copy bandwidth and sgemm rate measured in the
 * same run. Prints one "name value unit" line per figure (medians of --reps runs).
 * `bench_jit REPS dispatch` prints the dispatch figure alone. Not a test: it never fails
 * on time. */
#include "kiln.h"
#include "bench_util.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int reps = 7;
static kiln_context *ctx;

typedef struct copy_part {
    char *dst;
    const char *src;
    size_t n;
} copy_part;

static void *copy_main(void *arg) {
    copy_part *c = arg;
    memcpy(c->dst, c->src, c->n);
    return NULL;
}

/* STREAM's "scale" (b = s * a) over floats: plain loads and stores, as a generated kernel
 * does, where memcpy may use non-temporal stores. */
static void *scale_main(void *arg) {
    copy_part *c = arg;
    float *restrict d = (float *)(void *)c->dst;
    const float *restrict s = (const float *)(const void *)c->src;
    size_t n = c->n / sizeof(float);
    for (size_t i = 0; i < n; i++) d[i] = 3.0f * s[i];
    return NULL;
}

/* memcpy of 64 MiB split across `threads` threads (bytes read + written per second): the
 * ceiling for a memory-bound kernel that uses the same number of cores. */
static double copy_bandwidth(int threads, void *(*fn)(void *)) {
    size_t n = 64u << 20;
    char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n), memset(b, 2, n);
    double t[32];
    for (int r = 0; r < reps; r++) {
        pthread_t th[64];
        copy_part parts[64];
        double t0 = now();
        for (int i = 0; i < threads; i++) {
            size_t lo = n / (size_t)threads * (size_t)i,
                   hi = i + 1 == threads ? n : lo + n / (size_t)threads;
            parts[i] = (copy_part){b + lo, a + lo, hi - lo};
            pthread_create(&th[i], NULL, fn, &parts[i]);
        }
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        t[r] = now() - t0;
    }
    free(a), free(b);
    return 2.0 * (double)n / median(t, reps) / 1e9;
}

/* Writes 64 MiB (twice the last-level cache) so that a timed run does not find the
 * previous run's data in cache; NumPy's side does the same. */
static void flush_cache(void) {
    static char *junk;
    size_t n = 64u << 20;
    if (!junk) junk = malloc(n);
    memset(junk, (int)(now() * 1e3) & 0xff, n);
}

/* Times an executable over `reps` runs, caches flushed before each; the median seconds. */
static double time_exe(kiln_executable *e, int n_args, kiln_array **args, int n_outs) {
    kiln_array *outs[4];
    double t[32];
    DIE(ctx, kiln_executable_run(e, n_args, args, n_outs, outs)); /* warm up */
    for (int i = 0; i < n_outs; i++) kiln_array_destroy(outs[i]);
    for (int r = 0; r < reps; r++) {
        flush_cache();
        double t0 = now();
        DIE(ctx, kiln_executable_run(e, n_args, args, n_outs, outs));
        t[r] = now() - t0;
        for (int i = 0; i < n_outs; i++) kiln_array_destroy(outs[i]);
    }
    return median(t, reps);
}

static kiln_array *random_array(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *p = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    kiln_array *a;
    DIE(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank, dims, p, &a));
    free(p);
    return a;
}

static kiln_executable *compile(kiln_graph *g, kiln_value *outs, int n) {
    DIE(ctx, kiln_graph_finish(g, n, outs));
    kiln_executable *e;
    DIE(ctx, kiln_compile(g, NULL, &e));
    return e;
}

/* x*1.5 + 0.5, max(., 0), *x, -0.25, abs, min(., 4), *0.75, +y: 8 elementwise ops */
static void bench_chain(void) {
    int64_t n = 16 << 20;
    kiln_graph *g;
    kiln_graph_create(ctx, "chain", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n),
               y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, &n);
    kiln_value v = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1.5)),
                            kiln_scalar(g, KILN_DTYPE_F32, 0.5));
    v = kiln_mul(g, kiln_max(g, v, kiln_scalar(g, KILN_DTYPE_F32, 0)), x);
    v = kiln_abs(g, kiln_sub(g, v, kiln_scalar(g, KILN_DTYPE_F32, 0.25)));
    v = kiln_add(g,
                 kiln_mul(g, kiln_min(g, v, kiln_scalar(g, KILN_DTYPE_F32, 4)),
                          kiln_scalar(g, KILN_DTYPE_F32, 0.75)),
                 y);
    kiln_executable *e = compile(g, &v, 1);
    kiln_array *args[2] = {random_array(1, &n), random_array(1, &n)};
    double t = time_exe(e, 2, args, 1);
    printf("chain8_16M_ms %.3f\nchain8_16M_GBps %.2f\n", t * 1e3, 3.0 * 4 * (double)n / t / 1e9);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_executable_destroy(e), kiln_graph_destroy(g);
}

static void bench_rowwise(const char *name, int layer_norm) {
    int64_t d[2] = {4096, 4096};
    kiln_graph *g;
    kiln_graph_create(ctx, name, &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value y = layer_norm ? kiln_layer_norm(g, x, (kiln_value){0, 0}, (kiln_value){0, 0}, 1e-5)
                              : kiln_softmax(g, x, -1);
    kiln_executable *e = compile(g, &y, 1);
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_array *a = random_array(2, d);
    double t = time_exe(e, 1, &a, 1);
    printf("%s_4096x4096_ms %.3f\n%s_kernels %d\n", name, t * 1e3, name, info.num_kernels);
    kiln_array_destroy(a);
    kiln_executable_destroy(e), kiln_graph_destroy(g);
}

static void bench_mlp(void) {
    int64_t xd[2] = {256, 784}, w1[2] = {784, 1024}, w2[2] = {1024, 1024}, w3[2] = {1024, 10};
    int64_t b1 = 1024, b2 = 1024, b3 = 10;
    kiln_graph *g;
    kiln_graph_create(ctx, "mlp", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value W1 = kiln_parameter(g, "w1", KILN_DTYPE_F32, 2, w1),
               B1 = kiln_parameter(g, "b1", KILN_DTYPE_F32, 1, &b1);
    kiln_value W2 = kiln_parameter(g, "w2", KILN_DTYPE_F32, 2, w2),
               B2 = kiln_parameter(g, "b2", KILN_DTYPE_F32, 1, &b2);
    kiln_value W3 = kiln_parameter(g, "w3", KILN_DTYPE_F32, 2, w3),
               B3 = kiln_parameter(g, "b3", KILN_DTYPE_F32, 1, &b3);
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_matmul(g, x, W1), B1));
    h = kiln_relu(g, kiln_add(g, kiln_matmul(g, h, W2), B2));
    h = kiln_add(g, kiln_matmul(g, h, W3), B3);
    kiln_executable *e = compile(g, &h, 1);
    kiln_array *args[7] = {random_array(2, xd), random_array(2, w1),  random_array(1, &b1),
                           random_array(2, w2), random_array(1, &b2), random_array(2, w3),
                           random_array(1, &b3)};
    double t = time_exe(e, 7, args, 1);
    double flops = 2.0 * 256 * (784.0 * 1024 + 1024.0 * 1024 + 1024.0 * 10);
    printf("mlp3_b256_ms %.3f\nmlp3_b256_GFLOPs %.1f\n", t * 1e3, flops / t / 1e9);
    for (int i = 0; i < 7; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e), kiln_graph_destroy(g);
}

static int tiny_fn(kiln_graph *g, const kiln_value *a, int n, const void *st, void *u,
                   kiln_value *o) {
    (void)n, (void)st, (void)u;
    o[0] = kiln_add(g, kiln_mul(g, a[0], a[0]), kiln_scalar(g, KILN_DTYPE_F32, 1));
    return 1;
}

static void bench_dispatch(void) {
    kiln_jit *j;
    kiln_jit_options o = {.name = "tiny", .fn = tiny_fn};
    DIE(ctx, kiln_jit_create(ctx, &o, &j));
    int64_t n = 4;
    kiln_array *a = random_array(1, &n), *out;
    DIE(ctx, kiln_jit_call(j, 1, &a, NULL, 0, 1, &out));
    kiln_array_destroy(out);
    int iters = 20000;
    double t[32];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int i = 0; i < iters; i++) {
            kiln_jit_call(j, 1, &a, NULL, 0, 1, &out);
            kiln_array_destroy(out);
        }
        t[r] = (now() - t0) / iters;
    }
    printf("dispatch_cached_call_us %.3f\n", median(t, reps) * 1e6);
    kiln_array_destroy(a);
    kiln_jit_destroy(j);
}

static void bench_compile_time(void) {
    int64_t d[2] = {512, 512};
    double cold = 0, warm = 0;
    for (int pass = 0; pass < 2; pass++) {
        kiln_graph *g;
        kiln_graph_create(ctx, "compile", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
        kiln_value y =
            kiln_layer_norm(g, kiln_gelu(g, x, true), (kiln_value){0, 0}, (kiln_value){0, 0}, 1e-5);
        y = kiln_softmax(g, kiln_add(g, y, kiln_scalar(g, KILN_DTYPE_F32, (double)getpid())), -1);
        kiln_executable *e = compile(g, &y, 1);
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        if (pass == 0)
            cold = info.compile_seconds;
        else
            warm = info.compile_seconds;
        kiln_executable_destroy(e), kiln_graph_destroy(g);
    }
    printf("compile_cold_ms %.1f\ncompile_disk_cache_ms %.2f\n", cold * 1e3, warm * 1e3);
}

int main(int argc, char **argv) {
    if (argc > 1) reps = atoi(argv[1]) > 0 && atoi(argv[1]) < 32 ? atoi(argv[1]) : reps;
    char err[512];
    bench_one_tier();
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    if (argc > 2 && !strcmp(argv[2], "dispatch")) { /* that figure alone: bench_jit 7 dispatch */
        bench_dispatch();
        kiln_context_destroy(ctx);
        return 0;
    }
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    cores = cores < 1 ? 1 : cores > 64 ? 64 : cores;
    printf("memcpy_1thread_GBps %.2f\n", copy_bandwidth(1, copy_main));
    printf("memcpy_%dthreads_GBps %.2f\n", cores, copy_bandwidth(cores, copy_main));
    printf("stream_scale_%dthreads_GBps %.2f\n", cores, copy_bandwidth(cores, scale_main));
    const char *lib = "";
    printf("sgemm_1024_GFLOPs %.1f\n", sgemm_ceiling_of(reps, &lib));
    printf("sgemm_1024_library %s\n", lib);
    bench_chain();
    bench_rowwise("softmax", 0);
    bench_rowwise("layer_norm", 1);
    bench_mlp();
    bench_dispatch();
    bench_compile_time();
    kiln_context_destroy(ctx);
    return 0;
}
