/* cuda_scatter.c — scatter_add_rows on the GPU by sorting the indices first (backend_impl.h's
 * kn_scatter_desc): out[idx[i]] = comb(out[idx[i]], upd[i]) for i = 0..n_idx-1 in order, for
 * each of a row's row_len columns, with the reference's bits.
 *
 * Why: cuda_lib.c's column kernel gives each column one thread that walks every index in
 * order, so only row_len threads run (a GPT's token-embedding gradient: 512 of them, each
 * walking 4096 indices). Here the work is spread over (row, column) pairs instead, still
 * with no float atomics, so the result stays deterministic and the reference's.
 *
 * How, in two kernels on the compute stream:
 *  A. A block per chunk of CU_SCATTER_CHUNK consecutive positions bitonic-sorts the chunk's
 *     (key, position) pairs in shared memory, key = the index where 0 <= idx < rows and
 *     `rows` (a sentinel that sorts last) otherwise, and writes the sorted keys and
 *     positions to the scratch. All pairs differ (the positions do), so the sort is the
 *     stable one: within a chunk each key's run lists its positions in ascending order.
 *  B. A thread per (sorted slot, column), the column fastest so that updates load
 *     coalesced. The slot that starts key r's run in the first chunk holding r (binary
 *     search of each earlier chunk's sorted keys) owns row r's column: it combines out's
 *     value with the updates of r's run in its chunk, then in every later chunk in turn
 *     (binary search for the run), and stores the result once. Every other thread returns.
 *
 * The order argument: the chunks cover ascending ranges of positions and each run is in
 * ascending position, so the owner combines row r's updates in ascending position, exactly
 * the reference's sequence; each (row, column) has one owner, so no two threads write one
 * element. bf16 and f16 combine in f32 and round back after each combine (the reference
 * stores each one); integers wrap through unsigned types; float min and max follow
 * kiln_min_f32/kiln_max_f32 (the `comb` of cuda_half.h, which cuda_lib.c's kernel shares).
 *
 * The fallback: past CU_SCATTER_MAX_CHUNKS chunks (each slot of B would search too many
 * chunks), with rows past INT32_MAX (keys are 32 bits), or without enough scratch, this
 * path does not run (cu_scatter_sorted_run says so in *used) and the caller runs
 * cuda_lib.c's column kernel. The source is plain CUDA C++, so that
 * tests/test_cuda_emulate.c runs this very code on the CPU. */
#include "cuda_backend.h"
#include "cuda_program.h"
#include "cuda_half.h"

#include <limits.h>

/* The kernels' parameter, the same layout on both sides (8-byte fields only). chunk is
 * the positions a chunk holds (at most CU_SCATTER_CHUNK; the tests take fewer), k is
 * kn_rows_combine. */
typedef struct scatter_params {
    int64_t rows, len, n_idx, chunk, n_chunks, k;
} scatter_params;

static const char scatter_source[] =
    "/* kiln's sorted scatter_add_rows (src/backend/cuda/cuda_scatter.c) */\n"
    "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t; typedef unsigned short uint16_t;\n"
    "#define SCATTER_THREADS 256\n" /* CU_SCATTER_THREADS */
    "#define SCATTER_SHARED 4096\n" /* CU_SCATTER_CHUNK */
    "struct scatter_params { int64_t rows, len, n_idx, chunk, n_chunks, k; };\n"
    "#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
    "i < (n); i += (int64_t)gridDim.x * blockDim.x)\n" CU_HALF_CONVERSIONS
        CU_ROWS_COMBINE /* comb (cuda_half.h) */
    /* one combine as the reference stores it: 16-bit floats in f32, rounded back */
    "__device__ __forceinline__ float step(float a, float b, int64_t k) { return comb<float, "
    "float>(a, b, k); }\n"
    "__device__ __forceinline__ double step(double a, double b, int64_t k) { return "
    "comb<double, double>(a, b, k); }\n"
    "__device__ __forceinline__ int32_t step(int32_t a, int32_t b, int64_t k) { return "
    "comb<int32_t, uint32_t>(a, b, k); }\n"
    "__device__ __forceinline__ int64_t step(int64_t a, int64_t b, int64_t k) { return "
    "comb<int64_t, uint64_t>(a, b, k); }\n"
    "__device__ __forceinline__ bf16 step(bf16 a, bf16 b, int64_t k) { bf16 o; "
    "narrow(comb<float, float>(wide(a), wide(b), k), o); return o; }\n"
    "__device__ __forceinline__ f16 step(f16 a, f16 b, int64_t k) { f16 o; narrow(comb<float, "
    "float>(wide(a), wide(b), k), o); return o; }\n"
    /* kernel A: a block per chunk; a pair is key << 32 | position, the padding to a power
     * of two all ones (after every real pair: keys are at most rows < 2^31) */
    "template <typename I> __device__ void sort_chunks(const I *idx, uint32_t *key, uint32_t "
    "*pos, const scatter_params &p) {\n"
    "    __shared__ uint64_t sv[SCATTER_SHARED];\n"
    "    const int tid = threadIdx.x;\n"
    "    for (int64_t c = blockIdx.x; c < p.n_chunks; c += gridDim.x) {\n"
    "        const int64_t begin = c * p.chunk;\n"
    "        const int64_t m = p.n_idx - begin < p.chunk ? p.n_idx - begin : p.chunk;\n"
    "        int64_t n2 = 1;\n"
    "        while (n2 < m) n2 <<= 1;\n"
    "        for (int64_t i = tid; i < n2; i += SCATTER_THREADS) {\n"
    "            uint64_t v = ~0ULL;\n"
    "            if (i < m) {\n"
    "                int64_t r = (int64_t)idx[begin + i];\n"
    "                uint64_t kr = r >= 0 && r < p.rows ? (uint64_t)r : (uint64_t)p.rows;\n"
    "                v = kr << 32 | (uint64_t)(begin + i);\n"
    "            }\n"
    "            sv[i] = v;\n"
    "        }\n"
    "        __syncthreads();\n"
    /* bitonic: pair (lo, lo + stride) ordered ascending when lo's `size` bit is clear */
    "        for (int64_t size = 2; size <= n2; size <<= 1)\n"
    "            for (int64_t stride = size / 2; stride > 0; stride >>= 1) {\n"
    "                for (int64_t i = tid; i < n2 / 2; i += SCATTER_THREADS) {\n"
    "                    int64_t lo = 2 * stride * (i / stride) + i % stride, hi = lo + stride;\n"
    "                    uint64_t a = sv[lo], b = sv[hi];\n"
    "                    if ((b < a) == !(lo & size)) { sv[lo] = b; sv[hi] = a; }\n"
    "                }\n"
    "                __syncthreads();\n"
    "            }\n"
    "        for (int64_t i = tid; i < m; i += SCATTER_THREADS) {\n"
    "            key[begin + i] = (uint32_t)(sv[i] >> 32);\n"
    "            pos[begin + i] = (uint32_t)sv[i];\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    "}\n"
    /* the first slot of [lo, hi) whose key is not below r */
    "__device__ __forceinline__ int64_t run_at(const uint32_t *key, int64_t lo, int64_t hi, "
    "uint32_t r) {\n"
    "    while (lo < hi) {\n"
    "        int64_t mid = lo + (hi - lo) / 2;\n"
    "        if (key[mid] < r) lo = mid + 1; else hi = mid;\n"
    "    }\n"
    "    return lo;\n"
    "}\n"
    /* kernel B: a thread per (slot s, column j); the owner of (r, j) is the slot that
     * starts r's run in the first chunk holding r */
    "template <typename T> __device__ void scatter_rows(const T *u, T *o, const uint32_t *key, "
    "const uint32_t *pos, const scatter_params &p) {\n"
    "    GRID_STRIDE(t, p.n_idx * p.len) {\n"
    "        const int64_t s = t / p.len, j = t - s * p.len, c = s / p.chunk;\n"
    "        const uint32_t r = key[s];\n"
    "        if ((int64_t)r >= p.rows || (s > c * p.chunk && key[s - 1] == r)) continue;\n"
    "        bool first = true;\n"
    "        for (int64_t e = 0; e < c && first; e++) {\n"
    "            const int64_t lo = e * p.chunk, hi = lo + p.chunk, at = run_at(key, lo, hi, r);\n"
    "            first = at == hi || key[at] != r;\n"
    "        }\n"
    "        if (!first) continue;\n"
    "        T *dst = o + (int64_t)r * p.len + j;\n"
    "        T acc = *dst;\n"
    "        for (int64_t e = c; e < p.n_chunks; e++) {\n"
    "            const int64_t lo = e * p.chunk;\n"
    "            const int64_t hi = p.n_idx - lo < p.chunk ? p.n_idx : lo + p.chunk;\n"
    "            int64_t at = e == c ? s : run_at(key, lo, hi, r);\n"
    "            for (; at < hi && key[at] == r; at++)\n"
    "                acc = step(acc, u[(int64_t)pos[at] * p.len + j], p.k);\n"
    "        }\n"
    "        *dst = acc;\n"
    "    }\n"
    "}\n"
    "#define SCATTER_SORT(name, I) extern \"C\" __global__ void "
    "__launch_bounds__(SCATTER_THREADS) name(const I *idx, uint32_t *key, uint32_t *pos, "
    "scatter_params p) { sort_chunks<I>(idx, key, pos, p); }\n"
    "SCATTER_SORT(kiln_scatter_sort_i32, int32_t)\n"
    "SCATTER_SORT(kiln_scatter_sort_i64, int64_t)\n"
    "#define SCATTER_ROWS(name, T) extern \"C\" __global__ void "
    "__launch_bounds__(SCATTER_THREADS) name(const T *u, T *o, const uint32_t *key, const "
    "uint32_t *pos, scatter_params p) { scatter_rows<T>(u, o, key, pos, p); }\n"
    "SCATTER_ROWS(kiln_scatter_rows_f32, float)\n"
    "SCATTER_ROWS(kiln_scatter_rows_f64, double)\n"
    "SCATTER_ROWS(kiln_scatter_rows_i32, int32_t)\n"
    "SCATTER_ROWS(kiln_scatter_rows_i64, int64_t)\n"
    "SCATTER_ROWS(kiln_scatter_rows_bf16, bf16)\n"
    "SCATTER_ROWS(kiln_scatter_rows_f16, f16)\n";

const char *cu_scatter_source(size_t *len) {
    *len = sizeof scatter_source - 1;
    return scatter_source;
}

static int64_t scatter_chunks(const kn_scatter_desc *c) {
    return (c->n_idx + CU_SCATTER_CHUNK - 1) / CU_SCATTER_CHUNK;
}

/* Scratch: the sorted keys (u32, n_idx of them, chunk i's from i * CU_SCATTER_CHUNK), then
 * the positions in the same slots (u32, n_idx). */
uint64_t cu_scatter_scratch(const kn_scatter_desc *c) {
    if (c->rows <= 0 || c->rows > INT32_MAX || c->row_len <= 0 || c->n_idx <= 0) return 0;
    if (c->idx_dtype != KILN_DTYPE_I32 && c->idx_dtype != KILN_DTYPE_I64) return 0;
    if (scatter_chunks(c) > CU_SCATTER_MAX_CHUNKS) return 0;
    return (uint64_t)c->n_idx * 2 * sizeof(uint32_t);
}

static kiln_status scatter_ready(cu_state *st, int device) {
    static const char *const names[2 + CU_SCATTER_TYPES] = {
        "kiln_scatter_sort_i32",  "kiln_scatter_sort_i64", "kiln_scatter_rows_f32",
        "kiln_scatter_rows_f64",  "kiln_scatter_rows_i32", "kiln_scatter_rows_i64",
        "kiln_scatter_rows_bf16", "kiln_scatter_rows_f16"};
    cu_libk *l = &st->devs[device].lib;
    return cu_lib_program(st, device, "kiln_executable_run: scatter_add_rows", scatter_source,
                          sizeof scatter_source - 1, 2 + CU_SCATTER_TYPES, names, &l->scatter_prog,
                          l->sorted_scatter);
}

kiln_status cu_scatter_sorted_run(cu_state *st, int device, kiln_dtype dtype,
                                  const kn_scatter_desc *c, const void *idx, const void *upd,
                                  void *out, void *scratch, uint64_t scratch_bytes, bool *used) {
    *used = false;
    uint64_t need = cu_scatter_scratch(c);
    int type = cu_lib_type(dtype);
    if (!need || !scratch || scratch_bytes < need || type < 0) return KILN_STATUS_OK;
    kiln_status s = scatter_ready(st, device);
    if (s) return s;
    cu_dev *d = &st->devs[device];
    /* from here on the work is this path's: on an error the caller returns it, and must
     * not run the column kernel as well */
    *used = true;
    scatter_params p = {c->rows,          c->row_len,        c->n_idx,
                        CU_SCATTER_CHUNK, scatter_chunks(c), c->combine};
    uint32_t *key = scratch, *pos = key + c->n_idx;
    void *sort_args[] = {(void *)&idx, &key, &pos, &p};
    CUresult e = st->drv.cuLaunchKernel(d->lib.sorted_scatter[c->idx_dtype == KILN_DTYPE_I64],
                                        (unsigned)p.n_chunks, 1, 1, CU_SCATTER_THREADS, 1, 1, 0,
                                        d->compute, sort_args, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching scatter_add_rows' index sort kernel");
    int64_t blocks = (c->n_idx * c->row_len + CU_SCATTER_THREADS - 1) / CU_SCATTER_THREADS;
    void *row_args[] = {(void *)&upd, &out, &key, &pos, &p};
    e = st->drv.cuLaunchKernel(d->lib.sorted_scatter[2 + type], cu_grid(d, blocks), 1, 1,
                               CU_SCATTER_THREADS, 1, 1, 0, d->compute, row_args, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching scatter_add_rows' sorted row kernel");
    return KILN_STATUS_OK;
}
