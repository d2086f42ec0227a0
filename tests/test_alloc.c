/* test_alloc.c — the device allocator (src/alloc): size classes, the pointer map, random
 * alloc/free sequences with a full invariant check (bfc_check) after every step in every
 * mode, region growth and back-off, preallocation and its failure message, platform mode,
 * limits and out-of-memory messages, trim, host-allocation failure, tracing and the public
 * kiln_device_* API.
 *
 * Most tests run the allocator over a fake backend whose "device memory" is a range of
 * addresses never dereferenced (the allocator must never touch device memory), with a
 * capacity that can refuse regions, so that gigabytes cost nothing and every refusal path
 * can be reached. */
#include "fault.h"
#include "rng.h"

#include "alloc/bfc_internal.h"

#include <stdint.h>
#include <unistd.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* ------------------------------------------------------------ fake device ---- */

#define FAKE_MAX 4096
typedef struct fake_dev {
    uint64_t total;       /* reported total memory */
    uint64_t capacity;    /* refuses a region that would take used beyond this */
    uint64_t report_free; /* reported free memory; 0: capacity - used */
    uint64_t used;
    uintptr_t next;
    int nlive, bad_frees;
    long allocs, frees;
    uintptr_t live_p[FAKE_MAX];
    size_t live_n[FAKE_MAX];
} fake_dev;

static kiln_status fake_info(void *st, uint64_t *total, uint64_t *free_b) {
    fake_dev *f = st;
    *total = f->total;
    *free_b = f->report_free ? f->report_free : f->capacity - f->used;
    return KILN_STATUS_OK;
}

static kiln_status fake_alloc(void *st, size_t size, size_t align, void **out) {
    fake_dev *f = st;
    if (f->used + size > f->capacity || f->nlive == FAKE_MAX || align > 4096)
        return KILN_STATUS_DEVICE_OOM;
    uintptr_t p = f->next;
    f->next += (size + 8191) & ~(uintptr_t)4095; /* a gap after each region */
    f->live_p[f->nlive] = p, f->live_n[f->nlive++] = size;
    f->used += size;
    f->allocs++;
    *out = (void *)p;
    return KILN_STATUS_OK;
}

static void fake_free(void *st, void *ptr, size_t size) {
    fake_dev *f = st;
    f->frees++;
    for (int i = 0; i < f->nlive; i++)
        if (f->live_p[i] == (uintptr_t)ptr) {
            if (f->live_n[i] != size) f->bad_frees++;
            f->used -= f->live_n[i];
            f->live_p[i] = f->live_p[--f->nlive], f->live_n[i] = f->live_n[f->nlive];
            return;
        }
    f->bad_frees++;
}

static bfc_region_source fake_source(fake_dev *f) {
    return (bfc_region_source){f, fake_alloc, fake_free, fake_info};
}

static void fake_init(fake_dev *f, uint64_t total) {
    memset(f, 0, sizeof *f);
    f->total = f->capacity = total;
    f->next = (uintptr_t)1 << 44;
}

static bfc_allocator *make(kiln_context *ctx, fake_dev *f, kiln_alloc_mode mode, uint64_t limit) {
    bfc_options o = {.mode = mode, .limit = limit, .name = "fake:0", .mem_fraction = 0.5};
    bfc_allocator *a = NULL;
    bfc_region_source src = fake_source(f);
    CHECK_OK(ctx, bfc_create(ctx, &src, &o, &a));
    return a;
}

/* A size from a mix that exercises exact classes, split classes and regions' edges. */
static size_t random_size(uint64_t *rng, size_t max) {
    switch (test_rng_next(rng) % 4) {
    case 0: return 1 + test_rng_next(rng) % 4096;
    case 1: return 1 + test_rng_next(rng) % (256 * KIB);
    case 2: return (size_t)1 << (8 + test_rng_next(rng) % 13);
    default: return 1 + test_rng_next(rng) % max;
    }
}

static bool check(bfc_allocator *a, kiln_context *ctx) {
    kiln_status s = bfc_check(a);
    CHECK_MSG(s == KILN_STATUS_OK, "%s", kiln_last_error(ctx));
    return s == KILN_STATUS_OK;
}

/* ------------------------------------------------------------------ tests ---- */

static void test_bins(void) {
    int prev = 0;
    for (size_t u = 1; u < 100000; u++) {
        int b = bfc_bin(u * 256);
        CHECK(b >= prev && b < BFC_NBINS);
        if (u < 64) CHECK(b == (int)u);
        prev = b;
    }
    CHECK(bfc_bin((SIZE_MAX >> 8) << 8) == BFC_NBINS - 1);
    /* One class spans at most 1/32 of its sizes. */
    for (int shift = 14; shift < 40; shift++) {
        size_t lo = (size_t)1 << shift, hi = lo + (lo >> 5) - 256;
        CHECK(bfc_bin(lo) == bfc_bin(hi) && bfc_bin(hi + 256) == bfc_bin(lo) + 1);
    }
}

static void test_ptrmap(void) {
    kiln_context *ctx = test_context();
    ptrmap m = {0};
    enum { N = 5000 };
    static uintptr_t keys[N];
    static bool in[N];
    for (int i = 0; i < N; i++) keys[i] = ((uintptr_t)(i + 1) * 256) ^ ((uintptr_t)(i % 7) << 30);
    uint64_t rng = test_seed(0x9E3779B97F4A7C15ull);
    for (int step = 0; step < 40000; step++) {
        int i = test_rng_int(&rng, N);
        if (in[i]) {
            CHECK(ptrmap_remove(&m, keys[i]) == &keys[i]);
            in[i] = false;
        } else {
            CHECK(ptrmap_reserve(ctx, &m, 1));
            ptrmap_put(&m, keys[i], &keys[i]);
            in[i] = true;
        }
    }
    size_t count = 0;
    for (int i = 0; i < N; i++) {
        CHECK(ptrmap_get(&m, keys[i]) == (in[i] ? &keys[i] : NULL));
        count += in[i];
    }
    CHECK(m.count == count && m.count <= m.cap / 2);
    CHECK(ptrmap_remove(&m, 12345 * 256) == NULL);
    ptrmap_free(ctx, &m);
    kiln_context_destroy(ctx);
}

/* Random allocs and frees with every invariant checked after every step. */
static void random_run(kiln_alloc_mode mode, uint64_t limit, uint64_t device, int steps) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, device);
    bfc_allocator *a = make(ctx, &f, mode, limit);
    enum { SLOTS = 300 };
    void *p[SLOTS] = {0};
    size_t n[SLOTS] = {0};
    int ooms = 0;
    uint64_t rng = test_seed(0x9E3779B97F4A7C15ull);
    for (int step = 0; step < steps && !test_failed; step++) {
        int i = test_rng_int(&rng, SLOTS);
        if (p[i]) {
            CHECK_OK(ctx, bfc_free(a, p[i]));
            p[i] = NULL;
        } else {
            n[i] = random_size(&rng, 4 * MIB);
            kiln_status s = bfc_alloc(a, n[i], "rand", &p[i]);
            if (s == KILN_STATUS_DEVICE_OOM) {
                ooms++;
                CHECK(!p[i]);
            } else
                CHECK_MSG(s == KILN_STATUS_OK && p[i] && (uintptr_t)p[i] % 256 == 0, "%s",
                          kiln_last_error(ctx));
            if (p[i]) CHECK(bfc_alloc_size(a, p[i]) == ((n[i] + 255) & ~(size_t)255));
        }
        if (!check(a, ctx)) break;
        if (step % 1000 == 999) bfc_trim(a);
    }
    kiln_memory_stats st;
    bfc_stats(a, &st);
    if (mode == KILN_ALLOC_MODE_PLATFORM) CHECK(st.bytes_reserved == st.bytes_in_use);
    for (int i = 0; i < SLOTS; i++)
        if (p[i]) CHECK_OK(ctx, bfc_free(a, p[i]));
    check(a, ctx);
    bfc_trim(a);
    bfc_stats(a, &st);
    CHECK(st.bytes_in_use == 0 && st.bytes_reserved == 0 && st.num_regions == 0);
    CHECK(f.nlive == 0 && f.bad_frees == 0);
    if (limit || mode == KILN_ALLOC_MODE_PREALLOCATE) CHECK(ooms > 0); /* the paths were taken */
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_random_grow(void) {
    random_run(KILN_ALLOC_MODE_GROW, 0, (uint64_t)1 << 40, 20000);
}
static void test_random_grow_limit(void) {
    random_run(KILN_ALLOC_MODE_GROW, 64 * MIB, 1ull << 40, 20000);
}
static void test_random_small_device(void) {
    random_run(KILN_ALLOC_MODE_GROW, 0, 96 * MIB, 20000);
}
static void test_random_preallocate(void) {
    random_run(KILN_ALLOC_MODE_PREALLOCATE, 0, 128 * MIB, 20000);
}
static void test_random_platform(void) {
    random_run(KILN_ALLOC_MODE_PLATFORM, 0, 1ull << 40, 5000);
}

static void test_grow_sequence(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 1ull << 40);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 0);
    kiln_memory_stats st;
    void *p[6];
    CHECK_OK(ctx, bfc_alloc(a, 1000, "a", &p[0])); /* the smallest region: 2 MiB */
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 2 * MIB && st.num_regions == 1 && st.bytes_in_use == 1024);
    CHECK_OK(ctx, bfc_alloc(a, 2 * MIB, "b", &p[1])); /* does not fit: another 2 MiB */
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 4 * MIB && st.num_regions == 2);
    CHECK_OK(ctx, bfc_alloc(a, 3 * MIB, "c", &p[2])); /* a region of the request's size */
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 7 * MIB && st.num_regions == 3);
    CHECK_OK(ctx, bfc_alloc(a, 121 * MIB, "d", &p[3]));
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 128 * MIB && st.largest_alloc_size == 121 * MIB);
    CHECK_OK(ctx, bfc_alloc(a, 2 * MIB, "e", &p[4])); /* a sixteenth of what is held */
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 136 * MIB && st.num_regions == 5);
    CHECK_OK(ctx, bfc_alloc(a, 6 * MIB, "f", &p[5])); /* fits in that region's rest */
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 136 * MIB);
    check(a, ctx);
    bfc_destroy(a);
    CHECK(f.nlive == 0 && f.bad_frees == 0);
    kiln_context_destroy(ctx);
}

/* The device refuses the region the schedule asks for: the allocator halves towards the
 * request. */
static void test_grow_backoff(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 66 * MIB);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 0);
    void *p[2];
    CHECK_OK(ctx, bfc_alloc(a, 64 * MIB, "a", &p[0]));
    CHECK_OK(ctx, bfc_alloc(a, 1 * MIB, "b", &p[1])); /* 4 MiB refused, 2 MiB taken */
    kiln_memory_stats st;
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 66 * MIB && st.num_regions == 2);
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

/* Before reporting OOM the allocator returns wholly free regions and tries again. */
static void test_trim_before_oom(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 8 * MIB);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 0);
    void *p, *q, *r;
    CHECK_OK(ctx, bfc_alloc(a, 2 * MIB, "a", &p)); /* region 2 MiB */
    CHECK_OK(ctx, bfc_alloc(a, 4 * MIB, "b", &q)); /* region 4 MiB; 2 MiB left */
    CHECK_OK(ctx, bfc_free(a, p));
    CHECK_OK(ctx, bfc_free(a, q));
    CHECK_OK(ctx, bfc_alloc(a, 7 * MIB, "big", &r)); /* only fits once both are returned */
    kiln_memory_stats st;
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 7 * MIB && st.num_regions == 1 && f.nlive == 1);
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static bool same_stats(const kiln_memory_stats *x, const kiln_memory_stats *y) {
    return !memcmp(x, y, sizeof *x);
}

/* A preallocated pool's size is the limit the OOM message reports (not "limit none"). */
static void test_preallocate_oom_message(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 16 * MIB); /* mem_fraction 0.5: an 8 MiB pool */
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_PREALLOCATE, 0);
    void *w, *x = (void *)1;
    CHECK_OK(ctx, bfc_alloc(a, 6 * MIB, "weights", &w));
    CHECK_STATUS(bfc_alloc(a, 4 * MIB, "grads", &x), KILN_STATUS_DEVICE_OOM);
    CHECK(x == NULL);
    const char *m = kiln_last_error(ctx);
    CHECK_CONTAINS(m, "\"grads\"");
    CHECK_CONTAINS(m, "reserved 8.00 MiB in 1 region; limit 8.00 MiB (the preallocated pool)");
    CHECK(!strstr(m, "limit none"));
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_limit_oom_message(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 1ull << 40);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 8 * MIB);
    void *w, *act, *tmp, *x = (void *)1;
    CHECK_OK(ctx, bfc_alloc(a, 4 * MIB, "weights", &w));
    CHECK_OK(ctx, bfc_alloc(a, 2 * MIB, "activations/layer1", &act));
    CHECK_OK(ctx, bfc_alloc(a, 1000, "tmp", &tmp));
    kiln_memory_stats before, after;
    bfc_stats(a, &before);
    CHECK_STATUS(bfc_alloc(a, 3 * MIB - 100, "matmul.out", &x), KILN_STATUS_DEVICE_OOM);
    CHECK(x == NULL);
    const char *m = kiln_last_error(ctx);
    CHECK_CONTAINS(m, "fake:0: out of memory");
    CHECK_CONTAINS(m, "cannot allocate 3145628 bytes (rounded to 3145728, 3.00 MiB)");
    CHECK_CONTAINS(m, "\"matmul.out\"");
    CHECK_CONTAINS(m, "limit");
    CHECK_CONTAINS(m, "in use 6.00 MiB in 3 allocations");
    CHECK_CONTAINS(m, "reserved 8.00 MiB in 3 regions; limit 8.00 MiB");
    CHECK_CONTAINS(m, "largest free block");
    CHECK_CONTAINS(m, "fragmentation");
    CHECK_CONTAINS(m, "4.00 MiB  \"weights\"");
    CHECK_CONTAINS(m, "2.00 MiB  \"activations/layer1\"");
    CHECK_CONTAINS(m, "KILN_MEMORY_LIMIT");
    bfc_stats(a, &after);
    CHECK(same_stats(&before, &after)); /* exactly as before */
    check(a, ctx);
    CHECK_OK(ctx, bfc_alloc(a, 1 * MIB, "fits", &x)); /* and fully usable */
    CHECK_STATUS(bfc_alloc(a, 9 * MIB, "too big", &x), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(ctx), "memory limit");
    CHECK_STATUS(bfc_alloc(a, SIZE_MAX, "huge", &x), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(ctx), "huge");
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

/* The device itself refuses (no limit): the message says so, nothing else changes. */
static void test_device_oom(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 6 * MIB);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 0);
    void *p, *q = NULL;
    CHECK_OK(ctx, bfc_alloc(a, 1 * MIB, "kept", &p));
    kiln_memory_stats before, after;
    bfc_stats(a, &before);
    CHECK_STATUS(bfc_alloc(a, 5 * MIB, "big", &q), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(ctx), "device refused");
    CHECK_CONTAINS(kiln_last_error(ctx), "\"kept\"");
    CHECK_CONTAINS(kiln_last_error(ctx), "limit none");
    CHECK_CONTAINS(kiln_last_error(ctx), "the device has 4.00 MiB free of 6.00 MiB");
    bfc_stats(a, &after);
    CHECK(same_stats(&before, &after) && f.nlive == 1);
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_preallocate(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 100 * MIB);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_PREALLOCATE, 0); /* fraction 0.5 */
    kiln_memory_stats st;
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 0 && st.mode == KILN_ALLOC_MODE_PREALLOCATE); /* at first use */
    void *p, *q = NULL;
    CHECK_OK(ctx, bfc_alloc(a, 1000, "x", &p));
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 50 * MIB && st.num_regions == 1 && st.bytes_limit == 50 * MIB);
    CHECK_STATUS(bfc_alloc(a, 50 * MIB, "y", &q), KILN_STATUS_DEVICE_OOM); /* never grows */
    CHECK_CONTAINS(kiln_last_error(ctx), "preallocated pool");
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 50 * MIB && f.nlive == 1);
    check(a, ctx);
    CHECK_OK(ctx, bfc_free(a, p));
    CHECK(bfc_trim(a) == 50 * MIB);             /* the pool can be given back ... */
    CHECK_OK(ctx, bfc_alloc(a, 1000, "x", &p)); /* ... and is made again when needed */
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 50 * MIB);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_preallocate_fails(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 100 * MIB);
    f.report_free = 10 * MIB; /* another process holds the rest */
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_PREALLOCATE, 0);
    void *p = (void *)1;
    CHECK_STATUS(bfc_alloc(a, 1000, "x", &p), KILN_STATUS_DEVICE_OOM);
    const char *m = kiln_last_error(ctx);
    CHECK_CONTAINS(m, "cannot preallocate 50.0 MiB (50% of 100.0 MiB)");
    CHECK_CONTAINS(m, "only 10.0 MiB is free");
    CHECK_CONTAINS(m, "KILN_MEM_FRACTION");
    CHECK(p == NULL && f.nlive == 0);
    check(a, ctx);
    f.report_free = 0; /* the other process is gone */
    CHECK_OK(ctx, bfc_alloc(a, 1000, "x", &p));
    /* The device refuses although it said it had room. */
    bfc_destroy(a);
    fake_init(&f, 100 * MIB);
    f.capacity = 20 * MIB, f.report_free = 60 * MIB;
    a = make(ctx, &f, KILN_ALLOC_MODE_PREALLOCATE, 0);
    CHECK_STATUS(bfc_alloc(a, 1000, "x", &p), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(ctx), "cannot preallocate");
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_preallocate_limit(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 100 * MIB);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_PREALLOCATE, 8 * MIB);
    void *p;
    CHECK_OK(ctx, bfc_alloc(a, 1000, "x", &p));
    kiln_memory_stats st;
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 8 * MIB && st.bytes_limit == 8 * MIB);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_platform(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 1ull << 40);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_PLATFORM, 0);
    void *p[3];
    CHECK_OK(ctx, bfc_alloc(a, 100, "a", &p[0]));
    CHECK_OK(ctx, bfc_alloc(a, 3 * MIB, "b", &p[1]));
    CHECK_OK(ctx, bfc_alloc(a, 5000, "c", &p[2]));
    kiln_memory_stats st;
    bfc_stats(a, &st);
    CHECK(f.nlive == 3 && st.num_regions == 3 && st.bytes_reserved == st.bytes_in_use);
    CHECK(st.bytes_in_use == 256 + 3 * MIB + 5120);
    CHECK_OK(ctx, bfc_free(a, p[1]));
    CHECK(f.nlive == 2 && f.used == 256 + 5120); /* returned at once */
    check(a, ctx);
    CHECK_OK(ctx, bfc_free(a, p[0]));
    CHECK_OK(ctx, bfc_free(a, p[2]));
    CHECK(f.nlive == 0);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_trim(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 1ull << 40);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 0);
    void *p[3];
    CHECK_OK(ctx, bfc_alloc(a, 1 * MIB, "a", &p[0])); /* region 2 MiB */
    CHECK_OK(ctx, bfc_alloc(a, 3 * MIB, "b", &p[1])); /* region 3 MiB */
    CHECK_OK(ctx, bfc_alloc(a, 7 * MIB, "c", &p[2])); /* region 7 MiB */
    CHECK(bfc_trim(a) == 0);                          /* nothing wholly free */
    CHECK_OK(ctx, bfc_free(a, p[1]));
    CHECK_OK(ctx, bfc_free(a, p[2]));
    CHECK(bfc_trim(a) == 10 * MIB && f.nlive == 1);
    kiln_memory_stats st;
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 2 * MIB && st.peak_bytes_reserved == 12 * MIB);
    bfc_reset_peak(a);
    bfc_stats(a, &st);
    CHECK(st.peak_bytes_reserved == 2 * MIB && st.peak_bytes_in_use == 1 * MIB);
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_fragmentation_stats(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 1ull << 40);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 2 * MIB);
    void *p[4];
    for (int i = 0; i < 4; i++) CHECK_OK(ctx, bfc_alloc(a, 512 * KIB, "q", &p[i]));
    kiln_memory_stats st;
    bfc_stats(a, &st);
    CHECK(st.bytes_reserved == 2 * MIB && st.largest_free_block_bytes == 0);
    CHECK(st.fragmentation == 0);
    CHECK_OK(ctx, bfc_free(a, p[0]));
    CHECK_OK(ctx, bfc_free(a, p[2]));
    bfc_stats(a, &st); /* two free 512 KiB holes that cannot merge */
    CHECK(st.largest_free_block_bytes == 512 * KIB);
    CHECK_NEAR(st.fragmentation, 0.5, 1e-12);
    CHECK(st.num_allocs == 4 && st.num_live_allocs == 2);
    void *big = (void *)1; /* 1 MiB is free, but not in one piece */
    CHECK_STATUS(bfc_alloc(a, 1 * MIB, "big", &big), KILN_STATUS_DEVICE_OOM);
    CHECK_CONTAINS(kiln_last_error(ctx), "fragmentation 0.50");
    CHECK_CONTAINS(kiln_last_error(ctx), "1.00 MiB is free, but in pieces of at most 512.0 KiB");
    CHECK_OK(ctx, bfc_free(a, p[1])); /* merges all three */
    bfc_stats(a, &st);
    CHECK(st.largest_free_block_bytes == 1536 * KIB && st.fragmentation == 0);
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

static void test_bad_free(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 1ull << 40);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 0);
    void *p;
    CHECK_OK(ctx, bfc_alloc(a, 1000, "a", &p));
    CHECK_STATUS(bfc_free(a, (char *)p + 256), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "not a live allocation");
    CHECK_OK(ctx, bfc_free(a, p));
    CHECK_STATUS(bfc_free(a, p), KILN_STATUS_INVALID_ARGUMENT); /* twice */
    CHECK_OK(ctx, bfc_free(a, NULL));
    CHECK_OK(ctx, bfc_alloc(a, 0, "zero", &p));
    CHECK(p == NULL);
    check(a, ctx);
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

/* What the host-OOM scenario works on: a context kept across the runs and its device. */
typedef struct oom_case {
    kiln_context *ctx;
    fake_dev *dev;
} oom_case;

/* Creates an allocator and makes 400 allocations with the fault armed; a failure must
 * leave the allocator's figures as they were and the allocator still valid. */
static kiln_status oom_sequence(fault_run *r) {
    oom_case *oc = (oom_case *)r->user;
    static void *p[400];
    fake_init(oc->dev, 1ull << 40);
    bfc_allocator *a = NULL;
    bfc_region_source src = fake_source(oc->dev);
    fault_arm(r);
    kiln_status s = fault_note(r, oc->ctx, bfc_create(oc->ctx, &src, &(bfc_options){0}, &a));
    if (s) {
        CHECK(!a);
        return s;
    }
    int k = 0;
    for (; k < 400; k++) {
        kiln_memory_stats before, after;
        bfc_stats(a, &before);
        s = fault_note(r, oc->ctx, bfc_alloc(a, (size_t)(k % 7 + 1) * 3000, "t", &p[k]));
        if (s) {
            CHECK(!p[k]);
            bfc_stats(a, &after);
            CHECK(same_stats(&before, &after));
            break;
        }
    }
    fault_disarm(r);
    check(a, oc->ctx);
    for (int i = 0; i < k; i += 2) CHECK_OK(oc->ctx, bfc_free(a, p[i]));
    check(a, oc->ctx);
    bfc_destroy(a);
    CHECK(oc->dev->nlive == 0);
    return s;
}

/* Host allocation n of a sequence fails, for every n: a clean KILN_STATUS_HOST_OOM, the
 * allocator unchanged and still valid, nothing leaked. */
static void test_host_oom(void) {
    test_alloc t = {0};
    kiln_host_allocator h = test_allocator(&t);
    kiln_context_options o = {.host_allocator = &h, .ignore_environment = true, .compile_tiers = 1};
    static fake_dev f;
    oom_case oc = {NULL, &f};
    CHECK_OK(oc.ctx, kiln_context_create(&o, &oc.ctx, NULL, 0));
    fault_sweep sw = {
        .name = "bfc host OOM", .run = oom_sequence, .user = &oc, .max_runs = 200, .armed = &t};
    CHECK(fault_sweep_run(&sw) > 0);
    kiln_context_destroy(oc.ctx);
    CHECK(t.live == 0 && t.bad_size == 0);
}

/* The checker itself: each kind of damage is reported (then repaired by hand). */
static void test_check_catches(void) {
    kiln_context *ctx = test_context();
    static fake_dev f;
    fake_init(&f, 1ull << 40);
    bfc_allocator *a = make(ctx, &f, KILN_ALLOC_MODE_GROW, 0);
    void *p[3];
    for (int i = 0; i < 3; i++) CHECK_OK(ctx, bfc_alloc(a, 4096, "x", &p[i]));
    CHECK_OK(ctx, bfc_free(a, p[1]));
    CHECK_OK(ctx, bfc_check(a));
    a->in_use += 256; /* a counter that disagrees with the chunks */
    CHECK_STATUS(bfc_check(a), KILN_STATUS_INTERNAL);
    CHECK_CONTAINS(kiln_last_error(ctx), "recount");
    a->in_use -= 256;
    bfc_chunk *c = ptrmap_get(&a->live, (uintptr_t)p[0]);
    c->size += 256; /* chunks that overlap their neighbour */
    CHECK_STATUS(bfc_check(a), KILN_STATUS_INTERNAL);
    c->size -= 256;
    bfc_chunk *hole = c->next; /* the free chunk of p[1], in a bin */
    int b = bfc_bin(hole->size);
    a->bins[b] = NULL; /* a free chunk missing from its bin */
    CHECK_STATUS(bfc_check(a), KILN_STATUS_INTERNAL);
    CHECK_CONTAINS(kiln_last_error(ctx), "bitmap");
    a->bins[b] = hole;
    c->in_use = false; /* two free neighbours, and a chunk in use missing from the map */
    CHECK_STATUS(bfc_check(a), KILN_STATUS_INTERNAL);
    c->in_use = true;
    CHECK_OK(ctx, bfc_check(a));
    bfc_destroy(a);
    kiln_context_destroy(ctx);
}

/* ----------------------------------------------------- public API, CPU ---- */

static void test_public_api(void) {
    kiln_context *ctx = test_context();
    CHECK(kiln_device_count(ctx) >= 1);
    CHECK(!strcmp(kiln_device_name(ctx, 0), "cpu:0"));
    CHECK(kiln_device_name(ctx, 99) == NULL);
    kiln_memory_stats st;
    CHECK_OK(ctx, kiln_device_get_memory_stats(ctx, 0, &st));
    CHECK(st.mode == KILN_ALLOC_MODE_GROW && st.bytes_reserved == 0 && st.bytes_limit > 0);
    void *p = NULL, *q = NULL;
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 3 * MIB + 1, "buffer", &p));
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 100, "small", &q));
    CHECK(p && q && (uintptr_t)p % 256 == 0 && (uintptr_t)q % 256 == 0);
    memset(p, 1, 3 * MIB + 1); /* CPU device memory is host memory */
    memset(q, 2, 100);
    CHECK(((unsigned char *)p)[3 * MIB] == 1);
    CHECK_OK(ctx, kiln_device_get_memory_stats(ctx, 0, &st));
    CHECK(st.bytes_in_use == 3 * MIB + 512 && st.num_live_allocs == 2);
    char *sum = kiln_device_memory_report(ctx, 0);
    CHECK_CONTAINS(sum, "cpu:0: grow allocator");
    CHECK_CONTAINS(sum, "\"buffer\"");
    kiln_string_free(ctx, sum);
    CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
    CHECK_OK(ctx, kiln_device_free(ctx, 0, q));
    CHECK_STATUS(kiln_device_free(ctx, 0, q), KILN_STATUS_INVALID_ARGUMENT);
    uint64_t released = 0;
    CHECK_OK(ctx, kiln_device_trim(ctx, 0, &released));
    CHECK(released > 0);
    CHECK_OK(ctx, kiln_device_reset_peak(ctx, 0));
    CHECK_OK(ctx, kiln_device_get_memory_stats(ctx, 0, &st));
    CHECK(st.bytes_reserved == 0 && st.peak_bytes_reserved == 0 && st.num_allocs == 2);
    CHECK_STATUS(kiln_device_alloc(ctx, 7, 10, "x", &p), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "device 7 does not exist");
    CHECK_STATUS(kiln_device_get_memory_stats(ctx, -1, &st), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_device_alloc(ctx, 0, 10, "x", NULL), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(kiln_device_alloc(NULL, 0, 10, "x", &p), KILN_STATUS_INVALID_ARGUMENT);
    /* Live allocations at destroy are released with the device. */
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 1000, "leaked on purpose", &p));
    kiln_context_destroy(ctx);
}

/* An array's name reaches the OOM message (for the request and among the live
 * allocations) and the memory report. */
static void test_named_arrays_in_reports(void) {
    kiln_context_options o = {.ignore_environment = true, .memory_limit = 16 * MIB};
    kiln_context *ctx = NULL;
    CHECK_OK(ctx, kiln_context_create(&o, &ctx, NULL, 0));
    kiln_array *emb = NULL, *act = (kiln_array *)1;
    int64_t small[1] = {2 * MIB}, big[1] = {3 * MIB}; /* f32: 8 MiB, then 12 MiB */
    CHECK_OK(ctx, kiln_array_create_named(ctx, "params/embedding", 0, KILN_DTYPE_F32, 1, small,
                                          NULL, &emb));
    CHECK_STATUS(
        kiln_array_create_named(ctx, "act/layer0/mlp_up", 0, KILN_DTYPE_F32, 1, big, NULL, &act),
        KILN_STATUS_DEVICE_OOM);
    const char *m = kiln_last_error(ctx);
    CHECK_CONTAINS(m, "for \"act/layer0/mlp_up\"");
    CHECK_CONTAINS(m, "8.00 MiB  \"params/embedding\"");
    char *report = kiln_device_memory_report(ctx, 0);
    CHECK_CONTAINS(report, "\"params/embedding\"");
    kiln_string_free(ctx, report);
    /* A name longer than the allocator keeps is cut, not refused; none or "" is an error. */
    kiln_array *b = NULL;
    CHECK_OK(ctx, kiln_array_create_named(ctx, "a/very/long/name/of/a/parameter", 0, KILN_DTYPE_F32,
                                          1, small, NULL, &b));
    kiln_array_destroy(b);
    CHECK_STATUS(kiln_array_create_named(ctx, "", 0, KILN_DTYPE_F32, 1, small, NULL, &b),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "kiln_array_create_named: the name is empty");
    CHECK_STATUS(kiln_array_create_named(ctx, NULL, 0, KILN_DTYPE_F32, 1, small, NULL, &b),
                 KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "name is NULL");
    kiln_array_destroy(emb);
    kiln_context_destroy(ctx);
}

static void test_modes_and_limit_options(void) {
    kiln_alloc_mode modes[] = {KILN_ALLOC_MODE_GROW, KILN_ALLOC_MODE_PREALLOCATE,
                               KILN_ALLOC_MODE_PLATFORM};
    for (int i = 0; i < 3; i++) {
        kiln_context_options o = {
            .alloc_mode = modes[i], .ignore_environment = true, .memory_limit = 16 * MIB};
        kiln_context *ctx = NULL;
        CHECK_OK(ctx, kiln_context_create(&o, &ctx, NULL, 0));
        void *p = NULL, *q = NULL;
        CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 4 * MIB, "a", &p));
        memset(p, 0, 4 * MIB);
        CHECK_STATUS(kiln_device_alloc(ctx, 0, 15 * MIB, "b", &q), KILN_STATUS_DEVICE_OOM);
        CHECK_CONTAINS(kiln_last_error(ctx), "limit 16.0 MiB");
        kiln_memory_stats st;
        CHECK_OK(ctx, kiln_device_get_memory_stats(ctx, 0, &st));
        CHECK(st.mode == modes[i] && st.bytes_limit == 16 * MIB);
        CHECK(st.bytes_reserved == (modes[i] == KILN_ALLOC_MODE_GROW          ? 4 * MIB
                                    : modes[i] == KILN_ALLOC_MODE_PREALLOCATE ? 16 * MIB
                                                                              : 4 * MIB));
        CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
        kiln_context_destroy(ctx);
    }
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_trace(void) {
    kiln_context *ctx = test_context();
    char path[64];
    snprintf(path, sizeof path, "/tmp/kiln_test_trace_%d.txt", (int)getpid());
    void *before, *p, *q;
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 5000, "made before", &before));
    CHECK_OK(ctx, kiln_device_trace_start(ctx, 0, path));
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 1000, "conv1", &p));
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 70000, NULL, &q));
    CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
    CHECK_OK(ctx, kiln_device_free(ctx, 0, before));
    CHECK_OK(ctx, kiln_device_trace_stop(ctx, 0));
    CHECK_OK(ctx, kiln_device_free(ctx, 0, q)); /* not recorded */
    const char *t = read_file(path);
    CHECK_CONTAINS(t, "# kiln alloc trace v1 device=cpu:0 mode=grow\n");
    CHECK_CONTAINS(t, "a 1 5000 0 made_before\n");
    CHECK_CONTAINS(t, "a 2 1000 ");
    CHECK_CONTAINS(t, " conv1\na 3 70000 ");
    CHECK_CONTAINS(t, "\nf 2 ");
    CHECK_CONTAINS(t, "\nf 1 ");
    CHECK(t && !strstr(t, "f 3 "));
    unlink(path);
    CHECK_STATUS(kiln_device_trace_start(ctx, 0, "/nonexistent/dir/trace"), KILN_STATUS_IO);
    CHECK_CONTAINS(kiln_last_error(ctx), "/nonexistent/dir/trace");
    kiln_context_destroy(ctx);
}

/* A trace never writes over anything but a previous trace: a symbolic link is refused
 * (even one to a previous trace), as is an existing file that is not a trace (left as it
 * was) or not a regular file; a previous trace is replaced by the new one. */
static void test_trace_refuses_other_files(void) {
    kiln_context *ctx = test_context();
    char dir[] = "/tmp/kiln-test-alloc-trace-XXXXXX", path[96], link[96];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "%s/precious.txt", dir);
    snprintf(link, sizeof link, "%s/link.txt", dir);
    static const char precious[] = "root:x:0:0:root:/root:/bin/sh\n";
    FILE *f = fopen(path, "w");
    if (f) fputs(precious, f), fclose(f);
    CHECK_STATUS(kiln_device_trace_start(ctx, 0, path), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), path);
    CHECK_CONTAINS(kiln_last_error(ctx), "is not a kiln allocation trace");
    const char *t = read_file(path);
    CHECK(t && !strcmp(t, precious)); /* untouched */
    CHECK(symlink(path, link) == 0);
    CHECK_STATUS(kiln_device_trace_start(ctx, 0, link), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "is a symbolic link");
    t = read_file(path);
    CHECK(t && !strcmp(t, precious));
    CHECK_STATUS(kiln_device_trace_start(ctx, 0, dir), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_CONTAINS(kiln_last_error(ctx), "is not a regular file");
    /* a previous trace (here one whose context is gone) is replaced */
    unlink(link), unlink(path);
    void *p;
    CHECK_OK(ctx, kiln_device_trace_start(ctx, 0, path));
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 4321, "first", &p));
    CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
    CHECK_OK(ctx, kiln_device_trace_stop(ctx, 0));
    CHECK(symlink(path, link) == 0); /* a link to a trace is still a link */
    CHECK_STATUS(kiln_device_trace_start(ctx, 0, link), KILN_STATUS_INVALID_ARGUMENT);
    CHECK_OK(ctx, kiln_device_trace_start(ctx, 0, path));
    CHECK_OK(ctx, kiln_device_alloc(ctx, 0, 1234, "second", &p));
    CHECK_OK(ctx, kiln_device_free(ctx, 0, p));
    CHECK_OK(ctx, kiln_device_trace_stop(ctx, 0));
    t = read_file(path);
    CHECK_CONTAINS(t, "# kiln alloc trace v1 ");
    CHECK_CONTAINS(t, " 1234 ");
    CHECK_CONTAINS(t, " second\n");
    CHECK(t && !strstr(t, "first") && !strstr(t + 1, "# kiln")); /* replaced, not appended */
    unlink(link), unlink(path);
    rmdir(dir);
    kiln_context_destroy(ctx);
}

int main(void) {
    RUN(test_bins);
    RUN(test_preallocate_oom_message);
    RUN(test_named_arrays_in_reports);
    RUN(test_ptrmap);
    RUN(test_random_grow);
    RUN(test_random_grow_limit);
    RUN(test_random_small_device);
    RUN(test_random_preallocate);
    RUN(test_random_platform);
    RUN(test_grow_sequence);
    RUN(test_grow_backoff);
    RUN(test_trim_before_oom);
    RUN(test_limit_oom_message);
    RUN(test_device_oom);
    RUN(test_preallocate);
    RUN(test_preallocate_fails);
    RUN(test_preallocate_limit);
    RUN(test_platform);
    RUN(test_trim);
    RUN(test_fragmentation_stats);
    RUN(test_bad_free);
    RUN(test_host_oom);
    RUN(test_check_catches);
    RUN(test_public_api);
    RUN(test_modes_and_limit_options);
    RUN(test_trace);
    RUN(test_trace_refuses_other_files);
    return test_summary("test_alloc");
}
