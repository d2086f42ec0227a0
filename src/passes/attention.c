/* attention.c — attention written out with primitives, recognised as the one op.
 *
 * Users write attention the way every tutorial does: scores = q k^T, times a scale, a
 * causal select against a large negative number, softmax, times v. Run as written, that
 * is two products and four loops over the [T, S] scores, which reach memory, and the
 * products compute every masked score. kiln_dot_product_attention's fused kernel keeps
 * the scores in cache and skips the key blocks a causal query cannot see. This pass
 * (PyTorch's inductor has the like, fuse_attention) finds the written-out form after the
 * optimisation passes have put it in canonical shape and puts the op in its place, so a
 * program gets the kernel without being rewritten:
 *
 *   s  = dot_general(Q, K)       one batch axis (heads) or two (batch, heads), contracting
 *                                the head size; result [batch..., T, S]
 *   sc = s * c | c * s | s / c   c a scalar constant (optional: a scale folded into q)
 *   x  = select(mask, sc, f)     f a scalar constant, -inf or finite; mask (or its negation,
 *      | select(mask, f, sc)     with the branches swapped) the causal triangle j <= i,
 *                                broadcast over the batch axes (optional: no mask); or
 *                                the scale after the mask, c * select(mask, s, f) etc.,
 *                                the op's fill then being f * c rounded to the dtype
 *   p  = softmax(x) over S       as kiln_softmax writes it: exp(x - max) / sum
 *   O  = dot_general(p, V)       contracting S; result [batch..., T, Hv]
 *
 * K and V may be repeats of values with fewer heads (reshape of a broadcast that splits
 * the head axis into (K, G): grouped-query attention written out); the op then reads those
 * values, with K heads, and the repeated copies are never made.
 *
 * where s, sc, x, the exponentials and p have no other reader (in a training program the
 * backward pass reads p, and nothing is recognised: the op's gradient recomputes the
 * probabilities, which costs more than keeping them). The mask may be written any way
 * (iota compares, a constant triangle, ...): it is evaluated by the reference interpreter
 * and compared with the triangle, so nothing about its spelling is assumed.
 *
 * Values: the op with the select's fill as its `fill` attribute is the written-out
 * computation, reassociated (the kernel adds the keys in chunks, with the online softmax's
 * rescaling); a finite fill is kept exactly, not taken for -inf. So, like expand.c and
 * unlike simplify/CSE/DCE, this pass may change rounding, never values. kiln_compile runs
 * it only for a device whose backend has the fused kernel, after the pipeline and before
 * the pipeline runs again (which folds the new transposes and drops the dead scores). */
#include "passes.h"
#include "ir/side.h"
#include "rewrite.h"
#include "reference/reference.h"
#include "trace/trace.h"

#include <math.h>
#include <string.h>

/* The largest mask evaluated (elements of its [T, S] part): 4096 x 4096. */
#define ATTN_MASK_MAX_ELEMS ((int64_t)1 << 24)

typedef struct attn_match {
    bool found;
    int nb;                           /* batch axes of the products: 1 (heads) or 2 */
    uint32_t q, k, v;                 /* old ids */
    int qperm[4], kperm[4], vperm[4]; /* each operand's axes in the op's order */
    double scale, fill;
    bool causal;
} attn_match;

typedef struct attn_scan {
    const kiln_graph *g;
    uint32_t *uses; /* readers of each node, an output counting as one more */
    struct {        /* the last mask decided: CSE leaves the layers of a model one mask */
        uint32_t pred;
        int nb;
        bool negated, known, causal;
    } memo;
} attn_scan;

static const ir_node *node(const attn_scan *a, uint32_t id) {
    return &a->g->nodes[id];
}

/* Read by exactly n nodes, and not an output. */
static bool read_by(const attn_scan *a, uint32_t id, uint32_t n) {
    if (a->uses[id] != n) return false;
    for (uint32_t i = 0; i < a->g->n_outputs; i++)
        if (a->g->outputs[i] == id) return false;
    return !(ir_side_hints(a->g, id) & IR_HINT_PINNED);
}

/* A one-element constant, or a broadcast of one, of dtype t: its value in *v. */
static bool scalar_constant(const attn_scan *a, uint32_t id, kiln_dtype t, double *v) {
    const ir_node *n = node(a, id);
    if (n->op == IR_BROADCAST) n = node(a, ir_in(n)[0]);
    int64_t e = 0;
    if (n->op != IR_CONSTANT || n->dtype != t || !ir_shape_numel(&n->shape, &e) || e != 1)
        return false;
    *v = ir_scalar_load(t, n->data, 0);
    return true;
}

/* id = broadcast_in_dim(reshape(reduce(x) over the last axis)) back to x's shape, or the
 * same without the reshape (the row's max or sum as a softmax writes it). */
static bool row_stat(const attn_scan *a, uint32_t id, ir_op reduce, uint32_t x) {
    const ir_node *b = node(a, id), *xn = node(a, x);
    int r = xn->shape.rank;
    if (b->op != IR_BROADCAST) return false;
    const ir_node *in = node(a, ir_in(b)[0]);
    int ir = in->shape.rank;
    if (ir != r && ir != r - 1) return false;
    for (int i = 0; i < ir; i++)
        if (b->a.bcast_dims[i] != i) return false;
    if (ir == r) { /* kept dims: a reshape of the reduction */
        if (in->op != IR_RESHAPE || in->shape.dims[r - 1] != 1) return false;
        in = node(a, ir_in(in)[0]);
    }
    return in->op == reduce && ir_in(in)[0] == x && in->a.reduce_axes == 1u << (r - 1);
}

/* The axis of an operand of rank nb + 2 that is none of the batch axes nor `used`. */
static int free_axis(int nb, const int *batch, int used) {
    for (int ax = 0; ax < nb + 2; ax++) {
        bool taken = ax == used;
        for (int i = 0; i < nb; i++) taken |= batch[i] == ax;
        if (!taken) return ax;
    }
    return -1;
}

/* Copies the cone of g's node m (it and everything it reads) into t, whose output m
 * becomes; *ok false if the cone reads a parameter or a collective (not a constant) or a
 * value too big to evaluate. Ids are a topological order, so one sweep down from m marks
 * the cone (map[id] = 1) and one sweep up copies it (map[id] = its id in t). map:
 * g->n_nodes entries, zeroed. */
static kiln_status copy_cone(const kiln_graph *g, uint32_t m, kiln_graph *t, uint32_t *map,
                             bool *ok) {
    map[m] = 1;
    for (uint32_t id = m; id >= 1 && *ok; id--) {
        const ir_node *n = &g->nodes[id];
        int64_t e = 0;
        if (!map[id]) continue;
        ir_kind kind = ir_ops[n->op].kind;
        if (n->op == IR_PARAMETER || kind == IRK_COLLECTIVE || kind == IRK_CONTROL ||
            kind == IRK_RESULT || kind == IRK_TRANSFER || !ir_shape_numel(&n->shape, &e) ||
            e > ATTN_MASK_MAX_ELEMS || n->n_in > 16)
            *ok = false;
        for (uint32_t k = 0; k < n->n_in; k++) map[ir_in(n)[k]] = 1;
    }
    for (uint32_t id = 1; id <= m && *ok; id++) {
        const ir_node *n = &g->nodes[id];
        if (!map[id]) continue;
        uint32_t in[16];
        for (uint32_t k = 0; k < n->n_in; k++) in[k] = map[ir_in(n)[k]];
        ir_node c = *n;
        c.name = NULL, c.data = NULL, c.in_heap = NULL;
        size_t bytes = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &bytes);
        if (n->data && bytes) {
            if (!(c.data = host_alloc(g->ctx, bytes)))
                return ctx_oom(g->ctx, "pass attention: a copy of the mask's constant", bytes);
            memcpy(c.data, n->data, bytes);
        }
        if (!(map[id] = ir_graph_append(t, &c, in, n->n_in))) {
            ir_node_release(g->ctx, &c);
            return ctx_oom(g->ctx, "pass attention: a copy of the mask's node", sizeof c);
        }
    }
    return KILN_STATUS_OK;
}

/* Whether bool value `pred` ([batch..., T, S]) says "query i sees key j" as j <= i
 * (*causal) or is true everywhere (!*causal); `negated`: it says the opposite (the fill on
 * its true side). A compare of two iotas is read from its spelling; anything else is
 * evaluated, so it must be computed from constants only. */
static kiln_status mask_decide(const attn_scan *a, uint32_t pred, int nb, bool negated, bool *known,
                               bool *causal) {
    const kiln_graph *g = a->g;
    const ir_node *p = node(a, pred);
    int64_t T = p->shape.dims[nb], S = p->shape.dims[nb + 1];
    *known = false;
    /* Peel the broadcast over the batch axes; the rest is what is evaluated. */
    uint32_t m = pred;
    int out_axis[KILN_MAX_RANK];
    for (int i = 0; i < p->shape.rank; i++) out_axis[i] = i;
    if (p->op == IR_BROADCAST) {
        m = ir_in(p)[0];
        for (int i = 0; i < node(a, m)->shape.rank; i++) out_axis[i] = p->a.bcast_dims[i];
    }
    const ir_node *mn = node(a, m);
    int64_t st = 0, ss = 0, stride = 1; /* m's strides along T and S (0: broadcast) */
    int ti = -1, si = -1;               /* m's axes that are T and S */
    for (int i = mn->shape.rank - 1; i >= 0; i--) {
        int64_t step = mn->shape.dims[i] == 1 ? 0 : stride; /* a size-1 axis is broadcast */
        if (out_axis[i] == nb)
            st = step, ti = i;
        else if (out_axis[i] == nb + 1)
            ss = step, si = i;
        else if (mn->shape.dims[i] != 1)
            return KILN_STATUS_OK; /* differs by batch or head */
        stride *= mn->shape.dims[i];
    }
    if (mn->dtype != KILN_DTYPE_BOOL) return KILN_STATUS_OK;
    /* The usual spelling, decided without evaluating: compare(integer iota, integer iota)
     * with one iota along T (i) and one along S (j), both axes at full length (an iota
     * along a broadcast axis of size 1 is 0); j <= i and i >= j are the triangle, j > i
     * and i < j its negation. */
    if (mn->op == IR_COMPARE && ti >= 0 && si >= 0 && mn->shape.dims[ti] == T &&
        mn->shape.dims[si] == S) {
        const ir_node *x = node(a, ir_in(mn)[0]), *y = node(a, ir_in(mn)[1]);
        if (x->op == IR_IOTA && y->op == IR_IOTA && ir_dtype_is_int(x->dtype)) {
            bool ji = x->a.axis == si && y->a.axis == ti, ij = x->a.axis == ti && y->a.axis == si;
            kiln_cmp c = mn->a.cmp;
            bool tri = (ji && c == KILN_CMP_LE) || (ij && c == KILN_CMP_GE);
            bool untri = (ji && c == KILN_CMP_GT) || (ij && c == KILN_CMP_LT);
            if (tri != untri && tri != negated) { /* seen = the triangle */
                *known = *causal = true;
                return KILN_STATUS_OK;
            }
        }
    }
    if (stride > ATTN_MASK_MAX_ELEMS) return KILN_STATUS_OK;
    kiln_graph *t = NULL;
    uint32_t *map = host_calloc(g->ctx, g->n_nodes, sizeof *map);
    if (!map) return ctx_oom(g->ctx, "pass attention: the mask's map", g->n_nodes * sizeof *map);
    bool ok = true;
    void *val = NULL;
    kiln_status s = kiln_graph_create(g->ctx, "mask", &t);
    if (!s) s = copy_cone(g, m, t, map, &ok);
    if (!s && ok && !(t->outputs = host_alloc(g->ctx, sizeof *t->outputs)))
        s = ctx_oom(g->ctx, "pass attention: the mask's output", sizeof *t->outputs);
    if (!s && ok) {
        t->outputs[0] = map[m], t->n_outputs = 1, t->finished = true;
        s = ref_eval_host(t, NULL, &val);
        if (s && s != KILN_STATUS_HOST_OOM) s = KILN_STATUS_OK, ok = false; /* not evaluable */
    }
    if (!s && ok) {
        const uint8_t *b = val;
        bool tri = true, all = true;
        for (int64_t i = 0; i < T && (tri || all); i++)
            for (int64_t j = 0; j < S && (tri || all); j++) {
                bool seen = (b[i * st + j * ss] != 0) != negated;
                tri &= seen == (j <= i);
                all &= seen;
            }
        *known = tri || all, *causal = tri;
    }
    if (val) {
        size_t bytes = 0;
        ir_shape_nbytes(&mn->shape, mn->dtype, &bytes);
        host_free(g->ctx, val, bytes);
    }
    kiln_graph_destroy(t);
    host_free(g->ctx, map, g->n_nodes * sizeof *map);
    return s;
}

/* Whether id, the key or value operand with `head` its head axis, repeats the heads of
 * a value with fewer: reshape(broadcast_in_dim(x)) that splits the head axis into (K, G)
 * and broadcasts x (K heads) over G, each head k becoming heads k G .. k G + G - 1, as
 * grouped-query attention written out does (LLaMA's repeat_kv). Then *x is that value,
 * whose axes are id's with K heads, so the op reads it as it is. */
static bool repeated_heads(const attn_scan *a, uint32_t id, int head, uint32_t *x, int64_t *G) {
    const ir_node *r = node(a, id);
    if (r->op != IR_RESHAPE) return false;
    const ir_node *b = node(a, ir_in(r)[0]);
    if (b->op != IR_BROADCAST) return false;
    const ir_node *s = node(a, ir_in(b)[0]);
    int R = r->shape.rank;
    if (b->shape.rank != R + 1 || s->shape.rank != R) return false;
    int64_t K = b->shape.dims[head], g = b->shape.dims[head + 1];
    if (g < 2 || K * g != r->shape.dims[head] || s->shape.dims[head] != K) return false;
    for (int i = 0; i < R; i++) {
        int to = i <= head ? i : i + 1; /* x's axis i in the broadcast: all but the G axis */
        if (b->a.bcast_dims[i] != to || b->shape.dims[to] != s->shape.dims[i] ||
            (i != head && r->shape.dims[i] != s->shape.dims[i]))
            return false;
    }
    *x = ir_in(b)[0], *G = g;
    return true;
}

/* mask_decide, remembering the last answer. */
static kiln_status mask_kind(attn_scan *a, uint32_t pred, int nb, bool negated, bool *known,
                             bool *causal) {
    if (a->memo.pred == pred && a->memo.nb == nb && a->memo.negated == negated) {
        *known = a->memo.known, *causal = a->memo.causal;
        return KILN_STATUS_OK;
    }
    kiln_status s = mask_decide(a, pred, nb, negated, known, causal);
    if (!s) {
        a->memo.pred = pred, a->memo.nb = nb, a->memo.negated = negated;
        a->memo.known = *known, a->memo.causal = *known && *causal;
    }
    return s;
}

/* Whether O, a dot_general, ends a written-out attention (the pattern at the top); fills
 * *m. Fails only on host OOM while evaluating a mask. */
static kiln_status match(attn_scan *a, uint32_t o, attn_match *m) {
    const ir_node *on = node(a, o);
    *m = (attn_match){0};
    if (on->op != IR_DOT || (on->dtype != KILN_DTYPE_F32 && on->dtype != KILN_DTYPE_F64) ||
        (ir_side_hints(a->g, o) & IR_HINT_PINNED))
        return KILN_STATUS_OK;
    const kiln_dot_dims *od = &on->a.dot;
    int nb = od->n_batch;
    if ((nb != 1 && nb != 2) || od->n_contract != 1 || on->shape.rank != nb + 2)
        return KILN_STATUS_OK;
    uint32_t p = ir_in(on)[0], v = ir_in(on)[1];
    for (int i = 0; i < nb; i++)
        if (od->lhs_batch[i] != i) return KILN_STATUS_OK;
    if (od->lhs_contract[0] != nb + 1 || !read_by(a, p, 1)) return KILN_STATUS_OK;
    /* p = e / rowsum(e), e = exp(x - rowmax(x)) */
    const ir_node *pn = node(a, p);
    if (pn->op != IR_DIV) return KILN_STATUS_OK;
    uint32_t e = ir_in(pn)[0];
    const ir_node *en = node(a, e);
    if (en->op != IR_EXP || !row_stat(a, ir_in(pn)[1], IR_REDUCE_SUM, e) || !read_by(a, e, 2))
        return KILN_STATUS_OK;
    const ir_node *dn = node(a, ir_in(en)[0]);
    if (dn->op != IR_SUB || !read_by(a, ir_in(en)[0], 1)) return KILN_STATUS_OK;
    uint32_t x = ir_in(dn)[0];
    if (!row_stat(a, ir_in(dn)[1], IR_REDUCE_MAX, x) || !read_by(a, x, 2)) return KILN_STATUS_OK;
    /* x = select(mask, sc, fill), select(!mask, fill, sc) or sc; or the mask first and the
     * scale after it, x = c * select(mask, s, fill) (or / c): the same scores, with the
     * fill scaled as the program rounds it */
    uint32_t sc = x;
    m->fill = -INFINITY;
    double outer = 1;
    bool outer_div = false;
    const ir_node *xn = node(a, x);
    if (xn->op == IR_MUL || xn->op == IR_DIV) {
        bool div = xn->op == IR_DIV;
        int ci = scalar_constant(a, ir_in(xn)[1], xn->dtype, &outer)           ? 1
                 : !div && scalar_constant(a, ir_in(xn)[0], xn->dtype, &outer) ? 0
                                                                               : -1;
        uint32_t in = ci >= 0 ? ir_in(xn)[1 - ci] : x;
        if (ci >= 0 && outer != 1 && node(a, in)->op == IR_SELECT && read_by(a, in, 1))
            x = in, xn = node(a, x), outer_div = div;
        else
            outer = 1;
    }
    if (xn->op == IR_SELECT) {
        uint32_t pred = ir_in(xn)[0], t = ir_in(xn)[1], f = ir_in(xn)[2];
        bool negated = scalar_constant(a, t, xn->dtype, &m->fill);
        if (!negated && !scalar_constant(a, f, xn->dtype, &m->fill)) return KILN_STATUS_OK;
        if (isnan(m->fill) || m->fill == INFINITY) return KILN_STATUS_OK;
        sc = negated ? f : t;
        if (!read_by(a, sc, 1)) return KILN_STATUS_OK;
        if (outer != 1) { /* the fill as the program scales it, in its dtype */
            if (xn->dtype == KILN_DTYPE_F32)
                m->fill = outer_div ? (float)m->fill / (float)outer : (float)m->fill * (float)outer;
            else
                m->fill = outer_div ? m->fill / outer : m->fill * outer;
            if (isnan(m->fill) || m->fill == INFINITY) return KILN_STATUS_OK;
        }
        bool known = false;
        kiln_status s = mask_kind(a, pred, nb, negated, &known, &m->causal);
        if (s || !known) return s;
    }
    /* sc = s * c, c * s, s / c or s (s itself when the scale came after the mask) */
    uint32_t s = sc;
    m->scale = 1;
    const ir_node *cn = node(a, sc);
    double c;
    if (outer != 1)
        m->scale = outer_div ? 1 / outer : outer;
    else if (cn->op == IR_MUL && scalar_constant(a, ir_in(cn)[1], cn->dtype, &c))
        s = ir_in(cn)[0], m->scale = c;
    else if (cn->op == IR_MUL && scalar_constant(a, ir_in(cn)[0], cn->dtype, &c))
        s = ir_in(cn)[1], m->scale = c;
    else if (cn->op == IR_DIV && scalar_constant(a, ir_in(cn)[1], cn->dtype, &c))
        s = ir_in(cn)[0], m->scale = 1 / c;
    if (!isfinite(m->scale) || (s != sc && !read_by(a, s, 1))) return KILN_STATUS_OK;
    /* s = dot_general(Q, K) over the head size, batched like O */
    const ir_node *sn = node(a, s);
    if (sn->op != IR_DOT) return KILN_STATUS_OK;
    const kiln_dot_dims *sd = &sn->a.dot;
    uint32_t q = ir_in(sn)[0], k = ir_in(sn)[1];
    if (sd->n_batch != nb || sd->n_contract != 1 || node(a, q)->shape.rank != nb + 2 ||
        node(a, k)->shape.rank != nb + 2 || node(a, v)->shape.rank != nb + 2)
        return KILN_STATUS_OK;
    int qt = free_axis(nb, sd->lhs_batch, sd->lhs_contract[0]);
    int ks = free_axis(nb, sd->rhs_batch, sd->rhs_contract[0]);
    int vh = free_axis(nb, od->rhs_batch, od->rhs_contract[0]);
    /* what the op's shape check asks beyond what the products already hold: keys to
     * attend to, and heads (nb = 2: batch, heads; nb = 1: heads) */
    int64_t S = node(a, k)->shape.dims[ks], heads = node(a, q)->shape.dims[sd->lhs_batch[nb - 1]];
    if (S < 1 || heads < 1) return KILN_STATUS_OK;
    /* the op's order: [B, T, N, H] (nb = 2) or [T, N, H] (nb = 1, the heads batched) */
    if (nb == 2) {
        int qp[4] = {sd->lhs_batch[0], qt, sd->lhs_batch[1], sd->lhs_contract[0]};
        int kp[4] = {sd->rhs_batch[0], ks, sd->rhs_batch[1], sd->rhs_contract[0]};
        int vp[4] = {od->rhs_batch[0], od->rhs_contract[0], od->rhs_batch[1], vh};
        memcpy(m->qperm, qp, sizeof qp), memcpy(m->kperm, kp, sizeof kp);
        memcpy(m->vperm, vp, sizeof vp);
    } else {
        int qp[3] = {qt, sd->lhs_batch[0], sd->lhs_contract[0]};
        int kp[3] = {ks, sd->rhs_batch[0], sd->rhs_contract[0]};
        int vp[3] = {od->rhs_contract[0], od->rhs_batch[0], vh};
        memcpy(m->qperm, qp, sizeof qp), memcpy(m->kperm, kp, sizeof kp);
        memcpy(m->vperm, vp, sizeof vp);
    }
    if (!m->causal) m->fill = -INFINITY; /* means nothing without the mask */
    /* grouped heads written as a repeat of k and v: the op reads them unrepeated */
    uint32_t k0, v0;
    int64_t gk, gv;
    int head_k = m->kperm[nb], head_v = m->vperm[nb]; /* the op's N axis: 2 of 4, 1 of 3 */
    if (repeated_heads(a, k, head_k, &k0, &gk) && repeated_heads(a, v, head_v, &v0, &gv) &&
        gk == gv)
        k = k0, v = v0;
    m->nb = nb, m->q = q, m->k = k, m->v = v, m->found = true;
    return KILN_STATUS_OK;
}

static kiln_value permuted(kiln_graph *g, uint32_t id, int rank, const int *perm) {
    for (int i = 0; i < rank; i++)
        if (perm[i] != i) return kiln_transpose(g, trace_value(g, id), perm);
    return trace_value(g, id);
}

static kiln_status attention_visit(pass_rebuild *rb, uint32_t id, void *user) {
    const attn_match *m = &((const attn_match *)user)[id];
    if (!m->found) return pass_copy(rb, id);
    const ir_node *o = &rb->old->nodes[id];
    kiln_graph *g = rb->g;
    g->cur_file = o->file, g->cur_line = o->line;
    int r = m->nb + 2, back4[4] = {0, 2, 1, 3}, back3[3] = {1, 0, 2};
    kiln_value q = permuted(g, rb->map[m->q], r, m->qperm);
    kiln_value k = permuted(g, rb->map[m->k], r, m->kperm);
    kiln_value v = permuted(g, rb->map[m->v], r, m->vperm);
    kiln_value y = trace_attention(g, q, k, v, m->scale, m->causal, m->fill);
    y = kiln_transpose(g, y, m->nb == 2 ? back4 : back3); /* back to [batch..., T, Hv] */
    if (g->status) /* a host allocation failed (match checked what the op's shapes need) */
        return ctx_error(g->ctx, g->status, "pass attention: dot_general %%%u: %s", id,
                         g->error ? g->error : kiln_status_name(g->status));
    rb->map[id] = y.id; /* the walker gives the new nodes o's backward flag and marks */
    return KILN_STATUS_OK;
}

kiln_status pass_attention_run(const kiln_graph *g, kiln_graph **out, pass_stats *stats) {
    *out = NULL;
    attn_scan a = {.g = g, .uses = host_calloc(g->ctx, g->n_nodes, sizeof *a.uses)};
    attn_match *m = host_calloc(g->ctx, g->n_nodes, sizeof *m);
    kiln_status s = KILN_STATUS_OK;
    if (!a.uses || !m)
        s = ctx_oom(g->ctx, "pass attention: per-node tables",
                    g->n_nodes * (sizeof *a.uses + sizeof *m));
    for (uint32_t id = 1; !s && id < g->n_nodes; id++)
        for (uint32_t k = 0; k < g->nodes[id].n_in; k++) a.uses[ir_in(&g->nodes[id])[k]]++;
    for (uint32_t i = 0; !s && i < g->n_outputs; i++) a.uses[g->outputs[i]]++;
    uint32_t found = 0;
    for (uint32_t id = 1; !s && id < g->n_nodes; id++)
        if (!(s = match(&a, id, &m[id]))) found += m[id].found;
    if (!s && found) s = pass_rebuild_graph(g, "attention", attention_visit, m, out);
    if (!s && found && stats) stats->attention += found;
    host_free(g->ctx, a.uses, g->n_nodes * sizeof *a.uses);
    host_free(g->ctx, m, g->n_nodes * sizeof *m);
    return s;
}
