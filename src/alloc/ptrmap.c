/* ptrmap.c — see ptrmap.h. Device addresses handed out by the allocator are multiples of
 * 256, so the low 8 bits carry no information and are dropped before the multiplicative
 * (Fibonacci) hash, which spreads consecutive chunks over the table. */
#include "ptrmap.h"

#include <string.h>

static size_t slot_of(const ptrmap *m, uintptr_t key) {
    uint64_t h = ((uint64_t)key >> 8) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (m->cap - 1);
}

static bool grow(kiln_context *ctx, ptrmap *m, size_t cap) {
    size_t bytes;
    if (!kn_mul_size(cap, sizeof(ptrmap_slot), &bytes)) return false;
    ptrmap_slot *slots = host_alloc(ctx, bytes);
    if (!slots) return false;
    memset(slots, 0, bytes);
    ptrmap old = *m;
    m->slots = slots, m->cap = cap, m->count = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.slots[i].key) ptrmap_put(m, old.slots[i].key, old.slots[i].val);
    host_free(ctx, old.slots, old.cap * sizeof(ptrmap_slot));
    return true;
}

bool ptrmap_reserve(kiln_context *ctx, ptrmap *m, size_t more) {
    size_t need;
    if (!kn_add_size(m->count, more, &need)) return false;
    if (need <= m->cap / 2) return true;
    size_t cap = m->cap ? m->cap : 64;
    while (cap / 2 < need)
        if (!kn_mul_size(cap, 2, &cap)) return false;
    return grow(ctx, m, cap);
}

void ptrmap_put(ptrmap *m, uintptr_t key, void *val) {
    size_t i = slot_of(m, key);
    while (m->slots[i].key) i = (i + 1) & (m->cap - 1);
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->count++;
}

void *ptrmap_get(const ptrmap *m, uintptr_t key) {
    if (!m->cap || !key) return NULL;
    for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key) return m->slots[i].val;
        if (!m->slots[i].key) return NULL;
    }
}

/* Backward-shift deletion: after emptying slot i, walk the run that follows and move back
 * any entry whose home slot does not lie in the (cyclic) interval (i, j], i.e. any entry
 * that probing from its home would no longer reach across the new hole. */
void *ptrmap_remove(ptrmap *m, uintptr_t key) {
    if (!m->cap || !key) return NULL;
    size_t mask = m->cap - 1, i = slot_of(m, key);
    while (m->slots[i].key != key) {
        if (!m->slots[i].key) return NULL;
        i = (i + 1) & mask;
    }
    void *val = m->slots[i].val;
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = slot_of(m, m->slots[j].key);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = 0;
    m->slots[i].val = NULL;
    m->count--;
    return val;
}

void ptrmap_free(kiln_context *ctx, ptrmap *m) {
    host_free(ctx, m->slots, m->cap * sizeof(ptrmap_slot));
    memset(m, 0, sizeof *m);
}
