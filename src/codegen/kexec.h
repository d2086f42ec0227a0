/* kexec.h — kernel descriptions run directly, with no compiler: the first tier of tiered
 * compilation (docs/performance.md, "Compile tiers"; src/runtime/tier.c).
 *
 * A fused LOOP kernel is described once (kdesc.h); the printers spell the description as C
 * or CUDA, and this interpreter runs it. It reads the description as the printers do —
 * items, the element loop, reductions and their accumulators, guards, index expressions —
 * and runs each statement over a vector of lanes with one loop of the op library that the
 * build generated from the op registry (tools/gen_oplib.c: each op's kernel expression
 * after the C dialect's prelude, so an op computes as a compiled kernel's does). The lanes
 * are the element loop's elements (a thread per element, as the CUDA dialect reads the
 * description) or, outside it, the iterations of an innermost loop (a row value's
 * reduction). Memory is the plan's: the kernel reads its inputs and writes its outputs
 * where the planner put them, and its working values live in a scratch of its own on the
 * host, as a compiled kernel keeps them in registers and on its stack.
 *
 * Float sums add as the C dialect's do: f32 sums in its blocks (kd_reduce.blocked: the
 * runtime's 16 f32 lanes, then the lanes pairwise, each block into f64), long sums in
 * their slices (kd_stmt.slices), split ones part by part, and every other float sum or
 * product one iteration after another, as the compiled loop adds it. So where the op
 * library has the compiled kernels' bits (kx_same_bits), a kernel gives the -O3 build's
 * bits, except a kernel whose float sum or product the C compiler vectorises in an order
 * of its own (an `omp simd` reduction: kx_replays says so, and tier 1 compiles it instead,
 * src/runtime/tier.c), and the sign of a zero that a max or min over both +0 and -0
 * returns. */
#ifndef KILN_CODEGEN_KEXEC_H
#define KILN_CODEGEN_KEXEC_H

#include "kdesc.h"

typedef struct kx_kernel kx_kernel;

/* Lowers kernel ki of the plan (a LOOP kernel) and prepares it to run. On failure (host
 * OOM, or an op the library has no loop for: an internal error) sets the context's message
 * and *out is NULL. */
/* Whether the op library's loops were built for the machine they run on, as the compiled
 * kernels are (-march=native): gcc's per-ISA clones, chosen at load. Then every
 * elementwise value of tier 1 has the -O3 build's bits (the same FMA contractions inside
 * each op's expression). Without them (clang, a ThreadSanitizer build) the loops are the
 * baseline's, without FMA, and a value may differ in its last bit. */
bool kx_same_bits(void);

kiln_status kx_prepare(const kiln_graph *g, const fusion_plan *p, uint32_t ki, kx_kernel **out);
void kx_free(kx_kernel *k);
/* The ways kernel k runs (kexec.c's opening comment), as a mask of KX_FORM_*: tests check
 * that each is exercised. */
enum {
    KX_FORM_ACROSS = 1u,       /* an innermost loop's iterations as lanes */
    KX_FORM_ONE_BY_ONE = 2u,   /* few elements each with a long loop, one at a time */
    KX_FORM_INTERCHANGE = 4u,  /* a column reduction over few columns, loops interchanged */
    KX_FORM_ROW_LANES = 8u,    /* rows as lanes */
    KX_FORM_SPLIT_LANES = 16u, /* a split last axis: quotients as lanes */
    KX_FORM_PARTS = 32u,       /* a split reduction: parts, then their combination */
    KX_FORM_BLOCKS = 64u,      /* an f32 sum in the C dialect's blocks */
    KX_FORM_SLICES = 128u,     /* a long sum in slices */
};
unsigned kx_forms(const kx_kernel *k);
/* Whether kernel k adds every float sum and product in the compiled kernel's order (above);
 * if not, *why (when why is not NULL) says what does not. */
bool kx_replays(const kx_kernel *k, const char **why);
/* Runs kernel k on buffers bufs (its inputs, then its outputs, as cgen.h lays them out)
 * over the device's threads, through backend b's launch_host; a split reduction
 * (kd_kernel.parts) runs its parts there and then combines them in order, as the C
 * dialect does. Safe from several threads at once. Fails only when its scratch cannot be
 * allocated (KILN_STATUS_HOST_OOM, the message set), before anything runs, or for a split
 * reduction between its parts and their combination (the outputs unwritten). */
kiln_status kx_launch(const kx_kernel *k, const kn_backend *b, void *state, int device,
                      void *const *bufs);

#endif
