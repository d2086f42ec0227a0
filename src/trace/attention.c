/* attention.c — jax.nn.dot_product_attention as one op (IR_ATTENTION), its primitive form
 * and its gradient.
 *
 * The op is one node so that a backend can run it as a fused kernel (the CPU's keeps each
 * block of scores in cache and skips the key blocks a causal query block cannot see:
 * src/backend/cpu/cpu_attention.c). The same computation written with primitives is built
 * here once and used twice: by the expansion a backend without the kernel gets
 * (src/passes/expand.c), and by the gradient, which recomputes the probabilities from q
 * and k instead of keeping them (so training saves q, k, v and the output, not [T, S]).
 *
 * Layout: q [B, T, N, H], k [B, S, K, H], v [B, S, K, Hv], out [B, T, N, Hv], query head
 * n reading key/value head n / G with G = N / K; rank-3 operands are the same with B = 1. */
#include "trace.h"

#include <math.h>

kiln_value trace_attention(kiln_graph *g, kiln_value q, kiln_value k, kiln_value v, double scale,
                           bool causal, double fill) {
    const char *op = "kiln_dot_product_attention";
    if (!trace_ready(g, op)) return KN_NONE;
    if (!trace_node(g, op, q, "the query") || !trace_node(g, op, k, "the key") ||
        !trace_node(g, op, v, "the value"))
        return KN_NONE;
    ir_node n = {.op = IR_ATTENTION};
    n.a.attn.scale = scale;
    n.a.attn.causal = causal;
    n.a.attn.fill = fill;
    uint32_t in[3] = {q.id, k.id, v.id};
    return trace_emit(g, op, &n, in, 3);
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
                   *vs = &g->nodes[v.id].shape;
    int r = qs->rank, o = r - 3;
    *f = (attn_form){.g = g,
                     .t = n->dtype,
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
    f->q = to_rank4(g, q), f->k = to_rank4(g, k), f->v = to_rank4(g, v);
    f->krep = repeat_heads(f, f->k, f->H);
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

/* The probabilities [B, N, T, S]: softmax over j of scale q.k, keys j > i set to the fill
 * first when causal (with -inf, exp(-inf - max) is exactly 0, and j = 0 is always there). */
static kiln_value probabilities(const attn_form *f) {
    kiln_graph *g = f->g;
    kiln_value s = kiln_mul(g, over_features(f, f->q, f->krep), kiln_scalar(g, f->t, f->scale));
    if (f->causal) {
        int64_t d4[4] = {f->B, f->N, f->T, f->S};
        s = kiln_select(g, seen_mask(f), s, kiln_full(g, f->t, 4, d4, f->fill));
    }
    return kiln_softmax(g, s, -1);
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

kiln_value trace_attention_primitives(kiln_graph *g, const ir_node *n, kiln_value q, kiln_value k,
                                      kiln_value v) {
    attn_form f;
    form_open(&f, g, n, q, k, v);
    return to_output(&f, over_keys(&f, probabilities(&f), f.vrep), f.Hv);
}

/* out = P V with P = softmax(scale Q K^T) per (b, n); given ct = d out:
 *   dV = P^T ct, dP = ct V^T, dS = P (dP - rowsum(ct * out)), dQ = scale dS K,
 *   dK = scale dS^T Q,
 * rowsum(ct * out) being rowsum(dP * P) (FlashAttention's D) without a [T, S] product;
 * dK and dV sum over the G query heads that share a key/value head. A finite fill gives
 * the keys a query does not see a probability, but their score is a constant: dS is 0
 * there. */
void trace_attention_vjp(kiln_graph *g, const ir_node *n, kiln_value q, kiln_value k, kiln_value v,
                         kiln_value out, kiln_value ct, const bool *need, kiln_value *grads) {
    attn_form f;
    form_open(&f, g, n, q, k, v);
    kiln_value p = probabilities(&f), o4 = to_rank4(g, out), c4 = to_rank4(g, ct);
    if (need[2]) grads[2] = over_queries(&f, p, c4, f.Hv);
    if (!need[0] && !need[1]) return;
    kiln_value dp = over_features(&f, c4, f.vrep); /* [B, N, T, S] */
    int h = 3, perm3[3] = {0, 2, 1}, bd[3] = {0, 1, 2};
    kiln_value rows = kiln_transpose(g, kiln_reduce_sum(g, kiln_mul(g, c4, o4), 1, &h, false),
                                     perm3); /* [B, N, T] */
    int64_t d4[4] = {f.B, f.N, f.T, f.S};
    kiln_value ds =
        kiln_mul(g, kiln_mul(g, p, kiln_sub(g, dp, kiln_broadcast_in_dim(g, rows, 4, d4, bd))),
                 kiln_scalar(g, f.t, f.scale));
    if (f.causal && f.fill != -INFINITY)
        ds = kiln_select(g, seen_mask(&f), ds, kiln_full(g, f.t, 4, d4, 0));
    if (need[0]) grads[0] = to_output(&f, over_keys(&f, ds, f.krep), f.H);
    if (need[1]) grads[1] = over_queries(&f, ds, f.q, f.H);
}
