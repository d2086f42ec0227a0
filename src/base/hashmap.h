/* hashmap.h — a small open-addressing hash map from uint64_t keys to uint64_t values, on
 * the context's host allocator.
 *
 * Two ways to use it (pick one per map):
 *  - plain keys (hm_get / hm_put / hm_remove): the key is the identity (an id, an
 *    integer, a pointer cast to uintptr_t) and the map hashes it itself;
 *  - keys that stand for bigger objects (a node, a string, a signature): the caller
 *    hashes the object, stores a handle to it as the key (an index, a pointer) with
 *    hm_add, and finds it again with hm_find and an equality callback that compares the
 *    object behind a stored handle with the one being looked up.
 *
 * Algorithm: linear probing over a power-of-two table kept at most half full. Each slot
 * keeps the full 64-bit hash, so a probe compares hashes first (the callback runs only on
 * a real hash match) and growing never calls back into the caller. Deletion shifts the
 * following entries of the probe run back (Knuth's algorithm R), so there are no
 * tombstones and lookups never slow down after many removals.
 *
 * Invariants: cap is 0 or a power of two >= 8; count <= cap / 2; a slot is empty iff its
 * hash is 0 (stored hashes are forced non-zero). A failed allocation leaves the map as
 * it was. Not thread-safe: one map is used by one thread at a time. */
#ifndef KILN_HASHMAP_H
#define KILN_HASHMAP_H

#include "base.h"

typedef struct hm_slot {
    uint64_t hash; /* 0: empty */
    uint64_t key, value;
} hm_slot;

typedef struct hm_map {
    kiln_context *ctx;
    hm_slot *slots;
    size_t cap, count;
} hm_map;

/* True if the object behind stored key `key` equals the one being looked up (user). */
typedef bool (*hm_eq_fn)(void *user, uint64_t key);

/* An empty map (allocates nothing). */
void hm_init(hm_map *m, kiln_context *ctx);
/* Frees the table; the map is empty and usable again afterwards. */
void hm_free(hm_map *m);
/* Makes room for n entries in total, so that adding up to n cannot fail. False on OOM. */
bool hm_reserve(hm_map *m, size_t n);

/* Hash helpers: a 64-bit mixer (a bijection, so distinct integers never collide before
 * the table folds them) and a hash of a byte string, chained through seed. */
uint64_t hm_hash_u64(uint64_t x);
uint64_t hm_hash_bytes(const void *p, size_t n, uint64_t seed);

/* Plain keys. hm_put inserts or replaces; false on OOM (map unchanged). */
bool hm_get(const hm_map *m, uint64_t key, uint64_t *value);
bool hm_put(hm_map *m, uint64_t key, uint64_t value);
bool hm_remove(hm_map *m, uint64_t key); /* true if the key was there */

/* Caller-hashed keys. hm_find returns the first entry with this hash for which eq says
 * yes (key and value may be NULL). hm_add does not look for duplicates: find first. */
bool hm_find(const hm_map *m, uint64_t hash, hm_eq_fn eq, void *user, uint64_t *key,
             uint64_t *value);
bool hm_add(hm_map *m, uint64_t hash, uint64_t key, uint64_t value);

/* Iteration in table order: size_t it = 0; while (hm_next(m, &it, &k, &v)) { ... }.
 * The map must not change during an iteration. key and value may be NULL. */
bool hm_next(const hm_map *m, size_t *it, uint64_t *key, uint64_t *value);

#endif
