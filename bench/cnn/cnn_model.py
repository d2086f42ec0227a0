"""cnn_model.py — bench/cnn's network and its AdamW step in JAX, the one definition that
cnn_jax.py trains, bench/import/export.py exports at full size and
tests/data/import/make_fixtures.py exported small: conv 3x3 SAME + relu + max pool 2x2/2,
twice, flatten, dense, mean softmax cross-entropy (NHWC, HWIO); AdamW written in jnp as
kiln's docs/optimisers.md defines it (optax is not installed). Import it after setting
the process's affinity: it imports jax."""
import jax
import jax.numpy as jnp

B1, B2, EPS, WD = 0.9, 0.999, 1e-8, 1e-2


def conv_block(x, w, b):
    h = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jax.nn.relu(h + b)
    return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def loss_fn(p, x, y):
    h = conv_block(conv_block(x, p[0], p[1]), p[2], p[3])
    logits = h.reshape(x.shape[0], -1) @ p[4] + p[5]
    picked = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)


def step_fn(p, m, v, x, y, lr, t):
    """One step: the loss, then the new parameters and moments; t is the 1-based step."""
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    t = t.astype(jnp.float32)
    m = [B1 * mi + (1 - B1) * gi for mi, gi in zip(m, g)]
    v = [B2 * vi + (1 - B2) * gi * gi for vi, gi in zip(v, g)]
    c1, c2 = 1 - B1**t, 1 - B2**t
    p = [pi * (1 - lr * WD) - lr / c1 * mi / (jnp.sqrt(vi) / jnp.sqrt(c2) + EPS)
         for pi, mi, vi in zip(p, m, v)]
    return loss, p, m, v
