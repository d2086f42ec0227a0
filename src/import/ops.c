/* ops.c — the op mapping: one imp_op (a canonical StableHLO name, its operands, result
 * types and attributes, as either front end read them) onto kiln's public builders.
 *
 * Invariants: every op's result is checked against the type the text declares, so a
 * mapping that disagrees with XLA's semantics fails loudly instead of computing something
 * else; a builder's error becomes an import error at the op's line and column naming the
 * op as the text spells it; ops kiln has no primitive for are composites of builders
 * whose semantics equal the op's (a bool's xor, not, max and min), and ops it cannot
 * express are refused by name (docs/import.md lists both). */
#include "import.h"

#include "base/half.h"

#include <math.h>
#include <string.h>

typedef kiln_value (*unary_fn)(kiln_graph *, kiln_value);
typedef kiln_value (*binary_fn)(kiln_graph *, kiln_value, kiln_value);

static const struct {
    const char *name;
    unary_fn fn;
} unary_ops[] = {
    {"negate", kiln_neg},
    {"abs", kiln_abs},
    {"exponential", kiln_exp},
    {"log", kiln_log},
    {"log_plus_one", kiln_log1p},
    {"sqrt", kiln_sqrt},
    {"rsqrt", kiln_rsqrt},
    {"tanh", kiln_tanh},
    {"logistic", kiln_logistic},
    {"sine", kiln_sin},
    {"cosine", kiln_cos},
    {"floor", kiln_floor},
    {"sign", kiln_sign},
    {"erf", kiln_erf},
    {"square", kiln_square},
    {"ceil", kiln_ceil},
    {"round_nearest_even", kiln_round},
    {"round_nearest_afz", kiln_round_half_away},
    {"exponential_minus_one", kiln_expm1},
    {"is_finite", kiln_is_finite},
    {"tan", kiln_tan},
    {"cbrt", kiln_cbrt},
    /* chlo's (StableHLO as lower().as_text() writes it; HLO spells them out) */
    {"sinh", kiln_sinh},
    {"cosh", kiln_cosh},
    {"asin", kiln_asin},
    {"acos", kiln_acos},
    {"atan", kiln_atan},
    {"asinh", kiln_asinh},
    {"acosh", kiln_acosh},
    {"atanh", kiln_atanh},
    {"erfc", kiln_erfc},
    {"erf_inv", kiln_erf_inv},
    {"lgamma", kiln_lgamma},
    {"digamma", kiln_digamma},
};

static const struct {
    const char *name;
    binary_fn fn;
} binary_ops[] = {
    {"add", kiln_add},     {"subtract", kiln_sub}, {"multiply", kiln_mul}, {"divide", kiln_div},
    {"maximum", kiln_max}, {"minimum", kiln_min},  {"power", kiln_pow},    {"atan2", kiln_atan2},
};

imp_type imp_value_type(kiln_graph *g, kiln_value v) {
    imp_type t = {0};
    kiln_value_type(g, v, &t.dtype, &t.rank, t.dims);
    return t;
}

bool imp_check_graph(imp_lex *L, kiln_graph *g, imp_loc at, const char *opname) {
    kiln_status s = kiln_graph_status(g);
    if (!s) return true;
    return imp_fail_at(L, at, s, "%s: %s", opname, kiln_graph_error(g));
}

static bool same_type(const imp_type *a, const imp_type *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* v must have the type the text gave the op's result i. */
static bool check_result(imp_lex *L, kiln_graph *g, const imp_op *op, int i, kiln_value v) {
    if (!imp_check_graph(L, g, op->at, op->spell)) return false;
    if (i >= op->n_out) return true;
    imp_type t = imp_value_type(g, v);
    if (same_type(&t, &op->out[i])) return true;
    char a[128], b[128];
    imp_type_str(&t, a, sizeof a);
    imp_type_str(&op->out[i], b, sizeof b);
    return imp_fail_at(L, op->at, KILN_STATUS_SHAPE,
                       "%s: kiln's op gives result %d as %s, but the text says %s", op->spell, i, a,
                       b);
}

static bool need_in(imp_lex *L, const imp_op *op, int lo, int hi) {
    if (op->n_in >= lo && op->n_in <= hi) return true;
    if (lo == hi)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "%s takes %d operand%s, not %d",
                           op->spell, lo, lo == 1 ? "" : "s", op->n_in);
    return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                       "%s takes %d to %d operands, not %d", op->spell, lo, hi, op->n_in);
}

static bool need_out(imp_lex *L, const imp_op *op) {
    if (op->n_out >= 1) return true;
    return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "%s: its result type is missing",
                       op->spell);
}

static void to_int(const int64_t *v, int n, int *out) {
    for (int i = 0; i < n; i++) out[i] = (int)v[i];
}

/* ------------------------------------------------------------- constants ---- */

/* x as an integer of `bits` bits, signed or not, into *pattern (its bits mod 2^64); false
 * when it is not an integer of that range. */
static bool integer_pattern(const imp_num *x, int bits, bool uns, uint64_t *pattern) {
    imp_num n = *x;
    if (n.wide) return false;
    if (n.kind == IMP_NUM_FLOAT) { /* 1.0e+00 for an integer type: exact below 2^64 */
        double v = n.value;
        if (!(v == floor(v)) || v >= 0x1p64 || v < -0x1p63) return false;
        n.neg = v < 0;
        n.raw = n.neg ? (uint64_t)(int64_t)v : (uint64_t)v;
    }
    uint64_t top = (uint64_t)1 << (bits - 1); /* 2^(w-1) */
    if (n.neg) {
        if (uns || 0 - n.raw > top) return false;
    } else if (uns ? bits < 64 && n.raw > 2 * top - 1 : n.raw > top - 1) {
        return false;
    }
    *pattern = n.raw;
    return true;
}

/* The text's name of t's element type: ui32 and ui64 for the unsigned ones. */
static const char *element_name(const imp_type *t) {
    if (t->uns) return t->dtype == KILN_DTYPE_I32 ? "ui32" : "ui64";
    return t->dtype == KILN_DTYPE_BOOL ? "i1" : kiln_dtype_name(t->dtype);
}

bool imp_element(imp_lex *L, imp_loc at, const imp_type *t, const imp_num *x, void *dst) {
    if (L->status) return false;
    size_t size = kiln_dtype_itemsize(t->dtype);
    uint64_t bits = x->raw;
    bool ok = true;
    if (x->kind == IMP_NUM_BITS) {
        ok = size == 8 || !(bits >> (size * 8));
    } else if (t->dtype == KILN_DTYPE_I32 || t->dtype == KILN_DTYPE_I64) {
        ok = integer_pattern(x, (int)size * 8, t->uns, &bits);
    } else if (t->dtype == KILN_DTYPE_BOOL) {
        ok = x->value == 0 || x->value == 1;
        bits = x->value == 1;
    } else if (t->dtype == KILN_DTYPE_BF16 || t->dtype == KILN_DTYPE_F16) {
        /* one rounding from the double (kiln_convert_host goes through f32, as XLA's
         * convert op does; a literal is rounded once by MLIR and ml_dtypes) */
        uint16_t h = t->dtype == KILN_DTYPE_BF16 ? kn_f64_to_bf16_once(x->value)
                                                 : kn_f64_to_f16_once(x->value);
        memcpy(dst, &h, sizeof h);
        return true;
    } else {
        if (kiln_convert_host(L->ctx, KILN_DTYPE_F64, &x->value, t->dtype, dst, 1))
            return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT, "constant: %s",
                               kiln_last_error(L->ctx));
        return true;
    }
    if (!ok && x->kind == IMP_NUM_BITS)
        return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT, "constant: 0x%llx does not fit %s",
                           (unsigned long long)bits, element_name(t));
    if (!ok && x->kind == IMP_NUM_INT)
        return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT, "constant: %s%llu does not fit %s",
                           x->neg ? "-" : "", (unsigned long long)(x->neg ? 0 - x->raw : x->raw),
                           element_name(t));
    if (!ok && x->wide)
        return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT,
                           "constant: an integer beyond 64 bits (%.17g) does not fit %s", x->value,
                           element_name(t));
    if (!ok)
        return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT,
                           "constant: %.17g is not a value of %s", x->value, element_name(t));
    unsigned char *out = dst; /* little-endian, as every target kiln builds for */
    for (size_t i = 0; i < size; i++) out[i] = (unsigned char)(bits >> (8 * i));
    return true;
}

bool imp_num_exact(const imp_num *x) {
    if (x->kind != IMP_NUM_INT) return !x->wide;
    if (x->neg) { /* a double in [-2^63, 0) converts back to int64 */
        int64_t v = (int64_t)x->raw;
        return (int64_t)(double)v == v;
    }
    double d = (double)x->raw;
    return d < 0x1p64 && (uint64_t)d == x->raw;
}

kiln_value imp_constant(imp_lex *L, kiln_graph *g, imp_loc at, const imp_type *t, const void *elems,
                        int64_t n) {
    if (L->status) return (kiln_value){0, 0};
    int64_t count = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(count, t->dims[i], &count) || count < 0)
            return imp_fail_at(L, at, KILN_STATUS_SHAPE, "constant: its shape is too large"),
                   (kiln_value){0, 0};
    kiln_value v = {0, 0};
    if (n == 1 && t->rank > 0) { /* a splat: the element broadcast */
        v = kiln_constant(g, t->dtype, 0, NULL, elems);
        if (v.id) v = kiln_broadcast_in_dim(g, v, t->rank, t->dims, NULL);
    } else if (n != count) {
        imp_fail_at(L, at, KILN_STATUS_SHAPE, "constant: %lld values for a tensor of %lld elements",
                    (long long)n, (long long)count);
        return v;
    } else {
        v = kiln_constant(g, t->dtype, t->rank, t->dims, elems);
    }
    if (!L->status) imp_check_graph(L, g, at, "constant");
    return L->status ? (kiln_value){0, 0} : v;
}

/* ------------------------------------------------------------ reductions ---- */

bool imp_is_identity(imp_combine k, kiln_dtype t, double c) {
    bool flt =
        t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
    if (t == KILN_DTYPE_BOOL && (k == IMP_COMBINE_MAX || k == IMP_COMBINE_MIN))
        return c == (k == IMP_COMBINE_MIN); /* false for a maximum, true for a minimum */
    switch (k) {
    case IMP_COMBINE_ADD: return c == 0;
    case IMP_COMBINE_MUL: return c == 1;
    case IMP_COMBINE_MAX:
        return flt ? c == -INFINITY
                   : c == (t == KILN_DTYPE_I32 ? (double)INT32_MIN : (double)INT64_MIN);
    case IMP_COMBINE_MIN:
        return flt ? c == INFINITY
                   : c == (t == KILN_DTYPE_I32 ? (double)INT32_MAX : (double)INT64_MAX);
    case IMP_COMBINE_AND: return c == 1;
    case IMP_COMBINE_OR: return c == 0;
    default: return false;
    }
}

static binary_fn combine_fn(imp_combine k) {
    switch (k) {
    case IMP_COMBINE_ADD: return kiln_add;
    case IMP_COMBINE_MUL: return kiln_mul;
    case IMP_COMBINE_MAX: return kiln_max;
    case IMP_COMBINE_MIN: return kiln_min;
    case IMP_COMBINE_AND: return kiln_logical_and;
    case IMP_COMBINE_OR: return kiln_logical_or;
    default: return NULL;
    }
}

kiln_value imp_reduce(imp_lex *L, kiln_graph *g, imp_op *op, kiln_value x, kiln_value init,
                      bool init_is_identity) {
    int axes[KILN_MAX_RANK] = {0};
    to_int(op->dims, op->n_dims, axes);
    kiln_value r = {0, 0};
    bool is_bool = imp_value_type(g, x).dtype == KILN_DTYPE_BOOL;
    imp_combine combine = op->combine;
    if (is_bool && combine == IMP_COMBINE_MAX) combine = IMP_COMBINE_OR; /* jnp.max of a mask */
    if (is_bool && combine == IMP_COMBINE_MIN) combine = IMP_COMBINE_AND;
    switch (combine) {
    case IMP_COMBINE_ADD: r = kiln_reduce_sum(g, x, op->n_dims, axes, false); break;
    case IMP_COMBINE_MUL: r = kiln_reduce_prod(g, x, op->n_dims, axes, false); break;
    case IMP_COMBINE_MAX: r = kiln_reduce_max(g, x, op->n_dims, axes, false); break;
    case IMP_COMBINE_MIN: r = kiln_reduce_min(g, x, op->n_dims, axes, false); break;
    case IMP_COMBINE_AND:
    case IMP_COMBINE_OR:
        if (!is_bool) break;
        /* all / any: a minimum or maximum over 0 and 1 */
        x = kiln_convert(g, x, KILN_DTYPE_I32);
        r = combine == IMP_COMBINE_AND ? kiln_reduce_min(g, x, op->n_dims, axes, false)
                                       : kiln_reduce_max(g, x, op->n_dims, axes, false);
        r = kiln_convert(g, r, KILN_DTYPE_BOOL);
        break;
    default: break;
    }
    if (!r.id && !L->status && !kiln_graph_status(g)) {
        imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                    "%s: its body is not one kiln reduces with (add, multiply, maximum, "
                    "minimum; and, or over bool)",
                    op->spell);
        return r;
    }
    if (r.id && !init_is_identity) r = combine_fn(combine)(g, r, init);
    return r;
}

imp_combine imp_arg_body(int n, const char *const *ops) {
    /* the compares in order: the values' (GT or LT), NaN's (NE), a tie's (EQ) and the
     * indices' (LT); with two or, one and, two select in some order around them */
    const char *cmp[4];
    int n_cmp = 0, n_or = 0, n_and = 0, n_sel = 0;
    for (int i = 0; i < n; i++) {
        if (!strncmp(ops[i], "compare ", 8)) {
            if (n_cmp == 4) return IMP_COMBINE_NONE;
            cmp[n_cmp++] = ops[i] + 8;
        } else if (!strcmp(ops[i], "or"))
            n_or++;
        else if (!strcmp(ops[i], "and"))
            n_and++;
        else if (!strcmp(ops[i], "select"))
            n_sel++;
        else
            return IMP_COMBINE_NONE;
    }
    bool nan = n_cmp == 4 && n_or == 2 && !strcmp(cmp[1], "NE");
    bool no_nan = n_cmp == 3 && n_or == 1;
    if ((!nan && !no_nan) || n_and != 1 || n_sel != 2 || strcmp(cmp[n_cmp - 2], "EQ") ||
        strcmp(cmp[n_cmp - 1], "LT"))
        return IMP_COMBINE_NONE;
    if (!strcmp(cmp[0], "GT")) return nan ? IMP_COMBINE_ARGMAX : IMP_COMBINE_ARGMAX_INT;
    if (!strcmp(cmp[0], "LT")) return nan ? IMP_COMBINE_ARGMIN : IMP_COMBINE_ARGMIN_INT;
    return IMP_COMBINE_NONE;
}

static bool is_arg_combine(imp_combine k) {
    return k == IMP_COMBINE_ARGMAX || k == IMP_COMBINE_ARGMIN || k == IMP_COMBINE_ARGMAX_INT ||
           k == IMP_COMBINE_ARGMIN_INT;
}

/* x[..., at, ...] along axis, at holding one index per row (axis removed), reshaped to t. */
static kiln_value take_at(kiln_graph *g, kiln_value x, kiln_value at, int axis, const imp_type *t) {
    imp_type a = imp_value_type(g, at), x_t = imp_value_type(g, x);
    int64_t d[KILN_MAX_RANK];
    for (int i = 0, k = 0; i < x_t.rank; i++) d[i] = i == axis ? 1 : a.dims[k++];
    kiln_value v =
        kiln_take_along_axis(g, x, kiln_reshape(g, at, x_t.rank, d), axis, KILN_GATHER_CLIP);
    return kiln_reshape(g, v, t->rank, t->dims);
}

/* reduce(x, indices, init_x, init_i) with jnp.argmax's or argmin's body over one axis:
 * kiln_argmax / argmin (the same ties and NaN), the values and the indices taken at
 * its position. The indices are JAX's iota along the axis; taken, not assumed, so
 * another index operand is read at the position kiln finds. */
static bool emit_arg_reduce(imp_lex *L, kiln_graph *g, imp_op *op, kiln_value *out) {
    bool max = op->combine == IMP_COMBINE_ARGMAX || op->combine == IMP_COMBINE_ARGMAX_INT;
    kiln_dtype t = imp_value_type(g, op->in[0]).dtype;
    bool flt =
        t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
    if (flt && (op->combine == IMP_COMBINE_ARGMAX_INT || op->combine == IMP_COMBINE_ARGMIN_INT))
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s of (%s values, indices): its body is jnp.%s's without the NaN "
                           "test, which kiln's (a NaN wins) would not match",
                           op->spell, kiln_dtype_name(t), max ? "argmax" : "argmin");
    if (op->n_dims != 1 || op->n_out != 2 || !op->in_const[2] || !op->in_const[3] ||
        !imp_is_identity(max ? IMP_COMBINE_MAX : IMP_COMBINE_MIN, t, op->in_value[2]) ||
        op->in_value[3] != 0)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s of (values, indices) with jnp.%s's body: kiln imports it over "
                           "one dimension, from JAX's initial values (%s, 0)",
                           op->spell, max ? "argmax" : "argmin",
                           flt ? (max ? "-inf" : "inf")
                           : t == KILN_DTYPE_BOOL
                               ? (max ? "false" : "true")
                               : (max ? "the dtype's least value" : "the dtype's greatest value"));
    int axis = (int)op->dims[0];
    kiln_value keys = op->in[0]; /* a mask's first true (jnp.argmax) as the first 1 */
    if (t == KILN_DTYPE_BOOL) keys = kiln_convert(g, keys, KILN_DTYPE_I32);
    kiln_value at = max ? kiln_argmax(g, keys, axis) : kiln_argmin(g, keys, axis);
    if (!imp_check_graph(L, g, op->at, op->spell)) return false;
    out[0] = take_at(g, op->in[0], at, axis, &op->out[0]);
    out[1] = take_at(g, op->in[1], at, axis, &op->out[1]);
    if (!imp_check_graph(L, g, op->at, op->spell)) return false;
    return check_result(L, g, op, 0, out[0]) && check_result(L, g, op, 1, out[1]);
}

/* ------------------------------------------------------- gather, scatter ---- */

/* kiln takes the index vector as the last axis of the indices (jax.lax's convention);
 * XLA's index_vector_dim may name another axis, or rank (an implicit trailing 1). */
static kiln_value index_vector_last(imp_lex *L, kiln_graph *g, const imp_op *op, kiln_value idx) {
    imp_type t = imp_value_type(g, idx);
    int64_t d = op->has_index_vector_dim ? op->index_vector_dim : t.rank;
    if (d < 0 || d > t.rank) {
        imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                    "%s: index_vector_dim = %lld is outside [0, %d]", op->spell, (long long)d,
                    t.rank);
        return (kiln_value){0, 0};
    }
    if (d == t.rank) {
        if (t.rank == KILN_MAX_RANK) {
            imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "%s: indices of rank %d", op->spell,
                        t.rank);
            return (kiln_value){0, 0};
        }
        t.dims[t.rank++] = 1;
        return kiln_reshape(g, idx, t.rank, t.dims);
    }
    if (d == t.rank - 1) return idx;
    int perm[KILN_MAX_RANK], k = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != d) perm[k++] = i;
    perm[k] = (int)d;
    return kiln_transpose(g, idx, perm);
}

static kiln_value emit_gather(imp_lex *L, kiln_graph *g, imp_op *op) {
    if (!need_in(L, op, 2, 2)) return (kiln_value){0, 0};
    kiln_value idx = index_vector_last(L, g, op, op->in[1]);
    if (!idx.id) return idx;
    imp_type ot = imp_value_type(g, op->in[0]);
    if (op->n_sizes != ot.rank) {
        imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                    "%s: slice_sizes has %d entries for an operand of rank %d", op->spell,
                    op->n_sizes, ot.rank);
        return (kiln_value){0, 0};
    }
    /* XLA clamps each window into the operand: kiln's CLIP mode */
    return kiln_gather(g, op->in[0], idx, &op->gather, op->sizes, KILN_GATHER_CLIP, NULL);
}

static kiln_value emit_scatter(imp_lex *L, kiln_graph *g, imp_op *op) {
    if (!need_in(L, op, 3, 3)) return (kiln_value){0, 0};
    static const kiln_scatter_kind kinds[] = {
        [IMP_COMBINE_ADD] = KILN_SCATTER_ADD, [IMP_COMBINE_MUL] = KILN_SCATTER_MUL,
        [IMP_COMBINE_MAX] = KILN_SCATTER_MAX, [IMP_COMBINE_MIN] = KILN_SCATTER_MIN,
        [IMP_COMBINE_SET] = KILN_SCATTER_SET,
    };
    if (op->combine != IMP_COMBINE_ADD && op->combine != IMP_COMBINE_MUL &&
        op->combine != IMP_COMBINE_MAX && op->combine != IMP_COMBINE_MIN &&
        op->combine != IMP_COMBINE_SET) {
        imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                    "%s: its body is not one kiln scatters with (add, multiply, maximum, "
                    "minimum, or returning the update)",
                    op->spell);
        return (kiln_value){0, 0};
    }
    kiln_value idx = index_vector_last(L, g, op, op->in[1]);
    if (!idx.id) return idx;
    /* XLA skips a window that does not fit in the operand: kiln's FILL (drop) mode */
    return kiln_scatter(g, kinds[op->combine], op->in[0], idx, op->in[2], &op->scatter,
                        KILN_GATHER_FILL);
}

/* ------------------------------------------------------------ composites ---- */

static kiln_value unary_composite(kiln_graph *g, const char *name, kiln_value x) {
    kiln_dtype t = imp_value_type(g, x).dtype;
    if (!strcmp(name, "not") && t == KILN_DTYPE_BOOL) return kiln_logical_not(g, x);
    return (kiln_value){0, 0};
}

static kiln_value binary_bool(kiln_graph *g, const char *name, kiln_value a, kiln_value b) {
    if (imp_value_type(g, a).dtype != KILN_DTYPE_BOOL) return (kiln_value){0, 0};
    if (!strcmp(name, "and") || !strcmp(name, "minimum")) return kiln_logical_and(g, a, b);
    if (!strcmp(name, "or") || !strcmp(name, "maximum")) return kiln_logical_or(g, a, b);
    if (!strcmp(name, "xor")) return kiln_compare(g, a, b, KILN_CMP_NE);
    return (kiln_value){0, 0};
}

/* ----------------------------------------------------------------- shape ---- */

/* HLO's dynamic_slice starts clamp and never wrap; kiln's builders first wrap a negative
 * start as jax.lax does (which JAX's export has already spelled out before the op). So a
 * negative start goes in as 0, where HLO's clamp puts it. A start that is not a rank-0
 * i32/i64 goes through as it is, for the builder to name. Returns out (NULL for n <= 0 or
 * more starts than any rank: the builder names that too). */
static const kiln_value *hlo_starts(kiln_graph *g, int n, const kiln_value *in, kiln_value *out) {
    if (n <= 0 || n > KILN_MAX_RANK) return n ? in : NULL;
    for (int i = 0; i < n; i++) {
        kiln_dtype t;
        int rank = -1;
        out[i] = in[i];
        if (!kiln_value_type(g, in[i], &t, &rank, NULL) || rank ||
            (t != KILN_DTYPE_I32 && t != KILN_DTYPE_I64))
            continue;
        out[i] = kiln_max(g, in[i], kiln_scalar(g, t, 0));
    }
    return out;
}

static kiln_value emit_shape(imp_lex *L, kiln_graph *g, imp_op *op, bool *known) {
    const char *n = op->name;
    kiln_value x = op->in[0];
    const imp_type *o = &op->out[0];
    int ax[KILN_MAX_RANK] = {0};
    *known = true;
    /* the builders read one entry per axis of x: the text must give them all */
    int rank = op->n_in ? imp_value_type(g, x).rank : 0;
    if ((!strcmp(n, "broadcast_in_dim") || !strcmp(n, "transpose")) && op->n_dims != rank) {
        imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                    "%s: %d dimensions for an operand of rank %d", op->spell, op->n_dims, rank);
        return (kiln_value){0, 0};
    }
    if (!strcmp(n, "broadcast_in_dim")) {
        /* StableHLO lets the operand's axes land in any order (kiln's builder, as
         * jax.lax's, wants them increasing): the operand transposed into their order */
        int perm[KILN_MAX_RANK], sorted = 1;
        to_int(op->dims, op->n_dims, ax);
        for (int i = 0; i < rank; i++) perm[i] = i;
        for (int i = 1; i < rank; i++) /* insertion sort of the axes by where they land */
            for (int j = i; j > 0 && ax[perm[j - 1]] > ax[perm[j]]; j--) {
                int s = perm[j];
                perm[j] = perm[j - 1], perm[j - 1] = s, sorted = 0;
            }
        if (!sorted) {
            int dims[KILN_MAX_RANK];
            for (int i = 0; i < rank; i++) dims[i] = ax[perm[i]];
            memcpy(ax, dims, sizeof dims);
            x = kiln_transpose(g, x, perm);
        }
        return kiln_broadcast_in_dim(g, x, o->rank, o->dims, ax);
    }
    if (!strcmp(n, "reshape")) return kiln_reshape(g, x, o->rank, o->dims);
    if (!strcmp(n, "transpose")) {
        to_int(op->dims, op->n_dims, ax);
        return kiln_transpose(g, x, ax);
    }
    if (!strcmp(n, "reverse")) {
        to_int(op->dims, op->n_dims, ax);
        return kiln_rev(g, x, op->n_dims, ax);
    }
    if (!strcmp(n, "slice")) return kiln_slice(g, x, op->a, op->b, op->n_c ? op->c : NULL);
    if (!strcmp(n, "pad")) return kiln_pad(g, x, op->in[1], op->a, op->b, op->n_c ? op->c : NULL);
    if (!strcmp(n, "concatenate")) return kiln_concatenate(g, op->n_in, op->in, (int)op->dims[0]);
    if (!strcmp(n, "iota")) return kiln_iota(g, o->dtype, o->rank, o->dims, (int)op->dims[0]);
    kiln_value st[KILN_MAX_RANK];
    if (!strcmp(n, "dynamic_slice"))
        return kiln_dynamic_slice(g, x, op->n_in - 1, hlo_starts(g, op->n_in - 1, op->in + 1, st),
                                  op->sizes);
    if (!strcmp(n, "dynamic_update_slice"))
        return kiln_dynamic_update_slice(g, x, op->in[1], op->n_in - 2,
                                         hlo_starts(g, op->n_in - 2, op->in + 2, st));
    *known = false;
    return (kiln_value){0, 0};
}

/* How many operands each shape op takes: {name, lo, hi, dims needed}. */
static bool shape_operands(imp_lex *L, const imp_op *op) {
    const char *n = op->name;
    if (!strcmp(n, "iota")) return need_in(L, op, 0, 0);
    if (!strcmp(n, "pad")) return need_in(L, op, 2, 2);
    if (!strcmp(n, "concatenate")) {
        if (!need_in(L, op, 1, IMP_MAX_OPERANDS)) return false;
    } else if (!strcmp(n, "dynamic_slice") || !strcmp(n, "dynamic_update_slice")) {
        return need_in(L, op, 1, IMP_MAX_OPERANDS);
    } else if (!need_in(L, op, 1, 1)) {
        return false;
    }
    if ((!strcmp(n, "concatenate") || !strcmp(n, "iota")) && op->n_dims != 1)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "%s: its dimension is missing",
                           op->spell);
    return true;
}

static kiln_value emit_dot(imp_lex *L, kiln_graph *g, imp_op *op) {
    if (!need_in(L, op, 2, 2)) return (kiln_value){0, 0};
    kiln_value a = op->in[0], b = op->in[1];
    kiln_dtype want = op->out[0].dtype; /* preferred_element_type: accumulate in it */
    if (imp_value_type(g, a).dtype != want) a = kiln_convert(g, a, want);
    if (imp_value_type(g, b).dtype != want) b = kiln_convert(g, b, want);
    return kiln_dot_general(g, a, b, &op->dot);
}

/* The axis of a reduce_window that is a cumulative sum, as JAX writes jnp.cumsum and
 * lax.cumsum on the CPU: an add over a window of the whole axis (size n) with stride 1 and
 * n - 1 padding before (after: reverse), every other axis a window of 1 unpadded, no
 * dilation. The axis, plus 0x100 when reversed; -1 when it is not one. */
static int cumsum_axis(const imp_op *op, const imp_type *t, const kiln_window_options *o) {
    if (op->combine != IMP_COMBINE_ADD) return -1;
    int axis = -1;
    for (int i = 0; i < t->rank; i++) {
        int64_t n = t->dims[i], w = o->window_dimensions[i];
        if (o->window_strides[i] != 1 || o->base_dilation[i] != 1 || o->window_dilation[i] != 1)
            return -1;
        if (w == 1 && !o->pad_lo[i] && !o->pad_hi[i]) continue;
        if (axis >= 0 || n < 2 || w != n) return -1;
        if (o->pad_lo[i] == n - 1 && !o->pad_hi[i])
            axis = i;
        else if (!o->pad_lo[i] && o->pad_hi[i] == n - 1)
            axis = i | 0x100;
        else
            return -1;
    }
    return axis;
}

static kiln_value emit_reduce_window(imp_lex *L, kiln_graph *g, imp_op *op) {
    if (!need_in(L, op, 2, 2)) return (kiln_value){0, 0};
    kiln_window_kind k = op->combine == IMP_COMBINE_ADD   ? KILN_WINDOW_SUM
                         : op->combine == IMP_COMBINE_MAX ? KILN_WINDOW_MAX
                                                          : KILN_WINDOW_MIN;
    imp_type t = imp_value_type(g, op->in[0]);
    bool padded = false;
    kiln_window_options o = {.padding = KILN_PADDING_EXPLICIT};
    for (int i = 0; i < t.rank; i++) {
        o.window_dimensions[i] = i < op->n_a ? op->a[i] : 1;
        o.window_strides[i] = i < op->n_b ? op->b[i] : 1;
        o.pad_lo[i] = op->pad_lo[i], o.pad_hi[i] = op->pad_hi[i];
        o.base_dilation[i] = i < op->n_c ? op->c[i] : 1;
        o.window_dilation[i] = i < op->n_sizes ? op->sizes[i] : 1;
        padded |= op->pad_lo[i] || op->pad_hi[i];
    }
    bool ident = op->in_const[1] && imp_is_identity(op->combine, t.dtype, op->in_value[1]);
    if ((op->combine != IMP_COMBINE_ADD && op->combine != IMP_COMBINE_MAX &&
         op->combine != IMP_COMBINE_MIN) ||
        (!ident && padded)) {
        imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                    "%s: kiln reduces windows by add, maximum or minimum, with a padded "
                    "window's initial value the reduction's identity",
                    op->spell);
        return (kiln_value){0, 0};
    }
    int axis = cumsum_axis(op, &t, &o);
    if (ident && axis >= 0) /* jnp.cumsum: kiln's scan, O(n) and no padded copy */
        return kiln_cumsum(g, op->in[0], axis & 0xff, axis > 0xff);
    kiln_value r = kiln_reduce_window(g, op->in[0], k, &o);
    return ident ? r : combine_fn(op->combine)(g, r, op->in[1]);
}

/* ------------------------------------------------------ sorts, top_k ---- */

/* sort(operands...) along dims[0] with a comparator JAX writes (imp_sort_body): kiln_sort
 * with the keys and the direction the comparator orders by. XLA's unstable sort may order
 * equal keys any way; kiln's stable order is one of them. */
static bool emit_sort(imp_lex *L, kiln_graph *g, imp_op *op, kiln_value *out) {
    if (!need_in(L, op, 1, IMP_MAX_OPERANDS)) return false;
    kiln_dtype types[IMP_MAX_OPERANDS];
    for (int i = 0; i < op->n_in; i++) types[i] = imp_value_type(g, op->in[i]).dtype;
    int num_keys = 0;
    bool desc = false;
    if (!imp_sort_body(op->body, op->n_in, types, &num_keys, &desc))
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s: its comparator is not one jax.lax.sort writes (each key "
                           "compared LT, or each GT, lexicographically from the first operand; "
                           "floats by TOTALORDER with -0.0 and NaN made canonical), so kiln's "
                           "sort would not order as it does",
                           op->spell);
    if (op->n_dims != 1 || op->n_out != op->n_in)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "%s: one dimension and one result per operand are needed", op->spell);
    kiln_sort(g, op->n_in, op->in, (int)op->dims[0], num_keys, desc, out);
    for (int i = 0; i < op->n_in; i++)
        if (!check_result(L, g, op, i, out[i])) return false;
    return true;
}

/* chlo.top_k / HLO topk (largest) of k along the last axis: kiln_top_k, XLA's order. */
static bool emit_top_k(imp_lex *L, kiln_graph *g, imp_op *op, kiln_value *out) {
    if (!need_in(L, op, 1, 1)) return false;
    if (op->k_smallest)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s with largest=false: kiln's top_k takes the largest", op->spell);
    if (op->n_out != 2 || op->k < 0 || op->k > INT32_MAX)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "%s: k = %lld and %d results (values and indices are needed)", op->spell,
                           (long long)op->k, op->n_out);
    kiln_top_k(g, op->in[0], (int)op->k, &out[0], &out[1]);
    return check_result(L, g, op, 0, out[0]) && check_result(L, g, op, 1, out[1]);
}

/* ------------------------------------------------------ convolutions ---- */

/* convolution(lhs, rhs): strides (b), padding (pad_lo, pad_hi), lhs_dilation (c) and
 * rhs_dilation (sizes) per spatial axis in the order of the specs' spatial axes. */

bool imp_conv_labels(imp_lex *L, imp_op *op, int which, const char *lab, int n) {
    int *spec = which == 0 ? op->conv.lhs_spec : which == 1 ? op->conv.rhs_spec : op->conv.out_spec;
    const char *first = which == 1 ? "oi" : "bf";
    if (n < 3 || n > KILN_CONV_MAX_SPATIAL + 2)
        return imp_fail(L,
                        "convolution dimension numbers of %d axes: kiln convolves 1 to %d "
                        "spatial axes",
                        n, KILN_CONV_MAX_SPATIAL);
    bool seen[KILN_CONV_MAX_SPATIAL + 2] = {0};
    for (int i = 0; i < n; i++) {
        int c = lab[i], slot = c == first[0]                 ? 0
                               : c == first[1]               ? 1
                               : c >= '0' && c < '0' + n - 2 ? 2 + c - '0'
                                                             : -1;
        if (slot < 0 || seen[slot])
            return imp_fail(L, "convolution dimension label '%c' of operand %d", c, which);
        seen[slot] = true;
        spec[slot] = i;
    }
    if (which == 2) op->has_conv_specs = true;
    return true;
}

static kiln_value emit_conv(imp_lex *L, kiln_graph *g, imp_op *op) {
    if (!need_in(L, op, 2, 2) || !need_out(L, op)) return (kiln_value){0, 0};
    if (!op->has_conv_specs || op->conv_reversed) {
        imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                    op->conv_reversed ? "%s with a reversed window: kiln has no window reversal"
                                      : "%s: its dimension numbers are missing",
                    op->spell);
        return (kiln_value){0, 0};
    }
    kiln_value a = op->in[0], b = op->in[1];
    kiln_dtype want = op->out[0].dtype; /* preferred_element_type, as dot_general's */
    if (imp_value_type(g, a).dtype != want) a = kiln_convert(g, a, want);
    if (imp_value_type(g, b).dtype != want) b = kiln_convert(g, b, want);
    op->conv.layout = KILN_CONV_SPECS;
    op->conv.padding = KILN_PADDING_EXPLICIT;
    int ns = imp_value_type(g, a).rank - 2;
    for (int i = 0; i < ns && i < KILN_CONV_MAX_SPATIAL; i++) {
        op->conv.window_strides[i] = i < op->n_b ? op->b[i] : 1;
        op->conv.lhs_dilation[i] = i < op->n_c ? op->c[i] : 1;
        op->conv.rhs_dilation[i] = i < op->n_sizes ? op->sizes[i] : 1;
        op->conv.pad_lo[i] = op->pad_lo[i], op->conv.pad_hi[i] = op->pad_hi[i];
    }
    return kiln_conv_general_dilated(g, a, b, &op->conv);
}

/* select_and_scatter(x, source, init) with select GE and scatter add: the max pool's
 * gradient, JAX's VJP of reduce_window max. kiln's reduce_window max hands each window's
 * cotangent to its first maximum in row-major window order, the element a GE select keeps,
 * so the op is kiln_vjp of kiln_reduce_window(x, MAX) at x with source as its cotangent
 * (the pool is built again, and differentiated by kiln's own rules). */
static kiln_value emit_select_and_scatter(imp_lex *L, kiln_graph *g, imp_op *op) {
    kiln_value none = {0, 0};
    if (!need_in(L, op, 3, 3)) return none;
    if (!imp_select_body_ge(op->body) || op->combine != IMP_COMBINE_ADD) {
        imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                    "%s: kiln reads the max pool's gradient only (select compare GE of its "
                    "parameters, scatter add): another select would keep another element",
                    op->spell);
        return none;
    }
    imp_type t = imp_value_type(g, op->in[0]);
    kiln_window_options o = {.padding = KILN_PADDING_EXPLICIT};
    for (int i = 0; i < t.rank; i++) {
        o.window_dimensions[i] = i < op->n_a ? op->a[i] : 1;
        o.window_strides[i] = i < op->n_b ? op->b[i] : 1;
        o.pad_lo[i] = op->pad_lo[i], o.pad_hi[i] = op->pad_hi[i];
    }
    kiln_value y = kiln_reduce_window(g, op->in[0], KILN_WINDOW_MAX, &o), grad = none;
    if (!imp_check_graph(L, g, op->at, op->spell)) return none;
    imp_type yt = imp_value_type(g, y), st = imp_value_type(g, op->in[1]);
    if (!same_type(&yt, &st)) {
        char a[128], b[128];
        imp_type_str(&st, a, sizeof a);
        imp_type_str(&yt, b, sizeof b);
        imp_fail_at(L, op->at, KILN_STATUS_SHAPE, "%s: source is %s, but its windows give %s",
                    op->spell, a, b);
        return none;
    }
    kiln_vjp(g, 1, &y, &op->in[1], 1, &op->in[0], &grad);
    if (!grad.id) return grad;
    bool zero = op->in_const[2] && op->in_value[2] == 0;
    return zero ? grad : kiln_add(g, grad, op->in[2]);
}

/* ------------------------------------------------------ linear algebra ---- */

/* Operand i of a linear algebra op: f32 or f64 (want, where the op names one: LAPACK's s
 * and d), of rank 2 or more; kiln's builders check the rest (square, b's shape). */
static bool linalg_operand(imp_lex *L, kiln_graph *g, const imp_op *op, int i, kiln_dtype want) {
    imp_type t = imp_value_type(g, op->in[i]);
    if (t.dtype != KILN_DTYPE_F32 && t.dtype != KILN_DTYPE_F64)
        return imp_fail_at(L, op->at, KILN_STATUS_DTYPE,
                           "%s of %s: kiln's linear algebra is f32 and f64 (LAPACK's types)",
                           op->spell, element_name(&t));
    if (want && t.dtype != want)
        return imp_fail_at(L, op->at, KILN_STATUS_DTYPE, "%s takes %s, not %s", op->spell,
                           kiln_dtype_name(want), kiln_dtype_name(t.dtype));
    if (t.rank < 2) {
        char ty[128];
        imp_type_str(&t, ty, sizeof ty);
        return imp_fail_at(L, op->at, KILN_STATUS_SHAPE,
                           "%s: operand %d is %s, not matrices [..., m, n]", op->spell, i, ty);
    }
    return true;
}

/* x with its last two axes swapped (rank >= 2). */
static kiln_value swap_last(kiln_graph *g, kiln_value x) {
    if (!x.id) return x;
    imp_type t = imp_value_type(g, x);
    int perm[KILN_MAX_RANK];
    for (int i = 0; i < t.rank; i++) perm[i] = i;
    perm[t.rank - 2] = t.rank - 1, perm[t.rank - 1] = t.rank - 2;
    return kiln_transpose(g, x, perm);
}

/* The Cholesky factor of a read from one triangle (kiln's CHOLESKY, not symmetrised): the
 * lower L, a = L L^T, from a's lower triangle, or the upper U, a = U^T U, from its upper
 * one, which is the lower factor of a^T transposed. The other triangle is zeros. */
static kiln_value factor(kiln_graph *g, kiln_value a, bool lower) {
    if (lower) return kiln_cholesky_from_lower(g, a);
    return swap_last(g, kiln_cholesky_from_lower(g, swap_last(g, a)));
}

/* stablehlo.cholesky, HLO cholesky: `lower` as given, false when absent (StableHLO's and
 * HLO's default). The triangle the factor is not in is zeros (the spec leaves it to the
 * implementation). */
static kiln_value emit_cholesky(imp_lex *L, kiln_graph *g, imp_op *op) {
    if (!need_in(L, op, 1, 1) || !linalg_operand(L, g, op, 0, KILN_DTYPE_INVALID))
        return (kiln_value){0, 0};
    return factor(g, op->in[0], op->lower);
}

/* stablehlo.triangular_solve, HLO triangular-solve: kiln_triangular_solve's options are
 * the op's attributes, ADJOINT of a real matrix its TRANSPOSE. */
static kiln_value emit_triangular_solve(imp_lex *L, kiln_graph *g, imp_op *op) {
    if (!need_in(L, op, 2, 2) || !linalg_operand(L, g, op, 0, KILN_DTYPE_INVALID) ||
        !linalg_operand(L, g, op, 1, KILN_DTYPE_INVALID))
        return (kiln_value){0, 0};
    kiln_triangular_solve_options o = {.left_side = op->left_side,
                                       .lower = op->lower,
                                       .transpose_a = op->transpose_a != 0,
                                       .unit_diagonal = op->unit_diagonal};
    return kiln_triangular_solve(g, op->in[0], op->in[1], &o);
}

typedef enum linalg_kind { LA_NONE, LA_POTRF, LA_TRSM, LA_GPU_POTRF } linalg_kind;

/* The kind of a custom call's target, and LAPACK's type letter (s, d, c, z) in *letter. */
static linalg_kind linalg_target(const char *target, char *letter) {
    *letter = 0;
    if (!strcmp(target, "cusolver_potrf_ffi") || !strcmp(target, "hipsolver_potrf_ffi"))
        return LA_GPU_POTRF;
    if (strncmp(target, "lapack_", 7) || !target[7] || !strchr("sdcz", target[7])) return LA_NONE;
    *letter = target[7];
    return !strcmp(target + 8, "potrf_ffi")  ? LA_POTRF
           : !strcmp(target + 8, "trsm_ffi") ? LA_TRSM
                                             : LA_NONE;
}

bool imp_linalg_target(const char *target) {
    char letter;
    return linalg_target(target, &letter) != LA_NONE;
}

/* backend_config's flag `key` must be one of the characters in `allowed` (each LAPACK's
 * spelling, as JAX writes it: 76 for 'L'). */
static bool lapack_flag(imp_lex *L, const imp_op *op, const char *key, int v, const char *allowed) {
    if (v > 0 && v < 128 && strchr(allowed, v)) return true;
    char want[64];
    size_t n = 0;
    for (const char *c = allowed; *c && n + 16 < sizeof want; c++)
        n += (size_t)snprintf(want + n, sizeof want - n, "%s%d ('%c')",
                              c == allowed ? ""
                              : c[1]       ? ", "
                                           : " or ",
                              *c, *c);
    if (!v)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "%s: its backend_config has no %s (%s)", op->spell, key, want);
    return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "%s: backend_config %s = %d, not %s",
                       op->spell, key, v, want);
}

/* LAPACK's ?trsm as JAX calls it (operands a and b, the solution x): side 'L' solves
 * op(a) x = b, 'R' x op(a) = b; uplo the triangle read; trans_x 'T' (or 'C', for a real
 * matrix the same) transposes a; diag 'U' takes its diagonal as ones. LAPACK reads its
 * operands column-major (operand_layouts), so its indices are the logical ones. */
static bool emit_trsm(imp_lex *L, kiln_graph *g, imp_op *op, kiln_dtype want, kiln_value *out) {
    if (!need_in(L, op, 2, 2) || !linalg_operand(L, g, op, 0, want) ||
        !linalg_operand(L, g, op, 1, want))
        return false;
    if (op->n_out != 1)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "%s: one result (the solution) is needed, not %d", op->spell, op->n_out);
    if (!lapack_flag(L, op, "side", op->side, "LR") ||
        !lapack_flag(L, op, "uplo", op->uplo, "LU") ||
        !lapack_flag(L, op, "trans_x", op->trans_x, "NTC") ||
        !lapack_flag(L, op, "diag", op->diag, "NU"))
        return false;
    kiln_triangular_solve_options o = {.left_side = op->side == 'L',
                                       .lower = op->uplo == 'L',
                                       .transpose_a = op->trans_x != 'N',
                                       .unit_diagonal = op->diag == 'U'};
    out[0] = kiln_triangular_solve(g, op->in[0], op->in[1], &o);
    return check_result(L, g, op, 0, out[0]);
}

/* LAPACK's ?potrf (and the GPU solvers' potrf) as JAX calls them: the factor and an i32
 * info per matrix. uplo 'L' factors a's lower triangle into L, 'U' its upper one into U
 * (a = U^T U); the other triangle is left as a has it, as LAPACK leaves it (JAX masks it
 * off). info is 0 where the factor succeeded; where a is not positive definite kiln's
 * CHOLESKY is NaN on and below the diagonal and info is 1 (LAPACK's is the order of the
 * first minor that is not positive definite; JAX compares it with 0). */
static bool emit_potrf(imp_lex *L, kiln_graph *g, imp_op *op, linalg_kind kind, kiln_dtype want,
                       kiln_value *out) {
    if (!need_in(L, op, 1, 1) || !linalg_operand(L, g, op, 0, want)) return false;
    if (op->n_out != 2)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "%s: two results (the factor and LAPACK's info) are needed, not %d",
                           op->spell, op->n_out);
    bool lower = op->lower;
    if (kind == LA_GPU_POTRF && !op->has_lower)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "%s: its backend_config has no lower", op->spell);
    if (kind == LA_POTRF) {
        if (!lapack_flag(L, op, "uplo", op->uplo, "LU")) return false;
        lower = op->uplo == 'L';
    }
    kiln_value a = op->in[0], f = factor(g, a, lower);
    if (!imp_check_graph(L, g, op->at, op->spell)) return false;
    imp_type t = imp_value_type(g, a);
    int r = t.rank, axes[2] = {r - 2, r - 1};
    kiln_value row = kiln_iota(g, KILN_DTYPE_I32, r, t.dims, r - 2);
    kiln_value col = kiln_iota(g, KILN_DTYPE_I32, r, t.dims, r - 1);
    f = kiln_select(g, kiln_compare(g, row, col, lower ? KILN_CMP_GE : KILN_CMP_LE), f, a);
    kiln_value nan_diag = kiln_logical_and(g, kiln_compare(g, row, col, KILN_CMP_EQ),
                                           kiln_compare(g, f, f, KILN_CMP_NE));
    kiln_value count =
        kiln_reduce_sum(g, kiln_convert(g, nan_diag, KILN_DTYPE_I32), 2, axes, false);
    out[0] = f;
    out[1] = kiln_min(g, count, kiln_scalar(g, KILN_DTYPE_I32, 1));
    return check_result(L, g, op, 0, out[0]) && check_result(L, g, op, 1, out[1]);
}

bool imp_linalg_call(imp_lex *L, kiln_graph *g, imp_op *op, const char *target, kiln_value *out) {
    if (L->status) return false;
    char letter;
    linalg_kind kind = linalg_target(target, &letter);
    if (letter == 'c' || letter == 'z')
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s: complex matrices; kiln's linear algebra is f32 and f64", op->spell);
    kiln_dtype want = letter == 's'   ? KILN_DTYPE_F32
                      : letter == 'd' ? KILN_DTYPE_F64
                                      : KILN_DTYPE_INVALID;
    if (kind == LA_TRSM) return emit_trsm(L, g, op, want, out);
    if (kind == LA_POTRF || kind == LA_GPU_POTRF) return emit_potrf(L, g, op, kind, want, out);
    return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                       "%s: kiln has no op for this custom call (docs/import.md)", op->spell);
}

bool imp_transpose_word(imp_lex *L, imp_op *op) {
    char w[IMP_MAX_NAME];
    if (!imp_ident(L, w, NULL, "a transpose")) return false;
    op->transpose_a = !strcmp(w, "NO_TRANSPOSE") ? 0
                      : !strcmp(w, "TRANSPOSE")  ? 1
                      : !strcmp(w, "ADJOINT")    ? 2
                                                 : -1;
    if (op->transpose_a < 0)
        return imp_fail(L, "transpose_a %s, not NO_TRANSPOSE, TRANSPOSE or ADJOINT", w);
    return true;
}

bool imp_backend_config(imp_lex *L, imp_op *op) {
    imp_skip(L);
    imp_mark m = imp_mark_here(L);
    if (!imp_expect(L, '{')) return false;
    if (imp_accept(L, '}')) return true;
    imp_skip(L);
    if (imp_peek(L) == '"') { /* JSON, another backend's (XLA GPU's): not linear algebra's */
        imp_go(L, m);
        return imp_skip_group(L);
    }
    do {
        char key[IMP_MAX_NAME];
        if (!imp_ident(L, key, ".", "a backend_config key") || !imp_expect(L, '=')) return false;
        int *flag = !strcmp(key, "uplo")      ? &op->uplo
                    : !strcmp(key, "side")    ? &op->side
                    : !strcmp(key, "trans_x") ? &op->trans_x
                    : !strcmp(key, "diag")    ? &op->diag
                                              : NULL;
        if (flag) { /* 76 : ui8 */
            int64_t v;
            char ty[IMP_MAX_NAME];
            if (!imp_int(L, &v, key)) return false;
            *flag = v >= 1 && v <= 255 ? (int)v : -1;
            if (imp_accept(L, ':') && !imp_ident(L, ty, NULL, "an integer type")) return false;
        } else if (!strcmp(key, "lower")) {
            char w[IMP_MAX_NAME];
            if (!imp_ident(L, w, NULL, "true or false")) return false;
            if (strcmp(w, "true") && strcmp(w, "false"))
                return imp_fail(L, "backend_config lower = %s, not true or false", w);
            op->lower = !strcmp(w, "true"), op->has_lower = true;
        } else if (!imp_skip_value(L, false)) {
            return false;
        }
    } while (imp_accept(L, ','));
    return imp_expect(L, '}');
}

/* ------------------------------------------------------------------ bits ---- */

static const struct {
    const char *name;
    binary_fn fn;
} bit_binary_ops[] = {
    {"shift_left", kiln_shift_left},
    {"shift_right_logical", kiln_shift_right_logical},
    {"shift_right_arithmetic", kiln_shift_right_arithmetic},
};

/* and / or / xor / not of integers (bitwise) or bools (logical); the shifts and bit counts;
 * bitcast_convert. *known false: not one of them. */
static kiln_value emit_bits(imp_lex *L, kiln_graph *g, imp_op *op, bool *known) {
    const char *n = op->name;
    kiln_value none = {0, 0};
    *known = true;
    if (!strcmp(n, "and") || !strcmp(n, "or") || !strcmp(n, "xor")) {
        if (!need_in(L, op, 2, 2)) return none;
        binary_fn f = n[0] == 'a'   ? kiln_bitwise_and
                      : n[0] == 'o' ? kiln_bitwise_or
                                    : kiln_bitwise_xor;
        return f(g, op->in[0], op->in[1]);
    }
    if (!strcmp(n, "not")) return need_in(L, op, 1, 1) ? kiln_bitwise_not(g, op->in[0]) : none;
    for (size_t i = 0; i < sizeof bit_binary_ops / sizeof bit_binary_ops[0]; i++)
        if (!strcmp(n, bit_binary_ops[i].name))
            return need_in(L, op, 2, 2) ? bit_binary_ops[i].fn(g, op->in[0], op->in[1]) : none;
    if (!strcmp(n, "popcnt"))
        return need_in(L, op, 1, 1) ? kiln_population_count(g, op->in[0]) : none;
    if (!strcmp(n, "count_leading_zeros"))
        return need_in(L, op, 1, 1) ? kiln_clz(g, op->in[0]) : none;
    if (!strcmp(n, "bitcast_convert"))
        return need_in(L, op, 1, 1) && need_out(L, op)
                   ? kiln_bitcast_convert(g, op->in[0], op->out[0].dtype)
                   : none;
    *known = false;
    return none;
}

/* ------------------------------------------------------ unsigned integers ---- */

/* The shape ops emit_shape maps. */
static const char *const shape_names[] = {"broadcast_in_dim",
                                          "reshape",
                                          "transpose",
                                          "reverse",
                                          "slice",
                                          "pad",
                                          "concatenate",
                                          "iota",
                                          "dynamic_slice",
                                          "dynamic_update_slice"};

/* x with its sign bit flipped: unsigned order becomes signed order (and back). */
static kiln_value flip_sign(kiln_graph *g, kiln_value x) {
    kiln_dtype t = imp_value_type(g, x).dtype;
    return kiln_bitwise_xor(g, x, kiln_scalar(g, t, t == KILN_DTYPE_I32 ? -0x1p31 : -0x1p63));
}

/* A ui32 pattern (i32) as the i64 of its value. */
static kiln_value widen_u32(kiln_graph *g, kiln_value x) {
    return kiln_bitwise_and(g, kiln_convert(g, x, KILN_DTYPE_I64),
                            kiln_scalar(g, KILN_DTYPE_I64, 4294967295.0));
}

/* convert from or to ui32 / ui64 (as XLA converts: an unsigned source zero-extends, a
 * float saturates into [0, max] with NaN to 0, a signed integer keeps its two's complement
 * pattern); *handled false when neither side is unsigned. */
static kiln_value convert_unsigned(kiln_graph *g, imp_op *op, bool *handled) {
    kiln_value x = op->in[0];
    imp_type from = imp_value_type(g, x);
    const imp_type *to = &op->out[0];
    bool fu = op->in_uns[0], tu = to->uns;
    *handled = fu || tu;
    if (!*handled) return x;
    bool ffl = from.dtype != KILN_DTYPE_I32 && from.dtype != KILN_DTYPE_I64 &&
               from.dtype != KILN_DTYPE_BOOL;
    if (tu && ffl) { /* float -> unsigned: saturate into [0, 2^w - 1] */
        kiln_value f = kiln_convert(g, x, KILN_DTYPE_F64);
        kiln_value pos = kiln_max(g, f, kiln_scalar(g, KILN_DTYPE_F64, 0)); /* NaN stays NaN */
        if (to->dtype == KILN_DTYPE_I32) /* via i64, which saturates NaN to 0 */
            return kiln_convert(
                g,
                kiln_convert(g, kiln_min(g, pos, kiln_scalar(g, KILN_DTYPE_F64, 4294967295.0)),
                             KILN_DTYPE_I64),
                KILN_DTYPE_I32);
        /* ui64: at or above 2^63, the value less 2^63 with the top bit set */
        kiln_value big = kiln_compare(g, pos, kiln_scalar(g, KILN_DTYPE_F64, 0x1p63), KILN_CMP_GE);
        kiln_value lo = kiln_convert(g, pos, KILN_DTYPE_I64);
        kiln_value hi =
            flip_sign(g, kiln_convert(g, kiln_sub(g, pos, kiln_scalar(g, KILN_DTYPE_F64, 0x1p63)),
                                      KILN_DTYPE_I64));
        return kiln_select(g, big, hi, lo);
    }
    if (!fu) return kiln_convert(g, x, to->dtype); /* signed or bool: the pattern */
    /* from unsigned */
    if (from.dtype == KILN_DTYPE_I32) {
        if (to->dtype == KILN_DTYPE_I32 || to->dtype == KILN_DTYPE_BOOL)
            return kiln_convert(g, x, to->dtype);
        return kiln_convert(g, widen_u32(g, x), to->dtype); /* to i64, ui64, floats */
    }
    /* ui64: integers take the pattern; a float is exact below 2^63, and above it the value
     * halved (its low bit kept, so that it rounds once) and doubled */
    if (to->dtype == KILN_DTYPE_I32 || to->dtype == KILN_DTYPE_I64 || to->dtype == KILN_DTYPE_BOOL)
        return kiln_convert(g, x, to->dtype);
    kiln_value one = kiln_scalar(g, KILN_DTYPE_I64, 1);
    kiln_value half =
        kiln_bitwise_or(g, kiln_shift_right_logical(g, x, one), kiln_bitwise_and(g, x, one));
    kiln_value hf = kiln_convert(g, half, to->dtype);
    return kiln_select(g, kiln_compare(g, x, kiln_scalar(g, KILN_DTYPE_I64, 0), KILN_CMP_LT),
                       kiln_add(g, hf, hf), kiln_convert(g, x, to->dtype));
}

/* The ops on unsigned values whose bits differ from the signed op's: compare, maximum,
 * minimum, clamp, divide and remainder. The others read and write the same patterns (add,
 * multiply, the bit ops, slices ...) or are refused. *handled false: none of these. */
static kiln_value emit_unsigned(imp_lex *L, kiln_graph *g, imp_op *op, bool *handled) {
    const char *n = op->name;
    kiln_value none = {0, 0};
    *handled = true;
    /* a compare's type defaults to its operands' (StableHLO's and HLO's rule) */
    bool uns_cmp = op->cmp_typed ? op->cmp_unsigned : op->n_in && op->in_uns[0];
    if (!strcmp(n, "compare") && uns_cmp) {
        if (!need_in(L, op, 2, 2)) return none;
        if (op->cmp == KILN_CMP_EQ || op->cmp == KILN_CMP_NE)
            return kiln_compare(g, op->in[0], op->in[1], op->cmp);
        return kiln_compare(g, flip_sign(g, op->in[0]), flip_sign(g, op->in[1]), op->cmp);
    }
    if (!strcmp(n, "convert")) {
        if (!need_in(L, op, 1, 1) || !need_out(L, op)) return none;
        kiln_value v = convert_unsigned(g, op, handled);
        return *handled ? v : none;
    }
    /* unsigned indices: their i64 values (a ui32 start at or past 2^31 is not negative) */
    int first_index = !strcmp(n, "dynamic_slice")                     ? 1
                      : !strcmp(n, "dynamic_update_slice")            ? 2
                      : !strcmp(n, "gather") || !strcmp(n, "scatter") ? 1
                                                                      : 0;
    int last_index = !strcmp(n, "gather") || !strcmp(n, "scatter") ? 1 : op->n_in - 1;
    for (int i = first_index; first_index && i <= last_index && i < IMP_MAX_OPERANDS; i++)
        if (op->in_uns[i] && imp_value_type(g, op->in[i]).dtype == KILN_DTYPE_I32)
            op->in[i] = widen_u32(g, op->in[i]);
    if (!op->n_out || !op->out[0].uns) {
        *handled = false;
        return none;
    }
    if (!strcmp(n, "maximum") || !strcmp(n, "minimum")) {
        if (!need_in(L, op, 2, 2)) return none;
        binary_fn f = n[1] == 'a' ? kiln_max : kiln_min;
        return flip_sign(g, f(g, flip_sign(g, op->in[0]), flip_sign(g, op->in[1])));
    }
    if (!strcmp(n, "clamp"))
        return need_in(L, op, 3, 3)
                   ? flip_sign(g, kiln_clip(g, flip_sign(g, op->in[1]), flip_sign(g, op->in[0]),
                                            flip_sign(g, op->in[2])))
                   : none;
    if ((!strcmp(n, "divide") || !strcmp(n, "remainder")) && op->out[0].dtype == KILN_DTYPE_I32) {
        /* in i64, where both are non-negative; x / 0 is all ones and x % 0 is x, as XLA's */
        if (!need_in(L, op, 2, 2)) return none;
        kiln_value a = widen_u32(g, op->in[0]), b = widen_u32(g, op->in[1]);
        return kiln_convert(g, n[0] == 'd' ? kiln_div(g, a, b) : kiln_rem(g, a, b), KILN_DTYPE_I32);
    }
    /* the shape ops (shape_names) and these read and write the same bit patterns */
    static const char *const same_bits[] = {"add",
                                            "subtract",
                                            "multiply",
                                            "negate",
                                            "and",
                                            "or",
                                            "xor",
                                            "not",
                                            "shift_left",
                                            "shift_right_logical",
                                            "shift_right_arithmetic",
                                            "popcnt",
                                            "count_leading_zeros",
                                            "select",
                                            "bitcast_convert",
                                            "gather",
                                            "scatter",
                                            "constant",
                                            "dot_general"};
    bool order = op->combine == IMP_COMBINE_MAX || op->combine == IMP_COMBINE_MIN;
    bool combines = !strcmp(n, "reduce") || !strcmp(n, "reduce_window") || !strcmp(n, "scatter");
    if (combines && !order) { /* sums, products, ands */
        *handled = false;
        return none;
    }
    bool same = false;
    for (size_t i = 0; i < sizeof same_bits / sizeof *same_bits; i++)
        same |= !strcmp(n, same_bits[i]);
    for (size_t i = 0; i < sizeof shape_names / sizeof *shape_names; i++)
        same |= !strcmp(n, shape_names[i]);
    if (same && !combines) {
        *handled = false;
        return none;
    }
    imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                "%s of %s: kiln holds unsigned integers as the bit patterns of i32 / i64 and "
                "imports the ops jax.random and integer arithmetic write on them (docs/import.md, "
                "\"Unsigned integers\"), not this one",
                op->spell, op->out[0].dtype == KILN_DTYPE_I32 ? "ui32" : "ui64");
    return none;
}

/* ------------------------------------------------------------------ emit ---- */

static kiln_value emit_one(imp_lex *L, kiln_graph *g, imp_op *op, bool *known) {
    const char *n = op->name;
    *known = true;
    bool done = false;
    kiln_value u = emit_unsigned(L, g, op, &done);
    if (done || L->status) return u;
    if (op->n_in >= 1 && imp_value_type(g, op->in[0]).dtype != KILN_DTYPE_BOOL) {
        kiln_value b = emit_bits(L, g, op, &done);
        if (done || L->status) return b;
    }
    if ((!strcmp(n, "maximum") || !strcmp(n, "minimum")) && op->n_in == 2 &&
        imp_value_type(g, op->in[0]).dtype == KILN_DTYPE_BOOL)
        return binary_bool(g, n, op->in[0], op->in[1]); /* or, and */
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (!strcmp(n, unary_ops[i].name))
            return need_in(L, op, 1, 1) ? unary_ops[i].fn(g, op->in[0]) : (kiln_value){0, 0};
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
        if (!strcmp(n, binary_ops[i].name))
            return need_in(L, op, 2, 2) ? binary_ops[i].fn(g, op->in[0], op->in[1])
                                        : (kiln_value){0, 0};
    if (!strcmp(n, "and") || !strcmp(n, "or") || !strcmp(n, "xor")) {
        if (!need_in(L, op, 2, 2)) return (kiln_value){0, 0};
        kiln_value v = binary_bool(g, n, op->in[0], op->in[1]);
        *known = v.id != 0;
        return v;
    }
    if (!strcmp(n, "remainder")) /* kiln_rem is XLA's: exact, the dividend's sign */
        return need_in(L, op, 2, 2) ? kiln_rem(g, op->in[0], op->in[1]) : (kiln_value){0, 0};
    if (!strcmp(n, "not")) {
        if (!need_in(L, op, 1, 1)) return (kiln_value){0, 0};
        kiln_value v = unary_composite(g, n, op->in[0]);
        *known = v.id != 0;
        return v;
    }
    if (!strcmp(n, "compare"))
        return need_in(L, op, 2, 2) ? kiln_compare(g, op->in[0], op->in[1], op->cmp)
                                    : (kiln_value){0, 0};
    if (!strcmp(n, "select"))
        return need_in(L, op, 3, 3) ? kiln_select(g, op->in[0], op->in[1], op->in[2])
                                    : (kiln_value){0, 0};
    if (!strcmp(n, "clamp")) /* clamp(min, x, max) */
        return need_in(L, op, 3, 3) ? kiln_clip(g, op->in[1], op->in[0], op->in[2])
                                    : (kiln_value){0, 0};
    if (!strcmp(n, "convert"))
        return need_in(L, op, 1, 1) && need_out(L, op)
                   ? kiln_convert(g, op->in[0], op->out[0].dtype)
                   : (kiln_value){0, 0};
    if (!strcmp(n, "dot_general")) return need_out(L, op) ? emit_dot(L, g, op) : (kiln_value){0, 0};
    if (!strcmp(n, "gather")) return emit_gather(L, g, op);
    if (!strcmp(n, "scatter")) return emit_scatter(L, g, op);
    if (!strcmp(n, "reduce_window")) return emit_reduce_window(L, g, op);
    if (!strcmp(n, "convolution")) return emit_conv(L, g, op);
    if (!strcmp(n, "select_and_scatter")) return emit_select_and_scatter(L, g, op);
    if (!strcmp(n, "reduce")) {
        if (!need_in(L, op, 2, 2)) return (kiln_value){0, 0};
        kiln_dtype t = imp_value_type(g, op->in[0]).dtype;
        return imp_reduce(L, g, op, op->in[0], op->in[1],
                          op->in_const[1] && imp_is_identity(op->combine, t, op->in_value[1]));
    }
    if (!strcmp(n, "cholesky")) return emit_cholesky(L, g, op);
    if (!strcmp(n, "triangular_solve")) return emit_triangular_solve(L, g, op);
    if (!need_out(L, op)) return (kiln_value){0, 0};
    bool shape_op = false;
    for (size_t i = 0; i < sizeof shape_names / sizeof shape_names[0]; i++)
        shape_op |= !strcmp(n, shape_names[i]);
    if (shape_op) return shape_operands(L, op) ? emit_shape(L, g, op, known) : (kiln_value){0, 0};
    *known = false;
    return (kiln_value){0, 0};
}

bool imp_sharding_target(const char *target) {
    /* and Shardy's in HLO text: xla.sdy.FuncResultSharding, xla.sdy.Sharding... */
    return !strcmp(target, "Sharding") || !strcmp(target, "SPMDFullToShardShape") ||
           !strcmp(target, "SPMDShardToFullShape") || !strncmp(target, "xla.sdy.", 8);
}

bool imp_emit(imp_lex *L, kiln_graph *g, imp_op *op, kiln_value *out) {
    if (L->status) return false;
    if (!strcmp(op->name, "optimization_barrier")) { /* remat's fence: values pass through */
        for (int i = 0; i < op->n_in; i++) out[i] = op->in[i];
        for (int i = 0; i < op->n_in; i++)
            if (!check_result(L, g, op, i, out[i])) return false;
        return true;
    }
    if (!strcmp(op->name, "reduce") && op->n_in == 4 && is_arg_combine(op->combine))
        return emit_arg_reduce(L, g, op, out);
    if (!strcmp(op->name, "sort")) return emit_sort(L, g, op, out);
    if (!strcmp(op->name, "top_k")) {
        if (op->n_out && op->out[0].uns)
            return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                               "%s of unsigned integers: kiln's top_k orders them as signed",
                               op->spell);
        return emit_top_k(L, g, op, out);
    }
    bool known = true;
    kiln_value v = emit_one(L, g, op, &known);
    if (L->status) return false;
    if (!known && !kiln_graph_status(g))
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s is not an op kiln imports (docs/import.md lists them)", op->spell);
    if (!check_result(L, g, op, 0, v)) return false;
    out[0] = v;
    if (op->n_out > 1)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "%s with %d results", op->spell,
                           op->n_out);
    return true;
}
