"""rnn_jax.py — JAX's side of the scanned-program twin (bench/control, issue 33).

The tanh RNN of bench_rnn_scan.c written with jax.lax.scan: h' = tanh(h W + x U + b) over
T steps from h = 0, loss = mean of every h' squared, jax.jit(jax.value_and_grad) for W, U
and b. The same values (sin and cos of the flat index, as the C side makes them). Checks
kiln's loss and gradients (written to DIR by bench_rnn_scan) against JAX's, and prints the
side-by-side table: compile (first call) time, step time (median), and memory: kiln's
planned peak against XLA's compiled memory_analysis (arguments + outputs + temporaries).
Usage: rnn_jax.py DIR KILN_FIGURES [runs] [threads] [T B D H]. Run by bench/control/run.sh
inside bench/.venv; the library never needs Python.
"""
import os
import statistics
import sys
import time

import numpy as np

d, figures_path = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
threads = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
T, B, D, H = (int(a) for a in sys.argv[5:9]) if len(sys.argv) > 8 else (64, 32, 128, 256)
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))

import jax  # noqa: E402  (after the affinity is set)
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_platforms", "cpu")


def filled(shape, scale, freq, kind):
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    v = scale * (np.cos(freq * i) if kind else np.sin(freq * i))
    return jnp.asarray(v.astype(np.float32).reshape(shape))


W = filled((H, H), 0.05, 0.37, 0)
U = filled((D, H), 0.05, 0.11, 1)
b = filled((H,), 0.01, 1.0, 0)
xs = filled((T, B, D), 1.0, 0.013, 0)


def loss(W, U, b, xs):
    def cell(h, x):
        h = jnp.tanh(h @ W + x @ U + b)
        return h, h

    _, ys = jax.lax.scan(cell, jnp.zeros((B, H), jnp.float32), xs)
    return jnp.mean(ys * ys)


step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
t0 = time.perf_counter()
out = jax.block_until_ready(step(W, U, b, xs))
compile_ms = (time.perf_counter() - t0) * 1e3
times = []
for _ in range(runs):
    t1 = time.perf_counter()
    jax.block_until_ready(step(W, U, b, xs))
    times.append((time.perf_counter() - t1) * 1e3)
ma = step.lower(W, U, b, xs).compile().memory_analysis()
xla_peak = ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes

val, grads = out
want = [np.asarray(val).reshape(1)] + [np.asarray(g) for g in grads]
names = ["loss", "dW", "dU", "db"]
worst = 0.0
for n, w in zip(names, want):
    got = np.fromfile(os.path.join(d, n + ".f32"), dtype=np.float32).reshape(w.shape)
    rel = float(np.max(np.abs(got - w)) / max(np.max(np.abs(w)), 1e-30))
    worst = max(worst, rel)
    print(f"# {n}: largest difference {rel:.2e} of the largest magnitude")
kiln = {}
for line in open(figures_path):
    parts = line.split()
    if parts and parts[0] == "kiln":
        kiln[parts[1]] = parts[2:]
k_step, k_compile = float(kiln["step_ms"][0]), float(kiln["compile_s"][0]) * 1e3
k_peak = int(kiln["peak_bytes"][0])
j_step = statistics.median(times)
print(f"# T={T} B={B} D={D} H={H}; gradients agree to {worst:.1e}; {runs} runs, {threads} threads")
print("| | kiln (kiln_scan, kiln_grad) | JAX (lax.scan, value_and_grad) |")
print("| --- | ---: | ---: |")
print(f"| step ms (median) | {k_step:.2f} ({k_step / j_step:.2f}x JAX's) | {j_step:.2f} |")
print(f"| first call (compile) ms | {k_compile:.0f} | {compile_ms:.0f} |")
print(f"| peak bytes (kiln planned; XLA args + outputs + temps) | {k_peak} ({k_peak / xla_peak:.2f}x) | {xla_peak} |")
