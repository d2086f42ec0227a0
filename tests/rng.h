/* rng.h — the tests' one pseudo-random generator, random array contents drawn from it,
 * and where the seeds come from.
 *
 * xorshift64 (shifts 13, 7, 17) over a caller-held uint64_t: tiny, deterministic and the
 * same on every platform, which is what tests need (a run must repeat exactly); the
 * statistical quality of a simulation is not needed. A state of zero would stay zero, so
 * the generator replaces it with a fixed non-zero one.
 *
 * Every random test has a fixed default seed, so the default suite always draws the same
 * numbers. KILN_TEST_SEED replaces those defaults (a number, or "random" for one taken
 * from the clock); whenever a test fails, test_summary prints the seed in use so that the
 * run can be repeated. */
#ifndef KILN_TEST_RNG_H
#define KILN_TEST_RNG_H

#include "test.h"
#include "base/half.h"

#include <stdint.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t test_rng_next(uint64_t *state) {
    uint64_t s = *state ? *state : 0x9e3779b97f4a7c15ull;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return *state = s;
}

/* Uniform enough in [0, n), n > 0. */
static inline int test_rng_int(uint64_t *state, int n) {
    return (int)(test_rng_next(state) % (uint64_t)n);
}

/* In [0, 1), from the top 53 bits. */
static inline double test_rng_unit(uint64_t *state) {
    return (double)(test_rng_next(state) >> 11) / 9007199254740992.0;
}

/* n random elements of type t at p, every one an ordinary value: floats in [-2, 2), ints
 * in [-5, 5], bools 0/1. */
static inline void test_fill_uniform(kiln_dtype t, int64_t n, void *p, uint64_t *seed) {
    for (int64_t i = 0; i < n; i++) {
        double u = test_rng_unit(seed);
        switch (t) {
        case KILN_DTYPE_F32: ((float *)p)[i] = (float)(4 * u - 2); break;
        case KILN_DTYPE_F64: ((double *)p)[i] = 4 * u - 2; break;
        case KILN_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(u * 11) - 5; break;
        case KILN_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)(u * 11) - 5; break;
        case KILN_DTYPE_BF16: ((uint16_t *)p)[i] = kn_f64_to_bf16(4 * u - 2); break;
        case KILN_DTYPE_F16: ((uint16_t *)p)[i] = kn_f64_to_f16(4 * u - 2); break;
        default: ((unsigned char *)p)[i] = u < 0.5; break;
        }
    }
}

/* n random elements of type t at p, one in three from a list of special values: NaN
 * (with payloads), infinities, signed zeros, subnormals, the largest finite values and
 * integer extremes; the rest floats in [-2, 6) and small ints. */
static inline void test_fill_special(kiln_dtype t, int64_t n, void *p, uint64_t *seed) {
    static const uint32_t f32_special[] = {0x7fc00000u, 0xffc00000u, 0x7fc01234u, 0x7f800000u,
                                           0xff800000u, 0x80000000u, 0x00000000u, 0x3f800000u,
                                           0xbf800000u, 0x00000001u, 0x7f7fffffu, 0x80800000u};
    static const uint64_t f64_special[] = {0x7ff8000000000000ull,
                                           0xfff8000000000000ull,
                                           0x7ff8000000abcdefull,
                                           0x7ff0000000000000ull,
                                           0xfff0000000000000ull,
                                           0x8000000000000000ull,
                                           0,
                                           0x3ff0000000000000ull,
                                           0x0000000000000001ull,
                                           0x7fefffffffffffffull};
    static const int64_t int_special[] = {0, 1, -1, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX};
    /* NaN (two signs, a payload), infinities, signed zeros, +-1, the least subnormal, the
     * largest finite value */
    static const uint16_t bf16_special[] = {0x7fc0u, 0xffc0u, 0x7fc5u, 0x7f80u, 0xff80u, 0x8000u,
                                            0x0000u, 0x3f80u, 0xbf80u, 0x0001u, 0x7f7fu, 0xff7fu};
    static const uint16_t f16_special[] = {0x7e00u, 0xfe00u, 0x7e05u, 0x7c00u, 0xfc00u, 0x8000u,
                                           0x0000u, 0x3c00u, 0xbc00u, 0x0001u, 0x7bffu, 0xfbffu};
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = test_rng_next(seed);
        bool special = r % 3 == 0;
        double v = (double)(int64_t)(r >> 11) / (double)(1ull << 50) - 2.0; /* [-2, 6) */
        switch (t) {
        case KILN_DTYPE_F32: {
            float f = (float)v;
            uint32_t bits;
            if (special)
                bits = f32_special[(r >> 8) % 12];
            else
                memcpy(&bits, &f, 4);
            memcpy((char *)p + 4 * i, &bits, 4);
            break;
        }
        case KILN_DTYPE_F64: {
            uint64_t bits;
            if (special)
                bits = f64_special[(r >> 8) % 10];
            else
                memcpy(&bits, &v, 8);
            memcpy((char *)p + 8 * i, &bits, 8);
            break;
        }
        case KILN_DTYPE_I32: {
            int32_t x = special ? (int32_t)int_special[(r >> 8) % 5] : (int32_t)(r >> 40) - 8;
            memcpy((char *)p + 4 * i, &x, 4);
            break;
        }
        case KILN_DTYPE_I64: {
            int64_t x = special ? int_special[(r >> 8) % 7] : (int64_t)(r >> 40) - 8;
            memcpy((char *)p + 8 * i, &x, 8);
            break;
        }
        case KILN_DTYPE_BOOL: ((uint8_t *)p)[i] = (r >> 9) & 1; break;
        case KILN_DTYPE_BF16:
            ((uint16_t *)p)[i] = special ? bf16_special[(r >> 8) % 12] : kn_f64_to_bf16(v);
            break;
        case KILN_DTYPE_F16:
            ((uint16_t *)p)[i] = special ? f16_special[(r >> 8) % 12] : kn_f64_to_f16(v);
            break;
        default: break;
        }
    }
}

/* The seed a random test starts from: KILN_TEST_SEED when set, else the test's own
 * fixed default. The choice is remembered for test_summary's report. */
static inline uint64_t test_seed(uint64_t fallback) {
    const char *env = getenv("KILN_TEST_SEED");
    if (!test_seed_chosen) {
        if (env && !strcmp(env, "random")) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t mix =
                (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 16);
            test_rng_next(&mix);
            test_seed_env = mix;
            printf("KILN_TEST_SEED=random: using KILN_TEST_SEED=%llu\n", (unsigned long long)mix);
        } else if (env && *env) {
            char *end = NULL;
            test_seed_env = strtoull(env, &end, 0);
            if (!end || *end) {
                fprintf(stderr, "KILN_TEST_SEED=\"%s\" is not a number or \"random\"\n", env);
                exit(2);
            }
        }
        test_seed_chosen = env && *env ? 2 : 1;
    }
    return test_seed_chosen == 2 ? test_seed_env : fallback;
}

#endif
