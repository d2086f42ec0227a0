/* test_codegen.c — the kernel description and its C printer (src/codegen).
 *
 * The index simplifier is checked on its own (kd_ix_* on a bare kd_kernel): the rewrites
 * it must make and the ones it must not. The printer is checked on the text it writes for
 * small graphs, run through fusion and cgen_program directly (no compiler): no `/ 1` or
 * needless `%`, a reshape's index arithmetic undone, guards only where they can fail,
 * the provenance comment (exact, and bounded for huge kernels), the vectorising pragma
 * and its integer-arithmetic exception, and one whole kernel compared byte for byte so
 * that any change to the generated code is seen in review. A kernel whose index needs a
 * division and a remainder is also compiled and run. Fault injection fails each host
 * allocation of cgen_program in turn. Numerical equivalence over random programs is
 * test_compile's and test_plan's. */
#define KILN_NO_LOCATION_MACROS /* the tests set locations themselves */
#include "fault.h"
#include "test.h"
#include "codegen/cgen.h"
#include "codegen/kdesc.h"
#include "passes/passes.h"

#include <stdint.h>

static kiln_context *ctx;
static test_alloc talloc;

/* ------------------------------------------------------------ helpers ---- */

/* The kernels' source (everything after the prelude) for finished graph g, fused as
 * built; NULL if codegen failed (its status in *st when st is set). */
static char *kernels_with(kiln_graph *g, const fusion_options *fo, kiln_status *st) {
    /* convolutions in their primitive form, as kiln_compile gives them to the CPU */
    kiln_graph *expanded = NULL;
    CHECK_OK(ctx, pass_expand_run(g, PASS_EXPAND_CONV, &expanded));
    if (expanded) g = expanded;
    fusion_plan p;
    kiln_status s = fusion_plan_build(g, fo, &p);
    CHECK_OK(ctx, s);
    if (s) return NULL;
    cgen_kernel info[64];
    CHECK(p.n_kernels <= 64);
    strbuf sb;
    sb_init(&sb, ctx);
    s = cgen_program(g, &p, &sb, info);
    fusion_plan_free(&p);
    if (st) *st = s;
    char *src = s ? NULL : sb_take(&sb);
    sb_free(&sb);
    kiln_graph_destroy(expanded);
    if (!src) return NULL;
    const char *k = strstr(src, "\n/* k");
    char *out = strdup(k ? k + 1 : "");
    kiln_string_free(ctx, src);
    return out;
}

static char *kernels_of(kiln_graph *g, kiln_status *st) {
    return kernels_with(g, &(fusion_options){0}, st);
}

static kiln_graph *graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "codegen", &g));
    return g;
}

/* Finishes g with output y and returns its kernels' source (caller frees). */
static char *finish(kiln_graph *g, kiln_value y) {
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    char *src = kernels_of(g, NULL);
    CHECK(src != NULL);
    return src ? src : strdup("");
}

/* Drops the kernels' provenance comments, which name ops and %ids. */
static char *code_only(char *src) {
    char *w = src;
    for (const char *r = src; *r;) {
        const char *nl = strchr(r, '\n');
        size_t n = nl ? (size_t)(nl - r) + 1 : strlen(r);
        if (strncmp(r, "/* k", 4) != 0) {
            memmove(w, r, n);
            w += n;
        }
        r += n;
    }
    *w = 0;
    return src;
}

/* True if src divides by (or takes the remainder of) the number 1 anywhere. */
static bool by_one(const char *src) {
    for (const char *p = src; (p = strpbrk(p, "/%")); p++)
        if (p[1] == ' ' && p[2] == '1' && !(p[3] >= '0' && p[3] <= '9')) return true;
    return false;
}

#define CHECK_LACKS(hay, needle)                                                                   \
    CHECK_MSG(!strstr((hay), (needle)), "\"%s\" contains \"%s\"", (hay), (needle))

/* --------------------------------------------------------- simplifier ---- */

static kd_kernel bare(void) {
    kd_kernel kd = {.ctx = ctx};
    kd_ix_const(&kd, 0);
    return kd;
}

static void test_simplifier(void) {
    kd_kernel kd = bare();
    uint32_t vi = kd_var_new(&kd, (kd_var){KD_VAR_AXIS, 0, 0});
    uint32_t vj = kd_var_new(&kd, (kd_var){KD_VAR_AXIS, 1, 0});
    uint32_t i = kd_ix_var(&kd, vi, 0, 63), j = kd_ix_var(&kd, vj, 0, 255);
    uint32_t lin = kd_ix_affine(&kd, i, 256, j, 1, 0); /* i * 256 + j */
    CHECK(kd.ixs[lin].n == 2 && kd.ixs[lin].lo == 0 && kd.ixs[lin].hi == 64 * 256 - 1);
    CHECK(kd_ix_equal(&kd, kd_ix_div(&kd, lin, 1), lin)); /* x / 1 -> x */
    CHECK(kd_ix_equal(&kd, kd_ix_div(&kd, lin, 256), i)); /* (256 i + j) / 256 */
    CHECK(kd_ix_equal(&kd, kd_ix_mod(&kd, lin, 256), j)); /* (256 i + j) % 256 */
    CHECK(kd_ix_equal(&kd, kd_ix_mod(&kd, j, 256), j));   /* j < 256 */
    CHECK(kd_ix_equal(&kd, kd_ix_mod(&kd, lin, 1), kd_ix_const(&kd, 0)));
    CHECK(kd_ix_equal(&kd, kd_ix_div(&kd, j, 256), kd_ix_const(&kd, 0)));
    /* 0 * i + j + 0 is j; i - i is 0 */
    CHECK(kd_ix_equal(&kd, kd_ix_affine(&kd, i, 0, j, 1, 0), j));
    CHECK(kd_ix_equal(&kd, kd_ix_affine(&kd, i, 1, i, -1, 0), kd_ix_const(&kd, 0)));
    /* a division that proves nothing stays one atom: j / 16 */
    uint32_t d = kd_ix_div(&kd, j, 16), m = kd_ix_mod(&kd, j, 16);
    CHECK(kd.ixs[d].n == 1 && kd.atoms[kd.terms[kd.ixs[d].first].atom].kind == KD_ATOM_DIV);
    CHECK(kd.ixs[d].lo == 0 && kd.ixs[d].hi == 15);
    /* ... and is rejoined with its remainder: (j / 16) * 16 + j % 16 == j */
    CHECK(kd_ix_equal(&kd, kd_ix_affine(&kd, d, 16, m, 1, 0), j));
    /* (j / 4 % 4) * 4 + j % 4 == j % 16 */
    uint32_t d4 = kd_ix_mod(&kd, kd_ix_div(&kd, j, 4), 4), m4 = kd_ix_mod(&kd, j, 4);
    CHECK(kd_ix_equal(&kd, kd_ix_affine(&kd, d4, 4, m4, 1, 0), m));
    /* (i * 6 + j) / 4 keeps the division whole (6 is no multiple of 4) but drops a
     * multiple: (8 i + j) / 4 == 2 i + j / 4 */
    uint32_t e = kd_ix_div(&kd, kd_ix_affine(&kd, i, 8, j, 1, 0), 4);
    CHECK(kd_ix_equal(&kd, e, kd_ix_affine(&kd, i, 2, kd_ix_div(&kd, j, 4), 1, 0)));
    /* an index that can be negative is not split: (j - 3) / 2 stays a division of it */
    uint32_t neg = kd_ix_affine(&kd, j, 1, 0, 0, -3);
    CHECK(kd.ixs[neg].lo == -3);
    uint32_t nd = kd_ix_div(&kd, neg, 2);
    CHECK(kd.ixs[nd].n == 1 && kd.atoms[kd.terms[kd.ixs[nd].first].atom].arg == neg);
    CHECK(kd.ixs[kd_ix_mod(&kd, neg, 256)].n == 1); /* not "j - 3": j - 3 can be < 0 */
    /* a guard's bound (kd_ix_within): j - 128 under "j >= 128" lies in 0..127, so
     * (128 i + j - 128) / 128 is i and % 128 is j - 128; without the bound both stay */
    uint32_t t = kd_ix_affine(&kd, j, 1, 0, 0, -128), w = kd_ix_within(&kd, t, 0, 127);
    CHECK(kd.ixs[w].lo == 0 && kd.ixs[w].hi == 127 && kd.ixs[w].c == -128);
    CHECK(!kd_ix_equal(&kd, kd_ix_div(&kd, kd_ix_affine(&kd, i, 128, t, 1, 0), 128), i));
    CHECK(kd_ix_equal(&kd, kd_ix_div(&kd, kd_ix_affine(&kd, i, 128, w, 1, 0), 128), i));
    CHECK(kd_ix_equal(&kd, kd_ix_mod(&kd, kd_ix_affine(&kd, i, 128, w, 1, 0), 128), w));
    /* ... and keeps a bound it cannot use: 2 j is no variable plus a constant */
    uint32_t j2 = kd_ix_affine(&kd, j, 2, 0, 0, 0);
    CHECK(kd_ix_within(&kd, j2, 0, 9) == j2);
    CHECK(kd_ix_within(&kd, j, -5, 300) == j); /* no tighter than j's own range */
    /* a variable that takes one value is that value */
    uint32_t one = kd_ix_var(&kd, kd_var_new(&kd, (kd_var){KD_VAR_ROW, 0, 0}), 0, 0);
    CHECK(kd_ix_equal(&kd, one, kd_ix_const(&kd, 0)));
    CHECK(!kd.oom);
    kd_free(&kd);
}

/* -------------------------------------------------------- printed text ---- */

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The staged loop's forms (schedule.c, staged_loop; print_c.c, print_staged_loop), each
 * under `#if KILN_STAGED_<t>` with the plain loop after `#else`: a 16-bit chain over rows
 * of 2112 (chunks of 2048 and 64) ends a chunk with a block overlapping the one before; over
 * rows of 2053 (its last chunk 5) a short chunk runs as a scalar loop; a softmax's element
 * loop, which reads its kept values back from the output row, ends each row of 101 in a
 * scalar loop; a transpose's store runs along the loop (its reads across it) and is staged;
 * f32 stores and rows shorter than a block are not. */
static void test_staged_forms(void) {
    static const struct {
        int64_t rows, cols;
        int op; /* 0: tanh(x) * 2, 1: softmax, 2: transpose */
        kiln_dtype t;
        int blocks, scalar, short_chunk; /* kiln_st32_ calls, scalar loops, the chunk test */
    } cases[] = {
        {3, 2112, 0, KILN_DTYPE_BF16, 1, 0, 0}, {3, 2053, 0, KILN_DTYPE_BF16, 1, 1, 1},
        {37, 101, 1, KILN_DTYPE_F16, 1, 1, 0},  {37, 101, 1, KILN_DTYPE_BF16, 1, 1, 0},
        {5, 64, 0, KILN_DTYPE_F32, 0, 0, 0},    {5, 31, 0, KILN_DTYPE_BF16, 0, 0, 0},
        {64, 64, 2, KILN_DTYPE_F16, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_graph *g = graph();
        int64_t d[2] = {cases[i].rows, cases[i].cols};
        kiln_dtype t = cases[i].t;
        kiln_value x = kiln_parameter(g, "x", t, 2, d);
        kiln_value y = cases[i].op == 1   ? kiln_softmax(g, x, 1)
                       : cases[i].op == 2 ? kiln_transpose(g, kiln_exp(g, x), (int[]){1, 0})
                                          : kiln_mul(g, kiln_tanh(g, x), kiln_scalar(g, t, 2));
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
        char *src = kernels_with(g, &(fusion_options){0}, NULL);
        int blocks = src ? count_of(src, "kiln_st32_") : -1;
        int scalar = src ? count_of(src, "KILN_SCALAR_LOOP();") : -1;
        int chunk = src ? count_of(src, "if (je - jb >= 32) {") : -1;
        int guards = src ? count_of(src, "#if KILN_STAGED_") : -1;
        CHECK_MSG(blocks == cases[i].blocks && scalar == cases[i].scalar &&
                      chunk == cases[i].short_chunk && guards == cases[i].blocks,
                  "case %zu: %d blocks' stores, %d scalar loops, %d chunk tests, %d guards:\n%s", i,
                  blocks, scalar, chunk, guards, src ? src : "");
        free(src);
        kiln_graph_destroy(g);
    }
}

/* The roundings of 16-bit values (lower.c, emit): tanh(x*x + x) + convert(f) in t. A
 * + - * / of values of t rounds without the NaN test (kiln_rnd_<t>_arith), the tanh and the
 * convert with it; with excess precision only the convert rounds. The last add is read by
 * its store alone, which rounds it (print.c, made_round): it prints no rounding of its own. The
 * element loop stores t along the loop, so it is staged (schedule.c, staged_loop): its body is
 * printed twice (the staged blocks, the last overlapping the one before, and the plain loop for a
 * target without the conversion), each with those roundings. */
static void test_half_roundings(void) {
    static const kiln_dtype ts[2] = {KILN_DTYPE_BF16, KILN_DTYPE_F16};
    for (int excess = 0; excess < 2; excess++) {
        for (int i = 0; i < 2; i++) {
            kiln_graph *g = graph();
            int64_t d[1] = {64};
            kiln_value x = kiln_parameter(g, "x", ts[i], 1, d);
            kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 1, d);
            kiln_value y = kiln_tanh(g, kiln_add(g, kiln_mul(g, x, x), x));
            y = kiln_add(g, y, kiln_convert(g, f, ts[i]));
            CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
            char *src = kernels_with(g, &(fusion_options){.excess_precision = excess}, NULL);
            bool bf = ts[i] == KILN_DTYPE_BF16;
            int arith =
                src ? count_of(src, bf ? "kiln_rnd_bf16_arith(" : "kiln_rnd_f16_arith(") : -1;
            int full = src ? count_of(src, bf ? "kiln_rnd_bf16(" : "kiln_rnd_f16(") : -1;
            CHECK(src && count_of(src, bf ? "kiln_st32_bf16(&out0[" : "kiln_st32_f16(&out0[") == 1);
            CHECK(src &&
                  count_of(src, bf ? "#if KILN_STAGED_BF16\n" : "#if KILN_STAGED_F16\n") == 1);
            CHECK(src && !strstr(src, "KILN_SCALAR_LOOP();"));
            CHECK_MSG(arith == 2 * (excess ? 0 : 2) && full == 2 * (excess ? 1 : 2),
                      "%s, excess %d: %d arithmetic roundings, %d full ones:\n%s",
                      kiln_dtype_name(ts[i]), excess, arith, full, src ? src : "");
            free(src);
            kiln_graph_destroy(g);
        }
    }
}

static void test_elementwise_2d(void) {
    kiln_graph *g = graph();
    int64_t d[2] = {64, 256};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, d);
    char *src = code_only(
        finish(g, kiln_add(g, kiln_mul(g, kiln_exp(g, x), y), kiln_scalar(g, KILN_DTYPE_F32, 1))));
    CHECK_MSG(!by_one(src), "%s", src);
    CHECK_LACKS(src, "%");
    CHECK_CONTAINS(src, "in0[i0 * 256 + i1]");
    CHECK_CONTAINS(src, "out0[row * 256 + i1]");
    CHECK_CONTAINS(src, "const int64_t i0 = row;");
    CHECK_CONTAINS(src, "kiln_exp_f32(");
    free(src);
    kiln_graph_destroy(g);
}

static void test_rank3_rows(void) {
    kiln_graph *g = graph();
    int64_t d[3] = {4, 16, 256};
    char *src = code_only(finish(g, kiln_neg(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d))));
    CHECK_CONTAINS(src, "const int64_t i0 = row / 16;");
    CHECK_CONTAINS(src, "const int64_t i1 = row % 16;");
    CHECK_CONTAINS(src, "in0[i0 * 4096 + i1 * 256 + i2]");
    CHECK_MSG(!by_one(src), "%s", src);
    free(src);
    kiln_graph_destroy(g);
}

static void test_reshape_index(void) {
    /* merging axes: the linearise-and-split of the reshape cancels out */
    kiln_graph *g = graph();
    int64_t d[3] = {4, 16, 256}, r[2] = {64, 256};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d);
    char *src = code_only(finish(g, kiln_exp(g, kiln_reshape(g, kiln_neg(g, x), 2, r))));
    CHECK_CONTAINS(src, "in0[i0 * 256 + i1]");
    CHECK_LACKS(src, "/");
    CHECK_LACKS(src, "%");
    free(src);
    kiln_graph_destroy(g);

    /* a transpose then a flattening: the index really needs a division and a remainder */
    g = graph();
    int64_t t[2] = {3, 4}, flat = 12;
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, t);
    kiln_value y = kiln_reshape(g, kiln_transpose(g, x, (int[]){1, 0}), 1, &flat);
    src = code_only(finish(g, kiln_exp(g, y)));
    /* looped over as the real axes (kd_kernel.split): no division per element */
    CHECK_CONTAINS(src, "in0[i0r * 4 + i0q]");
    CHECK_LACKS(src, "i0 / 3");
    CHECK_LACKS(src, "i0 % 3");
    CHECK_MSG(!by_one(src), "%s", src);
    free(src);
    kiln_graph_destroy(g);
}

static void test_guards(void) {
    kiln_graph *g = graph();
    int64_t n = 8, lo = 2, hi = 1, none = 0, grow = 3, step = 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value zero = kiln_scalar(g, KILN_DTYPE_F32, 0);
    kiln_value a = kiln_pad(g, kiln_exp(g, x), zero, &lo, &hi, &none);     /* [11] */
    kiln_value b = kiln_pad(g, kiln_exp(g, x), zero, &none, &grow, &none); /* [11] */
    kiln_value c = kiln_pad(g, kiln_exp(g, x), zero, &none, &none, &step); /* [15] */
    int64_t cut = 11;
    kiln_value c11 = kiln_slice(g, c, &none, &cut, &step);
    char *src = finish(g, kiln_add(g, kiln_add(g, a, b), c11));
    CHECK_CONTAINS(src, "if (i0 - 2 >= 0 && i0 - 2 < 8)");
    CHECK_CONTAINS(src, "if (i0 < 8)");      /* i0 >= 0 always holds */
    CHECK_CONTAINS(src, "if (i0 % 2 == 0)"); /* interior padding; i0 < 11 < 15 */
    CHECK_CONTAINS(src, "in0[i0 / 2]");
    CHECK_CONTAINS(src, "in0[i0 - 2]");
    free(src);
    kiln_graph_destroy(g);

    g = graph();
    int64_t d0[2] = {4, 3}, d1[2] = {4, 5};
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_F32, 2, d0);
    kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F32, 2, d1);
    src = finish(g, kiln_exp(g, kiln_concatenate(g, 2, (kiln_value[]){p, q}, 1)));
    /* along the last axis: one loop per operand, no branch per element (segmented_loop) */
    CHECK(!strstr(src, "if (i1 < 3)") && !strstr(src, "KILN_BRANCH_GUARD"));
    CHECK_CONTAINS(src, "for (int64_t i1 = jb > 0 ? jb : 0; i1 < (je < 3 ? je : 3); i1++)");
    CHECK_CONTAINS(src, "for (int64_t i1 = jb > 3 ? jb : 3; i1 < (je < 8 ? je : 8); i1++)");
    CHECK_CONTAINS(src, "in0[i0 * 3 + i1]");
    CHECK_CONTAINS(src, "in1[i0 * 5 + i1 - 3]");
    free(src);
    kiln_graph_destroy(g);

    /* the heads of [B, H, T, D] cotangents placed side by side in [B T, 3 H D] rows (the
     * GPT's q, k and v gradients): the row's index is split by D, and each third, a
     * multiple of it, is a segment of the split's two loops, no branch left; a third's
     * (i1 - 64) / 16 and % 16 are the loops' variables (kindex.c: (v + m N) / N is
     * v / N + m for v >= 0), so its reads are contiguous in i1r */
    g = graph();
    int64_t d4[4] = {2, 4, 8, 16}, c2[2] = {16, 64};
    kiln_value y = KILN_VALUE_NONE;
    for (int k = 0; k < 3; k++) {
        kiln_value ct = kiln_parameter(g, "ct", KILN_DTYPE_F32, 4, d4);
        ct = kiln_reshape(g, kiln_transpose(g, ct, (int[]){0, 2, 1, 3}), 2, c2);
        ct = kiln_pad(g, ct, kiln_scalar(g, KILN_DTYPE_F32, 0), (int64_t[]){0, 64 * k},
                      (int64_t[]){0, 128 - 64 * k}, NULL);
        y = k ? kiln_add(g, y, ct) : ct;
    }
    src = finish(g, y);
    CHECK(!strstr(src, "KILN_BRANCH_GUARD") && !strstr(src, " >= 0)"));
    CHECK_CONTAINS(src, "for (int64_t i1q = (jb > 64 ? jb : 64) / 16; i1q < (je < 128 ? je : "
                        "128) / 16; i1q++)");
    CHECK_CONTAINS(src, "for (int64_t i1r = 0; i1r < 16; i1r++) {");
    CHECK_CONTAINS(src, "i1r + i1q * 128 - 512]");
    CHECK_CONTAINS(src, "i1r + i1q * 128 - 1024]");
    CHECK(!strstr(src, "(i1 - "));
    free(src);
    kiln_graph_destroy(g);

    /* rows long enough to split in work items: each segment clipped to the item's chunk */
    g = graph();
    p = kiln_parameter(g, "p", KILN_DTYPE_F32, 2, (int64_t[]){2, 3});
    q = kiln_parameter(g, "q", KILN_DTYPE_F32, 2, (int64_t[]){2, 50000});
    src = finish(g, kiln_exp(g, kiln_concatenate(g, 2, (kiln_value[]){p, q}, 1)));
    CHECK_CONTAINS(src, "jb = (it % "); /* the items split the rows */
    CHECK_CONTAINS(src, "for (int64_t i1 = jb > 0 ? jb : 0; i1 < (je < 3 ? je : 3); i1++)");
    CHECK_CONTAINS(src, "i1 < (je < 50003 ? je : 50003)");
    free(src);
    kiln_graph_destroy(g);

    /* along the first axis the branch stays, decided per row before the element loop */
    g = graph();
    p = kiln_parameter(g, "p", KILN_DTYPE_F32, 2, (int64_t[]){3, 4});
    q = kiln_parameter(g, "q", KILN_DTYPE_F32, 2, (int64_t[]){5, 4});
    src = finish(g, kiln_exp(g, kiln_concatenate(g, 2, (kiln_value[]){p, q}, 0)));
    CHECK_CONTAINS(src, "const int kiln_g3 = i0 < 3;");
    CHECK_CONTAINS(src, "if (kiln_g3) {");
    CHECK_CONTAINS(src, "} else {");
    free(src);
    kiln_graph_destroy(g);

    /* a pad of the last axis: three segments, the middle one reading x, the others 0 */
    g = graph();
    p = kiln_parameter(g, "p", KILN_DTYPE_F32, 2, (int64_t[]){4, 6});
    src = finish(g, kiln_exp(g, kiln_pad(g, p, kiln_scalar(g, KILN_DTYPE_F32, 0), (int64_t[]){0, 2},
                                         (int64_t[]){0, 1}, NULL)));
    CHECK(!strstr(src, "if (") && !strstr(src, "KILN_BRANCH_GUARD"));
    CHECK_CONTAINS(src, "i1 < (je < 2 ? je : 2)");
    CHECK_CONTAINS(src, "for (int64_t i1 = jb > 8 ? jb : 8; i1 < (je < 9 ? je : 9); i1++)");
    CHECK_CONTAINS(src, "in0[i0 * 6 + i1 - 2]");
    free(src);
    kiln_graph_destroy(g);
}

static void test_simd_pragma(void) {
    int64_t d[2] = {16, 100};
    int ax = 1;
    kiln_graph *g = graph();
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    char *src = finish(g, kiln_reduce_max(g, kiln_exp(g, x), 1, &ax, false));
    CHECK_CONTAINS(src, "#pragma omp simd reduction(max:acc");
    CHECK_CONTAINS(src, " reduction(|:acc");
    CHECK_CONTAINS(src, "uint32_t acc"); /* the NaN flag as wide as an f32 lane */
    free(src);
    kiln_graph_destroy(g);

    /* f64: a 64-bit NaN flag, in the column form's row of them too */
    g = graph();
    x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d);
    int first = 0;
    kiln_value mm[2] = {kiln_reduce_min(g, x, 1, &ax, false),
                        kiln_reduce_max(g, x, 1, &first, false)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, mm));
    src = kernels_of(g, NULL);
    CHECK(src && strstr(src, "uint64_t acc2_nan = 0;") && strstr(src, "uint64_t acc1_nan[2048]"));
    CHECK(src && !strstr(src, "uint8_t acc"));
    free(src);
    kiln_graph_destroy(g);

    /* a softmax over rows of 16: 16 rows an item, step by step (kd_kernel.prologue_rows):
     * the max of each row without the pragma with AVX-512 (vectorised across the rows), the exps
     * kept in a simd loop along the row, their sum read back from it, and the elements that read
     * the kept exp back a simd loop too (gcc unrolled it whole and divided one lane at a time) */
    g = graph();
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, (int64_t[]){64, 16});
    src = finish(g, kiln_softmax(g, x, -1));
    CHECK_CONTAINS(src, "const int64_t row0 = it * 16, rn = row0 + 16 < 64 ? 16 : 64 - row0;");
    CHECK_CONTAINS(src, "for (int64_t kiln_r = 0; kiln_r < rn; kiln_r++) {");
    CHECK_CONTAINS(src, "float v6_b[16];");
    CHECK(!test_has_unguarded(src, "reduction(max:", NULL) &&
          !test_has_unguarded(src, "reduction(+:", NULL));
    CHECK_CONTAINS(src, "#if !KILN_ACROSS_ROWS\n            #pragma omp simd reduction(max:");
    CHECK_CONTAINS(src, "const float v11 = out0[row * 16 + r7_1];\n                acc7 += ");
    CHECK_CONTAINS(src, "#pragma omp simd\n            for (int64_t i1 = jb; i1 < je; i1++) {");
    free(src);
    kiln_graph_destroy(g);

    /* integer arithmetic in the reduced body: no simd pragma (the gcc 12 workaround; the
     * element loop's ivdep only says its buffers do not alias) */
    g = graph();
    x = kiln_parameter(g, "x", KILN_DTYPE_I32, 2, d);
    src = finish(g, kiln_reduce_sum(g, kiln_mul(g, x, x), 1, &ax, false));
    CHECK_LACKS(src, "#pragma omp");
    CHECK_CONTAINS(src, "uint64_t acc");
    free(src);
    kiln_graph_destroy(g);

    /* a column reduction vectorises across the kept axis */
    g = graph();
    ax = 0;
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    src = finish(g, kiln_reduce_sum(g, kiln_exp(g, x), 1, &ax, false));
    CHECK_CONTAINS(src, "#pragma omp simd\n");
    CHECK_CONTAINS(src, "double acc");
    /* f32: summed in f32 blocks, the blocks into the f64 row */
    CHECK_CONTAINS(src, "_b[i0 - jb] += v");
    CHECK_CONTAINS(src, "[j] += (double)acc");
    free(src);
    kiln_graph_destroy(g);
}

/* f32 sin and cos in an element loop: Cody and Waite alone first, the flag of an argument
 * past 2^21, and the exact rerun kept scalar (schedule.c, fast_trig_loop); not in place,
 * where the rerun would read what the first pass overwrote. */
static void test_fast_trig_form(void) {
    kiln_graph *g = graph();
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, (int64_t[]){1000});
    char *src = finish(g, kiln_add(g, kiln_sin(g, x), kiln_cos(g, x)));
    CHECK_CONTAINS(src, "uint32_t kiln_big = 0;");
    CHECK_CONTAINS(src, "= kiln_sin_fast_f32(v");
    CHECK_CONTAINS(src, "kiln_big |= kiln_trig_big_f32(v");
    CHECK_CONTAINS(src, "if (kiln_big) {");
    CHECK_CONTAINS(src, "KILN_SCALAR_LOOP();");
    CHECK_CONTAINS(src, "= kiln_cos_rerun_f32(v"); /* Payne-Hanek through the runtime table */
    free(src);
    kiln_graph_destroy(g);

    g = graph(); /* f64: libm's, no fast form */
    x = kiln_parameter(g, "x", KILN_DTYPE_F64, 1, (int64_t[]){1000});
    src = finish(g, kiln_sin(g, x));
    CHECK_LACKS(src, "kiln_big");
    free(src);
    kiln_graph_destroy(g);
}

static void test_provenance(void) {
    kiln_graph *g = graph();
    int64_t d[2] = {8, 32};
    int ax = 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d); /* %1 */
    kiln_graph_at(g, "src/nn/model.c", 41);
    kiln_value e = kiln_exp(g, x);    /* %2 */
    kiln_value s = kiln_add(g, e, e); /* %3 */
    kiln_graph_at(g, "src/nn/model.c", 42);
    kiln_value r = kiln_reduce_sum(g, s, 1, &ax, false); /* %4 */
    char *src = finish(g, r);
    CHECK_CONTAINS(src, "/* k0: %2 exp, %3 add (model.c:41), %4 reduce_sum (model.c:42) -> "
                        "writes %4 */\nKILN_EXPORT void kiln_k0(");
    free(src);
    kiln_graph_destroy(g);

    /* a huge kernel's comment stays one bounded line */
    g = graph();
    kiln_graph_at(g, "long.c", 7);
    kiln_value y = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    for (int i = 0; i < 300; i++)
        y = kiln_add(g, kiln_exp(g, y), kiln_scalar(g, KILN_DTYPE_F32, i));
    src = finish(g, y);
    const char *nl = strchr(src, '\n');
    CHECK(nl && nl - src < 600);
    CHECK_CONTAINS(src, "more -> writes %");
    free(src);
    kiln_graph_destroy(g);
}

/* Shifted slices of a padded x (a depthwise convolution along the rows): the ifs on the
 * pad's edges are decided by the row, so the element loop is printed twice, without a
 * branch for the rows inside every edge (print_c.c, print_versioned_loop). */
static void test_rows_inside_edges(void) {
    kiln_graph *g = graph();
    int64_t d[2] = {64, 32};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value xp = kiln_pad(g, x, kiln_scalar(g, KILN_DTYPE_F32, 0), (int64_t[]){1, 0},
                             (int64_t[]){1, 0}, NULL);
    kiln_value y = kiln_add(g, kiln_slice(g, xp, (int64_t[]){0, 0}, (int64_t[]){64, 32}, NULL),
                            kiln_slice(g, xp, (int64_t[]){2, 0}, (int64_t[]){66, 32}, NULL));
    char *src = finish(g, y);
    CHECK_CONTAINS(src, "if (kiln_g");
    CHECK_CONTAINS(src, " && kiln_g");
    CHECK_CONTAINS(src, "} else {");
    free(src);
    kiln_graph_destroy(g);
}

/* The whole text of one small kernel, so any change to the generated code shows here. */
static void test_stable_text(void) {
    kiln_graph *g = graph();
    int64_t d[2] = {4, 32}; /* past KD_SMALL_SUM: one staged block (a row of one block) */
    int ax = 1;
    kiln_graph_at(g, "m.c", 3);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value s = kiln_reduce_sum(g, kiln_mul(g, x, x), 1, &ax, false);
    char *src = finish(g, kiln_sqrt(g, s));
    static const char want[] =
        "/* k0: %2 mul, %3 reduce_sum, %4 sqrt (m.c:3) -> writes %4 */\n"
        "KILN_EXPORT void kiln_k0(void *const *b, int64_t begin, int64_t end) {\n"
        "    const float *restrict in0 = (const float *)b[0];\n"
        "    float *restrict out0 = (float *)b[1];\n"
        "    const uint32_t kiln_z = kiln_fence;\n"
        "    for (int64_t it = begin; it < end; it++) {\n"
        "        const int64_t row = it, jb = 0, je = 4;\n"
        "        for (int64_t i0 = jb; i0 < je; i0++) {\n"
        "            double acc2 = 0;\n"
        "            {\n"
        "                float acc2_t[32];\n"
        "                #pragma omp simd\n"
        "                for (int64_t r3_1 = 0; r3_1 < 32; r3_1++) {\n"
        "                    const float v4 = in0[i0 * 32 + r3_1];\n"
        "                    const float v5 = KILN_ROUNDED_f32((v4 * v4));\n"
        "                    acc2_t[r3_1] = v5;\n"
        "                }\n"
        "                acc2 += (double)kiln_sum_f32(acc2_t, 32);\n"
        "            }\n"
        "            const float v8 = (float)acc2;\n"
        "            const float v9 = sqrtf(v8);\n"
        "            out0[i0] = v9;\n"
        "        }\n"
        "    }\n"
        "}\n";
    CHECK_MSG(!strcmp(src, want), "got:\n%s", src);
    free(src);
    kiln_graph_destroy(g);

    /* a sum of KD_SMALL_SUM values or fewer is added straight into the f64 accumulator */
    g = graph();
    int64_t d8[2] = {4, 8};
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d8);
    src = finish(g, kiln_reduce_sum(g, x, 1, &ax, false));
    CHECK_CONTAINS(src, "acc2 += (double)v4;");
    CHECK(strstr(src, "acc2_t[") == NULL);
    free(src);
    kiln_graph_destroy(g);

    /* a row of more than one block adds straight into its lanes (print_lane_block) */
    g = graph();
    int64_t d1k[2] = {4, 1000};
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d1k);
    src = finish(g, kiln_reduce_sum(g, kiln_mul(g, x, x), 1, &ax, false));
    CHECK_CONTAINS(src, "acc2_l[r3_1 - r3_1c] += v5;");
    CHECK_CONTAINS(src, "acc2 += (double)kiln_fold16_f32(acc2_l);");
    CHECK(strstr(src, "kiln_sum_f32(") == NULL);
    free(src);
    kiln_graph_destroy(g);

    /* a product's value is rounded where it is made, so the sum reading it cannot fuse it
     * into an FMA in one kernel and not in another (KILN_ROUNDED): a mul and a product */
    g = graph();
    x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d8);
    kiln_value p = kiln_reduce_prod(g, kiln_mul(g, x, x), 1, &ax, false);
    src = finish(g, kiln_add(g, p, kiln_scalar(g, KILN_DTYPE_F64, 1)));
    CHECK_CONTAINS(src, "const uint32_t kiln_z = kiln_fence;");
    CHECK_CONTAINS(src, "= KILN_ROUNDED_f64((v4 * v4));");
    CHECK_CONTAINS(src, "= KILN_ROUNDED_f64((double)acc");
    free(src);
    kiln_graph_destroy(g);
}

/* --------------------------------------------------- compiled and run ---- */

static void test_run_divmod(void) {
    kiln_graph *g = graph();
    int64_t t[2] = {3, 4}, flat = 12;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, t);
    kiln_value y = kiln_reshape(g, kiln_transpose(g, x, (int[]){1, 0}), 1, &flat);
    y = kiln_add(g, y, kiln_scalar(g, KILN_DTYPE_F32, 0.5));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    float in[12], out[12];
    for (int i = 0; i < 12; i++) in[i] = (float)i;
    kiln_array *a = NULL, *o = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, t, in, &a));
    if (e && a) {
        CHECK_OK(ctx, kiln_executable_run(e, 1, &a, 1, &o));
        CHECK_OK(ctx, kiln_array_copy_to_host(o, out, sizeof out));
        for (int i = 0; i < 12; i++) CHECK_NEAR(out[i], in[(i % 3) * 4 + i / 3] + 0.5, 0);
    }
    kiln_array_destroy(o);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* A float iota converts its coordinate through int32 (print_stmt: AVX2 has no int64
 * vector conversion) and gets the value the int64 one would: exact below 2^24, rounded to
 * even above it, f32 and f64; an integer iota stays int64. */
static void test_run_float_iota(void) {
    int64_t n = (1 << 24) + 40;
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
        kiln_graph *g = graph();
        kiln_value y = kiln_mul(g, kiln_iota(g, dt, 1, &n, 0), kiln_scalar(g, dt, 1.0));
        char *src = finish(g, y);
        CHECK_CONTAINS(src, t ? "= (double)(int32_t)(" : "= (float)(int32_t)(");
        free(src);
        kiln_executable *e = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        kiln_array *o = NULL;
        size_t bytes = (size_t)n * (t ? 8 : 4);
        void *out = malloc(bytes);
        if (e && out && !kiln_executable_run(e, 0, NULL, 1, &o) &&
            !kiln_array_copy_to_host(o, out, bytes)) {
            int bad = 0;
            for (int64_t i = 0; i < n; i += i < 1000 || i > n - 1000 ? 1 : 997)
                bad += t ? ((double *)out)[i] != (double)i : ((float *)out)[i] != (float)i;
            CHECK_MSG(!bad, "%d wrong values", bad);
        }
        free(out);
        kiln_array_destroy(o);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    kiln_graph *g = graph();
    int64_t d = 100;
    char *src = finish(
        g, kiln_add(g, kiln_iota(g, KILN_DTYPE_I64, 1, &d, 0), kiln_scalar(g, KILN_DTYPE_I64, 1)));
    CHECK_LACKS(src, "(int32_t)(");
    free(src);
    kiln_graph_destroy(g);
}

/* Two column sums of one operand (a layer norm's gain and bias gradients): rows of
 * accumulators walked contiguously (no per-column strided reduction loop) whether fusion
 * puts both roots in one kernel or not, and the sums right. */
static void test_run_two_column_sums(void) {
    kiln_graph *g = graph();
    int64_t d[2] = {5, 3};
    int ax = 0;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value y = kiln_parameter(g, "y", KILN_DTYPE_F32, 2, d);
    kiln_value s = kiln_add(g, x, y);
    kiln_value outs[2] = {kiln_reduce_sum(g, kiln_mul(g, s, y), 1, &ax, false),
                          kiln_reduce_sum(g, s, 1, &ax, false)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    char *src = kernels_of(g, NULL);
    CHECK(src != NULL);
    if (src) {
        CHECK_CONTAINS(src, "acc1_b[i0 - jb] += ");
        CHECK_LACKS(src, "reduction(+:");
    }
    free(src);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    float xs[15], ys[15], o0[3], o1[3];
    for (int i = 0; i < 15; i++) xs[i] = (float)i, ys[i] = (float)(i % 4) - 1.5f;
    kiln_array *args[2] = {NULL, NULL}, *o[2] = {NULL, NULL};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, xs, &args[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, ys, &args[1]));
    if (e && args[0] && args[1]) {
        CHECK_OK(ctx, kiln_executable_run(e, 2, args, 2, o));
        CHECK_OK(ctx, kiln_array_copy_to_host(o[0], o0, sizeof o0));
        CHECK_OK(ctx, kiln_array_copy_to_host(o[1], o1, sizeof o1));
        for (int j = 0; j < 3; j++) {
            double w0 = 0, w1 = 0;
            for (int r = 0; r < 5; r++) {
                double v = (double)xs[r * 3 + j] + ys[r * 3 + j];
                w0 += v * ys[r * 3 + j];
                w1 += v;
            }
            CHECK_NEAR(o0[j], w0, 1e-5);
            CHECK_NEAR(o1[j], w1, 1e-5);
        }
    }
    for (int i = 0; i < 2; i++) kiln_array_destroy(o[i]), kiln_array_destroy(args[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* An im2col over a max pool (a CNN's second convolution): the nine slices of the padded
 * pool read it at positions of their own, so inlined the pool's select chain would run
 * nine times per element; fusion gives the pool (its pad) a buffer and the patch kernel
 * only copies (count_moves in src/passes/fusion.c). */
static void test_im2col_of_pool(void) {
    kiln_graph *g = graph();
    int64_t xd[4] = {2, 8, 8, 4}, wd[4] = {3, 3, 4, 8};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, xd);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 4, wd);
    kiln_window_options po = {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}};
    kiln_value h = kiln_reduce_window(g, kiln_relu(g, x), KILN_WINDOW_MAX, &po);
    kiln_conv_options co = {.padding = KILN_PADDING_SAME, .layout = KILN_CONV_NHWC};
    char *src = finish(g, kiln_conv_general_dilated(g, h, w, &co));
    int patches = 0;
    for (const char *k = src; (k = strstr(k, "/* k")); k++) {
        const char *eol = strchr(k, '\n');
        size_t n = eol ? (size_t)(eol - k) : strlen(k);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), k);
        if (!strstr(line, "concatenate")) continue;
        patches++;
        CHECK_LACKS(line, "select");
    }
    CHECK(patches == 1);
    free(src);
    kiln_graph_destroy(g);

    /* over 16 channels the patches' split loop, its chain of nine pieces inside, is
     * unrolled by pragma (print_c.c, c_loop) */
    g = graph();
    xd[3] = 16;
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, xd);
    w = kiln_parameter(g, "w", KILN_DTYPE_F32, 4, (int64_t[]){3, 3, 16, 8});
    src = finish(g, kiln_conv_general_dilated(g, x, w, &co));
    CHECK_CONTAINS(src, "#pragma GCC unroll 16\n");
    free(src);
    kiln_graph_destroy(g);
}

/* A max pool flattened into rows (the CNN's [N, 7, 7, 32] -> [N, 1568]): the row's
 * variable is divided by the channels (8) and by a pooled row's elements (24), a multiple
 * of them, so the element loop splits by 8 and the larger division is of the quotient
 * (schedule.c, kd_sched_split); and it computes the pool. */
static void test_run_split_multiples(void) {
    kiln_graph *g = graph();
    int64_t d[4] = {2, 4, 6, 8}, flat[2] = {2, 48};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, d);
    kiln_window_options po = {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}};
    kiln_value y = kiln_reshape(g, kiln_reduce_window(g, x, KILN_WINDOW_MAX, &po), 2, flat);
    char *src = finish(g, y);
    CHECK_CONTAINS(src, "for (int64_t i1r = 0; i1r < 8; i1r++)");
    CHECK_CONTAINS(src, "i1q / 3");
    CHECK_LACKS(src, "i1 / 24");
    free(src);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    enum { N = 2 * 4 * 6 * 8 };
    float in[N], out[96];
    for (int i = 0; i < N; i++) in[i] = (float)((i * 37) % 101);
    kiln_array *a = NULL, *o = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 4, d, in, &a));
    if (e && a) {
        CHECK_OK(ctx, kiln_executable_run(e, 1, &a, 1, &o));
        CHECK_OK(ctx, kiln_array_copy_to_host(o, out, sizeof out));
        for (int b = 0; b < 2; b++)
            for (int h = 0; h < 2; h++)
                for (int w = 0; w < 3; w++)
                    for (int c = 0; c < 8; c++) {
                        float m = -INFINITY;
                        for (int dh = 0; dh < 2; dh++)
                            for (int dw = 0; dw < 2; dw++)
                                m = fmaxf(m, in[((b * 4 + 2 * h + dh) * 6 + 2 * w + dw) * 8 + c]);
                        CHECK_NEAR(out[b * 48 + (h * 3 + w) * 8 + c], m, 0);
                    }
    }
    kiln_array_destroy(o);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* An if whose guards read only the row's indices (print_c.c, hoisted): its condition is
 * computed once before the element loop, the kernel is not KILN_BRANCH_GUARD, the loop
 * gets `#pragma GCC ivdep`; and it computes the same values. An interior pad along the
 * first axis [4, 6, 32] -> [8, 6, 32] (elements at odd rows read x), then a max pool's
 * gradient, whose kernels test the row's parity. */
static void test_hoisted_row_guards(void) {
    kiln_graph *g = graph();
    int64_t d[3] = {4, 6, 32}, lo[3] = {1, 0, 0}, hi[3] = {0, 0, 0}, in[3] = {1, 0, 0};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, d);
    kiln_value y = kiln_pad(g, kiln_neg(g, x), kiln_scalar(g, KILN_DTYPE_F32, 0), lo, hi, in);
    char *src = finish(g, y);
    CHECK_CONTAINS(src, "const int kiln_g");
    CHECK_CONTAINS(src, "(i0 - 1) % 2 == 0;");
    CHECK_CONTAINS(src, "if (kiln_g");
    CHECK_CONTAINS(src, "#pragma GCC ivdep");
    CHECK_LACKS(src, "KILN_BRANCH_GUARD");
    free(src);
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    enum { N = 4 * 6 * 32 };
    float *xs = malloc(N * sizeof *xs), *out = malloc(2 * N * sizeof *out);
    for (int i = 0; xs && i < N; i++) xs[i] = (float)i + 1;
    kiln_array *a = NULL, *o = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 3, d, xs, &a));
    if (e && a && out) {
        CHECK_OK(ctx, kiln_executable_run(e, 1, &a, 1, &o));
        CHECK_OK(ctx, kiln_array_copy_to_host(o, out, 2 * N * sizeof *out));
        for (int r = 0; r < 8; r++)
            for (int k = 0; k < 6 * 32; k++)
                CHECK_NEAR(out[r * 192 + k], r % 2 ? -xs[(r / 2) * 192 + k] : 0, 0);
    }
    kiln_array_destroy(o);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    free(xs);
    free(out);
    kiln_graph_destroy(g);

    g = graph();
    int64_t xd[4] = {2, 8, 8, 16};
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, xd);
    kiln_window_options po = {.window_dimensions = {1, 2, 2, 1}, .window_strides = {1, 2, 2, 1}};
    kiln_value loss = kiln_reduce_sum(g, kiln_reduce_window(g, x, KILN_WINDOW_MAX, &po), 4,
                                      (int[]){0, 1, 2, 3}, false);
    kiln_value dx;
    CHECK_OK(ctx, kiln_grad(g, loss, 1, &x, &dx));
    src = finish(g, dx);
    CHECK_CONTAINS(src, "if (kiln_g");
    CHECK_LACKS(src, "KILN_BRANCH_GUARD");
    /* rows of 16: the saved masks select through a blend (print_c.c, mask_select) */
    CHECK_CONTAINS(src, "kiln_select_f32(");
    free(src);
    kiln_graph_destroy(g);
}

/* ---------------------------------------------------- fault injection ---- */

/* Every kind of statement: pad, concatenate, take_rows, a reshape, reductions (row and
 * column), multiple outputs. */
static void fault_graph(kiln_graph *g, kiln_value *outs) {
    int64_t d[2] = {6, 5}, n = 3, lo[2] = {0, 1}, hi[2] = {0, 1}, in[2] = {0, 1}, r[2] = {5, 6};
    int ax0 = 0, ax1 = 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value idx = kiln_parameter(g, "i", KILN_DTYPE_I32, 1, &n);
    kiln_value p = kiln_pad(g, kiln_exp(g, x), kiln_scalar(g, KILN_DTYPE_F32, 0), lo, hi, in);
    kiln_value c = kiln_concatenate(g, 2, (kiln_value[]){x, kiln_neg(g, x)}, 1);
    kiln_value t = kiln_take_rows(g, kiln_reshape(g, kiln_tanh(g, x), 2, r), idx);
    kiln_value s = kiln_reduce_sum(g, p, 1, &ax1, false);
    outs[0] = kiln_add(g, kiln_reduce_max(g, c, 1, &ax1, false), s);
    outs[1] = kiln_reduce_max(g, c, 1, &ax0, false);
    outs[2] = kiln_reduce_sum(g, t, 1, &ax0, false);
}

typedef struct cgen_case {
    const kiln_graph *g;
    const fusion_plan *p;
    cgen_kernel *info;
    cgen_dialect dialect;
} cgen_case;

static kiln_status cgen_scenario(fault_run *r) {
    const cgen_case *c = r->user;
    strbuf sb;
    sb_init(&sb, ctx);
    fault_arm(r);
    kiln_status s = cgen_program_dialect(c->g, c->p, c->dialect, &sb, c->info);
    fault_disarm(r);
    sb_free(&sb);
    if (s) {
        CHECK_CONTAINS(kiln_last_error(ctx), "codegen");
        fault_note(r, ctx, s);
    }
    return s;
}

/* Every host allocation of cgen_program failed in turn (the shared sweep of fault.h), in
 * both dialects (the CUDA printer allocates its per-statement flags). */
static void test_fault_injection(void) {
    kiln_graph *g = graph();
    kiln_value outs[3];
    fault_graph(g, outs);
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    fusion_plan p;
    CHECK_OK(ctx, fusion_plan_build(g, &(fusion_options){0}, &p));
    cgen_kernel info[64];
    CHECK(p.n_kernels <= 64);
    for (int d = 0; d < 2; d++) {
        cgen_case c = {g, &p, info, d ? CGEN_DIALECT_CUDA : CGEN_DIALECT_C};
        fault_sweep sw = {.name = d ? "cgen_program (CUDA)" : "cgen_program",
                          .run = cgen_scenario,
                          .user = &c,
                          .max_runs = 100000,
                          .armed = &talloc};
        CHECK(fault_sweep_run(&sw) > 10);
    }
    fusion_plan_free(&p);
    kiln_graph_destroy(g);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    kiln_host_allocator a = test_allocator(&talloc);
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.host_allocator = &a;
    o.compile_tiers = 1; /* fault.h: no background build */
    char err[256];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) {
        fprintf(stderr, "cannot create a context: %s\n", err);
        return 2;
    }
    RUN(test_simplifier);
    RUN(test_elementwise_2d);
    RUN(test_half_roundings);
    RUN(test_staged_forms);
    RUN(test_rank3_rows);
    RUN(test_reshape_index);
    RUN(test_guards);
    RUN(test_simd_pragma);
    RUN(test_fast_trig_form);
    RUN(test_provenance);
    RUN(test_stable_text);
    RUN(test_rows_inside_edges);
    RUN(test_im2col_of_pool);
    RUN_CC(test_hoisted_row_guards);
    RUN_CC(test_run_divmod);
    RUN_CC(test_run_float_iota);
    RUN_CC(test_run_two_column_sums);
    RUN_CC(test_run_split_multiples);
    RUN(test_fault_injection);
    kiln_context_destroy(ctx);
    CHECK(talloc.live == 0 && !talloc.bad_size);
    return test_summary("test_codegen");
}
