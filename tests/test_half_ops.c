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
 * odd), and large enough that cpu_backend.c splits them into row blocks over threads. */
static int b_dot_blocks(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {131, 301}, bd[2] = {301, 270}, btd[2] = {270, 301}, atd[2] = {301, 131};
    int64_t xd[3] = {3, 40, 129}, wd[3] = {3, 129, 33};
    kiln_value a = param(g, "a", t, 2, ad), b = param(g, "b", t, 2, bd);
    kiln_value bt = param(g, "bt", t, 2, btd), at = param(g, "at", t, 2, atd);
    kiln_value x = param(g, "x", t, 3, xd), w = param(g, "w", t, 3, wd);
    kiln_dot_dims abt = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    kiln_dot_dims atb = {.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
    kiln_dot_dims bat = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {1}, .n_batch = 1};
    int n = 0;
    o[n++] = kiln_matmul(g, a, b);
    o[n++] = kiln_dot_general(g, a, bt, &abt);
    o[n++] = kiln_dot_general(g, at, b, &atb);
    o[n++] = kiln_dot_general(g, x, w, &bat);
    /* a product feeding elementwise work: the rounding happens once, at the product */
    o[n++] = kiln_tanh(g, kiln_add(g, kiln_matmul(g, a, b), kiln_scalar(g, t, 0.5)));
    return n;
}

static void test_products(void) {
    check_both("dot layouts", b_dot_layouts, 0);
    check_both("dot blocks", b_dot_blocks, 0);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    seed = test_seed(0x5eed16b16ull);
    if (!(ctx = test_private_context(cache_dir))) return 2;
    RUN_CC(test_products);
    kiln_context_destroy(ctx);
    test_remove_dir(cache_dir);
    return test_summary("test_half_ops");
}
