/* prelude.h — the kernels' runtime preludes: the files of src/codegen/prelude/, each one
 * embedded at build time as a string (cmake/embed_text.cmake), its `//` note lines left out.
 *
 * A program's source opens with them, in this order: the dialect's head (c_head.h or
 * cuda_head.cuh: types, limits, KILN_FN and the bit casts), ops.h, math_f32.h, the dialect's
 * math (c_math.h: the exact trig rerun, kiln's own f64 functions and f32 erfc; cuda_math.cuh:
 * CUDA's),
 * math_f64.h, convert.h, random.h, half.h. Everything after the head is written once for both
 * dialects, behind KILN_FN. `@NAME@` in a prelude is text of src/backend/c_runtime.h, put in
 * by the printer (cgen_prelude_append in print.c), so that what the CPU backend compiles
 * and what the module inlines are spelled once. */
#ifndef KILN_CODEGEN_PRELUDE_H
#define KILN_CODEGEN_PRELUDE_H

extern const char cgen_prelude_c_head[], cgen_prelude_cuda_head[], cgen_prelude_ops[],
    cgen_prelude_math_f32[], cgen_prelude_c_math[], cgen_prelude_cuda_math[],
    cgen_prelude_math_f64[], cgen_prelude_convert[], cgen_prelude_random[], cgen_prelude_half[];

#endif
