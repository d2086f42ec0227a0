"""jnp.take and x.at[idx].add/set/max of a [V, D] f32 table with N row indices on the CPU,
jitted: milliseconds per call (median of REPS after a warm-up), the figures bench_gather.c
prints for kiln (at.max at N / 64, as there). Usage: gather_jax.py [V] [D] [N] [REPS]."""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

V = int(sys.argv[1]) if len(sys.argv) > 1 else 50257
D = int(sys.argv[2]) if len(sys.argv) > 2 else 768
N = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
REPS = int(sys.argv[4]) if len(sys.argv) > 4 else 20

rng = np.random.default_rng(42)
table = jnp.asarray(rng.uniform(-1, 1, (V, D)).astype(np.float32))
cases = {
    "take": (N, jax.jit(lambda t, i, u: jnp.take(t, i, axis=0))),
    "at.add": (N, jax.jit(lambda t, i, u: t.at[i].add(u))),
    "at.set": (N, jax.jit(lambda t, i, u: t.at[i].set(u))),
    "at.max": (N // 64, jax.jit(lambda t, i, u: t.at[i].max(u))),
}
for name, (n, f) in cases.items():
    i = jnp.asarray(rng.integers(0, V, n).astype(np.int32))
    u = jnp.asarray(rng.uniform(-1, 1, (n, D)).astype(np.float32))
    jax.block_until_ready(f(table, i, u))
    jax.block_until_ready(f(table, i, u))
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        jax.block_until_ready(f(table, i, u))
        ts.append(time.perf_counter() - t0)
    ts.sort()
    print(f"jax  {name:7s} [{V}, {D}] N={n}: {1e3 * ts[len(ts) // 2]:.3f} ms")
