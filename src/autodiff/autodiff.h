/* autodiff.h — reverse mode inside the graph being traced: the VJP rule table shared by
 * the transform (grad.c) and the registry test.
 *
 * A rule reads one forward node and the cotangent of its result and appends, through the
 * public builders (so every new node is typed and verified), the cotangent contribution of
 * each input the transform asks for. Rules only ever append: the forward nodes they read
 * (the node itself, its inputs, its result) stay as they are and are reused, never
 * recomputed, so the backward pass fuses with the forward pass it follows.
 *
 * Invariants a rule keeps: a contribution has its input's dtype and shape; a rule builds
 * nothing for an input whose `need` is false; zeros are broadcast scalars, never constants
 * of full size; the graph's node array may move under any builder call, so a rule reads
 * the node through the copy it is given and input types by id, never through a pointer
 * held across a call. */
#ifndef KILN_AUTODIFF_H
#define KILN_AUTODIFF_H

#include "ir/ir.h"
#include "trace/trace.h" /* ir_composite */

/* The rule of one op. n is a copy of the forward node `id`; ct its cotangent (n's dtype
 * and shape); need[i] says whether input i wants a contribution, which the rule writes to
 * out[i] (left {0, 0} when it has none: a zero contribution). A builder error is left on
 * the graph (sticky); the transform checks the graph's status after each rule. */
typedef void (*ad_rule)(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct,
                        const bool *need, kiln_value *out);

/* The rule of op, or NULL: IRF_NONDIFF ops and PARAMETER (the leaf gradients flow to)
 * have none. */
ad_rule ad_rule_for(ir_op op);

/* The direct rule of composite c (composite_rules.c) given its result's cotangent: writes
 * the contribution of each operand c->in[i] whose need[i] is set to out[i] (three slots). */
void ad_composite_rule(kiln_graph *g, const ir_composite *c, kiln_value ct, const bool *need,
                       kiln_value *out);

/* Tests: whether kiln_grad on g differentiates composites through their parts rather than
 * their direct rules (grad.c). An option of autodiff's own, held in a side table of g
 * (ir/side.h), not in the graph's core; setting it is false on host OOM. */
bool ad_set_primitive_rules_only(kiln_graph *g, bool on);
bool ad_primitive_rules_only(const kiln_graph *g);

/* control_rules.c: the rules of the control ops (while, scan, cond; ir.h, "ir_region").
 * A control node has several results, so its rule takes the cotangent of each:
 * cts[i] for result i (ir_control_n_results of n; {0, 0} for a result with none), and
 * writes the contributions of the inputs whose need is set, as an ad_rule does. The
 * transform (grad.c) calls it with the cotangents of the node and its RESULT nodes.
 * Unlike other rules, SCAN's may rebuild the forward node: control_rules.c says why. */
void ad_control_vjp(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *cts,
                    const bool *need, kiln_value *out);
/* The table's entries: ad_control_rule is ad_control_vjp with only result 0's cotangent;
 * ad_result_rule does nothing (a RESULT node's cotangent is its control node's to use). */
void ad_control_rule(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                     kiln_value *out);
void ad_result_rule(kiln_graph *g, uint32_t id, const ir_node *n, kiln_value ct, const bool *need,
                    kiln_value *out);

/* The name backward nodes' errors carry. */
#define AD_OP "kiln_grad"

/* Forward mode (jvp.c, jvp_rules.c). The rule of one op: n is a copy of forward node `id`,
 * t[k] the tangent of its input k ({0, 0}: a symbolic zero, which has no node; at least one
 * is not). Returns the tangent of n's result, of n's dtype and shape, or {0, 0} when it is
 * structurally zero. Rules only append, through the public builders; a builder error is
 * left on the graph, which the transform checks after each rule. */
typedef kiln_value (*ad_jvp_rule)(kiln_graph *g, uint32_t id, const ir_node *n,
                                  const kiln_value *t);

/* The derivative of an elementwise math function (derivatives.c): dy/dx of forward node
 * `id` (n its copy) as a value of g, for expm1 ... cbrt (the rows after floor in ir.h;
 * {0, 0} for any other op); errors name op. Both partials of atan2(a, b) into d[0], d[1]
 * where need[k] ({0, 0} elsewhere). */
kiln_value ad_math_derivative(kiln_graph *g, const char *op, uint32_t id, const ir_node *n);
void ad_atan2_partials(kiln_graph *g, const ir_node *n, const bool *need, kiln_value *d);

/* trunc(a / b), the quotient rem drops: the derivative of rem(a, b) in b is its negation,
 * as JAX's (rules.c; the JVP rule shares it). */
kiln_value ad_trunc_quotient(kiln_graph *g, kiln_value a, kiln_value b);

/* The JVP rule of op, or NULL: IRF_NONDIFF ops (a zero tangent) and PARAMETER (a leaf: its
 * tangent is the caller's or zero) have none. */
ad_jvp_rule ad_jvp_rule_for(ir_op op);

/* A nested forward sweep: the tangent of value `last`, where nodes first..last were just
 * appended and read earlier values seeds[0..n) (distinct ids) whose tangents are
 * tangents[i] ({0, 0} for zero). {0, 0} when it is zero or on error (left on g).
 * Attention's rule differentiates its primitive form with it. */
kiln_value ad_jvp_region(kiln_graph *g, uint32_t first, uint32_t last, int n, const uint32_t *seeds,
                         const kiln_value *tangents);

/* control_jvp.c: the tangents of control node `id` (n a copy of it; t[k] its input k's,
 * {0, 0} for zero), one per result into res_t[0..ir_control_n_results(n)) ({0, 0} for an
 * integer or bool result), from a new control node of the same kind that carries the
 * primal values and their tangents. The table's entries for control ops only mark them
 * as differentiable; jvp.c calls this instead. */
void ad_control_jvp(kiln_graph *g, uint32_t id, const ir_node *n, const kiln_value *t,
                    kiln_value *res_t);

/* The reverse sweep's counterpart (grad.c): the contributions out[i] (where need[i]; {0, 0}
 * for none) to values seeds[0..n) (distinct ids below first) of value `last`'s cotangent
 * ct, where nodes first..last were just appended and read the seeds. The rules of the
 * attention gradient's kinds differentiate their primitive form with it. */
void ad_vjp_region(kiln_graph *g, uint32_t first, uint32_t last, kiln_value ct, int n,
                   const uint32_t *seeds, const bool *need, kiln_value *out);

/* The name tangent nodes' errors carry. */
#define AD_JVP_OP "kiln_jvp"

/* Batching (vmap.c, vmap_rules.c; kiln.h, kiln_vmap). The transform walks fn's sub-graph s
 * (one example) in id order and emits the batched computation into g. Every value of s
 * maps to a value of g that is either not batched (the same type as in s: nothing batched
 * reached it) or batched with the batch axis first ([B, per-example dims...]): kiln_vmap
 * moves an argument's batch axis to the front once, and every rule keeps it there, so no
 * rule has to track an axis (JAX's choice too), and outputs move it to out_axes at the end. */
typedef struct ad_vmap {
    kiln_graph *g;       /* where the batched computation goes */
    const kiln_graph *s; /* fn's sub-graph: never changed by the transform */
    int64_t size;        /* the batch size B */
    kiln_value *map;     /* [s->n_nodes]: each node's value in g */
    uint8_t *batched;    /* [s->n_nodes]: 1 when map[id] carries the batch at axis 0 */
    char op[96];         /* "kiln_vmap (batching dot_general)": the name errors carry */
} ad_vmap;

/* The batching rule of one op: n is a copy of node id of w->s, at least one of whose
 * inputs is batched; writes the batched value (batch at axis 0) of each of its results to
 * out (one, or ir_control_n_results for a control node). Errors are left on w->g. */
typedef void (*ad_vmap_rule)(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out);

/* An op's entry in the batching table: its rule and the kind of rule it is (docs/ops.md
 * names the same kinds), or, with no rule, why not (kiln_vmap's error quotes it).
 * tests/test_registry.c checks that every op has one or the other. */
typedef struct ad_vmap_entry {
    ad_vmap_rule rule;
    const char *kind;
    const char *refusal;
} ad_vmap_entry;
const ad_vmap_entry *ad_vmap_entry_for(ir_op op);

/* What rules share (vmap.c). ad_vmap_in: input k of n as a value of g batched at axis 0
 * (an unbatched one broadcast to [B, ...]). ad_vmap_emit: a copy of tmpl (its op,
 * attributes, shape for the ops that read it, constant data, region) over in[0..n_in),
 * typed again, on graph dst. ad_vmap_sequential: the slow path any op may fall back to,
 * a kiln_scan over the batch axis that runs the op once per example (JAX's sequential
 * fallback): correct for every op, but a loop. */
kiln_value ad_vmap_in(ad_vmap *w, const ir_node *n, uint32_t k);
kiln_value ad_vmap_emit(kiln_graph *dst, const char *op, const ir_node *tmpl, const kiln_value *in,
                        uint32_t n_in);
void ad_vmap_sequential(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out);
/* Small builders the rules use, named w->op in errors: x with axis `from` moved to `to`;
 * x reshaped to rank/dims. */
kiln_value ad_vmap_moveaxis(ad_vmap *w, kiln_value x, int from, int to);
kiln_value ad_vmap_reshape(ad_vmap *w, kiln_value x, int rank, const int64_t *dims);

/* v (unbatched, of g) broadcast to [size, its dims...], errors named op. */
kiln_value ad_vmap_broadcast(kiln_graph *g, const char *op, int64_t size, kiln_value v);
/* For control flow (vmap_control.c): which outputs of sub-graph s depend on a batched
 * parameter (param_batched[p] for each parameter; flags: scratch of s->n_nodes bytes). */
void ad_vmap_deps(const kiln_graph *s, const uint8_t *param_batched, uint8_t *out_batched,
                  uint8_t *flags);
/* Sub-graph s batched into dst (which may be a new body being built): its parameter p is
 * vals[p], batched at axis 0 when batched[p]; outs and out_batched receive its outputs. */
kiln_status ad_vmap_subgraph(kiln_graph *dst, const kiln_graph *s, int64_t size,
                             const kiln_value *vals, const uint8_t *batched, kiln_value *outs,
                             uint8_t *out_batched);
/* The batching rules of scan, cond and while (vmap_control.c). */
void ad_vmap_scan(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out);
void ad_vmap_cond(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out);
void ad_vmap_while(ad_vmap *w, uint32_t id, const ir_node *n, kiln_value *out);

#define AD_VMAP_OP "kiln_vmap"

#endif
