/* objcache.h — the on-disk, content-addressed cache of compiled objects that every
 * backend keeps its programs in (the CPU: shared objects, cpu/cc.c; CUDA: cubins,
 * cuda/cuda_program.c). It knows files, keys and bytes; what an object is and how it is
 * loaded stays with the backend.
 *
 * An entry is <dir>/<key><suffix> (the object: ".so", ".cubin") and its sidecar
 * <dir>/<key>.meta ("kiln-cc-entry 1", the key, the object's size and SHA-256). Writers
 * build both in a private temp folder inside <dir> and rename the object first, then the
 * sidecar; removers unlink the sidecar first. So a sidecar, when present, describes a
 * complete object, and a reader that trusts only an object matching its sidecar never
 * loads a half-written or damaged one. Keys are the backends' own (64 hex digits), so the
 * backends of one context share one folder and one size cap. */
#ifndef KILN_BACKEND_OBJCACHE_H
#define KILN_BACKEND_OBJCACHE_H

#include "base/base.h"

#include <limits.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define OBJCACHE_KEY_HEX 64
/* The longest suffix an entry's file may have (".failed.c" included), with its NUL. */
#define OBJCACHE_SUFFIX_MAX 32

/* Inside a writer's temp folder the object has a fixed short name, "kernels" + suffix:
 * compiler messages stay short, and the object's bytes do not depend on the folder's
 * name. */
#define OBJCACHE_TMP_STEM "kernels"

/* <dir>/<key><suffix> (or <dir>/<suffix> when key is NULL) into out; false if too long. */
bool objcache_path(char out[PATH_MAX], const char *dir, const char *key, const char *suffix);

/* Creates dir with its parents (mode 0700) if missing, and refuses one that another user
 * owns or that its group or anyone may write to: kiln loads code from it.
 * KILN_STATUS_CONFIG names KILN_CACHE_DIR. */
kiln_status objcache_dir_ready(kiln_context *ctx, const char *dir);
/* Makes a relative dir (a buffer of cap bytes) absolute in place, against the current
 * folder: a compiler runs in other folders, and the process may change its own later.
 * An existing dir is resolved by realpath. KILN_STATUS_CONFIG when there is no current
 * folder or the result does not fit. */
kiln_status objcache_dir_absolute(kiln_context *ctx, char *dir, size_t cap);
/* The same refusals for a directory that already exists, creating nothing (a missing one
 * is fine): kiln_context_create reports a bad KILN_CACHE_DIR before the first compile. */
kiln_status objcache_dir_check(kiln_context *ctx, const char *dir);

typedef enum objcache_state { OBJCACHE_MISS, OBJCACHE_OK, OBJCACHE_CORRUPT } objcache_state;

/* Checks <dir>/<key><suffix> against its sidecar without loading it: both private regular
 * files (see objcache.c), and a private copy of the object (objcache_private_copy) of the
 * size and SHA-256 the sidecar records. OK: *bytes is its size, the object's mtime is now
 * (the LRU clock) and *fd is the checked copy, at offset 0 (the caller loads or reads that
 * copy, never the entry's file, and closes it). CORRUPT: the entry has been removed. MISS:
 * no entry, or no copy could be made (out of memory or file descriptors). */
objcache_state objcache_verify(const char *dir, const char *key, const char *suffix, size_t *bytes,
                               int *fd);

/* A private copy of everything `from` holds, to map instead of a file that others may
 * truncate or rewrite (a mapping of a truncated file raises SIGBUS): a sealed memfd
 * (name is what /proc shows), or where none can be made an unlinked file in dir. The new
 * fd (close-on-exec, at offset 0), or -1 with errno set. */
int objcache_private_copy(int from, const char *dir, const char *name);
/* objcache_private_copy's fallback alone: the unlinked file in dir (for its test). */
int objcache_file_copy(int from, const char *dir);

/* <tmp>/OBJCACHE_TMP_STEM<suffix>: where a writer puts the object it will publish. */
bool objcache_tmp_object(char out[PATH_MAX], const char *tmp, const char *suffix);
/* Hashes objcache_tmp_object(tmp, suffix) (tmp: a temp folder inside dir), writes its
 * sidecar and renames both into dir. *bytes gets the object's size when it could be read.
 * 0, or the errno of the step that failed (ENOSPC, EDQUOT, EROFS, ...): the entry was not
 * published, and the caller's module is still good (publishing is best effort). */
int objcache_publish(const char *tmp, const char *dir, const char *key, const char *suffix,
                     size_t *bytes);
/* objcache_publish of everything fd holds (read from offset 0: a loaded module's private
 * copy), through a temp folder of its own in dir, removed afterwards. 0 or an errno. */
int objcache_publish_fd(const char *dir, const char *key, const char *suffix, int fd,
                        size_t *bytes);

/* Removes <dir>/<key>.meta, then <dir>/<key><suffix>. */
void objcache_remove_entry(const char *dir, const char *key, const char *suffix);

/* Removes least recently used entries (by mtime; every file named <key>.*, the sidecar
 * first) until dir holds at most cap bytes, never the entry `keep`; also clears temp
 * folders left by crashed writers. *removed gets the number of entries removed. On host
 * OOM it removes nothing and says so (KILN_STATUS_HOST_OOM with the message set). */
kiln_status objcache_evict(kiln_context *ctx, const char *dir, uint64_t cap, const char *keep,
                           uint64_t *removed);

/* Removes a temp folder and the plain files in it. */
void objcache_remove_tmp(const char *tmp);

#endif
