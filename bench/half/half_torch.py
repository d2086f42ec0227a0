"""PyTorch on the CPU doing bench_half.c's chain, ((x*1.5 + 0.25)*x - 0.5)*0.75 over 64 Mi
elements in f32, bf16 and f16: eager (a kernel per op, each rounding to the dtype, as kiln's
default) and torch.compile (Inductor fuses the chain and, by default, computes it in f32 and
rounds once where it stores: kiln's allow_excess_precision). Medians of reps runs after a
warm-up. Usage: python half_torch.py [reps]"""
import sys
import time

import numpy as np
import torch

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 9
N = 64 << 20


def chain(x):
    return ((x * 1.5 + 0.25) * x - 0.5) * 0.75


def med(f, x):
    f(x)
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(x)
        t.append(time.perf_counter() - t0)
    return float(np.median(t))


compiled = torch.compile(chain)
rng = np.random.default_rng(7)
print("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()))
print("| dtype | torch eager chain (Gelem/s) | vs f32 | torch.compile chain | vs f32 |")
print("|---|---|---|---|---|")
base = None
for name, t in (("f32", torch.float32), ("bf16", torch.bfloat16), ("f16", torch.float16)):
    x = torch.from_numpy(rng.uniform(-1, 1, N).astype(np.float32)).to(t)
    with torch.no_grad():
        e = N / med(chain, x)
        c = N / med(compiled, x)
    base = base or (e, c)
    print("| %s | %.3f | %.2fx | %.3f | %.2fx |" % (name, e / 1e9, e / base[0], c / 1e9, c / base[1]))
    sys.stdout.flush()
