// math_f64.h — the f64 forms of the remaining helpers the registry's kernel expressions
// name, for both dialects, on top of the dialect's kiln_exp_f64 (c_math.h, cuda_math.cuh).
KILN_FN double kiln_sin_f64(double x) { return sin(x); }
KILN_FN double kiln_cos_f64(double x) { return cos(x); }
KILN_FN double kiln_erf_f64(double x) { return erf(x); }
KILN_FN double kiln_logistic_f64(double x) {
    double e = kiln_exp_f64(-fabs(x));
    return (x >= 0 ? 1.0 : e) / (1.0 + e);
}
