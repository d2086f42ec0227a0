"""Writes tests/data/half_table.txt: conversions to and from bf16 and f16 as ml_dtypes
(and NumPy, for f16) compute them, which tests/test_half.c holds kiln's conversions to.
Run with the bench venv (numpy, ml_dtypes): python tests/data/make_half_table.py

Lines:  w H BF F   the 16-bit pattern H widened: BF (bf16 -> f32 bits), F (f16 -> f32 bits)
        s X B F    the f32 bits X narrowed: B (bf16 bits), F (f16 bits)
        d X B F B2 the f64 bits X narrowed: B (bf16 bits), F (f16 bits), B2 (bf16 bits of
                   X rounded to f32 first). ml_dtypes 0.7 rounds f64 to bf16 once (B);
                   kiln rounds through f32 (B2), as its f32 kernels do.
NaN results are written with their bits as ml_dtypes gives them; the test compares NaN
results by class (quiet NaN, sign kept), the rest bit for bit."""
import struct
import numpy as np
import ml_dtypes

rng = np.random.default_rng(20261203)
out = []

# widening: every 16-bit pattern is cheap to walk in C; here a sample plus the edges
wide = sorted(set(list(range(0, 65536, 97)) + [0, 1, 0x3ff, 0x400, 0x7bff, 0x7c00, 0x7c01,
                                                0x7e00, 0x7f80, 0x7fc0, 0x8000, 0x8001, 0xfc00,
                                                0xff80, 0xffff]))
h = np.array(wide, dtype=np.uint16)
bf = h.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
f16 = h.view(np.float16).astype(np.float32).view(np.uint32)
for a, b, c in zip(h, bf, f16):
    out.append("w %04x %08x %08x" % (a, b, c))

# narrowing from f32: the edges of every format, ties, subnormals, then random bits
def f32_edges():
    v = []
    for e in range(0, 256):  # every exponent, with mantissas near the rounding points
        for m in (0, 1, 0x7fff, 0x8000, 0x8001, 0x18000, 0xfff, 0x1000, 0x1001, 0x3000,
                  0x7fffff, 0x7fe000, 0x7ff000, 0x7ff001):
            for s in (0, 1):
                v.append((s << 31) | (e << 23) | m)
    for x in (65504.0, 65519.0, 65520.0, 65519.99, 2.0**-24, 2.0**-25, 2.0**-25 * 1.5,
              2.0**-14, 2.0**-14 - 2.0**-25, 3.3895314e38, 3.3961776e38, 1e-45):
        v.append(struct.unpack("<I", struct.pack("<f", x))[0])
    return v

xs = f32_edges() + list(rng.integers(0, 2**32, size=8000, dtype=np.uint64))
x = np.array(xs, dtype=np.uint64).astype(np.uint32)
fx = x.view(np.float32)
with np.errstate(over="ignore", invalid="ignore"):
    b = fx.astype(ml_dtypes.bfloat16).view(np.uint16)
    f = fx.astype(np.float16).view(np.uint16)
for a, p, q in zip(x, b, f):
    out.append("s %08x %04x %04x" % (a, p, q))

# narrowing from f64: random values over the f16 and bf16 ranges, and halfway cases
d = np.concatenate([
    rng.standard_normal(2000) * np.exp2(rng.integers(-30, 20, size=2000)),
    (np.arange(1, 1000) + 0.5) * 2.0**-24,                 # f16 subnormal ties
    1.0 + (np.arange(0, 1000) * 2 + 1) * 2.0**-11,          # f16 ties at 1
    1.0 + (np.arange(0, 200) * 2 + 1) * 2.0**-8 + 2.0**-40, # bf16 just above ties
])
db = d.view(np.uint64)
with np.errstate(over="ignore"):
    b = d.astype(ml_dtypes.bfloat16).view(np.uint16)
    f = d.astype(np.float16).view(np.uint16)
    b2 = d.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
for a, p, q, r in zip(db, b, f, b2):
    out.append("d %016x %04x %04x %04x" % (a, p, q, r))

with open(__file__.replace("make_half_table.py", "half_table.txt"), "w") as fh:
    fh.write("# ml_dtypes %s, numpy %s: see make_half_table.py\n" % (ml_dtypes.__version__,
                                                                   np.__version__))
    fh.write("\n".join(out) + "\n")
