/* dump.h — KILN_DUMP (kiln_context_options.dump_dir): the stages of each compiled program
 * written to files, for a user debugging a program (XLA's --xla_dump_to, for kiln).
 *
 * Each program gets a prefix <dir>/kiln_<pid>_<n>.<name>. (n counts the context's
 * compiles, so programs never overwrite each other, from any number of processes), and
 * the files are written as the compile reaches each stage, so a compile that fails (a
 * compiler error, say) leaves what it got to:
 *
 *   0-traced.ir      the graph as the user traced it
 *   1-optimized.ir   after simplify / CSE / DCE
 *   2-kernels.c      the generated kernel source, each kernel headed by its IR nodes
 *                    (written before the backend compiles it)
 *   3-plan.txt, 3-plan.json, 3-plan.svg   the memory plan: report, JSON, timeline
 *
 * A dump the user asked for that cannot be written fails the compile with
 * KILN_STATUS_IO naming the file, rather than silently leaving the user without it. */
#ifndef KILN_DUMP_H
#define KILN_DUMP_H

#include "ir/ir.h"

typedef struct exec_dump {
    bool on;
    char prefix[1400];
} exec_dump;

/* Starts one program's dump (nothing when the context has no dump_dir): makes the
 * directory if needed, picks the prefix and writes 0-traced.ir from g. */
kiln_status dump_begin(kiln_context *ctx, const kiln_graph *g, exec_dump *d);
/* Writes text (NULL: a host-OOM while making it) to <prefix><stage>; nothing when off. */
kiln_status dump_write(kiln_context *ctx, const exec_dump *d, const char *stage, const char *text);
/* dump_write of g's IR text. */
kiln_status dump_graph(kiln_context *ctx, const exec_dump *d, const char *stage,
                       const kiln_graph *g);

#endif
