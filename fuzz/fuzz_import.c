/* fuzz_import.c — libFuzzer target: kiln_import_stablehlo and kiln_import_hlo, the readers
 * of the text JAX exports (src/import/).
 *
 * The input is the text itself, given to both readers (the seed corpus holds real JAX
 * exports of both forms, the dictionary their words). What must hold: no crash, no read
 * past the input's length (the text is handed over without a terminator, in a buffer of
 * exactly its size), no hang and no unbounded allocation (the readers bound the ops they
 * read, calls inlined included, and the nesting of regions and calls), a failure leaves
 * *out NULL and sets a message naming the line, the column and kiln's version, and a text
 * that imports gives a finished graph that prints. */
#include "fuzz_common.h"

#include "kiln.h"

#include <stdio.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kiln_context *fz_ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    char err[256];
    if (kiln_context_create(&o, &fz_ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    return 0;
}

static void one(kiln_status (*imp)(kiln_context *, const char *, size_t, kiln_graph **),
                const char *text, size_t size) {
    kiln_graph *g = (kiln_graph *)&g; /* must come back NULL on failure */
    kiln_status s = imp(fz_ctx, text, size, &g);
    if (s) {
        if (g) abort();
        const char *msg = kiln_last_error(fz_ctx);
        /* the readers' own messages carry where and which kiln; a host OOM's need not */
        if (s != KILN_STATUS_HOST_OOM && (!strstr(msg, "line ") || !strstr(msg, kiln_version()))) {
            fprintf(stderr, "a message without its place: %s\n", msg);
            abort();
        }
        return;
    }
    if (!g || kiln_graph_num_outputs(g) < 1) abort();
    char *str = kiln_graph_to_string(g);
    if (!str) abort();
    kiln_string_free(fz_ctx, str);
    kiln_graph_destroy(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char *text = malloc(size ? size : 1); /* exactly the input: reading past it is caught */
    if (!text) abort();
    memcpy(text, data, size);
    one(kiln_import_stablehlo, text, size);
    one(kiln_import_hlo, text, size);
    free(text);
    return 0;
}
