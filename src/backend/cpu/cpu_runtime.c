/* cpu_runtime.c — the helpers generated C kernels call instead of compiling them
 * (src/backend/c_runtime.h says which and why), and their binding to a loaded module. */
#include "clones.h"
#include "cpu.h"

#include "backend/c_runtime.h"

#include <string.h>

struct kiln_runtime {
    KN_C_RUNTIME_FIELDS
};

/* Lane j adds t[j], t[j + 16], ... in order, then the lanes pairwise: every addition is
 * the same rounded f32 addition whatever the vector width, so each clone gives the bits of
 * the others and of the loop the kernels compiled before this table existed. */
KILN_CLONES static float sum_f32(const float *t, int64_t n) {
    float l[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) l[j] += t[i + j];
    for (int j = 0; i + j < n; j++) l[j] += t[i + j];
    for (int w = 8; w; w /= 2)
        for (int j = 0; j < w; j++) l[j] += l[j + w];
    return l[0];
}

/* The prelude's kiln_reduce_pio2_f32 past 2^21, step for step (print_c.c, math_f32): the
 * product of the 24-bit mantissa with a 96-bit window of 2/pi, chosen from five words by
 * masks, is |a| 2/pi modulo 4 in 64-bit fixed point; all of it integer arithmetic but the
 * last conversion and product, so it gives the inline version's bits. */
static double pio2_f32(float a, uint32_t *quadrant) {
    uint32_t b;
    memcpy(&b, &a, 4);
    b &= 0x7fffffffu;
    int32_t e = (int32_t)(b >> 23) - 127;
    e = e > 127 ? 127 : e;
    uint64_t m = (b & 0x007fffffu) | 0x00800000u;
    int32_t o = e + 1, q = o >> 6, s = o & 63;
    uint64_t a1 = -(uint64_t)(q >= 1), a2 = -(uint64_t)(q >= 2), a0 = ~a1, am = a1 & ~a2;
    uint64_t hi =
        (0x00000028be60db93ull & a0) | (0x91054a7f09d5f47dull & am) | (0x4d377036d8a5664full & a2);
    uint64_t mid =
        (0x91054a7f09d5f47dull & a0) | (0x4d377036d8a5664full & am) | (0x10e4107f9458eaf7ull & a2);
    uint64_t lo =
        (0x4d377036d8a5664full & a0) | (0x10e4107f9458eaf7ull & am) | (0xaef1586dc91b8e90ull & a2);
    uint64_t w = (hi << s) | ((mid >> 1) >> (63 - s));
    uint64_t w2 = ((mid << s) | ((lo >> 1) >> (63 - s))) >> 32;
    uint64_t f = m * w + ((m * w2) >> 32);
    uint64_t k = (f + ((uint64_t)1 << 61)) >> 62;
    *quadrant = (uint32_t)k;
    return (double)(int64_t)(f - (k << 62)) * 0x1.921fb54442d18p-62;
}

static const struct kiln_runtime table = {.sum_f32 = sum_f32, .pio2_f32 = pio2_f32};

void cpu_runtime_bind(cc_module *m) {
    /* A module loaded twice (two contexts, one cache entry) is one object: the store may
     * meet another thread's, of the same value, or a running kernel's load. */
    const struct kiln_runtime **slot = cc_module_sym(m, "kiln_module_runtime");
    if (slot) __atomic_store_n(slot, &table, __ATOMIC_RELAXED);
}
