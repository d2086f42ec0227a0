/* test_attention.c — kiln_dot_product_attention (src/trace/attention.c, the CPU's fused
 * kernel in src/backend/cpu/cpu_attention.c, the primitive form of src/passes/expand.c):
 *  - the reference interpreter against values computed once with JAX 0.10.2
 *    (jax.nn.dot_product_attention, jax_enable_x64; bench/.venv), causal and not;
 *  - compiled against the reference on shapes that reach every path of the kernel: rank 3
 *    and 4, grouped heads, T and S not multiples of the kernel's blocks, keys in several
 *    chunks, T < S and T > S with a causal mask, H != Hv, zero-size and H = 0 operands,
 *    f32 and f64, operands that are reshapes of products (read where they lie), held to
 *    the memory plan (cmp_graph);
 *  - the primitive form (what a backend without the kernel runs) against the reference,
 *    interpreted and compiled, and that it leaves no attention node;
 *  - the same bits with one thread and with three;
 *  - the memory the fused kernel saves: no [B, N, T, S] temporary, its scratch planned;
 *  - attention written out with primitives (src/passes/attention.c): recognised in each
 *    spelling a user writes (layouts, scale forms, masks as compares, a negation or a
 *    constant triangle, -inf or finite fills), compiled against the reference of the
 *    written-out graph, finite fills close to the scores included; left alone where it is
 *    not the op (another mask, a mask from a parameter, probabilities read elsewhere);
 *  - the graph text round trip, every builder error, and every host allocation of build +
 *    compile + run failed in turn.
 * Gradients are test_autodiff.c's (its per-op harness, against finite differences). */
#include "compare.h"
#include "fault.h"
#include "backend/device.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "trace/trace.h"

#include <math.h>
#include <stdint.h>

static kiln_context *C;
static uint64_t seed;

static kiln_graph *new_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "attention", &g));
    return g;
}

/* ------------------------------------------------------------- JAX values ---- */

static kiln_value f64_const(kiln_graph *g, int rank, const int64_t *dims, const double *v) {
    return kiln_constant(g, KILN_DTYPE_F64, rank, dims, v);
}

/* q [1, 3, 2, 2] (two query heads), k and v [1, 3, 1, 2] (one shared head). */
static void jax_values(void) {
    static const double q[12] = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 0.0, -2.0, 1.25, 0.5, -1.0, 1.0};
    static const double k[6] = {1.0, 0.5, -0.5, 2.0, 0.25, -1.5};
    static const double v[6] = {2.0, -1.0, 0.5, 3.0, -2.5, 1.0};
    static const double causal[12] = {2.0,
                                      -1.0,
                                      2.0,
                                      -1.0,
                                      0.6263136118650436,
                                      2.6631636694073677,
                                      1.8394372314214706,
                                      -0.5718327462673187,
                                      0.9325483217835426,
                                      0.35660479962825775,
                                      0.5267007201910019,
                                      2.5052594989538193};
    static const double scaled[12] = {-0.5788311809301376, 0.6871013641357422,  0.4269210547208786,
                                      0.4560123383998871,  0.5132455863058567,  1.8278526440262794,
                                      -1.2899115532636642, 0.748902216553688,   0.42185820639133453,
                                      0.7479284405708313,  0.36450864374637604, 1.7039502561092377};
    for (int c = 0; c < 2; c++) {
        kiln_graph *g = new_graph();
        int64_t qd[4] = {1, 3, 2, 2}, kd[4] = {1, 3, 1, 2};
        kiln_attention_options o = {.scale = c ? 0.3 : 0, .is_causal = !c};
        kiln_value out = kiln_dot_product_attention(
            g, f64_const(g, 4, qd, q), f64_const(g, 4, kd, k), f64_const(g, 4, kd, v), &o);
        CHECK_OK(C, kiln_graph_finish(g, 1, &out));
        kiln_array *r = NULL;
        CHECK_OK(C, kiln_interpret(g, 0, NULL, 1, &r));
        double got[12] = {0};
        if (r) kiln_array_copy_to_host(r, got, sizeof got);
        /* JAX rounds its scale=0.3 case through f32 in places: 1e-6 holds both */
        for (int i = 0; i < 12; i++)
            CHECK_MSG(fabs(got[i] - (c ? scaled : causal)[i]) <= 1e-6,
                      "%s: element %d is %.17g, JAX gives %.17g", c ? "scale 0.3" : "causal", i,
                      got[i], (c ? scaled : causal)[i]);
        kiln_array_destroy(r);
        kiln_graph_destroy(g);
    }
}

/* ------------------------------------------------------- compiled cases ---- */

typedef struct shape_case {
    int rank;
    int64_t B, T, S, N, K, H, Hv;
    bool causal;
    double scale; /* 0: the default */
} shape_case;

static const shape_case cases[] = {
    {4, 2, 8, 8, 4, 4, 16, 16, true, 0},      /* plain multi-head, causal */
    {4, 1, 130, 130, 2, 1, 32, 32, true, 0},  /* T = S past two query blocks, GQA 2:1 */
    {4, 2, 70, 600, 4, 2, 8, 24, false, 0.2}, /* keys in two chunks, Hv != H */
    {4, 1, 600, 600, 1, 1, 16, 16, true, 0},  /* causal over several key chunks */
    {4, 1, 5, 200, 3, 3, 8, 8, true, 0},      /* T < S causal: keys past T never seen */
    {4, 1, 200, 70, 2, 2, 8, 8, true, 0},     /* T > S causal: the last rows see all */
    {3, 1, 65, 65, 6, 2, 8, 4, false, 0},     /* rank 3, 3 query heads per key head */
    {3, 1, 1, 513, 4, 4, 64, 64, false, 0},   /* one query (decoding) over 513 keys */
    {4, 3, 0, 4, 2, 2, 4, 4, true, 0},        /* no queries */
    {4, 1, 4, 4, 2, 2, 0, 3, true, 0},        /* H = 0: every score is 0 */
    {4, 1, 4, 4, 2, 2, 4, 0, false, 0},       /* Hv = 0: an empty result */
};

static void case_dims(const shape_case *c, int64_t *qd, int64_t *kd, int64_t *vd) {
    int o = c->rank - 3;
    if (o) qd[0] = kd[0] = vd[0] = c->B;
    qd[o] = c->T, qd[o + 1] = c->N, qd[o + 2] = c->H;
    kd[o] = c->S, kd[o + 1] = c->K, kd[o + 2] = c->H;
    vd[o] = c->S, vd[o + 1] = c->K, vd[o + 2] = c->Hv;
}

/* Builds out = attention(q, k, v) of case c over three parameters of dtype t. */
static kiln_graph *case_graph(const shape_case *c, kiln_dtype t) {
    kiln_graph *g = new_graph();
    int64_t qd[4], kd[4], vd[4];
    case_dims(c, qd, kd, vd);
    kiln_attention_options o = {.scale = c->scale, .is_causal = c->causal};
    kiln_value q = kiln_parameter(g, "q", t, c->rank, qd); /* in this order: the arguments' */
    kiln_value k = kiln_parameter(g, "k", t, c->rank, kd);
    kiln_value v = kiln_parameter(g, "v", t, c->rank, vd);
    kiln_value out = kiln_dot_product_attention(g, q, k, v, &o);
    CHECK_OK(C, kiln_graph_finish(g, 1, &out));
    return g;
}

static void case_args(const shape_case *c, kiln_dtype t, kiln_array **args) {
    int64_t qd[4], kd[4], vd[4];
    case_dims(c, qd, kd, vd);
    args[0] = cmp_random_array(C, t, c->rank, qd, &seed);
    args[1] = cmp_random_array(C, t, c->rank, kd, &seed);
    args[2] = cmp_random_array(C, t, c->rank, vd, &seed);
}

static void compiled_cases(void) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int d = 0; d < 2; d++) {
            kiln_dtype t = d ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
            kiln_graph *g = case_graph(&cases[i], t);
            kiln_array *args[3];
            case_args(&cases[i], t, args);
            int nk = 0;
            CHECK_MSG(cmp_graph(C, g, 3, args, NULL, 1e-5, &nk), "case %zu, %s", i,
                      kiln_dtype_name(t));
            CHECK_MSG(nk == 1, "case %zu: %d kernels, one fused attention expected", i, nk);
            for (int a = 0; a < 3; a++) kiln_array_destroy(args[a]);
            kiln_graph_destroy(g);
        }
}

/* A LLaMA-style use: q, k, v are reshapes of products (read in place, no copy kernel),
 * the result goes through a product again. */
static void in_a_block_of(kiln_dtype t) {
    kiln_graph *g = new_graph();
    int64_t B = 2, T = 70, C_ = 64, N = 4, K = 2, H = 16;
    int64_t xd[3] = {B, T, C_}, wq[2] = {C_, N * H}, wk[2] = {C_, K * H};
    kiln_value x = kiln_parameter(g, "x", t, 3, xd);
    kiln_value w[4] = {kiln_parameter(g, "wq", t, 2, wq), kiln_parameter(g, "wk", t, 2, wk),
                       kiln_parameter(g, "wv", t, 2, wk),
                       kiln_parameter(g, "wo", t, 2, (int64_t[]){N * H, C_})};
    for (int i = 0; i < 4; i++) /* weights of a trained model's scale: scores of a few units */
        w[i] = kiln_mul(g, w[i], kiln_scalar(g, t, 0.125));
    kiln_value q = kiln_reshape(g, kiln_matmul(g, x, w[0]), 4, (int64_t[]){B, T, N, H});
    kiln_value k = kiln_reshape(g, kiln_matmul(g, x, w[1]), 4, (int64_t[]){B, T, K, H});
    kiln_value v = kiln_reshape(g, kiln_matmul(g, x, w[2]), 4, (int64_t[]){B, T, K, H});
    kiln_value y =
        kiln_dot_product_attention(g, q, k, v, &(kiln_attention_options){.is_causal = true});
    kiln_value out = kiln_matmul(g, kiln_reshape(g, y, 3, (int64_t[]){B, T, N * H}), w[3]);
    CHECK_OK(C, kiln_graph_finish(g, 1, &out));
    kiln_array *args[5] = {
        cmp_random_array(C, t, 3, xd, &seed), cmp_random_array(C, t, 2, wq, &seed),
        cmp_random_array(C, t, 2, wk, &seed), cmp_random_array(C, t, 2, wk, &seed),
        cmp_random_array(C, t, 2, (int64_t[]){N * H, C_}, &seed)};
    int nk = 0;
    CHECK_MSG(cmp_graph(C, g, 5, args, NULL, 1e-5, &nk), "%s", kiln_dtype_name(t));
    CHECK_MSG(nk == 9, "%d kernels: 4 weight scalings, 3 products, the attention, a product", nk);
    for (int a = 0; a < 5; a++) kiln_array_destroy(args[a]);
    kiln_graph_destroy(g);
}

static void in_a_block(void) {
    in_a_block_of(KILN_DTYPE_F32);
    in_a_block_of(KILN_DTYPE_F64);
}

/* --------------------------------------------------------- primitive form ---- */

static bool has_attention(const kiln_graph *g) {
    for (uint32_t id = 1; id < g->n_nodes; id++)
        if (g->nodes[id].op == IR_ATTENTION) return true;
    return false;
}

/* The CPU's library ops but attention. */
static bool supports_but_attention(void *state, int device, kn_lib_op op, const kn_lib_desc *d) {
    return op != KN_LIB_ATTENTION && kn_cpu_backend.lib_supports(state, device, op, d);
}

/* The CPU device of context c as a backend without the kernel: kiln_compile then expands
 * the op and does not recognise written-out attention (the same state; only the table's
 * slots differ). Undone by without_kernel_end. */
static kn_backend *without_kernel(kiln_context *c) {
    kn_backend *b = malloc(sizeof *b);
    if (!b) return NULL;
    *b = *c->devices[0].backend;
    b->lib_supports = supports_but_attention;
    c->devices[0].backend = b;
    return b;
}

static void without_kernel_end(kiln_context *c, kn_backend *b) {
    if (b) c->devices[0].backend = &kn_cpu_backend, free(b);
}

static void primitive_form(void) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].S > 256) continue; /* the interpreter's [T, S] products are slow */
        kiln_graph *g = case_graph(&cases[i], KILN_DTYPE_F64), *x = NULL;
        CHECK_OK(C, pass_expand_run(g, true, &x));
        if (!x) {
            kiln_graph_destroy(g);
            continue;
        }
        CHECK_MSG(!has_attention(x), "case %zu: an attention node is left", i);
        CHECK_OK(C, ir_verify(x));
        kiln_array *args[3], *want = NULL, *got = NULL;
        case_args(&cases[i], KILN_DTYPE_F64, args);
        CHECK_OK(C, kiln_interpret(g, 3, args, 1, &want));
        CHECK_OK(C, kiln_interpret(x, 3, args, 1, &got));
        if (want && got)
            CHECK_MSG(cmp_arrays(got, want, 1e-6, 1e-12, "primitive form"), "case %zu", i);
        /* and compiled: what a backend without the kernel runs */
        kn_backend *b = without_kernel(C);
        CHECK_MSG(cmp_graph(C, g, 3, args, NULL, 1e-5, NULL), "case %zu compiled", i);
        without_kernel_end(C, b);
        kiln_array_destroy(want), kiln_array_destroy(got);
        for (int a = 0; a < 3; a++) kiln_array_destroy(args[a]);
        kiln_graph_destroy(x);
        kiln_graph_destroy(g);
    }
    kiln_graph *g = new_graph(), *x = NULL; /* nothing to expand: no new graph */
    kiln_value p = kiln_parameter(g, "p", KILN_DTYPE_F32, 1, (int64_t[]){3});
    kiln_value e = kiln_exp(g, p);
    CHECK_OK(C, kiln_graph_finish(g, 1, &e));
    CHECK_OK(C, pass_expand_run(g, true, &x));
    CHECK(x == NULL);
    kiln_graph_destroy(g);
}

/* ---------------------------------------------------------------- threads ---- */

static kiln_context *threads_context(int n, char *dir) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.num_threads = n;
    o.cache_dir = dir;
    kiln_context *ctx = NULL;
    char err[512];
    CHECK_MSG(kiln_context_create(&o, &ctx, err, sizeof err) == KILN_STATUS_OK, "%s", err);
    return ctx;
}

/* Each work item reads its own rows and writes its own rows: any thread count gives the
 * same bits. */
static void same_bits_any_threads(void) {
    char dir[] = "/tmp/kiln-test-attention-threads-XXXXXX";
    if (!mkdtemp(dir)) return;
    const shape_case *c = &cases[3];
    float *res[2] = {0};
    size_t bytes = 0;
    for (int r = 0; r < 2; r++) {
        kiln_context *ctx = threads_context(r ? 3 : 1, dir);
        if (!ctx) break;
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "threads", &g));
        int64_t qd[4], kd[4], vd[4];
        case_dims(c, qd, kd, vd);
        kiln_attention_options o = {.is_causal = true};
        kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F32, 4, qd);
        kiln_value k = kiln_parameter(g, "k", KILN_DTYPE_F32, 4, kd);
        kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 4, vd);
        kiln_value out = kiln_dot_product_attention(g, q, k, v, &o);
        CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
        uint64_t s = 77;
        kiln_array *args[3] = {cmp_random_array(ctx, KILN_DTYPE_F32, 4, qd, &s),
                               cmp_random_array(ctx, KILN_DTYPE_F32, 4, kd, &s),
                               cmp_random_array(ctx, KILN_DTYPE_F32, 4, vd, &s)};
        kiln_executable *e = NULL;
        kiln_array *y = NULL;
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e) CHECK_OK(ctx, kiln_executable_run(e, 3, args, 1, &y));
        if (y) {
            bytes = kiln_array_nbytes(y);
            res[r] = malloc(bytes);
            kiln_array_copy_to_host(y, res[r], bytes);
        }
        kiln_array_destroy(y);
        for (int a = 0; a < 3; a++) kiln_array_destroy(args[a]);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
        kiln_context_destroy(ctx);
    }
    CHECK(res[0] && res[1] && !memcmp(res[0], res[1], bytes));
    free(res[0]), free(res[1]);
    test_remove_dir(dir);
}

/* ----------------------------------------------------------------- memory ---- */

/* The fused kernel keeps no [B, N, T, S] value: its temporaries are its scratch, a few
 * score tiles, where the primitive form holds the scores and probabilities. */
static void memory(void) {
    shape_case c = {4, 2, 256, 256, 4, 4, 32, 32, true, 0};
    kiln_graph *g = case_graph(&c, KILN_DTYPE_F32);
    kiln_executable *fused = NULL, *prims = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &fused));
    kn_backend *nk = without_kernel(C);
    CHECK_OK(C, kiln_compile(g, NULL, &prims));
    without_kernel_end(C, nk);
    if (fused && prims) {
        kiln_memory_analysis a, b;
        CHECK_OK(C, kiln_executable_get_memory_analysis(fused, &a));
        CHECK_OK(C, kiln_executable_get_memory_analysis(prims, &b));
        uint64_t scores = (uint64_t)(c.B * c.N * c.T * c.S) * 4;
        CHECK_MSG(a.temp_bytes > 0 && a.temp_bytes < scores / 4,
                  "fused: %llu temporary bytes, the scores are %llu",
                  (unsigned long long)a.temp_bytes, (unsigned long long)scores);
        CHECK_MSG(b.temp_bytes >= scores, "primitive form: %llu temporary bytes",
                  (unsigned long long)b.temp_bytes);
    }
    kiln_executable_destroy(fused), kiln_executable_destroy(prims);
    kiln_graph_destroy(g);
}

/* Scores of -inf (q . k with k = -inf) in the first key chunk and finite ones after it:
 * the running maximum is -inf until the second chunk, which must not make the row NaN
 * (-inf - -inf); a row whose every score is -inf is NaN, as in the reference. */
static void infinite_scores(void) {
    int64_t S = 600, qd[4] = {1, 2, 1, 1}, kd[4] = {1, 600, 1, 1};
    float q[2] = {1, 1}, k[600], v[600];
    for (int64_t j = 0; j < S; j++) k[j] = j < 512 ? -INFINITY : 1, v[j] = (float)j;
    q[1] = 1;
    kiln_graph *g = new_graph();
    kiln_value qv = kiln_parameter(g, "q", KILN_DTYPE_F32, 4, qd);
    kiln_value kv = kiln_parameter(g, "k", KILN_DTYPE_F32, 4, kd);
    kiln_value vv = kiln_parameter(g, "v", KILN_DTYPE_F32, 4, kd);
    kiln_value out = kiln_dot_product_attention(g, qv, kv, vv, NULL);
    CHECK_OK(C, kiln_graph_finish(g, 1, &out));
    kiln_array *args[3] = {NULL, NULL, NULL};
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, qd, q, &args[0]));
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, kd, k, &args[1]));
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, kd, v, &args[2]));
    kiln_executable *e = NULL;
    kiln_array *y = NULL;
    CHECK_OK(C, kiln_compile(g, NULL, &e));
    if (e) CHECK_OK(C, kiln_executable_run(e, 3, args, 1, &y));
    float got[2] = {0};
    if (y) kiln_array_copy_to_host(y, got, sizeof got);
    /* keys 512..599 alike: the mean of their values, 555.5 */
    CHECK_MSG(fabsf(got[0] - 555.5f) < 1e-3f && fabsf(got[1] - 555.5f) < 1e-3f, "%g %g", got[0],
              got[1]);
    kiln_array_destroy(y);
    kiln_executable_destroy(e);
    for (int a = 0; a < 3; a++) kiln_array_destroy(args[a]);
    kiln_graph_destroy(g);
}

/* Every score of every row far below -88: a row's maximum m is then far below too, so a
 * lane past the row's end that still held 0 would reach the exponent at -m > 88, and 2^k
 * put into the exponent bits overflows int32 (UB; gcc's UBSan reports the vector add
 * when m is about -90 to -177, as with scores of -120; at -1e4, k << 23 first wraps).
 * Lengths that are not multiples of the kernel's 16 lanes, causal (rows of every length)
 * and not, one key chunk and several: against the reference. The scores are exact in f32
 * (q . k = -qs (10 + (j % 7) / 128)), so the kernel's products match the reference's. */
static void very_negative_scores(void) {
    static const int64_t lens[][2] = {{20, 20}, {3, 37}, {70, 600}};
    static const float qs[] = {12, 1000}; /* scores about -120 and -1e4 */
    for (int c = 0; c < 3 * 2 * 2; c++) {
        int64_t T = lens[c % 3][0], S = lens[c % 3][1];
        bool causal = c / 3 % 2;
        int64_t qd[4] = {1, T, 2, 1}, kd[4] = {1, S, 1, 1};
        float *q = malloc((size_t)(2 * T) * sizeof *q), *k = malloc((size_t)S * sizeof *k);
        float *v = malloc((size_t)S * sizeof *v);
        for (int64_t i = 0; i < 2 * T; i++) q[i] = qs[c / 6];
        for (int64_t j = 0; j < S; j++) k[j] = -10 - (float)(j % 7) / 128, v[j] = (float)j;
        kiln_graph *g = new_graph();
        kiln_value qv = kiln_parameter(g, "q", KILN_DTYPE_F32, 4, qd);
        kiln_value kv = kiln_parameter(g, "k", KILN_DTYPE_F32, 4, kd);
        kiln_value vv = kiln_parameter(g, "v", KILN_DTYPE_F32, 4, kd);
        kiln_attention_options o = {.is_causal = causal};
        kiln_value out = kiln_dot_product_attention(g, qv, kv, vv, &o);
        CHECK_OK(C, kiln_graph_finish(g, 1, &out));
        kiln_array *args[3] = {NULL, NULL, NULL};
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, qd, q, &args[0]));
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, kd, k, &args[1]));
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, kd, v, &args[2]));
        int nk = 0;
        CHECK_MSG(cmp_graph(C, g, 3, args, NULL, 1e-5, &nk), "T %lld, S %lld, causal %d, q %g",
                  (long long)T, (long long)S, causal, (double)qs[c / 6]);
        CHECK_MSG(nk == 1, "%d kernels, one fused attention expected", nk);
        for (int a = 0; a < 3; a++) kiln_array_destroy(args[a]);
        kiln_graph_destroy(g);
        free(q), free(k), free(v);
    }
}

/* ---------------------------------------------------- written out, recognised ---- */

typedef enum {
    MASK_NONE,
    MASK_LE,
    MASK_GT_SWAPPED,
    MASK_CONSTANT,
    MASK_WINDOW,
    MASK_BOTTOM_RIGHT,
    MASK_PARAMETER,
    MASK_KEYS_ALL,
    MASK_KEYS_PADDED,
    MASK_IOTA_ROW,    /* compare(iota, iota) over [1, S]: the query iota is 0, so j <= 0 */
    MASK_IOTA_COLUMN, /* over [T, 1]: the key iota is 0, so 0 <= i, every key seen */
    MASK_HELPER       /* kiln_make_causal_mask(g, T, S, bool) */
} mask_form;

typedef struct written {
    int rank;         /* 4: q [B, T, N, H] as a model makes it; 3: [N, T, H], heads batched */
    bool heads_first; /* rank 4: q, k, v given as [B, N, T, H] (no transposes to fold) */
    int64_t B, T, S, N, H, Hv;
    mask_form mask;
    double fill;
    int scale_form; /* 0: none, 1: s * c, 2: c * s, 3: s / c; after the mask: 4: c * x,
                     * 5: x / c, where x is the masked scores */
    bool p_output;  /* the probabilities are an output too: not the op */
    bool jax_where; /* kiln_where(mask [T, S], s, scalar fill), broadcasting */
    bool match;     /* what the pass must decide */
    int64_t group;  /* rank 4, not heads_first: k and v have N / group heads, repeated
                     * (LLaMA's repeat_kv); the op must read them unrepeated */
} written;

static const written writtens[] = {
    /* rank, hf, B, T, S, N, H, Hv, mask, fill, scale, p_out, where, match */
    {4, false, 2, 70, 70, 4, 16, 16, MASK_LE, -1e30, 1, false, false, true},
    {4, false, 1, 130, 130, 2, 8, 12, MASK_GT_SWAPPED, -INFINITY, 2, false, false, true},
    {4, true, 2, 33, 33, 3, 8, 8, MASK_LE, -1e9, 3, false, true, true},
    {3, false, 1, 65, 65, 4, 8, 8, MASK_CONSTANT, -1e4, 0, false, false, true},
    {4, false, 1, 20, 90, 2, 8, 8, MASK_NONE, 0, 1, false, false, true},
    /* fills among the scores: the keys a query does not see weigh in */
    {4, false, 1, 130, 130, 2, 8, 8, MASK_LE, 0.25, 1, false, true, true},
    {4, false, 1, 600, 600, 1, 8, 8, MASK_LE, -2, 1, false, false, true},
    {4, false, 1, 5, 200, 2, 8, 8, MASK_LE, 0, 1, false, false, true},
    {4, false, 1, 200, 70, 2, 8, 8, MASK_LE, -0.5, 3, false, false, true},
    {3, false, 1, 40, 40, 2, 8, 8, MASK_LE, 1.5, 0, false, false, true},
    /* not the op */
    {4, false, 1, 40, 40, 2, 8, 8, MASK_WINDOW, -1e30, 1, false, false, false},
    {4, false, 1, 20, 40, 2, 8, 8, MASK_BOTTOM_RIGHT, -1e30, 1, false, false, false},
    {4, false, 1, 40, 40, 2, 8, 8, MASK_PARAMETER, -1e30, 1, false, false, false},
    {4, false, 1, 40, 40, 2, 8, 8, MASK_LE, -1e30, 1, true, false, false},
    /* a [1, S] mask broadcast over the queries: all true is no mask; padding is not causal */
    {4, false, 2, 24, 40, 2, 8, 8, MASK_KEYS_ALL, -1e30, 1, false, true, true},
    {4, false, 2, 24, 40, 2, 8, 8, MASK_KEYS_PADDED, -1e30, 1, false, true, false},
    /* iotas along a broadcast axis of size 1 are not the triangle's */
    {4, false, 1, 6, 6, 2, 4, 4, MASK_IOTA_ROW, -1e30, 1, false, true, false},
    {4, false, 1, 6, 6, 2, 4, 4, MASK_IOTA_COLUMN, -1e30, 1, false, true, true},
    /* no heads: a valid program the op's shape check would refuse */
    {3, false, 1, 6, 6, 0, 4, 4, MASK_LE, -1e30, 1, false, false, false},
    /* the mask first, then the scale (the fill scaled with the scores) */
    {4, false, 1, 70, 70, 2, 8, 8, MASK_LE, -1e9, 4, false, true, true},
    {4, true, 2, 33, 33, 3, 8, 8, MASK_GT_SWAPPED, -INFINITY, 5, false, false, true},
    {4, false, 1, 130, 130, 2, 8, 8, MASK_LE, 0.5, 4, false, false, true},
    {3, false, 1, 40, 40, 2, 8, 8, MASK_LE, -3, 5, false, true, true},
    /* the mask from kiln_make_causal_mask, as bool, T = S and T < S */
    {4, false, 2, 70, 70, 4, 8, 8, MASK_HELPER, -1e30, 1, false, true, true},
    {4, false, 1, 5, 200, 2, 8, 8, MASK_HELPER, -INFINITY, 2, false, true, true},
    /* grouped heads written as a repeat: 4 query heads over 2, and 6 over 1 */
    {4, false, 2, 70, 70, 4, 8, 8, MASK_LE, -1e30, 1, false, true, true, 2},
    {4, false, 1, 33, 40, 6, 8, 4, MASK_NONE, 0, 3, false, false, true, 6},
};

/* The written-out attention of case w over parameters q, k, v (and a mask). */
static kiln_graph *written_graph(const written *w, kiln_dtype t) {
    kiln_graph *g = new_graph();
    int64_t B = w->B, T = w->T, S = w->S, N = w->N, H = w->H, Hv = w->Hv;
    kiln_value q, k, v;
    if (w->rank == 3) {
        q = kiln_parameter(g, "q", t, 3, (int64_t[]){N, T, H});
        k = kiln_parameter(g, "k", t, 3, (int64_t[]){N, S, H});
        v = kiln_parameter(g, "v", t, 3, (int64_t[]){N, S, Hv});
        k = kiln_transpose(g, k, (int[]){0, 2, 1});
    } else if (w->heads_first) {
        q = kiln_parameter(g, "q", t, 4, (int64_t[]){B, N, T, H});
        k = kiln_parameter(g, "k", t, 4, (int64_t[]){B, N, S, H});
        v = kiln_parameter(g, "v", t, 4, (int64_t[]){B, N, S, Hv});
        k = kiln_transpose(g, k, (int[]){0, 1, 3, 2});
    } else {
        q = kiln_parameter(g, "q", t, 4, (int64_t[]){B, T, N, H});
        int64_t K = w->group ? N / w->group : N;
        k = kiln_parameter(g, "k", t, 4, (int64_t[]){B, S, K, H});
        v = kiln_parameter(g, "v", t, 4, (int64_t[]){B, S, K, Hv});
        if (w->group) { /* repeat_kv: [B, S, K, X] -> [B, S, K, G, X] -> [B, S, N, X] */
            int bd[4] = {0, 1, 2, 4};
            int64_t G = w->group;
            k = kiln_reshape(g, kiln_broadcast_in_dim(g, k, 5, (int64_t[]){B, S, K, G, H}, bd), 4,
                             (int64_t[]){B, S, N, H});
            v = kiln_reshape(g, kiln_broadcast_in_dim(g, v, 5, (int64_t[]){B, S, K, G, Hv}, bd), 4,
                             (int64_t[]){B, S, N, Hv});
        }
        q = kiln_transpose(g, q, (int[]){0, 2, 1, 3});
        k = kiln_transpose(g, k, (int[]){0, 2, 3, 1});
        v = kiln_transpose(g, v, (int[]){0, 2, 1, 3});
    }
    kiln_value s = kiln_matmul(g, q, k), c = kiln_scalar(g, t, 1 / sqrt((double)H));
    s = w->scale_form == 1   ? kiln_mul(g, s, c)
        : w->scale_form == 2 ? kiln_mul(g, c, s)
        : w->scale_form == 3 ? kiln_div(g, s, kiln_scalar(g, t, sqrt((double)H)))
                             : s;
    int64_t ts[2] = {T, S};
    kiln_value i = kiln_iota(g, KILN_DTYPE_I32, 2, ts, 0),
               j = kiln_iota(g, KILN_DTYPE_I32, 2, ts, 1);
    kiln_value seen = {0};
    bool *tri = NULL;
    switch (w->mask) {
    case MASK_NONE: break;
    case MASK_LE:
    case MASK_GT_SWAPPED: seen = kiln_compare(g, j, i, KILN_CMP_LE); break;
    case MASK_CONSTANT:
        tri = malloc((size_t)(T * S));
        for (int64_t a = 0; a < T * S; a++) tri[a] = a % S <= a / S;
        seen = kiln_constant(g, KILN_DTYPE_BOOL, 2, ts, tri);
        free(tri);
        break;
    case MASK_WINDOW: /* i - 4 < j <= i */
        seen = kiln_logical_and(
            g, kiln_compare(g, j, i, KILN_CMP_LE),
            kiln_compare(g, kiln_add(g, j, kiln_scalar(g, KILN_DTYPE_I32, 4)), i, KILN_CMP_GT));
        break;
    case MASK_BOTTOM_RIGHT: /* j <= i + S - T */
        seen = kiln_compare(g, j, kiln_add(g, i, kiln_scalar(g, KILN_DTYPE_I32, (double)(S - T))),
                            KILN_CMP_LE);
        break;
    case MASK_PARAMETER: seen = kiln_parameter(g, "mask", KILN_DTYPE_BOOL, 2, ts); break;
    case MASK_HELPER: seen = kiln_make_causal_mask(g, T, S, KILN_DTYPE_BOOL); break;
    case MASK_IOTA_ROW:
    case MASK_IOTA_COLUMN: {
        int64_t d[2] = {w->mask == MASK_IOTA_ROW ? 1 : T, w->mask == MASK_IOTA_ROW ? S : 1};
        seen = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, d, 1),
                            kiln_iota(g, KILN_DTYPE_I32, 2, d, 0), KILN_CMP_LE);
        break;
    }
    case MASK_KEYS_ALL:
    case MASK_KEYS_PADDED:
        tri = malloc((size_t)S);
        for (int64_t a = 0; a < S; a++) tri[a] = w->mask == MASK_KEYS_ALL || a < S - 3;
        seen = kiln_constant(g, KILN_DTYPE_BOOL, 2, (int64_t[]){1, S}, tri);
        free(tri);
        break;
    }
    ir_shape shape = g->nodes[s.id].shape, *ss = &shape; /* a copy: nodes may move */
    if (w->mask != MASK_NONE) {
        kiln_value fill = kiln_scalar(g, t, w->fill);
        if (w->jax_where)
            s = kiln_where(g, seen, s, fill);
        else if (w->mask == MASK_GT_SWAPPED)
            s = kiln_select(
                g, kiln_broadcast_to(g, kiln_compare(g, j, i, KILN_CMP_GT), ss->rank, ss->dims),
                kiln_broadcast_to(g, fill, ss->rank, ss->dims), s);
        else
            s = kiln_select(g, kiln_broadcast_to(g, seen, ss->rank, ss->dims), s,
                            kiln_broadcast_to(g, fill, ss->rank, ss->dims));
    }
    if (w->scale_form == 4) s = kiln_mul(g, c, s);
    if (w->scale_form == 5) s = kiln_div(g, s, kiln_scalar(g, t, sqrt((double)H)));
    kiln_value p = kiln_softmax(g, s, -1), o = kiln_matmul(g, p, v);
    if (w->rank == 4 && !w->heads_first) o = kiln_transpose(g, o, (int[]){0, 2, 1, 3});
    kiln_value outs[2] = {o, p};
    CHECK_OK(C, kiln_graph_finish(g, w->p_output ? 2 : 1, outs));
    return g;
}

/* The pipeline, then the pass, as kiln_compile runs them: whether an attention appears,
 * and the key/value heads it reads in *kv_heads (when it does). */
static bool recognised(kiln_graph *g, int64_t *kv_heads) {
    kiln_graph *x = NULL;
    CHECK_OK(C, pass_clone(g, &x));
    if (!x) return false;
    CHECK_OK(C, passes_run(&x, NULL));
    bool changed = false;
    pass_stats st = {0};
    CHECK_OK(C, pass_attention(&x, &changed, &st));
    bool r = has_attention(x);
    CHECK_MSG(r == changed && st.attention == (uint32_t)changed, "changed %d, stats %u, found %d",
              changed, st.attention, r);
    for (uint32_t id = 1; id < x->n_nodes; id++)
        if (x->nodes[id].op == IR_ATTENTION) {
            const ir_shape *ks = &x->nodes[ir_in(&x->nodes[id])[1]].shape;
            *kv_heads = ks->dims[ks->rank - 2];
        }
    kiln_graph_destroy(x);
    return r;
}

static void written_out(void) {
    for (size_t c = 0; c < sizeof writtens / sizeof *writtens; c++)
        for (int d = 0; d < 2; d++) {
            const written *w = &writtens[c];
            kiln_dtype t = d ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
            kiln_graph *g = written_graph(w, t);
            int64_t kv = 0;
            CHECK_MSG(recognised(g, &kv) == w->match, "case %zu (%s): recognised %d, want %d", c,
                      kiln_dtype_name(t), !w->match, w->match);
            if (w->match && w->rank == 4)
                CHECK_MSG(kv == (w->group ? w->N / w->group : w->N),
                          "case %zu: the op reads %lld key/value heads", c, (long long)kv);
            int n_args = 3 + (w->mask == MASK_PARAMETER);
            kiln_array *args[4];
            for (int a = 0; a < n_args; a++) {
                const ir_node *pn = &g->nodes[g->params[a]];
                args[a] = cmp_random_array(C, pn->dtype, pn->shape.rank, pn->shape.dims, &seed);
            }
            CHECK_MSG(cmp_graph(C, g, n_args, args, NULL, 1e-5, NULL), "case %zu, %s", c,
                      kiln_dtype_name(t));
            for (int a = 0; a < n_args; a++) kiln_array_destroy(args[a]);
            kiln_graph_destroy(g);
        }
}

/* A finite fill kept, not taken for -inf: one query, two keys, the second unseen with a
 * fill of 0 and a seen score of 0 too, so each key weighs one half. */
static void finite_fill_weighs_in(void) {
    written w = {4, false, 1, 2, 2, 1, 1, 1, MASK_LE, 0, 0, false, false, true};
    kiln_graph *g = written_graph(&w, KILN_DTYPE_F32);
    int64_t d[4] = {1, 2, 1, 1};
    float qv[2] = {0, 0}, kv[2] = {1, 1}, vv[2] = {2, 6}, y[2] = {0};
    kiln_array *args[3] = {NULL, NULL, NULL}, *out = NULL;
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, d, qv, &args[0]));
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, d, kv, &args[1]));
    CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, d, vv, &args[2]));
    kiln_executable *e = NULL;
    CHECK_OK(C, kiln_compile(g, &(kiln_compile_options){.keep_ir = true}, &e));
    char *listing = e ? kiln_executable_to_string(e) : NULL;
    CHECK_MSG(listing && strstr(listing, "dot_product_attention"), "not fused:\n%s",
              listing ? listing : "");
    kiln_string_free(C, listing);
    if (e) CHECK_OK(C, kiln_executable_run(e, 3, args, 1, &out));
    if (out) kiln_array_copy_to_host(out, y, sizeof y);
    /* query 0: keys 0 (seen, 2) and 1 (unseen, scored 0: 6) alike -> 4; query 1: 4 */
    CHECK_MSG(y[0] == 4 && y[1] == 4, "%g %g", y[0], y[1]);
    kiln_array_destroy(out);
    kiln_executable_destroy(e);
    for (int a = 0; a < 3; a++) kiln_array_destroy(args[a]);
    kiln_graph_destroy(g);
}

/* The op with a finite fill, as the recognition makes it: the fused kernel (compiled)
 * and the primitive form (expanded, interpreted) against the reference's definition, on
 * the kernel's paths (several key chunks, T < S, T > S, grouped heads); the graph text
 * keeps the fill; a NaN, +inf or out-of-range fill is refused. */
static void fill_attribute(void) {
    static const shape_case fc[] = {
        {4, 1, 130, 130, 2, 1, 8, 8, true, 0.3}, {4, 1, 600, 600, 1, 1, 8, 4, true, 0.2},
        {4, 2, 5, 200, 2, 2, 8, 8, true, 0.3},   {4, 1, 200, 70, 4, 2, 8, 8, true, 0.3},
        {3, 1, 9, 9, 2, 2, 4, 4, true, 0.5},
    };
    static const double fills[] = {0.25, -1.5, -1e30};
    for (size_t i = 0; i < sizeof fc / sizeof *fc; i++)
        for (int d = 0; d < 2; d++) {
            const shape_case *c = &fc[i];
            kiln_dtype t = d ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
            double fill = fills[(i + (size_t)d) % 3];
            kiln_graph *g = new_graph();
            int64_t qd[4], kd[4], vd[4];
            case_dims(c, qd, kd, vd);
            kiln_value q = kiln_parameter(g, "q", t, c->rank, qd);
            kiln_value k = kiln_parameter(g, "k", t, c->rank, kd);
            kiln_value v = kiln_parameter(g, "v", t, c->rank, vd);
            kiln_value out = trace_attention(g, q, k, v, c->scale, true, fill);
            CHECK_OK(C, kiln_graph_finish(g, 1, &out));
            kiln_array *args[3], *want = NULL, *got = NULL;
            case_args(c, t, args);
            CHECK_MSG(cmp_graph(C, g, 3, args, NULL, 1e-5, NULL), "case %zu, fill %g, %s", i, fill,
                      kiln_dtype_name(t));
            kiln_graph *x = NULL;
            CHECK_OK(C, pass_expand_run(g, true, &x));
            if (x && c->S <= 256) {
                CHECK_OK(C, kiln_interpret(g, 3, args, 1, &want));
                CHECK_OK(C, kiln_interpret(x, 3, args, 1, &got));
                if (want && got)
                    CHECK_MSG(
                        cmp_arrays(got, want, d ? 1e-9 : 1e-5, d ? 1e-12 : 1e-6, "primitive form"),
                        "case %zu, fill %g", i, fill);
            }
            char *text = kiln_graph_to_string(g), *again = NULL;
            kiln_graph *l = NULL;
            char want_fill[64];
            snprintf(want_fill, sizeof want_fill, " fill=%.17g", fill);
            CHECK_MSG(text && strstr(text, want_fill), "%s not in:\n%s", want_fill, text);
            CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "fill", &l));
            if (l) again = kiln_graph_to_string(l);
            CHECK_MSG(again && !strcmp(text, again), "round trip:\n%s\n%s", text, again);
            kiln_string_free(C, text), kiln_string_free(C, again);
            kiln_graph_destroy(l), kiln_graph_destroy(x);
            kiln_array_destroy(want), kiln_array_destroy(got);
            for (int a = 0; a < 3; a++) kiln_array_destroy(args[a]);
            kiln_graph_destroy(g);
        }
    static const double bad[] = {NAN, INFINITY, 1e39}; /* 1e39: not an f32 */
    for (int i = 0; i < 3; i++) {
        kiln_graph *g = new_graph();
        kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F32, 3, (int64_t[]){4, 1, 2});
        kiln_value out = trace_attention(g, q, q, q, 1, true, bad[i]);
        CHECK(!kiln_value_ok(out));
        CHECK(kiln_graph_finish(g, 1, &out) == KILN_STATUS_INVALID_ARGUMENT);
        CHECK_CONTAINS(kiln_last_error(C), "must be -inf or finite in f32");
        kiln_graph_destroy(g);
    }
}

/* ------------------------------------------------------------- graph text ---- */

static void graph_text(void) {
    kiln_graph *g = case_graph(&cases[2], KILN_DTYPE_F32); /* scale 0.2, not causal */
    kiln_graph *h = case_graph(&cases[1], KILN_DTYPE_F32); /* the default scale, causal */
    for (int i = 0; i < 2; i++) {
        char *text = kiln_graph_to_string(i ? h : g), *again = NULL;
        CHECK(text && strstr(text, "dot_product_attention"));
        CHECK(text && (i ? strstr(text, " causal") != NULL : strstr(text, "causal") == NULL));
        kiln_graph *l = NULL;
        CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "text", &l));
        if (l) again = kiln_graph_to_string(l);
        CHECK_MSG(again && !strcmp(text, again), "round trip:\n%s\n%s", text, again ? again : "");
        kiln_string_free(C, text), kiln_string_free(C, again);
        kiln_graph_destroy(l);
    }
    kiln_graph_destroy(g), kiln_graph_destroy(h);
    /* a scale that is not a number, and an integer one */
#define ATTN_HDR "graph t(%1: f32[2,1,4] \"q\") {\n  %1 = parameter 0 \"q\" : f32[2,1,4]\n"
    static const char *const bad[] = {
        ATTN_HDR "  %2 = dot_product_attention(%1, %1, %1) scale=[1] : f32[2,1,4]\n"
                 "  return (%2)\n}\n",
        ATTN_HDR "  %2 = dot_product_attention(%1, %1, %1) scale=1.5e : f32[2,1,4]\n"
                 "  return (%2)\n}\n",
        ATTN_HDR "  %2 = dot_product_attention(%1, %1) scale=1 : f32[2,1,4]\n  return (%2)\n}\n",
        ATTN_HDR
        "  %2 = dot_product_attention(%1, %1, %1) scale=0.1250000000000000000000000000000000"
        "00000000000000000000000000000001 : f32[2,1,4]\n  return (%2)\n}\n",
    };
    static const char *const why[] = {"scale=X", "is not a number", "takes 3 operands", "too long"};
    for (int i = 0; i < 4; i++) {
        kiln_graph *l = NULL;
        CHECK_MSG(kiln_graph_parse(C, bad[i], strlen(bad[i]), "bad", &l) != KILN_STATUS_OK,
                  "text %d loaded", i);
        CHECK_CONTAINS(kiln_last_error(C), why[i]);
        kiln_graph_destroy(l);
    }
    kiln_graph *l = NULL;
    const char *ok = ATTN_HDR "  %2 = dot_product_attention(%1, %1, %1) scale=2 causal : "
                              "f32[2,1,4]\n  return (%2)\n}\n";
    CHECK_OK(C, kiln_graph_parse(C, ok, strlen(ok), "int scale", &l));
    kiln_graph_destroy(l);
    /* -0 stays -0 (CSE keys on the scale's bits), exponents and signs read back */
    static const char *const scales[] = {"-0", "1e-05", "-2.5", "0.125"};
    for (int i = 0; i < 4; i++) {
        char text[512], want[64];
        snprintf(text, sizeof text,
                 "%s  %%2 = dot_product_attention(%%1, %%1, %%1) scale=%s : f32[2,1,4]\n"
                 "  return (%%2)\n}\n",
                 ATTN_HDR, scales[i]);
        snprintf(want, sizeof want, "scale=%.17g", strtod(scales[i], NULL));
        l = NULL;
        CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "scale", &l));
        char *back = l ? kiln_graph_to_string(l) : NULL;
        CHECK_MSG(back && strstr(back, want), "scale %s printed back as: %s", scales[i],
                  back ? back : "(none)");
        kiln_string_free(C, back);
        kiln_graph_destroy(l);
    }
}

/* ---------------------------------------------------------------- errors ---- */

static void expect_error(kiln_graph *g, kiln_value v, kiln_status want, const char *part) {
    CHECK(!kiln_value_ok(v));
    kiln_value out = v;
    kiln_status s = kiln_graph_finish(g, 1, &out);
    CHECK_MSG(s == want, "status %s, want %s", kiln_status_name(s), kiln_status_name(want));
    const char *m = kiln_last_error(C);
    CHECK_MSG(strstr(m, "kiln_dot_product_attention") && strstr(m, part), "message: %s", m);
    kiln_graph_destroy(g);
}

static void errors(void) {
    int64_t q4[4] = {2, 8, 4, 16}, k4[4] = {2, 8, 2, 16}, q3[3] = {8, 4, 16};
    struct {
        kiln_dtype tq, tk;
        int rq, rk;
        const int64_t *dq, *dk, *dv;
        double scale;
        kiln_status want;
        const char *part;
    } bad[] = {
        {KILN_DTYPE_F32, KILN_DTYPE_F64, 4, 4, q4, k4, k4, 0, KILN_STATUS_DTYPE, "one dtype"},
        {KILN_DTYPE_I32, KILN_DTYPE_I32, 4, 4, q4, k4, k4, 0, KILN_STATUS_DTYPE,
         "f32, f64, bf16 or f16"},
        {KILN_DTYPE_F32, KILN_DTYPE_F32, 4, 3, q4, q3, q3, 0, KILN_STATUS_SHAPE, "ranks 4, 3"},
        {KILN_DTYPE_F32, KILN_DTYPE_F32, 4, 4, q4, (int64_t[]){2, 8, 3, 16},
         (int64_t[]){2, 8, 3, 16}, 0, KILN_STATUS_SHAPE, "multiple of the 3 key/value heads"},
        {KILN_DTYPE_F32, KILN_DTYPE_F32, 4, 4, q4, (int64_t[]){2, 8, 2, 8}, (int64_t[]){2, 8, 2, 8},
         0, KILN_STATUS_SHAPE, "head size H, not 16 and 8"},
        {KILN_DTYPE_F32, KILN_DTYPE_F32, 4, 4, q4, k4, (int64_t[]){2, 7, 2, 16}, 0,
         KILN_STATUS_SHAPE, "agree on [S, K]"},
        {KILN_DTYPE_F32, KILN_DTYPE_F32, 4, 4, q4, (int64_t[]){3, 8, 2, 16},
         (int64_t[]){3, 8, 2, 16}, 0, KILN_STATUS_SHAPE, "one batch size"},
        {KILN_DTYPE_F32, KILN_DTYPE_F32, 4, 4, q4, (int64_t[]){2, 0, 2, 16},
         (int64_t[]){2, 0, 2, 16}, 0, KILN_STATUS_SHAPE, "key length S is 0"},
        {KILN_DTYPE_F32, KILN_DTYPE_F32, 4, 4, q4, k4, k4, NAN, KILN_STATUS_INVALID_ARGUMENT,
         "not finite"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kiln_graph *g = new_graph();
        kiln_value q = kiln_parameter(g, "q", bad[i].tq, bad[i].rq, bad[i].dq); /* in order */
        kiln_value k = kiln_parameter(g, "k", bad[i].tk, bad[i].rk, bad[i].dk);
        kiln_value v = kiln_parameter(g, "v", bad[i].tk, bad[i].rk, bad[i].dv);
        kiln_attention_options o = {.scale = bad[i].scale};
        expect_error(g, kiln_dot_product_attention(g, q, k, v, &o), bad[i].want, bad[i].part);
    }
    kiln_graph *g = new_graph(); /* a value of another graph */
    kiln_graph *h = new_graph();
    kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F32, 4, q4);
    kiln_value k = kiln_parameter(h, "k", KILN_DTYPE_F32, 4, k4);
    expect_error(g, kiln_dot_product_attention(g, q, k, k, NULL), KILN_STATUS_INVALID_ARGUMENT,
                 "key");
    kiln_graph_destroy(h);
}

/* ------------------------------------------------------- fault injection ---- */

/* Causal self-attention of x [1, 3, 1, 2] as the op, or (by_hand) written out with a
 * -1e30 fill and a constant triangle for the mask, which kiln_compile recognises
 * (src/passes/attention.c) by evaluating the mask. */
static kiln_status build_and_run_of(kiln_context *c, bool by_hand, int *bad) {
    kiln_graph *g = NULL;
    kiln_status s = kiln_graph_create(c, "faults", &g);
    if (s) return s;
    int64_t d[4] = {1, 3, 1, 2}, ts[2] = {3, 3};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 4, d), out;
    if (by_hand) {
        int heads[4] = {0, 2, 1, 3}, kt[4] = {0, 1, 3, 2};
        kiln_value xt = kiln_transpose(g, x, heads);
        kiln_value sc = kiln_mul(g, kiln_matmul(g, xt, kiln_transpose(g, xt, kt)),
                                 kiln_scalar(g, KILN_DTYPE_F32, 0.7));
        static const bool tri[9] = {1, 0, 0, 1, 1, 0, 1, 1, 1};
        kiln_value seen = kiln_constant(g, KILN_DTYPE_BOOL, 2, ts, tri);
        sc = kiln_where(g, seen, sc, kiln_scalar(g, KILN_DTYPE_F32, -1e30));
        out = kiln_transpose(g, kiln_matmul(g, kiln_softmax(g, sc, -1), xt), heads);
    } else {
        out = kiln_dot_product_attention(g, x, x, x, &(kiln_attention_options){.is_causal = true});
    }
    s = kiln_graph_finish(g, 1, &out);
    kiln_executable *e = NULL;
    kiln_array *a = NULL, *r = NULL;
    float xv[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    if (!s) s = kiln_compile(g, NULL, &e);
    if (!s) s = kiln_array_create(c, KILN_DTYPE_F32, 4, d, xv, &a);
    if (!s) s = kiln_executable_run(e, 1, &a, 1, &r);
    if (!s) {
        kiln_array_copy_to_host(r, y, sizeof y);
        /* the first query sees only the first key: its weight is 1 but for the last bit
         * that a multiply-add contracted in one kernel and not in another may take from
         * x * scale - max (docs/ops.md, "Fused multiply-adds") */
        *bad = fabsf(y[0] - 1) > 2e-7f || fabsf(y[1] - 2) > 4e-7f;
    }
    kiln_array_destroy(r);
    kiln_array_destroy(a);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return s;
}

static kiln_status build_and_run(kiln_context *c, int *bad) {
    return build_and_run_of(c, false, bad);
}

/* Every allocation of the recognition (src/passes/attention.c: its tables, the mask's
 * evaluation, the rebuilt graph) failed in turn. */
static kiln_status build_and_run_written(kiln_context *c, int *bad) {
    return build_and_run_of(c, true, bad);
}

/* The same on a backend without the kernel: every allocation of the expansion into the
 * primitive form (src/passes/expand.c) failed in turn is that failure, named, never
 * INTERNAL (fault_sweep_run checks the status and message of each failed run). */
static kiln_status build_and_run_expanded(kiln_context *c, int *bad) {
    kn_backend *b = without_kernel(c);
    if (!b) return KILN_STATUS_HOST_OOM;
    kiln_status s = build_and_run(c, bad);
    if (s == KILN_STATUS_INTERNAL) *bad = 1;
    without_kernel_end(c, b);
    return s;
}

static void faults(void) {
    char dir[] = "/tmp/kiln-test-attention-faults-XXXXXX";
    if (!mkdtemp(dir)) return;
    fault_ctx_case fc = {dir, build_and_run, "the run succeeded with wrong results"};
    fault_sweep sw = {.name = "attention", .run = fault_in_context, .user = &fc, .max_runs = 5000};
    long n = fault_sweep_run(&sw);
    CHECK_MSG(n > 0, "no run completed");
    fault_ctx_case fe = {dir, build_and_run_expanded, "wrong results, or INTERNAL"};
    fault_sweep se = {
        .name = "attention expanded", .run = fault_in_context, .user = &fe, .max_runs = 8000};
    CHECK_MSG(fault_sweep_run(&se) > 0, "no expanded run completed");
    fault_ctx_case fw = {dir, build_and_run_written, "wrong results"};
    fault_sweep sr = {
        .name = "attention written out", .run = fault_in_context, .user = &fw, .max_runs = 8000};
    CHECK_MSG(fault_sweep_run(&sr) > 0, "no written-out run completed");
    test_remove_dir(dir);
}

int main(void) {
    char dir[] = "/tmp/kiln-test-attention-XXXXXX";
    C = test_private_context(dir);
    if (!C) return 1;
    seed = test_seed(31);
    RUN(jax_values);
    RUN(compiled_cases);
    RUN(in_a_block);
    RUN(primitive_form);
    RUN(same_bits_any_threads);
    RUN(memory);
    RUN(infinite_scores);
    RUN(very_negative_scores);
    RUN(written_out);
    RUN(finite_fill_weighs_in);
    RUN(fill_attribute);
    RUN(graph_text);
    RUN(errors);
    kiln_context_destroy(C);
    test_remove_dir(dir);
    RUN(faults);
    return test_summary("test_attention");
}
