/* test_cuda_emulate.c — the CUDA dialect's semantics, on the CPU: the CUDA C printed for a
 * program is compiled as C++ by the system's g++ against a small shim that plays the GPU
 * (each block's 256 threads are real threads; __syncthreads is a barrier of the block,
 * a warp shuffle an exchange between the warp's 32 threads behind a barrier of the warp),
 * and run in place of the CPU's kernels inside an ordinary CPU executable, then compared
 * with the reference interpreter. So the thread-per-element, warp-per-element and
 * block-per-element forms, the shuffles and shared-memory combines, the 16-byte vector
 * accesses and the column form are checked for what they compute, not only that NVRTC
 * accepts them (test_cuda_nvrtc) — on machines without a GPU. The fused attention kernel
 * (src/backend/cuda/cuda_attention.c) runs the same way, on host buffers, against the
 * reference: tiles cut short, chunked head sizes, causal or not, grouped heads, fills, on
 * the CUDA cores and on tensor cores (bf16, f16: mma.sync played by kiln_emu_mma); and the
 * argsort kernel (src/backend/cuda/cuda_sort.c): shared-memory rows, the fallback past
 * them, top_k's order, every dtype; and the sorted scatter_add_rows kernels
 * (src/backend/cuda/cuda_scatter.c), against a plain loop of the semantics, bit for bit: one
 * to 64 chunks, repeated and out-of-range indices, every combine, dtype and index dtype; and
 * kiln_gemm_ptrs, the pointers of a batched product's matrices (cuda_lib.c); and the
 * convolution's implicit-GEMM kernels (src/backend/cuda/cuda_conv.c), every kind against a
 * plain loop of kn_conv_desc's definition, over layouts, strides, dilations, groups and
 * splits (the launches are 2-D there: groups along y). Grids
 * are 1 to 3 blocks, so the grid-stride loops run more than once. Products, permutes and
 * scatter-adds inside programs stay the CPU's (they are library ops, not printed code).
 *
 * A long run (minutes: a barrier per warp shuffle, 256 threads on a few cores), so it runs
 * only with KILN_TEST_CUDA_EMULATE=1 (f32 and i64 forms, one random program and one
 * gradient), and more with KILN_TEST_PROGRAMS=n as well (every dtype, n random programs,
 * two gradients, the small models). KILN_EMU_ONLY=<name> runs one program;
 * KILN_EMU_CPU=1 keeps the CPU's kernels (the same comparison, for the error the CPU
 * itself has); KILN_EMU_KERNELS=lo-hi emulates only those kernels (to bisect);
 * KILN_EMU_KEEP=1 keeps the printed sources (kept anyway when a check fails). Skipped (77)
 * otherwise, or without g++. */
#define KILN_NO_LOCATION_MACROS
#include "base/half.h"
#include "backend/cpu/cpu.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_half.h"
#include "backend/cuda/cuda_program.h"
#include "compile/compile.h"
#include "passes/passes.h"
#include "compare.h"
#include "ewops.h"
#include "randprog.h"
#include "split_programs.h"
#include "test.h"

#include "../examples/models.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#define THREADS 256

static kiln_context *ctx;
static char dir[] = "/tmp/kiln-cuda-emu-XXXXXX";
static uint64_t seed = 0x13198a2e03707344ull;

/* ------------------------------------------------------------- the GPU ---- */

static pthread_barrier_t block_bar, warp_bar[THREADS / 32], start_bar, end_bar;
static uint64_t exchange[THREADS];
static _Thread_local unsigned emu_tid, emu_block;
/* the launch's blocks, all of them and along x (block b is (b % x, b / x): a 2-D grid's y
 * is the convolution kernels' group) */
static unsigned emu_grid, emu_grid_x;
/* the launch the block's threads run next (set before start_bar, read after it) */
static void (*job_body)(void *);
static void *job_arg;
static bool job_quit;
static pthread_t workers[THREADS];

unsigned kiln_emu_tid(void);
unsigned kiln_emu_bid(void);
unsigned kiln_emu_bid_y(void);
unsigned kiln_emu_grid(void);
unsigned kiln_emu_grid_y(void);
void kiln_emu_sync(void);
uint64_t kiln_emu_xor(uint64_t v, int o);
void kiln_emu_bar(unsigned id, unsigned n);
void kiln_emu_mma(int f16, float *d, const uint32_t *a, const uint32_t *b);
void kiln_emu_run(unsigned grid, void (*body)(void *), void *arg);
void kiln_emu_run2(unsigned gx, unsigned gy, void (*body)(void *), void *arg);

unsigned kiln_emu_tid(void) {
    return emu_tid;
}
unsigned kiln_emu_bid(void) {
    return emu_block % emu_grid_x;
}
unsigned kiln_emu_bid_y(void) {
    return emu_block / emu_grid_x;
}
unsigned kiln_emu_grid(void) {
    return emu_grid_x;
}
unsigned kiln_emu_grid_y(void) {
    return emu_grid / emu_grid_x;
}
void kiln_emu_sync(void) {
    pthread_barrier_wait(&block_bar);
}
/* __shfl_xor_sync: every lane of the warp publishes, then reads lane ^ o */
uint64_t kiln_emu_xor(uint64_t v, int o) {
    unsigned w = emu_tid / 32;
    exchange[emu_tid] = v;
    pthread_barrier_wait(&warp_bar[w]);
    uint64_t r = exchange[w * 32 + ((emu_tid % 32) ^ (unsigned)o)];
    pthread_barrier_wait(&warp_bar[w]);
    return r;
}
/* mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: d (16 x 8, f32) += a (16 x 16) b
 * (16 x 8), the warp's fragments as PTX lays them out. Lane 4 g + t holds, two 16-bit
 * values a register (the lower index in the low half): a[x], row g + 8 (x & 1), columns
 * 2 t + 8 (x >> 1) and the next; b[x], rows 2 t + 8 x and the next, column g; d[x], row
 * g + 8 (x >> 1), column 2 t + (x & 1). Each lane publishes its a and b, then computes its
 * own d from the warp's (products exact in f32, added in order of k). */
static uint32_t mma_a[THREADS][4], mma_b[THREADS][2];
static float mma_half(int f16, uint32_t reg, int hi) {
    uint16_t h = (uint16_t)(reg >> (16 * hi));
    return f16 ? kn_f16_to_f32(h) : kn_bf16_to_f32(h);
}
void kiln_emu_mma(int f16, float *d, const uint32_t *a, const uint32_t *b) {
    unsigned w = emu_tid / 32, g = emu_tid % 32 / 4, t = emu_tid % 4;
    memcpy(mma_a[emu_tid], a, sizeof mma_a[0]);
    memcpy(mma_b[emu_tid], b, sizeof mma_b[0]);
    pthread_barrier_wait(&warp_bar[w]);
    for (int x = 0; x < 4; x++) {
        unsigned row = g + 8 * (unsigned)(x >> 1), col = 2 * t + (unsigned)(x & 1);
        float s = d[x];
        for (unsigned kk = 0; kk < 16; kk++) {
            /* A[row][kk] is lane 4 (row % 8) + kk % 8 / 2's register (row >= 8) + 2 (kk >=
             * 8); B[kk][col] lane 4 col + kk % 8 / 2's register kk >= 8; half kk % 2 */
            const uint32_t *la = mma_a[w * 32 + 4 * (row % 8) + kk % 8 / 2];
            const uint32_t *lb = mma_b[w * 32 + 4 * col + kk % 8 / 2];
            s += mma_half(f16, la[(row >= 8) + 2 * (kk >= 8)], kk % 2) *
                 mma_half(f16, lb[kk >= 8], kk % 2);
        }
        d[x] = s;
    }
    pthread_barrier_wait(&warp_bar[w]);
}
/* __barrier_sync_count(id, n), PTX's bar.sync id, n: named barrier id of the block (1 to 15;
 * 0 is __syncthreads') opens when n threads, whole warps, have reached it. A short row's
 * group of warps waits on one of its own (print_cuda.c). A count that changes while the
 * barrier fills, or threads that never come (a minute), stop the run with a message. */
static pthread_mutex_t named_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t named_cv = PTHREAD_COND_INITIALIZER;
static unsigned named_in[16], named_n[16], named_gen[16];
void kiln_emu_bar(unsigned id, unsigned n) {
    pthread_mutex_lock(&named_mu);
    if (id < 1 || id > 15 || !n || n % 32 || n > THREADS || (named_in[id] && named_n[id] != n)) {
        fprintf(stderr, "emulated bar.sync %u, %u: not a barrier of whole warps\n", id, n);
        abort();
    }
    named_n[id] = n;
    unsigned gen = named_gen[id];
    if (++named_in[id] == n) {
        named_in[id] = 0;
        named_gen[id]++;
        pthread_cond_broadcast(&named_cv);
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    while (named_gen[id] == gen)
        if (pthread_cond_timedwait(&named_cv, &named_mu, &until) && named_gen[id] == gen) {
            fprintf(stderr, "emulated bar.sync %u, %u: %u threads came\n", id, n, named_in[id]);
            abort();
        }
    pthread_mutex_unlock(&named_mu);
}

/* One block's threads, made once: each launch runs its blocks one after another (a
 * barrier of the block between them, as __shared__ arrays are reused). */
static void *worker(void *p) {
    emu_tid = (unsigned)(uintptr_t)p;
    for (;;) {
        pthread_barrier_wait(&start_bar);
        if (job_quit) return NULL;
        for (unsigned b = 0; b < emu_grid; b++) {
            emu_block = b;
            job_body(job_arg);
            pthread_barrier_wait(&block_bar);
        }
        pthread_barrier_wait(&end_bar);
    }
}

void kiln_emu_run(unsigned grid, void (*body)(void *), void *arg) {
    kiln_emu_run2(grid, 1, body, arg);
}

void kiln_emu_run2(unsigned gx, unsigned gy, void (*body)(void *), void *arg) {
    emu_grid = gx * gy;
    emu_grid_x = gx;
    job_body = body;
    job_arg = arg;
    pthread_barrier_wait(&start_bar);
    pthread_barrier_wait(&end_bar);
}

static void gpu_start(void) {
    pthread_barrier_init(&block_bar, NULL, THREADS);
    for (int w = 0; w < THREADS / 32; w++) pthread_barrier_init(&warp_bar[w], NULL, 32);
    pthread_barrier_init(&start_bar, NULL, THREADS + 1);
    pthread_barrier_init(&end_bar, NULL, THREADS + 1);
    for (uintptr_t i = 0; i < THREADS; i++)
        if (pthread_create(&workers[i], NULL, worker, (void *)i)) abort();
}

static void gpu_stop(void) {
    job_quit = true;
    pthread_barrier_wait(&start_bar);
    for (int i = 0; i < THREADS; i++) pthread_join(workers[i], NULL);
}

/* What the printed CUDA C needs of CUDA, in plain C++ (no system header: the printed
 * code declares its own int64_t, which must not meet glibc's). */
static const char shim[] =
    "#define __global__\n#define __device__\n#define __forceinline__ inline\n"
    "#define __restrict__\n#define __launch_bounds__(...)\n#define __shared__ static\n"
    "extern \"C\" { unsigned kiln_emu_tid(void); unsigned kiln_emu_bid(void);\n"
    "unsigned kiln_emu_bid_y(void); unsigned kiln_emu_grid_y(void);\n"
    "unsigned kiln_emu_grid(void); void kiln_emu_sync(void);\n"
    "unsigned long long kiln_emu_xor(unsigned long long v, int o);\n"
    "void kiln_emu_bar(unsigned id, unsigned n);\n"
    "void kiln_emu_mma(int f16, float *d, const unsigned *a, const unsigned *b);\n"
    "void kiln_emu_run(unsigned grid, void (*body)(void *), void *arg);\n"
    "void kiln_emu_run2(unsigned gx, unsigned gy, void (*body)(void *), void *arg);\n"
    "float expf(float); float logf(float); float log1pf(float); float sqrtf(float);\n"
    "float powf(float, float); float floorf(float); float fabsf(float);\n"
    "float sinf(float); float cosf(float); float erff(float);\n"
    "double sin(double); double cos(double); double erf(double); double erfc(double);\n"
    "double nextafter(double, double);\n"
    "double exp(double); double log(double); double log1p(double); double sqrt(double);\n"
    "double pow(double, double); double floor(double); double fabs(double); double "
    "tanh(double);\n"
    /* the registry's other math functions (ir.h), CUDA's names */
    "float tanf(float); float asinf(float); float acosf(float); float atanf(float);\n"
    "float erfcf(float); float cbrtf(float); float ceilf(float); float rintf(float);\n"
    "float roundf(float); float atan2f(float, float); float lgammaf(float);\n"
    "float fmodf(float, float);\n"
    "double tan(double); double sinh(double); double cosh(double); double asin(double);\n"
    "double acos(double); double atan(double); double asinh(double); double acosh(double);\n"
    "double atanh(double); double expm1(double); double cbrt(double); double ceil(double);\n"
    "double rint(double); double round(double); double atan2(double, double);\n"
    "double lgamma(double); double copysign(double, double); double fmod(double, double);\n"
    "double fma(double, double, double); }\n"
    "struct kiln_emu_dim { unsigned x, y, z; };\n"
    "#define threadIdx (kiln_emu_dim{kiln_emu_tid(), 0u, 0u})\n"
    "#define blockIdx (kiln_emu_dim{kiln_emu_bid(), kiln_emu_bid_y(), 0u})\n"
    "#define blockDim (kiln_emu_dim{256u, 1u, 1u})\n"
    "#define gridDim (kiln_emu_dim{kiln_emu_grid(), kiln_emu_grid_y(), 1u})\n"
    "#define __syncthreads kiln_emu_sync\n#define __barrier_sync_count kiln_emu_bar\n"
    "#define INFINITY __builtin_inff()\n#define NAN __builtin_nanf(\"\")\n"
    "inline unsigned __float_as_uint(float f) { unsigned u; __builtin_memcpy(&u, &f, 4); "
    "return u; }\n"
    "inline float __uint_as_float(unsigned u) { float f; __builtin_memcpy(&f, &u, 4); return f; "
    "}\n"
    "inline float __int_as_float(int u) { float f; __builtin_memcpy(&f, &u, 4); return f; }\n"
    "inline long long __double_as_longlong(double f) { long long u; __builtin_memcpy(&u, &f, 8); "
    "return u; }\n"
    "inline double __longlong_as_double(long long u) { double f; __builtin_memcpy(&f, &u, 8); "
    "return f; }\n"
    "inline int __popc(unsigned u) { return __builtin_popcount(u); }\n"
    "inline int __popcll(unsigned long long u) { return __builtin_popcountll(u); }\n"
    "inline int __clz(int u) { return u ? __builtin_clz((unsigned)u) : 32; }\n"
    "inline int __clzll(long long u) { return u ? __builtin_clzll((unsigned long long)u) : 64; }\n"
    "template <class T> T __shfl_xor_sync(unsigned, T v, int o) {\n"
    "    unsigned long long b = 0; __builtin_memcpy(&b, &v, sizeof v);\n"
    "    b = kiln_emu_xor(b, o); T r; __builtin_memcpy(&r, &b, sizeof r); return r; }\n"
    "struct alignas(16) float4 { float x, y, z, w; };\n"
    "struct alignas(16) int4 { int x, y, z, w; };\n"
    "struct alignas(16) uint4 { unsigned x, y, z, w; };\n"
    "struct alignas(8) uint2 { unsigned x, y; };\n"
    /* any buffer pointer, as the kernel's parameter type wants it */
    "struct kiln_emu_any { void *p; template <class T> operator T *() const { return (T *)p; } "
    "};\n";

/* The printed CUDA C of e's program, plus for each loop kernel a function with the CPU
 * kernel's signature that runs the CUDA kernel over `grid` blocks (once, from the call
 * whose range starts at 0: the CPU backend splits the range over its pool). */
static char *emulation_source(kiln_executable *e, cgen_kernel *cuda) {
    strbuf sb;
    sb_init(&sb, ctx);
    sb_append(&sb, shim);
    if (cgen_program_dialect(e->g, &e->plan, CGEN_DIALECT_CUDA, &sb, cuda)) {
        sb_free(&sb);
        return NULL;
    }
    for (uint32_t i = 0; i < e->plan.n_kernels; i++) {
        const fkernel *k = &e->plan.kernels[i];
        if (k->kind != FK_LOOP || !cuda[i].items) continue;
        uint32_t nb = k->n_inputs + k->n_roots;
        sb_printf(&sb, "struct emu_args%u { void *const *b; };\n", i);
        /* a split reduction: its part kernel first, both with the scratch buffer the CPU
         * backend passes after the buffers (the handle says one part of all the bytes) */
        for (int part = cuda[i].parts ? 1 : 0; part >= 0; part--) {
            const char *sfx = part ? "_part" : "";
            char items[64];
            long long n = (long long)cuda[i].items;
            unsigned grid = (unsigned)(n < 3 && !part ? n : 3);
            if (part) /* the part kernel's items, as the program states them (cgen.h) */
                snprintf(items, sizeof items, "kiln_k%u_parts[0]", i);
            else
                snprintf(items, sizeof items, "%lldLL", n);
            sb_printf(&sb,
                      "static void emu_body%u%s(void *a) {\n"
                      "    void *const *b = ((emu_args%u *)a)->b;\n    kiln_k%u%s(",
                      i, sfx, i, i, sfx);
            for (uint32_t j = 0; j < nb + (cuda[i].parts ? 1 : 0); j++)
                sb_printf(&sb, "kiln_emu_any{b[%u]}, ", j);
            sb_printf(&sb, "%s);\n}\n", items);
            sb_printf(&sb,
                      "extern \"C\" void emu_k%u%s(void *const *b, long long begin, long long "
                      "end) {\n"
                      "    (void)end; if (begin) return;\n"
                      "    emu_args%u a = {b}; kiln_emu_run(%uu, emu_body%u%s, &a);\n}\n",
                      i, sfx, i, grid, i, sfx);
        }
    }
    return sb_take(&sb);
}

static int n_programs, n_split;

/* What an emulated executable holds until its run is over: the loaded emulation and the
 * handles its steps point at (one per executable, its loop bodies' included). */
typedef struct emu_lib {
    void *lib;
    cpu_kernel *handles;
    cgen_kernel *cuda;
} emu_lib;

#define EMU_MAX_LIBS 16

/* Replaces e's loop kernels by their emulated CUDA (printed from e's IR, compiled by g++,
 * loaded), then those of the executables its control steps run (loops and branches,
 * compiled with e's keep_ir), recursively. False after a failed check. */
static bool emulate(kiln_executable *e, const char *name, emu_lib *libs, int *n_libs) {
    if (*n_libs >= EMU_MAX_LIBS) {
        CHECK_MSG(0, "%s: too many sub-graphs", name);
        return false;
    }
    emu_lib *L = &libs[(*n_libs)++];
    uint32_t nk = e->plan.n_kernels;
    L->cuda = calloc(nk + 1, sizeof *L->cuda);
    char *src = emulation_source(e, L->cuda);
    CHECK_MSG(src != NULL, "%s: printing CUDA: %s", name, kiln_last_error(ctx));
    char cu[256], so[256], cmd[2048];
    snprintf(cu, sizeof cu, "%s/%s.cpp", dir, name);
    snprintf(so, sizeof so, "%s/%s.so", dir, name);
    FILE *f = src ? fopen(cu, "w") : NULL;
    if (f) fputs(src, f), fclose(f);
    kiln_string_free(ctx, src);
    snprintf(cmd, sizeof cmd,
             "g++ -std=c++17 -O1 -w -shared -fPIC -fno-fast-math -ffp-contract=off -o '%s' "
             "'%s' 2>'%s.log'",
             so, cu, cu);
    int rc = f ? system(cmd) : -1;
    CHECK_MSG(rc == 0, "%s: g++ failed (see %s.log)", name, cu);
    void *lib = rc == 0 ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    CHECK_MSG(rc || lib, "%s: dlopen: %s", name, dlerror());
    L->lib = lib;
    const char *range = getenv("KILN_EMU_KERNELS"); /* "lo-hi": only those, to bisect */
    unsigned lo = 0, hi = ~0u;
    if (range) sscanf(range, "%u-%u", &lo, &hi);
    /* the emulated kernels behind CPU kernel handles (cpu.h) */
    cpu_kernel *handles = L->handles = calloc(nk + 1, sizeof *handles);
    cgen_kernel *cuda = L->cuda;
    for (uint32_t i = 0; lib && i < nk && !getenv("KILN_EMU_CPU"); i++) {
        if (e->plan.kernels[i].kind != FK_LOOP || !cuda[i].items || i < lo || i > hi) continue;
        char sym[32];
        snprintf(sym, sizeof sym, "emu_k%u", i);
        void *fn = dlsym(lib, sym);
        memcpy(&handles[i].fn, &fn, sizeof fn);
        if (cuda[i].parts) {
            snprintf(sym, sizeof sym, "emu_k%u_part", i);
            fn = dlsym(lib, sym);
            memcpy(&handles[i].part, &fn, sizeof fn);
            snprintf(sym, sizeof sym, "kiln_k%u_parts", i);
            const int64_t *pp = dlsym(lib, sym);
            CHECK_MSG(pp != NULL, "%s: kernel %u has a part kernel but no %s", name, i, sym);
            handles[i].parts = 1; /* one call: the emulated grid covers the parts */
            handles[i].part_bytes = pp ? pp[1] : 0;
            n_split++;
        }
        for (uint32_t k = 0; k < e->n_steps; k++) { /* the kernel's launch, one call */
            exec_step *st = &e->steps[k];
            if (st->kind != EXEC_STEP_LOOP || st->kernel != i) continue;
            st->loop.fn = &handles[i];
            st->loop.items = st->loop.grain = cuda[i].items;
        }
    }
    bool ok = lib != NULL;
    for (uint32_t c = 0; ok && c < e->n_ctls; c++)
        for (uint32_t k = 0; ok && k < e->ctls[c].n_subs; k++) {
            char sub[160];
            snprintf(sub, sizeof sub, "%s_c%u_%u", name, c, k);
            CHECK_MSG(e->ctls[c].subs[k]->g != NULL, "%s: a sub-graph kept no IR", sub);
            ok = e->ctls[c].subs[k]->g && emulate(e->ctls[c].subs[k], sub, libs, n_libs);
        }
    return ok;
}

/* g compiled for the CPU, its loop kernels (and its loop bodies') replaced by the emulated
 * CUDA ones, run on random arguments and compared with the reference. */
static void check(kiln_graph *g, const char *name, const kiln_compile_options *opts, double tol) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && strcmp(only, name)) return;
    kiln_executable *e = NULL;
    kiln_compile_options ko = opts ? *opts : (kiln_compile_options){0};
    ko.keep_ir = true; /* the CUDA printer reads the graph and the fusion plan */
    kiln_status s = kiln_compile(g, &ko, &e);
    CHECK_MSG(!s, "%s: compile: %s", name, kiln_last_error(ctx));
    if (s) return;
    emu_lib libs[EMU_MAX_LIBS] = {{0}};
    int n_libs = 0;
    bool lib = emulate(e, name, libs, &n_libs);
    char cu[256];
    snprintf(cu, sizeof cu, "%s/%s.cpp", dir, name);
    if (lib) {
        int np = kiln_graph_num_parameters(g), n_out = kiln_graph_num_outputs(g), ok = 1;
        kiln_array **args = calloc((size_t)np + 1, sizeof *args);
        kiln_array **want = calloc((size_t)n_out + 1, sizeof *want);
        kiln_array **got = calloc((size_t)n_out + 1, sizeof *got);
        for (int i = 0; i < np; i++) {
            const ir_node *p = &g->nodes[g->params[i]];
            args[i] = cmp_random_array(ctx, p->dtype, p->shape.rank, p->shape.dims, &seed);
        }
        if (kiln_interpret(g, np, args, n_out, want) ||
            kiln_executable_run(e, np, args, n_out, got)) {
            fprintf(stderr, "%s: %s\n", name, kiln_last_error(ctx));
            ok = 0;
        }
        for (int i = 0; ok && i < n_out; i++) {
            char what[96];
            snprintf(what, sizeof what, "%s output %d", name, i);
            ok &= cmp_arrays(got[i], want[i], tol, 1e-9, what);
        }
        CHECK_MSG(ok, "%s: emulated CUDA != reference (source: %s)", name, cu);
        n_programs++;
        for (int i = 0; i < n_out; i++) kiln_array_destroy(want[i]), kiln_array_destroy(got[i]);
        for (int i = 0; i < np; i++) kiln_array_destroy(args[i]);
        free(args), free(want), free(got);
    }
    kiln_executable_destroy(e);
    for (int i = 0; i < n_libs; i++) {
        if (libs[i].lib) dlclose(libs[i].lib);
        free(libs[i].cuda), free(libs[i].handles);
    }
}

static bool finish(kiln_graph *g, int n, kiln_value *outs, const char *name) {
    kiln_status s = kiln_graph_finish(g, n, outs);
    CHECK_MSG(!s, "%s did not build: %s", name, kiln_last_error(ctx));
    if (s) kiln_graph_destroy(g);
    return !s;
}

/* Each form: elementwise four at a time (and not: an odd last axis), rows by warps and by
 * blocks, keepdims rows, columns, everything, nested, max/min with NaN flags, integers. */
static void test_forms(void) {
    static const kiln_dtype types[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_I32,
                                       KILN_DTYPE_I64};
    /* a barrier per shuffle is slow with 256 threads on few cores: f32 and i64 by default */
    for (int d = 0; d < 4; d++) {
        kiln_dtype t = types[d];
        if (!getenv("KILN_TEST_PROGRAMS") && (d == 1 || d == 2)) continue;
        char name[32];
        snprintf(name, sizeof name, "forms_%s", kiln_dtype_name(t));
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t wide[2] = {4100, 8}, narrow[2] = {6, 300}, odd[2] = {5, 37}, cube[3] = {3, 9, 70};
        kiln_value x = kiln_parameter(g, "x", t, 2, wide), y = kiln_parameter(g, "y", t, 2, narrow);
        kiln_value z = kiln_parameter(g, "z", t, 2, odd), c = kiln_parameter(g, "c", t, 3, cube);
        kiln_value outs[16];
        int n = 0, ax1[1] = {1}, ax0[1] = {0}, ax02[2] = {0, 2};
        outs[n++] = kiln_add(g, kiln_mul(g, x, x), x);     /* vector accesses */
        outs[n++] = kiln_sub(g, z, kiln_mul(g, z, z));     /* an odd last axis: scalar */
        outs[n++] = kiln_reduce_sum(g, x, 1, ax1, false);  /* warp per row */
        outs[n++] = kiln_reduce_max(g, x, 1, ax1, true);   /* keepdims: block per row */
        outs[n++] = kiln_reduce_min(g, y, 1, ax1, false);  /* few rows: block */
        outs[n++] = kiln_reduce_sum(g, y, 1, ax0, false);  /* columns */
        outs[n++] = kiln_reduce_max(g, x, 1, ax0, true);   /* columns, keepdims */
        outs[n++] = kiln_reduce_sum(g, z, 0, NULL, false); /* everything */
        outs[n++] = kiln_reduce_min(g, c, 2, ax02, false); /* two axes at once */
        kiln_value m = kiln_reduce_max(g, y, 1, ax1, true);
        outs[n++] = kiln_reduce_sum(g, kiln_sub(g, y, m), 1, ax1, false); /* nested */
        if (finish(g, n, outs, name)) {
            check(g, name, NULL, 1e-5);
            kiln_graph_destroy(g);
        }
    }
    /* reductions to one value or a few, split over KN_CUDA_PARTS blocks: the split loop
     * outer (its inner loop lane-strided), the split loop itself lane-strided (1-D), a
     * few values at once, NaN flags through the parts, wrapping integer sums; column
     * splits (32 columns a block, 8 lanes a column) with a last block of columns cut
     * short, a NaN column, bf16 columns */
    {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "split", &g);
        int64_t d2[2] = {300, 400}, d1 = 70001, d3[3] = {40, 3, 600};
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d2);
        kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 1, &d1);
        kiln_value c = kiln_parameter(g, "c", KILN_DTYPE_F32, 3, d3);
        kiln_value k = kiln_parameter(g, "k", KILN_DTYPE_I64, 1, &d1);
        int ax02[2] = {0, 2};
        int64_t dcol[2] = {3000, 300};
        kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, dcol);
        int64_t dh[2] = {2048, 72};
        kiln_value h = kiln_parameter(g, "h", KILN_DTYPE_BF16, 2, dh);
        int ax0[1] = {0};
        kiln_value outs[10] = {
            kiln_reduce_sum(g, w, 1, ax0, false), /* columns: few, long (a bias gradient) */
            kiln_reduce_max(g, kiln_exp(g, w), 1, ax0, true),
            kiln_reduce_sum(g, kiln_mul(g, x, x), 0, NULL, false),
            kiln_reduce_max(g, v, 0, NULL, false),
            kiln_reduce_sum(g, c, 2, ax02, false),
            kiln_reduce_min(g, kiln_log(g, x), 0, NULL, true), /* NaN: some x < 0 */
            kiln_reduce_sum(g, k, 0, NULL, false),
            kiln_reduce_max(g, kiln_exp(g, c), 0, NULL, false),
            kiln_reduce_min(g, kiln_log(g, w), 1, ax0, false), /* NaN: some w < 0 */
            kiln_reduce_sum(g, kiln_convert(g, h, KILN_DTYPE_F32), 1, ax0, false)};
        if (finish(g, 10, outs, "split")) {
            check(g, "split", NULL, 1e-5);
            kiln_graph_destroy(g);
        }
    }
    /* a global norm's sums and a logsumexp (tests/split_programs.h) */
    kiln_graph *gn = split_norm_program(ctx);
    CHECK_MSG(gn != NULL, "norm did not build: %s", kiln_last_error(ctx));
    if (gn) {
        check(gn, "norm", NULL, 1e-5);
        kiln_graph_destroy(gn);
    }
    /* NaN must win max/min and survive sums, through the lanes' combine */
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "nan", &g);
    int64_t d2[2] = {64, 700};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d2);
    kiln_value r = kiln_log(g, x); /* negative inputs give NaN in some rows */
    int ax1[1] = {1};
    kiln_value outs[3] = {kiln_reduce_max(g, r, 1, ax1, false), kiln_reduce_min(g, r, 1, ax1, true),
                          kiln_reduce_sum(g, r, 1, ax1, false)};
    if (finish(g, 3, outs, "nan")) {
        check(g, "nan", NULL, 1e-5);
        kiln_graph_destroy(g);
    }
    /* row values (CF_ROW, a block per row): a softmax with NaN rows, a rank-3 layer norm,
     * a softmax over a product's dying result, in place (a barrier after the prologue),
     * and rows held on chip or too long for it */
    g = NULL;
    kiln_graph_create(ctx, "rows", &g);
    {
        int64_t dr[2] = {40, 700}, dn[3] = {3, 9, 70}, dk = 70, dw[2] = {700, 700};
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, dr);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 3, dn);
        kiln_value s = kiln_parameter(g, "s", KILN_DTYPE_F32, 1, &dk);
        kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, dw);
        kiln_value p = kiln_mul(g, kiln_matmul(g, a, w), kiln_scalar(g, KILN_DTYPE_F32, 0.01));
        /* rows held on chip (schedule.c, row caches): two caches at once, one cache
         * taking x then the kept exp(x - max) (rows of 8192), and rows too long for them */
        int64_t dl[2] = {64, 8192}, dx[2] = {64, 12000};
        kiln_value l = kiln_parameter(g, "l", KILN_DTYPE_F32, 2, dl);
        kiln_value l2 = kiln_parameter(g, "l2", KILN_DTYPE_F32, 2, dl);
        kiln_value lx = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, dx);
        kiln_value rows[8] = {kiln_softmax(g, kiln_log(g, a), -1),
                              kiln_layer_norm(g, b, s, s, 1e-5),
                              kiln_matmul(g, kiln_softmax(g, p, -1), w),
                              kiln_log_softmax(g, a, -1),
                              kiln_softmax(g, l, -1),
                              kiln_log_softmax(g, l2, -1),
                              kiln_softmax(g, lx, -1),
                              kiln_rms_norm(g, lx, (kiln_value){0, 0}, -1, 1e-6)};
        if (finish(g, 8, rows, "rows")) {
            check(g, "rows", NULL, 1e-5);
            kiln_graph_destroy(g);
        }
    }
    /* normalisations over a middle axis: the column form through keepdims reshapes */
    g = NULL;
    kiln_graph_create(ctx, "axes", &g);
    {
        int64_t dm[3] = {3, 50, 70};
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 3, dm);
        int mid = 1;
        kiln_value o[3] = {kiln_softmax(g, a, 1), kiln_logsumexp(g, a, 1, &mid, false),
                           kiln_rms_norm(g, a, (kiln_value){0, 0}, 1, 1e-6)};
        if (finish(g, 3, o, "axes")) {
            check(g, "axes", NULL, 1e-5);
            kiln_graph_destroy(g);
        }
    }
    /* NCHW -> NHWC with 3 channels, normalised per channel: a short last axis merged into
     * the one before (kdesc.h, KD_SHORT_ROW), its chunks whole rows of channels */
    g = NULL;
    kiln_graph_create(ctx, "short_rows", &g);
    {
        int64_t dn[4] = {2, 3, 30, 41}, nhwc[4] = {2, 30, 41, 3}, dch = 3;
        int perm[4] = {0, 2, 3, 1}, last = 3;
        kiln_value t = kiln_transpose(g, kiln_parameter(g, "x", KILN_DTYPE_F32, 4, dn), perm);
        kiln_value m = kiln_parameter(g, "m", KILN_DTYPE_F32, 1, &dch);
        kiln_value o[2] = {t,
                           kiln_mul(g, kiln_sub(g, t, kiln_broadcast_in_dim(g, m, 4, nhwc, &last)),
                                    kiln_broadcast_in_dim(g, m, 4, nhwc, &last))};
        if (finish(g, 2, o, "short_rows")) {
            check(g, "short_rows", NULL, 1e-6);
            kiln_graph_destroy(g);
        }
    }
    /* short rows, several a block (schedule.c, row_groups): four at a time, eight at a
     * time (16-bit), one at a time, their count no multiple of the rows a block takes */
    g = NULL;
    kiln_graph_create(ctx, "row_groups", &g);
    {
        int64_t d64[2] = {301, 64}, d24[2] = {77, 24}, d37[2] = {50, 37};
        kiln_value a = kiln_parameter(g, "a", KILN_DTYPE_F32, 2, d64);
        kiln_value h = kiln_parameter(g, "h", KILN_DTYPE_BF16, 2, d24);
        kiln_value o = kiln_parameter(g, "o", KILN_DTYPE_F32, 2, d37);
        kiln_value rg[3] = {kiln_add(g, kiln_mul(g, a, a), kiln_exp(g, a)),
                            kiln_mul(g, kiln_tanh(g, h), h), kiln_sub(g, o, kiln_mul(g, o, o))};
        if (finish(g, 3, rg, "row_groups")) {
            check(g, "row_groups", NULL, 1e-5);
            kiln_graph_destroy(g);
        }
    }
    /* sin, cos, erf and the composites over them: libm's names in CUDA C (sinf, erff) */
    g = NULL;
    kiln_graph_create(ctx, "new_ops", &g);
    int64_t d3[2] = {48, 300}, dv = 300, dc[2] = {48, 1};
    kiln_value v = kiln_parameter(g, "v", KILN_DTYPE_F32, 2, d3);
    kiln_value sc = kiln_parameter(g, "scale", KILN_DTYPE_F32, 1, &dv);
    kiln_value cond = kiln_parameter(g, "cond", KILN_DTYPE_I32, 2, dc);
    kiln_value more[7] = {
        kiln_sin(g, kiln_mul(g, v, kiln_scalar(g, KILN_DTYPE_F32, 40))),
        kiln_cos(g, v),
        kiln_erf(g, kiln_mul(g, v, kiln_scalar(g, KILN_DTYPE_F32, 3))),
        kiln_gelu(g, v, false),
        kiln_silu(g, v),
        kiln_rms_norm(g, v, sc, -1, 1e-6),
        kiln_clip(g, kiln_where(g, cond, v, sc), kiln_neg(g, kiln_abs(g, sc)), kiln_abs(g, sc))};
    if (finish(g, 7, more, "new_ops")) {
        check(g, "new_ops", NULL, 1e-5);
        kiln_graph_destroy(g);
    }
    /* bf16 and f16 draws: kiln_random_*_bf16 / _f16 in CUDA C, the same bits as the
     * reference's (so a tolerance of 0) */
    g = NULL;
    kiln_graph_create(ctx, "random16", &g);
    {
        int64_t dk = 2, dr[2] = {33, 70};
        kiln_value key = kiln_parameter(g, "key", KILN_DTYPE_I32, 1, &dk);
        kiln_value o[4] = {kiln_random_uniform(g, key, KILN_DTYPE_BF16, 2, dr, 0, 1),
                           kiln_random_normal(g, key, KILN_DTYPE_BF16, 2, dr),
                           kiln_random_uniform(g, key, KILN_DTYPE_F16, 2, dr, -3, 5.5),
                           kiln_random_normal(g, key, KILN_DTYPE_F16, 2, dr)};
        if (finish(g, 4, o, "random16")) {
            check(g, "random16", NULL, 0);
            kiln_graph_destroy(g);
        }
    }
}

/* bf16 and f16 (the kernels compute in f32, widening loads, narrowing stores, rounding
 * each op): every elementwise op of the registry on a last axis of 64 (eight elements a
 * thread, 16-byte accesses), 16-bit beside f32 (four a thread, 8- and 16-byte accesses),
 * an odd last axis, rows by warps and blocks, columns, a split sum, and the row kernels
 * (softmax, layer norm, RMS norm): against the reference within cmp_half_tol. */
static void test_half(void) {
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_F16 : KILN_DTYPE_BF16;
        char name[32];
        snprintf(name, sizeof name, "ops_%s", kiln_dtype_name(t));
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t n64 = 64;
        kiln_value a = kiln_parameter(g, "a", t, 1, &n64), b = kiln_parameter(g, "b", t, 1, &n64);
        kiln_value p = kiln_parameter(g, "pred", KILN_DTYPE_BOOL, 1, &n64);
        kiln_value outs[128];
        int n = ew_trace_all(g, t, a, b, p, outs, 128);
        if (finish(g, n, outs, name)) {
            check(g, name, NULL, 1e-5);
            kiln_graph_destroy(g);
        }
        snprintf(name, sizeof name, "forms_%s", kiln_dtype_name(t));
        g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t wide[2] = {40, 1000}, odd[2] = {5, 37}, col[2] = {700, 24}, big = 70001;
        kiln_value x = kiln_parameter(g, "x", t, 2, wide), z = kiln_parameter(g, "z", t, 2, odd);
        kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 2, wide);
        kiln_value c = kiln_parameter(g, "c", t, 2, col), v = kiln_parameter(g, "v", t, 1, &big);
        int ax1[1] = {1}, ax0[1] = {0};
        kiln_value fo[12];
        int k = 0;
        fo[k++] = kiln_add(g, kiln_mul(g, x, x), kiln_tanh(g, x));
        fo[k++] = kiln_mul(g, kiln_convert(g, x, KILN_DTYPE_F32), f);
        fo[k++] = kiln_convert(g, kiln_sub(g, f, kiln_convert(g, x, KILN_DTYPE_F32)), t);
        fo[k++] = kiln_sub(g, z, kiln_mul(g, z, z));
        fo[k++] = kiln_reduce_sum(g, x, 1, ax1, false);
        fo[k++] = kiln_reduce_max(g, x, 1, ax1, true);
        fo[k++] = kiln_reduce_sum(g, c, 1, ax0, false);
        fo[k++] = kiln_reduce_sum(g, v, 0, NULL, false);
        if (finish(g, k, fo, name)) {
            check(g, name, NULL, 1e-5);
            /* allow_excess_precision: the same kernels, rounding only what they store, run
             * as CUDA and agree with the reference within the tolerance (where the roundings
             * go is test_codegen's test_half_roundings, the bits test_half_ops') */
            snprintf(name, sizeof name, "forms_%s_excess", kiln_dtype_name(t));
            check(g, name, &(kiln_compile_options){.allow_excess_precision = true}, 1e-5);
            kiln_graph_destroy(g);
        }
        snprintf(name, sizeof name, "rows_%s", kiln_dtype_name(t));
        g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t dn = 1000;
        x = kiln_parameter(g, "x", t, 2, wide);
        kiln_value sc = kiln_parameter(g, "s", t, 1, &dn);
        kiln_value ro[3] = {kiln_softmax(g, x, -1), kiln_layer_norm(g, x, sc, sc, 1e-5),
                            kiln_rms_norm(g, x, sc, -1, 1e-6)};
        if (finish(g, 3, ro, name)) {
            check(g, name, NULL, 1e-5);
            kiln_graph_destroy(g);
        }
    }
}

/* Row kernels over short rows, several a block (schedule.c, row_groups): a warp a row up to
 * 256, two warps up to 512 (their results through shared memory behind the row's own
 * barrier), four up to 1000, 37 rows (no multiple of the rows a block takes, and more
 * groups than 3 blocks hold at once); softmax, log_softmax of a log (NaN rows through
 * the warps' slots), layer norm, a softmax in place over a product's dying result, and
 * the gradients of a softmax and a layer norm; f32 and bf16. */
static void test_short_rows(void) {
    static const int64_t lens[5] = {32, 100, 256, 512, 1000};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 5; k++) {
            kiln_dtype t = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
            char name[48];
            int64_t n = lens[k], dx[2] = {37, n}, da[2] = {37, 16}, dw[2] = {16, n};
            snprintf(name, sizeof name, "short_rows_%lld_%s", (long long)n, kiln_dtype_name(t));
            kiln_graph *g = NULL;
            kiln_graph_create(ctx, name, &g);
            kiln_value x = kiln_parameter(g, "x", t, 2, dx), y = kiln_parameter(g, "y", t, 2, dx);
            kiln_value z = kiln_parameter(g, "z", t, 2, dx), c = kiln_parameter(g, "c", t, 2, dx);
            kiln_value s = kiln_parameter(g, "s", t, 1, &n), b = kiln_parameter(g, "b", t, 1, &n);
            kiln_value a = kiln_parameter(g, "a", t, 2, da), w = kiln_parameter(g, "w", t, 2, dw);
            kiln_value v = kiln_parameter(g, "v", t, 2, (int64_t[]){n, 16});
            kiln_value p = kiln_mul(g, kiln_matmul(g, a, w), kiln_scalar(g, t, 0.5));
            kiln_value o[6] = {kiln_softmax(g, x, -1), kiln_log_softmax(g, kiln_log(g, y), -1),
                               kiln_layer_norm(g, z, s, b, 1e-5),
                               kiln_matmul(g, kiln_softmax(g, p, -1), v)};
            kiln_value sm = kiln_mul(g, kiln_softmax(g, x, -1), c);
            kiln_value ln = kiln_mul(g, kiln_layer_norm(g, z, s, b, 1e-5), c);
            kiln_value loss = kiln_add(g, kiln_reduce_sum(g, sm, 0, NULL, false),
                                       kiln_reduce_sum(g, ln, 0, NULL, false));
            CHECK_OK(ctx, kiln_grad(g, loss, 2, (kiln_value[]){x, z}, o + 4));
            if (finish(g, 6, o, name)) {
                check(g, name, NULL, 1e-5);
                kiln_graph_destroy(g);
            }
        }
}

/* A convolution (im2col slices, the patches' concatenation, the col2im sums of its
 * gradient), a max pool (select chains) and an avg pool with their gradients, as the
 * printed CUDA computes them (src/trace/conv.c; the products stay the CPU's). */
/* The library kernels' bf16/f16 conversions (cuda_half.h), as the emulator compiles them
 * (integer arithmetic), bit for bit against src/base/half.h: every 16-bit pattern widened,
 * and f32 and f64 values narrowed (every exponent, ties, subnormals, overflow, NaNs). */
static const char half_glue[] =
    "extern \"C\" float emu_wide_f16(uint16_t h) { return wide(f16{h}); }\n"
    "extern \"C\" float emu_wide_bf16(uint16_t h) { return wide(bf16{h}); }\n"
    "extern \"C\" uint16_t emu_f32_f16(float f) { f16 o; narrow(f, o); return o.h; }\n"
    "extern \"C\" uint16_t emu_f32_bf16(float f) { bf16 o; narrow(f, o); return o.h; }\n"
    "extern \"C\" uint16_t emu_f64_f16(double d) { f16 o; narrow(d, o); return o.h; }\n"
    "extern \"C\" uint16_t emu_f64_bf16(double d) { bf16 o; narrow(d, o); return o.h; }\n";

static void test_half_text(void) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && strcmp(only, "half_text")) return;
    char cu[256], so[256], cmd[2048];
    snprintf(cu, sizeof cu, "%s/half_text.cpp", dir);
    snprintf(so, sizeof so, "%s/half_text.so", dir);
    FILE *f = fopen(cu, "w");
    if (f)
        fprintf(f, "%stypedef unsigned int uint32_t; typedef unsigned short uint16_t;\n%s%s", shim,
                CU_HALF_CONVERSIONS, half_glue),
            fclose(f);
    snprintf(cmd, sizeof cmd, "g++ -std=c++17 -O1 -w -shared -fPIC -o '%s' '%s' 2>'%s.log'", so, cu,
             cu);
    int rc = f ? system(cmd) : -1;
    CHECK_MSG(rc == 0, "half_text: g++ failed (see %s.log)", cu);
    void *lib = rc == 0 ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) return;
    float (*wf16)(uint16_t), (*wbf16)(uint16_t);
    uint16_t (*n32h)(float), (*n32b)(float), (*n64h)(double), (*n64b)(double);
    void *p;
    p = dlsym(lib, "emu_wide_f16"), memcpy(&wf16, &p, sizeof p);
    p = dlsym(lib, "emu_wide_bf16"), memcpy(&wbf16, &p, sizeof p);
    p = dlsym(lib, "emu_f32_f16"), memcpy(&n32h, &p, sizeof p);
    p = dlsym(lib, "emu_f32_bf16"), memcpy(&n32b, &p, sizeof p);
    p = dlsym(lib, "emu_f64_f16"), memcpy(&n64h, &p, sizeof p);
    p = dlsym(lib, "emu_f64_bf16"), memcpy(&n64b, &p, sizeof p);
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = wf16((uint16_t)h), b = kn_f16_to_f32((uint16_t)h);
        float c = wbf16((uint16_t)h), d = kn_bf16_to_f32((uint16_t)h);
        bad += memcmp(&a, &b, 4) != 0 || memcmp(&c, &d, 4) != 0;
    }
    uint64_t st = 77;
    for (int i = 0; i < 2000000; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(st >> 32);
        float x;
        memcpy(&x, &u, 4);
        double dd;
        uint64_t w = st ^ (st << 29);
        /* doubles near the f16 range (exponents 2^-30 .. 2^17) most of the time */
        if (i & 1) w = (w & 0x800fffffffffffffull) | ((uint64_t)(993 + (st >> 7) % 48) << 52);
        memcpy(&dd, &w, 8);
        uint16_t got[4] = {n32h(x), n32b(x), n64h(dd), n64b(dd)};
        uint16_t want[4] = {kn_f32_to_f16(x), kn_f32_to_bf16(x), kn_f64_to_f16(dd),
                            kn_f64_to_bf16(dd)};
        for (int k = 0; k < 4; k++) {
            if (got[k] == want[k]) continue;
            if (!bad++)
                fprintf(
                    stderr,
                    "half_text: first difference: %s of %a (%a) gives 0x%04x, want 0x%04x\n",
                    (const char *[]){"f32 to f16", "f32 to bf16", "f64 to f16", "f64 to bf16"}[k],
                    (double)x, dd, got[k], want[k]);
        }
    }
    CHECK_MSG(!bad, "half_text: %d conversions differ from src/base/half.h", bad);
    dlclose(lib);
}

/* Control flow: a scan whose body holds a row reduction and elementwise work (kernels of
 * its own, emulated), its gradient (the reverse scan's body), a cond and a while loop; the
 * loops are driven by the host, their bodies' kernels run as CUDA. */
static int emu_scan_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                         kiln_value *outs) {
    (void)n_in;
    int ax = 1;
    kiln_value w = kiln_capture(g, *(const kiln_value *)user);
    kiln_value h = kiln_tanh(g, kiln_add(g, kiln_mul(g, in[0], w), in[1]));
    outs[0] = h;
    outs[1] = kiln_reduce_sum(g, kiln_mul(g, h, h), 1, &ax, false);
    return 2;
}

static int emu_branch_a(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                        kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_softmax(g, in[0], -1);
    return 1;
}

static int emu_branch_b(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                        kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_exp(g, kiln_neg(g, in[0]));
    return 1;
}

static int emu_cond(kiln_graph *g, int n_in, const kiln_value *in, void *user, kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_compare(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 3), KILN_CMP_LT);
    return 1;
}

static int emu_while_body(kiln_graph *g, int n_in, const kiln_value *in, void *user,
                          kiln_value *outs) {
    (void)n_in, (void)user;
    outs[0] = kiln_add(g, in[0], kiln_scalar(g, KILN_DTYPE_I32, 1));
    outs[1] = kiln_logistic(g, kiln_mul(g, in[1], kiln_scalar(g, KILN_DTYPE_F32, 1.5f)));
    return 2;
}

static void test_control(void) {
    const char *name = "control";
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, name, &g);
    int64_t xd[3] = {5, 37, 64}, cd[2] = {37, 64};
    kiln_value xs = kiln_parameter(g, "xs", KILN_DTYPE_F32, 3, xd);
    kiln_value c0 = kiln_parameter(g, "c", KILN_DTYPE_F32, 2, cd);
    kiln_value w = kiln_parameter(g, "w", KILN_DTYPE_F32, 2, cd), r[2], outs[8];
    int n = 0;
    kiln_scan(g, emu_scan_body, &w, 1, &c0, 1, &xs, NULL, &n, r);
    kiln_value loss = kiln_reduce_sum(g, r[1], 0, NULL, false);
    kiln_value p = kiln_compare(g, loss, kiln_scalar(g, KILN_DTYPE_F32, 0), KILN_CMP_GT);
    kiln_value br;
    kiln_cond(g, p, emu_branch_a, emu_branch_b, NULL, 1, &r[0], &n, &br);
    kiln_value init[2] = {kiln_scalar(g, KILN_DTYPE_I32, 0), c0}, wl[2];
    kiln_while_loop(g, emu_cond, emu_while_body, NULL, 2, init, wl);
    outs[0] = r[0], outs[1] = r[1], outs[2] = br, outs[3] = wl[1];
    kiln_value wrt[2] = {c0, w};
    CHECK_OK(ctx, kiln_grad(g, loss, 2, wrt, outs + 4));
    if (finish(g, 6, outs, name)) {
        check(g, name, NULL, 2e-4);
        kiln_graph_destroy(g);
    }
}

/* cholesky and triangular_solve as a GPU runs them: their primitive form (expand.c: a
 * loop of matrix-vector products, divisions and dynamic_update_slices per row), with their
 * gradients, in f32, on a positive definite matrix built in the graph. */
static void test_linalg(void) {
    const char *name = "linalg";
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, name, &g);
    int64_t xd[3] = {2, 12, 12}, bd[3] = {2, 12, 5};
    double eye[288] = {0};
    for (int i = 0; i < 24; i++) eye[i * 12 + i % 12] = 1;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 3, xd);
    kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_F32, 3, bd);
    kiln_value xxt = kiln_matmul(g, x, kiln_transpose(g, x, (const int[]){0, 2, 1}));
    kiln_value spd =
        kiln_add(g, kiln_mul(g, xxt, kiln_scalar(g, KILN_DTYPE_F32, 1.0 / 12)),
                 kiln_convert(g, kiln_constant(g, KILN_DTYPE_F64, 3, xd, eye), KILN_DTYPE_F32));
    kiln_value l = kiln_cholesky(g, spd);
    kiln_triangular_solve_options o = {.left_side = true, .lower = true, .transpose_a = true};
    kiln_value s = kiln_triangular_solve(g, l, b, &o), c = kiln_cho_solve(g, l, true, b);
    kiln_value loss = kiln_add(g, kiln_reduce_sum(g, kiln_mul(g, s, s), 0, NULL, false),
                               kiln_reduce_sum(g, c, 0, NULL, false));
    kiln_value outs[5] = {l, s, c}, wrt[2] = {x, b};
    CHECK_OK(ctx, kiln_grad(g, loss, 2, wrt, outs + 3));
    if (!finish(g, 5, outs, name)) return;
    kiln_graph *e = NULL;
    CHECK_OK(ctx, pass_expand_run(g, PASS_EXPAND_LINALG, &e));
    CHECK_MSG(e != NULL, "%s: no primitive form", name);
    if (e) check(e, name, NULL, 2e-4);
    kiln_graph_destroy(e);
    kiln_graph_destroy(g);
}

static void test_conv(void) {
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
        char name[32];
        snprintf(name, sizeof name, "conv_%s", kiln_dtype_name(t));
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t xd[4] = {2, 9, 8, 4}, wd[4] = {3, 3, 2, 6};
        kiln_value x = kiln_parameter(g, "x", t, 4, xd), w = kiln_parameter(g, "w", t, 4, wd);
        kiln_conv_options co = {.layout = KILN_CONV_NHWC,
                                .padding = KILN_PADDING_SAME,
                                .window_strides = {2, 1},
                                .rhs_dilation = {1, 2},
                                .feature_group_count = 2};
        kiln_window_options mo = {.window_dimensions = {1, 3, 3, 1},
                                  .window_strides = {1, 2, 2, 1},
                                  .padding = KILN_PADDING_SAME};
        kiln_value y = kiln_conv_general_dilated(g, x, w, &co);
        kiln_value p = kiln_reduce_window(g, kiln_tanh(g, y), KILN_WINDOW_MAX, &mo);
        kiln_value a = kiln_avg_pool(g, y, &mo, false);
        kiln_value loss = kiln_add(g, kiln_reduce_sum(g, kiln_mul(g, p, p), 0, NULL, false),
                                   kiln_reduce_sum(g, a, 0, NULL, false));
        kiln_value outs[4] = {y, loss}, wrt[2] = {x, w};
        CHECK_OK(ctx, kiln_grad(g, loss, 2, wrt, outs + 2));
        if (finish(g, 4, outs, name)) {
            check(g, name, NULL, d ? 1e-5 : 2e-4);
            kiln_graph_destroy(g);
        }
    }
}

/* Gather and scatter with dimension numbers (expanded into take_rows, scatter_add_rows
 * and fused compare-reduce loops before fusion): windows out of range in both modes, every
 * scatter kind with duplicate indices, and their gradients, in f32 and bf16. */
static void test_gather(void) {
    for (int d = 0; d < 2; d++) {
        kiln_dtype t = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
        char name[32];
        snprintf(name, sizeof name, "gather_%s", kiln_dtype_name(t));
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        int64_t xd[2] = {6, 5}, ud[2] = {4, 5};
        kiln_value x = kiln_parameter(g, "x", t, 2, xd), u = kiln_parameter(g, "u", t, 2, ud);
        kiln_value win = kiln_constant(g, KILN_DTYPE_I32, 2, (int64_t[]){4, 2},
                                       (int32_t[]){0, 1, 4, 3, -1, 2, 5, 4});
        kiln_value rows =
            kiln_constant(g, KILN_DTYPE_I32, 2, (int64_t[]){4, 1}, (int32_t[]){2, 5, 2, 7});
        kiln_gather_dims gd = {.n_offset_dims = 2,
                               .offset_dims = {1, 2},
                               .n_start_index_map = 2,
                               .start_index_map = {0, 1}};
        kiln_scatter_dims sd = {.n_update_window_dims = 1,
                                .update_window_dims = {1},
                                .n_inserted_window_dims = 1,
                                .n_scatter_dims_to_operand_dims = 1};
        kiln_value outs[10];
        outs[0] = kiln_gather(g, x, win, &gd, (int64_t[]){2, 2}, KILN_GATHER_FILL, NULL);
        outs[1] =
            kiln_gather(g, kiln_exp(g, x), win, &gd, (int64_t[]){2, 3}, KILN_GATHER_CLIP, NULL);
        for (int k = 0; k < 5; k++)
            outs[2 + k] = kiln_scatter(g, (kiln_scatter_kind)k, x, rows, u, &sd,
                                       k % 2 ? KILN_GATHER_CLIP : KILN_GATHER_FILL);
        kiln_value loss = kiln_reduce_sum(
            g,
            kiln_mul(g, kiln_scatter(g, KILN_SCATTER_ADD, x, rows, u, &sd, KILN_GATHER_FILL),
                     kiln_tanh(g, x)),
            0, NULL, false);
        double zero = 0;
        kiln_value gsum = kiln_reduce_sum(
            g, kiln_gather(g, kiln_sin(g, x), win, &gd, (int64_t[]){2, 2}, KILN_GATHER_FILL, &zero),
            0, NULL, false);
        loss = kiln_add(g, loss, gsum);
        outs[7] = loss;
        CHECK_OK(ctx, kiln_grad(g, loss, 2, (kiln_value[]){x, u}, outs + 8));
        if (finish(g, 10, outs, name)) {
            check(g, name, NULL, d ? 1e-5 : 2e-4);
            kiln_graph_destroy(g);
        }
    }
}

static void test_programs(int n) {
    for (int k = 0; k < n; k += 4) {
        char name[32];
        snprintf(name, sizeof name, "random_%d", k);
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        rp_state s = {.seed = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1)};
        for (int i = 0; i < 4; i++) rp_sub(&s, g);
        if (finish(g, s.n_outs, s.outs, name)) {
            check(g, name, NULL, 1e-4);
            kiln_graph_destroy(g);
        }
    }
    for (int k = 0; k < (n > 4 ? 2 : 1); k++) {
        char name[32];
        snprintf(name, sizeof name, "grad_%d", k);
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, name, &g);
        rp_state s = {.seed = 0x5851f42d4c957f2dull * (uint64_t)(k + 3)};
        kiln_value loss = rp_loss(&s, g, k ? KILN_DTYPE_F64 : KILN_DTYPE_F32, 2);
        kiln_value outs[RP_MAX_PARAMS + 1], wrt[RP_MAX_PARAMS];
        for (int i = 0; i < s.n_params; i++) wrt[i] = s.params[i].v;
        outs[0] = loss;
        CHECK_OK(ctx, kiln_grad(g, loss, s.n_params, wrt, outs + 1));
        if (finish(g, s.n_params + 1, outs, name)) {
            check(g, name, NULL, 2e-4);
            kiln_graph_destroy(g);
        }
    }
    /* the small models (long runs only: KILN_TEST_PROGRAMS); the big ones are test_cuda's */
    for (size_t i = 0; getenv("KILN_TEST_PROGRAMS") && i < sizeof models / sizeof *models; i++) {
        if (strcmp(models[i].name, "transformer") && strcmp(models[i].name, "branches")) continue;
        model m = {0};
        kiln_graph_create(ctx, models[i].name, &m.g);
        int no = models[i].build(&m);
        if (no > 0 && finish(m.g, no, m.outs, models[i].name)) {
            /* random weights make ill-conditioned layer norms: the CPU's own kernels are
             * 1e-2 from the reference at some elements of the transformer on this data
             * (KILN_EMU_CPU=1 shows it); the forms above are the strict check */
            check(m.g, models[i].name, NULL, strcmp(models[i].name, "transformer") ? 2e-2 : 1e-1);
            kiln_graph_destroy(m.g);
        }
    }
}

/* A library kernel source (cuda_attention.c's, cuda_sort.c's, ...) behind the shim, with
 * `glue` defining its entry point `sym`, compiled by g++ into dir/<name>.so and loaded:
 * the entry point, and the library in *lib (NULL, and the failure checked, when g++ or the
 * loader fails). FMA contraction is off, as NVRTC's is for kiln's kernels. */
static void *emu_library(const char *name, const char *src, size_t len, const char *glue,
                         const char *sym, void **lib) {
    char cu[256], so[256], cmd[2048];
    snprintf(cu, sizeof cu, "%s/%s.cpp", dir, name);
    snprintf(so, sizeof so, "%s/%s.so", dir, name);
    FILE *f = fopen(cu, "w");
    if (f) fputs(shim, f), fwrite(src, 1, len, f), fputs(glue, f), fclose(f);
    snprintf(cmd, sizeof cmd,
             "g++ -std=c++17 -O1 -w -shared -fPIC -fno-fast-math -ffp-contract=off -o '%s' "
             "'%s' 2>'%s.log'",
             so, cu, cu);
    int rc = f ? system(cmd) : -1;
    CHECK_MSG(rc == 0, "%s: g++ failed (see %s.log)", name, cu);
    *lib = rc == 0 ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    CHECK_MSG(rc || *lib, "%s: dlopen: %s", name, dlerror());
    return *lib ? dlsym(*lib, sym) : NULL;
}

/* ------------------------------------------------------ fused attention ---- */

/* The attention kernels' source with a function that runs one over `grid` blocks. */
static const char attn_glue[] =
    "struct emu_attn { int type; const void *q, *k, *v; void *o, *l; attn_params p; };\n"
    "static void emu_attn_body(void *a) {\n"
    "    emu_attn *x = (emu_attn *)a;\n"
    "    switch (x->type) {\n"
    "    case 0: kiln_attn_f32((const float *)x->q, (const float *)x->k, (const float *)x->v, "
    "(float *)x->o, (float *)x->l, x->p); break;\n"
    "    case 1: kiln_attn_f64((const double *)x->q, (const double *)x->k, (const double *)x->v, "
    "(double *)x->o, (double *)x->l, x->p); break;\n"
    "    case 2: kiln_attn_bf16((const bf16 *)x->q, (const bf16 *)x->k, (const bf16 *)x->v, "
    "(bf16 *)x->o, (float *)x->l, x->p); break;\n"
    "    case 3: kiln_attn_f16((const f16 *)x->q, (const f16 *)x->k, (const f16 *)x->v, "
    "(f16 *)x->o, (float *)x->l, x->p); break;\n"
    "    case 4: kiln_attn_tc_bf16_64((const bf16 *)x->q, (const bf16 *)x->k, (const bf16 *)x->v, "
    "(bf16 *)x->o, (float *)x->l, x->p); break;\n"
    "    case 5: kiln_attn_tc_bf16_128((const bf16 *)x->q, (const bf16 *)x->k, "
    "(const bf16 *)x->v, (bf16 *)x->o, (float *)x->l, x->p); break;\n"
    "    case 6: kiln_attn_tc_f16_64((const f16 *)x->q, (const f16 *)x->k, (const f16 *)x->v, "
    "(f16 *)x->o, (float *)x->l, x->p); break;\n"
    "    default: kiln_attn_tc_f16_128((const f16 *)x->q, (const f16 *)x->k, (const f16 *)x->v, "
    "(f16 *)x->o, (float *)x->l, x->p); break;\n"
    "    }\n"
    "}\n"
    "extern \"C\" void emu_attention(int type, const void *q, const void *k, const void *v, "
    "void *o, void *l, const long long *n, double scale, double fill, unsigned grid) {\n"
    "    emu_attn a = {type, q, k, v, o, l, {n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], "
    "n[8], 0, scale, fill}};\n"
    "    kiln_emu_run(grid, emu_attn_body, &a);\n"
    "}\n";

typedef void (*emu_attention_fn)(int type, const void *q, const void *k, const void *v, void *o,
                                 void *l, const long long *n, double scale, double fill,
                                 unsigned grid);

/* One case: dot_product_attention of the given shape, with the node's fill set to `fill`
 * (what pass_attention gives a written-out attention), through the emulated kernel the
 * backend would choose on a GPU of compute capability 9.0 (cu_attention_kernel: for bf16
 * and f16 the tensor-core form where the head sizes allow, or with cuda_cores the CUDA
 * cores' form) and the reference interpreter. */
typedef struct attn_case {
    kiln_dtype t;
    int64_t b, t_len, s, n, k, h, hv;
    bool causal;
    double fill;
    bool cuda_cores;
    /* > 0: the value at this key (batch 0, head 0, column 0) is +inf: rows before it must
     * not see it (a multiple of 16: the tensor-core kernel leaves a warp's later groups of
     * 16 keys out of its products, where 0 x inf would be NaN) */
    int64_t inf_key;
} attn_case;

static void attn_check(emu_attention_fn run, const attn_case *c, int which) {
    kiln_graph *g = NULL;
    char name[32];
    snprintf(name, sizeof name, "attention%d", which);
    kiln_graph_create(ctx, name, &g);
    int64_t dq[4] = {c->b, c->t_len, c->n, c->h}, dk[4] = {c->b, c->s, c->k, c->h};
    int64_t dv[4] = {c->b, c->s, c->k, c->hv}, dout[4] = {c->b, c->t_len, c->n, c->hv};
    kiln_value q = kiln_parameter(g, "q", c->t, 4, dq), k = kiln_parameter(g, "k", c->t, 4, dk);
    kiln_value v = kiln_parameter(g, "v", c->t, 4, dv);
    kiln_attention_options o = {.scale = 0, .is_causal = c->causal};
    kiln_value y = kiln_dot_product_attention(g, q, k, v, &o), outs[2] = {y};
    ir_node lt = g->nodes[y.id]; /* the rows' log-sum-exp, which the kernel writes too */
    lt.a.attn.kind = IR_ATTN_LSE;
    outs[1] = trace_attention_kind(g, name, &lt, (kiln_value[]){q, k}, 2);
    kiln_status s = kiln_graph_finish(g, 2, outs);
    CHECK_MSG(!s, "%s: %s", name, kiln_last_error(ctx));
    double scale = 0;
    for (uint32_t i = 0; !s && i < g->n_nodes; i++)
        if (g->nodes[i].op == IR_ATTENTION) {
            g->nodes[i].a.attn.fill = c->fill;
            scale = g->nodes[i].a.attn.scale;
        }
    kiln_array *args[3] = {0}, *want[2] = {0}, *got = NULL, *got_lse = NULL;
    const int64_t *dims[3] = {dq, dk, dv};
    for (int i = 0; i < 3 && !s; i++) args[i] = cmp_random_array(ctx, c->t, 4, dims[i], &seed);
    if (!s && c->inf_key > 0) { /* v[0, inf_key, 0, 0] = +inf, as the dtype writes it */
        size_t nb = kiln_array_nbytes(args[2]);
        unsigned char *hv = malloc(nb);
        kiln_array_copy_to_host(args[2], hv, nb);
        int64_t at = c->inf_key * c->k * c->hv;
        if (c->t == KILN_DTYPE_F32)
            ((float *)hv)[at] = INFINITY;
        else
            ((uint16_t *)hv)[at] = c->t == KILN_DTYPE_BF16 ? 0x7f80 : 0x7c00;
        kiln_array_destroy(args[2]);
        args[2] = NULL;
        kiln_array_create(ctx, c->t, 4, dv, hv, &args[2]);
        free(hv);
    }
    if (!s) s = kiln_interpret(g, 3, args, 2, want);
    CHECK_MSG(!s, "%s: reference: %s", name, kiln_last_error(ctx));
    if (!s) {
        void *hb[5];
        size_t bytes[5];
        for (int i = 0; i < 3; i++) {
            bytes[i] = kiln_array_nbytes(args[i]);
            hb[i] = malloc(bytes[i]);
            kiln_array_copy_to_host(args[i], hb[i], bytes[i]);
        }
        bytes[3] = kiln_array_nbytes(want[0]), bytes[4] = kiln_array_nbytes(want[1]);
        hb[3] = calloc(1, bytes[3]), hb[4] = calloc(1, bytes[4]);
        long long nn[9] = {c->b,      c->t_len,         c->s, c->n, c->k, c->h, c->hv,
                           c->causal, isfinite(c->fill)};
        kn_attention_desc d = {.dtype = c->t, .h = c->h, .hv = c->hv};
        uintptr_t align = (uintptr_t)hb[0] | (uintptr_t)hb[1] | (uintptr_t)hb[2] | (uintptr_t)hb[3];
        int type = cu_attention_kernel(&d, 9, align, c->cuda_cores);
        CHECK_MSG(c->cuda_cores == (type < CU_ATTN_TC) || c->h % 8 || c->hv % 8 || c->h > 128 ||
                      c->hv > 128 || (c->t != KILN_DTYPE_BF16 && c->t != KILN_DTYPE_F16),
                  "%s: kernel %d chosen", name, type);
        run(type, hb[0], hb[1], hb[2], hb[3], hb[4], nn, scale, c->fill, 3);
        CHECK_OK(ctx, kiln_array_create(ctx, c->t, 4, dout, hb[3], &got));
        CHECK_OK(ctx, kiln_array_create(ctx, kiln_array_dtype(want[1]), 3, dout, hb[4], &got_lse));
        CHECK_MSG(got_lse && cmp_arrays(got_lse, want[1], 1e-5, 1e-12, name),
                  "%s: the kernel's log-sum-exp != the reference's (%s, fill %g)", name,
                  kiln_dtype_name(c->t), c->fill);
        CHECK_MSG(got && cmp_arrays(got, want[0], 1e-5, 1e-12, name),
                  "%s: emulated attention != reference (%s, B%lld T%lld S%lld N%lld K%lld H%lld "
                  "Hv%lld, causal %d, fill %g)",
                  name, kiln_dtype_name(c->t), (long long)c->b, (long long)c->t_len,
                  (long long)c->s, (long long)c->n, (long long)c->k, (long long)c->h,
                  (long long)c->hv, c->causal, c->fill);
        for (int i = 0; i < 5; i++) free(hb[i]);
        n_programs++;
    }
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    kiln_array_destroy(want[0]), kiln_array_destroy(want[1]);
    kiln_array_destroy(got), kiln_array_destroy(got_lse);
    kiln_graph_destroy(g);
}

static void test_attention(void) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && (strncmp(only, "attention", 9) || !strncmp(only, "attention_grad", 14))) return;
    size_t len;
    const char *src = cu_attention_source(&len);
    void *lib = NULL, *fn = emu_library("attention", src, len, attn_glue, "emu_attention", &lib);
    emu_attention_fn run;
    memcpy(&run, &fn, sizeof run);
    /* tiles cut short (64 query rows, 32 keys a tile; 32 rows for f64), H over the 64
     * (f64: 32) features staged at a time, Hv over the 128 (64) columns a pass, S != T,
     * grouped heads; fills that count (above the scores) and that do not */
    static const attn_case cases[] = {
        {KILN_DTYPE_F32, 2, 37, 37, 4, 2, 16, 16, true, -INFINITY},
        {KILN_DTYPE_F32, 1, 70, 45, 2, 2, 70, 130, false, -INFINITY},
        {KILN_DTYPE_F32, 1, 70, 70, 4, 1, 8, 24, true, 0.25},
        {KILN_DTYPE_F32, 1, 33, 20, 2, 1, 16, 8, true, -1e30},
        {KILN_DTYPE_F32, 1, 40, 50, 2, 2, 4, 4, true, 3.0},
        {KILN_DTYPE_F64, 1, 40, 40, 2, 1, 40, 70, true, -INFINITY},
        {KILN_DTYPE_F64, 1, 33, 33, 2, 2, 8, 8, true, 0.5},
        {KILN_DTYPE_BF16, 1, 70, 70, 4, 2, 32, 32, true, -INFINITY, true},
        {KILN_DTYPE_BF16, 2, 19, 29, 2, 1, 16, 16, false, -INFINITY, true},
        {KILN_DTYPE_F16, 1, 65, 65, 2, 1, 64, 64, true, 0.25, true},
        /* the tensor-core form: query tiles of 128 (warps of 16 rows) cut short and past
         * the end, key tiles of 64 (32 for head sizes over 64) cut short, causal tiles
         * skipped per warp, H != Hv, head sizes padded to 64 or 128, grouped heads, fills,
         * S != T both ways */
        {KILN_DTYPE_BF16, 1, 70, 70, 4, 2, 32, 32, true, -INFINITY},
        {KILN_DTYPE_BF16, 2, 19, 29, 2, 1, 16, 16, false, -INFINITY},
        {KILN_DTYPE_F16, 1, 65, 65, 2, 1, 64, 64, true, 0.25},
        {KILN_DTYPE_BF16, 1, 300, 300, 2, 1, 64, 64, true, -INFINITY},
        {KILN_DTYPE_BF16, 1, 150, 200, 2, 2, 128, 72, false, -INFINITY},
        {KILN_DTYPE_F16, 2, 140, 90, 4, 2, 96, 128, true, -INFINITY},
        {KILN_DTYPE_F16, 1, 33, 50, 2, 1, 8, 40, true, 0.5},
        {KILN_DTYPE_BF16, 1, 129, 129, 1, 1, 64, 64, true, -1e30},
        /* an infinite value at key 48: rows 0 to 47 never see it, later rows all NaN */
        {KILN_DTYPE_BF16, 1, 100, 100, 2, 1, 64, 64, true, -INFINITY, false, 48},
        {KILN_DTYPE_F16, 1, 80, 80, 1, 1, 128, 128, true, -INFINITY, false, 48},
        /* past the tensor-core form (H not a multiple of 8): the CUDA cores' */
        {KILN_DTYPE_BF16, 1, 40, 40, 2, 1, 12, 12, true, -INFINITY},
    };
    for (int i = 0; fn && i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char name[32];
        snprintf(name, sizeof name, "attention%d", i);
        if (only && strcmp(only, "attention") && strcmp(only, name)) continue;
        attn_check(run, &cases[i], i);
    }
    if (lib) dlclose(lib);
}

/* ------------------------------------------------- the attention gradient ---- */

/* The gradient kernels' source with a function that runs kernel `type`
 * (cu_attention_grad_kernel) over `grid` blocks. */
static const char attn_grad_glue[] =
    "struct emu_grad { int type; const void *q, *k, *v, *ct, *l, *d; void *o; "
    "attn_params p; };\n"
    "#define K(i, name, T, O) case i: name((const T *)x->q, (const T *)x->k, (const T *)x->v, "
    "(const T *)x->ct, (const float *)x->l, (const float *)x->d, (O *)x->o, x->p); break;\n"
    "#define KS(i, T, S) K(i, kiln_attn_lse_##S, T, float) K(i + 1, kiln_attn_dq_##S, T, T) "
    "K(i + 2, kiln_attn_dk_##S, T, T) K(i + 3, kiln_attn_dv_##S, T, T)\n"
    "static void emu_grad_body(void *a) {\n"
    "    emu_grad *x = (emu_grad *)a;\n"
    "    switch (x->type) { KS(0, bf16, bf16_64) KS(4, bf16, bf16_128) KS(8, f16, f16_64) "
    "KS(12, f16, f16_128) }\n"
    "}\n"
    "extern \"C\" void emu_attention_grad(int type, void *const *b, const long long *n, "
    "double scale, unsigned grid) {\n"
    "    emu_grad a = {type, b[0], b[1], b[2], b[3], b[4], b[5], b[6], "
    "{n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], 0, n[8], scale, 0}};\n"
    "    kiln_emu_run(grid, emu_grad_body, &a);\n"
    "}\n";

typedef void (*emu_attention_grad_fn)(int type, void *const *b, const long long *n, double scale,
                                      unsigned grid);

typedef struct grad_emu_case {
    kiln_dtype t;
    int64_t b, t_len, s, n, k, h, hv;
    bool causal;
    bool vec;      /* the operands 16-byte aligned: else each is moved 2 bytes off */
    unsigned grid; /* blocks (each takes items grid apart); 0: 3 */
} grad_emu_case;

/* A host copy of array a, `off` bytes into a buffer of its own (a misaligned operand). */
static void *host_copy(const kiln_array *a, size_t off, void **base) {
    size_t n = kiln_array_nbytes(a);
    *base = calloc(1, n + off + 16);
    void *p = (char *)*base + off;
    kiln_array_copy_to_host(a, p, n);
    return p;
}

/* One case: LSE, GRAD_Q, GRAD_K and GRAD_V of the given shape through the emulated
 * kernels, against the reference's kinds (ir.h): lse against the reference's; each gradient
 * from the reference's lse and delta = rowsum(ct * out). The kernels round p and ds to the
 * dtype as their products' operands (FlashAttention-2 does the same); the gradients still
 * hold to cmp_arrays' two units of the dtype's rounding. */
static void grad_check(emu_attention_grad_fn run, const grad_emu_case *c, int which) {
    char name[32];
    snprintf(name, sizeof name, "attention_grad%d", which);
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, name, &g);
    int64_t dq[4] = {c->b, c->t_len, c->n, c->h}, dk[4] = {c->b, c->s, c->k, c->h};
    int64_t dv[4] = {c->b, c->s, c->k, c->hv}, dout[4] = {c->b, c->t_len, c->n, c->hv};
    kiln_value q = kiln_parameter(g, "q", c->t, 4, dq), k = kiln_parameter(g, "k", c->t, 4, dk);
    kiln_value v = kiln_parameter(g, "v", c->t, 4, dv), ct = kiln_parameter(g, "ct", c->t, 4, dout);
    kiln_attention_options o = {.is_causal = c->causal};
    kiln_value y = kiln_dot_product_attention(g, q, k, v, &o), grads[3];
    kiln_vjp(g, 1, &y, &ct, 3, (kiln_value[]){q, k, v}, grads);
    kiln_value lse = KN_NONE, delta = KN_NONE;
    double scale = 0;
    for (uint32_t i = 1; i < g->n_nodes; i++) { /* the VJP's lse and delta: grad_q's inputs */
        const ir_node *x = &g->nodes[i];
        if (x->op == IR_ATTENTION) scale = x->a.attn.scale;
        if (x->op == IR_ATTENTION && x->a.attn.kind == IR_ATTN_GRAD_Q)
            lse = trace_value(g, ir_in(x)[4]), delta = trace_value(g, ir_in(x)[5]);
    }
    kiln_value outs[5] = {lse, delta, grads[0], grads[1], grads[2]};
    kiln_status s = kiln_graph_finish(g, 5, outs);
    CHECK_MSG(!s, "%s: %s", name, kiln_last_error(ctx));
    kiln_array *args[4] = {0}, *want[5] = {0};
    const int64_t *dims[4] = {dq, dk, dv, dout};
    for (int i = 0; i < 4 && !s; i++) args[i] = cmp_random_array(ctx, c->t, 4, dims[i], &seed);
    if (!s) s = kiln_interpret(g, 4, args, 5, want);
    CHECK_MSG(!s, "%s: reference: %s", name, kiln_last_error(ctx));
    if (!s) {
        void *base[7] = {0}, *b[7];
        size_t off = c->vec ? 0 : 2;
        for (int i = 0; i < 4; i++) b[i] = host_copy(args[i], off, &base[i]);
        b[4] = host_copy(want[0], 0, &base[4]), b[5] = host_copy(want[1], 0, &base[5]);
        long long nn[9] = {c->b, c->t_len, c->s, c->n, c->k, c->h, c->hv, c->causal, c->vec};
        kn_attention_desc d = {.dtype = c->t, .h = c->h, .hv = c->hv, .fill = -INFINITY};
        for (int kind = KN_ATTN_LSE; kind <= KN_ATTN_GRAD_V; kind++) {
            d.kind = (kn_attention_kind)kind;
            CHECK_MSG(cu_attention_grad_supports(&d, 9) && !cu_attention_grad_supports(&d, 7),
                      "%s: %s refused on compute capability 9", name, ir_attn_kind_name(kind));
            int w = kind == KN_ATTN_LSE ? 0 : kind - KN_ATTN_LSE + 1; /* want[] of the kind */
            const kiln_array *ref = want[w];
            size_t bytes = kiln_array_nbytes(ref);
            void *ob = calloc(1, bytes + off + 16);
            b[6] = (char *)ob + off;
            run(cu_attention_grad_kernel(&d), b, nn, scale, c->grid ? c->grid : 3);
            kiln_array *got = NULL;
            int rank = kiln_array_rank(ref);
            int64_t od[4];
            for (int a = 0; a < rank; a++) od[a] = kiln_array_dim(ref, a);
            CHECK_OK(ctx, kiln_array_create(ctx, kiln_array_dtype(ref), rank, od, b[6], &got));
            CHECK_MSG(got && cmp_arrays(got, ref, 1e-5, 0, name),
                      "%s: emulated %s != reference (%s, B%lld T%lld S%lld N%lld K%lld H%lld "
                      "Hv%lld, causal %d, aligned %d)",
                      name, ir_attn_kind_name(kind), kiln_dtype_name(c->t), (long long)c->b,
                      (long long)c->t_len, (long long)c->s, (long long)c->n, (long long)c->k,
                      (long long)c->h, (long long)c->hv, c->causal, c->vec);
            kiln_array_destroy(got);
            free(ob);
        }
        for (int i = 0; i < 6; i++) free(base[i]);
        n_programs++;
    }
    for (int i = 0; i < 4; i++) kiln_array_destroy(args[i]);
    for (int i = 0; i < 5; i++) kiln_array_destroy(want[i]);
    kiln_graph_destroy(g);
}

static void test_attention_grad(void) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && strncmp(only, "attention_grad", 14)) return;
    size_t len;
    const char *src = cu_attention_grad_source(&len);
    void *lib = NULL,
         *fn = emu_library("attention_grad", src, len, attn_grad_glue, "emu_attention_grad", &lib);
    emu_attention_grad_fn run;
    memcpy(&run, &fn, sizeof run);
    /* tiles of 128 rows (warps of 16) cut short and past the end, inner tiles of 64 (32 for
     * head sizes over 64) cut short, causal tiles skipped per warp, S != T both ways with a
     * causal mask (keys no query sees), H != Hv, head sizes padded to 64 or 128, grouped
     * heads, operands misaligned */
    static const grad_emu_case cases[] = {
        {KILN_DTYPE_BF16, 1, 70, 70, 4, 2, 32, 32, true, true},
        {KILN_DTYPE_BF16, 2, 19, 29, 2, 1, 16, 16, false, true},
        {KILN_DTYPE_F16, 1, 65, 65, 2, 1, 64, 64, true, true},
        {KILN_DTYPE_BF16, 1, 300, 300, 2, 1, 64, 64, true, true},
        {KILN_DTYPE_BF16, 1, 150, 200, 2, 2, 128, 72, false, true},
        {KILN_DTYPE_F16, 2, 140, 90, 4, 2, 96, 128, true, true},
        {KILN_DTYPE_F16, 1, 33, 150, 2, 1, 8, 40, true, true},
        {KILN_DTYPE_BF16, 1, 45, 37, 3, 3, 24, 16, true, false},
        /* a review's: T > S and S > T with grouped heads and both tile widths, the
         * smallest head size, 8 query heads on one key head, misaligned operands of every
         * width, one block and seven */
        {KILN_DTYPE_BF16, 1, 300, 100, 4, 2, 64, 64, true, true, 1},
        {KILN_DTYPE_BF16, 1, 100, 300, 2, 1, 128, 8, true, true},
        {KILN_DTYPE_F16, 1, 50, 260, 2, 1, 72, 120, false, false},
        {KILN_DTYPE_BF16, 1, 17, 17, 1, 1, 8, 8, true, true},
        {KILN_DTYPE_F16, 1, 129, 129, 8, 1, 16, 32, true, true, 7},
        {KILN_DTYPE_BF16, 2, 260, 260, 2, 2, 64, 64, true, false},
        {KILN_DTYPE_F16, 1, 140, 33, 3, 1, 128, 128, true, false},
    };
    for (int i = 0; fn && i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char name[32];
        snprintf(name, sizeof name, "attention_grad%d", i);
        if (only && strcmp(only, "attention_grad") && strcmp(only, name)) continue;
        grad_check(run, &cases[i], i);
    }
    if (lib) dlclose(lib);
}

/* ------------------------------------------------------------- argsort ---- */

/* The argsort kernels' source with a function that runs one over `grid` blocks. */
static const char sort_glue[] =
    "struct emu_sort { int type; const void *x; int *o; sort_params p; };\n"
    "static void emu_sort_body(void *a) {\n"
    "    emu_sort *s = (emu_sort *)a;\n"
    "    switch (s->type) {\n"
    "    case 0: kiln_argsort_f32((const float *)s->x, s->o, s->p); break;\n"
    "    case 1: kiln_argsort_f64((const double *)s->x, s->o, s->p); break;\n"
    "    case 2: kiln_argsort_i32((const int32_t *)s->x, s->o, s->p); break;\n"
    "    case 3: kiln_argsort_i64((const int64_t *)s->x, s->o, s->p); break;\n"
    "    case 4: kiln_argsort_bf16((const bf16 *)s->x, s->o, s->p); break;\n"
    "    case 5: kiln_argsort_f16((const f16 *)s->x, s->o, s->p); break;\n"
    "    default: kiln_argsort_bool((const uint8_t *)s->x, s->o, s->p); break;\n"
    "    }\n"
    "}\n"
    "extern \"C\" void emu_argsort(int type, const void *x, int *o, const long long *n, "
    "unsigned grid) {\n"
    "    emu_sort a = {type, x, o, {n[0], n[1], n[2], n[3], n[4], n[5]}};\n"
    "    kiln_emu_run(grid, emu_sort_body, &a);\n"
    "}\n";

typedef void (*emu_argsort_fn)(int type, const void *x, int *o, const long long *n, unsigned grid);

/* One case: argsort of x [outer, n, inner] along its middle axis (ascending or descending,
 * all positions) or top_k of [outer, n] (k of them, IEEE total order), on rows of many
 * ties, NaNs and zeros of both signs, through the emulated kernel and the reference. */
typedef struct sort_case {
    kiln_dtype t;
    int64_t outer, n, inner;
    bool descending;
    int k; /* >= 0: top_k (inner must be 1) */
} sort_case;

static void sort_check(emu_argsort_fn run, const sort_case *c, int which) {
    char name[32];
    snprintf(name, sizeof name, "sort%d", which);
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, name, &g);
    int64_t dims[3] = {c->outer, c->n, c->inner}, total = c->outer * c->n * c->inner;
    kiln_value x = kiln_parameter(g, "x", c->t, 3, dims), y;
    if (c->k >= 0)
        kiln_top_k(g, kiln_reshape(g, x, 2, dims), c->k, NULL, &y);
    else
        y = kiln_argsort(g, x, 1, c->descending);
    kiln_status s = kiln_graph_finish(g, 1, &y);
    CHECK_MSG(!s, "%s: %s", name, kiln_last_error(ctx));
    size_t es = kiln_dtype_itemsize(c->t);
    char *host = malloc((size_t)total * es);
    for (int64_t i = 0; i < total; i++) {
        int r = (int)(test_rng_next(&seed) % 12);
        double v = r == 9 ? NAN : r == 10 ? -NAN : r == 11 ? -0.0 : r - 4;
        if (test_rng_next(&seed) % 4 == 0) v += test_rng_unit(&seed);
        switch (c->t) {
        case KILN_DTYPE_F32: ((float *)host)[i] = (float)v; break;
        case KILN_DTYPE_F64: ((double *)host)[i] = v; break;
        case KILN_DTYPE_I32: ((int32_t *)host)[i] = isnan(v) ? INT32_MIN : (int32_t)(v * 2); break;
        case KILN_DTYPE_I64:
            ((int64_t *)host)[i] = isnan(v) ? INT64_MAX : (int64_t)(v * 1e12);
            break;
        case KILN_DTYPE_BF16: ((uint16_t *)host)[i] = kn_f32_to_bf16((float)v); break;
        case KILN_DTYPE_F16: ((uint16_t *)host)[i] = kn_f32_to_f16((float)v); break;
        default: ((uint8_t *)host)[i] = r & 1; break;
        }
    }
    kiln_array *arg = NULL, *want = NULL;
    if (!s) s = kiln_array_create(ctx, c->t, 3, dims, host, &arg);
    if (!s) s = kiln_interpret(g, 1, &arg, 1, &want);
    CHECK_MSG(!s, "%s: reference: %s", name, kiln_last_error(ctx));
    if (!s) {
        int64_t k = c->k >= 0 ? c->k : c->n, n_out = c->outer * k * c->inner;
        int32_t *got = calloc((size_t)n_out + 1, sizeof *got), *ref = calloc((size_t)n_out + 1, 4);
        long long nn[6] = {c->outer, c->n, c->inner, k, c->k >= 0 || c->descending, c->k >= 0};
        static const kiln_dtype order[7] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                            KILN_DTYPE_I64, KILN_DTYPE_BF16, KILN_DTYPE_F16,
                                            KILN_DTYPE_BOOL};
        int type = 0;
        while (order[type] != c->t) type++;
        run(type, host, got, nn, 3);
        kiln_array_copy_to_host(want, ref, (size_t)n_out * sizeof *ref);
        int64_t bad = -1;
        for (int64_t i = 0; i < n_out && bad < 0; i++)
            if (got[i] != ref[i]) bad = i;
        CHECK_MSG(bad < 0,
                  "%s: emulated argsort != reference at %lld: %d, want %d (%s [%lld, "
                  "%lld, %lld], k %d, descending %d)",
                  name, (long long)bad, bad < 0 ? 0 : got[bad], bad < 0 ? 0 : ref[bad],
                  kiln_dtype_name(c->t), (long long)c->outer, (long long)c->n, (long long)c->inner,
                  c->k, c->descending);
        free(got), free(ref);
        n_programs++;
    }
    free(host);
    kiln_array_destroy(arg), kiln_array_destroy(want);
    kiln_graph_destroy(g);
}

static void test_sort(void) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && strncmp(only, "sort", 4)) return;
    size_t len;
    const char *src = cu_sort_source(&len);
    void *lib = NULL, *fn = emu_library("sort", src, len, sort_glue, "emu_argsort", &lib);
    emu_argsort_fn run;
    memcpy(&run, &fn, sizeof run);
    /* shared-memory rows (padded to a power of two, several a block), strided rows,
     * the fallback past 2048, top_k's total order, every dtype */
    static const sort_case cases[] = {
        {KILN_DTYPE_F32, 5, 37, 1, false, -1},  {KILN_DTYPE_F32, 2, 300, 3, true, -1},
        {KILN_DTYPE_F32, 4, 100, 1, false, 7},  {KILN_DTYPE_F32, 2, 2100, 1, false, -1},
        {KILN_DTYPE_F32, 2, 2100, 1, false, 9}, {KILN_DTYPE_F64, 3, 129, 1, true, -1},
        {KILN_DTYPE_F64, 2, 64, 1, false, 64},  {KILN_DTYPE_I32, 3, 2048, 1, false, -1},
        {KILN_DTYPE_I64, 2, 50, 2, true, -1},   {KILN_DTYPE_BF16, 4, 300, 1, false, -1},
        {KILN_DTYPE_BF16, 3, 77, 1, false, 20}, {KILN_DTYPE_F16, 3, 200, 1, true, -1},
        {KILN_DTYPE_F16, 2, 90, 1, false, 5},   {KILN_DTYPE_BOOL, 3, 45, 1, true, -1},
        {KILN_DTYPE_F32, 4, 1, 1, false, -1},
    };
    for (int i = 0; fn && i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char name[32];
        snprintf(name, sizeof name, "sort%d", i);
        if (only && strcmp(only, "sort") && strcmp(only, name)) continue;
        sort_check(run, &cases[i], i);
    }
    if (lib) dlclose(lib);
}

/* ---------------------------------------------------- sorted scatter-add ---- */

/* The sorted scatter_add_rows kernels' source with a function that runs the index sort over
 * grid_sort blocks, then the row kernel over grid_rows (the scratch: keys, then positions,
 * n_idx each). */
static const char scatter_glue[] =
    "struct emu_sc { int type, itype, phase; const void *idx, *u; void *o; uint32_t *key, "
    "*pos; scatter_params p; };\n"
    "static void emu_scatter_body(void *a) {\n"
    "    emu_sc *x = (emu_sc *)a;\n"
    "    if (!x->phase) {\n"
    "        if (x->itype) kiln_scatter_sort_i64((const int64_t *)x->idx, x->key, x->pos, x->p);\n"
    "        else kiln_scatter_sort_i32((const int32_t *)x->idx, x->key, x->pos, x->p);\n"
    "        return;\n"
    "    }\n"
    "    switch (x->type) {\n"
    "    case 0: kiln_scatter_rows_f32((const float *)x->u, (float *)x->o, x->key, x->pos, x->p); "
    "break;\n"
    "    case 1: kiln_scatter_rows_f64((const double *)x->u, (double *)x->o, x->key, x->pos, "
    "x->p); break;\n"
    "    case 2: kiln_scatter_rows_i32((const int32_t *)x->u, (int32_t *)x->o, x->key, x->pos, "
    "x->p); break;\n"
    "    case 3: kiln_scatter_rows_i64((const int64_t *)x->u, (int64_t *)x->o, x->key, x->pos, "
    "x->p); break;\n"
    "    case 4: kiln_scatter_rows_bf16((const bf16 *)x->u, (bf16 *)x->o, x->key, x->pos, x->p); "
    "break;\n"
    "    default: kiln_scatter_rows_f16((const f16 *)x->u, (f16 *)x->o, x->key, x->pos, x->p); "
    "break;\n"
    "    }\n"
    "}\n"
    "extern \"C\" void emu_scatter(int type, int itype, const void *idx, const void *u, void *o, "
    "void *scratch, const long long *n, unsigned grid_sort, unsigned grid_rows) {\n"
    "    uint32_t *key = (uint32_t *)scratch;\n"
    "    emu_sc a = {type, itype, 0, idx, u, o, key, key + n[2], {n[0], n[1], n[2], n[3], "
    "n[4], n[5]}};\n"
    "    kiln_emu_run(grid_sort, emu_scatter_body, &a);\n"
    "    a.phase = 1;\n"
    "    kiln_emu_run(grid_rows, emu_scatter_body, &a);\n"
    "}\n";

typedef void (*emu_scatter_fn)(int type, int itype, const void *idx, const void *u, void *o,
                               void *scratch, const long long *n, unsigned grid_sort,
                               unsigned grid_rows);

/* How a case draws its indices. */
enum {
    IDX_SPREAD, /* in [-3, rows + 3): some negative, some past the end */
    IDX_ONE,    /* every one the same row */
    IDX_FEW,    /* rows 0 and 1, and a few out of range (long runs) */
    IDX_WIDE,   /* INT32_MIN/INT64_MIN, and for i64 values that wrap to rows in 32 bits */
    IDX_NONE,   /* all out of range */
};

/* One case: scatter_add_rows of n_idx rows of len into rows rows, combined by `combine`, with
 * chunks of `chunk` positions; special values (NaN, infinities, signed zeros, extremes) or
 * ordinary ones, onto an operand or zeros. */
typedef struct scatter_case {
    kiln_dtype t, it;
    int64_t rows, len, n_idx, chunk;
    int combine, pattern;
    bool special, zeros;
} scatter_case;

static float scatter_ref_f32(float a, float b, int k) {
    if (k == KN_ROWS_ADD) return a + b;
    if (k == KN_ROWS_MUL) return a * b;
    if (isnan(a)) return a; /* a NaN wins, the first one if both */
    if (isnan(b)) return b;
    if (a == b) return (signbit(a) != 0) == (k == KN_ROWS_MIN) ? a : b; /* -0 min, +0 max */
    return (a < b) == (k == KN_ROWS_MIN) ? a : b;
}

static double scatter_ref_f64(double a, double b, int k) {
    if (k == KN_ROWS_ADD) return a + b;
    if (k == KN_ROWS_MUL) return a * b;
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    if (a == b) return (signbit(a) != 0) == (k == KN_ROWS_MIN) ? a : b;
    return (a < b) == (k == KN_ROWS_MIN) ? a : b;
}

/* The semantics, plainly: for i in order, row idx[i] (when in range) combined with update i,
 * each result stored in the dtype (16-bit floats rounded after each combine). */
static void scatter_ref(const scatter_case *c, const void *idx, const void *upd, void *out) {
    for (int64_t i = 0; i < c->n_idx; i++) {
        int64_t r = c->it == KILN_DTYPE_I64 ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i];
        if (r < 0 || r >= c->rows) continue;
        for (int64_t j = 0; j < c->len; j++) {
            int64_t o = r * c->len + j, u = i * c->len + j;
            int k = c->combine;
            switch (c->t) {
            case KILN_DTYPE_F32: {
                float *x = out;
                x[o] = scatter_ref_f32(x[o], ((const float *)upd)[u], k);
                break;
            }
            case KILN_DTYPE_F64: {
                double *x = out;
                x[o] = scatter_ref_f64(x[o], ((const double *)upd)[u], k);
                break;
            }
            case KILN_DTYPE_I32: {
                int32_t *x = out, a = x[o], b = ((const int32_t *)upd)[u];
                x[o] = k == KN_ROWS_ADD   ? (int32_t)((uint32_t)a + (uint32_t)b)
                       : k == KN_ROWS_MUL ? (int32_t)((uint32_t)a * (uint32_t)b)
                       : k == KN_ROWS_MIN ? (a < b ? a : b)
                                          : (a > b ? a : b);
                break;
            }
            case KILN_DTYPE_I64: {
                int64_t *x = out, a = x[o], b = ((const int64_t *)upd)[u];
                x[o] = k == KN_ROWS_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                       : k == KN_ROWS_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                       : k == KN_ROWS_MIN ? (a < b ? a : b)
                                          : (a > b ? a : b);
                break;
            }
            case KILN_DTYPE_BF16: {
                uint16_t *x = out, b = ((const uint16_t *)upd)[u];
                x[o] = kn_f32_to_bf16(scatter_ref_f32(kn_bf16_to_f32(x[o]), kn_bf16_to_f32(b), k));
                break;
            }
            default: {
                uint16_t *x = out, b = ((const uint16_t *)upd)[u];
                x[o] = kn_f32_to_f16(scatter_ref_f32(kn_f16_to_f32(x[o]), kn_f16_to_f32(b), k));
                break;
            }
            }
        }
    }
}

/* Whether two results agree: the same bits, except that a NaN from an addition or product
 * may be any NaN (when both operands are NaNs, which one x86 returns follows the order the
 * compiler put them in, and a GPU gives its canonical NaN); min and max choose their NaN. */
static bool scatter_same(const scatter_case *c, const void *a, const void *b) {
    size_t es = kiln_dtype_itemsize(c->t);
    if (!memcmp(a, b, es)) return true;
    if (c->combine != KN_ROWS_ADD && c->combine != KN_ROWS_MUL) return false;
    switch (c->t) {
    case KILN_DTYPE_F32: return isnan(*(const float *)a) && isnan(*(const float *)b);
    case KILN_DTYPE_F64: return isnan(*(const double *)a) && isnan(*(const double *)b);
    case KILN_DTYPE_BF16:
        return isnan(kn_bf16_to_f32(*(const uint16_t *)a)) &&
               isnan(kn_bf16_to_f32(*(const uint16_t *)b));
    case KILN_DTYPE_F16:
        return isnan(kn_f16_to_f32(*(const uint16_t *)a)) &&
               isnan(kn_f16_to_f32(*(const uint16_t *)b));
    default: return false;
    }
}

static void scatter_check(emu_scatter_fn run, const scatter_case *c, int which) {
    char name[32];
    snprintf(name, sizeof name, "scatter%d", which);
    size_t es = kiln_dtype_itemsize(c->t), is = kiln_dtype_itemsize(c->it);
    size_t out_bytes = (size_t)(c->rows * c->len) * es,
           upd_bytes = (size_t)(c->n_idx * c->len) * es;
    void *idx = malloc((size_t)c->n_idx * is), *upd = malloc(upd_bytes + 1);
    void *got = malloc(out_bytes + 1), *want = malloc(out_bytes + 1);
    uint32_t *scratch = calloc((size_t)c->n_idx * 2 + 1, sizeof *scratch);
    for (int64_t i = 0; i < c->n_idx; i++) {
        int64_t r;
        switch (c->pattern) {
        case IDX_ONE: r = c->rows / 2; break;
        case IDX_FEW: r = test_rng_int(&seed, 10) ? test_rng_int(&seed, 2) : c->rows; break;
        case IDX_WIDE: {
            int q = test_rng_int(&seed, 4);
            r = test_rng_int(&seed, (int)c->rows);
            if (q == 0) r = c->it == KILN_DTYPE_I64 ? INT64_MIN : INT32_MIN;
            if (q == 1 && c->it == KILN_DTYPE_I64) r += (int64_t)1 << 32; /* row r in 32 bits */
            if (q == 1 && c->it == KILN_DTYPE_I32) r = INT32_MAX;
            break;
        }
        case IDX_NONE: r = test_rng_int(&seed, 2) ? -1 - test_rng_int(&seed, 5) : c->rows; break;
        default: r = test_rng_int(&seed, (int)c->rows + 6) - 3; break;
        }
        if (c->it == KILN_DTYPE_I64)
            ((int64_t *)idx)[i] = r;
        else
            ((int32_t *)idx)[i] = (int32_t)r;
    }
    if (c->special)
        test_fill_special(c->t, c->n_idx * c->len, upd, &seed);
    else
        test_fill_uniform(c->t, c->n_idx * c->len, upd, &seed);
    if (c->zeros)
        memset(want, 0, out_bytes);
    else
        test_fill_uniform(c->t, c->rows * c->len, want, &seed);
    memcpy(got, want, out_bytes);
    scatter_ref(c, idx, upd, want);
    static const kiln_dtype order[6] = {KILN_DTYPE_F32, KILN_DTYPE_F64,  KILN_DTYPE_I32,
                                        KILN_DTYPE_I64, KILN_DTYPE_BF16, KILN_DTYPE_F16};
    int type = 0;
    while (order[type] != c->t) type++;
    int64_t n_chunks = (c->n_idx + c->chunk - 1) / c->chunk;
    long long nn[6] = {c->rows, c->len, c->n_idx, c->chunk, n_chunks, c->combine};
    run(type, c->it == KILN_DTYPE_I64, idx, upd, got, scratch, nn, 2, 3);
    int64_t bad = -1;
    for (int64_t i = 0; i < c->rows * c->len && bad < 0; i++)
        if (!scatter_same(c, (char *)got + i * es, (char *)want + i * es)) bad = i;
    uint64_t gb = 0, wb = 0;
    if (bad >= 0) memcpy(&gb, (char *)got + bad * es, es), memcpy(&wb, (char *)want + bad * es, es);
    CHECK_MSG(bad < 0,
              "%s: emulated sorted scatter != the semantics at [%lld, %lld]: bits %llx, want %llx "
              "(%s, idx %s, rows %lld, len %lld, n_idx %lld, chunk %lld, combine %d)",
              name, (long long)(bad / (c->len ? c->len : 1)),
              (long long)(bad % (c->len ? c->len : 1)), (unsigned long long)gb,
              (unsigned long long)wb, kiln_dtype_name(c->t), kiln_dtype_name(c->it),
              (long long)c->rows, (long long)c->len, (long long)c->n_idx, (long long)c->chunk,
              c->combine);
    /* the scratch is sorted (key, position) pairs, chunk by chunk */
    bool sorted = true;
    for (int64_t i = 1; i < c->n_idx && sorted; i++)
        if (i % c->chunk)
            sorted =
                scratch[i - 1] < scratch[i] ||
                (scratch[i - 1] == scratch[i] && scratch[c->n_idx + i - 1] < scratch[c->n_idx + i]);
    CHECK_MSG(sorted, "%s: a chunk's keys are not sorted in the scratch", name);
    free(idx), free(upd), free(got), free(want), free(scratch);
    n_programs++;
}

static void test_scatter(void) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && strncmp(only, "scatter", 7)) return;
    size_t len;
    const char *src = cu_scatter_source(&len);
    void *lib = NULL, *fn = emu_library("scatter", src, len, scatter_glue, "emu_scatter", &lib);
    emu_scatter_fn run;
    memcpy(&run, &fn, sizeof run);
    enum { ADD = KN_ROWS_ADD, MUL = KN_ROWS_MUL, MIN = KN_ROWS_MIN, MAX = KN_ROWS_MAX };
    const kiln_dtype F32 = KILN_DTYPE_F32, F64 = KILN_DTYPE_F64, I32 = KILN_DTYPE_I32,
                     I64 = KILN_DTYPE_I64, BF16 = KILN_DTYPE_BF16, F16 = KILN_DTYPE_F16;
    /* one chunk, two (exactly full), three (the last short), the production chunk over
     * three, 64 chunks; chunks that are not powers of two (padded sorts) */
    const scatter_case cases[] = {
        {F32, I32, 7, 5, 1, 64, ADD, IDX_SPREAD, false, false},
        {F32, I32, 13, 33, 150, 64, ADD, IDX_SPREAD, false, false},
        {F32, I64, 5, 3, 2 * CU_SCATTER_CHUNK + 5, CU_SCATTER_CHUNK, ADD, IDX_FEW, false, true},
        {F32, I32, 9, 40, 100, 50, ADD, IDX_ONE, false, false},
        {F32, I32, 20, 4, 512, 8, ADD, IDX_SPREAD, false, false},
        {F32, I32, 6, 8, 130, 32, MAX, IDX_SPREAD, true, false},
        {F32, I64, 3, 70, 90, 40, MUL, IDX_FEW, false, false},
        {F64, I64, 11, 17, 200, 64, MUL, IDX_WIDE, false, false},
        {F64, I32, 6, 8, 130, 32, MIN, IDX_SPREAD, true, false},
        {F64, I32, 4, 9, 77, 20, ADD, IDX_FEW, true, true},
        {I32, I32, 10, 9, 300, 100, MUL, IDX_SPREAD, false, false},
        {I32, I64, 10, 9, 300, 100, MIN, IDX_WIDE, true, false},
        {I64, I64, 10, 9, 300, 100, ADD, IDX_SPREAD, true, false},
        {I64, I32, 5, 33, 140, 64, MAX, IDX_WIDE, true, false},
        {BF16, I32, 4, 37, 500, 128, ADD, IDX_FEW, false, false},
        {BF16, I64, 6, 16, 150, 64, MAX, IDX_SPREAD, true, false},
        {F16, I64, 8, 16, 260, 64, ADD, IDX_SPREAD, false, true},
        {F16, I32, 5, 12, 100, 30, MUL, IDX_FEW, false, false},
        {F16, I32, 5, 12, 100, 30, MIN, IDX_ONE, true, false},
        {F32, I32, 1, 6, 70, 32, ADD, IDX_NONE, false, false},
    };
    for (int i = 0; fn && i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char name[32];
        snprintf(name, sizeof name, "scatter%d", i);
        if (only && strcmp(only, "scatter") && strcmp(only, name)) continue;
        scatter_check(run, &cases[i], i);
    }
    if (lib) dlclose(lib);
}

/* ---------------------------------------------------- batched products' pointers ---- */

/* The library kernels' source with a function that runs kiln_gemm_ptrs over `grid` blocks:
 * the matrix pointers a pointer-array cuBLAS call reads (cuda_lib.c, blas_batched). */
static const char gemm_ptrs_glue[] =
    "struct emu_gp { const char *a, *b; char *c; lib_gemm g; int64_t es, batch; const char "
    "**pa, **pb; char **pc; };\n"
    "static void emu_gp_body(void *x) {\n"
    "    emu_gp *p = (emu_gp *)x;\n"
    "    kiln_gemm_ptrs(p->a, p->b, p->c, p->g, p->es, p->batch, p->pa, p->pb, p->pc);\n"
    "}\n"
    "extern \"C\" void emu_gemm_ptrs(const char *a, const char *b, char *c, const long long "
    "*g, long long es, long long batch, const char **pa, const char **pb, char **pc, unsigned "
    "grid) {\n"
    "    emu_gp x = {a, b, c, {}, es, batch, pa, pb, pc};\n"
    "    int64_t *d = &x.g.nb;\n"
    "    for (int i = 0; i < 32; i++) d[i] = g[i];\n"
    "    kiln_emu_run(grid, emu_gp_body, &x);\n"
    "}\n";

typedef void (*emu_gemm_ptrs_fn)(const char *a, const char *b, char *c, const long long *g,
                                 long long es, long long batch, const char **pa, const char **pb,
                                 char **pc, unsigned grid);

/* Batch index x walks the batch axes (the last fastest) at each operand's strides, and its
 * result is the x-th m x n matrix of c: attention's [B, T, H, D] operands batched over B
 * and H, three batch axes, one, and batches longer than a grid-stride pass. */
static void test_gemm_ptrs(void) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && strcmp(only, "gemm_ptrs")) return;
    size_t len;
    const char *src = cu_lib_source(&len);
    void *lib = NULL,
         *fn = emu_library("gemm_ptrs", src, len, gemm_ptrs_glue, "emu_gemm_ptrs", &lib);
    emu_gemm_ptrs_fn run;
    memcpy(&run, &fn, sizeof run);
    /* nb, m, n, bdims, sa, sb (elements), element size */
    static const struct {
        int nb;
        long long m, n, bdims[3], sa[3], sb[3], es;
    } cases[] = {
        {2, 256, 256, {16, 8}, {256 * 1536, 64}, {256 * 1536, 64}, 2},
        {2, 5, 7, {3, 4}, {1000, 16}, {4, 96}, 4},
        {3, 2, 3, {2, 3, 5}, {900, 200, 8}, {0, 40, 2}, 8},
        {1, 4, 4, {700}, {16}, {32}, 4},
    };
    for (size_t t = 0; run && t < sizeof cases / sizeof *cases; t++) {
        long long g[32] = {cases[t].nb, cases[t].m, cases[t].n, 1, 1, 1, 0, 0}, batch = 1;
        for (int i = 0; i < cases[t].nb; i++) {
            g[8 + i] = cases[t].bdims[i], g[16 + i] = cases[t].sa[i], g[24 + i] = cases[t].sb[i];
            batch *= cases[t].bdims[i];
        }
        const char *a = (const char *)0x10000, *b = (const char *)0x900000;
        char *c = (char *)0x4000000;
        const char **pa = calloc((size_t)batch, sizeof *pa),
                   **pb = calloc((size_t)batch, sizeof *pb);
        char **pc = calloc((size_t)batch, sizeof *pc);
        run(a, b, c, g, cases[t].es, batch, pa, pb, pc, 2);
        long long bad = -1;
        for (long long x = 0; x < batch && bad < 0; x++) {
            long long r = x, oa = 0, ob = 0;
            for (int i = cases[t].nb - 1; i >= 0; i--) {
                long long q = r % cases[t].bdims[i];
                r /= cases[t].bdims[i];
                oa += q * cases[t].sa[i], ob += q * cases[t].sb[i];
            }
            if (pa[x] != a + oa * cases[t].es || pb[x] != b + ob * cases[t].es ||
                pc[x] != c + x * cases[t].m * cases[t].n * cases[t].es)
                bad = x;
        }
        CHECK_MSG(bad < 0, "gemm_ptrs case %zu: matrix %lld's pointers are wrong", t, bad);
        free(pa), free(pb), free(pc);
        n_programs++;
    }
    if (lib) dlclose(lib);
}

/* ---------------------------------------------------------- convolutions ---- */

/* The convolution kernels' source with a function that runs one launch of cu_conv_run's:
 * the product over gx x gy blocks, then (a split reduction) the sum over gs. */
static const char conv_glue[] =
    "struct emu_conv_args { int type; const void *a, *b; void *o, *part; conv_params p; };\n"
    "static void emu_conv_body(void *x) {\n"
    "    emu_conv_args *c = (emu_conv_args *)x;\n"
    "    switch (c->type) {\n"
    "    case 0: kiln_conv_f32((const float *)c->a, (const float *)c->b, (float *)c->o, "
    "(float *)c->part, c->p); break;\n"
    "    case 1: kiln_conv_f64((const double *)c->a, (const double *)c->b, (double *)c->o, "
    "(double *)c->part, c->p); break;\n"
    "    case 2: kiln_conv_bf16((const bf16 *)c->a, (const bf16 *)c->b, (bf16 *)c->o, (float "
    "*)c->part, c->p); break;\n"
    "    default: kiln_conv_f16((const f16 *)c->a, (const f16 *)c->b, (f16 *)c->o, (float "
    "*)c->part, c->p); break;\n"
    "    }\n"
    "}\n"
    "static void emu_conv_sum_body(void *x) {\n"
    "    emu_conv_args *c = (emu_conv_args *)x;\n"
    "    switch (c->type) {\n"
    "    case 0: kiln_conv_sum_f32((const float *)c->part, (float *)c->o, c->p); break;\n"
    "    case 1: kiln_conv_sum_f64((const double *)c->part, (double *)c->o, c->p); break;\n"
    "    case 2: kiln_conv_sum_bf16((const float *)c->part, (bf16 *)c->o, c->p); break;\n"
    "    default: kiln_conv_sum_f16((const float *)c->part, (f16 *)c->o, c->p); break;\n"
    "    }\n"
    "}\n"
    "extern \"C\" unsigned long emu_conv_params_bytes(void) { return sizeof(conv_params); }\n"
    "extern \"C\" void emu_conv(int type, const void *a, const void *b, void *o, void *part, "
    "const void *params, unsigned gx, unsigned gy, unsigned gs) {\n"
    "    emu_conv_args c = {type, a, b, o, part, {}};\n"
    "    __builtin_memcpy(&c.p, params, sizeof c.p);\n"
    "    kiln_emu_run2(gx, gy, emu_conv_body, &c);\n"
    "    if (c.p.chunks > 1) kiln_emu_run(gs, emu_conv_sum_body, &c);\n"
    "}\n";

typedef void (*emu_conv_fn)(int type, const void *a, const void *b, void *o, void *part,
                            const void *params, unsigned gx, unsigned gy, unsigned gs);

/* The operands' layouts: NCHW (x, y; w OIHW), NHWC (w HWIO), and an odd one: x CHWN,
 * w IOHW, y with its spatial axes reversed and features last, each with one axis a
 * place longer than it is, so that the result has holes it must not write. */
enum { CONV_NCHW, CONV_NHWC, CONV_ODD };

typedef struct conv_case {
    kiln_dtype t;
    int ns;
    int64_t n, groups, i, og;
    int64_t in[3], k[3], stride[3], lo[3], hi[3], ld[3], rd[3]; /* 0: 1 (strides, dilations) */
    int layout;
    bool split; /* the filter gradient's reduction must be split into chunks */
} conv_case;

/* Element strides of an array of logical axes dims[rank] stored in the axis order order[]
 * (slowest first), axis gap (-1: none) one place longer than it is; the elements its
 * buffer spans. */
static int64_t conv_layout(int rank, const int64_t *dims, const int *order, int gap,
                           int64_t *strides) {
    int64_t s = 1;
    for (int j = rank - 1; j >= 0; j--) {
        strides[order[j]] = s;
        s *= dims[order[j]] + (order[j] == gap);
    }
    return s;
}

static double conv_get(kiln_dtype t, const void *p, int64_t at) {
    switch (t) {
    case KILN_DTYPE_F32: return ((const float *)p)[at];
    case KILN_DTYPE_F64: return ((const double *)p)[at];
    case KILN_DTYPE_BF16: return kn_bf16_to_f32(((const uint16_t *)p)[at]);
    default: return kn_f16_to_f32(((const uint16_t *)p)[at]);
    }
}

/* The offset, at strides s, of element idx of a row-major array of dims[rank]. */
static int64_t conv_offset(int rank, const int64_t *dims, const int64_t *s, int64_t idx) {
    int64_t at = 0;
    for (int a = rank - 1; a >= 0; a--) {
        at += idx % dims[a] * s[a];
        idx /= dims[a];
    }
    return at;
}

/* The definition in kn_conv_desc's comment, plainly, in double: every (n, g, o, i, q, k)
 * whose read lands on an element e of x adds its product to the kind's result (row-major
 * logical index), and its magnitude to mag (for the tolerance). x, w and ct (y's shape)
 * at the descriptor's strides. */
static void conv_ref(const kn_conv_desc *c, kiln_dtype t, const void *x, const void *w,
                     const void *ct, double *want, double *mag) {
    int ns = c->ns;
    int64_t pq = 1, pk = 1, pin = 1, G = c->groups, I = c->i, O = c->og;
    for (int d = 0; d < ns; d++) pq *= c->out[d], pk *= c->k[d], pin *= c->in[d];
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t o = 0; o < O; o++)
                for (int64_t i = 0; i < I; i++)
                    for (int64_t qi = 0; qi < pq; qi++)
                        for (int64_t ki = 0; ki < pk; ki++) {
                            int64_t q[3], k[3], e[3], eflat = 0, r = qi, s = ki;
                            bool in = true;
                            for (int d = ns - 1; d >= 0; d--) {
                                q[d] = r % c->out[d], r /= c->out[d];
                                k[d] = s % c->k[d], s /= c->k[d];
                            }
                            for (int d = 0; d < ns && in; d++) {
                                int64_t p = q[d] * c->stride[d] + k[d] * c->rd[d] - c->lo[d];
                                in = p >= 0 && p % c->ld[d] == 0 && p / c->ld[d] < c->in[d];
                                e[d] = p / c->ld[d];
                                eflat = eflat * c->in[d] + e[d];
                            }
                            if (!in) continue;
                            int64_t xo = n * c->xs[0] + (g * I + i) * c->xs[1];
                            int64_t wo = (g * O + o) * c->ws[0] + i * c->ws[1];
                            int64_t yo = n * c->ys[0] + (g * O + o) * c->ys[1];
                            for (int d = 0; d < ns; d++) {
                                xo += e[d] * c->xs[2 + d];
                                wo += k[d] * c->ws[2 + d];
                                yo += q[d] * c->ys[2 + d];
                            }
                            double term;
                            int64_t at;
                            if (c->kind == KN_CONV_FORWARD) {
                                term = conv_get(t, x, xo) * conv_get(t, w, wo);
                                at = (n * G * O + g * O + o) * pq + qi;
                            } else if (c->kind == KN_CONV_INPUT_GRAD) {
                                term = conv_get(t, ct, yo) * conv_get(t, w, wo);
                                at = (n * G * I + g * I + i) * pin + eflat;
                            } else {
                                term = conv_get(t, x, xo) * conv_get(t, ct, yo);
                                at = ((g * O + o) * I + i) * pk + ki;
                            }
                            want[at] += term;
                            mag[at] += fabs(term);
                        }
}

/* A 16-bit value's place in the order of its format (for distances in ulps). */
static int64_t conv_ordinal(uint16_t b) {
    return b & 0x8000u ? -(int64_t)(b & 0x7fffu) : (int64_t)b;
}

/* Whether a result agrees with the definition's: f64 and f32 within 1e-12 and 1e-5 of the
 * sum of the magnitudes of its terms (the accumulation's rounding); 16-bit values within
 * 2 ulps of the exact result rounded to the dtype, or within the f32 accumulation's error
 * (a result much smaller than its terms). */
static bool conv_close(kiln_dtype t, const void *got, int64_t at, double want, double mag) {
    double v = conv_get(t, got, at), err = fabs(v - want);
    if (t == KILN_DTYPE_F64) return err <= 1e-12 * mag;
    if (t == KILN_DTYPE_F32) return err <= 1e-5 * mag;
    uint16_t g = ((const uint16_t *)got)[at];
    uint16_t w = t == KILN_DTYPE_BF16 ? kn_f64_to_bf16(want) : kn_f64_to_f16(want);
    int64_t ulps = conv_ordinal(g) - conv_ordinal(w);
    return (ulps >= -2 && ulps <= 2) || err <= 1e-5 * mag;
}

/* One case, every kind: x, w and ct random at their layouts' strides, the emulated launch
 * (the host's cu_conv_plan, the split's partial sums in a scratch of cu_conv_scratch's
 * size) against conv_ref at every element of the result, the result's holes untouched;
 * the filter gradient again on one block, for the same bits. */
static void conv_check(emu_conv_fn run, const conv_case *cc, int which) {
    kn_conv_desc c = {.ns = cc->ns, .n = cc->n, .groups = cc->groups, .i = cc->i, .og = cc->og};
    int ns = cc->ns, rank = ns + 2;
    int64_t xd[5] = {cc->n, cc->groups * cc->i}, wd[5] = {cc->groups * cc->og, cc->i};
    int64_t yd[5] = {cc->n, cc->groups * cc->og};
    for (int d = 0; d < ns; d++) {
        c.in[d] = cc->in[d], c.k[d] = cc->k[d], c.lo[d] = cc->lo[d];
        c.stride[d] = cc->stride[d] ? cc->stride[d] : 1;
        c.ld[d] = cc->ld[d] ? cc->ld[d] : 1;
        c.rd[d] = cc->rd[d] ? cc->rd[d] : 1;
        int64_t padded = (c.in[d] ? (c.in[d] - 1) * c.ld[d] + 1 : 0) + c.lo[d] + cc->hi[d];
        int64_t span = c.k[d] ? (c.k[d] - 1) * c.rd[d] + 1 : 0;
        c.out[d] = padded >= span ? (padded - span) / c.stride[d] + 1 : 0;
        xd[2 + d] = c.in[d], wd[2 + d] = c.k[d], yd[2 + d] = c.out[d];
    }
    int xo[5], wo[5], yo[5], gx = -1, gw = -1, gy = -1;
    for (int a = 0; a < rank; a++) xo[a] = wo[a] = yo[a] = a; /* NCHW, OIHW */
    if (cc->layout == CONV_NHWC) {
        for (int d = 0; d < ns; d++) xo[1 + d] = yo[1 + d] = 2 + d, wo[d] = 2 + d;
        xo[rank - 1] = yo[rank - 1] = 1, wo[ns] = 1, wo[ns + 1] = 0;
    } else if (cc->layout == CONV_ODD) {
        xo[0] = 1, xo[rank - 1] = 0, gx = 2;
        for (int d = 0; d < ns; d++) xo[1 + d] = 2 + d, yo[1 + d] = 1 + ns - d;
        wo[0] = 1, wo[1] = 0, gw = 0;
        yo[rank - 1] = 1, gy = 1;
    }
    int64_t nx = conv_layout(rank, xd, xo, gx, c.xs), nw = conv_layout(rank, wd, wo, gw, c.ws);
    int64_t ny = conv_layout(rank, yd, yo, gy, c.ys);
    kiln_dtype t = cc->t;
    size_t es = kiln_dtype_itemsize(t);
    void *x = malloc((size_t)nx * es + 8), *w = malloc((size_t)nw * es + 8);
    void *ct = malloc((size_t)ny * es + 8);
    test_fill_uniform(t, nx, x, &seed);
    test_fill_uniform(t, nw, w, &seed);
    test_fill_uniform(t, ny, ct, &seed);
    int type = t == KILN_DTYPE_F32 ? 0 : t == KILN_DTYPE_F64 ? 1 : t == KILN_DTYPE_BF16 ? 2 : 3;
    static const char *const kinds[3] = {"forward", "input_grad", "filter_grad"};
    for (int kind = 0; kind < 3; kind++) {
        c.kind = kind;
        const int64_t *rd = kind == 0 ? yd : kind == 1 ? xd : wd;
        const int64_t *rs = kind == 0 ? c.ys : kind == 1 ? c.xs : c.ws;
        int64_t nbuf = kind == 0 ? ny : kind == 1 ? nx : nw, count = 1;
        for (int a = 0; a < rank; a++) count *= rd[a];
        const void *a = kind == 1 ? ct : x, *b = kind == 0 ? w : kind == 1 ? w : ct;
        CHECK_MSG(cu_conv_supports(&c), "conv_lib%d %s: not supported", which, kinds[kind]);
        cu_conv_params p;
        cu_conv_plan(&c, t, true, &p);
        uint64_t part_bytes = cu_conv_scratch(&c, t);
        CHECK_MSG(!cc->split || kind != KN_CONV_FILTER_GRAD || p.chunks > 1,
                  "conv_lib%d: the filter gradient's %lld-long reduction is not split", which,
                  (long long)p.red);
        CHECK_MSG((p.chunks > 1) == (part_bytes > 0), "conv_lib%d %s: %lld chunks, %llu bytes",
                  which, kinds[kind], (long long)p.chunks, (unsigned long long)part_bytes);
        double *want = calloc((size_t)count + 1, sizeof *want);
        double *mag = calloc((size_t)count + 1, sizeof *mag);
        conv_ref(&c, t, x, w, ct, want, mag);
        void *got = malloc((size_t)nbuf * es + 8), *part = malloc(part_bytes + 8);
        memset(got, 0xa5, (size_t)nbuf * es);
        unsigned groups_y = cc->groups > 1 ? 2 : 1; /* the group loop strides too */
        if (p.groups && p.m && p.cols)
            run(type, a, b, got, part_bytes ? part : NULL, &p, 3, groups_y, 2);
        int64_t bad = -1, hole = -1;
        bool *mine = calloc((size_t)nbuf + 1, 1);
        for (int64_t e = 0; e < count; e++) {
            int64_t at = conv_offset(rank, rd, rs, e);
            mine[at] = true;
            if (bad < 0 && !conv_close(t, got, at, want[e], mag[e])) bad = e;
        }
        for (int64_t at = 0; at < nbuf && hole < 0; at++)
            for (size_t j = 0; j < es && !mine[at] && hole < 0; j++)
                if (((unsigned char *)got)[at * (int64_t)es + (int64_t)j] != 0xa5) hole = at;
        CHECK_MSG(bad < 0,
                  "conv_lib%d %s (%s): element %lld is %.9g, want %.9g (terms' magnitude %g)",
                  which, kinds[kind], kiln_dtype_name(t), (long long)bad,
                  bad < 0 ? 0 : conv_get(t, got, conv_offset(rank, rd, rs, bad)),
                  bad < 0 ? 0 : want[bad], bad < 0 ? 0 : mag[bad]);
        CHECK_MSG(hole < 0, "conv_lib%d %s: wrote the hole at %lld", which, kinds[kind],
                  (long long)hole);
        if (kind == KN_CONV_FILTER_GRAD && p.groups && p.m && p.cols) {
            /* one block for everything, the same bits (nothing depends on the grid) */
            void *again = malloc((size_t)nbuf * es + 8);
            memset(again, 0xa5, (size_t)nbuf * es);
            run(type, a, b, again, part_bytes ? part : NULL, &p, 1, 1, 1);
            CHECK_MSG(!memcmp(got, again, (size_t)nbuf * es),
                      "conv_lib%d: the filter gradient's bits change with the grid", which);
            free(again);
        }
        free(want), free(mag), free(got), free(part), free(mine);
        n_programs++;
    }
    free(x), free(w), free(ct);
}

/* From the graph to the kernel: a convolution and both its gradients traced as a user
 * would (kiln_conv_general_dilated, kiln_vjp), each CONV node's descriptor as kiln_compile
 * makes it for the device (exec_conv_desc: kinds, strides from the specs), run by the
 * emulated kernels on the parameters' bytes, against the reference interpreter's outputs. */
static void conv_nodes_check(emu_conv_fn run, kiln_dtype t, const kiln_conv_options *co,
                             const int64_t *xd, const int64_t *wd, const char *what) {
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, what, &g);
    kiln_value x = kiln_parameter(g, "x", t, 4, xd), w = kiln_parameter(g, "w", t, 4, wd);
    kiln_value y = kiln_conv_general_dilated(g, x, w, co);
    kiln_dtype yt;
    int yr;
    int64_t yd[KILN_MAX_RANK];
    kiln_value_type(g, y, &yt, &yr, yd);
    kiln_value ct = kiln_parameter(g, "ct", t, 4, yd), outs[3] = {y}, wrt[2] = {x, w};
    kiln_vjp(g, 1, &y, &ct, 2, wrt, outs + 1);
    if (!finish(g, 3, outs, what)) return;
    kiln_array *args[3] = {cmp_random_array(ctx, t, 4, xd, &seed),
                           cmp_random_array(ctx, t, 4, wd, &seed),
                           cmp_random_array(ctx, t, 4, yd, &seed)};
    kiln_array *want[3] = {0};
    CHECK_OK(ctx, kiln_interpret(g, 3, args, 3, want));
    void *host[3];
    for (int i = 0; i < 3; i++) {
        host[i] = malloc(kiln_array_nbytes(args[i]) + 8);
        kiln_array_copy_to_host(args[i], host[i], kiln_array_nbytes(args[i]));
    }
    int type = t == KILN_DTYPE_F32 ? 0 : t == KILN_DTYPE_F64 ? 1 : t == KILN_DTYPE_BF16 ? 2 : 3;
    int found = 0;
    for (uint32_t id = 1; id < g->n_nodes; id++) {
        const ir_node *n = &g->nodes[id];
        if (n->op != IR_CONV) continue;
        int o = -1; /* the output it is, and its operands among the parameters */
        for (int k = 0; k < 3; k++)
            if (g->outputs[k] == id) o = k;
        const void *ab[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 3; j++)
                if (ir_in(n)[k] == g->params[j]) ab[k] = host[j];
        CHECK_MSG(o >= 0 && ab[0] && ab[1],
                  "%s: convolution %%%u is not an output over "
                  "parameters",
                  what, id);
        if (o < 0 || !ab[0] || !ab[1]) continue;
        kn_lib_desc d;
        exec_conv_desc(g, id, &d);
        CHECK(d.op == KN_LIB_CONV && d.conv.kind == n->a.conv.kind && cu_conv_supports(&d.conv));
        cu_conv_params p;
        cu_conv_plan(&d.conv, t, true, &p);
        uint64_t part_bytes = cu_conv_scratch(&d.conv, t);
        size_t bytes = kiln_array_nbytes(want[o]);
        void *got = malloc(bytes + 8), *part = malloc(part_bytes + 8);
        if (p.groups && p.m && p.cols)
            run(type, ab[0], ab[1], got, part_bytes ? part : NULL, &p, 3, 2, 2);
        kiln_array *ga = NULL;
        kiln_dtype ot;
        int orank;
        int64_t od[KILN_MAX_RANK];
        kiln_value_type(g, outs[o], &ot, &orank, od);
        kiln_array_create(ctx, ot, orank, od, got, &ga);
        char w2[96];
        snprintf(w2, sizeof w2, "%s %s", what, ir_conv_kind_name(n->a.conv.kind));
        CHECK_MSG(cmp_arrays(ga, want[o], 1e-5, 1e-12, w2), "%s: emulated kernel != reference", w2);
        kiln_array_destroy(ga);
        free(got), free(part);
        found++;
        n_programs++;
    }
    CHECK_MSG(found == 3, "%s: %d convolution nodes, want 3", what, found);
    for (int i = 0; i < 3; i++)
        free(host[i]), kiln_array_destroy(args[i]), kiln_array_destroy(want[i]);
    kiln_graph_destroy(g);
}

static void test_conv_nodes(emu_conv_fn run) {
    int64_t xn[4] = {2, 9, 7, 4}, wn[4] = {3, 2, 2, 6}; /* NHWC x, HWIO w: 2 groups */
    kiln_conv_options nhwc = {.layout = KILN_CONV_NHWC,
                              .window_strides = {2, 1},
                              .padding = KILN_PADDING_SAME,
                              .rhs_dilation = {1, 2},
                              .feature_group_count = 2};
    int64_t xs[4] = {7, 3, 2, 5}, ws[4] = {5, 4, 3, 5}; /* specs: odd axes everywhere */
    kiln_conv_options specs = {.layout = KILN_CONV_SPECS,
                               .lhs_spec = {2, 3, 0, 1},
                               .rhs_spec = {2, 3, 0, 1},
                               .out_spec = {1, 0, 3, 2},
                               .lhs_dilation = {2, 1},
                               .pad_lo = {1, -1},
                               .pad_hi = {0, 2}};
    static const kiln_dtype ts[] = {KILN_DTYPE_F32, KILN_DTYPE_BF16, KILN_DTYPE_F64};
    for (int i = 0; i < 3; i++) {
        conv_nodes_check(run, ts[i], &nhwc, xn, wn, "conv_nodes_nhwc");
        conv_nodes_check(run, ts[i], &specs, xs, ws, "conv_nodes_specs");
    }
}

/* The convolution's kernels (cuda_conv.c) for every kind against the definition: 1, 2 and
 * 3 spatial axes; strides 1 to 3, rhs and lhs dilation, asymmetric and negative padding;
 * groups and depthwise; NCHW, NHWC and odd layouts with holes; sizes that fill no tile
 * (1, 7, 33, 65 rows or columns); a filter gradient split into chunks; empty ones; f32,
 * f64, bf16 and f16. KILN_EMU_ONLY=conv_lib runs these, conv_lib<i> one. */
static void test_conv_lib(void) {
    const char *only = getenv("KILN_EMU_ONLY");
    if (only && strncmp(only, "conv_lib", 8)) return;
    size_t len;
    const char *src = cu_conv_source(&len);
    void *lib = NULL, *fn = emu_library("conv_lib", src, len, conv_glue, "emu_conv", &lib);
    emu_conv_fn run;
    memcpy(&run, &fn, sizeof run);
    void *sz = lib ? dlsym(lib, "emu_conv_params_bytes") : NULL;
    unsigned long (*params_bytes)(void) = NULL;
    memcpy(&params_bytes, &sz, sizeof sz);
    CHECK_MSG(params_bytes && params_bytes() == sizeof(cu_conv_params),
              "conv_params is not cu_conv_params' layout");
    if (lib && params_bytes) test_conv_nodes(run);
    const kiln_dtype F32 = KILN_DTYPE_F32, F64 = KILN_DTYPE_F64, BF16 = KILN_DTYPE_BF16,
                     F16 = KILN_DTYPE_F16;
    const conv_case cases[] = {
        /* 1-D: stride 3, rhs dilation 2, asymmetric padding; 65 features, 33 positions */
        {F32, 1, 3, 1, 65, 7, {33}, {3}, {3}, {2}, {1}, {0}, {2}, CONV_NCHW, false},
        /* 2-D NHWC: 65 output features, strides (2, 1), rhs dilation (1, 2) */
        {F32,
         2,
         2,
         1,
         4,
         65,
         {7, 9},
         {3, 3},
         {2, 1},
         {1, 0},
         {1, 2},
         {0},
         {1, 2},
         CONV_NHWC,
         false},
        /* 2-D odd layout, 2 groups, lhs dilation 2, a crop (lo -1) and a negative hi */
        {F32, 2, 2, 2, 3, 5, {8, 5}, {2, 3}, {0}, {-1, 1}, {0, -1}, {2, 1}, {0}, CONV_ODD, false},
        /* depthwise: I = 1, a group per channel */
        {F32, 2, 2, 6, 1, 1, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0}, {0}, CONV_NHWC, false},
        /* a filter gradient over 4 x 24 x 24 positions: split */
        {F32, 2, 4, 1, 2, 3, {24, 24}, {3, 3}, {0}, {1, 1}, {1, 1}, {0}, {0}, CONV_NCHW, true},
        /* one of everything */
        {F32, 1, 1, 1, 1, 1, {1}, {1}, {0}, {0}, {0}, {0}, {0}, CONV_NCHW, false},
        /* empty: no batch (the filter gradient is zeros); no output positions */
        {F32, 2, 0, 2, 3, 2, {4, 4}, {3, 3}, {0}, {0}, {0}, {0}, {0}, CONV_NCHW, false},
        {F32, 1, 2, 1, 3, 2, {2}, {3}, {0}, {0}, {0}, {0}, {0}, CONV_NHWC, false},
        /* 3-D, strides 1 to 3, rhs dilation on one axis */
        {F64,
         3,
         1,
         1,
         2,
         4,
         {5, 4, 6},
         {2, 3, 2},
         {1, 2, 3},
         {1, 1, 0},
         {0, 1, 2},
         {0},
         {1, 1, 2},
         CONV_NCHW,
         false},
        {F64, 2, 2, 2, 3, 4, {9, 7}, {3, 2}, {2, 1}, {1, 0}, {1, 1}, {0}, {2, 1}, CONV_NHWC, false},
        /* 16 bits: grouped NHWC; a split over a last, short chunk; a depthwise channel
         * multiplier in the odd layout; lhs dilation with stride 2 and a crop */
        {BF16, 2, 2, 2, 5, 7, {10, 6}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {0}, {0}, CONV_NHWC, false},
        {BF16, 2, 2, 1, 3, 2, {20, 21}, {2, 2}, {0}, {0, 1}, {1, 0}, {0}, {0}, CONV_NCHW, true},
        {F16, 2, 1, 4, 1, 2, {7, 8}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {0}, {0}, CONV_ODD, false},
        {F16, 1, 3, 1, 33, 3, {12}, {3}, {2}, {-1}, {1}, {2}, {0}, CONV_NCHW, false},
    };
    for (int i = 0; run && i < (int)(sizeof cases / sizeof cases[0]); i++) {
        char name[32];
        snprintf(name, sizeof name, "conv_lib%d", i);
        if (only && strcmp(only, "conv_lib") && strcmp(only, name)) continue;
        conv_check(run, &cases[i], i);
    }
    if (lib) dlclose(lib);
}

int main(void) {
    const char *on = getenv("KILN_TEST_CUDA_EMULATE");
    if (!on || strcmp(on, "1")) return test_skip("a long run; set KILN_TEST_CUDA_EMULATE=1");
    if (system("g++ --version >/dev/null 2>&1"))
        return test_skip("no g++ to compile the CUDA C as C++");
    /* one compile tier: the harness swaps the -O3 program's loop kernels for their
     * emulated CUDA, which a first tier (kernels run from their descriptions, the -O3 build
     * swapped in later, in the background) would bypass or undo mid-run */
    if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
    kiln_context_options o = {.ignore_environment = true, .cache_dir = dir, .compile_tiers = 1};
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    gpu_start();
    test_attention();
    test_attention_grad();
    test_sort();
    test_scatter();
    test_gemm_ptrs();
    test_conv_lib();
    test_forms();
    test_half();
    test_short_rows();
    test_conv();
    test_gather();
    test_control();
    test_linalg();
    test_half_text();
    test_programs(rp_program_count(1));
    gpu_stop();
    printf("test_cuda_emulate: %d programs run as emulated CUDA (%d split reductions)\n",
           n_programs, n_split);
    kiln_context_destroy(ctx);
    int rc = test_summary("test_cuda_emulate");
    if (rc || getenv("KILN_EMU_KEEP"))
        printf("test_cuda_emulate: kept %s (the printed sources and g++'s logs)\n", dir);
    else
        test_remove_dir(dir);
    return rc;
}
