#!/usr/bin/env python3
"""model.py -- the alpha-beta model of docs/scaling.md: predicted step time and efficiency of
data-parallel training with ring all-reduce, 1 to 1,024 ranks, for the main-job model and one
100x larger (on this CPU core, and on an accelerator 100x faster), on 25 GB/s and 400 GB/s
links. Standard library only; prints Markdown.

Usage: model.py COMPUTE_MS PARAMS CALLS   (the measured one-rank step time, the parameter
count, the all-reduce calls per step: one per gradient plus the loss and the stop flag)

The overlapped column models what kiln's plan does (DDP's overlap): the gradients go in
BUCKETS equal buckets, each issued the moment its last gradient exists, while the rest of
the backward pass (BACKWARD of the compute, spread evenly) runs; the link carries one
all-reduce at a time, so a bucket starts when it is ready and the previous one is done,
and the step ends when both the compute and the last all-reduce have. The last bucket
(the first layers' gradients, finished last) can never hide.
"""
import sys

t_c1 = float(sys.argv[1]) / 1e3 if len(sys.argv) > 1 else 0.119
params = int(sys.argv[2]) if len(sys.argv) > 2 else 437760
calls = int(sys.argv[3]) if len(sys.argv) > 3 else 30

links = [("25 GB/s", 25e9, 5e-6), ("400 GB/s", 400e9, 2e-6)]  # (name, beta, alpha)
models = [("main job", params, t_c1), ("100x", params * 100, t_c1 * 100),
          ("100x on an accelerator 100x this core's speed", params * 100, t_c1)]
ranks = [1, 2, 4, 8, 16, 64, 256, 1024]
BUCKETS, BACKWARD = 4, 2.0 / 3.0


def ring(n, m_bytes, beta, alpha, k):
    """k ring all-reduces moving m_bytes in all: 2(n-1) latency steps each, and every rank
    sends and receives 2(n-1)/n of the bytes."""
    if n == 1:
        return 0.0
    return k * 2 * (n - 1) * alpha + 2 * (n - 1) / n * m_bytes / beta


def overlapped(n, m_bytes, beta, alpha, t_c):
    """The step with BUCKETS all-reduces issued through the backward pass (see above)."""
    t_f, t_b = t_c * (1 - BACKWARD), t_c * BACKWARD
    link = 0.0
    for i in range(BUCKETS):
        ready = t_f + (i + 1) / BUCKETS * t_b
        link = max(ready, link) + ring(n, m_bytes / BUCKETS, beta, alpha, 1)
    return max(t_c, link)


for name, p, t_c in models:
    m = 4 * p  # f32 gradients
    print(f"\n{name}: {p / 1e6:.3g} M parameters, {m / 1e6:.3g} MB of gradients, compute "
          f"{t_c * 1e3:.4g} ms per step and rank (weak scaling: the batch per rank is fixed)\n")
    print("| ranks | link | all-reduce, %d calls (ms) | one bucket (ms) | step, no overlap (ms) "
          "| efficiency | step, %d buckets overlapped (ms) | efficiency | bound: all hidden |"
          % (calls, BUCKETS))
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in ranks:
        for lname, beta, alpha in links:
            t_k = ring(n, m, beta, alpha, calls)
            t_1 = ring(n, m, beta, alpha, 1)
            step = t_c + t_k
            eff = t_c / step
            eff_o = t_c / max(t_c, t_1)
            t_ov = overlapped(n, m, beta, alpha, t_c)
            print(f"| {n} | {lname} | {t_k * 1e3:.3f} | {t_1 * 1e3:.3f} | {step * 1e3:.2f} | "
                  f"{eff * 100:.1f}% | {t_ov * 1e3:.2f} | {t_c / t_ov * 100:.1f}% | "
                  f"{eff_o * 100:.1f}% |")
