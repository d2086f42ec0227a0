/* flags.c — parsing, help and suggestions of the kiln tool, all read from one flag table
 * per command (flags.h), so a flag added to a table is parsed, validated, described by
 * --help and suggested for a typo at once. Every usage error names the command, the flag
 * and the bad value, and ends with where the help is; the caller exits 2 on it. */
#include "flags.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int kiln_tool_usage(const tool_command *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kiln %s: ", c->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(kiln %s --help lists the %ss)\n", c->name, c->noun);
    va_end(ap);
    return 2;
}

/* Edit distance with adjacent transpositions (optimal string alignment): "mpl" is one
 * typo from "mlp". Names longer than 64 bytes are never close. */
static size_t edit_distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b), d[65][65];
    if (na > 64 || nb > 64) return SIZE_MAX;
    for (size_t i = 0; i <= na; i++) d[i][0] = i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}

const char *kiln_tool_closest(const char *word, const char *const *names, size_t n) {
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    /* A suggestion further than half the word away is noise, not a typo. */
    size_t len = strlen(word);
    return best && best_d <= (len < 4 ? 1 : len / 2) ? best : NULL;
}

static bool parse_long(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

bool kiln_tool_parse_bytes(const char *s, uint64_t *bytes, double *fraction) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0)) return false;
    *bytes = 0, *fraction = 0;
    if (!strcmp(end, "%")) {
        if (v > 100) return false;
        *fraction = v / 100;
        return true;
    }
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1},          {"B", 1},
                 {"K", 1024},      {"KB", 1e3},
                 {"KiB", 1024},    {"M", 1 << 20},
                 {"MB", 1e6},      {"MiB", 1 << 20},
                 {"G", 1 << 30},   {"GB", 1e9},
                 {"GiB", 1 << 30}, {"T", 1099511627776.0},
                 {"TB", 1e12},     {"TiB", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].suffix)) {
            double b = v * units[i].scale;
            if (b < 1 || b > 1.8e19) return false;
            *bytes = (uint64_t)b;
            return true;
        }
    return false;
}

const tool_flag *kiln_tool_flag_find(const tool_command *c, const char *name) {
    for (size_t i = 0; i < c->n_flags; i++) {
        const tool_flag *f = &c->flags[i];
        if (f->kind == TOOL_FLAG_HEADING) continue;
        if (!strcmp(name, f->name) || (f->kind == TOOL_FLAG_HELP && !strcmp(name, "-h"))) return f;
    }
    return NULL;
}

/* Stores value v of f into opts: false if v is not one of f's values. */
static bool store(const tool_flag *f, const char *v, void *opts) {
    void *dst = (char *)opts + f->offset;
    long long x;
    switch (f->kind) {
    case TOOL_FLAG_INT:
    case TOOL_FLAG_INT64:
    case TOOL_FLAG_LLONG:
    case TOOL_FLAG_UINT64:
        if (!parse_long(v, f->lo, f->hi, &x)) return false;
        if (f->kind == TOOL_FLAG_INT) *(int *)dst = (int)x;
        if (f->kind == TOOL_FLAG_INT64) *(int64_t *)dst = x;
        if (f->kind == TOOL_FLAG_LLONG) *(long long *)dst = x;
        if (f->kind == TOOL_FLAG_UINT64) *(uint64_t *)dst = (uint64_t)x;
        return true;
    case TOOL_FLAG_DOUBLE: return parse_double(v, f->flo, f->fhi, dst);
    case TOOL_FLAG_STRING: *(const char **)dst = v; return true;
    case TOOL_FLAG_CUSTOM: return f->parse(v, opts);
    case TOOL_FLAG_SWITCH: *(bool *)dst = true; return true;
    default: return false;
    }
}

/* "kiln train: --steps: '0' is not a valid value (an integer in [1, ...])" */
static int bad_value(const tool_command *c, const tool_flag *f, const char *v) {
    if (f->kind == TOOL_FLAG_CUSTOM) return kiln_tool_usage(c, "%s: '%s' %s", f->name, v, f->bad);
    if (f->kind == TOOL_FLAG_DOUBLE)
        return kiln_tool_usage(c, "%s: '%s' is not a valid value (a number in [%.12g, %.12g])",
                               f->name, v, f->flo, f->fhi);
    return kiln_tool_usage(c, "%s: '%s' is not a valid value (an integer in [%lld, %lld])", f->name,
                           v, f->lo, f->hi);
}

int kiln_tool_flags_defaults(const tool_command *c, void *opts) {
    for (size_t i = 0; i < c->n_flags; i++) {
        const tool_flag *f = &c->flags[i];
        if (f->def && !store(f, f->def, opts)) {
            fprintf(stderr, "kiln %s: the default of %s, '%s', is not one of its values\n", c->name,
                    f->name, f->def);
            return 2;
        }
    }
    return 0;
}

/* "unknown flag '--layer'; did you mean --layers?" over every flag of the table. */
static int unknown_flag(const tool_command *c, const char *arg, const char *name) {
    const char *names[128];
    size_t n = 0;
    for (size_t i = 0; i < c->n_flags && n < sizeof names / sizeof names[0]; i++)
        if (c->flags[i].kind != TOOL_FLAG_HEADING) names[n++] = c->flags[i].name;
    const char *near = kiln_tool_closest(name, names, n);
    fprintf(stderr, "kiln %s: unknown %s '%s'", c->name, c->noun, arg);
    if (near) fprintf(stderr, "; did you mean %s?", near);
    fprintf(stderr, "\n(kiln %s --help lists the %ss)\n", c->name, c->noun);
    return 2;
}

int kiln_tool_flags_parse(const tool_command *c, int argc, char **argv, int first, void *opts) {
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            int rc = c->positional ? c->positional(c, a, opts)
                                   : kiln_tool_usage(c, "unexpected argument '%s'", a);
            if (rc) return rc;
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '='), *v = eq ? eq + 1 : NULL;
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, a, n);
        name[n] = 0;
        const tool_flag *f = kiln_tool_flag_find(c, name);
        if (!f) return unknown_flag(c, a, name);
        if (eq && (f->kind == TOOL_FLAG_HELP || f->kind == TOOL_FLAG_SWITCH))
            return kiln_tool_usage(c, "%s takes no value (it was given '%s')", f->name, v);
        if (f->kind == TOOL_FLAG_HELP) {
            kiln_tool_flags_help(c, stdout);
            return KILN_TOOL_HELP;
        }
        if (f->kind == TOOL_FLAG_SWITCH) {
            store(f, NULL, opts);
            continue;
        }
        if (!v && i + 1 < argc) v = argv[++i];
        if (!v) return kiln_tool_usage(c, "%s needs a value", f->name);
        if (!store(f, v, opts)) return bad_value(c, f, v);
    }
    return 0;
}

/* A row's help text, "{}" and "{--NAME}" replaced by defaults, continuation lines indented
 * to the text column. */
static void print_text(const tool_command *c, const tool_flag *f, FILE *out) {
    for (const char *p = f->help; *p; p++) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (close) {
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)(close - p - 1), p + 1);
            const tool_flag *of = key[0] ? kiln_tool_flag_find(c, key) : f;
            fputs(of && of->def ? of->def : "?", out);
            p = close;
        } else if (*p == '\n') {
            fprintf(out, "\n%*s", c->column + 3, "");
        } else {
            fputc(*p, out);
        }
    }
    fputc('\n', out);
}

void kiln_tool_flags_rows(const tool_command *c, FILE *out) {
    for (size_t i = 0; i < c->n_flags; i++) {
        const tool_flag *f = &c->flags[i];
        if (!f->help) continue;
        if (f->kind == TOOL_FLAG_HEADING) {
            fprintf(out, "%s\n", f->help);
            continue;
        }
        char left[128];
        if (f->label)
            snprintf(left, sizeof left, "%s", f->label);
        else
            snprintf(left, sizeof left, "%s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
        fprintf(out, "  %-*s ", c->column, left);
        print_text(c, f, out);
    }
}

void kiln_tool_flags_help(const tool_command *c, FILE *out) {
    fputs(c->usage, out);
    kiln_tool_flags_rows(c, out);
}
