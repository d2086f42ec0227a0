/* test_alloc_stress.c — the device allocator under several threads (run under
 * ThreadSanitizer by `make test-tsan`). Threads allocate, fill, verify and free buffers on
 * one device, hand buffers to each other so that one thread frees what another made, and
 * read stats, trim and format summaries meanwhile; a memory limit makes out-of-memory and
 * the trim-and-retry path happen concurrently. Each buffer carries its owner's pattern,
 * checked before it is freed, so two live buffers that overlap are caught. */
#include "rng.h"

#include "backend/device.h"

#include <pthread.h>

#define THREADS 4
#define SLOTS   64
#define STEPS   20000
#define HANDOFF 16

typedef struct shared {
    kiln_context *ctx;
    pthread_mutex_t mu; /* guards the hand-off slots */
    void *handoff[HANDOFF];
    size_t handoff_n[HANDOFF];
    unsigned char handoff_pat[HANDOFF];
    int errors, ooms;
} shared;

typedef struct worker {
    shared *sh;
    int id;
    uint64_t rng;
    int errors, ooms;
} worker;

static uint64_t next(worker *w) {
    return test_rng_next(&w->rng);
}

/* Writes the pattern every 64 bytes. Buffers are 256-aligned, so every buffer writes the
 * same absolute addresses (multiples of 64): two live buffers that overlap by 64 bytes or
 * more write a common byte, and one of them finds the other's pattern. Filling them whole
 * would cost far more under ThreadSanitizer. */
static void fill(void *p, size_t n, unsigned char pat) {
    unsigned char *c = p;
    for (size_t i = 0; i < n; i += 64) c[i] = pat;
}

static bool intact(const void *p, size_t n, unsigned char pat) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i += 64)
        if (c[i] != pat) return false;
    return true;
}

static void release(worker *w, void *p, size_t n, unsigned char pat) {
    if (!intact(p, n, pat)) w->errors++;
    if (kiln_device_free(w->sh->ctx, 0, p) != KILN_STATUS_OK) w->errors++;
}

/* Swaps a buffer with the hand-off table: the one taken is freed by this thread. */
static void hand_off(worker *w, void **p, size_t *n, unsigned char *pat) {
    shared *sh = w->sh;
    int k = (int)(next(w) % HANDOFF);
    pthread_mutex_lock(&sh->mu);
    void *tp = sh->handoff[k];
    size_t tn = sh->handoff_n[k];
    unsigned char tpat = sh->handoff_pat[k];
    sh->handoff[k] = *p, sh->handoff_n[k] = *n, sh->handoff_pat[k] = *pat;
    pthread_mutex_unlock(&sh->mu);
    *p = NULL;
    if (tp) release(w, tp, tn, tpat);
}

static void *work(void *arg) {
    worker *w = arg;
    void *p[SLOTS] = {0};
    size_t n[SLOTS] = {0};
    unsigned char pat[SLOTS] = {0};
    for (int step = 0; step < STEPS; step++) {
        int i = (int)(next(w) % SLOTS);
        if (p[i]) {
            if (next(w) % 8 == 0)
                hand_off(w, &p[i], &n[i], &pat[i]);
            else
                release(w, p[i], n[i], pat[i]), p[i] = NULL;
            continue;
        }
        n[i] = 1 + next(w) % (next(w) % 16 == 0 ? 1 << 20 : 1 << 13);
        kiln_status s = kiln_device_alloc(w->sh->ctx, 0, n[i], "stress", &p[i]);
        if (s == KILN_STATUS_DEVICE_OOM) {
            w->ooms++;
            continue;
        }
        if (s != KILN_STATUS_OK || !p[i]) {
            w->errors++;
            continue;
        }
        pat[i] = (unsigned char)(w->id * 50 + step % 50 + 1);
        fill(p[i], n[i], pat[i]);
        if (step % 1000 == 0) {
            kiln_memory_stats st;
            if (kiln_device_get_memory_stats(w->sh->ctx, 0, &st) ||
                st.bytes_in_use > st.bytes_reserved)
                w->errors++;
            if (w->id == 0) kiln_device_trim(w->sh->ctx, 0, NULL);
            if (w->id == 1) kiln_string_free(w->sh->ctx, kiln_device_memory_report(w->sh->ctx, 0));
        }
    }
    for (int i = 0; i < SLOTS; i++)
        if (p[i]) release(w, p[i], n[i], pat[i]);
    return NULL;
}

static void stress(kiln_alloc_mode mode) {
    kiln_context_options o = {
        .alloc_mode = mode, .memory_limit = 10u << 20, .ignore_environment = true};
    shared sh = {0};
    CHECK_OK(sh.ctx, kiln_context_create(&o, &sh.ctx, NULL, 0));
    pthread_mutex_init(&sh.mu, NULL);
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){
            .sh = &sh, .id = i, .rng = test_seed(0x9E3779B97F4A7C15ull) * (uint64_t)(i + 1)};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    int errors = 0, ooms = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        errors += w[i].errors, ooms += w[i].ooms;
    }
    for (int k = 0; k < HANDOFF; k++)
        if (sh.handoff[k]) {
            CHECK(intact(sh.handoff[k], sh.handoff_n[k], sh.handoff_pat[k]));
            CHECK_OK(sh.ctx, kiln_device_free(sh.ctx, 0, sh.handoff[k]));
        }
    CHECK_MSG(errors == 0, "%d errors: %s", errors, kiln_last_error(sh.ctx));
    CHECK_OK(sh.ctx, bfc_check(sh.ctx->devices[0].alloc));
    kiln_memory_stats st;
    CHECK_OK(sh.ctx, kiln_device_get_memory_stats(sh.ctx, 0, &st));
    CHECK(st.bytes_in_use == 0 && st.num_live_allocs == 0 && st.peak_bytes_reserved <= 10u << 20);
    printf("mode %d: %llu allocations, %d out of memory, peak in use %llu\n", (int)mode,
           (unsigned long long)st.num_allocs, ooms, (unsigned long long)st.peak_bytes_in_use);
    pthread_mutex_destroy(&sh.mu);
    kiln_context_destroy(sh.ctx);
}

static void test_stress_grow(void) {
    stress(KILN_ALLOC_MODE_GROW);
}
static void test_stress_preallocate(void) {
    stress(KILN_ALLOC_MODE_PREALLOCATE);
}
static void test_stress_platform(void) {
    stress(KILN_ALLOC_MODE_PLATFORM);
}

int main(void) {
    RUN(test_stress_grow);
    RUN(test_stress_preallocate);
    RUN(test_stress_platform);
    return test_summary("test_alloc_stress");
}
