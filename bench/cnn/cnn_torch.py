"""cnn_torch.py — the PyTorch side of bench/cnn (issue 35, item 7).

The network of bench_cnn.c in PyTorch eager, NCHW (torch's native layout): the NHWC
images and HWIO kernels bench_cnn wrote to DIR are transposed on load, and the pooled
activations are flattened in kiln's (h, w, c) order, so the dense weights are the same
numbers. torch.optim.AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 1e-2).
Trains as many steps as kiln did, cycling the batches in the same order, writes every
step's loss to DIR/torch_losses.f32 and prints "name value" lines (the median step time
after 5 of warm-up); cnn_jax.py puts them in the table. torch.compile is not run: its
first compile takes minutes on a small CPU host, longer than the whole comparison.
Usage: cnn_torch.py DIR KILN_FIGURES [threads]. Run by bench/cnn/run.sh inside
bench/.venv; the library never needs Python.
"""
import os
import statistics
import sys
import time

import numpy as np
import torch

B, H, C1, C2, NCLS, NB, WARMUP = 64, 28, 16, 32, 10, 8, 5
FLAT = (H // 4) * (H // 4) * C2
NAMES = ["w1", "b1", "w2", "b2", "w3", "b3"]
SHAPES = [(3, 3, 1, C1), (C1,), (3, 3, C1, C2), (C2,), (FLAT, NCLS), (NCLS,)]
LR, B1, B2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 1e-2

d, kiln_path = sys.argv[1], sys.argv[2]
threads = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count()
torch.set_num_threads(threads)
kiln = dict(line.split() for line in open(kiln_path) if line.strip())
steps = int(kiln["kiln_steps"])


def load(name, dtype, shape):
    return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(shape)


init = [load(f"init_{n}.f32", np.float32, s) for n, s in zip(NAMES, SHAPES)]
# HWIO -> OIHW for the kernels; the rest as they are.
init = [w.transpose(3, 2, 0, 1) if w.ndim == 4 else w for w in init]
params = [torch.tensor(np.ascontiguousarray(w), requires_grad=True) for w in init]
xs = torch.from_numpy(np.ascontiguousarray(
    load("x.f32", np.float32, (NB, B, H, H, 1)).transpose(0, 1, 4, 2, 3)))
ys = torch.from_numpy(load("y.i32", np.int32, (NB, B)).astype(np.int64))
F = torch.nn.functional


def loss_fn(p, x, y):
    h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3], padding=1)), 2)
    logits = h.permute(0, 2, 3, 1).reshape(B, FLAT) @ p[4] + p[5]
    return F.cross_entropy(logits, y)


opt = torch.optim.AdamW(params, lr=LR, betas=(B1, B2), eps=EPS, weight_decay=WD)
losses, times = [], []
for s in range(1, steps + 1):
    x, y = xs[(s - 1) % NB], ys[(s - 1) % NB]
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(params, x, y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
    times.append(time.perf_counter() - t0)
np.asarray(losses, dtype=np.float32).tofile(os.path.join(d, "torch_losses.f32"))
print(f"torch_version {torch.__version__}")
print(f"torch_step_ms {statistics.median(times[WARMUP:]) * 1e3:.3f}")
