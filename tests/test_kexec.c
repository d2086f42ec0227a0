/* test_kexec.c — the kernel description interpreter, the first compile tier
 * (src/codegen/kexec.c): one program per way the interpreter runs a kernel (kexec.c's
 * opening comment, KX_FORM_*), each checked to run at tier 1 in that form, against the
 * reference interpreter within the per-dtype tolerances, with the measured peak equal to
 * the planned one (cmp_graph), and then against the optimised build swapped in, which
 * must give the same bytes (compare.h, cmp_tier2_bits): the f32 sums in the C dialect's
 * blocks, across a loop's iterations, in the element loop's lanes, down columns one at a
 * time or row by row, in slices and in parts; and a kernel the interpreter cannot replay
 * (an f64 sum the compiler vectorises) compiled for tier 1 instead. Shapes are chosen so
 * that each form is taken (enough rows
 * for rows as lanes, few columns for the interchanged column reduction, a split last axis,
 * a reduction to one value big enough to be split into parts) and odd, so that partial
 * blocks of lanes run too. The suites that cover every op run at tier 1 as well
 * (KILN_TEST_TIER1, ctest's *_tier1); this file is the forms' own check, and the host
 * allocation failures of preparing and running them. */
#include "test.h"
#include "codegen/kexec.h"
#include "compare.h"
#include "fault.h"
#include "runtime/tier.h"

static kiln_context *ctx;
static uint64_t seed = 0x9e3779b97f4a7c15ull;

/* tier 1 for certain: tiers on, no disk cache, the background build held */
static kiln_context *tier1_context(void) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.compile_tiers = 2;
    o.cache_max_bytes = -1;
    o.num_threads = 2;
    kiln_context *c = NULL;
    char err[512];
    if (kiln_context_create(&o, &c, err, sizeof err)) fprintf(stderr, "%s\n", err);
    if (c) tier_hold(c, true);
    return c;
}

/* The forms kiln_compile's tier 1 gives g's kernels (0 with a failure counted). */
static unsigned forms_of(kiln_graph *g) {
    kiln_executable *e = NULL;
    if (kiln_compile(g, NULL, &e)) {
        CHECK_MSG(0, "compile: %s", kiln_last_error(ctx));
        return 0;
    }
    unsigned f = 0;
    CHECK(e->tier == 1 && e->interp);
    for (uint32_t i = 0; e->interp && i < e->n_interp; i++)
        if (e->interp[i]) f |= kx_forms(e->interp[i]);
    kiln_executable_destroy(e);
    return f;
}

/* Builds a one-parameter program (x of dtype t, dims) whose outputs `body` gives, checks
 * that it runs in every form of `want` at tier 1, and compares it with the reference. */
typedef int (*body_fn)(kiln_graph *g, kiln_value x, kiln_value *outs);

static void check_program(const char *name, kiln_dtype t, int rank, const int64_t *dims,
                          body_fn body, unsigned want, double tol) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, name, &g));
    kiln_value x = kiln_parameter(g, "x", t, rank, dims);
    kiln_value outs[4];
    int n = body(g, x, outs);
    CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
    unsigned f = forms_of(g);
    CHECK_MSG((f & want) == want, "%s: forms 0x%x, want 0x%x", name, f, want);
    kiln_array *a = cmp_random_array(ctx, t, rank, dims, &seed);
    CHECK_MSG(cmp_graph(ctx, g, 1, &a, NULL, tol, NULL), "%s against the reference", name);
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
}

/* softmax and a row max over rows of 24: rows as lanes, the prologue's reductions */
static int body_short_rows(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 1;
    outs[0] = kiln_softmax(g, x, 1);
    outs[1] = kiln_reduce_max(g, x, 1, &ax, false);
    return 2;
}

/* a transpose whose stride is a multiple of 1 KiB (tiled: few columns an item), then an
 * elementwise op: rows as lanes */
static int body_transpose(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int perm[2] = {1, 0};
    outs[0] = kiln_tanh(g, kiln_transpose(g, x, perm));
    return 1;
}

/* sums down the rows of few columns: the column form, interchanged */
static int body_columns(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 0;
    outs[0] = kiln_reduce_sum(g, kiln_mul(g, x, x), 1, &ax, false);
    outs[1] = kiln_reduce_max(g, x, 1, &ax, false);
    return 2;
}

/* pairs swapped and rotated along the last axis (RoPE's interleave): a split last axis */
enum { IL_N = 300, IL_D = 64 };
static int body_interleave(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int64_t n = IL_N, d = IL_D;
    int64_t pd[3] = {n, d / 2, 2}, one[3] = {n, d / 2, 1};
    kiln_value p = kiln_reshape(g, x, 3, pd);
    int64_t z[3] = {0, 0, 0}, e0[3] = {n, d / 2, 1}, s1[3] = {0, 0, 1}, e1[3] = {n, d / 2, 2};
    kiln_value a = kiln_slice(g, p, z, e0, NULL), b = kiln_slice(g, p, s1, e1, NULL);
    kiln_value parts[2] = {kiln_neg(g, kiln_reshape(g, b, 3, one)), kiln_reshape(g, a, 3, one)};
    int64_t back[2] = {n, d};
    outs[0] = kiln_add(g, kiln_reshape(g, kiln_concatenate(g, 2, parts, 2), 2, back), x);
    return 1;
}

/* one value from many: a split reduction (parts), and a row sum of few long rows (each
 * element with a long loop: one element at a time, the loop across) */
static int body_scalar(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 1;
    outs[0] = kiln_reduce_sum(g, kiln_exp(g, x), 0, NULL, false);
    outs[1] = kiln_reduce_sum(g, kiln_sin(g, x), 1, &ax, false);
    return 2;
}

/* a pad with interior and negative edges and a concatenation at offsets that are not a
 * multiple of the lanes: guards that vary between lanes (masks) */
static int body_masks(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int64_t lo[2] = {1, -3}, hi[2] = {2, 5}, in[2] = {0, 1};
    kiln_value z = kiln_scalar(g, KILN_DTYPE_F32, 0.5);
    kiln_value p = kiln_pad(g, x, z, lo, hi, in);
    kiln_value xs[3] = {x, kiln_exp(g, x), kiln_neg(g, x)};
    outs[0] = kiln_mul(g, p, kiln_scalar(g, KILN_DTYPE_F32, 2));
    outs[1] = kiln_concatenate(g, 3, xs, 1);
    return 2;
}

/* bf16 in and out, rounded at each op; an integer path through compare and select */
static int body_bf16(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 1;
    kiln_value y = kiln_mul(g, kiln_exp(g, x), x);
    outs[0] = y;
    outs[1] = kiln_reduce_sum(g, y, 1, &ax, false);
    kiln_value i =
        kiln_convert(g, kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_BF16, 8)), KILN_DTYPE_I32);
    outs[2] = kiln_select(g, kiln_compare(g, i, kiln_scalar(g, KILN_DTYPE_I32, 0), KILN_CMP_GT), i,
                          kiln_neg(g, i));
    return 3;
}

/* f32 sums of long rows, as many blocks and a partial one: a row sum of few rows (one
 * element at a time, the loop across), the same sum kept beside the values (the element
 * loop's lanes), a softmax's row values across, and a sum over two axes (the block inside
 * the outer loop) */
static int body_blocks(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 1, both[2] = {0, 1};
    outs[0] = kiln_reduce_sum(g, kiln_tanh(g, x), 1, &ax, false);
    outs[1] = kiln_softmax(g, x, 1);
    outs[2] = kiln_reduce_sum(g, kiln_mul(g, x, x), 2, both, false);
    return 3;
}

/* short rows (at most 16 values): a softmax (a prologue taken row by row, its kept row
 * summed without a pragma on AVX-512) and a row sum of costly values (an `omp simd` f64
 * reduction: compiled for tier 1) */
static int body_short_sums(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 1;
    outs[0] = kiln_softmax(g, x, 1);
    outs[1] = kiln_reduce_sum(g, kiln_exp(g, kiln_sin(g, x)), 1, &ax, false);
    return 2;
}

/* f32 sums down long columns: row by row over many columns, in column blocks */
static int body_col_blocks(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 0;
    outs[0] = kiln_reduce_sum(g, kiln_exp(g, x), 1, &ax, false);
    outs[1] = kiln_mean(g, x, 1, &ax, false);
    return 2;
}

/* a sum to one value of a long row in slices, beside a row sum whose element lanes hold
 * sliced sums */
static int body_slices(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 1;
    outs[0] = kiln_reduce_sum(g, kiln_sin(g, x), 1, &ax, false);
    outs[1] = kiln_reduce_sum(g, kiln_mul(g, x, x), 0, NULL, false);
    return 2;
}

/* f64 sums the C compiler vectorises in its own order (`omp simd` reductions): the
 * kernels compiled for tier 1 */
static int body_f64(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int ax = 1;
    outs[0] = kiln_reduce_sum(g, kiln_exp(g, x), 1, &ax, false);
    outs[1] = kiln_mul(g, x, kiln_scalar(g, KILN_DTYPE_F64, 3));
    return 2;
}

/* A float op of literals only, which gcc folds at compile time (each step rounded apart,
 * where the op library fuses them): a padding's tanh. Compiled for tier 1 too. */
static int body_folded(kiln_graph *g, kiln_value x, kiln_value *outs) {
    int64_t lo[2] = {1, 0}, hi[2] = {1, 3}, in[2] = {0, 0};
    kiln_value p = kiln_pad(g, x, kiln_scalar(g, KILN_DTYPE_F64, -0.5), lo, hi, in);
    outs[0] = kiln_exp(g, kiln_tanh(g, p));
    outs[1] = kiln_sin(g, x); /* a kernel of its own, interpreted */
    return 2;
}

/* A program whose every LOOP kernel tier 1 would compile: one tier, the whole -O3 build
 * compiled by kiln_compile (nothing to interpret, and no second compile of the same). */
static void test_all_compiled(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "all_compiled", &g));
    int64_t d[2] = {37, 101};
    int ax = 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d);
    kiln_value out = kiln_reduce_sum(g, kiln_exp(g, x), 1, &ax, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
    kiln_executable *e = NULL;
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    if (e && tier_same_bits(e)) {
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        CHECK(e->tier == 2 && !e->interp && info.compile_tier == 2 && !e->tier1_compiled);
    } else if (e) { /* no bits promised (a clang or TSan build): interpreted */
        CHECK(e->tier == 1 && e->interp && e->interp[0] && !e->tier1_compiled);
    }
    kiln_executable_destroy(e);
    kiln_array *a = cmp_random_array(ctx, KILN_DTYPE_F64, 2, d, &seed);
    CHECK(cmp_graph(ctx, g, 1, &a, NULL, 1e-5, NULL));
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
}

/* How many of g's LOOP kernels tier 1 compiles rather than interprets: want where the
 * tiers promise the same bits (tier_same_bits), else none (the interpreter runs them
 * within rounding, with no compiler). */
static void check_compiled_for_tier1(kiln_graph *g, uint32_t want) {
    kiln_executable *e = NULL;
    kiln_compile_options o = {.keep_ir = true}; /* the listing reads it */
    if (kiln_compile(g, &o, &e)) {
        CHECK_MSG(0, "compile: %s", kiln_last_error(ctx));
        return;
    }
    uint32_t n = e->tier1_compiled;
    CHECK_MSG(n == (tier_same_bits(e) ? want : 0), "%u kernels compiled for tier 1", n);
    char *text = kiln_executable_to_string(e);
    if (n) CHECK_CONTAINS(text, "compiled for tier 1");
    kiln_string_free(ctx, text);
    kiln_executable_destroy(e);
}

static void test_replayed_sums(void) {
    int64_t few[2] = {3, 1003}, lanes[2] = {301, 700}, two[3] = {7, 30, 41}, col[2] = {1001, 300},
            sl[2] = {5, 33001}, d64[2] = {37, 101}, pd[2] = {4, 5};
    check_program("blocks", KILN_DTYPE_F32, 2, few, body_blocks,
                  KX_FORM_BLOCKS | KX_FORM_ACROSS | KX_FORM_ONE_BY_ONE, 1e-5);
    check_program("block_lanes", KILN_DTYPE_F32, 2, lanes, body_blocks, KX_FORM_BLOCKS, 1e-5);
    check_program("block_two_axes", KILN_DTYPE_F32, 3, two, body_blocks, KX_FORM_BLOCKS, 1e-5);
    check_program("col_blocks", KILN_DTYPE_F32, 2, col, body_col_blocks, KX_FORM_BLOCKS, 1e-5);
    check_program("slices", KILN_DTYPE_F32, 2, sl, body_slices,
                  KX_FORM_SLICES | KX_FORM_BLOCKS | KX_FORM_PARTS, 1e-5);
    check_program("bf16_blocks", KILN_DTYPE_BF16, 2, lanes, body_blocks, KX_FORM_BLOCKS, 1e-5);
    int64_t r16[2] = {301, 16}, r8[2] = {300, 8}, r3[2] = {129, 3}, r12[2] = {77, 12};
    check_program("rows16", KILN_DTYPE_F32, 2, r16, body_short_sums, 0, 1e-5);
    check_program("rows8", KILN_DTYPE_F32, 2, r8, body_short_sums, 0, 1e-5);
    check_program("rows3", KILN_DTYPE_F32, 2, r3, body_short_sums, 0, 1e-5);
    check_program("rows12", KILN_DTYPE_F32, 2, r12, body_short_sums, 0, 1e-5);
    /* the interpreter's refusals: compiled for tier 1, the same bits all the same */
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "f64_count", &g));
    kiln_value outs[2];
    int n = body_f64(g, kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d64), outs);
    CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
    check_compiled_for_tier1(g, 1);
    kiln_graph_destroy(g);
    check_program("f64", KILN_DTYPE_F64, 2, d64, body_f64, 0, 1e-5);
    CHECK_OK(ctx, kiln_graph_create(ctx, "folded_count", &g));
    n = body_folded(g, kiln_parameter(g, "x", KILN_DTYPE_F64, 2, pd), outs);
    CHECK_OK(ctx, kiln_graph_finish(g, n, outs));
    check_compiled_for_tier1(g, 1);
    kiln_graph_destroy(g);
    check_program("folded", KILN_DTYPE_F64, 2, pd, body_folded, 0, 1e-5);
}

static void test_forms(void) {
    int64_t rows[2] = {301, 24}, tr[2] = {300, 512}, cols[2] = {5001, 7}, il[2] = {IL_N, IL_D},
            sc[2] = {4, 70001}, mk[2] = {37, 300}, hb[2] = {129, 33};
    check_program("short_rows", KILN_DTYPE_F32, 2, rows, body_short_rows, KX_FORM_ROW_LANES, 1e-5);
    check_program("transpose", KILN_DTYPE_F32, 2, tr, body_transpose, KX_FORM_ROW_LANES, 1e-5);
    check_program("columns", KILN_DTYPE_F32, 2, cols, body_columns, KX_FORM_INTERCHANGE, 1e-5);
    check_program("interleave", KILN_DTYPE_F32, 2, il, body_interleave, KX_FORM_SPLIT_LANES, 1e-5);
    check_program("scalar", KILN_DTYPE_F32, 2, sc, body_scalar,
                  KX_FORM_PARTS | KX_FORM_ONE_BY_ONE | KX_FORM_ACROSS, 1e-5);
    check_program("masks", KILN_DTYPE_F32, 2, mk, body_masks, 0, 1e-5);
    check_program("bf16", KILN_DTYPE_BF16, 2, hb, body_bf16, 0, 1e-5);
}

/* Compiling and running the "scalar" program at tier 1 in a context of the run's
 * allocator: its parts' scratch and each run's scratch are host allocations too. */
static kiln_status tier1_scenario(fault_run *r) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.host_allocator = &r->host;
    o.compile_tiers = 2;
    o.cache_max_bytes = -1;
    o.num_threads = 2;
    kiln_context *c = NULL;
    kiln_status s = kiln_context_create(&o, &c, r->message, sizeof r->message);
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    kiln_array *a = NULL, *out[2] = {0};
    int64_t d[2] = {4, 70001};
    if (!s) {
        tier_hold(c, true);
        s = kiln_graph_create(c, "faults", &g);
    }
    if (!s) {
        kiln_value outs[2];
        int n = body_scalar(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d), outs);
        s = kiln_graph_finish(g, n, outs);
    }
    if (!s) s = kiln_array_create(c, KILN_DTYPE_F32, 2, d, NULL, &a);
    if (!s) s = kiln_compile(g, NULL, &e);
    if (!s) s = kiln_executable_run(e, 1, &a, 2, out);
    fault_note(r, c, s);
    for (int i = 0; i < 2; i++) kiln_array_destroy(out[i]);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    kiln_context_destroy(c);
    return s;
}

/* Every host allocation of that failed in turn: each ends in KILN_STATUS_HOST_OOM with a
 * message and nothing leaked (fault.h's contract). */
static void test_host_failures(void) {
    fault_sweep sw = {.name = "tier-1 compile and run", .run = tier1_scenario, .max_runs = 6000};
    long n = fault_sweep_run(&sw);
    printf("fault injection: %ld host allocations of a tier-1 compile and run failed in turn\n", n);
}

int main(void) {
    ctx = tier1_context();
    if (!ctx) return 1;
    test_tier_bits_always = true; /* every program's tier 2 gives tier 1's bytes */
    RUN_CC(test_forms);
    RUN_CC(test_replayed_sums);
    RUN_CC(test_all_compiled);
    RUN_CC(test_host_failures);
    kiln_context_destroy(ctx);
    return test_summary("kexec");
}
