"""plan_jax.py — the JAX side of bench/bench_plan.c: the programs of examples/models.h
written in jax.numpy, compiled for the CPU, and their compiled.memory_analysis() printed
as "name key value" lines (bytes). Given bench_plan's output (a file of the same kind of
lines) as its argument, it prints both side by side as the Markdown table of
bench/RESULTS.md instead. Run by bench/run_plan.sh inside the benchmark's virtual
environment; the library and its tests never need Python.

total = argument + output + temp - alias: the bytes a call holds at its peak when the
arguments, the outputs and XLA's temporary buffer are all live, as kiln's planned peak
counts them."""
import sys

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_platforms", "cpu")
f32 = jnp.float32


def spec(*shape):
    return jax.ShapeDtypeStruct(shape, f32)


def layer_norm(x, g=None, b=None):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    y = xc / jnp.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5)
    return y if g is None else y * g + b


T, D, H, F = 256, 256, 4, 1024


def transformer(x, g1, b1, wq, wk, wv, wo, g2, b2, w1, bf1, w2, bf2):
    def heads(t):
        return t.reshape(T, H, D // H).transpose(1, 0, 2)

    h = layer_norm(x, g1, b1)
    q, k, v = heads(h @ wq), heads(h @ wk), heads(h @ wv)
    s = jnp.einsum("htd,hsd->hts", q, k) * (1.0 / np.sqrt(D // H))
    causal = jnp.arange(T)[:, None] >= jnp.arange(T)[None, :]
    s = jnp.where(causal, s, f32(-1e9))
    p = jax.nn.softmax(s, axis=-1)
    a = jnp.einsum("hts,hsd->htd", p, v).transpose(1, 0, 2).reshape(T, D)
    x1 = x + a @ wo
    m = jax.nn.gelu(layer_norm(x1, g2, b2) @ w1 + bf1, approximate=True)
    return x1 + (m @ w2 + bf2)


def mlp(x, w1, b1, w2, b2, w3, b3):
    h = jax.nn.relu(x @ w1 + b1)
    h = jax.nn.relu(h @ w2 + b2)
    return h @ w3 + b3


def branches(x, v, *ws):
    r = [jnp.tanh(x @ w) @ v for w in ws]
    return jnp.concatenate(r, axis=1).sum(axis=1)


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def chain(x, y):
    v = x * f32(1.5) + f32(0.5)
    v = jnp.maximum(v, f32(0)) * x
    v = jnp.abs(v - f32(0.25))
    return jnp.minimum(v, f32(4)) * f32(0.75) + y


def adam(p, m, v, g):
    m = f32(0.9) * m + f32(0.1) * g
    v = f32(0.999) * v + f32(0.001) * (g * g)
    return p - f32(1e-3) * m / (jnp.sqrt(v) + f32(1e-8)), m, v


n = 16 << 20
na = 4 << 20
programs = [
    ("transformer", transformer,
     [spec(T, D), spec(D), spec(D), spec(D, D), spec(D, D), spec(D, D), spec(D, D), spec(D),
      spec(D), spec(D, F), spec(F), spec(F, D), spec(D)], ()),
    ("mlp", mlp, [spec(256, 784), spec(784, 1024), spec(1024), spec(1024, 1024), spec(1024),
                  spec(1024, 10), spec(10)], ()),
    ("branches", branches, [spec(256, 256), spec(256, 1)] + [spec(256, 256)] * 8, ()),
    ("softmax", softmax, [spec(4096, 4096)], ()),
    ("layer_norm", layer_norm, [spec(4096, 4096)], ()),
    ("chain", chain, [spec(n), spec(n)], ()),
    ("chain_donate_x", chain, [spec(n), spec(n)], (0,)),
    ("adam", adam, [spec(na)] * 4, ()),
    ("adam_donated", adam, [spec(na)] * 4, (0, 1, 2)),
]

def jax_figures():
    out = {}
    for name, fn, args, donate in programs:
        m = jax.jit(fn, donate_argnums=donate).lower(*args).compile().memory_analysis()
        out[name] = {
            "jax_argument": m.argument_size_in_bytes,
            "jax_output": m.output_size_in_bytes,
            "jax_temp": m.temp_size_in_bytes,
            "jax_alias": m.alias_size_in_bytes,
            "jax_code": m.generated_code_size_in_bytes,
            "jax_total": m.argument_size_in_bytes + m.output_size_in_bytes
            + m.temp_size_in_bytes - m.alias_size_in_bytes,
        }
    return out


def mib(b):
    b = int(b)
    return f"{b / 2**20:.2f} MiB" if b >= 2**20 else f"{b / 2**10:.1f} KiB" if b else "0"


def table(kiln, jx):
    print("| program | kernels (unfused) | arena / lower bound | kiln peak | kiln peak, no fusion"
          " | measured = planned | JAX temp | JAX total | kiln - JAX |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, _, _, _ in programs:
        k, j = kiln.get(name), jx[name]
        if not k:
            continue
        lb, arena = int(k["kiln_lower_bound"]), int(k["kiln_arena"])
        ratio = f" = {arena / lb:.3f}" if lb else " (no temporaries)"
        peak = int(k["kiln_peak_exact"])
        same = "yes" if k["kiln_measured_peak"] == k["kiln_peak"] else "NO"
        print(f"| {name} | {k['kiln_kernels']} ({k['kiln_kernels_unfused']}) | {mib(arena)} / "
              f"{mib(lb)}{ratio} | {mib(peak)} | {mib(k['kiln_peak_exact_unfused'])} | {same} | "
              f"{mib(j['jax_temp'])} | {mib(j['jax_total'])} | {peak - j['jax_total']:+d} B |")


print(f"# jax {jax.__version__}, {jax.devices()[0].platform}")
jx = jax_figures()
if len(sys.argv) > 1:
    kiln = {}
    for line in open(sys.argv[1]):
        name, key, value = line.split()
        kiln.setdefault(name, {})[key] = value
    table(kiln, jx)
else:
    for name, fig in jx.items():
        for key, value in fig.items():
            print(f"{name} {key} {value}")
