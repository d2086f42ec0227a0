/* fusion.c — materialisation decisions and kernel formation (see fusion.h).
 *
 * The algorithm is a single forward pass over the (topologically ordered) nodes, in the
 * spirit of XLA's instruction fusion, but decided per node rather than per edge:
 *
 *  1. A node gets a buffer when it must: parameters, non-scalar constants, graph outputs,
 *     dots, scatters, cumsums and attention (library calls read and write memory), and operands of
 *     an "expanding" use — a broadcast that repeats it, the table of a gather, the
 *     operands of a library call — unless the operand is a source (parameter/constant/
 *     iota), which costs nothing to re-read, or a broadcast repeats a source's conversion
 *     (converted_source: one conversion per element); but a library call reads memory, so an iota
 *     or a scalar constant it reads gets a buffer too. The zeros a scatter adds into get
 *     none: the scatter fills its result with zeros itself.
 *  2. A reduction with more than one consumer gets a buffer; with one, it is computed
 *     inline by that consumer (reduction fusion with elementwise consumers: mean,
 *     rsqrt(var + eps), the keepdims reshape).
 *  3. Everything else is inlined into each consumer. Duplication is allowed for cheap
 *     expressions; a node with several consumers gets a buffer when its inlined expression
 *     contains a reduction or costs more than DUP_COST (in rough op units), and so does one
 *     that a kernel would compute several times over through moves (slices, pads: reads
 *     at other positions) for more than DUP_COST again (count_moves).
 *
 * Two kinds of broadcast operand need no buffer after all: a reshape of a value that has
 * one (the broadcast reads that buffer), and a row value (fusion.h), computed once per
 * row of its consumer's kernel. Row values are decided optimistically: every operand of a
 * row broadcast may be one; once the decisions settle, a candidate whose uses do not keep
 * the rows (row_uses_keep_rows) is struck off and everything is decided again, until no
 * candidate left fails.
 *
 * Every materialised node that is not a parameter or constant roots one kernel. */
#include "fusion.h"
#include "ir/side.h"

#include <string.h>

#define DUP_COST        16
#define MERGE_MIN_BYTES (16 << 10) /* multi-output fusion pays off for inputs this large */

kiln_status ir_users_build(const kiln_graph *g, ir_users *u) {
    kiln_context *ctx = g->ctx;
    u->start = host_calloc(ctx, g->n_nodes + 1, sizeof *u->start);
    size_t edges = 0;
    for (uint32_t i = 1; i < g->n_nodes; i++) edges += g->nodes[i].n_in;
    u->users = host_calloc(ctx, edges ? edges : 1, sizeof *u->users);
    if (!u->start || !u->users) {
        ir_users_free(g, u);
        return ctx_oom(ctx, "fusion: users", edges * sizeof *u->users);
    }
    /* count, prefix-sum, fill; a consumer using a node twice is listed once */
    for (uint32_t c = 1; c < g->n_nodes; c++) {
        const uint32_t *in = ir_in(&g->nodes[c]);
        for (uint32_t k = 0; k < g->nodes[c].n_in; k++) {
            bool dup = false;
            for (uint32_t j = 0; j < k; j++) dup |= in[j] == in[k];
            if (!dup) u->start[in[k] + 1]++;
        }
    }
    for (uint32_t i = 1; i <= g->n_nodes; i++) u->start[i] += u->start[i - 1];
    uint32_t *fill = host_calloc(ctx, g->n_nodes, sizeof *fill);
    if (!fill) {
        ir_users_free(g, u);
        return ctx_oom(ctx, "fusion: users", g->n_nodes * sizeof *fill);
    }
    for (uint32_t c = 1; c < g->n_nodes; c++) {
        const uint32_t *in = ir_in(&g->nodes[c]);
        for (uint32_t k = 0; k < g->nodes[c].n_in; k++) {
            bool dup = false;
            for (uint32_t j = 0; j < k; j++) dup |= in[j] == in[k];
            if (!dup) u->users[u->start[in[k]] + fill[in[k]]++] = c;
        }
    }
    host_free(ctx, fill, g->n_nodes * sizeof *fill);
    return KILN_STATUS_OK;
}

void ir_users_free(const kiln_graph *g, ir_users *u) {
    size_t edges = 0;
    for (uint32_t i = 1; i < g->n_nodes; i++) edges += g->nodes[i].n_in;
    host_free(g->ctx, u->start, (g->n_nodes + 1) * sizeof *u->start);
    host_free(g->ctx, u->users, (edges ? edges : 1) * sizeof *u->users);
    u->start = u->users = NULL;
}

static int64_t numel(const ir_node *n) {
    int64_t k = 0;
    ir_shape_numel(&n->shape, &k);
    return k;
}

static bool is_source(const ir_node *n) {
    return n->op == IR_PARAMETER || n->op == IR_CONSTANT || n->op == IR_IOTA;
}

/* Ops the backend runs as library calls, reading and writing memory (they root a kernel
 * of their own, and what they read has a buffer). */
static bool library_op(ir_op op) {
    return op == IR_DOT || op == IR_SCATTER_ADD_ROWS || op == IR_CUMSUM || op == IR_ATTENTION ||
           op == IR_CONV || ir_ops[op].kind == IRK_COLLECTIVE || op == IR_ARGSORT ||
           ir_ops[op].kind == IRK_LINALG || ir_ops[op].kind == IRK_CONTROL || op == IR_RESULT ||
           op == IR_MEMORY_PUT;
}

/* Does consumer c read operand x more than once per element of x, or need it in memory? */
static bool expanding_use(const kiln_graph *g, const ir_node *c, uint32_t x) {
    const uint32_t *in = ir_in(c);
    switch (c->op) {
    case IR_BROADCAST: return numel(c) > numel(&g->nodes[x]);
    case IR_TAKE_ROWS: return in[0] == x;
    /* a start is read at every element: computed once into a scalar buffer */
    case IR_DYNAMIC_SLICE: return in[0] != x && numel(c) > 1;
    case IR_DYNAMIC_UPDATE_SLICE: return in[0] != x && in[1] != x && numel(c) > 1;
    default: return library_op(c->op);
    }
}

typedef struct decide_state {
    const kiln_graph *g;
    ir_users users;
    uint8_t *is_output;
    int32_t *cost; /* inlined expression cost, 0 for materialised nodes */
    uint8_t *has_reduce;
    uint32_t *kset;                /* the kernel its consumers run in (node id), or KSET_MANY */
    uint8_t *nk;                   /* how many kernels need its value: 0, 1 or 2 (= several) */
    uint8_t *row_ok;               /* may be a row value (a candidate not struck off yet) */
    double *reads, *moved;         /* count_moves' */
    uint32_t *mark, *stack, stamp; /* row_uses_keep_rows' walk */
} decide_state;

#define KSET_MANY UINT32_MAX

/* Does a library call (dot, scatter, cumsum) read x? They read memory, so x needs a buffer
 * even when it is a source (an iota, a scalar constant) that loop kernels recompute for
 * free. */
static bool library_use(const decide_state *s, uint32_t x) {
    for (uint32_t k = s->users.start[x]; k < s->users.start[x + 1]; k++)
        if (library_op(s->g->nodes[s->users.users[k]].op)) return true;
    return false;
}

/* A reshape (or a chain of them) of a value that always has a buffer is those same bytes
 * under another shape: a dot or an attention reads it where it lies (the run follows the view to
 * the buffer), so it needs no copy kernel of its own (XLA calls these bitcasts). */
static bool reshape_view(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    if (n->op != IR_RESHAPE) return false;
    while (n->op == IR_RESHAPE) n = &g->nodes[ir_in(n)[0]];
    return n->op == IR_PARAMETER || library_op(n->op) || (n->op == IR_CONSTANT && numel(n) != 1);
}

/* A chain of reshapes and transposes of a value that always has a buffer only renames its
 * elements: a take_rows reading it as its table loads from that buffer through the
 * rewritten index, so it needs no copy (kiln_take and kiln_take_along_axis gather from a
 * transposed or flattened operand this way). */
static bool gather_view(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    if (n->op != IR_RESHAPE && n->op != IR_TRANSPOSE) return false;
    while (n->op == IR_RESHAPE || n->op == IR_TRANSPOSE) n = &g->nodes[ir_in(n)[0]];
    return n->op == IR_PARAMETER || n->op == IR_DOT || n->op == IR_SCATTER_ADD_ROWS ||
           n->op == IR_CUMSUM || n->op == IR_ATTENTION || n->op == IR_ARGSORT || n->op == IR_CONV ||
           n->op == IR_MEMORY_PUT || ir_ops[n->op].kind == IRK_LINALG ||
           (n->op == IR_CONSTANT && numel(n) != 1);
}

/* A reshape (or a chain of them) of a node decided before it to have a buffer: reading it
 * under a broadcast loads that buffer at the rewritten index, so the reshape needs no
 * buffer and no copy kernel of its own (a softmax's max that is also an output). */
static bool buffer_view(const kiln_graph *g, const fusion_plan *p, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    if (n->op != IR_RESHAPE) return false;
    while (n->op == IR_RESHAPE) {
        id = ir_in(n)[0];
        n = &g->nodes[id];
    }
    return p->materialised[id];
}

/* Whether broadcast c takes [A..., 1] or [A...] to [A..., n], the leading axes A in order,
 * over at least FUSION_ROW_MIN rows (prod A): its operand is one value per row. */
static bool row_broadcast(const kiln_graph *g, const ir_node *c) {
    int r = c->shape.rank;
    if (c->op != IR_BROADCAST || r < 2) return false;
    const ir_shape *x = &g->nodes[ir_in(c)[0]].shape;
    if (x->rank != r && x->rank != r - 1) return false;
    if (x->rank == r && (x->dims[r - 1] != 1 || c->a.bcast_dims[r - 1] != r - 1)) return false;
    int64_t rows = 1;
    for (int a = 0; a < r - 1; a++) {
        if (c->a.bcast_dims[a] != a || x->dims[a] != c->shape.dims[a]) return false;
        rows *= c->shape.dims[a];
    }
    return rows >= FUSION_ROW_MIN;
}

/* A shape against the rows A of a row broadcast to rank r: ROWS_FULL, [A..., m] for any m;
 * ROWS_ONE, [A...] (also [A..., 1], a full shape of one element per row); 0, neither. */
enum { ROWS_FULL = 1, ROWS_ONE = 2 };
static int rows_class(const ir_shape *s, const ir_shape *lead) {
    int r = lead->rank;
    if (s->rank != r && s->rank != r - 1) return 0;
    for (int a = 0; a < r - 1; a++)
        if (s->dims[a] != lead->dims[a]) return 0;
    if (s->rank == r - 1) return ROWS_ONE;
    return ROWS_FULL | (s->dims[r - 1] == 1 ? ROWS_ONE : 0);
}

/* Whether consumer w of u (a value with the rows of lead) reads it keeping the rows: w
 * computes its element of row i from u's row i only, and itself has those rows. */
static bool keeps_rows(const ir_node *u, const ir_node *w, const ir_shape *lead) {
    int cu = rows_class(&u->shape, lead), cw = rows_class(&w->shape, lead);
    if (!cu || !cw) return false;
    if (ir_ops[w->op].flags & IRF_ELEMENTWISE) return ir_shape_eq(&u->shape, &w->shape);
    int r = lead->rank;
    switch (w->op) {
    case IR_BROADCAST: /* along the last axis only: the leading axes in order */
        if (!(cu & ROWS_ONE) || !(cw & ROWS_FULL)) return false;
        for (int a = 0; a < u->shape.rank; a++)
            if (w->a.bcast_dims[a] != a) return false;
        return true;
    case IR_RESHAPE: return (cu & ROWS_ONE) && (cw & ROWS_ONE);
    default: /* a reduction over the last axis alone */
        return ir_ops[w->op].kind == IRK_REDUCE && u->shape.rank == r &&
               w->a.reduce_axes == 1u << (r - 1) && cw == ROWS_ONE;
    }
}

/* Whether every use of candidate x, up to the roots of the kernels it is computed in,
 * keeps the rows of its row broadcast: then its index there never depends on the last
 * axis of a kernel that iterates over it, and lower.c computes it once per row. */
static bool row_uses_keep_rows(decide_state *s, const fusion_plan *p, uint32_t x) {
    const kiln_graph *g = s->g;
    const ir_shape *lead = NULL;
    for (uint32_t k = s->users.start[x]; k < s->users.start[x + 1] && !lead; k++)
        if (row_broadcast(g, &g->nodes[s->users.users[k]]))
            lead = &g->nodes[s->users.users[k]].shape;
    if (!lead) return false;
    uint32_t sp = 0, stamp = ++s->stamp;
    s->stack[sp++] = x;
    s->mark[x] = stamp;
    while (sp) {
        uint32_t u = s->stack[--sp];
        for (uint32_t k = s->users.start[u]; k < s->users.start[u + 1]; k++) {
            uint32_t w = s->users.users[k];
            if (s->mark[w] == stamp) continue;
            s->mark[w] = stamp;
            if (!keeps_rows(&g->nodes[u], &g->nodes[w], lead)) return false;
            if (!p->materialised[w]) s->stack[sp++] = w; /* else a root: its kernel ends */
        }
    }
    return true;
}

/* A broadcast (or a chain of them) of a scalar constant whose bytes are all zero: +0.0, or
 * an integer 0. A scatter into it (the gradient of a gather, kiln_grad of take_rows) needs
 * no buffer of zeros copied into its result: the backend fills the result with zeros
 * itself (run.c passes no operand), which saves a table-sized temporary and a copy. */
static bool zero_fill(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    if (n->op != IR_BROADCAST) return false;
    while (n->op == IR_BROADCAST) n = &g->nodes[ir_in(n)[0]];
    if (n->op != IR_CONSTANT || numel(n) != 1) return false;
    const unsigned char *b = n->data;
    for (size_t i = 0; i < kiln_dtype_itemsize(n->dtype); i++)
        if (b[i]) return false;
    return true;
}

/* Whether consumer c, a scatter, takes x only as the zeros it adds into. */
static bool scatter_into_zeros(const kiln_graph *g, const ir_node *c, uint32_t x) {
    const uint32_t *in = ir_in(c);
    return c->op == IR_SCATTER_ADD_ROWS && in[0] == x && in[1] != x && in[2] != x &&
           zero_fill(g, x);
}

/* A conversion of a parameter or constant (mixed precision's bf16 bias): a broadcast may
 * convert it again at each element it repeats, reading the source instead of a buffer, at
 * the cost of one conversion; a kernel of its own, launched to convert a few hundred
 * values, costs more than that on every device. */
static bool converted_source(const kiln_graph *g, uint32_t id) {
    const ir_node *n = &g->nodes[id];
    return n->op == IR_CONVERT && is_source(&g->nodes[ir_in(n)[0]]);
}

static bool must_materialise(decide_state *s, const fusion_plan *p, uint32_t id) {
    const ir_node *n = &s->g->nodes[id];
    if (n->op == IR_PARAMETER || s->is_output[id] ||
        (ir_side_hints(s->g, id) & IR_HINT_MATERIALISE))
        return true;
    if (n->op == IR_CONSTANT) return numel(n) != 1 || library_use(s, id);
    if (n->op == IR_IOTA && library_use(s, id)) return true;
    if (library_op(n->op)) return true;
    if (!is_source(n))
        for (uint32_t k = s->users.start[id]; k < s->users.start[id + 1]; k++) {
            const ir_node *c = &s->g->nodes[s->users.users[k]];
            if (!expanding_use(s->g, c, id)) continue;
            if ((c->op == IR_DOT || c->op == IR_ATTENTION || c->op == IR_CONV) &&
                reshape_view(s->g, id))
                continue;
            if (c->op == IR_TAKE_ROWS && gather_view(s->g, id)) continue;
            if (scatter_into_zeros(s->g, c, id)) continue;
            if (c->op == IR_BROADCAST &&
                (buffer_view(s->g, p, id) || (s->row_ok[id] && row_broadcast(s->g, c)) ||
                 converted_source(s->g, id)))
                continue;
            return true;
        }
    if (ir_ops[n->op].kind == IRK_REDUCE && s->nk[id] > 1) return true;
    return false;
}

/* The cost of node id's inlined expression and whether it holds a reduction, from what
 * its operands pass on. */
static int32_t own_cost(const decide_state *s, uint32_t id, bool *red) {
    const ir_node *n = &s->g->nodes[id];
    int32_t cost = ir_ops[n->op].cost;
    *red = ir_ops[n->op].kind == IRK_REDUCE;
    for (uint32_t k = 0; k < n->n_in; k++) {
        cost += s->cost[ir_in(n)[k]];
        *red |= s->has_reduce[ir_in(n)[k]];
    }
    return cost;
}

/* What node id passes on to its consumers' cost: nothing when it has a buffer, nor when it
 * is a row value, computed once per row rather than per element of its consumers (its
 * own reduction still counts for itself: needed in several kernels, it gets a buffer). */
static void pass_on(decide_state *s, const fusion_plan *p, uint32_t id, int32_t cost, bool red) {
    bool free = p->materialised[id] || p->inline_const[id] || s->row_ok[id];
    s->cost[id] = free ? 0 : cost;
    s->has_reduce[id] = !free && red;
}

/* Does consumer c move its operand's elements (a slice, a pad, a transpose...), so that it
 * reads them at other positions than it writes? A reshape keeps every element where it
 * was, and a broadcast's own rule (expanding_use, row values) decides for it. */
static bool moves_elements(const ir_node *c) {
    return ir_ops[c->op].kind == IRK_SHAPE && c->op != IR_RESHAPE && c->op != IR_BROADCAST;
}

/* For the current decisions, consumers first: reads[id], how many times per element of
 * node id the kernels it is inlined into read it, and moved[id], how many of those reads
 * pass a move on their way. Reads through a move are at positions of their own: an
 * inlined expression is computed once per such read (an im2col's nine slices of a padded
 * max pool compute the pool nearly nine times per element, and a pooling gradient's
 * pads of the selects of a col2im compute the col2im four times), where elementwise reads
 * are of the element being written, which the C compiler computes once. A slice reads
 * its share of the operand's elements (a pool's non-overlapping strided slices read each
 * once between them); a materialised consumer reads each element once, in a kernel of its
 * own (the several-kernel rule covers that). */
static void count_moves(decide_state *s, const fusion_plan *p) {
    for (uint32_t id = s->g->n_nodes; id-- > 1;) {
        double reads = 0, moved = 0, nx = (double)numel(&s->g->nodes[id]);
        for (uint32_t k = s->users.start[id]; k < s->users.start[id + 1]; k++) {
            uint32_t c = s->users.users[k];
            const ir_node *cn = &s->g->nodes[c];
            bool own = p->materialised[c];
            if (!own && s->kset[c] == 0) continue; /* a dead consumer */
            double share = cn->op == IR_SLICE && nx > 0 ? (double)numel(cn) / nx : 1;
            double rc = own ? 1 : s->reads[c] * share;
            reads += rc;
            moved += moves_elements(cn) ? (own ? 0 : rc) : own ? 0 : s->moved[c];
        }
        s->reads[id] = reads < 1e9 ? reads : 1e9;
        s->moved[id] = moved < 1e9 ? moved : 1e9;
    }
}

/* Would inlining node id (its expression's cost and reduction flag) recompute it, through
 * moves within its kernel, more than DUP_COST again (count_moves)? */
static bool too_costly_moved(const decide_state *s, uint32_t id, int32_t cost, bool red) {
    double again = s->moved[id] - 1;
    return again > 0.5 && (red || cost * again > DUP_COST);
}

static void decide(decide_state *s, fusion_plan *p, const fusion_options *o) {
    const kiln_graph *g = s->g;
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        bool scalar_const =
            n->op == IR_CONSTANT && numel(n) == 1 && !s->is_output[id] && !library_use(s, id);
        if (scalar_const) {
            p->inline_const[id] = 1;
            continue;
        }
        bool mat = (o && o->disable && n->op != IR_CONSTANT) ? true : must_materialise(s, p, id);
        bool red;
        int32_t cost = own_cost(s, id, &red);
        if (!mat && s->nk[id] > 1 && (red || cost > DUP_COST)) mat = true;
        p->materialised[id] = mat;
        pass_on(s, p, id, cost, red);
    }
}

/* Which kernels need each node's value, given the current decisions: a materialised
 * consumer is its own kernel; an inlined one runs in the kernels that need it. Walks the
 * nodes consumers-first. Returns true if any count changed. */
static bool count_kernels(decide_state *s, const fusion_plan *p) {
    bool changed = false;
    for (uint32_t id = s->g->n_nodes; id-- > 1;) {
        uint32_t set = 0;
        for (uint32_t k = s->users.start[id]; k < s->users.start[id + 1]; k++) {
            uint32_t c = s->users.users[k], in = p->materialised[c] ? c : s->kset[c];
            if (in == 0) continue; /* a dead consumer */
            set = set == 0 || set == in ? in : KSET_MANY;
        }
        uint8_t nk = set == 0 ? 0 : set == KSET_MANY ? 2 : 1;
        changed |= nk != s->nk[id];
        s->kset[id] = set;
        s->nk[id] = nk;
    }
    return changed;
}

/* Recomputes the inlined cost and reduction flag of every node from the decisions. */
static void recost(decide_state *s, const fusion_plan *p) {
    for (uint32_t id = 1; id < s->g->n_nodes; id++) {
        bool red;
        int32_t cost = own_cost(s, id, &red);
        pass_on(s, p, id, cost, red);
    }
}

/* The first node that inlining would recompute too much (moved: within one kernel,
 * through moves; else in several kernels); 0 if none. Several kernels: producers first,
 * as always. Within one kernel: consumers first, so
 * the outermost costly expression gets the buffer and what it reads is then read once
 * per element. */
static uint32_t first_costly(const decide_state *s, const fusion_plan *p, bool moved) {
    uint32_t n = s->g->n_nodes;
    for (uint32_t k = 1; k < n; k++) {
        uint32_t id = moved ? n - k : k;
        if (p->materialised[id] || p->inline_const[id]) continue;
        bool red;
        int32_t cost = own_cost(s, id, &red);
        if (moved ? too_costly_moved(s, id, cost, red) : s->nk[id] >= 2 && (cost > DUP_COST || red))
            return id;
    }
    return 0;
}

/* Decisions depend on how many kernels need a node, which depends on the decisions:
 * start from consumer counts, re-decide with kernel counts until they settle (a few
 * rounds), then make sure no reduction or costly expression ended up in two kernels, nor
 * is computed along several moved chains of one (count_moves). One at a time: each
 * changes the counts of everything above it. */
static void decide_all(decide_state *s, fusion_plan *p, const fusion_options *o) {
    for (uint32_t id = 1; id < s->g->n_nodes; id++) {
        uint32_t nu = s->users.start[id + 1] - s->users.start[id];
        s->nk[id] = nu > 1 ? 2 : (uint8_t)nu;
    }
    decide(s, p, o);
    for (int round = 0; round < 4 && count_kernels(s, p); round++) decide(s, p, o);
    for (uint32_t id = 1; id;) {
        count_kernels(s, p);
        recost(s, p);
        id = first_costly(s, p, false);
        if (!id) {
            count_moves(s, p);
            id = first_costly(s, p, true);
        }
        if (id) p->materialised[id] = 1;
    }
}

/* decide_all with row values (fusion.h): candidates are the operands of row broadcasts;
 * one whose uses turn out not to keep the rows is struck off and the decisions are made
 * again (candidates only go, so this ends; a program has few). */
static void decide_rows(decide_state *s, fusion_plan *p, const fusion_options *o) {
    const kiln_graph *g = s->g;
    for (uint32_t id = 1; id < g->n_nodes && !(o && o->disable); id++)
        if (row_broadcast(g, &g->nodes[id])) s->row_ok[ir_in(&g->nodes[id])[0]] = 1;
    for (bool again = true; again;) {
        decide_all(s, p, o);
        again = false;
        for (uint32_t id = 1; id < g->n_nodes; id++)
            if (s->row_ok[id] && !p->materialised[id] && !row_uses_keep_rows(s, p, id)) {
                s->row_ok[id] = 0;
                again = true;
            }
    }
    for (uint32_t id = 1; id < g->n_nodes; id++)
        p->row[id] = s->row_ok[id] && !p->materialised[id] && !p->inline_const[id];
}

/* Collects the materialised nodes the inlined expression of `root` reads. */
static kiln_status collect_inputs(const kiln_graph *g, fusion_plan *p, uint32_t root,
                                  uint32_t *mark, uint32_t stamp, uint32_t *stack, fkernel *k) {
    uint32_t sp = 0, n_in = 0, members = 0;
    uint32_t *inputs = NULL;
    stack[sp++] = root;
    mark[root] = stamp;
    /* first pass counts, second fills: avoids growing arrays */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            inputs = host_alloc(p->ctx, (n_in ? n_in : 1) * sizeof *inputs);
            if (!inputs) return ctx_oom(p->ctx, "fusion: kernel inputs", n_in * sizeof *inputs);
            stack[sp++] = root;
            mark[root] = stamp + 1;
            n_in = members = 0;
        }
        uint32_t st = stamp + (uint32_t)pass;
        while (sp) {
            uint32_t id = stack[--sp];
            const ir_node *n = &g->nodes[id];
            members++;
            const uint32_t *in = ir_in(n);
            for (uint32_t i = 0; i < n->n_in; i++) {
                uint32_t x = in[i];
                if (mark[x] == st) continue;
                mark[x] = st;
                if (p->materialised[x]) {
                    if (pass) inputs[n_in] = x;
                    n_in++;
                } else if (!p->inline_const[x]) {
                    stack[sp++] = x;
                }
            }
        }
    }
    k->inputs = inputs;
    k->n_inputs = n_in;
    k->n_members = members;
    return KILN_STATUS_OK;
}

/* A kernel's roots: node id, and for a control node each of its results after it, in
 * result order (DCE keeps every result of a control node it keeps). */
/* The LSE node after attention node `id` (its forward pass, with values to attend to) over
 * the same q and k with the same attributes, that no kernel has taken yet: the gradient's
 * log-sum-exp, which the forward kernel then writes beside its output, as FlashAttention-2
 * saves it; 0 when there is none. */
static uint32_t lse_partner(const kiln_graph *g, const fusion_plan *p, uint32_t id,
                            const uint8_t *taken) {
    const ir_node *n = &g->nodes[id];
    if (n->op != IR_ATTENTION || n->a.attn.kind != IR_ATTN_FORWARD || !numel(n)) return 0;
    for (uint32_t j = id + 1; j < g->n_nodes; j++) {
        const ir_node *m = &g->nodes[j];
        if (m->op == IR_ATTENTION && m->a.attn.kind == IR_ATTN_LSE && p->materialised[j] &&
            !taken[j] && ir_in(m)[0] == ir_in(n)[0] && ir_in(m)[1] == ir_in(n)[1] &&
            m->a.attn.causal == n->a.attn.causal &&
            !memcmp(&m->a.attn.scale, &n->a.attn.scale, sizeof(double)) &&
            !memcmp(&m->a.attn.fill, &n->a.attn.fill, sizeof(double)))
            return j;
    }
    return 0;
}

static kiln_status kernel_roots(const kiln_graph *g, uint32_t id, uint32_t lse, fkernel *k) {
    kiln_context *ctx = g->ctx;
    bool control = ir_ops[g->nodes[id].op].kind == IRK_CONTROL;
    uint32_t n = control ? ir_control_n_results(&g->nodes[id]) : lse ? 2 : 1;
    if (!(k->roots = host_alloc(ctx, n * sizeof *k->roots)))
        return ctx_oom(ctx, "fusion: kernel roots", n * sizeof *k->roots);
    k->roots[0] = id;
    k->n_roots = n;
    if (control) ir_control_results(g, id, k->roots);
    if (lse) k->roots[1] = lse;
    for (uint32_t r = 0; r < n; r++)
        if (!k->roots[r])
            return ctx_error(ctx, KILN_STATUS_INTERNAL, "fusion: result %u of %s %%%u has no node",
                             r, ir_ops[g->nodes[id].op].name, id);
    return KILN_STATUS_OK;
}

static kiln_status form_kernels(const kiln_graph *g, fusion_plan *p) {
    kiln_context *ctx = p->ctx;
    uint32_t count = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++)
        if (p->materialised[id] && g->nodes[id].op != IR_PARAMETER &&
            g->nodes[id].op != IR_CONSTANT)
            count++;
    p->cap_kernels = count ? count : 1;
    p->kernels = host_calloc(ctx, p->cap_kernels, sizeof *p->kernels);
    uint32_t *mark = host_calloc(ctx, g->n_nodes, sizeof *mark);
    uint32_t *stack = host_calloc(ctx, g->n_nodes, sizeof *stack);
    uint8_t *taken = host_calloc(ctx, g->n_nodes, 1); /* an LSE node a forward kernel wrote */
    kiln_status s = KILN_STATUS_OK;
    if (!p->kernels || !mark || !stack || !taken) {
        s = ctx_oom(ctx, "fusion: kernels", g->n_nodes * sizeof *mark);
        goto done;
    }
    for (uint32_t id = 1, stamp = 2; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (!p->materialised[id] || n->op == IR_PARAMETER || n->op == IR_CONSTANT ||
            n->op == IR_RESULT || taken[id]) /* a result is a root of its control node's kernel */
            continue;
        fkernel *k = &p->kernels[p->n_kernels];
        k->kind = n->op == IR_DOT                        ? FK_DOT
                  : n->op == IR_SCATTER_ADD_ROWS         ? FK_SCATTER
                  : n->op == IR_CUMSUM                   ? FK_SCAN
                  : n->op == IR_ATTENTION                ? FK_ATTENTION
                  : ir_ops[n->op].kind == IRK_COLLECTIVE ? FK_COLLECTIVE
                  : n->op == IR_ARGSORT                  ? FK_SORT
                  : ir_ops[n->op].kind == IRK_CONTROL    ? FK_CONTROL
                  : n->op == IR_MEMORY_PUT               ? FK_TRANSFER
                  : n->op == IR_CONV                     ? FK_CONV
                  : ir_ops[n->op].kind == IRK_LINALG     ? FK_LINALG
                                                         : FK_LOOP;
        uint32_t lse = lse_partner(g, p, id, taken);
        if (lse) taken[lse] = 1;
        if ((s = kernel_roots(g, id, lse, k))) goto done;
        p->n_kernels++;
        if ((s = collect_inputs(g, p, id, mark, stamp, stack, k))) goto done;
        stamp += 2;
    }
done:
    host_free(ctx, mark, g->n_nodes * sizeof *mark);
    host_free(ctx, stack, g->n_nodes * sizeof *stack);
    host_free(ctx, taken, g->n_nodes);
    return s;
}

static bool shares_large_input(const kiln_graph *g, const fkernel *a, const fkernel *b) {
    for (uint32_t i = 0; i < a->n_inputs; i++)
        for (uint32_t j = 0; j < b->n_inputs; j++) {
            size_t bytes = 0;
            if (a->inputs[i] != b->inputs[j]) continue;
            const ir_node *x = &g->nodes[a->inputs[i]];
            if (ir_shape_nbytes(&x->shape, x->dtype, &bytes) && bytes >= MERGE_MIN_BYTES)
                return true;
        }
    return false;
}

/* The bytes kernel k writes. */
static size_t root_bytes(const kiln_graph *g, const fkernel *k) {
    size_t all = 0;
    for (uint32_t r = 0; r < k->n_roots; r++) {
        size_t bytes = 0;
        const ir_node *x = &g->nodes[k->roots[r]];
        all += ir_shape_nbytes(&x->shape, x->dtype, &bytes) ? bytes : MERGE_MIN_BYTES;
    }
    return all;
}

/* Whether every value kernel k writes is a graph output (is_out: per node). */
static bool writes_outputs(const uint8_t *is_out, const fkernel *k) {
    for (uint32_t r = 0; r < k->n_roots; r++)
        if (!is_out[k->roots[r]]) return false;
    return true;
}

/* Siblings worth one kernel: they share a large input, read once for both; or they share
 * any input, are both small and write only graph outputs (an optimiser's moments of a
 * bias, each a kernel over a few hundred values), where a launch costs more than the work
 * and the later one's results, computed early, hold few bytes (bench/gpt's bf16 step plans
 * 8 KiB more of its 66 MiB). */
static bool worth_merging(const kiln_graph *g, const uint8_t *is_out, const fkernel *a,
                          const fkernel *b) {
    if (shares_large_input(g, a, b)) return true;
    if (root_bytes(g, a) + root_bytes(g, b) > MERGE_MIN_BYTES || !writes_outputs(is_out, a) ||
        !writes_outputs(is_out, b))
        return false;
    for (uint32_t i = 0; i < a->n_inputs; i++)
        for (uint32_t j = 0; j < b->n_inputs; j++)
            if (a->inputs[i] == b->inputs[j]) return true;
    return false;
}

static bool is_root_of(const fkernel *k, uint32_t id) {
    for (uint32_t r = 0; r < k->n_roots; r++)
        if (k->roots[r] == id) return true;
    return false;
}

/* Whether a's inputs already hold b's input j, or a computes it (a root of a that b reads:
 * the merged kernel computes it in-register, so it is no input of it). */
static bool covered(const fkernel *a, const fkernel *b, uint32_t j) {
    if (is_root_of(a, b->inputs[j])) return true;
    for (uint32_t i = 0; i < a->n_inputs; i++)
        if (a->inputs[i] == b->inputs[j]) return true;
    return false;
}

/* Appends b's roots and inputs to a (inputs without repeats, and without a's roots). */
static kiln_status absorb(kiln_context *ctx, fkernel *a, const fkernel *b) {
    uint32_t extra = 0;
    for (uint32_t j = 0; j < b->n_inputs; j++) extra += !covered(a, b, j);
    uint32_t n_in = a->n_inputs + extra, n_roots = a->n_roots + b->n_roots;
    uint32_t *in = host_alloc(ctx, (n_in ? n_in : 1) * sizeof *in);
    uint32_t *roots = host_alloc(ctx, n_roots * sizeof *roots);
    if (!in || !roots) {
        host_free(ctx, in, (n_in ? n_in : 1) * sizeof *in);
        host_free(ctx, roots, n_roots * sizeof *roots);
        return ctx_oom(ctx, "fusion: multi-output kernel", n_roots * sizeof *roots);
    }
    memcpy(in, a->inputs, a->n_inputs * sizeof *in);
    for (uint32_t j = 0, k = a->n_inputs; j < b->n_inputs; j++)
        if (!covered(a, b, j)) in[k++] = b->inputs[j];
    memcpy(roots, a->roots, a->n_roots * sizeof *roots);
    memcpy(roots + a->n_roots, b->roots, b->n_roots * sizeof *roots);
    host_free(ctx, a->inputs, (a->n_inputs ? a->n_inputs : 1) * sizeof *in);
    host_free(ctx, a->roots, a->n_roots * sizeof *roots);
    a->inputs = in, a->n_inputs = n_in;
    a->roots = roots, a->n_roots = n_roots;
    a->n_members += b->n_members;
    return KILN_STATUS_OK;
}

static bool has_reduction_root(const kiln_graph *g, const fkernel *k) {
    for (uint32_t r = 0; r < k->n_roots; r++)
        if (ir_ops[g->nodes[k->roots[r]].op].kind == IRK_REDUCE) return true;
    return false;
}

/* Reads of the producer kernel's roots inside consumer kernel b, found by walking b's
 * inlined expression from its roots. `ident`: the path so far kept the output's index (only
 * elementwise ops, whose operands have the result's shape). A root of `a` reached on an
 * identity path is read at the element being computed; reached any other way, it is read
 * at another element, which a merged kernel could not have computed yet. */
typedef struct pc_walk {
    const kiln_graph *g;
    const fusion_plan *p;
    const fkernel *a, *b;
    uint32_t *mark; /* per node: stamp * 2 + ident + 1 when visited */
    uint32_t stamp;
    bool reads, bad;
    uint32_t columns; /* reduction_form: the column-form reductions it met */
} pc_walk;

static void pc_visit(pc_walk *w, uint32_t id, bool ident) {
    uint32_t m = w->stamp * 2 + (ident ? 1 : 0) + 1;
    if (w->bad || w->mark[id] == m || w->p->inline_const[id]) return;
    w->mark[id] = m;
    if (is_root_of(w->a, id)) {
        w->reads = true;
        w->bad |= !ident;
        return;
    }
    if (w->p->materialised[id] && !is_root_of(w->b, id)) return; /* another buffer's load */
    const ir_node *n = &w->g->nodes[id];
    bool keep = ident && (ir_ops[n->op].flags & IRF_ELEMENTWISE);
    const uint32_t *in = ir_in(n);
    for (uint32_t k = 0; k < n->n_in && !w->bad; k++) pc_visit(w, in[k], keep);
}

/* Producer-consumer multi-output fusion: may consumer b join producer a, computing what it
 * reads of a's results in-register? Both elementwise-shaped loops over the same index space
 * (no reduction roots: a reduction kernel keeps its own loop order), b reading a's roots
 * only at the element it writes. */
static bool consumes_elementwise(pc_walk *w, const fkernel *a, const fkernel *b) {
    if (has_reduction_root(w->g, a) || has_reduction_root(w->g, b)) return false;
    w->a = a, w->b = b, w->reads = false, w->bad = false, w->stamp++;
    for (uint32_t r = 0; r < b->n_roots && !w->bad; r++) {
        const ir_node *n = &w->g->nodes[b->roots[r]];
        bool keep = (ir_ops[n->op].flags & IRF_ELEMENTWISE) != 0;
        const uint32_t *in = ir_in(n);
        for (uint32_t k = 0; k < n->n_in && !w->bad; k++) pc_visit(w, in[k], keep);
    }
    return w->reads && !w->bad;
}

/* How the reductions in kernel k's expression (reached from its roots through what it
 * computes in-register) read their operands: FORM_ROWS when one reduces its operand's last
 * axis, each element walking a row; FORM_COLUMNS when one keeps it, which lowers to the
 * column form (lower.c, column_reductions): rows of accumulators, the operand read row by
 * row. */
enum { FORM_ROWS = 1, FORM_COLUMNS = 2 };

static unsigned form_visit(pc_walk *w, const fkernel *k, uint32_t id) {
    if (w->mark[id] == w->stamp * 2 + 1 || w->p->inline_const[id]) return 0;
    w->mark[id] = w->stamp * 2 + 1;
    if (w->p->materialised[id] && !is_root_of(k, id)) return 0; /* another buffer's load */
    const ir_node *n = &w->g->nodes[id];
    unsigned form = 0;
    if (ir_ops[n->op].kind == IRK_REDUCE) {
        const ir_node *x = &w->g->nodes[ir_in(n)[0]];
        form = x->shape.rank && n->a.reduce_axes >> (x->shape.rank - 1) & 1u ? FORM_ROWS
                                                                             : FORM_COLUMNS;
        w->columns += form == FORM_COLUMNS;
    }
    for (uint32_t i = 0; i < n->n_in; i++) form |= form_visit(w, k, ir_in(n)[i]);
    return form;
}

static unsigned reduction_form(pc_walk *w, const fkernel *k) {
    w->stamp++;
    w->columns = 0;
    unsigned form = 0;
    for (uint32_t r = 0; r < k->n_roots; r++) form |= form_visit(w, k, k->roots[r]);
    return form;
}

/* Siblings whose reductions read the shared buffer in different orders do not merge: the
 * sums of a matrix's rows and of its columns, both f32[n], in one kernel walked the
 * columns element by element, a stride of a whole row per value, an order of magnitude
 * slower than the two kernels apart, each reading in its own order (bench/RESULTS.md, "Row
 * and column reductions of one matrix: no longer one kernel"). Nor do siblings whose column
 * reductions together pass the column form's limit (fusion.h): fourteen layer-norm
 * parameter gradients in one kernel fell back to walking columns alike. */
static bool reads_apart(pc_walk *w, const fkernel *a, const fkernel *b) {
    unsigned fa = reduction_form(w, a);
    uint32_t ca = w->columns;
    unsigned fb = fa ? reduction_form(w, b) : 0;
    if (fa && fb && fa != fb) return true;
    return (fa & FORM_COLUMNS) && (fb & FORM_COLUMNS) &&
           ca + w->columns > FUSION_MAX_COLUMN_REDUCTIONS;
}

/* Whether kernel k writes a recomputation (IR_HINT_RECOMPUTED), which the remat pass placed
 * right before its first reader: it joins no earlier sibling, which would compute it early
 * and keep it long (a GPT step's layer norms recomputed together at the start of the
 * backward pass, 1 MiB on a 21 MiB peak). A later kernel may still join it: that is any
 * sibling merge's trade, and the same step plans lower with it (19.9 against 21.4 MiB). */
static bool recomputes(const kiln_graph *g, const fkernel *k) {
    for (uint32_t r = 0; r < k->n_roots; r++)
        if (ir_side_hints(g, k->roots[r]) & IR_HINT_RECOMPUTED) return true;
    return false;
}

/* A recomputation must stay in the backward pass: a kernel writing one never joins a
 * kernel of the forward pass as its consumer, which would compute it while the forward
 * values it replaces are still live and undo the saving. */
static bool keeps_remat_apart(const kiln_graph *g, const fkernel *ka, const fkernel *kb) {
    bool late = false;
    for (uint32_t r = 0; r < ka->n_roots; r++) late |= g->nodes[ka->roots[r]].backward;
    return !late && recomputes(g, kb);
}

/* Multi-output fusion, two kinds, both for loop kernels over the same index space:
 *  - producer-consumer: a kernel that reads the results of the latest kernel it depends on
 *    only at the element it writes (an optimiser's p' from m' and v') joins that kernel,
 *    which then computes those results once, in-register, for both — they are not read
 *    back from memory;
 *  - siblings: a kernel reading the same large buffer as an earlier one joins it, so the
 *    buffer is read once for both; so does a small kernel of graph outputs reading any
 *    buffer an earlier such one reads (worth_merging: one launch for both).
 * Legal when everything the later kernel reads is ready at the earlier kernel's place (its
 * consumers all come later anyway). */
static kiln_status merge_siblings(const kiln_graph *g, fusion_plan *p) {
    kiln_context *ctx = p->ctx;
    int32_t *pos = host_alloc(ctx, g->n_nodes * sizeof *pos);
    uint8_t *gone = host_calloc(ctx, p->cap_kernels, 1);
    uint8_t *is_out = host_calloc(ctx, g->n_nodes, 1);
    pc_walk pw = {.g = g, .p = p, .mark = host_calloc(ctx, g->n_nodes, sizeof *pw.mark)};
    kiln_status s = KILN_STATUS_OK;
    if (!pos || !gone || !is_out || !pw.mark) {
        s = ctx_oom(ctx, "fusion: multi-output", g->n_nodes * sizeof *pos);
        goto done;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) is_out[g->outputs[i]] = 1;
    for (uint32_t i = 0; i < g->n_nodes; i++) pos[i] = -1;
    for (uint32_t k = 0; k < p->n_kernels; k++)
        for (uint32_t r = 0; r < p->kernels[k].n_roots; r++)
            pos[p->kernels[k].roots[r]] = (int32_t)k;
    for (uint32_t b = 1; b < p->n_kernels && !s; b++) {
        fkernel *kb = &p->kernels[b];
        if (kb->kind != FK_LOOP) continue;
        int32_t ready = -1;
        for (uint32_t i = 0; i < kb->n_inputs; i++)
            if (pos[kb->inputs[i]] > ready) ready = pos[kb->inputs[i]];
        const ir_shape *sb = &g->nodes[kb->roots[0]].shape;
        /* the latest kernel b reads from, if b may join it (producer-consumer) */
        if (ready >= 0 && !gone[ready]) {
            fkernel *ka = &p->kernels[ready];
            int32_t before = -1; /* everything else b reads must be ready before ka */
            for (uint32_t i = 0; i < kb->n_inputs; i++)
                if (pos[kb->inputs[i]] != ready && pos[kb->inputs[i]] > before)
                    before = pos[kb->inputs[i]];
            if (ka->kind == FK_LOOP && before < ready && !keeps_remat_apart(g, ka, kb) &&
                ir_shape_eq(&g->nodes[ka->roots[0]].shape, sb) &&
                consumes_elementwise(&pw, ka, kb)) {
                if ((s = absorb(ctx, ka, kb))) break;
                for (uint32_t r = 0; r < kb->n_roots; r++) pos[kb->roots[r]] = ready;
                gone[b] = 1;
                continue;
            }
        }
        for (uint32_t a = (uint32_t)(ready + 1); a < b && !recomputes(g, kb); a++) {
            fkernel *ka = &p->kernels[a];
            if (gone[a] || ka->kind != FK_LOOP || !ir_shape_eq(&g->nodes[ka->roots[0]].shape, sb) ||
                !worth_merging(g, is_out, ka, kb) || reads_apart(&pw, ka, kb))
                continue;
            if ((s = absorb(ctx, ka, kb))) break;
            for (uint32_t r = 0; r < kb->n_roots; r++) pos[kb->roots[r]] = (int32_t)a;
            gone[b] = 1;
            break;
        }
    }
    uint32_t w = 0; /* compact: drop the absorbed kernels */
    for (uint32_t k = 0; k < p->n_kernels; k++) {
        if (!gone[k]) {
            p->kernels[w++] = p->kernels[k];
            continue;
        }
        host_free(ctx, p->kernels[k].roots, p->kernels[k].n_roots * sizeof(uint32_t));
        host_free(ctx, p->kernels[k].inputs,
                  (p->kernels[k].n_inputs ? p->kernels[k].n_inputs : 1) * sizeof(uint32_t));
    }
    p->n_kernels = w;
done:
    host_free(ctx, pos, g->n_nodes * sizeof *pos);
    host_free(ctx, gone, p->cap_kernels);
    host_free(ctx, is_out, g->n_nodes);
    host_free(ctx, pw.mark, g->n_nodes * sizeof *pw.mark);
    return s;
}

const char *fusion_kind_name(fk_kind k) {
    static const char *const names[FK_NUM_KINDS] = {"loop",      "dot",        "scatter", "scan",
                                                    "attention", "collective", "sort",    "control",
                                                    "transfer",  "conv",       "linalg"};
    return (unsigned)k < FK_NUM_KINDS ? names[k] : "?";
}

/* After multi-output fusion: a root of a loop kernel that no other kernel reads and that is
 * no graph output needs no buffer. The kernels merged into its own read it at the index
 * they compute (consumes_elementwise), where lowering memoises it per element (lower.c),
 * so it is computed once there and kept in a register. Without this an unrolled chain
 * (Threefry's rounds) wrote every intermediate the chain reads twice to memory, and the
 * plan held them all at once. A kernel keeps at least one root. */
static kiln_status localise_roots(const kiln_graph *g, fusion_plan *p) {
    kiln_context *ctx = p->ctx;
    uint8_t *keep = host_calloc(ctx, g->n_nodes, 1);
    if (!keep) return ctx_oom(ctx, "fusion: kernel-local values", g->n_nodes);
    for (uint32_t i = 0; i < g->n_outputs; i++) keep[g->outputs[i]] = 1;
    for (uint32_t k = 0; k < p->n_kernels; k++)
        for (uint32_t i = 0; i < p->kernels[k].n_inputs; i++) keep[p->kernels[k].inputs[i]] = 1;
    kiln_status s = KILN_STATUS_OK;
    for (uint32_t k = 0; k < p->n_kernels && !s; k++) {
        fkernel *kk = &p->kernels[k];
        if (kk->kind != FK_LOOP || kk->n_roots < 2) continue;
        uint32_t n = 0;
        for (uint32_t r = 0; r < kk->n_roots; r++) n += keep[kk->roots[r]];
        if (n == kk->n_roots) continue;
        if (!n) n = 1; /* the last root stays one */
        uint32_t *roots = host_alloc(ctx, n * sizeof *roots);
        if (!roots) {
            s = ctx_oom(ctx, "fusion: kernel-local values", n * sizeof *roots);
            break;
        }
        uint32_t w = 0;
        for (uint32_t r = 0; r < kk->n_roots; r++) {
            uint32_t x = kk->roots[r];
            if (keep[x] || (w == 0 && r == kk->n_roots - 1)) {
                roots[w++] = x;
                continue;
            }
            p->materialised[x] = 0;
        }
        host_free(ctx, kk->roots, kk->n_roots * sizeof *roots);
        kk->roots = roots, kk->n_roots = w;
    }
    host_free(ctx, keep, g->n_nodes);
    return s;
}

kiln_status fusion_plan_build(const kiln_graph *g, const fusion_options *o, fusion_plan *p) {
    kiln_context *ctx = g->ctx;
    memset(p, 0, sizeof *p);
    p->ctx = ctx;
    p->n_nodes = g->n_nodes;
    p->excess_precision = o && o->excess_precision;
    decide_state s = {.g = g};
    kiln_status st = ir_users_build(g, &s.users);
    if (st) return st;
    p->materialised = host_calloc(ctx, g->n_nodes, 1);
    p->inline_const = host_calloc(ctx, g->n_nodes, 1);
    s.is_output = host_calloc(ctx, g->n_nodes, 1);
    s.cost = host_calloc(ctx, g->n_nodes, sizeof *s.cost);
    s.has_reduce = host_calloc(ctx, g->n_nodes, 1);
    s.kset = host_calloc(ctx, g->n_nodes, sizeof *s.kset);
    s.nk = host_calloc(ctx, g->n_nodes, 1);
    p->row = host_calloc(ctx, g->n_nodes, 1);
    s.row_ok = host_calloc(ctx, g->n_nodes, 1);
    s.mark = host_calloc(ctx, g->n_nodes, sizeof *s.mark);
    s.stack = host_calloc(ctx, g->n_nodes, sizeof *s.stack);
    s.reads = host_calloc(ctx, g->n_nodes, sizeof *s.reads);
    s.moved = host_calloc(ctx, g->n_nodes, sizeof *s.moved);
    if (!p->materialised || !p->inline_const || !s.is_output || !s.cost || !s.has_reduce ||
        !s.kset || !s.nk || !p->row || !s.row_ok || !s.mark || !s.stack || !s.reads || !s.moved) {
        st = ctx_oom(ctx, "fusion", g->n_nodes * sizeof *s.cost);
        goto done;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) s.is_output[g->outputs[i]] = 1;
    decide_rows(&s, p, o);
    st = form_kernels(g, p);
    if (!st && !(o && o->disable)) st = merge_siblings(g, p);
    if (!st && !(o && o->disable)) st = localise_roots(g, p);
    for (uint32_t id = 1; id < g->n_nodes; id++)
        if (!p->materialised[id] && !is_source(&g->nodes[id])) p->n_fused_away++;
done:
    ir_users_free(g, &s.users);
    host_free(ctx, s.is_output, g->n_nodes);
    host_free(ctx, s.cost, g->n_nodes * sizeof *s.cost);
    host_free(ctx, s.has_reduce, g->n_nodes);
    host_free(ctx, s.kset, g->n_nodes * sizeof *s.kset);
    host_free(ctx, s.nk, g->n_nodes);
    host_free(ctx, s.row_ok, g->n_nodes);
    host_free(ctx, s.mark, g->n_nodes * sizeof *s.mark);
    host_free(ctx, s.stack, g->n_nodes * sizeof *s.stack);
    host_free(ctx, s.reads, g->n_nodes * sizeof *s.reads);
    host_free(ctx, s.moved, g->n_nodes * sizeof *s.moved);
    if (st) fusion_plan_free(p);
    return st;
}

void fusion_plan_free(fusion_plan *p) {
    if (!p->ctx) return;
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        host_free(p->ctx, p->kernels[i].roots, p->kernels[i].n_roots * sizeof(uint32_t));
        host_free(p->ctx, p->kernels[i].alias, p->kernels[i].n_roots * sizeof(uint32_t));
        host_free(p->ctx, p->kernels[i].inputs,
                  (p->kernels[i].n_inputs ? p->kernels[i].n_inputs : 1) * sizeof(uint32_t));
    }
    host_free(p->ctx, p->kernels, p->cap_kernels * sizeof *p->kernels);
    host_free(p->ctx, p->materialised, p->n_nodes);
    host_free(p->ctx, p->inline_const, p->n_nodes);
    host_free(p->ctx, p->row, p->n_nodes);
    memset(p, 0, sizeof *p);
}
