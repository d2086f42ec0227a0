/* cc_cache.h — the on-disk cache of compiled objects, internal to cc.c.
 *
 * An entry is <dir>/<key>.so and its sidecar <dir>/<key>.meta ("kiln-cc-entry 1", the
 * key, the .so's size and SHA-256). Writers build both in a private temp folder inside
 * <dir> and rename the .so first, then the sidecar; removers unlink the sidecar first.
 * So a sidecar, when present, describes a complete .so, and a reader that trusts only a
 * .so matching its sidecar never loads a half-written or damaged object. */
#ifndef KILN_CPU_CC_CACHE_H
#define KILN_CPU_CC_CACHE_H

#include "base/base.h"

#include <limits.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define CC_KEY_HEX 64

/* Inside a compile's temp folder (cc.c) and a writer's, the source and object have fixed
 * short names: compiler messages stay short, and the object's bytes do not depend on the
 * folder's name. */
#define CC_TMP_SOURCE "kernels.c"
#define CC_TMP_OBJECT "kernels.so"

/* <dir>/<key><suffix> (or <dir>/<suffix> when key is NULL) into out; false if too long. */
bool cc_path(char out[PATH_MAX], const char *dir, const char *key, const char *suffix);

/* Creates dir with its parents (mode 0700) if missing, and refuses one that another user
 * owns or that its group or anyone may write to: kiln loads code from it.
 * KILN_STATUS_CONFIG names KILN_CACHE_DIR. */
kiln_status cc_cache_dir_ready(kiln_context *ctx, const char *dir);
/* Makes a relative dir (a buffer of cap bytes) absolute in place, against the current
 * folder: the compiler runs in other folders, and the process may change its own later.
 * An existing dir is resolved by realpath. KILN_STATUS_CONFIG when there is no current
 * folder or the result does not fit. */
kiln_status cc_cache_dir_absolute(kiln_context *ctx, char *dir, size_t cap);
/* The same refusals for a directory that already exists, creating nothing (a missing one
 * is fine): kiln_context_create reports a bad KILN_CACHE_DIR before the first compile. */
kiln_status cc_cache_dir_check(kiln_context *ctx, const char *dir);

typedef enum cc_entry_state { CC_ENTRY_MISS, CC_ENTRY_OK, CC_ENTRY_CORRUPT } cc_entry_state;

/* Checks <dir>/<key>.so against its sidecar without loading it: both private regular
 * files (see cc_cache.c), and a private copy of the object (cc_cache_private_copy) of the
 * size and SHA-256 the sidecar records. OK: *bytes is its size, the object's mtime is now
 * (the LRU clock) and *fd is the checked copy, at offset 0 (the caller loads or reads that
 * copy, never the entry's file, and closes it). CORRUPT: the entry has been removed. MISS:
 * no entry, or no copy could be made (out of memory or file descriptors). */
cc_entry_state cc_cache_verify(const char *dir, const char *key, size_t *bytes, int *fd);

/* A private copy of everything `from` holds, to map instead of a file that others may
 * truncate or rewrite (a mapping of a truncated file raises SIGBUS): a sealed memfd
 * (name is what /proc shows), or where none can be made an unlinked file in dir. The new
 * fd (close-on-exec, at offset 0), or -1 with errno set. */
int cc_cache_private_copy(int from, const char *dir, const char *name);
/* cc_cache_private_copy's fallback alone: the unlinked file in dir (for its test). */
int cc_cache_file_copy(int from, const char *dir);

/* Hashes <tmp>/CC_TMP_OBJECT (tmp: a temp folder inside dir), writes its sidecar and
 * renames both into dir. *bytes gets the .so's size when it could be read. 0, or the errno
 * of the step that failed (ENOSPC, EDQUOT, EROFS, ...): the entry was not published, and
 * the caller's module is still good (publishing is best effort). */
int cc_cache_publish(const char *tmp, const char *dir, const char *key, size_t *bytes);
/* cc_cache_publish of everything fd holds (read from offset 0: a loaded module's private
 * copy), through a temp folder of its own in dir, removed afterwards. 0 or an errno. */
int cc_cache_publish_fd(const char *dir, const char *key, int fd, size_t *bytes);

/* Removes <dir>/<key>.{meta,so} (sidecar first). */
void cc_cache_remove_entry(const char *dir, const char *key);

/* Removes least recently used entries (by mtime) until dir holds at most cap bytes,
 * never the entry `keep`; also clears temp folders left by crashed writers. *removed gets
 * the number of entries removed. On host OOM it removes nothing and says so
 * (KILN_STATUS_HOST_OOM with the message set). */
kiln_status cc_cache_evict(kiln_context *ctx, const char *dir, uint64_t cap, const char *keep,
                           uint64_t *removed);

/* Removes a temp folder and the plain files in it. */
void cc_cache_remove_tmp(const char *tmp);

#endif
