/* test_half.c — the 16-bit conversions: src/base/half.h (the runtime's, the reference's)
 * against src/codegen/prelude/half.h (the generated kernels' copy, branch-free so that it
 * vectorises) bit for bit, over every 16-bit pattern and millions of f32 values (every
 * exponent with the mantissas around each rounding point, ties, subnormals, NaN payloads,
 * the overflow boundaries, then random bits); and both against a table of conversions
 * ml_dtypes and NumPy computed (tests/data/half_table.txt, made by make_half_table.py there),
 * so neither copy is only checked against the other (f64 to bf16: see test_table). NaN results are
 * compared by class (a quiet NaN with the operand's sign), as the formats leave the payload to the
 * implementation; everything else bit for bit. */
#include "test.h"

#include "base/half.h"

#include <stdio.h>

/* The kernels' prelude, compiled here as the C printer compiles it (c_head.h). */
#define KILN_FN static inline
static inline uint32_t kiln_f32_bits(float f) {
    return kn_f32_bits(f);
}
static inline float kiln_bits_f32(uint32_t u) {
    return kn_bits_f32(u);
}
#include "codegen/prelude/half.h"

static bool nan16(uint16_t h, bool bf) {
    return bf ? (h & 0x7fffu) > 0x7f80u : (h & 0x7fffu) > 0x7c00u;
}
static bool quiet16(uint16_t h, bool bf) {
    return nan16(h, bf) && (h & (bf ? 0x0040u : 0x0200u));
}

/* Widening: exact, so every pattern bit for bit (NaN payloads included). */
static void test_widen_all(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536 && bad < 5; h++) {
        uint32_t a = kn_f32_bits(kn_bf16_to_f32((uint16_t)h)),
                 b = kn_f32_bits(kiln_ld_bf16((uint16_t)h));
        uint32_t c = kn_f32_bits(kn_f16_to_f32((uint16_t)h)),
                 d = kn_f32_bits(kiln_ld_f16((uint16_t)h));
        bad += a != b || c != d;
        CHECK_MSG(a == b, "bf16 %04x widens to %08x (base) and %08x (prelude)", h, a, b);
        CHECK_MSG(c == d, "f16 %04x widens to %08x (base) and %08x (prelude)", h, c, d);
        /* a non-NaN round trip is the identity */
        if (!nan16((uint16_t)h, true)) CHECK(kn_f32_to_bf16(kn_bf16_to_f32((uint16_t)h)) == h);
        if (!nan16((uint16_t)h, false)) CHECK(kn_f32_to_f16(kn_f16_to_f32((uint16_t)h)) == h);
    }
}

/* One f32 narrowed by both copies: equal bits; a NaN stays a quiet NaN with its sign. */
static int narrow_one(uint32_t u) {
    float f = kn_bits_f32(u);
    uint16_t a = kn_f32_to_bf16(f), b = kiln_st_bf16(f), c = kn_f32_to_f16(f), d = kiln_st_f16(f);
    int bad = (a != b) + (c != d);
    if (a != b) fprintf(stderr, "f32 %08x: bf16 %04x (base) vs %04x (prelude)\n", u, a, b);
    if (c != d) fprintf(stderr, "f32 %08x: f16 %04x (base) vs %04x (prelude)\n", u, c, d);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        bool ok = quiet16(a, true) && quiet16(c, false) && (a >> 15) == (u >> 31) &&
                  (c >> 15) == (u >> 31);
        if (!ok) fprintf(stderr, "f32 NaN %08x: bf16 %04x, f16 %04x\n", u, a, c);
        bad += !ok;
    }
    float r1 = kiln_rnd_bf16(f), r2 = kiln_rnd_f16(f);
    bad += kn_f32_bits(r1) != kn_f32_bits(kn_bf16_to_f32(a)) ||
           kn_f32_bits(r2) != kn_f32_bits(kn_f16_to_f32(c));
    return bad;
}

/* Every exponent and sign with mantissas around the bf16 and f16 rounding points (the
 * tie, one either side, the carries into the exponent), every NaN payload of a stride,
 * then a few million pseudo-random bit patterns. */
static void test_narrow_f32(void) {
    static const uint32_t mant[] = {0,        1,        0x7fff,   0x8000,   0x8001,   0x17fff,
                                    0x18000,  0x18001,  0xfff,    0x1000,   0x1001,   0x2fff,
                                    0x3000,   0x3001,   0x7fffff, 0x7f8000, 0x7fc000, 0x7fe000,
                                    0x7ff000, 0x7ff001, 0x400000, 0x400001, 0x200000, 0x1fffff};
    int bad = 0;
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t e = 0; e < 256; e++)
            for (size_t m = 0; m < sizeof mant / sizeof mant[0]; m++)
                bad += narrow_one(s << 31 | e << 23 | mant[m]);
    for (uint32_t m = 1; m < 0x800000u; m += 0x101) /* NaN payloads, quiet and signalling */
        bad += narrow_one(0x7f800000u | m) + narrow_one(0xff800000u | m);
    /* every f32 in the f16 subnormal and lowest normal range, 2^-26 .. 2^-13 */
    for (uint32_t u = 0x32800000u; u < 0x39000000u; u += 7) bad += narrow_one(u);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 4000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bad += narrow_one((uint32_t)(x >> 16));
    }
    CHECK_MSG(bad == 0, "%d f32 values narrow differently", bad);
}

/* Both copies against ml_dtypes' and NumPy's conversions. */
static void test_table(void) {
    FILE *f = fopen(KILN_SOURCE_DIR "/tests/data/half_table.txt", "r");
    CHECK_MSG(f != NULL, "cannot open tests/data/half_table.txt");
    if (!f) return;
    char line[128], kind;
    unsigned long long x;
    unsigned b, c, b2;
    int n = 0, bad = 0, once = 0;
    while (fgets(line, sizeof line, f)) {
        int got = line[0] == '#' ? 0 : sscanf(line, "%c %llx %x %x %x", &kind, &x, &b, &c, &b2);
        if (got < 4) continue;
        n++;
        if (kind == 'w') {
            uint16_t h = (uint16_t)x;
            bad += kn_f32_bits(kn_bf16_to_f32(h)) != b || kn_f32_bits(kiln_ld_bf16(h)) != b;
            bad += kn_f32_bits(kn_f16_to_f32(h)) != c || kn_f32_bits(kiln_ld_f16(h)) != c;
            continue;
        }
        uint16_t gb, gf, pb = 0, pf = 0;
        if (kind == 's') {
            float v = kn_bits_f32((uint32_t)x);
            gb = kn_f32_to_bf16(v), gf = kn_f32_to_f16(v);
            pb = kiln_st_bf16(v), pf = kiln_st_f16(v);
        } else {
            double d;
            memcpy(&d, &x, 8);
            /* a constant's narrowing rounds once, as ml_dtypes 0.7 (the table's b, c); the
             * convert op's goes through f32 (base/half.h): the two differ just above a tie
             * that f32 rounds onto. The table has bf16's two-step value too (b2); the count
             * of the cases where they part is printed */
            gb = kn_f64_to_bf16_once(d), gf = kn_f64_to_f16_once(d);
            pb = gb, pf = gf; /* the prelude has no f64 narrowing */
            uint16_t two = kn_f64_to_bf16(d);
            if (nan16((uint16_t)b2, true) ? !nan16(two, true) : two != b2) {
                fprintf(stderr, "d %llx: bf16 through f32 %04x want %04x\n", x, two, b2);
                bad++;
            }
            bad += kn_f64_to_f16(d) != kn_f32_to_f16((float)d);
            once += b != b2;
        }
        bool wb =
            nan16((uint16_t)b, true) ? nan16(gb, true) && nan16(pb, true) : gb == b && pb == b;
        bool wf =
            nan16((uint16_t)c, false) ? nan16(gf, false) && nan16(pf, false) : gf == c && pf == c;
        if (!wb || !wf)
            fprintf(stderr, "%c %llx: bf16 %04x/%04x want %04x, f16 %04x/%04x want %04x\n", kind, x,
                    gb, pb, b, gf, pf, c);
        bad += !wb + !wf;
    }
    fclose(f);
    if (once)
        fprintf(stderr,
                "test_half: %d f64 values round to bf16 differently in one step (ml_dtypes) "
                "and through f32 (kiln)\n",
                once);
    CHECK_MSG(n > 10000, "half_table.txt: only %d lines", n);
    CHECK_MSG(bad == 0, "%d of %d conversions differ from ml_dtypes/NumPy", bad, n);
}

/* kiln_rnd_<t>_arith (kd_stmt.round_arith) against kiln_rnd_<t>, bit for bit, on the
 * results of +, -, * and / with every 16-bit pattern as one operand and, as the other, the
 * type's NaNs (both signs; every bf16 payload, f16's at each bit and a spread), both
 * infinities, both zeros, the largest finite values, the smallest subnormals and a spread
 * of others: the cases where a NaN meets the rounding, where a result overflows, lands in
 * the subnormals or on a tie. The operations run on the machine (volatile operands: no
 * folding), as in a kernel. (Every pair of f16 operands was checked so once, outside the
 * suite: bench/RESULTS.md, "The f16 chain: the rounding in f32 arithmetic".) */
static float rnd_arith(bool bf, float f) {
    return bf ? kiln_rnd_bf16_arith(f) : kiln_rnd_f16_arith(f);
}
static float rnd_full(bool bf, float f) {
    return bf ? kiln_rnd_bf16(f) : kiln_rnd_f16(f);
}
static float ld16(bool bf, uint16_t h) {
    return bf ? kiln_ld_bf16(h) : kiln_ld_f16(h);
}

static int round_arith_case(bool bf, uint16_t h, uint16_t o) {
    volatile float x = ld16(bf, h), y = ld16(bf, o);
    float r[8] = {x + y, y + x, x - y, y - x, x * y, y * x, x / y, y / x};
    int bad = 0;
    for (int k = 0; k < 8; k++) {
        uint32_t a = kn_f32_bits(rnd_full(bf, r[k])), b = kn_f32_bits(rnd_arith(bf, r[k]));
        if (a != b && bad++ < 1)
            fprintf(stderr, "%s %04x, %04x, op %d: %08x rounds to %08x, arith %08x\n",
                    bf ? "bf16" : "f16", h, o, k, kn_f32_bits(r[k]), a, b);
    }
    return bad;
}

static void test_round_arith(void) {
    for (int t = 0; t < 2; t++) {
        bool bf = t == 0;
        uint16_t others[512];
        int n = 0;
        uint16_t inf = bf ? 0x7f80 : 0x7c00;
        if (bf)
            for (uint32_t m = 1; m < 0x80; m++)
                others[n++] = (uint16_t)(inf | m), others[n++] = (uint16_t)(0x8000 | inf | m);
        else
            for (uint32_t m = 1; m < 0x400; m = m * 2 + (m & 1) + 1)
                for (uint32_t q = 0; q < 2; q++)
                    others[n++] = (uint16_t)(inf | m | q << 9),
                    others[n++] = (uint16_t)(0x8000 | inf | m | q << 9);
        uint16_t top = bf ? 0x7f7f : 0x7bff;
        uint16_t edge[] = {inf,
                           (uint16_t)(inf | 0x8000),
                           0x0000,
                           0x8000,
                           top,
                           (uint16_t)(top | 0x8000),
                           0x0001,
                           0x8001,
                           0x0002,
                           bf ? 0x3f80 : 0x3c00,
                           bf ? 0xbf80 : 0xbc00,
                           bf ? 0x4040 : 0x4200,
                           bf ? 0x3eab : 0x3555,
                           bf ? 0x0080 : 0x0400,
                           bf ? 0x4b00 : 0x7800,
                           bf ? 0xc2f7 : 0xd3ff,
                           bf ? 0x0100 : 0x0200,
                           bf ? 0x0f80 : 0x03ff};
        for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) others[n++] = edge[i];
        for (uint32_t k = 0; k < 64; k++) others[n++] = (uint16_t)(k * 1031u + 17u);
        int bad = 0;
        for (uint32_t h = 0; h < 65536; h++)
            for (int j = 0; j < n; j++) bad += round_arith_case(bf, (uint16_t)h, others[j]);
        CHECK_MSG(bad == 0, "kiln_rnd_%s_arith differs from kiln_rnd_%s %d times",
                  bf ? "bf16" : "f16", bf ? "bf16" : "f16", bad);
    }
}

int main(void) {
    RUN(test_widen_all);
    RUN(test_round_arith);
    RUN(test_narrow_f32);
    RUN(test_table);
    return test_summary("test_half");
}
