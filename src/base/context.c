/* context.c — the context: the one object that owns kiln's state (configuration, error
 * messages, devices with their allocators and their backends' state). There are no
 * mutable globals. */
#include "base.h"
#include "backend/device.h"

#include <stdio.h>
#include <string.h>

extern const kiln_host_allocator kn_default_host_allocator;

kiln_status kiln_context_create(const kiln_context_options *opts, kiln_context **out, char *err,
                                size_t err_size) {
    char local[KN_ERR_MAX];
    if (!err || !err_size) err = local, err_size = sizeof local;
    err[0] = 0;
    if (!out) {
        snprintf(err, err_size, "kiln_context_create: out is NULL");
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    *out = NULL;
    const kiln_host_allocator *h =
        opts && opts->host_allocator ? opts->host_allocator : &kn_default_host_allocator;
    if (!h->alloc || !h->realloc || !h->free) {
        snprintf(err, err_size,
                 "kiln_context_create: host_allocator must set alloc, realloc and free");
        return KILN_STATUS_INVALID_ARGUMENT;
    }
    kn_config cfg;
    kiln_status s = config_resolve(opts, &cfg, err, err_size);
    if (s) return s;
    kiln_context *ctx = h->alloc(h->user, sizeof *ctx);
    if (!ctx) {
        snprintf(err, err_size, "kiln_context_create: host allocation of %zu bytes failed",
                 sizeof *ctx);
        return KILN_STATUS_HOST_OOM;
    }
    memset(ctx, 0, sizeof *ctx);
    ctx->host = *h;
    ctx->config = cfg;
    atomic_init(&ctx->next_graph_id, 1);
    atomic_init(&ctx->next_dump_id, 1);
    if ((s = ctx_errors_init(ctx))) {
        snprintf(err, err_size, "kiln_context_create: host allocation of the error slot failed");
        kiln_context_destroy(ctx);
        return s;
    }
    if ((s = device_open_all(ctx))) {
        kiln_last_error_copy(ctx, err, err_size);
        kiln_context_destroy(ctx);
        return s;
    }
    *out = ctx;
    return KILN_STATUS_OK;
}

void kiln_context_destroy(kiln_context *ctx) {
    if (!ctx) return;
    device_close_all(ctx); /* and with them the backends' state: compilers, thread pools */
    ctx_errors_free(ctx);
    kiln_host_allocator h = ctx->host;
    h.free(h.user, ctx, sizeof *ctx);
}

#define KN_STR2(x) #x
#define KN_STR(x)  KN_STR2(x)

const char *kiln_version(void) {
    return KN_STR(KILN_VERSION_MAJOR) "." KN_STR(KILN_VERSION_MINOR) "." KN_STR(KILN_VERSION_PATCH);
}
