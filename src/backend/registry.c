/* registry.c — the backends compiled into this build. The list is a constant table (no
 * registration at run time, so no mutable global); the CPU comes first so that device 0 of
 * every context is the CPU; the GPU's devices, when a driver and a device are present, follow
 * as cuda:0, cuda:1, ... */
#include "backend_impl.h"

const kn_backend *const *backend_list(int *n) {
    static const kn_backend *const list[] = {&kn_cpu_backend, &kn_cuda_backend};
    *n = (int)(sizeof list / sizeof list[0]);
    return list;
}
