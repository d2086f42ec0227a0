/* c_runtime.h — what the C dialect's kernels call rather than compile: the contract
 * between the prelude the C dialect's modules open with (src/codegen/prelude/c_head.h) and
 * the CPU backend that loads the module.
 *
 * A generated module defines `kiln_module_runtime`, a pointer to a `struct kiln_runtime`,
 * and the backend points it at its table right after dlopen, before any kernel runs
 * (cpu_runtime_bind in src/backend/cpu/cpu_runtime.c). A helper lives here, compiled once
 * with the library, when compiling it into every module would cost more than calling it:
 * kiln_sum_f32, the staged f32 block sum, was a large part of gcc -O3's time in each
 * translation unit that used it (bench/RESULTS.md, "Where a small program's compile goes"),
 * against one indirect call per block of up to 256 values; the exact f32 reduction modulo
 * pi/2 of huge arguments cost a kernel's compile noticeably too (bench/RESULTS.md, "The
 * exact trig rerun without its inline Payne-Hanek"), against a call per such argument.
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
 * remainder as the double it returns and the quadrant (KN_C_PIO2_BIG below, which the
 * prelude's kiln_reduce_pio2_f32 inlines for such an a). The exact rerun of a fast-trig loop
 * (src/codegen/schedule.c, fast_trig_loop) calls it: inline there it lengthened gcc -O3's compile
 * of every kernel with f32 sin or cos (bench/RESULTS.md, "The exact trig rerun without its inline
 * Payne-Hanek"), for a loop that runs only when an argument is that large. */
#define KN_C_RUNTIME_FIELDS                                                                        \
    float (*sum_f32)(const float *t, int64_t n);                                                   \
    double (*pio2_f32)(float a, uint32_t *quadrant);

/* The Payne-Hanek steps of pio2_f32, spelled once: the backend compiles them (cpu_runtime.c)
 * and the prelude prints them into its inline kiln_reduce_pio2_f32 (prelude/math_f32.h), which
 * vectorised loops use, so the two give the same bits. For a float a >= 2^21 (inf and NaN
 * too: garbage, which sin and cos then discard), |a| = m 2^(e-23): the product of the
 * 24-bit m with a 96-bit window of the bits of 2/pi starting at bit e + 1 (of a string of
 * 26 zero bits and then 294 of 2/pi) is |a| 2/pi modulo 4 in 64-bit fixed point, 62 bits
 * of fraction; its quadrant rounded, the rest times pi/2 is r. The window's three words
 * are chosen from five by masks, q = 0, 1 or 2 (gcc turns a chain of selects into a load
 * from a table of its own, which it then cannot vectorise). Needs kiln_f32_bits. */
#define KN_C_PIO2_BIG(a, r, quadrant)                                                              \
    do {                                                                                           \
        uint32_t b_ = kiln_f32_bits(a) & 0x7fffffffu;                                              \
        int32_t e_ = (int32_t)(b_ >> 23) - 127;                                                    \
        e_ = e_ > 127 ? 127 : e_;                                                                  \
        uint64_t m_ = (b_ & 0x007fffffu) | 0x00800000u;                                            \
        int32_t o_ = e_ + 1, q_ = o_ >> 6, s_ = o_ & 63;                                           \
        uint64_t a1_ = -(uint64_t)(q_ >= 1), a2_ = -(uint64_t)(q_ >= 2), a0_ = ~a1_;               \
        uint64_t am_ = a1_ & ~a2_;                                                                 \
        uint64_t hi_ = (0x00000028be60db93ull & a0_) | (0x91054a7f09d5f47dull & am_) |             \
                       (0x4d377036d8a5664full & a2_);                                              \
        uint64_t mid_ = (0x91054a7f09d5f47dull & a0_) | (0x4d377036d8a5664full & am_) |            \
                        (0x10e4107f9458eaf7ull & a2_);                                             \
        uint64_t lo_ = (0x4d377036d8a5664full & a0_) | (0x10e4107f9458eaf7ull & am_) |             \
                       (0xaef1586dc91b8e90ull & a2_);                                              \
        uint64_t w_ = (hi_ << s_) | ((mid_ >> 1) >> (63 - s_));                                    \
        uint64_t w2_ = ((mid_ << s_) | ((lo_ >> 1) >> (63 - s_))) >> 32;                           \
        uint64_t f_ = m_ * w_ + ((m_ * w2_) >> 32);                                                \
        uint64_t k_ = (f_ + ((uint64_t)1 << 61)) >> 62;                                            \
        r = (double)(int64_t)(f_ - (k_ << 62)) * 0x1.921fb54442d18p-62;                            \
        quadrant = (uint32_t)k_;                                                                   \
    } while (0)

#define KN_C_RUNTIME_STR_(...) #__VA_ARGS__
#define KN_C_RUNTIME_STR(x)    KN_C_RUNTIME_STR_(x)
/* the struct as the prelude prints it */
#define KN_C_RUNTIME_TEXT "struct kiln_runtime { " KN_C_RUNTIME_STR(KN_C_RUNTIME_FIELDS) " };\n"

#endif
