/* test_autodiff.c — kiln_grad and kiln_vjp (src/autodiff): every differentiable op's
 * gradient against central finite differences in f64 (reference interpreter), compiled
 * gradients against the interpreter's (f32, f64, bf16 and f16), every case's bf16 and f16
 * gradient against its f64 one (the rules keep a cotangent in its primal's dtype and
 * lose no more than the dtype's rounding), random programs, second derivatives
 * against closed forms, the conventions at non-smooth points, the builder errors, and
 * fault injection over build + grad + compile + run.
 *
 * Each case is a function of a few parameters; the test differentiates
 * loss = sum(w * f(x...)) with a random w, so every element of f's result matters. Inputs
 * are drawn away from f's non-smooth points (ties, abs at 0), which are tested apart
 * against exact values. KILN_TEST_PROGRAMS raises the number of random programs. */
#include "compare.h"
#include "gather_grad_cases.h"
#include "fault.h"
#include "randprog.h"
#include "autodiff/autodiff.h"
#include "ir/ir.h"
#include "trace/trace.h"

#include <stdint.h>

#define MAX_IN 4

typedef kiln_value (*case_fn)(kiln_graph *g, const kiln_value *x);

enum { ANY, POS, LARGE, DISTINCT, UNIT, ABOVE1 }; /* how a case's inputs are drawn */

typedef struct grad_case {
    const char *name;
    case_fn f;
    int n_in;
    int rank[MAX_IN];
    int64_t dims[MAX_IN][KILN_MAX_RANK];
    int kind;
} grad_case;

/* ------------------------------------------------------------ the cases ---- */

static kiln_value sort_one(kiln_graph *g, kiln_value x, int axis) {
    kiln_value out;
    kiln_sort(g, 1, &x, axis, 1, false, &out);
    return out;
}

#define U(name, call)                                                                              \
    static kiln_value name(kiln_graph *g, const kiln_value *x) {                                   \
        return call;                                                                               \
    }
U(f_neg, kiln_neg(g, x[0]))
U(f_rev, kiln_rev(g, x[0], 2, (const int[]){-1, 0}))
U(f_abs, kiln_abs(g, x[0]))
/* dynamic slices at constant starts: in range, and past the end / negative (clamped) */
static kiln_value dyn_starts(kiln_graph *g, int a, int b, kiln_value *st) {
    st[0] = kiln_scalar(g, KILN_DTYPE_I32, a);
    st[1] = kiln_scalar(g, KILN_DTYPE_I64, b);
    return st[0];
}
static kiln_value f_dslice(kiln_graph *g, const kiln_value *x) {
    kiln_value st[2];
    dyn_starts(g, 1, 3, st); /* column start 3 clamps to 2 */
    return kiln_dynamic_slice(g, kiln_tanh(g, x[0]), 2, st, (const int64_t[]){2, 3});
}
static kiln_value f_dslice_neg(kiln_graph *g, const kiln_value *x) {
    kiln_value st[2];
    dyn_starts(g, -2, 1, st);
    return kiln_dynamic_slice(g, x[0], 2, st, (const int64_t[]){3, 2});
}
static kiln_value f_dupdate(kiln_graph *g, const kiln_value *x) {
    kiln_value st[2];
    dyn_starts(g, 1, 1, st);
    return kiln_mul(g, kiln_dynamic_update_slice(g, x[0], x[1], 2, st), x[0]);
}
static kiln_value f_dupdate_clamp(kiln_graph *g, const kiln_value *x) {
    kiln_value st[2];
    dyn_starts(g, 3, -1, st); /* clamps to (2, 0) */
    return kiln_dynamic_update_slice(g, x[0], kiln_sin(g, x[1]), 2, st);
}
/* convolutions and windows (src/trace/conv.c): every layout, padding kind, dilation and
 * groups reach the gradient through the composite's pieces */
static kiln_value f_conv_nchw(kiln_graph *g, const kiln_value *x) {
    kiln_conv_options o = {
        .window_strides = {2, 1}, .padding = KILN_PADDING_SAME, .rhs_dilation = {1, 2}};
    return kiln_conv_general_dilated(g, x[0], x[1], &o);
}
static kiln_value f_conv_nhwc(kiln_graph *g, const kiln_value *x) {
    kiln_conv_options o = {.layout = KILN_CONV_NHWC,
                           .pad_lo = {1, -1},
                           .pad_hi = {0, 2},
                           .lhs_dilation = {2, 1},
                           .feature_group_count = 2};
    return kiln_conv_general_dilated(g, x[0], x[1], &o);
}
static kiln_value f_conv_1d(kiln_graph *g, const kiln_value *x) {
    kiln_conv_options o = {.window_strides = {2}, .padding = KILN_PADDING_SAME_LOWER};
    return kiln_conv_general_dilated(g, x[0], x[1], &o);
}
static kiln_value f_conv_3d(kiln_graph *g, const kiln_value *x) {
    kiln_conv_options o = {.padding = KILN_PADDING_SAME, .feature_group_count = 2};
    return kiln_conv_general_dilated(g, x[0], x[1], &o);
}
static kiln_value f_maxpool(kiln_graph *g, const kiln_value *x) {
    kiln_window_options o = {.window_dimensions = {1, 3, 2, 1},
                             .window_strides = {1, 2, 1, 1},
                             .padding = KILN_PADDING_SAME};
    return kiln_reduce_window(g, x[0], KILN_WINDOW_MAX, &o);
}
static kiln_value f_sumwin(kiln_graph *g, const kiln_value *x) {
    kiln_window_options o = {.window_dimensions = {2, 3},
                             .window_strides = {1, 2},
                             .pad_lo = {1, 0},
                             .pad_hi = {0, 2},
                             .base_dilation = {2, 1},
                             .window_dilation = {1, 2}};
    return kiln_reduce_window(g, x[0], KILN_WINDOW_SUM, &o);
}
static kiln_value f_minwin(kiln_graph *g, const kiln_value *x) {
    kiln_window_options o = {.window_dimensions = {2, 3}, .window_strides = {1, 2}};
    return kiln_reduce_window(g, x[0], KILN_WINDOW_MIN, &o);
}
static kiln_value f_avgpool(kiln_graph *g, const kiln_value *x) {
    kiln_window_options o = {.window_dimensions = {1, 2, 3}, .padding = KILN_PADDING_SAME};
    return kiln_avg_pool(g, x[0], &o, false);
}
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
U(f_bcast0, kiln_broadcast_to(g, x[0], 2, (const int64_t[]){2, 2}))
U(f_reshape, kiln_reshape(g, kiln_exp(g, x[0]), 2, (const int64_t[]){3, 4}))
U(f_transpose, kiln_transpose(g, x[0], (const int[]){2, 0, 1}))
U(f_slice,
  kiln_slice(g, x[0], (const int64_t[]){1, 0}, (const int64_t[]){5, 3}, (const int64_t[]){2, 2}))
U(f_pad, kiln_pad(g, x[0], x[1], (const int64_t[]){1, -1}, (const int64_t[]){2, 1},
                  (const int64_t[]){1, 2}))
U(f_pad_pos, kiln_pad(g, x[0], x[1], (const int64_t[]){0, 2}, (const int64_t[]){1, 0},
                      (const int64_t[]){2, 0}))
U(f_pad_past, kiln_pad(g, x[0], x[1], (const int64_t[]){-4, 1}, (const int64_t[]){5, -1}, NULL))
U(f_pad_past_interior, kiln_pad(g, kiln_exp(g, x[0]), x[1], (const int64_t[]){-6, -1},
                                (const int64_t[]){8, 2}, (const int64_t[]){1, 0}))
U(f_concat, kiln_concatenate(g, 3, (kiln_value[]){x[0], kiln_tanh(g, x[1]), x[0]}, 1))
U(f_convert, kiln_convert(g, kiln_mul(g, x[0], x[0]), KILN_DTYPE_F64))
U(f_matmul, kiln_matmul(g, x[0], x[1]))
U(f_bmatmul, kiln_matmul(g, x[0], x[1]))
U(f_take, kiln_take_rows(g, x[0],
                         kiln_constant(g, KILN_DTYPE_I32, 2, (const int64_t[]){2, 3},
                                       (const int32_t[]){0, 2, 2, -1, 7, 1})))
U(f_scatter, kiln_scatter_add_rows(g, x[0],
                                   kiln_constant(g, KILN_DTYPE_I64, 1, (const int64_t[]){4},
                                                 (const int64_t[]){1, 1, -3, 2}),
                                   kiln_mul(g, x[1], x[1])))
U(f_softmax, kiln_softmax(g, x[0], -1))
U(f_log_softmax, kiln_log_softmax(g, x[0], 0))
U(f_logsumexp, kiln_logsumexp(g, x[0], 1, (const int[]){1}, false))
U(f_layer_norm, kiln_layer_norm(g, x[0], x[1], x[2], 1e-5))
U(f_layer_norm0, kiln_layer_norm_axis(g, x[0], x[1], x[2], 0, 1e-3))
U(f_layer_norm_mid, kiln_layer_norm_axis(g, x[0], x[1], KILN_VALUE_NONE, -2, 1e-5))
U(f_square, kiln_square(g, x[0]))
/* each part of a split through its own function, then put back together */
static kiln_value split_mix(kiln_graph *g, kiln_value x) {
    kiln_value p[3];
    kiln_split(g, x, 3, (const int64_t[]){1, 4}, 1, p);
    return kiln_concatenate(g, 3, (kiln_value[]){kiln_tanh(g, p[2]), kiln_exp(g, p[0]), p[1]}, 1);
}
U(f_split, split_mix(g, x[0]))
U(f_gelu, kiln_gelu(g, x[0], true))
U(f_gelu_exact, kiln_gelu(g, x[0], false))
U(f_silu, kiln_silu(g, x[0]))
U(f_rms_norm, kiln_rms_norm(g, x[0], x[1], -1, 1e-5))
U(f_rms_norm0, kiln_rms_norm(g, x[0], x[1], 0, 1e-3))
U(f_rms_norm_bare, kiln_rms_norm(g, x[0], (kiln_value){0, 0}, 1, 0))
/* cond [3] (f64, true where nonzero: floor(x1) is 0 for x1 in [0, 1)), x [2, 1], y [3]: all
 * three broadcast to [2, 3] */
U(f_where, kiln_where(g, kiln_floor(g, x[1]), x[0], kiln_exp(g, x[1])))
/* lo [3], hi [2, 1], all drawn in [-2, 2]: elements clipped below, above, not at all, and
 * some with lo > hi (hi then) */
U(f_clip, kiln_clip(g, x[0], x[1], x[2]))
U(f_relu, kiln_relu(g, x[0]))
U(f_max_zero, kiln_max(g, x[0], kiln_scalar(g, KILN_DTYPE_F64, 0)))
U(f_mean, kiln_mean(g, x[0], 1, (const int[]){-1}, true))
U(f_xent, kiln_softmax_cross_entropy(g, x[0],
                                     kiln_constant(g, KILN_DTYPE_I32, 1, (const int64_t[]){3},
                                                   (const int32_t[]){2, 0, 3})))
U(f_stop, kiln_mul(g, x[0], kiln_stop_gradient(g, kiln_exp(g, x[0]))))
U(f_floor, kiln_add(g, kiln_floor(g, x[0]), kiln_mul(g, kiln_sign(g, x[0]), x[0])))
/* indexing and shape ops (src/trace/index_ops.c); a fill-mode NaN is replaced by 0 so the
 * loss stays finite (the select passes no gradient to it either way) */
static kiln_value no_nan(kiln_graph *g, kiln_value y) {
    kiln_dtype t;
    int r;
    int64_t d[KILN_MAX_RANK];
    kiln_value_type(g, y, &t, &r, d);
    return kiln_select(g, kiln_compare(g, y, y, KILN_CMP_EQ), y, kiln_scalar(g, t, 0));
}
static kiln_value idx_i32(kiln_graph *g, int rank, const int64_t *dims, const int32_t *v) {
    return kiln_constant(g, KILN_DTYPE_I32, rank, dims, v);
}
static kiln_value like(kiln_graph *g, kiln_value v, kiln_value as) {
    kiln_dtype t;
    int r;
    int64_t d[KILN_MAX_RANK];
    kiln_value_type(g, as, &t, &r, d);
    return kiln_convert(g, v, t);
}
U(f_take_fill,
  no_nan(g, kiln_take(g, kiln_tanh(g, x[0]),
                      idx_i32(g, 2, (const int64_t[]){2, 2}, (const int32_t[]){0, -1, 5, 0}), 1,
                      KILN_GATHER_FILL)))
U(f_take_clip,
  kiln_take(g, x[0], idx_i32(g, 1, (const int64_t[]){4}, (const int32_t[]){-3, 1, 9, 1}), 0,
            KILN_GATHER_CLIP))
U(f_take_wrap, kiln_take(g, x[0], idx_i32(g, 1, (const int64_t[]){3}, (const int32_t[]){-1, 4, 2}),
                         -1, KILN_GATHER_WRAP))
U(f_tal_fill, no_nan(g, kiln_take_along_axis(g, x[0],
                                             idx_i32(g, 2, (const int64_t[]){1, 3},
                                                     (const int32_t[]){2, -4, 0}),
                                             0, KILN_GATHER_FILL)))
U(f_tal_clip,
  kiln_take_along_axis(g, x[0],
                       idx_i32(g, 2, (const int64_t[]){3, 2}, (const int32_t[]){0, 0, 7, -1, 1, 2}),
                       1, KILN_GATHER_CLIP))
U(f_stack, kiln_stack(g, 3, (kiln_value[]){x[0], kiln_exp(g, x[1]), x[0]}, 1))
U(f_cumsum, kiln_cumsum(g, kiln_mul(g, x[0], x[0]), 1, false))
U(f_cumsum_rev, kiln_cumsum(g, x[0], 0, true))
U(f_cumsum_long, kiln_cumsum(g, kiln_tanh(g, x[0]), -1, true))
/* dot_product_attention (src/trace/attention.c): the gradient is the primitive form's,
 * the finite differences the reference's fused definition */
U(f_attn_causal_gqa,
  kiln_dot_product_attention(g, x[0], x[1], x[2], &(kiln_attention_options){.is_causal = true}))
U(f_attn_rank3, kiln_dot_product_attention(g, kiln_tanh(g, x[0]), x[1], x[2],
                                           &(kiln_attention_options){.scale = 0.7}))
U(f_attn_causal_long, kiln_dot_product_attention(g, x[0], x[1], kiln_exp(g, x[1]),
                                                 &(kiln_attention_options){.is_causal = true}))
/* a finite fill (what src/passes/attention.c keeps from a written-out select): the unseen
 * keys weigh in, but their score is a constant, so no gradient reaches q or k through it */
U(f_attn_fill, trace_attention(g, x[0], x[1], x[2], 0.6, true, 0.3))
/* sorting (src/trace/sort.c): the values' gradient is their gather's, to where each came
 * from; positions have none */
static kiln_value sort_pair(kiln_graph *g, const kiln_value *x) {
    kiln_value outs[2];
    kiln_sort(g, 2, x, 1, 1, true, outs);
    return kiln_add(g, outs[0], kiln_mul(g, outs[1], outs[1]));
}
static kiln_value top3(kiln_graph *g, const kiln_value *x) {
    kiln_value v;
    kiln_top_k(g, kiln_tanh(g, x[0]), 3, &v, NULL);
    return v;
}
U(f_sort_axis0, sort_one(g, x[0], 0))
U(f_sort_pair, sort_pair(g, x))
U(f_top_k, top3(g, x))
U(f_argmax,
  kiln_mul(g, x[0],
           like(g, kiln_reshape(g, kiln_argmax(g, x[0], 1), 2, (const int64_t[]){3, 1}), x[0])))
U(f_one_hot,
  kiln_mul(g, x[0],
           like(g,
                kiln_one_hot(g, idx_i32(g, 1, (const int64_t[]){3}, (const int32_t[]){2, -1, 0}), 4,
                             KILN_DTYPE_I32),
                x[0])))
#undef U

/* dot_general layouts: (lhs contract, rhs contract, batch pairs) */
static kiln_value dot_with(kiln_graph *g, const kiln_value *x, int nc, const int *lc, const int *rc,
                           int nb, const int *lb, const int *rb) {
    kiln_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contract = nc, d.n_batch = nb;
    for (int i = 0; i < nc; i++) d.lhs_contract[i] = lc[i], d.rhs_contract[i] = rc[i];
    for (int i = 0; i < nb; i++) d.lhs_batch[i] = lb[i], d.rhs_batch[i] = rb[i];
    return kiln_dot_general(g, x[0], x[1], &d);
}
static kiln_value f_dot_tl(kiln_graph *g, const kiln_value *x) { /* [3,2] . [3,4]: lhs^T */
    return dot_with(g, x, 1, (const int[]){0}, (const int[]){0}, 0, NULL, NULL);
}
static kiln_value f_dot_tr(kiln_graph *g, const kiln_value *x) { /* [2,3] . [4,3]: rhs^T */
    return dot_with(g, x, 1, (const int[]){1}, (const int[]){1}, 0, NULL, NULL);
}
static kiln_value f_dot_batch(kiln_graph *g, const kiln_value *x) { /* [3,2,4] . [4,5,2] */
    return dot_with(g, x, 1, (const int[]){2}, (const int[]){0}, 1, (const int[]){1},
                    (const int[]){2});
}
static kiln_value f_dot_two(kiln_graph *g, const kiln_value *x) { /* two contracting axes */
    return dot_with(g, x, 2, (const int[]){0, 2}, (const int[]){2, 0}, 0, NULL, NULL);
}
static kiln_value f_dot_outer(kiln_graph *g, const kiln_value *x) { /* no contraction */
    return dot_with(g, x, 0, NULL, NULL, 0, NULL, NULL);
}
static kiln_value f_dot_vec(kiln_graph *g, const kiln_value *x) { /* [3] . [3] -> scalar */
    return dot_with(g, x, 1, (const int[]){0}, (const int[]){0}, 0, NULL, NULL);
}

/* Reductions over every axis set of a [2,3,4] value: the case's index picks the set. */
static int reduce_mask;
static kiln_value reduce_axes(int *axes) {
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (reduce_mask >> i & 1) axes[n++] = i - (i == 2 ? 3 : 0); /* a negative one too */
    return (kiln_value){0, (uint32_t)n};
}
#define R(name, fn, keep)                                                                          \
    static kiln_value name(kiln_graph *g, const kiln_value *x) {                                   \
        int axes[3];                                                                               \
        int n = (int)reduce_axes(axes).id;                                                         \
        return fn(g, x[0], n, axes, keep);                                                         \
    }
R(f_rsum, kiln_reduce_sum, false)
R(f_rmax, kiln_reduce_max, true)
R(f_rmin, kiln_reduce_min, false)
R(f_rprod, kiln_reduce_prod, true)
#undef R

#define S(...) __VA_ARGS__
static const grad_case cases[] = {
    {"neg", f_neg, 1, {2}, {{2, 3}}, ANY},
    {"rev", f_rev, 1, {3}, {{2, 3, 4}}, ANY},
    {"abs", f_abs, 1, {1}, {{5}}, ANY},
    {"exp", f_exp, 1, {0}, {{0}}, ANY},
    {"exp large", f_exp, 1, {1}, {{4}}, LARGE},
    {"log", f_log, 1, {2}, {{2, 2}}, POS},
    {"log1p", f_log1p, 1, {1}, {{3}}, POS},
    {"sqrt", f_sqrt, 1, {1}, {{3}}, POS},
    {"rsqrt", f_rsqrt, 1, {1}, {{3}}, POS},
    {"tanh", f_tanh, 1, {2}, {{3, 1}}, ANY},
    {"tanh large", f_tanh, 1, {1}, {{4}}, LARGE},
    {"logistic", f_logistic, 1, {1}, {{4}}, LARGE},
    {"sin", f_sin, 1, {2}, {{2, 3}}, LARGE},
    {"cos", f_cos, 1, {2}, {{3, 2}}, ANY},
    {"erf", f_erf, 1, {1}, {{6}}, ANY},
    {"expm1", f_expm1, 1, {1}, {{5}}, ANY},
    {"tan", f_tan, 1, {1}, {{5}}, UNIT},
    {"sinh", f_sinh, 1, {1}, {{5}}, ANY},
    {"cosh", f_cosh, 1, {1}, {{5}}, ANY},
    {"asin", f_asin, 1, {1}, {{5}}, UNIT},
    {"acos", f_acos, 1, {1}, {{5}}, UNIT},
    {"atan", f_atan, 1, {1}, {{5}}, ANY},
    {"asinh", f_asinh, 1, {1}, {{5}}, ANY},
    {"acosh", f_acosh, 1, {1}, {{5}}, ABOVE1},
    {"atanh", f_atanh, 1, {1}, {{5}}, UNIT},
    {"erfc", f_erfc, 1, {1}, {{5}}, ANY},
    {"erf_inv", f_erf_inv, 1, {1}, {{5}}, UNIT},
    {"lgamma", f_lgamma, 1, {1}, {{5}}, POS},
    {"digamma", f_digamma, 1, {1}, {{5}}, POS},
    {"cbrt", f_cbrt, 1, {1}, {{5}}, ANY},
    {"atan2", f_atan2, 2, {2, 1}, {{2, 3}, {3}}, ANY},
    {"add bcast", f_add, 2, {2, 1}, {{2, 3}, {3}}, ANY},
    {"sub bcast", f_sub, 2, {2, 2}, {{2, 1}, {1, 3}}, ANY},
    {"mul scalar", f_mul, 2, {0, 2}, {{0}, {2, 3}}, ANY},
    {"div", f_div, 2, {2, 1}, {{2, 3}, {3}}, POS},
    {"pow", f_pow, 2, {1, 1}, {{4}, {4}}, POS},
    {"rem", f_rem, 2, {2, 1}, {{2, 3}, {3}}, POS},
    {"max", f_max, 2, {2, 1}, {{3, 2}, {2}}, DISTINCT},
    {"min", f_min, 2, {1, 1}, {{4}, {4}}, DISTINCT},
    {"select", f_select, 2, {1, 1}, {{5}, {5}}, DISTINCT},
    {"broadcast", f_bcast, 1, {1}, {{3}}, ANY},
    {"broadcast size-1", f_bcast1, 1, {2}, {{1, 4}}, ANY},
    {"broadcast rank-0", f_bcast0, 1, {0}, {{0}}, ANY},
    {"reshape", f_reshape, 1, {3}, {{2, 2, 3}}, ANY},
    {"transpose", f_transpose, 1, {3}, {{2, 3, 2}}, ANY},
    {"slice strided", f_slice, 1, {2}, {{6, 3}}, ANY},
    {"pad crop interior", f_pad, 2, {2, 0}, {{3, 2}, {0}}, ANY},
    {"pad", f_pad_pos, 2, {2, 0}, {{2, 3}, {0}}, ANY},
    {"pad cropping past the operand", f_pad_past, 2, {2, 0}, {{3, 2}, {0}}, ANY},
    {"pad cropping past, interior", f_pad_past_interior, 2, {2, 0}, {{3, 2}, {0}}, ANY},
    {"concatenate", f_concat, 2, {2, 2}, {{2, 1}, {2, 3}}, ANY},
    {"convert", f_convert, 1, {1}, {{3}}, ANY},
    {"matmul", f_matmul, 2, {2, 2}, {{2, 3}, {3, 4}}, ANY},
    {"batched matmul", f_bmatmul, 2, {3, 2}, {{2, 2, 3}, {3, 2}}, ANY},
    {"dot lhs transposed", f_dot_tl, 2, {2, 2}, {{3, 2}, {3, 4}}, ANY},
    {"dot rhs transposed", f_dot_tr, 2, {2, 2}, {{2, 3}, {4, 3}}, ANY},
    {"dot batch inside", f_dot_batch, 2, {3, 3}, {{3, 2, 4}, {4, 5, 2}}, ANY},
    {"dot two contracting", f_dot_two, 2, {3, 3}, {{2, 3, 2}, {2, 4, 2}}, ANY},
    {"dot outer", f_dot_outer, 2, {1, 2}, {{3}, {2, 2}}, ANY},
    {"dot vectors", f_dot_vec, 2, {1, 1}, {{3}, {3}}, ANY},
    {"take_rows", f_take, 1, {2}, {{4, 2}}, ANY},
    {"scatter_add_rows", f_scatter, 2, {2, 2}, {{3, 2}, {4, 2}}, ANY},
    {"take fill", f_take_fill, 1, {2}, {{3, 4}}, ANY},
    {"take clip", f_take_clip, 1, {2}, {{3, 2}}, ANY},
    {"take wrap", f_take_wrap, 1, {3}, {{2, 1, 3}}, ANY},
    {"take_along_axis fill", f_tal_fill, 1, {2}, {{3, 3}}, ANY},
    {"take_along_axis clip", f_tal_clip, 1, {2}, {{3, 3}}, ANY},
    {"stack", f_stack, 2, {2, 2}, {{2, 3}, {2, 3}}, ANY},
    {"cumsum", f_cumsum, 1, {2}, {{2, 5}}, ANY},
    {"sort along axis 0", f_sort_axis0, 1, {2}, {{4, 3}}, DISTINCT},
    {"sort two operands descending", f_sort_pair, 2, {2, 2}, {{2, 5}, {2, 5}}, DISTINCT},
    {"top_k of tanh", f_top_k, 1, {2}, {{3, 6}}, DISTINCT},
    {"cumsum reverse", f_cumsum_rev, 1, {2}, {{4, 2}}, ANY},
    {"cumsum of tanh, reversed", f_cumsum_long, 1, {2}, {{2, 40}}, ANY},
    {"attention causal, 4 heads over 2",
     f_attn_causal_gqa,
     3,
     {4, 4, 4},
     {{2, 3, 4, 2}, {2, 3, 2, 2}, {2, 3, 2, 3}},
     ANY},
    {"attention rank 3, T < S, Hv != H",
     f_attn_rank3,
     3,
     {3, 3, 3},
     {{2, 2, 3}, {4, 1, 3}, {4, 1, 2}},
     ANY},
    {"attention causal, T > S, v = exp(k)",
     f_attn_causal_long,
     2,
     {4, 4},
     {{1, 5, 1, 2}, {1, 3, 1, 2}},
     ANY},
    {"attention causal, a finite fill, T < S",
     f_attn_fill,
     3,
     {4, 4, 4},
     {{1, 3, 2, 2}, {1, 5, 1, 2}, {1, 5, 1, 3}},
     ANY},
    {"argmax", f_argmax, 1, {2}, {{3, 4}}, DISTINCT},
    {"one_hot", f_one_hot, 1, {2}, {{3, 4}}, ANY},
    {"softmax", f_softmax, 1, {2}, {{2, 4}}, ANY},
    {"log_softmax", f_log_softmax, 1, {2}, {{3, 2}}, ANY},
    {"logsumexp", f_logsumexp, 1, {2}, {{2, 3}}, LARGE},
    {"layer_norm", f_layer_norm, 3, {2, 1, 1}, {{2, 4}, {4}, {4}}, ANY},
    {"layer_norm axis 0", f_layer_norm0, 3, {3, 1, 1}, {{3, 2, 2}, {3}, {3}}, ANY},
    {"layer_norm axis -2, no bias", f_layer_norm_mid, 2, {3, 1}, {{2, 3, 2}, {3}}, ANY},
    {"square", f_square, 1, {2}, {{2, 3}}, ANY},
    {"split", f_split, 1, {2}, {{2, 6}}, ANY},
    {"gelu", f_gelu, 1, {1}, {{5}}, ANY},
    {"gelu exact", f_gelu_exact, 1, {1}, {{5}}, ANY},
    {"gelu exact large", f_gelu_exact, 1, {1}, {{4}}, LARGE},
    {"silu", f_silu, 1, {1}, {{5}}, ANY},
    {"silu large", f_silu, 1, {1}, {{4}}, LARGE},
    {"rms_norm", f_rms_norm, 2, {2, 1}, {{2, 4}, {4}}, ANY},
    {"rms_norm axis 0", f_rms_norm0, 2, {3, 1}, {{3, 2, 2}, {3}}, ANY},
    {"rms_norm no scale", f_rms_norm_bare, 1, {3}, {{2, 3, 2}}, ANY},
    {"where", f_where, 2, {2, 1}, {{2, 1}, {3}}, ANY},
    {"clip", f_clip, 3, {2, 1, 2}, {{2, 3}, {3}, {2, 1}}, DISTINCT},
    {"relu", f_relu, 1, {1}, {{5}}, ANY},
    {"mean", f_mean, 1, {2}, {{2, 3}}, ANY},
    {"softmax_cross_entropy", f_xent, 1, {2}, {{3, 4}}, ANY},
    {"floor and sign", f_floor, 1, {1}, {{3}}, ANY},
    {"zero-size", f_exp, 1, {2}, {{0, 3}}, ANY},
    {"zero-size matmul", f_matmul, 2, {2, 2}, {{2, 0}, {0, 3}}, ANY},
    {"reduce_sum", f_rsum, 1, {3}, {{2, 3, 4}}, ANY},
    {"reduce_max", f_rmax, 1, {3}, {{2, 3, 4}}, DISTINCT},
    {"reduce_min", f_rmin, 1, {3}, {{2, 3, 4}}, DISTINCT},
    {"reduce_prod", f_rprod, 1, {3}, {{2, 3, 2}}, ANY},
    {"conv NCHW, SAME, strided, rhs-dilated",
     f_conv_nchw,
     2,
     {4, 4},
     {{2, 3, 5, 4}, {4, 3, 2, 2}},
     ANY},
    {"conv NHWC, groups, lhs-dilated, cropped",
     f_conv_nhwc,
     2,
     {4, 4},
     {{1, 4, 3, 4}, {2, 2, 2, 4}},
     ANY},
    {"conv 1-d, SAME_LOWER", f_conv_1d, 2, {3, 3}, {{2, 2, 6}, {3, 2, 3}}, ANY},
    {"conv 3-d, groups", f_conv_3d, 2, {5, 5}, {{1, 2, 3, 3, 2}, {2, 1, 2, 2, 1}}, ANY},
    {"reduce_window max (max pool)", f_maxpool, 1, {4}, {{1, 5, 4, 2}}, DISTINCT},
    {"reduce_window sum, dilated", f_sumwin, 1, {2}, {{4, 5}}, ANY},
    {"reduce_window min", f_minwin, 1, {2}, {{3, 6}}, DISTINCT},
    {"avg_pool, padding not counted", f_avgpool, 1, {3}, {{2, 4, 5}}, ANY},
    {"dynamic_slice", f_dslice, 1, {2}, {{4, 5}}, ANY},
    {"dynamic_slice, negative start", f_dslice_neg, 1, {2}, {{4, 5}}, ANY},
    {"dynamic_update_slice", f_dupdate, 2, {2, 2}, {{4, 5}, {2, 3}}, ANY},
    {"dynamic_update_slice, clamped", f_dupdate_clamp, 2, {2, 2}, {{4, 5}, {2, 3}}, ANY},
    GATHER_GRAD_ROWS()};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static bool is_reduce(const grad_case *c) {
    return c->f == f_rsum || c->f == f_rmax || c->f == f_rmin || c->f == f_rprod;
}

/* ------------------------------------------------------------- machinery ---- */

static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* Inputs of a kind: away from 0 (abs, relu), positive, large, all distinct, inside
 * (-0.9, 0.9) (asin, atanh, erf_inv) or above 1.3 (acosh). */
static void draw(double *x, int64_t n, int kind, uint64_t *seed) {
    for (int64_t i = 0; i < n; i++) {
        double u = test_rng_unit(seed), mag = 0.2 + 1.6 * test_rng_unit(seed);
        double s = u < 0.5 ? -1 : 1;
        switch (kind) {
        case POS: x[i] = 0.3 + 2.5 * u; break;
        case UNIT: x[i] = s * (0.05 + 0.85 * test_rng_unit(seed)); break;
        case ABOVE1: x[i] = 1.3 + 2.5 * u; break;
        case LARGE: x[i] = s * (5 + 25 * test_rng_unit(seed)); break;
        case DISTINCT: x[i] = -2 + 4.0 * ((double)i + 0.2 + 0.6 * u) / (double)n; break;
        default: x[i] = s * mag; break;
        }
    }
    if (kind == DISTINCT) /* shuffle, so ties cannot happen and order is random */
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = test_rng_int(seed, (int)i + 1);
            double t = x[i];
            x[i] = x[j], x[j] = t;
        }
}

/* The graph of a case in dtype t: parameters x..., w; outputs loss and d loss / d x_i.
 * Returns the number of outputs, 0 if it could not be built. */
static int build_case(kiln_graph *g, const grad_case *c, kiln_dtype t, int64_t *wdims, int *wrank) {
    kiln_value x[MAX_IN], outs[1 + MAX_IN];
    for (int i = 0; i < c->n_in; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        x[i] = kiln_parameter(g, name, t, c->rank[i], c->dims[i]);
    }
    kiln_value y = c->f(g, x);
    kiln_dtype yt;
    if (!kiln_value_type(g, y, &yt, wrank, wdims)) return 0;
    if (yt != t) y = kiln_convert(g, y, t);
    kiln_value w = kiln_parameter(g, "w", t, *wrank, wdims);
    outs[0] = kiln_reduce_sum(g, kiln_mul(g, w, y), 0, NULL, false);
    if (kiln_grad(g, outs[0], c->n_in, x, outs + 1)) return 0;
    if (kiln_graph_finish(g, 1 + c->n_in, outs)) return 0;
    return 1 + c->n_in;
}

typedef struct case_io {
    int n_args;
    kiln_array *args[MAX_IN + 1];
    double *host[MAX_IN + 1];
    int64_t size[MAX_IN + 1];
} case_io;

static void io_free(case_io *io) {
    for (int i = 0; i < io->n_args; i++) kiln_array_destroy(io->args[i]), free(io->host[i]);
}

static kiln_array *f64_array(kiln_context *ctx, kiln_dtype t, int rank, const int64_t *dims,
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

static void io_make(kiln_context *ctx, const grad_case *c, kiln_dtype t, int wrank,
                    const int64_t *wdims, uint64_t seed, case_io *io) {
    memset(io, 0, sizeof *io);
    io->n_args = c->n_in + 1;
    for (int i = 0; i <= c->n_in; i++) {
        int rank = i < c->n_in ? c->rank[i] : wrank;
        const int64_t *dims = i < c->n_in ? c->dims[i] : wdims;
        io->size[i] = numel(rank, dims);
        io->host[i] = malloc((size_t)(io->size[i] ? io->size[i] : 1) * sizeof(double));
        draw(io->host[i], io->size[i], i < c->n_in ? c->kind : ANY, &seed);
        io->args[i] = f64_array(ctx, t, rank, dims, io->host[i]);
    }
}

static double read_f64(const kiln_array *a, int64_t i) {
    size_t n = kiln_array_nbytes(a);
    double *h = malloc(n ? n : 8), v;
    kiln_array_copy_to_host(a, h, n);
    v = h[i];
    free(h);
    return v;
}

/* The loss at the current host inputs (interpreted, f64). */
static double loss_at(kiln_context *ctx, kiln_graph *g, const grad_case *c, case_io *io, int k,
                      int wrank, const int64_t *wdims) {
    kiln_array_destroy(io->args[k]);
    io->args[k] = f64_array(ctx, KILN_DTYPE_F64, k < c->n_in ? c->rank[k] : wrank,
                            k < c->n_in ? c->dims[k] : wdims, io->host[k]);
    int n_out = kiln_graph_num_outputs(g);
    kiln_array *outs[1 + MAX_IN] = {0};
    double l = NAN;
    if (kiln_interpret(g, io->n_args, io->args, n_out, outs) == KILN_STATUS_OK)
        l = read_f64(outs[0], 0);
    for (int i = 0; i < n_out; i++) kiln_array_destroy(outs[i]);
    return l;
}

/* Central differences in f64 against the interpreted gradient of every input element. */
static void fd_case(kiln_context *ctx, const grad_case *c, uint64_t seed) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, c->name, &g);
    int64_t wdims[KILN_MAX_RANK];
    int wrank = 0, n_out = build_case(g, c, KILN_DTYPE_F64, wdims, &wrank);
    CHECK_MSG(n_out > 0, "%s: %s", c->name, kiln_last_error(ctx));
    if (!n_out) {
        kiln_graph_destroy(g);
        return;
    }
    case_io io;
    io_make(ctx, c, KILN_DTYPE_F64, wrank, wdims, seed, &io);
    kiln_array *outs[1 + MAX_IN] = {0};
    CHECK_OK(ctx, kiln_interpret(g, io.n_args, io.args, n_out, outs));
    for (int k = 0; k < c->n_in && outs[0]; k++) {
        int64_t dims[KILN_MAX_RANK];
        CHECK(kiln_array_dtype(outs[1 + k]) == KILN_DTYPE_F64);
        int rank = kiln_array_rank(outs[1 + k]);
        for (int i = 0; i < rank; i++) dims[i] = kiln_array_dim(outs[1 + k], i);
        CHECK_MSG(rank == c->rank[k] && !memcmp(dims, c->dims[k], sizeof(int64_t) * (size_t)rank),
                  "%s: gradient %d has the wrong shape", c->name, k);
        for (int64_t e = 0; e < io.size[k]; e++) {
            double x0 = io.host[k][e], h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1);
            io.host[k][e] = x0 + h;
            double up = loss_at(ctx, g, c, &io, k, wrank, wdims);
            io.host[k][e] = x0 - h;
            double down = loss_at(ctx, g, c, &io, k, wrank, wdims);
            io.host[k][e] = x0;
            double fd = (up - down) / (2 * h), got = read_f64(outs[1 + k], e);
            double scale = 1 + fabs(up) + fabs(down); /* cancellation error grows with |loss| */
            CHECK_MSG(fabs(got - fd) <= 1e-6 * (fabs(fd) + scale),
                      "%s: d/dx%d[%lld] = %.12g, "
                      "finite differences %.12g",
                      c->name, k, (long long)e, got, fd);
        }
        loss_at(ctx, g, c, &io, k, wrank, wdims); /* restore the argument */
    }
    for (int i = 0; i < n_out; i++) kiln_array_destroy(outs[i]);
    io_free(&io);
    kiln_graph_destroy(g);
}

static void test_finite_differences(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(0xad1ff);
    for (int i = 0; i < N_CASES; i++) {
        if (is_reduce(&cases[i])) {
            for (reduce_mask = 0; reduce_mask < 8; reduce_mask++)
                fd_case(ctx, &cases[i], seed + (uint64_t)i * 131 + (uint64_t)reduce_mask);
        } else {
            fd_case(ctx, &cases[i], seed + (uint64_t)i * 131);
        }
    }
    kiln_context_destroy(ctx);
}

/* Every case's gradient traced in bf16 and f16 (cotangents in the primal's dtype) from
 * the same inputs, rounded to the dtype, as its f64 gradient (checked against finite
 * differences above): within a few of the dtype's rounding steps, measured against the
 * gradient's largest element, since a chain of rounded ops carries each step's error on.
 * Both interpreted: the compiled 16-bit gradients are held to the interpreter's below. */
static void half_case(kiln_context *ctx, const grad_case *c, kiln_dtype t, uint64_t seed) {
    kiln_graph *g64 = NULL, *g16 = NULL;
    kiln_graph_create(ctx, c->name, &g64);
    kiln_graph_create(ctx, c->name, &g16);
    int64_t wdims[KILN_MAX_RANK];
    int wrank = 0, n_out = build_case(g64, c, KILN_DTYPE_F64, wdims, &wrank);
    int n16 = build_case(g16, c, t, wdims, &wrank);
    CHECK_MSG(n_out > 0 && n16 == n_out, "%s in %s: %s", c->name, kiln_dtype_name(t),
              kiln_last_error(ctx));
    case_io io;
    io_make(ctx, c, KILN_DTYPE_F64, wrank, wdims, seed, &io);
    kiln_array *a16[MAX_IN + 1] = {0}, *o64[1 + MAX_IN] = {0}, *o16[1 + MAX_IN] = {0};
    for (int i = 0; i < io.n_args && n_out > 0 && n16 == n_out; i++) {
        for (int64_t e = 0; e < io.size[i]; e++) /* both see the dtype's values */
            io.host[i][e] = t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(kn_f64_to_bf16(io.host[i][e]))
                                                 : kn_f16_to_f32(kn_f64_to_f16(io.host[i][e]));
        int rank = i < c->n_in ? c->rank[i] : wrank;
        const int64_t *dims = i < c->n_in ? c->dims[i] : wdims;
        kiln_array_destroy(io.args[i]);
        io.args[i] = f64_array(ctx, KILN_DTYPE_F64, rank, dims, io.host[i]);
        a16[i] = f64_array(ctx, t, rank, dims, io.host[i]);
    }
    if (n_out > 0 && n16 == n_out) {
        CHECK_OK(ctx, kiln_interpret(g64, io.n_args, io.args, n_out, o64));
        CHECK_OK(ctx, kiln_interpret(g16, io.n_args, a16, n_out, o16));
    }
    double tol = t == KILN_DTYPE_BF16 ? 16 * 0x1p-8 : 16 * 0x1p-11; /* 16 rounding steps */
    for (int k = 0; k < c->n_in && o64[1 + k] && o16[1 + k]; k++) {
        CHECK(kiln_array_dtype(o16[1 + k]) == t);
        double big = 0, err = 0;
        int64_t worst = 0;
        uint16_t *h = malloc((size_t)(io.size[k] ? io.size[k] : 1) * sizeof *h);
        kiln_array_copy_to_host(o16[1 + k], h, (size_t)io.size[k] * sizeof *h);
        for (int64_t e = 0; e < io.size[k]; e++) {
            double want = read_f64(o64[1 + k], e);
            double got = t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(h[e]) : kn_f16_to_f32(h[e]);
            if (fabs(want) > big) big = fabs(want);
            if (!(fabs(got - want) <= err)) err = fabs(got - want), worst = e;
        }
        free(h);
        if (t == KILN_DTYPE_F16 && big > 65504) continue; /* beyond f16's range: inf is right */
        CHECK_MSG(err <= tol * (1 + big),
                  "%s in %s: d/dx%d[%lld] off by %.6g (largest |grad| %.6g)", c->name,
                  kiln_dtype_name(t), k, (long long)worst, err, big);
    }
    for (int i = 0; i < n_out; i++) kiln_array_destroy(o64[i]), kiln_array_destroy(o16[i]);
    for (int i = 0; i < io.n_args; i++) kiln_array_destroy(a16[i]);
    io_free(&io);
    kiln_graph_destroy(g64);
    kiln_graph_destroy(g16);
}

static void test_half_gradients(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(0x16b);
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < N_CASES; i++) {
            reduce_mask = 5;
            half_case(ctx, &cases[i], d ? KILN_DTYPE_F16 : KILN_DTYPE_BF16,
                      seed + (uint64_t)i * 131);
        }
    kiln_context_destroy(ctx);
}

/* Every case in one graph per dtype, compiled and compared with the interpreter. */
static void test_compiled(void) {
    kiln_context *ctx = test_context();
    uint64_t seed = test_seed(0xc0de);
    static const kiln_dtype types[4] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_BF16,
                                        KILN_DTYPE_F16};
    for (int ti = 0; ti < 4; ti++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "all_cases", &g);
        kiln_value outs[KILN_MAX_OUTPUTS * 4];
        kiln_array *args[512];
        int n_out = 0, n_args = 0;
        for (int i = 0; i < N_CASES; i++) {
            const grad_case *c = &cases[i];
            reduce_mask = 5;
            kiln_value x[MAX_IN];
            for (int k = 0; k < c->n_in; k++) {
                x[k] = kiln_parameter(g, "x", types[ti], c->rank[k], c->dims[k]);
                double *h = malloc((size_t)(numel(c->rank[k], c->dims[k]) + 1) * sizeof *h);
                draw(h, numel(c->rank[k], c->dims[k]), c->kind, &seed);
                args[n_args++] = f64_array(ctx, types[ti], c->rank[k], c->dims[k], h);
                free(h);
            }
            kiln_value y = c->f(g, x);
            kiln_dtype yt;
            int yr;
            int64_t yd[KILN_MAX_RANK];
            kiln_value_type(g, y, &yt, &yr, yd);
            if (yt != types[ti]) y = kiln_convert(g, y, types[ti]);
            kiln_value w = kiln_parameter(g, "w", types[ti], yr, yd);
            args[n_args++] = cmp_random_array(ctx, types[ti], yr, yd, &seed);
            kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, w, y), 0, NULL, false);
            CHECK_OK(ctx, kiln_grad(g, loss, c->n_in, x, outs + n_out));
            n_out += c->n_in;
        }
        CHECK_OK(ctx, kiln_graph_finish(g, n_out, outs));
        CHECK_MSG(cmp_graph(ctx, g, n_args, args, NULL, 2e-4, NULL), "compiled %s gradients",
                  kiln_dtype_name(types[ti]));
        for (int i = 0; i < n_args; i++) kiln_array_destroy(args[i]);
        kiln_graph_destroy(g);
    }
    kiln_context_destroy(ctx);
}

/* --------------------------------------------------- conventions, exact ---- */

/* d/dx of f at the points xs, as the interpreter computes them. */
static void grads_at(kiln_context *ctx, case_fn f, int n_in, int n, const double *xs,
                     const double *ys, double *dx, double *dy) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "conv", &g);
    int64_t d = n;
    kiln_value x[2], gr[2];
    for (int i = 0; i < n_in; i++) x[i] = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, &d);
    kiln_value loss = kiln_reduce_sum(g, f(g, x), 0, NULL, false);
    CHECK_OK(ctx, kiln_grad(g, loss, n_in, x, gr));
    CHECK_OK(ctx, kiln_graph_finish(g, n_in, gr));
    kiln_array *args[2] = {0}, *outs[2] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, &d, xs, &args[0]);
    if (n_in > 1) kiln_array_create(ctx, KILN_DTYPE_F64, 1, &d, ys, &args[1]);
    CHECK_OK(ctx, kiln_interpret(g, n_in, args, n_in, outs));
    if (outs[0]) kiln_array_copy_to_host(outs[0], dx, (size_t)n * sizeof *dx);
    if (n_in > 1 && outs[1]) kiln_array_copy_to_host(outs[1], dy, (size_t)n * sizeof *dy);
    for (int i = 0; i < n_in; i++) kiln_array_destroy(args[i]), kiln_array_destroy(outs[i]);
    kiln_graph_destroy(g);
}

static kiln_value f_rmax_all(kiln_graph *g, const kiln_value *x) {
    return kiln_reduce_max(g, x[0], 0, NULL, false);
}
static kiln_value f_rprod_all(kiln_graph *g, const kiln_value *x) {
    return kiln_reduce_prod(g, x[0], 0, NULL, false);
}
static kiln_value f_pow_zero(kiln_graph *g, const kiln_value *x) {
    return kiln_pow(g, x[0], x[1]);
}

static kiln_value f_clip_12(kiln_graph *g, const kiln_value *x) {
    return kiln_clip(g, x[0], kiln_scalar(g, KILN_DTYPE_F64, 1), kiln_scalar(g, KILN_DTYPE_F64, 2));
}
static kiln_value f_clip_lo(kiln_graph *g, const kiln_value *x) {
    return kiln_clip(g, x[0], x[1], kiln_scalar(g, KILN_DTYPE_F64, 2));
}

static void test_conventions(void) {
    kiln_context *ctx = test_context();
    double dx[8], dy[8];
    /* abs'(0) = 1, as JAX's select(x >= 0, g, -g) */
    grads_at(ctx, f_abs, 1, 3, (const double[]){0, -2, 3}, NULL, dx, NULL);
    CHECK(dx[0] == 1 && dx[1] == -1 && dx[2] == 1);
    /* max and min ties split 0.5 / 0.5 */
    grads_at(ctx, f_max, 2, 2, (const double[]){1, 2}, (const double[]){1, 1}, dx, dy);
    CHECK(dx[0] == 0.5 && dy[0] == 0.5 && dx[1] == 1 && dy[1] == 0);
    grads_at(ctx, f_min, 2, 2, (const double[]){-1, 2}, (const double[]){-1, 1}, dx, dy);
    CHECK(dx[0] == 0.5 && dy[0] == 0.5 && dx[1] == 0 && dy[1] == 1);
    /* relu (max with a constant 0) at 0: 0, as jax.nn.relu */
    grads_at(ctx, f_relu, 1, 3, (const double[]){0, 1, -1}, NULL, dx, NULL);
    CHECK(dx[0] == 0 && dx[1] == 1 && dx[2] == 0);
    /* a max written by hand against a zero is a plain max: a tie splits, as jnp.maximum's */
    grads_at(ctx, f_max_zero, 1, 3, (const double[]){0, 1, -1}, NULL, dx, NULL);
    CHECK(dx[0] == 0.5 && dx[1] == 1 && dx[2] == 0);
    /* clip at a bound splits 0.5 / 0.5 between x and the bound, as jnp.clip (its max and
     * min) does: jax.grad of jnp.clip(x, 1., 2.) at x = 1 and 2 is 0.5 (jax 0.10.2) */
    grads_at(ctx, f_clip_12, 1, 5, (const double[]){1, 1.5, 2, 0, 3}, NULL, dx, NULL);
    CHECK(dx[0] == 0.5 && dx[1] == 1 && dx[2] == 0.5 && dx[3] == 0 && dx[4] == 0);
    grads_at(ctx, f_clip_lo, 2, 4, (const double[]){1, 0, 3, 1.5}, (const double[]){1, 1, 1, 1}, dx,
             dy);
    CHECK(dx[0] == 0.5 && dy[0] == 0.5 && dx[1] == 0 && dy[1] == 1 && dx[2] == 0 && dy[2] == 0 &&
          dx[3] == 1 && dy[3] == 0);
    /* sqrt'(0) = inf */
    grads_at(ctx, f_sqrt, 1, 2, (const double[]){0, 4}, NULL, dx, NULL);
    CHECK(isinf(dx[0]) && dx[0] > 0 && dx[1] == 0.25);
    /* pow at a = 0: d/da = b * 0^(b-1), d/db = 0 (log of 0 replaced by log 1) */
    grads_at(ctx, f_pow_zero, 2, 2, (const double[]){0, 2}, (const double[]){2, 3}, dx, dy);
    CHECK(dx[0] == 0 && dy[0] == 0 && dx[1] == 12 && fabs(dy[1] - 8 * log(2.0)) < 1e-12);
    /* reduce_max divides among ties */
    grads_at(ctx, f_rmax_all, 1, 4, (const double[]){3, 1, 3, 3}, NULL, dx, NULL);
    CHECK(fabs(dx[0] - 1.0 / 3) < 1e-15 && dx[1] == 0 && fabs(dx[3] - 1.0 / 3) < 1e-15);
    /* reduce_prod with zeros: one zero gets the product of the rest, two give zeros */
    grads_at(ctx, f_rprod_all, 1, 4, (const double[]){2, 0, 3, 5}, NULL, dx, NULL);
    CHECK(dx[0] == 0 && dx[1] == 30 && dx[2] == 0 && dx[3] == 0);
    grads_at(ctx, f_rprod_all, 1, 4, (const double[]){2, 0, 3, 0}, NULL, dx, NULL);
    CHECK(dx[0] == 0 && dx[1] == 0 && dx[2] == 0 && dx[3] == 0);
    grads_at(ctx, f_rprod_all, 1, 3, (const double[]){2, -4, 3}, NULL, dx, NULL);
    CHECK(dx[0] == -12 && dx[1] == 6 && dx[2] == -8);
    kiln_context_destroy(ctx);
}

/* ------------------------------------------------------ second derivatives ---- */

typedef struct second {
    const char *name;
    case_fn f;
    double x;
    double d1, d2; /* closed forms at x */
} second;

static kiln_value f_cube(kiln_graph *g, const kiln_value *x) {
    return kiln_mul(g, kiln_mul(g, x[0], x[0]), x[0]);
}

/* d/dx and d2/dx2 by applying kiln_grad twice, interpreted, against closed forms. */
static void test_second_derivatives(void) {
    kiln_context *ctx = test_context();
    double x = 0.7, t = tanh(x), s = 1 / (1 + exp(-x));
    const second cases2[] = {
        {"x^3", f_cube, x, 3 * x * x, 6 * x},
        {"exp", f_exp, x, exp(x), exp(x)},
        {"tanh", f_tanh, x, 1 - t * t, -2 * t * (1 - t * t)},
        {"logistic", f_logistic, x, s * (1 - s), s * (1 - s) * (1 - 2 * s)},
        {"log", f_log, x, 1 / x, -1 / (x * x)},
        {"sqrt", f_sqrt, x, 0.5 / sqrt(x), -0.25 * pow(x, -1.5)},
        {"sin", f_sin, x, cos(x), -sin(x)},
        {"cos", f_cos, x, -sin(x), -cos(x)},
        {"erf", f_erf, x, 2 / sqrt(M_PI) * exp(-x * x), -4 * x / sqrt(M_PI) * exp(-x * x)},
        {"expm1", f_expm1, x, exp(x), exp(x)},
        {"tan", f_tan, x, 1 + tan(x) * tan(x), 2 * tan(x) * (1 + tan(x) * tan(x))},
        {"sinh", f_sinh, x, cosh(x), sinh(x)},
        {"asin", f_asin, x, 1 / sqrt(1 - x * x), x * pow(1 - x * x, -1.5)},
        {"acos", f_acos, x, -1 / sqrt(1 - x * x), -x * pow(1 - x * x, -1.5)},
        {"atan", f_atan, x, 1 / (1 + x * x), -2 * x / ((1 + x * x) * (1 + x * x))},
        {"asinh", f_asinh, x, 1 / sqrt(1 + x * x), -x * pow(1 + x * x, -1.5)},
        {"acosh", f_acosh, 1 + x, 1 / sqrt(x * (2 + x)), -(1 + x) * pow(x * (2 + x), -1.5)},
        {"atanh", f_atanh, x, 1 / (1 - x * x), 2 * x / ((1 - x * x) * (1 - x * x))},
        {"erfc", f_erfc, x, -2 / sqrt(M_PI) * exp(-x * x), 4 * x / sqrt(M_PI) * exp(-x * x)},
        {"cbrt", f_cbrt, x, pow(x, -2.0 / 3) / 3, -2.0 / 9 * pow(x, -5.0 / 3)},
        /* at erf(1/2), where erf_inv is 1/2: d1 = sqrt(pi)/2 e^(1/4), d2 = 2 y d1^2 */
        {"erf_inv", f_erf_inv, erf(0.5), sqrt(M_PI) / 2 * exp(0.25), M_PI / 4 * exp(0.5)},
        /* psi(1) = -gamma, psi'(1) = pi^2/6, psi''(1) = -2 zeta(3); psi'(1/2) = pi^2/2,
         * psi''(1/2) = -14 zeta(3) */
        {"lgamma", f_lgamma, 1, -0.57721566490153286, M_PI * M_PI / 6},
        {"digamma", f_digamma, 1, M_PI * M_PI / 6, -2.4041138063191886},
        {"digamma at 1/2", f_digamma, 0.5, M_PI * M_PI / 2, -16.828796644234320},
        /* psi'(-1/2) = pi^2 / sin^2(-pi/2) - psi'(3/2) = pi^2 - (pi^2/2 - 4) */
        {"digamma at -1/2", f_digamma, -0.5, M_PI * M_PI / 2 + 4, NAN},
    };
    for (size_t i = 0; i < sizeof cases2 / sizeof cases2[0]; i++) {
        const second *c = &cases2[i];
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, c->name, &g);
        kiln_value p = kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL), d1, d2;
        CHECK_OK(ctx, kiln_grad(g, c->f(g, &p), 1, &p, &d1));
        CHECK_OK(ctx, kiln_grad(g, d1, 1, &p, &d2));
        kiln_value outs[2] = {d1, d2};
        CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
        kiln_array *arg = NULL, *res[2] = {0};
        kiln_array_create(ctx, KILN_DTYPE_F64, 0, NULL, &c->x, &arg);
        CHECK_OK(ctx, kiln_interpret(g, 1, &arg, 2, res));
        if (res[0] && res[1]) {
            CHECK_MSG(fabs(read_f64(res[0], 0) - c->d1) < 1e-12 * (1 + fabs(c->d1)), "%s' = %.17g",
                      c->name, read_f64(res[0], 0));
            CHECK_MSG(isnan(c->d2) || /* NaN: not checked */
                          fabs(read_f64(res[1], 0) - c->d2) < 1e-12 * (1 + fabs(c->d2)),
                      "%s'' = %.17g, want %.17g", c->name, read_f64(res[1], 0), c->d2);
        }
        /* the compiled graph agrees with the interpreter */
        CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-5, NULL), "%s compiled", c->name);
        kiln_array_destroy(arg), kiln_array_destroy(res[0]), kiln_array_destroy(res[1]);
        kiln_graph_destroy(g);
    }
    /* mixed partials of x*y*y: d2/dxdy = 2y, d2/dy2 = 2x, d2/dx2 = 0 */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "mixed", &g);
    kiln_value xy[2] = {kiln_parameter(g, "x", KILN_DTYPE_F64, 0, NULL),
                        kiln_parameter(g, "y", KILN_DTYPE_F64, 0, NULL)};
    kiln_value f = kiln_mul(g, xy[0], kiln_mul(g, xy[1], xy[1])), d[2], dx2[2], dy2[2];
    CHECK_OK(ctx, kiln_grad(g, f, 2, xy, d));
    CHECK_OK(ctx, kiln_grad(g, d[0], 2, xy, dx2));
    CHECK_OK(ctx, kiln_grad(g, d[1], 2, xy, dy2));
    kiln_value outs[4] = {dx2[0], dx2[1], dy2[0], dy2[1]};
    CHECK_OK(ctx, kiln_graph_finish(g, 4, outs));
    kiln_array *args[2] = {0}, *res[4] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F64, 0, NULL, (const double[]){1.5}, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 0, NULL, (const double[]){-2}, &args[1]);
    CHECK_OK(ctx, kiln_interpret(g, 2, args, 4, res));
    if (res[3]) {
        CHECK(read_f64(res[0], 0) == 0);
        CHECK(read_f64(res[1], 0) == -4);
        CHECK(read_f64(res[2], 0) == -4);
        CHECK(read_f64(res[3], 0) == 3);
    }
    for (int i = 0; i < 4; i++) kiln_array_destroy(res[i]);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* stop_gradient: d/dx sum(x * stop(exp(x))) = exp(x), the stopped factor a constant. */
static void test_stop_gradient(void) {
    kiln_context *ctx = test_context();
    double dx[3];
    grads_at(ctx, f_stop, 1, 3, (const double[]){0, 1, -2}, NULL, dx, NULL);
    CHECK(dx[0] == 1 && fabs(dx[1] - exp(1.0)) < 1e-15 && fabs(dx[2] - exp(-2.0)) < 1e-15);
    /* floor and sign pass nothing: d/dx (floor(x) + sign(x) * x) = sign(x) */
    grads_at(ctx, f_floor, 1, 3, (const double[]){0.5, -1.5, 2.25}, NULL, dx, NULL);
    CHECK(dx[0] == 1 && dx[1] == -1 && dx[2] == 1);
    kiln_context_destroy(ctx);
}

/* ------------------------------------------------------------- semantics ---- */

/* wrt an intermediate, a value the loss does not depend on (zeros, as a broadcast), the
 * loss itself; kiln_vjp with cotangents; backward nodes carry the kiln_grad location. */
static void test_semantics(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "sem", &g);
    int64_t d3 = 3;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, &d3);
    kiln_value u = kiln_parameter(g, "unused", KILN_DTYPE_F32, 2, (const int64_t[]){2, 2});
    kiln_value h = kiln_exp(g, x);
    kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, h, h), 0, NULL, false);
    kiln_value wrt[4] = {x, h, u, loss}, gr[4];
    int before = kiln_graph_num_nodes(g);
    CHECK_OK(ctx, kiln_grad(g, loss, 4, wrt, gr));
    int line = __LINE__ - 1;
    CHECK(kiln_graph_num_nodes(g) > before);
    kiln_dtype t;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    CHECK(kiln_value_type(g, gr[2], &t, &rank, dims) && t == KILN_DTYPE_F32 && rank == 2 &&
          dims[0] == 2 && dims[1] == 2);
    /* the zeros are a broadcast of a scalar, not a materialised constant */
    CHECK(g->nodes[gr[2].id].op == IR_BROADCAST);
    /* vjp of h = exp(x) with cotangent c: c * exp(x) */
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F64, 1, &d3), v;
    CHECK_OK(ctx, kiln_vjp(g, 1, &h, &c, 1, &x, &v));
    kiln_value outs[5] = {gr[0], gr[1], gr[2], gr[3], v};
    CHECK_OK(ctx, kiln_graph_finish(g, 5, outs));
    char *text = kiln_graph_to_string(g), at[64];
    snprintf(at, sizeof at, "test_autodiff.c:%d", line);
    CHECK_CONTAINS(text, at);
    kiln_string_free(ctx, text);
    double xv[3] = {0.5, -1, 2}, cv[3] = {1, 2, -3};
    kiln_array *args[3] = {0}, *res[5] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, &d3, xv, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){2, 2}, NULL, &args[1]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, &d3, cv, &args[2]);
    CHECK_OK(ctx, kiln_interpret(g, 3, args, 5, res));
    if (res[4]) {
        for (int i = 0; i < 3; i++) {
            double e = exp(xv[i]);
            CHECK_NEAR(read_f64(res[0], i), 2 * e * e, 1e-12);
            CHECK_NEAR(read_f64(res[1], i), 2 * e, 1e-12);
            CHECK_NEAR(read_f64(res[4], i), cv[i] * e, 1e-12);
        }
        CHECK(read_f64(res[3], 0) == 1);
        float z[4] = {1, 1, 1, 1};
        kiln_array_copy_to_host(res[2], z, sizeof z);
        CHECK(z[0] == 0 && z[3] == 0);
    }
    for (int i = 0; i < 5; i++) kiln_array_destroy(res[i]);
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* kiln_grad inside a kiln_jit trace function: loss and gradient of sum(tanh(x @ w)). */
static int trace_step(kiln_graph *g, const kiln_value *args, int n_args, const void *st, void *user,
                      kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    kiln_value y = kiln_tanh(g, kiln_matmul(g, args[0], args[1]));
    outs[0] = kiln_reduce_sum(g, y, 0, NULL, false);
    if (kiln_grad(g, outs[0], 1, &args[1], &outs[1])) return -1;
    outs[1] = kiln_sub(g, args[1], kiln_mul(g, outs[1], kiln_scalar(g, KILN_DTYPE_F32, 0.1f)));
    return 2;
}

static void test_jit(void) {
    kiln_context *ctx = test_context();
    kiln_jit_options o;
    memset(&o, 0, sizeof o);
    o.fn = trace_step;
    kiln_jit *j = NULL;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    uint64_t seed = 7;
    kiln_array *args[2] = {
        cmp_random_array(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){4, 3}, &seed),
        cmp_random_array(ctx, KILN_DTYPE_F32, 2, (const int64_t[]){3, 2}, &seed)};
    kiln_array *outs[2] = {0};
    CHECK_OK(ctx, kiln_jit_call(j, 2, args, NULL, 0, 2, outs));
    CHECK(outs[1] && kiln_array_dim(outs[1], 0) == 3 && kiln_array_dim(outs[1], 1) == 2);
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]), kiln_array_destroy(outs[i]);
    kiln_jit_destroy(j);
    kiln_context_destroy(ctx);
}

/* An integer output carries no gradient, as JAX's float0 cotangent: kiln_vjp of (tanh x,
 * argmax x) with the argmax's cotangent KILN_VALUE_NONE (or an i32 one, not read) is the
 * vjp of tanh x alone; of integer outputs only, zeros (an outside check: it was refused). */
static void test_vjp_integer_outputs(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "vjp_int", &g));
    int64_t d = 5;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &d);
    kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F32, 1, &d);
    kiln_value t = kiln_tanh(g, x), am = kiln_argmax(g, x, 0), gr[4];
    CHECK_OK(ctx, kiln_vjp(g, 2, (kiln_value[]){t, am}, (kiln_value[]){c, KILN_VALUE_NONE}, 1, &x,
                           &gr[0]));
    CHECK_OK(ctx, kiln_vjp(g, 2, (kiln_value[]){am, t}, (kiln_value[]){am, c}, 1, &x, &gr[1]));
    CHECK_OK(ctx, kiln_vjp(g, 1, &t, &c, 1, &x, &gr[2]));
    CHECK_OK(ctx, kiln_vjp(g, 1, &am, (kiln_value[]){KILN_VALUE_NONE}, 1, &x, &gr[3]));
    CHECK_OK(ctx, kiln_graph_finish(g, 4, gr));
    const float xv[5] = {0.3f, -1.2f, 2.0f, 0.0f, 0.7f}, cv[5] = {1, 2, -1, 0.5f, 3};
    kiln_array *args[2] = {NULL, NULL}, *out[4] = {0};
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, xv, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_F32, 1, &d, cv, &args[1]);
    CHECK_OK(ctx, kiln_interpret(g, 2, args, 4, out));
    float r[4][5];
    for (int k = 0; k < 4; k++)
        if (out[k]) kiln_array_copy_to_host(out[k], r[k], sizeof r[k]);
    for (int i = 0; i < 5; i++) {
        float want = cv[i] * (1 - tanhf(xv[i]) * tanhf(xv[i]));
        CHECK_MSG(fabsf(r[0][i] - want) < 1e-6f && r[0][i] == r[2][i] && r[1][i] == r[2][i],
                  "x[%d]: %g %g %g, want %g", i, r[0][i], r[1][i], r[2][i], want);
        CHECK(r[3][i] == 0);
    }
    for (int k = 0; k < 4; k++) kiln_array_destroy(out[k]);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* ---------------------------------------------------------------- errors ---- */

static void test_errors(void) {
    kiln_context *ctx = test_context();
    kiln_graph *g = NULL, *other = NULL;
    int64_t d2 = 2;
    struct {
        const char *want;
        kiln_status status;
    } expect[] = {
        {"the loss must be a float scalar", KILN_STATUS_SHAPE},
        {"the loss must be a float scalar", KILN_STATUS_DTYPE},
        {"not a value of graph", KILN_STATUS_INVALID_ARGUMENT},
        {"only float values (f32, f64, bf16, f16) have gradients", KILN_STATUS_DTYPE},
        {"needs at least one value", KILN_STATUS_INVALID_ARGUMENT},
        {"must not be NULL", KILN_STATUS_INVALID_ARGUMENT},
        {"cotangents[0] must have the type of outs[0]", KILN_STATUS_SHAPE},
        {"cotangents[0] must have the type of outs[0]", KILN_STATUS_DTYPE},
    };
    for (int k = 0; k < (int)(sizeof expect / sizeof expect[0]); k++) {
        kiln_graph_create(ctx, "err", &g);
        kiln_graph_create(ctx, "other", &other);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &d2);
        kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 1, &d2);
        kiln_value s = kiln_reduce_sum(g, x, 0, NULL, false), gr[1] = {{0, 0}};
        kiln_value foreign = kiln_parameter(other, "f", KILN_DTYPE_F32, 0, NULL);
        kiln_status st = KILN_STATUS_OK;
        int line = __LINE__ + 2;
        switch (k) {
        case 0: st = kiln_grad(g, x, 1, &x, gr); break;
        case 1: st = kiln_grad(g, kiln_reduce_sum(g, i, 0, NULL, false), 1, &x, gr); break;
        case 2: st = kiln_grad(g, foreign, 1, &x, gr); break;
        case 3: st = kiln_grad(g, s, 1, &i, gr); break;
        case 4: st = kiln_grad(g, s, 0, &x, gr); break;
        case 5: st = kiln_grad(g, s, 1, NULL, gr); break;
        case 6: st = kiln_vjp(g, 1, &x, &s, 1, &x, gr); break;
        default: st = kiln_vjp(g, 1, &i, &x, 1, &x, gr); break; /* an i32 output's, f32 */
        }
        (void)line;
        CHECK_MSG(st == expect[k].status, "case %d: %s", k, kiln_status_name(st));
        CHECK_CONTAINS(kiln_graph_error(g), expect[k].want);
        CHECK_CONTAINS(kiln_graph_error(g), k < 6 ? "kiln_grad" : "kiln_vjp");
        CHECK_CONTAINS(kiln_graph_error(g), "test_autodiff.c:");
        CHECK(gr[0].id == 0);
        /* sticky: later calls change nothing and finish returns the first error */
        kiln_value gr2[1];
        CHECK(kiln_grad(g, s, 1, &x, gr2) == expect[k].status && gr2[0].id == 0);
        CHECK(kiln_graph_finish(g, 1, &s) == expect[k].status);
        CHECK_CONTAINS(kiln_last_error(ctx), expect[k].want);
        kiln_graph_destroy(g);
        kiln_graph_destroy(other);
    }
    /* the message lists the operand types */
    kiln_graph_create(ctx, "err", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &d2), gr[1];
    kiln_grad(g, x, 1, &x, gr);
    CHECK_CONTAINS(kiln_graph_error(g), "operands: f32[2]");
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* ------------------------------------------------------- random programs ---- */

/* Random float programs with a scalar loss: gradients against central differences
 * (f64, interpreted), and compiled against interpreted (f32). */
static void test_random_programs(void) {
    kiln_context *ctx = test_context();
    uint64_t base = test_seed(0x5eed);
    int n = rp_program_count(6);
    for (int p = 0; p < n; p++) {
        for (int ti = 0; ti < 2; ti++) {
            kiln_dtype t = ti ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
            rp_state *s = calloc(1, sizeof *s);
            s->seed = base + (uint64_t)p * 7919;
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "random", &g);
            kiln_value loss = rp_loss(s, g, t, 2);
            kiln_value wrt[RP_MAX_PARAMS], outs[1 + RP_MAX_PARAMS];
            int nw = s->n_params;
            for (int i = 0; i < nw; i++) wrt[i] = s->params[i].v;
            outs[0] = loss;
            CHECK_OK(ctx, kiln_grad(g, loss, nw, wrt, outs + 1));
            CHECK_OK(ctx, kiln_graph_finish(g, 1 + nw, outs));
            kiln_array **args = calloc((size_t)nw, sizeof *args);
            uint64_t vs = s->seed;
            for (int i = 0; i < nw; i++)
                args[i] = cmp_random_array(ctx, t, s->params[i].rank, s->params[i].dims, &vs);
            if (kiln_graph_status(g) == KILN_STATUS_OK) {
                if (t == KILN_DTYPE_F32) {
                    CHECK_MSG(cmp_graph(ctx, g, nw, args, NULL, 2e-3, NULL), "program %d", p);
                } else { /* FD on a few elements of each parameter */
                    kiln_array **res = calloc((size_t)(1 + nw), sizeof *res);
                    CHECK_OK(ctx, kiln_interpret(g, nw, args, 1 + nw, res));
                    for (int i = 0; i < nw && res[0]; i++) {
                        int64_t m = kiln_array_size(args[i]);
                        size_t bytes = kiln_array_nbytes(args[i]);
                        double *h = malloc(bytes ? bytes : 8);
                        kiln_array_copy_to_host(args[i], h, bytes);
                        for (int e = 0; e < 3 && e < m; e++) {
                            int64_t at = test_rng_int(&vs, (int)m);
                            double x0 = h[at], step = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1), l[2];
                            for (int sgn = 0; sgn < 2; sgn++) {
                                h[at] = x0 + (sgn ? -step : step);
                                kiln_array *a2 = NULL, **o2 = calloc((size_t)(1 + nw), sizeof *o2);
                                kiln_array_create(ctx, t, s->params[i].rank, s->params[i].dims, h,
                                                  &a2);
                                kiln_array *keep = args[i];
                                args[i] = a2;
                                kiln_interpret(g, nw, args, 1 + nw, o2);
                                args[i] = keep;
                                l[sgn] = o2[0] ? read_f64(o2[0], 0) : NAN;
                                for (int q = 0; q <= nw; q++) kiln_array_destroy(o2[q]);
                                free(o2);
                                kiln_array_destroy(a2);
                            }
                            h[at] = x0;
                            /* a loss that is infinite there (a min over an empty axis is
                             * +inf) has no difference quotient to compare with */
                            if (!isfinite(l[0]) || !isfinite(l[1])) continue;
                            double fd = (l[0] - l[1]) / (2 * step), got = read_f64(res[1 + i], at);
                            double scale = 1 + fabs(l[0]) + fabs(l[1]);
                            CHECK_MSG(fabs(got - fd) <= 1e-5 * (fabs(fd) + scale),
                                      "program %d (seed %llu), parameter %d element %lld: %.12g, "
                                      "finite differences %.12g",
                                      p, (unsigned long long)(base + (uint64_t)p * 7919), i,
                                      (long long)at, got, fd);
                        }
                        free(h);
                    }
                    for (int i = 0; i <= nw; i++) kiln_array_destroy(res[i]);
                    free(res);
                }
            }
            for (int i = 0; i < nw; i++) kiln_array_destroy(args[i]);
            free(args);
            kiln_graph_destroy(g);
            free(s);
        }
    }
    kiln_context_destroy(ctx);
}

/* -------------------------------------------------------- fault injection ---- */

static kiln_status fault_scenario_run(fault_run *r) {
    kiln_context *ctx = NULL;
    kiln_status s = fault_context(r, (const char *)r->user, &ctx);
    if (s) return s;
    kiln_graph *g = NULL;
    kiln_array *args[2] = {0}, *outs[2] = {0};
    kiln_executable *e = NULL;
    s = fault_note(r, ctx, kiln_graph_create(ctx, "fault", &g));
    if (!s) {
        int64_t d[2] = {3, 4}, k = 4;
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
        kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 1, &k);
        /* two composites with direct rules, rms_norm's reading its scale again */
        kiln_value y = kiln_log_softmax(g, kiln_rms_norm(g, kiln_mul(g, x, w), w, -1, 1e-6), -1);
        kiln_value loss = kiln_reduce_sum(g, kiln_tanh(g, y), 0, NULL, false), gr[2];
        kiln_value wrt[2] = {x, w};
        s = fault_note(r, ctx, kiln_grad(g, loss, 2, wrt, gr));
        if (!s) s = fault_note(r, ctx, kiln_graph_finish(g, 2, gr));
        if (!s) s = fault_note(r, ctx, kiln_compile(g, NULL, &e));
        if (!s)
            s = fault_note(r, ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, NULL, &args[0]));
        if (!s)
            s = fault_note(r, ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, &k, NULL, &args[1]));
        if (!s) s = fault_note(r, ctx, kiln_executable_run(e, 2, args, 2, outs));
    }
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]), kiln_array_destroy(outs[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    return s;
}

static void test_fault_injection(void) {
    /* a private disk cache, warmed by the first (complete) run, so the sweep is fast */
    char dir[] = "/tmp/kiln_ad_faultXXXXXX";
    if (!mkdtemp(dir)) {
        CHECK_MSG(0, "mkdtemp failed");
        return;
    }
    /* warm the cache, so the sweep's runs load the kernels rather than compile them */
    test_alloc warm;
    memset(&warm, 0, sizeof warm);
    fault_run r0;
    memset(&r0, 0, sizeof r0);
    r0.alloc = &warm;
    r0.host = test_allocator(&warm);
    r0.user = dir;
    CHECK_STATUS(fault_scenario_run(&r0), KILN_STATUS_OK);
    fault_sweep sw = {
        .name = "autodiff", .run = fault_scenario_run, .user = dir, .max_runs = 100000};
    long total = fault_sweep_run(&sw);
    CHECK(total > 50);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* ------------------------------------------------ composites' direct rules ---- */

/* The composites under test: f(x...) of [4, 6] (layer norm: scale and bias [6]). */
typedef struct comp_case {
    const char *name;
    int n_in; /* 1, 2 (rms norm's scale) or 3 (layer norm's scale and bias) */
    kiln_value (*f)(kiln_graph *g, const kiln_value *x);
} comp_case;

static kiln_value c_softmax(kiln_graph *g, const kiln_value *x) {
    return kiln_softmax(g, x[0], 0);
}
static kiln_value c_log_softmax(kiln_graph *g, const kiln_value *x) {
    return kiln_log_softmax(g, x[0], -1);
}
static kiln_value c_lse(kiln_graph *g, const kiln_value *x) {
    return kiln_logsumexp(g, x[0], 1, (const int[]){1}, false);
}
static kiln_value c_lse_keep(kiln_graph *g, const kiln_value *x) {
    return kiln_logsumexp(g, x[0], 2, (const int[]){0, 1}, true);
}
static kiln_value c_xent(kiln_graph *g, const kiln_value *x) {
    return kiln_softmax_cross_entropy(
        g, x[0],
        kiln_constant(g, KILN_DTYPE_I64, 1, (const int64_t[]){4}, (const int64_t[]){5, 0, 3, 3}));
}
static kiln_value c_ln(kiln_graph *g, const kiln_value *x) {
    return kiln_layer_norm(g, x[0], x[1], x[2], 1e-5);
}
static kiln_value c_ln_bare(kiln_graph *g, const kiln_value *x) {
    return kiln_layer_norm(g, x[0], (kiln_value){0, 0}, (kiln_value){0, 0}, 1e-3);
}
/* over axis 0 of x^T [6, 4]: scale and bias [6] broadcast along it */
static kiln_value c_ln_axis0(kiln_graph *g, const kiln_value *x) {
    return kiln_layer_norm_axis(g, kiln_transpose(g, x[0], (const int[]){1, 0}), x[1], x[2], 0,
                                1e-5);
}
static kiln_value c_ln_axis0_bare(kiln_graph *g, const kiln_value *x) {
    return kiln_layer_norm_axis(g, x[0], KILN_VALUE_NONE, KILN_VALUE_NONE, -2, 1e-3);
}

static kiln_value c_relu(kiln_graph *g, const kiln_value *x) {
    return kiln_relu(g, x[0]);
}
static kiln_value c_rms(kiln_graph *g, const kiln_value *x) {
    return kiln_rms_norm(g, x[0], x[1], -1, 1e-5);
}
static kiln_value c_rms_bare(kiln_graph *g, const kiln_value *x) {
    return kiln_rms_norm(g, x[0], (kiln_value){0, 0}, 0, 1e-3);
}

static const comp_case comp_cases[] = {
    {"softmax", 1, c_softmax},
    {"log_softmax", 1, c_log_softmax},
    {"logsumexp", 1, c_lse},
    {"logsumexp keepdims", 1, c_lse_keep},
    {"cross-entropy", 1, c_xent},
    {"layer_norm", 3, c_ln},
    {"layer_norm bare", 1, c_ln_bare},
    {"layer_norm axis 0", 3, c_ln_axis0},
    {"layer_norm bare, axis -2", 1, c_ln_axis0_bare},
    {"relu", 1, c_relu},
    {"rms_norm", 2, c_rms},
    {"rms_norm bare, axis 0", 1, c_rms_bare},
};

/* Fixed, distinct weights of shape s: every output element matters to the loss. */
static kiln_value kiln_sin_free_weights(kiln_graph *g, const ir_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dims[i];
    double *w = malloc((size_t)(n ? n : 1) * sizeof *w);
    for (int64_t i = 0; i < n; i++) w[i] = 0.25 + 0.5 * (double)((i * 7) % 11) / 11.0;
    kiln_value v = kiln_constant(g, KILN_DTYPE_F64, s->rank, s->dims, w);
    free(w);
    return v;
}

/* loss = sum(w * f(x)) with fixed weights w, and its gradients; primitive: differentiate the
 * composite through its parts. Returns the node count before kiln_grad in *mark. */
static kiln_graph *comp_graph(kiln_context *ctx, const comp_case *c, bool primitive,
                              uint32_t *mark) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, c->name, &g);
    ad_set_primitive_rules_only(g, primitive);
    kiln_value x[3];
    x[0] = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, (const int64_t[]){4, 6});
    for (int i = 1; i < c->n_in; i++)
        x[i] =
            kiln_parameter(g, i == 1 ? "scale" : "bias", KILN_DTYPE_F64, 1, (const int64_t[]){6});
    kiln_value y = c->f(g, x);
    const ir_node *yn = &g->nodes[y.id];
    ir_shape ys = yn->shape;
    kiln_value w = kiln_sin_free_weights(g, &ys);
    kiln_value loss = kiln_reduce_sum(g, kiln_mul(g, w, y), 0, NULL, false);
    *mark = g->n_nodes;
    kiln_value grads[4] = {loss};
    CHECK_OK(ctx, kiln_grad(g, loss, c->n_in, x, grads + 1));
    CHECK_OK(ctx, kiln_graph_finish(g, 1 + c->n_in, grads));
    return g;
}

/* The planned peak of a compiled loss + gradient step: kind 0 the mean cross-entropy of
 * z [256, 2048] f32, kind 1 the mean square of rms_norm(z, scale), kind 2 that of two
 * residual layers h = h + rms_norm(h, s) @ w over h [256, 1024]; primitive: through the
 * composite's parts; fused false: compiled with fusion off. 0 if it could not be compiled. */
static uint64_t grad_peak(kiln_context *ctx, int kind, bool primitive, bool fused) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "peak", &g);
    ad_set_primitive_rules_only(g, primitive);
    kiln_value p[5], gr[5], loss;
    int n = kind == 0 ? 1 : kind == 1 ? 2 : 5;
    if (kind == 2) {
        kiln_value h = p[0] =
            kiln_parameter(g, "h", KILN_DTYPE_F32, 2, (const int64_t[]){256, 1024});
        for (int l = 0; l < 2; l++) {
            p[1 + 2 * l] = kiln_parameter(g, "s", KILN_DTYPE_F32, 1, (const int64_t[]){1024});
            p[2 + 2 * l] = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, (const int64_t[]){1024, 1024});
            kiln_value r = kiln_rms_norm(g, h, p[1 + 2 * l], -1, 1e-6);
            h = kiln_add(g, h, kiln_matmul(g, r, p[2 + 2 * l]));
        }
        loss = kiln_mean(g, kiln_mul(g, h, h), 0, NULL, false);
    } else if (kind == 0) {
        p[0] = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, (const int64_t[]){256, 2048});
        kiln_value lab = kiln_parameter(g, "labels", KILN_DTYPE_I32, 1, (const int64_t[]){256});
        loss = kiln_mean(g, kiln_softmax_cross_entropy(g, p[0], lab), 0, NULL, false);
    } else {
        p[0] = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, (const int64_t[]){256, 2048});
        p[1] = kiln_parameter(g, "scale", KILN_DTYPE_F32, 1, (const int64_t[]){2048});
        kiln_value y = kiln_rms_norm(g, p[0], p[1], -1, 1e-6);
        loss = kiln_mean(g, kiln_mul(g, y, y), 0, NULL, false);
    }
    CHECK_OK(ctx, kiln_grad(g, loss, n, p, gr));
    kiln_value outs[6] = {loss};
    for (int i = 0; i < n; i++) outs[1 + i] = gr[i];
    CHECK_OK(ctx, kiln_graph_finish(g, 1 + n, outs));
    kiln_executable *e = NULL;
    /* the rules' own saved values: no default recomputation of cheap ones on top */
    kiln_compile_options fused_o = {.disable_cheap_remat = true},
                         unfused = {.disable_fusion = true, .disable_cheap_remat = true};
    CHECK_OK(ctx, kiln_compile(g, fused ? &fused_o : &unfused, &e));
    kiln_memory_analysis ma;
    uint64_t peak = 0;
    if (e && !kiln_executable_get_memory_analysis(e, &ma)) peak = ma.peak_bytes;
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return peak;
}

/* logsumexp's and cross-entropy's gradients keep the softmax's precision at large logits:
 * an outside check found exp(x - lse) with lse rounded 4e-4 off in f32 at logits near 1e4,
 * and in bf16 near 100 a gradient summing to 0.91 (now exp(x - m) / s, composite_rules.c). */
static void test_lse_grad_precision(void) {
    kiln_context *ctx = test_context();
    static const struct {
        kiln_dtype t;
        double x[3], tol; /* relative, of the largest probability */
    } lse_cases[] = {{KILN_DTYPE_F32, {10000, 10001, 9999}, 4e-7},
                     {KILN_DTYPE_BF16, {100, 101, 99}, 8e-3},
                     {KILN_DTYPE_F16, {1000, 1001, 999}, 1e-3}};
    for (int k = 0; k < 3; k++) {
        kiln_dtype t = lse_cases[k].t;
        double e[3], sum = 0;
        for (int i = 0; i < 3; i++) sum += e[i] = exp(lse_cases[k].x[i] - lse_cases[k].x[1]);
        for (int ce = 0; ce < 2; ce++) {
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "lse", &g);
            kiln_value x = kiln_parameter(g, "x", t, 2, (const int64_t[]){1, 3}), dx;
            kiln_value lab = kiln_full(g, KILN_DTYPE_I32, 1, (const int64_t[]){1}, 2);
            int ax = 1;
            kiln_value l =
                ce ? kiln_softmax_cross_entropy(g, x, lab) : kiln_logsumexp(g, x, 1, &ax, false);
            CHECK_OK(ctx, kiln_grad(g, kiln_reduce_sum(g, l, 0, NULL, false), 1, &x, &dx));
            CHECK_OK(ctx, kiln_graph_finish(g, 1, &dx));
            uint16_t h[3];
            float f[3];
            for (int i = 0; i < 3; i++) f[i] = (float)lse_cases[k].x[i];
            if (t != KILN_DTYPE_F32)
                kiln_convert_host(ctx, KILN_DTYPE_F64, lse_cases[k].x, t, h, 3);
            kiln_array *arg = NULL, *out = NULL;
            kiln_array_create(ctx, t, 2, (const int64_t[]){1, 3},
                              t == KILN_DTYPE_F32 ? (const void *)f : (const void *)h, &arg);
            kiln_executable *ex = NULL;
            CHECK_OK(ctx, kiln_compile(g, NULL, &ex));
            if (ex) CHECK_OK(ctx, kiln_executable_run(ex, 1, &arg, 1, &out));
            double got[3] = {0, 0, 0};
            if (out) {
                uint16_t r[3];
                if (t == KILN_DTYPE_F32) {
                    kiln_array_copy_to_host(out, f, sizeof f);
                    for (int i = 0; i < 3; i++) got[i] = f[i];
                } else {
                    kiln_array_copy_to_host(out, r, sizeof r);
                    kiln_convert_host(ctx, t, r, KILN_DTYPE_F64, got, 3);
                }
            }
            for (int i = 0; i < 3; i++) {
                double want = e[i] / sum - (ce && i == 2 ? 1 : 0);
                CHECK_MSG(fabs(got[i] - want) <= lse_cases[k].tol * e[1] / sum,
                          "%s %s gradient %d: %.9g, exact %.9g", kiln_dtype_name(t),
                          ce ? "cross-entropy" : "logsumexp", i, got[i], want);
            }
            kiln_array_destroy(out), kiln_array_destroy(arg), kiln_executable_destroy(ex);
            kiln_graph_destroy(g);
        }
    }
    kiln_context_destroy(ctx);
}

/* The direct rules give the gradients the primitives' rules give, a backward pass that
 * reads no interior value of the composite but its recorded aux values, and (cross-entropy
 * at a realistic size) a smaller planned peak. */
static void test_composite_rules(void) {
    kiln_context *ctx = test_context();
    for (size_t i = 0; i < sizeof comp_cases / sizeof comp_cases[0]; i++) {
        const comp_case *c = &comp_cases[i];
        uint32_t mark_d = 0, mark_p = 0;
        kiln_graph *gd = comp_graph(ctx, c, false, &mark_d);
        kiln_graph *gp = comp_graph(ctx, c, true, &mark_p);
        /* the composite (the last recorded one is the outermost) and what backward reads */
        uint32_t n_comp;
        const ir_composite *all = trace_composites(gd, &n_comp);
        CHECK_MSG(n_comp > 0, "%s: not recorded", c->name);
        const ir_composite *comp = n_comp ? &all[n_comp - 1] : NULL;
        for (uint32_t id = mark_d; comp && id < gd->n_nodes; id++) {
            const ir_node *n = &gd->nodes[id];
            const uint32_t *in = ir_in(n);
            for (uint32_t k = 0; k < n->n_in; k++) {
                bool interior = in[k] >= comp->first && in[k] < comp->out;
                bool aux = in[k] == comp->aux[0] || in[k] == comp->aux[1] || in[k] == comp->aux[2];
                CHECK_MSG(!interior || aux, "%s: backward %%%u reads interior %%%u", c->name, id,
                          in[k]);
            }
        }
        uint64_t seed = test_seed(0xc0c0) + i;
        kiln_array *args[3];
        args[0] = cmp_random_array(ctx, KILN_DTYPE_F64, 2, (const int64_t[]){4, 6}, &seed);
        for (int k = 1; k < c->n_in; k++)
            args[k] = cmp_random_array(ctx, KILN_DTYPE_F64, 1, (const int64_t[]){6}, &seed);
        kiln_array *od[4] = {0}, *op[4] = {0};
        CHECK_OK(ctx, kiln_interpret(gd, c->n_in, args, 1 + c->n_in, od));
        CHECK_OK(ctx, kiln_interpret(gp, c->n_in, args, 1 + c->n_in, op));
        for (int k = 0; k < 1 + c->n_in && od[k] && op[k]; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s output %d", c->name, k);
            CHECK(cmp_arrays(od[k], op[k], 1e-6, 1e-10, what));
        }
        for (int k = 0; k < 1 + c->n_in; k++) kiln_array_destroy(od[k]), kiln_array_destroy(op[k]);
        /* compiled too */
        CHECK(cmp_graph(ctx, gd, c->n_in, args, NULL, 1e-5, NULL));
        for (int k = 0; k < c->n_in; k++) kiln_array_destroy(args[k]);
        kiln_graph_destroy(gd);
        kiln_graph_destroy(gp);
    }
    /* memory at a realistic size, direct vs through the parts: cross-entropy over
     * [256, 2048] f32 logits; rms norm of [256, 2048] activations with a scale */
    static const char *const what[2] = {"cross-entropy [256, 2048]", "rms_norm [256, 2048]"};
    for (int kind = 0; kind < 2; kind++) {
        uint64_t peak[2] = {0, 0};
        for (int primitive = 0; primitive < 2; primitive++)
            peak[primitive] = grad_peak(ctx, kind, primitive, true);
        printf("%s + grad: planned peak %llu B direct, %llu B through its parts\n", what[kind],
               (unsigned long long)peak[0], (unsigned long long)peak[1]);
        CHECK_MSG(peak[0] > 0 && peak[0] <= peak[1], "%s", what[kind]);
    }
    /* fusion recomputes rms norm's x * r inside the backward kernels, so both peaks above
     * are equal; without fusion the parts' rules keep it, which in a residual stack costs
     * one [256, 1024] f32 buffer more at the peak */
    uint64_t direct = grad_peak(ctx, 2, false, false), parts = grad_peak(ctx, 2, true, false);
    printf("two residual rms_norm layers [256, 1024] + grad, unfused: planned peak %llu B "
           "direct, %llu B through its parts\n",
           (unsigned long long)direct, (unsigned long long)parts);
    CHECK(direct > 0 && direct + 256 * 1024 * 4 <= parts);
    direct = grad_peak(ctx, 2, false, true), parts = grad_peak(ctx, 2, true, true);
    printf("two residual rms_norm layers [256, 1024] + grad, fused: planned peak %llu B direct, "
           "%llu B through its parts\n",
           (unsigned long long)direct, (unsigned long long)parts);
    CHECK(direct > 0 && direct <= parts);
    kiln_context_destroy(ctx);
}

int main(void) {
    RUN(test_finite_differences);
    RUN(test_half_gradients);
    RUN(test_conventions);
    RUN(test_stop_gradient);
    RUN(test_composite_rules);
    RUN(test_lse_grad_precision);
    RUN(test_second_derivatives);
    RUN(test_semantics);
    RUN(test_errors);
    RUN(test_compiled);
    RUN(test_jit);
    RUN(test_vjp_integer_outputs);
    RUN(test_random_programs);
    RUN(test_fault_injection);
    return test_summary("test_autodiff");
}
