/* host.c — host memory through the context's allocator.
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

void kiln_string_free(kiln_context *ctx, char *s) {
    if (ctx && s) host_free(ctx, s, strlen(s) + 1);
}
