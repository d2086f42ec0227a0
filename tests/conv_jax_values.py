"""conv_jax_values.py: writes tests/conv_jax.h, the expected values test_conv.c checks
kiln's convolutions and window reductions against, computed by JAX (run once, with
bench/.venv's python; the tests themselves need no Python).

Inputs are made by formula, identically in C (tests/test_conv.c, fill()):
    v[i] = f32(i * 7919 % 61) / f32(61) - f32(0.5)       (f32 arithmetic)
and `tied` inputs floor(4 v) / 4, which repeat values so that windows hold ties."""
import sys
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)


def fill(shape, tied=False):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    v = (i * 7919 % 61).astype(np.float32) / np.float32(61) - np.float32(0.5)
    if tied:
        v = np.floor(v * np.float32(4)) / np.float32(4)
    return v.astype(np.float32).reshape(shape)


out = []


def emit(name, arr):
    a = np.asarray(arr, dtype=np.float64).ravel()
    body = ",\n    ".join(", ".join("%.9g" % x for x in a[j:j + 6]) for j in range(0, len(a), 6))
    out.append("static const double %s[%d] = {\n    %s};\n" % (name, max(len(a), 1), body or "0"))


def conv(lhs_shape, rhs_shape, name, **kw):
    x, w = fill(lhs_shape), fill(rhs_shape)
    f = lambda x, w: lax.conv_general_dilated(x, w, precision=lax.Precision.HIGHEST, **kw)
    y = f(x, w)
    emit(name, y)
    out.append("/* %s: %s */\n" % (name, "x".join(map(str, y.shape))))
    ct = fill(y.shape)  # the cotangent: d/dx of sum(y * ct)
    gx, gw = jax.grad(lambda x, w: jnp.sum(f(x, w) * ct), argnums=(0, 1))(x, w)
    emit(name + "_dlhs", gx)
    emit(name + "_drhs", gw)


def window(shape, name, kind, tied=False, **kw):
    x = fill(shape, tied)
    init, comp = {"max": (-np.inf, lax.max), "sum": (0.0, lax.add), "min": (np.inf, lax.min)}[kind]
    f = lambda x: lax.reduce_window(x, np.float32(init), comp, **kw)
    y = f(x)
    emit(name, y)
    out.append("/* %s: %s */\n" % (name, "x".join(map(str, y.shape))))
    ct = fill(y.shape)
    emit(name + "_dx", jax.grad(lambda x: jnp.sum(f(x) * ct))(x))


conv((2, 3, 7, 6), (4, 3, 3, 2), "nchw_same", window_strides=(2, 1), padding="SAME",
     rhs_dilation=(1, 2))
conv((1, 6, 5, 4), (3, 3, 2, 6), "nhwc_groups", window_strides=(1, 2),
     padding=((1, 0), (2, 1)), lhs_dilation=(2, 1), feature_group_count=2,
     dimension_numbers=("NHWC", "HWIO", "NHWC"))
conv((2, 2, 9), (3, 2, 4), "ncw_crop", window_strides=(3,), padding=((-1, 2),))
conv((1, 2, 4, 3, 3), (2, 2, 2, 2, 1), "ncdhw_same_lower", window_strides=(1, 2, 1),
     padding="SAME_LOWER")
conv((3, 5, 2, 4), (4, 2, 2, 2), "specs", window_strides=(1, 1), padding="VALID",
     dimension_numbers=lax.ConvDimensionNumbers((2, 3, 0, 1), (3, 0, 1, 2), (1, 0, 3, 2)))
window((2, 5, 6, 3), "maxpool_same", "max", tied=True, window_dimensions=(1, 3, 2, 1),
       window_strides=(1, 2, 2, 1), padding="SAME")
window((4, 5), "sum_dilated", "sum", window_dimensions=(2, 3), window_strides=(1, 2),
       padding=((1, 0), (0, 2)), base_dilation=(2, 1), window_dilation=(1, 2))
window((3, 7), "min_valid", "min", tied=True, window_dimensions=(2, 3), window_strides=(1, 2),
       padding="VALID")

with open(sys.argv[1] if len(sys.argv) > 1 else "conv_jax.h", "w") as f:
    f.write("/* conv_jax.h: expected values computed by JAX %s (tests/conv_jax_values.py); "
            "generated, do not edit. */\n" % jax.__version__)
    f.write("".join(out))
