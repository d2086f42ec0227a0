/* hlo.c — the HLO text front end: reads what jax.jit(f).lower(*args).as_text(dialect="hlo")
 * writes (HloModule, named computations, ENTRY) and hands each instruction to ops.c under
 * the StableHLO name of its opcode.
 *
 * A first pass finds the computations and where their bodies start. The ENTRY computation
 * becomes the graph; its parameter(k) instructions, found by a pass over its lines first,
 * become the graph's parameters in index order. A called computation (call, a while's
 * condition and body, a conditional's branches) is read again where it is written, with
 * its parameters bound to the operands; a reduction's or scatter's to_apply is recognised
 * from its ROOT (one op over the two parameters, or the second parameter itself). Tuples
 * are entries of several values: tuple() makes one, get-tuple-element reads one, a while
 * carries one.
 *
 * Invariants: as stablehlo.c's: the cursor is saved and restored around every re-read,
 * which counts against IMP_MAX_OPS and IMP_MAX_DEPTH; layouts ({1,0}), metadata,
 * shardings and other attributes not needed are skipped whole; instructions are one a line
 * and defined before use (HLO's printer writes them in post-order). */
#include "import.h"

#include <string.h>

typedef struct comp {
    const char *name;
    size_t len;
    imp_mark body; /* just past its '{' */
} comp;

typedef struct hlo {
    imp_lex *L;
    kiln_value params[IMP_MAX_VALUES]; /* the entry's parameters, by index */
    int n_params;
    comp *comps;
    uint32_t n_comps, cap_comps;
    int entry;
    imp_body body; /* the comparator of the instruction being read (sort, select-and-scatter) */
} hlo;

struct group;
static bool computation(hlo *P, const comp *c, imp_scope *s, int n_args, const struct group *args,
                        int *n_out, kiln_value *outs, int max_out);

/* ----------------------------------------------------------------- lexing ---- */

static bool is_name_char(int c) {
    return imp_is_ident_char(c) || c == '.' || c == '-';
}

/* An instruction's or computation's name (a leading '%' of older printers dropped). */
static bool name(imp_lex *L, const char **s, size_t *n, const char *what) {
    imp_skip(L);
    if (imp_peek(L) == '%') imp_advance(L, 1);
    *s = L->src + L->pos;
    while (is_name_char(imp_peek(L))) imp_advance(L, 1);
    *n = (size_t)(L->src + L->pos - *s);
    if (!*n) return imp_expected(L, what);
    if (*n >= IMP_MAX_NAME)
        return imp_fail(L, "%s is longer than %d bytes", what, IMP_MAX_NAME - 1);
    return true;
}

/* f32[2,3]{1,0} (the layout skipped) or a tuple (T, U); *n the count of array types. */
static bool hlo_type(imp_lex *L, imp_type *ts, int *n, int max) {
    imp_skip(L);
    if (imp_accept(L, '(')) {
        *n = 0;
        if (imp_accept(L, ')')) return true;
        do {
            int k;
            imp_type spare;
            if (*n == IMP_MAX_VALUES)
                return imp_fail(L, "a tuple of more than %d elements", IMP_MAX_VALUES);
            imp_loc at = imp_here(L);
            if (!hlo_type(L, *n < max ? ts + *n : &spare, &k, 1)) return false;
            if (k != 1)
                return imp_fail_at(L, at, KILN_STATUS_UNIMPLEMENTED, "a tuple inside a tuple");
            *n += k;
        } while (imp_accept(L, ','));
        return imp_expect(L, ')');
    }
    char el[IMP_MAX_NAME];
    imp_loc at = imp_here(L);
    if (!imp_ident(L, el, NULL, "an element type")) return false;
    ts[0].uns = !strcmp(el, "u32") || !strcmp(el, "u64"); /* held as i32 / i64 patterns */
    ts[0].dtype = ts[0].uns ? (el[1] == '3' ? KILN_DTYPE_I32 : KILN_DTYPE_I64) : imp_dtype(el);
    if (!ts[0].dtype || !strcmp(el, "i32") || !strcmp(el, "i64") || !strcmp(el, "i1"))
        return imp_fail_at(L, at, KILN_STATUS_DTYPE, "element type %s: kiln has no such dtype", el);
    int64_t d[KILN_MAX_RANK];
    if (!imp_int_list(L, '[', d, KILN_MAX_RANK, &ts[0].rank, "dimensions")) return false;
    memcpy(ts[0].dims, d, (size_t)ts[0].rank * sizeof *d);
    *n = 1;
    if (imp_peek(L) == '{') return imp_skip_group(L); /* the layout */
    return true;
}

/* A computation's instruction head, "NAME = TYPE OPCODE": its name and opcode, the type
 * read past (the bodies of reductions, sorts and scatters, whose types the op's own
 * operands give). */
static bool instr_head(imp_lex *L, const char **s, size_t *n, const char **op, size_t *on,
                       bool *uns) {
    imp_type t[IMP_MAX_OPERANDS];
    int nt;
    bool ok = name(L, s, n, "an instruction") && imp_expect(L, '=') &&
              hlo_type(L, t, &nt, IMP_MAX_OPERANDS) && name(L, op, on, "an opcode");
    if (uns) *uns = ok && nt == 1 && t[0].uns;
    return ok;
}

/* Skips to the end of the line (groups and strings whole). */
static bool end_of_line(imp_lex *L) {
    for (;;) {
        imp_skip_blanks(L);
        int c = imp_peek(L);
        if (c < 0 || c == '\n') return true;
        if (c == '"') {
            if (!imp_skip_string(L)) return false;
        } else if (c == '{' || c == '(' || c == '[') {
            if (!imp_skip_group(L)) return false;
        } else {
            imp_advance(L, 1);
        }
    }
}

/* ----------------------------------------------------------- computations ---- */

static const comp *find_comp(hlo *P, const char *s, size_t n) {
    for (uint32_t i = 0; i < P->n_comps; i++)
        if (P->comps[i].len == n && !memcmp(P->comps[i].name, s, n)) return &P->comps[i];
    return NULL;
}

static bool comp_ref(hlo *P, const comp **c) {
    const char *s;
    size_t n;
    imp_loc at = imp_here(P->L);
    if (!name(P->L, &s, &n, "a computation's name")) return false;
    if (!(*c = find_comp(P, s, n)))
        return imp_fail_at(P->L, at, KILN_STATUS_INVALID_ARGUMENT,
                           "computation %.*s is not in the module", (int)n, s);
    return true;
}

/* HloModule name, attributes...; then "[ENTRY] name { ... }" per computation. */
static bool scan_module(hlo *P) {
    imp_lex *L = P->L;
    P->entry = -1;
    if (!imp_expect_word(L, "HloModule") || !end_of_line(L)) return false;
    for (;;) {
        imp_skip(L);
        if (imp_peek(L) < 0) break;
        /* the debug info's tables (FileNames, FunctionNames, FileLocations, StackFrames:
         * a title line, then a line per entry, up to a blank line) are read past */
        static const char *const tables[] = {"FileNames", "FunctionNames", "FileLocations",
                                             "StackFrames"};
        bool table = false;
        for (size_t i = 0; i < sizeof tables / sizeof *tables && !table; i++)
            table = imp_accept_word(L, tables[i]);
        if (table) {
            while (imp_peek(L) >= 0) {
                while (imp_peek(L) >= 0 && imp_peek(L) != '\n') imp_advance(L, 1);
                imp_advance(L, 1);
                imp_skip_blanks(L);
                if (imp_peek(L) == '\n' || imp_peek(L) == '\r') break; /* the blank line */
            }
            continue;
        }
        bool entry = imp_accept_word(L, "ENTRY");
        const char *s;
        size_t n;
        if (!name(L, &s, &n, "a computation's name")) return false;
        imp_skip(L);
        if (imp_peek(L) == '(') { /* an older printer's signature */
            if (!imp_skip_group(L)) return false;
            imp_skip(L);
            if (imp_peek(L) == '-' && imp_peek_at(L, 1) == '>') {
                imp_type t[IMP_MAX_OPERANDS];
                int k;
                imp_advance(L, 2);
                if (!hlo_type(L, t, &k, IMP_MAX_OPERANDS)) return false;
            }
        }
        imp_skip(L);
        imp_mark body = imp_mark_here(L);
        if (imp_peek(L) != '{') return imp_expected(L, "a computation's body");
        if (!imp_skip_group(L)) return false;
        if (P->n_comps == P->cap_comps) {
            uint32_t cap = P->cap_comps ? 2 * P->cap_comps : 16;
            comp *c = host_realloc(L->ctx, P->comps, P->cap_comps * sizeof *c, cap * sizeof *c);
            if (!c) return imp_oom(L, "kiln import (computations)", cap * sizeof *c);
            P->comps = c, P->cap_comps = cap;
        }
        body.pos++; /* past the '{' */
        P->comps[P->n_comps] = (comp){s, n, body};
        if (entry) P->entry = (int)P->n_comps;
        P->n_comps++;
    }
    if (P->entry < 0) return imp_fail(L, "the module has no ENTRY computation");
    return true;
}

/* ----------------------------------------------------------- attributes ---- */

/* {[0:4], [1:3:2]} */
static bool slice_attr(imp_lex *L, imp_op *op) {
    if (!imp_expect(L, '{')) return false;
    if (imp_accept(L, '}')) return true;
    do {
        int k = op->n_a;
        if (k == KILN_MAX_RANK) return imp_fail(L, "a slice of more than %d axes", KILN_MAX_RANK);
        op->c[k] = 1;
        if (!imp_expect(L, '[') || !imp_int(L, &op->a[k], "a start") || !imp_expect(L, ':') ||
            !imp_int(L, &op->b[k], "a limit") ||
            (imp_accept(L, ':') && !imp_int(L, &op->c[k], "a stride")) || !imp_expect(L, ']'))
            return false;
        op->n_a = op->n_b = op->n_c = k + 1;
    } while (imp_accept(L, ','));
    return imp_expect(L, '}');
}

/* lo_hi[_interior] per axis, joined by 'x': 1_0x0_2 */
static bool padding_attr(imp_lex *L, int64_t *lo, int64_t *hi, int64_t *in, int *n) {
    *n = 0;
    do {
        if (*n == KILN_MAX_RANK) return imp_fail(L, "padding of more than %d axes", KILN_MAX_RANK);
        in[*n] = 0;
        if (!imp_int(L, &lo[*n], "a low padding") || !imp_expect(L, '_') ||
            !imp_int(L, &hi[*n], "a high padding"))
            return false;
        if (imp_peek(L) == '_') {
            imp_advance(L, 1);
            if (!imp_int(L, &in[*n], "an interior padding")) return false;
        }
        (*n)++;
    } while (imp_peek(L) == 'x' && (imp_advance(L, 1), true));
    return true;
}

/* 2x1 */
static bool x_list(imp_lex *L, int64_t *v, int *n) {
    *n = 0;
    do {
        if (*n == KILN_MAX_RANK) return imp_fail(L, "a window of more than %d axes", KILN_MAX_RANK);
        if (!imp_int(L, &v[(*n)++], "a window size")) return false;
    } while (imp_peek(L) == 'x' && (imp_advance(L, 1), true));
    return true;
}

/* window={size=2x1 stride=1x1 pad=1_0x0_0 lhs_dilate=1x1 rhs_dilate=1x1} */
static bool window_attr(imp_lex *L, imp_op *op) {
    if (!imp_expect(L, '{')) return false;
    while (!imp_accept(L, '}')) {
        char key[IMP_MAX_NAME];
        int n;
        int64_t in[KILN_MAX_RANK];
        if (!imp_ident(L, key, NULL, "a window field") || !imp_expect(L, '=')) return false;
        bool ok =
            !strcmp(key, "size")         ? x_list(L, op->a, &op->n_a)
            : !strcmp(key, "stride")     ? x_list(L, op->b, &op->n_b)
            : !strcmp(key, "lhs_dilate") ? x_list(L, op->c, &op->n_c)
            : !strcmp(key, "rhs_dilate") ? x_list(L, op->sizes, &op->n_sizes)
            : !strcmp(key, "pad")        ? padding_attr(L, op->pad_lo, op->pad_hi, in, &n)
            : !strcmp(key, "rhs_reversal")
                ? x_list(L, in, &n) &&
                      (op->conv_reversed = in[0] || (n > 1 && in[1]) || (n > 2 && in[2]), true)
                : imp_fail(L, "window field %s", key);
        if (!ok) return false;
    }
    return true;
}

/* {1,0} into ints */
static bool int_attr(imp_lex *L, int *dst, int *n) {
    int64_t v[KILN_MAX_RANK];
    int k;
    if (!imp_int_list(L, '{', v, KILN_MAX_RANK, &k, "dimensions")) return false;
    for (int i = 0; i < k; i++) dst[i] = (int)v[i];
    if (n) *n = k;
    return true;
}

static const struct {
    const char *name;
    kiln_cmp cmp;
} directions[] = {{"EQ", KILN_CMP_EQ}, {"NE", KILN_CMP_NE}, {"LT", KILN_CMP_LT},
                  {"LE", KILN_CMP_LE}, {"GT", KILN_CMP_GT}, {"GE", KILN_CMP_GE}};

/* What an instruction's attributes name besides lists: computations and an index. */
typedef struct extra {
    const comp *to_apply, *cond, *body, *true_c, *false_c, *select, *scatter;
    const comp *branches[KILN_MAX_OUTPUTS];
    int n_branches;
    int64_t index;
    char target[IMP_MAX_NAME]; /* custom_call_target */
} extra;

static bool dnum_attr(imp_lex *L, imp_op *op, const char *key, bool *done) {
    kiln_gather_dims *g = &op->gather;
    kiln_scatter_dims *s = &op->scatter;
    kiln_dot_dims *d = &op->dot;
    *done = true;
    if (!strcmp(key, "offset_dims")) return int_attr(L, g->offset_dims, &g->n_offset_dims);
    if (!strcmp(key, "collapsed_slice_dims"))
        return int_attr(L, g->collapsed_slice_dims, &g->n_collapsed_slice_dims);
    if (!strcmp(key, "start_index_map"))
        return int_attr(L, g->start_index_map, &g->n_start_index_map);
    if (!strcmp(key, "operand_batching_dims"))
        return int_attr(L, g->operand_batching_dims, &g->n_operand_batching_dims);
    if (!strcmp(key, "start_indices_batching_dims"))
        return int_attr(L, g->start_indices_batching_dims, NULL);
    if (!strcmp(key, "update_window_dims"))
        return int_attr(L, s->update_window_dims, &s->n_update_window_dims);
    if (!strcmp(key, "inserted_window_dims"))
        return int_attr(L, s->inserted_window_dims, &s->n_inserted_window_dims);
    if (!strcmp(key, "scatter_dims_to_operand_dims"))
        return int_attr(L, s->scatter_dims_to_operand_dims, &s->n_scatter_dims_to_operand_dims);
    if (!strcmp(key, "input_batching_dims"))
        return int_attr(L, s->operand_batching_dims, &s->n_operand_batching_dims);
    if (!strcmp(key, "scatter_indices_batching_dims"))
        return int_attr(L, s->scatter_indices_batching_dims, NULL);
    if (!strcmp(key, "lhs_contracting_dims")) return int_attr(L, d->lhs_contract, &d->n_contract);
    if (!strcmp(key, "rhs_contracting_dims")) return int_attr(L, d->rhs_contract, NULL);
    if (!strcmp(key, "lhs_batch_dims")) return int_attr(L, d->lhs_batch, &d->n_batch);
    if (!strcmp(key, "rhs_batch_dims")) return int_attr(L, d->rhs_batch, NULL);
    *done = false;
    return true;
}

static bool attr(hlo *P, imp_op *op, extra *x, const char *key) {
    imp_lex *L = P->L;
    bool done;
    if (!dnum_attr(L, op, key, &done) || done) return !L->status;
    if (!strcmp(key, "dimensions"))
        return imp_int_list(L, '{', op->dims, KILN_MAX_RANK, &op->n_dims, key);
    if (!strcmp(key, "iota_dimension") || !strcmp(key, "index_vector_dim") ||
        !strcmp(key, "index")) {
        int64_t v;
        if (!imp_int(L, &v, key)) return false;
        if (!strcmp(key, "iota_dimension")) op->dims[0] = v, op->n_dims = 1;
        if (!strcmp(key, "index_vector_dim"))
            op->index_vector_dim = v, op->has_index_vector_dim = true;
        if (!strcmp(key, "index")) x->index = v;
        return true;
    }
    if (!strcmp(key, "slice_sizes") || !strcmp(key, "dynamic_slice_sizes"))
        return imp_int_list(L, '{', op->sizes, KILN_MAX_RANK, &op->n_sizes, key);
    if (!strcmp(key, "slice")) return slice_attr(L, op);
    if (!strcmp(key, "padding"))
        return padding_attr(L, op->a, op->b, op->c, &op->n_a) &&
               (op->n_b = op->n_c = op->n_a, true);
    if (!strcmp(key, "window")) return window_attr(L, op);
    if (!strcmp(key, "type")) { /* compare's: FLOAT, TOTALORDER, SIGNED, UNSIGNED */
        char w[IMP_MAX_NAME];
        if (!imp_ident(L, w, NULL, "a comparison type")) return false;
        op->cmp_typed = true, op->cmp_unsigned = !strcmp(w, "UNSIGNED");
        return true;
    }
    if (!strcmp(key, "direction")) {
        char w[IMP_MAX_NAME];
        if (!imp_ident(L, w, NULL, "a direction")) return false;
        for (size_t i = 0; i < sizeof directions / sizeof directions[0]; i++)
            if (!strcmp(w, directions[i].name)) return op->cmp = directions[i].cmp, true;
        return imp_fail(L, "comparison direction %s", w);
    }
    if (!strcmp(key, "to_apply")) return comp_ref(P, &x->to_apply);
    if (!strcmp(key, "select")) return comp_ref(P, &x->select);
    if (!strcmp(key, "scatter")) return comp_ref(P, &x->scatter);
    if (!strcmp(key, "k") || !strcmp(key, "feature_group_count") ||
        !strcmp(key, "batch_group_count")) {
        int64_t v;
        if (!imp_int(L, &v, key)) return false;
        *(!strcmp(key, "k")                     ? &op->k
          : !strcmp(key, "feature_group_count") ? &op->conv.feature_group_count
                                                : &op->conv.batch_group_count) = v;
        return true;
    }
    if (!strcmp(key, "largest")) {
        char w[IMP_MAX_NAME];
        if (!imp_ident(L, w, NULL, "true or false")) return false;
        op->k_smallest = strcmp(w, "true") != 0;
        return true;
    }
    if (!strcmp(key, "dim_labels")) { /* b01f_01io->b01f */
        for (int which = 0; which < 3; which++) {
            char lab[KILN_CONV_MAX_SPATIAL + 3];
            int n = 0;
            if (which == 1 && !imp_expect(L, '_')) return false;
            if (which == 2 && (!imp_expect(L, '-') || !imp_expect(L, '>'))) return false;
            while (imp_is_ident_char(imp_peek(L)) && imp_peek(L) != '_' &&
                   n < KILN_CONV_MAX_SPATIAL + 3)
                lab[n++] = (char)imp_peek(L), imp_advance(L, 1);
            if (!imp_conv_labels(L, op, which, lab, n)) return false;
        }
        return true;
    }
    if (!strcmp(key, "condition")) return comp_ref(P, &x->cond);
    if (!strcmp(key, "body")) return comp_ref(P, &x->body);
    if (!strcmp(key, "true_computation")) return comp_ref(P, &x->true_c);
    if (!strcmp(key, "false_computation")) return comp_ref(P, &x->false_c);
    if (!strcmp(key, "branch_computations")) {
        if (!imp_expect(L, '{')) return false;
        do {
            if (x->n_branches == KILN_MAX_OUTPUTS)
                return imp_fail(L, "more than %d branches", KILN_MAX_OUTPUTS);
            if (!comp_ref(P, &x->branches[x->n_branches++])) return false;
        } while (imp_accept(L, ','));
        return imp_expect(L, '}');
    }
    if (!strcmp(key, "custom_call_target")) {
        imp_skip_blanks(L);
        size_t st = L->pos + 1;
        if (imp_peek(L) != '"' || !imp_skip_string(L)) return imp_expected(L, "a quoted target");
        snprintf(x->target, sizeof x->target, "%.*s", (int)(L->pos - 1 - st), L->src + st);
        return true;
    }
    if (!strcmp(key, "lower") || !strcmp(key, "left_side") || !strcmp(key, "unit_diagonal")) {
        char w[IMP_MAX_NAME]; /* cholesky's and triangular-solve's */
        if (!imp_ident(L, w, NULL, "true or false")) return false;
        if (strcmp(w, "true") && strcmp(w, "false"))
            return imp_fail(L, "%s=%s, not true or false", key, w);
        bool *flag = !strcmp(key, "lower")       ? &op->lower
                     : !strcmp(key, "left_side") ? &op->left_side
                                                 : &op->unit_diagonal;
        *flag = !strcmp(w, "true");
        return true;
    }
    if (!strcmp(key, "transpose_a")) return imp_transpose_word(L, op);
    if (!strcmp(key, "backend_config") && (imp_skip_blanks(L), imp_peek(L) == '{'))
        return imp_backend_config(L, op); /* a custom call's dictionary (a string: skipped) */
    /* metadata, sharding, layouts...: not needed */
    for (;;) {
        imp_skip_blanks(L);
        int c = imp_peek(L);
        if (c < 0 || c == '\n' || c == ',') return true;
        if (c == '"') {
            if (!imp_skip_string(L)) return false;
        } else if (c == '{' || c == '(' || c == '[') {
            if (!imp_skip_group(L)) return false;
        } else {
            imp_advance(L, 1);
        }
    }
}

/* ------------------------------------------------------------ bodies ---- */

/* A group of values: one instruction's (several for a tuple). */
typedef struct group {
    int n;
    kiln_value *v; /* into the reading instruction's pool, or its results */
    bool is_const; /* a splat constant of `value` */
    double value;
    bool uns; /* one value, declared u32 or u64 */
} group;

/* A reduce of two operands' to_apply: IMP_COMBINE_ARGMAX or _ARGMIN where its
 * instructions are jnp.argmax's or argmin's body (imp_arg_body), else _NONE. */
static bool comp_arg_combine(hlo *P, const comp *c, imp_combine *k) {
    imp_lex *L = P->L;
    imp_mark back = imp_mark_here(L);
    imp_go(L, c->body);
    char ops[16][IMP_MAX_NAME];
    const char *list[16];
    int n = 0, lines = 0;
    while (!L->status && !imp_accept(L, '}') && lines++ < 24 && n < 16) {
        imp_accept_word(L, "ROOT");
        const char *s, *op;
        size_t len, on;
        if (!instr_head(L, &s, &len, &op, &on, NULL)) break;
        snprintf(ops[n], sizeof ops[n], "%.*s", (int)on, op);
        const char *p = L->src + L->pos, *eol = memchr(p, '\n', L->len - L->pos);
        for (eol = eol ? eol : L->src + L->len; p + 12 <= eol; p++) /* "direction=GT" */
            if (!strcmp(ops[n], "compare") && !memcmp(p, "direction=", 10)) {
                snprintf(ops[n], sizeof ops[n], "compare %.2s", p + 10);
                break;
            }
        if (strcmp(ops[n], "parameter") && strcmp(ops[n], "tuple")) list[n] = ops[n], n++;
        end_of_line(L);
    }
    *k = L->status || n == 16 ? IMP_COMBINE_NONE : imp_arg_body(n, list);
    L->status = KILN_STATUS_OK; /* a body this reader cannot follow is just not recognised */
    L->msg[0] = 0;
    imp_go(L, back);
    return true;
}

/* A comparator computation (sort's to_apply, select-and-scatter's select) into P->body
 * (body.c recognises it): parameter, constant, compare, select, and, or; any other
 * instruction, or a line this reader does not follow, leaves the body unreadable, for
 * the op's mapping to refuse by name. */
static bool comp_body(hlo *P, const comp *c) {
    imp_lex *L = P->L;
    imp_body *b = &P->body;
    memset(b, 0, sizeof *b);
    b->ret = -1;
    imp_mark back = imp_mark_here(L);
    imp_go(L, c->body);
    const char *names[IMP_MAX_BODY];
    size_t lens[IMP_MAX_BODY];
    bool ok = true;
    while (ok && !L->status && !imp_accept(L, '}')) {
        if (b->n == IMP_MAX_BODY) {
            ok = false;
            break;
        }
        bool root = imp_accept_word(L, "ROOT");
        const char *s, *op;
        size_t n, on;
        bool uns = false;
        if (!instr_head(L, &s, &n, &op, &on, &uns) || !imp_expect(L, '(')) {
            ok = false;
            break;
        }
        char code[IMP_MAX_NAME];
        snprintf(code, sizeof code, "%.*s", (int)on, op);
        imp_bop o = {0};
        if (!strcmp(code, "parameter")) {
            int64_t k;
            o.kind = IMP_B_PARAM;
            o.uns = uns; /* HLO compares unsigned values unsigned unless type= says otherwise */
            ok = imp_int(L, &k, "a parameter number") && k >= 0 && k < IMP_MAX_OPERANDS;
            o.param = (int)k;
        } else if (!strcmp(code, "constant")) {
            imp_num x;
            o.kind = IMP_B_CONST;
            ok = imp_number(L, &x, "a constant") && x.kind != IMP_NUM_BITS;
            o.value = x.value;
        } else {
            o.kind = !strcmp(code, "compare")  ? IMP_B_COMPARE
                     : !strcmp(code, "select") ? IMP_B_SELECT
                     : !strcmp(code, "and")    ? IMP_B_AND
                     : !strcmp(code, "or")     ? IMP_B_OR
                                               : IMP_B_OTHER;
            o.n_in = o.kind == IMP_B_SELECT ? 3 : 2;
            ok = o.kind != IMP_B_OTHER;
            for (int i = 0; ok && i < o.n_in; i++) {
                const char *a;
                size_t an;
                ok = (!i || imp_expect(L, ',')) && name(L, &a, &an, "an operand");
                o.in[i] = -1;
                for (int j = b->n - 1; ok && j >= 0 && o.in[i] < 0; j--)
                    if (lens[j] == an && !memcmp(names[j], a, an)) o.in[i] = j;
                ok = ok && o.in[i] >= 0;
            }
        }
        ok = ok && imp_expect(L, ')');
        while (ok && (imp_skip_blanks(L), imp_peek(L) == ',')) { /* direction=, type= */
            imp_advance(L, 1);
            char key[IMP_MAX_NAME], w[IMP_MAX_NAME];
            ok = imp_ident(L, key, NULL, "an attribute") && imp_expect(L, '=');
            if (ok && (!strcmp(key, "direction") || !strcmp(key, "type"))) {
                imp_op d = {0};
                ok = imp_ident(L, w, NULL, "a value");
                if (ok && !strcmp(key, "type")) o.totalorder = !strcmp(w, "TOTALORDER");
                if (ok && !strcmp(key, "type") && !strcmp(w, "UNSIGNED")) o.uns = true;
                for (size_t i = 0; ok && !strcmp(key, "direction") &&
                                   i < sizeof directions / sizeof directions[0];
                     i++)
                    if (!strcmp(w, directions[i].name)) d.cmp = directions[i].cmp;
                if (!strcmp(key, "direction")) o.cmp = d.cmp;
            } else if (ok) {
                ok = attr(P, &(imp_op){0}, &(extra){0}, key);
            }
        }
        if (!ok) break;
        for (int i = 0; o.kind == IMP_B_COMPARE && i < o.n_in; i++)
            o.uns |= b->op[o.in[i]].uns; /* a compare of unsigned values is unsigned */
        if (root) b->ret = b->n;
        names[b->n] = s, lens[b->n] = n;
        imp_body_add(b, o);
        end_of_line(L);
    }
    if (!ok || L->status) b->unreadable = true;
    L->status = KILN_STATUS_OK; /* a body this reader cannot follow is just not recognised */
    L->msg[0] = 0;
    imp_go(L, back);
    return true;
}

/* The reduction a to_apply computation computes: its ROOT one op over its two
 * parameters (add, multiply, maximum, minimum, and, or), or parameter(1) itself (a
 * scatter that replaces); anything else is IMP_COMBINE_NONE. */
static bool comp_combine(hlo *P, const comp *c, imp_combine *k) {
    imp_lex *L = P->L;
    imp_mark back = imp_mark_here(L);
    imp_go(L, c->body);
    const char *p[2] = {0}, *root_op = NULL, *a = NULL, *b = NULL;
    size_t pn[2] = {0}, root_len = 0, an = 0, bn = 0;
    int lines = 0, root_param = -1;
    *k = IMP_COMBINE_NONE;
    while (!L->status && !imp_accept(L, '}') && lines++ < 8) {
        bool root = imp_accept_word(L, "ROOT");
        const char *s, *op;
        size_t n, on;
        if (!instr_head(L, &s, &n, &op, &on, NULL) || !imp_expect(L, '(')) break;
        bool param = on == 9 && !memcmp(op, "parameter", 9);
        int64_t idx = -1;
        if (param && imp_int(L, &idx, "a parameter number") && idx >= 0 && idx < 2)
            p[idx] = s, pn[idx] = n;
        if (root && param) root_param = (int)idx;
        if (root && !param) {
            root_op = op, root_len = on;
            if (!name(L, &a, &an, "an operand") || !imp_expect(L, ',') ||
                !name(L, &b, &bn, "an operand"))
                break;
        }
        end_of_line(L);
    }
    bool ok = !L->status;
    if (ok && root_param == 1 && lines == 2) *k = IMP_COMBINE_SET;
    if (ok && root_op && lines == 3 && p[0] && p[1]) {
        bool args = (an == pn[0] && !memcmp(a, p[0], an) && bn == pn[1] && !memcmp(b, p[1], bn)) ||
                    (an == pn[1] && !memcmp(a, p[1], an) && bn == pn[0] && !memcmp(b, p[0], bn));
        static const struct {
            const char *op;
            imp_combine k;
        } ops[] = {{"add", IMP_COMBINE_ADD},     {"multiply", IMP_COMBINE_MUL},
                   {"maximum", IMP_COMBINE_MAX}, {"minimum", IMP_COMBINE_MIN},
                   {"and", IMP_COMBINE_AND},     {"or", IMP_COMBINE_OR}};
        for (size_t i = 0; args && i < sizeof ops / sizeof ops[0]; i++)
            if (strlen(ops[i].op) == root_len && !memcmp(root_op, ops[i].op, root_len))
                *k = ops[i].k;
    }
    L->status = KILN_STATUS_OK; /* a body this reader cannot follow is just not recognised */
    L->msg[0] = 0;
    imp_go(L, back);
    return true;
}

/* A computation read from inside a kiln_fn: parameter(0) is the fn's inputs as one group
 * (a tuple) or, for a conditional's branch, the operand captured from the outer graph. */
typedef struct called {
    hlo *P;
    const comp *c;
    imp_scope *outer;
    bool tuple;       /* parameter(0) is a tuple of the fn's inputs */
    const group *arg; /* a branch's operand (tuple or not), on the outer graph */
} called;

static int called_fn(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    called *c = user;
    imp_lex *L = c->P->L;
    if (L->status) return -1;
    int k = c->arg ? c->arg->n : n_in;
    group arg = {.n = k, .v = host_alloc(L->ctx, (size_t)(k ? k : 1) * sizeof *arg.v)};
    if (!arg.v) return imp_oom(L, "kiln import (call)", (size_t)k * sizeof *arg.v), -1;
    for (int i = 0; i < k; i++) arg.v[i] = c->arg ? kiln_capture(g, c->arg->v[i]) : in[i];
    imp_scope s = {.parent = c->outer, .g = g};
    int n = 0;
    bool ok = imp_check_graph(L, g, imp_here(L), "a branch's operand") &&
              computation(c->P, c->c, &s, 1, &arg, &n, outs, KILN_MAX_OUTPUTS);
    imp_scope_free(L, &s);
    host_free(L->ctx, arg.v, (size_t)(k ? k : 1) * sizeof *arg.v);
    return ok ? n : -1;
}

typedef struct while_comps {
    called cond, body;
} while_comps;

static int while_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    return called_fn(g, n_in, in, &((while_comps *)user)->cond, outs);
}
static int while_body(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    return called_fn(g, n_in, in, &((while_comps *)user)->body, outs);
}

#define BRANCH_MAX 16
typedef struct branches {
    called c[BRANCH_MAX];
    group args[BRANCH_MAX];
} branches;

#define BRANCH_FN(k)                                                                               \
    static int branch_##k(kiln_graph *g, int n_in, const kiln_value *in, void *user,               \
                          kiln_value *outs) {                                                      \
        return called_fn(g, n_in, in, &((branches *)user)->c[k], outs);                            \
    }
BRANCH_FN(0)
BRANCH_FN(1)
BRANCH_FN(2)
BRANCH_FN(3)
BRANCH_FN(4)
BRANCH_FN(5)
BRANCH_FN(6)
BRANCH_FN(7)
BRANCH_FN(8)
BRANCH_FN(9)
BRANCH_FN(10)
BRANCH_FN(11)
BRANCH_FN(12)
BRANCH_FN(13)
BRANCH_FN(14)
BRANCH_FN(15)
static const kiln_fn branch_fns[BRANCH_MAX] = {
    branch_0, branch_1, branch_2,  branch_3,  branch_4,  branch_5,  branch_6,  branch_7,
    branch_8, branch_9, branch_10, branch_11, branch_12, branch_13, branch_14, branch_15};

/* ---------------------------------------------------------- instructions ---- */

/* HLO opcodes under the StableHLO names ops.c maps; others keep theirs with '-' as '_'. */
static void canonical(const char *op, size_t n, char *out) {
    static const struct {
        const char *hlo, *shlo;
    } renames[] = {{"broadcast", "broadcast_in_dim"},
                   {"topk", "top_k"},
                   {"dot", "dot_general"},
                   {"opt-barrier", "optimization_barrier"}};
    snprintf(out, IMP_MAX_NAME, "%.*s", (int)n, op);
    for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++)
        if (!strcmp(out, renames[i].hlo)) {
            snprintf(out, IMP_MAX_NAME, "%s", renames[i].shlo);
            return;
        }
    for (char *c = out; *c; c++)
        if (*c == '-') *c = '_';
}

/* An operand: a name, after a type in older printers ("f32[2]{0} %x"). */
static bool operand(imp_lex *L, imp_scope *s, group *g, kiln_value *pool, int *n_pool) {
    imp_skip(L);
    imp_mark m = imp_mark_here(L);
    const char *nm;
    size_t n;
    if (!name(L, &nm, &n, "an operand")) return false;
    if (imp_peek(L) == '[') { /* a type came first */
        imp_go(L, m);
        imp_type t[IMP_MAX_OPERANDS];
        int k;
        if (!hlo_type(L, t, &k, IMP_MAX_OPERANDS) || !name(L, &nm, &n, "an operand")) return false;
    }
    imp_scope *owner = NULL;
    imp_loc at = imp_here(L);
    const imp_entry *e = imp_scope_find(L, s, nm, n, at, &owner);
    if (!e) return false;
    if (e->n > (uint32_t)(IMP_MAX_VALUES - *n_pool))
        return imp_fail_at(L, at, KILN_STATUS_UNIMPLEMENTED,
                           "an instruction of more than %d operand values", IMP_MAX_VALUES);
    g->n = (int)e->n;
    g->v = pool + *n_pool;
    *n_pool += g->n;
    g->is_const = e->is_const, g->value = e->value, g->uns = e->uns;
    for (uint32_t i = 0; i < e->n; i++)
        if (!imp_scope_value(L, s, nm, n, (int)i, at, &g->v[i], NULL)) return false;
    return true;
}

/* constant(...): its literal, braces flattened; one element is a splat. Each element is
 * stored as the result type's bytes (imp_element), so integers stay exact. */
static bool literal(imp_lex *L, imp_scope *s, imp_op *op, group *out, imp_entry *info) {
    if (op->n_out != 1)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "a tuple constant");
    const imp_type *t = &op->out[0];
    size_t item = kiln_dtype_itemsize(t->dtype);
    unsigned char *v = NULL;
    int64_t n = 0, cap = 0;
    double first = 0;
    bool exact = true;
    int depth = 0;
    bool ok = true;
    do {
        while (imp_accept(L, '{')) depth++;
        if (depth && imp_accept(L, '}')) {
            depth--;
        } else {
            imp_num x;
            imp_skip(L);
            imp_loc at = imp_here(L);
            if (!(ok = imp_number(L, &x, "a literal's element"))) break;
            if (x.kind == IMP_NUM_BITS) /* HLO prints no raw bits: 0x... is an integer */
                x.kind = IMP_NUM_INT, x.value = (double)x.raw;
            if (n == cap) {
                int64_t c = cap ? 2 * cap : 64;
                unsigned char *w = host_realloc(L->ctx, v, (size_t)cap * item, (size_t)c * item);
                if (!w) {
                    ok = imp_oom(L, "kiln import (constant)", (size_t)c * item);
                    break;
                }
                v = w, cap = c;
            }
            if (!n) first = x.value, exact = imp_num_exact(&x);
            if (!(ok = imp_element(L, at, t, &x, v + (size_t)n++ * item))) break;
        }
        while (depth > 0 && imp_accept(L, '}')) depth--;
    } while (ok && imp_accept(L, ','));
    if (ok && depth) ok = imp_expected(L, "\"}\"");
    if (ok) {
        out->n = 1;
        out->v[0] = imp_constant(L, s->g, op->at, t, v, n);
        info->is_const = n == 1 && exact;
        info->value = first;
        ok = !L->status;
    }
    host_free(L->ctx, v, (size_t)cap * item);
    return ok;
}

static bool control_done(imp_lex *L, kiln_graph *g, const imp_op *op) {
    if (L->status) return false;
    return imp_check_graph(L, g, op->at, op->spell);
}

static bool while_instr(hlo *P, imp_scope *s, imp_op *op, const extra *x, const group *init,
                        group *out) {
    imp_lex *L = P->L;
    if (!x->cond || !x->body)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                           "while without condition= and body=");
    while_comps w = {{P, x->cond, s, true, NULL}, {P, x->body, s, true, NULL}};
    out->n = init->n;
    kiln_while_loop(s->g, while_cond, while_body, &w, init->n, init->v, out->v);
    return control_done(L, s->g, op);
}

/* conditional(index, ops...) with branch_computations, or (pred, t, f) with
 * true_computation / false_computation; an index outside [0, n) takes the last branch. */
static bool conditional(hlo *P, imp_scope *s, imp_op *op, const extra *x, const group *ops,
                        int n_ops, group *out) {
    imp_lex *L = P->L;
    kiln_graph *g = s->g;
    int nb = x->n_branches;
    const comp *cs[BRANCH_MAX] = {0};
    if (x->true_c && x->false_c)
        nb = 2, cs[0] = x->true_c, cs[1] = x->false_c;
    else
        for (int i = 0; i < nb && i < BRANCH_MAX; i++) cs[i] = x->branches[i];
    if (nb < 1 || nb > BRANCH_MAX || n_ops != nb + 1 || ops[0].n != 1)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s of %d branches and %d operands (kiln imports 1 to %d branches, an "
                           "operand each)",
                           op->spell, nb, n_ops, BRANCH_MAX);
    branches *b = host_alloc(L->ctx, sizeof *b);
    if (!b) return imp_oom(L, "kiln import (conditional)", sizeof *b);
    for (int i = 0; i < nb; i++) {
        b->args[i] = ops[i + 1];
        b->c[i] = (called){P, cs[i], s, false, &b->args[i]};
    }
    kiln_value idx = ops[0].v[0];
    kiln_dtype it = imp_value_type(g, idx).dtype;
    if (x->true_c) {
        idx = kiln_select(g, idx, kiln_scalar(g, KILN_DTYPE_I32, 0),
                          kiln_scalar(g, KILN_DTYPE_I32, 1));
    } else {
        kiln_value last = kiln_scalar(g, it, nb - 1);
        idx = kiln_select(g, kiln_compare(g, idx, kiln_scalar(g, it, 0), KILN_CMP_LT), last, idx);
    }
    int n_outs = 0;
    kiln_switch(g, idx, nb, branch_fns, b, 0, NULL, &n_outs, out->v);
    out->n = n_outs;
    host_free(L->ctx, b, sizeof *b);
    return control_done(L, g, op);
}

/* call(ops), to_apply=c: c read again on this graph with its parameters the operands. */
static bool call_instr(hlo *P, imp_scope *s, imp_op *op, const extra *x, const group *ops,
                       int n_ops, group *out) {
    imp_lex *L = P->L;
    if (!x->to_apply)
        return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "call without to_apply=");
    imp_scope cs = {.g = s->g};
    bool ok = computation(P, x->to_apply, &cs, n_ops, ops, &out->n, out->v, IMP_MAX_VALUES);
    imp_scope_free(L, &cs);
    return ok;
}

/* What an instruction's opcode does with its operands, once they and its attributes are
 * read: the structural ones here, the rest through ops.c. */
static bool instr_op(hlo *P, imp_scope *s, imp_op *op, const extra *x, group *ops, int n_ops,
                     group *out) {
    imp_lex *L = P->L;
    const char *n = op->name;
    if (!strcmp(n, "tuple")) {
        out->n = 0;
        for (int i = 0; i < n_ops; i++) {
            if (ops[i].n != 1)
                return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "a tuple inside a tuple");
            out->v[out->n++] = ops[i].v[0];
        }
        return true;
    }
    if (!strcmp(n, "get_tuple_element")) {
        if (n_ops != 1 || x->index < 0 || x->index >= ops[0].n)
            return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                               "get-tuple-element index=%lld of a tuple of %d", (long long)x->index,
                               n_ops ? ops[0].n : 0);
        out->n = 1;
        out->v[0] = ops[0].v[x->index];
        return true;
    }
    if (!strcmp(n, "copy") || !strcmp(n, "optimization_barrier")) {
        if (n_ops != 1)
            return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "%s of %d operands",
                               op->spell, n_ops);
        *out = ops[0];
        return true;
    }
    if (!strcmp(n, "while")) {
        if (n_ops != 1)
            return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "while of %d operands",
                               n_ops);
        return while_instr(P, s, op, x, &ops[0], out);
    }
    if (!strcmp(n, "conditional")) return conditional(P, s, op, x, ops, n_ops, out);
    if (!strcmp(n, "call")) return call_instr(P, s, op, x, ops, n_ops, out);
    bool linalg = !strcmp(n, "custom_call") && imp_linalg_target(x->target);
    if (!strcmp(n, "custom_call") && !linalg) { /* a sharding annotation: the identity */
        if (!imp_sharding_target(x->target))
            return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                               "%s \"%s\": kiln has no op for this custom call (docs/import.md)",
                               op->spell, x->target);
        if (n_ops != 1 || ops[0].n != 1)
            return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "%s of %d operands", op->spell,
                               n_ops);
        *out = ops[0];
        return true;
    }
    if (!strcmp(n, "sort") && x->to_apply) {
        comp_body(P, x->to_apply);
        op->body = &P->body;
    }
    if (!strcmp(n, "select_and_scatter")) {
        if (x->select) comp_body(P, x->select);
        op->body = x->select ? &P->body : NULL;
        if (x->scatter && !comp_combine(P, x->scatter, &op->combine)) return false;
    }
    bool arg = !strcmp(n, "reduce") && n_ops == 4; /* jnp.argmax's (values, indices) */
    if ((!strcmp(n, "reduce") || !strcmp(n, "reduce_window") || !strcmp(n, "scatter")) &&
        x->to_apply &&
        !(arg ? comp_arg_combine(P, x->to_apply, &op->combine)
              : comp_combine(P, x->to_apply, &op->combine)))
        return false;
    if (arg && op->combine == IMP_COMBINE_NONE)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s of 2 operands whose body is not jnp.argmax's or argmin's: kiln "
                           "reduces one operand at a time",
                           op->spell);
    if (!strcmp(n, "reduce") && n_ops != 2 && !arg)
        return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED,
                           "%s of %d operands: kiln reduces one at a time, or two as "
                           "jnp.argmax / argmin do",
                           op->spell, n_ops / 2);
    for (int i = 0; i < n_ops; i++) {
        if (ops[i].n != 1)
            return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "%s of a tuple operand",
                               op->spell);
        if (op->n_in == IMP_MAX_OPERANDS)
            return imp_fail_at(L, op->at, KILN_STATUS_UNIMPLEMENTED, "%s of more than %d operands",
                               op->spell, IMP_MAX_OPERANDS);
        op->in_const[op->n_in] = ops[i].is_const;
        op->in_value[op->n_in] = ops[i].value;
        op->in_uns[op->n_in] = ops[i].uns;
        op->in[op->n_in++] = ops[i].v[0];
    }

    out->n = arg ? 2 : 1;
    if (!strcmp(n, "sort") || !strcmp(n, "top_k") || linalg) out->n = op->n_out;
    if (linalg) { /* LAPACK's Cholesky factor or triangular solve: named with its target */
        char spell[2 * IMP_MAX_NAME];
        const char *was = op->spell;
        snprintf(spell, sizeof spell, "%s \"%s\"", was, x->target);
        op->spell = spell;
        bool ok = imp_linalg_call(L, s->g, op, x->target, out->v);
        op->spell = was;
        return ok;
    }
    return imp_emit(L, s->g, op, out->v);
}

/* One instruction's working space: large, so kept off the stack (computations nest). */
typedef struct instr_ctx {
    group ops[IMP_MAX_VALUES];
    kiln_value pool[IMP_MAX_VALUES]; /* the operands' values */
    int n_pool;
    kiln_value out_vals[IMP_MAX_VALUES];
    group out;
    imp_op op;
} instr_ctx;

/* "[ROOT] name = type opcode(operands), attr=value, ..." */
static bool instruction(hlo *P, imp_scope *s, int n_args, const group *args, instr_ctx *I,
                        bool *root, imp_entry **bound) {
    imp_lex *L = P->L;
    imp_op *op = &I->op;
    memset(op, 0, sizeof *op);
    I->n_pool = 0;
    I->out = (group){.n = 0, .v = I->out_vals};
    *root = imp_accept_word(L, "ROOT");
    const char *nm, *opc;
    size_t nn, on;
    char spell[IMP_MAX_NAME], canon[IMP_MAX_NAME];
    if (!name(L, &nm, &nn, "an instruction's name") || !imp_expect(L, '=') ||
        !hlo_type(L, op->out, &op->n_out, IMP_MAX_OPERANDS))
        return false;
    if (op->n_out > IMP_MAX_OPERANDS) op->n_out = IMP_MAX_OPERANDS; /* a tuple's: not checked */
    imp_skip(L);
    op->at = imp_here(L);
    if (!name(L, &opc, &on, "an opcode") || !imp_expect(L, '(') || !imp_count_op(L)) return false;
    snprintf(spell, sizeof spell, "%.*s", (int)on, opc);
    canonical(opc, on, canon);
    op->spell = spell, op->name = canon;
    imp_entry info = {0};
    int n_ops = 0;
    if (!strcmp(canon, "parameter")) {
        int64_t k;
        if (!imp_int(L, &k, "a parameter number") || !imp_expect(L, ')')) return false;
        if (args && (k < 0 || k >= n_args))
            return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT,
                               "parameter(%lld) of a computation given %d", (long long)k, n_args);
        if (args)
            I->out = args[k];
        else if (k >= 0 && k < P->n_params)
            I->out.n = 1, I->out.v[0] = P->params[k];
        else
            return imp_fail_at(L, op->at, KILN_STATUS_INVALID_ARGUMENT, "parameter(%lld)",
                               (long long)k);
    } else if (!strcmp(canon, "constant")) {
        if (!literal(L, s, op, &I->out, &info) || !imp_expect(L, ')')) return false;
    } else {
        if (!imp_accept(L, ')')) {
            do {
                if (n_ops == IMP_MAX_VALUES)
                    return imp_fail(L, "more than %d operands", IMP_MAX_VALUES);
                if (!operand(L, s, &I->ops[n_ops], I->pool, &I->n_pool)) return false;
                n_ops++;
            } while (imp_accept(L, ','));
            if (!imp_expect(L, ')')) return false;
        }
    }
    extra x = {0};
    for (;;) {
        imp_skip_blanks(L);
        if (imp_peek(L) != ',') break;
        imp_advance(L, 1);
        char key[IMP_MAX_NAME];
        if (!imp_ident(L, key, NULL, "an attribute") || !imp_expect(L, '=') ||
            !attr(P, op, &x, key))
            return false;
    }
    if (strcmp(canon, "parameter") && strcmp(canon, "constant")) {
        if (!instr_op(P, s, op, &x, I->ops, n_ops, &I->out)) return false;
        if ((!strcmp(canon, "broadcast_in_dim") || !strcmp(canon, "reshape")) && n_ops == 1 &&
            I->ops[0].is_const) /* still a splat: a reduction's init */
            info.is_const = true, info.value = I->ops[0].value;
    }
    *bound = imp_scope_bind(L, s, nm, nn, I->out.n, I->out.v);
    if (*bound) (*bound)->is_const = info.is_const, (*bound)->value = info.value;
    if (*bound) (*bound)->uns = op->n_out == 1 && op->out[0].uns;
    return *bound != NULL;
}

/* Reads computation c into scope s: its parameters are args[0..n_args) (NULL: the entry's,
 * P->params), its ROOT's values go to outs. */
static bool computation(hlo *P, const comp *c, imp_scope *s, int n_args, const group *args,
                        int *n_out, kiln_value *outs, int max_out) {
    imp_lex *L = P->L;
    if (++L->depth > IMP_MAX_DEPTH) {
        L->depth--;
        return imp_fail(L, "computations nested more than %d deep", IMP_MAX_DEPTH);
    }
    imp_mark back = imp_mark_here(L);
    imp_go(L, c->body);
    instr_ctx *I = host_alloc(L->ctx, sizeof *I);
    bool ok = I != NULL, have_root = false;
    if (!I) imp_oom(L, "kiln import (instruction)", sizeof *I);
    while (ok && !imp_accept(L, '}')) {
        bool root;
        imp_entry *e = NULL;
        if (!(ok = instruction(P, s, n_args, args, I, &root, &e))) break;
        if (root && I->out.n > max_out) {
            ok = imp_fail_at(L, I->op.at, KILN_STATUS_UNIMPLEMENTED,
                             "a ROOT of %d values where at most %d are taken", I->out.n, max_out);
            break;
        }
        if (root) {
            have_root = true;
            *n_out = I->out.n;
            for (int i = 0; i < I->out.n; i++) outs[i] = I->out.v[i];
        }
    }
    if (ok && !have_root) ok = imp_fail(L, "computation %.*s has no ROOT", (int)c->len, c->name);
    host_free(L->ctx, I, sizeof *I);
    imp_go(L, back);
    L->depth--;
    return ok && !L->status;
}

/* The entry's parameter(k) instructions, read ahead so the graph's parameters are made
 * in index order, whatever order the text lists them in. */
static bool entry_params(hlo *P, kiln_graph *g) {
    imp_lex *L = P->L;
    const comp *c = &P->comps[P->entry];
    imp_mark back = imp_mark_here(L);
    imp_go(L, c->body);
    imp_type *types = host_alloc(L->ctx, IMP_MAX_VALUES * sizeof *types);
    bool *seen = host_calloc(L->ctx, IMP_MAX_VALUES, sizeof *seen);
    int n = 0;
    if (!types || !seen) imp_oom(L, "kiln import (parameters)", IMP_MAX_VALUES * sizeof *types);
    while (!L->status && !imp_accept(L, '}')) {
        imp_accept_word(L, "ROOT");
        const char *nm, *opc;
        size_t nn, on;
        imp_type t[IMP_MAX_OPERANDS];
        int nt;
        imp_loc at = imp_here(L);
        if (!name(L, &nm, &nn, "an instruction's name") || !imp_expect(L, '=') ||
            !hlo_type(L, t, &nt, IMP_MAX_OPERANDS) || !name(L, &opc, &on, "an opcode"))
            break;
        if (on == 9 && !memcmp(opc, "parameter", 9)) {
            int64_t k;
            if (!imp_expect(L, '(') || !imp_int(L, &k, "a parameter number")) break;
            if (k < 0 || k >= IMP_MAX_VALUES || nt != 1 || seen[k]) {
                imp_fail_at(L, at, KILN_STATUS_UNIMPLEMENTED,
                            "parameter(%lld): kiln imports %d array parameters, each once",
                            (long long)k, IMP_MAX_VALUES);
                break;
            }
            seen[k] = true, types[k] = t[0];
            if (k + 1 > n) n = (int)k + 1;
        }
        end_of_line(L);
    }
    for (int k = 0; !L->status && k < n; k++) {
        if (!seen[k]) {
            imp_fail(L, "the ENTRY computation has no parameter(%d)", k);
            break;
        }
        char pname[32];
        snprintf(pname, sizeof pname, "arg%d", k);
        P->params[k] = kiln_parameter(g, pname, types[k].dtype, types[k].rank, types[k].dims);
        imp_check_graph(L, g, imp_here(L), "parameter");
    }
    P->n_params = L->status ? 0 : n;
    host_free(L->ctx, types, IMP_MAX_VALUES * sizeof *types);
    host_free(L->ctx, seen, IMP_MAX_VALUES * sizeof *seen);
    imp_go(L, back);
    return !L->status;
}

kiln_status imp_hlo(imp_lex *L, kiln_graph **out) {
    hlo *P = host_alloc(L->ctx, sizeof *P);
    if (!P) return imp_oom(L, "kiln import", sizeof *P), L->status;
    memset(P, 0, sizeof *P);
    P->L = L;
    kiln_graph *g = NULL;
    if (scan_module(P)) {
        kiln_status s = kiln_graph_create(L->ctx, "main", &g);
        if (s) L->status = s;
    }
    if (!L->status && entry_params(P, g)) {
        imp_scope sc = {.g = g};
        kiln_value *outs = host_alloc(L->ctx, IMP_MAX_VALUES * sizeof *outs);
        int n_out = 0;
        if (!outs) imp_oom(L, "kiln import (results)", IMP_MAX_VALUES * sizeof *outs);
        if (outs &&
            computation(P, &P->comps[P->entry], &sc, 0, NULL, &n_out, outs, IMP_MAX_VALUES)) {
            kiln_status s = kiln_graph_finish(g, n_out, outs);
            if (s) imp_check_graph(L, g, imp_here(L), "ROOT");
            if (s && !L->status) L->status = s;
        }
        host_free(L->ctx, outs, IMP_MAX_VALUES * sizeof *outs);
        imp_scope_free(L, &sc);
    }
    host_free(L->ctx, P->comps, P->cap_comps * sizeof *P->comps);
    host_free(L->ctx, P, sizeof *P);
    if (L->status) {
        kiln_graph_destroy(g);
        return L->status;
    }
    *out = g;
    return KILN_STATUS_OK;
}
