/* test_rev.c — kiln_rev (jax.lax.rev / jnp.flip), the op added through the op table alone
 * (docs/architecture.md, "The op table"): compiled against the reference interpreter on
 * several shapes, axis sets and dtypes, alone and fused with what reads it and what it
 * reads; its values against a hand-written flip; its text form and round trip; CSE on its
 * attribute; and the builder's and the loader's errors. Its gradient is checked against
 * finite differences with the other ops' in test_autodiff.c. */
#include "compare.h"
#include "ir/ir.h"
#include "passes/passes.h"

#include <stdint.h>

static const kiln_dtype dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_I32, KILN_DTYPE_I64,
                                    KILN_DTYPE_BOOL};

typedef struct rev_case {
    int rank;
    int64_t dims[4];
    int n_axes;
    int axes[4];
} rev_case;

static const rev_case cases[] = {
    {1, {7}, 1, {0}},
    {2, {3, 5}, 1, {1}},
    {2, {3, 5}, 1, {-2}},
    {2, {4, 6}, 2, {0, 1}},
    {3, {2, 3, 4}, 2, {0, 2}},
    {3, {2, 1, 9}, 1, {1}},
    {4, {2, 3, 2, 5}, 3, {3, 1, 0}},
    {2, {0, 3}, 1, {0}},
    {2, {3, 4}, 0, {0}},
    {0, {0}, 0, {0}},
};
#define N_CASES (sizeof cases / sizeof *cases)

/* Each case on each dtype: rev alone, rev read by an elementwise op, rev of a transpose,
 * and a reduction of rev — one graph, compiled fused, unfused and without passes. */
static void test_compiled(kiln_context *ctx) {
    uint64_t seed = test_seed(0x4e7);
    for (size_t c = 0; c < N_CASES; c++)
        for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
            const rev_case *rc = &cases[c];
            kiln_dtype t = dtypes[d];
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, "rev", &g);
            kiln_value x = kiln_parameter(g, "x", t, rc->rank, rc->dims);
            kiln_value r = kiln_rev(g, x, rc->n_axes, rc->axes);
            kiln_value outs[4] = {r};
            int n = 1;
            if (t != KILN_DTYPE_BOOL) {
                outs[n++] = kiln_add(g, r, x);
                outs[n++] = kiln_reduce_sum(g, kiln_rev(g, kiln_neg(g, x), rc->n_axes, rc->axes), 0,
                                            NULL, false);
            }
            if (rc->rank >= 2) {
                int perm[4] = {1, 0, 2, 3};
                outs[n++] = kiln_rev(g, kiln_transpose(g, x, perm), 1, (const int[]){0});
            }
            CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
            kiln_array *arg = cmp_random_array(ctx, t, rc->rank, rc->dims, &seed);
            kiln_compile_options unfused = {.disable_fusion = true}, raw = {.disable_passes = true};
            CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-5, NULL), "case %zu on %s", c,
                      kiln_dtype_name(t));
            CHECK_MSG(cmp_graph(ctx, g, 1, &arg, &unfused, 1e-5, NULL), "case %zu on %s unfused", c,
                      kiln_dtype_name(t));
            CHECK_MSG(cmp_graph(ctx, g, 1, &arg, &raw, 1e-5, NULL), "case %zu on %s, no passes", c,
                      kiln_dtype_name(t));
            kiln_array_destroy(arg);
            kiln_graph_destroy(g);
        }
}

/* The reference is itself checked against a flip written out by hand: out[i][j] of a
 * [3, 4] reversed along axis 1 is x[i][3 - j]; along both, x[2 - i][3 - j]. */
static void test_values(kiln_context *ctx) {
    int64_t dims[2] = {3, 4};
    int32_t v[12], want1[12], want2[12], got[12];
    for (int i = 0; i < 12; i++) v[i] = i * 7 - 20;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            want1[i * 4 + j] = v[i * 4 + 3 - j];
            want2[i * 4 + j] = v[(2 - i) * 4 + 3 - j];
        }
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "flip", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_I32, 2, dims);
    kiln_value o[2] = {kiln_rev(g, x, 1, (const int[]){1}), kiln_rev(g, x, 0, NULL)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    kiln_array *a = NULL, *out[2] = {0};
    kiln_array_create(ctx, KILN_DTYPE_I32, 2, dims, v, &a);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK_OK(ctx, kiln_executable_run(e, 1, &a, 2, out));
    for (int k = 0; k < 2 && out[k]; k++) {
        kiln_array_copy_to_host(out[k], got, sizeof got);
        CHECK_MSG(!memcmp(got, k ? want2 : want1, sizeof got), "flip %d differs", k);
        kiln_array_destroy(out[k]);
    }
    kiln_executable_destroy(e);
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
}

/* Its text: "rev(%1) axes=[0,2]", read back to the same graph; CSE merges two revs of the
 * same axes and keeps apart two of different axes. */
static void test_text_and_cse(kiln_context *ctx) {
    int64_t dims[3] = {2, 3, 4};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "text", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, dims);
    kiln_value a = kiln_rev(g, x, 2, (const int[]){-1, 0});
    kiln_value b = kiln_rev(g, x, 2, (const int[]){0, 2});
    kiln_value c = kiln_rev(g, x, 1, (const int[]){1});
    kiln_value o = kiln_add(g, kiln_add(g, a, b), c);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &o));
    char *s = kiln_graph_to_string(g);
    CHECK_CONTAINS(s, "%2 = rev(%1) axes=[0,2] : f32[2,3,4]");
    CHECK_CONTAINS(s, "%4 = rev(%1) axes=[1] : f32[2,3,4]");
    kiln_graph *h = NULL;
    CHECK_OK(ctx, kiln_graph_parse(ctx, s, strlen(s), "rev.kir", &h));
    char *t = h ? kiln_graph_to_string(h) : NULL;
    CHECK_MSG(t && !strcmp(s, t), "the loaded graph prints differently:\n%s", t ? t : "");
    kiln_string_free(ctx, s);
    kiln_string_free(ctx, t);
    kiln_graph *m = NULL;
    CHECK_OK(ctx, pass_cse_run(g, &m, NULL));
    int revs = 0;
    for (uint32_t id = 1; m && id < m->n_nodes; id++) revs += m->nodes[id].op == IR_REV;
    CHECK_MSG(revs == 2, "CSE left %d revs, not 2", revs);
    kiln_graph_destroy(m);
    kiln_graph_destroy(h);
    kiln_graph_destroy(g);
}

/* The builder's errors name the op, the axis and the rank; the loader's are the builder's,
 * at the text's line. */
static void test_errors(kiln_context *ctx) {
    static const struct {
        int n_axes, axes[3];
        const char *want;
    } bad[] = {
        {1, {2}, "kiln_rev: axis 2 is out of range for rank 2"},
        {1, {-3}, "kiln_rev: axis -3 is out of range for rank 2"},
        {2, {1, -1}, "kiln_rev: axis 1 is given twice (as axis -1)"},
        {3, {0, 1, 0}, "kiln_rev: 3 axes given for rank 2"},
    };
    int64_t dims[2] = {2, 3};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "bad", &g);
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dims);
        CHECK(!kiln_value_ok(kiln_rev(g, x, bad[i].n_axes, bad[i].axes)));
        CHECK(kiln_graph_status(g) == KILN_STATUS_SHAPE);
        CHECK_CONTAINS(kiln_graph_error(g), bad[i].want);
        kiln_graph_destroy(g);
    }
    static const struct {
        const char *line, *want;
    } text[] = {
        {"  %2 = rev(%1) axes=[5] : f32[2,3]\n", "t.kir:3: kiln_rev: axis 5 is out of range"},
        {"  %2 = rev(%1) axes=[1,1] : f32[2,3]\n", "t.kir:3: kiln_rev: axis 1 is given twice"},
        {"  %2 = rev(%1) : f32[2,3]\n", "t.kir:3: rev needs axes=[...]"},
        {"  %2 = rev(%1) axes=[0] : f32[3,2]\n", "the text says f32[3,2], but the op gives"},
    };
    for (size_t i = 0; i < sizeof text / sizeof *text; i++) {
        char src[512];
        snprintf(src, sizeof src,
                 "graph t(%%1: f32[2,3] \"x\") {\n  %%1 = parameter 0 \"x\" : f32[2,3]\n%s"
                 "  return (%%2)\n}\n",
                 text[i].line);
        kiln_graph *g = NULL;
        CHECK(kiln_graph_parse(ctx, src, strlen(src), "t.kir", &g) != KILN_STATUS_OK);
        CHECK_CONTAINS(kiln_last_error(ctx), text[i].want);
        kiln_graph_destroy(g);
    }
}

int main(void) {
    kiln_context *ctx = test_context();
    if (!ctx) return 1;
    test_values(ctx);
    test_compiled(ctx);
    test_text_and_cse(ctx);
    test_errors(ctx);
    kiln_context_destroy(ctx);
    return test_summary("test_rev");
}
