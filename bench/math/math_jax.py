"""jax.jit of the functions bench_math.c times, same inputs and sizes: ns per element,
median of R runs (f32, f64). Usage: math_jax.py [N] [R]."""
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from jax import lax

OPS = [("exp", jnp.exp, -10, 10), ("tanh", jnp.tanh, -5, 5), ("erf", lax.erf, -4, 4),
       ("expm1", jnp.expm1, -10, 10), ("tan", jnp.tan, -1.5, 1.5), ("sinh", jnp.sinh, -10, 10),
       ("cosh", jnp.cosh, -10, 10), ("asin", jnp.arcsin, -1, 1), ("acos", jnp.arccos, -1, 1),
       ("atan", jnp.arctan, -10, 10), ("asinh", jnp.arcsinh, -10, 10),
       ("acosh", jnp.arccosh, 1, 10), ("atanh", jnp.arctanh, -1, 1), ("erfc", lax.erfc, -4, 4),
       ("erf_inv", lax.erf_inv, -1, 1), ("lgamma", lax.lgamma, 0.1, 10),
       ("digamma", lax.digamma, 0.1, 10), ("cbrt", jnp.cbrt, -10, 10),
       ("round", jnp.round, -10, 10), ("ceil", jnp.ceil, -10, 10)]

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 15
print("jax %s: ns per element, %d elements, median of %d (f32, f64)" % (jax.__version__, n, reps))
for name, fn, lo, hi in OPS:
    row = "%-8s" % name
    for dt in (np.float32, np.float64):
        x = jnp.asarray(np.random.default_rng(0).uniform(lo, hi, n).astype(dt))
        f = jax.jit(fn)
        f(x).block_until_ready()
        f(x).block_until_ready()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f(x).block_until_ready()
            ts.append(time.perf_counter() - t0)
        row += " %8.2f" % (sorted(ts)[reps // 2] * 1e9 / n)
    print(row)
