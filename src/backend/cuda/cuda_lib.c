/* cuda_lib.c — the GPU's library kernels: matrix products (cuBLAS for f32, f64, bf16 and
 * f16, a kernel of kiln's own for wrapping i32/i64 products), permute, scatter_add_rows and
 * cumsum; attention is cuda_attention.c's kernel, argsort cuda_sort.c's and convolutions
 * cuda_conv.c's (implicit GEMM), dispatched from here.
 *
 * cuBLAS is column-major; kiln's C = A B is row-major, which cuBLAS sees as
 * C^T = B^T A^T: the operands swap places and each keeps its own transpose flag and
 * leading dimension, so no copy is ever made. A batch whose strides are one arithmetic
 * progression is one strided-batched call; otherwise (attention's products over the batch
 * and head axes of a [B, T, H, D] projection) one pointer-array call over every matrix,
 * whose arrays kiln_gemm_ptrs writes on the stream into the scratch the plan set aside
 * (cu_lib_scratch), or one strided call per outer batch index where there is no scratch
 * or a pointer would not be 16-byte aligned. One call matters: the H200 measured the
 * outer-index loop's calls too small to fill the GPU (bench/RESULTS.md).
 * f32 products are exact f32 (CUBLAS_DEFAULT_MATH never uses TF32 tensor cores) unless the
 * context asks for TF32 (KILN_MATMUL_PRECISION=tf32, like jax_default_matmul_precision).
 * bf16 and f16 products are cublasGemmStridedBatchedEx with 16-bit operands and result and
 * CUBLAS_COMPUTE_32F: tensor cores, f32 accumulation, the result rounded once to nearest
 * even (the reference accumulates in f64: the two differ by f32 rounding of the sum).
 *
 * kiln's own kernels are one CUDA source compiled through the same NVRTC path and disk
 * cache as generated programs, at a device's first library call. scatter_add_rows (where
 * cuda_scatter.c's sorted kernels do not take it: no scratch, too many indices) gives
 * each column a thread that walks the indices in order, so rows that repeat are added (or
 * multiplied, min-ed, max-ed: kn_rows_combine) in the reference's order, with no atomics
 * (deterministic, as on the CPU); cumsum gives each column a thread
 * that scans it in order, in f64 for floats, so its bits are the CPU's and the reference's.
 * A scan of few columns (one long row) runs on few threads: correct, not fast. bf16 and
 * f16 values are uint16_t in memory, widened to f32 exactly and narrowed to nearest even
 * as src/base/half.h does (NaN kept quiet with its sign): scatter_add_rows rounds after each
 * addition, as the reference stores each one; cumsum rounds the f64 running sum once per
 * output, bf16 through f32 and f16 directly, as kn_f64_to_bf16 and kn_f64_to_f16 do. */
#include "cuda_backend.h"
#include "cuda_program.h"
#include "cuda_half.h"

#include <limits.h>
#include <string.h>

/* The layouts the kernels' struct parameters have on both sides (int64 fields only: no
 * padding to disagree about). */
typedef struct lib_perm {
    int64_t rank;
    int64_t dims[KILN_MAX_RANK];    /* of dst */
    int64_t sstride[KILN_MAX_RANK]; /* src's stride of dst axis i */
} lib_perm;

typedef struct lib_gemm {
    int64_t nb, m, n, k, lda, ldb, ta, tb;
    int64_t bdims[KILN_MAX_RANK], sa[KILN_MAX_RANK], sb[KILN_MAX_RANK];
} lib_gemm;

static const char lib_source[] =
    "/* kiln's GPU library kernels (src/backend/cuda/cuda_lib.c) */\n"
    "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t;\n"
    "typedef unsigned long long uint64_t; typedef unsigned char uint8_t;\n"
    "typedef unsigned short uint16_t;\n"
    "#define R 8\n"
    "struct lib_perm { int64_t rank, dims[R], sstride[R]; };\n"
    "struct lib_gemm { int64_t nb, m, n, k, lda, ldb, ta, tb, bdims[R], sa[R], sb[R]; };\n"
    "#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
    "i < (n); i += (int64_t)gridDim.x * blockDim.x)\n"
    "template <typename T> __device__ void permute(const T *s, T *d, const lib_perm &p, int64_t n) "
    "{\n"
    "    GRID_STRIDE(i, n) {\n"
    "        int64_t r = i, off = 0;\n"
    "        for (int a = (int)p.rank - 1; a >= 0; a--) {\n"
    "            off += r % p.dims[a] * p.sstride[a];\n"
    "            r /= p.dims[a];\n"
    "        }\n"
    "        d[i] = s[off];\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void kiln_permute1(const uint8_t *s, uint8_t *d, lib_perm p, int64_t "
    "n) { permute(s, d, p, n); }\n"
    "extern \"C\" __global__ void kiln_permute2(const uint16_t *s, uint16_t *d, lib_perm p, "
    "int64_t n) { permute(s, d, p, n); }\n"
    "extern \"C\" __global__ void kiln_permute4(const uint32_t *s, uint32_t *d, lib_perm p, "
    "int64_t n) { permute(s, d, p, n); }\n"
    "extern \"C\" __global__ void kiln_permute8(const uint64_t *s, uint64_t *d, lib_perm p, "
    "int64_t n) { permute(s, d, p, n); }\n" CU_ROWS_COMBINE /* comb (cuda_half.h) */
    "template <typename T, typename U, typename I> __device__ void scatter(const I *idx, int64_t "
    "n_idx, const T *u, T *o, int64_t rows, int64_t len, int64_t k) {\n"
    "    GRID_STRIDE(j, len) {\n"
    "        for (int64_t i = 0; i < n_idx; i++) {\n"
    "            int64_t r = (int64_t)idx[i];\n"
    "            if (r < 0 || r >= rows) continue;\n"
    "            o[r * len + j] = comb<T, U>(o[r * len + j], u[i * len + j], k);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "#define SCATTER(name, T, U, I) extern \"C\" __global__ void name(const I *idx, int64_t n_idx, "
    "const T *u, T *o, int64_t rows, int64_t len, int64_t k) { scatter<T, U, I>(idx, n_idx, u, "
    "o, rows, len, k); }\n"
    "SCATTER(kiln_scatter_f32_i32, float, float, int32_t)\n"
    "SCATTER(kiln_scatter_f32_i64, float, float, int64_t)\n"
    "SCATTER(kiln_scatter_f64_i32, double, double, int32_t)\n"
    "SCATTER(kiln_scatter_f64_i64, double, double, int64_t)\n"
    "SCATTER(kiln_scatter_i32_i32, int32_t, uint32_t, int32_t)\n"
    "SCATTER(kiln_scatter_i32_i64, int32_t, uint32_t, int64_t)\n"
    "SCATTER(kiln_scatter_i64_i32, int64_t, uint64_t, int32_t)\n"
    "SCATTER(kiln_scatter_i64_i64, int64_t, uint64_t, int64_t)\n"
    /* bf16 and f16 (cuda_half.h) */
    CU_HALF_CONVERSIONS
    "template <typename T, typename I> __device__ void scatter_half(const I *idx, int64_t "
    "n_idx, const T *u, T *o, int64_t rows, int64_t len, int64_t k) {\n"
    "    GRID_STRIDE(j, len) {\n"
    "        for (int64_t i = 0; i < n_idx; i++) {\n"
    "            int64_t r = (int64_t)idx[i];\n"
    "            if (r < 0 || r >= rows) continue;\n"
    "            narrow(comb<float, float>(wide(o[r * len + j]), wide(u[i * len + j]), k), "
    "o[r * len + j]);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "#define SCATTER_HALF(name, T, I) extern \"C\" __global__ void name(const I *idx, int64_t "
    "n_idx, const T *u, T *o, int64_t rows, int64_t len, int64_t k) { scatter_half<T, I>(idx, "
    "n_idx, u, o, rows, len, k); }\n"
    "SCATTER_HALF(kiln_scatter_bf16_i32, bf16, int32_t)\n"
    "SCATTER_HALF(kiln_scatter_bf16_i64, bf16, int64_t)\n"
    "SCATTER_HALF(kiln_scatter_f16_i32, f16, int32_t)\n"
    "SCATTER_HALF(kiln_scatter_f16_i64, f16, int64_t)\n"
    /* cumsum: a thread per column (o, i) of x as [outer, n, inner], scanning n in order with
     * an f64 (floats) or wrapping (integers) running sum: consecutive threads take
     * consecutive inner columns, so wide rows load coalesced */
    "template <typename T, typename A, typename U> __device__ void scan(const T *x, T *o, "
    "int64_t outer, int64_t n, int64_t inner, int64_t rev) {\n"
    "    GRID_STRIDE(c, outer * inner) {\n"
    "        int64_t base = c / inner * n * inner + c % inner;\n"
    "        A acc = 0;\n"
    "        for (int64_t k = 0; k < n; k++) {\n"
    "            int64_t at = base + (rev ? n - 1 - k : k) * inner;\n"
    "            acc += (A)x[at];\n"
    "            o[at] = (T)(U)acc;\n"
    "        }\n"
    "    }\n"
    "}\n"
    "#define SCAN(name, T, A, U) extern \"C\" __global__ void name(const T *x, T *o, int64_t "
    "outer, int64_t n, int64_t inner, int64_t rev) { scan<T, A, U>(x, o, outer, n, inner, rev); "
    "}\n"
    "SCAN(kiln_scan_f32, float, double, float)\n"
    "SCAN(kiln_scan_f64, double, double, double)\n"
    "SCAN(kiln_scan_i32, int32_t, uint64_t, uint32_t)\n"
    "SCAN(kiln_scan_i64, int64_t, uint64_t, uint64_t)\n"
    "template <typename T> __device__ void scan_half(const T *x, T *o, int64_t outer, int64_t "
    "n, int64_t inner, int64_t rev) {\n"
    "    GRID_STRIDE(c, outer * inner) {\n"
    "        int64_t base = c / inner * n * inner + c % inner;\n"
    "        double acc = 0;\n"
    "        for (int64_t k = 0; k < n; k++) {\n"
    "            int64_t at = base + (rev ? n - 1 - k : k) * inner;\n"
    "            acc += (double)wide(x[at]);\n"
    "            narrow(acc, o[at]);\n"
    "        }\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void kiln_scan_bf16(const bf16 *x, bf16 *o, int64_t outer, int64_t "
    "n, int64_t inner, int64_t rev) { scan_half(x, o, outer, n, inner, rev); }\n"
    "extern \"C\" __global__ void kiln_scan_f16(const f16 *x, f16 *o, int64_t outer, int64_t "
    "n, int64_t inner, int64_t rev) { scan_half(x, o, outer, n, inner, rev); }\n"
    /* where batch matrix r of a product starts in each operand (elements): r walks the batch
     * axes, the last fastest, at each operand's own strides */
    "__device__ __forceinline__ void batch_at(const lib_gemm &g, int64_t r, int64_t &oa, "
    "int64_t &ob) {\n"
    "    oa = 0, ob = 0;\n"
    "    for (int t = (int)g.nb - 1; t >= 0; t--) {\n"
    "        int64_t q = r % g.bdims[t];\n"
    "        r /= g.bdims[t];\n"
    "        oa += q * g.sa[t];\n"
    "        ob += q * g.sb[t];\n"
    "    }\n"
    "}\n"
    "template <typename T, typename U> __device__ void igemm(const T *a, const T *b, T *c, const "
    "lib_gemm &g, int64_t total) {\n"
    "    GRID_STRIDE(x, total) {\n"
    "        int64_t j = x % g.n, i = x / g.n % g.m, oa, ob;\n"
    "        batch_at(g, x / g.n / g.m, oa, ob);\n"
    "        U acc = 0;\n"
    "        for (int64_t p = 0; p < g.k; p++) {\n"
    "            T av = g.ta ? a[oa + p * g.lda + i] : a[oa + i * g.lda + p];\n"
    "            T bv = g.tb ? b[ob + j * g.ldb + p] : b[ob + p * g.ldb + j];\n"
    "            acc += (U)av * (U)bv;\n"
    "        }\n"
    "        c[x] = (T)acc;\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void kiln_igemm_i32(const int32_t *a, const int32_t *b, int32_t *c, "
    "lib_gemm g, int64_t total) { igemm<int32_t, uint32_t>(a, b, c, g, total); }\n"
    "extern \"C\" __global__ void kiln_igemm_i64(const int64_t *a, const int64_t *b, int64_t *c, "
    "lib_gemm g, int64_t total) { igemm<int64_t, uint64_t>(a, b, c, g, total); }\n"
    /* a batched product's matrix pointers, as cuBLAS's pointer-array calls read them: batch
     * matrix x of each operand where batch_at puts it, and the x-th result matrix of c */
    "extern \"C\" __global__ void kiln_gemm_ptrs(const char *a, const char *b, char *c, lib_gemm "
    "g, int64_t es, int64_t batch, const char **pa, const char **pb, char **pc) {\n"
    "    GRID_STRIDE(x, batch) {\n"
    "        int64_t oa, ob;\n"
    "        batch_at(g, x, oa, ob);\n"
    "        pa[x] = a + oa * es;\n"
    "        pb[x] = b + ob * es;\n"
    "        pc[x] = c + x * g.m * g.n * es;\n"
    "    }\n"
    "}\n";

const char *cu_lib_source(size_t *len) {
    *len = sizeof lib_source - 1;
    return lib_source;
}

/* ------------------------------------------------------- library module ---- */

enum { LIB_TYPES = 6 };
int cu_lib_type(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return 0;
    case KILN_DTYPE_F64: return 1;
    case KILN_DTYPE_I32: return 2;
    case KILN_DTYPE_I64: return 3;
    case KILN_DTYPE_BF16: return 4;
    case KILN_DTYPE_F16: return 5;
    default: return -1;
    }
}

int cu_float_type(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return 0;
    case KILN_DTYPE_F64: return 1;
    case KILN_DTYPE_BF16: return 2;
    case KILN_DTYPE_F16: return 3;
    default: return -1;
    }
}

static kiln_status lib_ready(cu_state *st, int device, const char *what) {
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, what);
    if (s) return s;
    pthread_mutex_lock(&d->lock);
    if (!d->lib_ready) {
        kn_program_info info;
        kn_program *p = NULL;
        s = cu_program_compile(st, device, lib_source, sizeof lib_source - 1, &p, &info);
        static const char *const perm[4] = {"kiln_permute1", "kiln_permute2", "kiln_permute4",
                                            "kiln_permute8"};
        static const char *const sc[LIB_TYPES][2] = {
            {"kiln_scatter_f32_i32", "kiln_scatter_f32_i64"},
            {"kiln_scatter_f64_i32", "kiln_scatter_f64_i64"},
            {"kiln_scatter_i32_i32", "kiln_scatter_i32_i64"},
            {"kiln_scatter_i64_i32", "kiln_scatter_i64_i64"},
            {"kiln_scatter_bf16_i32", "kiln_scatter_bf16_i64"},
            {"kiln_scatter_f16_i32", "kiln_scatter_f16_i64"}};
        static const char *const ig[2] = {"kiln_igemm_i32", "kiln_igemm_i64"};
        static const char *const scan[LIB_TYPES] = {"kiln_scan_f32",  "kiln_scan_f64",
                                                    "kiln_scan_i32",  "kiln_scan_i64",
                                                    "kiln_scan_bf16", "kiln_scan_f16"};
        CUfunction f;
        for (int i = 0; i < 4 && !s; i++)
            if (!(s = cu_function_get(st, p, perm[i], &f))) d->lib.permute[i] = f;
        for (int i = 0; i < LIB_TYPES && !s; i++)
            for (int j = 0; j < 2 && !s; j++)
                if (!(s = cu_function_get(st, p, sc[i][j], &f))) d->lib.scatter[i][j] = f;
        for (int i = 0; i < 2 && !s; i++)
            if (!(s = cu_function_get(st, p, ig[i], &f))) d->lib.igemm[i] = f;
        if (!s && !(s = cu_function_get(st, p, "kiln_gemm_ptrs", &f))) d->lib.gemm_ptrs = f;
        for (int i = 0; i < LIB_TYPES && !s; i++)
            if (!(s = cu_function_get(st, p, scan[i], &f))) d->lib.scan[i] = f;
        if (s)
            cu_program_free(st, p);
        else {
            d->lib.prog = p;
            d->lib_ready = true;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}

kiln_status cu_lib_program(cu_state *st, int device, const char *what, const char *src, size_t len,
                           int n, const char *const *names, kn_program **prog, CUfunction *fns) {
    cu_dev *d = &st->devs[device];
    kiln_status s = cu_dev_ready(st, device, what);
    if (s) return s;
    pthread_mutex_lock(&d->lock);
    if (!*prog) {
        kn_program_info info;
        kn_program *p = NULL;
        s = cu_program_compile(st, device, src, len, &p, &info);
        for (int i = 0; i < n && !s; i++) s = cu_function_get(st, p, names[i], &fns[i]);
        if (s) { /* nothing half-loaded stays: the next call tries again */
            cu_program_free(st, p);
            for (int i = 0; i < n; i++) fns[i] = NULL;
        } else
            *prog = p;
    }
    pthread_mutex_unlock(&d->lock);
    return s;
}

void cu_lib_program_unload(cu_state *st, kn_program **prog) {
    if (!*prog) return;
    st->drv.cuModuleUnload((*prog)->mod);
    host_free(st->ctx, *prog, sizeof **prog);
    *prog = NULL;
}

void cu_lib_release(cu_state *st, cu_dev *d) {
    cu_lib_program_unload(st, &d->lib.prog);
    cu_lib_program_unload(st, &d->lib.attn_prog);
    cu_lib_program_unload(st, &d->lib.attn_grad_prog);
    cu_lib_program_unload(st, &d->lib.sort_prog);
    cu_lib_program_unload(st, &d->lib.conv_prog);
    cu_lib_program_unload(st, &d->lib.scatter_prog);
    d->lib = (cu_libk){0};
    d->lib_ready = false;
}

static kiln_status launch_lib(cu_state *st, cu_dev *d, CUfunction f, void **params, int64_t work) {
    int64_t blocks = (work + KN_CUDA_BLOCK - 1) / KN_CUDA_BLOCK;
    CUresult e = st->drv.cuLaunchKernel(f, cu_grid(d, blocks), 1, 1, KN_CUDA_BLOCK, 1, 1, 0,
                                        d->compute, params, NULL);
    if (e) return cu_fail(st, e, "cuLaunchKernel", "launching a library kernel");
    return KILN_STATUS_OK;
}

/* ---------------------------------------------------------------- gemm ---- */

/* g as the library kernels take it (kiln_igemm_*, kiln_gemm_ptrs). */
static lib_gemm lib_gemm_of(const kn_gemm_desc *g) {
    lib_gemm lg = {.nb = g->nb,
                   .m = g->m,
                   .n = g->n,
                   .k = g->k,
                   .lda = g->lda,
                   .ldb = g->ldb,
                   .ta = g->trans_a,
                   .tb = g->trans_b};
    for (int i = 0; i < g->nb; i++) {
        lg.bdims[i] = g->bdims[i];
        lg.sa[i] = g->bstride_a[i];
        lg.sb[i] = g->bstride_b[i];
    }
    return lg;
}

static bool is_half(kiln_dtype t) {
    return t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
}

/* The dtypes whose products are cuBLAS's (the integers are kiln's own kernel). */
static bool blas_dtype(kiln_dtype t) {
    return t == KILN_DTYPE_F32 || t == KILN_DTYPE_F64 || is_half(t);
}

static kiln_status blas_ready(cu_state *st, int device) {
    cu_dev *d = &st->devs[device];
    pthread_mutex_lock(&st->lock);
    if (!st->blas_tried) {
        st->blas_tried = true;
        cu_cublas_load(&st->blas, st->blas_why, sizeof st->blas_why);
    }
    bool ok = st->blas.lib != NULL;
    pthread_mutex_unlock(&st->lock);
    if (!ok)
        return ctx_error(
            st->ctx, KILN_STATUS_BACKEND,
            "kiln_executable_run: %s (cuBLAS runs f32, f64, bf16 and f16 matrix products "
            "on the GPU)",
            st->blas_why);
    if (d->blas) return KILN_STATUS_OK;
    cublasStatus_t b = st->blas.cublasCreate(&d->blas);
    if (!b) b = st->blas.cublasSetStream(d->blas, d->compute);
    if (!b)
        b = st->blas.cublasSetMathMode(d->blas, st->opt.matmul_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                    : CUBLAS_DEFAULT_MATH);
    if (b) {
        if (d->blas) st->blas.cublasDestroy(d->blas);
        d->blas = NULL;
        return ctx_error(st->ctx, KILN_STATUS_BACKEND,
                         "cuda: setting up cuBLAS on cuda:%d failed (cublasStatus_t %d)", device,
                         b);
    }
    return KILN_STATUS_OK;
}

/* A cuBLAS product call's status r: an error names the call (its dtype's prefix, `form`,
 * "Batched" or "StridedBatched", and Ex for 16 bits) and its sizes. */
static kiln_status blas_status(cu_state *st, kiln_dtype t, const char *form, int m, int n, int k,
                               int64_t batch, cublasStatus_t r) {
    if (!r) return KILN_STATUS_OK;
    return ctx_error(st->ctx, KILN_STATUS_BACKEND,
                     "cuda: cuBLAS %s%s%s (m=%d n=%d k=%d batch=%lld) failed (cublasStatus_t %d)",
                     t == KILN_DTYPE_F32   ? "Sgemm"
                     : t == KILN_DTYPE_F64 ? "Dgemm"
                                           : "Gemm",
                     form, is_half(t) ? "Ex" : "", m, n, k, (long long)batch, r);
}

/* One strided-batched call: C[b] (row-major m x n) for `batch` operands `sa`/`sb` apart. */
static kiln_status blas_call(cu_state *st, cu_dev *d, kiln_dtype t, const kn_gemm_desc *g,
                             const char *a, const char *b, char *c, int64_t sa, int64_t sb,
                             int64_t batch) {
    int ta = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)g->n, n = (int)g->m, k = (int)g->k;
    cublasStatus_t r;
    if (is_half(t)) {
        const float one = 1, zero = 0;
        int ct = t == KILN_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
        r = st->blas.cublasGemmStridedBatchedEx(
            d->blas, ta, tb, m, n, k, &one, b, ct, (int)g->ldb, sb, a, ct, (int)g->lda, sa, &zero,
            c, ct, m, (long long)m * n, (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else if (t == KILN_DTYPE_F32) {
        const float one = 1, zero = 0;
        r = st->blas.cublasSgemmStridedBatched(d->blas, ta, tb, m, n, k, &one, (const float *)b,
                                               (int)g->ldb, sb, (const float *)a, (int)g->lda, sa,
                                               &zero, (float *)c, m, (long long)m * n, (int)batch);
    } else {
        const double one = 1, zero = 0;
        r = st->blas.cublasDgemmStridedBatched(d->blas, ta, tb, m, n, k, &one, (const double *)b,
                                               (int)g->ldb, sb, (const double *)a, (int)g->lda, sa,
                                               &zero, (double *)c, m, (long long)m * n, (int)batch);
    }
    return blas_status(st, t, "StridedBatched", m, n, k, batch, r);
}

/* Whether cuBLAS's 32-bit interface can take float product g (blas_gemm refuses the rest
 * when run; asked here so that kiln_compile refuses it instead, before a call has consumed
 * any donated argument). An empty product never reaches cuBLAS. */
static bool blas_gemm_fits(kiln_dtype t, const kn_gemm_desc *g) {
    if (!blas_dtype(t)) return true;
    if (!g->batch || !g->m || !g->n || !g->k) return true;
    return g->m <= INT_MAX && g->n <= INT_MAX && g->k <= INT_MAX && g->lda <= INT_MAX &&
           g->ldb <= INT_MAX && g->batch <= INT_MAX;
}

/* g without its batch axes of size 1, which address nothing (a [1, T, H, D] operand
 * batched over its 1 and H): they would make a batch that is one progression look as if it
 * were not. */
static kn_gemm_desc batch_squeezed(const kn_gemm_desc *g) {
    kn_gemm_desc s = *g;
    s.nb = 0;
    for (int i = 0; i < g->nb; i++) {
        if (g->bdims[i] == 1) continue;
        s.bdims[s.nb] = g->bdims[i];
        s.bstride_a[s.nb] = g->bstride_a[i];
        s.bstride_b[s.nb] = g->bstride_b[i];
        s.nb++;
    }
    return s;
}

/* Whether g's batch axes are one arithmetic progression in both operands: then one
 * strided-batched call does the whole batch. */
static bool gemm_flat(const kn_gemm_desc *g) {
    bool flat = true; /* (g without axes of size 1: batch_squeezed) */
    for (int i = g->nb - 1; i > 0; i--)
        flat &= g->bstride_a[i - 1] == g->bstride_a[i] * g->bdims[i] &&
                g->bstride_b[i - 1] == g->bstride_b[i] * g->bdims[i];
    return flat;
}

/* The bytes of the pointer arrays (a, b and c pointers of each matrix: cuBLAS's
 * pointer-array calls) for a batch that is not one progression, or 0 where one strided
 * call does, or the product is not cuBLAS's. Every pointer must be 16-byte aligned, as the
 * strided calls' are when their bases are: so must each batch stride and result matrix be
 * (the bases are checked when run). Attention reads its products so: q, k and v slices of
 * one [B, T, 3, H, D] projection, batched over B and H. */
static uint64_t gemm_ptr_bytes(kiln_dtype t, const kn_gemm_desc *desc) {
    kn_gemm_desc sq = batch_squeezed(desc);
    const kn_gemm_desc *g = &sq;
    if (!blas_dtype(t) || gemm_flat(g) || !g->batch || !g->m || !g->n || !g->k ||
        !blas_gemm_fits(t, g))
        return 0;
    int64_t es = (int64_t)kiln_dtype_itemsize(t);
    bool aligned = g->m * g->n * es % 16 == 0;
    for (int i = 0; i < g->nb; i++)
        aligned &= g->bstride_a[i] * es % 16 == 0 && g->bstride_b[i] * es % 16 == 0;
    return aligned ? 3 * (uint64_t)g->batch * sizeof(uint64_t) : 0;
}

/* One pointer-array call over the whole batch: kiln_gemm_ptrs writes the arrays into ptrs
 * on the compute stream, where cuBLAS then reads them. */
static kiln_status blas_batched(cu_state *st, cu_dev *d, kiln_dtype t, const kn_gemm_desc *g,
                                const char *a, const char *b, char *c, void *ptrs) {
    lib_gemm lg = lib_gemm_of(g);
    int64_t es = (int64_t)kiln_dtype_itemsize(t), batch = g->batch;
    void **pa = ptrs, **pb = pa + batch, **pc = pb + batch;
    void *params[] = {(void *)&a, (void *)&b, &c, &lg, &es, &batch, &pa, &pb, &pc};
    kiln_status s = launch_lib(st, d, d->lib.gemm_ptrs, params, batch);
    if (s) return s;
    int ta = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)g->n, n = (int)g->m, k = (int)g->k;
    cublasStatus_t r;
    if (is_half(t)) {
        const float one = 1, zero = 0;
        int ct = t == KILN_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
        r = st->blas.cublasGemmBatchedEx(d->blas, ta, tb, m, n, k, &one, (const void *const *)pb,
                                         ct, (int)g->ldb, (const void *const *)pa, ct, (int)g->lda,
                                         &zero, (void *const *)pc, ct, m, (int)batch,
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else if (t == KILN_DTYPE_F32) {
        const float one = 1, zero = 0;
        r = st->blas.cublasSgemmBatched(d->blas, ta, tb, m, n, k, &one, (const float *const *)pb,
                                        (int)g->ldb, (const float *const *)pa, (int)g->lda, &zero,
                                        (float *const *)pc, m, (int)batch);
    } else {
        const double one = 1, zero = 0;
        r = st->blas.cublasDgemmBatched(d->blas, ta, tb, m, n, k, &one, (const double *const *)pb,
                                        (int)g->ldb, (const double *const *)pa, (int)g->lda, &zero,
                                        (double *const *)pc, m, (int)batch);
    }
    return blas_status(st, t, "Batched", m, n, k, batch, r);
}

/* g through cuBLAS: one strided-batched call when the batch is one progression, else one
 * pointer-array call where the plan gave the arrays their scratch (ptrs) and every pointer
 * is aligned, else one strided call per outer batch index. */
static kiln_status blas_gemm(cu_state *st, int device, kiln_dtype t, const kn_gemm_desc *desc,
                             const char *a, const char *b, char *c, void *ptrs,
                             uint64_t ptr_bytes) {
    cu_dev *d = &st->devs[device];
    kn_gemm_desc sq = batch_squeezed(desc);
    const kn_gemm_desc *g = &sq;
    size_t es = kiln_dtype_itemsize(t);
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->lda > INT_MAX ||
        g->ldb > INT_MAX || g->batch > INT_MAX)
        return ctx_error(st->ctx, KILN_STATUS_UNIMPLEMENTED,
                         "cuda: a matrix product with a dimension over 2^31-1 (m=%lld n=%lld "
                         "k=%lld batch=%lld) is beyond cuBLAS's 32-bit interface",
                         (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch);
    kiln_status s = blas_ready(st, device);
    if (s) return s;
    int nb = g->nb;
    bool flat = gemm_flat(g);
    uint64_t want = gemm_ptr_bytes(t, g);
    if (want && ptrs && ptr_bytes >= want &&
        !(((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)ptrs) % 16))
        return blas_batched(st, d, t, g, a, b, c, ptrs);
    int64_t last = nb ? g->bdims[nb - 1] : 1, outer = flat ? 1 : g->batch / last;
    int64_t sa = nb ? g->bstride_a[nb - 1] : 0, sb = nb ? g->bstride_b[nb - 1] : 0;
    int64_t per = flat ? g->batch : last;
    for (int64_t o = 0; o < outer && !s; o++) {
        int64_t oa = 0, ob = 0, r = o;
        for (int i = nb - 2; i >= 0 && !flat; i--) {
            int64_t q = r % g->bdims[i];
            r /= g->bdims[i];
            oa += q * g->bstride_a[i];
            ob += q * g->bstride_b[i];
        }
        s = blas_call(st, d, t, g, a + (size_t)oa * es, b + (size_t)ob * es,
                      c + (size_t)(o * per * g->m * g->n) * es, sa, sb, per);
    }
    return s;
}

static kiln_status cu_gemm(void *state, int device, kiln_dtype dtype, const kn_gemm_desc *g,
                           const void *a, const void *b, void *c, void *scratch,
                           uint64_t scratch_bytes) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    if (!g->batch || !g->m || !g->n) return KILN_STATUS_OK;
    kiln_status s = cu_dev_ready(st, device, "kiln_executable_run: matrix product");
    if (s) return s;
    if (!g->k) { /* an empty sum: zeros */
        size_t bytes = (size_t)(g->batch * g->m * g->n) * kiln_dtype_itemsize(dtype);
        CU_TRY(st, st->drv.cuMemsetD8Async((CUdeviceptr)(uintptr_t)c, 0, bytes, d->compute),
               "zeroing an empty product");
        return KILN_STATUS_OK;
    }
    if (blas_dtype(dtype)) {
        /* the pointer arrays' kernel is a library one (loaded under the lock taken below) */
        if (scratch && gemm_ptr_bytes(dtype, g) &&
            (s = lib_ready(st, device, "kiln_executable_run: batched matrix product")))
            return s;
        pthread_mutex_lock(&d->lock); /* a cuBLAS handle is not for concurrent calls */
        s = blas_gemm(st, device, dtype, g, a, b, c, scratch, scratch_bytes);
        pthread_mutex_unlock(&d->lock);
        return s;
    }
    if ((s = lib_ready(st, device, "kiln_executable_run: integer matrix product"))) return s;
    lib_gemm lg = lib_gemm_of(g);
    int64_t total = g->batch * g->m * g->n;
    void *params[] = {(void *)&a, (void *)&b, &c, &lg, &total};
    return launch_lib(st, d, d->lib.igemm[dtype == KILN_DTYPE_I64], params, total);
}

/* ------------------------------------------------- permute, scatter-add ---- */

static kiln_status cu_permute(void *state, int device, kiln_dtype dtype, const void *src, int rank,
                              const int64_t *dims, const int *perm, void *dst) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    kiln_status s = lib_ready(st, device, "kiln_executable_run: permute");
    if (s) return s;
    lib_perm p = {.rank = rank};
    int64_t sstride[KILN_MAX_RANK], n = 1;
    for (int i = rank - 1; i >= 0; i--) {
        sstride[i] = n;
        n *= dims[i];
    }
    for (int i = 0; i < rank; i++) {
        p.dims[i] = dims[perm[i]];
        p.sstride[i] = sstride[perm[i]];
    }
    if (!n) return KILN_STATUS_OK;
    size_t es = kiln_dtype_itemsize(dtype);
    CUfunction f = d->lib.permute[es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3];
    void *params[] = {(void *)&src, &dst, &p, &n};
    return launch_lib(st, d, f, params, n);
}

/* scatter_add_rows: out = the operand (or zeros), then the updates added in the
 * reference's order, by cuda_scatter.c's sorted kernels where the plan gave their scratch,
 * else by the column kernel (a thread per column walking every index). */
static kiln_status cu_scatter_add_rows(void *state, int device, kiln_dtype dtype,
                                       const kn_scatter_desc *c, const void *operand,
                                       const void *idx, const void *upd, void *out, void *scratch,
                                       uint64_t scratch_bytes) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    int64_t rows = c->rows, row_len = c->row_len, n_idx = c->n_idx, combine = c->combine;
    if (!rows || !row_len) return KILN_STATUS_OK;
    kiln_status s = lib_ready(st, device, "kiln_executable_run: scatter_add_rows");
    if (s) return s;
    size_t bytes = (size_t)(rows * row_len) * kiln_dtype_itemsize(dtype);
    if (!operand)
        CU_TRY(st, st->drv.cuMemsetD8Async((CUdeviceptr)(uintptr_t)out, 0, bytes, d->compute),
               "zeroing scatter_add_rows' result");
    else if (out != operand)
        CU_TRY(st,
               st->drv.cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)out,
                                         (CUdeviceptr)(uintptr_t)operand, bytes, d->compute),
               "copying scatter_add_rows' operand");
    if (!n_idx) return KILN_STATUS_OK;
    bool sorted = false;
    s = cu_scatter_sorted_run(st, device, dtype, c, idx, upd, out, scratch, scratch_bytes, &sorted);
    if (s || sorted) return s;
    void *params[] = {(void *)&idx, &n_idx, (void *)&upd, &out, &rows, &row_len, &combine};
    return launch_lib(st, d, d->lib.scatter[cu_lib_type(dtype)][c->idx_dtype == KILN_DTYPE_I64],
                      params, row_len);
}

/* ---------------------------------------------------------------- scan ---- */

static kiln_status cu_cumsum(void *state, int device, kiln_dtype dtype, const void *x, void *out,
                             int64_t outer, int64_t n, int64_t inner, bool reverse) {
    cu_state *st = state;
    cu_dev *d = &st->devs[device];
    int64_t cols = outer * inner, rev = reverse;
    if (!cols || !n) return KILN_STATUS_OK;
    kiln_status s = lib_ready(st, device, "kiln_executable_run: cumsum");
    if (s) return s;
    void *params[] = {(void *)&x, &out, &outer, &n, &inner, &rev};
    return launch_lib(st, d, d->lib.scan[cu_lib_type(dtype)], params, cols);
}

/* ------------------------------------------------------- the generic slot ---- */

/* Each op for the dtypes it has a kernel or a cuBLAS call for: a product of f32, f64,
 * bf16, f16, i32 or i64 (within cuBLAS's sizes), a permute of 1-, 2-, 4- or 8-byte
 * elements, scatter_add_rows and cumsum of cu_lib_type's dtypes, attention of any float
 * (any shape: the kernel needs no scratch), argsort of any dtype, a convolution of any
 * float with 1 to 3 spatial axes (cu_conv_supports). No cholesky or triangular_solve: those
 * run as their primitive form (src/passes/expand.c). kiln_compile names the op and the
 * dtype of a call refused here (compile.c, check_lib_calls). */
bool cu_lib_supports(void *state, int device, kn_lib_op op, const kn_lib_desc *d) {
    cu_state *st = state;
    int cc = st->devs[device].cc_major;
    bool has = op == KN_LIB_GEMM || op == KN_LIB_PERMUTE || op == KN_LIB_SCATTER_ADD_ROWS ||
               op == KN_LIB_CUMSUM || op == KN_LIB_ATTENTION || op == KN_LIB_ARGSORT ||
               op == KN_LIB_CONV || (op == KN_LIB_ATTENTION_GRAD && cc >= 8);
    if (!d || !has) return has;
    size_t es = kiln_dtype_itemsize(d->dtype);
    switch (op) {
    case KN_LIB_GEMM:
        return (blas_dtype(d->dtype) || d->dtype == KILN_DTYPE_I32 || d->dtype == KILN_DTYPE_I64) &&
               blas_gemm_fits(d->dtype, &d->gemm);
    case KN_LIB_PERMUTE: return es == 1 || es == 2 || es == 4 || es == 8;
    case KN_LIB_ATTENTION: return cu_attention_supports(&d->attention);
    case KN_LIB_ATTENTION_GRAD: /* KILN_ATTENTION_CUDA_CORES: the written-out products */
        return !st->opt.attention_cuda_cores && cu_attention_grad_supports(&d->attention, cc);
    case KN_LIB_ARGSORT: return cu_sort_supports(d);
    case KN_LIB_CONV: return cu_float_type(d->dtype) >= 0 && cu_conv_supports(&d->conv);
    default: return cu_lib_type(d->dtype) >= 0;
    }
}

kiln_status cu_lib_run(void *state, int device, const kn_lib_desc *d, void *const *b) {
    switch (d->op) {
    case KN_LIB_GEMM:
        return cu_gemm(state, device, d->dtype, &d->gemm, b[0], b[1], b[2], b[3], d->scratch_bytes);
    case KN_LIB_PERMUTE:
        return cu_permute(state, device, d->dtype, b[0], d->permute.rank, d->permute.dims,
                          d->permute.perm, b[1]);
    case KN_LIB_SCATTER_ADD_ROWS:
        return cu_scatter_add_rows(state, device, d->dtype, &d->scatter, b[0], b[1], b[2], b[3],
                                   b[4], d->scratch_bytes);
    case KN_LIB_CUMSUM: {
        const kn_cumsum_desc *c = &d->cumsum;
        return cu_cumsum(state, device, d->dtype, b[0], b[1], c->outer, c->n, c->inner, c->reverse);
    }
    case KN_LIB_ATTENTION:
        return cu_attention_run(state, device, &d->attention, b[0], b[1], b[2], b[3], b[4]);
    case KN_LIB_ATTENTION_GRAD: return cu_attention_grad_run(state, device, &d->attention, b);
    case KN_LIB_ARGSORT: return cu_sort_run(state, device, d, b[0], b[1]);
    case KN_LIB_CONV: {
        /* scratch short of what the split wants (a caller outside a compiled program): the
         * kernel then sums the whole reduction in one chunk */
        void *scratch = d->scratch_bytes >= cu_conv_scratch(&d->conv, d->dtype) ? b[3] : NULL;
        return cu_conv_run(state, device, d->dtype, &d->conv, b[0], b[1], b[2], scratch);
    }
    default: break;
    }
    cu_state *st = state;
    return ctx_error(st->ctx, KILN_STATUS_INTERNAL, "cuda backend: no library op %s",
                     kn_lib_op_name(d->op));
}

/* Scratch the plan sets aside for a call: a batched product's pointer arrays where its
 * batch is not one progression (gemm_ptr_bytes), scatter_add_rows' sorted indices
 * (cu_scatter_scratch), a filter gradient's partial sums (cu_conv_scratch); nothing for any
 * other op (the fused attention and argsort need none here). */
uint64_t cu_lib_scratch(void *state, int device, const kn_lib_desc *d) {
    (void)state, (void)device;
    if (d->op == KN_LIB_GEMM) return gemm_ptr_bytes(d->dtype, &d->gemm);
    if (d->op == KN_LIB_SCATTER_ADD_ROWS && cu_lib_type(d->dtype) >= 0)
        return cu_scatter_scratch(&d->scatter);
    if (d->op == KN_LIB_CONV && cu_float_type(d->dtype) >= 0)
        return cu_conv_scratch(&d->conv, d->dtype);
    return 0;
}
