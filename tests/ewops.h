/* ewops.h — every elementwise op of the registry traced once on dtype t (tests that check
 * each op through one backend or dialect: test_cuda, test_cuda_nvrtc). Compare gets all six
 * directions, convert every other target dtype, bitcast_convert its one partner dtype (none
 * for bf16, f16 and bool) and random each draw; select takes pred, a
 * and b, another three-operand op (random) a, b and a. */
#ifndef KILN_TEST_EWOPS_H
#define KILN_TEST_EWOPS_H

#include "trace/trace.h"

/* Random variant v of 7: the three i32 draws, then uniform and normal in f32 and f64. */
static inline void ew_random_variant(ir_node *node, int v) {
    static const int what[7] = {IR_RNG_BITS,    IR_RNG_WORD0,  IR_RNG_WORD1, IR_RNG_UNIFORM,
                                IR_RNG_UNIFORM, IR_RNG_NORMAL, IR_RNG_NORMAL};
    node->a.rng = what[v];
    node->dtype = v < 3 ? KILN_DTYPE_I32 : v % 2 ? KILN_DTYPE_F32 : KILN_DTYPE_F64;
}

/* The dtype bitcast_convert pairs t with (f32 <-> i32, f64 <-> i64), or INVALID. */
static inline kiln_dtype ew_bitcast_partner(kiln_dtype t) {
    return t == KILN_DTYPE_F32   ? KILN_DTYPE_I32
           : t == KILN_DTYPE_I32 ? KILN_DTYPE_F32
           : t == KILN_DTYPE_F64 ? KILN_DTYPE_I64
           : t == KILN_DTYPE_I64 ? KILN_DTYPE_F64
                                 : KILN_DTYPE_INVALID;
}

/* Appends to outs (at most max) one value per op and variant over a, b (dtype t) and pred
 * (bool); returns how many were made. */
static inline int ew_trace_all(kiln_graph *g, kiln_dtype t, kiln_value a, kiln_value b,
                               kiln_value pred, kiln_value *outs, int max) {
    static const kiln_dtype targets[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_I32,
                                         KILN_DTYPE_I64, KILN_DTYPE_BOOL};
    int n = 0;
    for (int op = 0; op < IR_NUM_OPS; op++) {
        const ir_op_info *o = &ir_ops[op];
        if (!(o->flags & IRF_ELEMENTWISE) || !ir_dtype_accepts(o->types, t)) continue;
        int variants = op == IR_COMPARE ? 6 : op == IR_CONVERT ? 5 : op == IR_RANDOM ? 7 : 1;
        for (int v = 0; v < variants; v++) {
            ir_node node = {.op = (ir_op)op};
            uint32_t in[3] = {a.id, b.id, 0};
            if (op == IR_COMPARE) node.a.cmp = (kiln_cmp)v;
            if (op == IR_RANDOM) ew_random_variant(&node, v);
            if (op == IR_CONVERT) {
                if (targets[v] == t) continue;
                node.dtype = targets[v];
            }
            if (op == IR_BITCAST && !(node.dtype = ew_bitcast_partner(t))) continue;
            if (op == IR_SELECT) in[0] = pred.id, in[1] = a.id, in[2] = b.id;
            if (op != IR_SELECT && o->arity == 3) in[2] = a.id; /* random: (a, b, a) */
            kiln_value r = trace_emit(g, o->name, &node, in, (uint32_t)o->arity);
            if (r.id && n < max) outs[n++] = r;
        }
    }
    return n;
}

#endif
