/* replay.c — replays an allocation trace (a kiln trace file or a synthetic one) against
 * one allocator and prints one line of figures. bench/alloc/run.sh calls it once per
 * allocator, trace and run, each in a fresh process, and takes medians.
 *
 *   kiln_alloc_replay --alloc kiln|glibc|jemalloc|mimalloc
 *                     (--synthetic uniform|pow2|training | --trace FILE)
 *                     [--seed N] [--memory]
 *
 * Two measurements, never in the same run:
 *   time (default)  the whole trace, timed: alloc+free pairs per second. Memory is not
 *                   touched, as a device allocator's host code never touches it.
 *   --memory        after every allocation, the memory the allocator holds from the
 *                   system is read; fragmentation = its peak / the trace's peak of bytes
 *                   requested (what a perfect allocator would need). kiln: its
 *                   peak_bytes_reserved. glibc: mallinfo2 arena + hblkhd. jemalloc:
 *                   stats.mapped. mimalloc: peak committed bytes (mi_process_info).
 *
 * jemalloc and mimalloc are loaded with dlopen (RTLD_LOCAL, so they do not replace this
 * process's malloc) from the Debian packages libjemalloc2 and libmimalloc2.0; if one is
 * missing the run prints "skipped" and exits 0. Nothing in kiln links against them. */
#include "replay.h"

#include "kiln.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct allocator {
    const char *name;
    void *(*alloc)(struct allocator *a, size_t n);
    void (*free)(struct allocator *a, void *p);
    uint64_t (*held)(struct allocator *a); /* bytes held from the system now */
    void *(*dl_malloc)(size_t);
    void (*dl_free)(void *);
    int (*mallctl)(const char *, void *, size_t *, void *, size_t);
    void (*mi_info)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *, size_t *);
    kiln_context *ctx;
} allocator;

static void die(const char *what) {
    fprintf(stderr, "kiln_alloc_replay: %s\n", what);
    exit(2);
}

/* --------------------------------------------------------------- kiln ---- */

static void *kiln_a(allocator *a, size_t n) {
    void *p = NULL;
    if (kiln_device_alloc(a->ctx, 0, n, "replay", &p) != KILN_STATUS_OK)
        die(kiln_last_error(a->ctx));
    return p;
}
static void kiln_f(allocator *a, void *p) {
    kiln_device_free(a->ctx, 0, p);
}
static uint64_t kiln_held(allocator *a) {
    kiln_memory_stats s;
    kiln_device_get_memory_stats(a->ctx, 0, &s);
    return s.peak_bytes_reserved;
}

/* -------------------------------------------------------------- glibc ---- */

static void *glibc_a(allocator *a, size_t n) {
    return (void)a, malloc(n);
}
static void glibc_f(allocator *a, void *p) {
    (void)a, free(p);
}
static uint64_t glibc_held(allocator *a) {
    (void)a;
    struct mallinfo2 m = mallinfo2();
    return (uint64_t)m.arena + (uint64_t)m.hblkhd;
}

/* ---------------------------------------------------- jemalloc, mimalloc ---- */

static void *dl_a(allocator *a, size_t n) {
    return a->dl_malloc(n);
}
static void dl_f(allocator *a, void *p) {
    a->dl_free(p);
}
static uint64_t je_held(allocator *a) {
    uint64_t epoch = 1;
    size_t mapped = 0, len = sizeof epoch;
    a->mallctl("epoch", &epoch, &len, &epoch, len);
    len = sizeof mapped;
    a->mallctl("stats.mapped", &mapped, &len, NULL, 0);
    return mapped;
}
static uint64_t mi_held(allocator *a) {
    size_t e, u, s, rss, prss, commit = 0, peak = 0, pf;
    a->mi_info(&e, &u, &s, &rss, &prss, &commit, &peak, &pf);
    return peak;
}

/* jemalloc keeps its thread state in initial-exec TLS, which dlopen can only place in the
 * loader's spare static TLS; glibc's default spare is too small for it. The tunable below
 * enlarges it, and only takes effect at startup, so the program runs itself again. */
static void reexec_with_static_tls(char **argv) {
    if (getenv("KILN_REPLAY_REEXEC")) return;
    setenv("KILN_REPLAY_REEXEC", "1", 1);
    setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=65536", 1);
    execv("/proc/self/exe", argv);
}

static int load(allocator *a, const char *lib, const char *m, const char *f, char **argv) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h && strstr(dlerror(), "static TLS")) reexec_with_static_tls(argv);
    if (!h) return 0;
    *(void **)&a->dl_malloc = dlsym(h, m);
    *(void **)&a->dl_free = dlsym(h, f);
    *(void **)&a->mallctl = dlsym(h, "mallctl");
    *(void **)&a->mi_info = dlsym(h, "mi_process_info");
    return a->dl_malloc && a->dl_free;
}

static int make_allocator(const char *name, allocator *a, char **argv) {
    memset(a, 0, sizeof *a);
    a->name = name;
    if (!strcmp(name, "kiln")) {
        kiln_context_options o = {
            .alloc_mode = KILN_ALLOC_MODE_GROW, .ignore_environment = true, .compile_tiers = 1};
        char err[512];
        if (kiln_context_create(&o, &a->ctx, err, sizeof err) != KILN_STATUS_OK) die(err);
        a->alloc = kiln_a, a->free = kiln_f, a->held = kiln_held;
        return 1;
    }
    if (!strcmp(name, "glibc")) {
        a->alloc = glibc_a, a->free = glibc_f, a->held = glibc_held;
        return 1;
    }
    a->alloc = dl_a, a->free = dl_f;
    if (!strcmp(name, "jemalloc")) {
        if (!load(a, "libjemalloc.so.2", "malloc", "free", argv) || !a->mallctl) return 0;
        a->held = je_held;
        return 1;
    }
    if (!strcmp(name, "mimalloc")) {
        if (!load(a, "libmimalloc.so.2", "mi_malloc", "mi_free", argv) || !a->mi_info) return 0;
        a->held = mi_held;
        return 1;
    }
    die("unknown allocator (kiln, glibc, jemalloc, mimalloc)");
    return 0;
}

/* ------------------------------------------------------------- traces ---- */

/* The smallest allocation id in a trace file: ids count from the allocator's creation, so
 * a trace started late in a long run has large ids; slots are indexed from this one. */
static unsigned long long first_id(FILE *f) {
    unsigned long long id, size, lo = ~0ull;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "a %llu %llu", &id, &size) == 2 && id < lo) lo = id;
    rewind(f);
    return lo == ~0ull ? 0 : lo;
}

/* Reads a kiln trace file ("a id size t tag" / "f id t" lines); ids become slots. */
static void read_trace(const char *path, trace *t) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open the trace file");
    memset(t, 0, sizeof *t);
    unsigned long long base = first_id(f), id, size;
    uint32_t *slot_of = NULL;
    size_t cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "a %llu %llu", &id, &size) == 2) {
            id -= base;
            if (id >= cap) {
                size_t c = cap ? cap : 1024;
                while (c <= id) c *= 2;
                slot_of = realloc(slot_of, c * sizeof *slot_of);
                if (!slot_of) die("out of host memory");
                memset(slot_of + cap, 0xff, (c - cap) * sizeof *slot_of);
                cap = c;
            }
            slot_of[id] = trace_alloc(t, (size_t)size);
        } else if (sscanf(line, "f %llu", &id) == 1 && id >= base && id - base < cap &&
                   slot_of[id - base] != UINT32_MAX) {
            trace_free(t, slot_of[id - base]);
            slot_of[id - base] = UINT32_MAX;
        }
    }
    for (size_t i = 0; i < cap; i++) /* still live at the end: free them too */
        if (slot_of[i] != UINT32_MAX) trace_free(t, slot_of[i]);
    free(slot_of);
    fclose(f);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Time runs replay the trace as often as it takes to reach about two million events, so
 * that short traces are still timed over a tenth of a second or more; every pass ends with
 * everything freed, so passes after the first measure the steady state. */
static void run(allocator *a, const trace *t, int memory, const char *label) {
    void **slots = calloc(t->n_slots ? t->n_slots : 1, sizeof *slots);
    uint64_t held_peak = 0, pairs = 0;
    size_t passes = memory || t->n >= 2000000 ? 1 : (2000000 + t->n - 1) / t->n;
    double t0 = now();
    for (size_t k = 0, i = 0; k < passes; k++, i = 0)
        for (; i < t->n; i++) {
            const event *e = &t->ev[i];
            if (!e->is_alloc) {
                a->free(a, slots[e->slot]);
                continue;
            }
            slots[e->slot] = a->alloc(a, e->size);
            pairs++;
            if (memory) {
                uint64_t h = a->held(a);
                if (h > held_peak) held_peak = h;
            }
        }
    double secs = now() - t0;
    printf("alloc=%s trace=%s events=%zu pairs=%llu peak_requested=%llu", a->name, label,
           t->n * passes, (unsigned long long)pairs, (unsigned long long)t->peak_live);
    if (memory && a->ctx) { /* kiln's own view: its peak in use counts the 256-byte rounding */
        kiln_memory_stats s;
        kiln_device_get_memory_stats(a->ctx, 0, &s);
        printf(" peak_in_use=%llu regions=%llu", (unsigned long long)s.peak_bytes_in_use,
               (unsigned long long)s.num_regions);
    }
    if (memory)
        printf(" peak_held=%llu frag=%.4f\n", (unsigned long long)held_peak,
               (double)held_peak / (double)t->peak_live);
    else
        printf(" seconds=%.4f pairs_per_s=%.0f\n", secs, (double)pairs / secs);
    free(slots);
}

int main(int argc, char **argv) {
    const char *alloc_name = "kiln", *synthetic = NULL, *file = NULL;
    uint64_t seed = 1;
    int memory = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--alloc") && i + 1 < argc)
            alloc_name = argv[++i];
        else if (!strcmp(argv[i], "--synthetic") && i + 1 < argc)
            synthetic = argv[++i];
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            file = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], 0, 10);
        else if (!strcmp(argv[i], "--memory"))
            memory = 1;
        else
            die("usage: --alloc NAME (--synthetic uniform|pow2|training | --trace FILE) "
                "[--seed N] [--memory]");
    }
    trace t;
    if (file)
        read_trace(file, &t);
    else if (!synth_make(synthetic ? synthetic : "training", seed, &t))
        die("unknown synthetic trace (uniform, pow2, training)");
    allocator a;
    if (!make_allocator(alloc_name, &a, argv)) {
        printf("alloc=%s skipped: library not found\n", alloc_name);
        return 0;
    }
    run(&a, &t, memory, file ? file : synthetic ? synthetic : "training");
    if (a.ctx) kiln_context_destroy(a.ctx);
    trace_release(&t);
    return 0;
}
