/* infer.c — shape and dtype rules of every op, in one place.
 *
 * ir_infer is the single source of truth: the tracer calls it to type each new node (and
 * turns a failure into the builder's error, adding the op name, the operand types and the
 * user's file and line), and the verifier calls it again on finished graphs. Attributes
 * arrive normalised (axes non-negative); the user-facing conveniences (negative axes,
 * implicit broadcasting, -1 in reshape) are the tracer's job. */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FAIL(code, ...) return (snprintf(msg, msg_size, __VA_ARGS__), (code))

static const ir_node *input(const kiln_graph *g, const ir_node *n, uint32_t i) {
    return &g->nodes[ir_in(n)[i]];
}

kiln_status ir_check_shape(const ir_shape *s, kiln_dtype t, char *msg, size_t msg_size) {
    if (s->rank < 0 || s->rank > KILN_MAX_RANK)
        FAIL(KILN_STATUS_SHAPE, "rank %d is outside [0, %d]", s->rank, KILN_MAX_RANK);
    int64_t extent = 1; /* the product of the dimensions, a zero counted as one */
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0)
            FAIL(KILN_STATUS_SHAPE, "dimension %d is negative (%lld)", i, (long long)s->dims[i]);
        if (s->dims[i] > IR_DIM_MAX || !kn_mul_i64(extent, s->dims[i] ? s->dims[i] : 1, &extent) ||
            extent > IR_DIM_MAX)
            FAIL(KILN_STATUS_SHAPE,
                 "the shape's extent overflows 2^62 (kiln's limit; a zero dimension counts as "
                 "1) at dimension %d (%lld)",
                 i, (long long)s->dims[i]);
    }
    size_t bytes;
    if (!ir_shape_nbytes(s, t, &bytes)) FAIL(KILN_STATUS_SHAPE, "the shape's byte size overflows");
    return KILN_STATUS_OK;
}

static kiln_status infer_source(const ir_node *n, char *msg, size_t msg_size) {
    if (!ir_dtype_valid(n->dtype))
        FAIL(KILN_STATUS_DTYPE, "dtype %d is not a kiln_dtype", n->dtype);
    if (n->op == IR_IOTA) {
        if (!ir_dtype_accepts(IRT_NUMERIC, n->dtype))
            FAIL(KILN_STATUS_DTYPE, "iota needs a numeric dtype, not %s",
                 kiln_dtype_name(n->dtype));
        if (n->a.axis < 0 || n->a.axis >= n->shape.rank)
            FAIL(KILN_STATUS_SHAPE, "axis %d is out of range for rank %d", n->a.axis,
                 n->shape.rank);
    }
    return KILN_STATUS_OK;
}

kiln_status ir_infer_elementwise_dtype(ir_op op, const kiln_dtype *in, uint32_t n_in,
                                       kiln_dtype *out, char *msg, size_t msg_size) {
    const ir_op_info *info = &ir_ops[op];
    uint32_t data = op == IR_SELECT ? 1 : 0; /* the operand whose dtype the op follows */
    if (n_in <= data) FAIL(KILN_STATUS_INTERNAL, "%s has %u operands", info->name, n_in);
    kiln_dtype x = in[data];
    if (op == IR_SELECT && in[0] != KILN_DTYPE_BOOL)
        FAIL(KILN_STATUS_DTYPE, "the predicate must be bool, not %s", kiln_dtype_name(in[0]));
    bool converts = op == IR_CONVERT || op == IR_BITCAST; /* the node names the result dtype */
    if (!converts && !ir_dtype_accepts(info->types, x))
        FAIL(KILN_STATUS_DTYPE, "takes %s, not %s",
             info->types == IRT_FLOAT      ? "f32, f64, bf16 or f16"
             : info->types == IRT_BOOL     ? "bool"
             : info->types == IRT_I32      ? "i32"
             : info->types == IRT_INTEGRAL ? "i32, i64 or bool"
             : info->types == IRT_INT      ? "i32 or i64"
                                           : "f32, f64, bf16, f16, i32 or i64",
             kiln_dtype_name(x));
    if (converts && !ir_dtype_valid(*out))
        FAIL(KILN_STATUS_DTYPE, "target dtype %d is not a kiln_dtype", *out);
    if (op == IR_BITCAST) {
        /* f32 <-> i32 and f64 <-> i64 (and each to itself): a 16-bit float has no integer of
         * its width in kiln, and a bool's byte is not a number's bits */
        bool ok =
            x == *out || (kiln_dtype_itemsize(x) == kiln_dtype_itemsize(*out) &&
                          x != KILN_DTYPE_BOOL && *out != KILN_DTYPE_BOOL && !ir_dtype_is_half(x));
        if (!ok)
            FAIL(KILN_STATUS_DTYPE,
                 "cannot reinterpret %s as %s: bitcast_convert pairs f32 with i32 and f64 "
                 "with i64",
                 kiln_dtype_name(x), kiln_dtype_name(*out));
    }
    for (uint32_t i = data + 1; i < n_in; i++)
        if (in[i] != x)
            FAIL(KILN_STATUS_DTYPE, "operand dtypes differ (%s vs %s); convert one first",
                 kiln_dtype_name(x), kiln_dtype_name(in[i]));
    if (op == IR_COMPARE)
        *out = KILN_DTYPE_BOOL;
    else if (!converts && op != IR_RANDOM) /* RANDOM: random_dtype decides */
        *out = x;
    return KILN_STATUS_OK;
}

/* RANDOM's result: i32 words, or the float dtype the node asks for (f32 when it names
 * none: the generic op tests trace it without one). */
static kiln_status random_dtype(ir_node *n, kiln_dtype *out, char *msg, size_t msg_size) {
    const char *what = ir_rng_name(n->a.rng);
    if (!what) FAIL(KILN_STATUS_INVALID_ARGUMENT, "random draw %d is not an ir_rng", n->a.rng);
    if (n->a.rng != IR_RNG_UNIFORM && n->a.rng != IR_RNG_NORMAL)
        *out = KILN_DTYPE_I32;
    else if (*out == KILN_DTYPE_INVALID)
        *out = KILN_DTYPE_F32;
    else if (!ir_dtype_is_float(*out))
        FAIL(KILN_STATUS_DTYPE, "random %s gives f32, f64, bf16 or f16, not %s", what,
             kiln_dtype_name(*out));
    return KILN_STATUS_OK;
}

static kiln_status infer_elementwise(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    kiln_dtype in[3];
    if (n->n_in > 3) FAIL(KILN_STATUS_INTERNAL, "too many operands");
    for (uint32_t i = 0; i < n->n_in; i++) in[i] = input(g, n, i)->dtype;
    kiln_dtype out = n->dtype;
    kiln_status s = ir_infer_elementwise_dtype(n->op, in, n->n_in, &out, msg, msg_size);
    if (s) return s;
    const ir_node *x = input(g, n, 0);
    for (uint32_t i = 1; i < n->n_in; i++)
        if (!ir_shape_eq(&input(g, n, i)->shape, &x->shape))
            FAIL(KILN_STATUS_SHAPE, "operand shapes differ");
    if (n->op == IR_COMPARE && (unsigned)n->a.cmp > KILN_CMP_GE)
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "comparison direction %d is not a kiln_cmp", n->a.cmp);
    if (n->op == IR_RANDOM && (s = random_dtype(n, &out, msg, msg_size))) return s;
    n->shape = x->shape;
    n->dtype = out;
    return KILN_STATUS_OK;
}

static kiln_status infer_broadcast(const ir_node *x, ir_node *n, char *msg, size_t msg_size) {
    char to[IR_TYPE_STR_MAX];
    ir_type_str(x->dtype, &n->shape, to, sizeof to);
    if (x->shape.rank > n->shape.rank)
        FAIL(KILN_STATUS_SHAPE, "cannot broadcast to %s: the operand has rank %d, more than %d", to,
             x->shape.rank, n->shape.rank);
    for (int i = 0; i < x->shape.rank; i++) {
        int d = n->a.bcast_dims[i];
        if (d < 0 || d >= n->shape.rank)
            FAIL(KILN_STATUS_SHAPE,
                 "cannot broadcast to %s: broadcast_dims[%d] = %d is out of range for rank %d", to,
                 i, d, n->shape.rank);
        if (i > 0 && d <= n->a.bcast_dims[i - 1])
            FAIL(KILN_STATUS_SHAPE,
                 "cannot broadcast to %s: broadcast_dims must be strictly increasing (%d after "
                 "%d)",
                 to, d, n->a.bcast_dims[i - 1]);
        if (x->shape.dims[i] != 1 && x->shape.dims[i] != n->shape.dims[d])
            FAIL(KILN_STATUS_SHAPE,
                 "cannot broadcast to %s: operand axis %d has size %lld, output axis %d has %lld",
                 to, i, (long long)x->shape.dims[i], d, (long long)n->shape.dims[d]);
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_slice(const ir_node *x, ir_node *n, char *msg, size_t msg_size) {
    n->shape.rank = x->shape.rank;
    for (int i = 0; i < x->shape.rank; i++) {
        int64_t s = n->a.slice.start[i], l = n->a.slice.limit[i], st = n->a.slice.stride[i];
        if (st < 1) FAIL(KILN_STATUS_SHAPE, "axis %d: stride %lld must be >= 1", i, (long long)st);
        if (s < 0 || s > l || l > x->shape.dims[i])
            FAIL(KILN_STATUS_SHAPE, "axis %d: [start %lld, limit %lld) does not fit in size %lld",
                 i, (long long)s, (long long)l, (long long)x->shape.dims[i]);
        n->shape.dims[i] = l == s ? 0 : (l - s - 1) / st + 1; /* no overflow for huge st */
        /* normalised: a stride past the slice's extent takes one element, as the extent
         * itself does, and keeps index arithmetic (start + i * stride) within int64 */
        if (st > (l - s > 1 ? l - s : 1)) n->a.slice.stride[i] = l - s > 1 ? l - s : 1;
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_concat(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    if (n->n_in < 1) FAIL(KILN_STATUS_INVALID_ARGUMENT, "needs at least one operand");
    const ir_node *x = input(g, n, 0);
    int ax = n->a.axis;
    if (x->shape.rank == 0) FAIL(KILN_STATUS_SHAPE, "cannot concatenate rank-0 values");
    if (ax < 0 || ax >= x->shape.rank)
        FAIL(KILN_STATUS_SHAPE, "axis %d is out of range for rank %d", ax, x->shape.rank);
    n->shape = x->shape;
    n->dtype = x->dtype;
    n->shape.dims[ax] = 0;
    for (uint32_t k = 0; k < n->n_in; k++) {
        const ir_node *y = input(g, n, k);
        if (y->dtype != x->dtype)
            FAIL(KILN_STATUS_DTYPE, "operand %u is %s, operand 0 is %s", k,
                 kiln_dtype_name(y->dtype), kiln_dtype_name(x->dtype));
        if (y->shape.rank != x->shape.rank)
            FAIL(KILN_STATUS_SHAPE, "operand %u has rank %d, operand 0 has rank %d", k,
                 y->shape.rank, x->shape.rank);
        for (int i = 0; i < x->shape.rank; i++)
            if (i != ax && y->shape.dims[i] != x->shape.dims[i])
                FAIL(KILN_STATUS_SHAPE,
                     "operand %u differs from operand 0 on axis %d (%lld vs %lld)", k, i,
                     (long long)y->shape.dims[i], (long long)x->shape.dims[i]);
        if (__builtin_add_overflow(n->shape.dims[ax], y->shape.dims[ax], &n->shape.dims[ax]))
            FAIL(KILN_STATUS_SHAPE, "the concatenated size overflows");
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_pad(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *x = input(g, n, 0), *v = input(g, n, 1);
    if (v->shape.rank != 0)
        FAIL(KILN_STATUS_SHAPE, "the padding value must be rank 0, not rank %d", v->shape.rank);
    if (v->dtype != x->dtype)
        FAIL(KILN_STATUS_DTYPE, "the padding value is %s, the operand %s",
             kiln_dtype_name(v->dtype), kiln_dtype_name(x->dtype));
    n->shape.rank = x->shape.rank;
    n->dtype = x->dtype;
    for (int i = 0; i < x->shape.rank; i++) {
        int64_t d = x->shape.dims[i], in = n->a.pad.interior[i], lo = n->a.pad.lo[i],
                hi = n->a.pad.hi[i], out;
        if (in < 0)
            FAIL(KILN_STATUS_SHAPE, "axis %d: interior padding %lld is negative", i, (long long)in);
        if (d <= 1) in = n->a.pad.interior[i] = 0; /* normalised: no gap to pad */
        int64_t gaps = d > 0 ? d - 1 : 0, inner, extent;
        if (!kn_mul_i64(gaps, in, &inner) || __builtin_add_overflow(d, inner, &extent) ||
            extent > IR_DIM_MAX || lo > IR_DIM_MAX || hi > IR_DIM_MAX)
            FAIL(KILN_STATUS_SHAPE, "axis %d: the padded size overflows", i);
        /* As XLA's: a side may crop past the operand (lo = -4, hi = 5 on 3 elements is 4
         * elements of padding) as long as the size comes out >= 0; a crop of 2^62 or more
         * is refused, which keeps an index minus lo within int64. */
        if (lo <= -IR_DIM_MAX || hi <= -IR_DIM_MAX)
            FAIL(KILN_STATUS_SHAPE, "axis %d: lo %lld / hi %lld crop 2^62 elements or more", i,
                 (long long)lo, (long long)hi);
        if (__builtin_add_overflow(extent, lo, &out) || __builtin_add_overflow(out, hi, &out) ||
            out > IR_DIM_MAX)
            FAIL(KILN_STATUS_SHAPE, "axis %d: the padded size overflows", i);
        if (out < 0)
            FAIL(KILN_STATUS_SHAPE, "axis %d: size %lld with lo %lld, hi %lld is negative", i,
                 (long long)d, (long long)n->a.pad.lo[i], (long long)n->a.pad.hi[i]);
        n->shape.dims[i] = out;
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_shape_op(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *x = input(g, n, 0);
    if (n->op != IR_CONCAT && n->op != IR_PAD) n->dtype = x->dtype;
    switch (n->op) {
    case IR_BROADCAST: return infer_broadcast(x, n, msg, msg_size);
    case IR_RESHAPE: {
        int64_t a, b;
        if (!ir_shape_numel(&x->shape, &a) || !ir_shape_numel(&n->shape, &b) || a != b)
            FAIL(KILN_STATUS_SHAPE, "element counts differ");
        return KILN_STATUS_OK;
    }
    case IR_TRANSPOSE: {
        unsigned seen = 0;
        n->shape.rank = x->shape.rank;
        for (int i = 0; i < x->shape.rank; i++) {
            int p = n->a.perm[i];
            if (p < 0 || p >= x->shape.rank || (seen >> p & 1u))
                FAIL(KILN_STATUS_SHAPE, "permutation entry %d (= %d) is out of range or repeated",
                     i, p);
            seen |= 1u << p;
            n->shape.dims[i] = x->shape.dims[p];
        }
        return KILN_STATUS_OK;
    }
    case IR_SLICE: return infer_slice(x, n, msg, msg_size);
    case IR_CONCAT: return infer_concat(g, n, msg, msg_size);
    case IR_PAD: return infer_pad(g, n, msg, msg_size);
    default: /* moves elements within the operand's shape (rev): its attributes' types say
              * what to check (ir_attrs_check) */
        n->shape = x->shape;
        return KILN_STATUS_OK;
    }
}

static kiln_status infer_reduce(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *x = input(g, n, 0);
    if (!ir_dtype_accepts(IRT_NUMERIC, x->dtype))
        FAIL(KILN_STATUS_DTYPE, "reductions take numeric dtypes, not %s",
             kiln_dtype_name(x->dtype));
    if (x->shape.rank < 32 && (n->a.reduce_axes >> x->shape.rank))
        FAIL(KILN_STATUS_SHAPE, "reduced axes (mask 0x%x) exceed rank %d", n->a.reduce_axes,
             x->shape.rank);
    n->dtype = x->dtype;
    n->shape.rank = 0;
    for (int i = 0; i < x->shape.rank; i++)
        if (!(n->a.reduce_axes >> i & 1u)) n->shape.dims[n->shape.rank++] = x->shape.dims[i];
    return KILN_STATUS_OK;
}

/* Checks one operand's axis list of dot_general; marks used axes in *used. */
static kiln_status dot_axes(const char *side, const char *what, const int *ax, int n, int rank,
                            unsigned *used, char *msg, size_t msg_size) {
    for (int i = 0; i < n; i++) {
        if (ax[i] < 0 || ax[i] >= rank)
            FAIL(KILN_STATUS_SHAPE, "%s %s axis %d is out of range for rank %d", side, what, ax[i],
                 rank);
        if (*used >> ax[i] & 1u) FAIL(KILN_STATUS_SHAPE, "%s axis %d is used twice", side, ax[i]);
        *used |= 1u << ax[i];
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_dot(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *l = input(g, n, 0), *r = input(g, n, 1);
    const kiln_dot_dims *d = &n->a.dot;
    if (l->dtype != r->dtype)
        FAIL(KILN_STATUS_DTYPE, "operand dtypes differ (%s vs %s)", kiln_dtype_name(l->dtype),
             kiln_dtype_name(r->dtype));
    if (!ir_dtype_accepts(IRT_NUMERIC, l->dtype))
        FAIL(KILN_STATUS_DTYPE, "dot_general takes numeric dtypes, not %s",
             kiln_dtype_name(l->dtype));
    if (d->n_contract < 0 || d->n_contract > KILN_MAX_RANK || d->n_batch < 0 ||
        d->n_batch > KILN_MAX_RANK)
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "n_contract and n_batch must be in [0, %d]",
             KILN_MAX_RANK);
    unsigned lu = 0, ru = 0;
    kiln_status s;
    if ((s = dot_axes("lhs", "batch", d->lhs_batch, d->n_batch, l->shape.rank, &lu, msg,
                      msg_size)) ||
        (s = dot_axes("rhs", "batch", d->rhs_batch, d->n_batch, r->shape.rank, &ru, msg,
                      msg_size)) ||
        (s = dot_axes("lhs", "contracting", d->lhs_contract, d->n_contract, l->shape.rank, &lu, msg,
                      msg_size)) ||
        (s = dot_axes("rhs", "contracting", d->rhs_contract, d->n_contract, r->shape.rank, &ru, msg,
                      msg_size)))
        return s;
    for (int i = 0; i < d->n_batch; i++)
        if (l->shape.dims[d->lhs_batch[i]] != r->shape.dims[d->rhs_batch[i]])
            FAIL(KILN_STATUS_SHAPE, "batch axes lhs %d and rhs %d differ in size (%lld vs %lld)",
                 d->lhs_batch[i], d->rhs_batch[i], (long long)l->shape.dims[d->lhs_batch[i]],
                 (long long)r->shape.dims[d->rhs_batch[i]]);
    for (int i = 0; i < d->n_contract; i++)
        if (l->shape.dims[d->lhs_contract[i]] != r->shape.dims[d->rhs_contract[i]])
            FAIL(KILN_STATUS_SHAPE,
                 "contracting axes lhs %d and rhs %d differ in size (%lld vs %lld)",
                 d->lhs_contract[i], d->rhs_contract[i],
                 (long long)l->shape.dims[d->lhs_contract[i]],
                 (long long)r->shape.dims[d->rhs_contract[i]]);
    int rank = l->shape.rank + r->shape.rank - 2 * d->n_contract - d->n_batch;
    if (rank > KILN_MAX_RANK)
        FAIL(KILN_STATUS_SHAPE, "the result would have rank %d (the most is %d)", rank,
             KILN_MAX_RANK);
    n->dtype = l->dtype;
    n->shape.rank = 0;
    for (int i = 0; i < d->n_batch; i++)
        n->shape.dims[n->shape.rank++] = l->shape.dims[d->lhs_batch[i]];
    for (int i = 0; i < l->shape.rank; i++)
        if (!(lu >> i & 1u)) n->shape.dims[n->shape.rank++] = l->shape.dims[i];
    for (int i = 0; i < r->shape.rank; i++)
        if (!(ru >> i & 1u)) n->shape.dims[n->shape.rank++] = r->shape.dims[i];
    return KILN_STATUS_OK;
}

/* reduce_scatter and all_gather: the leading axis divided / multiplied by the group's
 * size, which the op carries (the program is compiled for a communicator of that size). */
static kiln_status infer_shard(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *x = input(g, n, 0);
    const char *op = ir_ops[n->op].name;
    bool scatter = n->op == IR_REDUCE_SCATTER;
    char xs[96];
    ir_type_str(x->dtype, &x->shape, xs, sizeof xs);
    if (n->a.shard.ranks < 1 || n->a.shard.ranks > 4096)
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "%s of %s: %d ranks is outside [1, 4096]", op, xs,
             n->a.shard.ranks);
    if (scatter && n->a.shard.kind != KILN_REDUCE_SUM && n->a.shard.kind != KILN_REDUCE_MEAN)
        FAIL(KILN_STATUS_INVALID_ARGUMENT,
             "reduce_scatter of %s: the reduction %d is not KILN_REDUCE_SUM or _MEAN", xs,
             n->a.shard.kind);
    if (scatter && !ir_dtype_accepts(IRT_NUMERIC, x->dtype))
        FAIL(KILN_STATUS_DTYPE, "reduce_scatter takes numeric dtypes, not %s", xs);
    if (scatter && n->a.shard.kind == KILN_REDUCE_MEAN && !ir_dtype_is_float(x->dtype))
        FAIL(KILN_STATUS_DTYPE,
             "reduce_scatter mean needs a float dtype (f32, f64, bf16, f16), "
             "not %s",
             xs);
    if (x->shape.rank < 1)
        FAIL(KILN_STATUS_SHAPE, "%s of %s: the operand needs a leading axis to %s", op, xs,
             scatter ? "split" : "concatenate along");
    int64_t d0 = x->shape.dims[0], k = n->a.shard.ranks;
    if (scatter && d0 % k)
        FAIL(KILN_STATUS_SHAPE,
             "reduce_scatter of %s: the leading axis (%lld) does not split into %lld equal "
             "shards (one per rank)",
             xs, (long long)d0, (long long)k);
    if (!scatter && d0 > INT64_MAX / k)
        FAIL(KILN_STATUS_SHAPE, "all_gather of %s over %lld ranks: too many elements", xs,
             (long long)k);
    n->dtype = x->dtype;
    n->shape = x->shape;
    n->shape.dims[0] = scatter ? d0 / k : d0 * k;
    return KILN_STATUS_OK;
}

/* all_reduce: the operand's type; MEAN divides, so it needs a float. */
static kiln_status infer_collective(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    if (n->op != IR_ALL_REDUCE) return infer_shard(g, n, msg, msg_size);
    const ir_node *x = input(g, n, 0);
    static const char *const kinds[] = {"sum", "mean", "max"};
    if ((unsigned)n->a.reduce_kind > KILN_REDUCE_MAX)
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "the reduction %d is not KILN_REDUCE_SUM, _MEAN or _MAX",
             n->a.reduce_kind);
    if (!ir_dtype_accepts(IRT_NUMERIC, x->dtype))
        FAIL(KILN_STATUS_DTYPE, "all_reduce takes numeric dtypes, not %s",
             kiln_dtype_name(x->dtype));
    if (n->a.reduce_kind == KILN_REDUCE_MEAN && !ir_dtype_is_float(x->dtype))
        FAIL(KILN_STATUS_DTYPE, "all_reduce %s needs a float dtype (f32, f64, bf16, f16), not %s",
             kinds[n->a.reduce_kind], kiln_dtype_name(x->dtype));
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_STATUS_OK;
}

static kiln_status infer_scan(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *x = input(g, n, 0);
    if (!ir_dtype_accepts(IRT_NUMERIC, x->dtype))
        FAIL(KILN_STATUS_DTYPE,
             "cumsum takes a numeric dtype (f32, f64, bf16, f16, i32, i64), not %s",
             kiln_dtype_name(x->dtype));
    if (n->a.scan.axis < 0 || n->a.scan.axis >= x->shape.rank)
        FAIL(KILN_STATUS_SHAPE, "cumsum: axis %d is out of range for rank %d", n->a.scan.axis,
             x->shape.rank);
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_STATUS_OK;
}

/* cholesky and triangular_solve: square matrices over the last two axes of a (f32 or f64),
 * b of a's dtype and batch axes with its own matrix [m, n] (left side) or [n, m]; the result
 * has a's type (cholesky) or b's. */
static kiln_status infer_linalg(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const char *name = ir_ops[n->op].name;
    const ir_node *a = input(g, n, 0);
    if (a->dtype != KILN_DTYPE_F32 && a->dtype != KILN_DTYPE_F64)
        FAIL(KILN_STATUS_DTYPE, "%s takes f32 or f64 matrices, not %s", name,
             kiln_dtype_name(a->dtype));
    int r = a->shape.rank;
    if (r < 2 || a->shape.dims[r - 1] != a->shape.dims[r - 2])
        FAIL(KILN_STATUS_SHAPE,
             "%s: a must be square matrices [..., m, m], not rank %d with last "
             "axes %lld x %lld",
             name, r, r >= 2 ? (long long)a->shape.dims[r - 2] : 0LL,
             r >= 1 ? (long long)a->shape.dims[r - 1] : 0LL);
    n->dtype = a->dtype;
    n->shape = a->shape;
    if (n->op == IR_CHOLESKY) return KILN_STATUS_OK;
    const ir_node *b = input(g, n, 1);
    if (b->dtype != a->dtype)
        FAIL(KILN_STATUS_DTYPE, "%s: b is %s where a is %s", name, kiln_dtype_name(b->dtype),
             kiln_dtype_name(a->dtype));
    bool same = b->shape.rank == r;
    for (int i = 0; same && i < r - 2; i++) same = b->shape.dims[i] == a->shape.dims[i];
    int64_t m = a->shape.dims[r - 1];
    if (!same || b->shape.dims[n->a.tri.left_side ? r - 2 : r - 1] != m)
        FAIL(KILN_STATUS_SHAPE, "%s: b must be [..., %s] with a's batch axes, for a of m = %lld",
             name, n->a.tri.left_side ? "m, n" : "n, m", (long long)m);
    n->shape = b->shape;
    return KILN_STATUS_OK;
}

/* argsort: i32 positions along sort.axis, k of them (0 <= k <= the axis' length, which an
 * i32 must be able to name). Bool sorts as 0 < 1. */
static kiln_status infer_sort(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *x = input(g, n, 0);
    int ax = n->a.sort.axis;
    if (!ir_dtype_valid(x->dtype))
        FAIL(KILN_STATUS_DTYPE, "argsort: %s is not a dtype it sorts", kiln_dtype_name(x->dtype));
    if (ax < 0 || ax >= x->shape.rank)
        FAIL(KILN_STATUS_SHAPE, "argsort: axis %d is out of range for rank %d", ax, x->shape.rank);
    int64_t len = x->shape.dims[ax];
    if (len > INT32_MAX)
        FAIL(KILN_STATUS_SHAPE,
             "argsort: axis %d has %lld elements; i32 positions cannot name them", ax,
             (long long)len);
    if (n->a.sort.k < 0 || n->a.sort.k > len)
        FAIL(KILN_STATUS_SHAPE, "argsort: k = %d is outside [0, %lld], the length of axis %d",
             n->a.sort.k, (long long)len, ax);
    n->dtype = KILN_DTYPE_I32;
    n->shape = x->shape;
    n->shape.dims[ax] = n->a.sort.k;
    return KILN_STATUS_OK;
}

/* q [B, T, N, H], k [B, S, K, H], v [B, S, K, Hv] (or all without B) -> [B, T, N, Hv]: N
 * query heads share K key/value heads in groups of N / K (jax.nn.dot_product_attention). */
/* A gradient kind's ct [.., T, N, Hv], lse and delta [.., T, N]. */
static kiln_status infer_attention_grad(const kiln_graph *g, ir_node *n, char *msg,
                                        size_t msg_size) {
    const ir_node *q = input(g, n, 0), *v = input(g, n, 2);
    int r = q->shape.rank;
    ir_shape out = q->shape, rows = q->shape;
    out.dims[r - 1] = v->shape.dims[r - 1];
    rows.rank = r - 1;
    kiln_dtype st = ir_attn_sum_dtype(q->dtype);
    static const char *const what[] = {"the output's cotangent", "the log-sum-exp", "delta"};
    for (uint32_t i = 3; i < 6; i++) {
        const ir_node *x = input(g, n, i);
        kiln_dtype t = i == 3 ? q->dtype : st;
        const ir_shape *want = i == 3 ? &out : &rows;
        if (x->dtype == t && ir_shape_eq(&x->shape, want)) continue;
        char a[96], b[96];
        FAIL(x->dtype != t ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE, "%s must be %s, not %s",
             what[i - 3], ir_type_str(t, want, a, sizeof a),
             ir_type_str(x->dtype, &x->shape, b, sizeof b));
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_attention(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    int kind = n->a.attn.kind;
    if (!ir_attn_kind_name(kind)) FAIL(KILN_STATUS_INVALID_ARGUMENT, "unknown kind %d", kind);
    if (n->n_in != ir_attn_operands(kind))
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "the %s kind takes %u operands, not %u",
             ir_attn_kind_name(kind), ir_attn_operands(kind), n->n_in);
    const ir_node *q = input(g, n, 0), *k = input(g, n, 1);
    const ir_node *v = kind == IR_ATTN_LSE ? k : input(g, n, 2);
    int r = q->shape.rank;
    if (!ir_dtype_accepts(IRT_FLOAT, q->dtype))
        FAIL(KILN_STATUS_DTYPE, "dot_product_attention takes f32, f64, bf16 or f16, not %s",
             kiln_dtype_name(q->dtype));
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        FAIL(KILN_STATUS_DTYPE, "query, key and value must have one dtype, not %s, %s and %s",
             kiln_dtype_name(q->dtype), kiln_dtype_name(k->dtype), kiln_dtype_name(v->dtype));
    if ((r != 3 && r != 4) || k->shape.rank != r || v->shape.rank != r)
        FAIL(KILN_STATUS_SHAPE,
             "query, key and value must all be [B, T, N, H] or all [T, N, H], not of ranks %d, %d "
             "and %d",
             r, k->shape.rank, v->shape.rank);
    const int64_t *qd = q->shape.dims, *kd = k->shape.dims, *vd = v->shape.dims;
    if (r == 4 && (kd[0] != qd[0] || vd[0] != qd[0]))
        FAIL(KILN_STATUS_SHAPE,
             "query, key and value must have one batch size, not %lld, %lld and "
             "%lld",
             (long long)qd[0], (long long)kd[0], (long long)vd[0]);
    int t = r - 3; /* the sequence axis */
    if (vd[t] != kd[t] || vd[t + 1] != kd[t + 1])
        FAIL(KILN_STATUS_SHAPE,
             "key and value must agree on [S, K], not [%lld, %lld] and [%lld, %lld]",
             (long long)kd[t], (long long)kd[t + 1], (long long)vd[t], (long long)vd[t + 1]);
    if (kd[t + 2] != qd[t + 2])
        FAIL(KILN_STATUS_SHAPE, "query and key must have one head size H, not %lld and %lld",
             (long long)qd[t + 2], (long long)kd[t + 2]);
    if (kd[t] == 0) FAIL(KILN_STATUS_SHAPE, "the key length S is 0: there is nothing to attend to");
    if (kd[t + 1] == 0 || qd[t + 1] % kd[t + 1])
        FAIL(KILN_STATUS_SHAPE,
             "the %lld query heads must be a multiple of the %lld key/value heads (grouped-query "
             "attention)",
             (long long)qd[t + 1], (long long)kd[t + 1]);
    if (!isfinite(n->a.attn.scale))
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "the scale %g is not finite", n->a.attn.scale);
    double fill = n->a.attn.fill; /* finite in the operands' dtype: the primitive form's */
    unsigned char fill_in[8];
    if (fill != -INFINITY && (!ir_scalar_store(q->dtype, fill, fill_in) ||
                              !isfinite(ir_scalar_load(q->dtype, fill_in, 0))))
        FAIL(KILN_STATUS_INVALID_ARGUMENT,
             "the score of a key a causal query does not see (fill) must be -inf or finite in "
             "%s, not %g",
             kiln_dtype_name(q->dtype), fill);
    if (kind >= IR_ATTN_GRAD_Q) {
        kiln_status s = infer_attention_grad(g, n, msg, msg_size);
        if (s) return s;
    }
    const ir_node *like = kind == IR_ATTN_GRAD_K ? k : kind == IR_ATTN_GRAD_V ? v : q;
    n->dtype = like->dtype;
    n->shape = like->shape;
    if (kind == IR_ATTN_FORWARD) n->shape.dims[r - 1] = vd[r - 1];
    if (kind == IR_ATTN_LSE) n->dtype = ir_attn_sum_dtype(q->dtype), n->shape.rank = r - 1;
    return KILN_STATUS_OK;
}

/* ------------------------------------------------------------ convolution ---- */

static bool conv_is_perm(const int *p, int n) {
    bool seen[KILN_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) return false;
        seen[p[i]] = true;
    }
    return true;
}

/* The shape of [b, f, spatial...] laid out by spec (spec[0] the axis of b, ...). */
static ir_shape conv_shape(const int *spec, int ns, int64_t b, int64_t f, const int64_t *sp) {
    ir_shape s = {.rank = ns + 2};
    s.dims[spec[0]] = b, s.dims[spec[1]] = f;
    for (int d = 0; d < ns; d++) s.dims[spec[2 + d]] = sp[d];
    return s;
}

/* The element strides of the logical axes of shape s laid out by spec (ir_conv_geom's). */
static void conv_strides(const ir_shape *s, const int *spec, int ns, int64_t *st) {
    int64_t row[KILN_MAX_RANK], k = 1;
    for (int i = s->rank - 1; i >= 0; i--) row[i] = k, k *= s->dims[i];
    for (int a = 0; a < ns + 2; a++) st[a] = row[spec[a]];
}

static bool conv_same_shape(const ir_shape *a, const ir_shape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

kiln_status ir_conv_geometry(const kiln_graph *g, const ir_node *n, ir_conv_geom *gm, char *msg,
                             size_t msg_size) {
    static const char *const what[] = {"lhs and kernel", "cotangent and kernel",
                                       "lhs and cotangent"};
    const ir_node *a = input(g, n, 0), *b = input(g, n, 1);
    int kind = n->a.conv.kind, r = a->shape.rank, ns = r - 2;
    memset(gm, 0, sizeof *gm);
    if (kind < IR_CONV_FORWARD || kind > IR_CONV_FILTER_GRAD)
        FAIL(KILN_STATUS_INVALID_ARGUMENT,
             "convolution kind %d is not forward, input_grad or "
             "filter_grad",
             kind);
    if (a->dtype != b->dtype || !ir_dtype_accepts(IRT_NUMERIC, a->dtype))
        FAIL(KILN_STATUS_DTYPE, "convolution: the %s need one numeric dtype, not %s and %s",
             what[kind], kiln_dtype_name(a->dtype), kiln_dtype_name(b->dtype));
    if (b->shape.rank != r || ns < 1 || ns > KILN_CONV_MAX_SPATIAL)
        FAIL(KILN_STATUS_SHAPE, "convolution: the %s need one rank, 3 to %d, not %d and %d",
             what[kind], KILN_CONV_MAX_SPATIAL + 2, r, b->shape.rank);
    const int *ls = n->a.conv.lhs, *rs = n->a.conv.rhs, *os = n->a.conv.out;
    if (!conv_is_perm(ls, r) || !conv_is_perm(rs, r) || !conv_is_perm(os, r))
        FAIL(KILN_STATUS_SHAPE, "convolution: each spec must be a permutation of 0..%d", r - 1);
    gm->ns = ns;
    gm->groups = n->a.conv.groups;
    if (gm->groups < 1)
        FAIL(KILN_STATUS_SHAPE, "convolution: groups %lld must be >= 1", (long long)gm->groups);
    const ir_shape *lhs = kind == IR_CONV_INPUT_GRAD ? NULL : &a->shape;
    const ir_shape *ker = kind == IR_CONV_FILTER_GRAD ? NULL : &b->shape;
    const ir_shape *ct = kind == IR_CONV_INPUT_GRAD    ? &a->shape
                         : kind == IR_CONV_FILTER_GRAD ? &b->shape
                                                       : NULL;
    const int64_t *sizes = n->a.conv.sizes;
    int64_t ig = 0; /* i * groups, checked */
    if (ker) gm->o = ker->dims[rs[0]], gm->i = ker->dims[rs[1]];
    if (lhs) gm->n = lhs->dims[ls[0]], gm->c = lhs->dims[ls[1]];
    if (!ker) {
        gm->o = ct->dims[os[1]];
        if (gm->c % gm->groups)
            FAIL(KILN_STATUS_SHAPE, "convolution: groups %lld do not divide the %lld lhs features",
                 (long long)gm->groups, (long long)gm->c);
        gm->i = gm->c / gm->groups;
    }
    if (!kn_mul_i64(gm->i, gm->groups, &ig) || ig > IR_DIM_MAX)
        FAIL(KILN_STATUS_SHAPE, "convolution: %lld input features x %lld groups overflows",
             (long long)gm->i, (long long)gm->groups);
    if (!lhs) gm->n = ct->dims[os[0]], gm->c = ig;
    if (gm->c != ig)
        FAIL(KILN_STATUS_SHAPE,
             "convolution: lhs has %lld features; the kernel takes %lld x %lld groups = %lld",
             (long long)gm->c, (long long)gm->i, (long long)gm->groups, (long long)ig);
    if (gm->o % gm->groups)
        FAIL(KILN_STATUS_SHAPE, "convolution: groups %lld do not divide the %lld output features",
             (long long)gm->groups, (long long)gm->o);
    const int64_t lim = (int64_t)1 << 40;
    for (int d = 0; d < ns; d++) {
        int64_t s = n->a.conv.stride[d], ld = n->a.conv.ld[d], rd = n->a.conv.rd[d];
        int64_t lo = n->a.conv.lo[d], hi = n->a.conv.hi[d];
        if (s < 1 || ld < 1 || rd < 1 || s > lim || ld > lim || rd > lim)
            FAIL(KILN_STATUS_SHAPE,
                 "convolution: spatial axis %d: stride %lld, lhs_dilation %lld and "
                 "rhs_dilation %lld must be in [1, 2^40]",
                 d, (long long)s, (long long)ld, (long long)rd);
        if (lo < -lim || lo > lim || hi < -lim || hi > lim)
            FAIL(KILN_STATUS_SHAPE,
                 "convolution: spatial axis %d: padding (%lld, %lld) is outside [-2^40, 2^40]", d,
                 (long long)lo, (long long)hi);
        gm->in[d] = lhs ? lhs->dims[ls[2 + d]] : sizes[d];
        gm->k[d] = ker ? ker->dims[rs[2 + d]] : sizes[d];
        if (gm->in[d] < 0 || gm->in[d] > IR_DIM_MAX || gm->k[d] < 1 || gm->k[d] > IR_DIM_MAX)
            FAIL(KILN_STATUS_SHAPE,
                 "convolution: spatial axis %d: lhs size %lld and kernel size %lld (>= 1)", d,
                 (long long)gm->in[d], (long long)gm->k[d]);
        /* the dilated extents, each at most IR_DIM_MAX, so the padded one fits an int64 */
        int64_t dil = 0, w = 0;
        if ((gm->in[d] && (!kn_mul_i64(gm->in[d] - 1, ld, &dil) || dil >= IR_DIM_MAX)) ||
            !kn_mul_i64(gm->k[d] - 1, rd, &w) || w >= IR_DIM_MAX)
            FAIL(KILN_STATUS_SHAPE,
                 "convolution: spatial axis %d: the dilated lhs (%lld by %lld) or kernel (%lld "
                 "by %lld) is larger than 2^62",
                 d, (long long)gm->in[d], (long long)ld, (long long)gm->k[d], (long long)rd);
        int64_t padded = (gm->in[d] ? dil + 1 : 0) + lo + hi;
        w += 1;
        if (padded < 0)
            FAIL(KILN_STATUS_SHAPE,
                 "convolution: spatial axis %d: padding (%lld, %lld) leaves %lld elements of %lld",
                 d, (long long)lo, (long long)hi, (long long)padded, (long long)gm->in[d]);
        gm->out[d] = padded < w ? 0 : (padded - w) / s + 1;
        if (kind == IR_CONV_FORWARD && sizes[d] != gm->out[d])
            FAIL(KILN_STATUS_SHAPE,
                 "convolution: spatial axis %d: sizes says %lld, the window gives %lld", d,
                 (long long)sizes[d], (long long)gm->out[d]);
    }
    gm->lhs = conv_shape(ls, ns, gm->n, gm->c, gm->in);
    gm->rhs = conv_shape(rs, ns, gm->o, gm->i, gm->k);
    gm->res = conv_shape(os, ns, gm->n, gm->o, gm->out);
    conv_strides(&gm->lhs, ls, ns, gm->lhs_st);
    conv_strides(&gm->rhs, rs, ns, gm->rhs_st);
    conv_strides(&gm->res, os, ns, gm->res_st);
    if (ct && !conv_same_shape(ct, &gm->res)) {
        char have[IR_TYPE_STR_MAX], want[IR_TYPE_STR_MAX];
        ir_type_str(a->dtype, ct, have, sizeof have);
        ir_type_str(a->dtype, &gm->res, want, sizeof want);
        FAIL(KILN_STATUS_SHAPE,
             "convolution %s: the cotangent is %s; the convolution's output "
             "is %s",
             ir_conv_kind_name(kind), have, want);
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_conv(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    ir_conv_geom gm;
    kiln_status s = ir_conv_geometry(g, n, &gm, msg, msg_size);
    if (s) return s;
    int kind = n->a.conv.kind;
    n->dtype = input(g, n, 0)->dtype;
    n->shape = kind == IR_CONV_FORWARD ? gm.res : kind == IR_CONV_INPUT_GRAD ? gm.lhs : gm.rhs;
    return KILN_STATUS_OK;
}

/* Operands [x, (update,) starts...]: one rank-0 integer start per axis of x. */
static kiln_status check_starts(const kiln_graph *g, const ir_node *n, uint32_t first, char *msg,
                                size_t msg_size) {
    const ir_node *x = input(g, n, 0);
    char xs[IR_TYPE_STR_MAX];
    ir_type_str(x->dtype, &x->shape, xs, sizeof xs);
    if (n->n_in != first + (uint32_t)x->shape.rank)
        FAIL(KILN_STATUS_SHAPE, "%u start indices for an operand of rank %d (%s): one per axis",
             n->n_in - first, x->shape.rank, xs);
    for (uint32_t i = first; i < n->n_in; i++) {
        const ir_node *s = input(g, n, i);
        if (s->shape.rank != 0 || (s->dtype != KILN_DTYPE_I32 && s->dtype != KILN_DTYPE_I64)) {
            char ss[IR_TYPE_STR_MAX];
            ir_type_str(s->dtype, &s->shape, ss, sizeof ss);
            FAIL(KILN_STATUS_DTYPE, "start index %u is %s; it must be a rank-0 i32 or i64 value",
                 i - first, ss);
        }
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_dynamic(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    if (n->n_in < 1) FAIL(KILN_STATUS_INVALID_ARGUMENT, "needs an operand");
    bool update = n->op == IR_DYNAMIC_UPDATE_SLICE;
    if (update && n->n_in < 2) FAIL(KILN_STATUS_INVALID_ARGUMENT, "needs an operand and an update");
    kiln_status st = check_starts(g, n, update ? 2 : 1, msg, msg_size);
    if (st) return st;
    const ir_node *x = input(g, n, 0);
    char xs[IR_TYPE_STR_MAX], us[IR_TYPE_STR_MAX];
    ir_type_str(x->dtype, &x->shape, xs, sizeof xs);
    n->dtype = x->dtype;
    if (!update) {
        n->shape.rank = x->shape.rank;
        for (int a = 0; a < x->shape.rank; a++) {
            int64_t sz = n->a.dyn_sizes[a];
            if (sz < 0 || sz > x->shape.dims[a])
                FAIL(KILN_STATUS_SHAPE, "axis %d: size %lld does not fit in the operand %s", a,
                     (long long)sz, xs);
            n->shape.dims[a] = sz;
        }
        return KILN_STATUS_OK;
    }
    const ir_node *u = input(g, n, 1);
    ir_type_str(u->dtype, &u->shape, us, sizeof us);
    if (u->dtype != x->dtype)
        FAIL(KILN_STATUS_DTYPE, "the update %s and the operand %s differ in dtype", us, xs);
    if (u->shape.rank != x->shape.rank)
        FAIL(KILN_STATUS_SHAPE, "the update %s and the operand %s differ in rank", us, xs);
    for (int a = 0; a < x->shape.rank; a++)
        if (u->shape.dims[a] > x->shape.dims[a])
            FAIL(KILN_STATUS_SHAPE, "axis %d: the update %s is larger than the operand %s", a, us,
                 xs);
    n->shape = x->shape;
    return KILN_STATUS_OK;
}

/* ------------------------------------------------------- gather/scatter ---- */

/* The per-axis dimension numbers of a GATHER or SCATTER (ir.h's gs) against the operand x
 * and indices ix: each index-vector position used once, batching axes paired with distinct
 * indices axes (not the index vector) of the same size, window axes increasing and below
 * out_rank, and exactly the axes neither collapsed nor batching hold a window. The field
 * names are XLA's, so a message reads as the builder's dimension numbers do. */
static kiln_status check_gs(const ir_node *n, const ir_node *x, const ir_node *ix, int out_rank,
                            char *msg, size_t msg_size) {
    bool g = n->op == IR_GATHER;
    const char *wf = g ? "offset_dims" : "update_window_dims";
    const char *mf = g ? "start_index_map" : "scatter_dims_to_operand_dims";
    const char *bf = g ? "start_indices_batching_dims" : "scatter_indices_batching_dims";
    int k_len = (int)ix->shape.dims[ix->shape.rank - 1], used = 0, last_w = -1;
    uint32_t idx_seen = 0, batch_seen = 0;
    if (n->a.gs.mode != KILN_GATHER_FILL && n->a.gs.mode != KILN_GATHER_CLIP)
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "mode %d: only FILL and CLIP", n->a.gs.mode);
    for (int a = 0; a < x->shape.rank; a++) {
        int w = n->a.gs.window[a], k = n->a.gs.index[a], b = n->a.gs.batch[a];
        if (k < -1 || k >= k_len || (k >= 0 && (idx_seen >> k & 1u)))
            FAIL(KILN_STATUS_SHAPE,
                 "%s: operand axis %d takes index-vector entry %d of %d (each "
                 "entry once)",
                 mf, a, k, k_len);
        if (k >= 0) idx_seen |= 1u << k, used++;
        if (b < -1 || b >= ix->shape.rank - 1 || (b >= 0 && (batch_seen >> b & 1u)))
            FAIL(KILN_STATUS_SHAPE,
                 "%s: operand axis %d pairs with indices axis %d (an axis "
                 "other than the index vector's, once)",
                 bf, a, b);
        if (b >= 0) {
            batch_seen |= 1u << b;
            if (k >= 0 || w >= 0)
                FAIL(KILN_STATUS_SHAPE,
                     "operand_batching_dims: axis %d is batching and also "
                     "indexed or a window axis",
                     a);
            if (x->shape.dims[a] != ix->shape.dims[b])
                FAIL(KILN_STATUS_SHAPE,
                     "operand_batching_dims: operand axis %d (%lld) and "
                     "indices axis %d (%lld) differ in size",
                     a, (long long)x->shape.dims[a], b, (long long)ix->shape.dims[b]);
        }
        if (w >= 0 && (w <= last_w || w >= out_rank))
            FAIL(KILN_STATUS_SHAPE,
                 "%s: operand axis %d's window on axis %d (increasing, below "
                 "rank %d)",
                 wf, a, w, out_rank);
        if (w >= 0) last_w = w;
    }
    if (used != k_len)
        FAIL(KILN_STATUS_SHAPE,
             "%s names %d operand axes, but the index vector (the last axis "
             "of indices) has %d entries",
             mf, used, k_len);
    return KILN_STATUS_OK;
}

static int gs_windows(const ir_node *n, int rank) {
    int c = 0;
    for (int a = 0; a < rank; a++) c += n->a.gs.window[a] >= 0;
    return c;
}

/* The batch axes of `shape` (those no window axis names, in order) against indices'. */
static kiln_status check_batch_axes(const ir_node *n, const ir_node *x, const ir_node *ix,
                                    const ir_shape *s, const char *what, char *msg,
                                    size_t msg_size) {
    uint32_t win = 0;
    for (int a = 0; a < x->shape.rank; a++)
        if (n->a.gs.window[a] >= 0) win |= 1u << n->a.gs.window[a];
    for (int i = 0, j = 0; i < s->rank; i++) {
        if (win >> i & 1u) continue;
        if (s->dims[i] != ix->shape.dims[j])
            FAIL(KILN_STATUS_SHAPE,
                 "%s axis %d (%lld) is batch axis %d of indices (%lld): they "
                 "must be equal",
                 what, i, (long long)s->dims[i], j, (long long)ix->shape.dims[j]);
        j++;
    }
    return KILN_STATUS_OK;
}

static kiln_status infer_gather_scatter(const kiln_graph *g, ir_node *n, char *msg,
                                        size_t msg_size) {
    const ir_node *x = input(g, n, 0), *ix = input(g, n, 1);
    bool gather = n->op == IR_GATHER;
    if (x->shape.rank < 1) FAIL(KILN_STATUS_SHAPE, "the operand must have rank >= 1");
    if (ix->dtype != KILN_DTYPE_I32 && ix->dtype != KILN_DTYPE_I64)
        FAIL(KILN_STATUS_DTYPE, "indices must be i32 or i64, not %s", kiln_dtype_name(ix->dtype));
    if (ix->shape.rank < 1)
        FAIL(KILN_STATUS_SHAPE, "indices must have rank >= 1 (the last axis is the index vector)");
    int out_rank = ix->shape.rank - 1 + gs_windows(n, x->shape.rank);
    if (out_rank > KILN_MAX_RANK)
        FAIL(KILN_STATUS_SHAPE, "the %s would have rank %d (the most is %d)",
             gather ? "output" : "updates", out_rank, KILN_MAX_RANK);
    kiln_status st = check_gs(n, x, ix, out_rank, msg, msg_size);
    if (st) return st;
    n->dtype = x->dtype;
    if (gather) {
        double f = n->a.gs.fill;
        if (!ir_dtype_is_float(x->dtype) && (!isfinite(f) || f != floor(f) || fabs(f) > 0x1p63 ||
                                             (x->dtype == KILN_DTYPE_I32 && fabs(f) > 0x1p31) ||
                                             (x->dtype == KILN_DTYPE_BOOL && f != 0 && f != 1)))
            FAIL(KILN_STATUS_INVALID_ARGUMENT, "fill_value %g is not an %s value", f,
                 kiln_dtype_name(x->dtype));
        ir_shape o = {.rank = out_rank};
        for (int i = 0; i < out_rank; i++) o.dims[i] = -1;
        for (int a = 0; a < x->shape.rank; a++) {
            int64_t sz = n->a.gs.sizes[a];
            bool win = n->a.gs.window[a] >= 0;
            if (sz < 0 || sz > x->shape.dims[a] || (!win && sz != 1))
                FAIL(KILN_STATUS_SHAPE, "slice_sizes[%d] = %lld: it must be in [0, %lld]%s", a,
                     (long long)sz, (long long)x->shape.dims[a],
                     win ? "" : " and 1 for a collapsed or batching axis");
            if (win) o.dims[n->a.gs.window[a]] = sz;
        }
        for (int i = 0, j = 0; i < out_rank; i++)
            if (o.dims[i] < 0) o.dims[i] = ix->shape.dims[j++];
        n->shape = o;
        return KILN_STATUS_OK;
    }
    const ir_node *u = input(g, n, 2);
    char xs[IR_TYPE_STR_MAX], us[IR_TYPE_STR_MAX];
    ir_type_str(x->dtype, &x->shape, xs, sizeof xs);
    ir_type_str(u->dtype, &u->shape, us, sizeof us);
    if (u->dtype != x->dtype)
        FAIL(KILN_STATUS_DTYPE, "the updates %s and the operand %s differ in dtype", us, xs);
    if (n->a.gs.kind < 0 || n->a.gs.kind > KILN_SCATTER_MAX)
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "kind %d is not a kiln_scatter_kind", n->a.gs.kind);
    if (n->a.gs.kind != KILN_SCATTER_SET && !ir_dtype_accepts(IRT_NUMERIC, x->dtype))
        FAIL(KILN_STATUS_DTYPE, "scatter %s takes numeric dtypes, not %s",
             ir_scatter_kind_name(n->a.gs.kind), kiln_dtype_name(x->dtype));
    if (u->shape.rank != out_rank)
        FAIL(KILN_STATUS_SHAPE,
             "the updates %s must have rank %d (indices' batch axes and one "
             "update_window_dims axis per operand axis neither inserted nor batching)",
             us, out_rank);
    for (int a = 0; a < x->shape.rank; a++) {
        int w = n->a.gs.window[a];
        if (w >= 0 && u->shape.dims[w] > x->shape.dims[a])
            FAIL(KILN_STATUS_SHAPE,
                 "update_window_dims: updates axis %d (%lld) is larger than "
                 "operand axis %d (%lld)",
                 w, (long long)u->shape.dims[w], a, (long long)x->shape.dims[a]);
    }
    st = check_batch_axes(n, x, ix, &u->shape, "updates", msg, msg_size);
    if (st) return st;
    n->shape = x->shape;
    return KILN_STATUS_OK;
}

static kiln_status infer_index(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    if (n->op == IR_GATHER || n->op == IR_SCATTER) return infer_gather_scatter(g, n, msg, msg_size);
    if (n->op == IR_DYNAMIC_SLICE || n->op == IR_DYNAMIC_UPDATE_SLICE)
        return infer_dynamic(g, n, msg, msg_size);
    const ir_node *t = input(g, n, 0), *idx = input(g, n, 1);
    if (t->shape.rank < 1) FAIL(KILN_STATUS_SHAPE, "the table/operand must have rank >= 1");
    if (!ir_dtype_is_int(idx->dtype))
        FAIL(KILN_STATUS_DTYPE, "indices must be i32 or i64, not %s", kiln_dtype_name(idx->dtype));
    int rank = idx->shape.rank + t->shape.rank - 1;
    if (rank > KILN_MAX_RANK)
        FAIL(KILN_STATUS_SHAPE, "rows of rank %d indexed by rank %d give rank %d (the most is %d)",
             t->shape.rank - 1, idx->shape.rank, rank, KILN_MAX_RANK);
    ir_shape rows = idx->shape;
    for (int i = 1; i < t->shape.rank; i++) rows.dims[rows.rank++] = t->shape.dims[i];
    n->dtype = t->dtype;
    if (n->op == IR_TAKE_ROWS) {
        int64_t count = 0;
        ir_shape_numel(&rows, &count);
        if (t->shape.dims[0] == 0 && count > 0) /* shapes are static: say so now */
            FAIL(KILN_STATUS_SHAPE, "the table has no rows to take %lld elements from",
                 (long long)count);
        n->shape = rows;
        return KILN_STATUS_OK;
    }
    const ir_node *u = input(g, n, 2);
    if (!ir_dtype_accepts(IRT_NUMERIC, t->dtype))
        FAIL(KILN_STATUS_DTYPE, "scatter_add_rows takes numeric dtypes, not %s",
             kiln_dtype_name(t->dtype));
    if (u->dtype != t->dtype)
        FAIL(KILN_STATUS_DTYPE, "updates are %s, the operand %s", kiln_dtype_name(u->dtype),
             kiln_dtype_name(t->dtype));
    if (!ir_shape_eq(&u->shape, &rows)) {
        char want[IR_TYPE_STR_MAX];
        FAIL(KILN_STATUS_SHAPE, "updates must have shape indices.shape + operand.shape[1:] = %s",
             ir_type_str(t->dtype, &rows, want, sizeof want));
    }
    n->shape = t->shape;
    return KILN_STATUS_OK;
}

/* memory_put: its operand's type, in a memory kind that exists. */
static kiln_status infer_transfer(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_node *x = input(g, n, 0);
    if (!ir_memory_kind_name(n->a.memory_kind))
        FAIL(KILN_STATUS_INVALID_ARGUMENT,
             "memory kind %d is not a kiln_memory_kind (KILN_MEMORY_DEVICE or "
             "KILN_MEMORY_PINNED_HOST)",
             n->a.memory_kind);
    if (ir_in_host(g, ir_in(n)[0]) == (n->a.memory_kind == KILN_MEMORY_PINNED_HOST))
        FAIL(KILN_STATUS_INVALID_ARGUMENT, "the operand (%%%u) is in %s memory already",
             ir_in(n)[0], ir_memory_kind_name(n->a.memory_kind));
    n->dtype = x->dtype;
    n->shape = x->shape;
    return KILN_STATUS_OK;
}

/* A value in host memory is only copied back (kiln.h, kiln_memory_put). */
static kiln_status no_host_reads(const kiln_graph *g, const ir_node *n, char *msg,
                                 size_t msg_size) {
    if (n->op == IR_MEMORY_PUT) return KILN_STATUS_OK;
    const uint32_t *in = ir_in(n);
    /* a loop or branch passes its captures to its sub-graphs as they are: a sub-graph
     * fetches a host capture itself (its parameter is of that kind: ir_infer_control) */
    uint32_t n_read =
        ir_ops[n->op].kind == IRK_CONTROL && n->region ? ir_control_capture_base(n, 0) : n->n_in;
    for (uint32_t k = 0; k < n_read; k++)
        if (ir_in_host(g, in[k]))
            FAIL(KILN_STATUS_INVALID_ARGUMENT,
                 "%s reads operand %u (%%%u) in pinned_host memory: nothing computes on host "
                 "memory; bring it back with kiln_memory_put(g, x, KILN_MEMORY_DEVICE) first",
                 ir_ops[n->op].name, k, in[k]);
    return KILN_STATUS_OK;
}

kiln_status ir_infer(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size) {
    const ir_op_info *info = &ir_ops[n->op];
    msg[0] = 0;
    if (info->arity >= 0 && n->n_in != (uint32_t)info->arity)
        FAIL(KILN_STATUS_INTERNAL, "%s takes %d operands, has %u", info->name, info->arity,
             n->n_in);
    kiln_status s;
    switch (info->kind) {
    case IRK_SOURCE: s = infer_source(n, msg, msg_size); break;
    case IRK_UNARY:
    case IRK_BINARY:
    case IRK_SELECT: s = infer_elementwise(g, n, msg, msg_size); break;
    case IRK_SHAPE: s = infer_shape_op(g, n, msg, msg_size); break;
    case IRK_REDUCE: s = infer_reduce(g, n, msg, msg_size); break;
    case IRK_DOT: s = infer_dot(g, n, msg, msg_size); break;
    case IRK_INDEX: s = infer_index(g, n, msg, msg_size); break;
    case IRK_COLLECTIVE: s = infer_collective(g, n, msg, msg_size); break;
    case IRK_SCAN: s = infer_scan(g, n, msg, msg_size); break;
    case IRK_ATTENTION: s = infer_attention(g, n, msg, msg_size); break;
    case IRK_SORT: s = infer_sort(g, n, msg, msg_size); break;
    case IRK_CONTROL: s = ir_infer_control(g, n, msg, msg_size); break;
    case IRK_RESULT: s = ir_infer_result(g, n, msg, msg_size); break;
    case IRK_TRANSFER: s = infer_transfer(g, n, msg, msg_size); break;
    case IRK_CONV: s = infer_conv(g, n, msg, msg_size); break;
    case IRK_LINALG: s = infer_linalg(g, n, msg, msg_size); break;
    default: FAIL(KILN_STATUS_INTERNAL, "unknown op kind");
    }
    if (!s) s = no_host_reads(g, n, msg, msg_size);
    if (!s) s = ir_attrs_check(n, n->n_in ? input(g, n, 0)->shape.rank : 0, msg, msg_size);
    return s ? s : ir_check_shape(&n->shape, n->dtype, msg, msg_size);
}
