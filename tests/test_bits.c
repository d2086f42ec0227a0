/* test_bits.c — the bit-level ops (docs/ops.md "Bits"): bitwise and / or / xor / not,
 * the shifts, population_count, clz and bitcast_convert. Their values against XLA's
 * semantics written out by hand (an amount outside [0, width) shifts everything out, clz
 * of 0 is the width, 1.0f is 0x3f800000), compiled and interpreted; jax.random.uniform's
 * [0, 1) draw rebuilt from kiln_random_bits with the shifts and a bitcast, bit for bit
 * equal to kiln_random_uniform's (which test_random checks against JAX); the text form;
 * and the builders' errors. test_registry runs every op on every dtype it takes against
 * the reference interpreter at the integer extremes. */
#include "compare.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Compiles g, runs it on args and checks it against the interpreter; copies output k to
 * got[k] (each of want_bytes[k]). */
static void run(kiln_context *ctx, kiln_graph *g, int n_args, kiln_array **args, int n_out,
                void **got, const size_t *bytes) {
    CHECK_MSG(cmp_graph(ctx, g, n_args, args, NULL, 0, NULL), "%s: compiled != reference", "bits");
    kiln_executable *e = NULL;
    kiln_array *out[16] = {0};
    CHECK_OK(ctx, kiln_compile(g, NULL, &e));
    CHECK_OK(ctx, kiln_executable_run(e, n_args, args, n_out, out));
    for (int k = 0; k < n_out; k++) {
        if (out[k]) kiln_array_copy_to_host(out[k], got[k], bytes[k]);
        kiln_array_destroy(out[k]);
    }
    kiln_executable_destroy(e);
}

#define N 8

/* i32: each op on eight pairs, the shift amounts reaching 31, 32, a negative one and
 * INT32_MIN (as unsigned, far beyond the width). */
static void test_i32(kiln_context *ctx) {
    static const int32_t a[N] = {1, -1, -8, 8, 0x0f0f, INT32_MIN, 0, 0x12345678};
    static const int32_t b[N] = {31, 1, 1, 40, 4, 32, -1, INT32_MIN};
    int32_t shl[N], shrl[N], shra[N], pop[N], clz[N], x_and[N], x_or[N], x_xor[N], x_not[N];
    static const int32_t want_shl[N] = {INT32_MIN, -2, -16, 0, 0xf0f0, 0, 0, 0};
    static const int32_t want_shrl[N] = {0, 0x7fffffff, 0x7ffffffc, 0, 0xf0, 0, 0, 0};
    static const int32_t want_shra[N] = {0, -1, -4, 0, 0xf0, -1, 0, 0};
    static const int32_t want_pop[N] = {1, 32, 29, 1, 8, 1, 0, 13};
    static const int32_t want_clz[N] = {31, 0, 0, 28, 20, 0, 32, 3};
    int64_t dims[1] = {N};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "bits_i32", &g);
    kiln_value x = kiln_parameter(g, "a", KILN_DTYPE_I32, 1, dims);
    kiln_value y = kiln_parameter(g, "b", KILN_DTYPE_I32, 1, dims);
    kiln_value o[9] = {kiln_shift_left(g, x, y),
                       kiln_shift_right_logical(g, x, y),
                       kiln_shift_right_arithmetic(g, x, y),
                       kiln_population_count(g, x),
                       kiln_clz(g, x),
                       kiln_bitwise_and(g, x, y),
                       kiln_bitwise_or(g, x, y),
                       kiln_bitwise_xor(g, x, y),
                       kiln_bitwise_not(g, x)};
    CHECK_OK(ctx, kiln_graph_finish(g, 9, o));
    kiln_array *args[2] = {NULL, NULL};
    kiln_array_create(ctx, KILN_DTYPE_I32, 1, dims, a, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_I32, 1, dims, b, &args[1]);
    void *got[9] = {shl, shrl, shra, pop, clz, x_and, x_or, x_xor, x_not};
    size_t bytes[9];
    for (int k = 0; k < 9; k++) bytes[k] = sizeof shl;
    run(ctx, g, 2, args, 9, got, bytes);
    for (int i = 0; i < N; i++) {
        CHECK_MSG(shl[i] == want_shl[i], "shift_left(%d, %d) = %d, want %d", a[i], b[i], shl[i],
                  want_shl[i]);
        CHECK_MSG(shrl[i] == want_shrl[i], "shift_right_logical(%d, %d) = %d, want %d", a[i], b[i],
                  shrl[i], want_shrl[i]);
        CHECK_MSG(shra[i] == want_shra[i], "shift_right_arithmetic(%d, %d) = %d, want %d", a[i],
                  b[i], shra[i], want_shra[i]);
        CHECK_MSG(pop[i] == want_pop[i], "population_count(%d) = %d, want %d", a[i], pop[i],
                  want_pop[i]);
        CHECK_MSG(clz[i] == want_clz[i], "clz(%d) = %d, want %d", a[i], clz[i], want_clz[i]);
        CHECK_MSG(x_and[i] == (a[i] & b[i]) && x_or[i] == (a[i] | b[i]) &&
                      x_xor[i] == (a[i] ^ b[i]) && x_not[i] == ~a[i],
                  "and/or/xor/not of %d, %d", a[i], b[i]);
    }
    kiln_array_destroy(args[0]);
    kiln_array_destroy(args[1]);
    kiln_graph_destroy(g);
}

/* i64: the width is 64 (shift by 32 keeps bits, by 64 clears them), and bitcast to and
 * from f64; bool: and / or / xor / not are the logical ones. */
static void test_i64_f64_bool(kiln_context *ctx) {
    static const int64_t a[4] = {1, -1, INT64_MIN, 0};
    static const int64_t b[4] = {32, 63, 64, -3};
    static const double f[4] = {1.0, -0.0, INFINITY, 0x1p-1074};
    static const uint8_t p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
    int64_t shl[4], shrl[4], shra[4], pop[4], clz[4], bits[4];
    double back[4];
    uint8_t l_and[4], l_or[4], l_xor[4], l_not[4];
    static const int64_t want_shl[4] = {INT64_C(1) << 32, INT64_MIN, 0, 0};
    static const int64_t want_shrl[4] = {0, 1, 0, 0};
    static const int64_t want_shra[4] = {0, -1, -1, 0};
    static const int64_t want_pop[4] = {1, 64, 1, 0}, want_clz[4] = {63, 0, 0, 64};
    static const int64_t want_bits[4] = {0x3ff0000000000000, INT64_MIN, 0x7ff0000000000000, 1};
    int64_t dims[1] = {4};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "bits_i64", &g);
    kiln_value x = kiln_parameter(g, "a", KILN_DTYPE_I64, 1, dims);
    kiln_value y = kiln_parameter(g, "b", KILN_DTYPE_I64, 1, dims);
    kiln_value fx = kiln_parameter(g, "f", KILN_DTYPE_F64, 1, dims);
    kiln_value px = kiln_parameter(g, "p", KILN_DTYPE_BOOL, 1, dims);
    kiln_value qx = kiln_parameter(g, "q", KILN_DTYPE_BOOL, 1, dims);
    kiln_value fb = kiln_bitcast_convert(g, fx, KILN_DTYPE_I64);
    kiln_value o[11] = {kiln_shift_left(g, x, y),
                        kiln_shift_right_logical(g, x, y),
                        kiln_shift_right_arithmetic(g, x, y),
                        kiln_population_count(g, x),
                        kiln_clz(g, x),
                        fb,
                        kiln_bitcast_convert(g, fb, KILN_DTYPE_F64),
                        kiln_bitwise_and(g, px, qx),
                        kiln_bitwise_or(g, px, qx),
                        kiln_bitwise_xor(g, px, qx),
                        kiln_bitwise_not(g, px)};
    CHECK_OK(ctx, kiln_graph_finish(g, 11, o));
    kiln_array *args[5] = {0};
    kiln_array_create(ctx, KILN_DTYPE_I64, 1, dims, a, &args[0]);
    kiln_array_create(ctx, KILN_DTYPE_I64, 1, dims, b, &args[1]);
    kiln_array_create(ctx, KILN_DTYPE_F64, 1, dims, f, &args[2]);
    kiln_array_create(ctx, KILN_DTYPE_BOOL, 1, dims, p, &args[3]);
    kiln_array_create(ctx, KILN_DTYPE_BOOL, 1, dims, q, &args[4]);
    void *got[11] = {shl, shrl, shra, pop, clz, bits, back, l_and, l_or, l_xor, l_not};
    size_t bytes[11];
    for (int k = 0; k < 11; k++) bytes[k] = k < 7 ? 32 : 4;
    run(ctx, g, 5, args, 11, got, bytes);
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(shl[i] == want_shl[i] && shrl[i] == want_shrl[i] && shra[i] == want_shra[i],
                  "i64 shifts of %lld by %lld: %lld %lld %lld", (long long)a[i], (long long)b[i],
                  (long long)shl[i], (long long)shrl[i], (long long)shra[i]);
        CHECK_MSG(pop[i] == want_pop[i] && clz[i] == want_clz[i], "i64 counts of %lld: %lld %lld",
                  (long long)a[i], (long long)pop[i], (long long)clz[i]);
        CHECK_MSG(bits[i] == want_bits[i], "bitcast(%g) = %llx", f[i], (unsigned long long)bits[i]);
        CHECK_MSG(!memcmp(&back[i], &f[i], 8), "bitcast back of %g", f[i]);
        CHECK_MSG(l_and[i] == (p[i] && q[i]) && l_or[i] == (p[i] || q[i]) &&
                      l_xor[i] == (p[i] != q[i]) && l_not[i] == !p[i],
                  "bool ops on %d, %d", p[i], q[i]);
    }
    for (int k = 0; k < 5; k++) kiln_array_destroy(args[k]);
    kiln_graph_destroy(g);
}

/* jax.random.uniform's [0, 1) f32 draw is bits >> 9 | 0x3f800000 read as a float, minus
 * one: written with the bit ops, it equals kiln_random_uniform's draw bit for bit. */
static void test_uniform_from_bits(kiln_context *ctx) {
    int64_t dims[2] = {37, 41};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "uniform_bits", &g);
    kiln_value key = kiln_random_key(g, 1234);
    kiln_value bits = kiln_random_bits(g, key, 2, dims);
    kiln_value m =
        kiln_bitwise_or(g, kiln_shift_right_logical(g, bits, kiln_scalar(g, KILN_DTYPE_I32, 9)),
                        kiln_scalar(g, KILN_DTYPE_I32, 0x3f800000));
    kiln_value u =
        kiln_sub(g, kiln_bitcast_convert(g, m, KILN_DTYPE_F32), kiln_scalar(g, KILN_DTYPE_F32, 1));
    kiln_value o[2] = {u, kiln_random_uniform(g, key, KILN_DTYPE_F32, 2, dims, 0, 1)};
    CHECK_OK(ctx, kiln_graph_finish(g, 2, o));
    static float got[2][37 * 41];
    void *p[2] = {got[0], got[1]};
    size_t bytes[2] = {sizeof got[0], sizeof got[1]};
    run(ctx, g, 0, NULL, 2, p, bytes);
    CHECK_MSG(!memcmp(got[0], got[1], sizeof got[0]), "uniform from bits != kiln_random_uniform");
    kiln_graph_destroy(g);
}

/* The text form prints and reads back the same graph. */
static void test_text(kiln_context *ctx) {
    int64_t dims[1] = {3};
    kiln_graph *g = NULL;
    kiln_graph_create(ctx, "text", &g);
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_I32, 1, dims);
    kiln_value f = kiln_bitcast_convert(g, kiln_shift_left(g, x, kiln_clz(g, x)), KILN_DTYPE_F32);
    kiln_value o =
        kiln_convert(g, kiln_bitcast_convert(g, kiln_exp(g, f), KILN_DTYPE_I32), KILN_DTYPE_I64);
    o = kiln_bitwise_xor(g, kiln_population_count(g, o), o);
    CHECK_OK(ctx, kiln_graph_finish(g, 1, &o));
    char *s = kiln_graph_to_string(g);
    CHECK_CONTAINS(s, "bitcast_convert(%3) : f32[3]");
    CHECK_CONTAINS(s, "count_leading_zeros(%1) : i32[3]");
    kiln_graph *h = NULL;
    CHECK_OK(ctx, kiln_graph_parse(ctx, s, strlen(s), "bits.kir", &h));
    char *t = h ? kiln_graph_to_string(h) : NULL;
    CHECK_MSG(t && !strcmp(s, t), "the loaded graph prints differently:\n%s\n%s", s, t ? t : "");
    kiln_string_free(ctx, s);
    kiln_string_free(ctx, t);
    kiln_graph_destroy(h);
    kiln_graph_destroy(g);
}

static void expect_error(kiln_context *ctx, kiln_graph *g, kiln_value v, kiln_status st,
                         const char *text) {
    CHECK_MSG(v.id == 0, "%s: built a value", text);
    CHECK_STATUS(kiln_graph_status(g), st);
    CHECK_CONTAINS(kiln_last_error(ctx), text);
}

/* Each error names the builder, the dtypes and what would be taken. */
static void test_errors(kiln_context *ctx) {
    int64_t dims[1] = {2};
    struct {
        const char *text;
        int which;
    } cases[] = {
        {"kiln_logical_and: takes bool operands, not i32 and i32 (kiln_bitwise_and", 0},
        {"kiln_shift_left: takes i32 or i64, not f32", 1},
        {"kiln_bitwise_xor: takes i32, i64 or bool, not f64", 2},
        {"kiln_bitcast_convert: cannot reinterpret f32 as i64", 3},
        {"kiln_bitcast_convert: cannot reinterpret bf16 as f16", 4},
        {"kiln_bitwise_not: takes i32, i64 or bool, not f32", 5},
        {"kiln_shift_right_logical: operand dtypes differ (i32 vs i64)", 6},
        {"kiln_population_count: takes i32 or i64, not bool", 7},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kiln_graph *g = NULL;
        kiln_graph_create(ctx, "errors", &g);
        kiln_value i = kiln_parameter(g, "i", KILN_DTYPE_I32, 1, dims);
        kiln_value l = kiln_parameter(g, "l", KILN_DTYPE_I64, 1, dims);
        kiln_value f = kiln_parameter(g, "f", KILN_DTYPE_F32, 1, dims);
        kiln_value d = kiln_parameter(g, "d", KILN_DTYPE_F64, 1, dims);
        kiln_value h = kiln_parameter(g, "h", KILN_DTYPE_BF16, 1, dims);
        kiln_value b = kiln_parameter(g, "b", KILN_DTYPE_BOOL, 1, dims);
        kiln_value v = {0};
        switch (cases[c].which) {
        case 0: v = kiln_logical_and(g, i, i); break;
        case 1: v = kiln_shift_left(g, f, f); break;
        case 2: v = kiln_bitwise_xor(g, d, d); break;
        case 3: v = kiln_bitcast_convert(g, f, KILN_DTYPE_I64); break;
        case 4: v = kiln_bitcast_convert(g, h, KILN_DTYPE_F16); break;
        case 5: v = kiln_bitwise_not(g, f); break;
        case 6: v = kiln_shift_right_logical(g, i, l); break;
        case 7: v = kiln_population_count(g, b); break;
        }
        expect_error(ctx, g, v, KILN_STATUS_DTYPE, cases[c].text);
        kiln_graph_destroy(g);
    }
}

int main(void) {
    kiln_context *ctx = test_context();
    if (!ctx) return 1;
    test_i32(ctx);
    test_i64_f64_bool(ctx);
    test_uniform_from_bits(ctx);
    test_text(ctx);
    test_errors(ctx);
    kiln_context_destroy(ctx);
    return test_summary("test_bits");
}
