/* ptrmap.h — a hash map from a device address to its bookkeeping record: the O(1)
 * pointer-to-chunk lookup the allocator needs on every free.
 *
 * Open addressing with linear probing; deletion shifts the following entries back instead
 * of leaving tombstones, so lookups never slow down as allocations come and go. Key 0
 * marks an empty slot (no device hands out address 0). The load stays at most one half.
 * Growth is separated from insertion (ptrmap_reserve, then ptrmap_put) so that a caller
 * can get every host allocation it needs before it changes anything. */
#ifndef KILN_ALLOC_PTRMAP_H
#define KILN_ALLOC_PTRMAP_H

#include "base/base.h"

typedef struct ptrmap_slot {
    uintptr_t key;
    void *val;
} ptrmap_slot;

typedef struct ptrmap {
    ptrmap_slot *slots; /* cap entries; NULL while cap is 0 */
    size_t cap;         /* 0 or a power of two */
    size_t count;
} ptrmap;

/* Makes room for `more` insertions without growth. false: host allocation failed, the map
 * is unchanged. */
bool ptrmap_reserve(kiln_context *ctx, ptrmap *m, size_t more);
/* Inserts a key that is not present; room must have been reserved. */
void ptrmap_put(ptrmap *m, uintptr_t key, void *val);
void *ptrmap_get(const ptrmap *m, uintptr_t key); /* NULL if absent */
void *ptrmap_remove(ptrmap *m, uintptr_t key);    /* the value, or NULL if absent */
void ptrmap_free(kiln_context *ctx, ptrmap *m);

#endif
