"""hvp_jax.py — the JAX side of bench/hvp (issue 35, forward mode).

MLP 784-512-512-10 (tanh), batch 256, mean softmax cross-entropy, f32; the Hessian-vector
product over all six parameters as jax.jit(lambda p, v: jax.jvp(jax.grad(loss), (p,), (v,))[1])
(forward over reverse, JAX's recommended HVP), from the weights, direction and batch that
bench_hvp wrote to DIR. Checks kiln's H v against JAX's (the largest difference relative to
the array's largest magnitude) and prints the side-by-side Markdown table.
Usage: hvp_jax.py DIR KILN_FIGURES [reps] [threads]. Run by bench/hvp/run.sh inside
bench/.venv; the library never needs Python.
"""
import os
import statistics
import sys
import time

import numpy as np

B, DIMS = 256, [784, 512, 512, 10]
NAMES = ["w1", "b1", "w2", "b2", "w3", "b3"]
d, figures_path = sys.argv[1], sys.argv[2]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 30
threads = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))

import jax  # noqa: E402  (after the affinity is set)
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_platforms", "cpu")


def shapes():
    for i in range(3):
        yield (DIMS[i], DIMS[i + 1])
        yield (DIMS[i + 1],)


def load(name, dtype, shape):
    return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(shape)


p = [jnp.asarray(load(f"p_{n}.f32", np.float32, s)) for n, s in zip(NAMES, shapes())]
v = [jnp.asarray(load(f"v_{n}.f32", np.float32, s)) for n, s in zip(NAMES, shapes())]
kiln_hv = [load(f"hv_{n}.f32", np.float32, s) for n, s in zip(NAMES, shapes())]
x = jnp.asarray(load("x.f32", np.float32, (B, DIMS[0])))
y = jnp.asarray(load("y.i32", np.int32, (B,)))
kiln = dict(line.split() for line in open(figures_path))


def loss(p):
    h = jnp.tanh(x @ p[0] + p[1])
    h = jnp.tanh(h @ p[2] + p[3])
    z = h @ p[4] + p[5]
    lse = jax.nn.logsumexp(z, axis=-1)
    return jnp.mean(lse - jnp.take_along_axis(z, y[:, None], axis=-1)[:, 0])


hvp = jax.jit(lambda p, v: jax.jvp(jax.grad(loss), (p,), (v,))[1])
t0 = time.perf_counter()
hv = jax.block_until_ready(hvp(p, v))
compile_ms = (time.perf_counter() - t0) * 1e3
for _ in range(3):
    jax.block_until_ready(hvp(p, v))
times = []
for _ in range(reps):
    t0 = time.perf_counter()
    jax.block_until_ready(hvp(p, v))
    times.append(time.perf_counter() - t0)
jax_ms = statistics.median(times) * 1e3
rel = max(float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(np.asarray(a))))
          for a, b in zip(hv, kiln_hv))
k_ms = float(kiln["kiln_hvp_ms"])
print(f"# jax {jax.__version__}, {threads} threads, median of {reps}")
print("| | kiln (kiln_jvp of kiln_grad) | JAX (jit of jvp of grad) |")
print("| --- | ---: | ---: |")
print(f"| ms per H v | {k_ms:.2f} ({k_ms / jax_ms:.2f}x JAX's) | {jax_ms:.2f} |")
print(f"| first call (compile) ms | {float(kiln['kiln_compile_ms']):.0f} | {compile_ms:.0f} |")
print(f"kiln's H v against JAX's: largest difference {rel:.2e} of the array's largest magnitude")
