/* stablehlo.c — the StableHLO front end: reads the MLIR pretty form JAX writes
 * (jax.jit(f).lower(*args).as_text()) and the generic form ("stablehlo.gather"(...)
 * <{...}> ({...}) : ...) MLIR falls back to, and hands each op to ops.c.
 *
 * A first pass finds the module's functions (func.func) and where their text starts;
 * @main becomes the graph (its arguments the parameters, in order), and a call of a
 * private function is inlined by reading that function's text again with its arguments
 * bound to the call's operands. The regions of a while and a case are read the same way,
 * from inside the kiln_fn that kiln_while_loop / kiln_switch call, each on the sub-graph
 * those give it; a reduction's or scatter's body is recognised, not traced (one op over
 * its two arguments: add, multiply, maximum, minimum, and, or; or the update itself).
 *
 * Invariants: the cursor is saved and restored around every re-read, so a region or a
 * function is read where it is written, and the text is never copied; every re-read
 * counts its ops against IMP_MAX_OPS and its nesting against IMP_MAX_DEPTH; ignored
 * attributes (shardings, layouts, result_info, precision) are skipped whole. */
#include "import.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct func {
    const char *name;
    size_t len;
    size_t pos, line_start; /* the '(' of its arguments */
    int line;
} func;

typedef struct shlo {
    imp_lex *L;
    func *fns;
    uint32_t n_fns, cap_fns;
    imp_body body; /* the comparator of the op being read (sort, select_and_scatter) */
} shlo;

static bool block(shlo *P, imp_scope *s, int *n_out, kiln_value *outs, int max_out);

/* ----------------------------------------------------------------- types ---- */

/* tensor<2x3xf32>, tensor<f32>; an encoding after a ',' is skipped. */
static bool tensor_type(imp_lex *L, imp_type *t) {
    if (!imp_expect_word(L, "tensor") || !imp_expect(L, '<')) return false;
    imp_skip(L);
    t->rank = 0;
    for (;;) {
        int c = imp_peek(L);
        if (c >= '0' && c <= '9') {
            int64_t d;
            if (!imp_int(L, &d, "a dimension")) return false;
            if (t->rank == KILN_MAX_RANK)
                return imp_fail(L, "a tensor of rank more than %d", KILN_MAX_RANK);
            t->dims[t->rank++] = d;
            if (imp_peek(L) != 'x') return imp_expected(L, "\"x\" after a dimension");
            imp_advance(L, 1);
            continue;
        }
        if (c == '?') return imp_fail(L, "a dynamic dimension ('?'): kiln needs static shapes");
        break;
    }
    char name[IMP_MAX_NAME];
    imp_loc at = imp_here(L);
    if (!imp_ident(L, name, NULL, "an element type")) return false;
    t->uns = !strcmp(name, "ui32") || !strcmp(name, "ui64");
    t->dtype = t->uns ? (name[2] == '3' ? KILN_DTYPE_I32 : KILN_DTYPE_I64) : imp_dtype(name);
    if (!t->dtype || !strcmp(name, "s32") || !strcmp(name, "s64") || !strcmp(name, "pred"))
        return imp_fail_at(L, at, KILN_STATUS_DTYPE, "element type %s: kiln has no such dtype",
                           name);
    if (imp_accept(L, ',')) { /* an encoding (sharding): ignored */
        while (!L->status && imp_peek(L) >= 0 && imp_peek(L) != '>') {
            if (strchr("([{<", imp_peek(L)))
                imp_skip_group(L);
            else
                imp_advance(L, 1);
        }
    }
    return imp_expect(L, '>');
}

/* A list of types, in parentheses or not; types' attribute dicts ({...}) are skipped. The
 * first IMP_MAX_OPERANDS are kept in ts, up to IMP_MAX_VALUES counted. */
static bool type_list(imp_lex *L, imp_type *ts, int *n) {
    bool paren = imp_accept(L, '(');
    *n = 0;
    if (paren && imp_accept(L, ')')) return true;
    do {
        imp_type spare;
        if (*n == IMP_MAX_VALUES) return imp_fail(L, "more than %d types", IMP_MAX_VALUES);
        if (!tensor_type(L, *n < IMP_MAX_OPERANDS ? &ts[*n] : &spare)) return false;
        (*n)++;
        imp_skip(L); /* a result's attributes; without parentheses a '{' opens a body */
        if (paren && imp_peek(L) == '{' && !imp_skip_group(L)) return false;
    } while (imp_accept(L, ','));
    return !paren || imp_expect(L, ')');
}

/* ": T" or ": (A, B) -> R" or ": A, R" (select): the results' types into op. */
static bool signature(imp_lex *L, imp_op *op) {
    imp_type ts[IMP_MAX_OPERANDS];
    int n;
    if (!imp_expect(L, ':') || !type_list(L, ts, &n)) return false;
    imp_skip(L);
    if (imp_peek(L) == '-' && imp_peek_at(L, 1) == '>') {
        imp_advance(L, 2);
        for (int i = 0; i < n && i < IMP_MAX_OPERANDS; i++) op->in_uns[i] = ts[i].uns;
        return type_list(L, op->out, &op->n_out);
    }
    if (n > IMP_MAX_OPERANDS)
        return imp_fail(L, "an op of more than %d operand types", IMP_MAX_OPERANDS);
    op->n_out = 1;
    op->out[0] = ts[n - 1];
    for (int i = 0; i < IMP_MAX_OPERANDS; i++) op->in_uns[i] = ts[n - 1].uns; /* one type */
    return true;
}

/* -------------------------------------------------------------- operands ---- */

/* %name or %name#k: the value, captured when it is an enclosing region's. */
static bool operand(imp_lex *L, imp_scope *s, kiln_value *v, const imp_entry **e) {
    imp_skip(L);
    imp_loc at = imp_here(L);
    if (imp_peek(L) != '%') return imp_expected(L, "an operand (%name)");
    size_t start = L->pos;
    imp_advance(L, 1);
    while (imp_is_ident_char(imp_peek(L)) || imp_peek(L) == '.' || imp_peek(L) == '$' ||
           imp_peek(L) == '-')
        imp_advance(L, 1);
    size_t len = L->pos - start;
    int64_t k = 0;
    if (imp_peek(L) == '#') {
        imp_advance(L, 1);
        if (!imp_int(L, &k, "a result number") || k < 0 || k >= IMP_MAX_VALUES)
            return L->status ? false : imp_fail(L, "result number %lld", (long long)k);
    }
    return imp_scope_value(L, s, L->src + start, len, (int)k, at, v, e);
}

static bool add_operand(imp_lex *L, imp_scope *s, imp_op *op) {
    if (op->n_in == IMP_MAX_OPERANDS)
        return imp_fail(L, "%s has more than %d operands", op->spell, IMP_MAX_OPERANDS);
    const imp_entry *e = NULL;
    if (!operand(L, s, &op->in[op->n_in], &e)) return false;
    op->in_const[op->n_in] = e && e->is_const;
    op->in_value[op->n_in] = e ? e->value : 0;
    op->n_in++;
    return true;
}

/* "(%a, %b)": the operands of the generic form and of a custom call. */
static bool operand_list(imp_lex *L, imp_scope *s, imp_op *op) {
    if (!imp_expect(L, '(')) return false;
    if (imp_accept(L, ')')) return true;
    do {
        if (!add_operand(L, s, op)) return false;
    } while (imp_accept(L, ','));
    return imp_expect(L, ')');
}

/* ------------------------------------------------------------- constants ---- */

/* A constant's elements as the bytes of its dtype (imp_element), and the first one's
 * value as a double (a splat's, for the ops that read a constant operand's value). */
typedef struct dvec {
    unsigned char *b;
    size_t item;
    int64_t n, cap;
    double first;
    bool first_exact; /* first is the element's value exactly (imp_num_exact) */
} dvec;

static bool dpush(imp_lex *L, imp_loc at, const imp_type *t, dvec *d, const imp_num *x) {
    if (d->n == d->cap) {
        int64_t cap = d->cap ? d->cap * 2 : 64;
        unsigned char *b =
            host_realloc(L->ctx, d->b, (size_t)d->cap * d->item, (size_t)cap * d->item);
        if (!b) return imp_oom(L, "kiln import (constant)", (size_t)cap * d->item);
        d->b = b, d->cap = cap;
    }
    unsigned char *e = d->b + (size_t)d->n * d->item;
    if (!imp_element(L, at, t, x, e)) return false; /* checks raw bits fit, at the element */
    if (!d->n) {
        d->first = x->value, d->first_exact = imp_num_exact(x);
        if (x->kind == IMP_NUM_BITS)
            kiln_convert_host(L->ctx, t->dtype, e, KILN_DTYPE_F64, &d->first, 1);
    }
    d->n++;
    return true;
}

/* An element's raw bits (0x7FC00000) as the double it denotes in dtype t. */
static bool bits_value(imp_lex *L, kiln_dtype t, uint64_t raw, double *out) {
    size_t size = kiln_dtype_itemsize(t);
    if (size < 8 && raw >> (size * 8))
        return imp_fail(L, "0x%llx does not fit a %s", (unsigned long long)raw, kiln_dtype_name(t));
    unsigned char b[8];
    for (size_t i = 0; i < 8; i++) b[i] = (unsigned char)(raw >> (8 * i));
    if (kiln_convert_host(L->ctx, t, b, KILN_DTYPE_F64, out, 1))
        return imp_fail(L, "0x%llx as %s", (unsigned long long)raw, kiln_dtype_name(t));
    return true;
}

static int hexval(int c) {
    return c >= '0' && c <= '9'                 ? c - '0'
           : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                : -1;
}

/* dense<"0x...">: the tensor's bytes, little-endian, in hexadecimal. */
static kiln_value dense_hex(imp_lex *L, kiln_graph *g, imp_loc at, const imp_type *t, size_t hs,
                            size_t he) {
    int64_t count = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(count, t->dims[i], &count)) count = -1;
    size_t size = (he - hs) / 2, item = kiln_dtype_itemsize(t->dtype);
    if ((he - hs) % 2 || count < 0 || size != (size_t)count * item) {
        /* a splat is one element's bytes */
        if (!((he - hs) % 2) && size == item && count >= 0)
            count = 1;
        else {
            imp_fail_at(L, at, KILN_STATUS_SHAPE,
                        "constant: dense<\"0x...\"> holds %zu bytes, not the %lld of %s", size,
                        (long long)count * (long long)item, kiln_dtype_name(t->dtype));
            return (kiln_value){0, 0};
        }
    }
    unsigned char *b = host_alloc(L->ctx, size ? size : 1);
    if (!b) return imp_oom(L, "kiln import (constant)", size), (kiln_value){0, 0};
    for (size_t i = 0; i < size; i++) {
        int hi = hexval(L->src[hs + 2 * i]), lo = hexval(L->src[hs + 2 * i + 1]);
        if (hi < 0 || lo < 0) {
            host_free(L->ctx, b, size ? size : 1);
            imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT,
                        "constant: a non-hex digit in dense<\"0x...\">");
            return (kiln_value){0, 0};
        }
        b[i] = (unsigned char)(hi * 16 + lo);
    }
    kiln_value v = imp_constant(L, g, at, t, b, count == 1 && size == item ? 1 : count);
    host_free(L->ctx, b, size ? size : 1);
    return v;
}

/* The elements of dense<...> (nested brackets flattened; one element: a splat), read
 * after the type is known, so raw bits are read as that type. */
static bool dense_values(imp_lex *L, const imp_type *t, dvec *d) {
    int depth = 0;
    do {
        while (imp_accept(L, '[')) depth++;
        if (imp_accept(L, ']')) { /* an empty list */
            depth--;
        } else {
            imp_num x;
            imp_skip(L);
            imp_loc at = imp_here(L);
            if (!imp_number(L, &x, "a constant's element")) return false;
            if (!dpush(L, at, t, d, &x)) return false;
        }
        while (depth > 0 && imp_accept(L, ']')) depth--;
    } while (depth > 0 && imp_accept(L, ','));
    if (depth) return imp_expected(L, "\"]\"");
    return true;
}

/* stablehlo.constant dense<...> : tensor<...> (the pretty form), or the generic form's
 * value = dense<...> : tensor<...>. */
static bool constant(imp_lex *L, imp_scope *s, imp_loc at, kiln_value *out, imp_entry *info) {
    if (!imp_expect_word(L, "dense") || !imp_expect(L, '<')) return false;
    imp_mark m = imp_mark_here(L);
    imp_skip(L);
    bool hex = imp_peek(L) == '"';
    size_t hs = 0, he = 0;
    if (hex) {
        hs = L->pos + 3;
        if (!imp_skip_string(L)) return false;
        he = L->pos - 1;
        if (he < hs || L->src[hs - 2] != '0' || (L->src[hs - 1] | 32) != 'x')
            return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT,
                               "constant: a dense<\"...\"> string that does not start with 0x");
    } else {
        /* the values come before the type: skip them, read the type, then come back */
        while (!L->status && imp_peek(L) >= 0 && imp_peek(L) != '>') {
            if (imp_peek(L) == '[')
                imp_skip_group(L);
            else
                imp_advance(L, 1);
        }
    }
    imp_type t;
    if (!imp_expect(L, '>') || !imp_expect(L, ':') || !tensor_type(L, &t)) return false;
    imp_mark end = imp_mark_here(L);
    if (hex) {
        *out = dense_hex(L, s->g, at, &t, hs, he);
    } else {
        imp_go(L, m);
        dvec d = {.item = kiln_dtype_itemsize(t.dtype)};
        if (dense_values(L, &t, &d) && imp_expect(L, '>')) {
            *out = imp_constant(L, s->g, at, &t, d.b, d.n);
            info->is_const = d.n == 1 && d.first_exact;
            info->value = d.n ? d.first : 0;
        }
        host_free(L->ctx, d.b, (size_t)d.cap * d.item);
        imp_go(L, end);
    }
    return !L->status;
}

/* ------------------------------------------------------------ attributes ---- */

/* [1, 2], array<i64: 1, 2>, array<i64>, dense<[1, 2]> : tensor<2xi64>, or one integer
 * (with a ": i64" after it). */
static bool int_values(imp_lex *L, int64_t *v, int *n, const char *what, bool pretty) {
    imp_skip(L);
    *n = 0;
    if (imp_peek(L) == '[') return imp_int_list(L, '[', v, KILN_MAX_RANK, n, what);
    if (imp_accept_word(L, "array")) {
        char ty[IMP_MAX_NAME];
        if (!imp_expect(L, '<') || !imp_ident(L, ty, NULL, "an element type")) return false;
        if (imp_accept(L, ':')) {
            do {
                if (*n == KILN_MAX_RANK)
                    return imp_fail(L, "%s has more than %d entries", what, KILN_MAX_RANK);
                if (!imp_int(L, &v[(*n)++], what)) return false;
            } while (imp_accept(L, ','));
        }
        return imp_expect(L, '>');
    }
    if (imp_accept_word(L, "dense")) {
        imp_type t;
        if (!imp_expect(L, '<')) return false;
        imp_skip(L);
        bool list = imp_peek(L) == '[';
        if (list ? !imp_int_list(L, '[', v, KILN_MAX_RANK, n, what) : !imp_int(L, &v[(*n)++], what))
            return false;
        return imp_expect(L, '>') && imp_expect(L, ':') && tensor_type(L, &t);
    }
    if (!imp_int(L, &v[0], what)) return false;
    *n = 1;
    if (!pretty && imp_accept(L, ':')) {
        char ty[IMP_MAX_NAME];
        return imp_ident(L, ty, NULL, "an integer type");
    }
    return true;
}

static const struct {
    const char *name;
    kiln_cmp cmp;
} cmp_names[] = {{"EQ", KILN_CMP_EQ}, {"NE", KILN_CMP_NE}, {"LT", KILN_CMP_LT},
                 {"LE", KILN_CMP_LE}, {"GT", KILN_CMP_GT}, {"GE", KILN_CMP_GE}};

static bool direction(imp_lex *L, imp_op *op) {
    char w[IMP_MAX_NAME];
    if (!imp_ident(L, w, NULL, "a comparison direction")) return false;
    for (size_t i = 0; i < sizeof cmp_names / sizeof cmp_names[0]; i++)
        if (!strcmp(w, cmp_names[i].name)) return op->cmp = cmp_names[i].cmp, true;
    return imp_fail(L, "comparison direction %s", w);
}

/* The lists named by an attribute (pretty or generic spelling) into op's fields. */
static int64_t *list_field(imp_op *op, const char *name, int **n) {
    static const char *const dims[] = {
        "dims", "dimensions",     "permutation", "broadcast_dimensions",
        "dim",  "iota_dimension", "dimension"};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (!strcmp(name, dims[i])) return *n = &op->n_dims, op->dims;
    if (!strcmp(name, "sizes") || !strcmp(name, "slice_sizes") ||
        !strcmp(name, "window_dilations") || !strcmp(name, "rhs_dilation"))
        return *n = &op->n_sizes, op->sizes;
    if (!strcmp(name, "low") || !strcmp(name, "edge_padding_low") ||
        !strcmp(name, "start_indices") || !strcmp(name, "window_dimensions"))
        return *n = &op->n_a, op->a;
    if (!strcmp(name, "high") || !strcmp(name, "edge_padding_high") ||
        !strcmp(name, "limit_indices") || !strcmp(name, "window_strides"))
        return *n = &op->n_b, op->b;
    if (!strcmp(name, "interior") || !strcmp(name, "interior_padding") ||
        !strcmp(name, "strides") || !strcmp(name, "base_dilations") ||
        !strcmp(name, "lhs_dilation"))
        return *n = &op->n_c, op->c;
    return NULL;
}

/* Gather's and scatter's dimension numbers: lists kept as ints. */
static int *dnum_field(imp_op *op, const char *name, int **n) {
    kiln_gather_dims *g = &op->gather;
    kiln_scatter_dims *s = &op->scatter;
    if (!strcmp(name, "offset_dims")) return *n = &g->n_offset_dims, g->offset_dims;
    if (!strcmp(name, "collapsed_slice_dims"))
        return *n = &g->n_collapsed_slice_dims, g->collapsed_slice_dims;
    if (!strcmp(name, "start_index_map")) return *n = &g->n_start_index_map, g->start_index_map;
    if (!strcmp(name, "operand_batching_dims")) {
        /* gather and scatter share the spelling: fill both, the op reads its own */
        return *n = &g->n_operand_batching_dims, g->operand_batching_dims;
    }
    if (!strcmp(name, "start_indices_batching_dims"))
        return *n = NULL, g->start_indices_batching_dims;
    if (!strcmp(name, "update_window_dims"))
        return *n = &s->n_update_window_dims, s->update_window_dims;
    if (!strcmp(name, "inserted_window_dims"))
        return *n = &s->n_inserted_window_dims, s->inserted_window_dims;
    if (!strcmp(name, "scatter_dims_to_operand_dims"))
        return *n = &s->n_scatter_dims_to_operand_dims, s->scatter_dims_to_operand_dims;
    if (!strcmp(name, "input_batching_dims"))
        return *n = &s->n_operand_batching_dims, s->operand_batching_dims;
    if (!strcmp(name, "scatter_indices_batching_dims"))
        return *n = NULL, s->scatter_indices_batching_dims;
    if (!strcmp(name, "lhs_batching_dimensions")) return *n = &op->dot.n_batch, op->dot.lhs_batch;
    if (!strcmp(name, "rhs_batching_dimensions")) return *n = NULL, op->dot.rhs_batch;
    if (!strcmp(name, "lhs_contracting_dimensions"))
        return *n = &op->dot.n_contract, op->dot.lhs_contract;
    if (!strcmp(name, "rhs_contracting_dimensions")) return *n = NULL, op->dot.rhs_contract;
    return NULL;
}

static bool attribute(imp_lex *L, imp_op *op, const char *name, bool pretty);

/* [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]: a convolution's dimension numbers. */
static bool conv_dnums(imp_lex *L, imp_op *op) {
    for (int which = 0; which < 3; which++) {
        if (which == 1 && !imp_expect_word(L, "x")) return false;
        if (which == 2 && (!imp_expect(L, '-') || !imp_expect(L, '>'))) return false;
        char lab[KILN_CONV_MAX_SPATIAL + 3];
        int n = 0;
        if (!imp_expect(L, '[')) return false;
        do {
            imp_skip(L);
            int c = imp_peek(L);
            if (n == KILN_CONV_MAX_SPATIAL + 2 || c < 0 || !imp_is_ident_char(c))
                return imp_expected(L, "a convolution dimension label");
            lab[n++] = (char)c;
            imp_advance(L, 1);
        } while (imp_accept(L, ','));
        if (!imp_expect(L, ']') || !imp_conv_labels(L, op, which, lab, n)) return false;
    }
    return true;
}

/* window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate =
 * [1, 1], reverse = [false, false]} of convolution's pretty form. */
static bool conv_window(imp_lex *L, imp_op *op) {
    if (!imp_expect(L, '{')) return false;
    if (imp_accept(L, '}')) return true;
    do {
        char key[IMP_MAX_NAME];
        if (!imp_ident(L, key, NULL, "a window field") || !imp_expect(L, '=')) return false;
        bool ok = true;
        if (!strcmp(key, "stride"))
            ok = imp_int_list(L, '[', op->b, KILN_MAX_RANK, &op->n_b, key);
        else if (!strcmp(key, "lhs_dilate"))
            ok = imp_int_list(L, '[', op->c, KILN_MAX_RANK, &op->n_c, key);
        else if (!strcmp(key, "rhs_dilate"))
            ok = imp_int_list(L, '[', op->sizes, KILN_MAX_RANK, &op->n_sizes, key);
        else if (!strcmp(key, "pad")) {
            int k = 0;
            ok = imp_expect(L, '[');
            if (ok && !imp_accept(L, ']')) {
                do {
                    int64_t p[2];
                    int np;
                    if (k == KILN_MAX_RANK)
                        return imp_fail(L, "padding of more than %d axes", KILN_MAX_RANK);
                    if (!imp_int_list(L, '[', p, 2, &np, "a padding pair")) return false;
                    if (np != 2) return imp_fail(L, "a padding pair of %d values", np);
                    op->pad_lo[k] = p[0], op->pad_hi[k] = p[1], k++;
                } while (imp_accept(L, ','));
                ok = imp_expect(L, ']');
            }
        } else if (!strcmp(key, "reverse")) {
            imp_mark m = imp_mark_here(L);
            ok = imp_skip_value(L, false);
            for (size_t i = m.pos; ok && i + 4 <= L->pos; i++)
                if (!memcmp(L->src + i, "true", 4)) op->conv_reversed = true;
        } else {
            ok = imp_skip_value(L, false);
        }
        if (!ok) return false;
    } while (imp_accept(L, ','));
    return imp_expect(L, '}');
}

/* #stablehlo.gather<a = [..], b = [..], index_vector_dim = 1> and its kin. MLIR leaves out
 * a field at its default, and StableHLO's index_vector_dim defaults to 0 (not HLO's
 * implicit trailing 1): `x.at[2, 3].add(1.)` scatters with indices i32[2] and no
 * index_vector_dim. */
static bool dnums(imp_lex *L, imp_op *op) {
    char w[IMP_MAX_NAME];
    if (!imp_ident(L, w, ".", "a dimension-numbers attribute")) return false;
    if (!strcmp(w, "stablehlo.gather") || !strcmp(w, "stablehlo.scatter"))
        op->index_vector_dim = 0, op->has_index_vector_dim = true;
    if (!imp_expect(L, '<')) return false;
    if (imp_accept(L, '>')) return true;
    do {
        char name[IMP_MAX_NAME];
        if (!imp_ident(L, name, NULL, "a field name") || !imp_expect(L, '=') ||
            !attribute(L, op, name, false))
            return false;
    } while (imp_accept(L, ','));
    return imp_expect(L, '>');
}

static bool attribute(imp_lex *L, imp_op *op, const char *name, bool pretty) {
    int *n = NULL;
    int64_t v[KILN_MAX_RANK];
    int k = 0;
    imp_skip(L);
    if (imp_peek(L) == '#') {
        imp_advance(L, 1);
        imp_mark m = imp_mark_here(L);
        char w[IMP_MAX_NAME];
        if (!imp_ident(L, w, ".", "an attribute")) return false;
        if (!strcmp(w, "stablehlo.conv"))
            return imp_expect(L, '<') && conv_dnums(L, op) && imp_expect(L, '>');
        if (!strcmp(w, "stablehlo.gather") || !strcmp(w, "stablehlo.scatter") ||
            !strcmp(w, "stablehlo.dot")) {
            imp_go(L, m);
            return dnums(L, op);
        }
        if (!strcmp(w, "stablehlo") && imp_accept(L, '<')) {
            char kind[IMP_MAX_NAME];
            if (!imp_ident(L, kind, NULL, "an enum")) return false;
            if (!strcmp(kind, "comparison_direction") && !direction(L, op)) return false;
            if (!strcmp(kind, "comparison_type")) {
                char w2[IMP_MAX_NAME];
                if (!imp_ident(L, w2, NULL, "a comparison type")) return false;
                op->cmp_typed = true, op->cmp_unsigned = !strcmp(w2, "UNSIGNED");
            }
            if (!strcmp(kind, "transpose") && !imp_transpose_word(L, op)) return false;
            return imp_skip_value(L, false) && imp_expect(L, '>');
        }
        return imp_skip_value(L, pretty);
    }
    bool *flag = !strcmp(name, "lower")           ? &op->lower
                 : !strcmp(name, "left_side")     ? &op->left_side
                 : !strcmp(name, "unit_diagonal") ? &op->unit_diagonal
                                                  : NULL;
    if (flag) { /* cholesky's and triangular_solve's */
        char w[IMP_MAX_NAME];
        if (!imp_ident(L, w, NULL, "true or false")) return false;
        if (strcmp(w, "true") && strcmp(w, "false"))
            return imp_fail(L, "%s = %s, not true or false", name, w);
        *flag = !strcmp(w, "true");
        return true;
    }
    if ((!strcmp(name, "mhlo.backend_config") || !strcmp(name, "backend_config")) &&
        imp_peek(L) == '{') /* a custom call's, a dictionary (a string is skipped) */
        return imp_backend_config(L, op);
    int64_t *dst = list_field(op, name, &n);
    if (dst) {
        if (!int_values(L, v, &k, name, pretty)) return false;
        if (!strcmp(name, "padding")) return true;
        memcpy(dst, v, (size_t)k * sizeof *v);
        *n = k;
        return true;
    }
    if (!strcmp(name, "index_vector_dim")) {
        if (!int_values(L, v, &k, name, pretty) || k != 1)
            return L->status ? false : imp_fail(L, "index_vector_dim");
        op->index_vector_dim = v[0], op->has_index_vector_dim = true;
        return true;
    }
    if (!strcmp(name, "padding")) { /* reduce_window: dense<[[lo, hi], ...]> */
        if (!imp_expect_word(L, "dense") || !imp_expect(L, '<')) return false;
        imp_type t, i64 = {.dtype = KILN_DTYPE_I64};
        dvec d = {.item = sizeof(int64_t)};
        bool ok = dense_values(L, &i64, &d) && imp_expect(L, '>') && imp_expect(L, ':') &&
                  tensor_type(L, &t);
        const int64_t *pad = (const int64_t *)(void *)d.b;
        /* dense<0> : tensor<4x2xi64>: a splat, one value for every axis */
        bool splat = ok && d.n == 1 && t.rank == 2 && t.dims[1] == 2;
        int64_t n_pad = splat ? 2 * t.dims[0] : d.n;
        if (ok && (n_pad % 2 || n_pad / 2 > KILN_MAX_RANK))
            ok = imp_fail(L, "padding of %lld values", (long long)n_pad);
        for (int64_t i = 0; ok && i < n_pad / 2; i++)
            op->pad_lo[i] = pad[splat ? 0 : 2 * i], op->pad_hi[i] = pad[splat ? 0 : 2 * i + 1];
        host_free(L->ctx, d.b, (size_t)d.cap * d.item);
        return ok;
    }
    int *idst = dnum_field(op, name, &n);
    if (idst) {
        if (!int_values(L, v, &k, name, pretty)) return false;
        for (int i = 0; i < k; i++) idst[i] = (int)v[i];
        if (n) *n = k;
        if (!strcmp(name, "operand_batching_dims")) { /* scatter's spelling too */
            op->scatter.n_operand_batching_dims = k;
            for (int i = 0; i < k; i++) op->scatter.operand_batching_dims[i] = (int)v[i];
        }
        return true;
    }
    if (!strcmp(name, "comparison_direction")) return attribute(L, op, "", pretty);
    if (!strcmp(name, "feature_group_count") || !strcmp(name, "batch_group_count")) {
        if (!int_values(L, v, &k, name, pretty) || k != 1)
            return L->status ? false : imp_fail(L, "%s", name);
        *(!strcmp(name, "feature_group_count") ? &op->conv.feature_group_count
                                               : &op->conv.batch_group_count) = v[0];
        return true;
    }
    if (!strcmp(name, "window_reversal")) { /* array<i1: false, true> */
        imp_mark m = imp_mark_here(L);
        if (!imp_skip_value(L, pretty)) return false;
        for (size_t i = m.pos; i + 4 <= L->pos; i++)
            if (!memcmp(L->src + i, "true", 4)) op->conv_reversed = true;
        return true;
    }
    return imp_skip_value(L, pretty);
}

/* "[1] x [0]" of dot_general's pretty form. */
static bool dim_pair(imp_lex *L, int *n, int *a, int *b) {
    int64_t x[KILN_MAX_RANK], y[KILN_MAX_RANK];
    int nx, ny;
    if (!imp_int_list(L, '[', x, KILN_MAX_RANK, &nx, "dimensions") || !imp_expect_word(L, "x") ||
        !imp_int_list(L, '[', y, KILN_MAX_RANK, &ny, "dimensions"))
        return false;
    if (nx != ny) return imp_fail(L, "dimension lists of %d and %d entries", nx, ny);
    for (int i = 0; i < nx; i++) a[i] = (int)x[i], b[i] = (int)y[i];
    *n = nx;
    return true;
}

/* ", name = value" pairs after a pretty op's operands (and a compare's type word). */
static bool pretty_attr(imp_lex *L, imp_op *op) {
    char name[IMP_MAX_NAME];
    if (!imp_ident(L, name, NULL, "an attribute")) return false;
    if (!imp_accept(L, '=')) { /* compare's FLOAT / SIGNED: the dtype says it; not UNSIGNED */
        op->cmp_typed = true, op->cmp_unsigned = !strcmp(name, "UNSIGNED");
        return true;
    }
    if (!strcmp(name, "contracting_dims"))
        return dim_pair(L, &op->dot.n_contract, op->dot.lhs_contract, op->dot.rhs_contract);
    if (!strcmp(name, "batching_dims"))
        return dim_pair(L, &op->dot.n_batch, op->dot.lhs_batch, op->dot.rhs_batch);
    return attribute(L, op, name, true);
}

/* <{a = .., b = ..}> or {a = .., b = ..}: a generic op's properties and attributes. */
static bool attr_dict(imp_lex *L, imp_op *op) {
    if (!imp_expect(L, '{')) return false;
    if (imp_accept(L, '}')) return true;
    do {
        char name[IMP_MAX_NAME];
        if (!imp_ident(L, name, ".", "an attribute name")) return false;
        if (imp_accept(L, '=') && !attribute(L, op, name, false)) return false;
    } while (imp_accept(L, ','));
    return imp_expect(L, '}');
}

/* --------------------------------------------------------- region bodies ---- */

static const struct {
    const char *op;
    imp_combine k;
} combines[] = {{"stablehlo.add", IMP_COMBINE_ADD},     {"stablehlo.multiply", IMP_COMBINE_MUL},
                {"stablehlo.maximum", IMP_COMBINE_MAX}, {"stablehlo.minimum", IMP_COMBINE_MIN},
                {"stablehlo.and", IMP_COMBINE_AND},     {"stablehlo.or", IMP_COMBINE_OR}};

static imp_combine combine_named(const char *op) {
    for (size_t i = 0; i < sizeof combines / sizeof combines[0]; i++)
        if (!strcmp(op, combines[i].op)) return combines[i].k;
    return IMP_COMBINE_NONE;
}

/* A %name's extent at the cursor. */
static bool ref(imp_lex *L, const char **s, size_t *n) {
    imp_skip(L);
    if (imp_peek(L) != '%') return imp_expected(L, "a %name");
    *s = L->src + L->pos;
    imp_advance(L, 1);
    while (imp_is_ident_char(imp_peek(L)) || imp_peek(L) == '.' || imp_peek(L) == '$' ||
           imp_peek(L) == '-')
        imp_advance(L, 1);
    *n = (size_t)(L->src + L->pos - *s);
    return true;
}

static bool same_ref(const char *a, size_t na, const char *b, size_t nb) {
    return na == nb && !memcmp(a, b, na);
}

/* The block of a reduction's or scatter's body, given its two arguments: one op over both
 * (either order) returned, or the second argument returned (a scatter's update). Anything
 * else is IMP_COMBINE_NONE; the caller names the op. */
static bool body_combine(imp_lex *L, const char *a, size_t na, const char *b, size_t nb,
                         imp_combine *k) {
    *k = IMP_COMBINE_NONE;
    const char *r = NULL, *x, *y, *ret;
    size_t nr = 0, nx, ny, nret;
    char name[IMP_MAX_NAME];
    imp_skip(L);
    if (imp_peek(L) == '%') {
        if (!ref(L, &r, &nr) || !imp_expect(L, '=') || !imp_ident(L, name, ".", "an op"))
            return false;
        if (!ref(L, &x, &nx) || !imp_expect(L, ',') || !ref(L, &y, &ny)) return false;
        imp_op dummy = {0};
        if (!signature(L, &dummy)) return false;
        bool args = (same_ref(x, nx, a, na) && same_ref(y, ny, b, nb)) ||
                    (same_ref(x, nx, b, nb) && same_ref(y, ny, a, na));
        if (args) *k = combine_named(name);
    }
    if (!imp_expect_word(L, "stablehlo") || !imp_expect(L, '.') || !imp_expect_word(L, "return") ||
        !ref(L, &ret, &nret))
        return false;
    imp_op dummy = {0};
    if (!signature(L, &dummy)) return false;
    if (!r)
        *k = same_ref(ret, nret, b, nb) ? IMP_COMBINE_SET : IMP_COMBINE_NONE;
    else if (!same_ref(ret, nret, r, nr))
        *k = IMP_COMBINE_NONE;
    return true;
}

/* { ^bb0(%a: T, %b: T): ... } at the cursor: the body's combine kind. A body of more than
 * one op leaves the cursor past the region with IMP_COMBINE_NONE. */
static bool one_region_combine(imp_lex *L, imp_combine *k) {
    imp_skip(L);
    imp_mark m = imp_mark_here(L);
    if (!imp_skip_group(L)) return false; /* the { ... } */
    imp_mark end = imp_mark_here(L);
    imp_go(L, m);
    imp_expect(L, '{');
    const char *a, *b;
    size_t na, nb;
    imp_type t;
    bool ok = imp_expect(L, '^') && imp_ident(L, (char[IMP_MAX_NAME]){0}, NULL, "a block name") &&
              imp_expect(L, '(') && ref(L, &a, &na) && imp_expect(L, ':') && tensor_type(L, &t) &&
              imp_expect(L, ',') && ref(L, &b, &nb) && imp_expect(L, ':') && tensor_type(L, &t) &&
              imp_expect(L, ')') && imp_expect(L, ':');
    if (ok) {
        imp_mark body = imp_mark_here(L);
        kiln_status before = L->status;
        ok = body_combine(L, a, na, b, nb, k) && imp_accept(L, '}');
        if (!ok && !before) { /* a longer body: not one kiln reduces with */
            L->status = KILN_STATUS_OK;
            L->msg[0] = 0;
            *k = IMP_COMBINE_NONE;
            imp_go(L, body);
            ok = true;
        }
    }
    if (!ok) return false;
    imp_go(L, end);
    return true;
}

/* ({ ^bb0(%a: T, %b: T): ... }) of the generic form: the body's combine kind. */
static bool region_combine(imp_lex *L, imp_combine *k) {
    return imp_expect(L, '(') && one_region_combine(L, k) && imp_expect(L, ')');
}

/* The index in b of the value named s (n bytes) among names; -1 when not there. */
static int body_ref(imp_lex *L, const imp_body *b, const char *const *names, const size_t *lens) {
    const char *s;
    size_t n;
    if (!ref(L, &s, &n)) return -1;
    for (int i = b->n - 1; i >= 0; i--)
        if (same_ref(names[i], lens[i], s, n)) return i;
    return -1;
}

/* The ops of a comparator's block after "^bb0(": its arguments, then constant, compare,
 * select, and, or, up to its return. false on anything else. */
static bool comparator_ops(imp_lex *L, imp_body *b) {
    const char *names[IMP_MAX_BODY];
    size_t lens[IMP_MAX_BODY];
    imp_type t;
    int n_params = 0;
    if (!imp_accept(L, ')')) {
        do {
            const char *s;
            size_t n;
            if (b->n == IMP_MAX_BODY || !ref(L, &s, &n) || !imp_expect(L, ':') ||
                !tensor_type(L, &t))
                return false;
            names[b->n] = s, lens[b->n] = n;
            imp_body_add(b, (imp_bop){.kind = IMP_B_PARAM, .param = n_params++});
        } while (imp_accept(L, ','));
        if (!imp_expect(L, ')')) return false;
    }
    if (!imp_expect(L, ':')) return false;
    for (;;) {
        imp_skip(L);
        const char *rn = NULL;
        size_t rl = 0;
        char name[IMP_MAX_NAME];
        if (imp_peek(L) == '%' && (!ref(L, &rn, &rl) || !imp_expect(L, '='))) return false;
        if (!imp_ident(L, name, ".", "an op name")) return false;
        imp_op sig = {0};
        if (!rn) {
            if (strcmp(name, "stablehlo.return")) return false;
            b->ret = body_ref(L, b, names, lens);
            return b->ret >= 0 && signature(L, &sig) && imp_expect(L, '}');
        }
        imp_bop o = {0};
        int n_in = 0;
        if (!strcmp(name, "stablehlo.constant")) {
            imp_num x;
            o.kind = IMP_B_CONST;
            if (!imp_expect_word(L, "dense") || !imp_expect(L, '<') ||
                !imp_number(L, &x, "a constant") || !imp_expect(L, '>') || !imp_expect(L, ':') ||
                !tensor_type(L, &t) || t.rank != 0)
                return false;
            o.value = x.value;
            if (x.kind == IMP_NUM_BITS && !bits_value(L, t.dtype, x.raw, &o.value)) return false;
        } else if (!strcmp(name, "stablehlo.compare")) {
            imp_op d = {0};
            char ty[IMP_MAX_NAME];
            o.kind = IMP_B_COMPARE, n_in = 2;
            if (!direction(L, &d) || !imp_expect(L, ',')) return false;
            o.cmp = d.cmp;
            for (int i = 0; i < 2; i++)
                if ((i && !imp_expect(L, ',')) || (o.in[i] = body_ref(L, b, names, lens)) < 0)
                    return false;
            if (imp_accept(L, ',')) {
                if (!imp_ident(L, ty, NULL, "a compare type")) return false;
                o.totalorder = !strcmp(ty, "TOTALORDER");
                o.uns = !strcmp(ty, "UNSIGNED");
            }
            if (!signature(L, &sig)) return false;
        } else {
            o.kind = !strcmp(name, "stablehlo.select") ? IMP_B_SELECT
                     : !strcmp(name, "stablehlo.and")  ? IMP_B_AND
                     : !strcmp(name, "stablehlo.or")   ? IMP_B_OR
                                                       : IMP_B_OTHER;
            if (o.kind == IMP_B_OTHER) return false;
            n_in = o.kind == IMP_B_SELECT ? 3 : 2;
            for (int i = 0; i < n_in; i++)
                if ((i && !imp_expect(L, ',')) || (o.in[i] = body_ref(L, b, names, lens)) < 0)
                    return false;
            if (!signature(L, &sig)) return false;
        }
        o.n_in = n_in;
        if (b->n == IMP_MAX_BODY) return false;
        names[b->n] = rn, lens[b->n] = rl;
        imp_body_add(b, o);
    }
}

/* { ^bb0(%a: T, %b: T, ...): ... } at the cursor into b (body.c recognises it); a body
 * this reader does not follow leaves b unreadable, for the op's mapping to refuse by name.
 * The cursor ends past the region. */
static bool comparator(imp_lex *L, imp_body *b) {
    memset(b, 0, sizeof *b);
    b->ret = -1;
    imp_skip(L);
    imp_mark m = imp_mark_here(L);
    if (imp_peek(L) != '{') return imp_expected(L, "a comparator's region");
    if (!imp_skip_group(L)) return false;
    imp_mark end = imp_mark_here(L);
    imp_go(L, m);
    bool ok = imp_expect(L, '{') && imp_expect(L, '^') &&
              imp_ident(L, (char[IMP_MAX_NAME]){0}, NULL, "a block name") && imp_expect(L, '(') &&
              comparator_ops(L, b);
    if (!ok) {
        L->status = KILN_STATUS_OK; /* not followed: unreadable, refused by the mapping */
        L->msg[0] = 0;
        b->unreadable = true;
    }
    imp_go(L, end);
    return true;
}

/* sort's ({comparator}) and select_and_scatter's ({select}, {scatter}). */
static bool comparator_regions(shlo *P, imp_op *op) {
    imp_lex *L = P->L;
    op->body = &P->body;
    if (!imp_expect(L, '(') || !comparator(L, &P->body)) return false;
    if (!strcmp(op->name, "select_and_scatter") &&
        (!imp_expect(L, ',') || !one_region_combine(L, &op->combine)))
        return false;
    return imp_expect(L, ')');
}

/* ---------------------------------------------------------- control flow ---- */

/* A region to read from inside a kiln_fn: where it starts, the scope around it and the
 * names its arguments take (a while's iterArgs; a case's branches take none). */
typedef struct region {
    shlo *P;
    imp_scope *outer;
    imp_mark at;
    int n_names;
    const char *names[IMP_MAX_OPERANDS];
    size_t lens[IMP_MAX_OPERANDS];
} region;

/* Reads "{ ... return }" at r->at on g, the kiln_fn's arguments bound to r's names. */
static int region_fn(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    region *r = user;
    imp_lex *L = r->P->L;
    if (L->status) return -1;
    if (++L->depth > IMP_MAX_DEPTH) {
        imp_fail(L, "regions and calls nested more than %d deep", IMP_MAX_DEPTH);
        L->depth--;
        return -1;
    }
    imp_mark back = imp_mark_here(L);
    imp_go(L, r->at);
    imp_scope s = {.parent = r->outer, .g = g};
    for (int i = 0; i < n_in && i < r->n_names; i++)
        imp_scope_bind(L, &s, r->names[i], r->lens[i], 1, &in[i]);
    int n = 0;
    bool ok = imp_expect(L, '{') && block(r->P, &s, &n, outs, KILN_MAX_OUTPUTS);
    imp_scope_free(L, &s);
    imp_go(L, back);
    L->depth--;
    return ok ? n : -1;
}

/* The two regions of a while: kiln_while_loop passes one user pointer to both. */
typedef struct while_regions {
    region cond, body;
} while_regions;

static int while_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    return region_fn(g, n_in, in, &((while_regions *)user)->cond, outs);
}

static int while_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    return region_fn(g, n_in, in, &((while_regions *)user)->body, outs);
}

/* After a control builder: its error, which may be the import's own from inside a region
 * (kept: it has the line of the op at fault), else the builder's at the op. */
static bool control_done(imp_lex *L, kiln_graph *g, const imp_op *op) {
    if (L->status) return false;
    return imp_check_graph(L, g, op->at, op->spell);
}

/* stablehlo.while(%iterArg = %init, ...) : types cond { ... } do { ... } */
static bool while_op(shlo *P, imp_scope *s, imp_op *op, kiln_value *outs) {
    imp_lex *L = P->L;
    while_regions *w = host_alloc(L->ctx, sizeof *w); /* large: kept off the stack */
    if (!w) return imp_oom(L, "kiln import (while)", sizeof *w);
    memset(w, 0, sizeof *w);
    region *cr = &w->cond;
    cr->P = P, cr->outer = s;
    kiln_value init[IMP_MAX_OPERANDS];
    int n = 0;
    bool ok = imp_expect(L, '(');
    if (ok && !imp_accept(L, ')')) {
        do {
            if (n == KILN_MAX_OUTPUTS) {
                ok = imp_fail(L, "a while of more than %d carries", KILN_MAX_OUTPUTS);
                break;
            }
            ok = ref(L, &cr->names[n], &cr->lens[n]) && imp_expect(L, '=') &&
                 operand(L, s, &init[n], NULL);
            n++;
        } while (ok && imp_accept(L, ','));
        ok = ok && imp_expect(L, ')');
    }
    cr->n_names = n;
    ok =
        ok && imp_expect(L, ':') && type_list(L, op->out, &op->n_out) && imp_expect_word(L, "cond");
    imp_skip(L);
    cr->at = imp_mark_here(L);
    ok = ok && imp_skip_group(L) && imp_expect_word(L, "do");
    w->body = *cr;
    imp_skip(L);
    w->body.at = imp_mark_here(L);
    ok = ok && imp_skip_group(L);
    imp_mark after = imp_mark_here(L);
    if (ok) {
        kiln_while_loop(s->g, while_cond, while_body, w, n, init, outs);
        ok = control_done(L, s->g, op);
    }
    host_free(L->ctx, w, sizeof *w);
    imp_go(L, after);
    return ok;
}

/* The branches of a case, each a kiln_fn of kiln_switch's: they take no arguments (a
 * branch reads outer values, which region_fn captures). */
typedef struct case_regions {
    region r[KILN_MAX_OUTPUTS];
} case_regions;

#define CASE_FN(k)                                                                                 \
    static int case_##k(kiln_graph *g, int n_in, const kiln_value *in, void *user,                 \
                        kiln_value *outs) {                                                        \
        return region_fn(g, n_in, in, &((case_regions *)user)->r[k], outs);                        \
    }
CASE_FN(0)
CASE_FN(1)
CASE_FN(2)
CASE_FN(3)
CASE_FN(4)
CASE_FN(5)
CASE_FN(6)
CASE_FN(7)
CASE_FN(8)
CASE_FN(9)
CASE_FN(10)
CASE_FN(11)
CASE_FN(12)
CASE_FN(13)
CASE_FN(14)
CASE_FN(15)
#define CASE_MAX 16
static const kiln_fn case_fns[CASE_MAX] = {case_0,  case_1,  case_2,  case_3, case_4,  case_5,
                                           case_6,  case_7,  case_8,  case_9, case_10, case_11,
                                           case_12, case_13, case_14, case_15};

/* "stablehlo.case"(%index) ({...}, {...}) : (tensor<i32>) -> types. An index outside
 * [0, n) takes the last branch (StableHLO's rule; kiln_switch clamps, which differs for a
 * negative index, so that one is mapped to n - 1 first). */
static bool case_op(shlo *P, imp_scope *s, imp_op *op, kiln_value *outs) {
    imp_lex *L = P->L;
    if (op->n_in != 1)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "%s takes 1 operand, not %d",
                           op->spell, op->n_in);
    case_regions *c = host_alloc(L->ctx, sizeof *c);
    if (!c) return imp_oom(L, "kiln import (case)", sizeof *c);
    int n = 0;
    bool ok = imp_expect(L, '(');
    do {
        if (n == CASE_MAX) {
            ok = imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "%s of more than %d branches",
                             op->spell, CASE_MAX);
            break;
        }
        c->r[n] = (region){.P = P, .outer = s};
        imp_skip(L);
        c->r[n++].at = imp_mark_here(L);
        ok = ok && imp_skip_group(L);
    } while (ok && imp_accept(L, ','));
    ok = ok && imp_expect(L, ')') && signature(L, op);
    imp_mark after = imp_mark_here(L);
    if (ok) {
        kiln_graph *g = s->g;
        kiln_value idx = op->in[0];
        kiln_dtype it = imp_value_type(g, idx).dtype;
        kiln_value last = kiln_scalar(g, it, n - 1);
        idx = kiln_select(g, kiln_compare(g, idx, kiln_scalar(g, it, 0), KILN_CMP_LT), last, idx);
        int n_outs = 0;
        kiln_switch(g, idx, n, case_fns, c, 0, NULL, &n_outs, outs);
        ok = control_done(L, g, op);
    }
    host_free(L->ctx, c, sizeof *c);
    imp_go(L, after);
    return ok;
}

/* ----------------------------------------------------------------- calls ---- */

static const func *find_func(shlo *P, const char *name, size_t len) {
    for (uint32_t i = 0; i < P->n_fns; i++)
        if (P->fns[i].len == len && !memcmp(P->fns[i].name, name, len)) return &P->fns[i];
    return NULL;
}

/* "(%arg0: T {attrs}, ...) -> results attributes {...} {" of a function at the cursor:
 * binds each argument's name to args[i] (checking its type) when args is not NULL, else
 * makes a parameter of g for each (the entry function). *n: the count. */
static bool func_head(imp_lex *L, imp_scope *s, const kiln_value *args, int n_args, int *n) {
    *n = 0;
    if (!imp_expect(L, '(')) return false;
    if (!imp_accept(L, ')')) {
        do {
            const char *nm;
            size_t len;
            imp_type t;
            imp_loc at = imp_here(L);
            if (!ref(L, &nm, &len) || !imp_expect(L, ':') || !tensor_type(L, &t)) return false;
            imp_skip(L);
            if (imp_peek(L) == '{' && !imp_skip_group(L)) return false; /* tf.aliasing_output ... */
            kiln_value v;
            if (args) {
                if (*n >= n_args)
                    return imp_fail_at(
                        L, at, KILN_STATUS_INVALID_ARGUMENT,
                        "the call passes %d operands, fewer than this function takes", n_args);
                v = args[*n];
                imp_type have = imp_value_type(s->g, v);
                char a[96], b[96];
                imp_type_str(&have, a, sizeof a);
                imp_type_str(&t, b, sizeof b);
                if (strcmp(a, b))
                    return imp_fail_at(L, at, KILN_STATUS_SHAPE,
                                       "argument %.*s is %s, but the call passes %s", (int)len, nm,
                                       b, a);
            } else {
                char pname[32];
                snprintf(pname, sizeof pname, "arg%d", *n);
                v = kiln_parameter(s->g, pname, t.dtype, t.rank, t.dims);
                if (!imp_check_graph(L, s->g, at, "a function argument")) return false;
            }
            if (!imp_scope_bind(L, s, nm, len, 1, &v)) return false;
            (*n)++;
        } while (imp_accept(L, ','));
        if (!imp_expect(L, ')')) return false;
    }
    if (args && *n != n_args)
        return imp_fail(L, "the call passes %d operands, but the function takes %d", n_args, *n);
    imp_skip(L);
    if (imp_peek(L) == '-' && imp_peek_at(L, 1) == '>') {
        imp_advance(L, 2);
        imp_type *ts = host_alloc(L->ctx, IMP_MAX_OPERANDS * sizeof *ts);
        int k;
        bool ok = ts ? type_list(L, ts, &k) : imp_oom(L, "kiln import", sizeof *ts);
        host_free(L->ctx, ts, IMP_MAX_OPERANDS * sizeof *ts);
        if (!ok) return false;
    }
    if (imp_accept_word(L, "attributes") && !imp_skip_group(L)) return false;
    return imp_expect(L, '{');
}

/* call @f(%a, %b) : (...) -> (...): f's body read again on this graph, its arguments the
 * call's operands. */
static bool call_op(shlo *P, imp_scope *s, imp_op *op, kiln_value *outs, int *n_outs) {
    imp_lex *L = P->L;
    imp_skip(L);
    if (!imp_expect(L, '@')) return false;
    char name[IMP_MAX_NAME];
    if (!imp_ident(L, name, ".$-", "a function name")) return false;
    const func *f = find_func(P, name, strlen(name));
    if (!f)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "call of @%s, which the module does not define", name);
    /* a call passes a function's whole argument list: more than an op's operands */
    kiln_value *args = host_alloc(L->ctx, IMP_MAX_VALUES * sizeof *args);
    if (!args) return imp_oom(L, "kiln import (call)", IMP_MAX_VALUES * sizeof *args);
    int n_args = 0;
    bool ok = imp_expect(L, '(');
    if (ok && !imp_accept(L, ')')) {
        do {
            if (n_args == IMP_MAX_VALUES) {
                ok = imp_fail(L, "a call of more than %d operands", IMP_MAX_VALUES);
                break;
            }
            ok = operand(L, s, &args[n_args++], NULL);
        } while (ok && imp_accept(L, ','));
        ok = ok && imp_expect(L, ')');
    }
    ok = ok && signature(L, op);
    if (ok && ++L->depth > IMP_MAX_DEPTH) {
        L->depth--;
        ok = imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                         "calls and regions nested more than %d deep", IMP_MAX_DEPTH);
    }
    if (ok) {
        imp_mark back = imp_mark_here(L);
        imp_go(L, (imp_mark){f->pos, f->line_start, f->line});
        imp_scope fs = {.g = s->g};
        int n;
        ok = func_head(L, &fs, args, n_args, &n) && block(P, &fs, n_outs, outs, IMP_MAX_VALUES);
        imp_scope_free(L, &fs);
        imp_go(L, back);
        L->depth--;
    }
    host_free(L->ctx, args, IMP_MAX_VALUES * sizeof *args);
    if (ok && *n_outs != op->n_out)
        ok = imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                         "@%s returns %d values, but the call's type has %d", name, *n_outs,
                         op->n_out);
    return ok;
}

/* ------------------------------------------------------------------- ops ---- */

/* The body of a reduce of two operands, "{ %2 = stablehlo.compare GT, ... return ... }" at
 * the cursor, skipped: which of jnp.argmax's and argmin's it is (imp_arg_body), from
 * its ops' names and its compares' directions. */
static imp_combine arg_body(imp_lex *L) {
    imp_skip(L);
    imp_mark m = imp_mark_here(L);
    if (!imp_skip_group(L)) return IMP_COMBINE_NONE;
    const char *p = L->src + m.pos, *end = L->src + L->pos;
    static const char dialect[] = "stablehlo.";
    char ops[16][IMP_MAX_NAME];
    const char *list[16];
    int n = 0;
    for (p = p + 1; p < end && n < 16; p++) {
        if ((size_t)(end - p) < sizeof dialect || memcmp(p, dialect, sizeof dialect - 1)) continue;
        p += sizeof dialect - 1;
        size_t k = 0;
        while (p < end && imp_is_ident_char(*p) && k + 4 < sizeof ops[n]) ops[n][k++] = *p++;
        ops[n][k] = 0;
        if (!strcmp(ops[n], "return")) break;
        if (!strcmp(ops[n], "compare")) { /* "compare  GT," */
            while (p < end && *p == ' ') p++;
            for (int j = 0; j < 2 && p < end && *p >= 'A' && *p <= 'Z'; j++) {
                if (!j) ops[n][k++] = ' ';
                ops[n][k++] = *p++;
            }
            ops[n][k] = 0;
        }
        list[n] = ops[n];
        n++;
    }
    return n < 16 ? imp_arg_body(n, list) : IMP_COMBINE_NONE;
}

/* After "across dimensions = [..] : sig" of a reduce of two operands: "reducer(%a: T, %c:
 * T) (%b: U, %d: U) { body }", the body jnp.argmax's or argmin's; the operands put in
 * XLA's order (x, indices, x's init, the indices' init). */
static bool arg_reduce_pretty(imp_lex *L, imp_op *op) {
    if (!imp_expect_word(L, "across") || !imp_expect_word(L, "dimensions") || !imp_expect(L, '=') ||
        !int_values(L, op->dims, &op->n_dims, "dimensions", true) || !signature(L, op) ||
        !imp_expect_word(L, "reducer"))
        return false;
    for (int pair = 0; pair < 2; pair++) {
        imp_skip(L);
        if (!imp_skip_group(L)) return false; /* (%a: T, %c: T) */
    }
    op->combine = arg_body(L);
    if (L->status) return false;
    if (op->combine == IMP_COMBINE_NONE)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s of 2 operands whose body is not jnp.argmax's or argmin's: kiln "
                           "reduces one operand at a time",
                           op->spell);
    kiln_value v = op->in[1]; /* (x, init_x, i, init_i) -> (x, i, init_x, init_i) */
    bool is_const = op->in_const[1];
    double value = op->in_value[1];
    op->in[1] = op->in[2], op->in_const[1] = op->in_const[2], op->in_value[1] = op->in_value[2];
    op->in[2] = v, op->in_const[2] = is_const, op->in_value[2] = value;
    return true;
}

/* stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : sig, or
 * with "reducer(%a: T, %b: T) { body }" after the signature. */
static bool reduce_pretty(shlo *P, imp_scope *s, imp_op *op) {
    imp_lex *L = P->L;
    int pairs = 0;
    do {
        if (!imp_expect(L, '(') || !add_operand(L, s, op) || !imp_expect_word(L, "init") ||
            !imp_expect(L, ':') || !add_operand(L, s, op) || !imp_expect(L, ')'))
            return false;
        pairs++;
    } while (imp_accept(L, ','));
    if (pairs == 2) return arg_reduce_pretty(L, op);
    if (pairs != 1)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s of %d operands: kiln reduces one at a time, or two as "
                           "jnp.argmax / argmin do",
                           op->spell, pairs);
    if (imp_accept_word(L, "applies")) {
        char name[IMP_MAX_NAME];
        if (!imp_ident(L, name, ".", "the reduction's op")) return false;
        op->combine = combine_named(name);
    }
    if (!imp_expect_word(L, "across") || !imp_expect_word(L, "dimensions") || !imp_expect(L, '=') ||
        !int_values(L, op->dims, &op->n_dims, "dimensions", true) || !signature(L, op))
        return false;
    if (imp_accept_word(L, "reducer")) {
        const char *a, *b;
        size_t na, nb;
        imp_type t;
        if (!imp_expect(L, '(') || !ref(L, &a, &na) || !imp_expect(L, ':') || !tensor_type(L, &t) ||
            !imp_expect(L, ',') || !ref(L, &b, &nb) || !imp_expect(L, ':') || !tensor_type(L, &t) ||
            !imp_expect(L, ')'))
            return false;
        imp_skip(L);
        imp_mark m = imp_mark_here(L);
        if (!imp_skip_group(L)) return false;
        imp_mark end = imp_mark_here(L);
        imp_go(L, m);
        imp_expect(L, '{');
        if (!body_combine(L, a, na, b, nb, &op->combine) || !imp_accept(L, '}')) {
            L->status = KILN_STATUS_OK; /* a longer body: refused by imp_reduce, by name */
            L->msg[0] = 0;
            op->combine = IMP_COMBINE_NONE;
        }
        imp_go(L, end);
    }
    return true;
}

/* "[0:4, 1:3:2]" after a pretty slice's operand. */
static bool slice_ranges(imp_lex *L, imp_op *op) {
    if (!imp_expect(L, '[')) return false;
    if (imp_accept(L, ']')) return true;
    do {
        int k = op->n_a;
        if (k == KILN_MAX_RANK) return imp_fail(L, "a slice of more than %d axes", KILN_MAX_RANK);
        if (!imp_int(L, &op->a[k], "a start") || !imp_expect(L, ':') ||
            !imp_int(L, &op->b[k], "a limit"))
            return false;
        op->c[k] = 1;
        if (imp_accept(L, ':') && !imp_int(L, &op->c[k], "a stride")) return false;
        op->n_a = op->n_b = op->n_c = k + 1;
    } while (imp_accept(L, ','));
    return imp_expect(L, ']');
}

/* The pretty form: [DIRECTION,] operands [slice ranges] [, name = value ...] : sig. */
static bool pretty_op(shlo *P, imp_scope *s, imp_op *op) {
    imp_lex *L = P->L;
    imp_skip(L);
    if (!strcmp(op->name, "compare") && (!direction(L, op) || !imp_expect(L, ','))) return false;
    imp_skip(L);
    if (imp_peek(L) == '%') {
        do {
            imp_skip(L);
            if (imp_peek(L) != '%') {
                if (!pretty_attr(L, op)) return false;
                continue;
            }
            if (!add_operand(L, s, op)) return false;
            imp_skip(L);
            if (imp_peek(L) == '[' && !slice_ranges(L, op)) return false;
        } while (imp_accept(L, ','));
    } else if (imp_is_ident_char(imp_peek(L))) { /* iota dim = 0 */
        do {
            if (!pretty_attr(L, op)) return false;
        } while (imp_accept(L, ','));
    }
    imp_skip(L);
    if (imp_peek(L) == '{' && !attr_dict(L, op)) return false;
    return signature(L, op);
}

/* The generic form: "name"(operands) <{properties}> (regions) {attributes} : sig. */
static bool generic_op(shlo *P, imp_scope *s, imp_op *op, kiln_value *outs, int *n_outs,
                       bool *done) {
    imp_lex *L = P->L;
    if (!operand_list(L, s, op)) return false;
    imp_skip(L);
    if (imp_peek(L) == '<' && imp_peek_at(L, 1) == '{') {
        imp_advance(L, 1);
        if (!attr_dict(L, op) || !imp_expect(L, '>')) return false;
    }
    imp_skip(L);
    if (!strcmp(op->name, "case")) {
        *done = true;
        *n_outs = 0;
        if (!case_op(P, s, op, outs)) return false;
        *n_outs = op->n_out;
        return true;
    }
    bool cmp = !strcmp(op->name, "sort") || !strcmp(op->name, "select_and_scatter");
    if (imp_peek(L) == '(' && !(cmp ? comparator_regions(P, op) : region_combine(L, &op->combine)))
        return false;
    imp_skip(L);
    if (imp_peek(L) == '{' && !attr_dict(L, op)) return false;
    return signature(L, op);
}

/* stablehlo.custom_call @target(%x) {attributes} : (T) -> T: a sharding annotation is
 * the identity (shardings are ignored); LAPACK's Cholesky factor and triangular solve
 * (imp_linalg_target) are kiln's linear algebra; any other target is refused by name. */
static bool custom_call(shlo *P, imp_scope *s, imp_op *op, kiln_value *outs, int *n_outs) {
    imp_lex *L = P->L;
    char target[IMP_MAX_NAME], spell[2 * IMP_MAX_NAME];
    if (!imp_expect(L, '@') || !imp_ident(L, target, ".$-", "a custom call's target")) return false;
    bool linalg = imp_linalg_target(target);
    if (!linalg && !imp_sharding_target(target))
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s @%s: kiln has no op for this custom call (docs/import.md)",
                           op->spell, target);
    if (!operand_list(L, s, op)) return false;
    imp_skip(L);
    if (imp_peek(L) == '{' && !attr_dict(L, op)) return false;
    if (!signature(L, op)) return false;
    if (linalg) {
        const char *was = op->spell;
        snprintf(spell, sizeof spell, "%s @%s", was, target);
        op->spell = spell;
        *n_outs = op->n_out;
        bool ok = imp_linalg_call(L, s->g, op, target, outs);
        op->spell = was;
        return ok;
    }
    if (op->n_in != 1 || op->n_out != 1)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s @%s of %d operands and %d results", op->spell, target, op->n_in,
                           op->n_out);
    op->name = "optimization_barrier"; /* the identity, its type checked */
    return imp_emit(L, s->g, op, outs);
}

/* The canonical name: the dialect dropped (stablehlo.add, chlo.square -> add, square). */
static const char *canonical(const char *name) {
    if (!strncmp(name, "stablehlo.", 10)) return name + 10;
    if (!strncmp(name, "chlo.", 5)) return name + 5;
    return name;
}

/* stablehlo.constant dense<...> : T, or "stablehlo.constant"() <{value = dense<...> : T}>. */
static bool constant_op(imp_lex *L, imp_scope *s, imp_op *op, bool generic, kiln_value *out,
                        imp_entry *info) {
    if (generic) {
        char name[IMP_MAX_NAME];
        if (!imp_expect(L, '(') || !imp_expect(L, ')') || !imp_expect(L, '<') ||
            !imp_expect(L, '{') || !imp_ident(L, name, NULL, "value") || !imp_expect(L, '='))
            return false;
    }
    if (!constant(L, s, op->at, out, info)) return false;
    if (generic) {
        if (!imp_expect(L, '}') || !imp_expect(L, '>')) return false;
        imp_op sig = {0};
        return signature(L, &sig);
    }
    return true;
}

/* stablehlo.convolution(%x, %w) dim_numbers = [..]x[..]->[..], window = {...} {attrs} :
 * sig. */
static bool conv_pretty(imp_lex *L, imp_scope *s, imp_op *op) {
    if (!operand_list(L, s, op)) return false;
    while (!L->status) {
        imp_skip(L);
        if (imp_peek(L) == '{') {
            if (!attr_dict(L, op)) return false;
            continue;
        }
        if (imp_peek(L) == ':') break;
        char key[IMP_MAX_NAME];
        if (!imp_ident(L, key, NULL, "a convolution attribute") || !imp_expect(L, '='))
            return false;
        bool ok = !strcmp(key, "dim_numbers") ? conv_dnums(L, op)
                  : !strcmp(key, "window")    ? conv_window(L, op)
                                              : attribute(L, op, key, true);
        if (!ok) return false;
        imp_accept(L, ',');
    }
    return signature(L, op);
}

/* chlo.top_k(%x, k = 2) : T -> (T, U) */
static bool top_k_pretty(imp_lex *L, imp_scope *s, imp_op *op) {
    if (!imp_expect(L, '(') || !add_operand(L, s, op) || !imp_expect(L, ',') ||
        !imp_expect_word(L, "k") || !imp_expect(L, '=') || !imp_int(L, &op->k, "k") ||
        !imp_expect(L, ')'))
        return false;
    return signature(L, op);
}

/* One op after its results' names: dispatched on its name. */
static bool op_body(shlo *P, imp_scope *s, imp_op *op, bool generic, kiln_value *outs, int *n_outs,
                    imp_entry *info) {
    imp_lex *L = P->L;
    const char *n = op->name;
    *n_outs = 1;
    if (!strcmp(n, "constant")) return constant_op(L, s, op, generic, outs, info);
    if (!strcmp(op->spell, "call") || !strcmp(op->spell, "func.call"))
        return call_op(P, s, op, outs, n_outs);
    if (!strcmp(n, "while") && !generic) {
        if (!while_op(P, s, op, outs)) return false;
        *n_outs = op->n_out;
        return true;
    }
    if (!strcmp(n, "custom_call") && !generic) return custom_call(P, s, op, outs, n_outs);
    if (!strcmp(n, "sdy.sharding_constraint") && !generic) {
        /* %x <@mesh, [{"d"}, {}]> : T: the identity (shardings are ignored) */
        if (!add_operand(L, s, op) || !imp_skip_group(L) || !signature(L, op)) return false;
        op->name = "optimization_barrier";
        op->n_out = 0; /* its type is the operand's */
        return imp_emit(L, s->g, op, outs);
    }
    if (!generic && (!strcmp(n, "convolution") || !strcmp(n, "top_k"))) {
        if (!strcmp(n, "convolution") && !conv_pretty(L, s, op)) return false;
        if (!strcmp(n, "top_k") && !top_k_pretty(L, s, op)) return false;
        *n_outs = op->n_out;
        return imp_emit(L, s->g, op, outs);
    }
    bool done = false;
    bool ok = generic                ? generic_op(P, s, op, outs, n_outs, &done)
              : !strcmp(n, "reduce") ? reduce_pretty(P, s, op)
                                     : pretty_op(P, s, op);
    if (!ok || done) return ok;
    *n_outs = 1;
    if (!strcmp(n, "reduce") && op->n_in == 4) *n_outs = 2; /* jnp.argmax's (values, indices) */
    if (!strcmp(n, "sort") || !strcmp(n, "top_k")) *n_outs = op->n_out;
    if (!strcmp(n, "optimization_barrier")) { /* its types are the operands' */
        *n_outs = op->n_in;
        op->n_out = 0;
    }
    return imp_emit(L, s->g, op, outs);
}

/* "return %a, %b : T, U" (or stablehlo.return, func.return) and the block's "}". */
static bool block_return(imp_lex *L, imp_scope *s, int *n_out, kiln_value *outs, int max) {
    *n_out = 0;
    imp_skip(L);
    while (imp_peek(L) == '%') {
        if (*n_out == max) return imp_fail(L, "a return of more than %d values", max);
        if (!operand(L, s, &outs[(*n_out)++], NULL)) return false;
        if (!imp_accept(L, ',')) break;
        imp_skip(L);
    }
    if (imp_accept(L, ':')) {
        imp_type *ts = host_alloc(L->ctx, IMP_MAX_OPERANDS * sizeof *ts);
        int n;
        bool ok = ts ? type_list(L, ts, &n) : imp_oom(L, "kiln import", sizeof *ts);
        host_free(L->ctx, ts, IMP_MAX_OPERANDS * sizeof *ts);
        if (!ok) return false;
    }
    return imp_expect(L, '}');
}

/* The ops of a block up to its return, each bound to its results' name in s. */
static bool block(shlo *P, imp_scope *s, int *n_out, kiln_value *outs, int max_out) {
    imp_lex *L = P->L;
    /* large, and blocks nest: off the stack */
    imp_op *op = host_alloc(L->ctx, sizeof *op);
    kiln_value *res = host_alloc(L->ctx, IMP_MAX_VALUES * sizeof *res);
    bool ok = op && res;
    if (!ok) imp_oom(L, "kiln import (op)", sizeof *op + IMP_MAX_VALUES * sizeof *res);
    while (ok) {
        imp_skip(L);
        memset(op, 0, sizeof *op);
        op->at = imp_here(L);
        const char *rn = NULL;
        size_t rl = 0;
        int64_t n_res = 1;
        int n_names = 0; /* "%values, %indices = ...": one name per result */
        const char *names[IMP_MAX_OPERANDS];
        size_t lens[IMP_MAX_OPERANDS];
        if (imp_peek(L) == '%') {
            ok = ref(L, &rn, &rl) && (!imp_accept(L, ':') || imp_int(L, &n_res, "a result count"));
            names[n_names] = rn, lens[n_names++] = rl;
            while (ok && n_res == 1 && imp_accept(L, ',')) {
                if (n_names == IMP_MAX_OPERANDS) {
                    ok = imp_fail(L, "more than %d result names", IMP_MAX_OPERANDS);
                    break;
                }
                ok = ref(L, &names[n_names], &lens[n_names]);
                n_names++;
            }
            if (n_names > 1) n_res = n_names;
            ok = ok && imp_expect(L, '=');
            if (ok && (n_res < 1 || n_res > IMP_MAX_VALUES))
                ok = imp_fail(L, "%lld results", (long long)n_res);
            if (!ok) break;
        }
        imp_skip(L);
        op->at = imp_here(L);
        bool generic = imp_peek(L) == '"';
        char name[IMP_MAX_NAME];
        if (generic) imp_advance(L, 1);
        if (!imp_ident(L, name, ".", "an op name") || (generic && !imp_expect(L, '"'))) {
            ok = false;
            break;
        }
        if (!rn && (!strcmp(name, "return") || !strcmp(name, "stablehlo.return") ||
                    !strcmp(name, "func.return"))) {
            ok = block_return(L, s, n_out, outs, max_out);
            break;
        }
        if (!imp_count_op(L)) {
            ok = false;
            break;
        }
        op->spell = name;
        op->name = canonical(name);
        int n_res_got = 0;
        imp_entry info = {0};
        if (!op_body(P, s, op, generic, res, &n_res_got, &info)) {
            ok = false;
            break;
        }
        if ((!strcmp(op->name, "broadcast_in_dim") || !strcmp(op->name, "reshape")) &&
            op->n_in == 1 && op->in_const[0]) /* still a splat: a reduction's init */
            info.is_const = true, info.value = op->in_value[0];
        if (!rn) continue; /* no results: nothing to name */
        if (n_res_got != n_res) {
            ok = imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                             "%s gives %d result%s, but the text names %lld", name, n_res_got,
                             n_res_got == 1 ? "" : "s", (long long)n_res);
            break;
        }
        if (n_names > 1) {
            for (int i = 0; ok && i < n_names; i++)
                ok = imp_scope_bind(L, s, names[i], lens[i], 1, &res[i]) != NULL;
            if (!ok) break;
            continue;
        }
        imp_entry *e = imp_scope_bind(L, s, rn, rl, n_res_got, res);
        if (!e) {
            ok = false;
            break;
        }
        e->is_const = info.is_const, e->value = info.value;
    }
    host_free(L->ctx, op, sizeof *op);
    host_free(L->ctx, res, IMP_MAX_VALUES * sizeof *res);
    return ok && !L->status;
}

/* ---------------------------------------------------------------- module ---- */

/* What a module holds beside its functions and kiln reads past, each a line of its own:
 * location aliases (`#loc3 = loc("x")`, at the top and the end of text written with debug
 * info) and Shardy's mesh declarations (`sdy.mesh @mesh = <["d"=1]> {...}`: shardings
 * are ignored). */
static void skip_definitions(imp_lex *L) {
    for (;;) {
        imp_skip(L);
        bool alias = imp_peek(L) == '#';
        bool mesh = L->len - L->pos >= 9 && !memcmp(L->src + L->pos, "sdy.mesh ", 9);
        if (!alias && !mesh) return;
        while (imp_peek(L) >= 0 && imp_peek(L) != '\n') imp_advance(L, 1);
    }
}

/* The module's functions: "func.func [public|private] @name(" at any depth of the
 * module's braces, found by skipping each function's groups whole. */
static bool scan_functions(shlo *P, imp_mark *entry) {
    imp_lex *L = P->L;
    bool have_entry = false;
    skip_definitions(L);
    if (imp_accept_word(L, "module")) {
        imp_skip(L);
        if (imp_peek(L) == '@') {
            char name[IMP_MAX_NAME];
            imp_advance(L, 1);
            if (!imp_ident(L, name, ".$-", "the module's name")) return false;
        }
        if (imp_accept_word(L, "attributes") && !imp_skip_group(L)) return false;
        if (!imp_expect(L, '{')) return false;
    }
    for (;;) {
        skip_definitions(L);
        if (imp_peek(L) < 0 || imp_peek(L) == '}') break;
        if (!imp_expect_word(L, "func") || !imp_expect(L, '.') || !imp_expect_word(L, "func"))
            return false;
        bool pub = imp_accept_word(L, "public");
        if (!pub) imp_accept_word(L, "private");
        if (!imp_expect(L, '@')) return false;
        const char *name = L->src + L->pos;
        char buf[IMP_MAX_NAME];
        if (!imp_ident(L, buf, ".$-", "a function name")) return false;
        if (P->n_fns == P->cap_fns) {
            uint32_t cap = P->cap_fns ? 2 * P->cap_fns : 16;
            func *f = host_realloc(L->ctx, P->fns, P->cap_fns * sizeof *f, cap * sizeof *f);
            if (!f) return imp_oom(L, "kiln import (functions)", cap * sizeof *f);
            P->fns = f, P->cap_fns = cap;
        }
        imp_skip(L);
        func *f = &P->fns[P->n_fns++];
        *f = (func){name, strlen(buf), L->pos, L->line_start, L->line};
        if (!strcmp(buf, "main") || (!have_entry && pub)) {
            *entry = (imp_mark){f->pos, f->line_start, f->line};
            have_entry = true;
        }
        /* the arguments, the results, attributes, then the body */
        if (!imp_skip_group(L)) return false;
        imp_skip(L);
        if (imp_peek(L) == '-' && imp_peek_at(L, 1) == '>') {
            imp_advance(L, 2);
            imp_skip(L);
            if (imp_peek(L) == '(') {
                if (!imp_skip_group(L)) return false;
            } else {
                imp_type t;
                if (!tensor_type(L, &t)) return false;
            }
        }
        if (imp_accept_word(L, "attributes") && !imp_skip_group(L)) return false;
        imp_skip(L);
        if (imp_peek(L) != '{') return imp_expected(L, "a function's body");
        if (!imp_skip_group(L)) return false;
    }
    if (!have_entry) return imp_fail(L, "the module has no function @main");
    return true;
}

kiln_status imp_stablehlo(imp_lex *L, kiln_graph **out) {
    shlo P = {.L = L};
    L->mlir_locs = true;
    imp_mark entry = {0};
    kiln_graph *g = NULL;
    if (scan_functions(&P, &entry)) {
        imp_go(L, entry);
        kiln_status s = kiln_graph_create(L->ctx, "main", &g);
        if (s) L->status = s;
    }
    if (!L->status) {
        imp_scope sc = {.g = g};
        kiln_value *outs = host_alloc(L->ctx, IMP_MAX_VALUES * sizeof *outs);
        int n_params = 0, n_out = 0;
        L->depth = 1;
        if (!outs) imp_oom(L, "kiln import (results)", IMP_MAX_VALUES * sizeof *outs);
        if (outs && func_head(L, &sc, NULL, 0, &n_params) &&
            block(&P, &sc, &n_out, outs, IMP_MAX_VALUES)) {
            kiln_status s = kiln_graph_finish(g, n_out, outs);
            if (s) imp_check_graph(L, g, imp_here(L), "return");
            if (s && !L->status) L->status = s;
        }
        host_free(L->ctx, outs, IMP_MAX_VALUES * sizeof *outs);
        imp_scope_free(L, &sc);
    }
    host_free(L->ctx, P.fns, P.cap_fns * sizeof *P.fns);
    if (L->status) {
        kiln_graph_destroy(g);
        return L->status;
    }
    *out = g;
    return KILN_STATUS_OK;
}
