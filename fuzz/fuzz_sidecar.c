/* fuzz_sidecar.c — libFuzzer target: the kernel cache's sidecar (.meta) parser and the
 * entry check around it (objcache_verify in src/backend/objcache.c).
 *
 * Each input writes one cache entry into a private folder: a .meta sidecar and a .so
 * object, both from the input's bytes. The sidecar is either taken raw or written as a
 * writer would ("kiln-cc-entry 1", key, size, SHA-256 of the object) and then edited at
 * one place, so the fuzzer reaches both the parser's rejections and the object checks
 * behind it; now and then the object is missing, a folder or a symbolic link. Then
 * objcache_verify judges the entry. What must hold: OK only for an entry a writer could
 * have made (the sidecar exactly canonical, the object a regular file of that size and
 * hash); CORRUPT leaves neither file behind; no crash, no read past a buffer.
 *
 * Keys are always hex digits, as cc.c makes them: the folder is the only place touched. */
#include "fuzz_common.h"

#include "backend/objcache.h"
#include "base/sha256.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_dir[64]; /* the private cache folder; set once */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    snprintf(fz_dir, sizeof fz_dir, "/tmp/kiln-fuzz-sidecar-%u-%d", (unsigned)geteuid(),
             (int)getpid());
    mkdir(fz_dir, 0700);
    return 0;
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

static bool exists(const char *path) {
    struct stat sb;
    return !lstat(path, &sb);
}

/* Removes whatever the last input left: a file, a link, an empty folder. */
static void clear(const char *path) {
    if (unlink(path)) rmdir(path);
}

/* The sidecar a writer would make for this object: canonical when edit is 0. */
static size_t make_meta(fz_bytes *b, char *meta, size_t cap, const char *key, const uint8_t *obj,
                        size_t obj_n) {
    uint8_t digest[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES];
    sha256(obj, obj_n, digest);
    sha256_hex(digest, hex);
    uint8_t how = fz_u8(b);
    unsigned long long size = obj_n + (how == 1) - (how == 2 && obj_n);
    int n = snprintf(meta, cap, "kiln-cc-entry 1\nkey %s\nsize %llu\nsha256 %s\n", key, size, hex);
    if (n < 0 || (size_t)n >= cap) return 0;
    if (how >= 3 && how < 200) { /* one byte changed, inserted or cut off */
        size_t at = fz_u8(b) % (size_t)n;
        uint8_t c = fz_u8(b);
        if (how % 3 == 0) meta[at] = (char)c;
        if (how % 3 == 1)
            memmove(meta + at + 1, meta + at, (size_t)n - at + 1), meta[at] = (char)c, n++;
        if (how % 3 == 2) n = (int)at;
    }
    return (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char hexd[] = "0123456789abcdef";
    fz_bytes b = {data, size, 0};
    uint8_t mode = fz_u8(&b);
    char key[OBJCACHE_KEY_HEX + 1];
    int key_len = mode & 0x80 ? 1 + fz_int(&b, OBJCACHE_KEY_HEX) : OBJCACHE_KEY_HEX;
    for (int i = 0; i < key_len; i++) key[i] = hexd[mode & 0x40 ? fz_u8(&b) % 16 : i % 16];
    key[key_len] = 0;

    uint8_t obj[4096], rawmeta[1024];
    size_t obj_n = fz_u8(&b) * 16u, meta_n = 0;
    if (obj_n > sizeof obj) obj_n = sizeof obj;
    for (size_t i = 0; i < obj_n; i++) obj[i] = fz_u8(&b);
    char meta[1200];
    if (mode & 1) {
        meta_n = make_meta(&b, meta, sizeof meta, key, obj, obj_n);
    } else { /* the rest of the input, raw */
        while (!fz_done(&b) && meta_n < sizeof rawmeta) rawmeta[meta_n++] = fz_u8(&b);
        memcpy(meta, rawmeta, meta_n);
    }

    char so_path[PATH_MAX], meta_path[PATH_MAX];
    if (!objcache_path(so_path, fz_dir, key, ".so") ||
        !objcache_path(meta_path, fz_dir, key, ".meta"))
        abort();
    clear(so_path), clear(meta_path);
    write_bytes(meta_path, meta, meta_n);
    switch (mode >> 1 & 7) {
    case 0: break;                       /* no object */
    case 1: mkdir(so_path, 0700); break; /* a folder */
    case 2: {                            /* a link to a real object */
        char target[PATH_MAX];
        snprintf(target, sizeof target, "%s/target", fz_dir);
        write_bytes(target, obj, obj_n);
        if (symlink(target, so_path)) abort();
        break;
    }
    case 3: mkfifo(so_path, 0600); break; /* a FIFO: must neither hang nor be accepted */
    default: write_bytes(so_path, obj, obj_n); break;
    }

    size_t bytes = 0;
    int fd = -1;
    objcache_state st = objcache_verify(fz_dir, key, ".so", &bytes, &fd);
    if (fd >= 0) close(fd);
    if (st == OBJCACHE_OK) {
        char want[1200];
        uint8_t digest[SHA256_BYTES];
        char hex[SHA256_HEX_BYTES];
        sha256(obj, obj_n, digest);
        sha256_hex(digest, hex);
        int n = snprintf(want, sizeof want, "kiln-cc-entry 1\nkey %s\nsize %zu\nsha256 %s\n", key,
                         obj_n, hex);
        /* only a private regular file is ever accepted: not a folder, link or FIFO */
        if ((mode >> 1 & 7) < 4 || bytes != obj_n || (size_t)n != meta_n ||
            memcmp(want, meta, meta_n)) {
            fprintf(stderr, "objcache_verify accepted an entry no writer makes\n");
            abort();
        }
    } else if (st == OBJCACHE_CORRUPT &&
               (exists(meta_path) || (exists(so_path) && (mode >> 1 & 7) != 1))) {
        fprintf(stderr, "objcache_verify called an entry corrupt but left it in place\n");
        abort();
    }
    clear(so_path), clear(meta_path);
    return 0;
}
