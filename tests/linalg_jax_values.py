"""Writes tests/linalg_jax.h: JAX's values for test_linalg.c.

Run with bench/.venv (jax 0.10.2): bench/.venv/bin/python tests/linalg_jax_values.py
Every case is f64 (jax_enable_x64) so that kiln's f64 path is held to 1e-12. The inputs
are written into the header too; a's triangle that a solve does not read holds large
values, which must not reach x or the gradients.
"""
import itertools
import os
import shutil
import subprocess

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

rng = np.random.default_rng(20261206)
B, M, N = 2, 4, 3


def carr(name, x):
    x = np.asarray(x, dtype=np.float64).ravel()
    body = ", ".join(repr(float(v)) if np.isfinite(v) else "NAN" for v in x)
    return f"static const double {name}[{x.size}] = {{{body}}};\n"


out = ["/* linalg_jax.h — written by tests/linalg_jax_values.py from JAX %s; do not edit. */\n"
       % jax.__version__]

# cholesky: a = m m^T + M I, and the gradient of sum(w * L) through jnp.linalg.cholesky
mm = rng.standard_normal((B, M, M))
spd = mm @ np.swapaxes(mm, -1, -2) + M * np.eye(M)
spd[0, 0, 3] += 0.25  # not symmetric: jnp.linalg.cholesky symmetrises
w = rng.standard_normal((B, M, M))
L = jnp.linalg.cholesky(spd)
gA = jax.grad(lambda a: jnp.sum(w * jnp.linalg.cholesky(a)))(spd)
out += [carr("CHOL_A", spd), carr("CHOL_W", w), carr("CHOL_L", L), carr("CHOL_GRAD", gA)]
# lax.linalg.cholesky(symmetrize_input=False) of the symmetric part's lower triangle with
# large values above it (never read), and its gradient (JAX's convention for the raw op)
raw = np.tril((spd + np.swapaxes(spd, -1, -2)) / 2) + np.triu(np.full((M, M), 1e3), 1)
graw = jax.grad(lambda a: jnp.sum(w * lax.linalg.cholesky(a, symmetrize_input=False)))(raw)
out += [carr("CHOL_RAW_A", raw), carr("CHOL_RAW_GRAD", graw)]
out.append(carr("CHOL_NOT_PD_L", jnp.linalg.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))))

# triangular_solve, every combination of the four flags
a = rng.standard_normal((B, M, M)) + 3 * np.eye(M)
out.append(carr("TS_A_LOWER", np.where(np.tril(np.ones((M, M))) > 0, a, 1e3)))
out.append(carr("TS_A_UPPER", np.where(np.triu(np.ones((M, M))) > 0, a, 1e3)))
bl = rng.standard_normal((B, M, N))
br = rng.standard_normal((B, N, M))
wl = rng.standard_normal((B, M, N))
wr = rng.standard_normal((B, N, M))
out += [carr("TS_B_LEFT", bl), carr("TS_B_RIGHT", br), carr("TS_W_LEFT", wl),
        carr("TS_W_RIGHT", wr)]
rows = []
for i, (left, lower, trans, unit) in enumerate(itertools.product([False, True], repeat=4)):
    aa = np.where(np.tril(np.ones((M, M))) > 0, a, 1e3) if lower else \
        np.where(np.triu(np.ones((M, M))) > 0, a, 1e3)
    if unit:  # the diagonal is not read either
        aa = aa.copy()
        aa[:, np.arange(M), np.arange(M)] = 1e3
    b, ww = (bl, wl) if left else (br, wr)

    def f(aa, b):
        return lax.linalg.triangular_solve(aa, b, left_side=left, lower=lower,
                                           transpose_a=trans, unit_diagonal=unit)
    x = f(aa, b)
    ga, gb = jax.grad(lambda aa, b: jnp.sum(ww * f(aa, b)), argnums=(0, 1))(aa, b)
    out += [carr(f"TS{i}_A", aa), carr(f"TS{i}_X", x), carr(f"TS{i}_GA", ga),
            carr(f"TS{i}_GB", gb)]
    rows.append(f"    {{{int(left)}, {int(lower)}, {int(trans)}, {int(unit)}, TS{i}_A, TS{i}_X, "
                f"TS{i}_GA, TS{i}_GB}},\n")
out.append("typedef struct ts_case {\n    int left, lower, transpose, unit;\n"
           "    const double *a, *x, *ga, *gb;\n} ts_case;\n")
out.append("static const ts_case TS_CASES[16] = {\n" + "".join(rows) + "};\n")

# cho_solve with one right-hand side per matrix, lower and upper factors
bv = rng.standard_normal((B, M))
wv = rng.standard_normal((B, M))
for lower in (True, False):
    c = np.asarray(L) if lower else np.swapaxes(np.asarray(L), -1, -2)
    # jax.scipy's cho_solve is not batched: vmap it
    solve = jax.vmap(lambda c, b: jax.scipy.linalg.cho_solve((c, lower), b))
    x = solve(c, bv)
    gc, gb = jax.grad(lambda c, b: jnp.sum(wv * solve(c, b)), argnums=(0, 1))(c, bv)
    tag = "LOWER" if lower else "UPPER"
    out += [carr(f"CHO_{tag}_C", c), carr(f"CHO_{tag}_X", x), carr(f"CHO_{tag}_GC", gc),
            carr(f"CHO_{tag}_GB", gb)]
out += [carr("CHO_B", bv), carr("CHO_W", wv)]

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linalg_jax.h")
with open(path, "w") as f:
    f.write("".join(out))
# the project's layout (.clang-format), so that the header reads like the code around it
if shutil.which("clang-format"):
    subprocess.run(["clang-format", "-i", path], check=True)
print("wrote", path)
