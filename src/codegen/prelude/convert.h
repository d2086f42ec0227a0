// convert.h — CONVERT's kernel expression is kiln_cvt_<from>_<to>: float -> int saturates
// (NaN -> 0), to bool tests != 0, i64 -> i32 wraps; the rest are C conversions. bool ->
// float goes through int32: gcc 12 has no vector form of a byte -> float conversion and
// leaves the whole loop scalar (bench/RESULTS.md, "Quiet machine, all branches merged: the
// figures that close issues 9, 10 and 14").
KILN_FN float kiln_cvt_f32_f32(float a) { return (float)a; }
KILN_FN double kiln_cvt_f32_f64(float a) { return (double)a; }
KILN_FN int32_t kiln_cvt_f32_i32(float a) { return kiln_f2i32((double)a); }
KILN_FN int64_t kiln_cvt_f32_i64(float a) { return kiln_f2i64((double)a); }
KILN_FN uint8_t kiln_cvt_f32_bool(float a) { return (uint8_t)(a != 0); }
KILN_FN float kiln_cvt_f64_f32(double a) { return (float)a; }
KILN_FN double kiln_cvt_f64_f64(double a) { return (double)a; }
KILN_FN int32_t kiln_cvt_f64_i32(double a) { return kiln_f2i32((double)a); }
KILN_FN int64_t kiln_cvt_f64_i64(double a) { return kiln_f2i64((double)a); }
KILN_FN uint8_t kiln_cvt_f64_bool(double a) { return (uint8_t)(a != 0); }
KILN_FN float kiln_cvt_i32_f32(int32_t a) { return (float)a; }
KILN_FN double kiln_cvt_i32_f64(int32_t a) { return (double)a; }
KILN_FN int32_t kiln_cvt_i32_i32(int32_t a) { return (int32_t)a; }
KILN_FN int64_t kiln_cvt_i32_i64(int32_t a) { return (int64_t)a; }
KILN_FN uint8_t kiln_cvt_i32_bool(int32_t a) { return (uint8_t)(a != 0); }
KILN_FN float kiln_cvt_i64_f32(int64_t a) { return (float)a; }
KILN_FN double kiln_cvt_i64_f64(int64_t a) { return (double)a; }
KILN_FN int32_t kiln_cvt_i64_i32(int64_t a) { return (int32_t)(uint32_t)(uint64_t)a; }
KILN_FN int64_t kiln_cvt_i64_i64(int64_t a) { return (int64_t)a; }
KILN_FN uint8_t kiln_cvt_i64_bool(int64_t a) { return (uint8_t)(a != 0); }
KILN_FN float kiln_cvt_bool_f32(uint8_t a) { return (float)(int32_t)a; }
KILN_FN double kiln_cvt_bool_f64(uint8_t a) { return (double)(int32_t)a; }
KILN_FN int32_t kiln_cvt_bool_i32(uint8_t a) { return (int32_t)a; }
KILN_FN int64_t kiln_cvt_bool_i64(uint8_t a) { return (int64_t)a; }
KILN_FN uint8_t kiln_cvt_bool_bool(uint8_t a) { return (uint8_t)(a != 0); }
