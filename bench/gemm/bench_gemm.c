/* bench_gemm.c — sgemm GFLOP/s of the BLAS libraries Debian offers (OpenBLAS, BLIS, oneDNN),
 * loaded with dlopen, and of kiln's own kernel (KILN_BLAS=kiln, linked from
 * src/backend/cpu/gemm_kiln.c), on the product shapes of kiln's benchmark programs (MLP training
 * step, GPT step, LLaMA-style block), each in two threading modes:
 *   lib   — one call per matrix with the library's own threads set to T;
 *   split — what kiln's CPU backend does: T threads, each calling the library
 *           single-threaded on its share of the batch entries or row blocks.
 * Prints one Markdown row per (shape, provider, mode, T): the median over reps. A library
 * that is not installed is skipped with a note. Nothing here fails on time.
 *
 * Usage: bench_gemm [reps] [max_threads]   (defaults 15 and every core) */

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/blas.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct shape {
    const char *name;
    int64_t batch, m, n, k;
    int ta, tb; /* A stored [k, m], B stored [n, k] */
} shape;

/* Forward and backward products of the three programs (bench/mlp_train, the GPT step of
 * the issue, bench's LLaMA block at B=4, T=128, C=256). */
static const shape shapes[] = {
    {"mlp fwd 256x784 @ 784x512", 1, 256, 512, 784, 0, 0},
    {"mlp fwd 256x512 @ 512x512", 1, 256, 512, 512, 0, 0},
    {"mlp bwd dW 784x256 @ 256x512 (A^T)", 1, 784, 512, 256, 1, 0},
    {"mlp bwd dX 256x512 @ 512x784 (B^T)", 1, 256, 784, 512, 0, 1},
    {"gpt qkv 1024x256 @ 256x768", 1, 1024, 768, 256, 0, 0},
    {"gpt fc 1024x256 @ 256x1024", 1, 1024, 1024, 256, 0, 0},
    {"gpt proj 1024x1024 @ 1024x256", 1, 1024, 256, 1024, 0, 0},
    {"gpt bwd dW 256x1024 @ 1024x1024 (A^T)", 1, 256, 1024, 1024, 1, 0},
    {"gpt bwd dX 1024x256 @ 256x1024 (B^T)", 1, 1024, 1024, 256, 0, 1},
    {"gpt attn 32 x 128x64 @ 64x128 (B^T)", 32, 128, 128, 64, 0, 1},
    {"gpt attn 32 x 128x128 @ 128x64", 32, 128, 64, 128, 0, 0},
    {"gpt attn bwd 32 x 64x128 @ 128x128 (A^T)", 32, 64, 128, 128, 1, 0},
    {"llama qkv 512x256 @ 256x768", 1, 512, 768, 256, 0, 0},
    {"llama mlp 512x256 @ 256x688", 1, 512, 688, 256, 0, 0},
    {"llama down 512x688 @ 688x256", 1, 512, 256, 688, 0, 0},
    {"llama attn 16 x 128x64 @ 64x128 (B^T)", 16, 128, 128, 64, 0, 1},
    {"square 1024^3", 1, 1024, 1024, 1024, 0, 0},
};

typedef enum { P_OPENBLAS, P_BLIS, P_ONEDNN, P_KILN, P_N } provider_id;
static const char *const pnames[P_N] = {"openblas", "blis", "onednn", "kiln"};
static const char *const plibs[P_N] = {"libopenblas.so.0", "libblis.so.4", "libdnnl.so.2", ""};

typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                               const float *, int, float, float *, int);
typedef void (*bli_sgemm_fn)(int, int, int64_t, int64_t, int64_t, const float *, const float *,
                             int64_t, int64_t, const float *, int64_t, int64_t, const float *,
                             float *, int64_t, int64_t);
typedef int (*dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                             const float *, int64_t, float, float *, int64_t);

typedef struct provider {
    void *h;
    cblas_sgemm_fn ob;
    bli_sgemm_fn bl;
    dnnl_sgemm_fn dn;
    void (*set_threads)(int); /* openblas_set_num_threads, omp_set_num_threads */
    void (*bli_set_threads)(int64_t);
} provider;
static provider prov[P_N];

static void load(provider_id id) {
    provider *p = &prov[id];
    if (id == P_KILN) {
        p->h = (void *)&prov; /* linked in: present */
        return;
    }
    /* Debian's BLIS: pick the pthread flavour, as kiln's pool is plain pthreads. */
    const char *path =
        id == P_BLIS ? "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4" : plibs[id];
    p->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->h && id == P_BLIS) p->h = dlopen(plibs[id], RTLD_NOW | RTLD_LOCAL);
    if (!p->h) return;
    if (id == P_OPENBLAS) {
        *(void **)&p->ob = dlsym(p->h, "cblas_sgemm");
        *(void **)&p->set_threads = dlsym(p->h, "openblas_set_num_threads");
    } else if (id == P_BLIS) {
        *(void **)&p->bl = dlsym(p->h, "bli_sgemm");
        *(void **)&p->bli_set_threads = dlsym(p->h, "bli_thread_set_num_threads");
    } else {
        *(void **)&p->dn = dlsym(p->h, "dnnl_sgemm");
        *(void **)&p->set_threads = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
        if (!p->set_threads) *(void **)&p->set_threads = dlsym(p->h, "omp_set_num_threads");
    }
}

static void set_threads(provider_id id, int t) {
    provider *p = &prov[id];
    if (id == P_KILN) return; /* single-threaded by construction */
    if (id == P_BLIS)
        p->bli_set_threads(t);
    else if (p->set_threads)
        p->set_threads(t); /* OpenMP: this thread's ICV only, which is what split needs */
}

/* C[m0:m1] of one matrix: row-major, A [m,k] or stored [k,m], B [k,n] or stored [n,k]. */
static void one(provider_id id, const shape *s, const float *a, const float *b, float *c,
                int64_t m0, int64_t m1) {
    int64_t m = m1 - m0, n = s->n, k = s->k;
    int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    const float *ap = a + (s->ta ? m0 : m0 * lda);
    float *cp = c + m0 * n;
    float one_ = 1, zero = 0;
    if (id == P_OPENBLAS)
        prov[id].ob(101, s->ta ? 112 : 111, s->tb ? 112 : 111, (int)m, (int)n, (int)k, 1.0f, ap,
                    (int)lda, b, (int)ldb, 0.0f, cp, (int)n);
    else if (id == P_BLIS)
        prov[id].bl(0, 0, m, n, k, &one_, ap, s->ta ? 1 : lda, s->ta ? lda : 1, b, s->tb ? 1 : ldb,
                    s->tb ? ldb : 1, &zero, cp, n, 1);
    else if (id == P_KILN)
        cpu_kiln_sgemm(s->ta, s->tb, m, n, k, ap, lda, b, ldb, cp, n);
    else
        prov[id].dn(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', m, n, k, 1.0f, ap, lda, b, ldb, 0.0f, cp,
                    n);
}

typedef struct job {
    provider_id id;
    const shape *s;
    const float *a, *b;
    float *c;
    int threads, reps, tid;
    pthread_barrier_t *bar;
    double *times;
} job;

/* Work items are batch entries, or row blocks of the one matrix: as cpu_gemm_blocks. */
static void *split_worker(void *arg) {
    job *j = arg;
    const shape *s = j->s;
    set_threads(j->id, 1);
    int64_t items = s->batch >= j->threads ? s->batch : j->threads;
    int64_t per_a = s->m * s->k, per_b = s->k * s->n, per_c = s->m * s->n;
    for (int r = 0; r < j->reps; r++) {
        pthread_barrier_wait(j->bar);
        double t0 = now();
        for (int64_t it = items * j->tid / j->threads; it < items * (j->tid + 1) / j->threads;
             it++) {
            if (s->batch > 1)
                one(j->id, s, j->a + it * per_a, j->b + it * per_b, j->c + it * per_c, 0, s->m);
            else
                one(j->id, s, j->a, j->b, j->c, s->m * it / items, s->m * (it + 1) / items);
        }
        pthread_barrier_wait(j->bar);
        if (j->tid == 0) j->times[r] = now() - t0;
    }
    return NULL;
}

static double run(provider_id id, const shape *s, int threads, int split, int reps, const float *a,
                  const float *b, float *c) {
    double times[64];
    if (!split || threads == 1) {
        set_threads(id, threads);
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            for (int64_t i = 0; i < s->batch; i++)
                one(id, s, a + i * s->m * s->k, b + i * s->k * s->n, c + i * s->m * s->n, 0, s->m);
            times[r] = now() - t0;
        }
    } else {
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, (unsigned)threads);
        job jobs[16];
        pthread_t th[16];
        for (int t = 0; t < threads; t++) {
            jobs[t] = (job){id, s, a, b, c, threads, reps, t, &bar, times};
            if (t) pthread_create(&th[t], NULL, split_worker, &jobs[t]);
        }
        split_worker(&jobs[0]);
        for (int t = 1; t < threads; t++) pthread_join(th[t], NULL);
        pthread_barrier_destroy(&bar);
        set_threads(id, 1);
    }
    /* the first rep warms up (packing buffers, OpenMP team, page faults) */
    qsort(times + 1, (size_t)reps - 1, sizeof *times, cmp_d);
    double med = times[1 + (reps - 1) / 2];
    return 2.0 * (double)s->batch * (double)s->m * (double)s->n * (double)s->k / med / 1e9;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    int maxt = argc > 2 ? atoi(argv[2]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    reps = reps < 3 ? 3 : reps > 63 ? 63 : reps;
    maxt = maxt < 1 ? 1 : maxt > 16 ? 16 : maxt;
    for (int p = 0; p < P_N; p++) {
        load((provider_id)p);
        if (!prov[p].h) printf("# %s: not installed (%s)\n", pnames[p], dlerror());
    }
    printf("| shape | provider | mode | threads | GFLOP/s |\n| --- | --- | --- | ---: | ---: |\n");
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const shape *s = &shapes[si];
        size_t na = (size_t)(s->batch * s->m * s->k), nb = (size_t)(s->batch * s->k * s->n),
               nc = (size_t)(s->batch * s->m * s->n);
        float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4);
        if (!a || !b || !c) return 1;
        for (size_t i = 0; i < na; i++) a[i] = (float)(i % 13) * 0.1f;
        for (size_t i = 0; i < nb; i++) b[i] = (float)(i % 7) * 0.1f;
        for (int p = 0; p < P_N; p++) {
            if (!prov[p].h) continue;
            for (int t = 1; t <= maxt; t *= 2)
                for (int split = p == P_KILN && t > 1; split < (t > 1 ? 2 : 1); split++)
                    printf("| %s | %s | %s | %d | %.1f |\n", s->name, pnames[p],
                           t == 1  ? "-"
                           : split ? "split"
                                   : "lib",
                           t, run((provider_id)p, s, t, split, reps, a, b, c));
            fflush(stdout);
        }
        free(a), free(b), free(c);
    }
    return 0;
}
