/* fuzz_checkpoint.c — libFuzzer target: the checkpoint loading path of `kiln sample` and
 * `kiln train --resume / --init` (models/gpt/checkpoint.c over src/io/safetensors.c): the
 * config and recipe in the metadata, then every parameter and moment read and checked.
 *
 * The first byte picks how the input becomes a file, as fuzz_safetensors does. Raw
 * (even): the rest of the input is the file. Header (odd): the rest up to the first NUL is
 * the JSON header and the bytes after it the data section; the target writes the 8-byte
 * length itself, so mutations work inside the JSON (names, shapes, metadata numbers).
 *
 * What must hold: every call gives OK, INVALID_ARGUMENT or IO (never another status), a
 * failure with a message naming the file; after the config reads OK, a load either fails
 * or gives every tensor at its shape and finite; the recipe's counts lie in their ranges.
 * No crash, leak, hang or sanitizer report, whatever the input. */
#include "fuzz_common.h"

#include "gpt.h"
#include "kiln.h"

#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_path[96];
static kiln_context *fz_ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/kiln-fuzz-checkpoint-%u-%d", (unsigned)geteuid(),
             (int)getpid());
    mkdir(dir, 0700);
    snprintf(fz_path, sizeof fz_path, "%s/model.safetensors", dir);
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    char err[256];
    if (kiln_context_create(&o, &fz_ctx, err, sizeof err)) {
        fprintf(stderr, "fuzz_checkpoint: %s\n", err);
        abort();
    }
    return 0;
}

static void write_file(const uint8_t *data, size_t size) {
    FILE *f = fopen(fz_path, "wb");
    if (!f) abort();
    if (size && (data[0] & 1)) { /* header mode */
        const uint8_t *nul = memchr(data + 1, 0, size - 1);
        size_t hn = nul ? (size_t)(nul - data - 1) : size - 1;
        unsigned char len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hn >> (8 * i));
        fwrite(len8, 1, 8, f);
        fwrite(data + 1, 1, hn, f);
        if (nul) fwrite(nul + 1, 1, size - (size_t)(nul - data) - 1, f);
    } else if (size > 1)
        fwrite(data + 1, 1, size - 1, f);
    fclose(f);
}

static void check_status(kiln_status st, const char *err, const char *what) {
    if (st != KILN_STATUS_OK && st != KILN_STATUS_INVALID_ARGUMENT && st != KILN_STATUS_IO) {
        fprintf(stderr, "fuzz_checkpoint: %s gave %s: %s\n", what, kiln_status_name(st), err);
        abort();
    }
    if (st && !strstr(err, fz_path)) {
        fprintf(stderr, "fuzz_checkpoint: %s's message does not name the file: %s\n", what, err);
        abort();
    }
}

/* Every loaded array has its parameter's shape and only finite values. */
static void check_loaded(const gpt_config *cfg, kiln_array **a, int n) {
    int P = gpt_num_params(cfg);
    for (int i = 0; i < n; i++) {
        char name[GPT_NAME_MAX];
        int rank;
        int64_t dims[2];
        gpt_param_info(cfg, i % P, name, &rank, dims);
        if (kiln_array_rank(a[i]) != rank || kiln_array_dtype(a[i]) != KILN_DTYPE_F32) abort();
        for (int k = 0; k < rank; k++)
            if (kiln_array_dim(a[i], k) != dims[k]) abort();
        size_t nb = kiln_array_nbytes(a[i]);
        float *v = malloc(nb ? nb : 1);
        if (!v || kiln_array_copy_to_host(a[i], v, nb)) abort();
        for (size_t k = 0; k < nb / sizeof *v; k++)
            if (!isfinite(v[k])) abort();
        free(v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    write_file(data, size);
    char err[GPT_ERR_SIZE] = "";
    gpt_train_options o;
    gpt_train_defaults(&o);
    kiln_status st = gpt_checkpoint_read_options(fz_ctx, fz_path, &o, err);
    check_status(st, err, "gpt_checkpoint_read_options");
    if (!st && (o.steps < 1 || o.steps > GPT_MAX_STEPS || o.warmup < 0 ||
                o.warmup > GPT_MAX_STEPS || o.batch < 1))
        abort();
    gpt_config cfg;
    st = gpt_checkpoint_config(fz_ctx, fz_path, &cfg, err);
    check_status(st, err, "gpt_checkpoint_config");
    if (st) return 0;
    /* the tensors are as large as the file says, and the file is small: a config whose
     * parameters would not fit in it fails at the first missing or mis-shaped tensor */
    int P = gpt_num_params(&cfg);
    if (P > 4 + 12 * 64) return 0;
    kiln_array **a = calloc((size_t)(3 * P), sizeof *a);
    if (!a) abort();
    for (int moments = 0; moments < 2; moments++) {
        st = gpt_checkpoint_load(fz_ctx, fz_path, &cfg, a, moments ? a + P : NULL,
                                 moments ? a + 2 * P : NULL, err);
        check_status(st, err, "gpt_checkpoint_load");
        if (st) {
            for (int i = 0; i < 3 * P; i++)
                if (a[i]) abort(); /* a failed load leaves nothing behind */
            break;
        }
        check_loaded(&cfg, a, moments ? 3 * P : P);
        for (int i = 0; i < 3 * P; i++) kiln_array_destroy(a[i]), a[i] = NULL;
    }
    free(a);
    return 0;
}
