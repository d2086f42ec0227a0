/* graph.c — graph objects: creation, destruction, appending nodes, type queries.
 *
 * Nodes live in one growable array (index = id, slot 0 unused). Growth doubles, through
 * the context's host allocator; a failed growth leaves the graph exactly as it was. */
#include "ir.h"
#include "side.h"
#include "base/strbuf.h"

#include <string.h>

/* Graph ids tell the values of different graphs apart, also of graphs of different
 * contexts: the context's sequence number is spread by an odd multiplier (a bijection on 32
 * bits, so one context never repeats an id) and mixed with a hash of the context's address,
 * so two contexts' graphs are very unlikely to share one. 0 is never an id. */
static uint32_t new_graph_id(kiln_context *ctx) {
    uint64_t a = (uint64_t)(uintptr_t)ctx;
    uint32_t salt = (uint32_t)(((a ^ (a >> 29)) * 0x9E3779B97F4A7C15ull) >> 32);
    for (;;) {
        uint32_t id = (uint32_t)atomic_fetch_add(&ctx->next_graph_id, 1) * 0x9E3779B1u ^ salt;
        if (id) return id;
    }
}

kiln_status kiln_graph_create(kiln_context *ctx, const char *name, kiln_graph **out) {
    if (out) *out = NULL;
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_create: out is NULL");
    kiln_graph *g = host_calloc(ctx, 1, sizeof *g);
    if (!g) return ctx_oom(ctx, "kiln_graph_create", sizeof *g);
    g->ctx = ctx;
    g->id = new_graph_id(ctx);
    const char *gname = name && *name ? name : "main";
    size_t asked = strlen(gname) + 1;
    if ((g->name = host_strdup(ctx, gname))) {
        g->cap_nodes = 16;
        asked = g->cap_nodes * sizeof *g->nodes;
        g->nodes = host_calloc(ctx, g->cap_nodes, sizeof *g->nodes);
    }
    if (!g->nodes) {
        kiln_graph_destroy(g);
        return ctx_oom(ctx, "kiln_graph_create", asked);
    }
    g->n_nodes = 1;
    *out = g;
    return KILN_STATUS_OK;
}

void ir_node_release(kiln_context *ctx, ir_node *n) {
    if (n->in_heap) host_free(ctx, n->in_heap, n->n_in * sizeof *n->in_heap);
    ir_region_unref(ctx, n->region);
    if (n->name) host_free(ctx, n->name, strlen(n->name) + 1);
    if (n->data) {
        size_t bytes = 0;
        ir_shape_nbytes(&n->shape, n->dtype, &bytes);
        host_free(ctx, n->data, bytes);
    }
    n->in_heap = NULL, n->name = NULL, n->data = NULL, n->region = NULL;
}

void kiln_graph_destroy(kiln_graph *g) {
    if (!g) return;
    kiln_context *ctx = g->ctx;
    for (uint32_t i = 1; i < g->n_nodes; i++) ir_node_release(ctx, &g->nodes[i]);
    host_free(ctx, g->nodes, g->cap_nodes * sizeof *g->nodes);
    host_free(ctx, g->params, g->cap_params * sizeof *g->params);
    host_free(ctx, g->outputs, g->n_outputs * sizeof *g->outputs);
    for (uint32_t i = 0; i < g->n_files; i++) host_free(ctx, g->files[i], strlen(g->files[i]) + 1);
    host_free(ctx, g->files, g->cap_files * sizeof *g->files);
    host_free(ctx, g->captures, g->cap_captures * sizeof *g->captures);
    ir_side_free_all(g);
    if (g->name) host_free(ctx, g->name, strlen(g->name) + 1);
    host_free(ctx, g, sizeof *g);
}

static bool grow(kiln_context *ctx, void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t c = *cap ? *cap : 8;
    while (c < need) {
        if (c > UINT32_MAX / 2) return false;
        c *= 2;
    }
    void *q = host_realloc(ctx, *p, (size_t)*cap * elem, (size_t)c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

#if defined(__SANITIZE_ADDRESS__)
#define KILN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN 1
#endif
#endif

/* Under AddressSanitizer a graph's node array moves at every append while the graph is
 * small (it would move only when it doubles), so that a pointer into it held across a call
 * that appends (a use after free once the array grows: vmap's batched cond once read one)
 * is reported by the first test that reaches it, not only by a graph of an unlucky size.
 * Small graphs only: moving a large one every time would make the suites quadratic. */
static bool move_nodes_for_asan(kiln_graph *g) {
#ifdef KILN_ASAN
    if (g->n_nodes >= 1024 || !g->cap_nodes) return true;
    size_t bytes = (size_t)g->cap_nodes * sizeof *g->nodes;
    ir_node *q = host_alloc(g->ctx, bytes);
    if (!q) return false;
    memcpy(q, g->nodes, (size_t)g->n_nodes * sizeof *g->nodes);
    host_free(g->ctx, g->nodes, bytes);
    g->nodes = q;
#else
    (void)g;
#endif
    return true;
}

uint32_t ir_graph_append(kiln_graph *g, const ir_node *tmpl, const uint32_t *in, uint32_t n_in) {
    kiln_context *ctx = g->ctx;
    if (g->n_nodes == UINT32_MAX) return 0;
    /* the node and its inputs copied before the array may move: tmpl or in may point into it */
    ir_node n = *tmpl;
    n.n_in = n_in;
    n.in_heap = NULL;
    if (n_in <= IR_INLINE_INPUTS) {
        if (n_in) memcpy(n.in_inline, in, n_in * sizeof *in);
    } else {
        n.in_heap = host_alloc(ctx, n_in * sizeof *n.in_heap);
        if (!n.in_heap) return 0;
        memcpy(n.in_heap, in, n_in * sizeof *n.in_heap);
    }
    bool is_param = n.op == IR_PARAMETER;
    if (!grow(ctx, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes) ||
        !move_nodes_for_asan(g) ||
        (is_param &&
         !grow(ctx, (void **)&g->params, &g->cap_params, g->n_params + 1, sizeof *g->params))) {
        if (n.in_heap) host_free(ctx, n.in_heap, n_in * sizeof *n.in_heap);
        return 0;
    }
    uint32_t id = g->n_nodes++;
    g->nodes[id] = n;
    if (is_param) g->params[g->n_params++] = id;
    return id;
}

bool kiln_value_type(const kiln_graph *g, kiln_value v, kiln_dtype *dtype, int *rank,
                     int64_t *dims) {
    if (!g || v.graph != g->id || v.id == 0 || v.id >= g->n_nodes) return false;
    const ir_node *n = &g->nodes[v.id];
    if (dtype) *dtype = n->dtype;
    if (rank) *rank = n->shape.rank;
    if (dims) memcpy(dims, n->shape.dims, (size_t)n->shape.rank * sizeof *dims);
    return true;
}

int kiln_graph_num_nodes(const kiln_graph *g) {
    return g ? (int)g->n_nodes - 1 : 0;
}
int kiln_graph_num_parameters(const kiln_graph *g) {
    return g ? (int)g->n_params : 0;
}
int kiln_graph_num_outputs(const kiln_graph *g) {
    return g ? (int)g->n_outputs : 0;
}
kiln_status kiln_graph_status(const kiln_graph *g) {
    return g ? g->status : KILN_STATUS_INVALID_ARGUMENT;
}
const char *kiln_graph_error(const kiln_graph *g) {
    return g && g->error ? g->error : "";
}

const char *ir_graph_own_file(kiln_graph *g, const char *s, size_t n) {
    for (uint32_t i = 0; i < g->n_files; i++)
        if (strlen(g->files[i]) == n && !memcmp(g->files[i], s, n)) return g->files[i];
    if (g->n_files == g->cap_files) {
        uint32_t cap = g->cap_files ? g->cap_files * 2 : 4;
        char **f = host_alloc(g->ctx, cap * sizeof *f);
        if (!f) return NULL;
        if (g->files) memcpy(f, g->files, g->n_files * sizeof *f);
        host_free(g->ctx, g->files, g->cap_files * sizeof *g->files);
        g->files = f, g->cap_files = cap;
    }
    char *c = host_alloc(g->ctx, n + 1);
    if (!c) return NULL;
    memcpy(c, s, n);
    c[n] = 0;
    return g->files[g->n_files++] = c;
}

kiln_value kiln_graph_parameter(const kiln_graph *g, int i) {
    kiln_value none = {0, 0};
    if (!g || i < 0 || (uint32_t)i >= g->n_params) return none;
    return (kiln_value){g->id, g->params[i]};
}

kiln_value kiln_graph_output(const kiln_graph *g, int i) {
    kiln_value none = {0, 0};
    if (!g || i < 0 || (uint32_t)i >= g->n_outputs) return none;
    return (kiln_value){g->id, g->outputs[i]};
}
