/* test_backend.c — the backend table (src/backend/backend_impl.h) and the dot lowering that
 * feeds it: the CPU fills every slot its contract needs; its state is lazy (no thread, no
 * compiler run until first needed); a program compiled, looked up and launched through the
 * table computes what the kernel says; gemm and permute through the table agree with plain
 * loops on the layouts lower_dot chooses; and a backend that lacks a slot a program needs
 * makes kiln_compile fail with a message naming the op and the slot. */
#include "test.h"
#include "rng.h"

#include "backend/cpu/cpu.h"
#include "backend/device.h"
#include "codegen/lower_dot.h"
#include "runtime/array.h"

#include <dirent.h>
#include <sys/stat.h>

static kiln_context *context_with_threads(int threads) {
    kiln_context_options o;
    memset(&o, 0, sizeof o);
    o.ignore_environment = true;
    o.num_threads = threads;
    const char *dir = getenv("KILN_CACHE_DIR"); /* keep the suite's private kernel cache */
    if (dir) o.cache_dir = dir;
    kiln_context *ctx = NULL;
    char err[512];
    if (kiln_context_create(&o, &ctx, err, sizeof err)) {
        fprintf(stderr, "cannot create a context: %s\n", err);
        exit(2);
    }
    return ctx;
}

static int thread_count(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_cpu_slots(void) {
    const kn_backend *b = &kn_cpu_backend;
    CHECK(b->name && !strcmp(b->name, "cpu"));
    CHECK(b->open && b->close && b->device_count && b->memory_info);
    CHECK(b->region_alloc && b->region_free);
    CHECK(b->program_compile && b->program_free && b->kernel_get && b->launch);
    CHECK(b->launch_prepare); /* the pool starts there, before a run's first kernel */
    CHECK(b->lib_supports && b->lib_run && b->lib_scratch && b->gemm_warm);
    /* every op but CONV: the CPU runs convolutions as their primitive form (expand.c) */
    for (int op = 0; op < KN_LIB_NUM_OPS; op++)
        CHECK(b->lib_supports(NULL, 0, op, NULL) == (op != KN_LIB_CONV));
    int n = 0;
    const kn_backend *const *list = backend_list(&n);
    CHECK(n >= 1 && list[0] == &kn_cpu_backend); /* device 0 is the CPU */
}

/* A context that never compiles never probes the compiler nor starts a thread; the
 * first run starts the pool once. */
static void test_lazy_state(void) {
    int before = thread_count();
    kiln_context *ctx = context_with_threads(3);
    void *st = ctx->devices[0].state;
    cc_stats cs;
    cc_get_stats(cpu_backend_compiler(st), &cs);
    CHECK(cs.compiles == 0 && cs.disk_hits == 0 && cs.disk_misses == 0);
    CHECK(thread_count() == before);
    CHECK_OK(ctx, kn_cpu_backend.launch_prepare(st, 0));
    CHECK(thread_count() == before + 2); /* 3 threads counting the caller */
    kn_pool *p = NULL, *again = NULL;
    CHECK_OK(ctx, cpu_backend_pool(st, &p));
    CHECK_OK(ctx, kn_cpu_backend.launch_prepare(st, 0));
    CHECK_OK(ctx, cpu_backend_pool(st, &again));
    CHECK(p && p == again && pool_num_threads(p) == 3 && thread_count() == before + 2);
    kiln_context_destroy(ctx);
    CHECK(thread_count() == before);

    /* gemm_warm (oneDNN's one-time set-up while the compiler runs) leaves no thread behind:
     * program_compile joins it, and so does close when no compile came */
    for (int compile = 0; compile < 2; compile++) {
        ctx = context_with_threads(1);
        st = ctx->devices[0].state;
        kn_cpu_backend.gemm_warm(st, 0, KILN_DTYPE_F32);
        kn_cpu_backend.gemm_warm(st, 0, KILN_DTYPE_F32); /* once per state */
        kn_cpu_backend.gemm_warm(st, 0, KILN_DTYPE_I32); /* nothing to warm */
        if (compile) {
            kn_program *prog = NULL;
            kn_program_info info;
            static const char src[] = "void kiln_k0(void) {}\n";
            CHECK_OK(ctx, kn_cpu_backend.program_compile(st, 0, src, sizeof src - 1, &prog, &info));
            CHECK(thread_count() == before);
            kn_cpu_backend.program_free(st, prog);
        }
        kiln_context_destroy(ctx);
        CHECK(thread_count() == before);
    }
}

#define SRC_SQUARE                                                                                 \
    "#include <stdint.h>\n"                                                                        \
    "void kiln_k0(void *const *b, int64_t begin, int64_t end) {\n"                                 \
    "    const float *x = b[0]; float *y = b[1];\n"                                                \
    "    for (int64_t i = begin; i < end; i++) y[i] = x[i] * x[i];\n"                              \
    "}\n"

/* program_compile -> kernel_get -> launch_prepare -> launch, as src/runtime/ drives them. */
static void test_program_through_table(void) {
    kiln_context *ctx = context_with_threads(3);
    const kn_backend *b = ctx->devices[0].backend;
    void *st = ctx->devices[0].state;
    kn_program *prog = NULL;
    kn_program_info info = {.code_bytes = 1234, .from_cache = true};
    CHECK_OK(ctx, b->program_compile(st, 0, SRC_SQUARE, strlen(SRC_SQUARE), &prog, &info));
    CHECK(prog && info.code_bytes > 0);
    if (!prog) { /* the compile failed: CHECK_OK said why, nothing to run */
        kiln_context_destroy(ctx);
        return;
    }
    void *k = NULL, *missing = (void *)1;
    CHECK_OK(ctx, b->kernel_get(st, prog, "kiln_k0", &k));
    CHECK(k != NULL);
    CHECK_STATUS(b->kernel_get(st, prog, "kiln_k7", &missing), KILN_STATUS_INTERNAL);
    CHECK(missing == NULL);
    CHECK_CONTAINS(kiln_last_error(ctx), "no kernel kiln_k7");
    enum { N = 10007 };
    float *x = malloc(N * sizeof *x), *y = calloc(N, sizeof *y);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 97) - 48.0f;
    void *bufs[2] = {x, y};
    CHECK_OK(ctx, b->launch_prepare(st, 0));
    CHECK_OK(ctx, b->launch(st, 0, k, bufs, 2, N, 64)); /* split over the pool */
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += y[i] != x[i] * x[i];
    CHECK_MSG(!wrong, "%d of %d items wrong", wrong, N);
    b->program_free(st, prog);
    b->program_free(st, NULL);
    free(x), free(y);
    kiln_context_destroy(ctx);
}

/* ---------------------------------------------------- dot lowering + gemm ---- */

/* A one-node dot graph: lhs, rhs parameters of the given shapes. */
static kiln_graph *dot_graph(kiln_context *ctx, int lr, const int64_t *ld, int rr,
                             const int64_t *rd, const kiln_dot_dims *dd) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "dot", &g));
    kiln_value l = kiln_parameter(g, "l", KILN_DTYPE_F64, lr, ld);
    kiln_value r = kiln_parameter(g, "r", KILN_DTYPE_F64, rr, rd);
    kiln_value out = kiln_dot_general(g, l, r, dd);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
    return g;
}

/* Runs the lowered dot through the CPU table (permute into scratch, then gemm) and
 * compares with the reference interpreter. */
static void check_lowered(kiln_context *ctx, kiln_graph *g, const lower_dot *d) {
    const kn_backend *b = ctx->devices[0].backend;
    void *st = ctx->devices[0].state;
    uint32_t id = g->outputs[0];
    const ir_node *n = &g->nodes[id];
    const ir_node *x[2] = {&g->nodes[ir_in(n)[0]], &g->nodes[ir_in(n)[1]]};
    double *in[2], *scratch = calloc(1, d->scratch + 8);
    kiln_array *args[2], *ref = NULL;
    for (int i = 0; i < 2; i++) {
        int64_t cnt = 0;
        ir_shape_numel(&x[i]->shape, &cnt);
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F64, x[i]->shape.rank, x[i]->shape.dims,
                                        NULL, &args[i]));
        in[i] = args[i]->data;
        for (int64_t j = 0; j < cnt; j++) in[i][j] = (double)((j * 7 + i * 3) % 11) - 5.0;
    }
    CHECK_OK(ctx, kiln_interpret(g, 2, args, 1, &ref));
    int64_t outn = 0;
    ir_shape_numel(&n->shape, &outn);
    double *c = calloc((size_t)outn + 1, sizeof *c);
    const void *ops[2] = {in[0], in[1]};
    for (int i = 0; i < 2; i++) {
        if (!(i ? d->pack_b : d->pack_a)) continue;
        void *dst = (char *)scratch + (i ? d->rhs_offset : 0);
        kn_lib_desc pd = {.op = KN_LIB_PERMUTE, .dtype = KILN_DTYPE_F64};
        pd.permute.rank = x[i]->shape.rank;
        for (int a = 0; a < pd.permute.rank; a++) {
            pd.permute.dims[a] = x[i]->shape.dims[a];
            pd.permute.perm[a] = i ? d->perm_b[a] : d->perm_a[a];
        }
        CHECK_OK(ctx, b->lib_run(st, 0, &pd, (void *[]){(void *)ops[i], dst}));
        ops[i] = dst;
    }
    kn_lib_desc gd = {.op = KN_LIB_GEMM, .dtype = KILN_DTYPE_F64, .gemm = d->gemm};
    CHECK_OK(ctx, b->lib_run(st, 0, &gd, (void *[]){(void *)ops[0], (void *)ops[1], c, NULL}));
    const double *want = ref ? ref->data : NULL;
    int wrong = 0;
    for (int64_t j = 0; want && j < outn; j++) wrong += c[j] != want[j];
    CHECK_MSG(want && !wrong, "%d of %lld elements differ from the reference", wrong,
              (long long)outn);
    kiln_array_destroy(ref), kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    free(c), free(scratch);
}

static void test_lower_dot(void) {
    kiln_context *ctx = test_context();
    lower_dot d;
    /* [4,3] x [3,5]: both read in place, row-major */
    kiln_dot_dims mm = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    kiln_graph *g = dot_graph(ctx, 2, (int64_t[]){4, 3}, 2, (int64_t[]){3, 5}, &mm);
    lower_dot_plan(g, g->outputs[0], &d);
    CHECK(!d.pack_a && !d.pack_b && !d.gemm.trans_a && !d.gemm.trans_b && d.scratch == 0);
    CHECK(d.gemm.m == 4 && d.gemm.n == 5 && d.gemm.k == 3 && d.gemm.lda == 3 && d.gemm.ldb == 5);
    check_lowered(ctx, g, &d);
    kiln_graph_destroy(g);
    /* lhs contracted on axis 0: a transposed view (BLAS's trans flag), not a copy */
    kiln_dot_dims tm = {.n_contract = 1, .lhs_contract = {0}, .rhs_contract = {0}};
    g = dot_graph(ctx, 2, (int64_t[]){3, 4}, 2, (int64_t[]){3, 5}, &tm);
    lower_dot_plan(g, g->outputs[0], &d);
    CHECK(!d.pack_a && d.gemm.trans_a && d.gemm.lda == 4 && d.scratch == 0);
    check_lowered(ctx, g, &d);
    kiln_graph_destroy(g);
    /* batch axis in the middle of both: strided batches, still no copy */
    kiln_dot_dims bm = {.n_contract = 1,
                        .lhs_contract = {2},
                        .rhs_contract = {0},
                        .n_batch = 1,
                        .lhs_batch = {1},
                        .rhs_batch = {1}};
    g = dot_graph(ctx, 3, (int64_t[]){4, 2, 3}, 3, (int64_t[]){3, 2, 5}, &bm);
    lower_dot_plan(g, g->outputs[0], &d);
    CHECK(!d.pack_a && !d.pack_b && d.gemm.nb == 1 && d.gemm.batch == 2);
    CHECK(d.gemm.bstride_a[0] == 3 && d.gemm.bstride_b[0] == 5);
    check_lowered(ctx, g, &d);
    kiln_graph_destroy(g);
    /* lhs free axes 0 and 2 around the contracted axis: no strided view, packed */
    kiln_dot_dims pk = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    g = dot_graph(ctx, 3, (int64_t[]){3, 2, 4}, 2, (int64_t[]){2, 5}, &pk);
    lower_dot_plan(g, g->outputs[0], &d);
    CHECK(d.pack_a && !d.pack_b && d.perm_a[0] == 0 && d.perm_a[1] == 2 && d.perm_a[2] == 1);
    CHECK(d.scratch == 24 * sizeof(double) && d.gemm.m == 12 && d.gemm.k == 2);
    check_lowered(ctx, g, &d);
    kiln_graph_destroy(g);
    /* both packed: the rhs starts at an aligned offset after the lhs */
    kiln_dot_dims pp = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {1}};
    g = dot_graph(ctx, 3, (int64_t[]){3, 2, 4}, 3, (int64_t[]){5, 2, 3}, &pp);
    lower_dot_plan(g, g->outputs[0], &d);
    CHECK(d.pack_a && d.pack_b && d.rhs_offset == 24 * sizeof(double)); /* 192: 64-aligned */
    CHECK(d.scratch == d.rhs_offset + 30 * sizeof(double));
    check_lowered(ctx, g, &d);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
}

/* ---------------------------------------------- a backend missing a slot ---- */

static kiln_status compile_with(kiln_context *ctx, const kn_backend *b, kiln_graph *g) {
    const kn_backend *real = ctx->devices[0].backend;
    ctx->devices[0].backend = b; /* same state: only the table's slots differ */
    kiln_executable *e = NULL;
    kiln_status s = kiln_compile(g, NULL, &e);
    kiln_executable_destroy(e);
    ctx->devices[0].backend = real;
    return s;
}

/* The CPU's lib_supports saying no to one op: a backend without it (the same state). */
static int refused_op = -1;
static bool refusing_supports(void *state, int device, kn_lib_op op, const kn_lib_desc *d) {
    return (int)op != refused_op && kn_cpu_backend.lib_supports(state, device, op, d);
}

static kn_backend without_op(kn_lib_op op) {
    kn_backend b = kn_cpu_backend;
    refused_op = (int)op;
    b.lib_supports = refusing_supports;
    return b;
}

static void test_missing_slots(void) {
    kiln_context *ctx = test_context();
    kiln_dot_dims pk = {.n_contract = 1, .lhs_contract = {1}, .rhs_contract = {0}};
    kiln_graph *plain = dot_graph(ctx, 2, (int64_t[]){4, 3}, 2, (int64_t[]){3, 5}, &pk);
    kiln_graph *packed = dot_graph(ctx, 3, (int64_t[]){3, 2, 4}, 2, (int64_t[]){2, 5}, &pk);
    kn_backend b = without_op(KN_LIB_GEMM);
    CHECK_STATUS(compile_with(ctx, &b, plain), KILN_STATUS_UNIMPLEMENTED);
    CHECK_CONTAINS(kiln_last_error(ctx), "dot_general");
    CHECK_CONTAINS(kiln_last_error(ctx), "cpu backend's gemm");
    b = without_op(KN_LIB_PERMUTE);
    CHECK_STATUS(compile_with(ctx, &b, plain), KILN_STATUS_OK); /* read in place: no permute */
    CHECK_STATUS(compile_with(ctx, &b, packed), KILN_STATUS_UNIMPLEMENTED);
    CHECK_CONTAINS(kiln_last_error(ctx), "permute");
    b = kn_cpu_backend, b.program_compile = NULL;
    CHECK_STATUS(compile_with(ctx, &b, plain), KILN_STATUS_UNIMPLEMENTED);
    CHECK_CONTAINS(kiln_last_error(ctx), "cannot run compiled programs");
    kiln_graph *sg = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "scatter", &sg));
    kiln_value op = kiln_parameter(sg, "op", KILN_DTYPE_F32, 2, (int64_t[]){4, 3});
    kiln_value ix = kiln_parameter(sg, "ix", KILN_DTYPE_I32, 1, (int64_t[]){2});
    kiln_value up = kiln_parameter(sg, "up", KILN_DTYPE_F32, 2, (int64_t[]){2, 3});
    kiln_value out = kiln_scatter_add_rows(sg, op, ix, up);
    CHECK_OK(ctx, kiln_graph_finish(sg, 1, &out));
    b = without_op(KN_LIB_SCATTER_ADD_ROWS);
    CHECK_STATUS(compile_with(ctx, &b, sg), KILN_STATUS_UNIMPLEMENTED);
    CHECK_CONTAINS(kiln_last_error(ctx), "scatter_add_rows");
    kiln_graph *cg = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "scan", &cg));
    kiln_value cs =
        kiln_cumsum(cg, kiln_parameter(cg, "x", KILN_DTYPE_F32, 2, (int64_t[]){4, 3}), 1, false);
    CHECK_OK(ctx, kiln_graph_finish(cg, 1, &cs));
    b = without_op(KN_LIB_CUMSUM);
    CHECK_STATUS(compile_with(ctx, &b, cg), KILN_STATUS_UNIMPLEMENTED);
    CHECK_CONTAINS(kiln_last_error(ctx), "cumsum");
    CHECK_CONTAINS(kiln_last_error(ctx), "cpu backend's cumsum");
    kiln_graph_destroy(cg);
    kiln_graph_destroy(sg), kiln_graph_destroy(plain), kiln_graph_destroy(packed);
    kiln_context_destroy(ctx);
}

/* Attention without the backend's kernel (lib_supports says no) compiles to its
 * primitive form, not to an error; and the kernel fits its work into the scratch it was given when
 * the pool has more threads than the plan had slots for (the pool follows the process's
 * affinity when it is made, which may be after the compile): the same bits with 1 slot as
 * with 3. */
static void test_attention_slot(void) {
    kiln_context *ctx = context_with_threads(3);
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "attn", &g));
    int64_t d[4] = {1, 200, 4, 8};
    kiln_value q = kiln_parameter(g, "q", KILN_DTYPE_F32, 4, d);
    kiln_value out =
        kiln_dot_product_attention(g, q, q, q, &(kiln_attention_options){.is_causal = true});
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &out));
    kn_backend b = without_op(KN_LIB_ATTENTION);
    CHECK_OK(ctx, compile_with(ctx, &b, g));
    kiln_graph_destroy(g);

    void *st = ctx->devices[0].state;
    CHECK_OK(ctx, kn_cpu_backend.launch_prepare(st, 0)); /* the pool: 3 threads */
    kn_lib_desc ad = {.op = KN_LIB_ATTENTION, .dtype = KILN_DTYPE_F32};
    ad.attention = (kn_attention_desc){.dtype = KILN_DTYPE_F32,
                                       .batch = 1,
                                       .t = 200,
                                       .s = 200,
                                       .heads = 4,
                                       .kv_heads = 4,
                                       .h = 8,
                                       .hv = 8,
                                       .scale = 0.35,
                                       .causal = true};
    uint64_t three = kn_cpu_backend.lib_scratch(st, 0, &ad), one = three / 3;
    size_t n = 200 * 4 * 8;
    float *x = malloc(n * sizeof *x), *y1 = malloc(n * sizeof *y1), *y3 = malloc(n * sizeof *y3);
    uint64_t seed = 5;
    test_fill_uniform(KILN_DTYPE_F32, (int64_t)n, x, &seed);
    void *ws = malloc(three), *ws1 = malloc(one); /* exact sizes: ASan sees any overrun */
    ad.scratch_bytes = three;
    CHECK_OK(ctx, kn_cpu_backend.lib_run(st, 0, &ad, (void *[]){x, x, x, y3, NULL, ws}));
    ad.scratch_bytes = one;
    CHECK_OK(ctx, kn_cpu_backend.lib_run(st, 0, &ad, (void *[]){x, x, x, y1, NULL, ws1}));
    CHECK(!memcmp(y1, y3, n * sizeof *y1));
    /* less scratch than one thread's slot is refused, never overrun */
    ad.scratch_bytes = one / 2;
    CHECK_STATUS(kn_cpu_backend.lib_run(st, 0, &ad, (void *[]){x, x, x, y1, NULL, ws1}),
                 KILN_STATUS_INTERNAL);
    CHECK_CONTAINS(kiln_last_error(ctx), "scratch hold no thread's slot");
    free(x), free(y1), free(y3), free(ws), free(ws1);
    kiln_context_destroy(ctx);
}

/* A mapped region (1 MiB or more) is readable a little before its start and after its
 * end: gcc's vectoriser may load a whole vector around an access it if-converted (a
 * concatenate kernel read 12 bytes before its operand's first row, which faulted when the
 * operand began a region right after unmapped memory). A read outside would crash here. */
/* Every library op has a name and a buffer count (a hole in lib_ops.c's table, an op
 * inserted before the last without its entry, would name it "?" and give it no buffers). */
static void test_lib_op_table(void) {
    for (int op = 0; op < KN_LIB_NUM_OPS; op++) {
        CHECK_MSG(strcmp(kn_lib_op_name((kn_lib_op)op), "?") != 0, "kn_lib_op %d has no name", op);
        CHECK_MSG(kn_lib_op_buffers((kn_lib_op)op) > 0, "kn_lib_op %d has no buffers", op);
    }
    CHECK(strcmp(kn_lib_op_name(KN_LIB_NUM_OPS), "?") == 0);
    CHECK(kn_lib_op_buffers(KN_LIB_NUM_OPS) == 0);
}

static void test_region_margins(void) {
    kiln_context *ctx = test_context();
    void *st = ctx->devices[0].state;
    size_t sizes[3] = {(size_t)1 << 20, ((size_t)1 << 20) + 12345, (size_t)3 << 20};
    size_t aligns[2] = {256, (size_t)1 << 16};
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 2; a++) {
            void *p = NULL;
            CHECK_OK(ctx, kn_cpu_backend.region_alloc(st, 0, sizes[i], aligns[a], &p));
            if (!p) continue;
            CHECK(((uintptr_t)p & (aligns[a] - 1)) == 0);
            const volatile unsigned char *c = p;
            unsigned sum = 0;
            for (int k = 1; k <= 64; k++) sum += c[-k] + c[sizes[i] - 1 + k];
            CHECK(sum == 0); /* fresh anonymous memory reads as zeros */
            memset(p, 1, sizes[i]);
            kn_cpu_backend.region_free(st, 0, p, sizes[i]);
        }
    kiln_context_destroy(ctx);
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    RUN(test_cpu_slots);
    RUN(test_region_margins);
    RUN(test_lib_op_table);
    RUN_CC(test_attention_slot);
    RUN_CC(test_lazy_state);
    RUN_CC(test_program_through_table);
    RUN(test_lower_dot);
    RUN_CC(test_missing_slots);
    return test_summary("test_backend");
}
