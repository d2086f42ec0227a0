/* gather.c — the builders of jax.lax.gather and jax.lax.scatter* with XLA's dimension
 * numbers (IR_GATHER, IR_SCATTER), and the .at[]-style updates along one axis built on them.
 *
 * The user's dimension numbers are lists of axes (XLA's form); the node keeps them per
 * operand axis (ir.h's gs: the window axis, the index-vector position and the batching
 * indices axis of each operand axis), which is what the reference, the expansion and the
 * autodiff rules read, and what makes a gather's and its transposed scatter's attributes the
 * same. Invariant: every list is checked here, with the name of its field, before the node
 * is emitted; what needs the shapes together (slice sizes, batch sizes, updates' shape) is
 * ir_infer's check, whose message names the field too. */
#include "trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* One list of axes of a dimension-numbers struct: n entries in [0, limit), distinct, and
 * increasing when `sorted` (XLA requires it of every list but the index map). */
static bool check_list(kiln_graph *g, const char *op, const uint32_t *in, uint32_t n_in,
                       const char *field, int n, const int *list, int limit, bool sorted) {
    if (n < 0 || n > KILN_MAX_RANK) {
        trace_fail_on(g, in, n_in, KILN_STATUS_INVALID_ARGUMENT, op,
                      "%s: a count of %d (outside [0, %d])", field, n, KILN_MAX_RANK);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (list[i] < 0 || list[i] >= limit) {
            trace_fail_on(g, in, n_in, KILN_STATUS_SHAPE, op, "%s[%d] = %d is outside [0, %d)",
                          field, i, list[i], limit);
            return false;
        }
        for (int j = 0; j < i; j++)
            if (list[j] == list[i] || (sorted && list[j] > list[i])) {
                trace_fail_on(g, in, n_in, KILN_STATUS_SHAPE, op, "%s: axis %d %s", field, list[i],
                              list[j] == list[i] ? "is given twice"
                                                 : "is out of order (the "
                                                   "list must be sorted)");
                return false;
            }
    }
    return true;
}

/* The XLA-form lists of either op, by role: window axes (offset_dims / update_window_dims,
 * axes of the result or the updates), collapsed (inserted) operand axes, the index map, and
 * the batching pairs. */
typedef struct gs_lists {
    const char *f_window, *f_collapsed, *f_map, *f_ibatch;
    int n_window, n_collapsed, n_map, n_batch;
    const int *window, *collapsed, *map, *obatch, *ibatch;
} gs_lists;

/* Checks the lists against the operand (rank r) and indices (rank ri) and converts them
 * into the node's per-axis form; false after recording the error. */
static bool to_axes(kiln_graph *g, const char *op, const uint32_t *in, uint32_t n_in,
                    const gs_lists *l, int r, int ri, ir_node *n) {
    if (!check_list(g, op, in, n_in, l->f_collapsed, l->n_collapsed, l->collapsed, r, true) ||
        !check_list(g, op, in, n_in, l->f_map, l->n_map, l->map, r, false) ||
        !check_list(g, op, in, n_in, "operand_batching_dims", l->n_batch, l->obatch, r, true) ||
        !check_list(g, op, in, n_in, l->f_ibatch, l->n_batch, l->ibatch, ri - 1, false) ||
        !check_list(g, op, in, n_in, l->f_window, l->n_window, l->window, ri - 1 + l->n_window,
                    true))
        return false;
    for (int a = 0; a < r; a++) n->a.gs.window[a] = n->a.gs.index[a] = n->a.gs.batch[a] = -1;
    uint32_t collapsed = 0;
    for (int i = 0; i < l->n_collapsed; i++) collapsed |= 1u << l->collapsed[i];
    for (int i = 0; i < l->n_batch; i++) {
        int a = l->obatch[i];
        if (collapsed >> a & 1u)
            return trace_fail_on(g, in, n_in, KILN_STATUS_SHAPE, op,
                                 "operand axis %d is in both %s and operand_batching_dims", a,
                                 l->f_collapsed),
                   false;
        n->a.gs.batch[a] = l->ibatch[i];
    }
    for (int k = 0; k < l->n_map; k++) {
        if (n->a.gs.batch[l->map[k]] >= 0)
            return trace_fail_on(g, in, n_in, KILN_STATUS_SHAPE, op,
                                 "%s[%d] = %d is a batching axis (operand_batching_dims)", l->f_map,
                                 k, l->map[k]),
                   false;
        n->a.gs.index[l->map[k]] = k;
    }
    int want = r - l->n_collapsed - l->n_batch;
    if (l->n_window != want)
        return trace_fail_on(g, in, n_in, KILN_STATUS_SHAPE, op,
                             "%s has %d axes; the operand of rank %d has %d axes neither in %s "
                             "nor batching, and each needs one",
                             l->f_window, l->n_window, r, want, l->f_collapsed),
               false;
    for (int a = 0, j = 0; a < r; a++)
        if (!(collapsed >> a & 1u) && n->a.gs.batch[a] < 0) n->a.gs.window[a] = l->window[j++];
    return true;
}

/* The operand and indices nodes, the mode checked; NULL after recording an error. */
static const ir_node *operands(kiln_graph *g, const char *op, kiln_value operand,
                               kiln_value indices, kiln_gather_mode mode, const void *dims,
                               const ir_node **ix) {
    if (!trace_ready(g, op)) return NULL;
    const ir_node *x = trace_node(g, op, operand, "the operand");
    if (!x || !(*ix = trace_node(g, op, indices, "indices"))) return NULL;
    uint32_t in[2] = {operand.id, indices.id};
    if (!dims)
        return trace_fail_on(g, in, 2, KILN_STATUS_INVALID_ARGUMENT, op, "dims is NULL"), NULL;
    if (mode != KILN_GATHER_FILL && mode != KILN_GATHER_CLIP)
        return trace_fail_on(g, in, 2, KILN_STATUS_INVALID_ARGUMENT, op,
                             "mode %d: lax.gather/scatter take KILN_GATHER_FILL (FILL_OR_DROP) "
                             "or KILN_GATHER_CLIP (WRAP is kiln_take's)",
                             (int)mode),
               NULL;
    if (x->shape.rank < 1 || (*ix)->shape.rank < 1 ||
        ((*ix)->dtype != KILN_DTYPE_I32 && (*ix)->dtype != KILN_DTYPE_I64))
        return trace_fail_on(g, in, 2, KILN_STATUS_SHAPE, op,
                             "the operand needs rank >= 1 and indices must be i32 or i64 of "
                             "rank >= 1 (the last axis is the index vector)"),
               NULL;
    return x;
}

/* JAX's fill value for an out-of-range gather window (jax.lax.gather's fill_value=None). */
static double default_fill(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_I32: return (double)INT32_MIN;
    case KILN_DTYPE_I64: return (double)INT64_MIN;
    case KILN_DTYPE_BOOL: return 1;
    default: return NAN;
    }
}

kiln_value kiln_gather(kiln_graph *g, kiln_value operand, kiln_value indices,
                       const kiln_gather_dims *dims, const int64_t *slice_sizes,
                       kiln_gather_mode mode, const double *fill_value) {
    const char *op = "kiln_gather";
    const ir_node *ix = NULL, *x = operands(g, op, operand, indices, mode, dims, &ix);
    if (!x) return KN_NONE;
    uint32_t in[2] = {operand.id, indices.id};
    if (!slice_sizes)
        return trace_fail_on(g, in, 2, KILN_STATUS_INVALID_ARGUMENT, op, "slice_sizes is NULL");
    gs_lists l = {"offset_dims",
                  "collapsed_slice_dims",
                  "start_index_map",
                  "start_indices_batching_dims",
                  dims->n_offset_dims,
                  dims->n_collapsed_slice_dims,
                  dims->n_start_index_map,
                  dims->n_operand_batching_dims,
                  dims->offset_dims,
                  dims->collapsed_slice_dims,
                  dims->start_index_map,
                  dims->operand_batching_dims,
                  dims->start_indices_batching_dims};
    ir_node n = {.op = IR_GATHER};
    if (!to_axes(g, op, in, 2, &l, x->shape.rank, ix->shape.rank, &n)) return KN_NONE;
    for (int a = 0; a < x->shape.rank; a++) n.a.gs.sizes[a] = slice_sizes[a];
    n.a.gs.mode = (int)mode;
    n.a.gs.fill = fill_value ? *fill_value : default_fill(x->dtype);
    return trace_emit(g, op, &n, in, 2);
}

kiln_value kiln_scatter(kiln_graph *g, kiln_scatter_kind kind, kiln_value operand,
                        kiln_value indices, kiln_value updates, const kiln_scatter_dims *dims,
                        kiln_gather_mode mode) {
    const char *op = "kiln_scatter";
    const ir_node *ix = NULL, *x = operands(g, op, operand, indices, mode, dims, &ix);
    if (!x || !trace_node(g, op, updates, "updates")) return KN_NONE;
    uint32_t in[3] = {operand.id, indices.id, updates.id};
    if ((unsigned)kind > KILN_SCATTER_MAX)
        return trace_fail_on(g, in, 3, KILN_STATUS_INVALID_ARGUMENT, op,
                             "kind %d is not a kiln_scatter_kind (SET, ADD, MUL, MIN or MAX)",
                             (int)kind);
    gs_lists l = {"update_window_dims",
                  "inserted_window_dims",
                  "scatter_dims_to_operand_dims",
                  "scatter_indices_batching_dims",
                  dims->n_update_window_dims,
                  dims->n_inserted_window_dims,
                  dims->n_scatter_dims_to_operand_dims,
                  dims->n_operand_batching_dims,
                  dims->update_window_dims,
                  dims->inserted_window_dims,
                  dims->scatter_dims_to_operand_dims,
                  dims->operand_batching_dims,
                  dims->scatter_indices_batching_dims};
    ir_node n = {.op = IR_SCATTER};
    if (!to_axes(g, op, in, 3, &l, x->shape.rank, ix->shape.rank, &n)) return KN_NONE;
    n.a.gs.mode = (int)mode;
    n.a.gs.kind = (int)kind;
    return trace_emit(g, op, &n, in, 3);
}

/* ----------------------------------------------------------- .at[] updates ---- */

/* idx brought to what the scatter's mode does with it: FILL and CLIP wrap a negative index
 * once (jnp's indexing normalises it in every mode) and leave the rest to the scatter's
 * drop or clamp; WRAP takes it modulo n and scatters clipped (all in range then). */
static kiln_value at_index(kiln_graph *g, kiln_value idx, kiln_dtype it, int64_t n,
                           kiln_gather_mode mode) {
    kiln_value zero = kiln_scalar(g, it, 0), nv = kiln_scalar(g, it, (double)(n ? n : 1));
    if (mode == KILN_GATHER_WRAP) { /* C division truncates: a negative remainder gains n */
        kiln_value r = kiln_sub(g, idx, kiln_mul(g, kiln_div(g, idx, nv), nv));
        return kiln_select(g, kiln_compare(g, r, zero, KILN_CMP_LT), kiln_add(g, r, nv), r);
    }
    return kiln_select(g, kiln_compare(g, idx, zero, KILN_CMP_LT), kiln_add(g, idx, nv), idx);
}

kiln_value kiln_index_update(kiln_graph *g, kiln_scatter_kind kind, kiln_value x, int axis,
                             kiln_value indices, kiln_value updates, kiln_gather_mode mode) {
    const char *op = "kiln_index_update";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *xn = trace_node(g, op, x, "x"), *in = NULL;
    if (!xn || !(in = trace_node(g, op, indices, "indices")) ||
        !trace_node(g, op, updates, "updates"))
        return KN_NONE;
    uint32_t ids[3] = {x.id, indices.id, updates.id};
    int a, r = xn->shape.rank, ri = in->shape.rank;
    if (in->dtype != KILN_DTYPE_I32 && in->dtype != KILN_DTYPE_I64)
        return trace_fail_on(g, ids, 3, KILN_STATUS_DTYPE, op, "indices must be i32 or i64");
    if (!trace_axis(axis, r, &a))
        return trace_fail_on(g, ids, 3, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for x of rank %d", axis, r);
    if (mode != KILN_GATHER_FILL && mode != KILN_GATHER_CLIP && mode != KILN_GATHER_WRAP)
        return trace_fail_on(g, ids, 3, KILN_STATUS_INVALID_ARGUMENT, op,
                             "mode %d is not a kiln_gather_mode (FILL, CLIP or WRAP)", (int)mode);
    if (r - 1 + ri > KILN_MAX_RANK || ri + 1 > KILN_MAX_RANK)
        return trace_fail_on(g, ids, 3, KILN_STATUS_SHAPE, op,
                             "x[..., indices, ...] would have rank %d (the most is %d)", r - 1 + ri,
                             KILN_MAX_RANK);
    ir_shape us = {.rank = r - 1 + ri}, is = in->shape;
    kiln_scatter_dims d = {.n_inserted_window_dims = 1,
                           .inserted_window_dims = {a},
                           .n_scatter_dims_to_operand_dims = 1,
                           .scatter_dims_to_operand_dims = {a}};
    for (int i = 0; i < us.rank; i++) {
        bool batch = i >= a && i < a + ri;
        us.dims[i] = batch ? in->shape.dims[i - a] : xn->shape.dims[i < a ? i : i - ri + 1];
        if (!batch) d.update_window_dims[d.n_update_window_dims++] = i;
    }
    is.dims[is.rank++] = 1;
    kiln_dtype it = in->dtype;
    int64_t len = xn->shape.dims[a]; /* xn and in move with the node array from here on */
    kiln_value u = trace_broadcast_to(g, op, updates, &us);
    kiln_value idx = at_index(g, indices, it, len, mode);
    idx = kiln_reshape(g, idx, is.rank, is.dims);
    return kiln_scatter(g, kind, x, idx, u, &d,
                        mode == KILN_GATHER_FILL ? KILN_GATHER_FILL : KILN_GATHER_CLIP);
}

kiln_value kiln_index_set(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                          kiln_value updates, kiln_gather_mode mode) {
    return kiln_index_update(g, KILN_SCATTER_SET, x, axis, indices, updates, mode);
}

kiln_value kiln_index_add(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                          kiln_value updates, kiln_gather_mode mode) {
    return kiln_index_update(g, KILN_SCATTER_ADD, x, axis, indices, updates, mode);
}

kiln_value kiln_index_mul(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                          kiln_value updates, kiln_gather_mode mode) {
    return kiln_index_update(g, KILN_SCATTER_MUL, x, axis, indices, updates, mode);
}

kiln_value kiln_index_min(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                          kiln_value updates, kiln_gather_mode mode) {
    return kiln_index_update(g, KILN_SCATTER_MIN, x, axis, indices, updates, mode);
}

kiln_value kiln_index_max(kiln_graph *g, kiln_value x, int axis, kiln_value indices,
                          kiln_value updates, kiln_gather_mode mode) {
    return kiln_index_update(g, KILN_SCATTER_MAX, x, axis, indices, updates, mode);
}

/* The NumPy broadcast of the n index arrays' shapes into *b; false after the error. */
static bool broadcast_indices(kiln_graph *g, const char *op, int n, const ir_node **in,
                              const uint32_t *ids, ir_shape *b) {
    *b = (ir_shape){0};
    for (int k = 0; k < n; k++) {
        ir_shape prev = *b;
        int bad;
        if (!trace_shapes_broadcast(&prev, &in[k]->shape, b, &bad))
            return trace_fail_on(g, ids, (uint32_t)n + 1, KILN_STATUS_SHAPE, op,
                                 "the index arrays do not broadcast together (index %d)", k),
                   false;
    }
    return true;
}

kiln_value kiln_index_get(kiln_graph *g, kiln_value x, int n, const kiln_value *indices,
                          kiln_gather_mode mode) {
    const char *op = "kiln_index_get";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *xn = trace_node(g, op, x, "x"), *in[KILN_MAX_RANK];
    if (!xn) return KN_NONE;
    uint32_t ids[KILN_MAX_RANK + 1] = {x.id};
    int r = xn->shape.rank;
    if (n < 1 || n > r || !indices)
        return trace_fail_on(g, ids, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                             "%d index arrays for x of rank %d (1 to its rank, not NULL)", n, r);
    for (int k = 0; k < n; k++) {
        char what[32];
        snprintf(what, sizeof what, "index array %d", k);
        if (!(in[k] = trace_node(g, op, indices[k], what))) return KN_NONE;
        ids[k + 1] = indices[k].id;
        if (in[k]->dtype != KILN_DTYPE_I32 && in[k]->dtype != KILN_DTYPE_I64)
            return trace_fail_on(g, ids, (uint32_t)k + 2, KILN_STATUS_DTYPE, op,
                                 "index array %d must be i32 or i64", k);
    }
    if (mode != KILN_GATHER_FILL && mode != KILN_GATHER_CLIP && mode != KILN_GATHER_WRAP)
        return trace_fail_on(g, ids, (uint32_t)n + 1, KILN_STATUS_INVALID_ARGUMENT, op,
                             "mode %d is not a kiln_gather_mode (FILL, CLIP or WRAP)", (int)mode);
    ir_shape b;
    if (!broadcast_indices(g, op, n, in, ids, &b)) return KN_NONE;
    if (b.rank + r - n > KILN_MAX_RANK || b.rank + 1 > KILN_MAX_RANK)
        return trace_fail_on(g, ids, (uint32_t)n + 1, KILN_STATUS_SHAPE, op,
                             "the result would have rank %d (the most is %d)", b.rank + r - n,
                             KILN_MAX_RANK);
    ir_shape xs = xn->shape; /* xn moves with the node array once nodes are emitted */
    kiln_value cols[KILN_MAX_RANK];
    ir_shape b1 = b;
    b1.dims[b1.rank++] = 1;
    for (int k = 0; k < n; k++) {
        kiln_value v = kiln_convert(g, trace_broadcast_to(g, op, indices[k], &b), KILN_DTYPE_I64);
        v = at_index(g, v, KILN_DTYPE_I64, xs.dims[k], mode);
        cols[k] = kiln_reshape(g, v, b1.rank, b1.dims);
    }
    kiln_value idx = n == 1 ? cols[0] : kiln_concatenate(g, n, cols, b1.rank - 1);
    kiln_gather_dims d = {.n_collapsed_slice_dims = n, .n_start_index_map = n};
    int64_t sizes[KILN_MAX_RANK];
    for (int a = 0; a < r; a++) {
        sizes[a] = a < n ? 1 : xs.dims[a];
        if (a < n)
            d.collapsed_slice_dims[a] = d.start_index_map[a] = a;
        else
            d.offset_dims[d.n_offset_dims++] = b.rank + a - n;
    }
    return kiln_gather(g, x, idx, &d, sizes,
                       mode == KILN_GATHER_FILL ? KILN_GATHER_FILL : KILN_GATHER_CLIP, NULL);
}

/* ------------------------------------------------------- primitive forms ---- */

/* What src/passes/expand.c puts in place of GATHER and SCATTER for the compiled backends,
 * as XLA's GatherExpander and ScatterExpander do: each result (update) element's operand
 * offset is computed by integer arithmetic over iotas and the indices broadcast onto the
 * batch axes, so a gather becomes one take_rows of the flattened operand (fused into its
 * consumers' loop) and a scatter-add, -mul, -min or -max one scatter_add_rows (the last
 * three with its rows flags: each update row combined into its target in update order,
 * as the reference does). SET compares every operand row with every update row's target
 * and takes the last that hits it: O(operand rows x update rows). Deterministic on every
 * device, with no atomics. */

typedef struct gs_offsets {
    kiln_value flat;  /* i64, the element's linear offset in the operand */
    kiln_value valid; /* bool (FILL): the window is in bounds; {0} when every one is */
} gs_offsets;

/* How many trailing operand axes are whole rows of the table the primitives index: each
 * a window that covers its axis, neither indexed nor batching, held by the last axes of es
 * (the result or the updates) in order. An embedding lookup or x.at[idx].add(rows) moves
 * whole rows then (take_rows' and scatter_add_rows' rows), not single elements. */
static int row_axes(const ir_node *n, const ir_shape *xs, const ir_shape *es,
                    const int64_t *wsize) {
    int t = 0;
    for (int a = xs->rank - 1; a >= 0; a--, t++)
        if (n->a.gs.window[a] != es->rank - (xs->rank - a) || n->a.gs.index[a] >= 0 ||
            n->a.gs.batch[a] >= 0 || wsize[a] != xs->dims[a])
            break;
    return t;
}

/* Offsets of the elements of shape es (the gather's result, the scatter's updates, less
 * their row axes) into operand x (shape xs) viewed as rows of its last `tail` axes: the
 * row index; wsize: the window's size per operand axis. */
static gs_offsets offsets(kiln_graph *g, const ir_node *n, const ir_shape *xs, int tail,
                          kiln_value idx, const ir_shape *is, const ir_shape *es,
                          const int64_t *wsize) {
    const kiln_dtype t = KILN_DTYPE_I64;
    int bd[KILN_MAX_RANK], nb = 0;
    uint32_t win = 0;
    for (int a = 0; a < xs->rank - tail; a++)
        if (n->a.gs.window[a] >= 0) win |= 1u << n->a.gs.window[a];
    for (int i = 0; i < es->rank; i++)
        if (!(win >> i & 1u)) bd[nb++] = i;
    ir_shape bs = *is;
    bs.rank--;
    int64_t start[KILN_MAX_RANK] = {0}, limit[KILN_MAX_RANK];
    for (int i = 0; i < is->rank; i++) limit[i] = is->dims[i];
    kiln_value ic = kiln_convert(g, idx, t);
    gs_offsets r = {kiln_scalar(g, t, 0), KN_NONE};
    if (es->rank) r.flat = kiln_broadcast_in_dim(g, r.flat, es->rank, es->dims, NULL);
    for (int a = 0; a < xs->rank - tail; a++) {
        int64_t hi = xs->dims[a] - wsize[a];
        kiln_value pos = KN_NONE;
        if (n->a.gs.index[a] >= 0) {
            start[is->rank - 1] = n->a.gs.index[a], limit[is->rank - 1] = n->a.gs.index[a] + 1;
            kiln_value s = kiln_reshape(g, kiln_slice(g, ic, start, limit, NULL), bs.rank, bs.dims);
            s = kiln_broadcast_in_dim(g, s, es->rank, es->dims, bd);
            kiln_value lo = kiln_scalar(g, t, 0), up = kiln_scalar(g, t, (double)hi);
            if (n->a.gs.mode == KILN_GATHER_FILL) {
                kiln_value ok = kiln_logical_and(g, kiln_compare(g, s, lo, KILN_CMP_GE),
                                                 kiln_compare(g, s, up, KILN_CMP_LE));
                r.valid = r.valid.id ? kiln_logical_and(g, r.valid, ok) : ok;
            }
            pos = kiln_max(g, kiln_min(g, s, up), lo);
        }
        if (n->a.gs.batch[a] >= 0) pos = kiln_iota(g, t, es->rank, es->dims, bd[n->a.gs.batch[a]]);
        if (n->a.gs.window[a] >= 0) {
            kiln_value w = kiln_iota(g, t, es->rank, es->dims, n->a.gs.window[a]);
            pos = pos.id ? kiln_add(g, pos, w) : w;
        }
        r.flat = kiln_mul(g, r.flat, kiln_scalar(g, t, (double)xs->dims[a]));
        if (pos.id) r.flat = kiln_add(g, r.flat, pos);
    }
    return r;
}

static int64_t numel_of(const ir_shape *s) {
    int64_t c = 1;
    for (int i = 0; i < s->rank; i++) c *= s->dims[i];
    return c;
}

/* x as a table of rows of its last `tail` axes: [numel / row, row]. */
static kiln_value as_rows(kiln_graph *g, kiln_value x, const ir_shape *s, int tail) {
    int64_t row = 1;
    for (int a = s->rank - tail; a < s->rank; a++) row *= s->dims[a];
    return kiln_reshape(g, x, 2, (int64_t[]){numel_of(s) / row, row});
}

/* es less its last `tail` axes, and the same with one axis of their product after. */
static void split_rows(const ir_shape *es, int tail, ir_shape *outer, ir_shape *rows) {
    *outer = *es;
    outer->rank -= tail;
    *rows = *outer;
    rows->dims[rows->rank++] = numel_of(es) / (numel_of(outer) ? numel_of(outer) : 1);
}

kiln_value trace_gather_primitives(kiln_graph *g, const ir_node *n, kiln_value x, kiln_value idx) {
    const ir_node *xn = &g->nodes[x.id], *in = &g->nodes[idx.id];
    ir_shape xs = xn->shape, is = in->shape, os = n->shape, eo, er;
    if (!numel_of(&os)) return kiln_full(g, n->dtype, os.rank, os.dims, 0);
    int tail = row_axes(n, &xs, &os, n->a.gs.sizes);
    split_rows(&os, tail, &eo, &er);
    gs_offsets o = offsets(g, n, &xs, tail, idx, &is, &eo, n->a.gs.sizes);
    kiln_value v = kiln_take_rows(g, as_rows(g, x, &xs, tail), o.flat);
    v = kiln_reshape(g, v, os.rank, os.dims);
    if (!o.valid.id) return v;
    int bd[KILN_MAX_RANK];
    for (int i = 0; i < eo.rank; i++) bd[i] = i;
    kiln_value ok = kiln_broadcast_in_dim(g, o.valid, os.rank, os.dims, bd);
    return kiln_select(g, ok, v, kiln_full(g, n->dtype, os.rank, os.dims, n->a.gs.fill));
}

/* SET, which no row kernel does, over x as nr rows of len elements and the updates as nt
 * rows (t: each one's target row, -1 when dropped): every row compares its position with
 * every target, reduces that to the last update that hits the row (a max of positions,
 * [nr, nt] work) and takes its row. */
static kiln_value dense_scatter(kiln_graph *g, kiln_value x, kiln_value u, kiln_value t, int64_t nr,
                                int64_t nt, int64_t len) {
    const kiln_dtype it = KILN_DTYPE_I64;
    int64_t nm[2] = {nr, nt}, xd[2] = {nr, len};
    kiln_value xr = kiln_reshape(g, x, 2, xd), ur = kiln_reshape(g, u, 2, (int64_t[]){nt, len});
    kiln_value hit = kiln_compare(g, kiln_iota(g, it, 2, nm, 0),
                                  kiln_broadcast_in_dim(g, t, 2, nm, (int[]){1}), KILN_CMP_EQ);
    int ax = 1;
    kiln_value last = kiln_select(g, hit, kiln_iota(g, it, 2, nm, 1), kiln_full(g, it, 2, nm, -1));
    last = kiln_reduce_max(g, last, 1, &ax, false);
    kiln_value has = kiln_compare(g, last, kiln_scalar(g, it, 0), KILN_CMP_GE);
    kiln_value v = kiln_take_rows(g, ur, kiln_max(g, last, kiln_scalar(g, it, 0)));
    return kiln_select(g, kiln_broadcast_in_dim(g, has, 2, xd, (int[]){0}), v, xr);
}

/* MUL, MIN and MAX: one scatter_add_rows combining each update row into its target row
 * in update order (the rows flags): the library kernel's O(updates) work, in the
 * reference's order and rounding, where dense_scatter's is O(rows x updates). */
static kiln_value combine_rows(kiln_graph *g, int kind, kiln_value x, kiln_value t, kiln_value u) {
    ir_node m = {.op = IR_SCATTER_ADD_ROWS};
    m.a.rows.mul = kind == KILN_SCATTER_MUL;
    m.a.rows.min = kind == KILN_SCATTER_MIN;
    m.a.rows.max = kind == KILN_SCATTER_MAX;
    return trace_emit(g, "kiln_scatter", &m, (uint32_t[]){x.id, t.id, u.id}, 3);
}

kiln_value trace_scatter_primitives(kiln_graph *g, const ir_node *n, kiln_value x, kiln_value idx,
                                    kiln_value u) {
    const ir_node *xn = &g->nodes[x.id], *in = &g->nodes[idx.id], *un = &g->nodes[u.id];
    ir_shape xs = xn->shape, is = in->shape, us = un->shape;
    int64_t nx = numel_of(&xs), nu = numel_of(&us), wsize[KILN_MAX_RANK];
    if (!nx || !nu) return kiln_add(g, x, kiln_full(g, n->dtype, xs.rank, xs.dims, 0));
    for (int a = 0; a < xs.rank; a++)
        wsize[a] = n->a.gs.window[a] >= 0 ? us.dims[n->a.gs.window[a]] : 1;
    bool add = n->a.gs.kind != KILN_SCATTER_SET; /* every combining kind: rows */
    int tail = row_axes(n, &xs, &us, wsize);
    ir_shape uo, ur;
    split_rows(&us, tail, &uo, &ur);
    int64_t len = ur.dims[ur.rank - 1], nt = numel_of(&uo);
    gs_offsets o = offsets(g, n, &xs, tail, idx, &is, &uo, wsize);
    kiln_value t = o.flat; /* a dropped update's target: a row no element has */
    if (o.valid.id)
        t = kiln_select(
            g, o.valid, t,
            kiln_full(g, KILN_DTYPE_I64, uo.rank, uo.dims, add ? (double)(nx / len) : -1));
    kiln_value r;
    if (n->a.gs.kind == KILN_SCATTER_ADD)
        r = kiln_scatter_add_rows(g, as_rows(g, x, &xs, tail), t,
                                  kiln_reshape(g, u, ur.rank, ur.dims));
    else if (add)
        r = combine_rows(g, n->a.gs.kind, as_rows(g, x, &xs, tail), t,
                         kiln_reshape(g, u, ur.rank, ur.dims));
    else
        r = dense_scatter(g, x, u, kiln_reshape(g, t, 1, &nt), nx / len, nt, len);
    return kiln_reshape(g, r, xs.rank, xs.dims);
}

/* ------------------------------------------------- for the autodiff rules ---- */

/* A node of op with gather/scatter node n's dimension numbers (a gather's and its
 * transposed scatter's are the same per-axis attributes). */
static kiln_value like(kiln_graph *g, const char *op, const ir_node *n, ir_node *m,
                       const uint32_t *in, uint32_t n_in) {
    for (int a = 0; a < KILN_MAX_RANK; a++) {
        m->a.gs.window[a] = n->a.gs.window[a];
        m->a.gs.index[a] = n->a.gs.index[a];
        m->a.gs.batch[a] = n->a.gs.batch[a];
    }
    m->a.gs.mode = n->a.gs.mode;
    return trace_emit(g, op, m, in, n_in);
}

kiln_value trace_scatter_like(kiln_graph *g, const char *op, const ir_node *n, int kind,
                              kiln_value x, kiln_value idx, kiln_value u) {
    if (!x.id || !idx.id || !u.id) return KN_NONE;
    ir_node m = {.op = IR_SCATTER};
    m.a.gs.kind = kind;
    return like(g, op, n, &m, (uint32_t[]){x.id, idx.id, u.id}, 3);
}

/* The window sizes of gather/scatter node n: a gather's slice sizes, a scatter's updates'
 * window extents (1 on inserted and batching axes). */
static void window_sizes(const kiln_graph *g, const ir_node *n, int rank, int64_t *sizes) {
    const ir_node *u = n->op == IR_SCATTER ? &g->nodes[ir_in(n)[2]] : NULL;
    for (int a = 0; a < rank; a++)
        sizes[a] = !u                       ? n->a.gs.sizes[a]
                   : n->a.gs.window[a] >= 0 ? u->shape.dims[n->a.gs.window[a]]
                                            : 1;
}

kiln_value trace_gather_like(kiln_graph *g, const char *op, const ir_node *n, kiln_value x,
                             kiln_value idx, double fill) {
    if (!x.id || !idx.id) return KN_NONE;
    ir_node m = {.op = IR_GATHER};
    window_sizes(g, n, g->nodes[x.id].shape.rank, m.a.gs.sizes);
    m.a.gs.fill = fill;
    return like(g, op, n, &m, (uint32_t[]){x.id, idx.id}, 2);
}

/* Scatter-set with duplicates: which update won each element it wrote. Each update gets an
 * id (its position + 1), the ids are scattered as the values were (the last one wins, as
 * for the values) and gathered back; an update whose own id returns won (JAX's scheme in
 * _scatter_jvp, exact here since kiln's order is defined). A dropped update reads 0. */
kiln_value trace_scatter_set_winners(kiln_graph *g, const char *op, const ir_node *n,
                                     kiln_value idx) {
    const ir_node *x = &g->nodes[ir_in(n)[0]], *u = &g->nodes[ir_in(n)[2]];
    ir_shape xs = x->shape, us = u->shape;
    int64_t nu = numel_of(&us);
    kiln_dtype it = nu < INT32_MAX ? KILN_DTYPE_I32 : KILN_DTYPE_I64;
    kiln_value ids = kiln_add(g, kiln_iota(g, it, 1, &nu, 0), kiln_scalar(g, it, 1));
    ids = kiln_reshape(g, ids, us.rank, us.dims);
    kiln_value z = kiln_full(g, it, xs.rank, xs.dims, 0);
    kiln_value won = trace_scatter_like(g, op, n, KILN_SCATTER_SET, z, idx, ids);
    return kiln_compare(g, trace_gather_like(g, op, n, won, idx, 0), ids, KILN_CMP_EQ);
}

/* Scatter-min/max's derivative (JAX's _scatter_extremal_jvp): the result y takes its
 * derivative from the operand element and the updates equal to it, shared equally among
 * them. *xc: the operand's coefficient (x's shape), *uc: each update's (updates' shape). */
void trace_scatter_extremal_coefs(kiln_graph *g, const char *op, const ir_node *n, kiln_value y,
                                  kiln_value *xc, kiln_value *uc) {
    const uint32_t *in = ir_in(n);
    kiln_value x = trace_value(g, in[0]), idx = trace_value(g, in[1]), u = trace_value(g, in[2]);
    kiln_dtype t = n->dtype;
    ir_shape xs = g->nodes[in[0]].shape;
    kiln_value one = kiln_scalar(g, t, 1), zero = kiln_scalar(g, t, 0);
    kiln_value hit = kiln_compare(g, u, trace_gather_like(g, op, n, y, idx, NAN), KILN_CMP_EQ);
    kiln_value kept = kiln_compare(g, x, y, KILN_CMP_EQ);
    kiln_value count =
        trace_scatter_like(g, op, n, KILN_SCATTER_ADD, kiln_full(g, t, xs.rank, xs.dims, 0), idx,
                           kiln_select(g, hit, one, zero));
    count = kiln_add(g, count, kiln_select(g, kept, one, zero));
    *xc = kiln_select(g, kept, kiln_div(g, one, count), zero);
    kiln_value per = trace_gather_like(g, op, n, count, idx, 1);
    *uc = kiln_select(g, hit, kiln_div(g, one, per), zero);
}
