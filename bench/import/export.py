"""export.py — programs exported from JAX for kiln's importer (issue 36, docs/import.md).

Writes into OUT, per program NAME: NAME.mlir (StableHLO, jax.jit(f).lower(*args).as_text()),
NAME.hlo (.as_text(dialect="hlo")), NAME.io (the inputs and the outputs JAX computed: the
format of tests/data/import/NAME.io) and NAME.json (XLA's compiled.memory_analysis(), JAX's
median time per call, JAX's donate_argnums and "donate_leaves", the same donations as
indices of the flattened leaves, which are what kiln's donate_argnums count). bench/import/run.sh then runs each file through kiln
(bench/import/bench_import.c): outputs against JAX's, planned peak beside XLA's, time.

Programs: gpt_step, one AdamW training step of bench/gpt's model (gpt_jax.py: pre-LN GPT-2,
causal attention, GELU-tanh, tied LM head; AdamW with PyTorch's semantics), small; and
five small programs of the kinds bench/programs measures (mlp, mlp_train, attention,
layernorm, softmax_xent); and bench/programs' own seventeen (programs.py: embed, rope,
block, block_sdpa, attn, xent, adam, cumsum, reduce, posenc, trig, math64, transpose,
fourier, axes, nhwc, embed_grad), the same functions at small sizes; and cnn_step,
bench/cnn's training step at its size (convolutions, max pools and their gradients).

Usage: bench/.venv/bin/python bench/import/export.py OUT [--steps N] [--time-only] [NAME...]
  --steps N: also run N GPT steps in JAX and write gpt_losses.txt (kiln's run.sh compares)
  --time-only: write nothing; print "NAME MS" per program, JAX's jit median time per call
    (warm, inputs reused, 20 calls), for run.sh to alternate with bench_import --time-only
"""
import argparse
import json
import math
import os
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=0)
ap.add_argument("--time-only", action="store_true")
ap.add_argument("names", nargs="*", help="programs to export (default: all)")
args = ap.parse_intermixed_args()

import sys  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cnn"))
from cnn_model import step_fn as cnn_step  # noqa: E402  (bench/cnn's step, full size)

jax.config.update("jax_platforms", "cpu")
rng = np.random.default_rng(36)
V, T, L, H, C, B = 256, 32, 2, 4, 64, 4
B1, B2, EPS, WD = 0.9, 0.95, 1e-8, 0.1


def gpt_params():
    p = {"wte": rng.normal(0, 0.02, (V, C)), "wpe": rng.normal(0, 0.02, (T, C))}
    for l in range(L):
        h = f"h.{l}."
        p.update({h + "ln_1.weight": np.ones(C), h + "ln_1.bias": np.zeros(C),
                  h + "attn.c_attn.weight": rng.normal(0, 0.02, (C, 3 * C)),
                  h + "attn.c_attn.bias": np.zeros(3 * C),
                  h + "attn.c_proj.weight": rng.normal(0, 0.02 / math.sqrt(2 * L), (C, C)),
                  h + "attn.c_proj.bias": np.zeros(C),
                  h + "ln_2.weight": np.ones(C), h + "ln_2.bias": np.zeros(C),
                  h + "mlp.c_fc.weight": rng.normal(0, 0.02, (C, 4 * C)),
                  h + "mlp.c_fc.bias": np.zeros(4 * C),
                  h + "mlp.c_proj.weight": rng.normal(0, 0.02 / math.sqrt(2 * L), (4 * C, C)),
                  h + "mlp.c_proj.bias": np.zeros(C)})
    p["ln_f.weight"], p["ln_f.bias"] = np.ones(C), np.zeros(C)
    return {k: v.astype(np.float32) for k, v in p.items()}


def layer_norm(x, w, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * w + b


def gelu_tanh(u):
    return 0.5 * u * (1.0 + jnp.tanh(np.sqrt(2.0 / np.pi) * (u + 0.044715 * u ** 3)))


def gpt_loss(p, idx, tgt):
    Bn, Tn = idx.shape
    hs = C // H
    x = p["wte"][idx] + p["wpe"][:Tn]
    causal = jnp.tril(jnp.ones((Tn, Tn), dtype=bool))
    for l in range(L):
        w = lambda n: p[f"h.{l}.{n}"]  # noqa: E731
        a = layer_norm(x, w("ln_1.weight"), w("ln_1.bias"))
        qkv = a @ w("attn.c_attn.weight") + w("attn.c_attn.bias")
        q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(Bn, Tn, H, hs).transpose(0, 2, 1, 3)
                   for i in range(3))
        att = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(hs))
        att = jax.nn.softmax(jnp.where(causal, att, -jnp.inf), axis=-1)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(Bn, Tn, C)
        x = x + (y @ w("attn.c_proj.weight") + w("attn.c_proj.bias"))
        m = layer_norm(x, w("ln_2.weight"), w("ln_2.bias"))
        m = gelu_tanh(m @ w("mlp.c_fc.weight") + w("mlp.c_fc.bias"))
        x = x + (m @ w("mlp.c_proj.weight") + w("mlp.c_proj.bias"))
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    logits = x @ p["wte"].T
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, tgt[..., None], axis=-1)[..., 0]
    return jnp.mean(lse - picked)


def gpt_step(p, m, v, tokens, lr, t):
    """bench/gpt/gpt_jax.py's step: loss, gradients, AdamW (PyTorch's semantics)."""
    idx, tgt = tokens[:, :-1], tokens[:, 1:]
    loss, g = jax.value_and_grad(gpt_loss)(p, idx, tgt)
    bc1, bc2 = 1.0 - B1 ** t, 1.0 - B2 ** t
    np_, nm, nv = {}, {}, {}
    for k in p:
        w = p[k] * (1.0 - lr * WD) if p[k].ndim == 2 else p[k]
        nm[k] = B1 * m[k] + (1.0 - B1) * g[k]
        nv[k] = B2 * v[k] + (1.0 - B2) * jnp.square(g[k])
        denom = jnp.sqrt(nv[k]) / jnp.sqrt(bc2) + EPS
        np_[k] = w - (lr / bc1) * nm[k] / denom
    return loss, np_, nm, nv


def gpt_args():
    p = gpt_params()
    z = {k: np.zeros_like(x) for k, x in p.items()}
    tokens = rng.integers(0, V, (B, T + 1)).astype(np.int32)
    return p, z, dict(z), tokens, np.float32(1e-3), np.float32(1.0)


# bench/programs/programs.py's set, in JAX
def mlp(x, w1, b1, w2, b2):
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2


def mlp_train(w1, b1, w2, b2, x, y):
    def loss(p):
        h = jax.nn.relu(x @ p[0] + p[1])
        return jnp.mean(jnp.square(h @ p[2] + p[3] - y))
    l, g = jax.value_and_grad(loss)((w1, b1, w2, b2))
    return (l,) + tuple(a - 0.01 * b for a, b in zip((w1, b1, w2, b2), g))


def attention(q, k, v):
    s = jnp.einsum("bhtd,bhsd->bhts", q, k) / np.float32(np.sqrt(q.shape[-1]))
    mask = jnp.tril(jnp.ones((q.shape[2], q.shape[2]), bool))
    return jnp.einsum("bhts,bhsd->bhtd", jax.nn.softmax(jnp.where(mask, s, -jnp.inf), -1), v)


def layernorm(x, w, b):
    return layer_norm(x, w, b)


def softmax_xent(logits, labels):
    return jnp.mean(jax.nn.logsumexp(logits, -1) -
                    jnp.take_along_axis(logits, labels[:, None], -1)[:, 0])


def f32(*s):
    return rng.standard_normal(s).astype(np.float32)


def key_data(seed):
    return np.asarray(jax.random.key_data(jax.random.PRNGKey(seed)))


def dropout_train(w1, b1, w2, b2, x, y, key):
    """mlp_train with dropout on the hidden layer, its key an argument: jax.random inside
    the step, Threefry written out in ui32 ops in the text."""
    keep = jax.random.bernoulli(jax.random.wrap_key_data(key), 0.9, (x.shape[0], w1.shape[1]))

    def loss(p):
        h = jnp.where(keep, jax.nn.relu(x @ p[0] + p[1]) / 0.9, 0)
        return jnp.mean(jnp.square(h @ p[2] + p[3] - y))
    l, g = jax.value_and_grad(loss)((w1, b1, w2, b2))
    return (l,) + tuple(a - 0.01 * b for a, b in zip((w1, b1, w2, b2), g))


def draws(key):
    """Plain draws from a key argument: the imported Threefry's throughput."""
    k1, k2 = jax.random.split(jax.random.wrap_key_data(key))
    return jax.random.uniform(k1, (256, 1024)), jax.random.normal(k2, (256, 1024))


PROGRAMS = {
    "gpt_step": (gpt_step, gpt_args, (0, 1, 2)),
    "mlp": (mlp, lambda: (f32(64, 256), f32(256, 512) * .05, f32(512), f32(512, 10) * .05,
                          f32(10)), ()),
    "mlp_train": (mlp_train, lambda: (f32(256, 512) * .05, f32(512), f32(512, 10) * .05, f32(10),
                                      f32(64, 256), f32(64, 10)), (0, 1, 2, 3)),
    "attention": (attention, lambda: (f32(4, 4, 64, 32), f32(4, 4, 64, 32), f32(4, 4, 64, 32)),
                  ()),
    "layernorm": (layernorm, lambda: (f32(256, 512), f32(512), f32(512)), ()),
    "softmax_xent": (softmax_xent, lambda: (f32(256, 1000),
                                            rng.integers(0, 1000, 256).astype(np.int32)), ()),
    "dropout_train": (dropout_train, lambda: (f32(256, 512) * .05, f32(512), f32(512, 10) * .05,
                                              f32(10), f32(64, 256), f32(64, 10), key_data(3)),
                      (0, 1, 2, 3)),
    "draws": (draws, lambda: (key_data(4),), ()),
}

# bench/programs/programs.py's own programs, the same functions at small sizes (the first
# of bench/programs/run.sh's sizes, scaled down so the text export of inputs and outputs
# stays short).
def rms_norm(x, g):
    return x * (1 / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + np.float32(1e-6))) * g


def p_embed(tok, table, w1, b1, w2, b2):
    x = jnp.take(table, tok, axis=0).mean(axis=1)
    return jnp.maximum(x @ w1 + b1, 0) @ w2 + b2


def p_rope(x, c, s):
    B, T, NH, DH = x.shape
    P = DH // 2
    x5 = x.reshape(B, T, NH, P, 2)
    x0, x1 = x5[..., 0], x5[..., 1]
    c, s = c[None, :, None, :], s[None, :, None, :]
    y = jnp.concatenate([(x0 * c - x1 * s)[..., None], (x0 * s + x1 * c)[..., None]], axis=4)
    return y.reshape(B, T, NH, DH)


def p_block(sdpa):
    def f(x, g1, wq, wk, wv, wo, g2, w1, w3, w2):
        B, T, C = x.shape
        NH = max(C // 64, 1)
        DH = C // NH
        h = rms_norm(x, g1)
        if sdpa:
            sh = lambda z: z.reshape(B, T, NH, DH)  # noqa: E731
            y = jax.nn.dot_product_attention(sh(h @ wq), sh(h @ wk), sh(h @ wv), is_causal=True)
            y = y.reshape(B, T, C)
        else:
            heads = lambda z: z.reshape(B, T, NH, DH).transpose(0, 2, 1, 3)  # noqa: E731
            q, k, v = heads(h @ wq), heads(h @ wk), heads(h @ wv)
            att = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1 / np.sqrt(DH))
            causal = jnp.arange(T)[None, :] <= jnp.arange(T)[:, None]
            att = jnp.where(causal, att, np.float32(-1e30))
            y = (jax.nn.softmax(att, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x2 = x + y @ wo
        h2 = rms_norm(x2, g2)
        a = h2 @ w1
        return x2 + ((a * jax.nn.sigmoid(a)) * (h2 @ w3)) @ w2
    return f


def block_args(B, T, C):
    F = (8 * C // 3 + 63) // 64 * 64
    shp = [(B, T, C), (C,), (C, C), (C, C), (C, C), (C, C), (C,), (C, F), (C, F), (F, C)]
    return tuple(f32(*s) * np.float32(1 if len(s) != 2 else 1 / np.sqrt(s[0])) for s in shp)


def p_attn(q, k, v):
    return jax.nn.dot_product_attention(q, k, v, is_causal=True)


def p_xent(logits, labels):
    def loss(lg):
        lse = jax.nn.logsumexp(lg, axis=-1)
        return jnp.mean(lse - jnp.take_along_axis(lg, labels[:, None], axis=-1)[:, 0])
    return jax.value_and_grad(loss)(logits)


def p_adam(w, m, v, g):
    lr, b1, b2, eps, t = 1e-3, 0.9, 0.999, 1e-8, 10
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    w = w - lr / (1 - b1 ** t) * m / (jnp.sqrt(v) / np.sqrt(1 - b2 ** t) + eps)
    return w, m, v


def p_cumsum(x):
    return jnp.cumsum(x, axis=1), jax.lax.cumsum(x, axis=0, reverse=True)


def p_reduce(x):
    return jnp.sum(x, axis=1), jnp.max(x, axis=1), jnp.sum(x, axis=0), jax.nn.softmax(x, axis=1)


def p_posenc(x):
    _, T, D = x.shape
    pos = jnp.arange(T, dtype=jnp.float32)[:, None]
    inv = jnp.exp(jnp.arange(D // 2, dtype=jnp.float32) * jnp.float32(2.0 / D)
                  * jnp.float32(-np.log(10000.0)))
    ang = pos * inv
    pe = jnp.stack([jnp.sin(ang), jnp.cos(ang)], axis=-1).reshape(T, D)
    return x + pe[None]


def p_trig(x):
    return jnp.sin(x), jnp.cos(x), jnp.sin(x) * jnp.cos(x) + x


def p_math64(x):
    return jnp.exp(x), jnp.tanh(x), jax.nn.sigmoid(x), jnp.log(x * x + 1)


def p_fourier(x, b):
    z = (x @ b) * jnp.float32(2 * np.pi)
    return jnp.concatenate([jnp.sin(z), jnp.cos(z)], axis=-1)


def p_axes(x):
    ms = jnp.mean(x * x, axis=1, keepdims=True)
    return (jax.nn.softmax(x, axis=1), jax.nn.logsumexp(x, axis=1),
            x * jax.lax.rsqrt(ms + np.float32(1e-6)))


def p_embed_grad(tok, table):
    return jax.value_and_grad(lambda t: jnp.mean(jnp.square(jnp.take(t, tok, axis=0))))(table)


# bench/cnn's training step (cnn_model.py's step_fn, at its size): NHWC f32, batch 64, conv 3x3
# SAME + relu + max pool 2x2/2 twice, dense 1568 -> 10, softmax cross-entropy, AdamW; its
# gradient is convolutions, select_and_scatter (the pools') and reductions.
CB, CH, CC1, CC2, CK = 64, 28, 16, 32, 10


def cnn_args():
    flat = (CH // 4) ** 2 * CC2
    shapes = [(3, 3, 1, CC1), (CC1,), (3, 3, CC1, CC2), (CC2,), (flat, CK), (CK,)]
    p = [f32(*s) * np.float32(1 / np.sqrt(np.prod(s[:-1]) if len(s) > 1 else 1)) for s in shapes]
    z = [np.zeros_like(w) for w in p]
    return (p, z, [np.zeros_like(w) for w in p], f32(CB, CH, CH, 1),
            rng.integers(0, CK, CB).astype(np.int32), np.float32(1e-3), np.int32(1))


def tokens(n, *s):
    return rng.integers(0, n, s).astype(np.int32)


PROGRAMS.update({
    "embed": (p_embed, lambda: (tokens(500, 4, 16), f32(500, 32), f32(32, 64) * .2, f32(64),
                                f32(64, 16) * .1, f32(16)), ()),
    "rope": (p_rope, lambda: (f32(2, 16, 4, 16), f32(16, 8), f32(16, 8)), ()),
    "block": (p_block(False), lambda: block_args(2, 16, 64), ()),
    "block_sdpa": (p_block(True), lambda: block_args(2, 16, 64), ()),
    "attn": (p_attn, lambda: (f32(2, 32, 4, 16), f32(2, 32, 2, 16), f32(2, 32, 2, 16)), ()),
    "xent": (p_xent, lambda: (f32(16, 500), tokens(500, 16)), ()),
    "adam": (p_adam, lambda: (f32(1003), f32(1003) * .1, np.abs(f32(1003)) * .01, f32(1003)),
             (0, 1, 2)),
    "cumsum": (p_cumsum, lambda: (f32(8, 64),), ()),
    "reduce": (p_reduce, lambda: (f32(64, 33),), ()),
    "posenc": (p_posenc, lambda: (f32(2, 16, 32),), ()),
    "trig": (p_trig, lambda: (f32(1000),), ()),
    "transpose": (lambda x: x.T, lambda: (f32(40, 70),), ()),
    "fourier": (p_fourier, lambda: (f32(64, 3), f32(3, 16)), ()),
    "axes": (p_axes, lambda: (f32(2, 16, 32),), ()),
    "nhwc": (lambda x: jnp.transpose(x, (0, 2, 3, 1)), lambda: (f32(2, 3, 8, 8),), ()),
    "embed_grad": (p_embed_grad, lambda: (tokens(50, 2, 8), f32(50, 16)), ()),
    "cnn_step": (cnn_step, cnn_args, (0, 1, 2)),
    # f64: exported last, with jax_enable_x64 (main switches it on for X64 programs only)
    "math64": (p_math64, lambda: (rng.standard_normal(1000),), ()),
})
X64 = ("math64",)

DT = {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64", np.bool_: "bool"}


def write_array(f, kind, a):
    a = np.asarray(a)
    if a.dtype == np.uint32:  # kiln holds a uint32 as its i32 bit pattern (a key's words)
        a = a.view(np.int32)
    f.write("%s %s %d %s\n" % (kind, DT[a.dtype.type], a.ndim, " ".join(map(str, a.shape))))
    vals = a.reshape(-1)
    f.write(" ".join(repr(float(x)) if a.dtype.kind == "f" else str(int(x)) for x in vals))
    f.write("\n")


def timed(compiled, a, reps=20):
    jax.block_until_ready(compiled(*a))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*a))
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e3


def time_only(name):
    fn, make, _ = PROGRAMS[name]
    a = make()
    print(f"{name} {timed(jax.jit(fn).lower(*a).compile(), a):.4f}", flush=True)


def main():
    names = args.names or list(PROGRAMS)
    if args.time_only:
        for name in [n for n in names if n not in X64]:
            time_only(name)
        jax.config.update("jax_enable_x64", True)
        for name in [n for n in names if n in X64]:
            time_only(name)
        return
    os.makedirs(args.out, exist_ok=True)
    for name in names:
        if name not in X64:
            a = export(name)
            if args.steps and name == "gpt_step":
                gpt_losses(a)
    jax.config.update("jax_enable_x64", True)  # from here on: f64 programs only
    for name in names:
        if name in X64:
            export(name)


def donated_leaves(a, donate):
    """JAX's donate_argnums count pytree arguments; kiln's count the flattened leaves (the
    imported graph's parameters): a dict of parameters donated is all of its leaves."""
    out, k = [], 0
    for i, x in enumerate(a):
        n = len(jax.tree_util.tree_leaves(x))
        out += list(range(k, k + n)) if i in donate else []
        k += n
    return out


def export(name):
    """Writes NAME.mlir, .hlo, .io and .json; returns the inputs it made."""
    fn, make, donate = PROGRAMS[name]
    a = make()
    lowered = jax.jit(fn, donate_argnums=donate).lower(*a)
    for ext, text in (("mlir", lowered.as_text()), ("hlo", lowered.as_text(dialect="hlo"))):
        with open(os.path.join(args.out, f"{name}.{ext}"), "w") as f:
            f.write(text)
    outs = jax.jit(fn)(*a)
    with open(os.path.join(args.out, name + ".io"), "w") as f:
        for x in jax.tree_util.tree_leaves(a):
            write_array(f, "in", x)
        for x in jax.tree_util.tree_leaves(outs):
            write_array(f, "out", x)
    compiled = jax.jit(fn).lower(*a).compile()  # no donation: the inputs are reused
    ma = jax.jit(fn, donate_argnums=donate).lower(*a).compile().memory_analysis()
    info = {"argument_bytes": ma.argument_size_in_bytes,
            "output_bytes": ma.output_size_in_bytes, "temp_bytes": ma.temp_size_in_bytes,
            "alias_bytes": ma.alias_size_in_bytes,
            "peak_bytes": ma.argument_size_in_bytes + ma.output_size_in_bytes +
            ma.temp_size_in_bytes - ma.alias_size_in_bytes,
            "ms": timed(compiled, a), "donate": list(donate),
            "donate_leaves": donated_leaves(a, donate), "jax": jax.__version__}
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(info, f)
    print(f"{name}: XLA peak {info['peak_bytes']} B, {info['ms']:.3f} ms")
    return a


def gpt_losses(made):
    p, m, v, _, _, _ = made  # the inputs gpt_step.io holds
    step = jax.jit(gpt_step)
    toks = rng.integers(0, V, (args.steps, B, T + 1)).astype(np.int32)
    toks.tofile(os.path.join(args.out, "gpt_tokens.bin"))
    with open(os.path.join(args.out, "gpt_losses.txt"), "w") as f:
        for s in range(args.steps):
            loss, p, m, v = step(p, m, v, toks[s], np.float32(1e-3), np.float32(s + 1))
            f.write(f"{float(loss)!r}\n")


if __name__ == "__main__":
    main()
