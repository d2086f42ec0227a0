"""programs.py — the JAX and NumPy sides of bench/programs (issue 14's programs).

Usage: programs.py DIR REPS THREADS PROGRAM SIZES...   (the same PROGRAM and SIZES as
bench_programs, which wrote its inputs DIR/in<i>.bin and outputs DIR/out<i>.bin first).
Computes each program with jax.jit (the donated Adam update with donate_argnums) and, where
it is simple, with NumPy, on kiln's inputs; prints "jax_ms", "numpy_ms" (medians of REPS
runs after 3 warm-ups, each blocked until ready) and "err", the largest difference between
kiln's outputs and JAX's relative to the largest magnitude of JAX's output, and
"jax_first_ms", the first call of a fresh jax.jit (trace, compile, run). Run by run.sh
inside bench/.venv; the library never needs Python.
"""
import os
import statistics
import sys
import time

import numpy as np

d, reps, threads, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sizes = [int(s) for s in sys.argv[5:]]
# XLA's CPU client sizes its thread pool from the cores it may run on: pin to `threads`.
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(threads))

import jax  # noqa: E402  (after the affinity is set)
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_platforms", "cpu")


def load(i, dtype, shape):
    return np.fromfile(os.path.join(d, f"in{i}.bin"), dtype=dtype).reshape(shape)


def out(i, shape, dtype=np.float32):
    return np.fromfile(os.path.join(d, f"out{i}.bin"), dtype=dtype).reshape(shape)


# BENCH_CLOCK=cpu: the process's CPU time (every thread: XLA's pool and the dispatching
# thread), as bench_programs measures kiln's; with one thread, the time on an idle core.
clock = time.process_time if os.environ.get("BENCH_CLOCK") == "cpu" else time.perf_counter


def timed(fn, args, block):
    t = []
    for r in range(3 + reps):
        t0 = clock()
        res = fn(*args)
        block(res)
        t.append(clock() - t0)
    return 1e3 * statistics.median(t[3:])


def jblock(r):
    jax.block_until_ready(r)


out_dtype = np.float32  # kiln's outputs as bench_programs wrote them (math64: float64)


def rms_norm(x, g, xp):
    return x * (1 / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + np.float32(1e-6))) * g


if name == "embed":
    B, T, V, D, H, C = sizes
    args = [load(0, np.int32, (B, T)), load(1, np.float32, (V, D)), load(2, np.float32, (D, H)),
            load(3, np.float32, (H,)), load(4, np.float32, (H, C)), load(5, np.float32, (C,))]

    def f(tok, table, w1, b1, w2, b2, xp=jnp):
        x = xp.take(table, tok, axis=0).mean(axis=1)
        return xp.maximum(x @ w1 + b1, 0) @ w2 + b2

    shapes = [(B, C)]
    np_fn = lambda *a: f(*a, xp=np)  # noqa: E731
elif name == "rope":
    B, T, NH, DH = sizes
    P = DH // 2
    args = [load(0, np.float32, (B, T, NH, DH)), load(1, np.float32, (T, P)),
            load(2, np.float32, (T, P))]

    def f(x, c, s, xp=jnp):
        x5 = x.reshape(B, T, NH, P, 2)
        x0, x1 = x5[..., 0], x5[..., 1]
        c, s = c[None, :, None, :], s[None, :, None, :]
        y = xp.concatenate([(x0 * c - x1 * s)[..., None], (x0 * s + x1 * c)[..., None]], axis=4)
        return y.reshape(B, T, NH, DH)

    shapes = [(B, T, NH, DH)]
    np_fn = lambda *a: f(*a, xp=np)  # noqa: E731
elif name in ("block", "block_sdpa"):
    B, T, C = sizes
    NH = max(C // 64, 1)
    DH, F = C // NH, (8 * C // 3 + 63) // 64 * 64
    shp = [(B, T, C), (C,), (C, C), (C, C), (C, C), (C, C), (C,), (C, F), (C, F), (F, C)]
    args = [load(i, np.float32, s) for i, s in enumerate(shp)]

    def f(x, g1, wq, wk, wv, wo, g2, w1, w3, w2):
        h = rms_norm(x, g1, jnp)
        heads = lambda z: z.reshape(B, T, NH, DH).transpose(0, 2, 1, 3)  # noqa: E731
        if name == "block_sdpa":  # [B, T, N, H] in and out, as the library call takes them
            sh = lambda z: z.reshape(B, T, NH, DH)  # noqa: E731
            y = jax.nn.dot_product_attention(sh(h @ wq), sh(h @ wk), sh(h @ wv), is_causal=True)
            y = y.reshape(B, T, C)
        else:
            q, k, v = heads(h @ wq), heads(h @ wk), heads(h @ wv)
            att = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(DH))
            causal = jnp.arange(T)[None, :] <= jnp.arange(T)[:, None]
            att = jnp.where(causal, att, np.float32(-1e30))
            y = (jax.nn.softmax(att, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x2 = x + y @ wo
        h2 = rms_norm(x2, g2, jnp)
        a = h2 @ w1
        return x2 + ((a * jax.nn.sigmoid(a)) * (h2 @ w3)) @ w2

    shapes = [(B, T, C)]
    np_fn = None
elif name == "attn":
    B, T, N, K, H = sizes
    args = [load(0, np.float32, (B, T, N, H)), load(1, np.float32, (B, T, K, H)),
            load(2, np.float32, (B, T, K, H))]

    def f(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)

    shapes = [(B, T, N, H)]
    np_fn = None
elif name == "xent":
    N, V = sizes
    args = [load(0, np.float32, (N, V)), load(1, np.int32, (N,))]

    def loss(logits, labels):
        lse = jax.nn.logsumexp(logits, axis=-1)
        return jnp.mean(lse - jnp.take_along_axis(logits, labels[:, None], axis=-1)[:, 0])

    f = jax.value_and_grad(loss)
    shapes = [(), (N, V)]

    def np_fn(logits, labels):
        m = logits.max(axis=-1, keepdims=True)
        e = np.exp(logits - m)
        s = e.sum(axis=-1, keepdims=True)
        lse = np.log(s)[:, 0] + m[:, 0]
        loss = np.mean(lse - logits[np.arange(N), labels])
        g = e / s
        g[np.arange(N), labels] -= 1
        return loss, g / np.float32(N)
elif name == "adam":
    (P,) = sizes
    args = [load(i, np.float32, (P,)) for i in range(4)]
    lr, b1, b2, eps, t = 1e-3, 0.9, 0.999, 1e-8, 10

    def f(w, m, v, g):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr / (1 - b1 ** t) * m / (jnp.sqrt(v) / np.sqrt(1 - b2 ** t) + eps)
        return w, m, v

    shapes = [(P,), (P,), (P,)]

    def np_fn(w, m, v, g):  # in place, as the donated programs are
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * g * g
        w -= np.float32(lr / (1 - b1 ** t)) * m / (np.sqrt(v) / np.float32(np.sqrt(1 - b2 ** t)) +
                                                   np.float32(eps))
        return w, m, v
elif name == "cumsum":
    R, N = sizes
    args = [load(0, np.float32, (R, N))]

    def f(x):
        return jnp.cumsum(x, axis=1), jax.lax.cumsum(x, axis=0, reverse=True)

    shapes = [(R, N), (R, N)]

    def np_fn(x):
        return np.cumsum(x, axis=1), np.flip(np.cumsum(np.flip(x, 0), axis=0), 0)
elif name == "reduce":
    R, N = sizes
    args = [load(0, np.float32, (R, N))]

    def f(x):
        return jnp.sum(x, axis=1), jnp.max(x, axis=1), jnp.sum(x, axis=0), jax.nn.softmax(x, axis=1)

    shapes = [(R,), (R,), (N,), (R, N)]

    def np_fn(x):
        e = np.exp(x - np.max(x, axis=1, keepdims=True))
        return np.sum(x, axis=1), np.max(x, axis=1), np.sum(x, axis=0), e / np.sum(e, axis=1, keepdims=True)
elif name == "posenc":
    B, T, D = sizes
    args = [load(0, np.float32, (B, T, D))]

    def f(x, xp=jnp):
        pos = xp.arange(T, dtype=xp.float32)[:, None]
        inv = xp.exp(xp.arange(D // 2, dtype=xp.float32) * xp.float32(2.0 / D)
                     * xp.float32(-np.log(10000.0)))
        ang = pos * inv
        pe = xp.stack([xp.sin(ang), xp.cos(ang)], axis=-1).reshape(T, D)
        return x + pe[None]

    shapes = [(B, T, D)]

    def np_fn(x):
        return f(x, np)
elif name == "trig":
    (N,) = sizes
    args = [load(0, np.float32, (N,))]

    def f(x, xp=jnp):
        return xp.sin(x), xp.cos(x), xp.sin(x) * xp.cos(x) + x

    shapes = [(N,), (N,), (N,)]

    def np_fn(x):
        return f(x, np)
elif name == "math64":
    jax.config.update("jax_enable_x64", True)
    (N,) = sizes
    args = [np.fromfile(os.path.join(d, "in0.bin"), dtype=np.float64).reshape((N,))]

    def f(x, xp=jnp):
        sig = jax.nn.sigmoid(x) if xp is jnp else 1 / (1 + np.exp(-x))
        return xp.exp(x), xp.tanh(x), sig, xp.log(x * x + 1)

    shapes = [(N,)] * 4
    out_dtype = np.float64

    def np_fn(x):
        return f(x, np)
elif name == "transpose":
    R, C = sizes
    args = [load(0, np.float32, (R, C))]

    def f(x):
        return x.T

    shapes = [(C, R)]

    def np_fn(x):
        return np.ascontiguousarray(x.T)
elif name == "fourier":
    N, D, F = sizes
    args = [load(0, np.float32, (N, D)), load(1, np.float32, (D, F))]

    def f(x, b, xp=jnp):
        z = (x @ b) * xp.float32(2 * np.pi)
        return xp.concatenate([xp.sin(z), xp.cos(z)], axis=-1)

    shapes = [(N, 2 * F)]

    def np_fn(x, b):
        return f(x, b, np)
elif name == "axes":
    B, N, C = sizes
    args = [load(0, np.float32, (B, N, C))]

    def f(x):
        ms = jnp.mean(x * x, axis=1, keepdims=True)
        return (jax.nn.softmax(x, axis=1), jax.nn.logsumexp(x, axis=1),
                x * jax.lax.rsqrt(ms + np.float32(1e-6)))

    shapes = [(B, N, C), (B, C), (B, N, C)]

    def np_fn(x):
        e = np.exp(x - np.max(x, axis=1, keepdims=True))
        m = np.max(x, axis=1, keepdims=True)
        lse = np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0]
        ms = np.mean(x * x, axis=1, keepdims=True)
        return e / np.sum(e, axis=1, keepdims=True), lse, x / np.sqrt(ms + np.float32(1e-6))
elif name == "nhwc":
    N, C, H, W = sizes
    args = [load(0, np.float32, (N, C, H, W))]

    def f(x):
        return jnp.transpose(x, (0, 2, 3, 1))

    shapes = [(N, H, W, C)]

    def np_fn(x):
        return np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))
elif name == "embed_grad":
    B, T, V, D = sizes
    args = [load(0, np.int32, (B, T)), load(1, np.float32, (V, D))]

    def f(tok, table):
        return jax.value_and_grad(lambda t: jnp.mean(jnp.square(jnp.take(t, tok, axis=0))))(table)

    shapes = [(), (V, D)]

    def np_fn(tok, table):
        h = table[tok]
        grad = np.zeros_like(table)
        np.add.at(grad, tok.reshape(-1), (h * np.float32(2 / h.size)).reshape(-1, D))
        return np.mean(h * h), grad
else:
    sys.exit(f"programs.py: unknown program {name}")

# The reference results, from the inputs before any donated run changes them; this first
# call of a fresh jax.jit (trace, XLA compile, run; the backend is already up) is JAX's
# first-call time.
first_args = [jnp.asarray(a) for a in args]
jax.block_until_ready(first_args)
t0 = time.perf_counter()
ref = jax.jit(f)(*first_args)
jax.block_until_ready(ref)
jax_first_ms = 1e3 * (time.perf_counter() - t0)
ref = ref if isinstance(ref, tuple) else (ref,)
err = 0.0
for i, (r, s) in enumerate(zip(ref, shapes)):
    r = np.asarray(r, dtype=np.float64)
    k = out(i, s, out_dtype).astype(np.float64)
    err = max(err, float(np.max(np.abs(k - r)) / max(np.max(np.abs(r)), 1e-30)))

if name == "adam":
    jf = jax.jit(f, donate_argnums=(0, 1, 2))
    state = [jnp.asarray(a) for a in args]
    t_j = []
    for r in range(3 + reps):
        t0 = clock()
        w, m, v = jf(state[0], state[1], state[2], state[3])
        jax.block_until_ready((w, m, v))
        t_j.append(clock() - t0)
        state = [w, m, v, state[3]]
    jax_ms = 1e3 * statistics.median(t_j[3:])
else:
    jf = jax.jit(f)
    jargs = [jnp.asarray(a) for a in args]
    jax_ms = timed(jf, jargs, jblock)
numpy_ms = timed(np_fn, [a.copy() for a in args], lambda r: None) if np_fn else float("nan")
print(f"jax_ms {jax_ms:.4f}")
print(f"numpy_ms {numpy_ms:.4f}")
print(f"err {err:.3g}")
print(f"jax_first_ms {jax_first_ms:.1f}")
