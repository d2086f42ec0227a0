"""fit_erfc.py — how the coefficients of kiln_erfc_f32 (src/codegen/prelude/c_math.h) were made.

The kernel computes erfc(x) in double and rounds once to f32: for a = |x| (at most 12, past
which f32's erfc is 0), erfc(a) = exp(-a^2) R(t) with t = 2 / (2 + a), where a^2 is exact in
double; erfc(x) = 2 - erfc(a) for x < 0. R (degree 12 in t, t in [1/7, 1]) is erfc(a) exp(a^2),
fitted by least squares on Chebyshev nodes for relative error against mpmath (40 digits).
Prints the fit's max relative error on a fine grid (about 1e-10, far below f32's 6e-8, so the
result is within one rounding of the exact value) and the coefficients as C hex literals.
A maintainer's tool (bench/.venv: numpy, mpmath); the library and its tests never run it.
tests/test_math_functions.c checks the result against mpmath's values.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
A, DEG = 12.0, 12
t_lo = 2 / (2 + A)


def scaled(a):  # erfc(a) exp(a^2), erfcx
    a = mp.mpf(a)
    return float(mp.erfc(a) * mp.exp(a * a))


u = (np.cos(np.linspace(0, np.pi, 3000)) + 1) / 2
t = t_lo + u * (1 - t_lo)
g = np.array([scaled(2 / v - 2) for v in t])
r, *_ = np.linalg.lstsq(np.vander(t, DEG + 1, increasing=True) / g[:, None], np.ones_like(g), rcond=None)
tt = np.linspace(t_lo, 1, 20001)
gg = np.array([scaled(2 / v - 2) for v in tt])
print("R max relative error", np.max(np.abs(np.polyval(r[::-1], tt) / gg - 1)))
print("R, highest degree first:", ", ".join(float(c).hex() for c in r[::-1]))
