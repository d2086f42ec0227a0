"""jax.lax.top_k, jnp.sort and jnp.argsort of a [B, V] f32 logits array on the CPU, jitted:
milliseconds per call (median of REPS after a warm-up), the figures bench_sort.c prints for
kiln. Usage: sort_jax.py [B] [V] [K] [REPS]."""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

B = int(sys.argv[1]) if len(sys.argv) > 1 else 64
V = int(sys.argv[2]) if len(sys.argv) > 2 else 50257
K = int(sys.argv[3]) if len(sys.argv) > 3 else 50
REPS = int(sys.argv[4]) if len(sys.argv) > 4 else 20

x = jnp.asarray(np.random.default_rng(42).uniform(-4, 4, (B, V)).astype(np.float32))
fns = {
    "top_k": jax.jit(lambda a: jax.lax.top_k(a, K)),
    "sort": jax.jit(lambda a: jnp.sort(a, axis=1)),
    "argsort": jax.jit(lambda a: jnp.argsort(a, axis=1)),
}
for name, f in fns.items():
    jax.block_until_ready(f(x))
    jax.block_until_ready(f(x))
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        ts.append(time.perf_counter() - t0)
    ts.sort()
    extra = f" k={K}" if name == "top_k" else ""
    print(f"jax  {name:8s} [{B}, {V}]{extra}: {1e3 * ts[len(ts) // 2]:.3f} ms")
