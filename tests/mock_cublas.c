/* mock_cublas.c — a stand-in libcublas.so.13 for tests/test_cuda_mock.c, beside the
 * stand-in driver (tests/mock_cuda.c): the entry points the GPU backend loads
 * (src/backend/cuda/cuda_api.h, cu_cublas), which compute nothing but record each product
 * they are asked for, so the test checks the calls a program makes (which function, the
 * operand and result types, the compute type, the sizes, the transposes) on machines
 * without a GPU. mock_cublas_log() returns the calls since the last mock_cublas_clear(),
 * one line each:
 *   Sgemm ta tb m n k batch            (cublasSgemmStridedBatched; likewise Dgemm)
 *   GemmEx ta tb m n k batch A B C compute     (cublasGemmStridedBatchedEx; cudaDataType
 *                                               and cublasComputeType_t as numbers)
 *   SgemmBatched ta tb m n k batch lda ldb     (cublasSgemmBatched, over pointer arrays;
 *                                               likewise DgemmBatched)
 *   GemmBatchedEx ta tb m n k batch lda ldb A B C compute     (cublasGemmBatchedEx)
 * Handles are counted: mock_cublas_live() is the number created and not destroyed.
 * KILN_MOCK_CUBLAS_FAIL=<function> makes that product call fail (CUBLAS_STATUS_EXECUTION_FAILED,
 * 13) without recording it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[16384];
static size_t log_len;
static long live;
static int handle_storage;

static int failing(const char *name) {
    const char *f = getenv("KILN_MOCK_CUBLAS_FAIL");
    return f && !strcmp(f, name) ? 13 : 0;
}

const char *mock_cublas_log(void);
void mock_cublas_clear(void);
long mock_cublas_live(void);

const char *mock_cublas_log(void) {
    return log_text;
}
void mock_cublas_clear(void) {
    pthread_mutex_lock(&mu);
    log_len = 0;
    log_text[0] = 0;
    pthread_mutex_unlock(&mu);
}
long mock_cublas_live(void) {
    return live;
}

static void record(const char *line) {
    pthread_mutex_lock(&mu);
    size_t n = strlen(line);
    if (log_len + n + 1 < sizeof log_text) {
        memcpy(log_text + log_len, line, n + 1);
        log_len += n;
    }
    pthread_mutex_unlock(&mu);
}

int cublasCreate_v2(void **h);
int cublasDestroy_v2(void *h);
int cublasSetStream_v2(void *h, void *s);
int cublasSetMathMode(void *h, int mode);
int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *a, int lda, long long sa, const float *b, int ldb,
                              long long sb, const float *beta, float *c, int ldc, long long sc,
                              int batch);
int cublasDgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const double *alpha,
                              const double *a, int lda, long long sa, const double *b, int ldb,
                              long long sb, const double *beta, double *c, int ldc, long long sc,
                              int batch);
int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                               const void *a, int a_type, int lda, long long sa, const void *b,
                               int b_type, int ldb, long long sb, const void *beta, void *c,
                               int c_type, int ldc, long long sc, int batch, int compute, int algo);

int cublasCreate_v2(void **h) {
    pthread_mutex_lock(&mu);
    live++;
    pthread_mutex_unlock(&mu);
    *h = &handle_storage;
    return 0;
}
int cublasDestroy_v2(void *h) {
    (void)h;
    pthread_mutex_lock(&mu);
    live--;
    pthread_mutex_unlock(&mu);
    return 0;
}
int cublasSetStream_v2(void *h, void *s) {
    (void)h, (void)s;
    return 0;
}
int cublasSetMathMode(void *h, int mode) {
    (void)h, (void)mode;
    return 0;
}

int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *a, int lda, long long sa, const float *b, int ldb,
                              long long sb, const float *beta, float *c, int ldc, long long sc,
                              int batch) {
    if (failing("cublasSgemmStridedBatched")) return 13;
    (void)h, (void)alpha, (void)a, (void)lda, (void)sa, (void)b, (void)ldb, (void)sb, (void)beta;
    (void)c, (void)ldc, (void)sc;
    char line[160];
    snprintf(line, sizeof line, "Sgemm %d %d %d %d %d %d\n", ta, tb, m, n, k, batch);
    record(line);
    return 0;
}

int cublasDgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const double *alpha,
                              const double *a, int lda, long long sa, const double *b, int ldb,
                              long long sb, const double *beta, double *c, int ldc, long long sc,
                              int batch) {
    if (failing("cublasDgemmStridedBatched")) return 13;
    (void)h, (void)alpha, (void)a, (void)lda, (void)sa, (void)b, (void)ldb, (void)sb, (void)beta;
    (void)c, (void)ldc, (void)sc;
    char line[160];
    snprintf(line, sizeof line, "Dgemm %d %d %d %d %d %d\n", ta, tb, m, n, k, batch);
    record(line);
    return 0;
}

int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                               const void *a, int a_type, int lda, long long sa, const void *b,
                               int b_type, int ldb, long long sb, const void *beta, void *c,
                               int c_type, int ldc, long long sc, int batch, int compute,
                               int algo) {
    if (failing("cublasGemmStridedBatchedEx")) return 13;
    (void)h, (void)a, (void)lda, (void)sa, (void)b, (void)ldb, (void)sb, (void)c, (void)ldc;
    (void)sc, (void)algo;
    /* the compute type CUBLAS_COMPUTE_32F takes f32 scalars: 1 and 0 */
    float al, be;
    memcpy(&al, alpha, 4);
    memcpy(&be, beta, 4);
    char line[200];
    snprintf(line, sizeof line, "GemmEx %d %d %d %d %d %d %d %d %d %d%s\n", ta, tb, m, n, k, batch,
             a_type, b_type, c_type, compute, al == 1 && be == 0 ? "" : " (alpha, beta not 1, 0)");
    record(line);
    return 0;
}

int cublasSgemmBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                       const float *const *a, int lda, const float *const *b, int ldb,
                       const float *beta, float *const *c, int ldc, int batch);
int cublasDgemmBatched(void *h, int ta, int tb, int m, int n, int k, const double *alpha,
                       const double *const *a, int lda, const double *const *b, int ldb,
                       const double *beta, double *const *c, int ldc, int batch);
int cublasGemmBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                        const void *const *a, int a_type, int lda, const void *const *b, int b_type,
                        int ldb, const void *beta, void *const *c, int c_type, int ldc, int batch,
                        int compute, int algo);

int cublasSgemmBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                       const float *const *a, int lda, const float *const *b, int ldb,
                       const float *beta, float *const *c, int ldc, int batch) {
    if (failing("cublasSgemmBatched")) return 13;
    (void)h, (void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)ldc;
    char line[160];
    snprintf(line, sizeof line, "SgemmBatched %d %d %d %d %d %d %d %d\n", ta, tb, m, n, k, batch,
             lda, ldb);
    record(line);
    return 0;
}

int cublasDgemmBatched(void *h, int ta, int tb, int m, int n, int k, const double *alpha,
                       const double *const *a, int lda, const double *const *b, int ldb,
                       const double *beta, double *const *c, int ldc, int batch) {
    if (failing("cublasDgemmBatched")) return 13;
    (void)h, (void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)ldc;
    char line[160];
    snprintf(line, sizeof line, "DgemmBatched %d %d %d %d %d %d %d %d\n", ta, tb, m, n, k, batch,
             lda, ldb);
    record(line);
    return 0;
}

int cublasGemmBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                        const void *const *a, int a_type, int lda, const void *const *b, int b_type,
                        int ldb, const void *beta, void *const *c, int c_type, int ldc, int batch,
                        int compute, int algo) {
    if (failing("cublasGemmBatchedEx")) return 13;
    (void)h, (void)a, (void)b, (void)c, (void)ldc, (void)algo;
    float al, be;
    memcpy(&al, alpha, 4);
    memcpy(&be, beta, 4);
    char line[200];
    snprintf(line, sizeof line, "GemmBatchedEx %d %d %d %d %d %d %d %d %d %d %d %d%s\n", ta, tb, m,
             n, k, batch, lda, ldb, a_type, b_type, c_type, compute,
             al == 1 && be == 0 ? "" : " (alpha, beta not 1, 0)");
    record(line);
    return 0;
}
