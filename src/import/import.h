/* import.h — the importer's internals shared by its files (docs/import.md): a cursor over
 * the text with line and column (lex.c), named values in nested scopes (scope.c), one op
 * in a form both front ends fill (imp_op) and its mapping onto kiln's builders (ops.c),
 * and the two front ends: StableHLO's MLIR pretty form (stablehlo.c) and HLO text (hlo.c).
 *
 * Invariants: the cursor never reads past the text's length (no terminator is needed);
 * the first error wins and is kept on the cursor (imp_fail), with the line and column
 * where the op at fault starts, and every later step is a no-op; the total work a text
 * can ask for is bounded (IMP_MAX_OPS ops read, calls inlined included; IMP_MAX_DEPTH
 * nested regions and calls), so no input hangs the parser or grows without bound. */
#ifndef KILN_IMPORT_H
#define KILN_IMPORT_H

#include "base/base.h"

#include <kiln.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMP_MAX_BYTES    ((size_t)1 << 30) /* longest text read */
#define IMP_MAX_OPS      (1u << 20)        /* ops read in all, inlined calls counted again */
#define IMP_MAX_DEPTH    32                /* regions and calls nested in each other */
#define IMP_MAX_OPERANDS 64                /* operands (and results) of one op */
#define IMP_MAX_VALUES   4096              /* of a tuple, a call, a function's results */
#define IMP_MAX_NAME     128               /* a value's or function's name, bytes */

/* ---------------------------------------------------------------- lexing ---- */

typedef struct imp_lex {
    kiln_context *ctx;
    const char *api; /* "kiln_import_stablehlo": what messages call the import */
    const char *src;
    size_t len, pos;
    size_t line_start; /* offset of the current line's first byte */
    int line;
    kiln_status status; /* the first error */
    /* Its message, kept here too: a builder that fails after it (a while whose body
     * returned the import's error) sets the context's message again; the import's wins. */
    char msg[1024];
    uint32_t ops; /* ops read so far (IMP_MAX_OPS) */
    int depth;    /* regions and calls open (IMP_MAX_DEPTH) */
    /* MLIR text: a location, `loc(...)` after an op, an argument or a block's argument
     * (as_text(debug_info=True), jax.export), is skipped as white space is */
    bool mlir_locs;
} imp_lex;

/* Where an op starts, for its messages. */
typedef struct imp_loc {
    int line, col;
} imp_loc;

imp_loc imp_here(const imp_lex *L);
/* A position in the text to come back to (a region or function read again). */
typedef struct imp_mark {
    size_t pos, line_start;
    int line;
} imp_mark;
static inline imp_mark imp_mark_here(const imp_lex *L) {
    return (imp_mark){L->pos, L->line_start, L->line};
}
static inline void imp_go(imp_lex *L, imp_mark m) {
    L->pos = m.pos, L->line_start = m.line_start, L->line = m.line;
}
/* Records the first error: "<api> (kiln V): line L, column C: <message>"; returns false. */
bool imp_fail_at(imp_lex *L, imp_loc at, kiln_status code, const char *fmt, ...) KN_PRINTF(4, 5);
bool imp_fail(imp_lex *L, const char *fmt, ...) KN_PRINTF(2, 3);
/* "expected X, found Y" at the cursor. */
bool imp_expected(imp_lex *L, const char *what);
bool imp_oom(imp_lex *L, const char *what, size_t size);

int imp_peek(const imp_lex *L);
int imp_peek_at(const imp_lex *L, size_t ahead);
void imp_advance(imp_lex *L, size_t n);
/* Skips spaces, newlines and comments ("//" and "/ * * /" in StableHLO). */
void imp_skip(imp_lex *L);
/* Skips blanks but stops at a newline (HLO is one instruction a line). */
void imp_skip_blanks(imp_lex *L);
bool imp_accept(imp_lex *L, char c);             /* skips, then takes c if it is next */
bool imp_expect(imp_lex *L, char c);             /* the same, failing when it is not */
bool imp_accept_word(imp_lex *L, const char *w); /* a whole word (not a prefix of one) */
bool imp_expect_word(imp_lex *L, const char *w);
bool imp_is_ident_char(int c);
/* The identifier at the cursor (letters, digits, _ . $ - as `extra` allows) into out; false
 * (with an error naming what) when there is none or it is longer than IMP_MAX_NAME - 1. */
bool imp_ident(imp_lex *L, char *out, const char *extra, const char *what);
bool imp_int(imp_lex *L, int64_t *out, const char *what);
/* A number as MLIR and HLO print them: 1.5e-3, -2, 0x7FC00000 (raw bits), inf, -inf, nan,
 * true, false. A decimal integer in [-2^63, 2^64) is also kept exactly, so a constant of
 * i64 or ui64 beyond 2^53 is not rounded on its way through a double. */
typedef enum imp_num_kind {
    IMP_NUM_FLOAT, /* value alone */
    IMP_NUM_BITS,  /* 0x...: raw holds the element's bits, value is 0 */
    IMP_NUM_INT,   /* a decimal integer (or true, false): raw is it mod 2^64, neg its sign */
} imp_num_kind;
typedef struct imp_num {
    double value; /* the number, rounded to a double */
    uint64_t raw;
    bool neg;
    bool wide; /* a decimal integer outside [-2^63, 2^64): no integer type holds it */
    imp_num_kind kind;
} imp_num;
bool imp_number(imp_lex *L, imp_num *out, const char *what);
/* "[a, b, c]" (or with braces when open is '{') into v (at most max), *n the count. */
bool imp_int_list(imp_lex *L, char open, int64_t *v, int max, int *n, const char *what);
/* Skips a balanced (), [], {} or <> group starting at the cursor, strings included. */
bool imp_skip_group(imp_lex *L);
/* A quoted string's contents are skipped; true if one was there. */
bool imp_skip_string(imp_lex *L);
/* An attribute value a reader does not need: up to the next ',' or closing bracket at its
 * level (a '>' not of "->" included); with pretty a ':' ends it too, where a pretty op's
 * signature starts. */
bool imp_skip_value(imp_lex *L, bool pretty);
/* Counts one op against IMP_MAX_OPS. */
bool imp_count_op(imp_lex *L);

/* ----------------------------------------------------------------- types ---- */

typedef struct imp_type {
    kiln_dtype dtype;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    /* StableHLO's ui32 / ui64, held as the bit patterns of i32 / i64 (dtype): ops.c maps
     * the ops whose result depends on the signedness (compare, convert, max, min, divide,
     * remainder) and refuses the others that would (docs/import.md, "Unsigned integers") */
    bool uns;
} imp_type;

/* An element type's spelling (f32, i1, bf16 ...; HLO's s32, pred) as a kiln dtype;
 * KILN_DTYPE_INVALID when kiln has none (ui8, complex, f8...). */
kiln_dtype imp_dtype(const char *name);
void imp_type_str(const imp_type *t, char *buf, size_t n);

/* ---------------------------------------------------------------- scopes ---- */

/* A named value: n kiln values (an op with several results, an HLO tuple) from
 * first on in its scope's pool. The name is a slice of the text, which outlives the
 * import, so an entry is small whatever the names' lengths. is_const: a constant whose
 * every element is `value` (a splat), so that a reduction's initial value equal to its
 * identity adds no op. */
typedef struct imp_entry {
    const char *name;
    size_t name_len;
    uint32_t first, n;
    bool is_const;
    double value;
    bool uns; /* HLO: the one value's declared type is u32 or u64 (StableHLO's ops say it) */
} imp_entry;

/* A scope: the values of one function body or region, and the graph they live on. A
 * region's scope reads the values of the scopes around it (kiln_capture brings them onto
 * its graph); a function's does not (parent NULL: functions are isolated from above). */
typedef struct imp_scope {
    struct imp_scope *parent;
    kiln_graph *g;
    imp_entry *e;
    uint32_t n, cap;
    kiln_value *vals;
    uint32_t n_vals, cap_vals;
} imp_scope;

void imp_scope_free(imp_lex *L, imp_scope *s);
/* Binds the name (len bytes) to vals[0..n) (a later binding of the same name hides the
 * earlier). */
imp_entry *imp_scope_bind(imp_lex *L, imp_scope *s, const char *name, size_t len, int n,
                          const kiln_value *vals);
/* The entry named so, from this scope or an enclosing one (*owner: the scope that holds
 * it); NULL after an error naming it. */
const imp_entry *imp_scope_find(imp_lex *L, imp_scope *s, const char *name, size_t len, imp_loc at,
                                imp_scope **owner);
/* Value `index` of the entry named so, captured onto s->g when it comes from an
 * enclosing scope. */
bool imp_scope_value(imp_lex *L, imp_scope *s, const char *name, size_t len, int index, imp_loc at,
                     kiln_value *out, const imp_entry **entry);

/* -------------------------------------------------------------------- ops ---- */

/* The reduction a reduce / reduce_window / scatter body computes. */
typedef enum imp_combine {
    IMP_COMBINE_NONE = 0,
    IMP_COMBINE_ADD,
    IMP_COMBINE_MUL,
    IMP_COMBINE_MAX,
    IMP_COMBINE_MIN,
    IMP_COMBINE_AND,
    IMP_COMBINE_OR,
    IMP_COMBINE_SET,    /* the body returns its second parameter: a scatter that replaces */
    IMP_COMBINE_ARGMAX, /* a reduce of (values, indices): jnp.argmax's body */
    IMP_COMBINE_ARGMIN,
    IMP_COMBINE_ARGMAX_INT, /* the same without its NaN test (XLA drops it over integers) */
    IMP_COMBINE_ARGMIN_INT,
} imp_combine;

/* A comparator body (sort's comparator, select_and_scatter's select) as a front end read
 * it: its ops in order, each over earlier ones by index, and the one returned. Recognised
 * by imp_sort_body and imp_select_body (body.c), never run: kiln has no op for an
 * arbitrary comparator, so only the forms JAX writes map onto kiln's sorts. */
#define IMP_MAX_BODY 64
typedef enum imp_bkind {
    IMP_B_OTHER = 0, /* any op the recognisers do not know: the body is refused */
    IMP_B_PARAM,
    IMP_B_CONST, /* a scalar constant of `value` */
    IMP_B_COMPARE,
    IMP_B_SELECT,
    IMP_B_AND,
    IMP_B_OR,
} imp_bkind;
typedef struct imp_bop {
    imp_bkind kind;
    int param;       /* IMP_B_PARAM: its number */
    double value;    /* IMP_B_CONST (NaN for a NaN) */
    kiln_cmp cmp;    /* IMP_B_COMPARE */
    bool totalorder; /* a compare of type TOTALORDER */
    bool uns;        /* a compare of type UNSIGNED (no comparator kiln maps); HLO: a parameter
                      * of type u32 or u64, whose compares are unsigned */
    int n_in, in[3]; /* operands: indices of earlier ops */
} imp_bop;
typedef struct imp_body {
    int n, ret;      /* ret: the op returned, -1 when not one of ops */
    bool unreadable; /* longer than IMP_MAX_BODY, or a form the reader does not follow */
    imp_bop op[IMP_MAX_BODY];
} imp_body;

/* Appends op to b; false (b marked unreadable) when it is full. */
bool imp_body_add(imp_body *b, imp_bop op);
/* Whether body is a comparator JAX writes for lax.sort over n operands whose dtypes are
 * types: lexicographic over the first *num_keys operands, each compared LT (ascending) or
 * each GT (descending, *descending): over floats the compare of TOTALORDER between both
 * values with -0.0 made +0.0 and every NaN the canonical one (jax.lax.sort's order, which
 * is kiln_sort's), over integers and bool the plain compare. */
bool imp_sort_body(const imp_body *b, int n, const kiln_dtype *types, int *num_keys,
                   bool *descending);
/* Whether body is select_and_scatter's select jax.grad of a max pool writes: compare GE of
 * its parameters 0 and 1 (the first maximum of each window keeps the cotangent). */
bool imp_select_body_ge(const imp_body *b);

/* One op as both front ends give it to imp_emit: a canonical name (StableHLO's without
 * its dialect: "add", "broadcast_in_dim"; HLO's names are mapped onto these), operands,
 * result types and the attributes its mapping reads. Lists not given have count 0. */
typedef struct imp_op {
    const char *name;  /* canonical op name */
    const char *spell; /* as the text spells it, for messages */
    imp_loc at;
    int n_in;
    kiln_value in[IMP_MAX_OPERANDS];
    bool in_const[IMP_MAX_OPERANDS]; /* operand i is a splat constant of in_value[i] */
    double in_value[IMP_MAX_OPERANDS];
    int n_out;
    imp_type out[IMP_MAX_OPERANDS];
    /* dims (broadcast_in_dim, transpose's permutation, reduce's and reverse's dimensions,
     * concatenate's and iota's one axis), sizes (dynamic_slice, gather's slice_sizes) */
    int n_dims;
    int64_t dims[KILN_MAX_RANK];
    int n_sizes;
    int64_t sizes[KILN_MAX_RANK];
    /* slice: start, limit, stride; pad: low, high, interior; reduce_window: window
     * dimensions, strides, (pad low, high) */
    int n_a, n_b, n_c;
    int64_t a[KILN_MAX_RANK], b[KILN_MAX_RANK], c[KILN_MAX_RANK];
    int64_t pad_lo[KILN_MAX_RANK], pad_hi[KILN_MAX_RANK];
    kiln_cmp cmp;
    bool cmp_typed, cmp_unsigned;  /* compare's type given; it is UNSIGNED */
    bool in_uns[IMP_MAX_OPERANDS]; /* operand i's type, as the text gives it, is unsigned */
    kiln_dot_dims dot;
    kiln_gather_dims gather;
    kiln_scatter_dims scatter;
    imp_combine combine;
    int64_t index_vector_dim; /* gather, scatter */
    bool has_index_vector_dim;
    /* convolution: strides (a), padding (pad_lo, pad_hi), lhs_dilation (c), rhs_dilation
     * (sizes), its groups and specs; a window reversed is refused */
    kiln_conv_options conv;
    bool has_conv_specs, conv_reversed;
    int64_t k;       /* top_k */
    bool k_smallest; /* HLO's topk with largest=false: refused */
    /* cholesky: lower (absent: false, the upper factor); triangular_solve: left_side,
     * lower, unit_diagonal, transpose_a (0 NO_TRANSPOSE, 1 TRANSPOSE, 2 ADJOINT; -1 another
     * word) */
    bool left_side, lower, unit_diagonal;
    int transpose_a;
    /* a custom call's backend_config (imp_backend_config): LAPACK's flags as their
     * characters, 0 where not given (uplo 'L' or 'U', side 'L' or 'R', trans_x 'N', 'T' or
     * 'C', diag 'N' or 'U'), and a GPU solver's lower (has_lower: given) */
    int uplo, side, trans_x, diag;
    bool has_lower;
    /* sort's comparator, select_and_scatter's select (whose scatter body is `combine`):
     * read by the front end, owned by it; NULL when the op has none */
    const imp_body *body;
} imp_op;

/* One operand's axes of a convolution's dimension numbers, a character each (b, f and
 * spatial digits for lhs (which 0) and the result (2); o, i and digits for rhs (1)), as
 * both forms spell them ([b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]; b01f_01io->b01f): into
 * op->conv's specs. */
bool imp_conv_labels(imp_lex *L, imp_op *op, int which, const char *labels, int n);

/* Whether a custom call's target is one of the sharding annotations JAX leaves
 * (Sharding, SPMDFullToShardShape, SPMDShardToFullShape): the identity on one device. */
bool imp_sharding_target(const char *target);
/* Whether a custom call's target is one kiln maps onto its linear algebra (docs/import.md):
 * LAPACK's Cholesky factor and triangular solve as JAX calls them on the CPU
 * (lapack_?potrf_ffi, lapack_?trsm_ffi, ? the type's letter) and the GPU solvers' factor
 * (cusolver_potrf_ffi, hipsolver_potrf_ffi). */
bool imp_linalg_target(const char *target);
/* Builds that custom call on g from op (its operands, result types and backend_config;
 * op->spell names the call with its target): its values into out[0..op->n_out). A
 * complex target (c, z) and any type but f32 and f64 are refused by name. */
bool imp_linalg_call(imp_lex *L, kiln_graph *g, imp_op *op, const char *target, kiln_value *out);
/* A custom call's backend_config dictionary at the cursor, "{uplo = 76 : ui8, lower =
 * true}" as both forms print it: the keys imp_op keeps (uplo, side, trans_x, diag, lower)
 * into op, any other skipped; a JSON one (XLA GPU's, {"key": ...}) is skipped whole. */
bool imp_backend_config(imp_lex *L, imp_op *op);
/* triangular_solve's transpose_a, both texts' word (after StableHLO's "#stablehlo<transpose"
 * or HLO's "transpose_a="): NO_TRANSPOSE, TRANSPOSE or ADJOINT into op->transpose_a (0, 1,
 * 2); any other word is an error naming it. */
bool imp_transpose_word(imp_lex *L, imp_op *op);
/* Builds op on g: its values into out[0..op->n_out). The mapping checks what kiln's
 * builders do not (the text's result type against the builder's), and every failure is
 * an error naming the op, its line and column. */
bool imp_emit(imp_lex *L, kiln_graph *g, imp_op *op, kiln_value *out);
/* One element of a constant of type t as the bytes of t's dtype at dst: raw bits as they
 * are, an integer exactly (an unsigned type's as its signed bit pattern), a float from the
 * double (a 16-bit one rounded once, as MLIR and ml_dtypes round); false (an error at
 * `at`) when the number does not fit the type. */
bool imp_element(imp_lex *L, imp_loc at, const imp_type *t, const imp_num *x, void *dst);
/* Whether x's value is its double exactly (an integer past 2^53 may not be): only then may
 * the ops that read a constant operand's value (identities of reductions, zeros) see it. */
bool imp_num_exact(const imp_num *x);
/* The value of a constant of type t from n elements (each imp_element's bytes; n == 1: a
 * splat). */
kiln_value imp_constant(imp_lex *L, kiln_graph *g, imp_loc at, const imp_type *t, const void *elems,
                        int64_t n);
/* The type of v, as an imp_type. */
imp_type imp_value_type(kiln_graph *g, kiln_value v);
/* After a builder call: its error (the graph's first) as an import error at `at`. */
bool imp_check_graph(imp_lex *L, kiln_graph *g, imp_loc at, const char *opname);
/* Reduces x over the axes of dims with init, by the combine kind. */
kiln_value imp_reduce(imp_lex *L, kiln_graph *g, imp_op *op, kiln_value x, kiln_value init,
                      bool init_is_identity);
/* The body of a reduce over (values, indices) from its ops in order, each an opcode and,
 * for a compare, its direction ("compare GT", "compare NE", "or", "select", ...: n of
 * them, parameters, return and tuple left out): IMP_COMBINE_ARGMAX or _ARGMIN where it is
 * the body jnp.argmax / argmin write (the values compared GT or LT, a NaN kept, a tie
 * resolved to the smaller index), _ARGMAX_INT or _ARGMIN_INT where it is that body without
 * the NaN test, else IMP_COMBINE_NONE. */
imp_combine imp_arg_body(int n, const char *const *ops);
/* Whether c is the identity of kind k (so it need not be combined in). */
bool imp_is_identity(imp_combine k, kiln_dtype t, double c);

/* ------------------------------------------------------------ front ends ---- */

kiln_status imp_stablehlo(imp_lex *L, kiln_graph **out);
kiln_status imp_hlo(imp_lex *L, kiln_graph **out);

#endif
