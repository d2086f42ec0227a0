/* randprog.h — a random program generator for cross-checking compiled code against the
 * reference interpreter. It builds valid programs through the public API: random
 * parameters, elementwise chains with broadcasting, reductions (with and without
 * keepdims), shape ops (transpose, reshape, slice, pad, concatenate, broadcast), matrix
 * products, comparisons and selects, gathers. Values stay bounded (divisions and logs are
 * guarded) so that float rounding differences cannot blow up into false failures.
 *
 * Usage: rp_state s = {.seed = ...}; each rp_sub(&s, g) appends an independent
 * sub-program to graph g (their parameters and outputs accumulate in s). rp_loss makes
 * float sub-programs and a scalar loss over their outputs, for the autodiff tests.
 *
 * A second kind, rp_dense_graph, is made for the graph passes rather than for code
 * generation: small programs dense in identities, duplicates and foldable constants.
 * Both draw from the one generator of rng.h, so a seed names a program exactly. */
#ifndef KILN_RANDPROG_H
#define KILN_RANDPROG_H

#include "rng.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define RP_MAX_VALUES 64
#define RP_MAX_PARAMS 256
#define RP_MAX_OUTS   64

typedef struct rp_val {
    kiln_value v;
    kiln_dtype t;
    int rank;
    int64_t dims[KILN_MAX_RANK];
} rp_val;

typedef struct rp_state {
    uint64_t seed;
    int n_params, n_outs;
    rp_val params[RP_MAX_PARAMS];
    kiln_value outs[RP_MAX_OUTS];
    /* per sub-program */
    rp_val vals[RP_MAX_VALUES];
    int n_vals;
} rp_state;

static inline int rp_int(rp_state *s, int n) {
    return test_rng_int(&s->seed, n);
}

/* How many random programs a test checks: KILN_TEST_PROGRAMS when set (long runs), else
 * the test's default. */
static inline int rp_program_count(int fallback) {
    const char *env = getenv("KILN_TEST_PROGRAMS");
    if (!env || !*env) return fallback;
    char *end = NULL;
    long n = strtol(env, &end, 10);
    if (!end || *end || n < 0 || n > 100000000) {
        fprintf(stderr, "KILN_TEST_PROGRAMS=\"%s\" is not a count of programs\n", env);
        exit(2);
    }
    return (int)n;
}

static inline rp_val rp_typed(kiln_graph *g, kiln_value v) {
    rp_val r;
    memset(&r, 0, sizeof r);
    r.v = v;
    kiln_value_type(g, v, &r.t, &r.rank, r.dims);
    return r;
}

static inline void rp_push(rp_state *s, kiln_graph *g, kiln_value v) {
    if (!kiln_value_ok(v) || s->n_vals >= RP_MAX_VALUES) return;
    s->vals[s->n_vals++] = rp_typed(g, v);
}

static inline rp_val *rp_pick(rp_state *s) {
    /* favour recent values so chains grow long */
    int n = s->n_vals, k = rp_int(s, 3) ? n - 1 - rp_int(s, n < 3 ? n : 3) : rp_int(s, n);
    return &s->vals[k];
}

static inline kiln_value rp_param(rp_state *s, kiln_graph *g, kiln_dtype t, int rank,
                                  const int64_t *dims) {
    char name[16];
    snprintf(name, sizeof name, "p%d", s->n_params);
    kiln_value v = kiln_parameter(g, name, t, rank, dims);
    if (s->n_params < RP_MAX_PARAMS) s->params[s->n_params++] = rp_typed(g, v);
    return v;
}

static inline void rp_random_shape(rp_state *s, int *rank, int64_t *dims) {
    *rank = rp_int(s, 4);
    for (int i = 0; i < *rank; i++) {
        int r = rp_int(s, 10);
        dims[i] = r == 0 ? 1 : r == 1 ? 0 + (rp_int(s, 4) == 0 ? 0 : 1) : 1 + rp_int(s, 6);
        if (rp_int(s, 12) == 0) dims[i] = 17 + rp_int(s, 40);
    }
}

/* A value that broadcasts against x: x's shape with some axes set to 1 or dropped. */
static inline kiln_value rp_partner(rp_state *s, kiln_graph *g, const rp_val *x) {
    if (rp_int(s, 3) == 0) {
        for (int i = 0; i < s->n_vals; i++) /* an existing value of the same type */
            if (s->vals[i].t == x->t && s->vals[i].rank == x->rank &&
                !memcmp(s->vals[i].dims, x->dims, sizeof(int64_t) * (size_t)x->rank) &&
                s->vals[i].v.id != x->v.id)
                return s->vals[i].v;
    }
    int64_t d[KILN_MAX_RANK];
    int drop = x->rank ? rp_int(s, x->rank + 1) : 0, r = x->rank - drop;
    for (int i = 0; i < r; i++) d[i] = rp_int(s, 3) == 0 ? 1 : x->dims[drop + i];
    if (rp_int(s, 4) == 0) return kiln_scalar(g, x->t, 0.25 + rp_int(s, 8) * 0.5);
    return rp_param(s, g, x->t, r, d);
}

static inline bool rp_is_int(const rp_val *x) {
    return x->t == KILN_DTYPE_I32 || x->t == KILN_DTYPE_I64;
}

static inline kiln_value rp_unary(rp_state *s, kiln_graph *g, const rp_val *x) {
    kiln_value v = x->v;
    if (rp_is_int(x)) { /* integer programs: wrapping arithmetic only */
        switch (rp_int(s, 4)) {
        case 0: return kiln_neg(g, v);
        case 1: return kiln_abs(g, v);
        case 2: return kiln_sign(g, v);
        default:
            return kiln_convert(
                g, kiln_convert(g, v, x->t == KILN_DTYPE_I32 ? KILN_DTYPE_I64 : KILN_DTYPE_I32),
                x->t);
        }
    }
    kiln_value one = kiln_scalar(g, x->t, 1.0);
    switch (rp_int(s, 11)) {
    case 0: return kiln_neg(g, v);
    case 1: return kiln_abs(g, v);
    case 2: return kiln_tanh(g, v);
    case 3: return kiln_logistic(g, v);
    case 4: return kiln_exp(g, kiln_tanh(g, v));
    case 5: return kiln_log(g, kiln_add(g, one, kiln_abs(g, v)));
    case 6: /* + 1: sqrt'(0) is infinite, and x - x is an exact 0 random programs do make */
        return kiln_sqrt(g, kiln_add(g, one, kiln_abs(g, v)));
    case 7: /* shifted off the integers: random programs make values that are integers up to
             * rounding (a softmax's sum), where floor jumps and compiled and reference
             * rounding disagree (KILN_TEST_SEED=10 graph 114: floor(0.99999994) against 1) */
        return kiln_floor(g, kiln_add(g, v, kiln_scalar(g, x->t, 0.31830988618379067)));
    case 8: return kiln_sign(g, v);
    case 9: return kiln_convert(g, kiln_convert(g, v, KILN_DTYPE_F64), x->t);
    default: return kiln_rsqrt(g, kiln_add(g, one, kiln_mul(g, v, v)));
    }
}

static inline kiln_value rp_binary(rp_state *s, kiln_graph *g, const rp_val *x) {
    kiln_value y = rp_partner(s, g, x), a = x->v;
    if (rp_int(s, 2)) {
        kiln_value t = a;
        a = y;
        y = t;
    } /* either side broadcasts */
    switch (rp_int(s, 7)) {
    case 0: return kiln_add(g, a, y);
    case 1: return kiln_sub(g, a, y);
    case 2: return kiln_mul(g, a, y);
    case 3: return kiln_max(g, a, y);
    case 4: return kiln_min(g, a, y);
    case 5: return kiln_div(g, a, kiln_add(g, kiln_scalar(g, x->t, 1.0), kiln_abs(g, y)));
    default:
        return kiln_select(g, kiln_compare(g, a, y, (kiln_cmp)rp_int(s, 6)), a, kiln_neg(g, y));
    }
}

/* The same self-attention written out as a user would (kiln_compile may recognise it:
 * src/passes/attention.c): heads first, q k^T, a scale, for causal a where against -inf,
 * -1e9 or -1 (a fill among the scores), softmax, times v, heads back. x is [.., T, N, H]. */
static inline kiln_value rp_attention_written(rp_state *s, kiln_graph *g, const rp_val *x,
                                              bool causal) {
    int r = x->rank, o = r - 3;
    int heads[4] = {0, 2, 1, 3}, keys[4] = {0, 2, 3, 1}, heads3[3] = {1, 0, 2},
        keys3[3] = {1, 2, 0};
    int64_t T = x->dims[o], H = x->dims[r - 1], tt[2] = {T, T};
    kiln_value q = kiln_transpose(g, x->v, r == 4 ? heads : heads3);
    kiln_value kt = kiln_transpose(g, x->v, r == 4 ? keys : keys3);
    kiln_value sc =
        kiln_mul(g, kiln_matmul(g, q, kt), kiln_scalar(g, x->t, H > 0 ? 1 / sqrt((double)H) : 1));
    if (causal) {
        static const double fills[3] = {-INFINITY, -1e9, -1};
        kiln_value seen = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, tt, 1),
                                       kiln_iota(g, KILN_DTYPE_I32, 2, tt, 0), KILN_CMP_LE);
        sc = kiln_where(g, seen, sc, kiln_scalar(g, x->t, fills[rp_int(s, 3)]));
    }
    kiln_value y = kiln_matmul(g, kiln_softmax(g, sc, -1), q);
    return kiln_transpose(g, y, r == 4 ? heads : heads3);
}

static inline kiln_value rp_reduce(rp_state *s, kiln_graph *g, const rp_val *x) {
    int axes[KILN_MAX_RANK], n = 0;
    for (int i = 0; i < x->rank; i++)
        if (rp_int(s, 2)) axes[n++] = rp_int(s, 2) ? i : i - x->rank;
    bool keep = rp_int(s, 2);
    const int *ax = rp_int(s, 6) == 0 ? NULL : axes;
    switch (rp_int(s, rp_is_int(x) ? 4 : 7)) { /* mean, attention, softmax: float-only */
    case 0: return kiln_reduce_sum(g, x->v, n, ax, keep);
    case 1: return kiln_reduce_max(g, x->v, n, ax, keep);
    case 2: return kiln_reduce_min(g, x->v, n, ax, keep);
    case 3: /* a scan, along any axis, either way */
        return x->rank ? kiln_cumsum(g, x->v, rp_int(s, 2 * x->rank) - x->rank, rp_int(s, 2))
                       : kiln_reduce_sum(g, x->v, n, ax, keep);
    case 4: return kiln_mean(g, x->v, n, ax, keep);
    case 5: { /* self-attention over x as [.., T, N, H], causal or not (S = T must be > 0) */
        int r = x->rank;
        kiln_attention_options o = {.is_causal = rp_int(s, 2)};
        if ((r == 3 || r == 4) && x->dims[r - 3] > 0 && x->dims[r - 2] > 0)
            return rp_int(s, 2) ? kiln_dot_product_attention(g, x->v, x->v, x->v, &o)
                                : rp_attention_written(s, g, x, o.is_causal);
        return r ? kiln_softmax(g, x->v, rp_int(s, r)) : kiln_reduce_sum(g, x->v, n, ax, keep);
    }
    default:
        return x->rank ? kiln_softmax(g, x->v, rp_int(s, x->rank))
                       : kiln_reduce_sum(g, x->v, n, ax, keep);
    }
}

static inline kiln_value rp_shape_op(rp_state *s, kiln_graph *g, const rp_val *x) {
    int r = x->rank;
    int64_t a[KILN_MAX_RANK], b[KILN_MAX_RANK], c[KILN_MAX_RANK];
    switch (rp_int(s, 6)) {
    case 0: { /* transpose by a random permutation */
        int perm[KILN_MAX_RANK];
        for (int i = 0; i < r; i++) perm[i] = i;
        for (int i = r - 1; i > 0; i--) {
            int j = rp_int(s, i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        return kiln_transpose(g, x->v, perm);
    }
    case 1: { /* flatten, or split the last axis */
        int64_t n = 1;
        for (int i = 0; i < r; i++) n *= x->dims[i];
        if (r && x->dims[r - 1] % 2 == 0 && x->dims[r - 1] > 0 && r < KILN_MAX_RANK) {
            memcpy(a, x->dims, sizeof(int64_t) * (size_t)r);
            a[r - 1] = 2, a[r] = x->dims[r - 1] / 2;
            return kiln_reshape(g, x->v, r + 1, a);
        }
        a[0] = n;
        return kiln_reshape(g, x->v, 1, a);
    }
    case 2: /* strided slice */
        for (int i = 0; i < r; i++) {
            a[i] = x->dims[i] ? rp_int(s, (int)x->dims[i]) : 0;
            b[i] = a[i] + (x->dims[i] - a[i] ? rp_int(s, (int)(x->dims[i] - a[i]) + 1) : 0);
            c[i] = 1 + rp_int(s, 2);
        }
        return kiln_slice(g, x->v, a, b, c);
    case 3: /* pad, possibly cropping */
        for (int i = 0; i < r; i++) {
            a[i] = rp_int(s, 3) - (x->dims[i] > 1 ? 1 : 0);
            b[i] = rp_int(s, 3);
            c[i] = rp_int(s, 2);
        }
        return kiln_pad(g, x->v, kiln_scalar(g, x->t, -0.5), a, b, c);
    case 4: /* concatenate with a transformed copy of itself */
        if (!r) return x->v;
        {
            kiln_value other = rp_is_int(x) ? kiln_neg(g, x->v) : kiln_tanh(g, x->v);
            kiln_value parts[3] = {x->v, other, x->v};
            return kiln_concatenate(g, 2 + rp_int(s, 2), parts, rp_int(s, r));
        }
    default: { /* broadcast to a new leading axis */
        if (r >= 4) return x->v;
        a[0] = 1 + rp_int(s, 3);
        memcpy(a + 1, x->dims, sizeof(int64_t) * (size_t)r);
        return kiln_broadcast_to(g, x->v, r + 1, a);
    }
    }
}

static inline kiln_value rp_dot(rp_state *s, kiln_graph *g, const rp_val *x) {
    if (x->rank < 1) return x->v;
    int64_t k = x->dims[x->rank - 1], d[2] = {k, 1 + rp_int(s, 5)};
    kiln_value w = rp_param(s, g, x->t, 2, d);
    if (rp_int(s, 2)) return kiln_matmul(g, x->v, w);
    /* the same product written as dot_general with w transposed: exercises trans_b */
    int perm[2] = {1, 0};
    kiln_value wt = kiln_transpose(g, w, perm);
    kiln_dot_dims dd;
    memset(&dd, 0, sizeof dd);
    dd.n_contract = 1, dd.lhs_contract[0] = x->rank - 1, dd.rhs_contract[0] = 1;
    return kiln_dot_general(g, x->v, wt, &dd);
}

static inline kiln_value rp_gather(rp_state *s, kiln_graph *g, const rp_val *x) {
    if (x->rank < 1 || x->rank > 3 || x->dims[0] == 0) return x->v;
    int64_t n = 1 + rp_int(s, 4);
    /* indices from an iota scaled past the table (clamping is exercised too) */
    kiln_value i = kiln_iota(g, KILN_DTYPE_I32, 1, &n, 0);
    i = kiln_sub(g, kiln_mul(g, i, kiln_scalar(g, KILN_DTYPE_I32, 2)),
                 kiln_scalar(g, KILN_DTYPE_I32, 1));
    return kiln_take_rows(g, x->v, i);
}

/* One sub-program whose first parameter has dtype t: 1-2 parameters, 3-10 ops, 1-2
 * outputs (of dtype t: every op above keeps its operand's dtype). */
static inline void rp_sub_typed(rp_state *s, kiln_graph *g, kiln_dtype t) {
    s->n_vals = 0;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    rp_random_shape(s, &rank, dims);
    rp_push(s, g, rp_param(s, g, t, rank, dims));
    int n_ops = 3 + rp_int(s, 8);
    for (int i = 0; i < n_ops && s->n_vals && kiln_graph_status(g) == KILN_STATUS_OK; i++) {
        rp_val x = *rp_pick(s);
        kiln_value v;
        switch (rp_int(s, 10)) {
        case 0:
        case 1: v = rp_unary(s, g, &x); break;
        case 2:
        case 3:
        case 4: v = rp_binary(s, g, &x); break;
        case 5: v = rp_reduce(s, g, &x); break;
        case 6:
        case 7: v = rp_shape_op(s, g, &x); break;
        case 8: v = rp_dot(s, g, &x); break;
        default: v = rp_gather(s, g, &x); break;
        }
        rp_push(s, g, v);
    }
    int n_out = 1 + rp_int(s, 2);
    for (int i = 0; i < n_out && s->n_vals && s->n_outs < RP_MAX_OUTS; i++)
        s->outs[s->n_outs++] = i == 0 ? s->vals[s->n_vals - 1].v : rp_pick(s)->v;
}

/* One sub-program of a random dtype (f32 more often than the others). */
static inline void rp_sub(rp_state *s, kiln_graph *g) {
    static const kiln_dtype types[6] = {KILN_DTYPE_F32, KILN_DTYPE_F32, KILN_DTYPE_F32,
                                        KILN_DTYPE_F64, KILN_DTYPE_I32, KILN_DTYPE_I64};
    rp_sub_typed(s, g, types[rp_int(s, 6)]);
}

/* A scalar loss of float dtype t over n_subs random float sub-programs, for autodiff:
 * sum over their outputs of sum(w * out), each w a new parameter (in s->params, after the
 * programs' own), so every output element matters. Invalid after a builder error. */
static inline kiln_value rp_loss(rp_state *s, kiln_graph *g, kiln_dtype t, int n_subs) {
    for (int i = 0; i < n_subs; i++) rp_sub_typed(s, g, t);
    kiln_value loss = kiln_scalar(g, t, 0);
    for (int i = 0; i < s->n_outs; i++) {
        rp_val o = rp_typed(g, s->outs[i]);
        kiln_value w = rp_param(s, g, t, o.rank, o.dims);
        loss = kiln_add(g, loss, kiln_reduce_sum(g, kiln_mul(g, w, o.v), 0, NULL, false));
    }
    return loss;
}

/* ------------------------------------------------ programs dense in rewrites ---- */

/* rp_dense_graph: a random program dense in what the graph passes look for: identities
 * with splat constants (1, -0.0, 0, including the ones that must not fire), shape-op
 * chains, convert chains, exact duplicates, dead values and foldable constants, over four
 * fixed parameters (f32[2,3], f64[2,3], i32[2,3], f32[3]) and three outputs. NULL when
 * the graph cannot be finished. */
typedef struct rp_dense {
    kiln_graph *g;
    uint64_t seed;
    kiln_value vals[96];
    int n;
} rp_dense;

static inline int rp_dense_int(rp_dense *r, int n) {
    return test_rng_int(&r->seed, n);
}

static inline kiln_dtype rp_dense_type(const rp_dense *r, kiln_value v, int *rank, int64_t *dims) {
    kiln_dtype t = KILN_DTYPE_INVALID;
    kiln_value_type(r->g, v, &t, rank, dims);
    return t;
}

static inline kiln_value rp_dense_pick(rp_dense *r) {
    return r->vals[rp_dense_int(r, 4) ? r->n - 1 - rp_dense_int(r, r->n < 4 ? r->n : 4)
                                      : rp_dense_int(r, r->n)];
}

static inline kiln_value rp_dense_splat(rp_dense *r, kiln_dtype t) {
    static const double v[] = {1.0, -0.0, 0.0, 1.0, 2.0, -1.0, NAN};
    return kiln_scalar(r->g, t, v[rp_dense_int(r, 7)]);
}

static inline kiln_value rp_dense_binary(rp_dense *r, kiln_value a, kiln_dtype t) {
    int ra, rb;
    int64_t da[KILN_MAX_RANK], db[KILN_MAX_RANK];
    rp_dense_type(r, a, &ra, da);
    kiln_value b = rp_dense_int(r, 3) == 0 ? rp_dense_pick(r) : rp_dense_splat(r, t);
    if (rp_dense_type(r, b, &rb, db) != t || (rb && (rb != ra || memcmp(da, db, sizeof *da * ra))))
        b = rp_dense_splat(r, t);
    bool swap = rp_dense_int(r, 3) == 0;
    kiln_value x = swap ? b : a, y = swap ? a : b;
    switch (rp_dense_int(r, 5)) {
    case 0: return kiln_add(r->g, x, y);
    case 1: return kiln_sub(r->g, x, y);
    case 2: return kiln_mul(r->g, x, y);
    case 3: return kiln_div(r->g, x, y);
    default: return kiln_max(r->g, x, y);
    }
}

static inline kiln_value rp_dense_shape(rp_dense *r, kiln_value a, int rank, const int64_t *dims) {
    int64_t total = 1, flat[1], bd[KILN_MAX_RANK];
    for (int i = 0; i < rank; i++) total *= dims[i];
    flat[0] = total;
    switch (rp_dense_int(r, 4)) {
    case 0: {
        int perm[KILN_MAX_RANK];
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return kiln_transpose(r->g, a, perm);
    }
    case 1: return kiln_reshape(r->g, a, 1, flat);
    case 2: {
        if (rank >= 3) return kiln_reshape(r->g, a, 1, flat);
        int bdims[KILN_MAX_RANK];
        bd[0] = 2;
        for (int i = 0; i < rank; i++) bd[i + 1] = dims[i], bdims[i] = i + 1;
        return kiln_broadcast_in_dim(r->g, a, rank + 1, bd, bdims);
    }
    default: {
        int64_t start[KILN_MAX_RANK] = {0}, limit[KILN_MAX_RANK];
        for (int i = 0; i < rank; i++) limit[i] = dims[i];
        if (rank && rp_dense_int(r, 2) && dims[0] > 1) start[0] = 1;
        return kiln_slice(r->g, a, start, limit, NULL);
    }
    }
}

static inline kiln_value rp_dense_step(rp_dense *r) {
    kiln_value a = rp_dense_pick(r);
    int rank;
    int64_t dims[KILN_MAX_RANK];
    kiln_dtype t = rp_dense_type(r, a, &rank, dims);
    bool fl = t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64,
         num = fl || t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64;
    static const kiln_dtype to[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_I32, KILN_DTYPE_I64,
                                    KILN_DTYPE_BOOL};
    switch (rp_dense_int(r, 9)) {
    case 0: return num ? kiln_neg(r->g, a) : kiln_logical_not(r->g, a);
    case 1: return fl ? kiln_exp(r->g, a) : num ? kiln_abs(r->g, a) : a;
    case 2:
    case 3: return num ? rp_dense_binary(r, a, t) : a;
    case 4: return rp_dense_shape(r, a, rank, dims);
    case 5: return kiln_convert(r->g, a, to[rp_dense_int(r, 5)]);
    case 6: {
        kiln_value p = kiln_compare(r->g, a, a, KILN_CMP_EQ); /* false for NaN */
        return kiln_select(r->g, p, a, rp_dense_int(r, 2) || !num ? a : kiln_neg(r->g, a));
    }
    case 7: {
        double c[6];
        for (int i = 0; i < 6; i++)
            c[i] = rp_dense_int(r, 4) ? (double)rp_dense_int(r, 5) - 2 : NAN;
        kiln_value k = kiln_constant(r->g, KILN_DTYPE_F64, 2, (const int64_t[]){2, 3}, c);
        return kiln_convert(r->g, rp_dense_int(r, 2) ? kiln_exp(r->g, k) : k,
                            fl ? t : KILN_DTYPE_F32);
    }
    default: return num && rank ? kiln_reduce_sum(r->g, a, 1, (const int[]){0}, false) : a;
    }
}

static inline kiln_graph *rp_dense_graph(kiln_context *ctx, uint64_t seed) {
    rp_dense r;
    memset(&r, 0, sizeof r);
    r.seed = seed;
    kiln_graph_create(ctx, "random", &r.g);
    static const int64_t d23[] = {2, 3};
    r.vals[r.n++] = kiln_parameter(r.g, "a", KILN_DTYPE_F32, 2, d23);
    r.vals[r.n++] = kiln_parameter(r.g, "b", KILN_DTYPE_F64, 2, d23);
    r.vals[r.n++] = kiln_parameter(r.g, "c", KILN_DTYPE_I32, 2, d23);
    r.vals[r.n++] = kiln_parameter(r.g, "d", KILN_DTYPE_F32, 1, &d23[1]);
    while (r.n < 40) {
        kiln_value v = rp_dense_step(&r);
        if (!kiln_value_ok(v)) break;
        r.vals[r.n++] = v;
        if (rp_dense_int(&r, 5) == 0) { /* an exact duplicate of some earlier work */
            uint64_t keep = r.seed;
            r.seed = seed + (uint64_t)r.n;
            kiln_value w = rp_dense_step(&r), w2;
            r.seed = seed + (uint64_t)r.n;
            w2 = rp_dense_step(&r);
            r.seed = keep;
            bool b = rp_dense_type(&r, w, NULL, NULL) == KILN_DTYPE_BOOL;
            if (kiln_value_ok(w) && kiln_value_ok(w2))
                r.vals[r.n++] = b ? kiln_logical_or(r.g, w, w2) : kiln_add(r.g, w, w2);
            if (!kiln_value_ok(r.vals[r.n - 1])) break;
        }
    }
    kiln_value outs[3] = {r.vals[r.n - 1], r.vals[r.n - 2], r.vals[r.n / 2]};
    if (kiln_graph_finish(r.g, 3, outs)) {
        kiln_graph_destroy(r.g);
        return NULL;
    }
    return r.g;
}

#endif
