/* attrs.c — the attribute table (KN_ATTRS in ir.h) and everything derived from it by
 * attribute type: the text of an op's attributes, their flattened form (CSE's equality and
 * hash), and the checks a type implies. No function here switches over ops: a new op's
 * attributes are its rows in KN_ATTRS, and every stage follows.
 *
 * Invariants: the rows of one op are adjacent in KN_ATTRS and in the order they are
 * written (tests/test_registry.c checks it); the text and the flattened form of the ops
 * that existed before the table are exactly what their hand-written switches gave, so
 * saved graphs read back and CSE merges the same nodes. */
#include "ir.h"
#include "base/strbuf.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const char *ir_cmp_name(int cmp) {
    static const char *const names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    return cmp >= 0 && cmp <= KILN_CMP_GE ? names[cmp] : NULL;
}

const char *ir_reduce_kind_name(int kind) {
    static const char *const names[] = {"sum", "mean", "max"};
    return kind >= 0 && kind <= KILN_REDUCE_MAX ? names[kind] : NULL;
}

/* Indexed by kiln_gather_mode; WRAP is kiln_take's alone, never a node's. */
const char *ir_gather_mode_name(int mode) {
    static const char *const names[] = {"fill", "clip"};
    return mode >= 0 && mode <= KILN_GATHER_CLIP ? names[mode] : NULL;
}

const char *ir_memory_kind_name(int kind) {
    static const char *const names[] = {"device", "pinned_host"};
    return kind >= 0 && kind <= KILN_MEMORY_PINNED_HOST ? names[kind] : NULL;
}

bool ir_in_host(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    return (n->op == IR_MEMORY_PUT && n->a.memory_kind == KILN_MEMORY_PINNED_HOST) ||
           (n->op == IR_PARAMETER && n->a.param_memory_kind == KILN_MEMORY_PINNED_HOST);
}

bool ir_is_fetch(const kiln_graph *g, const ir_node *n) {
    return n->op == IR_MEMORY_PUT && n->a.memory_kind == KILN_MEMORY_DEVICE &&
           g->nodes[ir_in(n)[0]].op == IR_PARAMETER && ir_in_host(g, ir_in(n)[0]);
}

const char *ir_scatter_kind_name(int kind) {
    static const char *const names[] = {"set", "add", "mul", "min", "max"};
    return kind >= 0 && kind <= KILN_SCATTER_MAX ? names[kind] : NULL;
}

const char *ir_conv_kind_name(int kind) {
    static const char *const names[] = {"forward", "input_grad", "filter_grad"};
    return kind >= 0 && kind <= IR_CONV_FILTER_GRAD ? names[kind] : NULL;
}

const char *ir_attn_kind_name(int kind) {
    static const char *const names[] = {"forward", "lse", "grad_q", "grad_k", "grad_v"};
    return kind >= 0 && kind <= IR_ATTN_GRAD_V ? names[kind] : NULL;
}

uint32_t ir_attn_operands(int kind) {
    return kind == IR_ATTN_FORWARD ? 3 : kind == IR_ATTN_LSE ? 2 : 6;
}

kiln_dtype ir_attn_sum_dtype(kiln_dtype t) {
    return t == KILN_DTYPE_F64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
}

static const ir_attr_desc rows[] = {
#define KN_ATTR_ROW(op, type, name, member, words)                                                 \
    {IR_##op, type, name, offsetof(ir_attrs, member), words},
    KN_ATTRS(KN_ATTR_ROW)
#undef KN_ATTR_ROW
};
#define N_ROWS (sizeof rows / sizeof *rows)

/* An op's rows are adjacent and few: the lookup walks the table. */
const ir_attr_desc *ir_op_attrs(ir_op op, int *n) {
    size_t i = 0;
    while (i < N_ROWS && rows[i].op != op) i++;
    size_t j = i;
    while (j < N_ROWS && rows[j].op == op) j++;
    *n = (int)(j - i);
    return i < N_ROWS ? &rows[i] : NULL;
}

/* Members by offset: the descriptor says which, its type how wide. */
static const void *member(const ir_attrs *a, const ir_attr_desc *d) {
    return (const char *)a + d->offset;
}
static int int_at(const ir_attrs *a, const ir_attr_desc *d) {
    int v;
    memcpy(&v, member(a, d), sizeof v);
    return v;
}
static double real_at(const ir_attrs *a, const ir_attr_desc *d) {
    double v;
    memcpy(&v, member(a, d), sizeof v);
    return v;
}
static bool flag_at(const ir_attrs *a, const ir_attr_desc *d) {
    bool v;
    memcpy(&v, member(a, d), sizeof v);
    return v;
}
static uint32_t axes_at(const ir_attrs *a, const ir_attr_desc *d) {
    uint32_t v;
    memcpy(&v, member(a, d), sizeof v);
    return v;
}

/* IRA_FILL's value as it counts: -inf unless the flag declared before it is set. */
static double fill_at(const ir_attrs *a, const ir_attr_desc *d) {
    return flag_at(a, d - 1) ? real_at(a, d) : -INFINITY;
}

static int clamp_rank(int r) {
    return r < 0 ? 0 : r > KILN_MAX_RANK ? KILN_MAX_RANK : r;
}

/* ----------------------------------------------------------------- text ---- */

static void list_i64(strbuf *sb, const char *name, const int64_t *v, int n) {
    sb_printf(sb, " %s=[", name);
    for (int i = 0; i < n; i++) sb_printf(sb, i ? ",%lld" : "%lld", (long long)v[i]);
    sb_append(sb, "]");
}

static void list_int(strbuf *sb, const char *name, const int *v, int n) {
    sb_printf(sb, " %s=[", name);
    for (int i = 0; i < n; i++) sb_printf(sb, i ? ",%d" : "%d", v[i]);
    sb_append(sb, "]");
}

static void print_dot(const kiln_dot_dims *d, strbuf *sb) {
    if ((unsigned)d->n_batch > KILN_MAX_RANK || (unsigned)d->n_contract > KILN_MAX_RANK) {
        sb_append(sb, " (bad dims)");
        return;
    }
    if (d->n_batch) { /* most dots have none: leave the empty lists out */
        list_int(sb, "lhs_batch", d->lhs_batch, d->n_batch);
        list_int(sb, "rhs_batch", d->rhs_batch, d->n_batch);
    }
    list_int(sb, "lhs_contract", d->lhs_contract, d->n_contract);
    list_int(sb, "rhs_contract", d->rhs_contract, d->n_contract);
}

/* The entries of an IRA_SPATIAL list for an operand of rank r. */
static int spatial_count(int r) {
    return r < 2 ? 0 : r - 2 > KILN_CONV_MAX_SPATIAL ? KILN_CONV_MAX_SPATIAL : r - 2;
}

static void print_one(const ir_attrs *a, const ir_attr_desc *d, int r, strbuf *sb) {
    const void *m = member(a, d);
    switch (d->type) {
    case IRA_PARAM: break;
    case IRA_INT: sb_printf(sb, " %s=%d", d->name, int_at(a, d)); break;
    case IRA_WORD:
    case IRA_KIND: {
        const char *w = d->words(int_at(a, d));
        if (d->type == IRA_WORD || int_at(a, d)) sb_printf(sb, " %s", w ? w : "?");
        break;
    }
    case IRA_FLAG:
        if (flag_at(a, d)) sb_printf(sb, " %s", d->name);
        break;
    case IRA_INTS: list_int(sb, d->name, m, r); break;
    case IRA_I64S: list_i64(sb, d->name, m, r); break;
    case IRA_AXES: {
        uint32_t axes = axes_at(a, d);
        sb_printf(sb, " %s=[", d->name);
        for (int i = 0, k = 0; i < r; i++)
            if (axes >> i & 1u) sb_printf(sb, k++ ? ",%d" : "%d", i);
        sb_append(sb, "]");
        break;
    }
    case IRA_REAL: sb_printf(sb, " %s=%.17g", d->name, real_at(a, d)); break; /* reads back */
    case IRA_FILL:
        if (fill_at(a, d) != -INFINITY) sb_printf(sb, " %s=%.17g", d->name, real_at(a, d));
        break;
    case IRA_DOT: print_dot(m, sb); break;
    case IRA_SPATIAL: list_i64(sb, d->name, m, spatial_count(r)); break;
    }
}

void ir_attrs_print(const ir_node *n, int in_rank, strbuf *sb) {
    int count;
    const ir_attr_desc *d = ir_op_attrs(n->op, &count);
    for (int i = 0; i < count; i++) print_one(&n->a, &d[i], clamp_rank(in_rank), sb);
}

/* ------------------------------------------------------------ flattened ---- */

static int flatten_dot(const kiln_dot_dims *d, int64_t *buf) {
    int n = 0, c = clamp_rank(d->n_contract), b = clamp_rank(d->n_batch);
    buf[n++] = c, buf[n++] = b;
    for (int i = 0; i < c; i++) buf[n++] = d->lhs_contract[i];
    for (int i = 0; i < c; i++) buf[n++] = d->rhs_contract[i];
    for (int i = 0; i < b; i++) buf[n++] = d->lhs_batch[i];
    for (int i = 0; i < b; i++) buf[n++] = d->rhs_batch[i];
    return n;
}

/* The bits of a double: -0.0 and 0.0 scale alike but are kept apart. */
static int64_t bits_of(double v) {
    int64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static int flatten_one(const ir_attrs *a, const ir_attr_desc *d, int r, int64_t *buf) {
    const void *m = member(a, d);
    switch (d->type) {
    case IRA_PARAM:
    case IRA_INT:
    case IRA_WORD:
    case IRA_KIND: buf[0] = int_at(a, d); return 1;
    case IRA_FLAG: buf[0] = flag_at(a, d); return 1;
    case IRA_INTS:
        for (int i = 0; i < r; i++) buf[i] = ((const int *)m)[i];
        return r;
    case IRA_I64S:
        for (int i = 0; i < r; i++) buf[i] = ((const int64_t *)m)[i];
        return r;
    case IRA_AXES: buf[0] = axes_at(a, d) & ((1u << r) - 1); return 1; /* r <= 8 */
    case IRA_REAL: buf[0] = bits_of(real_at(a, d)); return 1;
    case IRA_FILL: buf[0] = bits_of(fill_at(a, d)); return 1;
    case IRA_DOT: return flatten_dot(m, buf);
    case IRA_SPATIAL:
        for (int i = 0; i < spatial_count(r); i++) buf[i] = ((const int64_t *)m)[i];
        return spatial_count(r);
    }
    return 0;
}

int ir_attrs_flatten(ir_op op, int in_rank, const ir_attrs *a, int64_t *buf) {
    int count, n = 0;
    const ir_attr_desc *d = ir_op_attrs(op, &count);
    for (int i = 0; i < count; i++) n += flatten_one(a, &d[i], clamp_rank(in_rank), buf + n);
    return n;
}

/* --------------------------------------------------------------- checks ---- */

kiln_status ir_attrs_check(const ir_node *n, int in_rank, char *msg, size_t msg_size) {
    int count;
    const ir_attr_desc *d = ir_op_attrs(n->op, &count);
    for (int i = 0; i < count; i++) {
        if (d[i].type != IRA_AXES) continue;
        uint32_t axes = axes_at(&n->a, &d[i]);
        for (int k = clamp_rank(in_rank); k < 32; k++)
            if (axes >> k & 1u) {
                snprintf(msg, msg_size, "%s: axis %d is out of range for rank %d",
                         ir_ops[n->op].name, k, in_rank);
                return KILN_STATUS_SHAPE;
            }
    }
    return KILN_STATUS_OK;
}
