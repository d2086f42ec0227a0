/* cuda_backend.c — the GPU backend: NVIDIA devices through the CUDA driver API, kernels
 * compiled by NVRTC (cuda_program.c), matrix products by cuBLAS and kiln's own library
 * kernels (cuda_lib.c) (DESIGN §3). Its devices follow the CPU's as "cuda:0".."cuda:N-1".
 *
 * Everything is loaded at run time (cuda_api.h): with no driver, or no device, the backend
 * has zero devices and says why (absent_reason). open() only loads the driver and counts
 * devices; a device's primary context, streams and events are made at its first use
 * (cu_dev_ready), its pinned staging buffers at its first host copy, NVRTC at the first
 * compile, cuBLAS at the first product.
 *
 * Ordering: each device has a compute stream (kernels, products, library kernels, and the
 * allocations and frees of KILN_ALLOCATOR=platform) and a copy stream. A copy first makes
 * the copy stream wait for everything already on the compute stream and then makes the
 * compute stream wait for the copy, with events: every slot's work is ordered as if on one
 * stream while the host goes on. launch returns once the kernel is queued; synchronize
 * waits for both streams. A communicator's collective (src/comm/nccl.c) is enqueued on the
 * compute stream too (compute_stream), and the run waits for it with stream_done, which
 * never blocks, so a collective whose peer stalls can be given up at a deadline. A host->device
 * copy returns once the source is staged (the caller may reuse it); a device->host copy returns
 * with the bytes in place.
 *
 * Threads: driver calls are thread-safe when the context is current on the calling
 * thread, which every slot makes so (cuCtxSetCurrent is cheap); lazy set-up and the
 * staging buffers are guarded by the device's mutexes. */
#include "cuda_backend.h"

#include <stdio.h>
#include <string.h>

#define STAGE_BYTES   ((size_t)16 << 20) /* each of a device's two pinned staging buffers */
#define BLOCKS_PER_SM 8                  /* 8 blocks of 256 threads fill an SM */

kiln_status cu_fail(cu_state *st, CUresult e, const char *call, const char *what) {
    char t[160];
    if (e == CUDA_ERROR_OUT_OF_MEMORY)
        return ctx_error(st->ctx, KILN_STATUS_DEVICE_OOM, "cuda: %s: %s: %s", what, call,
                         cu_error_text(&st->drv, e, t, sizeof t));
    return ctx_error(st->ctx, KILN_STATUS_BACKEND, "cuda: %s: %s failed: %s", what, call,
                     cu_error_text(&st->drv, e, t, sizeof t));
}

unsigned cu_grid(const cu_dev *d, int64_t items) {
    int64_t max = (int64_t)(d->sms > 0 ? d->sms : 1) * BLOCKS_PER_SM;
    return (unsigned)(items < max ? (items > 0 ? items : 1) : max);
}

/* ---------------------------------------------------------- open/close ---- */

static kiln_status cuda_open(kiln_context *ctx, const kn_backend_options *opts, void **out) {
    cu_state *st = host_calloc(ctx, 1, sizeof *st);
    if (!st) return ctx_oom(ctx, "kiln_context_create: cuda backend", sizeof *st);
    st->ctx = ctx;
    st->opt = opts->cuda;
    pthread_mutex_init(&st->lock, NULL);
    *out = st;
    if (!cu_driver_load(&st->drv, st->absent, sizeof st->absent)) return KILN_STATUS_OK;
    char t[160];
    const cu_driver *D = &st->drv;
    CUresult e = D->cuInit(0);
    if (e) {
        snprintf(st->absent, sizeof st->absent, "cuda: cuInit failed: %s",
                 cu_error_text(D, e, t, sizeof t));
        return KILN_STATUS_OK;
    }
    int ver = 0, n = 0;
    if ((e = D->cuDriverGetVersion(&ver))) {
        snprintf(st->absent, sizeof st->absent, "cuda: cuDriverGetVersion failed: %s",
                 cu_error_text(D, e, t, sizeof t));
        return KILN_STATUS_OK;
    }
    st->driver_version = ver;
    if (ver < KN_CUDA_MIN_DRIVER) {
        snprintf(st->absent, sizeof st->absent,
                 "cuda: the driver supports CUDA %d.%d; kiln needs %d.%d or newer", ver / 1000,
                 ver % 1000 / 10, KN_CUDA_MIN_DRIVER / 1000, KN_CUDA_MIN_DRIVER % 1000 / 10);
        return KILN_STATUS_OK;
    }
    if ((e = D->cuDeviceGetCount(&n)) || n <= 0) {
        snprintf(st->absent, sizeof st->absent, "cuda: %s",
                 e ? cu_error_text(D, e, t, sizeof t) : "the driver reports no device");
        return KILN_STATUS_OK;
    }
    if (!(st->devs = host_calloc(ctx, (size_t)n, sizeof *st->devs))) {
        host_free(ctx, st, sizeof *st);
        *out = NULL;
        return ctx_oom(ctx, "kiln_context_create: cuda devices", (size_t)n * sizeof *st->devs);
    }
    st->n_alloc = n;
    for (int i = 0; i < n; i++) {
        cu_dev *d = &st->devs[i];
        pthread_mutex_init(&d->lock, NULL);
        pthread_mutex_init(&d->stage_lock, NULL);
        pthread_mutex_init(&d->part_lock, NULL);
    }
    for (int i = 0; i < n; i++) {
        cu_dev *d = &st->devs[i];
        if ((e = D->cuDeviceGet(&d->dev, i)) ||
            (e = D->cuDeviceGetAttribute(&d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                         d->dev)) ||
            (e = D->cuDeviceGetAttribute(&d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                         d->dev)) ||
            (e = D->cuDeviceGetAttribute(&d->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                         d->dev)) ||
            (e = D->cuDeviceGetAttribute(&d->pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                         d->dev)) ||
            (e = D->cuDeviceTotalMem(&d->total, d->dev)) ||
            (e = D->cuDeviceGetName(d->name, (int)sizeof d->name, d->dev))) {
            /* the devices before this one are usable; say why the rest are not */
            snprintf(st->absent, sizeof st->absent, "cuda: querying device %d failed: %s", i,
                     cu_error_text(D, e, t, sizeof t));
            break;
        }
        st->n = i + 1;
    }
    return KILN_STATUS_OK;
}

static void dev_release(cu_state *st, cu_dev *d) {
    const cu_driver *D = &st->drv;
    if (!atomic_load(&d->ready)) return;
    D->cuCtxSetCurrent(d->cctx);
    D->cuStreamSynchronize(d->compute);
    D->cuStreamSynchronize(d->copy);
    cu_lib_release(st, d);
    if (d->blas) st->blas.cublasDestroy(d->blas);
    if (d->part_scratch) D->cuMemFree(d->part_scratch);
    d->part_scratch = 0;
    d->part_bytes = 0;
    for (int b = 0; b < 2; b++) {
        if (d->stage[b]) D->cuMemFreeHost(d->stage[b]);
        if (d->stage_ev[b]) D->cuEventDestroy(d->stage_ev[b]);
    }
    for (int k = 0; k < d->n_kind_ev; k++)
        if (d->kind_ev[k]) D->cuEventDestroy(d->kind_ev[k]);
    host_free(st->ctx, d->kind_ev, (size_t)d->n_kind_ev * sizeof *d->kind_ev);
    host_free(st->ctx, d->kind_busy, (size_t)d->n_kind_ev * sizeof *d->kind_busy);
    d->kind_ev = NULL, d->kind_busy = NULL, d->n_kind_ev = 0;
    D->cuEventDestroy(d->ev_compute);
    D->cuEventDestroy(d->ev_copy);
    D->cuStreamDestroy(d->compute);
    D->cuStreamDestroy(d->copy);
    D->cuCtxSetCurrent(NULL);
    D->cuDevicePrimaryCtxRelease(d->dev);
    atomic_store(&d->ready, false);
}

static void cuda_close(kiln_context *ctx, void *state) {
    cu_state *st = state;
    if (!st) return;
    for (int i = 0; i < st->n_alloc; i++) {
        dev_release(st, &st->devs[i]);
        pthread_mutex_destroy(&st->devs[i].lock);
        pthread_mutex_destroy(&st->devs[i].stage_lock);
        pthread_mutex_destroy(&st->devs[i].part_lock);
    }
    host_free(ctx, st->devs, (size_t)st->n_alloc * sizeof *st->devs);
    if (st->blas.lib) cu_cublas_unload(&st->blas);
    if (st->nvrtc.lib) cu_nvrtc_unload(&st->nvrtc);
    cu_driver_unload(&st->drv);
    pthread_mutex_destroy(&st->lock);
    host_free(ctx, st, sizeof *st);
}

static int cuda_device_count(void *state) {
    const cu_state *st = state;
    return st ? st->n : 0;
}

static void cuda_absent_reason(void *state, char *buf, size_t n) {
    const cu_state *st = state;
    snprintf(buf, n, "%s", st ? st->absent : "");
}

/* The streams and events of a device whose primary context is current; on failure the
 * caller (cu_dev_ready) releases the ones made. */
static kiln_status make_streams(cu_state *st, cu_dev *d) {
    const cu_driver *D = &st->drv;
    CU_TRY(st, D->cuStreamCreate(&d->compute, CU_STREAM_NON_BLOCKING), "making a stream");
    CU_TRY(st, D->cuStreamCreate(&d->copy, CU_STREAM_NON_BLOCKING), "making a stream");
    CU_TRY(st, D->cuEventCreate(&d->ev_compute, CU_EVENT_DISABLE_TIMING), "making an event");
    CU_TRY(st, D->cuEventCreate(&d->ev_copy, CU_EVENT_DISABLE_TIMING), "making an event");
    return KILN_STATUS_OK;
}

kiln_status cu_dev_ready(cu_state *st, int i, const char *what) {
    cu_dev *d = &st->devs[i];
    const cu_driver *D = &st->drv;
    if (atomic_load_explicit(&d->ready, memory_order_acquire)) {
        CU_TRY(st, D->cuCtxSetCurrent(d->cctx), what);
        return KILN_STATUS_OK;
    }
    pthread_mutex_lock(&d->lock);
    kiln_status s = KILN_STATUS_OK;
    if (!atomic_load(&d->ready)) {
        CUresult e = D->cuDevicePrimaryCtxRetain(&d->cctx, d->dev);
        if (e) {
            char t[160];
            /* BACKEND even when the driver ran out of memory: an allocator takes a
             * DEVICE_OOM from region_alloc for a plain refusal and words its own message */
            s = ctx_error(st->ctx, KILN_STATUS_BACKEND,
                          "cuda: %s: creating the context of cuda:%d (%s): "
                          "cuDevicePrimaryCtxRetain failed: %s",
                          what, i, d->name, cu_error_text(D, e, t, sizeof t));
        } else if ((e = D->cuCtxSetCurrent(d->cctx))) {
            s = cu_fail(st, e, "cuCtxSetCurrent", what);
            D->cuDevicePrimaryCtxRelease(d->dev);
        } else if ((s = make_streams(st, d))) {
            if (d->ev_copy) D->cuEventDestroy(d->ev_copy);
            if (d->ev_compute) D->cuEventDestroy(d->ev_compute);
            if (d->copy) D->cuStreamDestroy(d->copy);
            if (d->compute) D->cuStreamDestroy(d->compute);
            d->ev_copy = d->ev_compute = NULL;
            d->copy = d->compute = NULL;
            D->cuDevicePrimaryCtxRelease(d->dev);
        } else
            atomic_store_explicit(&d->ready, true, memory_order_release);
    } else {
        CUresult e = D->cuCtxSetCurrent(d->cctx);
        if (e) s = cu_fail(st, e, "cuCtxSetCurrent", what);
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}

kiln_status cu_nvrtc_ready(cu_state *st, const char *what) {
    pthread_mutex_lock(&st->lock);
    if (!st->nvrtc_tried) {
        st->nvrtc_tried = true;
        cu_nvrtc_load(&st->nvrtc, st->nvrtc_why, sizeof st->nvrtc_why);
    }
    bool ok = st->nvrtc.lib != NULL;
    pthread_mutex_unlock(&st->lock);
    if (ok) return KILN_STATUS_OK;
    return ctx_error(st->ctx, KILN_STATUS_BACKEND, "%s: %s (NVRTC compiles kiln's GPU kernels)",
                     what, st->nvrtc_why);
}

/* ------------------------------------------------------------- memory ---- */

/* Before the device's first use its context does not exist yet, and making it only to
 * read the free memory would cost every kiln context (its allocator asks at creation) a
 * CUDA context: the device's total then stands for both. */
static kiln_status cuda_memory_info(void *state, int device, uint64_t *total, uint64_t *free_b) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    if (!atomic_load_explicit(&d->ready, memory_order_acquire)) {
        *total = *free_b = d->total;
        return KILN_STATUS_OK;
    }
    kiln_status s = cu_dev_ready(st, device, "memory_info");
    if (s) return s;
    size_t f = 0, t = 0;
    CU_TRY(st, st->drv.cuMemGetInfo(&f, &t), "reading the device's free memory");
    *total = t;
    *free_b = f;
    return KILN_STATUS_OK;
}

static kiln_status cuda_region_alloc(void *state, int device, size_t size, size_t align,
                                     void **out) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, "allocating device memory");
    if (s) return s;
    CUdeviceptr p = 0;
    bool platform = st->opt.platform_alloc && d->pools;
    CUresult e =
        platform ? st->drv.cuMemAllocAsync(&p, size, d->compute) : st->drv.cuMemAlloc(&p, size);
    if (e == CUDA_ERROR_OUT_OF_MEMORY) return KILN_STATUS_DEVICE_OOM; /* a refusal: no message */
    if (e) return cu_fail(st, e, platform ? "cuMemAllocAsync" : "cuMemAlloc", "allocating");
    if (p % align) { /* the driver aligns to 256 bytes at least; kiln asks for no more today */
        if (platform)
            st->drv.cuMemFreeAsync(p, d->compute);
        else
            st->drv.cuMemFree(p);
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                         "cuda: a region of %zu bytes came back aligned to less than the %zu "
                         "bytes asked for",
                         size, align);
    }
    *out = (void *)(uintptr_t)p;
    return KILN_STATUS_OK;
}

static void cuda_region_free(void *state, int device, void *ptr, size_t size) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    (void)size;
    if (cu_dev_ready(st, device, "freeing device memory")) return;
    bool platform = st->opt.platform_alloc && d->pools;
    if (platform)
        st->drv.cuMemFreeAsync((CUdeviceptr)(uintptr_t)ptr, d->compute);
    else {
        /* cuMemFree does not wait for kernels still reading the region */
        st->drv.cuStreamSynchronize(d->compute);
        st->drv.cuMemFree((CUdeviceptr)(uintptr_t)ptr);
    }
}

/* ------------------------------------------------------------- copies ---- */

/* copy stream after compute: what the copy touches may be in use by queued kernels */
static kiln_status copy_after_compute(cu_state *st, cu_dev *d) {
    CU_TRY(st, st->drv.cuEventRecord(d->ev_compute, d->compute), "ordering a copy");
    CU_TRY(st, st->drv.cuStreamWaitEvent(d->copy, d->ev_compute, 0), "ordering a copy");
    return KILN_STATUS_OK;
}

/* compute stream after the copy: later kernels see its bytes */
static kiln_status compute_after_copy(cu_state *st, cu_dev *d) {
    CU_TRY(st, st->drv.cuEventRecord(d->ev_copy, d->copy), "ordering a copy");
    CU_TRY(st, st->drv.cuStreamWaitEvent(d->compute, d->ev_copy, 0), "ordering a copy");
    return KILN_STATUS_OK;
}

static kiln_status staging_ready(cu_state *st, cu_dev *d) {
    for (int b = 0; b < 2; b++) {
        if (d->stage[b]) continue;
        CU_TRY(st, st->drv.cuMemHostAlloc(&d->stage[b], STAGE_BYTES, CU_MEMHOSTALLOC_PORTABLE),
               "allocating pinned staging memory");
        CU_TRY(st, st->drv.cuEventCreate(&d->stage_ev[b], CU_EVENT_DISABLE_TIMING),
               "making an event");
    }
    return KILN_STATUS_OK;
}

/* Waits until staging buffer b is no longer read or written by a queued copy. */
static kiln_status stage_wait(cu_state *st, cu_dev *d, int b) {
    if (!d->stage_busy[b]) return KILN_STATUS_OK;
    d->stage_busy[b] = false;
    CU_TRY(st, st->drv.cuEventSynchronize(d->stage_ev[b]), "waiting for a staging copy");
    return KILN_STATUS_OK;
}

/* Host -> device through the two staging buffers in turn: the host fills one while the
 * other's DMA runs. Returns once the last piece is staged. */
static kiln_status h2d_locked(cu_state *st, cu_dev *d, void *dst, const void *src, size_t n) {
    kiln_status s = staging_ready(st, d);
    if (!s) s = copy_after_compute(st, d);
    for (size_t off = 0, k = 0; !s && off < n; off += STAGE_BYTES, k++) {
        int b = (int)(k & 1);
        size_t len = n - off < STAGE_BYTES ? n - off : STAGE_BYTES;
        if ((s = stage_wait(st, d, b))) break;
        memcpy(d->stage[b], (const char *)src + off, len);
        CUresult e =
            st->drv.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst + off, d->stage[b], len, d->copy);
        if (!e) e = st->drv.cuEventRecord(d->stage_ev[b], d->copy);
        if (e) s = cu_fail(st, e, "cuMemcpyHtoDAsync", "copying to the device");
        d->stage_busy[b] = !e;
    }
    if (!s) s = compute_after_copy(st, d);
    return s;
}

static kiln_status cuda_copy_h2d(void *state, int device, void *dst, const void *src, size_t n) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, "copying to the device");
    if (s || !n) return s;
    pthread_mutex_lock(&d->stage_lock);
    s = h2d_locked(st, d, dst, src, n);
    pthread_mutex_unlock(&d->stage_lock);
    return s;
}

/* Device -> host: piece k's DMA into one buffer overlaps copying piece k-1 out of the
 * other. Returns with every byte in dst. */
static kiln_status d2h_locked(cu_state *st, cu_dev *d, void *dst, const void *src, size_t n) {
    kiln_status s = staging_ready(st, d);
    if (!s) s = copy_after_compute(st, d);
    size_t prev_off = 0, prev_len = 0, off = 0;
    for (int k = 0; !s; k++) {
        int b = k & 1;
        size_t len = off < n ? (n - off < STAGE_BYTES ? n - off : STAGE_BYTES) : 0;
        if (len) {
            if ((s = stage_wait(st, d, b))) break;
            CUresult e = st->drv.cuMemcpyDtoHAsync(d->stage[b], (CUdeviceptr)(uintptr_t)src + off,
                                                   len, d->copy);
            if (!e) e = st->drv.cuEventRecord(d->stage_ev[b], d->copy);
            if (e) {
                s = cu_fail(st, e, "cuMemcpyDtoHAsync", "copying to the host");
                break;
            }
            d->stage_busy[b] = true;
        }
        if (prev_len) { /* the previous piece, in the other buffer */
            if ((s = stage_wait(st, d, 1 - b))) break;
            memcpy((char *)dst + prev_off, d->stage[1 - b], prev_len);
        }
        if (!len) break; /* that was the last piece */
        prev_off = off;
        prev_len = len;
        off += len;
    }
    for (int b = 0; b < 2; b++) /* after a failure: nothing may still write the buffers */
        if (d->stage_busy[b]) {
            d->stage_busy[b] = false;
            st->drv.cuEventSynchronize(d->stage_ev[b]);
        }
    return s;
}

/* ------------------------------------------------------ pinned_host kind ---- */

/* A region of page-locked host memory for the device's pinned_host pool (host offload):
 * the copy engines reach it directly, so copies to it run at the link's rate. */
static kiln_status cuda_host_region_alloc(void *state, int device, size_t size, size_t align,
                                          void **out) {
    cu_state *st = state;
    kiln_status s = cu_dev_ready(st, device, "allocating pinned host memory");
    if (s) return s;
    void *p = NULL;
    CUresult e = st->drv.cuMemHostAlloc(&p, size, CU_MEMHOSTALLOC_PORTABLE);
    if (e == CUDA_ERROR_OUT_OF_MEMORY) return KILN_STATUS_DEVICE_OOM;
    if (e) return cu_fail(st, e, "cuMemHostAlloc", "allocating pinned host memory");
    if ((uintptr_t)p % align) {
        st->drv.cuMemFreeHost(p);
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL,
                         "cuda: pinned host memory of %zu bytes came back aligned to less than "
                         "%zu bytes",
                         size, align);
    }
    *out = p;
    return KILN_STATUS_OK;
}

static void cuda_host_region_free(void *state, int device, void *ptr, size_t size) {
    cu_state *st = state;
    (void)size;
    /* kernels and copies still queued may touch it: the device finishes first */
    if (!cu_dev_ready(st, device, "freeing pinned host memory"))
        st->drv.cuStreamSynchronize(st->devs[device].compute);
    st->drv.cuMemFreeHost(ptr);
}

/* Device memory <-> its pinned host memory, on the compute stream: in order with the
 * kernels around it, and the host does not wait. */
static kiln_status cuda_copy_kinds(void *state, int device, void *dst, const void *src, size_t n,
                                   bool to_host) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, "copying between memory kinds");
    if (s || !n) return s;
    CUresult e = to_host
                     ? st->drv.cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, n, d->compute)
                     : st->drv.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, n, d->compute);
    return e ? cu_fail(st, e, to_host ? "cuMemcpyDtoHAsync" : "cuMemcpyHtoDAsync",
                       "copying between memory kinds")
             : KILN_STATUS_OK;
}

/* A free token for an overlapped copy, its event made at first use (under stage_lock). */
static kiln_status kind_token(cu_state *st, cu_dev *d, int *token) {
    int k = 0;
    while (k < d->n_kind_ev && d->kind_busy[k]) k++;
    if (k == d->n_kind_ev) {
        int n = d->n_kind_ev ? 2 * d->n_kind_ev : 16;
        CUevent *ev = host_realloc(st->ctx, d->kind_ev, (size_t)d->n_kind_ev * sizeof *ev,
                                   (size_t)n * sizeof *ev);
        if (!ev) return ctx_oom(st->ctx, "cuda: copy events", (size_t)n * sizeof *ev);
        d->kind_ev = ev;
        bool *busy = host_realloc(st->ctx, d->kind_busy, (size_t)d->n_kind_ev * sizeof *busy,
                                  (size_t)n * sizeof *busy);
        if (!busy) return ctx_oom(st->ctx, "cuda: copy events", (size_t)n * sizeof *busy);
        d->kind_busy = busy;
        for (int j = d->n_kind_ev; j < n; j++) ev[j] = NULL, busy[j] = false;
        d->n_kind_ev = n;
    }
    if (!d->kind_ev[k])
        CU_TRY(st, st->drv.cuEventCreate(&d->kind_ev[k], CU_EVENT_DISABLE_TIMING),
               "making an event");
    *token = k;
    return KILN_STATUS_OK;
}

/* Device memory <-> its pinned host memory on the copy stream, after the kernels queued
 * so far: the kernels launched next run beside it until cuda_copy_kinds_wait. */
static kiln_status cuda_copy_kinds_start(void *state, int device, void *dst, const void *src,
                                         size_t n, bool to_host, int *token) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    *token = -1;
    kiln_status s = cu_dev_ready(st, device, "copying between memory kinds");
    if (s) return s;
    pthread_mutex_lock(&d->stage_lock);
    int k = -1;
    s = kind_token(st, d, &k);
    if (!s) s = copy_after_compute(st, d);
    if (!s) {
        CUresult e = to_host
                         ? st->drv.cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, n, d->copy)
                         : st->drv.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, n, d->copy);
        if (!e) e = st->drv.cuEventRecord(d->kind_ev[k], d->copy);
        if (e)
            s = cu_fail(st, e, to_host ? "cuMemcpyDtoHAsync" : "cuMemcpyHtoDAsync",
                        "copying between memory kinds");
    }
    if (!s)
        d->kind_busy[k] = true, *token = k;
    else if (k >= 0) /* a copy that could not be queued may still have been ordered after
                      * compute: the compute stream waits for whatever the copy stream holds */
        compute_after_copy(st, d);
    pthread_mutex_unlock(&d->stage_lock);
    return s;
}

/* The kernels launched after this wait for the copy `token` (on the device). */
static kiln_status cuda_copy_kinds_wait(void *state, int device, int token) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, "waiting for a copy between memory kinds");
    pthread_mutex_lock(&d->stage_lock);
    if (!s && token >= 0 && token < d->n_kind_ev && d->kind_busy[token]) {
        CUresult e = st->drv.cuStreamWaitEvent(d->compute, d->kind_ev[token], 0);
        if (e) {
            s = cu_fail(st, e, "cuStreamWaitEvent", "waiting for a copy between memory kinds");
            st->drv.cuStreamSynchronize(d->copy); /* the host waits instead */
        }
    }
    if (token >= 0 && token < d->n_kind_ev) d->kind_busy[token] = false;
    pthread_mutex_unlock(&d->stage_lock);
    return s;
}

static kiln_status cuda_copy_d2h(void *state, int device, void *dst, const void *src, size_t n) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, "copying to the host");
    if (s || !n) return s;
    pthread_mutex_lock(&d->stage_lock);
    s = d2h_locked(st, d, dst, src, n);
    pthread_mutex_unlock(&d->stage_lock);
    return s;
}

static kiln_status cuda_copy_d2d(void *state, int dst_device, void *dst, int src_device,
                                 const void *src, size_t n) {
    cu_state *st = state;
    cu_dev *sd = &st->devs[src_device], *dd = &st->devs[dst_device];
    kiln_status s = KILN_STATUS_OK;
    if (dst_device != src_device) s = cu_dev_ready(st, dst_device, "copying between devices");
    if (!s) s = cu_dev_ready(st, src_device, "copying between devices");
    if (s || !n) return s;
    /* both devices' locks, in index order: copies the other way cannot deadlock */
    cu_dev *first = src_device < dst_device ? sd : dd, *second = first == sd ? dd : sd;
    pthread_mutex_lock(&first->stage_lock);
    if (dst_device != src_device) pthread_mutex_lock(&second->stage_lock);
    s = copy_after_compute(st, sd);
    if (!s && dst_device != src_device) { /* the destination's queued kernels too */
        CUresult e = st->drv.cuEventRecord(dd->ev_compute, dd->compute);
        if (!e) e = st->drv.cuStreamWaitEvent(sd->copy, dd->ev_compute, 0);
        if (e) s = cu_fail(st, e, "cuStreamWaitEvent", "ordering a copy between devices");
    }
    if (!s) {
        CUdeviceptr to = (CUdeviceptr)(uintptr_t)dst, from = (CUdeviceptr)(uintptr_t)src;
        CUresult e = dst_device == src_device
                         ? st->drv.cuMemcpyDtoDAsync(to, from, n, sd->copy)
                         : st->drv.cuMemcpyPeerAsync(to, dd->cctx, from, sd->cctx, n, sd->copy);
        if (e) s = cu_fail(st, e, "cuMemcpyDtoDAsync/cuMemcpyPeerAsync", "copying on the device");
    }
    if (!s) s = compute_after_copy(st, sd);
    if (!s && dst_device != src_device) {
        CUresult e = st->drv.cuStreamWaitEvent(dd->compute, sd->ev_copy, 0);
        if (e) s = cu_fail(st, e, "cuStreamWaitEvent", "ordering a copy between devices");
    }
    if (dst_device != src_device) pthread_mutex_unlock(&second->stage_lock);
    pthread_mutex_unlock(&first->stage_lock);
    return s;
}

/* ------------------------------------------------------------ launches ---- */

static kiln_status cuda_launch_prepare(void *state, int device) {
    return cu_dev_ready(state, device, "preparing a run");
}

/* The device's scratch for split reductions, at least `bytes` (under part_lock). Growing
 * waits for the kernels queued before: cuMemFree does not wait for a kernel still using
 * the old buffer. The scratch is the backend's, like cuBLAS's workspace, outside the
 * memory plan: KN_CUDA_PARTS * KN_CUDA_PART_BYTES (8 KiB) per value reduced to one or a
 * few, and for a split column reduction its parts' slots, about KN_CUDA_PARTS per 32
 * columns (schedule.c, cuda_column_split). */
static kiln_status part_scratch(cu_state *st, cu_dev *d, size_t bytes) {
    if (d->part_bytes >= bytes) return KILN_STATUS_OK;
    const cu_driver *D = &st->drv;
    if (d->part_scratch) {
        CU_TRY(st, D->cuStreamSynchronize(d->compute), "growing a split reduction's scratch");
        D->cuMemFree(d->part_scratch);
        d->part_scratch = 0;
        d->part_bytes = 0;
    }
    CU_TRY(st, D->cuMemAlloc(&d->part_scratch, bytes), "a split reduction's scratch");
    d->part_bytes = bytes;
    return KILN_STATUS_OK;
}

static kiln_status launch_fn(cu_state *st, cu_dev *d, CUfunction f, void **params, int64_t items) {
    CUresult e = st->drv.cuLaunchKernel(f, cu_grid(d, items), 1, 1, KN_CUDA_BLOCK, 1, 1, 0,
                                        d->compute, params, NULL);
    return e ? cu_fail(st, e, "cuLaunchKernel", "launching a kernel") : KILN_STATUS_OK;
}

/* A split reduction (cgen.h) is two launches over one scratch: its part kernel, then the
 * kernel combining the parts. */
static kiln_status cuda_launch(void *state, int device, void *kernel, void *const *bufs, int n_bufs,
                               int64_t items, int64_t grain) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    const cu_kernel *k = kernel;
    (void)grain; /* the kernel's grid-stride loop balances items itself */
    if (items <= 0) return KILN_STATUS_OK;
    enum { INLINE = 64 };
    void *inline_params[INLINE + 2], **params = inline_params;
    size_t pbytes = ((size_t)n_bufs + 2) * sizeof *params;
    if (n_bufs > INLINE && !(params = host_alloc(st->ctx, pbytes)))
        return ctx_oom(st->ctx, "cuda: kernel parameters", pbytes);
    for (int i = 0; i < n_bufs; i++) params[i] = (void *)&bufs[i]; /* the driver copies them */
    kiln_status s;
    if (!k->part) {
        params[n_bufs] = &items;
        s = launch_fn(st, d, k->fn, params, items);
    } else {
        int64_t part_items = k->part_items;
        pthread_mutex_lock(&d->part_lock);
        s = part_scratch(st, d, (size_t)k->part_bytes);
        params[n_bufs] = &d->part_scratch;
        params[n_bufs + 1] = &part_items;
        if (!s) s = launch_fn(st, d, k->part, params, part_items);
        params[n_bufs + 1] = &items;
        if (!s) s = launch_fn(st, d, k->fn, params, items);
        pthread_mutex_unlock(&d->part_lock);
    }
    if (params != inline_params) host_free(st->ctx, params, pbytes);
    return s;
}

static kiln_status cuda_synchronize(void *state, int device) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, "waiting for the device");
    if (s) return s;
    /* a kernel's fault (an illegal address) surfaces here, named by the driver */
    CU_TRY(st, st->drv.cuStreamSynchronize(d->copy), "waiting for the device's copies");
    CU_TRY(st, st->drv.cuStreamSynchronize(d->compute), "waiting for the device's kernels");
    return KILN_STATUS_OK;
}

/* ----------------------------------------------------- device collectives ---- */

static kiln_status cuda_compute_stream(void *state, int device, void **stream) {
    cu_state *st = state;
    kiln_status s = cu_dev_ready(st, device, "a collective on the device");
    if (!s) *stream = st->devs[device].compute;
    return s;
}

static kiln_status cuda_stream_done(void *state, int device, bool *done) {
    cu_state *st = state;
    kiln_status s = cu_dev_ready(st, device, "waiting for a collective");
    if (s) return s;
    CUresult e = st->drv.cuStreamQuery(st->devs[device].compute);
    *done = e == CUDA_SUCCESS;
    /* a kernel's fault surfaces here as well, named by the driver */
    if (e && e != CUDA_ERROR_NOT_READY)
        return cu_fail(st, e, "cuStreamQuery", "waiting for a collective");
    return KILN_STATUS_OK;
}

const kn_backend kn_cuda_backend = {
    .name = "cuda",
    .source_language = "cuda",
    .default_alloc_mode = KILN_ALLOC_MODE_PREALLOCATE, /* JAX's 75% of the device */
    .open = cuda_open,
    .close = cuda_close,
    .device_count = cuda_device_count,
    .absent_reason = cuda_absent_reason,
    .memory_info = cuda_memory_info,
    .region_alloc = cuda_region_alloc,
    .region_free = cuda_region_free,
    .copy_h2d = cuda_copy_h2d,
    .copy_d2h = cuda_copy_d2h,
    .copy_kinds_start = cuda_copy_kinds_start,
    .copy_kinds_wait = cuda_copy_kinds_wait,
    .copy_d2d = cuda_copy_d2d,
    .host_region_alloc = cuda_host_region_alloc,
    .host_region_free = cuda_host_region_free,
    .copy_kinds = cuda_copy_kinds,
    .program_compile = cu_program_compile,
    .program_free = cu_program_free,
    .kernel_get = cu_kernel_get,
    .launch_prepare = cuda_launch_prepare,
    .launch = cuda_launch,
    .lib_supports = cu_lib_supports,
    .lib_run = cu_lib_run,
    .lib_scratch = cu_lib_scratch,
    .synchronize = cuda_synchronize,
    .compute_stream = cuda_compute_stream,
    .stream_done = cuda_stream_done,
};
