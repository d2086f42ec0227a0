/* kiln_import.c — `kiln import FILE [-o OUT.kir]`: a program JAX exported
 * (jax.jit(f).lower(*args).as_text(), or .as_text(dialect="hlo")), read by
 * kiln_import_stablehlo or kiln_import_hlo, summarised (its parameters and outputs with
 * their types, its op count) and printed as kiln's graph text; -o saves that graph
 * (kiln_graph_save) for `kiln plan OUT.kir` and programs that load it. The form is the
 * file's extension: .mlir StableHLO, .hlo HLO text. Donations are not in the graph: give
 * them to `kiln plan --donate`. */
#include "kiln_import.h"
#include "flags.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct import_opts {
    const char *out;
} import_opts;

static const tool_flag import_flags[] = {
    {.name = "-o",
     .arg = "OUT.kir",
     .kind = TOOL_FLAG_STRING,
     .offset = offsetof(import_opts, out),
     .help = "also save the graph there (kiln_graph_save): kiln plan OUT.kir reads it"},
    {.name = "--help", .kind = TOOL_FLAG_HELP, .label = "-h, --help", .help = "this text"},
};

static int import_positional(const tool_command *c, const char *arg, void *o) {
    (void)o;
    return kiln_tool_usage(c, "unexpected argument '%s' (one file at a time)", arg);
}

static const tool_command import_command = {
    .name = "import",
    .noun = "option",
    .usage = "usage: kiln import FILE.mlir|FILE.hlo [options]\n"
             "  Reads a program JAX exported (jax.jit(f).lower(*args).as_text(): StableHLO,\n"
             "  .mlir; as_text(dialect=\"hlo\"): HLO text, .hlo), prints its parameters,\n"
             "  outputs and op count, then the graph (docs/import.md).\n",
    .column = 15,
    .flags = import_flags,
    .n_flags = sizeof import_flags / sizeof import_flags[0],
    .positional = import_positional,
};

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

bool kiln_tool_is_import(const char *path) {
    return ends_with(path, ".mlir") || ends_with(path, ".hlo");
}

/* The whole file, NUL-terminated (malloc'd); NULL having printed why. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "kiln: cannot read %s\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            char *b = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
            if (!b) free(buf);
            buf = b, cap *= 2;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        fprintf(stderr, "kiln: reading %s: %s\n", path, buf ? "read error" : "too large");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int kiln_tool_import_file(kiln_context *ctx, const char *path, kiln_graph **out) {
    size_t len;
    char *text = read_all(path, &len);
    if (!text) return 1;
    kiln_status s = ends_with(path, ".hlo") ? kiln_import_hlo(ctx, text, len, out)
                                            : kiln_import_stablehlo(ctx, text, len, out);
    free(text);
    if (s) fprintf(stderr, "kiln: %s: %s\n", path, kiln_last_error(ctx));
    return s ? 1 : 0;
}

/* StableHLO: the %argN of @main's signature followed by tf.aliasing_output before the
 * next argument. */
static int mlir_donations(const char *t, int *donate, int max) {
    const char *p = strstr(t, "@main("), *end = p ? strstr(p, ") -> ") : NULL;
    int n = 0;
    for (const char *a = p ? strstr(p, "%arg") : NULL; a && a < end && n < max;) {
        int k = atoi(a + 4);
        const char *next = strstr(a + 4, "%arg");
        const char *al = strstr(a, "tf.aliasing_output");
        if (al && al < end && (!next || al < next)) donate[n++] = k;
        a = next;
    }
    return n;
}

/* HLO: input_output_alias={ {1}: (0, {}, may-alias), ... }: the parameter numbers. */
static int hlo_donations(const char *t, int *donate, int max) {
    const char *p = strstr(t, "input_output_alias={"), *nl = p ? strchr(p, '\n') : NULL;
    int n = 0;
    for (const char *a = p ? strstr(p, ": (") : NULL; a && (!nl || a < nl) && n < max;
         a = strstr(a + 3, ": ("))
        donate[n++] = atoi(a + 3);
    return n;
}

/* Which parameters and outputs the text declares unsigned (ui32 / ui64, HLO u32 / u64),
 * which kiln holds as the bit patterns of i32 / i64 (docs/import.md): the types of @main's
 * signature (StableHLO), or of the module's entry_computation_layout (HLO), in order. */
static void mark_unsigned(const char *from, const char *to, bool hlo, bool *uns, int max) {
    int n = 0;
    for (const char *a = from; a && a < to && n < max; n++) {
        if (hlo) { /* every type has one [ (f32[3,4], u32[]); layouts and comments none */
            const char *b = strchr(a, '[');
            if (!b || b >= to) break;
            uns[n] = b - a >= 3 && b[-3] == 'u' &&
                     ((b[-2] == '3' && b[-1] == '2') || (b[-2] == '6' && b[-1] == '4'));
            a = b + 1;
        } else {
            const char *b = strstr(a, "tensor<"), *e = b ? strchr(b, '>') : NULL;
            if (!b || b >= to || !e) break;
            const char *el = e; /* the element type: after the last x or < */
            while (el > b && el[-1] != 'x' && el[-1] != '<') el--;
            uns[n] = el[0] == 'u' && el[1] == 'i';
            a = e + 1;
        }
    }
}

static void text_unsigned(const char *t, bool hlo, bool *params, bool *outs, int max) {
    const char *p = strstr(t, hlo ? "entry_computation_layout={(" : "@main(");
    const char *eol = p ? strchr(p, '\n') : NULL,
               *arrow = p ? strstr(p, hlo ? ")->" : ") -> ") : NULL;
    if (!p || !arrow || (eol && arrow > eol)) return;
    const char *end = eol ? eol : arrow + strlen(arrow);
    if (hlo) { /* the layout's closing brace: the line goes on with other attributes */
        int depth = 0;
        for (const char *c = strchr(p, '{'); c && c < end; c++)
            if ((depth += *c == '{' ? 1 : *c == '}' ? -1 : 0) == 0) {
                end = c;
                break;
            }
    }
    mark_unsigned(p, arrow, hlo, params, max);
    mark_unsigned(arrow, end, hlo, outs, max);
}

/* The whole file as a string (NUL-terminated, for strstr; malloc'd), NULL if unreadable. */
static char *read_text(const char *path) {
    size_t len;
    char *text = read_all(path, &len), *z = text ? realloc(text, len + 1) : NULL;
    if (!z) {
        free(text);
        return NULL;
    }
    z[len] = 0;
    return z;
}

int kiln_tool_import_donations(const char *path, int *donate, int max) {
    char *z = read_text(path);
    if (!z) return 0;
    int n =
        ends_with(path, ".hlo") ? hlo_donations(z, donate, max) : mlir_donations(z, donate, max);
    free(z);
    return n;
}

static void print_value(kiln_graph *g, const char *what, int i, kiln_value v, bool uns) {
    kiln_dtype t;
    int rank;
    int64_t dims[KILN_MAX_RANK];
    kiln_value_type(g, v, &t, &rank, dims);
    printf("  %s %d: %s[", what, i, kiln_dtype_name(t));
    for (int k = 0; k < rank; k++) printf("%s%lld", k ? "," : "", (long long)dims[k]);
    printf("]%s\n", !uns                  ? ""
                    : t == KILN_DTYPE_I32 ? " (ui32 in the text: the bits of the unsigned values)"
                                          : " (ui64 in the text: the bits of the unsigned values)");
}

void kiln_tool_import_help(FILE *f) {
    kiln_tool_flags_help(&import_command, f);
}

int kiln_tool_import(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return kiln_tool_import_help(stdout), 0;
    if (argc < 3) return kiln_tool_usage(&import_command, "which file? a FILE.mlir or FILE.hlo");
    if (!kiln_tool_is_import(argv[2]))
        return kiln_tool_usage(&import_command,
                               "'%s' is neither .mlir (StableHLO) nor .hlo (HLO text)", argv[2]);
    import_opts o = {0};
    if (kiln_tool_flags_defaults(&import_command, &o)) return 2;
    int rc = kiln_tool_flags_parse(&import_command, argc, argv, 3, &o);
    if (rc) return rc == KILN_TOOL_HELP ? 0 : rc;
    kiln_context *ctx;
    char err[512];
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "kiln: %s\n", err);
        return 1;
    }
    kiln_graph *g = NULL;
    rc = kiln_tool_import_file(ctx, argv[2], &g);
    if (!rc && o.out && kiln_graph_save(g, o.out)) {
        fprintf(stderr, "kiln: %s\n", kiln_last_error(ctx));
        rc = 1;
    }
    if (!rc) {
        printf("%s: %d parameters, %d outputs, %d ops\n", argv[2], kiln_graph_num_parameters(g),
               kiln_graph_num_outputs(g), kiln_graph_num_nodes(g));
        enum { MAX_LISTED = 4096 };
        static bool uns_in[MAX_LISTED], uns_out[MAX_LISTED];
        char *z = read_text(argv[2]);
        if (z) text_unsigned(z, ends_with(argv[2], ".hlo"), uns_in, uns_out, MAX_LISTED);
        free(z);
        for (int i = 0; i < kiln_graph_num_parameters(g); i++)
            print_value(g, "parameter", i, kiln_graph_parameter(g, i), i < MAX_LISTED && uns_in[i]);
        for (int i = 0; i < kiln_graph_num_outputs(g); i++)
            print_value(g, "output", i, kiln_graph_output(g, i), i < MAX_LISTED && uns_out[i]);
        int donate[4096], nd = kiln_tool_import_donations(argv[2], donate, 4096);
        if (nd) {
            printf("  donated by JAX (kiln plan uses them unless --donate is given):");
            for (int i = 0; i < nd; i++) printf(" %d", donate[i]);
            printf("\n");
        }
        if (o.out) printf("wrote %s\n", o.out);
        printf("\n");
        kiln_graph_print(g, stdout);
    }
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    return rc;
}
