/* device.h — the devices of a context. Each device is one device of one backend, with its
 * own allocator and, in asynchronous mode, its two work queues (queue.h); the devices of
 * the first backend in backend_list (the CPU: KILN_CPU_DEVICES of them) come first, so
 * ctx->devices[0] is a CPU. Devices are made with the context and destroyed with it, after
 * their queues have finished every task. What the rest of kiln calls to get device memory
 * (device_alloc) and to move bytes between devices (device_copy), and the public
 * kiln_device_* API are here: the allocator (src/alloc) sees only the region source a
 * device gives it. Nothing here knows any particular backend: everything goes through the
 * table (backend_impl.h).
 *
 * Invariant: a device's backend state is shared by all devices of that backend and is
 * owned by the first of them (owns_state), which closes it. */
#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

#include "alloc/bfc.h"

#include <stdatomic.h>
#include "backend/backend_impl.h"
#include "backend/queue.h"

#define KN_MAX_DEVICES 128

typedef struct kn_device {
    const kn_backend *backend;
    void *state;     /* the backend's per-context state (may be NULL) */
    int index;       /* the device's number within its backend */
    int id;          /* its number in the context (ctx->devices[id]) */
    bool owns_state; /* closes the backend state on destroy */
    char name[32];   /* "cpu:0" */
    bfc_allocator *alloc;
    /* The pinned_host memory kind's pool (host offload): regions from the backend's
     * host_region_alloc, or its region_alloc on a host-memory device; NULL when the
     * backend has neither (no host memory kind). */
    bfc_allocator *host_alloc;
    kn_queue *compute, *copy; /* asynchronous mode only (KILN_ASYNC), else NULL */
    /* rates.c: FLOP/s of an f32 product, bytes/s to and from pinned_host memory and
     * bytes/s of a copy within the device's memory, measured at the first device_rates;
     * 0 not yet, -1 measured and absent */
    _Atomic(double) flop_rate, link_rate, mem_rate;
} kn_device;

/* What making the devices needs: the allocators' settings and each backend's options,
 * filled once by kiln_context_create (runtime/context.c) from the resolved configuration. */
typedef struct kn_device_options {
    kiln_alloc_mode alloc_mode;   /* KILN_ALLOCATOR; DEFAULT: each backend's default */
    double mem_fraction;          /* KILN_MEM_FRACTION: what preallocate reserves */
    uint64_t memory_limit;        /* KILN_MEMORY_LIMIT per device; 0: none */
    char alloc_trace[1024];       /* KILN_ALLOC_TRACE: trace device 0's allocations here */
    const char *alloc_trace_from; /* where that path came from, for messages */
    bool async_dispatch;          /* KILN_ASYNC: every device gets its two queues */
    kn_backend_options backends;
} kn_device_options;

/* Makes every device of every compiled-in backend (opening each backend with
 * o->backends), each with an allocator configured from o; starts the KILN_ALLOC_TRACE
 * trace on device 0. Sets ctx's message. */
kiln_status device_open_all(kiln_context *ctx, const kn_device_options *o);
/* Releases every device, its allocator and its memory. */
void device_close_all(kiln_context *ctx);
/* The device with context index `device`, or NULL with ctx's message set (naming `what`). */
kn_device *device_get(kiln_context *ctx, int device, const char *what);

/* size bytes on dev, 256-byte aligned; tag names the owner in OOM messages and traces. */
static inline kiln_status device_alloc(kn_device *dev, size_t size, const char *tag, void **out) {
    return bfc_alloc(dev->alloc, size, tag, out);
}
static inline kiln_status device_free(kn_device *dev, void *ptr) {
    return bfc_free(dev->alloc, ptr);
}

/* size bytes of dev's pinned_host memory kind, 256-byte aligned (host offload's arena).
 * KILN_STATUS_UNIMPLEMENTED with a message when the device has no such memory. */
kiln_status device_host_alloc(kiln_context *ctx, kn_device *dev, size_t size, const char *tag,
                              void **out);
void device_host_free(kn_device *dev, void *ptr);
/* n bytes between dev's memory and its pinned_host memory (to_host: dst is the host
 * side), in order with dev's kernels (backend_impl.h, copy_kinds). */
kiln_status device_copy_kinds(kn_device *dev, void *dst, const void *src, size_t n, bool to_host);
/* device_copy_kinds's copy beside the kernels launched after it, on a backend that has a
 * copy queue (kn_backend.copy_kinds_start); *token is -1 when it ran in order instead.
 * device_copy_kinds_wait orders every kernel launched after it after the copy. */
kiln_status device_copy_kinds_start(kn_device *dev, void *dst, const void *src, size_t n,
                                    bool to_host, int *token);
kiln_status device_copy_kinds_wait(kn_device *dev, int token);

/* The device's f32 product rate (FLOP/s), its link to pinned_host memory (bytes/s, both
 * ways) and its memory's copy rate (bytes/s, read + written), measured once (rates.c); 0
 * for what the device lacks. */
kiln_status device_rates(kiln_context *ctx, kn_device *d, double *flops, double *link, double *mem);

/* n bytes from src on device `from` to dst on device `to`, through the backends' copy
 * slots (a plain memcpy between host-memory devices). Sets ctx's message on failure. */
kiln_status device_copy(kiln_context *ctx, kn_device *to, void *dst, kn_device *from,
                        const void *src, size_t n);
/* Host bytes to the device, and back. */
kiln_status device_copy_h2d(kn_device *to, void *dst, const void *src, size_t n);
kiln_status device_copy_d2h(kn_device *from, void *dst, const void *src, size_t n);
/* The context index of dev. */
int device_index(const kiln_context *ctx, const kn_device *dev);

#endif
