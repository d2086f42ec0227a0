"""make_half_safetensors.py — writes tests/data/half.safetensors, the fixture test_safetensors.c
reads without Python: bf16 and f16 tensors of edge values written by the safetensors package,
converted from f64 by ml_dtypes (bf16) and NumPy (f16). Prints the bit patterns ml_dtypes and
NumPy give, which test_safetensors.c keeps as its expected values.

    bench/.venv/bin/python tests/data/make_half_safetensors.py tests/data/half.safetensors
"""
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

EDGES = [
    0.0, -0.0, 1.0, -2.5, 1.0 / 3.0, float("nan"), float("inf"), float("-inf"),
    3.3895313892515355e38,  # bf16's largest finite
    65504.0,                # f16's largest finite
    1e-40,                  # an f32 subnormal: bf16 keeps it (as a subnormal)
    5.960464477539063e-08,  # f16's least subnormal, 2^-24
    6.097555160522461e-05,  # f16's largest subnormal, 1023 * 2^-24
    1e6,                    # beyond f16: inf
]


def main(path):
    x = np.array(EDGES, dtype=np.float64)
    bf = x.astype(np.float32).astype(ml_dtypes.bfloat16)
    with np.errstate(over="ignore"):  # 1e6 and bf16's max overflow f16: inf, as intended
        h = x.astype(np.float16)
    save_file({"bf16": bf, "f16": h.reshape(2, 7), "bf16_scalar": np.array(-1.5, ml_dtypes.bfloat16)},
              path, metadata={"writer": "tests/data/make_half_safetensors.py"})
    for name, a in (("bf16", bf), ("f16", h)):
        print(name, ", ".join(f"0x{b:04x}" for b in a.view(np.uint16)))


if __name__ == "__main__":
    main(sys.argv[1])
