/* strbuf.c — growable strings (see strbuf.h). Capacity doubles; the text is always
 * terminated so a failed buffer still reads as the prefix that fitted. */
#include "strbuf.h"

#include <stdio.h>
#include <string.h>

void sb_init(strbuf *sb, kiln_context *ctx) {
    *sb = (strbuf){.ctx = ctx};
}

void sb_free(strbuf *sb) {
    host_free(sb->ctx, sb->data, sb->cap);
    sb_init(sb, sb->ctx);
}

static bool sb_reserve(strbuf *sb, size_t extra) {
    if (sb->oom) return false;
    size_t need;
    if (!kn_add_size(sb->len, extra + 1, &need)) return sb->oom = true, false;
    if (need <= sb->cap) return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < need) cap *= 2;
    char *p = host_realloc(sb->ctx, sb->data, sb->cap, cap);
    if (!p) return sb->oom = true, false;
    sb->data = p;
    sb->cap = cap;
    return true;
}

void sb_append(strbuf *sb, const char *s) {
    size_t n = strlen(s);
    if (!sb_reserve(sb, n)) return;
    memcpy(sb->data + sb->len, s, n + 1);
    sb->len += n;
}

void sb_printf(strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sb_reserve(sb, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

char *sb_take(strbuf *sb) {
    if (!sb->oom && !sb_reserve(sb, 0)) sb->oom = true;
    if (sb->oom) {
        sb_free(sb);
        return NULL;
    }
    /* Shrink to exactly len + 1 so kiln_string_free can give back strlen + 1 bytes. */
    char *p = host_realloc(sb->ctx, sb->data, sb->cap, sb->len + 1);
    if (!p) {
        sb_free(sb);
        return NULL;
    }
    sb_init(sb, sb->ctx);
    return p;
}
