"""cnn_jax.py — the JAX side of bench/cnn (issue 35, item 7), and the side-by-side table.

The network of bench_cnn.c, NHWC f32, batch 64: conv 3x3 SAME (1 -> 16) + relu + max pool
2x2/2, conv 3x3 SAME (16 -> 32) + relu + max pool 2x2/2, flatten, dense 1568 -> 10, mean
softmax cross-entropy; AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 1e-2)
written in jnp as kiln's docs/optimisers.md defines it (optax is not installed); one
jax.jit of value_and_grad + the update, params and moments donated (donate_argnums).
From the initial parameters and the batches bench_cnn wrote to DIR, trains as many steps
as kiln did, cycling the batches in the same order, and compares every step's loss with
kiln's. compiled.memory_analysis() gives XLA's figure (argument + output + temp - alias)
beside kiln's planned peak.
Usage: cnn_jax.py DIR KILN_FIGURES [TORCH_FIGURES] [threads]: prints the Markdown table of
bench/RESULTS.md (the PyTorch row when cnn_torch.py's figures file is given and not
empty). Run by bench/cnn/run.sh inside bench/.venv; the library never needs Python.
"""
import os
import statistics
import sys
import time

import numpy as np

B, H, C1, C2, NCLS, NB, WARMUP = 64, 28, 16, 32, 10, 8, 5
FLAT = (H // 4) * (H // 4) * C2
NAMES = ["w1", "b1", "w2", "b2", "w3", "b3"]
SHAPES = [(3, 3, 1, C1), (C1,), (3, 3, C1, C2), (C2,), (FLAT, NCLS), (NCLS,)]
LR = 1e-3  # betas, eps and weight decay: cnn_model.py

d, kiln_path = sys.argv[1], sys.argv[2]
torch_path = sys.argv[3] if len(sys.argv) > 3 else ""
threads = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
# XLA's CPU client sizes its thread pool from the cores it may run on: pin to `threads`.
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))

import jax  # noqa: E402  (after the affinity is set)
import jax.numpy as jnp  # noqa: E402
from cnn_model import step_fn  # noqa: E402  (bench/cnn, beside this script)

jax.config.update("jax_platforms", "cpu")


def figures(path):
    if not path or not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    return dict(line.split() for line in open(path) if line.strip())


def load(name, dtype, shape):
    return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(shape)


kiln = figures(kiln_path)
steps = int(kiln["kiln_steps"])
init = [load(f"init_{n}.f32", np.float32, s) for n, s in zip(NAMES, SHAPES)]
xs = jnp.asarray(load("x.f32", np.float32, (NB, B, H, H, 1)))
ys = jnp.asarray(load("y.i32", np.int32, (NB, B)))
kiln_losses = load("kiln_losses.f32", np.float32, (steps,))


p = [jnp.asarray(w) for w in init]
m, v = [jnp.zeros_like(w) for w in p], [jnp.zeros_like(w) for w in p]
t0 = time.perf_counter()
compiled = jax.jit(step_fn, donate_argnums=(0, 1, 2)).lower(
    p, m, v, xs[0], ys[0], jnp.float32(LR), jnp.int32(1)).compile()
compile_ms = (time.perf_counter() - t0) * 1e3
ma = compiled.memory_analysis()
jax_peak = (ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
            - ma.alias_size_in_bytes)

losses, times = [], []
batches = [(xs[k], ys[k]) for k in range(NB)]
for s in range(1, steps + 1):
    x, y = batches[(s - 1) % NB]
    t0 = time.perf_counter()
    loss, p, m, v = compiled(p, m, v, x, y, jnp.float32(LR), jnp.int32(s))
    losses.append(float(loss))
    times.append(time.perf_counter() - t0)
jax_ms = statistics.median(times[WARMUP:]) * 1e3
jax_losses = np.asarray(losses, dtype=np.float32)


def mib(b):
    return f"{float(b) / 2**20:.2f} MiB"


def loss_diff(other, first):
    return float(np.max(np.abs(other[:first] - kiln_losses[:first])))


k_ms = float(kiln["kiln_step_ms"])
torch = figures(torch_path)
print(f"# jax {jax.__version__}" + (f", torch {torch['torch_version']}" if torch else "")
      + f", {threads} threads each; {steps} steps, median of the last {steps - WARMUP}")
print("| side | ms/step (median) | vs JAX | compile ms | planned / compiled peak "
      "| loss at step 1 | loss at last step |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
print(f"| kiln ({kiln['kiln_kernels']} kernels) | {k_ms:.2f} | {k_ms / jax_ms:.2f}x | "
      f"{float(kiln['kiln_compile_ms']):.0f} | {mib(kiln['kiln_peak_bytes'])} | "
      f"{kiln_losses[0]:.5f} | {kiln_losses[-1]:.5f} |")
print(f"| JAX jit, donated | {jax_ms:.2f} | 1.00x | {compile_ms:.0f} | {mib(jax_peak)} | "
      f"{jax_losses[0]:.5f} | {jax_losses[-1]:.5f} |")
torch_losses = None
if torch:
    t_ms = float(torch["torch_step_ms"])
    torch_losses = np.fromfile(os.path.join(d, "torch_losses.f32"), dtype=np.float32)
    print(f"| PyTorch eager | {t_ms:.2f} | {t_ms / jax_ms:.2f}x | | | "
          f"{torch_losses[0]:.5f} | {torch_losses[-1]:.5f} |")
print()
print(f"kiln's planned peak: arguments {mib(kiln['kiln_argument_bytes'])} + outputs "
      f"{mib(kiln['kiln_output_bytes'])} + temp {mib(kiln['kiln_temp_bytes'])}, aliased "
      f"{mib(kiln['kiln_alias_bytes'])} (donations unused {kiln['kiln_donations_unused']}); "
      f"XLA's: argument {mib(ma.argument_size_in_bytes)} + output "
      f"{mib(ma.output_size_in_bytes)} + temp {mib(ma.temp_size_in_bytes)} - alias "
      f"{mib(ma.alias_size_in_bytes)}")
print()
first = min(10, steps)
print(f"Losses against kiln's (max abs difference), first {first} steps / all {steps}: "
      f"JAX {loss_diff(jax_losses, first):.2e} / {loss_diff(jax_losses, steps):.2e}"
      + (f"; PyTorch {loss_diff(torch_losses, first):.2e} / "
         f"{loss_diff(torch_losses, steps):.2e}" if torch_losses is not None else ""))
