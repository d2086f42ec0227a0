/* lex.c — the importer's cursor over the text: line and column, comments, identifiers,
 * numbers, lists and balanced groups, the types' element names, and its error messages.
 *
 * Invariants: nothing here reads past L->len; after the first error (L->status) every
 * call fails without moving, so a caller may chain them and check once; messages carry
 * the api's name, kiln's version, the line and the column (1-based, in bytes). */
#include "import.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- messages ---- */

imp_loc imp_here(const imp_lex *L) {
    return (imp_loc){L->line, (int)(L->pos - L->line_start) + 1};
}

static bool vfail(imp_lex *L, imp_loc at, kiln_status code, const char *fmt, va_list ap) {
    if (L->status) return false;
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(L->msg, sizeof L->msg, "%s (kiln %s): line %d, column %d: %s", L->api, kiln_version(),
             at.line, at.col, msg);
    L->status = ctx_error(L->ctx, code, "%s", L->msg);
    return false;
}

bool imp_fail_at(imp_lex *L, imp_loc at, kiln_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(L, at, code, fmt, ap);
    va_end(ap);
    return false;
}

bool imp_fail(imp_lex *L, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(L, imp_here(L), KILN_STATUS_INVALID_ARGUMENT, fmt, ap);
    va_end(ap);
    return false;
}

bool imp_expected(imp_lex *L, const char *what) {
    size_t e = L->pos;
    while (e < L->len && L->src[e] != '\n' && e - L->pos < 24) e++;
    if (e == L->pos)
        return imp_fail(L, "expected %s, found %s", what,
                        L->pos < L->len ? "the end of the line" : "the end of the text");
    return imp_fail(L, "expected %s, found \"%.*s\"", what, (int)(e - L->pos), L->src + L->pos);
}

bool imp_oom(imp_lex *L, const char *what, size_t size) {
    if (L->status) return false;
    L->status = ctx_oom(L->ctx, what, size);
    snprintf(L->msg, sizeof L->msg, "%s", kiln_last_error(L->ctx));
    return false;
}

bool imp_count_op(imp_lex *L) {
    if (L->status) return false;
    if (++L->ops <= IMP_MAX_OPS) return true;
    return imp_fail_at(L, imp_here(L), KILN_STATUS_UNIMPLEMENTED,
                       "the program reads more than %u ops (calls inlined counted again)",
                       IMP_MAX_OPS);
}

/* ---------------------------------------------------------------- cursor ---- */

int imp_peek(const imp_lex *L) {
    return L->pos < L->len ? (unsigned char)L->src[L->pos] : -1;
}

int imp_peek_at(const imp_lex *L, size_t ahead) {
    return L->len - L->pos > ahead ? (unsigned char)L->src[L->pos + ahead] : -1;
}

void imp_advance(imp_lex *L, size_t n) {
    for (size_t i = 0; i < n && L->pos < L->len; i++) {
        if (L->src[L->pos++] == '\n') {
            L->line++;
            L->line_start = L->pos;
        }
    }
}

void imp_skip_blanks(imp_lex *L) {
    while (L->pos < L->len &&
           (L->src[L->pos] == ' ' || L->src[L->pos] == '\t' || L->src[L->pos] == '\r'))
        L->pos++;
}

void imp_skip(imp_lex *L) {
    for (;;) {
        int c = imp_peek(L);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            imp_advance(L, 1);
        } else if (c == '/' && imp_peek_at(L, 1) == '/') {
            while (L->pos < L->len && L->src[L->pos] != '\n') L->pos++;
        } else if (c == '/' && imp_peek_at(L, 1) == '*') {
            imp_advance(L, 2);
            while (L->pos < L->len && !(imp_peek(L) == '*' && imp_peek_at(L, 1) == '/'))
                imp_advance(L, 1);
            imp_advance(L, 2);
        } else if (L->mlir_locs && c == 'l' && L->pos + 4 <= L->len &&
                   !memcmp(L->src + L->pos, "loc(", 4) &&
                   (L->pos == 0 || (!imp_is_ident_char((unsigned char)L->src[L->pos - 1]) &&
                                    !strchr(".$-%@#", L->src[L->pos - 1])))) {
            /* a location (not the end of a name or a value's id): skipped whole */
            imp_advance(L, 3);
            if (!imp_skip_group(L)) return;
        } else {
            return;
        }
    }
}

bool imp_accept(imp_lex *L, char c) {
    if (L->status) return false;
    imp_skip(L);
    if (imp_peek(L) != (unsigned char)c) return false;
    imp_advance(L, 1);
    return true;
}

bool imp_expect(imp_lex *L, char c) {
    if (imp_accept(L, c)) return true;
    char what[8] = {'"', c, '"', 0};
    return imp_expected(L, what);
}

bool imp_is_ident_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool imp_accept_word(imp_lex *L, const char *w) {
    if (L->status) return false;
    imp_skip(L);
    size_t n = strlen(w);
    if (L->len - L->pos < n || memcmp(L->src + L->pos, w, n) ||
        imp_is_ident_char(imp_peek_at(L, n)))
        return false;
    imp_advance(L, n);
    return true;
}

bool imp_expect_word(imp_lex *L, const char *w) {
    if (imp_accept_word(L, w)) return true;
    char what[64];
    snprintf(what, sizeof what, "\"%s\"", w);
    return imp_expected(L, what);
}

bool imp_ident(imp_lex *L, char *out, const char *extra, const char *what) {
    if (L->status) return false;
    imp_skip(L);
    size_t s = L->pos;
    while (L->pos < L->len && (imp_is_ident_char((unsigned char)L->src[L->pos]) ||
                               (extra && L->src[L->pos] && strchr(extra, L->src[L->pos]))))
        L->pos++;
    size_t n = L->pos - s;
    if (!n) return imp_expected(L, what);
    if (n >= IMP_MAX_NAME) {
        L->pos = s;
        return imp_fail(L, "%s is longer than %d bytes", what, IMP_MAX_NAME - 1);
    }
    memcpy(out, L->src + s, n);
    out[n] = 0;
    return true;
}

bool imp_int(imp_lex *L, int64_t *out, const char *what) {
    if (L->status) return false;
    imp_skip(L);
    size_t s = L->pos;
    bool neg = imp_peek(L) == '-';
    if (neg) L->pos++;
    uint64_t v = 0;
    size_t digits = 0;
    while (L->pos < L->len && L->src[L->pos] >= '0' && L->src[L->pos] <= '9') {
        unsigned d = (unsigned)(L->src[L->pos++] - '0');
        if (v > (UINT64_MAX - d) / 10 || v * 10 + d > (uint64_t)INT64_MAX) {
            L->pos = s;
            return imp_fail(L, "%s is out of range", what);
        }
        v = v * 10 + d, digits++;
    }
    if (!digits) {
        L->pos = s;
        return imp_expected(L, what);
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static bool hex_digits(imp_lex *L, uint64_t *raw) {
    size_t n = 0;
    uint64_t v = 0;
    for (int c; (c = imp_peek(L)) >= 0 && isxdigit(c); n++, L->pos++) {
        if (n == 16) return imp_fail(L, "a hexadecimal number of more than 64 bits");
        v = v * 16 + (uint64_t)(c <= '9' ? c - '0' : (c | 32) - 'a' + 10);
    }
    if (!n) return imp_expected(L, "hexadecimal digits");
    *raw = v;
    return true;
}

/* A decimal integer's digits (buf, an optional sign first) into x: exact when in
 * [-2^63, 2^64); beyond, marked wide (its double would round into range). Any other
 * spelling (1.5, 1e3) stays a float. */
static void exact_integer(const char *buf, imp_num *x) {
    const char *d = buf + (buf[0] == '-' || buf[0] == '+');
    uint64_t v = 0;
    bool wide = false;
    if (!*d) return;
    for (; *d; d++) {
        if (*d < '0' || *d > '9') return;
        wide = wide || __builtin_mul_overflow(v, 10u, &v) ||
               __builtin_add_overflow(v, (uint64_t)(*d - '0'), &v);
    }
    bool neg = buf[0] == '-';
    if (wide || (neg && v > (uint64_t)1 << 63)) {
        x->wide = true;
        return;
    }
    x->kind = IMP_NUM_INT, x->neg = neg && v != 0, x->raw = neg ? 0 - v : v;
}

bool imp_number(imp_lex *L, imp_num *out, const char *what) {
    if (L->status) return false;
    imp_skip(L);
    *out = (imp_num){.kind = IMP_NUM_FLOAT};
    if (imp_accept_word(L, "true"))
        return *out = (imp_num){.value = 1, .raw = 1, .kind = IMP_NUM_INT}, true;
    if (imp_accept_word(L, "false")) return *out = (imp_num){.kind = IMP_NUM_INT}, true;
    size_t s = L->pos;
    bool neg = imp_peek(L) == '-';
    if (neg || imp_peek(L) == '+') L->pos++;
    if (imp_peek(L) == '0' && (imp_peek_at(L, 1) | 32) == 'x') {
        if (L->pos != s) return imp_fail(L, "a sign before a hexadecimal number (raw bits)");
        L->pos += 2;
        if (!hex_digits(L, &out->raw)) return false;
        out->kind = IMP_NUM_BITS;
        return true;
    }
    if (imp_accept_word(L, "inf")) return out->value = neg ? -INFINITY : INFINITY, true;
    if (imp_accept_word(L, "nan")) return out->value = NAN, true;
    char buf[64];
    size_t n = 0;
    L->pos = s;
    while (L->pos < L->len && n < sizeof buf - 1 && L->src[L->pos] &&
           strchr("0123456789+-.eE", L->src[L->pos]) &&
           (n == 0 || L->src[L->pos] != '-' || (buf[n - 1] | 32) == 'e'))
        buf[n++] = L->src[L->pos++];
    buf[n] = 0;
    char *end = NULL;
    errno = 0;
    double v = n ? strtod(buf, &end) : 0;
    if (!n || end != buf + n) {
        L->pos = s;
        return imp_expected(L, what);
    }
    out->value = v;
    exact_integer(buf, out);
    return true;
}

bool imp_int_list(imp_lex *L, char open, int64_t *v, int max, int *n, const char *what) {
    char close = open == '[' ? ']' : open == '{' ? '}' : ')';
    *n = 0;
    if (!imp_expect(L, open)) return false;
    if (imp_accept(L, close)) return true;
    do {
        if (*n == max) return imp_fail(L, "%s has more than %d entries", what, max);
        if (!imp_int(L, &v[*n], what)) return false;
        (*n)++;
    } while (imp_accept(L, ','));
    return imp_expect(L, close);
}

bool imp_skip_string(imp_lex *L) {
    if (imp_peek(L) != '"') return false;
    imp_advance(L, 1);
    while (L->pos < L->len && L->src[L->pos] != '"') {
        if (L->src[L->pos] == '\\') imp_advance(L, 1);
        imp_advance(L, 1);
    }
    if (L->pos >= L->len) return imp_fail(L, "a string that does not end");
    imp_advance(L, 1);
    return true;
}

/* Nesting is counted, not recursed, so a deep text costs no stack. '<' and '>' count only
 * when the group opened with '<' ("->" inside is not a close). */
bool imp_skip_group(imp_lex *L) {
    if (L->status) return false;
    imp_skip(L);
    int open = imp_peek(L);
    if (open != '(' && open != '[' && open != '{' && open != '<') return imp_expected(L, "a group");
    imp_loc at = imp_here(L);
    size_t depth = 0, angle = 0;
    bool angles = open == '<';
    do {
        int c = imp_peek(L);
        if (c < 0)
            return imp_fail_at(L, at, KILN_STATUS_INVALID_ARGUMENT,
                               "this '%c' is not closed before the end of the text", open);
        if (c == '"') {
            if (!imp_skip_string(L)) return false;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') depth++;
        if (c == ')' || c == ']' || c == '}') depth--;
        if (angles && c == '<') angle++;
        if (angles && c == '>' && !(L->pos > 0 && L->src[L->pos - 1] == '-')) angle--;
        imp_advance(L, 1);
    } while (depth || (angles && angle));
    return true;
}

bool imp_skip_value(imp_lex *L, bool pretty) {
    for (;;) {
        imp_skip(L);
        int c = imp_peek(L);
        if (c < 0 || c == ',' || c == '}' || c == ')' || c == ']' || (pretty && c == ':'))
            return true;
        if (c == '>' && !(L->pos > 0 && L->src[L->pos - 1] == '-')) return true;
        if (c == '"') {
            if (!imp_skip_string(L)) return false;
        } else if (strchr("([{<", c)) {
            if (!imp_skip_group(L)) return false;
        } else {
            imp_advance(L, 1);
        }
    }
}

/* ----------------------------------------------------------------- types ---- */

kiln_dtype imp_dtype(const char *name) {
    static const struct {
        const char *name;
        kiln_dtype t;
    } names[] = {
        {"f32", KILN_DTYPE_F32},   {"f64", KILN_DTYPE_F64}, {"i32", KILN_DTYPE_I32},
        {"i64", KILN_DTYPE_I64},   {"i1", KILN_DTYPE_BOOL}, {"bf16", KILN_DTYPE_BF16},
        {"f16", KILN_DTYPE_F16},   {"s32", KILN_DTYPE_I32}, {"s64", KILN_DTYPE_I64},
        {"pred", KILN_DTYPE_BOOL},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) return names[i].t;
    return KILN_DTYPE_INVALID;
}

void imp_type_str(const imp_type *t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "%s[", kiln_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}
