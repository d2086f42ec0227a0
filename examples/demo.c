/* demo.c — what `make demo` runs: traces a small two-layer network with a softmax head,
 * prints its IR, evaluates it with the reference interpreter and prints the result; shows
 * a traced mistake; then compiles a transformer block's forward pass (layer norm, causal
 * attention, MLP: examples/models.h) and shows its kernels before and after fusion, its
 * memory analysis (known before running), the time per call, the device peak measured
 * during a call against the plan, and where the plan's picture was written. */
#include "kiln.h"
#include "models.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRY(ctx, expr)                                                                             \
    do {                                                                                           \
        kiln_status s_ = (expr);                                                                   \
        if (s_ != KILN_STATUS_OK) {                                                                \
            fprintf(stderr, "demo: %s failed: %s\n", #expr, kiln_last_error(ctx));                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* x[4,3] -> dense(3->5) -> gelu -> dense(5->2) -> softmax over classes. */
static kiln_value trace_mlp(kiln_graph *g) {
    int64_t xd[] = {4, 3}, w1d[] = {3, 5}, b1d[] = {5}, w2d[] = {5, 2}, b2d[] = {2};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value w1 = kiln_parameter(g, "w1", KILN_DTYPE_F32, 2, w1d);
    kiln_value b1 = kiln_parameter(g, "b1", KILN_DTYPE_F32, 1, b1d);
    kiln_value w2 = kiln_parameter(g, "w2", KILN_DTYPE_F32, 2, w2d);
    kiln_value b2 = kiln_parameter(g, "b2", KILN_DTYPE_F32, 1, b2d);
    kiln_value h = kiln_gelu(g, kiln_add(g, kiln_matmul(g, x, w1), b1), true);
    kiln_value logits = kiln_add(g, kiln_matmul(g, h, w2), b2);
    return kiln_softmax(g, logits, -1);
}

static void fill(float *p, int n, float scale) {
    for (int i = 0; i < n; i++) p[i] = scale * (float)((i * 37 % 11) - 5) / 5.0f;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One line per kernel, in schedule order: what it writes, and over what if in place. */
static void print_kernels(kiln_executable *e) {
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    for (int s = 0; s < a.num_steps; s++)
        for (int i = 0; i < a.num_buffers; i++) {
            kiln_buffer_info b;
            kiln_executable_get_buffer_info(e, i, &b);
            if (b.first_step != s || b.kind == KILN_BUFFER_KIND_SCRATCH) continue;
            char shape[96] = "";
            for (int d = 0, k = 0; d < b.rank; d++)
                k += snprintf(shape + k, sizeof shape - (size_t)k, d ? ",%lld" : "%lld",
                              (long long)b.dims[d]);
            printf("  %2d: %%%-4d %-17s %s[%s]%s", s, b.node, b.op, kiln_dtype_name(b.dtype), shape,
                   b.kind == KILN_BUFFER_KIND_OUTPUT ? "  (output)" : "");
            if (b.shares_with) printf("  in place over %%%d", b.shares_with);
            printf("\n");
        }
}

/* Writes text to dir/name; returns 0 on success. */
static int write_text(const char *dir, const char *name, const char *text, char *path, size_t n) {
    snprintf(path, n, "%s%s", dir, name);
    FILE *f = fopen(path, "w");
    int bad = !f || !text || fputs(text, f) < 0;
    if (f) bad |= fclose(f) != 0;
    return bad;
}

/* The transformer block: compiled without and with fusion, planned, run, timed. */
static void transformer(kiln_context *ctx, const char *out_dir) {
    model m;
    TRY(ctx, model_build(ctx, model_find("transformer"), &m));
    printf("\n== a transformer block, compiled ==\n");
    printf("  %s: %d ops traced, %d parameters\n", models[0].what, kiln_graph_num_nodes(m.g),
           m.n_params);
    kiln_compile_options unfused = {.disable_fusion = true};
    kiln_executable *e0, *e;
    TRY(ctx, kiln_compile(m.g, &unfused, &e0));
    /* keep_ir: the report, the buffer listing, the SVG and the JSON below read it */
    TRY(ctx, kiln_compile(m.g, &(kiln_compile_options){.keep_ir = true}, &e));
    kiln_executable_info i0, i1;
    kiln_memory_analysis a0, a;
    kiln_executable_get_info(e0, &i0), kiln_executable_get_info(e, &i1);
    kiln_executable_get_memory_analysis(e0, &a0), kiln_executable_get_memory_analysis(e, &a);
    printf("  before fusion: %d kernels (one per op), planned peak %.2f MiB\n", i0.num_kernels,
           (double)a0.peak_bytes / 1048576);
    printf("  after fusion:  %d kernels (%d ops fused away), planned peak %.2f MiB; in schedule "
           "order:\n",
           i1.num_kernels, i1.num_fused_away, (double)a.peak_bytes / 1048576);
    print_kernels(e);

    char *report = kiln_executable_memory_report(e);
    char *cut = report ? strstr(report, "  value ") : NULL;
    if (cut) *cut = 0; /* kiln plan transformer --buffers lists every buffer */
    printf("\n== its memory analysis, before running ==\n%s",
           report ? report : "(out of memory)\n");
    kiln_string_free(ctx, report);

    kiln_array *args[MODEL_MAX_PARAMS], *out;
    TRY(ctx, model_args(ctx, &m, args));
    double t[21];
    kiln_memory_stats st;
    for (int r = 0; r < 21; r++) {
        kiln_device_reset_peak(ctx, 0);
        double t0 = now();
        TRY(ctx, kiln_executable_run(e, m.n_params, args, 1, &out));
        t[r] = now() - t0;
        kiln_device_get_memory_stats(ctx, 0, &st);
        kiln_array_destroy(out);
    }
    qsort(t + 1, 20, sizeof *t, cmp_double); /* the first call warms up */
    printf("\n== running it ==\n  time per call: %.3f ms (median of 20 calls)\n", t[10] * 1e3);
    printf("  device peak during a call: %llu bytes (planned %llu: %s)\n",
           (unsigned long long)st.peak_bytes_in_use, (unsigned long long)a.peak_bytes,
           st.peak_bytes_in_use == a.peak_bytes ? "as planned" : "DIFFERENT");

    char path[4096], jpath[4096];
    char *svg = kiln_executable_plan_svg(e), *json = kiln_executable_plan_json(e);
    if (!write_text(out_dir, "transformer_plan.svg", svg, path, sizeof path) &&
        !write_text(out_dir, "transformer_plan.json", json, jpath, sizeof jpath))
        printf("  the plan's picture: %s (and %s; `%skiln plan transformer` writes it too)\n", path,
               jpath, out_dir);
    else
        printf("  could not write the plan's picture to %s\n", path);
    kiln_string_free(ctx, svg), kiln_string_free(ctx, json);
    for (int i = 0; i < m.n_params; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e0), kiln_executable_destroy(e);
    kiln_graph_destroy(m.g);
}

int main(int argc, char **argv) {
    (void)argc;
    kiln_context *ctx;
    char err[512];
    if (kiln_context_create(NULL, &ctx, err, sizeof err) != KILN_STATUS_OK) {
        fprintf(stderr, "demo: %s\n", err);
        return 1;
    }
    kiln_graph *g;
    TRY(ctx, kiln_graph_create(ctx, "mlp", &g));
    kiln_value probs = trace_mlp(g);
    TRY(ctx, kiln_graph_finish(g, 1, &probs));
    printf("== traced program (%d ops) ==\n", kiln_graph_num_nodes(g));
    TRY(ctx, kiln_graph_print(g, stdout));

    float x[12], w1[15], b1[5], w2[10], b2[2];
    fill(x, 12, 1.0f), fill(w1, 15, 0.5f), fill(b1, 5, 0.1f), fill(w2, 10, 0.5f), fill(b2, 2, 0.1f);
    const int64_t shapes[5][2] = {{4, 3}, {3, 5}, {5, 0}, {5, 2}, {2, 0}};
    const int ranks[5] = {2, 2, 1, 2, 1};
    const float *data[5] = {x, w1, b1, w2, b2};
    kiln_array *args[5], *out;
    for (int i = 0; i < 5; i++)
        TRY(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, ranks[i], shapes[i], data[i], &args[i]));
    TRY(ctx, kiln_interpret(g, 5, args, 1, &out));

    float p[8];
    TRY(ctx, kiln_array_copy_to_host(out, p, sizeof p));
    printf("\n== result: class probabilities, f32[4,2] (reference interpreter) ==\n");
    for (int i = 0; i < 4; i++)
        printf("  row %d: %.6f %.6f  (sum %.6f)\n", i, p[2 * i], p[2 * i + 1],
               p[2 * i] + p[2 * i + 1]);

    /* A mistake is an error value with the op, the shapes and the line, never a crash. */
    kiln_graph *bad;
    TRY(ctx, kiln_graph_create(ctx, "bad", &bad));
    int64_t ad[] = {2, 3}, bd[] = {4};
    kiln_value a = kiln_parameter(bad, "a", KILN_DTYPE_F32, 2, ad);
    kiln_value b = kiln_parameter(bad, "b", KILN_DTYPE_F32, 1, bd);
    kiln_value c = kiln_add(bad, a, b);
    kiln_status s = kiln_graph_finish(bad, 1, &c);
    printf("\n== a traced mistake ==\n  %s: %s\n", kiln_status_name(s), kiln_last_error(ctx));
    kiln_graph_destroy(bad);

    kiln_array_destroy(out);
    for (int i = 0; i < 5; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);

    /* the picture goes next to the demo (build/ under `make demo`) */
    char dir[4096] = "";
    const char *slash = strrchr(argv[0], '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s/", (int)(slash - argv[0]), argv[0]);
    transformer(ctx, dir);
    kiln_context_destroy(ctx);
    return 0;
}
