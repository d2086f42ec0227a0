"""JAX (jit) and NumPy doing bench_matmul.c's products: square f32 and f64 products of 1024
and 2048, GFLOP/s, the median of reps calls after a warm-up. Usage: python matmul_jax.py [reps]"""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_enable_x64", True)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7


def med(f, *a):
    f(*a)
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f(*a)
        if hasattr(r, "block_until_ready"):
            r.block_until_ready()
        t.append(time.perf_counter() - t0)
    return float(np.median(t))


mm = jax.jit(jnp.matmul)
rng = np.random.default_rng(3)
print("| product | JAX f32 | JAX f64 | NumPy f32 | NumPy f64 |\n|---|---|---|---|---|")
for n in (1024, 2048):
    row = []
    for lib in ("jax", "numpy"):
        for t in (np.float32, np.float64):
            a = rng.uniform(-1, 1, (n, n)).astype(t)
            b = rng.uniform(-1, 1, (n, n)).astype(t)
            if lib == "jax":
                a, b = jnp.asarray(a), jnp.asarray(b)
                s = med(mm, a, b)
            else:
                s = med(np.matmul, a, b)
            row.append(2 * n**3 / s / 1e9)
    print("| %d^3 | %.1f | %.1f | %.1f | %.1f |" % (n, *row))
    sys.stdout.flush()
