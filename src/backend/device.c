/* device.c — making and releasing the context's devices (see device.h).
 *
 * The allocation mode a device gets: the configured one, or when that is DEFAULT, the
 * backend's own default: grow for the CPU (its memory is the machine's, shared with
 * everything else) and preallocate for accelerators (as JAX and TensorFlow do). */
#include "device.h"

#include <stdio.h>
#include <string.h>

static kiln_status open_backend(kiln_context *ctx, const kn_backend *b, kn_device *devs, int *n) {
    void *state = NULL;
    if (b->open) {
        kiln_status s = b->open(ctx, &state);
        if (s) return s;
    }
    int count = b->device_count(state), first = *n;
    for (int i = 0; i < count && *n < KN_MAX_DEVICES; i++) {
        kn_device *d = &devs[(*n)++];
        *d = (kn_device){.backend = b, .state = state, .index = i, .owns_state = i == 0};
        snprintf(d->name, sizeof d->name, "%s:%d", b->name, i);
    }
    if (*n == first && b->close) b->close(ctx, state); /* no device keeps it */
    return KILN_OK;
}

static kiln_status make_allocator(kiln_context *ctx, kn_device *d) {
    kiln_alloc_mode mode = ctx->config.alloc_mode;
    if (mode == KILN_ALLOC_DEFAULT) mode = d->backend->default_alloc_mode;
    if (mode == KILN_ALLOC_DEFAULT) mode = KILN_ALLOC_PREALLOCATE;
    bfc_options o = {.mode = mode,
                     .mem_fraction = ctx->config.mem_fraction,
                     .limit = ctx->config.memory_limit,
                     .name = d->name};
    return bfc_create(ctx, d->backend, d->state, d->index, &o, &d->alloc);
}

kiln_status device_open_all(kiln_context *ctx) {
    int nb, n = 0;
    const kn_backend *const *list = backend_list(&nb);
    kn_device *devs = host_calloc(ctx, KN_MAX_DEVICES, sizeof *devs);
    if (!devs) return ctx_oom(ctx, "kiln_context_create: devices", KN_MAX_DEVICES * sizeof *devs);
    ctx->devices = devs;
    kiln_status s = KILN_OK;
    for (int i = 0; i < nb && !s; i++) s = open_backend(ctx, list[i], devs, &n);
    ctx->n_devices = n;
    for (int i = 0; i < n && !s; i++) s = make_allocator(ctx, &devs[i]);
    if (!s && n == 0) s = ctx_error(ctx, KILN_ERR_BACKEND, "kiln_context_create: no device");
    if (!s && ctx->config.alloc_trace[0]) {
        s = bfc_trace_start(devs[0].alloc, ctx->config.alloc_trace);
        char why[KN_ERR_MAX];
        snprintf(why, sizeof why, "%s", kiln_last_error(ctx));
        if (s)
            ctx_error(ctx, s, "environment variable KILN_ALLOC_TRACE=\"%s\": %s",
                      ctx->config.alloc_trace, why);
    }
    if (s) device_close_all(ctx);
    return s;
}

void device_close_all(kiln_context *ctx) {
    if (!ctx->devices) return;
    for (int i = ctx->n_devices - 1; i >= 0; i--) {
        kn_device *d = &ctx->devices[i];
        bfc_destroy(d->alloc);
        if (d->owns_state && d->backend->close) d->backend->close(ctx, d->state);
    }
    host_free(ctx, ctx->devices, KN_MAX_DEVICES * sizeof *ctx->devices);
    ctx->devices = NULL;
    ctx->n_devices = 0;
}

kn_device *device_get(kiln_context *ctx, int device, const char *what) {
    if (device >= 0 && device < ctx->n_devices) return &ctx->devices[device];
    ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "%s: device %d does not exist (this context has %d)",
              what, device, ctx->n_devices);
    return NULL;
}
