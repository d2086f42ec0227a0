"""jax_gemm.py — XLA's GFLOP/s on the shapes of bench_gemm.c (same list, same order), one
jitted matmul per shape (batched with einsum), median over reps after a warm-up.
Threads are the CPUs the process may use: run.sh pins it with taskset for 1 thread.
Usage: jax_gemm.py [reps]"""
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

# (name, batch, m, n, k, A stored transposed, B stored transposed): bench_gemm.c's shapes
SHAPES = [
    ("mlp fwd 256x784 @ 784x512", 1, 256, 512, 784, 0, 0),
    ("mlp fwd 256x512 @ 512x512", 1, 256, 512, 512, 0, 0),
    ("mlp bwd dW 784x256 @ 256x512 (A^T)", 1, 784, 512, 256, 1, 0),
    ("mlp bwd dX 256x512 @ 512x784 (B^T)", 1, 256, 784, 512, 0, 1),
    ("gpt qkv 1024x256 @ 256x768", 1, 1024, 768, 256, 0, 0),
    ("gpt fc 1024x256 @ 256x1024", 1, 1024, 1024, 256, 0, 0),
    ("gpt proj 1024x1024 @ 1024x256", 1, 1024, 256, 1024, 0, 0),
    ("gpt bwd dW 256x1024 @ 1024x1024 (A^T)", 1, 256, 1024, 1024, 1, 0),
    ("gpt bwd dX 1024x256 @ 256x1024 (B^T)", 1, 1024, 1024, 256, 0, 1),
    ("gpt attn 32 x 128x64 @ 64x128 (B^T)", 32, 128, 128, 64, 0, 1),
    ("gpt attn 32 x 128x128 @ 128x64", 32, 128, 64, 128, 0, 0),
    ("gpt attn bwd 32 x 64x128 @ 128x128 (A^T)", 32, 64, 128, 128, 1, 0),
    ("llama qkv 512x256 @ 256x768", 1, 512, 768, 256, 0, 0),
    ("llama mlp 512x256 @ 256x688", 1, 512, 688, 256, 0, 0),
    ("llama down 512x688 @ 688x256", 1, 512, 256, 688, 0, 0),
    ("llama attn 16 x 128x64 @ 64x128 (B^T)", 16, 128, 128, 64, 0, 1),
    ("square 1024^3", 1, 1024, 1024, 1024, 0, 0),
]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    threads = len(os.sched_getaffinity(0))
    rng = np.random.default_rng(0)
    for name, b, m, n, k, ta, tb in SHAPES:
        a = rng.standard_normal((b, k, m) if ta else (b, m, k), dtype=np.float32)
        bb = rng.standard_normal((b, n, k) if tb else (b, k, n), dtype=np.float32)
        sa = "bkm" if ta else "bmk"
        sb = "bnk" if tb else "bkn"
        f = jax.jit(lambda x, y, sa=sa, sb=sb: jnp.einsum(f"{sa},{sb}->bmn", x, y))
        x, y = jnp.asarray(a), jnp.asarray(bb)
        f(x, y).block_until_ready()
        t = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f(x, y).block_until_ready()
            t.append(time.perf_counter() - t0)
        med = float(np.median(t))
        print(f"| {name} | xla | - | {threads} | {2.0 * b * m * n * k / med / 1e9:.1f} |", flush=True)


if __name__ == "__main__":
    main()
