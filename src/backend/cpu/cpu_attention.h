/* cpu_attention.h — what the attention kernels share (cpu_attention.c, the forward pass;
 * cpu_attention_grad.c, its gradient), private to those two files: the scratch's layout
 * (f32 copies of 16-bit operands, then one slot per thread) and the loop that runs work
 * items on the pool, the 16-lane f32 vectors and their exponential, and the passes over a
 * row of scores of the online softmax. */
#ifndef KILN_CPU_ATTENTION_H
#define KILN_CPU_ATTENTION_H

#include "clones.h"
#include "cpu_ops.h"
#include "pool.h"
#include "base/half.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Entries of a scratch piece rounded up to 64 bytes. */
static inline int64_t pad16(int64_t n) {
    return (n + 15) / 16 * 16;
}

static inline bool is_half(kiln_dtype t) {
    return t == KILN_DTYPE_BF16 || t == KILN_DTYPE_F16;
}

/* The bytes of one element as computed: bf16 and f16 are computed in f32. */
static inline int64_t attn_elem_size(kiln_dtype t) {
    return t == KILN_DTYPE_F64 ? 8 : 4;
}

/* y = x widened to f32 (bf16 when bf, else f16). */
/* n bf16 (bf) or f16 values widened to f32 (widen), or f32 values rounded to them, split
 * over the pool's threads (pool may be NULL: the calling thread). */
void cpu_attn_convert(kn_pool *pool, bool bf, bool widen, const void *src, void *dst, int64_t n);

/* Work item `it` of a kernel whose items are (batch, query head, block of CPU_ATTN_TQ query
 * rows), the last blocks first (with a causal mask, they see the most keys): batch b, query
 * head n, its key/value head kh, rows [i0, i0 + rows), which see keys [0, seen). */
typedef struct attn_qblock {
    int64_t b, n, kh, i0, rows, seen;
} attn_qblock;

static inline attn_qblock attn_qblock_of(const kn_attention_desc *d, int64_t it) {
    int64_t nqb = (d->t + CPU_ATTN_TQ - 1) / CPU_ATTN_TQ, bh = it % (d->batch * d->heads);
    int64_t i0 = (nqb - 1 - it / (d->batch * d->heads)) * CPU_ATTN_TQ, n = bh % d->heads;
    int64_t rows = d->t - i0 < CPU_ATTN_TQ ? d->t - i0 : CPU_ATTN_TQ;
    return (attn_qblock){bh / d->heads,
                         n,
                         n / (d->heads / d->kv_heads),
                         i0,
                         rows,
                         d->causal && i0 + rows < d->s ? i0 + rows : d->s};
}

/* A kernel's scratch: `wide` bytes of f32 copies (0 but for bf16 and f16), then one slot
 * of `slot` bytes per thread. attn_scratch_bytes: what `threads` threads need;
 * attn_slots: how many threads' slots `bytes` hold (slot is never 0). */
static inline uint64_t attn_scratch_bytes(uint64_t wide, uint64_t slot, int threads) {
    return wide + (uint64_t)(threads > 0 ? threads : 1) * slot;
}

static inline int64_t attn_slots(uint64_t wide, uint64_t slot, uint64_t bytes) {
    return bytes < wide ? 0 : (int64_t)((bytes - wide) / slot);
}

/* Work items on the pool: one task per thread (no more threads than `threads`, nor than
 * items), task `slot` working in scratch + slot * slot_bytes and taking items from the
 * shared counter until none is left. item(call, it, ws) computes item `it`. */
typedef struct attn_items {
    void (*item)(const void *call, int64_t it, void *ws);
    const void *call;
    char *scratch;
    uint64_t slot_bytes;
    int64_t items;
    atomic_int_fast64_t next; /* the next work item to take */
} attn_items;

void cpu_attn_run_items(kn_pool *pool, int threads, attn_items *r);

/* f32 is written with GCC's vector extensions, 16 lanes (AVX-512 in the x86-64-v4 clone,
 * two or four narrower registers in the others), because the NaN-propagating max and the
 * exp do not vectorise from scalar code; f64 is scalar (libm's exp), for tests and the
 * rare f64 model. */
typedef float vf32 __attribute__((vector_size(64)));
typedef int32_t vi32 __attribute__((vector_size(64)));
typedef uint32_t vu32 __attribute__((vector_size(64)));

/* take ? a : b, per lane (take: lanes of all ones or zeros, as a vector compare gives) */
#define VBLEND(take, a, b) ((vf32)(((vi32)(a) & (take)) | ((vi32)(b) & ~(take))))

/* exp(x) for x <= hi (hi 0 or 88): the generated kernels' kiln_exp_f32
 * (src/codegen/prelude/math_f32.h: Cody-Waite reduction, the Cephes degree-6 polynomial,
 * 2^k into the exponent bits; ~1 ulp) with round-to-nearest by the 1.5 * 2^23 trick, and
 * results below 2^-125 (x < -86.6, far under one ulp of a softmax's sum) flushed to 0;
 * NaN stays. Every lane is clamped into [-86.6, hi] before k is converted to int32 (a NaN
 * and, against the contract, an x above hi are taken as hi), so k is in [-125, 127] and
 * 2^k added into the exponent bits cannot overflow, whatever a lane holds; the bits are
 * added unsigned. */
/* In place, through a pointer: a 64-byte vector passed by value would cross the clones'
 * differing ABIs (zmm registers in the AVX-512 clone, memory in the others) wherever gcc
 * does not inline the call (at -O0 it called the baseline helper from the AVX-512 clone,
 * which read its argument from where the caller had not put it). */
__attribute__((always_inline)) static inline void vexp_to(vf32 *v, float hi) {
    vf32 x = *v;
    vi32 tiny = x < -86.6f;
    vf32 xc = VBLEND(x <= hi, x, (vf32){0} + hi);
    xc = VBLEND(tiny, (vf32){0} - 86.6f, xc);
    vf32 kf = xc * 1.44269504088896341f + 12582912.0f;
    kf = kf - 12582912.0f;
    vf32 r = xc - kf * 0.693359375f;
    r = r + kf * 2.12194440e-4f;
    vf32 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    vf32 y = p * r * r + r + 1.0f;
    y = (vf32)((vu32)y + ((vu32) __builtin_convertvector(kf, vi32) << 23));
    y = (vf32)((vi32)y & ~tiny);
    *v = VBLEND(x != x, x, y);
}

/* What the softmax feeds the exponential: x <= 0 (a positive x is taken as 0). */
__attribute__((always_inline)) static inline void vexp_le0(vf32 *v) {
    vexp_to(v, 0.0f);
}

/* exp(x) for any x: above 88, exp(x - 88) exp(88), which overflows to inf where exp does
 * (the gradient's exp(s - lse), where an lse given by hand may be below the scores). */
__attribute__((always_inline)) static inline void vexp_any(vf32 *v) {
    vf32 x = *v;
    vi32 big = x > 88.0f;
    vf32 t = VBLEND(big, x - 88.0f, x);
    vexp_to(&t, 88.0f);
    *v = VBLEND(big, t * 1.6516362549940018e38f, t);
}

/* The two passes over a row of scores: *_max scales the first n entries in place and
 * returns their maximum (NaN if any is NaN); *_exp replaces them by exp(s - m), zeroes
 * entries [n, w) (keys the row may not see) and returns their sum. Static, so that each
 * file's clones call their own (target_clones' resolvers would be global symbols). */
__attribute__((unused)) KILN_CLONES static float cpu_attn_rows_f32_max(float *s, int64_t n,
                                                                       float scale) {
    vf32 m = (vf32){0} - INFINITY;
    vi32 nan = {0}; /* kept apart: (t > m) | (t != t) made gcc 12 compare lane by lane */
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vf32 t;
        memcpy(&t, s + i, sizeof t);
        t *= scale;
        memcpy(s + i, &t, sizeof t);
        m = VBLEND(t > m, t, m);
        nan |= t != t;
    }
    float r = -INFINITY;
    for (int j = 0; j < 16; j++) r = m[j] > r || nan[j] ? (nan[j] ? NAN : m[j]) : r;
    for (; i < n; i++) {
        float t = s[i] * scale;
        s[i] = t;
        r = t > r || t != t ? t : r;
    }
    return r;
}

__attribute__((unused)) KILN_CLONES static float cpu_attn_rows_f32_exp(float *s, int64_t n,
                                                                       int64_t w, float mx) {
    vf32 l = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vf32 t;
        memcpy(&t, s + i, sizeof t);
        t -= mx;
        vexp_le0(&t);
        memcpy(s + i, &t, sizeof t);
        l += t;
    }
    if (i < n) { /* the tail, as a vector padded with -inf: exp gives those lanes 0 (a lane
                  * of 0 would reach the exp at -mx, far above 0 when every score is low) */
        vf32 t = (vf32){0} - INFINITY;
        memcpy(&t, s + i, (size_t)(n - i) * sizeof(float));
        t -= mx;
        vexp_le0(&t);
        memcpy(s + i, &t, (size_t)(n - i) * sizeof(float));
        l += t;
    }
    for (int64_t j = n; j < w; j++) s[j] = 0;
    for (int h = 8; h; h /= 2)
        for (int j = 0; j < h; j++) l[j] += l[j + h];
    return l[0];
}

__attribute__((unused)) static double cpu_attn_rows_f64_max(double *s, int64_t n, double scale) {
    double r = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double t = s[i] * scale;
        s[i] = t;
        r = t > r || t != t ? t : r;
    }
    return r;
}

__attribute__((unused)) static double cpu_attn_rows_f64_exp(double *s, int64_t n, int64_t w,
                                                            double mx) {
    double l = 0;
    for (int64_t i = 0; i < n; i++) l += s[i] = exp(s[i] - mx);
    for (int64_t j = n; j < w; j++) s[j] = 0;
    return l;
}

#endif
