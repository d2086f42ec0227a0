/* bench_programs.c — kiln's side of issue 14's programs, run side by side with
 * JAX and NumPy by bench/programs/run.sh (programs.py is the other side).
 *
 * Usage: bench_programs DIR REPS PROGRAM SIZES...
 *   embed B T V D H C   take_rows of a [V, D] table by [B, T] tokens, mean over T, then
 *                       relu(x W1 + b1) W2 + b2 with W1 [D, H], W2 [H, C]
 *   rope B T NH DH      rotary embedding of x [B, T, NH, DH] with the pairs (2i, 2i+1)
 *                       rotated: reshape to [..., DH/2, 2], slice, rotate, concatenate
 *                       back on a new last axis, reshape to [B, T, NH, DH]
 *   block B T C         a LLaMA-style block forward: rms-norm (from primitives), causal
 *                       attention with C/64 heads, residual, rms-norm, SwiGLU MLP of
 *                       hidden 8C/3 rounded to 64, residual
 *   block_sdpa B T C    the same block with its attention as one call:
 *                       kiln_dot_product_attention (causal), jax.nn.dot_product_attention
 *   attn B T N K H      causal dot_product_attention alone: q [B, T, N, H], k and v
 *                       [B, T, K, H] (N / K query heads per key/value head)
 *   xent N V            mean softmax cross-entropy of logits [N, V] and its gradient
 *   adam P              one Adam step over P f32 parameters, parameters and state donated
 *   cumsum R N          x [R, N] f32: cumsum along N, and cumsum along R reversed
 *   reduce R N          x [R, N] f32: sum and max along N, sum along R, softmax along N
 *   embed_grad B T V D  mean of the squares of a [V, D] table's rows gathered by [B, T]
 *                       tokens, and its gradient with respect to the table (a scatter-add
 *                       of the rows into zeros, as an embedding's backward pass is)
 *   posenc B T D        x [B, T, D] plus sinusoidal positional encodings computed in the
 *                       program: sin and cos of t / 10000^(2i / D), interleaved
 *   trig N              x [N] in [-60, 60]: sin x, cos x, and sin x cos x + x
 *   transpose R C       x [R, C] f32 transposed
 *   nhwc N C H W        x [N, C, H, W] f32 to [N, H, W, C]
 *   fourier N D F       random Fourier features of points x [N, D] with frequencies
 *                       B [D, F]: sin and cos of 2 pi x B side by side, [N, 2F]
 *   axes B N C          x [B, N, C] normalised along its middle axis N: softmax,
 *                       logsumexp and an RMS norm (B = 1: a matrix's first axis)
 *   math64 N            x [N] f64 in [-8, 8]: exp x, tanh x, logistic x, log(x^2 + 1)
 * Writes the inputs to DIR (raw little-endian, names in programs.py) so every side computes
 * on the same numbers, and kiln's outputs after the first run (out<i>.bin) for the
 * comparison; then prints "kiln_ms <median>" over REPS (>= 20) runs after 3 warm-ups, each
 * run a whole kiln_executable_run (the donated program feeds its outputs back), and
 * "kiln_first_ms": the first call, wall clock of compiling (with the cache KILN_CACHE_DIR
 * names: run.sh gives each program an empty one) and the first run (tracing, which takes
 * well under a millisecond, is left out with the making of the inputs), and
 * "kiln_compile_ms", the compile alone. Sizes come
 * from the command line: nothing here is tuned for one shape. Not a test: never fails on
 * time. BENCH_CLOCK=cpu times each run in the process's CPU time instead of the wall clock:
 * with one thread that is the run's time on an idle core, which a loaded machine does not
 * inflate by preempting it (run.sh, CLOCK=cpu; programs.py does the same for JAX). */
#include "kiln.h"
#include "../bench_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_ARGS = 16, WARMUP = 3 };

/* Seconds of CPU time used by every thread of the process. */
static double process_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct prog {
    kiln_context *ctx;
    const char *dir;
    int n_args;
    kiln_array *args[MAX_ARGS];
    int n_donate;
    uint64_t rng;
} prog;

static int64_t numel(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* A parameter of g and its argument, the n elements of v (malloc'd, freed here), written
 * to DIR/in<i>.bin for the other sides. */
static kiln_value arg_of(prog *p, kiln_graph *g, kiln_dtype t, int rank, const int64_t *dims,
                         void *v) {
    char name[32];
    snprintf(name, sizeof name, "in%d.bin", p->n_args);
    bench_write_file(p->dir, name, v, (size_t)numel(rank, dims) * kiln_dtype_itemsize(t));
    DIE(p->ctx, kiln_array_create(p->ctx, t, rank, dims, v, &p->args[p->n_args]));
    free(v);
    snprintf(name, sizeof name, "a%d", p->n_args++);
    return kiln_parameter(g, name, t, rank, dims);
}

static void *buffer(int64_t n, size_t item) {
    void *v = malloc((size_t)n * item + item);
    if (!v) exit(1);
    return v;
}

/* f32 uniform in [lo, hi). */
static kiln_value arg_f32(prog *p, kiln_graph *g, int rank, const int64_t *dims, double lo,
                          double hi) {
    int64_t n = numel(rank, dims);
    float *v = buffer(n, sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * bench_uniform(&p->rng));
    return arg_of(p, g, KILN_DTYPE_F32, rank, dims, v);
}

/* f64 uniform in [lo, hi). */
static kiln_value arg_f64(prog *p, kiln_graph *g, int rank, const int64_t *dims, double lo,
                          double hi) {
    int64_t n = numel(rank, dims);
    double *v = buffer(n, sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * bench_uniform(&p->rng);
    return arg_of(p, g, KILN_DTYPE_F64, rank, dims, v);
}

/* i32 uniform in [0, n). */
static kiln_value arg_i32(prog *p, kiln_graph *g, int rank, const int64_t *dims, int64_t hi) {
    int64_t n = numel(rank, dims);
    int32_t *v = buffer(n, sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(bench_uniform(&p->rng) * (double)hi);
    return arg_of(p, g, KILN_DTYPE_I32, rank, dims, v);
}

static kiln_value dense(kiln_graph *g, kiln_value x, kiln_value w, kiln_value b) {
    return kiln_add(g, kiln_matmul(g, x, w), b);
}

static kiln_value rms_norm(kiln_graph *g, kiln_value x, kiln_value gain) {
    int last = -1;
    kiln_value ms = kiln_mean(g, kiln_mul(g, x, x), 1, &last, true);
    kiln_value r = kiln_rsqrt(g, kiln_add(g, ms, kiln_scalar(g, KILN_DTYPE_F32, 1e-6)));
    return kiln_mul(g, kiln_mul(g, x, r), gain);
}

static int trace_embed(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t B = s[0], T = s[1], V = s[2], D = s[3], H = s[4], C = s[5];
    kiln_value tok = arg_i32(p, g, 2, (int64_t[]){B, T}, V);
    kiln_value table = arg_f32(p, g, 2, (int64_t[]){V, D}, -1, 1);
    kiln_value w1 = arg_f32(p, g, 2, (int64_t[]){D, H}, -0.1, 0.1);
    kiln_value b1 = arg_f32(p, g, 1, (int64_t[]){H}, -0.1, 0.1);
    kiln_value w2 = arg_f32(p, g, 2, (int64_t[]){H, C}, -0.1, 0.1);
    kiln_value b2 = arg_f32(p, g, 1, (int64_t[]){C}, -0.1, 0.1);
    int ax = 1;
    kiln_value x = kiln_mean(g, kiln_take_rows(g, table, tok), 1, &ax, false);
    outs[0] = dense(g, kiln_relu(g, dense(g, x, w1, b1)), w2, b2);
    return 1;
}

static int trace_rope(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t B = s[0], T = s[1], NH = s[2], DH = s[3], P = DH / 2;
    kiln_value x = arg_f32(p, g, 4, (int64_t[]){B, T, NH, DH}, -1, 1);
    kiln_value cs = arg_f32(p, g, 2, (int64_t[]){T, P}, -1, 1);
    kiln_value sn = arg_f32(p, g, 2, (int64_t[]){T, P}, -1, 1);
    int64_t d5[5] = {B, T, NH, P, 2}, d4[4] = {B, T, NH, P};
    kiln_value x5 = kiln_reshape(g, x, 5, d5);
    int64_t lo0[5] = {0}, lo1[5] = {0, 0, 0, 0, 1}, hi0[5] = {B, T, NH, P, 1},
            hi1[5] = {B, T, NH, P, 2};
    kiln_value x0 = kiln_reshape(g, kiln_slice(g, x5, lo0, hi0, NULL), 4, d4);
    kiln_value x1 = kiln_reshape(g, kiln_slice(g, x5, lo1, hi1, NULL), 4, d4);
    int bd[2] = {1, 3};
    kiln_value c = kiln_broadcast_in_dim(g, cs, 4, d4, bd);
    kiln_value sv = kiln_broadcast_in_dim(g, sn, 4, d4, bd);
    kiln_value y0 = kiln_sub(g, kiln_mul(g, x0, c), kiln_mul(g, x1, sv));
    kiln_value y1 = kiln_add(g, kiln_mul(g, x0, sv), kiln_mul(g, x1, c));
    kiln_value parts[2] = {kiln_reshape(g, y0, 5, (int64_t[]){B, T, NH, P, 1}),
                           kiln_reshape(g, y1, 5, (int64_t[]){B, T, NH, P, 1})};
    outs[0] = kiln_reshape(g, kiln_concatenate(g, 2, parts, 4), 4, (int64_t[]){B, T, NH, DH});
    return 1;
}

/* The block; sdpa: its attention as one call (kiln_dot_product_attention, JAX's side
 * jax.nn.dot_product_attention), not written out with products, a select and softmax. */
static int block_of(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs, bool sdpa) {
    int64_t B = s[0], T = s[1], C = s[2], NH = C / 64 ? C / 64 : 1, DH = C / NH;
    int64_t F = (8 * C / 3 + 63) / 64 * 64;
    double sc = 1 / sqrt((double)C), sf = 1 / sqrt((double)F);
    kiln_value x = arg_f32(p, g, 3, (int64_t[]){B, T, C}, -1, 1);
    kiln_value g1 = arg_f32(p, g, 1, (int64_t[]){C}, 0.5, 1.5);
    kiln_value wq = arg_f32(p, g, 2, (int64_t[]){C, C}, -sc, sc);
    kiln_value wk = arg_f32(p, g, 2, (int64_t[]){C, C}, -sc, sc);
    kiln_value wv = arg_f32(p, g, 2, (int64_t[]){C, C}, -sc, sc);
    kiln_value wo = arg_f32(p, g, 2, (int64_t[]){C, C}, -sc, sc);
    kiln_value g2 = arg_f32(p, g, 1, (int64_t[]){C}, 0.5, 1.5);
    kiln_value w1 = arg_f32(p, g, 2, (int64_t[]){C, F}, -sc, sc);
    kiln_value w3 = arg_f32(p, g, 2, (int64_t[]){C, F}, -sc, sc);
    kiln_value w2 = arg_f32(p, g, 2, (int64_t[]){F, C}, -sf, sf);
    kiln_value h = rms_norm(g, x, g1);
    int64_t d4[4] = {B, T, NH, DH};
    kiln_value y;
    if (sdpa) {
        y = kiln_dot_product_attention(g, kiln_reshape(g, kiln_matmul(g, h, wq), 4, d4),
                                       kiln_reshape(g, kiln_matmul(g, h, wk), 4, d4),
                                       kiln_reshape(g, kiln_matmul(g, h, wv), 4, d4),
                                       &(kiln_attention_options){.is_causal = true});
        y = kiln_reshape(g, y, 3, (int64_t[]){B, T, C});
    } else {
        int to_heads[4] = {0, 2, 1, 3}, kt[4] = {0, 1, 3, 2};
        kiln_value q = kiln_transpose(g, kiln_reshape(g, kiln_matmul(g, h, wq), 4, d4), to_heads);
        kiln_value k = kiln_transpose(g, kiln_reshape(g, kiln_matmul(g, h, wk), 4, d4), to_heads);
        kiln_value v = kiln_transpose(g, kiln_reshape(g, kiln_matmul(g, h, wv), 4, d4), to_heads);
        kiln_value att = kiln_mul(g, kiln_matmul(g, q, kiln_transpose(g, k, kt)),
                                  kiln_scalar(g, KILN_DTYPE_F32, 1 / sqrt((double)DH)));
        int64_t tt[2] = {T, T}, d4a[4] = {B, NH, T, T};
        kiln_value causal = kiln_compare(g, kiln_iota(g, KILN_DTYPE_I32, 2, tt, 1),
                                         kiln_iota(g, KILN_DTYPE_I32, 2, tt, 0), KILN_CMP_LE);
        att = kiln_select(g, kiln_broadcast_to(g, causal, 4, d4a), att,
                          kiln_full(g, KILN_DTYPE_F32, 4, d4a, -1e30));
        y = kiln_matmul(g, kiln_softmax(g, att, -1), v);
        y = kiln_reshape(g, kiln_transpose(g, y, to_heads), 3, (int64_t[]){B, T, C});
    }
    kiln_value x2 = kiln_add(g, x, kiln_matmul(g, y, wo));
    kiln_value h2 = rms_norm(g, x2, g2);
    kiln_value a = kiln_matmul(g, h2, w1);
    kiln_value gate = kiln_mul(g, a, kiln_logistic(g, a));
    outs[0] = kiln_add(g, x2, kiln_matmul(g, kiln_mul(g, gate, kiln_matmul(g, h2, w3)), w2));
    return 1;
}

static int trace_block(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    return block_of(p, g, s, outs, false);
}

static int trace_block_sdpa(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    return block_of(p, g, s, outs, true);
}

static int trace_attn(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t B = s[0], T = s[1], N = s[2], K = s[3], H = s[4];
    kiln_value q = arg_f32(p, g, 4, (int64_t[]){B, T, N, H}, -1, 1);
    kiln_value k = arg_f32(p, g, 4, (int64_t[]){B, T, K, H}, -1, 1);
    kiln_value v = arg_f32(p, g, 4, (int64_t[]){B, T, K, H}, -1, 1);
    outs[0] = kiln_dot_product_attention(g, q, k, v, &(kiln_attention_options){.is_causal = true});
    return 1;
}

static int trace_xent(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t N = s[0], V = s[1];
    kiln_value logits = arg_f32(p, g, 2, (int64_t[]){N, V}, -4, 4);
    kiln_value labels = arg_i32(p, g, 1, (int64_t[]){N}, V);
    kiln_value loss = kiln_mean(g, kiln_softmax_cross_entropy(g, logits, labels), 0, NULL, false);
    outs[0] = loss;
    DIE(p->ctx, kiln_grad(g, loss, 1, &logits, &outs[1]));
    return 2;
}

static int trace_cumsum(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    kiln_value x = arg_f32(p, g, 2, (int64_t[]){s[0], s[1]}, -1, 1);
    outs[0] = kiln_cumsum(g, x, 1, false);
    outs[1] = kiln_cumsum(g, x, 0, true);
    return 2;
}

static int trace_reduce(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    kiln_value x = arg_f32(p, g, 2, (int64_t[]){s[0], s[1]}, -1, 1);
    int rows = 0, cols = 1;
    outs[0] = kiln_reduce_sum(g, x, 1, &cols, false);
    outs[1] = kiln_reduce_max(g, x, 1, &cols, false);
    outs[2] = kiln_reduce_sum(g, x, 1, &rows, false);
    outs[3] = kiln_softmax(g, x, 1);
    return 4;
}

/* Sinusoidal positional encodings computed in the program (Vaswani et al.'s, as many JAX
 * models build them): angle t / 10000^(2i / D) for position t and pair i, sin and cos of
 * it interleaved along the features, added to activations x [B, T, D]. */
static int trace_posenc(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t B = s[0], T = s[1], D = s[2], H = D / 2;
    kiln_value x = arg_f32(p, g, 3, (int64_t[]){B, T, D}, -1, 1);
    /* as the JAX side writes it: positions [T, 1] times frequencies [1, H] */
    kiln_value pos = kiln_iota(g, KILN_DTYPE_F32, 2, (int64_t[]){T, 1}, 0);
    kiln_value i2 = kiln_mul(g, kiln_iota(g, KILN_DTYPE_F32, 2, (int64_t[]){1, H}, 1),
                             kiln_scalar(g, KILN_DTYPE_F32, 2.0 / (double)D));
    kiln_value inv = kiln_exp(g, kiln_mul(g, i2, kiln_scalar(g, KILN_DTYPE_F32, -log(10000.0))));
    kiln_value ang = kiln_mul(g, kiln_broadcast_to(g, pos, 2, (int64_t[]){T, H}),
                              kiln_broadcast_to(g, inv, 2, (int64_t[]){T, H}));
    kiln_value pair[2] = {kiln_sin(g, ang), kiln_cos(g, ang)};
    kiln_value pe = kiln_reshape(g, kiln_stack(g, 2, pair, 2), 2, (int64_t[]){T, D});
    outs[0] = kiln_add(g, x, kiln_broadcast_to(g, pe, 3, (int64_t[]){B, T, D}));
    return 1;
}

/* sin and cos of x [N] uniform in [-60, 60], and sin(x) cos(x) + x: each its own kernel
 * (three outputs of one shape from one input merge into one kernel: read once) */
static int trace_trig(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    kiln_value x = arg_f32(p, g, 1, s, -60, 60);
    outs[0] = kiln_sin(g, x);
    outs[1] = kiln_cos(g, x);
    outs[2] = kiln_add(g, kiln_mul(g, kiln_sin(g, x), kiln_cos(g, x)), x);
    return 3;
}

/* f64 elementwise functions (JAX with x64 on): exp, tanh and logistic of one array, the
 * three kiln computes with its own vectorised f64 kernels, and a log. */
static int trace_math64(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    kiln_value x = arg_f64(p, g, 1, s, -8, 8);
    outs[0] = kiln_exp(g, x);
    outs[1] = kiln_tanh(g, x);
    outs[2] = kiln_logistic(g, x);
    outs[3] = kiln_log(g, kiln_add(g, kiln_mul(g, x, x), kiln_scalar(g, KILN_DTYPE_F64, 1)));
    return 4;
}

/* Random Fourier features (Tancik et al.'s input mapping, as NeRF-style models build it):
 * z = 2 pi x B for points x [N, D] and frequencies B [D, F], then sin z and cos z side by
 * side along the features: [N, 2F], a concatenation along the last axis. */
static int trace_fourier(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t N = s[0], D = s[1], F = s[2];
    kiln_value x = arg_f32(p, g, 2, (int64_t[]){N, D}, -1, 1);
    kiln_value b = arg_f32(p, g, 2, (int64_t[]){D, F}, -3, 3);
    kiln_value z =
        kiln_mul(g, kiln_matmul(g, x, b), kiln_scalar(g, KILN_DTYPE_F32, 6.283185307179586));
    outs[0] = kiln_concatenate(g, 2, (kiln_value[]){kiln_sin(g, z), kiln_cos(g, z)}, 1);
    return 1;
}

/* Normalisations over a middle axis (attention over the keys of a [B, Tk, Tq] layout, a
 * norm over channels of NCHW-style data): x [B, N, C], along N: softmax, logsumexp, and
 * an RMS norm. B = 1 is the first axis of a matrix. */
static int trace_axes(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    kiln_value x = arg_f32(p, g, 3, (int64_t[]){s[0], s[1], s[2]}, -3, 3);
    int mid = 1;
    outs[0] = kiln_softmax(g, x, 1);
    outs[1] = kiln_logsumexp(g, x, 1, &mid, false);
    outs[2] = kiln_rms_norm(g, x, (kiln_value){0, 0}, 1, 1e-6);
    return 3;
}

/* An image batch from NCHW to NHWC, as a convolutional model's layout change is. */
static int trace_nhwc(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    kiln_value x = arg_f32(p, g, 4, (int64_t[]){s[0], s[1], s[2], s[3]}, -1, 1);
    outs[0] = kiln_transpose(g, x, (const int[]){0, 2, 3, 1});
    return 1;
}

static int trace_transpose(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    kiln_value x = arg_f32(p, g, 2, (int64_t[]){s[0], s[1]}, -1, 1);
    outs[0] = kiln_transpose(g, x, (const int[]){1, 0});
    return 1;
}

static int trace_embed_grad(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t B = s[0], T = s[1], V = s[2], D = s[3];
    kiln_value tok = arg_i32(p, g, 2, (int64_t[]){B, T}, V);
    kiln_value table = arg_f32(p, g, 2, (int64_t[]){V, D}, -1, 1);
    kiln_value h = kiln_take_rows(g, table, tok);
    outs[0] = kiln_mean(g, kiln_mul(g, h, h), 0, NULL, false);
    DIE(p->ctx, kiln_grad(g, outs[0], 1, &table, &outs[1]));
    return 2;
}

static int trace_adam(prog *p, kiln_graph *g, const int64_t *s, kiln_value *outs) {
    int64_t P = s[0];
    kiln_value w = arg_f32(p, g, 1, &P, -1, 1);
    kiln_value m = arg_f32(p, g, 1, &P, -0.01, 0.01);
    kiln_value v = arg_f32(p, g, 1, &P, 0, 1e-4);
    kiln_value gr = arg_f32(p, g, 1, &P, -0.1, 0.1);
    kiln_adam_options o = {.lr = kiln_scalar(g, KILN_DTYPE_F64, 1e-3),
                           .step = kiln_scalar(g, KILN_DTYPE_I32, 10)};
    DIE(p->ctx, kiln_optim_adam(g, &o, 1, &w, &gr, &m, &v, &outs[0], &outs[1], &outs[2]));
    p->n_donate = 3; /* w, m, v: updated in place as a training loop does */
    return 3;
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int n_sizes;
        int (*trace)(prog *, kiln_graph *, const int64_t *, kiln_value *);
    } progs[] = {{"embed", 6, trace_embed},         {"rope", 4, trace_rope},
                 {"block", 3, trace_block},         {"block_sdpa", 3, trace_block_sdpa},
                 {"xent", 2, trace_xent},           {"adam", 1, trace_adam},
                 {"cumsum", 2, trace_cumsum},       {"attn", 5, trace_attn},
                 {"reduce", 2, trace_reduce},       {"embed_grad", 4, trace_embed_grad},
                 {"posenc", 3, trace_posenc},       {"trig", 1, trace_trig},
                 {"transpose", 2, trace_transpose}, {"fourier", 3, trace_fourier},
                 {"axes", 3, trace_axes},           {"nhwc", 4, trace_nhwc},
                 {"math64", 1, trace_math64}};
    int which = -1;
    for (int i = 0; argc > 3 && i < (int)(sizeof progs / sizeof *progs); i++)
        if (!strcmp(argv[3], progs[i].name)) which = i;
    if (which < 0 || argc != 4 + progs[which].n_sizes) {
        fprintf(stderr, "usage: bench_programs DIR REPS embed B T V D H C | rope B T NH DH | "
                        "block B T C | block_sdpa B T C | xent N V | adam P | cumsum R N | "
                        "attn B T N K H | reduce R N | embed_grad B T V D | posenc B T D | trig N "
                        "| transpose R C | fourier N D F | axes B N C | nhwc N C H W | math64 N\n");
        return 2;
    }
    int64_t sizes[8];
    for (int i = 0; i < progs[which].n_sizes; i++) sizes[i] = atoll(argv[4 + i]);
    int reps = atoi(argv[2]);
    reps = reps < 20 ? 20 : reps > 1000 ? 1000 : reps;
    char err[256];
    prog p = {.dir = argv[1], .rng = 42};
    if (kiln_context_create(NULL, &p.ctx, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    kiln_graph *g;
    DIE(p.ctx, kiln_graph_create(p.ctx, progs[which].name, &g));
    kiln_value outs[4];
    int n_outs = progs[which].trace(&p, g, sizes, outs);
    DIE(p.ctx, kiln_graph_finish(g, n_outs, outs));
    int donate[MAX_ARGS];
    for (int i = 0; i < p.n_donate; i++) donate[i] = i;
    kiln_compile_options o = {.n_donate = p.n_donate, .donate_argnums = donate};
    kiln_executable *e;
    double compile0 = now(), first_ms = 0;
    DIE(p.ctx, kiln_compile(g, &o, &e));
    double compile_ms = 1e3 * (now() - compile0);
    kiln_graph_destroy(g);
    const char *clk = getenv("BENCH_CLOCK");
    bool cpu_clock = clk && !strcmp(clk, "cpu");
    /* With compile tiers (KILN_COMPILE_TIERS=2) the calls before the optimised build is
     * swapped in are counted apart (kiln_tier1_calls) and the steady state is timed on
     * `reps` calls after them, so that it is the optimised build's either way. */
    double t[1000 + WARMUP];
    int n_timed = 0, tier1_calls = 0;
    for (int r = 0; n_timed < WARMUP + reps && r < 1000 + WARMUP; r++) {
        kiln_array *res[4];
        kiln_executable_info info;
        kiln_executable_get_info(e, &info);
        double t0 = cpu_clock ? process_cpu_now() : now(), w0 = now();
        DIE(p.ctx, kiln_executable_run(e, p.n_args, p.args, n_outs, res));
        double dt = (cpu_clock ? process_cpu_now() : now()) - t0;
        if (info.compile_tier == 1)
            tier1_calls++;
        else
            t[n_timed++] = dt;
        if (r == 0) first_ms = compile_ms + 1e3 * (now() - w0);
        if (r == 0)
            for (int i = 0; i < n_outs; i++) {
                size_t n = kiln_array_nbytes(res[i]);
                void *h = malloc(n + 1);
                char name[32];
                snprintf(name, sizeof name, "out%d.bin", i);
                if (!h) exit(1);
                DIE(p.ctx, kiln_array_copy_to_host(res[i], h, n));
                bench_write_file(p.dir, name, h, n);
                free(h);
            }
        for (int i = 0; i < n_outs; i++) {
            if (i < p.n_donate) { /* the new state replaces the consumed argument */
                p.args[i] = res[i];
                continue;
            }
            kiln_array_destroy(res[i]);
        }
    }
    printf("kiln_ms %.4f\n", 1e3 * median(t + WARMUP, reps));
    printf("kiln_first_ms %.1f\n", first_ms);
    printf("kiln_tier1_calls %d\n", tier1_calls);
    printf("kiln_compile_ms %.1f\n", compile_ms);
    for (int i = 0; i < p.n_args; i++) kiln_array_destroy(p.args[i]);
    kiln_executable_destroy(e);
    kiln_context_destroy(p.ctx);
    return 0;
}
