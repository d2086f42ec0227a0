"""optax_jax.py DIR KILN_OUT [reps] — the JAX side of bench/optim: the same MLP step as
bench_optim.c (read from the files it wrote to DIR) under optax.adamw, optax.lion and
optax.adafactor with kiln's hyperparameters, jitted with the parameters and the optimiser
state donated. Prints, per optimiser, the state's bytes, XLA's memory analysis (arguments
+ outputs + temporaries - aliased, the peak bench_optim plans against), ms per step (the
median of reps after 5 of warm-up) and the loss after the same number of steps as kiln's,
then a Markdown table beside kiln's figures (read from KILN_OUT)."""
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

d = sys.argv[1]
kiln = {}
for line in open(sys.argv[2]):
    parts = line.split()
    kiln[parts[0]] = parts[1:]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
B, D, H = (int(kiln["shape"][i]) for i in (1, 3, 5))


def load(name, shape):
    return jnp.asarray(np.fromfile(os.path.join(d, name), np.float32).reshape(shape))


init = [load("init_w1.f32", (D, H)), load("init_b1.f32", (H,)), load("init_w2.f32", (H, D)),
        load("init_b2.f32", (D,))]
x, y = load("x.f32", (B, D)), load("y.f32", (B, D))


def loss_fn(p):
    h = jax.nn.relu(x @ p[0] + p[1])
    e = h @ p[2] + p[3] - y
    return jnp.mean(e * e)


OPTS = {
    "adamw": optax.adamw(1e-3, weight_decay=1e-4),
    "lion": optax.lion(1e-4),
    "adafactor": optax.adafactor(1e-3),
}
rows = []
for name, opt in OPTS.items():
    def step(p, s, opt=opt):
        loss, g = jax.value_and_grad(loss_fn)(p)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    jstep = jax.jit(step, donate_argnums=(0, 1))
    p = [jnp.array(a) for a in init]
    s = opt.init(p)
    state_bytes = sum(a.nbytes for a in jax.tree.leaves(s))
    ma = jstep.lower(p, s).compile().memory_analysis()
    peak = (ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
            - ma.alias_size_in_bytes)
    n = int(kiln[name + "_loss_after"][0])
    ts = []
    for i in range(n):
        t0 = time.perf_counter()
        p, s, loss = jstep(p, s)
        loss.block_until_ready()
        ts.append(time.perf_counter() - t0)
    ms = float(np.median(ts[5:])) * 1e3
    print("%s_state_bytes %d" % (name, state_bytes))
    print("%s_xla_peak_bytes %d (arguments %d, temporaries %d)" % (
        name, peak, ma.argument_size_in_bytes, ma.temp_size_in_bytes))
    print("%s_step_ms %.3f" % (name, ms))
    print("%s_loss_after %d %.9g" % (name, n, float(loss)))
    kl = float(kiln[name + "_loss_after"][1])
    rows.append("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.2fx | %.7g | %.7g |" % (
        name, int(kiln[name + "_state_bytes"][0]) / 2**20, state_bytes / 2**20,
        int(kiln[name + "_planned_peak_bytes"][0]) / 2**20,
        int(kiln[name + "_measured_peak_bytes"][0]) / 2**20, peak / 2**20,
        float(kiln[name + "_step_ms"][0]), ms, float(kiln[name + "_step_ms"][0]) / ms, kl,
        float(loss)))
print()
print("| optimiser | kiln state MiB | optax state MiB | kiln planned peak MiB | kiln measured "
      "MiB | XLA peak MiB | kiln ms | JAX ms | ratio | kiln loss | JAX loss |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
print("\n".join(rows))
