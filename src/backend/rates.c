/* rates.c — what a device's compute, its memory and its host link do per second,
 * measured once per device and kept on it: the cost model with which the memory budget
 * weighs recomputing a value (its FLOPs at the device's matrix-product rate, the elements
 * it writes at its memory's rate) against offloading it (its bytes over the link to the
 * pinned_host memory kind, there and back).
 *
 * The measurements are small (a 384^3 f32 product, 8 MiB copies; each the best of three)
 * and are made the first time a budgeted compile asks, on the device it compiles for.
 * They stay for the context's life, so every compile of a process weighs alike; kiln
 * only compares them with each other, never with a wall clock. Two threads asking at once
 * may both measure; the last answer is kept, and either is a measurement of the device.
 * A device too full for the probes (its KILN_MEMORY_LIMIT nearly reached) gives no rates:
 * the search then does not offload, and a later compile measures again. */
#include "device.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GEMM_N     384
#define LINK_BYTES ((size_t)8 << 20)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Device buffers filled with `v` from a host staging copy. */
static kiln_status device_fill(kiln_context *ctx, kn_device *d, size_t bytes, float v, void **out) {
    kiln_status s = device_alloc(d, bytes, "rate probe", out);
    if (s) return s;
    float *h = host_alloc(ctx, bytes);
    if (!h) {
        device_free(d, *out);
        *out = NULL;
        return ctx_oom(ctx, "measuring the device's rates", bytes);
    }
    for (size_t i = 0; i < bytes / sizeof *h; i++) h[i] = v;
    s = device_copy_h2d(d, *out, h, bytes); /* a memcpy where device memory is host memory */
    host_free(ctx, h, bytes);
    return s;
}

/* FLOP/s of an f32 matrix product on d (0 when d has no product). */
static kiln_status gemm_rate(kiln_context *ctx, kn_device *d, double *rate) {
    const kn_backend *b = d->backend;
    *rate = 0;
    if (!b->lib_run || !b->lib_supports || !b->lib_supports(d->state, d->index, KN_LIB_GEMM, NULL))
        return KILN_STATUS_OK;
    size_t bytes = (size_t)GEMM_N * GEMM_N * sizeof(float);
    void *buf[4] = {0}; /* a, b, c and no scratch */
    kiln_status s = KILN_STATUS_OK;
    for (int i = 0; i < 3 && !s; i++) s = device_fill(ctx, d, bytes, i == 2 ? 0.0f : 0.5f, &buf[i]);
    if (!s && b->launch_prepare) s = b->launch_prepare(d->state, d->index);
    kn_lib_desc desc = {.op = KN_LIB_GEMM, .dtype = KILN_DTYPE_F32};
    desc.gemm = (kn_gemm_desc){
        .lda = GEMM_N, .ldb = GEMM_N, .batch = 1, .m = GEMM_N, .n = GEMM_N, .k = GEMM_N};
    double best = 0;
    for (int r = 0; r < 4 && !s; r++) { /* the first warms the library up */
        double t0 = now_s();
        s = b->lib_run(d->state, d->index, &desc, buf);
        if (!s && b->synchronize) s = b->synchronize(d->state, d->index);
        double t = now_s() - t0;
        if (r && t > 0 && (best == 0 || t < best)) best = t;
    }
    for (int i = 0; i < 3; i++) device_free(d, buf[i]);
    if (!s && best > 0) *rate = 2.0 * GEMM_N * GEMM_N * GEMM_N / best;
    return s;
}

/* Bytes/s of copies between d's memory and its pinned_host memory, both ways. */
static kiln_status link_rate(kiln_context *ctx, kn_device *d, double *rate) {
    *rate = 0;
    if (!d->host_alloc) return KILN_STATUS_OK;
    void *dev = NULL, *host = NULL;
    kiln_status s = device_fill(ctx, d, LINK_BYTES, 1.0f, &dev);
    if (!s) s = device_host_alloc(ctx, d, LINK_BYTES, "rate probe", &host);
    if (!s) memset(host, 0, LINK_BYTES);
    double best = 0;
    for (int r = 0; r < 4 && !s; r++) {
        double t0 = now_s();
        s = device_copy_kinds(d, host, dev, LINK_BYTES, true);
        if (!s) s = device_copy_kinds(d, dev, host, LINK_BYTES, false);
        if (!s && d->backend->synchronize) s = d->backend->synchronize(d->state, d->index);
        double t = now_s() - t0;
        if (r && t > 0 && (best == 0 || t < best)) best = t;
    }
    device_free(d, dev);
    device_host_free(d, host);
    if (!s && best > 0) *rate = 2.0 * (double)LINK_BYTES / best;
    return s;
}

/* Bytes/s moved by a copy within d's memory (each byte read and written). */
static kiln_status mem_rate(kiln_context *ctx, kn_device *d, double *rate) {
    *rate = 0;
    void *a = NULL, *b = NULL;
    kiln_status s = device_fill(ctx, d, LINK_BYTES, 1.0f, &a);
    if (!s) s = device_fill(ctx, d, LINK_BYTES, 0.0f, &b);
    double best = 0;
    for (int r = 0; r < 4 && !s; r++) {
        double t0 = now_s();
        s = device_copy(ctx, d, b, d, a, LINK_BYTES);
        if (!s && d->backend->synchronize) s = d->backend->synchronize(d->state, d->index);
        double t = now_s() - t0;
        if (r && t > 0 && (best == 0 || t < best)) best = t;
    }
    device_free(d, a);
    device_free(d, b);
    if (!s && best > 0) *rate = 2.0 * (double)LINK_BYTES / best;
    return s;
}

kiln_status device_rates(kiln_context *ctx, kn_device *d, double *flops, double *link,
                         double *mem) {
    double f = atomic_load(&d->flop_rate), l = atomic_load(&d->link_rate),
           m = atomic_load(&d->mem_rate);
    if (f == 0 && l == 0 && m == 0) {
        kiln_status s = gemm_rate(ctx, d, &f);
        if (!s) s = link_rate(ctx, d, &l);
        if (!s) s = mem_rate(ctx, d, &m);
        if (s == KILN_STATUS_DEVICE_OOM) { /* no room for the probes now: no rates, retried */
            *flops = *link = *mem = 0;     /* by a later compile (the caller then recomputes) */
            return KILN_STATUS_OK;
        }
        if (s) return s;
        atomic_store(&d->flop_rate, f > 0 ? f : -1.0); /* -1: measured, none */
        atomic_store(&d->link_rate, l > 0 ? l : -1.0);
        atomic_store(&d->mem_rate, m > 0 ? m : -1.0);
    }
    *flops = f > 0 ? f : 0;
    *link = l > 0 ? l : 0;
    *mem = m > 0 ? m : 0;
    return KILN_STATUS_OK;
}
