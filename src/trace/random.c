/* random.c — jax.random for traced programs: keys are values of the graph, and every draw
 * is an elementwise RANDOM node (src/ir/ir.h) over a counter, so generators compile into
 * the program, fuse into their consumers and run on every backend.
 *
 * The key model is JAX's with jax_threefry_partitionable (its default): a key is two
 * uint32 words, held as i32[2] bit patterns because kiln has no unsigned dtype (the same
 * bits as jax.random.key_data). Element i of a draw of shape S is Threefry-2x32 of the key
 * on the counter (0, i), i the row-major position in S, so a draw's values do not depend
 * on how a kernel splits its loops, and a key split n ways gives key i = the two words of
 * counter i, which is also what fold_in(key, i) gives (as in JAX). The counter's high
 * word is always 0: a draw holds at most 2^32 elements (JAX allows 2^64; split the key to
 * draw more). Derived keys are keys like any other; nothing here keeps state.
 *
 * Invariants: every public function checks its key (an i32[2] value of the graph) and its
 * arguments before it adds a node, so an error names the function the user called; the
 * builder's first error stops all later ops (trace.h). */
#include "trace.h"

#include "base/half.h"

#include <math.h>
#include <stdio.h>

#define RANDOM_MAX_ELEMENTS ((int64_t)1 << 32)

/* The key's node if it is an i32[2] value of g; else NULL after recording the error. */
static const ir_node *key_node(kiln_graph *g, const char *op, kiln_value key) {
    if (!trace_ready(g, op)) return NULL;
    const ir_node *k = trace_node(g, op, key, "the key");
    if (k && (k->dtype != KILN_DTYPE_I32 || k->shape.rank != 1 || k->shape.dims[0] != 2)) {
        char t[IR_TYPE_STR_MAX];
        trace_fail_on(g, &key.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                      "the key must be an i32[2] value (from kiln_random_key, kiln_random_split "
                      "or kiln_random_fold_in, or a parameter holding key data), not %s",
                      ir_type_str(k->dtype, &k->shape, t, sizeof t));
        return NULL;
    }
    return k;
}

/* The shape of a draw: rank and dims checked, at most RANDOM_MAX_ELEMENTS elements. */
static bool draw_shape(kiln_graph *g, const char *op, int rank, const int64_t *dims, ir_shape *s) {
    if (!trace_make_shape(g, op, rank, dims, s)) return false;
    char msg[256];
    int64_t n = 0;
    /* f64 is the widest result: a shape whose f64 bytes fit fits every draw */
    if (ir_check_shape(s, KILN_DTYPE_F64, msg, sizeof msg)) {
        trace_fail(g, KILN_STATUS_SHAPE, op, "%s", msg);
        return false;
    }
    ir_shape_numel(s, &n);
    if (n > RANDOM_MAX_ELEMENTS) {
        trace_fail(g, KILN_STATUS_SHAPE, op,
                   "%lld elements in one draw; the counter numbers at most 2^32 (split the key "
                   "and draw in parts)",
                   (long long)n);
        return false;
    }
    return true;
}

/* Word w (0 or 1) of the key, as a rank-0 value. */
static kiln_value key_word(kiln_graph *g, kiln_value key, int w) {
    int64_t start[1] = {w}, limit[1] = {w + 1};
    return kiln_reshape(g, kiln_slice(g, key, start, limit, NULL), 0, NULL);
}

/* Word w of the key at every element of shape s. Broadcast first, then slice: fusion
 * gives a broadcast's operand a buffer unless it is a source, so broadcasting the key
 * itself (a parameter or constant) keeps the whole draw in its consumer's kernel, where
 * slicing word w out of the broadcast is only index arithmetic. */
static kiln_value key_word_at(kiln_graph *g, kiln_value key, int w, const ir_shape *s) {
    int64_t dims[KILN_MAX_RANK + 1], start[KILN_MAX_RANK + 1] = {0}, limit[KILN_MAX_RANK + 1];
    for (int i = 0; i < s->rank; i++) dims[i] = limit[i] = s->dims[i];
    dims[s->rank] = 2, start[s->rank] = w, limit[s->rank] = w + 1;
    int axis = s->rank;
    kiln_value b = kiln_broadcast_in_dim(g, key, s->rank + 1, dims, &axis);
    return kiln_reshape(g, kiln_slice(g, b, start, limit, NULL), s->rank, s->dims);
}

/* The row-major position of each element of shape s, as uint32 bit patterns in i32. */
static kiln_value counter(kiln_graph *g, const ir_shape *s) {
    int64_t n = 1;
    ir_shape_numel(s, &n);
    int64_t flat[1] = {n};
    kiln_value c;
    if (n <= INT32_MAX) {
        c = kiln_iota(g, KILN_DTYPE_I32, 1, flat, 0);
    } else { /* positions 2^31 .. 2^32-1: i64 converted to i32 keeps their low 32 bits */
        c = kiln_convert(g, kiln_iota(g, KILN_DTYPE_I64, 1, flat, 0), KILN_DTYPE_I32);
    }
    return kiln_reshape(g, c, s->rank, s->dims);
}

kiln_value trace_random(kiln_graph *g, const char *op, int what, kiln_dtype t, kiln_value k0,
                        kiln_value k1, kiln_value c) {
    if (!trace_ready(g, op)) return KN_NONE;
    ir_node n = {.op = IR_RANDOM, .dtype = t};
    n.a.rng = what;
    if (!trace_node(g, op, k0, "the key's first word") ||
        !trace_node(g, op, k1, "the key's second word") || !trace_node(g, op, c, "the counter"))
        return KN_NONE;
    uint32_t in[3] = {k0.id, k1.id, c.id};
    return trace_emit(g, op, &n, in, 3);
}

/* Draw `what` of dtype t and shape s from key (checked). */
static kiln_value draw(kiln_graph *g, const char *op, kiln_value key, int what, kiln_dtype t,
                       const ir_shape *s) {
    kiln_value c = counter(g, s);
    return trace_random(g, op, what, t, key_word_at(g, key, 0, s), key_word_at(g, key, 1, s), c);
}

kiln_value kiln_random_key(kiln_graph *g, uint64_t seed) {
    if (!trace_ready(g, "kiln_random_key")) return KN_NONE;
    /* jax.random.PRNGKey(seed): the seed's high word, then its low word */
    int32_t words[2] = {(int32_t)(uint32_t)(seed >> 32), (int32_t)(uint32_t)seed};
    int64_t dims[1] = {2};
    return kiln_constant(g, KILN_DTYPE_I32, 1, dims, words);
}

/* The key of Threefry's words at counter c (rank 0, i32): what split and fold_in give. */
static kiln_value derived_key(kiln_graph *g, const char *op, kiln_value key, kiln_value c) {
    kiln_value k0 = key_word(g, key, 0), k1 = key_word(g, key, 1);
    int64_t one[1] = {1};
    kiln_value w[2] = {
        kiln_reshape(g, trace_random(g, op, IR_RNG_WORD0, KILN_DTYPE_I32, k0, k1, c), 1, one),
        kiln_reshape(g, trace_random(g, op, IR_RNG_WORD1, KILN_DTYPE_I32, k0, k1, c), 1, one)};
    return kiln_concatenate(g, 2, w, 0);
}

kiln_status kiln_random_split(kiln_graph *g, kiln_value key, int n, kiln_value *keys) {
    const char *op = "kiln_random_split";
    for (int i = 0; keys && i < n; i++) keys[i] = KN_NONE;
    if (!key_node(g, op, key)) { /* a finished graph keeps its OK status: not ours to return */
        kiln_status st = g ? kiln_graph_status(g) : KILN_STATUS_OK;
        return st ? st : KILN_STATUS_INVALID_ARGUMENT;
    }
    if (n < 1 || !keys) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "needs n >= 1 and an array of n keys (n = %d%s)", n, keys ? "" : ", keys NULL");
        return kiln_graph_status(g);
    }
    /* one draw of both words for all n counters, then a key per row */
    ir_shape s = {.rank = 1, .dims = {n}};
    kiln_value c = counter(g, &s);
    kiln_value k0 = key_word_at(g, key, 0, &s), k1 = key_word_at(g, key, 1, &s);
    kiln_value w0 = trace_random(g, op, IR_RNG_WORD0, KILN_DTYPE_I32, k0, k1, c);
    kiln_value w1 = trace_random(g, op, IR_RNG_WORD1, KILN_DTYPE_I32, k0, k1, c);
    for (int i = 0; i < n; i++) {
        int64_t start[1] = {i}, limit[1] = {i + 1};
        kiln_value w[2] = {kiln_slice(g, w0, start, limit, NULL),
                           kiln_slice(g, w1, start, limit, NULL)};
        keys[i] = kiln_concatenate(g, 2, w, 0);
    }
    kiln_status st = kiln_graph_status(g);
    for (int i = 0; st && i < n; i++) keys[i] = KN_NONE;
    return st;
}

kiln_value kiln_random_fold_in(kiln_graph *g, kiln_value key, kiln_value data) {
    const char *op = "kiln_random_fold_in";
    if (!key_node(g, op, key)) return KN_NONE;
    const ir_node *d = trace_node(g, op, data, "data");
    if (!d) return KN_NONE;
    if (d->shape.rank != 0 || !ir_dtype_is_int(d->dtype)) {
        char t[IR_TYPE_STR_MAX];
        return trace_fail_on(g, &data.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                             "data must be a rank-0 i32 or i64 value, not %s",
                             ir_type_str(d->dtype, &d->shape, t, sizeof t));
    }
    /* jnp.uint32(data): an i64 keeps its low 32 bits */
    kiln_value c = d->dtype == KILN_DTYPE_I32 ? data : kiln_convert(g, data, KILN_DTYPE_I32);
    return derived_key(g, op, key, c);
}

kiln_value kiln_random_bits(kiln_graph *g, kiln_value key, int rank, const int64_t *dims) {
    const char *op = "kiln_random_bits";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s)) return KN_NONE;
    return draw(g, op, key, IR_RNG_BITS, KILN_DTYPE_I32, &s);
}

/* The node of float value x (what names it in errors); else NULL after the error, which
 * ends with `takes` ("takes f32, f64, bf16 or f16<takes>, not i32"). */
static const ir_node *float_value(kiln_graph *g, const char *op, kiln_value x, const char *what,
                                  const char *takes) {
    const ir_node *n = trace_node(g, op, x, what);
    if (n && !ir_dtype_is_float(n->dtype)) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_DTYPE, op, "takes f32, f64, bf16 or f16%s, not %s",
                      takes, kiln_dtype_name(n->dtype));
        return NULL;
    }
    return n;
}

static bool float_dtype(kiln_graph *g, const char *op, kiln_dtype t) {
    if (ir_dtype_is_float(t)) return true;
    trace_fail(g, KILN_STATUS_DTYPE, op, "draws f32, f64, bf16 or f16, not %s", kiln_dtype_name(t));
    return false;
}

/* v rounded to float dtype t (nearest even), as a constant is (jnp.asarray's one
 * rounding: jax.random converts its bounds so). */
static double in_dtype(kiln_dtype t, double v) {
    switch (t) {
    case KILN_DTYPE_F32: return (double)(float)v;
    case KILN_DTYPE_BF16: return (double)kn_bf16_to_f32(kn_f64_to_bf16_once(v));
    case KILN_DTYPE_F16: return (double)kn_f16_to_f32(kn_f64_to_f16_once(v));
    default: return v;
    }
}

/* The largest value of float dtype t below h, a finite value of t. */
static double below(kiln_dtype t, double h) {
    if (t == KILN_DTYPE_F64) return nextafter(h, -INFINITY);
    if (t == KILN_DTYPE_F32) return (double)nextafterf((float)h, -INFINITY);
    /* a 16-bit float is sign and magnitude: one step down is one more in magnitude for a
     * negative value (and -0's neighbour), one less for a positive one */
    bool bf = t == KILN_DTYPE_BF16;
    uint16_t b = bf ? kn_f64_to_bf16(h) : kn_f64_to_f16(h); /* exact: h is a value of t */
    b = (b & 0x7fffu) == 0 ? 0x8001u : (b & 0x8000u) ? (uint16_t)(b + 1) : (uint16_t)(b - 1);
    return (double)(bf ? kn_bf16_to_f32(b) : kn_f16_to_f32(b));
}

kiln_value kiln_random_uniform(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                               const int64_t *dims, double lo, double hi) {
    const char *op = "kiln_random_uniform";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s) || !float_dtype(g, op, dtype))
        return KN_NONE;
    /* the bounds in the result's dtype, as jax.random.uniform computes them */
    double l = in_dtype(dtype, lo), h = in_dtype(dtype, hi), span = in_dtype(dtype, h - l);
    if (!(l < h) || !isfinite(l) || !isfinite(h) || !isfinite(span))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "needs finite lo < hi whose difference is finite in %s (lo %g, hi %g; "
                          "in %s: %g, %g, difference %g)",
                          kiln_dtype_name(dtype), lo, hi, kiln_dtype_name(dtype), l, h, span);
    kiln_value u = draw(g, op, key, IR_RNG_UNIFORM, dtype, &s);
    if (l == 0 && h == 1) return u; /* [0, 1) already */
    /* u * (hi - lo) + lo can round up to hi: clamp to the largest value below it, so the
     * result is in [lo, hi) as documented (JAX's can reach hi; the values differ only there) */
    kiln_value r;
    if (dtype == KILN_DTYPE_F16 || dtype == KILN_DTYPE_F32) {
        /* XLA contracts u * span + lo into one fma, so JAX rounds once: f32's on every CPU
         * an outside check tried (1001 of 1001 draws), f16's where the CPU has AVX512-FP16
         * (elsewhere XLA's f16 rounds per op, and JAX's own bits differ between machines:
         * docs/random.md). The product is exact one width up (11 bits by 11 in f32, 24 by
         * 24 in f64), so the sum there, rounded once more, is the fma's result but for a
         * double rounding at a tie (rare). bf16 XLA rounds per op, as kiln does. */
        kiln_dtype w = dtype == KILN_DTYPE_F16 ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
        kiln_value uw = kiln_convert(g, u, w);
        r = kiln_add(g, kiln_mul(g, uw, kiln_scalar(g, w, span)), kiln_scalar(g, w, l));
        r = kiln_convert(g, r, dtype);
    } else {
        r = kiln_add(g, kiln_mul(g, u, kiln_scalar(g, dtype, span)), kiln_scalar(g, dtype, l));
    }
    return kiln_max(g, kiln_scalar(g, dtype, l),
                    kiln_min(g, r, kiln_scalar(g, dtype, below(dtype, h))));
}

kiln_value kiln_random_normal(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                              const int64_t *dims) {
    const char *op = "kiln_random_normal";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s) || !float_dtype(g, op, dtype))
        return KN_NONE;
    return draw(g, op, key, IR_RNG_NORMAL, dtype, &s);
}

kiln_value kiln_random_bernoulli(kiln_graph *g, kiln_value key, double p, int rank,
                                 const int64_t *dims) {
    const char *op = "kiln_random_bernoulli";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s)) return KN_NONE;
    if (!(p >= 0 && p <= 1))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "p = %g is outside [0, 1]",
                          isnan(p) ? fabs(p) : p); /* a NaN prints as "nan", not "-nan" */
    /* jax.random.bernoulli: uniform f32 < p, so p = 0 is never and p = 1 always true */
    kiln_value u = draw(g, op, key, IR_RNG_UNIFORM, KILN_DTYPE_F32, &s);
    return kiln_compare(g, u, kiln_scalar(g, KILN_DTYPE_F32, (float)p), KILN_CMP_LT);
}

kiln_value kiln_dropout(kiln_graph *g, kiln_value key, kiln_value x, double rate) {
    const char *op = "kiln_dropout";
    if (!key_node(g, op, key)) return KN_NONE;
    const ir_node *xn = float_value(g, op, x, "the operand", "");
    if (!xn) return KN_NONE;
    if (!(rate >= 0 && rate <= 1))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "rate = %g is outside [0, 1]",
                          isnan(rate) ? fabs(rate) : rate);
    kiln_dtype t = xn->dtype;
    ir_shape s = xn->shape;
    if (rate == 0) return x;
    if (rate == 1) return kiln_full(g, t, s.rank, s.dims, 0); /* flax: all dropped */
    if (!draw_shape(g, op, s.rank, s.dims, &s)) return KN_NONE;
    /* Inverted dropout as flax writes it: where(keep, x / keep_prob, 0). A select on a
     * bool mask rather than a multiply by a float one: the backward pass (select's rule)
     * then keeps one byte an element, and without a backward pass the mask is drawn,
     * used and gone inside one kernel. */
    double keep = 1 - rate;
    kiln_value mask = kiln_random_bernoulli(g, key, keep, s.rank, s.dims);
    kiln_value scaled = kiln_div(g, x, kiln_scalar(g, t, keep));
    return kiln_select(g, mask, scaled, kiln_scalar(g, t, 0));
}

/* ---------------------------------------------------------- distributions ---- */

/* jax.random's other samplers, written as JAX writes them, so that the same key gives the
 * same draws: randint's and permutation's integers bit for bit, the float ones to the
 * last bits of log and erf, which kiln and XLA compute each their own way. */

/* XLA's unsigned remainder: x % 0 is x. */
static uint32_t urem32(uint32_t x, uint32_t m) {
    return m ? x % m : x;
}

kiln_value kiln_random_randint(kiln_graph *g, kiln_value key, int rank, const int64_t *dims,
                               int64_t minval, int64_t maxval) {
    const char *op = "kiln_random_randint";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s)) return KN_NONE;
    /* JAX's i32 randint: the bounds clipped to i32 (a maxval past INT32_MAX widens the span
     * by one), span = maxval - minval as uint32 (1 when empty), and 64 random bits an
     * element folded in mod span: (hi % span) * (2^32 % span) + lo % span, all uint32 */
    int64_t lo = minval < INT32_MIN ? INT32_MIN : minval > INT32_MAX ? INT32_MAX : minval;
    int64_t hi = maxval < INT32_MIN ? INT32_MIN : maxval > INT32_MAX ? INT32_MAX : maxval;
    uint32_t span = hi <= lo ? 1u : (uint32_t)(hi - lo);
    if (maxval > INT32_MAX && hi > lo) span += 1; /* 2^32 wraps to 0: no reduction at all */
    uint32_t mult = urem32(65536u, span);
    mult = urem32(mult * mult, span);
    kiln_value keys[2];
    if (kiln_random_split(g, key, 2, keys)) return KN_NONE;
    kiln_value word[2];
    kiln_value mask = kiln_scalar(g, KILN_DTYPE_I64, 4294967295.0);
    kiln_value m64 = kiln_scalar(g, KILN_DTYPE_I64, (double)span);
    for (int i = 0; i < 2; i++) { /* the words as their uint32 values, reduced mod span */
        kiln_value w = kiln_bitwise_and(
            g,
            kiln_convert(g, draw(g, op, keys[i], IR_RNG_BITS, KILN_DTYPE_I32, &s), KILN_DTYPE_I64),
            mask);
        word[i] = span ? kiln_rem(g, w, m64) : w;
    }
    kiln_value off = kiln_bitwise_and(
        g, kiln_add(g, kiln_mul(g, word[0], kiln_scalar(g, KILN_DTYPE_I64, (double)mult)), word[1]),
        mask);
    if (span) off = kiln_rem(g, off, m64);
    return kiln_add(g, kiln_convert(g, off, KILN_DTYPE_I32),
                    kiln_scalar(g, KILN_DTYPE_I32, (double)lo));
}

/* The smallest normal value of float dtype t (jnp.finfo(t).tiny). */
static double tiny(kiln_dtype t) {
    return t == KILN_DTYPE_F64 ? 0x1p-1022 : t == KILN_DTYPE_F16 ? 0x1p-14 : 0x1p-126;
}

kiln_value kiln_random_gumbel(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                              const int64_t *dims) {
    const char *op = "kiln_random_gumbel";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s) || !float_dtype(g, op, dtype))
        return KN_NONE;
    /* -log(-log(u)), u uniform on [tiny, 1): JAX's default ("low") mode */
    kiln_value u = kiln_random_uniform(g, key, dtype, rank, dims, tiny(dtype), 1);
    return kiln_neg(g, kiln_log(g, kiln_neg(g, kiln_log(g, u))));
}

kiln_value kiln_random_exponential(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                                   const int64_t *dims) {
    const char *op = "kiln_random_exponential";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s) || !float_dtype(g, op, dtype))
        return KN_NONE;
    /* -log1p(-u), u uniform on [0, 1): log's argument is in (0, 1] */
    kiln_value u = draw(g, op, key, IR_RNG_UNIFORM, dtype, &s);
    return kiln_neg(g, kiln_log1p(g, kiln_neg(g, u)));
}

/* erf(x / sqrt(2)) in dtype t, as JAX computes the truncation's bounds (the division in
 * t; erf here to double, rounded to t). */
static double phi_bound(kiln_dtype t, double x) {
    double r2 = in_dtype(t, sqrt(2.0));
    return in_dtype(t, erf(in_dtype(t, in_dtype(t, x) / r2)));
}

/* The next value of float dtype t after x towards dir (+-1): nextafter in t. */
static double step_in(kiln_dtype t, double x, int dir) {
    if (dir < 0) return below(t, x);
    return -below(t, -x);
}

kiln_value kiln_random_truncated_normal(kiln_graph *g, kiln_value key, kiln_dtype dtype, int rank,
                                        const int64_t *dims, double lower, double upper) {
    const char *op = "kiln_random_truncated_normal";
    ir_shape s;
    if (!key_node(g, op, key) || !draw_shape(g, op, rank, dims, &s) || !float_dtype(g, op, dtype))
        return KN_NONE;
    double l = in_dtype(dtype, lower), h = in_dtype(dtype, upper);
    if (!(l < h) || isnan(l) || isnan(h))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "needs lower < upper in %s (lower %g, upper %g)", kiln_dtype_name(dtype),
                          lower, upper);
    /* sqrt(2) erf_inv(u), u uniform between erf(lower / sqrt(2)) and erf(upper / sqrt(2)),
     * clamped inside (lower, upper) as jax.random.truncated_normal; infinite bounds allowed */
    double a = phi_bound(dtype, l), b = phi_bound(dtype, h);
    if (!(a < b)) /* both bounds where erf has rounded to the same value (far in a tail) */
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "the interval (%g, %g) is too far in the tail for %s: its normal "
                          "probabilities round to the same value",
                          lower, upper, kiln_dtype_name(dtype));
    kiln_value u = kiln_random_uniform(g, key, dtype, rank, dims, a, b);
    kiln_value out = kiln_mul(g, kiln_scalar(g, dtype, sqrt(2.0)), kiln_erf_inv(g, u));
    /* nextafter of an infinite bound is the largest finite value, as in JAX: a draw of
     * erf(-inf) = -1 exactly would otherwise give -inf */
    double lo = step_in(dtype, l, 1), hi = step_in(dtype, h, -1);
    return kiln_clip(g, out, kiln_scalar(g, dtype, lo), kiln_scalar(g, dtype, hi));
}

kiln_value kiln_random_categorical(kiln_graph *g, kiln_value key, kiln_value logits, int axis) {
    const char *op = "kiln_random_categorical";
    if (!key_node(g, op, key)) return KN_NONE;
    const ir_node *ln = float_value(g, op, logits, "the logits", " logits");
    if (!ln) return KN_NONE;
    ir_shape s = ln->shape;
    int ax;
    if (s.rank < 1 || !trace_axis(axis, s.rank, &ax))
        return trace_fail_on(g, &logits.id, 1, KILN_STATUS_SHAPE, op,
                             "axis %d is out of range for logits of rank %d", axis, s.rank);
    /* the Gumbel-max trick: argmax(logits + gumbel) along the axis */
    kiln_value z = kiln_add(g, kiln_random_gumbel(g, key, ln->dtype, s.rank, s.dims), logits);
    return kiln_argmax(g, z, ax);
}

kiln_value kiln_random_permutation(kiln_graph *g, kiln_value key, int64_t n) {
    const char *op = "kiln_random_permutation";
    if (!key_node(g, op, key)) return KN_NONE;
    if (n < 0 || n > INT32_MAX)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "n = %lld: a permutation of 0 to 2^31 - 1 elements", (long long)n);
    int64_t dims[1] = {n};
    kiln_value x = kiln_iota(g, KILN_DTYPE_I32, 1, dims, 0);
    /* JAX's shuffle: ceil(3 ln n / ln(2^32 - 1)) rounds of a stable sort by fresh 32-bit
     * keys (uint32 order: the sign bit flipped for kiln's signed sort), each round's key
     * split from the last */
    int rounds = (int)ceil(3 * log(n > 1 ? (double)n : 1) / log(4294967295.0));
    kiln_value flip = kiln_scalar(g, KILN_DTYPE_I32, -0x1p31);
    for (int r = 0; r < rounds; r++) {
        kiln_value keys[2];
        if (kiln_random_split(g, key, 2, keys)) return KN_NONE;
        key = keys[0];
        kiln_value bits = kiln_bitwise_xor(g, kiln_random_bits(g, keys[1], 1, dims), flip);
        x = kiln_take(g, x, kiln_argsort(g, bits, 0, false), 0, KILN_GATHER_CLIP);
    }
    return x;
}
