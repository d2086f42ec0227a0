/* host.c — host memory through the context's allocator, and error messages.
 *
 * The default allocator is malloc. Sizes of 0 are rounded up to 1 so that a NULL
 * result always means failure. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *user, size_t size) {
    (void)user;
    return malloc(size);
}
static void *default_realloc(void *user, void *p, size_t old_size, size_t new_size) {
    (void)user, (void)old_size;
    return realloc(p, new_size);
}
static void default_free(void *user, void *p, size_t size) {
    (void)user, (void)size;
    free(p);
}

const kiln_host_allocator kn_default_host_allocator = {default_alloc, default_realloc, default_free,
                                                       NULL};

void *host_alloc(kiln_context *ctx, size_t size) {
    return ctx->host.alloc(ctx->host.user, size ? size : 1);
}

void *host_calloc(kiln_context *ctx, size_t n, size_t size) {
    size_t total;
    if (!kn_mul_size(n, size, &total)) return NULL;
    void *p = host_alloc(ctx, total);
    if (p) memset(p, 0, total);
    return p;
}

void *host_realloc(kiln_context *ctx, void *p, size_t old_size, size_t new_size) {
    if (!p) return host_alloc(ctx, new_size);
    return ctx->host.realloc(ctx->host.user, p, old_size ? old_size : 1, new_size ? new_size : 1);
}

void host_free(kiln_context *ctx, void *p, size_t size) {
    if (p) ctx->host.free(ctx->host.user, p, size ? size : 1);
}

char *host_strdup(kiln_context *ctx, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = host_alloc(ctx, n);
    if (p) memcpy(p, s, n);
    return p;
}

kiln_status ctx_verror(kiln_context *ctx, kiln_status code, const char *fmt, va_list ap) {
    pthread_mutex_lock(&ctx->err_mu);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
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
    return ctx_error(ctx, KILN_ERR_HOST_OOM, "%s: host allocation of %zu bytes failed", what, size);
}

const char *kiln_last_error(const kiln_context *ctx) {
    return ctx ? ctx->err : "";
}

size_t kiln_last_error_copy(const kiln_context *ctx, char *buf, size_t size) {
    if (!ctx) return 0;
    kiln_context *c = (kiln_context *)ctx; /* the mutex is not part of the value */
    pthread_mutex_lock(&c->err_mu);
    size_t n = strlen(c->err);
    if (buf && size) snprintf(buf, size, "%s", c->err);
    pthread_mutex_unlock(&c->err_mu);
    return n;
}

void kiln_string_free(kiln_context *ctx, char *s) {
    if (ctx && s) host_free(ctx, s, strlen(s) + 1);
}

const char *kiln_status_name(kiln_status s) {
    static const char *const names[] = {
        "KILN_OK",         "KILN_ERR_INVALID_ARGUMENT", "KILN_ERR_SHAPE",
        "KILN_ERR_DTYPE",  "KILN_ERR_HOST_OOM",         "KILN_ERR_DEVICE_OOM",
        "KILN_ERR_CONFIG", "KILN_ERR_UNIMPLEMENTED",    "KILN_ERR_INTERNAL",
        "KILN_ERR_IO",     "KILN_ERR_BACKEND",          "KILN_ERR_CONSUMED",
    };
    if ((unsigned)s < sizeof names / sizeof names[0]) return names[s];
    return "KILN_ERR_UNKNOWN";
}
