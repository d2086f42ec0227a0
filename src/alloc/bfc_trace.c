/* bfc_trace.c — recording an allocator's alloc/free events to a text file.
 *
 * The format (docs/memory.md) is one event a line, so that a trace can be read with grep
 * and replayed by bench/alloc against other allocators:
 *     # kiln alloc trace v1 device=cpu:0 mode=grow
 *     a <id> <bytes asked> <ns since start> <tag>
 *     f <id> <ns since start>
 * Ids are the allocator's allocation numbers; bytes are the sizes asked for (not rounded),
 * so a replay gives every allocator the same requests. Allocations live when the trace
 * starts are written first (at time 0), so every free in the file has its alloc. Tags have
 * spaces replaced so that a line always splits into the same fields. Events are written
 * under the allocator's lock, in the order they took effect. */
#include "bfc_internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t since(const bfc_allocator *a) {
    return now_ns() - a->trace_t0;
}

static void write_alloc(FILE *f, const bfc_chunk *c, uint64_t t) {
    char tag[BFC_TAG_MAX];
    size_t i = 0;
    for (; c->tag[i]; i++) tag[i] = c->tag[i] == ' ' || c->tag[i] == '\t' ? '_' : c->tag[i];
    tag[i] = 0;
    fprintf(f, "a %llu %zu %llu %s\n", (unsigned long long)c->id, c->requested,
            (unsigned long long)t, i ? tag : "-");
}

void bfc_trace_alloc_locked(bfc_allocator *a, const bfc_chunk *c) {
    write_alloc(a->trace, c, since(a));
}

void bfc_trace_free_locked(bfc_allocator *a, const bfc_chunk *c) {
    fprintf(a->trace, "f %llu %llu\n", (unsigned long long)c->id, (unsigned long long)since(a));
}

kiln_status bfc_trace_start(bfc_allocator *a, const char *path) {
    static const char *const modes[] = {"default", "grow", "preallocate", "platform"};
    FILE *f = fopen(path, "w");
    if (!f)
        return ctx_error(a->ctx, KILN_STATUS_IO, "%s: cannot open allocation trace \"%s\": %s",
                         a->name, path, strerror(errno));
    pthread_mutex_lock(&a->mu);
    FILE *old = a->trace;
    fprintf(f, "# kiln alloc trace v1 device=%s mode=%s\n", a->name, modes[a->mode]);
    for (const bfc_region *r = a->regions; r; r = r->next)
        for (const bfc_chunk *c = r->first; c; c = c->next)
            if (c->in_use) write_alloc(f, c, 0);
    a->trace = f;
    a->trace_t0 = now_ns();
    pthread_mutex_unlock(&a->mu);
    if (old) fclose(old);
    return KILN_STATUS_OK;
}

kiln_status bfc_trace_stop(bfc_allocator *a) {
    pthread_mutex_lock(&a->mu);
    FILE *f = a->trace;
    a->trace = NULL;
    pthread_mutex_unlock(&a->mu);
    if (f && fclose(f))
        return ctx_error(a->ctx, KILN_STATUS_IO, "%s: writing the allocation trace failed: %s",
                         a->name, strerror(errno));
    return KILN_STATUS_OK;
}
