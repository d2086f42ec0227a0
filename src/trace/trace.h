/* trace.h — the tracer's internals shared by its files: checking the values a user
 * passes, recording the builder's first error, and emitting typed nodes.
 *
 * Location handling: the header's macros push the user's file and line before a
 * builder's arguments are evaluated and pop it when the builder returns
 * (kiln_graph_push_at, kiln_graph_pop_at), so a builder called among the arguments (from
 * a helper on another line) records its own line while it runs and then gives the outer
 * call its line back. Every node and error carries the current location (g->cur_file,
 * g->cur_line); composites and implicit broadcasts, made by calls without the macros,
 * thus get the caller's line. kiln_graph_at sets the current location by hand. */
#ifndef KILN_TRACE_H
#define KILN_TRACE_H

#include "ir/ir.h"
#include "role.h"

static const kiln_value KN_NONE = {0, 0};

/* True if the graph can take another op: not NULL, not finished, no earlier error. On a
 * finished graph it sets the context's message but leaves the graph as it is. */
bool trace_ready(kiln_graph *g, const char *op);
/* Records the builder's first error and returns the invalid value. The message reads
 * "<op>: <reason>; operands: f32[2,3], ... (at file:line)": trace_fail_on lists the types
 * of the nodes in[0..n_in), trace_fail lists none. Later errors change nothing. */
kiln_value trace_fail(kiln_graph *g, kiln_status code, const char *op, const char *fmt, ...)
    KN_PRINTF(4, 5);
kiln_value trace_fail_on(kiln_graph *g, const uint32_t *in, uint32_t n_in, kiln_status code,
                         const char *op, const char *fmt, ...) KN_PRINTF(6, 7);
/* The node behind a user value, or NULL after recording an error naming `what`. */
const ir_node *trace_node(kiln_graph *g, const char *op, kiln_value v, const char *what);
/* Types tmpl (ir_infer) and appends it. On a type error the message names the op, its
 * operands' types and the reason. */
kiln_value trace_emit(kiln_graph *g, const char *op, ir_node *tmpl, const uint32_t *in,
                      uint32_t n_in);
static inline kiln_value trace_value(const kiln_graph *g, uint32_t id) {
    return (kiln_value){g->id, id};
}

/* Records role r on value v of g unless it already has one (role.h: first writer wins: a
 * parameter passed back as a gradient stays a parameter). Checked values only: v must be a
 * valid value of g; the invalid value is ignored (the call that made it failed). A host
 * OOM is the builder's error, named op. */
void trace_set_role(kiln_graph *g, const char *op, kiln_value v, trace_role r);

/* Normalises an axis (negative counts from the end); false if out of range. */
bool trace_axis(int axis, int rank, int *out);
/* s = the shape (rank, dims) a source builder was given; false, with op's sticky error,
 * when the rank is out of range or dims is NULL for a positive rank. Dims are checked
 * later, with the dtype (ir_check_shape). */
bool trace_make_shape(kiln_graph *g, const char *op, int rank, const int64_t *dims, ir_shape *s);
/* The user's reduction axes of value x as a mask (negative axes count from the end; NULL
 * means every axis); false after recording the error. */
bool trace_axes_mask(kiln_graph *g, const char *op, kiln_value x, int naxes, const int *axes,
                     uint32_t *mask);
/* NumPy broadcasting of value v to shape `to` (no-op when already that shape). */
kiln_value trace_broadcast_to(kiln_graph *g, const char *op, kiln_value v, const ir_shape *to);
/* The NumPy broadcast of shapes a and b into *out; false (with the result's axis in *bad)
 * if they clash. No error is recorded: the callers word it. */
bool trace_shapes_broadcast(const ir_shape *a, const ir_shape *b, ir_shape *out, int *bad);
/* The NumPy broadcast of the shapes of vals[0..count) (count <= 3, valid values of g) into
 * *out; false after recording an error under op's name when they clash. */
bool trace_broadcast_shape(kiln_graph *g, const char *op, const kiln_value *vals, int count,
                           ir_shape *out);
/* An elementwise node of n's op (and attributes) over vals[0..count) (count <= 3): checks
 * the operands and their dtypes, broadcasts them together and emits it, every error named
 * op. The builders of the plain ops, compare and select, and composites that want an
 * elementwise primitive under their own name (kiln_where). */
kiln_value trace_nary(kiln_graph *g, const char *op, ir_node *n, const kiln_value *vals, int count);
/* A new parameter of g (kiln_parameter without its refusal inside a body: the body's own
 * parameters and captures are made here). */
kiln_value trace_parameter(kiln_graph *g, const char *op, const char *name, kiln_dtype dtype,
                           int rank, const int64_t *dims);
/* Rank-0 constant of dtype t. */
kiln_value trace_scalar(kiln_graph *g, const char *op, kiln_dtype t, double value);

/* An append-only log of fixed-size records, kept as the state of a side table of the
 * tracer's (ir/side.h; the kind's state_size is sizeof(trace_log), its release
 * trace_log_release): the composites, the kiln_custom_vjp calls. */
struct ir_side_kind;
typedef struct trace_log {
    void *v;
    uint32_t n, cap;
    size_t elem;
} trace_log;
void trace_log_release(kiln_context *ctx, void *state);
/* Appends rec (elem bytes) to g's log of `kind`; a no-op after an error; a host OOM is the
 * builder's error, named op. */
void trace_log_push(kiln_graph *g, const char *op, const struct ir_side_kind *kind, size_t elem,
                    const void *rec);
/* The records in the order they were pushed; *n their count (0 and NULL when none). */
const void *trace_log_items(const kiln_graph *g, const struct ir_side_kind *kind, uint32_t *n);

/* A composite the tracer expanded into primitives (src/trace/composite.c). Autodiff may
 * differentiate it as one op with a direct rule (src/autodiff/composite_rules.c) when no
 * node outside it reads its interior: the rule is more stable or keeps less memory than
 * the primitives' rules would. Compiling ignores composites: they are a trace-time fact, kept in a
 * side table of the tracer's (trace_composites). */
typedef enum ir_composite_kind {
    IR_COMP_SOFTMAX,       /* in[0] x; axes: the one axis */
    IR_COMP_LOG_SOFTMAX,   /* in[0] x; axes: the one axis */
    IR_COMP_LOGSUMEXP,     /* in[0] x; axes; keepdims; aux[0] the row max m (0 where not
                            * finite), aux[1] sum(exp(x - m)), both with the axes kept */
    IR_COMP_CROSS_ENTROPY, /* in[0] logits, in[1] labels; aux[0] the row max m and aux[2]
                            * sum(exp(x - m)) [..., 1] (its logsumexp's), aux[1] the label
                            * hit mask bool [..., C] */
    IR_COMP_LAYER_NORM,    /* in[0] x, in[1] scale, in[2] bias (0: none); aux[0] the mean,
                            * aux[1] the reciprocal standard deviation, both [..., 1] */
    IR_COMP_RELU,          /* in[0] x */
    IR_COMP_RMS_NORM,      /* in[0] x, in[1] scale (0: none); aux[0] the reciprocal root mean
                            * square [..., 1 at the axis, ...]; axes: the one axis */
} ir_composite_kind;

typedef struct ir_composite {
    ir_composite_kind kind;
    uint32_t first; /* its nodes are the ids first .. out */
    uint32_t out;   /* its result */
    uint32_t in[3]; /* its operands (ids below first; 0: absent) */
    uint32_t aux[3];
    uint32_t axes; /* reduced axes, a bit per axis */
    bool keepdims;
} ir_composite;

/* Records composite c (its `first` and `out` set) on the graph for autodiff; a no-op after
 * an error. A host OOM is the builder's error, as for any node. */
void trace_composite(kiln_graph *g, const char *op, const ir_composite *c);
/* The composites traced on g, in the order they were traced; *n their count (0 and NULL
 * when none). */
const ir_composite *trace_composites(const kiln_graph *g, uint32_t *n);

/* A kiln_custom_vjp call (custom_vjp.c): its forward function was traced inline, as the
 * nodes first .. last of the graph, and autodiff uses bwd in place of those nodes' rules
 * (src/autodiff/grad.c). Every output is a node of that range made for it and no other
 * output (the tracer copies a returned argument or a repeated value), so an output's
 * cotangent is complete when the backward sweep reaches `last`. in[i] is 0 for an argument a
 * copy of the graph dropped (trace_inline: one the outputs do not read). Like composites, a
 * trace-time fact: compiling ignores it, trace_inline copies it. */
typedef struct trace_custom_vjp {
    uint32_t first, last;
    int n_in, n_out, n_res;
    uint32_t in[KILN_MAX_OUTPUTS];
    uint32_t out[KILN_MAX_OUTPUTS]; /* the n_out outputs, then the n_res residuals */
    kiln_fn fwd, bwd;
    void *user;
    const char *file; /* the kiln_custom_vjp call's location */
    int line;
} trace_custom_vjp;

/* Records r on g; a no-op after an error, a host OOM the builder's error named op. */
void trace_custom_vjp_add(kiln_graph *g, const char *op, const trace_custom_vjp *r);
/* The kiln_custom_vjp calls traced on g, in order; *n their count (0 and NULL when none). */
const trace_custom_vjp *trace_custom_vjps(const kiln_graph *g, uint32_t *n);

/* A RANDOM node (random.c): draw `what` (ir_rng) of dtype t (float draws; ignored for
 * the i32 ones) from key words k0, k1 at counters c, all i32 of one shape. */
kiln_value trace_random(kiln_graph *g, const char *op, int what, kiln_dtype t, kiln_value k0,
                        kiln_value k1, kiln_value c);

/* gather.c: the primitive forms of a GATHER / SCATTER node n over new operands (the
 * expansion's, src/passes/expand.c); n gives the dimension numbers, mode, kind and fill. */
kiln_value trace_gather_primitives(kiln_graph *g, const ir_node *n, kiln_value x, kiln_value idx);
kiln_value trace_scatter_primitives(kiln_graph *g, const ir_node *n, kiln_value x, kiln_value idx,
                                    kiln_value u);
/* For the autodiff rules (gather.c): a SCATTER of `kind` / a GATHER (fill for FILL) with
 * gather/scatter node n's dimension numbers and mode, window sizes n's; the scatter-set
 * winners mask (updates' shape, bool); scatter-min/max's coefficients of the operand's and
 * the updates' derivatives, given the result y. Errors are recorded under op. */
kiln_value trace_scatter_like(kiln_graph *g, const char *op, const ir_node *n, int kind,
                              kiln_value x, kiln_value idx, kiln_value u);
kiln_value trace_gather_like(kiln_graph *g, const char *op, const ir_node *n, kiln_value x,
                             kiln_value idx, double fill);
kiln_value trace_scatter_set_winners(kiln_graph *g, const char *op, const ir_node *n,
                                     kiln_value idx);
void trace_scatter_extremal_coefs(kiln_graph *g, const char *op, const ir_node *n, kiln_value y,
                                  kiln_value *xc, kiln_value *uc);

/* conv.c. trace_conv: a CONV node of `kind` (ir_conv_kind) over a and b with the geometry
 * of CONV node n of g (the gradient rules': each kind's gradients are the other kinds).
 * trace_conv_primitives: CONV node n's value in primitive ops (pad, strided slices,
 * concatenate, dot_general, transposes: the im2col form and its transposes) over a and b,
 * values of g of n's operands' types (n may belong to another graph: the expansion's,
 * src/passes/expand.c). */
kiln_value trace_conv(kiln_graph *g, const char *op, const ir_node *n, int kind, kiln_value a,
                      kiln_value b);
kiln_value trace_conv_primitives(kiln_graph *g, const ir_node *n, kiln_value a, kiln_value b);

/* Linear algebra (linalg.c): the derivatives of a CHOLESKY node n (l its result) and of a
 * TRIANGULAR_SOLVE node n (x its result; a tangent of {0, 0} is a zero), and each op's
 * primitive form (a kiln_fori_loop over rows) for src/passes/expand.c. */
kiln_value trace_cholesky_jvp(kiln_graph *g, const ir_node *n, kiln_value l, kiln_value da);
kiln_value trace_cholesky_vjp(kiln_graph *g, const ir_node *n, kiln_value l, kiln_value ct);
kiln_value trace_triangular_solve_jvp(kiln_graph *g, const ir_node *n, kiln_value a, kiln_value x,
                                      kiln_value da, kiln_value db);
void trace_triangular_solve_vjp(kiln_graph *g, const ir_node *n, kiln_value a, kiln_value x,
                                kiln_value ct, const bool *need, kiln_value *out);
kiln_value trace_cholesky_primitives(kiln_graph *g, const ir_node *n, kiln_value a);
kiln_value trace_triangular_solve_primitives(kiln_graph *g, const ir_node *n, kiln_value a,
                                             kiln_value b);

/* attention.c. trace_attention: the IR_ATTENTION node (kind FORWARD) with the scale as
 * given (the public builder resolves its default). trace_attention_kind: a node of tmpl's
 * attributes (its kind among them) over in[0..n_in), errors named op (the text reader's
 * and the gradient's builder). trace_attention_primitives: the value of attention node n
 * (of any kind; n may belong to another graph) in primitive ops (dot_general, select,
 * softmax, exp, reductions) over in, values of g of n's operands' types.
 * trace_attention_vjp: the cotangents of q, k, v (grads[i] where need[i]) of FORWARD node
 * n of g, whose output is `out`, given its cotangent ct: the gradient's kinds (ir.h). */
kiln_value trace_attention(kiln_graph *g, kiln_value q, kiln_value k, kiln_value v, double scale,
                           bool causal, double fill);
kiln_value trace_attention_kind(kiln_graph *g, const char *op, const ir_node *tmpl,
                                const kiln_value *in, uint32_t n_in);
kiln_value trace_attention_primitives(kiln_graph *g, const ir_node *n, const kiln_value *in);
void trace_attention_vjp(kiln_graph *g, const ir_node *n, kiln_value q, kiln_value k, kiln_value v,
                         kiln_value out, kiln_value ct, const bool *need, kiln_value *grads);

/* inline.c: appends to g a copy of the computation of finished graph s (a loop body, a
 * branch), its parameters replaced by args[0..s->n_params) (values of g of the same types),
 * and puts the copies of its outputs in outs[0..s->n_outputs). Nested control nodes share
 * their region with the original. Errors are g's, named op. */
kiln_status trace_inline(kiln_graph *g, const char *op, const kiln_graph *s, const kiln_value *args,
                         kiln_value *outs);
/* The same for the nodes want[0..n_want) of s (finished or not) instead of its outputs,
 * with the nodes sub[0..n_sub) of s standing for the values sub_vals (their inputs are not
 * copied). A parameter nothing copied reads may have a KN_NONE argument. A scan's VJP uses
 * it to split a traced body-and-VJP into the part the forward scan computes and the part
 * the backward scan computes from the saved residuals (src/autodiff/control_rules.c). */
kiln_status trace_inline_part(kiln_graph *g, const char *op, const kiln_graph *s,
                              const kiln_value *args, int n_sub, const uint32_t *sub,
                              const kiln_value *sub_vals, int n_want, const uint32_t *want,
                              kiln_value *outs);

#endif
