"""JAX on the CPU doing bench_half.c's work: the elementwise chain over 64 Mi elements and
the 2048^3 matmul, in f32, bf16 and f16 (jnp.matmul with f32 accumulation where XLA does
it), medians of reps runs after a warm-up. Usage: python half_jax.py [reps]"""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_platforms", "cpu")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 9
N, MM = 64 << 20, 2048


def med(f, *a):
    f(*a).block_until_ready()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(*a).block_until_ready()
        t.append(time.perf_counter() - t0)
    return float(np.median(t))


chain = jax.jit(lambda x: ((x * 1.5 + 0.25) * x - 0.5) * 0.75)
mm = jax.jit(jnp.matmul)
rng = np.random.default_rng(7)
print("| dtype | JAX chain 64Mi (Gelem/s) | vs f32 | JAX matmul %d^3 (GFLOP/s) | vs f32 |" % MM)
print("|---|---|---|---|---|")
base = None
for name, t in (("f32", jnp.float32), ("bf16", jnp.bfloat16), ("f16", jnp.float16)):
    x = jnp.asarray(rng.uniform(-1, 1, N).astype(np.float32), t)
    c = N / med(chain, x)
    a = jnp.asarray(rng.uniform(-1, 1, (MM, MM)), t)
    b = jnp.asarray(rng.uniform(-1, 1, (MM, MM)), t)
    m = 2 * MM**3 / med(mm, a, b) / 1e9
    base = base or (c, m)
    print("| %s | %.3f | %.2fx | %.1f | %.2fx |" % (name, c / 1e9, c / base[0], m, m / base[1]))
    sys.stdout.flush()
