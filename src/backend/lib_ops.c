/* lib_ops.c — what every backend and the executable agree on about the library ops
 * (backend_impl.h, kn_lib_op): their names in messages and how many buffers lib_run takes.
 * The table is indexed by kn_lib_op: a new op added last without an entry fails the
 * static assert below, one inserted before the last leaves a hole, which
 * tests/test_backend.c's test_lib_op_table finds (every op named, with buffers). */
#include "backend_impl.h"

static const struct {
    const char *name;
    int buffers;
} lib_ops[] = {
    [KN_LIB_GEMM] = {"gemm", 4},
    [KN_LIB_PERMUTE] = {"permute", 2},
    [KN_LIB_SCATTER_ADD_ROWS] = {"scatter_add_rows", 5},
    [KN_LIB_CUMSUM] = {"cumsum", 2},
    [KN_LIB_ATTENTION] = {"attention", 6},
    [KN_LIB_ARGSORT] = {"argsort", 3},
    [KN_LIB_CONV] = {"conv", 4},
    [KN_LIB_ATTENTION_GRAD] = {"attention_grad", 8},
    [KN_LIB_CHOLESKY] = {"cholesky", 2},
    [KN_LIB_TRIANGULAR_SOLVE] = {"triangular_solve", 3},
};
_Static_assert(sizeof lib_ops / sizeof lib_ops[0] == KN_LIB_NUM_OPS,
               "lib_ops.c: every kn_lib_op needs its name and buffer count");

const char *kn_lib_op_name(kn_lib_op op) {
    return (unsigned)op < KN_LIB_NUM_OPS && lib_ops[op].name ? lib_ops[op].name : "?";
}

int kn_lib_op_buffers(kn_lib_op op) {
    return (unsigned)op < KN_LIB_NUM_OPS ? lib_ops[op].buffers : 0;
}
