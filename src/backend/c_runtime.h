/* c_runtime.h — what the C dialect's kernels call rather than compile: the contract
 * between the prelude print_c.c emits and the CPU backend that loads the module.
 *
 * A generated module defines `kiln_module_runtime`, a pointer to a `struct kiln_runtime`,
 * and the backend points it at its table right after dlopen, before any kernel runs
 * (cpu_runtime_bind in src/backend/cpu/cpu_runtime.c). A helper lives here, compiled once
 * with the library, when compiling it into every module would cost more than calling it:
 * kiln_sum_f32, the staged f32 block sum, was 30-60 ms of gcc -O3 in each translation
 * unit that used it, against one indirect call per block of up to 256 values; the exact
 * f32 reduction modulo pi/2 of huge arguments, ~12 ms, against a call per such argument.
 *
 * The fields are spelled once, in KN_C_RUNTIME_FIELDS: the prelude prints them as text
 * and the backend compiles them, so the two cannot disagree; the text is part of every
 * module's source and so of its cache key, and a changed table never meets an old module.
 * A helper here must give the bits the kernel would have computed itself: only exact,
 * ordered arithmetic, no contraction a kernel's flags could have changed. */
#ifndef KILN_BACKEND_C_RUNTIME_H
#define KILN_BACKEND_C_RUNTIME_H

/* sum_f32(t, n): t[0..n) added in 16 lanes (lane j takes t[j], t[j + 16], ...), then the
 * lanes pairwise (lane j += lane j + w for w = 8, 4, 2, 1); n <= 256 in practice.
 * pio2_f32(a, &quadrant): a >= 2^21 (inf and NaN too) modulo pi/2 by Payne and Hanek, the
 * remainder as the double it returns and the quadrant: what the prelude's
 * kiln_reduce_pio2_f32 computes for such an a, integer arithmetic then one conversion and
 * one product. The exact rerun of a fast-trig loop (print_c.c, fast_trig_loop) calls it:
 * inline there it cost ~12 ms of gcc -O3 in every kernel with f32 sin or cos, for a loop
 * that runs only when an argument is that large. */
#define KN_C_RUNTIME_FIELDS                                                                        \
    float (*sum_f32)(const float *t, int64_t n);                                                   \
    double (*pio2_f32)(float a, uint32_t *quadrant);

#define KN_C_RUNTIME_STR_(...) #__VA_ARGS__
#define KN_C_RUNTIME_STR(x)    KN_C_RUNTIME_STR_(x)
/* the struct as the prelude prints it */
#define KN_C_RUNTIME_TEXT "struct kiln_runtime { " KN_C_RUNTIME_STR(KN_C_RUNTIME_FIELDS) " };\n"

#endif
