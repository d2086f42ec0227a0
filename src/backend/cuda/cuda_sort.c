/* cuda_sort.c — argsort on the GPU (the backend's argsort library op, backend_impl.h's
 * kn_sort_desc): the positions that sort each row of x along one axis, stably, the
 * first k of them.
 *
 * Each element gets the order-preserving unsigned key the CPU gives it (cpu_sort.c: a
 * float's bits in offset binary, -0 and NaNs made one value unless the order is total,
 * integers with the sign bit flipped, the key complemented when descending), and the
 * elements are compared as (key, position) pairs: all pairs differ, so any correct sort
 * of them is the stable sort, and every device and thread count gives the same positions.
 *
 * A block takes a row at a time. A row of up to SORT_SHARED elements is bitonic-sorted in
 * shared memory (padded to a power of two with pairs that sort last), then its first k
 * positions written. A longer row is a simple, correct fallback that needs no scratch:
 * each thread ranks its elements by counting the pairs below them (O(n^2) per row) and
 * writes those that rank below k to their rank. The source is plain CUDA C++, so that
 * tests/test_cuda_emulate.c runs this very code on the CPU. */
#include "cuda_backend.h"
#include "cuda_program.h"
#include "cuda_half.h"

/* The kernels' parameter, the same layout on both sides (8-byte fields only). */
typedef struct sort_params {
    int64_t outer, n, inner, k, descending, total;
} sort_params;

static const char sort_source[] =
    "/* kiln's argsort (src/backend/cuda/cuda_sort.c) */\n"
    "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t; typedef unsigned short uint16_t;\n"
    "typedef unsigned char uint8_t;\n"
    "#define SORT_THREADS 256\n"
    "#define SORT_SHARED 2048\n"
    "struct sort_params { int64_t outer, n, inner, k, descending, total; };\n" CU_HALF_TYPES
    /* a float's bits as an order-preserving key; lax.sort's order folds -0 into +0 and
     * every NaN into one +NaN */
    "__device__ __forceinline__ uint64_t key32(uint32_t b, int64_t total) {\n"
    "    if (!total) {\n"
    "        if (!(b & 0x7fffffffu)) b = 0;\n"
    "        if ((b & 0x7fffffffu) > 0x7f800000u) b = 0x7fc00000u;\n"
    "    }\n"
    "    return (uint64_t)(b & 0x80000000u ? ~b : b | 0x80000000u);\n"
    "}\n"
    "__device__ __forceinline__ uint64_t key_of(float x, int64_t t) { return "
    "key32(__float_as_uint(x), t); }\n"
    "__device__ __forceinline__ uint64_t key_of(bf16 x, int64_t t) { return "
    "key32((uint32_t)x.h << 16, t); }\n"
    /* f16 widened exactly, in integer arithmetic (a NaN keeps its sign) */
    "__device__ __forceinline__ uint64_t key_of(f16 x, int64_t t) {\n"
    "    uint32_t s = (uint32_t)(x.h & 0x8000u) << 16, e = (x.h >> 10) & 31u, m = x.h & 0x3ffu;\n"
    "    uint32_t b;\n"
    "    if (e == 31u) b = s | 0x7f800000u | (m << 13);\n"
    "    else if (e) b = s | ((e + 112u) << 23) | (m << 13);\n"
    "    else if (!m) b = s;\n"
    "    else { /* subnormal: normalise m 2^-24 */\n"
    "        int sh = 0;\n"
    "        while (!(m & 0x400u)) m <<= 1, sh++;\n"
    "        b = s | ((uint32_t)(113 - sh) << 23) | ((m & 0x3ffu) << 13);\n"
    "    }\n"
    "    return key32(b, t);\n"
    "}\n"
    "__device__ __forceinline__ uint64_t key_of(double x, int64_t total) {\n"
    "    uint64_t b = (uint64_t)__double_as_longlong(x), sg = 1ULL << 63, inf = 0x7ffULL << 52;\n"
    "    if (!total) {\n"
    "        if (!(b & ~sg)) b = 0;\n"
    "        if ((b & ~sg) > inf) b = inf | 1ULL << 51;\n"
    "    }\n"
    "    return b & sg ? ~b : b | sg;\n"
    "}\n"
    "__device__ __forceinline__ uint64_t key_of(int32_t x, int64_t) { return "
    "(uint64_t)((uint32_t)x ^ 0x80000000u); }\n"
    "__device__ __forceinline__ uint64_t key_of(int64_t x, int64_t) { return (uint64_t)x ^ "
    "(1ULL << 63); }\n"
    "__device__ __forceinline__ uint64_t key_of(uint8_t x, int64_t) { return x != 0; }\n"
    /* the key of position j of the row at base, complemented when descending (within
     * the key's width: flip) */
    "template <typename T> __device__ __forceinline__ uint64_t row_key(const T *x, int64_t base, "
    "int64_t j, const sort_params &p, uint64_t flip) { return key_of(x[base + j * p.inner], "
    "p.total) ^ flip; }\n"
    "__device__ __forceinline__ bool below(uint64_t ka, uint32_t pa, uint64_t kb, uint32_t pb) { "
    "return ka < kb || (ka == kb && pa < pb); }\n"
    "template <typename T> __device__ void argsort(const T *x, int32_t *out, const sort_params &p) "
    "{\n"
    "    __shared__ uint64_t sk[SORT_SHARED];\n"
    "    __shared__ uint32_t sp[SORT_SHARED];\n"
    "    const int tid = threadIdx.x;\n"
    "    const uint64_t flip = !p.descending ? 0 : sizeof(T) == 8 ? ~0ULL : 0xffffffffULL;\n"
    "    const int64_t rows = p.outer * p.inner;\n"
    "    int64_t n2 = 1;\n"
    "    while (n2 < p.n) n2 <<= 1;\n"
    "    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {\n"
    "        const int64_t o = r / p.inner, q = r % p.inner, base = o * p.n * p.inner + q;\n"
    "        int32_t *dst = out + o * p.k * p.inner + q;\n"
    "        if (n2 <= SORT_SHARED) {\n"
    "            for (int64_t j = tid; j < n2; j += SORT_THREADS) {\n"
    "                sk[j] = j < p.n ? row_key(x, base, j, p, flip) : ~0ULL;\n"
    "                sp[j] = j < p.n ? (uint32_t)j : 0xffffffffu;\n"
    "            }\n"
    "            __syncthreads();\n"
    /* bitonic: pair (lo, lo + stride) ordered ascending when lo's `size` bit is clear */
    "            for (int64_t size = 2; size <= n2; size <<= 1)\n"
    "                for (int64_t stride = size / 2; stride > 0; stride >>= 1) {\n"
    "                    for (int64_t i = tid; i < n2 / 2; i += SORT_THREADS) {\n"
    "                        int64_t lo = 2 * stride * (i / stride) + i % stride, hi = lo + "
    "stride;\n"
    "                        bool up = !(lo & size);\n"
    "                        if (below(sk[hi], sp[hi], sk[lo], sp[lo]) == up) {\n"
    "                            uint64_t tk = sk[lo]; sk[lo] = sk[hi]; sk[hi] = tk;\n"
    "                            uint32_t tp = sp[lo]; sp[lo] = sp[hi]; sp[hi] = tp;\n"
    "                        }\n"
    "                    }\n"
    "                    __syncthreads();\n"
    "                }\n"
    "            for (int64_t j = tid; j < p.k; j += SORT_THREADS) dst[j * p.inner] = "
    "(int32_t)sp[j];\n"
    "            __syncthreads();\n"
    "        } else {\n"
    "            for (int64_t j = tid; j < p.n; j += SORT_THREADS) {\n"
    "                uint64_t kj = row_key(x, base, j, p, flip);\n"
    "                int64_t rank = 0;\n"
    "                for (int64_t i = 0; i < p.n; i++)\n"
    "                    rank += below(row_key(x, base, i, p, flip), (uint32_t)i, kj, "
    "(uint32_t)j);\n"
    "                if (rank < p.k) dst[rank * p.inner] = (int32_t)j;\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "}\n"
    "#define ARGSORT(name, T) extern \"C\" __global__ void __launch_bounds__(SORT_THREADS) "
    "name(const T *x, int32_t *out, sort_params p) { argsort<T>(x, out, p); }\n"
    "ARGSORT(kiln_argsort_f32, float)\n"
    "ARGSORT(kiln_argsort_f64, double)\n"
    "ARGSORT(kiln_argsort_i32, int32_t)\n"
    "ARGSORT(kiln_argsort_i64, int64_t)\n"
    "ARGSORT(kiln_argsort_bf16, bf16)\n"
    "ARGSORT(kiln_argsort_f16, f16)\n"
    "ARGSORT(kiln_argsort_bool, uint8_t)\n";

const char *cu_sort_source(size_t *len) {
    *len = sizeof sort_source - 1;
    return sort_source;
}

/* The kernel index of dtype t (cu_libk.sort), -1 for one it has none for. */
static int sort_type(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return 0;
    case KILN_DTYPE_F64: return 1;
    case KILN_DTYPE_I32: return 2;
    case KILN_DTYPE_I64: return 3;
    case KILN_DTYPE_BF16: return 4;
    case KILN_DTYPE_F16: return 5;
    case KILN_DTYPE_BOOL: return 6;
    default: return -1;
    }
}

bool cu_sort_supports(const kn_lib_desc *d) {
    return sort_type(d->dtype) >= 0;
}

static kiln_status sort_ready(cu_state *st, int device) {
    static const char *const names[CU_SORT_TYPES] = {
        "kiln_argsort_f32",  "kiln_argsort_f64", "kiln_argsort_i32", "kiln_argsort_i64",
        "kiln_argsort_bf16", "kiln_argsort_f16", "kiln_argsort_bool"};
    cu_libk *l = &st->devs[device].lib;
    return cu_lib_program(st, device, "kiln_executable_run: argsort", sort_source,
                          sizeof sort_source - 1, CU_SORT_TYPES, names, &l->sort_prog, l->sort);
}

kiln_status cu_sort_run(cu_state *st, int device, const kn_lib_desc *ld, const void *x, void *out) {
    cu_dev *d = &st->devs[device];
    const kn_sort_desc *a = &ld->sort;
    int64_t rows = a->outer * a->inner;
    if (!rows || !a->k) return KILN_STATUS_OK; /* nothing to write */
    kiln_status s = sort_ready(st, device);
    if (s) return s;
    sort_params p = {a->outer, a->n, a->inner, a->k, a->descending, a->total};
    void *params[] = {(void *)&x, &out, &p};
    CUresult e = st->drv.cuLaunchKernel(d->lib.sort[sort_type(ld->dtype)], cu_grid(d, rows), 1, 1,
                                        CU_SORT_THREADS, 1, 1, 0, d->compute, params, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching the argsort kernel");
    return KILN_STATUS_OK;
}
