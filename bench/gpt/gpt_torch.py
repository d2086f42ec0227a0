"""gpt_torch.py — the PyTorch side of the GPT side-by-side (bench/gpt, issue 10 item 6).

The model of gpt_spec.md with torch.nn.functional (layer_norm, scaled_dot_product_attention
with is_causal, gelu(approximate="tanh"), cross_entropy), the LM head tied to wte, and
torch.optim.AdamW (decay 0.1 on the rank-2 parameters, none on the rest) with the warmup +
cosine schedule set per step. Eager by default; --compile runs torch.compile on the loss
(forward and backward through AOTAutograd) and on the optimiser step (lr as a tensor so a
new value does not recompile). Loads init.safetensors and batches.bin (make_inputs.py),
trains --steps steps, writes OUT/losses.csv (step,loss,ms) and OUT/summary.json.

Memory: PyTorch's CPU allocator keeps no statistics, so the figure is the process's peak
resident set (getrusage ru_maxrss) during training minus its resident set just before the
first step: what training added to the process, Python and the allocator's caching
included. It is a measurement of the process, not of tensors, and says so in its name.

On a GPU (GPT_TORCH_DEVICE=cuda): GPT_TORCH_PRECISION=highest (exact f32 products, the
default, as kiln's) or tf32 (torch.backends.cuda.matmul.allow_tf32), GPT_TORCH_DTYPE=bf16
for mixed precision by torch.autocast (parameters and AdamW state f32, products and
activations bf16, layer norms, softmax and the loss f32 as autocast keeps them); the memory
figure is then torch.cuda.max_memory_allocated during training (peak_bytes), the tensors'
bytes as the caching allocator counts them.

Usage: gpt_torch.py --init F --batches F --batch B --steps N --out DIR [--compile --lr
       --warmup --clip --threads]
"""
import contextlib
import os
import resource
import sys
import time

import gpt_common as gc

compile_it = "--compile" in sys.argv
if compile_it:
    sys.argv.remove("--compile")
args = gc.parse_args(__doc__)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(args.threads)
dev = os.environ.get("GPT_TORCH_DEVICE", "cpu")
precision = os.environ.get("GPT_TORCH_PRECISION", "highest")
dtype_name = os.environ.get("GPT_TORCH_DTYPE", "f32")
if dtype_name not in ("f32", "bf16"):
    raise SystemExit(f"GPT_TORCH_DTYPE={dtype_name}: f32 or bf16 (f16 would need a GradScaler)")
if dev == "cuda":
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
init, cfg = gc.load_init(args.init)
L, H, C, T = cfg["layers"], cfg["heads"], cfg["channels"], cfg["context"]
B = args.batch
batches = torch.from_numpy(gc.load_batches(args.batches, args.steps, B, T).astype(np.int64)).to(dev)
params = {k: torch.tensor(a, requires_grad=True, device=dev) for k, a in init.items()}


def autocast():
    if dtype_name == "bf16":
        return torch.autocast(device_type=dev, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def loss_fn(p, idx, tgt):
    Tn = idx.shape[1]
    hs = C // H
    x = p["wte"][idx] + p["wpe"][:Tn]
    for l in range(L):
        w = lambda n: p[f"h.{l}.{n}"]  # noqa: E731
        a = F.layer_norm(x, (C,), w("ln_1.weight"), w("ln_1.bias"), 1e-5)
        qkv = a @ w("attn.c_attn.weight") + w("attn.c_attn.bias")
        q, k, v = (t.view(B, Tn, H, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(B, Tn, C)
        x = x + (y @ w("attn.c_proj.weight") + w("attn.c_proj.bias"))
        m = F.layer_norm(x, (C,), w("ln_2.weight"), w("ln_2.bias"), 1e-5)
        m = F.gelu(m @ w("mlp.c_fc.weight") + w("mlp.c_fc.bias"), approximate="tanh")
        x = x + (m @ w("mlp.c_proj.weight") + w("mlp.c_proj.bias"))
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
    logits = x @ p["wte"].t()
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))


decay = [t for k, t in params.items() if gc.decays(k, t.shape)]
no_decay = [t for k, t in params.items() if not gc.decays(k, t.shape)]
lr0 = torch.tensor(args.lr) if compile_it else args.lr
opt = torch.optim.AdamW([{"params": decay, "weight_decay": gc.WD},
                         {"params": no_decay, "weight_decay": 0.0}],
                        lr=lr0, betas=(gc.B1, gc.B2), eps=gc.EPS)
lossf = torch.compile(loss_fn) if compile_it else loss_fn
stepf = torch.compile(opt.step) if compile_it else opt.step
plist = list(params.values())


def rss_now():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


rss_before = rss_now()
if dev == "cuda":
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
losses, ms = [], []
t_first = time.perf_counter()
for s in range(args.steps):
    lr = gc.lr_at(s, args.steps, args.lr, args.warmup)
    for g in opt.param_groups:
        if compile_it:
            g["lr"].fill_(lr)
        else:
            g["lr"] = lr
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with autocast():
        loss = lossf(params, batches[s, :, :-1], batches[s, :, 1:])
    loss.backward()
    if args.clip:
        torch.nn.utils.clip_grad_norm_(plist, 1.0)
    stepf()
    losses.append(loss.item())  # waits for the step's kernels, the optimiser's too
    ms.append((time.perf_counter() - t0) * 1e3)
    if s == 0:
        first_s = time.perf_counter() - t_first
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

side = "torch.compile" if compile_it else "torch eager"
gpu = {"peak_bytes": torch.cuda.max_memory_allocated()} if dev == "cuda" else {}
gc.write_results(args.out, side, losses, ms, {
    **gpu, "device": dev, "dtype": dtype_name, "matmul_precision": precision,
    "version": torch.__version__, "threads": args.threads,
    "parameters": sum(t.numel() for t in plist),
    "first_step_s": round(first_s, 2),
    "gflop_per_step": round(gc.flops_per_step(B, T, L, C) / 1e9, 2),
    "rss_before_bytes": rss_before, "peak_rss_bytes": peak,
    "peak_rss_delta_bytes": max(0, peak - rss_before),
})
