/* lower.c — a fused LOOP kernel -> its kernel description (kdesc.h).
 *
 * An elemental lowering, as in XLA's CPU backend: lower_value(node, index) appends the
 * statements that compute one element of `node` at a multi-index (one index expression
 * per axis) and returns the statement holding it. The kernel is a loop over its roots'
 * index space calling it for each root at the loop's index. Shape ops only rewrite the
 * index (a transpose permutes it, a broadcast drops axes, a slice scales and offsets it,
 * a reshape linearises and splits it, which the index simplifier undoes where it can);
 * materialised inputs are loads; pad, concatenate and take_rows open guarded regions or
 * clamp a row; a dynamic slice adds its clamped starts (values read in the kernel) to the
 * index, a dynamic update selects the update inside its window; an inlined reduction
 * opens loops with an accumulator.
 *
 * Values are memoised per (node, index) within the current bracket (loop or branch), so a
 * node used twice at the same index is computed once; leaving a bracket forgets what was
 * computed inside it, since it is out of scope after. Row values (fusion.h) are computed
 * first, at the row's index, before the loop over the row's elements: every use inside
 * finds them memoised (lower_rows), so they are computed once per row. Numerics are decided by the
 * printer per op (print.c), except the accumulator types, fixed here for every dialect. The
 * schedule's choices made on the finished statements (tiles, row blocks, parts, prologue
 * rows, the last axis' split) are schedule.c's (kd_sched_*). */
#include "kdesc.h"

#include <string.h>

/* reductions of one column-form kernel (lower_columns); more are lowered element by element */
enum { KD_MAX_COLUMN_ROOTS = FUSION_MAX_COLUMN_REDUCTIONS };
/* row values a kernel computes once per element (lower_rows); more are computed where used */
enum { KD_MAX_ELEM_ROWS = 16 };

typedef struct memo {
    uint32_t node, stmt;
    int depth;
    uint32_t ix[KILN_MAX_RANK];
} memo;

typedef struct lw {
    kd_kernel *kd;
    const kiln_graph *g;
    const fusion_plan *p;
    const fkernel *k;
    bool merge;      /* the index space merges a short last axis where it can (kd_lower) */
    bool *can_merge; /* set: whether it can (short_last_axis) */
    memo *memo;
    uint32_t n_memo, cap_memo;
    int depth;
    bool int_arith; /* integer elementwise code was lowered (see kd_stmt.simd) */
    /* a kept value (lower_rows): reduction keep_red of the prologue stores its operand
     * keep_node in output keep_slot; the element loop loads it at the element's index */
    uint32_t keep_red, keep_node, keep_slot;
    bool in_prologue, kept;                  /* kept: the prologue stored it */
    uint32_t row_ix, elem_ix[KILN_MAX_RANK]; /* the row's index, the element's multi-index */
    /* row values one per element of this kernel (lower_rows), computed first in the element
     * loop; unit: lowered at the element's index and a 0 for a kept unit axis */
    uint32_t elem_rows[KD_MAX_ELEM_ROWS];
    bool elem_unit[KD_MAX_ELEM_ROWS];
    uint32_t n_elem_rows;
} lw;

/* Whether statement s (before its dtypes become compute dtypes), on values of its 16-bit
 * dtype, gives one of them again: no rounding needed. */
static bool keeps_values(const kd_kernel *kd, const kd_stmt *s) {
    if (s->kind == KS_RESULT) { /* a max or min picks one of the values */
        ir_op r = kd->stmts[s->args[0]].red.op;
        return r == IR_REDUCE_MAX || r == IR_REDUCE_MIN;
    }
    if (s->kind != KS_OP) return false;
    switch (s->op) {
    case IR_NEG:
    case IR_ABS:
    case IR_SIGN:
    case IR_MAX:
    case IR_MIN:
    case IR_SELECT: return true;
    case IR_CONVERT: return s->in_dtype == s->dtype || s->in_dtype == KILN_DTYPE_BOOL;
    default: return false;
    }
}

/* Whether statement s makes a 16-bit value that must be rounded where it is made even with
 * excess precision (fusion_plan.excess_precision): an explicit convert (the user asked for
 * the rounding), a random draw and an iota (what they draw or count is defined by the
 * 16-bit dtype). Every other op's and reduction's result then stays f32 until stored. */
static bool rounds_always(const kd_stmt *s) {
    return s->kind == KS_IOTA || (s->kind == KS_OP && (s->op == IR_CONVERT || s->op == IR_RANDOM));
}

static uint32_t emit(lw *l, kd_stmt s) {
    kd_kernel *kd = l->kd;
    /* 16-bit floats are computed in f32: the statement carries the compute dtype, and the
     * ops that make a new value round it back (kd_stmt.round), unless the plan allows
     * excess precision */
    if (ir_dtype_is_half(s.dtype)) {
        if ((s.kind == KS_OP || s.kind == KS_IOTA || s.kind == KS_RESULT) &&
            !keeps_values(kd, &s) && (!l->p->excess_precision || rounds_always(&s)))
            s.round = s.dtype;
        s.round_arith = s.round && s.kind == KS_OP && s.in_dtype == s.round &&
                        !l->p->excess_precision &&
                        (s.op == IR_ADD || s.op == IR_SUB || s.op == IR_MUL || s.op == IR_DIV);
        s.dtype = KILN_DTYPE_F32;
    }
    s.in_dtype = ir_dtype_compute(s.in_dtype);
    if (!kd_reserve(kd, (void **)&kd->stmts, kd->n_stmts, &kd->cap_stmts, sizeof *kd->stmts))
        return 0;
    kd->stmts[kd->n_stmts] = s;
    return kd->n_stmts++;
}

static void scope_open(lw *l) {
    l->depth++;
}

/* Forgets the values computed in the bracket being left (or in the branch before an
 * else). */
static void scope_forget(lw *l) {
    while (l->n_memo && l->memo[l->n_memo - 1].depth >= l->depth) l->n_memo--;
}

static void scope_close(lw *l) {
    scope_forget(l);
    l->depth--;
    emit(l, (kd_stmt){.kind = KS_END});
}

static uint32_t memo_find(const lw *l, uint32_t id, const uint32_t *ix) {
    int rank = l->g->nodes[id].shape.rank;
    for (uint32_t i = l->n_memo; i-- > 0;) {
        const memo *m = &l->memo[i];
        if (m->node != id) continue;
        bool same = true;
        for (int a = 0; a < rank && same; a++) same = kd_ix_equal(l->kd, m->ix[a], ix[a]);
        if (same) return m->stmt;
    }
    return 0;
}

static void memo_add(lw *l, uint32_t id, const uint32_t *ix, uint32_t stmt) {
    if (!kd_reserve(l->kd, (void **)&l->memo, l->n_memo, &l->cap_memo, sizeof *l->memo)) return;
    memo *m = &l->memo[l->n_memo++];
    m->node = id;
    m->stmt = stmt;
    m->depth = l->depth;
    memcpy(m->ix, ix, (size_t)l->g->nodes[id].shape.rank * sizeof *ix);
}

/* Records that the kernel computes node id (kept sorted, each node once). */
static void prov_add(lw *l, uint32_t id) {
    kd_kernel *kd = l->kd;
    uint32_t at = kd->n_prov;
    while (at && kd->prov[at - 1].node > id) at--;
    if (at && kd->prov[at - 1].node == id) return;
    if (!kd_reserve(kd, (void **)&kd->prov, kd->n_prov, &kd->cap_prov, sizeof *kd->prov)) return;
    memmove(&kd->prov[at + 1], &kd->prov[at], (kd->n_prov - at) * sizeof *kd->prov);
    const ir_node *n = &l->g->nodes[id];
    kd->prov[at] = (kd_prov){id, ir_ops[n->op].name, n->file, n->line};
    kd->n_prov++;
}

static uint32_t lower_value(lw *l, uint32_t id, const uint32_t *ix);

/* --------------------------------------------------------- leaves ---- */

static uint32_t lower_literal(lw *l, uint32_t id) {
    const ir_node *n = &l->g->nodes[id];
    kd_stmt s = {.kind = KS_LIT, .dtype = n->dtype, .node = id};
    switch (n->dtype) {
    case KILN_DTYPE_I32: s.lit.i = *(const int32_t *)n->data; break;
    case KILN_DTYPE_I64: s.lit.i = *(const int64_t *)n->data; break;
    case KILN_DTYPE_BOOL: s.lit.i = *(const uint8_t *)n->data; break;
    default: s.lit.f = ir_scalar_load(n->dtype, n->data, 0); break;
    }
    return emit(l, s);
}

static uint32_t lower_load(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    uint32_t slot = 0;
    while (slot < l->k->n_inputs && l->k->inputs[slot] != id) slot++;
    uint32_t lin = kd_ix_const(l->kd, 0);
    int64_t stride = 1;
    for (int a = n->shape.rank - 1; a >= 0; a--) {
        if (n->shape.dims[a] != 1) lin = kd_ix_affine(l->kd, lin, 1, ix[a], stride, 0);
        stride *= n->shape.dims[a];
    }
    return emit(l,
                (kd_stmt){.kind = KS_LOAD, .dtype = n->dtype, .node = id, .slot = slot, .ix = lin});
}

static uint32_t lower_elementwise(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    const uint32_t *in = ir_in(n);
    kd_stmt s = {.kind = KS_OP,
                 .dtype = n->dtype,
                 .op = n->op,
                 .node = id,
                 .n_args = n->n_in,
                 .attrs = &n->a};
    for (uint32_t i = 0; i < n->n_in; i++) s.args[i] = lower_value(l, in[i], ix);
    s.in_dtype = l->g->nodes[in[n->op == IR_SELECT ? 1 : 0]].dtype;
    l->int_arith |= ir_dtype_is_int(s.in_dtype);
    return emit(l, s);
}

/* ------------------------------------------------------ shape ops ---- */

/* Linearises the output index, then splits the linear position over the operand's axes;
 * the simplifier turns the pair back into plain axes wherever the reshape only merges,
 * splits whole axes or adds and removes unit axes. */
static void reshape_index(kd_kernel *kd, const ir_shape *os, const uint32_t *ix, const ir_shape *is,
                          uint32_t *sub) {
    uint32_t lin = kd_ix_const(kd, 0);
    int64_t stride = 1;
    for (int a = os->rank - 1; a >= 0; a--) {
        lin = kd_ix_affine(kd, lin, 1, ix[a], stride, 0);
        stride *= os->dims[a];
    }
    stride = 1;
    for (int a = is->rank - 1; a >= 0; a--) {
        int64_t d = is->dims[a] ? is->dims[a] : 1;
        sub[a] = kd_ix_mod(kd, kd_ix_div(kd, lin, stride), d);
        stride *= d;
    }
}

static uint32_t lower_reshape(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    uint32_t x = ir_in(n)[0], sub[KILN_MAX_RANK];
    reshape_index(l->kd, &n->shape, ix, &l->g->nodes[x].shape, sub);
    return lower_value(l, x, sub);
}

/* pad(x, v): v, and x where the index falls on one of x's elements. Guards that always
 * hold are dropped; with none left no branch is needed. */
static uint32_t lower_pad(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    kd_kernel *kd = l->kd;
    uint32_t x = ir_in(n)[0], sub[KILN_MAX_RANK], first = kd->n_guards;
    const ir_shape *is = &l->g->nodes[x].shape;
    for (int a = 0; a < is->rank; a++) {
        int64_t step = n->a.pad.interior[a] + 1;
        int64_t extent = is->dims[a] ? (is->dims[a] - 1) * step + 1 : 0;
        uint32_t t = kd_ix_affine(kd, ix[a], 1, 0, 0, -n->a.pad.lo[a]);
        kd_guard g[3];
        int ng = 0;
        if (kd->ixs[t].lo < 0) g[ng++] = (kd_guard){KD_GUARD_GE0, t, 0};
        if (kd->ixs[t].hi >= extent) g[ng++] = (kd_guard){KD_GUARD_LT, t, extent};
        if (step > 1) g[ng++] = (kd_guard){KD_GUARD_DIVIDES, t, step};
        for (int i = 0; i < ng; i++)
            if (kd_reserve(kd, (void **)&kd->guards, kd->n_guards, &kd->cap_guards,
                           sizeof *kd->guards))
                kd->guards[kd->n_guards++] = g[i];
        /* x is read only where every guard holds, so t is in 0..extent-1 there */
        sub[a] = kd_ix_div(kd, ng ? kd_ix_within(kd, t, 0, extent - 1) : t, step);
    }
    if (kd->n_guards == first) return lower_value(l, x, sub);
    uint32_t scalar[1] = {0}; /* the pad value is rank 0 */
    uint32_t pv = lower_value(l, ir_in(n)[1], scalar);
    uint32_t v = emit(
        l, (kd_stmt){.kind = KS_DECL, .dtype = n->dtype, .node = id, .n_args = 1, .args = {pv}});
    emit(l, (kd_stmt){.kind = KS_IF, .guard = first, .n_guards = kd->n_guards - first});
    scope_open(l);
    uint32_t xv = lower_value(l, x, sub);
    emit(l, (kd_stmt){.kind = KS_ASSIGN, .n_args = 2, .args = {v, xv}});
    scope_close(l);
    return v;
}

/* concatenate: an if / else-if chain on the concatenated axis; a branch whose guard
 * always holds ends the chain as its else, and with one branch no chain is needed. */
static uint32_t lower_concat(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    kd_kernel *kd = l->kd;
    int ax = n->a.axis;
    if (n->n_in == 1 || kd->ixs[ix[ax]].hi < l->g->nodes[ir_in(n)[0]].shape.dims[ax])
        return lower_value(l, ir_in(n)[0], ix);
    uint32_t v = emit(l, (kd_stmt){.kind = KS_DECL, .dtype = n->dtype, .node = id});
    int64_t off = 0;
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t x = ir_in(n)[i], sub[KILN_MAX_RANK];
        int64_t d = l->g->nodes[x].shape.dims[ax];
        bool last = i + 1 == n->n_in || kd->ixs[ix[ax]].hi < off + d;
        kd_stmt s = {.kind = KS_ELSE};
        if (!last) {
            s = (kd_stmt){.kind = i ? KS_ELSE_IF : KS_IF, .guard = kd->n_guards, .n_guards = 1};
            if (kd_reserve(kd, (void **)&kd->guards, kd->n_guards, &kd->cap_guards,
                           sizeof *kd->guards))
                kd->guards[kd->n_guards++] = (kd_guard){KD_GUARD_LT, ix[ax], off + d};
        }
        if (i) scope_forget(l); /* what the previous branch computed is not visible here */
        emit(l, s);
        if (!i) scope_open(l);
        memcpy(sub, ix, (size_t)n->shape.rank * sizeof *sub);
        /* earlier branches took everything below off, this one's guard what is past it */
        sub[ax] = kd_ix_within(kd, kd_ix_affine(kd, ix[ax], 1, 0, 0, -off), 0, d - 1);
        uint32_t xv = lower_value(l, x, sub);
        emit(l, (kd_stmt){.kind = KS_ASSIGN, .n_args = 2, .args = {v, xv}});
        off += d;
        if (last) break;
    }
    scope_close(l);
    return v;
}

/* take_rows(table, idx): the row idx names, clamped into the table. */
static uint32_t lower_take(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    uint32_t table = ir_in(n)[0], idx = ir_in(n)[1], sub[KILN_MAX_RANK];
    const ir_node *tn = &l->g->nodes[table], *in = &l->g->nodes[idx];
    int64_t rows = tn->shape.dims[0];
    if (rows == 0) /* nothing to take: only reachable when the output is empty */
        return emit(l, (kd_stmt){.kind = KS_LIT, .dtype = n->dtype, .node = id});
    uint32_t raw = lower_value(l, idx, ix);
    uint32_t row = emit(l, (kd_stmt){.kind = KS_CLAMP,
                                     .dtype = KILN_DTYPE_I64,
                                     .node = id,
                                     .n_args = 1,
                                     .args = {raw},
                                     .n = rows - 1});
    sub[0] = kd_ix_val(l->kd, row, 0, rows - 1);
    for (int a = 1; a < tn->shape.rank; a++) sub[a] = ix[in->shape.rank + a - 1];
    return lower_value(l, table, sub);
}

/* A dynamic slice's start on an axis of `dim` (operand k of node id), read in the kernel,
 * a negative one counted from the end (dim added: jax.lax's rule), then clamped into
 * [0, hi] as take_rows clamps its row; a constant 0 when the window fills the axis. */
static uint32_t dynamic_start(lw *l, uint32_t id, uint32_t k, int64_t dim, int64_t hi) {
    if (hi <= 0) return kd_ix_const(l->kd, 0);
    uint32_t scalar[1] = {0};
    uint32_t raw = lower_value(l, ir_in(&l->g->nodes[id])[k], scalar);
    uint32_t v = emit(l, (kd_stmt){.kind = KS_CLAMP,
                                   .dtype = KILN_DTYPE_I64,
                                   .node = id,
                                   .n_args = 1,
                                   .args = {raw},
                                   .n = hi,
                                   .wrap = dim});
    return kd_ix_val(l->kd, v, 0, hi);
}

/* dynamic_slice(x, starts): x at the index plus the clamped starts. */
static uint32_t lower_dynamic_slice(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    uint32_t x = ir_in(n)[0], sub[KILN_MAX_RANK];
    const ir_shape *xs = &l->g->nodes[x].shape;
    for (int a = 0; a < xs->rank; a++) {
        uint32_t st =
            dynamic_start(l, id, 1 + (uint32_t)a, xs->dims[a], xs->dims[a] - n->shape.dims[a]);
        sub[a] = kd_ix_affine(l->kd, ix[a], 1, st, 1, 0);
    }
    return lower_value(l, x, sub);
}

/* dynamic_update_slice(x, u, starts): a select on whether the index falls in the window,
 * u's element there, x's elsewhere. Axes whose window always holds the index need no
 * guard; with none left the result is u itself. */
static uint32_t lower_dynamic_update(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    kd_kernel *kd = l->kd;
    uint32_t x = ir_in(n)[0], u = ir_in(n)[1], sub[KILN_MAX_RANK], first = kd->n_guards;
    const ir_shape *us = &l->g->nodes[u].shape;
    int64_t count = 0;
    if (ir_shape_numel(us, &count) && count == 0) return lower_value(l, x, ix);
    for (int a = 0; a < us->rank; a++) {
        int64_t d = us->dims[a];
        uint32_t st = dynamic_start(l, id, 2 + (uint32_t)a, n->shape.dims[a], n->shape.dims[a] - d);
        uint32_t t = kd_ix_affine(kd, ix[a], 1, st, -1, 0);
        kd_guard g[2];
        int ng = 0;
        if (kd->ixs[t].lo < 0) g[ng++] = (kd_guard){KD_GUARD_GE0, t, 0};
        if (kd->ixs[t].hi >= d) g[ng++] = (kd_guard){KD_GUARD_LT, t, d};
        for (int i = 0; i < ng; i++)
            if (kd_reserve(kd, (void **)&kd->guards, kd->n_guards, &kd->cap_guards,
                           sizeof *kd->guards))
                kd->guards[kd->n_guards++] = g[i];
        sub[a] = ng ? kd_ix_within(kd, t, 0, d - 1) : t;
    }
    if (kd->n_guards == first) return lower_value(l, u, sub);
    uint32_t v = emit(l, (kd_stmt){.kind = KS_DECL, .dtype = n->dtype, .node = id});
    emit(l, (kd_stmt){.kind = KS_IF, .guard = first, .n_guards = kd->n_guards - first});
    scope_open(l);
    uint32_t uv = lower_value(l, u, sub);
    emit(l, (kd_stmt){.kind = KS_ASSIGN, .n_args = 2, .args = {v, uv}});
    scope_forget(l);
    emit(l, (kd_stmt){.kind = KS_ELSE});
    uint32_t xv = lower_value(l, x, ix);
    emit(l, (kd_stmt){.kind = KS_ASSIGN, .n_args = 2, .args = {v, xv}});
    scope_close(l);
    return v;
}

/* ------------------------------------------------------ reductions ---- */

static kd_reduce reduce_of(const ir_node *n) {
    bool fl = ir_dtype_is_float(n->dtype);
    kd_reduce r = {.op = n->op, .arith = n->op == IR_REDUCE_SUM || n->op == IR_REDUCE_PROD};
    r.acc_type = r.arith ? (fl ? KILN_DTYPE_F64 : KILN_DTYPE_I64) : ir_dtype_compute(n->dtype);
    r.init = n->op == IR_REDUCE_SUM    ? KD_INIT_ZERO
             : n->op == IR_REDUCE_PROD ? KD_INIT_ONE
             : n->op == IR_REDUCE_MAX  ? KD_INIT_LOWEST
                                       : KD_INIT_HIGHEST;
    r.nan_flag = fl && !r.arith;
    r.blocked = n->op == IR_REDUCE_SUM && ir_dtype_compute(n->dtype) == KILN_DTYPE_F32;
    return r;
}

/* The first axis of a run of reduced axes that ends x and is merged into one loop
 * (KD_MERGE_REDUCE), or the rank when there is none: the last axis short, at least two
 * axes, none empty, and not a kept row's reduction (its store indexes the last axis). */
static int merged_reduce_run(const lw *l, uint32_t id, const ir_shape *xs, uint32_t axes) {
    int r = xs->rank, first = r;
    if (r < 2 || id == l->keep_red || !(axes >> (r - 1) & 1u)) return r;
    if (xs->dims[r - 1] > KD_MERGE_REDUCE) return r;
    while (first > 0 && (axes >> (first - 1) & 1u)) first--;
    if (first > r - 2) return r;
    for (int a = first; a < r; a++)
        if (xs->dims[a] == 0) return r;
    return first;
}

/* Opens one loop per reduced axis of reduction id and fills sub, its operand's index:
 * kept axes from ix, reduced ones from the loop variables. A run of reduced axes that
 * ends the operand may be one loop (merged_reduce_run), its variable split back into the
 * axes by div and mod, which the index simplifier folds to the plain position where the
 * operand is read in order. Returns the innermost loop's statement (0 if no axis is
 * reduced) and counts the loops in *opened. */
static uint32_t open_reduce_loops(lw *l, uint32_t id, const uint32_t *ix, uint32_t *sub,
                                  int *opened) {
    const ir_node *n = &l->g->nodes[id];
    const ir_node *xn = &l->g->nodes[ir_in(n)[0]];
    uint32_t loop = 0;
    int kept = 0, run = merged_reduce_run(l, id, &xn->shape, n->a.reduce_axes);
    *opened = 0;
    for (int a = 0; a < xn->shape.rank; a++) {
        if (!(n->a.reduce_axes >> a & 1u)) {
            sub[a] = ix[kept++];
            continue;
        }
        if (a == run) { /* the rest of the axes, all reduced: one loop */
            int64_t d = 1;
            for (int b = a; b < xn->shape.rank; b++) d *= xn->shape.dims[b];
            uint32_t var = kd_var_new(l->kd, (kd_var){KD_VAR_REDUCE, a, id});
            uint32_t v = kd_ix_var(l->kd, var, 0, d - 1);
            int64_t stride = 1;
            for (int b = xn->shape.rank - 1; b >= a; b--) {
                sub[b] = kd_ix_mod(l->kd, kd_ix_div(l->kd, v, stride), xn->shape.dims[b]);
                stride *= xn->shape.dims[b];
            }
            loop = emit(l, (kd_stmt){.kind = KS_LOOP, .var = var, .n = d});
            scope_open(l);
            (*opened)++;
            break;
        }
        int64_t d = xn->shape.dims[a];
        uint32_t var = kd_var_new(l->kd, (kd_var){KD_VAR_REDUCE, a, id});
        sub[a] = kd_ix_var(l->kd, var, 0, d - 1);
        loop = emit(l, (kd_stmt){.kind = KS_LOOP, .var = var, .n = d});
        scope_open(l);
        (*opened)++;
    }
    return loop;
}

enum { KEEP_COST = 4 };
static bool costly(const lw *l, uint32_t u, int budget);

/* A float sum to one value (a loss) whose outer loop is long enough to cut into KD_PARTS
 * slices of KD_SMALL_SUM values or more is added in slices too: a kernel that computes
 * such a sum can split only by its slices, and one that computes its values inline (a
 * cross-entropy's rows of 32000 logits, fused into the mean over 512 rows) would otherwise
 * run on one thread. Decided by the reduction's own counts, as KD_SLICE_WORK is, so every
 * kernel that computes it adds it in the same order. */
static bool one_output_long(int64_t in, int64_t out, int64_t outer) {
    return out == 1 && outer >= KD_PARTS && in >= KD_PARTS * KD_SMALL_SUM;
}

static uint32_t lower_reduce(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    uint32_t sub[KILN_MAX_RANK];
    kd_reduce red = reduce_of(n);
    /* a scalar sum of at most KD_SMALL_SUM values goes straight into its f64 accumulator */
    int64_t in = 0, out = 0;
    bool sized = ir_shape_numel(&l->g->nodes[ir_in(n)[0]].shape, &in) &&
                 ir_shape_numel(&n->shape, &out) && out;
    if (red.blocked && sized && in / out <= KD_SMALL_SUM) red.blocked = false;
    uint32_t acc = emit(l, (kd_stmt){.kind = KS_ACC, .dtype = n->dtype, .node = id, .red = red});
    bool saved = l->int_arith;
    l->int_arith = false;
    int opened;
    uint32_t loop = open_reduce_loops(l, id, ix, sub, &opened);
    uint32_t xv = lower_value(l, ir_in(n)[0], sub);
    emit(l, (kd_stmt){.kind = KS_ACCUM, .node = id, .n_args = 2, .args = {acc, xv}});
    if (id == l->keep_red && l->in_prologue && opened == 1 && l->depth == 1) { /* kept */
        kd_kernel *kd = l->kd;
        uint32_t at = kd_ix_affine(kd, l->row_ix, kd->inner, sub[kd->rank - 1], 1, 0);
        emit(l, (kd_stmt){.kind = KS_STORE,
                          .slot = l->keep_slot,
                          .ix = at,
                          .n_args = 1,
                          .args = {xv},
                          .keep = true});
        l->kept = true;
    }
    if (loop) {
        l->kd->stmts[loop].acc = acc;
        /* few values an element: gcc unrolls the loop and vectorises the one around it */
        uint32_t x = ir_in(n)[0];
        bool cheap = l->p->materialised[x] || l->p->inline_const[x] || !costly(l, x, KEEP_COST);
        bool tiny = sized && in / out <= KD_TINY_REDUCE;
        bool few = sized && in / out <= KD_SHORT_REDUCE && cheap;
        l->kd->stmts[loop].few = few && opened == 1;
        bool across = !l->int_arith && !tiny && few && !l->in_prologue;
        l->kd->stmts[loop].simd = !l->int_arith && !tiny && !across;
        l->kd->stmts[loop].simd_narrow = across;
    }
    l->int_arith |= saved;
    while (opened--) scope_close(l);
    kd_kernel *kd = l->kd;
    /* a long float sum or product adds in slices (kdesc.h, KD_SLICE_WORK); its loops
     * start right after the accumulator. Long by the values it reduces, never by the work
     * of what the kernel computes inline to make them (kd_loop_work would count a fused
     * row reduction's loop too): the same reduction must add in the same order in every
     * kernel that computes it, its own or a recomputation's */
    if (loop && red.arith && ir_dtype_is_float(n->dtype) && !kd->oom && sized) {
        int64_t outer = kd->stmts[acc + 1].n;
        if (outer >= 2 && (in / out >= KD_SLICE_WORK || one_output_long(in, out, outer))) {
            kd->stmts[acc].slices = outer < KD_PARTS ? outer : KD_PARTS;
            kd->stmts[acc + 1].slice_acc = acc;
        }
    }
    return emit(
        l, (kd_stmt){.kind = KS_RESULT, .dtype = n->dtype, .node = id, .n_args = 1, .args = {acc}});
}

/* ---------------------------------------------------------- values ---- */

static uint32_t lower_compute(lw *l, uint32_t id, const uint32_t *ix) {
    const ir_node *n = &l->g->nodes[id];
    const uint32_t *in = ir_in(n);
    uint32_t sub[KILN_MAX_RANK];
    int rank = n->n_in ? l->g->nodes[in[0]].shape.rank : 0;
    switch (n->op) {
    case IR_IOTA:
        return emit(l, (kd_stmt){.kind = KS_IOTA,
                                 .dtype = n->dtype,
                                 .node = id,
                                 .ix = ix[n->a.axis],
                                 .n = n->shape.dims[n->a.axis]});
    case IR_BROADCAST:
        for (int a = 0; a < rank; a++)
            sub[a] = l->g->nodes[in[0]].shape.dims[a] == 1 ? kd_ix_const(l->kd, 0)
                                                           : ix[n->a.bcast_dims[a]];
        return lower_value(l, in[0], sub);
    case IR_TRANSPOSE:
        for (int a = 0; a < rank; a++) sub[n->a.perm[a]] = ix[a];
        return lower_value(l, in[0], sub);
    case IR_SLICE:
        for (int a = 0; a < rank; a++)
            sub[a] = kd_ix_affine(l->kd, ix[a], n->a.slice.stride[a], 0, 0, n->a.slice.start[a]);
        return lower_value(l, in[0], sub);
    case IR_RESHAPE: return lower_reshape(l, id, ix);
    case IR_PAD: return lower_pad(l, id, ix);
    case IR_CONCAT: return lower_concat(l, id, ix);
    case IR_TAKE_ROWS: return lower_take(l, id, ix);
    case IR_DYNAMIC_SLICE: return lower_dynamic_slice(l, id, ix);
    case IR_DYNAMIC_UPDATE_SLICE: return lower_dynamic_update(l, id, ix);
    default:
        if (kd_ix_map(l->kd, n, ix, sub)) return lower_value(l, in[0], sub); /* rev */
        break;
    }
    if (ir_ops[n->op].kind == IRK_REDUCE) return lower_reduce(l, id, ix);
    return lower_elementwise(l, id, ix);
}

static uint32_t lower_value(lw *l, uint32_t id, const uint32_t *ix) {
    if (l->kd->oom) return 0;
    if (l->p->inline_const[id]) return lower_literal(l, id);
    uint32_t hit = memo_find(l, id, ix);
    if (hit) return hit;
    if (id == l->keep_node && l->kept && !l->in_prologue) {
        bool at_element = true;
        for (int a = 0; a < l->kd->rank && at_element; a++)
            at_element = kd_ix_equal(l->kd, ix[a], l->elem_ix[a]);
        if (at_element) { /* the value the prologue kept in the output row */
            uint32_t at = kd_ix_affine(l->kd, l->row_ix, l->kd->inner, ix[l->kd->rank - 1], 1, 0);
            uint32_t v = emit(l, (kd_stmt){.kind = KS_LOAD,
                                           .dtype = l->g->nodes[id].dtype,
                                           .node = id,
                                           .slot = l->keep_slot,
                                           .ix = at,
                                           .keep = true});
            memo_add(l, id, ix, v);
            return v;
        }
    }
    bool root = false; /* a kernel computes its roots; other buffers it reads */
    for (uint32_t r = 0; r < l->k->n_roots; r++) root |= l->k->roots[r] == id;
    uint32_t v;
    if (l->p->materialised[id] && !root)
        v = lower_load(l, id, ix);
    else {
        prov_add(l, id);
        v = lower_compute(l, id, ix);
    }
    memo_add(l, id, ix, v);
    return v;
}

/* ---------------------------------------------------------- kernel ---- */

/* Whether inlined node u of the kernel costs at least budget per element (with what it
 * computes inline: a transcendental, a division, at KEEP_COST), so that keeping it beats
 * recomputing. */
static bool costly(const lw *l, uint32_t u, int budget) {
    const ir_node *n = &l->g->nodes[u];
    budget -= ir_ops[n->op].cost;
    for (uint32_t i = 0; i < n->n_in && budget > 0; i++) {
        uint32_t x = ir_in(n)[i];
        if (!l->p->materialised[x] && !l->p->inline_const[x] && costly(l, x, budget)) return true;
    }
    return budget <= 0;
}

/* A kept value for the kernel (kd_stmt.keep): the operand u of a reduction over the row
 * that the kernel's elements also read (a softmax's exp(x - max), in its sum and in its
 * result), costly to compute again, kept in a root's output row of u's dtype. Not in place
 * (the output row may be an input row the elements still read) nor in the column form
 * (its items are chunks of a row). `uses` counts each node's consumers in the kernel. */
static void choose_keep(lw *l, const uint8_t *seen, const uint8_t *uses) {
    const kiln_graph *g = l->g;
    const kd_kernel *kd = l->kd;
    int r = kd->rank;
    if (kd->in_place) return;
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (!seen[id] || ir_ops[n->op].kind != IRK_REDUCE) continue;
        uint32_t u = ir_in(n)[0];
        const ir_shape *us = &g->nodes[u].shape;
        if (n->a.reduce_axes != 1u << (r - 1) || us->rank != r ||
            memcmp(us->dims, kd->dims, (size_t)r * sizeof *us->dims) || l->p->materialised[u] ||
            l->p->inline_const[u] || uses[u] < 2 || !costly(l, u, KEEP_COST))
            continue;
        for (uint32_t o = 0; o < l->k->n_roots; o++)
            if (kd->out_type[o] == g->nodes[u].dtype) {
                l->keep_red = id, l->keep_node = u, l->keep_slot = o;
                return;
            }
    }
}

/* The kernel's row values (fusion.h), computed at the row's index ahead of its elements:
 * walks the kernel's inlined expression from its roots and lowers each row value it finds
 * (in node order, so one that another's reduction reads comes first) at the leading axes'
 * indices (and 0 for a kept unit axis). A row value of a kernel whose index space is its
 * own shape (a logsumexp's max, in the kernel of a logsumexp without keepdims) is one per
 * element there: it is recorded for lower_row_elements, which computes it first in the
 * element loop. Else the first use to lower it might be inside the loop of the row's sum,
 * whose scope forgets it: it was computed again for every value summed, N^2 a row. Sets
 * kd->prologue when it lowered any; `keep`: the prologue may keep a value for the elements
 * (choose_keep). */
static void lower_rows(lw *l, const uint32_t *ix, bool keep) {
    const kiln_graph *g = l->g;
    kd_kernel *kd = l->kd;
    if (kd->rank < 1) return;
    /* seen: 1 inlined here, 2 a row value; uses: consumers in the kernel (up to 2) */
    uint8_t *seen = host_calloc(kd->ctx, g->n_nodes, 1),
            *uses = host_calloc(kd->ctx, g->n_nodes, 1);
    uint32_t *stack = host_calloc(kd->ctx, g->n_nodes, sizeof *stack), sp = 0, lo = UINT32_MAX;
    if (!seen || !uses || !stack) kd->oom = true;
    for (uint32_t r = 0; !kd->oom && r < l->k->n_roots; r++) {
        stack[sp++] = l->k->roots[r];
        seen[l->k->roots[r]] = 1;
    }
    while (sp) {
        uint32_t id = stack[--sp];
        const ir_node *n = &g->nodes[id];
        if (l->p->row[id]) {
            seen[id] = 2;
            lo = id < lo ? id : lo;
        }
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = ir_in(n)[i];
            bool again = false;
            for (uint32_t j = 0; j < i; j++) again |= ir_in(n)[j] == x;
            if (!again && uses[x] < 2) uses[x]++;
            if (seen[x] || l->p->materialised[x] || l->p->inline_const[x]) continue;
            seen[x] = 1;
            stack[sp++] = x;
        }
    }
    if (keep && lo != UINT32_MAX && !kd->oom) choose_keep(l, seen, uses);
    l->in_prologue = true;
    for (uint32_t id = lo; !kd->oom && id < g->n_nodes; id++) {
        if (seen[id] != 2) continue;
        const ir_shape *s = &g->nodes[id].shape;
        int r = kd->rank;
        bool lead = r >= 2 && (s->rank == r - 1 || (s->rank == r && s->dims[r - 1] == 1));
        for (int a = 0; lead && a < r - 1; a++) lead = s->dims[a] == kd->dims[a];
        bool elem = s->rank == r || (s->rank == r + 1 && s->dims[r] == 1);
        for (int a = 0; elem && a < r; a++) elem = s->dims[a] == kd->dims[a];
        if (!lead && elem && l->n_elem_rows < KD_MAX_ELEM_ROWS) {
            l->elem_unit[l->n_elem_rows] = s->rank == r + 1;
            l->elem_rows[l->n_elem_rows++] = id;
        }
        if (!lead) continue;
        uint32_t sub[KILN_MAX_RANK];
        memcpy(sub, ix, (size_t)(r - 1) * sizeof *sub);
        if (s->rank == r) sub[r - 1] = kd_ix_const(kd, 0);
        lower_value(l, id, sub);
        kd->prologue = true;
    }
    l->in_prologue = false;
    host_free(kd->ctx, seen, g->n_nodes);
    host_free(kd->ctx, uses, g->n_nodes);
    host_free(kd->ctx, stack, g->n_nodes * sizeof *stack);
}

/* Whether shapes a and b are the same but for axes of size 1. */
static bool same_but_units(const ir_shape *a, const ir_shape *b) {
    int i = 0, j = 0;
    for (;;) {
        while (i < a->rank && a->dims[i] == 1) i++;
        while (j < b->rank && b->dims[j] == 1) j++;
        if (i == a->rank || j == b->rank) return i == a->rank && j == b->rank;
        if (a->dims[i++] != b->dims[j++]) return false;
    }
}

/* The column form. A kernel whose reductions keep the last axis (a column sum, a bias
 * gradient; a layer norm's gain and bias gradients side by side; the mean over a sequence
 * of gathered embedding rows) would, element by element, walk its reduced axes with a
 * stride of a whole row (of the table, for a gather). It keeps a row of accumulators per
 * reduction instead and walks the operands row by row: reduce loops outside, the chunk of
 * the last axis inside, contiguous and vectorised. Then a second loop over the chunk
 * takes each reduction's result and computes the roots from them (a mean's scaling, a
 * bias added). The reductions share the reduce loops, so what their operands have in
 * common is computed once.
 *
 * It applies when the reductions reached from the roots through elementwise ops and
 * reshapes that only add or drop unit axes (keepdims; so needed at the roots' own index)
 * all reduce the same axes of operands of one shape, have the roots' shape but for unit
 * axes, the roots' last axis as theirs, and keep their operand's last axis; they are
 * returned in reds[]. Any other reduction (under a broadcast, say) is lowered per element
 * in the second loop as usual. */

static uint32_t column_reductions(const lw *l, uint32_t *reds) {
    enum { MAX_WALK = 256 };
    const kiln_graph *g = l->g;
    const fkernel *k = l->k;
    uint32_t n = 0, stack[MAX_WALK], top = 0, steps = 0;
    const ir_shape *rs = &g->nodes[k->roots[0]].shape;
    if (rs->rank < 1 || k->n_roots > MAX_WALK) return 0;
    for (uint32_t r = 0; r < k->n_roots; r++) {
        const ir_shape *s = &g->nodes[k->roots[r]].shape;
        if (s->rank != rs->rank || memcmp(s->dims, rs->dims, (size_t)s->rank * sizeof *s->dims))
            return 0;
        stack[top++] = k->roots[r];
    }
    while (top) {
        uint32_t id = stack[--top];
        const ir_node *nd = &g->nodes[id];
        if (++steps > 4 * MAX_WALK) return 0; /* a huge elementwise tree: not worth it */
        bool root = false;
        for (uint32_t r = 0; r < k->n_roots; r++) root |= k->roots[r] == id;
        if (l->p->inline_const[id] || (l->p->materialised[id] && !root)) continue;
        if (ir_ops[nd->op].kind == IRK_REDUCE) {
            bool seen = false;
            for (uint32_t i = 0; i < n; i++) seen |= reds[i] == id;
            if (seen) continue;
            if (n == KD_MAX_COLUMN_ROOTS) return 0;
            reds[n++] = id;
            continue;
        }
        bool unit_reshape =
            nd->op == IR_RESHAPE && same_but_units(&nd->shape, &g->nodes[ir_in(nd)[0]].shape);
        if (!(ir_ops[nd->op].flags & IRF_ELEMENTWISE) && !unit_reshape) continue;
        for (uint32_t i = 0; i < nd->n_in; i++) {
            if (top == MAX_WALK) return 0;
            stack[top++] = ir_in(nd)[i];
        }
    }
    if (!n) return 0;
    const ir_node *n0 = &g->nodes[reds[0]];
    const ir_shape *x0 = &g->nodes[ir_in(n0)[0]].shape;
    /* a last axis of 1: an element's reduction walks its operand's contiguous axes */
    if (!same_but_units(&n0->shape, rs) || !n0->shape.rank || rs->dims[rs->rank - 1] == 1 ||
        n0->shape.dims[n0->shape.rank - 1] != rs->dims[rs->rank - 1])
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const ir_node *nd = &g->nodes[reds[i]];
        const ir_shape *xs = &g->nodes[ir_in(nd)[0]].shape;
        if (nd->a.reduce_axes != n0->a.reduce_axes || xs->rank != x0->rank ||
            memcmp(xs->dims, x0->dims, (size_t)xs->rank * sizeof *xs->dims))
            return 0; /* so of n0's shape, too */
    }
    return n0->a.reduce_axes >> (x0->rank - 1) & 1u ? 0 : n;
}

static void lower_row_elements(lw *l, const uint32_t *ix);

static void lower_columns(lw *l, const uint32_t *reds, uint32_t n_reds, const uint32_t *ix,
                          uint32_t store_ix) {
    kd_kernel *kd = l->kd;
    const fkernel *k = l->k;
    uint32_t acc[KD_MAX_COLUMN_ROOTS], sub[KILN_MAX_RANK];
    kd->columns = true;
    for (uint32_t i = 0; i < n_reds; i++) {
        const ir_node *n = &l->g->nodes[reds[i]];
        prov_add(l, reds[i]);
        acc[i] = emit(l, (kd_stmt){.kind = KS_ACC,
                                   .dtype = n->dtype,
                                   .node = reds[i],
                                   .red = reduce_of(n),
                                   .column = true,
                                   .var = kd->last_var});
    }
    /* the reductions' index: the roots' but for unit axes, as their reshapes compute it */
    uint32_t rix[KILN_MAX_RANK];
    reshape_index(kd, &l->g->nodes[k->roots[0]].shape, ix, &l->g->nodes[reds[0]].shape, rix);
    int opened;
    uint32_t inner = open_reduce_loops(l, reds[0], rix, sub, &opened);
    if (inner) kd->stmts[inner].col_block = true;
    l->int_arith = false;
    uint32_t loop = emit(l, (kd_stmt){.kind = KS_LOOP, .var = kd->last_var, .n = -1});
    scope_open(l);
    for (uint32_t i = 0; i < n_reds; i++) {
        uint32_t xv = lower_value(l, ir_in(&l->g->nodes[reds[i]])[0], sub);
        emit(l, (kd_stmt){.kind = KS_ACCUM, .node = reds[i], .n_args = 2, .args = {acc[i], xv}});
    }
    kd->stmts[loop].simd = !l->int_arith;
    scope_close(l);
    while (opened--) scope_close(l);
    emit(l, (kd_stmt){.kind = KS_LOOP, .var = kd->last_var, .n = -1});
    scope_open(l);
    lower_row_elements(l, ix);
    for (uint32_t i = 0; i < n_reds; i++) {
        uint32_t v = emit(l, (kd_stmt){.kind = KS_RESULT,
                                       .dtype = l->g->nodes[reds[i]].dtype,
                                       .node = reds[i],
                                       .n_args = 1,
                                       .args = {acc[i]}});
        memo_add(l, reds[i], rix, v);
    }
    /* in place, every root's element before any store, as in lower_elements */
    for (uint32_t i = 0; kd->in_place && k->n_roots > 1 && i < k->n_roots; i++)
        lower_value(l, k->roots[i], ix);
    for (uint32_t i = 0; i < k->n_roots; i++) {
        uint32_t v = lower_value(l, k->roots[i], ix);
        emit(l, (kd_stmt){.kind = KS_STORE, .slot = i, .ix = store_ix, .n_args = 1, .args = {v}});
    }
    scope_close(l);
}

/* The row values recorded as one per element (lower_rows), at the element's index: first
 * in the element loop, so every later use there finds them memoised. */
static void lower_row_elements(lw *l, const uint32_t *ix) {
    for (uint32_t i = 0; i < l->n_elem_rows; i++) {
        uint32_t sub[KILN_MAX_RANK];
        memcpy(sub, ix, (size_t)l->kd->rank * sizeof *sub);
        if (l->elem_unit[i]) sub[l->kd->rank] = kd_ix_const(l->kd, 0);
        lower_value(l, l->elem_rows[i], sub);
    }
}

/* Each root's element, then its store. In place with several roots, every root's element
 * first and then the stores: a root written over an input must not clobber an element
 * that another root reads after it (a root not lowered yet, or a load of that element
 * through another index expression). The second pass finds the values memoised. */
static void lower_elements(lw *l, const uint32_t *ix, uint32_t store_ix) {
    /* with a kept value, too: it lies in a root's output, which that root's store overwrites */
    bool defer = (l->kd->in_place || l->kept) && l->k->n_roots > 1;
    bool saved = l->int_arith;
    l->int_arith = false;
    uint32_t loop = emit(l, (kd_stmt){.kind = KS_LOOP, .var = l->kd->last_var, .n = -1});
    scope_open(l);
    lower_row_elements(l, ix);
    for (uint32_t i = 0; defer && i < l->k->n_roots; i++) lower_value(l, l->k->roots[i], ix);
    for (uint32_t i = 0; i < l->k->n_roots; i++) {
        uint32_t v = lower_value(l, l->k->roots[i], ix);
        emit(l, (kd_stmt){.kind = KS_STORE, .slot = i, .ix = store_ix, .n_args = 1, .args = {v}});
    }
    /* In place, the outputs written over inputs are not restrict, and the compiler will
     * not vectorise the loop behind so many possibly-aliasing pointers (a fused Adam
     * update stayed scalar, far below the copy bandwidth: bench/RESULTS.md, "Quiet machine,
     * all branches merged: the figures that close issues 9, 10 and 14"). The planner only writes
     * in place where element e of an output reads nothing but element e of the buffer it
     * overwrites, so iterations are independent and the loop may be declared simd. Only
     * for a straight-line body without integer arithmetic (see kd_stmt.simd). So too where
     * the elements read a kept value back from their output row (choose_keep), element e
     * of it only: over rows of 16 gcc unrolled the loop completely and left a softmax's
     * division as 16 scalar divides (the pragma measured clearly faster: bench/RESULTS.md,
     * "Rows of 8 and 16: a NaN flag as wide as the value, and simd elements after a kept
     * value"). */
    bool straight = true;
    for (uint32_t s = loop + 1; s < l->kd->n_stmts && straight; s++)
        straight = l->kd->stmts[s].kind != KS_LOOP;
    if ((l->kd->in_place || l->kept) && straight && !l->int_arith && !l->kd->oom)
        l->kd->stmts[loop].simd = true;
    l->int_arith |= saved;
    scope_close(l);
}

/* Enough items per parallel chunk for ~32K element-operations. */
static int64_t grain(const kiln_graph *g, const fkernel *k, const kd_kernel *kd, int64_t numel) {
    int64_t per_item = (kd->chunks > 1 ? kd->chunk : kd->inner) * (k->n_members ? k->n_members : 1);
    int64_t red = 1;
    for (uint32_t i = 0; i < k->n_inputs; i++) {
        int64_t m = 0;
        ir_shape_numel(&g->nodes[k->inputs[i]].shape, &m);
        if (numel && m / numel > red) red = m / numel;
    }
    per_item *= red;
    return per_item >= 32768 ? 1 : 32768 / (per_item ? per_item : 1);
}

/* The work split for a chunk of the last axis: chunks per row, items, the pool's grain. */
static void set_chunk(lw *l, int64_t chunk) {
    kd_kernel *kd = l->kd;
    int64_t numel = kd->rows * kd->inner;
    kd->chunk = chunk;
    kd->chunks = kd->inner > chunk ? (kd->inner + chunk - 1) / chunk : 1;
    kd->items = numel ? kd->rows * kd->chunks : 0;
    kd->grain = grain(l->g, l->k, kd, numel);
}

/* Whether the kernel inlines a reduction or a row value: its index space then stays the
 * roots' shape (row values and the column form are per row of it). */
static bool inlines_reduction(const lw *l) {
    const kiln_graph *g = l->g;
    kd_kernel *kd = l->kd;
    uint8_t *seen = host_calloc(kd->ctx, g->n_nodes, 1);
    uint32_t *stack = host_calloc(kd->ctx, g->n_nodes, sizeof *stack), sp = 0;
    bool found = false;
    if (!seen || !stack) kd->oom = found = true;
    for (uint32_t r = 0; !found && r < l->k->n_roots; r++)
        if (!seen[l->k->roots[r]]) seen[stack[sp++] = l->k->roots[r]] = 1;
    while (sp && !found) {
        uint32_t id = stack[--sp];
        const ir_node *n = &g->nodes[id];
        found = ir_ops[n->op].kind == IRK_REDUCE || l->p->row[id];
        for (uint32_t i = 0; i < n->n_in; i++) {
            uint32_t x = ir_in(n)[i];
            if (seen[x] || l->p->materialised[x] || l->p->inline_const[x]) continue;
            seen[stack[sp++] = x] = 1;
        }
    }
    host_free(kd->ctx, seen, g->n_nodes);
    host_free(kd->ctx, stack, g->n_nodes * sizeof *stack);
    return found;
}

/* kd_kernel.merged (kdesc.h, KD_SHORT_ROW): the extent of a short last axis that an
 * elementwise kernel's index space folds into the axis before it, or 0. */
static int64_t short_last_axis(const lw *l, const ir_shape *s) {
    int r = s->rank;
    if (r < 2 || s->dims[r - 1] < 2 || s->dims[r - 1] >= KD_SHORT_ROW || s->dims[r - 2] < 2)
        return 0;
    return inlines_reduction(l) ? 0 : s->dims[r - 1];
}

/* The index space, its split into items and the leading axes' values from the row; ix gets
 * the roots' multi-index (with a merged last axis, its two axes from the space's last). */
static void lower_space(lw *l, const ir_node *rn, uint32_t *ix, uint32_t *store_ix) {
    kd_kernel *kd = l->kd;
    int r = rn->shape.rank;
    int64_t numel = 0;
    ir_shape_numel(&rn->shape, &numel);
    *l->can_merge = short_last_axis(l, &rn->shape) > 0;
    kd->merged = l->merge && *l->can_merge ? rn->shape.dims[r - 1] : 0;
    kd->rank = kd->merged ? r - 1 : r;
    memcpy(kd->dims, rn->shape.dims, (size_t)kd->rank * sizeof *kd->dims);
    if (kd->merged) kd->dims[r - 2] *= kd->merged;
    r = kd->rank;
    kd->inner = r ? kd->dims[r - 1] : 1;
    kd->rows = kd->inner ? numel / kd->inner : 0;
    /* a merged axis' chunks hold whole rows of the roots (kd->split divides them) */
    set_chunk(l, kd->merged ? KD_CHUNK / kd->merged * kd->merged : KD_CHUNK);
    kd->row_var = kd_var_new(kd, (kd_var){.kind = KD_VAR_ROW});
    kd->last_var = kd_var_new(kd, (kd_var){KD_VAR_AXIS, r ? r - 1 : 0, 0});
    uint32_t row = kd_ix_var(kd, kd->row_var, 0, kd->rows - 1);
    /* atoms in axis order, so that printed indices read i0 * n + i1 */
    for (int a = 0; a + 1 < r; a++) {
        kd->axis_var[a] = kd_var_new(kd, (kd_var){KD_VAR_AXIS, a, 0});
        ix[a] = kd_ix_var(kd, kd->axis_var[a], 0, kd->dims[a] - 1);
    }
    uint32_t last = kd_ix_var(kd, kd->last_var, 0, kd->inner - 1);
    int64_t div = 1;
    for (int a = r - 2; a >= 0; a--) {
        int64_t d = kd->dims[a] ? kd->dims[a] : 1; /* 0: the kernel never runs */
        kd->axis_def[a] = kd_ix_mod(kd, kd_ix_div(kd, row, div), d);
        div *= d;
    }
    if (r) ix[r - 1] = last;
    if (kd->merged) {
        ix[r - 1] = kd_ix_div(kd, last, kd->merged);
        ix[r] = kd_ix_mod(kd, last, kd->merged);
    }
    *store_ix = kd_ix_affine(kd, row, kd->inner, last, 1, 0);
    l->row_ix = row;
    memcpy(l->elem_ix, ix, (size_t)rn->shape.rank * sizeof *ix);
}

bool kd_ix_is_last(const kd_kernel *kd, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    if (x->c || x->n != 1 || kd->terms[x->first].coef != 1) return false;
    const kd_atom *a = &kd->atoms[kd->terms[x->first].atom];
    return a->kind == KD_ATOM_VAR && a->arg == kd->last_var;
}

/* kd->chunk (kdesc.h, KD_ITEM_WORK): halved while an item of heavy elements holds more
 * work than one thread should take alone; then the items and the pool's grain again.
 * Shapes only decide it, so the result does not depend on the thread count (and an
 * element's reduction runs whole, in one item, in the same order whatever its chunk). */
static void choose_chunk(lw *l) {
    kd_kernel *kd = l->kd;
    int64_t w = kd->n_stmts > 1 ? kd_loop_work(kd, 1) : 1, chunk = kd->chunk;
    if (w <= 1) return;
    int64_t least = kd->columns ? KD_COLUMN_CHUNK_MIN : KD_CHUNK_MIN;
    while (chunk > least && w > KD_ITEM_WORK / chunk) chunk /= 2;
    set_chunk(l, chunk);
}

static kiln_status lower_kernel(const kiln_graph *g, const fusion_plan *p, uint32_t ki,
                                kd_kernel *kd, bool merge, bool *can_merge) {
    const fkernel *k = &p->kernels[ki];
    *kd = (kd_kernel){.ctx = g->ctx,
                      .index = ki,
                      .n_inputs = k->n_inputs,
                      .n_outputs = k->n_roots,
                      .in_node = k->inputs,
                      .out_node = k->roots,
                      .alias = k->alias};
    for (uint32_t r = 0; k->alias && r < k->n_roots; r++) kd->in_place |= k->alias[r] != 0;
    lw l = {.kd = kd, .g = g, .p = p, .k = k, .merge = merge, .can_merge = can_merge};
    *can_merge = false;
    kd->in_type = host_calloc(kd->ctx, k->n_inputs + 1, sizeof *kd->in_type);
    kd->out_type = host_calloc(kd->ctx, k->n_roots + 1, sizeof *kd->out_type);
    if (!kd->in_type || !kd->out_type) kd->oom = true;
    for (uint32_t i = 0; !kd->oom && i < k->n_inputs; i++)
        kd->in_type[i] = g->nodes[k->inputs[i]].dtype;
    for (uint32_t i = 0; !kd->oom && i < k->n_roots; i++)
        kd->out_type[i] = g->nodes[k->roots[i]].dtype;
    /* id 0 of statements and indices must exist: 0 is what a failed builder returns */
    emit(&l, (kd_stmt){.kind = KS_LIT});
    kd_ix_const(kd, 0);
    if (!kd->oom) {
        uint32_t ix[KILN_MAX_RANK] = {0}, store_ix = 0;
        lower_space(&l, &g->nodes[k->roots[0]], ix, &store_ix);
        uint32_t reds[KD_MAX_COLUMN_ROOTS];
        uint32_t n_reds = column_reductions(&l, reds);
        lower_rows(&l, ix, !n_reds);
        if (n_reds)
            lower_columns(&l, reds, n_reds, ix, store_ix);
        else
            lower_elements(&l, ix, store_ix);
    }
    host_free(kd->ctx, l.memo, l.cap_memo * sizeof *l.memo);
    /* a row's values are computed once per item, so with them an item is a whole row (but
     * in the column form, whose accumulators are a chunk wide: there each chunk computes
     * them again) */
    if (!kd->oom && kd->prologue && !kd->columns)
        set_chunk(&l, kd->inner > 0 ? kd->inner : 1);
    else if (!kd->oom)
        choose_chunk(&l);
    int64_t tile = kd->oom || kd->rows < 2 ? 0 : kd_sched_tile(kd);
    if (tile) {
        kd->tiled = true;
        set_chunk(&l, tile);
    }
    if (!kd->oom) kd->split = kd_sched_split(kd);
    if (!kd->oom && !kd->split && !kd->columns && !kd->prologue)
        kd->row_block = kd_sched_row_block(kd);
    if (!kd->oom) kd_sched_parts(kd);
    if (!kd->oom) kd->prologue_rows = kd_sched_prologue_rows(kd);
    if (kd->oom) return ctx_oom(g->ctx, "codegen: kernel description", 0);
    return KILN_STATUS_OK;
}

/* Whether a load reads at a leading axis' index that the item divides out of the row (one
 * that does not fold into the row's linear offset: a transpose's). */
static bool reads_row_axes(const kd_kernel *kd) {
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind != KS_LOAD) continue;
        const kd_index *x = &kd->ixs[st->ix];
        for (uint32_t i = 0; i < x->n; i++) {
            const kd_atom *at = &kd->atoms[kd->terms[x->first + i].atom];
            for (int a = 0; at->kind == KD_ATOM_VAR && a + 1 < kd->rank; a++) {
                const kd_index *d = &kd->ixs[kd->axis_def[a]];
                bool divided = d->n == 1 && kd->atoms[kd->terms[d->first].atom].kind != KD_ATOM_VAR;
                if (at->arg == kd->axis_var[a] && kd->dims[a] > 1 && divided) return true;
            }
        }
    }
    return false;
}

/* Whether some statement opens a branch. */
static bool has_branch(const kd_kernel *kd) {
    for (uint32_t s = 1; s < kd->n_stmts; s++)
        if (kd->stmts[s].kind == KS_IF) return true;
    return false;
}

/* A short last axis is merged (kdesc.h, KD_SHORT_ROW) only where it pays: where the rows'
 * loads read at their leading axes' divisions (NCHW -> NHWC; a plain [R, 3] row form runs
 * without a division and gcc vectorises its unrolled rows: a broadcast (x - m) * m over
 * rows of 3 ran faster as rows than merged), and where the merged elements index it
 * through the split alone and run straight through. Where they also divide the merged
 * variable otherwise (a reshape's other axes: [T, 2P] seen as [T, P, 2]) or branch (a
 * concatenate or pad along the short axis, which the segmented loop serves better: [R, 4]
 * and [R, 4] concatenated ran faster as rows), the kernel is lowered on the roots' shape
 * (bench/RESULTS.md, "NCHW to NHWC with few channels: the short axis merged into the one
 * before"). */
kiln_status kd_lower(const kiln_graph *g, const fusion_plan *p, uint32_t ki, kd_kernel *kd) {
    bool can = false;
    kiln_status s = lower_kernel(g, p, ki, kd, false, &can);
    if (s != KILN_STATUS_OK || !can || !reads_row_axes(kd)) return s;
    kd_free(kd);
    s = lower_kernel(g, p, ki, kd, true, &can);
    if (s != KILN_STATUS_OK ||
        (kd->split == kd->merged && kd_split_alone(kd, kd->split, false) && !has_branch(kd)))
        return s;
    kd_free(kd);
    return lower_kernel(g, p, ki, kd, false, &can);
}

void kd_free(kd_kernel *kd) {
    kiln_context *ctx = kd->ctx;
    if (!ctx) return;
    host_free(ctx, kd->in_type, (kd->n_inputs + 1) * sizeof *kd->in_type);
    host_free(ctx, kd->out_type, (kd->n_outputs + 1) * sizeof *kd->out_type);
    host_free(ctx, kd->vars, kd->cap_vars * sizeof *kd->vars);
    host_free(ctx, kd->atoms, kd->cap_atoms * sizeof *kd->atoms);
    host_free(ctx, kd->terms, kd->cap_terms * sizeof *kd->terms);
    host_free(ctx, kd->ixs, kd->cap_ixs * sizeof *kd->ixs);
    host_free(ctx, kd->guards, kd->cap_guards * sizeof *kd->guards);
    host_free(ctx, kd->stmts, kd->cap_stmts * sizeof *kd->stmts);
    host_free(ctx, kd->prov, kd->cap_prov * sizeof *kd->prov);
    *kd = (kd_kernel){0};
}
