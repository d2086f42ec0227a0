/* strbuf.h — a growable string on the context's host allocator. A failed allocation
 * makes the buffer "failed" (sb.oom set): later appends do nothing, so a long printer can
 * check once at the end. */
#ifndef KILN_STRBUF_H
#define KILN_STRBUF_H

#include "base.h"

typedef struct strbuf {
    kiln_context *ctx;
    char *data; /* always terminated when cap > 0 */
    size_t len, cap;
    bool oom;
} strbuf;

void sb_init(strbuf *sb, kiln_context *ctx);
void sb_free(strbuf *sb);
void sb_append(strbuf *sb, const char *s);
void sb_printf(strbuf *sb, const char *fmt, ...) KN_PRINTF(2, 3);
/* Hands the text to the caller (free with host_free(p, strlen+1)... use kiln_string_free)
 * and resets sb. Returns NULL if an append failed. */
char *sb_take(strbuf *sb);

#endif
