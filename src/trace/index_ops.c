/* index_ops.c — indexing and shape ops real models need (jnp.take, take_along_axis, stack,
 * split, argmax/argmin, cumsum, jax.nn.one_hot, flax's make_causal_mask), built from
 * primitive ops so that fusion, the reference interpreter, autodiff and graph text files
 * need nothing new for them; cumsum alone is its own op (IR_CUMSUM), because no fusion of
 * primitives makes a scan linear.
 *
 * Invariants: every user mistake is found before the first node is emitted, so an error
 * names the public call (kiln_take, ...), the operands' types and the bad argument, and
 * leaves no half-built expansion behind; after that the expansion only calls builders that
 * return the invalid value once the graph holds an error (host OOM), so a failure part way
 * through ends in the graph's sticky error and nothing else. Gathers go through take_rows
 * with indices already inside [0, n) (or clamped by it), so its rule (scatter-add into
 * zeros) is the whole gradient; filled positions are a select, whose rule gives them none. */
#include "trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* The operand's node, or NULL after recording an error naming `what`. */
static const ir_node *operand(kiln_graph *g, const char *op, kiln_value v, const char *what) {
    if (!trace_ready(g, op)) return NULL;
    return trace_node(g, op, v, what);
}

static bool index_dtype(kiln_dtype t) {
    return t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64;
}

static bool valid_mode(kiln_gather_mode m) {
    return m == KILN_GATHER_FILL || m == KILN_GATHER_CLIP || m == KILN_GATHER_WRAP;
}

static int64_t numel_of(const ir_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dims[i];
    return n; /* shapes of traced nodes are checked: no overflow */
}

/* Checks that a result shape is representable (rank, element and byte count), recording
 * the error against the operands otherwise. */
static bool result_shape_ok(kiln_graph *g, const char *op, const uint32_t *in, uint32_t n_in,
                            int rank, const int64_t *dims, kiln_dtype t) {
    if (rank > KILN_MAX_RANK) {
        trace_fail_on(g, in, n_in, KILN_STATUS_SHAPE, op,
                      "the result would have rank %d, above KILN_MAX_RANK (%d)", rank,
                      KILN_MAX_RANK);
        return false;
    }
    ir_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
    char msg[KN_ERR_MAX];
    if (ir_check_shape(&s, t, msg, sizeof msg) != KILN_STATUS_OK) {
        trace_fail_on(g, in, n_in, KILN_STATUS_SHAPE, op, "the result: %s", msg);
        return false;
    }
    return true;
}

static kiln_value scalar(kiln_graph *g, kiln_dtype t, double v) {
    return kiln_scalar(g, t, v);
}

/* JAX's fill value for an out-of-range gather (jnp.take's mode="fill"). */
static double fill_value(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_I32: return (double)INT32_MIN;
    case KILN_DTYPE_I64: return (double)INT64_MIN; /* -2^63 is a double: stored exactly */
    case KILN_DTYPE_BOOL: return 1;
    default: return NAN;
    }
}

/* Index tensor idx (integer, of dtype it) for an axis of n elements, brought into [0, n) as `mode`
 * says; *valid receives the FILL mask (bool, idx's shape) and is left invalid otherwise.
 * CLIP is left to take_rows' clamp unless `clamp` (take_along_axis computes a linear index
 * from it, which take_rows' clamp would not keep on the axis). */
static kiln_value normalise(kiln_graph *g, kiln_value idx, kiln_dtype it, int64_t n,
                            kiln_gather_mode mode, bool clamp, kiln_value *valid) {
    kiln_value zero = scalar(g, it, 0), nv = scalar(g, it, (double)n);
    *valid = KN_NONE;
    switch (mode) {
    case KILN_GATHER_CLIP:
        if (!clamp) return idx;
        return kiln_max(g, kiln_min(g, idx, scalar(g, it, (double)(n > 0 ? n - 1 : 0))), zero);
    case KILN_GATHER_WRAP: {
        /* C division truncates: the remainder has idx's sign, so a negative one gains n */
        kiln_value r = kiln_sub(g, idx, kiln_mul(g, kiln_div(g, idx, nv), nv));
        return kiln_select(g, kiln_compare(g, r, zero, KILN_CMP_LT), kiln_add(g, r, nv), r);
    }
    default: {
        kiln_value j =
            kiln_select(g, kiln_compare(g, idx, zero, KILN_CMP_LT), kiln_add(g, idx, nv), idx);
        *valid = kiln_logical_and(g, kiln_compare(g, j, zero, KILN_CMP_GE),
                                  kiln_compare(g, j, nv, KILN_CMP_LT));
        if (!clamp) return j;
        return kiln_max(g, kiln_min(g, j, scalar(g, it, (double)(n > 0 ? n - 1 : 0))), zero);
    }
    }
}

/* Checks x, indices, axis and mode shared by take and take_along_axis; fills *a. */
static bool gather_args(kiln_graph *g, const char *op, kiln_value x, kiln_value indices, int axis,
                        kiln_gather_mode mode, const ir_node **xn, const ir_node **in, int *a) {
    *xn = operand(g, op, x, "x");
    if (!*xn) return false;
    *in = trace_node(g, op, indices, "indices");
    if (!*in) return false;
    uint32_t ids[2] = {x.id, indices.id};
    if (!index_dtype((*in)->dtype)) {
        trace_fail_on(g, ids, 2, KILN_STATUS_DTYPE, op, "indices must be i32 or i64, not %s",
                      kiln_dtype_name((*in)->dtype));
        return false;
    }
    if (!valid_mode(mode)) {
        trace_fail_on(g, ids, 2, KILN_STATUS_INVALID_ARGUMENT, op,
                      "mode %d is not a kiln_gather_mode (FILL, CLIP or WRAP)", (int)mode);
        return false;
    }
    if (!trace_axis(axis, (*xn)->shape.rank, a)) {
        trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op, "axis %d is out of range for x of rank %d",
                      axis, (*xn)->shape.rank);
        return false;
    }
    return true;
}

kiln_value kiln_take(kiln_graph *g, kiln_value x, kiln_value indices, int axis,
                     kiln_gather_mode mode) {
    const char *op = "kiln_take";
    const ir_node *xn, *in;
    int a;
    if (!gather_args(g, op, x, indices, axis, mode, &xn, &in, &a)) return KN_NONE;
    uint32_t ids[2] = {x.id, indices.id};
    const ir_shape xs = xn->shape, is = in->shape;
    kiln_dtype t = xn->dtype;
    int64_t n = xs.dims[a];
    int64_t od[2 * KILN_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < a; i++) od[orank++] = xs.dims[i];
    for (int i = 0; i < is.rank; i++) od[orank++] = is.dims[i];
    for (int i = a + 1; i < xs.rank; i++) od[orank++] = xs.dims[i];
    if (!result_shape_ok(g, op, ids, 2, orank, od, t)) return KN_NONE;
    if (n == 0 && numel_of(&is) > 0)
        return trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op,
                             "cannot take %lld elements from axis %d, which is empty",
                             (long long)numel_of(&is), a);
    kiln_value idx = indices;
    kiln_dtype it = in->dtype;
    if (n > INT32_MAX && it == KILN_DTYPE_I32) /* n itself must be an index value */
        idx = kiln_convert(g, idx, KILN_DTYPE_I64), it = KILN_DTYPE_I64;
    kiln_value valid;
    kiln_value j = normalise(g, idx, it, n, mode, false, &valid);
    /* take_rows gathers along axis 0: bring `axis` to the front, then put the index axes
     * where it was */
    kiln_value table = x;
    if (a > 0) {
        int perm[KILN_MAX_RANK];
        int k = 0;
        perm[k++] = a;
        for (int i = 0; i < xs.rank; i++)
            if (i != a) perm[k++] = i;
        table = kiln_transpose(g, x, perm);
    }
    kiln_value r = kiln_take_rows(g, table, j);
    if (a > 0) {
        int perm[KILN_MAX_RANK];
        for (int p = 0; p < orank; p++) perm[p] = p < a ? is.rank + p : p < a + is.rank ? p - a : p;
        r = kiln_transpose(g, r, perm);
    }
    if (mode == KILN_GATHER_FILL) {
        int bd[KILN_MAX_RANK];
        for (int q = 0; q < is.rank; q++) bd[q] = a + q;
        kiln_value v = kiln_broadcast_in_dim(g, valid, orank, od, bd);
        r = kiln_select(g, v, r, scalar(g, t, fill_value(t)));
    }
    return r;
}

kiln_value kiln_take_along_axis(kiln_graph *g, kiln_value x, kiln_value indices, int axis,
                                kiln_gather_mode mode) {
    const char *op = "kiln_take_along_axis";
    const ir_node *xn, *in;
    int a;
    if (!gather_args(g, op, x, indices, axis, mode, &xn, &in, &a)) return KN_NONE;
    uint32_t ids[2] = {x.id, indices.id};
    const ir_shape xs = xn->shape, is = in->shape;
    kiln_dtype t = xn->dtype;
    if (is.rank != xs.rank)
        return trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op,
                             "indices must have x's rank %d, not %d", xs.rank, is.rank);
    ir_shape os = {.rank = xs.rank};
    for (int i = 0; i < xs.rank; i++) {
        if (i == a) {
            os.dims[i] = is.dims[i];
            continue;
        }
        int64_t p = xs.dims[i], q = is.dims[i];
        if (p != q && p != 1 && q != 1)
            return trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op,
                                 "axis %d: x has %lld and indices %lld elements; they must be "
                                 "equal or one of them 1",
                                 i, (long long)p, (long long)q);
        os.dims[i] = p == 1 ? q : p;
    }
    int64_t n = xs.dims[a];
    if (n == 0 && numel_of(&os) > 0)
        return trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op,
                             "cannot take %lld elements from axis %d, which is empty",
                             (long long)numel_of(&os), a);
    /* A linear index into x flattened: x itself is never broadcast (nor copied), an axis
     * where x has one element contributes nothing. int64 throughout: x may exceed 2^31. */
    kiln_value idx = kiln_convert(g, indices, KILN_DTYPE_I64);
    if (!ir_shape_eq(&is, &os)) idx = kiln_broadcast_to(g, idx, os.rank, os.dims);
    if (mode == KILN_GATHER_CLIP) { /* JAX's take_along_axis wraps negatives before it clips */
        kiln_value zero = scalar(g, KILN_DTYPE_I64, 0);
        idx = kiln_select(g, kiln_compare(g, idx, zero, KILN_CMP_LT),
                          kiln_add(g, idx, scalar(g, KILN_DTYPE_I64, (double)n)), idx);
    }
    kiln_value valid;
    kiln_value j = normalise(g, idx, KILN_DTYPE_I64, n, mode, true, &valid);
    int64_t stride[KILN_MAX_RANK] = {0}, st = 1;
    for (int i = xs.rank; i-- > 0;) stride[i] = st, st *= xs.dims[i];
    kiln_value lin =
        stride[a] == 1 ? j : kiln_mul(g, j, scalar(g, KILN_DTYPE_I64, (double)stride[a]));
    for (int i = 0; i < xs.rank; i++) {
        if (i == a || xs.dims[i] == 1) continue;
        kiln_value c = kiln_iota(g, KILN_DTYPE_I64, os.rank, os.dims, i);
        if (stride[i] != 1) c = kiln_mul(g, c, scalar(g, KILN_DTYPE_I64, (double)stride[i]));
        lin = kiln_add(g, lin, c);
    }
    int64_t flat = numel_of(&xs);
    kiln_value r = kiln_take_rows(g, kiln_reshape(g, x, 1, &flat), lin);
    if (mode == KILN_GATHER_FILL) r = kiln_select(g, valid, r, scalar(g, t, fill_value(t)));
    return r;
}

kiln_value kiln_stack(kiln_graph *g, int n, const kiln_value *xs, int axis) {
    const char *op = "kiln_stack";
    if (!trace_ready(g, op)) return KN_NONE;
    if (n < 1 || !xs)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "needs n >= 1 values and a non-NULL array (n = %d)", n);
    const ir_node *first = trace_node(g, op, xs[0], "xs[0]");
    if (!first) return KN_NONE;
    ir_shape s = first->shape;
    kiln_dtype t = first->dtype;
    for (int i = 1; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "xs[%d]", i);
        const ir_node *e = trace_node(g, op, xs[i], what);
        if (!e) return KN_NONE;
        if (e->dtype != t || !ir_shape_eq(&e->shape, &s)) {
            char want[IR_TYPE_STR_MAX], have[IR_TYPE_STR_MAX];
            uint32_t ids[2] = {xs[0].id, xs[i].id};
            return trace_fail_on(g, ids, 2, e->dtype != t ? KILN_STATUS_DTYPE : KILN_STATUS_SHAPE,
                                 op, "xs[%d] is %s; every value must be %s like xs[0]", i,
                                 ir_type_str(e->dtype, &e->shape, have, sizeof have),
                                 ir_type_str(t, &s, want, sizeof want));
        }
    }
    int a;
    if (!trace_axis(axis, s.rank + 1, &a))
        return trace_fail_on(g, &xs[0].id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for a result of rank %d", axis, s.rank + 1);
    int64_t od[KILN_MAX_RANK + 1];
    for (int i = 0, k = 0; i <= s.rank; i++) od[i] = i == a ? 1 : s.dims[k++];
    if (!result_shape_ok(g, op, &xs[0].id, 1, s.rank + 1, od, t)) return KN_NONE;
    od[a] = n;
    if (!result_shape_ok(g, op, &xs[0].id, 1, s.rank + 1, od, t)) return KN_NONE;
    od[a] = 1;
    kiln_value parts_small[8];
    kiln_value *parts = parts_small;
    if (n > 8) {
        parts = host_alloc(g->ctx, (size_t)n * sizeof *parts);
        if (!parts)
            return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d values failed",
                              n);
    }
    for (int i = 0; i < n; i++) parts[i] = kiln_reshape(g, xs[i], s.rank + 1, od);
    kiln_value r = n == 1 ? parts[0] : kiln_concatenate(g, n, parts, a);
    if (parts != parts_small) host_free(g->ctx, parts, (size_t)n * sizeof *parts);
    return r;
}

static kiln_value arg_reduce(kiln_graph *g, const char *op, kiln_value x, int axis, bool is_max) {
    const ir_node *xn = operand(g, op, x, "the operand");
    if (!xn) return KN_NONE;
    const ir_shape s = xn->shape; /* copies: xn dangles once a node is appended */
    const kiln_dtype t = xn->dtype;
    int a;
    if (!trace_axis(axis, s.rank, &a))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for rank %d", axis, s.rank);
    int64_t n = s.dims[a];
    if (n == 0)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is empty: there is no element to pick", a);
    if (n > INT32_MAX)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d has %lld elements; an i32 index cannot name them all", a,
                             (long long)n);
    kiln_value v = t == KILN_DTYPE_BOOL ? kiln_convert(g, x, KILN_DTYPE_I32) : x;
    kiln_value m = is_max ? kiln_reduce_max(g, v, 1, &a, true) : kiln_reduce_min(g, v, 1, &a, true);
    kiln_value hit = kiln_compare(g, v, m, KILN_CMP_EQ);
    /* reduce_max/min let NaN win: then m is NaN, equal to nothing, and the NaNs are the
     * hits; without a NaN in the row no element is unequal to itself */
    if (ir_dtype_is_float(t)) hit = kiln_logical_or(g, hit, kiln_compare(g, v, v, KILN_CMP_NE));
    kiln_value pos = kiln_iota(g, KILN_DTYPE_I32, s.rank, s.dims, a);
    kiln_value cand = kiln_select(g, hit, pos, scalar(g, KILN_DTYPE_I32, (double)n));
    return kiln_reduce_min(g, cand, 1, &a, false);
}

kiln_value kiln_argmax(kiln_graph *g, kiln_value x, int axis) {
    return arg_reduce(g, "kiln_argmax", x, axis, true);
}

kiln_value kiln_argmin(kiln_graph *g, kiln_value x, int axis) {
    return arg_reduce(g, "kiln_argmin", x, axis, false);
}

/* lax.cumsum as one op (IR_CUMSUM): a scan the backend runs as a library kernel in one
 * pass, O(n) per row (docs/ops.md, "cumsum"). */
kiln_value kiln_cumsum(kiln_graph *g, kiln_value x, int axis, bool reverse) {
    const char *op = "kiln_cumsum";
    const ir_node *xn = operand(g, op, x, "the operand");
    if (!xn) return KN_NONE;
    if (!ir_dtype_accepts(IRT_NUMERIC, xn->dtype))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_DTYPE, op,
                             "takes a numeric dtype (f32, f64, bf16, f16, i32, i64), not %s",
                             kiln_dtype_name(xn->dtype));
    int a;
    if (!trace_axis(axis, xn->shape.rank, &a))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for rank %d", axis, xn->shape.rank);
    ir_node n = {.op = IR_CUMSUM};
    n.a.scan.axis = a;
    n.a.scan.reverse = reverse;
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_value kiln_one_hot(kiln_graph *g, kiln_value indices, int64_t n, kiln_dtype dtype) {
    const char *op = "kiln_one_hot";
    const ir_node *in = operand(g, op, indices, "indices");
    if (!in) return KN_NONE;
    if (!index_dtype(in->dtype))
        return trace_fail_on(g, &indices.id, 1, KILN_STATUS_DTYPE, op,
                             "indices must be i32 or i64, not %s", kiln_dtype_name(in->dtype));
    if (!ir_dtype_valid(dtype))
        return trace_fail_on(g, &indices.id, 1, KILN_STATUS_DTYPE, op,
                             "dtype %d is not a kiln_dtype", (int)dtype);
    if (n < 0)
        return trace_fail_on(g, &indices.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                             "n = %lld classes must be >= 0", (long long)n);
    const ir_shape s = in->shape;
    int64_t od[KILN_MAX_RANK + 1];
    int bd[KILN_MAX_RANK];
    for (int i = 0; i < s.rank; i++) od[i] = s.dims[i], bd[i] = i;
    od[s.rank] = n;
    if (!result_shape_ok(g, op, &indices.id, 1, s.rank + 1, od, dtype)) return KN_NONE;
    kiln_value idx = indices;
    kiln_dtype it = in->dtype;
    if (n > INT32_MAX && it == KILN_DTYPE_I32)
        idx = kiln_convert(g, idx, KILN_DTYPE_I64), it = KILN_DTYPE_I64;
    kiln_value hit = kiln_compare(g, kiln_broadcast_in_dim(g, idx, s.rank + 1, od, bd),
                                  kiln_iota(g, it, s.rank + 1, od, s.rank), KILN_CMP_EQ);
    return dtype == KILN_DTYPE_BOOL ? hit : kiln_convert(g, hit, dtype);
}

/* The status a multi-output builder returns when it could not start: the graph's first
 * error, else (a NULL or finished graph, whose message is on the context) invalid. */
static kiln_status not_started(const kiln_graph *g) {
    kiln_status st = g ? kiln_graph_status(g) : KILN_STATUS_OK;
    return st ? st : KILN_STATUS_INVALID_ARGUMENT;
}

/* The split points of kiln_split into bounds[0..n]: 0, the n - 1 cuts, size. False after
 * recording the error when the parts are not equal or the indices not in order. */
static bool split_bounds(kiln_graph *g, const char *op, kiln_value x, int n, const int64_t *indices,
                         int a, int64_t size, int64_t *bounds) {
    bounds[0] = 0, bounds[n] = size;
    if (!indices) {
        if (size % n) {
            trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                          "axis %d of size %lld does not split into %d equal parts (pass "
                          "indices to split it unevenly)",
                          a, (long long)size, n);
            return false;
        }
        for (int i = 1; i < n; i++) bounds[i] = size / n * i;
        return true;
    }
    for (int i = 1; i < n; i++) {
        int64_t v = indices[i - 1];
        if (v < bounds[i - 1] || v > size) {
            trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                          "indices[%d] = %lld must lie in [%lld, %lld] (indices in order, "
                          "within axis %d of size %lld)",
                          i - 1, (long long)v, (long long)bounds[i - 1], (long long)size, a,
                          (long long)size);
            return false;
        }
        bounds[i] = v;
    }
    return true;
}

/* jnp.split: checked whole before the first slice is emitted; each part is a slice. */
kiln_status kiln_split(kiln_graph *g, kiln_value x, int n, const int64_t *indices, int axis,
                       kiln_value *outs) {
    const char *op = "kiln_split";
    for (int i = 0; outs && i < n; i++) outs[i] = KN_NONE;
    const ir_node *xn = operand(g, op, x, "x");
    if (!xn) return not_started(g);
    ir_shape s = xn->shape;
    int a = 0;
    if (n < 1 || !outs)
        trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                      "needs n >= 1 and an array of n values (n = %d%s)", n,
                      outs ? "" : ", outs NULL");
    else if (s.rank < 1)
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "needs rank >= 1 (it splits an axis)");
    else if (!trace_axis(axis, s.rank, &a))
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "axis %d is out of range for rank %d",
                      axis, s.rank);
    if (kiln_graph_status(g)) return kiln_graph_status(g);
    int64_t small[17], *bounds = small;
    if (n >= 17 && !(bounds = host_alloc(g->ctx, ((size_t)n + 1) * sizeof *bounds))) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for %d split points failed", n);
        return kiln_graph_status(g);
    }
    if (split_bounds(g, op, x, n, indices, a, s.dims[a], bounds)) {
        int64_t start[KILN_MAX_RANK] = {0}, limit[KILN_MAX_RANK];
        for (int d = 0; d < s.rank; d++) limit[d] = s.dims[d];
        for (int i = 0; i < n; i++) {
            start[a] = bounds[i], limit[a] = bounds[i + 1];
            outs[i] = kiln_slice(g, x, start, limit, NULL);
        }
    }
    if (bounds != small) host_free(g->ctx, bounds, ((size_t)n + 1) * sizeof *bounds);
    kiln_status st = kiln_graph_status(g);
    for (int i = 0; st && i < n; i++) outs[i] = KN_NONE;
    return st;
}

/* flax's make_causal_mask and jax.nn.dot_product_attention's is_causal mask: i >= j as a
 * compare of two iotas, the spelling the attention pass reads without evaluating it
 * (src/passes/attention.c), then converted when dtype is not bool. */
kiln_value kiln_make_causal_mask(kiln_graph *g, int64_t T, int64_t S, kiln_dtype dtype) {
    const char *op = "kiln_make_causal_mask";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!ir_dtype_valid(dtype))
        return trace_fail(g, KILN_STATUS_DTYPE, op, "dtype %d is not a kiln_dtype", (int)dtype);
    if (T < 0 || S < 0)
        return trace_fail(g, KILN_STATUS_SHAPE, op,
                          "T = %lld query and S = %lld key positions must be >= 0", (long long)T,
                          (long long)S);
    int64_t dims[2] = {T, S};
    if (!result_shape_ok(g, op, NULL, 0, 2, dims, dtype)) return KN_NONE;
    kiln_dtype it = T > INT32_MAX || S > INT32_MAX ? KILN_DTYPE_I64 : KILN_DTYPE_I32;
    kiln_value mask =
        kiln_compare(g, kiln_iota(g, it, 2, dims, 0), kiln_iota(g, it, 2, dims, 1), KILN_CMP_GE);
    return dtype == KILN_DTYPE_BOOL ? mask : kiln_convert(g, mask, dtype);
}
