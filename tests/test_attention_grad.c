/* test_attention_grad.c — dot_product_attention's gradient as the op's own kinds (ir.h,
 * ir_attn_kind: LSE, GRAD_Q, GRAD_K, GRAD_V; src/trace/attention.c):
 *  - the VJP through the kinds, interpreted, against the VJP of the same attention written
 *    out in this file with public primitives (products, select, softmax), whose rules
 *    share no code with the kinds; f64, every shape path (grouped heads, rank 3, T != S
 *    both ways with a causal mask, H != Hv, q = k = v);
 *  - each kind's primitive form (src/passes/expand.c) against the reference's definition,
 *    interpreted, and that it leaves no attention node; a finite fill expands whatever the
 *    backend has;
 *  - compiled against the reference in f32, f64, bf16 and f16, on the CPU's kernels and on a
 *    backend without them (the expansion, CSE sharing the recomputed probabilities);
 *  - the memory the kernels save: a training step's backward pass plans no [B, N, T, S]
 *    temporary;
 *  - second order: reverse over reverse and forward over reverse against central finite
 *    differences of the first gradient; per-example gradients under kiln_vmap;
 *  - the graph text round trip of every kind, and the errors: operand counts, the
 *    cotangent's, log-sum-exp's and delta's types, named in the message. */
#include "compare.h"
#include "backend/device.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "trace/trace.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static kiln_context *C;
static uint64_t seed;

static kiln_graph *new_graph(void) {
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_create(C, "attention_grad", &g));
    return g;
}

typedef struct grad_case {
    const char *name;
    int rank;
    int64_t B, T, S, N, K, H, Hv;
    bool causal;
    double scale; /* 0: the default */
    bool self;    /* q = k = v (one operand; T = S, N = K, H = Hv) */
} grad_case;

static const grad_case cases[] = {
    {"causal, 4 heads over 2", 4, 2, 9, 9, 4, 2, 8, 8, true, 0, false},
    {"not causal, Hv != H", 4, 1, 7, 12, 2, 2, 6, 10, false, 0.3, false},
    {"causal, T < S", 4, 2, 5, 11, 2, 1, 4, 4, true, 0, false},
    {"causal, T > S", 4, 1, 13, 6, 3, 3, 4, 5, true, 0, false},
    {"rank 3, 3 query heads a key head", 3, 1, 10, 10, 6, 2, 4, 4, true, 0, false},
    {"self-attention, q = k = v", 4, 2, 6, 6, 2, 2, 4, 4, true, 0, true},
    {"past the kernels' blocks", 4, 1, 150, 150, 2, 1, 16, 16, true, 0, false},
    /* empty operands (a fuzz_builder finding: an empty v made the reference skip lse) */
    {"no features, H = Hv = 0", 4, 1, 5, 5, 2, 2, 0, 0, true, 0.5, false},
    {"no value features, Hv = 0", 4, 1, 5, 7, 2, 1, 4, 0, true, 0, false},
    {"no queries, T = 0", 4, 2, 0, 5, 2, 2, 4, 4, true, 0, false},
};

static void case_dims(const grad_case *c, int64_t *qd, int64_t *kd, int64_t *vd, int64_t *od) {
    int o = c->rank - 3;
    if (o) qd[0] = kd[0] = vd[0] = od[0] = c->B;
    qd[o] = c->T, qd[o + 1] = c->N, qd[o + 2] = c->H;
    kd[o] = c->S, kd[o + 1] = c->K, kd[o + 2] = c->H;
    vd[o] = c->S, vd[o + 1] = c->K, vd[o + 2] = c->Hv;
    od[o] = c->T, od[o + 1] = c->N, od[o + 2] = c->Hv;
}

/* The attention of case c written out with public primitives, independently of
 * src/trace/attention.c: per (b, n), softmax(scale q k^T, causal mask) v, with key head
 * n / G gathered by a broadcast and reshape, at the operands' rank. */
static kiln_value written_out(kiln_graph *g, const grad_case *c, kiln_value q, kiln_value k,
                              kiln_value v, kiln_dtype t) {
    int64_t B = c->B, T = c->T, S = c->S, N = c->N, K = c->K, G = N / K;
    if (c->rank == 3) {
        q = kiln_reshape(g, q, 4, (int64_t[]){1, T, N, c->H});
        k = kiln_reshape(g, k, 4, (int64_t[]){1, S, K, c->H});
        v = kiln_reshape(g, v, 4, (int64_t[]){1, S, K, c->Hv});
        B = 1;
    }
    if (G > 1) { /* [B, S, K, X] -> [B, S, K, G, X] -> [B, S, N, X] */
        k = kiln_reshape(
            g, kiln_broadcast_in_dim(g, k, 5, (int64_t[]){B, S, K, G, c->H}, (int[]){0, 1, 2, 4}),
            4, (int64_t[]){B, S, N, c->H});
        v = kiln_reshape(
            g, kiln_broadcast_in_dim(g, v, 5, (int64_t[]){B, S, K, G, c->Hv}, (int[]){0, 1, 2, 4}),
            4, (int64_t[]){B, S, N, c->Hv});
    }
    int perm[4] = {0, 2, 1, 3};
    kiln_value qt = kiln_transpose(g, q, perm), kt = kiln_transpose(g, k, perm),
               vt = kiln_transpose(g, v, perm); /* [B, N, L, X] */
    double scale = c->scale ? c->scale : 1 / sqrt((double)c->H);
    kiln_value s = kiln_mul(g, kiln_matmul(g, qt, kiln_transpose(g, kt, (int[]){0, 1, 3, 2})),
                            kiln_scalar(g, t, scale));
    if (c->causal) {
        kiln_value mask = kiln_broadcast_in_dim(
            g,
            kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, (int64_t[]){T, S}, 1),
                         kiln_iota(g, KILN_DTYPE_I32, 2, (int64_t[]){T, S}, 0), KILN_CMP_LE),
            4, (int64_t[]){B, N, T, S}, (int[]){2, 3});
        s = kiln_select(g, mask, s, kiln_full(g, t, 4, (int64_t[]){B, N, T, S}, -1e300));
    }
    kiln_value o = kiln_transpose(g, kiln_matmul(g, kiln_softmax(g, s, -1), vt), perm);
    if (c->rank == 3) o = kiln_reshape(g, o, 3, (int64_t[]){T, N, c->Hv});
    return o;
}

/* Builds (out, dq, dk, dv) of case c: the op (or the written-out form) and its VJP for a
 * cotangent parameter ct. Parameters: q, k, v, ct (self: x, ct). */
static kiln_graph *vjp_graph(const grad_case *c, kiln_dtype t, bool written) {
    kiln_graph *g = new_graph();
    int64_t qd[4], kd[4], vd[4], od[4];
    case_dims(c, qd, kd, vd, od);
    kiln_value q = kiln_parameter(g, c->self ? "x" : "q", t, c->rank, qd);
    kiln_value k = c->self ? q : kiln_parameter(g, "k", t, c->rank, kd);
    kiln_value v = c->self ? q : kiln_parameter(g, "v", t, c->rank, vd);
    kiln_value ct = kiln_parameter(g, "ct", t, c->rank, od);
    kiln_value out =
        written
            ? written_out(g, c, q, k, v, t)
            : kiln_dot_product_attention(
                  g, q, k, v, &(kiln_attention_options){.scale = c->scale, .is_causal = c->causal});
    kiln_value wrt[3] = {q, k, v}, grads[3] = {{0}}, outs[4];
    int n = c->self ? 1 : 3;
    CHECK_OK(C, kiln_vjp(g, 1, &out, &ct, n, wrt, grads));
    outs[0] = out;
    for (int i = 0; i < n; i++) outs[1 + i] = grads[i];
    CHECK_OK(C, kiln_graph_finish(g, 1 + n, outs));
    return g;
}

static int n_args(const grad_case *c) {
    return c->self ? 2 : 4;
}

static void case_args(const grad_case *c, kiln_dtype t, kiln_array **args) {
    int64_t qd[4], kd[4], vd[4], od[4];
    case_dims(c, qd, kd, vd, od);
    int i = 0;
    args[i++] = cmp_random_array(C, t, c->rank, qd, &seed);
    if (!c->self) {
        args[i++] = cmp_random_array(C, t, c->rank, kd, &seed);
        args[i++] = cmp_random_array(C, t, c->rank, vd, &seed);
    }
    args[i] = cmp_random_array(C, t, c->rank, od, &seed);
}

static void free_args(kiln_array **a, int n) {
    for (int i = 0; i < n; i++) kiln_array_destroy(a[i]);
}

static int count_kind(const kiln_graph *g, int kind) {
    int n = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++)
        n += g->nodes[id].op == IR_ATTENTION && g->nodes[id].a.attn.kind == kind;
    return n;
}

/* Graphs g and x of case c (the same parameters and outputs) interpreted on one set of
 * f64 arguments, their outputs compared. */
static void same_outputs(const grad_case *c, kiln_graph *g, kiln_graph *x, const char *what) {
    int na = n_args(c), no = c->self ? 2 : 4;
    kiln_array *args[4], *got[4] = {0}, *want[4] = {0};
    case_args(c, KILN_DTYPE_F64, args);
    CHECK_OK(C, kiln_interpret(g, na, args, no, want));
    CHECK_OK(C, kiln_interpret(x, na, args, no, got));
    for (int o = 0; o < no; o++)
        if (got[o] && want[o])
            CHECK_MSG(cmp_arrays(got[o], want[o], 1e-6, 1e-11, what), "%s, output %d", c->name, o);
    free_args(got, no), free_args(want, no), free_args(args, na);
}

/* ---------------------------------------------- against the written-out VJP ---- */

static void against_written_out(void) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const grad_case *c = &cases[i];
        if (c->T > 64) continue; /* the interpreter's f64 [T, S] products */
        kiln_graph *g = vjp_graph(c, KILN_DTYPE_F64, false);
        kiln_graph *w = vjp_graph(c, KILN_DTYPE_F64, true);
        CHECK_MSG(count_kind(g, IR_ATTN_LSE) == 1 && count_kind(g, IR_ATTN_GRAD_Q) == 1 &&
                      count_kind(g, IR_ATTN_GRAD_K) == 1 && count_kind(g, IR_ATTN_GRAD_V) == 1,
                  "%s: the VJP is not the gradient's kinds", c->name);
        same_outputs(c, w, g, "vjp");
        kiln_graph_destroy(g), kiln_graph_destroy(w);
    }
}

/* ----------------------------------------------------------- primitive form ---- */

static void primitive_forms(void) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const grad_case *c = &cases[i];
        if (c->T > 64) continue;
        kiln_graph *g = vjp_graph(c, KILN_DTYPE_F64, false), *x = NULL;
        CHECK_OK(C, pass_expand_run(g, PASS_EXPAND_ATTENTION_GRAD, &x));
        if (!x) {
            CHECK_MSG(false, "%s: nothing expanded", c->name);
            kiln_graph_destroy(g);
            continue;
        }
        CHECK_MSG(count_kind(x, IR_ATTN_FORWARD) == 1, "%s: the forward pass was expanded",
                  c->name);
        for (int kind = IR_ATTN_LSE; kind <= IR_ATTN_GRAD_V; kind++)
            CHECK_MSG(!count_kind(x, kind), "%s: a %s node is left", c->name,
                      ir_attn_kind_name(kind));
        CHECK_OK(C, ir_verify(x));
        same_outputs(c, g, x, "primitive form");
        kiln_graph_destroy(x), kiln_graph_destroy(g);
    }
}

/* A finite fill (a written-out attention's -1e30, kept by src/passes/attention.c): the
 * unseen keys weigh in through v, and the kinds expand on every backend. */
static void finite_fill(void) {
    kiln_graph *g = new_graph();
    int64_t d[4] = {1, 6, 2, 4};
    kiln_dtype t = KILN_DTYPE_F64;
    kiln_value q = kiln_parameter(g, "q", t, 4, d), k = kiln_parameter(g, "k", t, 4, d),
               v = kiln_parameter(g, "v", t, 4, d), ct = kiln_parameter(g, "ct", t, 4, d);
    kiln_value out = trace_attention(g, q, k, v, 0.6, true, 0.3), grads[3];
    CHECK_OK(C, kiln_vjp(g, 1, &out, &ct, 3, (kiln_value[]){q, k, v}, grads));
    kiln_value outs[4] = {out, grads[0], grads[1], grads[2]};
    CHECK_OK(C, kiln_graph_finish(g, 4, outs));
    kiln_graph *x = NULL;
    CHECK_OK(C, pass_expand_run(g, 0, &x));
    CHECK_MSG(x && count_kind(x, IR_ATTN_FORWARD) == 1 && !count_kind(x, IR_ATTN_GRAD_V),
              "a finite fill's gradient kinds are not expanded");
    kiln_array *args[4];
    for (int i = 0; i < 4; i++) args[i] = cmp_random_array(C, t, 4, d, &seed);
    CHECK(cmp_graph(C, g, 4, args, NULL, 1e-5, NULL));
    free_args(args, 4);
    kiln_graph_destroy(x), kiln_graph_destroy(g);
}

/* ----------------------------------------------------------------- compiled ---- */

/* The CPU's library ops but the gradient's kernels. */
static bool supports_but_grad(void *state, int device, kn_lib_op op, const kn_lib_desc *d) {
    return op != KN_LIB_ATTENTION_GRAD && kn_cpu_backend.lib_supports(state, device, op, d);
}

static kn_backend *without_grad_kernels(kiln_context *c) {
    kn_backend *b = malloc(sizeof *b);
    if (!b) return NULL;
    *b = *c->devices[0].backend;
    b->lib_supports = supports_but_grad;
    c->devices[0].backend = b;
    return b;
}

static void without_end(kiln_context *c, kn_backend *b) {
    if (b) c->devices[0].backend = &kn_cpu_backend, free(b);
}

static void compiled(void) {
    static const kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_BF16,
                                     KILN_DTYPE_F16};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
            for (int kernels = 1; kernels >= 0; kernels--) {
                const grad_case *c = &cases[i];
                kiln_dtype t = dts[d];
                kiln_graph *g = vjp_graph(c, t, false);
                kiln_array *args[4];
                case_args(c, t, args);
                kn_backend *b = kernels ? NULL : without_grad_kernels(C);
                /* the kernels compute in f32 and round once; the expansion rounds dp and ds
                 * to the dtype, and ds = p (dp - delta) cancels (so did the written-out VJP) */
                double tol = kernels || !(t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16) ? 1e-5
                             : t == KILN_DTYPE_BF16                                    ? 0.1
                                                                                       : 0.02;
                CHECK_MSG(cmp_graph(C, g, n_args(c), args, NULL, tol, NULL), "%s, %s, %s", c->name,
                          kiln_dtype_name(t), kernels ? "kernels" : "expanded");
                without_end(C, b);
                free_args(args, n_args(c));
                kiln_graph_destroy(g);
            }
}

/* A training step's memory: with the kernels, no [B, N, T, S] array anywhere, and four
 * attention kernels: the forward pass writing the rows' log-sum-exp beside its output (the
 * LSE node fused into it), then dq, dk and dv. */
static void memory(void) {
    grad_case c = {"memory", 4, 2, 256, 256, 4, 4, 32, 32, true, 0, false};
    kiln_graph *g = vjp_graph(&c, KILN_DTYPE_F32, false);
    kiln_executable *fused = NULL, *prims = NULL;
    kiln_compile_options listed = {.keep_ir = true};
    CHECK_OK(C, kiln_compile(g, &listed, &fused));
    char *text = fused ? kiln_executable_to_string(fused) : NULL;
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, " attention writes ")); p++) n++;
    CHECK_MSG(n == 4, "%d attention kernels, want 4:\n%s", n, text ? text : "");
    kiln_string_free(C, text);
    kn_backend *b = without_grad_kernels(C);
    CHECK_OK(C, kiln_compile(g, NULL, &prims));
    without_end(C, b);
    if (fused && prims) {
        kiln_memory_analysis a, p;
        CHECK_OK(C, kiln_executable_get_memory_analysis(fused, &a));
        CHECK_OK(C, kiln_executable_get_memory_analysis(prims, &p));
        uint64_t scores = (uint64_t)(c.B * c.N * c.T * c.S) * 4;
        CHECK_MSG(a.temp_bytes < scores / 2, "kernels: %llu temporary bytes, the scores are %llu",
                  (unsigned long long)a.temp_bytes, (unsigned long long)scores);
        CHECK_MSG(p.temp_bytes >= scores, "expanded: %llu temporary bytes",
                  (unsigned long long)p.temp_bytes);
    }
    kiln_executable_destroy(fused), kiln_executable_destroy(prims);
    kiln_graph_destroy(g);
}

/* ------------------------------------------------------------- second order ---- */

/* f(q, k, v) = sum(w * dq) + sum(w2 * dk) + sum(w3 * dv) for the VJP of attention with a
 * fixed cotangent: reverse over reverse gives its gradient in q, which central finite
 * differences of f (interpreted, f64) check. */
static void second_order(void) {
    const grad_case *c = &cases[0];
    kiln_dtype t = KILN_DTYPE_F64;
    int64_t qd[4], kd[4], vd[4], od[4];
    case_dims(c, qd, kd, vd, od);
    kiln_graph *g = new_graph();
    kiln_value q = kiln_parameter(g, "q", t, 4, qd), k = kiln_parameter(g, "k", t, 4, kd),
               v = kiln_parameter(g, "v", t, 4, vd), ct = kiln_parameter(g, "ct", t, 4, od);
    kiln_value out =
        kiln_dot_product_attention(g, q, k, v, &(kiln_attention_options){.is_causal = true});
    kiln_value gr[3];
    CHECK_OK(C, kiln_vjp(g, 1, &out, &ct, 3, (kiln_value[]){q, k, v}, gr));
    kiln_value f = kiln_scalar(g, t, 0);
    for (int i = 0; i < 3; i++) /* weights that tell the three gradients' elements apart */
        f = kiln_add(g, f,
                     kiln_reduce_sum(g, kiln_mul(g, kiln_sin(g, gr[i]), gr[i]), 0, NULL, false));
    kiln_value h[3];
    CHECK_OK(C, kiln_grad(g, f, 3, (kiln_value[]){q, k, v}, h));
    /* forward over reverse: the directional derivative of f along (dq, dk, dv) = (1, 0, 0) */
    kiln_value one = kiln_broadcast_in_dim(g, kiln_scalar(g, t, 1), 4, qd, NULL), jf;
    CHECK_OK(C, kiln_jvp(g, 1, &f, 1, &q, &one, &jf));
    kiln_value outs[5] = {f, h[0], h[1], h[2], jf};
    CHECK_OK(C, kiln_graph_finish(g, 5, outs));
    kiln_array *args[4];
    case_args(c, t, args);
    kiln_array *res[5] = {0};
    CHECK_OK(C, kiln_interpret(g, 4, args, 5, res));
    double *x[3];
    int64_t len[3];
    for (int a = 0; a < 3; a++) {
        len[a] = kiln_array_size(args[a]);
        x[a] = malloc((size_t)len[a] * sizeof(double));
        kiln_array_copy_to_host(args[a], x[a], (size_t)len[a] * sizeof(double));
    }
    double eps = 1e-5, dir = 0;
    for (int a = 0; a < 3; a++) {
        double *hv = malloc((size_t)len[a] * sizeof(double));
        if (res[1 + a]) kiln_array_copy_to_host(res[1 + a], hv, (size_t)len[a] * sizeof(double));
        for (int64_t e = 0; e < len[a]; e += 7) { /* a sample of the elements */
            double fv[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                double keep = x[a][e];
                x[a][e] = keep + (sgn ? -eps : eps);
                kiln_array *moved = NULL, *fr[5] = {0};
                CHECK_OK(C, kiln_array_create(C, t, 4,
                                              a == 0   ? qd
                                              : a == 1 ? kd
                                                       : vd,
                                              x[a], &moved));
                kiln_array *a2[4] = {args[0], args[1], args[2], args[3]};
                a2[a] = moved;
                CHECK_OK(C, kiln_interpret(g, 4, a2, 5, fr));
                fv[sgn] = 0;
                if (fr[0]) kiln_array_copy_to_host(fr[0], &fv[sgn], sizeof(double));
                free_args(fr, 5), kiln_array_destroy(moved);
                x[a][e] = keep;
            }
            double fd = (fv[0] - fv[1]) / (2 * eps);
            CHECK_MSG(fabs(fd - hv[e]) <= 1e-5 * (1 + fabs(fd)),
                      "reverse over reverse, operand %d element %lld: %.12g, finite "
                      "differences %.12g",
                      a, (long long)e, hv[e], fd);
        }
        if (a == 0)
            for (int64_t e = 0; e < len[0]; e++) dir += hv[e];
        free(hv);
    }
    double jv = 0;
    if (res[4]) kiln_array_copy_to_host(res[4], &jv, sizeof jv);
    CHECK_MSG(fabs(jv - dir) <= 1e-9 * (1 + fabs(dir)),
              "forward over reverse %.15g, the reverse gradient's sum %.15g", jv, dir);
    for (int a = 0; a < 3; a++) free(x[a]);
    free_args(res, 5), free_args(args, 4);
    kiln_graph_destroy(g);
}

/* The kinds take lse as given: one below the scores (a graph written by hand) gives
 * probabilities above 1, which the kernels compute as the reference does (exp of a positive
 * argument). */
static void lse_as_given(void) {
    static const char *const text =
        "graph t(%1: f32[2,1,4] \"q\", %2: f32[2,1] \"l\", %3: f32[2,1] \"d\", %4: f32[2,1,4] "
        "\"c\") {\n"
        "  %1 = parameter 0 \"q\" : f32[2,1,4]\n  %2 = parameter 1 \"l\" : f32[2,1]\n"
        "  %3 = parameter 2 \"d\" : f32[2,1]\n  %4 = parameter 3 \"c\" : f32[2,1,4]\n"
        "  %5 = dot_product_attention(%1, %1, %1, %4, %2, %3) scale=1 grad_v : f32[2,1,4]\n"
        "  %6 = dot_product_attention(%1, %1, %1, %4, %2, %3) scale=1 grad_q : f32[2,1,4]\n"
        "  return (%5, %6)\n}\n";
    kiln_graph *g = NULL;
    CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "lse", &g));
    static const float q[8] = {1, 1, 0, 0, 1, 0, 1, 0}, c[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    static const float lse[2][2] = {{0, 0}, {-40, 1}}; /* p up to e^42, within f32 */
    static const float d[2] = {0.5f, -0.25f};
    for (int i = 0; g && i < 2; i++) {
        kiln_array *a[4] = {0};
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 3, (int64_t[]){2, 1, 4}, q, &a[0]));
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 2, (int64_t[]){2, 1}, lse[i], &a[1]));
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 2, (int64_t[]){2, 1}, d, &a[2]));
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 3, (int64_t[]){2, 1, 4}, c, &a[3]));
        CHECK_MSG(cmp_graph(C, g, 4, a, NULL, 1e-5, NULL), "lse %g, %g", lse[i][0], lse[i][1]);
        free_args(a, 4);
    }
    kiln_graph_destroy(g);
}

/* A NaN in one query row (row 0, causal): the reference reads no key a row does not see,
 * so every other row's gradients are finite there; the kernels and the primitive form
 * multiply the row's zero probabilities by its NaN within a block of keys, as JAX's
 * softmax does over the whole row (docs/ops.md). Each element is the reference's or NaN,
 * and dq's other rows, which row 0 does not reach, are the reference's. */
static void nan_in_a_row(void) {
    const grad_case *c = &cases[0];
    for (int kernels = 1; kernels >= 0; kernels--) {
        kiln_graph *g = vjp_graph(c, KILN_DTYPE_F32, false);
        kiln_array *args[4];
        case_args(c, KILN_DTYPE_F32, args);
        size_t nb = kiln_array_nbytes(args[0]);
        float *hq = malloc(nb);
        kiln_array_copy_to_host(args[0], hq, nb);
        hq[1] = NAN; /* q[0, 0, 0, 1] */
        int64_t qd[4], kd[4], vd[4], od[4];
        case_dims(c, qd, kd, vd, od);
        kiln_array_destroy(args[0]);
        CHECK_OK(C, kiln_array_create(C, KILN_DTYPE_F32, 4, qd, hq, &args[0]));
        free(hq);
        kiln_array *want[4] = {0}, *got[4] = {0};
        kiln_executable *e = NULL;
        kn_backend *b = kernels ? NULL : without_grad_kernels(C);
        CHECK_OK(C, kiln_compile(g, NULL, &e));
        without_end(C, b);
        CHECK_OK(C, kiln_interpret(g, 4, args, 4, want));
        if (e) CHECK_OK(C, kiln_executable_run(e, 4, args, 4, got));
        for (int o = 1; o < 4 && got[o] && want[o]; o++) {
            int64_t n = kiln_array_size(want[o]), bad = 0;
            float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
            kiln_array_copy_to_host(got[o], x, (size_t)n * 4);
            kiln_array_copy_to_host(want[o], y, (size_t)n * 4);
            int64_t row = c->N * c->H; /* dq's elements of one query position */
            for (int64_t i = 0; i < n; i++) {
                bool same =
                    isnan(y[i]) ? isnan(x[i]) : fabsf(x[i] - y[i]) <= 1e-4f * (1 + fabsf(y[i]));
                bad += !same && !(isnan(x[i]) && !(o == 1 && i % (c->T * row) >= row));
            }
            CHECK_MSG(!bad, "%s, gradient %d: %lld elements neither the reference's nor NaN",
                      kernels ? "kernels" : "expanded", o - 1, (long long)bad);
            free(x), free(y);
        }
        free_args(want, 4), free_args(got, 4), free_args(args, 4);
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
}

/* ----------------------------------------------------------------- text ---- */

/* Every kind's text read back: a causal bf16 gradient, a not causal one, and a finite
 * fill's (the fill written before the kind). */
static void text_round_trip(kiln_graph *g) {
    char *text = kiln_graph_to_string(g), *again = NULL;
    kiln_graph *l = NULL;
    if (text) CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "text", &l));
    if (l) again = kiln_graph_to_string(l);
    CHECK_MSG(again && text && !strcmp(text, again), "round trip:\n%s\n%s", text,
              again ? again : "");
    kiln_string_free(C, text), kiln_string_free(C, again);
    kiln_graph_destroy(l);
}

static void graph_text(void) {
    kiln_graph *nc = vjp_graph(&cases[1], KILN_DTYPE_F32, false);
    text_round_trip(nc);
    kiln_graph_destroy(nc);
    kiln_graph *ff = new_graph();
    int64_t d[4] = {1, 6, 2, 4};
    kiln_value q = kiln_parameter(ff, "q", KILN_DTYPE_F32, 4, d),
               ct = kiln_parameter(ff, "ct", KILN_DTYPE_F32, 4, d), grads[3];
    kiln_value out = trace_attention(ff, q, q, q, 0.6, true, -1e30);
    CHECK_OK(C, kiln_vjp(ff, 1, &out, &ct, 1, &q, grads));
    CHECK_OK(C, kiln_graph_finish(ff, 1, grads));
    text_round_trip(ff);
    kiln_graph_destroy(ff);
    kiln_graph *g = vjp_graph(&cases[0], KILN_DTYPE_BF16, false);
    char *text = kiln_graph_to_string(g), *again = NULL;
    for (int kind = IR_ATTN_LSE; kind <= IR_ATTN_GRAD_V; kind++) {
        char word[16];
        snprintf(word, sizeof word, " %s", ir_attn_kind_name(kind));
        CHECK_MSG(text && strstr(text, word), "no%s in\n%s", word, text ? text : "");
    }
    CHECK(text && !strstr(text, " forward")); /* the default is not written */
    kiln_graph *l = NULL;
    if (text) CHECK_OK(C, kiln_graph_parse(C, text, strlen(text), "text", &l));
    if (l) again = kiln_graph_to_string(l);
    CHECK_MSG(again && text && !strcmp(text, again), "round trip:\n%s\n%s", text,
              again ? again : "");
    kiln_string_free(C, text), kiln_string_free(C, again);
    kiln_graph_destroy(l), kiln_graph_destroy(g);
}

#define HDR                                                                                        \
    "graph t(%1: f32[1,2,1,4] \"q\", %2: f32[1,2,1] \"l\", %3: f64[1,2,1] \"d\") {\n"              \
    "  %1 = parameter 0 \"q\" : f32[1,2,1,4]\n  %2 = parameter 1 \"l\" : f32[1,2,1]\n"             \
    "  %3 = parameter 2 \"d\" : f64[1,2,1]\n"

static void errors(void) {
    static const struct {
        const char *text, *why;
    } bad[] = {
        {HDR "  %4 = dot_product_attention(%1, %1, %1) scale=1 lse : f32[1,2,1]\n"
             "  return (%4)\n}\n",
         "lse kind takes 2 operands, not 3"},
        {HDR "  %4 = dot_product_attention(%1, %1, %1, %1, %2) scale=1 grad_q : f32[1,2,1,4]\n"
             "  return (%4)\n}\n",
         "grad_q kind takes 6 operands, not 5"},
        {HDR "  %4 = dot_product_attention(%1, %1, %1, %1, %2, %3) scale=1 grad_k : "
             "f32[1,2,1,4]\n  return (%4)\n}\n",
         "delta must be f32[1,2,1], not f64[1,2,1]"},
        {HDR "  %4 = dot_product_attention(%1, %1, %1, %1, %1, %2) scale=1 grad_v : "
             "f32[1,2,1,4]\n  return (%4)\n}\n",
         "the log-sum-exp must be f32[1,2,1], not f32[1,2,1,4]"},
        {HDR "  %4 = dot_product_attention(%1, %1, %1, %2, %2, %2) scale=1 grad_q : "
             "f32[1,2,1,4]\n  return (%4)\n}\n",
         "the output's cotangent must be f32[1,2,1,4], not f32[1,2,1]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kiln_graph *l = NULL;
        CHECK_MSG(kiln_graph_parse(C, bad[i].text, strlen(bad[i].text), "bad", &l) !=
                      KILN_STATUS_OK,
                  "text %zu loaded", i);
        CHECK_CONTAINS(kiln_last_error(C), bad[i].why);
        kiln_graph_destroy(l);
    }
}

int main(void) {
    char dir[] = "/tmp/kiln-test-attention-grad-XXXXXX";
    C = test_private_context(dir);
    if (!C) return 1;
    seed = test_seed(37);
    RUN(against_written_out);
    RUN(primitive_forms);
    RUN(finite_fill);
    RUN(compiled);
    RUN(memory);
    RUN(second_order);
    RUN(lse_as_given);
    RUN(nan_in_a_row);
    RUN(graph_text);
    RUN(errors);
    kiln_context_destroy(C);
    test_remove_dir(dir);
    return test_summary("test_attention_grad");
}
