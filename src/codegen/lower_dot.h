/* lower_dot.h — lowering a dot_general onto a backend's batched gemm (backend_impl.h).
 *
 * The compiler decides every layout here, so a backend only executes a descriptor: each
 * operand is read where it lies as a strided matrix (row stride lda/ldb, transposed or
 * not, batch axes at their own strides) whenever its free and contracting axes each
 * flatten into one strided axis with one of the two unit-stride; otherwise it is permuted
 * ("packed") into scratch first, [batch, M, K] / [batch, K, N] and contiguous. The
 * scratch holds the packed lhs at 0 and the packed rhs at rhs_offset. */
#ifndef KILN_LOWER_DOT_H
#define KILN_LOWER_DOT_H

#include "backend/backend_impl.h"
#include "ir/ir.h"

typedef struct lower_dot {
    kn_gemm_desc gemm;
    bool pack_a, pack_b;                              /* permute the operand into scratch first */
    int perm_a[KILN_MAX_RANK], perm_b[KILN_MAX_RANK]; /* the permutations, when packed */
    uint64_t rhs_offset; /* where the packed rhs starts in the scratch */
    uint64_t scratch;    /* bytes of scratch the kernel needs (0: none): packing, then gemm's */
    /* the gemm's own scratch (the backend's lib_scratch: a GPU's pointer arrays), set by
     * kiln_compile after lowering: gemm_scratch bytes at gemm_offset in the scratch */
    uint64_t gemm_offset, gemm_scratch;
} lower_dot;

/* Lowers dot_general node id of g (operands in row-major buffers of their own shapes). */
void lower_dot_plan(const kiln_graph *g, uint32_t id, lower_dot *out);

#endif
