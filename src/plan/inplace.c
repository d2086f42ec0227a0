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
 * select, convert: same multi-index, same shape) and reshape (a row-major reshape keeps
 * every element's position). Any other op — broadcast, transpose, slice, concatenate,
 * pad, a reduction, a gather — reads its operand at other positions, and everything below
 * it is read at "some position". An input reached even once at some position is not
 * legal. An input reached only at the same position has the root's element count (every
 * op on the way keeps it), hence, with equal byte sizes (the planner checks them), the
 * same element size and the very bytes of each element it is read for. Which root takes
 * which legal input is the planner's choice (plan.c: one root per input).
 *
 * A node can be reached both ways through different paths, so the walk keeps two visited
 * marks per node. DOT kernels never run in place (BLAS reads whole rows and columns while
 * writing). A SCATTER kernel copies its operand to the output and then adds rows into it,
 * so the operand may be overwritten unless it also serves as indices or updates. */
#include "plan.h"

#include <string.h>

typedef struct walk {
    const kiln_graph *g;
    const fusion_plan *fp;
    const fkernel *k;
    uint32_t *mark_id, *mark_any; /* visited with identity / any index, stamped k + 1 */
    uint32_t *stack;              /* (node << 1 | identity) pairs */
    uint8_t *bad;                 /* per input slot: read at some other index */
    uint8_t *seen;                /* per input slot: read at all */
} walk;

static int input_slot(const fkernel *k, uint32_t id) {
    for (uint32_t i = 0; i < k->n_inputs; i++)
        if (k->inputs[i] == id) return (int)i;
    return -1;
}

static bool is_root(const fkernel *k, uint32_t id) {
    for (uint32_t r = 0; r < k->n_roots; r++)
        if (k->roots[r] == id) return true;
    return false;
}

/* Pushes operand x of a node read with `ident`, or records the read of an input. */
static void visit(walk *w, uint32_t x, bool ident, uint32_t stamp, uint32_t *sp) {
    if (w->fp->inline_const[x]) return;
    if (w->fp->materialised[x] && !is_root(w->k, x)) {
        int slot = input_slot(w->k, x);
        if (slot < 0) return; /* not an input: cannot happen for a well-formed kernel */
        w->seen[slot] = 1;
        if (!ident) w->bad[slot] = 1;
        return;
    }
    uint32_t *mark = ident ? w->mark_id : w->mark_any;
    if (mark[x] == stamp) return;
    mark[x] = stamp;
    w->stack[(*sp)++] = x << 1 | (ident ? 1u : 0u);
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
    for (uint32_t r = 0; r < w->k->n_roots; r++) visit(w, w->k->roots[r], true, stamp, &sp);
    while (sp) {
        uint32_t top = w->stack[--sp], id = top >> 1;
        bool ident = top & 1u;
        const ir_node *n = &w->g->nodes[id];
        bool keeps = ident && ((ir_ops[n->op].flags & IRF_ELEMENTWISE) || n->op == IR_RESHAPE);
        for (uint32_t i = 0; i < n->n_in; i++) visit(w, ir_in(n)[i], keeps, stamp, &sp);
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
    size_t words = (size_t)4 * n, bytes = words * sizeof(uint32_t) + 2 * (size_t)(ni + 1);
    uint32_t *mem = host_calloc(ctx, 1, bytes);
    if (!mem) return ctx_oom(ctx, "kiln_compile: in-place analysis", bytes);
    walk w = {.g = g, .fp = fp, .mark_id = mem, .mark_any = mem + n, .stack = mem + 2 * n};
    uint8_t *flags = (uint8_t *)(mem + words);
    for (uint32_t ki = 0, at = 0; ki < fp->n_kernels; at += fp->kernels[ki++].n_inputs) {
        const fkernel *kn = &fp->kernels[ki];
        /* a collective runs out of place: other replicas read its operand while it writes;
         * an attention's every work item reads all of k and v */
        if (kn->kind == FK_DOT || kn->kind == FK_ATTENTION || kn->kind == FK_COLLECTIVE) continue;
        if (kn->kind == FK_SCATTER) {
            scatter_legal(g, kn, out + at);
            continue;
        }
        if (kn->kind == FK_SCAN) { /* a scan reads each element before it writes it */
            int slot = input_slot(kn, ir_in(&g->nodes[kn->roots[0]])[0]);
            if (slot >= 0) out[at + slot] = 1;
            continue;
        }
        w.k = kn;
        w.bad = flags;
        w.seen = flags + kn->n_inputs;
        memset(flags, 0, 2 * (size_t)kn->n_inputs);
        walk_loop(&w, ki + 1);
        const ir_node *rn = &g->nodes[kn->roots[0]];
        for (uint32_t i = 0; i < kn->n_inputs; i++) {
            const ir_node *x = &g->nodes[kn->inputs[i]];
            out[at + i] = w.seen[i] && !w.bad[i] && same_elements(x, rn);
        }
    }
    host_free(ctx, mem, bytes);
    return KILN_STATUS_OK;
}
