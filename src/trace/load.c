/* load.c — graphs to and from text files: kiln_graph_save writes the IR's text form
 * (src/ir/print.c, with every constant value), kiln_graph_parse / kiln_graph_load read it
 * back. The text is replayed through the tracer (build: each op's attributes read as the
 * table KN_ATTRS declares them), so a loaded graph is checked exactly as a traced one is,
 * and each node's printed type must equal the type the tracer gives: a hand-edited file
 * that breaks a shape rule fails with the builder's message, prefixed with the text's line.
 *
 * Invariants: the parser never reads past the text's length (it need not end in NUL); every
 * failure sets the context's message (file:line: what was expected, what was found) and
 * leaves no graph behind; locations in the text ("# model.c:12") become the nodes' source
 * locations, with the file names owned by the graph (ir_graph_own_file).
 *
 * Not in the text: composite records (a loaded softmax is differentiated through its parts,
 * with the same result) and the roles kiln_grad gives values (a loaded training step plans
 * as one, but its memory report shows no classes). */
#include "trace.h"
#include "base/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Files larger than this are refused before reading: a graph's text is ~60 bytes a node. */
#define LOAD_MAX_BYTES ((size_t)1 << 30)
#define MAX_IDENT      64
/* Sub-graphs nested deeper than this are refused: the reader, the verifier, the printer and
 * the interpreter recurse once per level, so the text must not choose the stack's depth. */
#define LOAD_MAX_DEPTH 64

typedef struct id_value {
    uint32_t text_id; /* %N in the text */
    kiln_value v;     /* what its builder returned */
} id_value;

/* An attribute list "name=[a,b,c]" or "axis=N", kept as numbers until the op asks. */
typedef struct attr {
    char name[MAX_IDENT];
    int n;
    int64_t v[KILN_MAX_RANK];
    double f;  /* a single value as a double: the integer's, or a real one ("0.125") */
    bool real; /* the value had a fraction or an exponent: only f holds it */
    bool list;
    bool used;
} attr;

/* The most attributes one line may hold: a convolution's eleven (its kind, three specs,
 * six spatial lists, groups) and room for the dot's four lists. */
#define LOAD_MAX_ATTRS 16

typedef struct parser {
    kiln_context *ctx;
    const char *src, *name; /* the text and what messages call it */
    size_t len, pos;
    int line;
    kiln_graph *g;
    id_value *ids;
    uint32_t n_ids, cap_ids;
    kiln_value *ins;
    uint32_t n_ins, cap_ins;
    attr attrs[LOAD_MAX_ATTRS];
    int n_attrs;
    int depth; /* 0 for the text's graph, k for a sub-graph k levels inside it */
    kiln_status status;
} parser;

/* ------------------------------------------------------------- messages ---- */

static bool fail(parser *p, const char *fmt, ...) KN_PRINTF(2, 3);
static bool fail(parser *p, const char *fmt, ...) {
    if (p->status) return false;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->status = ctx_error(p->ctx, KILN_STATUS_INVALID_ARGUMENT, "%s:%d: %s", p->name, p->line, msg);
    return false;
}

/* Gives the message already set (by fail) the status code instead. */
static bool restatus(parser *p, kiln_status code) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kiln_last_error(p->ctx));
    p->status = ctx_error(p->ctx, code, "%s", msg);
    return false;
}

static bool oom(parser *p, const char *what, size_t size) {
    if (!p->status) p->status = ctx_oom(p->ctx, what, size);
    return false;
}

/* What the text holds at the cursor, for "expected X, found Y" (up to 24 characters of the
 * line, or "the end of the line"). */
static const char *found(const parser *p, char *buf, size_t n) {
    size_t e = p->pos;
    while (e < p->len && p->src[e] != '\n' && e - p->pos < 24) e++;
    if (e == p->pos) return p->pos < p->len ? "the end of the line" : "the end of the text";
    snprintf(buf, n, "\"%.*s\"", (int)(e - p->pos), p->src + p->pos);
    return buf;
}

static bool expected(parser *p, const char *what) {
    char b[40];
    return fail(p, "expected %s, found %s", what, found(p, b, sizeof b));
}

/* ---------------------------------------------------------------- lexing ---- */

static int peek(const parser *p) {
    return p->pos < p->len ? (unsigned char)p->src[p->pos] : -1;
}

static void skip_blanks(parser *p) {
    while (p->pos < p->len &&
           (p->src[p->pos] == ' ' || p->src[p->pos] == '\t' || p->src[p->pos] == '\r'))
        p->pos++;
}

static bool accept(parser *p, char c) {
    skip_blanks(p);
    if (peek(p) != (unsigned char)c) return false;
    p->pos++;
    return true;
}

static bool expect(parser *p, char c) {
    char what[8] = {'"', c, '"', 0};
    return accept(p, c) || expected(p, what);
}

/* Ends a line: blanks, then a newline (or the end of the text). */
static bool end_line(parser *p) {
    skip_blanks(p);
    if (p->pos >= p->len) return true;
    if (p->src[p->pos] != '\n') return expected(p, "the end of the line");
    p->pos++, p->line++;
    return true;
}

/* Skips empty lines. */
static void skip_empty_lines(parser *p) {
    for (;;) {
        size_t save = p->pos;
        skip_blanks(p);
        if (peek(p) == '\n') {
            p->pos++, p->line++;
            continue;
        }
        p->pos = save;
        return;
    }
}

static bool is_ident_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool ident(parser *p, char *out, const char *what) {
    skip_blanks(p);
    size_t n = 0;
    while (p->pos < p->len && is_ident_char(peek(p))) {
        if (n + 1 >= MAX_IDENT) return fail(p, "%s too long", what);
        out[n++] = p->src[p->pos++];
    }
    out[n] = 0;
    return n ? true : expected(p, what);
}

static bool integer(parser *p, int64_t *out, const char *what) {
    skip_blanks(p);
    size_t s = p->pos;
    bool neg = accept(p, '-');
    if (p->pos >= p->len || peek(p) < '0' || peek(p) > '9') {
        p->pos = s;
        return expected(p, what);
    }
    uint64_t v = 0;
    while (p->pos < p->len && peek(p) >= '0' && peek(p) <= '9') {
        unsigned d = (unsigned)(peek(p) - '0');
        if (v > (UINT64_MAX - d) / 10 || v * 10 + d > (uint64_t)INT64_MAX + neg) {
            p->pos = s;
            return fail(p, "%s out of range", what);
        }
        v = v * 10 + d;
        p->pos++;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* A number as the printer writes constants: integers, %.17g floats, nan, inf, true, false. */
static bool number(parser *p, kiln_dtype t, void *out) {
    skip_blanks(p);
    char buf[64];
    size_t n = 0;
    while (p->pos + n < p->len && n + 1 < sizeof buf &&
           (is_ident_char((unsigned char)p->src[p->pos + n]) || strchr("+-.", p->src[p->pos + n])))
        n++;
    memcpy(buf, p->src + p->pos, n);
    buf[n] = 0;
    if (!n) return expected(p, "a number");
    if (t == KILN_DTYPE_BOOL) {
        if (strcmp(buf, "true") && strcmp(buf, "false"))
            return fail(p, "expected true or false, found \"%s\"", buf);
        *(uint8_t *)out = buf[0] == 't';
    } else if (t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64) {
        char *end;
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        if (*end || errno || (t == KILN_DTYPE_I32 && (v < INT32_MIN || v > INT32_MAX)))
            return fail(p, "\"%s\" is not a %s value", buf, t == KILN_DTYPE_I32 ? "i32" : "i64");
        if (t == KILN_DTYPE_I32)
            *(int32_t *)out = (int32_t)v;
        else
            *(int64_t *)out = v;
    } else if (!strncmp(buf, "nan0x", 5)) { /* a NaN's bits, its payload kept */
        char *end;
        errno = 0;
        unsigned long long bits = strtoull(buf + 5, &end, 16);
        size_t size = kiln_dtype_itemsize(t);
        bool plain;
        if (*end || errno || (size < 8 && bits >> (8 * size)) ||
            !ir_float_bits_nan(t, bits, &plain))
            return fail(p, "\"%s\" is not a %s NaN's bits", buf, kiln_dtype_name(t));
        if (size == 8) memcpy(out, &bits, 8);
        if (size == 4) memcpy(out, &(uint32_t){(uint32_t)bits}, 4);
        if (size == 2) memcpy(out, &(uint16_t){(uint16_t)bits}, 2);
    } else {
        char *end;
        double v = strtod(buf, &end);
        if (*end) return fail(p, "\"%s\" is not a number", buf);
        ir_scalar_store(t, v, out); /* rounds to the dtype, to nearest even */
    }
    p->pos += n;
    return true;
}

/* A double-quoted string with the printer's escapes (\" \\ \' \xHH) into out (n bytes). */
static bool quoted(parser *p, char *out, size_t n) {
    if (!expect(p, '"')) return false;
    size_t k = 0;
    for (;;) {
        if (p->pos >= p->len || p->src[p->pos] == '\n') return fail(p, "unterminated string");
        char c = p->src[p->pos++];
        if (c == '"') break;
        if (c == '\\') {
            if (p->pos >= p->len) return fail(p, "unterminated string");
            c = p->src[p->pos++];
            if (c == 'x') {
                unsigned v;
                char hex[3] = {0};
                if (p->pos + 2 > p->len) return fail(p, "bad \\x escape");
                memcpy(hex, p->src + p->pos, 2);
                if (sscanf(hex, "%2x", &v) != 1 || !v) return fail(p, "bad \\x escape");
                c = (char)v, p->pos += 2;
            } else if (c != '"' && c != '\\' && c != '\'') {
                return fail(p, "unknown escape \\%c in a string", c);
            }
        }
        if (k + 1 >= n) return fail(p, "string longer than %zu bytes", n - 1);
        out[k++] = c;
    }
    out[k] = 0;
    return true;
}

/* "f32[2,3]" */
static bool type(parser *p, kiln_dtype *t, int *rank, int64_t *dims) {
    char name[MAX_IDENT];
    if (!ident(p, name, "a type such as f32[2,3]")) return false;
    int t_ = KILN_DTYPE_INVALID + 1;
    while (ir_dtype_valid((kiln_dtype)t_) && strcmp(kiln_dtype_name((kiln_dtype)t_), name)) t_++;
    if (!ir_dtype_valid((kiln_dtype)t_))
        return fail(p, "unknown dtype \"%s\" (f32, f64, i32, i64, bool, bf16, f16)", name);
    *t = (kiln_dtype)t_;
    *rank = 0;
    if (p->pos >= p->len || p->src[p->pos] != '[') return expected(p, "\"[\" after the dtype");
    p->pos++;
    if (accept(p, ']')) return true;
    do {
        if (*rank == KILN_MAX_RANK) return fail(p, "more than %d dimensions", KILN_MAX_RANK);
        if (!integer(p, &dims[*rank], "a dimension")) return false;
        if (dims[*rank] < 0 || dims[*rank] > IR_DIM_MAX)
            return fail(p, "dimension %lld out of range", (long long)dims[*rank]);
        (*rank)++;
    } while (accept(p, ','));
    return expect(p, ']');
}

/* "%12" */
static bool ref_id(parser *p, uint32_t *id) {
    if (!expect(p, '%')) return false;
    int64_t v;
    if (!integer(p, &v, "a value number after %")) return false;
    if (v <= 0 || v > UINT32_MAX) return fail(p, "value number %%%lld out of range", (long long)v);
    *id = (uint32_t)v;
    return true;
}

/* The value the text calls %id, which must be defined above. */
static bool lookup(parser *p, uint32_t id, kiln_value *v) {
    uint32_t lo = 0, hi = p->n_ids;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->ids[mid].text_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == p->n_ids || p->ids[lo].text_id != id)
        return fail(p, "%%%u is used before it is defined", id);
    *v = p->ids[lo].v;
    return true;
}

/* ------------------------------------------------------------ attributes ---- */

/* A single attribute value: an integer, or a real number as the printer writes %.17g
 * ("0.125", "1e-05", and "nan", "-nan", "inf", "-inf": a gather's fill value), which only
 * float_attr reads. */
static bool attr_number(parser *p, attr *a) {
    skip_blanks(p);
    size_t n = 0;
    bool real = false;
    size_t sign = p->pos < p->len && p->src[p->pos] == '-';
    if (p->len - p->pos >= sign + 3 && (!strncmp(p->src + p->pos + sign, "nan", 3) ||
                                        !strncmp(p->src + p->pos + sign, "inf", 3))) {
        bool nan = p->src[p->pos + sign] == 'n';
        a->f = sign ? (nan ? -NAN : -INFINITY) : (nan ? NAN : INFINITY);
        a->real = true;
        p->pos += sign + 3;
        return true;
    }
    while (p->pos + n < p->len && strchr("0123456789+-.eE", p->src[p->pos + n])) {
        char c = p->src[p->pos + n++];
        real |= c == '.' || c == 'e' || c == 'E';
    }
    char buf[64], *end;
    if (n >= sizeof buf) return fail(p, "a number of %zu characters is too long", n);
    memcpy(buf, p->src + p->pos, n);
    buf[n] = 0;
    a->f = strtod(buf, &end); /* also for integers: "-0" is -0.0 to float_attr */
    if (!real) return integer(p, &a->v[0], "a number");
    if (*end) return fail(p, "\"%s\" is not a number", buf);
    a->real = true;
    p->pos += n;
    return true;
}

static bool parse_attrs(parser *p) {
    p->n_attrs = 0;
    for (;;) {
        skip_blanks(p);
        if (!is_ident_char(peek(p))) return true;
        if (p->n_attrs == (int)(sizeof p->attrs / sizeof *p->attrs))
            return fail(p, "too many attributes");
        attr *a = &p->attrs[p->n_attrs++];
        memset(a, 0, sizeof *a);
        if (!ident(p, a->name, "an attribute")) return false;
        if (!accept(p, '=')) continue; /* a bare word: the compare direction */
        if (accept(p, '[')) {
            a->list = true;
            if (accept(p, ']')) continue;
            do {
                if (a->n == KILN_MAX_RANK)
                    return fail(p, "%s has more than %d entries", a->name, KILN_MAX_RANK);
                if (!integer(p, &a->v[a->n++], "a number")) return false;
            } while (accept(p, ','));
            if (!expect(p, ']')) return false;
        } else {
            a->n = 1;
            if (!attr_number(p, a)) return false;
        }
    }
}

static attr *find_attr(parser *p, const char *name) {
    for (int i = 0; i < p->n_attrs; i++)
        if (!strcmp(p->attrs[i].name, name)) return &p->attrs[i];
    return NULL;
}

/* A list attribute the op needs (when required) or may have: its entries as ints or
 * int64s, count in *n. */
static bool list_attr(parser *p, const char *op, const char *name, bool required, int *n,
                      int64_t *v64, int *v32) {
    attr *a = find_attr(p, name);
    *n = 0;
    if (!a) return !required || fail(p, "%s needs %s=[...]", op, name);
    if (!a->list) return fail(p, "%s of %s is a list: %s=[...]", name, op, name);
    a->used = true;
    *n = a->n;
    for (int i = 0; i < a->n; i++) {
        if (v64) v64[i] = a->v[i];
        if (v32) {
            if (a->v[i] < INT32_MIN || a->v[i] > INT32_MAX)
                return fail(p, "%s of %s: %lld out of range", name, op, (long long)a->v[i]);
            v32[i] = (int)a->v[i];
        }
    }
    return true;
}

static bool int_attr(parser *p, const char *op, const char *name, int *v) {
    attr *a = find_attr(p, name);
    if (!a || a->list || a->n != 1 || a->real) return fail(p, "%s needs %s=N", op, name);
    if (a->v[0] < INT32_MIN || a->v[0] > INT32_MAX)
        return fail(p, "%s of %s out of range", name, op);
    a->used = true;
    *v = (int)a->v[0];
    return true;
}

static bool float_attr(parser *p, const char *op, const char *name, double *v) {
    attr *a = find_attr(p, name);
    if (!a || a->list || a->n != 1) return fail(p, "%s needs %s=X (a number)", op, name);
    a->used = true;
    *v = a->f;
    return true;
}

/* A bare word the op may carry ("reverse", "causal"): true if present. */
static bool flag_attr(parser *p, const char *name) {
    for (int i = 0; i < p->n_attrs; i++)
        if (!p->attrs[i].list && !p->attrs[i].n && !strcmp(p->attrs[i].name, name))
            return p->attrs[i].used = true;
    return false;
}

static bool no_unused_attrs(parser *p, const char *op) {
    for (int i = 0; i < p->n_attrs; i++)
        if (!p->attrs[i].used) return fail(p, "%s has no attribute \"%s\"", op, p->attrs[i].name);
    return true;
}

/* ------------------------------------------------------------- nodes ---- */

typedef kiln_value (*unary_fn)(kiln_graph *, kiln_value);
typedef kiln_value (*binary_fn)(kiln_graph *, kiln_value, kiln_value);

#define LOAD_UNARY(e, name, ident, ...)  [IR_##e] = kiln_##ident,
#define LOAD_BINARY(e, name, ident, ...) [IR_##e] = kiln_##ident,
static const unary_fn unary_builders[IR_NUM_OPS] = {KN_UNARY_OPS(LOAD_UNARY)};
static const binary_fn binary_builders[IR_NUM_OPS] = {KN_BINARY_OPS(LOAD_BINARY)};

static bool need_inputs(parser *p, const char *op, uint32_t n) {
    return p->n_ins == n ||
           fail(p, "%s takes %u operand%s, the text gives %u", op, n, n == 1 ? "" : "s", p->n_ins);
}

static bool push_input(parser *p, kiln_value v) {
    if (p->n_ins == p->cap_ins) {
        uint32_t cap = p->cap_ins ? p->cap_ins * 2 : 8;
        kiln_value *n = host_alloc(p->ctx, cap * sizeof *n);
        if (!n) return oom(p, "kiln_graph_load (operands)", cap * sizeof *n);
        if (p->ins) memcpy(n, p->ins, p->n_ins * sizeof *n);
        host_free(p->ctx, p->ins, p->cap_ins * sizeof *p->ins);
        p->ins = n, p->cap_ins = cap;
    }
    p->ins[p->n_ins++] = v;
    return true;
}

/* The values of a constant: a scalar, "{a, b, ...}" with exactly numel entries. */
static bool constant_values(parser *p, kiln_dtype t, int rank, const int64_t *dims, void **data,
                            size_t *bytes) {
    ir_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
    int64_t numel;
    size_t esize = kiln_dtype_itemsize(t);
    if (!ir_shape_numel(&s, &numel) || !ir_shape_nbytes(&s, t, bytes))
        return fail(p, "constant too large");
    skip_blanks(p);
    bool braces = accept(p, '{');
    if (!braces && rank) return expected(p, "\"{\" and the constant's values");
    /* "{1024 values}": the short form kiln_graph_print writes for large constants. */
    size_t q = p->pos;
    while (q < p->len && (p->src[q] == ' ' || (p->src[q] >= '0' && p->src[q] <= '9'))) q++;
    if (braces && q > p->pos && q + 6 <= p->len && !memcmp(p->src + q, "values", 6))
        return fail(p,
                    "a constant of %lld values is shown only by its count: save the graph "
                    "with kiln_graph_save, which writes every value",
                    (long long)numel);
    /* Each value takes at least two bytes of text ("1,"): a shape the text cannot hold is
     * refused before its buffer is allocated. */
    if ((uint64_t)numel > (p->len - p->pos) / 2 + 1)
        return fail(p, "a constant of %lld values, but the text has only %zu bytes left",
                    (long long)numel, p->len - p->pos);
    *data = host_alloc(p->ctx, *bytes ? *bytes : 1);
    if (!*data) return oom(p, "kiln_graph_load (constant)", *bytes);
    for (int64_t i = 0; i < numel; i++) {
        if (i && !expect(p, ',')) return false;
        if (!number(p, t, (char *)*data + (size_t)i * esize)) return false;
    }
    if (braces && !accept(p, '}'))
        return fail(p, "constant of %lld values: expected \"}\" after the last one",
                    (long long)numel);
    return true;
}

/* kiln_graph_at for the node about to be made: its "# file:line" comment, or none. */
static bool location(parser *p) {
    skip_blanks(p);
    if (!accept(p, '#')) {
        kiln_graph_at(p->g, NULL, 0);
        return true;
    }
    skip_blanks(p);
    size_t s = p->pos, colon = 0;
    bool has_colon = false;
    while (p->pos < p->len && p->src[p->pos] != '\n') {
        if (p->src[p->pos] == ':') colon = p->pos, has_colon = true;
        p->pos++;
    }
    size_t e = p->pos;
    while (e > s && (p->src[e - 1] == ' ' || p->src[e - 1] == '\r')) e--;
    long line = 0;
    if (has_colon && colon + 1 < e) { /* "file:line"; the file may be empty */
        char num[16] = {0};
        size_t n = e - colon - 1;
        if (n < sizeof num) memcpy(num, p->src + colon + 1, n);
        char *end;
        line = strtol(num, &end, 10);
        if (*end || line < 0 || line > INT32_MAX) line = 0;
    }
    /* The name as the printer will write it again: its last path component, without
     * surrounding blanks; one with control characters is a comment, not a location. */
    size_t fs = s, fe = colon;
    for (size_t i = s; i < fe; i++) {
        unsigned char c = (unsigned char)p->src[i];
        if (c < 0x20 || c == 0x7f) line = 0;
        if (c == '/') fs = i + 1;
    }
    while (fs < fe && (p->src[fs] == ' ' || p->src[fs] == '\t')) fs++;
    while (fe > fs && (p->src[fe - 1] == ' ' || p->src[fe - 1] == '\t')) fe--;
    if (!line) { /* a comment, not a location */
        kiln_graph_at(p->g, NULL, 0);
        return true;
    }
    const char *file = ir_graph_own_file(p->g, p->src + fs, fe - fs);
    if (!file) return oom(p, "kiln_graph_load (file name)", fe - fs + 1);
    kiln_graph_at(p->g, file, (int)line);
    return true;
}

/* An IRA_WORD's value: the one of its words the text holds bare, or -1 with the words
 * listed as a message lists them ("eq, ne, ... or ge") in buf. */
static int word_attr(parser *p, const ir_attr_desc *d, char *buf, size_t n) {
    size_t len = 0;
    for (int k = 0; d->words(k); k++) {
        if (flag_attr(p, d->words(k))) return k;
        const char *sep = !k ? "" : d->words(k + 1) ? ", " : " or ";
        if (len < n) len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, d->words(k));
    }
    return -1;
}

/* A list attribute with one entry per axis of the first operand. */
static bool axis_list(parser *p, const char *op, const ir_attr_desc *d, int rank, int64_t *v64,
                      int *v32) {
    int n;
    if (!list_attr(p, op, d->name, true, &n, v64, v32)) return false;
    return n == rank ||
           fail(p, "%s: %s has %d entries for an operand of rank %d", op, d->name, n, rank);
}

static bool dot_attr(parser *p, const char *op, kiln_dot_dims *d) {
    int nb2, nc2;
    if (!list_attr(p, op, "lhs_batch", false, &d->n_batch, NULL, d->lhs_batch) ||
        !list_attr(p, op, "rhs_batch", false, &nb2, NULL, d->rhs_batch) ||
        !list_attr(p, op, "lhs_contract", true, &d->n_contract, NULL, d->lhs_contract) ||
        !list_attr(p, op, "rhs_contract", true, &nc2, NULL, d->rhs_contract))
        return false;
    return (nb2 == d->n_batch && nc2 == d->n_contract) ||
           fail(p, "%s: the lhs and rhs lists differ in length", op);
}

/* One attribute of node n, by its type, into the member the table names. An axis set is
 * checked as the builder checks it (trace_axes_mask), which reports against the graph:
 * false then leaves p->status unset and the caller takes the builder's message. */
static bool read_attr(parser *p, ir_node *n, const ir_attr_desc *d, const char *builder) {
    const char *op = ir_ops[n->op].name;
    int rank = n->n_in ? p->g->nodes[p->ins[0].id].shape.rank : 0, iv = 0, ints[KILN_MAX_RANK];
    void *m = (char *)&n->a + d->offset;
    bool flag;
    double real = -INFINITY;
    uint32_t mask;
    switch (d->type) {
    case IRA_PARAM: return true; /* the parameter line's own */
    case IRA_INT:
        if (!int_attr(p, op, d->name, &iv)) return false;
        return memcpy(m, &iv, sizeof iv), true;
    case IRA_WORD: {
        char words[128] = "";
        if ((iv = word_attr(p, d, words, sizeof words)) < 0)
            return fail(p, "%s needs %s: %s", op, d->name, words);
        return memcpy(m, &iv, sizeof iv), true;
    }
    case IRA_KIND: { /* the first word when none is written */
        char words[128] = "";
        if ((iv = word_attr(p, d, words, sizeof words)) < 0) iv = 0;
        return memcpy(m, &iv, sizeof iv), true;
    }
    case IRA_FLAG: flag = flag_attr(p, d->name); return memcpy(m, &flag, sizeof flag), true;
    case IRA_INTS: return axis_list(p, op, d, rank, NULL, m);
    case IRA_I64S: return axis_list(p, op, d, rank, m, NULL);
    case IRA_AXES:
        if (!list_attr(p, op, d->name, true, &iv, NULL, ints)) return false;
        if (!trace_axes_mask(p->g, builder, p->ins[0], iv, ints, &mask)) return false;
        return memcpy(m, &mask, sizeof mask), true;
    case IRA_FILL: /* optional: -inf when absent */
    case IRA_REAL:
        if ((d->type == IRA_REAL || find_attr(p, d->name)) && !float_attr(p, op, d->name, &real))
            return false;
        return memcpy(m, &real, sizeof real), true;
    case IRA_DOT: return dot_attr(p, op, m);
    case IRA_SPATIAL: {
        int64_t v[KILN_MAX_RANK];
        int ns = rank - 2, got;
        if (ns < 1 || ns > KILN_CONV_MAX_SPATIAL)
            return fail(p, "%s: operands of rank %d have %d spatial axes (1 to %d)", op, rank, ns,
                        KILN_CONV_MAX_SPATIAL);
        if (!list_attr(p, op, d->name, true, &got, v, NULL)) return false;
        if (got != ns)
            return fail(p, "%s: %s has %d entries for %d spatial axes", op, d->name, got, ns);
        return memcpy(m, v, (size_t)ns * sizeof *v), true;
    }
    }
    return fail(p, "internal: attribute type %d of %s", (int)d->type, op);
}

/* A result node must read a control node, for one of its results past the first, and be
 * the only one for it. */
static bool result_check(parser *p, int index) {
    uint32_t c = p->ins[0].id;
    const ir_node *n = &p->g->nodes[c];
    if (ir_ops[n->op].kind != IRK_CONTROL)
        return fail(p, "result reads a %s: only a while, scan or cond has results past its own",
                    ir_ops[n->op].name);
    uint32_t count = ir_control_n_results(n);
    if (count == 1)
        return fail(p,
                    "result index=%d: the %s has one result, itself (a result node stands for "
                    "one past the first)",
                    index, ir_ops[n->op].name);
    if (index < 1 || (uint32_t)index >= count)
        return fail(p, "result index=%d is outside [1, %u]: the %s has %u results", index,
                    count - 1, ir_ops[n->op].name, count);
    for (uint32_t k = c + 1; k < p->g->n_nodes; k++) {
        const ir_node *r = &p->g->nodes[k];
        if (r->op == IR_RESULT && ir_in(r)[0] == c && r->a.result_index == index)
            return fail(p, "a second result index=%d of one %s", index, ir_ops[n->op].name);
    }
    return true;
}

/* Makes the node of one "%N = op ..." line, after its operands and attributes are read.
 * The attributes are read as the table declares them (KN_ATTRS), and the node is emitted
 * under its builder's name through the tracer's own path (trace_emit: ir_infer types and
 * checks it); the few builders that do more than that (elide a no-op, broadcast their
 * operands, resolve a default) are called themselves. */
static kiln_value build(parser *p, ir_op op, kiln_dtype t, int rank, const int64_t *dims) {
    const ir_op_info *info = &ir_ops[op];
    kiln_graph *g = p->g;
    const kiln_value *in = p->ins;
    if (unary_builders[op])
        return need_inputs(p, info->name, 1) ? unary_builders[op](g, in[0]) : KN_NONE;
    if (binary_builders[op])
        return need_inputs(p, info->name, 2) ? binary_builders[op](g, in[0], in[1]) : KN_NONE;
    if (info->arity >= 0 && !need_inputs(p, info->name, (uint32_t)info->arity)) return KN_NONE;
    if (p->n_ins > INT32_MAX) return fail(p, "too many operands"), KN_NONE;
    char builder[MAX_IDENT + 8];
    snprintf(builder, sizeof builder, "kiln_%s", info->ident);
    ir_node n = {.op = op, .dtype = t, .shape = {.rank = rank}, .n_in = p->n_ins};
    for (int i = 0; i < rank; i++) n.shape.dims[i] = dims[i];
    int count;
    const ir_attr_desc *d = ir_op_attrs(op, &count);
    for (int i = 0; i < count; i++)
        if (!read_attr(p, &n, &d[i], builder)) return KN_NONE;
    if (op == IR_RESULT && !result_check(p, n.a.result_index)) return KN_NONE;
    switch (op) {
    case IR_CONVERT: return kiln_convert(g, in[0], t);
    case IR_BITCAST: return kiln_bitcast_convert(g, in[0], t);
    case IR_COMPARE: return kiln_compare(g, in[0], in[1], n.a.cmp);
    case IR_SELECT: return kiln_select(g, in[0], in[1], in[2]);
    case IR_RESHAPE: return kiln_reshape(g, in[0], rank, dims);
    case IR_CONCAT: return kiln_concatenate(g, (int)p->n_ins, in, n.a.axis);
    case IR_RANDOM: return trace_random(g, "kiln_graph_load", n.a.rng, t, in[0], in[1], in[2]);
    case IR_DYNAMIC_SLICE:
    case IR_DYNAMIC_UPDATE_SLICE: {
        uint32_t fixed = op == IR_DYNAMIC_SLICE ? 1 : 2;
        if (p->n_ins < fixed)
            return fail(p, "%s takes an operand%s and a start index per axis", info->name,
                        fixed == 2 ? ", an update" : ""),
                   KN_NONE;
        int k = (int)(p->n_ins - fixed);
        return fixed == 1 ? kiln_dynamic_slice(g, in[0], k, in + 1, n.a.dyn_sizes)
                          : kiln_dynamic_update_slice(g, in[0], in[1], k, in + 2);
    }
    case IR_ATTENTION: /* scale as written; the kind's operand count is the verifier's */
        return trace_attention_kind(g, builder, &n, in, p->n_ins);
    default: break;
    }
    uint32_t ids[IR_INLINE_INPUTS]; /* variadic ops took their builder above */
    for (uint32_t i = 0; i < p->n_ins && i < IR_INLINE_INPUTS; i++) ids[i] = in[i].id;
    return trace_emit(g, builder, &n, ids, p->n_ins);
}

static bool same_type(parser *p, uint32_t id, kiln_value v, kiln_dtype t, int rank,
                      const int64_t *dims) {
    kiln_dtype gt;
    int grank;
    int64_t gd[KILN_MAX_RANK];
    if (!kiln_value_type(p->g, v, &gt, &grank, gd))
        return fail(p, "internal: no type for %%%u", id);
    bool eq = gt == t && grank == rank;
    for (int i = 0; eq && i < rank; i++) eq = gd[i] == dims[i];
    if (eq) return true;
    ir_shape a = {.rank = rank}, b = {.rank = grank};
    for (int i = 0; i < rank; i++) a.dims[i] = dims[i];
    for (int i = 0; i < grank; i++) b.dims[i] = gd[i];
    char ta[IR_TYPE_STR_MAX], tb[IR_TYPE_STR_MAX];
    return fail(p, "%%%u: the text says %s, but the op gives %s", id,
                ir_type_str(t, &a, ta, sizeof ta), ir_type_str(gt, &b, tb, sizeof tb));
}

/* ------------------------------------------------------------ control ---- */

static bool parse_graph(parser *p, const char *graph_name_fallback);

/* True when the next line that is not empty opens a graph ("graph ..."); the cursor stays. */
static bool at_graph(parser *p) {
    size_t pos = p->pos;
    int line = p->line;
    skip_empty_lines(p);
    skip_blanks(p);
    bool yes = p->len - p->pos >= 5 && !memcmp(p->src + p->pos, "graph", 5) &&
               (p->len - p->pos == 5 || !is_ident_char((unsigned char)p->src[p->pos + 5]));
    p->pos = pos, p->line = line;
    return yes;
}

/* The sub-graph blocks after a control node's line (at text line `at`): a while's two (its
 * condition, then its body), a scan's one (its body), and for a cond every block up to the
 * next value or "return" (its branches in order: nothing else in a graph starts with
 * "graph", so the count needs no attribute). Each is read as a graph of its own, one level
 * deeper, by a parser of its own (its values are numbered from %1). On failure the blocks
 * read so far are gs[0..*n), which the caller destroys. */
static bool sub_graphs(parser *p, ir_op op, int at, kiln_graph **gs, uint32_t *n) {
    const char *name = ir_ops[op].name;
    uint32_t want = op == IR_WHILE ? 2 : op == IR_SCAN ? 1 : KILN_MAX_OUTPUTS;
    const char *what = op == IR_WHILE ? "its condition and its body" : "its body";
    for (*n = 0; at_graph(p); (*n)++) {
        skip_empty_lines(p);
        if (*n == want && op == IR_COND)
            return fail(p, "the cond at line %d has more than %d branches", at, KILN_MAX_OUTPUTS);
        if (*n == want)
            return fail(p, "the %s at line %d runs %u sub-graph%s (%s): this graph is one more",
                        name, at, want, want == 1 ? "" : "s", what);
        if (p->depth >= LOAD_MAX_DEPTH)
            return fail(p, "sub-graphs nested more than %d deep", LOAD_MAX_DEPTH);
        parser c = {.ctx = p->ctx,
                    .src = p->src,
                    .name = p->name,
                    .len = p->len,
                    .pos = p->pos,
                    .line = p->line,
                    .depth = p->depth + 1};
        bool ok = parse_graph(&c, name);
        host_free(p->ctx, c.ids, c.cap_ids * sizeof *c.ids);
        host_free(p->ctx, c.ins, c.cap_ins * sizeof *c.ins);
        p->pos = c.pos, p->line = c.line;
        if (!ok) {
            kiln_graph_destroy(c.g);
            p->status = c.status ? c.status : KILN_STATUS_INTERNAL; /* the message is set */
            return false;
        }
        gs[*n] = c.g;
    }
    if (op == IR_COND && !*n)
        return fail(p, "the cond at line %d has no branches: a graph block for each follows it",
                    at);
    if (op != IR_COND && *n < want)
        return fail(p, "the %s at line %d runs %u sub-graph%s (%s), but %u follow%s it", name, at,
                    want, want == 1 ? "" : "s", what, *n, *n == 1 ? "s" : "");
    return true;
}

/* The counts a control node's line gives, bounded as its builder bounds them. */
static bool control_counts(parser *p, const ir_node *n) {
    const char *op = ir_ops[n->op].name;
    int lo = n->op == IR_WHILE;
    if (n->a.ctl.n_carry < lo || n->a.ctl.n_carry > KILN_MAX_OUTPUTS)
        return fail(p, "%s: %s=%d is outside [%d, %d]", op,
                    n->op == IR_COND ? "operands" : "carries", n->a.ctl.n_carry, lo,
                    KILN_MAX_OUTPUTS);
    if (n->a.ctl.n_xs < 0 || n->a.ctl.n_xs > KILN_MAX_OUTPUTS)
        return fail(p, "%s: xs=%d is outside [0, %d]", op, n->a.ctl.n_xs, KILN_MAX_OUTPUTS);
    if (n->a.ctl.length < 0) return fail(p, "%s: length=%d is negative", op, n->a.ctl.length);
    return true;
}

/* The node's operands against the layout of ir.h ("ir_region"): the values it passes (a
 * cond's index first), then each sub-graph's captures, which are that graph's parameters
 * past the passed ones. */
static bool control_layout(parser *p, const ir_node *n, kiln_graph *const *gs, uint32_t n_gs) {
    const char *op = ir_ops[n->op].name;
    uint32_t passed = (uint32_t)n->a.ctl.n_carry + (uint32_t)n->a.ctl.n_xs;
    uint32_t need = passed + (n->op == IR_COND);
    for (uint32_t k = 0; k < n_gs; k++) {
        if (gs[k]->n_params < passed)
            return fail(p,
                        "%s: its sub-graph '%s' has %u parameter%s, fewer than the %u the node "
                        "passes it",
                        op, gs[k]->name, gs[k]->n_params, gs[k]->n_params == 1 ? "" : "s", passed);
        need += gs[k]->n_params - passed;
    }
    if (p->n_ins == need) return true;
    return fail(p,
                "%s has %u operands, but its layout takes %u: %s%u passed, then the captures "
                "(the parameters of each sub-graph past the %u passed)",
                op, p->n_ins, need, n->op == IR_COND ? "the index, " : "", passed, passed);
}

/* Makes a control node from its line's operands and attributes and the sub-graphs gs that
 * follow it, which it takes over (kept by the node's region, or destroyed). Typed and
 * checked by ir_infer, through the tracer's path, as a traced one is. */
static kiln_value build_control(parser *p, ir_op op, kiln_graph **gs, uint32_t n_gs) {
    char builder[MAX_IDENT + 8];
    snprintf(builder, sizeof builder, "kiln_%s", ir_ops[op].ident);
    ir_node n = {.op = op, .n_in = p->n_ins};
    int count;
    const ir_attr_desc *d = ir_op_attrs(op, &count);
    bool ok = true;
    for (int i = 0; i < count && ok; i++) ok = read_attr(p, &n, &d[i], builder);
    ok = ok && control_counts(p, &n) && control_layout(p, &n, gs, n_gs);
    uint32_t *ids = ok ? host_alloc(p->ctx, (p->n_ins ? p->n_ins : 1) * sizeof *ids) : NULL;
    if (ok && !ids) ok = oom(p, "kiln_graph_load (operands)", p->n_ins * sizeof *ids);
    if (!ok) {
        for (uint32_t k = 0; k < n_gs; k++) kiln_graph_destroy(gs[k]);
        return KN_NONE;
    }
    for (uint32_t i = 0; i < p->n_ins; i++) ids[i] = p->ins[i].id;
    kiln_value v = KN_NONE;
    if (!(n.region = ir_region_new(p->ctx, n_gs, gs))) /* it destroyed gs */
        oom(p, "kiln_graph_load (region)", sizeof *n.region);
    else if (!(v = trace_emit(p->g, builder, &n, ids, p->n_ins)).id)
        ir_region_unref(p->ctx, n.region);
    host_free(p->ctx, ids, (p->n_ins ? p->n_ins : 1) * sizeof *ids);
    return v;
}

/* One "%N = op ... : type  # file:line" line. */
static bool node_line(parser *p) {
    uint32_t id = 0;
    if (!ref_id(p, &id)) return false;
    if (p->n_ids && id <= p->ids[p->n_ids - 1].text_id)
        return fail(p, "%%%u after %%%u: values are numbered in increasing order", id,
                    p->ids[p->n_ids - 1].text_id);
    if (!expect(p, '=')) return false;
    char opname[MAX_IDENT];
    if (!ident(p, opname, "an op name")) return false;
    int op = 0;
    while (op < IR_NUM_OPS && strcmp(ir_ops[op].name, opname)) op++;
    if (op == IR_NUM_OPS) return fail(p, "unknown op \"%s\"", opname);

    char pname[256] = "";
    int64_t pindex = -1;
    int pkind = KILN_MEMORY_DEVICE;
    size_t cstart = 0;
    p->n_ins = 0;
    p->n_attrs = 0;
    if (op == IR_PARAMETER) {
        if (!integer(p, &pindex, "the parameter's number")) return false;
        skip_blanks(p);
        if (peek(p) == '"' && !quoted(p, pname, sizeof pname)) return false;
        skip_blanks(p);
        if (p->pos < p->len && is_ident_char(peek(p))) { /* a memory kind other than device */
            char word[MAX_IDENT];
            if (!ident(p, word, "a memory kind")) return false;
            for (pkind = KILN_MEMORY_DEVICE; ir_memory_kind_name(pkind); pkind++)
                if (!strcmp(word, ir_memory_kind_name(pkind))) break;
            if (!ir_memory_kind_name(pkind))
                return fail(p, "\"%s\" is not a memory kind (device, pinned_host)", word);
        }
    } else if (op == IR_CONSTANT) {
        skip_blanks(p);
        cstart = p->pos; /* the values are read once the type is known */
        while (p->pos < p->len && p->src[p->pos] != ':' && p->src[p->pos] != '\n') p->pos++;
    } else if (ir_ops[op].arity == 0 && (skip_blanks(p), peek(p) != '(')) {
        if (!parse_attrs(p)) return false; /* iota: no operand list */
    } else {
        if (!expect(p, '(')) return false;
        if (!accept(p, ')')) {
            do {
                uint32_t in = 0;
                kiln_value v;
                if (!ref_id(p, &in) || !lookup(p, in, &v) || !push_input(p, v)) return false;
            } while (accept(p, ','));
            if (!expect(p, ')')) return false;
        }
        if (!parse_attrs(p)) return false;
    }
    kiln_dtype t;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    if (!expect(p, ':') || !type(p, &t, &rank, dims)) return false;
    if (!location(p)) return false;
    bool control = ir_ops[op].kind == IRK_CONTROL;
    int at = p->line, after = 0;
    kiln_graph *subs[KILN_MAX_OUTPUTS];
    uint32_t n_subs = 0;
    if (control) {
        if (!end_line(p) || !sub_graphs(p, (ir_op)op, at, subs, &n_subs)) {
            for (uint32_t k = 0; k < n_subs; k++) kiln_graph_destroy(subs[k]);
            return false;
        }
        after = p->line, p->line = at; /* the node's own errors name its line */
    }

    kiln_value v = KN_NONE;
    if (control) {
        v = build_control(p, (ir_op)op, subs, n_subs);
        if (p->status || !no_unused_attrs(p, opname)) return false;
    } else if (op == IR_PARAMETER) {
        if (pindex != (int64_t)kiln_graph_num_parameters(p->g))
            return fail(p, "parameter %lld out of order: the next is %d", (long long)pindex,
                        kiln_graph_num_parameters(p->g));
        v = kiln_parameter_in_memory(p->g, pname[0] ? pname : NULL, t, rank, dims,
                                     (kiln_memory_kind)pkind);
    } else if (op == IR_CONSTANT) {
        size_t end = p->pos;
        p->pos = cstart;
        void *data = NULL;
        size_t bytes = 0;
        bool ok = constant_values(p, t, rank, dims, &data, &bytes);
        if (ok) {
            skip_blanks(p);
            if (peek(p) != ':') ok = expected(p, "\":\" after the constant's values");
        }
        if (ok) v = kiln_constant(p->g, t, rank, dims, data);
        if (data) host_free(p->ctx, data, bytes ? bytes : 1);
        if (!ok) return false;
        p->pos = end;
    } else {
        v = build(p, (ir_op)op, t, rank, dims);
        if (p->status) return false;
        if (!no_unused_attrs(p, opname)) return false;
    }
    if (!kiln_value_ok(v)) {
        if (p->status) return false;
        /* The builder's own message and status (a shape error stays KILN_STATUS_SHAPE, an
         * allocation failure KILN_STATUS_HOST_OOM), at the text's line. */
        fail(p, "%s", kiln_graph_error(p->g));
        return restatus(p, kiln_graph_status(p->g));
    }
    if (!same_type(p, id, v, t, rank, dims)) return false;
    if (p->n_ids == p->cap_ids) {
        uint32_t cap = p->cap_ids ? p->cap_ids * 2 : 64;
        id_value *n = host_alloc(p->ctx, cap * sizeof *n);
        if (!n) return oom(p, "kiln_graph_load (value table)", cap * sizeof *n);
        if (p->ids) memcpy(n, p->ids, p->n_ids * sizeof *n);
        host_free(p->ctx, p->ids, p->cap_ids * sizeof *p->ids);
        p->ids = n, p->cap_ids = cap;
    }
    p->ids[p->n_ids++] = (id_value){id, v};
    if (control) return p->line = after, true; /* its blocks ended the line */
    return end_line(p);
}

/* The header's parameter list must describe the parameter lines: same numbers, types and
 * names, in order. It is read first and checked at the end. */
typedef struct header_param {
    uint32_t id;
    kiln_dtype t;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    char name[256];
} header_param;

static bool check_header(parser *p, const header_param *hp, uint32_t n) {
    if (n != (uint32_t)kiln_graph_num_parameters(p->g))
        return fail(p, "the header lists %u parameters, the body makes %d", n,
                    kiln_graph_num_parameters(p->g));
    for (uint32_t i = 0; i < n; i++) {
        kiln_value v;
        if (!lookup(p, hp[i].id, &v)) return false;
        const ir_node *node = &p->g->nodes[v.id];
        if (node->op != IR_PARAMETER || node->a.param_index != (int)i)
            return fail(p, "the header's parameter %u is %%%u, which is not parameter %u", i,
                        hp[i].id, i);
        if (!same_type(p, hp[i].id, v, hp[i].t, hp[i].rank, hp[i].dims)) return false;
        if (strcmp(node->name ? node->name : "", hp[i].name))
            return fail(p, "the header names parameter %u \"%s\", its line \"%s\"", i, hp[i].name,
                        node->name ? node->name : "");
    }
    return true;
}

static bool parse_graph(parser *p, const char *graph_name_fallback) {
    skip_empty_lines(p);
    int open_line = p->line;
    char word[MAX_IDENT];
    if (!ident(p, word, "\"graph\"")) return false;
    if (strcmp(word, "graph")) return fail(p, "expected \"graph\", found \"%s\"", word);
    char gname[256];
    skip_blanks(p);
    if (peek(p) == '"') {
        if (!quoted(p, gname, sizeof gname)) return false;
    } else {
        size_t k = 0;
        while (p->pos < p->len && k + 1 < sizeof gname &&
               (is_ident_char(peek(p)) || strchr(".-/", p->src[p->pos])) && p->src[p->pos])
            gname[k++] = p->src[p->pos++];
        gname[k] = 0;
    }
    if (kiln_graph_create(p->ctx, gname[0] ? gname : graph_name_fallback, &p->g)) {
        p->status = KILN_STATUS_HOST_OOM; /* the message is set */
        return false;
    }
    header_param *hp = NULL;
    uint32_t n_hp = 0, cap_hp = 0;
    bool ok = expect(p, '(');
    if (ok && !accept(p, ')')) {
        do {
            if (n_hp == cap_hp) {
                uint32_t cap = cap_hp ? cap_hp * 2 : 8;
                header_param *n = host_alloc(p->ctx, cap * sizeof *n);
                if (!n) {
                    ok = oom(p, "kiln_graph_load (parameters)", cap * sizeof *n);
                    break;
                }
                if (hp) memcpy(n, hp, n_hp * sizeof *n);
                host_free(p->ctx, hp, cap_hp * sizeof *hp);
                hp = n, cap_hp = cap;
            }
            header_param *h = &hp[n_hp++];
            h->name[0] = 0;
            ok = ref_id(p, &h->id) && expect(p, ':') && type(p, &h->t, &h->rank, h->dims);
            if (ok) {
                skip_blanks(p);
                if (peek(p) == '"') ok = quoted(p, h->name, sizeof h->name);
            }
        } while (ok && accept(p, ','));
        ok = ok && expect(p, ')');
    }
    ok = ok && expect(p, '{') && end_line(p);
    while (ok) {
        skip_empty_lines(p);
        skip_blanks(p);
        if (p->pos >= p->len) {
            ok = fail(p,
                      "expected a value (%%N = ...) or \"return\", found the end of the text "
                      "inside graph '%s' (line %d)",
                      p->g->name, open_line);
            break;
        }
        if (peek(p) == '%') {
            ok = node_line(p);
            continue;
        }
        char w[MAX_IDENT];
        if (!(ok = ident(p, w, "a value (%N = ...) or \"return\""))) break;
        if (!strcmp(w, "graph")) {
            ok = fail(p, "a graph block here follows no while, scan or cond line (a control "
                         "node's sub-graphs follow its line)");
            break;
        }
        if (strcmp(w, "return")) {
            ok = fail(p, "expected a value (%%N = ...) or \"return\", found \"%s\"", w);
            break;
        }
        p->n_ins = 0;
        ok = expect(p, '(');
        if (ok && !accept(p, ')')) {
            do {
                uint32_t id = 0;
                kiln_value v;
                ok = ref_id(p, &id) && lookup(p, id, &v) && push_input(p, v);
            } while (ok && accept(p, ','));
            ok = ok && expect(p, ')');
        }
        ok = ok && end_line(p) && check_header(p, hp, n_hp);
        if (ok && p->n_ins > INT32_MAX) ok = fail(p, "too many outputs");
        kiln_status fs = ok ? kiln_graph_finish(p->g, (int)p->n_ins, p->ins) : KILN_STATUS_OK;
        if (fs) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", kiln_last_error(p->ctx));
            ok = fail(p, "%s", msg) || restatus(p, fs);
        }
        skip_empty_lines(p);
        ok = ok && expect(p, '}') && end_line(p);
        if (p->depth) break; /* a sub-graph: its enclosing graph goes on */
        skip_empty_lines(p);
        skip_blanks(p);
        if (ok && p->pos < p->len) ok = expected(p, "the end of the text after the graph's \"}\"");
        break;
    }
    host_free(p->ctx, hp, cap_hp * sizeof *hp);
    return ok;
}

kiln_status kiln_graph_parse(kiln_context *ctx, const char *text, size_t len, const char *name,
                             kiln_graph **out) {
    if (out) *out = NULL;
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out || (!text && len))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_parse: %s is NULL",
                         out ? "text" : "out");
    parser p = {
        .ctx = ctx, .src = text ? text : "", .len = len, .line = 1, .name = name ? name : "<text>"};
    bool ok = parse_graph(&p, "loaded");
    host_free(ctx, p.ids, p.cap_ids * sizeof *p.ids);
    host_free(ctx, p.ins, p.cap_ins * sizeof *p.ins);
    if (!ok) {
        kiln_graph_destroy(p.g);
        return p.status ? p.status : KILN_STATUS_INTERNAL;
    }
    *out = p.g;
    return KILN_STATUS_OK;
}

kiln_status kiln_graph_load(kiln_context *ctx, const char *path, kiln_graph **out) {
    if (out) *out = NULL;
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!path || !out)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_load: %s is NULL",
                         path ? "out" : "path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0) close(fd);
        return ctx_error(ctx, KILN_STATUS_IO, "kiln_graph_load: cannot read %s: %s", path,
                         e == EINVAL ? "not a regular file" : strerror(e));
    }
    if ((uint64_t)st.st_size > LOAD_MAX_BYTES) {
        close(fd);
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_graph_load: %s is %lld bytes, more than the %zu a graph's text may "
                         "have",
                         path, (long long)st.st_size, LOAD_MAX_BYTES);
    }
    size_t size = (size_t)st.st_size;
    char *buf = host_alloc(ctx, size ? size : 1);
    if (!buf) {
        close(fd);
        return ctx_oom(ctx, "kiln_graph_load", size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    int e = errno;
    close(fd);
    kiln_status s;
    if (got != size)
        s = ctx_error(ctx, KILN_STATUS_IO, "kiln_graph_load: reading %s: %s", path,
                      got < size ? "the file shrank while being read" : strerror(e));
    else
        s = kiln_graph_parse(ctx, buf, size, kn_path_base(path), out);
    host_free(ctx, buf, size ? size : 1);
    return s;
}

kiln_status kiln_graph_save(const kiln_graph *g, const char *path) {
    if (!g) return KILN_STATUS_INVALID_ARGUMENT;
    if (!path)
        return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT, "kiln_graph_save: path is NULL");
    if (!g->finished)
        return ctx_error(g->ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "kiln_graph_save: graph '%s' is not finished (kiln_graph_finish names its "
                         "outputs)",
                         g->name);
    strbuf sb;
    sb_init(&sb, g->ctx);
    ir_print_ex(g, &sb, true);
    if (sb.oom) {
        sb_free(&sb);
        return ctx_oom(g->ctx, "kiln_graph_save", 0);
    }
    /* Written beside the destination and renamed over it: the file is whole or absent. Not
     * mkstemp: its 0600 would make a saved graph unreadable to others, where a file written
     * in place gets 0666 less the umask. */
    size_t tsize = strlen(path) + 48;
    char *tmp = host_alloc(g->ctx, tsize);
    if (!tmp) {
        sb_free(&sb);
        return ctx_oom(g->ctx, "kiln_graph_save", tsize);
    }
    kiln_status s = KILN_STATUS_OK;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 64; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(tmp, tsize, "%s.tmp%d.%lx", path, (int)getpid(),
                 (unsigned long)ts.tv_nsec ^ (unsigned long)attempt << 20);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        s = ctx_error(g->ctx, KILN_STATUS_IO, "kiln_graph_save: cannot create a file beside %s: %s",
                      path, strerror(errno));
    } else {
        size_t done = 0;
        while (done < sb.len) {
            ssize_t w = write(fd, sb.data + done, sb.len - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            done += (size_t)w;
        }
        int e = errno;
        if (done != sb.len || fsync(fd))
            s = ctx_error(g->ctx, KILN_STATUS_IO, "kiln_graph_save: writing %s: %s", path,
                          strerror(done != sb.len ? e : errno));
        if (close(fd) && !s)
            s = ctx_error(g->ctx, KILN_STATUS_IO, "kiln_graph_save: writing %s: %s", path,
                          strerror(errno));
        if (!s && rename(tmp, path))
            s = ctx_error(g->ctx, KILN_STATUS_IO, "kiln_graph_save: cannot rename onto %s: %s",
                          path, strerror(errno));
        if (s) unlink(tmp);
    }
    host_free(g->ctx, tmp, tsize);
    sb_free(&sb);
    return s;
}
