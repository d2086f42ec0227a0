/* prefetch.c — a training-style loop whose every step needs a fresh batch copied to the
 * device, run twice side by side: without prefetch (fill the batch, copy it, run the step,
 * read the loss: the copy and the compute take turns) and with kiln_prefetch (the next
 * batches' copies run on the device's copy queue while the step computes). It prints the
 * step time of both next to the time of the copy alone and of the compute alone: with
 * prefetch a step should take about max(compute, copy).
 *
 *   kiln_prefetch [batch_mib=32] [steps=10] [work=8]
 *
 * `work` sets how much compute a step does per element (that many tanh in a row), so the
 * compute can be made to take about as long as the copy. The context is asynchronous
 * (async_dispatch) with one CPU device and one pool thread: the step's kernel runs on the
 * device's queue thread, the copy on its copy-queue thread, so on a machine with two free
 * cores they overlap. On a CPU device the "copy" is a memcpy from the host staging buffer
 * into device memory made by that copy-queue thread; on a GPU it is the DMA of the batch. */
#include "kiln.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIE(ctx, e)                                                                                \
    do {                                                                                           \
        kiln_status s_ = (e);                                                                      \
        if (s_) {                                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #e, kiln_last_error(ctx));      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int work = 8;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* loss = sum(tanh^work(x * w)): `work` elementwise ops fused into one loop and a sum */
static int step_fn(kiln_graph *g, const kiln_value *a, int n, const void *st, void *user,
                   kiln_value *outs) {
    (void)n, (void)st, (void)user;
    kiln_value v = kiln_mul(g, a[0], kiln_scalar(g, KILN_DTYPE_F32, 0.999));
    for (int i = 0; i < work; i++) v = kiln_tanh(g, v);
    outs[0] = kiln_reduce_sum(g, v, 0, NULL, false);
    return 1;
}

/* The data loader: the batch of step k. A real one decodes, augments, shuffles; this one
 * only stamps the step into the first element of a buffer filled once, so the figures
 * show the copy and the compute, not the loader. */
typedef struct loader {
    const float *data; /* one batch of data, reused */
    size_t n;
} loader;

static int fill(void *user, int64_t step, void *const *host, const size_t *sizes) {
    loader *l = user;
    if (sizes[0] != l->n * sizeof(float)) return -1;
    float *x = host[0];
    if (memcmp(x + 1, l->data + 1, 60)) memcpy(x, l->data, sizes[0]); /* a fresh buffer */
    x[0] = (float)step;
    return 0;
}

int main(int argc, char **argv) {
    int mib = argc > 1 ? atoi(argv[1]) : 32, steps = argc > 2 ? atoi(argv[2]) : 10;
    work = argc > 3 ? atoi(argv[3]) : 8;
    if (mib < 1 || steps < 2 || work < 0) return fprintf(stderr, "bad arguments\n"), 2;
    kiln_context_options o = {.async_dispatch = true, .num_threads = 1};
    kiln_context *ctx;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    int64_t n = (int64_t)mib << 18; /* f32 elements */
    float *data = malloc((size_t)n * sizeof *data), *staging = malloc((size_t)n * sizeof *data);
    for (int64_t i = 0; i < n; i++) data[i] = (float)(i % 1001) / 1000.0f - 0.5f;
    loader ld = {data, (size_t)n};
    kiln_jit *step;
    kiln_jit_options jo = {.name = "step", .fn = step_fn};
    DIE(ctx, kiln_jit_create(ctx, &jo, &step));
    float loss;

    /* Rounds, each measuring side by side: the copy alone, the compute alone (the batch
     * already on the device), a step without prefetch (fill, copy and wait, run, read the
     * loss) and a step with prefetch (the same, the batches from the pipeline). Each
     * figure is the median over every round's steps: the machine may be shared. */
    enum { ROUNDS = 5 };
    double *t_copy = calloc((size_t)ROUNDS * steps, sizeof(double)),
           *t_comp = calloc((size_t)ROUNDS * steps, sizeof(double)),
           *t_plain = calloc((size_t)ROUNDS * steps, sizeof(double)),
           *t_pre = calloc((size_t)ROUNDS * steps, sizeof(double));
    kiln_array *b = NULL, *l = NULL;
    DIE(ctx, kiln_array_create_on(ctx, 0, KILN_DTYPE_F32, 1, &n, data, &b));
    DIE(ctx, kiln_jit_call(step, 1, &b, NULL, 0, 1, &l)); /* compiles */
    DIE(ctx, kiln_array_copy_to_host(l, &loss, sizeof loss));
    kiln_array_destroy(b), kiln_array_destroy(l);
    kiln_arg_spec spec = {KILN_DTYPE_F32, 1, {n}};
    kiln_prefetch_options po = {.n_arrays = 1, .specs = &spec, .fill = fill, .user = &ld};
    size_t bytes = (size_t)n * sizeof(float);
    for (int r = 0; r < ROUNDS; r++) {
        double *tc = t_copy + r * steps, *tm = t_comp + r * steps, *tp = t_plain + r * steps,
               *tf = t_pre + r * steps;
        for (int k = 0; k < steps; k++) {
            double t0 = now();
            DIE(ctx, kiln_array_create_async(ctx, 0, KILN_DTYPE_F32, 1, &n, data, &b));
            DIE(ctx, kiln_array_block_until_ready(b));
            double t1 = now();
            DIE(ctx, kiln_jit_call(step, 1, &b, NULL, 0, 1, &l));
            DIE(ctx, kiln_array_copy_to_host(l, &loss, sizeof loss));
            tc[k] = t1 - t0, tm[k] = now() - t1;
            kiln_array_destroy(b), kiln_array_destroy(l);
        }
        for (int k = 0; k < steps; k++) { /* without prefetch */
            double t0 = now();
            fill(&ld, k, (void *const *)&staging, &bytes);
            DIE(ctx, kiln_array_create_on(ctx, 0, KILN_DTYPE_F32, 1, &n, staging, &b));
            DIE(ctx, kiln_jit_call(step, 1, &b, NULL, 0, 1, &l));
            DIE(ctx, kiln_array_copy_to_host(l, &loss, sizeof loss));
            kiln_array_destroy(b), kiln_array_destroy(l);
            tp[k] = now() - t0;
        }
        kiln_prefetch *p;
        DIE(ctx, kiln_prefetch_create(ctx, &po, &p));
        for (int k = 0; k < steps; k++) { /* with prefetch */
            double t0 = now();
            bool end;
            DIE(ctx, kiln_prefetch_next(p, &b, &end));
            DIE(ctx, kiln_jit_call(step, 1, &b, NULL, 0, 1, &l));
            kiln_array_destroy(b); /* the step still reads it: kiln keeps it until then */
            DIE(ctx, kiln_array_copy_to_host(l, &loss, sizeof loss));
            kiln_array_destroy(l);
            tf[k] = now() - t0;
        }
        kiln_prefetch_destroy(p);
    }
    double copy = median(t_copy, ROUNDS * steps), compute = median(t_comp, ROUNDS * steps),
           plain = median(t_plain, ROUNDS * steps), pre = median(t_pre, ROUNDS * steps);
    free(t_copy), free(t_comp), free(t_plain), free(t_pre);
    double ideal = copy > compute ? copy : compute;
    printf("batch %d MiB, 5 rounds of %d steps, work %d (medians of the steps)\n", mib, steps,
           work);
    printf("copy alone            %8.2f ms\n", copy * 1e3);
    printf("compute alone         %8.2f ms\n", compute * 1e3);
    printf("step without prefetch %8.2f ms\n", plain * 1e3);
    printf("step with prefetch    %8.2f ms  (ideal max(compute, copy) = %.2f ms: %.2fx of it)\n",
           pre * 1e3, ideal * 1e3, pre / ideal);
    kiln_jit_destroy(step);
    kiln_context_destroy(ctx);
    free(data), free(staging);
    return 0;
}
