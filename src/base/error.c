/* error.c — error messages, one per thread per context (as errno is one per thread).
 *
 * Each thread that fails a call on a context gets a slot there; kiln_last_error reads the
 * calling thread's slot, so two threads failing at once never see each other's message.
 *
 * Invariants:
 * - Slots form a list that only grows until kiln_context_destroy frees it. A slot's owner
 *   and next never change after it is published (a release store of the list head, under
 *   err_mu so appends do not race), so lookups walk the list without the lock.
 * - A slot's message is written and read only by its owner thread: no lock is needed for
 *   it, and kiln_last_error's pointer stays valid until that thread's next failure.
 * - Setting a message never fails: the thread that creates the context gets its slot then,
 *   and a thread whose slot cannot be allocated (host OOM) writes the context's one
 *   fallback slot under err_mu instead. Threads without a slot read that fallback.
 * - A thread id the system reuses (after a thread exits) inherits that thread's slot, so
 *   the slots held are bounded by the threads alive at once in practice, not by every
 *   thread that ever failed. */
#include "base.h"

#include <stdio.h>
#include <string.h>

struct kn_err_slot {
    pthread_t owner;
    struct kn_err_slot *next;
    char msg[KN_ERR_MAX];
};

static kn_err_slot *find_slot(const kiln_context *ctx) {
    pthread_t self = pthread_self();
    kiln_context *c = (kiln_context *)ctx; /* atomic_load wants a non-const object */
    for (kn_err_slot *s = atomic_load_explicit(&c->err_slots, memory_order_acquire); s; s = s->next)
        if (pthread_equal(s->owner, self)) return s;
    return NULL;
}

/* A new slot for the calling thread; NULL on host OOM. */
static kn_err_slot *add_slot(kiln_context *ctx) {
    kn_err_slot *s = host_alloc(ctx, sizeof *s);
    if (!s) return NULL;
    s->owner = pthread_self();
    s->msg[0] = 0;
    pthread_mutex_lock(&ctx->err_mu);
    s->next = atomic_load_explicit(&ctx->err_slots, memory_order_relaxed);
    atomic_store_explicit(&ctx->err_slots, s, memory_order_release);
    pthread_mutex_unlock(&ctx->err_mu);
    return s;
}

kiln_status ctx_errors_init(kiln_context *ctx) {
    pthread_mutex_init(&ctx->err_mu, NULL);
    atomic_init(&ctx->err_slots, NULL);
    ctx->err_fallback[0] = 0;
    return add_slot(ctx) ? KILN_STATUS_OK : KILN_STATUS_HOST_OOM;
}

void ctx_errors_free(kiln_context *ctx) {
    kn_err_slot *s = atomic_load_explicit(&ctx->err_slots, memory_order_acquire);
    while (s) {
        kn_err_slot *next = s->next;
        host_free(ctx, s, sizeof *s);
        s = next;
    }
    atomic_store_explicit(&ctx->err_slots, NULL, memory_order_relaxed);
    pthread_mutex_destroy(&ctx->err_mu);
}

kiln_status ctx_verror(kiln_context *ctx, kiln_status code, const char *fmt, va_list ap) {
    kn_err_slot *s = find_slot(ctx);
    if (!s) s = add_slot(ctx);
    if (s) {
        vsnprintf(s->msg, sizeof s->msg, fmt, ap);
        return code;
    }
    pthread_mutex_lock(&ctx->err_mu);
    vsnprintf(ctx->err_fallback, sizeof ctx->err_fallback, fmt, ap);
    pthread_mutex_unlock(&ctx->err_mu);
    return code;
}

kiln_status ctx_error(kiln_context *ctx, kiln_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ctx_verror(ctx, code, fmt, ap);
    va_end(ap);
    return code;
}

kiln_status ctx_oom(kiln_context *ctx, const char *what, size_t size) {
    return ctx_error(ctx, KILN_STATUS_HOST_OOM, "%s: host allocation of %zu bytes failed", what,
                     size);
}

const char *kiln_last_error(const kiln_context *ctx) {
    if (!ctx) return "";
    const kn_err_slot *s = find_slot(ctx);
    /* The fallback is shared: its text may change under a reader when another slot-less
     * thread fails at the same time, which is why the header points at _copy. */
    return s ? s->msg : ctx->err_fallback;
}

size_t kiln_last_error_copy(const kiln_context *ctx, char *buf, size_t size) {
    if (!ctx) {
        if (buf && size) buf[0] = 0;
        return 0;
    }
    const kn_err_slot *s = find_slot(ctx);
    if (s) {
        if (buf && size) snprintf(buf, size, "%s", s->msg);
        return strlen(s->msg);
    }
    kiln_context *c = (kiln_context *)ctx; /* the mutex is not part of the value */
    pthread_mutex_lock(&c->err_mu);
    size_t n = strlen(c->err_fallback);
    if (buf && size) snprintf(buf, size, "%s", c->err_fallback);
    pthread_mutex_unlock(&c->err_mu);
    return n;
}

const char *kiln_status_name(kiln_status s) {
    static const char *const names[] = {
        "KILN_STATUS_OK",      "KILN_STATUS_INVALID_ARGUMENT", "KILN_STATUS_SHAPE",
        "KILN_STATUS_DTYPE",   "KILN_STATUS_HOST_OOM",         "KILN_STATUS_DEVICE_OOM",
        "KILN_STATUS_CONFIG",  "KILN_STATUS_UNIMPLEMENTED",    "KILN_STATUS_INTERNAL",
        "KILN_STATUS_IO",      "KILN_STATUS_BACKEND",          "KILN_STATUS_CONSUMED",
        "KILN_STATUS_TIMEOUT",
    };
    if ((unsigned)s < sizeof names / sizeof names[0]) return names[s];
    return "KILN_STATUS_UNKNOWN";
}
