/* test_random.c — the counter-based generator (src/trace/random.c, the RANDOM op):
 *  - bits, f32 uniform, keys, split, fold_in and bernoulli equal jax.random's for the same
 *    keys (stored values, below), normal within a few ulp; bf16 and f16 uniform (bounded
 *    too) and normal bit for bit;
 *  - compiled and interpreted give the same bits (fused, unfused, without passes), and a
 *    draw's element depends only on its row-major position;
 *  - keys are traced values: one compiled program (and one jit trace) serves every key;
 *  - statistics with fixed keys and bounds a broken generator fails: split streams are
 *    independent (chi-square of pairs), uniform stays in [lo, hi), normal has mean 0 and
 *    variance 1, bernoulli hits its rate, dropout keeps 1 - rate and scales by 1/(1 - rate);
 *  - dropout fuses into one kernel and differentiates through its mask;
 *  - bad arguments are builder errors naming the function; a graph with random ops reads
 *    back from its text; every host allocation of a dropout step fails cleanly in turn. */
#include "compare.h"
#include "fault.h"

#include <stdint.h>

static kiln_context *ctx;

/* ----------------------------------------------------------- JAX's values ---- */

/* Computed with jax 0.10.2 (bench/.venv, CPU, jax_threefry_partitionable = True, its
 * default) by:
 *   K = jax.random.PRNGKey
 *   C = jax.random.wrap_key_data(np.array([0x12345678, 0x9abcdef0], np.uint32))
 *   jax.random.bits(K(0), (7,)); jax.random.bits(K(42), (2, 3)); jax.random.bits(C, (3,))
 *   jax.random.uniform(K(42), (2, 3)); jax.random.uniform(C, (4,))   [f32 bit patterns]
 *   jax.random.normal(K(42), (6,)); jax.random.normal(C, (4,))
 *   jax.random.key_data(jax.random.split(K(42), 3))
 *   jax.random.key_data(jax.random.fold_in(K(42), 7)), ...fold_in(C, 0xdeadbeef)
 *   jax.random.bernoulli(K(42), 0.3, (10,))
 *   with jax_enable_x64: jax.random.uniform(K(42), (4,), dtype=float64) [bit patterns],
 *   jax.random.normal(K(42), (4,), dtype=float64), jax.random.key_data(K(2**40 + 5)) */
static const uint32_t jax_bits_k0[7] = {0xf29a4fa7, 0xfa843692, 0x55110e28, 0x77faa835,
                                        0x91e43bb7, 0x2a5e6943, 0x4f68ea7d};
static const uint32_t jax_bits_k42[6] = {0x7d1c13a2, 0xae0730d9, 0x9dc3f9f9,
                                         0x8f9ec1d7, 0x735d7315, 0x95fb4ed8};
static const uint32_t jax_bits_kc[3] = {0x4d9370ba, 0x2510c99e, 0xc940ecb8};
static const uint32_t jax_uniform_k42[6] = {0x3efa3824, 0x3f2e0730, 0x3f1dc3f8,
                                            0x3f0f9ec0, 0x3ee6bae4, 0x3f15fb4e};
static const uint32_t jax_uniform_kc[4] = {0x3e9b26e0, 0x3e144320, 0x3f4940ec, 0x3f0bff38};
static const double jax_normal_k42[6] = {-0.02830461598932743, 0.4671318531036377,
                                         0.2957029640674591,   0.15354591608047485,
                                         -0.12403281778097153, 0.21692314743995667};
static const double jax_normal_kc[4] = {-0.5157029032707214, -1.0590550899505615,
                                        0.7931230068206787, 0.11773985624313354};
static const uint32_t jax_split_k42[6] = {0x6d3e048f, 0x1022172d, 0x03d7b32d,
                                          0xadd083f4, 0x92fb20ea, 0x0f38d913};
static const uint32_t jax_fold_k42_7[2] = {0x97d0552f, 0x51bf719f};
static const uint32_t jax_fold_kc_deadbeef[2] = {0xec3dc72a, 0x11358fba};
static const uint8_t jax_bernoulli_k42[10] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
static const uint64_t jax_uniform64_k42[4] = {0x3fdb4f8123c40884ull, 0x3f8ebd996d6e8400ull,
                                              0x3fe25f641d41e71aull, 0x3fe75aad28c6a974ull};
static const double jax_normal64_k42[4] = {-0.18471174528191162, -2.169824560397754,
                                           0.18693555179382582, 0.6122653570510959};

/* The 16-bit draws, computed with the same jax (bit patterns of the bf16 / f16 results):
 *   jax.random.uniform(K(42), (2, 3), d); jax.random.uniform(C, (4,), d)
 *   jax.random.normal(K(42), (16,), d); jax.random.normal(C, (3, 5), d)
 *   jax.random.uniform(K(0), (8,), d, -3.0, 5.5)
 * for d = jnp.bfloat16 and jnp.float16. (Over 65536 draws of each from PRNGKey(1234),
 * uniform, normal and the bounded uniform, kiln gave the same bits.) */
static const uint16_t jax_uniform_bf16_k42[6] = {0x3f22, 0x3f58, 0x3f78, 0x3f56, 0x3da0, 0x3f58};
static const uint16_t jax_uniform_bf16_kc[4] = {0x3f3a, 0x3f1e, 0x3f38, 0x3f50};
static const uint16_t jax_uniform_f16_k42[6] = {0x2ce0, 0x3218, 0x3bce, 0x3a0e, 0x3730, 0x34ec};
static const uint16_t jax_uniform_f16_kc[4] = {0x3708, 0x3a4c, 0x3b64, 0x3338};
static const uint16_t jax_normal_bf16_k42[16] = {0x3eb0, 0x3f82, 0x3ff2, 0x3f7c, 0xbfb4, 0x3f82,
                                                 0x3e77, 0x3efd, 0x3dfc, 0x3efd, 0xbf61, 0xbe1c,
                                                 0xbf1f, 0xbf45, 0x3f86, 0x3ed1};
static const uint16_t jax_normal_bf16_kc[15] = {0x3f1c, 0x3e9c, 0x3f16, 0x3f65, 0x3f0a,
                                                0xbeec, 0xbf70, 0x3ba0, 0x3fa4, 0xbf69,
                                                0x3f8b, 0xbf4c, 0xc039, 0xbecc, 0x3f3b};
static const uint16_t jax_normal_f16_k42[16] = {0xbdb8, 0xbb01, 0x3fe6, 0x3993, 0xb011, 0xb804,
                                                0x3898, 0xbc45, 0x4112, 0x4039, 0x3421, 0xbc6e,
                                                0x3122, 0x2b9a, 0x40c5, 0xbf8d};
static const uint16_t jax_normal_f16_kc[15] = {0xb0db, 0x3a61, 0x3dbc, 0xba05, 0x266d,
                                               0xa43a, 0xbcac, 0xbcb6, 0xb4a3, 0x3b94,
                                               0xbee6, 0x252c, 0xbd5c, 0x3701, 0x3440};
/* Bounded f32 draws, with the same jax on an AMD EPYC (Zen 5) and likewise jitted (XLA
 * rounds u * (hi - lo) + lo once, an fma):
 *   jax.random.uniform(K(0), (8,), jnp.float32, lo, hi)   [bit patterns]
 * for (lo, hi) = (1e-3, 2e-3) and (-1000, 1000). */
static const uint32_t jax_bounded_f32_narrow[8] = {0x3aff48dd, 0x3b01ab10, 0x3aaea049, 0x3ac08057,
                                                   0x3acdc4ba, 0x3a98c3cb, 0x3aabbad7, 0x3add7190};
static const uint32_t jax_bounded_f32_wide[8] = {0x445fd560, 0x446f4a39, 0xc3a7b561, 0xc27aa6fe,
                                                 0x430bc705, 0xc4273f9d, 0xc3bdce2e, 0x43bd7b05};
static const uint16_t jax_bounded_bf16_k0[8] = {0x4020, 0x3fec, 0xbfd6, 0xbfa3,
                                                0x4042, 0xbf50, 0x3f90, 0x40ae};
static const uint16_t jax_bounded_f16_k0[8] = {0xb5c4, 0xbcc3, 0xc112, 0x4128,
                                               0xbc19, 0x37ea, 0x44c7, 0x4399};

/* jax.random's other samplers, same jax, K and C as above:
 *   jax.random.randint(K(42), (8,), -5, 9); randint(C, (6,), -2**31, 2**31 - 1);
 *   randint(K(42), (4,), 7, 3); randint(C, (5,), 0, 1000)
 *   jax.random.gumbel(K(42), (6,)); exponential(K(42), (6,))        [f32 bit patterns]
 *   jax.random.truncated_normal(K(42), -1.5, 2.0, (6,)); ...(C, 0.5, 0.75, (6,))
 *   logits = (np.arange(15, dtype=np.float32).reshape(3, 5) % 4) * 0.7 - 1
 *   jax.random.categorical(K(42), logits, axis=-1); categorical(C, logits, axis=0)
 *   jax.random.permutation(K(42), 10); permutation(C, 2000): its first 8 and
 *   sum((i + 1) * p[i]) mod 2^32 (two rounds of sorting past n = 1625) */
static const int32_t jax_randint_k42[8] = {3, 7, 6, 6, 0, -2, -2, 4};
static const int32_t jax_randint_c_full[6] = {-137722197, -547723910, -729740521,
                                              387044452,  -242924744, -230467081};
static const int32_t jax_randint_c_1000[5] = {171, 74, 191, 380, 624};
static const uint32_t jax_gumbel_k42[6] = {0x3eab0e4a, 0x3f73b78c, 0x3f39bc5f,
                                           0x3f0c54f8, 0x3e683f8f, 0x3f204922};
static const uint32_t jax_exponential_k42[6] = {0x3f2bbab2, 0x3f91c438, 0x3f7533b1,
                                                0x3f52c34c, 0x3f1958b3, 0x3f61ae44};
static const uint32_t jax_truncnorm_k42[6] = {0x3cf14c21, 0x3ef7b001, 0x3ea70bdd,
                                              0x3e48675f, 0xbd6b50e7, 0x3e81fc17};
static const uint32_t jax_truncnorm_c[6] = {0x3f1263e9, 0x3f08b2dc, 0x3f316aad,
                                            0x3f21c0a3, 0x3f066844, 0x3f302383};
static const int32_t jax_categorical_k42[3] = {3, 2, 1};
static const int32_t jax_categorical_c0[5] = {2, 2, 0, 0, 2};
static const int32_t jax_perm_k42[10] = {7, 4, 2, 5, 3, 6, 8, 9, 0, 1};
static const int32_t jax_perm_c_head[8] = {172, 1239, 327, 1916, 166, 75, 1927, 1388};
static const uint32_t jax_perm_c_sum = 2014718407u;

/* ------------------------------------------------------------- helpers ---- */

/* The constant key {w0, w1} (jax.random.wrap_key_data). */
static kiln_value key_of(kiln_graph *g, uint32_t w0, uint32_t w1) {
    int32_t w[2] = {(int32_t)w0, (int32_t)w1};
    int64_t d[1] = {2};
    return kiln_constant(g, KILN_DTYPE_I32, 1, d, w);
}

/* Compiles g (with opts), runs it on args and copies every output to the host (out[i]
 * malloc'd); also interprets it into ref[i] when ref is not NULL. 0 on any failure. */
static int run_graph(kiln_graph *g, int n_args, kiln_array **args, const kiln_compile_options *opts,
                     void **out, void **ref) {
    int n = kiln_graph_num_outputs(g), ok = 1;
    kiln_array **got = calloc((size_t)n, sizeof *got), **want = calloc((size_t)n, sizeof *want);
    kiln_executable *e = NULL;
    if (kiln_compile(g, opts, &e) || kiln_executable_run(e, n_args, args, n, got)) {
        fprintf(stderr, "compile/run: %s\n", kiln_last_error(ctx));
        ok = 0;
    }
    if (ok && ref && kiln_interpret(g, n_args, args, n, want)) {
        fprintf(stderr, "interpret: %s\n", kiln_last_error(ctx));
        ok = 0;
    }
    for (int i = 0; ok && i < n; i++) {
        size_t bytes = kiln_array_nbytes(got[i]);
        out[i] = malloc(bytes ? bytes : 1);
        ok &= !kiln_array_copy_to_host(got[i], out[i], bytes);
        if (ref) {
            ref[i] = malloc(bytes ? bytes : 1);
            ok &= !kiln_array_copy_to_host(want[i], ref[i], bytes);
        }
    }
    for (int i = 0; i < n; i++) kiln_array_destroy(got[i]), kiln_array_destroy(want[i]);
    free(got), free(want);
    kiln_executable_destroy(e);
    return ok;
}

static void free_all(void **p, int n) {
    for (int i = 0; p && i < n; i++) free(p[i]), p[i] = NULL;
}

/* Distance in ulp between two floats of the same sign region (the normal draws). */
static int64_t ulp_f32(float a, float b) {
    int32_t x, y;
    memcpy(&x, &a, 4), memcpy(&y, &b, 4);
    if (x < 0) x = INT32_MIN - x;
    if (y < 0) y = INT32_MIN - y;
    return x > y ? (int64_t)x - y : (int64_t)y - x;
}

/* ------------------------------------------------------------ tests ---- */

/* Every stored JAX value, compiled and interpreted. */
static void test_matches_jax(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "jax", &g));
    kiln_value k0 = kiln_random_key(g, 0), k42 = kiln_random_key(g, 42),
               kc = key_of(g, 0x12345678, 0x9abcdef0), split[3];
    int64_t d7[1] = {7}, d23[2] = {2, 3}, d3[1] = {3}, d4[1] = {4}, d6[1] = {6}, d10[1] = {10};
    CHECK_STATUS(kiln_random_split(g, k42, 3, split), KILN_STATUS_OK);
    kiln_value outs[] = {
        kiln_random_bits(g, k0, 1, d7),
        kiln_random_bits(g, k42, 2, d23),
        kiln_random_bits(g, kc, 1, d3),
        kiln_random_uniform(g, k42, KILN_DTYPE_F32, 2, d23, 0, 1),
        kiln_random_uniform(g, kc, KILN_DTYPE_F32, 1, d4, 0, 1),
        kiln_random_normal(g, k42, KILN_DTYPE_F32, 1, d6),
        kiln_random_normal(g, kc, KILN_DTYPE_F32, 1, d4),
        kiln_concatenate(g, 3, split, 0),
        kiln_random_fold_in(g, k42, kiln_scalar(g, KILN_DTYPE_I32, 7)),
        kiln_random_fold_in(g, kc, kiln_scalar(g, KILN_DTYPE_I64, 0xdeadbeef)),
        kiln_random_bernoulli(g, k42, 0.3, 1, d10),
        kiln_random_uniform(g, k42, KILN_DTYPE_F64, 1, d4, 0, 1),
        kiln_random_normal(g, k42, KILN_DTYPE_F64, 1, d4),
        kiln_random_key(g, ((uint64_t)1 << 40) + 5),
        kiln_random_uniform(g, k0, KILN_DTYPE_F32, 1, (const int64_t[]){8}, 1e-3, 2e-3),
        kiln_random_uniform(g, k0, KILN_DTYPE_F32, 1, (const int64_t[]){8}, -1000, 1000),
    };
    enum { N = sizeof outs / sizeof *outs };
    CHECK_STATUS(kiln_graph_finish(g, N, outs), KILN_STATUS_OK);
    void *got[N] = {0}, *ref[N] = {0};
    CHECK(run_graph(g, 0, NULL, NULL, got, ref));
    for (int v = 0; v < 2 && got[N - 1]; v++) {
        CHECK_MSG(
            !memcmp(v ? ref[14] : got[14], jax_bounded_f32_narrow, sizeof jax_bounded_f32_narrow),
            "%s: uniform f32(0) on [1e-3, 2e-3)", v ? "interpreted" : "compiled");
        CHECK_MSG(!memcmp(v ? ref[15] : got[15], jax_bounded_f32_wide, sizeof jax_bounded_f32_wide),
                  "%s: uniform f32(0) on [-1000, 1000)", v ? "interpreted" : "compiled");
        void **o = v ? ref : got;
        const char *how = v ? "interpreted" : "compiled";
        CHECK_MSG(!memcmp(o[0], jax_bits_k0, sizeof jax_bits_k0), "%s: bits(key 0)", how);
        CHECK_MSG(!memcmp(o[1], jax_bits_k42, sizeof jax_bits_k42), "%s: bits(key 42)", how);
        CHECK_MSG(!memcmp(o[2], jax_bits_kc, sizeof jax_bits_kc), "%s: bits(wrapped key)", how);
        CHECK_MSG(!memcmp(o[3], jax_uniform_k42, sizeof jax_uniform_k42), "%s: uniform(42)", how);
        CHECK_MSG(!memcmp(o[4], jax_uniform_kc, sizeof jax_uniform_kc), "%s: uniform(C)", how);
        /* XLA's erfinv and ours are the same polynomial; the compilers may fuse a*b+c */
        for (int i = 0; i < 6; i++)
            CHECK_MSG(ulp_f32(((float *)o[5])[i], (float)jax_normal_k42[i]) <= 4,
                      "%s: normal(42)[%d] = %.9g, jax %.9g", how, i, ((float *)o[5])[i],
                      jax_normal_k42[i]);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(ulp_f32(((float *)o[6])[i], (float)jax_normal_kc[i]) <= 4,
                      "%s: normal(C)[%d] = %.9g, jax %.9g", how, i, ((float *)o[6])[i],
                      jax_normal_kc[i]);
        CHECK_MSG(!memcmp(o[7], jax_split_k42, sizeof jax_split_k42), "%s: split(42, 3)", how);
        CHECK_MSG(!memcmp(o[8], jax_fold_k42_7, 8), "%s: fold_in(42, 7)", how);
        CHECK_MSG(!memcmp(o[9], jax_fold_kc_deadbeef, 8), "%s: fold_in(C, 0xdeadbeef)", how);
        CHECK_MSG(!memcmp(o[10], jax_bernoulli_k42, 10), "%s: bernoulli(42, 0.3)", how);
        CHECK_MSG(!memcmp(o[11], jax_uniform64_k42, sizeof jax_uniform64_k42),
                  "%s: uniform f64(42)", how);
        /* f64 normal: the same number by another algorithm (the quantile, not erfinv) */
        for (int i = 0; i < 4; i++)
            CHECK_MSG(fabs(((double *)o[12])[i] - jax_normal64_k42[i]) <= 1e-13,
                      "%s: normal f64(42)[%d] = %.17g, jax %.17g", how, i, ((double *)o[12])[i],
                      jax_normal64_k42[i]);
        CHECK_MSG(((int32_t *)o[13])[0] == 256 && ((int32_t *)o[13])[1] == 5,
                  "%s: key(2^40 + 5) = {%d, %d}, jax {256, 5}", how, ((int32_t *)o[13])[0],
                  ((int32_t *)o[13])[1]);
    }
    free_all(got, N), free_all(ref, N);
    kiln_graph_destroy(g);
}

/* The bf16 and f16 draws equal jax.random's bit for bit: compiled fused, unfused and
 * without passes, and interpreted. */
static void test_half_matches_jax(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "jax16", &g));
    kiln_value k0 = kiln_random_key(g, 0), k42 = kiln_random_key(g, 42),
               kc = key_of(g, 0x12345678, 0x9abcdef0);
    int64_t d23[2] = {2, 3}, d4[1] = {4}, d16[1] = {16}, d35[2] = {3, 5}, d8[1] = {8};
    const kiln_dtype bf = KILN_DTYPE_BF16, h = KILN_DTYPE_F16;
    kiln_value outs[] = {
        kiln_random_uniform(g, k42, bf, 2, d23, 0, 1),
        kiln_random_uniform(g, kc, bf, 1, d4, 0, 1),
        kiln_random_uniform(g, k42, h, 2, d23, 0, 1),
        kiln_random_uniform(g, kc, h, 1, d4, 0, 1),
        kiln_random_normal(g, k42, bf, 1, d16),
        kiln_random_normal(g, kc, bf, 2, d35),
        kiln_random_normal(g, k42, h, 1, d16),
        kiln_random_normal(g, kc, h, 2, d35),
        kiln_random_uniform(g, k0, bf, 1, d8, -3, 5.5),
        kiln_random_uniform(g, k0, h, 1, d8, -3, 5.5),
    };
    static const struct {
        const uint16_t *bits;
        size_t n;
        const char *what;
    } want[] = {
        {jax_uniform_bf16_k42, 6, "uniform bf16(42)"},
        {jax_uniform_bf16_kc, 4, "uniform bf16(C)"},
        {jax_uniform_f16_k42, 6, "uniform f16(42)"},
        {jax_uniform_f16_kc, 4, "uniform f16(C)"},
        {jax_normal_bf16_k42, 16, "normal bf16(42)"},
        {jax_normal_bf16_kc, 15, "normal bf16(C)"},
        {jax_normal_f16_k42, 16, "normal f16(42)"},
        {jax_normal_f16_kc, 15, "normal f16(C)"},
        {jax_bounded_bf16_k0, 8, "uniform bf16(0) on [-3, 5.5)"},
        {jax_bounded_f16_k0, 8, "uniform f16(0) on [-3, 5.5)"},
    };
    enum { N = sizeof outs / sizeof *outs };
    CHECK_STATUS(kiln_graph_finish(g, N, outs), KILN_STATUS_OK);
    kiln_compile_options variants[3] = {{0}, {.disable_fusion = true}, {.disable_passes = true}};
    for (int v = 0; v < 3; v++) {
        void *got[N] = {0}, *ref[N] = {0};
        CHECK(run_graph(g, 0, NULL, &variants[v], got, v == 0 ? ref : NULL));
        for (int i = 0; i < N && got[N - 1]; i++) {
            CHECK_MSG(!memcmp(got[i], want[i].bits, 2 * want[i].n), "variant %d: %s", v,
                      want[i].what);
            if (v == 0)
                CHECK_MSG(!memcmp(ref[i], want[i].bits, 2 * want[i].n), "interpreted: %s",
                          want[i].what);
        }
        free_all(got, N), free_all(ref, N);
    }
    kiln_graph_destroy(g);
}

/* f64 normals near 0 keep their relative precision: the five draws of smallest magnitude
 * of jax.random.normal(PRNGKey(2147483647), (1000,), float64) (x64 on, jax 0.10.2), at
 * the indices below, against sqrt(2) erfinv(u) of the same u by mpmath at 40 digits,
 * rounded to double. Through (1 + u) / 2 the draw at 654 was 4078 ulp off. */
static void test_normal_f64_near_zero(void) {
    static const int idx[5] = {17, 189, 431, 646, 654};
    static const double exact[5] = {-0.0010713359367423335, 0.000327785512817697,
                                    0.003092575457041544, 0.0034081697368643685,
                                    0.00011042313754723514};
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "normal64", &g));
    int64_t d[1] = {1000};
    kiln_value z = kiln_random_normal(g, kiln_random_key(g, 2147483647), KILN_DTYPE_F64, 1, d);
    CHECK_STATUS(kiln_graph_finish(g, 1, &z), KILN_STATUS_OK);
    void *got[1] = {0}, *ref[1] = {0};
    CHECK(run_graph(g, 0, NULL, NULL, got, ref));
    for (int v = 0; v < 2 && got[0]; v++) {
        const double *o = v ? ref[0] : got[0];
        for (int i = 0; i < 5; i++) {
            int64_t a, b;
            memcpy(&a, &o[idx[i]], 8), memcpy(&b, &exact[i], 8);
            CHECK_MSG(llabs(a - b) <= 2, "%s normal f64[%d] = %.17g, exact %.17g (%lld ulp)",
                      v ? "interpreted" : "compiled", idx[i], o[idx[i]], exact[i],
                      (long long)llabs(a - b));
        }
    }
    free_all(got, 1), free_all(ref, 1);
    kiln_graph_destroy(g);
}

/* Compiled (fused, unfused, no passes) equals interpreted bit for bit (normal: 4 ulp,
 * f64: 1e-15 relative, for the compiler's contractions), and element i of a draw is the
 * same whatever the draw's shape. */
static void test_compiled_equals_reference(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "bitwise", &g));
    int64_t kd[1] = {2}, d3[3] = {3, 4, 5}, flat[1] = {60};
    kiln_value key = kiln_parameter(g, "key", KILN_DTYPE_I32, 1, kd);
    kiln_value outs[] = {
        kiln_random_bits(g, key, 3, d3),
        kiln_random_bits(g, key, 1, flat),
        kiln_random_uniform(g, key, KILN_DTYPE_F32, 3, d3, 0, 1),
        kiln_random_uniform(g, key, KILN_DTYPE_F64, 3, d3, -1, 4),
        kiln_random_normal(g, key, KILN_DTYPE_F32, 3, d3),
        kiln_random_normal(g, key, KILN_DTYPE_F64, 3, d3),
        kiln_random_bernoulli(g, key, 0.5, 3, d3),
        kiln_random_uniform(g, key, KILN_DTYPE_BF16, 3, d3, -2, 3),
        kiln_random_normal(g, key, KILN_DTYPE_BF16, 3, d3),
        kiln_random_uniform(g, key, KILN_DTYPE_F16, 3, d3, -2, 3),
        kiln_random_normal(g, key, KILN_DTYPE_F16, 3, d3),
    };
    enum { N = sizeof outs / sizeof *outs };
    CHECK_STATUS(kiln_graph_finish(g, N, outs), KILN_STATUS_OK);
    int32_t kv[2] = {(int32_t)0xdeadbeef, 12345};
    kiln_array *arg = NULL;
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, kd, kv, &arg));
    kiln_compile_options variants[3] = {{0}, {.disable_fusion = true}, {.disable_passes = true}};
    for (int v = 0; v < 3; v++) {
        void *got[N] = {0}, *ref[N] = {0};
        CHECK(run_graph(g, 1, &arg, &variants[v], got, ref));
        if (!got[N - 1]) continue;
        CHECK_MSG(!memcmp(got[0], ref[0], 240), "variant %d: bits differ", v);
        CHECK_MSG(!memcmp(got[0], got[1], 240), "variant %d: bits of [3,4,5] != of [60]", v);
        CHECK_MSG(!memcmp(got[2], ref[2], 240), "variant %d: uniform f32 differs", v);
        CHECK_MSG(!memcmp(got[6], ref[6], 60), "variant %d: bernoulli differs", v);
        for (int k = 7; k < 11; k++) /* 16-bit: the same bits, normal included */
            CHECK_MSG(!memcmp(got[k], ref[k], 120), "variant %d: 16-bit draw %d differs", v, k);
        for (int i = 0; i < 60; i++) {
            double a = ((double *)got[3])[i], b = ((double *)ref[3])[i];
            CHECK_MSG(a >= -1 && a < 4 && fabs(a - b) <= 1e-15 * 4, "variant %d: uniform f64[%d]",
                      v, i);
            CHECK_MSG(ulp_f32(((float *)got[4])[i], ((float *)ref[4])[i]) <= 4,
                      "variant %d: normal f32[%d] %.9g vs %.9g", v, i, ((float *)got[4])[i],
                      ((float *)ref[4])[i]);
            a = ((double *)got[5])[i], b = ((double *)ref[5])[i];
            CHECK_MSG(fabs(a - b) <= 1e-15 * (1 + fabs(b)), "variant %d: normal f64[%d]", v, i);
        }
        free_all(got, N), free_all(ref, N);
    }
    kiln_array_destroy(arg);
    kiln_graph_destroy(g);
}

/* The key is a parameter: one trace, one executable, a new key per call (and the same
 * key gives what a constant key gives). */
static int trace_uniform(kiln_graph *g, const kiln_value *args, int n_args, const void *st,
                         void *user, kiln_value *outs) {
    (void)n_args, (void)st, (void)user;
    int64_t d[1] = {16};
    outs[0] = kiln_random_uniform(g, args[0], KILN_DTYPE_F32, 1, d, 0, 1);
    return 1;
}

static void test_key_is_traced(void) {
    kiln_jit_options o = {.name = "uniform", .fn = trace_uniform};
    kiln_jit *j = NULL;
    CHECK_OK(ctx, kiln_jit_create(ctx, &o, &j));
    float prev[16] = {0};
    int64_t kd[1] = {2};
    for (int step = 0; step < 3; step++) {
        int32_t kv[2] = {0, 42 + step};
        kiln_array *key = NULL, *out = NULL;
        CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, kd, kv, &key));
        CHECK_OK(ctx, kiln_jit_call(j, 1, &key, NULL, 0, 1, &out));
        float now[16] = {0};
        if (out) CHECK_OK(ctx, kiln_array_copy_to_host(out, now, sizeof now));
        if (step == 0) /* key {0, 42} is PRNGKey(42): JAX's first six */
            CHECK(!memcmp(now, jax_uniform_k42, sizeof jax_uniform_k42));
        else
            CHECK_MSG(memcmp(now, prev, sizeof now), "step %d drew what step %d drew", step,
                      step - 1);
        memcpy(prev, now, sizeof now);
        kiln_array_destroy(key), kiln_array_destroy(out);
    }
    kiln_jit_stats st;
    kiln_jit_get_stats(j, &st);
    CHECK_MSG(st.traces == 1 && st.compiles == 1, "traces %llu, compiles %llu",
              (unsigned long long)st.traces, (unsigned long long)st.compiles);
    kiln_jit_destroy(j);
}

/* n draws of a kind from one key, to the host. */
static void *draw_host(int kind, void (*keys)(kiln_graph *, kiln_value *), int n_keys, int64_t n,
                       double a, double b) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "draw", &g));
    kiln_value k[4], outs[4];
    keys(g, k);
    int64_t d[1] = {n};
    for (int i = 0; i < n_keys; i++)
        outs[i] = kind == 0   ? kiln_random_uniform(g, k[i], KILN_DTYPE_F32, 1, d, a, b)
                  : kind == 1 ? kiln_random_normal(g, k[i], KILN_DTYPE_F32, 1, d)
                  : kind == 2 ? kiln_random_normal(g, k[i], KILN_DTYPE_F64, 1, d)
                              : kiln_random_bernoulli(g, k[i], a, 1, d);
    CHECK_STATUS(kiln_graph_finish(g, n_keys, outs), KILN_STATUS_OK);
    void *got[4] = {0};
    CHECK(run_graph(g, 0, NULL, NULL, got, NULL));
    kiln_graph_destroy(g);
    /* one buffer holding the n_keys draws back to back */
    size_t item = kind == 2 ? 8 : kind == 3 ? 1 : 4;
    char *all = calloc((size_t)n_keys, (size_t)n * item);
    for (int i = 0; i < n_keys; i++)
        if (got[i]) memcpy(all + (size_t)i * (size_t)n * item, got[i], (size_t)n * item);
    free_all(got, n_keys);
    return all;
}

static void split_two(kiln_graph *g, kiln_value *k) {
    kiln_random_split(g, kiln_random_key(g, 7), 2, k);
}
static void one_key(kiln_graph *g, kiln_value *k) {
    k[0] = kiln_random_key(g, 1234);
}

#define NS 100000

/* Chi-square of n samples in `bins` equal cells against its bound: mean bins - 1, sd
 * sqrt(2 (bins - 1)); six sd is a bound a working generator misses with probability
 * below 1e-8, and one that repeats, sticks or correlates exceeds by orders of magnitude. */
static double chi_square(const long *count, int bins, long n) {
    double e = (double)n / bins, chi = 0;
    for (int i = 0; i < bins; i++) chi += (count[i] - e) * (count[i] - e) / e;
    return chi;
}
static double chi_bound(int bins) {
    return (bins - 1) + 6 * sqrt(2.0 * (bins - 1));
}

static void test_split_streams_independent(void) {
    float *u = draw_host(0, split_two, 2, NS, 0, 1);
    const float *a = u, *b = u + NS;
    /* each stream uniform on 64 cells; the pairs uniform on 16 x 16 cells */
    long ca[64] = {0}, cb[64] = {0}, pair[256] = {0};
    double sab = 0;
    for (int i = 0; i < NS; i++) {
        ca[(int)(a[i] * 64)]++, cb[(int)(b[i] * 64)]++;
        pair[(int)(a[i] * 16) * 16 + (int)(b[i] * 16)]++;
        sab += (a[i] - 0.5) * (b[i] - 0.5);
    }
    double xa = chi_square(ca, 64, NS), xb = chi_square(cb, 64, NS), xp = chi_square(pair, 256, NS);
    CHECK_MSG(xa < chi_bound(64) && xb < chi_bound(64), "stream chi-square %.1f, %.1f (bound %.1f)",
              xa, xb, chi_bound(64));
    CHECK_MSG(xp < chi_bound(256), "pair chi-square %.1f (bound %.1f)", xp, chi_bound(256));
    /* correlation: sd 1/sqrt(n) */
    double r = sab / NS * 12;
    CHECK_MSG(fabs(r) < 6 / sqrt((double)NS), "split streams correlate: r = %.4f", r);
    /* and neighbours within one stream (a counter that does not advance fails here) */
    long lag[256] = {0};
    for (int i = 0; i + 1 < NS; i += 2) lag[(int)(a[i] * 16) * 16 + (int)(a[i + 1] * 16)]++;
    double xl = chi_square(lag, 256, NS / 2);
    CHECK_MSG(xl < chi_bound(256), "successive pairs chi-square %.1f (bound %.1f)", xl,
              chi_bound(256));
    free(u);
}

static void test_uniform_range(void) {
    float *u = draw_host(0, one_key, 1, NS, -2, 3);
    double sum = 0, lo = 1e9, hi = -1e9;
    for (int i = 0; i < NS; i++) sum += u[i], lo = fmin(lo, u[i]), hi = fmax(hi, u[i]);
    CHECK_MSG(lo >= -2 && hi < 3, "uniform(-2, 3) drew %g .. %g", lo, hi);
    CHECK_MSG(lo < -1.99 && hi > 2.99, "uniform(-2, 3) covers only %g .. %g", lo, hi);
    double sd = 5 / sqrt(12.0 * NS);
    CHECK_MSG(fabs(sum / NS - 0.5) < 6 * sd, "uniform(-2, 3) mean %g", sum / NS);
    free(u);
    /* a range two floats wide: scaling rounds up to hi often, and the clamp keeps it out */
    float lo2 = 1.0f, hi2 = nextafterf(nextafterf(1.0f, 2.0f), 2.0f);
    u = draw_host(0, one_key, 1, 4096, lo2, hi2);
    int at_lo = 0;
    for (int i = 0; i < 4096; i++) {
        CHECK_MSG(u[i] >= lo2 && u[i] < hi2, "narrow uniform drew %.9g", u[i]);
        at_lo += u[i] == lo2;
        if (u[i] < lo2 || u[i] >= hi2) break;
    }
    CHECK_MSG(at_lo > 0 && at_lo < 4096, "narrow uniform: %d of 4096 at lo", at_lo);
    free(u);
}

static void test_normal_moments(void) {
    for (int k = 1; k <= 2; k++) {
        void *p = draw_host(k, one_key, 1, NS, 0, 0);
        double s = 0, s2 = 0, s4 = 0;
        long tail = 0;
        for (int i = 0; i < NS; i++) {
            double x = k == 1 ? ((float *)p)[i] : ((double *)p)[i];
            s += x, s2 += x * x, s4 += x * x * x * x, tail += fabs(x) > 1.959964;
        }
        double mean = s / NS, var = s2 / NS - mean * mean;
        /* sd of the mean 1/sqrt(n), of the variance sqrt(2/n), of the 5% tail count */
        CHECK_MSG(fabs(mean) < 6 / sqrt((double)NS), "normal %s mean %g", k == 1 ? "f32" : "f64",
                  mean);
        CHECK_MSG(fabs(var - 1) < 6 * sqrt(2.0 / NS), "normal %s variance %g",
                  k == 1 ? "f32" : "f64", var);
        CHECK_MSG(fabs(s4 / NS - 3) < 6 * sqrt(96.0 / NS), "normal kurtosis %g", s4 / NS);
        double tp = (double)tail / NS;
        CHECK_MSG(fabs(tp - 0.05) < 6 * sqrt(0.05 * 0.95 / NS), "P(|x| > 1.96) = %g", tp);
        free(p);
    }
}

static void test_bernoulli_rate(void) {
    const double ps[] = {0.0, 0.3, 0.9, 1.0};
    for (int k = 0; k < 4; k++) {
        uint8_t *b = draw_host(3, one_key, 1, NS, ps[k], 0);
        long n = 0;
        for (int i = 0; i < NS; i++) n += b[i];
        double rate = (double)n / NS, sd = sqrt(ps[k] * (1 - ps[k]) / NS);
        CHECK_MSG(fabs(rate - ps[k]) <= 6 * sd, "bernoulli(%g) rate %g", ps[k], rate);
        free(b);
    }
}

/* dropout(x = ones) keeps 1 - rate, scales by 1/(1 - rate), is one kernel, and its
 * gradient is its mask over 1 - rate. */
static void test_dropout(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "dropout", &g));
    int64_t d[2] = {250, 400}, kd[1] = {2};
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    kiln_value key = kiln_parameter(g, "key", KILN_DTYPE_I32, 1, kd);
    kiln_value y = kiln_dropout(g, key, x, 0.25);
    CHECK_STATUS(kiln_graph_finish(g, 1, &y), KILN_STATUS_OK);
    kiln_array *args[2] = {0};
    float *ones = malloc(NS * sizeof *ones);
    for (int i = 0; i < NS; i++) ones[i] = 1;
    int32_t kv[2] = {3, 4};
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_F32, 2, d, ones, &args[0]));
    CHECK_OK(ctx, kiln_array_create(ctx, KILN_DTYPE_I32, 1, kd, kv, &args[1]));
    int kernels = 0;
    CHECK(cmp_graph(ctx, g, 2, args, NULL, 0, &kernels));
    CHECK_MSG(kernels == 1, "dropout took %d kernels", kernels);
    void *got[1] = {0};
    CHECK(run_graph(g, 2, args, NULL, got, NULL));
    long kept = 0;
    float scale = 1 / 0.75f;
    for (int i = 0; got[0] && i < NS; i++) {
        float v = ((float *)got[0])[i];
        CHECK_MSG(v == 0 || v == scale, "dropout gave %.9g", v);
        if (v != 0 && v != scale) break;
        kept += v != 0;
    }
    double rate = (double)kept / NS;
    CHECK_MSG(fabs(rate - 0.75) < 6 * sqrt(0.75 * 0.25 / NS), "dropout kept %g", rate);
    kiln_graph_destroy(g);

    /* the gradient of sum(dropout(x)) is the mask / 0.75: the forward output itself */
    CHECK_OK(ctx, kiln_graph_create(ctx, "dropout_grad", &g));
    x = kiln_parameter(g, "x", KILN_DTYPE_F32, 2, d);
    key = kiln_parameter(g, "key", KILN_DTYPE_I32, 1, kd);
    kiln_value loss = kiln_reduce_sum(g, kiln_dropout(g, key, x, 0.25), 0, NULL, false), dx;
    CHECK_STATUS(kiln_grad(g, loss, 1, &x, &dx), KILN_STATUS_OK);
    CHECK_STATUS(kiln_graph_finish(g, 1, &dx), KILN_STATUS_OK);
    void *gr[1] = {0};
    CHECK(run_graph(g, 2, args, NULL, gr, NULL));
    CHECK_MSG(gr[0] && got[0] && !memcmp(gr[0], got[0], NS * sizeof(float)),
              "d sum(dropout(x)) / dx is not the dropout mask / (1 - rate)");
    free_all(gr, 1), free_all(got, 1);
    kiln_graph_destroy(g);
    kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    free(ones);

    /* rate 0 is x itself; rate 1 is zeros */
    CHECK_OK(ctx, kiln_graph_create(ctx, "dropout_edges", &g));
    x = kiln_parameter(g, "x", KILN_DTYPE_F64, 2, d);
    key = kiln_random_key(g, 1);
    CHECK(kiln_dropout(g, key, x, 0).id == x.id);
    kiln_value z = kiln_dropout(g, key, x, 1);
    kiln_dtype t;
    int rank;
    int64_t zd[KILN_MAX_RANK];
    CHECK(kiln_value_type(g, z, &t, &rank, zd) && t == KILN_DTYPE_F64 && rank == 2 &&
          zd[0] == 250 && zd[1] == 400);
    kiln_graph_destroy(g);
}

/* Bad arguments: the builder's error, naming the function and what was wrong. */
static void test_errors(void) {
    struct {
        const char *want;
        int which;
    } cases[] = {
        {"kiln_random_uniform: the key must be an i32[2] value", 0},
        {"not i32[3]", 1},
        {"kiln_random_bernoulli: p = 1.5 is outside [0, 1]", 2},
        {"p = nan is outside [0, 1]", 3},
        {"kiln_dropout: rate = -0.1 is outside [0, 1]", 4},
        {"kiln_random_uniform: needs finite lo < hi", 5},
        {"kiln_random_normal: draws f32, f64, bf16 or f16, not i32", 6},
        {"kiln_random_split: needs n >= 1", 7},
        {"kiln_random_fold_in: data must be a rank-0 i32 or i64 value, not f32", 8},
        {"kiln_dropout: takes f32, f64, bf16 or f16, not i32", 9},
        {"the key is the invalid value", 10},
        {"elements in one draw; the counter numbers at most 2^32", 11},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "errors", &g));
        int64_t d2[1] = {2}, d3[1] = {3}, big[2] = {1 << 20, 1 << 13};
        kiln_value fkey = kiln_parameter(g, "fkey", KILN_DTYPE_F32, 1, d2);
        kiln_value key3 = kiln_parameter(g, "key3", KILN_DTYPE_I32, 1, d3);
        kiln_value ix = kiln_parameter(g, "ix", KILN_DTYPE_I32, 1, d3);
        kiln_value key = kiln_random_key(g, 9), ks[2];
        switch (cases[c].which) {
        case 0: kiln_random_uniform(g, fkey, KILN_DTYPE_F32, 1, d3, 0, 1); break;
        case 1: kiln_random_bits(g, key3, 1, d3); break;
        case 2: kiln_random_bernoulli(g, key, 1.5, 1, d3); break;
        case 3:
            kiln_random_bernoulli(g, key, -(double)NAN, 1, d3) /* "-nan" from 0.0 / 0.0 */;
            break;
        case 4: kiln_dropout(g, key, fkey, -0.1); break;
        case 5: kiln_random_uniform(g, key, KILN_DTYPE_F32, 1, d3, 2, 2); break;
        case 6: kiln_random_normal(g, key, KILN_DTYPE_I32, 1, d3); break;
        case 7: kiln_random_split(g, key, 0, ks); break;
        case 8: kiln_random_fold_in(g, key, kiln_scalar(g, KILN_DTYPE_F32, 1)); break;
        case 9: kiln_dropout(g, key, ix, 0.5); break;
        case 10: kiln_random_normal(g, (kiln_value){0, 0}, KILN_DTYPE_F32, 1, d3); break;
        case 11: kiln_random_bits(g, key, 2, big); break;
        }
        CHECK_MSG(kiln_graph_status(g) != KILN_STATUS_OK, "case %zu: no error", c);
        const char *e = kiln_graph_error(g);
        CHECK_MSG(e && strstr(e, cases[c].want), "case %zu: \"%s\" lacks \"%s\"", c,
                  e ? e : "(none)", cases[c].want);
        kiln_graph_destroy(g);
    }
    /* 2^32 elements exactly is allowed (traced only: not run) */
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "big", &g));
    int64_t most[2] = {1 << 16, 1 << 16};
    kiln_value key = kiln_random_key(g, 1), ks[2];
    CHECK(kiln_random_bits(g, key, 2, most).id != 0);
    /* a finished graph takes no more ops: split says so rather than returning OK */
    CHECK_STATUS(kiln_graph_finish(g, 1, &key), KILN_STATUS_OK);
    CHECK(kiln_random_split(g, key, 2, ks) != KILN_STATUS_OK && ks[0].id == 0 && ks[1].id == 0);
    kiln_graph_destroy(g);
}

/* A graph with random ops prints, parses back, and prints the same. */
static void test_text_round_trip(void) {
    kiln_graph *g = NULL, *h = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "text", &g));
    int64_t d[1] = {5};
    kiln_value key = kiln_random_key(g, 3), ks[2];
    kiln_random_split(g, key, 2, ks);
    kiln_value outs[3] = {kiln_random_normal(g, ks[0], KILN_DTYPE_F64, 1, d),
                          kiln_random_uniform(g, ks[1], KILN_DTYPE_F32, 1, d, -1, 1),
                          kiln_random_bits(g, key, 1, d)};
    CHECK_STATUS(kiln_graph_finish(g, 3, outs), KILN_STATUS_OK);
    char *a = kiln_graph_to_string(g);
    CHECK(a && strstr(a, "random") && strstr(a, " word1") && strstr(a, " normal"));
    CHECK_OK(ctx, kiln_graph_parse(ctx, a, strlen(a), "text", &h));
    char *b = h ? kiln_graph_to_string(h) : NULL;
    CHECK_MSG(a && b && !strcmp(a, b), "text differs after a round trip:\n%s\n---\n%s", a, b);
    kiln_string_free(ctx, a), kiln_string_free(ctx, b);
    kiln_graph_destroy(g), kiln_graph_destroy(h);
}

/* ------------------------------------------------------ fault injection ---- */

static kiln_status fault_body(kiln_context *c, int *bad) {
    kiln_graph *g = NULL;
    kiln_executable *e = NULL;
    kiln_array *args[2] = {0}, *out = NULL;
    int64_t d[1] = {64};
    kiln_status s = kiln_graph_create(c, "fault", &g);
    if (!s) {
        kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, d);
        kiln_value step = kiln_parameter(g, "step", KILN_DTYPE_I32, 0, NULL), ks[2];
        kiln_value key = kiln_random_fold_in(g, kiln_random_key(g, 5), step);
        s = kiln_random_split(g, key, 2, ks);
        kiln_value y = kiln_add(g, kiln_dropout(g, ks[0], x, 0.5),
                                kiln_random_normal(g, ks[1], KILN_DTYPE_F32, 1, d));
        if (!s) s = kiln_graph_finish(g, 1, &y);
    }
    if (!s) s = kiln_compile(g, NULL, &e);
    if (!s) s = kiln_array_create(c, KILN_DTYPE_F32, 1, d, NULL, &args[0]);
    int32_t step = 3;
    if (!s) s = kiln_array_create(c, KILN_DTYPE_I32, 0, NULL, &step, &args[1]);
    if (!s) s = kiln_executable_run(e, 2, args, 1, &out);
    float v[64];
    if (!s) s = kiln_array_copy_to_host(out, v, sizeof v);
    for (int i = 0; !s && i < 64; i++) *bad |= !isfinite(v[i]);
    kiln_array_destroy(out), kiln_array_destroy(args[0]), kiln_array_destroy(args[1]);
    kiln_executable_destroy(e);
    kiln_graph_destroy(g);
    return s;
}

static void test_fault_injection(const char *dir) {
    fault_ctx_case fc = {.cache_dir = dir, .body = fault_body, .bad_what = "a draw not finite"};
    test_alloc clean = {0};
    fault_run warm = {.alloc = &clean, .host = test_allocator(&clean), .user = &fc};
    CHECK_MSG(fault_in_context(&warm) == KILN_STATUS_OK, "the clean run: %s", warm.message);
    fault_sweep sw = {.name = "random build + compile + run",
                      .run = fault_in_context,
                      .user = &fc,
                      .max_runs = 20000};
    long n = fault_sweep_run(&sw);
    CHECK(n > 0);
    printf("fault injection: %ld host allocations of a dropout step failed in turn\n", n);
}

/* randint, gumbel, exponential, truncated_normal, categorical and permutation against
 * JAX's values: the integers exactly, the floats within a few ulps (kiln's log and erf_inv
 * are not XLA's), compiled and interpreted; then the permutations are permutations. */
static void test_distributions_match_jax(void) {
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "distributions", &g));
    kiln_value k42 = kiln_random_key(g, 42), kc = key_of(g, 0x12345678, 0x9abcdef0);
    int64_t d8[1] = {8}, d6[1] = {6}, d4[1] = {4}, d5[1] = {5}, d35[2] = {3, 5};
    float lg[15];
    for (int i = 0; i < 15; i++) lg[i] = (float)(i % 4) * 0.7f - 1;
    kiln_value logits = kiln_constant(g, KILN_DTYPE_F32, 2, d35, lg);
    kiln_value outs[] = {
        kiln_random_randint(g, k42, 1, d8, -5, 9),
        kiln_random_randint(g, kc, 1, d6, INT32_MIN, INT32_MAX),
        kiln_random_randint(g, k42, 1, d4, 7, 3),
        kiln_random_randint(g, kc, 1, d5, 0, 1000),
        kiln_random_gumbel(g, k42, KILN_DTYPE_F32, 1, d6),
        kiln_random_exponential(g, k42, KILN_DTYPE_F32, 1, d6),
        kiln_random_truncated_normal(g, k42, KILN_DTYPE_F32, 1, d6, -1.5, 2.0),
        kiln_random_truncated_normal(g, kc, KILN_DTYPE_F32, 1, d6, 0.5, 0.75),
        kiln_random_categorical(g, k42, logits, -1),
        kiln_random_categorical(g, kc, logits, 0),
        kiln_random_permutation(g, k42, 10),
        kiln_random_permutation(g, kc, 2000),
    };
    enum { N = sizeof outs / sizeof *outs };
    CHECK_STATUS(kiln_graph_finish(g, N, outs), KILN_STATUS_OK);
    void *got[N] = {0}, *ref[N] = {0};
    CHECK(run_graph(g, 0, NULL, NULL, got, ref));
    static const struct {
        int out, n;
        const uint32_t *want;
        int ulps; /* -1: exact */
    } floats[] = {{4, 6, jax_gumbel_k42, 4},
                  {5, 6, jax_exponential_k42, 2},
                  {6, 6, jax_truncnorm_k42, 4},
                  {7, 6, jax_truncnorm_c, 4}};
    for (int v = 0; v < 2 && got[N - 1] && ref[N - 1]; v++) {
        void **o = v ? ref : got;
        const char *how = v ? "interpreted" : "compiled";
        CHECK_MSG(!memcmp(o[0], jax_randint_k42, sizeof jax_randint_k42), "%s: randint(42)", how);
        CHECK_MSG(!memcmp(o[1], jax_randint_c_full, sizeof jax_randint_c_full),
                  "%s: randint(C) over all of i32", how);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(((int32_t *)o[2])[i] == 7, "%s: randint(42, 7, 3)[%d] = %d, JAX 7", how, i,
                      ((int32_t *)o[2])[i]);
        CHECK_MSG(!memcmp(o[3], jax_randint_c_1000, sizeof jax_randint_c_1000),
                  "%s: randint(C, 0, 1000)", how);
        for (size_t f = 0; f < sizeof floats / sizeof *floats; f++)
            for (int i = 0; i < floats[f].n; i++) {
                float want, have = ((float *)o[floats[f].out])[i];
                memcpy(&want, &floats[f].want[i], 4);
                CHECK_MSG(ulp_f32(have, want) <= floats[f].ulps,
                          "%s: output %d [%d] = %.9g, JAX %.9g", how, floats[f].out, i, have, want);
            }
        CHECK_MSG(!memcmp(o[8], jax_categorical_k42, sizeof jax_categorical_k42),
                  "%s: categorical(42, axis -1)", how);
        CHECK_MSG(!memcmp(o[9], jax_categorical_c0, sizeof jax_categorical_c0),
                  "%s: categorical(C, axis 0)", how);
        CHECK_MSG(!memcmp(o[10], jax_perm_k42, sizeof jax_perm_k42), "%s: permutation(42, 10)",
                  how);
        const int32_t *p = o[11];
        uint32_t sum = 0;
        bool seen[2000] = {0}, perm = true;
        for (int i = 0; i < 2000; i++) {
            sum += (uint32_t)(i + 1) * (uint32_t)p[i];
            perm &= p[i] >= 0 && p[i] < 2000 && !seen[p[i]];
            if (p[i] >= 0 && p[i] < 2000) seen[p[i]] = true;
        }
        CHECK_MSG(perm, "%s: permutation(C, 2000) is not a permutation", how);
        CHECK_MSG(!memcmp(p, jax_perm_c_head, sizeof jax_perm_c_head) && sum == jax_perm_c_sum,
                  "%s: permutation(C, 2000): sum %u, JAX %u", how, sum, jax_perm_c_sum);
    }
    free_all(got, N), free_all(ref, N);
    kiln_graph_destroy(g);
}

/* The samplers' own statistics on many draws, with fixed keys: randint covers its range
 * evenly and never leaves it, truncated_normal stays strictly inside its bounds (one of
 * them infinite too), exponential has mean 1, categorical follows softmax(logits) and
 * never picks a -inf category. */
static void test_distribution_statistics(void) {
    enum { M = 200000 };
    kiln_graph *g = NULL;
    CHECK_OK(ctx, kiln_graph_create(ctx, "stats", &g));
    kiln_value k = kiln_random_key(g, 7);
    kiln_value ks[4];
    CHECK_STATUS(kiln_random_split(g, k, 4, ks), KILN_STATUS_OK);
    int64_t dm[1] = {M}, dl[2] = {M, 4};
    float lg[4] = {0.0f, 1.0f, -INFINITY, 2.0f};
    int64_t d4[1] = {4};
    kiln_value logits = kiln_broadcast_in_dim(g, kiln_constant(g, KILN_DTYPE_F32, 1, d4, lg), 2, dl,
                                              (const int[]){1});
    kiln_value outs[] = {
        kiln_random_randint(g, ks[0], 1, dm, -3, 4),
        kiln_random_truncated_normal(g, ks[1], KILN_DTYPE_F32, 1, dm, -0.25, 0.5),
        kiln_random_truncated_normal(g, ks[1], KILN_DTYPE_F32, 1, dm, 1.0, INFINITY),
        kiln_random_exponential(g, ks[2], KILN_DTYPE_F64, 1, dm),
        kiln_random_categorical(g, ks[3], logits, 1),
        /* both bounds infinite: JAX clamps to the largest finite values, so a bf16 draw
         * of erf(-inf) = -1 exactly (about 1 in 128) is -max, not -inf */
        kiln_random_truncated_normal(g, ks[1], KILN_DTYPE_BF16, 1, dm, -INFINITY, INFINITY),
    };
    enum { N = sizeof outs / sizeof *outs };
    CHECK_STATUS(kiln_graph_finish(g, N, outs), KILN_STATUS_OK);
    void *got[N] = {0};
    CHECK(run_graph(g, 0, NULL, NULL, got, NULL));
    if (got[N - 1]) {
        int infinite = 0;
        for (int i = 0; i < M; i++) infinite += (((uint16_t *)got[5])[i] & 0x7f80) == 0x7f80;
        CHECK_MSG(infinite == 0, "bf16 truncated_normal on (-inf, inf): %d infinite draws",
                  infinite);
        int64_t hist[7] = {0}, cat[4] = {0}, out_of_range = 0;
        double mean = 0;
        bool inside = true;
        for (int i = 0; i < M; i++) {
            int32_t r = ((int32_t *)got[0])[i];
            if (r < -3 || r >= 4)
                out_of_range++;
            else
                hist[r + 3]++;
            float t = ((float *)got[1])[i], u = ((float *)got[2])[i];
            inside &= t > -0.25f && t < 0.5f && u > 1.0f && isfinite(u);
            mean += ((double *)got[3])[i];
            int32_t c = ((int32_t *)got[4])[i];
            if (c >= 0 && c < 4) cat[c]++;
        }
        CHECK_MSG(out_of_range == 0, "randint: %lld draws outside [-3, 4)",
                  (long long)out_of_range);
        for (int b = 0; b < 7; b++) /* 7 bins of M / 7: sd about 260 */
            CHECK_MSG(llabs(hist[b] - M / 7) < 2000, "randint bin %d: %lld of %d", b - 3,
                      (long long)hist[b], M);
        CHECK_MSG(inside, "truncated_normal left its bounds");
        CHECK_MSG(fabs(mean / M - 1) < 0.01, "exponential mean %g", mean / M);
        double z = 1 + exp(1.0) + exp(2.0);
        double p[4] = {1 / z, exp(1.0) / z, 0, exp(2.0) / z};
        for (int c = 0; c < 4; c++)
            CHECK_MSG(fabs((double)cat[c] / M - p[c]) < 0.005, "categorical %d: %g, want %g", c,
                      (double)cat[c] / M, p[c]);
    }
    free_all(got, N);
    kiln_graph_destroy(g);
}

/* Bad arguments are errors naming the sampler. */
static void test_distribution_errors(void) {
    static const struct {
        int which;
        const char *text;
    } cases[] = {
        {0, "kiln_random_truncated_normal: needs lower < upper in f32 (lower 2, upper 1)"},
        {1, "kiln_random_truncated_normal: the interval (30, 40) is too far in the tail"},
        {2, "kiln_random_categorical: takes f32, f64, bf16 or f16 logits, not i32"},
        {3, "kiln_random_categorical: axis 2 is out of range for logits of rank 2"},
        {4, "kiln_random_permutation: n = -1"},
        {5, "kiln_random_gumbel: draws f32, f64, bf16 or f16, not i64"},
        {6, "kiln_random_randint: the key must be an i32[2] value"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kiln_graph *g = NULL;
        CHECK_OK(ctx, kiln_graph_create(ctx, "errors", &g));
        kiln_value k = kiln_random_key(g, 1);
        int64_t d[2] = {2, 3};
        kiln_value v = {0};
        switch (cases[c].which) {
        case 0: v = kiln_random_truncated_normal(g, k, KILN_DTYPE_F32, 1, d, 2, 1); break;
        case 1: v = kiln_random_truncated_normal(g, k, KILN_DTYPE_F32, 1, d, 30, 40); break;
        case 2:
            v = kiln_random_categorical(g, k, kiln_parameter(g, "l", KILN_DTYPE_I32, 2, d), 0);
            break;
        case 3:
            v = kiln_random_categorical(g, k, kiln_parameter(g, "l", KILN_DTYPE_F32, 2, d), 2);
            break;
        case 4: v = kiln_random_permutation(g, k, -1); break;
        case 5: v = kiln_random_gumbel(g, k, KILN_DTYPE_I64, 1, d); break;
        case 6:
            v = kiln_random_randint(g, kiln_parameter(g, "k", KILN_DTYPE_I32, 2, d), 1, d, 0, 5);
            break;
        }
        CHECK_MSG(v.id == 0, "case %zu built a value", c);
        CHECK_CONTAINS(kiln_last_error(ctx), cases[c].text);
        kiln_graph_destroy(g);
    }
}

int main(void) {
    char dir[] = "/tmp/kiln-test-random-XXXXXX";
    if (!(ctx = test_private_context(dir))) return 2;
    RUN(test_matches_jax);
    RUN(test_half_matches_jax);
    RUN(test_compiled_equals_reference);
    RUN(test_normal_f64_near_zero);
    RUN(test_key_is_traced);
    RUN(test_split_streams_independent);
    RUN(test_uniform_range);
    RUN(test_normal_moments);
    RUN(test_bernoulli_rate);
    RUN(test_dropout);
    RUN(test_distributions_match_jax);
    RUN(test_distribution_statistics);
    RUN(test_distribution_errors);
    RUN(test_errors);
    RUN(test_text_round_trip);
    test_fault_injection(dir);
    kiln_context_destroy(ctx);
    test_remove_dir(dir);
    return test_summary("test_random");
}
