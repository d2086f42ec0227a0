/* test_cuda_nvrtc.c — the CUDA dialect compiles: the CUDA C the printer generates for
 * every test program is compiled by NVRTC for sm_90, with no GPU needed, so a dialect
 * mistake fails CI on a machine that has only the toolkit. Skipped (77) when NVRTC cannot
 * be loaded.
 *
 * Programs: per data dtype one graph of every elementwise op it accepts (each compare
 * direction and conversion), reductions of every kind in each form the printer has
 * (lane-strided in a warp, in a block, columns, full, nested), gathers, pads and
 * concatenations, the random programs of randprog.h (fused and one op per kernel), their
 * gradients (kiln_grad), every model of examples/models.h, and the GPU's library,
 * attention, argsort and sorted scatter kernels.
 * Each is compiled fused and (the op graphs) unfused; a failure prints NVRTC's log and
 * keeps the source under the build folder, and the test goes on to the next program.
 * KILN_TEST_PROGRAMS sets the number of random sub-programs; KILN_TEST_KEEP_CUDA=<folder>
 * keeps every generated source there. */
#define KILN_NO_LOCATION_MACROS
#include "test.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_program.h"
#include "codegen/cgen.h"
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "randprog.h"
#include "ewops.h"
#include "trace/trace.h"

#include "../examples/models.h"

#include <stdlib.h>

static kiln_context *ctx;
static cu_nvrtc nvrtc;
static int n_compiled, n_split;

/* CUDA source of g as kiln_compile would generate it (passes, fusion), compiled. */
static void check_graph(kiln_graph *g, const char *name, bool fuse) {
    kiln_graph *c = NULL;
    fusion_plan p = {0};
    bool have_plan = false;
    kiln_status s = pass_clone(g, &c);
    if (!s) s = pass_expand(&c, false); /* gather and scatter, as kiln_compile expands them */
    if (!s) s = passes_run(&c, NULL);
    fusion_options fo = {.disable = !fuse};
    if (!s && !(s = fusion_plan_build(c, &fo, &p))) have_plan = true;
    strbuf sb;
    sb_init(&sb, ctx);
    cgen_kernel *info = have_plan ? calloc(p.n_kernels + 1, sizeof *info) : NULL;
    if (!s) s = cgen_program_dialect(c, &p, CGEN_DIALECT_CUDA, &sb, info);
    CHECK_MSG(!s, "%s: generating CUDA: %s", name, kiln_last_error(ctx));
    char *src = s ? NULL : sb_take(&sb);
    sb_free(&sb);
    /* a split reduction's kiln_k<i> combines the parts (kiln_q) instead of reducing again */
    for (uint32_t i = 0; src && have_plan && i < p.n_kernels; i++) {
        if (!info[i].parts) continue;
        char head[80];
        snprintf(head, sizeof head, "void __launch_bounds__(256) kiln_k%u(", i);
        const char *k = strstr(src, head), *end = k ? strstr(k, "extern \"C\"") : NULL;
        bool combines = false;
        for (const char *q = k ? strstr(k, "kiln_q") : NULL; q && (!end || q < end);
             q = strstr(q + 1, "kiln_q"))
            combines = true;
        CHECK_MSG(combines, "%s: kernel %u is split but kiln_k%u does not combine its parts", name,
                  i, i);
        n_split++;
    }
    if (src) {
        char *cubin = NULL;
        size_t bytes = 0;
        s = cu_nvrtc_compile(ctx, &nvrtc, src, strlen(src), 9, 0, &cubin, &bytes);
        n_compiled++;
        const char *keep = getenv("KILN_TEST_KEEP_CUDA"); /* a folder: every source kept */
        if (keep && *keep) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s%s.cu", keep, name, fuse ? "" : "_unfused");
            FILE *f = fopen(path, "w");
            if (f) fputs(src, f), fclose(f);
        }
        if (s) {
            char path[256];
            snprintf(path, sizeof path, "nvrtc_failed_%s%s.cu", name, fuse ? "" : "_unfused");
            FILE *f = fopen(path, "w");
            if (f) fputs(src, f), fclose(f);
            fprintf(stderr, "source kept at %s\n", path);
        }
        CHECK_MSG(!s, "%s%s: %s", name, fuse ? "" : " (unfused)", kiln_last_error(ctx));
        CHECK_MSG(s || bytes > 0, "%s: empty cubin", name);
        if (cubin) host_free(ctx, cubin, bytes);
        kiln_string_free(ctx, src);
    }
    free(info);
    if (have_plan) fusion_plan_free(&p);
    kiln_graph_destroy(c);
}

static void check_outputs(kiln_graph *g, const char *name, int n, kiln_value *outs, bool unfused) {
    kiln_status s = kiln_graph_finish(g, n, outs);
    CHECK_MSG(!s, "%s did not build: %s", name, kiln_last_error(ctx));
    if (!s) {
        check_graph(g, name, true);
        if (unfused) check_graph(g, name, false);
    }
    kiln_graph_destroy(g);
}

static const kiln_dtype all_dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                        KILN_DTYPE_I64, KILN_DTYPE_BOOL, KILN_DTYPE_BF16,
                                        KILN_DTYPE_F16};

/* Every elementwise op on each dtype, as test_registry.c builds them. */
static void test_ops(void) {
    for (int d = 0; d < 7; d++) {
        kiln_dtype t = all_dtypes[d];
        kiln_graph *g = NULL;
        char name[32];
        snprintf(name, sizeof name, "ops_%s", kiln_dtype_name(t));
        kiln_graph_create(ctx, name, &g);
        int64_t dims[1] = {37};
        kiln_value a = kiln_parameter(g, "a", t, 1, dims);
        kiln_value b = kiln_parameter(g, "b", t, 1, dims);
        kiln_value p = kiln_parameter(g, "pred", KILN_DTYPE_BOOL, 1, dims);
        kiln_value outs[128];
        int n = ew_trace_all(g, t, a, b, p, outs, 128);
        check_outputs(g, name, n, outs, true);
    }
}

/* 16-bit elementwise kernels in each vector form (vec_plan): all 16-bit (eight a thread,
 * 16-byte accesses), 16-bit beside f32 (four a thread: 8-byte and 16-byte accesses), an
 * odd last axis (scalar); and the row kernels (softmax, layer norm) and a split sum. Each
 * form a program of its own, so that fusion does not merge them into one row kernel. */
static void test_half_forms(void) {
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_F16 : KILN_DTYPE_BF16;
        for (int form = 0; form < 4; form++) {
            kiln_graph *g = NULL;
            char name[48];
            snprintf(name, sizeof name, "half_form%d_%s", form, kiln_dtype_name(t));
            kiln_graph_create(ctx, name, &g);
            int64_t wide[2] = {300, 64}, odd[2] = {5, 37}, big = 300000;
            kiln_value x = kiln_parameter(g, "x", t, 2, wide);
            kiln_value outs[4];
            int n = 0;
            if (form == 0) {
                outs[n++] = kiln_add(g, kiln_mul(g, x, x), kiln_exp(g, x));
            } else if (form == 1) {
                kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 2, wide);
                outs[n++] = kiln_mul(g, kiln_convert(g, x, KILN_DTYPE_F32), f);
                outs[n++] = kiln_convert(g, kiln_add(g, f, f), t);
            } else if (form == 2) {
                kiln_value z = kiln_parameter(g, "z", t, 2, odd);
                outs[n++] = kiln_sub(g, z, kiln_mul(g, z, z));
                outs[n++] = kiln_reduce_sum(g, kiln_parameter(g, "v", t, 1, &big), 0, NULL, false);
            } else {
                outs[n++] = kiln_softmax(g, x, -1);
                outs[n++] = kiln_layer_norm(g, kiln_mul(g, x, x), (kiln_value){0, 0},
                                            (kiln_value){0, 0}, 1e-5);
            }
            check_outputs(g, name, n, outs, form < 2);
        }
    }
}

/* Reductions of each kind and dtype in each printed form: rows long and short (a warp or
 * the block per element), columns, to a scalar, nested inside another reduction; and the
 * data movement the printer guards (gathers, pads, concatenations, iota). */
static void test_forms(void) {
    static const kiln_dtype types[] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                       KILN_DTYPE_I64, KILN_DTYPE_BF16, KILN_DTYPE_F16};
    for (int d = 0; d < 6; d++) {
        kiln_dtype t = types[d];
        kiln_graph *g = NULL;
        char name[32];
        snprintf(name, sizeof name, "reduce_%s", kiln_dtype_name(t));
        kiln_graph_create(ctx, name, &g);
        int64_t big[2] = {5000, 64}, small[2] = {3, 700};
        kiln_value x = kiln_parameter(g, "x", t, 2, big), y = kiln_parameter(g, "y", t, 2, small);
        kiln_value outs[32];
        int n = 0, ax1[1] = {1}, ax0[1] = {0};
        outs[n++] = kiln_reduce_sum(g, x, 1, ax1, false);
        outs[n++] = kiln_reduce_max(g, x, 1, ax1, true);
        outs[n++] = kiln_reduce_min(g, y, 1, ax1, false);
        outs[n++] = kiln_reduce_prod(g, y, 1, ax1, false);
        outs[n++] = kiln_reduce_sum(g, x, 1, ax0, false); /* columns */
        outs[n++] = kiln_reduce_max(g, y, 1, ax0, false);
        outs[n++] = kiln_reduce_sum(g, x, 0, NULL, false); /* everything */
        outs[n++] = kiln_reduce_min(g, y, 0, NULL, false);
        /* a row reduction over values that need another reduction of their own row */
        kiln_value m = kiln_reduce_max(g, y, 1, ax1, true);
        outs[n++] = kiln_reduce_sum(g, kiln_sub(g, y, m), 1, ax1, false);
        check_outputs(g, name, n, outs, false);
    }
    /* reductions split over blocks: several in one kernel (a global norm), one after a
     * store, a column reduction of few items, and one reading another's result */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "split", &g);
    int64_t da = 500, db[2] = {300, 200}, dc[2] = {4000, 300};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, &da);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 2, db);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F32, 2, dc);
    int ax0[1] = {0};
    kiln_value sq = kiln_add(g, kiln_reduce_sum(g, kiln_mul(g, a, a), 0, NULL, false),
                             kiln_reduce_sum(g, kiln_mul(g, b, b), 0, NULL, false));
    kiln_value m = kiln_reduce_max(g, b, 0, NULL, false);
    kiln_value so[4] = {kiln_sqrt(g, sq), m,
                        kiln_reduce_sum(g, kiln_exp(g, kiln_sub(g, b, m)), 0, NULL, false),
                        kiln_reduce_sum(g, c, 1, ax0, false)};
    check_outputs(g, "split", 4, so, false);
    g = NULL;
    kiln_graph_create(ctx, "movement", &g);
    int64_t d2[2] = {6, 9}, di[1] = {4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d2);
    kiln_value idx = kiln_parameter(g, "idx", KILN_DTYPE_I32, 1, di);
    kiln_value outs[8];
    int n = 0;
    outs[n++] = kiln_take_rows(g, x, idx);
    int64_t lo[2] = {1, 2}, hi[2] = {0, 3}, in[2] = {0, 1};
    outs[n++] = kiln_pad(g, x, kiln_scalar(g, KILN_DTYPE_F32, -1), lo, hi, in);
    kiln_value parts[3] = {x, kiln_exp(g, x), x};
    outs[n++] = kiln_concatenate(g, 3, parts, 1);
    outs[n++] = kiln_add(g, x, kiln_iota(g, KILN_DTYPE_F32, 2, d2, 1));
    check_outputs(g, "movement", n, outs, true);
    test_half_forms();
}

static void test_random(int subs) {
    for (int k = 0; k < 4; k++) {
        kiln_graph *g = NULL;
        char name[32];
        snprintf(name, sizeof name, "random_%d", k);
        kiln_graph_create(ctx, name, &g);
        rp_state s = {.seed = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1)};
        for (int i = 0; i < subs / 4 + 1; i++) rp_sub(&s, g);
        check_outputs(g, name, s.n_outs, s.outs, k == 0);
    }
    for (int k = 0; k < 2; k++) { /* gradients */
        kiln_graph *g = NULL;
        char name[32];
        snprintf(name, sizeof name, "grad_%d", k);
        kiln_graph_create(ctx, name, &g);
        rp_state s = {.seed = 0x5851f42d4c957f2dull * (uint64_t)(k + 3)};
        kiln_value loss = rp_loss(&s, g, k ? KILN_DTYPE_F64 : KILN_DTYPE_F32, 3);
        kiln_value outs[RP_MAX_PARAMS + 1];
        outs[0] = loss;
        kiln_value wrt[RP_MAX_PARAMS];
        int nw = 0;
        for (int i = 0; i < s.n_params; i++)
            if (s.params[i].t == KILN_DTYPE_F32 || s.params[i].t == KILN_DTYPE_F64)
                wrt[nw++] = s.params[i].v;
        CHECK_OK(ctx, kiln_grad(g, loss, nw, wrt, outs + 1));
        check_outputs(g, name, nw + 1, outs, false);
    }
}

static void test_models(void) {
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        model m = {0};
        kiln_graph_create(ctx, models[i].name, &m.g);
        int n = models[i].build(&m);
        CHECK_MSG(n > 0, "model %s did not build: %s", models[i].name, kiln_last_error(ctx));
        if (n > 0)
            check_outputs(m.g, models[i].name, n, m.outs, false);
        else
            kiln_graph_destroy(m.g);
    }
}

/* Gather and scatter (their expansions: take_rows, scatter_add_rows and compare-reduce
 * loops), every kind, both modes, with gradients, in f32 and bf16. */
static void test_gather(void) {
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
        char name[32];
        snprintf(name, sizeof name, "gather_%s", kiln_dtype_name(t));
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t xd[2] = {6, 5}, ud[2] = {4, 5};
        kiln_value x = kiln_parameter(g, "x", t, 2, xd), u = kiln_parameter(g, "u", t, 2, ud);
        kiln_value win = kiln_parameter(g, "w", KILN_DTYPE_I32, 2, (int64_t[]){4, 2});
        kiln_value rows = kiln_parameter(g, "r", KILN_DTYPE_I64, 2, (int64_t[]){4, 1});
        kiln_gather_dims gd = {.n_offset_dims = 2,
                               .offset_dims = {1, 2},
                               .n_start_index_map = 2,
                               .start_index_map = {0, 1}};
        kiln_scatter_dims sd = {.n_update_window_dims = 1,
                                .update_window_dims = {1},
                                .n_inserted_window_dims = 1,
                                .n_scatter_dims_to_operand_dims = 1};
        kiln_value outs[9];
        outs[0] = kiln_gather(g, x, win, &gd, (int64_t[]){2, 2}, KILN_GATHER_FILL, NULL);
        outs[1] = kiln_gather(g, x, win, &gd, (int64_t[]){2, 3}, KILN_GATHER_CLIP, NULL);
        for (int k = 0; k < 5; k++)
            outs[2 + k] = kiln_scatter(g, (kiln_scatter_kind)k, x, rows, u, &sd,
                                       k % 2 ? KILN_GATHER_CLIP : KILN_GATHER_FILL);
        kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, outs[0], outs[0]), 0, NULL, false);
        loss = kiln_add(g, loss, kiln_reduce_sum(g, kiln_add(g, outs[3], outs[6]), 0, NULL, false));
        CHECK_OK(ctx, kiln_grad(g, loss, 2, (kiln_value[]){x, u}, outs + 7));
        check_outputs(g, name, 9, outs, true);
    }
}

/* The CUDA source kiln_compile would print for g (fused), or NULL. */
static char *cuda_source(kiln_graph *g) {
    kiln_graph *c = NULL;
    fusion_plan p = {0};
    kiln_status s = pass_clone(g, &c);
    if (!s) s = passes_run(&c, NULL);
    fusion_options fo = {0};
    bool have_plan = !s && !(s = fusion_plan_build(c, &fo, &p));
    strbuf sb;
    sb_init(&sb, ctx);
    cgen_kernel *info = have_plan ? calloc(p.n_kernels + 1, sizeof *info) : NULL;
    if (!s) s = cgen_program_dialect(c, &p, CGEN_DIALECT_CUDA, &sb, info);
    char *src = s ? NULL : sb_take(&sb);
    sb_free(&sb);
    free(info);
    if (have_plan) fusion_plan_free(&p);
    kiln_graph_destroy(c);
    return src;
}

/* Loads in flight: a loop over a block's lanes that takes one element a trip keeps one 2-
 * or 4-byte load in flight per thread, too few bytes to cover device memory's latency
 * (an H200 ran the block-per-row softmax at a third of the copy's bandwidth so). The row's
 * passes take 16 bytes a lane a trip (eight bf16 or four f32 elements, one vector load),
 * step by a constant and are unrolled; a column reduction's thread takes its element
 * without a loop or a test, so the rows around it unroll; the column combine spreads each
 * column's parts over 8 lanes. */
static void test_loads_in_flight(void) {
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "rows", &g);
        int64_t dr[2] = {64, 8192}, dc[2] = {4096, 512};
        kiln_value x = kiln_parameter(g, "x", t, 2, dr), y = kiln_parameter(g, "y", t, 2, dc);
        int ax0[1] = {0};
        kiln_value outs[2] = {kiln_softmax(g, x, -1), kiln_reduce_sum(g, y, 1, ax0, false)};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        char *src = cuda_source(g);
        CHECK_MSG(src, "%s: no CUDA source: %s", kiln_dtype_name(t), kiln_last_error(ctx));
        if (src) {
            CHECK_MSG(!strstr(src, "+= blockDim.x)"), "%s: a lane loop steps by blockDim.x",
                      kiln_dtype_name(t));
            const char *row = strstr(src, "__shared__");
            CHECK_MSG(row && strstr(row, "#pragma unroll 4\n        for (int64_t kiln_c"),
                      "%s: the row's passes are not unrolled vector passes", kiln_dtype_name(t));
            CHECK_MSG(row &&
                          strstr(row, d ? "= *(const uint4 *)&in0[" : "= *(const float4 *)&in0["),
                      "%s: the row is not read 16 bytes a lane", kiln_dtype_name(t));
            const char *part = strstr(src, "_part(");
            const char *end = part ? strstr(part, "extern \"C\"") : NULL;
            const char *one = part ? strstr(part, "= jb + threadIdx.x;") : NULL;
            CHECK_MSG(one && (!end || one < end),
                      "%s: the column part kernel's thread takes its element in a loop",
                      kiln_dtype_name(t));
            /* the combine: 8 lanes a column, each taking every eighth part, unrolled */
            const char *combine =
                end ? strstr(end, "for (int64_t kiln_q = threadIdx.x % 8; kiln_q < ") : NULL;
            const char *pragma = end ? strstr(end, "#pragma unroll 4\n") : NULL;
            bool unrolled = combine && pragma && pragma < combine;
            for (const char *q = pragma ? pragma + 17 : NULL; unrolled && q < combine; q++)
                unrolled = *q == ' ' || *q == '\n'; /* the pragma is the loop's */
            CHECK_MSG(unrolled, "%s: the column combine does not spread its parts over lanes",
                      kiln_dtype_name(t));
            kiln_string_free(ctx, src);
        }
        kiln_graph_destroy(g);
    }
}

/* Row kernels over short rows (schedule.c, row_groups): a softmax over rows of 256 gives a
 * block 8 rows, a warp each, whose lanes stride the row by 32 and combine by shuffles
 * alone; a layer norm over rows of 512, 4 rows of two warps, combined behind the row's own
 * barrier; rows of 1000, 2 rows of four warps; none of them waits on __syncthreads. A
 * softmax over rows of 8192 keeps a block per row. Each is compiled too. */
static void test_short_row_form(void) {
    static const struct {
        int64_t n;
        bool norm;
        const char *item, *lane, *barrier;
    } cases[] = {
        {256, false, "it = kiln_g * 8 + threadIdx.x / 32;", "(threadIdx.x % 32); ", NULL},
        {512, true, "it = kiln_g * 4 + threadIdx.x / 64;", "(threadIdx.x % 64); ",
         "__barrier_sync_count(1 + threadIdx.x / 64, 64);"},
        {1000, false, "it = kiln_g * 2 + threadIdx.x / 128;", "(threadIdx.x % 128); ",
         "__barrier_sync_count(1 + threadIdx.x / 128, 128);"},
        {8192, false, "for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {",
         "= threadIdx.x; ", "__syncthreads();"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[48];
        snprintf(name, sizeof name, "short_row_form_%lld", (long long)cases[i].n);
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t d[2] = {300, cases[i].n};
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
        kiln_value y = cases[i].norm
                           ? kiln_layer_norm(g, x, (kiln_value){0, 0}, (kiln_value){0, 0}, 1e-5)
                           : kiln_softmax(g, x, -1);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        char *src = cuda_source(g);
        CHECK_MSG(src, "%s: no CUDA source: %s", name, kiln_last_error(ctx));
        const char *k = src ? strstr(src, "__global__ void") : NULL;
        if (k) {
            bool grouped = cases[i].n <= 1024;
            CHECK_MSG(strstr(k, cases[i].item), "%s: its items are not \"%s\"", name,
                      cases[i].item);
            CHECK_MSG(strstr(k, cases[i].lane), "%s: no lane loop from \"%s\"", name,
                      cases[i].lane);
            CHECK_MSG(strstr(k, "#pragma unroll 4\n") && strstr(k, "= *(const float4 *)&in0["),
                      "%s: the row's passes are not unrolled, four elements a lane", name);
            CHECK_MSG(!cases[i].barrier || strstr(k, cases[i].barrier), "%s: no \"%s\"", name,
                      cases[i].barrier);
            CHECK_MSG(!grouped || !strstr(k, "__syncthreads"), "%s: a barrier of the block", name);
        }
        if (src) kiln_string_free(ctx, src);
        check_graph(g, name, true);
        kiln_graph_destroy(g);
    }
}

/* The backend's own kernel sources (the library's, the fused attention's and its
 * gradient's, argsort's, the convolution's, the sorted scatter's): each compiles for sm_90
 * to a cubin. */
static void test_library(void) {
    static const struct {
        const char *name;
        const char *(*source)(size_t *len);
    } libs[] = {{"library", cu_lib_source},
                {"attention", cu_attention_source},
                {"attention gradient", cu_attention_grad_source},
                {"argsort", cu_sort_source},
                {"convolution", cu_conv_source},
                {"sorted scatter", cu_scatter_source}};
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
        size_t len, bytes = 0;
        const char *src = libs[i].source(&len);
        char *cubin = NULL;
        kiln_status s = cu_nvrtc_compile(ctx, &nvrtc, src, len, 9, 0, &cubin, &bytes);
        CHECK_MSG(!s, "%s kernels: %s", libs[i].name, kiln_last_error(ctx));
        CHECK_MSG(s || bytes > 0, "%s kernels: empty cubin", libs[i].name);
        if (cubin) host_free(ctx, cubin, bytes);
    }
    /* the scatter source's block and shared array are the sizes the host launches and
     * chunks by */
    size_t len;
    const char *src = cu_scatter_source(&len);
    char want[64];
    snprintf(want, sizeof want, "#define SCATTER_THREADS %d\n", CU_SCATTER_THREADS);
    CHECK_MSG(strstr(src, want), "sorted scatter kernels: no \"%s\"", want);
    snprintf(want, sizeof want, "#define SCATTER_SHARED %d\n", CU_SCATTER_CHUNK);
    CHECK_MSG(strstr(src, want), "sorted scatter kernels: no \"%s\"", want);
    /* the convolution's block is the one its host launches */
    src = cu_conv_source(&len);
    snprintf(want, sizeof want, "#define CONV_THREADS %d\n", CU_CONV_THREADS);
    CHECK_MSG(strstr(src, want), "convolution kernels: no \"%s\"", want);
}

int main(void) {
    char why[256];
    if (!cu_nvrtc_load(&nvrtc, why, sizeof why)) return test_skip("no NVRTC: %s", why);
    printf("test_cuda_nvrtc: NVRTC %d.%d, compiling for sm_90\n", nvrtc.major, nvrtc.minor);
    char dir[] = "/tmp/kiln-nvrtc-XXXXXX";
    ctx = test_private_context(dir);
    if (!ctx) return 1;
    test_library();
    test_loads_in_flight();
    test_short_row_form();
    test_ops();
    test_forms();
    test_random(rp_program_count(24));
    test_models();
    test_gather();
    printf("test_cuda_nvrtc: %d programs compiled, %d split reductions among them\n", n_compiled,
           n_split);
    CHECK_MSG(n_split >= 3, "only %d split reductions: the split program has more", n_split);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    cu_nvrtc_unload(&nvrtc);
    return test_summary("test_cuda_nvrtc");
}
