"""gpt_common.py — what the JAX and PyTorch sides of bench/gpt share: the command line
(the flags of `kiln train` that matter here), loading init.safetensors and batches.bin, the
learning-rate schedule, weight-decay groups, and writing losses.csv / summary.json."""
import argparse
import json
import math
import os
import statistics

import numpy as np

B1, B2, EPS, WD = 0.9, 0.95, 1e-8, 0.1
WARM_STEPS = 5  # steps left out of the ms/step median (compilation, first touches)


def parse_args(doc):
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--init", required=True, help="init.safetensors (make_inputs.py)")
    ap.add_argument("--batches", required=True, help="batches.bin: int32 [steps, B, T+1]")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=None, help="default: steps / 10")
    ap.add_argument("--clip", action="store_true", help="clip gradients by global norm 1.0")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", required=True, help="folder for losses.csv and summary.json")
    a = ap.parse_args()
    if a.warmup is None:
        a.warmup = max(1, a.steps // 10)
    # XLA's CPU client and PyTorch's pools size themselves from the cores they may run on.
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: a.threads]))
    os.makedirs(a.out, exist_ok=True)
    return a


def load_init(path):
    """(params name -> float32 array, config dict) from a kiln-gpt safetensors file."""
    from safetensors import safe_open

    with safe_open(path, framework="numpy") as f:
        meta = f.metadata() or {}
        params = {k: f.get_tensor(k) for k in f.keys() if not k.startswith("opt.")}
    if meta.get("format") != "kiln-gpt":
        raise SystemExit(f"{path}: metadata format is {meta.get('format')!r}, not 'kiln-gpt'")
    cfg = {k: int(meta[k]) for k in ("vocab", "context", "layers", "heads", "channels")}
    return params, cfg


def load_batches(path, steps, B, T):
    n = os.path.getsize(path) // 4
    if n % (B * (T + 1)) or n // (B * (T + 1)) < steps:
        raise SystemExit(f"{path}: {n} int32 values are not >= {steps} steps of [{B}, {T + 1}]")
    return np.fromfile(path, dtype="<i4").reshape(-1, B, T + 1)[:steps]


def lr_at(s, steps, lr, warmup):
    """The spec's schedule at 0-based step s: linear warmup, then cosine to 0.1 lr."""
    if s < warmup:
        return lr * (s + 1) / warmup
    min_lr = 0.1 * lr
    frac = (s - warmup) / max(1, steps - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * frac)) * (lr - min_lr)


def decays(name, shape):
    """Weight decay on the rank-2 parameters only (wte, wpe, every *.weight of rank 2)."""
    return len(shape) == 2


def flops_per_step(B, T, L, C, V=256):
    """Matrix-product FLOPs of forward + backward (3x forward), attention included."""
    per_layer = 2 * B * T * C * (3 * C + C + 4 * C + 4 * C) + 2 * 2 * B * T * T * C
    return 3 * (L * per_layer + 2 * B * T * C * V)


def write_results(out, side, losses, ms, extra):
    with open(os.path.join(out, "losses.csv"), "w") as f:
        f.write("step,loss,ms\n")
        for i, (l, t) in enumerate(zip(losses, ms)):
            f.write(f"{i},{l:.7f},{t:.3f}\n")
    timed = ms[WARM_STEPS:] if len(ms) > WARM_STEPS + 2 else ms
    summary = {"side": side, "steps": len(losses), "ms_per_step_median": statistics.median(timed),
               "loss_first": losses[0], "loss_last": losses[-1]}
    summary.update(extra)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{side}: loss {losses[0]:.5f} -> {losses[-1]:.5f} over {len(losses)} steps; "
          f"{summary['ms_per_step_median']:.1f} ms/step (median of steps {WARM_STEPS}..)")
    for k, v in extra.items():
        print(f"  {k}: {v}")
    return summary
