/* inplace.c — which inputs a kernel may overwrite with its own results.
 *
 * A LOOP kernel computes out_r[i] for each element i of its roots (all of one shape, i
 * counted row-major), reading its inputs through the inlined expressions (codegen's
 * elemental lowering, src/codegen/lower.c). Writing out_r[i] over an input is safe exactly
 * when every read of that input in the whole kernel — by any root's expression — is of
 * its element i itself: then element i is read before it is written (codegen computes
 * every root's element i before storing any of them when several roots run in place) and
 * no other element's computation ever looks at it, whatever order or threads the items
 * run in. A root read by another root's expression is computed inline there (it is not
 * loaded), so the walk goes through it as through any inlined node.
 *
 * So the walk starts at every root with "same element" and keeps it only through ops that
 * read their operand at the same row-major position: elementwise ops (unary, binary,
 * select, convert: same multi-index, same shape), reshape (a row-major reshape keeps
 * every element's position) and a dynamic update's operand (read, outside the window, at
 * the element itself: a KV cache's update runs over the donated cache). Any other op —
 * broadcast, transpose, slice, concatenate, pad, a reduction, a gather — reads its operand
 * at other positions, and everything below it is read at "some position". An input
 * reached even once at some position is not legal. An input reached only at the same
 * position has the root's element count (every op on the way keeps it), hence, with equal
 * byte sizes (the planner checks them), the same element size and the very bytes of each
 * element it is read for. Which root takes which legal input is the planner's choice
 * (plan.c: one root per input).
 *
 * A row kernel (one with row values, fusion.h) has a third way: its work items are whole
 * rows, and it computes a row's values (lower.c's prologue) before it stores any element
 * of that row. So an input read inside a row value at positions of the same row only —
 * through ops that keep the rows: elementwise ops, reductions and broadcasts along the
 * last axis, the keepdims reshape — has been read before the row is written, and may be
 * overwritten too (x - mean(x) in place over x). Not when a reduction is read at the
 * element being computed (the column form, lower.c, whose items are chunks of a row that
 * each compute the row's values again).
 *
 * A node can be reached in several ways through different paths, so the walk keeps a
 * visited mark per node and way. DOT kernels never run in place (BLAS reads whole rows and columns
 * while writing). A while or scan CONTROL kernel may write carry j's result over its initial
 * value, when that value is no other input of the node (another carry's initial value, a
 * scanned array, a capture): the loop copies each initial carry into its result, in order,
 * before it reads any other input (run_control.c, which skips the copy of a value onto
 * itself), and its carries then run in place inside, over its body's donated parameters;
 * which result takes which input is fixed (plan.c pairs carry j's result with its own
 * initial value). A cond's results are its branch's outputs, written while the branch
 * reads its operands: never in place. A SCATTER kernel copies its operand to the output and
 * then adds rows into it, so the operand may be overwritten unless it also serves as indices
 * or updates. */
#include "plan.h"

#include <string.h>

/* How a node is read: at the element being computed, at some element of the same row
 * inside a row value, or anywhere. */
typedef enum read_at { AT_ELEMENT, AT_ROW, AT_ANY } read_at;

typedef struct walk {
    const kiln_graph *g;
    const fusion_plan *fp;
    const fkernel *k;
    uint32_t *mark[3];   /* visited, per read_at, stamped k + 1 */
    uint32_t *stack;     /* (node << 2 | read_at) pairs */
    uint8_t *bad;        /* per input slot: read at some other index */
    uint8_t *row;        /* per input slot: read at another element of the same row */
    uint8_t *seen;       /* per input slot: read at all */
    bool element_reduce; /* a reduction is read at the element being computed */
} walk;

static int input_slot(const fkernel *k, uint32_t id) {
    for (uint32_t i = 0; i < k->n_inputs; i++)
        if (k->inputs[i] == id) return (int)i;
    return -1;
}

/* Marks the initial carries of a while or scan kernel that no other input of the node is. */
static void control_legal(const kiln_graph *g, const fkernel *k, uint8_t *out) {
    const ir_node *n = &g->nodes[k->roots[0]];
    if (n->op != IR_WHILE && n->op != IR_SCAN) return;
    const uint32_t *in = ir_in(n);
    for (uint32_t j = 0; j < (uint32_t)n->a.ctl.n_carry; j++) {
        uint32_t uses = 0;
        for (uint32_t i = 0; i < n->n_in; i++) uses += in[i] == in[j];
        int slot = input_slot(k, in[j]);
        if (uses == 1 && slot >= 0) out[slot] = 1;
    }
}

static bool is_root(const fkernel *k, uint32_t id) {
    for (uint32_t r = 0; r < k->n_roots; r++)
        if (k->roots[r] == id) return true;
    return false;
}

/* Pushes operand x of a node read at `at`, or records the read of an input. */
static void visit(walk *w, uint32_t x, read_at at, uint32_t stamp, uint32_t *sp) {
    if (w->fp->inline_const[x]) return;
    if (w->fp->materialised[x] && !is_root(w->k, x)) {
        int slot = input_slot(w->k, x);
        if (slot < 0) return; /* not an input: cannot happen for a well-formed kernel */
        w->seen[slot] = 1;
        if (at == AT_ANY) w->bad[slot] = 1;
        if (at == AT_ROW) w->row[slot] = 1;
        return;
    }
    if (w->mark[at][x] == stamp) return;
    w->mark[at][x] = stamp;
    w->stack[(*sp)++] = x << 2 | at;
}

/* Whether row value x (fusion.h) is computed in the kernel's prologue: it has the rows of
 * the kernel's index space, [A...] or [A..., 1] of its [A..., n] (lower.c, lower_rows). */
static bool in_prologue(const walk *w, uint32_t x) {
    const ir_shape *s = &w->g->nodes[x].shape, *k = &w->g->nodes[w->k->roots[0]].shape;
    int r = k->rank;
    if (!w->fp->row[x] || r < 2 || (s->rank != r - 1 && !(s->rank == r && s->dims[r - 1] == 1)))
        return false;
    for (int a = 0; a < r - 1; a++)
        if (s->dims[a] != k->dims[a]) return false;
    return true;
}

/* Where node n, read at `at`, reads its operand x. */
static read_at operand_at(const walk *w, const ir_node *n, uint32_t x, read_at at) {
    if (at == AT_ANY) return AT_ANY;
    bool elementwise = (ir_ops[n->op].flags & IRF_ELEMENTWISE) != 0;
    if (at == AT_ELEMENT && (elementwise || n->op == IR_RESHAPE)) return AT_ELEMENT;
    /* a dynamic update reads its operand, outside the window, at the element itself */
    if (at == AT_ELEMENT && n->op == IR_DYNAMIC_UPDATE_SLICE && x == ir_in(n)[0] &&
        x != ir_in(n)[1])
        return AT_ELEMENT;
    /* AT_ROW below: ops that keep the rows as a prefix of their shapes, as fusion's row
     * values do (keeps_rows) */
    const ir_shape *o = &w->g->nodes[x].shape;
    int r = n->shape.rank;
    bool along_last = n->op == IR_BROADCAST && (o->rank == r || o->rank == r - 1);
    for (int a = 0; along_last && a < o->rank; a++)
        along_last = n->a.bcast_dims[a] == a && (a == r - 1 || o->dims[a] == n->shape.dims[a]);
    if (at == AT_ELEMENT) /* a row value's own reads are of its row */
        return along_last && in_prologue(w, x) ? AT_ROW : AT_ANY;
    if (elementwise) return AT_ROW;
    if (n->op == IR_RESHAPE && (o->rank == r + 1 || o->rank == r - 1)) {
        const ir_shape *hi = o->rank > r ? o : &n->shape, *lo = o->rank > r ? &n->shape : o;
        bool unit = hi->dims[hi->rank - 1] == 1;
        for (int a = 0; unit && a < lo->rank; a++) unit = lo->dims[a] == hi->dims[a];
        return unit ? AT_ROW : AT_ANY;
    }
    if (n->op == IR_BROADCAST) return along_last ? AT_ROW : AT_ANY;
    if (ir_ops[n->op].kind == IRK_REDUCE)
        return o->rank == r + 1 && n->a.reduce_axes == 1u << r ? AT_ROW : AT_ANY;
    return AT_ANY;
}

/* Same element count and element size (a belt to the walk's braces). */
static bool same_elements(const ir_node *a, const ir_node *b) {
    int64_t na = 0, nb = 0;
    ir_shape_numel(&a->shape, &na);
    ir_shape_numel(&b->shape, &nb);
    return na == nb && kiln_dtype_itemsize(a->dtype) == kiln_dtype_itemsize(b->dtype);
}

static void walk_loop(walk *w, uint32_t stamp) {
    uint32_t sp = 0;
    w->element_reduce = false;
    for (uint32_t r = 0; r < w->k->n_roots; r++) visit(w, w->k->roots[r], AT_ELEMENT, stamp, &sp);
    while (sp) {
        uint32_t top = w->stack[--sp], id = top >> 2;
        read_at at = (read_at)(top & 3u);
        const ir_node *n = &w->g->nodes[id];
        w->element_reduce |= at == AT_ELEMENT && ir_ops[n->op].kind == IRK_REDUCE;
        for (uint32_t i = 0; i < n->n_in; i++)
            visit(w, ir_in(n)[i], operand_at(w, n, ir_in(n)[i], at), stamp, &sp);
    }
}

static void scatter_legal(const kiln_graph *g, const fkernel *k, uint8_t *out) {
    const uint32_t *in = ir_in(&g->nodes[k->roots[0]]);
    int slot = input_slot(k, in[0]);
    if (slot >= 0 && in[0] != in[1] && in[0] != in[2]) out[slot] = 1;
}

kiln_status plan_inplace_legal(const kiln_graph *g, const fusion_plan *fp, uint8_t *out) {
    kiln_context *ctx = g->ctx;
    uint32_t n = g->n_nodes, ni = 0;
    for (uint32_t i = 0; i < fp->n_kernels; i++) ni += fp->kernels[i].n_inputs;
    memset(out, 0, ni ? ni : 1);
    size_t words = (size_t)4 * n, bytes = words * sizeof(uint32_t) + 3 * (size_t)(ni + 1);
    uint32_t *mem = host_calloc(ctx, 1, bytes);
    if (!mem) return ctx_oom(ctx, "kiln_compile: in-place analysis", bytes);
    walk w = {.g = g, .fp = fp, .mark = {mem, mem + n, mem + 2 * n}, .stack = mem + 3 * n};
    uint8_t *flags = (uint8_t *)(mem + words);
    for (uint32_t ki = 0, at = 0; ki < fp->n_kernels; at += fp->kernels[ki++].n_inputs) {
        const fkernel *kn = &fp->kernels[ki];
        /* a collective runs out of place: other replicas read its operand while it writes;
         * an attention's every work item reads all of k and v */
        if (kn->kind == FK_DOT || kn->kind == FK_ATTENTION || kn->kind == FK_COLLECTIVE ||
            kn->kind == FK_SORT ||     /* a sort reads its whole row after writing positions */
            kn->kind == FK_TRANSFER || /* a copy to another memory kind */
            kn->kind == FK_CONV)       /* every output reads a window of its operands */
            continue;
        if (kn->kind == FK_CONTROL) {
            control_legal(g, kn, out + at);
            continue;
        }
        if (kn->kind == FK_SCATTER) {
            scatter_legal(g, kn, out + at);
            continue;
        }
        if (kn->kind == FK_SCAN) { /* a scan reads each element before it writes it */
            int slot = input_slot(kn, ir_in(&g->nodes[kn->roots[0]])[0]);
            if (slot >= 0) out[at + slot] = 1;
            continue;
        }
        if (kn->kind == FK_LINALG) { /* LAPACK factors a, and solves over b, in place */
            const ir_node *r = &g->nodes[kn->roots[0]];
            int slot = input_slot(kn, ir_in(r)[r->op == IR_CHOLESKY ? 0 : 1]);
            if (slot >= 0) out[at + slot] = 1;
            continue;
        }
        w.k = kn;
        w.bad = flags;
        w.seen = flags + kn->n_inputs;
        w.row = flags + 2 * (size_t)kn->n_inputs;
        memset(flags, 0, 3 * (size_t)kn->n_inputs);
        walk_loop(&w, ki + 1);
        const ir_node *rn = &g->nodes[kn->roots[0]];
        for (uint32_t i = 0; i < kn->n_inputs; i++) {
            const ir_node *x = &g->nodes[kn->inputs[i]];
            out[at + i] =
                w.seen[i] && !w.bad[i] && !(w.row[i] && w.element_reduce) && same_elements(x, rn);
        }
    }
    host_free(ctx, mem, bytes);
    return KILN_STATUS_OK;
}
