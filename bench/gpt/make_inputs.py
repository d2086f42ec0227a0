"""make_inputs.py — the shared inputs of the GPT side-by-side (bench/gpt, issue 10 item 6).

Writes, for one configuration, into OUT:
  init.safetensors  the parameters initialised as the shared spec says (gpt_spec.md,
                    "Initialisation": normal(0, 0.02) weights, c_proj weights
                    normal(0, 0.02/sqrt(2L)), zero biases, LayerNorm weights 1), from a seeded
                    NumPy generator, with the spec's "__metadata__" (format kiln-gpt, vocab,
                    context, layers, heads, channels, step 0, seed);
  batches.bin       raw little-endian int32 [steps, B, T+1]: B random windows of T+1 bytes
                    a step from the training split (the first 90% of the corpus's bytes).
Every side (kiln, JAX, PyTorch) loads these two files, so they start from the same weights
and see the same batches.

Usage: make_inputs.py OUT --batch B --context T --layers L --heads H --channels C
                      --steps N [--seed S] [--corpus FILE]
"""
import argparse
import math
import os

import numpy as np
from safetensors.numpy import save_file

V = 256


def param_shapes(T, L, C):
    """The spec's parameters in its order: name -> shape."""
    s = {"wte": (V, C), "wpe": (T, C)}
    for l in range(L):
        h = f"h.{l}."
        s.update({
            h + "ln_1.weight": (C,), h + "ln_1.bias": (C,),
            h + "attn.c_attn.weight": (C, 3 * C), h + "attn.c_attn.bias": (3 * C,),
            h + "attn.c_proj.weight": (C, C), h + "attn.c_proj.bias": (C,),
            h + "ln_2.weight": (C,), h + "ln_2.bias": (C,),
            h + "mlp.c_fc.weight": (C, 4 * C), h + "mlp.c_fc.bias": (4 * C,),
            h + "mlp.c_proj.weight": (4 * C, C), h + "mlp.c_proj.bias": (C,),
        })
    s["ln_f.weight"] = (C,)
    s["ln_f.bias"] = (C,)
    return s


def init_params(T, L, C, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in param_shapes(T, L, C).items():
        if name.endswith("c_proj.weight"):
            a = rng.normal(0.0, 0.02 / math.sqrt(2 * L), shape)
        elif name.startswith("ln") or ".ln_" in name:
            a = np.ones(shape) if name.endswith("weight") else np.zeros(shape)
        elif name.endswith("bias"):
            a = np.zeros(shape)
        else:
            a = rng.normal(0.0, 0.02, shape)
        out[name] = np.ascontiguousarray(a, dtype=np.float32)
    return out


def make_batches(corpus, steps, B, T, seed):
    data = np.frombuffer(open(corpus, "rb").read(), dtype=np.uint8)
    train = data[: len(data) - len(data) // 10]  # the last 10% is the validation split
    if len(train) < T + 1:
        raise SystemExit(f"make_inputs: {corpus}: {len(train)} training bytes, fewer than T+1 = {T + 1}")
    rng = np.random.default_rng(seed + 1)  # not the init's stream
    starts = rng.integers(0, len(train) - T, size=(steps, B))
    idx = starts[..., None] + np.arange(T + 1)
    return train[idx].astype("<i4")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--context", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--channels", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--corpus", default="/usr/share/common-licenses/GPL-3")
    a = ap.parse_args()
    if a.channels % a.heads:
        raise SystemExit(f"make_inputs: channels {a.channels} is not a multiple of heads {a.heads}")
    os.makedirs(a.out, exist_ok=True)
    meta = {"format": "kiln-gpt", "vocab": str(V), "context": str(a.context),
            "layers": str(a.layers), "heads": str(a.heads), "channels": str(a.channels),
            "step": "0", "seed": str(a.seed)}
    save_file(init_params(a.context, a.layers, a.channels, a.seed),
              os.path.join(a.out, "init.safetensors"), metadata=meta)
    make_batches(a.corpus, a.steps, a.batch, a.context, a.seed).tofile(
        os.path.join(a.out, "batches.bin"))


if __name__ == "__main__":
    main()
