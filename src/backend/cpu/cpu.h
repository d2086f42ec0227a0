/* cpu.h — the CPU backend's parts shared between its files, and what tests may reach.
 *
 * The backend's per-context state (cpu_backend.c) owns the context's C compiler state
 * (cc.h: identity, cache statistics) and its thread pool (pool.h); both are reached only
 * through this state, never through the context. */
#ifndef KILN_CPU_H
#define KILN_CPU_H

#include "backend/backend_impl.h"
#include "cc.h"
#include "pool.h"

/* Loop kernels, as src/codegen prints them. */
typedef void (*cpu_kernel_fn)(void *const *bufs, int64_t begin, int64_t end);

/* A kernel handle (kernel_get): the kernel, and for a kernel whose reduction is split
 * across threads (kd_kernel.parts in src/codegen/kdesc.h) its part function, the number
 * of parts and the scratch bytes of one part, from kiln_k<i>_part and kiln_k<i>_parts.
 * Owned by the program (cc_module_alloc). Here, not in cpu_backend.c, for
 * tests/test_cuda_emulate.c, which puts emulated kernels behind such handles. */
typedef struct cpu_kernel {
    cpu_kernel_fn fn, part;
    int64_t parts, part_bytes;
} cpu_kernel;

/* cpu_runtime.c: points a loaded module's kiln_module_runtime at the table of helpers its
 * kernels call (src/backend/c_runtime.h); before any of its kernels runs. */
void cpu_runtime_bind(cc_module *m);

/* cpu_memory.c: the memory slots of the CPU backend. */
kiln_status cpu_memory_info(void *state, int device, uint64_t *total, uint64_t *free_b);
kiln_status cpu_region_alloc(void *state, int device, size_t size, size_t align, void **out);
void cpu_region_free(void *state, int device, void *ptr, size_t size);

/* The compiler of a CPU backend state (the `state` of a device whose backend is
 * kn_cpu_backend): for its statistics, and for tests that load modules directly. */
cc_compiler *cpu_backend_compiler(void *state);
/* The options the state was opened with (backend_impl.h); the compiler reads them at
 * every load and a pool at its start, so a test may change one after open through this. */
kn_cpu_options *cpu_backend_options(void *state);
/* Device `device`'s thread pool, started on first use with its share of opt.num_threads
 * threads (cpu_backend.c); cpu_backend_pool is device 0's. */
kiln_status cpu_backend_device_pool(void *state, int device, kn_pool **out);
kiln_status cpu_backend_pool(void *state, kn_pool **out);
/* How many devices the state drives (opt.devices). */
int cpu_backend_device_count(void *state);

#endif
