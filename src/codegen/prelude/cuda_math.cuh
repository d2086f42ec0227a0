// cuda_math.cuh — CUDA only: the f64 helpers are CUDA's own functions.
KILN_FN double kiln_exp_f64(double x) { return exp(x); }
KILN_FN double kiln_tanh_f64(double x) { return tanh(x); }
KILN_FN double kiln_log_f64(double x) { return log(x); }
KILN_FN double kiln_log1p_f64(double x) { return log1p(x); }
KILN_FN float kiln_lgamma_f32(float x) { return lgammaf(x); }
KILN_FN float kiln_erfc_f32(float x) { return erfcf(x); }
KILN_FN double kiln_lgamma_f64(double x) { return lgamma(x); }
KILN_FN double kiln_expm1_f64(double x) { return expm1(x); }
KILN_FN double kiln_sinh_f64(double x) { return sinh(x); }
KILN_FN double kiln_cosh_f64(double x) { return cosh(x); }
KILN_FN double kiln_asinh_f64(double x) { return asinh(x); }
KILN_FN double kiln_acosh_f64(double x) { return acosh(x); }
KILN_FN double kiln_atanh_f64(double x) { return atanh(x); }
