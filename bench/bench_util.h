/* bench_util.h — what the C benchmarks share: a monotonic clock, medians, a die-on-error
 * check, and the sgemm ceiling measured the way kiln runs its products. Benchmarks print
 * figures; nothing here fails on time. */
#ifndef KILN_BENCH_UTIL_H
#define KILN_BENCH_UTIL_H

#include "kiln.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* xorshift64*, in [0, 1): the benchmarks' inputs, reproducible from a seed. */
static inline double bench_uniform(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return (double)((*s * 0x2545f4914f6cdd1du) >> 11) * 0x1p-53;
}

/* Writes n bytes to dir/name (the inputs and outputs the Python sides read); exits saying
 * which file on failure. */
static inline void bench_write_file(const char *dir, const char *name, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Steady-state benchmarks time the -O3 build. With two compile tiers (the default where the
 * tiers give the same bits, docs/performance.md) a program's first calls run its kernels
 * from their descriptions until the build is swapped in, which a warm-up run or two need
 * not outlast. Call before creating the context (a context that ignores the environment
 * sets compile_tiers = 1 in its options instead); KILN_COMPILE_TIERS in the environment
 * still wins (bench/programs and bench/gpt/first_step.sh time the first calls on purpose). */
static inline void bench_one_tier(void) {
    const char *v = getenv("KILN_COMPILE_TIERS");
    if (!v || !*v) setenv("KILN_COMPILE_TIERS", "1", 1);
}

#define DIE(ctx, e)                                                                                \
    do {                                                                                           \
        if ((e) != KILN_STATUS_OK) {                                                               \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, kiln_last_error(ctx));              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The sgemm 1024^3 ceiling in GFLOP/s, the median of `reps` runs after one warm-up (reps <=
 * 63): the better of OpenBLAS and, where libdnnl.so.2 loads, oneDNN (kiln's default f32
 * provider), each on as many threads as kiln's pool has (KILN_NUM_THREADS, else every
 * core), set for this measurement only: kiln runs them single-threaded inside that pool
 * (src/backend/cpu/cpu_backend.c). OpenBLAS alone is no ceiling where it does not know the
 * CPU and runs its oldest kernels (src/backend/cpu/blas.h). *which (may be NULL) names the
 * library measured. */
static inline double sgemm_ceiling_of(int reps, const char **which) {
    const char *env = getenv("KILN_NUM_THREADS");
    int threads = env && atoi(env) > 0 ? atoi(env) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int n = 1024;
    float *a = calloc((size_t)n * n, 4), *b = calloc((size_t)n * n, 4),
          *c = calloc((size_t)n * n, 4);
    if (!a || !b || !c) exit(1);
    for (int i = 0; i < n * n; i++) a[i] = (float)(i % 7), b[i] = (float)(i % 5);
    reps = reps < 1 ? 1 : reps > 63 ? 63 : reps;
    int (*dnnl)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *,
                int64_t, float, float *, int64_t) = NULL;
    void (*omp_threads)(int) = NULL;
    void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h) {
        void *f = dlsym(h, "dnnl_sgemm"), *o = dlsym(h, "omp_set_num_threads");
        if (f && o) memcpy(&dnnl, &f, sizeof f), memcpy(&omp_threads, &o, sizeof o);
    }
    double best = 0;
    for (int lib = 0; lib < (dnnl ? 2 : 1); lib++) {
        int saved = openblas_get_num_threads();
        if (lib)
            omp_threads(threads);
        else
            openblas_set_num_threads(threads);
        double t[64];
        for (int r = 0; r < reps + 1; r++) {
            double t0 = now();
            if (lib)
                dnnl('N', 'N', n, n, n, 1, a, n, b, n, 0, c, n);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c,
                            n);
            t[r] = now() - t0;
        }
        if (!lib) openblas_set_num_threads(saved);
        double g = 2.0 * n * n * n / median(t + 1, reps) / 1e9;
        if (g > best) {
            best = g;
            if (which) *which = lib ? "oneDNN" : "OpenBLAS";
        }
    }
    free(a), free(b), free(c);
    return best;
}

static inline double sgemm_ceiling(int reps) {
    return sgemm_ceiling_of(reps, NULL);
}

#endif
