/* import.c — the public entry points kiln_import_stablehlo and kiln_import_hlo: argument
 * checks, the cursor's set-up, and the promise that a failed import leaves nothing
 * behind (*out NULL, every graph made on the way destroyed by the front end). */
#include "import.h"

static kiln_status run(kiln_context *ctx, const char *api, const char *text, size_t len,
                       kiln_graph **out, kiln_status (*front)(imp_lex *, kiln_graph **)) {
    if (out) *out = NULL;
    if (!ctx) return KILN_STATUS_INVALID_ARGUMENT;
    if (!out || (!text && len))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", api,
                         out ? "text" : "out");
    if (len > IMP_MAX_BYTES)
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT,
                         "%s: the text is %zu bytes, more than the %zu an import reads", api, len,
                         IMP_MAX_BYTES);
    imp_lex L = {.ctx = ctx, .api = api, .src = text ? text : "", .len = len, .line = 1};
    kiln_status s = front(&L, out);
    if (s) *out = NULL;
    if (s && L.msg[0]) ctx_error(ctx, s, "%s", L.msg); /* the import's own, not a later one */
    return s;
}

kiln_status kiln_import_stablehlo(kiln_context *ctx, const char *text, size_t len,
                                  kiln_graph **out) {
    return run(ctx, "kiln_import_stablehlo", text, len, out, imp_stablehlo);
}

kiln_status kiln_import_hlo(kiln_context *ctx, const char *text, size_t len, kiln_graph **out) {
    return run(ctx, "kiln_import_hlo", text, len, out, imp_hlo);
}
