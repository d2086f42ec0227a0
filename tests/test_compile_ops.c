/* test_compile_ops.c — kiln_compile against the reference interpreter: every op and
 * composite compiled and compared, kernel counts of typical programs (what fusion must
 * achieve), the compile/run error paths, a second process served by the disk cache, and
 * every host allocation of a compile-and-run failed in turn. Random programs are
 * test_compile_random.c's. */
#include "compare.h"
#include "fault.h"
#include "ir/ir.h"
#include "passes/fusion.h"

#include "backend/cpu/cpu.h"
#include "backend/device.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static kiln_context *ctx;
static char cache_dir[] = "/tmp/kiln-test-compile-XXXXXX"; /* main makes it */
static uint64_t seed; /* random argument data: test_seed in main */
/* f32 tolerance of check_case: relative to 1 + |want|. Chained f32 matrix products (BLAS
 * accumulates in f32, the reference in double) need more than single ops. */
static double case_tol = 2e-5;

typedef int (*build_fn)(kiln_graph *g, kiln_value *outs);

/* Builds a program, gives every parameter random data, compares compiled vs reference.
 * Returns the kernel count (or -1 on failure). */
static int check_case(const char *name, build_fn build, const kiln_compile_options *opts) {
    kiln_graph *g;
    kiln_graph_create(ctx, name, &g);
    kiln_value outs[32];
    int n = build(g, outs);
    if (kiln_graph_finish(g, n, outs) != KILN_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", name, kiln_last_error(ctx));
        kiln_graph_destroy(g);
        CHECK_MSG(0, "%s did not build", name);
        return -1;
    }
    kiln_array *args[64];
    int np = kiln_graph_num_parameters(g);
    for (int i = 0; i < np; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        args[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, p->shape.dims, &seed);
    }
    int kernels = -1;
    int ok = cmp_graph(ctx, g, np, args, opts, case_tol, &kernels);
    CHECK_MSG(ok, "%s: compiled result differs from the reference", name);
    for (int i = 0; i < np; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
    return ok ? kernels : -1;
}

static const int64_t d23[] = {2, 3}, d3[] = {3}, d234[] = {2, 3, 4}, d45[] = {4, 5};

static int b_elementwise_f32(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d23);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, d3);
    kiln_value one = kiln_scalar(g, KILN_DTYPE_F32, 1);
    int n = 0;
    o[n++] = kiln_add(g, x, y);
    o[n++] = kiln_sub(g, x, y);
    o[n++] = kiln_mul(g, x, y);
    o[n++] = kiln_div(g, x, y);
    o[n++] = kiln_max(g, x, y);
    o[n++] = kiln_min(g, x, y);
    o[n++] = kiln_pow(g, kiln_abs(g, x), y);
    o[n++] = kiln_rem(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1e4)), y);
    o[n++] = kiln_log1p(g, kiln_abs(g, x));
    o[n++] = kiln_rsqrt(g, kiln_add(g, one, kiln_abs(g, y)));
    o[n++] = kiln_select(g, kiln_compare(g, x, y, KILN_CMP_LT), kiln_exp(g, x), kiln_log(g, x));
    o[n++] = kiln_convert(g, kiln_compare(g, x, y, KILN_CMP_GE), KILN_DTYPE_F32);
    o[n++] = kiln_sign(g, kiln_floor(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 3))));
    return n;
}

static int b_elementwise_int(kiln_graph *g, kiln_value *o) {
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_I32, 2, d23);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_I32, 2, d23);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_I64, 1, d3);
    kiln_value big = kiln_scalar(g, KILN_DTYPE_I32, 2147483647.0);
    int n = 0;
    o[n++] = kiln_div(g, a, b);   /* includes division by zero: -1 */
    o[n++] = kiln_pow(g, a, b);   /* negative exponents included */
    o[n++] = kiln_rem(g, a, b);   /* x % 0 = x */
    o[n++] = kiln_add(g, a, big); /* wraps */
    o[n++] = kiln_mul(g, kiln_neg(g, a), kiln_abs(g, b));
    o[n++] = kiln_max(g, kiln_sign(g, a), b);
    o[n++] = kiln_convert(g, kiln_mul(g, kiln_convert(g, a, KILN_DTYPE_I64), c), KILN_DTYPE_I32);
    o[n++] = kiln_div(g, kiln_scalar(g, KILN_DTYPE_I32, -2147483648.0),
                      kiln_scalar(g, KILN_DTYPE_I32, -1));
    o[n++] = kiln_logical_and(g, kiln_compare(g, a, b, KILN_CMP_NE),
                              kiln_logical_not(g, kiln_compare(g, a, b, KILN_CMP_GT)));
    o[n++] =
        kiln_logical_or(g, kiln_compare(g, a, b, KILN_CMP_LE), kiln_compare(g, a, b, KILN_CMP_EQ));
    return n;
}

static int b_convert(kiln_graph *g, kiln_value *o) {
    const float vals[] = {NAN, INFINITY, -INFINITY, 3.7f, -3.7f, 3e9f, -3e9f, 0.0f};
    int64_t d = 8;
    kiln_value x = kiln_constant(g, KILN_DTYPE_F32, 1, &d, vals);
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_F32, 1, &d); /* keeps the graph from folding */
    x = kiln_add(g, x, kiln_mul(g, p, kiln_scalar(g, KILN_DTYPE_F32, 0)));
    int n = 0;
    o[n++] = kiln_convert(g, x, KILN_DTYPE_I32);
    o[n++] = kiln_convert(g, x, KILN_DTYPE_I64);
    o[n++] = kiln_convert(g, x, KILN_DTYPE_BOOL);
    o[n++] = kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_I64), KILN_DTYPE_I32);
    o[n++] = kiln_convert(g, kiln_convert(g, x, KILN_DTYPE_F64), KILN_DTYPE_F32);
    return n;
}

static int b_shapes(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d234);
    int perm[3] = {2, 0, 1}, n = 0;
    int64_t st[3] = {0, 1, 0}, li[3] = {2, 3, 4}, sd[3] = {1, 2, 3};
    int64_t lo[3] = {1, -1, 0}, hi[3] = {0, 2, -1}, in[3] = {1, 0, 2};
    int64_t r2[2] = {6, -1}, bd[4] = {5, 2, 3, 4};
    kiln_value parts[4] = {x, kiln_neg(g, x), x, kiln_exp(g, x)};
    o[n++] = kiln_transpose(g, x, perm);
    o[n++] = kiln_slice(g, x, st, li, sd);
    o[n++] = kiln_pad(g, x, kiln_scalar(g, KILN_DTYPE_F32, 9), lo, hi, in);
    o[n++] = kiln_reshape(g, kiln_transpose(g, x, perm), 2, r2);
    o[n++] = kiln_concatenate(g, 4, parts, 1);
    o[n++] = kiln_broadcast_to(g, x, 4, bd);
    o[n++] = kiln_add(g, kiln_iota(g, KILN_DTYPE_F32, 3, d234, 2), x);
    return n;
}

static int b_reductions(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d234);
    kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I64, 3, d234);
    int a0 = 0, a12[2] = {1, 2}, am1 = -1, n = 0;
    o[n++] = kiln_reduce_sum(g, x, 1, &a0, false);
    o[n++] = kiln_reduce_max(g, x, 2, a12, true);
    o[n++] = kiln_reduce_min(g, x, 1, &am1, false);
    o[n++] = kiln_reduce_prod(g, x, 1, &a0, true);
    o[n++] = kiln_mean(g, x, 0, NULL, false);
    o[n++] = kiln_reduce_sum(g, i, 2, a12, false);
    o[n++] = kiln_reduce_max(g, i, 1, &a0, false);
    o[n++] = kiln_reduce_prod(g, i, 1, &am1, false);
    return n;
}

static int b_dots(kiln_graph *g, kiln_value *o) {
    int64_t ad[3] = {2, 3, 4}, bd[3] = {2, 5, 4}, cd[2] = {4, 3}, vd[1] = {4};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 3, ad);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 3, bd);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F64, 2, cd);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F64, 1, vd);
    kiln_value ia = kiln_parameter(g, "ia", KILN_DTYPE_I32, 3, ad);
    kiln_dot_dims dd = {.n_contract = 1, .lhs_contract = {2}, .rhs_contract = {2}, .n_batch = 1};
    kiln_dot_dims odd = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    int n = 0;
    o[n++] = kiln_dot_general(g, a, b, &dd); /* batched, rhs transposed */
    o[n++] = kiln_dot_general(g, a, kiln_convert(g, c, KILN_DTYPE_F32), &odd); /* needs packing */
    o[n++] = kiln_matmul(g, v, c);                                             /* vector @ matrix */
    o[n++] = kiln_matmul(g, kiln_transpose(g, c, (int[]){1, 0}), v);
    o[n++] = kiln_dot_general(g, ia, kiln_convert(g, a, KILN_DTYPE_I32), &dd);
    /* attention-style: heads are a middle batch axis, read in place with a row stride */
    int64_t qd[3] = {6, 4, 8};
    kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F32, 3, qd),
               k = kiln_parameter(g, "k", KILN_DTYPE_F32, 3, qd);
    kiln_dot_dims heads = {.n_contract = 1,
                           .lhs_contract = {2},
                           .rhs_contract = {2},
                           .n_batch = 1,
                           .lhs_batch = {1},
                           .rhs_batch = {1}};
    o[n++] = kiln_dot_general(g, q, k, &heads);
    kiln_dot_dims pv = {.n_contract = 1,
                        .lhs_contract = {0},
                        .rhs_contract = {0},
                        .n_batch = 1,
                        .lhs_batch = {1},
                        .rhs_batch = {1}};
    o[n++] = kiln_dot_general(
        g, q, kiln_convert(g, kiln_convert(g, k, KILN_DTYPE_I64), KILN_DTYPE_F32), &pv);
    o[n++] = kiln_dot_general(g, kiln_convert(g, q, KILN_DTYPE_I64),
                              kiln_convert(g, k, KILN_DTYPE_I64), &heads);
    return n;
}

static int b_indexing(kiln_graph *g, kiln_value *o) {
    int64_t td[2] = {5, 3}, id[2] = {2, 4}, ud[3] = {2, 4, 3};
    kiln_value t = kiln_parameter(g, "t", KILN_DTYPE_F32, 2, td);
    kiln_value idx =
        kiln_parameter(g, "idx", KILN_DTYPE_I32, 2, id); /* values in [-5, 5]: clamped */
    kiln_value up = kiln_parameter(g, "up", KILN_DTYPE_F32, 3, ud);
    int n = 0;
    o[n++] = kiln_take_rows(g, t, idx);
    o[n++] = kiln_scatter_add_rows(g, t, idx, up); /* duplicates and out-of-range rows */
    o[n++] = kiln_take_rows(g, kiln_exp(g, t), kiln_convert(g, idx, KILN_DTYPE_I64));
    return n;
}

static int b_composites(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d45);
    kiln_value s = kiln_parameter(g, "s", KILN_DTYPE_F32, 1, d45 + 1);
    kiln_value lab = kiln_parameter(g, "lab", KILN_DTYPE_I32, 1, d45);
    lab = kiln_abs(g, kiln_div(g, lab, kiln_scalar(g, KILN_DTYPE_I32, 2))); /* in [0, 2] */
    int a1 = 1, n = 0;
    o[n++] = kiln_softmax(g, x, -1);
    o[n++] = kiln_log_softmax(g, x, 0);
    o[n++] = kiln_logsumexp(g, x, 1, &a1, false);
    o[n++] = kiln_layer_norm(g, x, s, s, 1e-5);
    o[n++] = kiln_gelu(g, x, true);
    o[n++] = kiln_relu(g, x);
    o[n++] = kiln_softmax_cross_entropy(g, x, lab);
    o[n++] = kiln_gelu(g, x, false);
    o[n++] = kiln_silu(g, x);
    o[n++] = kiln_rms_norm(g, x, s, -1, 1e-6);
    o[n++] = kiln_rms_norm(g, x, (kiln_value){0, 0}, 0, 0);
    /* where with a broadcast integer condition [4, 1] and y [5]; clip with lo [5], hi [] */
    kiln_value c = kiln_reshape(g, lab, 2, (const int64_t[]){4, 1});
    o[n++] = kiln_where(g, c, x, kiln_sin(g, s));
    o[n++] = kiln_clip(g, x, kiln_cos(g, s), kiln_scalar(g, KILN_DTYPE_F32, 0.5f));
    o[n++] = kiln_erf(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 3)));
    /* layer_norm along axis 0 (scale [4] broadcast along it), square, split, causal mask */
    kiln_value s4 = kiln_parameter(g, "s4", KILN_DTYPE_F32, 1, d45);
    o[n++] = kiln_layer_norm_axis(g, x, s4, s4, 0, 1e-5);
    o[n++] = kiln_square(g, x);
    o[n++] = kiln_square(g, lab);
    kiln_value parts[2];
    kiln_split(g, kiln_exp(g, x), 2, (const int64_t[]){3}, -1, parts);
    o[n++] = kiln_mul(g, parts[0], kiln_make_causal_mask(g, 4, 3, KILN_DTYPE_F32));
    o[n++] = parts[1];
    return n;
}

/* Column reductions (leading axes reduced, last kept) take a vectorised path of their own;
 * NaN must still win in max/min, and integer columns must wrap like the reference. */
static int b_columns(kiln_graph *g, kiln_value *o) {
    int64_t d[3] = {3, 70, 33};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d);
    kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 3, d);
    kiln_value at = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 3, d, 1),
                                 kiln_scalar(g, KILN_DTYPE_I32, 17), KILN_CMP_EQ);
    kiln_value xn = kiln_select(g, at, kiln_scalar(g, KILN_DTYPE_F32, NAN), x); /* NaN in row 17 */
    int a0 = 0, a01[2] = {0, 1};
    int n = 0;
    o[n++] = kiln_reduce_max(g, xn, 2, a01, false);
    o[n++] = kiln_reduce_min(g, xn, 1, &a0, false);
    o[n++] = kiln_reduce_sum(g, x, 2, a01, false);
    o[n++] = kiln_reduce_prod(g, kiln_convert(g, x, KILN_DTYPE_F64), 1, &a0, false);
    o[n++] =
        kiln_reduce_sum(g, kiln_mul(g, i, kiln_scalar(g, KILN_DTYPE_I32, 1 << 30)), 2, a01, false);
    o[n++] = kiln_reduce_max(g, i, 1, &a0, false);
    return n;
}

/* A reduction over rows gathered with an index computed in wrapping integer arithmetic, with
 * a small constant trip count: gcc 12 miscompiles this under `omp simd`, so the generator
 * leaves the pragma off such loops (found by the random programs). */
static int b_gather_reduce(kiln_graph *g, kiln_value *o) {
    int64_t td[2] = {2, 1}, n4 = 4;
    kiln_value t = kiln_parameter(g, "t", KILN_DTYPE_F32, 2, td);
    kiln_value i = kiln_sub(
        g, kiln_mul(g, kiln_iota(g, KILN_DTYPE_I32, 1, &n4, 0), kiln_scalar(g, KILN_DTYPE_I32, 2)),
        kiln_scalar(g, KILN_DTYPE_I32, 1));
    kiln_value x = kiln_take_rows(g, t, i);
    int a0 = 0;
    o[0] = kiln_reduce_sum(g, x, 1, &a0, true);
    o[1] = kiln_softmax(g, x, 0);
    return 2;
}

/* A depthwise convolution along the rows written as shifted slices of a padded x, then
 * silu: each slice's if on the pad's edges is decided by the row, and the element loop
 * prints in two versions (print_c.c, print_versioned_loop); rows at both edges and
 * inside them, checked against the reference. */
static int b_shifted_rows(kiln_graph *g, kiln_value *o) {
    int64_t dx[3] = {2, 9, 24}, dw[2] = {5, 24};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, dx);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, dw);
    kiln_value xp = kiln_pad(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0), (int64_t[]){0, 2, 0},
                             (int64_t[]){0, 2, 0}, NULL);
    kiln_value acc = {0, 0};
    for (int64_t k = 0; k < 5; k++) {
        kiln_value xs = kiln_slice(g, xp, (int64_t[]){0, k, 0}, (int64_t[]){2, k + 9, 24}, NULL);
        kiln_value wk =
            kiln_reshape(g, kiln_slice(g, w, (int64_t[]){k, 0}, (int64_t[]){k + 1, 24}, NULL), 1,
                         (int64_t[]){24});
        kiln_value t = kiln_mul(g, xs, wk);
        acc = k ? kiln_add(g, acc, t) : t;
    }
    o[0] = kiln_mul(g, acc, kiln_logistic(g, acc));
    return 1;
}

static void test_every_op(void) {
    check_case("shifted_rows", b_shifted_rows, NULL);
    check_case("gather_reduce", b_gather_reduce, NULL);
    check_case("columns", b_columns, NULL);
    check_case("elementwise_f32", b_elementwise_f32, NULL);
    check_case("elementwise_int", b_elementwise_int, NULL);
    check_case("convert", b_convert, NULL);
    check_case("shapes", b_shapes, NULL);
    check_case("reductions", b_reductions, NULL);
    check_case("dots", b_dots, NULL);
    check_case("indexing", b_indexing, NULL);
    check_case("composites", b_composites, NULL);
    kiln_compile_options unfused = {.disable_fusion = true};
    check_case("composites_unfused", b_composites, &unfused);
    check_case("shapes_unfused", b_shapes, &unfused);
}

/* ------------------------------------------------------- kernel counts ---- */

static const int64_t dbig[] = {64, 128}, dcol[] = {128};

static int b_chain(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dbig);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, dcol);
    kiln_value y = kiln_tanh(g, kiln_add(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 2)), b));
    y = kiln_max(g, kiln_sub(g, y, kiln_exp(g, x)), kiln_scalar(g, KILN_DTYPE_F32, 0));
    o[0] = kiln_mul(g, kiln_logistic(g, y), kiln_sqrt(g, kiln_abs(g, x)));
    return 1;
}
static int b_softmax(kiln_graph *g, kiln_value *o) {
    o[0] = kiln_softmax(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dbig), -1);
    return 1;
}
static int b_layer_norm(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dbig);
    kiln_value s = kiln_parameter(g, "s", KILN_DTYPE_F32, 1, dcol);
    o[0] = kiln_layer_norm(g, x, s, s, 1e-5);
    return 1;
}
static int b_logsumexp(kiln_graph *g, kiln_value *o) {
    o[0] =
        kiln_logsumexp(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dbig), 1, (int[]){-1}, false);
    return 1;
}
static int b_mlp(kiln_graph *g, kiln_value *o) {
    int64_t xd[2] = {32, 64}, w1d[2] = {64, 128}, w2d[2] = {128, 10}, b1d = 128, b2d = 10;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value h =
        kiln_relu(g, kiln_add(g, kiln_matmul(g, x, kiln_parameter(g, "w1", KILN_DTYPE_F32, 2, w1d)),
                              kiln_parameter(g, "b1", KILN_DTYPE_F32, 1, &b1d)));
    kiln_value y = kiln_add(g, kiln_matmul(g, h, kiln_parameter(g, "w2", KILN_DTYPE_F32, 2, w2d)),
                            kiln_parameter(g, "b2", KILN_DTYPE_F32, 1, &b2d));
    o[0] = kiln_softmax(g, y, -1);
    return 1;
}

static int b_dot_transposed(kiln_graph *g, kiln_value *o) {
    int64_t xd[2] = {32, 64}, wd[2] = {128, 64}, perm_d[3] = {4, 32, 8};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, wd);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 3, perm_d);
    int perm[2] = {1, 0}, bperm[3] = {1, 0, 2};
    o[0] = kiln_matmul(g, x, kiln_transpose(g, w, perm)); /* x @ w.T: BLAS trans_b */
    /* a batch axis moved by a transpose: read in place, batch axis 1 of b */
    kiln_dot_dims d = {.n_contract = 1,
                       .lhs_contract = {2},
                       .rhs_contract = {2},
                       .n_batch = 1,
                       .lhs_batch = {0},
                       .rhs_batch = {0}};
    kiln_value bt = kiln_transpose(g, b, bperm);
    o[1] = kiln_dot_general(g, bt, bt, &d);
    return 2;
}

/* siblings reading the same large input: one loop (multi-output fusion) */
static int b_siblings(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dbig);
    int ax = -1;
    o[0] = kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 2));
    o[1] = kiln_exp(g, x);
    o[2] = kiln_reduce_sum(g, x, 1, &ax, false);
    o[3] = kiln_reduce_max(g, kiln_abs(g, x), 1, &ax, false);
    return 4;
}

/* row and column reductions of one square input, all f32[128]: a kernel for the rows and
 * one for the columns, each reading in its own order (fusion.c, reads_apart) */
static int b_rows_and_columns(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (int64_t[]){128, 128});
    int rows = 0, cols = 1;
    o[0] = kiln_reduce_sum(g, x, 1, &cols, false);
    o[1] = kiln_reduce_sum(g, x, 1, &rows, false);
    o[2] = kiln_reduce_max(g, x, 1, &cols, false);
    o[3] = kiln_exp(g, kiln_reduce_max(g, x, 1, &rows, false));
    return 4;
}

/* twelve column reductions of one input ([512, 256] -> f32[256] each, as a layer norm's
 * parameter gradients, a bias update added to each): siblings merge up to the column
 * form's limit (fusion.h, FUSION_MAX_COLUMN_REDUCTIONS) and no further, so every kernel
 * keeps the column form rather than walking columns with a stride of a row: two kernels */
static int b_many_columns(kiln_graph *g, kiln_value *o) {
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (int64_t[]){512, 256});
    int rows = 0;
    for (int i = 0; i < 12; i++) {
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, (int64_t[]){256});
        kiln_value t = kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 1.0 / (1 + i)));
        o[i] = kiln_add(g, b, kiln_reduce_sum(g, i % 2 ? kiln_tanh(g, t) : t, 1, &rows, false));
    }
    return 12;
}

/* an Adam-style update: m' and v' are outputs, and p' reads them at the same element:
 * one kernel computing all three (producer-consumer multi-output fusion) */
static int b_adam_like(kiln_graph *g, kiln_value *o) {
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_F32, 2, dbig);
    kiln_value gr = kiln_parameter(g, "g", KILN_DTYPE_F32, 2, dbig);
    kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F32, 2, dbig);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 2, dbig);
    kiln_value b1 = kiln_scalar(g, KILN_DTYPE_F32, 0.9), b2 = kiln_scalar(g, KILN_DTYPE_F32, 0.99);
    kiln_value m2 = kiln_add(g, kiln_mul(g, b1, m),
                             kiln_mul(g, kiln_sub(g, kiln_scalar(g, KILN_DTYPE_F32, 1), b1), gr));
    kiln_value v2 = kiln_add(g, kiln_mul(g, b2, v), kiln_mul(g, gr, gr));
    kiln_value step =
        kiln_div(g, m2, kiln_add(g, kiln_sqrt(g, v2), kiln_scalar(g, KILN_DTYPE_F32, 1e-8)));
    o[0] = kiln_sub(g, p, kiln_mul(g, kiln_scalar(g, KILN_DTYPE_F32, 1e-3), step));
    o[1] = m2;
    o[2] = v2;
    return 3;
}

/* a consumer reading the producer's result at another element (a transpose) must not
 * join it: two kernels, and the right numbers */
static int b_consumer_moved(kiln_graph *g, kiln_value *o) {
    int64_t sq[2] = {256, 256};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, sq);
    kiln_value y = kiln_exp(g, x);
    o[0] = y;
    o[1] = kiln_add(g, kiln_transpose(g, y, (int[]){1, 0}), x);
    return 2;
}

/* a reshape of a dot's result feeding another dot is a view of the same bytes: no copy */
static int b_reshape_view(kiln_graph *g, kiln_value *o) {
    int64_t xd[2] = {32, 64}, wd[2] = {64, 64}, hd[3] = {32, 4, 16};
    kiln_value a = kiln_matmul(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd),
                               kiln_parameter(g, "w", KILN_DTYPE_F32, 2, wd));
    kiln_value h = kiln_reshape(g, a, 3, hd);
    kiln_dot_dims d = {.n_contract = 1,
                       .lhs_contract = {2},
                       .rhs_contract = {2},
                       .n_batch = 1,
                       .lhs_batch = {1},
                       .rhs_batch = {1}};
    o[0] = kiln_dot_general(g, h, h, &d);
    return 1;
}

static void test_kernel_counts(void) {
    case_tol = 2e-4;
    int kv = check_case("reshape_view", b_reshape_view, NULL);
    case_tol = 2e-5;
    CHECK_MSG(kv == 2, "a reshape between two dots is a view, not a kernel (got %d)", kv);
    int ks = check_case("siblings", b_siblings, NULL);
    CHECK_MSG(ks == 2, "two elementwise and two row reductions of one input: 2 kernels (got %d)",
              ks);
    ks = check_case("rows_and_columns", b_rows_and_columns, NULL);
    CHECK_MSG(ks == 2, "row and column reductions of one input: 2 kernels (got %d)", ks);
    ks = check_case("many_columns", b_many_columns, NULL);
    CHECK_MSG(ks == (12 + FUSION_MAX_COLUMN_REDUCTIONS - 1) / FUSION_MAX_COLUMN_REDUCTIONS,
              "twelve column reductions of one input: %d kernels of at most %d (got %d)",
              (12 + FUSION_MAX_COLUMN_REDUCTIONS - 1) / FUSION_MAX_COLUMN_REDUCTIONS,
              FUSION_MAX_COLUMN_REDUCTIONS, ks);
    int kt = check_case("dot_transposed", b_dot_transposed, NULL);
    CHECK_MSG(kt == 2, "transposes feeding a dot fold into it (got %d kernels)", kt);
    int k;
    k = check_case("chain", b_chain, NULL);
    CHECK_MSG(k == 1, "an elementwise chain is one kernel (got %d)", k);
    /* their reductions are row values, computed in the one kernel (fusion.h) */
    k = check_case("softmax", b_softmax, NULL);
    CHECK_MSG(k == 1, "softmax over 64 rows is one kernel (got %d)", k);
    k = check_case("layer_norm", b_layer_norm, NULL);
    CHECK_MSG(k == 1, "layer_norm over 64 rows is one kernel (got %d)", k);
    k = check_case("logsumexp", b_logsumexp, NULL);
    CHECK_MSG(k == 1, "logsumexp is one kernel (got %d)", k);
    k = check_case("mlp", b_mlp, NULL);
    /* dot, bias+relu, dot, then softmax (bias fused into it) */
    CHECK_MSG(k >= 1 && k <= 6, "a 2-layer MLP with softmax takes at most 6 kernels (got %d)", k);
    k = check_case("adam_like", b_adam_like, NULL);
    CHECK_MSG(k == 1, "an Adam-style update of p, m, v is one kernel (got %d)", k);
    k = check_case("consumer_moved", b_consumer_moved, NULL);
    CHECK_MSG(k == 2, "a consumer reading a result transposed stays a kernel of its own (got %d)",
              k);
    kiln_compile_options unfused = {.disable_fusion = true};
    int ku = check_case("chain_unfused", b_chain, &unfused);
    CHECK_MSG(ku > 5, "without fusion the chain is one kernel per op (got %d)", ku);
}

/* A chain whose intermediates each feed two later ops and are too costly to compute twice
 * (Threefry's rounds, or any unrolled loop's carries): fusion materialises them, then
 * merges the chain into one kernel, where they are computed once per element and kept in
 * registers. They take no memory: the plan holds the arguments and the outputs only. */
static void test_kernel_local_values(void) {
    enum { N = 1 << 16 };
    int64_t d[1] = {N};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "rounds", &g);
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, d);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 1, d);
    for (int r = 0; r < 8; r++) {
        a = kiln_add(g, a, kiln_sin(g, b));
        b = kiln_sub(g, kiln_mul(g, b, kiln_scalar(g, KILN_DTYPE_F32, 0.5)), kiln_cos(g, a));
    }
    kiln_value o[2] = {a, b};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    uint64_t rs = 5;
    kiln_array *args[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 1, d, &rs),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 1, d, &rs)};
    int kernels = 0;
    CHECK(cmp_graph(ctx, g, 2, args, NULL, 2e-5, &kernels));
    CHECK_MSG(kernels == 1, "the chain is one kernel (got %d)", kernels);
    kiln_executable *e = NULL;
    kiln_memory_analysis m = {0};
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &m));
    CHECK_MSG(m.temp_bytes == 0 && m.peak_bytes == 4 * N * sizeof(float),
              "temporaries %llu bytes, peak %llu (the arguments and outputs: %zu)",
              (unsigned long long)m.temp_bytes, (unsigned long long)m.peak_bytes,
              4 * N * sizeof(float));
    kiln_executable_destroy(e);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
}

/* -------------------------------------------------------------- errors ---- */

/* Shapes and attributes at int64's edge (hardening issue, defect 5): what the builder
 * accepts is computed without overflow by the interpreter and the compiled code (the
 * sanitizer build checks), and what would overflow is a builder error. */
static void test_int64_edges(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "edges", &g);
    const int64_t huge[3] = {0, 3, INT64_MAX};
    kiln_value bad = kiln_parameter(g, "e", KILN_DTYPE_F32, 3, huge);
    CHECK(bad.id == 0);
    CHECK_CONTAINS(kiln_last_error(ctx), "2^62");
    kiln_graph_destroy(g);

    kiln_graph_create(ctx, "edges", &g);
    const int64_t empty_dims[3] = {0, 3, (int64_t)1 << 40}; /* extent 3 * 2^40: allowed */
    kiln_value e = kiln_parameter(g, "e", KILN_DTYPE_F32, 3, empty_dims);
    const int64_t five[1] = {5}, one[1] = {1};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, five);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, one);
    const int64_t st[1] = {1}, lim[1] = {5}, stride[1] = {INT64_MAX};
    kiln_value s1 = kiln_slice(g, x, st, lim, stride); /* one element: x[1] */
    const int64_t lo[1] = {2}, hi[1] = {1}, interior[1] = {INT64_MAX};
    kiln_value p1 = kiln_pad(g, y, kiln_scalar(g, KILN_DTYPE_F32, 7.0), lo, hi, interior);
    kiln_value outs[3] = {kiln_exp(g, e), kiln_mul(g, s1, kiln_scalar(g, KILN_DTYPE_F32, 3.0)),
                          kiln_add(g, p1, kiln_scalar(g, KILN_DTYPE_F32, 1.0))};
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    kiln_array *args[3] = {NULL, NULL, NULL};
    uint64_t rs = 5;
    args[0] = cmp_random_array(ctx, KILN_DTYPE_F32, 3, empty_dims, &rs);
    args[1] = cmp_random_array(ctx, KILN_DTYPE_F32, 1, five, &rs);
    args[2] = cmp_random_array(ctx, KILN_DTYPE_F32, 1, one, &rs);
    CHECK(cmp_graph(ctx, g, 3, args, NULL, 2e-5, NULL));
    kiln_compile_options unfused = {.disable_fusion = true, .disable_passes = true};
    CHECK(cmp_graph(ctx, g, 3, args, &unfused, 2e-5, NULL));
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);

    /* padding at int64's edge with the padded size in range, and a crop of 2^62 or more:
     * refused, saying so */
    kiln_graph_create(ctx, "edges", &g);
    y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, one);
    const int64_t lo2[1] = {INT64_MIN + 2}, hi2[1] = {INT64_MAX};
    CHECK(kiln_pad(g, y, kiln_scalar(g, KILN_DTYPE_F32, 0.0), lo2, hi2, NULL).id == 0);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_pad");
    kiln_graph_destroy(g);
    kiln_graph_create(ctx, "edges", &g); /* a graph keeps its first error */
    y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, one);
    const int64_t lo3[1] = {-((int64_t)1 << 62)}, hi3[1] = {(int64_t)1 << 62}; /* size 1 */
    CHECK(kiln_pad(g, y, kiln_scalar(g, KILN_DTYPE_F32, 0.0), lo3, hi3, NULL).id == 0);
    CHECK_CONTAINS(kiln_last_error(ctx), "crop 2^62 elements or more");
    kiln_graph_destroy(g);

    /* cropping past the operand, as lax.pad allows (all padding then along that axis):
     * [3, 20] with lo -4 / hi 5 on axis 0 (4 rows), lo -23 / hi 26 on axis 1 of exp(y) (23
     * columns), and with interior padding, lo -6 / hi 8 past its 5 (7 rows) */
    kiln_graph_create(ctx, "edges", &g);
    const int64_t d320[2] = {3, 20};
    y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, d320);
    kiln_value past[3] = {kiln_pad(g, y, kiln_scalar(g, KILN_DTYPE_F32, 7.0), (int64_t[]){-4, 0},
                                   (int64_t[]){5, 0}, NULL),
                          kiln_pad(g, kiln_exp(g, y), kiln_scalar(g, KILN_DTYPE_F32, 7.0),
                                   (int64_t[]){0, -23}, (int64_t[]){0, 26}, NULL),
                          kiln_pad(g, y, kiln_scalar(g, KILN_DTYPE_F32, 7.0), (int64_t[]){-6, 2},
                                   (int64_t[]){8, -1}, (int64_t[]){1, 1})};
    CHECK_OK(ctx, kiln_graph_finish(g, 3, past));
    int64_t pd[3][2];
    for (int i = 0; i < 3; i++) CHECK(kiln_value_type(g, past[i], NULL, NULL, pd[i]));
    CHECK(pd[0][0] == 4 && pd[0][1] == 20 && pd[1][0] == 3 && pd[1][1] == 23 && pd[2][0] == 7 &&
          pd[2][1] == 40);
    rs = 8;
    args[0] = cmp_random_array(ctx, KILN_DTYPE_F32, 2, d320, &rs);
    CHECK(cmp_graph(ctx, g, 1, args, NULL, 2e-5, NULL));
    CHECK(cmp_graph(ctx, g, 1, args, &unfused, 2e-5, NULL));
    kiln_array_destroy(args[0]);
    kiln_graph_destroy(g);

    /* padding each side by almost 2^62: the sum overflows int64 unless checked (fuzz_builder) */
    kiln_graph_create(ctx, "edges", &g);
    const int64_t three[1] = {3}, big[1] = {((int64_t)1 << 62) - 1};
    y = kiln_parameter(g, "y", KILN_DTYPE_F32, 1, three);
    CHECK(kiln_pad(g, y, kiln_scalar(g, KILN_DTYPE_F32, 0.0), big, big, NULL).id == 0);
    CHECK_CONTAINS(kiln_last_error(ctx), "overflows");
    kiln_graph_destroy(g);
}

/* Cases fuzz/fuzz_builder found (fuzz/findings/): a concatenate of one operand three
 * times, which gcc 12 miscompiled with loop splitting (two rows of the third copy lost);
 * a scalar kernel (no index terms at all); a scatter whose rows are empty (NULL buffers). */
static void test_fuzz_findings(void) {
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "findings", &g);
        const int64_t d[3] = {7, 2, 2}, none[1] = {0}, rows[2] = {4, 0}, upd[2] = {3, 0};
        kiln_value x = kiln_parameter(g, "x", dt, 3, d);
        kiln_value xs[3] = {x, x, x};
        kiln_value s = kiln_parameter(g, "s", dt, 0, none);
        kiln_value op = kiln_parameter(g, "op", dt, 2, rows);
        kiln_value ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, upd);
        kiln_value up = kiln_parameter(g, "up", dt, 2, upd);
        kiln_value outs[4] = {kiln_concatenate(g, 3, xs, 0), x, kiln_neg(g, s),
                              kiln_scatter_add_rows(g, op, ix, up)};
        CHECK_OK(ctx, kiln_graph_finish(g, 4, outs));
        uint64_t rs = 11;
        kiln_array *args[5] = {cmp_random_array(ctx, dt, 3, d, &rs),
                               cmp_random_array(ctx, dt, 0, none, &rs),
                               cmp_random_array(ctx, dt, 2, rows, &rs),
                               cmp_random_array(ctx, KILN_DTYPE_I32, 1, upd, &rs),
                               cmp_random_array(ctx, dt, 2, upd, &rs)};
        CHECK(cmp_graph(ctx, g, 5, args, NULL, 0, NULL));
        kiln_compile_options unfused = {.disable_fusion = true};
        CHECK(cmp_graph(ctx, g, 5, args, &unfused, 0, NULL));
        for (int i = 0; i < 5; i++) kiln_array_destroy(args[i]);
        kiln_graph_destroy(g);
    }
}

/* A concatenate of one operand twice along the rows, which gcc 12 without loop splitting
 * if-converted and vectorised wrongly (rows 10-15 of concatenate(x, x) of an f32[10, 2]
 * came out 0; found by a long test_compile_random run, KILN_TEST_SEED=7): KILN_BRANCH_GUARD
 * (src/codegen/prelude/c_head.h, put on by print_c.c's c_qualifiers). Row counts on either
 * side of the vector widths, three dtypes, and a pad, the other kernel that branches on
 * the index. */
static void test_concatenate_twice(void) {
    static const int64_t shapes[][2] = {{10, 2}, {9, 2}, {20, 2}, {100, 2}, {7, 3}, {33, 1}};
    static const kiln_dtype types[3] = {KILN_DTYPE_F32, KILN_DTYPE_I32, KILN_DTYPE_F64};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "concatenate twice", &g);
            kiln_value x = kiln_parameter(g, "x", types[t], 2, shapes[i]);
            kiln_value outs[2] = {kiln_concatenate(g, 2, (kiln_value[]){x, kiln_neg(g, x)}, 0),
                                  kiln_pad(g, x, kiln_scalar(g, types[t], 0), (int64_t[]){0, -1},
                                           (int64_t[]){1, 1}, (int64_t[]){1, 0})};
            CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
            uint64_t rs = 5;
            kiln_array *a = cmp_random_array(ctx, types[t], 2, shapes[i], &rs);
            CHECK_MSG(cmp_graph(ctx, g, 1, &a, NULL, 0, NULL), "%s [%lld, %lld]",
                      kiln_dtype_name(types[t]), (long long)shapes[i][0], (long long)shapes[i][1]);
            kiln_array_destroy(a);
            kiln_graph_destroy(g);
        }
}

/* Concatenations and pads along the last axis print their element loop in segments of
 * that axis, each with its branches decided (schedule.c, segmented_loop): boundaries on
 * either side of the vector widths and of the work items' chunks of a long axis (rows of
 * 50001 split in items), three and five parts, a pad that crops one end and grows the
 * other, a pad whose boundaries fall outside a row, the segments of a row reading
 * one operand twice, three dtypes; every element against the reference. */
static void test_last_axis_segments(void) {
    static const int64_t lens[][3] = {{3, 5, 1}, {7, 9, 17}, {1, 50000, 1}, {4093, 8, 4099}};
    static const kiln_dtype types[3] = {KILN_DTYPE_F32, KILN_DTYPE_I32, KILN_DTYPE_F64};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "last-axis segments", &g);
            kiln_value x[3];
            for (int k = 0; k < 3; k++)
                x[k] = kiln_parameter(g, "x", types[t], 2, (int64_t[]){3, lens[i][k]});
            kiln_value zero = kiln_scalar(g, types[t], 0), seven = kiln_scalar(g, types[t], 7);
            kiln_value five[5] = {x[0], kiln_neg(g, x[1]), x[2], kiln_abs(g, x[0]), x[1]};
            int64_t lo[2] = {0, -1}, hi[2] = {0, 6}, lo2[2] = {1, 2}, hi2[2] = {0, -1};
            kiln_value outs[4] = {
                kiln_mul(g, kiln_concatenate(g, 3, x, 1), seven),
                kiln_concatenate(g, 5, five, 1),
                kiln_add(g, kiln_pad(g, x[1], zero, lo, hi, NULL), seven),
                kiln_pad(g, kiln_neg(g, x[2]), seven, lo2, hi2, NULL),
            };
            CHECK_OK(ctx, kiln_graph_finish(g, 4, outs));
            uint64_t rs = 9;
            kiln_array *a[3];
            for (int k = 0; k < 3; k++)
                a[k] = cmp_random_array(ctx, types[t], 2, (int64_t[]){3, lens[i][k]}, &rs);
            CHECK_MSG(cmp_graph(ctx, g, 3, a, NULL, 0, NULL), "%s, rows of %lld, %lld, %lld",
                      kiln_dtype_name(types[t]), (long long)lens[i][0], (long long)lens[i][1],
                      (long long)lens[i][2]);
            for (int k = 0; k < 3; k++) kiln_array_destroy(a[k]);
            kiln_graph_destroy(g);
        }
}

/* A [B, T, 3 H D] projection's gradient as the GPT's attention makes it: the three
 * [B, H, T, D] cotangents transposed to [B, T, H, D], each padded into its third of the
 * row and added up. The row's index is split by D (the heads), and the kernel is
 * segmented where the thirds meet (multiples of D: each segment the split's two loops,
 * schedule.c, segmented_loop) or not (the middle third cut to 24 features: a boundary
 * off the split); rows long enough to split in work items; f32 and bf16, every element
 * against the reference exactly (adding the pads' zeros rounds nothing). */
static void test_split_segments(void) {
    static const int64_t shapes[][4] = {{2, 4, 8, 16}, {1, 3, 5, 64}, {1, 128, 2, 128}};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i <= sizeof shapes / sizeof *shapes; i++) {
            kiln_dtype dt = t ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
            bool off = i == sizeof shapes / sizeof *shapes; /* thirds off the split */
            const int64_t *s = shapes[off ? 0 : i];
            int64_t B = s[0], H = s[1], T = s[2], D = s[3], C = H * D;
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "split segments", &g);
            int64_t d4[4] = {B, H, T, D}, c2[2] = {B * T, C};
            int perm[4] = {0, 2, 1, 3};
            kiln_value y = KILN_VALUE_NONE, zero = kiln_scalar(g, dt, 0);
            for (int k = 0; k < 3; k++) {
                kiln_value x = kiln_parameter(g, "ct", dt, 4, d4);
                x = kiln_reshape(g, kiln_transpose(g, x, perm), 2, c2);
                if (off && k == 1) /* the middle third's first 24 features alone */
                    x = kiln_slice(g, x, (int64_t[]){0, 0}, (int64_t[]){B * T, 24}, NULL);
                int64_t w = off && k == 1 ? 24 : C, at = k * C;
                int64_t lo[2] = {0, at}, hi[2] = {0, 3 * C - at - w};
                x = kiln_pad(g, x, zero, lo, hi, NULL);
                y = k ? kiln_add(g, y, x) : x;
            }
            CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
            uint64_t rs = 31;
            kiln_array *a[3];
            for (int k = 0; k < 3; k++) a[k] = cmp_random_array(ctx, dt, 4, d4, &rs);
            CHECK_MSG(cmp_graph(ctx, g, 3, a, NULL, 0, NULL), "%s [%lld, %lld, %lld, %lld]%s",
                      kiln_dtype_name(dt), (long long)B, (long long)H, (long long)T, (long long)D,
                      off ? ", thirds off the split" : "");
            for (int k = 0; k < 3; k++) kiln_array_destroy(a[k]);
            kiln_graph_destroy(g);
        }
}

/* f32 sin and cos in an element loop run first by Cody and Waite alone, and the loop runs
 * again exactly when an argument is 2^21 or more (schedule.c, fast_trig_loop): items of
 * small arguments only, one with a single huge argument among small ones, inf and NaN
 * (which need no rerun), through fused expressions, against the reference. */
static void test_fast_trig(void) {
    enum { N = 9000 };
    float *v = malloc(N * sizeof *v);
    uint64_t rs = 23;
    for (int i = 0; i < N; i++) v[i] = (float)(100 * test_rng_unit(&rs) - 50);
    v[100] = INFINITY, v[101] = -INFINITY, v[102] = NAN, v[103] = -0.0f;
    v[5000] = 3.0e7f, v[8999] = -1.0e38f; /* past 2^21: the items holding them run again */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "fast trig", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){N});
    kiln_value o[3] = {kiln_sin(g, x),
                       kiln_cos(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F32, 3))),
                       kiln_add(g, kiln_mul(g, kiln_sin(g, x), kiln_cos(g, x)), x)};
    CHECK_OK(ctx, kiln_graph_finish(g, 3, o));
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (int64_t[]){N}, v, &a));
    CHECK_MSG(cmp_graph(ctx, g, 1, &a, NULL, 1e-6, NULL), "sin and cos with a rerun");
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
    free(v);
}

/* The exact rerun reduces arguments of 2^21 and more through the runtime table (c_runtime.h,
 * pio2_f32), the other exact paths inline (kiln_reduce_pio2_f32): the same bits. An
 * in-place kernel has no fast form (fast_trig_loop), so sin and cos of x donated are the
 * inline ones; of x kept, the rerun's. Arguments from 2^21 to FLT_MAX and a few small. */
static void test_trig_rerun_bits(void) {
    enum { N = 4096 };
    float *v = malloc(N * sizeof *v), *got[2][2];
    uint64_t rs = 41;
    for (int i = 0; i < N; i++) {
        uint32_t u = (uint32_t)(0x4a000000u + (uint32_t)(test_rng_unit(&rs) * 0x35000000u));
        u |= i & 1 ? 0x80000000u : 0; /* 2^21 .. 3.4e38, both signs */
        memcpy(&v[i], &u, 4);
    }
    v[0] = 1.5f, v[1] = -0.25f, v[2] = 0x1p21f, v[3] = 0x1.fffffep127f;
    for (int donate = 0; donate < 2; donate++)
        for (int op = 0; op < 2; op++) {
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "rerun bits", &g);
            kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){N});
            kiln_value o = op ? kiln_cos(g, x) : kiln_sin(g, x);
            CHECK_OK(ctx, kiln_graph_finish(g, 1, &o));
            int zero = 0;
            kiln_compile_options opt = {.n_donate = donate, .donate_argnums = &zero};
            kiln_executable *e = NULL;
            kiln_array *a = NULL, *r = NULL;
            got[donate][op] = calloc(N, sizeof(float));
            CHECK_OK(ctx, kiln_compile(g, &opt, &e));
            CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (int64_t[]){N}, v, &a));
            if (e && a && !kiln_executable_run(e, 1, &a, 1, &r))
                kiln_array_copy_to_host(r, got[donate][op], N * sizeof(float));
            kiln_array_destroy(a), kiln_array_destroy(r);
            kiln_executable_destroy(e);
            kiln_graph_destroy(g);
        }
    for (int op = 0; op < 2; op++)
        CHECK_MSG(!memcmp(got[0][op], got[1][op], N * sizeof(float)),
                  "%s: the rerun's bits differ from the inline exact path's", op ? "cos" : "sin");
    for (int d = 0; d < 2; d++) free(got[d][0]), free(got[d][1]);
    free(v);
}

/* A NaN in any lane of a row or a column wins its max and min (the NaN flag, as wide as
 * the value since print_c.c's nan_ctype): rows of 8, 16 and 37 with one NaN each, at
 * every position in turn, and rows without; f32 and f64; through a softmax too. */
static void test_nan_lanes(void) {
    static const int64_t widths[3] = {8, 16, 37};
    static const kiln_dtype types[2] = {KILN_DTYPE_F32, KILN_DTYPE_F64};
    for (int t = 0; t < 2; t++)
        for (int w = 0; w < 3; w++) {
            int64_t n = widths[w], d[2] = {2 * n, n};
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "nan lanes", &g);
            kiln_value x = kiln_parameter(g, "x", types[t], 2, d);
            int rows = 1, cols = 0;
            kiln_value o[5] = {kiln_reduce_max(g, x, 1, &rows, false),
                               kiln_reduce_min(g, x, 1, &rows, true),
                               kiln_reduce_max(g, x, 1, &cols, false),
                               kiln_reduce_min(g, x, 1, &cols, false), kiln_softmax(g, x, -1)};
            CHECK_OK(ctx, kiln_graph_finish(g, 5, o));
            uint64_t rs = 17;
            double *v = malloc((size_t)(2 * n * n) * sizeof *v);
            float *f = malloc((size_t)(2 * n * n) * sizeof *f);
            for (int64_t i = 0; i < 2 * n * n; i++) v[i] = 4 * test_rng_unit(&rs) - 2;
            for (int64_t i = 0; i < n; i++) v[i * n + i] = NAN; /* row i: lane i; column i: row i */
            for (int64_t i = 0; i < 2 * n * n; i++) f[i] = (float)v[i];
            kiln_array *a = NULL;
            CHECK_OK(ctx, kiln_array_create(ctx, types[t], 2, d, t ? (void *)v : (void *)f, &a));
            free(v);
            free(f);
            CHECK_MSG(cmp_graph(ctx, g, 1, &a, NULL, 1e-5, NULL), "%s, rows of %lld",
                      kiln_dtype_name(types[t]), (long long)n);
            kiln_array_destroy(a);
            kiln_graph_destroy(g);
        }
}

/* Reductions whose elements each reduce thousands of values get smaller chunks of the
 * last axis per work item (lower.c, choose_chunk): rows of a last-axis sum, max and
 * mean split into items of 64 outputs, a column sum into items of 512 columns, a softmax
 * fused after its row reductions, and reductions over a middle axis whose 2500 outputs
 * per row are not a multiple of the chunk; every item's outputs against the reference. */
/* Scatters large enough to split into parts of rows (cpu_ops.h, CPU_SCATTER_PART), with
 * repeated, negative and too-large rows: into a parameter, and into zeros, which fusion
 * gives no buffer (the backend fills them in). Every row adds in index order, so the
 * results are the interpreter's bits, and no temporary the size of the table is planned;
 * the gradient of a gather is such a scatter. */
static void test_scatter_parts(void) {
    const int64_t rows = 3001, len = 96, n_idx = 4000;
    for (int t = 0; t < 3; t++) {
        kiln_dtype dt = t == 0 ? KILN_DTYPE_F32 : t == 1 ? KILN_DTYPE_F64 : KILN_DTYPE_I32;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "scatter_parts", &g);
        const int64_t td[2] = {rows, len}, ud[2] = {n_idx, len};
        kiln_value table = kiln_parameter(g, "table", dt, 2, td);
        kiln_value ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, &n_idx);
        kiln_value up = kiln_parameter(g, "up", dt, 2, ud);
        kiln_value zeros = kiln_full(g, dt, 2, td, 0.0);
        kiln_value outs[2] = {kiln_scatter_add_rows(g, table, ix, up),
                              kiln_scatter_add_rows(g, zeros, ix, up)};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        int32_t *iv = malloc((size_t)n_idx * sizeof *iv);
        for (int64_t i = 0; i < n_idx; i++) /* every row about once, some twice, 1% outside */
            iv[i] = (int32_t)((i * 7919) % (rows + 60)) - 30;
        uint64_t rs = 5;
        kiln_array *args[3] = {cmp_random_array(ctx, dt, 2, td, &rs), NULL,
                               cmp_random_array(ctx, dt, 2, ud, &rs)};
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, &n_idx, iv, &args[1]));
        CHECK(cmp_graph(ctx, g, 3, args, NULL, 0, NULL));
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        kiln_memory_analysis m;
        CHECK_OK(ctx, kiln_executable_get_memory_analysis(e, &m));
        CHECK_MSG(m.temp_bytes == 0, "%s: a scatter into zeros plans %llu temporary bytes",
                  kiln_dtype_name(dt), (unsigned long long)m.temp_bytes);
        kiln_executable_destroy(e);
        for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
        free(iv);
        kiln_graph_destroy(g);
    }
    /* the parts follow the threads (cpu_scatter_parts); every row's updates still come in
     * index order, so 1, 2 and 3 threads give the reference's bits */
    for (int threads = 1; threads <= 3; threads++) {
        kiln_context *c = test_threads_context(cache_dir, threads);
        CHECK_MSG(c, "a context of %d threads", threads);
        if (!c) continue;
        kiln_graph *g = NULL;
        CHECK_OK(c, kiln_graph_create(c, "scatter_threads", &g));
        const int64_t td[2] = {rows, len}, ud[2] = {n_idx, len};
        kiln_value up = kiln_parameter(g, "up", KILN_DTYPE_F32, 2, ud);
        kiln_value ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, &n_idx);
        kiln_value zeros = kiln_full(g, KILN_DTYPE_F32, 2, td, 0.0);
        kiln_value out = kiln_scatter_add_rows(g, zeros, ix, up);
        CHECK_OK(c, kiln_graph_finish(g, 1, &out));
        int32_t *iv = malloc((size_t)n_idx * sizeof *iv);
        for (int64_t i = 0; i < n_idx; i++) iv[i] = (int32_t)((i * 7919) % rows);
        uint64_t rs = 9;
        kiln_array *args[2] = {cmp_random_array(c, KILN_DTYPE_F32, 2, ud, &rs), NULL};
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_I32, 1, &n_idx, iv, &args[1]));
        CHECK_MSG(cmp_graph(c, g, 2, args, NULL, 0, NULL), "%d threads", threads);
        for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
        free(iv);
        kiln_graph_destroy(g);
        kiln_context_destroy(c);
    }
    /* the gradient of a gather, clamped indices and all */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "gather_grad", &g);
    const int64_t td[2] = {rows, len};
    kiln_value table = kiln_parameter(g, "table", KILN_DTYPE_F32, 2, td);
    kiln_value ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, &n_idx);
    kiln_value e = kiln_take_rows(g, table, ix);
    kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, e, e), 0, NULL, false), grad;
    CHECK_OK(ctx, kiln_grad(g, loss, 1, &table, &grad));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &grad));
    int32_t *iv = malloc((size_t)n_idx * sizeof *iv);
    for (int64_t i = 0; i < n_idx; i++) iv[i] = (int32_t)((i * 7919) % (rows + 60)) - 30;
    uint64_t rs = 9;
    kiln_array *args[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 2, td, &rs), NULL};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, &n_idx, iv, &args[1]));
    CHECK(cmp_graph(ctx, g, 2, args, NULL, 0, NULL));
    kiln_executable *x = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &x));
    kiln_memory_analysis m;
    CHECK_OK(ctx, kiln_executable_get_memory_analysis(x, &m));
    /* the temporaries are the updates (2 e) and the clamped indices, not the table's zeros */
    uint64_t want = (uint64_t)(n_idx * len) * sizeof(float) + (uint64_t)n_idx * sizeof(int32_t);
    CHECK_MSG(m.temp_bytes <= want + 512,
              "a gather's gradient plans %llu temporary bytes, not %llu",
              (unsigned long long)m.temp_bytes, (unsigned long long)want);
    kiln_executable_destroy(x);
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
    free(iv);
    kiln_graph_destroy(g);
}

static void test_chunked_reductions(void) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "chunked reductions", &g);
    const int64_t rd[2] = {300, 5000}, cd[2] = {5000, 700}, td[3] = {2, 300, 2500};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, rd);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, cd);
    kiln_value z = kiln_parameter(g, "z", KILN_DTYPE_F64, 3, td);
    int last = -1, first = 0, middle = 1;
    kiln_value outs[7] = {kiln_reduce_sum(g, x, 1, &last, false),
                          kiln_reduce_max(g, x, 1, &last, true),
                          kiln_mean(g, x, 1, &last, false),
                          kiln_reduce_sum(g, y, 1, &first, false),
                          kiln_softmax(g, x, -1),
                          kiln_reduce_min(g, z, 1, &middle, false),
                          kiln_reduce_sum(g, kiln_exp(g, z), 1, &middle, false)};
    CHECK_OK(ctx, kiln_graph_finish(g, 7, outs));
    uint64_t rs = 11;
    kiln_array *args[3] = {cmp_random_array(ctx, KILN_DTYPE_F32, 2, rd, &rs),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 2, cd, &rs),
                           cmp_random_array(ctx, KILN_DTYPE_F64, 3, td, &rs)};
    /* f32 sums of thousands of values: to 1e-4 of (1 + |sum|) (the blocked sums, kdesc.h) */
    CHECK_MSG(cmp_graph(ctx, g, 3, args, NULL, 1e-4, NULL), "chunked reductions differ");
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

/* max and min order -0 below +0, as jnp.maximum / jnp.minimum (and IEEE 754-2019's
 * maximum / minimum) do: max(+0, -0) and max(-0, +0) are +0, min of either order -0,
 * compiled and interpreted alike, in f32 and f64, through a loop long enough to be
 * vectorised; clip(-0, 0, 1) is +0 as in jnp.clip. Ties of other values and NaN keep
 * their rules (the tie is the value itself, NaN in either operand gives NaN). */
static void test_signed_zero_max_min(void) {
    enum { N = 37 };
    static const double pattern[][2] = {{0.0, -0.0}, {-0.0, 0.0},  {-0.0, -0.0}, {0.0, 0.0},
                                        {2.5, 2.5},  {-1.0, -0.0}, {NAN, -0.0},  {-0.0, NAN}};
    enum { P = sizeof pattern / sizeof *pattern };
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
        double a[N], b[N];
        float af[N], bf[N];
        for (int i = 0; i < N; i++) {
            a[i] = pattern[i % P][0], b[i] = pattern[i % P][1];
            af[i] = (float)a[i], bf[i] = (float)b[i];
        }
        int64_t n = N;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "signed zeros", &g);
        kiln_value x = kiln_parameter(g, "x", dt, 1, &n), y = kiln_parameter(g, "y", dt, 1, &n);
        kiln_value outs[3] = {kiln_max(g, x, y), kiln_min(g, x, y),
                              kiln_clip(g, x, kiln_scalar(g, dt, 0), kiln_scalar(g, dt, 1))};
        CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
        kiln_array *args[2] = {NULL, NULL}, *got[2][3] = {{NULL}};
        CHECK_OK(ctx, kiln_array_create(ctx, dt, 1, &n, t ? (void *)a : (void *)af, &args[0]));
        CHECK_OK(ctx, kiln_array_create(ctx, dt, 1, &n, t ? (void *)b : (void *)bf, &args[1]));
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        CHECK_OK(ctx, kiln_executable_run(e, 2, args, 3, got[0]));
        CHECK_OK(ctx, kiln_interpret(g, 2, args, 3, got[1]));
        for (int path = 0; path < 2; path++)
            for (int o = 0; o < 3 && got[path][o]; o++) {
                double v[N];
                float vf[N];
                kiln_array_copy_to_host(got[path][o], t ? (void *)v : (void *)vf,
                                        (size_t)N * (t ? 8 : 4));
                for (int i = 0; i < N; i++) {
                    double r = t ? v[i] : vf[i], p = a[i], q = b[i];
                    double want = o == 2   ? (p < 0    ? 0.0
                                              : p > 1  ? 1.0
                                              : p == 0 ? 0.0
                                                       : p)
                                  : o == 0 ? (p > q        ? p
                                              : q > p      ? q
                                              : signbit(p) ? q
                                                           : p)
                                           : (p < q        ? p
                                              : q < p      ? q
                                              : signbit(p) ? p
                                                           : q);
                    if (o < 2 && (isnan(p) || isnan(q))) want = NAN;
                    bool ok = isnan(want) ? isnan(r) : r == want && signbit(r) == signbit(want);
                    CHECK_MSG(ok, "%s %s %s(%g, %g) = %g, want %g", kiln_dtype_name(dt),
                              path ? "interpreted" : "compiled",
                              o == 0   ? "max"
                              : o == 1 ? "min"
                                       : "clip",
                              p, q, r, want);
                }
                kiln_array_destroy(got[path][o]);
            }
        kiln_executable_destroy(e);
        kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
        kiln_graph_destroy(g);
    }
}

/* Products large enough to be split into row blocks across the pool (cpu_gemm_blocks),
 * in every operand layout, against the reference: each block must read its own rows of
 * op(A) (rows of A, or columns when A is read transposed) and write its own rows of C. */
static void test_split_products(void) {
    for (int layout = 0; layout < 4; layout++) {
        bool ta = layout & 1, tb = layout & 2;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "split", &g);
        const int64_t M = 200, K = 150, N = 170;
        int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, ad);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 2, bd);
        kiln_dot_dims dd = {
            .n_contract = 1, .lhs_contract = {ta ? 0 : 1}, .rhs_contract = {tb ? 1 : 0}};
        kiln_value y = kiln_dot_general(g, a, b, &dd);
        /* and a batched product whose batch is smaller than the pool */
        const int64_t bad[3] = {1, 96, 130}, bbd[3] = {1, 130, 90};
        kiln_value x3 = kiln_parameter(g, "x3", KILN_DTYPE_F64, 3, bad);
        kiln_value w3 = kiln_parameter(g, "w3", KILN_DTYPE_F64, 3, bbd);
        kiln_value outs[2] = {y, kiln_matmul(g, x3, w3)};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        uint64_t rs = 3 + (uint64_t)layout;
        kiln_array *args[4] = {cmp_random_array(ctx, KILN_DTYPE_F32, 2, ad, &rs),
                               cmp_random_array(ctx, KILN_DTYPE_F32, 2, bd, &rs),
                               cmp_random_array(ctx, KILN_DTYPE_F64, 3, bad, &rs),
                               cmp_random_array(ctx, KILN_DTYPE_F64, 3, bbd, &rs)};
        CHECK_MSG(cmp_graph(ctx, g, 4, args, NULL, 2e-5, NULL), "layout %d", layout);
        for (int i = 0; i < 4; i++) kiln_array_destroy(args[i]);
        kiln_graph_destroy(g);
    }
}

/* Products with a zero in each position (batch, M, N, K), for operands read in place and
 * for operands the lowering packs into scratch first (free axes split around the
 * contracting one), three dtypes, fused and not: against the reference. An empty product
 * must not touch its buffers (NULL when empty: no offset may be taken from them, which
 * clang's UBSan reports), and one with K = 0 must still write zeros into its output. */
static void test_empty_products(void) {
    static const kiln_dtype types[3] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_I32};
    for (int c = 0; c < 5 * 2 * 3; c++) {
        int zero = c % 5, packed = c / 5 % 2; /* zero: 0 batch, 1 M, 2 N, 3 K, 4 none */
        kiln_dtype t = types[c / 10];
        int64_t n[4] = {2, 3, 4, 5};
        if (zero < 4) n[zero] = 0;
        int64_t B = n[0], M = n[1], N = n[2], K = n[3];
        int64_t ld[4] = {B, M, K, 2}, rd[4] = {K, N, B, 2}; /* packed: [B,M,K,2] [K,N,B,2] */
        if (!packed) rd[0] = B, rd[1] = K, rd[2] = N;       /* [B, M, K] [B, K, N]: strided views */
        kiln_dot_dims dd = {.n_contract = 1, .lhs_contract = {2}, .n_batch = 1}; /* lhs batch 0 */
        dd.rhs_contract[0] = packed ? 0 : 1, dd.rhs_batch[0] = packed ? 2 : 0;
        int rank = packed ? 4 : 3;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "empty products", &g);
        kiln_value a = kiln_parameter(g, "a", t, rank, ld), b = kiln_parameter(g, "b", t, rank, rd);
        kiln_value m2a = kiln_parameter(g, "m2a", t, 2, (int64_t[]){M, K});
        kiln_value m2b = kiln_parameter(g, "m2b", t, 2, (int64_t[]){K, N});
        kiln_value outs[2] = {kiln_dot_general(g, a, b, &dd), kiln_matmul(g, m2a, m2b)};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        uint64_t rs = 17 + (uint64_t)c;
        kiln_array *args[4] = {cmp_random_array(ctx, t, rank, ld, &rs),
                               cmp_random_array(ctx, t, rank, rd, &rs),
                               cmp_random_array(ctx, t, 2, (int64_t[]){M, K}, &rs),
                               cmp_random_array(ctx, t, 2, (int64_t[]){K, N}, &rs)};
        kiln_compile_options unfused = {.disable_fusion = true};
        CHECK_MSG(cmp_graph(ctx, g, 4, args, NULL, 1e-5, NULL), "zero %d, packed %d, %s", zero,
                  packed, kiln_dtype_name(t));
        CHECK_MSG(cmp_graph(ctx, g, 4, args, &unfused, 1e-5, NULL), "unfused: zero %d, packed %d",
                  zero, packed);
        for (int i = 0; i < 4; i++) kiln_array_destroy(args[i]);
        kiln_graph_destroy(g);
    }
}

static void test_errors(void) {
    kiln_graph *g;
    kiln_graph_create(ctx, "unfinished", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d3);
    (void)x;
    kiln_executable *e = NULL;
    CHECK_STATUS(kiln_compile(g, NULL, &e), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "not finished");
    CHECK(e == NULL);
    kiln_value y = kiln_exp(g, x);
    kiln_graph_finish(g, 1, &y);
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    kiln_array *a = NULL, *out = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, d23, NULL, &a);
    CHECK_STATUS(kiln_executable_run(e, 1, &a, 1, &out), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_last_error(ctx), "argument 0 (\"x\") is f32[2,3], the parameter is f32[3]");
    CHECK(out == NULL);
    CHECK_STATUS(kiln_executable_run(e, 0, NULL, 1, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "takes 1 arguments, got 0");
    kiln_array_destroy(a);
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, d3, NULL, &a);
    CHECK_STATUS(kiln_executable_run(e, 1, &a, 2, &out), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_OK(ctx, kiln_executable_run(e, 1, &a, 1, &out));
    float v[3];
    kiln_array_copy_to_host(out, v, sizeof v);
    CHECK(v[0] == 1.0f && v[2] == 1.0f); /* exp(0) */
    kiln_array_destroy(out);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------- fault injection, processes ---- */

static kiln_status compile_and_run(kiln_context *c, int *out_bad) {
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    kiln_array *outs[2] = {0};
    kiln_status s = kiln_graph_create(c, "fault", &g);
    if (!s) {
        kiln_value o[2];
        b_mlp(g, o);
        o[1] = kiln_layer_norm(g, o[0], (kiln_value){0, 0}, (kiln_value){0, 0}, 1e-5);
        s = kiln_graph_finish(g, 2, o);
    }
    if (!s) s = kiln_compile(g, NULL, &e);
    int np = s ? 0 : kiln_graph_num_parameters(g);
    kiln_array *all[8] = {0};
    for (int i = 0; !s && i < np; i++) {
        const ir_node *p = &g->nodes[g->params[i]];
        s = kiln_array_create(c, p->dtype, p->shape.rank, p->shape.dims, NULL, &all[i]);
    }
    if (!s) s = kiln_executable_run(e, np, all, 2, outs);
    if (!s) *out_bad = kiln_array_size(outs[1]) != 32 * 10;
    for (int i = 0; i < 8; i++) kiln_array_destroy(all[i]);
    kiln_array_destroy(outs[0]), kiln_array_destroy(outs[1]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return s;
}

/* Every host allocation of a whole compile-and-run fails in turn: each must end in a clean
 * KILN_STATUS_HOST_OOM with nothing leaked (the machine code comes from the disk cache after
 * the first run, so this stays fast). */
static void test_fault_injection(const char *dir) {
    fault_ctx_case fc = {dir, compile_and_run, "the run succeeded with wrong results"};
    fault_sweep sw = {
        .name = "compile and run", .run = fault_in_context, .user = &fc, .max_runs = 5000};
    long n = fault_sweep_run(&sw);
    printf("fault injection: %ld host allocations of a compile-and-run failed in turn\n", n);
}

/* A second process compiling the same program loads it from the disk cache: the C
 * compiler is never started. One compile tier: with two, the first process may be gone
 * before its optimised build was (test_tiers covers a cached second tier). */
static void test_second_process(const char *dir) {
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .compile_tiers = 1};
    kiln_context *c;
    int bad = 0;
    kiln_context_create(&o, &c, NULL, 0);
    CHECK_OK(c, compile_and_run(c, &bad)); /* makes sure the entry exists */
    kiln_context_destroy(c);
    pid_t pid = fork();
    if (pid == 0) {
        kiln_context *cc;
        if (kiln_context_create(&o, &cc, NULL, 0)) _exit(3);
        int b = 0;
        if (compile_and_run(cc, &b) || b) _exit(4);
        cc_stats st;
        cc_get_stats(cpu_backend_compiler(cc->devices[0].state), &st);
        kiln_context_destroy(cc);
        _exit(st.compiles == 0 && st.disk_hits >= 1 ? 0 : 5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the second process compiled again or failed (exit %d)", WEXITSTATUS(status));
}

int main(void) {
    seed = test_seed(0x9e3779b97f4a7c15ull);
    char *dir = cache_dir;
    if (!(ctx = test_private_context(dir))) return 2;
    RUN(test_every_op);
    RUN(test_kernel_counts);
    RUN(test_kernel_local_values);
    RUN(test_int64_edges);
    RUN(test_fuzz_findings);
    RUN(test_concatenate_twice);
    RUN(test_last_axis_segments);
    RUN(test_split_segments);
    RUN(test_nan_lanes);
    RUN(test_fast_trig);
    RUN(test_trig_rerun_bits);
    RUN(test_signed_zero_max_min);
    RUN(test_chunked_reductions);
    RUN(test_scatter_parts);
    RUN(test_split_products);
    RUN(test_empty_products);
    RUN(test_errors);
    test_second_process(dir);
    test_fault_injection(dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_compile_ops");
}
