/* bits.c — the builders of the bit-level ops that are not plain rows of the registry:
 * the logical forms of and / or (the registry's AND and OR, bool only), bitwise not, and
 * bitcast_convert. The plain ones (kiln_bitwise_and ... kiln_shift_right_arithmetic,
 * kiln_population_count, kiln_clz) are generated from their rows (src/trace/trace.c). */
#include "trace.h"

/* AND or OR of two bools; any other dtype is refused naming the bitwise builder, so that
 * kiln_logical_and(i32, i32) is not silently a bitwise and. */
static kiln_value logical(kiln_graph *g, const char *op, ir_op code, kiln_value a, kiln_value b,
                          const char *bitwise) {
    if (!trace_ready(g, op)) return (kiln_value){0};
    const ir_node *an = trace_node(g, op, a, "the first operand");
    const ir_node *bn = an ? trace_node(g, op, b, "the second operand") : NULL;
    if (!bn) return (kiln_value){0};
    if (an->dtype != KILN_DTYPE_BOOL || bn->dtype != KILN_DTYPE_BOOL) {
        uint32_t in[2] = {a.id, b.id};
        return trace_fail_on(g, in, 2, KILN_STATUS_DTYPE, op,
                             "takes bool operands, not %s and %s (%s is the bitwise form "
                             "for integers)",
                             kiln_dtype_name(an->dtype), kiln_dtype_name(bn->dtype), bitwise);
    }
    ir_node n = {.op = code};
    kiln_value v[2] = {a, b};
    return trace_nary(g, op, &n, v, 2);
}

kiln_value kiln_logical_and(kiln_graph *g, kiln_value a, kiln_value b) {
    return logical(g, "kiln_logical_and", IR_AND, a, b, "kiln_bitwise_and");
}

kiln_value kiln_logical_or(kiln_graph *g, kiln_value a, kiln_value b) {
    return logical(g, "kiln_logical_or", IR_OR, a, b, "kiln_bitwise_or");
}

kiln_value kiln_bitwise_not(kiln_graph *g, kiln_value x) {
    const char *op = "kiln_bitwise_not";
    if (!trace_ready(g, op)) return (kiln_value){0};
    const ir_node *n = trace_node(g, op, x, "the operand");
    if (!n) return (kiln_value){0};
    if (n->dtype == KILN_DTYPE_BOOL) return kiln_logical_not(g, x);
    if (!ir_dtype_is_int(n->dtype))
        return trace_fail_on(g, &x.id, 1, KILN_STATUS_DTYPE, op, "takes i32, i64 or bool, not %s",
                             kiln_dtype_name(n->dtype));
    /* ~x is x ^ -1: one op the fused loop already has */
    return kiln_bitwise_xor(g, x, trace_scalar(g, op, n->dtype, -1));
}

kiln_value kiln_bitcast_convert(kiln_graph *g, kiln_value x, kiln_dtype to) {
    const char *op = "kiln_bitcast_convert";
    if (!trace_ready(g, op)) return (kiln_value){0};
    const ir_node *xn = trace_node(g, op, x, "the operand");
    if (!xn) return (kiln_value){0};
    if (xn->dtype == to) return x; /* the same bits as the same dtype */
    ir_node n = {.op = IR_BITCAST, .dtype = to};
    return trace_emit(g, op, &n, &x.id, 1); /* ir_infer checks the pair of widths */
}
