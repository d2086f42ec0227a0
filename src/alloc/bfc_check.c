/* bfc_check.c — a full check of the allocator's invariants against a recount, for tests
 * (which call it after every step of random sequences) and for debugging.
 *
 * Checked: regions do not overlap; the chunks of each region tile it exactly (so every
 * reserved byte is in exactly one chunk), are 256-aligned and linked both ways; no two free
 * chunks are neighbours; every free chunk is in the bin of its size exactly once and every
 * bin entry is such a chunk; the bitmaps mirror the bins; the pointer map holds exactly the
 * chunks in use; chunk records are all accounted for (in a region or spare); and every
 * counter equals its recount. */
#include "bfc_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct recount {
    uint64_t in_use, reserved, live, free_chunks, chunks;
} recount;

#define FAIL(...) return ctx_error(a->ctx, KILN_STATUS_INTERNAL, "bfc_check: " __VA_ARGS__)

static int cmp_region(const void *x, const void *y) {
    uintptr_t a = (*(const bfc_region *const *)x)->base, b = (*(const bfc_region *const *)y)->base;
    return a < b ? -1 : a > b;
}

static kiln_status check_regions_disjoint(bfc_allocator *a) {
    size_t n = 0;
    for (bfc_region *r = a->regions; r; r = r->next) {
        if (++n > a->n_regions)
            FAIL("region list longer than n_regions (%llu)", (unsigned long long)a->n_regions);
        if (r->next && r->next->prev != r) FAIL("region list links broken");
    }
    if (n != a->n_regions)
        FAIL("%zu regions listed, n_regions says %llu", n, (unsigned long long)a->n_regions);
    if (!n) return KILN_STATUS_OK;
    bfc_region **v = host_alloc(a->ctx, n * sizeof *v);
    if (!v) return ctx_oom(a->ctx, "bfc_check", n * sizeof *v);
    n = 0;
    for (bfc_region *r = a->regions; r; r = r->next) v[n++] = r;
    qsort(v, n, sizeof *v, cmp_region);
    size_t bad = n;
    for (size_t i = 1; i < n && bad == n; i++)
        if (v[i - 1]->base + v[i - 1]->size > v[i]->base) bad = i;
    host_free(a->ctx, v, n * sizeof *v);
    if (bad != n) FAIL("two regions overlap");
    return KILN_STATUS_OK;
}

static kiln_status check_chunk(bfc_allocator *a, const bfc_region *r, const bfc_chunk *c) {
    if (c->region != r) FAIL("chunk %#lx points to another region", (unsigned long)c->ptr);
    if (!c->size || c->size % BFC_ALIGN || c->ptr % BFC_ALIGN)
        FAIL("chunk %#lx has size %zu: not a positive multiple of 256 at a 256-aligned address",
             (unsigned long)c->ptr, c->size);
    if (c->next && (c->next->prev != c || c->next->ptr != c->ptr + c->size))
        FAIL("chunk %#lx and its next neighbour do not meet", (unsigned long)c->ptr);
    if (c->in_use) {
        if (ptrmap_get(&a->live, c->ptr) != c)
            FAIL("chunk %#lx in use but not in the pointer map", (unsigned long)c->ptr);
        if (!c->requested || c->size != ((c->requested + BFC_ALIGN - 1) & ~(BFC_ALIGN - 1)))
            FAIL("chunk %#lx of %zu bytes holds a request of %zu", (unsigned long)c->ptr, c->size,
                 c->requested);
        return KILN_STATUS_OK;
    }
    if (c->next && !c->next->in_use)
        FAIL("free chunks %#lx and %#lx are neighbours", (unsigned long)c->ptr,
             (unsigned long)c->next->ptr);
    return KILN_STATUS_OK;
}

/* Every bin entry is a free chunk of the bin's class, listed once (marked by setting
 * requested to a sentinel, which walk_regions checks and clear_marks removes). */
static kiln_status check_bins(bfc_allocator *a, uint64_t *entries) {
    *entries = 0;
    uint32_t summary = 0;
    for (int b = 0; b < BFC_NBINS; b++) {
        bool set = (a->bitmap[b >> 6] >> (b & 63)) & 1;
        if (set != (a->bins[b] != NULL)) FAIL("bitmap bit %d disagrees with bin %d", b, b);
        if (set) summary |= 1u << (b >> 6);
        for (bfc_chunk *c = a->bins[b], *prev = NULL; c; prev = c, c = c->fnext) {
            if (c->fprev != prev) FAIL("bin %d list links broken", b);
            if (c->in_use || c->requested) FAIL("bin %d lists a chunk in use or twice", b);
            if (bfc_bin(c->size) != b) FAIL("chunk of %zu bytes filed in bin %d", c->size, b);
            c->requested = SIZE_MAX;
            ++*entries;
        }
    }
    if (summary != a->summary) FAIL("summary bitmap %#x, want %#x", a->summary, summary);
    return KILN_STATUS_OK;
}

static kiln_status walk_regions(bfc_allocator *a, recount *n) {
    for (bfc_region *r = a->regions; r; r = r->next) {
        if (!r->first || r->first->prev || r->first->ptr != r->base)
            FAIL("region %#lx does not start with its first chunk", (unsigned long)r->base);
        uint64_t covered = 0;
        for (bfc_chunk *c = r->first; c; c = c->next) {
            bool listed = !c->in_use && c->requested == SIZE_MAX;
            if (!c->in_use && !listed) FAIL("free chunk %#lx is in no bin", (unsigned long)c->ptr);
            if (listed) n->free_chunks++;
            kiln_status s = check_chunk(a, r, c);
            if (s) return s;
            covered += c->size;
            n->chunks++;
            if (c->in_use) n->in_use += c->size, n->live++;
            if (covered > r->size) break;
        }
        if (covered != r->size)
            FAIL("chunks of region %#lx cover %llu of its %zu bytes", (unsigned long)r->base,
                 (unsigned long long)covered, r->size);
        n->reserved += r->size;
    }
    return KILN_STATUS_OK;
}

static kiln_status check_counts(bfc_allocator *a, const recount *n, uint64_t entries) {
    if (entries != n->free_chunks)
        FAIL("%llu bin entries for %llu free chunks", (unsigned long long)entries,
             (unsigned long long)n->free_chunks);
    if (n->in_use != a->in_use || n->reserved != a->reserved || n->live != a->n_live)
        FAIL("stats say in use %llu, reserved %llu, live %llu; recount %llu, %llu, %llu",
             (unsigned long long)a->in_use, (unsigned long long)a->reserved,
             (unsigned long long)a->n_live, (unsigned long long)n->in_use,
             (unsigned long long)n->reserved, (unsigned long long)n->live);
    if (a->live.count != n->live)
        FAIL("pointer map holds %zu, %llu in use", a->live.count, (unsigned long long)n->live);
    if (a->peak_in_use < a->in_use || a->peak_reserved < a->reserved || a->in_use > a->reserved)
        FAIL("peaks below current values, or more in use than reserved");
    if (a->limit && a->reserved > a->limit) FAIL("reserved beyond the limit");
    uint64_t records = 0, spare = 0;
    for (bfc_slab *s = a->slabs; s; s = s->next) records += BFC_SLAB;
    for (bfc_chunk *c = a->spare; c && spare <= records; c = c->fnext) spare++;
    if (spare != a->n_spare || spare + n->chunks != records)
        FAIL("chunk records: %llu spare (n_spare %zu) + %llu in regions != %llu made",
             (unsigned long long)spare, a->n_spare, (unsigned long long)n->chunks,
             (unsigned long long)records);
    return KILN_STATUS_OK;
}

/* Clears the marks check_bins left, also after a failed check. A walk stops at the first
 * unmarked chunk, so even a damaged (cyclic) list ends. */
static void clear_marks(bfc_allocator *a) {
    for (int b = 0; b < BFC_NBINS; b++)
        for (bfc_chunk *c = a->bins[b]; c && c->requested == SIZE_MAX; c = c->fnext)
            c->requested = 0;
}

kiln_status bfc_check(bfc_allocator *a) {
    pthread_mutex_lock(&a->mu);
    recount n = {0};
    uint64_t entries = 0;
    kiln_status s = check_regions_disjoint(a);
    if (!s) s = check_bins(a, &entries);
    if (!s) s = walk_regions(a, &n);
    if (!s) s = check_counts(a, &n, entries);
    clear_marks(a);
    pthread_mutex_unlock(&a->mu);
    return s;
}
