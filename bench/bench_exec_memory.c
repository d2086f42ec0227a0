/* bench_exec_memory.c — the host memory a compiled program holds (issue 32): a GPT-2-style
 * training step (models/gpt: vocab 256, context 128, 4 layers, 4 heads, 256 channels,
 * batch 8, AdamW, f32, parameters and optimiser state donated as `kiln train` does)
 * traced, compiled and its graph destroyed; the context's host allocator counts the bytes
 * live, so the figure is exactly what the executable keeps (the backend's one-time state
 * is made by a first compile that is not counted). Also the planned peak and the
 * allocator's measured peak of one step, which a change to what the executable keeps must
 * not move; and what the step holds when compiled with keep_ir. Prints "name value unit"
 * lines. Usage: bench_exec_memory. Not a test. */
#include "gpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct counter {
    long long live, peak;
} counter;

static void *count_alloc(void *user, size_t size) {
    counter *c = user;
    void *p = malloc(size);
    if (p && (c->live += (long long)size) > c->peak) c->peak = c->live;
    return p;
}

static void *count_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
    counter *c = user;
    void *p = realloc(ptr, new_size);
    if (p && (c->live += (long long)new_size - (long long)old_size) > c->peak) c->peak = c->live;
    return p;
}

static void count_free(void *user, void *ptr, size_t size) {
    counter *c = user;
    if (ptr) c->live -= (long long)size;
    free(ptr);
}

static void die(kiln_context *ctx, kiln_status s, const char *what) {
    if (!s) return;
    fprintf(stderr, "bench_exec_memory: %s: %s\n", what, ctx ? kiln_last_error(ctx) : "");
    exit(1);
}

static const gpt_config cfg = {
    .vocab = 256, .context = 128, .layers = 4, .heads = 4, .channels = 256};
static const gpt_step_spec spec = {.batch = 8, .seq = 128, .weight_decay = 0.1, .clip = 1.0};

/* The step, compiled with the given options and its graph destroyed. */
static kiln_executable *compile_step(kiln_context *ctx, kiln_compile_options *o) {
    kiln_graph *g;
    char err[GPT_ERR_SIZE];
    die(ctx, kiln_graph_create(ctx, "gpt_step", &g), "graph");
    if (gpt_trace_step(g, &cfg, KILN_DTYPE_F32, &spec, err)) {
        fprintf(stderr, "bench_exec_memory: %s\n", err);
        exit(1);
    }
    int P = gpt_num_params(&cfg), donate[3 * 64 + 4];
    for (int i = 0; i < 3 * P; i++) donate[i] = i;
    o->n_donate = 3 * P, o->donate_argnums = donate;
    kiln_executable *e;
    die(ctx, kiln_compile(g, o, &e), "kiln_compile");
    kiln_graph_destroy(g);
    return e;
}

/* One step on zeros (the values do not matter here): the allocator's peak during it over
 * what it held before the arguments were made (the planned peak counts them). */
static uint64_t measured_peak(kiln_context *ctx, kiln_executable *e) {
    int P = gpt_num_params(&cfg), n = 3 * P + 4;
    kiln_array *args[3 * 64 + 4], *outs[3 * 64 + 1];
    kiln_memory_stats st;
    die(ctx, kiln_device_get_memory_stats(ctx, 0, &st), "stats");
    uint64_t before = st.bytes_in_use;
    for (int i = 0; i < n; i++) {
        int rank = 0;
        int64_t dims[2] = {0, 0};
        kiln_dtype t = KILN_DTYPE_F32;
        char name[GPT_NAME_MAX];
        if (i < 3 * P)
            gpt_param_info(&cfg, i % P, name, &rank, dims);
        else if (i < 3 * P + 2)
            rank = 2, dims[0] = spec.batch, dims[1] = spec.seq, t = KILN_DTYPE_I32;
        else
            t = i == n - 1 ? KILN_DTYPE_I32 : KILN_DTYPE_F32;
        die(ctx, kiln_array_create(ctx, t, rank, dims, NULL, &args[i]), "argument");
    }
    die(ctx, kiln_device_reset_peak(ctx, 0), "reset");
    die(ctx, kiln_executable_run(e, n, args, 3 * P + 1, outs), "run");
    die(ctx, kiln_device_get_memory_stats(ctx, 0, &st), "stats");
    for (int i = 0; i < 3 * P + 1; i++) kiln_array_destroy(outs[i]);
    for (int i = 0; i < n; i++) kiln_array_destroy(args[i]);
    return st.peak_bytes_in_use - before;
}

int main(void) {
    counter c = {0, 0};
    kiln_host_allocator ha = {count_alloc, count_realloc, count_free, &c};
    kiln_context_options co = {.host_allocator = &ha, .compile_tiers = 1}; /* the -O3 build */
    kiln_context *ctx;
    char err[512];
    if (kiln_context_create(&co, &ctx, err, sizeof err))
        return fprintf(stderr, "bench_exec_memory: %s\n", err), 1;
    kiln_compile_options o = {0};
    kiln_executable_destroy(compile_step(ctx, &o)); /* the backend's one-time state */
    long long base = c.live;
    c.peak = c.live;
    kiln_executable *e = compile_step(ctx, &o);
    long long held = c.live - base, compile_peak = c.peak - base;
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_memory_analysis ma;
    die(ctx, kiln_executable_get_memory_analysis(e, &ma), "memory analysis");
    printf("gpt_step_kernels %d\n", info.num_kernels);
    printf("gpt_step_host_bytes_held %lld B\n", held);
    printf("gpt_step_host_bytes_compile_peak %lld B\n", compile_peak);
    printf("gpt_step_planned_peak %llu B\n", (unsigned long long)ma.peak_bytes);
    printf("gpt_step_measured_peak %llu B\n", (unsigned long long)measured_peak(ctx, e));
    kiln_executable_destroy(e);
    base = c.live;
    o.keep_ir = true; /* what the reports that print the IR need kept */
    e = compile_step(ctx, &o);
    printf("gpt_step_host_bytes_held_keep_ir %lld B\n", c.live - base);
    kiln_executable_destroy(e);
    kiln_context_destroy(ctx);
    return 0;
}
