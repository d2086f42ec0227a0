/* fuzz_safetensors.c — libFuzzer target: the safetensors reader (src/io/safetensors.c)
 * and, behind it, the writer.
 *
 * The first byte picks how the input becomes a file. Raw (even): the rest of the input is
 * the file, length prefix and all. Header (odd): the rest up to the first NUL is the JSON
 * header and the bytes after it the data section; the target writes the 8-byte length
 * itself, so mutations spend their effort inside the JSON rather than on the prefix (the
 * 0x02 bit then misstates the length by the next byte, signed, to reach the length checks).
 *
 * What must hold: open gives OK or INVALID_ARGUMENT (the file is always a readable regular
 * file), the latter with a message naming the file; after OK every tensor's info is there
 * and its read gives an array of exactly that dtype and shape (or INVALID_ARGUMENT for a
 * BOOL byte other than 0/1); and what was read, saved again and reopened, reads back
 * byte for byte under the same names. No crash, leak or sanitizer report, whatever the
 * input. */
#include "fuzz_common.h"

#include "kiln.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The harness's own state, set once: a private folder and the context every input uses. */
static char fz_path[96], fz_again[96];
static kiln_context *fz_ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/kiln-fuzz-safetensors-%u-%d", (unsigned)geteuid(),
             (int)getpid());
    mkdir(dir, 0700);
    snprintf(fz_path, sizeof fz_path, "%s/in.safetensors", dir);
    snprintf(fz_again, sizeof fz_again, "%s/again.safetensors", dir);
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    char err[256];
    if (kiln_context_create(&o, &fz_ctx, err, sizeof err)) {
        fprintf(stderr, "fuzz_safetensors: %s\n", err);
        abort();
    }
    return 0;
}

static void write_file(const uint8_t *head, size_t head_n, const uint8_t *body, size_t body_n) {
    FILE *f = fopen(fz_path, "wb");
    if (!f) abort();
    if (head_n && fwrite(head, 1, head_n, f) != head_n) abort();
    if (body_n && fwrite(body, 1, body_n, f) != body_n) abort();
    fclose(f);
}

#define FZ_MAX_T 64

/* Saves the arrays read, reopens the copy and compares it with them. */
static void check_resave(char **names, kiln_array **arrays, int n) {
    if (kiln_safetensors_save(fz_ctx, fz_again, n, (const char *const *)names, arrays, 0, NULL))
        abort(); /* names came from a valid file: unique, non-empty, UTF-8 */
    kiln_safetensors *g = NULL;
    if (kiln_safetensors_open(fz_ctx, fz_again, &g) || kiln_safetensors_count(g) != n) abort();
    for (int i = 0; i < n; i++) {
        kiln_array *b = NULL;
        if (kiln_safetensors_read(g, names[i], &b)) abort();
        size_t nb = kiln_array_nbytes(arrays[i]);
        if (kiln_array_nbytes(b) != nb || kiln_array_dtype(b) != kiln_array_dtype(arrays[i]))
            abort();
        uint8_t *x = malloc(nb ? nb : 1), *y = malloc(nb ? nb : 1);
        if (kiln_array_copy_to_host(arrays[i], x, nb) || kiln_array_copy_to_host(b, y, nb) ||
            memcmp(x, y, nb))
            abort();
        free(x), free(y);
        kiln_array_destroy(b);
    }
    kiln_safetensors_close(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_bytes b = {data, size, 0};
    uint8_t mode = fz_u8(&b);
    const uint8_t *rest = data + b.at;
    size_t rest_n = size - b.at;
    if (mode & 1) {
        const uint8_t *nul = memchr(rest, 0, rest_n);
        size_t hlen = nul ? (size_t)(nul - rest) : rest_n;
        size_t body_at = nul ? hlen + 1 : rest_n;
        uint64_t stated = hlen;
        if (mode & 2) stated += (uint64_t)(int64_t)(int8_t)(body_at < rest_n ? rest[body_at++] : 0);
        uint8_t *file = malloc(8 + hlen);
        for (int i = 0; i < 8; i++) file[i] = (uint8_t)(stated >> (8 * i));
        memcpy(file + 8, rest, hlen);
        write_file(file, 8 + hlen, rest + body_at, rest_n - body_at);
        free(file);
    } else {
        write_file(rest, rest_n, NULL, 0);
    }

    kiln_safetensors *f = NULL;
    kiln_status s = kiln_safetensors_open(fz_ctx, fz_path, &f);
    if (s != KILN_STATUS_OK) {
        if (s != KILN_STATUS_INVALID_ARGUMENT || f || !strstr(kiln_last_error(fz_ctx), fz_path))
            abort();
        return 0;
    }
    int n = kiln_safetensors_count(f);
    char *names[FZ_MAX_T];
    kiln_array *arrays[FZ_MAX_T];
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const char *name = kiln_safetensors_name(f, i);
        kiln_dtype dt;
        int rank;
        int64_t dims[KILN_MAX_RANK];
        if (!name || kiln_safetensors_get_info(f, name, &dt, &rank, dims)) abort();
        int64_t elems = 1;
        for (int k = 0; k < rank; k++) elems *= dims[k];
        kiln_array *a = NULL;
        s = kiln_safetensors_read(f, name, &a);
        if (s) {
            if (s != KILN_STATUS_INVALID_ARGUMENT || dt != KILN_DTYPE_BOOL || a) abort();
            continue;
        }
        if (kiln_array_dtype(a) != dt || kiln_array_rank(a) != rank || kiln_array_size(a) != elems)
            abort();
        if (kept < FZ_MAX_T) {
            names[kept] = strdup(name);
            arrays[kept++] = a;
        } else {
            kiln_array_destroy(a);
        }
    }
    if (kiln_safetensors_name(f, n) != NULL) abort();
    kiln_safetensors_close(f);
    check_resave(names, arrays, kept);
    for (int i = 0; i < kept; i++) {
        free(names[i]);
        kiln_array_destroy(arrays[i]);
    }
    return 0;
}
