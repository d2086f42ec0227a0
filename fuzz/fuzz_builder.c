/* fuzz_builder.c — libFuzzer target: the tracing API driven by bytes.
 *
 * The input is a little program: each step picks a public builder (every op, constants,
 * shape ops, reductions, dot_general with random dimension numbers, gathers, composites)
 * and its operands among the values built so far, with random dtypes, shapes (rank 0..4,
 * dims 0 and 1 often and, rarely, huge ones such as INT64_MAX), axes, permutations and
 * slice bounds. Invalid requests are meant: the builder must reject them with a clear
 * error and never crash.
 *
 * What it holds the library to:
 *   - an op that returns the invalid value has left an error (status and message) on the
 *     graph, and kiln_graph_finish then fails with a message;
 *   - a finished graph prints, and when no node exceeds FZ_MAX_ELEMENTS the reference
 *     interpreter runs it;
 *   - when the control byte's 0x40 bit is set, the gradient transform runs on the program
 *     built so far: loss = the sum of a float value, kiln_grad with respect to every float
 *     parameter (or, with no such parameter, a float intermediate), the gradients become the
 *     outputs; the transform must leave a well-typed graph or a clean builder error, and the
 *     finished graph must verify, print and interpret like any other;
 *   - now and then (a byte says so, the graph is small and KILN_FUZZ_COMPILE is not 0) it
 *     is compiled and run, its memory plan proven sound (plan_check) and its peak measured,
 *     and the outputs compared with the reference's where the comparison is meaningful.
 *
 * Which outputs can be compared exactly: every value carries a level. Sources, integer
 * and bool arithmetic, data movement and comparisons of exact values are EXACT. One
 * correctly rounded float op (+ - * / sqrt) on exact operands is ROUNDED, also bit for bit
 * (the reference's double evaluation rounds once to the same float). One transcendental
 * op (exp, log, log1p, tanh, logistic, rsqrt, pow) on exact operands is ULP: within
 * FZ_ULP_BOUND units in the last place. Anything else (a float op on a rounded value,
 * which the C compiler may contract into an fma; float sums, whose order differs; a
 * comparison of approximate values) is LOOSE and not compared: tests/test_compile_random.c
 * covers those with bounded values and tolerances.
 *
 * KILN_FUZZ_PRINT=1 prints each finished graph (to read a reproducer).
 * KILN_FUZZ_SKIP_HUGE=1 skips evaluating graphs built with a huge attribute or dim (to
 * fuzz past an int64-overflow finding until it is fixed). */
#include "fuzz_common.h"
#include "base/half.h"

#include "../tests/compare.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define FZ_MAX_VALUES   48
#define FZ_MAX_PARAMS   12
#define FZ_MAX_STEPS    64
#define FZ_MAX_ELEMENTS 100000 /* no node larger is evaluated */
#define FZ_COMPILE_MAX  4096   /* elements, for the compiled fraction */
#define FZ_ULP_BOUND    16
#define FZ_ARR          16 /* attribute arrays: more than any rank the fuzzer passes */

enum { LV_EXACT, LV_ROUNDED, LV_ULP, LV_LOOSE };

typedef struct fz_val {
    kiln_value v;
    kiln_dtype t;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    int lv;
} fz_val;

typedef struct fz_state {
    fz_bytes in;
    kiln_graph *g; /* the graph being built: the program's, or a body's while it is traced */
    fz_val vals[FZ_MAX_VALUES];
    int n_vals, newest; /* newest: the slot push wrote last */
    fz_val params[FZ_MAX_PARAMS];
    int n_params;
    bool huge; /* a huge dim or attribute was passed */
    /* control flow (op_control): the enclosing graphs' pools while a body is traced, how
     * deep, and whether running it would take too long (many iterations, large bodies) */
    struct fz_frame *frame;
    int depth;
    bool slow;
} fz_state;

static kiln_context *fz_ctx;

/* ------------------------------------------------------------- drawing ---- */

static kiln_dtype draw_dtype(fz_state *s) {
    uint8_t b = fz_u8(&s->in);
    if (b >= 250) return b == 255 ? (kiln_dtype)77 : KILN_DTYPE_INVALID;
    return (kiln_dtype)(1 + b % 7); /* f32 f64 i32 i64 bool bf16 f16 */
}

static int64_t draw_dim(fz_state *s) {
    static const int64_t special[] = {
        INT64_MAX,        INT64_MIN,  -1,    -2, (int64_t)1 << 31, ((int64_t)1 << 32) + 1,
        (int64_t)1 << 62, 3037000500, 100001};
    uint8_t b = fz_u8(&s->in);
    if (b < 160) return b % 4;
    if (b < 224) return 1 + b % 8;
    if (b < 248) return 1 + b % 32;
    s->huge = true;
    return special[b % (sizeof special / sizeof special[0])];
}

static int draw_rank(fz_state *s) {
    static const int special[] = {-1, 5, 8, 9, 0, 1, 2, 3};
    uint8_t b = fz_u8(&s->in);
    return b < 240 ? b % 5 : special[b % 8];
}

/* rank and dims for a new value: rank in [-1, 9], dims sized FZ_ARR */
static void draw_shape(fz_state *s, int *rank, int64_t dims[FZ_ARR]) {
    *rank = draw_rank(s);
    for (int i = 0; i < FZ_ARR; i++) dims[i] = i < *rank ? draw_dim(s) : 1;
}

static int draw_axis(fz_state *s, int rank) {
    static const int special[] = {INT_MAX, INT_MIN, 8, -9};
    uint8_t b = fz_u8(&s->in);
    int r = rank > 0 ? rank : 1;
    if (b < 200) return b % r;
    if (b < 236) return -1 - b % r;
    if (b < 246) return b % 2 ? rank : -rank - 1;
    return special[b % 4];
}

/* An attribute that is mostly small and sometimes absurd. */
static int64_t draw_attr(fz_state *s, int64_t lo, int64_t span) {
    static const int64_t special[] = {INT64_MAX, INT64_MIN, INT64_MAX / 2, -INT64_MAX, 1 << 30};
    uint8_t b = fz_u8(&s->in);
    if (b < 250) return lo + b % span;
    s->huge = true;
    return special[b % 5];
}

static double draw_double(fz_state *s) {
    static const double special[] = {
        0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e30, -1e300, 88.72283935546875, -88.72283935546875,
        3.5, 1e-45};
    uint8_t b = fz_u8(&s->in);
    if (b < 240) return special[b % 12];
    return b == 240 ? NAN : b == 241 ? INFINITY : b == 242 ? -INFINITY : (double)(b - 248);
}

/* --------------------------------------------------------- the value pool ---- */

static int lv_max(int a, int b) {
    return a > b ? a : b;
}

static bool is_float(kiln_dtype t) {
    return t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64;
}

/* A float of any width, bf16 and f16 too: what rounds, and whose NaNs are all alike (the
 * gradients still differentiate f32 and f64 values alone, so that the reproducers in
 * fuzz/findings decode to the same programs). */
static bool is_real(kiln_dtype t) {
    return is_float(t) || t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
}

/* Records a new value (an invalid one is checked against the builder's error state). */
static void push(fz_state *s, kiln_value v, int lv) {
    if (!kiln_value_ok(v)) {
        if (kiln_graph_status(s->g) == KILN_STATUS_OK || !kiln_graph_error(s->g)[0]) {
            fprintf(stderr, "an op returned the invalid value but the graph has no error\n");
            abort();
        }
        return;
    }
    fz_val x = {.v = v, .lv = lv};
    if (!kiln_value_type(s->g, v, &x.t, &x.rank, x.dims)) {
        fprintf(stderr, "kiln_value_type refuses a value the builder returned\n");
        abort();
    }
    int slot = s->n_vals < FZ_MAX_VALUES ? s->n_vals++ : fz_int(&s->in, FZ_MAX_VALUES);
    s->vals[slot] = x;
    s->newest = slot;
}

static fz_val *last(fz_state *s) {
    return &s->vals[s->newest];
}

/* A new parameter (or, past FZ_MAX_PARAMS, a constant) of that type; returns it. */
static kiln_value make_param(fz_state *s, kiln_dtype t, int rank, const int64_t *dims) {
    if (s->n_params == FZ_MAX_PARAMS) {
        kiln_value v = kiln_full(s->g, t, rank, dims, 1.0);
        push(s, v, LV_EXACT);
        return v;
    }
    char name[16];
    snprintf(name, sizeof name, "p%d", s->n_params);
    kiln_value v = kiln_parameter(s->g, name, t, rank, dims);
    push(s, v, LV_EXACT);
    if (kiln_value_ok(v)) s->params[s->n_params++] = *last(s);
    return v;
}

/* An operand: one of the values so far, or now and then the invalid value or a foreign id. */
static fz_val pick(fz_state *s) {
    uint8_t b = fz_u8(&s->in);
    if (s->n_vals == 0 || b >= 252) {
        if (b == 254) return (fz_val){.v = {0, 0}, .lv = LV_EXACT};
        if (b == 255) return (fz_val){.v = {s->n_vals ? s->vals[0].v.graph : 1, 99999}};
        int64_t d[FZ_ARR] = {2, 3};
        make_param(s, KILN_DTYPE_F32, b % 3, d);
        if (s->n_vals == 0) return (fz_val){.v = {0, 0}};
        return *last(s);
    }
    return s->vals[b % s->n_vals];
}

/* A partner for x: a value of x's dtype and shape if there is one (often), else anything. */
static fz_val pick_like(fz_state *s, const fz_val *x) {
    uint8_t b = fz_u8(&s->in);
    if (b < 40) return pick(s);
    for (int k = 0; k < s->n_vals; k++) {
        fz_val *y = &s->vals[(b + k) % s->n_vals];
        if (y->t == x->t && y->rank == x->rank &&
            !memcmp(y->dims, x->dims, sizeof(int64_t) * (size_t)x->rank))
            return *y;
    }
    if (b < 120) return *x;
    if (x->t == KILN_DTYPE_INVALID) return pick(s);
    make_param(s, x->t, b % 2 ? x->rank : 0, x->dims);
    return s->n_vals ? *last(s) : *x;
}

/* ----------------------------------------------------------------- ops ---- */

static void op_source(fz_state *s) {
    int rank;
    int64_t dims[FZ_ARR];
    kiln_dtype t = draw_dtype(s);
    uint8_t which = fz_u8(&s->in) % 5;
    if (which == 3) {
        push(s, kiln_scalar(s->g, t, draw_double(s)), LV_EXACT);
        return;
    }
    draw_shape(s, &rank, dims);
    if (which == 0) make_param(s, t, rank, dims);
    if (which == 1) push(s, kiln_full(s->g, t, rank, dims, draw_double(s)), LV_EXACT);
    if (which == 2) push(s, kiln_iota(s->g, t, rank, dims, draw_axis(s, rank)), LV_EXACT);
    if (which == 4) {
        /* data from the input, when the shape is small enough for this buffer */
        unsigned char data[512] = {0};
        size_t bytes = kiln_dtype_itemsize(t);
        for (int i = 0; i < rank && i < KILN_MAX_RANK; i++)
            if (dims[i] < 0 || __builtin_mul_overflow(bytes, (size_t)dims[i], &bytes))
                bytes = SIZE_MAX;
        for (size_t i = 0; i < bytes && i < sizeof data; i++) data[i] = fz_u8(&s->in);
        push(s, kiln_constant(s->g, t, rank, dims, bytes <= sizeof data ? data : NULL), LV_EXACT);
    }
}

/* kiln_gelu's tanh form as a unary function for the table below (the table keeps its
 * length and order, so the reproducers in fuzz/findings decode to the same programs). */
static kiln_value gelu_tanh(kiln_graph *g, kiln_value x) {
    return kiln_gelu(g, x, true);
}

static void op_unary(fz_state *s) {
    typedef kiln_value (*unary_fn)(kiln_graph *, kiln_value);
    static const unary_fn fns[] = {kiln_neg,  kiln_abs,           kiln_sign,        kiln_floor,
                                   kiln_relu, kiln_stop_gradient, kiln_logical_not, kiln_sqrt,
                                   kiln_exp,  kiln_log,           kiln_log1p,       kiln_rsqrt,
                                   kiln_tanh, kiln_logistic,      gelu_tanh};
    int k = fz_int(&s->in, (int)(sizeof fns / sizeof fns[0]));
    fz_val x = pick(s);
    int lv = x.lv;
    if (k <= 6) { /* exact for every dtype; sign and floor are discrete */
        if ((k == 2 || k == 3) && x.lv == LV_ULP) lv = LV_LOOSE;
    } else if (k == 7) {
        lv = x.lv == LV_EXACT ? LV_ROUNDED : LV_LOOSE;
    } else if (k <= 13) {
        lv = x.lv == LV_EXACT ? LV_ULP : LV_LOOSE;
    } else {
        lv = LV_LOOSE;
    }
    push(s, fns[k](s->g, x.v), lv);
}

static void op_binary(fz_state *s) {
    typedef kiln_value (*binary_fn)(kiln_graph *, kiln_value, kiln_value);
    static const binary_fn fns[] = {kiln_add, kiln_sub, kiln_mul,         kiln_div,       kiln_max,
                                    kiln_min, kiln_pow, kiln_logical_and, kiln_logical_or};
    int k = fz_int(&s->in, (int)(sizeof fns / sizeof fns[0]));
    fz_val a = pick(s), b = pick_like(s, &a);
    int lv = lv_max(a.lv, b.lv);
    if (is_real(a.t) && k <= 3) lv = lv == LV_EXACT ? LV_ROUNDED : LV_LOOSE;
    if (is_real(a.t) && k == 6) lv = lv == LV_EXACT ? LV_ULP : LV_LOOSE;
    push(s, fns[k](s->g, a.v, b.v), lv);
}

static void op_compare_select_convert(fz_state *s) {
    uint8_t k = fz_u8(&s->in) % 3;
    fz_val a = pick(s);
    if (k == 0) {
        fz_val b = pick_like(s, &a);
        int lv = lv_max(a.lv, b.lv);
        kiln_cmp dir = (kiln_cmp)(fz_u8(&s->in) % 7); /* 6: not a direction */
        push(s, kiln_compare(s->g, a.v, b.v, dir), lv >= LV_ULP ? LV_LOOSE : lv);
    } else if (k == 1) {
        fz_val t = pick_like(s, &a), f = pick_like(s, &a);
        int lv = lv_max(t.lv, f.lv);
        push(s, kiln_select(s->g, a.v, t.v, f.v), a.lv >= LV_ULP ? LV_LOOSE : lv_max(lv, a.lv));
    } else {
        kiln_dtype to = draw_dtype(s);
        push(s, kiln_convert(s->g, a.v, to), a.lv >= LV_ULP ? LV_LOOSE : a.lv);
    }
}

static void op_broadcast(fz_state *s) {
    fz_val x = pick(s);
    int rank = x.rank + fz_int(&s->in, 3), bdims[FZ_ARR];
    int64_t dims[FZ_ARR];
    if (fz_u8(&s->in) < 32) rank = draw_rank(s);
    if (rank < 0 || rank > FZ_ARR) rank = FZ_ARR;
    int off = rank - x.rank;
    for (int i = 0; i < FZ_ARR; i++) {
        dims[i] = 1 + fz_int(&s->in, 3);
        bdims[i] = i + (off > 0 ? off : 0);
    }
    for (int i = 0; i < x.rank && i + off >= 0 && i + off < rank; i++)
        if (x.dims[i] != 1 || fz_u8(&s->in) < 128) dims[i + off] = x.dims[i];
    if (fz_u8(&s->in) < 24) dims[fz_int(&s->in, FZ_ARR)] = draw_dim(s);
    if (fz_u8(&s->in) < 24) bdims[fz_int(&s->in, FZ_ARR)] = draw_axis(s, rank);
    if (fz_u8(&s->in) % 2)
        push(s, kiln_broadcast_in_dim(s->g, x.v, rank, dims, bdims), x.lv);
    else
        push(s, kiln_broadcast_to(s->g, x.v, rank, dims), x.lv);
}

static void op_reshape(fz_state *s) {
    fz_val x = pick(s);
    int64_t dims[FZ_ARR];
    int rank = 0;
    switch (fz_u8(&s->in) % 4) {
    case 0: rank = 1, dims[0] = -1; break;
    case 1: /* the same dims reversed: same element count */
        rank = x.rank;
        for (int i = 0; i < rank; i++) dims[i] = x.dims[rank - 1 - i];
        break;
    case 2: /* a 1 in front and a -1 in place of one dim */
        rank = x.rank + 1;
        dims[0] = 1;
        for (int i = 0; i < x.rank; i++) dims[i + 1] = x.dims[i];
        if (x.rank) dims[1 + fz_int(&s->in, x.rank)] = -1;
        break;
    default: draw_shape(s, &rank, dims); break;
    }
    if (rank > KILN_MAX_RANK) rank = KILN_MAX_RANK;
    push(s, kiln_reshape(s->g, x.v, rank, dims), x.lv);
}

static void op_transpose(fz_state *s) {
    fz_val x = pick(s);
    int perm[FZ_ARR];
    for (int i = 0; i < FZ_ARR; i++) perm[i] = i;
    for (int i = x.rank - 1; i > 0; i--) { /* Fisher-Yates from the input */
        int j = fz_int(&s->in, i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    if (fz_u8(&s->in) < 32) perm[fz_int(&s->in, x.rank ? x.rank : 1)] = draw_axis(s, x.rank);
    push(s, kiln_transpose(s->g, x.v, perm), x.lv);
}

/* kiln_rev (axes drawn, repeats and out-of-range ones sometimes, NULL for all) and
 * kiln_split (indices drawn, out of order and out of range sometimes). */
static void op_rev_split(fz_state *s) {
    fz_val x = pick(s);
    if (fz_u8(&s->in) % 2) {
        int axes[FZ_ARR + 1], n = fz_int(&s->in, FZ_ARR + 2) - 1; /* -1: a bad count */
        for (int i = 0; i < n && i <= FZ_ARR; i++) axes[i] = draw_axis(s, x.rank);
        push(s, kiln_rev(s->g, x.v, n, fz_u8(&s->in) < 16 ? NULL : axes), x.lv);
        return;
    }
    int64_t idx[3];
    int n = 1 + fz_int(&s->in, 3);
    for (int i = 0; i < n - 1; i++) idx[i] = draw_attr(s, -1, 8);
    kiln_value outs[3] = {{0, 0}, {0, 0}, {0, 0}};
    const int64_t *points = fz_u8(&s->in) < 64 ? NULL : idx; /* NULL: n equal parts */
    if (kiln_split(s->g, x.v, n, points, draw_axis(s, x.rank), outs) == KILN_STATUS_OK)
        for (int i = 0; i < n; i++) push(s, outs[i], x.lv);
}

/* kiln_dynamic_slice and kiln_dynamic_update_slice: starts are i32 or i64 constants (out of
 * range sometimes, which clamps; now and then an f32 or a wrong count, which must fail),
 * sizes drawn up to the dimension (beyond it sometimes); the update is a dynamic slice of
 * the operand itself, or another value (a type mismatch the builder must name). */
static void op_dynamic(fz_state *s) {
    fz_val x = pick(s);
    kiln_value starts[FZ_ARR + 1];
    int64_t sizes[FZ_ARR + 1];
    int n = x.rank;
    uint8_t b = fz_u8(&s->in);
    if (b < 8) n = fz_int(&s->in, FZ_ARR + 2) - 1; /* -1..FZ_ARR: often a wrong count */
    for (int i = 0; i < n && i <= FZ_ARR; i++) {
        uint8_t t = fz_u8(&s->in);
        kiln_dtype it = t < 8 ? KILN_DTYPE_F32 : t % 2 ? KILN_DTYPE_I32 : KILN_DTYPE_I64;
        starts[i] = kiln_scalar(s->g, it, (double)draw_attr(s, -3, 8));
        int64_t d = i < x.rank ? x.dims[i] : 1, span = d >= 0 && d < 250 ? d + 1 : 250;
        sizes[i] = fz_u8(&s->in) < 8 ? draw_attr(s, -1, 9) : (int64_t)(fz_u8(&s->in) % span);
    }
    kiln_value w = kiln_dynamic_slice(s->g, x.v, n, starts, sizes);
    if (!(b & 0x10)) {
        push(s, w, x.lv);
        return;
    }
    fz_val u = b & 0x20 ? pick(s) : (fz_val){.v = w, .lv = x.lv};
    /* the update's values land in the result: its level counts too */
    push(s, kiln_dynamic_update_slice(s->g, x.v, u.v, n, starts), lv_max(x.lv, u.lv));
}

static void op_slice(fz_state *s) {
    fz_val x = pick(s);
    int64_t start[FZ_ARR], limit[FZ_ARR], stride[FZ_ARR];
    for (int i = 0; i < FZ_ARR; i++) {
        int64_t d = i < x.rank ? x.dims[i] : 1, span = d >= 0 && d < 250 ? d + 1 : 250;
        start[i] = fz_u8(&s->in) % span;
        int64_t rest = d - start[i] >= 0 && d - start[i] < 250 ? d - start[i] + 1 : 250;
        limit[i] = start[i] + fz_u8(&s->in) % rest;
        stride[i] = draw_attr(s, 1, 3);
    }
    uint8_t b = fz_u8(&s->in);
    if (b < 24)
        start[b % FZ_ARR] = draw_attr(s, -2, 4);
    else if (b < 48)
        limit[b % FZ_ARR] = draw_attr(s, -1, 8);
    else if (b < 56)
        stride[b % FZ_ARR] = b % 2 ? 0 : -1;
    push(s, kiln_slice(s->g, x.v, start, limit, b % 5 == 0 ? NULL : stride), x.lv);
}

static void op_pad(fz_state *s) {
    fz_val x = pick(s);
    int64_t lo[FZ_ARR], hi[FZ_ARR], interior[FZ_ARR];
    for (int i = 0; i < FZ_ARR; i++) {
        lo[i] = draw_attr(s, -2, 5);
        hi[i] = draw_attr(s, -2, 5);
        interior[i] = draw_attr(s, 0, 3);
    }
    uint8_t b = fz_u8(&s->in);
    fz_val pv = b < 200 ? (fz_val){.v = kiln_scalar(s->g, x.t, draw_double(s))} : pick(s);
    push(s, kiln_pad(s->g, x.v, pv.v, lo, hi, b % 3 ? interior : NULL), lv_max(x.lv, pv.lv));
}

static void op_concatenate(fz_state *s) {
    fz_val x = pick(s);
    kiln_value xs[5] = {x.v};
    int n = 1 + fz_int(&s->in, 4), lv = x.lv;
    for (int i = 1; i < n; i++) {
        fz_val y = pick_like(s, &x);
        xs[i] = y.v, lv = lv_max(lv, y.lv);
    }
    if (fz_u8(&s->in) == 255) n = fz_u8(&s->in) % 2 ? 0 : -1;
    push(s, kiln_concatenate(s->g, n, xs, draw_axis(s, x.rank)), lv);
}

static void op_reduce(fz_state *s) {
    typedef kiln_value (*reduce_fn)(kiln_graph *, kiln_value, int, const int *, bool);
    static const reduce_fn fns[] = {kiln_reduce_max,  kiln_reduce_min, kiln_reduce_sum,
                                    kiln_reduce_prod, kiln_mean,       kiln_logsumexp};
    int k = fz_int(&s->in, 6);
    fz_val x = pick(s);
    int axes[FZ_ARR], naxes = fz_int(&s->in, x.rank + 2);
    for (int i = 0; i < FZ_ARR; i++) axes[i] = draw_axis(s, x.rank);
    bool all = fz_u8(&s->in) < 40, keep = fz_u8(&s->in) % 2;
    int lv = k <= 1 || !is_real(x.t) ? x.lv : LV_LOOSE;
    if (k >= 4) lv = LV_LOOSE;
    push(s, fns[k](s->g, x.v, all ? 0 : naxes, all ? NULL : axes, keep), lv);
}

static void op_dot(fz_state *s) {
    fz_val a = pick(s), b = pick_like(s, &a);
    int lv = is_real(a.t) ? LV_LOOSE : lv_max(a.lv, b.lv);
    if (fz_u8(&s->in) < 64) {
        push(s, kiln_matmul(s->g, a.v, b.v), lv);
        return;
    }
    kiln_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contract = fz_int(&s->in, 3);
    d.n_batch = fz_int(&s->in, 2);
    if (fz_u8(&s->in) == 255) d.n_contract = -1, d.n_batch = KILN_MAX_RANK + 1;
    for (int i = 0; i < KILN_MAX_RANK; i++) {
        d.lhs_contract[i] = draw_axis(s, a.rank), d.rhs_contract[i] = draw_axis(s, b.rank);
        d.lhs_batch[i] = draw_axis(s, a.rank), d.rhs_batch[i] = draw_axis(s, b.rank);
    }
    push(s, kiln_dot_general(s->g, a.v, b.v, fz_u8(&s->in) == 7 ? NULL : &d), lv);
}

/* An integer value to index with: one there is, or a new parameter of the given shape. */
static fz_val pick_indices(fz_state *s, int rank, const int64_t *dims) {
    uint8_t b = fz_u8(&s->in);
    for (int k = 0; k < s->n_vals && b < 128; k++) {
        fz_val *y = &s->vals[(b + k) % s->n_vals];
        if (y->t == KILN_DTYPE_I32 || y->t == KILN_DTYPE_I64) return *y;
    }
    make_param(s, b % 2 ? KILN_DTYPE_I32 : KILN_DTYPE_I64, rank, dims);
    return s->n_vals ? *last(s) : (fz_val){.v = {0, 0}};
}

static void op_gather(fz_state *s) {
    fz_val x = pick(s);
    int64_t idims[FZ_ARR];
    int irank;
    draw_shape(s, &irank, idims);
    if (irank > 2 || irank < 0) irank = 1;
    fz_val idx = pick_indices(s, irank, idims);
    int lv = idx.lv >= LV_ULP ? LV_LOOSE : lv_max(x.lv, idx.lv);
    if (fz_u8(&s->in) % 2) {
        push(s, kiln_take_rows(s->g, x.v, idx.v), lv);
        return;
    }
    /* updates shaped indices.shape + operand.shape[1:], unless the input says otherwise */
    int64_t udims[FZ_ARR];
    int urank = 0;
    for (int i = 0; i < idx.rank && urank < KILN_MAX_RANK; i++) udims[urank++] = idx.dims[i];
    for (int i = 1; i < x.rank && urank < KILN_MAX_RANK; i++) udims[urank++] = x.dims[i];
    fz_val up;
    if (fz_u8(&s->in) < 200 && x.t != KILN_DTYPE_INVALID) {
        make_param(s, x.t, urank, udims);
        up = s->n_vals ? *last(s) : x;
    } else {
        up = pick(s);
    }
    if (is_real(x.t)) lv = LV_LOOSE; /* duplicate indices add in some order */
    push(s, kiln_scatter_add_rows(s->g, x.v, idx.v, up.v), lv_max(lv, up.lv));
}

/* kiln_dot_product_attention with x as the query: keys and values made to fit it (S
 * drawn, the heads shared by 1 or all), or any two values (mostly a builder error). */
static void op_attention(fz_state *s, fz_val x) {
    kiln_value k, v;
    if (fz_u8(&s->in) < 200 && (x.rank == 3 || x.rank == 4)) {
        int64_t kd[4], vd[4];
        int o = x.rank - 3;
        for (int i = 0; i < x.rank; i++) kd[i] = vd[i] = x.dims[i];
        kd[o] = vd[o] = draw_attr(s, 1, 5);                            /* S */
        kd[o + 1] = vd[o + 1] = fz_u8(&s->in) % 2 ? 1 : x.dims[o + 1]; /* K */
        vd[o + 2] = draw_attr(s, 0, 4);                                /* Hv */
        k = make_param(s, x.t, x.rank, kd);
        v = make_param(s, x.t, x.rank, vd);
    } else {
        k = pick(s).v;
        v = pick(s).v;
    }
    uint8_t b = fz_u8(&s->in);
    kiln_attention_options o = {.scale = b < 200 ? 0 : draw_double(s), .is_causal = b % 2};
    push(s, kiln_dot_product_attention(s->g, x.v, k, v, b % 5 == 4 ? NULL : &o), LV_LOOSE);
}

static void op_composite(fz_state *s) {
    fz_val x = pick(s);
    int axis = draw_axis(s, x.rank);
    switch (fz_u8(&s->in) % 7) {
    case 4: op_attention(s, x); break;
    case 5: /* x * x: one correctly rounded product */
        push(s, kiln_square(s->g, x.v),
             is_real(x.t) ? (x.lv == LV_EXACT ? LV_ROUNDED : LV_LOOSE) : x.lv);
        break;
    case 6: {
        int64_t d = x.rank > 0 && axis >= -x.rank && axis < x.rank
                        ? x.dims[axis < 0 ? axis + x.rank : axis]
                        : 1;
        kiln_value none = {0, 0}, scale = none, bias = none;
        if (fz_u8(&s->in) % 2) scale = make_param(s, x.t, 1, &d);
        if (fz_u8(&s->in) % 2) bias = make_param(s, x.t, 1, &d);
        push(s, kiln_layer_norm_axis(s->g, x.v, scale, bias, axis, 1e-5), LV_LOOSE);
        break;
    }
    case 0: push(s, kiln_softmax(s->g, x.v, axis), LV_LOOSE); break;
    case 1: push(s, kiln_log_softmax(s->g, x.v, axis), LV_LOOSE); break;
    case 2: {
        int64_t d = x.rank > 0 ? x.dims[x.rank - 1] : 1;
        kiln_value none = {0, 0}, scale = none, bias = none;
        if (fz_u8(&s->in) % 2) scale = make_param(s, x.t, 1, &d);
        if (fz_u8(&s->in) % 2) bias = make_param(s, x.t, 1, &d);
        double eps = fz_u8(&s->in) < 250 ? 1e-5 : draw_double(s);
        push(s, kiln_layer_norm(s->g, x.v, scale, bias, eps), LV_LOOSE);
        break;
    }
    default: {
        fz_val labels = pick_indices(s, x.rank > 0 ? x.rank - 1 : 0, x.dims);
        push(s, kiln_softmax_cross_entropy(s->g, x.v, labels.v), LV_LOOSE);
        break;
    }
    }
}

/* kiln_take, take_along_axis, stack, argmax/argmin, cumsum, one_hot, make_causal_mask
 * (index_ops.c); argsort, sort and top_k (sort.c). */
static void op_index(fz_state *s) {
    fz_val x = pick(s);
    int axis = draw_axis(s, x.rank);
    uint8_t m = fz_u8(&s->in);
    kiln_gather_mode mode = (kiln_gather_mode)(m < 250 ? m % 3 : m % 2 ? 3 : -1);
    switch (fz_u8(&s->in) % 8) {
    case 5:
        push(s,
             kiln_make_causal_mask(s->g, draw_attr(s, -1, 9), draw_attr(s, -1, 9), draw_dtype(s)),
             LV_EXACT);
        break;
    case 0:
    case 1: {
        int64_t idims[FZ_ARR];
        int irank;
        draw_shape(s, &irank, idims);
        if (irank > 2 || irank < 0) irank = 1;
        bool along = fz_u8(&s->in) % 2;
        if (along) { /* indices of x's rank, mostly */
            irank = x.rank >= 0 && x.rank <= KILN_MAX_RANK ? x.rank : 1;
            for (int i = 0; i < irank; i++) idims[i] = fz_u8(&s->in) % 3 ? x.dims[i] : 1;
        }
        fz_val idx = pick_indices(s, irank, idims);
        int lv = idx.lv >= LV_ULP ? LV_LOOSE : lv_max(x.lv, idx.lv);
        push(s,
             along ? kiln_take_along_axis(s->g, x.v, idx.v, axis, mode)
                   : kiln_take(s->g, x.v, idx.v, axis, mode),
             lv);
        break;
    }
    case 2: {
        fz_val y = pick(s);
        int n = 1 + fz_u8(&s->in) % 3;
        kiln_value xs[3] = {x.v, y.v, x.v};
        push(s, kiln_stack(s->g, fz_u8(&s->in) == 7 ? 0 : n, xs, axis), lv_max(x.lv, y.lv));
        break;
    }
    case 3: {
        /* a float input that is not exact may tie differently, or not tie */
        int lv = is_real(x.t) && x.lv != LV_EXACT ? LV_LOOSE : LV_EXACT;
        push(s, fz_u8(&s->in) % 2 ? kiln_argmax(s->g, x.v, axis) : kiln_argmin(s->g, x.v, axis),
             lv);
        break;
    }
    case 4: /* floats: sums whose order the compiled reduction may change */
        push(s, kiln_cumsum(s->g, x.v, axis, fz_u8(&s->in) % 2), is_real(x.t) ? LV_LOOSE : x.lv);
        break;
    case 6: { /* positions follow ties, which an inexact float may not keep */
        int lv = is_real(x.t) && x.lv != LV_EXACT ? LV_LOOSE : LV_EXACT;
        uint8_t w = fz_u8(&s->in);
        kiln_value out[2];
        if (w % 3 == 0) {
            push(s, kiln_argsort(s->g, x.v, axis, w & 8), lv);
        } else if (w % 3 == 1) {
            fz_val y = pick(s);
            kiln_value ops[2] = {x.v, y.v};
            if (!kiln_sort(s->g, 1 + (w & 4 ? 1 : 0), ops, axis, 1 + (w & 16 ? 1 : 0), w & 8, out))
                push(s, out[0], lv_max(lv, x.lv));
        } else if (!kiln_top_k(s->g, x.v, (int)draw_attr(s, -1, 9), &out[0], &out[1])) {
            push(s, out[w & 8 ? 0 : 1], lv_max(lv, x.lv));
        }
        break;
    }
    default: {
        int64_t d[FZ_ARR] = {3};
        fz_val idx = pick_indices(s, 1, d);
        push(s, kiln_one_hot(s->g, idx.v, draw_attr(s, 0, 6), draw_dtype(s)),
             idx.lv >= LV_ULP ? LV_LOOSE : idx.lv);
        break;
    }
    }
}

/* Linear algebra (linalg.c): cholesky, triangular_solve, cho_solve on any values (mostly
 * not positive definite or of the wrong shape: the builders' checks; a factor of random
 * values is ill-conditioned, so loose), and the exact helpers eye, tril, triu, diagonal. */
static void op_linalg(fz_state *s) {
    fz_val x = pick(s);
    uint8_t w = fz_u8(&s->in);
    switch (w % 6) {
    case 0: push(s, kiln_cholesky(s->g, x.v), LV_LOOSE); break;
    case 1: {
        fz_val y = pick(s);
        kiln_triangular_solve_options o = {w & 8, w & 16, w & 32, w & 64};
        push(s, kiln_triangular_solve(s->g, x.v, y.v, w & 128 ? NULL : &o), LV_LOOSE);
        break;
    }
    case 2: push(s, kiln_cho_solve(s->g, x.v, w & 8, pick(s).v), LV_LOOSE); break;
    case 3: {
        int64_t k = draw_attr(s, -4, 4);
        push(s, w & 8 ? kiln_tril(s->g, x.v, k) : kiln_triu(s->g, x.v, k), x.lv);
        break;
    }
    case 4:
        push(s,
             kiln_diagonal(s->g, x.v, draw_attr(s, -4, 4), draw_axis(s, x.rank),
                           draw_axis(s, x.rank)),
             x.lv);
        break;
    default:
        push(s,
             kiln_eye(s->g, draw_dtype(s), draw_attr(s, -1, 6), draw_attr(s, -1, 6),
                      draw_attr(s, -3, 3)),
             LV_EXACT);
        break;
    }
}

/* kiln_gather / kiln_scatter with dimension numbers drawn from the input (mostly wrong:
 * the builders' checks), x[i, j] through kiln_index_get, and the .at[] updates (gather.c). */
static void op_gather_dims(fz_state *s) {
    fz_val x = pick(s);
    int axis = draw_axis(s, x.rank);
    uint8_t m = fz_u8(&s->in);
    kiln_gather_mode mode = (kiln_gather_mode)(m < 250 ? m % 3 : m % 2 ? 3 : -1);
    int64_t idims[FZ_ARR];
    int irank;
    draw_shape(s, &irank, idims);
    if (irank > 3 || irank < 0) irank = 2;
    fz_val idx = pick_indices(s, irank, idims);
    int lv = idx.lv >= LV_ULP ? LV_LOOSE : lv_max(x.lv, idx.lv);
    uint8_t w = fz_u8(&s->in);
    kiln_scatter_kind kind = (kiln_scatter_kind)fz_int(&s->in, 6);        /* 5: not a kind */
    if (w % 4 && is_real(x.t) && kind != KILN_SCATTER_SET) lv = LV_LOOSE; /* combine order */
    if (w % 4 == 0) {
        kiln_value ij[3] = {idx.v, idx.v, idx.v};
        push(s, kiln_index_get(s->g, x.v, fz_int(&s->in, 4), ij, mode), lv);
        return;
    }
    fz_val y = pick(s);
    if (w % 4 == 1) {
        push(s, kiln_index_update(s->g, kind, x.v, axis, idx.v, y.v, mode), lv_max(lv, y.lv));
        return;
    }
    int l[5][KILN_MAX_RANK], n[4];
    int64_t sizes[KILN_MAX_RANK];
    for (int k = 0; k < 4; k++) n[k] = fz_int(&s->in, 4);
    for (int i = 0; i < KILN_MAX_RANK; i++) {
        for (int k = 0; k < 5; k++) l[k][i] = draw_axis(s, x.rank + (k == 0 ? 2 : 0));
        sizes[i] = draw_attr(s, 0, 4);
    }
    if (w % 4 == 2) {
        kiln_gather_dims d = {.n_offset_dims = n[0],
                              .n_collapsed_slice_dims = n[1],
                              .n_start_index_map = n[2],
                              .n_operand_batching_dims = n[3]};
        memcpy(d.offset_dims, l[0], sizeof l[0]), memcpy(d.collapsed_slice_dims, l[1], sizeof l[1]);
        memcpy(d.start_index_map, l[2], sizeof l[2]);
        memcpy(d.operand_batching_dims, l[3], sizeof l[3]);
        memcpy(d.start_indices_batching_dims, l[4], sizeof l[4]);
        push(s, kiln_gather(s->g, x.v, idx.v, &d, sizes, mode, NULL), lv);
        return;
    }
    kiln_scatter_dims d = {.n_update_window_dims = n[0],
                           .n_inserted_window_dims = n[1],
                           .n_scatter_dims_to_operand_dims = n[2],
                           .n_operand_batching_dims = n[3]};
    memcpy(d.update_window_dims, l[0], sizeof l[0]);
    memcpy(d.inserted_window_dims, l[1], sizeof l[1]);
    memcpy(d.scatter_dims_to_operand_dims, l[2], sizeof l[2]);
    memcpy(d.operand_batching_dims, l[3], sizeof l[3]);
    memcpy(d.scatter_indices_batching_dims, l[4], sizeof l[4]);
    push(s, kiln_scatter(s->g, kind, x.v, idx.v, y.v, &d, mode), lv_max(lv, y.lv));
}

/* ---------------------------------------------------------- control flow ---- */

#define FZ_MAX_DEPTH 2    /* control ops nested inside bodies */
#define FZ_MAX_TRIPS 8    /* iterations past which a program is built but not run */
#define FZ_BODY_MAX  4096 /* elements of a body's node past which likewise */

/* The pool of an enclosing graph while a body is traced: its values can be captured. */
typedef struct fz_frame {
    fz_val vals[FZ_MAX_VALUES];
    int n_vals, newest, n_params;
    kiln_graph *g;
    struct fz_frame *up;
} fz_frame;

enum { BODY_WHILE, BODY_FORI, BODY_SCAN, BODY_BRANCH };

/* One control op's bodies: what they must return. A while's condition and body, and a
 * switch's branches, share it: calls counts them in the order the builder traces them. */
typedef struct fz_body {
    fz_state *s;
    int kind, calls;
    int n_carry;    /* leading outputs that keep their parameter's type */
    int n_extra;    /* further outputs: a scan's ys, a branch's results */
    int64_t bound;  /* a while: its condition is counter < bound */
    fz_val want[4]; /* branch 0's outputs, which the later branches try to match */
    int n_want;
} fz_body;

static void step(fz_state *s);

/* The largest node of graph g (id gid), in elements: over every node, composites' parts
 * too. */
static int64_t graph_biggest(kiln_graph *g, uint32_t gid);

/* A value of an enclosing graph (any level up) captured into the body; now and then one used
 * without kiln_capture, which the builder must refuse. */
static void capture(fz_state *s, uint8_t c) {
    fz_frame *f = s->frame;
    while (f->up && (c & 1)) f = f->up, c >>= 1;
    if (!f->n_vals) return;
    fz_val x = f->vals[fz_u8(&s->in) % f->n_vals];
    if (c >= 44)
        push(s, kiln_neg(s->g, x.v), LV_LOOSE); /* read directly: an error naming capture */
    else
        push(s, kiln_capture(s->g, x.v), LV_LOOSE);
}

/* The outputs of a body, into outs: a while's condition is counter < bound (now and then
 * and-ed with a drawn value, which must be a bool scalar), a while's body adds one to the counter
 * (so the loop ends), carries are values of their parameter's type where the pool has one, the rest
 * are drawn (a branch past the first matching branch 0's where it can). */
static int body_outputs(fz_state *s, fz_body *b, int n_in, const kiln_value *in, kiln_value *outs) {
    kiln_graph *g = s->g;
    if (b->kind == BODY_WHILE && b->calls == 1) { /* the condition */
        uint8_t c = fz_u8(&s->in);
        kiln_value lt =
            kiln_compare(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, (double)b->bound), KILN_CMP_LT);
        /* now and then also a drawn value, which must be a bool scalar; the counter's bound
         * stays, so the loop ends whatever the value holds */
        outs[0] = c < 16 && s->n_vals ? kiln_logical_and(g, s->vals[c % s->n_vals].v, lt) : lt;
        return 1;
    }
    int first = 0, skip = b->kind == BODY_FORI; /* fori: in[0] is the index, no output */
    if (b->kind == BODY_WHILE)
        outs[first++] = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 1));
    for (int j = first; j < b->n_carry && j + skip < n_in; j++) {
        fz_val p = {.v = in[j + skip]};
        if (!kiln_value_type(g, p.v, &p.t, &p.rank, p.dims)) return -1;
        outs[j] = pick_like(s, &p).v;
    }
    int n = b->n_carry;
    for (int j = 0; j < b->n_extra; j++, n++)
        outs[n] = j < b->n_want ? pick_like(s, &b->want[j]).v : pick(s).v;
    if (b->kind == BODY_BRANCH && b->calls == 1) /* branch 0: the types the others match */
        for (b->n_want = 0; b->n_want < n && b->n_want < 4; b->n_want++) {
            fz_val *w = &b->want[b->n_want];
            w->v = outs[b->n_want];
            if (!kiln_value_type(g, w->v, &w->t, &w->rank, w->dims)) break;
        }
    return n;
}

/* Every body's kiln_fn: a few steps of the program on the body's graph, its parameters the
 * pool it starts from, the enclosing pools kept aside to capture from. */
static int fz_body_fn(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    fz_body *b = user;
    fz_state *s = b->s;
    b->calls++;
    fz_frame f = {.n_vals = s->n_vals,
                  .newest = s->newest,
                  .n_params = s->n_params,
                  .g = s->g,
                  .up = s->frame};
    memcpy(f.vals, s->vals, sizeof f.vals);
    s->frame = &f, s->g = g, s->n_vals = 0, s->newest = 0, s->depth++;
    s->n_params = FZ_MAX_PARAMS; /* a body's parameters are its carries: make_param makes fulls */
    for (int i = 0; i < n_in; i++) push(s, in[i], LV_LOOSE);
    int steps = fz_int(&s->in, 4);
    for (int i = 0; i < steps && !fz_done(&s->in); i++) {
        uint8_t c = fz_u8(&s->in);
        if (c < 48)
            capture(s, c);
        else
            step(s);
    }
    int n = body_outputs(s, b, n_in, in, outs);
    uint32_t gid = n_in ? in[0].graph : s->n_vals ? s->vals[0].v.graph : 0;
    if (gid && graph_biggest(g, gid) > FZ_BODY_MAX) s->slow = true;
    memcpy(s->vals, f.vals, sizeof f.vals);
    s->frame = f.up, s->g = f.g, s->n_vals = f.n_vals, s->newest = f.newest;
    s->n_params = f.n_params, s->depth--;
    return n;
}

static void push_results(fz_state *s, kiln_status st, int n, const kiln_value *outs) {
    if (st) {
        push(s, (kiln_value){0, 0}, LV_LOOSE); /* the graph must hold the error */
        return;
    }
    for (int i = 0; i < n; i++) push(s, outs[i], LV_LOOSE);
}

/* kiln_while_loop, kiln_fori_loop, kiln_scan, kiln_cond and kiln_switch on drawn operands,
 * with bodies that run a few steps of the program themselves (control ops among them, to
 * FZ_MAX_DEPTH) and capture values from every enclosing graph. Loops end within
 * FZ_MAX_TRIPS iterations, or the program is built but not run. */
static void op_control(fz_state *s) {
    if (s->depth >= FZ_MAX_DEPTH) return;
    kiln_graph *g = s->g;
    uint8_t b = fz_u8(&s->in);
    fz_body body = {.s = s};
    kiln_value ins[8], outs[8] = {{0, 0}};
    int n = 0, n_outs = 0;
    kiln_status st;
    switch (b % 5) {
    case 0: /* while: a counter, then up to two carries */
        n = 1 + fz_int(&s->in, 3);
        ins[0] = kiln_scalar(g, KILN_DTYPE_I32, 0);
        for (int i = 1; i < n; i++) ins[i] = pick(s).v;
        body.kind = BODY_WHILE, body.n_carry = n, body.bound = fz_int(&s->in, FZ_MAX_TRIPS + 1);
        /* the condition is traced first (calls == 1), then the body */
        st = kiln_while_loop(g, fz_body_fn, fz_body_fn, &body, n, ins, outs);
        push_results(s, st, n, outs);
        return;
    case 1: { /* fori_loop: the index from lower, up to two carries */
        int64_t lo = draw_attr(s, -3, 8), hi, d = fz_int(&s->in, FZ_MAX_TRIPS + 2) - 1;
        if (__builtin_add_overflow(lo, d, &hi)) hi = lo; /* a huge lo: the builder refuses it */
        n = fz_int(&s->in, 3);
        for (int i = 0; i < n; i++) ins[i] = pick(s).v;
        body.kind = BODY_FORI, body.n_carry = n;
        st = kiln_fori_loop(g, lo, hi, fz_body_fn, &body, n, ins, outs);
        push_results(s, st, n, outs);
        return;
    }
    case 2: { /* scan: up to two carries and two scanned arrays, a given length or none */
        int n_carry = fz_int(&s->in, 3), n_xs = fz_int(&s->in, 3);
        fz_val x0 = {.rank = 0};
        for (int i = 0; i < n_carry + n_xs; i++) {
            fz_val v = pick(s);
            if (i == n_carry) x0 = v;
            ins[i] = v.v;
        }
        kiln_scan_options o = {.length = b & 0x10 ? fz_int(&s->in, 6) : 0, .reverse = b & 0x20};
        int64_t trips = o.length ? o.length : n_xs && x0.rank > 0 ? x0.dims[0] : 0;
        if (trips > FZ_MAX_TRIPS || trips < 0) s->slow = true;
        body.kind = BODY_SCAN, body.n_carry = n_carry, body.n_extra = fz_int(&s->in, 3);
        st = kiln_scan(g, fz_body_fn, &body, n_carry, ins, n_xs, ins + n_carry, &o, &n_outs, outs);
        push_results(s, st, n_outs, outs);
        return;
    }
    default: { /* cond on a predicate, switch on an index: drawn from a value's sum */
        fz_val x = pick(s);
        kiln_value sum = kiln_reduce_sum(g, kiln_convert(g, x.v, KILN_DTYPE_F32), 0, NULL, false);
        int n_br = 1 + fz_int(&s->in, 3);
        n = fz_int(&s->in, 3);
        for (int i = 0; i < n; i++) ins[i] = pick(s).v;
        body.kind = BODY_BRANCH, body.n_extra = 1 + fz_int(&s->in, 2);
        kiln_fn fns[3] = {fz_body_fn, fz_body_fn, fz_body_fn};
        if (b % 5 == 3) {
            kiln_value p =
                b & 0x20 ? x.v /* any value: often no bool scalar */
                         : kiln_compare(g, sum, kiln_scalar(g, KILN_DTYPE_F32, 0), KILN_CMP_GT);
            st = kiln_cond(g, p, fz_body_fn, fz_body_fn, &body, n, ins, &n_outs, outs);
        } else {
            kiln_value ix = kiln_convert(g, sum, b & 0x20 ? KILN_DTYPE_I64 : KILN_DTYPE_I32);
            st = kiln_switch(g, ix, n_br, fns, &body, n, ins, &n_outs, outs);
        }
        push_results(s, st, n_outs, outs);
        return;
    }
    }
}

static void step(fz_state *s) {
    static void (*const ops[])(fz_state *) = {op_source,
                                              op_source,
                                              op_unary,
                                              op_unary,
                                              op_binary,
                                              op_binary,
                                              op_compare_select_convert,
                                              op_broadcast,
                                              op_reshape,
                                              op_transpose,
                                              op_slice,
                                              op_pad,
                                              op_concatenate,
                                              op_reduce,
                                              op_dot,
                                              op_gather,
                                              op_index,
                                              op_composite,
                                              op_rev_split,
                                              op_dynamic,
                                              op_control,
                                              op_gather_dims,
                                              op_linalg};
    uint8_t b = fz_u8(&s->in);
    if (b == 255) kiln_graph_at(s->g, b % 2 ? "fuzz.c" : NULL, (int)fz_u8(&s->in) - 8);
    ops[b % (sizeof ops / sizeof ops[0])](s);
}

/* --------------------------------------------------------- evaluating ---- */

static int64_t elements(const fz_val *x) {
    int64_t n = 1;
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] < 0 || __builtin_mul_overflow(n, x->dims[i], &n)) return INT64_MAX;
    return n;
}

static int64_t graph_biggest(kiln_graph *g, uint32_t gid) {
    int64_t biggest = 0; /* huge dims beside a 0 are evaluated */
    for (int id = 1; gid && id <= kiln_graph_num_nodes(g); id++) {
        fz_val x = {.v = {gid, (uint32_t)id}};
        if (!kiln_value_type(g, x.v, &x.t, &x.rank, x.dims)) continue;
        int64_t n = elements(&x);
        biggest = n > biggest ? n : biggest;
    }
    return biggest;
}

/* Ordinal of a float's bits, so that neighbours differ by 1 across zero. */
static int64_t ordinal(double v, kiln_dtype t) {
    if (t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16) { /* v is one of the dtype's values */
        uint16_t h = t == KILN_DTYPE_BF16 ? kn_f32_to_bf16((float)v) : kn_f32_to_f16((float)v);
        return h & 0x8000u ? -(int64_t)(h & 0x7fffu) : h;
    }
    if (t == KILN_DTYPE_F32) {
        float f = (float)v;
        int32_t i;
        memcpy(&i, &f, 4);
        return i < 0 ? -(int64_t)(i & 0x7fffffff) : i;
    }
    int64_t i;
    memcpy(&i, &v, 8);
    return i < 0 ? -(i & INT64_MAX) : i;
}

static bool agree(double got, double want, kiln_dtype t, int lv) {
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    if (got == want) return true; /* +0 and -0 as well */
    if (lv != LV_ULP) return false;
    int64_t d = ordinal(got, t) - ordinal(want, t);
    return d >= -FZ_ULP_BOUND && d <= FZ_ULP_BOUND;
}

static void compare_output(const kiln_array *got, const kiln_array *want, int lv, int i) {
    kiln_dtype t = kiln_array_dtype(want);
    size_t n = kiln_array_nbytes(want);
    if (kiln_array_dtype(got) != t || kiln_array_nbytes(got) != n) {
        fprintf(stderr, "output %d: compiled and reference types differ\n", i);
        abort();
    }
    unsigned char *a = malloc(n ? n : 1), *b = malloc(n ? n : 1);
    kiln_array_copy_to_host(got, a, n);
    kiln_array_copy_to_host(want, b, n);
    for (int64_t k = 0; k < kiln_array_size(want); k++) {
        double x = cmp_elem(a, t, k), y = cmp_elem(b, t, k);
        bool ok = is_real(t) ? agree(x, y, t, lv)
                             : !memcmp(a + k * kiln_dtype_itemsize(t),
                                       b + k * kiln_dtype_itemsize(t), kiln_dtype_itemsize(t));
        if (!ok) {
            fprintf(stderr, "output %d element %lld: compiled %.9g, reference %.9g (%s)\n", i,
                    (long long)k, x, y, lv == LV_ULP ? "within ulps expected" : "exact expected");
            abort();
        }
    }
    free(a), free(b);
}

static void must(kiln_status s, const char *what) {
    if (s == KILN_STATUS_OK || s == KILN_STATUS_HOST_OOM || s == KILN_STATUS_DEVICE_OOM) return;
    fprintf(stderr, "%s failed on a finished graph: %s: %s\n", what, kiln_status_name(s),
            kiln_last_error(fz_ctx));
    abort();
}

static void evaluate(fz_state *s, int n_out, const fz_val *outs, bool compile, uint64_t seed) {
    kiln_array *args[FZ_MAX_PARAMS] = {0}, *want[4] = {0}, *got[4] = {0};
    bool special = seed & 1;
    for (int i = 0; i < s->n_params; i++) {
        const fz_val *p = &s->params[i];
        int64_t n = elements(p);
        void *buf = malloc((size_t)(n ? n : 1) * kiln_dtype_itemsize(p->t));
        if (special)
            test_fill_special(p->t, n, buf, &seed);
        else
            test_fill_uniform(p->t, n, buf, &seed);
        kiln_status st = kiln_array_create(fz_ctx, p->t, p->rank, p->dims, buf, &args[i]);
        free(buf);
        must(st, "kiln_array_create");
        if (st) goto out;
    }
    if (compile) {
        kiln_executable *e = NULL;
        kiln_compile_options o = {.disable_fusion = seed % 7 == 0, .keep_ir = true};
        kiln_status st = kiln_compile(s->g, &o, &e);
        must(st, "kiln_compile");
        int ok = 1;
        if (!st) must(cmp_run_planned(fz_ctx, e, s->n_params, args, n_out, got, &ok), "run");
        kiln_executable_destroy(e);
        if (!ok) abort(); /* the plan was unsound or the peak differed (printed above) */
    }
    kiln_status st = kiln_interpret(s->g, s->n_params, args, n_out, want);
    must(st, "kiln_interpret");
    for (int i = 0; i < n_out && compile && !st && got[0]; i++)
        if (outs[i].lv != LV_LOOSE) compare_output(got[i], want[i], outs[i].lv, i);
out:
    for (int i = 0; i < n_out; i++) kiln_array_destroy(want[i]), kiln_array_destroy(got[i]);
    for (int i = 0; i < s->n_params; i++) kiln_array_destroy(args[i]);
}

/* ------------------------------------------------------------ gradients ---- */

/* Differentiates the sum of the newest float value with respect to the float parameters
 * (or a float intermediate): the gradients are pushed, so they become the outputs. */
static void add_grad(fz_state *s) {
    int y = -1;
    for (int k = s->n_vals - 1; k >= 0 && y < 0; k--)
        if (is_float(s->vals[k].t)) y = k;
    if (y < 0) return;
    kiln_value loss = kiln_reduce_sum(s->g, s->vals[y].v, 0, NULL, false);
    push(s, loss, LV_LOOSE);
    kiln_value wrt[FZ_MAX_PARAMS];
    int n = 0;
    for (int i = 0; i < s->n_params; i++)
        if (is_float(s->params[i].t)) wrt[n++] = s->params[i].v;
    for (int k = 0; k < s->n_vals && n == 0; k++) /* no float parameter: an intermediate */
        if (is_float(s->vals[k].t) && k != y) wrt[n++] = s->vals[k].v;
    if (n == 0) wrt[n++] = s->vals[y].v;
    kiln_value grads[FZ_MAX_PARAMS];
    kiln_status st = kiln_grad(s->g, loss, n, wrt, grads);
    if (st) {
        if (!kiln_graph_error(s->g)[0]) {
            fprintf(stderr, "kiln_grad failed without a message\n");
            abort();
        }
        return;
    }
    for (int i = 0; i < n && i < 3; i++) push(s, grads[i], LV_LOOSE);
}

/* ------------------------------------------------------------ the target ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char dir[64], err[512];
    snprintf(dir, sizeof dir, "/tmp/kiln-fuzz-cache-%u", (unsigned)geteuid());
    mkdir(dir, 0700);
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .num_threads = 2};
    if (kiln_context_create(&o, &fz_ctx, err, sizeof err)) {
        fprintf(stderr, "fuzz_builder: cannot create a context: %s\n", err);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fz_state s; /* large; one input at a time */
    memset(&s, 0, sizeof s);
    s.in = (fz_bytes){data, size, 0};
    uint8_t control = fz_u8(&s.in);
    char name[80];
    if (control & 0x80)
        fz_string(&s.in, name, 64);
    else
        snprintf(name, sizeof name, "fuzz");
    if (kiln_graph_create(fz_ctx, name, &s.g)) return 0;
    for (int i = 0; i < FZ_MAX_STEPS && !fz_done(&s.in); i++) step(&s);
    if (control & 0x40) add_grad(&s);

    int n_out = s.n_vals ? 1 + (control >> 4 & 3) : 0;
    if (n_out > s.n_vals) n_out = s.n_vals;
    fz_val outs[4];
    kiln_value ov[4];
    for (int i = 0; i < n_out; i++) outs[i] = s.vals[s.n_vals - 1 - i], ov[i] = outs[i].v;
    kiln_status builder = kiln_graph_status(s.g);
    kiln_status st = kiln_graph_finish(s.g, n_out, ov);
    if (builder && st != builder) {
        fprintf(stderr, "kiln_graph_finish returned %s, not the builder's first error %s\n",
                kiln_status_name(st), kiln_status_name(builder));
        abort();
    }
    if (st && !kiln_last_error(fz_ctx)[0]) {
        fprintf(stderr, "kiln_graph_finish failed without a message\n");
        abort();
    }
    if (!st) {
        char *text = kiln_graph_to_string(s.g);
        if (text && getenv("KILN_FUZZ_PRINT")) fprintf(stderr, "%s\n", text); /* triage */
        kiln_string_free(fz_ctx, text);
        /* over every node: kiln_grad makes nodes the fuzzer never saw */
        int64_t biggest = graph_biggest(s.g, s.n_vals ? s.vals[0].v.graph : 0);
        const char *skip = getenv("KILN_FUZZ_SKIP_HUGE"), *cc = getenv("KILN_FUZZ_COMPILE");
        bool skip_huge = s.huge && skip && !strcmp(skip, "1");
        bool compile = (control & 0x0f) == 0x0f && biggest <= FZ_COMPILE_MAX &&
                       kiln_graph_num_nodes(s.g) <= 40 && !(cc && !strcmp(cc, "0"));
        if (biggest <= FZ_MAX_ELEMENTS && !skip_huge && !s.slow)
            evaluate(&s, n_out, outs, compile, (uint64_t)size * 0x9e3779b97f4a7c15ull + control);
    }
    kiln_graph_destroy(s.g);
    return 0;
}
