/* test_index_ops.c — kiln_take, kiln_take_along_axis, kiln_stack, kiln_split,
 * kiln_argmax/argmin, kiln_cumsum, kiln_one_hot and kiln_make_causal_mask
 * (src/trace/index_ops.c):
 *  - the reference interpreter against small cases whose values were computed once with
 *    JAX 0.10.2 (bench/.venv, jax_enable_x64) and are written here (fill values, negative
 *    indices, NaN in argmax/argmin, ties, the one-hot of out-of-range indices, ...);
 *  - compiled against the reference on random shapes, axes, modes and indices, zero-size
 *    and rank-0 cases included, held to the memory plan (cmp_graph);
 *  - that cumsum is one scan kernel that runs in place over a dying operand, and one_hot
 *    one kernel with its consumer;
 *  - every builder error: status, the op's name, the operands' types and the bad argument;
 *  - every host allocation of build + compile + run failed in turn.
 * Gradients are test_autodiff.c's (its per-op harness). */
#include "compare.h"
#include "fault.h"
#include "ir/ir.h"

#include <math.h>
#include <stdint.h>

static kiln_context *C;
static uint64_t seed;

static kiln_graph *new_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "t", &g));
    return g;
}

static kiln_value cst_i(kiln_graph *g, kiln_dtype t, int rank, const int64_t *dims,
                        const int64_t *v) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        if (t == KILN_DTYPE_I32)
            ((int32_t *)buf)[i] = (int32_t)v[i];
        else
            ((int64_t *)buf)[i] = v[i];
    }
    kiln_value r = kiln_constant(g, t, rank, dims, buf);
    free(buf);
    return r;
}

static kiln_value cst_d(kiln_graph *g, kiln_dtype t, int rank, const int64_t *dims,
                        const double *v) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case KILN_DTYPE_F32: ((float *)buf)[i] = (float)v[i]; break;
        case KILN_DTYPE_F64: ((double *)buf)[i] = v[i]; break;
        case KILN_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v[i]; break;
        case KILN_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v[i]; break;
        default: ((uint8_t *)buf)[i] = v[i] != 0; break;
        }
    }
    kiln_value r = kiln_constant(g, t, rank, dims, buf);
    free(buf);
    return r;
}

/* Finishes g with one output (no parameters), interprets it and checks its type and
 * values (exact, NaN equal to NaN; i64 compared as int64). Destroys g. */
static void expect(kiln_graph *g, kiln_value out, const char *what, kiln_dtype t, int rank,
                   const int64_t *dims, const double *want) {
    kiln_status s = kiln_graph_finish(g, 1, &out);
    CHECK_MSG(s == KILN_STATUS_OK, "%s: %s", what, kiln_last_error(C));
    kiln_array *r = NULL;
    if (!s) CHECK_OK(C, kiln_interpret(g, 0, NULL, 1, &r));
    if (r) {
        CHECK_MSG(kiln_array_dtype(r) == t, "%s: dtype %s", what,
                  kiln_dtype_name(kiln_array_dtype(r)));
        CHECK_MSG(kiln_array_rank(r) == rank, "%s: rank %d", what, kiln_array_rank(r));
        int64_t n = 1;
        for (int i = 0; i < rank && i < kiln_array_rank(r); i++) {
            CHECK_MSG(kiln_array_dim(r, i) == dims[i], "%s: dim %d is %lld", what, i,
                      (long long)kiln_array_dim(r, i));
            n *= dims[i];
        }
        size_t nb = kiln_array_nbytes(r);
        void *buf = malloc(nb ? nb : 1);
        kiln_array_copy_to_host(r, buf, nb);
        for (int64_t i = 0; i < n && (size_t)i * kiln_dtype_itemsize(t) < nb; i++) {
            double got = cmp_elem(buf, t, i);
            bool ok = t == KILN_DTYPE_I64 ? ((int64_t *)buf)[i] == (int64_t)want[i]
                                          : (isnan(got) && isnan(want[i])) || got == want[i];
            CHECK_MSG(ok, "%s: element %lld is %.17g, want %.17g", what, (long long)i, got,
                      want[i]);
        }
        free(buf);
        kiln_array_destroy(r);
    }
    kiln_graph_destroy(g);
}

/* ------------------------------------------------ values from JAX ---- */

static const int64_t d5[] = {5}, d6[] = {6}, d23[] = {2, 3}, d21[] = {2, 1};
static const kiln_dtype data_types[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_I32,
                                        KILN_DTYPE_I64};

/* Promotion asked for (kiln_promote), then the op: what JAX does implicitly, with the
 * values JAX 0.10.2 (x64 on) gave: int64 [2^40 + 1, -7, 2^24 + 1] + float32 [0.5, 0.25, 1]
 * is float32 [2^40, -6.75, 2^24], and bool [1, 0, 1] * int32 [3, 4, 5] int32 [3, 0, 5]. */
static void jax_promote(void) {
    static const int64_t n[] = {((int64_t)1 << 40) + 1, -7, (1 << 24) + 1};
    static const double x[] = {0.5, 0.25, 1.0}, want[] = {1099511627776.0, -6.75, 16777216.0};
    const int64_t d3[] = {3};
    kiln_graph *g = new_graph();
    kiln_value v[2] = {cst_i(g, KILN_DTYPE_I64, 1, d3, n), cst_d(g, KILN_DTYPE_F32, 1, d3, x)};
    CHECK_OK(C, kiln_promote(g, 2, v, v));
    expect(g, kiln_add(g, v[0], v[1]), "promote(i64, f32) + ", KILN_DTYPE_F32, 1, d3, want);
    static const double b[] = {1, 0, 1}, i[] = {3, 4, 5}, want2[] = {3, 0, 5};
    g = new_graph();
    v[0] = cst_d(g, KILN_DTYPE_BOOL, 1, d3, b), v[1] = cst_d(g, KILN_DTYPE_I32, 1, d3, i);
    CHECK_OK(C, kiln_promote(g, 2, v, v));
    expect(g, kiln_mul(g, v[0], v[1]), "promote(bool, i32) *", KILN_DTYPE_I32, 1, d3, want2);
}

static void jax_take(void) {
    /* jnp.take(jnp.arange(5.), [-6, -1, 0, 4, 5, 7], mode=...) */
    static const int64_t ix[] = {-6, -1, 0, 4, 5, 7};
    static const double x5[] = {0, 1, 2, 3, 4};
    static const struct {
        kiln_gather_mode mode;
        const char *name;
        double want[6];
    } m[] = {
        {KILN_GATHER_FILL, "fill", {NAN, 4, 0, 4, NAN, NAN}},
        {KILN_GATHER_CLIP, "clip", {0, 0, 0, 4, 4, 4}},
        {KILN_GATHER_WRAP, "wrap", {4, 4, 0, 4, 0, 2}},
    };
    for (int i = 0; i < 3; i++) {
        for (int it = 0; it < 2; it++) {
            kiln_graph *g = new_graph();
            kiln_dtype idt = it ? KILN_DTYPE_I64 : KILN_DTYPE_I32;
            kiln_value r = kiln_take(g, cst_d(g, KILN_DTYPE_F32, 1, d5, x5),
                                     cst_i(g, idt, 1, d6, ix), 0, m[i].mode);
            char what[64];
            snprintf(what, sizeof what, "take %s, %s indices", m[i].name, kiln_dtype_name(idt));
            expect(g, r, what, KILN_DTYPE_F32, 1, d6, m[i].want);
        }
    }
    /* fill values by dtype: jnp.take(arange(5, int32), [-6, 5]) -> INT32_MIN twice; int64
     * gives INT64_MIN; bool gives True */
    kiln_graph *g = new_graph();
    int64_t d2[] = {2};
    kiln_value r =
        kiln_take(g, cst_d(g, KILN_DTYPE_I32, 1, d5, x5),
                  cst_i(g, KILN_DTYPE_I32, 1, d2, (const int64_t[]){-6, 5}), 0, KILN_GATHER_FILL);
    expect(g, r, "take fill i32", KILN_DTYPE_I32, 1, d2, (const double[]){INT32_MIN, INT32_MIN});
    g = new_graph();
    r = kiln_take(g, cst_d(g, KILN_DTYPE_I64, 1, d5, x5),
                  cst_i(g, KILN_DTYPE_I64, 1, d2, (const int64_t[]){5, -5}), 0, KILN_GATHER_FILL);
    expect(g, r, "take fill i64", KILN_DTYPE_I64, 1, d2, (const double[]){(double)INT64_MIN, 0});
    g = new_graph();
    r = kiln_take(g, cst_d(g, KILN_DTYPE_BOOL, 1, d5, (const double[]){0, 0, 0, 1, 0}),
                  cst_i(g, KILN_DTYPE_I32, 1, d2, (const int64_t[]){5, 3}), 0, KILN_GATHER_FILL);
    expect(g, r, "take fill bool", KILN_DTYPE_BOOL, 1, d2, (const double[]){1, 1});

    /* jnp.take(arange(6.).reshape(2, 3), [[0, 2]], axis=1) -> [[[0, 2]], [[3, 5]]], [2,1,2];
     * axis=-1 is the same; a rank-0 index drops the axis: take(arange(3.), 1) = 1. */
    for (int neg = 0; neg < 2; neg++) {
        g = new_graph();
        r = kiln_take(g, cst_d(g, KILN_DTYPE_F64, 2, d23, (const double[]){0, 1, 2, 3, 4, 5}),
                      cst_i(g, KILN_DTYPE_I32, 2, (const int64_t[]){1, 2}, (const int64_t[]){0, 2}),
                      neg ? -1 : 1, KILN_GATHER_FILL);
        expect(g, r, "take axis 1", KILN_DTYPE_F64, 3, (const int64_t[]){2, 1, 2},
               (const double[]){0, 2, 3, 5});
    }
    g = new_graph();
    r = kiln_take(g, cst_d(g, KILN_DTYPE_F64, 2, d23, (const double[]){0, 1, 2, 3, 4, 5}),
                  cst_i(g, KILN_DTYPE_I64, 0, NULL, (const int64_t[]){1}), 1, KILN_GATHER_CLIP);
    expect(g, r, "take rank-0 index", KILN_DTYPE_F64, 1, (const int64_t[]){2},
           (const double[]){1, 4});
    /* a middle axis: [2,3,2] along axis 1 with [2, -1] (fill) */
    g = new_graph();
    double v12[12];
    for (int i = 0; i < 12; i++) v12[i] = i;
    r = kiln_take(g, cst_d(g, KILN_DTYPE_F32, 3, (const int64_t[]){2, 3, 2}, v12),
                  cst_i(g, KILN_DTYPE_I32, 1, (const int64_t[]){2}, (const int64_t[]){2, -1}), 1,
                  KILN_GATHER_FILL);
    expect(g, r, "take middle axis", KILN_DTYPE_F32, 3, (const int64_t[]){2, 2, 2},
           (const double[]){4, 5, 4, 5, 10, 11, 10, 11});
}

static void jax_take_along_axis(void) {
    static const double x6[] = {0, 1, 2, 3, 4, 5};
    static const int64_t ix[] = {-1, 3};
    /* jnp.take_along_axis(arange(6.).reshape(2,3), [[-1],[3]], axis=1): [[2],[nan]];
     * mode="clip": [[2],[5]] (unlike jnp.take, a negative index wraps once before it is
     * clipped); wrap (kiln's): [[2],[3]] */
    static const struct {
        kiln_gather_mode mode;
        double want[2];
    } m[] = {{KILN_GATHER_FILL, {2, NAN}}, {KILN_GATHER_CLIP, {2, 5}}, {KILN_GATHER_WRAP, {2, 3}}};
    for (int i = 0; i < 3; i++) {
        kiln_graph *g = new_graph();
        kiln_value r = kiln_take_along_axis(g, cst_d(g, KILN_DTYPE_F32, 2, d23, x6),
                                            cst_i(g, KILN_DTYPE_I32, 2, d21, ix), 1, m[i].mode);
        expect(g, r, "take_along_axis", KILN_DTYPE_F32, 2, d21, m[i].want);
    }
    /* indices [[0,1,2]] broadcast over x's rows: [[0,1,2],[3,4,5]] */
    kiln_graph *g = new_graph();
    kiln_value r = kiln_take_along_axis(
        g, cst_d(g, KILN_DTYPE_F32, 2, d23, x6),
        cst_i(g, KILN_DTYPE_I64, 2, (const int64_t[]){1, 3}, (const int64_t[]){0, 1, 2}), -1,
        KILN_GATHER_FILL);
    expect(g, r, "take_along_axis broadcast indices", KILN_DTYPE_F32, 2, d23, x6);
    /* x broadcast over the indices' rows: x [1,3], indices [2,2] along axis 1 */
    g = new_graph();
    r = kiln_take_along_axis(
        g, cst_d(g, KILN_DTYPE_I32, 2, (const int64_t[]){1, 3}, (const double[]){7, 8, 9}),
        cst_i(g, KILN_DTYPE_I32, 2, (const int64_t[]){2, 2}, (const int64_t[]){2, 0, 1, 1}), 1,
        KILN_GATHER_CLIP);
    expect(g, r, "take_along_axis broadcast x", KILN_DTYPE_I32, 2, (const int64_t[]){2, 2},
           (const double[]){9, 7, 8, 8});
    /* along axis 0 (a sort permutation applied to columns) */
    g = new_graph();
    r = kiln_take_along_axis(g, cst_d(g, KILN_DTYPE_F64, 2, d23, x6),
                             cst_i(g, KILN_DTYPE_I32, 2, d23, (const int64_t[]){1, 0, 1, 0, 1, 0}),
                             0, KILN_GATHER_FILL);
    expect(g, r, "take_along_axis axis 0", KILN_DTYPE_F64, 2, d23,
           (const double[]){3, 1, 5, 0, 4, 2});
    /* jnp.take_along_axis(arange(5.), [-6, -1, -5, 7], axis=0, mode="clip") =
     * [0, 4, 0, 4]; the default (fill) gives [nan, 4, 0, nan] */
    static const int64_t iv[] = {-6, -1, -5, 7};
    for (int fill = 0; fill < 2; fill++) {
        g = new_graph();
        r = kiln_take_along_axis(g, cst_d(g, KILN_DTYPE_F32, 1, d5, x6),
                                 cst_i(g, KILN_DTYPE_I64, 1, (const int64_t[]){4}, iv), 0,
                                 fill ? KILN_GATHER_FILL : KILN_GATHER_CLIP);
        expect(g, r, "take_along_axis negatives", KILN_DTYPE_F32, 1, (const int64_t[]){4},
               fill ? (const double[]){NAN, 4, 0, NAN} : (const double[]){0, 4, 0, 4});
    }
}

static void jax_stack(void) {
    /* jnp.stack([a, b], axis=-1) of two [2,3] -> [2,3,2]; axis=0 -> [2,2,3] */
    kiln_graph *g = new_graph();
    kiln_value xs[2] = {cst_d(g, KILN_DTYPE_F32, 2, d23, (const double[]){0, 1, 2, 3, 4, 5}),
                        cst_d(g, KILN_DTYPE_F32, 2, d23, (const double[]){10, 11, 12, 13, 14, 15})};
    expect(g, kiln_stack(g, 2, xs, -1), "stack -1", KILN_DTYPE_F32, 3, (const int64_t[]){2, 3, 2},
           (const double[]){0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15});
    g = new_graph();
    xs[0] = cst_d(g, KILN_DTYPE_I64, 2, d23, (const double[]){0, 1, 2, 3, 4, 5});
    xs[1] = cst_d(g, KILN_DTYPE_I64, 2, d23, (const double[]){10, 11, 12, 13, 14, 15});
    expect(g, kiln_stack(g, 2, xs, 0), "stack 0", KILN_DTYPE_I64, 3, (const int64_t[]){2, 2, 3},
           (const double[]){0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
    /* scalars -> a vector; one value -> a new axis of 1 */
    g = new_graph();
    kiln_value sc[3] = {kiln_scalar(g, KILN_DTYPE_F64, 1), kiln_scalar(g, KILN_DTYPE_F64, 2),
                        kiln_scalar(g, KILN_DTYPE_F64, 3)};
    expect(g, kiln_stack(g, 3, sc, 0), "stack scalars", KILN_DTYPE_F64, 1, (const int64_t[]){3},
           (const double[]){1, 2, 3});
    g = new_graph();
    xs[0] = cst_d(g, KILN_DTYPE_F32, 2, d23, (const double[]){0, 1, 2, 3, 4, 5});
    expect(g, kiln_stack(g, 1, xs, 1), "stack one", KILN_DTYPE_F32, 3, (const int64_t[]){2, 1, 3},
           (const double[]){0, 1, 2, 3, 4, 5});
}

/* jnp.split(x, 3, axis=1) of a [2, 6] -> three [2, 2]; jnp.split(x, [1, 1, 4], axis=-1) ->
 * [2, 1], [2, 0], [2, 3], [2, 2]; of a [3, 2] along axis 0 at [2] -> [2, 2], [1, 2]. */
static void jax_split(void) {
    static const double x[] = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
    static const double want3[3][4] = {{0, 1, 10, 11}, {2, 3, 12, 13}, {4, 5, 14, 15}};
    for (int i = 0; i < 3; i++) {
        kiln_graph *g = new_graph();
        kiln_value p[3];
        CHECK_OK(C, kiln_split(g, cst_d(g, KILN_DTYPE_F32, 2, (const int64_t[]){2, 6}, x), 3, NULL,
                               1, p));
        expect(g, p[i], "split 3", KILN_DTYPE_F32, 2, (const int64_t[]){2, 2}, want3[i]);
    }
    static const int64_t at[] = {1, 1, 4}, width[] = {1, 0, 3, 2};
    static const double want4[4][6] = {{0, 10}, {0}, {1, 2, 3, 11, 12, 13}, {4, 5, 14, 15}};
    for (int i = 0; i < 4; i++) {
        kiln_graph *g = new_graph();
        kiln_value p[4];
        CHECK_OK(C, kiln_split(g, cst_d(g, KILN_DTYPE_I64, 2, (const int64_t[]){2, 6}, x), 4, at,
                               -1, p));
        expect(g, p[i], "split at", KILN_DTYPE_I64, 2, (const int64_t[]){2, width[i]}, want4[i]);
    }
    static const double bools[2][4] = {{0, 1, 1, 1}, {1, 1}}; /* x != 0, rows 0-1 and 2 */
    for (int i = 0; i < 2; i++) {
        kiln_graph *g = new_graph();
        kiln_value p[2];
        CHECK_OK(C, kiln_split(g, cst_d(g, KILN_DTYPE_BOOL, 2, (const int64_t[]){3, 2}, x), 2,
                               (const int64_t[]){2}, 0, p));
        expect(g, p[i], "split bool", KILN_DTYPE_BOOL, 2, (const int64_t[]){i ? 1 : 2, 2},
               bools[i]);
    }
}

/* flax.linen.make_causal_mask's values (jnp.tril(jnp.ones((T, S)))): T = 3, S = 4 as bool
 * and as f32 1/0; T > S; and an empty one. */
static void jax_causal_mask(void) {
    static const double tri34[] = {1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0};
    static const double tri32[] = {1, 0, 1, 1, 1, 1};
    kiln_graph *g = new_graph();
    expect(g, kiln_make_causal_mask(g, 3, 4, KILN_DTYPE_BOOL), "causal bool", KILN_DTYPE_BOOL, 2,
           (const int64_t[]){3, 4}, tri34);
    g = new_graph();
    expect(g, kiln_make_causal_mask(g, 3, 4, KILN_DTYPE_F32), "causal f32", KILN_DTYPE_F32, 2,
           (const int64_t[]){3, 4}, tri34);
    g = new_graph();
    expect(g, kiln_make_causal_mask(g, 3, 2, KILN_DTYPE_I32), "causal T > S", KILN_DTYPE_I32, 2,
           (const int64_t[]){3, 2}, tri32);
    g = new_graph();
    expect(g, kiln_make_causal_mask(g, 0, 5, KILN_DTYPE_BOOL), "causal empty", KILN_DTYPE_BOOL, 2,
           (const int64_t[]){0, 5}, tri34);
}

/* split and the causal mask compiled, against the reference: parts of a computed value put
 * to different uses, an uneven split along a middle axis, and a mask applied by where and by
 * a product (one_hot-like: a compare of iotas fused into its consumer). */
static void split_mask_compiled(void) {
    kiln_graph *g = new_graph();
    int64_t d[3] = {3, 7, 5};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d), y = kiln_exp(g, x), p[3], q[1];
    CHECK_OK(C, kiln_split(g, y, 3, (const int64_t[]){2, 6}, 1, p));
    CHECK_OK(C, kiln_split(g, x, 1, NULL, 0, q)); /* one part: x itself, as a slice */
    kiln_value scores =
        kiln_slice(g, x, (const int64_t[]){0, 0, 0}, (const int64_t[]){3, 5, 5}, NULL);
    kiln_value outs[6] = {
        kiln_mul(g, p[0], kiln_scalar(g, KILN_DTYPE_F32, 2)),
        p[1],
        kiln_tanh(g, p[2]),
        kiln_where(g, kiln_make_causal_mask(g, 5, 5, KILN_DTYPE_BOOL), scores,
                   kiln_scalar(g, KILN_DTYPE_F32, -1e9)),
        kiln_mul(g, kiln_make_causal_mask(g, 7, 5, KILN_DTYPE_F32), x),
        q[0],
    };
    CHECK_OK(C, kiln_graph_finish(g, 6, outs));
    kiln_array *a = cmp_random_array(C, KILN_DTYPE_F32, 3, d, &seed);
    CHECK_MSG(cmp_graph(C, g, 1, &a, NULL, 1e-6, NULL), "split and mask: compiled differs");
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
}

static void jax_argmax(void) {
    static const int64_t d4[] = {4}, d3[] = {3}, d1[] = {1};
    struct {
        const char *what;
        bool is_max;
        kiln_dtype t;
        const int64_t *dims;
        double x[4];
        double want;
    } c[] = {
        /* jnp.argmax([1, nan, 3, nan]) = 1; jnp.argmin([1, nan, 0, nan]) = 1 */
        {"argmax NaN", true, KILN_DTYPE_F32, d4, {1, NAN, 3, NAN}, 1},
        {"argmin NaN", false, KILN_DTYPE_F64, d4, {1, NAN, 0, NAN}, 1},
        /* ties: the first; jnp.argmax([3, 1, 3]) = 0, jnp.argmin([1, 0, 0]) = 1 */
        {"argmax tie", true, KILN_DTYPE_I32, d3, {3, 1, 3}, 0},
        {"argmin tie", false, KILN_DTYPE_I64, d3, {1, 0, 0}, 1},
        /* jnp.argmax([-inf, -inf]) = 0; [-0., 0.] are equal: 0 */
        {"argmax -inf", true, KILN_DTYPE_F32, (const int64_t[]){2}, {-INFINITY, -INFINITY}, 0},
        {"argmax -0", true, KILN_DTYPE_F32, (const int64_t[]){2}, {-0.0, 0.0}, 0},
        {"argmin +0", false, KILN_DTYPE_F64, (const int64_t[]){2}, {0.0, -0.0}, 0},
        /* jnp.argmax([True, False, True]) = 0; argmin = 1 */
        {"argmax bool", true, KILN_DTYPE_BOOL, d3, {1, 0, 1}, 0},
        {"argmin bool", false, KILN_DTYPE_BOOL, d3, {1, 0, 1}, 1},
        {"argmax one", true, KILN_DTYPE_F32, d1, {NAN}, 0},
        {"argmin inf", false, KILN_DTYPE_F32, d3, {INFINITY, 2, -INFINITY}, 2},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        kiln_graph *g = new_graph();
        kiln_value x = cst_d(g, c[i].t, 1, c[i].dims, c[i].x);
        kiln_value r = c[i].is_max ? kiln_argmax(g, x, 0) : kiln_argmin(g, x, -1);
        expect(g, r, c[i].what, KILN_DTYPE_I32, 0, NULL, &c[i].want);
    }
    /* along an axis of a matrix: jnp.argmax([[0,5,5],[7,1,nan]], axis=1) = [1, 2];
     * axis 0 = [1, 0, 1] */
    static const double m[] = {0, 5, 5, 7, 1, NAN};
    kiln_graph *g = new_graph();
    expect(g, kiln_argmax(g, cst_d(g, KILN_DTYPE_F32, 2, d23, m), 1), "argmax rows", KILN_DTYPE_I32,
           1, (const int64_t[]){2}, (const double[]){1, 2});
    g = new_graph();
    expect(g, kiln_argmax(g, cst_d(g, KILN_DTYPE_F32, 2, d23, m), 0), "argmax columns",
           KILN_DTYPE_I32, 1, (const int64_t[]){3}, (const double[]){1, 0, 1});
    g = new_graph();
    expect(g, kiln_argmin(g, cst_d(g, KILN_DTYPE_F32, 2, d23, m), 0), "argmin columns",
           KILN_DTYPE_I32, 1, (const int64_t[]){3}, (const double[]){0, 1, 1});
    /* jnp.argmax(zeros((0, 3)), axis=1) is an empty i32[0] */
    g = new_graph();
    expect(g, kiln_argmax(g, kiln_full(g, KILN_DTYPE_F32, 2, (const int64_t[]){0, 3}, 0), 1),
           "argmax of no rows", KILN_DTYPE_I32, 1, (const int64_t[]){0}, NULL);
}

static void jax_cumsum(void) {
    /* jnp.cumsum([1, inf, 2]) = [1, inf, inf]; lax.cumsum([1,2,3], reverse=True) = [6,5,3] */
    kiln_graph *g = new_graph();
    expect(g,
           kiln_cumsum(
               g,
               cst_d(g, KILN_DTYPE_F32, 1, d5 + 0, (const double[]){1, INFINITY, 2, -INFINITY, 1}),
               0, false),
           "cumsum inf", KILN_DTYPE_F32, 1, d5, (const double[]){1, INFINITY, INFINITY, NAN, NAN});
    g = new_graph();
    expect(g,
           kiln_cumsum(g,
                       cst_d(g, KILN_DTYPE_I32, 1, (const int64_t[]){3}, (const double[]){1, 2, 3}),
                       -1, true),
           "cumsum reverse", KILN_DTYPE_I32, 1, (const int64_t[]){3}, (const double[]){6, 5, 3});
    /* int32 wraps as in JAX: cumsum([2^31 - 1, 1, 1]) = [2^31 - 1, -2^31, -2^31 + 1] */
    g = new_graph();
    expect(g,
           kiln_cumsum(
               g,
               cst_d(g, KILN_DTYPE_I32, 1, (const int64_t[]){3}, (const double[]){INT32_MAX, 1, 1}),
               0, false),
           "cumsum wraps", KILN_DTYPE_I32, 1, (const int64_t[]){3},
           (const double[]){INT32_MAX, INT32_MIN, INT32_MIN + 1.0});
    /* along axis 0 of [2,3] and reversed along axis 1 */
    g = new_graph();
    expect(g,
           kiln_cumsum(g, cst_d(g, KILN_DTYPE_F64, 2, d23, (const double[]){0, 1, 2, 3, 4, 5}), 0,
                       false),
           "cumsum axis 0", KILN_DTYPE_F64, 2, d23, (const double[]){0, 1, 2, 3, 5, 7});
    g = new_graph();
    expect(g,
           kiln_cumsum(g, cst_d(g, KILN_DTYPE_I64, 2, d23, (const double[]){0, 1, 2, 3, 4, 5}), 1,
                       true),
           "cumsum axis 1 reversed", KILN_DTYPE_I64, 2, d23, (const double[]){3, 3, 2, 12, 9, 5});
    /* f32 accumulates in f64 and rounds once: 1 + 2^-24 + 2^-24 is 1 + 2^-23 (a
     * sequential f32 scan would give 1 at every step) */
    g = new_graph();
    double e = ldexp(1, -24);
    expect(g,
           kiln_cumsum(g,
                       cst_d(g, KILN_DTYPE_F32, 1, (const int64_t[]){3}, (const double[]){1, e, e}),
                       0, false),
           "cumsum f32 accumulation", KILN_DTYPE_F32, 1, (const int64_t[]){3},
           (const double[]){1, (float)(1 + e), 1 + 2 * e});
}

/* Long axes: closed forms for 0..n-1 forward (j (j + 1) / 2) and reversed
 * ((n - 1 + j) (n - j) / 2), exact in f32 up to n = 4096 (sums below 2^24). */
static void long_cumsum(void) {
    static const int64_t ns[] = {33, 36, 37, 100, 1000, 4096};
    for (int i = 0; i < 6; i++) {
        int64_t n = ns[i];
        for (int rev = 0; rev < 2; rev++) {
            kiln_dtype t = rev ? KILN_DTYPE_I64 : KILN_DTYPE_F32;
            double *want = malloc((size_t)n * sizeof *want);
            for (int64_t j = 0; j < n; j++)
                want[j] = rev ? (double)(n - 1 + j) * (double)(n - j) / 2 : (double)j * (j + 1) / 2;
            kiln_graph *g = new_graph();
            kiln_value r = kiln_cumsum(g, kiln_iota(g, t, 1, &n, 0), 0, rev);
            char what[64];
            snprintf(what, sizeof what, "cumsum of iota(%lld)%s", (long long)n,
                     rev ? " reversed" : "");
            expect(g, r, what, t, 1, &n, want);
            free(want);
        }
    }
}

/* The scan compiled against the reference, on several axes, ranks and dtypes: rows of
 * 100000, and inner axes wider than the backend's column chunk (CPU_SCAN_CHUNK = 64). */
static void long_cumsum_compiled(void) {
    static const struct {
        int rank, axis;
        int64_t dims[3];
    } c[] = {{2, 1, {3, 70}}, {3, 1, {2, 45, 3}},  {1, 0, {130}},      {3, 0, {40, 2, 2}},
             {2, 0, {33, 1}}, {2, 1, {2, 100000}}, {2, 0, {300, 130}}, {3, 1, {3, 500, 70}}};
    enum { NC = sizeof c / sizeof c[0] };
    kiln_graph *g = new_graph();
    kiln_value outs[2 * NC];
    kiln_array *args[NC];
    for (int i = 0; i < NC; i++) {
        kiln_dtype t = data_types[i % 4];
        kiln_value x = kiln_parameter(g, "x", t, c[i].rank, c[i].dims);
        outs[2 * i] = kiln_cumsum(g, x, c[i].axis, false);
        outs[2 * i + 1] = kiln_cumsum(g, kiln_mul(g, x, x), c[i].axis - c[i].rank, true);
        args[i] = cmp_random_array(C, t, c[i].rank, c[i].dims, &seed);
    }
    CHECK_OK(C, kiln_graph_finish(g, 2 * NC, outs));
    CHECK_MSG(cmp_graph(C, g, NC, args, NULL, 1e-5, NULL), "long cumsums: compiled differs");
    for (int i = 0; i < NC; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void jax_one_hot(void) {
    /* jax.nn.one_hot([-1, 0, 2, 3], 3) = [[0,0,0],[1,0,0],[0,0,1],[0,0,0]] */
    static const double want[] = {0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0};
    static const int64_t ix[] = {-1, 0, 2, 3}, d4[] = {4}, d43[] = {4, 3};
    kiln_dtype ts[] = {KILN_DTYPE_F32, KILN_DTYPE_I32, KILN_DTYPE_BOOL, KILN_DTYPE_F64};
    for (int i = 0; i < 4; i++) {
        kiln_graph *g = new_graph();
        kiln_value r =
            kiln_one_hot(g, cst_i(g, i & 1 ? KILN_DTYPE_I64 : KILN_DTYPE_I32, 1, d4, ix), 3, ts[i]);
        expect(g, r, "one_hot", ts[i], 2, d43, want);
    }
    /* a rank-0 index gives a vector; n = 0 gives an empty last axis */
    kiln_graph *g = new_graph();
    expect(
        g,
        kiln_one_hot(g, cst_i(g, KILN_DTYPE_I32, 0, NULL, (const int64_t[]){1}), 2, KILN_DTYPE_F32),
        "one_hot rank 0", KILN_DTYPE_F32, 1, (const int64_t[]){2}, (const double[]){0, 1});
    g = new_graph();
    expect(g, kiln_one_hot(g, cst_i(g, KILN_DTYPE_I32, 1, d4, ix), 0, KILN_DTYPE_F32),
           "one_hot n=0", KILN_DTYPE_F32, 2, (const int64_t[]){4, 0}, NULL);
}

/* ------------------------------------------- compiled vs reference ---- */

static int rnd(int n) {
    return test_rng_int(&seed, n);
}

static void random_shape(int rank, int64_t *dims, bool allow_zero) {
    for (int i = 0; i < rank; i++) dims[i] = allow_zero && rnd(6) == 0 ? 0 : 1 + rnd(4);
}

/* Indices for an axis of n elements: mostly in range, some negative or past the end. */
static kiln_value random_indices(kiln_graph *g, kiln_dtype t, int rank, const int64_t *dims,
                                 int64_t n) {
    int64_t count = 1;
    for (int i = 0; i < rank; i++) count *= dims[i];
    int64_t *v = malloc((size_t)(count ? count : 1) * sizeof *v);
    for (int64_t i = 0; i < count; i++)
        v[i] = rnd(4) ? rnd((int)n) : rnd((int)(4 * n + 3)) - (2 * n + 1);
    kiln_value r = cst_i(g, t, rank, dims, v);
    free(v);
    return r;
}

/* Appends one random use of every op (and elementwise consumers, so fusion has work) on
 * a new parameter of g to outs; returns how many outputs it added. */
static int random_case(kiln_graph *g, kiln_value *outs, kiln_dtype *t, int *rank, int64_t *dims) {
    *t = data_types[rnd(4)];
    kiln_dtype it = rnd(2) ? KILN_DTYPE_I32 : KILN_DTYPE_I64;
    *rank = 1 + rnd(3);
    random_shape(*rank, dims, true);
    kiln_value x = kiln_parameter(g, "x", *t, *rank, dims);
    kiln_value y = kiln_add(g, x, x); /* a computed operand, not only a parameter */
    int r = *rank, axis = rnd(r);
    int64_t n = dims[axis];
    int no = 0;
    /* take: indices of rank 0..2; an empty axis only with empty indices */
    int irank = rnd(3);
    int64_t idims[KILN_MAX_RANK];
    random_shape(irank, idims, true);
    if (n == 0 && irank) idims[0] = 0;
    if (n == 0 && !irank) irank = 1, idims[0] = 0;
    outs[no++] = kiln_take(g, y, random_indices(g, it, irank, idims, n ? n : 1),
                           axis - (rnd(2) ? r : 0), (kiln_gather_mode)rnd(3));
    /* take_along_axis: indices of x's rank, broadcasting where either side has 1 */
    int64_t jd[KILN_MAX_RANK];
    bool empty_out = false;
    for (int i = 0; i < r; i++) {
        jd[i] = i == axis ? rnd(4) : rnd(3) == 0 ? 1 : dims[i];
        empty_out |= (i == axis ? jd[i] : dims[i] > jd[i] ? dims[i] : jd[i]) == 0;
    }
    if (n == 0 && !empty_out) jd[axis] = 0;
    outs[no++] = kiln_take_along_axis(g, y, random_indices(g, it, r, jd, n ? n : 1), axis,
                                      (kiln_gather_mode)rnd(3));
    kiln_value parts[3] = {x, kiln_neg(g, x), y};
    outs[no++] = kiln_stack(g, 1 + rnd(3), parts, rnd(r + 1));
    outs[no++] = kiln_cumsum(g, kiln_mul(g, y, x), axis, rnd(2));
    if (n > 0) outs[no++] = kiln_add(g, kiln_argmax(g, y, axis), kiln_argmin(g, x, axis));
    outs[no++] = kiln_one_hot(g, random_indices(g, it, irank, idims, 4), 1 + rnd(4), *t);
    return no;
}

/* Several random cases per graph (one compile for all of them), compiled and compared
 * with the reference. KILN_TEST_PROGRAMS sets the number of graphs. */
static void random_graphs(void) {
    enum { PER_GRAPH = 6 };
    int count = 8;
    const char *env = getenv("KILN_TEST_PROGRAMS");
    if (env && *env) count = atoi(env);
    for (int gi = 0; gi < count; gi++) {
        kiln_graph *g = new_graph();
        kiln_value outs[PER_GRAPH * 6];
        kiln_array *args[PER_GRAPH];
        kiln_dtype t[PER_GRAPH];
        int rank[PER_GRAPH], no = 0;
        int64_t dims[PER_GRAPH][KILN_MAX_RANK];
        for (int c = 0; c < PER_GRAPH; c++)
            no += random_case(g, outs + no, &t[c], &rank[c], dims[c]);
        kiln_status s = kiln_graph_finish(g, no, outs);
        CHECK_MSG(s == KILN_STATUS_OK, "graph %d: %s", gi, kiln_last_error(C));
        if (!s) {
            for (int c = 0; c < PER_GRAPH; c++)
                args[c] = cmp_random_array(C, t[c], rank[c], dims[c], &seed);
            CHECK_MSG(cmp_graph(C, g, PER_GRAPH, args, NULL, 1e-5, NULL),
                      "random graph %d: compiled differs from the reference", gi);
            for (int c = 0; c < PER_GRAPH; c++) kiln_array_destroy(args[c]);
        }
        kiln_graph_destroy(g);
    }
}

/* Rank 0 where it is legal: taking with rank-0 indices from a vector, stacking scalars,
 * the one-hot of a scalar, and an argmax that leaves a scalar. */
static void rank0_case(void) {
    kiln_graph *g = new_graph();
    int64_t d4[] = {4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d4);
    kiln_value s = kiln_parameter(g, "s", KILN_DTYPE_F32, 0, NULL);
    kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 0, NULL);
    kiln_value outs[6] = {
        kiln_take(g, x, i, 0, KILN_GATHER_FILL),
        kiln_take(g, x, i, 0, KILN_GATHER_WRAP),
        kiln_stack(g, 2, (kiln_value[]){s, kiln_exp(g, s)}, -1),
        kiln_one_hot(g, i, 3, KILN_DTYPE_F32),
        kiln_argmax(g, x, 0),
        kiln_take_along_axis(
            g, x, kiln_convert(g, kiln_reshape(g, i, 1, (const int64_t[]){1}), KILN_DTYPE_I64), 0,
            KILN_GATHER_CLIP),
    };
    CHECK_OK(C, kiln_graph_finish(g, 6, outs));
    for (int32_t v = -5; v <= 5; v += 3) {
        kiln_array *a[3] = {cmp_random_array(C, KILN_DTYPE_F32, 1, d4, &seed),
                            cmp_random_array(C, KILN_DTYPE_F32, 0, NULL, &seed), NULL};
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_I32, 0, NULL, &v, &a[2]));
        CHECK_MSG(cmp_graph(C, g, 3, a, NULL, 1e-6, NULL), "rank 0, index %d", v);
        for (int k = 0; k < 3; k++) kiln_array_destroy(a[k]);
    }
    kiln_graph_destroy(g);
}

/* 2 * cumsum(exp(x)) of [64, 200]: the exp, the scan (over the exp's buffer: it dies
 * there) and the product are three kernels in one f32 temporary; one_hot is one kernel
 * with its consumer. */
static void fusion(void) {
    kiln_graph *g = new_graph();
    int64_t d[] = {64, 200};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value r =
        kiln_mul(g, kiln_cumsum(g, kiln_exp(g, x), 1, false), kiln_scalar(g, KILN_DTYPE_F32, 2));
    CHECK_OK(C, kiln_graph_finish(g, 1, &r));
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    if (e) {
        kiln_memory_analysis a;
        kiln_executable_get_memory_analysis(e, &a);
        CHECK_MSG(a.temp_bytes == 64 * 200 * 4, "cumsum keeps %llu temporary bytes",
                  (unsigned long long)a.temp_bytes);
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        CHECK_MSG(info.num_kernels == 3, "exp, cumsum, mul are %d kernels", info.num_kernels);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);

    /* take along axis 1 and take_along_axis gather from the parameter where it lies: the
     * transpose and the flattening are index rewrites, not copies (fusion's gather_view) */
    g = new_graph();
    int64_t xd[] = {64, 128}, idd[] = {32};
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value ix = kiln_parameter(g, "i", KILN_DTYPE_I32, 1, idd);
    kiln_value gouts[2] = {kiln_take(g, x, ix, 1, KILN_GATHER_CLIP),
                           kiln_take_along_axis(g, x,
                                                kiln_reshape(g, ix, 2, (const int64_t[]){1, 32}), 1,
                                                KILN_GATHER_WRAP)};
    CHECK_OK(C, kiln_graph_finish(g, 2, gouts));
    e = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    if (e) {
        kiln_memory_analysis a;
        kiln_executable_get_memory_analysis(e, &a);
        CHECK_MSG(a.temp_bytes < 64 * 128 * 4, "the gathers keep %llu temporary bytes",
                  (unsigned long long)a.temp_bytes);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);

    g = new_graph();
    int64_t l[] = {8, 16};
    kiln_value lab = kiln_parameter(g, "labels", KILN_DTYPE_I32, 2, l);
    r = kiln_mul(g, kiln_one_hot(g, lab, 50, KILN_DTYPE_F32), kiln_scalar(g, KILN_DTYPE_F32, 0.9f));
    CHECK_OK(C, kiln_graph_finish(g, 1, &r));
    e = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    if (e) {
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        CHECK_MSG(info.num_kernels == 1, "one_hot is %d kernels", info.num_kernels);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* A gather at an index computed with wrapping integer arithmetic from an iota, in a
 * column-form kernel: gcc 12.2 -O3 failed to compile `reduce_sum(take_rows(x, 2 * iota(n) -
 * 1), axes=[])` for every n >= 17 (an internal compiler error), and -O2 gave wrong rows
 * (print_c.c, wraps_into_gather). Several lengths, multipliers and index dtypes. */
static void computed_gather(void) {
    int64_t two = 2;
    int none = 0;
    kiln_graph *g = new_graph();
    kiln_value outs[24];
    int n_out = 0;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &two);
    static const int64_t ns[] = {4, 17, 33, 64};
    for (int i = 0; i < 4; i++)
        for (int m = 2; m <= 3; m++) {
            kiln_dtype it = m == 2 ? KILN_DTYPE_I32 : KILN_DTYPE_I64;
            kiln_value k = kiln_iota(g, it, 1, &ns[i], 0);
            kiln_value idx =
                kiln_sub(g, kiln_mul(g, k, kiln_scalar(g, it, m)), kiln_scalar(g, it, 1));
            outs[n_out++] = kiln_reduce_sum(g, kiln_take_rows(g, x, idx), 0, &none, false);
            outs[n_out++] = kiln_take_rows(g, x, kiln_neg(g, idx));
        }
    CHECK_OK(C, kiln_graph_finish(g, n_out, outs));
    kiln_array *arg = cmp_random_array(C, KILN_DTYPE_F32, 1, &two, &seed);
    CHECK_MSG(cmp_graph(C, g, 1, &arg, NULL, 0, NULL), "gathers at computed indices differ");
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
}

/* Many calls on one graph, so that the node array grows in the middle of an expansion
 * (fuzz/findings/builder-argmax-dangling-node: argmax and cumsum read their operand's
 * node after appending nodes; under ASan this is a use after free). */
static void growing_graph(void) {
    kiln_graph *g = new_graph();
    int64_t d[] = {3, 4};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value acc = kiln_scalar(g, KILN_DTYPE_I32, 0);
    kiln_value s = x;
    for (int i = 0; i < 120; i++) {
        acc = kiln_add(g, acc, kiln_reduce_sum(g, kiln_argmax(g, s, i % 2), 0, NULL, false));
        s = kiln_cumsum(g, s, i % 2, i % 3 == 0);
        s = kiln_take(g, s, kiln_argmin(g, s, 1), 1, KILN_GATHER_CLIP);
        s = kiln_slice(g, kiln_concatenate(g, 2, (kiln_value[]){s, s}, 1), (const int64_t[]){0, 0},
                       (const int64_t[]){3, 4}, NULL);
    }
    kiln_value outs[2] = {acc, s};
    CHECK_OK(C, kiln_graph_finish(g, 2, outs));
    kiln_graph_destroy(g);
}

/* ----------------------------------------------------------- errors ---- */

/* Runs `call` on a fresh graph holding the values below and checks the sticky error:
 * status and the texts it must contain. */
typedef kiln_value (*err_fn)(kiln_graph *g);
static void expect_error(const char *what, err_fn call, kiln_status want, const char *a,
                         const char *b, const char *c) {
    kiln_graph *g = new_graph();
    kiln_value r = call(g);
    CHECK_MSG(!kiln_value_ok(r), "%s: gave a valid value", what);
    kiln_status s = kiln_graph_finish(g, 1, &r);
    CHECK_MSG(s == want, "%s: status %s, want %s (%s)", what, kiln_status_name(s),
              kiln_status_name(want), kiln_last_error(C));
    const char *msg = kiln_last_error(C);
    const char *need[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (need[i]) CHECK_MSG(strstr(msg, need[i]), "%s: \"%s\" lacks \"%s\"", what, msg, need[i]);
    kiln_graph_destroy(g);
}

#define P(g, t, ...)                                                                               \
    kiln_parameter(g, NULL, t, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),          \
                   (const int64_t[]){__VA_ARGS__})
#define P0(g, t) kiln_parameter(g, NULL, t, 0, NULL)
#define F32      KILN_DTYPE_F32
#define I32      KILN_DTYPE_I32
#define E(name, body)                                                                              \
    static kiln_value name(kiln_graph *g) {                                                        \
        return body;                                                                               \
    }
E(e_take_axis, kiln_take(g, P(g, F32, 2, 3), P(g, I32, 4), 2, KILN_GATHER_FILL))
E(e_take_rank0, kiln_take(g, P0(g, F32), P(g, I32, 4), 0, KILN_GATHER_FILL))
E(e_take_dtype, kiln_take(g, P(g, F32, 2, 3), P(g, F32, 4), 0, KILN_GATHER_CLIP))
E(e_take_mode, kiln_take(g, P(g, F32, 2, 3), P(g, I32, 4), 0, (kiln_gather_mode)7))
E(e_take_empty, kiln_take(g, P(g, F32, 0, 3), P(g, I32, 4), 0, KILN_GATHER_WRAP))
E(e_take_rank,
  kiln_take(g, P(g, F32, 2, 2, 2, 2, 2), P(g, I32, 1, 1, 1, 1, 1), -1, KILN_GATHER_FILL))
E(e_take_none, kiln_take(g, P(g, F32, 2), (kiln_value){0, 0}, 0, KILN_GATHER_FILL))
E(e_tal_rank, kiln_take_along_axis(g, P(g, F32, 2, 3), P(g, I32, 3), 1, KILN_GATHER_FILL))
E(e_tal_bcast, kiln_take_along_axis(g, P(g, F32, 2, 3), P(g, I32, 3, 1), 1, KILN_GATHER_FILL))
E(e_tal_dtype,
  kiln_take_along_axis(g, P(g, F32, 2, 3), P(g, KILN_DTYPE_BOOL, 2, 1), 1, KILN_GATHER_FILL))
E(e_tal_axis, kiln_take_along_axis(g, P(g, F32, 2, 3), P(g, I32, 2, 1), -3, KILN_GATHER_FILL))
E(e_tal_empty, kiln_take_along_axis(g, P(g, F32, 2, 0), P(g, I32, 2, 1), 1, KILN_GATHER_FILL))
E(e_stack_n, kiln_stack(g, 0, NULL, 0))
E(e_stack_shape, kiln_stack(g, 2, (kiln_value[]){P(g, F32, 2, 3), P(g, F32, 3, 2)}, 0))
E(e_stack_dtype, kiln_stack(g, 2, (kiln_value[]){P(g, F32, 2), P(g, I32, 2)}, 0))
E(e_stack_axis, kiln_stack(g, 2, (kiln_value[]){P(g, F32, 2), P(g, F32, 2)}, 2))
E(e_stack_rank, kiln_stack(g, 1, (kiln_value[]){P(g, F32, 1, 1, 1, 1, 1, 1, 1, 1)}, 0))
E(e_argmax_axis, kiln_argmax(g, P(g, F32, 2, 3), 2))
E(e_argmax_rank0, kiln_argmax(g, P0(g, F32), 0))
E(e_argmin_empty, kiln_argmin(g, P(g, F32, 2, 0), 1))
E(e_cumsum_bool, kiln_cumsum(g, P(g, KILN_DTYPE_BOOL, 3), 0, false))
E(e_cumsum_axis, kiln_cumsum(g, P(g, F32, 3), -2, false))
E(e_one_hot_dtype, kiln_one_hot(g, P(g, F32, 3), 4, F32))
E(e_one_hot_n, kiln_one_hot(g, P(g, I32, 3), -1, F32))
E(e_one_hot_t, kiln_one_hot(g, P(g, I32, 3), 4, (kiln_dtype)99))
E(e_one_hot_rank, kiln_one_hot(g, P(g, I32, 1, 1, 1, 1, 1, 1, 1, 1), 4, F32))
#undef E

static void errors(void) {
    expect_error("take axis", e_take_axis, KILN_STATUS_SHAPE, "kiln_take:", "axis 2",
                 "f32[2,3], i32[4]");
    expect_error("take rank 0", e_take_rank0, KILN_STATUS_SHAPE, "kiln_take:", "axis 0", "rank 0");
    expect_error("take dtype", e_take_dtype, KILN_STATUS_DTYPE, "kiln_take:", "i32 or i64",
                 "f32[4]");
    expect_error("take mode", e_take_mode, KILN_STATUS_INVALID_ARGUMENT, "kiln_take:", "mode 7",
                 NULL);
    expect_error("take empty", e_take_empty, KILN_STATUS_SHAPE, "kiln_take:", "empty", "f32[0,3]");
    expect_error("take rank", e_take_rank, KILN_STATUS_SHAPE, "kiln_take:", "rank 9", NULL);
    expect_error("take invalid", e_take_none, KILN_STATUS_INVALID_ARGUMENT, "kiln_take", "indices",
                 NULL);
    expect_error("take_along_axis rank", e_tal_rank, KILN_STATUS_SHAPE,
                 "kiln_take_along_axis:", "rank 2", "f32[2,3], i32[3]");
    expect_error("take_along_axis broadcast", e_tal_bcast, KILN_STATUS_SHAPE,
                 "kiln_take_along_axis:", "axis 0", "equal or one of them 1");
    expect_error("take_along_axis dtype", e_tal_dtype, KILN_STATUS_DTYPE,
                 "kiln_take_along_axis:", "not bool", NULL);
    expect_error("take_along_axis axis", e_tal_axis, KILN_STATUS_SHAPE,
                 "kiln_take_along_axis:", "axis -3", NULL);
    expect_error("take_along_axis empty", e_tal_empty, KILN_STATUS_SHAPE,
                 "kiln_take_along_axis:", "empty", NULL);
    expect_error("stack n", e_stack_n, KILN_STATUS_INVALID_ARGUMENT, "kiln_stack:", "n = 0", NULL);
    expect_error("stack shape", e_stack_shape, KILN_STATUS_SHAPE,
                 "kiln_stack:", "xs[1] is f32[3,2]", "f32[2,3] like xs[0]");
    expect_error("stack dtype", e_stack_dtype, KILN_STATUS_DTYPE, "kiln_stack:", "i32[2]", NULL);
    expect_error("stack axis", e_stack_axis, KILN_STATUS_SHAPE, "kiln_stack:", "axis 2", "rank 2");
    expect_error("stack rank", e_stack_rank, KILN_STATUS_SHAPE, "kiln_stack:", "rank 9", NULL);
    expect_error("argmax axis", e_argmax_axis, KILN_STATUS_SHAPE, "kiln_argmax:", "axis 2",
                 "f32[2,3]");
    expect_error("argmax rank 0", e_argmax_rank0, KILN_STATUS_SHAPE, "kiln_argmax:", "rank 0",
                 NULL);
    expect_error("argmin empty", e_argmin_empty, KILN_STATUS_SHAPE,
                 "kiln_argmin:", "axis 1 is empty", "f32[2,0]");
    expect_error("cumsum bool", e_cumsum_bool, KILN_STATUS_DTYPE, "kiln_cumsum:", "not bool", NULL);
    expect_error("cumsum axis", e_cumsum_axis, KILN_STATUS_SHAPE, "kiln_cumsum:", "axis -2",
                 "rank 1");
    expect_error("one_hot dtype", e_one_hot_dtype, KILN_STATUS_DTYPE, "kiln_one_hot:", "i32 or i64",
                 "f32[3]");
    expect_error("one_hot n", e_one_hot_n, KILN_STATUS_INVALID_ARGUMENT, "kiln_one_hot:", "n = -1",
                 NULL);
    expect_error("one_hot dtype arg", e_one_hot_t, KILN_STATUS_DTYPE, "kiln_one_hot:", "99", NULL);
    expect_error("one_hot rank", e_one_hot_rank, KILN_STATUS_SHAPE, "kiln_one_hot:", "rank 9",
                 NULL);
}

/* ------------------------------------------------- fault injection ---- */

static kiln_status build_and_run(kiln_context *c, int *bad) {
    kiln_graph *g = NULL;
    kiln_status s = kiln_graph_create(c, "faults", &g);
    if (s) return s;
    int64_t d[] = {3, 4}, i2[] = {2};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value ix = cst_i(g, KILN_DTYPE_I64, 1, i2, (const int64_t[]){-1, 7});
    kiln_value parts[2];
    kiln_split(g, x, 2, (const int64_t[]){1}, 0, parts);
    kiln_value outs[8] = {
        kiln_take(g, x, ix, 1, KILN_GATHER_FILL),
        kiln_take_along_axis(g, x, kiln_broadcast_to(g, ix, 2, (const int64_t[]){3, 2}), 1,
                             KILN_GATHER_WRAP),
        kiln_stack(g, 2, (kiln_value[]){x, x}, 1),
        kiln_cumsum(g, x, 0, true),
        kiln_argmax(g, x, 1),
        kiln_one_hot(g, ix, 5, KILN_DTYPE_F32),
        kiln_exp(g, parts[1]),
        kiln_make_causal_mask(g, 3, 4, KILN_DTYPE_F32),
    };
    s = kiln_graph_finish(g, 8, outs);
    kiln_executable *e = NULL;
    kiln_array *a = NULL, *r[8] = {0};
    float xv[12];
    for (int i = 0; i < 12; i++) xv[i] = (float)i;
    if (!s) s = kiln_compile(g, NULL, &e);
    if (!s) s = kiln_array_create(c, KILN_DTYPE_F32, 2, d, xv, &a);
    if (!s) s = kiln_executable_run(e, 1, &a, 8, r);
    if (!s) {
        /* argmax of rows 0..3, 4..7, 8..11 is 3 each */
        int32_t am[3] = {0};
        kiln_array_copy_to_host(r[4], am, sizeof am);
        *bad = am[0] != 3 || am[1] != 3 || am[2] != 3;
    }
    for (int i = 0; i < 8; i++) kiln_array_destroy(r[i]);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return s;
}

static void faults(void) {
    char dir[] = "/tmp/kiln-test-index-faults-XXXXXX";
    if (!mkdtemp(dir)) return;
    fault_ctx_case fc = {dir, build_and_run, "the run succeeded with wrong results"};
    fault_sweep sw = {.name = "index ops", .run = fault_in_context, .user = &fc, .max_runs = 5000};
    long n = fault_sweep_run(&sw);
    CHECK_MSG(n > 0, "no run completed");
    test_remove_dir(dir);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-index-XXXXXX";
    C = test_private_context(dir);
    if (!C) return 1;
    seed = test_seed(14);
    RUN(jax_take);
    RUN(jax_promote);
    RUN(jax_take_along_axis);
    RUN(jax_stack);
    RUN(jax_argmax);
    RUN(jax_cumsum);
    RUN(jax_one_hot);
    RUN(jax_split);
    RUN(jax_causal_mask);
    RUN(split_mask_compiled);
    RUN(long_cumsum);
    RUN(long_cumsum_compiled);
    RUN(random_graphs);
    RUN(rank0_case);
    RUN(fusion);
    RUN(growing_graph);
    RUN(computed_gather);
    RUN(errors);
    kiln_context_destroy(C);
    test_remove_dir(dir);
    RUN(faults);
    return test_summary("test_index_ops");
}
