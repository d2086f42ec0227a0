/* kiln.c — the `kiln` command-line tool.
 *
 *   kiln train [flags]             train a GPT on a text file (tools/kiln_train.c,
 *                                  docs/training.md)
 *   kiln sample [flags] [FILE]     generate text from a trained checkpoint
 *   kiln list                      the built-in example programs
 *   kiln plan <example> [options]  compile one, print its memory analysis (by class: where a
 *                                  training step's memory goes), and write the
 *                                  plan as plan.svg (a timeline) and plan.json
 *   kiln plan FILE.kir [options]   the same for a graph a program saved (kiln_graph_save)
 *   kiln plan FILE.mlir|.hlo       the same for a program JAX exported (docs/import.md)
 *   kiln import FILE.mlir|.hlo     read a program JAX exported, print it (tools/kiln_import.c)
 *
 *   kiln --help | help [COMMAND]   the commands, or one command's options, on stdout
 *   kiln --version                 kiln_version()
 *
 * Each command's flags are one table (plan_flags here, train_flags and sample_flags in
 * tools/kiln_train.c) from which tools/flags.c derives the parsing, the help and the
 * suggestions; the commands are one table too (commands[], below).
 * The examples are examples/models.h, shared with `make demo` and the planner's benchmark.
 * Exit status: 0, 1 on a kiln error (the message says why), 2 on a usage error (the
 * message names the argument, and suggests the closest command or option to a typo).
 * A command prints its results only once every step that makes them has succeeded. */
#include "../examples/models.h"
#include "flags.h"
#include "kiln_import.h"
#include "kiln_train.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <time.h>

typedef struct opts {
    const char *dir;
    bool no_fusion, run, buffers;
    uint64_t budget;        /* --budget: bytes, or */
    double budget_fraction; /* a share of the peak without recomputation */
    int n_donate;
    int donate[KILN_MAX_OUTPUTS];
} opts;

static bool parse_budget(const char *v, void *o_) {
    opts *o = o_;
    return kiln_tool_parse_bytes(v, &o->budget, &o->budget_fraction);
}

/* --donate I,J: appended to those given before. */
static bool parse_donate(const char *v, void *o_) {
    opts *o = o_;
    for (const char *p = v; *p;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > 1000000 || (*end && *end != ',') ||
            o->n_donate == KILN_MAX_OUTPUTS)
            return false;
        o->donate[o->n_donate++] = (int)x;
        p = *end ? end + 1 : end;
    }
    return true;
}

/* The options after `kiln plan NAME`. */
static const tool_flag plan_flags[] = {
    {.name = "-o",
     .arg = "DIR",
     .kind = TOOL_FLAG_STRING,
     .offset = offsetof(opts, dir),
     .def = ".",
     .help = "write plan.svg and plan.json into DIR (default: the current folder)"},
    {.name = "--no-fusion",
     .kind = TOOL_FLAG_SWITCH,
     .offset = offsetof(opts, no_fusion),
     .help = "one kernel per op (what fusion saves, side by side)"},
    {.name = "--donate",
     .arg = "I,J",
     .kind = TOOL_FLAG_CUSTOM,
     .parse = parse_donate,
     .bad = "is not a list of argument numbers (0,2)",
     .help = "donate those arguments (jax.jit's donate_argnums); a training step's\n"
             "example donates its weights and optimiser state unless this is given"},
    {.name = "--run",
     .kind = TOOL_FLAG_SWITCH,
     .offset = offsetof(opts, run),
     .help = "also run it once: measured device peak against the plan, time per call"},
    {.name = "--buffers",
     .kind = TOOL_FLAG_SWITCH,
     .offset = offsetof(opts, buffers),
     .help = "list every buffer (op, type, bytes, place, offset, live steps)"},
    {.name = "--budget",
     .arg = "B",
     .kind = TOOL_FLAG_CUSTOM,
     .parse = parse_budget,
     .bad = "is not a size (256M, 1.5GiB) or a share (50%)",
     .help = "plan under a memory budget (rematerialisation): bytes with an optional\n"
             "K/M/G unit (256M, 1.5GiB) or a share of the peak without it (50%)"},
    {.name = "--help", .kind = TOOL_FLAG_HELP, .label = "-h, --help", .help = "this text"},
};

static int plan_positional(const tool_command *c, const char *arg, void *o) {
    (void)o;
    return kiln_tool_usage(c, "unexpected argument '%s' (one example or file at a time)", arg);
}

static const tool_command plan_command = {
    .name = "plan",
    .noun = "option",
    .usage = "usage: kiln plan <example>|FILE.kir|FILE.mlir|FILE.hlo [options]\n"
             "  Compiles a built-in example (kiln list), a graph a program saved with\n"
             "  kiln_graph_save or a program JAX exported (StableHLO .mlir, HLO .hlo:\n"
             "  docs/import.md), prints its memory analysis and writes plan.svg and plan.json.\n",
    .column = 15,
    .flags = plan_flags,
    .n_flags = sizeof plan_flags / sizeof plan_flags[0],
    .positional = plan_positional,
};

/* The options of `kiln` before any command (parsed by main: --version takes no other). */
static const tool_flag main_flags[] = {
    {.name = "--help", .kind = TOOL_FLAG_HELP, .label = "-h, --help", .help = "this text"},
    {.name = "--version", .kind = TOOL_FLAG_SWITCH, .help = "the library's version"},
};

static const tool_command main_options = {
    .name = "",
    .noun = "option",
    .column = 14,
    .flags = main_flags,
    .n_flags = sizeof main_flags / sizeof main_flags[0],
};

static const char list_help[] = "usage: kiln list\n"
                                "  The built-in example programs kiln plan takes by name.\n";

/* mkdir -p: the -o folder is made if it is missing. */
static int make_dirs(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0777) && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
}

static int write_file(const char *dir, const char *name, const char *text) {
    char path[4096];
    if (make_dirs(dir)) {
        fprintf(stderr, "kiln: cannot make the folder %s: %s\n", dir, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        fprintf(stderr, "kiln: cannot write %s: %s\n", path, strerror(errno));
        if (f) fclose(f);
        return 1;
    }
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs e once on fresh arguments: measured peak (over the arguments) and time. */
static int run_once(kiln_context *ctx, kiln_executable *e, const model *m) {
    kiln_array *args[MODEL_MAX_PARAMS] = {0}, *outs[KILN_MAX_OUTPUTS] = {0};
    int n_out = kiln_graph_num_outputs(m->g), rc = 1;
    kiln_memory_stats st;
    kiln_memory_analysis a;
    kiln_executable_get_memory_analysis(e, &a);
    if (model_args(ctx, m, args) == KILN_STATUS_OK) {
        kiln_device_reset_peak(ctx, 0);
        double t0 = now();
        kiln_status s = kiln_executable_run(e, m->n_params, args, n_out, outs);
        if (!s) s = kiln_device_synchronize(ctx, 0); /* asynchronous dispatch: it has run */
        double t = now() - t0;
        kiln_device_get_memory_stats(ctx, 0, &st);
        if (s)
            fprintf(stderr, "kiln: run: %s\n", kiln_last_error(ctx));
        else {
            printf("ran once in %.3f ms: device peak %llu bytes, planned %llu (%s)\n", t * 1e3,
                   (unsigned long long)st.peak_bytes_in_use, (unsigned long long)a.peak_bytes,
                   st.peak_bytes_in_use == a.peak_bytes ? "equal" : "DIFFERENT");
            rc = st.peak_bytes_in_use != a.peak_bytes;
        }
    } else {
        fprintf(stderr, "kiln: arguments: %s\n", kiln_last_error(ctx));
    }
    for (int i = 0; i < n_out; i++) kiln_array_destroy(outs[i]);
    for (int i = 0; i < m->n_params; i++) kiln_array_destroy(args[i]);
    return rc;
}

/* A graph saved by a program (kiln_graph_save) or exported by JAX (.mlir, .hlo), as a
 * model: its parameters in order. */
static int load_model(kiln_context *ctx, const char *path, model *m) {
    memset(m, 0, sizeof *m);
    if (kiln_tool_is_import(path)) {
        if (kiln_tool_import_file(ctx, path, &m->g)) return 1;
        /* JAX's donations, as a training step's example has its own */
        m->n_donate = kiln_tool_import_donations(path, m->donate, MODEL_MAX_PARAMS);
    } else if (kiln_graph_load(ctx, path, &m->g)) {
        fprintf(stderr, "kiln: %s\n", kiln_last_error(ctx));
        return 1;
    }
    int n = kiln_graph_num_parameters(m->g);
    if (n > MODEL_MAX_PARAMS) {
        fprintf(stderr, "kiln: %s has %d parameters; kiln plan takes at most %d\n", path, n,
                MODEL_MAX_PARAMS);
        kiln_graph_destroy(m->g);
        return 1;
    }
    for (int i = 0; i < n; i++) m->params[i] = kiln_graph_parameter(m->g, i);
    m->n_params = n;
    return 0;
}

/* me NULL: the graph in the file `name`. */
static int plan(kiln_context *ctx, const model_entry *me, const char *name, const opts *o) {
    model m;
    if (!me) {
        if (load_model(ctx, name, &m)) return 1;
    } else if (model_build(ctx, me, &m)) {
        fprintf(stderr, "kiln: %s: %s\n", me->name, kiln_last_error(ctx));
        return 1;
    }
    bool own = o->n_donate > 0 || m.n_donate == 0;
    kiln_compile_options co = {.disable_fusion = o->no_fusion,
                               .n_donate = own ? o->n_donate : m.n_donate,
                               .donate_argnums = own ? o->donate : m.donate,
                               .memory_budget = o->budget,
                               .memory_budget_fraction = o->budget_fraction,
                               .keep_ir = true}; /* the report, the SVG and the JSON read it */
    kiln_executable *e = NULL;
    int rc = 1;
    if (kiln_compile(m.g, &co, &e)) {
        fprintf(stderr, "kiln: compile %s: %s\n", name, kiln_last_error(ctx));
    } else {
        char *report = kiln_executable_memory_report(e), *svg = kiln_executable_plan_svg(e);
        char *json = kiln_executable_plan_json(e);
        if (report && svg && json) {
            char *cut = o->buffers ? NULL : strstr(report, "  value ");
            if (cut) *cut = 0; /* the per-buffer table only when asked for */
            /* The files first: a report followed by a failure would read as a success. */
            rc = write_file(o->dir, "plan.svg", svg);
            if (!rc) rc = write_file(o->dir, "plan.json", json); /* one message, not two */
            if (!rc) {
                fputs(report, stdout);
                printf("wrote %s/plan.svg\nwrote %s/plan.json\n", o->dir, o->dir);
            }
            if (!rc && o->run) rc = run_once(ctx, e, &m);
        } else {
            fprintf(stderr, "kiln: out of host memory\n");
        }
        kiln_string_free(ctx, report), kiln_string_free(ctx, svg), kiln_string_free(ctx, json);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(m.g);
    return rc;
}

static bool is_help(const char *a) {
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

static int run_list(int argc, char **argv) {
    if (argc > 2 && is_help(argv[2])) return fputs(list_help, stdout), 0;
    if (argc > 2) {
        fprintf(stderr, "kiln list: unexpected argument '%s' (list takes none)\n", argv[2]);
        return 2;
    }
    for (int i = 0; i < N_MODELS; i++) printf("  %-12s %s\n", models[i].name, models[i].what);
    return 0;
}

static void list_usage(FILE *f) {
    fputs(list_help, f);
}

static void plan_usage(FILE *f) {
    kiln_tool_flags_help(&plan_command, f);
}

/* kiln plan <example>|FILE.kir [options] */
static int run_plan(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (is_help(argv[i])) return plan_usage(stdout), 0;
    if (argc < 3)
        return kiln_tool_usage(&plan_command,
                               "which program? an example (kiln list), a FILE.kir, or a "
                               "FILE.mlir or FILE.hlo JAX exported");
    const model_entry *me = model_find(argv[2]);
    struct stat sb;
    if (!me && stat(argv[2], &sb)) { /* neither an example nor a file */
        const char *names[N_MODELS];
        for (int i = 0; i < N_MODELS; i++) names[i] = models[i].name;
        const char *near = kiln_tool_closest(argv[2], names, N_MODELS);
        fprintf(stderr, "kiln plan: no example or graph file '%s'", argv[2]);
        if (near) fprintf(stderr, "; did you mean '%s'?", near);
        fprintf(stderr, "\nthese examples are built in:\n");
        for (int i = 0; i < N_MODELS; i++)
            fprintf(stderr, "  %-12s %s\n", models[i].name, models[i].what);
        return 2;
    }
    opts o = {0};
    if (kiln_tool_flags_defaults(&plan_command, &o)) return 2;
    int rc = kiln_tool_flags_parse(&plan_command, argc, argv, 3, &o);
    if (rc) return rc == KILN_TOOL_HELP ? 0 : rc;
    kiln_context *ctx;
    char err[512];
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "kiln: %s\n", err);
        return 1;
    }
    rc = plan(ctx, me, argv[2], &o);
    kiln_context_destroy(ctx);
    return rc;
}

static int run_help(int argc, char **argv);
static void main_usage(FILE *f);

/* The commands, in the order the help lists them. */
static const struct command {
    const char *name, *summary;
    int (*run)(int argc, char **argv); /* the whole command line */
    void (*help)(FILE *f);
} commands[] = {
    {"train", "train a GPT on a text file (docs/training.md)", kiln_tool_train,
     kiln_tool_train_help},
    {"sample", "generate text from a trained checkpoint", kiln_tool_sample, kiln_tool_sample_help},
    {"list", "the built-in example programs", run_list, list_usage},
    {"plan", "compile an example or a saved graph (FILE.kir) and print its memory plan", run_plan,
     plan_usage},
    {"import", "read a program JAX exported (FILE.mlir, FILE.hlo) and print it", kiln_tool_import,
     kiln_tool_import_help},
    {"help", "kiln help COMMAND: that command's options", run_help, main_usage},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void main_usage(FILE *f) {
    fputs("usage: kiln COMMAND [options]\n\ncommands:\n", f);
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fputs("\noptions:\n", f);
    kiln_tool_flags_rows(&main_options, f);
    fputs("\nExit status: 0, 1 on a kiln error (the message says why), 2 on a usage error.\n", f);
}

static const struct command *find_command(const char *name) {
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return &commands[i];
    return NULL;
}

static int unknown_command(const char *word) {
    const char *names[N_COMMANDS];
    for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
    const char *near = kiln_tool_closest(word, names, N_COMMANDS);
    fprintf(stderr, "kiln: unknown command '%s'", word);
    if (near) fprintf(stderr, "; did you mean '%s'?", near);
    fprintf(stderr, "\n(kiln --help lists the commands)\n");
    return 2;
}

/* kiln help [COMMAND] */
static int run_help(int argc, char **argv) {
    if (argc < 3) return main_usage(stdout), 0;
    if (argc > 3) {
        fprintf(stderr, "kiln help: unexpected argument '%s' (one command at a time)\n", argv[3]);
        return 2;
    }
    const struct command *c = find_command(argv[2]);
    if (!c) return unknown_command(argv[2]);
    c->help(stdout);
    return 0;
}

/* kiln --help, kiln --version: the options before any command. */
static int run_option(int argc, char **argv) {
    const char *a = argv[1];
    const tool_flag *f = kiln_tool_flag_find(&main_options, a);
    if (!f) {
        const char *names[sizeof main_flags / sizeof main_flags[0]];
        for (size_t i = 0; i < main_options.n_flags; i++) names[i] = main_flags[i].name;
        const char *near = kiln_tool_closest(a, names, main_options.n_flags);
        fprintf(stderr, "kiln: unknown option '%s'", a);
        if (near) fprintf(stderr, "; did you mean %s?", near);
        fprintf(stderr, "\n(kiln --help lists the commands and options)\n");
        return 2;
    }
    if (f->kind == TOOL_FLAG_HELP) return main_usage(stdout), 0;
    if (argc > 2) {
        fprintf(stderr, "kiln: unexpected argument '%s' after --version\n", argv[2]);
        return 2;
    }
    printf("kiln %s\n", kiln_version());
    return 0;
}

int main(int argc, char **argv) {
    /* A write past a file-size limit (ulimit -f) is an error kiln reports (EFBIG: "writing
     * ... failed: File too large", the earlier checkpoint kept), not a signal that kills. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        main_usage(stderr);
        return 2;
    }
    if (argv[1][0] == '-') return run_option(argc, argv);
    const struct command *c = find_command(argv[1]);
    return c ? c->run(argc, argv) : unknown_command(argv[1]);
}
