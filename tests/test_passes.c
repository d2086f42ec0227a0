/* test_passes.c — the graph-to-graph passes (src/passes): dead-code elimination, CSE,
 * algebraic simplification with constant folding, and the pipeline.
 *
 * Each rewrite is checked twice: structurally (which ops remain, through the IR's
 * internals) and numerically: the rewritten graph, run by the reference interpreter,
 * must give bitwise the original's results on random arguments that include NaN (with
 * payloads), infinities, signed zeros, subnormals and integer extremes. Graphs where a
 * rewrite must NOT fire (x + 0.0 and x * 0 for floats, -0.0 vs 0.0 in CSE, inexact
 * convert chains) are tested as carefully as those where it must. Fault injection fails
 * the Nth host allocation of the whole pipeline until it succeeds. */
#include "fault.h"
#include "randprog.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <stdint.h>

static kiln_context *ctx;

/* ------------------------------------------------------------ helpers ---- */

static int count_op(const kiln_graph *g, ir_op op) {
    int n = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++) n += g->nodes[id].op == op;
    return n;
}

static int n_nodes(const kiln_graph *g) {
    return (int)g->n_nodes - 1;
}

static const ir_node *output_node(const kiln_graph *g, int i) {
    return &g->nodes[g->outputs[i]];
}

/* Runs a and b on the same random arguments `trials` times; every output must agree
 * bitwise. The graphs must have the same signature (passes keep it). */
static void check_same(kiln_graph *a, kiln_graph *b, int trials) {
    CHECK(a->n_params == b->n_params && a->n_outputs == b->n_outputs);
    CHECK(a->n_params <= 16 && a->n_outputs <= 16);
    if (a->n_params != b->n_params || a->n_outputs != b->n_outputs || a->n_params > 16 ||
        a->n_outputs > 16)
        return;
    uint64_t seed = test_seed(0x9e3779b97f4a7c15ull);
    for (int trial = 0; trial < trials; trial++) {
        kiln_array *args[16] = {0}, *oa[16] = {0}, *ob[16] = {0};
        for (uint32_t k = 0; k < a->n_params; k++) {
            const ir_node *p = &a->nodes[a->params[k]], *q = &b->nodes[b->params[k]];
            CHECK(p->dtype == q->dtype && ir_shape_eq(&p->shape, &q->shape));
            size_t bytes = 0;
            ir_shape_nbytes(&p->shape, p->dtype, &bytes);
            void *data = malloc(bytes + 1);
            test_fill_special(p->dtype, bytes / kiln_dtype_itemsize(p->dtype), data, &seed);
            CHECK_OK(ctx, kiln_array_create(ctx, p->dtype, p->shape.rank, p->shape.dims, data,
                                            &args[k]));
            free(data);
        }
        CHECK_OK(ctx, kiln_interpret(a, (int)a->n_params, args, (int)a->n_outputs, oa));
        CHECK_OK(ctx, kiln_interpret(b, (int)b->n_params, args, (int)b->n_outputs, ob));
        for (uint32_t i = 0; i < a->n_outputs && oa[i] && ob[i]; i++) {
            size_t n = kiln_array_nbytes(oa[i]);
            CHECK(n == kiln_array_nbytes(ob[i]));
            char *x = malloc(n + 1), *y = malloc(n + 1);
            kiln_array_copy_to_host(oa[i], x, n);
            kiln_array_copy_to_host(ob[i], y, n);
            CHECK_MSG(!memcmp(x, y, n), "output %u differs bitwise (trial %d)", i, trial);
            free(x), free(y);
        }
        for (int k = 0; k < 16; k++) kiln_array_destroy(args[k]);
        for (int i = 0; i < 16; i++) kiln_array_destroy(oa[i]), kiln_array_destroy(ob[i]);
    }
}

/* The optimised copy of g (g itself kept for comparison), checked against g. */
static kiln_graph *optimise(kiln_graph *g, const pass_options *o) {
    kiln_graph *h = NULL;
    CHECK_OK(ctx, pass_clone(g, &h));
    CHECK_OK(ctx, passes_run(&h, o));
    CHECK_OK(ctx, ir_verify(h));
    check_same(g, h, 8);
    return h;
}

static kiln_graph *new_graph(const char *name) {
    kiln_graph *g = NULL;
    if (kiln_graph_create(ctx, name, &g)) exit(2);
    return g;
}

static void finish(kiln_graph *g, int n, const kiln_value *outs) {
    CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
}

static const int64_t D34[] = {3, 4};

/* A graph x:f32[3,4] -> f(x) built by fn, optimised; returns the optimised graph. */
typedef kiln_value (*build_fn)(kiln_graph *g, kiln_value x);

static kiln_graph *unary_case(kiln_dtype t, build_fn fn, kiln_graph **orig) {
    kiln_graph *g = new_graph("case");
    kiln_value x = kiln_parameter(g, "x", t, 2, D34);
    kiln_value y = fn(g, x);
    finish(g, 1, &y);
    *orig = g;
    return optimise(g, NULL);
}

/* Output is the parameter itself: the rewrite removed everything. */
static void expect_identity(kiln_dtype t, build_fn fn, const char *what) {
    kiln_graph *g, *h = unary_case(t, fn, &g);
    CHECK_MSG(h->outputs[0] == h->params[0] && n_nodes(h) == 1, "%s: %d nodes left", what,
              n_nodes(h));
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* The op is still there after optimisation (the rewrite must not fire). */
static void expect_kept(kiln_dtype t, build_fn fn, ir_op op, int count, const char *what) {
    kiln_graph *g, *h = unary_case(t, fn, &g);
    CHECK_MSG(count_op(h, op) == count, "%s: %d %s nodes, want %d", what, count_op(h, op),
              ir_ops[op].name, count);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* ---------------------------------------------------------------- dce ---- */

static void test_dce(void) {
    kiln_graph *g = new_graph("dce");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, D34);
    kiln_parameter(g, "unused", KILN_DTYPE_I32, 0, NULL);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, D34);
    kiln_value dead1 = kiln_exp(g, x);
    kiln_value b = kiln_neg(g, x);
    kiln_add(g, dead1, b); /* dead, and keeps dead1 alive only through itself */
    kiln_value outs[2] = {kiln_mul(g, b, w), x};
    finish(g, 2, outs);
    kiln_graph *h;
    pass_stats st = {0};
    CHECK_OK(ctx, pass_dce_run(g, &h, &st));
    CHECK(h && st.dce_removed == 2);
    if (!h) return;
    CHECK_OK(ctx, ir_verify(h));
    CHECK(n_nodes(h) == n_nodes(g) - 2 && count_op(h, IR_EXP) == 0 && count_op(h, IR_ADD) == 0);
    CHECK(h->n_params == 3 && h->finished && !strcmp(h->name, "dce"));
    for (uint32_t k = 0; k < 3; k++) {
        const ir_node *p = &h->nodes[h->params[k]], *q = &g->nodes[g->params[k]];
        CHECK(p->a.param_index == (int)k && !strcmp(p->name, q->name) && p->dtype == q->dtype);
        CHECK(p->file == q->file && p->line == q->line);
    }
    CHECK(output_node(h, 0)->op == IR_MUL && h->outputs[1] == h->params[0]);
    check_same(g, h, 4);
    /* Nothing dead now: no new graph. */
    kiln_graph *h2 = (kiln_graph *)1;
    CHECK_OK(ctx, pass_dce_run(h, &h2, NULL));
    CHECK(h2 == NULL);
    kiln_graph *keep = h;
    CHECK_OK(ctx, pass_dce(&h));
    CHECK(h == keep);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* ---------------------------------------------------------------- cse ---- */

static void test_cse_merges(void) {
    kiln_graph *g = new_graph("cse");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, D34);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, D34); /* same type: never merged */
    kiln_value e1 = kiln_exp(g, x), e2 = kiln_exp(g, x);
    kiln_value n1 = kiln_neg(g, e1), n2 = kiln_neg(g, e2); /* equal once e1, e2 are one */
    int p10[] = {1, 0};
    kiln_value t1 = kiln_transpose(g, x, p10), t2 = kiln_transpose(g, x, p10);
    g->nodes[t2.id].a.perm[5] = 77; /* garbage beyond the rank must not matter */
    g->nodes[t1.id].a.perm[6] = -3;
    kiln_value i1 = kiln_iota(g, KILN_DTYPE_I32, 2, D34, 1),
               i2 = kiln_iota(g, KILN_DTYPE_I32, 2, D34, 1);
    kiln_value outs[5] = {kiln_add(g, n1, n2), kiln_add(g, x, y), kiln_sub(g, t1, t2),
                          kiln_add(g, i1, i2), kiln_add(g, y, x)};
    finish(g, 5, outs);
    kiln_graph *h;
    pass_stats st = {0};
    CHECK_OK(ctx, pass_cse_run(g, &h, &st));
    CHECK(h && st.cse_merged == 4);
    if (!h) return;
    CHECK_OK(ctx, ir_verify(h));
    CHECK(count_op(h, IR_EXP) == 1 && count_op(h, IR_NEG) == 1 && count_op(h, IR_TRANSPOSE) == 1);
    CHECK(count_op(h, IR_IOTA) == 1 && count_op(h, IR_PARAMETER) == 2);
    CHECK(count_op(h, IR_ADD) == 4); /* x+y and y+x are different nodes (operand order) */
    const ir_node *sum = output_node(h, 0);
    CHECK(ir_in(sum)[0] == ir_in(sum)[1]);
    check_same(g, h, 4);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

static void test_cse_keeps_different(void) {
    kiln_graph *g = new_graph("cse2");
    static const int64_t d234[] = {2, 3, 4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d234);
    int pa[] = {1, 0, 2}, pb[] = {0, 2, 1}, ax0 = 0, ax1 = 1;
    kiln_value ta = kiln_transpose(g, x, pa), tb = kiln_transpose(g, x, pb);
    kiln_value ra = kiln_reduce_sum(g, x, 1, &ax0, false),
               rb = kiln_reduce_sum(g, x, 1, &ax1, false);
    kiln_value rc = kiln_reduce_max(g, x, 1, &ax0, false);
    kiln_value ca = kiln_compare(g, x, x, KILN_CMP_EQ), cb = kiln_compare(g, x, x, KILN_CMP_LE);
    kiln_value outs[7] = {ta, tb, ra, rb, rc, ca, cb};
    finish(g, 7, outs);
    kiln_graph *h = (kiln_graph *)1;
    CHECK_OK(ctx, pass_cse_run(g, &h, NULL));
    CHECK(h == NULL);
    kiln_graph_destroy(g);
}

/* Constants merge when dtype, shape and bytes agree: NaNs with equal bits do, -0.0 and
 * 0.0 do not, nor NaNs with different payloads, nor equal bytes in another shape. */
static void test_cse_constants(void) {
    kiln_graph *g = new_graph("consts");
    uint32_t bits[] = {0x7fc00000u, 0x7fc00000u, 0x7fc00001u, 0x80000000u, 0x00000000u};
    kiln_value c[5];
    for (int i = 0; i < 5; i++) {
        float f;
        memcpy(&f, &bits[i], 4);
        c[i] = kiln_constant(g, KILN_DTYPE_F32, 0, NULL, &f);
    }
    float two[2] = {1.5f, 2.5f};
    int64_t d2[] = {2}, d12[] = {1, 2};
    kiln_value v1 = kiln_constant(g, KILN_DTYPE_F32, 1, d2, two),
               v2 = kiln_constant(g, KILN_DTYPE_F32, 1, d2, two);
    kiln_value v3 = kiln_constant(g, KILN_DTYPE_F32, 2, d12, two);
    double one64 = 1.0;
    float one32 = 1.0f;
    kiln_value o64 = kiln_constant(g, KILN_DTYPE_F64, 0, NULL, &one64);
    kiln_value o32 = kiln_constant(g, KILN_DTYPE_F32, 0, NULL, &one32);
    kiln_value outs[10] = {c[0], c[1], c[2], c[3], c[4], v1, v2, v3, o64, o32};
    finish(g, 10, outs);
    kiln_graph *h;
    pass_stats st = {0};
    CHECK_OK(ctx, pass_cse_run(g, &h, &st));
    CHECK(h && st.cse_merged == 2);
    if (!h) return;
    CHECK(h->outputs[0] == h->outputs[1]); /* same NaN bits */
    CHECK(h->outputs[1] != h->outputs[2]); /* other payload */
    CHECK(h->outputs[3] != h->outputs[4]); /* -0.0 vs 0.0 */
    CHECK(h->outputs[5] == h->outputs[6] && h->outputs[6] != h->outputs[7]);
    CHECK(h->outputs[8] != h->outputs[9]);
    check_same(g, h, 1);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* ----------------------------------------------------------- simplify ---- */

static kiln_value f_mul1(kiln_graph *g, kiln_value x) {
    return kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1.0));
}
static kiln_value f_1mul(kiln_graph *g, kiln_value x) {
    return kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 1.0), x);
}
static kiln_value f_add_negzero(kiln_graph *g, kiln_value x) {
    return kiln_add(g, x, kiln_scalar(g, KILN_DTYPE_F32, -0.0));
}
static kiln_value f_negzero_add(kiln_graph *g, kiln_value x) {
    return kiln_add(g, kiln_scalar(g, KILN_DTYPE_F32, -0.0), x);
}
static kiln_value f_add_zero(kiln_graph *g, kiln_value x) {
    return kiln_add(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0.0));
}
static kiln_value f_sub_zero(kiln_graph *g, kiln_value x) {
    return kiln_sub(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0.0));
}
static kiln_value f_sub_negzero(kiln_graph *g, kiln_value x) {
    return kiln_sub(g, x, kiln_scalar(g, KILN_DTYPE_F32, -0.0));
}
static kiln_value f_div1(kiln_graph *g, kiln_value x) {
    return kiln_div(g, x, kiln_full(g, KILN_DTYPE_F32, 2, D34, 1.0));
}
static kiln_value f_mul0(kiln_graph *g, kiln_value x) {
    return kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0.0));
}
static kiln_value f_mul_ones_const(kiln_graph *g, kiln_value x) {
    float ones[12];
    for (int i = 0; i < 12; i++) ones[i] = 1.0f;
    return kiln_mul(g, kiln_constant(g, KILN_DTYPE_F32, 2, D34, ones), x);
}
static kiln_value f_i_add0(kiln_graph *g, kiln_value x) {
    return kiln_add(g, kiln_scalar(g, KILN_DTYPE_I32, 0), x);
}
static kiln_value f_i_sub0(kiln_graph *g, kiln_value x) {
    return kiln_sub(g, x, kiln_scalar(g, KILN_DTYPE_I32, 0));
}
static kiln_value f_i_mul1(kiln_graph *g, kiln_value x) {
    return kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_I32, 1));
}
static kiln_value f_i_div1(kiln_graph *g, kiln_value x) {
    return kiln_div(g, x, kiln_scalar(g, KILN_DTYPE_I32, 1));
}
static kiln_value f_i_mul0(kiln_graph *g, kiln_value x) {
    return kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_I32, 0));
}
static kiln_value f_negneg(kiln_graph *g, kiln_value x) {
    return kiln_neg(g, kiln_neg(g, x));
}
static kiln_value f_negnegneg(kiln_graph *g, kiln_value x) {
    return kiln_neg(g, kiln_neg(g, kiln_neg(g, x)));
}
static kiln_value f_transpose2(kiln_graph *g, kiln_value x) {
    int p[] = {1, 0};
    return kiln_transpose(g, kiln_transpose(g, x, p), p);
}
static kiln_value f_reshape_back(kiln_graph *g, kiln_value x) {
    int64_t a[] = {12}, b[] = {2, 6};
    return kiln_reshape(g, kiln_reshape(g, kiln_reshape(g, x, 1, a), 2, b), 2, D34);
}
static kiln_value f_reshape_chain(kiln_graph *g, kiln_value x) {
    int64_t a[] = {12}, b[] = {2, 6}, c[] = {4, 3};
    return kiln_reshape(g, kiln_reshape(g, kiln_reshape(g, x, 1, a), 2, b), 2, c);
}
static kiln_value f_slice_all(kiln_graph *g, kiln_value x) {
    int64_t s[] = {0, 0}, l[] = {3, 4};
    return kiln_slice(g, x, s, l, NULL);
}
static kiln_value f_slice_part(kiln_graph *g, kiln_value x) {
    int64_t s[] = {0, 1}, l[] = {3, 4};
    return kiln_slice(g, x, s, l, NULL);
}
static kiln_value f_f32_f64_f32(kiln_graph *g, kiln_value x) {
    return kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_F64), KILN_DTYPE_F32);
}
static kiln_value f_f32_f64_i32(kiln_graph *g, kiln_value x) {
    return kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_F64), KILN_DTYPE_I32);
}
static kiln_value f_f32_i32_f32(kiln_graph *g, kiln_value x) {
    return kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_I32), KILN_DTYPE_F32);
}
static kiln_value f_i32_f32_i32(kiln_graph *g, kiln_value x) {
    return kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_F32), KILN_DTYPE_I32);
}
static kiln_value f_i32_i64_f32(kiln_graph *g, kiln_value x) {
    return kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_I64), KILN_DTYPE_F32);
}
static kiln_value f_i32_f64_i32(kiln_graph *g, kiln_value x) {
    return kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_F64), KILN_DTYPE_I32);
}
static kiln_value f_select_true(kiln_graph *g, kiln_value x) {
    return kiln_select(g, kiln_scalar(g, KILN_DTYPE_BOOL, 1), x, kiln_neg(g, x));
}
static kiln_value f_select_same(kiln_graph *g, kiln_value x) {
    kiln_value p = kiln_compare(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0), KILN_CMP_GT);
    return kiln_select(g, p, x, x);
}
static kiln_value f_bcast_identity(kiln_graph *g, kiln_value x) {
    int d[] = {0, 1};
    return kiln_broadcast_in_dim(g, x, 2, D34, d);
}

static void test_simplify_identities(void) {
    expect_identity(KILN_DTYPE_F32, f_mul1, "x*1");
    expect_identity(KILN_DTYPE_F32, f_1mul, "1*x");
    expect_identity(KILN_DTYPE_F32, f_add_negzero, "x+(-0)");
    expect_identity(KILN_DTYPE_F32, f_negzero_add, "(-0)+x");
    expect_identity(KILN_DTYPE_F32, f_sub_zero, "x-0");
    expect_identity(KILN_DTYPE_F32, f_div1, "x/full(1)");
    expect_identity(KILN_DTYPE_F32, f_mul_ones_const, "ones-constant*x");
    expect_identity(KILN_DTYPE_I32, f_i_add0, "int 0+x");
    expect_identity(KILN_DTYPE_I32, f_i_sub0, "int x-0");
    expect_identity(KILN_DTYPE_I32, f_i_mul1, "int x*1");
    expect_identity(KILN_DTYPE_I32, f_i_div1, "int x/1");
    expect_identity(KILN_DTYPE_F32, f_negneg, "neg(neg(x))");
    expect_identity(KILN_DTYPE_I32, f_negneg, "int neg(neg(x))");
    expect_identity(KILN_DTYPE_F32, f_transpose2, "transpose(transpose(x))");
    expect_identity(KILN_DTYPE_F32, f_reshape_back, "reshape chain back to x");
    expect_identity(KILN_DTYPE_F32, f_slice_all, "identity slice");
    expect_identity(KILN_DTYPE_F32, f_f32_f64_f32, "f32->f64->f32");
    expect_identity(KILN_DTYPE_I32, f_i32_f64_i32, "i32->f64->i32");
    expect_identity(KILN_DTYPE_F32, f_select_true, "select(true, x, y)");
    expect_identity(KILN_DTYPE_F32, f_select_same, "select(p, x, x)");
    expect_identity(KILN_DTYPE_F32, f_bcast_identity, "identity broadcast");
}

static void test_simplify_must_not_fire(void) {
    /* -0.0 + 0.0 is +0.0: x + 0.0 is not x for floats. Neither is x - (-0.0). */
    expect_kept(KILN_DTYPE_F32, f_add_zero, IR_ADD, 1, "x+0.0");
    expect_kept(KILN_DTYPE_F32, f_sub_negzero, IR_SUB, 1, "x-(-0.0)");
    /* x*0 is NaN for x = inf or NaN, and -0 for x < 0. */
    expect_kept(KILN_DTYPE_F32, f_mul0, IR_MUL, 1, "x*0.0");
    /* f32 -> i32 truncates, i32 -> f32 rounds: neither chain is exact. */
    expect_kept(KILN_DTYPE_F32, f_f32_i32_f32, IR_CONVERT, 2, "f32->i32->f32");
    expect_kept(KILN_DTYPE_I32, f_i32_f32_i32, IR_CONVERT, 2, "i32->f32->i32");
    expect_kept(KILN_DTYPE_F32, f_slice_part, IR_SLICE, 1, "a real slice");
    expect_kept(KILN_DTYPE_F32, f_negnegneg, IR_NEG, 1, "neg(neg(neg(x)))");
    /* the rewrites that merge rather than remove */
    expect_kept(KILN_DTYPE_F32, f_f32_f64_i32, IR_CONVERT, 1, "f32->f64->i32 as one convert");
    expect_kept(KILN_DTYPE_I32, f_i32_i64_f32, IR_CONVERT, 1, "i32->i64->f32 as one convert");
    expect_kept(KILN_DTYPE_F32, f_reshape_chain, IR_RESHAPE, 1, "reshape chain");
    /* integer x*0 is 0: no MUL left, the zero broadcast remains */
    expect_kept(KILN_DTYPE_I32, f_i_mul0, IR_MUL, 0, "int x*0");
    /* the interpreter itself: -0 + 0 = +0, so the rule above matters */
    kiln_graph *g = new_graph("negzero");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 0, NULL);
    kiln_value y = kiln_add(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0.0));
    finish(g, 1, &y);
    float mz = -0.0f, r = -1.0f;
    kiln_array *a, *o;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 0, NULL, &mz, &a));
    CHECK_OK(ctx, kiln_interpret(g, 1, &a, 1, &o));
    kiln_array_copy_to_host(o, &r, 4);
    CHECK(r == 0.0f && !signbit(r));
    kiln_array_destroy(a), kiln_array_destroy(o);
    kiln_graph_destroy(g);
}

static void test_simplify_shapes(void) {
    static const int64_t d234[] = {2, 3, 4};
    kiln_graph *g = new_graph("shapes");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d234);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, &D34[1]);
    int pa[] = {1, 2, 0}, pb[] = {2, 0, 1}, pc[] = {1, 0, 2}, pd[] = {0, 2, 1};
    kiln_value ident = kiln_transpose(g, kiln_transpose(g, x, pa), pb); /* composes to id */
    kiln_value comp = kiln_transpose(g, kiln_transpose(g, x, pc), pd);  /* one transpose */
    int b1[] = {1}, b2[] = {1, 2};
    kiln_value bb = kiln_broadcast_in_dim(g, kiln_broadcast_in_dim(g, v, 2, D34, b1), 3, d234, b2);
    kiln_value outs[3] = {kiln_add(g, ident, x), comp, bb};
    finish(g, 3, outs);
    kiln_graph *h = optimise(g, NULL);
    CHECK(count_op(h, IR_TRANSPOSE) == 1 && count_op(h, IR_BROADCAST) == 1);
    const ir_node *sum = output_node(h, 0);
    CHECK(ir_in(sum)[0] == h->params[0] && ir_in(sum)[1] == h->params[0]);
    const ir_node *t = output_node(h, 1);
    CHECK(t->op == IR_TRANSPOSE && ir_in(t)[0] == h->params[0]);
    CHECK(t->a.perm[0] == 1 && t->a.perm[1] == 2 && t->a.perm[2] == 0);
    const ir_node *b = output_node(h, 2);
    CHECK(b->op == IR_BROADCAST && ir_in(b)[0] == h->params[1] && b->a.bcast_dims[0] == 2);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* Folding, and splats kept small. */
static void test_fold(void) {
    kiln_graph *g = new_graph("fold");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, D34);
    float four[4] = {0.5f, -1.0f, 2.0f, NAN};
    int64_t d4[] = {4}, dbig[] = {2000}, d100[] = {100};
    kiln_value c = kiln_constant(g, KILN_DTYPE_F32, 1, d4, four);
    kiln_value e = kiln_exp(g, c); /* folds */
    kiln_value two =
        kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 4.0), kiln_scalar(g, KILN_DTYPE_F32, 0.25));
    kiln_value scaled = kiln_mul(g, x, kiln_broadcast_to(g, two, 2, D34)); /* 4*0.25 = 1 */
    float *big = calloc(2000, sizeof *big);
    for (int i = 0; i < 2000; i++) big[i] = (float)i * 0.01f;
    kiln_value eb = kiln_exp(g, kiln_constant(g, KILN_DTYPE_F32, 1, dbig, big)); /* too big */
    free(big);
    kiln_value s1 = kiln_full(g, KILN_DTYPE_F32, 1, d100, 3.0),
               s2 = kiln_full(g, KILN_DTYPE_F32, 1, d100, 0.5);
    kiln_value splat_sum = kiln_add(g, s1, s2); /* broadcast(3.5), never a 100-array */
    int64_t lo[] = {100}, hi[] = {0};
    kiln_value padded = kiln_pad(g, c, kiln_scalar(g, KILN_DTYPE_F32, 7.0), lo, hi, NULL); /* 104 */
    kiln_value outs[5] = {e, scaled, eb, splat_sum, padded};
    finish(g, 5, outs);
    pass_stats st;
    pass_options o = {.stats = &st};
    kiln_graph *h = optimise(g, &o);
    CHECK(st.folded >= 2 && st.simplified >= 2 && st.dce_removed > 0);
    CHECK(output_node(h, 0)->op == IR_CONSTANT);
    CHECK(h->outputs[1] == h->params[0]); /* x * (4*0.25) -> x */
    CHECK(output_node(h, 2)->op == IR_EXP);
    const ir_node *ss = output_node(h, 3);
    CHECK(ss->op == IR_BROADCAST && h->nodes[ir_in(ss)[0]].op == IR_CONSTANT &&
          h->nodes[ir_in(ss)[0]].shape.rank == 0);
    if (ss->op == IR_BROADCAST) CHECK(*(float *)h->nodes[ir_in(ss)[0]].data == 3.5f);
    CHECK(output_node(h, 4)->op == IR_PAD); /* 104 > 64 and > 4 */
    /* no constant of more than 4 elements was made, except the user's 2000 */
    for (uint32_t id = 1; id < h->n_nodes; id++) {
        const ir_node *n = &h->nodes[id];
        int64_t k = 0;
        ir_shape_numel(&n->shape, &k);
        if (n->op == IR_CONSTANT) CHECK(k <= 4 || k == 2000);
    }
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* A splat constant (kiln_constant with equal elements) becomes broadcast(scalar); a
 * reshape/transpose of a broadcast scalar stays a broadcast; elementwise ops on broadcast
 * scalars are computed on the scalars. */
static void test_splats(void) {
    kiln_graph *g = new_graph("splats");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, D34);
    double twos[12];
    for (int i = 0; i < 12; i++) twos[i] = 2.0;
    kiln_value c = kiln_constant(g, KILN_DTYPE_F64, 2, D34, twos);
    int p[] = {1, 0};
    int64_t d43[] = {4, 3}, d12[] = {12};
    kiln_value t = kiln_reshape(g, kiln_transpose(g, c, p), 1, d12);
    kiln_value r = kiln_reshape(g, kiln_exp(g, kiln_reshape(g, t, 2, d43)), 2, D34);
    kiln_value outs[1] = {kiln_mul(g, x, r)};
    finish(g, 1, outs);
    kiln_graph *h = optimise(g, NULL);
    /* x * broadcast(exp(2)): param, const, broadcast, mul */
    CHECK(n_nodes(h) == 4 && count_op(h, IR_EXP) == 0 && count_op(h, IR_BROADCAST) == 1);
    for (uint32_t id = 1; id < h->n_nodes; id++)
        if (h->nodes[id].op == IR_CONSTANT) CHECK(h->nodes[id].shape.rank == 0);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* The in-place forms replace the graph and free the old one (ASan checks the freeing). */
static void test_in_place(void) {
    kiln_graph *g = new_graph("in-place");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, D34);
    kiln_value a = kiln_exp(g, f_negneg(g, x)), b = kiln_exp(g, x);
    kiln_value outs[1] = {kiln_add(g, a, b)};
    finish(g, 1, outs);
    kiln_graph *h;
    CHECK_OK(ctx, pass_clone(g, &h));
    kiln_graph *before = h;
    CHECK_OK(ctx, pass_simplify(&h));
    CHECK(h != before && count_op(h, IR_NEG) == 1); /* the inner one, bypassed, stays */
    before = h;
    CHECK_OK(ctx, pass_cse(&h));
    CHECK(h != before && count_op(h, IR_EXP) == 1);
    before = h;
    CHECK_OK(ctx, pass_dce(&h));
    CHECK(h != before && count_op(h, IR_NEG) == 0 && n_nodes(h) == 3);
    check_same(g, h, 4);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* ----------------------------------------------------------- pipeline ---- */

/* A small model with duplicates, dead code, foldable constants and identities. */
static kiln_graph *build_model(void) {
    kiln_graph *g = new_graph("model");
    int64_t dx[] = {8, 16}, dw1[] = {16, 32}, db1[] = {32}, dw2[] = {32, 4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dx);
    kiln_value w1 = kiln_parameter(g, "w1", KILN_DTYPE_F32, 2, dw1);
    kiln_value b1 = kiln_parameter(g, "b1", KILN_DTYPE_F32, 1, db1);
    kiln_value w2 = kiln_parameter(g, "w2", KILN_DTYPE_F32, 2, dw2);
    kiln_value scale =
        kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 2.0), kiln_scalar(g, KILN_DTYPE_F32, 0.5));
    kiln_value h = kiln_relu(g, kiln_add(g, kiln_matmul(g, x, w1), b1));
    h = kiln_mul(g, h, scale);                                /* * (2*0.5) */
    h = kiln_add(g, h, kiln_scalar(g, KILN_DTYPE_F32, -0.0)); /* + (-0) */
    kiln_value ln = kiln_layer_norm(g, h, (kiln_value){0, 0}, (kiln_value){0, 0}, 1e-5);
    kiln_value o1 = kiln_matmul(g, ln, w2), o2 = kiln_matmul(g, ln, w2); /* duplicate */
    int p[] = {1, 0};
    kiln_value tt = kiln_transpose(g, kiln_transpose(g, o1, p), p);
    kiln_value sm1 = kiln_softmax(g, tt, -1), sm2 = kiln_softmax(g, o2, -1);
    kiln_exp(g, ln); /* dead */
    kiln_value outs[2] = {kiln_sub(g, sm1, sm2), kiln_neg(g, kiln_neg(g, sm1))};
    finish(g, 2, outs);
    return g;
}

static void test_pipeline(void) {
    kiln_graph *g = build_model();
    pass_stats st;
    pass_options o = {.stats = &st};
    kiln_graph *h = optimise(g, &o);
    CHECK(st.simplified > 0 && st.folded > 0 && st.cse_merged > 0 && st.dce_removed > 0);
    CHECK(st.nodes_before == (uint32_t)n_nodes(g) && st.nodes_after == (uint32_t)n_nodes(h));
    CHECK(st.nodes_after < st.nodes_before && st.rounds >= 2);
    CHECK(count_op(h, IR_DOT) == 2 && count_op(h, IR_TRANSPOSE) == 0);
    CHECK(h->n_params == 4 && h->finished && !strcmp(h->name, "model"));
    /* A second run finds a fixed point: nothing changes. */
    pass_stats st2;
    pass_options o2 = {.stats = &st2};
    kiln_graph *keep = h;
    CHECK_OK(ctx, passes_run(&h, &o2));
    CHECK(h == keep && st2.rounds == 1 &&
          st2.simplified + st2.folded + st2.cse_merged + st2.dce_removed == 0);
    /* Options leave passes out. */
    kiln_graph *k;
    CHECK_OK(ctx, pass_clone(g, &k));
    pass_options only_dce = {.no_simplify = true, .no_cse = true, .stats = &st};
    CHECK_OK(ctx, passes_run(&k, &only_dce));
    CHECK(st.simplified == 0 && st.cse_merged == 0 && st.dce_removed == 1);
    kiln_graph_destroy(g), kiln_graph_destroy(h), kiln_graph_destroy(k);
}

static void test_pipeline_rejects(void) {
    kiln_graph *g = new_graph("open");
    kiln_parameter(g, "x", KILN_DTYPE_F32, 0, NULL);
    kiln_graph *keep = g;
    CHECK_STATUS(passes_run(&g, NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK(g == keep);
    CHECK_CONTAINS(kiln_last_error(ctx), "not finished");
    CHECK_STATUS(passes_run(NULL, NULL), KILN_STATUS_INVALID_ARGUMENT);
    kiln_graph_destroy(g);
}

/* Empty arrays, long operand lists (spilled inputs, > 16 on the stack paths), outputs
 * listed twice. */
static void test_edge_shapes(void) {
    kiln_graph *g = new_graph("edges");
    int64_t d03[] = {0, 3}, d13[] = {1, 3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d03);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, d13);
    kiln_value e = kiln_mul(g, kiln_exp(g, x), kiln_scalar(g, KILN_DTYPE_F32, 1.0));
    float c3[3] = {1.0f, -0.0f, NAN};
    kiln_value parts[20], ys[20];
    for (int i = 0; i < 20; i++) {
        parts[i] = kiln_constant(g, KILN_DTYPE_F32, 2, d13, c3);
        ys[i] = i % 2 ? kiln_neg(g, kiln_neg(g, y)) : y;
    }
    kiln_value folded = kiln_concatenate(g, 20, parts, 0); /* 60 elements: folds */
    kiln_value cy1 = kiln_concatenate(g, 20, ys, 0), cy2 = kiln_concatenate(g, 20, ys, 0);
    kiln_value outs[5] = {e, folded, kiln_sub(g, cy1, cy2), e, x};
    finish(g, 5, outs);
    kiln_graph *h = optimise(g, NULL);
    CHECK(output_node(h, 1)->op == IR_CONSTANT && count_op(h, IR_CONCAT) == 1);
    CHECK(count_op(h, IR_NEG) == 0 && h->outputs[0] == h->outputs[3]);
    CHECK(count_op(h, IR_MUL) == 0 && h->outputs[4] == h->params[0]);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* -------------------------------------------------------- random graphs ---- */

/* Random programs dense in rewrites (rp_dense_graph of randprog.h), each optimised and
 * compared bitwise with the original on random arguments. */
static void test_random_graphs(void) {
    int made = 0, failed_before = test_failed;
    pass_stats total = {0};
    uint64_t base = test_seed(0);
    for (uint64_t seed = base + 1; seed <= base + 300 && test_failed == failed_before; seed++) {
        kiln_graph *g = rp_dense_graph(ctx, seed * 0x9e3779b97f4a7c15ull);
        if (!g) continue;
        made++;
        pass_stats st;
        pass_options o = {.stats = &st};
        kiln_graph *h = optimise(g, &o);
        total.simplified += st.simplified, total.folded += st.folded;
        total.cse_merged += st.cse_merged, total.dce_removed += st.dce_removed;
        if (test_failed != failed_before) {
            fprintf(stderr, "random graph, seed %llu:\n", (unsigned long long)seed);
            kiln_graph_print(g, stderr);
            kiln_graph_print(h, stderr);
        }
        kiln_graph_destroy(g), kiln_graph_destroy(h);
    }
    CHECK_MSG(made >= 250, "only %d random graphs could be built", made);
    CHECK(total.simplified > 100 && total.folded > 50 && total.cse_merged > 50 &&
          total.dce_removed > 100);
}

/* ------------------------------------------------------------ rewrite ---- */

/* Maps the NEG node to the parameter of another type: the walker must refuse it. */
static kiln_status bad_visit(pass_rebuild *rb, uint32_t id, void *user) {
    (void)user;
    if (rb->old->nodes[id].op == IR_CONVERT) return rb->map[id] = rb->map[1], KILN_STATUS_OK;
    return pass_copy(rb, id);
}
static kiln_status drop_all(pass_rebuild *rb, uint32_t id, void *user) {
    (void)rb, (void)id, (void)user;
    return KILN_STATUS_OK;
}

static void test_rewrite_machinery(void) {
    kiln_graph *g = new_graph("clone-me");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, D34);
    kiln_value y = kiln_neg(g, kiln_convert(g, x, KILN_DTYPE_F64));
    kiln_value cat[5] = {y, y, y, y, y}; /* 5 inputs: a spilled input list */
    kiln_value z = kiln_concatenate(g, 5, cat, 0);
    kiln_value w =
        kiln_add(g, kiln_convert(g, x, KILN_DTYPE_F64), kiln_scalar(g, KILN_DTYPE_F64, 3.25));
    kiln_value outs[2] = {z, w};
    finish(g, 2, outs);
    kiln_graph *c;
    CHECK_OK(ctx, pass_clone(g, &c));
    char *a = kiln_graph_to_string(g), *b = kiln_graph_to_string(c);
    CHECK(a && b && !strcmp(a, b));
    kiln_string_free(ctx, a), kiln_string_free(ctx, b);
    CHECK(c->id != g->id && c->finished);
    kiln_graph_destroy(g); /* the clone owns its own copies */
    CHECK_OK(ctx, ir_verify(c));
    kiln_graph *bad = (kiln_graph *)1;
    char *before = kiln_graph_to_string(c);
    CHECK_STATUS(pass_rebuild_graph(c, "bad", bad_visit, NULL, &bad), KILN_STATUS_INTERNAL);
    CHECK(bad == NULL);
    CHECK_CONTAINS(kiln_last_error(ctx), "pass bad:");
    CHECK_STATUS(pass_rebuild_graph(c, "dropper", drop_all, NULL, &bad), KILN_STATUS_INTERNAL);
    CHECK_CONTAINS(kiln_last_error(ctx), "output was dropped");
    char *after = kiln_graph_to_string(c);
    CHECK(before && after && !strcmp(before, after)); /* the input graph is untouched */
    kiln_string_free(ctx, before), kiln_string_free(ctx, after);
    kiln_graph_destroy(c);
}

/* --------------------------------------------------------------- config ---- */

static void test_verify_config(void) {
    kiln_context_options o = {.ignore_environment = false};
    kiln_context *c = NULL;
    char err[512];
    setenv("KILN_VERIFY_PASSES", "maybe", 1);
    CHECK_STATUS(kiln_context_create(&o, &c, err, sizeof err), KILN_STATUS_CONFIG);
    CHECK_CONTAINS(err, "KILN_VERIFY_PASSES");
    setenv("KILN_VERIFY_PASSES", "1", 1);
    CHECK_OK(NULL, kiln_context_create(&o, &c, err, sizeof err));
    if (c) CHECK(c->config.verify_passes);
    kiln_context_destroy(c);
    unsetenv("KILN_VERIFY_PASSES");
    CHECK_OK(NULL, kiln_context_create(&o, &c, err, sizeof err));
    if (c) CHECK(!c->config.verify_passes);
    kiln_context_destroy(c);
}

/* ------------------------------------------------------ fault injection ---- */

/* Runs the pipeline, the fault armed, on a clone of the graph r->user. */
static kiln_status fault_passes(fault_run *r) {
    kiln_graph *c = NULL;
    CHECK_OK(ctx, pass_clone((kiln_graph *)r->user, &c));
    if (!c) return KILN_STATUS_INTERNAL;
    int before = n_nodes(c);
    fault_arm(r);
    kiln_status s = fault_note(r, ctx, passes_run(&c, NULL));
    fault_disarm(r);
    if (s == KILN_STATUS_OK) {
        CHECK(n_nodes(c) < before);
    } else {
        CHECK_CONTAINS(r->message, "host allocation");
        CHECK(n_nodes(c) == before && ir_verify(c) == KILN_STATUS_OK);
    }
    kiln_graph_destroy(c);
    return s;
}

static void test_fault_injection(void) {
    test_alloc t = {0};
    kiln_host_allocator a = test_allocator(&t);
    kiln_context_options opts = {
        .host_allocator = &a, .ignore_environment = true, .compile_tiers = 1};
    kiln_context *saved = ctx;
    CHECK_OK(NULL, kiln_context_create(&opts, &ctx, NULL, 0));
    ctx->config.verify_passes = true;
    kiln_graph *g = build_model();
    fault_sweep sw = {
        .name = "passes_run", .run = fault_passes, .user = g, .max_runs = 20000, .armed = &t};
    long failures = fault_sweep_run(&sw);
    CHECK_MSG(failures > 50, "only %ld allocations failed before success", failures);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    CHECK(t.live == 0 && t.bad_size == 0);
    ctx = saved;
}

/* ------------------------------------------------------------- unroll ---- */

/* A while's pieces: the condition i < bound (bound a constant, or a capture of the outer
 * value in unroll_case.outer_bound), the body (i + step, x * x * 0.25 + sin(x)), or with
 * a product in the body. */
typedef struct unroll_case {
    int64_t bound, step;
    kiln_dtype counter;     /* 0: i32 */
    kiln_value outer_bound; /* set: the bound is this outer value, captured */
    bool dot;
} unroll_case;

/* An exact integer scalar of dtype t (kiln_scalar's double rounds past 2^53). */
static kiln_value icon(kiln_graph *g, kiln_dtype t, int64_t v) {
    int32_t w = (int32_t)v;
    return kiln_constant(g, t, 0, NULL, t == KILN_DTYPE_I32 ? (const void *)&w : (const void *)&v);
}

static kiln_dtype uc_type(const unroll_case *c) {
    return c->counter ? c->counter : KILN_DTYPE_I32;
}

static int uc_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    const unroll_case *c = user;
    (void)n_in;
    kiln_value b =
        c->outer_bound.id ? kiln_capture(g, c->outer_bound) : icon(g, uc_type(c), c->bound);
    outs[0] = kiln_compare(g, in[0], b, KILN_CMP_LT);
    return 1;
}

static int uc_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    const unroll_case *c = user;
    (void)n_in;
    outs[0] = kiln_add(g, in[0], icon(g, uc_type(c), c->step));
    kiln_value x = in[1];
    outs[1] =
        c->dot ? kiln_matmul(g, x, kiln_transpose(g, x, (const int[]){1, 0}))
               : kiln_add(g, kiln_mul(g, kiln_mul(g, x, x), kiln_scalar(g, KILN_DTYPE_F32, 0.25)),
                          kiln_sin(g, x));
    return 2;
}

/* The while of case c from i0, optimised: how many WHILE nodes are left and how many loops
 * the pipeline unrolled; the optimised graph is checked bitwise against the original. */
static void while_case(const unroll_case *c0, int64_t i0, int want_loops, const char *what) {
    unroll_case c = *c0;
    kiln_graph *g = new_graph("loop");
    int64_t d[2] = {3, 4};
    if (c.dot) d[0] = 4;
    kiln_value init[2] = {icon(g, uc_type(&c), i0),
                          kiln_parameter(g, "x", KILN_DTYPE_F32, 2,
                                         c.dot ? (const int64_t[]){4, 4} : d)},
               out[2];
    if (c.outer_bound.id == 1) c.outer_bound = kiln_scalar(g, KILN_DTYPE_I32, (double)c.bound);
    if (c.outer_bound.id == 2) /* not a constant: min(n, bound), so a random n stays quick */
        c.outer_bound = kiln_min(g, kiln_parameter(g, "n", KILN_DTYPE_I32, 0, NULL),
                                 kiln_scalar(g, KILN_DTYPE_I32, (double)c.bound));
    CHECK_OK(ctx, kiln_while_loop(g, uc_cond, uc_body, &c, 2, init, out));
    finish(g, 2, out);
    pass_stats st = {0};
    pass_options o = {.stats = &st};
    kiln_graph *h = optimise(g, &o);
    CHECK_MSG(count_op(h, IR_WHILE) == want_loops, "%s: %d while nodes left, want %d", what,
              count_op(h, IR_WHILE), want_loops);
    CHECK_MSG(st.unrolled == (uint32_t)(1 - want_loops), "%s: %u unrolled", what, st.unrolled);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

static int fori_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] =
        kiln_add(g, kiln_mul(g, in[1], kiln_convert(g, in[0], KILN_DTYPE_F32)), kiln_exp(g, in[1]));
    return 1;
}

/* Small loops of a known trip count whose body fuses become their iterations; the others
 * stay loops. Every case gives the original's bits (optimise checks them). */
static void test_unroll(void) {
    while_case(&(unroll_case){.bound = 5, .step = 1}, 0, 0, "i < 5");
    while_case(&(unroll_case){.bound = 5, .step = 2}, 0, 0, "i < 5, step 2");
    while_case(&(unroll_case){.bound = 5, .step = 1}, 7, 0, "from 7: no iteration");
    while_case(&(unroll_case){.bound = 64, .step = 1}, 0, 0, "64 iterations");
    while_case(&(unroll_case){.bound = 65, .step = 1}, 0, 1, "65 iterations: kept");
    while_case(&(unroll_case){.bound = 6, .step = 1, .outer_bound = {0, 1}}, 0, 0,
               "a captured constant bound");
    while_case(&(unroll_case){.bound = 6, .step = 1, .outer_bound = {0, 2}}, 0, 1,
               "a bound from a parameter: kept");
    while_case(&(unroll_case){.bound = 3, .step = 1, .dot = true}, 0, 1, "a product: kept");
    /* trip counts exact in the counter's dtype: i64 bounds past 2^53, a bound at INT64_MAX,
     * and a counter that would wrap (kept: it runs another number of times) */
    while_case(
        &(unroll_case){.bound = (INT64_C(1) << 53) + 3, .step = 1, .counter = KILN_DTYPE_I64},
        (INT64_C(1) << 53) + 1, 0, "i64 past 2^53");
    while_case(&(unroll_case){.bound = INT64_MAX, .step = 1, .counter = KILN_DTYPE_I64},
               INT64_MAX - 3, 0, "up to INT64_MAX");
    while_case(&(unroll_case){.bound = INT32_MAX - 1, .step = INT32_MAX}, 1, 1,
               "a counter that wraps: kept");
    /* fori_loop with static bounds (a scan without scanned arrays): unrolled; a scan over
     * arrays stays a scan */
    kiln_graph *g = new_graph("fori");
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, D34), out;
    CHECK_OK(ctx, kiln_fori_loop(g, 2, 9, fori_body, NULL, 1, &x, &out));
    finish(g, 1, &out);
    kiln_graph *h = optimise(g, NULL);
    CHECK_MSG(count_op(h, IR_SCAN) == 0, "fori_loop(2, 9): %d scans left", count_op(h, IR_SCAN));
    kiln_graph_destroy(g), kiln_graph_destroy(h);
    g = new_graph("scan");
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F32, 2, D34);
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F32, 3, (const int64_t[]){5, 3, 4});
    int n = 0;
    kiln_value outs[2];
    CHECK_OK(ctx, kiln_scan(g, fori_body, NULL, 1, &c, 1, &xs, &(kiln_scan_options){.length = 5},
                            &n, outs));
    finish(g, 1, outs);
    h = optimise(g, NULL);
    CHECK_MSG(count_op(h, IR_SCAN) == 1, "a scan over arrays: %d scans", count_op(h, IR_SCAN));
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

int main(void) {
    ctx = test_context();
    ctx->config.verify_passes = true;
    RUN(test_dce);
    RUN(test_cse_merges);
    RUN(test_cse_keeps_different);
    RUN(test_cse_constants);
    RUN(test_simplify_identities);
    RUN(test_simplify_must_not_fire);
    RUN(test_simplify_shapes);
    RUN(test_fold);
    RUN(test_splats);
    RUN(test_in_place);
    RUN(test_edge_shapes);
    RUN(test_pipeline);
    RUN(test_unroll);
    RUN(test_pipeline_rejects);
    RUN(test_random_graphs);
    RUN(test_rewrite_machinery);
    RUN(test_verify_config);
    RUN(test_fault_injection);
    kiln_context_destroy(ctx);
    return test_summary("test_passes");
}
