/* hashmap.c — open-addressing hash map (see hashmap.h for the design and invariants). */
#include "hashmap.h"

#include <string.h>

#define HM_MIN_CAP 8

void hm_init(hm_map *m, kiln_context *ctx) {
    *m = (hm_map){.ctx = ctx};
}

void hm_free(hm_map *m) {
    if (m->slots) host_free(m->ctx, m->slots, m->cap * sizeof *m->slots);
    hm_init(m, m->ctx);
}

/* splitmix64's finaliser: every input bit affects every output bit. */
uint64_t hm_hash_u64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Eight bytes at a time through the mixer; the tail is zero-padded and the length is
 * mixed in, so "a" and "a\0" differ. */
uint64_t hm_hash_bytes(const void *p, size_t n, uint64_t seed) {
    const unsigned char *b = p;
    uint64_t h = hm_hash_u64(seed ^ 0x9e3779b97f4a7c15ull ^ n);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = hm_hash_u64(h ^ w) + 0x9e3779b97f4a7c15ull;
        b += 8, n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, b, n);
        h = hm_hash_u64(h ^ w);
    }
    return h;
}

static uint64_t stored_hash(uint64_t h) {
    return h ? h : 1;
}

/* Places an entry in a table known to have room and no entry with this key. */
static void place(hm_slot *slots, size_t cap, uint64_t hash, uint64_t key, uint64_t value) {
    size_t i = (size_t)hash & (cap - 1);
    while (slots[i].hash) i = (i + 1) & (cap - 1);
    slots[i] = (hm_slot){hash, key, value};
}

static bool resize(hm_map *m, size_t cap) {
    hm_slot *slots = host_calloc(m->ctx, cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].hash)
            place(slots, cap, m->slots[i].hash, m->slots[i].key, m->slots[i].value);
    if (m->slots) host_free(m->ctx, m->slots, m->cap * sizeof *m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

bool hm_reserve(hm_map *m, size_t n) {
    size_t cap = m->cap ? m->cap : HM_MIN_CAP;
    while (cap / 2 < n) {
        if (cap > SIZE_MAX / 2 / sizeof(hm_slot)) return false;
        cap *= 2;
    }
    return cap == m->cap || resize(m, cap);
}

/* The slot holding an entry with this hash that matches, or cap if none. */
static size_t probe(const hm_map *m, uint64_t hash, hm_eq_fn eq, void *user, uint64_t key) {
    if (!m->cap) return 0;
    for (size_t i = (size_t)hash & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const hm_slot *s = &m->slots[i];
        if (!s->hash) return m->cap;
        if (s->hash == hash && (eq ? eq(user, s->key) : s->key == key)) return i;
    }
}

bool hm_find(const hm_map *m, uint64_t hash, hm_eq_fn eq, void *user, uint64_t *key,
             uint64_t *value) {
    size_t i = probe(m, stored_hash(hash), eq, user, 0);
    if (i >= m->cap) return false;
    if (key) *key = m->slots[i].key;
    if (value) *value = m->slots[i].value;
    return true;
}

bool hm_add(hm_map *m, uint64_t hash, uint64_t key, uint64_t value) {
    if (!hm_reserve(m, m->count + 1)) return false;
    place(m->slots, m->cap, stored_hash(hash), key, value);
    m->count++;
    return true;
}

bool hm_get(const hm_map *m, uint64_t key, uint64_t *value) {
    size_t i = probe(m, stored_hash(hm_hash_u64(key)), NULL, NULL, key);
    if (i >= m->cap) return false;
    if (value) *value = m->slots[i].value;
    return true;
}

bool hm_put(hm_map *m, uint64_t key, uint64_t value) {
    uint64_t h = stored_hash(hm_hash_u64(key));
    size_t i = probe(m, h, NULL, NULL, key);
    if (i < m->cap) {
        m->slots[i].value = value;
        return true;
    }
    return hm_add(m, h, key, value);
}

/* Backward-shift deletion: after emptying slot i, walk the rest of the run and move back
 * every entry whose home slot is not cyclically within (i, j], so that no entry is left
 * behind a hole its lookups would stop at. */
bool hm_remove(hm_map *m, uint64_t key) {
    size_t i = probe(m, stored_hash(hm_hash_u64(key)), NULL, NULL, key);
    if (i >= m->cap) return false;
    size_t mask = m->cap - 1;
    for (size_t j = (i + 1) & mask; m->slots[j].hash; j = (j + 1) & mask) {
        size_t home = (size_t)m->slots[j].hash & mask;
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        m->slots[i] = m->slots[j];
        i = j;
    }
    m->slots[i].hash = 0;
    m->count--;
    return true;
}

bool hm_next(const hm_map *m, size_t *it, uint64_t *key, uint64_t *value) {
    for (; *it < m->cap; ++*it) {
        const hm_slot *s = &m->slots[*it];
        if (!s->hash) continue;
        if (key) *key = s->key;
        if (value) *value = s->value;
        ++*it;
        return true;
    }
    return false;
}
