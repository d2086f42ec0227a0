"""JAX's side of bench/linalg/run.sh: the same workloads as bench_linalg.c, on the CPU.

Usage: linalg_jax.py DIR REPS. Reads the inputs bench_linalg wrote to DIR (raw
little-endian arrays) and its results (DIR/kiln_*.bin), prints "jax NAME ms" lines, the
median of REPS calls after two of warm-up, and the largest difference from kiln's result
relative to the result's largest element.
"""
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

d, reps = sys.argv[1], int(sys.argv[2])


def load(name, dtype, shape):
    return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(shape)


def timed(f, *args):
    for _ in range(2):
        jax.block_until_ready(f(*args))
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        t.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(t)), f(*args)


def gp_nll(k, y):
    # a Gaussian process's negative log marginal likelihood (up to a constant), and its
    # gradient with respect to the kernel matrix
    lo = jnp.linalg.cholesky(k)
    alpha = jsl.cho_solve((lo, True), y)
    return 0.5 * jnp.dot(y, alpha) + jnp.sum(jnp.log(jnp.diagonal(lo)))


for line in open(os.path.join(d, "cases.txt")):
    name, dt, n, batch, nrhs = line.split()
    n, batch, nrhs = int(n), int(batch), int(nrhs)
    t = np.float32 if dt == "f32" else np.float64
    shape = (batch, n, n) if batch > 1 else (n, n)
    a = jnp.asarray(load(f"{name}_a.bin", t, shape))
    if name.startswith("cholesky"):
        f = jax.jit(jnp.linalg.cholesky)
        ms, out = timed(f, a)
    elif name.startswith("solve"):
        b = jnp.asarray(load(f"{name}_b.bin", t, (n, nrhs)))
        f = jax.jit(lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True))
        ms, out = timed(f, a, b)
    else:
        y = jnp.asarray(load(f"{name}_b.bin", t, (n,)))
        f = jax.jit(jax.value_and_grad(gp_nll))
        ms, (v, out) = timed(f, a, y)
    want = np.fromfile(os.path.join(d, f"kiln_{name}.bin"), dtype=t).reshape(out.shape)
    out = np.asarray(out)
    diff = float(np.nanmax(np.abs(out - want)) / max(np.nanmax(np.abs(out)), 1e-300))
    print(f"jax  {name:<16} {dt} {ms:9.3f} ms   max |jax - kiln| / max |jax| = {diff:.1e}")
