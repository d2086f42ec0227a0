/* print_c.c — the C renderer (printer.h): what the CPU's dialect spells its own way.
 *
 * A kernel is `void kiln_k<i>(void *const *b, int64_t begin, int64_t end)` over work items
 * [begin, end) (cgen.h), its buffers taken from b, `restrict` but for an input the planner
 * overwrites in place and the output written over it. Speed comes from what gcc and clang
 * vectorise: a loop the description marks `simd` gets `#pragma omp simd` (with reduction
 * clauses for its accumulator), which vectorises reductions without -fassociative-math;
 * an f32 sum adds in f32 blocks of 16 lanes (kd_reduce.blocked), straight into them or
 * staged for kiln_sum_f32; a reduction
 * with slices (kd_stmt.slices) or split in parts (kd_kernel.parts) adds slice by slice in
 * a fixed order; the forms the schedule chose (kd_kernel.sched: an interleave unrolled, a
 * concatenation in segments, fast sin and cos with an exact rerun) and the description's
 * row blocks and prologue rows are printed here. A kernel gcc 12 is known to miscompile
 * gets a guard attribute (c_qualifiers). Products are rounded where computed
 * (KILN_ROUNDED). */
#include "prelude.h"
#include "printer.h"

#include <stdio.h>
#include <string.h>

/* An open f32 block (kd_reduce.blocked): the depth of its body and its accumulator (0:
 * every blocked column accumulator). A scalar accumulator's block adds into its lanes
 * acc<a>_l[at] (print_lane_block), or is staged (print_block_open): its values go to
 * acc<a>_t[at] and kiln_sum_f32 adds `count` of them. */
typedef struct pr_block {
    int depth;
    uint32_t acc;
    bool once;  /* the loop adds into acc exactly once per iteration (kd_accum_once) */
    bool lanes; /* added straight into acc<a>_l[at], its 16 lanes (print_lane_block) */
    char at[2 * PR_NAME_LEN], count[2 * PR_NAME_LEN];
} pr_block;

typedef struct cpr {
    pr p; /* first: a cpr is the pr the shared printer is given */
    /* the f32 blocks open, innermost last */
    pr_block blk[KD_OPEN_BLOCKS];
    int n_blk;
    /* the slices open (kd_stmt.slices), innermost last: the depth of the slice loop's body
     * and the loop's statement */
    struct {
        int depth;
        uint32_t loop;
    } slice[KD_OPEN_BLOCKS];
    int n_slice;
    bool fast_trig;  /* f32 sin and cos without Payne-Hanek (kd_sched.fast_trig_loop) */
    bool trig_rerun; /* printing that loop's exact rerun, kept scalar */
    /* printing the staged block of kd_sched.stage_loop: its KD_SCHED_STAGED stores go to
     * their blocks (print_staged_loop) */
    bool staging;
    /* the KS_END of a loop print_lane_block or print_versioned_loop printed whole: the
     * statements up to it are skipped (0: none) */
    uint32_t skip_end;
    /* printing the version of a loop for rows inside every edge (print_versioned_loop):
     * its hoisted ifs hold */
    bool rows_inside;
} cpr;

static void c_stmt(pr *p, uint32_t id);
static void print_loop_head(cpr *c, const kd_stmt *s, const char *v, bool free_ifs);
static bool versioned(const kd_kernel *kd, uint32_t loop);
static void print_versioned_loop(cpr *c, const kd_stmt *s, const char *v);
static bool hoisted(const kd_kernel *kd, uint32_t id);
static bool print_hoisted(pr *p, uint32_t s);
static bool unguarded(const kd_kernel *kd, const kd_stmt *loop);
static void print_free_if_pragmas(pr *p);
static void print_ivdep(pr *p, uint32_t loop);
static bool branches(const kd_kernel *kd);
/* gcc's max-completely-peel-times: it unrolls a loop of at most this many iterations
 * (hoisted_if's note below). */
enum { GCC_PEEL_MAX = 16 };
/* gcc 12's --param vect-max-version-for-alias-checks: past this many run-time alias
 * checks a loop is not vectorised (print_ivdep). */
enum { GCC_ALIAS_CHECKS = 10 };

/* Whether accumulator a sums into its f32 block here. */
static bool in_block(const cpr *c, uint32_t a) {
    const kd_stmt *s = &c->p.kd->stmts[a];
    for (int i = 0; i < c->n_blk; i++)
        if (c->blk[i].acc == a || (!c->blk[i].acc && s->column && s->red.blocked)) return true;
    return false;
}

/* The open block that holds accumulator a's f32 sum, or NULL. */
static const pr_block *block_of(const cpr *c, uint32_t a) {
    for (int i = 0; i < c->n_blk; i++)
        if (c->blk[i].acc == a) return &c->blk[i];
    return NULL;
}

/* The accumulator of ACC statement a (an element of the row of them in a column form). */
static void c_acc_name(const pr *p, uint32_t a, bool nan, char *out) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *s = &kd->stmts[a];
    char v[PR_NAME_LEN];
    pr_var_name(kd, s->var, v);
    const char *suffix = nan ? "_nan" : in_block((const cpr *)p, a) ? "_b" : "";
    if (s->column)
        snprintf(out, PR_ACC_LEN, "acc%u%s[%s - jb]", a, suffix, v);
    else
        snprintf(out, PR_ACC_LEN, "acc%u%s", a, suffix);
}

/* The type of a float max's or min's NaN flag (kd_reduce.nan_flag), an integer as wide
 * as the value, so the vectorised compare's lanes go into it as they are: a uint8_t flag
 * had gcc pack each vector of compares into bytes, or reduce a row of 16 floats' flags
 * one pextrb at a time (a max over rows of 16 ran markedly faster with the wide flag:
 * bench/RESULTS.md, "Rows of 8 and 16: a NaN flag as wide as the value, and simd elements
 * after a kept value"). */
static const char *nan_ctype(const kd_stmt *s) {
    return s->dtype == KILN_DTYPE_F64 ? "uint64_t" : "uint32_t";
}

static void c_acc(pr *p, uint32_t id) {
    const kd_stmt *s = &p->kd->stmts[id];
    const char *at = pr_acc_ctype(s);
    const char *init = pr_acc_init(s);
    if (s->column) {
        pr_line(p, "%s acc%u[%lld];", at, id, (long long)p->chunk);
        if (s->red.blocked) pr_line(p, "float acc%u_b[%lld];", id, (long long)p->chunk);
        if (s->red.nan_flag)
            pr_line(p, "%s acc%u_nan[%lld];", nan_ctype(s), id, (long long)p->chunk);
        pr_line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u[j] = %s;", id, init);
        if (s->red.nan_flag)
            pr_line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u_nan[j] = 0;", id);
        return;
    }
    pr_line(p, "%s acc%u = %s;", at, id, init);
    if (s->red.nan_flag) pr_line(p, "%s acc%u_nan = 0;", nan_ctype(s), id);
}

static void c_accum(cpr *c, const kd_stmt *s) {
    pr *p = &c->p;
    const kd_stmt *acc = &p->kd->stmts[s->args[0]];
    char a[PR_ACC_LEN], nan[PR_ACC_LEN], x[PR_NAME_LEN];
    const pr_block *b = block_of(c, s->args[0]);
    if (!b && !in_block(c, s->args[0])) {
        pr_accum(p, s);
        return;
    }
    c_acc_name(p, s->args[0], false, a);
    c_acc_name(p, s->args[0], true, nan);
    pr_val_name(p->kd, s->args[1], x);
    if (b && b->lanes)
        pr_line(p, "acc%u_l[%s] += %s;", s->args[0], b->at, x);
    else if (b)
        pr_line(p, "acc%u_t[%s] %s= %s;", s->args[0], b->at, b->once ? "" : "+", x);
    else
        pr_line(p, "%s += %s;", a, x);
    if (acc->red.nan_flag) pr_line(p, "%s |= %s != %s;", nan, x, x);
}

/* ------------------------------------------------------------ loops ---- */

/* Whether scalar accumulator acc's blocks over reduce loop s (statement `loop`) add
 * straight into their lanes (print_lane_block): a loop of more than one block (a row of
 * at most KD_SUM_BLOCK keeps its staged block: straight into the lanes, rows of 64 and 128
 * (a GPT's softmax and layer norms) ran several times slower, the kernel around them one
 * row an item), that adds into acc once per iteration and holds no loop of its own, and
 * is the description's own loop (not a copy a form of its own printed). */
static bool lane_form(const cpr *c, const kd_stmt *s, uint32_t loop, uint32_t acc) {
    const kd_kernel *kd = c->p.kd;
    if (!acc || s->n <= KD_SUM_BLOCK || c->skip_end || kd->prologue_rows > 1 || loop >= kd->n_stmts)
        return false;
    if (kd->stmts[loop].kind != KS_LOOP || kd->stmts[loop].acc != acc) return false;
    uint32_t end = kd_loop_end(kd, loop);
    for (uint32_t t = loop + 1; t < end; t++)
        if (kd->stmts[t].kind == KS_LOOP) return false;
    return kd_accum_once(kd, loop, acc);
}

/* Prints the body of reduce loop `loop` (its statements, not its END) into the open lane
 * block b, whose lane index is `at`. */
static void print_lane_body(cpr *c, uint32_t loop, pr_block *b, const char *at) {
    snprintf(b->at, sizeof b->at, "%s", at);
    b->depth = c->p.depth;
    for (uint32_t t = loop + 1, end = kd_loop_end(c->p.kd, loop); t < end; t++) c_stmt(&c->p, t);
}

/* C: reduce loop `loop` of a scalar f32 sum over [from, to), whole, each of its blocks
 * added straight into 16 lanes: in each block, lane j adds the values of iterations j,
 * j + 16, ... in order (groups of 16 iterations, then the fewer than 16 left), then the
 * lanes pairwise (kiln_fold16_f32): the additions kiln_sum_f32 makes of a staged block
 * (print_block_open), so the bits are the same, without the block's store and reload and
 * a call per block (a sum over all of a tensor ran at about half the rate of one reading
 * straight into the lanes: bench/RESULTS.md, "Blocked f32 sums straight into their
 * lanes"). The body is printed twice, for the groups (vectorised) and for the rest; the
 * statements up to the loop's END are then skipped (cpr.skip_end). */
static void print_lane_block(cpr *c, const kd_stmt *s, uint32_t loop, const char *v, uint32_t acc,
                             const char *from, const char *to) {
    pr *p = &c->p;
    enum { L = 16 };
    char at[2 * PR_NAME_LEN];
    pr_line(p, "for (int64_t %sb = %s; %sb < %s; %sb += %d) {", v, from, v, to, v, KD_SUM_BLOCK);
    p->depth++;
    pr_line(p, "const int64_t %se = %sb + %d < %s ? %sb + %d : %s;", v, v, KD_SUM_BLOCK, to, v,
            KD_SUM_BLOCK, to);
    pr_line(p, "float acc%u_l[%d] = {0};", acc, L);
    pr_block *b = &c->blk[c->n_blk++];
    *b = (pr_block){.acc = acc, .once = true, .lanes = true};
    pr_line(p, "int64_t %sc = %sb;", v, v);
    pr_line(p, "for (; %sc + %d <= %se; %sc += %d) {", v, L, v, v, L);
    p->depth++;
    /* a group's iterations add into lanes of their own: vectorised whatever the loop's
     * pragma would be (a one-hot sum's loop, reading a compare's bytes, has none, and gcc
     * left its groups scalar) */
    pr_line(p, "#pragma omp simd");
    pr_line(p, "for (int64_t %s = %sc; %s < %sc + %d; %s++) {", v, v, v, v, L, v);
    p->depth++;
    snprintf(at, sizeof at, "%s - %sc", v, v);
    print_lane_body(c, loop, b, at);
    p->depth--;
    pr_line(p, "}");
    p->depth--;
    pr_line(p, "}");
    /* the rest, at most 15 in a block's end: scalar, but for a loop whose pragma says its
     * body is worth vectorising (an exp's), which would run its scalar form here */
    if (s->simd) pr_line(p, "#pragma omp simd");
    pr_line(p, "for (int64_t %s = %sc; %s < %se; %s++) {", v, v, v, v, v);
    p->depth++;
    if (!s->simd) pr_line(p, "KILN_SCALAR_LOOP();");
    print_lane_body(c, loop, b, at);
    p->depth--;
    pr_line(p, "}");
    c->n_blk--;
    pr_line(p, "acc%u += (double)kiln_fold16_f32(acc%u_l);", acc, acc);
    p->depth--;
    pr_line(p, "}");
    c->skip_end = kd_loop_end(p->kd, loop);
}

/* C: a reduce loop of n iterations as blocks (kd_reduce.blocked): the block loop, the
 * block's accumulators cleared, and the loop over the block's iterations (not closed).
 *
 * A scalar accumulator's block is staged: the loop stores each iteration's value in a
 * block-sized array on the stack (cleared first, and added into, unless the loop adds
 * exactly once per iteration), and kiln_sum_f32 adds the array in 16 lanes and then the
 * lanes pairwise. `#pragma omp simd reduction` would add in lanes too, but gcc 12 ends it
 * with one scalar addition per lane in a chain, and a loop that also reads bytes (a mask)
 * vectorises 64 lanes wide: 64 dependent additions for every row, which cost more than a
 * 128-element softmax row's exps. The order of the additions is also fixed by the block
 * alone, not by the vector width the compiler picks for the kernel around it, so a
 * reduction recomputed in another kernel (rematerialisation) gives the same bits
 * (test_remat's transformer stack checks it). The error bound is the block's either way
 * (kdesc.h, kd_reduce.blocked). */
static void print_block_open(cpr *c, const kd_stmt *s, uint32_t loop, const char *v, uint32_t acc,
                             const char *from, const char *to) {
    if (lane_form(c, s, loop, acc)) {
        print_lane_block(c, s, loop, v, acc, from, to);
        return;
    }
    pr *p = &c->p;
    const kd_kernel *kd = p->kd;
    int64_t bs = acc ? KD_SUM_BLOCK : KD_COL_BLOCK;
    bool one = s->n <= bs; /* a single block: a plain scope */
    bool once = acc && kd_accum_once(kd, loop, acc);
    int64_t slots = one ? (s->n > 0 ? s->n : 1) : bs;
    if (one)
        pr_line(p, "{");
    else
        pr_line(p, "for (int64_t %sb = %s; %sb < %s; %sb += %lld) {", v, from, v, to, v,
                (long long)bs);
    p->depth++;
    if (!one)
        pr_line(p, "const int64_t %se = %sb + %lld < %s ? %sb + %lld : %s;", v, v, (long long)bs,
                to, v, (long long)bs, to);
    for (uint32_t a = 1; a < kd->n_stmts; a++) {
        const kd_stmt *x = &kd->stmts[a];
        if (x->kind != KS_ACC || !x->red.blocked || (acc ? a != acc : !x->column)) continue;
        if (acc)
            pr_line(p, "float acc%u_t[%lld]%s;", a, (long long)slots, once ? "" : " = {0}");
        else
            pr_line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u_b[j] = 0;", a);
    }
    if (acc && s->simd) pr_line(p, "#pragma omp simd");
    if (one)
        pr_line(p, "for (int64_t %s = %s; %s < %s; %s++) {", v, from, v, to, v);
    else
        pr_line(p, "for (int64_t %s = %sb; %s < %se; %s++) {", v, v, v, v, v);
    p->depth++;
    pr_block *b = &c->blk[c->n_blk++];
    *b = (pr_block){.depth = p->depth, .acc = acc, .once = once}; /* a slot used before */
    if (acc && one && !strcmp(from, "0"))
        snprintf(b->at, sizeof b->at, "%s", v), snprintf(b->count, sizeof b->count, "%s", to);
    else if (acc && one)
        snprintf(b->at, sizeof b->at, "%s - %s", v, from),
            snprintf(b->count, sizeof b->count, "%s - %s", to, from);
    else if (acc)
        snprintf(b->at, sizeof b->at, "%s - %sb", v, v),
            snprintf(b->count, sizeof b->count, "%se - %sb", v, v);
}

/* C: the end of a block's loop: its sums added into the f64 accumulators. */
static void print_block_close(cpr *c) {
    pr *p = &c->p;
    const kd_kernel *kd = p->kd;
    const pr_block *b = &c->blk[--c->n_blk];
    uint32_t acc = b->acc;
    p->depth--;
    pr_line(p, "}");
    for (uint32_t a = 1; a < kd->n_stmts; a++) {
        const kd_stmt *x = &kd->stmts[a];
        if (x->kind != KS_ACC || !x->red.blocked || (acc ? a != acc : !x->column)) continue;
        if (acc)
            pr_line(p, "acc%u += (double)kiln_sum_f32(acc%u_t, %s);", a, a, b->count);
        else
            pr_line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u[j] += (double)acc%u_b[j];", a,
                    a);
    }
    p->depth--;
    pr_line(p, "}");
}

/* C: `#pragma omp simd` with the reduction clauses of loop s, the innermost loop of a
 * reduction the description lets vectorise; false (nothing printed) for any other loop. */
static bool print_simd_pragma(pr *p, const kd_stmt *s) {
    if (!s->simd || !s->acc) return false;
    const kd_stmt *acc = &p->kd->stmts[s->acc];
    pr_indent(p);
    sb_printf(p->sb, "#pragma omp simd reduction(%s:acc%u)", pr_red_op(acc->red.op), s->acc);
    if (acc->red.nan_flag) sb_printf(p->sb, " reduction(|:acc%u_nan)", s->acc);
    sb_append(p->sb, "\n");
    return true;
}

/* C: loop s over [from, to), a slice of its iterations (a part's, kd_kernel.parts, or one
 * of a reduction's slices, kd_stmt.slices), always blocked when its reduction is: a slice
 * may be longer than a block. */
static void print_range_loop(cpr *c, const kd_stmt *s, const char *v, const char *from,
                             const char *to) {
    pr *p = &c->p;
    if (s->acc && p->kd->stmts[s->acc].red.blocked && c->n_blk < KD_OPEN_BLOCKS) {
        kd_stmt t = *s;
        t.n = INT64_MAX;
        print_block_open(c, &t, (uint32_t)(s - p->kd->stmts), v, s->acc, from, to);
        return;
    }
    print_simd_pragma(p, s);
    pr_line(p, "for (int64_t %s = %s; %s < %s; %s++) {", v, from, v, to, v);
    p->depth++;
}

/* C, kd_stmt.slices: the loop over the slices of outermost reduce loop s, each starting
 * its accumulator afresh (the value so far kept aside), then the loop over the slice's
 * iterations. print_slice_close adds the slice's result to the value kept. */
static void print_slice_open(cpr *c, const kd_stmt *s, const char *v) {
    pr *p = &c->p;
    const kd_kernel *kd = p->kd;
    uint32_t loop = (uint32_t)(s - kd->stmts), a = s->slice_acc;
    const kd_stmt *acc = &kd->stmts[a];
    long long n = (long long)s->n, k = (long long)acc->slices;
    char from[32], to[32];
    pr_line(p, "for (int64_t kiln_s%u = 0; kiln_s%u < %lld; kiln_s%u++) {", loop, loop, k, loop);
    p->depth++;
    pr_line(p, "const %s kiln_prev%u = acc%u;", pr_acc_ctype(acc), loop, a);
    pr_line(p, "acc%u = %s;", a, pr_acc_init(acc));
    pr_line(p,
            "const int64_t kiln_lo%u = kiln_s%u * %lld / %lld, kiln_hi%u = (kiln_s%u + 1) * %lld / "
            "%lld;",
            loop, loop, n, k, loop, loop, n, k);
    c->slice[c->n_slice].depth = p->depth;
    c->slice[c->n_slice++].loop = loop;
    snprintf(from, sizeof from, "kiln_lo%u", loop);
    snprintf(to, sizeof to, "kiln_hi%u", loop);
    print_range_loop(c, s, v, from, to);
}

static void print_slice_close(cpr *c) {
    pr *p = &c->p;
    uint32_t loop = c->slice[--c->n_slice].loop, a = p->kd->stmts[loop].slice_acc;
    char acc[PR_ACC_LEN], prev[32];
    snprintf(acc, sizeof acc, "acc%u", a);
    snprintf(prev, sizeof prev, "kiln_prev%u", loop);
    pr_combine_line(p, &p->kd->stmts[a], acc, prev);
    p->depth--;
    pr_line(p, "}");
}

static void c_loop(cpr *c, const kd_stmt *s) {
    pr *p = &c->p;
    char v[PR_NAME_LEN], from[32] = "0", to[32];
    pr_var_name(p->kd, s->var, v);
    snprintf(to, sizeof to, "%lld", (long long)s->n);
    if (p->part_mode == 1 && s == &p->kd->stmts[p->kd->sched.split_loop]) {
        /* this part's slice of the loop */
        pr_line(p, "const int64_t kiln_lo = it * %lld / %lld, kiln_hi = (it + 1) * %lld / %lld;",
                (long long)s->n, (long long)p->kd->parts, (long long)s->n, (long long)p->kd->parts);
        print_range_loop(c, s, v, "kiln_lo", "kiln_hi");
        return;
    }
    if (s->slice_acc && c->n_slice < KD_OPEN_BLOCKS) {
        print_slice_open(c, s, v);
        return;
    }
    if (s->n >= 0 && c->n_blk < KD_OPEN_BLOCKS) {
        bool col = false;
        for (uint32_t a = 1; s->col_block && a < p->kd->n_stmts; a++)
            col |= p->kd->stmts[a].kind == KS_ACC && p->kd->stmts[a].column &&
                   p->kd->stmts[a].red.blocked;
        if (col || (s->acc && p->kd->stmts[s->acc].red.blocked)) {
            print_block_open(c, s, (uint32_t)(s - p->kd->stmts), v, col ? 0 : s->acc, from, to);
            return;
        }
    }
    bool free_ifs = false; /* else s is a copy: print_prologue_rows */
    if (s->n < 0 && p->kd->prologue_rows <= 1)
        free_ifs = print_hoisted(p, (uint32_t)(s - p->kd->stmts)) && unguarded(p->kd, s);
    int64_t k = p->kd->split;
    if (s->n < 0 && k && !s->simd) {
        /* the real axes as two loops: no division per element, and the inner loop's
         * constant trip count lets the compiler unroll it and decide its branches. gcc
         * did that only for a small body: an im2col's concatenate of nine pieces of 16
         * channels kept its chain per element, scalar (bench/RESULTS.md, "The CNN step:
         * max and min without branches"), so a branching kernel's inner loop of at most
         * GCC_PEEL_MAX is unrolled by pragma; its loop if-conversion is off
         * (KILN_BRANCH_GUARD), so the item loop is never if-converted around the copies
         * (the miscompile of hoisted_if's note) */
        pr_line(p, "for (int64_t %sq = jb / %lld; %sq < je / %lld; %sq++)", v, (long long)k, v,
                (long long)k, v);
        if (k <= GCC_PEEL_MAX && branches(p->kd))
            pr_line(p, "#pragma GCC unroll %lld", (long long)k);
        else
            print_ivdep(p, (uint32_t)(s - p->kd->stmts));
        pr_line(p, "for (int64_t %sr = 0; %sr < %lld; %sr++) {", v, v, (long long)k, v);
        p->depth++;
        pr_line(p, "const int64_t %s = %sq * %lld + %sr;", v, v, (long long)k, v);
        return;
    }
    if (free_ifs && versioned(p->kd, (uint32_t)(s - p->kd->stmts))) {
        print_versioned_loop(c, s, v);
        return;
    }
    print_loop_head(c, s, v, free_ifs);
}

/* C: loop s's pragmas and its `for (...) {`, opened (free_ifs: its hoisted ifs are
 * unguarded). */
static void print_loop_head(cpr *c, const kd_stmt *s, const char *v, bool free_ifs) {
    pr *p = &c->p;
    if (s->simd_narrow && !s->simd) { /* the target decides (KILN_ACROSS_ROWS) */
        kd_stmt narrow = *s;
        narrow.simd = true;
        pr_line(p, "#if !KILN_ACROSS_ROWS");
        if (!print_simd_pragma(p, &narrow)) pr_line(p, "#pragma omp simd");
        pr_line(p, "#endif");
    } else if (!print_simd_pragma(p, s) && s->simd)
        pr_line(p, "#pragma omp simd");
    else if (free_ifs && !s->simd)
        print_free_if_pragmas(p);
    else if (s->n < 0 && !s->simd)
        print_ivdep(p, (uint32_t)(s - p->kd->stmts));
    if (s->n < 0)
        pr_line(p, "for (int64_t %s = jb; %s < je; %s++) {", v, v, v);
    else
        pr_line(p, "for (int64_t %s = 0; %s < %lld; %s++) {", v, v, (long long)s->n, v);
    p->depth++;
    if (s->n < 0) pr_split_names(p);
}

/* Whether chunk loop `loop`, whose ifs hoisted names, is printed in two versions
 * (print_versioned_loop): each if in it is a lone `if` on the row (a pad's edge: no else,
 * not decided in the loop), and it holds no loop of its own. */
static bool versioned(const kd_kernel *kd, uint32_t loop) {
    bool any = false;
    for (uint32_t t = loop + 1, end = kd_loop_end(kd, loop); t < end; t++) {
        kd_stmt_kind k = kd->stmts[t].kind;
        if (k == KS_LOOP || k == KS_ELSE_IF || k == KS_ELSE) return false;
        if (k == KS_IF && !hoisted(kd, t)) return false;
        any |= k == KS_IF;
    }
    return any;
}

/* C: chunk loop s whose every if is decided by the row (versioned), twice: where all of
 * them hold (a row inside every pad's edges: most rows) a loop without a branch, which
 * gcc vectorises; else the loop testing each. gcc 12 did neither for the loop with the
 * branches: a depthwise convolution written as seven shifted, padded slices ran its
 * element loop scalar at several times XLA's time (an outside check; bench/RESULTS.md,
 * "Blocked f32 sums straight into their lanes, and rows inside a pad's edges without a
 * branch"). The same statements either way, so the
 * same bits. The statements up to the loop's END are then skipped (cpr.skip_end). */
static void print_versioned_loop(cpr *c, const kd_stmt *s, const char *v) {
    pr *p = &c->p;
    const kd_kernel *kd = p->kd;
    uint32_t loop = (uint32_t)(s - kd->stmts), end = kd_loop_end(kd, loop);
    pr_indent(p);
    sb_append(p->sb, "if (");
    bool first = true;
    for (uint32_t t = loop + 1; t < end; t++)
        if (kd->stmts[t].kind == KS_IF) {
            sb_printf(p->sb, "%skiln_g%u", first ? "" : " && ", t);
            first = false;
        }
    sb_append(p->sb, ") {\n");
    for (int version = 0; version < 2; version++) {
        p->depth++;
        print_loop_head(c, s, v, true);
        c->rows_inside = version == 0;
        for (uint32_t t = loop + 1; t < end; t++) c_stmt(p, t);
        c->rows_inside = false;
        p->depth--;
        pr_line(p, "}");
        p->depth--;
        pr_line(p, version == 0 ? "} else {" : "}");
    }
    c->skip_end = end;
}

/* C: the kernel's copy of kiln_fence, when a statement rounds through it. */
static void print_fence(pr *p) {
    const kd_kernel *kd = p->kd;
    for (uint32_t s = 1; s < kd->n_stmts; s++)
        if ((kd->stmts[s].kind == KS_OP &&
             pr_product_valued(kd->stmts[s].op, kd->stmts[s].dtype)) ||
            (kd->stmts[s].kind == KS_ACC &&
             pr_product_valued(kd->stmts[s].red.op, kd->stmts[s].dtype))) {
            pr_line(p, "const uint32_t kiln_z = kiln_fence;");
            return;
        }
}

/* Whether the C dialect takes kd->row_block rows per item (kdesc.h, KD_ROW_BLOCK). */
static bool row_blocks(const pr *p) {
    return p->kd->row_block > 1 && !p->part_mode;
}

/* Whether the C dialect takes kd->prologue_rows rows per item (kdesc.h, KD_PROLOGUE_ROWS). */
static bool prologue_blocks(const pr *p) {
    return p->kd->prologue_rows > 1 && !p->part_mode;
}

/* The leading axes' indices from the row. */
/* row, the chunk [jb, je) of the last axis and the leading axes' indices of item `it`
 * (with row blocks, the block's first row, row0: print_row_block). */
static void c_item(pr *p) {
    const kd_kernel *kd = p->kd;
    if (p->part_mode == 1) { /* items: parts of the one item */
        pr_line(p, "const int64_t row = 0, jb = 0, je = %lld;", (long long)kd->inner);
        pr_row_axes(p);
    } else if (prologue_blocks(p)) { /* rows row0.. row0 + rn - 1: print_prologue_rows */
        long long k = (long long)kd->prologue_rows;
        pr_line(p, "const int64_t row0 = it * %lld, rn = row0 + %lld < %lld ? %lld : %lld - row0;",
                k, k, (long long)kd->rows, k, (long long)kd->rows);
        pr_line(p, "const int64_t jb = 0, je = %lld;", (long long)kd->inner);
    } else if (row_blocks(p)) { /* rows row0.. of the block: print_row_block */
        long long blocks = (long long)(kd->rows / kd->row_block);
        pr_line(p, "const int64_t row0 = (it %% %lld) * %lld, jb = (it / %lld) * %lld;", blocks,
                (long long)kd->row_block, blocks, (long long)p->chunk);
        pr_line(p, "const int64_t je = jb + %lld < %lld ? jb + %lld : %lld;", (long long)p->chunk,
                (long long)kd->inner, (long long)p->chunk, (long long)kd->inner);
    } else
        pr_item(p, "it", kd->tiled);
}

/* Whether a row-blocked kernel (kd->row_block of 8) is a plain transpose that
 * kiln_transpose8x8_<4 or 8> can move 8 x 8 at a time (a 2-D transpose, the minor axes of
 * a batched one, NCHW to NHWC): its body one load of 4- or 8-byte elements and the store
 * of it; the load's index a sum of the axes' variables (and a constant), the last axis'
 * at least 8 elements apart (*stride), the second-to-last's contiguous and in eights, so
 * a block's 8 rows read 8 consecutive elements; the store a row of the output; the chunk
 * and the last axis multiples of 8. *load and *store: its two statements. */
static bool block_transpose(const pr *p, const kd_stmt **load, const kd_stmt **store,
                            int64_t *stride) {
    const kd_kernel *kd = p->kd;
    if (kd->row_block != 8 || kd->rank < 2 || kd->dims[kd->rank - 2] % 8 || p->chunk % 8 ||
        kd->inner % 8 || kd_loop_end(kd, 1) != 4)
        return false;
    *load = &kd->stmts[2], *store = &kd->stmts[3];
    size_t bytes = kiln_dtype_itemsize((*load)->dtype);
    if ((*load)->kind != KS_LOAD || (*load)->keep || (*store)->kind != KS_STORE ||
        (*store)->args[0] != 2 || (bytes != 4 && bytes != 8) ||
        kiln_dtype_itemsize(kd->out_type[(*store)->slot]) != bytes)
        return false;
    const kd_index *x = &kd->ixs[(*load)->ix];
    *stride = 0;
    bool along = false;
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *t = &kd->terms[x->first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        if (a->kind != KD_ATOM_VAR) return false;
        const kd_var *v = &kd->vars[a->arg];
        if (a->arg == kd->last_var)
            *stride = t->coef;
        else if (v->kind != KD_VAR_AXIS)
            return false;
        else if (v->axis == kd->rank - 2)
            along = t->coef == 1;
    }
    if (!along || *stride < 8) return false;
    const kd_index *y = &kd->ixs[(*store)->ix];
    if (y->n != 2 || y->c) return false;
    for (uint32_t i = 0; i < 2; i++) {
        const kd_term *t = &kd->terms[y->first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        if (a->kind != KD_ATOM_VAR) return false;
        if (t->coef != (a->arg == kd->last_var ? 1 : kd->inner) ||
            (a->arg != kd->last_var && kd->vars[a->arg].kind != KD_VAR_ROW))
            return false;
    }
    return true;
}

/* C, kd->row_block: the element loop (statement 1, straight-line) over the item's
 * columns, and inside it one iteration per row of the block, whose leading axes' indices
 * are computed there; a constant trip count, so the compiler vectorises across rows. */
static void print_row_block(pr *p) {
    const kd_kernel *kd = p->kd;
    char v[PR_NAME_LEN];
    pr_var_name(kd, kd->last_var, v);
    const kd_stmt *load, *store;
    int64_t stride;
    if (block_transpose(p, &load, &store, &stride)) { /* 8 x 8 blocks through registers */
        pr_line(p, "for (int64_t %s = jb; %s < je; %s += 8) {", v, v, v);
        p->depth++;
        pr_line(p, "const int64_t row = row0;");
        pr_row_axes(p);
        pr_indent(p);
        sb_printf(p->sb, "kiln_transpose8x8_%zu(in%u + (", kiln_dtype_itemsize(load->dtype),
                  load->slot);
        pr_ix(kd, p->sb, load->ix);
        sb_printf(p->sb, "), %lld, out%u + (", (long long)stride, store->slot);
        pr_ix(kd, p->sb, store->ix);
        sb_printf(p->sb, "), %lld);\n", (long long)kd->inner);
        p->depth--;
        pr_line(p, "}");
        return;
    }
    pr_line(p, "for (int64_t %s = jb; %s < je; %s++) {", v, v, v);
    p->depth++;
    pr_line(p, "for (int64_t kiln_r = 0; kiln_r < %lld; kiln_r++) {", (long long)kd->row_block);
    p->depth++;
    pr_line(p, "const int64_t row = row0 + kiln_r;");
    pr_row_axes(p);
    uint32_t end = kd_loop_end(kd, 1);
    for (uint32_t s = 2; s < end; s++) c_stmt(p, s);
    p->depth--;
    pr_line(p, "}");
    p->depth--;
    pr_line(p, "}");
}

/* Whether statement t is a value of the prologue's top level (a row value or what one is
 * computed from), which print_prologue_rows keeps per row of the item in v<t>_b. */
static bool row_level_value(const kd_stmt *t) {
    return t->kind == KS_LOAD || t->kind == KS_IOTA || t->kind == KS_OP || t->kind == KS_RESULT;
}

/* Opens the loop over the item's rows of print_prologue_rows, in which the prologue's top
 * level values before statement `upto` are read back from their rows' arrays. */
static void open_rows(pr *p, uint32_t upto) {
    const kd_kernel *kd = p->kd;
    pr_line(p, "for (int64_t kiln_r = 0; kiln_r < rn; kiln_r++) {");
    p->depth++;
    pr_line(p, "const int64_t row = row0 + kiln_r;");
    pr_row_axes(p);
    for (uint32_t d = 1, depth = 0; d < upto; d++) {
        const kd_stmt *st = &kd->stmts[d];
        if (!depth && row_level_value(st))
            pr_line(p, "const %s v%u = v%u_b[kiln_r];", cgen_ctype(st->dtype), d, d);
        depth += st->kind == KS_LOOP ? 1 : st->kind == KS_END ? -1 : 0;
    }
}

static void close_rows(pr *p) {
    p->depth--;
    pr_line(p, "}");
}

/* C, kd->prologue_rows: the item's rows taken step by step (kdesc.h, KD_PROLOGUE_ROWS).
 * Each top-level statement and each reduction of the prologue runs in a loop over the
 * item's rows of its own, its values kept per row (v<t>_b), so that a reduction over a
 * short row vectorises across the rows (its loop has no pragma: kd_stmt.few, lower.c);
 * a kept value's reduction is two such loops, one computing and keeping the values with
 * the row vectorised, one summing the kept row; then the element loop, row by row. */
static void print_prologue_rows(pr *p) {
    const kd_kernel *kd = p->kd;
    uint32_t e = 1;
    while (!(kd->stmts[e].kind == KS_LOOP && kd->stmts[e].n < 0)) e++;
    /* rows of at most KD_TINY_REDUCE: no pragma along them either, gcc vectorises across
     * the rows (a softmax over rows of 3 several times faster; from rows of 5 the pragma is
     * as good or better: bench/RESULTS.md, "A prologue over short rows, 16 rows an item,
     * step by step") */
    bool tiny = kd->inner <= KD_TINY_REDUCE;
    for (uint32_t t = 1, depth = 0; t < e; t++) { /* the top-level values' arrays */
        const kd_stmt *st = &kd->stmts[t];
        if (!depth && row_level_value(st))
            pr_line(p, "%s v%u_b[%lld];", cgen_ctype(st->dtype), t, (long long)kd->prologue_rows);
        depth += st->kind == KS_LOOP ? 1 : st->kind == KS_END ? -1 : 0;
    }
    for (uint32_t t = 1; t < e; t++) {
        const kd_stmt *st = &kd->stmts[t];
        if (st->kind == KS_LIT) continue; /* printed where used */
        open_rows(p, t);
        if (st->kind != KS_ACC) {
            c_stmt(p, t);
            pr_line(p, "v%u_b[kiln_r] = v%u;", t, t);
            close_rows(p);
            continue;
        }
        uint32_t loop = t + 1, end = loop + 1;
        while (kd->stmts[end].kind != KS_END) end++;
        uint32_t kept = kd_kept_row_store(kd, loop);
        const kd_stmt *keep = kept ? &kd->stmts[kept] : NULL;
        if (keep) { /* the values computed and kept, the row vectorised */
            kd_stmt plain = kd->stmts[loop];
            plain.acc = 0, plain.simd = !tiny;
            c_loop((cpr *)p, &plain);
            for (uint32_t u = loop + 1; u <= end; u++)
                if (kd->stmts[u].kind != KS_ACCUM) c_stmt(p, u);
            close_rows(p);
            open_rows(p, t);
        }
        c_stmt(p, t);
        if (keep) { /* then summed back from the row, across the rows */
            kd_stmt across = kd->stmts[loop];
            across.simd = false;
            across.simd_narrow = !tiny;
            c_loop((cpr *)p, &across);
            pr_indent(p);
            sb_printf(p->sb, "const %s v%u = ", cgen_ctype(kd->stmts[keep->args[0]].dtype),
                      keep->args[0]);
            pr_load_from(p, kd->out_type[keep->slot], "out", keep->slot, keep->ix);
            sb_append(p->sb, ";\n");
            for (uint32_t u = loop + 1; u < end; u++)
                if (kd->stmts[u].kind == KS_ACCUM) c_stmt(p, u);
            c_stmt(p, end);
        } else
            for (uint32_t u = loop; u <= end; u++) c_stmt(p, u);
        c_stmt(p, end + 1); /* the result */
        pr_line(p, "v%u_b[kiln_r] = v%u;", end + 1, end + 1);
        close_rows(p);
        t = end + 1;
    }
    open_rows(p, e);
    kd_stmt elements = kd->stmts[e];
    elements.simd = elements.simd && !tiny;
    c_loop((cpr *)p, &elements);
    for (uint32_t t = e + 1; t < kd->n_stmts; t++) c_stmt(p, t);
    close_rows(p);
}

/* C: whether the kernel gathers (a take_rows row, clamped) in a kernel that does wrapping
 * integer arithmetic. gcc 12.2 at -O3 miscompiles, or fails on (an internal compiler error
 * in vector-builder.h), a vectorised loop that gathers at a clamped index computed with
 * wrapping int32 arithmetic from the loop's variable: `reduce_sum(take_rows(x, 2 * iota(n)
 * - 1), axes=[])` failed to compile for every n >= 17 (tests/test_index_ops.c, "gather at
 * a computed index"), and at -O2 it gave wrong rows. The value ranges gcc derives for the
 * wrapped index are what goes wrong; such kernels are printed KILN_GATHER_GUARD, which
 * turns the range propagation off for them alone (everywhere it costs: it made
 * cross-entropy markedly slower; bench/RESULTS.md, "gcc 12.2: a vectoriser bug behind
 * gathers at computed indices"). */
static bool wraps_into_gather(const kd_kernel *kd) {
    bool clamp = false, arith = false;
    for (uint32_t i = 1; i < kd->n_stmts; i++) {
        const kd_stmt *s = &kd->stmts[i];
        clamp |= s->kind == KS_CLAMP;
        arith |= s->kind == KS_OP && ir_dtype_is_int(s->in_dtype) && s->op != IR_COMPARE &&
                 s->op != IR_SELECT && s->op != IR_CONVERT;
    }
    return clamp && arith;
}

/* C, kd->split: the element loop, when it is printed unrolled over the split's remainder
 * (print_split_unrolled): a split of at most SPLIT_UNROLL_MAX whose element loop holds a
 * branch (an interleave's concatenate on the split-off axis, RoPE's or sin and cos of
 * positional encodings stacked). Then each copy of the body has the remainder as a
 * constant, its branches fold away, and the loop vectorises whatever the body's size:
 * left to gcc, the inner loop of k was unrolled only when the body was small, and a
 * body with sin and cos stayed a scalar loop with a branch per element. 0 otherwise. */
/* Whether index ix is a constant once the split's remainder (last % split) is one. */
static bool on_remainder(const kd_kernel *kd, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[x->first + i].atom];
        if (a->kind != KD_ATOM_MOD || a->n != kd->split || !kd_ix_is_last(kd, a->arg)) return false;
    }
    return true;
}

/* Whether index ix is the last axis' variable plus a constant, *c. */
/* 1: guard g holds for every value of the last axis in [lo, hi); 0: for none; -1: some. */
static int guard_over(const kd_kernel *kd, const kd_guard *g, int64_t lo, int64_t hi) {
    int64_t c;
    if (g->kind == KD_GUARD_DIVIDES || !kd_last_plus(kd, g->ix, &c)) return -1;
    int64_t a = lo + c, z = hi - 1 + c;
    if (g->kind == KD_GUARD_LT) return z < g->n ? 1 : a >= g->n ? 0 : -1;
    return a >= 0 ? 1 : z < 0 ? 0 : -1;
}

/* The statement after part s of an if-chain (an IF, ELSE_IF or ELSE): the chain's next
 * part or its END. */
static uint32_t chain_next(const kd_kernel *kd, uint32_t s) {
    int depth = 0;
    for (uint32_t t = s + 1; t < kd->n_stmts; t++) {
        kd_stmt_kind k = kd->stmts[t].kind;
        if (!depth && (k == KS_ELSE_IF || k == KS_ELSE || k == KS_END)) return t;
        if (k == KS_LOOP || k == KS_IF) depth++;
        if (k == KS_END) depth--;
    }
    return kd->n_stmts - 1;
}

/* Statements [from, to) for the last axis in [lo, hi): an if-chain decided there is
 * printed as the branch taken alone. */
static void print_decided(pr *p, uint32_t from, uint32_t to, int64_t lo, int64_t hi) {
    const kd_kernel *kd = p->kd;
    for (uint32_t t = from; t < to; t++) {
        if (kd->stmts[t].kind != KS_IF) {
            c_stmt(p, t);
            continue;
        }
        uint32_t part = t, taken = 0;
        bool decided = true;
        while (kd->stmts[part].kind != KS_END && decided) {
            const kd_stmt *ps = &kd->stmts[part];
            bool all = true;
            for (uint32_t g = 0; ps->kind != KS_ELSE && g < ps->n_guards; g++) {
                int v = guard_over(kd, &kd->guards[ps->guard + g], lo, hi);
                decided &= v >= 0;
                all &= v == 1;
            }
            if (decided && all && !taken) taken = part;
            part = chain_next(kd, part);
        }
        if (!decided) { /* printed as it is; its branches, in turn, may be decided */
            c_stmt(p, t);
            continue;
        }
        if (taken) print_decided(p, taken + 1, chain_next(kd, taken), lo, hi);
        t = part; /* the chain's END */
    }
}

/* C: the element loop `loop` as one loop per segment of the last axis (segmented_loop),
 * each over the item's chunk within the segment, its branches decided. With a split last
 * axis (the chunk and every boundary multiples of it), a segment is the split's two loops,
 * as c_loop prints them: the quotient's over the segment, the remainder's of constant trip
 * count. */
static void print_segments(pr *p, uint32_t loop, const int64_t *b, int nb) {
    const kd_kernel *kd = p->kd;
    char v[PR_NAME_LEN];
    pr_var_name(kd, kd->last_var, v);
    uint32_t end = kd_loop_end(kd, loop);
    long long k = (long long)kd->split;
    for (int i = 0; i <= nb; i++) {
        long long lo = i ? (long long)b[i - 1] : 0, hi = i < nb ? (long long)b[i] : kd->inner;
        if (k)
            pr_line(p,
                    "for (int64_t %sq = (jb > %lld ? jb : %lld) / %lld; %sq < (je < %lld ? je : "
                    "%lld) / %lld; %sq++)",
                    v, lo, lo, k, v, hi, hi, k, v);
        if (kd->stmts[loop].simd) /* on the innermost loop, the remainder's when split */
            pr_line(p, "#pragma omp simd");
        else
            print_ivdep(p, loop);
        if (k) {
            pr_line(p, "for (int64_t %sr = 0; %sr < %lld; %sr++) {", v, v, k, v);
            pr_line(p, "    const int64_t %s = %sq * %lld + %sr;", v, v, k, v);
        } else
            pr_line(
                p, "for (int64_t %s = jb > %lld ? jb : %lld; %s < (je < %lld ? je : %lld); %s++) {",
                v, lo, lo, v, hi, hi, v);
        p->depth++;
        print_decided(p, loop + 1, end, lo, hi);
        p->depth--;
        pr_line(p, "}");
    }
}

/* C: the element loop `loop` over the split's quotient, its body printed once for each
 * remainder r < k, r a constant there (split_unrolled_loop). */
static void print_split_unrolled(pr *p, uint32_t loop) {
    const kd_kernel *kd = p->kd;
    char v[PR_NAME_LEN];
    pr_var_name(kd, kd->last_var, v);
    long long k = (long long)kd->split;
    uint32_t end = kd_loop_end(kd, loop);
    pr_line(p, "for (int64_t %sq = jb / %lld; %sq < je / %lld; %sq++) {", v, k, v, k, v);
    p->depth++;
    for (long long r = 0; r < k; r++) {
        pr_line(p, "{");
        p->depth++;
        pr_line(p, "const int64_t %sr = %lld, %s = %sq * %lld + %lld;", v, r, v, v, k, r);
        for (uint32_t t = loop + 1; t < end; t++) c_stmt(p, t);
        p->depth--;
        pr_line(p, "}");
    }
    p->depth--;
    pr_line(p, "}");
}

/* C: an if-chain part in a loop over the item's chunk whose guards read the row's indices
 * alone (a pooling gradient's test of the row's parity, a pad's edge rows) is decided once
 * per loop: its condition is computed before the loop, kiln_g<id>, and the loop tests that
 * constant (hoisted_if), which gcc unswitches or if-converts. KILN_BRANCH_GUARD (branches)
 * is there for gcc 12's miscompile of an if-converted loop that branches on its own
 * variable; such a branch is not on the element loop's variable, but it is on the item
 * loop's, and gcc fully unrolls an element loop of at most 16 iterations (its
 * max-completely-peel-times) and then if-converts and vectorises the item loop around it:
 * concatenate(x, -x) along the rows of an f32[10, 2], hoisted and unguarded, lost rows
 * 12 and 13 (tests/test_compile_ops.c, "concatenate of one operand twice"). So the kernel
 * drops the guard for such ifs only where the loop is printed as one loop (unguarded), and
 * a plain loop of a constant trip count of at most 16 gets `#pragma GCC unroll 1`, which
 * keeps it a loop: the item loop then holds a loop and is never if-converted. Unguarded, gcc
 * vectorises the element loop, which the guard kept scalar (bench/RESULTS.md, "Guards on
 * the row hoisted out of the element loop"). Only where the row is fixed for the whole
 * loop: not in row blocks or prologue rows, whose rows vary inside, nor in an unrolled
 * split or segmented loop, which decide their branches alone. */
static bool on_row(const kd_kernel *kd, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[x->first + i].atom];
        if (a->kind == KD_ATOM_VAL) return false; /* computed in the loop */
        if (a->kind != KD_ATOM_VAR) {
            if (!on_row(kd, a->arg)) return false;
        } else if (a->arg == kd->last_var || kd->vars[a->arg].kind == KD_VAR_REDUCE)
            return false;
    }
    return true;
}

/* The innermost loop over the item's chunk (a LOOP of n < 0) holding statement id, or 0. */
static uint32_t chunk_loop_of(const kd_kernel *kd, uint32_t id) {
    uint32_t in = 0;
    for (uint32_t s = 1; s < id; s++)
        if (kd->stmts[s].kind == KS_LOOP && kd->stmts[s].n < 0 && id < kd_loop_end(kd, s)) in = s;
    return in;
}

/* Whether statement id, an IF or ELSE_IF, tests kiln_g<id> computed before its loop. */
static bool hoisted(const kd_kernel *kd, uint32_t id) {
    const kd_stmt *st = &kd->stmts[id];
    if ((st->kind != KS_IF && st->kind != KS_ELSE_IF) || !st->n_guards) return false;
    uint32_t e = chunk_loop_of(kd, id);
    if (!e || kd->row_block > 1 || kd->prologue_rows > 1 || e == kd->sched.unroll_loop ||
        e == kd->sched.seg_loop)
        return false;
    for (uint32_t g = 0; g < st->n_guards; g++)
        if (!on_row(kd, kd->guards[st->guard + g].ix)) return false;
    return true;
}

/* Whether chunk loop `loop` is printed as one loop, plain or under a bare `#pragma omp
 * simd` (an in-place kernel's, without restrict), whose hoisted ifs need no guard (above):
 * gcc does not unroll a simd loop before vectorising it (so it gets no other pragma, which
 * gcc 12 would not take after that one). Not one split in two, nor a reduction's. */
static bool unguarded(const kd_kernel *kd, const kd_stmt *loop) {
    return !kd->split && !loop->simd_narrow && !(loop->simd && loop->acc);
}

/* C: before chunk loop s, the conditions of the if-chain parts in it that hoisted names;
 * whether there were any. */
static bool print_hoisted(pr *p, uint32_t s) {
    const kd_kernel *kd = p->kd;
    bool any = false;
    for (uint32_t t = s + 1, end = kd_loop_end(kd, s); t < end; t++) {
        if (!hoisted(kd, t) || chunk_loop_of(kd, t) != s) continue;
        pr_indent(p);
        sb_printf(p->sb, "const int kiln_g%u = ", t);
        pr_guards(p, &kd->stmts[t]);
        sb_append(p->sb, ";\n");
        any = true;
    }
    return any;
}

/* C: whether an output of the kernel is written over one of its inputs (in place): its
 * pointers are then not restrict. */
static bool in_place(const kd_kernel *kd) {
    for (uint32_t o = 0; kd->alias && o < kd->n_outputs; o++)
        if (kd->alias[o]) return true;
    return false;
}

/* C: `ivdep` on an element loop when no buffer is overwritten in place, which its
 * restrict pointers already say: gcc 12 does not take restrict from the kernel's locals
 * (loaded from the buffer table) and checks loads against stores at run time, giving up
 * past 10 checks (--param vect-max-version-for-alias-checks): a pooling gradient's loop
 * (the loads it if-converts), and a layer norm's gradient fused with the residual stream
 * it recomputes (18 inputs, 3 outputs, 27 checks) stayed scalar. loop 0: any loop (the
 * pooling gradient's); else only an innermost loop (what gcc vectorises) whose buffers
 * read times buffers written pass that limit: where gcc can check them itself its cost
 * model stays as it was (a transpose's strided reads, told ivdep, became gathers slower
 * than the scalar loop). */
static void print_ivdep(pr *p, uint32_t loop) {
    const kd_kernel *kd = p->kd;
    if (loop) {
        uint64_t read = 0, written = 0; /* slots, as bits (saturating at 64) */
        for (uint32_t s = loop + 1, end = kd_loop_end(kd, loop); s < end; s++) {
            const kd_stmt *st = &kd->stmts[s];
            if (st->kind == KS_LOOP) return;
            uint64_t bit = 1ull << (st->slot < 63 ? st->slot : 63);
            if (st->kind == KS_LOAD && !st->keep) read |= bit;
            if (st->kind == KS_STORE) written |= bit;
        }
        if (__builtin_popcountll(read) * __builtin_popcountll(written) <= GCC_ALIAS_CHECKS) return;
    }
    if (!in_place(kd)) pr_line(p, "#pragma GCC ivdep");
}

/* C: the pragmas of a chunk loop whose hoisted ifs are unguarded: `unroll 1` where gcc
 * could unroll it fully (above), and ivdep. */
static void print_free_if_pragmas(pr *p) {
    const kd_kernel *kd = p->kd;
    if (p->chunks <= 1 && kd->inner <= GCC_PEEL_MAX) pr_line(p, "#pragma GCC unroll 1");
    print_ivdep(p, 0);
}

/* C: IF or ELSE_IF id on its hoisted condition (a plain block in the version of a loop
 * for rows where it holds). */
static void hoisted_if(pr *p, uint32_t id) {
    bool first = p->kd->stmts[id].kind == KS_IF;
    if (!first) p->depth--;
    if (((const cpr *)p)->rows_inside)
        pr_line(p, "{");
    else
        pr_line(p, "%sif (kiln_g%u) {", first ? "" : "} else ", id);
    p->depth++;
}

/* C: whether the kernel branches on an element's index (a concatenate's chain of operands,
 * a pad's edges). gcc 12.2 -O3 without loop splitting (cc.c: -fno-split-loops, for the
 * miscompile of a concatenate it splits) if-converts and vectorises such a loop wrongly:
 * concatenate(x, x) along axis 0 of an f32[10, 2] lost rows 10-15 (zeros) whenever x and
 * the result did not overlap (AVX2 and AVX-512 alike; -O2, clang, and gcc without the
 * loop if-conversion are right; tests/test_compile_ops.c, "concatenate of one operand
 * twice"). Such kernels are printed KILN_BRANCH_GUARD, which turns the loop if-conversion
 * off for them alone. An interleave printed unrolled (split_unrolled_loop) whose branches
 * all test the split's remainder has none left once each copy's constant folds, and is
 * not guarded: the if-conversion it keeps is what vectorises sin's reduction there. */
static bool branches(const kd_kernel *kd) {
    bool unrolled = kd->sched.unroll_loop != 0;
    uint32_t seg = kd->sched.seg_loop;
    uint32_t seg_end = seg ? kd_loop_end(kd, seg) : 0;
    for (uint32_t i = 1; i < kd->n_stmts; i++) {
        const kd_stmt *st = &kd->stmts[i];
        if (st->kind != KS_IF && st->kind != KS_ELSE_IF) continue;
        if (seg && i > seg && i < seg_end) continue; /* decided in each segment */
        if (hoisted(kd, i) && unguarded(kd, &kd->stmts[chunk_loop_of(kd, i)]))
            continue; /* decided before its loop (hoisted) */
        if (!unrolled) return true;
        for (uint32_t g = 0; g < st->n_guards; g++)
            if (!on_remainder(kd, kd->guards[st->guard + g].ix)) return true;
    }
    return false; /* none, or all decided in each copy of an unrolled split loop */
}

/* C: the kernel's qualifiers before `void`. */
static const char *c_qualifiers(const kd_kernel *kd) {
    bool gather = wraps_into_gather(kd), branch = branches(kd);
    return gather && branch ? "KILN_EXPORT KILN_GATHER_BRANCH_GUARD"
           : gather         ? "KILN_EXPORT KILN_GATHER_GUARD"
           : branch         ? "KILN_EXPORT KILN_BRANCH_GUARD"
                            : "KILN_EXPORT";
}

/* C, kd->parts: kiln_k<i>_part, the element loop up to the split reduction's end over
 * this part's slice, storing each element's accumulator. */
static void print_part_fn(pr *p) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *acc = &kd->stmts[kd->part_acc];
    char slot[PR_ACC_LEN + 64];
    sb_printf(p->sb, "%s void kiln_k%u_part(void *const *b, int64_t begin, int64_t end) {\n",
              c_qualifiers(kd), kd->index);
    pr_buffers(p, false, "restrict ");
    print_fence(p);
    pr_line(p, "unsigned char *restrict kiln_part = (unsigned char *)b[%u];",
            kd->n_inputs + kd->n_outputs);
    pr_line(p, "for (int64_t it = begin; it < end; it++) {");
    p->depth++;
    p->part_mode = 1;
    c_item(p);
    uint32_t last = kd_loop_end(kd, p->kd->sched.split_loop);
    for (uint32_t s = 1; s <= last; s++) c_stmt(p, s);
    pr_part_slot(p, 0, "it", slot, sizeof slot);
    pr_line(p, "memcpy(%s, &acc%u, sizeof acc%u);", slot, kd->part_acc, kd->part_acc);
    if (acc->red.nan_flag) pr_line(p, "(%s)[8] = acc%u_nan;", slot, kd->part_acc);
    p->depth--;
    pr_line(p, "}"); /* the element loop */
    p->depth--;
    pr_line(p, "}");
    sb_append(p->sb, "}\n");
    p->part_mode = 2;
}

/* kd->parts: in kiln_k<i>, the parts' accumulators combined in order instead of the
 * split loop. */
static void print_part_combine(pr *p, uint32_t acc_id) {
    const kd_stmt *acc = &p->kd->stmts[acc_id];
    char slot[PR_ACC_LEN + 96], a[PR_ACC_LEN];
    snprintf(a, sizeof a, "acc%u", acc_id);
    pr_line(p, "for (int64_t kiln_q = 0; kiln_q < %lld; kiln_q++) {",
            (long long)p->kd->sched.parts);
    p->depth++;
    pr_part_slot(p, 0, "kiln_q", slot, sizeof slot);
    pr_line(p, "%s t;", pr_acc_ctype(acc));
    pr_line(p, "memcpy(&t, %s, sizeof t);", slot);
    pr_combine_line(p, acc, a, "t");
    if (acc->red.nan_flag) pr_line(p, "acc%u_nan |= (%s)[8];", acc_id, slot);
    p->depth--;
    pr_line(p, "}");
}

/* Element loop s (statement 1) in the form its schedule gives it. */
static void print_element_loop(pr *p, uint32_t s) {
    const kd_kernel *kd = p->kd;
    if (s == kd->sched.unroll_loop)
        print_split_unrolled(p, s);
    else if (s == kd->sched.seg_loop)
        print_segments(p, s, kd->sched.seg_b, kd->sched.n_seg);
    else if (s == 1 && row_blocks(p))
        print_row_block(p);
    else
        for (uint32_t t = s, end = kd_loop_end(kd, s); t <= end; t++) c_stmt(p, t);
}

/* The element loop with fast sin and cos, then again exactly if an argument needs it. */
static void print_fast_trig(cpr *c, uint32_t s) {
    pr *p = &c->p;
    pr_line(p, "uint32_t kiln_big = 0;");
    c->fast_trig = true;
    print_element_loop(p, s);
    c->fast_trig = false;
    pr_line(p, "if (kiln_big) { /* an argument of 2^21 or more: exactly */");
    p->depth++;
    c->trig_rerun = true;
    print_element_loop(p, s);
    c->trig_rerun = false;
    p->depth--;
    pr_line(p, "}");
}

/* The 16-bit stores of staged loop `loop` rounded from their blocks (after the block's
 * elements are computed, the loop variable v at the block's first): kiln_st32_<t>. */
static void print_staged_stores(pr *p, uint32_t loop, const char *v) {
    const kd_kernel *kd = p->kd;
    pr_line(p, "{");
    p->depth++;
    pr_line(p, "const int64_t %s = kiln_b%u;", v, loop);
    for (uint32_t s = loop + 1, end = kd_loop_end(kd, loop); s < end; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (!(st->sched & KD_SCHED_STAGED)) continue;
        pr_indent(p);
        sb_printf(p->sb, "kiln_st32_%s(&out%u[", pr_dtype_suffix(kd->out_type[st->slot]), st->slot);
        pr_ix(kd, p->sb, st->ix);
        sb_printf(p->sb, "], kiln_h%u);\n", s);
    }
    p->depth--;
    pr_line(p, "}");
}

/* C, staged loop `loop`: the blocks of KD_STAGE elements from jb, each computed into local
 * f32 arrays (one per staged store) that kiln_st32_<t> then rounds and stores at once.
 * With kd_sched.stage_overlap the last block ends at je, overlapping the one before; else
 * the blocks stop before je and kiln_b<loop> is where the rest begins. */
static void print_stage_blocks(cpr *c, uint32_t loop, const char *v) {
    pr *p = &c->p;
    const kd_kernel *kd = p->kd;
    uint32_t end = kd_loop_end(kd, loop);
    bool overlap = kd->sched.stage_overlap;
    pr_line(p, "int64_t kiln_b%u = jb;", loop);
    if (overlap)
        pr_line(p, "for (; kiln_b%u < je; kiln_b%u += %d) {", loop, loop, KD_STAGE);
    else
        pr_line(p, "for (; kiln_b%u + %d <= je; kiln_b%u += %d) {", loop, KD_STAGE, loop, KD_STAGE);
    p->depth++;
    if (overlap) /* the last block ends at je */
        pr_line(p, "kiln_b%u = kiln_b%u + %d > je ? je - %d : kiln_b%u;", loop, loop, KD_STAGE,
                KD_STAGE, loop);
    for (uint32_t s = loop + 1; s < end; s++)
        if (kd->stmts[s].sched & KD_SCHED_STAGED) pr_line(p, "float kiln_h%u[%d];", s, KD_STAGE);
    if (kd->stmts[loop].simd) /* no accumulator (staged_loop): a plain simd loop */
        pr_line(p, "#pragma omp simd");
    else
        print_ivdep(p, loop);
    pr_line(p, "for (int64_t kiln_e%u = 0; kiln_e%u < %d; kiln_e%u++) {", loop, loop, KD_STAGE,
            loop);
    p->depth++;
    pr_line(p, "const int64_t %s = kiln_b%u + kiln_e%u;", v, loop, loop);
    c->staging = true;
    for (uint32_t s = loop + 1; s < end; s++) c_stmt(p, s);
    c->staging = false;
    p->depth--;
    pr_line(p, "}");
    print_staged_stores(p, loop, v);
    p->depth--;
    pr_line(p, "}");
}

/* C: the element loop's body over [from, je) as a scalar loop (KILN_SCALAR_LOOP: the
 * fewer than KD_STAGE elements a staged loop leaves are not worth a vectorised copy's
 * compile time). */
static void print_scalar_rest(cpr *c, uint32_t loop, const char *v, const char *from) {
    pr *p = &c->p;
    pr_line(p, "for (int64_t %s = %s; %s < je; %s++) {", v, from, v, v);
    p->depth++;
    pr_line(p, "KILN_SCALAR_LOOP();");
    for (uint32_t s = loop + 1, end = kd_loop_end(p->kd, loop); s < end; s++) c_stmt(p, s);
    p->depth--;
    pr_line(p, "}");
}

/* C, kd_sched.stage_loop: the element loop in staged blocks (print_stage_blocks), where
 * the target has the hardware conversion for the stored types (c_head.h,
 * KILN_STAGED_<t>), else the plain loop. A chunk's last elements, when it is no multiple of
 * a block, run as a block overlapping the one before (kd_sched.stage_overlap: the same
 * values stored again), or else as a scalar loop; a chunk shorter than a block (the last
 * of a row, when the row is not a multiple of the chunk) runs as a scalar loop. gcc keeps a block
 * in registers, so a bf16 chain's stores cost a vfpclassps test and one vcvtne2ps2bf16 per 32
 * values where the integer rounding took about 20 instructions (bench/RESULTS.md, "Staged 16-bit
 * stores"). */
static void print_staged_loop(cpr *c, uint32_t loop) {
    pr *p = &c->p;
    const kd_kernel *kd = p->kd;
    uint32_t end = kd_loop_end(kd, loop);
    bool bf = false, f16 = false;
    for (uint32_t s = loop + 1; s < end; s++)
        if (kd->stmts[s].sched & KD_SCHED_STAGED) {
            bf |= kd->out_type[kd->stmts[s].slot] == KILN_DTYPE_BF16;
            f16 |= kd->out_type[kd->stmts[s].slot] == KILN_DTYPE_F16;
        }
    char v[PR_NAME_LEN], from[32];
    pr_var_name(kd, kd->stmts[loop].var, v);
    /* the shortest chunk: the last of a row */
    int64_t chunk = p->chunk > 0 && p->chunk < kd->inner ? p->chunk : kd->inner;
    int64_t last = kd->inner - (kd->inner - 1) / chunk * chunk;
    pr_line(p, "#if %s%s%s", bf ? "KILN_STAGED_BF16" : "", bf && f16 ? " || " : "",
            f16 ? "KILN_STAGED_F16" : "");
    if (!kd->sched.stage_overlap) { /* a rest only where some chunk leaves one */
        print_stage_blocks(c, loop, v);
        snprintf(from, sizeof from, "kiln_b%u", loop);
        if (chunk % KD_STAGE || last % KD_STAGE) print_scalar_rest(c, loop, v, from);
    } else if (last >= KD_STAGE) {
        print_stage_blocks(c, loop, v);
    } else {
        pr_line(p, "if (je - jb >= %d) {", KD_STAGE);
        p->depth++;
        print_stage_blocks(c, loop, v);
        p->depth--;
        pr_line(p, "} else {");
        p->depth++;
        print_scalar_rest(c, loop, v, "jb");
        p->depth--;
        pr_line(p, "}");
    }
    pr_line(p, "#else");
    for (uint32_t s = loop; s <= end; s++) c_stmt(p, s);
    pr_line(p, "#endif");
}

/* The statements of kiln_k<i>, each in the form its schedule gives it. */
static void print_body(cpr *c) {
    pr *p = &c->p;
    const kd_kernel *kd = p->kd;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        if (s == kd->sched.fast_trig_loop) {
            print_fast_trig(c, s);
            s = kd_loop_end(kd, s);
            continue;
        }
        if (s == 1 && prologue_blocks(p)) { /* the whole kernel, in a form of its own */
            print_prologue_rows(p);
            break;
        }
        if (s == kd->sched.unroll_loop || s == kd->sched.seg_loop || (s == 1 && row_blocks(p))) {
            print_element_loop(p, s); /* a form of its own */
            s = kd_loop_end(kd, s);
            continue;
        }
        if (s == kd->sched.stage_loop && !p->part_mode) {
            print_staged_loop(c, s);
            s = kd_loop_end(kd, s);
            continue;
        }
        if (p->part_mode == 2 && s == kd->sched.split_loop) {
            print_part_combine(p, kd->part_acc);
            s = kd_loop_end(kd, s);
            continue;
        }
        c_stmt(p, s);
    }
}

/* C: whether select s picks between f32 or f64 values on a bool loaded from a buffer (a
 * pooling gradient's saved mask) in a row of fewer than 32 elements, printed as a bitwise
 * blend (kiln_select_<t>, c_head.h). The byte's vector of 32 or 64 lanes spans more than
 * such a row, so gcc 12 vectorises it in 16-byte vectors only, where it cannot convert the
 * byte mask of the masked load it makes of `m ? x : 0` to the float lanes: the loop stayed
 * scalar with a branch on each mask byte (a max pool's gradient over 16 channels:
 * bench/RESULTS.md, "The CNN step: max and min without branches"). In longer rows the
 * select stays as it is: there gcc vectorises it wide, and a blend of a 32-row kernel
 * with nested guards measured slower. */
static bool mask_select(const pr *p, const kd_stmt *s) {
    const kd_kernel *kd = p->kd;
    int64_t row = p->chunk > 0 && p->chunk < kd->inner ? p->chunk : kd->inner;
    if (s->kind != KS_OP || s->op != IR_SELECT || s->round || row >= 32) return false;
    if (s->dtype != s->in_dtype || (s->dtype != KILN_DTYPE_F32 && s->dtype != KILN_DTYPE_F64))
        return false;
    const kd_stmt *m = &kd->stmts[s->args[0]];
    return m->kind == KS_LOAD && m->dtype == KILN_DTYPE_BOOL;
}

static void c_stmt(pr *p, uint32_t id) {
    cpr *c = (cpr *)p;
    const kd_stmt *s = &p->kd->stmts[id];
    bool trig = s->kind == KS_OP && (s->op == IR_SIN || s->op == IR_COS);
    char x[PR_NAME_LEN];
    if (c->skip_end) { /* inside a loop printed whole (print_lane_block, print_versioned_loop) */
        if (id < c->skip_end) return;
        c->skip_end = 0;
        if (c->n_slice && c->slice[c->n_slice - 1].depth == p->depth) print_slice_close(c);
        return;
    }
    switch (s->kind) {
    case KS_LOOP: c_loop(c, s); return;
    case KS_ACC: c_acc(p, id); return;
    case KS_ACCUM: c_accum(c, s); return;
    case KS_IF:
    case KS_ELSE_IF:
        if (!hoisted(p->kd, id)) break;
        hoisted_if(p, id);
        return;
    case KS_END:
        if (c->n_blk && c->blk[c->n_blk - 1].depth == p->depth)
            print_block_close(c);
        else {
            p->depth--;
            pr_line(p, "}");
        }
        if (c->n_slice && c->slice[c->n_slice - 1].depth == p->depth) print_slice_close(c);
        return;
    default: break;
    }
    if (c->staging && (s->sched & KD_SCHED_STAGED)) {
        pr_val_name(p->kd, s->args[0], x);
        pr_line(p, "kiln_h%u[kiln_e%u] = %s;", id, p->kd->sched.stage_loop, x);
        return;
    }
    if (trig && s->dtype == KILN_DTYPE_F32 && (c->fast_trig || c->trig_rerun)) {
        const char *f = s->op == IR_SIN ? "sin" : "cos";
        pr_val_name(p->kd, s->args[0], x);
        kiln_dtype r = pr_made_round(p->kd, id); /* a 16-bit sin or cos rounds as elsewhere */
        if (c->trig_rerun) pr_line(p, "KILN_SCALAR_LOOP();");
        pr_line(p, "const float v%u = %s%s%skiln_%s_%s_f32(%s)%s;", id, r ? "kiln_rnd_" : "",
                r ? pr_dtype_suffix(r) : "", r ? "(" : "", f, c->fast_trig ? "fast" : "rerun", x,
                r ? ")" : "");
        if (c->fast_trig) pr_line(p, "kiln_big |= kiln_trig_big_f32(%s);", x);
        return;
    }
    if (trig && c->trig_rerun) pr_line(p, "KILN_SCALAR_LOOP();");
    if (mask_select(p, s)) {
        char m[PR_NAME_LEN], a[PR_NAME_LEN], b[PR_NAME_LEN];
        pr_val_name(p->kd, s->args[0], m);
        pr_val_name(p->kd, s->args[1], a);
        pr_val_name(p->kd, s->args[2], b);
        pr_line(p, "const %s v%u = kiln_select_%s(%s, %s, %s);", cgen_ctype(s->dtype), id,
                pr_dtype_suffix(s->dtype), m, a, b);
        return;
    }
    pr_stmt(p, id);
}

/* kiln_k<i> (and kiln_k<i>_part and kiln_k<i>_parts when the kernel has parts). */
static int c_kernel(const kd_kernel *kd, strbuf *sb, cgen_kernel *info) {
    cpr c = {.p = {.kd = kd,
                   .sb = sb,
                   .stmt = c_stmt,
                   .acc_name = c_acc_name,
                   .rounded = true,
                   .chunk = kd->sched.chunk,
                   .chunks = kd->sched.chunks}};
    pr *p = &c.p;
    if (kd->parts) print_part_fn(p);
    sb_printf(sb, "%s void kiln_k%u(void *const *b, int64_t begin, int64_t end) {\n",
              c_qualifiers(kd), kd->index);
    pr_buffers(p, false, "restrict ");
    print_fence(p);
    if (kd->parts)
        pr_line(p, "const unsigned char *restrict kiln_part = (const unsigned char *)b[%u];",
                kd->n_inputs + kd->n_outputs);
    pr_line(p, "for (int64_t it = begin; it < end; it++) {");
    p->depth++;
    c_item(p);
    print_body(&c);
    p->depth--;
    pr_line(p, "}");
    sb_append(sb, "}\n");
    if (p->part_mode)
        sb_printf(sb, "KILN_EXPORT const int64_t kiln_k%u_parts[2] = {%lld, %lld};\n", kd->index,
                  (long long)kd->parts, (long long)(kd->inner * KD_PART_BYTES));
    /* the dialect's items, and so its grain: row blocks of them */
    bool blocks = row_blocks(p), prows = prologue_blocks(p);
    int64_t k = prows ? kd->prologue_rows : kd->row_block;
    info->items = !kd->items ? 0
                  : blocks   ? kd->rows / kd->row_block * p->chunks
                  : prows    ? (kd->rows + k - 1) / k
                             : kd->rows * p->chunks;
    info->grain = !blocks && !prows ? kd->grain : kd->grain > k ? kd->grain / k : 1;
    info->parts = kd->sched.parts;
    return p->hole;
}

static const char *const c_prelude[] = {
    cgen_prelude_c_head, cgen_prelude_ops,      cgen_prelude_math_f32,
    cgen_prelude_c_math, cgen_prelude_math_f64, cgen_prelude_convert,
    cgen_prelude_half,   cgen_prelude_random,   NULL};

const pr_dialect pr_c_dialect = {c_prelude, c_kernel};
