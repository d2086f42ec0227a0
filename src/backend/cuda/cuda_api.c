/* cuda_api.c — dlopen/dlsym of the CUDA driver, NVRTC and cuBLAS (see cuda_api.h).
 *
 * A missing library is an ordinary condition (no GPU, no toolkit) and its message says
 * which names were tried and what the loader said; a library found without a symbol kiln
 * needs is a version mismatch, named as such. A library that loaded is never dlclose'd:
 * unloading libcuda under live driver threads is not supported by NVIDIA, and NVRTC and
 * cuBLAS carry process-wide state (their own C++ runtime's pools) that unloading would
 * leak; dlopen's reference count makes a later context's load free anyway. (A library
 * found without a symbol kiln needs is closed again at once.) */
#include "cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Opens the first of names that loads; why lists them all and the last error. */
static void *open_first(char *why_out, size_t m, const char *what, const char *const *names,
                        int n) {
    char tried[256] = "", first[256] = "";
    for (int i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        const char *e = dlerror();
        if (!i) snprintf(first, sizeof first, "%s", e ? e : ""); /* the canonical name's */
        size_t k = strlen(tried);
        snprintf(tried + k, sizeof tried - k, "%s%s", i ? ", " : "", names[i]);
    }
    snprintf(why_out, m, "cuda: cannot load %s (tried %s): %s", what, tried, first);
    return NULL;
}

/* Looks up each (field, symbol) pair; false with the message set at the first missing. */
typedef struct sym {
    size_t offset; /* of the function pointer in the table */
    const char *name;
} sym;

static bool find_syms(char *why, size_t m, void *lib, void *table, const sym *s, int n,
                      const char *what) {
    for (int i = 0; i < n; i++) {
        void *f = dlsym(lib, s[i].name);
        if (!f) {
            snprintf(why, m, "cuda: %s has no %s (a version older than kiln needs?)", what,
                     s[i].name);
            return false;
        }
        memcpy((char *)table + s[i].offset, &f, sizeof f);
    }
    return true;
}

#define S(T, field, name)                                                                          \
    { offsetof(T, field), name }

bool cu_driver_load(cu_driver *d, char *why, size_t m) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
    static const sym syms[] = {
        S(cu_driver, cuInit, "cuInit"),
        S(cu_driver, cuDriverGetVersion, "cuDriverGetVersion"),
        S(cu_driver, cuGetErrorName, "cuGetErrorName"),
        S(cu_driver, cuGetErrorString, "cuGetErrorString"),
        S(cu_driver, cuDeviceGetCount, "cuDeviceGetCount"),
        S(cu_driver, cuDeviceGet, "cuDeviceGet"),
        S(cu_driver, cuDeviceGetName, "cuDeviceGetName"),
        S(cu_driver, cuDeviceGetAttribute, "cuDeviceGetAttribute"),
        S(cu_driver, cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
        S(cu_driver, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
        S(cu_driver, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
        S(cu_driver, cuCtxSetCurrent, "cuCtxSetCurrent"),
        S(cu_driver, cuMemGetInfo, "cuMemGetInfo_v2"),
        S(cu_driver, cuMemAlloc, "cuMemAlloc_v2"),
        S(cu_driver, cuMemFree, "cuMemFree_v2"),
        S(cu_driver, cuMemAllocAsync, "cuMemAllocAsync"),
        S(cu_driver, cuMemFreeAsync, "cuMemFreeAsync"),
        S(cu_driver, cuMemHostAlloc, "cuMemHostAlloc"),
        S(cu_driver, cuMemFreeHost, "cuMemFreeHost"),
        S(cu_driver, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
        S(cu_driver, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
        S(cu_driver, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
        S(cu_driver, cuMemcpyPeerAsync, "cuMemcpyPeerAsync"),
        S(cu_driver, cuMemsetD8Async, "cuMemsetD8Async"),
        S(cu_driver, cuStreamCreate, "cuStreamCreate"),
        S(cu_driver, cuStreamDestroy, "cuStreamDestroy_v2"),
        S(cu_driver, cuStreamSynchronize, "cuStreamSynchronize"),
        S(cu_driver, cuStreamQuery, "cuStreamQuery"),
        S(cu_driver, cuStreamWaitEvent, "cuStreamWaitEvent"),
        S(cu_driver, cuEventCreate, "cuEventCreate"),
        S(cu_driver, cuEventDestroy, "cuEventDestroy_v2"),
        S(cu_driver, cuEventRecord, "cuEventRecord"),
        S(cu_driver, cuEventSynchronize, "cuEventSynchronize"),
        S(cu_driver, cuModuleLoadData, "cuModuleLoadData"),
        S(cu_driver, cuModuleUnload, "cuModuleUnload"),
        S(cu_driver, cuModuleGetFunction, "cuModuleGetFunction"),
        S(cu_driver, cuLaunchKernel, "cuLaunchKernel"),
        S(cu_driver, cuModuleGetGlobal, "cuModuleGetGlobal_v2"),
    };
    *d = (cu_driver){0};
    if (!(d->lib = open_first(why, m, "the CUDA driver", names, 2))) return false;
    if (!find_syms(why, m, d->lib, d, syms, (int)(sizeof syms / sizeof *syms), "libcuda")) {
        dlclose(d->lib);
        *d = (cu_driver){0};
        return false;
    }
    return true;
}

void cu_driver_unload(cu_driver *d) {
    *d = (cu_driver){0}; /* the library stays loaded on purpose (see the top of the file) */
}

const char *cu_error_text(const cu_driver *d, CUresult e, char *buf, size_t n) {
    const char *name = NULL, *str = NULL;
    if (d->cuGetErrorName) d->cuGetErrorName(e, &name);
    if (d->cuGetErrorString) d->cuGetErrorString(e, &str);
    snprintf(buf, n, "%s (%s)", name ? name : "unknown CUresult", str ? str : "no description");
    return buf;
}

bool cu_nvrtc_load(cu_nvrtc *r, char *why, size_t m) {
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    static const sym syms[] = {
        S(cu_nvrtc, nvrtcGetErrorString, "nvrtcGetErrorString"),
        S(cu_nvrtc, nvrtcVersion, "nvrtcVersion"),
        S(cu_nvrtc, nvrtcCreateProgram, "nvrtcCreateProgram"),
        S(cu_nvrtc, nvrtcCompileProgram, "nvrtcCompileProgram"),
        S(cu_nvrtc, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize"),
        S(cu_nvrtc, nvrtcGetProgramLog, "nvrtcGetProgramLog"),
        S(cu_nvrtc, nvrtcGetCUBINSize, "nvrtcGetCUBINSize"),
        S(cu_nvrtc, nvrtcGetCUBIN, "nvrtcGetCUBIN"),
        S(cu_nvrtc, nvrtcDestroyProgram, "nvrtcDestroyProgram"),
    };
    *r = (cu_nvrtc){0};
    if (!(r->lib = open_first(why, m, "NVRTC", names, 3))) return false;
    if (!find_syms(why, m, r->lib, r, syms, (int)(sizeof syms / sizeof *syms), "libnvrtc")) {
        dlclose(r->lib);
        *r = (cu_nvrtc){0};
        return false;
    }
    nvrtcResult e = r->nvrtcVersion(&r->major, &r->minor);
    if (e) {
        snprintf(why, m, "cuda: nvrtcVersion failed: %s", r->nvrtcGetErrorString(e));
        cu_nvrtc_unload(r);
        return false;
    }
    return true;
}

void cu_nvrtc_unload(cu_nvrtc *r) {
    *r = (cu_nvrtc){0}; /* stays loaded: see the top of the file */
}

bool cu_cublas_load(cu_cublas *b, char *why, size_t m) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    static const sym syms[] = {
        S(cu_cublas, cublasCreate, "cublasCreate_v2"),
        S(cu_cublas, cublasDestroy, "cublasDestroy_v2"),
        S(cu_cublas, cublasSetStream, "cublasSetStream_v2"),
        S(cu_cublas, cublasSetMathMode, "cublasSetMathMode"),
        S(cu_cublas, cublasSgemmStridedBatched, "cublasSgemmStridedBatched"),
        S(cu_cublas, cublasDgemmStridedBatched, "cublasDgemmStridedBatched"),
        S(cu_cublas, cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx"),
        S(cu_cublas, cublasSgemmBatched, "cublasSgemmBatched"),
        S(cu_cublas, cublasDgemmBatched, "cublasDgemmBatched"),
        S(cu_cublas, cublasGemmBatchedEx, "cublasGemmBatchedEx"),
    };
    *b = (cu_cublas){0};
    if (!(b->lib = open_first(why, m, "cuBLAS", names, 3))) return false;
    if (!find_syms(why, m, b->lib, b, syms, (int)(sizeof syms / sizeof *syms), "libcublas")) {
        dlclose(b->lib);
        *b = (cu_cublas){0};
        return false;
    }
    return true;
}

void cu_cublas_unload(cu_cublas *b) {
    *b = (cu_cublas){0}; /* stays loaded: see the top of the file */
}
