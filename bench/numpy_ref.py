"""numpy_ref.py — the NumPy side of bench_jit.c: the same work, the same shapes, medians
of several runs, printed as "name value unit" lines. Run by bench/run_jit.sh inside the
benchmark's virtual environment (the library and its tests never need Python)."""
import sys
import time

import numpy as np

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7


junk = np.zeros(64 << 20, np.uint8)


def med(f, flush=True):
    """Median time of f over reps runs, each after writing 64 MiB (caches flushed, as
    bench_jit.c does)."""
    f()
    ts = []
    for _ in range(reps):
        if flush:
            junk[:] = len(ts) + 1
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


rng = np.random.default_rng(0)
n = 16 << 20
x = rng.uniform(-1, 1, n).astype(np.float32)
y = rng.uniform(-1, 1, n).astype(np.float32)


def chain():
    v = x * np.float32(1.5) + np.float32(0.5)
    v = np.maximum(v, np.float32(0)) * x
    v = np.abs(v - np.float32(0.25))
    return np.minimum(v, np.float32(4)) * np.float32(0.75) + y


print(f"numpy_chain8_16M_ms {med(chain) * 1e3:.3f}")
a = rng.uniform(-1, 1, (4096, 4096)).astype(np.float32)


def softmax():
    m = a.max(axis=-1, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm():
    mu = a.mean(axis=-1, keepdims=True)
    xc = a - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + np.float32(1e-5))


print(f"numpy_softmax_4096x4096_ms {med(softmax) * 1e3:.3f}")
print(f"numpy_layer_norm_4096x4096_ms {med(layer_norm) * 1e3:.3f}")
xb = rng.uniform(-1, 1, (256, 784)).astype(np.float32)
w1 = rng.uniform(-1, 1, (784, 1024)).astype(np.float32)
w2 = rng.uniform(-1, 1, (1024, 1024)).astype(np.float32)
w3 = rng.uniform(-1, 1, (1024, 10)).astype(np.float32)
b1 = np.zeros(1024, np.float32)
b2 = np.zeros(1024, np.float32)
b3 = np.zeros(10, np.float32)


def mlp():
    h = np.maximum(xb @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    return h @ w3 + b3


print(f"numpy_mlp3_b256_ms {med(mlp) * 1e3:.3f}")
t = np.ones(4, np.float32)
k = 20000


def tiny():
    for _ in range(k):
        t * t + np.float32(1)


print(f"numpy_tiny_call_us {med(tiny, flush=False) / k * 1e6:.3f}")
