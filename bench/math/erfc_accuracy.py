"""erfc_accuracy.py — JAX's f32 erfc (jax.jit of jax.scipy.special.erfc on the CPU) against
math.erfc in double rounded once to f32, in ulps, over 2 million points in [-4, 9.19] and
the powers of two down to 2^-30 (results that are normal floats; past 9.19 they are
subnormal, where XLA flushes to 0). kiln's own is measured over all 2^32 inputs by
KILN_TEST_EXHAUSTIVE=1 build/test_math. Usage: bench/.venv/bin/python bench/math/erfc_accuracy.py"""
import math

import jax
import numpy as np
from jax.scipy.special import erfc

xs = np.concatenate([np.linspace(-4, 9.19, 2000001).astype(np.float32),
                     (np.float32(2.0) ** np.arange(-30, 3.2, 0.01)).astype(np.float32)])
got = np.asarray(jax.jit(erfc)(xs))
want = np.array([math.erfc(float(x)) for x in xs]).astype(np.float32)


def ordinal(a):
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


normal = want >= np.finfo(np.float32).tiny
for lo, hi in [(-4, 0.5), (0.5, 2), (2, 5), (5, 9.19)]:
    m = normal & (xs >= lo) & (xs < hi)
    d = np.abs(ordinal(got[m]) - ordinal(want[m]))
    print("x in [%g, %g): max %d ulps (at %.9g), median %g" % (lo, hi, d.max(), xs[m][d.argmax()],
                                                               np.median(d)))
