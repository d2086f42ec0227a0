// cuda_math.cuh — CUDA only: the f64 helpers are CUDA's own functions.
KILN_FN double kiln_exp_f64(double x) { return exp(x); }
KILN_FN double kiln_tanh_f64(double x) { return tanh(x); }
KILN_FN double kiln_log_f64(double x) { return log(x); }
KILN_FN double kiln_log1p_f64(double x) { return log1p(x); }
KILN_FN float kiln_lgamma_f32(float x) { return lgammaf(x); }
KILN_FN double kiln_lgamma_f64(double x) { return lgamma(x); }
