/* attention.c — jax.nn.dot_product_attention as one op (IR_ATTENTION), its gradient as
 * the same op's other kinds, and the primitive form of each.
 *
 * The op is one node so that a backend can run it as a fused kernel (the CPU's keeps each
 * block of scores in cache and skips the key blocks a causal query block cannot see:
 * src/backend/cpu/cpu_attention.c). Its gradient is four more nodes of the op (ir.h,
 * ir_attn_kind): the rows' log-sum-exp, recomputed from q and k, and the gradients of q, k
 * and v, each of which recomputes the probabilities it needs from q, k and the log-sum-exp
 * (FlashAttention-2's backward pass), so training saves q, k, v and the output, and no
 * kernel writes a [T, S] array. The same computations written with primitives are built
 * here once per kind and used by the expansion a backend without a kernel gets
 * (src/passes/expand.c; CSE then shares the probabilities the three gradients recompute)
 * and by the kinds' own derivatives (src/autodiff).
 *
 * Layout: q [B, T, N, H], k [B, S, K, H], v [B, S, K, Hv], out [B, T, N, Hv], query head
 * n reading key/value head n / G with G = N / K; rank-3 operands are the same with B = 1. */
#include "trace.h"

#include <math.h>

kiln_value trace_attention(kiln_graph *g, kiln_value q, kiln_value k, kiln_value v, double scale,
                           bool causal, double fill) {
    ir_node n = {.op = IR_ATTENTION};
    n.a.attn.scale = scale;
    n.a.attn.causal = causal;
    n.a.attn.fill = fill;
    return trace_attention_kind(g, "kiln_dot_product_attention", &n, (kiln_value[]){q, k, v}, 3);
}

kiln_value trace_attention_kind(kiln_graph *g, const char *op, const ir_node *tmpl,
                                const kiln_value *in, uint32_t n_in) {
    static const char *const what[] = {"the query",     "the key",         "the value",
                                       "the cotangent", "the log-sum-exp", "delta"};
    if (!trace_ready(g, op)) return KN_NONE;
    int kind = tmpl->a.attn.kind;
    uint32_t want = ir_attn_operands(kind), ids[6];
    if (n_in != want) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "dot_product_attention's %s kind takes %u operands, not %u",
                   ir_attn_kind_name(kind) ? ir_attn_kind_name(kind) : "?", want, n_in);
        return KN_NONE;
    }
    for (uint32_t i = 0; i < n_in; i++) {
        if (!trace_node(g, op, in[i], what[i])) return KN_NONE;
        ids[i] = in[i].id;
    }
    ir_node n = {.op = IR_ATTENTION, .a.attn = tmpl->a.attn};
    return trace_emit(g, op, &n, ids, n_in);
}

kiln_value kiln_dot_product_attention(kiln_graph *g, kiln_value q, kiln_value k, kiln_value v,
                                      const kiln_attention_options *o) {
    const char *op = "kiln_dot_product_attention";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *qn = trace_node(g, op, q, "the query");
    if (!qn) return KN_NONE;
    double scale = o ? o->scale : 0;
    if (scale == 0 && qn->shape.rank >= 1) { /* JAX's scale=None; a bad rank fails below */
        int64_t h = qn->shape.dims[qn->shape.rank - 1];
        scale = 1 / sqrt((double)(h ? h : 1));
    }
    return trace_attention(g, q, k, v, scale, o && o->is_causal, -INFINITY);
}

/* ------------------------------------------------------- primitive form ---- */

/* The operands as rank 4 and the sizes, read once. */
typedef struct attn_form {
    kiln_graph *g;
    kiln_dtype t;
    bool rank3; /* the op's operands had no batch axis */
    int64_t B, T, S, N, K, H, Hv;
    double scale;
    bool causal;
    double fill;           /* the score of a key j > i when causal (-inf or finite) */
    kiln_value q, k, v;    /* rank 4 */
    kiln_value krep, vrep; /* k, v with each key/value head repeated for its G query heads */
} attn_form;

static kiln_value to_rank4(kiln_graph *g, kiln_value x) {
    const ir_shape *s = &g->nodes[x.id].shape;
    if (s->rank == 4) return x;
    int64_t d[4] = {1, s->dims[0], s->dims[1], s->dims[2]};
    return kiln_reshape(g, x, 4, d);
}

/* [B, S, K, X] -> [B, S, N, X], head n = k G + g holding head k (JAX's grouping). */
static kiln_value repeat_heads(const attn_form *f, kiln_value x, int64_t X) {
    if (f->N == f->K) return x;
    kiln_graph *g = f->g;
    int64_t G = f->N / f->K, d5[5] = {f->B, f->S, f->K, G, X}, d4[4] = {f->B, f->S, f->N, X};
    int bd[4] = {0, 1, 2, 4};
    return kiln_reshape(g, kiln_broadcast_in_dim(g, x, 5, d5, bd), 4, d4);
}

/* The inverse's adjoint: [B, S, N, X] -> [B, S, K, X], summing each group of G heads. */
static kiln_value sum_groups(const attn_form *f, kiln_value x, int64_t X) {
    if (f->N == f->K) return x;
    kiln_graph *g = f->g;
    int64_t d5[5] = {f->B, f->S, f->K, f->N / f->K, X};
    int ax = 3;
    return kiln_reduce_sum(g, kiln_reshape(g, x, 5, d5), 1, &ax, false);
}

static void form_open(attn_form *f, kiln_graph *g, const ir_node *n, kiln_value q, kiln_value k,
                      kiln_value v) {
    const ir_shape *qs = &g->nodes[q.id].shape, *ks = &g->nodes[k.id].shape,
                   *vs = &g->nodes[v.id ? v.id : k.id].shape; /* LSE reads no v */
    int r = qs->rank, o = r - 3;
    *f = (attn_form){.g = g,
                     .t = g->nodes[q.id].dtype,
                     .rank3 = r == 3,
                     .B = o ? qs->dims[0] : 1,
                     .T = qs->dims[o],
                     .S = ks->dims[o],
                     .N = qs->dims[o + 1],
                     .K = ks->dims[o + 1],
                     .H = qs->dims[o + 2],
                     .Hv = vs->dims[o + 2],
                     .scale = n->a.attn.scale,
                     .causal = n->a.attn.causal,
                     .fill = n->a.attn.fill};
    f->q = to_rank4(g, q), f->k = to_rank4(g, k);
    f->krep = repeat_heads(f, f->k, f->H);
    if (!v.id) return;
    f->v = to_rank4(g, v);
    f->vrep = repeat_heads(f, f->v, f->Hv);
}

/* Whether query i sees key j, [B, N, T, S]: j <= i. */
static kiln_value seen_mask(const attn_form *f) {
    kiln_graph *g = f->g;
    int64_t ts[2] = {f->T, f->S}, d4[4] = {f->B, f->N, f->T, f->S};
    int bd[2] = {2, 3};
    kiln_value seen = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I64, 2, ts, 1),
                                   kiln_iota(g, KILN_DTYPE_I64, 2, ts, 0), KILN_CMP_LE);
    return kiln_broadcast_in_dim(g, seen, 4, d4, bd);
}

/* Per (b, n): [B, T, N, X] x times [B, S, N, X] y transposed, over X -> [B, N, T, S]
 * (Q K^T, dO V^T). */
static kiln_value over_features(const attn_form *f, kiln_value x, kiln_value y) {
    kiln_dot_dims d = {.n_contract = 1,
                       .lhs_contract = {3},
                       .rhs_contract = {3},
                       .n_batch = 2,
                       .lhs_batch = {0, 2},
                       .rhs_batch = {0, 2}};
    return kiln_dot_general(f->g, x, y, &d);
}

/* [B, N, T, X] -> [B, T, N, X], and to rank 3 when the op's operands were. */
static kiln_value to_output(const attn_form *f, kiln_value x, int64_t X) {
    int perm[4] = {0, 2, 1, 3};
    kiln_value y = kiln_transpose(f->g, x, perm);
    if (!f->rank3) return y;
    int64_t d[3] = {f->T, f->N, X};
    return kiln_reshape(f->g, y, 3, d);
}

/* [B, S, K, X] back to the operand's rank. */
static kiln_value to_operand(const attn_form *f, kiln_value x, int64_t L, int64_t heads,
                             int64_t X) {
    if (!f->rank3) return x;
    int64_t d[3] = {L, heads, X};
    return kiln_reshape(f->g, x, 3, d);
}

/* Per (b, n): [B, N, T, S] x times [B, S, N, X] y over S -> [B, N, T, X] (P V, dS K). */
static kiln_value over_keys(const attn_form *f, kiln_value x, kiln_value y) {
    kiln_dot_dims d = {.n_contract = 1,
                       .lhs_contract = {3},
                       .rhs_contract = {1},
                       .n_batch = 2,
                       .lhs_batch = {0, 1},
                       .rhs_batch = {0, 2}};
    return kiln_dot_general(f->g, x, y, &d);
}

/* Per (b, n): [B, N, T, S] x transposed times [B, T, N, X] y over T, as a cotangent of
 * k or v: [B, S, K, X] after summing each group's heads, at the operand's rank (P^T ct,
 * dS^T Q). */
static kiln_value over_queries(const attn_form *f, kiln_value x, kiln_value y, int64_t X) {
    kiln_dot_dims d = {.n_contract = 1,
                       .lhs_contract = {2},
                       .rhs_contract = {1},
                       .n_batch = 2,
                       .lhs_batch = {0, 1},
                       .rhs_batch = {0, 2}};
    int perm[4] = {0, 2, 1, 3};
    kiln_value r = kiln_transpose(f->g, kiln_dot_general(f->g, x, y, &d), perm);
    return to_operand(f, sum_groups(f, r, X), f->S, f->K, X);
}

/* [B, N, T, S] scores scale q.k, keys j > i set to the fill when causal (with -inf,
 * exp(-inf - anything finite) is exactly 0, and j = 0 is always there). */
static kiln_value scores(const attn_form *f) {
    kiln_graph *g = f->g;
    kiln_value s = kiln_mul(g, over_features(f, f->q, f->krep), kiln_scalar(g, f->t, f->scale));
    if (f->causal) {
        int64_t d4[4] = {f->B, f->N, f->T, f->S};
        s = kiln_select(g, seen_mask(f), s, kiln_full(g, f->t, 4, d4, f->fill));
    }
    return s;
}

/* [B, T, N] (or [T, N]) rows -> [B, N, T, S], each row's value along its keys. */
static kiln_value along_keys(const attn_form *f, kiln_value rows) {
    kiln_graph *g = f->g;
    if (f->rank3) rows = kiln_reshape(g, rows, 3, (int64_t[]){1, f->T, f->N});
    int64_t d4[4] = {f->B, f->N, f->T, f->S};
    rows = kiln_transpose(g, rows, (int[]){0, 2, 1});
    return kiln_broadcast_in_dim(g, rows, 4, d4, (int[]){0, 1, 2});
}

/* The rows' log-sum-exp [B, T, N] (or [T, N]), in the sum's type. */
static kiln_value lse_of(const attn_form *f) {
    kiln_graph *g = f->g;
    int ax = 3, perm[3] = {0, 2, 1};
    kiln_value s = kiln_convert(g, scores(f), ir_attn_sum_dtype(f->t));
    kiln_value m = kiln_reduce_max(g, s, 1, &ax, false);
    int64_t d4[4] = {f->B, f->N, f->T, f->S};
    kiln_value e =
        kiln_exp(g, kiln_sub(g, s, kiln_broadcast_in_dim(g, m, 4, d4, (int[]){0, 1, 2})));
    kiln_value r =
        kiln_transpose(g, kiln_add(g, kiln_log(g, kiln_reduce_sum(g, e, 1, &ax, false)), m), perm);
    if (!f->rank3) return r;
    return kiln_reshape(g, r, 2, (int64_t[]){f->T, f->N});
}

kiln_value trace_attention_primitives(kiln_graph *g, const ir_node *n, const kiln_value *in) {
    attn_form f;
    int kind = n->a.attn.kind;
    form_open(&f, g, n, in[0], in[1], kind == IR_ATTN_LSE ? KN_NONE : in[2]);
    if (kind == IR_ATTN_FORWARD)
        return to_output(&f, over_keys(&f, kiln_softmax(g, scores(&f), -1), f.vrep), f.Hv);
    if (kind == IR_ATTN_LSE) return lse_of(&f);
    /* p = exp(s - lse); dv = p^T ct; ds = p (ct v^T - delta) scale; dq = ds k, dk = ds^T q.
     * A finite fill gives the keys a query does not see a probability, but their score is a
     * constant: ds is 0 there. */
    kiln_dtype st = ir_attn_sum_dtype(f.t);
    kiln_value c4 = to_rank4(g, in[3]);
    kiln_value p = kiln_exp(g, kiln_sub(g, kiln_convert(g, scores(&f), st), along_keys(&f, in[4])));
    if (kind == IR_ATTN_GRAD_V) return over_queries(&f, kiln_convert(g, p, f.t), c4, f.Hv);
    kiln_value dp = kiln_convert(g, over_features(&f, c4, f.vrep), st); /* [B, N, T, S] */
    kiln_value ds = kiln_mul(g, kiln_mul(g, p, kiln_sub(g, dp, along_keys(&f, in[5]))),
                             kiln_scalar(g, st, f.scale));
    if (f.causal && f.fill != -INFINITY) {
        int64_t d4[4] = {f.B, f.N, f.T, f.S};
        ds = kiln_select(g, seen_mask(&f), ds, kiln_full(g, st, 4, d4, 0));
    }
    ds = kiln_convert(g, ds, f.t);
    if (kind == IR_ATTN_GRAD_Q) return to_output(&f, over_keys(&f, ds, f.krep), f.H);
    return over_queries(&f, ds, f.q, f.H);
}

/* The cotangents of q, k and v as the gradient's kinds: the rows' log-sum-exp recomputed
 * (LSE), delta = rowsum(ct * out) (FlashAttention's D: rowsum(dp * p) without a [T, S]
 * product) in the sum's type, and a node per operand asked for. */
void trace_attention_vjp(kiln_graph *g, const ir_node *n, kiln_value q, kiln_value k, kiln_value v,
                         kiln_value out, kiln_value ct, const bool *need, kiln_value *grads) {
    const char *op = "kiln_grad (dot_product_attention)";
    ir_node t = *n;
    kiln_dtype st = ir_attn_sum_dtype(n->dtype);
    t.a.attn.kind = IR_ATTN_LSE;
    kiln_value lse = trace_attention_kind(g, op, &t, (kiln_value[]){q, k}, 2);
    int last = g->nodes[out.id].shape.rank - 1;
    kiln_value delta = kiln_reduce_sum(
        g, kiln_mul(g, kiln_convert(g, ct, st), kiln_convert(g, out, st)), 1, &last, false);
    kiln_value in[6] = {q, k, v, ct, lse, delta};
    static const int kinds[3] = {IR_ATTN_GRAD_Q, IR_ATTN_GRAD_K, IR_ATTN_GRAD_V};
    for (int i = 0; i < 3; i++) {
        if (!need[i]) continue;
        t.a.attn.kind = kinds[i];
        grads[i] = trace_attention_kind(g, op, &t, in, 6);
    }
}
