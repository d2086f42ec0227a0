/* bfc.c — best fit with coalescing: allocation, free, regions and the three modes.
 *
 * The data structure and its invariants are described in bfc_internal.h. The order of
 * work in bfc_alloc is what makes failure clean: first get the host memory the request may
 * need (chunk records, pointer-map room), then look for a free chunk, then add a region,
 * then return wholly free regions and try once more; only when a chunk is in hand does
 * anything change. A split always happens when the chunk is larger than the request, so
 * the only waste inside a chunk is the rounding to 256 bytes.
 *
 * Why out-of-band bookkeeping: the allocator must work for memory the host cannot write
 * (GPU memory), so no header sits in front of an allocation; the pointer map finds the
 * chunk of a pointer in O(1) instead. */
#include "bfc_internal.h"

#include <string.h>

#define MIB ((size_t)1 << 20)

static size_t round_down(size_t n) {
    return n & ~(BFC_ALIGN - 1);
}

/* ---------------------------------------------------------------- bins ---- */

static void bin_insert(bfc_allocator *a, bfc_chunk *c) {
    int b = bfc_bin(c->size);
    c->fprev = NULL;
    c->fnext = a->bins[b];
    if (c->fnext) c->fnext->fprev = c;
    a->bins[b] = c;
    a->bitmap[b >> 6] |= 1ull << (b & 63);
    a->summary |= 1u << (b >> 6);
}

static void bin_remove(bfc_allocator *a, bfc_chunk *c) {
    int b = bfc_bin(c->size);
    if (c->fprev)
        c->fprev->fnext = c->fnext;
    else
        a->bins[b] = c->fnext;
    if (c->fnext) c->fnext->fprev = c->fprev;
    c->fprev = c->fnext = NULL;
    if (!a->bins[b]) {
        a->bitmap[b >> 6] &= ~(1ull << (b & 63));
        if (!a->bitmap[b >> 6]) a->summary &= ~(1u << (b >> 6));
    }
}

/* The first non-empty bin at or above `from`, or -1. */
static int next_bin(const bfc_allocator *a, int from) {
    if (from >= BFC_NBINS) return -1;
    int w = from >> 6;
    uint64_t m = a->bitmap[w] & (~0ull << (from & 63));
    if (m) return (w << 6) + __builtin_ctzll(m);
    uint32_t s = a->summary & ~((2u << w) - 1); /* words above w; w < 26, so no overflow */
    if (!s) return -1;
    w = __builtin_ctz(s);
    return (w << 6) + __builtin_ctzll(a->bitmap[w]);
}

/* Best fit for `need` among the first `limit` chunks of a list: the smallest that fits,
 * then the lowest address (which keeps the top of regions free for trim). */
static bfc_chunk *best_in_list(bfc_chunk *c, size_t need, size_t limit) {
    bfc_chunk *best = NULL;
    for (size_t i = 0; c && i < limit; c = c->fnext, i++) {
        if (c->size < need) continue;
        if (!best || c->size < best->size || (c->size == best->size && c->ptr < best->ptr))
            best = c;
        if (c->size == need && limit == BFC_SCAN) break;
    }
    return best;
}

/* The bins are searched from the smallest class that can fit: the request's own class may
 * hold chunks on both sides of it, every class above holds only chunks that fit. When the
 * request's class is the last one with anything in it, its whole list is searched, so a
 * request fails only if no free chunk can hold it. */
static bfc_chunk *find_fit(bfc_allocator *a, size_t need) {
    int b = bfc_bin(need);
    if (a->bins[b]) {
        if (b < BFC_EXACT) return a->bins[b];
        bfc_chunk *c = best_in_list(a->bins[b], need, BFC_SCAN);
        if (c) return c;
    }
    int up = next_bin(a, b + 1);
    if (up >= 0) return up < BFC_EXACT ? a->bins[up] : best_in_list(a->bins[up], 0, BFC_SCAN);
    return a->bins[b] ? best_in_list(a->bins[b], need, SIZE_MAX) : NULL;
}

/* ------------------------------------------------------- chunk records ---- */

static bool ensure_spare(bfc_allocator *a, size_t n) {
    while (a->n_spare < n) {
        bfc_slab *s = host_alloc(a->ctx, sizeof *s);
        if (!s) return false;
        s->next = a->slabs;
        a->slabs = s;
        for (int i = 0; i < BFC_SLAB; i++) {
            s->chunks[i].fnext = a->spare;
            a->spare = &s->chunks[i];
        }
        a->n_spare += BFC_SLAB;
    }
    return true;
}

static bfc_chunk *get_chunk(bfc_allocator *a) {
    bfc_chunk *c = a->spare;
    a->spare = c->fnext;
    a->n_spare--;
    memset(c, 0, sizeof *c);
    return c;
}

static void put_chunk(bfc_allocator *a, bfc_chunk *c) {
    c->fnext = a->spare;
    a->spare = c;
    a->n_spare++;
}

/* ------------------------------------------------------------- regions ---- */

/* Asks the source for one region of exactly `size` bytes and makes it one free chunk.
 * KILN_STATUS_DEVICE_OOM: refused (no message set). */
static kiln_status add_region(bfc_allocator *a, size_t size) {
    bfc_region *r = host_alloc(a->ctx, sizeof *r);
    if (!r) return ctx_oom(a->ctx, "device allocator: region record", sizeof *r);
    void *p = NULL;
    kiln_status s = a->src.region_alloc(a->src.user, size, BFC_ALIGN, &p);
    if (s || !p) {
        host_free(a->ctx, r, sizeof *r);
        return s ? s : KILN_STATUS_DEVICE_OOM;
    }
    bfc_chunk *c = get_chunk(a); /* a spare is guaranteed by the caller */
    c->ptr = (uintptr_t)p;
    c->size = size;
    c->region = r;
    *r = (bfc_region){.base = (uintptr_t)p, .size = size, .first = c, .next = a->regions};
    if (a->regions) a->regions->prev = r;
    a->regions = r;
    bin_insert(a, c);
    a->reserved += size;
    a->n_regions++;
    if (a->reserved > a->peak_reserved) a->peak_reserved = a->reserved;
    return KILN_STATUS_OK;
}

static void release_region(bfc_allocator *a, bfc_region *r) {
    bfc_chunk *c = r->first;
    bin_remove(a, c);
    put_chunk(a, c);
    a->src.region_free(a->src.user, (void *)r->base, r->size);
    if (r->prev)
        r->prev->next = r->next;
    else
        a->regions = r->next;
    if (r->next) r->next->prev = r->prev;
    a->reserved -= r->size;
    a->n_regions--;
    host_free(a->ctx, r, sizeof *r);
}

static bool wholly_free(const bfc_region *r) {
    return !r->first->in_use && !r->first->next;
}

static uint64_t trim_locked(bfc_allocator *a) {
    uint64_t released = 0;
    for (bfc_region *r = a->regions, *next; r; r = next) {
        next = r->next;
        if (wholly_free(r)) released += r->size, release_region(a, r);
    }
    return released;
}

/* Room left under the limit. */
static uint64_t headroom(const bfc_allocator *a) {
    if (!a->limit) return UINT64_MAX;
    return a->limit > a->reserved ? a->limit - a->reserved : 0;
}

/* grow: a new region of max(need, min_region, reserved / 16), clipped to the limit; when
 * the device refuses, halve towards need.
 *
 * Why not TensorFlow's doubling: a region that doubles the last one can leave up to half
 * of everything reserved unused at the peak, and on bench/alloc's training trace it held
 * far more than the peak in use. Growing by a sixteenth of what is held bounds that
 * overshoot to about 6% (bench/RESULTS.md, "Device allocator (bench/alloc)", measured both
 * on that trace) while the number of regions stays logarithmic in the footprint: at most
 * about 55 for 330 MiB, 140 for 64 GiB, each one call of the source. */
static kiln_status grow(bfc_allocator *a, size_t need) {
    uint64_t room = headroom(a);
    if (need > room) return KILN_STATUS_DEVICE_OOM;
    size_t step = round_down((size_t)(a->reserved >> BFC_GROW_SHIFT));
    if (step < a->min_region) step = a->min_region;
    size_t size = need > step ? need : step;
    if (size > room) size = round_down((size_t)room);
    for (;;) {
        kiln_status s = add_region(a, size);
        if (s != KILN_STATUS_DEVICE_OOM || size == need) return s;
        size = round_down(size / 2) > need ? round_down(size / 2) : need;
    }
}

/* preallocate: the pool is made at first use (and again after a trim returned it). */
static kiln_status preallocate(bfc_allocator *a, size_t need, const char **why) {
    if (a->regions)
        return *why = "the preallocated pool has no free block that large", KILN_STATUS_DEVICE_OOM;
    uint64_t total = 0, avail = 0;
    kiln_status s = a->src.memory_info(a->src.user, &total, &avail);
    if (s) return s;
    uint64_t want = (uint64_t)(a->mem_fraction * (double)total);
    if (a->limit && want > a->limit) want = a->limit;
    want = want > SIZE_MAX ? round_down(SIZE_MAX) : round_down((size_t)want);
    if (want < need)
        return *why = "the request is larger than the whole preallocated pool",
               KILN_STATUS_DEVICE_OOM;
    if (want > avail || (s = add_region(a, (size_t)want)) == KILN_STATUS_DEVICE_OOM) {
        char w[32], t[32], f[32];
        return ctx_error(a->ctx, KILN_STATUS_DEVICE_OOM,
                         "%s: cannot preallocate %s (%.0f%% of %s): only %s is free (another "
                         "process may hold it). Set KILN_MEM_FRACTION (now %g) lower, or "
                         "KILN_ALLOCATOR=grow to allocate on demand",
                         a->name, bfc_fmt_bytes(want, w, sizeof w), a->mem_fraction * 100,
                         bfc_fmt_bytes(total, t, sizeof t), bfc_fmt_bytes(avail, f, sizeof f),
                         a->mem_fraction);
    }
    return s;
}

/* Adds memory for a request of `need` bytes by the mode's policy. */
static kiln_status extend(bfc_allocator *a, size_t need, const char **why) {
    switch (a->mode) {
    case KILN_ALLOC_MODE_PREALLOCATE: return preallocate(a, need, why);
    case KILN_ALLOC_MODE_PLATFORM:
        if (need > headroom(a))
            return *why = "the memory limit leaves too little room", KILN_STATUS_DEVICE_OOM;
        return add_region(a, need);
    default: break;
    }
    kiln_status s = grow(a, need);
    if (s == KILN_STATUS_DEVICE_OOM)
        *why = need > headroom(a) ? "the memory limit leaves too little room"
                                  : "the device refused a region large enough";
    return s;
}

/* Whether returning the wholly free regions could make room: only in grow mode (one pool
 * in preallocate, none cached in platform), and only if the limit would then allow it. */
static bool trim_may_help(const bfc_allocator *a, size_t need) {
    if (a->mode != KILN_ALLOC_MODE_GROW) return false;
    uint64_t freeable = 0;
    for (const bfc_region *r = a->regions; r; r = r->next)
        if (wholly_free(r)) freeable += r->size;
    return freeable && (!a->limit || a->reserved - freeable + need <= a->limit);
}

/* ---------------------------------------------------------- alloc/free ---- */

/* Takes `need` bytes from the low end of free chunk c; the rest stays free. */
static void carve(bfc_allocator *a, bfc_chunk *c, size_t need, size_t size, const char *tag) {
    bin_remove(a, c);
    if (c->size > need) {
        bfc_chunk *r = get_chunk(a);
        r->ptr = c->ptr + need;
        r->size = c->size - need;
        r->region = c->region;
        r->prev = c;
        r->next = c->next;
        if (c->next) c->next->prev = r;
        c->next = r;
        c->size = need;
        bin_insert(a, r);
    }
    c->in_use = true;
    c->requested = size;
    c->id = a->next_id++;
    size_t n = tag ? strnlen(tag, BFC_TAG_MAX - 1) : 0;
    memcpy(c->tag, tag ? tag : "", n);
    c->tag[n] = 0;
    ptrmap_put(&a->live, c->ptr, c);
    a->in_use += need;
    if (a->in_use > a->peak_in_use) a->peak_in_use = a->in_use;
    if (need > a->largest_alloc) a->largest_alloc = need;
    a->num_allocs++;
    a->n_live++;
    if (a->trace) bfc_trace_alloc_locked(a, c);
}

static kiln_status alloc_locked(bfc_allocator *a, size_t size, size_t need, const char *tag,
                                void **out) {
    /* A split needs one record and a new region one more; the map one slot. */
    if (!ensure_spare(a, 2) || !ptrmap_reserve(a->ctx, &a->live, 1))
        return ctx_oom(a->ctx, "device allocator bookkeeping", sizeof(bfc_slab));
    const char *why = "";
    bfc_chunk *c = find_fit(a, need);
    if (!c) {
        kiln_status s = extend(a, need, &why);
        if (s == KILN_STATUS_DEVICE_OOM && trim_may_help(a, need)) {
            trim_locked(a);
            s = extend(a, need, &why);
        }
        if (s == KILN_STATUS_OK)
            c = find_fit(a, need);
        else if (s != KILN_STATUS_DEVICE_OOM || !*why)
            return s; /* message already set */
    }
    if (!c) return bfc_oom_locked(a, size, need, tag, why);
    carve(a, c, need, size, tag);
    *out = (void *)c->ptr;
    return KILN_STATUS_OK;
}

kiln_status bfc_alloc(bfc_allocator *a, size_t size, const char *tag, void **out) {
    *out = NULL;
    if (!size) return KILN_STATUS_OK;
    if (size > SIZE_MAX - BFC_ALIGN) {
        pthread_mutex_lock(&a->mu);
        kiln_status s = bfc_oom_locked(a, size, size, tag, "no device has that much memory");
        pthread_mutex_unlock(&a->mu);
        return s;
    }
    size_t need = (size + BFC_ALIGN - 1) & ~(BFC_ALIGN - 1);
    pthread_mutex_lock(&a->mu);
    kiln_status s = alloc_locked(a, size, need, tag, out);
    pthread_mutex_unlock(&a->mu);
    return s;
}

/* Merges c with its free neighbours and files the result in a bin. */
static bfc_chunk *coalesce(bfc_allocator *a, bfc_chunk *c) {
    bfc_chunk *n = c->next, *p = c->prev;
    if (n && !n->in_use) {
        bin_remove(a, n);
        c->size += n->size;
        c->next = n->next;
        if (n->next) n->next->prev = c;
        put_chunk(a, n);
    }
    if (p && !p->in_use) {
        bin_remove(a, p);
        p->size += c->size;
        p->next = c->next;
        if (c->next) c->next->prev = p;
        put_chunk(a, c);
        c = p;
    }
    bin_insert(a, c);
    return c;
}

kiln_status bfc_free(bfc_allocator *a, void *ptr) {
    if (!ptr) return KILN_STATUS_OK;
    pthread_mutex_lock(&a->mu);
    bfc_chunk *c = ptrmap_remove(&a->live, (uintptr_t)ptr);
    if (!c) {
        pthread_mutex_unlock(&a->mu);
        return ctx_error(a->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: free of %p, which is not a live allocation of this device "
                         "(freed twice, or allocated elsewhere)",
                         a->name, ptr);
    }
    if (a->trace) bfc_trace_free_locked(a, c);
    a->in_use -= c->size;
    a->n_live--;
    c->in_use = false;
    c->requested = 0;
    c = coalesce(a, c);
    if (a->mode == KILN_ALLOC_MODE_PLATFORM && wholly_free(c->region)) release_region(a, c->region);
    pthread_mutex_unlock(&a->mu);
    return KILN_STATUS_OK;
}

uint64_t bfc_trim(bfc_allocator *a) {
    pthread_mutex_lock(&a->mu);
    uint64_t n = trim_locked(a);
    pthread_mutex_unlock(&a->mu);
    return n;
}

size_t bfc_alloc_size(bfc_allocator *a, const void *ptr) {
    pthread_mutex_lock(&a->mu);
    const bfc_chunk *c = ptrmap_get(&a->live, (uintptr_t)ptr);
    size_t n = c ? c->size : 0;
    pthread_mutex_unlock(&a->mu);
    return n;
}

/* ---------------------------------------------------------- life cycle ---- */

kiln_status bfc_create(kiln_context *ctx, const bfc_region_source *src, const bfc_options *opt,
                       bfc_allocator **out) {
    *out = NULL;
    bfc_allocator *a = host_alloc(ctx, sizeof *a);
    if (!a) return ctx_oom(ctx, "device allocator", sizeof *a);
    memset(a, 0, sizeof *a);
    a->ctx = ctx;
    a->src = *src;
    a->mode = opt->mode == KILN_ALLOC_MODE_DEFAULT ? KILN_ALLOC_MODE_GROW : opt->mode;
    a->mem_fraction = opt->mem_fraction > 0 ? opt->mem_fraction : 0.75;
    a->limit = opt->limit;
    a->min_region =
        opt->min_region ? (opt->min_region + BFC_ALIGN - 1) & ~(BFC_ALIGN - 1) : 2 * MIB;
    a->next_id = 1;
    uint64_t avail; /* total memory does not change: read it once, not under the lock */
    if (src->memory_info(src->user, &a->device_total, &avail)) a->device_total = 0;
    snprintf(a->name, sizeof a->name, "%s", opt->name ? opt->name : "device");
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return KILN_STATUS_OK;
}

void bfc_destroy(bfc_allocator *a) {
    if (!a) return;
    if (a->trace) bfc_trace_stop(a);
    while (a->regions) {
        bfc_region *r = a->regions;
        a->regions = r->next;
        a->src.region_free(a->src.user, (void *)r->base, r->size);
        host_free(a->ctx, r, sizeof *r);
    }
    while (a->slabs) {
        bfc_slab *s = a->slabs;
        a->slabs = s->next;
        host_free(a->ctx, s, sizeof *s);
    }
    ptrmap_free(a->ctx, &a->live);
    pthread_mutex_destroy(&a->mu);
    host_free(a->ctx, a, sizeof *a);
}
