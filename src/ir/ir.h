/* ir.h — kiln's intermediate representation: the op table, nodes and graphs.
 *
 * One table (KN_OPS) describes every op once; the tracer, the verifier, the printer, the
 * reference interpreter and (later) autodiff, fusion and codegen all read it, so adding an
 * op starts here.
 *
 * Invariants of a graph (checked by ir_verify):
 *  - nodes are stored in a topological order: a node's inputs have smaller ids;
 *  - every node's dtype and shape are what ir_infer would compute from its inputs and
 *    attributes (infer.c: the tracer types each node with it, the verifier re-runs it);
 *  - node ids are 1-based (0 is "no value"), so kiln_value.id == node id.
 */
#ifndef KILN_IR_H
#define KILN_IR_H

#include "base/base.h"

/* Op kinds: how an op's shape and dtype follow from its inputs. */
typedef enum ir_kind {
    IRK_SOURCE,     /* parameter, constant, iota: no inputs */
    IRK_UNARY,      /* elementwise, one input, same shape */
    IRK_BINARY,     /* elementwise, two inputs of identical shape and dtype */
    IRK_SELECT,     /* elementwise, three inputs of one shape: select (pred + two values),
                     * random (the key's two words and a counter) */
    IRK_SHAPE,      /* moves elements: broadcast, reshape, transpose, slice, concat, pad */
    IRK_REDUCE,     /* reduce over a set of axes */
    IRK_DOT,        /* dot_general */
    IRK_INDEX,      /* take_rows, scatter_add_rows, dynamic_slice, dynamic_update_slice */
    IRK_SCAN,       /* cumsum: same type as its operand, prefix sums along one axis */
    IRK_ATTENTION,  /* dot_product_attention: q [.., T, N, H], k [.., S, K, H], v [.., S, K, Hv]
                     * -> [.., T, N, Hv]; or a part of its gradient (attn.kind) */
    IRK_COLLECTIVE, /* all_reduce: same type as its operand, values from every replica;
                     * reduce_scatter / all_gather: the leading axis / ranks, / x ranks */
    IRK_SORT,       /* argsort: i32 positions along one axis, k of them (a permutation when
                     * k is the axis' length) */
    IRK_CONTROL,    /* while, scan, cond: sub-graphs (the node's region) run by the node;
                     * several results: the node is its result 0, a RESULT node each other */
    IRK_RESULT,     /* result: result `index` (>= 1) of the control node that is its input */
    IRK_TRANSFER,   /* memory_put: its operand's bytes in another memory kind (a copy) */
    IRK_CONV,       /* convolution: the forward result, or one operand's gradient, of the
                     * convolution its attribute describes */
    IRK_LINALG,     /* cholesky, triangular_solve: over the last two axes, a batch before */
} ir_kind;

/* Operand dtype classes an op accepts. */
enum {
    IRT_ANY = 0,      /* every dtype */
    IRT_NUMERIC = 1,  /* f32 f64 bf16 f16 i32 i64 */
    IRT_FLOAT = 2,    /* f32 f64 bf16 f16 */
    IRT_BOOL = 3,     /* bool */
    IRT_I32 = 4,      /* i32 (random's key words and counter: uint32 bit patterns) */
    IRT_INTEGRAL = 5, /* i32 i64 bool: the bitwise ops */
    IRT_INT = 6,      /* i32 i64: shifts and bit counts */
};

/* Flags. ELEMENTWISE ops can be fused as loops; EXPENSIVE ones are never duplicated into
 * several consumers; NONDIFF ops have a zero derivative everywhere it exists (compare,
 * floor, sign, boolean ops, sources other than parameters, integer paths): autodiff gives
 * them no rule and passes them a zero cotangent. PLAIN ops have a public builder of the
 * form kiln_<ident>(g, operands...) generated from their row (src/trace/trace.c). */
#define IRF_ELEMENTWISE 1u
#define IRF_EXPENSIVE   2u
#define IRF_NONDIFF     4u
#define IRF_PLAIN       8u

/* The op registry. Each op is one row; every stage reads its facts from here:
 *
 *   X(ENUM, "name", ident, arity, kind, types, flags, cost, kexpr_float, kexpr_int)
 *
 * name      the printed name (IR text, messages)
 * ident     a C identifier for the op: the public builder of a PLAIN op is kiln_<ident>
 * arity     number of inputs (-1: variadic)
 * kind      how shape and dtype follow from the inputs (ir_kind)
 * types     which dtypes the data operand accepts (IRT_*)
 * flags     IRF_*
 * cost      fusion's price of computing one element inline (a transcendental ~4, an add 1,
 *           an index-only shape op 0): expressions above a threshold are not duplicated
 * kexpr_*   the kernel expression of an elementwise op when its data operand is a float,
 *           or an integer/bool (NULL: that class is not accepted, or not elementwise). It is
 *           dialect-neutral: every kernel printer (C now, CUDA next) expands the same text,
 *           and each dialect's prelude defines the kiln_* helpers it names. Placeholders:
 *             $0 $1 $2  operands          $T  the result's element type
 *             $U  the unsigned type of the operand's width (wrapping integer arithmetic)
 *             $S  the operand's dtype suffix (f32 f64 i32 i64 bool)   $R  the result's
 *             $F  the libm suffix for the operand ("f" for f32)        $C  compare operator
 *             $D  what RANDOM draws (ir_rng_name of the node's attribute)
 *             $H  the suffix of the dtype the node stores ($R but for a 16-bit result,
 *                 which a kernel computes in f32: bf16 or f16 there, not f32)
 *
 * Two more parts of each op live in the room that owns them, in tables indexed by op and
 * checked for completeness by tests/test_registry.c: its reference evaluation
 * (src/reference, ref_op_eval) and its VJP rule (src/autodiff, filled by the autodiff work;
 * IRF_NONDIFF marks the ops that need none). Adding a plain unary op is one row in
 * KN_UNARY_OPS, its scalar semantics in src/reference/elementwise.c and its declaration +
 * location macro in include/kiln.h (the registry test checks all of them). */

/* Plain elementwise unary ops (public builder kiln_<ident>(g, x)). */
// clang-format off
#define KN_UNARY_OPS(X)                                                                            \
    X(NEG, "neg", neg, 1, IRK_UNARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 1,                  \
      "(-$0)", "(($T)(0 - ($U)$0))")                                                               \
    X(ABS, "abs", abs, 1, IRK_UNARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 1,                  \
      "fabs$F($0)", "($0 < 0 ? ($T)(0 - ($U)$0) : $0)")                                            \
    X(SIGN, "sign", sign, 1, IRK_UNARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, \
      "($0 > 0 ? ($T)1 : $0 < 0 ? ($T)-1 : $0)", "(($T)(($0 > 0) - ($0 < 0)))")                    \
    X(EXP, "exp", exp, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                    \
      "kiln_exp_$S($0)", NULL)                                                                     \
    X(LOG, "log", log, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                    \
      "kiln_log_$S($0)", NULL)                                                                     \
    X(LOG1P, "log1p", log1p, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,              \
      "kiln_log1p_$S($0)", NULL)                                                                   \
    X(SQRT, "sqrt", sqrt, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "sqrt$F($0)", NULL)                                                                          \
    X(RSQRT, "rsqrt", rsqrt, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,              \
      "(($T)1 / sqrt$F($0))", NULL)                                                                \
    X(TANH, "tanh", tanh, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "kiln_tanh_$S($0)", NULL)                                                                    \
    X(LOGISTIC, "logistic", logistic, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,     \
      "kiln_logistic_$S($0)", NULL)                                                                \
    X(SIN, "sin", sin, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                    \
      "kiln_sin_$S($0)", NULL)                                                                           \
    X(COS, "cos", cos, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                    \
      "kiln_cos_$S($0)", NULL)                                                                           \
    X(ERF, "erf", erf, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                    \
      "kiln_erf_$S($0)", NULL)                                                                     \
    X(FLOOR, "floor", floor, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1,\
      "floor$F($0)", NULL)                                                                         \
    /* JAX's other float functions (jnp.expm1 ... lax.digamma): libm's (CUDA's) in the        \
     * kernels, or kiln's own: f32 expm1, sinh, cosh, asinh, acosh, atanh (math_f32.h,        \
     * vectorised), f32 erfc on the CPU (c_math.h), erf_inv and digamma (math_f64.h) */     \
    X(EXPM1, "expm1", expm1, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,              \
      "kiln_expm1_$S($0)", NULL)                                                                   \
    X(TAN, "tan", tan, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                    \
      "tan$F($0)", NULL)                                                                           \
    X(SINH, "sinh", sinh, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "kiln_sinh_$S($0)", NULL)                                                                    \
    X(COSH, "cosh", cosh, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "kiln_cosh_$S($0)", NULL)                                                                    \
    X(ASIN, "asin", asin, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "asin$F($0)", NULL)                                                                          \
    X(ACOS, "acos", acos, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "acos$F($0)", NULL)                                                                          \
    X(ATAN, "atan", atan, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "atan$F($0)", NULL)                                                                          \
    X(ASINH, "asinh", asinh, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,              \
      "kiln_asinh_$S($0)", NULL)                                                                   \
    X(ACOSH, "acosh", acosh, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,              \
      "kiln_acosh_$S($0)", NULL)                                                                   \
    X(ATANH, "atanh", atanh, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,              \
      "kiln_atanh_$S($0)", NULL)                                                                   \
    X(ERFC, "erfc", erfc, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "kiln_erfc_$S($0)", NULL)                                                                          \
    X(ERF_INV, "erf_inv", erf_inv, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,        \
      "kiln_erf_inv_$S($0)", NULL)                                                                 \
    X(LGAMMA, "lgamma", lgamma, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 8,           \
      "kiln_lgamma_$S($0)", NULL)                                                                  \
    X(DIGAMMA, "digamma", digamma, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 8,        \
      "kiln_digamma_$S($0)", NULL)                                                                 \
    X(CBRT, "cbrt", cbrt, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "cbrt$F($0)", NULL)                                                                          \
    X(CEIL, "ceil", ceil, 1, IRK_UNARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1,   \
      "ceil$F($0)", NULL)                                                                          \
    /* jnp.round: halves to even (rint in the default rounding mode, which kiln never sets) */  \
    X(ROUND, "round_nearest_even", round, 1, IRK_UNARY, IRT_FLOAT,                                 \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, "rint$F($0)", NULL)                            \
    /* jax.lax.round's default: halves away from zero */                                         \
    X(ROUND_AFZ, "round_nearest_afz", round_half_away, 1, IRK_UNARY, IRT_FLOAT,               \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, "round$F($0)", NULL)                           \
    X(NOT, "not", logical_not, 1, IRK_UNARY, IRT_BOOL, IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF,  \
      1, NULL, "(($T)!$0)")                                                                        \
    /* jax.lax.population_count and clz: set bits, and zero bits above the highest set one   \
     * (the width for 0), of the two's complement pattern */                                  \
    X(POPCNT, "popcnt", population_count, 1, IRK_UNARY, IRT_INT,                                   \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, NULL, "kiln_popcnt_$S($0)")                    \
    X(CLZ, "count_leading_zeros", clz, 1, IRK_UNARY, IRT_INT,                                      \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, NULL, "kiln_clz_$S($0)")                       \
    X(STOP_GRADIENT, "stop_gradient", stop_gradient, 1, IRK_UNARY, IRT_ANY,                        \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 0, "$0", "$0")

/* Plain elementwise binary ops (public builder kiln_<ident>(g, a, b), NumPy broadcasting). */
#define KN_BINARY_OPS(X)                                                                           \
    X(ADD, "add", add, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 1,                 \
      "($0 + $1)", "(($T)(($U)$0 + ($U)$1))")                                                      \
    X(SUB, "sub", sub, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 1,                 \
      "($0 - $1)", "(($T)(($U)$0 - ($U)$1))")                                                      \
    X(MUL, "mul", mul, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 1,                 \
      "($0 * $1)", "(($T)(($U)$0 * ($U)$1))")                                                      \
    X(DIV, "div", div, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "($0 / $1)", "kiln_div_$S($0, $1)")                                                          \
    X(POW, "pow", pow, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "pow$F($0, $1)", "kiln_pow_$S($0, $1)")                                                      \
    X(MAX, "max", max, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 1,                 \
      "kiln_max_$S($0, $1)", "kiln_max_$S($0, $1)")                                                \
    X(MIN, "min", min, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 1,                 \
      "kiln_min_$S($0, $1)", "kiln_min_$S($0, $1)")                                                \
    /* bitwise on integers, logical on bools (StableHLO's and / or / xor; kiln_logical_and   \
     * and kiln_logical_or are these ops, refusing anything but bool) */                       \
    X(AND, "and", bitwise_and, 2, IRK_BINARY, IRT_INTEGRAL,                                        \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, NULL, "(($T)($0 & $1))")                       \
    X(OR, "or", bitwise_or, 2, IRK_BINARY, IRT_INTEGRAL, IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, \
      1, NULL, "(($T)($0 | $1))")                                                                  \
    X(XOR, "xor", bitwise_xor, 2, IRK_BINARY, IRT_INTEGRAL,                                        \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, NULL, "(($T)($0 ^ $1))")                       \
    /* shifts as XLA's: an amount outside [0, width) gives 0, or the sign for the arithmetic   \
     * right shift; the logical one shifts the unsigned pattern */                            \
    X(SHL, "shift_left", shift_left, 2, IRK_BINARY, IRT_INT,                                       \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, NULL, "kiln_shl_$S($0, $1)")                   \
    X(SHR_LOGICAL, "shift_right_logical", shift_right_logical, 2, IRK_BINARY, IRT_INT,             \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, NULL, "kiln_shrl_$S($0, $1)")                  \
    X(SHR_ARITH, "shift_right_arithmetic", shift_right_arithmetic, 2, IRK_BINARY, IRT_INT,         \
      IRF_ELEMENTWISE | IRF_PLAIN | IRF_NONDIFF, 1, NULL, "kiln_shra_$S($0, $1)")                  \
    /* jax.lax.rem: the remainder of truncated division, with the dividend's sign; exact for \
     * floats (C's fmod); for integers x % 0 is x and INT_MIN % -1 is 0, as in XLA */           \
    X(REM, "rem", rem, 2, IRK_BINARY, IRT_NUMERIC, IRF_ELEMENTWISE | IRF_PLAIN, 4,                 \
      "fmod$F($0, $1)", "kiln_rem_$S($0, $1)")                                                    \
    /* jax.lax.atan2(y, x): the angle of the point (x, y), in [-pi, pi] */                        \
    X(ATAN2, "atan2", atan2, 2, IRK_BINARY, IRT_FLOAT, IRF_ELEMENTWISE | IRF_PLAIN, 4,             \
      "atan2$F($0, $1)", NULL)

/* Structural ops whose public builder kiln_<ident>(g, x, n_axes, axes) is generated from
 * their row (src/trace/shape_ops.c): the axes (negative ones count from the end; NULL: all
 * of them) become the op's one attribute, an IRA_AXES set. Shape inference, the builder's
 * checks, the text form and CSE all follow from the row and its attribute declaration. */
#define KN_AXES_OPS(X)                                                                             \
    /* reverses the order of the elements along each axis of the set (jax.lax.rev) */             \
    X(REV, "rev", rev, 1, IRK_SHAPE, IRT_ANY, 0, 0, NULL, NULL)

/* Sorting (src/trace/sort.c, docs/ops.md "sort"): ARGSORT(x) is the positions along
 * attribute sort.axis that sort x's rows stably (ties keep their order), the first sort.k
 * of them: every one of them for jnp.argsort, the largest k for lax.top_k. A library kernel
 * of the backend; kiln_sort and kiln_top_k gather their values with take_along_axis. */
#define KN_SORT_OPS(X)                                                                             \
    X(ARGSORT, "argsort", argsort, 1, IRK_SORT, IRT_ANY, IRF_EXPENSIVE | IRF_NONDIFF, 1, NULL,     \
      NULL)

/* General gather and scatter with XLA's dimension numbers (src/trace/gather.c, docs/ops.md
 * "gather and scatter"): GATHER(operand, indices), SCATTER(operand, indices, updates); the
 * index vector is indices' last axis. Attribute gs holds the dimension numbers per operand
 * axis. No backend runs them as they are: src/passes/expand.c rewrites them into take_rows,
 * scatter_add_rows and fused loops before fusion; the reference evaluates them directly. */
#define KN_GATHER_OPS(X)                                                                           \
    X(GATHER, "gather", gather, 2, IRK_INDEX, IRT_ANY, IRF_EXPENSIVE, 1, NULL, NULL)               \
    X(SCATTER, "scatter", scatter, 3, IRK_INDEX, IRT_ANY, IRF_EXPENSIVE, 1, NULL, NULL)

/* Convolutions (src/trace/conv.c, docs/ops.md "convolutions"): CONV(a, b) is, by attribute
 * conv.kind, the convolution of lhs a and kernel b (jax.lax.conv_general_dilated), or the
 * gradient of its lhs from (cotangent a, kernel b), or of its kernel from (lhs a, cotangent
 * b): cuDNN's forward, backward-data and backward-filter, one geometry for all three, so
 * each kind's gradients are convolutions of the other kinds. A backend with a convolution
 * kernel (KN_LIB_CONV) runs the node; src/passes/expand.c rewrites it into its primitive
 * form (im2col slices and a product) everywhere else; the reference evaluates it
 * directly. */
#define KN_CONV_OPS(X)                                                                             \
    X(CONV, "convolution", conv_general_dilated, 2, IRK_CONV, IRT_NUMERIC, IRF_EXPENSIVE, 1, NULL, \
      NULL)

/* Linear algebra (src/trace/linalg.c, docs/ops.md "Linear algebra"), over the last two axes
 * with any batch axes before them, f32 and f64. CHOLESKY(a) is the lower factor L of
 * a = L L^T read from a's lower triangle (LAPACK's potrf; its upper triangle zeros), the
 * lower triangle NaN for a matrix that is not positive definite: jax.lax.linalg.cholesky,
 * of (a + a^T) / 2 with attribute `symmetrize` (its symmetrize_input; the kernel reads both
 * triangles in one pass of its own, where a fused loop's transposed read is slow).
 * TRIANGULAR_SOLVE(a, b) is x with op(a) x = b (attribute tri.left_side)
 * or x op(a) = b, op(a) = a or a^T, reading a's lower or upper triangle and its diagonal
 * unless unit (jax.lax.linalg.triangular_solve; LAPACK's trsm). A backend's library
 * kernel runs each (the CPU's: OpenBLAS's LAPACK); src/passes/expand.c rewrites them into
 * a loop over rows elsewhere; the reference evaluates them directly. */
#define KN_LINALG_OPS(X)                                                                           \
    X(CHOLESKY, "cholesky", cholesky, 1, IRK_LINALG, IRT_FLOAT, IRF_EXPENSIVE, 1, NULL, NULL)      \
    X(TRIANGULAR_SOLVE, "triangular_solve", triangular_solve, 2, IRK_LINALG, IRT_FLOAT,            \
      IRF_EXPENSIVE, 1, NULL, NULL)

/* Random numbers (src/trace/random.c, docs/random.md): RANDOM(k0, k1, c) is Threefry-2x32
 * (20 rounds) of the key (k0, k1) on the counter (0, c), all uint32 bit patterns in i32,
 * reduced to what the attribute `rng` (ir_rng) asks for. It is elementwise in the counter,
 * so a generator fuses into its consumer. Kept last, in one block, so that rows other
 * engineers add above do not collide with it. */
#define KN_RANDOM_OPS(X)                                                                           \
    X(RANDOM, "random", random, 3, IRK_SELECT, IRT_I32, IRF_ELEMENTWISE | IRF_NONDIFF, 16, NULL,   \
      "kiln_random_$D_$H($0, $1, $2)")

/* Memory kinds (src/trace/memory.c, docs/memory.md "Host offload"): MEMORY_PUT(x) is x in
 * the memory kind of attribute memory_kind (kiln_memory_kind): a copy kernel of its own
 * (jax.device_put to a memory kind). A value in host memory is read by nothing but a
 * memory_put back (ir_verify); the planner gives it a place in the host arena. */
#define KN_MEMORY_OPS(X)                                                                           \
    X(MEMORY_PUT, "memory_put", memory_put, 1, IRK_TRANSFER, IRT_ANY, IRF_EXPENSIVE, 1, NULL, NULL)

#define KN_OPS(X)                                                                                  \
    X(PARAMETER, "parameter", parameter, 0, IRK_SOURCE, IRT_ANY, 0, 1, NULL, NULL)                 \
    X(CONSTANT, "constant", constant, 0, IRK_SOURCE, IRT_ANY, IRF_NONDIFF, 1, NULL, NULL)          \
    X(IOTA, "iota", iota, 0, IRK_SOURCE, IRT_NUMERIC, IRF_NONDIFF, 1, NULL, NULL)                  \
    KN_UNARY_OPS(X)                                                                                \
    X(CONVERT, "convert", convert, 1, IRK_UNARY, IRT_ANY, IRF_ELEMENTWISE, 0,                      \
      "kiln_cvt_$S_$R($0)", "kiln_cvt_$S_$R($0)")                                                  \
    /* the same bits read as another dtype of their width (jax.lax.bitcast_convert_type):     \
     * f32 <-> i32, f64 <-> i64 (src/trace/bits.c) */                                           \
    X(BITCAST, "bitcast_convert", bitcast_convert, 1, IRK_UNARY, IRT_ANY,                          \
      IRF_ELEMENTWISE | IRF_NONDIFF, 0, "kiln_bitcast_$S_$R($0)", "kiln_bitcast_$S_$R($0)")        \
    KN_BINARY_OPS(X)                                                                               \
    X(COMPARE, "compare", compare, 2, IRK_BINARY, IRT_ANY, IRF_ELEMENTWISE | IRF_NONDIFF, 1,       \
      "(($T)($0 $C $1))", "(($T)($0 $C $1))")                                                      \
    X(SELECT, "select", select, 3, IRK_SELECT, IRT_ANY, IRF_ELEMENTWISE, 1,                        \
      "($0 ? $1 : $2)", "($0 ? $1 : $2)")                                                          \
    X(BROADCAST, "broadcast_in_dim", broadcast_in_dim, 1, IRK_SHAPE, IRT_ANY, 0, 0, NULL, NULL)    \
    X(RESHAPE, "reshape", reshape, 1, IRK_SHAPE, IRT_ANY, 0, 0, NULL, NULL)                        \
    X(TRANSPOSE, "transpose", transpose, 1, IRK_SHAPE, IRT_ANY, 0, 0, NULL, NULL)                  \
    X(SLICE, "slice", slice, 1, IRK_SHAPE, IRT_ANY, 0, 0, NULL, NULL)                              \
    X(CONCAT, "concatenate", concatenate, -1, IRK_SHAPE, IRT_ANY, 0, 1, NULL, NULL)                \
    X(PAD, "pad", pad, 2, IRK_SHAPE, IRT_ANY, 0, 1, NULL, NULL)                                    \
    KN_AXES_OPS(X)                                                                                 \
    X(REDUCE_SUM, "reduce_sum", reduce_sum, 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE, 1,          \
      NULL, NULL)                                                                                  \
    X(REDUCE_MAX, "reduce_max", reduce_max, 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE, 1,          \
      NULL, NULL)                                                                                  \
    X(REDUCE_MIN, "reduce_min", reduce_min, 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE, 1,          \
      NULL, NULL)                                                                                  \
    X(REDUCE_PROD, "reduce_prod", reduce_prod, 1, IRK_REDUCE, IRT_NUMERIC, IRF_EXPENSIVE, 1,       \
      NULL, NULL)                                                                                  \
    X(DOT, "dot_general", dot_general, 2, IRK_DOT, IRT_NUMERIC, IRF_EXPENSIVE, 1, NULL, NULL)      \
    X(TAKE_ROWS, "take_rows", take_rows, 2, IRK_INDEX, IRT_ANY, IRF_EXPENSIVE, 1, NULL, NULL)      \
    X(SCATTER_ADD_ROWS, "scatter_add_rows", scatter_add_rows, 3, IRK_INDEX, IRT_NUMERIC,           \
      IRF_EXPENSIVE, 1, NULL, NULL)                                                                \
    /* x[start + i] for i < sizes, the starts traced rank-0 integers (operands 1..rank),         \
     * clamped into [0, dim - size] as XLA clamps them (jax.lax.dynamic_slice) */                \
    X(DYNAMIC_SLICE, "dynamic_slice", dynamic_slice, -1, IRK_INDEX, IRT_ANY, 0, 1, NULL, NULL)     \
    /* x with update written at the clamped starts (operands 2..rank + 1)                      \
     * (jax.lax.dynamic_update_slice) */                                                        \
    X(DYNAMIC_UPDATE_SLICE, "dynamic_update_slice", dynamic_update_slice, -1, IRK_INDEX, IRT_ANY,  \
      0, 1, NULL, NULL)                                                                            \
    /* prefix sums along attribute scan.axis (src/trace/index_ops.c): a library kernel */       \
    X(CUMSUM, "cumsum", cumsum, 1, IRK_SCAN, IRT_NUMERIC, IRF_EXPENSIVE, 1, NULL, NULL)            \
    /* softmax(scale q k^T, causal mask) v over heads, or a part of its gradient           \
     * (attn.kind; src/trace/attention.c): a library kernel, or its primitive form on a     \
     * backend without one (src/passes/expand.c) */                                         \
    X(ATTENTION, "dot_product_attention", dot_product_attention, -1, IRK_ATTENTION, IRT_FLOAT,     \
      IRF_EXPENSIVE, 1, NULL, NULL)                                                                \
    KN_SORT_OPS(X)                                                                                 \
    KN_GATHER_OPS(X)                                                                               \
    KN_CONV_OPS(X)                                                                                 \
    KN_LINALG_OPS(X)                                                                               \
    KN_RANDOM_OPS(X)                                                                               \
    /* control flow (src/trace/control.c, docs/control_flow.md): the node's region holds the   \
     * sub-graphs it runs; inputs and results are laid out as ir_control describes */          \
    X(WHILE, "while", while_loop, -1, IRK_CONTROL, IRT_ANY, IRF_EXPENSIVE, 1, NULL, NULL)          \
    X(SCAN, "scan", scan, -1, IRK_CONTROL, IRT_ANY, IRF_EXPENSIVE, 1, NULL, NULL)                  \
    X(COND, "cond", cond, -1, IRK_CONTROL, IRT_ANY, IRF_EXPENSIVE, 1, NULL, NULL)                  \
    X(RESULT, "result", result, 1, IRK_RESULT, IRT_ANY, 0, 0, NULL, NULL)                          \
    /* collectives (src/comm): a step of their own, run by the executable's communicator */     \
    X(ALL_REDUCE, "all_reduce", all_reduce, 1, IRK_COLLECTIVE, IRT_NUMERIC, IRF_EXPENSIVE, 1,      \
      NULL, NULL)                                                                                  \
    /* ZeRO's pair: the leading axis cut into `ranks` shards / the shards concatenated */        \
    X(REDUCE_SCATTER, "reduce_scatter", reduce_scatter, 1, IRK_COLLECTIVE, IRT_NUMERIC,            \
      IRF_EXPENSIVE, 1, NULL, NULL)                                                                \
    X(ALL_GATHER, "all_gather", all_gather, 1, IRK_COLLECTIVE, IRT_ANY, IRF_EXPENSIVE, 1, NULL,    \
      NULL)                                                                                        \
    KN_MEMORY_OPS(X)
// clang-format on

typedef enum ir_op {
#define KN_OP_ENUM(e, name, ident, arity, kind, types, flags, cost, kf, ki) IR_##e,
    KN_OPS(KN_OP_ENUM)
#undef KN_OP_ENUM
        IR_NUM_OPS
} ir_op;

typedef struct ir_op_info {
    const char *name;
    const char *ident; /* the public builder is kiln_<ident> (messages of a loaded graph) */
    int arity;
    ir_kind kind;
    int types; /* IRT_*: what the first operand (the "data" operand) may be */
    unsigned flags;
    int cost;             /* fusion's inline cost of one element */
    const char *kexpr[2]; /* kernel expression: [0] float data operand, [1] integer or bool */
} ir_op_info;

extern const ir_op_info ir_ops[IR_NUM_OPS];

/* The largest extent of a shape (the product of its dimensions, zeros counted as 1) and so
 * of any dimension: 2^62, so that sums and differences of indices and extents, and strides
 * of shapes with a zero dimension, never overflow int64. */
#define IR_DIM_MAX ((int64_t)1 << 62)

typedef struct ir_shape {
    int rank;
    int64_t dims[KILN_MAX_RANK];
} ir_shape;

/* What RANDOM draws from its two Threefry output words (x0, x1). The uniform and normal
 * forms follow jax.random: the result dtype (a float) is the node's. */
typedef enum ir_rng {
    IR_RNG_BITS,    /* i32: x0 ^ x1 (jax.random.bits, 32-bit) */
    IR_RNG_WORD0,   /* i32: x0 (the first word of a split or folded key) */
    IR_RNG_WORD1,   /* i32: x1 (its second word) */
    IR_RNG_UNIFORM, /* f32: mantissa of x0 ^ x1 in [0, 1); f64: of x0:x1 */
    IR_RNG_NORMAL,  /* sqrt(2) erfinv(uniform on (-1, 1)), as jax.random.normal */
    IR_RNG_COUNT
} ir_rng;

/* "bits", "word0", ...: the printed attribute and the kernel helper's name; NULL when
 * out of range. */
static inline const char *ir_rng_name(int r) {
    static const char *const names[IR_RNG_COUNT] = {"bits", "word0", "word1", "uniform", "normal"};
    return r >= 0 && r < IR_RNG_COUNT ? names[r] : NULL;
}

/* Attributes, by op. */
typedef union ir_attrs {
    struct {
        int param_index;       /* PARAMETER: its number */
        int param_memory_kind; /* PARAMETER: kiln_memory_kind of the argument's bytes */
    };
    int axis;                      /* IOTA, CONCAT */
    kiln_cmp cmp;                  /* COMPARE */
    int bcast_dims[KILN_MAX_RANK]; /* BROADCAST: output axis of each operand axis */
    int perm[KILN_MAX_RANK];       /* TRANSPOSE */
    struct {
        int64_t start[KILN_MAX_RANK], limit[KILN_MAX_RANK], stride[KILN_MAX_RANK];
    } slice; /* SLICE */
    struct {
        int64_t lo[KILN_MAX_RANK], hi[KILN_MAX_RANK], interior[KILN_MAX_RANK];
    } pad;                            /* PAD (inputs: operand, rank-0 pad value) */
    uint32_t reduce_axes;             /* REDUCE_*: bit i set = axis i reduced (not kept) */
    uint32_t rev_axes;                /* REV: bit i set = axis i reversed */
    int64_t dyn_sizes[KILN_MAX_RANK]; /* DYNAMIC_SLICE: the slice's static sizes */
    kiln_dot_dims dot;                /* DOT */
    int rng;                          /* RANDOM: ir_rng */
    int reduce_kind;                  /* ALL_REDUCE: kiln_reduce_kind */
    int memory_kind;                  /* MEMORY_PUT: kiln_memory_kind */
    struct {
        int kind;  /* REDUCE_SCATTER: kiln_reduce_kind (SUM or MEAN) */
        int ranks; /* the group's size, which the compiled program's communicator must have */
    } shard;       /* REDUCE_SCATTER, ALL_GATHER */
    struct {
        int axis;     /* the summed axis */
        bool reverse; /* sums over k >= j instead of k <= j */
    } scan;           /* CUMSUM */
    struct {
        int axis;        /* the sorted axis */
        int k;           /* how many positions: the axis' length, or top_k's k */
        bool descending; /* largest first (ties still in their order) */
        bool total;      /* lax.top_k's order: -NaN < -inf < -0 < +0 < +inf < +NaN; else
                          * lax.sort's: -0 == +0, every NaN after +inf and equal */
    } sort;              /* ARGSORT */
    struct {
        double scale; /* multiplies q k^T before the softmax */
        bool causal;  /* query i sees keys j <= i only */
        double fill;  /* with causal: the score of a key j > i. -inf (what the public
                       * builder sets) leaves it out; a finite value is what a written-out
                       * attention put there (select(mask, s, -1e30)) and the op recognised
                       * from it (src/passes/attention.c) keeps that meaning exactly */
        int kind;     /* ir_attn_kind: the forward pass, or which part of its gradient */
    } attn;           /* ATTENTION */
    struct {
        int n_carry;  /* WHILE, SCAN: carried values; COND: operands passed to a branch */
        int n_xs;     /* SCAN: arrays scanned over their leading axis */
        int length;   /* SCAN: iterations */
        bool reverse; /* SCAN: from the last slice to the first (lax.scan reverse=True) */
        /* SCAN: its VJP recomputes the body per iteration rather than saving its
         * residuals (kiln_scan_options.checkpoint_body) */
        bool checkpoint;
    } ctl;            /* WHILE, SCAN, COND */
    int result_index; /* RESULT */
    /* GATHER, SCATTER: XLA's dimension numbers, one entry per operand axis a. window[a]:
     * the output (gather) or updates (scatter) axis holding a's window, increasing with a;
     * -1 for a collapsed (inserted) or batching axis. index[a]: the position in the index
     * vector of a's start, -1 for none (start_index_map / scatter_dims_to_operand_dims
     * inverted). batch[a]: the indices axis paired with batching axis a, -1 for none. */
    struct {
        int window[KILN_MAX_RANK], index[KILN_MAX_RANK], batch[KILN_MAX_RANK];
        int64_t sizes[KILN_MAX_RANK]; /* GATHER: slice_sizes */
        int mode;                     /* kiln_gather_mode: CLIP or FILL */
        int kind;                     /* SCATTER: kiln_scatter_kind */
        double fill;                  /* GATHER: what a FILL window reads */
    } gs;
    /* SCATTER_ADD_ROWS: how an update row combines into its target row, in update order;
     * none set: adds. At most one is set, and only by the expansion of SCATTER's MUL, MIN
     * and MAX (src/trace/gather.c), after autodiff and batching: their rules refuse it. */
    struct {
        bool mul, min, max;
    } rows;
    /* CONV: lax's ConvDimensionNumbers, each a permutation of the axes: lhs = {batch axis,
     * feature axis, spatial axes...} of the convolution's lhs, rhs = {output feature,
     * input feature, spatial...} of its kernel, out = {batch, feature, spatial...} of its
     * output. Per spatial axis d < S (rank - 2): the window stride, the padding lo and hi
     * (negative crops), the lhs (base) and rhs (window) dilations, and sizes[d] the
     * result's spatial extent: what a gradient cannot infer from its operands (the lhs's,
     * or the kernel's), the output's for the forward. groups: feature_group_count. */
    struct {
        int kind;                                                       /* ir_conv_kind */
        int lhs[KILN_MAX_RANK], rhs[KILN_MAX_RANK], out[KILN_MAX_RANK]; /* IRA_INTS' size */
        int64_t stride[KILN_CONV_MAX_SPATIAL], lo[KILN_CONV_MAX_SPATIAL], hi[KILN_CONV_MAX_SPATIAL],
            ld[KILN_CONV_MAX_SPATIAL], rd[KILN_CONV_MAX_SPATIAL], sizes[KILN_CONV_MAX_SPATIAL];
        int groups;
    } conv;
    bool symmetrize; /* CHOLESKY: factor (a + a^T) / 2, not a's lower triangle as it is */
    struct {
        bool left_side;     /* op(a) x = b; else x op(a) = b */
        bool lower;         /* a's lower triangle is read; else its upper */
        bool transpose_a;   /* op(a) = a^T; else a */
        bool unit_diagonal; /* a's diagonal is taken as ones and not read */
    } tri;                  /* TRIANGULAR_SOLVE */
} ir_attrs;

/* What an ATTENTION node computes (attribute attn.kind; src/trace/attention.c). With
 * s_ij = scale q_i . k_j over the keys query i sees, lse_i = log sum_j exp(s_ij),
 * p_ij = exp(s_ij - lse_i), dp_ij = ct_i . v_j and ds_ij = p_ij (dp_ij - delta_i):
 *   FORWARD  (q, k, v)                      out_i = sum_j p_ij v_j         [.., T, N, Hv]
 *   LSE      (q, k)                         lse_i                          [.., T, N]
 *   GRAD_Q   (q, k, v, ct, lse, delta)      scale sum_j ds_ij k_j          q's type
 *   GRAD_K   (the same)                     scale sum_i ds_ij q_i          k's type
 *   GRAD_V   (the same)                     sum_i p_ij ct_i                v's type
 * (GRAD_K and GRAD_V also sum over the query heads that share key/value head). lse and
 * delta (rowsum(ct * out)) are [.., T, N] in the sum's type (ir_attn_sum_dtype: f32 for
 * f32, bf16 and f16; f64 for f64), ct the forward output's type. The gradient is these
 * nodes rather than its primitive form so that a backend can run each as one kernel that
 * never writes a [T, S] array (FlashAttention-2's backward pass). */
typedef enum ir_attn_kind {
    IR_ATTN_FORWARD,
    IR_ATTN_LSE,
    IR_ATTN_GRAD_Q,
    IR_ATTN_GRAD_K,
    IR_ATTN_GRAD_V,
} ir_attn_kind;

/* What a CONV node computes (attribute conv.kind). */
typedef enum ir_conv_kind {
    IR_CONV_FORWARD,     /* conv(lhs, kernel) */
    IR_CONV_INPUT_GRAD,  /* the lhs's gradient from (cotangent, kernel) */
    IR_CONV_FILTER_GRAD, /* the kernel's gradient from (lhs, cotangent) */
} ir_conv_kind;

/* The attribute table: every attribute of every op, declared once. Printing (ir_print),
 * reading the text back (src/trace/load.c), the builders of KN_AXES_OPS, the verifier's
 * attribute checks, and CSE's equality and hash (src/passes/rewrite.c) are all derived
 * from it by attribute type (src/ir/attrs.c), so none of them has a switch over ops.
 *
 *   X(OP, type, "name", member, words)
 *
 * An op's attributes are written in the order of its rows, and flattened in that order
 * for equality and hashing; an op without rows has none (elementwise ops: the dtype says
 * what CONVERT does). `name` is the attribute's name in the text, or for an IRA_WORD what
 * the op needs ("compare needs a direction: eq, ..."); `words` gives an IRA_WORD's words
 * by value (NULL past the last). */
typedef enum ir_attr_type {
    IRA_PARAM,   /* int: a parameter's position, which the parameter line writes itself */
    IRA_INT,     /* int: " name=N" */
    IRA_WORD,    /* int: one of the words, written bare (" lt"); "?" when out of range */
    IRA_FLAG,    /* bool: a bare word, written when set (" reverse") */
    IRA_INTS,    /* int[rank of the first operand]: " name=[a,b]" */
    IRA_I64S,    /* int64_t[rank of the first operand]: " name=[a,b]" */
    IRA_AXES,    /* uint32_t, bit i = axis i of the first operand: " name=[i,j]" */
    IRA_REAL,    /* double: " name=X" (%.17g, exact); compared by its bits (-0.0 != 0.0) */
    IRA_FILL,    /* double, meaningful only while the flag declared just before it is set
                  * (else -inf), and written only then and when it is not -inf */
    IRA_DOT,     /* kiln_dot_dims: lhs_batch and rhs_batch (both left out when empty),
                  * lhs_contract, rhs_contract */
    IRA_SPATIAL, /* int64_t[rank of the first operand - 2]: " name=[a,b]", one per spatial
                  * axis of a convolution */
    IRA_KIND,    /* int: an IRA_WORD whose first word is the default, which is written (and
                  * read) as no word at all: an attribute added to an op that had none */
} ir_attr_type;

const char *ir_cmp_name(int cmp);          /* "eq" .. "ge", NULL out of range */
const char *ir_reduce_kind_name(int kind); /* "sum", "mean", "max", NULL out of range */
const char *ir_gather_mode_name(int mode); /* "fill", "clip", NULL out of range */
const char *ir_memory_kind_name(int kind); /* "device", "pinned_host", NULL out of range */

/* "set", "add", "mul", "min", "max" (kiln_scatter_kind), NULL out of range */
const char *ir_scatter_kind_name(int kind);
/* "forward", "input_grad", "filter_grad" (ir_conv_kind), NULL out of range */
const char *ir_conv_kind_name(int kind);
/* "forward", "lse", "grad_q", "grad_k", "grad_v" (ir_attn_kind), NULL out of range */
const char *ir_attn_kind_name(int kind);
/* The dtype an attention of operands t sums in, which LSE's result and delta have. */
kiln_dtype ir_attn_sum_dtype(kiln_dtype t);
/* The operands an attention of kind k reads (ir_attn_kind): 3, 2 for LSE, 6 for a gradient. */
uint32_t ir_attn_operands(int kind);

// clang-format off
#define KN_ATTRS(X)                                                                                \
    X(PARAMETER, IRA_PARAM, "index", param_index, NULL)                                            \
    X(PARAMETER, IRA_PARAM, "memory kind", param_memory_kind, NULL)                                \
    X(IOTA, IRA_INT, "axis", axis, NULL)                                                           \
    X(COMPARE, IRA_WORD, "a direction", cmp, ir_cmp_name)                                          \
    X(BROADCAST, IRA_INTS, "dims", bcast_dims, NULL)                                               \
    X(TRANSPOSE, IRA_INTS, "perm", perm, NULL)                                                     \
    X(SLICE, IRA_I64S, "start", slice.start, NULL)                                                 \
    X(SLICE, IRA_I64S, "limit", slice.limit, NULL)                                                 \
    X(SLICE, IRA_I64S, "stride", slice.stride, NULL)                                               \
    X(CONCAT, IRA_INT, "axis", axis, NULL)                                                         \
    X(PAD, IRA_I64S, "lo", pad.lo, NULL)                                                           \
    X(PAD, IRA_I64S, "hi", pad.hi, NULL)                                                           \
    X(PAD, IRA_I64S, "interior", pad.interior, NULL)                                               \
    X(REV, IRA_AXES, "axes", rev_axes, NULL)                                                       \
    X(REDUCE_SUM, IRA_AXES, "axes", reduce_axes, NULL)                                             \
    X(REDUCE_MAX, IRA_AXES, "axes", reduce_axes, NULL)                                             \
    X(REDUCE_MIN, IRA_AXES, "axes", reduce_axes, NULL)                                             \
    X(REDUCE_PROD, IRA_AXES, "axes", reduce_axes, NULL)                                            \
    X(DOT, IRA_DOT, "dims", dot, NULL)                                                             \
    X(DYNAMIC_SLICE, IRA_I64S, "sizes", dyn_sizes, NULL)                                           \
    X(CUMSUM, IRA_INT, "axis", scan.axis, NULL)                                                    \
    X(CUMSUM, IRA_FLAG, "reverse", scan.reverse, NULL)                                             \
    X(ARGSORT, IRA_INT, "axis", sort.axis, NULL)                                                   \
    X(ARGSORT, IRA_INT, "k", sort.k, NULL)                                                         \
    X(ARGSORT, IRA_FLAG, "descending", sort.descending, NULL)                                      \
    X(ARGSORT, IRA_FLAG, "total", sort.total, NULL)                                                \
    X(ATTENTION, IRA_REAL, "scale", attn.scale, NULL)                                              \
    X(ATTENTION, IRA_FLAG, "causal", attn.causal, NULL)                                            \
    X(ATTENTION, IRA_FILL, "fill", attn.fill, NULL)                                                \
    X(ATTENTION, IRA_KIND, "a kind", attn.kind, ir_attn_kind_name)                                 \
    X(RANDOM, IRA_WORD, "what it draws", rng, ir_rng_name)                                         \
    X(ALL_REDUCE, IRA_WORD, "a reduction", reduce_kind, ir_reduce_kind_name)                      \
    X(REDUCE_SCATTER, IRA_WORD, "a reduction", shard.kind, ir_reduce_kind_name)                   \
    X(REDUCE_SCATTER, IRA_INT, "ranks", shard.ranks, NULL)                                         \
    X(ALL_GATHER, IRA_INT, "ranks", shard.ranks, NULL)                                             \
    X(MEMORY_PUT, IRA_WORD, "a memory kind", memory_kind, ir_memory_kind_name)                     \
    X(WHILE, IRA_INT, "carries", ctl.n_carry, NULL)                                                \
    X(SCAN, IRA_INT, "carries", ctl.n_carry, NULL)                                                 \
    X(SCAN, IRA_INT, "xs", ctl.n_xs, NULL)                                                         \
    X(SCAN, IRA_INT, "length", ctl.length, NULL)                                                   \
    X(SCAN, IRA_FLAG, "reverse", ctl.reverse, NULL)                                                \
    X(SCAN, IRA_FLAG, "checkpoint", ctl.checkpoint, NULL)                                          \
    X(COND, IRA_INT, "operands", ctl.n_carry, NULL)                                                \
    X(RESULT, IRA_INT, "index", result_index, NULL)                                                \
    X(GATHER, IRA_INTS, "window", gs.window, NULL)                                                 \
    X(GATHER, IRA_INTS, "index", gs.index, NULL)                                                   \
    X(GATHER, IRA_INTS, "batch", gs.batch, NULL)                                                   \
    X(GATHER, IRA_I64S, "sizes", gs.sizes, NULL)                                                   \
    X(GATHER, IRA_WORD, "a mode", gs.mode, ir_gather_mode_name)                                    \
    X(GATHER, IRA_REAL, "fill_value", gs.fill, NULL)                                               \
    X(SCATTER, IRA_WORD, "a kind", gs.kind, ir_scatter_kind_name)                                  \
    X(SCATTER, IRA_INTS, "window", gs.window, NULL)                                                \
    X(SCATTER, IRA_INTS, "index", gs.index, NULL)                                                  \
    X(SCATTER, IRA_INTS, "batch", gs.batch, NULL)                                                  \
    X(SCATTER, IRA_WORD, "a mode", gs.mode, ir_gather_mode_name)                                  \
    X(SCATTER_ADD_ROWS, IRA_FLAG, "mul", rows.mul, NULL)                                           \
    X(SCATTER_ADD_ROWS, IRA_FLAG, "min", rows.min, NULL)                                           \
    X(SCATTER_ADD_ROWS, IRA_FLAG, "max", rows.max, NULL)                                           \
    X(CONV, IRA_WORD, "a kind", conv.kind, ir_conv_kind_name)                                      \
    X(CONV, IRA_INTS, "lhs_spec", conv.lhs, NULL)                                                  \
    X(CONV, IRA_INTS, "rhs_spec", conv.rhs, NULL)                                                  \
    X(CONV, IRA_INTS, "out_spec", conv.out, NULL)                                                  \
    X(CONV, IRA_SPATIAL, "stride", conv.stride, NULL)                                              \
    X(CONV, IRA_SPATIAL, "lo", conv.lo, NULL)                                                      \
    X(CONV, IRA_SPATIAL, "hi", conv.hi, NULL)                                                      \
    X(CONV, IRA_SPATIAL, "lhs_dilation", conv.ld, NULL)                                            \
    X(CONV, IRA_SPATIAL, "rhs_dilation", conv.rd, NULL)                                            \
    X(CONV, IRA_SPATIAL, "sizes", conv.sizes, NULL)                                                \
    X(CONV, IRA_INT, "groups", conv.groups, NULL)                                                  \
    X(CHOLESKY, IRA_FLAG, "symmetrize", symmetrize, NULL)                                          \
    X(TRIANGULAR_SOLVE, IRA_FLAG, "left_side", tri.left_side, NULL)                                \
    X(TRIANGULAR_SOLVE, IRA_FLAG, "lower", tri.lower, NULL)                                        \
    X(TRIANGULAR_SOLVE, IRA_FLAG, "transpose_a", tri.transpose_a, NULL)                            \
    X(TRIANGULAR_SOLVE, IRA_FLAG, "unit_diagonal", tri.unit_diagonal, NULL)
// clang-format on

typedef struct ir_attr_desc {
    ir_op op;
    ir_attr_type type;
    const char *name;
    size_t offset;               /* of the member in ir_attrs */
    const char *(*words)(int v); /* IRA_WORD */
} ir_attr_desc;

/* The attributes of op in their declared order; the count in *n (0: none). */
const ir_attr_desc *ir_op_attrs(ir_op op, int *n);
/* The meaningful attribute values of op flattened into buf (IR_ATTRS_FLAT_MAX entries at
 * most): equality and hashing share this one definition of "meaningful". Returns the count. */
#define IR_ATTRS_FLAT_MAX 64
int ir_attrs_flatten(ir_op op, int in_rank, const ir_attrs *a, int64_t *buf);

#define IR_INLINE_INPUTS 3

typedef struct ir_node {
    ir_op op;
    kiln_dtype dtype;
    ir_shape shape;
    uint32_t n_in;
    uint32_t in_inline[IR_INLINE_INPUTS]; /* inputs when n_in <= 3 ... */
    uint32_t *in_heap;                    /* ... else a host allocation (read with ir_in) */
    ir_attrs a;
    char *name;       /* PARAMETER: its name; else a kiln_checkpoint_name's; owned, may be NULL */
    void *data;       /* CONSTANT: owned, row-major, nbytes of the shape */
    const char *file; /* user source location (a string literal: not owned) */
    int line;
    struct ir_region *region; /* control ops: the sub-graphs they run (a reference: owned) */
    bool backward; /* appended by kiln_grad/kiln_vjp: a forward value it reads is saved */
} ir_node;

/* The sub-graphs a control node runs. They are finished and never change, so the graphs a
 * pass makes from one another share them by reference (copying a node takes a reference,
 * releasing it drops one; the last drop destroys them). How a control node lays out its
 * inputs, its sub-graphs' parameters and outputs, and its results:
 *
 *   WHILE  inputs: the n_carry initial values, then graphs[0]'s captures, then graphs[1]'s.
 *          graphs[0], the condition: parameters the carries then its captures; one output,
 *          a bool scalar. graphs[1], the body: the same parameters; outputs the new carries.
 *          Results: the carries once the condition is false.
 *   SCAN   inputs: the n_carry initial carries, the n_xs scanned arrays (leading axis of
 *          `length`), then the body's captures. graphs[0], the body: parameters the carries,
 *          one slice of each scanned array (its leading axis dropped), the captures; outputs
 *          the new carries, then the per-iteration outputs (ys). Results: the final carries,
 *          then each y stacked along a new leading axis of `length`.
 *   COND   inputs: the branch index (an i32 scalar; clamped into range as lax.switch does),
 *          the n_carry operands, then each branch's captures in branch order. graphs[b]:
 *          parameters the operands then its captures; outputs of the same types in every
 *          branch. Results: the chosen branch's outputs.
 *
 * A capture is a value of an enclosing graph a sub-graph reads (kiln_capture): a parameter
 * of the sub-graph, and an input of the control node. */
typedef struct ir_region {
    atomic_int refs;
    uint32_t n_graphs;
    kiln_graph **graphs;
} ir_region;

/* A region holding graphs[0..n) (taken over: destroyed with the region); NULL on host OOM,
 * when the graphs are destroyed. One reference, the caller's. */
ir_region *ir_region_new(kiln_context *ctx, uint32_t n, kiln_graph *const *graphs);
ir_region *ir_region_ref(ir_region *r);
void ir_region_unref(kiln_context *ctx, ir_region *r);
/* Whether two regions run the same computation: the same region, or sub-graphs node for
 * node alike (op, dtype, shape, inputs, meaningful attributes, a constant's bytes, a
 * parameter's position, nested regions alike in turn) with the same outputs. What a body
 * traced twice from one function gives; a body autodiff extended with residuals, or
 * another function's, differs. */
bool ir_region_equal(const ir_region *a, const ir_region *b);

/* The number of results of control node n (ir_ops[n->op].kind == IRK_CONTROL). */
uint32_t ir_control_n_results(const ir_node *n);
/* The dtype and shape of its result i. */
void ir_control_result_type(const ir_node *n, uint32_t i, kiln_dtype *dtype, ir_shape *shape);
/* The first input of n that is a capture of sub-graph k. */
uint32_t ir_control_capture_base(const ir_node *n, uint32_t k);
/* The number of captures of sub-graph k (its parameters past the carried or passed ones). */
uint32_t ir_control_n_captures(const ir_node *n, uint32_t k);
/* The typing rules of control and RESULT nodes (ir_infer calls them). */
kiln_status ir_infer_control(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size);
kiln_status ir_infer_result(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size);
/* The control node's results in g: ids[i] is the node that holds result i (ids[0] = id),
 * 0 for a result nothing reads (no RESULT node was made or kept for it). ids holds
 * ir_control_n_results entries. The RESULT nodes of a control node follow it. */
void ir_control_results(const kiln_graph *g, uint32_t id, uint32_t *ids);

#define KN_LOC_SAVED 64 /* kiln_graph_push_at: nested calls whose callers' locations are kept */
struct kiln_graph {
    kiln_context *ctx;
    uint32_t id; /* unique per context: tells values of two graphs apart */
    char *name;
    ir_node *nodes;              /* nodes[0] is unused so ids are 1-based */
    uint32_t n_nodes, cap_nodes; /* n_nodes counts the unused slot 0 */
    uint32_t *params, n_params, cap_params;
    uint32_t *outputs, n_outputs;
    bool finished;
    kiln_status status;         /* the builder's first error */
    char *error;                /* its message: error_buf once there is an error, NULL before */
    char error_buf[KN_ERR_MAX]; /* held in the graph so an out-of-memory error keeps it */
    const char *cur_file;       /* user location of the latest public call (kiln_graph_at) */
    int cur_line;
    /* the locations kiln_graph_push_at saved, innermost last (loc_depth may exceed the
     * array: those pushes saved nothing) */
    struct {
        const char *file;
        int line;
    } loc_saved[KN_LOC_SAVED];
    uint32_t loc_depth;
    char **files; /* source file names the graph owns (a loaded graph's locations) */
    uint32_t n_files, cap_files;
    /* while this graph is traced as a sub-graph (a loop body, a branch: src/trace/control.c):
     * the graph it is traced in, and per capture (kiln_capture) the outer value's id; the
     * capture's parameter here is params[n_params - n_captures + i] */
    kiln_graph *parent;
    uint32_t *captures, n_captures, cap_captures;
    /* side tables (side.h): what the rooms above ir/ record about the graph and its nodes
     * (checkpoint marks, roles, composites, builder options); owned */
    struct ir_side *side;
    uint32_t n_side, cap_side;
};

/* A copy of file name [s, s+n) owned by g and freed with it, for node locations of a graph
 * read from text; one copy per distinct name. NULL on host OOM (no message set). */
const char *ir_graph_own_file(kiln_graph *g, const char *s, size_t n);

/* A CONV node's geometry in the forward convolution's terms (ir.h's KN_CONV_OPS), from its
 * attributes and its operands' shapes whatever its kind: the forward's lhs [n, c, in...],
 * kernel [o, i, k...] and output [n, o, out...] (c = groups * i), and each of the three as a
 * shape in its own spec's layout. */
typedef struct ir_conv_geom {
    int ns; /* spatial axes */
    int64_t n, c, o, i, groups;
    int64_t in[KILN_CONV_MAX_SPATIAL], k[KILN_CONV_MAX_SPATIAL], out[KILN_CONV_MAX_SPATIAL];
    ir_shape lhs, rhs, res; /* the forward's lhs, kernel and output shapes */
    /* element strides of each one's logical axes, row-major in its own layout: [0] the
     * batch axis (the kernel's O), [1] the features (its I), [2 + d] spatial axis d */
    int64_t lhs_st[KILN_CONV_MAX_SPATIAL + 2], rhs_st[KILN_CONV_MAX_SPATIAL + 2],
        res_st[KILN_CONV_MAX_SPATIAL + 2];
} ir_conv_geom;

/* Fills *gm for CONV node n of g and checks everything the node's type rests on (specs,
 * strides, dilations, padding, groups, the operands' agreement); a message otherwise. */
kiln_status ir_conv_geometry(const kiln_graph *g, const ir_node *n, ir_conv_geom *gm, char *msg,
                             size_t msg_size);

/* dtypes and shapes */
bool ir_dtype_valid(kiln_dtype t);
bool ir_dtype_is_float(kiln_dtype t); /* f32, f64, bf16, f16 */
bool ir_dtype_is_int(kiln_dtype t);
/* bf16 or f16: stored in 16 bits, computed in f32 (ir_dtype_compute) and rounded back to
 * the dtype after every op. */
bool ir_dtype_is_half(kiln_dtype t);
/* The dtype an op on t computes in: f32 for bf16 and f16, t itself otherwise. */
kiln_dtype ir_dtype_compute(kiln_dtype t);
bool ir_dtype_accepts(int types, kiln_dtype t);
/* Element count; false on int64 overflow. */
bool ir_shape_numel(const ir_shape *s, int64_t *n);
/* Byte size; false on overflow of size_t. */
bool ir_shape_nbytes(const ir_shape *s, kiln_dtype t, size_t *n);
bool ir_shape_eq(const ir_shape *a, const ir_shape *b);
/* True when node id of g is a value in pinned_host memory: a memory_put there, or a
 * parameter of that memory kind (kiln_parameter_in_memory). */
bool ir_in_host(const kiln_graph *g, uint32_t id);
/* True when n (a node of g) is a fetch: a memory_put to the device of a parameter in
 * pinned_host memory, which rematerialisation may repeat, CSE never merges and the list
 * scheduler runs just in time (docs/architecture.md, "Memory planning"). */
bool ir_is_fetch(const kiln_graph *g, const ir_node *n);
/* Stores v as one element of dtype t at out (ints saturate, NaN -> 0, bool is v != 0);
 * false if t is not a dtype. out must hold 8 bytes. */
bool ir_scalar_store(kiln_dtype t, double v, void *out);
/* Element i of an array of dtype t at p, as a double (exact but for i64 beyond 2^53). */
double ir_scalar_load(kiln_dtype t, const void *p, int64_t i);
/* Whether bits (an element of float dtype t, in its width) are a NaN; *plain then says
 * whether it is the quiet NaN without a payload, what `nan` reads back as (sign aside).
 * False for any other dtype. */
bool ir_float_bits_nan(kiln_dtype t, uint64_t bits, bool *plain);
/* Writes "f32[2,3]" into buf (always terminated). Returns buf. */
char *ir_type_str(kiln_dtype t, const ir_shape *s, char *buf, size_t n);
#define IR_TYPE_STR_MAX 192

/* graph */
static inline const uint32_t *ir_in(const ir_node *n) {
    return n->n_in <= IR_INLINE_INPUTS ? n->in_inline : n->in_heap;
}
static inline ir_node *ir_node_at(const kiln_graph *g, uint32_t id) {
    return &g->nodes[id];
}
/* Appends a node copied from *tmpl with the given inputs; takes ownership of tmpl->name
 * and tmpl->data on success only. Returns its id, or 0 on host OOM (no message set). */
uint32_t ir_graph_append(kiln_graph *g, const ir_node *tmpl, const uint32_t *in, uint32_t n_in);
/* Frees what a node owns (name, data, spilled inputs). */
void ir_node_release(kiln_context *ctx, ir_node *n);

/* Shape and dtype inference for a node whose op, inputs and attributes are set: fills
 * n->dtype / n->shape (except for sources, which carry their own) or writes the reason
 * into msg and returns its status. The tracer calls it for every op, the verifier again. */
kiln_status ir_infer(const kiln_graph *g, ir_node *n, char *msg, size_t msg_size);
/* Rank in [0, KILN_MAX_RANK], no negative dimension, byte size fits in size_t. */
kiln_status ir_check_shape(const ir_shape *s, kiln_dtype t, char *msg, size_t msg_size);
/* The dtype rule of the elementwise ops alone (the tracer checks it before it broadcasts,
 * so a dtype mistake is reported against the user's operands). *out holds the target
 * dtype for CONVERT and receives the result dtype. */
kiln_status ir_infer_elementwise_dtype(ir_op op, const kiln_dtype *in, uint32_t n_in,
                                       kiln_dtype *out, char *msg, size_t msg_size);

/* attributes (src/ir/attrs.c) */
/* Appends the text of n's attributes (" axis=1 reverse"); in_rank is the rank of its first
 * operand. Out-of-range values print as "?" or "(bad dims)": the verifier prints broken
 * nodes too. */
void ir_attrs_print(const ir_node *n, int in_rank, struct strbuf *sb);
/* The checks an attribute's type implies (an axis set within the operand's rank), for the
 * ops whose shape rule has none of its own: ir_infer runs it after every rule. */
kiln_status ir_attrs_check(const ir_node *n, int in_rank, char *msg, size_t msg_size);

/* Verifier: invariants of ir.h. Sets the context's message on failure. */
kiln_status ir_verify(const kiln_graph *g);

/* Printer: one op a line, stable text. */
void ir_print(const kiln_graph *g, struct strbuf *sb);
/* ir_print, with every value of every constant when all_values (kiln_graph_save: text that
 * reads back to the same graph); ir_print shows large constants by their count. */
void ir_print_ex(const kiln_graph *g, struct strbuf *sb, bool all_values);
/* Appends s with backslashes, quotes and control characters escaped (\\, \", \', \xNN). */
void ir_print_escaped(struct strbuf *sb, const char *s);
/* "%3 = add(%1, %2)" style attribute text for one node (used by the printer and errors). */
void ir_print_node(const kiln_graph *g, uint32_t id, struct strbuf *sb);

#endif
