/* cc.c — the CPU backend's JIT compiler: C source -> shared object -> dlopen, through the
 * disk cache of backend/objcache.c (entries <key>.so).
 *
 * Invariants:
 *   - the compiler is found and identified (first line of `--version`, path as found and
 *     real path) once per cc_compiler (one per context), under cc_compiler.mu, and never
 *     changes afterwards; the identity and the flags are part of every cache key, so
 *     upgrading the compiler or changing KILN_CC_FLAGS can never load an object built by
 *     another setup;
 *   - the compiled source ends with `kiln_module_key`, the key as a string; after dlopen
 *     the module's copy must equal the key asked for, or it is not used;
 *   - the compiler always runs in a private temp folder under TMPDIR (which it needs for
 *     its own temporaries anyway), never in the cache, and every path it is given is
 *     absolute (the cache directory is made absolute when the context is made): so a
 *     cache that cannot be written (read-only, full, over quota) can never fail a
 *     compile, it only means the entry is not kept, said once per context;
 *   - every module is dlopen'd from a private copy of its object that it holds open
 *     (objcache_private_copy), never from a file in the cache or one about to be published
 *     there: others may truncate or rewrite those, and a mapping of them would then raise
 *     SIGBUS in a running program;
 *   - a freshly compiled object is loaded and checked before a copy of it is published,
 *     so an object that fails to load never enters the cache;
 *   - two threads or processes compiling the same source both compile in their own
 *     folders and both publish (objcache_publish_fd: a temp folder in the cache, then
 *     renames); compilers are deterministic, so whichever rename lands last leaves the
 *     same bytes, and each caller holds a working module;
 *   - the compiler runs through posix_spawn (not system(): no shell, no quoting), with its
 *     output in a file we read back for the error message. */
#include "cc.h"

#include <stddef.h>

#include "base/sha256.h"
#include "backend/objcache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CC_FORMAT_VERSION "kiln-cc-1" /* bump when the entry layout or the key changes */
/* A shared object's name in the cache (<key>.so), and inside a compile's temp folder the
 * source's and the object's fixed short names (objcache.h says why they are fixed). */
#define CC_SUFFIX     ".so"
#define CC_TMP_SOURCE OBJCACHE_TMP_STEM ".c"
#define CC_TMP_OBJECT OBJCACHE_TMP_STEM CC_SUFFIX

/* posix_spawn can start the compiler inside its temp folder (glibc >= 2.29), so that its
 * messages name "kernels.c" rather than a long temp path. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
#define HAVE_SPAWN_CHDIR 1
#else
#define HAVE_SPAWN_CHDIR 0
#endif
#define ERR_LINES 40
#define MAX_ARGS  600 /* the fixed flags, up to ~512 from KILN_CC_FLAGS, the file names */
/* A source of two or more kernels is compiled as up to CC_MAX_PARTS translation units at
 * once (one per thread of the context, never more than one per kernel), the prelude in
 * each, then linked. An extra part costs a compiler start and the prelude again, which
 * idle cores run side by side; a kernel costs about as much or more of gcc's -O3 on its
 * own, so even a 3-kernel source is done sooner in two parts (bench/programs' first calls
 * of the embedding classifier, cross-entropy and the LLaMA block all came sooner:
 * bench/RESULTS.md, "First calls: a source of 2-7 kernels now compiles in parts too").
 * With one thread there is one part. */
#define CC_MAX_PARTS 8

/* Never -ffast-math, -ffinite-math-only or -fassociative-math: the generated code tests
 * for NaN explicitly, keeps signed zeros, and its exp range reduction (Cody-Waite) loses
 * ~30 ulp if reassociated. Reductions vectorise through `#pragma omp simd reduction`
 * instead, which -fopenmp-simd enables without any OpenMP runtime. */
static const char *const base_flags[] = {
    "-march=native",      "-fPIC",         "-shared",   "-fno-math-errno",
    "-fno-trapping-math", "-fopenmp-simd", "-std=gnu11"};
#define N_BASE_FLAGS ((int)(sizeof base_flags / sizeof base_flags[0]))

/* The optimisation flags, by compiler. gcc 12 (-O3, AVX2 or AVX-512) miscompiles a kernel
 * whose work-item loop holds the if/else-if chain of a concatenate when it splits the loop
 * at the branches' bounds: a concatenate of one f64[7,2,2] operand three times lost two
 * rows of the third copy (found by fuzz/fuzz_builder; -O2, clang, and gcc without loop
 * splitting are right), so gcc gets -fno-split-loops. -O2 with -O3's vectoriser cost model
 * takes less compile time, and its wrong result on test_compile_random's graph 63 was a
 * gcc bug that -O3 has too (print_c.c, wraps_into_gather, now worked around); but measured
 * on bench/programs it left RoPE's interleave and cross-entropy slower (and made the
 * embedding classifier faster), so -O3 stays (bench/RESULTS.md, "First calls: where they
 * go, and what was cut" and "First calls: -O2 measured again, and left"). gcc's -O3
 * unroll-and-jam takes apart the column form's loop order (reduce loop outside, the
 * chunk's columns inside and vectorised): the embedding classifier's gather + mean kernel
 * ran several times slower with it, and nothing else moved (bench/RESULTS.md, "gcc -O3's
 * unroll-and-jam and the column form"), so gcc also gets -fno-loop-unroll-and-jam. And
 * -pipe: cc1 hands the assembly to as through a pipe, not a temporary file, and the two
 * overlap (RoPE's source compiled a little sooner, alternated runs: bench/RESULTS.md,
 * "Figures moved out of code comments (2026-12-03)"). These flags are part of the compiler
 * identity hashed into every key. */
static const char *const gcc_opt_flags[] = {"-O3", "-fno-split-loops", "-fno-loop-unroll-and-jam",
                                            "-pipe"};
static const char *const other_opt_flags[] = {"-O3"};
#define N_OPT_FLAGS(gcc) ((gcc) ? 4 : 1)

struct cc_compiler {
    kiln_context *ctx;         /* the owner, whose allocator made this */
    const kn_cpu_options *opt; /* the CPU backend's options, which outlive this */
    pthread_mutex_t mu;        /* guards everything below but next_tmp */
    bool probed;
    bool is_gcc;         /* the compiler's version line says gcc: it gets gcc_opt_flags */
    char path[PATH_MAX]; /* the compiler, as found on PATH or given */
    char identity[512 + 2 * PATH_MAX + 64]; /* version line, path, real path, opt flags */
    cc_stats stats;
    atomic_uint next_tmp;          /* makes temp folder names unique within the process */
    atomic_bool warned_unwritable; /* the unwritable-cache notice was printed */
    atomic_bool swept_stale;       /* sweep_stale ran */
};

struct cc_module {
    kiln_context *ctx;
    void *handle;
    int fd; /* the private copy it was opened through, held until unload (open_module) */
    size_t code_bytes;
    char key[SHA256_HEX_BYTES];
    struct cc_owned *owned; /* cc_module_alloc's blocks */
};

/* A block of cc_module_alloc, the header before its bytes. */
typedef struct cc_owned {
    struct cc_owned *next;
    size_t n;
    max_align_t bytes[];
} cc_owned;

/* One call of cc_module_load. */
typedef struct cc_load {
    kiln_context *ctx;
    cc_compiler *st;
    const char *source;
    size_t len;
    int parts;                     /* plan_parts: 1, or the translation units compiled at once */
    size_t cuts[CC_MAX_PARTS + 1]; /* where they begin (plan_parts) */
    char key[SHA256_HEX_BYTES];
    bool background; /* CC_LOAD_BACKGROUND: the compilers run at a lower priority */
} cc_load;

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------------------------------------------------- running a program ---- */

/* Starts argv[0] (an absolute path) with stdin from /dev/null and stdout+stderr into
 * out_fd, inside the folder open as dir_fd (-1: ours). out_fd is closed here: the child
 * has its copy, and a pipe's reader sees EOF at its exit. Returns 0 or the errno that kept
 * the program from starting (the folder and the output are open already: that errno is
 * about the program). */
static int spawn_program(char *const argv[], int dir_fd, int out_fd, pid_t *pid) {
    posix_spawn_file_actions_t fa;
    int err = posix_spawn_file_actions_init(&fa);
    if (!err) {
#if HAVE_SPAWN_CHDIR
        if (dir_fd >= 0) posix_spawn_file_actions_addfchdir_np(&fa, dir_fd);
#else
        (void)dir_fd;
#endif
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        err = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(out_fd);
    return err;
}

/* What start_in could not do. */
typedef enum start_step { STARTED, START_FOLDER, START_OUTPUT, START_PROGRAM } start_step;

/* spawn_program inside the folder dir (an absolute path), its output into the new file
 * out_path (absolute). On failure, why (when not NULL) says which step failed and how:
 * entering the folder and creating the output are tried here first, so that a missing
 * folder is not reported as a missing compiler. */
static start_step start_in(char *const argv[], const char *dir, const char *out_path, pid_t *pid,
                           char *why, size_t cap) {
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;
    if (dir_fd < 0) {
        if (why) snprintf(why, cap, "cannot enter the compile folder %s: %s", dir, strerror(errno));
        return START_FOLDER;
    }
    int out_fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out_fd < 0) {
        int e = errno;
        if (why)
            snprintf(why, cap, "cannot create the compiler's output file %s: %s%s", out_path,
                     strerror(e),
                     e == EMFILE ? " (this process's open-file limit, ulimit -n: every loaded "
                                   "executable holds one descriptor until it is destroyed, so "
                                   "destroy the ones no longer needed, lower "
                                   "kiln_jit_options.max_entries, or raise the limit)"
                                 : "");
        close(dir_fd);
        return START_OUTPUT;
    }
    err = spawn_program(argv, dir_fd, out_fd, pid);
    close(dir_fd);
    if (!err) return STARTED;
    if (why) snprintf(why, cap, "cannot run the C compiler %s: %s", argv[0], strerror(err));
    return START_PROGRAM;
}

/* The wait status, or -1 when it cannot be known (the process ignores SIGCHLD). */
static int wait_program(pid_t pid) {
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

/* "exit status 1", "killed by signal 9" or "status unknown". */
static void describe_status(int status, char *buf, size_t n) {
    if (status == -1)
        snprintf(buf, n, "status unknown");
    else if (WIFEXITED(status))
        snprintf(buf, n, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, n, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(buf, n, "wait status %d", status);
}

static bool ran_ok(int status) {
    return status == -1 || (WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ------------------------------------------------- finding the compiler ---- */

static bool is_program(const char *path) {
    struct stat sb;
    return !stat(path, &sb) && S_ISREG(sb.st_mode) && !access(path, X_OK);
}

/* A name with a slash is a path; otherwise search PATH, as execvp would. */
static bool find_program(const char *name, char out[PATH_MAX]) {
    if (strchr(name, '/')) {
        snprintf(out, PATH_MAX, "%s", name);
        return is_program(name);
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        int dlen = end ? (int)(end - p) : (int)strlen(p);
        int n = dlen ? snprintf(out, PATH_MAX, "%.*s/%s", dlen, p, name)
                     : snprintf(out, PATH_MAX, "./%s", name); /* empty entry: the cwd */
        if (n > 0 && n < PATH_MAX && is_program(out)) return true;
        if (!end) return false;
        p = end;
    }
}

/* Reads what fd yields until EOF, keeping the first cap-1 bytes, NUL-terminated. */
static void read_all(int fd, char *buf, size_t cap) {
    size_t got = 0;
    for (;;) {
        char chunk[512];
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        size_t take = (size_t)r < cap - 1 - got ? (size_t)r : cap - 1 - got;
        memcpy(buf + got, chunk, take);
        got += take;
    }
    buf[got] = 0;
}

/* The first line of `<compiler> --version` into line. */
static kiln_status version_line(kiln_context *ctx, const char *cc, char *line, size_t cap) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC))
        return ctx_error(ctx, KILN_STATUS_BACKEND, "C compiler probe: pipe: %s", strerror(errno));
    char *argv[] = {(char *)cc, "--version", NULL};
    pid_t pid;
    int err = spawn_program(argv, -1, fds[1], &pid);
    char buf[1024] = "";
    if (!err) read_all(fds[0], buf, sizeof buf); /* before waiting: the pipe could fill */
    close(fds[0]);
    if (err)
        return ctx_error(ctx, KILN_STATUS_BACKEND, "cannot run the C compiler %s: %s", cc,
                         strerror(err));
    wait_program(pid);
    buf[strcspn(buf, "\r\n")] = 0;
    snprintf(line, cap, "%s", buf[0] ? buf : "(no version line)");
    return KILN_STATUS_OK;
}

static kiln_status locate_compiler(kiln_context *ctx, const char *want, char out[PATH_MAX]) {
    if (*want) {
        if (find_program(want, out)) return KILN_STATUS_OK;
        return ctx_error(ctx, KILN_STATUS_CONFIG,
                         "KILN_CC=\"%s\" names no executable program%s; point KILN_CC at a C "
                         "compiler (a path, or a name on PATH) or unset it to use cc, gcc or "
                         "clang from PATH",
                         want, strchr(want, '/') ? "" : " on PATH");
    }
    static const char *const names[] = {"cc", "gcc", "clang"};
    for (int i = 0; i < 3; i++)
        if (find_program(names[i], out)) return KILN_STATUS_OK;
    const char *path = getenv("PATH");
    return ctx_error(ctx, KILN_STATUS_BACKEND,
                     "no C compiler found: the CPU backend compiles kernels with one, and none "
                     "of cc, gcc, clang is on PATH (%s); install one or set KILN_CC to its path",
                     path ? path : "unset");
}

/* A relative path made absolute against the current folder (the compiler runs elsewhere);
 * the name itself is kept, as drivers such as ccache and clang read their argv[0]. */
static void make_absolute(char path[PATH_MAX]) {
    char cwd[PATH_MAX], tmp[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd)) return;
    if (snprintf(tmp, sizeof tmp, "%s/%s", cwd, path) < PATH_MAX) memcpy(path, tmp, sizeof tmp);
}

/* Called under st->mu. */
static kiln_status probe(kiln_context *ctx, cc_compiler *st) {
    char found[PATH_MAX], line[512], real[PATH_MAX];
    kiln_status s = locate_compiler(ctx, st->opt->cc, found);
    if (s) return s;
    make_absolute(found);
    if ((s = version_line(ctx, found, line, sizeof line))) return s;
    if (!realpath(found, real)) snprintf(real, sizeof real, "%s", found);
    snprintf(st->path, sizeof st->path, "%s", found);
    /* cc's version line does not say gcc ("cc (Debian 12.2.0-14) 12.2.0"); its real path
     * does (x86_64-linux-gnu-gcc-12) */
    const char *base = strrchr(real, '/');
    st->is_gcc = !strstr(line, "clang") && (strstr(line, "gcc") || strstr(line, "GCC") ||
                                            strstr(base ? base + 1 : real, "gcc"));
    snprintf(st->identity, sizeof st->identity, "%s\n%s\n%s\n", line, found, real);
    for (int i = 0; i < N_OPT_FLAGS(st->is_gcc); i++) { /* the flags this compiler gets */
        size_t used = strlen(st->identity);
        snprintf(st->identity + used, sizeof st->identity - used, " %s",
                 (st->is_gcc ? gcc_opt_flags : other_opt_flags)[i]);
    }
    st->probed = true;
    return KILN_STATUS_OK;
}

bool cc_compiler_matches_library(cc_compiler *cc) {
#if defined(__GNUC__) && !defined(__clang__) && defined(__VERSION__)
    pthread_mutex_lock(&cc->mu);
    kiln_status s = cc->probed ? KILN_STATUS_OK : probe(cc->ctx, cc);
    /* no compiler: false, and kiln_compile reports it when it needs one */
    /* the version line holds the version gcc was: "cc (Debian 12.2.0-14) 12.2.0" */
    bool same = !s && cc->is_gcc && !cc->opt->cc_flags[0] && strstr(cc->identity, __VERSION__);
    pthread_mutex_unlock(&cc->mu);
    return same;
#else
    (void)cc;
    return false;
#endif
}

/* What can be judged of KILN_CC, KILN_CC_FLAGS and KILN_CACHE_DIR without running
 * anything, at context creation: a mistake there is reported by kiln_context_create, not
 * by whichever call compiles first. (A missing default compiler is not an error yet: a
 * context may only ever run the reference interpreter or another device.) KILN_CACHE_DIR
 * is absolute by now (runtime/context.c made it so for every backend of the context). */
_Static_assert(MAX_ARGS - 7 - CC_MAX_PARTS - N_OPT_FLAGS(1) - N_BASE_FLAGS >= 512,
               "room for the most flags KILN_CC_FLAGS can hold");
static kiln_status check_settings(kiln_context *ctx, const kn_cpu_options *c) {
    char found[PATH_MAX], flags[sizeof c->cc_flags];
    kiln_status s;
    if (c->cc[0] && (s = locate_compiler(ctx, c->cc, found))) return s;
    /* (Their number needs no check: 1024 bytes hold at most 512, and MAX_ARGS has room.) */
    snprintf(flags, sizeof flags, "%s", c->cc_flags);
    for (char *save, *t = strtok_r(flags, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
        if (!strcmp(t, "-o") || !strcmp(t, "-c") || !strcmp(t, "-E") || !strcmp(t, "-S"))
            return ctx_error(ctx, KILN_STATUS_CONFIG,
                             "KILN_CC_FLAGS=\"%s\": '%s' is not allowed (kiln chooses what the "
                             "compiler makes and where)",
                             c->cc_flags, t);
    }
    return c->cache.max_bytes ? objcache_dir_check(ctx, c->cache.dir) : KILN_STATUS_OK;
}

kiln_status cc_compiler_create(kiln_context *ctx, const kn_cpu_options *opt, cc_compiler **out) {
    *out = NULL;
    kiln_status s = check_settings(ctx, opt);
    if (s) return s;
    cc_compiler *cc = host_calloc(ctx, 1, sizeof *cc);
    *out = cc;
    if (!cc) return ctx_oom(ctx, "C compiler state", sizeof *cc);
    cc->ctx = ctx;
    cc->opt = opt;
    pthread_mutex_init(&cc->mu, NULL);
    atomic_init(&cc->next_tmp, 0);
    return KILN_STATUS_OK;
}

void cc_compiler_destroy(cc_compiler *cc) {
    if (!cc) return;
    pthread_mutex_destroy(&cc->mu);
    host_free(cc->ctx, cc, sizeof *cc);
}

/* Finds and identifies the compiler at the first load; later loads reuse what it found. */
static kiln_status compiler_ready(cc_compiler *cc) {
    pthread_mutex_lock(&cc->mu);
    kiln_status s = cc->probed ? KILN_STATUS_OK : probe(cc->ctx, cc);
    pthread_mutex_unlock(&cc->mu);
    return s;
}

/* ------------------------------------------------------ key and command ---- */

/* SHA-256 over the format version, the compiler's identity, every flag, the split and the
 * source;
 * NUL separators keep the fields from running into each other. */
static void compute_key(cc_load *ld) {
    sha256_ctx c;
    uint8_t digest[SHA256_BYTES];
    sha256_init(&c);
    sha256_update(&c, CC_FORMAT_VERSION, sizeof CC_FORMAT_VERSION);
    sha256_update(&c, ld->st->identity, strlen(ld->st->identity) + 1);
    for (int i = 0; i < N_BASE_FLAGS; i++)
        sha256_update(&c, base_flags[i], strlen(base_flags[i]) + 1);
    sha256_update(&c, ld->st->opt->cc_flags, strlen(ld->st->opt->cc_flags) + 1);
    /* a split compile builds other bytes than one unit: its own entry keeps "same key,
     * same bytes" true between processes with other thread counts */
    char parts[16];
    snprintf(parts, sizeof parts, "parts=%d", ld->parts);
    sha256_update(&c, parts, strlen(parts) + 1);
    sha256_update(&c, ld->source, ld->len);
    sha256_final(&c, digest);
    sha256_hex(digest, ld->key);
}

typedef struct cc_argv {
    char *v[MAX_ARGS];
    char extra[sizeof((kn_cpu_options *)0)->cc_flags]; /* KILN_CC_FLAGS, split in place */
} cc_argv;

/* <cc> <base flags> <KILN_CC_FLAGS split on blanks> then the tail: `-c -o <obj> <src>`
 * for one part of a split compile, `-o <so> <inputs...> -lm` (gcc: `-nostdlib -o <so>
 * <inputs...> -lm -lgcc`) for a whole source or the link of the parts' objects. */
static void build_argv_n(const cc_load *ld, cc_argv *a, bool compile_only, const char *out,
                         char *const *inputs, int n_inputs) {
    int n = 0;
    a->v[n++] = ld->st->path;
    for (int i = 0; i < N_OPT_FLAGS(ld->st->is_gcc); i++)
        a->v[n++] = (char *)(ld->st->is_gcc ? gcc_opt_flags : other_opt_flags)[i];
    for (int i = 0; i < N_BASE_FLAGS; i++) a->v[n++] = (char *)base_flags[i];
    snprintf(a->extra, sizeof a->extra, "%s", ld->st->opt->cc_flags);
    for (char *save, *t = strtok_r(a->extra, " \t\n", &save); t && n < MAX_ARGS - 6 - CC_MAX_PARTS;
         t = strtok_r(NULL, " \t\n", &save))
        a->v[n++] = t;
    if (compile_only) a->v[n++] = "-c";
    /* gcc links a kernel module without the C runtime's start files and libc (-nostdlib:
     * the module has no constructors, and memcpy is a builtin), naming libm and libgcc
     * itself: a good part of the link's time, which is a visible share of a small program's
     * compile (bench/RESULTS.md, "Two smaller changes found on the way"). The
     * module still records libm where it calls it, so a host that loaded kiln with
     * RTLD_LOCAL resolves logf and the rest. Not with KILN_CC_FLAGS: -fsanitize=... and
     * other flags bring runtimes that gcc links only without -nostdlib. */
    bool lean = !compile_only && ld->st->is_gcc && !ld->st->opt->cc_flags[0];
    if (lean) a->v[n++] = "-nostdlib";
    a->v[n++] = "-o", a->v[n++] = (char *)out;
    for (int i = 0; i < n_inputs; i++) a->v[n++] = inputs[i];
    if (!compile_only) a->v[n++] = "-lm";
    if (lean) a->v[n++] = "-lgcc";
    a->v[n] = NULL;
}

static void build_argv(const cc_load *ld, cc_argv *a, const char *so, const char *src) {
    char *in = (char *)src;
    build_argv_n(ld, a, false, so, &in, 1);
}

static void join_argv(char *const *v, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; v[i] && used < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%s", i ? " " : "", v[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* ----------------------------------------------------------- compiling ---- */

/* The source (or, for a part, the prelude and the part's kernels), then, in the whole
 * source and in part 0, the key as a symbol the loader checks after dlopen. */
static bool write_part(const cc_load *ld, const char *path, size_t prelude, size_t begin,
                       size_t end, bool with_key) {
    /* 0600: a source that fails to compile stays in the cache for the user to read, and
     * only the user (the cache is private, so is what it keeps). O_EXCL: always a new file
     * of a fresh temp folder, never one rewritten in place. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return false;
    }
    fwrite(ld->source, 1, prelude, f);
    fwrite(ld->source + begin, 1, end - begin, f);
    if (with_key)
        fprintf(f,
                "\n\n/* Added by kiln: the cache key, checked by the loader after dlopen. */\n"
                "__attribute__((visibility(\"default\"), used))\n"
                "const char kiln_module_key[] = \"%s\";\n",
                ld->key);
    bool ok = !ferror(f);
    return !fclose(f) && ok;
}

static bool write_source(const cc_load *ld, const char *path) {
    return write_part(ld, path, 0, 0, ld->len, true);
}

/* The offset of the line after the one at o (len at the end). */
static size_t next_line(const char *src, size_t len, size_t o) {
    const char *nl = memchr(src + o, '\n', len - o);
    return nl ? (size_t)(nl - src) + 1 : len;
}

/* Where the source may be cut into parts compiled in parallel. The printer emits a prelude
 * of helpers, then kernels, each a top-level `KILN_EXPORT` definition (with a comment
 * line before it). Only when every top-level line after the prelude is one of those
 * (a definition's first line, its closing brace, a comment) is a cut safe: anything else
 * (a static table a later kernel might read) keeps one unit. Returns the number of parts
 * (1: compile whole); cuts[0] is the prelude's end, part i is [cuts[i], cuts[i + 1]). */
static int plan_parts(const char *src, size_t len, int max_parts, size_t cuts[CC_MAX_PARTS + 1]) {
    static const char mark[] = "KILN_EXPORT ";
    size_t first = len;
    long kernels = 0;
    for (size_t o = 0; o < len; o = next_line(src, len, o)) {
        char c = src[o];
        if (c == ' ' || c == '\t' || c == '\n') continue;
        if (len - o >= sizeof mark - 1 && !memcmp(src + o, mark, sizeof mark - 1)) {
            if (!kernels++) first = o;
        } else if (kernels && c != '}' && !(c == '/' && o + 1 < len && src[o + 1] == '*')) {
            return 1;
        }
    }
    int parts = kernels < max_parts ? (int)kernels : max_parts;
    if (parts < 2) return 1;
    /* cut at the first kernel starting past each equal share of the kernels' bytes */
    int n = 0;
    cuts[n++] = first;
    for (size_t o = next_line(src, len, first); o < len && n < parts; o = next_line(src, len, o))
        if (len - o >= sizeof mark - 1 && !memcmp(src + o, mark, sizeof mark - 1) &&
            o >= first + (len - first) / (size_t)parts * (size_t)n)
            cuts[n++] = o;
    cuts[n] = len;
    return n;
}

/* Appends the first ERR_LINES lines of the compiler's output file to buf. */
static void append_output(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "re");
    size_t used = strlen(buf);
    char line[1024];
    for (int i = 0; f && i < ERR_LINES && fgets(line, sizeof line, f) && used + 1 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "  %s", line);
        if (w < 0) break;
        used += (size_t)w < cap - used ? (size_t)w : cap - used - 1;
    }
    if (f) fclose(f);
}

static kiln_status compile_failed(const cc_load *ld, char *const *argv, int status,
                                  const char *output, const char *kept) {
    char what[64], cmd[1536], out[6144];
    describe_status(status, what, sizeof what);
    join_argv(argv, cmd, sizeof cmd);
    out[0] = 0;
    append_output(output, out, sizeof out);
    return ctx_error(ld->ctx, KILN_STATUS_BACKEND,
                     "the C compiler failed (%s) on generated source kept at %s\n"
                     "command: %s\ncompiler output (first %d lines):\n%s",
                     what, kept, cmd, ERR_LINES, out[0] ? out : "  (none)\n");
}

static void count_compile(cc_compiler *st, double seconds) {
    pthread_mutex_lock(&st->mu);
    st->stats.compiles++;
    st->stats.compile_seconds += seconds;
    pthread_mutex_unlock(&st->mu);
}

/* The compiler's share of the context's threads: KILN_NUM_THREADS, else every core. */
static int compile_jobs(const cc_load *ld) {
    int t = ld->st->opt->num_threads;
    if (t <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        t = n > 0 ? (int)n : 1;
    }
    return t < CC_MAX_PARTS ? t : CC_MAX_PARTS;
}

/* The files and command lines of a split compile: too large for the stack. */
typedef struct cc_parts {
    char src[CC_MAX_PARTS][PATH_MAX], obj[CC_MAX_PARTS][PATH_MAX], out[CC_MAX_PARTS][PATH_MAX];
    char rel_src[CC_MAX_PARTS][32], rel_obj[CC_MAX_PARTS][32];
    cc_argv argv[CC_MAX_PARTS + 1]; /* the parts', then the link's */
} cc_parts;

/* A background compile (the second tier, built while the first one runs the program) gives
 * the cores to the program's own threads first. Best effort: a compiler that has already
 * exited, or a system that refuses, changes nothing but the order of work. */
static void lower_priority(const cc_load *ld, pid_t pid) {
    if (ld->background) setpriority(PRIO_PROCESS, (id_t)pid, 10);
}

/* Compiles the parts of a split source at once, each into part<i>.o, then links them into
 * <tmp>/CC_TMP_OBJECT. Every started compiler is waited for before returning. false when
 * any step failed: the caller then compiles the whole source as one unit, so that a
 * compiler error is reported exactly as for an unsplit source (line numbers of the kept
 * source, one command). */
static bool run_parts(const cc_load *ld, const char *tmp, int parts, const size_t *cuts,
                      cc_parts *w) {
    char so[PATH_MAX], link_out[PATH_MAX];
    pid_t pid[CC_MAX_PARTS];
    int started = 0;
    bool ok = objcache_path(so, tmp, NULL, CC_TMP_OBJECT) &&
              objcache_path(link_out, tmp, NULL, "compiler-output.txt");
    for (int i = 0; ok && i < parts; i++) {
        char out_name[48];
        snprintf(w->rel_src[i], sizeof w->rel_src[i], "part%d.c", i);
        snprintf(w->rel_obj[i], sizeof w->rel_obj[i], "part%d.o", i);
        snprintf(out_name, sizeof out_name, "compiler-output-%d.txt", i);
        ok = objcache_path(w->src[i], tmp, NULL, w->rel_src[i]) &&
             objcache_path(w->obj[i], tmp, NULL, w->rel_obj[i]) &&
             objcache_path(w->out[i], tmp, NULL, out_name) &&
             write_part(ld, w->src[i], cuts[0], cuts[i], cuts[i + 1], i == 0);
        if (!ok) break;
        char *in = HAVE_SPAWN_CHDIR ? w->rel_src[i] : w->src[i];
        build_argv_n(ld, &w->argv[i], true, HAVE_SPAWN_CHDIR ? w->rel_obj[i] : w->obj[i], &in, 1);
        ok = start_in(w->argv[i].v, tmp, w->out[i], &pid[started], NULL, 0) == STARTED;
        if (ok) lower_priority(ld, pid[started]);
        started += ok;
    }
    for (int i = 0; i < started; i++)
        ok = ran_ok(wait_program(pid[i])) && !access(w->obj[i], R_OK) && ok;
    if (!ok) return false;
    char *objs[CC_MAX_PARTS];
    for (int i = 0; i < parts; i++) objs[i] = HAVE_SPAWN_CHDIR ? w->rel_obj[i] : w->obj[i];
    build_argv_n(ld, &w->argv[parts], false, HAVE_SPAWN_CHDIR ? CC_TMP_OBJECT : so, objs, parts);
    pid_t link;
    if (start_in(w->argv[parts].v, tmp, link_out, &link, NULL, 0) != STARTED) return false;
    lower_priority(ld, link);
    return ran_ok(wait_program(link)) && !access(so, R_OK);
}

/* One compile in a private temp folder (load_private). */
typedef struct cc_work {
    char tmp[PATH_MAX];   /* the folder, under TMPDIR */
    const char *keep_dir; /* the cache, which keeps a source that fails; NULL: none */
    bool keep_tmp;        /* a message names a file in tmp: the folder stays */
} cc_work;

/* A fresh folder <parent>/<prefix><pid>-<n>-XXXXXX: pid and counter tell processes and
 * threads apart, mkdtemp's random suffix tells apart whatever else shares the parent.
 * 0 or an errno. */
static int make_tmp(const cc_load *ld, const char *parent, const char *prefix, char out[PATH_MAX]) {
    unsigned n = atomic_fetch_add(&ld->st->next_tmp, 1);
    int w = snprintf(out, PATH_MAX, "%s/%s%ld-%u-XXXXXX", parent, prefix, (long)getpid(), n);
    if (w <= 0 || w >= PATH_MAX) return ENAMETOOLONG;
    return mkdtemp(out) ? 0 : errno;
}

/* Where a source that failed to compile or load is left for the user (the message names
 * it): <keep_dir>/<key>.failed.c, mode 0600, written in a temp folder of the cache and
 * renamed like every file of the cache; or, with no cache or one that cannot take it, src
 * itself, and its private folder then stays. */
static const char *keep_source(const cc_load *ld, cc_work *w, const char *src,
                               char kept[PATH_MAX]) {
    char tmp[PATH_MAX], file[PATH_MAX];
    if (w->keep_dir && !make_tmp(ld, w->keep_dir, ".tmp-", tmp)) {
        bool ok = objcache_path(file, tmp, NULL, CC_TMP_SOURCE) &&
                  objcache_path(kept, w->keep_dir, ld->key, ".failed.c") &&
                  write_source(ld, file) && !rename(file, kept);
        objcache_remove_tmp(tmp);
        if (ok) return kept;
    }
    w->keep_tmp = true;
    return src;
}

/* Runs the compiler on <tmp>/CC_TMP_SOURCE into <tmp>/CC_TMP_OBJECT: as one unit, or as
 * parts compiled in parallel and linked when the source has enough kernels. On failure
 * the source is kept (keep_source) and named in the message. */
static kiln_status run_compiler(const cc_load *ld, cc_work *wk) {
    const char *tmp = wk->tmp;
    char src[PATH_MAX], so[PATH_MAX], output[PATH_MAX], kept[PATH_MAX];
    if (!objcache_path(src, tmp, NULL, CC_TMP_SOURCE) ||
        !objcache_path(so, tmp, NULL, CC_TMP_OBJECT) ||
        !objcache_path(output, tmp, NULL, "compiler-output.txt"))
        return ctx_error(ld->ctx, KILN_STATUS_IO, "temp folder path %s is too long", tmp);
    if (!write_source(ld, src))
        return ctx_error(ld->ctx, KILN_STATUS_IO, "cannot write generated source %s: %s", src,
                         strerror(errno));
    double t0 = now_seconds();
    if (ld->parts > 1) {
        cc_parts *w = host_alloc(ld->ctx, sizeof *w);
        if (!w) return ctx_oom(ld->ctx, "a parallel compile's file names", sizeof *w);
        bool ok = run_parts(ld, tmp, ld->parts, ld->cuts, w);
        host_free(ld->ctx, w, sizeof *w);
        if (ok) {
            count_compile(ld->st, now_seconds() - t0);
            return KILN_STATUS_OK;
        }
    }
    cc_argv a;
    build_argv(ld, &a, HAVE_SPAWN_CHDIR ? CC_TMP_OBJECT : so,
               HAVE_SPAWN_CHDIR ? CC_TMP_SOURCE : src);
    pid_t pid;
    char why[2 * PATH_MAX];
    start_step step = start_in(a.v, tmp, output, &pid, why, sizeof why);
    if (step == STARTED) lower_priority(ld, pid);
    int status = step == STARTED ? wait_program(pid) : 0;
    count_compile(ld->st, now_seconds() - t0);
    if (step != STARTED)
        return ctx_error(ld->ctx, step == START_PROGRAM ? KILN_STATUS_BACKEND : KILN_STATUS_IO,
                         "%s", why);
    if (ran_ok(status) && !access(so, R_OK)) return KILN_STATUS_OK;
    return compile_failed(ld, a.v, status, output, keep_source(ld, wk, src, kept));
}

/* dlopen + the key check. fd is a private copy of the object (objcache_private_copy),
 * never a file of the cache: that one another process may truncate while it is mapped,
 * and the mapping would then raise SIGBUS. The module takes the handle and fd (closed
 * here on failure); `so` names the object in messages. */
static kiln_status open_module(const cc_load *ld, const char *so, int fd, size_t bytes,
                               cc_module **out) {
    /* dlopen knows loaded objects by the name they were opened under: the copy is opened
     * as /proc/self/fd/N, and fd stays open until the module is unloaded. Were N closed,
     * the next module opened while this one is held could get the same name and this
     * module's handle back (which the key check below would refuse, compiling a cache hit
     * again). */
    char via_fd[64];
    snprintf(via_fd, sizeof via_fd, "/proc/self/fd/%d", fd);
    void *h = dlopen(via_fd, RTLD_NOW | RTLD_LOCAL);
    kiln_status s = KILN_STATUS_OK;
    if (!h) {
        const char *why = dlerror();
        s = ctx_error(ld->ctx, KILN_STATUS_BACKEND, "cannot load compiled kernels %s: %s", so,
                      why ? why : "dlopen failed");
    } else {
        const char *key = dlsym(h, "kiln_module_key");
        if (!key || memcmp(key, ld->key, SHA256_HEX_BYTES))
            s = ctx_error(ld->ctx, KILN_STATUS_BACKEND,
                          "compiled kernels %s do not carry the key %s they were built for", so,
                          ld->key);
    }
    cc_module *m = s ? NULL : host_alloc(ld->ctx, sizeof *m);
    if (!s && !m) s = ctx_oom(ld->ctx, "compiled module", sizeof *m);
    if (s) {
        if (h) dlclose(h);
        close(fd);
        return s;
    }
    *m = (cc_module){.ctx = ld->ctx, .handle = h, .code_bytes = bytes, .fd = fd};
    memcpy(m->key, ld->key, sizeof m->key);
    *out = m;
    return KILN_STATUS_OK;
}

/* open_module for the object at `so`, through a private copy made here. */
static kiln_status open_copy(const cc_load *ld, const char *so, cc_module **out) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", so);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; /* the fallback copy goes beside the object */
    int fd = open(so, O_RDONLY | O_CLOEXEC), copy = -1;
    if (fd >= 0) copy = objcache_private_copy(fd, slash ? dir : ".", "kiln-cc-object");
    int err = errno;
    if (fd >= 0) close(fd);
    if (copy < 0)
        return ctx_error(ld->ctx, err == ENOMEM ? KILN_STATUS_HOST_OOM : KILN_STATUS_BACKEND,
                         "cannot load compiled kernels %s: %s", so, strerror(err));
    struct stat sb;
    return open_module(ld, so, copy, fstat(copy, &sb) ? 0 : (size_t)sb.st_size, out);
}

/* ------------------------------------------------------------- loading ---- */

static void bump(cc_compiler *st, uint64_t *counter, uint64_t by) {
    pthread_mutex_lock(&st->mu);
    *counter += by;
    pthread_mutex_unlock(&st->mu);
}

/* open_module for a fresh object; a failure keeps the source and says where. */
static kiln_status open_fresh(const cc_load *ld, cc_work *w, cc_module **out) {
    char so[PATH_MAX], src[PATH_MAX], kept[PATH_MAX];
    objcache_path(so, w->tmp, NULL, CC_TMP_OBJECT);
    kiln_status s = open_copy(ld, so, out);
    if (!s || s == KILN_STATUS_HOST_OOM) return s;
    char why[1024];
    kiln_last_error_copy(ld->ctx, why, sizeof why);
    objcache_path(src, w->tmp, NULL, CC_TMP_SOURCE);
    return ctx_error(ld->ctx, s, "%s (generated source kept at %s)", why,
                     keep_source(ld, w, src, kept));
}

/* A process that exits while a compile runs (exit() with a background build, a signal, a
 * crash) leaves its folder <parent>/kiln-cc-<pid>-<n>-XXXXXX behind. Once, the first compile
 * of a context removes those whose process is gone and which have not changed for six
 * hours (a folder of a live process in another PID namespace sharing /tmp looks dead by
 * its pid, but no compile takes hours), and which are ours, are folders (not links to one:
 * everything is done through a descriptor opened without following links), and do not
 * hold CC_KEPT (a folder a message named, kept for the user: load_private). */
#define CC_STALE_SECONDS (6 * 3600)
#define CC_KEPT          "kept-for-its-message"
static void sweep_stale(const cc_load *ld, const char *parent) {
    if (atomic_exchange(&ld->st->swept_stale, true)) return;
    DIR *d = opendir(parent);
    if (!d) return;
    int pfd = dirfd(d);
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        if (sscanf(e->d_name, "kiln-cc-%ld-", &pid) != 1 || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to ask */
        int fd = openat(pfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat sb;
        DIR *sd = NULL;
        if (fstat(fd, &sb) || sb.st_uid != geteuid() || now - sb.st_mtime < CC_STALE_SECONDS ||
            !faccessat(fd, CC_KEPT, F_OK, 0) || !(sd = fdopendir(fd))) {
            close(fd);
            continue;
        }
        for (struct dirent *f; (f = readdir(sd));)
            if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..")) unlinkat(fd, f->d_name, 0);
        closedir(sd); /* closes fd */
        unlinkat(pfd, e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

/* Every compile: in a private temp folder under TMPDIR (made absolute: the compiler runs
 * inside it), never in the cache, so that a cache that cannot be written cannot fail it;
 * a TMPDIR that is missing or cannot be written falls back to /tmp, as a compiler does.
 * The object is loaded from a private copy (open_copy). The folder is removed, unless a
 * message names a file in it. A source that fails is kept in keep_dir (the cache; NULL:
 * none). */
static kiln_status load_private(const cc_load *ld, const char *keep_dir, cc_module **out) {
    const char *env = getenv("TMPDIR");
    char parent[PATH_MAX];
    cc_work w = {.keep_dir = keep_dir};
    snprintf(parent, sizeof parent, "%s", env && *env ? env : "/tmp");
    make_absolute(parent);
    sweep_stale(ld, parent);
    int err = make_tmp(ld, parent, "kiln-cc-", w.tmp);
    if (err && strcmp(parent, "/tmp")) {
        int err2 = make_tmp(ld, "/tmp", "kiln-cc-", w.tmp);
        if (err2)
            return ctx_error(ld->ctx, KILN_STATUS_IO,
                             "cannot create a temp folder for the C compiler under TMPDIR "
                             "(%s: %s) nor under /tmp (%s)",
                             parent, strerror(err), strerror(err2));
        err = 0;
    }
    if (err)
        return ctx_error(ld->ctx, KILN_STATUS_IO,
                         "cannot create a temp folder for the C compiler under %s%s: %s", parent,
                         env && *env ? " (TMPDIR)" : "", strerror(err));
    kiln_status s = run_compiler(ld, &w);
    if (!s) s = open_fresh(ld, &w, out);
    if (!w.keep_tmp) {
        objcache_remove_tmp(w.tmp);
    } else { /* a message names a file here: no later sweep_stale removes it */
        char mark[PATH_MAX + sizeof CC_KEPT + 1];
        snprintf(mark, sizeof mark, "%s/%s", w.tmp, CC_KEPT);
        int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0) close(fd);
    }
    return s;
}

/* The cache cannot be written (read-only, full, over quota, not ours to create): the
 * program still runs, only later runs compile again. Said once per context, on stderr. */
static void say_unwritable(const cc_load *ld, const char *dir, const char *why) {
    if (!atomic_exchange(&ld->st->warned_unwritable, true))
        fprintf(stderr,
                "kiln: the kernel cache \"%s\" (KILN_CACHE_DIR) cannot be written (%s); "
                "kernels are compiled in a private temporary folder and not kept for later "
                "runs (said once per context)\n",
                dir, why);
    bump(ld->st, &ld->st->stats.unwritable, 1);
}

/* A miss: compile, then publish a copy of the very object loaded. Publishing is best
 * effort: when any write or rename of it fails the module is still good, and the cache is
 * only said to be unwritable. */
static kiln_status compile_into_cache(const cc_load *ld, const char *dir, cc_module **out) {
    kiln_status s = load_private(ld, dir, out);
    if (s) return s;
    size_t bytes;
    int err = objcache_publish_fd(dir, ld->key, CC_SUFFIX, (*out)->fd, &bytes);
    if (err) {
        char why[256];
        snprintf(why, sizeof why, "publishing an entry: %s", strerror(err));
        say_unwritable(ld, dir, why);
        return KILN_STATUS_OK;
    }
    uint64_t gone = 0;
    s = objcache_evict(ld->ctx, dir, ld->st->opt->cache.max_bytes, ld->key, &gone);
    if (gone) bump(ld->st, &ld->st->stats.evictions, gone);
    if (s) { /* out of host memory: the entry is published, but this load fails */
        cc_module_unload(*out);
        *out = NULL;
    }
    return s;
}

static kiln_status load_cached(const cc_load *ld, const char *dir, bool cached_only,
                               cc_module **out, bool *from_cache) {
    kiln_status s = objcache_dir_ready(ld->ctx, dir);
    if (s == KILN_STATUS_IO && cached_only) return KILN_STATUS_OK; /* nothing to find there */
    if (s == KILN_STATUS_IO) { /* cannot be made or read: an insecure one is still an error */
        char why[512];
        kiln_last_error_copy(ld->ctx, why, sizeof why);
        say_unwritable(ld, dir, why);
        return load_private(ld, NULL, out);
    }
    if (s) return s;
    size_t bytes;
    int fd;
    char so[PATH_MAX];
    objcache_state e = objcache_verify(dir, ld->key, CC_SUFFIX, &bytes, &fd);
    if (e == OBJCACHE_OK) {
        objcache_path(so, dir, ld->key, CC_SUFFIX);
        s = open_module(ld, so, fd, bytes, out); /* fd: the verified copy, the module's now */
        if (!s) {
            bump(ld->st, &ld->st->stats.disk_hits, 1);
            if (from_cache) *from_cache = true;
            return KILN_STATUS_OK;
        }
        if (s == KILN_STATUS_HOST_OOM) return s;
        objcache_remove_entry(dir, ld->key,
                              CC_SUFFIX); /* intact bytes that will not load: rebuild */
        e = OBJCACHE_CORRUPT;
    }
    if (cached_only && e == OBJCACHE_MISS) return KILN_STATUS_OK; /* a look, not a miss */
    bump(ld->st, &ld->st->stats.disk_misses, 1);
    if (e == OBJCACHE_CORRUPT) bump(ld->st, &ld->st->stats.corrupt_rebuilt, 1);
    return compile_into_cache(ld, dir, out);
}

kiln_status cc_module_load(cc_compiler *cc, const char *source, size_t len, cc_module **out,
                           bool *from_cache) {
    return cc_module_load_tier(cc, source, len, 0, out, from_cache);
}

kiln_status cc_module_load_tier(cc_compiler *cc, const char *source, size_t len, unsigned flags,
                                cc_module **out, bool *from_cache) {
    kiln_context *ctx = cc->ctx;
    if (from_cache) *from_cache = false;
    if (!out || (!source && len))
        return ctx_error(ctx, KILN_STATUS_INVALID_ARGUMENT, "cc_module_load: %s is NULL",
                         out ? "source" : "out");
    *out = NULL;
    cc_load ld = {.ctx = ctx,
                  .st = cc,
                  .source = source ? source : "",
                  .len = len,
                  .background = flags & CC_LOAD_BACKGROUND};
    bool cached_only = flags & CC_LOAD_CACHED_ONLY;
    kiln_status s = compiler_ready(cc); /* the key hashes the compiler's identity */
    if (s) return s;
    ld.parts = plan_parts(ld.source, ld.len, compile_jobs(&ld), ld.cuts);
    compute_key(&ld);
    if (!cc->opt->cache.max_bytes)
        return cached_only ? KILN_STATUS_OK : load_private(&ld, NULL, out);
    return load_cached(&ld, cc->opt->cache.dir, cached_only, out, from_cache);
}

/* ---------------------------------------------------------- the module ---- */

void *cc_module_sym(const cc_module *m, const char *name) {
    return dlsym(m->handle, name);
}

size_t cc_module_code_bytes(const cc_module *m) {
    return m->code_bytes;
}

const char *cc_module_key(const cc_module *m) {
    return m->key;
}

void *cc_module_alloc(cc_module *m, size_t n) {
    cc_owned *o = host_calloc(m->ctx, 1, sizeof *o + n);
    if (!o) return NULL;
    o->n = n;
    o->next = m->owned;
    m->owned = o;
    return o->bytes;
}

void cc_module_unload(cc_module *m) {
    if (!m) return;
    while (m->owned) {
        cc_owned *o = m->owned;
        m->owned = o->next;
        host_free(m->ctx, o, sizeof *o + o->n);
    }
    dlclose(m->handle);
    close(m->fd);
    host_free(m->ctx, m, sizeof *m);
}

void cc_get_stats(cc_compiler *cc, cc_stats *out) {
    pthread_mutex_lock(&cc->mu);
    *out = cc->stats;
    pthread_mutex_unlock(&cc->mu);
}
