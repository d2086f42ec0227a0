/* blas.c — see blas.h: choosing and loading the GEMM provider of a context, and calling it.
 *
 * BLIS and oneDNN are declared here by hand (their headers are not needed to build kiln)
 * from the ABI of Debian 12's libblis4 0.9 and libdnnl2 2.6: BLIS's dim_t and inc_t are
 * int64_t on LP64, trans_t 0 is BLIS_NO_TRANSPOSE; dnnl_dim_t is int64_t. BLIS is called
 * through bli_?gemm rather than its cblas_sgemm: OpenBLAS, linked into the process, also
 * exports the BLAS symbols BLIS's CBLAS layer calls, and ELF lookup would bind those to
 * OpenBLAS's. A loaded library stays mapped for the life of the process (RTLD_NODELETE);
 * closing a context only drops its reference. */
#include "blas.h"

#include <cblas.h>
#include <dlfcn.h>
#include <string.h>
#include <strings.h>

static const char *const names[] = {"default", "openblas", "blis", "onednn", "kiln"};

/* dlsym into a function pointer without the object/function cast warning. */
static bool sym(void *h, const char *name, void *fnptr, size_t size) {
    void *p = dlsym(h, name);
    if (p) memcpy(fnptr, &p, size);
    return p != NULL;
}
#define SYM(h, name, dst) sym(h, name, &(dst), sizeof(dst))

static const char *lib_name(kiln_blas p) {
    return p == KILN_BLAS_BLIS ? "libblis.so.4" : "libdnnl.so.2";
}

/* Loads BLIS or oneDNN into b: NULL, or why not (valid until the next dl* call). */
static const char *try_load(kiln_blas p, cpu_blas *b) {
    dlerror();
    /* NODELETE: a library is never unmapped once loaded. oneDNN and BLIS keep caches
     * (JIT kernels, packing buffers) and OpenMP worker threads alive past any call;
     * unmapping them under those would leak their memory or crash the workers. */
    b->handle = dlopen(lib_name(p), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!b->handle) {
        const char *why = dlerror();
        return why ? why : "dlopen gave no reason";
    }
    bool ok;
    if (p == KILN_BLAS_BLIS) {
        void (*set_threads)(int64_t) = NULL;
        ok = SYM(b->handle, "bli_sgemm", b->bli_sgemm) &&
             SYM(b->handle, "bli_dgemm", b->bli_dgemm) &&
             SYM(b->handle, "bli_thread_set_num_threads", set_threads);
        /* process-wide, as openblas_set_num_threads: kiln's pool is the parallelism */
        if (ok) set_threads(1);
    } else {
        ok = SYM(b->handle, "dnnl_sgemm", b->dnnl_sgemm) &&
             SYM(b->handle, "omp_set_num_threads", b->omp_set_num_threads);
    }
    if (ok) return NULL;
    dlclose(b->handle);
    b->handle = NULL;
    return p == KILN_BLAS_BLIS ? "no bli_sgemm, bli_dgemm or bli_thread_set_num_threads"
                               : "no dnnl_sgemm or omp_set_num_threads";
}

bool cpu_blas_openblas_behind(const char *core, bool avx2_fma) {
    static const char *const fma_cores[] = {"haswell",        "zen",      "skylakex", "cooperlake",
                                            "sapphirerapids", "excavator"};
    if (!avx2_fma || !core) return false;
    for (size_t i = 0; i < sizeof fma_cores / sizeof fma_cores[0]; i++)
        if (!strncasecmp(core, fma_cores[i], strlen(fma_cores[i]))) return false;
    return true;
}

/* cpu_blas_openblas_behind for this process's OpenBLAS and CPU. */
static bool openblas_behind(void) {
    bool avx2_fma = false;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return cpu_blas_openblas_behind(openblas_get_corename(), avx2_fma);
}

kiln_status cpu_blas_open(kiln_context *ctx, kiln_blas want, cpu_blas *out) {
    memset(out, 0, sizeof *out);
    /* OpenBLAS runs inside the pool's threads, never its own. Process-wide, as
     * torch.set_num_threads is. */
    openblas_set_num_threads(1);
    /* where OpenBLAS runs kernels older than the CPU, kiln's own kernel takes its place
     * unless OpenBLAS is asked for by name */
    kiln_blas fallback = openblas_behind() ? KILN_BLAS_KILN : KILN_BLAS_OPENBLAS;
    if (want == KILN_BLAS_DEFAULT) {
        /* bench/RESULTS.md, "GEMM providers": oneDNN's sgemm leads single-threaded on the
         * shapes of kiln's benchmarks (MLP, GPT and LLaMA-style products and their
         * transposes); it has no f64 product. Without it, OpenBLAS. */
        out->f64 = fallback;
#ifdef KILN_SANITIZER_BUILD
        /* ASan builds: oneDNN loads libgomp with dlopen, and a thread that ran a oneDNN
         * product keeps dynamic TLS of it that gcc 12's LeakSanitizer crashes on when it
         * scans the threads at exit ("Tracer caught signal 11"). The sanitized suite runs
         * OpenBLAS by default; KILN_BLAS=onednn still selects oneDNN there. */
        out->f32 = fallback;
#else
        out->f32 = try_load(KILN_BLAS_ONEDNN, out) ? fallback : KILN_BLAS_ONEDNN;
#endif
        return KILN_STATUS_OK;
    }
    out->f32 = want;
    out->f64 = want == KILN_BLAS_ONEDNN ? fallback : want;
    if (want != KILN_BLAS_BLIS && want != KILN_BLAS_ONEDNN) return KILN_STATUS_OK;
    const char *why = try_load(want, out);
    if (!why) return KILN_STATUS_OK;
    return ctx_error(ctx, KILN_STATUS_CONFIG,
                     "KILN_BLAS=%s: %s cannot be used (%s); install it with  sudo apt-get "
                     "install -y %s  or choose another KILN_BLAS",
                     names[want], lib_name(want), why,
                     want == KILN_BLAS_BLIS ? "libblis4-pthread" : "libdnnl2");
}

void cpu_blas_close(kiln_context *ctx, cpu_blas *b) {
    (void)ctx;
    if (b->handle) dlclose(b->handle);
    memset(b, 0, sizeof *b);
}

/* OpenBLAS takes int dimensions (blasint, 32 bits in Debian's build), as cpu_ops.c passed
 * them before providers existed: a dimension or leading dimension of 2^31 or more would
 * need splitting here first (BLIS, oneDNN and kiln's kernel take int64_t). */
void cpu_blas_sgemm(const cpu_blas *b, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *bm, int64_t ldb, float *c,
                    int64_t ldc) {
    static const float one = 1, zero = 0;
    switch (b->f32) {
    case KILN_BLAS_BLIS:
        b->bli_sgemm(0, 0, m, n, k, &one, a, ta ? 1 : lda, ta ? lda : 1, bm, tb ? 1 : ldb,
                     tb ? ldb : 1, &zero, c, ldc, 1);
        break;
    case KILN_BLAS_ONEDNN:
        /* OpenMP's thread count is this thread's own: set it on every pool thread that
         * calls, or oneDNN would start a team of all cores inside each of them. Only
         * invalid arguments fail, and kn_gemm_desc's never are. */
        b->omp_set_num_threads(1);
        (void)b->dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, bm, ldb, 0.0f, c,
                            ldc);
        break;
    case KILN_BLAS_KILN: cpu_kiln_sgemm(ta, tb, m, n, k, a, lda, bm, ldb, c, ldc); break;
    default:
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)n, (blasint)k, 1.0f, a, (blasint)lda, bm, (blasint)ldb,
                    0.0f, c, (blasint)ldc);
        break;
    }
}

void cpu_blas_dgemm(const cpu_blas *b, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                    const double *a, int64_t lda, const double *bm, int64_t ldb, double *c,
                    int64_t ldc) {
    static const double one = 1, zero = 0;
    switch (b->f64) {
    case KILN_BLAS_BLIS:
        b->bli_dgemm(0, 0, m, n, k, &one, a, ta ? 1 : lda, ta ? lda : 1, bm, tb ? 1 : ldb,
                     tb ? ldb : 1, &zero, c, ldc, 1);
        break;
    case KILN_BLAS_KILN: cpu_kiln_dgemm(ta, tb, m, n, k, a, lda, bm, ldb, c, ldc); break;
    default:
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)m, (blasint)n, (blasint)k, 1.0, a, (blasint)lda, bm, (blasint)ldb, 0.0,
                    c, (blasint)ldc);
        break;
    }
}
