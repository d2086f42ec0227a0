/* conv.c — convolutions and windowed reductions (jax.lax.conv_general_dilated,
 * lax.reduce_window, flax's avg_pool).
 *
 * A convolution is one node (IR_CONV, ir.h), of one of three kinds over one geometry: the
 * forward convolution, the gradient of its lhs from (cotangent, kernel), the gradient of
 * its kernel from (lhs, cotangent): cuDNN's forward, backward-data and backward-filter.
 * Each kind's gradients are the other kinds (src/autodiff/rules.c), so a training step's
 * convolutions, of any order, reach the backend as such nodes, and a backend with a
 * convolution kernel (KN_LIB_CONV: CUDA's implicit GEMM) runs every one of them without
 * the patch matrix. Everywhere else the compiler rewrites each node into its primitive
 * form below before fusion (src/passes/expand.c); the reference evaluates the node's
 * definition directly.
 *
 * The primitive form of the forward is im2col + GEMM: the input is brought to
 * channels-last [N, X..., C], padded (lhs_dilation is the pad's interior), and each kernel
 * position k takes the strided slice xp[:, k * rhs_dilation + y * stride, :]; their
 * concatenation is the patch matrix [N * P, K * C] (P output positions, K kernel
 * positions). When the output has fewer positions than the window (P < K: a weight
 * gradient written as a convolution, its window the activation) the same matrix is cut by
 * output position instead, each y taking the window xp[:, y * stride + k * rhs_dilation, :]
 * (P slices, not K). It is a value of the graph, so the memory plan holds it like any
 * other buffer and planned peak stays equal to measured. One dot_general with the kernel
 * as [K * I, O] (batched over the G feature groups when there are several) gives the
 * result, transposed to the asked layout. Fusion folds the slices into the kernel that
 * writes the patches. The gradient kinds are that form's transposes, what the chain rule
 * through its pieces gives: the kernel's gradient is the patches against the cotangent;
 * the lhs's is the cotangent times the kernel, spread back through the slices (a sum of
 * padded pieces: col2im, in f32 for 16-bit values so that it rounds once as the kernels
 * do) and the pad.
 *
 * A window reduction is separable: the max (sum, min) over a box is the max over the last
 * axis of the max over the one before, and so on, so each axis costs its window's length
 * in slices, not the product. The max is a select chain, acc = s > acc ? s : acc, not
 * kiln_max: a tie keeps the earlier element, so the gradient (the select's) reaches the
 * first maximum; reducing the last axis first and the leading axes after makes "first"
 * row-major over the window, XLA's select_and_scatter order.
 *
 * Invariants: every user mistake is found before the first node is emitted, so an error
 * names the public call, the operands' types and the bad argument; after that only
 * builders run, which return the invalid value once the graph holds an error. */
#include "trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NS_MAX KILN_CONV_MAX_SPATIAL
/* The largest stride, dilation and padding (the IR's bound: ir_conv_geometry). */
#define DIM_LIM ((int64_t)1 << 40)

/* The geometry of one convolution, in canonical order (spatial axes as the specs list). */
typedef struct conv_geom {
    int ns;                                                /* spatial axes */
    int lhs[NS_MAX + 2], rhs[NS_MAX + 2], out[NS_MAX + 2]; /* the specs */
    int64_t n, c, o, i, groups;
    int64_t in[NS_MAX], k[NS_MAX], stride[NS_MAX], lo[NS_MAX], hi[NS_MAX];
    int64_t ld[NS_MAX], rd[NS_MAX], osz[NS_MAX];
} conv_geom;

static int64_t or_one(int64_t v) {
    return v == 0 ? 1 : v;
}

/* A dilated extent: (n - 1) * d + 1, or 0 for n = 0 (XLA's dilate_dim). */
static int64_t dilate(int64_t n, int64_t d) {
    return n == 0 ? 0 : (n - 1) * d + 1;
}

/* Output size of a window of (dilated) extent w over `padded` elements at stride s. */
static int64_t window_count(int64_t padded, int64_t w, int64_t s) {
    return padded < w ? 0 : (padded - w) / s + 1;
}

/* lax.padtype_to_pads for one axis: in (undilated), w the dilated window. */
static void pads_of(kiln_padding p, int64_t in, int64_t w, int64_t s, int64_t *lo, int64_t *hi) {
    if (p == KILN_PADDING_VALID) {
        *lo = *hi = 0;
        return;
    }
    int64_t out = (in + s - 1) / s;
    int64_t total = (out - 1) * s + w - in;
    if (total < 0) total = 0;
    *lo = p == KILN_PADDING_SAME ? total / 2 : total - total / 2;
    *hi = total - *lo;
}

static bool valid_padding(kiln_padding p) {
    return p == KILN_PADDING_EXPLICIT || p == KILN_PADDING_VALID || p == KILN_PADDING_SAME ||
           p == KILN_PADDING_SAME_LOWER;
}

static bool is_perm(const int *p, int n) {
    bool seen[NS_MAX + 2] = {false};
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) return false;
        seen[p[i]] = true;
    }
    return true;
}

/* Fills the three specs from the layout (NCHW/OIHW, NHWC/HWIO or the user's). */
static bool conv_specs(const kiln_conv_options *o, int rank, conv_geom *gm, char *why, size_t n) {
    int ns = rank - 2;
    if (o->layout == KILN_CONV_SPECS) {
        memcpy(gm->lhs, o->lhs_spec, sizeof gm->lhs);
        memcpy(gm->rhs, o->rhs_spec, sizeof gm->rhs);
        memcpy(gm->out, o->out_spec, sizeof gm->out);
        const char *bad = !is_perm(gm->lhs, rank)   ? "lhs_spec"
                          : !is_perm(gm->rhs, rank) ? "rhs_spec"
                          : !is_perm(gm->out, rank) ? "out_spec"
                                                    : NULL;
        if (bad) snprintf(why, n, "%s is not a permutation of 0..%d", bad, rank - 1);
        return !bad;
    }
    if (o->layout != KILN_CONV_NCHW && o->layout != KILN_CONV_NHWC) {
        snprintf(why, n, "layout %d is not a kiln_conv_layout (NCHW, NHWC or SPECS)",
                 (int)o->layout);
        return false;
    }
    bool nhwc = o->layout == KILN_CONV_NHWC;
    gm->lhs[0] = gm->out[0] = 0;
    gm->lhs[1] = gm->out[1] = nhwc ? rank - 1 : 1;
    gm->rhs[0] = nhwc ? rank - 1 : 0;
    gm->rhs[1] = nhwc ? rank - 2 : 1;
    for (int d = 0; d < ns; d++) {
        gm->lhs[2 + d] = gm->out[2 + d] = nhwc ? 1 + d : 2 + d;
        gm->rhs[2 + d] = nhwc ? d : 2 + d;
    }
    return true;
}

/* Strides, dilations, padding and output sizes; false with *why set on a bad option. */
static bool conv_window(const kiln_conv_options *o, conv_geom *gm, char *why, size_t n) {
    for (int d = 0; d < gm->ns; d++) {
        int64_t s = or_one(o->window_strides[d]), ld = or_one(o->lhs_dilation[d]);
        int64_t rd = or_one(o->rhs_dilation[d]);
        if (s < 1 || ld < 1 || rd < 1 || s > DIM_LIM || ld > DIM_LIM || rd > DIM_LIM) {
            snprintf(why, n,
                     "spatial axis %d: window_strides %lld, lhs_dilation %lld and "
                     "rhs_dilation %lld must be in [1, 2^40]",
                     d, (long long)s, (long long)ld, (long long)rd);
            return false;
        }
        if (gm->k[d] < 1) {
            snprintf(why, n, "spatial axis %d of the kernel has size %lld; it must be >= 1", d,
                     (long long)gm->k[d]);
            return false;
        }
        if (o->padding != KILN_PADDING_EXPLICIT && ld != 1) {
            snprintf(why, n,
                     "string padding with lhs_dilation %lld on spatial axis %d (JAX "
                     "refuses it too: give explicit pad_lo/pad_hi)",
                     (long long)ld, d);
            return false;
        }
        int64_t dk, di; /* the dilated kernel and lhs, each under 2^62 */
        if (!kn_mul_i64(gm->k[d] - 1, rd, &dk) || dk >= IR_DIM_MAX ||
            !kn_mul_i64(gm->in[d] ? gm->in[d] - 1 : 0, ld, &di) || di >= IR_DIM_MAX) {
            snprintf(why, n,
                     "spatial axis %d: the dilated lhs (%lld by %lld) or kernel (%lld by %lld) "
                     "is larger than 2^62",
                     d, (long long)gm->in[d], (long long)ld, (long long)gm->k[d], (long long)rd);
            return false;
        }
        int64_t w = dilate(gm->k[d], rd), lo = o->pad_lo[d], hi = o->pad_hi[d];
        if (o->padding != KILN_PADDING_EXPLICIT) pads_of(o->padding, gm->in[d], w, s, &lo, &hi);
        int64_t padded = dilate(gm->in[d], ld) + lo + hi;
        if (lo < -DIM_LIM || hi < -DIM_LIM || padded < 0 || lo > DIM_LIM || hi > DIM_LIM) {
            snprintf(why, n, "spatial axis %d: padding (%lld, %lld) leaves %lld elements of %lld",
                     d, (long long)lo, (long long)hi, (long long)padded, (long long)gm->in[d]);
            return false;
        }
        gm->stride[d] = s, gm->ld[d] = ld, gm->rd[d] = rd, gm->lo[d] = lo, gm->hi[d] = hi;
        gm->osz[d] = window_count(padded, w, s);
    }
    return true;
}

/* Reads the operands' shapes through the specs and checks channels and groups. */
static bool conv_shapes(const kiln_conv_options *o, const ir_shape *ls, const ir_shape *rs,
                        conv_geom *gm, char *why, size_t n) {
    gm->n = ls->dims[gm->lhs[0]], gm->c = ls->dims[gm->lhs[1]];
    gm->o = rs->dims[gm->rhs[0]], gm->i = rs->dims[gm->rhs[1]];
    for (int d = 0; d < gm->ns; d++) {
        gm->in[d] = ls->dims[gm->lhs[2 + d]];
        gm->k[d] = rs->dims[gm->rhs[2 + d]];
    }
    gm->groups = or_one(o->feature_group_count);
    int64_t bg = or_one(o->batch_group_count);
    if (bg != 1) {
        snprintf(why, n, "batch_group_count %lld: only 1 is supported", (long long)bg);
        return false;
    }
    if (gm->groups < 1) {
        snprintf(why, n, "feature_group_count %lld must be >= 1", (long long)gm->groups);
        return false;
    }
    int64_t ig;
    if (!kn_mul_i64(gm->i, gm->groups, &ig) || ig > IR_DIM_MAX) {
        snprintf(why, n, "%lld input features per group x %lld groups overflows", (long long)gm->i,
                 (long long)gm->groups);
        return false;
    }
    if (gm->c != ig) {
        snprintf(why, n,
                 "lhs has %lld input features; rhs takes %lld per group x %lld "
                 "group(s) = %lld",
                 (long long)gm->c, (long long)gm->i, (long long)gm->groups,
                 (long long)(gm->i * gm->groups));
        return false;
    }
    if (gm->o % gm->groups != 0) {
        snprintf(why, n, "feature_group_count %lld does not divide the %lld output features",
                 (long long)gm->groups, (long long)gm->o);
        return false;
    }
    return true;
}

/* Every check of kiln_conv_general_dilated; fills *gm or records the error. */
static bool conv_check(kiln_graph *g, const char *op, kiln_value lhs, kiln_value rhs,
                       const kiln_conv_options *o, conv_geom *gm) {
    if (!trace_ready(g, op)) return false;
    const ir_node *ln = trace_node(g, op, lhs, "lhs");
    if (!ln) return false;
    const ir_node *rn = trace_node(g, op, rhs, "rhs");
    if (!rn) return false;
    uint32_t ids[2] = {lhs.id, rhs.id};
    if (ln->dtype != rn->dtype || ln->dtype == KILN_DTYPE_BOOL) {
        trace_fail_on(g, ids, 2, KILN_STATUS_DTYPE, op,
                      "lhs and rhs need one numeric dtype (no promotion)");
        return false;
    }
    int rank = ln->shape.rank;
    if (rank != rn->shape.rank || rank < 3 || rank > NS_MAX + 2) {
        trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op,
                      "lhs and rhs need one rank, 3 to %d (1 to %d spatial axes)", NS_MAX + 2,
                      NS_MAX);
        return false;
    }
    gm->ns = rank - 2;
    char why[256];
    if (!valid_padding(o->padding)) {
        trace_fail_on(g, ids, 2, KILN_STATUS_INVALID_ARGUMENT, op,
                      "padding %d is not a kiln_padding", (int)o->padding);
        return false;
    }
    if (!conv_specs(o, rank, gm, why, sizeof why) ||
        !conv_shapes(o, &ln->shape, &rn->shape, gm, why, sizeof why) ||
        !conv_window(o, gm, why, sizeof why)) {
        trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op, "%s", why);
        return false;
    }
    return true;
}

/* x transposed so that its axis perm[i] becomes axis i; x itself for the identity. */
static kiln_value permute(kiln_graph *g, kiln_value x, int rank, const int *perm) {
    for (int i = 0; i < rank; i++)
        if (perm[i] != i) return kiln_transpose(g, x, perm);
    return x;
}

/* lhs as [N, X..., C], padded and base-dilated: the array the patches are cut from. */
static kiln_value conv_input(kiln_graph *g, kiln_value lhs, kiln_dtype t, const conv_geom *gm) {
    int rank = gm->ns + 2, perm[NS_MAX + 2];
    perm[0] = gm->lhs[0], perm[rank - 1] = gm->lhs[1];
    for (int d = 0; d < gm->ns; d++) perm[1 + d] = gm->lhs[2 + d];
    kiln_value x = permute(g, lhs, rank, perm);
    int64_t lo[NS_MAX + 2] = {0}, hi[NS_MAX + 2] = {0}, in[NS_MAX + 2] = {0};
    bool any = false;
    for (int d = 0; d < gm->ns; d++) {
        lo[1 + d] = gm->lo[d], hi[1 + d] = gm->hi[d], in[1 + d] = gm->ld[d] - 1;
        any |= gm->lo[d] != 0 || gm->hi[d] != 0 || gm->ld[d] != 1;
    }
    return any ? kiln_pad(g, x, kiln_scalar(g, t, 0), lo, hi, in) : x;
}

/* The concatenation along axis 1 of one strided slice of xp per position of the grid
 * `pos` (row-major over the spatial axes): the slice of position q starts at q[d] *
 * pos_step[d] and takes span[d] elements span_step[d] apart on each spatial axis, all of
 * N and C, reshaped to `row`. */
static kiln_value conv_slices(kiln_graph *g, const char *op, kiln_value xp, const conv_geom *gm,
                              const int64_t *pos, const int64_t *pos_step, const int64_t *span,
                              const int64_t *span_step, int row_rank, const int64_t *row) {
    int64_t count = 1;
    for (int d = 0; d < gm->ns; d++) count *= pos[d];
    kiln_value *parts = host_alloc(g->ctx, (size_t)count * sizeof *parts);
    if (!parts)
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %lld slices failed",
                          (long long)count);
    int rank = gm->ns + 2;
    int64_t start[NS_MAX + 2] = {0}, limit[NS_MAX + 2], stride[NS_MAX + 2];
    limit[0] = gm->n, limit[rank - 1] = gm->c, stride[0] = stride[rank - 1] = 1;
    for (int64_t q = 0; q < count; q++) {
        int64_t rest = q;
        for (int d = gm->ns - 1; d >= 0; d--) {
            start[1 + d] = rest % pos[d] * pos_step[d];
            rest /= pos[d];
            limit[1 + d] = start[1 + d] + (span[d] - 1) * span_step[d] + 1;
            stride[1 + d] = span_step[d];
        }
        parts[q] = kiln_reshape(g, kiln_slice(g, xp, start, limit, stride), row_rank, row);
    }
    kiln_value out = count == 1 ? parts[0] : kiln_concatenate(g, (int)count, parts, 1);
    host_free(g->ctx, parts, (size_t)count * sizeof *parts);
    return out;
}

/* The patch matrix [N * P, K, C]: kernel position k's strided slice of xp per row block.
 * When the output has fewer positions than the window (P < K: JAX's weight gradients, a
 * convolution whose window is the activation, 28x28 over a 3x3 output) the same matrix is
 * cut by output position instead, each y taking its window [N, 1, K, C]: P slices, not K
 * (9 instead of 784). */
static kiln_value conv_patches(kiln_graph *g, const char *op, kiln_value xp, const conv_geom *gm,
                               int64_t kk, int64_t np) {
    int64_t per = 1; /* output positions P */
    for (int d = 0; d < gm->ns; d++) per *= gm->osz[d];
    if (per >= kk) {
        int64_t row[3] = {np, 1, gm->c};
        return conv_slices(g, op, xp, gm, gm->k, gm->rd, gm->osz, gm->stride, 3, row);
    }
    int64_t row[4] = {gm->n, 1, kk, gm->c}, dims[3] = {np, kk, gm->c};
    kiln_value out = conv_slices(g, op, xp, gm, gm->osz, gm->stride, gm->k, gm->rd, 4, row);
    return kiln_reshape(g, out, 3, dims);
}

/* rhs as [K, I, O] (kernel positions row-major over the spatial axes). */
static kiln_value conv_kernel(kiln_graph *g, kiln_value rhs, const conv_geom *gm, int64_t kk) {
    int rank = gm->ns + 2, perm[NS_MAX + 2];
    for (int d = 0; d < gm->ns; d++) perm[d] = gm->rhs[2 + d];
    perm[rank - 2] = gm->rhs[1], perm[rank - 1] = gm->rhs[0];
    int64_t dims[3] = {kk, gm->i, gm->o};
    return kiln_reshape(g, permute(g, rhs, rank, perm), 3, dims);
}

/* patches [NP, K, C] times kernel [K, I, O] -> [NP, O], group by group when G > 1. */
static kiln_value conv_product(kiln_graph *g, kiln_value pat, kiln_value w, const conv_geom *gm,
                               int64_t kk, int64_t np) {
    int64_t gc = gm->groups, og = gm->o / gc;
    kiln_dot_dims dd = {0};
    if (gc == 1) {
        int64_t pd[2] = {np, kk * gm->c}, wd[2] = {kk * gm->i, gm->o};
        dd.n_contract = 1, dd.lhs_contract[0] = 1, dd.rhs_contract[0] = 0;
        return kiln_dot_general(g, kiln_reshape(g, pat, 2, pd), kiln_reshape(g, w, 2, wd), &dd);
    }
    int64_t pd[4] = {np, kk, gc, gm->i}, wd[4] = {kk, gm->i, gc, og};
    dd.n_contract = 2, dd.lhs_contract[0] = 1, dd.lhs_contract[1] = 3;
    dd.rhs_contract[0] = 0, dd.rhs_contract[1] = 1;
    dd.n_batch = 1, dd.lhs_batch[0] = 2, dd.rhs_batch[0] = 2;
    kiln_value y = kiln_dot_general(g, kiln_reshape(g, pat, 4, pd), kiln_reshape(g, w, 4, wd),
                                    &dd); /* [G, NP, O/G] */
    int perm[3] = {1, 0, 2};
    int64_t od[2] = {np, gm->o};
    return kiln_reshape(g, kiln_transpose(g, y, perm), 2, od);
}

/* y [NP, O] as [N, Y..., O], then in out_spec's layout. */
static kiln_value conv_output(kiln_graph *g, kiln_value y, const conv_geom *gm) {
    int rank = gm->ns + 2, perm[NS_MAX + 2];
    int64_t dims[NS_MAX + 2];
    dims[0] = gm->n, dims[rank - 1] = gm->o;
    for (int d = 0; d < gm->ns; d++) dims[1 + d] = gm->osz[d];
    y = kiln_reshape(g, y, rank, dims);
    perm[gm->out[0]] = 0, perm[gm->out[1]] = rank - 1;
    for (int d = 0; d < gm->ns; d++) perm[gm->out[2 + d]] = 1 + d;
    return permute(g, y, rank, perm);
}

/* The CONV node of `kind` with gm's geometry over a, b (the public builder's, and the
 * gradients': trace_conv). */
static kiln_value conv_node(kiln_graph *g, const char *op, int kind, kiln_value a, kiln_value b,
                            const conv_geom *gm) {
    ir_node n = {.op = IR_CONV};
    n.a.conv.kind = kind;
    for (int d = 0; d < gm->ns + 2; d++)
        n.a.conv.lhs[d] = gm->lhs[d], n.a.conv.rhs[d] = gm->rhs[d], n.a.conv.out[d] = gm->out[d];
    for (int d = 0; d < gm->ns; d++) {
        n.a.conv.stride[d] = gm->stride[d], n.a.conv.lo[d] = gm->lo[d];
        n.a.conv.hi[d] = gm->hi[d], n.a.conv.ld[d] = gm->ld[d], n.a.conv.rd[d] = gm->rd[d];
        n.a.conv.sizes[d] = kind == IR_CONV_FORWARD      ? gm->osz[d]
                            : kind == IR_CONV_INPUT_GRAD ? gm->in[d]
                                                         : gm->k[d];
    }
    n.a.conv.groups = (int)gm->groups;
    uint32_t in[2] = {a.id, b.id};
    return trace_emit(g, op, &n, in, 2);
}

kiln_value kiln_conv_general_dilated(kiln_graph *g, kiln_value lhs, kiln_value rhs,
                                     const kiln_conv_options *opts) {
    const char *op = "kiln_conv_general_dilated";
    static const kiln_conv_options defaults;
    const kiln_conv_options *o = opts ? opts : &defaults;
    conv_geom gm;
    if (!conv_check(g, op, lhs, rhs, o, &gm)) return KN_NONE;
    if (gm.groups > INT32_MAX)
        return trace_fail(g, KILN_STATUS_SHAPE, op, "feature_group_count %lld is above 2^31 - 1",
                          (long long)gm.groups);
    return conv_node(g, op, IR_CONV_FORWARD, lhs, rhs, &gm);
}

/* --------------------------------------------- the node's three kinds ---- */

/* gm from CONV node n's attributes and the shapes of a and b, values of g standing for its
 * operands (n may belong to another graph). */
static bool geom_of(kiln_graph *g, const char *op, const ir_node *n, kiln_value a, kiln_value b,
                    conv_geom *gm, ir_conv_geom *ig) {
    ir_node tmp = *n;
    tmp.n_in = 2, tmp.in_heap = NULL;
    tmp.in_inline[0] = a.id, tmp.in_inline[1] = b.id;
    char msg[256];
    if (ir_conv_geometry(g, &tmp, ig, msg, sizeof msg)) {
        trace_fail(g, KILN_STATUS_INTERNAL, op, "%s", msg);
        return false;
    }
    memset(gm, 0, sizeof *gm);
    gm->ns = ig->ns;
    for (int d = 0; d < ig->ns + 2; d++)
        gm->lhs[d] = n->a.conv.lhs[d], gm->rhs[d] = n->a.conv.rhs[d], gm->out[d] = n->a.conv.out[d];
    gm->n = ig->n, gm->c = ig->c, gm->o = ig->o, gm->i = ig->i, gm->groups = ig->groups;
    for (int d = 0; d < ig->ns; d++) {
        gm->in[d] = ig->in[d], gm->k[d] = ig->k[d], gm->osz[d] = ig->out[d];
        gm->stride[d] = n->a.conv.stride[d], gm->lo[d] = n->a.conv.lo[d];
        gm->hi[d] = n->a.conv.hi[d], gm->ld[d] = n->a.conv.ld[d], gm->rd[d] = n->a.conv.rd[d];
    }
    return true;
}

kiln_value trace_conv(kiln_graph *g, const char *op, const ir_node *n, int kind, kiln_value a,
                      kiln_value b) {
    if (!trace_ready(g, op)) return KN_NONE;
    ir_conv_geom ig;
    char msg[256];
    if (ir_conv_geometry(g, n, &ig, msg, sizeof msg))
        return trace_fail(g, KILN_STATUS_INTERNAL, op, "%s", msg);
    ir_node t = {.op = IR_CONV};
    t.a.conv = n->a.conv; /* n's geometry; the kind's result sizes */
    t.a.conv.kind = kind;
    const int64_t *sizes = kind == IR_CONV_FORWARD      ? ig.out
                           : kind == IR_CONV_INPUT_GRAD ? ig.in
                                                        : ig.k;
    memcpy(t.a.conv.sizes, sizes, sizeof t.a.conv.sizes);
    uint32_t in[2] = {a.id, b.id};
    return trace_emit(g, op, &t, in, 2);
}

/* The inverse of permutation p of n axes. */
static void invert(const int *p, int n, int *inv) {
    for (int i = 0; i < n; i++) inv[p[i]] = i;
}

/* A cotangent in out_spec's layout as [N * P, O] (conv_output undone). */
static kiln_value conv_ct_matrix(kiln_graph *g, kiln_value ct, const conv_geom *gm, int64_t np) {
    int rank = gm->ns + 2, perm[NS_MAX + 2];
    perm[0] = gm->out[0], perm[rank - 1] = gm->out[1];
    for (int d = 0; d < gm->ns; d++) perm[1 + d] = gm->out[2 + d];
    int64_t dims[2] = {np, gm->o};
    return kiln_reshape(g, permute(g, ct, rank, perm), 2, dims);
}

/* The patches' cotangent [NP, K, C]: ct [NP, O] times the kernel [K, I, O] transposed,
 * group by group when G > 1 (conv_product's transpose for its patches). */
static kiln_value conv_patches_ct(kiln_graph *g, kiln_value ctm, kiln_value w, const conv_geom *gm,
                                  int64_t kk, int64_t np) {
    int64_t gc = gm->groups, og = gm->o / gc, pd[3] = {np, kk, gm->c};
    kiln_dot_dims dd = {0};
    if (gc == 1) {
        int64_t wd[2] = {kk * gm->i, gm->o};
        dd.n_contract = 1, dd.lhs_contract[0] = 1, dd.rhs_contract[0] = 1;
        return kiln_reshape(g, kiln_dot_general(g, ctm, kiln_reshape(g, w, 2, wd), &dd), 3, pd);
    }
    int64_t cd[3] = {np, gc, og}, wd[4] = {kk, gm->i, gc, og};
    dd.n_contract = 1, dd.lhs_contract[0] = 2, dd.rhs_contract[0] = 3;
    dd.n_batch = 1, dd.lhs_batch[0] = 1, dd.rhs_batch[0] = 2;
    kiln_value p = kiln_dot_general(g, kiln_reshape(g, ctm, 3, cd), kiln_reshape(g, w, 4, wd),
                                    &dd); /* [G, NP, K, I] */
    int perm[4] = {1, 2, 0, 3};
    return kiln_reshape(g, kiln_transpose(g, p, perm), 3, pd);
}

/* col2im: the padded input's cotangent [N, padded..., C] from the patches' [NP, K, C],
 * each piece of conv_patches put back where it was cut (a pad whose interior is the
 * slice's step) and the pieces summed. */
static kiln_value conv_col2im(kiln_graph *g, kiln_value dpat, const conv_geom *gm, kiln_dtype t,
                              int64_t kk) {
    int rank = gm->ns + 2;
    int64_t per = 1, padded[NS_MAX];
    for (int d = 0; d < gm->ns; d++) {
        per *= gm->osz[d];
        padded[d] = dilate(gm->in[d], gm->ld[d]) + gm->lo[d] + gm->hi[d];
    }
    bool by_k = per >= kk; /* conv_patches' choice: a piece per kernel position, or per y */
    const int64_t *pos = by_k ? gm->k : gm->osz, *pos_step = by_k ? gm->rd : gm->stride;
    const int64_t *span = by_k ? gm->osz : gm->k, *span_step = by_k ? gm->stride : gm->rd;
    int64_t count = by_k ? kk : per, four[4] = {gm->n, per, kk, gm->c};
    kiln_value m = kiln_reshape(g, dpat, 4, four); /* [N, P, K, C] */
    kiln_value zero = kiln_scalar(g, t, 0), sum = KN_NONE;
    for (int64_t q = 0; q < count; q++) {
        int64_t start[4] = {0}, limit[4] = {gm->n, per, kk, gm->c}, step[4] = {1, 1, 1, 1};
        if (by_k)
            start[2] = q, limit[2] = q + 1;
        else
            start[1] = q, limit[1] = q + 1;
        int64_t dims[NS_MAX + 2], lo[NS_MAX + 2] = {0}, hi[NS_MAX + 2] = {0}, in[NS_MAX + 2] = {0};
        dims[0] = gm->n, dims[rank - 1] = gm->c;
        int64_t rest = q;
        for (int d = gm->ns - 1; d >= 0; d--) {
            int64_t at = rest % pos[d] * pos_step[d];
            rest /= pos[d];
            dims[1 + d] = span[d];
            lo[1 + d] = at, in[1 + d] = span_step[d] - 1;
            hi[1 + d] = padded[d] - (at + (span[d] - 1) * span_step[d] + 1);
        }
        kiln_value piece = kiln_reshape(g, kiln_slice(g, m, start, limit, step), rank, dims);
        piece = kiln_pad(g, piece, zero, lo, hi, in);
        sum = q == 0 ? piece : kiln_add(g, sum, piece);
    }
    return sum;
}

/* The lhs's cotangent in lhs_spec's layout from the padded input's (conv_input undone: the
 * pad's transpose crops what it added and restores what it cropped, then every ld-th
 * element is the lhs's). */
static kiln_value conv_input_ct(kiln_graph *g, kiln_value dxp, const conv_geom *gm, kiln_dtype t) {
    int rank = gm->ns + 2, perm[NS_MAX + 2], inv[NS_MAX + 2];
    int64_t lo[NS_MAX + 2] = {0}, hi[NS_MAX + 2] = {0}, in[NS_MAX + 2] = {0};
    int64_t start[NS_MAX + 2] = {0}, limit[NS_MAX + 2], step[NS_MAX + 2];
    bool pad = false, dil = false;
    limit[0] = gm->n, limit[rank - 1] = gm->c, step[0] = step[rank - 1] = 1;
    for (int d = 0; d < gm->ns; d++) {
        lo[1 + d] = -gm->lo[d], hi[1 + d] = -gm->hi[d];
        pad |= gm->lo[d] != 0 || gm->hi[d] != 0;
        limit[1 + d] = dilate(gm->in[d], gm->ld[d]), step[1 + d] = gm->ld[d];
        dil |= gm->ld[d] != 1;
    }
    kiln_value x = pad ? kiln_pad(g, dxp, kiln_scalar(g, t, 0), lo, hi, in) : dxp;
    if (dil) x = kiln_slice(g, x, start, limit, step);
    perm[0] = gm->lhs[0], perm[rank - 1] = gm->lhs[1];
    for (int d = 0; d < gm->ns; d++) perm[1 + d] = gm->lhs[2 + d];
    invert(perm, rank, inv);
    return permute(g, x, rank, inv);
}

/* The kernel's cotangent in rhs_spec's layout: the patches [NP, K, C] against ct [NP, O]. */
static kiln_value conv_filter_ct(kiln_graph *g, kiln_value pat, kiln_value ctm, const conv_geom *gm,
                                 int64_t kk, int64_t np) {
    int rank = gm->ns + 2, perm[NS_MAX + 2], inv[NS_MAX + 2];
    int64_t gc = gm->groups, og = gm->o / gc;
    kiln_dot_dims dd = {0};
    kiln_value wk; /* [K, I, O] */
    int64_t kio[3] = {kk, gm->i, gm->o};
    if (gc == 1) {
        int64_t pd[2] = {np, kk * gm->c};
        dd.n_contract = 1, dd.lhs_contract[0] = 0, dd.rhs_contract[0] = 0;
        wk = kiln_reshape(g, kiln_dot_general(g, kiln_reshape(g, pat, 2, pd), ctm, &dd), 3, kio);
    } else {
        int64_t pd[4] = {np, kk, gc, gm->i}, cd[3] = {np, gc, og};
        dd.n_contract = 1, dd.lhs_contract[0] = 0, dd.rhs_contract[0] = 0;
        dd.n_batch = 1, dd.lhs_batch[0] = 2, dd.rhs_batch[0] = 1;
        kiln_value p = kiln_dot_general(g, kiln_reshape(g, pat, 4, pd), kiln_reshape(g, ctm, 3, cd),
                                        &dd); /* [G, K, I, O/G] */
        int tp[4] = {1, 2, 0, 3};
        wk = kiln_reshape(g, kiln_transpose(g, p, tp), 3, kio);
    }
    int64_t dims[NS_MAX + 2];
    for (int d = 0; d < gm->ns; d++) dims[d] = gm->k[d];
    dims[rank - 2] = gm->i, dims[rank - 1] = gm->o;
    for (int d = 0; d < gm->ns; d++) perm[d] = gm->rhs[2 + d];
    perm[rank - 2] = gm->rhs[1], perm[rank - 1] = gm->rhs[0];
    invert(perm, rank, inv);
    return permute(g, kiln_reshape(g, wk, rank, dims), rank, inv);
}

kiln_value trace_conv_primitives(kiln_graph *g, const ir_node *n, kiln_value a, kiln_value b) {
    const char *op = "convolution";
    conv_geom gm;
    ir_conv_geom ig;
    if (!geom_of(g, op, n, a, b, &gm, &ig)) return KN_NONE;
    kiln_dtype t = g->nodes[a.id].dtype;
    int kind = n->a.conv.kind, rank = gm.ns + 2;
    const ir_shape *res = kind == IR_CONV_FORWARD      ? &ig.res
                          : kind == IR_CONV_INPUT_GRAD ? &ig.lhs
                                                       : &ig.rhs;
    int64_t kk = 1, p = 1;
    for (int d = 0; d < gm.ns; d++) kk *= gm.k[d], p *= gm.osz[d];
    int64_t np = gm.n * p;
    /* nothing to sum, or nothing to write: zeros of the result's shape */
    if (np == 0 || gm.o == 0 || gm.i == 0) return kiln_full(g, t, rank, res->dims, 0);
    if (kind == IR_CONV_FORWARD) {
        kiln_value pat = conv_patches(g, op, conv_input(g, a, t, &gm), &gm, kk, np);
        return conv_output(g, conv_product(g, pat, conv_kernel(g, b, &gm, kk), &gm, kk, np), &gm);
    }
    if (kind == IR_CONV_INPUT_GRAD) {
        /* 16-bit operands: the patches' cotangent and its col2im sums in f32, rounded once
         * at the end, as the node's kernels and the reference (and XLA) compute it; in the
         * dtype the K pieces would each be rounded before they are summed */
        bool half = ir_dtype_is_half(t);
        kiln_dtype at = half ? KILN_DTYPE_F32 : t;
        kiln_value ctm = conv_ct_matrix(g, a, &gm, np), wk = conv_kernel(g, b, &gm, kk);
        if (half) ctm = kiln_convert(g, ctm, at), wk = kiln_convert(g, wk, at);
        kiln_value dpat = conv_patches_ct(g, ctm, wk, &gm, kk, np);
        kiln_value dx = conv_input_ct(g, conv_col2im(g, dpat, &gm, at, kk), &gm, at);
        return half ? kiln_convert(g, dx, t) : dx;
    }
    kiln_value pat = conv_patches(g, op, conv_input(g, a, t, &gm), &gm, kk, np);
    return conv_filter_ct(g, pat, conv_ct_matrix(g, b, &gm, np), &gm, kk, np);
}

/* ------------------------------------------------------------ windows ---- */

/* The geometry of a window reduction, one entry per axis. */
typedef struct win_geom {
    int rank;
    int64_t w[KILN_MAX_RANK], s[KILN_MAX_RANK], bd[KILN_MAX_RANK], wd[KILN_MAX_RANK];
    int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK], osz[KILN_MAX_RANK];
} win_geom;

static bool win_axis(const kiln_window_options *o, const ir_shape *xs, int a, win_geom *wg,
                     char *why, size_t n) {
    int64_t w = or_one(o->window_dimensions[a]), s = or_one(o->window_strides[a]);
    int64_t bd = or_one(o->base_dilation[a]), wd = or_one(o->window_dilation[a]);
    if (w < 1 || s < 1 || bd < 1 || wd < 1) {
        snprintf(why, n,
                 "axis %d: window_dimensions %lld, window_strides %lld, base_dilation "
                 "%lld and window_dilation %lld must be >= 1",
                 a, (long long)w, (long long)s, (long long)bd, (long long)wd);
        return false;
    }
    if (o->padding != KILN_PADDING_EXPLICIT && bd != 1) {
        snprintf(why, n,
                 "string padding with base_dilation %lld on axis %d: give explicit "
                 "pad_lo/pad_hi",
                 (long long)bd, a);
        return false;
    }
    int64_t lo = o->pad_lo[a], hi = o->pad_hi[a], in = xs->dims[a];
    if (o->padding != KILN_PADDING_EXPLICIT) pads_of(o->padding, in, dilate(w, wd), s, &lo, &hi);
    if (lo < 0 || hi < 0 || lo > (INT64_C(1) << 40) || hi > (INT64_C(1) << 40)) {
        snprintf(why, n, "axis %d: padding (%lld, %lld) must be >= 0", a, (long long)lo,
                 (long long)hi);
        return false;
    }
    wg->w[a] = w, wg->s[a] = s, wg->bd[a] = bd, wg->wd[a] = wd, wg->lo[a] = lo, wg->hi[a] = hi;
    wg->osz[a] = window_count(dilate(in, bd) + lo + hi, dilate(w, wd), s);
    return true;
}

static bool win_check(kiln_graph *g, const char *op, kiln_value x, kiln_window_kind kind,
                      const kiln_window_options *o, win_geom *wg) {
    if (!trace_ready(g, op)) return false;
    const ir_node *xn = trace_node(g, op, x, "x");
    if (!xn) return false;
    if (xn->dtype == KILN_DTYPE_BOOL) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_DTYPE, op, "x must be numeric");
        return false;
    }
    if (kind != KILN_WINDOW_SUM && kind != KILN_WINDOW_MAX && kind != KILN_WINDOW_MIN) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                      "kind %d is not a kiln_window_kind (SUM, MAX or MIN)", (int)kind);
        return false;
    }
    if (!valid_padding(o->padding)) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                      "padding %d is not a kiln_padding", (int)o->padding);
        return false;
    }
    wg->rank = xn->shape.rank;
    if (wg->rank < 1) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "x must have rank >= 1");
        return false;
    }
    char why[256];
    for (int a = 0; a < wg->rank; a++) {
        if (!win_axis(o, &xn->shape, a, wg, why, sizeof why)) {
            trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "%s", why);
            return false;
        }
    }
    return true;
}

/* The reduction's identity as a rank-0 value of t: the pad value of padding and holes. */
static kiln_value win_init(kiln_graph *g, kiln_dtype t, kiln_window_kind kind) {
    if (kind == KILN_WINDOW_SUM) return kiln_scalar(g, t, 0);
    bool mx = kind == KILN_WINDOW_MAX;
    if (t == KILN_DTYPE_I32) {
        int32_t v = mx ? INT32_MIN : INT32_MAX;
        return kiln_constant(g, t, 0, NULL, &v);
    }
    if (t == KILN_DTYPE_I64) {
        int64_t v = mx ? INT64_MIN : INT64_MAX;
        return kiln_constant(g, t, 0, NULL, &v);
    }
    return kiln_scalar(g, t, mx ? -INFINITY : INFINITY);
}

/* acc combined with s: a sum, or s where it beats acc strictly (a NaN beats a number), so
 * the earlier element wins a tie and gets the gradient. */
static kiln_value win_combine(kiln_graph *g, kiln_window_kind kind, bool is_float, kiln_value acc,
                              kiln_value s) {
    if (kind == KILN_WINDOW_SUM) return kiln_add(g, acc, s);
    kiln_value pick = kiln_compare(g, s, acc, kind == KILN_WINDOW_MAX ? KILN_CMP_GT : KILN_CMP_LT);
    if (is_float) {
        kiln_value nan_s = kiln_compare(g, s, s, KILN_CMP_NE);
        kiln_value num_acc = kiln_compare(g, acc, acc, KILN_CMP_EQ);
        pick = kiln_logical_or(g, pick, kiln_logical_and(g, nan_s, num_acc));
    }
    return kiln_select(g, pick, s, acc);
}

/* Reduces axis a of x (already padded) with its window: one strided slice per position. */
static kiln_value win_reduce_axis(kiln_graph *g, kiln_value x, const ir_shape *xs,
                                  const win_geom *wg, int a, kiln_window_kind kind, bool is_float) {
    int64_t start[KILN_MAX_RANK] = {0}, limit[KILN_MAX_RANK], stride[KILN_MAX_RANK];
    for (int i = 0; i < wg->rank; i++) limit[i] = xs->dims[i], stride[i] = 1;
    stride[a] = wg->s[a];
    kiln_value acc = KN_NONE;
    for (int64_t k = 0; k < wg->w[a]; k++) {
        start[a] = k * wg->wd[a];
        limit[a] = start[a] + (wg->osz[a] - 1) * wg->s[a] + 1;
        kiln_value s = kiln_slice(g, x, start, limit, stride);
        acc = k == 0 ? s : win_combine(g, kind, is_float, acc, s);
    }
    return acc;
}

kiln_value kiln_reduce_window(kiln_graph *g, kiln_value x, kiln_window_kind kind,
                              const kiln_window_options *opts) {
    const char *op = "kiln_reduce_window";
    static const kiln_window_options defaults;
    const kiln_window_options *o = opts ? opts : &defaults;
    win_geom wg;
    if (!win_check(g, op, x, kind, o, &wg)) return KN_NONE;
    const ir_node *xn = trace_node(g, op, x, "x");
    kiln_dtype t = xn->dtype;
    ir_shape xs = xn->shape;
    bool empty = false, pad = false;
    int64_t interior[KILN_MAX_RANK];
    for (int a = 0; a < wg.rank; a++) {
        empty |= wg.osz[a] == 0;
        interior[a] = wg.bd[a] - 1;
        pad |= wg.lo[a] != 0 || wg.hi[a] != 0 || wg.bd[a] != 1;
    }
    if (empty) return kiln_full(g, t, wg.rank, wg.osz, 0);
    if (pad) {
        x = kiln_pad(g, x, win_init(g, t, kind), wg.lo, wg.hi, interior);
        for (int a = 0; a < wg.rank; a++)
            xs.dims[a] = dilate(xs.dims[a], wg.bd[a]) + wg.lo[a] + wg.hi[a];
    }
    bool is_float = t != KILN_DTYPE_I32 && t != KILN_DTYPE_I64;
    for (int a = wg.rank - 1; a >= 0; a--) { /* last axis first: row-major "first" ties */
        if (wg.w[a] == 1 && wg.s[a] == 1) continue;
        x = win_reduce_axis(g, x, &xs, &wg, a, kind, is_float);
        xs.dims[a] = wg.osz[a];
    }
    return x;
}

kiln_value kiln_avg_pool(kiln_graph *g, kiln_value x, const kiln_window_options *opts,
                         bool count_include_pad) {
    const char *op = "kiln_avg_pool";
    static const kiln_window_options defaults;
    const kiln_window_options *o = opts ? opts : &defaults;
    win_geom wg;
    if (!win_check(g, op, x, KILN_WINDOW_SUM, o, &wg)) return KN_NONE;
    const ir_node *xn = trace_node(g, op, x, "x");
    kiln_dtype t = xn->dtype;
    if (t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_DTYPE, op, "x must be a float");
        return KN_NONE;
    }
    ir_shape xs = xn->shape; /* a copy: the node array may move under the next builder */
    kiln_value sum = kiln_reduce_window(g, x, KILN_WINDOW_SUM, o);
    if (!count_include_pad) {
        kiln_value ones = kiln_full(g, t, xs.rank, xs.dims, 1);
        return kiln_div(g, sum, kiln_reduce_window(g, ones, KILN_WINDOW_SUM, o));
    }
    double size = 1;
    for (int a = 0; a < wg.rank; a++) size *= (double)wg.w[a];
    return kiln_div(g, sum, kiln_scalar(g, t, size));
}
