/* test_cuda_mock.c — the GPU backend's host side against a stand-in driver
 * (tests/mock_cuda.c, loaded as libcuda.so.1 through LD_LIBRARY_PATH, which CMake sets for
 * this test only): a pretend 8 GiB sm_90 device appears as cuda:0; the memory modes
 * reserve what they should (75% by default, ~0 growing, exactly the request on the
 * platform allocator) and stats carry the driver's numbers; staged copies round-trip
 * sizes around the staging buffers; a program with no kernels returns its arguments and
 * constants through device copies; a compiled program (NVRTC, when present) loads and
 * launches; attention is one launch of the fused kernel; a convolution (the library op,
 * through the backend's table) one launch over its groups, two when its reduction is
 * split; arguments on the wrong device
 * are refused; driver failures (cuInit, the context's creation, allocation) become
 * messages that name the call; and every driver object is released when the contexts go. Kernels do
 * not run: their results are test_cuda.c's, on a real GPU. Skipped (77) if the stand-in is not the
 * libcuda.so.1 that loads (run outside ctest on a machine with a driver). */
#include "test.h"
#include "runtime/array.h"
#include "runtime/executable.h"
#include "plan/plan.h"
#include "backend/device.h"

#include <dlfcn.h>
#include <stdlib.h>

static char dir[] = "/tmp/kiln-cuda-mock-XXXXXX";

static kiln_context *make(kiln_alloc_mode mode) {
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .alloc_mode = mode};
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return c;
}

static void test_memory(void) {
    static const struct {
        kiln_alloc_mode mode;
        double lo, hi;
    } cases[] = {{KILN_ALLOC_MODE_DEFAULT, 0.749, 0.751},
                 {KILN_ALLOC_MODE_GROW, 0, 0.01},
                 {KILN_ALLOC_MODE_PLATFORM, 0, 0.01}};
    for (int i = 0; i < 3; i++) {
        kiln_context *c = make(cases[i].mode);
        CHECK(c != NULL);
        if (!c) continue;
        CHECK(kiln_device_count(c) == 2);
        CHECK(kiln_device_name(c, 1) && !strcmp(kiln_device_name(c, 1), "cuda:0"));
        void *p = NULL;
        kiln_memory_stats st = {0};
        CHECK_OK(c, kiln_device_alloc(c, 1, 1 << 20, "first", &p));
        CHECK_OK(c, kiln_device_get_memory_stats(c, 1, &st));
        double frac = (double)st.bytes_reserved / (double)((size_t)8 << 30);
        CHECK_MSG(frac >= cases[i].lo && frac <= cases[i].hi, "mode %d reserved %.4f of the device",
                  (int)cases[i].mode, frac);
        CHECK(st.device_total_bytes == (uint64_t)8 << 30);
        CHECK_MSG(st.device_free_bytes == st.device_total_bytes - st.bytes_reserved,
                  "driver free %llu", (unsigned long long)st.device_free_bytes);
        if (cases[i].mode == KILN_ALLOC_MODE_PLATFORM) CHECK(st.bytes_reserved == 1 << 20);
        CHECK_OK(c, kiln_device_free(c, 1, p));
        kiln_context_destroy(c);
    }
}

static void test_copies(kiln_context *c) {
    static const int64_t sizes[] = {1, 1000, (16 << 20) / 4, (16 << 20) / 4 + 1,
                                    (48 << 20) / 4 + 13};
    for (int k = 0; k < 5; k++) {
        int64_t n = sizes[k];
        float *h = malloc((size_t)n * 4), *back = calloc((size_t)n, 4);
        for (int64_t i = 0; i < n; i++) h[i] = (float)(i % 1000003) * 0.5f;
        kiln_array *a = NULL;
        CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &n, h, &a));
        CHECK_OK(c, kiln_array_copy_to_host(a, back, (size_t)n * 4));
        CHECK_MSG(!memcmp(h, back, (size_t)n * 4), "round trip of %lld floats", (long long)n);
        kiln_array_destroy(a);
        free(h), free(back);
    }
    uint8_t bools[5] = {0, 2, 255, 1, 0}, got[5];
    int64_t five = 5, zero = 0;
    kiln_array *b = NULL, *z = NULL, *zs = NULL;
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_BOOL, 1, &five, bools, &b));
    CHECK_OK(c, kiln_array_copy_to_host(b, got, 5));
    CHECK(got[0] == 0 && got[1] == 1 && got[2] == 1 && got[3] == 1 && got[4] == 0);
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &zero, NULL, &z));
    float zeros[3] = {1, 1, 1};
    int64_t three = 3;
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &three, NULL, &zs));
    CHECK_OK(c, kiln_array_copy_to_host(zs, zeros, sizeof zeros));
    CHECK(zeros[0] == 0 && zeros[1] == 0 && zeros[2] == 0);
    kiln_array_destroy(zs);
    CHECK_STATUS(kiln_array_create_on(c, 5, KILN_DTYPE_F32, 1, &three, NULL, &zs),
                 KILN_STATUS_INVALID_ARGUMENT);
    kiln_array_destroy(b);
    kiln_array_destroy(z);
}

/* A float product beyond cuBLAS's 32-bit interface (k = 2^31) is refused by kiln_compile,
 * naming the node and the sizes, not by the first run (which, enqueued, would already have
 * consumed donated arguments). No memory is touched: the operands are never made. */
static void test_gemm_limits(kiln_context *c) {
    kiln_graph *g = NULL;
    kiln_graph_create(c, "wide", &g);
    int64_t da[2] = {1, (int64_t)1 << 31}, db[2] = {(int64_t)1 << 31, 1};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, da);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 2, db);
    kiln_value y = kiln_matmul(g, a, b);
    CHECK_OK(c, kiln_graph_finish(g, 1, &y));
    kiln_compile_options o = {.device = 1};
    kiln_executable *e = NULL;
    CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_UNIMPLEMENTED);
    CHECK(e == NULL);
    CHECK_CONTAINS(kiln_last_error(c), "needs the cuda backend's gemm for f32 (m=1 n=1 "
                                       "k=2147483648 batch=1)");
    kiln_graph_destroy(g);
}

/* x [n, groups * i, in, in], w [groups * og, i, k, k] and y [n, groups * og, out, out] of a
 * 2-D convolution, NCHW: c's sizes and strides (stride 1, no padding or dilation). */
static void conv_nchw(kn_conv_desc *c, int kind, int64_t n, int64_t groups, int64_t i, int64_t og,
                      int64_t in, int64_t k) {
    int64_t out = in - k + 1;
    *c = (kn_conv_desc){.kind = kind,
                        .ns = 2,
                        .n = n,
                        .groups = groups,
                        .i = i,
                        .og = og,
                        .in = {in, in},
                        .k = {k, k},
                        .out = {out, out},
                        .stride = {1, 1},
                        .ld = {1, 1},
                        .rd = {1, 1}};
    int64_t xs[4] = {groups * i * in * in, in * in, in, 1}, ws[4] = {i * k * k, k * k, k, 1};
    int64_t ys[4] = {groups * og * out * out, out * out, out, 1};
    memcpy(c->xs, xs, sizeof xs), memcpy(c->ws, ws, sizeof ws), memcpy(c->ys, ys, sizeof ys);
}

/* The convolution library op (cuda_conv.c) on cuda:0 through the backend's table, as a
 * compiled program's step calls it (test_conv_program compiles such steps): the floats and 1 to 3
 * spatial axes only; a forward convolution is one launch of 256-thread blocks, its 3 groups
 * along the grid's y, with no scratch; a filter gradient with a long reduction asks for the
 * partial sums of 16 chunks and is two launches (the chunks', then their sum's), or one
 * when it is given no scratch. The kernels do not run: test_cuda_emulate checks them. */
static void test_conv_lib(kiln_context *c, long (*launches)(void), long (*last)(void),
                          long (*last_y)(void)) {
    kn_device *dev = &c->devices[1];
    const kn_backend *b = dev->backend;
    void *st = dev->state;
    int di = dev->index;
    CHECK(b->lib_supports(st, di, KN_LIB_CONV, NULL));
    kn_lib_desc d = {.op = KN_LIB_CONV, .dtype = KILN_DTYPE_F32};
    conv_nchw(&d.conv, KN_CONV_FORWARD, 2, 3, 4, 5, 9, 3);
    CHECK(b->lib_supports(st, di, KN_LIB_CONV, &d));
    d.dtype = KILN_DTYPE_I32;
    CHECK(!b->lib_supports(st, di, KN_LIB_CONV, &d));
    d.dtype = KILN_DTYPE_BF16, d.conv.ns = 4;
    CHECK(!b->lib_supports(st, di, KN_LIB_CONV, &d));
    d.conv.ns = 2;
    CHECK(b->lib_supports(st, di, KN_LIB_CONV, &d));
    d.dtype = KILN_DTYPE_F32;
    CHECK(b->lib_scratch(st, di, &d) == 0);
    void *x = NULL, *w = NULL, *y = NULL, *part = NULL;
    size_t xb = 8 * 12 * 32 * 32 * 4, wb = 15 * 4 * 9 * 4, yb = 8 * 15 * 30 * 30 * 4;
    CHECK_OK(c, b->region_alloc(st, di, xb, 256, &x));
    CHECK_OK(c, b->region_alloc(st, di, wb, 256, &w));
    CHECK_OK(c, b->region_alloc(st, di, yb, 256, &y));
    long before = launches();
    kiln_status s = b->lib_run(st, di, &d, (void *[]){x, w, y, NULL});
    if (s && strstr(kiln_last_error(c), "NVRTC")) {
        test_skip_case("convolution", "no NVRTC: %s", kiln_last_error(c));
    } else {
        CHECK_OK(c, s);
        /* 2 x 7 x 7 rows: 2 tiles of 64, of one column tile */
        CHECK_MSG(launches() == before + 1 && last() == 2 * 65536 + 256 && last_y() == 3,
                  "forward: %ld launches, the last %ld x %ld blocks of %ld", launches() - before,
                  last() / 65536, last_y(), last() % 65536);
        /* 8 x 30 x 30 positions summed into a [15, 4, 3, 3] result: 16 chunks */
        conv_nchw(&d.conv, KN_CONV_FILTER_GRAD, 8, 3, 4, 5, 32, 3);
        uint64_t want = 16 * 3 * (9 * 4) * 5 * sizeof(float);
        d.scratch_bytes = b->lib_scratch(st, di, &d);
        CHECK_MSG(d.scratch_bytes == want, "filter gradient: %llu bytes of scratch, want %llu",
                  (unsigned long long)d.scratch_bytes, (unsigned long long)want);
        CHECK_OK(c, b->region_alloc(st, di, want, 256, &part));
        before = launches();
        CHECK_OK(c, b->lib_run(st, di, &d, (void *[]){x, y, w, part}));
        /* the sum: 3 x 36 x 5 elements, a thread each */
        CHECK_MSG(launches() == before + 2 && last() == 3 * 65536 + 256 && last_y() == 1,
                  "split filter gradient: %ld launches, the last %ld x %ld blocks of %ld",
                  launches() - before, last() / 65536, last_y(), last() % 65536);
        d.scratch_bytes = 0;
        before = launches();
        CHECK_OK(c, b->lib_run(st, di, &d, (void *[]){x, y, w, NULL}));
        CHECK_MSG(launches() == before + 1, "unsplit filter gradient: %ld launches",
                  launches() - before);
        CHECK_OK(c, b->synchronize(st, di));
    }
    if (part) b->region_free(st, di, part, 16 * 3 * 36 * 5 * sizeof(float));
    b->region_free(st, di, x, xb), b->region_free(st, di, w, wb), b->region_free(st, di, y, yb);
}

/* A compiled training program's convolutions on the device: the forward and both
 * gradients (kiln_vjp) stay convolution nodes, each one library call with no product and
 * no patch matrix in the plan, the filter gradient's split scratch planned; an integer
 * convolution (no kernel takes integers) is expanded into its im2col form instead. */
static void test_conv_program(kiln_context *c, long (*launches)(void)) {
    for (int pass = 0; pass < 2; pass++) {
        kiln_dtype t = pass ? KILN_DTYPE_I32 : KILN_DTYPE_BF16;
        kiln_graph *g = NULL;
        kiln_graph_create(c, "conv", &g);
        int64_t xd[4] = {8, 16, 16, 4}, wd[4] = {3, 3, 4, 8}, cd[4] = {8, 16, 16, 8};
        kiln_value x = kiln_parameter(g, "x", t, 4, xd), w = kiln_parameter(g, "w", t, 4, wd);
        kiln_conv_options co = {.layout = KILN_CONV_NHWC, .padding = KILN_PADDING_SAME};
        kiln_value y = kiln_conv_general_dilated(g, x, w, &co), outs[3] = {y};
        int n = 1;
        if (!pass) {
            kiln_value ct = kiln_parameter(g, "ct", t, 4, cd), wrt[2] = {x, w};
            kiln_vjp(g, 1, &y, &ct, 2, wrt, outs + 1);
            n = 3;
        }
        CHECK_OK(c, kiln_graph_finish(g, n, outs));
        kiln_compile_options o = {.device = 1};
        kiln_executable *e = NULL;
        kiln_status s = kiln_compile(g, &o, &e);
        if (s && strstr(kiln_last_error(c), "NVRTC")) {
            test_skip_case("convolution program", "no NVRTC: %s", kiln_last_error(c));
            kiln_graph_destroy(g);
            return;
        }
        CHECK_OK(c, s);
        int convs = 0, dots = 0;
        for (uint32_t i = 0; e && i < e->n_kernels; i++) {
            convs += e->kernel_info[i].kind == FK_CONV;
            dots += e->kernel_info[i].kind == FK_DOT;
        }
        CHECK_MSG(pass ? convs == 0 && dots == 1 : convs == 3 && dots == 0,
                  "%s: %d convolution kernels and %d products", kiln_dtype_name(t), convs, dots);
        if (!pass) { /* KILN_CONV_IM2COL's context: the primitive form, three products */
            kiln_context_options co2 = {
                .ignore_environment = true, .cache_dir = dir, .conv_im2col = true};
            kiln_context *c2 = NULL;
            char err[512];
            CHECK_MSG(!kiln_context_create(&co2, &c2, err, sizeof err), "%s", err);
            kiln_graph *g2 = NULL;
            char *text = kiln_graph_to_string(g);
            CHECK_OK(c2, kiln_graph_parse(c2, text, strlen(text), "conv", &g2));
            kiln_string_free(c, text);
            kiln_executable *e2 = NULL;
            CHECK_OK(c2, kiln_compile(g2, &o, &e2));
            int convs2 = 0, dots2 = 0;
            for (uint32_t i = 0; e2 && i < e2->n_kernels; i++) {
                convs2 += e2->kernel_info[i].kind == FK_CONV;
                dots2 += e2->kernel_info[i].kind == FK_DOT;
            }
            CHECK_MSG(convs2 == 0 && dots2 == 3, "im2col: %d convolution kernels, %d products",
                      convs2, dots2);
            kiln_executable_destroy(e2);
            kiln_graph_destroy(g2);
            kiln_context_destroy(c2);
        }
        if (!pass && e) {
            kiln_array *args[3] = {0}, *r[3] = {0};
            const int64_t *dims[3] = {xd, wd, cd};
            for (int j = 0; j < 3; j++)
                CHECK_OK(c, kiln_array_create_on(c, 1, t, 4, dims[j], NULL, &args[j]));
            long before = launches();
            CHECK_OK(c, kiln_executable_run(e, 3, args, 3, r));
            /* forward and input gradient one launch each; the filter gradient's 2048
             * positions over a [72, 8] result split: a part and a sum */
            CHECK_MSG(launches() - before == 4, "bf16 convolutions: %ld launches, want 4",
                      launches() - before);
            for (int j = 0; j < 3; j++) kiln_array_destroy(args[j]), kiln_array_destroy(r[j]);
        }
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
}

/* The library calls of 16-bit programs, against the stand-in cuBLAS (tests/mock_cublas.c):
 * a bf16 product and a batched, transposed f16 one are cublasGemmStridedBatchedEx with
 * 16-bit operands and result (CUDA_R_16BF 14, CUDA_R_16F 2) and f32 accumulation
 * (CUBLAS_COMPUTE_32F 68), row-major as cuBLAS's column-major (operands swapped: m and n
 * trade places); an f32 one stays Sgemm; cumsum, scatter-add and a permute of bf16 values
 * launch kiln's own kernels. */
static void test_half_library(kiln_context *c, long (*launches)(void)) {
    void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcublas.so.13", RTLD_NOW);
    const char *(*log)(void) = lib ? (const char *(*)(void))dlsym(lib, "mock_cublas_log") : NULL;
    void (*clear)(void) = lib ? (void (*)(void))dlsym(lib, "mock_cublas_clear") : NULL;
    if (!log || !clear) {
        test_skip_case("16-bit library calls", "the libcublas.so.13 loaded is not the stand-in");
        if (lib) dlclose(lib);
        return;
    }
    kiln_graph *g = NULL;
    kiln_graph_create(c, "half_lib", &g);
    int64_t da[2] = {8, 16}, db[2] = {16, 4}, dq[3] = {3, 5, 32}, dk[3] = {3, 7, 32};
    int64_t dv[2] = {6, 10}, di[1] = {4};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_BF16, 2, da);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_BF16, 2, db);
    kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F16, 3, dq);
    kiln_value k = kiln_parameter(g, "k", KILN_DTYPE_F16, 3, dk);
    kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 2, da);
    kiln_value fb = kiln_parameter(g, "fb", KILN_DTYPE_F32, 2, db);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_BF16, 2, dv);
    kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 1, di);
    int perm[2] = {1, 0};
    kiln_value outs[6] = {
        kiln_matmul(g, a, b),      kiln_matmul(g, q, kiln_transpose(g, k, (int[]){0, 2, 1})),
        kiln_matmul(g, f, fb),     kiln_cumsum(g, v, 1, false),
        kiln_take_rows(g, v, idx), kiln_transpose(g, kiln_exp(g, v), perm)};
    CHECK_OK(c, kiln_graph_finish(g, 6, outs));
    int np = kiln_graph_num_parameters(g);
    kiln_compile_options o = {.device = 1};
    kiln_executable *e = NULL;
    kiln_status s = kiln_compile(g, &o, &e);
    if (s && strstr(kiln_last_error(c), "NVRTC")) {
        test_skip_case("16-bit library calls", "no NVRTC: %s", kiln_last_error(c));
    } else if (!s) {
        kiln_array *args[8] = {0}, *res[6] = {0};
        for (int i = 0; i < np; i++) {
            kiln_dtype t = KILN_DTYPE_INVALID;
            int64_t dims[KILN_MAX_RANK];
            int rank = 0;
            kiln_value_type(g, kiln_graph_parameter(g, i), &t, &rank, dims);
            CHECK_OK(c, kiln_array_create_on(c, 1, t, rank, dims, NULL, &args[i]));
        }
        clear();
        long before = launches();
        CHECK_OK(c, kiln_executable_run(e, np, args, 6, res));
        CHECK_MSG(launches() > before, "no kernel was launched");
        const char *calls = log();
        /* bf16 [8,16] x [16,4]: cuBLAS sees C^T (4 x 8) = B^T A^T */
        CHECK_CONTAINS(calls, "GemmEx 0 0 4 8 16 1 14 14 14 68\n");
        /* f16 [3,5,32] x [3,32,7] from k [3,7,32]: B read transposed, a batch of 3 */
        CHECK_CONTAINS(calls, "GemmEx 1 0 7 5 32 3 2 2 2 68\n");
        CHECK_CONTAINS(calls, "Sgemm 0 0 4 8 16 1\n");
        for (int i = 0; i < 6; i++) kiln_array_destroy(res[i]);
        for (int i = 0; i < np; i++) kiln_array_destroy(args[i]);
    } else
        CHECK_OK(c, s);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    dlclose(lib);
}

/* Attention's products batched over two axes that are no single progression (q and k as
 * [B, T, H, D], batch axes B and H): one pointer-array call over all B * H matrices
 * (cublasSgemmBatched / cublasGemmBatchedEx), after the one launch of kiln_gemm_ptrs that
 * writes the arrays into the planned scratch, where it was one strided call per b. The
 * same product of [B, H, T, D] operands stays one strided-batched call. */
static void test_batched_products(kiln_context *c, long (*launches)(void)) {
    void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcublas.so.13", RTLD_NOW);
    const char *(*log)(void) = lib ? (const char *(*)(void))dlsym(lib, "mock_cublas_log") : NULL;
    void (*clear)(void) = lib ? (void (*)(void))dlsym(lib, "mock_cublas_clear") : NULL;
    if (!log || !clear) {
        test_skip_case("batched products", "the libcublas.so.13 loaded is not the stand-in");
        if (lib) dlclose(lib);
        return;
    }
    static const kiln_dtype types[3] = {KILN_DTYPE_F32, KILN_DTYPE_BF16, KILN_DTYPE_F64};
    static const char *const want[3] = {"SgemmBatched 1 0 8 8 16 8 64 64\n",
                                        "GemmBatchedEx 1 0 8 8 16 8 64 64 14 14 14 68\n",
                                        "DgemmBatched 1 0 8 8 16 8 64 64\n"};
    for (int t = 0; t < 3; t++) {
        kiln_graph *g = NULL;
        kiln_graph_create(c, "batched", &g);
        int64_t dq[4] = {2, 8, 4, 16}, dh[4] = {2, 4, 8, 16}, d1[4] = {1, 8, 4, 16};
        kiln_value q = kiln_parameter(g, "q", types[t], 4, dq);
        kiln_value k = kiln_parameter(g, "k", types[t], 4, dq);
        kiln_value qh = kiln_parameter(g, "qh", types[t], 4, dh);
        kiln_value kh = kiln_parameter(g, "kh", types[t], 4, dh);
        kiln_value q1 = kiln_parameter(g, "q1", types[t], 4, d1);
        kiln_value k1 = kiln_parameter(g, "k1", types[t], 4, d1);
        kiln_dot_dims bh = {.n_contract = 1,
                            .lhs_contract = {3},
                            .rhs_contract = {3},
                            .n_batch = 2,
                            .lhs_batch = {0, 2},
                            .rhs_batch = {0, 2}};
        kiln_dot_dims flat = {.n_contract = 1,
                              .lhs_contract = {3},
                              .rhs_contract = {3},
                              .n_batch = 2,
                              .lhs_batch = {0, 1},
                              .rhs_batch = {0, 1}};
        /* batch axes B = 1 and H of a [1, T, H, D] operand: one progression once the axis
         * of size 1 is left out, so one strided call */
        kiln_value outs[3] = {kiln_dot_general(g, q, k, &bh), kiln_dot_general(g, qh, kh, &flat),
                              kiln_dot_general(g, q1, k1, &bh)};
        CHECK_OK(c, kiln_graph_finish(g, 3, outs));
        kiln_compile_options o = {.device = 1};
        kiln_executable *e = NULL;
        kiln_status s = kiln_compile(g, &o, &e);
        if (s && strstr(kiln_last_error(c), "NVRTC")) {
            test_skip_case("batched products", "no NVRTC: %s", kiln_last_error(c));
            kiln_graph_destroy(g);
            break;
        }
        CHECK_OK(c, s);
        kiln_array *args[6] = {0}, *res[3] = {0};
        for (int i = 0; i < 6; i++)
            CHECK_OK(c, kiln_array_create_on(c, 1, types[t], 4,
                                             i < 2   ? dq
                                             : i < 4 ? dh
                                                     : d1,
                                             NULL, &args[i]));
        clear();
        long before = launches();
        CHECK_OK(c, kiln_executable_run(e, 6, args, 3, res));
        const char *calls = log();
        CHECK_CONTAINS(calls, want[t]);
        /* the [B, H, T, D] product: one strided call of all 8 matrices */
        CHECK_CONTAINS(calls, t == 1 ? "GemmEx 1 0 8 8 16 8 14 14 14 68\n"
                              : t    ? "Dgemm 1 0 8 8 16 8\n"
                                     : "Sgemm 1 0 8 8 16 8\n");
        CHECK_CONTAINS(calls, t == 1 ? "GemmEx 1 0 8 8 16 4 14 14 14 68\n"
                              : t    ? "Dgemm 1 0 8 8 16 4\n"
                                     : "Sgemm 1 0 8 8 16 4\n");
        int n_calls = 0;
        for (const char *p = calls; *p; p++) n_calls += *p == '\n';
        CHECK_MSG(n_calls == 3, "%d cuBLAS calls where 3 were expected:\n%s", n_calls, calls);
        CHECK_MSG(launches() == before + 1,
                  "%ld launches where 1 (the pointer arrays) was expected", launches() - before);
        for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);
        /* a pointer-array call cuBLAS refuses fails the run, naming the call and its sizes;
         * the next run goes through */
        static const char *const call[3] = {"cublasSgemmBatched", "cublasGemmBatchedEx",
                                            "cublasDgemmBatched"};
        static const char *const said[3] = {
            "cuBLAS SgemmBatched (m=8 n=8 k=16 batch=8) failed (cublasStatus_t 13)",
            "cuBLAS GemmBatchedEx (m=8 n=8 k=16 batch=8) failed (cublasStatus_t 13)",
            "cuBLAS DgemmBatched (m=8 n=8 k=16 batch=8) failed (cublasStatus_t 13)"};
        setenv("KILN_MOCK_CUBLAS_FAIL", call[t], 1);
        kiln_array *none[3] = {0};
        CHECK_STATUS(kiln_executable_run(e, 6, args, 3, none), KILN_STATUS_BACKEND);
        unsetenv("KILN_MOCK_CUBLAS_FAIL");
        CHECK_CONTAINS(kiln_last_error(c), said[t]);
        CHECK(none[0] == NULL && none[1] == NULL && none[2] == NULL);
        CHECK_OK(c, kiln_executable_run(e, 6, args, 3, res));
        for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);
        for (int i = 0; i < 6; i++) kiln_array_destroy(args[i]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    dlclose(lib);
}

/* scatter_add_rows with its planned scratch is cuda_scatter.c's two launches (the chunks'
 * sort, a block per chunk of 4096 indices, then the rows), compiled at the first call; past
 * 64 chunks the plan gives it no scratch and it is the column kernel's one launch. */
static void test_sorted_scatter(kiln_context *c, long (*launches)(void), long (*last)(void)) {
    static const int64_t n_idx[2] = {3 * 4096 + 5, 64 * 4096 + 1};
    for (int t = 0; t < 2; t++) {
        kiln_graph *g = NULL;
        kiln_graph_create(c, "scatter", &g);
        int64_t dt[2] = {50, 8}, di[1] = {n_idx[t]}, du[2] = {n_idx[t], 8};
        kiln_value tab = kiln_parameter(g, "t", KILN_DTYPE_F32, 2, dt);
        kiln_value idx = kiln_parameter(g, "i", KILN_DTYPE_I32, 1, di);
        kiln_value upd = kiln_parameter(g, "u", KILN_DTYPE_F32, 2, du);
        kiln_value y = kiln_scatter_add_rows(g, tab, idx, upd);
        CHECK_OK(c, kiln_graph_finish(g, 1, &y));
        kiln_compile_options o = {.device = 1};
        kiln_executable *e = NULL;
        kiln_status s = kiln_compile(g, &o, &e);
        if (s && strstr(kiln_last_error(c), "NVRTC")) {
            test_skip_case("sorted scatter", "no NVRTC: %s", kiln_last_error(c));
            kiln_graph_destroy(g);
            return;
        }
        CHECK_OK(c, s);
        kiln_array *args[3] = {0}, *res = NULL;
        CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 2, dt, NULL, &args[0]));
        CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_I32, 1, di, NULL, &args[1]));
        CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 2, du, NULL, &args[2]));
        long before = launches();
        CHECK_OK(c, kiln_executable_run(e, 3, args, 1, &res));
        CHECK_MSG(launches() - before == (t ? 1 : 2), "n_idx %lld: %ld launches, want %d",
                  (long long)n_idx[t], launches() - before, t ? 1 : 2);
        if (!t) /* the row kernel last: a thread per (slot, column), 256 a block */
            CHECK_MSG(last() % 65536 == 256 && last() / 65536 >= 1,
                      "the sorted rows' launch: %ld blocks of %ld", last() / 65536, last() % 65536);
        kiln_array_destroy(res);
        res = NULL;
        if (!t) { /* a launch the driver refuses fails the run, naming the kernel */
            setenv("KILN_MOCK_CUDA_FAIL", "cuLaunchKernel", 1);
            CHECK_STATUS(kiln_executable_run(e, 3, args, 1, &res), KILN_STATUS_BACKEND);
            unsetenv("KILN_MOCK_CUDA_FAIL");
            CHECK_CONTAINS(kiln_last_error(c), "launching scatter_add_rows' index sort kernel");
            CHECK(res == NULL);
        }
        for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
}

/* dot_product_attention on cuda:0 is one launch of the fused kernel (no products, no
 * softmax kernels), 256 threads a block and a block per (batch, head, tile of query
 * rows). The stand-in GPU has compute capability 9.0, so bf16 and f16 with head sizes
 * that are multiples of 8 up to 128 take the tensor-core kernel, 128 rows a tile (a
 * warp's 16 each), the head sizes rounded up to 64 or 128; f32 and f64, bf16 heads of 12,
 * and a context with attention_cuda_cores take the CUDA cores' kernel, 64 rows a tile for
 * f32, bf16 and f16, 32 for f64. */
/* The attention gradient's kinds on the stand-in device (compute capability 9): bf16 keeps
 * them as the tensor-core kernels (four attention kernels: the forward pass writing the
 * log-sum-exp too, then dq, dk and dv; no [B, N, T, S] temporary), f32 and, with
 * attention_cuda_cores, bf16 expand them to cuBLAS products and loops (one attention kernel, the
 * scores' arrays planned); all run. */
static void test_attention_grad(kiln_context *main) {
    kiln_context_options co = {
        .ignore_environment = true, .cache_dir = dir, .attention_cuda_cores = true};
    kiln_context *cores = NULL;
    CHECK_OK(NULL, kiln_context_create(&co, &cores, NULL, 0));
    uint64_t temp[3] = {0, 0, 0};
    for (int f = 0; f < 3; f++) {
        kiln_dtype t = f == 1 ? KILN_DTYPE_F32 : KILN_DTYPE_BF16;
        kiln_context *c = f == 2 ? cores : main;
        kiln_graph *g = NULL;
        kiln_graph_create(c, "attention_grad", &g);
        int64_t d[4] = {1, 300, 2, 64};
        kiln_value q = kiln_parameter(g, "q", t, 4, d), k = kiln_parameter(g, "k", t, 4, d);
        kiln_value v = kiln_parameter(g, "v", t, 4, d), ct = kiln_parameter(g, "ct", t, 4, d);
        kiln_attention_options ao = {.is_causal = true};
        kiln_value y = kiln_dot_product_attention(g, q, k, v, &ao), outs[4] = {y};
        CHECK_OK(c, kiln_vjp(g, 1, &y, &ct, 3, (kiln_value[]){q, k, v}, outs + 1));
        CHECK_OK(c, kiln_graph_finish(g, 4, outs));
        kiln_compile_options o = {.device = 1, .keep_ir = true}; /* for the listing */
        kiln_executable *e = NULL;
        kiln_status s = kiln_compile(g, &o, &e);
        if (s && strstr(kiln_last_error(c), "NVRTC")) {
            test_skip_case("attention gradient", "no NVRTC: %s", kiln_last_error(c));
            kiln_graph_destroy(g);
            return;
        }
        CHECK_OK(c, s);
        char *text = e ? kiln_executable_to_string(e) : NULL;
        int n = 0;
        for (const char *p = text; p && (p = strstr(p, " attention writes ")); p++) n++;
        CHECK_MSG(n == (f ? 1 : 4), "%s%s: %d attention kernels, want %d", kiln_dtype_name(t),
                  f == 2 ? " (attention_cuda_cores)" : "", n, f ? 1 : 4);
        kiln_string_free(c, text);
        kiln_memory_analysis m = {0};
        if (e) CHECK_OK(c, kiln_executable_get_memory_analysis(e, &m));
        temp[f] = m.temp_bytes;
        kiln_array *args[4] = {0}, *r[4] = {0};
        for (int j = 0; j < 4; j++)
            CHECK_OK(c, kiln_array_create_on(c, 1, t, 4, d, NULL, &args[j]));
        if (e) CHECK_OK(c, kiln_executable_run(e, 4, args, 4, r));
        for (int j = 0; j < 4; j++) kiln_array_destroy(args[j]), kiln_array_destroy(r[j]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    uint64_t scores = 2 * 300 * 300 * 2; /* one bf16 [1, 2, 300, 300] array */
    CHECK_MSG(temp[0] < scores && temp[1] >= scores && temp[2] >= scores,
              "temporaries: bf16 kernels %llu, f32 expanded %llu, bf16 expanded %llu; the "
              "scores are %llu bytes",
              (unsigned long long)temp[0], (unsigned long long)temp[1], (unsigned long long)temp[2],
              (unsigned long long)scores);
    kiln_context_destroy(cores);
}

static void test_attention(kiln_context *c, long (*launches)(void), long (*last)(void),
                           const char *(*kernel)(void)) {
    kiln_context_options co = {
        .ignore_environment = true, .cache_dir = dir, .attention_cuda_cores = true};
    kiln_context *cores = NULL;
    CHECK_OK(NULL, kiln_context_create(&co, &cores, NULL, 0));
    static const struct {
        kiln_dtype t;
        int64_t tq, n, k, h;
        bool causal, cuda_cores;
        long grid;
        const char *kernel;
    } cases[] = {{KILN_DTYPE_F32, 100, 4, 2, 16, true, false, 2 * 4, "kiln_attn_f32"},
                 {KILN_DTYPE_BF16, 64, 3, 1, 16, false, false, 1 * 3, "kiln_attn_tc_bf16_64"},
                 {KILN_DTYPE_F16, 130, 2, 2, 16, true, false, 2 * 2, "kiln_attn_tc_f16_64"},
                 {KILN_DTYPE_F16, 130, 2, 2, 96, true, false, 2 * 2, "kiln_attn_tc_f16_128"},
                 {KILN_DTYPE_BF16, 300, 1, 1, 128, true, false, 3, "kiln_attn_tc_bf16_128"},
                 {KILN_DTYPE_BF16, 64, 3, 1, 12, false, false, 1 * 3, "kiln_attn_bf16"},
                 {KILN_DTYPE_BF16, 130, 2, 2, 16, true, true, 3 * 2, "kiln_attn_bf16"},
                 {KILN_DTYPE_F16, 130, 2, 2, 16, true, true, 3 * 2, "kiln_attn_f16"},
                 {KILN_DTYPE_F64, 70, 2, 1, 16, true, false, 3 * 2, "kiln_attn_f64"}};
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        kiln_context *cc = cases[i].cuda_cores ? cores : c;
        kiln_graph *g = NULL;
        kiln_graph_create(cc, "attention", &g);
        int64_t dq[4] = {1, cases[i].tq, cases[i].n, cases[i].h};
        int64_t dk[4] = {1, 50, cases[i].k, cases[i].h};
        kiln_value q = kiln_parameter(g, "q", cases[i].t, 4, dq);
        kiln_value k = kiln_parameter(g, "k", cases[i].t, 4, dk);
        kiln_value v = kiln_parameter(g, "v", cases[i].t, 4, dk);
        kiln_attention_options ao = {.is_causal = cases[i].causal};
        kiln_value y = kiln_dot_product_attention(g, q, k, v, &ao);
        CHECK_OK(c, kiln_graph_finish(g, 1, &y));
        kiln_compile_options o = {.device = 1};
        kiln_executable *e = NULL;
        kiln_status s = kiln_compile(g, &o, &e);
        if (s && strstr(kiln_last_error(cc), "NVRTC")) {
            test_skip_case("attention", "no NVRTC: %s", kiln_last_error(cc));
            kiln_graph_destroy(g);
            break;
        }
        CHECK_OK(cc, s);
        kiln_array *args[3] = {0}, *r = NULL;
        const int64_t *dims[3] = {dq, dk, dk};
        for (int j = 0; j < 3; j++)
            CHECK_OK(cc, kiln_array_create_on(cc, 1, cases[i].t, 4, dims[j], NULL, &args[j]));
        long before = launches();
        if (e) CHECK_OK(cc, kiln_executable_run(e, 3, args, 1, &r));
        CHECK_MSG(launches() == before + 1, "%s attention: %ld launches, want 1",
                  kiln_dtype_name(cases[i].t), launches() - before);
        CHECK_MSG(last() == cases[i].grid * 65536 + 256,
                  "%s attention: grid %ld block %ld, want %ld 256", kiln_dtype_name(cases[i].t),
                  last() / 65536, last() % 65536, cases[i].grid);
        CHECK_MSG(!strcmp(kernel(), cases[i].kernel), "%s attention (H %lld): ran %s, want %s",
                  kiln_dtype_name(cases[i].t), (long long)cases[i].h, kernel(), cases[i].kernel);
        kiln_array_destroy(r);
        for (int j = 0; j < 3; j++) kiln_array_destroy(args[j]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(cores);
}

static void test_programs(kiln_context *c, long (*launches)(void)) {
    /* no kernels: outputs are the argument, a constant and the argument again */
    kiln_graph *g = NULL;
    kiln_graph_create(c, "pass", &g);
    int64_t d[1] = {1000};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    float cv[1000], xv[1000], got[1000];
    for (int i = 0; i < 1000; i++) cv[i] = (float)i, xv[i] = (float)-i;
    kiln_value outs[3] = {x, kiln_constant(g, KILN_DTYPE_F32, 1, d, cv), x};
    CHECK_OK(c, kiln_graph_finish(g, 3, outs));
    kiln_compile_options o = {.device = 1};
    kiln_executable *e = NULL;
    kiln_array *arg = NULL, *res[3] = {0}, *host = NULL;
    CHECK_OK(c, kiln_compile(g, &o, &e));
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, d, xv, &arg));
    if (e && arg) {
        CHECK_OK(c, kiln_executable_run(e, 1, &arg, 3, res));
        for (int j = 0; j < 3 && res[j]; j++) {
            CHECK_OK(c, kiln_array_copy_to_host(res[j], got, sizeof got));
            CHECK_MSG(!memcmp(got, j == 1 ? cv : xv, sizeof got), "output %d", j);
            kiln_array_destroy(res[j]);
        }
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 1, d, xv, &host));
        CHECK_STATUS(kiln_executable_run(e, 1, &host, 3, res), KILN_STATUS_INVALID_ARGUMENT);
        CHECK_CONTAINS(kiln_last_error(c),
                       "'pass' was compiled for cuda:0, but argument 0 is on cpu:0");
        CHECK_STATUS(kiln_interpret(g, 1, &arg, 3, res), KILN_STATUS_INVALID_ARGUMENT);
        CHECK_CONTAINS(kiln_last_error(c), "is on cuda:0");
    }
    kiln_array_destroy(host);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);

    /* kernels: compiled by NVRTC (when it loads), loaded, launched */
    kiln_graph_create(c, "kernels", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value y = kiln_reduce_sum(g, kiln_exp(g, x), 0, NULL, false);
    CHECK_OK(c, kiln_graph_finish(g, 1, &y));
    e = NULL;
    kiln_status s = kiln_compile(g, &o, &e);
    if (s && strstr(kiln_last_error(c), "NVRTC")) {
        test_skip_case("compiled program", "no NVRTC: %s", kiln_last_error(c));
    } else {
        CHECK_OK(c, s);
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        CHECK(info.code_bytes > 0);
        long before = launches();
        kiln_array *r = NULL;
        CHECK_OK(c, kiln_executable_run(e, 1, &arg, 1, &r));
        CHECK_MSG(launches() > before, "no kernel was launched");
        kiln_array_destroy(r);
        kiln_executable *again = NULL;
        CHECK_OK(c, kiln_compile(g, &o, &again));
        if (again) {
            kiln_executable_get_info(again, &info);
            CHECK_MSG(info.from_disk_cache, "the cubin was not served from the disk cache");
        }
        kiln_executable_destroy(again);
    }
    kiln_array_destroy(arg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Control flow on a GPU, driven by the host: a switch reads its index from device memory
 * (clamped; the branches return their operand or a constant: no kernels), and a while loop
 * whose condition is false at once copies its carries into its results on the device. */
static int pass_branch(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                       kiln_value *outs) {
    (void)g, (void)n_in, (void)user;
    outs[0] = in[0];
    return 1;
}

static int const_branch(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                        kiln_value *outs) {
    (void)n_in, (void)in;
    int64_t d[1] = {1000};
    outs[0] = kiln_constant(g, KILN_DTYPE_F32, 1, d, user);
    return 1;
}

static int never(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)in, (void)user;
    bool f = false;
    outs[0] = kiln_constant(g, KILN_DTYPE_BOOL, 0, NULL, &f);
    return 1;
}

static void test_control_flow(kiln_context *c) {
    int64_t d[1] = {1000};
    float cv[1000], xv[1000], got[1000];
    for (int i = 0; i < 1000; i++) cv[i] = (float)i, xv[i] = (float)-i;
    kiln_graph *g = NULL;
    kiln_graph_create(c, "switch", &g);
    kiln_value ix = kiln_parameter(g, "i", KILN_DTYPE_I32, 0, NULL);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d), outs[2];
    kiln_fn fns[2] = {pass_branch, const_branch};
    int n = 0;
    CHECK_OK(c, kiln_switch(g, ix, 2, fns, cv, 1, &x, &n, outs));
    CHECK_OK(c, kiln_while_loop(g, never, pass_branch, NULL, 1, &x, &outs[1]));
    CHECK_OK(c, kiln_graph_finish(g, 2, outs));
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, &(kiln_compile_options){.device = 1}, &e));
    int32_t idx[3] = {0, 1, 7};
    for (int t = 0; t < 3 && e; t++) {
        kiln_array *args[2] = {0}, *res[2] = {0};
        CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_I32, 0, NULL, &idx[t], &args[0]));
        CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, d, xv, &args[1]));
        CHECK_OK(c, kiln_executable_run(e, 2, args, 2, res));
        for (int j = 0; j < 2 && res[j]; j++) {
            CHECK_OK(c, kiln_array_copy_to_host(res[j], got, sizeof got));
            const float *want = j == 0 && idx[t] ? cv : xv;
            CHECK_MSG(!memcmp(got, want, sizeof got), "index %d, output %d", idx[t], j);
            kiln_array_destroy(res[j]);
        }
        kiln_array_destroy(args[0]);
        kiln_array_destroy(args[1]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Host offload on the GPU: the pinned_host pool comes from cuMemHostAlloc, the copies run
 * on the stream (cuMemcpy*Async), the values come back unchanged (the program is its two
 * copies alone: the stand-in runs no kernel) and the pool's peak during the call is the
 * planned host arena. */
static void test_offload(kiln_context *c) {
    int64_t d[1] = {4096};
    float xv[4096], got[4096];
    for (int i = 0; i < 4096; i++) xv[i] = (float)i * 0.25f;
    kiln_graph *g = NULL;
    kiln_graph_create(c, "offload", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value h = kiln_memory_put(g, x, KILN_MEMORY_PINNED_HOST);
    kiln_value y = kiln_memory_put(g, h, KILN_MEMORY_DEVICE);
    CHECK_OK(c, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = NULL;
    CHECK_OK(c, kiln_compile(g, &(kiln_compile_options){.device = 1}, &e));
    kiln_memory_analysis an = {0};
    if (e) kiln_executable_get_memory_analysis(e, &an);
    CHECK(an.num_offloaded == 1 && an.host_temp_bytes >= sizeof xv);
    kiln_memory_stats before = {0}, after = {0};
    CHECK_OK(c, kiln_device_get_memory_kind_stats(c, 1, KILN_MEMORY_PINNED_HOST, &before));
    kiln_device_reset_peak(c, 1);
    kiln_array *arg = NULL, *res = NULL;
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, d, xv, &arg));
    CHECK_OK(c, kiln_executable_run(e, 1, &arg, 1, &res));
    CHECK_OK(c, kiln_device_get_memory_kind_stats(c, 1, KILN_MEMORY_PINNED_HOST, &after));
    CHECK(after.peak_bytes_in_use - before.bytes_in_use == an.host_temp_bytes);
    CHECK_OK(c, kiln_array_copy_to_host(res, got, sizeof got));
    int ok = 1;
    for (int i = 0; i < 4096; i++) ok &= got[i] == xv[i];
    CHECK_MSG(ok, "offload on the mock GPU changed the values");
    kiln_array_destroy(res), kiln_array_destroy(arg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* A budget search on the GPU weighs offload with its copies overlapping the kernels: the
 * compile tells the search what it tells the planner (the backend has a copy queue), and
 * the report says the copies were counted so. */
static void test_budget_overlap(kiln_context *c) {
    int64_t xd[2] = {64, 64};
    kiln_graph *g = NULL;
    kiln_graph_create(c, "budget_overlap", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, xd);
    kiln_value h = x;
    for (int l = 0; l < 3; l++) h = kiln_tanh(g, kiln_matmul(g, h, w));
    kiln_value loss = kiln_mean(g, kiln_mul(g, h, h), 0, NULL, false);
    kiln_value outs[2] = {loss};
    CHECK_OK(c, kiln_grad(g, loss, 1, &w, outs + 1));
    CHECK_OK(c, kiln_graph_finish(g, 2, outs));
    kiln_executable *e = NULL;
    kiln_compile_options o = {
        .device = 1, .memory_budget = 1u << 30, .budget_offload = 1, .keep_ir = true};
    CHECK_OK(c, kiln_compile(g, &o, &e));
    char *report = e ? kiln_executable_memory_report(e) : NULL;
    CHECK_CONTAINS(report, "offload copies overlap the kernels on its copy queue");
    kiln_string_free(c, report);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* The event recorded on `stream` first after position `from` of the order log, or 0. */
static long record_after(const char *log, const char *from, long stream) {
    for (const char *p = strstr(from, "R"); p; p = strstr(p + 1, "R")) {
        long ev, on;
        if (sscanf(p, "R%ld@%ld", &ev, &on) == 2 && on == stream) return ev;
    }
    (void)log;
    return 0;
}

/* Copies between memory kinds beside the kernels (plan_options.overlap_transfers): the
 * put to host memory and the fetch back each run on a stream that is not the kernels',
 * after the kernels queued before them (that stream waits for an event recorded on the
 * kernels' stream), and the kernels' stream waits for an event recorded after each copy
 * before it runs the reader; the plan says where (wait_step later than the copy's step),
 * and the stand-in's values come back through both copies. */
static void test_offload_overlap(kiln_context *c, const char *(*order)(int)) {
    int64_t d[1] = {4096};
    kiln_graph *g = NULL;
    kiln_graph_create(c, "offload_overlap", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value a = kiln_exp(g, x);
    kiln_value h = kiln_memory_put(g, a, KILN_MEMORY_PINNED_HOST);
    kiln_value b = kiln_sin(g, kiln_mul(g, x, x));
    kiln_value b2 = kiln_cos(g, kiln_add(g, b, x));
    kiln_value b3 = kiln_exp(g, kiln_mul(g, b2, b));
    kiln_value y = kiln_add(g, kiln_memory_put(g, h, KILN_MEMORY_DEVICE), b3);
    CHECK_OK(c, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = NULL;
    kiln_compile_options o = {.device = 1, .disable_fusion = true, .keep_ir = true};
    CHECK_OK(c, kiln_compile(g, &o, &e));
    char *report = e ? kiln_executable_to_string(e) : NULL;
    CHECK_MSG(report && strstr(report, "in flight until step"),
              "the plan waits for no copy after its own step:\n%s", report ? report : "");
    kiln_string_free(c, report);
    kiln_array *arg = NULL, *res = NULL;
    float xv[4096] = {0};
    CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, d, xv, &arg));
    order(1);
    CHECK_OK(c, kiln_executable_run(e, 1, &arg, 1, &res));
    char log[8192];
    snprintf(log, sizeof log, "%s", order(0));
    long kernels = 0;
    const char *l = strstr(log, "L");
    CHECK_MSG(l && sscanf(l, "L%ld", &kernels) == 1, "no launch in the log: %s", log);
    int beside = 0;
    for (const char *p = strstr(log, "C"); p && kernels; p = strstr(p + 1, "C")) {
        long on = 0;
        if (sscanf(p, "C%ld", &on) != 1 || on == kernels) continue;
        beside++;
        /* after the kernels before it: the copy's stream waited for the kernels' stream */
        long before = 0;
        for (const char *q = log; q < p; q++) {
            long st, ev;
            if (*q == 'W' && sscanf(q, "W%ld@%ld", &st, &ev) == 2 && st == on) before = ev;
        }
        CHECK_MSG(before, "copy %ld on stream %ld waits for no kernel: %s", (long)(p - log), on,
                  log);
        long done = record_after(log, p, on);
        char want[48];
        snprintf(want, sizeof want, "W%ld@%ld ", kernels, done);
        const char *w = done ? strstr(p, want) : NULL;
        CHECK_MSG(w, "nothing on the kernels' stream %ld waits for the copy at %ld: %s", kernels,
                  (long)(p - log), log);
        /* and a kernel comes after the wait: the reader */
        CHECK_MSG(w && strstr(w, "L"), "no kernel after the wait for the copy: %s", log);
    }
    CHECK_MSG(beside >= 1, "no copy ran beside the kernels: %s", log);
    if (res) kiln_array_destroy(res);
    /* a copy the driver refuses fails the call, naming the call and what it was doing;
     * the next call runs */
    res = NULL;
    setenv("KILN_MOCK_CUDA_FAIL", "cuMemcpyDtoHAsync", 1);
    CHECK_STATUS(kiln_executable_run(e, 1, &arg, 1, &res), KILN_STATUS_BACKEND);
    unsetenv("KILN_MOCK_CUDA_FAIL");
    const char *why = kiln_last_error(c);
    CHECK_MSG(why && strstr(why, "cuMemcpyDtoHAsync") &&
                  strstr(why, "copying between memory kinds"),
              "the refused copy's error: %s", why ? why : "(none)");
    CHECK(res == NULL);
    CHECK_OK(c, kiln_executable_run(e, 1, &arg, 1, &res));
    if (res) kiln_array_destroy(res);
    kiln_array_destroy(arg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Kernels between the fetch of a pinned_host argument and the wait before its reader in
 * g's plan on `device` (its report), -1 when no copy is in flight past its own step. */
static int prefetch_window(kiln_context *c, kiln_graph *g, int device) {
    kiln_executable *e = NULL;
    kiln_compile_options o = {.device = device, .disable_fusion = true, .keep_ir = true};
    CHECK_OK(c, kiln_compile(g, &o, &e));
    char *report = e ? kiln_executable_to_string(e) : NULL;
    const char *at = report ? strstr(report, "in flight until step") : NULL;
    int until = -1, step = -1;
    if (at) { /* the line's step number: "  <step>: k<i> ..." */
        const char *line = at;
        while (line > report && line[-1] != '\n') line--;
        sscanf(line, " %d:", &step);
        sscanf(at, "in flight until step %d", &until);
    }
    kiln_string_free(c, report);
    kiln_executable_destroy(e);
    return at ? until - step - 1 : -1;
}

/* A fetch of a pinned_host argument (an offloaded parameter) is started
 * PLAN_TRANSFER_WINDOW steps before its reader, not right before it, where that costs no
 * device bytes (plan_prefetch_order, plan.c's plan_one): behind a chain of kernels that
 * run in place, the whole window; where a large temporary lives 3 to 7 steps before the
 * reader, 2 steps, so the peak stays the one without prefetching. Without overlapping
 * copies (the CPU) nothing moves. */
static void test_prefetch(kiln_context *c) {
    int64_t d[1] = {1024}, wide[2] = {16, 1024};
    kiln_graph *g = NULL;
    kiln_graph_create(c, "prefetch", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value w = kiln_parameter_in_memory(g, "w", KILN_DTYPE_F32, 1, d, KILN_MEMORY_PINNED_HOST);
    kiln_value h = x;
    for (int i = 0; i < 12; i++) h = i % 2 ? kiln_sin(g, h) : kiln_exp(g, h);
    kiln_value y = kiln_add(g, h, kiln_memory_put(g, w, KILN_MEMORY_DEVICE));
    CHECK_OK(c, kiln_graph_finish(g, 1, &y));
    int n = prefetch_window(c, g, 1);
    CHECK_MSG(n == PLAN_TRANSFER_WINDOW, "%d kernels beside the fetch, want %d", n,
              PLAN_TRANSFER_WINDOW);
    CHECK_MSG(prefetch_window(c, g, 0) < 0, "a copy overlaps on the CPU");
    kiln_graph_destroy(g);

    kiln_graph_create(c, "prefetch_peak", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    w = kiln_parameter_in_memory(g, "w", KILN_DTYPE_F32, 1, d, KILN_MEMORY_PINNED_HOST);
    kiln_value b = kiln_exp(g, kiln_broadcast_in_dim(g, x, 2, wide, (int[]){1}));
    h = kiln_reduce_sum(g, b, 1, (int[]){0}, false);
    h = kiln_sin(g, kiln_cos(g, kiln_exp(g, h)));
    y = kiln_add(g, h, kiln_memory_put(g, w, KILN_MEMORY_DEVICE));
    CHECK_OK(c, kiln_graph_finish(g, 1, &y));
    n = prefetch_window(c, g, 1);
    CHECK_MSG(n == 2,
              "%d kernels beside the fetch where the widest window that keeps the peak "
              "has 2",
              n);
    kiln_graph_destroy(g);
}

/* Split reductions (src/codegen/cgen.h): a kernel with a part kernel is two launches over
 * the device's scratch, and a program whose kiln_k<i>_parts cannot be read fails to
 * compile, naming it. */
static void test_split(kiln_context *c, long (*launches)(void)) {
    setenv("KILN_MOCK_CUDA_SPLIT", "1", 1);
    kiln_graph *g = NULL;
    kiln_graph_create(c, "split", &g);
    int64_t d[1] = {1000};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
    kiln_value y = kiln_reduce_sum(g, kiln_exp(g, x), 0, NULL, false);
    CHECK_OK(c, kiln_graph_finish(g, 1, &y));
    kiln_compile_options o = {.device = 1};
    kiln_executable *e = NULL;
    kiln_status s = kiln_compile(g, &o, &e);
    if (s && strstr(kiln_last_error(c), "NVRTC")) {
        test_skip_case("split reduction", "no NVRTC: %s", kiln_last_error(c));
    } else {
        CHECK_OK(c, s);
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        kiln_array *arg = NULL, *r = NULL;
        CHECK_OK(c, kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, d, NULL, &arg));
        long before = launches();
        CHECK_OK(c, kiln_executable_run(e, 1, &arg, 1, &r));
        CHECK_MSG(launches() - before == 2L * info.num_kernels, "%ld launches for %d split kernels",
                  launches() - before, info.num_kernels);
        kiln_array_destroy(r), kiln_array_destroy(arg);
        setenv("KILN_MOCK_CUDA_FAIL", "cuModuleGetGlobal", 1);
        kiln_executable *bad = NULL;
        CHECK_STATUS(kiln_compile(g, &o, &bad), KILN_STATUS_BACKEND);
        CHECK_CONTAINS(kiln_last_error(c), "cuModuleGetGlobal failed");
        CHECK_CONTAINS(kiln_last_error(c), "kiln_k0_parts");
        CHECK(bad == NULL);
        unsetenv("KILN_MOCK_CUDA_FAIL");
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    unsetenv("KILN_MOCK_CUDA_SPLIT");
}

/* The stand-in driver failing one entry point: the message names it. */
static void test_failures(void) {
    setenv("KILN_MOCK_CUDA_FAIL", "cuInit", 1);
    kiln_context *c = make(KILN_ALLOC_MODE_GROW);
    CHECK(c && kiln_device_count(c) == 1);
    kiln_graph *g = NULL;
    if (c) {
        kiln_graph_create(c, "g", &g);
        int64_t d[1] = {4};
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
        kiln_graph_finish(g, 1, &x);
        kiln_compile_options o = {.device = 1};
        kiln_executable *e = NULL;
        CHECK_STATUS(kiln_compile(g, &o, &e), KILN_STATUS_INVALID_ARGUMENT);
        CHECK_CONTAINS(kiln_last_error(c), "cuInit failed: CUDA_ERROR_NO_DEVICE");
        kiln_graph_destroy(g);
        kiln_context_destroy(c);
    }
    setenv("KILN_MOCK_CUDA_FAIL", "cuDevicePrimaryCtxRetain", 1);
    c = make(KILN_ALLOC_MODE_GROW);
    CHECK(c && kiln_device_count(c) == 2); /* contexts are made at first use */
    if (c) {
        int64_t n = 4;
        kiln_array *a = NULL;
        CHECK_STATUS(kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &n, NULL, &a),
                     KILN_STATUS_BACKEND);
        CHECK_CONTAINS(kiln_last_error(c),
                       "creating the context of cuda:0 (Mock GPU): cuDevicePrimaryCtxRetain "
                       "failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
        kiln_context_destroy(c);
    }
    setenv("KILN_MOCK_CUDA_FAIL", "cuMemAlloc", 1);
    c = make(KILN_ALLOC_MODE_DEFAULT);
    if (c) {
        int64_t n = 4;
        kiln_array *a = NULL;
        CHECK_STATUS(kiln_array_create_on(c, 1, KILN_DTYPE_F32, 1, &n, NULL, &a),
                     KILN_STATUS_DEVICE_OOM);
        CHECK_CONTAINS(kiln_last_error(c), "cannot preallocate");
        kiln_context_destroy(c);
    }
    unsetenv("KILN_MOCK_CUDA_FAIL");
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    kiln_context *c = make(KILN_ALLOC_MODE_GROW);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    long (*live)(void) = lib ? (long (*)(void))dlsym(lib, "mock_cuda_live") : NULL;
    long (*launches)(void) = lib ? (long (*)(void))dlsym(lib, "mock_cuda_launches") : NULL;
    long (*last)(void) = lib ? (long (*)(void))dlsym(lib, "mock_cuda_last_launch") : NULL;
    long (*last_y)(void) = lib ? (long (*)(void))dlsym(lib, "mock_cuda_last_grid_y") : NULL;
    const char *(*order)(int) = lib ? (const char *(*)(int))dlsym(lib, "mock_cuda_log") : NULL;
    const char *(*kernel)(void) =
        lib ? (const char *(*)(void))dlsym(lib, "mock_cuda_last_kernel") : NULL;
    if (!c || !live || !launches || !last || !last_y || !order || !kernel) {
        int rc = test_skip("the libcuda.so.1 loaded is not tests/mock_cuda.c");
        kiln_context_destroy(c);
        if (lib) dlclose(lib);
        test_remove_dir(dir);
        return rc;
    }
    test_copies(c);
    test_programs(c, launches);
    test_control_flow(c);
    test_offload(c);
    test_offload_overlap(c, order);
    test_budget_overlap(c);
    test_prefetch(c);
    test_gemm_limits(c);
    test_half_library(c, launches);
    test_batched_products(c, launches);
    test_sorted_scatter(c, launches, last);
    test_split(c, launches);
    test_attention(c, launches, last, kernel);
    test_attention_grad(c);
    test_conv_lib(c, launches, last, last_y);
    test_conv_program(c, launches);
    kiln_context_destroy(c);
    CHECK_MSG(live() == 0, "%ld driver objects were not released", live());
    test_memory();
    test_failures();
    CHECK_MSG(live() == 0, "%ld driver objects were not released", live());
    dlclose(lib);
    test_remove_dir(dir);
    return test_summary("test_cuda_mock");
}
