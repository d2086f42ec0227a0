/* fault.h — host-allocation fault injection, shared by every test that sweeps it: a
 * counting host allocator that can fail its Nth allocation, and the sweep that fails each
 * allocation of a scenario in turn.
 *
 * The allocator puts a header with the size in front of every block, so a free or realloc
 * that gives back a different size than was allocated is counted (bad_size), as are the
 * blocks and bytes still live and the peak of live bytes.
 *
 * The sweep's contract, for n = 1, 2, ...: fail the n-th allocation and run the scenario.
 * When the scenario never asked for an n-th allocation the run was complete: it must
 * succeed, and the sweep stops there. Otherwise it must end in KILN_STATUS_HOST_OOM with a
 * non-empty message. Either way it must leave nothing allocated and every size given back
 * right. Each broken rule is a failed CHECK naming the sweep and n. */
#ifndef KILN_TEST_FAULT_H
#define KILN_TEST_FAULT_H

#include "test.h"

#include <stdbool.h>

/* ------------------------------------------------ counting/failing allocator ---- */

typedef struct test_alloc {
    long count;   /* allocations asked for (alloc + realloc), failed ones included */
    long fail_at; /* fail the fail_at-th one (1-based); 0: never */
    long live;    /* allocations not yet freed */
    size_t bytes; /* bytes not yet freed */
    size_t peak;  /* the most bytes live at once */
    int bad_size; /* a free/realloc gave a size that differs from the allocation's */
} test_alloc;

/* Each block carries a header with its size so we can check the sizes kiln passes back. */
typedef struct {
    size_t size;
    size_t pad;
} test_hdr;

static void *test_alloc_fn(void *user, size_t size) {
    test_alloc *t = (test_alloc *)user;
    if (++t->count == t->fail_at) return NULL;
    test_hdr *h = (test_hdr *)malloc(sizeof(test_hdr) + size);
    if (!h) return NULL;
    h->size = size;
    t->live++;
    t->bytes += size;
    if (t->bytes > t->peak) t->peak = t->bytes;
    return h + 1;
}
static void test_free_fn(void *user, void *p, size_t size) {
    test_alloc *t = (test_alloc *)user;
    if (!p) return;
    test_hdr *h = (test_hdr *)p - 1;
    if (h->size != size) t->bad_size++;
    t->live--;
    t->bytes -= h->size;
    free(h);
}
static void *test_realloc_fn(void *user, void *p, size_t old_size, size_t new_size) {
    test_alloc *t = (test_alloc *)user;
    test_hdr *h = (test_hdr *)p - 1;
    if (h->size != old_size) t->bad_size++;
    if (++t->count == t->fail_at) return NULL;
    test_hdr *n = (test_hdr *)realloc(h, sizeof(test_hdr) + new_size);
    if (!n) return NULL;
    t->bytes += new_size - n->size;
    if (t->bytes > t->peak) t->peak = t->bytes;
    n->size = new_size;
    return n + 1;
}

static inline kiln_host_allocator test_allocator(test_alloc *t) {
    kiln_host_allocator a = {test_alloc_fn, test_realloc_fn, test_free_fn, t};
    return a;
}

/* ------------------------------------------------------------------ sweep ---- */

/* One run of a sweep, handed to the scenario. */
typedef struct fault_run {
    long n;                   /* the allocation that fails, 1-based */
    test_alloc *alloc;        /* the counting allocator of this run */
    kiln_host_allocator host; /* over alloc: for kiln_context_options.host_allocator */
    void *user;               /* fault_sweep.user */
    char message[1024];       /* the scenario puts its failure's message here */
    long armed_at;            /* armed sweeps: alloc->count when fault_arm was called */
    bool reached;             /* armed sweeps: the n-th allocation was asked for */
} fault_run;

/* Runs the scenario once and frees everything it made; returns its first failure. */
typedef kiln_status (*fault_scenario)(fault_run *r);

typedef struct fault_sweep {
    const char *name;   /* names the sweep in every failure message */
    fault_scenario run; /* the scenario */
    void *user;         /* handed to it in fault_run.user */
    long max_runs;      /* a failed CHECK if the scenario still fails an allocation here */
    test_alloc *armed;  /* NULL: each run gets a fresh allocator and its n-th allocation
                         * fails, counting from the first (a whole context's life).
                         * Otherwise the allocator of a long-lived context: the scenario
                         * brackets what is under test with fault_arm and fault_disarm, the
                         * n-th allocation after fault_arm fails, and the blocks live before
                         * the run must be the blocks live after it. */
} fault_sweep;

/* Armed sweeps: from here the run's n-th allocation fails. */
static inline void fault_arm(fault_run *r) {
    r->armed_at = r->alloc->count;
    r->alloc->fail_at = r->alloc->count + r->n;
}

/* Armed sweeps: no allocation fails from here on. */
static inline void fault_disarm(fault_run *r) {
    if (r->alloc->fail_at) r->reached |= r->alloc->count >= r->alloc->fail_at;
    r->alloc->fail_at = 0;
}

/* A context for one run: the run's allocator, no environment, the kernel cache in
 * cache_dir (NULL: the default), one compile tier. When it cannot be made its message is
 * the run's. One tier because the second tier's build allocates on a thread of its own,
 * in an order the sweep cannot count (and its failure correctly fails nothing: the program
 * stays on tier 1); test_kexec sweeps tier 1's allocations with that thread held. Every
 * context a sweep makes pins compile_tiers = 1 for this reason. */
static inline kiln_status fault_context(fault_run *r, const char *cache_dir, kiln_context **ctx) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.compile_tiers = 1;
    o.host_allocator = &r->host;
    o.cache_dir = cache_dir;
    *ctx = NULL;
    return kiln_context_create(&o, ctx, r->message, sizeof r->message);
}

/* Records ctx's last error as the run's message when s is a failure; returns s. */
static inline kiln_status fault_note(fault_run *r, kiln_context *ctx, kiln_status s) {
    if (s != KILN_STATUS_OK && !r->message[0] && ctx)
        snprintf(r->message, sizeof r->message, "%s", kiln_last_error(ctx));
    return s;
}

/* The common scenario: one call `body` in a context of its own (the run's allocator,
 * kernels cached in cache_dir), which sets *bad when it ran but computed something wrong.
 * Use fault_in_context as fault_sweep.run with a fault_ctx_case as its user. */
typedef kiln_status (*fault_ctx_body)(kiln_context *c, int *bad);
typedef struct fault_ctx_case {
    const char *cache_dir;
    fault_ctx_body body;
    const char *bad_what; /* what *bad means, for the failure message */
} fault_ctx_case;

static inline kiln_status fault_in_context(fault_run *r) {
    const fault_ctx_case *fc = (const fault_ctx_case *)r->user;
    kiln_context *c = NULL;
    int bad = 0;
    kiln_status s = fault_context(r, fc->cache_dir, &c);
    if (!s) s = fault_note(r, c, fc->body(c, &bad));
    CHECK_MSG(!bad, "allocation %ld: %s", r->n, fc->bad_what);
    kiln_context_destroy(c);
    return s;
}

/* Fails each allocation of the scenario in turn, holding every run to the contract at the
 * top of this file. Returns how many allocations the complete run made (so many were each
 * failed once), or -1 when no run completed within max_runs. */
static inline long fault_sweep_run(const fault_sweep *sw) {
    for (long n = 1; n <= sw->max_runs; n++) {
        test_alloc fresh;
        memset(&fresh, 0, sizeof fresh);
        fault_run r;
        memset(&r, 0, sizeof r);
        r.n = n;
        r.alloc = sw->armed ? sw->armed : &fresh;
        r.host = test_allocator(r.alloc);
        r.user = sw->user;
        if (!sw->armed) fresh.fail_at = n;
        long live_before = r.alloc->live;
        int bad_before = r.alloc->bad_size;
        size_t bytes_before = r.alloc->bytes;
        kiln_status s = sw->run(&r);
        if (sw->armed)
            fault_disarm(&r);
        else
            r.reached = fresh.count >= n;
        long leaked = r.alloc->live - live_before;
        CHECK_MSG(leaked == 0 && r.alloc->bytes == bytes_before,
                  "%s: failing allocation %ld: %ld blocks (%td bytes) leaked", sw->name, n, leaked,
                  (ptrdiff_t)(r.alloc->bytes - bytes_before));
        CHECK_MSG(r.alloc->bad_size == bad_before,
                  "%s: failing allocation %ld: %d frees gave the wrong size", sw->name, n,
                  r.alloc->bad_size - bad_before);
        if (!r.reached) { /* the failure was never reached: the run is complete */
            CHECK_MSG(s == KILN_STATUS_OK, "%s: the run past the last allocation (%ld) gave %s: %s",
                      sw->name, n, kiln_status_name(s), r.message);
            return n - 1;
        }
        CHECK_MSG(s == KILN_STATUS_HOST_OOM, "%s: failing allocation %ld gave %s: %s", sw->name, n,
                  kiln_status_name(s), r.message);
        CHECK_MSG(r.message[0] != 0, "%s: failing allocation %ld left no message", sw->name, n);
        /* a long-lived allocator that lost track cannot judge the runs after this one */
        if (sw->armed && (leaked || r.alloc->bad_size != bad_before)) return -1;
    }
    CHECK_MSG(0, "%s: still failing allocations after %ld runs", sw->name, sw->max_runs);
    return -1;
}

#endif
