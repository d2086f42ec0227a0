"""Writes the import tests' fixtures: each program's StableHLO (NAME.mlir) and HLO text
(NAME.hlo) as JAX 0.10 lowers it, and NAME.io with the inputs and the outputs JAX computed
for them, so tests/test_import.c needs no Python. Run with bench/.venv/bin/python from the
repository root: python tests/data/import/make_fixtures.py [NAME...] (default: all of them)

NAME.io: per array a line "in|out DTYPE RANK DIM..." and a line of its values (floats as
repr of float64, bool as 0/1)."""
import os
import sys
import numpy as np
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import export, lax
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import _jax  # StableHLO to HLO text, for a program exported elsewhere
from jax._src.lib.mlir import ir

jax.config.update("jax_platforms", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(36)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def mlp_train(w1, b1, w2, x, y):
    def loss(p):
        h = jnp.tanh(x @ p[0] + p[1])
        lp = jax.nn.log_softmax(h @ p[2])
        return -jnp.mean(jnp.sum(lp * y, axis=-1))
    l, g = jax.value_and_grad(loss)((w1, b1, w2))
    return (l,) + tuple(a - 0.1 * b for a, b in zip((w1, b1, w2), g))


def elementwise(x, y, n):
    a = jnp.where(x > y, jnp.exp(x), jnp.log1p(jnp.abs(y)))
    b = jnp.clip(x, -0.5, 0.5) * jnp.sqrt(jnp.abs(y)) + lax.rsqrt(1.0 + y * y)
    c = jax.nn.sigmoid(x) - jnp.sin(y) * jnp.cos(x) + jnp.floor(x * 3) + jnp.sign(y)
    d = (n * 3 - 7) // 2 + jnp.maximum(n, 2) - jnp.minimum(n, 1)
    e = (x.astype(jnp.int32) + n).astype(jnp.float32) / (1.0 + jnp.abs(x))
    f = jnp.logical_and(x > 0, jnp.logical_not(y > 0.5)) | (x < -1)
    g = x ** 2.0 - jnp.power(jnp.abs(y) + 1.0, x)
    return a, b, c, d, e, f, g, jnp.tanh(x) + jnp.negative(y)


def shapes(x, i, idx):
    k = jnp.array([[1.5, -2.0, 3.0, 0.25], [0.0, 1e-8, 7.0, -1.0], [4.0, 5.0, 6.0, 7.0]],
                  jnp.float32)
    b = jnp.arange(12, dtype=jnp.float32).reshape(3, 4) + k * x
    c = lax.dynamic_slice(x, (i, 1), (2, 2))
    d = jnp.pad(x, ((1, 0), (0, 2)), constant_values=-1.0)
    e = jnp.concatenate([x, b], 0)[1:5:2, ::-1]
    f = jnp.transpose(x.reshape(2, 6)).reshape(4, 3)
    g = x[idx]
    h = x.at[idx].add(1.0)
    j = jnp.broadcast_to(x[:, :1], (3, 4)) + x.sum(0) + x.max(1, keepdims=True)
    m = jnp.prod(x[:2, :2], axis=1) + jnp.min(x, axis=1)[:2]
    dd = lax.dynamic_update_slice(x, jnp.ones((1, 2), jnp.float32), (i, 2))
    return b, c, d, e, f, g, h, j, m, dd, jnp.full((2, 2), jnp.inf)


def control(x, i, n):
    a = lax.fori_loop(0, 3, lambda k, v: v * 0.5 + x[0, 0], x)
    b = lax.cond(i > 0, lambda v: v + 1.0, lambda v: v * 2.0, x)
    c = lax.switch(i, [lambda v: v, lambda v: v * 2.0, lambda v: jnp.sin(v)], x)
    def body(carry):
        k, v = carry
        return k + 1, v + jnp.tanh(v) * x
    d = lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]
    return a, b, c, d


def misc(x, b, idx):
    """Forms the other fixtures lack: reduce_window (cumsum), bf16, a large constant (its
    bytes in hex), a remat barrier (jax.checkpoint), all/any, scatter that sets, reverse,
    expm1, ceil, is_finite, a float remainder."""
    big = jnp.asarray(np.linspace(-1, 1, 192, dtype=np.float32).reshape(12, 16))
    # times 2, exact in bf16: XLA on the CPU keeps an inexact bf16 product in f32 when a
    # convert to f32 follows, where kiln (and the StableHLO semantics) round it
    h = (x.astype(jnp.bfloat16) * jnp.bfloat16(2)).astype(jnp.float32)
    f = jax.checkpoint(lambda v: jnp.sin(jnp.sin(v)) * 2.0)
    g = jax.grad(lambda v: jnp.sum(f(v)))(x)
    return (jnp.cumsum(x, axis=1), h, x @ big[:4, :4], g, jnp.all(b, axis=1), jnp.any(b),
            x.at[idx].set(-1.0), jnp.flip(x, 0), jnp.expm1(x), jnp.ceil(x * 2),
            jnp.isfinite(x / (x - x[0, 0])), jnp.fmod(x * 7, 1.5))


def attention_adamw(wq, wk, wv, wo, m, v, x, step):
    """One AdamW step of a small causal self-attention layer with a layer norm."""
    def loss(p):
        q_, k_, v_, o_ = p
        h = (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5)
        q, k, vv = h @ q_, h @ k_, h @ v_
        s = jnp.einsum("btd,bsd->bts", q, k) / jnp.sqrt(q.shape[-1]).astype(jnp.float32)
        mask = jnp.tril(jnp.ones((s.shape[-1], s.shape[-1]), bool))
        s = jnp.where(mask, s, -1e9)
        a = jax.nn.softmax(s, axis=-1)
        y = jnp.einsum("bts,bsd->btd", a, vv) @ o_
        return jnp.mean(jax.nn.gelu(y) ** 2)
    params = (wq, wk, wv, wo)
    l, g = jax.value_and_grad(loss)(params)
    lr, b1, b2, eps, wd = 1e-2, 0.9, 0.999, 1e-8, 0.01
    t = step + 1.0
    new_p, new_m, new_v = [], [], []
    for p, gi, mi, vi in zip(params, g, m, v):
        mi = b1 * mi + (1 - b1) * gi
        vi = b2 * vi + (1 - b2) * gi * gi
        mh = mi / (1 - b1 ** t)
        vh = vi / (1 - b2 ** t)
        new_p.append(p - lr * (mh / (jnp.sqrt(vh) + eps) + wd * p))
        new_m.append(mi)
        new_v.append(vi)
    return (l, *new_p, *new_m, *new_v)


def attention_args():
    D = 8
    ws = [randn(D, D) * 0.3 for _ in range(4)]
    return (*ws, [np.zeros((D, D), np.float32)] * 4, [np.zeros((D, D), np.float32)] * 4,
            randn(2, 5, D), np.float32(0))


def argminmax(x, n, y):
    """jnp.argmax / argmin: a reduce of (values, iota) with a body of compares and selects;
    ties (the first index wins), a NaN (it wins), ints, a middle axis, keepdims."""
    return (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(n, axis=0),
            jnp.argmin(n, axis=1), jnp.argmax(y, axis=1, keepdims=True), jnp.argmin(y, axis=2),
            jnp.argmax(x.reshape(-1)))


def argminmax_args():
    x = np.array([[1, 3, 3, 0, -1], [2, np.nan, 5, np.nan, 0], [-4, -4, -2, -4, 7],
                  [0, 0, 0, 0, 0]], np.float32)
    return x, rng.integers(-3, 3, (4, 5)).astype(np.int32), randn(2, 3, 4)


def sorting(x, n, y, a, b):
    """jnp.sort / argsort / lax.sort / top_k: a stablehlo.sort whose comparator JAX writes
    (floats made canonical, -0.0 == +0.0, NaN last, TOTALORDER LT), descending as a
    reverse, two keys lexicographic, an int key, and chlo.top_k / HLO topk."""
    return (jnp.sort(x, axis=1), jnp.argsort(x, axis=1), jnp.argsort(x, axis=0, descending=True),
            jnp.sort(x, axis=0, descending=True), jnp.sort(n, axis=0), jnp.argsort(n, axis=1),
            *lax.sort((a, b, y), dimension=1, num_keys=2), *lax.top_k(y, 3))


def sorting_args():
    x = np.array([[1, 3, -0.0, 0, -1, np.nan], [2, np.nan, 5, -np.inf, 0, np.inf],
                  [-4, -4, -2, -4, 7, 0.5], [0, 0, 0, -0.0, 0, 0]], np.float32)
    a = rng.integers(0, 3, (4, 6)).astype(np.float32)
    return (x, rng.integers(-3, 3, (4, 6)).astype(np.int32), randn(4, 6), a,
            rng.integers(-2, 2, (4, 6)).astype(np.int32))


def conv(x, w, xg, wg, xt, wt, p):
    """lax.conv_general_dilated in the layouts JAX writes: NCHW with strides and rhs
    dilation, grouped, transposed (lhs dilation), 1-D NWC; a padded max pool's gradient
    (select_and_scatter with padding) beside its forward pass; a window sum and cumsums
    (reduce_windows the importer reads as kiln_cumsum)."""
    a = lax.conv_general_dilated(x, w, (2, 1), [(1, 2), (0, 1)], rhs_dilation=(1, 2))
    b = lax.conv_general_dilated(xg, wg, (1, 1), "SAME", feature_group_count=2,
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    c = lax.conv_transpose(xt, wt, (2,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))

    def pool(v):
        return lax.reduce_window(v, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    y, vjp = jax.vjp(pool, p)
    s = lax.reduce_window(p, 0.0, lax.add, (1, 2, 3, 1), (1, 1, 2, 1), "VALID")
    return a, b, c, y, vjp(jnp.cos(y))[0], s, jnp.cumsum(p, axis=2), lax.cumsum(p, 1, reverse=True)


def conv_args():
    p = randn(2, 7, 7, 3)
    p[0, 0, :2, 0] = 1.0  # ties: the first maximum of a window keeps its cotangent
    return (randn(2, 3, 9, 8), randn(4, 3, 3, 2), randn(1, 5, 5, 4), randn(3, 3, 2, 6),
            randn(2, 6, 3), randn(3, 3, 2), p)


B_CNN, H_CNN, C1_CNN, C2_CNN, K_CNN = 4, 8, 4, 8, 5


def cnn_step(p, m, v, x, y, lr, t):
    """bench/cnn/cnn_model.py's training step at a small size, written out as the committed
    fixture was generated: conv 3x3 SAME + relu + max pool 2x2/2 twice, dense, softmax
    cross-entropy, AdamW; its gradient is convolutions, select_and_scatter (the pools')
    and reduce_windows."""
    def block(h, w, b):
        h = lax.conv_general_dilated(h, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h + b)
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def loss_fn(p):
        h = block(block(x, p[0], p[1]), p[2], p[3])
        logits = h.reshape(x.shape[0], -1) @ p[4] + p[5]
        picked = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)
    loss, g = jax.value_and_grad(loss_fn)(p)
    t = t.astype(jnp.float32)
    m = [0.9 * mi + 0.1 * gi for mi, gi in zip(m, g)]
    v = [0.999 * vi + 0.001 * gi * gi for vi, gi in zip(v, g)]
    c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
    p = [pi * (1 - lr * 1e-2) - lr / c1 * mi / (jnp.sqrt(vi) / jnp.sqrt(c2) + 1e-8)
         for pi, mi, vi in zip(p, m, v)]
    return loss, p, m, v


def cnn_args():
    flat = (H_CNN // 4) ** 2 * C2_CNN
    shapes = [(3, 3, 1, C1_CNN), (C1_CNN,), (3, 3, C1_CNN, C2_CNN), (C2_CNN,), (flat, K_CNN),
              (K_CNN,)]
    p = [randn(*s) * np.float32(0.3) for s in shapes]
    m = [randn(*s) * np.float32(0.01) for s in shapes]
    v = [np.abs(randn(*s)) * np.float32(1e-4) for s in shapes]
    return (p, m, v, randn(B_CNN, H_CNN, H_CNN, 1),
            rng.integers(0, K_CNN, B_CNN).astype(np.int32), np.float32(1e-3), np.int32(3))


def jnp_forms(x, i, mask, n):
    """What an outside check found refused or inexact: single-point updates and reads
    (StableHLO leaves out index_vector_dim = 0), jnp.median, an exact float remainder,
    jnp.mod, integer remainders by 0 and -1, a mask's max / maximum / argmax, and a
    broadcast_in_dim whose dimensions are not increasing."""
    big = x * np.float32(1e4)
    return (x.at[2, 3].add(1.0), x.at[1].set(x[0]), x[i, 2], jnp.median(x, axis=1),
            lax.rem(big, np.float32(3.3)), jnp.mod(big, np.float32(-2 * np.pi)),
            lax.rem(n, jnp.array([0, -1, 3, -3], jnp.int32)), jnp.max(mask),
            jnp.maximum(mask, mask[::-1]), jnp.argmax(mask, axis=1),
            lax.broadcast_in_dim(x[:3, :4], (4, 5, 3), (2, 0)))


def debug_sharded(x, w):
    """Written with debug info (locations in both forms) and a sharding on a one-device
    mesh (Shardy's sdy dialect in StableHLO, xla.sdy custom calls in HLO)."""
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("d",))
    h = jnp.tanh(x @ w)
    h = jax.lax.with_sharding_constraint(h, jax.sharding.NamedSharding(mesh, jax.P("d", None)))
    return jnp.sum(h, axis=0), jnp.sort(x, axis=1)


def math_functions(x, u):
    """The math functions JAX writes as chlo ops in StableHLO (lower().as_text()) and spells
    out in HLO: hyperbolic and inverse trigonometric functions, erfc (jax.nn.gelu's exact
    form), erf_inv, lgamma, digamma; and stablehlo's cbrt, expm1, tan, atan2, the two
    roundings, ceil and is_finite; with lgamma's and asinh's gradient."""
    p = x + np.float32(0.3)  # positive
    grad = jax.grad(lambda v: jnp.sum(lax.lgamma(v) + jnp.arcsinh(v) * jnp.tan(v)))(p + 1)
    return (jnp.sinh(x), jnp.cosh(x), jnp.arcsin(u), jnp.arccos(u), jnp.arctan(x),
            jnp.arcsinh(x), jnp.arccosh(p + 1), jnp.arctanh(u), lax.erfc(x), lax.erf_inv(u),
            lax.lgamma(p), lax.digamma(p), jnp.cbrt(x), jnp.expm1(x), jnp.tan(u),
            jnp.arctan2(x, u), jnp.round(x * 3), lax.round(x * 3), jnp.ceil(x * 3),
            jnp.isfinite(x / u), jax.nn.gelu(x, approximate=False), grad)


def random_bits(key, x, n, m):
    """jax.random inside the program (Threefry-2x32 written out in ui32 and ui64 shifts, xors
    and adds; the [0, 1) draw's bitcast; randint's unsigned remainder and compares), the bit
    ops on i32, bitcast_convert both ways, and uint32 arithmetic whose result depends on the
    signedness (divide, remainder, maximum, compare, convert to float)."""
    k = jax.random.wrap_key_data(key)
    k1, k2, k3 = jax.random.split(k, 3)
    kept = jax.random.bernoulli(jax.random.fold_in(k, 7), 0.7, x.shape)
    nu, mu = n.astype(jnp.uint32), m.astype(jnp.uint32)
    big = nu * jnp.uint32(2654435761)  # past 2^31: the unsigned ops see their top bit
    return (jax.random.uniform(k1, (3, 4)), jax.random.normal(k2, (3, 4)),
            jax.random.randint(k3, (6,), -5, 9), jnp.where(kept, x / 0.7, 0),
            jax.random.key_data(k3),
            lax.shift_left(n, m), lax.shift_right_logical(n, m), lax.shift_right_arithmetic(n, m),
            lax.population_count(n), lax.clz(n), n & m, n | m, n ^ m, ~n,
            lax.bitcast_convert_type(x, jnp.int32),
            lax.bitcast_convert_type(n, jnp.float32),
            big // (mu | 1), big % (mu | 1), jnp.maximum(big, mu), big < mu,
            big.astype(jnp.float32), (big >> 3) ^ mu)


def spd(n, *batch):
    """Symmetric positive definite matrices [*batch, n, n], well conditioned."""
    x = rng.standard_normal((*batch, n, n))
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(np.float32)


def triangular(n, *batch):
    """Full matrices whose triangles are well conditioned (a strong diagonal): each solve
    reads one triangle, so the other one is there to be ignored."""
    return (rng.standard_normal((*batch, n, n)) + 4 * np.eye(n)).astype(np.float32)


NOT_PD = np.array([[1, 2, 0], [2, 1, 0], [0, 0, 1]], np.float32)  # eigenvalue -1


def linalg(a, m, t, b, bt, bb, tb, tbb, v):
    """What JAX writes on the CPU for the Cholesky factor and triangular solves: custom calls
    to LAPACK (lapack_spotrf_ffi, lapack_strsm_ffi) with their flags in backend_config.
    jnp.linalg.cholesky of a positive definite, a non positive definite (NaN) and a batch
    of both; jax.scipy.linalg.solve_triangular; lax.linalg.triangular_solve in every
    combination of left_side, lower and transpose_a (unit_diagonal in half of them);
    cho_solve of a matrix and of a vector; batched solves (one and two batch axes, and
    vmap). JAX drops conjugate_a for a real matrix: no trans_x 'C' here (test_import.c
    writes one)."""
    lo = jnp.linalg.cholesky(a)
    outs = [lo, jnp.linalg.cholesky(m), jnp.linalg.cholesky(bb),
            jsl.solve_triangular(t, b, lower=True),
            jsl.solve_triangular(t, b, lower=False, trans=1, unit_diagonal=True)]
    for left in (True, False):
        for lower in (True, False):
            for tr in (False, True):
                outs.append(lax.linalg.triangular_solve(
                    t, b if left else bt, left_side=left, lower=lower, transpose_a=tr,
                    unit_diagonal=(left + lower + tr) % 2 == 0))
    outs += [jsl.cho_solve((lo, True), b), jsl.cho_solve((lo.T, False), v),
             lax.linalg.triangular_solve(tb, tbb, left_side=True, lower=False),
             jax.vmap(lambda x, y: jsl.solve_triangular(x, y, lower=True, trans=1))(tb[0], tbb[0])]
    return outs


def linalg_args():
    return (spd(4), NOT_PD, triangular(4), randn(4, 3), randn(3, 4),
            np.stack([spd(3), NOT_PD]), triangular(4, 2, 2), randn(2, 2, 4, 3),
            randn(4))


def linalg_f64(a, t, b):
    """The same in f64 (jax.enable_x64): lapack_dpotrf_ffi over a batch and
    lapack_dtrsm_ffi, a right-side solve with a transposed upper triangle."""
    return (jnp.linalg.cholesky(a),
            lax.linalg.triangular_solve(t, b, left_side=False, lower=False, transpose_a=True),
            jsl.cho_solve((jnp.linalg.cholesky(a), True), jnp.swapaxes(b, -1, -2)))


def linalg_generic(a, m, bb, t, b, bt):
    """What JAX writes for another platform (jax.export with platforms=("tpu",) or
    ("cuda",)), run here against JAX's values on the CPU: the StableHLO ops
    stablehlo.cholesky (lower = true) and stablehlo.triangular_solve (generic form, every
    flag), HLO's cholesky and triangular-solve; for CUDA the factor is a custom call to
    cusolver_potrf_ffi with backend_config {lower = true}. JAX writes neither an upper
    factor nor an ADJOINT for real matrices (test_import.c writes them)."""
    outs = [jnp.linalg.cholesky(a), jnp.linalg.cholesky(m), jnp.linalg.cholesky(bb)]
    for left in (True, False):
        for lower in (True, False):
            for tr in (False, True):
                outs.append(lax.linalg.triangular_solve(
                    t, b if left else bt, left_side=left, lower=lower, transpose_a=tr,
                    unit_diagonal=(left + lower + tr) % 2 == 1))
    return outs


def linalg_generic_args():
    return (spd(4), NOT_PD, np.stack([NOT_PD, spd(3)]), triangular(4), randn(4, 2), randn(2, 4))


PROGRAMS = {
    "mlp_train": (mlp_train, lambda: (randn(4, 8), randn(8), randn(8, 3), randn(2, 4),
                                      jax.nn.one_hot(np.array([0, 2]), 3)), (0, 1, 2)),
    "elementwise": (elementwise, lambda: (randn(3, 4), randn(3, 4),
                                          rng.integers(-5, 5, (3, 4)).astype(np.int32)), ()),
    "shapes": (shapes, lambda: (randn(3, 4), np.int32(1), np.array([2, 0, 2], np.int32)), ()),
    "control": (control, lambda: (randn(3, 4), np.int32(1), np.int32(4)), ()),
    "attention_adamw": (attention_adamw, attention_args, (0, 1, 2, 3)),
    "misc": (misc, lambda: (randn(4, 4), rng.random((4, 3)) > 0.3, np.array([3, 1], np.int32)),
             ()),
    "argminmax": (argminmax, argminmax_args, ()),
    "sorting": (sorting, sorting_args, ()),
    "conv": (conv, conv_args, ()),
    "cnn_step": (cnn_step, cnn_args, (0, 1, 2)),
    "jnp_forms": (jnp_forms, lambda: (randn(4, 5), np.int32(3), rng.random((3, 6)) > 0.6,
                                      np.array([7, -7, -2147483648, 5], np.int32)), ()),
    "debug_sharded": (debug_sharded, lambda: (randn(4, 3), randn(3, 5)), ()),
    "math_functions": (math_functions, lambda: (randn(3, 4), rng.uniform(-0.9, 0.9, (3, 4)).astype(
        np.float32)), ()),
    "random_bits": (random_bits, lambda: (np.array([0x8f3a51c2, 42], np.uint32), randn(3, 4),
                                          np.array([7, -7, -2147483648, 5, 0, 123456], np.int32),
                                          np.array([3, 31, 1, 33, -1, 4], np.int32)), ()),
    "linalg": (linalg, linalg_args, ()),
    "linalg_f64": (linalg_f64, lambda: (spd(3, 2).astype(np.float64),
                                        triangular(3, 2).astype(np.float64),
                                        randn(2, 4, 3).astype(np.float64)), ()),
    "linalg_tpu": (linalg_generic, linalg_generic_args, ()),
    "linalg_cuda": (linalg_generic, linalg_generic_args, ()),
}
# Programs exported with jax.enable_x64, and for another platform (jax.export: the
# StableHLO JAX writes for it, and the HLO XLA reads from that).
X64 = {"linalg_f64"}
PLATFORM = {"linalg_tpu": "tpu", "linalg_cuda": "cuda"}

DT = {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64", np.bool_: "bool"}
# kiln holds unsigned integers as the bit patterns of the signed dtype of their width
AS_SIGNED = {np.uint32: np.int32, np.uint64: np.int64}


def flat(args):
    return jax.tree_util.tree_leaves(args)


def write_array(f, kind, a):
    a = np.asarray(a)
    if a.dtype.type in AS_SIGNED:
        a = a.view(AS_SIGNED[a.dtype.type])
    f.write("%s %s %d %s\n" % (kind, DT[a.dtype.type], a.ndim, " ".join(map(str, a.shape))))
    vals = a.reshape(-1)
    if a.dtype == np.bool_:
        vals = vals.astype(np.int32)
    f.write(" ".join(repr(float(v)) if a.dtype.kind == "f" else str(int(v)) for v in vals))
    f.write("\n")


def main(names):
    for name, (fn, make, donate) in PROGRAMS.items():
        args = make()  # made even when skipped: every fixture's inputs stay the same
        if names and name not in names:
            continue
        with jax.enable_x64(name in X64):
            if name in PLATFORM:
                exported = export.export(jax.jit(fn), platforms=(PLATFORM[name],))(*args)
                with jax_mlir.make_ir_context():  # without its locations: this file's lines
                    mlir = ir.Module.parse(exported.mlir_module()).operation.get_asm(
                        enable_debug_info=False)
                hlo = _jax.mlir.mlir_module_to_xla_computation(
                    mlir, use_tuple_args=False, return_tuple=False).as_hlo_text()
            else:
                lowered = jax.jit(fn, donate_argnums=donate).lower(*args)
                debug = name == "debug_sharded"
                mlir = lowered.as_text(debug_info=debug)
                hlo = lowered.as_text(dialect="hlo", debug_info=debug)
            outs = jax.jit(fn)(*args)
        with open(os.path.join(HERE, name + ".mlir"), "w") as f:
            f.write(mlir)
        with open(os.path.join(HERE, name + ".hlo"), "w") as f:
            f.write(hlo)
        with open(os.path.join(HERE, name + ".io"), "w") as f:
            for a in flat(args):
                write_array(f, "in", a)
            for a in flat(outs):
                write_array(f, "out", a)


if __name__ == "__main__":
    main(sys.argv[1:])
