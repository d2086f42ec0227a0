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

static inline uint32_t kiln_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The prelude's kiln_reduce_pio2_f32 past 2^21: the same steps (c_runtime.h). */
static double pio2_f32(float a, uint32_t *quadrant) {
    double r;
    KN_C_PIO2_BIG(a, r, *quadrant);
    return r;
}

static const struct kiln_runtime table = {.sum_f32 = sum_f32, .pio2_f32 = pio2_f32};

void cpu_runtime_bind(cc_module *m) {
    /* A module loaded twice (two contexts, one cache entry) is one object: the store may
     * meet another thread's, of the same value, or a running kernel's load. */
    const struct kiln_runtime **slot = cc_module_sym(m, "kiln_module_runtime");
    if (slot) __atomic_store_n(slot, &table, __ATOMIC_RELAXED);
}
