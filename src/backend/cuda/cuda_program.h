/* cuda_program.h — NVRTC compilation of CUDA C source, shared by the GPU backend
 * (cuda_program.c) and the test that compiles every test program's CUDA source on
 * machines without a GPU (tests/test_cuda_nvrtc.c). */
#ifndef KILN_CUDA_PROGRAM_H
#define KILN_CUDA_PROGRAM_H

#include "cuda_api.h"

/* Compiles len bytes of CUDA C for sm_<cc_major><cc_minor> into a cubin (host memory of
 * ctx, *bytes long; the caller frees it with host_free). A compile error is
 * KILN_STATUS_BACKEND whose message holds the head of NVRTC's log. */
kiln_status cu_nvrtc_compile(kiln_context *ctx, const cu_nvrtc *r, const char *source, size_t len,
                             int cc_major, int cc_minor, char **cubin, size_t *bytes);

/* The CUDA source of the GPU's library kernels (cuda_lib.c), len bytes. */
const char *cu_lib_source(size_t *len);
/* The CUDA source of the fused attention's kernels (cuda_attention.c), len bytes. */
const char *cu_attention_source(size_t *len);
/* The CUDA source of the convolution's kernels (cuda_conv.c), len bytes. */
const char *cu_conv_source(size_t *len);
/* The CUDA source of argsort's kernels (cuda_sort.c), len bytes. */
const char *cu_sort_source(size_t *len);

#endif
