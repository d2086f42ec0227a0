/* test_loops.c — the loop forms of fused kernels (issue 14): the column form of a
 * reduction fused with a gather (rows outside, features inside) and with elementwise ops
 * after it, f32 sums in f32 blocks added in f64 and the accuracy that keeps, and an
 * interleave (reshape, slice, concatenate on a split-off axis: RoPE's) looped over its
 * real axes with no division per element, and reductions with one work item split across
 * threads (partial results combined in a fixed order).
 *
 * Each form is checked on its text (the loop order, the block, no `/` or `%` in the
 * element's index) and on its numbers through cmp_graph (compiled and run against the
 * reference interpreter), at odd sizes that leave partial blocks and chunks. The long f32
 * sums are held to a bound that the sequential f32 sum fails (the test shows it does), and
 * their results must be the same bits with 1, 2 and 3 threads. */
#define KILN_NO_LOCATION_MACROS
#include "test.h"
#include "compare.h"
#include "codegen/cgen.h"
#include "codegen/kdesc.h"

#include <math.h>
#include <stdint.h>

#define CHECK_LACKS(hay, needle)                                                                   \
    CHECK_MSG(!strstr((hay), (needle)), "\"%s\" contains \"%s\"", (hay), (needle))

static kiln_context *ctx;
static char cache_dir[] = "/tmp/kiln-test-loops-XXXXXX";

/* The kernels' C source of finished graph g (caller frees). */
static char *source_of(kiln_graph *g) {
    fusion_plan p;
    CHECK_OK(ctx, fusion_plan_build(g, &(fusion_options){0}, &p));
    cgen_kernel info[64];
    strbuf sb;
    sb_init(&sb, ctx);
    CHECK(p.n_kernels <= 64);
    CHECK_OK(ctx, cgen_program(g, &p, &sb, info));
    fusion_plan_free(&p);
    char *src = sb_take(&sb);
    sb_free(&sb);
    char *out = strdup(src ? src : "");
    kiln_string_free(ctx, src);
    return out;
}

/* The text of the function kiln_k<k> in src (caller frees). */
static char *kernel_text(const char *src, int k) {
    char head[64];
    snprintf(head, sizeof head, "void kiln_k%d(", k);
    const char *a = strstr(src, head), *e = a ? strstr(a, "\n}\n") : NULL;
    return a && e ? strndup(a, (size_t)(e - a) + 3) : strdup("");
}

/* ---------------------------------------------------- gather + mean ---- */

/* take_rows of a [V, D] table by [B, T] tokens, mean over T, scaled and shifted after:
 * one column-form kernel (the reduction outside, the features inside), right at sizes
 * with a partial f32 block (T > KD_COL_BLOCK) and a partial chunk (D > KD_CHUNK). */
static void gather_mean(int64_t B, int64_t T, int64_t V, int64_t D) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "gather_mean", &g));
    int64_t td[2] = {V, D}, kd[2] = {B, T}, bd[1] = {D};
    kiln_value table = kiln_parameter(g, "table", KILN_DTYPE_F32, 2, td);
    kiln_value tok = kiln_parameter(g, "tok", KILN_DTYPE_I32, 2, kd);
    kiln_value bias = kiln_parameter(g, "bias", KILN_DTYPE_F32, 1, bd);
    int ax = 1;
    kiln_value m = kiln_mean(g, kiln_take_rows(g, table, tok), 1, &ax, false);
    kiln_value y = kiln_add(g, kiln_mul(g, m, kiln_scalar(g, KILN_DTYPE_F32, 3)),
                            kiln_broadcast_to(g, bias, 2, (int64_t[]){B, D}));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    char *src = source_of(g), *k0 = kernel_text(src, 0);
    /* the reduce loop opens before the element loop, which reads a contiguous table row
     * (rows of one feature are summed element by element: lower.c, column_reductions) */
    const char *red = strstr(k0, "for (int64_t r"), *elem = strstr(k0, "#pragma omp simd\n");
    CHECK_MSG(D == 1 || (red && elem && red < elem), "%s", k0);
    CHECK_MSG(D == 1 || strstr(k0, "_b[i1 - jb] += v"), "%s", k0);
    CHECK_MSG(D == 1 || strstr(k0, "[j] += (double)acc"), "%s", k0);
    free(k0);
    free(src);
    uint64_t seed = 7;
    kiln_array *args[3] = {cmp_random_array(ctx, KILN_DTYPE_F32, 2, td, &seed), NULL,
                           cmp_random_array(ctx, KILN_DTYPE_F32, 1, bd, &seed)};
    int32_t *ids = malloc((size_t)(B * T) * sizeof *ids);
    for (int64_t i = 0; i < B * T; i++) ids[i] = (int32_t)test_rng_int(&seed, (int)V + 2) - 1;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 2, kd, ids, &args[1]));
    free(ids);
    int n_kernels = 0;
    CHECK(cmp_graph(ctx, g, 3, args, NULL, 1e-5, &n_kernels));
    CHECK_MSG(n_kernels == 1, "%d kernels", n_kernels);
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void test_gather_mean(void) {
    gather_mean(3, 300, 37, 45);
    gather_mean(2, 129, 11, 2500);
    gather_mean(1, 1, 1, 1);
}

/* ------------------------------------------------- long f32 sums ---- */

/* x[i] = 0.1 + a little, all positive (so sum |x| is the sum). */
static float *ramp(int64_t n) {
    float *x = malloc((size_t)n * sizeof *x);
    uint64_t s = 11;
    for (int64_t i = 0; i < n; i++) x[i] = 0.1f + 0.01f * (float)test_rng_unit(&s);
    return x;
}

/* The sum of x in f32, one element after another, as a naive loop would. */
static float sequential_f32(const float *x, int64_t n, int64_t stride) {
    volatile float acc = 0; /* no reassociation, no vector lanes */
    for (int64_t i = 0; i < n; i++) acc += x[i * stride];
    return acc;
}

/* A full sum (to a scalar) of n f32 values and a column sum of an [n/cols, cols] array,
 * each against the sum in f64: the error must stay within 2^-16 of sum |x|, which a
 * block of KD_SUM_BLOCK (scalar, in 16 lanes or fewer) or KD_COL_BLOCK (column) f32
 * additions keeps by a wide margin (their bound is block * 2^-24 at worst) and which the
 * sequential f32 sum, whose bound is n * 2^-24, fails at these n. The same bits come out
 * with 1, 2 and 3 threads. */
static void test_long_f32_sums(void) {
    const int64_t n = 3000017, cols = 7, rows = n / cols;
    float *x = ramp(n);
    double want = 0, want_col[7] = {0};
    for (int64_t i = 0; i < n; i++) want += x[i];
    for (int64_t i = 0; i < rows * cols; i++) want_col[i % cols] += x[i];
    const double bound = 0x1p-16;
    /* the bound means something: the naive sum misses it */
    float naive = sequential_f32(x, n, 1), naive_col = sequential_f32(x, rows, cols);
    CHECK_MSG(fabs(naive - want) > bound * want, "sequential f32 %.9g vs %.9g", naive, want);
    CHECK_MSG(fabs(naive_col - want_col[0]) > bound * want_col[0], "sequential column %.9g vs %.9g",
              naive_col, want_col[0]);
    float first[1 + 7];
    for (int threads = 1; threads <= 3; threads++) {
        kiln_context *c = test_threads_context(cache_dir, threads);
        CHECK_MSG(c, "a context of %d threads", threads);
        if (!c) continue;
        kiln_graph *g = NULL;
        CHECK_OK(c, kiln_graph_create(c, "long_sums", &g));
        int64_t d1[1] = {n}, d2[2] = {rows, cols};
        kiln_value v = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d1);
        kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F32, 2, d2);
        int ax0 = 0;
        kiln_value outs[2] = {kiln_reduce_sum(g, v, 0, NULL, false),
                              kiln_reduce_sum(g, m, 1, &ax0, false)};
        CHECK_OK(c, kiln_graph_finish(g, 2, outs));
        kiln_executable *e = NULL;
        CHECK_OK(c, kiln_compile(g, NULL, &e));
        kiln_array *a[2] = {NULL, NULL}, *r[2] = {NULL, NULL};
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 1, d1, x, &a[0]));
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 2, d2, x, &a[1]));
        float got[1 + 7] = {0};
        if (e && a[0] && a[1] && !kiln_executable_run(e, 2, a, 2, r)) {
            CHECK_OK(c, kiln_array_copy_to_host(r[0], got, sizeof(float)));
            CHECK_OK(c, kiln_array_copy_to_host(r[1], got + 1, 7 * sizeof(float)));
        } else
            CHECK_MSG(false, "run: %s", kiln_last_error(c));
        CHECK_MSG(fabs(got[0] - want) <= bound * want, "%d threads: %.9g vs %.9g", threads, got[0],
                  want);
        for (int j = 0; j < cols; j++)
            CHECK_MSG(fabs(got[1 + j] - want_col[j]) <= bound * want_col[j],
                      "%d threads, column %d: %.9g vs %.9g", threads, j, got[1 + j], want_col[j]);
        if (threads == 1)
            memcpy(first, got, sizeof got);
        else
            CHECK_MSG(!memcmp(first, got, sizeof got), "%d threads: other bits than 1", threads);
        for (int i = 0; i < 2; i++) kiln_array_destroy(a[i]), kiln_array_destroy(r[i]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
        kiln_context_destroy(c);
    }
    free(x);
}

/* ---------------------------------------------- split reductions ---- */

/* Reductions with one work item (to a scalar; to [3] from [3, n]) split across threads
 * (kd_kernel.parts): a float sum of exps, a float max with a NaN in one row, a wrapping
 * i32 sum, a mean, a min. Each kernel has its part function; the results agree with the
 * reference interpreter and are the same bits with 1, 2 and 3 threads. */
static void test_split_reductions(void) {
    const int64_t n = 100003;
    int64_t d1[1] = {n}, d2[2] = {3, n};
    uint64_t seed = 5;
    float *x = malloc((size_t)(3 * n) * sizeof *x);
    int32_t *k = malloc((size_t)n * sizeof *k);
    for (int64_t i = 0; i < 3 * n; i++) x[i] = (float)(2 * test_rng_unit(&seed) - 1);
    for (int64_t i = 0; i < n; i++) k[i] = (int32_t)(test_rng_next(&seed) >> 1);
    x[n + 777] = NAN;
    float first[1 + 3 + 3 + 3];
    int32_t first_k = 0;
    for (int threads = 1; threads <= 3; threads++) {
        kiln_context *c = test_threads_context(cache_dir, threads);
        CHECK_MSG(c, "a context of %d threads", threads);
        if (!c) continue;
        kiln_graph *g = NULL;
        CHECK_OK(c, kiln_graph_create(c, "split", &g));
        kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, d1);
        kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F32, 2, d2);
        kiln_value ki = kiln_parameter(g, "k", KILN_DTYPE_I32, 1, d1);
        int ax1 = 1;
        kiln_value outs[5] = {
            kiln_reduce_sum(g, kiln_exp(g, v), 0, NULL, false),
            kiln_reduce_max(g, m, 1, &ax1, false), kiln_reduce_sum(g, ki, 0, NULL, false),
            kiln_mean(g, kiln_mul(g, m, m), 1, &ax1, false), kiln_reduce_min(g, m, 1, &ax1, false)};
        CHECK_OK(c, kiln_graph_finish(g, 5, outs));
        if (threads == 1) {
            kiln_context *saved = ctx;
            ctx = c;
            char *src = source_of(g);
            ctx = saved;
            int parts = 0, fns = 0;
            for (const char *at = src; (at = strstr(at, "_part(void")); at++) parts++;
            for (const char *at = src; (at = strstr(at, "(void *const *b,")); at++) fns++;
            /* fusion puts the three [3] reductions in one kernel: its first is split */
            CHECK_MSG(parts == 3 && fns == 6, "%d parts, %d functions:\n%s", parts, fns, src);
            free(src);
        }
        kiln_array *a[3] = {NULL, NULL, NULL}, *r[5] = {NULL};
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 1, d1, x, &a[0]));
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_F32, 2, d2, x, &a[1]));
        CHECK_OK(c, kiln_array_create(c, KILN_DTYPE_I32, 1, d1, k, &a[2]));
        CHECK(cmp_graph(c, g, 3, a, NULL, 1e-5, NULL));
        kiln_executable *e = NULL;
        CHECK_OK(c, kiln_compile(g, NULL, &e));
        float got[1 + 3 + 3 + 3] = {0};
        int32_t got_k = 0;
        if (e && !kiln_executable_run(e, 3, a, 5, r)) {
            CHECK_OK(c, kiln_array_copy_to_host(r[0], got, sizeof(float)));
            CHECK_OK(c, kiln_array_copy_to_host(r[1], got + 1, 3 * sizeof(float)));
            CHECK_OK(c, kiln_array_copy_to_host(r[2], &got_k, sizeof got_k));
            CHECK_OK(c, kiln_array_copy_to_host(r[3], got + 4, 3 * sizeof(float)));
            CHECK_OK(c, kiln_array_copy_to_host(r[4], got + 7, 3 * sizeof(float)));
        } else
            CHECK_MSG(false, "run: %s", kiln_last_error(c));
        CHECK_MSG(isnan(got[2]) && isnan(got[8]) && !isnan(got[1]) && !isnan(got[3]),
                  "NaN rows: max %g %g %g, min %g", got[1], got[2], got[3], got[8]);
        if (threads == 1) {
            memcpy(first, got, sizeof got);
            first_k = got_k;
        } else {
            CHECK_MSG(!memcmp(first, got, sizeof got) && first_k == got_k,
                      "%d threads: other bits than 1", threads);
        }
        for (int i = 0; i < 3; i++) kiln_array_destroy(a[i]);
        for (int i = 0; i < 5; i++) kiln_array_destroy(r[i]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
        kiln_context_destroy(c);
    }
    free(x);
    free(k);
}

/* A long float sum adds in the same slices whether or not its kernel splits it across
 * threads (kd_stmt.slices), so its bits depend on the sum alone: sum(exp(m)) over the rows
 * of [64, n] as the root of a one-item kernel (split into parts) and as [64, 1] (64 items,
 * not split), with 2 threads, are the same bits (without slices, 2 of the 64 were not).
 * And a float sum too short for slices is not split (the [10, 8000] sum below, whose work
 * would be split otherwise). */
static void test_split_same_bits(void) {
    enum { R = 64 };
    const int64_t n = 100003;
    int64_t d2[2] = {R, n}, d31[2] = {R, 1}, s2[2] = {10, 8000};
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.cache_dir = cache_dir;
    o.num_threads = 2;
    kiln_context *c = NULL;
    char err[256];
    CHECK_OK(c, kiln_context_create(&o, &c, err, sizeof err));
    if (!c) return;
    uint64_t seed = 11;
    kiln_array *x = cmp_random_array(c, KILN_DTYPE_F32, 2, d2, &seed);
    float got[2][R];
    for (int form = 0; form < 2; form++) {
        kiln_graph *g = NULL;
        CHECK_OK(c, kiln_graph_create(c, "sliced", &g));
        kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F32, 2, d2);
        int ax1 = 1;
        kiln_value sum = kiln_reduce_sum(g, kiln_exp(g, m), 1, &ax1, false);
        kiln_value out = form ? kiln_reshape(g, sum, 2, d31) : sum;
        CHECK_OK(c, kiln_graph_finish(g, 1, &out));
        kiln_context *saved = ctx;
        ctx = c;
        char *src = source_of(g);
        ctx = saved;
        CHECK_MSG(!strstr(src, "_part(void") == (form == 1), "form %d:\n%s", form, src);
        CHECK_MSG(strstr(src, "kiln_prev") != NULL || form == 0, "no slices:\n%s", src);
        free(src);
        kiln_executable *e = NULL;
        kiln_array *r = NULL;
        CHECK_OK(c, kiln_compile(g, NULL, &e));
        if (e && !kiln_executable_run(e, 1, &x, 1, &r))
            CHECK_OK(c, kiln_array_copy_to_host(r, got[form], sizeof got[form]));
        else
            CHECK_MSG(false, "run: %s", kiln_last_error(c));
        kiln_array_destroy(r);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    int differ = 0;
    for (int i = 0; i < R; i++) differ += memcmp(&got[0][i], &got[1][i], sizeof(float)) != 0;
    CHECK_MSG(!differ, "%d of %d sums differ split and not", differ, R);
    kiln_graph *g = NULL;
    CHECK_OK(c, kiln_graph_create(c, "short", &g));
    int ax1 = 1;
    kiln_value out =
        kiln_reduce_sum(g, kiln_parameter(g, "s", KILN_DTYPE_F32, 2, s2), 1, &ax1, false);
    CHECK_OK(c, kiln_graph_finish(g, 1, &out));
    kiln_context *saved = ctx;
    ctx = c;
    char *src = source_of(g);
    ctx = saved;
    CHECK_MSG(!strstr(src, "_part(void"), "an 8000-value sum split:\n%s", src);
    free(src);
    kiln_graph_destroy(g);
    kiln_array_destroy(x);
    kiln_context_destroy(c);
}

/* A one-item kernel storing an elementwise root before its reduction is not split (its
 * parts would store too), and is right either way; donated, so that the root may be
 * written over the input the reduction reads. */
static void test_split_after_store(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "store_first", &g));
    int64_t d1[1] = {3}, d2[2] = {3, 70001};
    kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 1, d1);
    kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F32, 2, d2);
    int ax1 = 1;
    kiln_value outs[2] = {kiln_mul(g, a, kiln_scalar(g, KILN_DTYPE_F32, 2)),
                          kiln_add(g, kiln_reduce_sum(g, m, 1, &ax1, false), a)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, outs));
    uint64_t seed = 9;
    kiln_array *args[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 1, d1, &seed),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 2, d2, &seed)};
    CHECK(cmp_graph(ctx, g, 2, args, NULL, 1e-5, NULL));
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------- row values ---- */

/* Loop kernels of finished graph g, after fusion. */
static int loop_kernels(kiln_graph *g) {
    fusion_plan p;
    CHECK_OK(ctx, fusion_plan_build(g, &(fusion_options){0}, &p));
    int n = 0;
    for (uint32_t k = 0; k < p.n_kernels; k++) n += p.kernels[k].kind == FK_LOOP;
    fusion_plan_free(&p);
    return n;
}

typedef struct row_case {
    const char *name;
    int rank;
    int64_t d[3];
    kiln_dtype t;
    int kernels; /* loop kernels expected */
} row_case;

/* The outputs of row case c over its parameter x (and y, [d0, 3, d1] for the column form). */
static int row_outputs(kiln_graph *g, const row_case *c, kiln_value x, kiln_value *o) {
    int last = -1, ax0 = 0;
    int64_t n = c->d[c->rank - 1];
    const char *m = c->name;
    if (!strcmp(m, "layer_norm") || !strcmp(m, "rms_norm")) {
        kiln_value s = kiln_parameter(g, "s", c->t, 1, &n), b = kiln_parameter(g, "b", c->t, 1, &n);
        o[0] = m[0] == 'l' ? kiln_layer_norm(g, x, s, b, 1e-5) : kiln_rms_norm(g, x, s, -1, 1e-6);
        return 1;
    }
    if (!strcmp(m, "max_and_softmax")) {
        o[0] = kiln_reduce_max(g, x, 1, &last, false);
        o[1] = kiln_softmax(g, x, -1);
        return 2;
    }
    if (!strcmp(m, "logsumexp_and_softmax")) {
        o[0] = kiln_logsumexp(g, x, 1, &last, false);
        o[1] = kiln_softmax(g, x, -1);
        return 2;
    }
    if (!strcmp(m, "centred_ints")) {
        o[0] = kiln_sub(g, x, kiln_reduce_sum(g, x, 1, &last, true));
        return 1;
    }
    if (!strcmp(m, "transposed_softmax")) {
        o[0] = kiln_transpose(g, kiln_softmax(g, x, -1), (const int[]){1, 0});
        return 1;
    }
    if (!strcmp(m, "column_form")) { /* x - mean(x) + a column sum: the column form's prologue */
        int64_t yd[3] = {c->d[0], 3, n};
        int mid = 1;
        kiln_value y = kiln_parameter(g, "y", c->t, 3, yd);
        o[0] = kiln_add(g, kiln_sub(g, x, kiln_mean(g, x, 1, &last, true)),
                        kiln_reduce_sum(g, y, 1, &mid, false));
        return 1;
    }
    if (!strcmp(m, "column_sum_of_softmax")) {
        o[0] = kiln_reduce_sum(g, kiln_softmax(g, x, -1), 1, &ax0, false);
        return 1;
    }
    o[0] = kiln_softmax(g, x, -1);
    return 1;
}

/* Row values (fusion.h): a softmax's max and sum, a norm's mean and variance, computed once
 * per row in the consumer's kernel before the row's elements. Each program is checked
 * against the reference interpreter and counted: one kernel where the rows allow it
 * (rank 3, rows longer than a chunk, f64, integers, a softmax next to its max, an input
 * row with NaN and -inf), the old kernels where they do not (too few rows, a transposed
 * result, a column sum of the softmax). */
static void test_row_values(void) {
    static const row_case cases[] = {
        {"softmax", 2, {17, 3001}, KILN_DTYPE_F32, 1},
        {"softmax", 2, {16, 1}, KILN_DTYPE_F32, 1},
        {"softmax", 3, {4, 5, 33}, KILN_DTYPE_F64, 1},
        {"layer_norm", 3, {4, 5, 33}, KILN_DTYPE_F32, 1},
        {"rms_norm", 2, {20, 64}, KILN_DTYPE_F32, 1},
        {"max_and_softmax", 2, {32, 50}, KILN_DTYPE_F32, 2},
        {"logsumexp_and_softmax", 2, {40, 7}, KILN_DTYPE_F32, 2},
        {"centred_ints", 2, {20, 9}, KILN_DTYPE_I32, 1},
        {"column_form", 2, {20, 40}, KILN_DTYPE_F32, 1},
        {"softmax", 2, {15, 100}, KILN_DTYPE_F32, 3},
        {"transposed_softmax", 2, {32, 24}, KILN_DTYPE_F32, 3},
        {"column_sum_of_softmax", 2, {32, 24}, KILN_DTYPE_F32, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const row_case *c = &cases[i];
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, c->name, &g));
        kiln_value x = kiln_parameter(g, "x", c->t, c->rank, c->d), o[2];
        int n_out = row_outputs(g, c, x, o);
        CHECK_OK(ctx, kiln_graph_finish(g, n_out, o));
        int k = loop_kernels(g);
        CHECK_MSG(k == c->kernels, "%s [%lld, ..., %lld]: %d loop kernels, not %d", c->name,
                  (long long)c->d[0], (long long)c->d[c->rank - 1], k, c->kernels);
        int n_par = kiln_graph_num_parameters(g);
        kiln_array *args[3] = {NULL, NULL, NULL};
        uint64_t seed = 21 + i;
        for (int a = 0; a < n_par; a++) {
            kiln_dtype t;
            int rank;
            int64_t d[KILN_MAX_RANK];
            CHECK(kiln_value_type(g, kiln_graph_parameter(g, a), &t, &rank, d));
            args[a] = cmp_random_array(ctx, t, rank, d, &seed);
        }
        if (!strcmp(c->name, "softmax") && c->d[1] == 3001) { /* NaN and -inf rows */
            float *h = malloc((size_t)(17 * 3001) * sizeof *h);
            CHECK_OK(ctx, kiln_array_copy_to_host(args[0], h, (size_t)(17 * 3001) * sizeof *h));
            h[3 * 3001 + 17] = NAN;
            h[5 * 3001 + 2999] = -INFINITY;
            for (int j = 0; j < 3001; j++) h[7 * 3001 + j] = -INFINITY;
            kiln_array_destroy(args[0]);
            CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, c->d, h, &args[0]));
            free(h);
            char *src = source_of(g);
            CHECK_MSG(strstr(src, "jb = 0, je = 3001;"), "an item is not a whole row:\n%s", src);
            free(src);
        }
        CHECK_MSG(cmp_graph(ctx, g, n_par, args, NULL, 1e-5, NULL), "%s differs", c->name);
        for (int a = 0; a < n_par; a++) kiln_array_destroy(args[a]);
        kiln_graph_destroy(g);
    }
}

/* A row value in a kernel whose index space is its own shape (logsumexp without keepdims:
 * the max, in the kernel of [R] results) is computed once per element: no reduce loop
 * holds more than a row's work (it was the row's max again for every value summed, R N^2:
 * 8 s at 64 x 50000). Also a variance written out, mean((x - mean(x))^2), and a logsumexp
 * by hand. */
static void test_row_values_per_element(void) {
    const int64_t R = 40, N = 3000;
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "per_element", &g));
    int64_t d[2] = {R, N}, dk[2] = {R, 1};
    int ax = 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value m = kiln_reduce_max(g, x, 1, &ax, false);
    kiln_value c = kiln_sub(g, x, kiln_mean(g, x, 1, &ax, true));
    kiln_value outs[3] = {
        kiln_logsumexp(g, x, 1, &ax, false), kiln_mean(g, kiln_mul(g, c, c), 1, &ax, false),
        kiln_add(
            g, m,
            kiln_log(g, kiln_reduce_sum(g, kiln_exp(g, kiln_sub(g, x, kiln_reshape(g, m, 2, dk))),
                                        1, &ax, false)))};
    CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
    fusion_plan p;
    CHECK_OK(ctx, fusion_plan_build(g, &(fusion_options){0}, &p));
    for (uint32_t k = 0; k < p.n_kernels; k++) {
        if (p.kernels[k].kind != FK_LOOP) continue;
        kd_kernel kd;
        CHECK_OK(ctx, kd_lower(g, &p, k, &kd));
        for (uint32_t s = 1; s < kd.n_stmts; s++)
            if (kd.stmts[s].kind == KS_LOOP && kd.stmts[s].n > 0)
                CHECK_MSG(kd_loop_work(&kd, s) <= N, "kernel %u: a loop of %lld iterations", k,
                          (long long)kd_loop_work(&kd, s));
        kd_free(&kd);
    }
    fusion_plan_free(&p);
    uint64_t seed = 71;
    kiln_array *arg = cmp_random_array(ctx, KILN_DTYPE_F32, 2, d, &seed);
    CHECK(cmp_graph(ctx, g, 1, &arg, NULL, 1e-5, NULL));
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
}

/* A softmax, a row sum and a row max over rows of n: up to KD_SHORT_REDUCE values, none
 * gets a reduction pragma (gcc unrolls them and vectorises across the elements; the
 * softmax's item is KD_PROLOGUE_ROWS rows, the last one partial), 17 do, and up to
 * KD_TINY_REDUCE no loop has a pragma at all; every form agrees with the reference. */
static void test_tiny_reductions(void) {
    static const int64_t widths[5] = {3, 4, 5, 16, 17};
    for (int w = 0; w < 5; w++) {
        int64_t n = widths[w];
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "tiny", &g));
        int64_t d[2] = {1000, n};
        int last = 1;
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
        kiln_value outs[3] = {kiln_softmax(g, x, -1), kiln_reduce_sum(g, x, 1, &last, false),
                              kiln_reduce_max(g, x, 1, &last, false)};
        CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
        char *src = source_of(g);
        const char *body = strstr(src, "KILN_EXPORT");
        int guarded = 0;
        CHECK_MSG(body &&
                      test_has_unguarded(body, "#pragma omp simd reduction", &guarded) == (n > 16),
                  "rows of %lld:\n%s", (long long)n, src);
        CHECK_MSG((guarded > 0) == (n > 4 && n <= 16), "rows of %lld:\n%s", (long long)n, src);
        /* up to KD_TINY_REDUCE, the softmax's loops along its rows have none either */
        CHECK_MSG(body && (strstr(body, "#pragma omp simd") != NULL) == (n > 4),
                  "rows of %lld:\n%s", (long long)n, src);
        free(src);
        uint64_t seed = 60 + (uint64_t)n;
        kiln_array *arg = cmp_random_array(ctx, KILN_DTYPE_F32, 2, d, &seed);
        CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-6, NULL), "rows of %lld", (long long)n);
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }
}

/* ------------------------------------------------------- interleave ---- */

/* RoPE's interleave: pairs (2i, 2i+1) of the last axis rotated, through a reshape to
 * [..., P, 2], slices, and a concatenation on a new last axis reshaped back. One kernel,
 * looped over the pair, the body printed once for each member (the member a constant, so
 * the concatenation's branch folds and the kernel needs no if-conversion guard): no
 * division or remainder per element. */
/* Row reductions of at most KD_SHORT_REDUCE values of a cheap operand, computed in the
 * element loop, get no vectorising pragma either (nor does the element loop) (gcc unrolls them and
 * vectorises across rows); a costly operand (an exp) or a longer row keeps it. Checked on the text
 * and, with a NaN in some rows, against the reference, f32 and f64. */
static void test_short_reductions(void) {
    static const int64_t widths[4] = {6, 16, 17, 32};
    for (int t = 0; t < 2; t++)
        for (int w = 0; w < 4; w++) {
            kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
            int64_t n = widths[w], d[2] = {1001, n};
            int last = 1;
            for (int costly = 0; costly < 2; costly++) {
                kiln_graph *g = NULL;
                CHECK_OK(ctx, kiln_graph_create(ctx, "short", &g));
                kiln_value x = kiln_parameter(g, "x", dt, 2, d);
                kiln_value c = kiln_sub(g, x, kiln_scalar(g, dt, 0.5));
                kiln_value outs[3] = {
                    kiln_reduce_sum(g, costly ? kiln_exp(g, x) : x, 1, &last, false),
                    kiln_reduce_max(g, x, 1, &last, false),
                    kiln_reduce_sum(g, kiln_mul(g, c, c), 1, &last, false)};
                CHECK_OK(ctx, kiln_graph_finish(g, costly ? 1 : 3, outs));
                char *src = source_of(g);
                const char *body = strstr(src, "KILN_EXPORT");
                int guarded = 0;
                bool pragma = body && test_has_unguarded(body, "#pragma omp simd", &guarded);
                CHECK_MSG(pragma == (costly || n > 16), "rows of %lld%s:\n%s", (long long)n,
                          costly ? ", exp" : "", src);
                CHECK_MSG((guarded > 0) == !pragma, "rows of %lld%s:\n%s", (long long)n,
                          costly ? ", exp" : "", src);
                free(src);
                uint64_t seed = 80 + (uint64_t)n;
                double *v = malloc((size_t)(1001 * n) * sizeof *v);
                float *f = malloc((size_t)(1001 * n) * sizeof *f);
                for (int64_t i = 0; i < 1001 * n; i++) v[i] = 4 * test_rng_unit(&seed) - 2;
                v[3 * n + 1] = v[1000 * n + n - 1] = NAN; /* a NaN in two rows' lanes */
                for (int64_t i = 0; i < 1001 * n; i++) f[i] = (float)v[i];
                kiln_array *arg = NULL;
                CHECK_OK(ctx, kiln_array_create(ctx, dt, 2, d, t ? (void *)v : (void *)f, &arg));
                free(v);
                free(f);
                CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-6, NULL), "rows of %lld",
                          (long long)n);
                kiln_array_destroy(arg);
                kiln_graph_destroy(g);
            }
        }
}

/* Reductions over a run of trailing axes whose last is short are one loop over the run
 * (KD_MERGE_REDUCE): over all of [6, 10, 7, 7] and over its last two, sums (blocked f32),
 * maxes and a sum of squares, the operand read in order and through a broadcast along a
 * merged axis (whose index keeps its division), f32 and f64, a NaN in one row; the source
 * reads the operand at the loop's own variable, and every value is the reference's.
 * (A loop per axis ran a kiln_sum_f32 call per 7 values: an outside check had a full sum
 * over [16, 64, 56, 56] at several times XLA's time.) */
static void test_trailing_reductions(void) {
    int64_t d[4] = {6, 10, 7, 7}, dy[1] = {7};
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
        for (int all = 0; all < 2; all++) {
            kiln_graph *g = NULL;
            CHECK_OK(ctx, kiln_graph_create(ctx, "trailing", &g));
            kiln_value x = kiln_parameter(g, "x", dt, 4, d);
            kiln_value y = kiln_parameter(g, "y", dt, 1, dy);
            int axes[4] = {0, 1, 2, 3}, *ax = all ? axes : axes + 2, n = all ? 4 : 2;
            kiln_value yb = kiln_broadcast_in_dim(g, y, 4, d, (const int[]){2});
            kiln_value outs[4] = {kiln_reduce_sum(g, x, n, ax, false),
                                  kiln_reduce_max(g, x, n, ax, true),
                                  kiln_reduce_sum(g, kiln_mul(g, x, x), n, ax, false),
                                  kiln_reduce_sum(g, kiln_mul(g, x, yb), n, ax, false)};
            CHECK_OK(ctx, kiln_graph_finish(g, 4, outs));
            char *src = source_of(g);
            /* the run's one loop reads x at its variable: no 7-long inner loop over x */
            CHECK_MSG(src && !strstr(src, "< 7; r"), "%s over %s:\n%s", kiln_dtype_name(dt),
                      all ? "all axes" : "the last two", src ? src : "");
            free(src);
            uint64_t seed = 91 + (uint64_t)(2 * t + all);
            kiln_array *args[2] = {cmp_random_array(ctx, dt, 4, d, &seed),
                                   cmp_random_array(ctx, dt, 1, dy, &seed)};
            CHECK_MSG(cmp_graph(ctx, g, 2, args, NULL, 1e-6, NULL), "%s over %s",
                      kiln_dtype_name(dt), all ? "all axes" : "the last two");
            kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
            kiln_graph_destroy(g);
        }
    }
}

/* Row values over short rows, KD_PROLOGUE_ROWS rows an item (kd_kernel.prologue_rows):
 * softmax, log_softmax, layer and RMS norms and logsumexp over rows of 2, 7 and 16, each in
 * its own graph so that each is one kernel of that form, f32 and f64, 1001 rows (the last
 * item partial) with a NaN row and a row of -inf; against the reference. */
static void test_prologue_rows(void) {
    static const int64_t widths[3] = {2, 7, 16};
    for (int t = 0; t < 2; t++)
        for (int w = 0; w < 3; w++)
            for (int op = 0; op < 5; op++) {
                kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
                int64_t n = widths[w], d[2] = {1001, n};
                int last = 1;
                kiln_graph *g = NULL;
                CHECK_OK(ctx, kiln_graph_create(ctx, "prologue rows", &g));
                kiln_value x = kiln_parameter(g, "x", dt, 2, d), none = {0, 0};
                kiln_value y = op == 0   ? kiln_softmax(g, x, -1)
                               : op == 1 ? kiln_log_softmax(g, x, -1)
                               : op == 2 ? kiln_layer_norm(g, x, none, none, 1e-5)
                               : op == 3 ? kiln_rms_norm(g, x, none, -1, 1e-6)
                                         : kiln_logsumexp(g, x, 1, &last, true);
                CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
                char *src = source_of(g), *k0 = kernel_text(src, 0);
                CHECK_MSG(strstr(k0, "kiln_r < rn"), "op %d, rows of %lld:\n%s", op, (long long)n,
                          k0);
                free(k0);
                free(src);
                uint64_t seed = 100 + (uint64_t)(op * 10 + w);
                double *v = malloc((size_t)(1001 * n) * sizeof *v);
                float *f = malloc((size_t)(1001 * n) * sizeof *f);
                for (int64_t i = 0; i < 1001 * n; i++) v[i] = 8 * test_rng_unit(&seed) - 4;
                v[5 * n + n / 2] = NAN;
                for (int64_t i = 0; i < n; i++) v[17 * n + i] = -INFINITY;
                for (int64_t i = 0; i < 1001 * n; i++) f[i] = (float)v[i];
                kiln_array *arg = NULL;
                CHECK_OK(ctx, kiln_array_create(ctx, dt, 2, d, t ? (void *)v : (void *)f, &arg));
                free(v);
                free(f);
                CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-5, NULL), "op %d, rows of %lld, %s",
                          op, (long long)n, kiln_dtype_name(dt));
                kiln_array_destroy(arg);
                kiln_graph_destroy(g);
            }

    /* beside a softmax over rows of 5, x - max and x / sum(x^2) of the same rows as
     * outputs of their own (their reductions shared with it or not, as fusion decides):
     * the softmax's kernel takes the form, and all agree with the reference */
    for (int t = 0; t < 2; t++) {
        kiln_dtype dt = t ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "prologue rows", &g));
        int64_t d[2] = {333, 5};
        int last = 1;
        kiln_value x = kiln_parameter(g, "x", dt, 2, d);
        kiln_value m =
            kiln_broadcast_in_dim(g, kiln_reduce_max(g, x, 1, &last, true), 2, d, (int[]){0, 1});
        kiln_value q = kiln_broadcast_in_dim(
            g, kiln_reduce_sum(g, kiln_mul(g, x, x), 1, &last, true), 2, d, (int[]){0, 1});
        kiln_value outs[3] = {kiln_softmax(g, x, -1), kiln_sub(g, x, m), kiln_div(g, x, q)};
        CHECK_OK(ctx, kiln_graph_finish(g, 3, outs));
        char *src = source_of(g);
        CHECK_MSG(strstr(src, "kiln_r < rn"), "%s", src);
        free(src);
        uint64_t seed = 140 + (uint64_t)t;
        kiln_array *arg = cmp_random_array(ctx, dt, 2, d, &seed);
        CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-6, NULL), "%s", kiln_dtype_name(dt));
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }

    /* a row value reduced from a wider operand ([40, 300] summed onto rows of 4): its loop
     * is too long for the form, which the kernel does not take */
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "prologue rows", &g));
    int64_t dw[2] = {40, 300}, dz[2] = {40, 4};
    int last = 1;
    kiln_value wide = kiln_parameter(g, "wide", KILN_DTYPE_F32, 2, dw);
    kiln_value z = kiln_parameter(g, "z", KILN_DTYPE_F32, 2, dz);
    kiln_value y = kiln_mul(g, kiln_softmax(g, z, -1), kiln_reduce_sum(g, wide, 1, &last, true));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    char *src = source_of(g);
    CHECK_LACKS(src, "kiln_r < rn");
    free(src);
    uint64_t seed = 150;
    kiln_array *args[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 2, dw, &seed),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 2, dz, &seed)};
    CHECK(cmp_graph(ctx, g, 2, args, NULL, 1e-5, NULL));
    for (int i = 0; i < 2; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

static void interleave(int64_t B, int64_t T, int64_t P) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "interleave", &g));
    int64_t xd[3] = {B, T, 2 * P}, cd[2] = {T, P}, d4[4] = {B, T, P, 2}, d3[3] = {B, T, P},
            d4one[4] = {B, T, P, 1};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, xd);
    kiln_value cs = kiln_parameter(g, "cos", KILN_DTYPE_F32, 2, cd);
    kiln_value sn = kiln_parameter(g, "sin", KILN_DTYPE_F32, 2, cd);
    kiln_value x4 = kiln_reshape(g, x, 4, d4);
    int64_t lo0[4] = {0, 0, 0, 0}, lo1[4] = {0, 0, 0, 1}, hi0[4] = {B, T, P, 1},
            hi1[4] = {B, T, P, 2};
    kiln_value x0 = kiln_reshape(g, kiln_slice(g, x4, lo0, hi0, NULL), 3, d3);
    kiln_value x1 = kiln_reshape(g, kiln_slice(g, x4, lo1, hi1, NULL), 3, d3);
    int bd[2] = {1, 2};
    kiln_value c = kiln_broadcast_in_dim(g, cs, 3, d3, bd);
    kiln_value s = kiln_broadcast_in_dim(g, sn, 3, d3, bd);
    kiln_value parts[2] = {
        kiln_reshape(g, kiln_sub(g, kiln_mul(g, x0, c), kiln_mul(g, x1, s)), 4, d4one),
        kiln_reshape(g, kiln_add(g, kiln_mul(g, x0, s), kiln_mul(g, x1, c)), 4, d4one)};
    kiln_value y = kiln_reshape(g, kiln_concatenate(g, 2, parts, 3), 3, xd);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    char *src = source_of(g), *k0 = kernel_text(src, 0);
    if (P > 1) { /* else the last axis is the pair's two members and nothing divides */
        CHECK_CONTAINS(k0, "for (int64_t i2q = jb / 2; i2q < je / 2; i2q++)");
        CHECK_CONTAINS(k0, "const int64_t i2r = 0, i2 = i2q * 2 + 0;");
        CHECK_CONTAINS(k0, "const int64_t i2r = 1, i2 = i2q * 2 + 1;");
        CHECK_CONTAINS(k0, "if (i2r < 1)");
        CHECK_LACKS(src, "KILN_BRANCH_GUARD void kiln_k0(");
    }
    /* the element's indices use the pair and the member, never i2 / 2 or i2 % 2 */
    CHECK_LACKS(k0, "i2 /");
    CHECK_LACKS(k0, "i2 %");
    free(k0);
    free(src);
    uint64_t seed = 3;
    kiln_array *args[3] = {cmp_random_array(ctx, KILN_DTYPE_F32, 3, xd, &seed),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 2, cd, &seed),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 2, cd, &seed)};
    int n_kernels = 0;
    CHECK(cmp_graph(ctx, g, 3, args, NULL, 1e-6, &n_kernels));
    CHECK_MSG(n_kernels == 1, "%d kernels", n_kernels);
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);
}

/* Sinusoidal positional encodings computed in the program: sin and cos of t / 10000^(2i/D)
 * stacked on a new last axis, reshaped to [T, D] and added to x [T, D]. The stack is a
 * concatenation on the split-off axis, so the kernel is the interleave's form: unrolled
 * over the member, no guard, sin in one copy and cos in the other (and vectorised, which
 * the text cannot show: bench/programs, posenc). `exact`: the angles t 2^20 (i + 1)
 * instead, exact in f32 on both sides (the exp of the frequencies rounds differently
 * compiled, and a float's difference in an angle of 1e5 is 0.01 in its sin), up to 1.3e8:
 * both of sin's reductions. */
static void positional_encodings(int64_t T, int64_t D, bool exact) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "posenc", &g));
    int64_t xd[2] = {T, D}, hd[2] = {T, D / 2};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, xd);
    kiln_value pos = kiln_iota(g, KILN_DTYPE_F32, 2, hd, 0);
    kiln_value i = kiln_iota(g, KILN_DTYPE_F32, 2, hd, 1), ang;
    if (exact)
        ang = kiln_mul(g, kiln_mul(g, pos, kiln_scalar(g, KILN_DTYPE_F32, 0x1p20)),
                       kiln_add(g, i, kiln_scalar(g, KILN_DTYPE_F32, 1)));
    else
        ang = kiln_mul(
            g, pos,
            kiln_exp(g, kiln_mul(g, i,
                                 kiln_scalar(g, KILN_DTYPE_F32, -2.0 * log(10000.0) / (double)D))));
    kiln_value pair[2] = {kiln_sin(g, ang), kiln_cos(g, ang)};
    kiln_value y = kiln_add(g, x, kiln_reshape(g, kiln_stack(g, 2, pair, 2), 2, xd));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    char *src = source_of(g), *k0 = kernel_text(src, 0);
    CHECK_CONTAINS(k0, "kiln_sin_fast_f32(");
    CHECK_CONTAINS(k0, "kiln_cos_fast_f32(");
    CHECK_CONTAINS(k0, "kiln_sin_rerun_f32("); /* the exact rerun (fast_trig_loop) */
    CHECK_CONTAINS(k0, "kiln_cos_rerun_f32(");
    CHECK_CONTAINS(k0, "const int64_t i1r = 1, i1 = i1q * 2 + 1;");
    CHECK_LACKS(src, "KILN_BRANCH_GUARD void kiln_k0(");
    free(k0);
    free(src);
    uint64_t seed = 17;
    kiln_array *arg = cmp_random_array(ctx, KILN_DTYPE_F32, 2, xd, &seed);
    int n_kernels = 0;
    CHECK(cmp_graph(ctx, g, 1, &arg, NULL, 1e-5, &n_kernels));
    CHECK_MSG(n_kernels == 1, "%d kernels", n_kernels);
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
}

/* A transpose (a read across the last axis with a long stride) takes few columns per item
 * and goes down the rows first (kd_kernel.tiled) when a row is several items or the
 * stride is a multiple of 1 KiB, and keeps whole rows otherwise; with rows in eights the
 * C dialect takes 8 per item, inside the columns (kd_kernel.row_block), and a plain
 * transpose of the two minor axes (2-D, batched, NCHW to NHWC) of 4- or 8-byte elements
 * moves 8 x 8 blocks through registers (kiln_transpose8x8_4 and _8).
 * The source says which form each case takes, and the numbers are the reference's at odd
 * sizes, rank 3, f64 and i32, with one root or a second one. */
static void test_tiled_transposes(void) {
    static const struct {
        int rank;
        int64_t d[4];
        int perm[4];
        kiln_dtype t;
        int roots;
        const char *item; /* how the item's row and columns are printed */
        const char *body; /* and its element loop (NULL: one row per item) */
    } cases[] = {
        {2, {4097, 333}, {1, 0}, KILN_DTYPE_F32, 2, "row = it % 333, jb = (it / 333) * 64;", NULL},
        {2,
         {256, 512},
         {1, 0},
         KILN_DTYPE_F32,
         2,
         "row0 = (it % 64) * 8, jb = (it / 64) * 32;",
         "kiln_r < 8; kiln_r++"},
        {2,
         {256, 512},
         {1, 0},
         KILN_DTYPE_F32,
         1,
         "row0 = (it % 64) * 8, jb = (it / 64) * 32;",
         "kiln_transpose8x8_4(in0 + (i0 + i1 * 512), 512, out0 + (row * 256 + i1), 256);"},
        {2,
         {1000, 4096},
         {1, 0},
         KILN_DTYPE_I32,
         1,
         "row0 = (it % 512) * 8, jb = (it / 512) * 32;",
         "kiln_transpose8x8_4(in0 + (i0 + i1 * 4096), 4096, out0 + (row * 1000 + i1), 1000);"},
        {2, {1004, 4096}, {1, 0}, KILN_DTYPE_F32, 1, "row0 = (it % 512) * 8", "kiln_r < 8"},
        {2,
         {1024, 256},
         {1, 0},
         KILN_DTYPE_F64,
         1,
         "row0 = (it % 32) * 8",
         "kiln_transpose8x8_8(in0 + (i0 + i1 * 256), 256, out0 + (row * 1024 + i1), 1024);"},
        {2, {1024, 256}, {1, 0}, KILN_DTYPE_F64, 2, "row0 = (it % 32) * 8", "kiln_r < 8"},
        {3,
         {2, 3000, 70},
         {0, 2, 1},
         KILN_DTYPE_F64,
         2,
         "row = it % 140, jb = (it / 140) * 64;",
         NULL},
        {3,
         {2, 4096, 64},
         {0, 2, 1},
         KILN_DTYPE_F32,
         1,
         "row0 = (it % 16) * 8",
         "kiln_transpose8x8_4(in0 + (i0 * 262144 + i1 + i2 * 64), 64"},
        {3, {2, 4096, 60}, {0, 2, 1}, KILN_DTYPE_I64, 1, "row0 = (it % 15) * 8", "kiln_r < 8"},
        {4,
         {2, 128, 16, 16},
         {0, 2, 3, 1},
         KILN_DTYPE_F32,
         1,
         "row0 = (it % 64) * 8", /* NHWC */
         "kiln_transpose8x8_4(in0 + (i0 * 32768 + i1 * 16 + i2 + i3 * 256), 256"},
        /* a row is one item (not tiled): rows go in blocks of 8 where the stride is a
         * multiple of 1 KiB (lower.c, row_block), and stay one per item otherwise */
        {4,
         {2, 32, 16, 64},
         {0, 2, 3, 1},
         KILN_DTYPE_F32,
         1,
         "row0 = (it % 256) * 8",
         "kiln_transpose8x8_4(in0 + (i0 * 32768 + i1 * 64 + i2 + i3 * 1024), 1024"},
        {4, {2, 24, 16, 40}, {0, 2, 3, 1}, KILN_DTYPE_F32, 1, "row = it, jb = 0, je = 24;", NULL},
        {3, {3, 70, 90}, {0, 2, 1}, KILN_DTYPE_F64, 2, "row = it, jb = 0, je = 70;", NULL},
        {2, {100, 300}, {1, 0}, KILN_DTYPE_I32, 2, "row = it, jb = 0, je = 100;", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "tiled", &g));
        kiln_value x = kiln_parameter(g, "x", cases[i].t, cases[i].rank, cases[i].d);
        kiln_value y = kiln_transpose(g, x, cases[i].perm);
        kiln_value outs[2] = {y, kiln_add(g, y, y)};
        CHECK_OK(ctx, kiln_graph_finish(g, cases[i].roots, outs));
        char *src = source_of(g), *k0 = kernel_text(src, 0);
        CHECK_MSG(strstr(k0, cases[i].item), "case %zu:\n%s", i, k0);
        if (cases[i].body) CHECK_MSG(strstr(k0, cases[i].body), "case %zu:\n%s", i, k0);
        if (!cases[i].body) CHECK_LACKS(k0, "kiln_r");
        free(k0);
        free(src);
        uint64_t seed = 40 + i;
        kiln_array *arg = cmp_random_array(ctx, cases[i].t, cases[i].rank, cases[i].d, &seed);
        CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-6, NULL), "case %zu", i);
        kiln_array_destroy(arg);
        kiln_graph_destroy(g);
    }
}

/* --------------------------------------------------- short last axes ---- */

/* Elementwise kernels whose roots end in a short axis (kdesc.h, KD_SHORT_ROW) that a load
 * reads across their leading axes (NCHW -> NHWC): the index space merges the short axis
 * into the one before, so an item is a run of whole rows, looped as (pair, member) with no
 * division per row; and where merging does not pay, the rows stay as they were. Each case
 * is checked on its text and against the reference, one output or two (the second root
 * reads the first's values again), at sizes whose merged axis splits into chunks. */
static void test_short_rows(void) {
    static const struct {
        int rank;
        int64_t d[4];
        int perm[4];
        kiln_dtype t;
        const char *item; /* how the item's row and columns are printed */
        const char *loop; /* the element loop (NULL: the rows are not merged) */
    } cases[] = {
        {4,
         {2, 3, 20, 22},
         {0, 2, 3, 1},
         KILN_DTYPE_F32,
         "row = it, jb = 0, je = 66;",
         "for (int64_t i2q = jb / 3; i2q < je / 3; i2q++)"},
        {4,
         {3, 2, 7, 9},
         {0, 2, 3, 1},
         KILN_DTYPE_F64,
         "row = it, jb = 0, je = 18;",
         "for (int64_t i2r = 0; i2r < 2; i2r++)"},
        {4,
         {2, 15, 5, 6},
         {0, 2, 3, 1},
         KILN_DTYPE_I32,
         "row = it, jb = 0, je = 90;",
         "for (int64_t i2r = 0; i2r < 15; i2r++)"},
        /* 3 x 1000: the merged axis is two chunks of whole rows (2046 = 682 x 3) */
        {3,
         {2, 3, 1000},
         {0, 2, 1},
         KILN_DTYPE_F32,
         "jb = (it % 2) * 2046;",
         "for (int64_t i1q = jb / 3; i1q < je / 3; i1q++)"},
        {3,
         {4, 5, 6},
         {2, 0, 1},
         KILN_DTYPE_I64,
         "row = it, jb = 0, je = 20;",
         "for (int64_t i1r = 0; i1r < 5; i1r++)"},
        /* 2-D: a row's index is the row itself, no division to save: rows stay */
        {2, {5, 300}, {1, 0}, KILN_DTYPE_F32, "row = it, jb = 0, je = 5;", NULL},
        /* a last axis of KD_SHORT_ROW is not short */
        {4, {2, 16, 4, 4}, {0, 2, 3, 1}, KILN_DTYPE_F32, "je = 16;", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int roots = 1; roots <= 2; roots++) {
            kiln_graph *g = NULL;
            CHECK_OK(ctx, kiln_graph_create(ctx, "short", &g));
            kiln_value x = kiln_parameter(g, "x", cases[i].t, cases[i].rank, cases[i].d);
            kiln_value y = kiln_transpose(g, x, cases[i].perm);
            kiln_value outs[2] = {y, kiln_add(g, kiln_mul(g, y, y), y)};
            CHECK_OK(ctx, kiln_graph_finish(g, roots, outs));
            char *src = source_of(g), *k0 = kernel_text(src, 0);
            CHECK_MSG(strstr(k0, cases[i].item), "case %zu:\n%s", i, k0);
            if (cases[i].loop)
                CHECK_MSG(strstr(k0, cases[i].loop), "case %zu:\n%s", i, k0);
            else
                CHECK_LACKS(k0, "q = jb /");
            free(k0);
            free(src);
            uint64_t seed = 70 + i;
            kiln_array *arg = cmp_random_array(ctx, cases[i].t, cases[i].rank, cases[i].d, &seed);
            CHECK_MSG(cmp_graph(ctx, g, 1, &arg, NULL, 1e-6, NULL), "case %zu", i);
            kiln_array_destroy(arg);
            kiln_graph_destroy(g);
        }
    }

    /* normalising NHWC images per channel after the transpose: the channel's mean and
     * scale are read at the member, the pixel at the pair */
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "short", &g));
    int64_t d[4] = {2, 3, 9, 11}, c[1] = {3};
    int perm[4] = {0, 2, 3, 1}, last[1] = {3};
    kiln_value x = kiln_transpose(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 4, d), perm);
    kiln_value m = kiln_parameter(g, "mean", KILN_DTYPE_F32, 1, c);
    kiln_value sd = kiln_parameter(g, "scale", KILN_DTYPE_F32, 1, c);
    const int64_t *nhwc = (const int64_t[]){2, 9, 11, 3};
    kiln_value y = kiln_mul(g, kiln_sub(g, x, kiln_broadcast_in_dim(g, m, 4, nhwc, last)),
                            kiln_broadcast_in_dim(g, sd, 4, nhwc, last));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    char *src = source_of(g), *k0 = kernel_text(src, 0);
    CHECK_CONTAINS(k0, "for (int64_t i2r = 0; i2r < 3; i2r++)");
    CHECK_CONTAINS(k0, "[i2r]");
    free(k0);
    free(src);
    uint64_t seed = 90;
    kiln_array *args[3] = {cmp_random_array(ctx, KILN_DTYPE_F32, 4, d, &seed),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 1, c, &seed),
                           cmp_random_array(ctx, KILN_DTYPE_F32, 1, c, &seed)};
    CHECK(cmp_graph(ctx, g, 3, args, NULL, 1e-6, NULL));
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_graph_destroy(g);

    /* concatenated along the short axis after the transpose: the element loop branches on
     * the member, so the rows stay rows (their segmented loop) */
    CHECK_OK(ctx, kiln_graph_create(ctx, "short", &g));
    int64_t e[4] = {2, 2, 9, 11};
    kiln_value a = kiln_transpose(g, kiln_parameter(g, "a", KILN_DTYPE_F32, 4, d), perm);
    kiln_value b = kiln_transpose(g, kiln_parameter(g, "b", KILN_DTYPE_F32, 4, e), perm);
    y = kiln_exp(g, kiln_concatenate(g, 2, (kiln_value[]){a, b}, 3));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    src = source_of(g);
    k0 = kernel_text(src, 0);
    CHECK_CONTAINS(k0, "row = it, jb = 0, je = 5;");
    CHECK_LACKS(k0, "q = jb /");
    free(k0);
    free(src);
    kiln_array *ab[2] = {cmp_random_array(ctx, KILN_DTYPE_F32, 4, d, &seed),
                         cmp_random_array(ctx, KILN_DTYPE_F32, 4, e, &seed)};
    CHECK(cmp_graph(ctx, g, 2, ab, NULL, 1e-6, NULL));
    for (int i = 0; i < 2; i++) kiln_array_destroy(ab[i]);
    kiln_graph_destroy(g);
}

static void test_interleave(void) {
    interleave(2, 3, 5);
    interleave(1, 7, 1);
    interleave(3, 2, 1100); /* 2200 > KD_CHUNK: the split loop within chunks */
    positional_encodings(300, 64, false);
    positional_encodings(2, 128, true);
}

/* ------------------------------------------- non-last-axis normalisations ---- */

/* Softmax, logsumexp (keepdims and not), an RMS norm and a mean over axis `ax` of x [dims]
 * (not the last axis): their reductions keep the last axis, and reach the kernels' roots
 * through keepdims reshapes, which add unit axes; each reduction kernel takes the column
 * form (rows of accumulators, the operand read row by row) rather than a per-element
 * walk a row apart (lower.c, column_reductions). Sizes leave partial chunks and blocks. */
static void axis_norms(int rank, const int64_t *dims, int ax) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "axis_norms", &g));
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, rank, dims);
    kiln_value o[5] = {kiln_softmax(g, x, ax), kiln_logsumexp(g, x, 1, &ax, false),
                       kiln_logsumexp(g, kiln_neg(g, x), 1, &ax, true),
                       kiln_rms_norm(g, x, (kiln_value){0, 0}, ax, 1e-6),
                       kiln_mean(g, kiln_abs(g, x), 1, &ax, true)};
    CHECK_OK(ctx, kiln_graph_finish(g, 5, o));
    char *src = source_of(g);
    int reductions = 0;
    for (int k = 0; k < 64; k++) {
        char *t = kernel_text(src, k);
        if (strstr(t, "for (int64_t r")) { /* a reduce loop: into a row of accumulators */
            reductions++;
            CHECK_MSG(strstr(t, " - jb] ") || dims[rank - 1] == 1,
                      "kernel %d reduces per element:\n%s", k, t);
        }
        bool empty = !*t;
        free(t);
        if (empty) break;
    }
    CHECK_MSG(reductions >= 3, "%d reduction kernels in\n%s", reductions, src);
    free(src);
    uint64_t seed = 3;
    kiln_array *a = cmp_random_array(ctx, KILN_DTYPE_F32, rank, dims, &seed);
    CHECK_MSG(cmp_graph(ctx, g, 1, &a, NULL, 1e-5, NULL), "rank %d, axis %d", rank, ax);
    kiln_array_destroy(a);
    kiln_graph_destroy(g);
}

static void test_axis_norms(void) {
    axis_norms(2, (int64_t[]){300, 45}, 0);
    axis_norms(3, (int64_t[]){2, 130, 2500}, 1);
    axis_norms(3, (int64_t[]){3, 7, 1}, 1);
    axis_norms(4, (int64_t[]){2, 5, 3, 17}, 1);
    axis_norms(3, (int64_t[]){2, 5, 33}, 0);
}

/* CUDA: softmax, log_softmax, layer norm and RMS norm are one kernel each, a block per row
 * (KD_CUDA_ROW), whose row is held on chip (a row cache, schedule.c) when it fits
 * KD_ROW_CACHE_BYTES: its elements are read from device memory once and written once (a
 * norm's scale and bias, one read each, are shared by every row), where the passes read
 * the row 3 times and a kept value went to the output and back. A row too long for the
 * caches keeps the passes' reads. Counted on the scheduled description (kd_cuda_row_traffic);
 * the printed code is checked against the reference by test_cuda_emulate. The passes take
 * want_vec elements a lane a trip (schedule.c, row_vec_plan: 16 bytes; 0, one at a time). */
static void row_kernel(int op, kiln_dtype t, int64_t n, int want_reads, int want_writes,
                       int want_vec) {
    static const char *const names[4] = {"softmax", "log_softmax", "layer_norm", "rms_norm"};
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, names[op], &g));
    int64_t d[2] = {64, n};
    kiln_value x = kiln_parameter(g, "x", t, 2, d), sc = kiln_parameter(g, "s", t, 1, &n);
    kiln_value b = op == 2 ? kiln_parameter(g, "b", t, 1, &n) : sc;
    kiln_value y = op == 0   ? kiln_softmax(g, x, -1)
                   : op == 1 ? kiln_log_softmax(g, x, -1)
                   : op == 2 ? kiln_layer_norm(g, x, sc, b, 1e-5)
                             : kiln_rms_norm(g, x, sc, -1, 1e-6);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    fusion_plan p;
    CHECK_OK(ctx, fusion_plan_build(g, &(fusion_options){0}, &p));
    int rows = 0;
    for (uint32_t k = 0; k < p.n_kernels; k++) {
        if (p.kernels[k].kind != FK_LOOP) continue;
        kd_kernel kd;
        CHECK_OK(ctx, kd_lower(g, &p, k, &kd));
        kd_schedule(&kd, CGEN_DIALECT_CUDA);
        if (kd.sched.form == KD_CUDA_ROW) {
            int r, w;
            kd_cuda_row_traffic(&kd, &r, &w);
            rows++;
            CHECK_MSG(want_reads < 0 || (r == want_reads && w == want_writes),
                      "%s %s [64, %lld]: %d reads and %d writes per element, not %d and %d",
                      names[op], kiln_dtype_name(t), (long long)n, r, w, want_reads, want_writes);
            CHECK_MSG(kd.sched.vec == want_vec, "%s %s [64, %lld]: %d elements a lane, not %d",
                      names[op], kiln_dtype_name(t), (long long)n, kd.sched.vec, want_vec);
        }
        kd_free(&kd);
    }
    CHECK_MSG(rows == 1, "%s: %d kernels with a block per row, not 1", names[op], rows);
    fusion_plan_free(&p);
    kiln_graph_destroy(g);
}

/* CUDA: an elementwise kernel over short rows gives a block several rows (schedule.c,
 * row_groups), each as few threads as cover it: [301, 64] f32 four a thread is 16 rows of
 * 16 threads, bf16 eight a thread 32 rows of 8, a row of 200 f32 4 rows of 64; a row of
 * 2048 (a block's) and a row reduction keep a block per row (0). */
static void row_group_of(kiln_dtype t, int64_t n, bool reduce, int64_t want) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "row_groups", &g));
    int64_t d[2] = {301, n};
    int ax = 1;
    kiln_value x = kiln_parameter(g, "x", t, 2, d);
    kiln_value y = reduce ? kiln_reduce_sum(g, x, 1, &ax, false) : kiln_mul(g, x, kiln_exp(g, x));
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    fusion_plan p;
    CHECK_OK(ctx, fusion_plan_build(g, &(fusion_options){0}, &p));
    for (uint32_t k = 0; k < p.n_kernels; k++) {
        if (p.kernels[k].kind != FK_LOOP) continue;
        kd_kernel kd;
        CHECK_OK(ctx, kd_lower(g, &p, k, &kd));
        kd_schedule(&kd, CGEN_DIALECT_CUDA);
        CHECK_MSG(kd.sched.row_group == want, "[301, %lld] %s: %lld rows a block, not %lld",
                  (long long)n, kiln_dtype_name(t), (long long)kd.sched.row_group, (long long)want);
        kd_free(&kd);
    }
    fusion_plan_free(&p);
    kiln_graph_destroy(g);
}

/* CUDA: a column sum of [r, c] bf16 to f32 (a bias gradient) split over its rows
 * (schedule.c, cuda_column_split): 32 columns a block, 8 threads a column, about
 * KN_CUDA_PARTS part blocks in all, a part at least 16 rows; not split when its 256-column
 * items fill the device (128 or more) or it is too little work. want_parts 0: not split
 * (256 columns an item). The partial results, parts x c slots of KD_PART_BYTES, are at
 * most an eighth of the input's bytes for the GPT's shapes. */
static void column_split_of(int64_t r, int64_t c, int64_t want_parts) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "column_split", &g));
    int64_t d[2] = {r, c};
    int ax = 0;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_BF16, 2, d);
    kiln_value y = kiln_reduce_sum(g, kiln_convert(g, x, KILN_DTYPE_F32), 1, &ax, false);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &y));
    fusion_plan p;
    CHECK_OK(ctx, fusion_plan_build(g, &(fusion_options){0}, &p));
    int n = 0;
    for (uint32_t k = 0; k < p.n_kernels; k++) {
        if (p.kernels[k].kind != FK_LOOP) continue;
        kd_kernel kd;
        CHECK_OK(ctx, kd_lower(g, &p, k, &kd));
        kd_schedule(&kd, CGEN_DIALECT_CUDA);
        n++;
        int64_t chunk = want_parts ? CGEN_CUDA_THREADS / CGEN_CUDA_COL_LANES : CGEN_CUDA_THREADS;
        CHECK_MSG(kd.columns && kd.sched.parts == want_parts && kd.sched.chunk == chunk,
                  "[%lld, %lld]: %lld parts of %lld columns, not %lld of %lld", (long long)r,
                  (long long)c, (long long)kd.sched.parts, (long long)kd.sched.chunk,
                  (long long)want_parts, (long long)chunk);
        if (want_parts && r >= 4096)
            CHECK_MSG(kd.sched.parts * c * KD_PART_BYTES * 8 <= r * c * 2,
                      "[%lld, %lld]: partial results of %lld bytes", (long long)r, (long long)c,
                      (long long)(kd.sched.parts * c * KD_PART_BYTES));
        kd_free(&kd);
    }
    CHECK_MSG(n == 1, "[%lld, %lld]: %d loop kernels, not 1", (long long)r, (long long)c, n);
    fusion_plan_free(&p);
    kiln_graph_destroy(g);
}

static void test_cuda_column_splits(void) {
    column_split_of(4096, 512, 32);  /* 16 items of 32 columns */
    column_split_of(4096, 2048, 8);  /* the MLP's bias: 64 items */
    column_split_of(4096, 1536, 10); /* the projection's: 48 */
    column_split_of(65536, 8, 512);  /* one item */
    column_split_of(100, 512, 0);    /* too little work */
    column_split_of(4096, 32768, 0); /* 128 items of 256 columns fill the device */
}

static void test_cuda_rows_on_chip(void) {
    row_group_of(KILN_DTYPE_F32, 64, false, 16);
    row_group_of(KILN_DTYPE_BF16, 64, false, 32);
    row_group_of(KILN_DTYPE_F32, 200, false, 4);
    row_group_of(KILN_DTYPE_F32, 2048, false, 0);
    row_group_of(KILN_DTYPE_F32, 64, true, 0);
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
        int w = d ? 8 : 4;
        for (int64_t n = 1000; n <= 8192; n += 7192) {
            row_kernel(0, t, n, 1, 1, w);
            row_kernel(1, t, n, 1, 1, w);
            row_kernel(2, t, n, 3, 1, w);
            row_kernel(3, t, n, 2, 1, w);
        }
    }
    /* too long for the caches: each pass reads the row again (a softmax's kept exp(x -
     * max) goes to the output row and back, 16 bytes at a time too) */
    row_kernel(0, KILN_DTYPE_F32, 20000, 3, 2, 4);
    row_kernel(1, KILN_DTYPE_F32, 20000, 3, 1, 4);
    row_kernel(2, KILN_DTYPE_F32, 20000, 5, 1, 4);
    row_kernel(3, KILN_DTYPE_F32, 20000, 3, 1, 4);
    /* the width divides the row: bf16 rows of 100 four at a time (8 bytes), f32 rows of 70
     * one at a time; f64 and f16 */
    row_kernel(0, KILN_DTYPE_BF16, 100, -1, 0, 4);
    row_kernel(2, KILN_DTYPE_F32, 70, -1, 0, 0);
    row_kernel(0, KILN_DTYPE_F64, 1000, -1, 0, 0);
    row_kernel(3, KILN_DTYPE_F16, 512, -1, 0, 8);
}

int main(void) {
    ctx = test_private_context(cache_dir);
    if (!ctx) return 1;
    RUN(test_gather_mean);
    RUN(test_long_f32_sums);
    RUN(test_split_reductions);
    RUN(test_split_same_bits);
    RUN(test_split_after_store);
    RUN(test_row_values);
    RUN(test_tiny_reductions);
    RUN(test_row_values_per_element);
    RUN(test_interleave);
    RUN(test_tiled_transposes);
    RUN(test_axis_norms);
    RUN(test_short_rows);
    RUN(test_short_reductions);
    RUN(test_trailing_reductions);
    RUN(test_prologue_rows);
    RUN(test_cuda_rows_on_chip);
    RUN(test_cuda_column_splits);
    /* the short-row forms of both kinds of target, whatever this one is: gcc vectorising
     * across the rows (AVX-512) and the rows' own pragmas (KD_SHORT_REDUCE) */
    kiln_context *native = ctx;
    for (int across = 0; across < 2; across++) {
        kiln_context_options o;
        memset(&o, 0, sizeof o);
        o.ignore_environment = true;
        o.cache_dir = cache_dir;
        o.cc_flags = across ? "-DKILN_ACROSS_ROWS=1" : "-DKILN_ACROSS_ROWS=0";
        char err[512];
        ctx = NULL;
        CHECK_MSG(!kiln_context_create(&o, &ctx, err, sizeof err), "%s", err);
        if (!ctx) continue;
        printf("with %s:\n", o.cc_flags);
        RUN(test_tiny_reductions);
        RUN(test_short_reductions);
        RUN(test_prologue_rows);
        kiln_context_destroy(ctx);
    }
    ctx = native;
    kiln_context_destroy(ctx);
    test_remove_dir(cache_dir);
    return test_summary("test_loops");
}
