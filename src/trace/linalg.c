/* linalg.c — linear algebra over the last two axes (jax.lax.linalg, jnp.linalg,
 * jax.scipy.linalg): the Cholesky factor and triangular solves, two ops (ir.h's
 * KN_LINALG_OPS), and what is built from them: kiln_cholesky factors (a + a^T) / 2 as
 * jnp.linalg.cholesky does (the op's symmetrize attribute), kiln_cho_solve is two
 * triangular solves.
 *
 * The ops' derivatives live here too (the autodiff rules call them), written as JAX's
 * (jax/_src/lax/linalg.py): cholesky's JVP is L phi(L^-1 dA L^-T), phi taking the lower
 * triangle with the diagonal halved, and its VJP that map's transpose, L^-T phi(L^T ct)
 * L^-1: the cotangent of a symmetric perturbation, which with symmetrize is symmetrised,
 * as jax.grad of jnp.linalg.cholesky gives. A triangular solve's cotangent of b is a solve with
 * op(a) transposed, and of a minus the outer product of that and x, masked to the triangle
 * the op reads.
 *
 * So is each op's primitive form (src/passes/expand.c, for a backend without the library
 * kernel): a kiln_fori_loop over the rows, each iteration one matrix-vector product, a
 * division and a dynamic_update_slice of one column (cholesky, left-looking) or row (a
 * substitution). O(n) iterations of O(n^2) work, the same flops as the kernels.
 *
 * Invariants: every user mistake is found before the first node is emitted, and names the
 * public call, the operands' types and what was wrong. */
#include "trace.h"

#include <math.h>
#include <stdio.h>

/* ------------------------------------------------------------- helpers ----
 *
 * Every builder appends to g->nodes, which may move it: a shape or dtype needed after a
 * builder call is copied out of the node first, never held by pointer. */

/* x with its last two axes swapped (a transpose, which fusion and the GEMM read as a view). */
static kiln_value mT(kiln_graph *g, kiln_value x) {
    const ir_node *n = &g->nodes[x.id];
    int r = n->shape.rank, perm[KILN_MAX_RANK];
    for (int i = 0; i < r; i++) perm[i] = i;
    perm[r - 2] = r - 1, perm[r - 1] = r - 2;
    return kiln_transpose(g, x, perm);
}

/* The bool mask of shape s (rank >= 2) that holds where column - row <= k (lower) or
 * column - row >= k (upper): jnp.tril / jnp.triu's k. */
static kiln_value tri_mask(kiln_graph *g, ir_shape s, bool lower, int64_t k) {
    int r = s.rank;
    kiln_value row = kiln_iota(g, KILN_DTYPE_I64, r, s.dims, r - 2);
    kiln_value col = kiln_iota(g, KILN_DTYPE_I64, r, s.dims, r - 1);
    kiln_value d = kiln_sub(g, col, row);
    return kiln_compare(g, d, kiln_scalar(g, KILN_DTYPE_I64, (double)k),
                        lower ? KILN_CMP_LE : KILN_CMP_GE);
}

/* (x + x^T) / 2 over the last two axes. */
static kiln_value sym(kiln_graph *g, kiln_value x) {
    kiln_dtype t = g->nodes[x.id].dtype;
    return kiln_mul(g, kiln_add(g, x, mT(g, x)), kiln_scalar(g, t, 0.5));
}

/* x's lower (or upper) triangle from diagonal k, zeros elsewhere (a select, so a NaN
 * outside it does not leak). */
static kiln_value tri(kiln_graph *g, kiln_value x, bool lower, int64_t k) {
    ir_shape s = g->nodes[x.id].shape;
    kiln_value z = kiln_scalar(g, g->nodes[x.id].dtype, 0);
    return kiln_select(g, tri_mask(g, s, lower, k), x, z);
}

static kiln_value tsolve(kiln_graph *g, const char *op, kiln_value a, kiln_value b, bool left,
                         bool lower, bool transpose_a, bool unit) {
    ir_node n = {.op = IR_TRIANGULAR_SOLVE};
    n.a.tri.left_side = left, n.a.tri.lower = lower;
    n.a.tri.transpose_a = transpose_a, n.a.tri.unit_diagonal = unit;
    uint32_t in[2] = {a.id, b.id};
    return trace_emit(g, op, &n, in, 2);
}

/* The checks every builder makes of a: a float32/64 stack of square matrices. */
static const ir_node *square(kiln_graph *g, const char *op, kiln_value a, const char *what) {
    const ir_node *an = trace_node(g, op, a, what);
    if (!an) return NULL;
    if (an->dtype != KILN_DTYPE_F32 && an->dtype != KILN_DTYPE_F64) {
        trace_fail_on(g, &a.id, 1, KILN_STATUS_DTYPE, op,
                      "%s must be f32 or f64 (LAPACK's types; convert a 16-bit matrix to f32 "
                      "first), not %s",
                      what, kiln_dtype_name(an->dtype));
        return NULL;
    }
    int r = an->shape.rank;
    if (r < 2 || an->shape.dims[r - 1] != an->shape.dims[r - 2]) {
        trace_fail_on(g, &a.id, 1, KILN_STATUS_SHAPE, op,
                      "%s must be square matrices [..., m, m] (its last two axes)", what);
        return NULL;
    }
    return an;
}

/* ------------------------------------------------------------- builders ---- */

kiln_value kiln_cholesky(kiln_graph *g, kiln_value a) {
    const char *op = "kiln_cholesky";
    if (!trace_ready(g, op) || !square(g, op, a, "a")) return KN_NONE;
    /* jnp.linalg.cholesky: of (a + a^T) / 2, so the factor and its gradient see a
     * symmetric matrix whichever triangle was filled in (the op's own pass) */
    ir_node n = {.op = IR_CHOLESKY};
    n.a.symmetrize = true;
    return trace_emit(g, op, &n, &a.id, 1);
}

/* b's checks against a for a solve: same dtype, a's batch axes, m rows (left) or columns. */
static bool solve_operands(kiln_graph *g, const char *op, kiln_value a, const ir_node *an,
                           kiln_value b, bool left) {
    const ir_node *bn = trace_node(g, op, b, "b");
    if (!bn) return false;
    uint32_t in[2] = {a.id, b.id};
    if (bn->dtype != an->dtype) {
        trace_fail_on(g, in, 2, KILN_STATUS_DTYPE, op, "b must have a's dtype");
        return false;
    }
    int r = an->shape.rank;
    bool ok = bn->shape.rank == r;
    for (int i = 0; ok && i < r - 2; i++) ok = bn->shape.dims[i] == an->shape.dims[i];
    if (!ok || bn->shape.dims[left ? r - 2 : r - 1] != an->shape.dims[r - 1]) {
        trace_fail_on(g, in, 2, KILN_STATUS_SHAPE, op,
                      "b must be [..., %s] with a's batch axes, m = %lld (a's order)",
                      left ? "m, n (left_side)" : "n, m (not left_side)",
                      (long long)an->shape.dims[r - 1]);
        return false;
    }
    return true;
}

kiln_value kiln_triangular_solve(kiln_graph *g, kiln_value a, kiln_value b,
                                 const kiln_triangular_solve_options *opts) {
    const char *op = "kiln_triangular_solve";
    kiln_triangular_solve_options o = {0};
    if (opts) o = *opts;
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *an = square(g, op, a, "a");
    if (!an || !solve_operands(g, op, a, an, b, o.left_side)) return KN_NONE;
    return tsolve(g, op, a, b, o.left_side, o.lower, o.transpose_a, o.unit_diagonal);
}

kiln_value kiln_cho_solve(kiln_graph *g, kiln_value c, bool lower, kiln_value b) {
    const char *op = "kiln_cho_solve";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *cn = square(g, op, c, "c");
    const ir_node *bn = cn ? trace_node(g, op, b, "b") : NULL;
    if (!bn) return KN_NONE;
    /* b is [..., m] (vectors, as jax.scipy's b.ndim == c.ndim - 1) or [..., m, n] */
    int r = cn->shape.rank;
    bool vec = bn->shape.rank == r - 1;
    bool ok = vec || bn->shape.rank == r;
    for (int i = 0; ok && i < r - 2; i++) ok = bn->shape.dims[i] == cn->shape.dims[i];
    if (ok) ok = bn->shape.dims[r - 2] == cn->shape.dims[r - 1];
    uint32_t in[2] = {c.id, b.id};
    if (bn->dtype != cn->dtype)
        return trace_fail_on(g, in, 2, KILN_STATUS_DTYPE, op, "b must have c's dtype");
    if (!ok)
        return trace_fail_on(g, in, 2, KILN_STATUS_SHAPE, op,
                             "b must be [..., m] or [..., m, n] with c's batch axes, m = %lld",
                             (long long)cn->shape.dims[r - 1]);
    kiln_value bm = b;
    ir_shape bs = bn->shape;
    if (vec) {
        int64_t d[KILN_MAX_RANK];
        for (int i = 0; i < r - 1; i++) d[i] = bs.dims[i];
        d[r - 1] = 1;
        bm = kiln_reshape(g, b, r, d);
    }
    /* c c^T x = b (lower) or c^T c x = b (upper): two solves */
    kiln_value y = tsolve(g, op, c, bm, true, lower, !lower, false);
    kiln_value x = tsolve(g, op, c, y, true, lower, lower, false);
    return vec && x.id ? kiln_reshape(g, x, r - 1, bs.dims) : x;
}

kiln_value kiln_cholesky_from_lower(kiln_graph *g, kiln_value a) {
    const char *op = "kiln_cholesky_from_lower";
    if (!trace_ready(g, op) || !square(g, op, a, "a")) return KN_NONE;
    ir_node n = {.op = IR_CHOLESKY};
    return trace_emit(g, op, &n, &a.id, 1);
}

/* ------------------------------------------------------ matrix helpers ---- */

kiln_value kiln_eye(kiln_graph *g, kiln_dtype dtype, int64_t n, int64_t m, int64_t k) {
    const char *op = "kiln_eye";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!ir_dtype_valid(dtype))
        return trace_fail(g, KILN_STATUS_DTYPE, op, "dtype %d is not a kiln_dtype", (int)dtype);
    if (n < 0 || m < 0)
        return trace_fail(g, KILN_STATUS_SHAPE, op, "n = %lld and m = %lld must be >= 0",
                          (long long)n, (long long)m);
    ir_shape s = {2, {n, m}};
    kiln_value on = kiln_compare(g,
                                 kiln_sub(g, kiln_iota(g, KILN_DTYPE_I64, 2, s.dims, 1),
                                          kiln_iota(g, KILN_DTYPE_I64, 2, s.dims, 0)),
                                 kiln_scalar(g, KILN_DTYPE_I64, (double)k), KILN_CMP_EQ);
    return kiln_convert(g, on, dtype);
}

/* jnp.tril / jnp.triu: the checks, then the select. */
static kiln_value triangle(kiln_graph *g, const char *op, kiln_value x, int64_t k, bool lower) {
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *n = trace_node(g, op, x, "x");
    if (!n) return KN_NONE;
    if (n->shape.rank < 2)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "x must have two axes or more (matrices over the last two)");
    return tri(g, x, lower, k);
}

kiln_value kiln_tril(kiln_graph *g, kiln_value x, int64_t k) {
    return triangle(g, "kiln_tril", x, k, true);
}

kiln_value kiln_triu(kiln_graph *g, kiln_value x, int64_t k) {
    return triangle(g, "kiln_triu", x, k, false);
}

kiln_value kiln_diagonal(kiln_graph *g, kiln_value x, int64_t offset, int axis1, int axis2) {
    const char *op = "kiln_diagonal";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *n = trace_node(g, op, x, "x");
    if (!n) return KN_NONE;
    int r = n->shape.rank, a1, a2;
    if (r < 2)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "x must have two axes or more");
    if (!trace_axis(axis1, r, &a1) || !trace_axis(axis2, r, &a2) || a1 == a2)
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                             "axis1 = %d and axis2 = %d must be two different axes of rank %d",
                             axis1, axis2, r);
    /* the two axes last (axis1, then axis2), flattened, and every (cols + 1)-th element
     * from the offset's first one: jnp's diagonal, its axis last */
    int perm[KILN_MAX_RANK], p = 0;
    for (int i = 0; i < r; i++)
        if (i != a1 && i != a2) perm[p++] = i;
    perm[p++] = a1, perm[p++] = a2;
    int64_t rows = n->shape.dims[a1], cols = n->shape.dims[a2];
    /* no arithmetic on an offset outside (-rows, cols): any int64_t is taken */
    int64_t len = 0, first = 0;
    if (offset >= 0 && offset < cols)
        len = cols - offset < rows ? cols - offset : rows, first = offset;
    else if (offset < 0 && offset > -rows)
        len = rows + offset < cols ? rows + offset : cols, first = -offset * cols;
    int64_t d[KILN_MAX_RANK], start[KILN_MAX_RANK], limit[KILN_MAX_RANK], stride[KILN_MAX_RANK];
    for (int i = 0; i < r - 2; i++)
        d[i] = n->shape.dims[perm[i]], start[i] = 0, limit[i] = d[i], stride[i] = 1;
    d[r - 2] = rows * cols;
    start[r - 2] = len ? first : 0;
    limit[r - 2] = len ? first + (len - 1) * (cols + 1) + 1 : 0;
    stride[r - 2] = cols + 1;
    kiln_value flat = kiln_reshape(g, kiln_transpose(g, x, perm), r - 1, d);
    return kiln_slice(g, flat, start, limit, stride);
}

/* --------------------------------------------------------- derivatives ---- */

/* phi(x): x's lower triangle with its diagonal halved. */
static kiln_value phi(kiln_graph *g, kiln_value x) {
    ir_shape s = g->nodes[x.id].shape;
    kiln_dtype t = g->nodes[x.id].dtype;
    kiln_value half =
        kiln_select(g, tri_mask(g, s, false, 0), kiln_scalar(g, t, 0.5), kiln_scalar(g, t, 1));
    return kiln_mul(g, tri(g, x, true, 0), half);
}

kiln_value trace_cholesky_jvp(kiln_graph *g, const ir_node *n, kiln_value l, kiln_value da) {
    const char *op = "kiln_jvp";
    if (n->a.symmetrize) da = sym(g, da);
    kiln_value t = tsolve(g, op, l, da, false, true, true, false); /* da L^-T */
    kiln_value m = tsolve(g, op, l, t, true, true, false, false);  /* L^-1 da L^-T */
    return kiln_matmul(g, l, phi(g, m));
}

kiln_value trace_cholesky_vjp(kiln_graph *g, const ir_node *n, kiln_value l, kiln_value ct) {
    const char *op = "kiln_grad";
    kiln_value p = phi(g, kiln_matmul(g, mT(g, l), ct));
    kiln_value x = tsolve(g, op, l, p, true, true, true, false);      /* L^-T P */
    kiln_value abar = tsolve(g, op, l, x, false, true, false, false); /* L^-T P L^-1 */
    return n->a.symmetrize ? sym(g, abar) : abar;
}

/* a's tangent or cotangent masked to the triangle the solve reads. */
static kiln_value read_triangle(kiln_graph *g, const ir_node *n, kiln_value x) {
    bool lower = n->a.tri.lower;
    int64_t k = n->a.tri.unit_diagonal ? (lower ? -1 : 1) : 0;
    return tri(g, x, lower, k);
}

void trace_triangular_solve_vjp(kiln_graph *g, const ir_node *n, kiln_value a, kiln_value x,
                                kiln_value ct, const bool *need, kiln_value *out) {
    const char *op = "kiln_grad";
    bool left = n->a.tri.left_side, tr = n->a.tri.transpose_a;
    kiln_value bbar = tsolve(g, op, a, ct, left, n->a.tri.lower, !tr, n->a.tri.unit_diagonal);
    if (need[1]) out[1] = bbar;
    if (!need[0]) return;
    /* left: op(a) x = b gives op(a)bar = -bbar x^T; right: x op(a) = b gives -x^T bbar */
    kiln_value t = left ? kiln_matmul(g, bbar, mT(g, x)) : kiln_matmul(g, mT(g, x), bbar);
    if (tr) t = mT(g, t);
    out[0] = read_triangle(g, n, kiln_neg(g, t));
}

kiln_value trace_triangular_solve_jvp(kiln_graph *g, const ir_node *n, kiln_value a, kiln_value x,
                                      kiln_value da, kiln_value db) {
    const char *op = "kiln_jvp";
    bool left = n->a.tri.left_side;
    kiln_value rhs = db;
    if (da.id) { /* d(op(a)) x (left) or x d(op(a)), taken from b's tangent */
        kiln_value d = read_triangle(g, n, da);
        if (n->a.tri.transpose_a) d = mT(g, d);
        kiln_value dx = left ? kiln_matmul(g, d, x) : kiln_matmul(g, x, d);
        rhs = db.id ? kiln_sub(g, db, dx) : kiln_neg(g, dx);
    }
    return tsolve(g, op, a, rhs, left, n->a.tri.lower, n->a.tri.transpose_a,
                  n->a.tri.unit_diagonal);
}

/* ----------------------------------------------------- primitive forms ---- */

/* Zeros for the batch axes and the given row and column starts, as dynamic_slice takes. */
static void starts(kiln_graph *g, int rank, kiln_value row, kiln_value col, kiln_value *s) {
    for (int i = 0; i < rank - 2; i++) s[i] = kiln_scalar(g, KILN_DTYPE_I32, 0);
    s[rank - 2] = row, s[rank - 1] = col;
}

/* x[..., r:r+rows, c:c+cols] at traced r and c. */
static kiln_value window(kiln_graph *g, kiln_value x, kiln_value r, kiln_value c, int64_t rows,
                         int64_t cols) {
    ir_shape s = g->nodes[x.id].shape;
    kiln_value st[KILN_MAX_RANK];
    int64_t sz[KILN_MAX_RANK];
    for (int i = 0; i < s.rank - 2; i++) sz[i] = s.dims[i];
    sz[s.rank - 2] = rows, sz[s.rank - 1] = cols;
    starts(g, s.rank, r, c, st);
    return kiln_dynamic_slice(g, x, s.rank, st, sz);
}

static kiln_value put(kiln_graph *g, kiln_value x, kiln_value u, kiln_value r, kiln_value c) {
    int rank = g->nodes[x.id].shape.rank;
    kiln_value st[KILN_MAX_RANK];
    starts(g, rank, r, c, st);
    return kiln_dynamic_update_slice(g, x, u, rank, st);
}

typedef struct prim_state {
    kiln_value a, b; /* of the enclosing graph */
    int64_t m;
    bool lower, unit, transpose; /* the substitution's: on op(a), left side */
} prim_state;

/* Column j of L: s = a[:, j] - L L[j, :]^T, L[i, j] = s_i / sqrt(s_j) for i >= j. The
 * columns after j are still zeros, so the product sums over k < j only. */
static int cholesky_column(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                           kiln_value *outs) {
    (void)n_in;
    const prim_state *p = user;
    kiln_value j = in[0], l = in[1], a = kiln_capture(g, p->a);
    kiln_value zero = kiln_scalar(g, KILN_DTYPE_I32, 0);
    kiln_value s = kiln_sub(g, window(g, a, zero, j, p->m, 1),
                            kiln_matmul(g, l, mT(g, window(g, l, j, zero, 1, p->m))));
    kiln_value d = kiln_sqrt(g, window(g, s, j, zero, 1, 1));
    ir_shape sh = g->nodes[s.id].shape;
    kiln_value rows = kiln_iota(g, KILN_DTYPE_I32, sh.rank, sh.dims, sh.rank - 2);
    kiln_value col = kiln_select(g, kiln_compare(g, rows, j, KILN_CMP_GE), kiln_div(g, s, d),
                                 kiln_scalar(g, g->nodes[s.id].dtype, 0));
    outs[0] = put(g, l, col, zero, j);
    return g->status ? -1 : 1;
}

kiln_value trace_cholesky_primitives(kiln_graph *g, const ir_node *n, kiln_value a) {
    if (n->a.symmetrize) a = sym(g, a);
    const ir_node *an = &g->nodes[a.id];
    ir_shape s = an->shape;
    kiln_dtype t = an->dtype;
    prim_state p = {.a = a, .m = s.dims[s.rank - 1]};
    kiln_value l0 = kiln_full(g, t, s.rank, s.dims, 0), l = {0};
    if (!p.m) return l0; /* no rows: nothing to loop over (the body could not be traced) */
    if (kiln_fori_loop(g, 0, p.m, cholesky_column, &p, 1, &l0, &l)) return KN_NONE;
    /* potrf's failure: a pivot (the factor's diagonal) not > 0, or NaN, makes the lower
     * triangle NaN; ok is [..., 1, 1], true where every pivot is positive */
    kiln_value pos =
        kiln_compare(g, kiln_diagonal(g, l, 0, -2, -1), kiln_scalar(g, t, 0), KILN_CMP_GT);
    int last = s.rank - 2;
    int64_t one[KILN_MAX_RANK]; /* [..., 1, 1] */
    for (int i = 0; i < s.rank; i++) one[i] = i < s.rank - 2 ? s.dims[i] : 1;
    kiln_value ok = kiln_reduce_min(g, kiln_convert(g, pos, KILN_DTYPE_I32), 1, &last, false);
    ok = kiln_compare(g, kiln_reshape(g, ok, s.rank, one), kiln_scalar(g, KILN_DTYPE_I32, 0),
                      KILN_CMP_GT);
    kiln_value keep = kiln_logical_or(g, ok, kiln_logical_not(g, tri_mask(g, s, true, 0)));
    return kiln_select(g, keep, l, kiln_scalar(g, t, NAN));
}

/* Row r of x in op(a) x = b, op(a) lower: (b[r] - op(a)[r, :r] x[:r]) / op(a)[r, r], or in
 * reverse order for an upper op(a). Rows not solved yet are zeros, and the entries of
 * op(a) outside its triangle are masked (a select: NaN there does not leak). */
static int substitution_row(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                            kiln_value *outs) {
    (void)n_in;
    const prim_state *p = user;
    kiln_value i = in[0], x = in[1];
    kiln_value a = kiln_capture(g, p->a), b = kiln_capture(g, p->b);
    if (p->transpose) a = mT(g, a);
    kiln_value zero = kiln_scalar(g, KILN_DTYPE_I32, 0);
    kiln_value r =
        p->lower ? i : kiln_sub(g, kiln_scalar(g, KILN_DTYPE_I32, (double)(p->m - 1)), i);
    kiln_value arow = window(g, a, r, zero, 1, p->m);
    ir_shape sh = g->nodes[arow.id].shape;
    kiln_value cols = kiln_iota(g, KILN_DTYPE_I32, sh.rank, sh.dims, sh.rank - 1);
    kiln_value seen = kiln_compare(g, cols, r, p->lower ? KILN_CMP_LT : KILN_CMP_GT);
    arow = kiln_select(g, seen, arow, kiln_scalar(g, g->nodes[arow.id].dtype, 0));
    int64_t n = g->nodes[x.id].shape.dims[g->nodes[x.id].shape.rank - 1];
    kiln_value v = kiln_sub(g, window(g, b, r, zero, 1, n), kiln_matmul(g, arow, x));
    if (!p->unit) v = kiln_div(g, v, window(g, a, r, r, 1, 1));
    outs[0] = put(g, x, v, r, zero);
    return g->status ? -1 : 1;
}

kiln_value trace_triangular_solve_primitives(kiln_graph *g, const ir_node *n, kiln_value a,
                                             kiln_value b) {
    /* x op(a) = b is op(a)^T x^T = b^T: a left solve with the transpose flipped */
    bool left = n->a.tri.left_side;
    bool tr = n->a.tri.transpose_a != !left;
    kiln_value bl = left ? b : mT(g, b);
    ir_shape bs = g->nodes[bl.id].shape;
    kiln_dtype t = g->nodes[bl.id].dtype;
    prim_state p = {.a = a,
                    .b = bl,
                    .m = bs.dims[bs.rank - 2],
                    .lower = n->a.tri.lower != tr,
                    .unit = n->a.tri.unit_diagonal,
                    .transpose = tr};
    kiln_value x0 = kiln_full(g, t, bs.rank, bs.dims, 0), x = {0};
    if (!p.m) return left ? x0 : mT(g, x0); /* no rows: x is empty */
    if (kiln_fori_loop(g, 0, p.m, substitution_row, &p, 1, &x0, &x)) return KN_NONE;
    return left ? x : mT(g, x);
}
