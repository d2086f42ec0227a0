/* test_half_forms.c — the C printer's kernel forms (src/codegen/schedule.c, print_c.c) in
 * bf16 and f16, compiled and compared with the reference interpreter. test_half_ops.c
 * walks the ops; this walks the forms the printer chooses by shape, whose 16-bit paths
 * are taken by few programs: a review found two bugs there that no suite saw (a softmax
 * over rows of 16 that summed its kept row's raw 16-bit integers in print_prologue_rows,
 * and fast sin and cos that skipped the 16-bit rounding).
 *
 * Each case builds one program (several outputs, so one compile covers several kernels)
 * and is checked four ways, in bf16 and in f16:
 *  - fused, by default: within the case's tolerance of the reference (cmp_graph, which
 *    also checks the memory plan), with at most FORM_DIFFER_MAX of an output's elements
 *    differing from the reference's bits at all (unfused too: a rounding left out moves
 *    many elements by an ulp, within the tolerance), and the fused source must hold the
 *    text of the form
 *    the case is for (so that a change of the schedule that leaves the form untested
 *    fails here rather than passing quietly);
 *  - unfused, and unfused with excess precision (a kernel per op: every value is stored,
 *    so rounded, between ops, and the option changes nothing): within the same tolerance;
 *  - fused with kiln_compile_options.allow_excess_precision: a kernel then rounds a
 *    16-bit value once, where it stores it, so it no longer follows the reference's
 *    rounding after every op; instead it is compared with the same program built in f32
 *    on the same (widened) inputs, through the interpreter: an output computed in f32
 *    and rounded once is within half an ulp of the 16-bit type of the f32 program's, plus
 *    the f32 error of the kernel's functions (a few f32 ulps), plus what the values
 *    rounded where one kernel hands them to the next pass on. Each case says how many
 *    ulps that is (xp); a case whose ops round with the option as without (converts) is
 *    held to the reference at the default tolerance instead (xp 0).
 * Tolerances are in ulps of the type (2^-7 for bf16, 2^-10 for f16) relative to 1 + |want|
 * (compare.h, test_close), never below cmp_half_tol's two.
 *
 * The forms and the shapes that give them (kdesc.h):
 *  prologue rows    softmax / log_softmax / a layer norm over rows of 16, 8, 3 (16 rows an
 *                   item, each prologue step across them; a last item of fewer rows)
 *  row blocks       a transpose read with a stride of a multiple of 1 KiB (NCHW -> NHWC),
 *                   8 rows an item (16-bit: no 8 x 8 register transpose, the plain block)
 *  tiled            a transpose whose rows are several items (columns down the rows first)
 *  merged rows      an elementwise kernel over [.., A, B], B < 16 (KD_SHORT_ROW), and the
 *                   split loops of a reshape (i / B, i % B)
 *  split unrolled   an interleave on a split-off axis (RoPE, sin and cos stacked)
 *  segments         a concatenation or a pad along the last axis
 *  fast trig        sin and cos in an element loop, exact rerun for large arguments
 *  staged stores    16-bit stores 32 at a time (rows of 101, 2053; in place, donated)
 *  columns          a reduction over the leading axis ([4096, 37])
 *  parts            a sum of [2^20] to a scalar, split across threads
 *  short reduce     rows of 5..16 reduced along the last axis
 *  and cumsum, take_rows, selects on bool masks (a bitwise blend in rows < 32) and
 *  chains of converts f32 <-> bf16 <-> f16 (special values too). */
#include "compare.h"
#include "ir/ir.h"

#include "base/half.h"

static kiln_context *ctx;
static char cache_dir[] = "/tmp/kiln-test-half-forms-XXXXXX"; /* main makes it */
static uint64_t seed;

static const kiln_dtype halves[] = {KILN_DTYPE_BF16, KILN_DTYPE_F16};
/* The 16-bit type of the case being checked, also while its f32 program is built. */
static kiln_dtype form_half;

/* Builds the case's outputs in dtype t (F32 for the excess-precision comparison); returns
 * their count. Scalars must be exact in bf16 and f16, so the f32 program is the same one. */
typedef int (*form_build)(kiln_graph *g, kiln_dtype t, kiln_value *outs);

static kiln_value param(kiln_graph *g, const char *name, kiln_dtype t, int rank,
                        const int64_t *dims) {
    return kiln_parameter(g, name, t, rank, dims);
}

static kiln_value sc(kiln_graph *g, kiln_dtype t, double v) {
    return kiln_scalar(g, t, v);
}

/* ------------------------------------------------------------ the cases ---- */

static kiln_value iota_t(kiln_graph *g, kiln_dtype t, int rank, const int64_t *dims, int axis);

/* Prologue rows (print_prologue_rows): a softmax over [64, 16] (the kept exp row, the
 * fixed bug: 16-bit kept rows are summed where computed), over [37, 16] (a last item of 5
 * rows), a log_softmax over rows of 8 and a softmax and a layer norm over rows of 3 (no
 * pragma along them, tiny). */
static int b_prologue_rows(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d16[2] = {64, 16}, d37[2] = {37, 16}, d8[2] = {64, 8}, d3[2] = {64, 3}, s3[1] = {3};
    kiln_value a = param(g, "a", t, 2, d16), b = param(g, "b", t, 2, d37);
    kiln_value c = param(g, "c", t, 2, d8), d = param(g, "d", t, 2, d3);
    kiln_value s = param(g, "s", t, 1, s3), z = param(g, "z", t, 1, s3);
    int n = 0;
    o[n++] = kiln_softmax(g, a, 1);
    o[n++] = kiln_softmax(g, b, -1);
    o[n++] = kiln_log_softmax(g, c, 1);
    o[n++] = kiln_softmax(g, d, 1);
    /* apart by 5 within a row: a standard deviation of at least about 2, so that the
     * rounded moments one kernel hands another (excess precision) are not magnified by a
     * small one */
    kiln_value spread = kiln_mul(g, iota_t(g, t, 2, d3, 1), sc(g, t, 5));
    o[n++] = kiln_layer_norm(g, kiln_add(g, d, spread), s, z, 0x1p-10);
    return n;
}

/* A mean and variance written out over rows of 16 and 8 (two row values, one read by the
 * other's reduction), then normalised: a layer norm's forward pass as a model writes it. */
static int b_prologue_moments(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d16[2] = {48, 16}, d8[2] = {40, 8};
    int a1 = 1, n = 0;
    kiln_value xs[2] = {param(g, "x", t, 2, d16), param(g, "y", t, 2, d8)};
    for (int i = 0; i < 2; i++) {
        kiln_value x = xs[i];
        kiln_value m = kiln_mean(g, x, 1, &a1, true);
        kiln_value c = kiln_sub(g, x, m);
        kiln_value v = kiln_mean(g, kiln_mul(g, c, c), 1, &a1, true);
        o[n++] = kiln_mul(g, c, kiln_rsqrt(g, kiln_add(g, v, sc(g, t, 0x1p-8))));
    }
    return n;
}

/* Transposes read across the last axis with a stride of a multiple of 1 KiB: NCHW ->
 * NHWC of [2, 16, 32, 32] (the rows' 16 channels read 2 KiB apart) and a batched [4, 64,
 * 512] (a stride of 512 elements), in row blocks of 8, fused with an op that rounds. */
static int b_row_blocks(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t xd[4] = {2, 16, 32, 32}, yd[3] = {4, 64, 512};
    kiln_value x = param(g, "x", t, 4, xd), y = param(g, "y", t, 3, yd);
    int n = 0;
    o[n++] = kiln_transpose(g, x, (int[]){0, 2, 3, 1});
    o[n++] = kiln_mul(g, kiln_transpose(g, x, (int[]){0, 2, 3, 1}), sc(g, t, 3));
    o[n++] = kiln_add(g, kiln_transpose(g, y, (int[]){0, 2, 1}), sc(g, t, 0.5));
    /* widened to f32 around the transpose (4-byte values, but the input's are 2) */
    o[n++] = kiln_transpose(g, kiln_convert(g, x, KILN_DTYPE_F32), (int[]){0, 2, 3, 1});
    o[n++] = kiln_convert(g, kiln_transpose(g, x, (int[]){0, 2, 3, 1}), KILN_DTYPE_F32);
    return n;
}

/* Transposes whose rows are several items, taken down the rows first: [3000, 42] (rows of
 * 3000 in chunks, a stride of 42; 42 rows, so not in row blocks) and [96, 512] ->
 * [512, 96] (a stride of 1 KiB), and 2-D transposes of [64, 64] and [48, 40] (rows one
 * item each). */
static int b_tiled(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {3000, 42}, bd[2] = {96, 512}, cd[2] = {64, 64}, dd[2] = {48, 40};
    kiln_value a = param(g, "a", t, 2, ad), b = param(g, "b", t, 2, bd);
    kiln_value c = param(g, "c", t, 2, cd), d = param(g, "d", t, 2, dd);
    int n = 0;
    o[n++] = kiln_exp(g, kiln_transpose(g, a, (int[]){1, 0}));
    o[n++] = kiln_sub(g, kiln_transpose(g, b, (int[]){1, 0}), sc(g, t, 1.5));
    o[n++] = kiln_tanh(g, kiln_transpose(g, c, (int[]){1, 0}));
    o[n++] = kiln_mul(g, kiln_transpose(g, d, (int[]){1, 0}), kiln_transpose(g, d, (int[]){1, 0}));
    return n;
}

/* A short last axis merged into the one before (KD_SHORT_ROW): NCHW -> NHWC with 3
 * channels, an elementwise chain over [50, 7, 3], and a broadcast over rows of 5. */
static int b_merged(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t xd[4] = {2, 3, 16, 16}, yd[3] = {50, 7, 3}, zd[3] = {40, 9, 5}, bd[1] = {5};
    kiln_value x = param(g, "x", t, 4, xd), y = param(g, "y", t, 3, yd);
    kiln_value z = param(g, "z", t, 3, zd), b = param(g, "b", t, 1, bd);
    int n = 0;
    o[n++] = kiln_mul(g, kiln_transpose(g, x, (int[]){0, 2, 3, 1}), sc(g, t, 1.5));
    o[n++] = kiln_add(g, kiln_mul(g, kiln_tanh(g, y), y), sc(g, t, 0.25));
    o[n++] = kiln_mul(g, kiln_exp(g, z), kiln_broadcast_in_dim(g, b, 3, zd, (int[]){2}));
    return n;
}

/* Interleaves on a split-off axis (print_split_unrolled): sin and cos stacked on a new
 * last axis and flattened (positional encodings), and RoPE's rotation of pairs. */
static int b_interleave(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t pd[2] = {8, 32}, xd[2] = {8, 64}, x3[3] = {8, 32, 2}, h3[3] = {8, 32, 1};
    int64_t flat[2] = {8, 64};
    kiln_value p = param(g, "p", t, 2, pd), x = param(g, "x", t, 2, xd);
    kiln_value cs = param(g, "cs", t, 2, pd), sn = param(g, "sn", t, 2, pd);
    int n = 0;
    kiln_value sc2[2] = {kiln_sin(g, p), kiln_cos(g, p)};
    o[n++] = kiln_reshape(g, kiln_stack(g, 2, sc2, 2), 2, flat);
    kiln_value pr = kiln_reshape(g, x, 3, x3);
    kiln_value x0 = kiln_reshape(g, kiln_slice(g, pr, (int64_t[]){0, 0, 0}, h3, NULL), 2, pd);
    kiln_value x1 = kiln_reshape(g, kiln_slice(g, pr, (int64_t[]){0, 0, 1}, x3, NULL), 2, pd);
    kiln_value r[2] = {kiln_sub(g, kiln_mul(g, x0, cs), kiln_mul(g, x1, sn)),
                       kiln_add(g, kiln_mul(g, x0, sn), kiln_mul(g, x1, cs))};
    o[n++] = kiln_reshape(g, kiln_stack(g, 2, r, 2), 2, flat);
    return n;
}

/* Segments of the last axis (print_segments): sin and cos side by side (Fourier
 * features), a concatenation of three, and a pad on both ends of the last axis. */
static int b_segments(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {8, 40}, bd[2] = {8, 24}, cd[2] = {6, 70};
    kiln_value a = param(g, "a", t, 2, ad), b = param(g, "b", t, 2, bd),
               c = param(g, "c", t, 2, cd);
    int n = 0;
    o[n++] = kiln_concatenate(g, 2, (kiln_value[]){kiln_sin(g, a), kiln_cos(g, a)}, 1);
    o[n++] = kiln_concatenate(
        g, 3, (kiln_value[]){kiln_exp(g, a), kiln_mul(g, b, sc(g, t, 3)), kiln_neg(g, a)}, 1);
    int64_t lo[2] = {0, 5}, hi[2] = {0, 11};
    o[n++] = kiln_mul(g, kiln_pad(g, c, sc(g, t, -1.5), lo, hi, NULL), sc(g, t, 1.5));
    return n;
}

/* Fast sin and cos (print_fast_trig) fused with ops that read them: the fixed bug, sin
 * and cos not rounded to the type before the product. Arguments up to 8 and one row with
 * arguments of 2^21 and more (the exact rerun). */
static int b_fast_trig(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t yd[2] = {4, 100}, zd[1] = {1000};
    kiln_value y = param(g, "y", t, 2, yd), z = param(g, "z", t, 1, zd);
    int n = 0;
    o[n++] = kiln_mul(g, kiln_sin(g, y), sc(g, t, 3));
    o[n++] = kiln_add(g, kiln_cos(g, kiln_mul(g, z, sc(g, t, 4))), z);
    o[n++] = kiln_mul(g, kiln_sin(g, z), kiln_cos(g, z));
    return n;
}

/* The same with large arguments: f16 holds up to 65504, so 2^21 is out of its range;
 * bf16 reaches it. A scale of the type's largest power of two that keeps the argument
 * finite, so that some lanes are big (bf16) and the exact rerun runs. */
static int b_trig_big(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {3, 64};
    kiln_value y = param(g, "y", t, 2, d);
    (void)t;
    double big = form_half == KILN_DTYPE_F16 ? 0x1p14 : 0x1p22;
    kiln_value a = kiln_mul(g, y, sc(g, t, big));
    o[0] = kiln_mul(g, kiln_sin(g, a), sc(g, t, 3));
    o[1] = kiln_add(g, kiln_cos(g, a), sc(g, t, 0.5));
    return 2;
}

/* Staged stores (print_staged_loop): rows of 101 (three blocks and a scalar rest), 2053
 * (a chunk of 2048 and one of 5), 37 x 33, and a softmax over rows of 101 (a kept value:
 * no overlapping last block). */
static int b_staged(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {37, 101}, bd[2] = {3, 2053}, cd[2] = {37, 33};
    kiln_value a = param(g, "a", t, 2, ad), b = param(g, "b", t, 2, bd),
               c = param(g, "c", t, 2, cd);
    int n = 0;
    o[n++] = kiln_add(g, kiln_mul(g, kiln_tanh(g, b), sc(g, t, 2)), sc(g, t, 1));
    o[n++] = kiln_softmax(g, a, 1);
    o[n++] = kiln_sub(g, kiln_mul(g, a, a), sc(g, t, 0.5));
    o[n++] = kiln_logistic(g, kiln_mul(g, c, sc(g, t, 1.5)));
    /* through f16's subnormals and back: the rounding there, scaled to be seen */
    o[n++] = kiln_mul(g, kiln_mul(g, c, sc(g, t, 0x1p-15)), sc(g, t, 0x1p15));
    o[n++] = kiln_add(g, kiln_mul(g, param(g, "r32", t, 2, (int64_t[]){40, 32}), sc(g, t, 3)),
                      sc(g, t, 0.5));
    o[n++] = kiln_add(g, kiln_mul(g, param(g, "r31", t, 2, (int64_t[]){40, 31}), sc(g, t, 3)),
                      sc(g, t, 0.5));
    o[n++] =
        kiln_convert(g, kiln_mul(g, kiln_convert(g, c, KILN_DTYPE_F32), sc(g, KILN_DTYPE_F32, 0.1)),
                     t); /* an f32 value stored as t */
    return n;
}

/* A reduction over the leading axis (the column form): sum, max and mean over 4096 rows
 * of 37, and a sum of squares over 300 rows. */
static int b_columns(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t xd[2] = {4096, 37}, yd[2] = {300, 130};
    kiln_value x = param(g, "x", t, 2, xd), y = param(g, "y", t, 2, yd);
    int a0 = 0, n = 0;
    o[n++] = kiln_reduce_sum(g, x, 1, &a0, false);
    o[n++] = kiln_reduce_max(g, x, 1, &a0, false);
    o[n++] = kiln_mean(g, x, 1, &a0, true);
    o[n++] = kiln_reduce_sum(g, kiln_mul(g, y, y), 1, &a0, false);
    return n;
}

/* A reduction of [2^20] to a scalar, split into parts (kiln_k<i>_part): sum, max, and the
 * sum of a product. */
static int b_parts(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[1] = {1 << 20};
    kiln_value x = param(g, "x", t, 1, d);
    int n = 0;
    o[n++] = kiln_reduce_sum(g, x, 0, NULL, false);
    o[n++] = kiln_reduce_max(g, x, 0, NULL, false);
    o[n++] = kiln_reduce_sum(g, kiln_mul(g, x, x), 0, NULL, false);
    /* about 2e8: past f16's largest finite value, so f16's infinity (bf16: finite) */
    o[n++] = kiln_reduce_sum(g, kiln_exp(g, kiln_mul(g, x, sc(g, t, 4))), 0, NULL, false);
    return n;
}

/* A sum of at least KD_SLICE_WORK values per element, added in slices (kd_stmt.slices)
 * by one of several items: rows of 10000, and a mean of exps over them. */
static int b_slices(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {3, 10000};
    kiln_value x = param(g, "x", t, 2, d);
    int a1 = 1, n = 0;
    o[n++] = kiln_reduce_sum(g, x, 1, &a1, false);
    o[n++] = kiln_mean(g, kiln_exp(g, x), 1, &a1, true);
    return n;
}

/* Iotas in the type (rounded where made, with excess precision too: past 256 bf16 holds
 * only even integers, past 2048 f16) under sin and cos: positional encodings, side by side
 * (segments) and interleaved (split unrolled), and a plain row of them (fast trig). */
/* An iota in t, or in the f32 program the f32 iota rounded to the case's type as the
 * 16-bit program's is (with excess precision too: lower.c, rounds_always). */
static kiln_value iota_t(kiln_graph *g, kiln_dtype t, int rank, const int64_t *dims, int axis) {
    if (t != KILN_DTYPE_F32) return kiln_iota(g, t, rank, dims, axis);
    kiln_value i = kiln_iota(g, KILN_DTYPE_F32, rank, dims, axis);
    return kiln_convert(g, kiln_convert(g, i, form_half), KILN_DTYPE_F32);
}

static int b_iota(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t pd[2] = {4, 300}, hd[3] = {300, 16, 1}, fd[2] = {300, 32};
    kiln_value f = param(g, "f", t, 1, (int64_t[]){16});
    kiln_value pos = iota_t(g, t, 2, pd, 1);
    int n = 0;
    o[n++] = kiln_mul(g, kiln_sin(g, kiln_mul(g, pos, sc(g, t, 0.25))), sc(g, t, 3));
    kiln_value ang =
        kiln_mul(g, iota_t(g, t, 3, hd, 0), kiln_broadcast_in_dim(g, f, 3, hd, (int[]){1}));
    kiln_value pair[2] = {kiln_sin(g, ang), kiln_cos(g, ang)};
    o[n++] = kiln_reshape(g, kiln_concatenate(g, 2, pair, 2), 2, fd); /* interleaved */
    o[n++] = kiln_concatenate(g, 2, pair, 1);                         /* side by side */
    return n;
}

/* Short reductions along the last axis, in the element loop (rows of 5 to 16: no pragma
 * where the target has AVX-512, KD_SHORT_REDUCE), a max, sums of cheap operands, and
 * sums of exps (the pragma kept). */
static int b_short_reduce(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {256, 5}, bd[2] = {256, 16}, cd[3] = {16, 32, 12}, dd[2] = {200, 9};
    kiln_value a = param(g, "a", t, 2, ad), b = param(g, "b", t, 2, bd);
    kiln_value c = param(g, "c", t, 3, cd), d = param(g, "d", t, 2, dd);
    int am1 = -1, n = 0;
    o[n++] = kiln_reduce_sum(g, a, 1, &am1, false);
    o[n++] = kiln_reduce_max(g, b, 1, &am1, false);
    o[n++] = kiln_reduce_sum(g, kiln_mul(g, b, b), 1, &am1, false);
    o[n++] = kiln_reduce_sum(g, kiln_exp(g, c), 1, &am1, true);
    o[n++] = kiln_reduce_min(g, kiln_mul(g, d, sc(g, t, 3)), 1, &am1, false);
    o[n++] = kiln_mean(g, d, 1, &am1, false);
    return n;
}

/* Scans (a library op, fed and read by fused kernels): cumsum of exp along rows of 300
 * and down 7 rows. */
static int b_cumsum(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {7, 300};
    kiln_value x = param(g, "x", t, 2, d);
    o[0] = kiln_mul(g, kiln_cumsum(g, kiln_exp(g, x), 1, false), sc(g, t, 0.5));
    o[1] = kiln_cumsum(g, kiln_mul(g, x, sc(g, t, 1.5)), 0, true);
    return 2;
}

/* take_rows (a clamped row index: KS_CLAMP) fused with ops on both sides: rows of 64
 * (staged) and of 6. Indices in [-5, 5], some out of range. */
static int b_take_rows(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t td[2] = {10, 64}, sd[2] = {7, 6}, id[2] = {3, 4};
    kiln_value tab = param(g, "t", t, 2, td), s = param(g, "s", t, 2, sd);
    kiln_value idx = param(g, "idx", KILN_DTYPE_I32, 2, id);
    int n = 0;
    o[n++] = kiln_mul(g, kiln_take_rows(g, kiln_exp(g, tab), idx), sc(g, t, 3));
    o[n++] = kiln_add(g, kiln_take_rows(g, s, idx), sc(g, t, 0.25));
    return n;
}

/* Selects on bool masks: a loaded mask in rows of 12 (a bitwise blend, mask_select) and of
 * 100, and a computed one. */
static int b_select(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {64, 12}, bd[2] = {4, 100};
    kiln_value a = param(g, "a", t, 2, ad), ma = param(g, "ma", KILN_DTYPE_BOOL, 2, ad);
    kiln_value b = param(g, "b", t, 2, bd), mb = param(g, "mb", KILN_DTYPE_BOOL, 2, bd);
    int n = 0;
    o[n++] = kiln_mul(g, kiln_select(g, ma, kiln_exp(g, a), kiln_neg(g, a)), sc(g, t, 1.5));
    o[n++] = kiln_select(g, mb, kiln_mul(g, b, b), sc(g, t, 0));
    o[n++] = kiln_select(g, kiln_compare(g, b, sc(g, t, 0.5), KILN_CMP_GT), kiln_tanh(g, b), b);
    return n;
}

/* Converts between f32, bf16 and f16 (t the case's, u the other 16-bit type): each
 * rounds, with excess precision too, so the bits are the reference's. Inputs of special
 * values (NaN, infinities, zeros, subnormals, the largest finite values). */
static int b_converts(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    kiln_dtype u = t == KILN_DTYPE_BF16 ? KILN_DTYPE_F16 : KILN_DTYPE_BF16;
    int64_t d[2] = {16, 101}, e[2] = {16, 7};
    kiln_value x = param(g, "x", KILN_DTYPE_F32, 2, d), h = param(g, "h", t, 2, d);
    kiln_value s = param(g, "s", t, 2, e);
    int n = 0;
    o[n++] = kiln_convert(g, kiln_convert(g, x, t), u);
    o[n++] = kiln_convert(g, kiln_convert(g, kiln_convert(g, x, u), t), KILN_DTYPE_F32);
    o[n++] = kiln_convert(g, h, u);
    o[n++] = kiln_convert(
        g, kiln_mul(g, kiln_convert(g, h, KILN_DTYPE_F32), kiln_scalar(g, KILN_DTYPE_F32, 3)), t);
    o[n++] = kiln_convert(g, kiln_convert(g, s, KILN_DTYPE_F32), u); /* merged rows of 7 */
    return n;
}

/* The special values through the forms that round (staged rows, fast trig, prologue
 * rows, short rows): NaN and infinities must come out as the reference's. */
static int b_special(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t ad[2] = {4, 101}, bd[2] = {64, 16}, cd[2] = {64, 7};
    kiln_value a = param(g, "a", t, 2, ad), b = param(g, "b", t, 2, bd),
               c = param(g, "c", t, 2, cd);
    int am1 = -1, n = 0;
    o[n++] = kiln_add(g, kiln_mul(g, a, sc(g, t, 1.5)), sc(g, t, 0.25));
    o[n++] = kiln_mul(g, kiln_sin(g, a), sc(g, t, 3));
    o[n++] = kiln_softmax(g, b, 1);
    o[n++] = kiln_reduce_max(g, c, 1, &am1, false);
    o[n++] = kiln_mul(g, kiln_abs(g, c), sc(g, t, 0.5));
    return n;
}

/* One case: its program, the tolerance by default and with excess precision (in ulps of
 * the type; xp 0: converts alone, held to the reference at `ulps` with the option too),
 * the text of the form its fused source must hold, and whether its inputs are special
 * values. */
typedef struct form_case {
    const char *name;
    form_build build;
    double ulps, xp;
    const char *form;
    bool special;
} form_case;

/* The tolerances. By default every op rounds in both (compare.h's cmp_half_tol: two
 * ulps), more where a rounded intermediate's one-ulp double rounding is amplified on the
 * way (test_half_ops.c's softmax-like 4, norms 8). With excess precision (against the
 * f32 program): half an ulp for the one rounding, and for what several kernels hand on
 * rounded, an ulp each carried through the rest (a softmax: the kept exp and the sum in
 * one kernel, the max in the same; a layer norm over 3, whose division by a small
 * standard deviation magnifies a rounded mean: 8). */
static const form_case cases[] = {
    {"prologue rows", b_prologue_rows, 8, 8, "kiln_r < rn", false},
    {"prologue moments", b_prologue_moments, 8, 8, "kiln_r < rn", false},
    {"row blocks", b_row_blocks, 2, 2, "kiln_r < 8", false},
    {"tiled transposes", b_tiled, 2, 2, "row = it % ", false},
    {"merged short rows", b_merged, 2, 2, "q * 3 + ", false},
    {"interleaves", b_interleave, 2, 2, "r = 1, ", false},
    {"segments", b_segments, 2, 2, "jb > ", false},
    {"fast trig", b_fast_trig, 2, 2, "kiln_big", false},
    {"trig, big arguments", b_trig_big, 2, 2, "kiln_big", false},
    {"staged stores", b_staged, 4, 4, "kiln_st32_", false},
    {"column reductions", b_columns, 3, 3, "j < je - jb; j++) acc", false},
    {"parts", b_parts, 3, 3, "_part(", false},
    {"slices", b_slices, 3, 3, "kiln_s", false},
    {"iotas", b_iota, 2, 2, "kiln_big", false},
    {"short reductions", b_short_reduce, 2, 2, "#if !KILN_ACROSS_ROWS", false},
    {"cumsum", b_cumsum, 4, 4, NULL, false},
    {"take_rows", b_take_rows, 2, 2, "kiln_st32_", false},
    {"selects", b_select, 2, 2, "kiln_select_f32", false},
    {"converts", b_converts, 0, 0, NULL, true},
    {"special values", b_special, 4, 4, "kiln_big", true},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* ------------------------------------------------------------- checking ---- */

static double ulp_of(kiln_dtype t) {
    return t == KILN_DTYPE_BF16 ? 0x1p-7 : 0x1p-10;
}

/* Random inputs for g's parameters: uniform in [-2, 2) (ints in [-5, 5], bools half
 * true), or one in three special for the float ones. */
static kiln_array *case_input(const ir_node *p, bool special) {
    if (!special || !ir_dtype_is_float(p->dtype))
        return cmp_random_array(ctx, p->dtype, p->shape.rank, p->shape.dims, &seed);
    int64_t n = 1;
    for (int i = 0; i < p->shape.rank; i++) n *= p->shape.dims[i];
    void *buf = malloc((size_t)n * kiln_dtype_itemsize(p->dtype));
    test_fill_special(p->dtype, n, buf, &seed);
    kiln_array *a = NULL;
    kiln_array_create(ctx, p->dtype, p->shape.rank, p->shape.dims, buf, &a);
    free(buf);
    return a;
}

/* a (of a 16-bit type) widened to f32, or a itself, retained by the caller's count. */
static kiln_array *widened(kiln_array *a) {
    kiln_dtype t = kiln_array_dtype(a);
    if (!ir_dtype_is_half(t)) return NULL;
    int64_t n = kiln_array_size(a);
    uint16_t *h = malloc((size_t)(n ? n : 1) * 2);
    float *f = malloc((size_t)(n ? n : 1) * 4);
    kiln_array_copy_to_host(a, h, (size_t)n * 2);
    for (int64_t i = 0; i < n; i++)
        f[i] = t == KILN_DTYPE_BF16 ? kn_bf16_to_f32(h[i]) : kn_f16_to_f32(h[i]);
    kiln_array *w = NULL;
    kiln_array_create(ctx, KILN_DTYPE_F32, a->shape.rank, a->shape.dims, f, &w);
    free(h), free(f);
    return w;
}

/* Output i of the compiled 16-bit program (got) against the f32 program's (want), within
 * xp ulps of t relative to 1 + |want|; other dtypes exactly. */
static bool close_to_f32(const kiln_array *got, const kiln_array *want, kiln_dtype t, double xp,
                         const char *what) {
    int64_t n = kiln_array_size(want);
    kiln_dtype gt = kiln_array_dtype(got), wt = kiln_array_dtype(want);
    if (kiln_array_size(got) != n) {
        fprintf(stderr, "%s: sizes differ\n", what);
        return false;
    }
    size_t gs = kiln_dtype_itemsize(gt), ws = kiln_dtype_itemsize(wt);
    unsigned char *a = malloc((size_t)(n ? n : 1) * gs), *b = malloc((size_t)(n ? n : 1) * ws);
    kiln_array_copy_to_host(got, a, (size_t)n * gs);
    kiln_array_copy_to_host(want, b, (size_t)n * ws);
    double tol = xp * ulp_of(t);
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
        double x = cmp_elem(a, gt, i), y = cmp_elem(b, wt, i);
        /* the f32 program's value rounded to t: what an exact kernel stores (an f32
         * value beyond t's range is t's infinity) */
        if (ir_dtype_is_half(gt))
            y = gt == KILN_DTYPE_BF16 ? kn_bf16_to_f32(kn_f32_to_bf16((float)y))
                                      : kn_f16_to_f32(kn_f32_to_f16((float)y));
        bool good = ir_dtype_is_float(gt) ? test_close(x, y, tol, tol) : x == y;
        if (!good) {
            fprintf(stderr, "%s: element %lld: got %.9g, the f32 program %.9g (tolerance %g)\n",
                    what, (long long)i, x, y, tol * (1 + fabs(y)));
            ok = false;
        }
    }
    free(a), free(b);
    return ok;
}

/* With excess precision, fused: the 16-bit program's outputs against the f32 program's
 * on the widened inputs. */
static bool check_excess(const form_case *fc, kiln_graph *g, kiln_dtype t, int np,
                         kiln_array **args) {
    kiln_graph *g32;
    kiln_graph_create(ctx, fc->name, &g32);
    kiln_value outs[32];
    int n = fc->build(g32, KILN_DTYPE_F32, outs);
    bool ok = true;
    if (kiln_graph_finish(g32, n, outs) != KILN_STATUS_OK || kiln_graph_num_parameters(g32) != np) {
        fprintf(stderr, "the f32 program did not build: %s\n", kiln_last_error(ctx));
        kiln_graph_destroy(g32);
        return false;
    }
    kiln_array *wide[32] = {0}, *args32[32], *want[32] = {0}, *got[32] = {0};
    for (int i = 0; i < np; i++) {
        wide[i] = widened(args[i]);
        args32[i] = wide[i] ? wide[i] : args[i];
    }
    kiln_compile_options o = {.allow_excess_precision = true, .keep_ir = true};
    kiln_executable *e = NULL;
    if (kiln_compile(g, &o, &e) || kiln_executable_run(e, np, args, n, got) ||
        kiln_interpret(g32, np, args32, n, want)) {
        fprintf(stderr, "excess precision: %s\n", kiln_last_error(ctx));
        ok = false;
    }
    for (int i = 0; ok && i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "output %d (excess precision)", i);
        ok &= close_to_f32(got[i], want[i], t, fc->xp, what);
    }
    if (!ok && e) {
        char *s = kiln_executable_to_string(e);
        fprintf(stderr, "%s\n", s ? s : "(no text)");
        kiln_string_free(ctx, s);
    }
    for (int i = 0; i < n; i++) kiln_array_destroy(got[i]), kiln_array_destroy(want[i]);
    for (int i = 0; i < np; i++) kiln_array_destroy(wide[i]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g32);
    return ok;
}

/* By default a kernel rounds every 16-bit value where an op makes it, as the reference
 * does, so the two differ only where f32 arithmetic (and the kernel's f32 functions, a few
 * f32 ulps) and the reference's f64 land on different sides of a 16-bit rounding point:
 * about one element in 2^12 per op for f16, fewer for bf16 (no case here differs in more
 * than 0.02% of an output's elements). A rounding left out (the fast sin and cos bug; what
 * excess precision does on purpose) changes 15% to 90% of them, yet each by one ulp, which
 * the tolerance lets through. So at most 1% of an output's elements may differ, and 3 more
 * (an output of few elements, each a long sum). */
#define FORM_DIFFER_MAX 0.01
#define FORM_DIFFER_FEW 3 /* elements an output may have differing besides */

/* The share of the 16-bit elements of g's outputs, compiled with o, whose bits differ from
 * the reference's (NaN as any NaN), FORM_DIFFER_FEW of them not counted, the most of any
 * output; -1 when it cannot run. */
static double share_differing(kiln_graph *g, int np, kiln_array **args, kiln_compile_options o,
                              int *worst) {
    int n = kiln_graph_num_outputs(g);
    kiln_array *got[32] = {0}, *want[32] = {0};
    kiln_executable *e = NULL;
    double most = 0;
    if (kiln_compile(g, &o, &e) || kiln_executable_run(e, np, args, n, got) ||
        kiln_interpret(g, np, args, n, want)) {
        fprintf(stderr, "%s\n", kiln_last_error(ctx));
        most = -1;
    }
    for (int i = 0; most >= 0 && i < n; i++) {
        kiln_dtype t = kiln_array_dtype(want[i]);
        if (!ir_dtype_is_half(t)) continue;
        int64_t m = kiln_array_size(want[i]), bad = 0;
        uint16_t *a = malloc((size_t)(m ? m : 1) * 2), *b = malloc((size_t)(m ? m : 1) * 2);
        kiln_array_copy_to_host(got[i], a, (size_t)m * 2);
        kiln_array_copy_to_host(want[i], b, (size_t)m * 2);
        for (int64_t j = 0; j < m; j++) {
            double x = cmp_elem(a, t, j), y = cmp_elem(b, t, j);
            bad += a[j] != b[j] && !(x != x && y != y);
        }
        /* a few elements aside: a long sum's f32 error reaches a few percent of an f16
         * ulp, so of 37 sums over 4096 rows one may round the other way */
        bad = bad > FORM_DIFFER_FEW ? bad - FORM_DIFFER_FEW : 0;
        double share = m ? (double)bad / (double)m : 0;
        if (share > most) most = share, *worst = i;
        free(a), free(b);
    }
    for (int i = 0; i < n; i++) kiln_array_destroy(got[i]), kiln_array_destroy(want[i]);
    kiln_executable_destroy(e);
    return most;
}

/* Whether the fused program's source holds the case's form (the text of the printer's
 * spelling of it); prints the source if not. */
static bool has_form(kiln_graph *g, const char *form) {
    kiln_compile_options o = {.keep_ir = true};
    kiln_executable *e = NULL;
    if (kiln_compile(g, &o, &e)) {
        fprintf(stderr, "compile: %s\n", kiln_last_error(ctx));
        return false;
    }
    char *s = kiln_executable_to_string(e);
    bool ok = s && strstr(s, form);
    if (!ok) fprintf(stderr, "the form's \"%s\" is not in:\n%s\n", form, s ? s : "(no text)");
    kiln_string_free(ctx, s);
    kiln_executable_destroy(e);
    return ok;
}

static void check_case(const form_case *fc, kiln_dtype t) {
    kiln_graph *g;
    kiln_graph_create(ctx, fc->name, &g);
    kiln_value outs[32];
    form_half = t;
    int n = fc->build(g, t, outs);
    const char *tn = kiln_dtype_name(t);
    if (kiln_graph_finish(g, n, outs) != KILN_STATUS_OK) {
        CHECK_MSG(0, "%s (%s) did not build: %s", fc->name, tn, kiln_last_error(ctx));
        kiln_graph_destroy(g);
        return;
    }
    kiln_array *args[32];
    int np = kiln_graph_num_parameters(g);
    for (int i = 0; i < np; i++) args[i] = case_input(&g->nodes[g->params[i]], fc->special);
    double tol = (fc->ulps > CMP_HALF_ULPS ? fc->ulps : CMP_HALF_ULPS) * ulp_of(t);
    if (fc->form) CHECK_MSG(has_form(g, fc->form), "%s (%s): not in its form", fc->name, tn);
    static const struct {
        bool unfused, excess;
        const char *what;
    } modes[] = {{false, false, "fused"},
                 {true, false, "unfused"},
                 {true, true, "unfused, excess precision"}};
    for (int m = 0; m < 3; m++) {
        kiln_compile_options o = {.disable_fusion = modes[m].unfused,
                                  .allow_excess_precision = modes[m].excess};
        CHECK_MSG(cmp_graph(ctx, g, np, args, &o, tol, NULL),
                  "%s (%s, %s) differs from the reference", fc->name, tn, modes[m].what);
    }
    for (int unfused = 0; unfused < 2; unfused++) { /* bits: a rounding left out shows */
        int worst = -1;
        double d =
            share_differing(g, np, args, (kiln_compile_options){.disable_fusion = unfused}, &worst);
        CHECK_MSG(d >= 0 && d <= FORM_DIFFER_MAX,
                  "%s (%s, %s): output %d has %.2f%% of its elements' bits not the reference's",
                  fc->name, tn, unfused ? "unfused" : "fused", worst, 100 * d);
    }
    if (fc->xp > 0)
        CHECK_MSG(check_excess(fc, g, t, np, args),
                  "%s (%s, fused, excess precision) differs from the f32 program", fc->name, tn);
    else { /* converts round with the option too: the reference's bits */
        kiln_compile_options o = {.allow_excess_precision = true};
        CHECK_MSG(cmp_graph(ctx, g, np, args, &o, tol, NULL),
                  "%s (%s, fused, excess precision) differs from the reference", fc->name, tn);
    }
    for (int i = 0; i < np; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void test_forms(void) {
    const char *only = getenv("KILN_TEST_FORM"); /* one case by name, to debug it */
    for (int c = 0; c < N_CASES; c++)
        for (int i = 0; i < 2; i++)
            if (!only || !strcmp(only, cases[c].name)) check_case(&cases[c], halves[i]);
}

/* ------------------------------------------------------------- in place ---- */

/* Staged stores over a donated argument (in place: no overlapping last block): a chain
 * over rows of 2053 and a softmax over rows of 101, each its own program, run on a copy
 * of the arguments after the reference has read them, by default (within two ulps and
 * four, as above) and with excess precision (against the f32 program). */
static int b_inplace_chain(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {5, 2053};
    kiln_value x = param(g, "x", t, 2, d);
    o[0] = kiln_add(g, kiln_mul(g, kiln_tanh(g, x), sc(g, t, 2)), sc(g, t, 1));
    return 1;
}

static int b_inplace_softmax(kiln_graph *g, kiln_dtype t, kiln_value *o) {
    int64_t d[2] = {37, 101};
    o[0] = kiln_softmax(g, param(g, "x", t, 2, d), 1);
    return 1;
}

static void check_in_place(const char *name, form_build build, kiln_dtype t, double ulps,
                           bool excess) {
    kiln_graph *g = NULL, *g32 = NULL;
    kiln_graph_create(ctx, name, &g);
    kiln_graph_create(ctx, name, &g32);
    kiln_value y, y32;
    build(g, t, &y);
    build(g32, KILN_DTYPE_F32, &y32);
    kiln_compile_options o = {.n_donate = 1,
                              .donate_argnums = (const int[]){0},
                              .allow_excess_precision = excess,
                              .keep_ir = true};
    kiln_executable *e = NULL;
    kiln_array *x = NULL, *copy = NULL, *w = NULL, *want = NULL, *got = NULL;
    const char *tn = kiln_dtype_name(t);
    if (kiln_graph_finish(g, 1, &y) || kiln_graph_finish(g32, 1, &y32) || kiln_compile(g, &o, &e)) {
        CHECK_MSG(0, "%s (%s): %s", name, tn, kiln_last_error(ctx));
        goto done;
    }
    const ir_node *p = &g->nodes[g->params[0]];
    x = cmp_random_array(ctx, t, p->shape.rank, p->shape.dims, &seed);
    int64_t n = kiln_array_size(x);
    uint16_t *h = malloc((size_t)n * 2);
    kiln_array_copy_to_host(x, h, (size_t)n * 2);
    kiln_array_create(ctx, t, p->shape.rank, p->shape.dims, h, &copy);
    free(h);
    w = widened(x);
    if (excess ? kiln_interpret(g32, 1, &w, 1, &want) : kiln_interpret(g, 1, &x, 1, &want)) {
        CHECK_MSG(0, "%s (%s): interpret: %s", name, tn, kiln_last_error(ctx));
        goto done;
    }
    kiln_memory_analysis m;
    kiln_executable_get_memory_analysis(e, &m);
    CHECK_MSG(m.alias_bytes >= (uint64_t)n * 2 && m.output_bytes == 0,
              "%s (%s): not in place: alias %llu, output %llu bytes", name, tn,
              (unsigned long long)m.alias_bytes, (unsigned long long)m.output_bytes);
    char *s = kiln_executable_to_string(e);
    CHECK_MSG(s && strstr(s, "kiln_st32_"), "%s (%s): no staged stores", name, tn);
    kiln_string_free(ctx, s);
    if (kiln_executable_run(e, 1, &copy, 1, &got)) {
        CHECK_MSG(0, "%s (%s): run: %s", name, tn, kiln_last_error(ctx));
        goto done;
    }
    char what[96];
    snprintf(what, sizeof what, "%s (%s, in place%s)", name, tn, excess ? ", excess" : "");
    if (excess)
        CHECK_MSG(close_to_f32(got, want, t, ulps, what), "%s differs from the f32 program", what);
    else
        CHECK_MSG(cmp_arrays(got, want, ulps * ulp_of(t), 0, what), "%s differs from the reference",
                  what);
done:
    kiln_array_destroy(got), kiln_array_destroy(want), kiln_array_destroy(w);
    kiln_array_destroy(copy), kiln_array_destroy(x);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g32), kiln_graph_destroy(g);
}

static void test_in_place(void) {
    for (int i = 0; i < 2; i++)
        for (int excess = 0; excess < 2; excess++) {
            check_in_place("in place chain", b_inplace_chain, halves[i], 2, excess);
            check_in_place("in place softmax", b_inplace_softmax, halves[i], 4, excess);
        }
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    seed = test_seed(0x5eed16f0ull);
    if (!(ctx = test_private_context(cache_dir))) return 2;
    RUN_CC(test_forms);
    RUN_CC(test_in_place);
    kiln_context_destroy(ctx);
    test_remove_dir(cache_dir);
    return test_summary("test_half_forms");
}
