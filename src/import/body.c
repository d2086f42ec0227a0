/* body.c — comparator bodies recognised: sort's comparator and select_and_scatter's select,
 * as both front ends read them into an imp_body (import.h).
 *
 * kiln has no op that runs an arbitrary comparator, so a body maps onto kiln_sort or onto
 * the max pool's gradient only when it is a form whose order kiln's op computes exactly:
 * the comparators JAX writes. jax.lax.sort's (_sort_lt_comparator) compares each float key
 * after _canonicalize_float_for_sort (x == 0 ? 0 : x, then x != x ? NaN : x) with a
 * TOTALORDER LT, so -0.0 equals +0.0 and every NaN sorts after +inf, all equal: kiln_sort's
 * order; integer and bool keys are compared plainly; several keys are lexicographic,
 * lt(k0) or (eq(k0) and (lt(k1) or ...)). Anything else (a FLOAT compare that would put NaNs
 * anywhere, a TOTALORDER without the canonicalisation that would order -0.0 before +0.0,
 * keys of mixed direction, other ops) is not recognised, and the caller refuses the op by
 * name and line.
 *
 * Invariants: recognition only reads the body (indices checked against n), recursing at
 * most once per key, so any body is answered in time linear in its size. */
#include "import.h"

#include <math.h>

bool imp_body_add(imp_body *b, imp_bop op) {
    if (b->n >= IMP_MAX_BODY) {
        b->unreadable = true;
        return false;
    }
    b->op[b->n++] = op;
    return true;
}

static const imp_bop *at(const imp_body *b, int i) {
    return i >= 0 && i < b->n ? &b->op[i] : NULL;
}

static bool is_param(const imp_body *b, int i, int p) {
    const imp_bop *o = at(b, i);
    return o && o->kind == IMP_B_PARAM && o->param == p;
}

static bool is_const(const imp_body *b, int i, double v) {
    const imp_bop *o = at(b, i);
    return o && o->kind == IMP_B_CONST && (isnan(v) ? isnan(o->value) : o->value == v);
}

static bool is_compare(const imp_body *b, int i, kiln_cmp c, int x, int y) {
    const imp_bop *o = at(b, i);
    return o && o->kind == IMP_B_COMPARE && o->n_in == 2 && o->cmp == c && o->in[0] == x &&
           o->in[1] == y;
}

static bool is_float(kiln_dtype t) {
    return t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || t == KILN_DTYPE_BF16 ||
           t == KILN_DTYPE_F16;
}

/* Op i is parameter p, made canonical for sorting if it is a float:
 * select(p != p, NaN, select(p == 0, 0, p)). */
static bool key_of(const imp_body *b, int i, int p, bool flt) {
    if (!flt) return is_param(b, i, p);
    const imp_bop *o = at(b, i);
    if (!o || o->kind != IMP_B_SELECT || o->n_in != 3 || !is_const(b, o->in[1], NAN)) return false;
    const imp_bop *ne = at(b, o->in[0]), *in = at(b, o->in[2]);
    if (!ne || !in || ne->kind != IMP_B_COMPARE || ne->cmp != KILN_CMP_NE || ne->n_in != 2 ||
        !is_param(b, ne->in[0], p) || !is_param(b, ne->in[1], p))
        return false;
    if (in->kind != IMP_B_SELECT || in->n_in != 3 || !is_const(b, in->in[1], 0) ||
        !is_param(b, in->in[2], p))
        return false;
    const imp_bop *eq = at(b, in->in[0]);
    return eq && eq->kind == IMP_B_COMPARE && eq->cmp == KILN_CMP_EQ && eq->n_in == 2 &&
           is_param(b, eq->in[0], p) && is_const(b, eq->in[1], 0);
}

/* Op i compares key j's two sides (parameters 2j and 2j + 1): *c the direction as
 * "lhs c rhs" (LT, GT or EQ; a compare written the other way round is turned). */
static bool key_compare(const imp_body *b, int i, int j, bool flt, kiln_cmp *c) {
    const imp_bop *o = at(b, i);
    if (!o || o->kind != IMP_B_COMPARE || o->n_in != 2 || o->uns || (flt && !o->totalorder))
        return false;
    bool fwd = key_of(b, o->in[0], 2 * j, flt) && key_of(b, o->in[1], 2 * j + 1, flt);
    bool rev = key_of(b, o->in[0], 2 * j + 1, flt) && key_of(b, o->in[1], 2 * j, flt);
    if (!fwd && !rev) return false;
    switch (o->cmp) {
    case KILN_CMP_EQ: *c = KILN_CMP_EQ; return true;
    case KILN_CMP_LT: *c = fwd ? KILN_CMP_LT : KILN_CMP_GT; return true;
    case KILN_CMP_GT: *c = fwd ? KILN_CMP_GT : KILN_CMP_LT; return true;
    default: return false;
    }
}

/* Op i orders by key j strictly, in the direction *dir (0: not yet known, 1 ascending,
 * 2 descending; set by the first key). */
static bool key_order(const imp_body *b, int i, int j, bool flt, int *dir) {
    kiln_cmp c;
    if (!key_compare(b, i, j, flt, &c) || c == KILN_CMP_EQ) return false;
    int d = c == KILN_CMP_LT ? 1 : 2;
    if (*dir && *dir != d) return false;
    *dir = d;
    return true;
}

/* Op i orders lexicographically by keys j, j + 1, ...: how many (0: not such an order). */
static int lex(const imp_body *b, int i, int j, int n, const kiln_dtype *types, int *dir) {
    if (j >= n) return 0;
    bool flt = is_float(types[j]);
    if (key_order(b, i, j, flt, dir)) return 1;
    const imp_bop *o = at(b, i);
    if (!o || o->kind != IMP_B_OR || o->n_in != 2) return 0;
    for (int s = 0; s < 2; s++) { /* or(lt, and(eq, rest)), either way round */
        const imp_bop *a = at(b, o->in[1 - s]);
        if (!a || a->kind != IMP_B_AND || a->n_in != 2) continue;
        for (int t = 0; t < 2; t++) {
            kiln_cmp c;
            int save = *dir;
            if (!key_compare(b, a->in[t], j, flt, &c) || c != KILN_CMP_EQ ||
                !key_order(b, o->in[s], j, flt, dir)) {
                *dir = save;
                continue;
            }
            int rest = lex(b, a->in[1 - t], j + 1, n, types, dir);
            if (rest) return 1 + rest;
            *dir = save;
        }
    }
    return 0;
}

bool imp_sort_body(const imp_body *b, int n, const kiln_dtype *types, int *num_keys,
                   bool *descending) {
    if (!b || b->unreadable || n < 1) return false;
    for (int i = 0; i < b->n; i++)
        if (b->op[i].kind == IMP_B_PARAM && (b->op[i].param < 0 || b->op[i].param >= 2 * n))
            return false;
    int dir = 0, k = lex(b, b->ret, 0, n, types, &dir);
    if (!k) return false;
    *num_keys = k;
    *descending = dir == 2;
    return true;
}

bool imp_select_body_ge(const imp_body *b) {
    if (!b || b->unreadable) return false;
    const imp_bop *o = at(b, b->ret);
    return o && !o->totalorder && is_compare(b, b->ret, KILN_CMP_GE, o->in[0], o->in[1]) &&
           is_param(b, o->in[0], 0) && is_param(b, o->in[1], 1);
}
