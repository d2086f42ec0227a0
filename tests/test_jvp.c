/* test_jvp.c — forward mode (kiln_jvp, src/autodiff/jvp.c): every differentiable op and a
 * few compositions, checked against central finite differences in f64 (the reference
 * interpreter) and against reverse mode (<u, J v> by kiln_jvp equals <J^T u, v> by
 * kiln_vjp, to a tight tolerance); Hessian-vector products (kiln_jvp of a kiln_grad)
 * against finite differences of the gradient; the tangent graphs compiled on the CPU
 * against the interpreter; bf16/f16 tangents; symbolic zeros (no node built); the errors. */
#include "compare.h"
#include "gather_grad_cases.h"
#include "autodiff/autodiff.h"
#include "ir/ir.h"
#include "trace/trace.h"

#include <stdint.h>

#define MAX_IN 4

typedef kiln_value (*case_fn)(kiln_graph *g, const kiln_value *x);

enum { ANY, POS, DISTINCT, UNIT, ABOVE1 }; /* how a case's inputs are drawn */

typedef struct jvp_case {
    const char *name;
    case_fn f;
    int n_in;
    int rank[MAX_IN];
    int64_t dims[MAX_IN][KILN_MAX_RANK];
    int kind;
    bool loose; /* passes through f32: finite differences with a larger step */
} jvp_case;

/* ------------------------------------------------------------ the cases ---- */

#define U(name, call)                                                                              \
    static kiln_value name(kiln_graph *g, const kiln_value *x) {                                   \
        return call;                                                                               \
    }
static kiln_dtype dtype_of(kiln_graph *g, kiln_value x) {
    kiln_dtype t = KILN_DTYPE_F64;
    int r;
    int64_t d[KILN_MAX_RANK];
    kiln_value_type(g, x, &t, &r, d);
    return t;
}
static kiln_value i32s(kiln_graph *g, int rank, const int64_t *dims, const int32_t *v) {
    return kiln_constant(g, KILN_DTYPE_I32, rank, dims, v);
}
static kiln_value starts(kiln_graph *g, int a, int b, kiln_value *st) {
    st[0] = kiln_scalar(g, KILN_DTYPE_I32, a);
    st[1] = kiln_scalar(g, KILN_DTYPE_I64, b);
    return st[0];
}
static kiln_value dslice(kiln_graph *g, kiln_value x, int a, int b) {
    kiln_value st[2];
    starts(g, a, b, st);
    return kiln_dynamic_slice(g, x, 2, st, (const int64_t[]){2, 3});
}
static kiln_value dupdate(kiln_graph *g, kiln_value x, kiln_value u, int a, int b) {
    kiln_value st[2];
    starts(g, a, b, st);
    return kiln_dynamic_update_slice(g, x, u, 2, st);
}
static kiln_value dot_with(kiln_graph *g, const kiln_value *x, int nc, const int *lc, const int *rc,
                           int nb, const int *lb, const int *rb) {
    kiln_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contract = nc, d.n_batch = nb;
    for (int i = 0; i < nc; i++) d.lhs_contract[i] = lc[i], d.rhs_contract[i] = rc[i];
    for (int i = 0; i < nb; i++) d.lhs_batch[i] = lb[i], d.rhs_batch[i] = rb[i];
    return kiln_dot_general(g, x[0], x[1], &d);
}
/* a two-layer MLP with softmax cross-entropy: x [4,5], w1 [5,6], b1 [6], w2 [6,3] */
static kiln_value mlp(kiln_graph *g, const kiln_value *x) {
    kiln_value h = kiln_tanh(g, kiln_add(g, kiln_matmul(g, x[0], x[1]), x[2]));
    kiln_value z = kiln_matmul(g, kiln_relu(g, h), x[3]);
    kiln_value labels = i32s(g, 1, (const int64_t[]){4}, (const int32_t[]){0, 2, 1, 2});
    return kiln_mean(g, kiln_softmax_cross_entropy(g, z, labels), 0, NULL, false);
}
static kiln_value random_mix(kiln_graph *g, kiln_value x) {
    kiln_value n =
        kiln_random_normal(g, kiln_random_key(g, 7), dtype_of(g, x), 2, (const int64_t[]){2, 3});
    return kiln_mul(g, kiln_add(g, x, n), kiln_sin(g, x));
}
U(f_neg, kiln_neg(g, x[0]))
U(f_abs, kiln_abs(g, x[0]))
U(f_exp, kiln_exp(g, x[0]))
U(f_log, kiln_log(g, x[0]))
U(f_log1p, kiln_log1p(g, x[0]))
U(f_sqrt, kiln_sqrt(g, x[0]))
U(f_rsqrt, kiln_rsqrt(g, x[0]))
U(f_tanh, kiln_tanh(g, x[0]))
U(f_logistic, kiln_logistic(g, x[0]))
U(f_sin, kiln_sin(g, x[0]))
U(f_cos, kiln_cos(g, x[0]))
U(f_erf, kiln_erf(g, x[0]))
U(f_expm1, kiln_expm1(g, x[0]))
U(f_tan, kiln_tan(g, x[0]))
U(f_sinh, kiln_sinh(g, x[0]))
U(f_cosh, kiln_cosh(g, x[0]))
U(f_asin, kiln_asin(g, x[0]))
U(f_acos, kiln_acos(g, x[0]))
U(f_atan, kiln_atan(g, x[0]))
U(f_asinh, kiln_asinh(g, x[0]))
U(f_acosh, kiln_acosh(g, x[0]))
U(f_atanh, kiln_atanh(g, x[0]))
U(f_erfc, kiln_erfc(g, x[0]))
U(f_erf_inv, kiln_erf_inv(g, x[0]))
U(f_lgamma, kiln_lgamma(g, x[0]))
U(f_digamma, kiln_digamma(g, x[0]))
U(f_cbrt, kiln_cbrt(g, x[0]))
U(f_atan2, kiln_atan2(g, x[0], x[1]))
U(f_add, kiln_add(g, x[0], x[1]))
U(f_sub, kiln_sub(g, x[0], x[1]))
U(f_mul, kiln_mul(g, x[0], x[1]))
U(f_div, kiln_div(g, x[0], x[1]))
U(f_pow, kiln_pow(g, x[0], x[1]))
U(f_rem, kiln_rem(g, x[0], x[1]))
U(f_max, kiln_max(g, x[0], x[1]))
U(f_min, kiln_min(g, x[0], x[1]))
U(f_select, kiln_select(g, kiln_compare(g, x[0], x[1], KILN_CMP_GT), kiln_mul(g, x[0], x[1]),
                        kiln_exp(g, x[1])))
U(f_bcast, kiln_broadcast_in_dim(g, x[0], 3, (const int64_t[]){2, 3, 4}, (const int[]){1}))
U(f_bcast1, kiln_broadcast_in_dim(g, x[0], 3, (const int64_t[]){2, 3, 4}, (const int[]){0, 2}))
U(f_reshape, kiln_reshape(g, kiln_exp(g, x[0]), 2, (const int64_t[]){3, 4}))
U(f_transpose, kiln_transpose(g, x[0], (const int[]){2, 0, 1}))
U(f_rev, kiln_rev(g, x[0], 2, (const int[]){-1, 0}))
U(f_slice,
  kiln_slice(g, x[0], (const int64_t[]){1, 0}, (const int64_t[]){5, 3}, (const int64_t[]){2, 2}))
U(f_pad, kiln_pad(g, x[0], x[1], (const int64_t[]){1, -1}, (const int64_t[]){2, 1},
                  (const int64_t[]){1, 2}))
U(f_pad_value, kiln_pad(g, kiln_exp(g, x[0]), kiln_scalar(g, dtype_of(g, x[0]), 0.5),
                        (const int64_t[]){0, 2}, (const int64_t[]){1, 0}, (const int64_t[]){2, 0}))
U(f_concat, kiln_concatenate(g, 3, (kiln_value[]){x[0], kiln_tanh(g, x[1]), x[0]}, 1))
U(f_concat_const,
  kiln_concatenate(g, 2,
                   (kiln_value[]){kiln_full(g, dtype_of(g, x[0]), 2, (const int64_t[]){2, 2}, 1.5),
                                  x[0]},
                   1))
U(f_convert,
  kiln_mul(g, kiln_convert(g, kiln_convert(g, x[0], KILN_DTYPE_F32), dtype_of(g, x[0])), x[0]))
U(f_matmul, kiln_matmul(g, x[0], x[1]))
U(f_dot_batch,
  dot_with(g, x, 1, (const int[]){2}, (const int[]){0}, 1, (const int[]){1}, (const int[]){2}))
U(f_dot_two, dot_with(g, x, 2, (const int[]){0, 2}, (const int[]){2, 0}, 0, NULL, NULL))
U(f_rsum, kiln_reduce_sum(g, x[0], 2, (const int[]){0, -1}, false))
U(f_rmax, kiln_reduce_max(g, x[0], 1, (const int[]){1}, true))
U(f_rmin, kiln_reduce_min(g, x[0], 0, NULL, false))
U(f_rprod, kiln_reduce_prod(g, x[0], 1, (const int[]){1}, false))
U(f_take, kiln_take_rows(g, x[0],
                         i32s(g, 2, (const int64_t[]){2, 3}, (const int32_t[]){0, 2, 2, -1, 7, 1})))
U(f_scatter, kiln_scatter_add_rows(g, x[0],
                                   kiln_constant(g, KILN_DTYPE_I64, 1, (const int64_t[]){4},
                                                 (const int64_t[]){1, 1, -3, 2}),
                                   kiln_mul(g, x[1], x[1])))
U(f_scatter_zero_op,
  kiln_scatter_add_rows(g, kiln_full(g, dtype_of(g, x[0]), 2, (const int64_t[]){3, 2}, 0.25),
                        i32s(g, 1, (const int64_t[]){2}, (const int32_t[]){2, 0}),
                        kiln_sin(g, x[0])))
U(f_dslice, dslice(g, kiln_tanh(g, x[0]), 1, 3))
U(f_dupdate, kiln_mul(g, dupdate(g, x[0], x[1], 1, 1), x[0]))
U(f_dupdate_clamp, dupdate(g, x[0], kiln_sin(g, x[1]), 3, -1))
U(f_cumsum, kiln_cumsum(g, kiln_mul(g, x[0], x[0]), 1, false))
U(f_cumsum_rev, kiln_cumsum(g, x[0], 0, true))
/* convolutions: the forward kind, and the two gradient kinds (built by kiln_vjp) as
 * functions of their own, so their JVP and VJP rules are checked as well */
static kiln_value f_conv(kiln_graph *g, const kiln_value *x) {
    kiln_conv_options o = {.window_strides = {2, 1},
                           .pad_lo = {1, 0},
                           .pad_hi = {0, 1},
                           .rhs_dilation = {1, 2},
                           .feature_group_count = 2};
    return kiln_conv_general_dilated(g, x[0], x[1], &o);
}
static kiln_value conv_grad_of(kiln_graph *g, const kiln_value *x, int which) {
    kiln_conv_options o = {.layout = KILN_CONV_NHWC,
                           .lhs_dilation = {2, 1},
                           .pad_lo = {1, -1},
                           .pad_hi = {1, 1},
                           .window_strides = {1, 2}};
    kiln_value y = kiln_conv_general_dilated(g, x[0], x[1], &o), d = {0, 0};
    kiln_vjp(g, 1, &y, &x[2], 1, &x[which], &d);
    return d;
}
U(f_conv_dx, conv_grad_of(g, x, 0))
U(f_conv_dw, conv_grad_of(g, x, 1))
U(f_attn_gqa,
  kiln_dot_product_attention(g, x[0], x[1], x[2], &(kiln_attention_options){.is_causal = true}))
U(f_attn_rank3, kiln_dot_product_attention(g, kiln_tanh(g, x[0]), x[1], x[2],
                                           &(kiln_attention_options){.scale = 0.7}))
U(f_attn_self, kiln_dot_product_attention(g, x[0], x[0], x[0], NULL))
U(f_attn_fill, trace_attention(g, x[0], x[1], x[2], 0.6, true, 0.3))
U(f_all_reduce, kiln_add(g, kiln_all_reduce(g, kiln_exp(g, x[0]), KILN_REDUCE_MEAN),
                         kiln_all_reduce(g, x[0], KILN_REDUCE_MAX)))
U(f_random, random_mix(g, x[0]))
U(f_softmax, kiln_softmax(g, x[0], -1))
U(f_log_softmax, kiln_log_softmax(g, x[0], 0))
U(f_logsumexp, kiln_logsumexp(g, x[0], 1, (const int[]){1}, false))
U(f_layer_norm, kiln_layer_norm(g, x[0], x[1], x[2], 1e-5))
U(f_rms_norm, kiln_rms_norm(g, x[0], x[1], -1, 1e-5))
U(f_relu, kiln_relu(g, x[0]))
U(f_gelu, kiln_gelu(g, x[0], false))
U(f_silu, kiln_silu(g, x[0]))
U(f_clip, kiln_clip(g, x[0], x[1], x[2]))
U(f_xent,
  kiln_softmax_cross_entropy(g, x[0], i32s(g, 1, (const int64_t[]){3}, (const int32_t[]){1, 0, 3})))
U(f_take_wrap, kiln_take(g, x[0], i32s(g, 1, (const int64_t[]){3}, (const int32_t[]){-1, 4, 2}), -1,
                         KILN_GATHER_WRAP))
U(f_mlp, mlp(g, x))
#undef U

#define S(...) __VA_ARGS__
static const jvp_case cases[] = {
    {"neg", f_neg, 1, {2}, {{2, 3}}, ANY, false},
    {"abs", f_abs, 1, {1}, {{5}}, ANY, false},
    {"exp", f_exp, 1, {0}, {{0}}, ANY, false},
    {"log", f_log, 1, {2}, {{2, 2}}, POS, false},
    {"log1p", f_log1p, 1, {1}, {{3}}, POS, false},
    {"sqrt", f_sqrt, 1, {1}, {{3}}, POS, false},
    {"rsqrt", f_rsqrt, 1, {1}, {{3}}, POS, false},
    {"tanh", f_tanh, 1, {2}, {{3, 1}}, ANY, false},
    {"logistic", f_logistic, 1, {1}, {{4}}, ANY, false},
    {"sin", f_sin, 1, {2}, {{2, 3}}, ANY, false},
    {"cos", f_cos, 1, {2}, {{3, 2}}, ANY, false},
    {"erf", f_erf, 1, {1}, {{6}}, ANY, false},
    {"expm1", f_expm1, 1, {1}, {{5}}, ANY, false},
    {"tan", f_tan, 1, {1}, {{5}}, UNIT, false},
    {"sinh", f_sinh, 1, {1}, {{5}}, ANY, false},
    {"cosh", f_cosh, 1, {1}, {{5}}, ANY, false},
    {"asin", f_asin, 1, {1}, {{5}}, UNIT, false},
    {"acos", f_acos, 1, {1}, {{5}}, UNIT, false},
    {"atan", f_atan, 1, {1}, {{5}}, ANY, false},
    {"asinh", f_asinh, 1, {1}, {{5}}, ANY, false},
    {"acosh", f_acosh, 1, {1}, {{5}}, ABOVE1, false},
    {"atanh", f_atanh, 1, {1}, {{5}}, UNIT, false},
    {"erfc", f_erfc, 1, {1}, {{5}}, ANY, false},
    {"erf_inv", f_erf_inv, 1, {1}, {{5}}, UNIT, false},
    {"lgamma", f_lgamma, 1, {1}, {{5}}, POS, false},
    {"digamma", f_digamma, 1, {1}, {{5}}, POS, false},
    {"cbrt", f_cbrt, 1, {1}, {{5}}, ANY, false},
    {"atan2", f_atan2, 2, {2, 1}, {{2, 3}, {3}}, ANY, false},
    {"add bcast", f_add, 2, {2, 1}, {{2, 3}, {3}}, ANY, false},
    {"sub bcast", f_sub, 2, {2, 2}, {{2, 1}, {1, 3}}, ANY, false},
    {"mul scalar", f_mul, 2, {0, 2}, {{0}, {2, 3}}, ANY, false},
    {"div", f_div, 2, {2, 1}, {{2, 3}, {3}}, POS, false},
    {"pow", f_pow, 2, {1, 1}, {{4}, {4}}, POS, false},
    {"rem", f_rem, 2, {2, 1}, {{2, 3}, {3}}, POS, false},
    {"max", f_max, 2, {2, 1}, {{3, 2}, {2}}, DISTINCT, false},
    {"min", f_min, 2, {1, 1}, {{4}, {4}}, DISTINCT, false},
    {"select", f_select, 2, {1, 1}, {{5}, {5}}, DISTINCT, false},
    {"broadcast", f_bcast, 1, {1}, {{3}}, ANY, false},
    {"broadcast size-1", f_bcast1, 1, {2}, {{1, 4}}, ANY, false},
    {"reshape", f_reshape, 1, {3}, {{2, 2, 3}}, ANY, false},
    {"transpose", f_transpose, 1, {3}, {{2, 3, 2}}, ANY, false},
    {"rev", f_rev, 1, {3}, {{2, 3, 4}}, ANY, false},
    {"slice strided", f_slice, 1, {2}, {{6, 3}}, ANY, false},
    {"pad crop interior", f_pad, 2, {2, 0}, {{3, 2}, {0}}, ANY, false},
    {"pad, constant value", f_pad_value, 1, {2}, {{2, 3}}, ANY, false},
    {"concatenate", f_concat, 2, {2, 2}, {{2, 1}, {2, 3}}, ANY, false},
    {"concatenate with a constant", f_concat_const, 1, {2}, {{2, 3}}, ANY, false},
    {"convert f64 -> f32 -> f64", f_convert, 1, {1}, {{3}}, ANY, true},
    {"matmul", f_matmul, 2, {2, 2}, {{2, 3}, {3, 4}}, ANY, false},
    {"dot batch inside", f_dot_batch, 2, {3, 3}, {{3, 2, 4}, {4, 5, 2}}, ANY, false},
    {"dot two contracting", f_dot_two, 2, {3, 3}, {{2, 3, 2}, {2, 4, 2}}, ANY, false},
    {"reduce_sum", f_rsum, 1, {3}, {{2, 3, 4}}, ANY, false},
    {"reduce_max", f_rmax, 1, {3}, {{2, 3, 4}}, DISTINCT, false},
    {"reduce_min", f_rmin, 1, {3}, {{2, 3, 4}}, DISTINCT, false},
    {"reduce_prod", f_rprod, 1, {3}, {{2, 3, 2}}, ANY, false},
    {"take_rows", f_take, 1, {2}, {{4, 2}}, ANY, false},
    {"scatter_add_rows", f_scatter, 2, {2, 2}, {{3, 2}, {4, 2}}, ANY, false},
    {"scatter_add_rows, constant operand", f_scatter_zero_op, 1, {2}, {{2, 2}}, ANY, false},
    {"dynamic_slice, clamped", f_dslice, 1, {2}, {{4, 5}}, ANY, false},
    {"dynamic_update_slice", f_dupdate, 2, {2, 2}, {{4, 5}, {2, 3}}, ANY, false},
    {"dynamic_update_slice, clamped", f_dupdate_clamp, 2, {2, 2}, {{4, 5}, {2, 3}}, ANY, false},
    GATHER_GRAD_ROWS(, false){"cumsum", f_cumsum, 1, {2}, {{2, 5}}, ANY, false},
    {"cumsum reverse", f_cumsum_rev, 1, {2}, {{4, 2}}, ANY, false},
    {"attention causal, 4 heads over 2",
     f_attn_gqa,
     3,
     {4, 4, 4},
     {{2, 3, 4, 2}, {2, 3, 2, 2}, {2, 3, 2, 3}},
     ANY,
     false},
    {"attention rank 3, T < S, Hv != H",
     f_attn_rank3,
     3,
     {3, 3, 3},
     {{2, 2, 3}, {4, 1, 3}, {4, 1, 2}},
     ANY,
     false},
    {"attention, q = k = v", f_attn_self, 1, {4}, {{1, 3, 2, 2}}, ANY, false},
    {"attention causal, a finite fill",
     f_attn_fill,
     3,
     {4, 4, 4},
     {{1, 3, 2, 2}, {1, 5, 1, 2}, {1, 5, 1, 3}},
     ANY,
     false},
    {"convolution (groups, stride, padding, dilation)",
     f_conv,
     2,
     {4, 4},
     {{1, 4, 5, 4}, {4, 2, 3, 2}},
     ANY,
     false},
    /* NHWC x [1, 3, 4, 2], HWIO w [2, 2, 2, 3]: output [1, 6, 2, 3] */
    {"convolution input gradient",
     f_conv_dx,
     3,
     {4, 4, 4},
     {{1, 3, 4, 2}, {2, 2, 2, 3}, {1, 6, 2, 3}},
     ANY,
     false},
    {"convolution filter gradient",
     f_conv_dw,
     3,
     {4, 4, 4},
     {{1, 3, 4, 2}, {2, 2, 2, 3}, {1, 6, 2, 3}},
     ANY,
     false},
    {"all_reduce mean and max", f_all_reduce, 1, {2}, {{2, 3}}, ANY, false},
    {"random numbers", f_random, 1, {2}, {{2, 3}}, ANY, false},
    {"softmax", f_softmax, 1, {2}, {{2, 4}}, ANY, false},
    {"log_softmax", f_log_softmax, 1, {2}, {{3, 2}}, ANY, false},
    {"logsumexp", f_logsumexp, 1, {2}, {{2, 3}}, ANY, false},
    {"layer_norm", f_layer_norm, 3, {2, 1, 1}, {{2, 4}, {4}, {4}}, ANY, false},
    {"rms_norm", f_rms_norm, 2, {2, 1}, {{2, 4}, {4}}, ANY, false},
    {"relu", f_relu, 1, {1}, {{5}}, ANY, false},
    {"gelu exact", f_gelu, 1, {1}, {{5}}, ANY, false},
    {"silu", f_silu, 1, {1}, {{5}}, ANY, false},
    {"clip", f_clip, 3, {2, 1, 2}, {{2, 3}, {3}, {2, 1}}, DISTINCT, false},
    {"softmax_cross_entropy", f_xent, 1, {2}, {{3, 4}}, ANY, false},
    {"take wrap", f_take_wrap, 1, {3}, {{2, 1, 3}}, ANY, false},
    {"zero-size", f_exp, 1, {2}, {{0, 3}}, ANY, false},
    {"MLP with cross-entropy", f_mlp, 4, {2, 2, 1, 2}, {{4, 5}, {5, 6}, {6}, {6, 3}}, ANY, false},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* ------------------------------------------------------------- machinery ---- */

static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* Inputs of a kind: ordinary, positive, all distinct (no ties for max/min), inside
 * (-0.9, 0.9) (asin, atanh, erf_inv) or above 1.3 (acosh). */
static void draw(double *x, int64_t n, int kind, uint64_t *seed) {
    for (int64_t i = 0; i < n; i++) {
        double u = test_rng_unit(seed), mag = 0.2 + 1.6 * test_rng_unit(seed);
        switch (kind) {
        case POS: x[i] = 0.3 + 2.5 * u; break;
        case UNIT: x[i] = (u < 0.5 ? -1 : 1) * (0.05 + 0.85 * test_rng_unit(seed)); break;
        case ABOVE1: x[i] = 1.3 + 2.5 * u; break;
        case DISTINCT: x[i] = -2 + 4.0 * ((double)i + 0.2 + 0.6 * u) / (double)n; break;
        default: x[i] = (u < 0.5 ? -1 : 1) * mag; break;
        }
    }
    if (kind == DISTINCT)
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = test_rng_int(seed, (int)i + 1);
            double t = x[i];
            x[i] = x[j], x[j] = t;
        }
}

static kiln_array *array_of(kiln_context *ctx, kiln_dtype t, int rank, const int64_t *dims,
                            const double *v) {
    int64_t n = numel(rank, dims);
    kiln_array *a = NULL;
    if (t == KILN_DTYPE_F64) {
        kiln_array_create(ctx, t, rank, dims, v, &a);
    } else if (t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16) {
        uint16_t *h = malloc((size_t)(n ? n : 1) * sizeof *h);
        for (int64_t i = 0; i < n; i++)
            h[i] = t == KILN_DTYPE_BF16 ? kn_f64_to_bf16(v[i]) : kn_f64_to_f16(v[i]);
        kiln_array_create(ctx, t, rank, dims, h, &a);
        free(h);
    } else {
        float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
        for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
        kiln_array_create(ctx, t, rank, dims, f, &a);
        free(f);
    }
    return a;
}

/* Element i of a float array, as a double. */
static double elem(const kiln_array *a, int64_t i) {
    size_t n = kiln_array_nbytes(a);
    unsigned char *h = malloc(n ? n : 8);
    kiln_array_copy_to_host(a, h, n);
    double v = cmp_elem(h, kiln_array_dtype(a), i);
    free(h);
    return v;
}

/* A case's graph in dtype t. Parameters: x_0..x_{n-1}, their tangents v_0..v_{n-1}, and
 * u of y's type. Outputs: y, its tangent (kiln_jvp), and with_vjp: the cotangents of the
 * x_i for u (kiln_vjp). y's type in *yrank, ydims. */
static kiln_graph *build(kiln_context *ctx, const jvp_case *c, kiln_dtype t, bool with_vjp,
                         int *yrank, int64_t *ydims) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, c->name, &g);
    kiln_value x[MAX_IN], v[MAX_IN], outs[2 + MAX_IN];
    for (int i = 0; i < c->n_in; i++) x[i] = kiln_parameter(g, "x", t, c->rank[i], c->dims[i]);
    for (int i = 0; i < c->n_in; i++) v[i] = kiln_parameter(g, "v", t, c->rank[i], c->dims[i]);
    kiln_value y = c->f(g, x);
    kiln_dtype yt = t;
    if (!kiln_value_type(g, y, &yt, yrank, ydims)) *yrank = 0;
    kiln_value u = kiln_parameter(g, "u", t, *yrank, ydims);
    outs[0] = y;
    kiln_status s = kiln_jvp(g, 1, &y, c->n_in, x, v, &outs[1]);
    CHECK_MSG(s == KILN_STATUS_OK, "%s: kiln_jvp: %s", c->name, kiln_last_error(ctx));
    if (with_vjp && !s) s = kiln_vjp(g, 1, &y, &u, c->n_in, x, &outs[2]);
    int n_out = 2 + (with_vjp ? c->n_in : 0);
    if (!s) s = kiln_graph_finish(g, n_out, outs);
    CHECK_MSG(s == KILN_STATUS_OK, "%s: %s", c->name, kiln_last_error(ctx));
    if (s) kiln_graph_destroy(g), g = NULL;
    return g;
}

/* The host values of a case's arguments: x (of the case's kind), v and u (ordinary). */
typedef struct case_io {
    int n_args;
    double *host[3 * MAX_IN];
    int64_t size[3 * MAX_IN];
    int rank[3 * MAX_IN];
    const int64_t *dims[3 * MAX_IN];
} case_io;

static void io_make(const jvp_case *c, int yrank, const int64_t *ydims, uint64_t seed,
                    case_io *io) {
    memset(io, 0, sizeof *io);
    io->n_args = 2 * c->n_in + 1;
    for (int i = 0; i < io->n_args; i++) {
        bool is_u = i == 2 * c->n_in;
        io->rank[i] = is_u ? yrank : c->rank[i % c->n_in];
        io->dims[i] = is_u ? ydims : c->dims[i % c->n_in];
        io->size[i] = numel(io->rank[i], io->dims[i]);
        io->host[i] = malloc((size_t)(io->size[i] + 1) * sizeof(double));
        draw(io->host[i], io->size[i], i < c->n_in ? c->kind : ANY, &seed);
    }
}

static void io_free(case_io *io) {
    for (int i = 0; i < io->n_args; i++) free(io->host[i]);
}

/* Interprets g on the host values with every x moved by s * v; outs[] receive the results. */
static kiln_status run_at(kiln_context *ctx, kiln_graph *g, const jvp_case *c, const case_io *io,
                          double s, kiln_array **outs) {
    kiln_array *args[3 * MAX_IN] = {0};
    for (int i = 0; i < io->n_args; i++) {
        double *h = io->host[i], *moved = NULL;
        if (i < c->n_in && s != 0) {
            moved = malloc((size_t)(io->size[i] + 1) * sizeof *moved);
            for (int64_t e = 0; e < io->size[i]; e++)
                moved[e] = h[e] + s * io->host[c->n_in + i][e];
            h = moved;
        }
        args[i] = array_of(ctx, KILN_DTYPE_F64, io->rank[i], io->dims[i], h);
        free(moved);
    }
    kiln_status st = kiln_interpret(g, io->n_args, args, kiln_graph_num_outputs(g), outs);
    for (int i = 0; i < io->n_args; i++) kiln_array_destroy(args[i]);
    return st;
}

static void destroy_all(kiln_array **a, int n) {
    for (int i = 0; i < n; i++) kiln_array_destroy(a[i]), a[i] = NULL;
}

/* ---------------------------------------------------------------- tests ---- */

/* Every case in f64: J v against central differences along v, and <u, J v> against
 * sum_i <J_i^T u, v_i> from kiln_vjp. */
static void check_case(kiln_context *ctx, const jvp_case *c, uint64_t seed) {
    int64_t ydims[KILN_MAX_RANK];
    int yrank = 0;
    kiln_graph *g = build(ctx, c, KILN_DTYPE_F64, true, &yrank, ydims);
    if (!g) return;
    case_io io;
    io_make(c, yrank, ydims, seed, &io);
    int n_out = kiln_graph_num_outputs(g);
    kiln_array *at[2 + MAX_IN] = {0}, *up[2 + MAX_IN] = {0}, *down[2 + MAX_IN] = {0};
    double h = c->loose ? 1e-3 : 1e-6, tol = c->loose ? 1e-4 : 1e-6;
    CHECK_OK(ctx, run_at(ctx, g, c, &io, 0, at));
    CHECK_OK(ctx, run_at(ctx, g, c, &io, h, up));
    CHECK_OK(ctx, run_at(ctx, g, c, &io, -h, down));
    int64_t ny = numel(yrank, ydims);
    double ujv = 0, jtuv = 0, mag = 0;
    for (int64_t e = 0; e < ny && at[1] && up[0] && down[0]; e++) {
        CHECK(kiln_array_dtype(at[1]) == KILN_DTYPE_F64);
        double a = elem(up[0], e), b = elem(down[0], e);
        double fd = (a - b) / (2 * h), got = elem(at[1], e);
        CHECK_MSG(fabs(got - fd) <= tol * (fabs(fd) + 1 + fabs(a) + fabs(b)),
                  "%s: (J v)[%lld] = %.12g, finite differences %.12g", c->name, (long long)e, got,
                  fd);
        double u = io.host[2 * c->n_in][e];
        ujv += u * got, mag += fabs(u * got);
    }
    for (int i = 0; i < c->n_in && at[2 + i]; i++)
        for (int64_t e = 0; e < io.size[i]; e++) {
            double p = elem(at[2 + i], e) * io.host[c->n_in + i][e];
            jtuv += p, mag += fabs(p);
        }
    CHECK_MSG(fabs(ujv - jtuv) <= (c->loose ? 1e-6 : 1e-12) * (1 + mag),
              "%s: <u, J v> = %.17g, <J^T u, v> = %.17g", c->name, ujv, jtuv);
    destroy_all(at, n_out), destroy_all(up, n_out), destroy_all(down, n_out);
    io_free(&io);
    kiln_graph_destroy(g);
}

static void test_against_fd_and_vjp(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(0x1f0d);
    for (int i = 0; i < N_CASES; i++) check_case(ctx, &cases[i], seed + (uint64_t)i * 131);
    kiln_context_destroy(ctx);
}

/* Every case's tangent traced in bf16 and f16 (tangents in the primal's dtype) against its
 * f64 tangent from the same (rounded) inputs, within a few of the dtype's rounding steps of
 * the largest element. */
static void half_case(kiln_context *ctx, const jvp_case *c, kiln_dtype t, uint64_t seed) {
    int64_t ydims[KILN_MAX_RANK];
    int yrank = 0;
    kiln_graph *g64 = build(ctx, c, KILN_DTYPE_F64, false, &yrank, ydims);
    kiln_graph *g16 = build(ctx, c, t, false, &yrank, ydims);
    if (!g64 || !g16) {
        if (g64) kiln_graph_destroy(g64);
        if (g16) kiln_graph_destroy(g16);
        return;
    }
    case_io io;
    io_make(c, yrank, ydims, seed, &io);
    kiln_array *a64[2 * MAX_IN + 1] = {0}, *a16[2 * MAX_IN + 1] = {0};
    kiln_array *o64[2] = {0}, *o16[2] = {0};
    for (int i = 0; i < io.n_args; i++) {
        for (int64_t e = 0; e < io.size[i]; e++) /* both see the dtype's values */
            io.host[i][e] = t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(kn_f64_to_bf16(io.host[i][e]))
                                                 : kn_f16_to_f32(kn_f64_to_f16(io.host[i][e]));
        a64[i] = array_of(ctx, KILN_DTYPE_F64, io.rank[i], io.dims[i], io.host[i]);
        a16[i] = array_of(ctx, t, io.rank[i], io.dims[i], io.host[i]);
    }
    CHECK_OK(ctx, kiln_interpret(g64, io.n_args, a64, 2, o64));
    CHECK_OK(ctx, kiln_interpret(g16, io.n_args, a16, 2, o16));
    if (o64[1] && o16[1]) {
        CHECK_MSG(kiln_array_dtype(o16[1]) == t, "%s: the tangent is %s, not %s", c->name,
                  kiln_dtype_name(kiln_array_dtype(o16[1])), kiln_dtype_name(t));
        double big = 0, err = 0, tol = t == KILN_DTYPE_BF16 ? 16 * 0x1p-8 : 16 * 0x1p-11;
        for (int64_t e = 0; e < numel(yrank, ydims); e++) {
            double want = elem(o64[1], e), got = elem(o16[1], e);
            if (fabs(want) > big) big = fabs(want);
            if (!(fabs(got - want) <= err)) err = fabs(got - want);
        }
        CHECK_MSG(err <= tol * (1 + big), "%s in %s: tangent off by %.6g (largest %.6g)", c->name,
                  kiln_dtype_name(t), err, big);
    }
    destroy_all(o64, 2), destroy_all(o16, 2);
    destroy_all(a64, io.n_args), destroy_all(a16, io.n_args);
    io_free(&io);
    kiln_graph_destroy(g64);
    kiln_graph_destroy(g16);
}

static void test_half(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(0x16f);
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < N_CASES; i++)
            if (cases[i].f != f_random) /* whose draws differ by dtype, by design */
                half_case(ctx, &cases[i], d ? KILN_DTYPE_F16 : KILN_DTYPE_BF16,
                          seed + (uint64_t)i * 131);
    kiln_context_destroy(ctx);
}

/* Every case's y and tangent in one graph per dtype, compiled for the CPU and compared with
 * the interpreter. */
static void test_compiled(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(0xc0f);
    static const kiln_dtype types[2] = {KILN_DTYPE_F32, KILN_DTYPE_F64};
    for (int ti = 0; ti < 2; ti++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "all_jvps", &g);
        kiln_value outs[2 * N_CASES];
        kiln_array *args[2 * MAX_IN * N_CASES];
        int n_out = 0, n_args = 0;
        for (int i = 0; i < N_CASES; i++) {
            const jvp_case *c = &cases[i];
            kiln_value x[MAX_IN], v[MAX_IN];
            for (int k = 0; k < 2 * c->n_in; k++) {
                int a = k % c->n_in;
                (k < c->n_in ? x : v)[a] =
                    kiln_parameter(g, "x", types[ti], c->rank[a], c->dims[a]);
                double *h = malloc((size_t)(numel(c->rank[a], c->dims[a]) + 1) * sizeof *h);
                draw(h, numel(c->rank[a], c->dims[a]), k < c->n_in ? c->kind : ANY, &seed);
                args[n_args++] = array_of(ctx, types[ti], c->rank[a], c->dims[a], h);
                free(h);
            }
            outs[n_out] = c->f(g, x);
            CHECK_OK(ctx, kiln_jvp(g, 1, &outs[n_out], c->n_in, x, v, &outs[n_out + 1]));
            n_out += 2;
        }
        CHECK_OK(ctx, kiln_graph_finish(g, n_out, outs));
        CHECK_MSG(cmp_graph(ctx, g, n_args, args, NULL, 2e-4, NULL), "compiled %s tangents",
                  kiln_dtype_name(types[ti]));
        for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(ctx);
}

/* Forward over reverse: H v = kiln_jvp of kiln_grad, for the MLP and for the layer norm,
 * against central differences of the gradient along v; then <u, H v> = <H u, v>
 * (two jvps of one gradient: the Hessian is symmetric). */
static void hvp_case(kiln_context *ctx, const jvp_case *c, uint64_t seed) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "hvp", &g);
    kiln_value x[MAX_IN], v[MAX_IN], u[MAX_IN], gr[MAX_IN], outs[3 * MAX_IN];
    for (int i = 0; i < c->n_in; i++)
        x[i] = kiln_parameter(g, "x", KILN_DTYPE_F64, c->rank[i], c->dims[i]);
    for (int i = 0; i < c->n_in; i++)
        v[i] = kiln_parameter(g, "v", KILN_DTYPE_F64, c->rank[i], c->dims[i]);
    for (int i = 0; i < c->n_in; i++)
        u[i] = kiln_parameter(g, "u", KILN_DTYPE_F64, c->rank[i], c->dims[i]);
    kiln_value loss = c->f(g, x);
    int r;
    int64_t d[KILN_MAX_RANK];
    kiln_dtype t;
    kiln_value_type(g, loss, &t, &r, d);
    if (r) loss = kiln_reduce_sum(g, kiln_mul(g, loss, loss), 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, loss, c->n_in, x, gr));
    int n = c->n_in;
    memcpy(outs, gr, (size_t)n * sizeof *gr);
    CHECK_OK(ctx, kiln_jvp(g, n, gr, n, x, v, outs + n));
    CHECK_OK(ctx, kiln_jvp(g, n, gr, n, x, u, outs + 2 * n));
    CHECK_OK(ctx, kiln_graph_finish(g, 3 * n, outs));
    /* the arguments: x, v, u; run_at moves x by s * v */
    case_io io;
    memset(&io, 0, sizeof io);
    io.n_args = 3 * n;
    for (int i = 0; i < io.n_args; i++) {
        io.rank[i] = c->rank[i % n], io.dims[i] = c->dims[i % n];
        io.size[i] = numel(io.rank[i], io.dims[i]);
        io.host[i] = malloc((size_t)(io.size[i] + 1) * sizeof(double));
        draw(io.host[i], io.size[i], i < n ? c->kind : ANY, &seed);
    }
    kiln_array *at[3 * MAX_IN] = {0}, *up[3 * MAX_IN] = {0}, *down[3 * MAX_IN] = {0};
    double h = 1e-5;
    CHECK_OK(ctx, run_at(ctx, g, c, &io, 0, at));
    CHECK_OK(ctx, run_at(ctx, g, c, &io, h, up));
    CHECK_OK(ctx, run_at(ctx, g, c, &io, -h, down));
    double uhv = 0, huv = 0, mag = 0;
    for (int i = 0; i < n && at[0] && up[0] && down[0]; i++)
        for (int64_t e = 0; e < io.size[i]; e++) {
            double a = elem(up[i], e), b = elem(down[i], e), fd = (a - b) / (2 * h);
            double hv = elem(at[n + i], e), hu = elem(at[2 * n + i], e);
            CHECK_MSG(fabs(hv - fd) <= 1e-5 * (fabs(fd) + 1 + fabs(a)),
                      "%s: (H v)[%d][%lld] = %.12g, differences of the gradient %.12g", c->name, i,
                      (long long)e, hv, fd);
            uhv += io.host[2 * n + i][e] * hv, huv += hu * io.host[n + i][e];
            mag += fabs(io.host[2 * n + i][e] * hv);
        }
    CHECK_MSG(fabs(uhv - huv) <= 1e-11 * (1 + mag), "%s: <u, H v> = %.17g, <H u, v> = %.17g",
              c->name, uhv, huv);
    destroy_all(at, 3 * n), destroy_all(up, 3 * n), destroy_all(down, 3 * n);
    for (int i = 0; i < io.n_args; i++) free(io.host[i]);
    kiln_graph_destroy(g);
}

static const jvp_case *find(const char *name) {
    for (int i = 0; i < N_CASES; i++)
        if (!strcmp(cases[i].name, name)) return &cases[i];
    return NULL;
}

static void test_hessian_vector(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(0x4e55);
    static const char *names[] = {"MLP with cross-entropy", "layer_norm", "softmax",
                                  "attention causal, 4 heads over 2", "pow"};
    for (int i = 0; i < 5; i++) hvp_case(ctx, find(names[i]), seed + (uint64_t)i);
    kiln_context_destroy(ctx);
}

/* Zero tangents are symbolic: a tangent of KILN_VALUE_NONE, a value behind stop_gradient,
 * an integer path or a parameter that is not a primal builds no node; a float output with a
 * zero tangent gets zeros (a scalar and its broadcast), an integer output the invalid value. */
static void test_symbolic_zeros(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "zeros", &g);
    int64_t d[2] = {2, 3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value z = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, d);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 2, d);
    kiln_value a = kiln_exp(g, kiln_mul(g, kiln_stop_gradient(g, x), z)); /* no path from x */
    kiln_value k = kiln_argmax(g, kiln_mul(g, x, x), 1);                  /* integer */
    kiln_value outs[2] = {a, k}, t[2];
    uint32_t before = g->n_nodes;
    CHECK_OK(ctx, kiln_jvp(g, 2, outs, 1, &x, &v, t));
    CHECK_MSG(g->n_nodes - before <= 2, "%u nodes for a zero tangent", g->n_nodes - before);
    CHECK(t[0].id && t[1].id == 0);
    /* x a primal with no tangent: the same */
    kiln_value b = kiln_sin(g, kiln_mul(g, x, z)), tb;
    before = g->n_nodes;
    CHECK_OK(ctx, kiln_jvp(g, 1, &b, 1, &x, &KILN_VALUE_NONE, &tb));
    CHECK(g->n_nodes - before <= 2 && tb.id);
    /* two primals, one with a tangent: mul's rule builds one product, not two */
    kiln_value c = kiln_mul(g, x, z), tc, p[2] = {x, z}, tv[2] = {v, KILN_VALUE_NONE};
    before = g->n_nodes;
    CHECK_OK(ctx, kiln_jvp(g, 1, &c, 2, p, tv, &tc));
    CHECK_MSG(g->n_nodes - before == 1, "%u nodes for mul's tangent", g->n_nodes - before);
    /* an integer primal: no tangent, and its tangent may be an integer of its type */
    kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 2, d);
    kiln_value e = kiln_mul(g, x, kiln_convert(g, i, KILN_DTYPE_F32)), te, ti = i;
    kiln_value pi[2] = {x, i}, tvi[2] = {v, ti};
    CHECK_OK(ctx, kiln_jvp(g, 1, &e, 2, pi, tvi, &te));
    CHECK_OK(ctx, kiln_graph_finish(g, 4, (kiln_value[]){t[0], tb, tc, te}));
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* kiln_relu's JVP is jax.nn.relu's: 0 at 0; a hand-written max(x, 0) splits the tie. */
static void test_conventions(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "conventions", &g);
    int64_t d = 3;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, &d);
    kiln_value y[4] = {kiln_relu(g, x), kiln_max(g, x, kiln_scalar(g, KILN_DTYPE_F64, 0)),
                       kiln_abs(g, x), kiln_reduce_max(g, kiln_abs(g, x), 0, NULL, false)},
               t[4], one = kiln_full(g, KILN_DTYPE_F64, 1, &d, 1);
    CHECK_OK(ctx, kiln_jvp(g, 4, y, 1, &x, &one, t));
    CHECK_OK(ctx, kiln_graph_finish(g, 4, t));
    double xs[3] = {0, -1, 1}; /* |x| ties at -1 and 1 */
    kiln_array *a = array_of(ctx, KILN_DTYPE_F64, 1, &d, xs), *o[4] = {0};
    CHECK_OK(ctx, kiln_interpret(g, 1, &a, 4, o));
    if (o[3]) {
        CHECK(elem(o[0], 0) == 0 && elem(o[0], 1) == 0 && elem(o[0], 2) == 1); /* relu */
        CHECK(elem(o[1], 0) == 0.5 && elem(o[1], 2) == 1);                     /* max tie */
        CHECK(elem(o[2], 0) == 1 && elem(o[2], 1) == -1);                      /* abs'(0) = 1 */
        CHECK(elem(o[3], 0) == 0); /* the mean of the tied tangents -1 and 1 */
    }
    destroy_all(o, 4);
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

static void test_errors(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL, *h = NULL;
    int64_t d[2] = {2, 3}, d2[2] = {3, 2};
    kiln_value t;
    /* a tangent of another dtype: the message names both types, the call and its line */
    kiln_graph_create(ctx, "errors", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d);
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 2, d);
    kiln_value y = kiln_exp(g, x);
    int line = __LINE__ + 1;
    CHECK_STATUS(kiln_jvp(g, 1, &y, 1, &x, &v, &t), KILN_STATUS_DTYPE);
    const char *m = kiln_graph_error(g);
    char at[64];
    snprintf(at, sizeof at, "test_jvp.c:%d", line);
    CHECK_CONTAINS(m, "kiln_jvp");
    CHECK_CONTAINS(m, "f32[2,3]");
    CHECK_CONTAINS(m, "f64[2,3]");
    CHECK_CONTAINS(m, at);
    CHECK(t.id == 0);
    kiln_graph_destroy(g);
    /* of another shape */
    kiln_graph_create(ctx, "errors", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    v = kiln_parameter(g, "v", KILN_DTYPE_F32, 2, d2);
    y = kiln_exp(g, x);
    CHECK_STATUS(kiln_jvp(g, 1, &y, 1, &x, &v, &t), KILN_STATUS_SHAPE);
    CHECK_CONTAINS(kiln_graph_error(g), "f32[3,2]");
    kiln_graph_destroy(g);
    /* a value of another graph */
    kiln_graph_create(ctx, "errors", &g);
    kiln_graph_create(ctx, "other", &h);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    v = kiln_parameter(h, "v", KILN_DTYPE_F32, 2, d);
    y = kiln_exp(g, x);
    CHECK_STATUS(kiln_jvp(g, 1, &y, 1, &x, &v, &t), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_graph_error(g), "tangents_in[0] is not a value of graph 'errors'");
    kiln_graph_destroy(g);
    /* no outputs, no primals, NULL arrays */
    kiln_graph_create(ctx, "errors", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    CHECK_STATUS(kiln_jvp(g, 0, &x, 1, &x, &x, &t), KILN_STATUS_INVALID_ARGUMENT);
    kiln_graph_destroy(g);
    kiln_graph_create(ctx, "errors", &g);
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    CHECK_STATUS(kiln_jvp(g, 1, &x, 1, &x, NULL, &t), KILN_STATUS_INVALID_ARGUMENT);
    kiln_graph_destroy(g);
    kiln_graph_destroy(h);
    CHECK_STATUS(kiln_jvp(NULL, 1, &x, 1, &x, &x, &t), KILN_STATUS_INVALID_ARGUMENT);
    kiln_context_destroy(ctx);
}

int main(void) {
    RUN(test_against_fd_and_vjp);
    RUN(test_half);
    RUN(test_hessian_vector);
    RUN(test_symbolic_zeros);
    RUN(test_conventions);
    RUN(test_errors);
    RUN(test_compiled);
    return test_summary("test_jvp");
}
