"""export.py — programs exported from JAX for kiln's importer (issue 36, docs/import.md).

Writes into OUT, per program NAME: NAME.mlir (StableHLO, jax.jit(f).lower(*args).as_text()),
NAME.hlo (.as_text(dialect="hlo")), NAME.io (the inputs and the outputs JAX computed: the
format of tests/data/import/NAME.io) and NAME.json (XLA's compiled.memory_analysis() and
JAX's median time per call). bench/import/run.sh then runs each file through kiln
(bench/import/bench_import.c): outputs against JAX's, planned peak beside XLA's, time.

Programs: gpt_step, one AdamW training step of bench/gpt's model (gpt_jax.py: pre-LN GPT-2,
causal attention, GELU-tanh, tied LM head; AdamW with PyTorch's semantics), small; and
five small programs of the kinds bench/programs measures (mlp, mlp_train, attention,
layernorm, softmax_xent). bench/programs' own programs (programs.py: embed, rope, block,
xent, adam, cumsum, ...) are not exported yet.

Usage: bench/.venv/bin/python bench/import/export.py OUT [--steps N]
  --steps N: also run N GPT steps in JAX and write gpt_losses.txt (kiln's run.sh compares)
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
args = ap.parse_args()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

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
}

DT = {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64", np.bool_: "bool"}


def write_array(f, kind, a):
    a = np.asarray(a)
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


def main():
    os.makedirs(args.out, exist_ok=True)
    made = {}
    for name, (fn, make, donate) in PROGRAMS.items():
        a = made[name] = make()
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
                "ms": timed(compiled, a), "donate": list(donate), "jax": jax.__version__}
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(info, f)
        print(f"{name}: XLA peak {info['peak_bytes']} B, {info['ms']:.3f} ms")
    if args.steps:
        p, m, v, tokens, _, _ = made["gpt_step"]  # the inputs gpt_step.io holds
        step = jax.jit(gpt_step)
        toks = rng.integers(0, V, (args.steps, B, T + 1)).astype(np.int32)
        toks.tofile(os.path.join(args.out, "gpt_tokens.bin"))
        with open(os.path.join(args.out, "gpt_losses.txt"), "w") as f:
            for s in range(args.steps):
                loss, p, m, v = step(p, m, v, toks[s], np.float32(1e-3), np.float32(s + 1))
                f.write(f"{float(loss)!r}\n")


if __name__ == "__main__":
    main()
