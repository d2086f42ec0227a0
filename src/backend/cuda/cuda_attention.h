/* cuda_attention.h — the source text the attention programs share (cuda_attention.c's
 * forward pass, cuda_attention_grad.c's gradient): integer types, the 16-bit conversions,
 * exp, -inf, the NaN-winning max, and for the tensor-core kernels the mma.sync helper (the
 * emulator's kiln_emu_mma without __CUDA_ARCH__, so tests/test_cuda_emulate.c runs the very
 * code), packing two values rounded to T, and 32-bit loads of two 16-bit values. */
#ifndef KILN_CUDA_ATTENTION_H
#define KILN_CUDA_ATTENTION_H

#include "backend/backend_impl.h"
#include "cuda_half.h"

/* The kernels' parameter, the same layout on both sides (8-byte fields only), for both
 * programs: the forward kernels read fill_finite and fill, the gradient's vec (every
 * operand 16-byte aligned). cu_attn_params: a's, with vec. */
typedef struct attn_params {
    int64_t batch, t, s, heads, kv_heads, h, hv, causal, fill_finite, vec;
    double scale, fill;
} attn_params;
attn_params cu_attn_params(const kn_attention_desc *a, bool vec);

/* clang-format off */
#define CU_ATTN_PARAMS \
    "struct attn_params { int64_t batch, t, s, heads, kv_heads, h, hv, causal, fill_finite, vec;\n" \
    "    double scale, fill; };\n"

#define CU_ATTN_PRELUDE \
    "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t;\n" \
    "typedef unsigned short uint16_t;\n" \
    "#define ATTN_THREADS 256\n" \
    /* bf16 and f16 (cuda_half.h): integer arithmetic here, so the emulator runs this code */ \
    CU_HALF_CONVERSIONS "__device__ __forceinline__ float ex(float x) { return expf(x); }\n" \
    "__device__ __forceinline__ double ex(double x) { return exp(x); }\n" \
    "__device__ __forceinline__ void neg_inf(float &x) { x = -__uint_as_float(0x7f800000u); }\n" \
    "__device__ __forceinline__ void neg_inf(double &x) { x = " \
    "-__longlong_as_double(0x7ff0000000000000LL); }\n" \
    "__device__ __forceinline__ int64_t lo(int64_t a, int64_t b) { return a < b ? a : b; }\n" \
    /* the larger, NaN winning */ \
    "template <typename A> __device__ __forceinline__ A nmax(A x, A m) { return x > m || x != x ? " \
    "x : m; }\n" \
    /* a row's log-sum-exp from its running maximum m and sum l: NaN when every score was \
     * -inf, as exp(s - max) is in the definition */ \
    "__device__ __forceinline__ float log_sum(float m, float l) {\n" \
    "    return m != -__uint_as_float(0x7f800000u) ? m + logf(l) : __uint_as_float(0x7fc00000u);\n" \
    "}\n" \
    "__device__ __forceinline__ double log_sum(double m, double l) {\n" \
    "    return m != -__longlong_as_double(0x7ff0000000000000LL) ? m + log(l)\n" \
    "                                                          : __longlong_as_double(0x7ff8000000000000LL);\n" \
    "}\n"

/* Inside "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800": mma(T(), d, a, b) is one
 * m16n8k16 step, d += a b, 16-bit operands and f32 accumulators in PTX's fragment layout;
 * pack, ld32, and online_tile, the online softmax over a tile of score fragments. */
#define CU_ATTN_MMA \
    "#ifdef __CUDA_ARCH__\n" \
    "__device__ __forceinline__ void mma(bf16, float *d, const uint32_t *a, const uint32_t *b) {\n" \
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, \"\n" \
    "                 \"{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n" \
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n" \
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), " \
    "\"r\"(b[1]));\n" \
    "}\n" \
    "__device__ __forceinline__ void mma(f16, float *d, const uint32_t *a, const uint32_t *b) {\n" \
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, \"\n" \
    "                 \"{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n" \
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n" \
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), " \
    "\"r\"(b[1]));\n" \
    "}\n" \
    "#else /* tests/test_cuda_emulate.c: the warp's fragments exchanged and multiplied */\n" \
    "__device__ __forceinline__ void mma(bf16, float *d, const uint32_t *a, const uint32_t *b) {\n" \
    "    kiln_emu_mma(0, d, a, b);\n" \
    "}\n" \
    "__device__ __forceinline__ void mma(f16, float *d, const uint32_t *a, const uint32_t *b) {\n" \
    "    kiln_emu_mma(1, d, a, b);\n" \
    "}\n" \
    "#endif\n" \
    "/* two values rounded to T, the first in the low half */\n" \
    "template <typename T> __device__ __forceinline__ uint32_t pack(float x, float y) {\n" \
    "    T a, b;\n" \
    "    narrow(x, a), narrow(y, b);\n" \
    "    return (uint32_t)a.h | (uint32_t)b.h << 16;\n" \
    "}\n" \
    "__device__ __forceinline__ uint32_t ld32(const uint16_t *p) { return *(const uint32_t *)p; }\n" \
    /* The online softmax of a warp's 16 rows over a tile of NT groups of 8 keys, the    \
     * accumulator fragments s of the scores (key j0 + 8 nt + 2 t4 + (x & 1) of row        \
     * g + 8 (x >> 1)): the keys a row does not see (j >= seen[r]) are -inf, the others     \
     * scaled; m and l become each row's running maximum and sum (over its 4 lanes),       \
     * alpha[r] what the row's sums so far were rescaled by, and s exp(s - m), 0 where the  \
     * maximum is still -inf (nothing seen yet). */                                        \
    "template <int NT>\n" \
    "__device__ __forceinline__ void online_tile(float (*s)[4], int64_t j0, const int64_t *seen,\n" \
    "                                            float scale, float *m, float *l, float *alpha) {\n" \
    "    const int t4 = threadIdx.x % 4;\n" \
    "    float ninf, mn[2], rs[2] = {0, 0};\n" \
    "    neg_inf(ninf);\n" \
    "#pragma unroll\n" \
    "    for (int r = 0; r < 2; r++) {\n" \
    "        float tm = ninf;\n" \
    "#pragma unroll\n" \
    "        for (int nt = 0; nt < NT; nt++)\n" \
    "#pragma unroll\n" \
    "            for (int c = 0; c < 2; c++) {\n" \
    "                const int64_t j = j0 + nt * 8 + 2 * t4 + c;\n" \
    "                float &x = s[nt][2 * r + c];\n" \
    "                x = j < seen[r] ? x * scale : ninf;\n" \
    "                tm = nmax(x, tm);\n" \
    "            }\n" \
    "        tm = nmax(__shfl_xor_sync(0xffffffffu, tm, 1), tm);\n" \
    "        tm = nmax(__shfl_xor_sync(0xffffffffu, tm, 2), tm);\n" \
    "        mn[r] = nmax(tm, m[r]);\n" \
    "        alpha[r] = mn[r] != ninf ? ex(m[r] - mn[r]) : 1.0f;\n" \
    "    }\n" \
    "#pragma unroll\n" \
    "    for (int nt = 0; nt < NT; nt++)\n" \
    "#pragma unroll\n" \
    "        for (int x = 0; x < 4; x++) {\n" \
    "            const int r = x >> 1;\n" \
    "            s[nt][x] = mn[r] != ninf ? ex(s[nt][x] - mn[r]) : 0.0f;\n" \
    "            rs[r] += s[nt][x];\n" \
    "        }\n" \
    "#pragma unroll\n" \
    "    for (int r = 0; r < 2; r++) {\n" \
    "        rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 1);\n" \
    "        rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 2);\n" \
    "        l[r] = l[r] * alpha[r] + rs[r];\n" \
    "        m[r] = mn[r];\n" \
    "    }\n" \
    "}\n"
/* clang-format on */

#endif
