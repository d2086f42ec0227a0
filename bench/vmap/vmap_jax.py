"""vmap_jax.py — the JAX side of bench/vmap (issue 35: per-example gradients).

MLP 784-128-10 (tanh), softmax cross-entropy, f32; the gradient of each example's loss for
all four parameters as jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))), from the
weights and batch that bench_vmap wrote to DIR. Checks kiln's per-example gradients against
JAX's (the largest difference relative to each array's largest magnitude), reads XLA's
memory figure from compiled.memory_analysis() (argument + output + temp - alias) and prints
the side-by-side Markdown table.
Usage: vmap_jax.py DIR KILN_FIGURES [reps] [threads]. Run by bench/vmap/run.sh inside
bench/.venv; the library never needs Python.
"""
import os
import statistics
import sys
import time

import numpy as np

DIMS = [784, 128, 10]
NAMES = ["w1", "b1", "w2", "b2"]
d, figures_path = sys.argv[1], sys.argv[2]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 30
threads = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))

import jax  # noqa: E402  (after the affinity is set)
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_platforms", "cpu")
kiln = dict(line.split() for line in open(figures_path))
B = int(kiln["kiln_batch"])


def shapes():
    for i in range(2):
        yield (DIMS[i], DIMS[i + 1])
        yield (DIMS[i + 1],)


def load(name, dtype, shape):
    return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(shape)


p = [jnp.asarray(load(f"p_{n}.f32", np.float32, s)) for n, s in zip(NAMES, shapes())]
kiln_g = [load(f"g_{n}.f32", np.float32, (B,) + s) for n, s in zip(NAMES, shapes())]
x = jnp.asarray(load("x.f32", np.float32, (B, DIMS[0])))
y = jnp.asarray(load("y.i32", np.int32, (B,)))


def loss(p, x, y):
    h = jnp.tanh(x @ p[0] + p[1])
    z = h @ p[2] + p[3]
    return jax.nn.logsumexp(z) - z[y]


per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
t0 = time.perf_counter()
compiled = per_example.lower(p, x, y).compile()
compile_ms = (time.perf_counter() - t0) * 1e3
ma = compiled.memory_analysis()
jax_peak = (ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
            - ma.alias_size_in_bytes)
g = jax.block_until_ready(compiled(p, x, y))
for _ in range(3):
    jax.block_until_ready(compiled(p, x, y))
times = []
for _ in range(reps):
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(p, x, y))
    times.append(time.perf_counter() - t0)
jax_ms = statistics.median(times) * 1e3
rel = max(float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(np.asarray(a))))
          for a, b in zip(g, kiln_g))
k_ms = float(kiln["kiln_ms"])
mib = 1 << 20
print(f"# jax {jax.__version__}, {threads} threads, batch {B}, median of {reps}")
print("| | kiln (kiln_vmap of kiln_grad) | JAX (jit of vmap of grad) |")
print("| --- | ---: | ---: |")
print(f"| ms per call | {k_ms:.2f} ({k_ms / jax_ms:.2f}x JAX's) | {jax_ms:.2f} |")
print(f"| first call (compile) ms | {float(kiln['kiln_compile_ms']):.0f} | {compile_ms:.0f} |")
print(f"| peak MiB: planned (kiln) / memory_analysis (XLA) | "
      f"{int(kiln['kiln_peak_bytes']) / mib:.2f} | {jax_peak / mib:.2f} |")
print(f"| peak MiB measured (kiln's allocator) | "
      f"{int(kiln['kiln_measured_peak_bytes']) / mib:.2f} | - |")
print(f"| argument / output / temp MiB | {int(kiln['kiln_argument_bytes']) / mib:.2f} / "
      f"{int(kiln['kiln_output_bytes']) / mib:.2f} / {int(kiln['kiln_temp_bytes']) / mib:.2f} | "
      f"{ma.argument_size_in_bytes / mib:.2f} / {ma.output_size_in_bytes / mib:.2f} / "
      f"{ma.temp_size_in_bytes / mib:.2f} |")
print(f"kiln's per-example gradients against JAX's: largest difference {rel:.2e} of the "
      "array's largest magnitude")
if rel > 1e-4:
    sys.exit(f"kiln's per-example gradients differ from JAX's ({rel:.2e})")
