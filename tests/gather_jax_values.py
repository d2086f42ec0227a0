"""gather_jax_values.py: writes tests/gather_jax.h, the values test_gather.c checks kiln's
gather, scatter and .at[] updates against, computed by JAX (run once, with bench/.venv's
python: `bench/.venv/bin/python tests/gather_jax_values.py > tests/gather_jax.h`; the tests
themselves need no Python).

Operands and updates are made by formula, identically in C (tests/test_gather.c, fill()):
    v[i] = f32(i * 7919 % 61) / f32(61) - f32(0.5)       (f32 arithmetic)
Updates are fill(shape) + 1 (so scatter-mul and -max move the values). Indices are given.
Scatter-set cases have no duplicate indices: JAX leaves the winner unspecified; kiln's
(the last) is checked by hand in the test."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

G = lax.GatherScatterMode


def fill(shape):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    v = (i * 7919 % 61).astype(np.float32) / np.float32(61) - np.float32(0.5)
    return v.astype(np.float32).reshape(shape)


out = []
rows = []
at_rows = []
get_rows = []


def arr(name, a, ctype, fmt):
    a = np.asarray(a).ravel()
    body = ", ".join(fmt % x for x in a) if len(a) else "0"
    out.append("static const %s %s[%d] = {%s};\n" % (ctype, name, max(len(a), 1), body))


def dbl(x):
    return "NAN" if np.isnan(x) else "%.9g" % x


def lst(v):
    v = list(v)
    return "{%d%s}" % (len(v), "".join(", %d" % x for x in v))


def dims(shape):
    return "%d, {%s}" % (len(shape), ", ".join(str(d) for d in shape) or "0")


def gather(name, xshape, idx, offset, collapsed, sim, sizes, mode, obatch=(), ibatch=()):
    x = fill(xshape)
    idx = np.asarray(idx, np.int32)
    dn = lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=collapsed,
                                    start_index_map=sim, operand_batching_dims=obatch,
                                    start_indices_batching_dims=ibatch)
    y = np.asarray(lax.gather(x, idx, dn, sizes, mode=mode))
    arr(name + "_idx", idx, "int32_t", "%d")
    arr(name + "_want", y, "double", "%s")
    out[-1] = out[-1] % tuple(dbl(v) for v in y.ravel()) if False else \
        "static const double %s_want[%d] = {%s};\n" % (name, max(y.size, 1),
                                                       ", ".join(dbl(v) for v in y.ravel()) or "0")
    rows.append('    {"%s", -1, %d, %s, %s, %s_idx, %s, {%s, %s, %s, %s, %s}, {%s}, %s_want},\n' % (
        name, 0 if mode == G.FILL_OR_DROP else 1, dims(xshape), dims(idx.shape), name,
        dims(y.shape), lst(offset), lst(collapsed), lst(sim), lst(obatch), lst(ibatch),
        ", ".join(map(str, sizes)), name))


KINDS = {"set": (0, lax.scatter), "add": (1, lax.scatter_add), "mul": (2, lax.scatter_mul),
         "min": (3, lax.scatter_min), "max": (4, lax.scatter_max)}


def scatter(name, kind, xshape, idx, ushape, window, inserted, sd2od, mode, obatch=(),
            ibatch=()):
    x = fill(xshape)
    u = fill(ushape) + np.float32(1)
    idx = np.asarray(idx, np.int32)
    dn = lax.ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=inserted,
                                     scatter_dims_to_operand_dims=sd2od,
                                     operand_batching_dims=obatch,
                                     scatter_indices_batching_dims=ibatch)
    k, f = KINDS[kind]
    y = np.asarray(f(x, idx, u, dn, mode=mode))
    arr(name + "_idx", idx, "int32_t", "%d")
    out.append("static const double %s_want[%d] = {%s};\n" % (
        name, y.size, ", ".join(dbl(v) for v in y.ravel())))
    rows.append('    {"%s", %d, %d, %s, %s, %s_idx, %s, {%s, %s, %s, %s, %s}, {0}, %s_want},\n' % (
        name, k, 0 if mode == G.FILL_OR_DROP else 1, dims(xshape), dims(idx.shape), name,
        dims(ushape), lst(window), lst(inserted), lst(sd2od), lst(obatch), lst(ibatch), name))


def at(name, kind, xshape, axis, idx, mode):
    x = jnp.asarray(fill(xshape))
    idx = np.asarray(idx, np.int32)
    sl = (slice(None),) * axis + (jnp.asarray(idx),)
    ushape = x[sl].shape if mode != "clip" else x[(slice(None),) * axis + (np.clip(idx, 0, 0),)].shape
    u = fill(ushape) + np.float32(1)
    ref = getattr(x.at[sl], kind)
    y = np.asarray(ref(u, mode=mode))
    arr(name + "_idx", idx, "int32_t", "%d")
    out.append("static const double %s_want[%d] = {%s};\n" % (
        name, y.size, ", ".join(dbl(v) for v in y.ravel())))
    at_rows.append('    {"%s", %d, %d, %s, %d, %s, %s_idx, %s_want},\n' % (
        name, KINDS[kind][0], 0 if mode == "drop" else 1, dims(xshape), axis, dims(idx.shape),
        name, name))


def get(name, xshape, i, j, mode):
    x = jnp.asarray(fill(xshape))
    i, j = np.asarray(i, np.int32), np.asarray(j, np.int32)
    y = np.asarray(x.at[jnp.asarray(i), jnp.asarray(j)].get(mode=mode))
    arr(name + "_i", i, "int32_t", "%d")
    arr(name + "_j", j, "int32_t", "%d")
    out.append("static const double %s_want[%d] = {%s};\n" % (
        name, y.size, ", ".join(dbl(v) for v in y.ravel())))
    get_rows.append('    {"%s", %d, %s, %s, %s_i, %s, %s_j, %s, %s_want},\n' % (
        name, 0 if mode == "fill" else 1, dims(xshape), dims(i.shape), name, dims(j.shape),
        name, dims(y.shape), name))


F, C = G.FILL_OR_DROP, G.CLIP
# gathers: jax.lax.gather's documented forms
gather("rows", (5, 3), [[1], [3], [0], [3]], (1,), (0,), (0,), (1, 3), F)
gather("rows_oob", (5, 3), [[1], [-1], [5], [4]], (1,), (0,), (0,), (1, 3), F)
gather("rows_clip", (5, 3), [[1], [-1], [5], [4]], (1,), (0,), (0,), (1, 3), C)
gather("cols", (4, 5), [[[4], [0]], [[2], [2]]], (0,), (1,), (1,), (4, 1), F)
gather("window", (4, 5), [[0, 1], [2, 3], [1, 0]], (1, 2), (), (0, 1), (2, 3), C)
gather("window_fill", (4, 5), [[0, 1], [2, 3], [1, 0], [-1, 0]], (1, 2), (), (0, 1), (2, 3), F)
gather("points", (4, 5), [[0, 1], [3, 4], [2, 0]], (), (0, 1), (1, 0), (1, 1), F)
gather("offset_first", (5, 3), [[4], [0], [2], [1]], (0,), (0,), (0,), (1, 3), F)
gather("take_along", (3, 4), [[[2], [3]], [[0], [0]], [[1], [3]]], (), (1,), (1,), (1, 1), F,
       (0,), (0,))
gather("batched_window", (2, 5, 3), [[[4], [0], [2]], [[1], [1], [3]]], (2,), (1,), (1,),
       (1, 1, 3), F, (0,), (0,))
gather("batch_late", (5, 2), [[[3], [1]], [[0], [4]], [[2], [2]]], (), (0,), (0,), (1, 1), C,
       (1,), (1,))
# scatters: each kind, duplicates where JAX defines the result, out of range in each mode
scatter("add_rows", "add", (5, 3), [[1], [3], [1], [7]], (4, 3), (1,), (0,), (0,), F)
scatter("add_rows_clip", "add", (5, 3), [[1], [3], [1], [7]], (4, 3), (1,), (0,), (0,), C)
scatter("set_rows", "set", (5, 3), [[4], [0], [-2]], (3, 3), (1,), (0,), (0,), F)
scatter("mul_rows", "mul", (5, 3), [[1], [3], [1], [-1]], (4, 3), (1,), (0,), (0,), F)
scatter("min_rows", "min", (5, 3), [[1], [3], [1], [2]], (4, 3), (1,), (0,), (0,), F)
scatter("max_rows", "max", (5, 3), [[1], [3], [1], [9]], (4, 3), (1,), (0,), (0,), C)
scatter("add_points", "add", (4, 5), [[0, 1], [3, 4], [0, 1], [2, 7]], (4,), (), (0, 1), (0, 1),
        F)
scatter("add_window", "add", (4, 5), [[0, 1], [3, 3], [1, 1]], (3, 2, 3), (1, 2), (), (0, 1), F)
scatter("add_window_clip", "add", (4, 5), [[0, 1], [3, 3], [1, 1]], (3, 2, 3), (1, 2), (), (0, 1),
        C)
scatter("max_window", "max", (4, 5), [[0, 1], [1, 2]], (2, 3, 2), (1, 2), (), (0, 1), F)
scatter("add_batched", "add", (2, 5), [[[4], [0], [4]], [[1], [1], [3]]], (2, 3), (), (1,), (1,),
        F, (0,), (0,))
scatter("set_batched", "set", (2, 5), [[[4], [0], [2]], [[1], [3], [9]]], (2, 3), (), (1,), (1,),
        F, (0,), (0,))
# x.at[...] updates along an axis (negative indices wrap once; "drop" drops the rest)
at("at_add", "add", (3, 5), 1, [0, -1, 7, 2, 0], "drop")
at("at_add_clip", "add", (3, 5), 1, [0, -1, 7, 2, 0], "clip")
at("at_set", "set", (4, 3), 0, [2, -1, 0], "drop")
at("at_mul", "mul", (3, 5), 1, [0, -1, 7, 2, 0], "drop")
at("at_min", "min", (2, 3, 4), 1, [2, 0, 2], "drop")
at("at_max", "max", (2, 3, 4), 2, [3, -4, 3, 5], "drop")

# x[i, j] with index arrays (advanced indexing on the leading axes), broadcast together
get("get_pairs", (4, 5, 3), [[0, 3, -1], [5, 1, 2]], [[1, -2, 4], [0, 7, 2]], "fill")
get("get_pairs_clip", (4, 5, 3), [[0, 3, -1], [5, 1, 2]], [[1, -2, 4], [0, 7, 2]], "clip")
get("get_broadcast", (4, 5), [[3], [-4]], [0, 4, -1], "fill")

print("/* gather_jax.h: expected values computed by JAX %s (tests/gather_jax_values.py); "
      "generated, do not edit. */" % jax.__version__)
print("#include <math.h>\n#include <stdint.h>\n")
print("".join(out))
print("""/* One lax.gather / lax.scatter* case: kind -1 is a gather, else a kiln_scatter_kind;
 * mode a kiln_gather_mode (0 FILL, 1 CLIP); shape: the gather's result or the scatter's
 * updates; lists: {count, axes...} of offset_dims/update_window_dims, collapsed_slice_dims/
 * inserted_window_dims, start_index_map/scatter_dims_to_operand_dims,
 * operand_batching_dims, start_indices_batching_dims/scatter_indices_batching_dims. */
typedef struct gj_case {
    const char *name;
    int kind, mode;
    int xr;
    int64_t xd[4];
    int ir;
    int64_t id[4];
    const int32_t *idx;
    int sr;
    int64_t sd[4];
    int lists[5][9];
    int64_t sizes[4];
    const double *want;
} gj_case;
static const gj_case gj_cases[] = {
%s};

/* x.at[(slice(None),) * axis + (idx,)].<kind>(fill(shape) + 1, mode): mode 0 "drop", 1 "clip". */
typedef struct gj_at {
    const char *name;
    int kind, mode;
    int xr;
    int64_t xd[4];
    int axis;
    int ir;
    int64_t id[4];
    const int32_t *idx;
    const double *want;
} gj_at;
static const gj_at gj_ats[] = {
%s};

/* x.at[i, j].get(mode): mode 0 "fill", 1 "clip"; shape: the result's. */
typedef struct gj_get {
    const char *name;
    int mode;
    int xr;
    int64_t xd[4];
    int ir;
    int64_t id[4];
    const int32_t *i;
    int jr;
    int64_t jd[4];
    const int32_t *j;
    int yr;
    int64_t yd[4];
    const double *want;
} gj_get;
static const gj_get gj_gets[] = {
%s};""" % ("".join(rows), "".join(at_rows), "".join(get_rows)))
