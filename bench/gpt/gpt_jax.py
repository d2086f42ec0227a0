"""gpt_jax.py — the JAX side of the GPT side-by-side (bench/gpt, issue 10 item 6).

The model of gpt_spec.md in jax.numpy (pre-LayerNorm GPT-2, causal attention, GELU-tanh,
LM head tied to wte), AdamW with PyTorch's semantics and the warmup + cosine schedule
written out by hand (optax is not installed), one jax.jit step (loss, gradients, update)
with the parameters and both moments donated (donate_argnums). Loads init.safetensors and
batches.bin (make_inputs.py), trains --steps steps, writes OUT/losses.csv (step,loss,ms)
and OUT/summary.json, and prints the median ms/step after warm-up and the compiled step's
memory_analysis() (argument, output, temp and alias bytes).

Usage: gpt_jax.py --init F --batches F --batch B --steps N --out DIR [--lr --warmup
       --clip --threads]

GPT_JAX_DTYPE=bf16 (or f16) trains in mixed precision as jmp's policy and torch.autocast
do: parameters, gradients and the optimiser state stay f32; each step casts the
parameters to the 16-bit dtype, and the activations, products (f32 accumulation, 16-bit
results) and saved values are 16-bit, while layer norm's statistics, the softmax and the
loss are computed in f32 (their results cast back). Default f32.
"""
import os
import time

import gpt_common as gc

args = gc.parse_args(__doc__)  # before jax is imported: it pins the cores

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

# GPT_JAX_PLATFORM=cuda runs it on a GPU (scripts: .gpu/), there with exact f32 matmuls
# by default (GPT_JAX_PRECISION: XLA's GPU default would be TF32), as kiln's default is
platform = os.environ.get("GPT_JAX_PLATFORM", "cpu")
jax.config.update("jax_platforms", platform)
if platform != "cpu":
    jax.config.update("jax_default_matmul_precision",
                      os.environ.get("GPT_JAX_PRECISION", "highest"))

# the compute dtype of GPT_JAX_DTYPE (None: f32 throughout)
half = {"bf16": jnp.bfloat16, "f16": jnp.float16}.get(os.environ.get("GPT_JAX_DTYPE", "f32"))

init, cfg = gc.load_init(args.init)
L, H, C, T = cfg["layers"], cfg["heads"], cfg["channels"], cfg["context"]
B = args.batch
batches = gc.load_batches(args.batches, args.steps, B, T)
names = list(init)


def layer_norm(x, w, b):
    dt = x.dtype  # mixed precision: the statistics in f32, the result in x's dtype
    x = x.astype(jnp.float32)
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return ((x - mu) * jax.lax.rsqrt(var + 1e-5)).astype(dt) * w + b


def gelu_tanh(u):
    return 0.5 * u * (1.0 + jnp.tanh(np.sqrt(2.0 / np.pi) * (u + 0.044715 * u ** 3)))


def block(x, pl):
    Bn, Tn = x.shape[0], x.shape[1]
    hs = C // H
    causal = jnp.tril(jnp.ones((Tn, Tn), dtype=bool))
    w = lambda n: pl[n]  # noqa: E731
    a = layer_norm(x, w("ln_1.weight"), w("ln_1.bias"))
    qkv = a @ w("attn.c_attn.weight") + w("attn.c_attn.bias")
    q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(Bn, Tn, H, hs).transpose(0, 2, 1, 3)
               for i in range(3))
    att = (q @ k.transpose(0, 1, 3, 2)).astype(jnp.float32) / np.sqrt(hs).astype(np.float32)
    att = jax.nn.softmax(jnp.where(causal, att, -jnp.inf), axis=-1).astype(q.dtype)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(Bn, Tn, C)
    x = x + (y @ w("attn.c_proj.weight") + w("attn.c_proj.bias"))
    m = layer_norm(x, w("ln_2.weight"), w("ln_2.bias"))
    m = gelu_tanh(m @ w("mlp.c_fc.weight") + w("mlp.c_fc.bias"))
    return x + (m @ w("mlp.c_proj.weight") + w("mlp.c_proj.bias"))


# GPT_JAX_REMAT=POLICY: each block a jax.checkpoint with that policy of
# jax.checkpoint_policies (nothing_saveable, dots_saveable, ...; the offload ones,
# offload_dot_with_no_batch_dims, from "device" to "pinned_host"), as kiln train --remat
remat = os.environ.get("GPT_JAX_REMAT", "")
if remat:
    cp = jax.checkpoint_policies
    policy = (getattr(cp, remat)("device", "pinned_host") if remat.startswith("offload")
              else getattr(cp, remat))
    block = jax.checkpoint(block, policy=policy)


def loss_fn(p, idx, tgt):
    if half is not None:
        p = {k: x.astype(half) for k, x in p.items()}
    Bn, Tn = idx.shape  # a micro-batch's rows (GPT_JAX_MICRO), B otherwise
    x = p["wte"][idx] + p["wpe"][:Tn]
    for l in range(L):
        x = block(x, {n[len(f"h.{l}."):]: a for n, a in p.items() if n.startswith(f"h.{l}.")})
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    logits = (x @ p["wte"].T).astype(jnp.float32)
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, tgt[..., None], axis=-1)[..., 0]
    return jnp.mean(lse - picked)


# GPT_JAX_MICRO=k: gradient accumulation as JAX users write it (a lax.scan over k
# micro-batches whose carry sums the loss and the gradients), the program kiln train
# --micro-batches k builds (bench/gpt/micro.sh)
micro = int(os.environ.get("GPT_JAX_MICRO", "1"))


def loss_and_grads(p, idx, tgt):
    if micro == 1:
        return jax.value_and_grad(loss_fn)(p, idx, tgt)

    def body(carry, xs):
        loss, g = jax.value_and_grad(loss_fn)(p, xs[0], xs[1])
        return (carry[0] + loss, jax.tree_util.tree_map(jnp.add, carry[1], g)), None

    split = lambda x: x.reshape((micro, x.shape[0] // micro) + x.shape[1:])  # noqa: E731
    zero = (jnp.float32(0), jax.tree_util.tree_map(jnp.zeros_like, p))
    (loss, g), _ = jax.lax.scan(body, zero, (split(idx), split(tgt)))
    return loss / micro, jax.tree_util.tree_map(lambda x: x / micro, g)


def step(p, m, v, tokens, lr, t):
    """One training step; t is the 1-based step count (bias correction)."""
    idx, tgt = tokens[:, :-1], tokens[:, 1:]
    loss, g = loss_and_grads(p, idx, tgt)
    if args.clip:
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in g.values()))
        scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        g = {k: x * scale for k, x in g.items()}
    bc1 = 1.0 - gc.B1 ** t
    bc2 = 1.0 - gc.B2 ** t
    np_, nm, nv = {}, {}, {}
    for k in p:
        w = p[k] * (1.0 - lr * gc.WD) if gc.decays(k, p[k].shape) else p[k]
        nm[k] = gc.B1 * m[k] + (1.0 - gc.B1) * g[k]
        nv[k] = gc.B2 * v[k] + (1.0 - gc.B2) * jnp.square(g[k])
        denom = jnp.sqrt(nv[k]) / jnp.sqrt(bc2) + gc.EPS
        np_[k] = w - (lr / bc1) * nm[k] / denom
    return loss, np_, nm, nv


# GPT_JAX_OFFLOAD=opt (or params): the AdamW moments (and the parameters) kept in the
# device's pinned_host memory kind between steps, brought to the device inside the step
# and put back (jit's in/out shardings with a memory kind): the layout of kiln train
# --offload-optimizer / --offload-params (bench/gpt/micro.sh)
offload = os.environ.get("GPT_JAX_OFFLOAD", "")
if offload:
    from jax.sharding import SingleDeviceSharding
    dev0 = jax.devices()[0]
    on_host = SingleDeviceSharding(dev0, memory_kind="pinned_host")
    on_dev = SingleDeviceSharding(dev0, memory_kind="device")
    host_p = offload == "params"
    plain_step = step

    def step(p, m, v, tokens, lr, t):  # noqa: F811
        fetch = lambda d: {k: jax.device_put(x, on_dev) for k, x in d.items()}  # noqa: E731
        put = lambda d: {k: jax.device_put(x, on_host) for k, x in d.items()}  # noqa: E731
        loss, np_, nm, nv = plain_step(fetch(p) if host_p else p, fetch(m), fetch(v), tokens, lr, t)
        return loss, put(np_) if host_p else np_, put(nm), put(nv)

    tree = lambda sh: {k: sh for k in names}  # noqa: E731
    step_jit = jax.jit(step, donate_argnums=(0, 1, 2),
                       in_shardings=(tree(on_host if host_p else on_dev), tree(on_host),
                                     tree(on_host), on_dev, on_dev, on_dev),
                       out_shardings=(on_dev, tree(on_host if host_p else on_dev), tree(on_host),
                                      tree(on_host)))
else:
    step_jit = jax.jit(step, donate_argnums=(0, 1, 2))
p = {k: jnp.asarray(init[k]) for k in names}
m = {k: jnp.zeros_like(x) for k, x in p.items()}
v = {k: jnp.zeros_like(x) for k, x in p.items()}
if offload:
    m, v = jax.device_put(m, on_host), jax.device_put(v, on_host)
    if host_p:
        p = jax.device_put(p, on_host)
tok0 = jnp.asarray(batches[0])
t_compile = time.perf_counter()
compiled = step_jit.lower(p, m, v, tok0, jnp.float32(args.lr), jnp.float32(1)).compile()
compile_s = time.perf_counter() - t_compile
ma = compiled.memory_analysis()

losses, ms = [], []
for s in range(args.steps):
    tok = jnp.asarray(batches[s])
    t0 = time.perf_counter()
    loss, p, m, v = compiled(p, m, v, tok, jnp.float32(gc.lr_at(s, args.steps, args.lr, args.warmup)),
                             jnp.float32(s + 1))
    losses.append(float(loss))  # waits for the step
    ms.append((time.perf_counter() - t0) * 1e3)

n_params = sum(int(np.prod(x.shape)) for x in init.values())
gc.write_results(args.out, "jax", losses, ms, {
    "version": jax.__version__, "threads": args.threads, "parameters": n_params,
    "dtype": os.environ.get("GPT_JAX_DTYPE", "f32"), "platform": platform, "micro_batches": micro,
    "remat": remat or "none",
    "matmul_precision": os.environ.get("GPT_JAX_PRECISION", "highest"),
    "compile_s": round(compile_s, 2),
    "gflop_per_step": round(gc.flops_per_step(B, T, L, C) / 1e9, 2),
    "argument_bytes": ma.argument_size_in_bytes, "output_bytes": ma.output_size_in_bytes,
    "temp_bytes": ma.temp_size_in_bytes, "alias_bytes": ma.alias_size_in_bytes,
    "host_temp_bytes": getattr(ma, "host_temp_size_in_bytes", 0),
    "host_argument_bytes": getattr(ma, "host_argument_size_in_bytes", 0),
    "offload": offload or "none",
    # what the step holds at once: inputs + outputs + temporaries - donated buffers reused
    "peak_bytes": (ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
                   - ma.alias_size_in_bytes),
})
