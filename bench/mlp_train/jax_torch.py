"""jax_torch.py — the JAX and PyTorch sides of bench/mlp_train (issue 9, "Figures").

MLP 784-512-512-10 (ReLU), batch 256, mean softmax cross-entropy, AdamW (lr 1e-3, betas
0.9/0.999, eps 1e-8, weight decay 1e-2), f32, from the initial weights and the batch that
bench_mlp_train wrote to DIR:

- JAX: jax.jit of value_and_grad + an AdamW update written in jnp (optax's arrangement;
  optax is not installed), params and optimiser state donated (donate_argnums);
  compiled.memory_analysis() gives its peak (argument + output + temp - alias).
- PyTorch eager: torch.optim.AdamW; and torch.compile of the loss (forward and backward
  through AOTAutograd) and of the optimiser step, when it compiles here.

Checks kiln's loss and gradients at step 0, and its parameters after one step, against
JAX's (max abs difference and the largest one relative to the array's largest magnitude).
Given kiln's figures file (bench_mlp_train's "name value" lines), prints the side-by-side
Markdown table of bench/RESULTS.md. Usage: jax_torch.py DIR KILN_FIGURES [reps] [threads]
Run by bench/mlp_train/run.sh inside bench/.venv; the library never needs Python.
"""
import os
import statistics
import sys
import time

import numpy as np

B, DIMS = 256, [784, 512, 512, 10]
NAMES = ["w1", "b1", "w2", "b2", "w3", "b3"]
LR, B1, B2, EPS, WD, WARMUP = 1e-3, 0.9, 0.999, 1e-8, 1e-2, 5

d, figures_path = sys.argv[1], sys.argv[2]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 30
threads = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
# XLA's CPU client sizes its thread pool from the cores it may run on: pin to `threads`.
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))

import jax  # noqa: E402  (after the affinity is set)
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

jax.config.update("jax_platforms", "cpu")
torch.set_num_threads(threads)


def shapes():
    for i in range(3):
        yield (DIMS[i], DIMS[i + 1])
        yield (DIMS[i + 1],)


def load(name, dtype, shape):
    return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(shape)


init = [load(f"init_{n}.f32", np.float32, s) for n, s in zip(NAMES, shapes())]
x = load("x.f32", np.float32, (B, DIMS[0]))
y = load("y.i32", np.int32, (B,))
kiln = {}
for line in open(figures_path):
    k, v = line.split()
    kiln[k] = v if k.endswith("_library") else float(v)
flops = kiln["step_gemm_MFLOP"] * 1e6


def timed(step_once):
    """Median ms of `reps` steps after WARMUP, each ending when its loss is on the host."""
    t = []
    for s in range(1, WARMUP + reps + 1):
        t0 = time.perf_counter()
        step_once(s)
        t.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(t[WARMUP:])


# ---- JAX ----
def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p[0] + p[1])
    h = jax.nn.relu(h @ p[2] + p[3])
    logits = h @ p[4] + p[5]
    picked = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)


def jax_step(p, m, v, x, y, lr, t):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    t = t.astype(jnp.float32)
    m = [B1 * mi + (1 - B1) * gi for mi, gi in zip(m, g)]
    v = [B2 * vi + (1 - B2) * gi * gi for vi, gi in zip(v, g)]
    c1, c2 = 1 - B1**t, 1 - B2**t
    p = [pi - lr * ((mi / c1) / (jnp.sqrt(vi / c2) + EPS) + WD * pi)
         for pi, mi, vi in zip(p, m, v)]
    return loss, p, m, v


def fresh_jax():
    p = [jnp.asarray(w) for w in init]
    return p, [jnp.zeros_like(w) for w in p], [jnp.zeros_like(w) for w in p]


jx, jy = jnp.asarray(x), jnp.asarray(y)
# First call of a fresh jit (trace + XLA compile + the step), before anything else has
# compiled this computation, with the backend already up (jnp.asarray above).
t0 = time.perf_counter()
first_loss = jax.jit(jax_step, donate_argnums=(0, 1, 2))(*fresh_jax(), jx, jy,
                                                         jnp.float32(LR), jnp.int32(1))[0]
float(first_loss)
jax_first_ms = (time.perf_counter() - t0) * 1e3

step_jit = jax.jit(jax_step, donate_argnums=(0, 1, 2))
p, m, v = fresh_jax()
compiled = step_jit.lower(p, m, v, jx, jy, jnp.float32(LR), jnp.int32(1)).compile()
ma = compiled.memory_analysis()
jax_peak = (ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
            - ma.alias_size_in_bytes)

# Agreement with kiln: loss and gradients at step 0, parameters after one step.
loss0, g0 = jax.jit(jax.value_and_grad(loss_fn))(p, jx, jy)
_, p1, _, _ = step_jit(*fresh_jax(), jx, jy, jnp.float32(LR), jnp.int32(1))


def diff(kiln_files, ref):
    worst_abs = worst_rel = 0.0
    for f, r in zip(kiln_files, ref):
        r = np.asarray(r, dtype=np.float64)
        k = np.fromfile(os.path.join(d, f), dtype=np.float32).reshape(r.shape)
        a = float(np.max(np.abs(k - r))) if r.size else 0.0
        worst_abs = max(worst_abs, a)
        worst_rel = max(worst_rel, a / max(float(np.max(np.abs(r))), 1e-30))
    return worst_abs, worst_rel


agree = {
    "JAX: loss at step 0": diff(["kiln_loss.f32"], [np.asarray(loss0).reshape(())]),
    "JAX: gradients at step 0": diff([f"kiln_grad_{n}.f32" for n in NAMES], g0),
    "JAX: parameters after one AdamW step": diff([f"kiln_step1_{n}.f32" for n in NAMES], p1),
}

state = list(fresh_jax())


def jax_once(s):
    loss, state[0], state[1], state[2] = step_jit(*state, jx, jy, jnp.float32(LR), jnp.int32(s))
    float(loss)


jax_ms = timed(jax_once)

# ---- PyTorch ----
tx, ty = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))


def torch_loss(p, x, y):
    h = torch.relu(x @ p[0] + p[1])
    h = torch.relu(h @ p[2] + p[3])
    return torch.nn.functional.cross_entropy(h @ p[4] + p[5], y)


def torch_setup(compile_it):
    params = [torch.tensor(w, requires_grad=True) for w in init]
    opt = torch.optim.AdamW(params, lr=LR, betas=(B1, B2), eps=EPS, weight_decay=WD)
    lossf = torch.compile(torch_loss) if compile_it else torch_loss
    stepf = torch.compile(opt.step) if compile_it else opt.step

    def once(s):
        opt.zero_grad(set_to_none=True)
        loss = lossf(params, tx, ty)
        loss.backward()
        stepf()
        loss.item()

    return params, once


params, torch_once = torch_setup(False)
torch_once(0)
tparams0 = [torch.tensor(w, requires_grad=True) for w in init]
torch_loss(tparams0, tx, ty).backward()
agree["PyTorch: gradients at step 0"] = diff([f"kiln_grad_{n}.f32" for n in NAMES],
                                                 [t.grad.numpy() for t in tparams0])
torch_ms = timed(torch_once)

try:
    t0 = time.perf_counter()
    _, compiled_once = torch_setup(True)
    compiled_once(0)
    compile_s = time.perf_counter() - t0
    torch_compiled_ms = timed(compiled_once)
    compiled_note = f"compiled in {compile_s:.0f} s"
except Exception as e:  # report why, do not fail the benchmark
    torch_compiled_ms = None
    compiled_note = f"did not run: {type(e).__name__}: {str(e).splitlines()[0][:120]}"


def mib(b):
    return f"{b / 2**20:.2f} MiB"


def gf(ms):
    return f"{flops / (ms * 1e-3) / 1e9:.0f}"


k_ms = kiln["kiln_step_ms"]
print(f"# jax {jax.__version__}, torch {torch.__version__}, {threads} threads each; "
      f"sgemm 1024^3 ceiling {kiln['sgemm_1024_GFLOPs']:.0f} GFLOP/s "
      f"({kiln.get('sgemm_1024_library', 'OpenBLAS')}); "
      f"step's matrix products {flops / 1e6:.0f} MFLOP")
print("| side | ms/step (median) | GFLOP/s | vs JAX | planned / compiled peak |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| kiln ({int(kiln['kiln_kernels'])} kernels) | {k_ms:.2f} | {gf(k_ms)} | "
      f"{k_ms / jax_ms:.2f}x | {mib(kiln['kiln_peak_bytes'])} |")
print(f"| JAX jit, donated | {jax_ms:.2f} | {gf(jax_ms)} | 1.00x | {mib(jax_peak)} |")
print(f"| PyTorch eager | {torch_ms:.2f} | {gf(torch_ms)} | {torch_ms / jax_ms:.2f}x | |")
if torch_compiled_ms is not None:
    print(f"| torch.compile ({compiled_note}) | {torch_compiled_ms:.2f} | "
          f"{gf(torch_compiled_ms)} | {torch_compiled_ms / jax_ms:.2f}x | |")
else:
    print(f"| torch.compile | {compiled_note} | | | |")
print()
print(f"kiln peak: arguments {mib(kiln['kiln_argument_bytes'])} + outputs "
      f"{mib(kiln['kiln_output_bytes'])} + temp {mib(kiln['kiln_temp_bytes'])} (aliased "
      f"{mib(kiln['kiln_alias_bytes'])}, donations unused {int(kiln['kiln_donations_unused'])}); "
      f"JAX: argument {mib(ma.argument_size_in_bytes)} + output {mib(ma.output_size_in_bytes)} "
      f"+ temp {mib(ma.temp_size_in_bytes)} - alias {mib(ma.alias_size_in_bytes)}")
print()
print(f"First call of the training step (trace + compile + one step, empty caches): kiln "
      f"{kiln['kiln_first_call_ms']:.0f} ms (compile {kiln['kiln_compile_ms']:.0f} ms), "
      f"JAX {jax_first_ms:.0f} ms")
print()
print("| kiln against | max abs diff | max abs diff / max abs value |")
print("| --- | ---: | ---: |")
for what, (a, r) in agree.items():
    print(f"| {what} | {a:.2e} | {r:.2e} |")
