/* print_c.c — the printer: kernel descriptions (kdesc.h) -> source in one of two dialects,
 * C for the CPU backend and CUDA C for the GPU backend (compiled by NVRTC).
 *
 * One translation unit holds every LOOP kernel of a program: a prelude of helpers, then
 * per kernel a comment naming the IR nodes it computes and a function (see cgen.h). The
 * description decides what is computed; this file only decides how it is spelled, and
 * both dialects share everything but the few spellings that differ (the prelude's helpers
 * are written once, behind the KILN_FN qualifier macro each dialect defines):
 *
 *  - per-op syntax lives in c_op_expr alone (with c_literal for constants);
 *  - numerics follow the reference interpreter: integer arithmetic wraps (through unsigned
 *    types), integer x/0 is -1 and INT_MIN/-1 is INT_MIN, float->int conversion saturates
 *    with NaN -> 0, max/min propagate NaN, float sums and products accumulate in double
 *    (f32 sums in the C dialect: f32 blocks added in double, kd_reduce.blocked), and a
 *    product is rounded where its op computes it, never fused into a reader's sum
 *    (KILN_ROUNDED: a value's bits do not depend on the kernel it is computed in);
 *  - speed: f32 exp, tanh, logistic, log, log1p and erf are inline polynomials (kiln_exp_f32, ...)
 *    so loops that call them vectorise; a loop the description marks `simd` gets `#pragma omp simd`
 *    (with reduction clauses for its accumulator), which vectorises reductions without
 *    -fassociative-math; buffers are `restrict` except an input the planner overwrites in
 *    place and the output written over it.
 *
 * CUDA: a block of CGEN_CUDA_THREADS threads takes work items in a grid-stride loop; the
 * printer re-splits the last axis into its own chunks per kernel form (the description's
 * index expressions do not depend on the chunk): elementwise and column-reduction kernels
 * give each thread one element of the chunk at a time (consecutive threads, consecutive
 * elements: coalesced); a kernel with a reduction inside its element loop gives each
 * element a warp (or, when there are few elements, the whole block), whose lanes stride
 * the reduction's innermost loop and combine their accumulators with warp shuffles (and
 * shared memory across warps) at the result; everything else in the element is computed
 * by every lane alike and stored by lane 0. A kernel with row values (kd_kernel.prologue)
 * gives each row a block: the whole block strides the prologue's reductions and combines
 * them as above, so that every thread holds the row's values, and then each thread takes
 * elements of the row as in an elementwise kernel. Combining happens in a fixed order, so a
 * kernel's result does not depend on scheduling. An elementwise kernel whose element loop
 * is straight-line code takes four elements per thread, its contiguous 4-byte loads and
 * stores as 16-byte vector accesses (print_vec). A kernel with few values to compute and
 * long reductions (a loss, a global norm) runs as two kernels, as a split reduction does
 * on the CPU (kd_kernel.parts), but split by this dialect (cuda_element_split):
 * kiln_k<i>_part gives each of up to KN_CUDA_PARTS slices of the split loops (in all) a
 * block, whose lanes combine their accumulators and store one partial result, and
 * kiln_k<i> combines the parts, lane l taking parts l, l + 256, ... and the lanes then
 * combining as above: a fixed order, so the result does not depend on the grid either,
 * and the reduction runs on every multiprocessor instead of one. A column reduction of
 * few items (a bias gradient) is split over its rows the same way (cuda_column_split). The
 * part kernel's items and the scratch's bytes are stated in the program (kiln_k<i>_parts)
 * for the backend, which runs the two kernels (cgen.h). Every shuffle and __syncthreads is
 * reached by all the lanes it names: the code around it depends only on the item and the
 * element, never on the lane. */
#include "backend/c_runtime.h"
#include "cgen.h"
#include "kdesc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

_Static_assert(KN_CUDA_PART_BYTES == KD_PART_BYTES, "one partial result's slot, both dialects");

#define NAME_LEN 64 /* a value's name or literal */
#define ACC_LEN  (2 * NAME_LEN)

const char *cgen_ctype(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return "float";
    case KILN_DTYPE_F64: return "double";
    case KILN_DTYPE_I32: return "int32_t";
    case KILN_DTYPE_I64: return "int64_t";
    default: return "uint8_t";
    }
}

static const char *utype(kiln_dtype t) {
    return t == KILN_DTYPE_I32 ? "uint32_t" : "uint64_t";
}

/* ------------------------------------------------------ per-op syntax ---- */

/* A scalar constant, exact (floats in hex). */
static void c_literal(kiln_dtype t, int64_t i, double f, char *out, size_t m) {
    const char *ct = cgen_ctype(t);
    switch (t) {
    case KILN_DTYPE_I32: snprintf(out, m, "INT32_C(%d)", (int32_t)i); return;
    case KILN_DTYPE_I64:
        if (i == INT64_MIN)
            snprintf(out, m, "INT64_MIN");
        else
            snprintf(out, m, "INT64_C(%lld)", (long long)i);
        return;
    case KILN_DTYPE_BOOL: snprintf(out, m, "((uint8_t)%u)", (unsigned)i); return;
    default: break;
    }
    if (isnan(f))
        snprintf(out, m, "((%s)NAN)", ct);
    else if (isinf(f))
        snprintf(out, m, "(%s(%s)INFINITY)", f < 0 ? "-" : "", ct);
    else
        snprintf(out, m, "((%s)%a)", ct, f);
}

static const char *dtype_suffix(kiln_dtype t) {
    switch (t) {
    case KILN_DTYPE_F32: return "f32";
    case KILN_DTYPE_F64: return "f64";
    case KILN_DTYPE_I32: return "i32";
    case KILN_DTYPE_I64: return "i64";
    default: return "bool";
    }
}

/* The C expression of elementwise op `op` (result dtype t, data operand dtype in_t, the
 * node's attributes a) applied to the operand expressions x[]: the op's kernel expression
 * from the registry (src/ir/ir.h lists the placeholders) expanded with C's type names.
 * False when the op has none for that operand class (a registry hole, which
 * tests/test_registry.c keeps from happening). */
static bool c_op_expr(ir_op op, kiln_dtype t, kiln_dtype in_t, const ir_attrs *a,
                      const char *const *x, char *ex, size_t m) {
    static const char *const cmp[] = {"==", "!=", "<", "<=", ">", ">="};
    const char *tmpl = ir_ops[op].kexpr[ir_dtype_is_float(in_t) ? 0 : 1];
    if (!tmpl) return false;
    size_t k = 0;
    for (; *tmpl && k + 1 < m; tmpl++) {
        if (*tmpl != '$' || !tmpl[1]) {
            ex[k++] = *tmpl;
            continue;
        }
        const char *r = "";
        char c = *++tmpl;
        if (c >= '0' && c <= '2')
            r = x[c - '0'] ? x[c - '0'] : "";
        else if (c == 'T')
            r = cgen_ctype(t);
        else if (c == 'U')
            r = utype(in_t);
        else if (c == 'S')
            r = dtype_suffix(in_t);
        else if (c == 'R')
            r = dtype_suffix(t);
        else if (c == 'F')
            r = in_t == KILN_DTYPE_F32 ? "f" : "";
        else if (c == 'C')
            r = cmp[a->cmp];
        else if (c == 'D' && ir_rng_name(a->rng))
            r = ir_rng_name(a->rng);
        k += (size_t)snprintf(ex + k, m - k, "%s", r);
    }
    ex[k < m ? k : m - 1] = 0;
    return true;
}

/* ---------------------------------------------------------- helpers ---- */

/* What each dialect defines before the shared helpers: its types and limits, KILN_FN (the
 * qualifiers of a helper) and the f32 bit casts kiln_exp_f32 needs. NVRTC
 * has no C library headers, so the CUDA head spells the few names the kernels use. */
static const char head_c[] =
    "/* generated by kiln: fused kernels, one function each (see src/codegen/print_c.c) */\n"
    /* gcc and clang: the few names the kernels use, declared here rather than read from
     * math.h, stdint.h and string.h, whose parsing was a measurable part of a small
     * program's compile (bench/RESULTS.md, "First calls: where they go, and what was cut");
     * the math functions are the compilers' builtins by these prototypes. Any other
     * compiler reads the headers. */
    "#if defined(__GNUC__) && defined(__INT64_TYPE__) && defined(__INT64_C)\n"
    "typedef __INT8_TYPE__ int8_t; typedef __UINT8_TYPE__ uint8_t;\n"
    "typedef __INT32_TYPE__ int32_t; typedef __UINT32_TYPE__ uint32_t;\n"
    "typedef __INT64_TYPE__ int64_t; typedef __UINT64_TYPE__ uint64_t;\n"
    "#define INT32_MAX __INT32_MAX__\n#define INT32_MIN (-__INT32_MAX__ - 1)\n"
    "#define INT64_MAX __INT64_MAX__\n#define INT64_MIN (-__INT64_MAX__ - 1)\n"
    "#define INT32_C(x) __INT32_C(x)\n#define INT64_C(x) __INT64_C(x)\n"
    "#define INFINITY (__builtin_inff())\n#define NAN (__builtin_nanf(\"\"))\n"
    "#define memcpy __builtin_memcpy\n"
    "float sqrtf(float); double sqrt(double); float logf(float); double log(double);\n"
    "float log1pf(float); double log1p(double); float sinf(float); double sin(double);\n"
    "float cosf(float); double cos(double); float erff(float); double erf(double);\n"
    "double erfc(double); float floorf(float); double floor(double); float fabsf(float);\n"
    "double fabs(double); double copysign(double, double); float powf(float, float);\n"
    "double pow(double, double);\n"
    "double exp(double); double tanh(double); double nextafter(double, double);\n"
    "#else\n#include <math.h>\n#include <stdint.h>\n#include <string.h>\n#endif\n"
    "#define KILN_EXPORT __attribute__((visibility(\"default\")))\n"
    /* the guards: see c_qualifiers */
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#define KILN_GATHER_GUARD __attribute__((optimize(\"no-tree-vrp\")))\n"
    "#define KILN_BRANCH_GUARD __attribute__((optimize(\"no-tree-loop-if-convert\")))\n"
    "#define KILN_GATHER_BRANCH_GUARD \\\n"
    "    __attribute__((optimize(\"no-tree-vrp\", \"no-tree-loop-if-convert\")))\n"
    "#else\n#define KILN_GATHER_GUARD\n#define KILN_BRANCH_GUARD\n"
    "#define KILN_GATHER_BRANCH_GUARD\n#endif\n"
    "#define KILN_FN static inline\n"
    /* a reduction over a short row left unvectorised so that gcc vectorises across the
     * rows: only with AVX-512 (kdesc.h, KD_SHORT_REDUCE); elsewhere the row keeps its
     * pragma. -DKILN_ACROSS_ROWS=0 or 1 in KILN_CC_FLAGS chooses (the tests run both) */
    "#ifndef KILN_ACROSS_ROWS\n#if defined(__AVX512F__)\n#define KILN_ACROSS_ROWS 1\n#else\n"
    "#define KILN_ACROSS_ROWS 0\n#endif\n#endif\n"
    /* in a loop, keeps the compiler from vectorising it: the rarely run exact rerun of a
     * loop with fast sin and cos (fast_trig_loop), which vectorised would double the
     * kernel's compile time */
    "#if defined(__GNUC__)\n#define KILN_SCALAR_LOOP() __asm__ volatile(\"\" ::: \"memory\")\n"
    "#else\n#define KILN_SCALAR_LOOP()\n#endif\n"
    "KILN_FN uint32_t kiln_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }\n"
    "KILN_FN float kiln_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
    "KILN_FN uint64_t kiln_f64_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }\n"
    "KILN_FN double kiln_bits_f64(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }\n"
    /* a product's value, rounded where its node computes it: gcc (-ffp-contract=fast)
     * fuses a product into a sum that reads it in the same function, so, without this, a
     * value's bits would depend on whether its reader is in its kernel (inline) or reads
     * its buffer; a recomputation fused elsewhere than the forward value would round
     * differently. An xor with a zero the compiler cannot see (kiln_fence, read once per
     * kernel into kiln_z) hides where the value came from and costs one vector xor;
     * products inside a helper (the polynomials) still fuse. print_stmt, product_valued */
    "__attribute__((weak, visibility(\"hidden\"))) uint32_t kiln_fence;\n"
    "#define KILN_ROUNDED_f32(x) kiln_bits_f32(kiln_f32_bits(x) ^ kiln_z)\n"
    "#define KILN_ROUNDED_f64(x) kiln_bits_f64(kiln_f64_bits(x) ^ (uint64_t)kiln_z)\n"
    /* an 8 x 8 block of 4-byte elements transposed through registers: row j of `in` (its
     * rows si elements apart) becomes column j of `out` (rows so apart): three rounds of
     * two-vector shuffles (print_row_block); kiln_transpose8x8_8 below for 8 bytes */
    "#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)\n"
    "typedef uint32_t kiln_v8u __attribute__((vector_size(32)));\n"
    "__attribute__((unused)) KILN_FN void kiln_transpose8x8_4(const void *in, int64_t si,\n"
    "                                                         void *out, int64_t so) {\n"
    "    kiln_v8u r[8], t[8], u[8];\n"
    "    for (int k = 0; k < 8; k++) memcpy(&r[k], (const char *)in + 4 * k * si, 32);\n"
    "    for (int k = 0; k < 8; k += 2) { /* pairs of rows interleaved */\n"
    "        t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);\n"
    "        t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);\n"
    "    }\n"
    "    for (int k = 0; k < 8; k += 4) /* then pairs of pairs */\n"
    "        for (int h = 0; h < 2; h++) {\n"
    "            u[k + 2 * h] = __builtin_shufflevector(t[k + h], t[k + h + 2], 0, 1, 8, 9, 4, 5,\n"
    "                                                   12, 13);\n"
    "            u[k + 2 * h + 1] = __builtin_shufflevector(t[k + h], t[k + h + 2], 2, 3, 10, 11,\n"
    "                                                       6, 7, 14, 15);\n"
    "        }\n"
    "    for (int k = 0; k < 4; k++) { /* then the two halves */\n"
    "        kiln_v8u lo = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);\n"
    "        kiln_v8u hi = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);\n"
    "        memcpy((char *)out + 4 * k * so, &lo, 32);\n"
    "        memcpy((char *)out + 4 * (k + 4) * so, &hi, 32);\n"
    "    }\n"
    "}\n"
    /* and of 8-byte elements, as four 4 x 4 blocks of two rounds */
    "typedef uint64_t kiln_v4u __attribute__((vector_size(32)));\n"
    "__attribute__((unused)) KILN_FN void kiln_transpose4x4_8(const char *in, int64_t si,\n"
    "                                                         char *out, int64_t so) {\n"
    "    kiln_v4u r[4], t[4];\n"
    "    for (int k = 0; k < 4; k++) memcpy(&r[k], in + 8 * k * si, 32);\n"
    "    for (int k = 0; k < 4; k += 2) {\n"
    "        t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 4, 2, 6);\n"
    "        t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 1, 5, 3, 7);\n"
    "    }\n"
    "    for (int k = 0; k < 2; k++) {\n"
    "        kiln_v4u lo = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 4, 5);\n"
    "        kiln_v4u hi = __builtin_shufflevector(t[k], t[k + 2], 2, 3, 6, 7);\n"
    "        memcpy(out + 8 * k * so, &lo, 32);\n"
    "        memcpy(out + 8 * (k + 2) * so, &hi, 32);\n"
    "    }\n"
    "}\n"
    "__attribute__((unused)) KILN_FN void kiln_transpose8x8_8(const void *in, int64_t si,\n"
    "                                                         void *out, int64_t so) {\n"
    "    for (int i = 0; i < 8; i += 4)\n"
    "        for (int j = 0; j < 8; j += 4)\n"
    "            kiln_transpose4x4_8((const char *)in + 8 * (j * si + i), si,\n"
    "                                (char *)out + 8 * (i * so + j), so);\n"
    "}\n"
    "#else\n"
    "__attribute__((unused)) KILN_FN void kiln_transpose8x8_8(const void *in, int64_t si,\n"
    "                                                         void *out, int64_t so) {\n"
    "    for (int j = 0; j < 8; j++)\n"
    "        for (int k = 0; k < 8; k++)\n"
    "            memcpy((char *)out + 8 * (k * so + j), (const char *)in + 8 * (j * si + k), 8);\n"
    "}\n"
    "__attribute__((unused)) KILN_FN void kiln_transpose8x8_4(const void *in, int64_t si,\n"
    "                                                         void *out, int64_t so) {\n"
    "    for (int j = 0; j < 8; j++)\n"
    "        for (int k = 0; k < 8; k++)\n"
    "            memcpy((char *)out + 4 * (k * so + j), (const char *)in + 4 * (j * si + k), 4);\n"
    "}\n"
    "#endif\n"
    /* the runtime table (c_runtime.h), set by the loader; weak, as every part of a split
     * compile defines it. kiln_sum_f32 adds an f32 block's staged values (print_block_open)
     * through it: compiled once with the library rather than in every module, and never
     * inlined, so gcc cannot contract the product that made a value into the sum
     * (-ffp-contract=fast) in one kernel and not in another: a reduction recomputed
     * elsewhere gives the same bits. Pure, so the call does not make the kernel reload
     * what it read before it. */
    KN_C_RUNTIME_TEXT "__attribute__((weak, visibility(\"default\")))\n"
    "const struct kiln_runtime *kiln_module_runtime;\n"
    "#if defined(__GNUC__)\n"
    "#define KILN_RUNTIME() __atomic_load_n(&kiln_module_runtime, __ATOMIC_RELAXED)\n"
    "#else\n#define KILN_RUNTIME() kiln_module_runtime\n#endif\n"
    "__attribute__((noinline, pure, unused))\n"
    "static float kiln_sum_f32(const float *t, int64_t n) {\n"
    "    return KILN_RUNTIME()->sum_f32(t, n);\n"
    "}\n";

static const char head_cuda[] =
    "/* generated by kiln: fused kernels for the GPU, one __global__ function each (see "
    "src/codegen/print_c.c) */\n"
    "typedef signed char int8_t; typedef unsigned char uint8_t;\n"
    "typedef int int32_t; typedef unsigned int uint32_t;\n"
    "typedef long long int64_t; typedef unsigned long long uint64_t;\n"
    "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
    "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n"
    "#define INT32_C(x) x\n#define INT64_C(x) x##LL\n"
    "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
    "#ifndef NAN\n#define NAN __int_as_float(0x7fc00000)\n#endif\n"
    "#define KILN_FN static __device__ __forceinline__\n"
    "KILN_FN uint32_t kiln_f32_bits(float f) { return __float_as_uint(f); }\n"
    "KILN_FN float kiln_bits_f32(uint32_t u) { return __uint_as_float(u); }\n"
    "KILN_FN uint64_t kiln_f64_bits(double f) { return (uint64_t)__double_as_longlong(f); }\n"
    "KILN_FN double kiln_bits_f64(uint64_t u) { return __longlong_as_double((long long)u); }\n"
    /* a lane's accumulator exchanged with lane ^ o (every lane of the warp takes part) */
    "KILN_FN double kiln_shfl(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }\n"
    "KILN_FN float kiln_shfl(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }\n"
    "KILN_FN int32_t kiln_shfl(int32_t v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }\n"
    "KILN_FN int64_t kiln_shfl(int64_t v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }\n"
    "KILN_FN uint64_t kiln_shfl(uint64_t v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); "
    "}\n"
    "KILN_FN uint8_t kiln_shfl(uint8_t v, int o) { return (uint8_t)__shfl_xor_sync(0xffffffffu, "
    "(int)v, o); }\n";

/* exp and tanh for f32 written out, branch-free, so that loops calling them vectorise
 * (libm's expf is a scalar call): Cody-Waite range reduction exp(x) = 2^k exp(r) with
 * |r| <= ln2/2, a degree-6 polynomial for exp(r) (the Cephes coefficients), and 2^k put
 * into the exponent bits (two steps below 2^-120 so subnormal results come out right).
 * Max error ~1 ulp against exp in double rounded to f32; NaN and +-inf handled by selects.
 * tanh: an odd polynomial for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1), and x itself below
 * 2^-12, where tanh(x) rounds to x (the polynomial's p z x + x would turn -0 into +0). The
 * GPU runs the same code, without contracting products into FMAs as gcc does on the CPU,
 * so the two can differ in the last bit. */
static const char math_f32[] =
    "KILN_FN float kiln_exp_f32(float x) {\n"
    /* a NaN becomes 0 here, so no NaN reaches the conversion to int32 (undefined in C);
     * the last line returns it */
    "    float xc = x < -104.0f ? -104.0f : x > 88.75f ? 88.75f : x == x ? x : 0.0f;\n"
    "    float kf = floorf(xc * 1.44269504088896341f + 0.5f);\n"
    "    float r = xc - kf * 0.693359375f;\n"
    "    r = r + kf * 2.12194440e-4f;\n"
    "    float p = 1.9875691500e-4f;\n"
    "    p = p * r + 1.3981999507e-3f;\n"
    "    p = p * r + 8.3334519073e-3f;\n"
    "    p = p * r + 4.1665795894e-2f;\n"
    "    p = p * r + 1.6666665459e-1f;\n"
    "    p = p * r + 5.0000001201e-1f;\n"
    "    float y = p * r * r + r + 1.0f;\n"
    "    int32_t k = (int32_t)kf, kk = k < -120 ? k + 100 : k;\n"
    "    y = kiln_bits_f32(kiln_f32_bits(y) + ((uint32_t)kk << 23));\n"
    "    y = k < -120 ? y * 7.8886090522101181e-31f : y;\n"
    "    y = x >= 88.72283935546875f ? INFINITY : y;\n"
    "    return x != x ? x : y;\n"
    "}\n"
    "KILN_FN float kiln_tanh_f32(float x) {\n"
    "    float a = fabsf(x), z = x * x;\n"
    "    float p = -5.70498872745e-3f;\n"
    "    p = p * z + 2.06390887954e-2f;\n"
    "    p = p * z - 5.37397155531e-2f;\n"
    "    p = p * z + 1.33314422036e-1f;\n"
    "    p = p * z - 3.33332819422e-1f;\n"
    "    float small = a < 0x1p-12f ? x : p * z * x + x;\n"
    "    float big = 1.0f - 2.0f / (kiln_exp_f32(2.0f * a) + 1.0f);\n"
    "    big = x < 0 ? -big : big;\n"
    "    return a < 0.625f ? small : big;\n"
    "}\n"
    /* ln x, branch-free so that loops calling it vectorise (libm's logf is a scalar call,
     * and kept a whole fused loop scalar): Cephes' logf, x = m 2^e with m in [sqrt(1/2),
     * sqrt(2)), a degree-9 polynomial in m - 1 and ln 2 in two parts; subnormals scaled
     * by 2^23 first, and 0, negatives, +inf and NaN by selects. A positive normal x takes
     * exactly the arithmetic the random normals were drawn with (print_random.c), so their
     * bits do not move */
    "KILN_FN float kiln_log_f32(float x) {\n"
    "    int sub = x < 0x1p-126f;\n"
    "    uint32_t b = kiln_f32_bits(sub ? x * 0x1p23f : x);\n"
    "    float e = (float)((int32_t)(b >> 23) - 126) - (sub ? 23.0f : 0.0f);\n"
    "    float m = kiln_bits_f32((b & 0x007fffffu) | 0x3f000000u);\n"
    "    int small = m < 0.707106781186547524f;\n"
    "    e = small ? e - 1.0f : e;\n"
    "    m = small ? m + m - 1.0f : m - 1.0f;\n"
    "    float z = m * m, y = 7.0376836292e-2f;\n"
    "    y = y * m - 1.1514610310e-1f; y = y * m + 1.1676998740e-1f;\n"
    "    y = y * m - 1.2420140846e-1f; y = y * m + 1.4249322787e-1f;\n"
    "    y = y * m - 1.6668057665e-1f; y = y * m + 2.0000714765e-1f;\n"
    "    y = y * m - 2.4999993993e-1f; y = y * m + 3.3333331174e-1f;\n"
    "    y = y * m * z - 2.12194440e-4f * e - 0.5f * z;\n"
    "    float r = m + y + 0.693359375f * e;\n"
    "    r = x == 0 ? -INFINITY : x < 0 ? NAN : x == INFINITY ? x : r;\n"
    "    return x != x ? x : r;\n"
    "}\n"
    /* ln(1 + x) as ln u + (x - (u - 1)) / u, u = 1 + x rounded: the quotient puts back
     * what rounding u lost; x itself where u is 1 (keeps -0), -inf at -1, +inf at +inf */
    "KILN_FN float kiln_log1p_f32(float x) {\n"
    "    float u = 1.0f + x;\n"
    "    float r = kiln_log_f32(u) + (x - (u - 1.0f)) / u;\n"
    "    r = u == 1.0f ? x : x == -1.0f ? -INFINITY : x == INFINITY ? x : r;\n"
    "    return x != x ? x : r;\n"
    "}\n"
    /* erf, branch-free: x (1 + P(x^2)) below |x| = 1 and 1 - exp(-x^2) R(1/|x|) up to
     * 3.92 (where erf rounds to 1 already), P of degree 6 and R of degree 8 fitted to
     * erf / x and erfc(x) exp(x^2) (scripts/fit_erf.py: least squares against mpmath,
     * 1.2e-9 relative, 4e-9 absolute; within 1 ulp of erf over all 2^32 inputs, test_math);
     * the sign put back by bits (erf(-0) is -0) */
    "KILN_FN float kiln_erf_f32(float x) {\n"
    "    float a = fabsf(x), z = a * a, t = 1.0f / a;\n"
    "    float p = 7.84726217e-05f;\n"
    "    p = p * z - 0.000800819311f; p = p * z + 0.00518809957f;\n"
    "    p = p * z - 0.0268536918f; p = p * z + 0.112835824f;\n"
    "    p = p * z - 0.37612626f; p = p * z + 0.128379166f;\n"
    "    float q = -0.00710721128f;\n"
    "    q = q * t + 0.0168464519f; q = q * t + 0.048697006f;\n"
    "    q = q * t - 0.271449566f; q = q * t + 0.518165529f;\n"
    "    q = q * t - 0.481054515f; q = q * t + 0.0445161834f;\n"
    "    q = q * t + 0.558677077f; q = q * t + 0.00029260997f;\n"
    "    float r = a < 1.0f ? a + a * p : a < 3.92f ? 1.0f - kiln_exp_f32(-z) * q : 1.0f;\n"
    "    r = kiln_bits_f32(kiln_f32_bits(r) | (kiln_f32_bits(x) & 0x80000000u));\n"
    "    return x != x ? x : r;\n"
    "}\n"
    /* sin and cos, vectorisable. |x| is reduced by pi/2 to r in [-pi/4, pi/4] and a
     * quadrant: below 2^21 by Cody and Waite in double (pi/2 in three parts, the first of
     * 32 bits so that k times it is exact), within 1e-14 of r at the floats closest to
     * multiples of pi/2 (mpmath); from 2^21 exactly for every finite float (Payne and
     * Hanek in 64-bit integer arithmetic that vectorises, within 6e-12 of r:
     * KN_C_PIO2_BIG in src/backend/c_runtime.h, the steps the CPU backend's runtime table
     * runs for the exact rerun of a fast-trig loop, printed here). A loop that vectorises computes
     * both reductions and keeps one per lane (gcc's if-conversion); scalar code takes the branch
     * and is as fast as libm's sinf. sin r and cos r are Taylor polynomials in double (truncation
     * 1e-11 at pi/4), chosen and signed by the quadrant, and rounded once to f32; sin keeps x below
     * 2^-12 (and so -0), inf and NaN give NaN */
    "typedef struct kiln_pio2 { double r; uint32_t quadrant; } kiln_pio2;\n"
    "KILN_FN kiln_pio2 kiln_reduce_pio2_small_f32(float a) { /* 0 <= a < 2^21 */\n"
    "    kiln_pio2 v;\n"
    "    double d = a, k = (d * 0x1.45f306dc9c883p-1 + 0x1.8p52) - 0x1.8p52;\n"
    "    v.r = ((d - k * 0x1.921fb544p+0) - k * 0x1.0b4611a626331p-34) - k * "
    "0x1.1701b839a2520p-88;\n"
    "    v.quadrant = (uint32_t)(int32_t)k; /* k < 2^21: AVX2 converts it */\n"
    "    return v;\n"
    "}\n"
    "KILN_FN kiln_pio2 kiln_reduce_pio2_f32(float x) {\n"
    "    float a = fabsf(x);\n"
    "    kiln_pio2 v;\n"
    "    if (a < 0x1p21f) return kiln_reduce_pio2_small_f32(a);\n"
    "    " KN_C_RUNTIME_STR(KN_C_PIO2_BIG(
        a, v.r,
        v.quadrant)) ";\n" /* c_runtime.h */
                     "    return v;\n"
                     "}\n"
                     "KILN_FN double kiln_sin_poly(double r) {\n"
                     "    double z = r * r, p = -2.5052108385441720e-08;\n"
                     "    p = p * z + 2.7557319223985893e-06; p = p * z - 1.9841269841269841e-04;\n"
                     "    p = p * z + 8.3333333333333333e-03; p = p * z - 1.6666666666666667e-01;\n"
                     "    return r + r * z * p;\n"
                     "}\n"
                     "KILN_FN double kiln_cos_poly(double r) {\n"
                     "    double z = r * r, p = 2.0876756987868099e-09;\n"
                     "    p = p * z - 2.7557319223985888e-07; p = p * z + 2.4801587301587302e-05;\n"
                     "    p = p * z - 1.3888888888888889e-03; p = p * z + 4.1666666666666667e-02;\n"
                     "    return 1.0 - 0.5 * z + z * z * p;\n"
                     "}\n"
                     "KILN_FN float kiln_sin_of_f32(float x, kiln_pio2 p) {\n"
                     "    uint32_t n = p.quadrant;\n"
                     "    double v = n & 1u ? kiln_cos_poly(p.r) : kiln_sin_poly(p.r);\n"
                     "    v = (n & 2u) != (x < 0 ? 2u : 0u) ? -v : v;\n"
                     "    return fabsf(x) < 0x1p-12f ? x : x - x != 0 ? x - x : (float)v;\n"
                     "}\n"
                     "KILN_FN float kiln_cos_of_f32(float x, kiln_pio2 p) {\n"
                     "    uint32_t n = p.quadrant;\n"
                     "    double v = n & 1u ? kiln_sin_poly(p.r) : kiln_cos_poly(p.r);\n"
                     "    v = ((n + 1u) & 2u) ? -v : v;\n"
                     "    return x - x != 0 ? x - x : (float)v;\n"
                     "}\n"
                     "KILN_FN float kiln_sin_f32(float x) { return kiln_sin_of_f32(x, "
                     "kiln_reduce_pio2_f32(x)); }\n"
                     "KILN_FN float kiln_cos_f32(float x) { return kiln_cos_of_f32(x, "
                     "kiln_reduce_pio2_f32(x)); }\n"
                     /* the same below 2^21 (and for inf and NaN) by Cody and Waite alone: the loop
                      * that calls them also ors kiln_trig_big_f32 of each argument, and runs again
                      * with the exact ones when it is set (fast_trig_loop) */
                     "KILN_FN kiln_pio2 kiln_reduce_fast_f32(float x) {\n"
                     "    float a = fabsf(x);\n"
                     "    return kiln_reduce_pio2_small_f32(a < 0x1p21f ? a : 0.0f);\n"
                     "}\n"
                     "KILN_FN uint32_t kiln_trig_big_f32(float x) {\n"
                     "    float a = fabsf(x);\n"
                     "    return a >= 0x1p21f && a <= 0x1.fffffep127f;\n"
                     "}\n"
                     "KILN_FN float kiln_sin_fast_f32(float x) { return kiln_sin_of_f32(x, "
                     "kiln_reduce_fast_f32(x)); }\n"
                     "KILN_FN float kiln_cos_fast_f32(float x) { return kiln_cos_of_f32(x, "
                     "kiln_reduce_fast_f32(x)); }\n"
                     /* 1/(1+exp(-x)), as exp(x)/(1+exp(x)) for x < 0 (the reference's
                      * form), so it does not flush to 0 before exp(x) does; one
                      * division whose numerator is selected (a vectorised loop
                      * computes both arms of a select) */
                     "KILN_FN float kiln_logistic_f32(float x) {\n"
                     "    float e = kiln_exp_f32(-fabsf(x));\n"
                     "    return (x >= 0 ? 1.0f : e) / (1.0f + e);\n"
                     "}\n";

/* f64 exp, tanh, log and log1p on the CPU: kiln's own, so that loops over them vectorise (libm's
 * are calls, one element at a time, and one in a fused loop keeps all of it scalar: measured
 * slower than these, tanh than XLA's and a loop of four f64 functions than NumPy's, whose own
 * are vectorised; bench/RESULTS.md, "f64 elementwise functions against JAX, one core").
 * exp: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, the first with trailing
 * zeros so n ln2_hi is exact), n rounded by adding and subtracting 1.5 * 2^52 (its bits then hold
 * n, read without a float-to-int conversion), e^r by Taylor's series to r^13 (the rest below 2^-57
 * relative), and 2^n applied in two factors, so that a result in the subnormals is rounded once; x
 * is clamped to [-746, 710] first (0 and inf beyond, NaN stays NaN). tanh: 1 - 2 / (e^2|x| + 1)
 * for |x| >= 0.55, where it is at least 1/2 and nothing cancels; below, e / (e + 2) with e =
 * expm1(2|x|) by its series to the 19th power; both computed and one chosen, then the sign of x
 * put back (-0 stays -0). log: x = 2^k m with m in [sqrt(2)/2, sqrt(2)) read from the bits
 * (subnormals scaled by 2^54 first), f = m - 1, and log(1 + f) = f - f^2/2 + s (f^2/2 + R) with s
 * = f / (2 + f) and R = 2 atanh(s)/s - 2 by its series in s^2 (|s| < 0.172, eleven terms), k ln2
 * in two parts; 0 gives -inf, a negative NaN. log1p through log, below. Against long double libm
 * (tests/test_math.c; and 4e7 random arguments standalone): exp and log within 1 ulp as glibc's,
 * tanh and log1p within 2.4 and 2 ulp (glibc's: 2.2 and 1). On the GPU, CUDA's own functions. */
/* C only: the exact rerun of a fast-trig loop (fast_trig_loop), scalar anyway, reduces an
 * argument of 2^21 or more through the runtime table (c_runtime.h, pio2_f32) rather than
 * inline; the same bits as kiln_sin_f32 and kiln_cos_f32, which vectorised loops keep. */
static const char math_f32_cpu[] = "KILN_FN kiln_pio2 kiln_reduce_pio2_rerun_f32(float x) {\n"
                                   "    float a = fabsf(x);\n"
                                   "    if (a < 0x1p21f) return kiln_reduce_pio2_small_f32(a);\n"
                                   "    kiln_pio2 v;\n"
                                   "    v.r = KILN_RUNTIME()->pio2_f32(a, &v.quadrant);\n"
                                   "    return v;\n"
                                   "}\n"
                                   "KILN_FN float kiln_sin_rerun_f32(float x) {\n"
                                   "    return kiln_sin_of_f32(x, kiln_reduce_pio2_rerun_f32(x));\n"
                                   "}\n"
                                   "KILN_FN float kiln_cos_rerun_f32(float x) {\n"
                                   "    return kiln_cos_of_f32(x, kiln_reduce_pio2_rerun_f32(x));\n"
                                   "}\n";

static const char math_f64_cpu[] =
    "KILN_FN double kiln_exp_f64(double x) {\n"
    "    x = x > 710.0 ? 710.0 : x;\n"
    "    x = x < -746.0 ? -746.0 : x;\n"
    "    double t = x * 0x1.71547652b82fep+0 + 0x1.8p52, n = t - 0x1.8p52;\n"
    "    double r = x - n * 0x1.62e42fee00000p-1 - n * 0x1.a39ef35793c76p-33;\n"
    "    double p = 0x1.6124613a86d09p-33;\n"
    "    p = p * r + 0x1.1eed8eff8d898p-29; p = p * r + 0x1.ae64567f544e4p-26;\n"
    "    p = p * r + 0x1.27e4fb7789f5cp-22; p = p * r + 0x1.71de3a556c734p-19;\n"
    "    p = p * r + 0x1.a01a01a01a01ap-16; p = p * r + 0x1.a01a01a01a01ap-13;\n"
    "    p = p * r + 0x1.6c16c16c16c17p-10; p = p * r + 0x1.1111111111111p-7;\n"
    "    p = p * r + 0x1.5555555555555p-5; p = p * r + 0x1.5555555555555p-3;\n"
    "    p = p * r + 0.5; p = p * r + 1.0; p = p * r + 1.0;\n"
    "    int64_t k = (int64_t)(kiln_f64_bits(t) - kiln_f64_bits(0x1.8p52)), k1 = k >> 1;\n"
    "    return p * kiln_bits_f64((uint64_t)(k1 + 1023) << 52) *\n"
    "           kiln_bits_f64((uint64_t)(k - k1 + 1023) << 52);\n"
    "}\n"
    "KILN_FN double kiln_tanh_f64(double x) {\n"
    "    double a = fabs(x), y = 2.0 * a;\n"
    "    double big = 1.0 - 2.0 / (kiln_exp_f64(y) + 1.0);\n"
    "    double s = y < 1.1 ? y : 1.1, m = 0x1.2f49b46814157p-57;\n"
    "    m = m * s + 0x1.6827863b97d97p-53; m = m * s + 0x1.952c77030ad4ap-49;\n"
    "    m = m * s + 0x1.ae7f3e733b81fp-45; m = m * s + 0x1.ae7f3e733b81fp-41;\n"
    "    m = m * s + 0x1.93974a8c07c9dp-37; m = m * s + 0x1.6124613a86d09p-33;\n"
    "    m = m * s + 0x1.1eed8eff8d898p-29; m = m * s + 0x1.ae64567f544e4p-26;\n"
    "    m = m * s + 0x1.27e4fb7789f5cp-22; m = m * s + 0x1.71de3a556c734p-19;\n"
    "    m = m * s + 0x1.a01a01a01a01ap-16; m = m * s + 0x1.a01a01a01a01ap-13;\n"
    "    m = m * s + 0x1.6c16c16c16c17p-10; m = m * s + 0x1.1111111111111p-7;\n"
    "    m = m * s + 0x1.5555555555555p-5; m = m * s + 0x1.5555555555555p-3;\n"
    "    m = m * s + 0.5; m = m * s * s + s;\n"
    "    return copysign(a < 0.55 ? m / (m + 2.0) : big, x);\n"
    "}\n"
    "KILN_FN double kiln_log_f64(double x) {\n"
    "    int sub = x < 0x1p-1022;\n"
    "    uint64_t u = kiln_f64_bits(sub ? x * 0x1p54 : x);\n"
    "    int64_t k = (int64_t)(u >> 52) - (sub ? 1077 : 1023);\n"
    "    uint64_t m = (u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;\n"
    "    int big = m >= 0x3ff6a09e667f3bcdull;\n"
    "    m = big ? m - 0x0010000000000000ull : m;\n"
    "    k += big;\n"
    "    double f = kiln_bits_f64(m) - 1.0, s = f / (2.0 + f), z = s * s, h = 0.5 * f * f;\n"
    "    double q = 0x1.642c8590b2164p-4;\n"
    "    q = q * z + 0x1.8618618618618p-4; q = q * z + 0x1.af286bca1af28p-4;\n"
    "    q = q * z + 0x1.e1e1e1e1e1e1ep-4; q = q * z + 0x1.1111111111111p-3;\n"
    "    q = q * z + 0x1.3b13b13b13b14p-3; q = q * z + 0x1.745d1745d1746p-3;\n"
    "    q = q * z + 0x1.c71c71c71c71cp-3; q = q * z + 0x1.2492492492492p-2;\n"
    "    q = q * z + 0x1.999999999999ap-2; q = q * z + 0x1.5555555555555p-1;\n"
    "    q *= z;\n"
    "    double dk = kiln_bits_f64(0x4330000000000000ull + (uint64_t)(k + 2048)) -\n"
    "                0x1.0000000000800p52;\n"
    "    double r = dk * 0x1.62e42fee00000p-1 +\n"
    "               (((dk * 0x1.a39ef35793c76p-33 + s * (h + q)) - h) + f);\n"
    "    r = x == 0 ? -(double)INFINITY : r;\n"
    "    r = x < 0 ? (double)NAN : r;\n"
    "    return x == (double)INFINITY || x != x ? x : r;\n"
    "}\n"
    /* log1p(x) = log(u) x / (u - 1) with u = 1 + x rounded (Goldberg, "What every computer
     * scientist should know about floating-point arithmetic", theorem 4): within 2 ulp */
    "KILN_FN double kiln_log1p_f64(double x) {\n"
    "    double u = 1.0 + x, d = u - 1.0;\n"
    "    double r = kiln_log_f64(u) * (x / (d == 0 ? 1.0 : d));\n"
    "    r = d == 0 ? x : r;\n"
    "    return x == (double)INFINITY ? x : r;\n"
    "}\n";
static const char math_f64_cuda[] =
    "KILN_FN double kiln_exp_f64(double x) { return exp(x); }\n"
    "KILN_FN double kiln_tanh_f64(double x) { return tanh(x); }\n"
    "KILN_FN double kiln_log_f64(double x) { return log(x); }\n"
    "KILN_FN double kiln_log1p_f64(double x) { return log1p(x); }\n";

/* The f64 forms of the helpers the registry's kernel expressions name (kiln_exp_f64,
 * kiln_tanh_f64, kiln_log_f64 and kiln_log1p_f64 above, by dialect). */
static const char math_f64[] = "KILN_FN double kiln_sin_f64(double x) { return sin(x); }\n"
                               "KILN_FN double kiln_cos_f64(double x) { return cos(x); }\n"
                               "KILN_FN double kiln_erf_f64(double x) { return erf(x); }\n"
                               "KILN_FN double kiln_logistic_f64(double x) {\n"
                               "    double e = kiln_exp_f64(-fabs(x));\n"
                               "    return (x >= 0 ? 1.0 : e) / (1.0 + e);\n"
                               "}\n";

/* CONVERT's kernel expression is kiln_cvt_<from>_<to>: float -> int saturates (NaN -> 0),
 * to bool tests != 0, i64 -> i32 wraps; the rest are C conversions. bool -> float goes
 * through int32: gcc 12 has no vector form of a byte -> float conversion and leaves the
 * whole loop scalar (a one-hot mask in cross-entropy's gradient ran far below the memory's
 * bandwidth: bench/RESULTS.md, "Quiet machine, all branches merged: the figures that close
 * issues 9, 10 and 14"). */
static const char converts[] =
    "KILN_FN float kiln_cvt_f32_f32(float a) { return (float)a; }\n"
    "KILN_FN double kiln_cvt_f32_f64(float a) { return (double)a; }\n"
    "KILN_FN int32_t kiln_cvt_f32_i32(float a) { return kiln_f2i32((double)a); }\n"
    "KILN_FN int64_t kiln_cvt_f32_i64(float a) { return kiln_f2i64((double)a); }\n"
    "KILN_FN uint8_t kiln_cvt_f32_bool(float a) { return (uint8_t)(a != 0); }\n"
    "KILN_FN float kiln_cvt_f64_f32(double a) { return (float)a; }\n"
    "KILN_FN double kiln_cvt_f64_f64(double a) { return (double)a; }\n"
    "KILN_FN int32_t kiln_cvt_f64_i32(double a) { return kiln_f2i32((double)a); }\n"
    "KILN_FN int64_t kiln_cvt_f64_i64(double a) { return kiln_f2i64((double)a); }\n"
    "KILN_FN uint8_t kiln_cvt_f64_bool(double a) { return (uint8_t)(a != 0); }\n"
    "KILN_FN float kiln_cvt_i32_f32(int32_t a) { return (float)a; }\n"
    "KILN_FN double kiln_cvt_i32_f64(int32_t a) { return (double)a; }\n"
    "KILN_FN int32_t kiln_cvt_i32_i32(int32_t a) { return (int32_t)a; }\n"
    "KILN_FN int64_t kiln_cvt_i32_i64(int32_t a) { return (int64_t)a; }\n"
    "KILN_FN uint8_t kiln_cvt_i32_bool(int32_t a) { return (uint8_t)(a != 0); }\n"
    "KILN_FN float kiln_cvt_i64_f32(int64_t a) { return (float)a; }\n"
    "KILN_FN double kiln_cvt_i64_f64(int64_t a) { return (double)a; }\n"
    "KILN_FN int32_t kiln_cvt_i64_i32(int64_t a) { return (int32_t)(uint32_t)(uint64_t)a; }\n"
    "KILN_FN int64_t kiln_cvt_i64_i64(int64_t a) { return (int64_t)a; }\n"
    "KILN_FN uint8_t kiln_cvt_i64_bool(int64_t a) { return (uint8_t)(a != 0); }\n"
    "KILN_FN float kiln_cvt_bool_f32(uint8_t a) { return (float)(int32_t)a; }\n"
    "KILN_FN double kiln_cvt_bool_f64(uint8_t a) { return (double)(int32_t)a; }\n"
    "KILN_FN int32_t kiln_cvt_bool_i32(uint8_t a) { return (int32_t)a; }\n"
    "KILN_FN int64_t kiln_cvt_bool_i64(uint8_t a) { return (int64_t)a; }\n"
    "KILN_FN uint8_t kiln_cvt_bool_bool(uint8_t a) { return (uint8_t)(a != 0); }\n";

static const char prelude[] =
    "KILN_FN int32_t kiln_div_i32(int32_t a, int32_t b) { return b == 0 ? -1 : (a == "
    "INT32_MIN && b == -1) ? a : a / b; }\n"
    "KILN_FN int64_t kiln_div_i64(int64_t a, int64_t b) { return b == 0 ? -1 : (a == "
    "INT64_MIN && b == -1) ? a : a / b; }\n"
    "#define KILN_IPOW(T, U) \\\n"
    "KILN_FN T kiln_pow_##T(T a, T b) { \\\n"
    "    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0; \\\n"
    "    U r = 1, x = (U)a; \\\n"
    "    for (; b; b >>= 1, x *= x) if (b & 1) r *= x; \\\n"
    "    return (T)r; }\n"
    "typedef int32_t i32; typedef int64_t i64;\n"
    "KILN_IPOW(i32, uint32_t)\nKILN_IPOW(i64, uint64_t)\n"
    /* NaN in a wins by the first test, NaN in b because every compare fails; equal
     * operands are combined bitwise, so that -0 < +0 as in jnp.maximum / jnp.minimum
     * (max: +0 unless both are -0, min: -0 if either is) and any other tie gives itself */
    "KILN_FN float kiln_max_f32(float a, float b) { return (a > b || a != a) ? a : a == b ? "
    "kiln_bits_f32(kiln_f32_bits(a) & kiln_f32_bits(b)) : b; }\n"
    "KILN_FN float kiln_min_f32(float a, float b) { return (a < b || a != a) ? a : a == b ? "
    "kiln_bits_f32(kiln_f32_bits(a) | kiln_f32_bits(b)) : b; }\n"
    "KILN_FN double kiln_max_f64(double a, double b) { return (a > b || a != a) ? a : a == b ? "
    "kiln_bits_f64(kiln_f64_bits(a) & kiln_f64_bits(b)) : b; }\n"
    "KILN_FN double kiln_min_f64(double a, double b) { return (a < b || a != a) ? a : a == b ? "
    "kiln_bits_f64(kiln_f64_bits(a) | kiln_f64_bits(b)) : b; }\n"
    "KILN_FN int32_t kiln_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }\n"
    "KILN_FN int32_t kiln_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }\n"
    "KILN_FN int64_t kiln_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "KILN_FN int64_t kiln_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "KILN_FN int32_t kiln_f2i32(double x) { return x != x ? 0 : x >= 2147483647.0 ? "
    "INT32_MAX : x <= -2147483648.0 ? INT32_MIN : (int32_t)x; }\n"
    "KILN_FN int64_t kiln_f2i64(double x) { return x != x ? 0 : x >= 9223372036854775808.0 ? "
    "INT64_MAX : x <= -9223372036854775808.0 ? INT64_MIN : (int64_t)x; }\n";

/* ------------------------------------------------------------ names ---- */

/* How a CUDA kernel spreads an item over its block (see the top of the file). */
typedef enum cuda_form {
    CF_THREADS, /* a thread per element of the chunk (elementwise, column reductions) */
    CF_WARP,    /* a warp per element; lanes share its reductions */
    CF_BLOCK,   /* the whole block per element (few elements, long reductions) */
    CF_ROW,     /* the block per row: its values by the block, then a thread per element */
} cuda_form;

#define PR_MAX_BLOCKS 8  /* f32 blocks open at once; deeper nests sum in f64 */
#define F_STRIPED     1  /* ACC: its innermost loop was lane-strided */
#define F_VLOAD       2  /* LOAD: one 16-byte load for four consecutive elements */
#define F_VSTORE      4  /* STORE: likewise */
#define F_SPLIT       8  /* CUDA, ACC: a reduction split over blocks (cuda_element_split) */
#define F_SPLIT_LOOP  16 /* CUDA, LOOP: the loop that split is at (also a column split's) */

/* C: an open f32 block (kd_reduce.blocked): the depth of its body and its accumulator (0:
 * every blocked column accumulator). A scalar accumulator's block is staged
 * (print_block_open): its values go to acc<a>_t[at] and kiln_sum_f32 adds `count` of them. */
typedef struct pr_block {
    int depth;
    uint32_t acc;
    bool once; /* the loop adds into acc exactly once per iteration (accum_once) */
    char at[2 * NAME_LEN], count[2 * NAME_LEN];
} pr_block;

typedef struct pr {
    const kd_kernel *kd;
    strbuf *sb;
    int depth;
    int hole; /* an op with no kernel expression for its operands (+1), or 0 */
    kn_dialect dialect;
    /* CUDA only */
    cuda_form form;
    int64_t chunk, chunks; /* the last axis' split (C: the description's) */
    int stripe_depth;      /* depth of the lane-strided loop being printed (0: none) */
    bool in_elems;         /* CF_ROW: printing the element loop (after the prologue) */
    uint8_t *flags;        /* per statement: F_* below */
    bool vec;              /* the element loop is printed four elements at a time */
    int lane;              /* vec: which of the four is being printed (-1: none) */
    /* C only: the f32 blocks open, innermost last */
    pr_block blk[PR_MAX_BLOCKS];
    int n_blk;
    /* C only: the slices open (kd_stmt.slices), innermost last: the depth of the slice
     * loop's body and the loop's statement */
    struct {
        int depth;
        uint32_t loop;
    } slice[PR_MAX_BLOCKS];
    int n_slice;
    /* a split reduction (kd->parts; in CUDA also a column reduction of few items, see
     * cuda_column_split): 1 while printing kiln_k<i>_part, 2 while printing kiln_k<i> */
    int part_mode;
    uint32_t split_loop; /* the split loop: C's, and a CUDA column split's (also F_SPLIT_LOOP) */
    uint32_t *split_k;   /* CUDA: per F_SPLIT accumulator, its number among them */
    uint32_t n_split;    /* CUDA: how many accumulators are split */
    int64_t split_parts; /* the parts: kd->parts in C; CUDA: cuda_*_split's choice */
    int64_t base_items;  /* CUDA: kiln_k<i>'s own items (the part kernel runs parts x them) */
    bool fast_trig;      /* C: f32 sin and cos without Payne-Hanek (fast_trig_loop) */
    bool trig_rerun;     /* C: printing that loop's exact rerun, kept scalar */
} pr;

/* Whether accumulator a sums into its f32 block here. */
static bool in_block(const pr *p, uint32_t a) {
    const kd_stmt *s = &p->kd->stmts[a];
    for (int i = 0; i < p->n_blk; i++)
        if (p->blk[i].acc == a || (!p->blk[i].acc && s->column && s->red.blocked)) return true;
    return false;
}

/* The open block that holds accumulator a's f32 sum, or NULL. */
static const pr_block *block_of(const pr *p, uint32_t a) {
    for (int i = 0; i < p->n_blk; i++)
        if (p->blk[i].acc == a) return &p->blk[i];
    return NULL;
}

static void var_name(const kd_kernel *kd, uint32_t v, char *out) {
    const kd_var *x = &kd->vars[v];
    switch (x->kind) {
    case KD_VAR_ROW: snprintf(out, NAME_LEN, "row"); break;
    case KD_VAR_AXIS: snprintf(out, NAME_LEN, "i%d", x->axis); break;
    case KD_VAR_REDUCE: snprintf(out, NAME_LEN, "r%u_%d", x->node, x->axis); break;
    }
}

/* The expression of value s: a literal, or the variable that holds it. */
static void val_name(const kd_kernel *kd, uint32_t s, char *out) {
    const kd_stmt *st = &kd->stmts[s];
    if (st->kind == KS_LIT)
        c_literal(st->dtype, st->lit.i, st->lit.f, out, NAME_LEN);
    else
        snprintf(out, NAME_LEN, "v%u", s);
}

/* ---------------------------------------------------------- indices ---- */

static void print_ix(const kd_kernel *kd, strbuf *sb, uint32_t ix);

/* A compound index (several terms, or a term and a constant) needs parentheses as the
 * operand of *, / or %; a single term does not, since those share one precedence level
 * and associate left: `i0 / 4 % 8 * 16` is ((i0 / 4) % 8) * 16. */
static bool ix_compound(const kd_kernel *kd, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    return x->n > 1 || (x->n == 1 && x->c != 0);
}

static void print_operand(const kd_kernel *kd, strbuf *sb, uint32_t ix) {
    bool par = ix_compound(kd, ix);
    if (par) sb_append(sb, "(");
    print_ix(kd, sb, ix);
    if (par) sb_append(sb, ")");
}

static void print_atom(const kd_kernel *kd, strbuf *sb, uint32_t atom) {
    const kd_atom *a = &kd->atoms[atom];
    char name[NAME_LEN];
    switch (a->kind) {
    case KD_ATOM_VAR:
        var_name(kd, a->arg, name);
        sb_append(sb, name);
        break;
    case KD_ATOM_VAL: sb_printf(sb, "v%u", a->arg); break;
    case KD_ATOM_DIV:
    case KD_ATOM_MOD:
        if (kd->split && a->n == kd->split && kd_ix_is_last(kd, a->arg)) {
            var_name(kd, kd->last_var, name); /* the element loop defines these (split_names) */
            sb_printf(sb, "%s%c", name, a->kind == KD_ATOM_DIV ? 'q' : 'r');
            break;
        }
        print_operand(kd, sb, a->arg);
        sb_printf(sb, " %s %lld", a->kind == KD_ATOM_DIV ? "/" : "%", (long long)a->n);
        break;
    }
}

/* c + sum coef * atom, as `i0 * 4096 + i1 - 3`. */
static void print_ix(const kd_kernel *kd, strbuf *sb, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *t = &kd->terms[x->first + i];
        int64_t c = t->coef;
        if (i)
            sb_append(sb, c < 0 ? " - " : " + ");
        else if (c < 0)
            sb_append(sb, "-");
        print_atom(kd, sb, t->atom);
        if (c != 1 && c != -1) sb_printf(sb, " * %lld", c < 0 ? -(long long)c : (long long)c);
    }
    if (!x->n)
        sb_printf(sb, "%lld", (long long)x->c);
    else if (x->c)
        sb_printf(sb, " %s %lld", x->c < 0 ? "-" : "+",
                  x->c < 0 ? -(long long)x->c : (long long)x->c);
}

/* ------------------------------------------------------- statements ---- */

static void indent(pr *p) {
    sb_printf(p->sb, "%*s", 4 * (p->depth + 1), "");
}

static void line(pr *p, const char *fmt, ...) KN_PRINTF(2, 3);
static void line(pr *p, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    indent(p);
    sb_printf(p->sb, "%s\n", buf);
}

static const char *acc_ctype(const kd_stmt *acc) {
    if (acc->red.acc_type == KILN_DTYPE_F64) return "double";
    return acc->red.arith ? "uint64_t" : cgen_ctype(acc->dtype);
}

/* The accumulator of ACC statement a (an element of the row of them in a column form). */
static void acc_name(const pr *p, uint32_t a, bool nan, char *out) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *s = &kd->stmts[a];
    char v[NAME_LEN];
    var_name(kd, s->var, v);
    const char *suffix = nan ? "_nan" : in_block(p, a) ? "_b" : "";
    if (s->column && p->dialect == KN_DIALECT_CUDA) /* this thread's elements of the chunk */
        snprintf(out, ACC_LEN, "acc%u%s[(%s - jb) / %d]", a, suffix, v, CGEN_CUDA_THREADS);
    else if (s->column)
        snprintf(out, ACC_LEN, "acc%u%s[%s - jb]", a, suffix, v);
    else
        snprintf(out, ACC_LEN, "acc%u%s", a, suffix);
}

/* The initial value of accumulator s. */
static const char *acc_init(const kd_stmt *s) {
    bool i32 = s->dtype == KILN_DTYPE_I32, fl = ir_dtype_is_float(s->dtype);
    return s->red.init == KD_INIT_ZERO  ? "0"
           : s->red.init == KD_INIT_ONE ? "1"
           : fl                         ? (s->red.init == KD_INIT_LOWEST ? "-INFINITY" : "INFINITY")
           : s->red.init == KD_INIT_LOWEST ? (i32 ? "INT32_MIN" : "INT64_MIN")
                                           : (i32 ? "INT32_MAX" : "INT64_MAX");
}

/* C: the type of a float max's or min's NaN flag (kd_reduce.nan_flag), an integer as wide
 * as the value, so the vectorised compare's lanes go into it as they are: a uint8_t flag
 * had gcc pack each vector of compares into bytes, or reduce a row of 16 floats' flags
 * one pextrb at a time (a max over rows of 16 ran markedly faster with the wide flag:
 * bench/RESULTS.md, "Rows of 8 and 16: a NaN flag as wide as the value, and simd elements
 * after a kept value"). */
static const char *nan_ctype(const kd_stmt *s) {
    return s->dtype == KILN_DTYPE_F64 ? "uint64_t" : "uint32_t";
}

static void print_acc(pr *p, uint32_t id) {
    const kd_stmt *s = &p->kd->stmts[id];
    const char *at = acc_ctype(s);
    const char *init = acc_init(s);
    if (s->column && p->dialect == KN_DIALECT_CUDA) {
        int64_t slots = (p->chunk + CGEN_CUDA_THREADS - 1) / CGEN_CUDA_THREADS;
        line(p, "%s acc%u[%lld];", at, id, (long long)slots);
        if (s->red.nan_flag) line(p, "uint8_t acc%u_nan[%lld];", id, (long long)slots);
        line(p, "for (int s = 0; s < %lld; s++) acc%u[s] = %s;", (long long)slots, id, init);
        if (s->red.nan_flag)
            line(p, "for (int s = 0; s < %lld; s++) acc%u_nan[s] = 0;", (long long)slots, id);
        return;
    }
    if (s->column) {
        line(p, "%s acc%u[%lld];", at, id, (long long)p->chunk);
        if (s->red.blocked) line(p, "float acc%u_b[%lld];", id, (long long)p->chunk);
        if (s->red.nan_flag) line(p, "%s acc%u_nan[%lld];", nan_ctype(s), id, (long long)p->chunk);
        line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u[j] = %s;", id, init);
        if (s->red.nan_flag) line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u_nan[j] = 0;", id);
        return;
    }
    line(p, "%s acc%u = %s;", at, id, init);
    if (s->red.nan_flag)
        line(p, "%s acc%u_nan = 0;", p->dialect == KN_DIALECT_CUDA ? "uint8_t" : nan_ctype(s), id);
}

static const char *omp_op(ir_op op) {
    return op == IR_REDUCE_SUM    ? "+"
           : op == IR_REDUCE_PROD ? "*"
           : op == IR_REDUCE_MAX  ? "max"
                                  : "min";
}

static void print_accum(pr *p, const kd_stmt *s) {
    const kd_stmt *acc = &p->kd->stmts[s->args[0]];
    char a[ACC_LEN], nan[ACC_LEN], x[NAME_LEN];
    acc_name(p, s->args[0], false, a);
    acc_name(p, s->args[0], true, nan);
    val_name(p->kd, s->args[1], x);
    const pr_block *b = block_of(p, s->args[0]);
    if (b)
        line(p, "acc%u_t[%s] %s= %s;", s->args[0], b->at, b->once ? "" : "+", x);
    else if (in_block(p, s->args[0]))
        line(p, "%s += %s;", a, x);
    else if (acc->red.arith)
        line(p, "%s %s= (%s)%s;", a, omp_op(acc->red.op), acc_ctype(acc), x);
    else
        line(p, "%s = %s %s %s ? %s : %s;", a, x, acc->red.op == IR_REDUCE_MAX ? ">" : "<", a, x,
             a);
    if (acc->red.nan_flag) line(p, "%s |= %s != %s;", nan, x, x);
}

/* CUDA: whether each thread computes elements of its own here: everywhere in CF_THREADS,
 * and in CF_ROW's element loop (the prologue before it is the whole block's). */
static bool thread_per_element(const pr *p) {
    return p->form == CF_THREADS || (p->form == CF_ROW && p->in_elems);
}

/* CUDA's loops: the chunk's elements spread over the threads, warps or (one at a time) the
 * block, and a reduction's innermost loop strided over the lanes sharing an element. */
static void print_cuda_loop(pr *p, const kd_stmt *s, const char *v) {
    const char *lane = p->form == CF_WARP ? "(threadIdx.x & 31)" : "threadIdx.x";
    const char *group = p->form == CF_WARP ? "32" : "blockDim.x";
    if (s->n < 0 && p->form == CF_ROW && !p->in_elems) {
        p->in_elems = true;
        /* in place, every thread's prologue reads of the row before any thread's stores */
        if (p->kd->in_place) line(p, "__syncthreads();");
    }
    if (s->n < 0 && thread_per_element(p))
        line(p, "for (int64_t %s = jb + threadIdx.x; %s < je; %s += blockDim.x) {", v, v, v);
    else if (s->n < 0 && p->form == CF_WARP)
        line(p, "for (int64_t %s = jb + (threadIdx.x >> 5); %s < je; %s += blockDim.x >> 5) {", v,
             v, v);
    else if (s->n < 0)
        line(p, "for (int64_t %s = jb; %s < je; %s++) {", v, v, v);
    else if (s->acc && !thread_per_element(p) && !p->stripe_depth) {
        p->stripe_depth = p->depth + 1;
        p->flags[s->acc] |= F_STRIPED;
        line(p, "for (int64_t %s = %s; %s < %lld; %s += %s) {", v, lane, v, (long long)s->n, v,
             group);
    } else
        line(p, "for (int64_t %s = 0; %s < %lld; %s++) {", v, v, (long long)s->n, v);
    p->depth++;
}

/* kd->split: the last axis' variable's quotient and remainder (the names print_atom
 * uses), from the variable, in a loop that runs over the variable itself. */
static void split_names(pr *p) {
    const kd_kernel *kd = p->kd;
    if (!kd->split) return;
    char v[NAME_LEN];
    var_name(kd, kd->last_var, v);
    line(p, "const int64_t %sq = %s / %lld, %sr = %s %% %lld;", v, v, (long long)kd->split, v, v,
         (long long)kd->split);
}

/* Whether the body of loop statement `loop` adds into accumulator acc exactly once per
 * iteration: one ACCUM of it, outside every IF and inner loop. */
static bool accum_once(const kd_kernel *kd, uint32_t loop, uint32_t acc) {
    int depth = 0, found = 0;
    for (uint32_t i = loop + 1; i < kd->n_stmts; i++) {
        const kd_stmt *x = &kd->stmts[i];
        if (x->kind == KS_LOOP || x->kind == KS_IF) depth++;
        if (x->kind == KS_END && depth-- == 0) break;
        if (x->kind == KS_ACCUM && x->args[0] == acc) {
            if (depth) return false;
            found++;
        }
    }
    return found == 1;
}

/* C: a reduce loop of n iterations as blocks (kd_reduce.blocked): the block loop, the
 * block's accumulators cleared, and the loop over the block's iterations (not closed).
 *
 * A scalar accumulator's block is staged: the loop stores each iteration's value in a
 * block-sized array on the stack (cleared first, and added into, unless the loop adds
 * exactly once per iteration), and kiln_sum_f32 adds the array in 16 lanes and then the
 * lanes pairwise. `#pragma omp simd reduction` would add in lanes too, but gcc 12 ends it
 * with one scalar addition per lane in a chain, and a loop that also reads bytes (a mask)
 * vectorises 64 lanes wide: 64 dependent additions for every row, which cost more than a
 * 128-element softmax row's exps. The order of the additions is also fixed by the block
 * alone, not by the vector width the compiler picks for the kernel around it, so a
 * reduction recomputed in another kernel (rematerialisation) gives the same bits
 * (test_remat's transformer stack checks it). The error bound is the block's either way
 * (kdesc.h, kd_reduce.blocked). */
static void print_block_open(pr *p, const kd_stmt *s, uint32_t loop, const char *v, uint32_t acc,
                             const char *from, const char *to) {
    const kd_kernel *kd = p->kd;
    int64_t bs = acc ? KD_SUM_BLOCK : KD_COL_BLOCK;
    bool one = s->n <= bs; /* a single block: a plain scope */
    bool once = acc && accum_once(kd, loop, acc);
    int64_t slots = one ? (s->n > 0 ? s->n : 1) : bs;
    if (one)
        line(p, "{");
    else
        line(p, "for (int64_t %sb = %s; %sb < %s; %sb += %lld) {", v, from, v, to, v,
             (long long)bs);
    p->depth++;
    if (!one)
        line(p, "const int64_t %se = %sb + %lld < %s ? %sb + %lld : %s;", v, v, (long long)bs, to,
             v, (long long)bs, to);
    for (uint32_t a = 1; a < kd->n_stmts; a++) {
        const kd_stmt *x = &kd->stmts[a];
        if (x->kind != KS_ACC || !x->red.blocked || (acc ? a != acc : !x->column)) continue;
        if (acc)
            line(p, "float acc%u_t[%lld]%s;", a, (long long)slots, once ? "" : " = {0}");
        else
            line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u_b[j] = 0;", a);
    }
    if (acc && s->simd) line(p, "#pragma omp simd");
    if (one)
        line(p, "for (int64_t %s = %s; %s < %s; %s++) {", v, from, v, to, v);
    else
        line(p, "for (int64_t %s = %sb; %s < %se; %s++) {", v, v, v, v, v);
    p->depth++;
    pr_block *b = &p->blk[p->n_blk++];
    b->depth = p->depth;
    b->acc = acc;
    b->once = once;
    if (acc && one && !strcmp(from, "0"))
        snprintf(b->at, sizeof b->at, "%s", v), snprintf(b->count, sizeof b->count, "%s", to);
    else if (acc && one)
        snprintf(b->at, sizeof b->at, "%s - %s", v, from),
            snprintf(b->count, sizeof b->count, "%s - %s", to, from);
    else if (acc)
        snprintf(b->at, sizeof b->at, "%s - %sb", v, v),
            snprintf(b->count, sizeof b->count, "%se - %sb", v, v);
}

/* C: the end of a block's loop: its sums added into the f64 accumulators. */
static void print_block_close(pr *p) {
    const kd_kernel *kd = p->kd;
    const pr_block *b = &p->blk[--p->n_blk];
    uint32_t acc = b->acc;
    p->depth--;
    line(p, "}");
    for (uint32_t a = 1; a < kd->n_stmts; a++) {
        const kd_stmt *x = &kd->stmts[a];
        if (x->kind != KS_ACC || !x->red.blocked || (acc ? a != acc : !x->column)) continue;
        if (acc)
            line(p, "acc%u += (double)kiln_sum_f32(acc%u_t, %s);", a, a, b->count);
        else
            line(p, "for (int64_t j = 0; j < je - jb; j++) acc%u[j] += (double)acc%u_b[j];", a, a);
    }
    p->depth--;
    line(p, "}");
}

static void combine_line(pr *p, const kd_stmt *acc, const char *a, const char *t);

/* C: `#pragma omp simd` with the reduction clauses of loop s, the innermost loop of a
 * reduction the description lets vectorise; false (nothing printed) for any other loop. */
static bool print_simd_pragma(pr *p, const kd_stmt *s) {
    if (!s->simd || !s->acc) return false;
    const kd_stmt *acc = &p->kd->stmts[s->acc];
    indent(p);
    sb_printf(p->sb, "#pragma omp simd reduction(%s:acc%u)", omp_op(acc->red.op), s->acc);
    if (acc->red.nan_flag) sb_printf(p->sb, " reduction(|:acc%u_nan)", s->acc);
    sb_append(p->sb, "\n");
    return true;
}

/* C: loop s over [from, to), a slice of its iterations (a part's, kd_kernel.parts, or one
 * of a reduction's slices, kd_stmt.slices), always blocked when its reduction is: a slice
 * may be longer than a block. */
static void print_range_loop(pr *p, const kd_stmt *s, const char *v, const char *from,
                             const char *to) {
    if (s->acc && p->kd->stmts[s->acc].red.blocked && p->n_blk < PR_MAX_BLOCKS) {
        kd_stmt t = *s;
        t.n = INT64_MAX;
        print_block_open(p, &t, (uint32_t)(s - p->kd->stmts), v, s->acc, from, to);
        return;
    }
    print_simd_pragma(p, s);
    line(p, "for (int64_t %s = %s; %s < %s; %s++) {", v, from, v, to, v);
    p->depth++;
}

/* C, kd_stmt.slices: the loop over the slices of outermost reduce loop s, each starting
 * its accumulator afresh (the value so far kept aside), then the loop over the slice's
 * iterations. print_slice_close adds the slice's result to the value kept. */
static void print_slice_open(pr *p, const kd_stmt *s, const char *v) {
    const kd_kernel *kd = p->kd;
    uint32_t loop = (uint32_t)(s - kd->stmts), a = s->slice_acc;
    const kd_stmt *acc = &kd->stmts[a];
    long long n = (long long)s->n, k = (long long)acc->slices;
    char from[32], to[32];
    line(p, "for (int64_t kiln_s%u = 0; kiln_s%u < %lld; kiln_s%u++) {", loop, loop, k, loop);
    p->depth++;
    line(p, "const %s kiln_prev%u = acc%u;", acc_ctype(acc), loop, a);
    line(p, "acc%u = %s;", a, acc_init(acc));
    line(p,
         "const int64_t kiln_lo%u = kiln_s%u * %lld / %lld, kiln_hi%u = (kiln_s%u + 1) * %lld / "
         "%lld;",
         loop, loop, n, k, loop, loop, n, k);
    p->slice[p->n_slice].depth = p->depth;
    p->slice[p->n_slice++].loop = loop;
    snprintf(from, sizeof from, "kiln_lo%u", loop);
    snprintf(to, sizeof to, "kiln_hi%u", loop);
    print_range_loop(p, s, v, from, to);
}

static void print_slice_close(pr *p) {
    uint32_t loop = p->slice[--p->n_slice].loop, a = p->kd->stmts[loop].slice_acc;
    char acc[ACC_LEN], prev[32];
    snprintf(acc, sizeof acc, "acc%u", a);
    snprintf(prev, sizeof prev, "kiln_prev%u", loop);
    combine_line(p, &p->kd->stmts[a], acc, prev);
    p->depth--;
    line(p, "}");
}

static void print_loop(pr *p, const kd_stmt *s) {
    char v[NAME_LEN], from[32] = "0", to[32];
    var_name(p->kd, s->var, v);
    if (p->dialect == KN_DIALECT_CUDA && p->part_mode == 1 &&
        p->flags[s - p->kd->stmts] & F_SPLIT_LOOP) {
        /* this block's slice of the split loop, strided over the lanes when it is the
         * reduction's innermost loop */
        long long n = (long long)s->n;
        unsigned id = (unsigned)(s - p->kd->stmts); /* several split loops share a scope */
        line(p,
             "const int64_t kiln_lo%u = kiln_q * %lld / %d, kiln_hi%u = (kiln_q + 1) * %lld / %d;",
             id, n, (int)p->split_parts, id, n, (int)p->split_parts);
        if (s->acc && !p->stripe_depth) {
            p->stripe_depth = p->depth + 1;
            p->flags[s->acc] |= F_STRIPED;
            line(p,
                 "for (int64_t %s = kiln_lo%u + threadIdx.x; %s < kiln_hi%u; %s += blockDim.x) {",
                 v, id, v, id, v);
        } else
            line(p, "for (int64_t %s = kiln_lo%u; %s < kiln_hi%u; %s++) {", v, id, v, id, v);
        p->depth++;
        return;
    }
    if (p->dialect == KN_DIALECT_CUDA) {
        print_cuda_loop(p, s, v);
        if (s->n < 0) split_names(p);
        return;
    }
    snprintf(to, sizeof to, "%lld", (long long)s->n);
    if (p->part_mode == 1 && s == &p->kd->stmts[p->split_loop]) {
        /* this part's slice of the loop */
        line(p, "const int64_t kiln_lo = it * %lld / %lld, kiln_hi = (it + 1) * %lld / %lld;",
             (long long)s->n, (long long)p->kd->parts, (long long)s->n, (long long)p->kd->parts);
        print_range_loop(p, s, v, "kiln_lo", "kiln_hi");
        return;
    }
    if (s->slice_acc && p->n_slice < PR_MAX_BLOCKS) {
        print_slice_open(p, s, v);
        return;
    }
    if (s->n >= 0 && p->n_blk < PR_MAX_BLOCKS) {
        bool col = false;
        for (uint32_t a = 1; s->col_block && a < p->kd->n_stmts; a++)
            col |= p->kd->stmts[a].kind == KS_ACC && p->kd->stmts[a].column &&
                   p->kd->stmts[a].red.blocked;
        if (col || (s->acc && p->kd->stmts[s->acc].red.blocked)) {
            print_block_open(p, s, (uint32_t)(s - p->kd->stmts), v, col ? 0 : s->acc, from, to);
            return;
        }
    }
    int64_t k = p->kd->split;
    if (s->n < 0 && k && !s->simd) {
        /* the real axes as two loops: no division per element, and the inner loop's
         * constant trip count lets the compiler unroll it and decide its branches */
        line(p, "for (int64_t %sq = jb / %lld; %sq < je / %lld; %sq++)", v, (long long)k, v,
             (long long)k, v);
        line(p, "for (int64_t %sr = 0; %sr < %lld; %sr++) {", v, v, (long long)k, v);
        p->depth++;
        line(p, "const int64_t %s = %sq * %lld + %sr;", v, v, (long long)k, v);
        return;
    }
    if (s->simd_narrow && !s->simd) { /* the target decides (KILN_ACROSS_ROWS) */
        kd_stmt narrow = *s;
        narrow.simd = true;
        line(p, "#if !KILN_ACROSS_ROWS");
        if (!print_simd_pragma(p, &narrow)) line(p, "#pragma omp simd");
        line(p, "#endif");
    } else if (!print_simd_pragma(p, s) && s->simd)
        line(p, "#pragma omp simd");
    if (s->n < 0)
        line(p, "for (int64_t %s = jb; %s < je; %s++) {", v, v, v);
    else
        line(p, "for (int64_t %s = 0; %s < %lld; %s++) {", v, v, (long long)s->n, v);
    p->depth++;
    if (s->n < 0) split_names(p);
}

static void print_guards(pr *p, const kd_stmt *s) {
    for (uint32_t i = 0; i < s->n_guards; i++) {
        const kd_guard *g = &p->kd->guards[s->guard + i];
        if (i) sb_append(p->sb, " && ");
        if (g->kind == KD_GUARD_DIVIDES) {
            print_operand(p->kd, p->sb, g->ix);
            sb_printf(p->sb, " %% %lld == 0", (long long)g->n);
            continue;
        }
        print_ix(p->kd, p->sb, g->ix);
        if (g->kind == KD_GUARD_GE0)
            sb_append(p->sb, " >= 0");
        else
            sb_printf(p->sb, " < %lld", (long long)g->n);
    }
}

/* sum, product, max or min of accumulator a and another lane's t into a */
static void combine_line(pr *p, const kd_stmt *acc, const char *a, const char *t) {
    if (acc->red.arith)
        line(p, "%s %s= %s;", a, acc->red.op == IR_REDUCE_SUM ? "+" : "*", t);
    else
        line(p, "%s = %s %s %s ? %s : %s;", a, t, acc->red.op == IR_REDUCE_MAX ? ">" : "<", a, t,
             a);
}

/* CUDA: the lanes' partial accumulators of a lane-strided reduction, combined so that
 * every lane holds the whole: a butterfly of warp shuffles, then (a block per element)
 * the warps' results through shared memory, in warp order. */
static void print_combine(pr *p, uint32_t a_id) {
    const kd_stmt *acc = &p->kd->stmts[a_id];
    const char *at = acc_ctype(acc);
    char a[ACC_LEN], nan[ACC_LEN];
    acc_name(p, a_id, false, a);
    acc_name(p, a_id, true, nan);
    line(p, "for (int o = 16; o > 0; o >>= 1) {");
    p->depth++;
    line(p, "const %s t = kiln_shfl(%s, o);", at, a);
    combine_line(p, acc, a, "t");
    if (acc->red.nan_flag) line(p, "%s |= kiln_shfl(%s, o);", nan, nan);
    p->depth--;
    line(p, "}");
    if (p->form != CF_BLOCK && p->form != CF_ROW) return;
    int warps = CGEN_CUDA_THREADS / 32;
    line(p, "{");
    p->depth++;
    line(p, "__shared__ %s sh%u[%d];", at, a_id, warps);
    if (acc->red.nan_flag) line(p, "__shared__ uint8_t sh%u_nan[%d];", a_id, warps);
    line(p, "if ((threadIdx.x & 31) == 0) {");
    line(p, "    sh%u[threadIdx.x >> 5] = %s;", a_id, a);
    if (acc->red.nan_flag) line(p, "    sh%u_nan[threadIdx.x >> 5] = %s;", a_id, nan);
    line(p, "}");
    line(p, "__syncthreads();");
    line(p, "%s = sh%u[0];", a, a_id);
    if (acc->red.nan_flag) line(p, "%s = sh%u_nan[0];", nan, a_id);
    line(p, "for (int w = 1; w < %d; w++) {", warps);
    p->depth++;
    char t[32];
    snprintf(t, sizeof t, "sh%u[w]", a_id);
    combine_line(p, acc, a, t);
    if (acc->red.nan_flag) line(p, "%s |= sh%u_nan[w];", nan, a_id);
    p->depth--;
    line(p, "}");
    line(p, "__syncthreads(); /* before the next item writes sh%u */", a_id);
    p->depth--;
    line(p, "}");
}

/* Whether a float value of op may end in a multiplication, which gcc would fuse into a
 * sum reading it inline (head_c, KILN_ROUNDED): a product, kiln_exp_f64 (2^n applied by
 * multiplying), a random float (bits scaled into [0, 1)) and a reduce_prod's result.
 * Every other op ends in a sum, a quotient, a select or a call: nothing to fuse with. */
static bool product_valued(ir_op op, kiln_dtype t) {
    return ir_dtype_is_float(t) &&
           (op == IR_MUL || op == IR_EXP || op == IR_RANDOM || op == IR_REDUCE_PROD);
}

/* C: the kernel's copy of kiln_fence, when a statement rounds through it. */
static void print_fence(pr *p) {
    const kd_kernel *kd = p->kd;
    for (uint32_t s = 1; s < kd->n_stmts; s++)
        if ((kd->stmts[s].kind == KS_OP && product_valued(kd->stmts[s].op, kd->stmts[s].dtype)) ||
            (kd->stmts[s].kind == KS_ACC &&
             product_valued(kd->stmts[s].red.op, kd->stmts[s].dtype))) {
            line(p, "const uint32_t kiln_z = kiln_fence;");
            return;
        }
}

static void print_stmt(pr *p, uint32_t id) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *s = &kd->stmts[id];
    const char *ct = cgen_ctype(s->dtype);
    char a[3][NAME_LEN], ex[512];
    for (uint32_t i = 0; i < s->n_args && s->kind != KS_ACCUM && s->kind != KS_RESULT; i++)
        val_name(kd, s->args[i], a[i]);
    switch (s->kind) {
    case KS_LIT: break; /* printed where it is used */
    case KS_LOAD:
    case KS_IOTA:
        indent(p);
        if (s->kind == KS_LOAD && p->lane >= 0 && p->flags[id] & F_VLOAD) {
            sb_printf(p->sb, "const %s v%u = q%u.%c;\n", ct, id, id, "xyzw"[p->lane]);
            break;
        }
        if (s->kind == KS_LOAD) {
            sb_printf(p->sb, "const %s v%u = %s%u[", ct, id, s->keep ? "out" : "in", s->slot);
            print_ix(kd, p->sb, s->ix);
            sb_append(p->sb, "];\n");
        } else {
            /* a float iota of an axis shorter than 2^31 through int32: the same value, and
             * only AVX-512 converts int64 vectors (a loop over sin(iota) stayed scalar) */
            bool narrow = ir_dtype_is_float(s->dtype) && s->n > 0 && s->n <= INT32_MAX;
            sb_printf(p->sb, "const %s v%u = (%s)%s", ct, id, ct, narrow ? "(int32_t)(" : "");
            print_operand(kd, p->sb, s->ix);
            sb_append(p->sb, narrow ? ");\n" : ";\n");
        }
        break;
    case KS_OP: {
        const char *x[3] = {a[0], a[1], a[2]};
        if (!c_op_expr(s->op, s->dtype, s->in_dtype, s->attrs, x, ex, sizeof ex)) {
            p->hole = (int)s->op + 1;
            snprintf(ex, sizeof ex, "0");
        }

        if (p->fast_trig && s->dtype == KILN_DTYPE_F32 && (s->op == IR_SIN || s->op == IR_COS)) {
            line(p, "const float v%u = kiln_%s_fast_f32(%s);", id, s->op == IR_SIN ? "sin" : "cos",
                 a[0]);
            line(p, "kiln_big |= kiln_trig_big_f32(%s);", a[0]);
            break;
        }
        if (p->trig_rerun && s->dtype == KILN_DTYPE_F32 && (s->op == IR_SIN || s->op == IR_COS)) {
            line(p, "KILN_SCALAR_LOOP();");
            line(p, "const float v%u = kiln_%s_rerun_f32(%s);", id, s->op == IR_SIN ? "sin" : "cos",
                 a[0]);
            break;
        }
        if (p->trig_rerun && (s->op == IR_SIN || s->op == IR_COS)) line(p, "KILN_SCALAR_LOOP();");
        if (p->dialect == KN_DIALECT_C && product_valued(s->op, s->dtype))
            line(p, "const %s v%u = KILN_ROUNDED_%s(%s);", ct, id, dtype_suffix(s->dtype), ex);
        else
            line(p, "const %s v%u = %s;", ct, id, ex);
        break;
    }
    case KS_CLAMP:
        line(p, "const int64_t v%u = %s < 0 ? 0 : %s > %lld ? %lld : (int64_t)%s;", id, a[0], a[0],
             (long long)s->n, (long long)s->n, a[0]);
        break;
    case KS_DECL:
        if (s->n_args)
            line(p, "%s v%u = %s;", ct, id, a[0]);
        else
            line(p, "%s v%u;", ct, id);
        break;
    case KS_ASSIGN: line(p, "%s = %s;", a[0], a[1]); break;
    case KS_IF:
    case KS_ELSE_IF:
    case KS_ELSE:
        if (s->kind != KS_IF) p->depth--;
        indent(p);
        sb_append(p->sb, s->kind == KS_IF        ? "if ("
                         : s->kind == KS_ELSE_IF ? "} else if ("
                                                 : "} else");
        if (s->kind != KS_ELSE) {
            print_guards(p, s);
            sb_append(p->sb, ")");
        }
        sb_append(p->sb, " {\n");
        p->depth++;
        break;
    case KS_LOOP: print_loop(p, s); break;
    case KS_END:
        if (p->stripe_depth && p->depth == p->stripe_depth) p->stripe_depth = 0;
        if (p->n_blk && p->blk[p->n_blk - 1].depth == p->depth)
            print_block_close(p);
        else {
            p->depth--;
            line(p, "}");
        }
        if (p->n_slice && p->slice[p->n_slice - 1].depth == p->depth) print_slice_close(p);
        break;
    case KS_ACC: print_acc(p, id); break;
    case KS_ACCUM: print_accum(p, s); break;
    case KS_RESULT: {
        const kd_stmt *acc = &kd->stmts[s->args[0]];
        if (p->flags && p->flags[s->args[0]] & F_STRIPED) print_combine(p, s->args[0]);
        char v[ACC_LEN], nan[ACC_LEN];
        acc_name(p, s->args[0], false, v);
        acc_name(p, s->args[0], true, nan);
        if (acc->red.nan_flag && !acc->column)
            line(p, "const %s v%u = %s ? (%s)NAN : %s;", ct, id, nan, ct, v);
        else if (acc->red.nan_flag)
            line(p, "const %s v%u = %s ? (%s)NAN : (%s)%s;", ct, id, nan, ct, ct, v);
        else if (p->dialect == KN_DIALECT_C && product_valued(acc->red.op, s->dtype))
            line(p, "const %s v%u = KILN_ROUNDED_%s((%s)%s);", ct, id, dtype_suffix(s->dtype), ct,
                 v);
        else
            line(p, "const %s v%u = (%s)%s;", ct, id, ct, v);
        break;
    }
    case KS_STORE:
        indent(p);
        if (p->lane >= 0 && p->flags[id] & F_VSTORE) {
            sb_printf(p->sb, "st%u.%c = %s;\n", id, "xyzw"[p->lane], a[0]);
            break;
        }
        if (p->dialect == KN_DIALECT_CUDA && !thread_per_element(p) && !s->keep) /* one writes */
            sb_append(p->sb, p->form == CF_WARP ? "if ((threadIdx.x & 31) == 0) "
                                                : "if (threadIdx.x == 0) ");
        sb_printf(p->sb, "out%u[", s->slot);
        print_ix(kd, p->sb, s->ix);
        sb_printf(p->sb, "] = %s;\n", a[0]);
        break;
    }
}

/* ------------------------------------------------------------ kernel ---- */

#define PROV_MAX 480 /* characters of node list in a kernel's comment */

/* The file's last path component, with anything unprintable replaced: it goes into a
 * comment, and a basename cannot contain the slash that would close it. */
static void print_file(strbuf *sb, const char *file) {
    const char *b = strrchr(file, '/');
    char buf[128];
    size_t n = 0;
    for (const char *c = b ? b + 1 : file; *c && n + 1 < sizeof buf; c++)
        buf[n++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
    buf[n] = 0;
    sb_append(sb, buf);
}

/* `/ * k3: %12 exp, %13 add (model.c:41), %14 reduce_sum (model.c:42) -> writes %14 * /`:
 * the nodes computed, grouped by user line, bounded in length for huge kernels. */
static void print_provenance(const kd_kernel *kd, strbuf *sb) {
    size_t start = sb->len;
    sb_printf(sb, "\n/* k%u:", kd->index);
    uint32_t i = 0;
    for (; i < kd->n_prov && sb->len - start < PROV_MAX; i++) {
        const kd_prov *v = &kd->prov[i], *next = i + 1 < kd->n_prov ? &kd->prov[i + 1] : NULL;
        sb_printf(sb, "%s %%%u %s", i ? "," : "", v->node, v->op);
        bool same =
            next && next->line == v->line &&
            (next->file == v->file || (next->file && v->file && !strcmp(next->file, v->file)));
        if (v->file && !same) {
            sb_append(sb, " (");
            print_file(sb, v->file);
            sb_printf(sb, ":%d)", v->line);
        }
    }
    if (i < kd->n_prov) sb_printf(sb, ", ... %u more", kd->n_prov - i);
    sb_append(sb, " -> writes");
    for (uint32_t o = 0; o < kd->n_outputs; o++)
        sb_printf(sb, "%s %%%u", o ? "," : "", kd->out_node[o]);
    sb_append(sb, " */\n");
}

/* The buffers' declarations: an input the planner overwrites in place aliases that
 * output, so neither may be restrict; every other pointer still is. C takes them from the
 * array b, CUDA as parameters (`sep` between them, `end` after the last). */
static void print_buffers(pr *p, bool params) {
    const kd_kernel *kd = p->kd;
    uint32_t n = kd->n_inputs + kd->n_outputs;
    for (uint32_t i = 0; i < n; i++) {
        bool in = i < kd->n_inputs;
        uint32_t k = in ? i : i - kd->n_inputs;
        const char *t = cgen_ctype(in ? kd->in_type[k] : kd->out_type[k]);
        bool aliased = false;
        for (uint32_t o = 0; in && kd->alias && o < kd->n_outputs; o++)
            aliased |= kd->alias[o] == k + 1;
        if (!in) aliased = kd->alias && kd->alias[k];
        const char *q = aliased                         ? ""
                        : p->dialect == KN_DIALECT_CUDA ? "__restrict__ "
                                                        : "restrict ";
        if (params)
            sb_printf(p->sb, "%s%s *%s%s%u, ", in ? "const " : "", t, q, in ? "in" : "out", k);
        else
            line(p, "%s%s *%s%s%u = (%s%s *)b[%u];", in ? "const " : "", t, q, in ? "in" : "out", k,
                 in ? "const " : "", t, i);
    }
}

/* Whether the C dialect takes kd->row_block rows per item (kdesc.h, KD_ROW_BLOCK). */
static bool row_blocks(const pr *p) {
    return p->dialect == KN_DIALECT_C && p->kd->row_block > 1 && !p->part_mode;
}

/* Whether the C dialect takes kd->prologue_rows rows per item (kdesc.h, KD_PROLOGUE_ROWS). */
static bool prologue_blocks(const pr *p) {
    return p->dialect == KN_DIALECT_C && p->kd->prologue_rows > 1 && !p->part_mode;
}

/* The leading axes' indices from the row. */
static void print_row_axes(pr *p) {
    const kd_kernel *kd = p->kd;
    for (int a = 0; a + 1 < kd->rank; a++) {
        if (kd->dims[a] == 1) continue; /* its index is the constant 0 */
        indent(p);
        sb_printf(p->sb, "const int64_t i%d = ", a);
        print_ix(kd, p->sb, kd->axis_def[a]);
        sb_append(p->sb, ";\n");
    }
}

/* row, the chunk [jb, je) of the last axis and the leading axes' indices of item `it`
 * (with row blocks, the block's first row, row0: print_row_block). */
static void print_item(pr *p) {
    const kd_kernel *kd = p->kd;
    const char *it = "it";
    if (p->part_mode == 1 && p->dialect == KN_DIALECT_CUDA) { /* items: (part, item) */
        line(p, "const int64_t kiln_q = it / %lld, kiln_it = it %% %lld;", (long long)p->base_items,
             (long long)p->base_items);
        it = "kiln_it";
    }
    if (p->part_mode == 1 && p->dialect == KN_DIALECT_C) /* items: parts of the one item */
        line(p, "const int64_t row = 0, jb = 0, je = %lld;", (long long)kd->inner);
    else if (prologue_blocks(p)) { /* rows row0.. row0 + rn - 1: print_prologue_rows */
        long long k = (long long)kd->prologue_rows;
        line(p, "const int64_t row0 = %s * %lld, rn = row0 + %lld < %lld ? %lld : %lld - row0;", it,
             k, k, (long long)kd->rows, k, (long long)kd->rows);
        line(p, "const int64_t jb = 0, je = %lld;", (long long)kd->inner);
        return;
    } else if (row_blocks(p)) { /* rows row0.. of the block: print_row_block */
        long long blocks = (long long)(kd->rows / kd->row_block);
        line(p, "const int64_t row0 = (%s %% %lld) * %lld, jb = (%s / %lld) * %lld;", it, blocks,
             (long long)kd->row_block, it, blocks, (long long)p->chunk);
        line(p, "const int64_t je = jb + %lld < %lld ? jb + %lld : %lld;", (long long)p->chunk,
             (long long)kd->inner, (long long)p->chunk, (long long)kd->inner);
        return;
    } else if (p->chunks > 1 && kd->tiled && p->dialect == KN_DIALECT_C) {
        line(p, "const int64_t row = %s %% %lld, jb = (%s / %lld) * %lld;", it, (long long)kd->rows,
             it, (long long)kd->rows, (long long)p->chunk);
        line(p, "const int64_t je = jb + %lld < %lld ? jb + %lld : %lld;", (long long)p->chunk,
             (long long)kd->inner, (long long)p->chunk, (long long)kd->inner);
    } else if (p->chunks > 1) {
        line(p, "const int64_t row = %s / %lld, jb = (%s %% %lld) * %lld;", it,
             (long long)p->chunks, it, (long long)p->chunks, (long long)p->chunk);
        line(p, "const int64_t je = jb + %lld < %lld ? jb + %lld : %lld;", (long long)p->chunk,
             (long long)kd->inner, (long long)p->chunk, (long long)kd->inner);
    } else
        line(p, "const int64_t row = %s, jb = 0, je = %lld;", it, (long long)kd->inner);
    print_row_axes(p);
}

static uint32_t part_loop_end(const kd_kernel *kd, uint32_t loop);

/* Whether a row-blocked kernel (kd->row_block of 8) is a plain transpose that
 * kiln_transpose8x8_<4 or 8> can move 8 x 8 at a time (a 2-D transpose, the minor axes of
 * a batched one, NCHW to NHWC): its body one load of 4- or 8-byte elements and the store
 * of it; the load's index a sum of the axes' variables (and a constant), the last axis'
 * at least 8 elements apart (*stride), the second-to-last's contiguous and in eights, so
 * a block's 8 rows read 8 consecutive elements; the store a row of the output; the chunk
 * and the last axis multiples of 8. *load and *store: its two statements. */
static bool block_transpose(const pr *p, const kd_stmt **load, const kd_stmt **store,
                            int64_t *stride) {
    const kd_kernel *kd = p->kd;
    if (kd->row_block != 8 || kd->rank < 2 || kd->dims[kd->rank - 2] % 8 || p->chunk % 8 ||
        kd->inner % 8 || part_loop_end(kd, 1) != 4)
        return false;
    *load = &kd->stmts[2], *store = &kd->stmts[3];
    size_t bytes = kiln_dtype_itemsize((*load)->dtype);
    if ((*load)->kind != KS_LOAD || (*load)->keep || (*store)->kind != KS_STORE ||
        (*store)->args[0] != 2 || (bytes != 4 && bytes != 8) ||
        kiln_dtype_itemsize(kd->out_type[(*store)->slot]) != bytes)
        return false;
    const kd_index *x = &kd->ixs[(*load)->ix];
    *stride = 0;
    bool along = false;
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *t = &kd->terms[x->first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        if (a->kind != KD_ATOM_VAR) return false;
        const kd_var *v = &kd->vars[a->arg];
        if (a->arg == kd->last_var)
            *stride = t->coef;
        else if (v->kind != KD_VAR_AXIS)
            return false;
        else if (v->axis == kd->rank - 2)
            along = t->coef == 1;
    }
    if (!along || *stride < 8) return false;
    const kd_index *y = &kd->ixs[(*store)->ix];
    if (y->n != 2 || y->c) return false;
    for (uint32_t i = 0; i < 2; i++) {
        const kd_term *t = &kd->terms[y->first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        if (a->kind != KD_ATOM_VAR) return false;
        if (t->coef != (a->arg == kd->last_var ? 1 : kd->inner) ||
            (a->arg != kd->last_var && kd->vars[a->arg].kind != KD_VAR_ROW))
            return false;
    }
    return true;
}

/* C, kd->row_block: the element loop (statement 1, straight-line) over the item's
 * columns, and inside it one iteration per row of the block, whose leading axes' indices
 * are computed there; a constant trip count, so the compiler vectorises across rows. */
static void print_row_block(pr *p) {
    const kd_kernel *kd = p->kd;
    char v[NAME_LEN];
    var_name(kd, kd->last_var, v);
    const kd_stmt *load, *store;
    int64_t stride;
    if (block_transpose(p, &load, &store, &stride)) { /* 8 x 8 blocks through registers */
        line(p, "for (int64_t %s = jb; %s < je; %s += 8) {", v, v, v);
        p->depth++;
        line(p, "const int64_t row = row0;");
        print_row_axes(p);
        indent(p);
        sb_printf(p->sb, "kiln_transpose8x8_%zu(in%u + (", kiln_dtype_itemsize(load->dtype),
                  load->slot);
        print_ix(kd, p->sb, load->ix);
        sb_printf(p->sb, "), %lld, out%u + (", (long long)stride, store->slot);
        print_ix(kd, p->sb, store->ix);
        sb_printf(p->sb, "), %lld);\n", (long long)kd->inner);
        p->depth--;
        line(p, "}");
        return;
    }
    line(p, "for (int64_t %s = jb; %s < je; %s++) {", v, v, v);
    p->depth++;
    line(p, "for (int64_t kiln_r = 0; kiln_r < %lld; kiln_r++) {", (long long)kd->row_block);
    p->depth++;
    line(p, "const int64_t row = row0 + kiln_r;");
    print_row_axes(p);
    uint32_t end = part_loop_end(kd, 1);
    for (uint32_t s = 2; s < end; s++) print_stmt(p, s);
    p->depth--;
    line(p, "}");
    p->depth--;
    line(p, "}");
}

/* Whether statement t is a value of the prologue's top level (a row value or what one is
 * computed from), which print_prologue_rows keeps per row of the item in v<t>_b. */
static bool row_level_value(const kd_stmt *t) {
    return t->kind == KS_LOAD || t->kind == KS_IOTA || t->kind == KS_OP || t->kind == KS_RESULT;
}

/* Opens the loop over the item's rows of print_prologue_rows, in which the prologue's top
 * level values before statement `upto` are read back from their rows' arrays. */
static void open_rows(pr *p, uint32_t upto) {
    const kd_kernel *kd = p->kd;
    line(p, "for (int64_t kiln_r = 0; kiln_r < rn; kiln_r++) {");
    p->depth++;
    line(p, "const int64_t row = row0 + kiln_r;");
    print_row_axes(p);
    for (uint32_t d = 1, depth = 0; d < upto; d++) {
        const kd_stmt *st = &kd->stmts[d];
        if (!depth && row_level_value(st))
            line(p, "const %s v%u = v%u_b[kiln_r];", cgen_ctype(st->dtype), d, d);
        depth += st->kind == KS_LOOP ? 1 : st->kind == KS_END ? -1 : 0;
    }
}

static void close_rows(pr *p) {
    p->depth--;
    line(p, "}");
}

/* C, kd->prologue_rows: the item's rows taken step by step (kdesc.h, KD_PROLOGUE_ROWS).
 * Each top-level statement and each reduction of the prologue runs in a loop over the
 * item's rows of its own, its values kept per row (v<t>_b), so that a reduction over a
 * short row vectorises across the rows (its loop has no pragma: kd_stmt.few, lower.c);
 * a kept value's reduction is two such loops, one computing and keeping the values with
 * the row vectorised, one summing the kept row; then the element loop, row by row. */
static void print_prologue_rows(pr *p) {
    const kd_kernel *kd = p->kd;
    uint32_t e = 1;
    while (!(kd->stmts[e].kind == KS_LOOP && kd->stmts[e].n < 0)) e++;
    /* rows of at most KD_TINY_REDUCE: no pragma along them either, gcc vectorises across
     * the rows (a softmax over rows of 3 several times faster; from rows of 5 the pragma is
     * as good or better: bench/RESULTS.md, "A prologue over short rows, 16 rows an item,
     * step by step") */
    bool tiny = kd->inner <= KD_TINY_REDUCE;
    for (uint32_t t = 1, depth = 0; t < e; t++) { /* the top-level values' arrays */
        const kd_stmt *st = &kd->stmts[t];
        if (!depth && row_level_value(st))
            line(p, "%s v%u_b[%lld];", cgen_ctype(st->dtype), t, (long long)kd->prologue_rows);
        depth += st->kind == KS_LOOP ? 1 : st->kind == KS_END ? -1 : 0;
    }
    for (uint32_t t = 1; t < e; t++) {
        const kd_stmt *st = &kd->stmts[t];
        if (st->kind == KS_LIT) continue; /* printed where used */
        open_rows(p, t);
        if (st->kind != KS_ACC) {
            print_stmt(p, t);
            line(p, "v%u_b[kiln_r] = v%u;", t, t);
            close_rows(p);
            continue;
        }
        uint32_t loop = t + 1, end = loop + 1;
        while (kd->stmts[end].kind != KS_END) end++;
        const kd_stmt *keep = NULL;
        for (uint32_t u = loop + 1; u < end; u++)
            if (kd->stmts[u].kind == KS_STORE) keep = &kd->stmts[u];
        if (keep) { /* the values computed and kept, the row vectorised */
            kd_stmt plain = kd->stmts[loop];
            plain.acc = 0, plain.simd = !tiny;
            print_loop(p, &plain);
            for (uint32_t u = loop + 1; u <= end; u++)
                if (kd->stmts[u].kind != KS_ACCUM) print_stmt(p, u);
            close_rows(p);
            open_rows(p, t);
        }
        print_stmt(p, t);
        if (keep) { /* then summed back from the row, across the rows */
            kd_stmt across = kd->stmts[loop];
            across.simd = false;
            across.simd_narrow = !tiny;
            print_loop(p, &across);
            indent(p);
            sb_printf(p->sb, "const %s v%u = out%u[", cgen_ctype(kd->stmts[keep->args[0]].dtype),
                      keep->args[0], keep->slot);
            print_ix(kd, p->sb, keep->ix);
            sb_append(p->sb, "];\n");
            for (uint32_t u = loop + 1; u < end; u++)
                if (kd->stmts[u].kind == KS_ACCUM) print_stmt(p, u);
            print_stmt(p, end);
        } else
            for (uint32_t u = loop; u <= end; u++) print_stmt(p, u);
        print_stmt(p, end + 1); /* the result */
        line(p, "v%u_b[kiln_r] = v%u;", end + 1, end + 1);
        close_rows(p);
        t = end + 1;
    }
    open_rows(p, e);
    kd_stmt elements = kd->stmts[e];
    elements.simd = elements.simd && !tiny;
    print_loop(p, &elements);
    for (uint32_t t = e + 1; t < kd->n_stmts; t++) print_stmt(p, t);
    close_rows(p);
}

/* The CUDA form of a kernel and its chunk of the last axis: a reduction inside the
 * element loop (any non-column accumulator) takes a warp per element, or the block when
 * the kernel has too few elements to fill the device with warps or its last axis too few
 * to give each warp of a block one (a keepdims row reduction: [rows, 1]). */
static void cuda_form_of(pr *p) {
    const kd_kernel *kd = p->kd;
    bool inner_red = false;
    for (uint32_t s = 1; s < kd->n_stmts; s++)
        inner_red |= kd->stmts[s].kind == KS_ACC && !kd->stmts[s].column;
    int64_t elems = kd->rows * kd->inner;
    if (kd->prologue && !kd->columns) {
        p->form = CF_ROW;
        p->chunk = kd->inner > 0 ? kd->inner : 1;
    } else if (!inner_red) {
        bool column = false;
        for (uint32_t s = 1; s < kd->n_stmts; s++)
            column |= kd->stmts[s].kind == KS_ACC && kd->stmts[s].column;
        p->form = CF_THREADS;
        p->chunk = column ? CGEN_CUDA_THREADS : 4 * CGEN_CUDA_THREADS;
    } else if (elems >= CGEN_CUDA_WARP_MIN && kd->inner >= CGEN_CUDA_THREADS / 32) {
        p->form = CF_WARP;
        p->chunk = CGEN_CUDA_THREADS / 32;
    } else {
        p->form = CF_BLOCK;
        p->chunk = 1;
    }
    p->chunks = kd->inner > p->chunk ? (kd->inner + p->chunk - 1) / p->chunk : 1;
}

/* ---------------------------------------------------- CUDA: four at a time ---- */

/* c + last + sum of 4k * (other loop variables): four consecutive elements from a multiple
 * of four, so one 16-byte access when the buffer is 16-byte aligned (every buffer is: the
 * allocator and the planner align to 256 bytes). */
static bool vec_index(const kd_kernel *kd, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    bool last = false;
    if (x->c % 4) return false;
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_term *t = &kd->terms[x->first + i];
        const kd_atom *a = &kd->atoms[t->atom];
        if (a->kind != KD_ATOM_VAR) return false;
        if (a->arg != kd->last_var && t->coef % 4) return false;
        /* two atoms of last (it narrowed by a guard, kd_ix_within) would step by 2 */
        if (a->arg == kd->last_var && (t->coef != 1 || last)) return false;
        last |= a->arg == kd->last_var;
    }
    return last;
}

static bool four_bytes(kiln_dtype t) {
    return t == KILN_DTYPE_F32 || t == KILN_DTYPE_I32;
}

/* An elementwise kernel whose element loop is straight-line code and whose last axis is a
 * multiple of four is printed four elements per thread, its contiguous 4-byte loads and
 * stores as 16-byte vector accesses (vec_index). */
static void vec_plan(pr *p) {
    const kd_kernel *kd = p->kd;
    if (p->form != CF_THREADS || kd->inner % 4 || p->chunk % 4) return;
    uint32_t first = 0, n_vec = 0;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        switch (st->kind) {
        case KS_LOOP:
            if (first || st->n >= 0) return;
            first = s;
            break;
        case KS_END:
            if (s + 1 != kd->n_stmts) return; /* the element loop's, and the last */
            break;
        case KS_LOAD:
            if (four_bytes(st->dtype) && vec_index(kd, st->ix)) p->flags[s] |= F_VLOAD, n_vec++;
            break;
        case KS_STORE:
            if (four_bytes(kd->out_type[st->slot]) && vec_index(kd, st->ix))
                p->flags[s] |= F_VSTORE, n_vec++;
            break;
        case KS_LIT:
        case KS_IOTA:
        case KS_OP:
        case KS_CLAMP: break;
        default: return;
        }
    }
    if (first != 1 || !n_vec) { /* its own marks only: a split's stay */
        for (uint32_t s = 0; s <= kd->n_stmts; s++) p->flags[s] &= ~(F_VLOAD | F_VSTORE);
        return;
    }
    p->vec = true;
}

static const char *vec_type(kiln_dtype t) {
    return t == KILN_DTYPE_F32 ? "float4" : "int4";
}

/* The element loop four elements per thread: the vector loads (at the first element),
 * the elements one by one (each its own block, where the last axis' variable names that
 * element), the vector stores. */
static void print_vec(pr *p) {
    const kd_kernel *kd = p->kd;
    char last[NAME_LEN];
    var_name(kd, kd->last_var, last);
    line(p, "for (int64_t kiln_j = jb + 4 * (int64_t)threadIdx.x; kiln_j < je; kiln_j += 4 * "
            "(int64_t)blockDim.x) {");
    p->depth++;
    uint32_t n = kd->n_stmts - 1; /* statements 2 .. n-1 are the element's */
    for (uint32_t s = 2; s < n; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (p->flags[s] & F_VLOAD) line(p, "%s q%u;", vec_type(st->dtype), s);
        if (p->flags[s] & F_VSTORE) line(p, "%s st%u;", vec_type(kd->out_type[st->slot]), s);
    }
    line(p, "{");
    line(p, "    const int64_t %s = kiln_j;", last);
    p->depth++;
    split_names(p);
    p->depth--;
    for (uint32_t s = 2; s < n; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (!(p->flags[s] & F_VLOAD)) continue;
        indent(p);
        sb_printf(p->sb, "    q%u = *(const %s *)&in%u[", s, vec_type(st->dtype), st->slot);
        print_ix(kd, p->sb, st->ix);
        sb_append(p->sb, "];\n");
    }
    line(p, "}");
    for (int k = 0; k < 4; k++) {
        p->lane = k;
        line(p, "{");
        p->depth++;
        line(p, "const int64_t %s = kiln_j + %d;", last, k);
        split_names(p);
        for (uint32_t s = 2; s < n; s++) print_stmt(p, s);
        p->depth--;
        line(p, "}");
    }
    p->lane = -1;
    line(p, "{");
    line(p, "    const int64_t %s = kiln_j;", last);
    p->depth++;
    split_names(p);
    p->depth--;
    for (uint32_t s = 2; s < n; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (!(p->flags[s] & F_VSTORE)) continue;
        indent(p);
        sb_printf(p->sb, "    *(%s *)&out%u[", vec_type(kd->out_type[st->slot]), st->slot);
        print_ix(kd, p->sb, st->ix);
        sb_printf(p->sb, "] = st%u;\n", s);
    }
    line(p, "}");
    p->depth--;
    line(p, "}");
}

/* The statement closing the split reduce loop. */
static uint32_t part_loop_end(const kd_kernel *kd, uint32_t split_loop) {
    int depth = 0;
    for (uint32_t s = split_loop + 1; s < kd->n_stmts; s++) {
        kd_stmt_kind k = kd->stmts[s].kind;
        if (k == KS_LOOP || k == KS_IF) depth++;
        if (k == KS_END && depth-- == 0) return s;
    }
    return kd->n_stmts - 1;
}

/* The partial result of part `part` for accumulator number `k` (0 but in a column split
 * with several) at element (row, v) in the scratch buffer: slot ((k * parts + part) *
 * rows * inner + row * inner + v) of KD_PART_BYTES, the value then its NaN flag. */
static void part_slot(pr *p, int k, const char *part, char *out, size_t n) {
    const kd_kernel *kd = p->kd;
    char v[NAME_LEN];
    var_name(kd, kd->last_var, v);
    long long elems = (long long)(kd->rows * kd->inner);
    snprintf(out, n, "kiln_part + ((%lld + %s) * %lld + row * %lld + %s) * %d",
             (long long)k * (long long)p->split_parts, part, elems, (long long)kd->inner, v,
             KD_PART_BYTES);
}

/* C: whether the kernel gathers (a take_rows row, clamped) in a kernel that does wrapping
 * integer arithmetic. gcc 12.2 at -O3 miscompiles, or fails on (an internal compiler error
 * in vector-builder.h), a vectorised loop that gathers at a clamped index computed with
 * wrapping int32 arithmetic from the loop's variable: `reduce_sum(take_rows(x, 2 * iota(n)
 * - 1), axes=[])` failed to compile for every n >= 17 (tests/test_index_ops.c, "gather at
 * a computed index"), and at -O2 it gave wrong rows. The value ranges gcc derives for the
 * wrapped index are what goes wrong; such kernels are printed KILN_GATHER_GUARD, which
 * turns the range propagation off for them alone (everywhere it costs: it made
 * cross-entropy markedly slower; bench/RESULTS.md, "gcc 12.2: a vectoriser bug behind
 * gathers at computed indices"). */
static bool wraps_into_gather(const kd_kernel *kd) {
    bool clamp = false, arith = false;
    for (uint32_t i = 1; i < kd->n_stmts; i++) {
        const kd_stmt *s = &kd->stmts[i];
        clamp |= s->kind == KS_CLAMP;
        arith |= s->kind == KS_OP && ir_dtype_is_int(s->in_dtype) && s->op != IR_COMPARE &&
                 s->op != IR_SELECT && s->op != IR_CONVERT;
    }
    return clamp && arith;
}

/* C, kd->split: the element loop, when it is printed unrolled over the split's remainder
 * (print_split_unrolled): a split of at most SPLIT_UNROLL_MAX whose element loop holds a
 * branch (an interleave's concatenate on the split-off axis, RoPE's or sin and cos of
 * positional encodings stacked). Then each copy of the body has the remainder as a
 * constant, its branches fold away, and the loop vectorises whatever the body's size:
 * left to gcc, the inner loop of k was unrolled only when the body was small, and a
 * body with sin and cos stayed a scalar loop with a branch per element. 0 otherwise. */
enum { SPLIT_UNROLL_MAX = 4 };
static uint32_t split_unrolled_loop(const kd_kernel *kd) {
    if (kd->split < 2 || kd->split > SPLIT_UNROLL_MAX || kd->columns || kd->parts) return 0;
    uint32_t loop = 0;
    bool branch = false;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (!loop && st->kind == KS_LOOP && st->n < 0)
            loop = s;
        else if (loop && st->kind == KS_IF)
            branch = true;
    }
    return loop && branch && !kd->stmts[loop].simd ? loop : 0;
}

/* Whether index ix is a constant once the split's remainder (last % split) is one. */
static bool on_remainder(const kd_kernel *kd, uint32_t ix) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[x->first + i].atom];
        if (a->kind != KD_ATOM_MOD || a->n != kd->split || !kd_ix_is_last(kd, a->arg)) return false;
    }
    return true;
}

/* Whether index ix is the last axis' variable plus a constant, *c. */
static bool last_plus(const kd_kernel *kd, uint32_t ix, int64_t *c) {
    const kd_index *x = &kd->ixs[ix];
    if (x->n != 1 || kd->terms[x->first].coef != 1) return false;
    const kd_atom *a = &kd->atoms[kd->terms[x->first].atom];
    *c = x->c;
    return a->kind == KD_ATOM_VAR && a->arg == kd->last_var;
}

/* C: the element loop, when it is printed in segments of the last axis (print_segments):
 * a kernel, not interleaved (split_unrolled_loop) nor in the column form or split in
 * parts, whose element loop branches only on the last axis' variable plus a constant
 * against constants (a concatenation or a pad along the last axis: sin and cos of Fourier
 * features side by side). The boundaries where a guard changes, strictly inside the axis
 * and sorted, go to b (at most SEG_MAX); 0 when the form does not apply. Each segment then
 * has every branch decided: it is printed without them, and vectorises, where the kernel
 * was a scalar loop with a branch per element (the concatenation's if-conversion guard). */
enum { SEG_MAX = 8 };
static uint32_t segmented_loop(const kd_kernel *kd, int64_t *b, int *nb) {
    *nb = 0;
    if (kd->split || kd->columns || kd->parts) return 0;
    uint32_t loop = 0;
    for (uint32_t s = 1; s < kd->n_stmts && !loop; s++)
        if (kd->stmts[s].kind == KS_LOOP && kd->stmts[s].n < 0) loop = s;
    if (!loop) return 0;
    uint32_t end = part_loop_end(kd, loop);
    bool any = false;
    for (uint32_t s = loop + 1; s < end; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind != KS_IF && st->kind != KS_ELSE_IF) continue;
        for (uint32_t g = 0; g < st->n_guards; g++) {
            const kd_guard *gd = &kd->guards[st->guard + g];
            int64_t c;
            if (gd->kind == KD_GUARD_DIVIDES || !last_plus(kd, gd->ix, &c)) return 0;
            int64_t v = gd->kind == KD_GUARD_LT ? gd->n - c : -c;
            any = true;
            if (v <= 0 || v >= kd->inner) continue;
            int at = 0;
            while (at < *nb && b[at] < v) at++;
            if (at < *nb && b[at] == v) continue;
            if (*nb == SEG_MAX) return 0;
            memmove(&b[at + 1], &b[at], (size_t)(*nb - at) * sizeof *b);
            b[at] = v;
            (*nb)++;
        }
    }
    return any ? loop : 0;
}

/* 1: guard g holds for every value of the last axis in [lo, hi); 0: for none; -1: some. */
static int guard_over(const kd_kernel *kd, const kd_guard *g, int64_t lo, int64_t hi) {
    int64_t c;
    if (g->kind == KD_GUARD_DIVIDES || !last_plus(kd, g->ix, &c)) return -1;
    int64_t a = lo + c, z = hi - 1 + c;
    if (g->kind == KD_GUARD_LT) return z < g->n ? 1 : a >= g->n ? 0 : -1;
    return a >= 0 ? 1 : z < 0 ? 0 : -1;
}

/* The statement after part s of an if-chain (an IF, ELSE_IF or ELSE): the chain's next
 * part or its END. */
static uint32_t chain_next(const kd_kernel *kd, uint32_t s) {
    int depth = 0;
    for (uint32_t t = s + 1; t < kd->n_stmts; t++) {
        kd_stmt_kind k = kd->stmts[t].kind;
        if (!depth && (k == KS_ELSE_IF || k == KS_ELSE || k == KS_END)) return t;
        if (k == KS_LOOP || k == KS_IF) depth++;
        if (k == KS_END) depth--;
    }
    return kd->n_stmts - 1;
}

/* C: the element loop of a kernel whose f32 sin and cos (directly in it: not in a reduce
 * loop) are printed first by Cody and Waite alone, which is exact below 2^21 and, in a
 * vectorised loop, half the work of computing both reductions and keeping one per lane:
 * the loop ors kiln_trig_big_f32 of each argument, and when that is set it runs again
 * with the exact functions, overwriting every output of the item. Not in place, not
 * with a prologue (the kept value it reads back is overwritten), not in the column form
 * or split in parts (kiln_k<i>_part), nor where the loop carries a simd pragma (the flag
 * would need a reduction clause). 0: none. */
static uint32_t fast_trig_loop(const kd_kernel *kd) {
    if (kd->in_place || kd->prologue || kd->columns || kd->parts || kd->n_stmts < 3 ||
        kd->stmts[1].kind != KS_LOOP || kd->stmts[1].n >= 0 || kd->stmts[1].simd)
        return 0;
    uint32_t end = part_loop_end(kd, 1);
    bool trig = false;
    for (uint32_t s = 2; s < end; s++) {
        const kd_stmt *st = &kd->stmts[s];
        if (st->kind == KS_LOOP) return 0;
        trig |= st->kind == KS_OP && st->dtype == KILN_DTYPE_F32 &&
                (st->op == IR_SIN || st->op == IR_COS);
    }
    return trig ? 1 : 0;
}

/* Statements [from, to) for the last axis in [lo, hi): an if-chain decided there is
 * printed as the branch taken alone. */
static void print_decided(pr *p, uint32_t from, uint32_t to, int64_t lo, int64_t hi) {
    const kd_kernel *kd = p->kd;
    for (uint32_t t = from; t < to; t++) {
        if (kd->stmts[t].kind != KS_IF) {
            print_stmt(p, t);
            continue;
        }
        uint32_t part = t, taken = 0;
        bool decided = true;
        while (kd->stmts[part].kind != KS_END && decided) {
            const kd_stmt *ps = &kd->stmts[part];
            bool all = true;
            for (uint32_t g = 0; ps->kind != KS_ELSE && g < ps->n_guards; g++) {
                int v = guard_over(kd, &kd->guards[ps->guard + g], lo, hi);
                decided &= v >= 0;
                all &= v == 1;
            }
            if (decided && all && !taken) taken = part;
            part = chain_next(kd, part);
        }
        if (!decided) { /* printed as it is; its branches, in turn, may be decided */
            print_stmt(p, t);
            continue;
        }
        if (taken) print_decided(p, taken + 1, chain_next(kd, taken), lo, hi);
        t = part; /* the chain's END */
    }
}

/* C: the element loop `loop` as one loop per segment of the last axis (segmented_loop),
 * each over the item's chunk within the segment, its branches decided. */
static void print_segments(pr *p, uint32_t loop, const int64_t *b, int nb) {
    const kd_kernel *kd = p->kd;
    char v[NAME_LEN];
    var_name(kd, kd->last_var, v);
    uint32_t end = part_loop_end(kd, loop);
    for (int i = 0; i <= nb; i++) {
        long long lo = i ? (long long)b[i - 1] : 0, hi = i < nb ? (long long)b[i] : kd->inner;
        if (kd->stmts[loop].simd) line(p, "#pragma omp simd");
        line(p, "for (int64_t %s = jb > %lld ? jb : %lld; %s < (je < %lld ? je : %lld); %s++) {", v,
             lo, lo, v, hi, hi, v);
        p->depth++;
        print_decided(p, loop + 1, end, lo, hi);
        p->depth--;
        line(p, "}");
    }
}

/* C: the element loop `loop` over the split's quotient, its body printed once for each
 * remainder r < k, r a constant there (split_unrolled_loop). */
static void print_split_unrolled(pr *p, uint32_t loop) {
    const kd_kernel *kd = p->kd;
    char v[NAME_LEN];
    var_name(kd, kd->last_var, v);
    long long k = (long long)kd->split;
    uint32_t end = part_loop_end(kd, loop);
    line(p, "for (int64_t %sq = jb / %lld; %sq < je / %lld; %sq++) {", v, k, v, k, v);
    p->depth++;
    for (long long r = 0; r < k; r++) {
        line(p, "{");
        p->depth++;
        line(p, "const int64_t %sr = %lld, %s = %sq * %lld + %lld;", v, r, v, v, k, r);
        for (uint32_t t = loop + 1; t < end; t++) print_stmt(p, t);
        p->depth--;
        line(p, "}");
    }
    p->depth--;
    line(p, "}");
}

/* C: whether the kernel branches on an element's index (a concatenate's chain of operands,
 * a pad's edges). gcc 12.2 -O3 without loop splitting (cc.c: -fno-split-loops, for the
 * miscompile of a concatenate it splits) if-converts and vectorises such a loop wrongly:
 * concatenate(x, x) along axis 0 of an f32[10, 2] lost rows 10-15 (zeros) whenever x and
 * the result did not overlap (AVX2 and AVX-512 alike; -O2, clang, and gcc without the
 * loop if-conversion are right; tests/test_compile_ops.c, "concatenate of one operand
 * twice"). Such kernels are printed KILN_BRANCH_GUARD, which turns the loop if-conversion
 * off for them alone. An interleave printed unrolled (split_unrolled_loop) whose branches
 * all test the split's remainder has none left once each copy's constant folds, and is
 * not guarded: the if-conversion it keeps is what vectorises sin's reduction there. */
static bool branches(const kd_kernel *kd) {
    bool unrolled = split_unrolled_loop(kd) != 0;
    int64_t b[SEG_MAX];
    int nb;
    uint32_t seg = unrolled ? 0 : segmented_loop(kd, b, &nb);
    uint32_t seg_end = seg ? part_loop_end(kd, seg) : 0;
    for (uint32_t i = 1; i < kd->n_stmts; i++) {
        const kd_stmt *st = &kd->stmts[i];
        if (st->kind != KS_IF && st->kind != KS_ELSE_IF) continue;
        if (seg && i > seg && i < seg_end) continue; /* decided in each segment */
        if (!unrolled) return true;
        for (uint32_t g = 0; g < st->n_guards; g++)
            if (!on_remainder(kd, kd->guards[st->guard + g].ix)) return true;
    }
    return false; /* none, or all decided in each copy of an unrolled split loop */
}

/* C: the kernel's qualifiers before `void`. */
static const char *c_qualifiers(const kd_kernel *kd) {
    bool gather = wraps_into_gather(kd), branch = branches(kd);
    return gather && branch ? "KILN_EXPORT KILN_GATHER_BRANCH_GUARD"
           : gather         ? "KILN_EXPORT KILN_GATHER_GUARD"
           : branch         ? "KILN_EXPORT KILN_BRANCH_GUARD"
                            : "KILN_EXPORT";
}

/* C, kd->parts: kiln_k<i>_part, the element loop up to the split reduction's end over
 * this part's slice, storing each element's accumulator. */
static void print_part_fn(pr *p) {
    const kd_kernel *kd = p->kd;
    const kd_stmt *acc = &kd->stmts[kd->part_acc];
    char slot[ACC_LEN + 64];
    sb_printf(p->sb, "%s void kiln_k%u_part(void *const *b, int64_t begin, int64_t end) {\n",
              c_qualifiers(kd), kd->index);
    print_buffers(p, false);
    print_fence(p);
    line(p, "unsigned char *restrict kiln_part = (unsigned char *)b[%u];",
         kd->n_inputs + kd->n_outputs);
    line(p, "for (int64_t it = begin; it < end; it++) {");
    p->depth++;
    p->part_mode = 1;
    print_item(p);
    uint32_t last = part_loop_end(kd, p->split_loop);
    for (uint32_t s = 1; s <= last; s++) print_stmt(p, s);
    part_slot(p, 0, "it", slot, sizeof slot);
    line(p, "memcpy(%s, &acc%u, sizeof acc%u);", slot, kd->part_acc, kd->part_acc);
    if (acc->red.nan_flag) line(p, "(%s)[8] = acc%u_nan;", slot, kd->part_acc);
    p->depth--;
    line(p, "}"); /* the element loop */
    p->depth--;
    line(p, "}");
    sb_append(p->sb, "}\n");
    p->part_mode = 2;
}

/* CUDA: the opening of kiln_k<i>_part (a block per (part, item)) up to the item's names,
 * and its end, after which p prints kiln_k<i> (flags of the printing cleared but the split
 * marks). Shared by the element split and the column split. */
static void cuda_part_open(pr *p) {
    sb_printf(p->sb, "extern \"C\" __global__ void __launch_bounds__(%d) kiln_k%u_part(",
              CGEN_CUDA_THREADS, p->kd->index);
    print_buffers(p, true);
    sb_append(p->sb, "unsigned char *__restrict__ kiln_part, int64_t items) {\n");
    line(p, "for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {");
    p->depth++;
    p->part_mode = 1;
    print_item(p);
}

static void cuda_part_close(pr *p) {
    p->depth--;
    line(p, "}");
    sb_append(p->sb, "}\n");
    p->part_mode = 2;
    p->stripe_depth = 0;
    for (uint32_t s = 0; s <= p->kd->n_stmts; s++) p->flags[s] &= F_SPLIT | F_SPLIT_LOOP;
}

/* CUDA, split reductions (cuda_element_split): kiln_k<i>_part, a block per (part,
 * element): each split reduction's loops over the part's slice, the lanes' accumulators
 * combined, and lane 0 storing the element's partial results. Leaves p ready to print
 * kiln_k<i>. */
static void print_cuda_part_fn(pr *p) {
    const kd_kernel *kd = p->kd;
    char slot[ACC_LEN + 96], a[ACC_LEN], nan[ACC_LEN];
    cuda_part_open(p);
    print_stmt(p, 1); /* the element loop */
    for (uint32_t s = 2; s < kd->n_stmts; s++) {
        if (!(p->flags[s] & F_SPLIT)) continue;
        uint32_t last = part_loop_end(kd, s + 1);
        for (uint32_t t = s; t <= last; t++) print_stmt(p, t);
        s = last;
    }
    for (uint32_t s = 2; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (!(p->flags[s] & F_SPLIT)) continue;
        if (p->flags[s] & F_STRIPED) print_combine(p, s);
        part_slot(p, (int)p->split_k[s], "kiln_q", slot, sizeof slot);
        acc_name(p, s, false, a);
        acc_name(p, s, true, nan);
        line(p, "if (threadIdx.x == 0) {");
        line(p, "    *(%s *)(%s) = %s;", acc_ctype(acc), slot, a);
        if (acc->red.nan_flag) line(p, "    (%s)[8] = %s;", slot, nan);
        line(p, "}");
    }
    p->depth--;
    line(p, "}"); /* the element loop */
    cuda_part_close(p);
}

/* Whether index ix refers to no statement outside (lo, hi] (its values: KD_ATOM_VAL). */
static bool ix_within(const kd_kernel *kd, uint32_t ix, uint32_t lo, uint32_t hi) {
    const kd_index *x = &kd->ixs[ix];
    for (uint32_t i = 0; i < x->n; i++) {
        const kd_atom *a = &kd->atoms[kd->terms[x->first + i].atom];
        if (a->kind == KD_ATOM_VAL && (a->arg <= lo || a->arg > hi)) return false;
        if ((a->kind == KD_ATOM_DIV || a->kind == KD_ATOM_MOD) && !ix_within(kd, a->arg, lo, hi))
            return false;
    }
    return true;
}

/* Whether the reduction of accumulator `acc`, its loops ending at statement `end`, reads
 * nothing computed outside them (then a part kernel can compute it alone: a softmax's sum
 * of exp(x - max) cannot be, its max being another reduction's result). */
static bool span_alone(const kd_kernel *kd, uint32_t acc, uint32_t end) {
    for (uint32_t t = acc + 1; t <= end; t++) {
        const kd_stmt *st = &kd->stmts[t];
        if (st->kind == KS_STORE) return false;
        for (uint32_t i = 0; i < st->n_args; i++) {
            uint32_t a = st->args[i];
            if ((a < acc || a > end) && kd->stmts[a].kind != KS_LIT) return false;
        }
        if ((st->kind == KS_LOAD || st->kind == KS_IOTA) && !ix_within(kd, st->ix, acc, end))
            return false;
        for (uint32_t g = 0; (st->kind == KS_IF || st->kind == KS_ELSE_IF) && g < st->n_guards; g++)
            if (!ix_within(kd, kd->guards[st->guard + g].ix, acc, end)) return false;
    }
    return true;
}

/* CUDA: whether a kernel with few values to compute (one item in C; a global norm: 76
 * sums of squares fused into one kernel that outputs one value) spends its time
 * in reductions one block would run alone. Every reduction directly inside the element
 * loop that reads nothing from outside its own loops is split (in place, only those before
 * the first store): the part kernel gives each of split_parts slices of their loops a
 * block per value, at least CGEN_CUDA_PART_WORK iterations a block, at most KN_CUDA_PARTS
 * blocks in all (a reduction to 300 values already has 300 blocks); the rest of the
 * kernel stays in kiln_k<i>. Marks them F_SPLIT (their loops F_SPLIT_LOOP), numbers them. */
static bool cuda_element_split(pr *p) {
    const kd_kernel *kd = p->kd;
    if (kd->items != 1 || kd->columns || kd->n_stmts < 4 || kd->stmts[1].kind != KS_LOOP ||
        kd->stmts[1].n >= 0)
        return false;
    int64_t work = 0;
    int depth = 0;
    for (uint32_t s = 2; s < kd->n_stmts; s++) {
        const kd_stmt *st = &kd->stmts[s];
        /* the part kernel runs before every store of kiln_k<i>, so a reduction after a
         * store may be split too, unless a store may write over an input (in place) */
        if (st->kind == KS_STORE && kd->in_place) break;
        if (!depth && st->kind == KS_ACC && !st->column && s + 1 < kd->n_stmts &&
            kd->stmts[s + 1].kind == KS_LOOP && kd->stmts[s + 1].n >= 2) {
            uint32_t end = part_loop_end(kd, s + 1);
            if (span_alone(kd, s, end)) {
                p->flags[s] |= F_SPLIT;
                p->flags[s + 1] |= F_SPLIT_LOOP;
                p->split_k[s] = p->n_split++;
                int64_t w = kd_loop_work(kd, s + 1);
                work = work > INT64_MAX - w ? INT64_MAX : work + w;
            }
            s = end;
            continue;
        }
        if (st->kind == KS_LOOP || st->kind == KS_IF) depth++;
        if (st->kind == KS_END && depth-- == 0) break; /* the element loop closed */
    }
    int64_t items = kd->rows * kd->inner, parts = KN_CUDA_PARTS / items;
    if (parts > work / CGEN_CUDA_PART_WORK) parts = work / CGEN_CUDA_PART_WORK;
    if (!p->n_split || parts < 2) {
        for (uint32_t s = 0; s <= kd->n_stmts; s++) p->flags[s] &= ~(F_SPLIT | F_SPLIT_LOOP);
        p->n_split = 0;
        return false;
    }
    p->form = CF_BLOCK; /* a block per value in both kernels */
    p->chunk = 1;
    p->chunks = kd->inner;
    p->split_parts = parts;
    return true;
}

/* CUDA: whether a column reduction has too few items to fill the device and rows enough
 * to split. A bias gradient, [4096, 512] summed over its rows, is two items of 256
 * columns: two blocks, each thread adding 4096 rows alone. Split, its outermost reduce
 * loop gives each of split_parts slices a block per item (kiln_k<i>_part, every thread
 * storing its columns' partial results), and kiln_k<i> adds the parts of each column in
 * order. The description is the same for both dialects; the split is how this dialect
 * spreads it (the C dialect's threads already share the columns). */
static bool cuda_column_split(pr *p) {
    const kd_kernel *kd = p->kd;
    if (!kd->columns) return false;
    int64_t items = kd->rows * p->chunks;
    if (items >= CGEN_CUDA_COL_SPLIT_ITEMS) return false;
    uint32_t loop = 0; /* the outermost reduce loop, right after the accumulators */
    for (uint32_t s = 1; s < kd->n_stmts && !loop; s++) {
        if (kd->stmts[s].kind == KS_LOOP)
            loop = s;
        else if (kd->stmts[s].kind != KS_ACC)
            return false;
    }
    if (!loop || kd->stmts[loop].n < 2 * CGEN_CUDA_COL_PART_ROWS) return false;
    int64_t n = kd->stmts[loop].n, parts = KN_CUDA_PARTS / items;
    if (parts > n / CGEN_CUDA_COL_PART_ROWS) parts = n / CGEN_CUDA_COL_PART_ROWS;
    if (parts < 2 || items * p->chunk * n < KD_PART_MIN_WORK) return false;
    p->split_loop = loop;
    p->flags[loop] |= F_SPLIT_LOOP;
    p->split_parts = parts;
    return true;
}

/* The column accumulators' count (a column split stores each). */
static int column_accs(const kd_kernel *kd) {
    int n = 0;
    for (uint32_t a = 1; a < kd->n_stmts; a++)
        n += kd->stmts[a].kind == KS_ACC && kd->stmts[a].column;
    return n;
}

/* CUDA, a column split: for each of this thread's columns, every column accumulator's
 * slot of part kiln_q: stored (the part kernel) or added in (kiln_k<i>). */
static void print_col_slots(pr *p, bool store) {
    const kd_kernel *kd = p->kd;
    char v[NAME_LEN], slot[ACC_LEN + 96], a[ACC_LEN], nan[ACC_LEN];
    var_name(kd, kd->last_var, v);
    line(p, "for (int64_t %s = jb + threadIdx.x; %s < je; %s += blockDim.x) {", v, v, v);
    p->depth++;
    int k = 0;
    for (uint32_t s = 1; s < kd->n_stmts; s++) {
        const kd_stmt *acc = &kd->stmts[s];
        if (acc->kind != KS_ACC || !acc->column) continue;
        part_slot(p, k++, "kiln_q", slot, sizeof slot);
        acc_name(p, s, false, a);
        acc_name(p, s, true, nan);
        if (store) {
            line(p, "*(%s *)(%s) = %s;", acc_ctype(acc), slot, a);
            if (acc->red.nan_flag) line(p, "(%s)[8] = %s;", slot, nan);
            continue;
        }
        line(p, "{");
        p->depth++;
        line(p, "const %s t = *(const %s *)(%s);", acc_ctype(acc), acc_ctype(acc), slot);
        combine_line(p, acc, a, "t");
        if (acc->red.nan_flag) line(p, "%s |= (%s)[8];", nan, slot);
        p->depth--;
        line(p, "}");
    }
    p->depth--;
    line(p, "}");
}

/* CUDA, a column split: kiln_k<i>_part, a block per (part, item): the reduce loops over
 * the part's slice, then every thread's columns' accumulators stored. */
static void print_cuda_col_part_fn(pr *p) {
    cuda_part_open(p);
    uint32_t last = part_loop_end(p->kd, p->split_loop);
    for (uint32_t s = 1; s <= last; s++) print_stmt(p, s);
    print_col_slots(p, true);
    cuda_part_close(p);
}

/* CUDA, a column split: in kiln_k<i>, each thread's columns' parts added in order instead
 * of the reduce loops. */
static void print_col_combine(pr *p) {
    line(p, "for (int64_t kiln_q = 0; kiln_q < %lld; kiln_q++)", (long long)p->split_parts);
    print_col_slots(p, false);
}

/* C, kd->parts: in kiln_k<i>, the parts' accumulators combined in order instead of the
 * split loop. */
static void print_part_combine(pr *p, uint32_t acc_id, int k) {
    const kd_stmt *acc = &p->kd->stmts[acc_id];
    char slot[ACC_LEN + 96], a[ACC_LEN];
    snprintf(a, sizeof a, "acc%u", acc_id);
    if (p->dialect == KN_DIALECT_CUDA) {
        /* the lanes take the parts in turn; the RESULT's combine adds up the lanes */
        line(p, "for (int64_t kiln_q = threadIdx.x; kiln_q < %lld; kiln_q += blockDim.x) {",
             (long long)p->split_parts);
        p->flags[acc_id] |= F_STRIPED;
    } else
        line(p, "for (int64_t kiln_q = 0; kiln_q < %lld; kiln_q++) {", (long long)p->split_parts);
    p->depth++;
    part_slot(p, k, "kiln_q", slot, sizeof slot);
    if (p->dialect == KN_DIALECT_CUDA) /* slots are 16-byte aligned */
        line(p, "const %s t = *(const %s *)(%s);", acc_ctype(acc), acc_ctype(acc), slot);
    else {
        line(p, "%s t;", acc_ctype(acc));
        line(p, "memcpy(&t, %s, sizeof t);", slot);
    }
    combine_line(p, acc, a, "t");
    if (acc->red.nan_flag) line(p, "acc%u_nan |= (%s)[8];", acc_id, slot);
    p->depth--;
    line(p, "}");
}

/* C: element loop s (statement 1), in the form print_kernel would print it. */
static void print_element_loop(pr *p, uint32_t s, uint32_t unroll, uint32_t seg,
                               const int64_t *seg_b, int seg_n) {
    const kd_kernel *kd = p->kd;
    if (s == unroll)
        print_split_unrolled(p, s);
    else if (s == seg)
        print_segments(p, s, seg_b, seg_n);
    else if (s == 1 && row_blocks(p))
        print_row_block(p);
    else
        for (uint32_t t = s, end = part_loop_end(kd, s); t <= end; t++) print_stmt(p, t);
}

/* Prints kernel kd; *items receives its work items in this dialect, *grain the items per
 * parallel chunk, *parts its split reduction's parts (0: not split). Returns the op (+1)
 * that had no kernel expression, 0, or -1 on host OOM. */
static int print_kernel(const kd_kernel *kd, kn_dialect dialect, strbuf *sb, int64_t *items,
                        int64_t *grain, int64_t *parts) {
    pr p = {.kd = kd,
            .sb = sb,
            .dialect = dialect,
            .chunk = kd->chunk,
            .chunks = kd->chunks,
            .lane = -1};
    print_provenance(kd, sb);
    if (dialect == KN_DIALECT_CUDA) {
        if (!(p.flags = host_calloc(kd->ctx, kd->n_stmts + 1, 1))) return -1;
        if (!(p.split_k = host_calloc(kd->ctx, kd->n_stmts + 1, sizeof *p.split_k))) {
            host_free(kd->ctx, p.flags, kd->n_stmts + 1);
            return -1;
        }
        cuda_form_of(&p);
        if (cuda_element_split(&p) || cuda_column_split(&p)) {
            p.base_items = kd->rows * p.chunks;
            if (kd->columns)
                print_cuda_col_part_fn(&p);
            else
                print_cuda_part_fn(&p);
        }
        sb_printf(sb, "extern \"C\" __global__ void __launch_bounds__(%d) kiln_k%u(",
                  CGEN_CUDA_THREADS, kd->index);
        print_buffers(&p, true);
        if (p.split_parts) sb_append(sb, "const unsigned char *__restrict__ kiln_part, ");
        sb_append(sb, "int64_t items) {\n");
        line(&p, "for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {");
    } else {
        if (kd->parts) {
            p.split_loop = kd->part_loop;
            p.split_parts = kd->parts;
            print_part_fn(&p);
        }
        sb_printf(sb, "%s void kiln_k%u(void *const *b, int64_t begin, int64_t end) {\n",
                  c_qualifiers(kd), kd->index);
        print_buffers(&p, false);
        print_fence(&p);
        if (kd->parts)
            line(&p, "const unsigned char *restrict kiln_part = (const unsigned char *)b[%u];",
                 kd->n_inputs + kd->n_outputs);
        line(&p, "for (int64_t it = begin; it < end; it++) {");
    }
    p.depth++;
    print_item(&p);
    if (dialect == KN_DIALECT_CUDA) vec_plan(&p);
    uint32_t unroll = dialect == KN_DIALECT_C ? split_unrolled_loop(kd) : 0;
    int64_t seg_b[SEG_MAX];
    int seg_n = 0;
    uint32_t seg = dialect == KN_DIALECT_C && !unroll ? segmented_loop(kd, seg_b, &seg_n) : 0;
    uint32_t fast = dialect == KN_DIALECT_C ? fast_trig_loop(kd) : 0;
    if (p.vec)
        print_vec(&p);
    else
        for (uint32_t s = 1; s < kd->n_stmts; s++) {
            if (s == fast) { /* the element loop with fast sin and cos, again if it must */
                line(&p, "uint32_t kiln_big = 0;");
                p.fast_trig = true;
                print_element_loop(&p, s, unroll, seg, seg_b, seg_n);
                p.fast_trig = false;
                line(&p, "if (kiln_big) { /* an argument of 2^21 or more: exactly */");
                p.depth++;
                p.trig_rerun = true;
                print_element_loop(&p, s, unroll, seg, seg_b, seg_n);
                p.trig_rerun = false;
                p.depth--;
                line(&p, "}");
                s = part_loop_end(kd, s);
                continue;
            }
            if (s == 1 && prologue_blocks(&p)) { /* the whole kernel, in a form of its own */
                print_prologue_rows(&p);
                break;
            }
            if (s == unroll || s == seg || (s == 1 && row_blocks(&p))) { /* a form of its own */
                print_element_loop(&p, s, unroll, seg, seg_b, seg_n);
                s = part_loop_end(kd, s);
                continue;
            }
            bool cuda_split = dialect == KN_DIALECT_CUDA && (p.flags[s] & F_SPLIT_LOOP);
            if (p.part_mode == 2 &&
                (cuda_split || (dialect == KN_DIALECT_C && s == p.split_loop))) {
                if (kd->columns)
                    print_col_combine(&p);
                else if (dialect == KN_DIALECT_CUDA)
                    print_part_combine(&p, s - 1, (int)p.split_k[s - 1]);
                else
                    print_part_combine(&p, kd->part_acc, 0);
                s = part_loop_end(kd, s);
                continue;
            }
            print_stmt(&p, s);
        }
    p.depth--;
    line(&p, "}");
    sb_append(sb, "}\n");
    if (p.part_mode && dialect == KN_DIALECT_C)
        sb_printf(sb, "KILN_EXPORT const int64_t kiln_k%u_parts[2] = {%lld, %lld};\n", kd->index,
                  (long long)kd->parts, (long long)(kd->inner * KD_PART_BYTES));
    else if (p.part_mode) /* the part kernel's items and the scratch's bytes (cgen.h) */
        sb_printf(sb, "extern \"C\" __device__ const int64_t kiln_k%u_parts[2] = {%lld, %lld};\n",
                  kd->index, (long long)(p.split_parts * p.base_items),
                  (long long)(p.split_parts * (kd->columns ? column_accs(kd) : (int)p.n_split) *
                              kd->rows * kd->inner * KD_PART_BYTES));
    host_free(kd->ctx, p.flags, p.flags ? kd->n_stmts + 1 : 0);
    host_free(kd->ctx, p.split_k, p.split_k ? (kd->n_stmts + 1) * sizeof *p.split_k : 0);
    /* the dialect's items, and so its grain: row blocks of them in C */
    bool blocks = row_blocks(&p), prows = prologue_blocks(&p);
    int64_t k = prows ? kd->prologue_rows : kd->row_block;
    *items = !kd->items ? 0
             : blocks   ? kd->rows / kd->row_block * p.chunks
             : prows    ? (kd->rows + k - 1) / k
                        : kd->rows * p.chunks;
    *grain = !blocks && !prows ? kd->grain : kd->grain > k ? kd->grain / k : 1;
    *parts = p.split_parts;
    return p.hole;
}

kiln_status cgen_program_dialect(const kiln_graph *g, const fusion_plan *p, kn_dialect dialect,
                                 strbuf *sb, cgen_kernel *info) {
    sb_append(sb, dialect == KN_DIALECT_CUDA ? head_cuda : head_c);
    sb_append(sb, prelude);
    sb_append(sb, math_f32);
    if (dialect == KN_DIALECT_C) sb_append(sb, math_f32_cpu);
    sb_append(sb, dialect == KN_DIALECT_CUDA ? math_f64_cuda : math_f64_cpu);
    sb_append(sb, math_f64);
    sb_append(sb, converts);
    sb_append(sb, cgen_random_prelude);
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        info[i] = (cgen_kernel){0, 1, 0};
        if (p->kernels[i].kind != FK_LOOP) continue;
        kd_kernel kd;
        kiln_status s = kd_lower(g, p, i, &kd);
        int hole = 0;
        int64_t items = 0, grain = 1, parts = 0;
        if (!s) {
            hole = print_kernel(&kd, dialect, sb, &items, &grain, &parts);
            info[i] = (cgen_kernel){items, grain, parts};
        }
        if (!s && hole < 0) s = ctx_oom(g->ctx, "codegen: kernel", kd.n_stmts + 1);
        if (!s && hole > 0)
            s = ctx_error(g->ctx, KILN_STATUS_INTERNAL,
                          "codegen: %s has no kernel expression for its operands (kernel %u)",
                          ir_ops[hole - 1].name, i);
        kd_free(&kd);
        if (s) return s;
    }
    if (sb->oom) return ctx_oom(g->ctx, "codegen: kernel source", sb->len);
    return KILN_STATUS_OK;
}

kiln_status cgen_program(const kiln_graph *g, const fusion_plan *p, strbuf *sb, cgen_kernel *info) {
    return cgen_program_dialect(g, p, KN_DIALECT_C, sb, info);
}
