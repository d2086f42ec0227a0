"""remat_jax.py — the JAX side of bench/remat (issue 11, "Figures").

The GPT-2-style training step of /work/wt/prompts/gpt_spec.md (vocab 256, context 128, 4
layers, 4 heads, 256 channels, batch 8, f32, AdamW: lr 3e-4, betas 0.9/0.95, eps 1e-8,
weight decay 0.1 on rank-2 weights) as bench_remat.c builds it, jitted with the
parameters and optimiser state donated, with jax.checkpoint around each block under no
policy (no remat), nothing_saveable and dots_saveable. For each: XLA's
compiled.memory_analysis() (temp bytes, and argument + output + temp - alias as its
peak) and the median ms/step. Prints "name value" lines and a Markdown table.
Usage: remat_jax.py [reps] [threads]; run by bench/remat/run.sh inside bench/.venv.
"""
import os
import statistics
import sys
import time

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
threads = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))

import jax  # noqa: E402  (after the affinity is set)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_platforms", "cpu")

V, T, L, H, C, B = 256, 128, 4, 4, 256, 8
HS = C // H
LR, B1, B2, EPS, WD = 3e-4, 0.9, 0.95, 1e-8, 0.1


def init(seed=0):
    rng = np.random.default_rng(seed)
    p = {"wte": rng.normal(0, 0.02, (V, C)), "wpe": rng.normal(0, 0.02, (T, C))}
    for l in range(L):
        for name, shape in [("attn.c_attn.weight", (C, 3 * C)), ("attn.c_proj.weight", (C, C)),
                            ("mlp.c_fc.weight", (C, 4 * C)), ("mlp.c_proj.weight", (4 * C, C))]:
            std = 0.02 / np.sqrt(2 * L) if "c_proj" in name else 0.02
            p[f"h.{l}.{name}"] = rng.normal(0, std, shape)
        for name, n in [("attn.c_attn.bias", 3 * C), ("attn.c_proj.bias", C),
                        ("mlp.c_fc.bias", 4 * C), ("mlp.c_proj.bias", C)]:
            p[f"h.{l}.{name}"] = np.zeros(n)
        for ln in ("ln_1", "ln_2"):
            p[f"h.{l}.{ln}.weight"], p[f"h.{l}.{ln}.bias"] = np.ones(C), np.zeros(C)
    p["ln_f.weight"], p["ln_f.bias"] = np.ones(C), np.zeros(C)
    return {k: jnp.asarray(v, jnp.float32) for k, v in p.items()}


def layer_norm(x, w, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * w + b


def gelu(u):
    return 0.5 * u * (1 + jnp.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))


def block(bp, x):
    qkv = layer_norm(x, bp["ln_1.weight"], bp["ln_1.bias"]) @ bp["attn.c_attn.weight"] + bp["attn.c_attn.bias"]
    q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, H, HS).transpose(0, 2, 1, 3) for i in range(3))
    att = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(HS)
    att = jnp.where(jnp.tril(jnp.ones((T, T), bool)), att, -1e9)
    y = (jax.nn.softmax(att, -1) @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    x = x + y @ bp["attn.c_proj.weight"] + bp["attn.c_proj.bias"]
    m = gelu(layer_norm(x, bp["ln_2.weight"], bp["ln_2.bias"]) @ bp["mlp.c_fc.weight"] + bp["mlp.c_fc.bias"])
    return x + m @ bp["mlp.c_proj.weight"] + bp["mlp.c_proj.bias"]


def make_step(policy):
    blk = block if policy == "none" else jax.checkpoint(
        block, policy=getattr(jax.checkpoint_policies, policy))

    def loss_fn(p, idx, tgt):
        x = p["wte"][idx] + p["wpe"]
        for l in range(L):
            pre = f"h.{l}."
            x = blk({k[len(pre):]: v for k, v in p.items() if k.startswith(pre)}, x)
        logits = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"]) @ p["wte"].T
        lse = jax.nn.logsumexp(logits, -1)
        return (lse - jnp.take_along_axis(logits, tgt[..., None], -1)[..., 0]).mean()

    def step(p, m, v, idx, tgt):
        loss, g = jax.value_and_grad(loss_fn)(p, idx, tgt)
        np_, nm, nv = {}, {}, {}
        for k in p:
            nm[k] = B1 * m[k] + (1 - B1) * g[k]
            nv[k] = B2 * v[k] + (1 - B2) * g[k] ** 2
            wd = WD if p[k].ndim == 2 else 0.0
            upd = (nm[k] / (1 - B1)) / (jnp.sqrt(nv[k] / (1 - B2)) + EPS)
            np_[k] = p[k] - LR * wd * p[k] - LR * upd
        return loss, np_, nm, nv

    return jax.jit(step, donate_argnums=(0, 1, 2))


rows = []
rng = np.random.default_rng(1)
idx = jnp.asarray(rng.integers(0, V, (B, T)), jnp.int32)
tgt = jnp.asarray(rng.integers(0, V, (B, T)), jnp.int32)
for policy in ("none", "nothing_saveable", "dots_saveable"):
    p = init()
    m = {k: jnp.zeros_like(x) for k, x in p.items()}
    v = {k: jnp.zeros_like(x) for k, x in p.items()}
    f = make_step(policy)
    compiled = f.lower(p, m, v, idx, tgt).compile()
    ma = compiled.memory_analysis()
    temp = ma.temp_size_in_bytes
    peak = ma.argument_size_in_bytes + ma.output_size_in_bytes + temp - ma.alias_size_in_bytes
    times = []
    for it in range(reps + 2):
        t0 = time.perf_counter()
        loss, p, m, v = compiled(p, m, v, idx, tgt)
        loss.block_until_ready()
        if it >= 2:
            times.append(time.perf_counter() - t0)
    ms = 1e3 * statistics.median(times)
    print(f"jax {policy} temp {temp} peak {peak} ms {ms:.1f} loss {float(loss):.4f}", flush=True)
    rows.append((policy, temp, peak, ms))

print(f"\n| JAX {jax.__version__} (XLA:CPU) | temp MiB | argument + output + temp - alias MiB "
      f"| ms/step (median of {reps}) | x no remat |")
print("|---|---|---|---|---|")
for policy, temp, peak, ms in rows:
    name = "no remat" if policy == "none" else f"jax.checkpoint per block, {policy}"
    print(f"| {name} | {temp / 2**20:.1f} | {peak / 2**20:.1f} | {ms:.1f} | {ms / rows[0][3]:.2f} |")
