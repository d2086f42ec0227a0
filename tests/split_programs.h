/* split_programs.h — programs whose reductions the CUDA dialect splits over blocks
 * (src/codegen/schedule.c: cuda_element_split), shared by the GPU conformance test
 * (test_cuda.c) and the emulator (test_cuda_emulate.c). */
#ifndef KILN_TEST_SPLIT_PROGRAMS_H
#define KILN_TEST_SPLIT_PROGRAMS_H

#include "kiln.h"

/* A global norm: independent sums to one value fused into one kernel, the first too small
 * to split alone; and a sum that reads another reduction's result (logsumexp's sum of
 * exp(x - max)), which the part kernel cannot compute and which stays whole. Finished;
 * NULL if it does not build (the message is the context's). */
static inline kiln_graph *split_norm_program(kiln_context *ctx) {
    kiln_graph *g = NULL;
    if (kiln_graph_create(ctx, "norm", &g)) return NULL;
    int64_t da = 500, db[2] = {300, 200}, dc[3] = {4, 50, 400};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, &da);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 2, db);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F32, 3, dc);
    kiln_value sq = kiln_add(g, kiln_reduce_sum(g, kiln_mul(g, a, a), 0, NULL, false),
                             kiln_reduce_sum(g, kiln_mul(g, b, b), 0, NULL, false));
    sq = kiln_add(g, sq, kiln_reduce_sum(g, kiln_mul(g, c, c), 0, NULL, false));
    kiln_value m = kiln_reduce_max(g, b, 0, NULL, false);
    kiln_value lse = kiln_reduce_sum(g, kiln_exp(g, kiln_sub(g, b, m)), 0, NULL, false);
    kiln_value outs[2] = {kiln_sqrt(g, sq), kiln_add(g, lse, m)};
    if (kiln_graph_finish(g, 2, outs)) {
        kiln_graph_destroy(g);
        return NULL;
    }
    return g;
}

#endif
