/* cuda_program.c — CUDA C source -> a loaded module: NVRTC compiles it for the device's
 * compute capability (sm_XY) into a cubin, kept in the same disk cache as the CPU's shared
 * objects (backend/objcache.h: atomic publish, SHA-256-verified reads, one size cap over
 * both kinds of entry) as <key>.cubin. The key hashes a format tag, NVRTC's version, the
 * architecture, the compile options and the source, so a new toolkit or another GPU
 * never loads a stale cubin.
 *
 * cu_nvrtc_compile is also what tests/test_cuda_nvrtc.c calls on machines without a GPU,
 * so a dialect mistake fails there. */
#include "cuda_backend.h"
#include "cuda_program.h"

#include "backend/objcache.h"
#include "base/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CU_FORMAT "kiln-cubin 1"
#define CU_SUFFIX ".cubin" /* an entry's object in the cache: <key>.cubin */

/* No FMA contraction: the reference interpreter and the CPU round every operation, and the
 * conformance tests hold the GPU to them. Costs nothing for memory-bound kernels. */
static const char *const nvrtc_opts[] = {"--fmad=false", "-default-device", "--std=c++17"};
#define N_OPTS ((int)(sizeof nvrtc_opts / sizeof *nvrtc_opts))

/* The first `max` bytes of log, whole lines, for a message. */
static void log_head(const char *log, char *out, size_t max) {
    size_t n = strlen(log);
    if (n >= max) n = max - 1;
    memcpy(out, log, n);
    out[n] = 0;
}

kiln_status cu_nvrtc_compile(kiln_context *ctx, const cu_nvrtc *r, const char *source, size_t len,
                             int cc_major, int cc_minor, char **cubin, size_t *bytes) {
    *cubin = NULL;
    *bytes = 0;
    /* NVRTC takes a NUL-terminated string */
    char *src = host_alloc(ctx, len + 1);
    if (!src) return ctx_oom(ctx, "cuda: kernel source", len + 1);
    memcpy(src, source, len);
    src[len] = 0;
    char arch[32];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", cc_major, cc_minor);
    const char *opts[N_OPTS + 1];
    for (int i = 0; i < N_OPTS; i++) opts[i] = nvrtc_opts[i];
    opts[N_OPTS] = arch;
    nvrtcProgram prog = NULL;
    nvrtcResult e = r->nvrtcCreateProgram(&prog, src, "kiln_kernels.cu", 0, NULL, NULL);
    kiln_status s = KILN_STATUS_OK;
    if (e) {
        s = ctx_error(ctx, KILN_STATUS_BACKEND, "cuda: nvrtcCreateProgram failed: %s",
                      r->nvrtcGetErrorString(e));
        host_free(ctx, src, len + 1);
        return s;
    }
    e = r->nvrtcCompileProgram(prog, N_OPTS + 1, opts);
    if (e) {
        size_t n = 0;
        char *log = NULL;
        if (!r->nvrtcGetProgramLogSize(prog, &n) && n && (log = host_alloc(ctx, n + 1)) &&
            !r->nvrtcGetProgramLog(prog, log))
            log[n] = 0;
        char head[2048] = "";
        if (log) log_head(log, head, sizeof head);
        s = ctx_error(ctx, KILN_STATUS_BACKEND,
                      "cuda: NVRTC %d.%d could not compile the generated kernels for sm_%d%d "
                      "(%s):\n%s",
                      r->major, r->minor, cc_major, cc_minor, r->nvrtcGetErrorString(e), head);
        if (log) host_free(ctx, log, n + 1);
    } else {
        size_t n = 0;
        if ((e = r->nvrtcGetCUBINSize(prog, &n)) || !n)
            s = ctx_error(ctx, KILN_STATUS_BACKEND, "cuda: nvrtcGetCUBINSize failed: %s",
                          e ? r->nvrtcGetErrorString(e) : "an empty cubin");
        else if (!(*cubin = host_alloc(ctx, n)))
            s = ctx_oom(ctx, "cuda: cubin", n);
        else if ((e = r->nvrtcGetCUBIN(prog, *cubin))) {
            host_free(ctx, *cubin, n);
            *cubin = NULL;
            s = ctx_error(ctx, KILN_STATUS_BACKEND, "cuda: nvrtcGetCUBIN failed: %s",
                          r->nvrtcGetErrorString(e));
        } else
            *bytes = n;
    }
    r->nvrtcDestroyProgram(&prog);
    host_free(ctx, src, len + 1);
    return s;
}

/* ------------------------------------------------------------- cache ---- */

static void compute_key(const cu_nvrtc *r, int maj, int min, const char *source, size_t len,
                        char key[OBJCACHE_KEY_HEX + 1]) {
    sha256_ctx c;
    uint8_t digest[SHA256_BYTES];
    char head[128];
    int n = snprintf(head, sizeof head, "%s nvrtc %d.%d sm_%d%d", CU_FORMAT, r->major, r->minor,
                     maj, min);
    sha256_init(&c);
    sha256_update(&c, head, (size_t)n + 1);
    for (int i = 0; i < N_OPTS; i++) sha256_update(&c, nvrtc_opts[i], strlen(nvrtc_opts[i]) + 1);
    sha256_update(&c, source, len);
    sha256_final(&c, digest);
    sha256_hex(digest, key);
}

/* Reads the verified entry (fd open on it) into a host buffer. */
static char *read_entry(kiln_context *ctx, int fd, size_t bytes) {
    char *buf = host_alloc(ctx, bytes ? bytes : 1);
    if (!buf) return NULL;
    size_t got = 0;
    while (got < bytes) {
        ssize_t k = pread(fd, buf + got, bytes - got, (off_t)got);
        if (k <= 0) {
            host_free(ctx, buf, bytes ? bytes : 1);
            return NULL;
        }
        got += (size_t)k;
    }
    return buf;
}

/* Publishes cubin under key, best effort (a cache that cannot be written only costs the
 * next process a compile), then keeps the cache under its cap. */
static kiln_status publish(kiln_context *ctx, const char *dir, uint64_t cap, const char *key,
                           const char *cubin, size_t bytes) {
    char tmp[PATH_MAX], obj[PATH_MAX];
    int w = snprintf(tmp, sizeof tmp, "%s/.tmp-cu%ld-XXXXXX", dir, (long)getpid());
    if (w <= 0 || w >= (int)sizeof tmp || !mkdtemp(tmp)) return KILN_STATUS_OK;
    bool ok = objcache_tmp_object(obj, tmp, CU_SUFFIX);
    FILE *f = ok ? fopen(obj, "wb") : NULL;
    if (f) {
        ok = fwrite(cubin, 1, bytes, f) == bytes;
        ok &= fclose(f) == 0;
    }
    size_t n;
    kiln_status s = KILN_STATUS_OK;
    if (f && ok && !objcache_publish(tmp, dir, key, CU_SUFFIX, &n)) {
        uint64_t gone = 0;
        s = objcache_evict(ctx, dir, cap, key, &gone);
    }
    objcache_remove_tmp(tmp);
    return s;
}

/* The cubin for source on device d: from the disk cache when a verified entry is there,
 * else from NVRTC (then cached). */
static kiln_status get_cubin(cu_state *st, const cu_dev *d, const char *source, size_t len,
                             char **cubin, size_t *bytes, bool *from_cache) {
    kiln_context *ctx = st->ctx;
    char key[OBJCACHE_KEY_HEX + 1];
    compute_key(&st->nvrtc, d->cc_major, d->cc_minor, source, len, key);
    const kn_cache_options *c = &st->opt.cache;
    const char *dir = c->dir;
    bool cache = c->max_bytes && !objcache_dir_ready(ctx, dir);
    if (cache) {
        size_t n;
        int fd;
        if (objcache_verify(dir, key, CU_SUFFIX, &n, &fd) == OBJCACHE_OK) {
            *cubin = read_entry(ctx, fd, n);
            close(fd);
            if (!*cubin) return ctx_oom(ctx, "cuda: cubin from the cache", n);
            *bytes = n;
            *from_cache = true;
            return KILN_STATUS_OK;
        }
    }
    kiln_status s =
        cu_nvrtc_compile(ctx, &st->nvrtc, source, len, d->cc_major, d->cc_minor, cubin, bytes);
    if (!s && cache) s = publish(ctx, dir, c->max_bytes, key, *cubin, *bytes);
    if (s && *cubin) {
        host_free(ctx, *cubin, *bytes);
        *cubin = NULL;
    }
    return s;
}

kiln_status cu_program_compile(void *state, int device, const char *source, size_t len,
                               kn_program **out, kn_program_info *info) {
    cu_state *st = state;
    kiln_context *ctx = st->ctx;
    cu_dev *d = &st->devs[device];
    *out = NULL;
    kiln_status s = cu_nvrtc_ready(st, "kiln_compile");
    if (!s) s = cu_dev_ready(st, device, "kiln_compile");
    if (s) return s;
    char *cubin = NULL;
    size_t bytes = 0;
    bool from_cache = false;
    if ((s = get_cubin(st, d, source, len, &cubin, &bytes, &from_cache))) return s;
    kn_program *p = host_calloc(ctx, 1, sizeof *p);
    if (!p) s = ctx_oom(ctx, "cuda: program", sizeof *p);
    CUresult e = CUDA_SUCCESS;
    if (!s && (e = st->drv.cuModuleLoadData(&p->mod, cubin)))
        s = cu_fail(st, e, "cuModuleLoadData", "loading the compiled kernels");
    host_free(ctx, cubin, bytes);
    if (s) {
        host_free(ctx, p, sizeof *p);
        return s;
    }
    p->device = device;
    p->bytes = bytes;
    *out = p;
    info->code_bytes = bytes;
    info->from_cache = from_cache;
    return KILN_STATUS_OK;
}

void cu_program_free(void *state, kn_program *prog) {
    cu_state *st = state;
    if (!prog) return;
    for (cu_kernel *k = prog->kernels, *next; k; k = next) {
        next = k->next;
        host_free(st->ctx, k, sizeof *k);
    }
    if (!cu_dev_ready(st, prog->device, "freeing a program")) {
        st->drv.cuStreamSynchronize(st->devs[prog->device].compute); /* no kernel of it runs */
        st->drv.cuModuleUnload(prog->mod);
    }
    host_free(st->ctx, prog, sizeof *prog);
}

kiln_status cu_function_get(cu_state *st, kn_program *prog, const char *name, CUfunction *f) {
    *f = NULL;
    kiln_status s = cu_dev_ready(st, prog->device, "kiln_compile");
    if (s) return s;
    CUresult e = st->drv.cuModuleGetFunction(f, prog->mod, name);
    if (e) {
        char t[160];
        return ctx_error(st->ctx, KILN_STATUS_INTERNAL, "cuda: the program has no kernel %s: %s",
                         name, cu_error_text(&st->drv, e, t, sizeof t));
    }
    return KILN_STATUS_OK;
}

kiln_status cu_kernel_get(void *state, kn_program *prog, const char *name, void **kernel) {
    cu_state *st = state;
    *kernel = NULL;
    CUfunction fn, part = NULL;
    kiln_status s = cu_function_get(st, prog, name, &fn);
    if (s) return s;
    /* a split reduction's part kernel, if the printer made one (cgen.h) */
    char sub[128];
    snprintf(sub, sizeof sub, "%s_part", name);
    CUresult e = st->drv.cuModuleGetFunction(&part, prog->mod, sub);
    if (e && e != CUDA_ERROR_NOT_FOUND) return cu_fail(st, e, "cuModuleGetFunction", sub);
    int64_t parts[2] = {0, 0}; /* {the part kernel's items, the scratch's bytes} */
    if (!e) {
        snprintf(sub, sizeof sub, "%s_parts", name);
        CUdeviceptr p = 0;
        size_t bytes = 0;
        cu_dev *d = &st->devs[prog->device];
        if ((e = st->drv.cuModuleGetGlobal(&p, &bytes, prog->mod, sub)))
            return cu_fail(st, e, "cuModuleGetGlobal", sub);
        if (bytes != sizeof parts)
            return ctx_error(st->ctx, KILN_STATUS_INTERNAL, "cuda: %s is %zu bytes, not %zu", sub,
                             bytes, sizeof parts);
        CU_TRY(st, st->drv.cuMemcpyDtoHAsync(parts, p, sizeof parts, d->compute), sub);
        CU_TRY(st, st->drv.cuStreamSynchronize(d->compute), sub);
        if (parts[0] < 1 || parts[1] < 1)
            return ctx_error(st->ctx, KILN_STATUS_INTERNAL, "cuda: %s = {%lld, %lld}", sub,
                             (long long)parts[0], (long long)parts[1]);
    }
    cu_kernel *k = host_calloc(st->ctx, 1, sizeof *k);
    if (!k) return ctx_oom(st->ctx, "cuda: kernel handle", sizeof *k);
    k->fn = fn;
    k->part = parts[0] ? part : NULL;
    k->part_items = parts[0];
    k->part_bytes = parts[1];
    k->next = prog->kernels;
    prog->kernels = k;
    *kernel = k;
    return KILN_STATUS_OK;
}
