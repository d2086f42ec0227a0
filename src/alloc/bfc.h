/* bfc.h — the device allocator: best fit with coalescing over regions of device memory
 * obtained from a region source (DESIGN §2.1, docs/memory.md). The source is three
 * functions and a pointer, so alloc/ knows nothing of backends or devices: a device
 * (src/backend/device.c) hands its backend's region calls in, a test a fake.
 *
 * One bfc_allocator serves one device. It never touches device memory itself (all its
 * bookkeeping lives in host memory from the context's host allocator), so the same code
 * serves host RAM now and GPU memory later. Every function is thread-safe.
 *
 * The three modes are region policies over the same chunk structure:
 *   grow         regions on demand, each max(request, 2 MiB, 1/16 of what is reserved),
 *                halving towards the request when the device refuses;
 *   preallocate  one region of mem_fraction of the device's memory at first use;
 *   platform     one region per allocation, returned as soon as it is freed.
 *
 * Failure leaves the allocator as it was: every host allocation a request needs is made
 * before anything changes, and out of memory (KILN_STATUS_DEVICE_OOM) is reported only after
 * returning wholly free regions and trying once more. */
#ifndef KILN_ALLOC_BFC_H
#define KILN_ALLOC_BFC_H

#include "base/base.h"

#define BFC_ALIGN ((size_t)256) /* alignment and rounding of every allocation */

typedef struct bfc_options {
    kiln_alloc_mode mode; /* GROW, PREALLOCATE or PLATFORM (DEFAULT is GROW) */
    double mem_fraction;  /* preallocate: share of the device's total; 0: 0.75 */
    uint64_t limit;       /* most bytes to reserve; 0: no limit */
    size_t min_region;    /* grow: the smallest region to ask for; 0: 2 MiB */
    const char *name;     /* the device in messages ("cpu:0"); copied */
} bfc_options;

/* Where regions come from. region_alloc returns `size` bytes aligned to `align` (a power
 * of two, at least BFC_ALIGN) or KILN_STATUS_DEVICE_OOM when refused (no message: the
 * allocator backs off or reports), or another status with ctx's message set; region_free
 * gets back exactly the pointer and size region_alloc gave and never fails; memory_info
 * gives the device's total memory and what a region_alloc could still get. The allocator
 * never reads or writes region memory, so it need not be host-addressable. */
typedef struct bfc_region_source {
    void *user; /* passed to each function */
    kiln_status (*region_alloc)(void *user, size_t size, size_t align, void **out);
    void (*region_free)(void *user, void *ptr, size_t size);
    kiln_status (*memory_info)(void *user, uint64_t *total, uint64_t *free);
} bfc_region_source;

typedef struct bfc_allocator bfc_allocator;

/* Makes an allocator over src (copied); reserves nothing yet. Sets ctx's message on
 * failure. */
kiln_status bfc_create(kiln_context *ctx, const bfc_region_source *src, const bfc_options *opt,
                       bfc_allocator **out);
/* Returns every region to the source, live allocations or not, and frees the allocator. */
void bfc_destroy(bfc_allocator *a);

/* size bytes (rounded up to 256) tagged `tag` (may be NULL; first 23 bytes kept). size 0
 * gives *out = NULL. On failure *out is NULL and ctx's message says why. */
kiln_status bfc_alloc(bfc_allocator *a, size_t size, const char *tag, void **out);
/* ptr must come from bfc_alloc on a; NULL is a no-op; anything else is an error. */
kiln_status bfc_free(bfc_allocator *a, void *ptr);
/* Returns every wholly free region to the source; the number of bytes given back. */
uint64_t bfc_trim(bfc_allocator *a);

void bfc_stats(bfc_allocator *a, kiln_memory_stats *out);
void bfc_reset_peak(bfc_allocator *a);
/* The rounded size of a live allocation, 0 if ptr is not one (O(1)). */
size_t bfc_alloc_size(bfc_allocator *a, const void *ptr);

/* The allocator's state as text (stats and largest live allocations); NULL on host OOM.
 * Free with kiln_string_free. */
char *bfc_summary(bfc_allocator *a);

/* Starts/stops recording alloc and free events to a file (bfc_trace.c). */
kiln_status bfc_trace_start(bfc_allocator *a, const char *path);
kiln_status bfc_trace_stop(bfc_allocator *a);

/* Debugging: checks every invariant of the chunk structure against a full recount (no
 * overlap, every reserved byte in exactly one chunk, no two adjacent free chunks, bins and
 * map agree with the chunks, stats equal the recount). KILN_STATUS_OK or KILN_STATUS_INTERNAL with
 * the first broken invariant in ctx's message. O(chunks + regions log regions). */
kiln_status bfc_check(bfc_allocator *a);

#endif
