#!/bin/sh
# bench/gemm/matmul.sh — kiln_matmul (bench_matmul: the default GEMM provider, then
# KILN_BLAS=openblas) and JAX and NumPy (matmul_jax.py) on the same square f32 and f64
# products, one after the other on the same machine. Usage: bench/gemm/matmul.sh BUILD_DIR [reps]
set -e
build=${1:-build-bench}
reps=${2:-7}
here=$(dirname "$0")
"$build/bench_matmul" "$reps"
KILN_BLAS=openblas "$build/bench_matmul" "$reps"
py=${KILN_BENCH_PYTHON:-$here/../.venv/bin/python}
[ -x "$py" ] || py=python3
"$py" "$here/matmul_jax.py" "$reps" || echo "(JAX not available: $py)"
