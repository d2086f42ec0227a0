/* test_gather.c — kiln_gather and kiln_scatter (jax.lax.gather / scatter* with XLA's
 * dimension numbers) and the .at[]-style updates kiln_index_*: the reference interpreter
 * against values JAX computed (tests/gather_jax.h: row gathers, take along an axis,
 * batched gathers, windows with slice sizes > 1, out of range in each mode, every scatter
 * kind with duplicate indices); every compiled device against the reference on the same
 * graphs and over every dtype; scatter-set's deterministic winner (the last) by hand; the
 * text form's round trip; and every builder error with its message and line. Gradients are
 * checked against finite differences in test_autodiff.c and test_jvp.c. */
#include "compare.h"
#include "gather_jax.h"
#include "ir/ir.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The generator's inputs (tests/gather_jax_values.py, fill()), in f32 arithmetic. */
static float fill1(int64_t i) {
    return (float)(i * 7919 % 61) / (float)61 - 0.5f;
}

static kiln_array *filled(kiln_context *ctx, int rank, const int64_t *dims, float plus) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *v = (float *)malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = fill1(i) + plus;
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, rank, dims, v, &a));
    free(v);
    return a;
}

static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

static kiln_gather_dims gather_dims(const gj_case *c) {
    kiln_gather_dims d = {0};
    d.n_offset_dims = c->lists[0][0];
    d.n_collapsed_slice_dims = c->lists[1][0];
    d.n_start_index_map = c->lists[2][0];
    d.n_operand_batching_dims = c->lists[3][0];
    for (int i = 0; i < 8; i++) {
        d.offset_dims[i] = c->lists[0][1 + i];
        d.collapsed_slice_dims[i] = c->lists[1][1 + i];
        d.start_index_map[i] = c->lists[2][1 + i];
        d.operand_batching_dims[i] = c->lists[3][1 + i];
        d.start_indices_batching_dims[i] = c->lists[4][1 + i];
    }
    return d;
}

static kiln_scatter_dims scatter_dims(const gj_case *c) {
    kiln_scatter_dims d = {0};
    d.n_update_window_dims = c->lists[0][0];
    d.n_inserted_window_dims = c->lists[1][0];
    d.n_scatter_dims_to_operand_dims = c->lists[2][0];
    d.n_operand_batching_dims = c->lists[3][0];
    for (int i = 0; i < 8; i++) {
        d.update_window_dims[i] = c->lists[0][1 + i];
        d.inserted_window_dims[i] = c->lists[1][1 + i];
        d.scatter_dims_to_operand_dims[i] = c->lists[2][1 + i];
        d.operand_batching_dims[i] = c->lists[3][1 + i];
        d.scatter_indices_batching_dims[i] = c->lists[4][1 + i];
    }
    return d;
}

/* The case's op over parameters x (dtype t), indices (i32 or i64) and updates. */
static kiln_value build_case(kiln_graph *g, const gj_case *c, kiln_dtype t, kiln_dtype it) {
    kiln_value x = kiln_parameter(g, "x", t, c->xr, c->xd);
    kiln_value i = kiln_parameter(g, "i", it, c->ir, c->id);
    if (c->kind < 0) {
        kiln_gather_dims d = gather_dims(c);
        return kiln_gather(g, x, i, &d, c->sizes, (kiln_gather_mode)c->mode, NULL);
    }
    kiln_scatter_dims d = scatter_dims(c);
    kiln_value u = kiln_parameter(g, "u", t, c->sr, c->sd);
    return kiln_scatter(g, (kiln_scatter_kind)c->kind, x, i, u, &d, (kiln_gather_mode)c->mode);
}

static kiln_array *index_array(kiln_context *ctx, kiln_dtype it, int rank, const int64_t *dims,
                               const int32_t *v) {
    int64_t n = numel(rank, dims), w[64];
    for (int64_t k = 0; k < n && k < 64; k++) w[k] = v[k];
    kiln_array *a = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, it, rank, dims, it == KILN_DTYPE_I32 ? (void *)v : w, &a));
    return a;
}

static int close_to(double got, double want) {
    if (isnan(want)) return isnan(got);
    return fabs(got - want) <= 1e-6 * (1 + fabs(want));
}

/* a's n f32 elements, copied to the host (the caller frees them). */
static float *host_f32(const kiln_array *a, int64_t n) {
    float *v = (float *)calloc((size_t)(n ? n : 1), sizeof *v);
    kiln_array_copy_to_host(a, v, (size_t)n * sizeof *v);
    return v;
}

static void check_values(const kiln_array *a, const double *want, int64_t n, const char *name) {
    float *v = host_f32(a, n);
    int bad = 0;
    for (int64_t k = 0; k < n && !bad; k++)
        if (!close_to(v[k], want[k])) {
            CHECK_MSG(0, "%s: element %lld is %.9g, JAX gives %.9g", name, (long long)k, v[k],
                      want[k]);
            bad = 1;
        }
    free(v);
}

/* The reference against JAX, then every compiled device against the reference (i32 and
 * i64 indices). */
static void test_jax_cases(kiln_context *ctx) {
    for (size_t ci = 0; ci < sizeof gj_cases / sizeof *gj_cases; ci++) {
        const gj_case *c = &gj_cases[ci];
        for (int w = 0; w < 2; w++) {
            kiln_dtype it = w ? KILN_DTYPE_I64 : KILN_DTYPE_I32;
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, c->name, &g);
            kiln_value y = build_case(g, c, KILN_DTYPE_F32, it);
            CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
            kiln_array *args[3] = {filled(ctx, c->xr, c->xd, 0),
                                   index_array(ctx, it, c->ir, c->id, c->idx),
                                   c->kind >= 0 ? filled(ctx, c->sr, c->sd, 1) : NULL};
            int n_args = c->kind >= 0 ? 3 : 2;
            kiln_array *out = NULL;
            CHECK_OK(ctx, kiln_interpret(g, n_args, args, 1, &out));
            if (out)
                check_values(out, c->want, c->kind < 0 ? numel(c->sr, c->sd) : numel(c->xr, c->xd),
                             c->name);
            kiln_array_destroy(out);
            CHECK_MSG(cmp_graph(ctx, g, n_args, args, NULL, 1e-6, NULL), "%s compiled", c->name);
            for (int k = 0; k < n_args; k++) kiln_array_destroy(args[k]);
            kiln_graph_destroy(g);
        }
    }
}

/* x.at[...] updates against JAX, and compiled against the reference. */
static void test_at_cases(kiln_context *ctx) {
    for (size_t ci = 0; ci < sizeof gj_ats / sizeof *gj_ats; ci++) {
        const gj_at *c = &gj_ats[ci];
        int64_t ud[KILN_MAX_RANK];
        int ur = 0;
        for (int a = 0; a < c->xr; a++) {
            if (a == c->axis)
                for (int k = 0; k < c->ir; k++) ud[ur++] = c->id[k];
            else
                ud[ur++] = c->xd[a];
        }
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, c->name, &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, c->xr, c->xd);
        kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, c->ir, c->id);
        kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_F32, ur, ud);
        kiln_value y = kiln_index_update(g, (kiln_scatter_kind)c->kind, x, c->axis, i, u,
                                         (kiln_gather_mode)c->mode);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        kiln_array *args[3] = {filled(ctx, c->xr, c->xd, 0),
                               index_array(ctx, KILN_DTYPE_I32, c->ir, c->id, c->idx),
                               filled(ctx, ur, ud, 1)};
        kiln_array *out = NULL;
        CHECK_OK(ctx, kiln_interpret(g, 3, args, 1, &out));
        if (out) check_values(out, c->want, numel(c->xr, c->xd), c->name);
        kiln_array_destroy(out);
        CHECK_MSG(cmp_graph(ctx, g, 3, args, NULL, 1e-6, NULL), "%s compiled", c->name);
        for (int k = 0; k < 3; k++) kiln_array_destroy(args[k]);
        kiln_graph_destroy(g);
    }
}

/* x[i, j] with index arrays (kiln_index_get) against JAX's x.at[i, j].get(mode). */
static void test_get_cases(kiln_context *ctx) {
    for (size_t ci = 0; ci < sizeof gj_gets / sizeof *gj_gets; ci++) {
        const gj_get *c = &gj_gets[ci];
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, c->name, &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, c->xr, c->xd);
        kiln_value ij[2] = {kiln_parameter(g, "i", KILN_DTYPE_I32, c->ir, c->id),
                            kiln_parameter(g, "j", KILN_DTYPE_I64, c->jr, c->jd)};
        kiln_value y = kiln_index_get(g, x, 2, ij, (kiln_gather_mode)c->mode);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        kiln_array *args[3] = {filled(ctx, c->xr, c->xd, 0),
                               index_array(ctx, KILN_DTYPE_I32, c->ir, c->id, c->i),
                               index_array(ctx, KILN_DTYPE_I64, c->jr, c->jd, c->j)};
        kiln_array *out = NULL;
        CHECK_OK(ctx, kiln_interpret(g, 3, args, 1, &out));
        if (out) check_values(out, c->want, numel(c->yr, c->yd), c->name);
        kiln_array_destroy(out);
        CHECK_MSG(cmp_graph(ctx, g, 3, args, NULL, 1e-6, NULL), "%s compiled", c->name);
        for (int k = 0; k < 3; k++) kiln_array_destroy(args[k]);
        kiln_graph_destroy(g);
    }
}

/* Every dtype, compiled against the reference, on each JAX case (scatters other than set
 * take no bool). */
static void test_dtypes(kiln_context *ctx) {
    static const kiln_dtype ts[] = {KILN_DTYPE_F64,  KILN_DTYPE_I32,  KILN_DTYPE_I64,
                                    KILN_DTYPE_BOOL, KILN_DTYPE_BF16, KILN_DTYPE_F16};
    uint64_t seed = 7;
    for (size_t ci = 0; ci < sizeof gj_cases / sizeof *gj_cases; ci++) {
        const gj_case *c = &gj_cases[ci];
        for (size_t ti = 0; ti < sizeof ts / sizeof *ts; ti++) {
            kiln_dtype t = ts[ti];
            if (t == KILN_DTYPE_BOOL && c->kind > 0) continue;
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, c->name, &g);
            kiln_value y = build_case(g, c, t, KILN_DTYPE_I32);
            CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
            kiln_array *args[3] = {cmp_random_array(ctx, t, c->xr, c->xd, &seed),
                                   index_array(ctx, KILN_DTYPE_I32, c->ir, c->id, c->idx),
                                   c->kind >= 0 ? cmp_random_array(ctx, t, c->sr, c->sd, &seed)
                                                : NULL};
            int n_args = c->kind >= 0 ? 3 : 2;
            CHECK_MSG(cmp_graph(ctx, g, n_args, args, NULL, 1e-5, NULL), "%s on %s", c->name,
                      kiln_dtype_name(t));
            for (int k = 0; k < n_args; k++) kiln_array_destroy(args[k]);
            kiln_graph_destroy(g);
        }
    }
}

/* Scatter-set with duplicate indices: the last update in row-major order wins, on the
 * reference and compiled alike (JAX leaves it unspecified). */
static void test_set_duplicates(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "dups", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){4});
    kiln_value i =
        kiln_constant(g, KILN_DTYPE_I32, 2, (int64_t[]){5, 1}, (int32_t[]){1, 1, 2, 1, 9});
    kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_F32, 1, (int64_t[]){5});
    kiln_value y =
        kiln_index_set(g, x, 0, kiln_reshape(g, i, 1, (int64_t[]){5}), u, KILN_GATHER_FILL);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    float xv[4] = {0, 0, 0, 0}, uv[5] = {10, 20, 30, 40, 50}, want[4] = {0, 40, 30, 0};
    kiln_array *args[2] = {NULL, NULL}, *out = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (int64_t[]){4}, xv, &args[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (int64_t[]){5}, uv, &args[1]));
    CHECK_OK(ctx, kiln_interpret(g, 2, args, 1, &out));
    float *got = out ? host_f32(out, 4) : NULL;
    CHECK(got && !memcmp(got, want, sizeof want));
    free(got);
    kiln_array_destroy(out);
    CHECK(cmp_graph(ctx, g, 2, args, NULL, 0, NULL));
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
}

/* The row kernel's other combiners (what kiln_scatter's MUL, MIN and MAX expand to: a
 * scatter_add_rows with its mul, min or max flag), read from text as a program would: the
 * interpreter and every compiled device against the semantics written out here (each
 * update in order, rounded at each step; min and max as lax.min and lax.max: a NaN wins,
 * -0 and +0 by sign), bit for bit, with repeated and dropped rows, and the flag printed
 * back. */
static float rows_step(int k, float a, float b) {
    if (k == 0) return a * b;
    if (a != a || b != b) return a != a ? a : b;
    if (a == b) return (k == 1) == (signbit(a) != 0) ? a : b; /* min: -0, max: +0 */
    return (k == 1 ? a < b : a > b) ? a : b;
}

static void test_rows_combine(kiln_context *ctx) {
    static const char *const flags[3] = {"mul", "min", "max"};
    int32_t iv[5] = {1, 3, 1, 9, 3};
    float xv[15], uv[15];
    for (int j = 0; j < 15; j++) xv[j] = (float)(j % 4) - 1.5f, uv[j] = (float)(j % 5) * 0.75f - 1;
    xv[3] = 0.0f, uv[0] = -0.0f; /* row 1, column 0: +0 against -0 */
    xv[9] = -0.0f, uv[3] = 0.0f; /* row 3, column 0: -0 against +0 */
    uv[7] = NAN;                 /* the second update to row 1 */
    for (int k = 0; k < 3; k++) {
        kiln_graph *g = NULL, *h = NULL;
        kiln_graph_create(ctx, "rows", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (int64_t[]){5, 3});
        kiln_value i = kiln_constant(g, KILN_DTYPE_I32, 1, (int64_t[]){5}, iv);
        kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_F32, 2, (int64_t[]){5, 3});
        kiln_value y = kiln_scatter_add_rows(g, x, i, u);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        char *s = kiln_graph_to_string(g), text[4096];
        const char *at = s ? strstr(s, "scatter_add_rows(") : NULL;
        const char *close = at ? strchr(at, ')') : NULL;
        CHECK(close != NULL);
        if (!close) return;
        snprintf(text, sizeof text, "%.*s %s%s", (int)(close + 1 - s), s, flags[k], close + 1);
        kiln_string_free(ctx, s);
        CHECK_OK(ctx, kiln_graph_parse(ctx, text, strlen(text), "rows.kir", &h));
        char *t = h ? kiln_graph_to_string(h) : NULL, line[64];
        snprintf(line, sizeof line, "scatter_add_rows(%%1, %%2, %%3) %s : f32[5,3]", flags[k]);
        CHECK_CONTAINS(t ? t : "", line);
        kiln_string_free(ctx, t);
        float want[15];
        memcpy(want, xv, sizeof want);
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 3 && iv[r] < 5; c++)
                want[iv[r] * 3 + c] = rows_step(k, want[iv[r] * 3 + c], uv[r * 3 + c]);
        kiln_array *args[2] = {NULL, NULL}, *out = NULL;
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, (int64_t[]){5, 3}, xv, &args[0]));
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, (int64_t[]){5, 3}, uv, &args[1]));
        if (h) CHECK_OK(ctx, kiln_interpret(h, 2, args, 1, &out));
        float *got = out ? host_f32(out, 15) : NULL;
        CHECK_MSG(got && !memcmp(got, want, sizeof want), "%s: the interpreter", flags[k]);
        free(got);
        kiln_array_destroy(out);
        if (h) CHECK_MSG(cmp_graph(ctx, h, 2, args, NULL, 0, NULL), "%s compiled", flags[k]);
        kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
        kiln_graph_destroy(h), kiln_graph_destroy(g);
    }
}

/* WRAP on the .at[] helper: indices modulo the axis (kiln's; jnp has none for updates). */
static void test_wrap(kiln_context *ctx) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "wrap", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){4});
    kiln_value i = kiln_constant(g, KILN_DTYPE_I64, 1, (int64_t[]){4}, (int64_t[]){-1, 5, 8, 2});
    kiln_value y = kiln_index_add(g, x, 0, i, kiln_scalar(g, KILN_DTYPE_F32, 1), KILN_GATHER_WRAP);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    float xv[4] = {0, 0, 0, 0}, want[4] = {1, 1, 1, 1};
    kiln_array *a = NULL, *out = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (int64_t[]){4}, xv, &a));
    CHECK_OK(ctx, kiln_interpret(g, 1, &a, 1, &out));
    float *got = out ? host_f32(out, 4) : NULL;
    CHECK(got && !memcmp(got, want, sizeof want));
    free(got);
    CHECK(cmp_graph(ctx, g, 1, &a, NULL, 0, NULL));
    kiln_array_destroy(out), kiln_array_destroy(a);
    kiln_graph_destroy(g);
}

/* The text form reads back to the same text, attributes and all. */
static void test_text(kiln_context *ctx) {
    for (size_t ci = 0; ci < sizeof gj_cases / sizeof *gj_cases; ci++) {
        const gj_case *c = &gj_cases[ci];
        kiln_graph *g = NULL, *h = NULL;
        kiln_graph_create(ctx, c->name, &g);
        kiln_value y = build_case(g, c, KILN_DTYPE_F32, KILN_DTYPE_I32);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        char *s = kiln_graph_to_string(g);
        CHECK_OK(ctx, kiln_graph_parse(ctx, s, strlen(s), "g.kir", &h));
        char *t = h ? kiln_graph_to_string(h) : NULL;
        CHECK_MSG(t && !strcmp(s, t), "%s prints differently loaded:\n%s\n%s", c->name, s,
                  t ? t : "");
        kiln_string_free(ctx, s), kiln_string_free(ctx, t);
        kiln_graph_destroy(h), kiln_graph_destroy(g);
    }
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "t", &g);
    kiln_gather_dims d = {.n_offset_dims = 1,
                          .offset_dims = {1},
                          .n_collapsed_slice_dims = 1,
                          .n_start_index_map = 1};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (int64_t[]){5, 3});
    kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 2, (int64_t[]){4, 1});
    kiln_value y = kiln_gather(g, x, i, &d, (int64_t[]){1, 3}, KILN_GATHER_CLIP, NULL);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    char *s = kiln_graph_to_string(g);
    CHECK_CONTAINS(s, "gather(%1, %2) window=[-1,1] index=[0,-1] batch=[-1,-1] sizes=[1,3] clip "
                      "fill_value=nan : f32[4,3]");
    kiln_string_free(ctx, s);
    kiln_graph_destroy(g);
}

/* Every builder error: the message names the call, the field and the operands, and the
 * caller's line. */
static void test_errors(kiln_context *ctx) {
    int64_t xd[2] = {5, 3}, id[2] = {4, 1}, ud[2] = {4, 3};
    for (int k = 0; k < 20; k++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "bad", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
        kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 2, id);
        kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 2, id);
        kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_F32, 2, ud);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_BOOL, 2, xd);
        kiln_value ub = kiln_parameter(g, "ub", KILN_DTYPE_BOOL, 2, ud);
        kiln_gather_dims d = {.n_offset_dims = 1,
                              .offset_dims = {1},
                              .n_collapsed_slice_dims = 1,
                              .n_start_index_map = 1};
        kiln_scatter_dims s = {.n_update_window_dims = 1,
                               .update_window_dims = {1},
                               .n_inserted_window_dims = 1,
                               .n_scatter_dims_to_operand_dims = 1};
        int64_t sz[2] = {1, 3};
        const char *want = NULL;
        // clang-format off
        int line = __LINE__ + 2;
        switch (k) {
        case 0: kiln_gather(g, x, f, &d, sz, KILN_GATHER_FILL, NULL); want = "kiln_gather: the operand needs rank >= 1 and indices must be i32 or i64"; break;
        case 1: d.offset_dims[0] = 2; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "kiln_gather: offset_dims[0] = 2 is outside [0, 2); operands: f32[5,3], i32[4,1]"; break;
        case 2: d.n_collapsed_slice_dims = 2; d.collapsed_slice_dims[1] = 0; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "collapsed_slice_dims: axis 0 is given twice"; break;
        case 3: d.start_index_map[0] = 3; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "start_index_map[0] = 3 is outside [0, 2)"; break;
        case 4: d.n_offset_dims = 0; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "offset_dims has 0 axes; the operand of rank 2 has 1 axes neither in collapsed_slice_dims nor batching"; break;
        case 5: sz[1] = 4; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "kiln_gather: slice_sizes[1] = 4: it must be in [0, 3]"; break;
        case 6: sz[0] = 2; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "slice_sizes[0] = 2: it must be in [0, 5] and 1 for a collapsed or batching axis"; break;
        case 7: kiln_gather(g, x, i, &d, sz, KILN_GATHER_WRAP, NULL); want = "mode 2: lax.gather/scatter take KILN_GATHER_FILL (FILL_OR_DROP) or KILN_GATHER_CLIP"; break;
        case 8: d.n_start_index_map = 2; d.start_index_map[1] = 1; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "kiln_gather: start_index_map: operand axis 1 takes index-vector entry 1 of 1 (each entry once)"; break;
        case 9: d.n_operand_batching_dims = 1; kiln_gather(g, x, i, &d, sz, KILN_GATHER_FILL, NULL); want = "operand axis 0 is in both collapsed_slice_dims and operand_batching_dims"; break;
        case 10: kiln_scatter(g, KILN_SCATTER_ADD, x, i, kiln_parameter(g, "v", KILN_DTYPE_F64, 2, ud), &s, KILN_GATHER_FILL); want = "kiln_scatter: the updates f64[4,3] and the operand f32[5,3] differ in dtype"; break;
        case 11: kiln_scatter(g, KILN_SCATTER_ADD, x, i, kiln_parameter(g, "v", KILN_DTYPE_F32, 2, (int64_t[]){3, 3}), &s, KILN_GATHER_FILL); want = "updates axis 0 (3) is batch axis 0 of indices (4): they must be equal"; break;
        case 12: kiln_scatter(g, KILN_SCATTER_ADD, x, i, kiln_parameter(g, "v", KILN_DTYPE_F32, 2, (int64_t[]){4, 4}), &s, KILN_GATHER_FILL); want = "update_window_dims: updates axis 1 (4) is larger than operand axis 1 (3)"; break;
        case 13: kiln_scatter(g, KILN_SCATTER_MAX, b, i, ub, &s, KILN_GATHER_FILL); want = "scatter max takes numeric dtypes, not bool"; break;
        case 14: kiln_scatter(g, (kiln_scatter_kind)7, x, i, u, &s, KILN_GATHER_FILL); want = "kind 7 is not a kiln_scatter_kind"; break;
        case 15: s.n_update_window_dims = 2; s.update_window_dims[1] = 0; kiln_scatter(g, KILN_SCATTER_SET, x, i, u, &s, KILN_GATHER_FILL); want = "update_window_dims: axis 0 is out of order (the list must be sorted)"; break;
        case 16: kiln_index_add(g, x, 2, kiln_parameter(g, "j", KILN_DTYPE_I32, 1, (int64_t[]){2}), u, KILN_GATHER_FILL); want = "kiln_index_update: axis 2 is out of range for x of rank 2"; break;
        case 17: kiln_gather(g, kiln_parameter(g, "n", KILN_DTYPE_I32, 2, xd), i, &d, sz, KILN_GATHER_FILL, (double[]){NAN}); want = "kiln_gather: fill_value nan is not an i32 value"; break;
        case 18: kiln_index_get(g, x, 2, (kiln_value[]){i, kiln_parameter(g, "j", KILN_DTYPE_I32, 2, (int64_t[]){3, 2})}, KILN_GATHER_CLIP); want = "kiln_index_get: the index arrays do not broadcast together (index 1)"; break;
        case 19: kiln_index_get(g, x, 3, (kiln_value[]){i, i, i}, KILN_GATHER_CLIP); want = "kiln_index_get: 3 index arrays for x of rank 2"; break;
        }
        // clang-format on
        CHECK_MSG(kiln_graph_status(g) != KILN_STATUS_OK, "error case %d was accepted", k);
        CHECK_CONTAINS(kiln_graph_error(g), want);
        char at[64];
        snprintf(at, sizeof at, "test_gather.c:%d", line + k);
        CHECK_CONTAINS(kiln_graph_error(g), at);
        kiln_graph_destroy(g);
    }
}

/* Scatter-mul's derivative through its updates is refused in both modes, naming the op
 * (JAX refuses it without unique indices); through the operand alone it is built. */
static void test_refusals(kiln_context *ctx) {
    for (int mode = 0; mode < 2; mode++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "mul", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){4});
        kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_F32, 1, (int64_t[]){2});
        kiln_value i = kiln_constant(g, KILN_DTYPE_I32, 1, (int64_t[]){2}, (int32_t[]){1, 1});
        kiln_value y = kiln_index_mul(g, x, 0, i, u, KILN_GATHER_FILL), d[2];
        kiln_value loss = kiln_reduce_sum(g, y, 0, NULL, false);
        kiln_value one = kiln_full(g, KILN_DTYPE_F32, 1, (int64_t[]){4}, 1);
        kiln_value two = kiln_full(g, KILN_DTYPE_F32, 1, (int64_t[]){2}, 1);
        kiln_status st =
            mode ? kiln_jvp(g, 1, &y, 2, (kiln_value[]){x, u}, (kiln_value[]){one, two}, d)
                 : kiln_grad(g, loss, 2, (kiln_value[]){x, u}, d);
        CHECK(st == KILN_STATUS_UNIMPLEMENTED);
        CHECK_CONTAINS(kiln_graph_error(g), mode ? "kiln_jvp: the derivative of scatter mul"
                                                 : "kiln_grad: the gradient of scatter mul");
        kiln_graph_destroy(g);
        kiln_graph_create(ctx, "mul", &g);
        x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){4});
        i = kiln_constant(g, KILN_DTYPE_I32, 1, (int64_t[]){2}, (int32_t[]){1, 1});
        y = kiln_index_mul(g, x, 0, i, kiln_scalar(g, KILN_DTYPE_F32, 3), KILN_GATHER_FILL);
        loss = kiln_reduce_sum(g, y, 0, NULL, false);
        CHECK_OK(ctx, kiln_grad(g, loss, 1, &x, d));
        kiln_graph_destroy(g);
    }
}

/* Scatter min/max between -0 and +0: min gives -0 and max +0 whichever came first, in the
 * reference and compiled alike (bit for bit: a value compare would call them equal). */
static void test_signed_zeros(kiln_context *ctx) {
    for (int k = 0; k < 4; k++) {
        bool max = k & 1, neg_first = k & 2;
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "zeros", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){2});
        kiln_value i = kiln_constant(g, KILN_DTYPE_I32, 1, (int64_t[]){2}, (int32_t[]){0, 1});
        kiln_value u = kiln_parameter(g, "u", KILN_DTYPE_F32, 1, (int64_t[]){2});
        kiln_value y = max ? kiln_index_max(g, x, 0, i, u, KILN_GATHER_FILL)
                           : kiln_index_min(g, x, 0, i, u, KILN_GATHER_FILL);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        float xv[2] = {neg_first ? -0.0f : 0.0f, neg_first ? -0.0f : 0.0f};
        float uv[2] = {-xv[0], -xv[1]}, want = max ? 0.0f : -0.0f;
        kiln_array *a[2] = {0}, *got = NULL, *ref = NULL;
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (int64_t[]){2}, xv, &a[0]));
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 1, (int64_t[]){2}, uv, &a[1]));
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        CHECK_OK(ctx, kiln_executable_run(e, 2, a, 1, &got));
        CHECK_OK(ctx, kiln_interpret(g, 2, a, 1, &ref));
        float gv[2] = {1, 1}, rv[2] = {1, 1};
        if (got) kiln_array_copy_to_host(got, gv, sizeof gv);
        if (ref) kiln_array_copy_to_host(ref, rv, sizeof rv);
        for (int j = 0; j < 2; j++)
            CHECK_MSG(!memcmp(&gv[j], &want, 4) && !memcmp(&rv[j], &want, 4),
                      "%s, %s first: compiled %g (sign %d), reference %g (sign %d)",
                      max ? "max" : "min", neg_first ? "-0" : "+0", gv[j], signbit(gv[j]) != 0,
                      rv[j], signbit(rv[j]) != 0);
        kiln_array_destroy(got), kiln_array_destroy(ref);
        kiln_array_destroy(a[0]), kiln_array_destroy(a[1]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
}

int main(void) {
    kiln_context *ctx = test_context();
    if (!ctx) return 1;
    test_jax_cases(ctx);
    test_at_cases(ctx);
    test_get_cases(ctx);
    test_dtypes(ctx);
    test_set_duplicates(ctx);
    test_rows_combine(ctx);
    test_signed_zeros(ctx);
    test_wrap(ctx);
    test_text(ctx);
    test_errors(ctx);
    test_refusals(ctx);
    kiln_context_destroy(ctx);
    return test_summary("test_gather");
}
