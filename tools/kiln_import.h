/* kiln_import.h — `kiln import FILE` and the reading of JAX's exported text that
 * `kiln plan FILE.mlir|.hlo` shares with it (tools/kiln_import.c). */
#ifndef KILN_TOOL_IMPORT_H
#define KILN_TOOL_IMPORT_H

#include "kiln.h"

#include <stdbool.h>
#include <stdio.h>

/* Whether path names a file of JAX's exported text: .mlir (StableHLO) or .hlo (HLO). */
bool kiln_tool_is_import(const char *path);
/* Reads path and imports it by its extension; 1 having printed why, or 0. */
int kiln_tool_import_file(kiln_context *ctx, const char *path, kiln_graph **out);
/* The arguments the exported text says JAX donated (StableHLO's tf.aliasing_output on
 * @main's arguments, HLO's input_output_alias), at most max of them, into donate; their
 * count (0 when the file cannot be read or names none). */
int kiln_tool_import_donations(const char *path, int *donate, int max);
int kiln_tool_import(int argc, char **argv);
void kiln_tool_import_help(FILE *f);

#endif
