/* side.c — side tables attached to a graph (see side.h).
 *
 * A graph keeps its tables in a small array searched by kind (a graph has a handful at
 * most). Rows grow on write only, by doubling and zero-filled, so reading never allocates
 * and a table no one wrote costs nothing; a failed growth leaves the table as it was. */
#include "side.h"

#include <string.h>

static ir_side *find(const kiln_graph *g, const ir_side_kind *k) {
    for (uint32_t i = 0; i < g->n_side; i++)
        if (g->side[i].kind == k) return &g->side[i];
    return NULL;
}

static ir_side *attach(kiln_graph *g, const ir_side_kind *k) {
    ir_side *t = find(g, k);
    if (t) return t;
    void *state = k->state_size ? host_calloc(g->ctx, 1, k->state_size) : NULL;
    if (k->state_size && !state) return NULL;
    if (g->n_side == g->cap_side) {
        uint32_t cap = g->cap_side ? 2 * g->cap_side : 4;
        ir_side *v = host_realloc(g->ctx, g->side, g->cap_side * sizeof *v, cap * sizeof *v);
        if (!v) {
            host_free(g->ctx, state, k->state_size);
            return NULL;
        }
        g->side = v, g->cap_side = cap;
    }
    t = &g->side[g->n_side++];
    *t = (ir_side){.kind = k, .state = state};
    return t;
}

void *ir_side_state(const kiln_graph *g, const ir_side_kind *k) {
    const ir_side *t = find(g, k);
    return t ? t->state : NULL;
}

void *ir_side_state_make(kiln_graph *g, const ir_side_kind *k) {
    ir_side *t = attach(g, k);
    return t ? t->state : NULL;
}

const void *ir_side_row(const kiln_graph *g, const ir_side_kind *k, uint32_t id) {
    const ir_side *t = find(g, k);
    return t && id < t->n_rows ? t->rows + (size_t)id * k->row_size : NULL;
}

void *ir_side_row_edit(kiln_graph *g, const ir_side_kind *k, uint32_t id) {
    ir_side *t = find(g, k);
    return t && id < t->n_rows ? t->rows + (size_t)id * k->row_size : NULL;
}

void *ir_side_row_make(kiln_graph *g, const ir_side_kind *k, uint32_t id) {
    ir_side *t = attach(g, k);
    if (!t) return NULL;
    if (id >= t->n_rows) {
        uint32_t n = t->n_rows ? t->n_rows : 16;
        while (n <= id) {
            if (n > UINT32_MAX / 2) return NULL;
            n *= 2;
        }
        size_t sz = k->row_size;
        unsigned char *r = host_realloc(g->ctx, t->rows, t->n_rows * sz, n * sz);
        if (!r) return NULL;
        memset(r + t->n_rows * sz, 0, (n - t->n_rows) * sz);
        t->rows = r, t->n_rows = n;
    }
    return t->rows + (size_t)id * k->row_size;
}

static void free_one(kiln_context *ctx, ir_side *t) {
    if (t->state) {
        if (t->kind->release) t->kind->release(ctx, t->state);
        host_free(ctx, t->state, t->kind->state_size);
    }
    host_free(ctx, t->rows, (size_t)t->n_rows * t->kind->row_size);
}

void ir_side_drop(kiln_graph *g, const ir_side_kind *k) {
    ir_side *t = find(g, k);
    if (!t) return;
    free_one(g->ctx, t);
    *t = g->side[--g->n_side];
}

void ir_side_free_all(kiln_graph *g) {
    for (uint32_t i = 0; i < g->n_side; i++) free_one(g->ctx, &g->side[i]);
    host_free(g->ctx, g->side, g->cap_side * sizeof *g->side);
    g->side = NULL, g->n_side = g->cap_side = 0;
}

unsigned ir_side_hints(const kiln_graph *g, uint32_t id) {
    unsigned h = 0;
    for (uint32_t i = 0; i < g->n_side; i++) {
        const ir_side *t = &g->side[i];
        if (t->kind->hints && id < t->n_rows)
            h |= t->kind->hints(t->rows + (size_t)id * t->kind->row_size);
    }
    return h;
}

bool ir_side_carry(const kiln_graph *old, uint32_t oid, kiln_graph *g, uint32_t nid, ir_carry how) {
    for (uint32_t i = 0; i < old->n_side; i++) {
        const ir_side_kind *k = old->side[i].kind;
        if (k->carry && !k->carry(old, oid, g, nid, how)) return false;
    }
    return true;
}

kiln_status ir_side_finish_check(kiln_graph *g) {
    for (uint32_t i = 0; i < g->n_side; i++) {
        const ir_side_kind *k = g->side[i].kind;
        kiln_status s = k->finish_check ? k->finish_check(g) : KILN_STATUS_OK;
        if (s) return s;
    }
    return KILN_STATUS_OK;
}

kiln_status ir_side_finish(kiln_graph *g) {
    for (uint32_t i = 0; i < g->n_side; i++) {
        const ir_side_kind *k = g->side[i].kind;
        kiln_status s = k->finish ? k->finish(g) : KILN_STATUS_OK;
        if (s) return s;
    }
    return KILN_STATUS_OK;
}
