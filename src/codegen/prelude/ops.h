// ops.h — the integer and comparison helpers the registry's kernel expressions name
// (src/ir/ir.h), for both dialects: integer x/0 is -1 and INT_MIN/-1 is INT_MIN, x % 0 is x
// and INT_MIN % -1 is 0; integer
// powers by squaring, wrapping; max and min propagate NaN (NaN in a wins by the first test,
// NaN in b because every compare fails) and combine equal operands bitwise, so that -0 < +0
// as in jnp.maximum / jnp.minimum; float -> int saturates with NaN -> 0. Float max and min
// pick through integer masks, not a chain of ?: : gcc 12 if-converted the chain into
// selects between compare masks that it cannot vectorise, leaving a relu and a max pool's
// compares scalar, with a branch per element on the data (bench/RESULTS.md, "The CNN
// step: max and min without branches").
KILN_FN int32_t kiln_div_i32(int32_t a, int32_t b) { return b == 0 ? -1 : (a == INT32_MIN && b == -1) ? a : a / b; }
KILN_FN int64_t kiln_div_i64(int64_t a, int64_t b) { return b == 0 ? -1 : (a == INT64_MIN && b == -1) ? a : a / b; }
KILN_FN int32_t kiln_rem_i32(int32_t a, int32_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
KILN_FN int64_t kiln_rem_i64(int64_t a, int64_t b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
#define KILN_IPOW(T, U) \
KILN_FN T kiln_pow_##T(T a, T b) { \
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0; \
    U r = 1, x = (U)a; \
    for (; b; b >>= 1, x *= x) if (b & 1) r *= x; \
    return (T)r; }
typedef int32_t i32; typedef int64_t i64;
KILN_IPOW(i32, uint32_t)
KILN_IPOW(i64, uint64_t)
#define KILN_MAXMIN(T, S, U, NAME, CMP, EQ) \
KILN_FN T kiln_##NAME##_##S(T a, T b) { \
    const U ua = kiln_##S##_bits(a), ub = kiln_##S##_bits(b); \
    const U pa = -(U)((a CMP b) | (a != a)), pe = -(U)(a == b); \
    const U r = (ua & pa) | (ub & ~pa); \
    return kiln_bits_##S((r & ~pe) | ((ua EQ ub) & pe)); }
KILN_MAXMIN(float, f32, uint32_t, max, >, &)
KILN_MAXMIN(float, f32, uint32_t, min, <, |)
KILN_MAXMIN(double, f64, uint64_t, max, >, &)
KILN_MAXMIN(double, f64, uint64_t, min, <, |)
KILN_FN int32_t kiln_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
KILN_FN int32_t kiln_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
KILN_FN int64_t kiln_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }
KILN_FN int64_t kiln_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
KILN_FN int32_t kiln_f2i32(double x) { return x != x ? 0 : x >= 2147483647.0 ? INT32_MAX : x <= -2147483648.0 ? INT32_MIN : (int32_t)x; }
KILN_FN int64_t kiln_f2i64(double x) { return x != x ? 0 : x >= 9223372036854775808.0 ? INT64_MAX : x <= -9223372036854775808.0 ? INT64_MIN : (int64_t)x; }
// Shifts as XLA's: an amount outside [0, width) (a negative one too) gives 0, or the
// sign for the arithmetic right shift; the logical right shift moves the unsigned pattern.
// popcnt and clz count the pattern's bits (kiln_popc / kiln_clz: the dialect's, clz of 0 is
// the width).
KILN_FN int32_t kiln_shl_i32(int32_t a, int32_t b) { return (uint32_t)b < 32u ? (int32_t)((uint32_t)a << b) : 0; }
KILN_FN int64_t kiln_shl_i64(int64_t a, int64_t b) { return (uint64_t)b < 64u ? (int64_t)((uint64_t)a << b) : 0; }
KILN_FN int32_t kiln_shrl_i32(int32_t a, int32_t b) { return (uint32_t)b < 32u ? (int32_t)((uint32_t)a >> b) : 0; }
KILN_FN int64_t kiln_shrl_i64(int64_t a, int64_t b) { return (uint64_t)b < 64u ? (int64_t)((uint64_t)a >> b) : 0; }
KILN_FN int32_t kiln_shra_i32(int32_t a, int32_t b) { return a >> ((uint32_t)b < 32u ? b : 31); }
KILN_FN int64_t kiln_shra_i64(int64_t a, int64_t b) { return a >> ((uint64_t)b < 64u ? b : 63); }
KILN_FN int32_t kiln_popcnt_i32(int32_t a) { return kiln_popc32((uint32_t)a); }
KILN_FN int64_t kiln_popcnt_i64(int64_t a) { return kiln_popc64((uint64_t)a); }
KILN_FN int32_t kiln_clz_i32(int32_t a) { return kiln_clz32((uint32_t)a); }
KILN_FN int64_t kiln_clz_i64(int64_t a) { return kiln_clz64((uint64_t)a); }
// bitcast_convert: f32 <-> i32, f64 <-> i64, and each dtype to itself
KILN_FN int32_t kiln_bitcast_f32_i32(float a) { return (int32_t)kiln_f32_bits(a); }
KILN_FN float kiln_bitcast_i32_f32(int32_t a) { return kiln_bits_f32((uint32_t)a); }
KILN_FN int64_t kiln_bitcast_f64_i64(double a) { return (int64_t)kiln_f64_bits(a); }
KILN_FN double kiln_bitcast_i64_f64(int64_t a) { return kiln_bits_f64((uint64_t)a); }
KILN_FN float kiln_bitcast_f32_f32(float a) { return a; }
KILN_FN double kiln_bitcast_f64_f64(double a) { return a; }
KILN_FN int32_t kiln_bitcast_i32_i32(int32_t a) { return a; }
KILN_FN int64_t kiln_bitcast_i64_i64(int64_t a) { return a; }
KILN_FN uint8_t kiln_bitcast_bool_bool(uint8_t a) { return a; }
