#!/bin/sh
# bench/half/run.sh — bench_half (kiln), half_jax.py (JAX on the CPU) and half_torch.py
# (PyTorch eager and torch.compile, the chain only) one after the other on the same
# machine. Usage: bench/half/run.sh BUILD_DIR [reps]
set -e
build=${1:-build}
reps=${2:-9}
here=$(dirname "$0")
"$build/bench_half" "$reps"
py=${KILN_BENCH_PYTHON:-$here/../.venv/bin/python}
[ -x "$py" ] || py=python3
"$py" "$here/half_jax.py" "$reps" || echo "(JAX not available: $py)"
"$py" "$here/half_torch.py" "$reps" || echo "(PyTorch not available: $py)"
