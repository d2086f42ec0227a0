/* cc.h — C source text in, a loaded shared object out: the CPU backend's JIT compiler.
 *
 * The system C compiler (KILN_CC, else cc, gcc or clang from PATH) builds the source into
 * a shared object that is dlopen'd. Objects are cached on disk (KILN_CACHE_DIR, capped at
 * KILN_CACHE_MAX_BYTES; 0 turns the disk cache off) under the SHA-256 of the source, the
 * compiler's identity, its flags and kiln's cache format version, so a second process
 * running the same program never invokes the compiler. All calls are thread-safe.
 *
 * A cc_compiler is one context's compiler: its identity (found and probed at the first
 * load, not when it is made, so a context that never compiles never runs `cc --version`)
 * and its statistics. The CPU backend's state owns it (cpu_backend.c). */
#ifndef KILN_CPU_CC_H
#define KILN_CPU_CC_H

#include "backend/backend_impl.h"

typedef struct cc_compiler cc_compiler;
typedef struct cc_module cc_module;

/* Makes the compiler state of ctx (one host allocation; runs nothing), checking KILN_CC,
 * KILN_CC_FLAGS and the cache folder first. opt (the compiler, its flags, its threads, the
 * disk cache) is the CPU backend's and must outlive the compiler; it is read at every
 * load. */
kiln_status cc_compiler_create(kiln_context *ctx, const kn_cpu_options *opt, cc_compiler **out);
/* Every module loaded through cc must be unloaded first. NULL is a no-op. */
void cc_compiler_destroy(cc_compiler *cc);
/* Whether cc compiles as this library was compiled: gcc of the version that built it, with
 * no KILN_CC_FLAGS. Then the library's own loops (the op library of the first compile tier)
 * and the kernels cc builds compute each op's expression the same way. Finds and asks the
 * compiler the first time (false, no message, when there is none). */
bool cc_compiler_matches_library(cc_compiler *cc);

/* Compiles `source` (len bytes) with the system C compiler into a shared object and
 * dlopens it, or loads it from the disk cache; *from_cache (may be NULL) tells which.
 * On failure *out is NULL; a compiler error is KILN_STATUS_BACKEND with the command, its exit
 * status, the first lines of its output and where the source was kept; a KILN_CC that
 * names no program is KILN_STATUS_CONFIG. The caller owns *out (cc_module_unload). */
kiln_status cc_module_load(cc_compiler *cc, const char *source, size_t len, cc_module **out,
                           bool *from_cache);
/* ---- tiered compilation (src/runtime/tier.c) ----
 * cc_module_load with flags: CC_LOAD_CACHED_ONLY only looks in the disk cache: on a miss
 * it returns OK with *out NULL, compiling nothing and counting no miss;
 * CC_LOAD_BACKGROUND runs the compilers at a lower priority. */
enum { CC_LOAD_CACHED_ONLY = 2u, CC_LOAD_BACKGROUND = 4u };
kiln_status cc_module_load_tier(cc_compiler *cc, const char *source, size_t len, unsigned flags,
                                cc_module **out, bool *from_cache);

void *cc_module_sym(const cc_module *m, const char *name); /* NULL if absent */
size_t cc_module_code_bytes(const cc_module *m);           /* size of the .so */
const char *cc_module_key(const cc_module *m);             /* the cache key, 64 hex digits */
void cc_module_unload(cc_module *m);                       /* NULL is a no-op */
/* n bytes, zeroed, owned by m and freed by cc_module_unload (the CPU backend's kernel
 * handles); NULL on OOM. */
void *cc_module_alloc(cc_module *m, size_t n);

typedef struct cc_stats {
    uint64_t compiles;        /* compiler runs, failed ones included */
    uint64_t disk_hits;       /* loads served from the disk cache */
    uint64_t disk_misses;     /* lookups that found no usable entry (corrupt ones included) */
    uint64_t corrupt_rebuilt; /* entries that failed their checks, removed and rebuilt */
    uint64_t evictions;       /* entries removed to keep the cache under its cap */
    uint64_t unwritable;      /* loads whose object the cache could not keep (not writable) */
    double compile_seconds;   /* wall time spent in the compiler */
} cc_stats;
void cc_get_stats(cc_compiler *cc, cc_stats *out);

#endif
