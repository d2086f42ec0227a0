/* bfc_internal.h — the allocator's data structure, shared by bfc.c (alloc/free/regions),
 * bfc_report.c (stats, OOM messages), bfc_check.c (invariants) and bfc_trace.c.
 *
 * Memory is a set of regions; each region is cut into chunks that tile it exactly, linked
 * in address order (prev/next). A chunk is in use (listed in the pointer map) or free
 * (listed in exactly one size-class bin). Two free chunks are never neighbours: freeing
 * merges a chunk with free neighbours at once (coalescing).
 *
 * Bins are size classes in the style of TLSF: sizes are counted in 256-byte units u; the
 * classes are exact below 64 units (16 KiB), and above that each power of two is cut into
 * 32 classes, so one class spans at most 1/32 (3%) of its sizes. A two-level bitmap finds
 * the smallest non-empty class at or above a request in a few instructions, whatever the
 * number of free chunks. Within a class the allocator takes the best fit among the first
 * few chunks of its list (BFC_SCAN), preferring lower addresses among equals. */
#ifndef KILN_ALLOC_BFC_INTERNAL_H
#define KILN_ALLOC_BFC_INTERNAL_H

#include "bfc.h"
#include "ptrmap.h"

#include <stdio.h>

#define BFC_SHIFT      8 /* log2(BFC_ALIGN) */
#define BFC_SL         5 /* log2 of the classes per power of two */
#define BFC_NBINS      ((64 - BFC_SHIFT - BFC_SL + 1) << BFC_SL) /* 1664 */
#define BFC_NWORDS     (BFC_NBINS / 64)                          /* 26 bitmap words */
#define BFC_EXACT      (2 << BFC_SL) /* classes below this hold one size each */
#define BFC_SCAN       8             /* chunks compared within one class */
#define BFC_TAG_MAX    24
#define BFC_SLAB       128 /* chunk records per host allocation */
#define BFC_GROW_SHIFT 4   /* grow: a new region is at least reserved >> 4 */

typedef struct bfc_region bfc_region;

typedef struct bfc_chunk {
    uintptr_t ptr;                   /* device address, a multiple of 256 */
    size_t size;                     /* a multiple of 256 */
    size_t requested;                /* bytes asked for; 0 while free */
    struct bfc_chunk *prev, *next;   /* address neighbours in the region; NULL at ends */
    struct bfc_chunk *fprev, *fnext; /* the bin's list while free; fnext links spares */
    bfc_region *region;
    uint64_t id; /* allocation number, for traces and reports */
    bool in_use;
    char tag[BFC_TAG_MAX];
} bfc_chunk;

struct bfc_region {
    uintptr_t base;
    size_t size;
    bfc_chunk *first;        /* lowest chunk; chunks tile [base, base + size) */
    bfc_region *prev, *next; /* all regions of the allocator, newest first */
};

typedef struct bfc_slab {
    struct bfc_slab *next;
    bfc_chunk chunks[BFC_SLAB];
} bfc_slab;

struct bfc_allocator {
    kiln_context *ctx;
    bfc_region_source src;
    kiln_alloc_mode mode;
    double mem_fraction;
    uint64_t limit;
    uint64_t device_total; /* the device's memory, read once at creation (for stats) */
    size_t min_region;     /* grow: the smallest region asked for */
    char name[32];
    pthread_mutex_t mu; /* guards everything below */

    bfc_chunk *bins[BFC_NBINS];
    uint64_t bitmap[BFC_NWORDS]; /* bit b: bins[b] is not empty */
    uint32_t summary;            /* bit w: bitmap[w] is not zero */
    bfc_region *regions;
    ptrmap live; /* device address -> in-use chunk */
    bfc_chunk *spare;
    size_t n_spare;
    bfc_slab *slabs;

    uint64_t next_id;
    uint64_t in_use, peak_in_use, reserved, peak_reserved;
    uint64_t num_allocs, largest_alloc, n_live, n_regions;

    FILE *trace;       /* non-NULL while recording */
    uint64_t trace_t0; /* CLOCK_MONOTONIC ns at trace start */
};

static inline int bfc_bin(size_t size) {
    uint64_t u = (uint64_t)size >> BFC_SHIFT;
    int fl = 63 - __builtin_clzll(u);
    if (fl < BFC_SL) return (int)u;
    return ((fl - BFC_SL + 1) << BFC_SL) | (int)((u >> (fl - BFC_SL)) & ((1u << BFC_SL) - 1));
}

/* Under a->mu. */
uint64_t bfc_largest_free_locked(const bfc_allocator *a);
void bfc_trace_alloc_locked(bfc_allocator *a, const bfc_chunk *c);
void bfc_trace_free_locked(bfc_allocator *a, const bfc_chunk *c);
/* Writes the out-of-memory message for a request into ctx and returns
 * KILN_STATUS_DEVICE_OOM. why: the reason the request could not be met. */
kiln_status bfc_oom_locked(bfc_allocator *a, size_t size, size_t rounded, const char *tag,
                           const char *why);
/* "1.5 MiB", "256 B": for messages. */
const char *bfc_fmt_bytes(uint64_t n, char *buf, size_t size);

#endif
