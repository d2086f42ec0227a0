/* first_gemm.c — the smallest reproducer of "the first product of every run is 3x slower
 * with oneDNN" (bench/RESULTS.md, issue 14): it was never per run. oneDNN's dnnl_sgemm
 * generates its JIT kernels (all of them, whatever the shape) in the first call of the
 * process, and a profile that averages each kernel over the runs, the first included,
 * spreads that one-time cost over every run of whichever product comes first.
 *
 * Usage: first_gemm [M N K [CALLS]]  (defaults: 512 256 256 33, the LLaMA-style block's q
 * projection at B4 T128 C256, and the 3 warm-ups + 30 runs the block's profile averaged).
 * Prints the first call, the mean over all calls (what that profile showed), the mean of
 * the calls after the first, and a first call of a new shape and transpose (no new
 * kernels). Thread CPU time, single-threaded (as kiln's pool calls oneDNN), so other load
 * on the machine barely moves it. oneDNN is loaded with dlopen as kiln loads it: without
 * libdnnl2 installed it says so and exits 2. Not a test: it checks no time. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                        const float *, int64_t, float, float *, int64_t);

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    int64_t m = argc > 3 ? atoll(argv[1]) : 512, n = argc > 3 ? atoll(argv[2]) : 256,
            k = argc > 3 ? atoll(argv[3]) : 256;
    int calls = argc > 4 ? atoi(argv[4]) : 33;
    if (m < 1 || n < 1 || k < 1 || calls < 2) {
        fprintf(stderr, "usage: first_gemm [M N K [CALLS >= 2]]\n");
        return 2;
    }
    void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "first_gemm: %s (sudo apt-get install -y libdnnl2)\n", dlerror());
        return 2;
    }
    sgemm_fn sgemm;
    void (*omp_threads)(int);
    void *p = dlsym(h, "dnnl_sgemm"), *q = dlsym(h, "omp_set_num_threads");
    if (!p || !q) {
        fprintf(stderr, "first_gemm: libdnnl.so.2 has no dnnl_sgemm or omp_set_num_threads\n");
        return 2;
    }
    memcpy(&sgemm, &p, sizeof p);
    memcpy(&omp_threads, &q, sizeof q);
    omp_threads(1);
    float *a = malloc(sizeof(float) * (size_t)(m * k)),
          *b = malloc(sizeof(float) * (size_t)(k * n)),
          *c = malloc(sizeof(float) * (size_t)(m * n));
    if (!a || !b || !c) return 1;
    for (int64_t i = 0; i < m * k; i++) a[i] = (float)(i % 7) * 0.1f;
    for (int64_t i = 0; i < k * n; i++) b[i] = (float)(i % 5) * 0.1f;
    double first = 0, sum = 0;
    for (int r = 0; r < calls; r++) {
        double t = cpu_now();
        sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
        t = cpu_now() - t;
        if (!r) first = t;
        sum += t;
    }
    double t = cpu_now();
    sgemm('N', 'T', m / 2 + 1, n / 2 + 1, k / 2 + 1, 1.0f, a, k, b, k, 0.0f, c, n);
    t = cpu_now() - t;
    printf("dnnl_sgemm %lldx%lldx%lld, 1 thread: first call %.3f ms; mean of all %d calls %.3f ms "
           "(%.1fx the rest); mean of the %d after the first %.3f ms; first call of a new shape "
           "and transpose %.3f ms\n",
           (long long)m, (long long)n, (long long)k, first * 1e3, calls, sum / calls * 1e3,
           sum / calls / ((sum - first) / (calls - 1)), calls - 1,
           (sum - first) / (calls - 1) * 1e3, t * 1e3);
    free(a), free(b), free(c);
    return 0;
}
