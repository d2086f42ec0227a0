/* cuda_half.h — bf16 and f16 in the CUDA sources the backend compiles itself (its library
 * kernels: cuda_lib.c, cuda_attention.c, cuda_sort.c, cuda_scatter.c), written once as
 * string literals that each source splices in, with the scatter kernels' combine. The printed
 * kernels have their own (src/codegen/prelude).
 *
 * The values live in uint16_t (struct bf16, struct f16) and are computed in f32: wide()
 * widens exactly, narrow() rounds to nearest even as src/base/half.h does (a NaN keeps its
 * sign and payload, quieted). On a GPU (__CUDA_ARCH__) f16 uses the hardware conversions;
 * elsewhere (tests/test_cuda_emulate.c compiles these sources as C++ on the CPU) integer
 * arithmetic gives the same bits. */
#ifndef KILN_CUDA_HALF_H
#define KILN_CUDA_HALF_H

/* The storage types alone. */
#define CU_HALF_TYPES                                                                              \
    "struct bf16 { uint16_t h; };\n"                                                               \
    "struct f16 { uint16_t h; };\n"

/* wide() and narrow() for float, double, bf16 and f16 (f64 to bf16 and to f16 through
 * f32, two roundings, as XLA's compiled convert and the convert op's kn_f64_to_bf16 /
 * kn_f64_to_f16 do: src/base/half.h). Needs the uint types declared first. */
#define CU_HALF_CONVERSIONS                                                                        \
    CU_HALF_TYPES                                                                                  \
    "__device__ __forceinline__ float wide(float x) { return x; }\n"                               \
    "__device__ __forceinline__ double wide(double x) { return x; }\n"                             \
    "__device__ __forceinline__ float wide(bf16 x) { return __uint_as_float((uint32_t)x.h << "     \
    "16); }\n"                                                                                     \
    "__device__ __forceinline__ float wide(f16 x) {\n"                                             \
    "    uint32_t s = (uint32_t)(x.h & 0x8000u) << 16, e = (x.h >> 10) & 31u, m = x.h & 0x3ffu;\n" \
    "    if (e == 31u) return __uint_as_float(s | 0x7f800000u | (m << 13));\n"                     \
    "#ifdef __CUDA_ARCH__\n"                                                                       \
    "    float r;\n"                                                                               \
    "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(r) : \"h\"((unsigned short)x.h));\n"                 \
    "    return r;\n"                                                                              \
    "#else\n"                                                                                      \
    "    if (e) return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));\n"                     \
    "    float f = (float)m * 5.9604644775390625e-8f; /* m 2^-24, exact */\n"                      \
    "    return s ? -f : f;\n"                                                                     \
    "#endif\n"                                                                                     \
    "}\n"                                                                                          \
    "__device__ __forceinline__ void narrow(float f, float &o) { o = f; }\n"                       \
    "__device__ __forceinline__ void narrow(double f, double &o) { o = f; }\n"                     \
    "__device__ __forceinline__ void narrow(float f, bf16 &o) {\n"                                 \
    "    uint32_t u = __float_as_uint(f);\n"                                                       \
    "    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;\n"                                   \
    "    o.h = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x0040u : r);\n"           \
    "}\n"                                                                                          \
    "__device__ __forceinline__ void narrow(float f, f16 &o) {\n"                                  \
    "    uint32_t u = __float_as_uint(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"         \
    "    if (a > 0x7f800000u) { o.h = (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu)); return; }\n" \
    "#ifdef __CUDA_ARCH__\n"                                                                       \
    "    unsigned short h;\n"                                                                      \
    "    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"                                \
    "    o.h = h;\n"                                                                               \
    "#else\n"                                                                                      \
    "    if (a >= 0x477ff000u) { o.h = (uint16_t)(s | 0x7c00u); return; } /* 65520 and up */\n"    \
    "    if (a >= 0x38800000u) { /* normal: rebias, round the 13 bits dropped */\n"                \
    "        uint32_t r = a - 0x38000000u;\n"                                                      \
    "        o.h = (uint16_t)(s | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));\n"                     \
    "        return;\n"                                                                            \
    "    }\n"                                                                                      \
    "    /* subnormal: |f| 2^24 < 1024 is exact; adding 2^23 rounds it to nearest even */\n"       \
    "    float big = __uint_as_float(a) * 16777216.0f + 8388608.0f;\n"                             \
    "    o.h = (uint16_t)(s | (uint32_t)(big - 8388608.0f));\n"                                    \
    "#endif\n"                                                                                     \
    "}\n"                                                                                          \
    "__device__ __forceinline__ void narrow(double d, bf16 &o) { narrow((float)d, o); }\n"         \
    "__device__ __forceinline__ void narrow(double d, f16 &o) { narrow((float)d, o); }\n"

/* kn_rows_combine (add 0, mul 1, min 2, max 3) of a row's value a and an update b, for the
 * scatter kernels (cuda_lib.c's column kernel, cuda_scatter.c's sorted one). U is the type
 * the addition and product are done in (unsigned for integers: wrapping). Float min and
 * max as kiln_min_f32 and kiln_max_f32: a NaN operand wins, and -0 and +0 combine by their
 * sign bits. */
#define CU_ROWS_COMBINE                                                                            \
    "template <typename T, typename U> __device__ __forceinline__ T comb(T a, T b, int64_t k) "    \
    "{\n"                                                                                          \
    "    return k == 1 ? (T)((U)a * (U)b) : k == 2 ? (a < b ? a : b) : k == 3 ? (a > b ? a : b) "  \
    ": (T)((U)a + (U)b);\n"                                                                        \
    "}\n"                                                                                          \
    "template <> __device__ __forceinline__ float comb<float, float>(float a, float b, int64_t "   \
    "k) {\n"                                                                                       \
    "    if (k == 0) return a + b;\n"                                                              \
    "    if (k == 1) return a * b;\n"                                                              \
    "    if ((k == 2 ? a < b : a > b) || a != a) return a;\n"                                      \
    "    if (a != b) return b;\n"                                                                  \
    "    unsigned x = __float_as_uint(a), y = __float_as_uint(b);\n"                               \
    "    return __uint_as_float(k == 2 ? x | y : x & y);\n"                                        \
    "}\n"                                                                                          \
    "template <> __device__ __forceinline__ double comb<double, double>(double a, double b, "      \
    "int64_t k) {\n"                                                                               \
    "    if (k == 0) return a + b;\n"                                                              \
    "    if (k == 1) return a * b;\n"                                                              \
    "    if ((k == 2 ? a < b : a > b) || a != a) return a;\n"                                      \
    "    if (a != b) return b;\n"                                                                  \
    "    long long x = __double_as_longlong(a), y = __double_as_longlong(b);\n"                    \
    "    return __longlong_as_double(k == 2 ? x | y : x & y);\n"                                   \
    "}\n"

#endif
