/* test_half_ops.c — bf16 and f16 through every op that is not elementwise (the
 * elementwise ones are test_registry.c's): products, reductions, indexing, scans,
 * attention and the shape ops, each compiled fused and unfused and compared with the
 * reference interpreter (compare.h), with the tolerance each op needs and why.
 *
 * The kernels sum in f32 and round each result once; the reference sums in f64 and rounds
 * once (through f32 for bf16). So a result differs from the reference's by at most one
 * ulp of the 16-bit type where the exact value lies within an f32 rounding error of a
 * rounding boundary, plus the f32 sum's own error: for the sizes here (at most a few
 * hundred terms of magnitude at most 4) that error is below 2^-14 of the largest partial
 * sum, far below a bf16 or f16 ulp of the outputs. cmp_half_tol's two ulps (relative to
 * 1 + |want|) cover it; an op that needs more says so where its case is built. */
#include "compare.h"
#include "ir/ir.h"

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/blas.h"
#include "base/half.h"
#include "rng.h"

static kiln_context *ctx;
static char cache_dir[] = "/tmp/kiln-test-half-ops-XXXXXX"; /* main makes it */
static uint64_t seed;

static const kiln_dtype halves[] = {KILN_DTYPE_BF16, KILN_DTYPE_F16};

typedef int (*half_build)(kiln_graph *g, kiln_dtype t, kiln_value *outs);

/* Builds the case in dtype t, random data for every parameter, and compares the compiled
 * program (fused, then one kernel per op) with the reference within tol (the 16-bit
 * tolerance is cmp_half_tol or tol, whichever is larger). */
static void check_half(const char *name, half_build build, kiln_dtype t, double tol) {
    kiln_graph *g;
    kiln_graph_create(ctx, name, &g);
    kiln_value outs[32];
    int n = build(g, t, outs);
    if (kiln_graph_finish(g, n, outs) != KILN_STATUS_OK) {
        CHECK_MSG(0, "%s (%s) did not build: %s", name, kiln_dtype_name(t), kiln_last_error(ctx));
        kiln_graph_destroy(g);
        return;
    }
    kiln_array *args[32];
    int np = kiln_graph_num_parameters(g);
    for (int i = 0; i < np; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        args[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, p->shape.dims, &seed);
    }
    for (int unfused = 0; unfused < 2; unfused++) {
        kiln_compile_options o = {.disable_fusion = unfused};
        CHECK_MSG(cmp_graph(ctx, g, np, args, &o, tol, NULL),
                  "%s (%s, %s) differs from the reference", name, kiln_dtype_name(t),
                  unfused ? "unfused" : "fused");
    }
    for (int i = 0; i < np; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void check_both(const char *name, half_build build, double tol) {
    for (int i = 0; i < 2; i++) check_half(name, build, halves[i], tol);
}

/* ---------------------------------------------------------------- products ---- */

static kiln_value param(kiln_graph *g, const char *name, kiln_dtype t, int rank,
                        const int64_t *dims) {
    return kiln_parameter(g, name, t, rank, dims);
}

/* Small products in every layout lower_dot.c distinguishes: plain, transposed operands read
 * in place (trans flags), operands that need packing, batch axes first or in the middle,
 * vectors. */
static int b_dot_layouts(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[3] = {2, 3, 4}, bd[3] = {2, 5, 4}, cd[2] = {4, 3}, vd[1] = {4}, qd[3] = {6, 4, 8};
    kiln_value a = param(g, "a", t, 3, ad), b = param(g, "b", t, 3, bd);
    kiln_value c = param(g, "c", t, 2, cd), v = param(g, "v", t, 1, vd);
    kiln_value q = param(g, "q", t, 3, qd), k = param(g, "k", t, 3, qd);
    kiln_dot_dims dd = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {2}, .n_batch = 1};
    kiln_dot_dims odd = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    kiln_dot_dims heads = {.n_contract = 1,
                           .lhs_contract = {2},
                           .rhs_contract = {2},
                           .n_batch = 1,
                           .lhs_batch = {1},
                           .rhs_batch = {1}};
    kiln_dot_dims pv = {.n_contract = 1,
                        .lhs_contract = {0},
                        .rhs_contract = {0},
                        .n_batch = 1,
                        .lhs_batch = {1},
                        .rhs_batch = {1}};
    int n = 0;
    o[n++] = kiln_dot_general(g, a, b, &dd);  /* batched, rhs transposed */
    o[n++] = kiln_dot_general(g, a, c, &odd); /* needs packing */
    o[n++] = kiln_matmul(g, v, c);            /* vector @ matrix */
    o[n++] = kiln_matmul(g, kiln_transpose(g, c, (int[]){1, 0}), v);
    o[n++] = kiln_dot_general(g, q, k, &heads); /* heads: a middle batch axis */
    o[n++] = kiln_dot_general(g, q, k, &pv);    /* both operands transposed */
    return n;
}

/* Products past every block of gemm_half.c (rows past MC, columns past NC, K past KC and
 * odd), and large enough that cpu_backend.c splits them into row blocks over threads
 * (tall: each thread's block still past MC rows; its K odd and short of AMX's 32). */
static int b_dot_blocks(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {131, 301}, bd[2] = {301, 270}, btd[2] = {270, 301}, atd[2] = {301, 131};
    int64_t xd[3] = {3, 40, 129}, wd[3] = {3, 129, 33};
    kiln_value a = param(g, "a", t, 2, ad), b = param(g, "b", t, 2, bd);
    kiln_value bt = param(g, "bt", t, 2, btd), at = param(g, "at", t, 2, atd);
    kiln_value x = param(g, "x", t, 3, xd), w = param(g, "w", t, 3, wd);
    int64_t td[2] = {900, 27}, ttd[2] = {27, 900}, sd[2] = {27, 45};
    kiln_value tall = param(g, "tall", t, 2, td), tallt = param(g, "tallt", t, 2, ttd);
    kiln_value s = param(g, "s", t, 2, sd);
    kiln_dot_dims abt = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    kiln_dot_dims atb = {.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
    kiln_dot_dims bat = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}, .n_batch = 1};
    int n = 0;
    o[n++] = kiln_matmul(g, a, b);
    o[n++] = kiln_dot_general(g, a, bt, &abt);
    o[n++] = kiln_dot_general(g, at, b, &atb);
    o[n++] = kiln_dot_general(g, x, w, &bat);
    o[n++] = kiln_matmul(g, tall, s);
    o[n++] = kiln_dot_general(g, tallt, s, &atb);
    /* a product feeding elementwise work: the rounding happens once, at the product */
    o[n++] = kiln_tanh(g, kiln_add(g, kiln_matmul(g, a, b), kiln_scalar(g, t, 0.5)));
    return n;
}

/* Every kernel this CPU has for bf16 products (gemm_half.c: widened to f32, vdpbf16ps,
 * AMX), each forced in turn, then the one it picks. */
static void test_products(void) {
    static const struct {
        cpu_half_path path;
        const char *name;
    } paths[] = {{CPU_HALF_F32, "f32 kernel"},
                 {CPU_HALF_DPBF16, "vdpbf16ps"},
                 {CPU_HALF_AMX, "AMX"},
                 {CPU_HALF_AUTO, "the CPU's choice"}};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        if (!cpu_half_gemm_has(paths[i].path)) {
            test_skip_case(paths[i].name, "this CPU has no such kernel");
            continue;
        }
        char l[64], b[64];
        snprintf(l, sizeof l, "dot layouts, %s", paths[i].name);
        snprintf(b, sizeof b, "dot blocks, %s", paths[i].name);
        cpu_half_gemm_force(paths[i].path);
        check_both(l, b_dot_layouts, 0);
        check_both(b, b_dot_blocks, 0);
    }
    cpu_half_gemm_force(CPU_HALF_AUTO);
}

/* ------------------------------------------------------- every other op ---- */

static const int64_t d345[] = {3, 4, 5}, d45[] = {4, 5};

static int b_sources(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    /* iota's values are small integers, exact in both types; a constant's bits are kept */
    uint16_t bits[4] = {0x3f80u, 0xc040u, 0x0001u, 0x7bffu};
    int64_t d4[1] = {4};
    kiln_value x = param(g, "x", t, 3, d345);
    o[0] = kiln_add(g, x, kiln_iota(g, t, 3, d345, 2));
    o[1] = kiln_constant(g, t, 1, d4, bits);
    o[2] = kiln_iota(g, t, 2, d45, 0);
    return 3;
}

/* Shape ops move bits: equal to the reference's (the tolerance is cmp_half_tol's floor). */
static int b_shapes(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 3, d345), y = param(g, "y", t, 2, d45);
    int n = 0;
    int64_t d3445[4] = {3, 4, 4, 5}, d20[1] = {20}, st[3] = {1, 0, 1}, lim[3] = {3, 4, 5},
            str[3] = {1, 2, 2}, lo[3] = {1, -1, 2}, hi[3] = {0, 2, -1}, in[3] = {0, 1, 1};
    o[n++] = kiln_broadcast_in_dim(g, y, 4, d3445, (int[]){2, 3});
    o[n++] = kiln_reshape(g, y, 1, d20);
    o[n++] = kiln_transpose(g, x, (int[]){2, 0, 1});
    o[n++] = kiln_slice(g, x, st, lim, str);
    o[n++] = kiln_concatenate(g, 2, (kiln_value[]){x, kiln_neg(g, x)}, 1);
    o[n++] = kiln_pad(g, x, kiln_scalar(g, t, -1.5), lo, hi, in);
    o[n++] = kiln_rev(g, x, 2, (int[]){0, 2});
    /* the same moves fused with arithmetic, so a kernel loads and stores the 16 bits */
    o[n++] = kiln_mul(g, kiln_transpose(g, x, (int[]){1, 2, 0}), kiln_scalar(g, t, 3));
    return n;
}

/* Reductions sum in f32 (blocked; the reference in f64) and round once: within an f32
 * error of 5 terms of at most 2 of the result, far under a 16-bit ulp; max and min are
 * exact; prod's f32 product of 4 or 5 factors differs by a few f32 ulps at most. */
static int b_reductions(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 3, d345);
    int a0 = 0, a12[2] = {1, 2}, am1 = -1, n = 0;
    o[n++] = kiln_reduce_sum(g, x, 1, &a0, false);
    o[n++] = kiln_reduce_sum(g, x, 2, a12, true);
    o[n++] = kiln_reduce_max(g, x, 2, a12, true);
    o[n++] = kiln_reduce_min(g, x, 1, &am1, false);
    o[n++] = kiln_reduce_prod(g, x, 1, &am1, false);
    o[n++] = kiln_mean(g, x, 0, NULL, false);
    return n;
}

/* A long row, so the blocked f32 sum runs over many blocks: 4096 terms in [-2, 2] sum in
 * f32 within 4096 * 2 * 2^-24 < 2^-10 of the exact sum; relative to 1 + |want| that is
 * half an f16 ulp at most, on top of the rounding: three ulps. */
static int b_long_sum(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {3, 4096};
    int a1 = 1;
    o[0] = kiln_reduce_sum(g, param(g, "x", t, 2, d), 1, &a1, false);
    return 1;
}

static int b_indexing(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t td[2] = {5, 3}, id[2] = {2, 4}, ud[3] = {2, 4, 3};
    kiln_value tab = param(g, "t", t, 2, td), up = param(g, "up", t, 3, ud);
    kiln_value idx = param(g, "idx", KILN_DTYPE_I32, 2, id); /* in [-5, 5]: some out of range */
    int n = 0;
    o[n++] = kiln_take_rows(g, tab, idx);
    o[n++] = kiln_scatter_add_rows(g, tab, idx, up); /* duplicates: one rounding per add */
    o[n++] = kiln_take_rows(g, kiln_exp(g, tab), kiln_convert(g, idx, KILN_DTYPE_I64));
    return n;
}

/* Scatter-add with many updates per row, and large enough to be split into parts: every
 * addition rounds to the type, in index order, in both, so the two differ only where an
 * f32 sum of two 16-bit values is inexact and double-rounds (rare, one ulp, then carried
 * on by the later additions to that element): four ulps. */
static int b_scatter_many(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t td[2] = {64, 700}, id[1] = {300}, ud[2] = {300, 700};
    kiln_value tab = param(g, "t", t, 2, td), up = param(g, "up", t, 2, ud);
    kiln_value idx = param(g, "idx", KILN_DTYPE_I64, 1, id);
    idx = kiln_min(g, kiln_abs(g, idx), kiln_scalar(g, KILN_DTYPE_I64, 63));
    o[0] = kiln_scatter_add_rows(g, tab, idx, up);
    return 1;
}

/* Gather and scatter with dimension numbers (random indices in [-5, 5]: some out of range
 * in both modes): gathers and set/min/max move values unchanged; add rounds once per update
 * in update order on both sides; mul's expansion multiplies the updates together before
 * the operand (x * (u1 * u2), the reference (x * u1) * u2): a few ulps. */
static int b_gather_scatter(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t td[2] = {5, 3}, id[3] = {2, 4, 1}, ud[3] = {2, 4, 3};
    kiln_value tab = param(g, "t", t, 2, td), up = param(g, "up", t, 3, ud);
    kiln_value idx = param(g, "idx", KILN_DTYPE_I32, 3, id);
    kiln_gather_dims gd = {.n_offset_dims = 1,
                           .offset_dims = {2},
                           .n_collapsed_slice_dims = 1,
                           .n_start_index_map = 1};
    kiln_scatter_dims sd = {.n_update_window_dims = 1,
                            .update_window_dims = {2},
                            .n_inserted_window_dims = 1,
                            .n_scatter_dims_to_operand_dims = 1};
    int64_t sz[2] = {1, 3};
    int n = 0;
    o[n++] = kiln_gather(g, tab, idx, &gd, sz, KILN_GATHER_FILL, NULL);
    o[n++] = kiln_gather(g, kiln_exp(g, tab), idx, &gd, sz, KILN_GATHER_CLIP, NULL);
    for (int k = KILN_SCATTER_SET; k <= KILN_SCATTER_MAX; k++)
        o[n++] = kiln_scatter(g, (kiln_scatter_kind)k, tab, idx, up, &sd,
                              k % 2 ? KILN_GATHER_FILL : KILN_GATHER_CLIP);
    return n;
}

/* Dynamic slices move 16-bit values unchanged: random i32 starts (clamped into range),
 * fused with an op that rounds. */
static int b_dynamic(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ud[3] = {2, 2, 5};
    kiln_value x = param(g, "x", t, 3, d345), u = param(g, "u", t, 3, ud), st[3];
    static const char *const names[3] = {"i", "j", "k"};
    for (int a = 0; a < 3; a++) st[a] = param(g, names[a], KILN_DTYPE_I32, 0, NULL);
    o[0] = kiln_dynamic_slice(g, x, 3, st, (const int64_t[]){2, 3, 4});
    o[1] = kiln_dynamic_update_slice(g, x, kiln_exp(g, u), 3, st);
    return 2;
}

/* cumsum keeps an f64 running sum (as the reference) and rounds each output once: the
 * same bits but for bf16's two roundings through f32, which both make. */
static int b_cumsum(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {7, 300};
    kiln_value x = param(g, "x", t, 3, d345), y = param(g, "y", t, 2, d);
    o[0] = kiln_cumsum(g, x, 1, false);
    o[1] = kiln_cumsum(g, x, 2, true);
    o[2] = kiln_cumsum(g, y, 1, false); /* one column: the scalar scan */
    o[3] = kiln_cumsum(g, y, 0, true);  /* 300 columns: chunks of CPU_SCAN_CHUNK */
    return 4;
}

/* argsort on the 16-bit keys widened exactly (16-bit random values tie often, which the
 * stable order settles), the values gathered by them: sort and top_k are exact. */
static int b_sort(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {5, 600};
    kiln_value x = param(g, "x", t, 3, d345), y = param(g, "y", t, 2, d), v, i;
    o[0] = kiln_argsort(g, x, 1, false);
    o[1] = kiln_argsort(g, x, 0, true);
    kiln_sort(g, 1, &y, 1, 1, false, &o[2]);
    kiln_top_k(g, y, 20, &v, &i);
    o[3] = v, o[4] = i;
    kiln_value ops[2] = {x, kiln_exp(g, x)};
    kiln_sort(g, 2, ops, 2, 1, true, &o[5]);
    return 7;
}

/* Attention in f32 (an exp of about one f32 ulp, f32 products and sums) on the widened
 * operands, each output rounded once: the f32 error is far under a 16-bit ulp. */
static int b_attention(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t qd[4] = {2, 70, 4, 8}, kd[4] = {2, 70, 2, 8}, vd[4] = {2, 70, 2, 6};
    kiln_value q = param(g, "q", t, 4, qd), k = param(g, "k", t, 4, kd),
               v = param(g, "v", t, 4, vd);
    kiln_attention_options causal = {.is_causal = true}, plain = {.scale = 0.5};
    o[0] = kiln_dot_product_attention(g, q, k, v, &causal);
    o[1] = kiln_dot_product_attention(g, q, k, v, &plain);
    return 2;
}

/* cholesky and triangular_solve take f32 and f64 only (LAPACK's types, as JAX on the
 * CPU): a 16-bit matrix is refused by name, and the mixed-precision way, through f32 and
 * back, matches the reference. */
static int b_linalg(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[3] = {2, 5, 5};
    kiln_graph *h = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "refused", &h));
    kiln_cholesky(h, kiln_parameter(h, "a", t, 3, d));
    CHECK_STATUS(kiln_graph_status(h), KILN_STATUS_DTYPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_cholesky");
    kiln_graph_destroy(h);
    double eye[50] = {0};
    for (int i = 0; i < 10; i++) eye[i * 5 + i % 5] = 5;
    kiln_value a = kiln_convert(g, kiln_parameter(g, "a", t, 3, d), KILN_DTYPE_F32);
    kiln_value b = kiln_convert(g, kiln_parameter(g, "b", t, 3, d), KILN_DTYPE_F32);
    kiln_value spd =
        kiln_add(g, kiln_matmul(g, a, kiln_transpose(g, a, (const int[]){0, 2, 1})),
                 kiln_convert(g, kiln_constant(g, KILN_DTYPE_F64, 3, d, eye), KILN_DTYPE_F32));
    kiln_value l = kiln_cholesky(g, spd);
    kiln_triangular_solve_options lo = {.left_side = true, .lower = true};
    o[0] = kiln_convert(g, l, t);
    o[1] = kiln_convert(g, kiln_triangular_solve(g, l, b, &lo), t);
    return 2;
}

/* A convolution and its two gradient kinds (kiln_vjp), each summed in f32 and rounded
 * once: the input gradient's col2im too (src/trace/conv.c sums its pieces in f32). */
static int b_conv(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t xd[4] = {2, 6, 5, 4}, wd[4] = {3, 3, 2, 6}, cd[4] = {2, 3, 5, 6};
    kiln_value x = param(g, "x", t, 4, xd), w = param(g, "w", t, 4, wd);
    kiln_value ct = param(g, "ct", t, 4, cd);
    kiln_conv_options co = {.layout = KILN_CONV_NHWC,
                            .window_strides = {2, 1},
                            .padding = KILN_PADDING_SAME,
                            .feature_group_count = 2};
    o[0] = kiln_conv_general_dilated(g, x, w, &co);
    kiln_value wrt[2] = {x, w};
    kiln_vjp(g, 1, &o[0], &ct, 2, wrt, &o[1]);
    return 3;
}

static int b_all_reduce(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 2, d45);
    o[0] = kiln_all_reduce(g, x, KILN_REDUCE_SUM); /* one replica: x itself */
    o[1] = kiln_all_reduce(g, x, KILN_REDUCE_MEAN);
    return 2;
}

/* One replica: each of ZeRO's pair is the identity too. */
static int b_shard_collectives(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 2, d45);
    o[0] = kiln_reduce_scatter(g, x, KILN_REDUCE_MEAN, 1);
    o[1] = kiln_all_gather(g, kiln_mul(g, x, x), 1);
    return 2;
}

/* Host offload moves 16-bit values to host memory and back as they are. */
static int b_memory_put(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 2, d45);
    kiln_value h = kiln_memory_put(g, kiln_mul(g, x, x), KILN_MEMORY_PINNED_HOST);
    o[0] = kiln_add(g, kiln_memory_put(g, h, KILN_MEMORY_DEVICE), x);
    o[1] = kiln_memory_put(g, x, KILN_MEMORY_DEVICE); /* device to device: a copy */
    return 2;
}

/* Control flow moves 16-bit values between iterations as they are: a scan whose body
 * rounds each new carry (x * 0.5 + slice, in bf16/f16 as the reference does it), stacks
 * a per-iteration output, a while loop over a 16-bit carry and a cond choosing between
 * two rounded branches. The bodies are the same ops as the unrolled program's, so the
 * same roundings: two ulps, as for any op. */
static int half_scan_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                          kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_dtype t = KILN_DTYPE_F32;
    kiln_value_type(g, in[0], &t, NULL, NULL);
    outs[0] = kiln_add(g, kiln_mul(g, in[0], kiln_scalar(g, t, 0.5)), in[1]);
    outs[1] = kiln_exp(g, in[1]);
    return 2;
}

static int half_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_compare(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 3), KILN_CMP_LT);
    return 1;
}

static int half_while_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                           kiln_value *outs) {
    (void)n_in, (void)user;
    kiln_dtype t = KILN_DTYPE_F32;
    kiln_value_type(g, in[1], &t, NULL, NULL);
    outs[0] = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 1));
    outs[1] = kiln_tanh(g, kiln_add(g, in[1], kiln_scalar(g, t, 0.25)));
    return 2;
}

static int half_exp(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_exp(g, in[0]);
    return 1;
}

static int half_neg(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_neg(g, in[0]);
    return 1;
}

static int b_control(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 3, d345), c = param(g, "c", t, 2, d345 + 1);
    kiln_value p = param(g, "p", KILN_DTYPE_BOOL, 0, NULL), r[2];
    int n = 0;
    kiln_scan(g, half_scan_body, NULL, 1, &c, 1, &x, NULL, &n, r);
    o[0] = r[0], o[1] = r[1];
    kiln_value init[2] = {kiln_scalar(g, KILN_DTYPE_I32, 0), c};
    kiln_while_loop(g, half_cond, half_while_body, NULL, 2, init, r);
    o[2] = r[1];
    kiln_cond(g, p, half_exp, half_neg, NULL, 1, &c, &n, &o[3]);
    return 4;
}

/* Composites: every op rounds its result to the type in both the kernel and the reference,
 * so a double rounding early in the chain (one ulp of an intermediate) is carried to the
 * output scaled by the chain's sensitivity: softmax's exp and sum pass it on about
 * unchanged (4 ulps); layer and RMS norm divide by a standard deviation computed from
 * rounded moments, and over 5 elements a one-ulp change of the variance moves the result
 * by half an ulp relatively, then the scale and bias by another: 8 ulps. */
static int b_softmax_like(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 3, d345), s = param(g, "s", t, 1, d345 + 2);
    int am1 = -1, n = 0;
    o[n++] = kiln_softmax(g, x, -1);
    o[n++] = kiln_log_softmax(g, x, 1);
    o[n++] = kiln_logsumexp(g, x, 1, &am1, false);
    o[n++] =
        kiln_select(g, kiln_compare(g, x, kiln_scalar(g, t, 0), KILN_CMP_GT), x, kiln_neg(g, s));
    return n;
}

static int b_norms(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_value x = param(g, "x", t, 3, d345), s = param(g, "s", t, 1, d345 + 2),
               b = param(g, "b", t, 1, d345 + 2);
    o[0] = kiln_layer_norm(g, x, s, b, 1e-5);
    o[1] = kiln_rms_norm(g, x, s, -1, 1e-5);
    return 2;
}

/* Each op of the registry that is not elementwise (test_registry.c walks those), with the
 * case that covers it and that case's tolerance in units of the 16-bit type's ulp (2^-7
 * for bf16, 2^-10 for f16, relative to 1 + |want|). A new op without a row fails the
 * walk. */
typedef struct half_case {
    int op; /* ir_op */
    const char *name;
    half_build build;
    double ulps;
} half_case;

static const half_case cases[] = {
    {IR_PARAMETER, "sources", b_sources, 2},
    {IR_CONSTANT, "sources", b_sources, 2},
    {IR_IOTA, "sources", b_sources, 2},
    {IR_BROADCAST, "shapes", b_shapes, 2},
    {IR_RESHAPE, "shapes", b_shapes, 2},
    {IR_TRANSPOSE, "shapes", b_shapes, 2},
    {IR_SLICE, "shapes", b_shapes, 2},
    {IR_CONCAT, "shapes", b_shapes, 2},
    {IR_PAD, "shapes", b_shapes, 2},
    {IR_REV, "shapes", b_shapes, 2},
    {IR_REDUCE_SUM, "reductions", b_reductions, 2},
    {IR_REDUCE_SUM, "long sum", b_long_sum, 3},
    {IR_REDUCE_MAX, "reductions", b_reductions, 2},
    {IR_REDUCE_MIN, "reductions", b_reductions, 2},
    {IR_REDUCE_PROD, "reductions", b_reductions, 2},
    {IR_DOT, "dot layouts", b_dot_layouts, 2},
    {IR_TAKE_ROWS, "indexing", b_indexing, 2},
    {IR_SCATTER_ADD_ROWS, "indexing", b_indexing, 2},
    {IR_SCATTER_ADD_ROWS, "scatter many", b_scatter_many, 4},
    {IR_GATHER, "gather and scatter", b_gather_scatter, 4},
    {IR_SCATTER, "gather and scatter", b_gather_scatter, 4},
    {IR_DYNAMIC_SLICE, "dynamic slices", b_dynamic, 2},
    {IR_DYNAMIC_UPDATE_SLICE, "dynamic slices", b_dynamic, 2},
    {IR_CUMSUM, "cumsum", b_cumsum, 2},
    {IR_ATTENTION, "attention", b_attention, 2},
    {IR_ARGSORT, "sort", b_sort, 2},
    {IR_CONV, "convolution", b_conv, 2},
    {IR_CHOLESKY, "linear algebra", b_linalg, 2},
    {IR_TRIANGULAR_SOLVE, "linear algebra", b_linalg, 2},
    {IR_ALL_REDUCE, "all_reduce", b_all_reduce, 2},
    {IR_REDUCE_SCATTER, "reduce_scatter, all_gather", b_shard_collectives, 2},
    {IR_ALL_GATHER, "reduce_scatter, all_gather", b_shard_collectives, 2},
    {IR_MEMORY_PUT, "memory_put", b_memory_put, 2},
    {IR_WHILE, "control flow", b_control, 2},
    {IR_SCAN, "control flow", b_control, 2},
    {IR_COND, "control flow", b_control, 2},
    {IR_RESULT, "control flow", b_control, 2},
    {-1, "softmax-like", b_softmax_like, 4},
    {-1, "norms", b_norms, 8},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* Every op has a row; every row runs once (rows sharing a case run it once). */
static void test_every_op(void) {
    for (int op = 0; op < IR_NUM_OPS; op++) {
        if (ir_ops[op].flags & IRF_ELEMENTWISE) continue;
        bool found = false;
        for (int c = 0; c < N_CASES; c++) found |= cases[c].op == op;
        CHECK_MSG(found, "%s has no bf16/f16 case in test_half_ops.c", ir_ops[op].name);
    }
    for (int c = 0; c < N_CASES; c++) {
        bool seen = false;
        for (int p = 0; p < c; p++) seen |= cases[p].build == cases[c].build;
        if (seen) continue;
        /* tol is relative to bf16's ulp; check_half takes the larger of it and two ulps of
         * the type, so f16 gets its own ulps through the same scale */
        for (int i = 0; i < 2; i++) {
            double ulp = halves[i] == KILN_DTYPE_BF16 ? 0x1p-7 : 0x1p-10;
            check_half(cases[c].name, cases[c].build, halves[i], cases[c].ulps * ulp);
        }
    }
}

/* What the CPU's library ops cannot compute is refused at compile (compile.c's
 * check_lib_calls names the op and dtype) rather than run: bool products, integer
 * attention. (CONV is no CPU op: convolutions run as their primitive form there; the
 * linear algebra ops are f32 and f64 only, which their builders say first.) */
static void test_refusals(void) {
    CHECK(!cpu_lib_dtype_ok(KN_LIB_GEMM, KILN_DTYPE_BOOL));
    CHECK(!cpu_lib_dtype_ok(KN_LIB_ATTENTION, KILN_DTYPE_I32));
    CHECK(!cpu_lib_dtype_ok(KN_LIB_CUMSUM, KILN_DTYPE_INVALID));
    for (int i = 0; i < 2; i++)
        for (int op = 0; op < KN_LIB_NUM_OPS; op++)
            CHECK_MSG(op == KN_LIB_CONV || op == KN_LIB_CHOLESKY || op == KN_LIB_TRIANGULAR_SOLVE ||
                          cpu_lib_dtype_ok((kn_lib_op)op, halves[i]),
                      "%s refuses %s", kn_lib_op_name((kn_lib_op)op), kiln_dtype_name(halves[i]));
}

/* ------------------------------------------------------- excess precision ---- */

/* One step of the chain below in f32, each on the machine and rounded there (volatile: no
 * contraction into a fused multiply-add, as the kernels keep products apart). */
static float xp_step(int k, float v, float x) {
    volatile float a = v, b = x, r;
    switch (k) {
    case 0: r = a * 1.5f; break;
    case 1: r = a + 0.25f; break;
    case 2: r = a * b; break;
    case 3: r = a - 0.5f; break;
    default: r = a * 0.75f; break;
    }
    return r;
}

static float xp_round(kiln_dtype t, float f) {
    return t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(kn_f32_to_bf16(f))
                                : kn_f16_to_f32(kn_f32_to_f16(f));
}

/* kiln_mean as jnp.mean computes it (a 16-bit x summed and divided in f32, rounded once;
 * f32 and f64 divided by the count): rows of 301 multiples of 1/8 in [-64, 64], so every
 * order of summing gives the exact sum in f32, and the only roundings left are the
 * division's and the store's, which the expected values below make in the same way. The
 * same rows rounded to the 16-bit dtype before the division differ on many of them (the
 * old form); and five f16 values of 60000 average to 60000, where a sum kept in f16 is
 * inf. Through the reference and the compiled program alike. */
/* From f64, a constant rounds once to its 16-bit dtype, as jnp.asarray(v, dtype) does (a
 * host conversion), and the convert op through f32, as jax.jit's convert on the CPU does
 * (values from JAX 0.10.2): 1 + 2^-8 + 2^-30 is 0x3f81 as a bf16 constant and 0x3f80
 * converted; 1 + 2^-11 + 2^-40 is 0x3c01 as an f16 constant and 0x3c00 converted. The
 * reference and the compiled program agree (an outside check: the reference rounded f16
 * once where the kernels rounded twice). */
static void test_f64_narrowing(void) {
    const double v[2] = {1 + 0x1p-8 + 0x1p-30, 1 + 0x1p-11 + 0x1p-40};
    const kiln_dtype ts[2] = {KILN_DTYPE_BF16, KILN_DTYPE_F16};
    const uint16_t want_const[2] = {0x3f81, 0x3c01}, want_convert[2] = {0x3f80, 0x3c00};
    for (int k = 0; k < 2; k++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "narrow", &g);
        int64_t one = 1;
        kiln_value p = param(g, "x", KILN_DTYPE_F64, 1, &one);
        kiln_value outs[2] = {
            kiln_convert(g, p, ts[k]),
            kiln_add(g, kiln_scalar(g, ts[k], v[k]),
                     kiln_convert(g, kiln_mul(g, p, kiln_scalar(g, KILN_DTYPE_F64, 0)), ts[k]))};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        kiln_array *arg = NULL, *r[2][2] = {{0}};
        kiln_array_create(ctx, KILN_DTYPE_F64, 1, &one, &v[k], &arg);
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_interpret(g, 1, &arg, 2, r[0]));
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e) CHECK_OK(ctx, kiln_executable_run(e, 1, &arg, 2, r[1]));
        for (int w = 0; w < 2; w++) {
            uint16_t got[2] = {0, 0};
            if (!r[w][0] || !r[w][1]) continue;
            kiln_array_copy_to_host(r[w][0], &got[0], 2);
            kiln_array_copy_to_host(r[w][1], &got[1], 2);
            CHECK_MSG(got[0] == want_convert[k] && got[1] == want_const[k],
                      "%s (%s): convert 0x%04x (want 0x%04x), constant 0x%04x (want 0x%04x)",
                      kiln_dtype_name(ts[k]), w ? "compiled" : "reference", got[0], want_convert[k],
                      got[1], want_const[k]);
            kiln_array_destroy(r[w][0]), kiln_array_destroy(r[w][1]);
        }
        kiln_executable_destroy(e);
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }
}

static void test_mean_as_jnp(void) {
    enum { R = 64, C = 301 };
    kiln_dtype ts[3] = {KILN_DTYPE_BF16, KILN_DTYPE_F16, KILN_DTYPE_F32};
    for (int k = 0; k < 3; k++) {
        kiln_dtype t = ts[k];
        int64_t d[2] = {R, C};
        static float x[R * C];
        static uint16_t h[R * C];
        float want[R];
        int twice = 0;
        for (int r = 0; r < R; r++) {
            float sum = 0;
            for (int c = 0; c < C; c++) {
                float v = (float)((int)(test_rng_next(&seed) % 1025) - 512) / 8;
                if (t != KILN_DTYPE_F32) v = xp_round(t, v); /* still a multiple of 1/8 */
                x[r * C + c] = v, sum += v; /* exact: |sum| < 2^15 in steps of 1/8 */
                h[r * C + c] = t == KILN_DTYPE_BF16 ? kn_f32_to_bf16(v) : kn_f32_to_f16(v);
            }
            volatile float q = sum / (float)C;
            want[r] = t == KILN_DTYPE_F32 ? q : xp_round(t, q);
            if (t != KILN_DTYPE_F32) twice += xp_round(t, xp_round(t, sum) / (float)C) != want[r];
        }
        CHECK_MSG(t == KILN_DTYPE_F32 || twice > 0, "%s: no row tells one rounding from two",
                  kiln_dtype_name(t));
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "mean", &g);
        int a1 = 1;
        kiln_value m = kiln_mean(g, param(g, "x", t, 2, d), 1, &a1, false);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &m));
        kiln_array *arg = NULL, *out[2] = {0};
        kiln_array_create(ctx, t, 2, d, t == KILN_DTYPE_F32 ? (const void *)x : (const void *)h,
                          &arg);
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_interpret(g, 1, &arg, 1, &out[0]));
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e) CHECK_OK(ctx, kiln_executable_run(e, 1, &arg, 1, &out[1]));
        for (int w = 0; w < 2; w++) {
            uint16_t got16[R];
            float got[R];
            if (!out[w]) continue;
            if (t == KILN_DTYPE_F32) {
                kiln_array_copy_to_host(out[w], got, sizeof got);
            } else {
                kiln_array_copy_to_host(out[w], got16, sizeof got16);
                for (int r = 0; r < R; r++)
                    got[r] =
                        t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(got16[r]) : kn_f16_to_f32(got16[r]);
            }
            int bad = 0;
            for (int r = 0; r < R; r++) bad += memcmp(&got[r], &want[r], sizeof got[r]) != 0;
            CHECK_MSG(!bad, "%s mean (%s): %d of %d rows differ from jnp.mean's",
                      kiln_dtype_name(t), w ? "compiled" : "reference", bad, R);
            kiln_array_destroy(out[w]);
        }
        kiln_executable_destroy(e);
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }
    /* f16's range: the sum overflows f16, the mean does not */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "mean_range", &g);
    int64_t d5[1] = {5};
    kiln_value m = kiln_mean(g, param(g, "x", KILN_DTYPE_F16, 1, d5), 0, NULL, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &m));
    uint16_t v[5], got = 0;
    for (int i = 0; i < 5; i++) v[i] = kn_f32_to_f16(60000.0f);
    kiln_array *arg = NULL, *out = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F16, 1, d5, v, &arg);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    if (e && !kiln_executable_run(e, 1, &arg, 1, &out)) kiln_array_copy_to_host(out, &got, 2);
    CHECK_MSG(kn_f16_to_f32(got) == 60000.0f, "f16 mean of 60000s is %g",
              (double)kn_f16_to_f32(got));
    kiln_array_destroy(out);
    kiln_array_destroy(arg);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Compiles g with o (keep_ir added), runs it on args and copies output `out` (of n 16-bit
 * elements) to host; with KILN_TEST_TIER1=bits the optimised build must give its bytes. */
static void xp_run(kiln_context *c, kiln_graph *g, int n_args, kiln_array **args,
                   kiln_compile_options o, int n_out, int out, uint16_t *host, int64_t n) {
    kiln_executable *e = NULL;
    kiln_array *res[4] = {0};
    memset(host, 0xff, (size_t)n * 2);
    o.keep_ir = true;
    if (kiln_compile(g, &o, &e) || kiln_executable_run(e, n_args, args, n_out, res) ||
        kiln_array_copy_to_host(res[out], host, (size_t)n * 2)) {
        CHECK_MSG(0, "excess precision: %s", kiln_last_error(c));
    } else {
        CHECK(cmp_tier2_bits(c, e, n_args, args, n_out, res));
        /* the listing says so when the option is on (by the compile option or the context) */
        char *text = kiln_executable_to_string(e);
        CHECK(text && (strstr(text, "excess precision:") != NULL) ==
                          (o.allow_excess_precision || c != ctx));
        kiln_string_free(c, text);
    }
    for (int i = 0; i < n_out; i++) kiln_array_destroy(res[i]);
    kiln_executable_destroy(e);
}

/* kiln_compile_options.allow_excess_precision: the chain ((x*1.5 + 0.25)*x - 0.5)*0.75 of
 * 16-bit values, fused into one kernel, rounds once where it is stored, bit for bit the
 * f32 chain rounded once; by default, unfused, and in another context without the option
 * it rounds after every op (as the reference interpreter and JAX on the CPU), and the two
 * differ on many elements (else this test could not tell them apart). The context's
 * option gives the same as the compile option. An explicit convert, a random draw and an
 * iota round with the option as without it. */
static void test_excess_precision(void) {
    enum { N = 4096 };
    static uint16_t xs[N], got[N];
    static float once[N], each[N];
    kiln_context_options co = {
        .ignore_environment = true, .cache_dir = cache_dir, .allow_excess_precision = true};
    bool t1 = test_tier1(&co);
    kiln_context *xc = NULL;
    char err[256];
    CHECK_MSG(!kiln_context_create(&co, &xc, err, sizeof err), "%s", err);
    if (!xc) return;
    test_tier1_hold(xc, t1);
    for (int ti = 0; ti < 2; ti++) {
        kiln_dtype t = halves[ti];
        int64_t d[1] = {N};
        for (int cx = 0; cx < 2; cx++) {
            kiln_context *c = cx ? xc : ctx;
            kiln_graph *g;
            kiln_graph_create(c, "excess", &g);
            kiln_value x = kiln_parameter(g, "x", t, 1, d);
            kiln_value y = kiln_mul(g, x, kiln_scalar(g, t, 1.5));
            y = kiln_add(g, y, kiln_scalar(g, t, 0.25));
            y = kiln_mul(g, y, x);
            y = kiln_sub(g, y, kiln_scalar(g, t, 0.5));
            y = kiln_mul(g, y, kiln_scalar(g, t, 0.75));
            if (kiln_graph_finish(g, 1, &y)) {
                CHECK_MSG(0, "%s", kiln_last_error(c));
                kiln_graph_destroy(g);
                continue;
            }
            uint64_t sd = seed;
            kiln_array *a = cmp_random_array(c, t, 1, d, &sd);
            kiln_array_copy_to_host(a, xs, sizeof xs);
            int differ = 0;
            for (int i = 0; i < N; i++) {
                float xf = t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(xs[i]) : kn_f16_to_f32(xs[i]);
                float o = xf, r = xf;
                for (int k = 0; k < 5; k++)
                    o = xp_step(k, o, xf), r = xp_round(t, xp_step(k, r, xf));
                once[i] = xp_round(t, o), each[i] = r;
                differ += memcmp(&once[i], &each[i], 4) != 0;
            }
            CHECK_MSG(differ > N / 20, "%s: rounding once and after every op differ on only %d",
                      kiln_dtype_name(t), differ);
            for (int mode = 0; mode < 3; mode++) { /* 0: default, 1: the option, 2: unfused */
                kiln_compile_options o = {.allow_excess_precision = mode > 0,
                                          .disable_fusion = mode == 2};
                xp_run(c, g, 1, &a, o, 1, 0, got, N);
                bool rounds_once = mode == 1 || (cx && mode == 0);
                int bad = 0;
                for (int i = 0; i < N; i++) {
                    float want = rounds_once ? once[i] : each[i];
                    float have =
                        t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(got[i]) : kn_f16_to_f32(got[i]);
                    if (memcmp(&want, &have, 4) && bad++ < 3)
                        fprintf(stderr, "%s x=%04x: %a, want %a\n", kiln_dtype_name(t), xs[i], have,
                                want);
                }
                CHECK_MSG(!bad, "%s, %s context, mode %d: %d elements differ from rounding %s",
                          kiln_dtype_name(t), cx ? "excess-precision" : "default", mode, bad,
                          rounds_once ? "once" : "after every op");
            }
            kiln_array_destroy(a);
            kiln_graph_destroy(g);
        }

        /* what rounds with the option too: a convert (x f32 -> t -> f32, times 3 in f32),
         * a random draw and an iota in t (their bits the same with the option and without) */
        kiln_graph *g;
        kiln_graph_create(ctx, "excess rounds", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
        kiln_value back = kiln_convert(g, kiln_convert(g, x, t), KILN_DTYPE_F32);
        kiln_value outs[3] = {
            kiln_convert(g, kiln_mul(g, back, kiln_scalar(g, KILN_DTYPE_F32, 3)), t),
            kiln_mul(g, kiln_random_normal(g, kiln_random_key(g, 7), t, 1, d),
                     kiln_scalar(g, t, 3)),
            kiln_mul(g, kiln_iota(g, t, 1, d, 0), kiln_scalar(g, t, 3))};
        if (kiln_graph_finish(g, 3, outs)) {
            CHECK_MSG(0, "%s", kiln_last_error(ctx));
            kiln_graph_destroy(g);
            continue;
        }
        uint64_t sd = seed;
        kiln_array *a = cmp_random_array(ctx, KILN_DTYPE_F32, 1, d, &sd);
        static float xf[N];
        static uint16_t plain[N];
        kiln_array_copy_to_host(a, xf, sizeof xf);
        for (int out = 0; out < 3; out++) {
            xp_run(ctx, g, 1, &a, (kiln_compile_options){0}, 3, out, plain, N);
            xp_run(ctx, g, 1, &a, (kiln_compile_options){.allow_excess_precision = true}, 3, out,
                   got, N);
            CHECK_MSG(!memcmp(plain, got, sizeof got), "%s output %d: the option changed its bits",
                      kiln_dtype_name(t), out);
            int bad = 0;
            for (int i = 0; out == 0 && i < N; i++) { /* round(round(x) * 3) */
                float want = xp_round(t, xp_round(t, xf[i]) * 3.0f);
                float have = t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(got[i]) : kn_f16_to_f32(got[i]);
                if (memcmp(&want, &have, 4) && bad++ < 3)
                    fprintf(stderr, "%s: convert(%a) * 3 gives %a, want %a\n", kiln_dtype_name(t),
                            xf[i], have, want);
            }
            CHECK_MSG(!bad, "%s: %d converts did not round with excess precision",
                      kiln_dtype_name(t), bad);
        }
        kiln_array_destroy(a);
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(xc);
}

/* The staged 16-bit stores (schedule.c, staged_loop; prelude/half.h, kiln_st32_<t>):
 * where the target converts in hardware (vcvtne2ps2bf16, vcvtps2ph), a compiled kernel's
 * bf16 and f16 stores round 32 values at a time, and must give src/base/half.h's bits for
 * every f32 (the hardware's bf16 conversion flushes subnormals: a block holding one takes
 * the integer path). st_check runs x through convert to bf16, to f16, and x * 2 in f32 (a
 * store left as it is in the same loop), and compares every element bit for bit. */
static kiln_context *st_ctx; /* the -O3 build only (compile_tiers 1): the printed kernels */

static void st_check(const float *x, int rank, const int64_t *d, const char *what) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= d[i];
    kiln_graph *g = NULL;
    kiln_graph_create(st_ctx, "staged", &g);
    kiln_value p = kiln_parameter(g, "x", KILN_DTYPE_F32, rank, d);
    kiln_value outs[3] = {kiln_convert(g, p, KILN_DTYPE_BF16), kiln_convert(g, p, KILN_DTYPE_F16),
                          kiln_mul(g, p, kiln_scalar(g, KILN_DTYPE_F32, 2))};
    kiln_executable *e = NULL;
    kiln_array *a = NULL, *res[3] = {0};
    uint16_t *h = malloc((size_t)n * 4);
    float *twice = malloc((size_t)n * 4);
    if (!h || !twice || kiln_graph_finish(g, 3, outs) || kiln_compile(g, NULL, &e) ||
        kiln_array_create(st_ctx, KILN_DTYPE_F32, rank, d, x, &a) ||
        kiln_executable_run(e, 1, &a, 3, res) ||
        kiln_array_copy_to_host(res[0], h, (size_t)n * 2) ||
        kiln_array_copy_to_host(res[1], h + n, (size_t)n * 2) ||
        kiln_array_copy_to_host(res[2], twice, (size_t)n * 4)) {
        CHECK_MSG(0, "staged stores, %s: %s", what, kiln_last_error(st_ctx));
    } else {
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            uint16_t b = kn_f32_to_bf16(x[i]), f = kn_f32_to_f16(x[i]);
            float w = x[i] * 2.0f;
            if (h[i] == b && h[n + i] == f && !memcmp(&w, &twice[i], 4)) continue;
            if (bad++ < 4)
                fprintf(stderr, "%s [%lld] %a: bf16 %04x want %04x, f16 %04x want %04x\n", what,
                        (long long)i, x[i], h[i], b, h[n + i], f);
        }
        CHECK_MSG(!bad, "staged stores, %s: %lld of %lld elements differ", what, (long long)bad,
                  (long long)n);
    }
    for (int i = 0; i < 3; i++) kiln_array_destroy(res[i]);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    free(h), free(twice);
}

/* A staged loop in place: a bf16 chain over a donated argument writes its result over it
 * (every element of a block read before any is stored), per op and with excess precision. */
static void test_staged_in_place(void) {
    enum { N = 4099 };
    static uint16_t xs[N], got[N];
    int64_t d[1] = {N};
    for (int excess = 0; excess < 2; excess++) {
        kiln_graph *g = NULL;
        kiln_graph_create(st_ctx, "staged in place", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_BF16, 1, d);
        kiln_value y = kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_BF16, 1.5)),
                                kiln_scalar(g, KILN_DTYPE_BF16, 0.25));
        kiln_compile_options o = {
            .n_donate = 1, .donate_argnums = (const int[]){0}, .allow_excess_precision = excess};
        kiln_executable *e = NULL;
        kiln_array *a = NULL, *r = NULL;
        uint64_t sd = seed;
        if (kiln_graph_finish(g, 1, &y) || kiln_compile(g, &o, &e) ||
            !(a = cmp_random_array(st_ctx, KILN_DTYPE_BF16, 1, d, &sd)) ||
            kiln_array_copy_to_host(a, xs, sizeof xs) || kiln_executable_run(e, 1, &a, 1, &r) ||
            kiln_array_copy_to_host(r, got, sizeof got)) {
            CHECK_MSG(0, "staged in place: %s", kiln_last_error(st_ctx));
        } else {
            kiln_memory_analysis m;
            kiln_executable_get_memory_analysis(e, &m);
            CHECK_MSG(m.alias_bytes >= N * 2 && m.output_bytes == 0,
                      "not in place: alias %llu, output %llu bytes",
                      (unsigned long long)m.alias_bytes, (unsigned long long)m.output_bytes);
            int bad = 0;
            for (int i = 0; i < N; i++) {
                float v = kn_bf16_to_f32(xs[i]) * 1.5f;
                if (!excess) v = kn_bf16_to_f32(kn_f32_to_bf16(v));
                uint16_t want = kn_f32_to_bf16(v + 0.25f);
                if (got[i] != want && bad++ < 3)
                    fprintf(stderr, "in place [%d] %04x: %04x, want %04x\n", i, xs[i], got[i],
                            want);
            }
            CHECK_MSG(!bad, "staged in place, excess %d: %d elements differ", excess, bad);
        }
        kiln_array_destroy(r);
        kiln_array_destroy(a);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
}

/* The staged loop's other forms, compiled and compared with the reference interpreter
 * (within cmp_half_tol): a softmax over 37 rows of 101 (one kernel: its element loop reads the kept
 * exp(x - max) back from the output row it overwrites, so the last 5 of a row run as a
 * scalar loop, not as a block overlapping the one before), and an elementwise chain over
 * rows of 2053 (chunks of 2048 and 5: the short chunk runs as a scalar loop), in bf16 and
 * f16. */
static void test_staged_forms(void) {
    for (int i = 0; i < 2; i++) {
        kiln_dtype t = halves[i];
        kiln_graph *g = NULL;
        kiln_graph_create(st_ctx, "staged forms", &g);
        int64_t sd[2] = {37, 101}, ld[2] = {3, 2053};
        kiln_value x = kiln_parameter(g, "x", t, 2, sd), y = kiln_parameter(g, "y", t, 2, ld);
        kiln_value outs[2] = {
            kiln_softmax(g, x, 1),
            kiln_add(g, kiln_mul(g, kiln_tanh(g, y), kiln_scalar(g, t, 2)), kiln_scalar(g, t, 1))};
        kiln_array *args[2] = {NULL, NULL};
        uint64_t sdd = seed;
        if (kiln_graph_finish(g, 2, outs) ||
            !(args[0] = cmp_random_array(st_ctx, t, 2, sd, &sdd)) ||
            !(args[1] = cmp_random_array(st_ctx, t, 2, ld, &sdd)))
            CHECK_MSG(0, "staged forms: %s", kiln_last_error(st_ctx));
        else
            CHECK_MSG(cmp_graph(st_ctx, g, 2, args, NULL, 1e-5, NULL),
                      "staged forms (%s) differ from the reference", kiln_dtype_name(t));
        kiln_array_destroy(args[0]);
        kiln_array_destroy(args[1]);
        kiln_graph_destroy(g);
    }
}

/* The patterns: every high half of an f32 with sixteen low halves around the bf16 and f16
 * rounding points (ties, one either side, the f16 subnormals' deeper ones), in order (whole
 * blocks of subnormals and of normal numbers) and shuffled (blocks mixing them), in one
 * long row whose last chunk ends in a remainder, and in rows of 101 (three blocks and a
 * remainder of 5 each). The kernels are built four ways: as the target has them, with
 * bf16 staged through the integer rounding (KILN_STAGED_BF16=0: the staged form, one type
 * without the hardware), without the staged form (both 0: the plain loop), and without
 * AVX-512 (-mno-avx512f: on an x86 machine with F16C, f16 through the 256-bit vcvtps2ph,
 * the form of an AVX2 machine). With
 * KILN_TEST_EXHAUSTIVE=1, every f32 pattern too, 2^24 at a time, built as the target has it. */
static void test_staged_stores(void) {
    static const char *const flags[4] = {
        NULL, "-DKILN_STAGED_BF16=0", "-DKILN_STAGED_BF16=0 -DKILN_STAGED_F16=0", "-mno-avx512f"};
    static const uint16_t low[16] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff,
                                     0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0x9000,
                                     0xc000, 0xefff, 0xffff, 0x4321};
    enum { N = (1 << 20) + 13, R = 101 };
    float *x = malloc((size_t)N * 4);
    const char *all = getenv("KILN_TEST_EXHAUSTIVE");
    for (int f = 0; x && f < 4; f++) {
        kiln_context_options co = {.ignore_environment = true,
                                   .cache_dir = cache_dir,
                                   .compile_tiers = 1,
                                   .cc_flags = flags[f]};
        char err[256], what[96];
        CHECK_MSG(!kiln_context_create(&co, &st_ctx, err, sizeof err), "%s", err);
        if (!st_ctx) break;
        uint64_t sd = seed;
        for (int64_t i = 0; i < N; i++) {
            uint32_t u = i < (1 << 20) ? (uint32_t)(i >> 4) << 16 | low[i & 15]
                                       : (uint32_t)test_rng_next(&sd);
            memcpy(&x[i], &u, 4);
        }
        int64_t d1[1] = {N}, d2[2] = {N / R, R};
        snprintf(what, sizeof what, "in order (%s)", flags[f] ? flags[f] : "the target's");
        st_check(x, 1, d1, what);
        for (int64_t i = N - 1; i > 0; i--) {
            int64_t j = (int64_t)(test_rng_next(&sd) % (uint64_t)(i + 1));
            float t = x[i];
            x[i] = x[j], x[j] = t;
        }
        snprintf(what, sizeof what, "shuffled, rows of 101 (%s)",
                 flags[f] ? flags[f] : "the target's");
        st_check(x, 2, d2, what);
        test_staged_forms();
        if (!f) test_staged_in_place();
        enum { M = 1 << 24 };
        float *y = !f && all && !strcmp(all, "1") ? malloc((size_t)M * 4) : NULL;
        int64_t dm[1] = {M};
        for (uint64_t c = 0; y && c < (1ull << 32) / M; c++) {
            for (uint32_t i = 0; i < M; i++) {
                uint32_t u = (uint32_t)(c * M) + i;
                memcpy(&y[i], &u, 4);
            }
            snprintf(what, sizeof what, "every f32, part %llu", (unsigned long long)c);
            st_check(y, 1, dm, what);
        }
        free(y);
        kiln_context_destroy(st_ctx);
        st_ctx = NULL;
    }
    free(x);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    seed = test_seed(0x5eed16b16ull);
    if (!(ctx = test_private_context(cache_dir))) return 2;
    RUN(test_refusals);
    RUN_CC(test_products);
    RUN_CC(test_every_op);
    RUN_CC(test_excess_precision);
    RUN_CC(test_staged_stores);
    RUN_CC(test_mean_as_jnp);
    RUN_CC(test_f64_narrowing);
    kiln_context_destroy(ctx);
    test_remove_dir(cache_dir);
    return test_summary("test_half_ops");
}
