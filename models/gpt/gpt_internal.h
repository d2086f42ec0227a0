/* gpt_internal.h — what the files of models/gpt share and the public header leaves out. */
#ifndef KILN_GPT_INTERNAL_H
#define KILN_GPT_INTERNAL_H

#include "gpt.h"

/* printf into err (GPT_ERR_SIZE bytes). */
void gpt_errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
