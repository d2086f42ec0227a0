/* bench_cuda.c — the GPU figures of issue 13, measured side by side in one process on the
 * first GPU (scripts/gpu-check.sh runs it; results go to bench/RESULTS.md):
 *
 *  - memory right after the first allocation: reserved bytes in the default mode (75% of
 *    the device preallocated, as JAX does), with mem_fraction 0.5, and in grow mode
 *    (KILN_PREALLOCATE=false: ~0);
 *  - a fused 8-op elementwise chain over 256M f32 in GB/s against a device-to-device copy
 *    of the same bytes in the same run (target: >= 85% of the copy);
 *  - softmax and layer norm over 8192 x 8192, f32 and bf16 (log_softmax and RMS norm in
 *    f32), and over rows of 256 and 512 (131072 x 256, 65536 x 512: several rows a
 *    block), against that copy's bandwidth (target: >= 80%), and an elementwise op over
 *    rows of 64 (several rows a block);
 *  - a GEMM-bound MLP training step (forward, kiln_grad, 6 products of 8192x4096x4096) in
 *    TFLOP/s against cuBLAS's own rate for that product measured bare through the same
 *    backend slot, exact f32, with KILN_MATMUL_PRECISION=tf32, and in bf16 (tensor cores,
 *    f32 accumulation; target: >= 90% of cuBLAS alone);
 *  - what the MLP step costs besides its products: its loss kernel alone (the mean of
 *    y*y over 8192x4096 to one scalar) against the same reduction kept per row, and the
 *    step with its loss replaced by per-row sums (no full reduction to a scalar);
 *  - causal attention's forward and backward passes together, bf16, the same shapes: the
 *    op with its fused gradient against the written-out products' VJP, time and planned
 *    temporaries;
 *  - causal attention's forward pass, B=16 T=256 and 1024 N=8 H=64, f32 and bf16: the
 *    fused kernel against the written-out products and softmax, and at bf16 the fused
 *    kernel on tensor cores (the default from compute capability 8.0) against the same
 *    kernel on the CUDA cores (KILN_ATTENTION_CUDA_CORES);
 *  - the GPT training step (models/gpt, gpt_trace_step) at B=16 T=256 L=6 H=8 C=512,
 *    parameters and AdamW moments donated: ms/step, tokens/s, planned vs measured peak;
 *  - a convolution layer's step (N=32 56x56 64->64 3x3 NHWC, forward and both gradients),
 *    f32 and bf16, on the device's implicit-GEMM kernel against im2col + cuBLAS
 *    (KILN_CONV_IM2COL): TFLOP/s and the temp memory each plans.
 *
 * Each figure is the median of several timed calls after warm-up; a call is a whole
 * kiln_executable_run (it returns once the device is done). Bytes counted are those the
 * fused kernels must move at least: every input read once, every output written once.
 * Prints one RESULT line per figure and a summary; exits 77 without a GPU. */
#include "bench_util.h"

#include "backend/device.h"
#include "base/half.h"
#include "runtime/array.h"
#include "gpt.h"
#include "cnn/conv_layer.h"

#include <math.h>
#include <string.h>

#define REPS 9

static int gpu = -1;

static kiln_context *make_context_with(kiln_alloc_mode mode, double fraction, bool tf32,
                                       bool attention_cuda_cores) {
    kiln_context_options o = {.ignore_environment = true, /* the modes are the figures */
                              .alloc_mode = mode,
                              .mem_fraction = fraction,
                              .matmul_tf32 = tf32,
                              .attention_cuda_cores = attention_cuda_cores,
                              .compile_tiers = 1}; /* time the -O3 build */
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) {
        fprintf(stderr, "bench_cuda: %s\n", err);
        exit(1);
    }
    return c;
}

static kiln_context *make_context(kiln_alloc_mode mode, double fraction, bool tf32) {
    return make_context_with(mode, fraction, tf32, false);
}

static int first_gpu(kiln_context *c) {
    for (int d = 0; d < kiln_device_count(c); d++)
        if (strncmp(kiln_device_name(c, d), "cuda:", 5) == 0) return d;
    return -1;
}

static void memory_figures(void) {
    static const struct {
        const char *name;
        kiln_alloc_mode mode;
        double fraction;
    } modes[] = {{"default (preallocate 0.75)", KILN_ALLOC_MODE_DEFAULT, 0},
                 {"mem_fraction 0.5", KILN_ALLOC_MODE_PREALLOCATE, 0.5},
                 {"KILN_PREALLOCATE=false (grow)", KILN_ALLOC_MODE_GROW, 0},
                 {"KILN_ALLOCATOR=platform", KILN_ALLOC_MODE_PLATFORM, 0}};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        kiln_context *c = make_context(modes[i].mode, modes[i].fraction, false);
        void *p = NULL;
        kiln_memory_stats st;
        if (kiln_device_alloc(c, gpu, 1 << 20, "first", &p) ||
            kiln_device_get_memory_stats(c, gpu, &st)) { /* say so, and go on to the rest */
            printf("RESULT memory %-32s failed: %s\n", modes[i].name, kiln_last_error(c));
            kiln_context_destroy(c);
            continue;
        }
        printf("RESULT memory %-32s reserved %8.2f GiB = %5.1f%% of %.2f GiB; in use %.2f MiB; "
               "driver: %.2f GiB free\n",
               modes[i].name, (double)st.bytes_reserved / 1073741824.0,
               100.0 * (double)st.bytes_reserved / (double)st.device_total_bytes,
               (double)st.device_total_bytes / 1073741824.0, (double)st.bytes_in_use / 1048576.0,
               (double)st.device_free_bytes / 1073741824.0);
        kiln_device_free(c, gpu, p);
        kiln_context_destroy(c);
    }
}

/* Arguments for g's parameters on the GPU, filled with small values (f32, or bf16 and f16
 * rounded from them). */
static void gpu_args(kiln_context *c, kiln_graph *g, kiln_array **args) {
    for (uint32_t i = 0; i < g->n_params; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        size_t bytes = 0;
        ir_shape_nbytes(&p->shape, p->dtype, &bytes);
        float *h = malloc(bytes ? bytes : 4);
        if (!h) exit(1);
        bool half = p->dtype == KILN_DTYPE_BF16 || p->dtype == KILN_DTYPE_F16;
        for (size_t k = 0; k < bytes / (half ? 2 : 4); k++) {
            float v = (float)((k * 2654435761u) % 1000) * 1e-3f;
            if (!half)
                h[k] = v;
            else
                ((uint16_t *)h)[k] =
                    p->dtype == KILN_DTYPE_BF16 ? kn_f32_to_bf16(v) : kn_f32_to_f16(v);
        }
        DIE(c, kiln_array_create_on(c, gpu, p->dtype, p->shape.rank, p->shape.dims, h, &args[i]));
        free(h);
    }
}

/* Median seconds of a run of e over args (outputs destroyed each time). */
static double time_runs(kiln_context *c, kiln_executable *e, int n_args, kiln_array **args,
                        int n_out) {
    double t[REPS];
    kiln_array *outs[64];
    for (int r = -2; r < REPS; r++) {
        double t0 = now();
        DIE(c, kiln_executable_run(e, n_args, args, n_out, outs));
        double dt = now() - t0;
        if (r >= 0) t[r] = dt;
        for (int i = 0; i < n_out; i++) kiln_array_destroy(outs[i]);
    }
    return median(t, REPS);
}

static kiln_executable *compile(kiln_context *c, kiln_graph *g) {
    kiln_compile_options o = {.device = gpu};
    kiln_executable *e = NULL;
    DIE(c, kiln_compile(g, &o, &e));
    return e;
}

/* The fused chain against a device copy of the same bytes; *copy_gbs: the copy's GB/s. */
static void chain_figures(kiln_context *c, double *ratio, double *copy_gbs_out) {
    int64_t n = (int64_t)256 << 20;
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, "chain256", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, &n);
    kiln_value v = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1.5)),
                            kiln_scalar(g, KILN_DTYPE_F32, 0.5));
    v = kiln_mul(g, kiln_max(g, v, kiln_scalar(g, KILN_DTYPE_F32, 0)), x);
    v = kiln_abs(g, kiln_sub(g, v, kiln_scalar(g, KILN_DTYPE_F32, 0.25)));
    v = kiln_add(g,
                 kiln_mul(g, kiln_min(g, v, kiln_scalar(g, KILN_DTYPE_F32, 4)),
                          kiln_scalar(g, KILN_DTYPE_F32, 0.75)),
                 y);
    DIE(c, kiln_graph_finish(g, 1, &v));
    kiln_executable *e = compile(c, g);
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_array *args[2];
    gpu_args(c, g, args);
    double t = time_runs(c, e, 2, args, 1);
    double bytes = 3.0 * (double)n * 4;
    /* the copy: 1 GiB device to device, read + written */
    kn_device *d = &c->devices[gpu];
    double tc[REPS];
    for (int r = -2; r < REPS; r++) {
        double t0 = now();
        DIE(c, device_copy(c, d, args[1]->data, d, args[0]->data, (size_t)n * 4));
        if (d->backend->synchronize) /* the CPU's slots return when done: it has none */
            DIE(c, d->backend->synchronize(d->state, d->index));
        if (r >= 0) tc[r] = now() - t0;
    }
    double copy = median(tc, REPS), copy_gbs = 2.0 * (double)n * 4 / copy / 1e9;
    double gbs = bytes / t / 1e9;
    *ratio = gbs / copy_gbs;
    *copy_gbs_out = copy_gbs;
    printf("RESULT chain 8 ops over 256M f32 (%d kernel%s): %.3f ms, %.0f GB/s = %.1f%% of the "
           "device copy (target >= 85%%)\n",
           info.num_kernels, info.num_kernels == 1 ? "" : "s", t * 1e3, gbs, 100 * *ratio);
    printf("RESULT device-to-device copy of 1 GiB: %.3f ms, %.0f GB/s (read + write)\n", copy * 1e3,
           copy_gbs);
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* A row kernel over rows x cols of dt (ROW_SOFTMAX ...: a block per row, or over short
 * rows several rows a block, the row held on chip): GB/s of one read and one write,
 * against the device copy's (copy_gbs). */
enum { ROW_SOFTMAX, ROW_LAYER_NORM, ROW_LOG_SOFTMAX, ROW_RMS_NORM };
static void row_kernel_figure(kiln_context *c, const char *name, int op, kiln_dtype dt,
                              int64_t rows, int64_t cols, double copy_gbs) {
    int64_t d2[2] = {rows, cols}, dv[1] = {cols};
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, name, &g));
    kiln_value x = kiln_parameter(g, "x", dt, 2, d2), y;
    if (op == ROW_LAYER_NORM || op == ROW_RMS_NORM) {
        kiln_value s = kiln_parameter(g, "scale", dt, 1, dv);
        kiln_value b = op == ROW_LAYER_NORM ? kiln_parameter(g, "bias", dt, 1, dv) : s;
        y = op == ROW_LAYER_NORM ? kiln_layer_norm(g, x, s, b, 1e-5)
                                 : kiln_rms_norm(g, x, s, -1, 1e-6);
    } else
        y = op == ROW_SOFTMAX ? kiln_softmax(g, x, -1) : kiln_log_softmax(g, x, -1);
    DIE(c, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = compile(c, g);
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_array *args[3];
    gpu_args(c, g, args);
    double t = time_runs(c, e, (int)g->n_params, args, 1);
    double bytes = 2.0 * (double)rows * (double)cols * (double)kiln_dtype_itemsize(dt);
    double gbs = bytes / t / 1e9;
    printf("RESULT %s %lldx%lld %s (%d kernel%s): %.3f ms, %.0f GB/s (one read + one write) = "
           "%.1f%% of the device copy (target >= 80%%)\n",
           name, (long long)rows, (long long)cols, kiln_dtype_name(dt), info.num_kernels,
           info.num_kernels == 1 ? "" : "s", t * 1e3, gbs, 100 * gbs / copy_gbs);
    for (uint32_t i = 0; i < g->n_params; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

static void rows_figure(kiln_context *c, const char *name, int op, kiln_dtype dt, double copy_gbs) {
    row_kernel_figure(c, name, op, dt, 8192, 8192, copy_gbs);
}

/* Softmax and layer norm over short rows, 32M elements each way: rows of 256 (a GPT's
 * attention scores, T = 256) and of 512 (its layer norms, C = 512), f32 and bf16, where a
 * block takes several rows, each a warp or two (schedule.c, row_groups). */
static void short_row_kernels_figure(kiln_context *c, double copy_gbs) {
    for (int d = 0; d < 2; d++) {
        kiln_dtype dt = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
        for (int64_t cols = 256; cols <= 512; cols *= 2) {
            int64_t rows = ((int64_t)32 << 20) / cols;
            row_kernel_figure(c, "softmax", ROW_SOFTMAX, dt, rows, cols, copy_gbs);
            row_kernel_figure(c, "layer_norm", ROW_LAYER_NORM, dt, rows, cols, copy_gbs);
        }
    }
}

/* An elementwise kernel over short rows, [4M, 64] f32 (a block takes 16 rows): GB/s of
 * one read and one write, against the device copy's. */
static void short_rows_figure(kiln_context *c, double copy_gbs) {
    int64_t d2[2] = {(int64_t)4 << 20, 64};
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, "short_rows", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d2);
    kiln_value y = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1.5)),
                            kiln_scalar(g, KILN_DTYPE_F32, 0.5));
    DIE(c, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = compile(c, g);
    kiln_array *args[1];
    gpu_args(c, g, args);
    double t = time_runs(c, e, 1, args, 1);
    double gbs = 2.0 * (double)d2[0] * 64 * 4 / t / 1e9;
    printf("RESULT elementwise over rows of 64, 4M x 64 f32: %.3f ms, %.0f GB/s (one read + one "
           "write) = %.1f%% of the device copy\n",
           t * 1e3, gbs, 100 * gbs / copy_gbs);
    kiln_array_destroy(args[0]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Causal attention written out over [B, N, T, H] operands: q k^T, scale, the causal where,
 * softmax, times v. */
static kiln_value written_attention(kiln_graph *g, kiln_value q, kiln_value k, kiln_value v,
                                    int64_t T, int64_t H, kiln_dtype dt) {
    kiln_value s = kiln_matmul(g, q, kiln_transpose(g, k, (int[]){0, 1, 3, 2}));
    s = kiln_mul(g, s, kiln_scalar(g, dt, 1 / sqrt((double)H)));
    s = kiln_where(g, kiln_make_causal_mask(g, T, T, KILN_DTYPE_BOOL), s,
                   kiln_scalar(g, dt, -INFINITY));
    return kiln_matmul(g, kiln_softmax(g, s, -1), v);
}

/* Causal attention's forward pass, B x T x N heads of H features, ms and TFLOP/s (the
 * products over the keys a query sees: 2 B N H T(T+1) flops): fused, the backend's
 * kernel (kiln_dot_product_attention); or written out (q k^T, scale, causal where,
 * softmax, times v, as [B, N, T, H]) and compiled without passes, so that it stays the
 * products and softmax kernels the GPU ran before it had the fused kernel. */
static double attention_figure(kiln_context *c, int64_t B, int64_t T, int64_t N, int64_t H,
                               kiln_dtype dt, bool fused, double fused_ms, const char *form) {
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, "attention", &g));
    int64_t d4[4] = {B, T, N, H}, w4[4] = {B, N, T, H};
    kiln_value q = kiln_parameter(g, "q", dt, 4, fused ? d4 : w4);
    kiln_value k = kiln_parameter(g, "k", dt, 4, fused ? d4 : w4);
    kiln_value v = kiln_parameter(g, "v", dt, 4, fused ? d4 : w4), y;
    if (fused) {
        kiln_attention_options o = {.is_causal = true};
        y = kiln_dot_product_attention(g, q, k, v, &o);
    } else {
        y = written_attention(g, q, k, v, T, H, dt);
    }
    DIE(c, kiln_graph_finish(g, 1, &y));
    kiln_compile_options o = {.device = gpu, .disable_passes = !fused};
    kiln_executable *e = NULL;
    DIE(c, kiln_compile(g, &o, &e));
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_array *args[3];
    gpu_args(c, g, args);
    double ms = time_runs(c, e, 3, args, 1) * 1e3;
    double tflops = 2.0 * (double)(B * N * H) * (double)T * (double)(T + 1) / ms / 1e9;
    printf("RESULT attention forward causal B=%lld T=%lld N=%lld H=%lld %s %s (%d kernel%s): "
           "%.3f ms, %.1f TFLOP/s",
           (long long)B, (long long)T, (long long)N, (long long)H, kiln_dtype_name(dt), form,
           info.num_kernels, info.num_kernels == 1 ? "" : "s", ms, tflops);
    if (fused_ms > 0)
        printf(" (%s takes %.2fx this time)", fused ? "the default kernel" : "fused",
               fused_ms / ms);
    printf("\n");
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return ms;
}

/* Causal attention's forward and backward pass together (out, and dq, dk, dv for a
 * cotangent ct), B x T x N heads of H features: fused (the op: its forward kernel and its
 * gradient's four kernels, where the GPU has them for dt) or written out (compiled without
 * passes: the products and softmax kernels and their VJP's). ms, and the planned
 * temporaries, which the written-out form's [B, N, T, T] arrays dominate. */
static double attention_grad_figure(kiln_context *c, int64_t B, int64_t T, int64_t N, int64_t H,
                                    kiln_dtype dt, bool fused, double fused_ms, const char *form) {
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, "attention_grad", &g));
    int64_t d4[4] = {B, T, N, H}, w4[4] = {B, N, T, H};
    kiln_value q = kiln_parameter(g, "q", dt, 4, fused ? d4 : w4);
    kiln_value k = kiln_parameter(g, "k", dt, 4, fused ? d4 : w4);
    kiln_value v = kiln_parameter(g, "v", dt, 4, fused ? d4 : w4);
    kiln_value ct = kiln_parameter(g, "ct", dt, 4, fused ? d4 : w4), y;
    if (fused) {
        kiln_attention_options o = {.is_causal = true};
        y = kiln_dot_product_attention(g, q, k, v, &o);
    } else {
        y = written_attention(g, q, k, v, T, H, dt);
    }
    kiln_value grads[3], outs[4];
    DIE(c, kiln_vjp(g, 1, &y, &ct, 3, (kiln_value[]){q, k, v}, grads));
    outs[0] = y, outs[1] = grads[0], outs[2] = grads[1], outs[3] = grads[2];
    DIE(c, kiln_graph_finish(g, 4, outs));
    kiln_compile_options o = {.device = gpu, .disable_passes = !fused};
    kiln_executable *e = NULL;
    DIE(c, kiln_compile(g, &o, &e));
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_memory_analysis m;
    DIE(c, kiln_executable_get_memory_analysis(e, &m));
    kiln_array *args[4];
    gpu_args(c, g, args);
    double ms = time_runs(c, e, 4, args, 4) * 1e3;
    printf("RESULT attention forward+backward causal B=%lld T=%lld N=%lld H=%lld %s %s (%d "
           "kernels): %.3f ms, %.1f MiB temporaries",
           (long long)B, (long long)T, (long long)N, (long long)H, kiln_dtype_name(dt), form,
           info.num_kernels, ms, (double)m.temp_bytes / (1 << 20));
    if (fused_ms > 0) printf(" (fused takes %.2fx this time)", fused_ms / ms);
    printf("\n");
    for (int i = 0; i < 4; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return ms;
}

/* cuBLAS alone through the backend's library op gemm: [m, k] x [k, n] of dt, TFLOP/s. */
static double bare_gemm(kiln_context *c, kiln_dtype dt, int64_t m, int64_t k, int64_t nn) {
    kn_device *d = &c->devices[gpu];
    void *a, *b, *out;
    size_t es = kiln_dtype_itemsize(dt);
    DIE(c, kiln_device_alloc(c, gpu, (size_t)(m * k) * es, "a", &a));
    DIE(c, kiln_device_alloc(c, gpu, (size_t)(k * nn) * es, "b", &b));
    DIE(c, kiln_device_alloc(c, gpu, (size_t)(m * nn) * es, "c", &out));
    kn_lib_desc g = {.op = KN_LIB_GEMM, .dtype = dt};
    g.gemm = (kn_gemm_desc){.lda = k, .ldb = nn, .batch = 1, .m = m, .n = nn, .k = k};
    double t[REPS];
    for (int r = -2; r < REPS; r++) {
        double t0 = now();
        DIE(c, d->backend->lib_run(d->state, d->index, &g, (void *[]){a, b, out, NULL}));
        if (d->backend->synchronize) /* the CPU's slots return when done: it has none */
            DIE(c, d->backend->synchronize(d->state, d->index));
        if (r >= 0) t[r] = now() - t0;
    }
    kiln_device_free(c, gpu, a);
    kiln_device_free(c, gpu, b);
    kiln_device_free(c, gpu, out);
    return 2.0 * (double)m * (double)k * (double)nn / median(t, REPS) / 1e12;
}

/* sum(x*x) over [8192, 4096] f32 to one scalar (per_row false: the MLP step's loss
 * kernel) or to one value per row: GB/s of the one read. A full reduction to a scalar is
 * one output element, so the printer gives it one block (CF_BLOCK): if this figure is far
 * below the per-row one, that kernel is what the MLP step spends besides its products. */
static double reduce_figure(kiln_context *c, bool per_row, int64_t rows, int64_t cols) {
    int64_t d2[2] = {rows, cols};
    int axis = 1;
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, per_row ? "sumsq_rows" : "sumsq_all", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d2);
    kiln_value y =
        kiln_reduce_sum(g, kiln_mul(g, x, x), per_row ? 1 : 0, per_row ? &axis : NULL, false);
    DIE(c, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = compile(c, g);
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);
    kiln_array *args[1];
    gpu_args(c, g, args);
    double t = time_runs(c, e, 1, args, 1);
    double bytes = (double)rows * (double)cols * 4;
    printf("RESULT sum(x*x) of %lldx%lld f32 %s (%d kernel%s): %.3f ms, %.0f GB/s (one read)\n",
           (long long)rows, (long long)cols, per_row ? "per row" : "to a scalar (the MLP loss)",
           info.num_kernels, info.num_kernels == 1 ? "" : "s", t * 1e3, bytes / t / 1e9);
    kiln_array_destroy(args[0]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return t;
}

/* loss = mean((gelu(x W1) W2)^2), gradients for W1 and W2: 2 products forward, 4 back.
 * rows_loss: the loss is the per-row sums instead (rank 1; its gradient is seeded with
 * ones by kiln_vjp), so the step has no reduction to a scalar: the difference between the
 * two figures is what that reduction costs inside the step. */
static void mlp_figure(kiln_context *c, const char *precision, bool rows_loss, const int64_t B,
                       const int64_t D, kiln_dtype dt) {
    int64_t dx[2] = {B, D}, dw[2] = {D, D};
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, "mlp_step", &g));
    kiln_value x = kiln_parameter(g, "x", dt, 2, dx);
    kiln_value w1 = kiln_parameter(g, "w1", dt, 2, dw);
    kiln_value w2 = kiln_parameter(g, "w2", dt, 2, dw);
    kiln_value y = kiln_matmul(g, kiln_gelu(g, kiln_matmul(g, x, w1), true), w2);
    int axis = 1;
    kiln_value loss = rows_loss ? kiln_reduce_sum(g, kiln_mul(g, y, y), 1, &axis, false)
                                : kiln_mean(g, kiln_mul(g, y, y), 0, NULL, false);
    kiln_value outs[3] = {loss}, wrt[2] = {w1, w2};
    if (rows_loss) {
        kiln_value seed = kiln_full(g, dt, 1, &B, 1.0);
        DIE(c, kiln_vjp(g, 1, &loss, &seed, 2, wrt, outs + 1));
    } else
        DIE(c, kiln_grad(g, loss, 2, wrt, outs + 1));
    DIE(c, kiln_graph_finish(g, 3, outs));
    kiln_executable *e = compile(c, g);
    kiln_array *args[3];
    gpu_args(c, g, args);
    double t = time_runs(c, e, 3, args, 3);
    double flops = 6 * 2.0 * (double)B * (double)D * (double)D;
    double cublas = bare_gemm(c, dt, B, D, D);
    printf("RESULT MLP step (%s%s, 6 products %lldx%lldx%lld): %.2f ms, %.1f TFLOP/s = %.1f%% "
           "of cuBLAS alone (%.1f TFLOP/s; the 6 products alone: %.2f ms)\n",
           precision, rows_loss ? ", per-row loss: no scalar reduction" : "", (long long)B,
           (long long)D, (long long)D, t * 1e3, flops / t / 1e12, 100 * flops / t / 1e12 / cublas,
           cublas, flops / cublas / 1e9);
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The GPT training step of `kiln train` (models/gpt) on the GPU: parameters from
 * gpt_init_params copied there, moments zero, everything donated as train.c does; a fixed
 * random batch (the figure is time, not learning). */
static void gpt_figure(kiln_context *c, const gpt_config cfg, const int B, const int T,
                       bool keep_cheap) {
    enum { WARM = 3, STEPS = 20 };
    char err[GPT_ERR_SIZE];
    int P = gpt_num_params(&cfg), n_args = 3 * P + 4, n_out = 3 * P + 1;
    kiln_graph *g = NULL;
    DIE(c, kiln_graph_create(c, "gpt_train_step", &g));
    gpt_step_spec spec = {.batch = B, .seq = T, .weight_decay = 0.1, .clip = 1.0};
    if (gpt_trace_step(g, &cfg, KILN_DTYPE_F32, &spec, err)) {
        printf("RESULT GPT step: tracing failed: %s\n", err);
        kiln_graph_destroy(g);
        return;
    }
    int donate[3 * 76];
    kiln_array *state[3 * 76], *host[76], *args[3 * 76 + 4], *outs[3 * 76 + 1];
    if (3 * P > (int)(sizeof donate / sizeof *donate)) {
        printf("RESULT GPT step: %d parameters are more than this figure holds\n", P);
        kiln_graph_destroy(g);
        return;
    }
    for (int i = 0; i < 3 * P; i++) donate[i] = i;
    kiln_compile_options co = {.device = gpu,
                               .n_donate = 3 * P,
                               .donate_argnums = donate,
                               .disable_cheap_remat = keep_cheap};
    double t0 = now();
    kiln_executable *e = NULL;
    DIE(c, kiln_compile(g, &co, &e));
    double compile_s = now() - t0;
    kiln_graph_destroy(g);
    kiln_memory_analysis ma;
    kiln_executable_get_memory_analysis(e, &ma);
    kiln_executable_info info;
    kiln_executable_get_info(e, &info);

    if (gpt_init_params(c, &cfg, KILN_DTYPE_F32, 1234, host, err)) {
        printf("RESULT GPT step: %s\n", err);
        kiln_executable_destroy(e);
        return;
    }
    for (int i = 0; i < P; i++) {
        char name[GPT_NAME_MAX];
        int rank;
        int64_t dims[KILN_MAX_RANK], n = 1;
        gpt_param_info(&cfg, i, name, &rank, dims);
        for (int k = 0; k < rank; k++) n *= dims[k];
        float *h = malloc((size_t)n * 4);
        if (!h) exit(1);
        DIE(c, kiln_array_copy_to_host(host[i], h, (size_t)n * 4));
        DIE(c, kiln_array_create_on(c, gpu, KILN_DTYPE_F32, rank, dims, h, &state[i]));
        DIE(c, kiln_array_create_on(c, gpu, KILN_DTYPE_F32, rank, dims, NULL, &state[P + i]));
        DIE(c, kiln_array_create_on(c, gpu, KILN_DTYPE_F32, rank, dims, NULL, &state[2 * P + i]));
        free(h);
        kiln_array_destroy(host[i]);
    }
    int32_t *tok = malloc((size_t)B * T * 2 * sizeof *tok);
    if (!tok) exit(1);
    uint64_t rng = 42;
    for (int i = 0; i < 2 * B * T; i++) tok[i] = (int32_t)(gpt_rng_next(&rng) % 256);
    int64_t bt[2] = {B, T};
    double t[STEPS] = {0};
    uint64_t measured = 0;
    for (int s = -WARM; s < STEPS; s++) {
        for (int i = 0; i < 3 * P; i++) args[i] = state[i];
        float lr = 3e-4f;
        int32_t step = s + WARM + 1;
        DIE(c, kiln_array_create_on(c, gpu, KILN_DTYPE_I32, 2, bt, tok, &args[3 * P]));
        DIE(c, kiln_array_create_on(c, gpu, KILN_DTYPE_I32, 2, bt, tok + B * T, &args[3 * P + 1]));
        DIE(c, kiln_array_create_on(c, gpu, KILN_DTYPE_F32, 0, NULL, &lr, &args[3 * P + 2]));
        DIE(c, kiln_array_create_on(c, gpu, KILN_DTYPE_I32, 0, NULL, &step, &args[3 * P + 3]));
        DIE(c, kiln_device_reset_peak(c, gpu));
        double t1 = now();
        DIE(c, kiln_executable_run(e, n_args, args, n_out, outs));
        double dt = now() - t1; /* the run returns once the device is done */
        kiln_memory_stats ms;
        DIE(c, kiln_device_get_memory_stats(c, gpu, &ms));
        if (ms.peak_bytes_in_use > measured) measured = ms.peak_bytes_in_use;
        if (s >= 0) t[s] = dt;
        for (int i = 3 * P; i < n_args; i++) kiln_array_destroy(args[i]);
        for (int i = 0; i < 3 * P; i++) {
            kiln_array_destroy(state[i]); /* consumed by the run */
            state[i] = outs[i];
        }
        if (s == STEPS - 1) {
            float loss = 0;
            DIE(c, kiln_array_copy_to_host(outs[3 * P], &loss, sizeof loss));
            printf("bench_cuda: GPT step: loss after %d steps on one batch %.4f (ln 256 = 5.545 "
                   "at the start)\n",
                   WARM + STEPS, (double)loss);
        }
        kiln_array_destroy(outs[3 * P]);
    }
    double ms = median(t, STEPS) * 1e3;
    printf("RESULT GPT step%s (B=%d T=%d L=%d H=%d C=%d, %.1fM parameters, %d kernels, compile "
           "%.1f s): %.2f ms/step, %.0f tokens/s; peak planned %.1f MiB, measured %.1f MiB\n",
           keep_cheap ? ", cheap values kept" : "", B, T, cfg.layers, cfg.heads, cfg.channels,
           (double)gpt_count_scalars(&cfg) / 1e6, info.num_kernels, compile_s, ms,
           (double)B * T / (ms / 1e3), (double)ma.peak_bytes / 1048576.0,
           (double)measured / 1048576.0);
    free(tok);
    for (int i = 0; i < 3 * P; i++) kiln_array_destroy(state[i]);
    kiln_executable_destroy(e);
}

/* One convolution layer's training step: y = conv(x, w) (NHWC / HWIO, 3x3 SAME) and both
 * gradients against a cotangent, in dt, with the device's convolution kernel (implicit
 * GEMM) or, im2col set, as im2col + the GEMM library (KILN_CONV_IM2COL): TFLOP/s of the
 * three products' 2 N H W C O 9 each, and the temp memory each plans (the patch matrices). */
static void conv_figure(int64_t n, int64_t hw, int64_t ch, kiln_dtype dt, bool im2col) {
    kiln_context_options o = {
        .ignore_environment = true, .compile_tiers = 1, .conv_im2col = im2col};
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) {
        fprintf(stderr, "bench_cuda: %s\n", err);
        exit(1);
    }
    kiln_graph *g = NULL;
    DIE(c, conv_layer_step(c, n, hw, ch, dt, &g));
    kiln_executable *e = compile(c, g);
    kiln_array *args[3];
    gpu_args(c, g, args);
    double s = time_runs(c, e, 3, args, 3);
    kiln_memory_analysis m;
    DIE(c, kiln_executable_get_memory_analysis(e, &m));
    double flops = 3 * 2.0 * (double)(n * hw * hw) * (double)(ch * ch) * 9;
    printf("RESULT conv layer step %s (N=%lld %lldx%lld, %lld->%lld, 3x3, fwd + both grads, %s): "
           "%.3f ms, %.1f TFLOP/s, temp %.1f MiB\n",
           kiln_dtype_name(dt), (long long)n, (long long)hw, (long long)hw, (long long)ch,
           (long long)ch, im2col ? "im2col + GEMM" : "implicit GEMM", s * 1e3, flops / s / 1e12,
           (double)m.temp_bytes / 1048576.0);
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(c);
}

int main(void) {
    const gpt_config gpt_gpu = {
        .vocab = 256, .context = 256, .layers = 6, .heads = 8, .channels = 512};
    /* BENCH_CUDA_ON_CPU=1: the new figures (reductions, MLP variants, GPT step) on cpu:0 at
     * tiny sizes, so that their code is checked on a machine without a GPU (the figures
     * themselves mean nothing there) */
    const char *on_cpu = getenv("BENCH_CUDA_ON_CPU");
    if (on_cpu && strcmp(on_cpu, "1") == 0) {
        kiln_context *c = make_context(KILN_ALLOC_MODE_GROW, 0, false);
        gpu = 0;
        reduce_figure(c, false, 256, 128);
        reduce_figure(c, true, 256, 128);
        mlp_figure(c, "f32 exact", false, 256, 128, KILN_DTYPE_F32);
        mlp_figure(c, "f32 exact", true, 256, 128, KILN_DTYPE_F32);
        mlp_figure(c, "bf16", false, 256, 128, KILN_DTYPE_BF16);
        gpt_figure(
            c, (gpt_config){.vocab = 256, .context = 32, .layers = 1, .heads = 2, .channels = 64},
            2, 32, false);
        gpt_figure(
            c, (gpt_config){.vocab = 256, .context = 32, .layers = 1, .heads = 2, .channels = 64},
            2, 32, true);
        double ms = attention_figure(c, 2, 40, 2, 16, KILN_DTYPE_F32, true, 0, "fused");
        attention_figure(c, 2, 40, 2, 16, KILN_DTYPE_F32, false, ms, "written out");
        attention_figure(c, 2, 40, 2, 16, KILN_DTYPE_BF16, true, 0, "fused");
        ms = attention_grad_figure(c, 2, 40, 2, 16, KILN_DTYPE_BF16, true, 0, "fused");
        attention_grad_figure(c, 2, 40, 2, 16, KILN_DTYPE_BF16, false, ms, "written out");
        kiln_context_destroy(c);
        conv_figure(2, 8, 8, KILN_DTYPE_F32, false);
        conv_figure(2, 8, 8, KILN_DTYPE_F32, true);
        return 0;
    }
    kiln_context *probe = make_context(KILN_ALLOC_MODE_GROW, 0, false);
    gpu = first_gpu(probe);
    if (gpu < 0) {
        printf("bench_cuda: no GPU (%s)\n", probe->devices_absent);
        kiln_context_destroy(probe);
        return 77;
    }
    kn_device *d = &probe->devices[gpu];
    printf("bench_cuda: %s\n", d->name);
    kiln_context_destroy(probe);

    if (getenv("BENCH_CUDA_ONLY_GPT")) { /* the GPT step alone, profiled: where its time goes */
        kiln_context_options o = {.ignore_environment = true, .profile = true, .compile_tiers = 1};
        kiln_context *c = NULL;
        char err[512];
        if (kiln_context_create(&o, &c, err, sizeof err)) {
            fprintf(stderr, "bench_cuda: %s\n", err);
            return 1;
        }
        gpt_figure(c, gpt_gpu, 16, 256, false);
        /* and with the cheap values kept (docs/memory.md): their recomputation trades bytes
         * of memory for bytes read, which a GPU's step pays for in time */
        gpt_figure(c, gpt_gpu, 16, 256, true);
        kiln_context_destroy(c);
        return 0;
    }
    memory_figures(); /* first: each context there takes the device for itself */
    /* a ResNet stage's layer, each way (issue 35: the device's convolution kernel) */
    for (int k = 0; k < 2; k++) {
        kiln_dtype dt = k ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
        conv_figure(32, 56, 64, dt, false);
        conv_figure(32, 56, 64, dt, true);
        fflush(stdout);
    }

    kiln_context *c = make_context(KILN_ALLOC_MODE_DEFAULT, 0, false);
    double ratio = 0, copy_gbs = 0;
    chain_figures(c, &ratio, &copy_gbs);
    rows_figure(c, "softmax", ROW_SOFTMAX, KILN_DTYPE_F32, copy_gbs);
    rows_figure(c, "layer_norm", ROW_LAYER_NORM, KILN_DTYPE_F32, copy_gbs);
    rows_figure(c, "log_softmax", ROW_LOG_SOFTMAX, KILN_DTYPE_F32, copy_gbs);
    rows_figure(c, "rms_norm", ROW_RMS_NORM, KILN_DTYPE_F32, copy_gbs);
    rows_figure(c, "softmax", ROW_SOFTMAX, KILN_DTYPE_BF16, copy_gbs);
    rows_figure(c, "layer_norm", ROW_LAYER_NORM, KILN_DTYPE_BF16, copy_gbs);
    short_row_kernels_figure(c, copy_gbs);
    short_rows_figure(c, copy_gbs);
    mlp_figure(c, "f32 exact", false, 8192, 4096, KILN_DTYPE_F32);
    mlp_figure(c, "bf16", false, 8192, 4096, KILN_DTYPE_BF16);
    double bf16_fused_ms[2] = {0};
    for (int64_t T = 256, i = 0; T <= 1024; T *= 4, i++) {
        double ms = attention_figure(c, 16, T, 8, 64, KILN_DTYPE_F32, true, 0, "fused");
        attention_figure(c, 16, T, 8, 64, KILN_DTYPE_F32, false, ms, "written out");
        ms = bf16_fused_ms[i] =
            attention_figure(c, 16, T, 8, 64, KILN_DTYPE_BF16, true, 0, "fused");
        attention_figure(c, 16, T, 8, 64, KILN_DTYPE_BF16, false, ms, "written out");
        ms = attention_grad_figure(c, 16, T, 8, 64, KILN_DTYPE_BF16, true, 0, "fused");
        attention_grad_figure(c, 16, T, 8, 64, KILN_DTYPE_BF16, false, ms, "written out");
        fflush(stdout);
    }
    kiln_context_destroy(c); /* one context holds the GPU's pool at a time */
    c = make_context_with(KILN_ALLOC_MODE_DEFAULT, 0, false, true);
    for (int64_t T = 256, i = 0; T <= 1024; T *= 4, i++)
        attention_figure(c, 16, T, 8, 64, KILN_DTYPE_BF16, true, bf16_fused_ms[i],
                         "fused, CUDA cores");
    kiln_context_destroy(c);
    c = make_context(KILN_ALLOC_MODE_GROW, 0, true);
    mlp_figure(c, "tf32", false, 8192, 4096, KILN_DTYPE_F32);
    kiln_context_destroy(c);
    c = make_context(KILN_ALLOC_MODE_DEFAULT, 0, false);
    gpt_figure(c, gpt_gpu, 16, 256, false);
    fflush(stdout);
    kiln_context_destroy(c);
    printf("bench_cuda: chain at %.1f%% of the copy: %s\n", 100 * ratio,
           ratio >= 0.85 ? "target met" : "target NOT met");
    c = make_context(KILN_ALLOC_MODE_GROW, 0, true);
    reduce_figure(c, false, 8192, 4096);
    fflush(stdout);
    reduce_figure(c, true, 8192, 4096);
    fflush(stdout);
    mlp_figure(c, "tf32", true, 8192, 4096, KILN_DTYPE_F32);
    kiln_context_destroy(c);
    return 0;
}
