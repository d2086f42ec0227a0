"""jax_random.py — JAX's figures for bench_random's calls: uniform f32, normal f32 and
flax-style dropout(x, 0.1) of a 4096 x 4096 f32 array, each jitted with the key as an
argument, on the CPU. Medians of `reps` calls after one warm-up. Usage: jax_random.py [reps]"""
import sys
import time

import jax
import jax.numpy as jnp

N = 4096
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7


def dropout(key, x):
    keep = jax.random.bernoulli(key, 0.9, x.shape)
    return jnp.where(keep, x / 0.9, 0)


calls = [
    ("uniform f32", jax.jit(lambda k: jax.random.uniform(k, (N, N), jnp.float32)), False),
    ("normal f32", jax.jit(lambda k: jax.random.normal(k, (N, N), jnp.float32)), False),
    ("dropout(x, 0.1)", jax.jit(dropout), True),
]
key = jax.random.PRNGKey(42)
x = jnp.ones((N, N), jnp.float32)
for name, f, takes_x in calls:
    args = (key, x) if takes_x else (key,)
    f(*args).block_until_ready()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(*args).block_until_ready()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    ms = t[len(t) // 2]
    print(f"{name:<16} {N:4d}x{N}  {ms:8.2f} ms  {N * N / ms * 1e-3:6.1f} M elements/s")
