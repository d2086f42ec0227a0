/* cgen.c — the C code generator for fused LOOP kernels (see cgen.h).
 *
 * The heart is an elemental emitter, as in XLA's CPU backend: emit_value(node, index)
 * writes the statements that compute one element of `node` at a multi-index given as C
 * expressions, and returns the variable (or literal) that holds it. A kernel is a loop
 * over its root's index space calling emit_value(root, loop indices). Shape ops only
 * rewrite the index (a transpose permutes it, a broadcast drops axes, a slice scales and
 * offsets it); materialised inputs are loads; an inlined reduction opens an inner loop.
 * Values are memoised per (node, index text) within the current C scope, so a node used
 * twice at the same index is computed once.
 *
 * Numerics follow the reference interpreter: integer arithmetic wraps (through unsigned
 * types), integer x/0 is -1 and INT_MIN/-1 is INT_MIN, float->int conversion saturates
 * with NaN -> 0, max/min propagate NaN, float sums and products accumulate in double. */
#include "cgen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define IDX_LEN 72 /* longer index expressions get a variable of their own */
#define VAL_LEN 48
#define CHUNK   2048 /* elements of the last axis per work item */

typedef struct idxv {
    int rank;
    char s[KILN_MAX_RANK][IDX_LEN];
} idxv;

typedef struct memo_ent {
    uint32_t node;
    int depth;
    char var[VAL_LEN];
    char *key;
} memo_ent;

typedef struct em {
    const kiln_graph *g;
    const fusion_plan *p;
    const fkernel *k;
    strbuf *sb;
    kiln_context *ctx;
    int depth, next;
    memo_ent *memo;
    size_t n_memo, cap_memo;
    bool oom;
    bool int_arith; /* integer elementwise code was emitted (see drop_pragma) */
    int hole;       /* an op with no kernel expression for its operands (+1), or 0 */
} em;

const char *cgen_ctype(kiln_dtype t) {
    switch (t) {
    case KILN_F32: return "float";
    case KILN_F64: return "double";
    case KILN_I32: return "int32_t";
    case KILN_I64: return "int64_t";
    default: return "uint8_t";
    }
}

static const char *utype(kiln_dtype t) {
    return t == KILN_I32 ? "uint32_t" : "uint64_t";
}
static const char *fsuf(kiln_dtype t) {
    return t == KILN_F32 ? "f" : "";
}

static void line(em *e, const char *fmt, ...) KN_PRINTF(2, 3);
static void line(em *e, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sb_printf(e->sb, "%*s%s\n", 4 * (e->depth + 1), "", buf);
}

static void fresh(em *e, char *out, const char *prefix) {
    snprintf(out, VAL_LEN, "%s%d", prefix, e->next++);
}

/* Sets an index entry; expressions too long for IDX_LEN become a variable. */
static void idx_set(em *e, char *dst, const char *expr) {
    if (strlen(expr) < IDX_LEN) {
        memcpy(dst, expr, strlen(expr) + 1);
        return;
    }
    char v[VAL_LEN];
    fresh(e, v, "t");
    line(e, "const int64_t %s = %s;", v, expr);
    snprintf(dst, IDX_LEN, "%s", v);
}

/* ------------------------------------------------------------- memo ---- */

static void memo_key(uint32_t id, const idxv *ix, char *key, size_t n) {
    size_t k = (size_t)snprintf(key, n, "%u", id);
    for (int i = 0; i < ix->rank && k < n; i++)
        k += (size_t)snprintf(key + k, n - k, "|%s", ix->s[i]);
}

static const char *memo_find(em *e, uint32_t id, const idxv *ix) {
    char key[KILN_MAX_RANK * IDX_LEN + 16];
    memo_key(id, ix, key, sizeof key);
    for (size_t i = e->n_memo; i-- > 0;)
        if (e->memo[i].node == id && !strcmp(e->memo[i].key, key)) return e->memo[i].var;
    return NULL;
}

static void memo_add(em *e, uint32_t id, const idxv *ix, const char *var) {
    if (e->n_memo == e->cap_memo) {
        size_t cap = e->cap_memo ? 2 * e->cap_memo : 64;
        memo_ent *m = host_realloc(e->ctx, e->memo, e->cap_memo * sizeof *m, cap * sizeof *m);
        if (!m) {
            e->oom = true;
            return;
        }
        e->memo = m;
        e->cap_memo = cap;
    }
    char key[KILN_MAX_RANK * IDX_LEN + 16];
    memo_key(id, ix, key, sizeof key);
    memo_ent *m = &e->memo[e->n_memo];
    if (!(m->key = host_strdup(e->ctx, key))) {
        e->oom = true;
        return;
    }
    m->node = id;
    m->depth = e->depth;
    snprintf(m->var, VAL_LEN, "%s", var);
    e->n_memo++;
}

static void scope_open(em *e, const char *head) {
    line(e, "%s {", head);
    e->depth++;
}

static void scope_close(em *e) {
    while (e->n_memo && e->memo[e->n_memo - 1].depth >= e->depth) {
        memo_ent *m = &e->memo[--e->n_memo];
        host_free(e->ctx, m->key, strlen(m->key) + 1);
    }
    e->depth--;
    line(e, "}");
}

/* ---------------------------------------------------------- literals ---- */

static void literal(const ir_node *n, char *out) {
    const void *d = n->data;
    double v = 0;
    switch (n->dtype) {
    case KILN_I32: snprintf(out, VAL_LEN, "INT32_C(%d)", *(const int32_t *)d); return;
    case KILN_I64:
        snprintf(out, VAL_LEN, "INT64_C(%lld)", (long long)*(const int64_t *)d);
        if (*(const int64_t *)d == INT64_MIN) snprintf(out, VAL_LEN, "INT64_MIN");
        return;
    case KILN_BOOL: snprintf(out, VAL_LEN, "((uint8_t)%u)", *(const uint8_t *)d); return;
    case KILN_F32: v = *(const float *)d; break;
    default: v = *(const double *)d; break;
    }
    const char *t = cgen_ctype(n->dtype);
    if (isnan(v))
        snprintf(out, VAL_LEN, "((%s)NAN)", t);
    else if (isinf(v))
        snprintf(out, VAL_LEN, "(%s(%s)INFINITY)", v < 0 ? "-" : "", t);
    else
        snprintf(out, VAL_LEN, "((%s)%a)", t, v); /* hex: exact */
}

/* ------------------------------------------------------------- loads ---- */

static int input_slot(const em *e, uint32_t id) {
    for (uint32_t i = 0; i < e->k->n_inputs; i++)
        if (e->k->inputs[i] == id) return (int)i;
    return -1;
}

static void load(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    char lin[1024] = "0";
    size_t k = 0;
    int64_t stride = 1;
    for (int a = n->shape.rank - 1; a >= 0; a--) {
        if (strcmp(ix->s[a], "0") != 0 && n->shape.dims[a] != 1) {
            if (stride == 1)
                k += (size_t)snprintf(lin + k, sizeof lin - k, "%s%s", k ? " + " : "", ix->s[a]);
            else
                k += (size_t)snprintf(lin + k, sizeof lin - k, "%s%s * %lld", k ? " + " : "",
                                      ix->s[a], (long long)stride);
        }
        stride *= n->shape.dims[a];
    }
    fresh(e, out, "v");
    line(e, "const %s %s = in%d[%s];", cgen_ctype(n->dtype), out, input_slot(e, id), lin);
}

/* ------------------------------------------------------- elementwise ---- */

static void emit_value(em *e, uint32_t id, const idxv *ix, char *out);

static const char *dtype_suffix(kiln_dtype t) {
    switch (t) {
    case KILN_F32: return "f32";
    case KILN_F64: return "f64";
    case KILN_I32: return "i32";
    case KILN_I64: return "i64";
    default: return "bool";
    }
}

/* Expands an op's kernel expression from the registry (ir.h: the placeholders are listed
 * there) for result dtype `out_t`, data operand dtype `in_t` and operand texts `arg`.
 * False when the op has no expression for that operand class (a registry hole:
 * tests/test_registry.c keeps that from happening). */
static bool kexpr_expand(const ir_node *n, kiln_dtype in_t, const char *const *arg, char *ex,
                         size_t m) {
    static const char *const cmp[] = {"==", "!=", "<", "<=", ">", ">="};
    const char *t = ir_ops[n->op].kexpr[ir_dtype_is_float(in_t) ? 0 : 1];
    if (!t) return false;
    size_t k = 0;
    for (; *t && k + 1 < m; t++) {
        if (*t != '$' || !t[1]) {
            ex[k++] = *t;
            continue;
        }
        const char *r = "";
        char c = *++t;
        if (c >= '0' && c <= '2')
            r = arg[c - '0'];
        else if (c == 'T')
            r = cgen_ctype(n->dtype);
        else if (c == 'U')
            r = utype(in_t);
        else if (c == 'S')
            r = dtype_suffix(in_t);
        else if (c == 'R')
            r = dtype_suffix(n->dtype);
        else if (c == 'F')
            r = fsuf(in_t);
        else if (c == 'C')
            r = cmp[n->a.cmp];
        k += (size_t)snprintf(ex + k, m - k, "%s", r);
    }
    ex[k < m ? k : m - 1] = 0;
    return true;
}

static void emit_elementwise(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    const uint32_t *in = ir_in(n);
    char v[3][VAL_LEN] = {"", "", ""}, ex[512];
    for (uint32_t i = 0; i < n->n_in; i++) emit_value(e, in[i], ix, v[i]);
    kiln_dtype in_t = e->g->nodes[in[n->op == IR_SELECT ? 1 : 0]].dtype;
    e->int_arith |= ir_dtype_is_int(in_t);
    const char *args[3] = {v[0], v[1], v[2]};
    if (!kexpr_expand(n, in_t, args, ex, sizeof ex)) {
        e->hole = (int)n->op + 1;
        snprintf(ex, sizeof ex, "0");
    }
    fresh(e, out, "v");
    line(e, "const %s %s = %s;", cgen_ctype(n->dtype), out, ex);
}

/* -------------------------------------------------------- shape ops ---- */

static void emit_reshape(em *e, const ir_node *n, const idxv *ix, char *out) {
    uint32_t x = ir_in(n)[0];
    const ir_shape *is = &e->g->nodes[x].shape;
    idxv sub = {.rank = is->rank};
    /* Only unit axes added or removed: map the non-unit axes one to one. */
    int a = 0, b = 0;
    bool simple = true;
    while (simple && (a < n->shape.rank || b < is->rank)) {
        if (a < n->shape.rank && n->shape.dims[a] == 1)
            a++;
        else if (b < is->rank && is->dims[b] == 1)
            snprintf(sub.s[b++], IDX_LEN, "0");
        else if (a < n->shape.rank && b < is->rank && n->shape.dims[a] == is->dims[b]) {
            snprintf(sub.s[b++], IDX_LEN, "%s", ix->s[a++]);
        } else
            simple = false;
    }
    if (!simple) { /* general: linearise the output index, then split it for the input */
        char lin[1024] = "0", v[VAL_LEN];
        size_t k = 0;
        int64_t stride = 1;
        for (int i = n->shape.rank - 1; i >= 0; i--) {
            k += (size_t)snprintf(lin + k, sizeof lin - k, "%s%s * %lld", k ? " + " : "", ix->s[i],
                                  (long long)stride);
            stride *= n->shape.dims[i];
        }
        fresh(e, v, "l");
        line(e, "const int64_t %s = %s;", v, k ? lin : "0");
        stride = 1;
        for (int i = is->rank - 1; i >= 0; i--) {
            char expr[128];
            snprintf(expr, sizeof expr, "(%s / %lld) %% %lld", v, (long long)stride,
                     (long long)(is->dims[i] ? is->dims[i] : 1));
            idx_set(e, sub.s[i], expr);
            stride *= is->dims[i];
        }
    }
    emit_value(e, x, &sub, out);
}

static void emit_pad(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    uint32_t x = ir_in(n)[0];
    const ir_shape *is = &e->g->nodes[x].shape;
    char pv[VAL_LEN], cond[1024] = "1", expr[IDX_LEN];
    emit_value(e, ir_in(n)[1], &(idxv){0}, pv);
    idxv sub = {.rank = is->rank};
    size_t k = 1;
    for (int a = 0; a < is->rank; a++) {
        char t[VAL_LEN];
        int64_t step = n->a.pad.interior[a] + 1;
        fresh(e, t, "p");
        line(e, "const int64_t %s = %s - (%lld);", t, ix->s[a], (long long)n->a.pad.lo[a]);
        k += (size_t)snprintf(cond + k, sizeof cond - k, " && %s >= 0 && %s < %lld", t, t,
                              (long long)(is->dims[a] ? (is->dims[a] - 1) * step + 1 : 0));
        if (step > 1) {
            k += (size_t)snprintf(cond + k, sizeof cond - k, " && %s %% %lld == 0", t,
                                  (long long)step);
            snprintf(expr, sizeof expr, "%s / %lld", t, (long long)step);
        } else
            snprintf(expr, sizeof expr, "%s", t);
        snprintf(sub.s[a], IDX_LEN, "%s", expr);
    }
    fresh(e, out, "v");
    line(e, "%s %s = %s;", cgen_ctype(n->dtype), out, pv);
    char head[1100];
    snprintf(head, sizeof head, "if (%s)", cond);
    scope_open(e, head);
    char xv[VAL_LEN];
    emit_value(e, x, &sub, xv);
    line(e, "%s = %s;", out, xv);
    scope_close(e);
}

static void emit_concat(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    int ax = n->a.axis;
    int64_t off = 0;
    fresh(e, out, "v");
    line(e, "%s %s;", cgen_ctype(n->dtype), out);
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t x = ir_in(n)[i];
        int64_t d = e->g->nodes[x].shape.dims[ax];
        char head[256];
        if (i + 1 < n->n_in)
            snprintf(head, sizeof head, "%sif (%s < %lld)", i ? "else " : "", ix->s[ax],
                     (long long)(off + d));
        else
            snprintf(head, sizeof head, "%s", i ? "else" : "");
        scope_open(e, head);
        idxv sub = *ix;
        char expr[128];
        snprintf(expr, sizeof expr, "(%s - %lld)", ix->s[ax], (long long)off);
        idx_set(e, sub.s[ax], expr);
        char xv[VAL_LEN];
        emit_value(e, x, &sub, xv);
        line(e, "%s = %s;", out, xv);
        scope_close(e);
        off += d;
    }
}

static void emit_take(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    uint32_t table = ir_in(n)[0], idx = ir_in(n)[1];
    const ir_node *tn = &e->g->nodes[table], *in = &e->g->nodes[idx];
    idxv iv = {.rank = in->shape.rank};
    for (int a = 0; a < in->shape.rank; a++) snprintf(iv.s[a], IDX_LEN, "%s", ix->s[a]);
    char raw[VAL_LEN], row[VAL_LEN];
    emit_value(e, idx, &iv, raw);
    int64_t rows = tn->shape.dims[0];
    fresh(e, row, "r");
    line(e, "const int64_t %s = %s < 0 ? 0 : %s > %lld ? %lld : (int64_t)%s;", row, raw, raw,
         (long long)(rows - 1), (long long)(rows > 0 ? rows - 1 : 0), raw);
    idxv tv = {.rank = tn->shape.rank};
    snprintf(tv.s[0], IDX_LEN, "%s", row);
    for (int a = 1; a < tn->shape.rank; a++)
        snprintf(tv.s[a], IDX_LEN, "%s", ix->s[in->shape.rank + a - 1]);
    if (rows == 0) { /* nothing to take: only reachable when the output is empty */
        fresh(e, out, "v");
        line(e, "const %s %s = 0;", cgen_ctype(n->dtype), out);
        return;
    }
    emit_value(e, table, &tv, out);
}

/* ----------------------------------------------------------- reduce ---- */

/* An inlined reduction: an accumulator, one loop per reduced axis, the operand evaluated
 * at the full index inside. The innermost loop carries `omp simd reduction` so it
 * vectorises without -fassociative-math. Float max/min compare-and-select (which a vector
 * unit does in one instruction) and track NaN in a separate flag, so NaN still wins. */
typedef struct reduce_spec {
    const char *acc_t, *init, *omp; /* accumulator type, start value, omp reduction op */
    bool arith, is_max, nan_flag;   /* sum/prod; max (else min); float max/min track NaN */
} reduce_spec;

static reduce_spec reduce_kind(const ir_node *n) {
    kiln_dtype t = n->dtype;
    bool fl = ir_dtype_is_float(t);
    reduce_spec r = {.arith = n->op == IR_REDUCE_SUM || n->op == IR_REDUCE_PROD,
                     .is_max = n->op == IR_REDUCE_MAX};
    r.acc_t = r.arith ? (fl ? "double" : "uint64_t") : cgen_ctype(t);
    r.init = n->op == IR_REDUCE_SUM    ? "0"
             : n->op == IR_REDUCE_PROD ? "1"
             : fl                      ? (r.is_max ? "-INFINITY" : "INFINITY")
             : r.is_max                ? (t == KILN_I32 ? "INT32_MIN" : "INT64_MIN")
                                       : (t == KILN_I32 ? "INT32_MAX" : "INT64_MAX");
    r.omp = n->op == IR_REDUCE_SUM ? "+" : n->op == IR_REDUCE_PROD ? "*" : r.is_max ? "max" : "min";
    r.nan_flag = fl && !r.arith;
    return r;
}

/* Writes the accumulate statement for element xv into accumulator `acc`. */
static void accumulate(em *e, const reduce_spec *r, const char *acc, const char *nan,
                       const char *xv) {
    if (r->arith)
        line(e, "%s %s= (%s)%s;", acc, r->omp, r->acc_t, xv);
    else
        line(e, "%s = %s %s %s ? %s : %s;", acc, xv, r->is_max ? ">" : "<", acc, xv, acc);
    if (r->nan_flag) line(e, "%s |= %s != %s;", nan, xv, xv);
}

/* gcc 12 miscompiles `omp simd` loops of small constant trip count whose body does
 * wrapping integer arithmetic (an index computed from an iota, clamped, then gathered
 * from: it folds the lanes' indices wrongly; clang and gcc without the pragma are right).
 * So a loop whose body emitted integer elementwise code loses its pragma: the pragma line
 * written at `at` is cut out of the source. Returns the flag to restore. */
static bool simd_begin(em *e) {
    bool saved = e->int_arith;
    e->int_arith = false;
    return saved;
}

static void simd_end(em *e, size_t at, bool saved) {
    if (e->int_arith && !e->sb->oom && at < e->sb->len) {
        char *start = e->sb->data + at, *nl = strchr(start, '\n');
        size_t cut = nl ? (size_t)(nl - start) + 1 : 0;
        memmove(start, start + cut, e->sb->len - at - cut + 1);
        e->sb->len -= cut;
    }
    e->int_arith |= saved;
}

/* Opens one loop per reduced axis of reduction `id` (operand xn) and fills sub, the
 * operand's index: kept axes from ix, reduced ones from the loop variables. `pragma`
 * (may be NULL) goes before the innermost loop. Returns how many loops were opened. */
static int open_reduce_loops(em *e, uint32_t id, const ir_node *n, const ir_node *xn,
                             const idxv *ix, idxv *sub, const char *pragma, size_t *pragma_at) {
    int last = -1, kept = 0, opened = 0;
    for (int a = 0; a < xn->shape.rank; a++)
        if (n->a.reduce_axes >> a & 1u) last = a;
    sub->rank = xn->shape.rank;
    for (int a = 0; a < xn->shape.rank; a++) {
        if (!(n->a.reduce_axes >> a & 1u)) {
            snprintf(sub->s[a], IDX_LEN, "%s", ix->s[kept++]);
            continue;
        }
        char head[128];
        snprintf(sub->s[a], IDX_LEN, "r%u_%d", id, a);
        snprintf(head, sizeof head, "for (int64_t r%u_%d = 0; r%u_%d < %lld; r%u_%d++)", id, a, id,
                 a, (long long)xn->shape.dims[a], id, a);
        if (a == last && pragma) {
            *pragma_at = e->sb->len;
            line(e, "%s", pragma);
        }
        scope_open(e, head);
        opened++;
    }
    return opened;
}

static void emit_reduce(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    uint32_t x = ir_in(n)[0];
    const char *ct = cgen_ctype(n->dtype);
    reduce_spec rs = reduce_kind(n);
    char acc[VAL_LEN], nan[VAL_LEN + 8], pragma[256];
    fresh(e, acc, "acc");
    snprintf(nan, sizeof nan, "%s_nan", acc);
    line(e, "%s %s = %s;", rs.acc_t, acc, rs.init);
    if (rs.nan_flag) line(e, "uint8_t %s = 0;", nan);
    int k = snprintf(pragma, sizeof pragma, "#pragma omp simd reduction(%s:%s)", rs.omp, acc);
    if (rs.nan_flag) snprintf(pragma + k, sizeof pragma - (size_t)k, " reduction(|:%s)", nan);
    idxv sub;
    size_t at = SIZE_MAX;
    bool saved = simd_begin(e);
    int opened = open_reduce_loops(e, id, n, &e->g->nodes[x], ix, &sub, pragma, &at);
    char xv[VAL_LEN];
    emit_value(e, x, &sub, xv);
    accumulate(e, &rs, acc, nan, xv);
    simd_end(e, at, saved);
    while (opened--) scope_close(e);
    fresh(e, out, "v");
    if (rs.nan_flag)
        line(e, "const %s %s = %s ? (%s)NAN : %s;", ct, out, nan, ct, acc);
    else
        line(e, "const %s %s = (%s)%s;", ct, out, ct, acc);
}

/* ------------------------------------------------------------ driver ---- */

static void emit_compute(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    const uint32_t *in = ir_in(n);
    idxv sub = {.rank = n->n_in ? e->g->nodes[in[0]].shape.rank : 0};
    switch (n->op) {
    case IR_IOTA:
        fresh(e, out, "v");
        line(e, "const %s %s = (%s)%s;", cgen_ctype(n->dtype), out, cgen_ctype(n->dtype),
             ix->s[n->a.axis]);
        return;
    case IR_BROADCAST:
        for (int a = 0; a < sub.rank; a++)
            snprintf(sub.s[a], IDX_LEN, "%s",
                     e->g->nodes[in[0]].shape.dims[a] == 1 ? "0" : ix->s[n->a.bcast_dims[a]]);
        emit_value(e, in[0], &sub, out);
        return;
    case IR_TRANSPOSE:
        for (int a = 0; a < sub.rank; a++) snprintf(sub.s[n->a.perm[a]], IDX_LEN, "%s", ix->s[a]);
        emit_value(e, in[0], &sub, out);
        return;
    case IR_SLICE:
        for (int a = 0; a < sub.rank; a++) {
            char expr[2 * IDX_LEN + 64];
            if (n->a.slice.stride[a] == 1 && n->a.slice.start[a] == 0)
                snprintf(expr, sizeof expr, "%s", ix->s[a]);
            else
                snprintf(expr, sizeof expr, "(%lld + %s * %lld)", (long long)n->a.slice.start[a],
                         ix->s[a], (long long)n->a.slice.stride[a]);
            idx_set(e, sub.s[a], expr);
        }
        emit_value(e, in[0], &sub, out);
        return;
    case IR_RESHAPE: emit_reshape(e, n, ix, out); return;
    case IR_PAD: emit_pad(e, id, ix, out); return;
    case IR_CONCAT: emit_concat(e, id, ix, out); return;
    case IR_TAKE_ROWS: emit_take(e, id, ix, out); return;
    default: break;
    }
    if (ir_ops[n->op].kind == IRK_REDUCE)
        emit_reduce(e, id, ix, out);
    else
        emit_elementwise(e, id, ix, out);
}

static void emit_value(em *e, uint32_t id, const idxv *ix, char *out) {
    const ir_node *n = &e->g->nodes[id];
    if (e->p->inline_const[id]) {
        literal(n, out);
        return;
    }
    const char *hit = memo_find(e, id, ix);
    if (hit) {
        snprintf(out, VAL_LEN, "%s", hit);
        return;
    }
    bool root = false; /* a kernel computes its roots; other buffers it reads */
    for (uint32_t r = 0; r < e->k->n_roots; r++) root |= e->k->roots[r] == id;
    if (e->p->materialised[id] && !root)
        load(e, id, ix, out);
    else
        emit_compute(e, id, ix, out);
    memo_add(e, id, ix, out);
}

/* The loop over the last axis, each root computed per element. */
static void emit_elements(em *e, const idxv *ix, int64_t inner) {
    const fkernel *k = e->k;
    int last = ix->rank ? ix->rank - 1 : 0;
    char head[160];
    snprintf(head, sizeof head, "for (int64_t i%d = jb; i%d < je; i%d++)", last, last, last);
    scope_open(e, head);
    for (uint32_t i = 0; i < k->n_roots; i++) {
        char v[VAL_LEN];
        emit_value(e, k->roots[i], ix, v);
        line(e, "out%u[row * %lld + i%d] = %s;", i, (long long)inner, last, v);
    }
    scope_close(e);
}

/* A kernel that is one reduction over leading axes keeping the operand's last axis (a
 * column sum, a bias gradient): element by element the reduced axes would be walked with
 * a stride of a whole row, so it keeps a row of accumulators instead and walks the
 * operand row by row, contiguous and vectorised across the kept last axis. */
static bool column_reduction(const kiln_graph *g, const fkernel *k) {
    if (k->n_roots != 1) return false;
    const ir_node *n = &g->nodes[k->roots[0]];
    if (ir_ops[n->op].kind != IRK_REDUCE) return false;
    int xr = g->nodes[ir_in(n)[0]].shape.rank;
    return n->shape.rank >= 1 && !(n->a.reduce_axes >> (xr - 1) & 1u);
}

static void emit_columns(em *e, const idxv *ix, int64_t inner) {
    uint32_t id = e->k->roots[0];
    const ir_node *n = &e->g->nodes[id];
    uint32_t x = ir_in(n)[0];
    const ir_node *xn = &e->g->nodes[x];
    reduce_spec rs = reduce_kind(n);
    const char *ct = cgen_ctype(n->dtype);
    int last = ix->rank - 1, opened = 0;
    line(e, "%s acc[%d];", rs.acc_t, CHUNK);
    if (rs.nan_flag) line(e, "uint8_t acc_nan[%d];", CHUNK);
    line(e, "for (int64_t j = 0; j < je - jb; j++) acc[j] = %s;", rs.init);
    if (rs.nan_flag) line(e, "for (int64_t j = 0; j < je - jb; j++) acc_nan[j] = 0;");
    idxv sub;
    opened = open_reduce_loops(e, id, n, xn, ix, &sub, NULL, NULL);
    char head[160], acc[64], nan[64], xv[VAL_LEN];
    size_t at = e->sb->len;
    bool saved = simd_begin(e);
    line(e, "#pragma omp simd");
    snprintf(head, sizeof head, "for (int64_t i%d = jb; i%d < je; i%d++)", last, last, last);
    scope_open(e, head);
    emit_value(e, x, &sub, xv);
    snprintf(acc, sizeof acc, "acc[i%d - jb]", last);
    snprintf(nan, sizeof nan, "acc_nan[i%d - jb]", last);
    accumulate(e, &rs, acc, nan, xv);
    simd_end(e, at, saved);
    scope_close(e);
    while (opened--) scope_close(e);
    scope_open(e, head);
    if (rs.nan_flag)
        line(e, "out0[row * %lld + i%d] = %s ? (%s)NAN : (%s)%s;", (long long)inner, last, nan, ct,
             ct, acc);
    else
        line(e, "out0[row * %lld + i%d] = (%s)%s;", (long long)inner, last, ct, acc);
    scope_close(e);
}

static void emit_kernel(em *e, uint32_t ki, cgen_kernel *info) {
    const fkernel *k = e->k;
    uint32_t root = k->roots[0];
    const ir_node *rn = &e->g->nodes[root];
    int r = rn->shape.rank;
    int64_t numel = 0;
    ir_shape_numel(&rn->shape, &numel);
    int64_t inner = r ? rn->shape.dims[r - 1] : 1;
    int64_t chunks = inner > CHUNK ? (inner + CHUNK - 1) / CHUNK : 1;
    int64_t outer = inner ? numel / inner : 0;
    info->items = numel ? outer * chunks : 0;
    sb_printf(e->sb, "\nKILN_EXPORT void kiln_k%u(void *const *b, int64_t begin, int64_t end) {\n",
              ki);
    for (uint32_t i = 0; i < k->n_inputs; i++) {
        const char *t = cgen_ctype(e->g->nodes[k->inputs[i]].dtype);
        /* an input the planner overwrites in place aliases out0: neither may be restrict */
        const char *q = k->alias_input == i + 1 ? "" : "restrict ";
        line(e, "const %s *%sin%u = (const %s *)b[%u];", t, q, i, t, i);
    }
    for (uint32_t i = 0; i < k->n_roots; i++) { /* several for multi-output kernels */
        const char *t = cgen_ctype(e->g->nodes[k->roots[i]].dtype);
        const char *q = k->alias_input ? "" : "restrict ";
        line(e, "%s *%sout%u = (%s *)b[%u];", t, q, i, t, k->n_inputs + i);
    }
    scope_open(e, "for (int64_t it = begin; it < end; it++)");
    if (chunks > 1) {
        line(e, "const int64_t row = it / %lld, jb = (it %% %lld) * %d;", (long long)chunks,
             (long long)chunks, CHUNK);
        line(e, "const int64_t je = jb + %d < %lld ? jb + %d : %lld;", CHUNK, (long long)inner,
             CHUNK, (long long)inner);
    } else {
        line(e, "const int64_t row = it, jb = 0, je = %lld;", (long long)inner);
    }
    idxv ix = {.rank = r};
    /* split the row number into the leading indices */
    int64_t div = 1;
    for (int a = r - 2; a >= 0; a--) {
        line(e, "const int64_t i%d = (row / %lld) %% %lld;", a, (long long)div,
             (long long)rn->shape.dims[a]);
        snprintf(ix.s[a], IDX_LEN, "i%d", a);
        div *= rn->shape.dims[a];
    }
    if (r) snprintf(ix.s[r - 1], IDX_LEN, "i%d", r - 1);
    if (column_reduction(e->g, k))
        emit_columns(e, &ix, inner);
    else
        emit_elements(e, &ix, inner);
    scope_close(e);
    sb_append(e->sb, "}\n");
    /* enough items per chunk for ~32K element-operations */
    int64_t per_item = (chunks > 1 ? CHUNK : inner) * (int64_t)(k->n_members ? k->n_members : 1);
    int64_t red = 1;
    for (uint32_t i = 0; i < k->n_inputs; i++) {
        int64_t m = 0;
        ir_shape_numel(&e->g->nodes[k->inputs[i]].shape, &m);
        if (numel && m / numel > red) red = m / numel;
    }
    per_item *= red;
    info->grain = per_item >= 32768 ? 1 : 32768 / (per_item ? per_item : 1);
}

/* exp and tanh for f32 written out, branch-free, so that loops calling them vectorise
 * (libm's expf is a scalar call): Cody-Waite range reduction exp(x) = 2^k exp(r) with
 * |r| <= ln2/2, a degree-6 polynomial for exp(r) (the Cephes coefficients), and 2^k put
 * into the exponent bits (two steps below 2^-120 so subnormal results come out right).
 * Max error ~1 ulp against exp in double rounded to f32; NaN and +-inf handled by selects.
 * tanh: an odd polynomial for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1). */
static const char math_f32[] = "static inline float kiln_exp_f32(float x) {\n"
                               "    float xc = x < -104.0f ? -104.0f : x > 88.75f ? 88.75f : x;\n"
                               "    float kf = floorf(xc * 1.44269504088896341f + 0.5f);\n"
                               "    float r = xc - kf * 0.693359375f;\n"
                               "    r = r + kf * 2.12194440e-4f;\n"
                               "    float p = 1.9875691500e-4f;\n"
                               "    p = p * r + 1.3981999507e-3f;\n"
                               "    p = p * r + 8.3334519073e-3f;\n"
                               "    p = p * r + 4.1665795894e-2f;\n"
                               "    p = p * r + 1.6666665459e-1f;\n"
                               "    p = p * r + 5.0000001201e-1f;\n"
                               "    float y = p * r * r + r + 1.0f;\n"
                               "    int32_t k = (int32_t)kf, kk = k < -120 ? k + 100 : k;\n"
                               "    uint32_t yb;\n"
                               "    memcpy(&yb, &y, 4);\n"
                               "    yb += (uint32_t)kk << 23;\n"
                               "    memcpy(&y, &yb, 4);\n"
                               "    y = k < -120 ? y * 7.8886090522101181e-31f : y;\n"
                               "    y = x > 88.72283935546875f ? INFINITY : y;\n"
                               "    return x != x ? x : y;\n"
                               "}\n"
                               "static inline float kiln_tanh_f32(float x) {\n"
                               "    float a = fabsf(x), z = x * x;\n"
                               "    float p = -5.70498872745e-3f;\n"
                               "    p = p * z + 2.06390887954e-2f;\n"
                               "    p = p * z - 5.37397155531e-2f;\n"
                               "    p = p * z + 1.33314422036e-1f;\n"
                               "    p = p * z - 3.33332819422e-1f;\n"
                               "    float small = p * z * x + x;\n"
                               "    float big = 1.0f - 2.0f / (kiln_exp_f32(2.0f * a) + 1.0f);\n"
                               "    big = x < 0 ? -big : big;\n"
                               "    return a < 0.625f ? small : big;\n"
                               "}\n"
                               /* 1/(1+exp(-x)), as exp(x)/(1+exp(x)) for x < 0 (the reference's
                                * form), so it does not flush to 0 before exp(x) does */
                               "static inline float kiln_logistic_f32(float x) {\n"
                               "    float e = kiln_exp_f32(-fabsf(x));\n"
                               "    return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);\n"
                               "}\n";

/* The f64 forms of the helpers the registry's kernel expressions name. */
static const char math_f64[] = "static inline double kiln_exp_f64(double x) { return exp(x); }\n"
                               "static inline double kiln_tanh_f64(double x) { return tanh(x); }\n"
                               "static inline double kiln_logistic_f64(double x) {\n"
                               "    double e = exp(-fabs(x));\n"
                               "    return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);\n"
                               "}\n";

/* CONVERT's kernel expression is kiln_cvt_<from>_<to>: float -> int saturates (NaN -> 0),
 * to bool tests != 0, i64 -> i32 wraps; the rest are C conversions. */
static const char converts[] =
    "static inline float kiln_cvt_f32_f32(float a) { return (float)a; }\n"
    "static inline double kiln_cvt_f32_f64(float a) { return (double)a; }\n"
    "static inline int32_t kiln_cvt_f32_i32(float a) { return kiln_f2i32((double)a); }\n"
    "static inline int64_t kiln_cvt_f32_i64(float a) { return kiln_f2i64((double)a); }\n"
    "static inline uint8_t kiln_cvt_f32_bool(float a) { return (uint8_t)(a != 0); }\n"
    "static inline float kiln_cvt_f64_f32(double a) { return (float)a; }\n"
    "static inline double kiln_cvt_f64_f64(double a) { return (double)a; }\n"
    "static inline int32_t kiln_cvt_f64_i32(double a) { return kiln_f2i32((double)a); }\n"
    "static inline int64_t kiln_cvt_f64_i64(double a) { return kiln_f2i64((double)a); }\n"
    "static inline uint8_t kiln_cvt_f64_bool(double a) { return (uint8_t)(a != 0); }\n"
    "static inline float kiln_cvt_i32_f32(int32_t a) { return (float)a; }\n"
    "static inline double kiln_cvt_i32_f64(int32_t a) { return (double)a; }\n"
    "static inline int32_t kiln_cvt_i32_i32(int32_t a) { return (int32_t)a; }\n"
    "static inline int64_t kiln_cvt_i32_i64(int32_t a) { return (int64_t)a; }\n"
    "static inline uint8_t kiln_cvt_i32_bool(int32_t a) { return (uint8_t)(a != 0); }\n"
    "static inline float kiln_cvt_i64_f32(int64_t a) { return (float)a; }\n"
    "static inline double kiln_cvt_i64_f64(int64_t a) { return (double)a; }\n"
    "static inline int32_t kiln_cvt_i64_i32(int64_t a) { return (int32_t)(uint32_t)(uint64_t)a; }\n"
    "static inline int64_t kiln_cvt_i64_i64(int64_t a) { return (int64_t)a; }\n"
    "static inline uint8_t kiln_cvt_i64_bool(int64_t a) { return (uint8_t)(a != 0); }\n"
    "static inline float kiln_cvt_bool_f32(uint8_t a) { return (float)a; }\n"
    "static inline double kiln_cvt_bool_f64(uint8_t a) { return (double)a; }\n"
    "static inline int32_t kiln_cvt_bool_i32(uint8_t a) { return (int32_t)a; }\n"
    "static inline int64_t kiln_cvt_bool_i64(uint8_t a) { return (int64_t)a; }\n"
    "static inline uint8_t kiln_cvt_bool_bool(uint8_t a) { return (uint8_t)(a != 0); }\n";

static const char prelude[] =
    "/* generated by kiln: fused kernels, one function each (see src/codegen/cgen.c) */\n"
    "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n"
    "#define KILN_EXPORT __attribute__((visibility(\"default\")))\n"
    "static inline int32_t kiln_div_i32(int32_t a, int32_t b) { return b == 0 ? -1 : (a == "
    "INT32_MIN && b == -1) ? a : a / b; }\n"
    "static inline int64_t kiln_div_i64(int64_t a, int64_t b) { return b == 0 ? -1 : (a == "
    "INT64_MIN && b == -1) ? a : a / b; }\n"
    "#define KILN_IPOW(T, U) \\\n"
    "static inline T kiln_pow_##T(T a, T b) { \\\n"
    "    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0; \\\n"
    "    U r = 1, x = (U)a; \\\n"
    "    for (; b; b >>= 1, x *= x) if (b & 1) r *= x; \\\n"
    "    return (T)r; }\n"
    "typedef int32_t i32; typedef int64_t i64;\n"
    "KILN_IPOW(i32, uint32_t)\nKILN_IPOW(i64, uint64_t)\n"
    /* one select each: NaN in a wins by the test, NaN in b because both compares fail */
    "static inline float kiln_max_f32(float a, float b) { return (a > b || a != a) ? a : b; }\n"
    "static inline float kiln_min_f32(float a, float b) { return (a < b || a != a) ? a : b; }\n"
    "static inline double kiln_max_f64(double a, double b) { return (a > b || a != a) ? a : b; }\n"
    "static inline double kiln_min_f64(double a, double b) { return (a < b || a != a) ? a : b; }\n"
    "static inline int32_t kiln_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }\n"
    "static inline int32_t kiln_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }\n"
    "static inline int64_t kiln_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "static inline int64_t kiln_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "static inline int32_t kiln_f2i32(double x) { return x != x ? 0 : x >= 2147483647.0 ? "
    "INT32_MAX : x <= -2147483648.0 ? INT32_MIN : (int32_t)x; }\n"
    "static inline int64_t kiln_f2i64(double x) { return x != x ? 0 : x >= 9223372036854775808.0 ? "
    "INT64_MAX : x <= -9223372036854775808.0 ? INT64_MIN : (int64_t)x; }\n";

kiln_status cgen_program(const kiln_graph *g, const fusion_plan *p, strbuf *sb, cgen_kernel *info) {
    sb_append(sb, prelude);
    sb_append(sb, math_f32);
    sb_append(sb, math_f64);
    sb_append(sb, converts);
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        info[i] = (cgen_kernel){0, 1};
        if (p->kernels[i].kind != FK_LOOP) continue;
        em e = {.g = g, .p = p, .k = &p->kernels[i], .sb = sb, .ctx = g->ctx};
        emit_kernel(&e, i, &info[i]);
        for (size_t m = 0; m < e.n_memo; m++)
            host_free(e.ctx, e.memo[m].key, strlen(e.memo[m].key) + 1);
        host_free(e.ctx, e.memo, e.cap_memo * sizeof *e.memo);
        if (e.oom) sb->oom = true;
        if (e.hole)
            return ctx_error(g->ctx, KILN_ERR_INTERNAL,
                             "codegen: %s has no kernel expression for its operands (kernel %u)",
                             ir_ops[e.hole - 1].name, i);
    }
    if (sb->oom) return ctx_oom(g->ctx, "codegen: kernel source", sb->len);
    return KILN_OK;
}
