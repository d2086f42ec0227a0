/* dump.c — KILN_DUMP: a compiled program's stages written to files (see dump.h). */
#include "dump.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p: each missing component is made (0755); an existing directory is fine. */
static kiln_status make_dirs(kiln_context *ctx, const char *dir) {
    char path[sizeof ctx->config.dump_dir];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        struct stat st;
        if (mkdir(path, 0755) && errno != EEXIST)
            return ctx_error(ctx, KILN_STATUS_IO, "KILN_DUMP: cannot create directory %s: %s", path,
                             strerror(errno));
        if (stat(path, &st) || !S_ISDIR(st.st_mode))
            return ctx_error(ctx, KILN_STATUS_IO, "KILN_DUMP: %s is not a directory", path);
        if (!c) return KILN_STATUS_OK;
        *p = c;
    }
}

/* The graph's name as a file-name part: letters, digits, '_', '-' and '.' kept, anything
 * else '_', at most 64 characters. */
static void file_name_part(const char *name, char *out, size_t n) {
    size_t k = 0;
    for (const char *c = name ? name : ""; *c && k + 1 < n && k < 64; c++) {
        bool keep = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.';
        out[k++] = keep ? *c : '_';
    }
    out[k] = 0;
    if (!k) snprintf(out, n, "graph");
}

kiln_status dump_begin(kiln_context *ctx, const kiln_graph *g, exec_dump *d) {
    d->on = ctx->config.dump_dir[0] != 0;
    if (!d->on) return KILN_STATUS_OK;
    kiln_status s = make_dirs(ctx, ctx->config.dump_dir);
    if (s) return s;
    char name[80];
    file_name_part(g->name, name, sizeof name);
    unsigned n = atomic_fetch_add(&ctx->next_dump_id, 1);
    snprintf(d->prefix, sizeof d->prefix, "%s/kiln_%ld_%04u.%s.", ctx->config.dump_dir,
             (long)getpid(), n, name);
    return dump_graph(ctx, d, "0-traced.ir", g);
}

kiln_status dump_write(kiln_context *ctx, const exec_dump *d, const char *stage, const char *text) {
    if (!d->on) return KILN_STATUS_OK;
    char path[sizeof d->prefix + 32];
    snprintf(path, sizeof path, "%s%s", d->prefix, stage);
    if (!text) return ctx_oom(ctx, "KILN_DUMP: the text of a stage", 0);
    FILE *f = fopen(path, "w");
    if (!f)
        return ctx_error(ctx, KILN_STATUS_IO, "KILN_DUMP: cannot write %s: %s", path,
                         strerror(errno));
    size_t len = strlen(text);
    bool ok = fwrite(text, 1, len, f) == len;
    int saved = errno;
    ok &= fclose(f) == 0;
    if (!ok)
        return ctx_error(ctx, KILN_STATUS_IO, "KILN_DUMP: writing %s failed: %s", path,
                         strerror(saved ? saved : errno));
    return KILN_STATUS_OK;
}

kiln_status dump_graph(kiln_context *ctx, const exec_dump *d, const char *stage,
                       const kiln_graph *g) {
    if (!d->on) return KILN_STATUS_OK;
    char *text = kiln_graph_to_string(g);
    kiln_status s = dump_write(ctx, d, stage, text);
    kiln_string_free(ctx, text);
    return s;
}
