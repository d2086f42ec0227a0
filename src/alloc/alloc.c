/* alloc.c — the public device-memory API (kiln.h, "device memory"): argument checks and
 * device lookup in front of each device's allocator. */
#include "alloc.h"

#include <string.h>

int kiln_device_count(const kiln_context *ctx) {
    return ctx ? ctx->n_devices : 0;
}

const char *kiln_device_name(const kiln_context *ctx, int device) {
    if (!ctx || device < 0 || device >= ctx->n_devices) return NULL;
    return ctx->devices[device].name;
}

kiln_status kiln_device_memory_stats(kiln_context *ctx, int device, kiln_memory_stats *out) {
    if (!ctx) return KILN_ERR_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_memory_stats");
    if (!d) return KILN_ERR_INVALID_ARGUMENT;
    if (!out)
        return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "kiln_device_memory_stats: out is NULL");
    bfc_stats(d->alloc, out);
    return KILN_OK;
}

kiln_status kiln_device_reset_peak(kiln_context *ctx, int device) {
    if (!ctx) return KILN_ERR_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_reset_peak");
    if (!d) return KILN_ERR_INVALID_ARGUMENT;
    bfc_reset_peak(d->alloc);
    return KILN_OK;
}

kiln_status kiln_device_trim(kiln_context *ctx, int device, uint64_t *released) {
    if (!ctx) return KILN_ERR_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_trim");
    if (!d) return KILN_ERR_INVALID_ARGUMENT;
    uint64_t n = bfc_trim(d->alloc);
    if (released) *released = n;
    return KILN_OK;
}

kiln_status kiln_device_alloc(kiln_context *ctx, int device, size_t size, const char *tag,
                              void **out) {
    if (!ctx) return KILN_ERR_INVALID_ARGUMENT;
    if (!out) return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "kiln_device_alloc: out is NULL");
    *out = NULL;
    kn_device *d = device_get(ctx, device, "kiln_device_alloc");
    if (!d) return KILN_ERR_INVALID_ARGUMENT;
    return alloc_alloc(d, size, tag, out);
}

kiln_status kiln_device_free(kiln_context *ctx, int device, void *ptr) {
    if (!ctx) return KILN_ERR_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_free");
    if (!d) return KILN_ERR_INVALID_ARGUMENT;
    return alloc_free(d, ptr);
}

char *kiln_device_memory_summary(kiln_context *ctx, int device) {
    if (!ctx) return NULL;
    kn_device *d = device_get(ctx, device, "kiln_device_memory_summary");
    return d ? bfc_summary(d->alloc) : NULL;
}

kiln_status kiln_device_trace_start(kiln_context *ctx, int device, const char *path) {
    if (!ctx) return KILN_ERR_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_trace_start");
    if (!d) return KILN_ERR_INVALID_ARGUMENT;
    if (!path || !*path)
        return ctx_error(ctx, KILN_ERR_INVALID_ARGUMENT, "kiln_device_trace_start: no path");
    return bfc_trace_start(d->alloc, path);
}

kiln_status kiln_device_trace_stop(kiln_context *ctx, int device) {
    if (!ctx) return KILN_ERR_INVALID_ARGUMENT;
    kn_device *d = device_get(ctx, device, "kiln_device_trace_stop");
    if (!d) return KILN_ERR_INVALID_ARGUMENT;
    return bfc_trace_stop(d->alloc);
}
