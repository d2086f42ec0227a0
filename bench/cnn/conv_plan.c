/* conv_plan.c — the memory a convolution layer's training step plans on every device
 * present, with the device's convolution kernel and as im2col + GEMM (KILN_CONV_IM2COL):
 * y = conv(x, w) (NHWC / HWIO, 3x3 SAME) and both gradients against a cotangent, f32 and
 * bf16. Planning needs no kernel to run, so the CUDA rows can be had without a GPU through
 * the stand-in driver the tests use:
 *
 *   LD_LIBRARY_PATH=build/mockcuda build/bench_conv_plan [N HW C]
 *
 * (defaults 32 56 64: a ResNet stage's layer). Prints one RESULT line per device, dtype
 * and path; the figures go to bench/RESULTS.md. */
#include "conv_layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(kiln_context *c, kiln_status s) {
    if (!s) return;
    fprintf(stderr, "bench_conv_plan: %s\n", kiln_last_error(c));
    exit(1);
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 32, hw = argc > 2 ? atoll(argv[2]) : 56;
    int64_t ch = argc > 3 ? atoll(argv[3]) : 64;
    for (int im2col = 0; im2col < 2; im2col++)
        for (int k = 0; k < 2; k++) {
            kiln_dtype dt = k ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
            kiln_context_options o = {.ignore_environment = true,
                                      .compile_tiers = 1,
                                      .alloc_mode = KILN_ALLOC_MODE_GROW,
                                      .conv_im2col = im2col};
            kiln_context *c = NULL;
            char err[512];
            if (kiln_context_create(&o, &c, err, sizeof err)) {
                fprintf(stderr, "bench_conv_plan: %s\n", err);
                return 1;
            }
            kiln_graph *g = NULL;
            die(c, conv_layer_step(c, n, hw, ch, dt, &g));
            for (int d = 0; d < kiln_device_count(c); d++) {
                kiln_compile_options so = {.device = d};
                kiln_executable *e = NULL;
                die(c, kiln_compile(g, &so, &e));
                kiln_memory_analysis m;
                die(c, kiln_executable_get_memory_analysis(e, &m));
                printf(
                    "RESULT conv layer step %s %s (N=%lld %lldx%lld, %lld->%lld, 3x3, fwd + both "
                    "grads, %s): planned peak %.1f MiB = arguments %.1f + outputs %.1f + temp "
                    "%.1f MiB\n",
                    kiln_device_name(c, d), kiln_dtype_name(dt), (long long)n, (long long)hw,
                    (long long)hw, (long long)ch, (long long)ch,
                    im2col ? "KILN_CONV_IM2COL" : "default", (double)m.peak_bytes / 1048576.0,
                    (double)m.argument_bytes / 1048576.0, (double)m.output_bytes / 1048576.0,
                    (double)m.temp_bytes / 1048576.0);
                kiln_executable_destroy(e);
            }
            kiln_graph_destroy(g);
            kiln_context_destroy(c);
        }
    return 0;
}
