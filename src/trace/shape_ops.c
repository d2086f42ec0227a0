/* shape_ops.c — the builder's structural ops: broadcasts, reshape, transpose, slice,
 * concatenate, pad, reductions, the ops of KN_AXES_OPS (rev), dot_general/matmul and row
 * indexing. Each one turns the user's convenient arguments (negative axes, NULL strides, -1
 * in reshape, keepdims) into the IR's normalised attributes, then lets ir_infer type the
 * node. */
#include "trace.h"

#include <stdio.h>
#include <string.h>

static const ir_node *operand(kiln_graph *g, const char *op, kiln_value x) {
    if (!trace_ready(g, op)) return NULL;
    return trace_node(g, op, x, "the operand");
}

static bool target_shape(kiln_graph *g, const char *op, uint32_t x, int rank, const int64_t *dims,
                         ir_shape *s) {
    if (rank < 0 || rank > KILN_MAX_RANK) {
        trace_fail_on(g, &x, 1, KILN_STATUS_SHAPE, op, "target rank %d is outside [0, %d]", rank,
                      KILN_MAX_RANK);
        return false;
    }
    if (rank && !dims) {
        trace_fail_on(g, &x, 1, KILN_STATUS_INVALID_ARGUMENT, op, "dims is NULL for rank %d", rank);
        return false;
    }
    s->rank = rank;
    for (int i = 0; i < rank; i++) s->dims[i] = dims[i];
    return true;
}

kiln_value kiln_broadcast_in_dim(kiln_graph *g, kiln_value x, int rank, const int64_t *dims,
                                 const int *broadcast_dims) {
    const char *op = "kiln_broadcast_in_dim";
    const ir_node *xn = operand(g, op, x);
    if (!xn) return KN_NONE;
    ir_node n = {.op = IR_BROADCAST};
    if (!target_shape(g, op, x.id, rank, dims, &n.shape)) return KN_NONE;
    if (xn->shape.rank && !broadcast_dims)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                             "broadcast_dims is NULL for an operand of rank %d", xn->shape.rank);
    for (int i = 0; i < xn->shape.rank; i++) n.a.bcast_dims[i] = broadcast_dims[i];
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_value kiln_broadcast_to(kiln_graph *g, kiln_value x, int rank, const int64_t *dims) {
    const char *op = "kiln_broadcast_to";
    const ir_node *xn = operand(g, op, x);
    if (!xn) return KN_NONE;
    ir_shape to;
    if (!target_shape(g, op, x.id, rank, dims, &to)) return KN_NONE;
    return trace_broadcast_to(g, op, x, &to);
}

kiln_value kiln_reshape(kiln_graph *g, kiln_value x, int rank, const int64_t *dims) {
    const char *op = "kiln_reshape";
    const ir_node *xn = operand(g, op, x);
    if (!xn) return KN_NONE;
    ir_node n = {.op = IR_RESHAPE};
    if (!target_shape(g, op, x.id, rank, dims, &n.shape)) return KN_NONE;
    int infer = -1;
    int64_t known = 1, total;
    ir_shape_numel(&xn->shape, &total);
    for (int i = 0; i < rank; i++) {
        if (dims[i] == -1 && infer < 0) {
            infer = i;
        } else if (dims[i] < 0) {
            return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                                 "dims[%d] = %lld (only one -1 is allowed, other sizes >= 0)", i,
                                 (long long)dims[i]);
        } else if (!kn_mul_i64(known, dims[i], &known)) {
            return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                                 "the target element count overflows");
        }
    }
    if (infer >= 0) {
        if (known == 0 || total % known)
            return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                                 "cannot infer dims[%d] = -1: %lld elements are not a multiple "
                                 "of %lld",
                                 infer, (long long)total, (long long)known);
        n.shape.dims[infer] = total / known;
    } else if (known != total) {
        char t[IR_TYPE_STR_MAX], u[IR_TYPE_STR_MAX];
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "cannot reshape %s (%lld elements) to %s (%lld elements)",
                             ir_type_str(xn->dtype, &xn->shape, t, sizeof t), (long long)total,
                             ir_type_str(xn->dtype, &n.shape, u, sizeof u), (long long)known);
    }
    if (ir_shape_eq(&n.shape, &xn->shape)) return x;
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_value kiln_transpose(kiln_graph *g, kiln_value x, const int *perm) {
    const char *op = "kiln_transpose";
    const ir_node *xn = operand(g, op, x);
    if (!xn) return KN_NONE;
    if (xn->shape.rank && !perm)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op, "perm is NULL");
    ir_node n = {.op = IR_TRANSPOSE};
    for (int i = 0; i < xn->shape.rank; i++) n.a.perm[i] = perm[i];
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_value kiln_slice(kiln_graph *g, kiln_value x, const int64_t *start, const int64_t *limit,
                      const int64_t *stride) {
    const char *op = "kiln_slice";
    const ir_node *xn = operand(g, op, x);
    if (!xn) return KN_NONE;
    if (xn->shape.rank && (!start || !limit))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                             "start and limit must not be NULL");
    ir_node n = {.op = IR_SLICE};
    for (int i = 0; i < xn->shape.rank; i++) {
        n.a.slice.start[i] = start[i];
        n.a.slice.limit[i] = limit[i];
        n.a.slice.stride[i] = stride ? stride[i] : 1;
    }
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_value kiln_concatenate(kiln_graph *g, int count, const kiln_value *xs, int axis) {
    const char *op = "kiln_concatenate";
    if (!trace_ready(g, op)) return KN_NONE;
    if (count < 1 || !xs)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "needs at least one operand (got %d)", count);
    uint32_t stack[16], *in = stack;
    if (count > 16 && !(in = host_alloc(g->ctx, (size_t)count * sizeof *in)))
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d operands failed",
                          count);
    kiln_value r = KN_NONE;
    for (int i = 0; i < count; i++) {
        char what[32];
        snprintf(what, sizeof what, "operand %d", i);
        if (!trace_node(g, op, xs[i], what)) goto done;
        in[i] = xs[i].id;
    }
    ir_node n = {.op = IR_CONCAT};
    int rank = g->nodes[in[0]].shape.rank;
    if (!trace_axis(axis, rank, &n.a.axis)) {
        trace_fail_on(g, in, (uint32_t)count, KILN_STATUS_SHAPE, op,
                      "axis %d is out of range for rank %d", axis, rank);
        goto done;
    }
    r = count == 1 ? xs[0] : trace_emit(g, op, &n, in, (uint32_t)count);
done:
    if (in != stack) host_free(g->ctx, in, (size_t)count * sizeof *in);
    return r;
}

kiln_value kiln_pad(kiln_graph *g, kiln_value x, kiln_value pad_value, const int64_t *lo,
                    const int64_t *hi, const int64_t *interior) {
    const char *op = "kiln_pad";
    const ir_node *xn = operand(g, op, x);
    if (!xn || !trace_node(g, op, pad_value, "the padding value")) return KN_NONE;
    uint32_t in[2] = {x.id, pad_value.id};
    if (xn->shape.rank && (!lo || !hi))
        return trace_fail_on(g, in, 2, KILN_STATUS_INVALID_ARGUMENT, op,
                             "lo and hi must not be NULL");
    ir_node n = {.op = IR_PAD};
    for (int i = 0; i < xn->shape.rank; i++) {
        n.a.pad.lo[i] = lo[i];
        n.a.pad.hi[i] = hi[i];
        n.a.pad.interior[i] = interior ? interior[i] : 0;
    }
    return trace_emit(g, op, &n, in, 2);
}

/* ------------------------------------------------------------ reductions ---- */

bool trace_axes_mask(kiln_graph *g, const char *op, kiln_value x, int naxes, const int *axes,
                     uint32_t *mask) {
    int rank = g->nodes[x.id].shape.rank;
    *mask = 0;
    if (!axes) {
        *mask = rank ? (uint32_t)((1u << rank) - 1) : 0;
        return true;
    }
    if (naxes < 0 || naxes > rank) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "%d axes given for rank %d", naxes, rank);
        return false;
    }
    for (int i = 0; i < naxes; i++) {
        int a;
        if (!trace_axis(axes[i], rank, &a)) {
            trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "axis %d is out of range for rank %d",
                          axes[i], rank);
            return false;
        }
        if (*mask >> a & 1u) {
            trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "axis %d is given twice (as axis %d)",
                          a, axes[i]);
            return false;
        }
        *mask |= 1u << a;
    }
    return true;
}

/* keepdims: the reduced shape with 1 in place of each reduced axis. */
static kiln_value keep_dims(kiln_graph *g, kiln_value r, const ir_shape *in, uint32_t mask) {
    int64_t dims[KILN_MAX_RANK];
    for (int i = 0; i < in->rank; i++) dims[i] = (mask >> i & 1u) ? 1 : in->dims[i];
    return kiln_reshape(g, r, in->rank, dims);
}

static kiln_value reduce(kiln_graph *g, const char *op, ir_op code, kiln_value x, int naxes,
                         const int *axes, bool keepdims) {
    const ir_node *xn = operand(g, op, x);
    if (!xn) return KN_NONE;
    ir_node n = {.op = code};
    if (!trace_axes_mask(g, op, x, naxes, axes, &n.a.reduce_axes)) return KN_NONE;
    ir_shape in = xn->shape;
    kiln_value r = trace_emit(g, op, &n, &x.id, 1);
    if (r.id && keepdims) r = keep_dims(g, r, &in, n.a.reduce_axes);
    return r;
}

#define REDUCE(fn, code)                                                                           \
    kiln_value fn(kiln_graph *g, kiln_value x, int naxes, const int *axes, bool keepdims) {        \
        return reduce(g, #fn, code, x, naxes, axes, keepdims);                                     \
    }
REDUCE(kiln_reduce_sum, IR_REDUCE_SUM)
REDUCE(kiln_reduce_max, IR_REDUCE_MAX)
REDUCE(kiln_reduce_min, IR_REDUCE_MIN)
REDUCE(kiln_reduce_prod, IR_REDUCE_PROD)
#undef REDUCE

kiln_value kiln_mean(kiln_graph *g, kiln_value x, int naxes, const int *axes, bool keepdims) {
    const char *op = "kiln_mean";
    const ir_node *xn = operand(g, op, x);
    if (!xn) return KN_NONE;
    if (!ir_dtype_is_float(xn->dtype))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_DTYPE, op,
                             "mean takes f32, f64, bf16 or f16, not %s",
                             kiln_dtype_name(xn->dtype));
    uint32_t mask;
    if (!trace_axes_mask(g, op, x, naxes, axes, &mask)) return KN_NONE;
    double count = 1;
    for (int i = 0; i < xn->shape.rank; i++)
        if (mask >> i & 1u) count *= (double)xn->shape.dims[i];
    /* jnp.mean's arithmetic: a 16-bit x summed into f32 and divided there, rounded to its
     * dtype once; f32 and f64 divided by the count (not multiplied by its reciprocal, which
     * is a rounding away from the quotient) */
    kiln_dtype t = xn->dtype, at = ir_dtype_is_half(t) ? KILN_DTYPE_F32 : t;
    kiln_value s =
        reduce(g, op, IR_REDUCE_SUM, at == t ? x : kiln_convert(g, x, at), naxes, axes, keepdims);
    if (!s.id) return KN_NONE;
    kiln_value r = kiln_div(g, s, trace_scalar(g, op, at, count));
    return at == t ? r : kiln_convert(g, r, t);
}

/* -------------------------------------------------------------- axes ops ---- */

/* The builder of an op of KN_AXES_OPS: its axes, checked and normalised as a reduction's
 * are (trace_axes_mask: each in range, none twice), become the op's IRA_AXES attribute. */
static kiln_value axes_op(kiln_graph *g, const char *op, ir_op code, kiln_value x, int n_axes,
                          const int *axes) {
    if (!operand(g, op, x)) return KN_NONE;
    ir_node n = {.op = code};
    uint32_t mask;
    if (!trace_axes_mask(g, op, x, n_axes, axes, &mask)) return KN_NONE;
    int count;
    const ir_attr_desc *d = ir_op_attrs(code, &count);
    for (int i = 0; i < count; i++)
        if (d[i].type == IRA_AXES) memcpy((char *)&n.a + d[i].offset, &mask, sizeof mask);
    return trace_emit(g, op, &n, &x.id, 1);
}

/* One public builder per row of KN_AXES_OPS: kiln_<ident>(g, x, n_axes, axes). A row whose
 * declaration is missing from kiln.h fails the build (-Wmissing-prototypes). */
#define KN_DEF_AXES(e, name, ident, ...)                                                           \
    kiln_value kiln_##ident(kiln_graph *g, kiln_value x, int n_axes, const int *axes) {            \
        return axes_op(g, "kiln_" #ident, IR_##e, x, n_axes, axes);                                \
    }
KN_AXES_OPS(KN_DEF_AXES)
#undef KN_DEF_AXES

/* ---------------------------------------------------------------- dots ---- */

kiln_value kiln_dot_general(kiln_graph *g, kiln_value lhs, kiln_value rhs,
                            const kiln_dot_dims *dims) {
    const char *op = "kiln_dot_general";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!trace_node(g, op, lhs, "lhs") || !trace_node(g, op, rhs, "rhs")) return KN_NONE;
    uint32_t in[2] = {lhs.id, rhs.id};
    if (!dims) return trace_fail_on(g, in, 2, KILN_STATUS_INVALID_ARGUMENT, op, "dims is NULL");
    ir_node n = {.op = IR_DOT};
    n.a.dot = *dims;
    return trace_emit(g, op, &n, in, 2);
}

/* matmul of a [batch..., m, k] and b [batch..., k, n] (vectors promoted). Operands are
 * checked before any broadcast is emitted, so errors name the user's operands. */
kiln_value kiln_matmul(kiln_graph *g, kiln_value a, kiln_value b) {
    const char *op = "kiln_matmul";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *an = trace_node(g, op, a, "the first operand");
    const ir_node *bn = an ? trace_node(g, op, b, "the second operand") : NULL;
    if (!bn) return KN_NONE;
    ir_shape as = an->shape, bs = bn->shape;
    uint32_t ab_in[2] = {a.id, b.id};
    if (an->dtype != bn->dtype || !ir_dtype_accepts(IRT_NUMERIC, an->dtype))
        return trace_fail_on(g, ab_in, 2, KILN_STATUS_DTYPE, op,
                             an->dtype != bn->dtype ? "operand dtypes differ"
                                                    : "matmul takes a numeric dtype (f32, f64, "
                                                      "bf16, f16, i32, i64), not bool");
    if (as.rank == 0 || bs.rank == 0)
        return trace_fail_on(g, ab_in, 2, KILN_STATUS_SHAPE, op,
                             "operands must have rank >= 1 (got %d and %d)", as.rank, bs.rank);
    int64_t ka = as.dims[as.rank - 1], kb = bs.dims[bs.rank == 1 ? 0 : bs.rank - 2];
    if (ka != kb)
        return trace_fail_on(g, ab_in, 2, KILN_STATUS_SHAPE, op,
                             "contracting sizes differ: %lld (last axis of the first operand) vs "
                             "%lld (%s axis of the second)",
                             (long long)ka, (long long)kb, bs.rank == 1 ? "the" : "second-to-last");
    ir_node n = {.op = IR_DOT};
    kiln_dot_dims *d = &n.a.dot;
    d->n_contract = 1;
    d->lhs_contract[0] = as.rank - 1;
    d->rhs_contract[0] = bs.rank == 1 ? 0 : bs.rank - 2;
    if (bs.rank <= 2 || as.rank == 1) { /* a plain contraction gives NumPy's axis order */
        uint32_t in[2] = {a.id, b.id};
        return trace_emit(g, op, &n, in, 2);
    }
    /* rhs has batch axes (lhs too, or lhs is one matrix): broadcast the batch axes to a
     * common shape, then a batched dot_general. */
    int ab = as.rank - 2, bb = bs.rank - 2;
    int nb = ab > bb ? ab : bb;
    ir_shape batch = {.rank = nb};
    for (int i = 1; i <= nb; i++) {
        int64_t x = i <= ab ? as.dims[ab - i] : 1, y = i <= bb ? bs.dims[bb - i] : 1;
        if (x != y && x != 1 && y != 1)
            return trace_fail_on(g, ab_in, 2, KILN_STATUS_SHAPE, op,
                                 "batch axes cannot be broadcast: %lld vs %lld (axis -%d of the "
                                 "batch)",
                                 (long long)x, (long long)y, i);
        batch.dims[nb - i] = x == 1 ? y : x;
    }
    ir_shape at = batch, bt = batch;
    at.rank = bt.rank = nb + 2;
    at.dims[nb] = as.dims[as.rank - 2], at.dims[nb + 1] = as.dims[as.rank - 1];
    bt.dims[nb] = bs.dims[bs.rank - 2], bt.dims[nb + 1] = bs.dims[bs.rank - 1];
    kiln_value a2 = trace_broadcast_to(g, op, a, &at);
    kiln_value b2 = a2.id ? trace_broadcast_to(g, op, b, &bt) : KN_NONE;
    kiln_value r = KN_NONE;
    if (b2.id) {
        d->n_batch = nb;
        for (int i = 0; i < nb; i++) d->lhs_batch[i] = d->rhs_batch[i] = i;
        d->lhs_contract[0] = nb + 1;
        d->rhs_contract[0] = nb;
        uint32_t in[2] = {a2.id, b2.id};
        r = trace_emit(g, op, &n, in, 2);
    }
    return r;
}

/* ------------------------------------------------------------- indexing ---- */

kiln_value kiln_take_rows(kiln_graph *g, kiln_value table, kiln_value indices) {
    const char *op = "kiln_take_rows";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!trace_node(g, op, table, "the table") || !trace_node(g, op, indices, "the indices"))
        return KN_NONE;
    ir_node n = {.op = IR_TAKE_ROWS};
    uint32_t in[2] = {table.id, indices.id};
    return trace_emit(g, op, &n, in, 2);
}

kiln_value kiln_scatter_add_rows(kiln_graph *g, kiln_value operand_, kiln_value indices,
                                 kiln_value updates) {
    const char *op = "kiln_scatter_add_rows";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!trace_node(g, op, operand_, "the operand") || !trace_node(g, op, indices, "the indices") ||
        !trace_node(g, op, updates, "the updates"))
        return KN_NONE;
    ir_node n = {.op = IR_SCATTER_ADD_ROWS};
    uint32_t in[3] = {operand_.id, indices.id, updates.id};
    return trace_emit(g, op, &n, in, 3);
}

/* --------------------------------------------------------- dynamic slices ---- */

/* Gathers the operands [x, (update,) starts...] into in (n_fixed + n_indices entries):
 * every value must be live on g. The count against x's rank, the indices' types and the
 * sizes are ir_infer's checks, which name the shapes. */
static uint32_t *dynamic_operands(kiln_graph *g, const char *op, const kiln_value *fixed,
                                  int n_fixed, int n_indices, const kiln_value *starts,
                                  uint32_t *in) {
    if (!trace_ready(g, op)) return NULL;
    static const char *const what[2] = {"the operand", "the update"};
    for (int i = 0; i < n_fixed; i++) {
        if (!trace_node(g, op, fixed[i], what[i])) return NULL;
        in[i] = fixed[i].id;
    }
    if (n_indices < 0 || n_indices > KILN_MAX_RANK || (n_indices && !starts)) {
        trace_fail_on(g, in, (uint32_t)n_fixed, KILN_STATUS_INVALID_ARGUMENT, op,
                      "%d start indices (a NULL array, or outside [0, %d])", n_indices,
                      KILN_MAX_RANK);
        return NULL;
    }
    for (int i = 0; i < n_indices; i++) {
        char w[32];
        snprintf(w, sizeof w, "start index %d", i);
        if (!trace_node(g, op, starts[i], w)) return NULL;
        in[n_fixed + i] = starts[i].id;
    }
    return in;
}

kiln_value kiln_dynamic_slice(kiln_graph *g, kiln_value x, int n_indices,
                              const kiln_value *start_indices, const int64_t *sizes) {
    const char *op = "kiln_dynamic_slice";
    uint32_t in[1 + KILN_MAX_RANK];
    if (!dynamic_operands(g, op, &x, 1, n_indices, start_indices, in)) return KN_NONE;
    int rank = g->nodes[x.id].shape.rank;
    if (rank && !sizes)
        return trace_fail_on(g, in, 1, KILN_STATUS_INVALID_ARGUMENT, op, "sizes is NULL");
    ir_node n = {.op = IR_DYNAMIC_SLICE};
    /* sizes has one entry per start index: with a wrong count (ir_infer's error, naming
     * both) the entries past n_indices are not the caller's to read */
    for (int i = 0; i < rank && i < n_indices; i++) n.a.dyn_sizes[i] = sizes[i];
    return trace_emit(g, op, &n, in, 1 + (uint32_t)n_indices);
}

kiln_value kiln_dynamic_update_slice(kiln_graph *g, kiln_value x, kiln_value update, int n_indices,
                                     const kiln_value *start_indices) {
    const char *op = "kiln_dynamic_update_slice";
    uint32_t in[2 + KILN_MAX_RANK];
    kiln_value xu[2] = {x, update};
    if (!dynamic_operands(g, op, xu, 2, n_indices, start_indices, in)) return KN_NONE;
    ir_node n = {.op = IR_DYNAMIC_UPDATE_SLICE};
    return trace_emit(g, op, &n, in, 2 + (uint32_t)n_indices);
}
