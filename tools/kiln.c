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
 *
 * Options of plan:
 *   -o DIR          write plan.svg and plan.json into DIR (default: the current folder)
 *   --no-fusion     one kernel per op (what fusion saves, side by side)
 *   --donate I,J    donate those arguments (jax.jit's donate_argnums); a training step's
 *                   example donates its weights and optimiser state unless this is given
 *   --run           also run it once: measured device peak against the plan, time per call
 *   --buffers       list every buffer (op, type, bytes, place, offset, live steps)
 *   --budget B      plan under a memory budget (rematerialisation): bytes with an optional
 *                   K/M/G unit (256M, 1.5GiB) or a share of the peak without it (50%);
 *                   recomputed kernels are outlined in plan.svg and listed in the report
 *
 *   kiln --help | help [COMMAND]   the commands, or one command's options, on stdout
 *   kiln --version                 kiln_version()
 *
 * The examples are examples/models.h, shared with `make demo` and the planner's benchmark.
 * Exit status: 0, 1 on a kiln error (the message says why), 2 on a usage error (the
 * message names the argument, and suggests the closest command or option to a typo).
 * A command prints its results only once every step that makes them has succeeded. */
#include "../examples/models.h"
#include "kiln_train.h"

#include <errno.h>
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

static const char main_help[] =
    "usage: kiln COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  train     train a GPT on a text file (docs/training.md)\n"
    "  sample    generate text from a trained checkpoint\n"
    "  list      the built-in example programs\n"
    "  plan      compile an example or a saved graph (FILE.kir) and print its memory plan\n"
    "  help      kiln help COMMAND: that command's options\n"
    "\n"
    "options:\n"
    "  -h, --help     this text\n"
    "  --version      the library's version\n"
    "\n"
    "Exit status: 0, 1 on a kiln error (the message says why), 2 on a usage error.\n";

static const char plan_help[] =
    "usage: kiln plan <example>|FILE.kir [options]\n"
    "  Compiles a built-in example (kiln list) or a graph a program saved with\n"
    "  kiln_graph_save, prints its memory analysis and writes plan.svg and plan.json.\n"
    "  -o DIR          write plan.svg and plan.json into DIR (default: the current folder)\n"
    "  --no-fusion     one kernel per op (what fusion saves, side by side)\n"
    "  --donate I,J    donate those arguments (jax.jit's donate_argnums); a training step's\n"
    "                  example donates its weights and optimiser state unless this is given\n"
    "  --run           also run it once: measured device peak against the plan, time per call\n"
    "  --buffers       list every buffer (op, type, bytes, place, offset, live steps)\n"
    "  --budget B      plan under a memory budget (rematerialisation): bytes with an optional\n"
    "                  K/M/G unit (256M, 1.5GiB) or a share of the peak without it (50%)\n"
    "  -h, --help      this text\n";

static const char list_help[] = "usage: kiln list\n"
                                "  The built-in example programs kiln plan takes by name.\n";

static const char *const commands[] = {"train", "sample", "list", "plan", "help"};

/* A usage error of kiln plan: what was wrong (naming the argument), then where help is. */
static int plan_usage(const char *what, const char *arg) {
    fprintf(stderr, "kiln plan: ");
    fprintf(stderr, what, arg);
    fprintf(stderr, "\n(kiln plan --help lists the options)\n");
    return 2;
}

static int unknown_command(const char *word) {
    const char *near = kiln_tool_closest(word, commands, sizeof commands / sizeof commands[0]);
    fprintf(stderr, "kiln: unknown command '%s'", word);
    if (near) fprintf(stderr, "; did you mean '%s'?", near);
    fprintf(stderr, "\n(kiln --help lists the commands)\n");
    return 2;
}

static int list(void) {
    for (int i = 0; i < N_MODELS; i++) printf("  %-12s %s\n", models[i].name, models[i].what);
    return 0;
}

/* The options after `kiln plan NAME`: 0, or 2 after a message naming the bad argument. */
static int parse(int argc, char **argv, opts *o) {
    static const char *const names[] = {"-o",        "--no-fusion", "--donate", "--run",
                                        "--buffers", "--budget",    "--help"};
    memset(o, 0, sizeof *o);
    o->dir = ".";
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        bool takes_value = !strcmp(a, "-o") || !strcmp(a, "--budget") || !strcmp(a, "--donate");
        if (takes_value && i + 1 >= argc) return plan_usage("%s needs a value", a);
        if (!strcmp(a, "-o"))
            o->dir = argv[++i];
        else if (!strcmp(a, "--no-fusion"))
            o->no_fusion = true;
        else if (!strcmp(a, "--run"))
            o->run = true;
        else if (!strcmp(a, "--buffers"))
            o->buffers = true;
        else if (!strcmp(a, "--budget")) {
            const char *v = argv[++i];
            if (!kiln_tool_parse_bytes(v, &o->budget, &o->budget_fraction))
                return plan_usage("--budget: '%s' is not a size (256M, 1.5GiB) or a share "
                                  "(50%%)",
                                  v);
        } else if (!strcmp(a, "--donate")) {
            const char *v = argv[++i];
            for (const char *p = v; *p;) {
                char *end;
                errno = 0;
                long x = strtol(p, &end, 10);
                if (end == p || errno || x < 0 || x > 1000000 || (*end && *end != ',') ||
                    o->n_donate == KILN_MAX_OUTPUTS)
                    return plan_usage("--donate: '%s' is not a list of argument numbers (0,2)", v);
                o->donate[o->n_donate++] = (int)x;
                p = *end ? end + 1 : end;
            }
        } else if (a[0] != '-') {
            return plan_usage("unexpected argument '%s' (one example or file at a time)", a);
        } else {
            const char *near = kiln_tool_closest(a, names, sizeof names / sizeof names[0]);
            fprintf(stderr, "kiln plan: unknown option '%s'", a);
            if (near) fprintf(stderr, "; did you mean %s?", near);
            fprintf(stderr, "\n(kiln plan --help lists the options)\n");
            return 2;
        }
    }
    return 0;
}

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

/* A graph saved by a program (kiln_graph_save), as a model: its parameters in order. */
static int load_model(kiln_context *ctx, const char *path, model *m) {
    memset(m, 0, sizeof *m);
    if (kiln_graph_load(ctx, path, &m->g)) {
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
                               .memory_budget_fraction = o->budget_fraction};
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

/* kiln help [COMMAND] */
static int help(int argc, char **argv) {
    if (argc < 3) return fputs(main_help, stdout), 0;
    if (argc > 3) {
        fprintf(stderr, "kiln help: unexpected argument '%s' (one command at a time)\n", argv[3]);
        return 2;
    }
    const char *c = argv[2];
    if (!strcmp(c, "train") || !strcmp(c, "sample")) {
        char *sub[] = {argv[0], argv[2], "--help", NULL};
        return !strcmp(c, "train") ? kiln_tool_train(3, sub) : kiln_tool_sample(3, sub);
    }
    if (!strcmp(c, "plan")) return fputs(plan_help, stdout), 0;
    if (!strcmp(c, "list")) return fputs(list_help, stdout), 0;
    if (!strcmp(c, "help")) return fputs(main_help, stdout), 0;
    return unknown_command(c);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(main_help, stderr);
        return 2;
    }
    const char *c = argv[1];
    if (is_help(c)) return fputs(main_help, stdout), 0;
    if (!strcmp(c, "--version")) {
        if (argc > 2) {
            fprintf(stderr, "kiln: unexpected argument '%s' after --version\n", argv[2]);
            return 2;
        }
        printf("kiln %s\n", kiln_version());
        return 0;
    }
    if (!strcmp(c, "help")) return help(argc, argv);
    if (!strcmp(c, "train")) return kiln_tool_train(argc, argv);
    if (!strcmp(c, "sample")) return kiln_tool_sample(argc, argv);
    if (!strcmp(c, "list")) {
        if (argc > 2 && is_help(argv[2])) return fputs(list_help, stdout), 0;
        if (argc > 2) {
            fprintf(stderr, "kiln list: unexpected argument '%s' (list takes none)\n", argv[2]);
            return 2;
        }
        return list();
    }
    if (strcmp(c, "plan")) {
        if (c[0] == '-') {
            static const char *const opts_[] = {"--help", "--version"};
            const char *near = kiln_tool_closest(c, opts_, 2);
            fprintf(stderr, "kiln: unknown option '%s'", c);
            if (near) fprintf(stderr, "; did you mean %s?", near);
            fprintf(stderr, "\n(kiln --help lists the commands and options)\n");
            return 2;
        }
        return unknown_command(c);
    }
    for (int i = 2; i < argc; i++)
        if (is_help(argv[i])) return fputs(plan_help, stdout), 0;
    if (argc < 3) return plan_usage("which program? an example (kiln list) or a FILE.kir%s", "");
    const model_entry *me = model_find(argv[2]);
    opts o;
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
    if (parse(argc, argv, &o)) return 2;
    kiln_context *ctx;
    char err[512];
    if (kiln_context_create(NULL, &ctx, err, sizeof err)) {
        fprintf(stderr, "kiln: %s\n", err);
        return 1;
    }
    int rc = plan(ctx, me, argv[2], &o);
    kiln_context_destroy(ctx);
    return rc;
}
