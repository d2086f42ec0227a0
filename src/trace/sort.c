/* sort.c — sorting and selection (jax.lax.sort, jnp.argsort, jax.lax.top_k) over one op,
 * IR_ARGSORT, which gives positions only: the values are a take_along_axis of the
 * positions (a take_rows underneath), so that their gradient is the gather's (a
 * scatter-add along the axis into zeros, as JAX's) and the op itself needs no rule.
 *
 * Several keys are sorted lexicographically by composing stable single-key sorts from the
 * last key to the first (an LSD sort: a later, more significant key keeps the order the
 * earlier passes gave its ties), so the library kernel only ever sorts one array.
 *
 * Invariants: every user mistake is found before the first node is emitted, and names
 * the public call, the operands' types and the bad argument; positions are i32 (an axis
 * beyond 2^31 - 1 elements is refused). */
#include "trace.h"

#include <stdint.h>
#include <stdio.h>

/* The status a multi-output builder returns when it could not start: the graph's first
 * error, else (a NULL or finished graph, whose message is on the context) invalid. */
static kiln_status not_started(const kiln_graph *g) {
    kiln_status st = g ? kiln_graph_status(g) : KILN_STATUS_OK;
    return st ? st : KILN_STATUS_INVALID_ARGUMENT;
}

/* The ARGSORT node of x along axis a (normalised), k positions. */
static kiln_value argsort_node(kiln_graph *g, const char *op, kiln_value x, int a, int k,
                               bool descending, bool total) {
    ir_node n = {.op = IR_ARGSORT};
    n.a.sort.axis = a;
    n.a.sort.k = k;
    n.a.sort.descending = descending;
    n.a.sort.total = total;
    return trace_emit(g, op, &n, &x.id, 1);
}

/* Checks the axis of x for a sort (normalised into *a): in range, at most INT32_MAX long. */
static bool sort_axis(kiln_graph *g, const char *op, kiln_value x, const ir_node *xn, int axis,
                      int *a) {
    if (!trace_axis(axis, xn->shape.rank, a)) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "axis %d is out of range for rank %d",
                      axis, xn->shape.rank);
        return false;
    }
    if (xn->shape.dims[*a] > INT32_MAX) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                      "axis %d has %lld elements; i32 positions cannot name them all", *a,
                      (long long)xn->shape.dims[*a]);
        return false;
    }
    return true;
}

kiln_value kiln_argsort(kiln_graph *g, kiln_value x, int axis, bool descending) {
    const char *op = "kiln_argsort";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *xn = trace_node(g, op, x, "the operand");
    int a;
    if (!xn || !sort_axis(g, op, x, xn, axis, &a)) return KN_NONE;
    return argsort_node(g, op, x, a, (int)xn->shape.dims[a], descending, false);
}

/* The permutation that sorts keys[0..nk) lexicographically along axis a, stably: sort by
 * the last key, then stably by each earlier one in the order reached so far. */
static kiln_value lex_permutation(kiln_graph *g, const char *op, int nk, const kiln_value *keys,
                                  int a, int len, bool descending) {
    kiln_value perm = argsort_node(g, op, keys[nk - 1], a, len, descending, false);
    for (int i = nk - 2; i >= 0; i--) {
        kiln_value k = kiln_take_along_axis(g, keys[i], perm, a, KILN_GATHER_CLIP);
        kiln_value p = argsort_node(g, op, k, a, len, descending, false);
        perm = kiln_take_along_axis(g, perm, p, a, KILN_GATHER_CLIP);
    }
    return perm;
}

kiln_status kiln_sort(kiln_graph *g, int n_operands, const kiln_value *operands, int axis,
                      int num_keys, bool descending, kiln_value *outs) {
    const char *op = "kiln_sort";
    for (int i = 0; outs && i < n_operands; i++) outs[i] = KN_NONE;
    if (!trace_ready(g, op)) return not_started(g);
    if (n_operands < 1 || !operands || !outs) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "needs n_operands >= 1 (got %d), operands and outs", n_operands);
        return kiln_graph_status(g);
    }
    if (num_keys < 1 || num_keys > n_operands) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "num_keys = %d must be in [1, n_operands = %d]", num_keys, n_operands);
        return kiln_graph_status(g);
    }
    const ir_node *first = NULL;
    for (int i = 0; i < n_operands; i++) {
        char what[32];
        snprintf(what, sizeof what, "operand %d", i);
        const ir_node *xn = trace_node(g, op, operands[i], what);
        if (!xn) return kiln_graph_status(g);
        if (!first) first = xn;
        if (!ir_shape_eq(&xn->shape, &first->shape)) {
            uint32_t ids[2] = {operands[0].id, operands[i].id};
            trace_fail_on(g, ids, 2, KILN_STATUS_SHAPE, op,
                          "operand %d's shape differs from operand 0's: all must be one shape", i);
            return kiln_graph_status(g);
        }
    }
    int a;
    if (!sort_axis(g, op, operands[0], first, axis, &a)) return kiln_graph_status(g);
    int len = (int)first->shape.dims[a];
    kiln_value perm = lex_permutation(g, op, num_keys, operands, a, len, descending);
    for (int i = 0; i < n_operands; i++)
        outs[i] = kiln_take_along_axis(g, operands[i], perm, a, KILN_GATHER_CLIP);
    return kiln_graph_status(g);
}

kiln_status kiln_top_k(kiln_graph *g, kiln_value x, int k, kiln_value *values,
                       kiln_value *indices) {
    const char *op = "kiln_top_k";
    if (values) *values = KN_NONE;
    if (indices) *indices = KN_NONE;
    if (!trace_ready(g, op)) return not_started(g);
    const ir_node *xn = trace_node(g, op, x, "the operand");
    if (!xn) return kiln_graph_status(g);
    if (!values && !indices) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                      "values and indices are both NULL: nothing to return");
        return kiln_graph_status(g);
    }
    if (xn->shape.rank < 1) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op, "x must have rank >= 1, not 0");
        return kiln_graph_status(g);
    }
    int a;
    if (!sort_axis(g, op, x, xn, -1, &a)) return kiln_graph_status(g);
    int64_t len = xn->shape.dims[a];
    if (k < 0 || k > len) {
        trace_fail_on(g, &x.id, 1, KILN_STATUS_SHAPE, op,
                      "k = %d is outside [0, %lld], the length of the last axis", k,
                      (long long)len);
        return kiln_graph_status(g);
    }
    kiln_value idx = argsort_node(g, op, x, a, k, true, true);
    if (indices) *indices = idx;
    if (values) *values = kiln_take_along_axis(g, x, idx, a, KILN_GATHER_CLIP);
    return kiln_graph_status(g);
}
