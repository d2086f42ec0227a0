"""Writes optax.txt for tests/test_optim.c: three steps of optax.lion and optax.adafactor
(float32, as optax runs them) on five parameters of the shapes below, from values both
sides compute by the same formulas, with a learning rate that changes every step. Run
with the bench venv (pip install jax optax):
    bench/.venv/bin/python tests/data/optim/make_fixture.py
Each line: case param array values... (%.9g; the arrays after the third step: p, and the
state: m for Lion; v_row, v_col, v for Adafactor)."""
import math
import os

import jax.numpy as jnp
import numpy as np
import optax

SHAPES = [(3, 4), (2, 3, 4), (5,), (4, 4), (2, 3)]
STEPS = 3


def param(k, shape):
    n = math.prod(shape)
    return np.array([math.sin(0.7 * i + 0.3 * k) for i in range(n)], np.float32).reshape(shape)


def grad(k, shape, t):  # t = 1, 2, 3
    n = math.prod(shape)
    return np.array([math.cos(1.3 * i + 0.5 * k + 0.9 * t) * (1 + 0.1 * t) for i in range(n)],
                    np.float32).reshape(shape)


def lr(base, t):
    return np.float32(base * (1 + 0.5 * (t - 1)))


CASES = {
    "lion": lambda l: optax.lion(l, b1=0.8, b2=0.95, weight_decay=0.1),
    "lion_default": lambda l: optax.lion(l),
    "adafactor": lambda l: optax.adafactor(l, min_dim_size_to_factor=3, weight_decay_rate=0.01),
    "adafactor_plain": lambda l: optax.adafactor(l, factored=False, decay_rate=0.5,
                                                 multiply_by_parameter_scale=False,
                                                 clipping_threshold=None),
    "adafactor_clip": lambda l: optax.adafactor(l, min_dim_size_to_factor=2,
                                                clipping_threshold=1.5, eps=1e-3),
}
BASE_LR = {"lion": 0.01, "lion_default": 1e-4, "adafactor": 0.05, "adafactor_plain": 0.02,
           "adafactor_clip": 2.0}

out = ["# written by make_fixture.py: optax %s" % optax.__version__]
for name, make in CASES.items():
    params = [jnp.asarray(param(k, s)) for k, s in enumerate(SHAPES)]
    state = None
    for t in range(1, STEPS + 1):
        opt = make(lr(BASE_LR[name], t))  # a constant lr per step: the schedule's value at t
        if state is None:
            state = opt.init(params)
        grads = [jnp.asarray(grad(k, s, t)) for k, s in enumerate(SHAPES)]
        updates, state = opt.update(grads, state, params)
        params = optax.apply_updates(params, updates)
    arrays = {"p": params}
    if name.startswith("lion"):
        arrays["m"] = state[0].mu
    else:
        fs = state[0]
        arrays["v_row"], arrays["v_col"], arrays["v"] = fs.v_row, fs.v_col, fs.v
    for key, vals in arrays.items():
        for k, a in enumerate(vals):
            a = np.asarray(a, np.float32).ravel()
            out.append("%s %d %s %s" % (name, k, key, " ".join("%.9g" % x for x in a)))
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optax.txt")
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
print("wrote", path, len(out) - 1, "lines")
