/* kdesc.h — the kernel description: what a fused LOOP kernel computes, with no syntax.
 *
 * lower.c turns one fusion kernel into a kd_kernel; schedule.c records how a dialect's
 * target splits and vectorises its work (kd_kernel.sched, kd_stmt.sched); the printer
 * (print.c, with the renderers print_c.c and print_cuda.c) turns it into source. The
 * description holds:
 *
 *  - the index space and its work split: the roots' shape (a short last axis merged into
 *    the one before: KD_SHORT_ROW), seen as rows (every axis but the last) times chunks of
 * kd_kernel.chunk elements of the last axis (KD_CHUNK, less for a reduction's few heavy elements),
 * so both tall and wide outputs parallelise. A work item is one (row, chunk); items are
 * independent;
 *  - index expressions (kd_index) in a canonical affine form c + sum coef * atom, where an
 *    atom is a loop variable, a division or remainder of another index by a constant, or
 *    an integer value computed by a statement (a take_rows row). Building one simplifies
 *    it (kindex.c): x / 1 -> x, x % N -> x when 0 <= x < N, (a*N + b) / N -> a when
 *    0 <= b < N, (x / N) * N + x % N -> x, zero terms vanish; a variable whose range is one
 *    value is that constant;
 *  - a flat list of statements (kd_stmt), SSA-like: statement i defines value i (0 is "no
 *    value"); structure is given by LOOP/IF ... END brackets, as in the source to come. The
 *    loop over the item's elements (a LOOP of n < 0) is statement 1, or comes after a
 *    prologue computing the row's values (kd_kernel.prologue);
 *  - per-kernel provenance: the IR nodes computed, their op names and user file:line.
 *
 * Invariants: a statement only uses values defined before it in an enclosing or the same
 * bracket; an index expression only uses atoms whose loop or value is in scope where it is
 * used; every array below is owned by the kd_kernel and allocated on the context's host
 * allocator (kd_free releases them, also after a failed kd_lower). */
#ifndef KILN_KDESC_H
#define KILN_KDESC_H

#include "cgen.h"

#define KD_CHUNK 2048 /* elements of the last axis per work item, at most */
/* A kernel whose elements each reduce many (kd_loop_work of the element loop) halves its
 * chunk, down to KD_CHUNK_MIN (KD_COLUMN_CHUNK_MIN in the column form, whose items read
 * a chunk-wide run of every reduced row), while an item's work exceeds KD_ITEM_WORK: a
 * sum over the last axis of [2048, 4096] is 32 items of 64 rows, not one item whose
 * reduction only a split into parts could share (each part reading a slice of every row). */
enum { KD_CHUNK_MIN = 64, KD_COLUMN_CHUNK_MIN = 512, KD_ITEM_WORK = 1 << 18 };
/* An elementwise kernel that reads an input across the last axis with a stride of at
 * least KD_TILE_STRIDE elements (a transpose) may take few columns per item, its items
 * going down the rows first (kd_kernel.tiled): consecutive items then read the next
 * element of the same cache lines. Row-major items of 2048 columns fetched each line again
 * for every row (a row's lines were evicted by its other chunks before the next row came),
 * and lines a multiple of 4 KiB apart fall into few cache sets, so that even one row's
 * thrashed. KD_TILE columns, or KD_TILE_POW2 when the stride in bytes is a multiple of
 * 1 KiB (the narrower tile won at every power-of-two stride measured, a wider one at the
 * others: bench/RESULTS.md, "Transposes: few columns per item, down the rows first"); none
 * when a row is one item and the stride is not such a multiple (lower.c, tile_columns). */
enum { KD_TILE = 64, KD_TILE_POW2 = 32, KD_TILE_STRIDE = 16 };
/* A kernel reading across the last axis with such a stride (tiled or not) whose element
 * loop is straight-line code and whose rows are a multiple of KD_ROW_BLOCK takes that
 * many rows per item in the C dialect (kd_kernel.row_block):
 * it loops over the item's columns, and inside over its rows, so each column reads a run
 * of KD_ROW_BLOCK contiguous elements of the transposed input and gcc vectorises across
 * the rows (several times faster on one thread: bench/RESULTS.md, "Transposes: 8 rows per
 * item, and 8 x 8 blocks through registers"). */
enum { KD_ROW_BLOCK = 8 };
/* An elementwise kernel (no reduction, no row value inlined) whose roots' last axis is
 * shorter than KD_SHORT_ROW may fold it into the axis before (kd_kernel.merged): its index
 * space is [..., A * B] for roots [..., A, B], the element's two axes the last axis'
 * variable / B and % B (so kd_kernel.split is B and the C dialect loops over both). Rows
 * of B elements were items of their own, each dividing its leading axes out of the row,
 * and too short to vectorise (NCHW -> NHWC with few channels runs several times faster
 * merged: bench/RESULTS.md, "NCHW to NHWC with few channels: the short axis merged into
 * the one before"). kd_lower decides where it pays (lower.c). */
enum { KD_SHORT_ROW = 16 };

/* ------------------------------------------------------------ indices ---- */

typedef enum kd_var_kind {
    KD_VAR_ROW,    /* the work item's row: [0, rows) */
    KD_VAR_AXIS,   /* an axis of the kernel's index space (the last one is a loop) */
    KD_VAR_REDUCE, /* a reduced axis of reduction `node` */
} kd_var_kind;

typedef struct kd_var {
    kd_var_kind kind;
    int axis;      /* AXIS, REDUCE */
    uint32_t node; /* REDUCE */
} kd_var;

typedef enum kd_atom_kind {
    KD_ATOM_VAR, /* loop variable arg */
    KD_ATOM_DIV, /* index arg / n (C division: truncates) */
    KD_ATOM_MOD, /* index arg % n */
    KD_ATOM_VAL, /* the int64 value of statement arg */
} kd_atom_kind;

typedef struct kd_atom {
    kd_atom_kind kind;
    uint32_t arg;
    int64_t n;      /* DIV, MOD: the divisor, > 1 */
    int64_t lo, hi; /* the values it can take (lo > hi: none, the code never runs) */
    /* DIV, MOD, VAL: the same value as the atom (kind, arg, n) but known, under a guard,
     * to lie in the narrower lo..hi (kd_ix_within): an atom of its own */
    bool narrowed;
} kd_atom;

typedef struct kd_term {
    uint32_t atom;
    int64_t coef; /* never 0 */
} kd_term;

/* c + sum of terms[first .. first + n), terms sorted by atom and each atom once. */
typedef struct kd_index {
    int64_t c, lo, hi; /* lo..hi: a bound on its value (saturating) */
    uint32_t first, n;
} kd_index;

/* --------------------------------------------------------- statements ---- */

typedef enum kd_stmt_kind {
    KS_LIT,    /* a scalar constant (lit, dtype): printed where it is used */
    KS_LOAD,   /* input `slot` at linear index `ix` (`keep`: output `slot`, a kept value) */
    KS_IOTA,   /* the value of index `ix` as dtype */
    KS_OP,     /* elementwise `op` (select included) of args, result dtype, operands in_dtype */
    KS_CLAMP,  /* int64: args[0] clamped to [0, n] (a take_rows row), after adding `wrap`
                * where it is negative (a dynamic slice's start; 0: none) */
    KS_DECL,   /* a mutable dtype variable, = args[0] if n_args (pad, concat) */
    KS_ASSIGN, /* args[0] (a DECL) = args[1] */
    KS_IF,     /* if every guard [guard, guard + n_guards) holds { */
    KS_ELSE_IF,
    KS_ELSE,
    KS_LOOP,   /* for var from 0 to n - 1 (n < 0: over the item's chunk of the last axis) { */
    KS_END,    /* } of a LOOP or an IF chain */
    KS_ACC,    /* reduction accumulator: see red; `column`: one per element of a chunk */
    KS_ACCUM,  /* accumulator args[0] takes in args[1] */
    KS_RESULT, /* the reduction's value (dtype) from accumulator args[0] */
    KS_STORE,  /* output `slot` at linear index `ix` = args[0] (`keep`: a kept value) */
} kd_stmt_kind;

typedef enum kd_guard_kind {
    KD_GUARD_GE0,    /* ix >= 0 */
    KD_GUARD_LT,     /* ix < n */
    KD_GUARD_DIVIDES /* ix % n == 0 */
} kd_guard_kind;

typedef struct kd_guard {
    kd_guard_kind kind;
    uint32_t ix;
    int64_t n;
} kd_guard;

/* A reduction's accumulator, decided here so every dialect accumulates alike: float sums
 * and products in f64, integer ones in 64 bits that wrap; max/min in the value's dtype,
 * floats with a separate NaN flag so that NaN wins while the loop still vectorises.
 *
 * `blocked` (f32 sums): the C dialect sums each block of the innermost reduce loop (
 * KD_SUM_BLOCK iterations, KD_COL_BLOCK in the column form) in f32 (a scalar accumulator's
 * block added in 16 lanes, then the lanes pairwise: print_lane_block, or staged for
 * kiln_sum_f32 where the loop adds under an if, print_block_open; a column
 * block row by row, vectorised across the columns), and adds the blocks' sums into the f64
 * accumulator: the bulk of the additions run at f32 width while the error stays that of a
 * block, at most (block / lanes + log2 lanes) * 2^-24 * sum |x|, so 2^-20 for a scalar
 * block and 2^-17 for a column block (docs/architecture.md), not n * 2^-24 as a
 * sequential f32 sum's. A scalar sum of at most KD_SMALL_SUM values in all is not
 * blocked: it goes straight into the f64 accumulator (exact enough, and a staged block
 * would cost a kiln_sum_f32 call per element, which made a softmax over short rows slow:
 * bench/RESULTS.md, "Outside checks, and what they changed", reductions over the last axis).
 * CUDA keeps f64 throughout. */
enum { KD_SUM_BLOCK = 256, KD_COL_BLOCK = 128, KD_SMALL_SUM = 16 };
/* The most f32 blocks, and slices (kd_stmt.slices), the C dialect keeps open at once; a
 * deeper nest adds in f64 (print_c.c). */
enum { KD_OPEN_BLOCKS = 8 };
/* A reduction of at most KD_TINY_REDUCE values per element (a softmax over rows of 3) gets
 * no vectorising pragma (kd_stmt.simd): gcc then unrolls its loop and vectorises the loop
 * around it, across elements, where the pragma made a masked vector of 3 lanes per
 * element (a softmax and a row sum and max over rows of 3 ran several times faster without
 * it: bench/RESULTS.md, "Reductions of at most 4 values: no pragma, vectorised across
 * rows"). From 5 values gcc's vectorising across elements fails and the pragma is better. */
enum { KD_TINY_REDUCE = 4 };
/* Nor does one of at most KD_SHORT_REDUCE values per element computed in the element loop
 * (not in a prologue, whose item is one row) from an operand that costs less than a
 * transcendental, on a target with AVX-512 (kd_stmt.simd_narrow): gcc unrolls it too and
 * vectorises across the elements, where the pragma's horizontal reduction per element
 * was most of the work (Zen 4, one thread, an f64 sum and a max per row: several times
 * faster at rows of 8 and 16, a little at 24, slower at 32; with an exp per value the
 * pragma wins at every length; bench/RESULTS.md, "Row reductions of at most 16 cheap
 * values: no pragma"). With AVX2 only (Zen 3) the same form is twice as slow as the
 * pragma's and three times as long to compile (the permutes of a 16-strided group;
 * bench/RESULTS.md, "Short rows: the AVX-512 form is the wrong one on AVX2"): there the
 * pragma stays. Longer f32 sums are blocked (KD_SMALL_SUM) and keep theirs. */
enum { KD_SHORT_REDUCE = KD_SMALL_SUM };
/* A run of reduced axes that ends the operand, its last at most KD_MERGE_REDUCE long, is
 * one loop over their product (lower.c, open_reduce_loops): a loop per axis ran a short
 * innermost loop, and a blocked f32 sum one kiln_sum_f32 call, per row of the last axis,
 * several times XLA's time over all of a [16, 64, 56, 56] tensor (an outside check,
 * bench/RESULTS.md, "Reductions over trailing axes as one loop"). Longer last axes keep
 * their loops: one row is long enough to run at speed. */
enum { KD_MERGE_REDUCE = 256 };
/* A kernel whose item is one short row (at most KD_SHORT_REDUCE elements) and whose
 * prologue computes its row values (fusion.h) takes KD_PROLOGUE_ROWS rows per item in the
 * C dialect (kd_kernel.prologue_rows): each prologue step then runs for all of them
 * before the next, its few-valued reductions (kd_stmt.few) without the pragma, vectorised
 * across the rows, and a kept value's reduction (a softmax's sum of exp(x - max)) split
 * into the loop that computes and keeps the values, vectorised along the row, and the
 * sum of the kept row, across the rows (one thread: a softmax over rows of 16 or 8 ran
 * faster, over rows of 3, with no pragma along them, several times faster;
 * bench/RESULTS.md, "A prologue over short rows, 16 rows an item, step by step"). */
enum { KD_PROLOGUE_ROWS = 16 };

/* kd_kernel.parts: how many, the least work (reduced elements) worth splitting, the bytes
 * of one element's partial accumulator. */
enum { KD_PARTS = 32, KD_PART_MIN_WORK = 1 << 16, KD_PART_BYTES = 16 };
/* kd_stmt.slices: a float sum or product of at least KD_SLICE_WORK values per element is
 * added in slices of its outermost loop, min(n, KD_PARTS) of them ([q n / P, (q + 1) n /
 * P)), each from the initial value, the slices' results then combined in order: the order
 * in which a split across threads (kd_kernel.parts) adds. So a reduction's bits depend on
 * the reduction alone, never on whether the kernel it is computed in (its own, or another
 * one's prologue or a recomputation's) splits it: rematerialisation stays bitwise. A float
 * sum to one value whose outer loop has KD_PARTS x KD_SMALL_SUM values or more is sliced
 * too (lower.c, one_output_long): a kernel can split such a sum only by its slices. Only
 * such reductions are split (or exact ones: max, min, integers). */
enum { KD_SLICE_WORK = KD_PARTS * KD_SUM_BLOCK };
typedef enum kd_init { KD_INIT_ZERO, KD_INIT_ONE, KD_INIT_LOWEST, KD_INIT_HIGHEST } kd_init;
typedef struct kd_reduce {
    ir_op op;            /* IR_REDUCE_SUM / _PROD / _MAX / _MIN */
    kiln_dtype acc_type; /* F64, I64 (wrapping) or the reduction's dtype */
    kd_init init;
    bool arith;    /* sum or product (else max/min) */
    bool nan_flag; /* float max/min: NaN tracked apart */
    bool blocked;  /* f32 sum: f32 blocks into the f64 accumulator (C dialect) */
} kd_reduce;

typedef struct kd_stmt {
    kd_stmt_kind kind;
    /* of the value, and OP: of the operands (select: of the values chosen). The dtype a
     * value is computed in: f32 for bf16 and f16 (ir_dtype_compute), whose buffers the
     * printers read and write through conversions (in_type, out_type) */
    kiln_dtype dtype;
    kiln_dtype in_dtype;
    /* OP, IOTA, RESULT of a 16-bit node: the value is computed in f32 and rounded to this
     * dtype (nearest even) where it is made, as XLA rounds after every op, so that the bits
     * do not depend on what is fused with what; KILN_DTYPE_INVALID: no rounding (not 16-bit,
     * an op that cannot leave the dtype's values: max, min, neg, abs, select, sign, or,
     * with fusion_plan.excess_precision, any but a convert, a random draw and an iota) */
    kiln_dtype round;
    /* the value is +, -, * or / of values of its 16-bit dtype (rounded ones: no excess
     * precision): a NaN it gives is an operand's, quieted, or the default NaN, whose low
     * bits below the 16-bit dtype's are zero; so its rounding needs no NaN test
     * (kiln_rnd_<t>_arith: kiln_rnd_<t>'s bits, but for the quiet bit of a signalling NaN
     * gcc may pass through unquieted, prelude/half.h) */
    bool round_arith;
    ir_op op;      /* OP */
    uint32_t node; /* IR node it computes a part of (0: none) */
    uint32_t args[3], n_args;
    uint32_t slot;  /* LOAD, STORE */
    uint32_t ix;    /* LOAD, IOTA, STORE */
    uint32_t var;   /* LOOP; ACC (column): the last axis' variable */
    int64_t n;      /* LOOP: trip count (< 0: the chunk); CLAMP: the largest row; IOTA: the
                     * axis' length (its values are below it) */
    int64_t wrap;   /* CLAMP: added to a negative value before it clamps (0: nothing) */
    uint32_t guard; /* IF, ELSE_IF */
    uint32_t n_guards;
    /* LOOP: the innermost loop of a reduction (acc: its ACC statement, 0 for a column
     * reduction) or a column reduction's element loop may carry a vectorising pragma.
     * False when its body does integer arithmetic: gcc 12 miscompiles `omp simd` loops
     * of small constant trip count that compute a wrapped integer index (an iota,
     * clamped, then gathered from), and clang and gcc without the pragma are right. */
    bool simd;
    /* LOOP of a reduction: at most KD_SHORT_REDUCE values per element of an operand
     * cheaper than a transcendental (kdesc.h, above), whatever the form */
    bool few;
    /* LOOP: the pragma `simd` would give it is left to the target (C: printed under
     * `#if !KILN_ACROSS_ROWS`, see KD_SHORT_REDUCE): a few-valued reduction without it is
     * vectorised across the elements, which pays on AVX-512 only */
    bool simd_narrow;
    uint32_t acc;
    bool col_block;     /* LOOP: the innermost reduce loop of the column form */
    bool column;        /* ACC */
    kd_reduce red;      /* ACC */
    int64_t slices;     /* ACC: > 1, added in this many slices of its outermost loop (above) */
    uint32_t slice_acc; /* LOOP: the ACC whose slices it runs over (its outermost loop), or 0 */
    /* STORE in the prologue, LOAD in the element loop: a value kept for the row's elements
     * (kd_kernel.prologue) in the output row, where the element then stores its result.
     * CUDA: the lane that computed it stores it, whatever the form */
    bool keep;
    union {
        int64_t i;
        double f;
    } lit;                 /* LIT: ints and bool in i, floats in f */
    const ir_attrs *attrs; /* OP: the node's attributes (a compare's direction) */
    /* the target's schedule (kd_schedule): KD_SCHED_* marks, and for a CUDA split
     * accumulator its number among them (KD_SCHED_SPLIT) */
    uint8_t sched;
    uint32_t split_k;
    /* CUDA, KD_SCHED_ROW_FILL / _ROW_HIT: the row cache (kd_sched.n_row_cache) and the
     * variable over the row (a pass's reduce variable, or the last axis') indexing it */
    uint32_t row_cache, row_var;
} kd_stmt;

/* kd_stmt.sched */
enum {
    KD_SCHED_VLOAD = 1,      /* CUDA, LOAD: one vector load for kd_sched.vec elements */
    KD_SCHED_VSTORE = 2,     /* CUDA, STORE: likewise */
    KD_SCHED_SPLIT = 4,      /* CUDA, ACC: a reduction split over blocks (element split) */
    KD_SCHED_SPLIT_LOOP = 8, /* CUDA, LOOP: the loop a split is at (also a column split's) */
    /* CUDA, KD_CUDA_ROW: LOAD, also into its row cache; a kept STORE, into it instead */
    KD_SCHED_ROW_FILL = 16,
    KD_SCHED_ROW_HIT = 32, /* CUDA, KD_CUDA_ROW: LOAD (kept ones too) from its row cache */
    /* CUDA, KD_CUDA_ROW: LOOP, a pass over the row taken kd_sched.vec elements a lane a trip */
    KD_SCHED_VLOOP = 64,
    /* C, STORE in kd_sched.stage_loop: a 16-bit store staged, KD_STAGE values at a time */
    KD_SCHED_STAGED = 128,
};

/* KD_CUDA_ROW: the bytes of the row caches (schedule.c, row_cache_plan), at most, for all
 * of a block's rows together (one, or row_group over short rows). A block's static shared
 * memory is at most 48 KiB; the rest is left for the combines. So a row of 10240 f32 (or
 * two of 5120) is read from device memory once; an H200 SM's 228 KiB then holds five such
 * blocks, 1280 threads. */
enum { KD_ROW_CACHE_BYTES = 40 << 10 };
/* KD_CUDA_ROW over short rows (schedule.c, row_groups): a row takes the fewest whole warps
 * that leave each lane at most KD_ROW_LANE_ELEMS of its elements, and a block as many rows
 * as it holds such groups (kd_sched.row_group). 8 is the unroll of the form's lane loops
 * (print_cuda.c, CU_UNROLL_ROW): a lane's share of a pass is then one unrolled trip, all
 * its loads in flight at once (16 bytes of bf16, 32 of f32), and each of a row's combines
 * serves 8 elements a lane where the block per row had one or two. So a warp takes rows
 * up to 256, two warps up to 512, four up to 1024 (KD_ROW_SHORT); a longer row would
 * need the whole block, which is the block-per-row form, already at 5 or more elements a
 * thread and a combine per 1024 or more elements. */
enum { KD_ROW_LANE_ELEMS = 8, KD_ROW_SHORT = KD_ROW_LANE_ELEMS * CGEN_CUDA_THREADS / 2 };

/* ------------------------------------------------- the target's schedule ---- */

/* How a CUDA kernel spreads an item over its block (schedule.c, cuda_form). */
typedef enum kd_cuda_form {
    KD_CUDA_THREADS, /* a thread per element of the chunk (elementwise, column reductions) */
    KD_CUDA_WARP,    /* a warp per element; lanes share its reductions */
    KD_CUDA_BLOCK,   /* the whole block per element (few elements, long reductions) */
    /* the block per row (short rows: a group of warps, kd_sched.row_group): its values
     * by the row's threads, then a thread per element */
    KD_CUDA_ROW,
} kd_cuda_form;

/* kd_sched.stage_loop: the elements of a staged block, those kiln_st32_<t> rounds at once
 * (prelude/half.h). An element loop shorter than a block is not staged. */
enum { KD_STAGE = 32 };

/* Boundaries of a segmented element loop, at most (schedule.c, segmented_loop). */
enum { KD_SEG_MAX = 8 };

/* How the target runs the kernel: kd_schedule decides it for one dialect after kd_lower,
 * and the printers only spell it. The description above is the same for every target. */
typedef struct kd_sched {
    int64_t chunk, chunks; /* the dialect's split of the last axis (C: the description's) */
    /* a split reduction: its parts (C: kd_kernel.parts; CUDA: an element or a column split)
     * and the split loop (C's, and a CUDA column split's); 0: none */
    int64_t parts;
    uint32_t split_loop;
    /* C: the element loop printed unrolled over the split's remainder, or in segments of
     * the last axis (seg_b: the n_seg boundaries), or with fast sin and cos and an exact
     * rerun; 0: not so */
    uint32_t unroll_loop, seg_loop, fast_trig_loop;
    /* C: the element loop whose 16-bit stores (KD_SCHED_STAGED) are staged: its values
     * computed KD_STAGE elements at a time into a local f32 block, then rounded and stored
     * together (print_c.c, print_staged_loop); 0: none. stage_overlap: a chunk's last
     * elements run as a block ending at the chunk's end, overlapping the one before (it
     * computes some elements again, so not where the loop reads what it overwrites: in
     * place, or a kept value); else they run as a scalar loop */
    uint32_t stage_loop;
    bool stage_overlap;
    int n_seg;
    int64_t seg_b[KD_SEG_MAX];
    /* CUDA */
    kd_cuda_form form;
    int64_t base_items; /* a split's kiln_k<i> items (the part kernel runs parts x them) */
    uint32_t n_split;   /* an element split's accumulators */
    /* > 0: KD_CUDA_THREADS, the element loop this many elements per thread; KD_CUDA_ROW,
     * every pass over the row (KD_SCHED_VLOOP) this many consecutive elements a lane a trip
     * (schedule.c, row_vec_plan); their contiguous accesses KD_SCHED_VLOAD / _VSTORE */
    int vec;
    /* KD_CUDA_ROW: the row caches (KD_SCHED_ROW_FILL), each inner long per row of the
     * block (row_group of them, or one) */
    uint32_t n_row_cache;
    /* > 1: rows per block (schedule.c, row_groups), each taken by CGEN_CUDA_THREADS /
     * row_group threads; the kernel's items are then groups of rows. KD_CUDA_THREADS: an
     * elementwise kernel's short rows; KD_CUDA_ROW: rows of at most KD_ROW_SHORT, each a
     * group of whole warps that stride its passes and combine them by shuffles (several
     * warps: through a slot per warp, behind a barrier of the group's own) */
    int64_t row_group;
} kd_sched;

/* --------------------------------------------------------- the kernel ---- */

typedef struct kd_prov {
    uint32_t node;
    const char *op;   /* op name */
    const char *file; /* user file (NULL if unknown) */
    int line;
} kd_prov;

typedef struct kd_kernel {
    kiln_context *ctx;
    uint32_t index; /* number of the kernel in the fusion plan */
    /* index space: rank and dims of the roots (but for a merged last axis); rows x chunks
     * work items */
    int rank;
    int64_t dims[KILN_MAX_RANK];
    /* > 1: the roots' last axis (of this many elements, < KD_SHORT_ROW) is merged into the
     * space's last, whose variable v gives the roots' two axes as v / merged, v % merged */
    int64_t merged;
    int64_t inner, rows, chunk, chunks, items; /* chunk: the last axis' elements per item */
    /* the statements before the element loop compute row values (fusion.h) once per item,
     * which is then a whole row (chunk = inner) but in the column form. A row value's
     * reduction over the row may keep its operand there (a softmax's exp(x - max), read
     * back instead of computed again: kd_stmt.keep) */
    bool prologue;
    int64_t grain; /* items per parallel chunk of the pool */
    bool columns;  /* the column-reduction form (lower.c) */
    bool tiled;    /* items go down the rows first: item it is row it % rows, chunk it / rows */
    /* C: > 1, rows per item (KD_ROW_BLOCK), the item's columns looped outside its
     * rows; the C dialect's items are then rows / row_block x chunks (CUDA's stay rows x
     * chunks) */
    int64_t row_block;
    /* C: > 1, rows per item (KD_PROLOGUE_ROWS) of a kernel with a prologue over short rows
     * (kd_lower, prologue_rows): the printer runs each of the prologue's steps for all the
     * item's rows before the next, so that a row value's reduction vectorises across rows,
     * and a kept reduction stores its operand in one loop and sums it in another */
    int64_t prologue_rows;
    /* > 1: the last axis' variable is used (also) as last / split and last % split (a
     * reshape split it, an interleave concatenates on the split-off axis), or divided by
     * multiples of split, which the printer writes through those two (kd_sched_split);
     * the printer names those two, and the C dialect loops over them as two nested loops,
     * the inner of constant trip count, instead of dividing per element. The last axis
     * (and the chunk, when it is chunked) is a multiple of it. 0 otherwise */
    int64_t split;
    /* > 1: parts, the C dialect's split of one reduction across threads (a reduction to a
     * scalar or to few outputs is one work item, so one thread otherwise). The kernel has
     * one item; statement part_loop is the outermost reduce loop of accumulator part_acc,
     * at the top of the element loop. kiln_k<i>_part runs items 0..parts-1, each the
     * element loop up to that reduction's end with the loop over its own slice
     * [p*n/parts, (p+1)*n/parts), and writes each element's accumulator (KD_PART_BYTES
     * per element: the value, then the NaN flag) to the scratch buffer after the kernel's
     * outputs; kiln_k<i> then combines the parts in order 0..parts-1 in place of the loop.
     * parts is a constant, not the thread count, so the result does not depend on it. */
    int64_t parts;
    uint32_t part_acc, part_loop;
    uint32_t row_var, last_var;
    /* leading axes: variable of axis a and its value in terms of row (index), rank - 1 */
    uint32_t axis_var[KILN_MAX_RANK], axis_def[KILN_MAX_RANK];
    /* buffers: inputs then outputs, their dtypes and IR nodes */
    uint32_t n_inputs, n_outputs;
    kiln_dtype *in_type, *out_type;
    const uint32_t *in_node, *out_node;
    /* NULL, or per output: 1 + the input the planner overwrites in place with it (0:
     * none). Exactly those inputs and outputs may alias; lower.c then computes every
     * output's element before it stores any (in_place) */
    const uint32_t *alias;
    bool in_place;

    kd_var *vars;
    kd_atom *atoms;
    kd_term *terms;
    kd_index *ixs;
    kd_guard *guards;
    kd_stmt *stmts; /* stmts[0] unused */
    kd_prov *prov;  /* sorted by node */
    uint32_t n_vars, n_atoms, n_terms, n_ixs, n_guards, n_stmts, n_prov;
    uint32_t cap_vars, cap_atoms, cap_terms, cap_ixs, cap_guards, cap_stmts, cap_prov;
    bool oom;       /* an allocation failed: the description is incomplete */
    kd_sched sched; /* the target's schedule (kd_schedule), zero until it runs */
} kd_kernel;

/* Lowers kernel ki of the plan (a LOOP kernel) into *kd. On failure (host OOM) sets the
 * context's message; *kd must be freed with kd_free either way. */
kiln_status kd_lower(const kiln_graph *g, const fusion_plan *p, uint32_t ki, kd_kernel *kd);
void kd_free(kd_kernel *kd);
/* The most iterations of any loop nest inside statement `loop` (a LOOP), itself included
 * (saturating): the work of one element of a reduction split at that loop. */
int64_t kd_loop_work(const kd_kernel *kd, uint32_t loop);
/* The END closing loop (or IF) statement `loop` (the last statement if none does). */
uint32_t kd_loop_end(const kd_kernel *kd, uint32_t loop);
/* Whether the body of LOOP statement `loop` adds into accumulator acc exactly once per
 * iteration: one ACCUM of it, outside every IF and inner loop. The C dialect then stores a
 * blocked sum's value in its block's slot rather than adding it (print_c.c); the
 * interpreter replays only such blocks (kexec.c). */
bool kd_accum_once(const kd_kernel *kd, uint32_t loop, uint32_t acc);

/* ---- scheduling (schedule.c): how the work is split and vectorised ---- */

/* The description-level choices kd_lower makes once the statements are there: kd->split,
 * tiled columns (the chunk: returned, 0 for none), row blocks, parts, prologue rows. */
int64_t kd_sched_split(const kd_kernel *kd);
/* Whether every division of the last axis' variable is by k (multiples: by a multiple of
 * k); true when there is none. */
bool kd_split_alone(const kd_kernel *kd, int64_t k, bool multiples);
int64_t kd_sched_tile(const kd_kernel *kd);
int64_t kd_sched_row_block(const kd_kernel *kd);
void kd_sched_parts(kd_kernel *kd);
int64_t kd_sched_prologue_rows(kd_kernel *kd);
/* kd->prologue_rows: the kept value's store in prologue reduce loop `loop` when the C
 * dialect sums the kept row back in a loop of its own (print_c.c, print_prologue_rows; the
 * order kexec.c's reduction_pragma follows), 0 when it sums where it computes: no kept
 * value, or a 16-bit one (read back, its values would be the stored, rounded ones, with
 * excess precision not those the sum adds). */
uint32_t kd_kept_row_store(const kd_kernel *kd, uint32_t loop);
/* Whether index ix is the last axis' variable plus a constant, *c. */
bool kd_last_plus(const kd_kernel *kd, uint32_t ix, int64_t *c);
/* Fills kd->sched (and the statements' sched marks) for one dialect. */
void kd_schedule(kd_kernel *kd, cgen_dialect dialect);
/* CUDA, a KD_CUDA_ROW kernel as scheduled: the device-memory reads and writes per element
 * of the row (the passes' and the element loop's accesses that no row cache serves). */
void kd_cuda_row_traffic(const kd_kernel *kd, int *reads, int *writes);

/* ---- index expressions (kindex.c); every builder returns an index id, 0 on OOM ---- */

/* Grows one of kd's arrays (n elements in use) to hold one more; false on OOM. */
bool kd_reserve(kd_kernel *kd, void **arr, uint32_t n, uint32_t *cap, size_t elem);
uint32_t kd_var_new(kd_kernel *kd, kd_var v);
uint32_t kd_ix_const(kd_kernel *kd, int64_t c);
/* Loop variable var taking values lo..hi. */
uint32_t kd_ix_var(kd_kernel *kd, uint32_t var, int64_t lo, int64_t hi);
/* ix where it is known (by a guard around the code using it) to lie in lo..hi: when ix is
 * c + a for one atom a (a loop variable, or a division, remainder or value: a
 * concatenation on an axis that a reshape split off indexes it with i % 2), the same sum
 * over a narrowed to lo-c..hi-c, so that the simplifier can use the tighter bound (a
 * remainder narrowed to one value is that constant); otherwise ix itself. Valid only
 * under the guard. */
uint32_t kd_ix_within(kd_kernel *kd, uint32_t ix, int64_t lo, int64_t hi);
/* The int64 value of statement stmt, known to lie in lo..hi. */
uint32_t kd_ix_val(kd_kernel *kd, uint32_t stmt, int64_t lo, int64_t hi);
/* ka * a + kb * b + c (b may be 0: absent). */
uint32_t kd_ix_affine(kd_kernel *kd, uint32_t a, int64_t ka, uint32_t b, int64_t kb, int64_t c);
uint32_t kd_ix_div(kd_kernel *kd, uint32_t a, int64_t n);
uint32_t kd_ix_mod(kd_kernel *kd, uint32_t a, int64_t n);
bool kd_ix_equal(const kd_kernel *kd, uint32_t a, uint32_t b);
/* Whether ix is the last axis' variable itself (any narrowing of it). */
bool kd_ix_is_last(const kd_kernel *kd, uint32_t ix);
/* The index map of a shape op that reads each operand axis at a function of the same
 * output axis alone (rev): fills sub (one index per operand axis) from the output's ix and
 * returns true; false for every op lowered otherwise (lower.c). */
bool kd_ix_map(kd_kernel *kd, const ir_node *n, const uint32_t *ix, uint32_t *sub);

#endif
