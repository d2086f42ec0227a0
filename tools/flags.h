/* flags.h — the kiln tool's flags, each described once: one table per command (name, value
 * kind, where it is stored, its default, its help) from which tools/flags.c derives the
 * parsing, the --help text and the "did you mean ...?" of a typo. A table's row order is
 * its help's line order. */
#ifndef KILN_TOOL_FLAGS_H
#define KILN_TOOL_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum tool_flag_kind {
    TOOL_FLAG_HEADING, /* no flag: a line of the help (its help text) */
    TOOL_FLAG_HELP,    /* --help (and -h): prints the help */
    TOOL_FLAG_SWITCH,  /* takes no value: sets a bool */
    TOOL_FLAG_INT,     /* an int in [lo, hi] */
    TOOL_FLAG_INT64,   /* an int64_t in [lo, hi] */
    TOOL_FLAG_LLONG,   /* a long long in [lo, hi] */
    TOOL_FLAG_UINT64,  /* a uint64_t in [lo, hi] (lo >= 0) */
    TOOL_FLAG_DOUBLE,  /* a double in [flo, fhi] */
    TOOL_FLAG_STRING,  /* a const char * into argv */
    TOOL_FLAG_CUSTOM,  /* parse(value, opts) stores it, false if it is not one */
} tool_flag_kind;

typedef struct tool_flag {
    const char *name; /* "--layers"; -h is --help's short name */
    const char *arg;  /* what the help calls the value ("N"); NULL for a switch */
    tool_flag_kind kind;
    size_t offset;    /* where it is stored: offsetof(the command's options, field) */
    long long lo, hi; /* the integer kinds' range */
    double flo, fhi;  /* TOOL_FLAG_DOUBLE's range */
    bool (*parse)(const char *value, void *opts); /* TOOL_FLAG_CUSTOM */
    const char *bad; /* TOOL_FLAG_CUSTOM: the error after "FLAG: 'VALUE' " */
    /* The value before any flag is read, stored as a given one is (so the help cannot
     * show another); NULL where the default is not a value the flag takes ("all cores")
     * and the help says it in words. */
    const char *def;
    const char *label; /* the help's left column when not "NAME ARG" */
    /* Lines joined by '\n'; "{}" shows def, "{--NAME}" flag --NAME's def. NULL: no line of
     * its own (another row's label names it, or it is --help where the help omits it). */
    const char *help;
} tool_flag;

typedef struct tool_command {
    const char *name;  /* "train": messages say "kiln train: ..." */
    const char *noun;  /* "flag" or "option": "unknown flag", "--help lists the flags" */
    const char *usage; /* the help's opening lines */
    int column;        /* the width of the help's left column */
    const tool_flag *flags;
    size_t n_flags;
    /* An argument that is no flag: 0, or 2 having said why (kiln_tool_usage). NULL: every
     * one is an error. */
    int (*positional)(const struct tool_command *c, const char *arg, void *opts);
} tool_command;

/* kiln_tool_flags_parse's result besides 0 and 2: the help was asked for and printed. */
#define KILN_TOOL_HELP (-1)

/* Stores every row's def into opts: 0, or 2 when a default is not a value of its flag
 * (a mistake in the table, said so). */
int kiln_tool_flags_defaults(const tool_command *c, void *opts);
/* Reads argv[first..argc) into opts. A flag takes its value as the next argument or after
 * '='. 0, KILN_TOOL_HELP, or 2 after a message naming the bad argument (and the closest
 * flag to an unknown one). */
int kiln_tool_flags_parse(const tool_command *c, int argc, char **argv, int first, void *opts);
void kiln_tool_flags_help(const tool_command *c, FILE *f);
/* Every row's help text (for the --help of a top-level table), without the usage lines. */
void kiln_tool_flags_rows(const tool_command *c, FILE *f);
/* "kiln CMD: <fmt ...>" then where the help is, on stderr; returns 2 (a usage error). */
int kiln_tool_usage(const tool_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The flag named name among c's (-h is --help), or NULL. */
const tool_flag *kiln_tool_flag_find(const tool_command *c, const char *name);

/* "64MiB", "2GB", "1000000" -> bytes; "50%" -> fraction 0.5. False if it is neither. */
bool kiln_tool_parse_bytes(const char *s, uint64_t *bytes, double *fraction);
/* The name among names[0..n) closest to word by edit distance, or NULL when none is
 * near enough to be a typo of it: "did you mean ...?" in the tool's usage errors. */
const char *kiln_tool_closest(const char *word, const char *const *names, size_t n);

#endif
