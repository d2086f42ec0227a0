/* bfc_report.c — what the allocator tells people: stats, the out-of-memory message and
 * the summary text.
 *
 * An out-of-memory message must answer "why did this not fit, and who holds the memory?"
 * without a debugger: the request and its rounded size, in use, reserved, limit, largest
 * free block and fragmentation (to tell "too much live data" from "free memory in pieces"),
 * and the largest live allocations with their tags. It is built under the allocator's lock
 * so that its figures are one consistent picture. */
#include "bfc_internal.h"

#include <stdarg.h>
#include <string.h>

#define TOP_N 5

const char *bfc_fmt_bytes(uint64_t n, char *buf, size_t size) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, size, "%llu B", (unsigned long long)n);
        return buf;
    }
    double v = (double)n / 1024;
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, u++;
    snprintf(buf, size, "%.*f %s", v < 10 ? 2 : 1, v, units[u]);
    return buf;
}

/* The largest free chunk sits in the highest non-empty bin; that bin's list is searched in
 * full because its sizes differ by up to 3%. */
uint64_t bfc_largest_free_locked(const bfc_allocator *a) {
    if (!a->summary) return 0;
    int w = 31 - __builtin_clz(a->summary);
    int b = (w << 6) + 63 - __builtin_clzll(a->bitmap[w]);
    uint64_t best = 0;
    for (const bfc_chunk *c = a->bins[b]; c; c = c->fnext)
        if (c->size > best) best = c->size;
    return best;
}

static void stats_locked(const bfc_allocator *a, kiln_memory_stats *s) {
    memset(s, 0, sizeof *s);
    s->bytes_in_use = a->in_use;
    s->peak_bytes_in_use = a->peak_in_use;
    s->bytes_reserved = a->reserved;
    s->peak_bytes_reserved = a->peak_reserved;
    s->num_allocs = a->num_allocs;
    s->largest_alloc_size = a->largest_alloc;
    s->largest_free_block_bytes = bfc_largest_free_locked(a);
    uint64_t free_bytes = a->reserved - a->in_use;
    s->fragmentation =
        free_bytes ? 1.0 - (double)s->largest_free_block_bytes / (double)free_bytes : 0.0;
    s->num_live_allocs = a->n_live;
    s->num_regions = a->n_regions;
    s->mode = a->mode;
    /* The most it will reserve: the device's memory (or the pool's share of it), or the
     * limit when that is lower. */
    uint64_t cap = a->device_total;
    if (a->mode == KILN_ALLOC_MODE_PREALLOCATE)
        cap = (uint64_t)(a->mem_fraction * (double)cap) & ~(uint64_t)(BFC_ALIGN - 1);
    s->bytes_limit = a->limit && (!cap || a->limit < cap) ? a->limit : cap;
}

void bfc_stats(bfc_allocator *a, kiln_memory_stats *out) {
    pthread_mutex_lock(&a->mu);
    stats_locked(a, out);
    pthread_mutex_unlock(&a->mu);
}

void bfc_reset_peak(bfc_allocator *a) {
    pthread_mutex_lock(&a->mu);
    a->peak_in_use = a->in_use;
    a->peak_reserved = a->reserved;
    pthread_mutex_unlock(&a->mu);
}

/* Largest first; among equals the oldest first. */
static bool ranks_before(const bfc_chunk *x, const bfc_chunk *y) {
    return x->size > y->size || (x->size == y->size && x->id < y->id);
}

/* The n largest live chunks into top[], sorted; returns how many there are (<= n). */
static int largest_live(const bfc_allocator *a, const bfc_chunk **top, int n) {
    int k = 0;
    for (const bfc_region *r = a->regions; r; r = r->next)
        for (const bfc_chunk *c = r->first; c; c = c->next) {
            if (!c->in_use || (k == n && !ranks_before(c, top[n - 1]))) continue;
            int i = k < n ? k++ : n - 1;
            for (; i > 0 && ranks_before(c, top[i - 1]); i--) top[i] = top[i - 1];
            top[i] = c;
        }
    return k;
}

/* A bounded string builder over a fixed buffer: the OOM path must not need the heap. */
typedef struct msgbuf {
    char *p;
    size_t len, cap;
} msgbuf;

static void mb_printf(msgbuf *m, const char *fmt, ...) KN_PRINTF(2, 3);
static void mb_printf(msgbuf *m, const char *fmt, ...) {
    if (m->len >= m->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->p + m->len, m->cap - m->len, fmt, ap);
    va_end(ap);
    if (n > 0) m->len = m->len + (size_t)n < m->cap ? m->len + (size_t)n : m->cap;
}

/* The lines shared by the OOM message and the summary. */
static void describe_locked(const bfc_allocator *a, msgbuf *m) {
    kiln_memory_stats s;
    stats_locked(a, &s);
    char b1[32], b2[32], b3[32], b4[32], lim[64] = "none";
    /* A preallocated pool never grows: its size is the limit, whatever a->limit says. */
    if (a->mode == KILN_ALLOC_MODE_PREALLOCATE && s.num_regions)
        snprintf(lim, sizeof lim, "%s (the preallocated pool)",
                 bfc_fmt_bytes(s.bytes_reserved, b3, sizeof b3));
    else if (a->limit)
        snprintf(lim, sizeof lim, "%s", bfc_fmt_bytes(a->limit, b3, sizeof b3));
    mb_printf(m, "  in use %s in %llu allocation%s; reserved %s in %llu region%s; limit %s\n",
              bfc_fmt_bytes(s.bytes_in_use, b1, sizeof b1), (unsigned long long)s.num_live_allocs,
              s.num_live_allocs == 1 ? "" : "s", bfc_fmt_bytes(s.bytes_reserved, b2, sizeof b2),
              (unsigned long long)s.num_regions, s.num_regions == 1 ? "" : "s", lim);
    mb_printf(m, "  largest free block %s of %s free; fragmentation %.2f\n",
              bfc_fmt_bytes(s.largest_free_block_bytes, b1, sizeof b1),
              bfc_fmt_bytes(s.bytes_reserved - s.bytes_in_use, b4, sizeof b4), s.fragmentation);
    const bfc_chunk *top[TOP_N];
    int k = largest_live(a, top, TOP_N);
    if (!k) return (void)mb_printf(m, "  no live allocations\n");
    mb_printf(m, "  largest live allocations:\n");
    for (int i = 0; i < k; i++)
        mb_printf(m, "    %10s  \"%s\" (allocation #%llu)\n",
                  bfc_fmt_bytes(top[i]->size, b1, sizeof b1),
                  top[i]->tag[0] ? top[i]->tag : "untagged", (unsigned long long)top[i]->id);
}

/* One line that tells the three usual cases apart: too much live data for the limit,
 * enough free memory but in pieces, or a device that has nothing more to give. */
static void diagnose_locked(const bfc_allocator *a, size_t rounded, msgbuf *m) {
    char b1[32], b2[32], b3[32];
    uint64_t free_bytes = a->reserved - a->in_use, largest = bfc_largest_free_locked(a);
    if (a->limit && (a->in_use > a->limit || rounded > a->limit - a->in_use)) {
        mb_printf(m, "  hint: live allocations and this request together exceed the limit; free "
                     "what is no longer needed, or raise KILN_MEMORY_LIMIT (options.memory_limit)");
    } else if (free_bytes >= rounded && largest < rounded) {
        mb_printf(m,
                  "  hint: %s is free, but in pieces of at most %s: the memory is fragmented "
                  "by the live allocations between the pieces",
                  bfc_fmt_bytes(free_bytes, b1, sizeof b1), bfc_fmt_bytes(largest, b2, sizeof b2));
    } else if (a->mode == KILN_ALLOC_MODE_PREALLOCATE) {
        mb_printf(m,
                  "  hint: the preallocated pool is full; raise KILN_MEM_FRACTION (now %g) or "
                  "use KILN_ALLOCATOR=grow",
                  a->mem_fraction);
    } else {
        uint64_t total = 0, avail = 0;
        a->src.memory_info(a->src.user, &total, &avail);
        mb_printf(m, "  hint: the device has %s free of %s; other processes may hold the rest",
                  bfc_fmt_bytes(avail, b1, sizeof b1), bfc_fmt_bytes(total, b3, sizeof b3));
    }
}

kiln_status bfc_oom_locked(bfc_allocator *a, size_t size, size_t rounded, const char *tag,
                           const char *why) {
    char buf[KN_ERR_MAX], b1[32];
    msgbuf m = {buf, 0, sizeof buf};
    mb_printf(&m,
              "%s: out of memory: cannot allocate %zu bytes (rounded to %zu, %s) for \"%s\": "
              "%s\n",
              a->name, size, rounded, bfc_fmt_bytes(rounded, b1, sizeof b1),
              tag && *tag ? tag : "untagged", why);
    describe_locked(a, &m);
    diagnose_locked(a, rounded, &m);
    if (m.len && buf[m.len - 1] == '\n') buf[--m.len] = 0;
    return ctx_error(a->ctx, KILN_STATUS_DEVICE_OOM, "%s", buf);
}

char *bfc_summary(bfc_allocator *a) {
    static const char *const modes[] = {"default", "grow", "preallocate", "platform"};
    char buf[4096], b1[32], b2[32];
    msgbuf m = {buf, 0, sizeof buf};
    pthread_mutex_lock(&a->mu);
    mb_printf(&m, "%s: %s allocator; %llu allocations made; peak in use %s; peak reserved %s\n",
              a->name, modes[a->mode], (unsigned long long)a->num_allocs,
              bfc_fmt_bytes(a->peak_in_use, b1, sizeof b1),
              bfc_fmt_bytes(a->peak_reserved, b2, sizeof b2));
    describe_locked(a, &m);
    pthread_mutex_unlock(&a->mu);
    return host_strdup(a->ctx, buf);
}
