/* context.c — making and destroying the context: the one object that owns kiln's state
 * (configuration, error messages, devices with their allocators and their backends'
 * state). There are no mutable globals.
 *
 * It sits above the backends because it opens them: base/ defines the context and its
 * configuration (base/config.c resolves options against the environment, once), and this
 * file hands each backend its own options (backend_impl.h) from that one resolution, so
 * nothing below reads a setting that is not its own. */
#include "backend/device.h"
#include "backend/objcache.h"
#include "runtime/tier.h"
#include "base/base.h"

#include <stdio.h>
#include <string.h>

extern const kiln_host_allocator kn_default_host_allocator;

/* A string setting into an options struct's buffer of the same size. */
#define COPY_SETTING(dst, src)                                                                     \
    do {                                                                                           \
        _Static_assert(sizeof(dst) == sizeof(src), #dst " and " #src " differ in size");           \
        memcpy(dst, src, sizeof(dst));                                                             \
    } while (0)

/* The options of every device and backend, from the resolved configuration. The cache
 * folder is made absolute once, here, against the folder the context is made in, whatever
 * folder the process or a compiler is in later, for every backend alike. */
static kiln_status device_options(kiln_context *ctx, kn_device_options *o) {
    const kn_config *c = &ctx->config;
    *o = (kn_device_options){.alloc_mode = c->alloc_mode,
                             .mem_fraction = c->mem_fraction,
                             .memory_limit = c->memory_limit,
                             .async_dispatch = c->async_dispatch};
    COPY_SETTING(o->alloc_trace, c->alloc_trace);
    o->alloc_trace_from = c->alloc_trace_env ? "environment variable KILN_ALLOC_TRACE"
                                             : "kiln_context_options.alloc_trace";
    kn_cache_options cache = {.max_bytes = c->cache_max_bytes};
    COPY_SETTING(cache.dir, c->cache_dir);
    if (cache.max_bytes) {
        kiln_status s = objcache_dir_absolute(ctx, cache.dir, sizeof cache.dir);
        if (s) return s;
    }
    kn_cpu_options *cpu = &o->backends.cpu;
    *cpu = (kn_cpu_options){
        .devices = c->cpu_devices, .num_threads = c->num_threads, .blas = c->blas, .cache = cache};
    COPY_SETTING(cpu->cc, c->cc);
    COPY_SETTING(cpu->cc_flags, c->cc_flags);
    o->backends.cuda =
        (kn_cuda_options){.platform_alloc = c->alloc_mode == KILN_ALLOC_MODE_PLATFORM,
                          .matmul_tf32 = c->matmul_tf32,
                          .attention_cuda_cores = c->attention_cuda_cores,
                          .cache = cache};
    return KILN_STATUS_OK;
}

static kiln_status open_devices(kiln_context *ctx) {
    kn_device_options o;
    kiln_status s = device_options(ctx, &o);
    return s ? s : device_open_all(ctx, &o);
}

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
    if ((s = tier_service_create(ctx))) {
        kiln_last_error_copy(ctx, err, err_size);
        kiln_context_destroy(ctx);
        return s;
    }
    if ((s = open_devices(ctx))) {
        kiln_last_error_copy(ctx, err, err_size);
        kiln_context_destroy(ctx);
        return s;
    }
    *out = ctx;
    return KILN_STATUS_OK;
}

void kiln_context_destroy(kiln_context *ctx) {
    if (!ctx) return;
    tier_service_destroy(ctx); /* its compile in progress needs the backends */
    device_close_all(ctx);     /* and with them the backends' state: compilers, thread pools */
    ctx_errors_free(ctx);
    kiln_host_allocator h = ctx->host;
    h.free(h.user, ctx, sizeof *ctx);
}

#define KN_STR2(x) #x
#define KN_STR(x)  KN_STR2(x)

const char *kiln_version(void) {
    return KN_STR(KILN_VERSION_MAJOR) "." KN_STR(KILN_VERSION_MINOR) "." KN_STR(KILN_VERSION_PATCH);
}
