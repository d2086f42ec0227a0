/* backend_impl.h — the table of functions a backend provides (DESIGN §3).
 *
 * A backend is a const table of function pointers plus an opaque state pointer that the
 * backend itself owns (NULL for the CPU, which needs none). kiln never stores mutable
 * backend data in globals: whatever a backend needs per context hangs off `state`, made by
 * `open` and released by `close`.
 *
 * Every slot says whether it is required and what kiln does when an optional slot is NULL.
 * Device indices are the backend's own (0 .. device_count-1), not the context's.
 *
 * Memory contract (what src/alloc relies on): region_alloc returns `size` bytes aligned to
 * at least `align` (a power of two, at least 256) or reports a refusal; the allocator never
 * writes into device memory, so a region need not be host-addressable. region_free gets
 * back exactly the pointer and size that region_alloc produced. */
#ifndef KILN_BACKEND_IMPL_H
#define KILN_BACKEND_IMPL_H

#include "base/base.h"

typedef struct kn_backend {
    /* Required. Short lower-case name used in messages and device names ("cpu"). */
    const char *name;

    /* Optional; 0 (KILN_ALLOC_DEFAULT) means PREALLOCATE, which suits a device whose memory
     * is its own. The CPU says GROW: its memory is shared with the rest of the machine. */
    kiln_alloc_mode default_alloc_mode;

    /* Optional; NULL: the backend needs no state and `state` is NULL. Makes the per-context
     * state (driver handles, streams, caches). Sets ctx's message on failure. */
    kiln_status (*open)(kiln_context *ctx, void **state);
    /* Optional; NULL: nothing to release. Called once after every device is closed. */
    void (*close)(kiln_context *ctx, void *state);

    /* Required. How many devices this backend drives (0 is allowed: none present). */
    int (*device_count)(void *state);

    /* Required. Total memory of the device and the part of it that is free now (what a
     * region_alloc could still get, as well as the backend can tell). */
    kiln_status (*memory_info)(void *state, int device, uint64_t *total, uint64_t *free);

    /* Required. A raw region of device memory. Returns KILN_OK, or KILN_ERR_DEVICE_OOM when
     * the device refuses (the allocator then backs off or reports; the backend sets no
     * message for a refusal), or another status with the context's message set. */
    kiln_status (*region_alloc)(void *state, int device, size_t size, size_t align, void **out);
    /* Required. Returns a region; never fails. */
    void (*region_free)(void *state, int device, void *ptr, size_t size);

    /* ---- slots for later milestones; NULL until a backend implements them ---- */

    /* Optional; NULL: device memory is host memory and a plain memcpy does (the CPU). */
    kiln_status (*copy_h2d)(void *state, int device, void *dst, const void *src, size_t n);
    kiln_status (*copy_d2h)(void *state, int device, void *dst, const void *src, size_t n);
    /* Optional; NULL: copy_d2h then copy_h2d through a host buffer. */
    kiln_status (*copy_d2d)(void *state, int dst_device, void *dst, int src_device, const void *src,
                            size_t n);
    /* Optional; NULL: this backend cannot run compiled programs yet (KILN_ERR_UNIMPLEMENTED).
     * Compiles one translation unit of kernels; *module is released with module_free. */
    kiln_status (*compile_module)(void *state, int device, const char *source, void **module);
    void (*module_free)(void *state, void *module);
    /* Optional with compile_module. Runs kernel `name` of `module` over `args`. */
    kiln_status (*launch)(void *state, int device, void *module, const char *name, void **args,
                          int n_args);
    /* Optional; NULL: matrix products are generated as kernels. Row-major f32/f64 GEMM,
     * C = alpha * op(A) op(B) + beta * C. */
    kiln_status (*gemm)(void *state, int device, kiln_dtype dtype, bool trans_a, bool trans_b,
                        int64_t m, int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                        const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
    /* Optional; NULL: the backend is synchronous and there is nothing to wait for. */
    kiln_status (*synchronize)(void *state, int device);
} kn_backend;

/* The backends compiled into this build, in the order their devices are numbered (the CPU
 * first). The list is constant; *n receives its length. */
const kn_backend *const *backend_list(int *n);

/* The CPU backend (src/backend/cpu/cpu_memory.c). */
extern const kn_backend kn_cpu_backend;

#endif
