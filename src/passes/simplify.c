/* simplify.c — algebraic simplification and constant folding, iterated to a fixed point.
 *
 * Every rewrite here is exact: the new graph gives, bit for bit, what the reference
 * interpreter gives for the old one, for every input including NaN, infinities and signed
 * zeros (quiet NaNs keep their payload: the interpreter computes floats in double, and
 * f32 -> f64 -> f32 and x*1, x/1, x+(-0) in double preserve a quiet NaN's bits).
 * Integers wrap (reference.h), which makes double negation exact for them too. The one
 * exception is signalling NaNs, which no kiln op produces (they can only arrive as
 * arguments): the interpreter quiets them when it widens to double, a removed x*1 does
 * not; like XLA, we treat every NaN as "a NaN" there.
 *
 * Identities (a "splat" is a constant whose elements all have the same bits, or a
 * broadcast of one):
 *   x * 1, 1 * x, x / 1                    -> x        (exact for every dtype)
 *   x + (-0.0), (-0.0) + x, x - (+0.0)     -> x        (floats: x + (+0.0) is NOT x, since
 *                                                      -0.0 + 0.0 = +0.0; kept as is)
 *   x + 0, 0 + x, x - 0                    -> x        (integers)
 *   x * 0 (integers only)                  -> the zero operand (for floats x*0 is NaN for
 *                                                      x = inf or NaN and -0 for x < 0: kept)
 *   neg(neg(x)), not(not(x))               -> x
 *   select(splat p, a, b)                  -> a or b;  select(p, a, a) -> a
 *   transpose(transpose(x))                -> one transpose (composed), none if identity
 *   reshape(reshape(x))                    -> one reshape, none if the shape is x's
 *   broadcast(broadcast(x))                -> one broadcast (composed)
 *   identity transpose/reshape/broadcast/slice/pad/convert, 1-operand concat -> x
 *   convert(convert(x, T1), T2)            -> convert(x, T2) when x -> T1 is exact and
 *                                             value-preserving (f32->f64, i32->i64,
 *                                             i32->f64, bool->any), so T1 -> T2 sees x's
 *                                             own value (x itself when T2 is x's dtype)
 * Splats stay small: a splat constant with more than one element becomes a broadcast of a
 * rank-0 constant; reshape/transpose/slice of a broadcast scalar is a broadcast of that
 * scalar; an elementwise op whose operands are all broadcast scalars is computed on the
 * scalars and broadcast after. Big constants are never materialised.
 *
 * Constant folding: a non-source, non-broadcast node whose inputs are all constants (or
 * broadcasts of constants) is evaluated when its result has at most PASS_FOLD_MAX_ELEMS
 * elements and is no larger than its largest constant input (counting stored elements),
 * or has at most PASS_FOLD_SMALL_ELEMS, and no input (broadcasts counted at their full
 * size, as the evaluation materialises them) exceeds PASS_FOLD_MAX_INPUT_ELEMS. The evaluation is
 * the reference interpreter's host entry (ref_eval_host: host buffers, no array, no device) on
 * a tiny graph of copies of the inputs and the node, so folded values are the reference's by
 * construction. A node the interpreter refuses (other than for host OOM) is left
 * alone.
 *
 * Rewrites chain within one walk (rules read the new graph, already simplified), and the
 * walk repeats until nothing changes (at most SIMPLIFY_MAX_ROUNDS). Values made dead by a
 * rewrite stay: dead-code elimination removes them. */
#include "passes.h"
#include "rewrite.h"
#include "reference/reference.h"
#include "trace/role.h"

#include <string.h>

#define SIMPLIFY_MAX_ROUNDS 16

typedef struct simp_state {
    uint32_t simplified, folded;
} simp_state;

static int64_t numel(const ir_shape *s) {
    int64_t n = 0;
    ir_shape_numel(s, &n); /* a typed node's shape fits */
    return n;
}

/* If new node id is a constant whose elements all have the same bytes (at least one
 * element), or a broadcast of one, returns the bytes of one element; else NULL. */
static const void *splat(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    while (n->op == IR_BROADCAST) n = &g->nodes[ir_in(n)[0]];
    int64_t count = numel(&n->shape);
    if (n->op != IR_CONSTANT || count < 1) return NULL;
    size_t es = kiln_dtype_itemsize(n->dtype);
    const unsigned char *p = n->data;
    for (int64_t i = 1; i < count; i++)
        if (memcmp(p, p + (size_t)i * es, es)) return NULL;
    return p;
}

/* True if new node id is a splat of exactly v in its dtype, bitwise (so -0.0 and +0.0
 * differ for floats; both are 0 for integers). */
static bool splat_is(const kiln_graph *g, uint32_t id, double v) {
    const void *p = splat(g, id);
    kiln_dtype t = g->nodes[id].dtype;
    uint64_t bytes;
    return p && ir_scalar_store(t, v, &bytes) && !memcmp(p, &bytes, kiln_dtype_itemsize(t));
}

/* The rank-0 value a new node broadcasts, or 0 if it is not a broadcast of a scalar. */
static uint32_t broadcast_scalar(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    if (n->op != IR_BROADCAST) return 0;
    uint32_t x = ir_in(n)[0];
    return g->nodes[x].shape.rank == 0 ? x : 0;
}

/* A template for a node replacing old node o: same location, attributes cleared. */
static ir_node like(const ir_node *o, ir_op op) {
    return (ir_node){.op = op,
                     .dtype = o->dtype,
                     .shape = o->shape,
                     .file = o->file,
                     .line = o->line,
                     .backward = o->backward};
}

/* pass_emit of template t made by like(o): the new node takes o's role too (the walker
 * gives it only to the node o becomes; a folded or rewritten value stays what it was to
 * the step). */
static kiln_status emit_like(pass_rebuild *rb, const ir_node *o, ir_node *t, const uint32_t *in,
                             uint32_t n_in, uint32_t *r) {
    kiln_status s = pass_emit(rb, t, in, n_in, r);
    if (s) return s;
    t->data = NULL, t->name = NULL; /* the node owns them now, whatever follows */
    if (!trace_role_put(rb->g, *r, trace_role_of(rb->old, (uint32_t)(o - rb->old->nodes))))
        return ctx_oom(rb->g->ctx, "pass simplify: a node's role", 1);
    return KILN_STATUS_OK;
}

/* Emits broadcast(x) to old node id's shape, operand axis i going to dims[i]. */
static kiln_status emit_broadcast(pass_rebuild *rb, uint32_t id, uint32_t x, const int *dims,
                                  uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    ir_node t = like(o, IR_BROADCAST);
    for (int i = 0; i < rb->g->nodes[x].shape.rank; i++) t.a.bcast_dims[i] = dims[i];
    return emit_like(rb, o, &t, &x, 1, r);
}

/* ------------------------------------------------------------ identities ---- */

static uint32_t arith_identity(const pass_rebuild *rb, uint32_t id) {
    const ir_node *o = &rb->old->nodes[id];
    const kiln_graph *g = rb->g;
    uint32_t a = pass_input(rb, id, 0), b = pass_input(rb, id, 1);
    double zero = ir_dtype_is_float(o->dtype) ? -0.0 : 0.0; /* the additive identity */
    switch (o->op) {
    case IR_MUL:
        if (splat_is(g, b, 1)) return a;
        if (splat_is(g, a, 1)) return b;
        if (!ir_dtype_is_int(o->dtype)) return 0;
        return splat_is(g, b, 0) ? b : splat_is(g, a, 0) ? a : 0;
    case IR_DIV: return splat_is(g, b, 1) ? a : 0;
    case IR_ADD: return splat_is(g, b, zero) ? a : splat_is(g, a, zero) ? b : 0;
    case IR_SUB: return splat_is(g, b, 0.0) ? a : 0; /* x - (+0) = x + (-0) */
    default: return 0;
    }
}

static uint32_t involution(const pass_rebuild *rb, uint32_t id) {
    const ir_node *o = &rb->old->nodes[id];
    const ir_node *x = pass_input_node(rb, id, 0);
    return (o->op == IR_NEG || o->op == IR_NOT) && x->op == o->op ? ir_in(x)[0] : 0;
}

static uint32_t select_known(const pass_rebuild *rb, uint32_t id) {
    uint32_t a = pass_input(rb, id, 1), b = pass_input(rb, id, 2);
    if (a == b) return a;
    const unsigned char *p = splat(rb->g, pass_input(rb, id, 0));
    return p ? (*p ? a : b) : 0;
}

/* x -> T1 keeps x's value exactly, so converting that value on to any T2 is the same as
 * converting x directly (the reference converts by value: reference/elementwise.c). */
static bool exact_widening(kiln_dtype from, kiln_dtype to) {
    bool half = ir_dtype_is_half(from);
    return from == KILN_DTYPE_BOOL || (from == KILN_DTYPE_F32 && to == KILN_DTYPE_F64) ||
           (half && (to == KILN_DTYPE_F32 || to == KILN_DTYPE_F64)) ||
           (from == KILN_DTYPE_I32 && (to == KILN_DTYPE_I64 || to == KILN_DTYPE_F64));
}

static kiln_status convert(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t x = pass_input(rb, id, 0);
    const ir_node *xn = &rb->g->nodes[x];
    if (xn->dtype == o->dtype) return *r = x, KILN_STATUS_OK;
    if (xn->op != IR_CONVERT) return KILN_STATUS_OK;
    uint32_t src = ir_in(xn)[0];
    kiln_dtype from = rb->g->nodes[src].dtype;
    if (!exact_widening(from, xn->dtype)) return KILN_STATUS_OK;
    if (from == o->dtype) return *r = src, KILN_STATUS_OK;
    ir_node t = like(o, IR_CONVERT);
    return emit_like(rb, o, &t, &src, 1, r);
}

/* ------------------------------------------------------------- shape ops ---- */

static bool is_identity_perm(const int *perm, int rank) {
    for (int i = 0; i < rank; i++)
        if (perm[i] != i) return false;
    return true;
}

static kiln_status transpose(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t x = pass_input(rb, id, 0);
    const ir_node *xn = &rb->g->nodes[x];
    int rank = o->shape.rank, perm[KILN_MAX_RANK];
    for (int i = 0; i < rank; i++) perm[i] = o->a.perm[i];
    bool composed = xn->op == IR_TRANSPOSE;
    if (composed) { /* out[i] = mid[perm[i]] = x[inner[perm[i]]] */
        for (int i = 0; i < rank; i++) perm[i] = xn->a.perm[o->a.perm[i]];
        x = ir_in(xn)[0];
    }
    if (is_identity_perm(perm, rank)) return *r = x, KILN_STATUS_OK;
    if (!composed) return KILN_STATUS_OK;
    ir_node t = like(o, IR_TRANSPOSE);
    memcpy(t.a.perm, perm, sizeof perm);
    return emit_like(rb, o, &t, &x, 1, r);
}

static kiln_status reshape(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t x = pass_input(rb, id, 0);
    const ir_node *xn = &rb->g->nodes[x];
    bool composed = xn->op == IR_RESHAPE;
    if (composed) x = ir_in(xn)[0];
    if (ir_shape_eq(&rb->g->nodes[x].shape, &o->shape)) return *r = x, KILN_STATUS_OK;
    if (!composed) return KILN_STATUS_OK;
    ir_node t = like(o, IR_RESHAPE);
    return emit_like(rb, o, &t, &x, 1, r);
}

/* broadcast(broadcast(x)): x's axis i goes to mid axis inner[i], which goes to out axis
 * outer[inner[i]]. Sizes stay legal: x's dim is 1 or mid's, which is 1 or out's. */
static kiln_status broadcast(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t x = pass_input(rb, id, 0);
    const ir_node *xn = &rb->g->nodes[x];
    int dims[KILN_MAX_RANK];
    for (int i = 0; i < xn->shape.rank; i++) dims[i] = o->a.bcast_dims[i];
    bool composed = xn->op == IR_BROADCAST;
    if (composed) {
        x = ir_in(xn)[0];
        for (int i = 0; i < rb->g->nodes[x].shape.rank; i++)
            dims[i] = o->a.bcast_dims[xn->a.bcast_dims[i]];
    }
    /* Same rank and shape: strictly increasing dims can only be the identity. */
    if (ir_shape_eq(&rb->g->nodes[x].shape, &o->shape)) return *r = x, KILN_STATUS_OK;
    return composed ? emit_broadcast(rb, id, x, dims, r) : KILN_STATUS_OK;
}

/* Identity slice: same shape, every start 0 (then each limit is the dim, and the stride
 * is 1 or the axis has at most one element). Identity pad: all widths 0. */
static uint32_t identity_shape_op(const pass_rebuild *rb, uint32_t id) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t x = pass_input(rb, id, 0);
    const ir_node *xn = &rb->g->nodes[x];
    if (o->op == IR_CONCAT) return o->n_in == 1 ? x : 0;
    if (!ir_shape_eq(&xn->shape, &o->shape)) return 0;
    for (int i = 0; i < o->shape.rank; i++) {
        if (o->op == IR_SLICE && o->a.slice.start[i]) return 0;
        if (o->op == IR_PAD && (o->a.pad.lo[i] || o->a.pad.hi[i] || o->a.pad.interior[i])) return 0;
    }
    return o->op == IR_SLICE || o->op == IR_PAD ? x : 0;
}

static kiln_status shape_op(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    if ((*r = identity_shape_op(rb, id))) return KILN_STATUS_OK;
    uint32_t s = broadcast_scalar(rb->g, pass_input(rb, id, 0));
    bool moves = o->op == IR_RESHAPE || o->op == IR_TRANSPOSE || o->op == IR_SLICE;
    if (s && moves) return emit_broadcast(rb, id, s, NULL, r); /* every element is s */
    switch (o->op) {
    case IR_TRANSPOSE: return transpose(rb, id, r);
    case IR_RESHAPE: return reshape(rb, id, r);
    case IR_BROADCAST: return broadcast(rb, id, r);
    default: return KILN_STATUS_OK;
    }
}

/* ---------------------------------------------------------------- splats ---- */

/* A constant of more than one element, all equal: a broadcast of a rank-0 copy. */
static kiln_status splat_constant(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    if (numel(&o->shape) < 2) return KILN_STATUS_OK;
    size_t es = kiln_dtype_itemsize(o->dtype);
    const unsigned char *p = o->data;
    for (int64_t i = 1, n = numel(&o->shape); i < n; i++)
        if (memcmp(p, p + (size_t)i * es, es)) return KILN_STATUS_OK;
    ir_node t = like(o, IR_CONSTANT);
    t.shape.rank = 0;
    if (!(t.data = host_alloc(rb->g->ctx, es)))
        return ctx_error(rb->g->ctx, KILN_STATUS_HOST_OOM,
                         "pass simplify: host allocation of %zu bytes for a scalar failed", es);
    memcpy(t.data, p, es);
    uint32_t c;
    kiln_status s = emit_like(rb, o, &t, NULL, 0, &c);
    if (s) {
        host_free(rb->g->ctx, t.data, es);
        return s;
    }
    return emit_broadcast(rb, id, c, NULL, r);
}

/* op(broadcast(a), broadcast(b), ...) with rank-0 a, b: broadcast(op(a, b, ...)). */
static kiln_status splat_elementwise(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t in[3];
    for (uint32_t k = 0; k < o->n_in; k++)
        if (!(in[k] = broadcast_scalar(rb->g, pass_input(rb, id, k)))) return KILN_STATUS_OK;
    ir_node t = like(o, o->op);
    t.a = o->a;
    t.shape.rank = 0;
    uint32_t scalar;
    kiln_status s = emit_like(rb, o, &t, in, o->n_in, &scalar);
    return s ? s : emit_broadcast(rb, id, scalar, NULL, r);
}

/* dot_general(transpose(x), y): read x directly, its axis numbers mapped through the
 * permutation, so the product sees x's layout (and BLAS folds it into its trans flag)
 * instead of a transposed copy. Only when x's free axes keep their order, which is the
 * order they take in the result. */
static bool fold_dot_transpose(const kiln_graph *g, uint32_t *operand, int *batch, int nb, int *con,
                               int nc) {
    const ir_node *t = &g->nodes[*operand];
    if (t->op != IR_TRANSPOSE) return false;
    unsigned used = 0;
    for (int i = 0; i < nb; i++) used |= 1u << batch[i];
    for (int i = 0; i < nc; i++) used |= 1u << con[i];
    for (int a = 0, last = -1; a < t->shape.rank; a++) {
        if (used >> a & 1u) continue;
        if (t->a.perm[a] < last) return false;
        last = t->a.perm[a];
    }
    for (int i = 0; i < nb; i++) batch[i] = t->a.perm[batch[i]];
    for (int i = 0; i < nc; i++) con[i] = t->a.perm[con[i]];
    *operand = ir_in(t)[0];
    return true;
}

static kiln_status dot(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    uint32_t in[2] = {pass_input(rb, id, 0), pass_input(rb, id, 1)};
    kiln_dot_dims d = o->a.dot;
    bool l =
        fold_dot_transpose(rb->g, &in[0], d.lhs_batch, d.n_batch, d.lhs_contract, d.n_contract);
    bool rr =
        fold_dot_transpose(rb->g, &in[1], d.rhs_batch, d.n_batch, d.rhs_contract, d.n_contract);
    if (!l && !rr) return KILN_STATUS_OK;
    ir_node t = like(o, IR_DOT);
    t.a.dot = d;
    return emit_like(rb, o, &t, in, 2, r);
}

/* Rewrites old node id by the identities above; *r is its replacement, or 0. */
static kiln_status rewrite(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    kiln_status s = KILN_STATUS_OK;
    *r = 0;
    switch (ir_ops[o->op].kind) {
    case IRK_SOURCE: return o->op == IR_CONSTANT ? splat_constant(rb, id, r) : KILN_STATUS_OK;
    case IRK_UNARY:
        /* autodiff is done by compile time: stop_gradient is the identity there */
        if (o->op == IR_STOP_GRADIENT) return (*r = pass_input(rb, id, 0)), KILN_STATUS_OK;
        if ((*r = involution(rb, id))) return KILN_STATUS_OK;
        if (o->op == IR_CONVERT && ((s = convert(rb, id, r)) || *r)) return s;
        return splat_elementwise(rb, id, r);
    case IRK_BINARY:
        if ((*r = arith_identity(rb, id))) return KILN_STATUS_OK;
        return splat_elementwise(rb, id, r);
    case IRK_SELECT:
        if (o->op == IR_SELECT && (*r = select_known(rb, id))) return KILN_STATUS_OK;
        return splat_elementwise(rb, id, r);
    case IRK_SHAPE: return shape_op(rb, id, r);
    case IRK_DOT: return dot(rb, id, r);
    default: return KILN_STATUS_OK;
    }
}

/* -------------------------------------------------------------- folding ---- */

/* Stored elements of new node id if it is a constant or a broadcast of one, else -1. */
static int64_t const_elems(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    if (n->op == IR_BROADCAST) n = &g->nodes[ir_in(n)[0]];
    return n->op == IR_CONSTANT ? numel(&n->shape) : -1;
}

static bool foldable(const pass_rebuild *rb, uint32_t id) {
    const ir_node *o = &rb->old->nodes[id];
    ir_kind kind = ir_ops[o->op].kind;
    /* a collective's value depends on the other replicas: folding would give one's; a
     * control node's results are folded by compiling its sub-graphs, not here; a copy to
     * another memory kind is where its value lives, which a constant would lose */
    if (kind == IRK_SOURCE || kind == IRK_COLLECTIVE || kind == IRK_CONTROL || kind == IRK_RESULT ||
        kind == IRK_TRANSFER || o->op == IR_BROADCAST)
        return false;
    int64_t largest = 0, out = numel(&o->shape);
    for (uint32_t k = 0; k < o->n_in; k++) {
        int64_t e = const_elems(rb->g, pass_input(rb, id, k));
        if (e < 0 || numel(&pass_input_node(rb, id, k)->shape) > PASS_FOLD_MAX_INPUT_ELEMS)
            return false;
        if (e > largest) largest = e;
    }
    return out <= PASS_FOLD_MAX_ELEMS && (out <= largest || out <= PASS_FOLD_SMALL_ELEMS);
}

/* Copies new node id of g (a constant or a broadcast of one) into t; 0 on host OOM. */
static uint32_t copy_into(kiln_graph *t, const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    ir_node c = *n;
    c.name = NULL, c.data = NULL, c.in_heap = NULL;
    if (n->op == IR_BROADCAST) {
        uint32_t x = copy_into(t, g, ir_in(n)[0]);
        return x ? ir_graph_append(t, &c, &x, 1) : 0;
    }
    size_t bytes = 0;
    ir_shape_nbytes(&n->shape, n->dtype, &bytes);
    if (bytes && !(c.data = host_alloc(g->ctx, bytes))) return 0;
    if (bytes) memcpy(c.data, n->data, bytes);
    uint32_t nid = ir_graph_append(t, &c, NULL, 0);
    if (!nid) ir_node_release(g->ctx, &c);
    return nid;
}

/* Builds the tiny graph: copies of old node id's (constant) inputs, then the node. */
static kiln_status fold_graph(pass_rebuild *rb, uint32_t id, kiln_graph *t) {
    kiln_context *ctx = rb->g->ctx;
    const ir_node *o = &rb->old->nodes[id];
    uint32_t stack[16], *in = stack;
    if (o->n_in > 16 && !(in = host_alloc(ctx, o->n_in * sizeof *in)))
        return ctx_oom(ctx, "pass simplify: folding", o->n_in * sizeof *in);
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t k = 0; !s && k < o->n_in; k++)
        if (!(in[k] = copy_into(t, rb->g, pass_input(rb, id, k))))
            s = ctx_oom(ctx, "pass simplify: folding, a copy of an input", sizeof(ir_node));
    ir_node c = *o;
    c.name = NULL, c.data = NULL, c.in_heap = NULL;
    uint32_t nid = s ? 0 : ir_graph_append(t, &c, in, o->n_in);
    if (!s && !nid) s = ctx_oom(ctx, "pass simplify: folding, the node", sizeof c);
    if (!s && !(t->outputs = host_alloc(ctx, sizeof *t->outputs)))
        s = ctx_oom(ctx, "pass simplify: folding, the output list", sizeof *t->outputs);
    if (!s) t->outputs[0] = nid, t->n_outputs = 1, t->finished = true;
    if (in != stack) host_free(ctx, in, o->n_in * sizeof *in);
    return s;
}

/* Evaluates old node id on its constant inputs. *data receives the result's bytes (host
 * memory, NULL for an empty result) and *done whether the interpreter computed it. */
static kiln_status evaluate(pass_rebuild *rb, uint32_t id, void **data, bool *done) {
    kiln_context *ctx = rb->g->ctx;
    kiln_graph *t = NULL;
    *data = NULL, *done = false;
    kiln_status s = kiln_graph_create(ctx, "fold", &t);
    if (!s) s = fold_graph(rb, id, t);
    if (!s) {
        /* The result comes from the context's host allocator with the node's byte size,
         * as a constant's data does, so the new constant takes it over as it is. */
        s = ref_eval_host(t, NULL, data);
        if (!s)
            *done = true;
        else if (s != KILN_STATUS_HOST_OOM)
            s = KILN_STATUS_OK; /* not evaluable here: leave the node for the compiled code */
    }
    kiln_graph_destroy(t);
    return s;
}

static kiln_status fold(pass_rebuild *rb, uint32_t id, uint32_t *r) {
    const ir_node *o = &rb->old->nodes[id];
    *r = 0;
    if (!foldable(rb, id)) return KILN_STATUS_OK;
    bool done;
    ir_node t = like(o, IR_CONSTANT);
    kiln_status s = evaluate(rb, id, &t.data, &done);
    if (s || !done) return s;
    size_t bytes = 0;
    ir_shape_nbytes(&o->shape, o->dtype, &bytes);
    if ((s = emit_like(rb, o, &t, NULL, 0, r))) host_free(rb->g->ctx, t.data, bytes);
    return s;
}

/* ----------------------------------------------------------------- driver ---- */

static kiln_status visit(pass_rebuild *rb, uint32_t id, void *user) {
    simp_state *st = user;
    uint32_t r;
    kiln_status s = rewrite(rb, id, &r);
    if (!s && r) return rb->map[id] = r, st->simplified++, KILN_STATUS_OK;
    if (!s) s = fold(rb, id, &r);
    if (!s && r) return rb->map[id] = r, st->folded++, KILN_STATUS_OK;
    return s ? s : pass_copy(rb, id);
}

kiln_status pass_simplify_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats) {
    *out = NULL;
    kiln_graph *cur = NULL; /* the latest round's graph; g itself is never changed */
    for (int round = 0; round < SIMPLIFY_MAX_ROUNDS; round++) {
        simp_state st = {0, 0};
        kiln_graph *next;
        kiln_status s = pass_rebuild_graph(cur ? cur : g, "simplify", visit, &st, &next);
        if (s) {
            kiln_graph_destroy(cur);
            return s;
        }
        if (!st.simplified && !st.folded) {
            kiln_graph_destroy(next);
            break;
        }
        kiln_graph_destroy(cur);
        cur = next;
        if (stats) stats->simplified += st.simplified, stats->folded += st.folded;
    }
    *out = cur;
    return KILN_STATUS_OK;
}
