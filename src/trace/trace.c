/* trace.c — the builder core (errors, locations, emitting nodes), sources (parameters,
 * constants, iota) and the elementwise ops with NumPy broadcasting.
 *
 * The first error wins (as in XLA's builder): it is stored on the graph and on the
 * context, later ops return the invalid value without touching the graph, and
 * kiln_graph_finish returns it. A failing primitive op leaves no node behind (a composite
 * that fails part-way can, but the graph is dead by then). */
#include "trace.h"
#include "base/strbuf.h"
#include "ir/side.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- core ---- */

void kiln_graph_at(kiln_graph *g, const char *file, int line) {
    if (!g) return;
    g->cur_file = file;
    g->cur_line = line;
}

void kiln_graph_push_at(kiln_graph *g, const char *file, int line) {
    if (!g) return;
    if (g->loc_depth < KN_LOC_SAVED) {
        g->loc_saved[g->loc_depth].file = g->cur_file;
        g->loc_saved[g->loc_depth].line = g->cur_line;
    }
    g->loc_depth++;
    kiln_graph_at(g, file, line);
}

/* The call that pushed has returned: its caller's location is current again. */
static void pop_at(kiln_graph *g) {
    if (!g || !g->loc_depth) return;
    if (--g->loc_depth < KN_LOC_SAVED)
        kiln_graph_at(g, g->loc_saved[g->loc_depth].file, g->loc_saved[g->loc_depth].line);
}

kiln_value kiln_graph_pop_at(kiln_graph *g, kiln_value v) {
    pop_at(g);
    return v;
}

kiln_status kiln_graph_pop_at_status(kiln_graph *g, kiln_status s) {
    pop_at(g);
    return s;
}

/* Where the current public call came from, for messages: " (at file:line)" or "". */
static void location(const kiln_graph *g, char *buf, size_t size) {
    if (g->cur_file)
        snprintf(buf, size, " (at %s:%d)", kn_path_base(g->cur_file), g->cur_line);
    else
        buf[0] = 0;
}

bool trace_ready(kiln_graph *g, const char *op) {
    if (!g) return false;
    if (g->status) return false;
    if (g->finished) {
        /* A finished graph is immutable (it may be running on other threads): the mistake
         * goes to the context only, and the graph stays valid. */
        char at[KN_ERR_MAX / 2];
        location(g, at, sizeof at);
        ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT,
                  "%s: graph '%s' is already finished; no op can be added to it%s", op, g->name,
                  at);
        return false;
    }
    return true;
}

/* Appends "<type>, <type>, ..." of the given nodes to buf (always terminated). */
static void operand_types(const kiln_graph *g, const uint32_t *in, uint32_t n, char *buf,
                          size_t size) {
    size_t k = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < n && k < size; i++) {
        char t[IR_TYPE_STR_MAX];
        const ir_node *x = &g->nodes[in[i]];
        k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "",
                              ir_type_str(x->dtype, &x->shape, t, sizeof t));
    }
}

static kiln_value trace_vfail(kiln_graph *g, kiln_status code, const char *op, const uint32_t *in,
                              uint32_t n_in, const char *fmt, va_list ap) {
    if (g->status) return KN_NONE;
    char msg[KN_ERR_MAX], types[KN_ERR_MAX / 2], at[KN_ERR_MAX / 2];
    vsnprintf(msg, sizeof msg, fmt, ap);
    operand_types(g, in, n_in, types, sizeof types);
    location(g, at, sizeof at);
    /* a body's error passed up (control.c's "in the body: ...") ends with the line this
     * one would add when the body's op and the loop are on the same line: say it once */
    size_t lm = strlen(msg), la = strlen(at);
    if (la && lm >= la && !strcmp(msg + lm - la, at)) msg[lm - la] = 0;
    g->status = code;
    g->error = g->error_buf; /* held in the graph: no allocation can lose the message */
    int len = snprintf(g->error_buf, sizeof g->error_buf, "%s: %s%s%s%s", op, msg,
                       n_in ? "; operands: " : "", types, at);
    if (len >= (int)sizeof g->error_buf) /* keep the location, which matters most */
        snprintf(g->error_buf + sizeof g->error_buf - 1 - strlen(at) - 3, strlen(at) + 4, "...%s",
                 at);
    ctx_error(g->ctx, code, "%s", g->error_buf);
    return KN_NONE;
}

kiln_value trace_fail(kiln_graph *g, kiln_status code, const char *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    trace_vfail(g, code, op, NULL, 0, fmt, ap);
    va_end(ap);
    return KN_NONE;
}

kiln_value trace_fail_on(kiln_graph *g, const uint32_t *in, uint32_t n_in, kiln_status code,
                         const char *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    trace_vfail(g, code, op, in, n_in, fmt, ap);
    va_end(ap);
    return KN_NONE;
}

const ir_node *trace_node(kiln_graph *g, const char *op, kiln_value v, const char *what) {
    if (v.id == 0) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "%s is the invalid value (an earlier op failed, or it was never set)", what);
        return NULL;
    }
    if (v.graph != g->id) {
        for (const kiln_graph *p = g->parent; p; p = p->parent)
            if (p->id == v.graph) {
                trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                           "%s is a value of graph '%s', which encloses the body '%s' being "
                           "traced: read it through kiln_capture(g, value)",
                           what, p->name, g->name);
                return NULL;
            }
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "%s is not a value of graph '%s' (values cannot be mixed between graphs)", what,
                   g->name);
        return NULL;
    }
    if (v.id >= g->n_nodes) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "%s is no value graph '%s' made (id %u, and it has %u values): a kiln_value "
                   "comes from a builder, not from its fields",
                   what, g->name, v.id, g->n_nodes - 1);
        return NULL;
    }
    return &g->nodes[v.id];
}

kiln_value trace_emit(kiln_graph *g, const char *op, ir_node *tmpl, const uint32_t *in,
                      uint32_t n_in) {
    tmpl->n_in = n_in;
    tmpl->in_heap = NULL;
    if (n_in <= IR_INLINE_INPUTS && n_in)
        memcpy(tmpl->in_inline, in, n_in * sizeof *in);
    else if (n_in > IR_INLINE_INPUTS)
        tmpl->in_heap = (uint32_t *)in; /* read-only here */
    char msg[768];
    kiln_status s = ir_infer(g, tmpl, msg, sizeof msg);
    tmpl->in_heap = NULL;
    if (s) return trace_fail_on(g, in, n_in, s, op, "%s", msg);
    tmpl->file = g->cur_file;
    tmpl->line = g->cur_line;
    uint32_t id = ir_graph_append(g, tmpl, in, n_in);
    if (!id)
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for a new node failed");
    return trace_value(g, id);
}

bool trace_axis(int axis, int rank, int *out) {
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) return false;
    *out = a;
    return true;
}

/* -------------------------------------------------------------- sources ---- */

bool trace_make_shape(kiln_graph *g, const char *op, int rank, const int64_t *dims, ir_shape *s) {
    if (rank < 0 || rank > KILN_MAX_RANK) {
        trace_fail(g, KILN_STATUS_SHAPE, op, "rank %d is outside [0, %d]", rank, KILN_MAX_RANK);
        return false;
    }
    if (rank > 0 && !dims) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "dims is NULL for rank %d", rank);
        return false;
    }
    s->rank = rank;
    for (int i = 0; i < rank; i++) s->dims[i] = dims[i];
    return true;
}

/* A parameter of the user's, in memory kind `kind`. */
static kiln_value user_parameter(kiln_graph *g, const char *op, const char *name, kiln_dtype dtype,
                                 int rank, const int64_t *dims, kiln_memory_kind kind) {
    if (!trace_ready(g, op)) return KN_NONE;
    if (g->parent) /* a body's parameters are its layout's (src/trace/control.c) */
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "graph '%s' is the body of a loop or branch: kiln makes its parameters "
                          "(the values it receives); read other values through kiln_capture",
                          g->name);
    if (!ir_memory_kind_name((int)kind))
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "memory kind %d is not a kiln_memory_kind (KILN_MEMORY_DEVICE or "
                          "KILN_MEMORY_PINNED_HOST)",
                          (int)kind);
    kiln_value v = trace_parameter(g, op, name, dtype, rank, dims);
    if (v.id) g->nodes[v.id].a.param_memory_kind = (int)kind;
    return v;
}

kiln_value kiln_parameter(kiln_graph *g, const char *name, kiln_dtype dtype, int rank,
                          const int64_t *dims) {
    return user_parameter(g, "kiln_parameter", name, dtype, rank, dims, KILN_MEMORY_DEVICE);
}

kiln_value kiln_parameter_in_memory(kiln_graph *g, const char *name, kiln_dtype dtype, int rank,
                                    const int64_t *dims, kiln_memory_kind kind) {
    return user_parameter(g, "kiln_parameter_in_memory", name, dtype, rank, dims, kind);
}

int kiln_value_memory_kind(const kiln_graph *g, kiln_value v) {
    if (!g || !v.id || v.graph != g->id || v.id >= g->n_nodes) return -1;
    return ir_in_host(g, v.id) ? KILN_MEMORY_PINNED_HOST : KILN_MEMORY_DEVICE;
}

kiln_value trace_parameter(kiln_graph *g, const char *op, const char *name, kiln_dtype dtype,
                           int rank, const int64_t *dims) {
    ir_node n = {.op = IR_PARAMETER, .dtype = dtype};
    if (!trace_make_shape(g, op, rank, dims, &n.shape)) return KN_NONE;
    n.a.param_index = (int)g->n_params;
    if (name && !(n.name = host_strdup(g->ctx, name)))
        return trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation for the name failed");
    kiln_value v = trace_emit(g, op, &n, NULL, 0);
    if (!v.id && n.name) host_free(g->ctx, n.name, strlen(n.name) + 1);
    return v;
}

kiln_value kiln_constant(kiln_graph *g, kiln_dtype dtype, int rank, const int64_t *dims,
                         const void *data) {
    const char *op = "kiln_constant";
    if (!trace_ready(g, op)) return KN_NONE;
    ir_node n = {.op = IR_CONSTANT, .dtype = dtype};
    if (!trace_make_shape(g, op, rank, dims, &n.shape)) return KN_NONE;
    char msg[256];
    size_t bytes;
    kiln_status s = ir_infer(g, &n, msg, sizeof msg);
    if (s) return trace_fail(g, s, op, "%s", msg);
    ir_shape_nbytes(&n.shape, dtype, &bytes);
    if (bytes && !data) return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "data is NULL");
    if (bytes) {
        if (!(n.data = host_alloc(g->ctx, bytes)))
            return trace_fail(g, KILN_STATUS_HOST_OOM, op,
                              "host allocation of %zu bytes for the data failed", bytes);
        memcpy(n.data, data, bytes);
        if (dtype == KILN_DTYPE_BOOL) /* normalise to 0/1 so every consumer can trust it */
            for (size_t i = 0; i < bytes; i++) ((uint8_t *)n.data)[i] = ((uint8_t *)n.data)[i] != 0;
    }
    kiln_value v = trace_emit(g, op, &n, NULL, 0);
    if (!v.id && n.data) host_free(g->ctx, n.data, bytes);
    return v;
}

/* ------------------------------------------------------------- record logs ---- */

void trace_log_release(kiln_context *ctx, void *state) {
    trace_log *l = state;
    host_free(ctx, l->v, l->cap * l->elem);
}

void trace_log_push(kiln_graph *g, const char *op, const ir_side_kind *kind, size_t elem,
                    const void *rec) {
    if (g->status) return;
    trace_log *l = ir_side_state_make(g, kind);
    if (!l) {
        trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of %zu bytes failed", sizeof *l);
        return;
    }
    l->elem = elem;
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 8;
        void *v = host_realloc(g->ctx, l->v, l->cap * elem, cap * elem);
        if (!v) {
            trace_fail(g, KILN_STATUS_HOST_OOM, op, "host allocation of %zu bytes failed",
                       cap * elem);
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    memcpy((char *)l->v + (size_t)l->n++ * elem, rec, elem);
}

const void *trace_log_items(const kiln_graph *g, const ir_side_kind *kind, uint32_t *n) {
    const trace_log *l = ir_side_state(g, kind);
    *n = l ? l->n : 0;
    return l ? l->v : NULL;
}

/* The composites of a graph: a log (above), not carried by passes: compiling ignores
 * composites, and kiln_grad reads them on the graph it appends to, the traced one. */
static const ir_side_kind composite_kind = {
    .name = "composites", .state_size = sizeof(trace_log), .release = trace_log_release};

void trace_composite(kiln_graph *g, const char *op, const ir_composite *c) {
    if (c->out) trace_log_push(g, op, &composite_kind, sizeof *c, c);
}

const ir_composite *trace_composites(const kiln_graph *g, uint32_t *n) {
    return trace_log_items(g, &composite_kind, n);
}

kiln_value trace_scalar(kiln_graph *g, const char *op, kiln_dtype t, double value) {
    uint64_t bytes;
    if (!ir_scalar_store(t, value, &bytes))
        return trace_fail(g, KILN_STATUS_DTYPE, op, "dtype %d is not a kiln_dtype", t);
    return kiln_constant(g, t, 0, NULL, &bytes);
}

kiln_value kiln_scalar(kiln_graph *g, kiln_dtype dtype, double value) {
    if (!trace_ready(g, "kiln_scalar")) return KN_NONE;
    return trace_scalar(g, "kiln_scalar", dtype, value);
}

kiln_value kiln_full(kiln_graph *g, kiln_dtype dtype, int rank, const int64_t *dims, double value) {
    const char *op = "kiln_full";
    if (!trace_ready(g, op)) return KN_NONE;
    ir_shape shape; /* checked up front, so that errors name kiln_full */
    char msg[256];
    if (!trace_make_shape(g, op, rank, dims, &shape)) return KN_NONE;
    kiln_status st = ir_dtype_valid(dtype) ? ir_check_shape(&shape, dtype, msg, sizeof msg)
                                           : KILN_STATUS_OK; /* trace_scalar names a bad dtype */
    if (st) return trace_fail(g, st, op, "%s", msg);
    kiln_value s = trace_scalar(g, op, dtype, value);
    if (!s.id || rank == 0) return s;
    return kiln_broadcast_in_dim(g, s, rank, dims, NULL);
}

kiln_value kiln_iota(kiln_graph *g, kiln_dtype dtype, int rank, const int64_t *dims, int axis) {
    const char *op = "kiln_iota";
    if (!trace_ready(g, op)) return KN_NONE;
    ir_node n = {.op = IR_IOTA, .dtype = dtype};
    if (!trace_make_shape(g, op, rank, dims, &n.shape)) return KN_NONE;
    if (!trace_axis(axis, rank, &n.a.axis))
        return trace_fail(g, KILN_STATUS_SHAPE, op, "axis %d is out of range for rank %d", axis,
                          rank);
    return trace_emit(g, op, &n, NULL, 0);
}

/* ----------------------------------------------------------- elementwise ---- */

static kiln_value unary(kiln_graph *g, const char *op, ir_op code, kiln_value x) {
    if (!trace_ready(g, op)) return KN_NONE;
    if (!trace_node(g, op, x, "the operand")) return KN_NONE;
    ir_node n = {.op = code};
    return trace_emit(g, op, &n, &x.id, 1);
}

/* One public builder per plain unary op of the registry: kiln_<ident>(g, x). A row whose
 * declaration is missing from kiln.h fails the build (-Wmissing-prototypes). */
#define KN_DEF_UNARY(e, name, ident, ...)                                                          \
    kiln_value kiln_##ident(kiln_graph *g, kiln_value x) {                                         \
        return unary(g, "kiln_" #ident, IR_##e, x);                                                \
    }
KN_UNARY_OPS(KN_DEF_UNARY)
#undef KN_DEF_UNARY

kiln_value kiln_convert(kiln_graph *g, kiln_value x, kiln_dtype to) {
    const char *op = "kiln_convert";
    if (!trace_ready(g, op)) return KN_NONE;
    const ir_node *xn = trace_node(g, op, x, "the operand");
    if (!xn) return KN_NONE;
    if (xn->dtype == to && ir_dtype_valid(to)) return x; /* nothing to do */
    ir_node n = {.op = IR_CONVERT, .dtype = to};
    return trace_emit(g, op, &n, &x.id, 1);
}

kiln_status kiln_promote(kiln_graph *g, int n, const kiln_value *xs, kiln_value *out) {
    const char *op = "kiln_promote";
    if (!trace_ready(g, op)) {
        for (int i = 0; out && i < n; i++) out[i] = KN_NONE;
        kiln_status st = g ? kiln_graph_status(g) : KILN_STATUS_OK;
        return st ? st : KILN_STATUS_INVALID_ARGUMENT;
    }
    if (n < 1 || !xs || !out) {
        trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                   "needs n >= 1 operands and an array of n results (n = %d%s%s)", n,
                   xs ? "" : ", xs NULL", out ? "" : ", out NULL");
        for (int i = 0; out && i < n; i++) out[i] = KN_NONE;
        return kiln_graph_status(g);
    }
    kiln_dtype to = KILN_DTYPE_INVALID;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        char what[32];
        snprintf(what, sizeof what, "xs[%d]", i);
        const ir_node *x = trace_node(g, op, xs[i], what);
        ok = x != NULL;
        if (ok) to = i ? kiln_promote_types(to, x->dtype) : x->dtype;
    }
    /* out may be xs: element i is read before it is written */
    for (int i = 0; i < n; i++) out[i] = ok ? kiln_convert(g, xs[i], to) : KN_NONE;
    kiln_status st = kiln_graph_status(g);
    for (int i = 0; st && i < n; i++) out[i] = KN_NONE;
    return st;
}

bool trace_shapes_broadcast(const ir_shape *a, const ir_shape *b, ir_shape *out, int *bad) {
    out->rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 1; i <= out->rank; i++) {
        int64_t da = i <= a->rank ? a->dims[a->rank - i] : 1;
        int64_t db = i <= b->rank ? b->dims[b->rank - i] : 1;
        if (da != db && da != 1 && db != 1) return *bad = out->rank - i, false;
        out->dims[out->rank - i] = da == 1 ? db : da;
    }
    return true;
}

kiln_value trace_broadcast_to(kiln_graph *g, const char *op, kiln_value v, const ir_shape *to) {
    const ir_node *x = &g->nodes[v.id];
    if (ir_shape_eq(&x->shape, to)) return v;
    ir_node n = {.op = IR_BROADCAST, .shape = *to};
    int off = to->rank - x->shape.rank;
    for (int i = 0; i < x->shape.rank; i++) n.a.bcast_dims[i] = off + i;
    return trace_emit(g, op, &n, &v.id, 1); /* ir_infer reports a rank or size clash */
}

bool trace_broadcast_shape(kiln_graph *g, const char *op, const kiln_value *vals, int count,
                           ir_shape *out) {
    uint32_t in[3];
    *out = (ir_shape){0};
    for (int i = 0; i < count; i++) in[i] = vals[i].id;
    for (int i = 0; i < count; i++) {
        const ir_shape *xs = &g->nodes[in[i]].shape;
        ir_shape prev = *out;
        int bad;
        if (!trace_shapes_broadcast(&prev, xs, out, &bad)) {
            int pa = bad - (out->rank - prev.rank), xa = bad - (out->rank - xs->rank);
            trace_fail_on(g, in, (uint32_t)count, KILN_STATUS_SHAPE, op,
                          "operand shapes cannot be broadcast together (axis %d of the "
                          "result: %lld vs %lld)",
                          bad, (long long)(pa >= 0 ? prev.dims[pa] : 1),
                          (long long)(xa >= 0 ? xs->dims[xa] : 1));
            return false;
        }
    }
    return true;
}

/* Elementwise ops: checks the operands and their dtypes, broadcasts them (NumPy rules) to
 * their common shape, then emits the op. Everything is checked before the first broadcast
 * is emitted, so a mistake is reported against the user's operands and leaves no node. */
kiln_value trace_nary(kiln_graph *g, const char *op, ir_node *n, const kiln_value *vals,
                      int count) {
    static const char *const names[] = {"the first operand", "the second operand",
                                        "the third operand"};
    if (!trace_ready(g, op)) return KN_NONE;
    uint32_t in[3];
    kiln_dtype types[3];
    ir_shape out;
    for (int i = 0; i < count; i++) {
        const ir_node *x = trace_node(g, op, vals[i], names[i]);
        if (!x) return KN_NONE;
        in[i] = vals[i].id;
        types[i] = x->dtype;
    }
    char msg[512];
    kiln_dtype t = n->dtype;
    kiln_status s = ir_infer_elementwise_dtype(n->op, types, (uint32_t)count, &t, msg, sizeof msg);
    if (s) return trace_fail_on(g, in, (uint32_t)count, s, op, "%s", msg);
    if (!trace_broadcast_shape(g, op, vals, count, &out)) return KN_NONE;
    for (int i = 0; i < count; i++) {
        kiln_value b = trace_broadcast_to(g, op, vals[i], &out);
        if (!b.id) return KN_NONE;
        in[i] = b.id;
    }
    return trace_emit(g, op, n, in, (uint32_t)count);
}

static kiln_value binary(kiln_graph *g, const char *op, ir_op code, kiln_value a, kiln_value b) {
    ir_node n = {.op = code};
    kiln_value v[2] = {a, b};
    return trace_nary(g, op, &n, v, 2);
}

/* One public builder per plain binary op of the registry: kiln_<ident>(g, a, b). */
#define KN_DEF_BINARY(e, name, ident, ...)                                                         \
    kiln_value kiln_##ident(kiln_graph *g, kiln_value a, kiln_value b) {                           \
        return binary(g, "kiln_" #ident, IR_##e, a, b);                                            \
    }
KN_BINARY_OPS(KN_DEF_BINARY)
#undef KN_DEF_BINARY

kiln_value kiln_compare(kiln_graph *g, kiln_value a, kiln_value b, kiln_cmp dir) {
    ir_node n = {.op = IR_COMPARE};
    n.a.cmp = dir;
    kiln_value v[2] = {a, b};
    return trace_nary(g, "kiln_compare", &n, v, 2);
}

kiln_value kiln_select(kiln_graph *g, kiln_value pred, kiln_value on_true, kiln_value on_false) {
    ir_node n = {.op = IR_SELECT};
    kiln_value v[3] = {pred, on_true, on_false};
    return trace_nary(g, "kiln_select", &n, v, 3);
}

/* ---------------------------------------------------------------- finish ---- */

kiln_status kiln_graph_finish(kiln_graph *g, int n_outputs, const kiln_value *outputs) {
    const char *op = "kiln_graph_finish";
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (g->status) {
        /* Put the first error back on the context: calls since may have replaced it. */
        ctx_error(g->ctx, g->status, "%s", g->error);
        return g->status;
    }
    if (!trace_ready(g, op)) return KILN_STATUS_INVALID_ARGUMENT; /* already finished */
    kiln_status cs = ir_side_finish_check(g);                     /* open checkpoint regions, say */
    if (cs) return cs;
    if (n_outputs < 1)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op,
                          "a graph needs at least one output (got %d)", n_outputs),
               g->status;
    if (!outputs)
        return trace_fail(g, KILN_STATUS_INVALID_ARGUMENT, op, "outputs is NULL for %d outputs",
                          n_outputs),
               g->status;
    for (int i = 0; i < n_outputs; i++) {
        char what[32];
        snprintf(what, sizeof what, "output %d", i);
        if (!trace_node(g, op, outputs[i], what)) return g->status;
        if (g->parent && ir_in_host(g, outputs[i].id))
            return trace_fail_on(g, &outputs[i].id, 1, KILN_STATUS_INVALID_ARGUMENT, op,
                                 "output %d of body '%s' is in pinned_host memory: a loop's "
                                 "or branch's results are device values (kiln_memory_put(g, "
                                 "x, KILN_MEMORY_DEVICE) brings it back)",
                                 i, g->name),
                   g->status;
    }
    uint32_t *outs = host_alloc(g->ctx, (size_t)n_outputs * sizeof *outs);
    if (!outs)
        return trace_fail(g, KILN_STATUS_HOST_OOM, op,
                          "host allocation of %zu bytes for the output list failed",
                          (size_t)n_outputs * sizeof *outs),
               g->status;
    for (int i = 0; i < n_outputs; i++) outs[i] = outputs[i].id;
    g->outputs = outs;
    g->n_outputs = (uint32_t)n_outputs;
    kiln_status s = ir_verify(g);
    if (s) { /* a kiln bug: keep the verifier's message as the graph's error */
        g->status = s;
        g->error = g->error_buf;
        kiln_last_error_copy(g->ctx, g->error_buf, sizeof g->error_buf);
        return s;
    }
    /* checkpoint regions keep their outputs and free their names */
    if ((s = ir_side_finish(g))) return s;
    g->finished = true;
    return KILN_STATUS_OK;
}
