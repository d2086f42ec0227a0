/* device.c — making and releasing the context's devices (see device.h), and the public
 * device-memory API (kiln.h, "device memory"): argument checks and device lookup in front
 * of each device's allocator.
 *
 * The allocation mode a device gets: the configured one, or when that is DEFAULT, the
 * backend's own default: grow for the CPU (its memory is the machine's, shared with
 * everything else) and preallocate for accelerators (as JAX and TensorFlow do).
 *
 * Copies between devices pick the backends' slots: the same backend's copy_d2d when it
 * has one; else a device whose backend has no copy_d2h keeps its memory in the host's
 * address space, so the other side's h2d/d2h slot (or memcpy) reaches it directly; only
 * two devices that both need their backend to reach their memory bounce through a host
 * buffer. */
#include "device.h"

#include <stdio.h>
#include <string.h>

static kiln_status open_backend(kiln_context *ctx, const kn_backend *b,
                                const kn_backend_options *opts, kn_device *devs, int *n) {
    void *state = NULL;
    if (b->open) {
        kiln_status s = b->open(ctx, opts, &state);
        if (s) return s;
    }
    int count = b->device_count(state), first = *n;
    if (b->absent_reason) {
        char why[sizeof ctx->devices_absent];
        b->absent_reason(state, why, sizeof why);
        size_t k = strlen(ctx->devices_absent);
        if (why[0])
            snprintf(ctx->devices_absent + k, sizeof ctx->devices_absent - k, "%s%s", k ? "; " : "",
                     why);
    }
    for (int i = 0; i < count && *n < KN_MAX_DEVICES; i++) {
        kn_device *d = &devs[(*n)++];
        *d = (kn_device){
            .backend = b, .state = state, .index = i, .id = *n - 1, .owns_state = i == 0};
        snprintf(d->name, sizeof d->name, "%s:%d", b->name, i);
    }
    if (*n == first && b->close) b->close(ctx, state); /* no device keeps it */
    return KILN_STATUS_OK;
}

/* The device's backend, seen by its allocator as a region source. */
static kiln_status source_alloc(void *user, size_t size, size_t align, void **out) {
    kn_device *d = user;
    return d->backend->region_alloc(d->state, d->index, size, align, out);
}
static void source_free(void *user, void *ptr, size_t size) {
    kn_device *d = user;
    d->backend->region_free(d->state, d->index, ptr, size);
}
static kiln_status source_info(void *user, uint64_t *total, uint64_t *free_b) {
    kn_device *d = user;
    return d->backend->memory_info(d->state, d->index, total, free_b);
}

/* The pinned_host memory kind, seen by its pool as a region source. */
static kiln_status host_source_alloc(void *user, size_t size, size_t align, void **out) {
    kn_device *d = user;
    const kn_backend *b = d->backend;
    return b->host_region_alloc ? b->host_region_alloc(d->state, d->index, size, align, out)
                                : b->region_alloc(d->state, d->index, size, align, out);
}
static void host_source_free(void *user, void *ptr, size_t size) {
    kn_device *d = user;
    const kn_backend *b = d->backend;
    if (b->host_region_free)
        b->host_region_free(d->state, d->index, ptr, size);
    else
        b->region_free(d->state, d->index, ptr, size);
}

/* The host pool grows as asked and has no limit of its own: KILN_MEMORY_LIMIT bounds the
 * device's memory, which is what offload relieves. */
static kiln_status make_host_pool(kiln_context *ctx, kn_device *d) {
    if (!d->backend->host_region_alloc && d->backend->copy_h2d) return KILN_STATUS_OK;
    char name[48];
    snprintf(name, sizeof name, "%s pinned_host", d->name);
    bfc_options o = {.mode = KILN_ALLOC_MODE_GROW, .name = name};
    bfc_region_source src = {d, host_source_alloc, host_source_free, source_info};
    return bfc_create(ctx, &src, &o, &d->host_alloc);
}

kiln_status device_host_alloc(kiln_context *ctx, kn_device *dev, size_t size, const char *tag,
                              void **out) {
    *out = NULL;
    if (!dev->host_alloc)
        return ctx_error(ctx, KILN_STATUS_UNIMPLEMENTED,
                         "%s has no pinned_host memory kind (its backend gives no host memory "
                         "it copies to): %s needs %zu bytes of it",
                         dev->name, tag ? tag : "a host buffer", size);
    return bfc_alloc(dev->host_alloc, size, tag, out);
}

void device_host_free(kn_device *dev, void *ptr) {
    if (dev->host_alloc) bfc_free(dev->host_alloc, ptr);
}

kiln_status device_copy_kinds(kn_device *dev, void *dst, const void *src, size_t n, bool to_host) {
    if (!n) return KILN_STATUS_OK;
    if (dev->backend->copy_kinds)
        return dev->backend->copy_kinds(dev->state, dev->index, dst, src, n, to_host);
    memcpy(dst, src, n);
    return KILN_STATUS_OK;
}

kiln_status device_copy_kinds_start(kn_device *dev, void *dst, const void *src, size_t n,
                                    bool to_host, int *token) {
    *token = -1;
    if (!n || !dev->backend->copy_kinds_start) return device_copy_kinds(dev, dst, src, n, to_host);
    return dev->backend->copy_kinds_start(dev->state, dev->index, dst, src, n, to_host, token);
}

kiln_status device_copy_kinds_wait(kn_device *dev, int token) {
    return token < 0 ? KILN_STATUS_OK
                     : dev->backend->copy_kinds_wait(dev->state, dev->index, token);
}

static kiln_status make_allocator(kiln_context *ctx, const kn_device_options *opts, kn_device *d) {
    kiln_alloc_mode mode = opts->alloc_mode;
    if (mode == KILN_ALLOC_MODE_DEFAULT) mode = d->backend->default_alloc_mode;
    if (mode == KILN_ALLOC_MODE_DEFAULT) mode = KILN_ALLOC_MODE_PREALLOCATE;
    bfc_options o = {.mode = mode,
                     .mem_fraction = opts->mem_fraction,
                     .limit = opts->memory_limit,
                     .name = d->name};
    bfc_region_source src = {d, source_alloc, source_free, source_info};
    return bfc_create(ctx, &src, &o, &d->alloc);
}

kiln_status device_open_all(kiln_context *ctx, const kn_device_options *o) {
    int nb, n = 0;
    const kn_backend *const *list = backend_list(&nb);
    kn_device *devs = host_calloc(ctx, KN_MAX_DEVICES, sizeof *devs);
    if (!devs) return ctx_oom(ctx, "kiln_context_create: devices", KN_MAX_DEVICES * sizeof *devs);
    ctx->devices = devs;
    kiln_status s = KILN_STATUS_OK;
    for (int i = 0; i < nb && !s; i++) s = open_backend(ctx, list[i], &o->backends, devs, &n);
    ctx->n_devices = n;
    for (int i = 0; i < n && !s; i++) s = make_allocator(ctx, o, &devs[i]);
    for (int i = 0; i < n && !s; i++) s = make_host_pool(ctx, &devs[i]);
    for (int i = 0; i < n && !s && o->async_dispatch; i++) {
        s = queue_create(ctx, &devs[i], "compute", &devs[i].compute);
        if (!s) s = queue_create(ctx, &devs[i], "copy", &devs[i].copy);
    }
    if (!s && n == 0) s = ctx_error(ctx, KILN_STATUS_BACKEND, "kiln_context_create: no device");
    if (!s && o->alloc_trace[0]) {
        s = bfc_trace_start(devs[0].alloc, o->alloc_trace);
        char why[KN_ERR_MAX];
        snprintf(why, sizeof why, "%s", kiln_last_error(ctx));
        if (s)
            ctx_error(ctx, s, "%s=\"%s\": %s",
                      o->alloc_trace_from ? o->alloc_trace_from : "KILN_ALLOC_TRACE",
                      o->alloc_trace, why);
    }
    if (s) device_close_all(ctx);
    return s;
}

void device_close_all(kiln_context *ctx) {
    if (!ctx->devices) return;
    /* Every queue finishes its work first: a task may still use any device's memory, and
     * release events of any queue. Tasks never enqueue tasks, so once each queue in turn
     * has gone idle, all are. */
    for (int i = 0; i < ctx->n_devices; i++) {
        queue_idle(ctx->devices[i].compute);
        queue_idle(ctx->devices[i].copy);
    }
    for (int i = 0; i < ctx->n_devices; i++) {
        queue_destroy(ctx->devices[i].compute);
        queue_destroy(ctx->devices[i].copy);
        ctx->devices[i].compute = ctx->devices[i].copy = NULL;
    }
    for (int i = ctx->n_devices - 1; i >= 0; i--) {
        kn_device *d = &ctx->devices[i];
        bfc_destroy(d->alloc);
        if (d->host_alloc) bfc_destroy(d->host_alloc);
        if (d->owns_state && d->backend->close) d->backend->close(ctx, d->state);
    }
    host_free(ctx, ctx->devices, KN_MAX_DEVICES * sizeof *ctx->devices);
    ctx->devices = NULL;
    ctx->n_devices = 0;
}

kn_device *device_get(kiln_context *ctx, int device, const char *what) {
    if (device >= 0 && device < ctx->n_devices) return &ctx->devices[device];
    char names[256] = "";
    for (int i = 0, k = 0; i < ctx->n_devices && k < (int)sizeof names - 40; i++)
        k += snprintf(names + k, sizeof names - (size_t)k, "%s%s", i ? ", " : "",
                      ctx->devices[i].name);
    ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
              "%s: device %d does not exist (this context has %d: %s)%s%s", what, device,
              ctx->n_devices, names, ctx->devices_absent[0] ? "; " : "", ctx->devices_absent);
    return NULL;
}

kiln_status device_copy_h2d(kn_device *to, void *dst, const void *src, size_t n) {
    if (!n) return KILN_STATUS_OK;
    if (to->backend->copy_h2d) return to->backend->copy_h2d(to->state, to->index, dst, src, n);
    memcpy(dst, src, n);
    return KILN_STATUS_OK;
}

kiln_status device_copy_d2h(kn_device *from, void *dst, const void *src, size_t n) {
    if (!n) return KILN_STATUS_OK;
    if (from->backend->copy_d2h)
        return from->backend->copy_d2h(from->state, from->index, dst, src, n);
    memcpy(dst, src, n);
    return KILN_STATUS_OK;
}

kiln_status device_copy(kiln_context *ctx, kn_device *to, void *dst, kn_device *from,
                        const void *src, size_t n) {
    if (!n) return KILN_STATUS_OK;
    if (to->backend == from->backend && to->backend->copy_d2d)
        return to->backend->copy_d2d(to->state, to->index, dst, from->index, src, n);
    if (!from->backend->copy_d2h) return device_copy_h2d(to, dst, src, n);
    if (!to->backend->copy_h2d) return device_copy_d2h(from, dst, src, n);
    void *bounce = host_alloc(ctx, n);
    if (!bounce) return ctx_oom(ctx, "copying between devices: host bounce buffer", n);
    kiln_status s = device_copy_d2h(from, bounce, src, n);
    if (!s) s = device_copy_h2d(to, dst, bounce, n);
    host_free(ctx, bounce, n);
    return s;
}

int device_index(const kiln_context *ctx, const kn_device *dev) {
    return (int)(dev - ctx->devices);
}

/* ------------------------------------------- the public device-memory API ---- */

int kiln_device_count(const kiln_context *ctx) {
    return ctx ? ctx->n_devices : 0;
}

const char *kiln_device_name(const kiln_context *ctx, int device) {
    if (!ctx || device < 0 || device >= ctx->n_devices) return NULL;
    return ctx->devices[device].name;
}

kiln_status kiln_device_get_info(const kiln_context *ctx, int device, kiln_device_info *out) {
    if (!ctx || !out) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get((kiln_context *)ctx, device, "kiln_device_get_info");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    *out = (kiln_device_info){.platform = d->backend->name, .index = d->index, .name = d->name};
    return KILN_STATUS_OK;
}

kiln_status kiln_device_synchronize(kiln_context *ctx, int device) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_synchronize");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    if (!d->compute) return KILN_STATUS_OK; /* synchronous mode: nothing is ever pending */
    char what[64];
    snprintf(what, sizeof what, "kiln_device_synchronize(%s)", d->name);
    /* copies into d from another device run on that device's copy queue (array.c): wait
     * for them too, leaving their errors to that device (and to the arrays they write) */
    for (int i = 0; i < ctx->n_devices; i++)
        if (i != device) queue_idle(ctx->devices[i].copy);
    /* both queues drain and forget their errors; when both failed, the compute queue's
     * message is the one left (a copy rarely fails on its own) */
    kiln_status sc = queue_drain(d->copy, what);
    kiln_status sr = queue_drain(d->compute, what);
    return sr ? sr : sc;
}

kiln_status kiln_device_get_memory_stats(kiln_context *ctx, int device, kiln_memory_stats *out) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_get_memory_stats");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_device_get_memory_stats: out is NULL");
    bfc_stats(d->alloc, out);
    uint64_t total = 0, free_b = 0;
    if (d->backend->memory_info(d->state, d->index, &total, &free_b) == KILN_STATUS_OK) {
        out->device_total_bytes = total;
        out->device_free_bytes = free_b;
    }
    return KILN_STATUS_OK;
}

kiln_status kiln_device_get_memory_kind_stats(kiln_context *ctx, int device, int memory_kind,
                                              kiln_memory_stats *out) {
    const char *op = "kiln_device_get_memory_kind_stats";
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (memory_kind == KILN_MEMORY_DEVICE) return kiln_device_get_memory_stats(ctx, device, out);
    kn_device *d = device_get(ctx, device, op);
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: out is NULL", op);
    if (memory_kind != KILN_MEMORY_PINNED_HOST)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: memory kind %d is not a kiln_memory_kind", op, memory_kind);
    if (!d->host_alloc)
        return ctx_error(ctx, KILN_STATUS_UNIMPLEMENTED, "%s: %s has no pinned_host memory kind",
                         op, d->name);
    bfc_stats(d->host_alloc, out);
    return KILN_STATUS_OK;
}

kiln_status kiln_device_reset_peak(kiln_context *ctx, int device) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_reset_peak");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    bfc_reset_peak(d->alloc);
    if (d->host_alloc) bfc_reset_peak(d->host_alloc);
    return KILN_STATUS_OK;
}

kiln_status kiln_device_trim(kiln_context *ctx, int device, uint64_t *released) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_trim");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    uint64_t n = bfc_trim(d->alloc);
    if (released) *released = n;
    return KILN_STATUS_OK;
}

kiln_status kiln_device_alloc(kiln_context *ctx, int device, size_t size, const char *tag,
                              void **out) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out) return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_device_alloc: out is NULL");
    *out = NULL;
    kn_device *d = device_get(ctx, device, "kiln_device_alloc");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    return device_alloc(d, size, tag, out);
}

kiln_status kiln_device_free(kiln_context *ctx, int device, void *ptr) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_free");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    return device_free(d, ptr);
}

char *kiln_device_memory_report(kiln_context *ctx, int device) {
    if (!ctx) return NULL;
    kn_device *d = device_get(ctx, device, "kiln_device_memory_report");
    return d ? bfc_summary(d->alloc) : NULL;
}

kiln_status kiln_device_trace_start(kiln_context *ctx, int device, const char *path) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_trace_start");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    if (!path || !*path)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_device_trace_start: no path");
    return bfc_trace_start(d->alloc, path);
}

kiln_status kiln_device_trace_stop(kiln_context *ctx, int device) {
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_trace_stop");
    if (!d) return KILN_STATUS_INVALID_ARGUMENT;
    return bfc_trace_stop(d->alloc);
}
