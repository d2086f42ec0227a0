/* objcache.c — the on-disk cache of compiled objects: checking, publishing, evicting.
 *
 * Layout and write protocol are in objcache.h. What this file keeps true:
 *   - nothing is trusted before its bytes match the sidecar's size and SHA-256; a
 *     mismatch, a truncated object or a sidecar that is not exactly what a writer would
 *     have written removes the entry, so the next writer starts clean;
 *   - only private files are read: opened without following links and without blocking
 *     (a FIFO in an entry's place must not hang a compile), then fstat'ed to be a regular
 *     file that the user owns and nobody else may write; the directory itself may not be
 *     writable by its group or by anyone; anything else is treated as a corrupt entry;
 *   - no file of the cache is ever mapped: an entry's object is read (never mmap'ed) into a
 *     private copy, a sealed memfd or else an unlinked file, and that copy is hashed and
 *     then loaded (the CPU's cc.c dlopens it through /proc/self/fd; CUDA reads it). The bytes
 * checked are the bytes loaded, and another process truncating or rewriting the entry meanwhile
 * cannot reach a running module (a mapping of a file cut short raises SIGBUS);
 *   - no file of the cache is written in place: every file is written under a private
 *     temp folder and renamed into place, so other processes see an old entry, a new one,
 *     or none — never half of one (nothing here opens an entry's file for writing);
 *   - LRU by mtime: a hit touches its object, eviction removes the oldest entries first and
 *     never the one just written; two processes evicting at once only race on unlink,
 *     and a missing file is not an error. */
#include "objcache.h"

#include "base/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define META_MAX          512
#define STALE_TMP_SECONDS (24 * 3600) /* a .tmp- folder or file this old: its writer died */

/* memfd_create's flag for an executable memfd: without it a kernel whose
 * vm.memfd_noexec is 1 seals the copy against exec and dlopen fails (Linux 6.3; older
 * kernels refuse the unknown flag with EINVAL and are asked again without it). */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
/* A private copy cannot change size or bytes, nor its seals, once made. */
#define COPY_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

bool objcache_path(char out[PATH_MAX], const char *dir, const char *key, const char *suffix) {
    int n = key ? snprintf(out, PATH_MAX, "%s/%s%s", dir, key, suffix)
                : snprintf(out, PATH_MAX, "%s/%s", dir, suffix);
    return n > 0 && n < PATH_MAX;
}

/* ------------------------------------------------------------- the folder ---- */

static int mkdir_parents(const char *dir) {
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n >= sizeof buf) return ENAMETOOLONG;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0700) && errno != EEXIST) return errno;
        buf[i] = c;
    }
    return 0;
}

/* The checks of a directory that exists: sb is its stat. */
static kiln_status dir_usable(kiln_context *ctx, const char *dir, const struct stat *st) {
    struct stat sb = *st;
    if (!S_ISDIR(sb.st_mode))
        return ctx_error(ctx, KILN_STATUS_CONFIG,
                         "kernel cache directory \"%s\" (KILN_CACHE_DIR) is not a directory", dir);
    if (sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH)))
        return ctx_error(ctx, KILN_STATUS_CONFIG,
                         "kernel cache directory \"%s\" (KILN_CACHE_DIR) is owned by another user "
                         "or writable by its group or by anyone (mode %04o); kiln loads code "
                         "from it, so it refuses: use a private directory (chmod 700) or "
                         "KILN_CACHE_MAX_BYTES=0",
                         dir, (unsigned)(sb.st_mode & 07777));
    return KILN_STATUS_OK;
}

kiln_status objcache_dir_absolute(kiln_context *ctx, char *dir, size_t cap) {
    char cwd[PATH_MAX], joined[PATH_MAX], real[PATH_MAX];
    if (dir[0] == '/') return KILN_STATUS_OK;
    if (!getcwd(cwd, sizeof cwd))
        return ctx_error(ctx, KILN_STATUS_CONFIG,
                         "kernel cache directory \"%s\" (KILN_CACHE_DIR) is relative, and the "
                         "current folder it is relative to cannot be found: %s",
                         dir, strerror(errno));
    int n = snprintf(joined, sizeof joined, "%s/%s", cwd, dir);
    /* an existing one without its "." and ".." (and links); a missing one is made as
     * joined, at the first compile */
    const char *abs = n > 0 && n < PATH_MAX && realpath(joined, real) ? real : joined;
    if (n <= 0 || n >= PATH_MAX || strlen(abs) >= cap)
        return ctx_error(ctx, KILN_STATUS_CONFIG,
                         "kernel cache directory \"%s\" (KILN_CACHE_DIR) is too long once made "
                         "absolute (against %s)",
                         dir, cwd);
    memmove(dir, abs, strlen(abs) + 1);
    return KILN_STATUS_OK;
}

kiln_status objcache_dir_check(kiln_context *ctx, const char *dir) {
    struct stat sb;
    if (stat(dir, &sb)) {
        if (errno == ENOTDIR)
            return ctx_error(ctx, KILN_STATUS_CONFIG,
                             "kernel cache directory \"%s\" (KILN_CACHE_DIR): a part of the path "
                             "is a file, not a directory",
                             dir);
        return KILN_STATUS_OK; /* missing (made at the first compile) or not ours to read */
    }
    return dir_usable(ctx, dir, &sb);
}

kiln_status objcache_dir_ready(kiln_context *ctx, const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) && errno == ENOENT) {
        int err = mkdir_parents(dir);
        if (err)
            return ctx_error(ctx, KILN_STATUS_IO,
                             "cannot create the kernel cache directory \"%s\" (KILN_CACHE_DIR): %s",
                             dir, strerror(err));
    }
    if (stat(dir, &sb))
        return ctx_error(ctx, KILN_STATUS_IO, "kernel cache directory \"%s\" (KILN_CACHE_DIR): %s",
                         dir, strerror(errno));
    return dir_usable(ctx, dir, &sb);
}

/* -------------------------------------------------------- private copies ---- */

/* Writes all len bytes or returns false with errno set. */
static bool write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!w) errno = EIO;
            return false;
        }
        p += w, len -= (size_t)w;
    }
    return true;
}

/* Appends to `to` everything `from` holds from offset 0 (read with pread: from's offset
 * is left alone); false with errno set. A file cut short meanwhile just ends sooner: it
 * is read, never mapped, so nothing another process does to it can raise a signal here. */
static bool copy_fd(int from, int to) {
    char buf[16384];
    for (off_t off = 0;;) {
        ssize_t r = pread(from, buf, sizeof buf, off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) return true;
        if (!write_all(to, buf, (size_t)r)) return false;
        off += r;
    }
}

/* fd, rewound, if ok; else fd closed and -1, errno kept. */
static int finish_copy(int fd, bool ok) {
    if (ok && lseek(fd, 0, SEEK_SET) == 0) return fd;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* The copy in memory, sealed: nobody, this process included, can change its bytes or
 * size while it is mapped. */
static int memfd_copy(int from, const char *name) {
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (fd < 0 && errno == EINVAL) fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    return finish_copy(fd, copy_fd(from, fd) && !fcntl(fd, F_ADD_SEALS, COPY_SEALS));
}

int objcache_file_copy(int from, const char *dir) {
    char path[PATH_MAX];
    if (!objcache_path(path, dir, NULL, ".tmp-copy-XXXXXX")) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) return -1;
    unlink(path); /* nameless from here on: only this fd reaches it */
    return finish_copy(fd, copy_fd(from, fd));
}

int objcache_private_copy(int from, const char *dir, const char *name) {
    int fd = memfd_copy(from, name);
    return fd >= 0 ? fd : objcache_file_copy(from, dir);
}

/* ---------------------------------------------------------- one entry ---- */

/* SHA-256 of what fd reads from its current offset; *size gets the bytes read. */
static bool hash_fd(int fd, uint8_t digest[SHA256_BYTES], uint64_t *size) {
    uint8_t buf[16384];
    sha256_ctx c;
    sha256_init(&c);
    *size = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) break;
        sha256_update(&c, buf, (size_t)r);
        *size += (uint64_t)r;
    }
    sha256_final(&c, digest);
    return true;
}

static int format_meta(char out[META_MAX], const char *key, uint64_t size, const char *hex) {
    return snprintf(out, META_MAX, "kiln-cc-entry 1\nkey %s\nsize %llu\nsha256 %s\n", key,
                    (unsigned long long)size, hex);
}

/* Accepts exactly what format_meta writes for this key, nothing more or less. */
static bool parse_meta(const char *text, size_t len, const char *key, uint64_t *size,
                       char hex[SHA256_HEX_BYTES]) {
    char k[OBJCACHE_KEY_HEX + 1], h[SHA256_HEX_BYTES], canon[META_MAX];
    unsigned long long sz;
    if (memchr(text, 0, len)) return false;
    if (sscanf(text, "kiln-cc-entry 1 key %64s size %llu sha256 %64s", k, &sz, h) != 3)
        return false;
    int n = format_meta(canon, key, sz, h);
    if (n <= 0 || (size_t)n != len || memcmp(canon, text, len)) return false;
    *size = sz;
    memcpy(hex, h, SHA256_HEX_BYTES);
    return true;
}

/* Opens path for reading without following a link or blocking on a FIFO. Returns the fd
 * of a regular file that the user owns and that neither group nor others may write, -1
 * when there is no such path (errno ENOENT), or -2 for anything else there. */
static int open_private(const char *path) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? -1 : -2;
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
        (sb.st_mode & (S_IWGRP | S_IWOTH))) {
        close(fd);
        return -2;
    }
    return fd;
}

/* Up to cap bytes of a private file; -1: absent, -2: not a private regular file. */
static ssize_t read_small(const char *path, char *buf, size_t cap) {
    int fd = open_private(path);
    if (fd < 0) return fd;
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    return (ssize_t)got;
}

void objcache_remove_entry(const char *dir, const char *key, const char *suffix) {
    char p[PATH_MAX];
    if (objcache_path(p, dir, key, ".meta")) unlink(p);
    if (objcache_path(p, dir, key, suffix)) unlink(p);
}

static bool has_size(int fd, uint64_t size) {
    struct stat sb;
    return !fstat(fd, &sb) && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size == size;
}

/* The copy behind fd (at offset 0) matches (size, hex)? */
static bool object_matches(int fd, uint64_t size, const char *hex) {
    uint8_t digest[SHA256_BYTES];
    char got[SHA256_HEX_BYTES];
    uint64_t n;
    if (!has_size(fd, size) || !hash_fd(fd, digest, &n) || n != size) return false;
    sha256_hex(digest, got);
    return !memcmp(got, hex, OBJCACHE_KEY_HEX);
}

/* The sidecar of key, parsed: MISS when there is none, CORRUPT when it is not what a
 * writer writes. */
static objcache_state read_meta(const char *path, const char *key, uint64_t *size,
                                char hex[SHA256_HEX_BYTES]) {
    char text[META_MAX];
    ssize_t len = read_small(path, text, sizeof text - 1);
    if (len == -1) return OBJCACHE_MISS; /* no sidecar: absent, or not yet published */
    if (len < 0) return OBJCACHE_CORRUPT;
    text[len] = 0;
    return parse_meta(text, (size_t)len, key, size, hex) ? OBJCACHE_OK : OBJCACHE_CORRUPT;
}

/* A private copy of the object at so_path, checked against (size, hex): OK with *copy
 * set, MISS (no object, or no copy could be made: not the entry's fault) or CORRUPT. The
 * object's mtime is set to now when it is good (the LRU clock). */
static objcache_state copy_object(const char *dir, const char *so_path, uint64_t size,
                                  const char *hex, int *copy) {
    int fd = open_private(so_path);
    if (fd == -1) return OBJCACHE_MISS; /* evicted meanwhile */
    if (fd < 0) return OBJCACHE_CORRUPT;
    objcache_state e = has_size(fd, size) ? OBJCACHE_OK : OBJCACHE_CORRUPT;
    *copy = e == OBJCACHE_OK ? objcache_private_copy(fd, dir, "kiln-cache-object") : -1;
    if (e == OBJCACHE_OK && *copy < 0) e = OBJCACHE_MISS;
    if (*copy >= 0 && !object_matches(*copy, size, hex)) {
        close(*copy);
        *copy = -1;
        e = OBJCACHE_CORRUPT;
    }
    if (e == OBJCACHE_OK) futimens(fd, NULL);
    close(fd);
    return e;
}

objcache_state objcache_verify(const char *dir, const char *key, const char *suffix, size_t *bytes,
                               int *fd_out) {
    char meta_path[PATH_MAX], so_path[PATH_MAX], hex[SHA256_HEX_BYTES];
    *fd_out = -1;
    if (!objcache_path(meta_path, dir, key, ".meta") || !objcache_path(so_path, dir, key, suffix))
        return OBJCACHE_MISS;
    uint64_t size;
    objcache_state e = read_meta(meta_path, key, &size, hex);
    if (e == OBJCACHE_OK) e = copy_object(dir, so_path, size, hex, fd_out);
    if (e == OBJCACHE_CORRUPT) objcache_remove_entry(dir, key, suffix);
    if (e == OBJCACHE_OK) *bytes = (size_t)size;
    return e;
}

/* A new file of the temp folder (O_EXCL: never one already there) holding len bytes;
 * false with errno set. */
static bool write_file(const char *path, const char *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    bool ok = write_all(fd, data, len);
    int err = errno;
    if (close(fd) && ok) return false;
    errno = err;
    return ok;
}

bool objcache_tmp_object(char out[PATH_MAX], const char *tmp, const char *suffix) {
    int n = snprintf(out, PATH_MAX, "%s/" OBJCACHE_TMP_STEM "%s", tmp, suffix);
    return n > 0 && n < PATH_MAX;
}

int objcache_publish(const char *tmp, const char *dir, const char *key, const char *suffix,
                     size_t *bytes) {
    char tmp_so[PATH_MAX], tmp_meta[PATH_MAX], so[PATH_MAX], meta[PATH_MAX], text[META_MAX];
    *bytes = 0;
    if (!objcache_tmp_object(tmp_so, tmp, suffix) ||
        !objcache_path(tmp_meta, tmp, NULL, OBJCACHE_TMP_STEM ".meta") ||
        !objcache_path(so, dir, key, suffix) || !objcache_path(meta, dir, key, ".meta"))
        return ENAMETOOLONG;
    uint8_t digest[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES];
    uint64_t size = 0;
    int fd = open(tmp_so, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    /* private whatever the umask gave it: the loader refuses a group-writable object */
    int err = !fchmod(fd, 0700) && hash_fd(fd, digest, &size) ? 0 : errno;
    close(fd);
    *bytes = (size_t)size;
    if (err) return err;
    sha256_hex(digest, hex);
    int n = format_meta(text, key, size, hex);
    if (n <= 0 || !write_file(tmp_meta, text, (size_t)n)) return n <= 0 ? EINVAL : errno;
    /* The object goes first: a sidecar must never describe an object not yet in place. */
    return rename(tmp_so, so) || rename(tmp_meta, meta) ? errno : 0;
}

int objcache_publish_fd(const char *dir, const char *key, const char *suffix, int fd,
                        size_t *bytes) {
    char tmp[PATH_MAX], obj[PATH_MAX];
    *bytes = 0;
    int w = snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-XXXXXX", dir, (long)getpid());
    if (w <= 0 || w >= PATH_MAX) return ENAMETOOLONG;
    if (!mkdtemp(tmp)) return errno;
    int out = objcache_tmp_object(obj, tmp, suffix)
                  ? open(obj, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700)
                  : (errno = ENAMETOOLONG, -1);
    int err = out >= 0 && copy_fd(fd, out) ? 0 : errno;
    if (out >= 0 && close(out) && !err) err = errno;
    if (!err) err = objcache_publish(tmp, dir, key, suffix, bytes);
    objcache_remove_tmp(tmp);
    return err;
}

void objcache_remove_tmp(const char *tmp) {
    DIR *d = opendir(tmp);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(tmp);
}

/* ------------------------------------------------------------- eviction ---- */

/* One file of an entry. Items are grouped by key without a second allocation: every file
 * of an entry carries its entry's total size and newest mtime, so sorting by (entry age,
 * key) keeps an entry's files together, oldest entry first. */
typedef struct cache_item {
    char key[OBJCACHE_KEY_HEX + 1];
    char suffix[OBJCACHE_SUFFIX_MAX]; /* ".so", ".cubin", ".meta", ".failed.c" */
    uint64_t bytes;                   /* this file's */
    int64_t mtime_ns;                 /* this file's */
    uint64_t entry_bytes;             /* all files of the entry */
    int64_t entry_mtime_ns;           /* the newest of the entry's files */
} cache_item;

typedef struct item_list {
    kiln_context *ctx;
    cache_item *v;
    size_t n, cap;
} item_list;

static bool push_item(item_list *l, const cache_item *it) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64, bytes;
        if (!kn_mul_size(cap, sizeof *l->v, &bytes)) return false;
        cache_item *v = host_realloc(l->ctx, l->v, l->cap * sizeof *l->v, bytes);
        if (!v) return false;
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = *it;
    return true;
}

/* "<64 hex digits>.<anything short>": a file of a cache entry (.so, .cubin, .meta,
 * .failed.c). */
static bool entry_file_name(const char *name) {
    for (int i = 0; i < OBJCACHE_KEY_HEX; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return name[OBJCACHE_KEY_HEX] == '.' && strlen(name + OBJCACHE_KEY_HEX) < OBJCACHE_SUFFIX_MAX;
}

/* A writer's temp folder, or a private copy's file a crash left named, long abandoned. */
static void drop_stale_tmp(const char *dir, const char *name, const struct stat *sb) {
    char p[PATH_MAX];
    if (time(NULL) - sb->st_mtime <= STALE_TMP_SECONDS || !objcache_path(p, dir, NULL, name))
        return;
    if (S_ISDIR(sb->st_mode))
        objcache_remove_tmp(p);
    else if (S_ISREG(sb->st_mode))
        unlink(p);
}

/* One item per file of an entry; false on host OOM. */
static bool scan_dir(DIR *d, const char *dir, item_list *l) {
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW)) continue;
        if (!strncmp(e->d_name, ".tmp-", 5)) drop_stale_tmp(dir, e->d_name, &sb);
        if (!S_ISREG(sb.st_mode) || !entry_file_name(e->d_name)) continue;
        cache_item it = {.bytes = (uint64_t)sb.st_size,
                         .mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec};
        memcpy(it.key, e->d_name, OBJCACHE_KEY_HEX);
        it.key[OBJCACHE_KEY_HEX] = 0;
        snprintf(it.suffix, sizeof it.suffix, "%s", e->d_name + OBJCACHE_KEY_HEX);
        if (!push_item(l, &it)) return false;
    }
    return true;
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const cache_item *)a)->key, ((const cache_item *)b)->key);
}

/* Oldest entry first; within an entry its sidecar first (removers unlink it first). */
static int by_age(const void *a, const void *b) {
    const cache_item *x = a, *y = b;
    if (x->entry_mtime_ns != y->entry_mtime_ns)
        return (x->entry_mtime_ns > y->entry_mtime_ns) - (x->entry_mtime_ns < y->entry_mtime_ns);
    int k = strcmp(x->key, y->key);
    if (k) return k;
    return strcmp(y->suffix, ".meta") == 0 ? 1 : strcmp(x->suffix, ".meta") == 0 ? -1 : 0;
}

/* Gives every file its entry's size and newest mtime; returns the total bytes. */
static uint64_t group_entries(item_list *l) {
    qsort(l->v, l->n, sizeof *l->v, by_key);
    uint64_t total = 0;
    for (size_t i = 0, j; i < l->n; i = j) {
        uint64_t bytes = 0;
        int64_t mtime = l->v[i].mtime_ns;
        for (j = i; j < l->n && !strcmp(l->v[j].key, l->v[i].key); j++) {
            bytes += l->v[j].bytes;
            if (l->v[j].mtime_ns > mtime) mtime = l->v[j].mtime_ns;
        }
        for (size_t k = i; k < j; k++) l->v[k].entry_bytes = bytes, l->v[k].entry_mtime_ns = mtime;
        total += bytes;
    }
    return total;
}

/* Unlinks the files of the entry starting at v[i] (sidecar first); returns the index
 * after it. */
static size_t remove_files(const char *dir, const item_list *l, size_t i) {
    size_t j = i;
    for (; j < l->n && !strcmp(l->v[j].key, l->v[i].key); j++) {
        char p[PATH_MAX];
        if (objcache_path(p, dir, l->v[j].key, l->v[j].suffix)) unlink(p);
    }
    return j;
}

kiln_status objcache_evict(kiln_context *ctx, const char *dir, uint64_t cap, const char *keep,
                           uint64_t *removed) {
    *removed = 0;
    DIR *d = opendir(dir);
    if (!d) return KILN_STATUS_OK; /* nothing to keep small */
    item_list l = {.ctx = ctx};
    bool scanned = scan_dir(d, dir, &l);
    closedir(d);
    uint64_t total = scanned ? group_entries(&l) : 0;
    if (scanned && total > cap) {
        qsort(l.v, l.n, sizeof *l.v, by_age);
        for (size_t i = 0, next; i < l.n && total > cap; i = next) {
            if (keep && !strcmp(l.v[i].key, keep)) {
                for (next = i; next < l.n && !strcmp(l.v[next].key, keep);) next++;
                continue;
            }
            total -= l.v[i].entry_bytes;
            next = remove_files(dir, &l, i);
            (*removed)++;
        }
    }
    host_free(ctx, l.v, l.cap * sizeof *l.v);
    return scanned
               ? KILN_STATUS_OK
               : ctx_oom(ctx, "kernel cache eviction: the list of entries", l.cap * sizeof *l.v);
}
