/* kindex.c — index expressions of the kernel description and their simplifier.
 *
 * An index is c + sum coef * atom with its terms sorted by atom and each atom once, so two
 * indices are equal exactly when their constants and term lists are (atoms are shared:
 * an atom is created once per (kind, argument, divisor), and a loop variable once per
 * range it is known to take: inside a pad's or a concatenation's branch its guard bounds
 * the variable, which lets the rules below split the branch's index). Every index carries a bound
 * lo..hi on its value, and the rewrites below use it:
 *
 *   x / 1 -> x,  x % 1 -> 0,  x % N -> x and x / N -> 0 when 0 <= x < N;
 *   (N*q + r) / N -> q + r / N and (N*q + r) % N -> r % N when x >= 0 and r >= 0, which
 *   with the previous rule turns "linearise then split" (a reshape) back into the axes;
 *   (k*h + l) / N -> h / (N/k) and (k*h + l) % N -> k*(h % (N/k)) + l when k divides N
 *   and 0 <= l < k, for axes merged by one reshape and split again by another;
 *   k*N*(x / N) + k*(x % N) -> k*x (C's a == a/b*b + a%b), and for x >= 0
 *   k*N*((x / N) % M) + k*(x % N) -> k*(x % (N*M)), which rejoin a split index;
 *   (v + m*N) / N -> v / N + m and (v + m*N) % N -> v % N for a variable v >= 0 and
 *   v + m*N >= 0 (inside a concatenation's branch: a split last axis' variable, whose
 *   v / N and v % N the printer writes as the split's two loop variables);
 *   a variable that takes one value is that constant.
 *
 * All divisions are C's (truncating); the x >= 0 conditions are what make truncation
 * agree with the floor division the algebra needs. Bounds saturate at the int64 limits,
 * so an overflowing bound is only less precise, never wrong.
 *
 * An index under construction lives at the tail of kd->terms (terms [first, n_terms)) and
 * is finished in place: nothing else appends terms meanwhile. */
#include "kdesc.h"

#include <string.h>

bool kd_reserve(kd_kernel *kd, void **arr, uint32_t n, uint32_t *cap, size_t elem) {
    if (kd->oom) return false;
    if (n < *cap) return true;
    uint32_t c = *cap ? 2 * *cap : 16;
    void *p = c > n ? host_realloc(kd->ctx, *arr, (size_t)*cap * elem, (size_t)c * elem) : NULL;
    if (!p) {
        kd->oom = true;
        return false;
    }
    *arr = p;
    *cap = c;
    return true;
}

static int64_t sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    return a > 0 ? INT64_MAX : INT64_MIN;
}

static int64_t sat_mul(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_mul_overflow(a, b, &r)) return r;
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

static int64_t floor_div(int64_t a, int64_t n) {
    int64_t q = a / n;
    return q * n > a ? q - 1 : q;
}

uint32_t kd_var_new(kd_kernel *kd, kd_var v) {
    if (!kd_reserve(kd, (void **)&kd->vars, kd->n_vars, &kd->cap_vars, sizeof *kd->vars)) return 0;
    kd->vars[kd->n_vars] = v;
    return kd->n_vars++;
}

bool kd_ix_equal(const kd_kernel *kd, uint32_t a, uint32_t b) {
    if (a == b) return true;
    const kd_index *x = &kd->ixs[a], *y = &kd->ixs[b];
    if (x->c != y->c || x->n != y->n) return false;
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *s = &kd->terms[x->first + i], *t = &kd->terms[y->first + i];
        if (s->atom != t->atom || s->coef != t->coef) return false;
    }
    return true;
}

/* The atom (kind, arg, n), created with bound lo..hi if it is new; UINT32_MAX on OOM. */
static uint32_t atom_get(kd_kernel *kd, kd_atom_kind kind, uint32_t arg, int64_t n, int64_t lo,
                         int64_t hi) {
    for (uint32_t i = 0; i < kd->n_atoms; i++) {
        const kd_atom *a = &kd->atoms[i];
        if (a->kind != kind || a->n != n) continue;
        bool same = kind == KD_ATOM_DIV || kind == KD_ATOM_MOD ? kd_ix_equal(kd, a->arg, arg)
                                                               : a->arg == arg;
        /* a loop variable narrowed by a guard (kd_ix_within) is an atom of its own */
        if (kind == KD_ATOM_VAR) same = same && a->lo == lo && a->hi == hi;
        if (same && !a->narrowed) return i;
    }
    if (!kd_reserve(kd, (void **)&kd->atoms, kd->n_atoms, &kd->cap_atoms, sizeof *kd->atoms))
        return UINT32_MAX;
    kd->atoms[kd->n_atoms] = (kd_atom){kind, arg, n, lo, hi, false};
    return kd->n_atoms++;
}

/* Atom `base` (a division, remainder or value) known to lie in lo..hi, narrower than its
 * own bound: found or created as a narrowed atom; UINT32_MAX on OOM. */
static uint32_t atom_narrowed(kd_kernel *kd, uint32_t base, int64_t lo, int64_t hi) {
    const kd_atom b = kd->atoms[base];
    for (uint32_t i = 0; i < kd->n_atoms; i++) {
        const kd_atom *a = &kd->atoms[i];
        if (a->narrowed && a->kind == b.kind && a->n == b.n && a->lo == lo && a->hi == hi &&
            (b.kind == KD_ATOM_VAL ? a->arg == b.arg : kd_ix_equal(kd, a->arg, b.arg)))
            return i;
    }
    if (!kd_reserve(kd, (void **)&kd->atoms, kd->n_atoms, &kd->cap_atoms, sizeof *kd->atoms))
        return UINT32_MAX;
    kd->atoms[kd->n_atoms] = (kd_atom){b.kind, b.arg, b.n, lo, hi, true};
    return kd->n_atoms++;
}

/* ------------------------------------------------- building an index ---- */

typedef struct pending {
    uint32_t first; /* its terms are kd->terms[first, kd->n_terms) */
    int64_t c;
} pending;

static pending pend_begin(const kd_kernel *kd, int64_t c) {
    return (pending){kd->n_terms, c};
}

static void pend_term(kd_kernel *kd, uint32_t atom, int64_t coef) {
    if (atom == UINT32_MAX) {
        kd->oom = true;
        return;
    }
    if (!coef) return;
    if (!kd_reserve(kd, (void **)&kd->terms, kd->n_terms, &kd->cap_terms, sizeof *kd->terms))
        return;
    kd->terms[kd->n_terms++] = (kd_term){atom, coef};
}

/* Adds k * index ix to the pending index. */
static void pend_ix(kd_kernel *kd, pending *p, uint32_t ix, int64_t k) {
    p->c = sat_add(p->c, sat_mul(k, kd->ixs[ix].c));
    uint32_t first = kd->ixs[ix].first, n = kd->ixs[ix].n;
    for (uint32_t i = 0; i < n; i++) {
        kd_term t = kd->terms[first + i]; /* a copy: appending may move the array */
        pend_term(kd, t.atom, sat_mul(k, t.coef));
    }
}

/* Sorts by atom, merges equal atoms, drops zero terms, folds single-valued atoms. */
static void pend_tidy(kd_kernel *kd, pending *p) {
    uint32_t n = kd->n_terms - p->first, m = 0;
    if (!n) return; /* no terms (and maybe no array yet: terms + 0 on NULL is undefined) */
    kd_term *t = kd->terms + p->first;
    for (uint32_t i = 1; i < n; i++) { /* insertion sort: forms are short */
        kd_term x = t[i];
        uint32_t j = i;
        for (; j > 0 && t[j - 1].atom > x.atom; j--) t[j] = t[j - 1];
        t[j] = x;
    }
    for (uint32_t i = 0; i < n; i++) {
        const kd_atom *a = &kd->atoms[t[i].atom];
        if (a->lo == a->hi) {
            p->c = sat_add(p->c, sat_mul(t[i].coef, a->lo));
            continue;
        }
        if (m && t[m - 1].atom == t[i].atom)
            t[m - 1].coef += t[i].coef;
        else
            t[m++] = t[i];
        if (!t[m - 1].coef) m--;
    }
    kd->n_terms = p->first + m;
}

/* One rejoining rewrite (see the file comment); false if none applies. */
static bool pend_rejoin(kd_kernel *kd, pending *p) {
    uint32_t n = kd->n_terms - p->first;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < n; j++) {
            kd_term ti = kd->terms[p->first + i], tj = kd->terms[p->first + j];
            const kd_atom *a = &kd->atoms[ti.atom], *b = &kd->atoms[tj.atom];
            if (i == j || b->kind != KD_ATOM_MOD || tj.coef != ti.coef / b->n || ti.coef % b->n)
                continue;
            bool whole = a->kind == KD_ATOM_DIV && a->n == b->n && kd_ix_equal(kd, a->arg, b->arg);
            /* a = (x / N) % M, b = x % N */
            const kd_atom *inner = a->kind == KD_ATOM_MOD && kd->ixs[a->arg].n == 1 &&
                                           kd->ixs[a->arg].c == 0 &&
                                           kd->terms[kd->ixs[a->arg].first].coef == 1
                                       ? &kd->atoms[kd->terms[kd->ixs[a->arg].first].atom]
                                       : NULL;
            bool split = inner && inner->kind == KD_ATOM_DIV && inner->n == b->n &&
                         kd_ix_equal(kd, inner->arg, b->arg) && kd->ixs[b->arg].lo >= 0;
            if (!whole && !split) continue;
            uint32_t x = b->arg;
            int64_t k = tj.coef, nm = split ? sat_mul(b->n, a->n) : 0;
            /* drop terms i and j */
            uint32_t w = p->first;
            for (uint32_t r = 0; r < n; r++)
                if (r != i && r != j) kd->terms[w++] = kd->terms[p->first + r];
            kd->n_terms = w;
            if (whole || kd->ixs[x].hi < nm)
                pend_ix(kd, p, x, k);
            else
                pend_term(kd,
                          atom_get(kd, KD_ATOM_MOD, x, nm, 0,
                                   nm - 1 < kd->ixs[x].hi ? nm - 1 : kd->ixs[x].hi),
                          k);
            return true;
        }
    }
    return false;
}

static uint32_t pend_finish(kd_kernel *kd, pending *p) {
    if (kd->oom) return 0;
    pend_tidy(kd, p);
    while (!kd->oom && pend_rejoin(kd, p)) pend_tidy(kd, p);
    if (!kd_reserve(kd, (void **)&kd->ixs, kd->n_ixs, &kd->cap_ixs, sizeof *kd->ixs)) return 0;
    kd_index x = {
        .c = p->c, .lo = p->c, .hi = p->c, .first = p->first, .n = kd->n_terms - p->first};
    for (uint32_t i = 0; i < x.n; i++) {
        const kd_term *t = &kd->terms[x.first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        x.lo = sat_add(x.lo, sat_mul(t->coef, t->coef > 0 ? a->lo : a->hi));
        x.hi = sat_add(x.hi, sat_mul(t->coef, t->coef > 0 ? a->hi : a->lo));
    }
    kd->ixs[kd->n_ixs] = x;
    return kd->n_ixs++;
}

/* ------------------------------------------------------------ builders ---- */

uint32_t kd_ix_const(kd_kernel *kd, int64_t c) {
    pending p = pend_begin(kd, c);
    return pend_finish(kd, &p);
}

static uint32_t ix_atom(kd_kernel *kd, uint32_t atom, int64_t c) {
    pending p = pend_begin(kd, c);
    pend_term(kd, atom, 1);
    return pend_finish(kd, &p);
}

uint32_t kd_ix_var(kd_kernel *kd, uint32_t var, int64_t lo, int64_t hi) {
    return ix_atom(kd, atom_get(kd, KD_ATOM_VAR, var, 0, lo, hi), 0);
}

uint32_t kd_ix_within(kd_kernel *kd, uint32_t ix, int64_t lo, int64_t hi) {
    if (kd->oom) return ix;
    const kd_index x = kd->ixs[ix];
    if (x.n != 1 || kd->terms[x.first].coef != 1) return ix;
    uint32_t base = kd->terms[x.first].atom;
    const kd_atom a = kd->atoms[base];
    int64_t nlo = sat_add(lo, -x.c), nhi = sat_add(hi, -x.c);
    nlo = nlo > a.lo ? nlo : a.lo;
    nhi = nhi < a.hi ? nhi : a.hi;
    if (nlo == a.lo && nhi == a.hi) return ix;
    if (a.kind != KD_ATOM_VAR) return ix_atom(kd, atom_narrowed(kd, base, nlo, nhi), x.c);
    return ix_atom(kd, atom_get(kd, KD_ATOM_VAR, a.arg, 0, nlo, nhi), x.c);
}

uint32_t kd_ix_val(kd_kernel *kd, uint32_t stmt, int64_t lo, int64_t hi) {
    return ix_atom(kd, atom_get(kd, KD_ATOM_VAL, stmt, 0, lo, hi), 0);
}

uint32_t kd_ix_affine(kd_kernel *kd, uint32_t a, int64_t ka, uint32_t b, int64_t kb, int64_t c) {
    pending p = pend_begin(kd, c);
    pend_ix(kd, &p, a, ka);
    if (b) pend_ix(kd, &p, b, kb);
    return pend_finish(kd, &p);
}

/* Splits index a (which must be >= 0) as n*q + r: q gets the terms whose coefficient n
 * divides and the constant's floor(c / n), r the rest. Returns r's id, or 0 if r can be
 * negative (the split then proves nothing) or on OOM; *q is a pending index. */
static uint32_t split(kd_kernel *kd, uint32_t a, int64_t n, pending *q) {
    const kd_index x = kd->ixs[a];
    int64_t cq = floor_div(x.c, n);
    pending r = pend_begin(kd, x.c - cq * n);
    for (uint32_t i = 0; i < x.n; i++) {
        kd_term t = kd->terms[x.first + i];
        if (t.coef % n) pend_term(kd, t.atom, t.coef);
    }
    uint32_t rid = pend_finish(kd, &r);
    if (!rid) return 0;
    /* move whole n's between r and q so that r starts in 0..n-1: a loop variable narrowed
     * to 512..767 with c = -512 gives r = v - 512, not v */
    int64_t s = floor_div(kd->ixs[rid].lo, n);
    if (s) rid = kd_ix_affine(kd, rid, 1, 0, 0, -s * n);
    if (!rid || kd->ixs[rid].lo < 0) return 0;
    *q = pend_begin(kd, cq + s);
    for (uint32_t i = 0; i < x.n; i++) {
        kd_term t = kd->terms[x.first + i];
        if (!(t.coef % n)) pend_term(kd, t.atom, t.coef / n);
    }
    return rid;
}

static int64_t gcd(int64_t a, int64_t b) {
    a = a < 0 ? -a : a;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Writes r (>= 0) as k*h + l with k > 1 dividing n and 0 <= l < k, so that r / n is
 * h / (n/k) and r % n is k*(h % (n/k)) + l: `(i*256 + j) / 4096` with j < 256 is i / 16.
 * k is tried as the common factor of n and each term's coefficient. False if none fits. */
static bool factor(kd_kernel *kd, uint32_t r, int64_t n, uint32_t *h, uint32_t *l, int64_t *k) {
    const kd_index x = kd->ixs[r];
    for (uint32_t i = 0; i < x.n && !kd->oom; i++) {
        int64_t f = gcd(kd->terms[x.first + i].coef, n);
        if (f < 2) continue;
        int64_t cq = floor_div(x.c, f);
        pending lo = pend_begin(kd, x.c - cq * f);
        for (uint32_t t = 0; t < x.n; t++) {
            kd_term tt = kd->terms[x.first + t];
            if (tt.coef % f) pend_term(kd, tt.atom, tt.coef);
        }
        uint32_t li = pend_finish(kd, &lo);
        int64_t s = li ? floor_div(kd->ixs[li].lo, f) : 0; /* as in split */
        if (s) li = kd_ix_affine(kd, li, 1, 0, 0, -s * f);
        if (!li || kd->ixs[li].lo < 0 || kd->ixs[li].hi >= f) continue;
        pending hi = pend_begin(kd, cq + s);
        for (uint32_t t = 0; t < x.n; t++) {
            kd_term tt = kd->terms[x.first + t];
            if (!(tt.coef % f)) pend_term(kd, tt.atom, tt.coef / f);
        }
        *h = pend_finish(kd, &hi);
        *l = li;
        *k = f;
        return *h != 0;
    }
    return false;
}

/* Whether r (>= 0) is v + m n for a variable atom v >= 0 (its atom in *v, m in *m). */
static bool var_plus_multiple(const kd_kernel *kd, uint32_t r, int64_t n, uint32_t *v, int64_t *m) {
    const kd_index x = kd->ixs[r];
    if (x.n != 1 || kd->terms[x.first].coef != 1 || x.c % n) return false;
    *v = kd->terms[x.first].atom;
    *m = x.c / n;
    return kd->atoms[*v].kind == KD_ATOM_VAR && kd->atoms[*v].lo >= 0;
}

uint32_t kd_ix_div(kd_kernel *kd, uint32_t a, int64_t n) {
    if (n == 1 || kd->oom) return a;
    const kd_index x = kd->ixs[a];
    if (x.lo >= 0) {
        pending q;
        uint32_t r = split(kd, a, n, &q);
        if (r) {
            uint32_t qi = pend_finish(kd, &q), h, l;
            const kd_index rx = kd->ixs[r];
            int64_t k;
            if (rx.hi < n) return qi;
            uint32_t v;
            int64_t m;
            if (var_plus_multiple(kd, r, n, &v, &m)) { /* v / n + m */
                const kd_atom va = kd->atoms[v];
                uint32_t vi = ix_atom(kd, v, 0);
                uint32_t rd =
                    ix_atom(kd, atom_get(kd, KD_ATOM_DIV, vi, n, va.lo / n, va.hi / n), m);
                return kd_ix_affine(kd, qi, 1, rd, 1, 0);
            }
            uint32_t rd =
                factor(kd, r, n, &h, &l, &k)
                    ? kd_ix_div(kd, h, n / k)
                    : ix_atom(kd, atom_get(kd, KD_ATOM_DIV, r, n, rx.lo / n, rx.hi / n), 0);
            return kd_ix_affine(kd, qi, 1, rd, 1, 0);
        }
    }
    return ix_atom(kd, atom_get(kd, KD_ATOM_DIV, a, n, x.lo / n, x.hi / n), 0);
}

uint32_t kd_ix_mod(kd_kernel *kd, uint32_t a, int64_t n) {
    if (n == 1) return kd_ix_const(kd, 0);
    if (kd->oom) return a;
    const kd_index x = kd->ixs[a];
    if (x.lo >= 0) {
        if (x.hi < n) return a;
        pending q;
        uint32_t r = split(kd, a, n, &q), h, l;
        if (r) {
            kd->n_terms = q.first; /* q is not needed */
            const kd_index rx = kd->ixs[r];
            int64_t k;
            if (rx.hi < n) return r;
            uint32_t v;
            int64_t m;
            if (var_plus_multiple(kd, r, n, &v, &m)) /* v % n */
                return ix_atom(kd, atom_get(kd, KD_ATOM_MOD, ix_atom(kd, v, 0), n, 0, n - 1), 0);
            if (factor(kd, r, n, &h, &l, &k))
                return kd_ix_affine(kd, kd_ix_mod(kd, h, n / k), k, l, 1, 0);
            return ix_atom(kd, atom_get(kd, KD_ATOM_MOD, r, n, 0, n - 1), 0);
        }
        return ix_atom(kd, atom_get(kd, KD_ATOM_MOD, a, n, 0, n - 1), 0);
    }
    return ix_atom(kd, atom_get(kd, KD_ATOM_MOD, a, n, -(n - 1), n - 1), 0);
}

/* ------------------------------------------------------------ index maps ---- */

bool kd_ix_map(kd_kernel *kd, const ir_node *n, const uint32_t *ix, uint32_t *sub) {
    switch (n->op) {
    case IR_REV: /* element i of a reversed axis of size d is the operand's d - 1 - i */
        for (int a = 0; a < n->shape.rank; a++)
            sub[a] = n->a.rev_axes >> a & 1u
                         ? kd_ix_affine(kd, ix[a], -1, 0, 0, n->shape.dims[a] - 1)
                         : ix[a];
        return true;
    default: return false;
    }
}
