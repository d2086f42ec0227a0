/* sha256.h — SHA-256 (FIPS 180-4), streaming and one-shot, for cache keys and for
 * checking that a cached object is the one that was written.
 *
 * Not constant-time and not meant for secrets: kiln hashes code it generated itself. */
#ifndef KILN_SHA256_H
#define KILN_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES     32
#define SHA256_HEX_BYTES 65 /* 64 lowercase hex digits and a NUL */

typedef struct sha256_ctx {
    uint32_t h[8];     /* the chaining state */
    uint64_t bytes;    /* message length so far */
    uint8_t block[64]; /* a partial block, block_len bytes of it used */
    size_t block_len;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
/* Pads, writes the digest and leaves c unusable until sha256_init. */
void sha256_final(sha256_ctx *c, uint8_t out[SHA256_BYTES]);

void sha256(const void *data, size_t len, uint8_t out[SHA256_BYTES]);
void sha256_hex(const uint8_t digest[SHA256_BYTES], char out[SHA256_HEX_BYTES]);

#endif
