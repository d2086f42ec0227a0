/* fuzz_common.h — the byte reader every fuzz target draws its choices from.
 *
 * A target reads its decisions from the input one byte at a time; once the input is spent
 * every read returns 0, so any input, however short, is a complete program and the
 * fuzzer's mutations (insert, erase, flip) move the program step by step. */
#ifndef KILN_FUZZ_COMMON_H
#define KILN_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fz_bytes {
    const uint8_t *p;
    size_t n, at;
} fz_bytes;

static inline bool fz_done(const fz_bytes *b) {
    return b->at >= b->n;
}

static inline uint8_t fz_u8(fz_bytes *b) {
    return b->at < b->n ? b->p[b->at++] : 0;
}

/* In [0, n), n > 0. */
static inline int fz_int(fz_bytes *b, int n) {
    return (int)(fz_u8(b) % (unsigned)n);
}

static inline uint64_t fz_u64(fz_bytes *b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | fz_u8(b);
    return v;
}

/* A string of up to max bytes: a length byte, then the bytes (NUL ends it early). */
static inline size_t fz_string(fz_bytes *b, char *out, size_t max) {
    size_t len = fz_u8(b);
    if (len == 255) len = (size_t)fz_u8(b) << 4; /* now and then a long one */
    if (len > max) len = max;
    size_t i = 0;
    for (; i < len && !fz_done(b); i++) {
        out[i] = (char)fz_u8(b);
        if (!out[i]) break;
    }
    out[i] = 0;
    return i;
}

/* An environment variable set from the input, or unset: the fuzz targets own their
 * process, so changing its environment is theirs to do. */
static inline void fz_setenv(const char *name, const char *value) {
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

#endif
