#!/bin/sh
# run.sh — the training-step benchmark side by side with JAX and PyTorch, in one run.
# Usage: bench/mlp_train/run.sh [reps] [threads]   (defaults: 30 steps timed, all cores)
# Builds kiln (Release), makes bench/.venv with NumPy, JAX and PyTorch (CPU) if they are
# missing, runs kiln's side (it writes the shared initial weights and batch, and its
# loss, gradients and one-step parameters, to a temporary directory), then the JAX and
# PyTorch sides on the same files, and prints the Markdown tables of bench/RESULTS.md.
set -e
cd "$(dirname "$0")/../.."
reps=${1:-30}
threads=${2:-$(nproc)}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_mlp_train >/dev/null
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax, torch' 2>/dev/null ||
    bench/.venv/bin/pip install -q numpy jax torch
cache=$(mktemp -d)
dir=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
# The same cores for every side: kiln's pool and OpenBLAS get `threads` threads.
KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    ./build-bench/bench_mlp_train "$dir" "$reps" >"$dir/kiln.txt"
bench/.venv/bin/python bench/mlp_train/jax_torch.py "$dir" "$dir/kiln.txt" "$reps" "$threads"
rm -rf "$cache" "$dir"
