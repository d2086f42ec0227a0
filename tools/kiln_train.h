/* kiln_train.h — the `kiln train` and `kiln sample` subcommands (tools/kiln_train.c),
 * called by the dispatcher in tools/kiln.c with the whole command line. */
#ifndef KILN_TOOL_TRAIN_H
#define KILN_TOOL_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Each returns the process's exit status: 0, 1 (runtime error) or 2 (usage error); train
 * also 130 or 143 after SIGINT or SIGTERM stopped it (saved). */
int kiln_tool_train(int argc, char **argv);
int kiln_tool_sample(int argc, char **argv);
/* Their --help text (kiln help train). */
void kiln_tool_train_help(FILE *f);
void kiln_tool_sample_help(FILE *f);

/* tools/stop_signals.c. Blocks SIGINT and SIGTERM in the calling thread (and so in every
 * thread it makes afterwards: call it before any) and starts the one thread that takes
 * them. -1 if either step fails. */
int kiln_tool_block_stop_signals(void);
/* The first stop signal's number once one came (0 before): gpt_train_options.stop. */
volatile sig_atomic_t *kiln_tool_stop_flag(void);
/* The checkpoint a second signal must not leave half written (its temporary files go).
 * The calling thread is taken to be the one that saves, until the next call below. */
void kiln_tool_set_checkpoint_path(const char *path);
/* The calling thread saves the checkpoints: a second signal parks it before it removes
 * the temporary files, so that it cannot make another one in between. */
void kiln_tool_set_saver_thread(void);

#endif
