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
 * under the allocator's lock, in the order they took effect.
 *
 * The path comes from a user or from KILN_ALLOC_TRACE, maybe in a program run as root, so
 * a trace never writes over anything but a trace: the file is created if it does not
 * exist (O_EXCL); an existing one is replaced only when it is a regular file, not a
 * symbolic link, whose first line is a kiln trace's, checked and truncated through one
 * descriptor opened with O_NOFOLLOW. Anything else is refused and left as it was. */
#include "bfc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The start of a trace's first line: what makes an existing file one kiln may replace. */
#define TRACE_MAGIC "# kiln alloc trace "

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

static kiln_status refuse(bfc_allocator *a, const char *path, const char *why) {
    return ctx_error(a->ctx, KILN_STATUS_INVALID_ARGUMENT,
                     "%s: allocation trace \"%s\" %s; a trace replaces only a previous trace "
                     "(remove the file or name another)",
                     a->name, path, why);
}

static kiln_status cannot_open(bfc_allocator *a, const char *path) {
    return ctx_error(a->ctx, KILN_STATUS_IO, "%s: cannot open allocation trace \"%s\": %s", a->name,
                     path, strerror(errno));
}

/* An existing path: checked before it is opened (no device or FIFO is ever opened), then
 * opened without following a link, checked again through the descriptor, and truncated
 * through it only if its first line is a trace's. *fd: the open file, or -1. */
static kiln_status reopen_trace(bfc_allocator *a, const char *path, int *fd) {
    struct stat st;
    if (lstat(path, &st)) return cannot_open(a, path);
    if (S_ISLNK(st.st_mode)) return refuse(a, path, "is a symbolic link");
    if (!S_ISREG(st.st_mode)) return refuse(a, path, "is not a regular file");
    *fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0)
        return errno == ELOOP ? refuse(a, path, "is a symbolic link") : cannot_open(a, path);
    char head[sizeof TRACE_MAGIC - 1];
    if (fstat(*fd, &st) || !S_ISREG(st.st_mode)) return refuse(a, path, "is not a regular file");
    if (pread(*fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head, TRACE_MAGIC, sizeof head))
        return refuse(a, path,
                      "exists and is not a kiln allocation trace (its first line does "
                      "not start \"" TRACE_MAGIC "\")");
    if (ftruncate(*fd, 0)) return cannot_open(a, path);
    return KILN_STATUS_OK;
}

/* The trace file, new or a previous trace emptied; never anything else (see the top). */
static kiln_status open_trace(bfc_allocator *a, const char *path, FILE **out) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    kiln_status s = KILN_STATUS_OK;
    if (fd < 0 && errno != EEXIST) return cannot_open(a, path);
    if (fd < 0) s = reopen_trace(a, path, &fd);
    if (!s && !(*out = fdopen(fd, "w"))) s = cannot_open(a, path);
    if (s && fd >= 0) close(fd);
    return s;
}

kiln_status bfc_trace_start(bfc_allocator *a, const char *path) {
    static const char *const modes[] = {"default", "grow", "preallocate", "platform"};
    FILE *f = NULL;
    kiln_status s = open_trace(a, path, &f);
    if (s) return s;
    pthread_mutex_lock(&a->mu);
    FILE *old = a->trace;
    fprintf(f, TRACE_MAGIC "v1 device=%s mode=%s\n", a->name, modes[a->mode]);
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
