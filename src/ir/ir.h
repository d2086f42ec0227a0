/* ir.h — kiln's intermediate representation: the op table, nodes and graphs.
 *
 * One table (KN_OPS) describes every op once; the tracer, the verifier, the printer, the
 * reference interpreter and (later) autodiff, fusion and codegen all read it, so adding an
 * op starts here.
 *
 * Invariants of a graph (checked by ir_verify):
 *  - nodes are stored in a topological order: a node's inputs have smaller ids;
 *  - every node's dtype and shape are what ir_infer would compute from its inputs and
 *    attributes (infer.c: the tracer types each node with it, the verifier re-runs it);
 *  - node ids are 1-based (0 is "no value"), so kiln_value.id == node id.
 */
#ifndef KILN_IR_H
#define KILN_IR_H

#include "base/base.h"

/* Op kinds: how an op's shape and dtype follow from its inputs. */
typedef enum ir_kind {
    IRK_SOURCE, /* parameter, constant, iota: no inputs */
    IRK_UNARY,  /* elementwise, one input, same shape */
    IRK_BINARY, /* elementwise, two inputs of identical shape and dtype */
    IRK_SELECT, /* elementwise, pred + two values */
    IRK_SHAPE,  /* moves elements: broadcast, reshape, transpose, slice, concat, pad */
    IRK_REDUCE, /* reduce over a set of axes */
    IRK_DOT,    /* dot_general */
    IRK_INDEX,  /* take_rows, scatter_add_rows */
} ir_kind;

/* Operand dtype classes an op accepts. */
enum {
    IRT_ANY = 0,     /* every dtype */
    IRT_NUMERIC = 1, /* f32 f64 i32 i64 */
    IRT_FLOAT = 2,   /* f32 f64 */
    IRT_BOOL = 3,    /* bool */
};

/* Flags for passes: ELEMENTWISE ops can be fused as loops; EXPENSIVE ones are never
 * duplicated into several consumers. */
#define IRF_ELEMENTWISE 1u
#define IRF_EXPENSIVE   2u

/*  X(ENUM, "name", arity (-1: variadic), kind, operand types, flags) */
#define KN_OPS(X)                                                                                  \
    X(PARAMETER, "parameter", 0, IRK_SOURCE, IRT_ANY, 0)                                           \
    X(CONSTANT, "constant", 0, IRK_SOURCE, IRT_ANY, 0)                                             \
    X(IOTA, "iota", 0, IRK_SOURCE, IRT_NUMERIC, 0)                                                 \
    X(NEG, "neg", 1, IRK_UNARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                      \
    X(ABS, "abs", 1, IRK_UNARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                      \
    X(SIGN, "sign", 1, IRK_UNARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                    \
    X(EXP, "exp", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                                        \
    X(LOG, "log", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                                        \
    X(LOG1P, "log1p", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                                    \
    X(SQRT, "sqrt", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                                      \
    X(RSQRT, "rsqrt", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                                    \
    X(TANH, "tanh", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                                      \
    X(LOGISTIC, "logistic", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                              \
    X(FLOOR, "floor", 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE)                                    \
    X(NOT, "not", 1, IRK_UNARY, IRT_BOOL, IRF_ELEMENTWISE)                                         \
    X(CONVERT, "convert", 1, IRK_UNARY, IRT_ANY, IRF_ELEMENTWISE)                                  \
    X(ADD, "add", 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                     \
    X(SUB, "sub", 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                     \
    X(MUL, "mul", 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                     \
    X(DIV, "div", 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                     \
    X(POW, "pow", 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                     \
    X(MAX, "max", 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                     \
    X(MIN, "min", 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE)                                     \
    X(AND, "and", 2, IRK_BINARY, IRT_BOOL, IRF_ELEMENTWISE)                                        \
    X(OR, "or", 2, IRK_BINARY, IRT_BOOL, IRF_ELEMENTWISE)                                          \
    X(COMPARE, "compare", 2, IRK_BINARY, IRT_ANY, IRF_ELEMENTWISE)                                 \
    X(SELECT, "select", 3, IRK_SELECT, IRT_ANY, IRF_ELEMENTWISE)                                   \
    X(BROADCAST, "broadcast_in_dim", 1, IRK_SHAPE, IRT_ANY, 0)                                     \
    X(RESHAPE, "reshape", 1, IRK_SHAPE, IRT_ANY, 0)                                                \
    X(TRANSPOSE, "transpose", 1, IRK_SHAPE, IRT_ANY, 0)                                            \
    X(SLICE, "slice", 1, IRK_SHAPE, IRT_ANY, 0)                                                    \
    X(CONCAT, "concatenate", -1, IRK_SHAPE, IRT_ANY, 0)                                            \
    X(PAD, "pad", 2, IRK_SHAPE, IRT_ANY, 0)                                                        \
    X(REDUCE_SUM, "reduce_sum", 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE)                         \
    X(REDUCE_MAX, "reduce_max", 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE)                         \
    X(REDUCE_MIN, "reduce_min", 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE)                         \
    X(REDUCE_PROD, "reduce_prod", 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE)                       \
    X(DOT, "dot_general", 2, IRK_DOT, IRT_NUMERIC, IRF_EXPENSIVE)                                  \
    X(TAKE_ROWS, "take_rows", 2, IRK_INDEX, IRT_ANY, IRF_EXPENSIVE)                                \
    X(SCATTER_ADD_ROWS, "scatter_add_rows", 3, IRK_INDEX, IRT_NUMERIC, IRF_EXPENSIVE)

typedef enum ir_op {
#define KN_OP_ENUM(e, name, arity, kind, types, flags) IR_##e,
    KN_OPS(KN_OP_ENUM)
#undef KN_OP_ENUM
        IR_NUM_OPS
} ir_op;

typedef struct ir_op_info {
    const char *name;
    int arity;
    ir_kind kind;
    int types; /* IRT_*: what the first operand (the "data" operand) may be */
    unsigned flags;
} ir_op_info;

extern const ir_op_info ir_ops[IR_NUM_OPS];

typedef struct ir_shape {
    int rank;
    int64_t dims[KILN_MAX_RANK];
} ir_shape;

/* Attributes, by op. */
typedef union ir_attrs {
    int param_index;               /* PARAMETER */
    int axis;                      /* IOTA, CONCAT */
    kiln_compare_dir cmp;          /* COMPARE */
    int bcast_dims[KILN_MAX_RANK]; /* BROADCAST: output axis of each operand axis */
    int perm[KILN_MAX_RANK];       /* TRANSPOSE */
    struct {
        int64_t start[KILN_MAX_RANK], limit[KILN_MAX_RANK], stride[KILN_MAX_RANK];
    } slice; /* SLICE */
    struct {
        int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK], interior[KILN_MAX_RANK];
    } pad;                /* PAD (inputs: operand, rank-0 pad value) */
    uint32_t reduce_axes; /* REDUCE_*: bit i set = axis i reduced (not kept) */
    kiln_dot_dims dot;    /* DOT */
} ir_attrs;

#define IR_INLINE_INPUTS 3

typedef struct ir_node {
    ir_op op;
    kiln_dtype dtype;
    ir_shape shape;
    uint32_t n_in;
    uint32_t in_inline[IR_INLINE_INPUTS]; /* inputs when n_in <= 3 ... */
    uint32_t *in_heap;                    /* ... else a host allocation (read with ir_in) */
    ir_attrs a;
    char *name;       /* PARAMETER: owned, may be NULL */
    void *data;       /* CONSTANT: owned, row-major, nbytes of the shape */
    const char *file; /* user source location (a string literal: not owned) */
    int line;
} ir_node;

struct kiln_graph {
    kiln_context *ctx;
    uint32_t id; /* unique per context: tells values of two graphs apart */
    char *name;
    ir_node *nodes;              /* nodes[0] is unused so ids are 1-based */
    uint32_t n_nodes, cap_nodes; /* n_nodes counts the unused slot 0 */
    uint32_t *params, n_params, cap_params;
    uint32_t *outputs, n_outputs;
    bool finished;
    kiln_status status;         /* the builder's first error */
    char *error;                /* its message: error_buf once there is an error, NULL before */
    char error_buf[KN_ERR_MAX]; /* held in the graph so an out-of-memory error keeps it */
    const char *cur_file;       /* user location of the latest public call (kiln_graph_at) */
    int cur_line;
};

/* dtypes and shapes */
bool ir_dtype_valid(kiln_dtype t);
bool ir_dtype_is_float(kiln_dtype t);
bool ir_dtype_is_int(kiln_dtype t);
bool ir_dtype_accepts(int types, kiln_dtype t);
/* Element count; false on int64 overflow. */
bool ir_shape_numel(const ir_shape *s, int64_t *n);
/* Byte size; false on overflow of size_t. */
bool ir_shape_nbytes(const ir_shape *s, kiln_dtype t, size_t *n);
bool ir_shape_eq(const ir_shape *a, const ir_shape *b);
/* Stores v as one element of dtype t at out (ints saturate, NaN -> 0, bool is v != 0);
 * false if t is not a dtype. out must hold 8 bytes. */
bool ir_scalar_store(kiln_dtype t, double v, void *out);
/* Writes "f32[2,3]" into buf (always terminated). Returns buf. */
char *ir_type_str(kiln_dtype t, const ir_shape *s, char *buf, size_t n);
#define IR_TYPE_STR_MAX 192

/* graph */
static inline const uint32_t *ir_in(const ir_node *n) {
    return n->n_in <= IR_INLINE_INPUTS ? n->in_inline : n->in_heap;
}
static inline ir_node *ir_node_at(const kiln_graph *g, uint32_t id) {
    return &g->nodes[id];
}
/* Appends a node copied from *tmpl with the given inputs; takes ownership of tmpl->name
 * and tmpl->data on success only. Returns its id, or 0 on host OOM (no message set). */
uint32_t ir_graph_append(kiln_graph *g, const ir_node *tmpl, const uint32_t *in, uint32_t n_in);
/* Frees what a node owns (name, data, spilled inputs). */
void ir_node_release(kiln_context *ctx, ir_node *n);

/* Shape and dtype inference for a node whose op, inputs and attributes are set: fills
 * n->dtype / n->shape (except for sources, which carry their own) or writes the reason
 * into msg and returns its status. The tracer calls it for every op, the verifier again. */
kiln_status ir_infer(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size);
/* Rank in [0, KILN_MAX_RANK], no negative dimension, byte size fits in size_t. */
kiln_status ir_check_shape(const ir_shape *s, kiln_dtype t, char *msg, size_t msg_size);
/* The dtype rule of the elementwise ops alone (the tracer checks it before it broadcasts,
 * so a dtype mistake is reported against the user's operands). *out holds the target
 * dtype for CONVERT and receives the result dtype. */
kiln_status ir_infer_elementwise_dtype(ir_op op, const kiln_dtype *in, uint32_t n_in,
                                       kiln_dtype *out, char *msg, size_t msg_size);

/* Verifier: invariants of ir.h. Sets the context's message on failure. */
kiln_status ir_verify(const kiln_graph *g);

/* Printer: one op a line, stable text. */
void ir_print(const kiln_graph *g, struct strbuf *sb);
/* "%3 = add(%1, %2)" style attribute text for one node (used by the printer and errors). */
void ir_print_node(const kiln_graph *g, uint32_t id, struct strbuf *sb);

#endif
