"""safetensors_interop.py MINE THEIRS — the Python half of `test_safetensors --interop`.

Checks that MINE, written by kiln_safetensors_save, reads with the safetensors package to
the values test_safetensors.c put in it (bf16 as ml_dtypes.bfloat16, f16 as numpy.float16,
compared bit for bit), then writes THEIRS with the package (same names,
dtypes and values) for kiln to read back. Exits non-zero, saying what differed, otherwise.
"""
import sys

import ml_dtypes
import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file


def expected():
    i6 = np.arange(6, dtype=np.float32)
    return {
        "f32": (i6 * np.float32(0.5) - np.float32(1.25)).reshape(2, 3),
        "f64": np.arange(3, dtype=np.float64) / 3.0,
        "i32": (-7 * np.arange(4)).astype(np.int32),
        "i64": np.array([1 << 40, 1 << 41], dtype=np.int64),
        "bool": (np.arange(5) % 2).astype(np.bool_),
        "h.0.\u00e9scalar": np.array(-0.75, dtype=np.float32),
        # every 16-bit pattern, NaN payloads and all: each side must keep the bits exactly
        "bf16.every": np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16),
        "f16.every": np.arange(65536, dtype=np.uint16).view(np.float16),
        "f16": (i6 * np.float32(0.5) - np.float32(1.25)).astype(np.float16).reshape(2, 3),
    }


def main(mine, theirs):
    want = expected()
    bad = []
    with safe_open(mine, framework="numpy") as f:
        meta = f.metadata()
        if meta != {"format": "kiln-gpt", "step": "12"}:
            bad.append(f"metadata {meta}")
        if sorted(f.keys()) != sorted(want):
            bad.append(f"names {sorted(f.keys())}")
        for name, w in want.items():
            if name not in f.keys():
                continue
            got = f.get_tensor(name)
            if got.dtype != w.dtype or got.shape != w.shape or got.tobytes() != w.tobytes():
                bad.append(f"{name}: {got.dtype}{got.shape} {got!r}, want {w.dtype}{w.shape} {w!r}")
    if bad:
        print("safetensors_interop: kiln's file reads wrong in Python:\n  " + "\n  ".join(bad))
        return 1
    save_file(want, theirs, metadata={"writer": "python safetensors"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
