"""fit_erf.py — how the coefficients of kiln_erf_f32 (src/codegen/prelude/math_f32.h) were made.

Least squares on Chebyshev nodes against mpmath (40 digits):
  P (degree 6 in z = x^2, z in [0, 1]): erf(x) / x, fitted for relative error; the
    kernel evaluates x + x (P(z) - 1);
  R (degree 8 in t = 1/x, x in [1, 4]): erfc(x) exp(x^2); the kernel evaluates
    1 - exp(-x^2) R(t) below 3.92, where erf rounds to 1 in f32.
Prints the max errors of the fits and the coefficients as f32 literals. A maintainer's
tool (bench/.venv: numpy, mpmath); the library and its tests never run it.
test_math checks the result (KILN_TEST_EXHAUSTIVE=1: all 2^32 inputs, 1 ulp).
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
n = 4000
cheb = (np.cos(np.linspace(0, np.pi, n)) + 1) / 2


def erf_over_x(x):
    return float(mp.erf(mp.mpf(x)) / x) if x > 0 else float(2 / mp.sqrt(mp.pi))


z = cheb
f = np.array([erf_over_x(np.sqrt(v)) for v in z])
V = np.vander(z, 7, increasing=True)
p, *_ = np.linalg.lstsq(V / f[:, None], np.ones_like(f), rcond=None)
zz = np.linspace(0, 1, 20001)
print("P max relative error", np.max(np.abs(np.polyval(p[::-1], zz) / [erf_over_x(np.sqrt(v)) for v in zz] - 1)))

t = cheb * (1 - 0.25) + 0.25
g = np.array([float(mp.erfc(mp.mpf(1 / v)) * mp.exp(mp.mpf(1 / v) ** 2)) for v in t])
r, *_ = np.linalg.lstsq(np.vander(t, 9, increasing=True), g, rcond=None)
tt = np.linspace(0.25, 1, 20001)
gg = np.array([float(mp.erfc(mp.mpf(1 / v)) * mp.exp(mp.mpf(1 / v) ** 2)) for v in tt])
print("R max absolute error of erfc", np.max(np.abs(np.polyval(r[::-1], tt) - gg) * np.exp(-(1 / tt) ** 2)))

print("P - 1, constant first:", "%.9g" % np.float32(p[0] - 1), ["%.9g" % np.float32(c) for c in p[1:]])
print("R, constant first:", ["%.9g" % np.float32(c) for c in r])
