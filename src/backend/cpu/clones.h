/* clones.h — KILN_CLONES, the attribute that compiles a hot CPU function three times (for
 * x86-64-v4, i.e. AVX-512; v3, AVX2; and the baseline) and picks one at load through an
 * ifunc: the library is built for the baseline, the machine it runs on is not.
 *
 * Not under ThreadSanitizer: the clones' ifunc resolver runs while the dynamic loader
 * relocates the program, before TSan's runtime is up, and its instrumented code crashes
 * there (every program linking libkiln died at startup in the -DKILN_TSAN=ON build). Nor
 * with clang or off x86-64: one version, compiled for the build's flags. */
#ifndef KILN_CPU_CLONES_H
#define KILN_CPU_CLONES_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define KILN_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KILN_CLONES
#endif

#endif
