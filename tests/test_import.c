/* test_import.c — StableHLO and HLO text exported by JAX 0.10 (tests/data/import/, made by
 * make_fixtures.py there) imported, compiled, run, and compared with the outputs JAX
 * computed for the same inputs and with kiln's reference interpreter; the error paths
 * (an unsupported op, malformed text, a type that disagrees) name the op, its line and
 * column and kiln's version, and leave nothing behind. */
#include "fault.h"
#include "test.h"

#include <stdint.h>
#include <string.h>

#define DATA       KILN_SOURCE_DIR "/tests/data/import/"
#define MAX_ARRAYS 64

typedef struct fixture {
    int n_in, n_out;
    kiln_dtype in_t[MAX_ARRAYS], out_t[MAX_ARRAYS];
    int in_rank[MAX_ARRAYS], out_rank[MAX_ARRAYS];
    int64_t in_dims[MAX_ARRAYS][KILN_MAX_RANK], out_dims[MAX_ARRAYS][KILN_MAX_RANK];
    double *in[MAX_ARRAYS], *out[MAX_ARRAYS];
    int64_t in_n[MAX_ARRAYS], out_n[MAX_ARRAYS];
} fixture;

static kiln_dtype dtype_named(const char *s) {
    if (!strcmp(s, "f32")) return KILN_DTYPE_F32;
    if (!strcmp(s, "f64")) return KILN_DTYPE_F64;
    if (!strcmp(s, "i32")) return KILN_DTYPE_I32;
    if (!strcmp(s, "i64")) return KILN_DTYPE_I64;
    if (!strcmp(s, "bool")) return KILN_DTYPE_BOOL;
    return KILN_DTYPE_INVALID;
}

/* NAME.io: "in|out DTYPE RANK DIMS..." then the values, per array. */
static bool read_fixture(const char *name, fixture *fx) {
    char path[512];
    snprintf(path, sizeof path, DATA "%s.io", name);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    memset(fx, 0, sizeof *fx);
    char kind[8], dt[8];
    int rank;
    while (fscanf(f, "%7s %7s %d", kind, dt, &rank) == 3) {
        bool in = !strcmp(kind, "in");
        int k = in ? fx->n_in++ : fx->n_out++;
        int64_t *dims = in ? fx->in_dims[k] : fx->out_dims[k], n = 1;
        for (int i = 0; i < rank; i++) {
            long long d;
            if (fscanf(f, "%lld", &d) != 1) break;
            dims[i] = d, n *= d;
        }
        double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            if (fscanf(f, "%lf", &v[i]) != 1) v[i] = NAN;
        if (in) {
            fx->in_t[k] = dtype_named(dt), fx->in_rank[k] = rank, fx->in[k] = v, fx->in_n[k] = n;
        } else {
            fx->out_t[k] = dtype_named(dt), fx->out_rank[k] = rank, fx->out[k] = v;
            fx->out_n[k] = n;
        }
    }
    fclose(f);
    return fx->n_in > 0 && fx->n_out > 0;
}

static void free_fixture(fixture *fx) {
    for (int i = 0; i < fx->n_in; i++) free(fx->in[i]);
    for (int i = 0; i < fx->n_out; i++) free(fx->out[i]);
}

static kiln_graph *import_file(kiln_context *ctx, const char *name, const char *ext) {
    char path[512];
    snprintf(path, sizeof path, DATA "%s.%s", name, ext);
    char *text = test_read_file(path);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) return NULL;
    kiln_graph *g = NULL;
    kiln_status s = !strcmp(ext, "mlir") ? kiln_import_stablehlo(ctx, text, strlen(text), &g)
                                         : kiln_import_hlo(ctx, text, strlen(text), &g);
    CHECK_MSG(s == KILN_STATUS_OK, "importing %s: %s", path, kiln_last_error(ctx));
    free(text);
    return g;
}

static bool make_args(kiln_context *ctx, const fixture *fx, kiln_array **args) {
    for (int i = 0; i < fx->n_in; i++) {
        size_t size = kiln_dtype_itemsize(fx->in_t[i]) * (size_t)(fx->in_n[i] ? fx->in_n[i] : 1);
        void *data = malloc(size);
        kiln_convert_host(ctx, KILN_DTYPE_F64, fx->in[i], fx->in_t[i], data, fx->in_n[i]);
        kiln_status s =
            kiln_array_create(ctx, fx->in_t[i], fx->in_rank[i], fx->in_dims[i], data, &args[i]);
        free(data);
        if (s) return false;
    }
    return true;
}

/* outs against the fixture's values: the dtype, the shape, then each float element within
 * a tolerance (f32 programs: JAX on XLA's CPU and kiln sum in other orders), each integer
 * and bool exactly. */
static void compare(kiln_context *ctx, const char *what, const fixture *fx, kiln_array **outs,
                    double tol) {
    for (int i = 0; i < fx->n_out; i++) {
        CHECK_MSG(kiln_array_dtype(outs[i]) == fx->out_t[i], "%s output %d: dtype %s, want %s",
                  what, i, kiln_dtype_name(kiln_array_dtype(outs[i])),
                  kiln_dtype_name(fx->out_t[i]));
        CHECK_MSG(kiln_array_size(outs[i]) == fx->out_n[i],
                  "%s output %d: %lld elements, want %lld", what, i,
                  (long long)kiln_array_size(outs[i]), (long long)fx->out_n[i]);
        if (kiln_array_dtype(outs[i]) != fx->out_t[i] || kiln_array_size(outs[i]) != fx->out_n[i])
            continue;
        size_t size = kiln_array_nbytes(outs[i]);
        void *raw = malloc(size ? size : 1);
        double *got = malloc((size_t)(fx->out_n[i] ? fx->out_n[i] : 1) * sizeof *got);
        kiln_array_copy_to_host(outs[i], raw, size);
        kiln_convert_host(ctx, fx->out_t[i], raw, KILN_DTYPE_F64, got, fx->out_n[i]);
        int bad = 0;
        kiln_dtype t = fx->out_t[i];
        double tt = t == KILN_DTYPE_I32 || t == KILN_DTYPE_I64 || t == KILN_DTYPE_BOOL
                        ? 0 /* integers (jax.random's bits too) exactly */
                        : tol;
        for (int64_t j = 0; j < fx->out_n[i]; j++)
            if (!test_close(got[j], fx->out[i][j], tt, tt) && bad++ < 3)
                fprintf(stderr, "%s output %d [%lld]: %.9g, want %.9g\n", what, i, (long long)j,
                        got[j], fx->out[i][j]);
        CHECK_MSG(bad == 0, "%s output %d: %d elements differ", what, i, bad);
        free(raw);
        free(got);
    }
}

/* The program imported from `ext` runs compiled and interpreted with JAX's outputs. */
static void run_program(kiln_context *ctx, const char *name, const char *ext, double tol) {
    fixture fx;
    CHECK_MSG(read_fixture(name, &fx), "cannot read %s.io", name);
    kiln_graph *g = import_file(ctx, name, ext);
    if (!g) {
        free_fixture(&fx);
        return;
    }
    char what[96];
    snprintf(what, sizeof what, "%s.%s", name, ext);
    CHECK(kiln_graph_num_parameters(g) == fx.n_in);
    CHECK(kiln_graph_num_outputs(g) == fx.n_out);
    kiln_array *args[MAX_ARRAYS] = {0}, *outs[MAX_ARRAYS] = {0}, *ref[MAX_ARRAYS] = {0};
    kiln_executable *e = NULL;
    if (kiln_graph_num_parameters(g) == fx.n_in && kiln_graph_num_outputs(g) == fx.n_out &&
        make_args(ctx, &fx, args)) {
        CHECK_OK(ctx, kiln_interpret(g, fx.n_in, args, fx.n_out, ref));
        if (ref[0]) compare(ctx, what, &fx, ref, tol);
        CHECK_OK(ctx, kiln_compile(g, NULL, &e));
        if (e) CHECK_OK(ctx, kiln_executable_run(e, fx.n_in, args, fx.n_out, outs));
        if (outs[0]) compare(ctx, what, &fx, outs, tol);
    }
    for (int i = 0; i < MAX_ARRAYS; i++) {
        kiln_array_destroy(args[i]);
        kiln_array_destroy(outs[i]);
        kiln_array_destroy(ref[i]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    free_fixture(&fx);
}

static kiln_context *ctx_g;

static void test_programs_stablehlo(void) {
    run_program(ctx_g, "mlp_train", "mlir", 1e-5);
    run_program(ctx_g, "elementwise", "mlir", 1e-5);
    run_program(ctx_g, "shapes", "mlir", 1e-5);
    run_program(ctx_g, "control", "mlir", 1e-5);
    run_program(ctx_g, "attention_adamw", "mlir", 1e-4);
    run_program(ctx_g, "misc", "mlir", 1e-5);
    run_program(ctx_g, "argminmax", "mlir", 0);
    run_program(ctx_g, "sorting", "mlir", 0);
    run_program(ctx_g, "conv", "mlir", 1e-5);
    run_program(ctx_g, "cnn_step", "mlir", 1e-5);
    run_program(ctx_g, "jnp_forms", "mlir", 0);
    run_program(ctx_g, "debug_sharded", "mlir", 1e-6);
    run_program(ctx_g, "math_functions", "mlir", 2e-5);
    run_program(ctx_g, "random_bits", "mlir", 1e-6); /* normal's erf_inv, x / 0.7: 1 ulp */
    /* LAPACK's potrf and trsm as JAX calls them on the CPU, f32 and f64; the generic ops
     * JAX writes for a TPU (and the HLO XLA reads from them), cuSOLVER's potrf for CUDA */
    run_program(ctx_g, "linalg", "mlir", 1e-5);
    run_program(ctx_g, "linalg_f64", "mlir", 1e-12);
    run_program(ctx_g, "linalg_tpu", "mlir", 1e-5);
    run_program(ctx_g, "linalg_cuda", "mlir", 1e-5);
}

static void test_programs_hlo(void) {
    run_program(ctx_g, "mlp_train", "hlo", 1e-5);
    run_program(ctx_g, "elementwise", "hlo", 1e-5);
    run_program(ctx_g, "shapes", "hlo", 1e-5);
    run_program(ctx_g, "control", "hlo", 1e-5);
    run_program(ctx_g, "attention_adamw", "hlo", 1e-4);
    run_program(ctx_g, "misc", "hlo", 1e-5);
    run_program(ctx_g, "argminmax", "hlo", 0);
    run_program(ctx_g, "sorting", "hlo", 0);
    run_program(ctx_g, "conv", "hlo", 1e-5);
    run_program(ctx_g, "cnn_step", "hlo", 1e-5);
    run_program(ctx_g, "jnp_forms", "hlo", 0);
    run_program(ctx_g, "debug_sharded", "hlo", 1e-6);
    run_program(ctx_g, "math_functions", "hlo", 2e-5);
    run_program(ctx_g, "random_bits", "hlo", 1e-6);
    /* LAPACK's potrf and trsm as JAX calls them on the CPU, f32 and f64; the generic ops
     * JAX writes for a TPU (and the HLO XLA reads from them), cuSOLVER's potrf for CUDA */
    run_program(ctx_g, "linalg", "hlo", 1e-5);
    run_program(ctx_g, "linalg_f64", "hlo", 1e-12);
    run_program(ctx_g, "linalg_tpu", "hlo", 1e-5);
    run_program(ctx_g, "linalg_cuda", "hlo", 1e-5);
}

/* Whether the plan of the imported program classes some bytes as activations (forward
 * values the backward pass reads): only where the import marked a backward part. */
static bool plans_activations(const char *name, const char *ext) {
    kiln_graph *g = import_file(ctx_g, name, ext);
    if (!g) return false;
    kiln_executable *e = NULL;
    kiln_compile_options o = {.keep_ir = true};
    CHECK_MSG(kiln_compile(g, &o, &e) == KILN_STATUS_OK, "%s.%s: %s", name, ext,
              kiln_last_error(ctx_g));
    char *r = e ? kiln_executable_memory_report(e) : NULL;
    bool act = r && strstr(r, "activation") != NULL;
    kiln_string_free(ctx_g, r);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return act;
}

/* JAX's training step returns its loss first: the ops that loss does not depend on (the
 * gradients and the update) are marked backward, as kiln_grad marks its own, so the plan
 * sees the saved activations (and rematerialisation its candidates); a program whose first
 * output is no scalar loss is left unmarked. The outputs stay JAX's (test_programs_*). */
static void test_training_step_marked(void) {
    CHECK(plans_activations("mlp_train", "mlir"));
    CHECK(plans_activations("mlp_train", "hlo"));
    CHECK(plans_activations("attention_adamw", "mlir"));
    CHECK(!plans_activations("elementwise", "mlir"));
    CHECK(!plans_activations("shapes", "hlo"));
}

/* The message of a failed import: names what, the line and column, and kiln's version;
 * *out is NULL. */
static void expect_error(kiln_status (*imp)(kiln_context *, const char *, size_t, kiln_graph **),
                         const char *text, kiln_status want, const char *what, const char *where) {
    kiln_graph *g = (kiln_graph *)&g;
    kiln_status s = imp(ctx_g, text, strlen(text), &g);
    CHECK_MSG(s == want, "%s: got %s, want %s: %s", what, kiln_status_name(s),
              kiln_status_name(want), kiln_last_error(ctx_g));
    CHECK(g == NULL);
    const char *msg = kiln_last_error(ctx_g);
    CHECK_CONTAINS(msg, what);
    CHECK_CONTAINS(msg, where);
    CHECK_CONTAINS(msg, kiln_version());
}

static const char sh_head[] =
    "module @m {\n  func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {\n";

static void test_errors_stablehlo(void) {
    char t[1024];
    snprintf(t, sizeof t,
             "%s    %%0 = chlo.bessel_i1e %%arg0 : tensor<2x3xf32>\n    return %%0 : "
             "tensor<2x3xf32>\n  }\n}\n",
             sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_UNIMPLEMENTED, "chlo.bessel_i1e",
                 "line 3, column 10");
    snprintf(t, sizeof t,
             "%s    %%0 = stablehlo.add %%arg0, %%arg9 : tensor<2x3xf32>\n    return %%0 : "
             "tensor<2x3xf32>\n  }\n}\n",
             sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_INVALID_ARGUMENT, "%arg9",
                 "line 3, column 31");
    snprintf(t, sizeof t,
             "%s    %%0 = stablehlo.transpose %%arg0, dims = [1, 0] : (tensor<2x3xf32>) -> "
             "tensor<2x3xf32>\n    return %%0 : tensor<2x3xf32>\n  }\n}\n",
             sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_SHAPE, "stablehlo.transpose",
                 "line 3, column 10");
    snprintf(t, sizeof t, "%s    %%0 = stablehlo.add %%arg0, %%arg0 : tensor<2x3xf32>\n", sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_INVALID_ARGUMENT, "not closed",
                 "line 2, column 69");
    snprintf(t, sizeof t,
             "%s    %%0 = stablehlo.custom_call @lapack_sgetrf(%%arg0) : (tensor<2x3xf32>) -> "
             "tensor<2x3xf32>\n    return %%0 : tensor<2x3xf32>\n  }\n}\n",
             sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_UNIMPLEMENTED, "custom_call @lapack_sgetrf",
                 "line 3, column 10");
    expect_error(kiln_import_stablehlo, "module @m {\n}\n", KILN_STATUS_INVALID_ARGUMENT, "@main",
                 "line 2");
    /* a location never closed leaves its function unclosed (debug info: loc(...) is read
     * past) */
    snprintf(t, sizeof t,
             "%s    %%0 = stablehlo.add %%arg0, %%arg0 : tensor<2x3xf32> loc(\"x\"(#loc1)\n",
             sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_INVALID_ARGUMENT, "not closed",
                 "line 2, column 69");
}

/* A sharding annotation (jax.lax.with_sharding_constraint) is the identity: shardings are
 * ignored, in both forms. */
static void test_sharding_ignored(void) {
    char t[1024];
    snprintf(t, sizeof t,
             "%s    %%0 = stablehlo.custom_call @Sharding(%%arg0) {mhlo.sharding = "
             "\"{replicated}\"} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
             "    %%1 = stablehlo.add %%0, %%arg0 : tensor<2x3xf32>\n"
             "    return %%1 : tensor<2x3xf32>\n  }\n}\n",
             sh_head);
    kiln_graph *g = NULL;
    CHECK_OK(ctx_g, kiln_import_stablehlo(ctx_g, t, strlen(t), &g));
    if (g) CHECK(kiln_graph_num_nodes(g) == 2); /* the parameter and the add */
    kiln_graph_destroy(g);
    static const char hlo[] =
        "HloModule m\n\nENTRY main {\n  p = f32[2,3]{1,0} parameter(0)\n"
        "  s = f32[2,3]{1,0} custom-call(p), custom_call_target=\"Sharding\", "
        "sharding={replicated}\n  ROOT r = f32[2,3]{1,0} add(s, p)\n}\n";
    g = NULL;
    CHECK_OK(ctx_g, kiln_import_hlo(ctx_g, hlo, strlen(hlo), &g));
    if (g) CHECK(kiln_graph_num_nodes(g) == 2);
    kiln_graph_destroy(g);
}

/* HLO's dynamic-slice clamps a negative start (to 0) and never counts it from the end, as
 * kiln's builder does (jax.lax's rule; JAX's export spells that out before the op): an
 * imported -1 reads the first window, not the last. */
static void test_dynamic_slice_hlo_starts(void) {
    static const char hlo[] =
        "HloModule m\n\nENTRY main {\n  p = f32[5]{0} parameter(0)\n  i = s32[] parameter(1)\n"
        "  ROOT r = f32[2]{0} dynamic-slice(p, i), dynamic_slice_sizes={2}\n}\n";
    kiln_graph *g = NULL;
    CHECK_OK(ctx_g, kiln_import_hlo(ctx_g, hlo, strlen(hlo), &g));
    kiln_executable *e = NULL;
    if (g) CHECK_OK(ctx_g, kiln_compile(g, NULL, &e));
    static const int32_t starts[3] = {-1, -7, 9};
    static const float want[3][2] = {{0, 1}, {0, 1}, {3, 4}};
    const float x[5] = {0, 1, 2, 3, 4};
    int64_t d5 = 5;
    for (int k = 0; e && k < 3; k++) {
        kiln_array *a[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
        kiln_array_create(ctx_g, KILN_DTYPE_F32, 1, &d5, x, &a[0]);
        kiln_array_create(ctx_g, KILN_DTYPE_I32, 0, NULL, &starts[k], &a[1]);
        CHECK_OK(ctx_g, kiln_executable_run(e, 2, a, 1, &out[0]));
        CHECK_OK(ctx_g, kiln_interpret(g, 2, a, 1, &out[1]));
        for (int w = 0; w < 2; w++) {
            float got[2] = {-9, -9};
            if (out[w]) kiln_array_copy_to_host(out[w], got, sizeof got);
            CHECK_MSG(got[0] == want[k][0] && got[1] == want[k][1],
                      "%s: start %d read [%g, %g], HLO's clamp [%g, %g]",
                      w ? "interpreted" : "compiled", starts[k], got[0], got[1], want[k][0],
                      want[k][1]);
            kiln_array_destroy(out[w]);
        }
        kiln_array_destroy(a[0]), kiln_array_destroy(a[1]);
    }
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
}

/* Hand-written StableHLO that JAX would spell otherwise: a compare of ui32 without its
 * type word is unsigned (the type defaults to the operands'), and the ui64 constant of all
 * ones (2^64 - 1, which a double rounds to 2^64) is all ones. */
static void test_unsigned_defaults(void) {
    static const char text[] =
        "module @m {\n  func.func public @main(%arg0: tensor<2xui32>, %arg1: tensor<2xui32>, "
        "%arg2: tensor<2xui64>) -> (tensor<2xi1>, tensor<2xui64>) {\n"
        "    %0 = stablehlo.compare LT, %arg0, %arg1 : (tensor<2xui32>, tensor<2xui32>) -> "
        "tensor<2xi1>\n"
        "    %c = stablehlo.constant dense<18446744073709551615> : tensor<ui64>\n"
        "    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<2xui64>\n"
        "    %2 = stablehlo.xor %arg2, %1 : tensor<2xui64>\n"
        "    return %0, %2 : tensor<2xi1>, tensor<2xui64>\n  }\n}\n";
    kiln_graph *g = NULL;
    CHECK_OK(ctx_g, kiln_import_stablehlo(ctx_g, text, strlen(text), &g));
    static const int32_t a[2] = {1, INT32_MIN}, b[2] = {INT32_MIN, 1}; /* 1 < 2^31, 2^31 > 1 */
    static const int64_t x[2] = {0, 5};
    int64_t d2 = 2;
    kiln_array *args[3] = {0}, *out[2] = {0};
    kiln_array_create(ctx_g, KILN_DTYPE_I32, 1, &d2, a, &args[0]);
    kiln_array_create(ctx_g, KILN_DTYPE_I32, 1, &d2, b, &args[1]);
    kiln_array_create(ctx_g, KILN_DTYPE_I64, 1, &d2, x, &args[2]);
    if (g) CHECK_OK(ctx_g, kiln_interpret(g, 3, args, 2, out));
    uint8_t lt[2] = {9, 9};
    int64_t inv[2] = {0, 0};
    if (out[0]) kiln_array_copy_to_host(out[0], lt, sizeof lt);
    if (out[1]) kiln_array_copy_to_host(out[1], inv, sizeof inv);
    CHECK_MSG(lt[0] == 1 && lt[1] == 0, "ui32 compare without its type: %d %d, want 1 0", lt[0],
              lt[1]);
    CHECK_MSG(inv[0] == -1 && inv[1] == ~INT64_C(5), "ui64 xor all ones: %lld %lld",
              (long long)inv[0], (long long)inv[1]);
    for (int i = 0; i < 3; i++) kiln_array_destroy(args[i]);
    for (int i = 0; i < 2; i++) kiln_array_destroy(out[i]);
    kiln_graph_destroy(g);
    /* a ui32 start of 2^31 is past the end, clamped to the last window (not 0) */
    static const char ds[] =
        "module @m {\n  func.func public @main(%arg0: tensor<5xf32>, %arg1: tensor<ui32>) -> "
        "tensor<2xf32> {\n    %0 = stablehlo.dynamic_slice %arg0, %arg1, sizes = [2] : "
        "(tensor<5xf32>, tensor<ui32>) -> tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n";
    g = NULL;
    CHECK_OK(ctx_g, kiln_import_stablehlo(ctx_g, ds, strlen(ds), &g));
    static const float v[5] = {0, 1, 2, 3, 4};
    int32_t start = INT32_MIN;
    int64_t d5 = 5;
    kiln_array *in2[2] = {0}, *o2 = NULL;
    kiln_array_create(ctx_g, KILN_DTYPE_F32, 1, &d5, v, &in2[0]);
    kiln_array_create(ctx_g, KILN_DTYPE_I32, 0, NULL, &start, &in2[1]);
    if (g) CHECK_OK(ctx_g, kiln_interpret(g, 2, in2, 1, &o2));
    float w[2] = {-1, -1};
    if (o2) kiln_array_copy_to_host(o2, w, sizeof w);
    CHECK_MSG(w[0] == 3 && w[1] == 4, "ui32 start 2^31: [%g, %g], want [3, 4]", w[0], w[1]);
    kiln_array_destroy(in2[0]), kiln_array_destroy(in2[1]), kiln_array_destroy(o2);
    kiln_graph_destroy(g);
}

/* Integer constants are read exactly, not through a double: i64 and ui64 beyond 2^53
 * (2^53 + 1 is the first a double rounds), INT64_MIN, ui64's values past 2^63 as their
 * bit patterns, in both text forms, as splats, arrays and dense<"0x..."> splats. A value
 * that does not fit its type is an error at the element. */
static void test_integer_constants(void) {
    /* ui64 2^64 - 2 is -2, 2^63 + 1 is INT64_MIN + 1 */
    static const int64_t want[8] = {INT64_C(9007199254740993),
                                    -INT64_C(9007199254740993),
                                    INT64_MIN,
                                    INT64_MAX,
                                    -2,
                                    INT64_MIN + 1,
                                    INT64_C(0x0123456789abcdef),
                                    INT64_C(9007199254740993)};
    static const char text[] =
        "module @m {\n  func.func public @main() -> (tensor<4xi64>, tensor<2xui64>, "
        "tensor<2xi64>) {\n"
        "    %0 = stablehlo.constant dense<[9007199254740993, -9007199254740993, "
        "-9223372036854775808, 9223372036854775807]> : tensor<4xi64>\n"
        "    %1 = stablehlo.constant dense<[18446744073709551614, 9223372036854775809]> : "
        "tensor<2xui64>\n"
        "    %2 = stablehlo.constant dense<\"0xEFCDAB8967452301\"> : tensor<2xi64>\n"
        "    %3 = stablehlo.constant dense<9007199254740993> : tensor<2xi64>\n"
        "    %4 = stablehlo.concatenate %2, %3, dim = 0 : (tensor<2xi64>, tensor<2xi64>) -> "
        "tensor<4xi64>\n"
        "    %5 = stablehlo.slice %4 [1:3] : (tensor<4xi64>) -> tensor<2xi64>\n"
        "    return %0, %1, %5 : tensor<4xi64>, tensor<2xui64>, tensor<2xi64>\n  }\n}\n";
    static const char hlo[] =
        "HloModule m\n\nENTRY main {\n"
        "  a = s64[4]{0} constant({9007199254740993, -9007199254740993, -9223372036854775808, "
        "9223372036854775807})\n"
        "  b = u64[2]{0} constant({18446744073709551614, 9223372036854775809})\n"
        "  c = s64[] constant(81985529216486895)\n  d = s64[] constant(9007199254740993)\n"
        "  e = s64[1]{0} broadcast(c), dimensions={}\n  f = s64[1]{0} broadcast(d), dimensions={}\n"
        "  cd = s64[2]{0} concatenate(e, f), dimensions={0}\n"
        "  ROOT r = (s64[4]{0}, u64[2]{0}, s64[2]{0}) tuple(a, b, cd)\n}\n";
    for (int form = 0; form < 2; form++) {
        kiln_graph *g = NULL;
        CHECK_OK(ctx_g, form ? kiln_import_hlo(ctx_g, hlo, strlen(hlo), &g)
                             : kiln_import_stablehlo(ctx_g, text, strlen(text), &g));
        kiln_array *out[3] = {0};
        if (g) CHECK_OK(ctx_g, kiln_interpret(g, 0, NULL, 3, out));
        int64_t got[8] = {0};
        static const int at[3] = {0, 4, 6}, len[3] = {4, 2, 2};
        for (int i = 0; i < 3; i++)
            if (out[i]) kiln_array_copy_to_host(out[i], got + at[i], (size_t)len[i] * sizeof *got);
        for (int i = 0; i < 8; i++)
            CHECK_MSG(got[i] == want[i], "%s: element %d is %lld, want %lld",
                      form ? "HLO" : "StableHLO", i, (long long)got[i], (long long)want[i]);
        for (int i = 0; i < 3; i++) kiln_array_destroy(out[i]);
        kiln_graph_destroy(g);
    }
    static const struct {
        const char *type, *value, *what, *where;
    } bad[] = {
        {"i32", "2147483648", "2147483648 does not fit i32", "line 3, column 35"},
        {"i32", "-2147483649", "-2147483649 does not fit i32", "line 3, column 35"},
        {"ui32", "4294967296", "4294967296 does not fit ui32", "line 3, column 35"},
        {"ui32", "-1", "-1 does not fit ui32", "line 3, column 35"},
        {"i64", "9223372036854775808", "9223372036854775808 does not fit i64", "line 3"},
        {"ui64", "18446744073709551616", "an integer beyond 64 bits", "line 3, column 35"},
        {"i64", "-9223372036854775809", "an integer beyond 64 bits", "line 3, column 35"},
        {"i32", "1.5", "1.5 is not a value of i32", "line 3"},
        {"i1", "2", "2 does not fit i1", "line 3, column 35"},
        {"ui32", "0x1FFFFFFFF", "0x1ffffffff does not fit ui32", "line 3, column 35"},
        {"i32", "-0x1", "a sign before a hexadecimal number", "line 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char t[512];
        snprintf(t, sizeof t,
                 "module @m {\n  func.func public @main() -> tensor<%s> {\n"
                 "    %%0 = stablehlo.constant dense<%s> : tensor<%s>\n"
                 "    return %%0 : tensor<%s>\n  }\n}\n",
                 bad[i].type, bad[i].value, bad[i].type, bad[i].type);
        expect_error(kiln_import_stablehlo, t, KILN_STATUS_INVALID_ARGUMENT, bad[i].what,
                     bad[i].where);
    }
    /* a reduction's initial value near INT64_MAX is not its identity, though its double is */
    static const char red[] =
        "module @m {\n  func.func public @main(%arg0: tensor<2xi64>) -> tensor<i64> {\n"
        "    %c = stablehlo.constant dense<9223372036854775500> : tensor<i64>\n"
        "    %0 = stablehlo.reduce(%arg0 init: %c) applies stablehlo.minimum across dimensions = "
        "[0] : (tensor<2xi64>, tensor<i64>) -> tensor<i64>\n"
        "    return %0 : tensor<i64>\n  }\n}\n";
    kiln_graph *rg = NULL;
    CHECK_OK(ctx_g, kiln_import_stablehlo(ctx_g, red, strlen(red), &rg));
    int64_t big[2] = {INT64_MAX, INT64_MAX}, two = 2, rmin = 0;
    kiln_array *ra = NULL, *ro = NULL;
    kiln_array_create(ctx_g, KILN_DTYPE_I64, 1, &two, big, &ra);
    if (rg) CHECK_OK(ctx_g, kiln_interpret(rg, 1, &ra, 1, &ro));
    if (ro) kiln_array_copy_to_host(ro, &rmin, sizeof rmin);
    CHECK_MSG(rmin == INT64_C(9223372036854775500), "min with init 9223372036854775500: %lld",
              (long long)rmin);
    kiln_array_destroy(ra), kiln_array_destroy(ro);
    kiln_graph_destroy(rg);
    /* a 16-bit float literal is rounded once (as MLIR and ml_dtypes): just above the
     * midpoint between 1 and the next bf16 (f16) rounds up, where through f32 it would tie
     * to even, down */
    static const char half[] =
        "module @m {\n  func.func public @main() -> (tensor<2xbf16>, tensor<f16>) {\n"
        "    %0 = stablehlo.constant dense<1.00390625000001> : tensor<2xbf16>\n"
        "    %1 = stablehlo.constant dense<1.00048828125001> : tensor<f16>\n"
        "    return %0, %1 : tensor<2xbf16>, tensor<f16>\n  }\n}\n";
    kiln_graph *hg = NULL;
    CHECK_OK(ctx_g, kiln_import_stablehlo(ctx_g, half, strlen(half), &hg));
    kiln_array *ho[2] = {0};
    if (hg) CHECK_OK(ctx_g, kiln_interpret(hg, 0, NULL, 2, ho));
    uint16_t hb[2] = {0, 0}, hf = 0;
    if (ho[0]) kiln_array_copy_to_host(ho[0], hb, sizeof hb);
    if (ho[1]) kiln_array_copy_to_host(ho[1], &hf, sizeof hf);
    CHECK_MSG(hb[0] == 0x3F81 && hb[1] == 0x3F81 && hf == 0x3C01,
              "16-bit literals: bf16 0x%04x 0x%04x (want 0x3f81), f16 0x%04x (want 0x3c01)", hb[0],
              hb[1], hf);
    kiln_array_destroy(ho[0]), kiln_array_destroy(ho[1]);
    kiln_graph_destroy(hg);
    static const char hbad[] = "HloModule m\n\nENTRY main {\n  ROOT c = u32[2]{0} constant({1, "
                               "4294967296})\n}\n";
    expect_error(kiln_import_hlo, hbad, KILN_STATUS_INVALID_ARGUMENT,
                 "4294967296 does not fit ui32", "line 4, column 35");
}

/* An error inside a while's body or a called function is reported where it is, not as the
 * loop's or the call's. */
static void test_errors_nested(void) {
    char t[2048];
    snprintf(t, sizeof t,
             "%s    %%c = stablehlo.constant dense<0> : tensor<i32>\n"
             "    %%0:2 = stablehlo.while(%%i = %%c, %%x = %%arg0) : tensor<i32>, tensor<2x3xf32>\n"
             "    cond {\n"
             "      %%n = stablehlo.constant dense<3> : tensor<i32>\n"
             "      %%p = stablehlo.compare LT, %%i, %%n, SIGNED : (tensor<i32>, tensor<i32>) -> "
             "tensor<i1>\n"
             "      stablehlo.return %%p : tensor<i1>\n"
             "    } do {\n"
             "      %%y = chlo.bessel_i1e %%x : tensor<2x3xf32>\n"
             "      stablehlo.return %%i, %%y : tensor<i32>, tensor<2x3xf32>\n"
             "    }\n"
             "    return %%0#1 : tensor<2x3xf32>\n  }\n}\n",
             sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_UNIMPLEMENTED, "chlo.bessel_i1e",
                 "line 10, column 12");
    snprintf(t, sizeof t,
             "module @m {\n  func.func public @main(%%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
             "    %%0 = call @f(%%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
             "    return %%0 : tensor<2xf32>\n  }\n"
             "  func.func private @f(%%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
             "    %%0 = stablehlo.reshape %%arg0 : (tensor<2xf32>) -> tensor<3xf32>\n"
             "    return %%0 : tensor<3xf32>\n  }\n}\n");
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_SHAPE, "stablehlo.reshape",
                 "line 7, column 10");
    /* a function that calls itself: the nesting bound stops it */
    snprintf(t, sizeof t,
             "module @m {\n  func.func public @main(%%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
             "    %%0 = call @main(%%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
             "    return %%0 : tensor<2xf32>\n  }\n}\n");
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_UNIMPLEMENTED, "nested more than",
                 "line 3, column 10");
}

/* A sort is read only with a comparator jax.lax.sort writes, a select_and_scatter only as
 * the max pool's gradient (select GE, scatter add): a plain FLOAT compare (NaNs anywhere)
 * and a GT select (the last maximum) are refused by name and line, in both forms. */
static void test_errors_comparators(void) {
    char t[2048];
    snprintf(t, sizeof t,
             "module @m {\n  func.func public @main(%%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
             "    %%0 = \"stablehlo.sort\"(%%arg0) <{dimension = 0 : i64, is_stable = true}> ({\n"
             "    ^bb0(%%a: tensor<f32>, %%b: tensor<f32>):\n"
             "      %%1 = stablehlo.compare LT, %%a, %%b, FLOAT : (tensor<f32>, tensor<f32>) -> "
             "tensor<i1>\n      stablehlo.return %%1 : tensor<i1>\n"
             "    }) : (tensor<4xf32>) -> tensor<4xf32>\n"
             "    return %%0 : tensor<4xf32>\n  }\n}\n");
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_UNIMPLEMENTED,
                 "stablehlo.sort: its comparator is not one jax.lax.sort writes",
                 "line 3, column 10");
    /* the same body over integers is jnp.sort's */
    kiln_graph *g = NULL;
    char u[2048];
    snprintf(u, sizeof u,
             "module @m {\n  func.func public @main(%%arg0: tensor<4xi32>) -> tensor<4xi32> {\n"
             "    %%0 = \"stablehlo.sort\"(%%arg0) <{dimension = 0 : i64, is_stable = true}> ({\n"
             "    ^bb0(%%a: tensor<i32>, %%b: tensor<i32>):\n"
             "      %%1 = stablehlo.compare GT, %%b, %%a, SIGNED : (tensor<i32>, tensor<i32>) -> "
             "tensor<i1>\n      stablehlo.return %%1 : tensor<i1>\n"
             "    }) : (tensor<4xi32>) -> tensor<4xi32>\n"
             "    return %%0 : tensor<4xi32>\n  }\n}\n");
    CHECK_OK(ctx_g, kiln_import_stablehlo(ctx_g, u, strlen(u), &g));
    kiln_graph_destroy(g);
    snprintf(t, sizeof t,
             "HloModule m\n\nsel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT c = pred[] compare(a, b), direction=GT\n}\n\n"
             "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT c = f32[] add(a, b)\n}\n\n"
             "ENTRY main {\n  x = f32[4,4]{1,0} parameter(0)\n  s = f32[2,2]{1,0} parameter(1)\n"
             "  z = f32[] constant(0)\n"
             "  ROOT r = f32[4,4]{1,0} select-and-scatter(x, s, z), window={size=2x2 "
             "stride=2x2}, select=sel, scatter=add\n}\n");
    expect_error(kiln_import_hlo, t, KILN_STATUS_UNIMPLEMENTED,
                 "select-and-scatter: kiln reads the max pool's gradient only",
                 "line 19, column 26");
    /* with GE it is the max pool's gradient */
    char *ge = strstr(t, "direction=GT");
    if (ge) memcpy(ge, "direction=GE", 12);
    CHECK_OK(ctx_g, kiln_import_hlo(ctx_g, t, strlen(t), &g));
    kiln_graph_destroy(g);
}

/* A reduce of two operands is read only with jnp.argmax's or argmin's body: any other
 * (here a pairwise sum) is refused by name, in both forms. */
static void test_errors_two_operand_reduce(void) {
    char t[2048];
    snprintf(t, sizeof t,
             "module @m {\n  func.func public @main(%%arg0: tensor<2x3xf32>, %%arg1: "
             "tensor<2x3xi32>) -> tensor<2xi32> {\n"
             "    %%a = stablehlo.constant dense<0.0> : tensor<f32>\n"
             "    %%b = stablehlo.constant dense<0> : tensor<i32>\n"
             "    %%0:2 = stablehlo.reduce(%%arg0 init: %%a), (%%arg1 init: %%b) across dimensions "
             "= [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> "
             "(tensor<2xf32>, tensor<2xi32>)\n"
             "     reducer(%%x: tensor<f32>, %%y: tensor<f32>) (%%i: tensor<i32>, %%j: "
             "tensor<i32>) {\n"
             "      %%s = stablehlo.add %%x, %%y : tensor<f32>\n"
             "      %%k = stablehlo.add %%i, %%j : tensor<i32>\n"
             "      stablehlo.return %%s, %%k : tensor<f32>, tensor<i32>\n    }\n"
             "    return %%0#1 : tensor<2xi32>\n  }\n}\n");
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_UNIMPLEMENTED,
                 "stablehlo.reduce of 2 operands whose body is not jnp.argmax's",
                 "line 5, column 12");
    snprintf(t, sizeof t,
             "HloModule m\n\nsum2 {\n  a = f32[] parameter(0)\n  c = f32[] parameter(2)\n"
             "  b = s32[] parameter(1)\n  d = s32[] parameter(3)\n  s = f32[] add(a, c)\n"
             "  k = s32[] add(b, d)\n  ROOT t = (f32[], s32[]) tuple(s, k)\n}\n\n"
             "ENTRY main {\n  x = f32[2,3]{1,0} parameter(0)\n  i = s32[2,3]{1,0} parameter(1)\n"
             "  z = f32[] constant(0)\n  y = s32[] constant(0)\n"
             "  r = (f32[2]{0}, s32[2]{0}) reduce(x, i, z, y), dimensions={1}, to_apply=sum2\n"
             "  ROOT o = s32[2]{0} get-tuple-element(r), index=1\n}\n");
    expect_error(kiln_import_hlo, t, KILN_STATUS_UNIMPLEMENTED,
                 "reduce of 2 operands whose body is not jnp.argmax's", "line 18, column 30");
}

/* Unsigned integers are read for the ops whose bits kiln can give (docs/import.md,
 * "Unsigned integers"); the others are refused by name, as are the widths kiln lacks. */
static void test_errors_unsigned(void) {
    static const char head[] = "module @m {\n  func.func public @main(%arg0: tensor<4xui32>, "
                               "%arg1: tensor<4xui64>) -> tensor<4xui32> {\n";
    static const struct {
        const char *line, *what, *where;
    } cases[] = {
        {"%0 = stablehlo.power %arg0, %arg0 : tensor<4xui32>", "stablehlo.power of ui32",
         "line 3, column 10"},
        {"%1 = stablehlo.divide %arg1, %arg1 : tensor<4xui64>\n    %0 = stablehlo.convert %1 : "
         "(tensor<4xui64>) -> tensor<4xui32>",
         "stablehlo.divide of ui64", "line 3, column 10"},
        {"%0 = stablehlo.abs %arg0 : tensor<4xui32>", "stablehlo.abs of ui32", "line 3"},
        {"%c = stablehlo.constant dense<0> : tensor<ui32>\n    %1 = stablehlo.reduce(%arg0 init: "
         "%c) applies stablehlo.maximum across dimensions = [0] : (tensor<4xui32>, tensor<ui32>) "
         "-> tensor<ui32>\n    %0 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<ui32>) -> "
         "tensor<4xui32>",
         "stablehlo.reduce of ui32", "line 4"},
        {"%0 = stablehlo.convert %arg0 : (tensor<4xui32>) -> tensor<4xui8>", "element type ui8",
         "line 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char t[1024];
        snprintf(t, sizeof t, "%s    %s\n    return %%0 : tensor<4xui32>\n  }\n}\n", head,
                 cases[i].line);
        expect_error(kiln_import_stablehlo, t,
                     strstr(cases[i].what, "element type") ? KILN_STATUS_DTYPE
                                                           : KILN_STATUS_UNIMPLEMENTED,
                     cases[i].what, cases[i].where);
    }
    /* a sort of ui32 keys: its comparator is UNSIGNED, an order kiln's sort does not give */
    char t[1024];
    snprintf(t, sizeof t,
             "%s    %%0 = \"stablehlo.sort\"(%%arg0) <{dimension = 0 : i64, is_stable = true}> "
             "({\n    ^bb0(%%a: tensor<ui32>, %%b: tensor<ui32>):\n      %%c = "
             "stablehlo.compare LT, %%a, %%b, UNSIGNED : (tensor<ui32>, tensor<ui32>) -> "
             "tensor<i1>\n      stablehlo.return %%c : tensor<i1>\n    }) : (tensor<4xui32>) -> "
             "tensor<4xui32>\n    return %%0 : tensor<4xui32>\n  }\n}\n",
             head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_UNIMPLEMENTED, "sort", "line 3");
}

static void test_errors_hlo(void) {
    static const char head[] =
        "HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}\n\n";
    char t[1024];
    snprintf(t, sizeof t,
             "%sENTRY main {\n  p = f32[2,3]{1,0} parameter(0)\n  ROOT r = f32[2,3]{1,0} "
             "reduce-precision(p), exponent_bits=5, mantissa_bits=10\n}\n",
             head);
    expect_error(kiln_import_hlo, t, KILN_STATUS_UNIMPLEMENTED, "reduce-precision",
                 "line 5, column 26");
    snprintf(
        t, sizeof t,
        "%sENTRY main {\n  p = f32[2,3]{1,0} parameter(0)\n  ROOT r = f32[3,2]{1,0} add(p, q)\n}\n",
        head);
    expect_error(kiln_import_hlo, t, KILN_STATUS_INVALID_ARGUMENT, "q is not defined",
                 "line 5, column 34");
    snprintf(
        t, sizeof t,
        "%sENTRY main {\n  p = f32[2,3]{1,0} parameter(0)\n  ROOT r = f32[3,2]{1,0} negate(p)\n}\n",
        head);
    expect_error(kiln_import_hlo, t, KILN_STATUS_SHAPE, "negate", "line 5, column 26");
    snprintf(t, sizeof t,
             "%sr {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] "
             "atan2(a, b)\n}\n\nENTRY main {\n  p = f32[2,3]{1,0} parameter(0)\n  z = f32[] "
             "constant(0)\n  ROOT r = f32[2]{0} reduce(p, z), dimensions={1}, to_apply=r\n}\n",
             head);
    expect_error(kiln_import_hlo, t, KILN_STATUS_UNIMPLEMENTED, "reduce: its body", "line 12");
    expect_error(kiln_import_hlo, "HloModule m\n\nc {\n  ROOT p = f32[] parameter(0)\n}\n",
                 KILN_STATUS_INVALID_ARGUMENT, "no ENTRY", "line 6");
}

/* What JAX's programs mask off or never write, hand-written in both forms: LAPACK's raw
 * potrf (uplo 'L' and 'U': the factor with the other triangle as the operand has it, and
 * info, 1 where the matrix is not positive definite), trsm with trans_x 'C' (a real
 * matrix's transpose), the upper factor of stablehlo.cholesky / HLO cholesky (lower
 * absent) and triangular_solve's ADJOINT. The factor of S = L0 L0^T, L0 = [[2, 0, 0], [1,
 * 3, 0], [-1, 2, 1]], is exact in f32; the triangles an op does not read hold garbage. */
#define T33 "tensor<2x3x3xf32>"
static const char linalg_mlir[] =
    "module @m {\n  func.func public @main(%arg0: " T33 ", %arg1: " T33
    ", %arg2: tensor<3x1xf32>, %arg3: tensor<3x3xf32>) -> (" T33 ", tensor<2xi32>, " T33
    ", tensor<2xi32>, " T33 ", tensor<3x1xf32>, tensor<3x1xf32>, " T33 ") {\n"
    "    %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {backend_config = \"\", "
    "mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "
    "\"1\"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], result_layouts = "
    "[dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>]} : (" T33 ") -> (" T33
    ", tensor<2xi32>)\n"
    "    %1:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg1) {backend_config = \"\", "
    "mhlo.backend_config = {uplo = 85 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "
    "\"1\"}} : (" T33 ") -> (" T33 ", tensor<2xi32>)\n"
    "    %2 = stablehlo.cholesky %arg1 : " T33 "\n"
    "    %3 = stablehlo.custom_call @lapack_strsm_ffi(%arg3, %arg2) {backend_config = \"\", "
    "mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 67 : ui8, uplo = 76 : "
    "ui8}, mhlo.frontend_attributes = {num_batch_dims = \"0\"}, operand_layouts = [dense<[0, "
    "1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>]} : (tensor<3x3xf32>, "
    "tensor<3x1xf32>) -> tensor<3x1xf32>\n"
    "    %4 = \"stablehlo.triangular_solve\"(%arg3, %arg2) <{left_side = true, lower = true, "
    "transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false}> : (tensor<3x3xf32>, "
    "tensor<3x1xf32>) -> tensor<3x1xf32>\n"
    "    %5 = \"stablehlo.cholesky\"(%arg0) <{lower = true}> : (" T33 ") -> " T33 "\n"
    "    return %0#0, %0#1, %1#0, %1#1, %2, %3, %4, %5 : " T33 ", tensor<2xi32>, " T33
    ", tensor<2xi32>, " T33 ", tensor<3x1xf32>, tensor<3x1xf32>, " T33 "\n  }\n}\n";
#define H33 "f32[2,3,3]{2,1,0}"
#define HCALL                                                                                      \
    "custom_call_target=\"lapack_spotrf_ffi\", operand_layout_constraints={f32[2,3,3]{1,2,0}}, "   \
    "output_to_operand_aliasing={{0}: (0, {})}, api_version=API_VERSION_TYPED_FFI, "               \
    "frontend_attributes={num_batch_dims=\"1\"}, backend_config="
static const char linalg_hlo[] =
    "HloModule m\n\nENTRY main {\n  a = " H33 " parameter(0)\n  u = " H33 " parameter(1)\n"
    "  b = f32[3,1]{1,0} parameter(2)\n  t = f32[3,3]{1,0} parameter(3)\n"
    "  pl = (f32[2,3,3]{1,2,0}, s32[2]{0}) custom-call(a), " HCALL "{uplo = 76 : ui8}\n"
    "  l = f32[2,3,3]{1,2,0} get-tuple-element(pl), index=0\n"
    "  li = s32[2]{0} get-tuple-element(pl), index=1\n"
    "  pu = (f32[2,3,3]{1,2,0}, s32[2]{0}) custom-call(u), " HCALL "{uplo = 85 : ui8}\n"
    "  up = f32[2,3,3]{1,2,0} get-tuple-element(pu), index=0\n"
    "  ui = s32[2]{0} get-tuple-element(pu), index=1\n"
    "  c = " H33 " cholesky(u)\n"
    "  s = f32[3,1]{0,1} custom-call(t, b), custom_call_target=\"lapack_strsm_ffi\", "
    "api_version=API_VERSION_TYPED_FFI, backend_config={diag = 78 : ui8, side = 76 : ui8, "
    "trans_x = 67 : ui8, uplo = 76 : ui8}\n"
    "  r = f32[3,1]{1,0} triangular-solve(t, b), left_side=true, lower=true, "
    "transpose_a=ADJOINT\n"
    "  cl = " H33 " cholesky(a), lower=true\n"
    "  ROOT o = (f32[2,3,3]{1,2,0}, s32[2]{0}, f32[2,3,3]{1,2,0}, s32[2]{0}, " H33
    ", f32[3,1]{0,1}, f32[3,1]{1,0}, " H33 ") tuple(l, li, up, ui, c, s, r, cl)\n}\n";
#undef HCALL
#undef H33
#undef T33

static void test_linalg_raw(void) {
    const double N = NAN;
    static const float lo[18] = {4, 100, -7, 2, 10, 9, -2, 5, 6, 1, 2, 0, 2, 1, 0, 0, 0, 1};
    static const float up[18] = {4, 2, -2, 100, 10, 5, -7, 9, 6, 1, 2, 0, 2, 1, 0, 0, 0, 1};
    static const float b[3] = {1, 12, 3}, t[9] = {2, 50, 60, 1, 3, 70, -1, 2, 1};
    const double want_l[18] = {2, 100, -7, 1, 3, 9, -1, 2, 1, N, 2, 0, N, N, 0, N, N, N};
    const double want_u[18] = {2, 1, -1, 100, 3, 2, -7, 9, 1, N, N, N, 2, N, N, 0, 0, N};
    const double want_c[18] = {2, 1, -1, 0, 3, 2, 0, 0, 1, N, N, N, 0, N, N, 0, 0, N};
    const double want_cl[18] = {2, 0, 0, 1, 3, 0, -1, 2, 1, N, 0, 0, N, N, 0, N, N, N};
    const double info[2] = {0, 1}, x[3] = {1, 2, 3};
    const double *want[8] = {want_l, info, want_u, info, want_c, x, x, want_cl};
    static const int64_t n_want[8] = {18, 2, 18, 2, 18, 3, 3, 18};
    int64_t d233[3] = {2, 3, 3}, d31[2] = {3, 1}, d33[2] = {3, 3};
    kiln_array *args[4] = {0};
    kiln_array_create(ctx_g, KILN_DTYPE_F32, 3, d233, lo, &args[0]);
    kiln_array_create(ctx_g, KILN_DTYPE_F32, 3, d233, up, &args[1]);
    kiln_array_create(ctx_g, KILN_DTYPE_F32, 2, d31, b, &args[2]);
    kiln_array_create(ctx_g, KILN_DTYPE_F32, 2, d33, t, &args[3]);
    for (int form = 0; form < 2; form++) {
        const char *text = form ? linalg_hlo : linalg_mlir;
        kiln_graph *g = NULL;
        CHECK_OK(ctx_g, form ? kiln_import_hlo(ctx_g, text, strlen(text), &g)
                             : kiln_import_stablehlo(ctx_g, text, strlen(text), &g));
        kiln_executable *e = NULL;
        if (g) CHECK_OK(ctx_g, kiln_compile(g, NULL, &e));
        for (int run = 0; g && run < 2; run++) { /* compiled, interpreted */
            kiln_array *outs[8] = {0};
            CHECK_OK(ctx_g, run ? kiln_interpret(g, 4, args, 8, outs)
                            : e ? kiln_executable_run(e, 4, args, 8, outs)
                                : KILN_STATUS_INVALID_ARGUMENT);
            for (int i = 0; i < 8 && outs[i]; i++) {
                double got[18];
                size_t size = kiln_array_nbytes(outs[i]);
                kiln_dtype dt = kiln_array_dtype(outs[i]);
                unsigned char raw[18 * 4];
                CHECK(kiln_array_size(outs[i]) == n_want[i] && size <= sizeof raw);
                if (kiln_array_size(outs[i]) != n_want[i] || size > sizeof raw) continue;
                kiln_array_copy_to_host(outs[i], raw, size);
                kiln_convert_host(ctx_g, dt, raw, KILN_DTYPE_F64, got, n_want[i]);
                CHECK(dt == (i == 1 || i == 3 ? KILN_DTYPE_I32 : KILN_DTYPE_F32));
                for (int64_t j = 0; j < n_want[i]; j++)
                    CHECK_MSG(test_close(got[j], want[i][j], 1e-6, 1e-6),
                              "%s, %s: output %d [%lld] is %g, want %g", form ? "HLO" : "StableHLO",
                              run ? "interpreted" : "compiled", i, (long long)j, got[j],
                              want[i][j]);
            }
            for (int i = 0; i < 8; i++) kiln_array_destroy(outs[i]);
        }
        kiln_executable_destroy(e);
        kiln_graph_destroy(g);
    }
    for (int i = 0; i < 4; i++) kiln_array_destroy(args[i]);
}

/* Linear algebra outside f32 and f64, a complex or unknown target, a flag missing or out
 * of LAPACK's range: refused by name, with the op's line and column, in both forms. */
static void test_errors_linalg(void) {
    static const struct {
        const char *line, *type, *what;
        kiln_status want;
    } cases[] = {
        {"%0:2 = stablehlo.custom_call @lapack_cpotrf_ffi(%arg0) {mhlo.backend_config = {uplo = "
         "76 : ui8}} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)",
         "f32", "stablehlo.custom_call @lapack_cpotrf_ffi: complex matrices",
         KILN_STATUS_UNIMPLEMENTED},
        {"%0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {mhlo.backend_config = {uplo = "
         "76 : ui8}} : (tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<i32>)",
         "f64", "stablehlo.custom_call @lapack_spotrf_ffi takes f32, not f64", KILN_STATUS_DTYPE},
        {"%0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%arg0) {mhlo.backend_config = {uplo = "
         "88 : ui8}} : (tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<i32>)",
         "f64", "@lapack_dpotrf_ffi: backend_config uplo = 88, not 76 ('L') or 85 ('U')",
         KILN_STATUS_UNIMPLEMENTED},
        {"%0 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %arg0) {mhlo.backend_config = "
         "{side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}} : (tensor<3x3xf32>, "
         "tensor<3x3xf32>) -> tensor<3x3xf32>",
         "f32", "@lapack_strsm_ffi: its backend_config has no diag (78 ('N') or 85 ('U'))",
         KILN_STATUS_INVALID_ARGUMENT},
        {"%0 = stablehlo.custom_call @lapack_sgeqrf_ffi(%arg0) : (tensor<3x3xf32>) -> "
         "tensor<3x3xf32>",
         "f32", "custom_call @lapack_sgeqrf_ffi: kiln has no op", KILN_STATUS_UNIMPLEMENTED},
        /* what JAX writes on the CPU for a bf16 solve (LAPACK has no bf16) */
        {"%0 = \"stablehlo.triangular_solve\"(%arg0, %arg0) <{left_side = true, lower = true, "
         "transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : "
         "(tensor<3x3xbf16>, tensor<3x3xbf16>) -> tensor<3x3xbf16>",
         "bf16", "stablehlo.triangular_solve of bf16: kiln's linear algebra is f32 and f64",
         KILN_STATUS_DTYPE},
        {"%0 = stablehlo.cholesky %arg0, lower = true : tensor<3x3xi32>", "i32",
         "stablehlo.cholesky of i32", KILN_STATUS_DTYPE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char t[1024];
        const char *ret = strstr(cases[i].line, "%0:2") ? "%0#0" : "%0";
        snprintf(t, sizeof t,
                 "module @m {\n  func.func public @main(%%arg0: tensor<3x3x%s>) -> "
                 "tensor<3x3x%s> {\n    %s\n    return %s : tensor<3x3x%s>\n  }\n}\n",
                 cases[i].type, cases[i].type, cases[i].line, ret, cases[i].type);
        expect_error(kiln_import_stablehlo, t, cases[i].want, cases[i].what,
                     strstr(cases[i].line, "%0:2") ? "line 3, column 12" : "line 3, column 10");
    }
    /* a factor that is not square: the builder's error, under the op's name */
    char t[1024];
    snprintf(t, sizeof t,
             "%s    %%0 = stablehlo.cholesky %%arg0, lower = true : tensor<2x3xf32>\n    return "
             "%%0 : tensor<2x3xf32>\n  }\n}\n",
             sh_head);
    expect_error(kiln_import_stablehlo, t, KILN_STATUS_SHAPE,
                 "stablehlo.cholesky: kiln_cholesky_from_lower: a must be square",
                 "line 3, column 10");
    static const struct {
        const char *line, *what, *where;
        kiln_status want;
    } hcases[] = {
        {"ROOT r = f16[3,3]{1,0} triangular-solve(p, p), left_side=true, "
         "transpose_a=NO_TRANSPOSE",
         "triangular-solve of f16", "line 5, column 26", KILN_STATUS_DTYPE},
        {"ROOT r = f16[3,3]{1,0} triangular-solve(p, p), transpose_a=CONJUGATE",
         "transpose_a CONJUGATE, not NO_TRANSPOSE", "line 5", KILN_STATUS_INVALID_ARGUMENT},
        {"ROOT r = f16[3,3]{0,1} custom-call(p), custom_call_target=\"lapack_spotrf_ffi\", "
         "backend_config={uplo = 76 : ui8}",
         "custom-call \"lapack_spotrf_ffi\" of f16", "line 5, column 26", KILN_STATUS_DTYPE},
        {"c = f16[3,3]{0,1} custom-call(p), custom_call_target=\"lapack_zpotrf_ffi\", "
         "backend_config={uplo = 76 : ui8}\n  ROOT r = f16[3,3]{1,0} copy(c)",
         "custom-call \"lapack_zpotrf_ffi\": complex matrices", "line 5, column 21",
         KILN_STATUS_UNIMPLEMENTED},
        {"c = f16[3,3]{0,1} custom-call(p), custom_call_target=\"lapack_sgetrf_ffi\"\n  ROOT r = "
         "f16[3,3]{1,0} copy(c)",
         "custom-call \"lapack_sgetrf_ffi\": kiln has no op", "line 5, column 21",
         KILN_STATUS_UNIMPLEMENTED},
    };
    for (size_t i = 0; i < sizeof hcases / sizeof *hcases; i++) {
        snprintf(t, sizeof t,
                 "HloModule m\n\nENTRY main {\n  p = f16[3,3]{1,0} parameter(0)\n  %s\n}\n",
                 hcases[i].line);
        expect_error(kiln_import_hlo, t, hcases[i].want, hcases[i].what, hcases[i].where);
    }
    /* potrf's one result is a tuple of two: a text that gives it one is refused */
    snprintf(t, sizeof t,
             "HloModule m\n\nENTRY main {\n  p = f32[3,3]{1,0} parameter(0)\n  ROOT r = "
             "f32[3,3]{0,1} custom-call(p), custom_call_target=\"lapack_spotrf_ffi\", "
             "backend_config={uplo = 76 : ui8}\n}\n");
    expect_error(kiln_import_hlo, t, KILN_STATUS_INVALID_ARGUMENT,
                 "two results (the factor and LAPACK's info) are needed, not 1",
                 "line 5, column 26");
}

/* Every prefix of a real program is refused cleanly (or imported, when whole), and so is
 * the program with one byte changed at many places: never a crash or a leak (ASan). */
static void test_truncated(void) {
    char *text = test_read_file(DATA "control.mlir");
    CHECK(text != NULL);
    if (!text) return;
    size_t len = strlen(text);
    for (size_t n = 0; n < len; n += 7) {
        kiln_graph *g = NULL;
        kiln_status s = kiln_import_stablehlo(ctx_g, text, n, &g);
        CHECK(s != KILN_STATUS_OK || g != NULL);
        CHECK(s == KILN_STATUS_OK || g == NULL);
        kiln_graph_destroy(g);
    }
    for (size_t i = 0; i < len; i += 13) {
        char c = text[i];
        text[i] = "}%)x[0\"<"[i % 8];
        kiln_graph *g = NULL;
        kiln_import_stablehlo(ctx_g, text, len, &g);
        kiln_graph_destroy(g);
        text[i] = c;
    }
    free(text);
}

/* The import of one text on the sweep's long-lived context, with its n-th allocation
 * failing: a clean HOST_OOM with nothing left (the sweep counts the blocks). */
typedef struct fault_text {
    kiln_context *ctx;
    const char *text;
    bool hlo;
} fault_text;

static kiln_status fault_import(fault_run *r) {
    const fault_text *ft = r->user;
    kiln_graph *g = (kiln_graph *)&g;
    fault_arm(r);
    kiln_status s = ft->hlo ? kiln_import_hlo(ft->ctx, ft->text, strlen(ft->text), &g)
                            : kiln_import_stablehlo(ft->ctx, ft->text, strlen(ft->text), &g);
    fault_disarm(r);
    CHECK(s == KILN_STATUS_OK || g == NULL);
    if (s) snprintf(r->message, sizeof r->message, "%s", kiln_last_error(ft->ctx));
    kiln_graph_destroy(s ? NULL : g);
    return s;
}

static void test_fault_injection(void) {
    static const char *const files[] = {DATA "control.mlir", DATA "control.hlo", DATA "shapes.mlir",
                                        DATA "linalg_f64.hlo"};
    for (int i = 0; i < 4; i++) {
        test_alloc t = {0};
        kiln_host_allocator a = test_allocator(&t);
        kiln_context_options opts = {
            .host_allocator = &a, .ignore_environment = true, .compile_tiers = 1};
        fault_text ft = {.text = test_read_file(files[i]), .hlo = strstr(files[i], ".hlo") != NULL};
        CHECK_OK(NULL, kiln_context_create(&opts, &ft.ctx, NULL, 0));
        if (ft.ctx && ft.text) {
            fault_sweep sw = {
                .name = files[i], .run = fault_import, .user = &ft, .max_runs = 20000, .armed = &t};
            long failures = fault_sweep_run(&sw);
            CHECK_MSG(failures > 20, "%s: only %ld allocations", files[i], failures);
        }
        kiln_context_destroy(ft.ctx);
        free((char *)ft.text);
        CHECK(t.live == 0 && t.bad_size == 0);
    }
}

int main(int argc, char **argv) {
    test_select_cases(argc, argv);
    char dir[] = "/tmp/kiln_test_import_XXXXXX";
    ctx_g = test_private_context(dir);
    if (!ctx_g) return 1;
    RUN(test_errors_stablehlo);
    RUN(test_errors_nested);
    RUN(test_sharding_ignored);
    RUN(test_dynamic_slice_hlo_starts);
    RUN(test_errors_unsigned);
    RUN(test_unsigned_defaults);
    RUN(test_integer_constants);
    RUN(test_errors_hlo);
    RUN(test_errors_two_operand_reduce);
    RUN(test_errors_comparators);
    RUN(test_errors_linalg);
    RUN(test_linalg_raw);
    RUN(test_training_step_marked);
    RUN(test_truncated);
    RUN(test_fault_injection);
    RUN_CC(test_programs_stablehlo);
    RUN_CC(test_programs_hlo);
    kiln_context_destroy(ctx_g);
    return test_summary("test_import");
}
