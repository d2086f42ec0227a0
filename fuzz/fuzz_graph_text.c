/* fuzz_graph_text.c — libFuzzer target: kiln_graph_parse, the reader of the IR's text form
 * (src/trace/load.c).
 *
 * The input is the text itself (the seed corpus holds graphs kiln_graph_save wrote, and the
 * dictionary the words of the form). What must hold: no crash, no read past the input's
 * length (the text is handed over without a terminator, in a buffer of exactly its size),
 * a failure sets a message that names the text ("fuzz.kir:LINE: ..."), and a text that
 * loads is a fixed point of save-then-load: its saved text loads to a graph whose saved
 * text is the same. */
#include "fuzz_common.h"

#include "kiln.h"

#include <stdio.h>
#include <unistd.h>

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

/* The saved text of g, through a file in /tmp (malloc'd). */
static char *saved(kiln_graph *g, size_t *len) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/kiln-fuzz-graph-text-%d.kir", (int)getpid());
    if (kiln_graph_save(g, path)) abort(); /* a loaded graph is finished and can be saved */
    FILE *f = fopen(path, "rb");
    if (!f) abort();
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) abort();
    s[n] = 0;
    fclose(f);
    remove(path);
    *len = (size_t)n;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    char *text = malloc(size ? size : 1); /* exactly the input: reading past it is caught */
    if (!text) abort();
    memcpy(text, data, size);
    kiln_graph *g = NULL;
    kiln_status s = kiln_graph_parse(fz_ctx, text, size, "fuzz.kir", &g);
    free(text);
    if (s != KILN_STATUS_OK) {
        if (g || strncmp(kiln_last_error(fz_ctx), "fuzz.kir:", 9)) {
            fprintf(stderr, "failure without the text's name: %s\n", kiln_last_error(fz_ctx));
            abort();
        }
        return 0;
    }
    size_t n1, n2;
    char *t1 = saved(g, &n1);
    kiln_graph_destroy(g);
    if (kiln_graph_parse(fz_ctx, t1, n1, "fuzz.kir", &g)) {
        fprintf(stderr, "a saved text does not load: %s\n%s", kiln_last_error(fz_ctx), t1);
        abort();
    }
    char *t2 = saved(g, &n2);
    kiln_graph_destroy(g);
    if (n1 != n2 || memcmp(t1, t2, n1)) {
        fprintf(stderr, "save(load(save(x))) differs from save(x):\n%s---\n%s", t1, t2);
        abort();
    }
    free(t1);
    free(t2);
    return 0;
}
