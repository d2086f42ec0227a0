/* conv_layer.h — the convolution layer's training step the GPU convolution figures time
 * and plan (bench/bench_cuda.c, bench/cnn/conv_plan.c): y = conv(x, w), NHWC / HWIO, 3x3
 * SAME, ch -> ch channels, and both gradients against a cotangent ct (kiln_vjp), one
 * graph with parameters x, w, ct and outputs y, dx, dw. */
#ifndef KILN_BENCH_CONV_LAYER_H
#define KILN_BENCH_CONV_LAYER_H

#include "kiln.h"

/* The step's finished graph in *out, or the failing call's status. */
static inline kiln_status conv_layer_step(kiln_context *c, int64_t n, int64_t hw, int64_t ch,
                                          kiln_dtype dt, kiln_graph **out) {
    kiln_graph *g = NULL;
    kiln_status s = kiln_graph_create(c, "conv layer", &g);
    if (s) return s;
    int64_t xd[4] = {n, hw, hw, ch}, wd[4] = {3, 3, ch, ch};
    kiln_value x = kiln_parameter(g, "x", dt, 4, xd), w = kiln_parameter(g, "w", dt, 4, wd);
    kiln_value ct = kiln_parameter(g, "ct", dt, 4, xd), wrt[2] = {x, w}, outs[3];
    kiln_conv_options co = {.layout = KILN_CONV_NHWC, .padding = KILN_PADDING_SAME};
    outs[0] = kiln_conv_general_dilated(g, x, w, &co);
    kiln_vjp(g, 1, &outs[0], &ct, 2, wrt, outs + 1);
    if ((s = kiln_graph_finish(g, 3, outs))) {
        kiln_graph_destroy(g);
        return s;
    }
    *out = g;
    return KILN_STATUS_OK;
}

#endif
