/* gather.c — the reference evaluation of GATHER and SCATTER (XLA's gather and scatter with
 * dimension numbers; ir.h's gs holds them per operand axis), written as plainly as the
 * semantics: for each result (gather) or update (scatter) element, in row-major order, its
 * batch position picks a start vector from indices, each start is clamped (CLIP) or checked
 * (FILL: the whole window in bounds or none of it), and the window offset is added.
 * Scatter combines in that order, so duplicates give one defined answer: SET's last update
 * wins, the others fold every update in turn (each step rounded to the dtype, as the
 * primitive ops round). This is the oracle the compiled expansion (src/passes/expand.c)
 * and JAX's values are checked against. */
#include "reference.h"

#include <math.h>
#include <string.h>

static void unravel(int64_t i, const ir_shape *s, int64_t *ix) {
    for (int a = s->rank - 1; a >= 0; a--) {
        int64_t d = s->dims[a] ? s->dims[a] : 1;
        ix[a] = i % d, i /= d;
    }
}

/* The operand's linear offset of the element a result/update element at multi-index e
 * (of shape es) addresses, or -1 when FILL drops (reads the fill of) its window. wsize[a]:
 * the window's size on operand axis a. */
static int64_t target(const ir_node *n, const ir_node *x, const ir_node *ix, const void *idx,
                      const int64_t *e, const ir_shape *es, const int64_t *wsize) {
    int64_t batch[KILN_MAX_RANK], nb = 0, win_mask = 0;
    for (int a = 0; a < x->shape.rank; a++)
        if (n->a.gs.window[a] >= 0) win_mask |= 1ll << n->a.gs.window[a];
    for (int i = 0; i < es->rank; i++)
        if (!(win_mask >> i & 1)) batch[nb++] = e[i];
    int64_t k_len = ix->shape.dims[ix->shape.rank - 1], row = 0;
    for (int i = 0; i < ix->shape.rank - 1; i++) row = row * ix->shape.dims[i] + batch[i];
    int64_t off = 0;
    for (int a = 0; a < x->shape.rank; a++) {
        int64_t s = 0, hi = x->shape.dims[a] - wsize[a];
        if (n->a.gs.index[a] >= 0) {
            s = ref_iget(idx, ix->dtype, row * k_len + n->a.gs.index[a]);
            if (n->a.gs.mode == KILN_GATHER_FILL && (s < 0 || s > hi)) return -1;
            s = s < 0 ? 0 : s > hi ? hi : s;
        }
        if (n->a.gs.batch[a] >= 0) s = batch[n->a.gs.batch[a]];
        int64_t w = n->a.gs.window[a] >= 0 ? e[n->a.gs.window[a]] : 0;
        off = off * x->shape.dims[a] + s + w;
    }
    return off;
}

kiln_status ref_gather(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id], *x = ref_in_node(g, n, 0), *ix = ref_in_node(g, n, 1);
    const void *xd = ref_in_data(vals, n, 0), *idx = ref_in_data(vals, n, 1);
    size_t es = kiln_dtype_itemsize(n->dtype);
    int64_t e[KILN_MAX_RANK], count = ref_numel(&n->shape);
    for (int64_t i = 0; i < count; i++) {
        unravel(i, &n->shape, e);
        int64_t o = target(n, x, ix, idx, e, &n->shape, n->a.gs.sizes);
        if (o >= 0)
            memcpy((char *)out + i * (int64_t)es, (const char *)xd + o * (int64_t)es, es);
        else if (ir_dtype_is_float(n->dtype))
            ref_fput(out, n->dtype, i, n->a.gs.fill);
        else
            ref_iput(out, n->dtype, i, (uint64_t)(int64_t)n->a.gs.fill);
    }
    return KILN_STATUS_OK;
}

/* One combine step of kind k at out[o] (floats in double, rounded when stored; integers
 * wrap as the primitive ops do). min/max let a NaN win, as lax.min/lax.max, and between
 * -0 and +0 take min's -0 and max's +0, as the compiled kiln_min/kiln_max do (their sign
 * bits OR-ed / AND-ed), so compiled scatters equal the reference bit for bit. */
static void combine(void *out, kiln_dtype t, int k, int64_t o, const void *upd, int64_t u) {
    if (ir_dtype_is_float(t)) {
        double a = ref_fget(out, t, o), b = ref_fget(upd, t, u), r = b;
        if (k == KILN_SCATTER_ADD) r = a + b;
        if (k == KILN_SCATTER_MUL) r = a * b;
        bool nan = isnan(a) || isnan(b), tie = a == b;
        if (k == KILN_SCATTER_MIN) r = nan ? NAN : tie ? (signbit(a) ? a : b) : a < b ? a : b;
        if (k == KILN_SCATTER_MAX) r = nan ? NAN : tie ? (signbit(a) ? b : a) : a > b ? a : b;
        ref_fput(out, t, o, r);
        return;
    }
    int64_t a = ref_iget(out, t, o), b = ref_iget(upd, t, u), r = b;
    if (k == KILN_SCATTER_ADD) r = (int64_t)((uint64_t)a + (uint64_t)b);
    if (k == KILN_SCATTER_MUL) r = (int64_t)((uint64_t)a * (uint64_t)b);
    if (k == KILN_SCATTER_MIN) r = a < b ? a : b;
    if (k == KILN_SCATTER_MAX) r = a > b ? a : b;
    ref_iput(out, t, o, (uint64_t)r);
}

kiln_status ref_scatter(const kiln_graph *g, uint32_t id, const ref_value *vals, void *out) {
    const ir_node *n = &g->nodes[id], *x = ref_in_node(g, n, 0), *ix = ref_in_node(g, n, 1);
    const ir_node *u = ref_in_node(g, n, 2);
    const void *idx = ref_in_data(vals, n, 1), *ud = ref_in_data(vals, n, 2);
    size_t es = kiln_dtype_itemsize(n->dtype);
    int64_t count = ref_numel(&n->shape), wsize[KILN_MAX_RANK], e[KILN_MAX_RANK];
    if (count) memcpy(out, ref_in_data(vals, n, 0), (size_t)count * es);
    for (int a = 0; a < x->shape.rank; a++)
        wsize[a] = n->a.gs.window[a] >= 0 ? u->shape.dims[n->a.gs.window[a]] : 1;
    int64_t nu = ref_numel(&u->shape);
    for (int64_t i = 0; i < nu; i++) {
        unravel(i, &u->shape, e);
        int64_t o = target(n, x, ix, idx, e, &u->shape, wsize);
        if (o >= 0) combine(out, n->dtype, n->a.gs.kind, o, ud, i);
    }
    return KILN_STATUS_OK;
}
