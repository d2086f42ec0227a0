/* gpt_internal.h — what the files of models/gpt share and the public header leaves out. */
#ifndef KILN_GPT_INTERNAL_H
#define KILN_GPT_INTERNAL_H

#include "gpt.h"

/* gpt_init_params and gpt_checkpoint_load with the arrays made in memory kind `kind` of
 * device 0 (kinds[k] for the parameters, m and v): host offload's state is never whole on
 * the device on its way to host memory (a tensor at a time, at most, while it is read). */
kiln_status gpt_init_params_in(kiln_context *ctx, const gpt_config *cfg, kiln_dtype dtype,
                               uint64_t seed, kiln_memory_kind kind, kiln_array **params,
                               char *err);
kiln_status gpt_checkpoint_load_in(kiln_context *ctx, const char *path, const gpt_config *cfg,
                                   const kiln_memory_kind kinds[3], kiln_array **params,
                                   kiln_array **m, kiln_array **v, char *err);

/* FNV-1a: h (GPT_FNV_START for a new hash) extended over n bytes at p. What the corpus,
 * the batches file and the parameters are fingerprinted with. */
#define GPT_FNV_START 0xcbf29ce484222325ull
static inline uint64_t gpt_fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* printf into err (GPT_ERR_SIZE bytes). */
void gpt_errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens path for reading if it is a regular file (without blocking on a FIFO first), and
 * gives its size. KILN_STATUS_IO if it cannot be opened, INVALID_ARGUMENT if it is not a
 * regular file ("the corpus 'x' is not a regular file (a FIFO) ..."), err saying so. */
kiln_status gpt_open_regular(const char *path, const char *what, FILE **f, int64_t *size,
                             char *err);

/* run_log.c: a file of --out written under a temporary name and renamed into place on
 * close (the previous file stays on any failure; err says why). */
typedef struct gpt_out {
    char path[4200], tmp[4232];
} gpt_out;
FILE *gpt_out_open(const char *dir, const char *name, gpt_out *o, char *err);
kiln_status gpt_out_close(FILE *f, const gpt_out *o, char *err);

/* losses.csv, appended as the run goes. Open keeps the lines of steps 1..keep_through of a
 * log already there (a resumed run's) and drops the rest. */
typedef struct gpt_log {
    FILE *f; /* NULL: no log (a rank other than 0, no --out) */
    char path[4200];
} gpt_log;
kiln_status gpt_log_open(gpt_log *l, const char *dir, int64_t keep_through, char *err);
kiln_status gpt_log_step(gpt_log *l, int64_t step, double loss, double val, double ms, char *err);
kiln_status gpt_log_flush(gpt_log *l, char *err);
kiln_status gpt_log_close(gpt_log *l, char *err);
/* dir/loss.svg from dir/losses.csv: the whole run, resumed parts included. */
kiln_status gpt_log_svg(const char *dir, char *err);

/* decode.c: the model with a KV cache (sample.c). The graph of S new tokens at positions
 * pos.. over per-layer key and value caches ([T, C] f32 each, 2L arrays: layer l's keys
 * at 2l, values at 2l + 1), compiled with the caches donated; S = T is the prefill, S = 1
 * a step. */
kiln_status gpt_decode_compile(kiln_context *ctx, const gpt_config *cfg, int64_t S,
                               kiln_executable **e, char *err);
/* Runs it on S tokens at pos and writes the logits of new token `row` (vocab floats);
 * caches[] are replaced by their updates (the old arrays are donated and destroyed). */
kiln_status gpt_decode_run(kiln_context *ctx, kiln_executable *e, const gpt_config *cfg,
                           kiln_array *const *params, kiln_array **caches, const int32_t *tokens,
                           int64_t S, int32_t pos, int32_t row, float *logits, char *err);

#endif
