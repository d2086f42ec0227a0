/* schedule.c — how a kernel's work is split and vectorised: the lowering's decisions
 * about the schedule, made on the finished statements, and recorded on the description
 * (kdesc.h) for the printers, which only spell them.
 *
 * Two kinds. kd_lower asks for the description-level ones once its statements are there
 * (kd_sched_*): the split of the last axis' variable, tiled columns, row blocks and
 * prologue rows (the C dialect's ways through a transpose and short rows), a reduction's
 * parts. kd_schedule then decides, for one dialect, what its target runs (kd_kernel.sched
 * and kd_stmt.sched): in C the element loop's form (unrolled over an interleave's
 * remainder, in segments of the last axis, or with fast sin and cos and an exact rerun),
 * in CUDA the kernel's form (a thread, a warp or the block per element, or the block per
 * row), its chunk of the last axis, a split of its reductions over blocks, four or eight
 * elements a thread, short rows several a block, and the rows held on chip.
 *
 * Invariant: every decision depends on the description (shapes, statements) alone, never
 * on the machine or the thread count, so the printed source, and a result's bits, do not
 * either. */
#include "kdesc.h"

#include <string.h>

uint32_t kd_loop_end(const kd_kernel *kd, uint32_t loop) {
    int depth = 0;
    for (uint32_t s = loop + 1; s < kd->n_stmts; s++) {
        kd_stmt_kind k = kd->stmts[s].kind;
        if (k == KS_LOOP || k == KS_IF) depth++;
        if (k == KS_END && depth-- == 0) return s;
    }
    return kd->n_stmts - 1;
}

/* ----------------------------------------------- the description's ---- */

bool kd_accum_once(const kd_kernel *kd, uint32_t loop, uint32_t acc) {
    int depth = 0, found = 0;
    for (uint32_t i = loop + 1; i < kd->n_stmts; i++) {
        const kd_stmt *x = &kd->stmts[i];
        if (x->kind == KS_LOOP || x->kind == KS_IF) depth++;
        if (x->kind == KS_END && depth-- == 0) break;
        if (x->kind == KS_ACCUM && x->args[0] == acc) {
            if (depth) return false;
            found++;
        }
    }
    return found == 1;
}

int64_t kd_loop_work(const kd_kernel *kd, uint32_t loop) {
    int64_t prod[64] = {1}, work = 0;
    int d = 0;
    for (uint32_t l = loop; l < kd->n_stmts && d >= 0; l++) {
        kd_stmt_kind k = kd->stmts[l].kind;
        if ((k == KS_LOOP || k == KS_IF) && d + 1 < 64) {
            int64_t n = k == KS_LOOP && kd->stmts[l].n > 0 ? kd->stmts[l].n : 1;
            prod[d + 1] = prod[d] > INT64_MAX / n ? INT64_MAX : prod[d] * n;
            work = prod[d + 1] > work ? prod[d + 1] : work;
            d++;
        } else if (k == KS_END && --d == 0)
            break; /* the loop closed */
    }
    return work;
}

/* kd->split (kdesc.h): the divisor the last axis' variable is divided by, when the item's
 * chunk of it splits evenly. Where it is divided by several, the smallest, when every other
 * is a multiple of it (a pooled [N, 7, 7, 32] flattened into rows of 1568 reads at i / 32
 * and i / 224): the printer divides the quotient further (print.c, print_atom), where
 * without a split each element divided and the loop stayed scalar (bench/RESULTS.md, "The
 * CNN step: max and min without branches"). 0 when there is none, or they are not
 * multiples of one. */
int64_t kd_sched_split(const kd_kernel *kd) {
    int64_t k = 0;
    for (uint32_t i = 0; i < kd->n_atoms; i++) {
        const kd_atom *a = &kd->atoms[i];
        if ((a->kind == KD_ATOM_DIV || a->kind == KD_ATOM_MOD) && kd_ix_is_last(kd, a->arg) &&
            (!k || a->n < k))
            k = a->n;
    }
    if (k < 2 || !kd_split_alone(kd, k, true) || kd->inner % k || (kd->chunks > 1 && kd->chunk % k))
        return 0;
    return k;
}

bool kd_split_alone(const kd_kernel *kd, int64_t k, bool multiples) {
    for (uint32_t i = 0; i < kd->n_atoms; i++) {
        const kd_atom *a = &kd->atoms[i];
        if ((a->kind != KD_ATOM_DIV && a->kind != KD_ATOM_MOD) || !kd_ix_is_last(kd, a->arg))
            continue;
        if (multiples ? a->n % k : a->n != k) return false;
    }
    return true;
}

/* Whether load st reads across the last axis with a stride of at least KD_TILE_STRIDE
 * elements (*strided), and one of a multiple of 1 KiB (*sets: its lines fall into few
 * cache sets); both are or-ed in. */
static void load_strides(const kd_kernel *kd, const kd_stmt *st, bool *strided, bool *sets) {
    const kd_index *x = &kd->ixs[st->ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *t = &kd->terms[x->first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        int64_t c = t->coef < 0 ? -t->coef : t->coef;
        if (a->kind != KD_ATOM_VAR || a->arg != kd->last_var || c < KD_TILE_STRIDE) continue;
        *strided = true;
        *sets |= (int64_t)kiln_dtype_itemsize(st->dtype) * c % 1024 == 0;
    }
}

/* kd->tiled (kdesc.h, KD_TILE): for an elementwise kernel (no reduction, no split, no
 * prologue) with a load whose index steps by at least KD_TILE_STRIDE elements along the
 * last axis, the columns an item should take; 0 for any other kernel, and for one whose
 * rows are one item each and whose stride is not a multiple of 1 KiB: consecutive items
 * are then consecutive rows already, reading the next element of the row's lines, which
 * fit the cache (a 1000 x 30000 transpose ran faster as rows than tiled: bench/RESULTS.md,
 * "Transposes: few columns per item, down the rows first"). */
int64_t kd_sched_tile(const kd_kernel *kd) {
    if (kd->prologue || kd->columns || kd->split || kd->inner <= KD_TILE) return 0;
    bool strided = false, sets = false;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind == KS_ACC) return 0;
        if (st->kind == KS_LOAD && !st->keep) load_strides(kd, st, &strided, &sets);
    }
    return !strided || (!sets && kd->chunks == 1) ? 0 : sets ? KD_TILE_POW2 : KD_TILE;
}

/* kd->row_block (kdesc.h, KD_ROW_BLOCK): for a kernel that reads across the last axis
 * with a stride of at least KD_TILE_STRIDE elements (tiled, or with rows in eights) and
 * whose element loop is statement 1 and holds no loop or branch, so an item's rows can go
 * inside its columns. */
int64_t kd_sched_row_block(const kd_kernel *kd) {
    if (kd->rows % KD_ROW_BLOCK || kd->n_stmts < 3 || kd->stmts[1].kind != KS_LOOP ||
        kd->stmts[1].n >= 0 || kd->stmts[kd->n_stmts - 1].kind != KS_END)
        return 0;
    bool strided = false, sets = false;
    for (uint32_t s = 2; s + 1 < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind == KS_LOOP || st->kind == KS_IF || st->kind == KS_ELSE_IF ||
            st->kind == KS_ELSE || st->kind == KS_END || st->kind == KS_ACC)
            return 0;
        if (st->kind == KS_LOAD && !st->keep) load_strides(kd, st, &strided, &sets);
    }
    /* Untiled (a row is one item), blocks pay only where the stride crowds the rows' lines
     * into few cache sets: NCHW to NHWC, one thread, several times faster in blocks at
     * [16, 32, 64, 64] (a 16 KiB stride), but slower at [32, 64, 56, 56] and
     * [8, 3, 224, 224] (bench/RESULTS.md, "Transposes: 8 rows per item, and 8 x 8 blocks
     * through registers"). */
    return strided && (kd->tiled || (kd->inner % KD_ROW_BLOCK == 0 && sets)) ? KD_ROW_BLOCK : 0;
}

/* kd->parts (kdesc.h): a one-item kernel whose element loop opens with a scalar
 * reduction over enough elements: that reduction's outermost loop is split, into the
 * slices it adds in anyway when it is a float sum or product (kd_stmt.slices), so that
 * splitting changes no bit; a float sum too short to have slices is not split. */
void kd_sched_parts(kd_kernel *kd) {
    if (kd->items != 1 || kd->columns || kd->n_stmts < 4) return;
    /* statement 1 is the element loop; find the first accumulator directly inside it */
    int depth = 0;
    for (uint32_t s = 2; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind == KS_ACC && !depth && !st->column && s + 1 < kd->n_stmts &&
            kd->stmts[s + 1].kind == KS_LOOP && kd->stmts[s + 1].n >= 2) {
            /* the work: the most iterations of any loop nested in the split one, for
             * every element of the item */
            int64_t w = kd_loop_work(kd, s + 1);
            int64_t work = kd->inner > 0 && w > INT64_MAX / kd->inner ? INT64_MAX : w * kd->inner;
            if (work < KD_PART_MIN_WORK) return;
            bool exact = !st->red.arith || !ir_dtype_is_float(st->dtype);
            if (!exact && !st->slices) return;
            kd->part_acc = s;
            kd->part_loop = s + 1;
            kd->parts = kd->stmts[s + 1].n < KD_PARTS ? kd->stmts[s + 1].n : KD_PARTS;
            return;
        }
        /* a store before it: the part function would store (and, in place, could
         * overwrite an input another part still reads) */
        if (st->kind == KS_STORE) return;
        if (st->kind == KS_LOOP || st->kind == KS_IF) depth++;
        if (st->kind == KS_END) depth--;
        if (depth < 0) return; /* left the element loop */
    }
}

/* kd->prologue_rows (kdesc.h, KD_PROLOGUE_ROWS): for a kernel whose items are whole rows of
 * at most KD_SHORT_REDUCE elements, with a prologue of plain statements and reductions of
 * one loop each of at most as many values (of loads, ops, the accumulation and a kept
 * value's store) and then the element loop to the end; 0 for any other. Its few-valued
 * prologue reductions lose their pragma: they are printed across the item's rows. */
int64_t kd_sched_prologue_rows(kd_kernel *kd) {
    if (!kd->prologue || kd->columns || kd->in_place || kd->parts || kd->split || kd->chunks != 1 ||
        kd->inner > KD_SHORT_REDUCE || kd->rows < 2 * KD_PROLOGUE_ROWS)
        return 0;
    uint32_t s = 1;
    for (; s < kd->n_stmts && !(kd->stmts[s].kind == KS_LOOP && kd->stmts[s].n < 0); s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind == KS_LOAD && st->keep) return 0;
        if (st->kind == KS_LOAD || st->kind == KS_LIT || st->kind == KS_IOTA || st->kind == KS_OP ||
            st->kind == KS_RESULT)
            continue;
        /* ACC, then its one loop of loads, ops, the accumulation and a kept store, END */
        if (st->kind != KS_ACC || st->red.blocked || s + 1 >= kd->n_stmts ||
            kd->stmts[s + 1].kind != KS_LOOP || kd->stmts[s + 1].acc != s ||
            kd->stmts[s + 1].slice_acc || kd->stmts[s + 1].n > KD_SHORT_REDUCE)
            return 0;
        uint32_t acc = s, summed = 0, kept = 0;
        for (s += 2; s < kd->n_stmts && kd->stmts[s].kind != KS_END; s++) {
            const kd_stmt *t = &kd->stmts[s];
            bool plain = (t->kind == KS_LOAD && !t->keep) || t->kind == KS_LIT ||
                         t->kind == KS_IOTA || t->kind == KS_OP;
            if (t->kind == KS_ACCUM && t->args[0] == acc && !summed)
                summed = t->args[1];
            else if (t->kind == KS_STORE && t->keep && !kept)
                kept = t->args[0];
            else if (!plain)
                return 0;
        }
        /* the kept value is the one summed (the printer sums it back from the row), and
         * the reduction's result follows its loop */
        if (s + 1 >= kd->n_stmts || !summed || (kept && kept != summed) ||
            kd->stmts[s + 1].kind != KS_RESULT || kd->stmts[s + 1].args[0] != acc)
            return 0;
    }
    /* the element loop, straight to the last statement */
    if (s >= kd->n_stmts || kd->stmts[kd->n_stmts - 1].kind != KS_END) return 0;
    int depth = 0;
    for (uint32_t t = s; t < kd->n_stmts; t++) {
        kd_stmt_kind k = kd->stmts[t].kind;
        depth += k == KS_LOOP || k == KS_IF ? 1 : k == KS_END ? -1 : 0;
        if (!depth && t + 1 < kd->n_stmts) return 0;
    }
    for (uint32_t t = 1; t < s; t++)
        if (kd->stmts[t].kind == KS_LOOP && kd->stmts[t].few && kd->stmts[t].simd) {
            kd->stmts[t].simd = false;
            kd->stmts[t].simd_narrow = true;
        }
    return KD_PROLOGUE_ROWS;
}

uint32_t kd_kept_row_store(const kd_kernel *kd, uint32_t loop) {
    for (uint32_t u = loop + 1, end = kd_loop_end(kd, loop); u < end; u++)
        if (kd->stmts[u].kind == KS_STORE)
            return ir_dtype_is_half(kd->out_type[kd->stmts[u].slot]) ? 0 : u;
    return 0;
}

/* ---------------------------------------------------------------- C ---- */

/* C, kd->split: the element loop, when it is printed unrolled over the split's remainder
 * (print_c.c, print_split_unrolled): a split of at most SPLIT_UNROLL_MAX whose element loop
 * holds a branch (an interleave's concatenate on the split-off axis, RoPE's or sin and cos
 * of positional encodings stacked). Then each copy of the body has the remainder as a
 * constant, its branches fold away, and the loop vectorises whatever the body's size:
 * left to gcc, the inner loop of k was unrolled only when the body was small, and a
 * body with sin and cos stayed a scalar loop with a branch per element. 0 otherwise. */
enum { SPLIT_UNROLL_MAX = 4 };
static uint32_t split_unrolled_loop(const kd_kernel *kd) {
    if (kd->split < 2 || kd->split > SPLIT_UNROLL_MAX || kd->columns || kd->parts) return 0;
    uint32_t loop = 0;
    bool branch = false;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (!loop && st->kind == KS_LOOP && st->n < 0)
            loop = s;
        else if (loop && st->kind == KS_IF)
            branch = true;
    }
    return loop && branch && !kd->stmts[loop].simd ? loop : 0;
}

bool kd_last_plus(const kd_kernel *kd, uint32_t ix, int64_t *c) {
    const kd_index *x = &kd->ixs[ix];
    if (x->n != 1 || kd->terms[x->first].coef != 1) return false;
    const kd_atom *a = &kd->atoms[kd->terms[x->first].atom];
    *c = x->c;
    return a->kind == KD_ATOM_VAR && a->arg == kd->last_var;
}

/* The element loop's statement (the first loop over the last axis), 0 when there is none. */
static uint32_t element_loop(const kd_kernel *kd) {
    for (uint32_t s = 1; s < kd->n_stmts; s++)
        if (kd->stmts[s].kind == KS_LOOP && kd->stmts[s].n < 0) return s;
    return 0;
}

/* C: the element loop, when it is printed in segments of the last axis (print_c.c,
 * print_segments): a kernel, not interleaved (split_unrolled_loop) nor in the column form
 * or split in parts, whose element loop branches only on the last axis' variable plus a
 * constant against constants (a concatenation or a pad along the last axis: sin and cos
 * of Fourier features side by side). The boundaries where a guard changes, strictly
 * inside the axis and sorted, go to b (at most KD_SEG_MAX); 0 when the form does not
 * apply. Each segment then has every branch decided: it is printed without them, and
 * vectorises, where the kernel was a scalar loop with a branch per element (the
 * concatenation's if-conversion guard). A kernel whose last axis is split (kd->split:
 * the heads of a [B, T, 3, H, D] projection's gradient, read from three [B, H, T, D]
 * cotangents) is segmented where every boundary is a multiple of the split, each segment
 * then its own pair of loops over the quotient and the remainder. */
static uint32_t segmented_loop(const kd_kernel *kd, int64_t *b, int *nb) {
    *nb = 0;
    if (kd->columns || kd->parts) return 0;
    uint32_t loop = element_loop(kd);
    if (!loop) return 0;
    uint32_t end = kd_loop_end(kd, loop);
    bool any = false;
    for (uint32_t s = loop + 1; s < end; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind != KS_IF && st->kind != KS_ELSE_IF) continue;
        for (uint32_t g = 0; g < st->n_guards; g++) {
            const kd_guard *gd = &kd->guards[st->guard + g];
            int64_t c;
            if (gd->kind == KD_GUARD_DIVIDES || !kd_last_plus(kd, gd->ix, &c)) return 0;
            int64_t v = gd->kind == KD_GUARD_LT ? gd->n - c : -c;
            any = true;
            if (v <= 0 || v >= kd->inner) continue;
            if (kd->split && v % kd->split) return 0;
            int at = 0;
            while (at < *nb && b[at] < v) at++;
            if (at < *nb && b[at] == v) continue;
            if (*nb == KD_SEG_MAX) return 0;
            memmove(&b[at + 1], &b[at], (size_t)(*nb - at) * sizeof *b);
            b[at] = v;
            (*nb)++;
        }
    }
    return any ? loop : 0;
}

/* C: the element loop of a kernel whose f32 sin and cos (directly in it: not in a reduce
 * loop) are printed first by Cody and Waite alone, which is exact below 2^21 and, in a
 * vectorised loop, half the work of computing both reductions and keeping one per lane:
 * the loop ors kiln_trig_big_f32 of each argument, and when that is set it runs again
 * with the exact functions, overwriting every output of the item. Not in place, not
 * with a prologue (the kept value it reads back is overwritten), not in the column form
 * or split in parts (kiln_k<i>_part), nor where the loop carries a simd pragma (the flag
 * would need a reduction clause). 0: none. */
static uint32_t fast_trig_loop(const kd_kernel *kd) {
    if (kd->in_place || kd->prologue || kd->columns || kd->parts || kd->n_stmts < 3 ||
        kd->stmts[1].kind != KS_LOOP || kd->stmts[1].n >= 0 || kd->stmts[1].simd)
        return 0;
    uint32_t end = kd_loop_end(kd, 1);
    bool trig = false;
    for (uint32_t s = 2; s < end; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind == KS_LOOP) return 0;
        trig |= st->kind == KS_OP && st->dtype == KILN_DTYPE_F32 &&
                (st->op == IR_SIN || st->op == IR_COS);
    }
    return trig ? 1 : 0;
}

/* c + v + sum of w k * (other loop variables): w consecutive elements from a multiple of
 * w of v, so one vector access when the buffer is 16-byte aligned (every buffer is: the
 * allocator and the planner align to 256 bytes). */
static bool vec_index(const kd_kernel *kd, uint32_t ix, int64_t w, uint32_t v) {
    const kd_index *x = &kd->ixs[ix];
    bool has_v = false;
    if (x->c % w) return false;
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *t = &kd->terms[x->first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        if (a->kind != KD_ATOM_VAR) return false;
        if (a->arg != v && t->coef % w) return false;
        /* two atoms of v (it narrowed by a guard, kd_ix_within) would step by 2 */
        if (a->arg == v && (t->coef != 1 || has_v)) return false;
        has_v |= a->arg == v;
    }
    return has_v;
}

/* Whether statement st of element loop variable v is a 16-bit store it may stage: one
 * whose index steps by one element with v (vec_index at a width of 1). */
static bool staged_store(const kd_kernel *kd, const kd_stmt *st, uint32_t v) {
    return st->kind == KS_STORE && !st->keep && ir_dtype_is_half(kd->out_type[st->slot]) &&
           vec_index(kd, st->ix, 1, v);
}

/* C: the element loop whose 16-bit stores are staged (kd_sched.stage_loop), marking them
 * KD_SCHED_STAGED. gcc 12 vectorises kiln_st_<t> from its integer arithmetic, about two
 * thirds of a short chain's instructions for bf16 (bench/RESULTS.md, "The 16-bit chain and
 * products on an AMD EPYC"), and cannot use the hardware's conversion from scalar code; a
 * block of KD_STAGE values rounded together by kiln_st32_<t> can (prelude/half.h). So a
 * straight-line element loop (loads, constants, elementwise ops, row clamps and stores:
 * no reduction, branch or inner loop; a simd pragma moves to the block's loop) with a
 * 16-bit store contiguous along the loop is
 * staged, where no other form claims the loop (interleaved, segmented, fast trig, the
 * column form, parts, row blocks, prologue rows, a split last axis). In place is fine: an
 * overwritten input is read only at the element itself (src/plan/inplace.c), and every
 * element of a block is read before any is stored; but then a chunk's last elements
 * cannot run as a block overlapping the one before (kd_sched.stage_overlap), which would
 * read what that one stored. The target decides whether to use the form (c_head.h,
 * KILN_STAGED_<t>). 0: none. */
static uint32_t staged_loop(kd_kernel *kd) {
    const kd_sched *c = &kd->sched;
    if (kd->columns || kd->parts || kd->split || kd->row_block > 1 || kd->prologue_rows > 1 ||
        c->unroll_loop || c->seg_loop || c->fast_trig_loop)
        return 0;
    uint32_t loop = element_loop(kd);
    if (!loop) return 0;
    const kd_stmt *l = &kd->stmts[loop];
    int64_t row = c->chunk > 0 && c->chunk < kd->inner ? c->chunk : kd->inner;
    if (l->acc || l->simd_narrow || row < KD_STAGE) return 0;
    uint32_t end = kd_loop_end(kd, loop);
    bool any = false, kept = false;
    for (uint32_t s = loop + 1; s < end; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind != KS_LIT && st->kind != KS_LOAD && st->kind != KS_IOTA && st->kind != KS_OP &&
            st->kind != KS_CLAMP && st->kind != KS_STORE)
            return 0;
        any |= staged_store(kd, st, l->var);
        kept |= st->kind == KS_LOAD && st->keep;
    }
    kd->sched.stage_overlap = any && !kd->in_place && !kept;
    for (uint32_t s = loop + 1; any && s < end; s++)
        if (staged_store(kd, &kd->stmts[s], l->var)) kd->stmts[s].sched |= KD_SCHED_STAGED;
    return any ? loop : 0;
}

static void schedule_c(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    c->parts = kd->parts;
    c->split_loop = kd->parts ? kd->part_loop : 0;
    c->unroll_loop = split_unrolled_loop(kd);
    c->seg_loop = c->unroll_loop ? 0 : segmented_loop(kd, c->seg_b, &c->n_seg);
    c->fast_trig_loop = fast_trig_loop(kd);
    c->stage_loop = staged_loop(kd);
}

/* ------------------------------------------------------------- CUDA ---- */

/* The CUDA form of a kernel and its chunk of the last axis: a reduction inside the
 * element loop (any non-column accumulator) takes a warp per element, or the block when
 * the kernel has too few elements to fill the device with warps or its last axis too few
 * to give each warp of a block one (a keepdims row reduction: [rows, 1]). */
static void cuda_form(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    bool inner_red = false;
    for (uint32_t s = 1; s < kd->n_stmts; s++)
        inner_red |= kd->stmts[s].kind == KS_ACC && !kd->stmts[s].column;
    int64_t elems = kd->rows * kd->inner;
    if (kd->prologue && !kd->columns) {
        c->form = KD_CUDA_ROW;
        c->chunk = kd->inner > 0 ? kd->inner : 1;
    } else if (!inner_red) {
        bool column = false;
        for (uint32_t s = 1; s < kd->n_stmts; s++)
            column |= kd->stmts[s].kind == KS_ACC && kd->stmts[s].column;
        c->form = KD_CUDA_THREADS;
        c->chunk = column ? CGEN_CUDA_THREADS : 4 * CGEN_CUDA_THREADS;
    } else if (elems >= CGEN_CUDA_WARP_MIN && kd->inner >= CGEN_CUDA_THREADS / 32) {
        c->form = KD_CUDA_WARP;
        c->chunk = CGEN_CUDA_THREADS / 32;
    } else {
        c->form = KD_CUDA_BLOCK;
        c->chunk = 1;
    }
    c->chunks = kd->inner > c->chunk ? (kd->inner + c->chunk - 1) / c->chunk : 1;
}

/* Whether index ix refers to no statement outside (lo, hi] (its values: KD_ATOM_VAL). */
static bool ix_within(const kd_kernel *kd, uint32_t ix, uint32_t lo, uint32_t hi) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[x->first + i].atom];
        if (a->kind == KD_ATOM_VAL && (a->arg <= lo || a->arg > hi)) return false;
        if ((a->kind == KD_ATOM_DIV || a->kind == KD_ATOM_MOD) && !ix_within(kd, a->arg, lo, hi))
            return false;
    }
    return true;
}

/* Whether the reduction of accumulator `acc`, its loops ending at statement `end`, reads
 * nothing computed outside them (then a part kernel can compute it alone: a softmax's sum
 * of exp(x - max) cannot be, its max being another reduction's result). */
static bool span_alone(const kd_kernel *kd, uint32_t acc, uint32_t end) {
    for (uint32_t t = acc + 1; t <= end; t++) {
        const kd_stmt *st = &kd->stmts[t];
        if (st->kind == KS_STORE) return false;
        for (uint32_t i = 0; i < st->n_args; i++) {
            uint32_t a = st->args[i];
            if ((a < acc || a > end) && kd->stmts[a].kind != KS_LIT) return false;
        }
        if ((st->kind == KS_LOAD || st->kind == KS_IOTA) && !ix_within(kd, st->ix, acc, end))
            return false;
        for (uint32_t g = 0; (st->kind == KS_IF || st->kind == KS_ELSE_IF) && g < st->n_guards; g++)
            if (!ix_within(kd, kd->guards[st->guard + g].ix, acc, end)) return false;
    }
    return true;
}

/* CUDA: whether a kernel with few values to compute (one item in C; a global norm: 76
 * sums of squares fused into one kernel that outputs one value) spends its time
 * in reductions one block would run alone. Every reduction directly inside the element
 * loop that reads nothing from outside its own loops is split (in place, only those before
 * the first store): the part kernel gives each of `parts` slices of their loops a
 * block per value, at least CGEN_CUDA_PART_WORK iterations a block, at most KN_CUDA_PARTS
 * blocks in all (a reduction to 300 values already has 300 blocks); the rest of the
 * kernel stays in kiln_k<i>. Marks them KD_SCHED_SPLIT (their loops KD_SCHED_SPLIT_LOOP),
 * numbers them. */
static bool cuda_element_split(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    if (kd->items != 1 || kd->columns || kd->n_stmts < 4 || kd->stmts[1].kind != KS_LOOP ||
        kd->stmts[1].n >= 0)
        return false;
    int64_t work = 0;
    int depth = 0;
    for (uint32_t s = 2; s < kd->n_stmts; s++) {
        kd_stmt *st = &kd->stmts[s];
        /* the part kernel runs before every store of kiln_k<i>, so a reduction after a
         * store may be split too, unless a store may write over an input (in place) */
        if (st->kind == KS_STORE && kd->in_place) break;
        if (!depth && st->kind == KS_ACC && !st->column && s + 1 < kd->n_stmts &&
            kd->stmts[s + 1].kind == KS_LOOP && kd->stmts[s + 1].n >= 2) {
            uint32_t end = kd_loop_end(kd, s + 1);
            if (span_alone(kd, s, end)) {
                st->sched |= KD_SCHED_SPLIT;
                kd->stmts[s + 1].sched |= KD_SCHED_SPLIT_LOOP;
                st->split_k = c->n_split++;
                int64_t w = kd_loop_work(kd, s + 1);
                work = work > INT64_MAX - w ? INT64_MAX : work + w;
            }
            s = end;
            continue;
        }
        if (st->kind == KS_LOOP || st->kind == KS_IF) depth++;
        if (st->kind == KS_END && depth-- == 0) break; /* the element loop closed */
    }
    int64_t items = kd->rows * kd->inner, parts = KN_CUDA_PARTS / items;
    if (parts > work / CGEN_CUDA_PART_WORK) parts = work / CGEN_CUDA_PART_WORK;
    if (!c->n_split || parts < 2) {
        for (uint32_t s = 0; s < kd->n_stmts; s++)
            kd->stmts[s].sched &= (uint8_t) ~(KD_SCHED_SPLIT | KD_SCHED_SPLIT_LOOP);
        c->n_split = 0;
        return false;
    }
    c->form = KD_CUDA_BLOCK; /* a block per value in both kernels */
    c->chunk = 1;
    c->chunks = kd->inner;
    c->parts = parts;
    return true;
}

/* CUDA: whether a column reduction has too few items to fill the device and rows enough
 * to split. A bias gradient, [4096, 512] summed over its rows, is two items of 256
 * columns: two blocks, each thread adding 4096 rows alone. Split, the kernel takes
 * CGEN_CUDA_THREADS / CGEN_CUDA_COL_LANES columns an item (32: a warp's, so its loads stay
 * coalesced), and its outermost reduce loop gives each of `parts` slices a block per
 * item (kiln_k<i>_part), whose CGEN_CUDA_COL_LANES threads a column stride the slice
 * and combine in lane order, one partial result a column and part; kiln_k<i> adds each
 * column's parts in a fixed order, the same lanes a column (print_cuda.c). So both kernels
 * have every thread busy and many blocks, and the partial results are a small share of
 * the input (a [4096, 512] bias gradient: 32 parts, 512 blocks of 16 rows a lane, partial
 * results a sixteenth of the input's bytes, added up by 16 blocks). The description is the same for
 * both dialects; the split is how this dialect spreads it (the C dialect's threads already share
 * the columns). */
static bool cuda_column_split(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    if (!kd->columns || kd->rows * c->chunks >= CGEN_CUDA_COL_SPLIT_ITEMS) return false;
    uint32_t loop = 0; /* the outermost reduce loop, right after the accumulators */
    for (uint32_t s = 1; s < kd->n_stmts && !loop; s++) {
        if (kd->stmts[s].kind == KS_LOOP)
            loop = s;
        else if (kd->stmts[s].kind != KS_ACC)
            return false;
    }
    if (!loop || kd->stmts[loop].n < 2 * CGEN_CUDA_COL_PART_ROWS) return false;
    int64_t chunk = CGEN_CUDA_THREADS / CGEN_CUDA_COL_LANES;
    int64_t chunks = kd->inner > chunk ? (kd->inner + chunk - 1) / chunk : 1;
    /* about KN_CUDA_PARTS blocks in all, and at least two parts (fewer than 1024 items:
     * the test above) */
    int64_t items = kd->rows * chunks, n = kd->stmts[loop].n, parts = KN_CUDA_PARTS / items;
    if (parts < 2) parts = 2;
    if (parts > n / CGEN_CUDA_COL_PART_ROWS) parts = n / CGEN_CUDA_COL_PART_ROWS;
    if (parts < 2 || kd->rows * c->chunks * c->chunk * n < KD_PART_MIN_WORK) return false;
    c->chunk = chunk;
    c->chunks = chunks;
    c->split_loop = loop;
    kd->stmts[loop].sched |= KD_SCHED_SPLIT_LOOP;
    c->parts = parts;
    return true;
}

/* Whether index ix is the same for every value of loop variable v: plain variables, none
 * of them v (anything else might depend on it). */
static bool ix_free_of(const kd_kernel *kd, uint32_t ix, uint32_t v) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[x->first + i].atom];
        if (a->kind != KD_ATOM_VAR || a->arg == v) return false;
    }
    return true;
}

/* The bytes of one element of the buffer statement st reads or writes: its storage
 * dtype's, not the statement's (a 16-bit buffer's values are computed in f32). */
static size_t access_bytes(const kd_kernel *kd, const kd_stmt *st) {
    kiln_dtype t =
        st->kind == KS_STORE || st->keep ? kd->out_type[st->slot] : kd->in_type[st->slot];
    return t == KILN_DTYPE_F32 || t == KILN_DTYPE_I32 ? 4 : ir_dtype_is_half(t) ? 2 : 0;
}

/* Marks the vector accesses of an elementwise kernel at w elements a thread; the count
 * of them, or -1 when the element loop is not straight-line code. *widest: the largest
 * element of any 4- or 2-byte access, vector or not. */
static int vec_marks(kd_kernel *kd, int64_t w, size_t *widest) {
    uint32_t first = 0;
    int n_vec = 0;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        kd_stmt *st = &kd->stmts[s];
        switch (st->kind) {
        case KS_LOOP:
            if (first || st->n >= 0) return -1;
            first = s;
            break;
        case KS_END:
            if (s + 1 != kd->n_stmts) return -1; /* the element loop's, and the last */
            break;
        case KS_LOAD:
        case KS_STORE: {
            size_t b = access_bytes(kd, st);
            *widest = b > *widest ? b : *widest;
            if (!b || (size_t)w * b > 16 || !vec_index(kd, st->ix, w, kd->last_var)) break;
            st->sched |= st->kind == KS_LOAD ? KD_SCHED_VLOAD : KD_SCHED_VSTORE;
            n_vec++;
            break;
        }
        case KS_LIT:
        case KS_IOTA:
        case KS_OP:
        case KS_CLAMP: break;
        default: return -1;
        }
    }
    return first == 1 ? n_vec : -1;
}

static void vec_clear(kd_kernel *kd) { /* its own marks only: a split's stay */
    for (uint32_t s = 0; s < kd->n_stmts; s++)
        kd->stmts[s].sched &= (uint8_t) ~(KD_SCHED_VLOAD | KD_SCHED_VSTORE | KD_SCHED_VLOOP);
}

/* An elementwise kernel whose element loop is straight-line code is printed several
 * elements per thread, its contiguous loads and stores as vector accesses (vec_index):
 * four when it has 4-byte ones (16 bytes of f32 or i32, 8 of bf16 or f16), eight when
 * all of them are 16-bit (16 bytes each), its chunk then eight times the threads. The
 * last axis must be a multiple of the width. */
static void vec_plan(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    if (c->form != KD_CUDA_THREADS) return;
    size_t widest = 0;
    if (kd->inner % 8 == 0 && vec_marks(kd, 8, &widest) > 0 && widest == 2) {
        c->vec = 8;
        c->chunk = 8 * CGEN_CUDA_THREADS;
        c->chunks = kd->inner > c->chunk ? (kd->inner + c->chunk - 1) / c->chunk : 1;
        return;
    }
    vec_clear(kd);
    widest = 0;
    if (kd->inner % 4 || c->chunk % 4 || vec_marks(kd, 4, &widest) <= 0) {
        vec_clear(kd);
        return;
    }
    c->vec = 4;
}

/* ------------------------------------------------ CUDA: rows on chip ---- */

/* A KD_CUDA_ROW kernel reads its row once per pass: each prologue reduction over the row
 * (a softmax's max, then its sum of exp(x - max)) and the element loop load it again, and
 * a kept value (kd_stmt.keep) goes to the output row and back. Held on chip instead, in a
 * row cache (a __shared__ array of the row's elements), an element is read from device
 * memory by the first pass that loads it and written once, by the element loop: 1 read and
 * 1 write per element of a softmax or a layer norm where there were 3 and 2. Element j of
 * a cache is only ever written and read by one lane of the row's t threads, j % t (every
 * pass strides the row over them alike, from 0; passes w elements a lane, row_vec_plan:
 * (j / w) % t), so it needs no barrier, also from one item to the next. A block of
 * several rows (row_groups) has a cache row per group, the budget covering them all.
 * Shared memory, not registers: it takes any row length up to the budget with one form,
 * and its bandwidth is far above device memory's. */

/* The variable over the row of index ix in a pass over the row by variable v: whether ix
 * is c + coef * v + terms in the row's variables alone (the leading axes', the row's). */
static bool row_index(const kd_kernel *kd, uint32_t ix, uint32_t v) {
    const kd_index *x = &kd->ixs[ix];
    bool has_v = false;
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[x->first + i].atom];
        if (a->kind != KD_ATOM_VAR || a->narrowed) return false;
        if (a->arg == v) {
            has_v = true;
            continue;
        }
        const kd_var *var = &kd->vars[a->arg];
        if (var->kind == KD_VAR_REDUCE || a->arg == kd->last_var) return false;
    }
    return has_v;
}

/* Whether index a over the row by va and b by vb name the same element for va == vb. */
static bool same_row_index(const kd_kernel *kd, uint32_t a, uint32_t va, uint32_t b, uint32_t vb) {
    const kd_index *x = &kd->ixs[a], *y = &kd->ixs[b];
    if (x->c != y->c || x->n != y->n) return false;
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *s = &kd->terms[x->first + i], *t = &kd->terms[y->first + i];
        uint32_t sa = kd->atoms[s->atom].arg, ta = kd->atoms[t->atom].arg;
        bool sv = sa == va, tv = ta == vb;
        if (s->coef != t->coef || sv != tv || (!sv && s->atom != t->atom)) return false;
    }
    return true;
}

/* One access to a row (a LOAD, a kept LOAD or STORE) in a pass: its statement, the pass'
 * variable, whether it can fill a cache (directly in a prologue pass) and its key (the
 * first access to the same element). */
typedef struct row_access {
    uint32_t stmt, var, pass, key;
    bool fill;
} row_access;

/* The passes over the row, which the row caches (row_accesses) and the vector passes
 * (row_vec_marks) see alike: each loop of the prologue directly in it whose n is the
 * row's, lane-strided (the innermost loop of a reduction, acc), and the element loop el.
 * The first at or after statement s (*depth: the nesting there, 0 at the start), or 0;
 * the next is the first after its END. */
static uint32_t row_pass(const kd_kernel *kd, uint32_t el, uint32_t s, int *depth) {
    for (; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (s == el || (!*depth && st->kind == KS_LOOP && st->acc && st->n == kd->inner)) return s;
        *depth += st->kind == KS_LOOP || st->kind == KS_IF;
        *depth -= st->kind == KS_END;
    }
    return 0;
}

/* The accesses of the passes over the row (row_pass) but those with a loop inside
 * (prologue passes; not one lane-strided pass), appended to acc (at most kd->n_stmts);
 * their count. */
static uint32_t row_accesses(const kd_kernel *kd, uint32_t el, row_access *acc) {
    uint32_t n = 0, pass = 0, end = 0;
    int depth = 0;
    for (uint32_t s = row_pass(kd, el, 1, &depth); s; s = row_pass(kd, el, end + 1, &depth)) {
        const kd_stmt *st = &kd->stmts[s];
        bool elem = s == el;
        end = kd_loop_end(kd, s);
        uint32_t v = elem ? kd->last_var : st->var, first = n;
        int inner = 0;
        for (uint32_t t = s + 1; t < end; t++) {
            const kd_stmt *u = &kd->stmts[t];
            if (u->kind == KS_LOOP && !elem) { /* not one lane-strided pass */
                n = first;
                break;
            }
            inner += u->kind == KS_LOOP || u->kind == KS_IF;
            inner -= u->kind == KS_END;
            bool load = u->kind == KS_LOAD, kept = u->kind == KS_STORE && u->keep && !elem;
            if ((load || kept) && row_index(kd, u->ix, v))
                acc[n++] = (row_access){t, v, pass, 0, !elem && !inner};
        }
        pass++;
    }
    return n;
}

static bool same_row_element(const kd_kernel *kd, const row_access *a, const row_access *b) {
    const kd_stmt *s = &kd->stmts[a->stmt], *t = &kd->stmts[b->stmt];
    return s->slot == t->slot && s->keep == t->keep &&
           same_row_index(kd, s->ix, a->var, t->ix, b->var);
}

/* The accesses of key k served by row cache `cache`: the first fills it. */
static void row_cache_mark(kd_kernel *kd, const row_access *acc, uint32_t n, uint32_t k,
                           uint32_t cache) {
    for (uint32_t i = k; i < n; i++) {
        if (acc[i].key != k) continue;
        kd_stmt *st = &kd->stmts[acc[i].stmt];
        st->sched |= i == k ? KD_SCHED_ROW_FILL : KD_SCHED_ROW_HIT;
        st->row_cache = cache;
        st->row_var = acc[i].var;
    }
}

/* The value's dtype of a cached access (a 16-bit buffer's: f32). */
static kiln_dtype row_elem_type(const kd_kernel *kd, const kd_stmt *st) {
    return st->kind == KS_STORE ? kd->stmts[st->args[0]].dtype : st->dtype;
}

/* The last statement accessing key k (its first is acc[k].stmt). */
static uint32_t row_key_last(const row_access *acc, uint32_t n, uint32_t k) {
    uint32_t last = acc[k].stmt;
    for (uint32_t i = k + 1; i < n; i++)
        if (acc[i].key == k) last = acc[i].stmt;
    return last;
}

/* A cache for key k: one of dtype t whose keys' statements all lie outside k's (element j
 * of a cache is one lane's alone, which reads the last of one key before it writes the
 * first of the next: a softmax's x, read by its max and its sum, then holds the kept exp(x -
 * max)), or a new one while the caches fit KD_ROW_CACHE_BYTES; UINT32_MAX: none. */
static uint32_t row_cache_for(kd_kernel *kd, const row_access *acc, uint32_t n, uint32_t k,
                              int64_t *budget) {
    kiln_dtype t = row_elem_type(kd, &kd->stmts[acc[k].stmt]);
    uint32_t lo = acc[k].stmt, hi = row_key_last(acc, n, k);
    for (uint32_t c = 0; c < kd->sched.n_row_cache; c++) {
        bool free = true;
        for (uint32_t j = 0; j < n && free; j++) {
            const kd_stmt *st = &kd->stmts[acc[j].stmt];
            if (acc[j].key != j || !(st->sched & KD_SCHED_ROW_FILL) || st->row_cache != c) continue;
            free = row_elem_type(kd, st) == t && (row_key_last(acc, n, j) < lo || acc[j].stmt > hi);
        }
        if (free) return c;
    }
    int64_t rows = kd->sched.row_group > 1 ? kd->sched.row_group : 1;
    int64_t bytes = rows * kd->inner * (t == KILN_DTYPE_F64 || t == KILN_DTYPE_I64 ? 8 : 4);
    if (bytes > *budget) return UINT32_MAX;
    *budget -= bytes;
    return kd->sched.n_row_cache++;
}

/* Marks the accesses served by a row cache: an element loaded in two passes or more, or
 * kept (its first access a fill), kept ones first (each saves a write and a read). */
static void row_cache_plan(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    uint32_t el = element_loop(kd);
    if (c->form != KD_CUDA_ROW || !el || kd->split || kd->merged || kd->columns || c->parts ||
        kd->inner < 2)
        return;
    row_access *acc = host_calloc(kd->ctx, kd->n_stmts, sizeof *acc);
    if (!acc) return; /* no cache: the kernel as it was */
    uint32_t n = row_accesses(kd, el, acc);
    for (uint32_t i = 0; i < n; i++) {
        acc[i].key = i;
        for (uint32_t k = 0; k < i && acc[i].key == i; k++)
            if (acc[k].key == k && same_row_element(kd, &acc[k], &acc[i])) acc[i].key = k;
    }
    int64_t budget = KD_ROW_CACHE_BYTES;
    for (int round = 0; round < 2; round++)
        for (uint32_t k = 0; k < n; k++) {
            if (acc[k].key != k || !acc[k].fill) continue;
            bool kept = kd->stmts[acc[k].stmt].keep, again = false;
            if (kept != (round == 0)) continue;
            for (uint32_t i = k + 1; i < n; i++)
                again |= acc[i].key == k && acc[i].pass != acc[k].pass;
            uint32_t cache = kept || again ? row_cache_for(kd, acc, n, k, &budget) : UINT32_MAX;
            if (cache != UINT32_MAX) row_cache_mark(kd, acc, n, k, cache);
        }
    host_free(kd->ctx, acc, kd->n_stmts * sizeof *acc);
}

/* ------------------------------------------- CUDA: rows, 16 bytes a lane ---- */

/* A KD_CUDA_ROW kernel's lanes took one element of the row a trip: one load of 2 or 4
 * bytes in flight per unrolled trip, too few bytes for the device memory's latency (an
 * H200 ran a bf16 softmax or layer norm over 8192 x 8192 at a quarter of the device copy's
 * bandwidth, f32 at two thirds: bench/RESULTS.md, "GPU"). Every pass over the row
 * (row_accesses' passes: the prologue's lane-strided loops over the row, and the element
 * loop) takes w consecutive elements a lane a trip instead (kd_sched.vec, the passes marked
 * KD_SCHED_VLOOP), its loads and stores of the row one access of 16 bytes (8 elements of
 * bf16 or f16, 4 of f32 or i32) or, 16-bit beside 4-byte ones, of 8. The passes all alike,
 * so that element j of a row cache stays one lane's: the row's lane (j / w) mod t; the
 * printer keeps it at (j mod w) (n / w) + j / w of the cache's row, where a warp's lanes
 * read consecutive words. Only when every access of a buffer that moves along the row is
 * such a vector access (a strided or an 8-byte one would leave a warp's loads spread
 * over w times the bytes), and the element loop and the passes have no loop inside. */

/* Marks the passes over the row and their vector accesses at w elements a lane; false
 * when a pass has a loop inside or an access along the row that cannot be one. *n_vec:
 * the vector accesses. */
static bool row_vec_marks(kd_kernel *kd, uint32_t el, int64_t w, int *n_vec) {
    int depth = 0;
    uint32_t end = 0;
    for (uint32_t s = row_pass(kd, el, 1, &depth); s; s = row_pass(kd, el, end + 1, &depth)) {
        kd_stmt *st = &kd->stmts[s];
        end = kd_loop_end(kd, s);
        uint32_t v = s == el ? kd->last_var : st->var;
        int guarded = 0; /* inside an if of the pass */
        for (uint32_t t = s + 1; t < end; t++) {
            kd_stmt *u = &kd->stmts[t];
            if (u->kind == KS_LOOP) return false;
            guarded += u->kind == KS_IF;
            guarded -= u->kind == KS_END;
            if (u->kind != KS_LOAD && u->kind != KS_STORE) continue;
            /* the cache's alone: a load it serves, a kept store into it */
            if (u->sched & KD_SCHED_ROW_HIT ||
                (u->kind == KS_STORE && u->sched & KD_SCHED_ROW_FILL))
                continue;
            if (ix_free_of(kd, u->ix, v)) continue; /* one element for the whole row */
            size_t b = access_bytes(kd, u);
            if (guarded || !b || (size_t)w * b > 16 || !vec_index(kd, u->ix, w, v)) return false;
            u->sched |= u->kind == KS_LOAD ? KD_SCHED_VLOAD : KD_SCHED_VSTORE;
            (*n_vec)++;
        }
        st->sched |= KD_SCHED_VLOOP;
    }
    return true;
}

static void row_vec_plan(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    uint32_t el = element_loop(kd);
    if (c->form != KD_CUDA_ROW || !el || c->chunks != 1 || c->parts || kd->split || kd->merged ||
        kd->columns)
        return;
    for (int64_t w = 8; w >= 4; w /= 2) {
        int n_vec = 0;
        if (kd->inner % w == 0 && row_vec_marks(kd, el, w, &n_vec) && n_vec > 0) {
            c->vec = (int)w;
            return;
        }
        vec_clear(kd);
    }
}

void kd_cuda_row_traffic(const kd_kernel *kd, int *reads, int *writes) {
    *reads = *writes = 0;
    uint32_t el = element_loop(kd);
    row_access *acc = el ? host_calloc(kd->ctx, kd->n_stmts, sizeof *acc) : NULL;
    uint32_t n = acc ? row_accesses(kd, el, acc) : 0;
    for (uint32_t i = 0; i < n; i++) {
        const kd_stmt *st = &kd->stmts[acc[i].stmt];
        if (st->sched & (KD_SCHED_ROW_FILL | KD_SCHED_ROW_HIT) && st->kind == KS_STORE) continue;
        if (st->kind == KS_LOAD && !(st->sched & KD_SCHED_ROW_HIT)) (*reads)++;
        if (st->kind == KS_STORE) (*writes)++;
    }
    for (uint32_t s = el + 1; el && s < kd_loop_end(kd, el); s++) /* the results */
        *writes += kd->stmts[s].kind == KS_STORE && !kd->stmts[s].keep;
    if (acc) host_free(kd->ctx, acc, kd->n_stmts * sizeof *acc);
}

/* Short rows, several a block (kd_sched.row_group). An elementwise kernel whose rows are
 * short (a last axis of 64: 16 threads of f32 four at a time) gave each row a block of
 * CGEN_CUDA_THREADS threads, most of them idle. Its block takes several rows instead,
 * each the fewest threads (a power of two) that cover it at the kernel's elements per
 * thread: a block then moves as many bytes as a long row's. Only with no reduction at all
 * (nothing is shared across the block's threads).
 *
 * A row kernel (KD_CUDA_ROW) over rows of at most KD_ROW_SHORT gave each row the block
 * too: on a GPT's attention rows of 256, one element a thread, then per row its
 * reductions' shuffles, a combine through shared memory and two __syncthreads each, so
 * that latency, not bandwidth, set its speed (an H200 ran a softmax's gradient over
 * [16, 8, 256, 256] bf16 at a sixth of the device copy's bandwidth). Its row takes
 * instead the fewest whole warps that leave a lane at most KD_ROW_LANE_ELEMS elements,
 * and the block as many rows (kdesc.h): a row's combines are shuffles within its warps
 * (and, for several warps, a slot per warp behind a barrier of the row's threads alone),
 * with no barrier of the block. Whole warps, because the shuffles name every lane of the
 * warp, and a group past the last row leaves the loop as a whole. */
static void row_groups(kd_kernel *kd) {
    kd_sched *c = &kd->sched;
    if (c->chunks != 1 || c->parts || kd->rows < 2) return;
    if (c->form == KD_CUDA_ROW) {
        if (kd->inner > KD_ROW_SHORT) return;
        /* a row value reducing more than a short row (over another operand's longer axes)
         * keeps the block's lanes for it */
        for (uint32_t s = 1;
             s < kd->n_stmts && !(kd->stmts[s].kind == KS_LOOP && kd->stmts[s].n < 0); s++)
            if (kd->stmts[s].kind == KS_LOOP && kd_loop_work(kd, s) > KD_ROW_SHORT) return;
        int64_t t = 32;
        while (t * KD_ROW_LANE_ELEMS < kd->inner) t *= 2;
        c->row_group = CGEN_CUDA_THREADS / t;
        return;
    }
    if (c->form != KD_CUDA_THREADS) return;
    for (uint32_t s = 1; s < kd->n_stmts; s++)
        if (kd->stmts[s].kind == KS_ACC) return;
    int64_t w = c->vec ? c->vec : 1, need = (kd->inner + w - 1) / w, t = 1;
    while (t < need) t *= 2;
    if (2 * t > CGEN_CUDA_THREADS) return;
    c->row_group = CGEN_CUDA_THREADS / t;
}

static void schedule_cuda(kd_kernel *kd) {
    cuda_form(kd);
    if (cuda_element_split(kd) || cuda_column_split(kd))
        kd->sched.base_items = kd->rows * kd->sched.chunks;
    vec_plan(kd);
    row_groups(kd); /* before the row caches: their bytes are per row of the block */
    row_cache_plan(kd);
    row_vec_plan(kd); /* after the caches: the loads they serve are no device accesses */
}

void kd_schedule(kd_kernel *kd, cgen_dialect dialect) {
    kd->sched = (kd_sched){.chunk = kd->chunk, .chunks = kd->chunks};
    for (uint32_t s = 0; s < kd->n_stmts; s++) {
        kd->stmts[s].sched = 0;
        kd->stmts[s].split_k = kd->stmts[s].row_cache = kd->stmts[s].row_var = 0;
    }
    if (dialect == CGEN_DIALECT_CUDA)
        schedule_cuda(kd);
    else
        schedule_c(kd);
}
