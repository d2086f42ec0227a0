/* cuda_api.h — the CUDA driver, NVRTC and cuBLAS entry points kiln uses, declared here with
 * their documented ABI (cuda.h, nvrtc.h and cublas_api.h of CUDA 12 and 13) and found at run
 * time with dlopen/dlsym, so libkiln builds without the toolkit and runs without a driver.
 *
 * Only what the GPU backend calls is declared: handles are opaque pointers, enums are the
 * ints the headers give them, and a function whose header maps it to a versioned symbol
 * (cuMemAlloc -> cuMemAlloc_v2) is looked up under that symbol. A table is filled once per
 * context (the backend's state owns it): no global state, and each library is dlclose'd
 * by the state that opened it, except the driver, which is kept loaded (see cuda_api.c).
 *
 * Every loader returns false with `why` naming the library or symbol that failed and why
 * (dlerror's text), so "a CUDA device was asked for and cannot be had" can say which; a
 * failed load leaves nothing loaded. */
#ifndef KILN_CUDA_API_H
#define KILN_CUDA_API_H

#include "base/base.h"

#include <stddef.h>

/* ---------------------------------------------------------------- driver ---- */

typedef int CUresult; /* CUDA_SUCCESS = 0 */
#define CUDA_SUCCESS               0
#define CUDA_ERROR_OUT_OF_MEMORY   2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE       100
#define CUDA_ERROR_NOT_FOUND       500
#define CUDA_ERROR_NOT_READY       600
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 on 64-bit hosts */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

/* CUdevice_attribute values used */
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED   115
#define CU_STREAM_NON_BLOCKING                       0x1
#define CU_EVENT_DISABLE_TIMING                      0x2
#define CU_MEMHOSTALLOC_PORTABLE                     0x1

/* The oldest driver kiln accepts: CUDA 12.0's (cuDriverGetVersion gives 1000*major +
 * 10*minor). NVRTC 13's cubins need a CUDA 13 driver; the compile then fails with the
 * driver's own message. */
#define KN_CUDA_MIN_DRIVER 12000

typedef struct cu_driver {
    void *lib;
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuGetErrorName)(CUresult e, const char **name);
    CUresult (*cuGetErrorString)(CUresult e, const char **str);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*cuDeviceGetAttribute)(int *v, int attr, CUdevice dev);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev); /* _v2 */
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev); /* _v2 */
    CUresult (*cuCtxSetCurrent)(CUcontext ctx);
    CUresult (*cuMemGetInfo)(size_t *free_b, size_t *total); /* _v2 */
    CUresult (*cuMemAlloc)(CUdeviceptr *p, size_t bytes);    /* _v2 */
    CUresult (*cuMemFree)(CUdeviceptr p);                    /* _v2 */
    CUresult (*cuMemAllocAsync)(CUdeviceptr *p, size_t bytes, CUstream s);
    CUresult (*cuMemFreeAsync)(CUdeviceptr p, CUstream s);
    CUresult (*cuMemHostAlloc)(void **p, size_t bytes, unsigned flags);
    CUresult (*cuMemFreeHost)(void *p);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t n, CUstream s); /* _v2 */
    CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t n, CUstream s);       /* _v2 */
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s); /* _v2 */
    CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                  size_t n, CUstream s);
    CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
    CUresult (*cuStreamCreate)(CUstream *s, unsigned flags);
    CUresult (*cuStreamDestroy)(CUstream s); /* _v2 */
    CUresult (*cuStreamSynchronize)(CUstream s);
    CUresult (*cuStreamQuery)(CUstream s); /* CUDA_ERROR_NOT_READY: work still queued */
    CUresult (*cuStreamWaitEvent)(CUstream s, CUevent e, unsigned flags);
    CUresult (*cuEventCreate)(CUevent *e, unsigned flags);
    CUresult (*cuEventDestroy)(CUevent e); /* _v2 */
    CUresult (*cuEventRecord)(CUevent e, CUstream s);
    CUresult (*cuEventSynchronize)(CUevent e);
    CUresult (*cuModuleLoadData)(CUmodule *m, const void *image);
    CUresult (*cuModuleUnload)(CUmodule m);
    CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
    CUresult (*cuModuleGetGlobal)(CUdeviceptr *p, size_t *bytes, CUmodule m,
                                  const char *name); /* _v2 */
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
                               void **extra);
} cu_driver;

/* ----------------------------------------------------------------- NVRTC ---- */

typedef int nvrtcResult; /* NVRTC_SUCCESS = 0 */
typedef struct _nvrtcProgram *nvrtcProgram;

typedef struct cu_nvrtc {
    void *lib;
    const char *(*nvrtcGetErrorString)(nvrtcResult r);
    nvrtcResult (*nvrtcVersion)(int *major, int *minor);
    nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *p, const char *src, const char *name,
                                      int n_headers, const char *const *headers,
                                      const char *const *include_names);
    nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram p, int n_opts, const char *const *opts);
    nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram p, size_t *n);
    nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram p, char *log);
    nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram p, size_t *n);
    nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram p, char *cubin);
    nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *p);
    int major, minor; /* nvrtcVersion */
} cu_nvrtc;

/* ---------------------------------------------------------------- cuBLAS ---- */

typedef int cublasStatus_t; /* CUBLAS_STATUS_SUCCESS = 0 */
typedef struct cublasContext *cublasHandle_t;
#define CUBLAS_OP_N                0
#define CUBLAS_OP_T                1
#define CUBLAS_DEFAULT_MATH        0
#define CUBLAS_PEDANTIC_MATH       2
#define CUBLAS_TF32_TENSOR_OP_MATH 3
/* cudaDataType (library_types.h), cublasComputeType_t and cublasGemmAlgo_t values */
#define CUDA_R_32F          0
#define CUDA_R_16F          2
#define CUDA_R_16BF         14
#define CUBLAS_COMPUTE_32F  68
#define CUBLAS_GEMM_DEFAULT (-1)

typedef struct cu_cublas {
    void *lib;
    cublasStatus_t (*cublasCreate)(cublasHandle_t *h);               /* _v2 */
    cublasStatus_t (*cublasDestroy)(cublasHandle_t h);               /* _v2 */
    cublasStatus_t (*cublasSetStream)(cublasHandle_t h, CUstream s); /* _v2 */
    cublasStatus_t (*cublasSetMathMode)(cublasHandle_t h, int mode);
    cublasStatus_t (*cublasSgemmStridedBatched)(cublasHandle_t h, int ta, int tb, int m, int n,
                                                int k, const float *alpha, const float *a, int lda,
                                                long long sa, const float *b, int ldb, long long sb,
                                                const float *beta, float *c, int ldc, long long sc,
                                                int batch);
    cublasStatus_t (*cublasDgemmStridedBatched)(cublasHandle_t h, int ta, int tb, int m, int n,
                                                int k, const double *alpha, const double *a,
                                                int lda, long long sa, const double *b, int ldb,
                                                long long sb, const double *beta, double *c,
                                                int ldc, long long sc, int batch);
    /* bf16 and f16 products: a, b and c of one type (CUDA_R_16BF / CUDA_R_16F), alpha and
     * beta f32 as the compute type (CUBLAS_COMPUTE_32F) wants */
    cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t h, int ta, int tb, int m, int n,
                                                 int k, const void *alpha, const void *a,
                                                 int a_type, int lda, long long sa, const void *b,
                                                 int b_type, int ldb, long long sb,
                                                 const void *beta, void *c, int c_type, int ldc,
                                                 long long sc, int batch, int compute, int algo);
    /* the same products over arrays of matrix pointers in device memory, for batches whose
     * strides are no single progression */
    cublasStatus_t (*cublasSgemmBatched)(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                         const float *alpha, const float *const *a, int lda,
                                         const float *const *b, int ldb, const float *beta,
                                         float *const *c, int ldc, int batch);
    cublasStatus_t (*cublasDgemmBatched)(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                         const double *alpha, const double *const *a, int lda,
                                         const double *const *b, int ldb, const double *beta,
                                         double *const *c, int ldc, int batch);
    cublasStatus_t (*cublasGemmBatchedEx)(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                          const void *alpha, const void *const *a, int a_type,
                                          int lda, const void *const *b, int b_type, int ldb,
                                          const void *beta, void *const *c, int c_type, int ldc,
                                          int batch, int compute, int algo);
} cu_cublas;

/* Loads the driver (libcuda.so.1) and every entry point above. */
bool cu_driver_load(cu_driver *d, char *why, size_t n);
void cu_driver_unload(cu_driver *d);
/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for e, into buf. */
const char *cu_error_text(const cu_driver *d, CUresult e, char *buf, size_t n);

/* NVRTC: libnvrtc.so.13, .so.12, then libnvrtc.so; fills major/minor. */
bool cu_nvrtc_load(cu_nvrtc *r, char *why, size_t n);
void cu_nvrtc_unload(cu_nvrtc *r);

/* cuBLAS: libcublas.so.13, .so.12, then libcublas.so. */
bool cu_cublas_load(cu_cublas *b, char *why, size_t n);
void cu_cublas_unload(cu_cublas *b);

#endif
