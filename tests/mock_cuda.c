/* mock_cuda.c — a stand-in libcuda.so.1 for tests/test_cuda_mock.c: the driver entry points
 * the GPU backend loads (src/backend/cuda/cuda_api.h), over host memory, so the backend's
 * host side (loading, device discovery, contexts, streams and events, memory modes,
 * staged copies, module handling, launch bookkeeping, release at close) runs and is
 * checked on machines without a GPU. Kernels are not executed: a launch is counted.
 *
 * Device memory is mmap'd with MAP_NORESERVE, so "preallocating" 75% of the pretend 8 GiB
 * device costs nothing until touched. Every object made is counted; mock_cuda_live()
 * tells the test whether the backend released everything. KILN_MOCK_CUDA_FAIL=<name>
 * makes that entry point fail (cuInit, cuDevicePrimaryCtxRetain, cuMemAlloc,
 * cuModuleGetGlobal, cuMemcpyDtoHAsync), KILN_MOCK_CUDA_DEVICES=N pretends N devices
 * (default 1) that share the 8 GiB, and KILN_MOCK_CUDA_SPLIT=1 makes every loop kernel a
 * split reduction with a part kernel (src/codegen/cgen.h).
 *
 * For tests/mock_nccl.c, which stands in for NCCL over this "device" memory: a stream can
 * be held (mock_cuda_stream_hold) while a collective enqueued on it has not completed;
 * cuStreamQuery then says CUDA_ERROR_NOT_READY and cuStreamSynchronize waits (at most 30 s,
 * then fails, where a real driver would wait for ever), and mock_cuda_owns says whether a
 * pointer is device memory. The counters are guarded by one mutex: the ranks of a group
 * use the mock from several threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define TOTAL ((size_t)8 << 30)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER; /* a stream's hold went to 0 */
static long live_objects, live_retains, launches;
static unsigned last_grid, last_grid_y, last_block; /* the last launch's shape */
/* The kernels' names: a function handle is its name's slot here (cuModuleGetFunction), so
 * a launch can say which kernel it ran. */
#define MOCK_FUNCTIONS 4096
static char functions[MOCK_FUNCTIONS][64];
static int n_functions;
static const char *last_function = "";
static size_t used;

typedef struct region {
    void *p;
    size_t n;
    struct region *next;
} region;
static region *regions;

static int failing(const char *name) {
    const char *f = getenv("KILN_MOCK_CUDA_FAIL");
    return f && !strcmp(f, name);
}

long mock_cuda_live(void);
long mock_cuda_live(void) {
    return live_objects + live_retains + (regions != NULL);
}
long mock_cuda_launches(void);
long mock_cuda_launches(void) {
    return launches;
}
/* The grid and block sizes of the last launch, as grid * 65536 + block. */
long mock_cuda_last_launch(void);
long mock_cuda_last_launch(void) {
    pthread_mutex_lock(&mu);
    long r = (long)last_grid * 65536 + (long)last_block;
    pthread_mutex_unlock(&mu);
    return r;
}

/* The name of the last launched kernel ("" before any). */
const char *mock_cuda_last_kernel(void);
const char *mock_cuda_last_kernel(void) {
    pthread_mutex_lock(&mu);
    const char *r = last_function;
    pthread_mutex_unlock(&mu);
    return r;
}

/* The last launch's grid along y (the convolution's groups; 1 for every other kernel). */
long mock_cuda_last_grid_y(void);
long mock_cuda_last_grid_y(void) {
    pthread_mutex_lock(&mu);
    long r = (long)last_grid_y;
    pthread_mutex_unlock(&mu);
    return r;
}

/* A stream object: its first word counts the collectives enqueued on it and not done. */
typedef struct mstream {
    long hold;
    long id; /* 1, 2, ...: the stream's or event's name in the log */
} mstream;

/* The order log (mock_cuda_log): while on, each host<->device copy, kernel launch, event
 * record and stream wait appends a word: "C<stream>" a copy, "L<stream>" a launch,
 * "R<event>@<stream>" a record, "W<stream>@<event>" a wait; streams and events by their
 * number of making. So a test can check which stream a copy ran on and what waited for it. */
static char order_log[8192];
static size_t order_len;
static int order_on;
static long next_id;
static void order_add(const char *kind, const void *a, const void *b) {
    if (!order_on) return;
    char w[48];
    long ia = a ? ((const mstream *)a)->id : 0, ib = b ? ((const mstream *)b)->id : 0;
    int n = b ? snprintf(w, sizeof w, "%s%ld@%ld ", kind, ia, ib)
              : snprintf(w, sizeof w, "%s%ld ", kind, ia);
    if (n > 0 && order_len + (size_t)n < sizeof order_log) {
        memcpy(order_log + order_len, w, (size_t)n + 1);
        order_len += (size_t)n;
    }
}
/* on: start a new log (1) or stop logging (0); returns the log so far. */
const char *mock_cuda_log(int on);
const char *mock_cuda_log(int on) {
    pthread_mutex_lock(&mu);
    if (on) order_len = 0, order_log[0] = 0;
    order_on = on;
    pthread_mutex_unlock(&mu);
    return order_log;
}

void mock_cuda_stream_hold(void *s, long delta);
void mock_cuda_stream_hold(void *s, long delta) {
    pthread_mutex_lock(&mu);
    ((mstream *)s)->hold += delta;
    if (((mstream *)s)->hold <= 0) {
        ((mstream *)s)->hold = 0;
        pthread_cond_broadcast(&released);
    }
    pthread_mutex_unlock(&mu);
}

int mock_cuda_owns(const void *p, size_t n);
int mock_cuda_owns(const void *p, size_t n) {
    int yes = 0;
    pthread_mutex_lock(&mu);
    for (region *r = regions; r && !yes; r = r->next)
        yes = (const char *)p >= (char *)r->p && (const char *)p + n <= (char *)r->p + r->n;
    pthread_mutex_unlock(&mu);
    return yes;
}

static int device_count(void) {
    const char *v = getenv("KILN_MOCK_CUDA_DEVICES");
    int n = v ? atoi(v) : 1;
    return n > 0 ? n : 1;
}

#define API __attribute__((visibility("default")))
API CUresult cuInit(unsigned f);
API CUresult cuInit(unsigned f) {
    (void)f;
    return failing("cuInit") ? 100 : 0; /* CUDA_ERROR_NO_DEVICE */
}
API CUresult cuDriverGetVersion(int *v);
API CUresult cuDriverGetVersion(int *v) {
    *v = 13000;
    return 0;
}
API CUresult cuGetErrorName(CUresult e, const char **s);
API CUresult cuGetErrorName(CUresult e, const char **s) {
    *s = e == 2     ? "CUDA_ERROR_OUT_OF_MEMORY"
         : e == 100 ? "CUDA_ERROR_NO_DEVICE"
                    : "CUDA_ERROR_MOCK";
    return 0;
}
API CUresult cuGetErrorString(CUresult e, const char **s);
API CUresult cuGetErrorString(CUresult e, const char **s) {
    *s = e == 2 ? "out of memory" : e == 100 ? "no CUDA-capable device is detected" : "mock";
    return 0;
}
API CUresult cuDeviceGetCount(int *n);
API CUresult cuDeviceGetCount(int *n) {
    *n = device_count();
    return 0;
}
API CUresult cuDeviceGet(int *d, int i);
API CUresult cuDeviceGet(int *d, int i) {
    *d = i;
    return i >= 0 && i < device_count() ? 0 : 101;
}
API CUresult cuDeviceGetName(char *name, int len, int d);
API CUresult cuDeviceGetName(char *name, int len, int d) {
    (void)d;
    strncpy(name, "Mock GPU", (size_t)len);
    return 0;
}
API CUresult cuDeviceGetAttribute(int *v, int attr, int d);
API CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
    (void)d;
    *v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 16 ? 4 : 1;
    return 0;
}
API CUresult cuDeviceTotalMem_v2(size_t *b, int d);
API CUresult cuDeviceTotalMem_v2(size_t *b, int d) {
    (void)d;
    *b = TOTAL;
    return 0;
}
API CUresult cuDevicePrimaryCtxRetain(void **c, int d);
API CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
    (void)d;
    if (failing("cuDevicePrimaryCtxRetain")) return 2;
    *c = (void *)&live_retains;
    pthread_mutex_lock(&mu);
    live_retains++;
    pthread_mutex_unlock(&mu);
    return 0;
}
API CUresult cuDevicePrimaryCtxRelease_v2(int d);
API CUresult cuDevicePrimaryCtxRelease_v2(int d) {
    (void)d;
    pthread_mutex_lock(&mu);
    live_retains--;
    pthread_mutex_unlock(&mu);
    return 0;
}
API CUresult cuCtxSetCurrent(void *c);
API CUresult cuCtxSetCurrent(void *c) {
    (void)c;
    return 0;
}
API CUresult cuMemGetInfo_v2(size_t *f, size_t *t);
API CUresult cuMemGetInfo_v2(size_t *f, size_t *t) {
    *f = TOTAL - used;
    *t = TOTAL;
    return 0;
}
API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    if (failing("cuMemAlloc")) return 2;
    pthread_mutex_lock(&mu);
    int full = n > TOTAL - used;
    pthread_mutex_unlock(&mu);
    if (full) return 2;
    void *m = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    region *r = malloc(sizeof *r);
    if (m == MAP_FAILED || !r) return 2;
    pthread_mutex_lock(&mu);
    *r = (region){m, n ? n : 1, regions};
    regions = r;
    used += n;
    pthread_mutex_unlock(&mu);
    *p = (CUdeviceptr)(size_t)m;
    return 0;
}
API CUresult cuMemFree_v2(CUdeviceptr p);
API CUresult cuMemFree_v2(CUdeviceptr p) {
    pthread_mutex_lock(&mu);
    for (region **r = &regions; *r; r = &(*r)->next)
        if ((*r)->p == (void *)(size_t)p) {
            region *g = *r;
            *r = g->next;
            used -= g->n;
            munmap(g->p, g->n);
            free(g);
            pthread_mutex_unlock(&mu);
            return 0;
        }
    pthread_mutex_unlock(&mu);
    return 1; /* CUDA_ERROR_INVALID_VALUE: not ours */
}
API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, void *s);
API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, void *s) {
    (void)s;
    return cuMemAlloc_v2(p, n);
}
API CUresult cuMemFreeAsync(CUdeviceptr p, void *s);
API CUresult cuMemFreeAsync(CUdeviceptr p, void *s) {
    (void)s;
    return cuMemFree_v2(p);
}
API CUresult cuMemHostAlloc(void **p, size_t n, unsigned f);
API CUresult cuMemHostAlloc(void **p, size_t n, unsigned f) {
    (void)f;
    /* the driver's pinned memory is page-aligned, as kiln's host pool relies on */
    if (posix_memalign(p, 4096, n ? n : 1)) *p = NULL;
    pthread_mutex_lock(&mu);
    live_objects += *p != NULL;
    pthread_mutex_unlock(&mu);
    return *p ? 0 : 2;
}
API CUresult cuMemFreeHost(void *p);
API CUresult cuMemFreeHost(void *p) {
    free(p);
    pthread_mutex_lock(&mu);
    live_objects--;
    pthread_mutex_unlock(&mu);
    return 0;
}
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st);
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
    pthread_mutex_lock(&mu);
    order_add("C", st, NULL);
    pthread_mutex_unlock(&mu);
    memcpy((void *)(size_t)d, s, n);
    return 0;
}
API CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st);
API CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
    if (failing("cuMemcpyDtoHAsync")) return 1; /* CUDA_ERROR_INVALID_VALUE */
    pthread_mutex_lock(&mu);
    order_add("C", st, NULL);
    pthread_mutex_unlock(&mu);
    memcpy(d, (const void *)(size_t)s, n);
    return 0;
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st);
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
    (void)st;
    memmove((void *)(size_t)d, (const void *)(size_t)s, n);
    return 0;
}
API CUresult cuMemcpyPeerAsync(CUdeviceptr d, void *dc, CUdeviceptr s, void *sc, size_t n,
                               void *st);
API CUresult cuMemcpyPeerAsync(CUdeviceptr d, void *dc, CUdeviceptr s, void *sc, size_t n,
                               void *st) {
    (void)dc, (void)sc;
    return cuMemcpyDtoDAsync_v2(d, s, n, st);
}
API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st);
API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) {
    (void)st;
    memset((void *)(size_t)d, v, n);
    return 0;
}
static CUresult make(void **o) {
    *o = calloc(1, sizeof(mstream));
    pthread_mutex_lock(&mu);
    if (*o) ((mstream *)*o)->id = ++next_id;
    live_objects += *o != NULL;
    pthread_mutex_unlock(&mu);
    return *o ? 0 : 2;
}
static CUresult unmake(void *o) {
    if (!o) return 400; /* CUDA_ERROR_INVALID_HANDLE */
    free(o);
    pthread_mutex_lock(&mu);
    live_objects--;
    pthread_mutex_unlock(&mu);
    return 0;
}
API CUresult cuStreamCreate(void **s, unsigned f);
API CUresult cuStreamCreate(void **s, unsigned f) {
    (void)f;
    return make(s);
}
API CUresult cuStreamDestroy_v2(void *s);
API CUresult cuStreamDestroy_v2(void *s) {
    return unmake(s);
}
API CUresult cuStreamSynchronize(void *s);
API CUresult cuStreamSynchronize(void *s) {
    if (!s) return 400;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    int rc = 0;
    pthread_mutex_lock(&mu);
    while (((mstream *)s)->hold > 0 && rc == 0) rc = pthread_cond_timedwait(&released, &mu, &dl);
    int held = ((mstream *)s)->hold > 0;
    pthread_mutex_unlock(&mu);
    return held ? 999 : 0; /* CUDA_ERROR_UNKNOWN: a real driver would wait for ever */
}
API CUresult cuStreamQuery(void *s);
API CUresult cuStreamQuery(void *s) {
    if (!s) return 400;
    pthread_mutex_lock(&mu);
    int held = ((mstream *)s)->hold > 0;
    pthread_mutex_unlock(&mu);
    return held ? 600 : 0; /* CUDA_ERROR_NOT_READY */
}
API CUresult cuStreamWaitEvent(void *s, void *e, unsigned f);
API CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) {
    (void)f;
    pthread_mutex_lock(&mu);
    if (s && e) order_add("W", s, e);
    pthread_mutex_unlock(&mu);
    return s && e ? 0 : 400;
}
API CUresult cuEventCreate(void **e, unsigned f);
API CUresult cuEventCreate(void **e, unsigned f) {
    (void)f;
    return make(e);
}
API CUresult cuEventDestroy_v2(void *e);
API CUresult cuEventDestroy_v2(void *e) {
    return unmake(e);
}
API CUresult cuEventRecord(void *e, void *s);
API CUresult cuEventRecord(void *e, void *s) {
    pthread_mutex_lock(&mu);
    if (e && s) order_add("R", e, s);
    pthread_mutex_unlock(&mu);
    return e && s ? 0 : 400;
}
API CUresult cuEventSynchronize(void *e);
API CUresult cuEventSynchronize(void *e) {
    return e ? 0 : 400;
}
API CUresult cuModuleLoadData(void **m, const void *image);
API CUresult cuModuleLoadData(void **m, const void *image) {
    /* a cubin is an ELF file */
    if (memcmp(image, "\177ELF", 4)) return 200; /* CUDA_ERROR_INVALID_IMAGE */
    return make(m);
}
API CUresult cuModuleUnload(void *m);
API CUresult cuModuleUnload(void *m) {
    return unmake(m);
}
API CUresult cuModuleGetFunction(void **f, void *m, const char *name);
/* Whether every kernel pretends to be a split reduction (cgen.h): KILN_MOCK_CUDA_SPLIT=1. */
static int split(void) {
    const char *v = getenv("KILN_MOCK_CUDA_SPLIT");
    return v && !strcmp(v, "1");
}
API CUresult cuModuleGetFunction(void **f, void *m, const char *name);
API CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    size_t n = strlen(name);
    if (!m || strncmp(name, "kiln_", 5) || (!split() && n > 5 && !strcmp(name + n - 5, "_part")))
        return 500; /* CUDA_ERROR_NOT_FOUND */
    pthread_mutex_lock(&mu);
    int i = 0;
    while (i < n_functions && strcmp(functions[i], name)) i++;
    if (i == n_functions && n_functions < MOCK_FUNCTIONS)
        snprintf(functions[n_functions++], sizeof functions[0], "%s", name);
    *f = i < MOCK_FUNCTIONS ? functions[i] : m;
    pthread_mutex_unlock(&mu);
    return 0;
}
/* A split kernel's kiln_k<i>_parts: its part kernel's items and scratch bytes. */
static const int64_t parts_global[2] = {3, 48};
API CUresult cuModuleGetGlobal_v2(unsigned long long *p, size_t *bytes, void *m, const char *name);
API CUresult cuModuleGetGlobal_v2(unsigned long long *p, size_t *bytes, void *m, const char *name) {
    if (!m || !split() || failing("cuModuleGetGlobal") || strncmp(name, "kiln_", 5))
        return 500; /* CUDA_ERROR_NOT_FOUND */
    *p = (unsigned long long)(size_t)parts_global;
    *bytes = sizeof parts_global;
    return 0;
}
API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned sh, void *s, void **params,
                            void **extra);
API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned sh, void *s, void **params,
                            void **extra) {
    (void)sh, (void)extra;
    if (!f || !s || !params || !gx || !gy || gy > 65535 || gz != 1 || bx != 256 || by != 1 ||
        bz != 1)
        return 1;
    if (failing("cuLaunchKernel")) return 1;
    pthread_mutex_lock(&mu);
    launches++;
    last_grid = gx, last_grid_y = gy, last_block = bx;
    last_function = f >= (void *)functions[0] && f < (void *)functions[MOCK_FUNCTIONS] ? f : "";
    order_add("L", s, NULL);
    pthread_mutex_unlock(&mu);
    return 0;
}

/* NVRTC itself opens libcuda.so.1 and asks for the driver's private export tables; a
 * driver without them is one NVRTC copes with. */
API CUresult cuGetExportTable(const void **table, const void *uuid);
API CUresult cuGetExportTable(const void **table, const void *uuid) {
    (void)uuid;
    *table = NULL;
    return 801; /* CUDA_ERROR_NOT_SUPPORTED */
}
