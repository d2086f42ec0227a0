/* cgen.h — fused kernels -> source text in a backend's dialect (lower.c describes each
 * kernel, schedule.c decides how the dialect's target runs it, print.c prints it, with
 * print_c.c spelling C for the CPU and print_cuda.c CUDA C for the GPU).
 *
 * One translation unit holds every LOOP kernel of a program. Kernel i becomes
 *
 *     void kiln_k<i>(void *const *b, int64_t begin, int64_t end);
 *
 * where b[] holds the kernel's input buffers (fkernel.inputs, in order) followed by its
 * output buffers (fkernel.roots), and [begin, end) is a range of "work items": the
 * output's index space split into rows (all axes but the last) times chunks of the last
 * axis, so that both tall and wide (or 1-D) outputs parallelise. Items are independent.
 *
 * A one-item kernel whose reduction is split across threads (kd_kernel.parts) also has
 *
 *     void kiln_k<i>_part(void *const *b, int64_t begin, int64_t end);
 *     const int64_t kiln_k<i>_parts[2];  (the number of parts, the scratch bytes of one)
 *
 * where b[] ends with one more buffer, the scratch of parts * bytes: the parts [begin,
 * end) fill it, and kiln_k<i> (given the same b[]) reads it after all of them ran. */
#ifndef KILN_CGEN_H
#define KILN_CGEN_H

#include "backend/backend_impl.h"
#include "passes/fusion.h"
#include "base/strbuf.h"

/* The language a program is printed in. A backend names the one its program_compile
 * takes (kn_backend.source_language: "c", "cuda"); src/compile/ maps that name to a dialect here.
 */
typedef enum cgen_dialect {
    CGEN_DIALECT_C,    /* C99 for the system compiler: kernels take (b, begin, end) */
    CGEN_DIALECT_CUDA, /* CUDA C for NVRTC: kernels take their buffers and the item count */
} cgen_dialect;

/* The dialect of a backend's source_language (NULL: C); false when there is none. */
bool cgen_dialect_named(const char *language, cgen_dialect *dialect);

/* CUDA: kernel i is instead
 *
 *     extern "C" __global__ void kiln_k<i>(const T *in0, ..., U *out0, ..., int64_t items);
 *
 * launched with CGEN_CUDA_THREADS threads per block and any number of blocks (they take
 * items in a grid-stride loop); its items are the dialect's own (cgen_kernel.items). A
 * split reduction (cgen_kernel.parts > 0: one to a few values split up to KN_CUDA_PARTS
 * ways in all, or a column reduction of few items split over its rows) also has
 *
 *     extern "C" __global__ void kiln_k<i>_part(<the same buffers>, unsigned char *part,
 *                                               int64_t items);
 *     extern "C" __device__ const int64_t kiln_k<i>_parts[2]; // {its items, part's bytes}
 *
 * the part kernel run first over kiln_k<i>_parts[0] items, and kiln_k<i> taking `part`
 * (kiln_k<i>_parts[1] bytes of scratch the two share) before its item count. */
#define CGEN_CUDA_THREADS KN_CUDA_BLOCK
/* Fewer elements than this with a reduction inside: a block per element, not a warp. */
#define CGEN_CUDA_WARP_MIN 4096
/* A column reduction of fewer items than this (blocks of 256 columns) is split over its
 * rows (schedule.c, cuda_column_split): then a block takes CGEN_CUDA_THREADS /
 * CGEN_CUDA_COL_LANES columns, CGEN_CUDA_COL_LANES threads a column, a part at least
 * CGEN_CUDA_COL_PART_ROWS rows. */
#define CGEN_CUDA_COL_SPLIT_ITEMS 128
#define CGEN_CUDA_COL_LANES       8
#define CGEN_CUDA_COL_PART_ROWS   (2 * CGEN_CUDA_COL_LANES)
/* A reduction to few values split over blocks: at least this many iterations a block. */
#define CGEN_CUDA_PART_WORK 4096

typedef struct cgen_kernel {
    int64_t items; /* work items of the kernel (0: nothing to do) */
    int64_t grain; /* items per parallel chunk worth a thread */
    int64_t parts; /* > 0: a reduction split into this many parts per element (kiln_k<i>_part) */
} cgen_kernel;

/* Appends the program's source in `dialect` to sb; fills info[k] for every kernel (DOT and
 * SCATTER kernels get items = 0 and no function). */
kiln_status cgen_program_dialect(const kiln_graph *g, const fusion_plan *p, cgen_dialect dialect,
                                 strbuf *sb, cgen_kernel *info);
/* The same program with only the LOOP kernels i where only[i] (all: NULL), each printed
 * as in the whole program's source, after the same prelude; info[k] is filled for those
 * (the others get items = 0). Tiered compilation compiles the kernels tier 1 cannot run
 * with their bits this way (src/runtime/tier.c). */
kiln_status cgen_program_kernels(const kiln_graph *g, const fusion_plan *p, cgen_dialect dialect,
                                 const bool *only, strbuf *sb, cgen_kernel *info);
/* The C dialect (the CPU's). */
kiln_status cgen_program(const kiln_graph *g, const fusion_plan *p, strbuf *sb, cgen_kernel *info);
/* The C type of a dtype ("float", "int32_t", ...). */
const char *cgen_ctype(kiln_dtype t);

#endif
