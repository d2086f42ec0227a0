#!/bin/sh
# run.sh — a small CNN trained with AdamW, side by side with JAX and PyTorch (issue 35).
# Usage: bench/cnn/run.sh [steps] [threads]   (defaults: 100 steps, all cores)
# Builds kiln (Release), makes bench/.venv with NumPy, JAX and PyTorch (CPU) if they are
# missing, runs kiln's side (it writes the shared initial parameters and batches, and its
# losses, to a temporary directory), then PyTorch's and JAX's on the same files (each
# training as many steps from the same init, checking its losses against kiln's), and
# prints the Markdown table of bench/RESULTS.md. Without PyTorch (no wheel reachable) the
# table has kiln and JAX only. On a quiet host pinned to two cores:
# taskset -c 0,1 bench/cnn/run.sh 100 2
set -e
cd "$(dirname "$0")/../.."
steps=${1:-100}
threads=${2:-$(nproc)}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_cnn >/dev/null
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax' 2>/dev/null || bench/.venv/bin/pip install -q numpy jax
bench/.venv/bin/python -c 'import torch' 2>/dev/null || bench/.venv/bin/pip install -q torch || true
cache=$(mktemp -d)
dir=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
# The same cores for every side: kiln's pool and OpenBLAS get `threads` threads.
KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    ./build-bench/bench_cnn "$dir" "$steps" >"$dir/kiln.txt"
if bench/.venv/bin/python -c 'import torch' 2>/dev/null; then
    bench/.venv/bin/python bench/cnn/cnn_torch.py "$dir" "$dir/kiln.txt" "$threads" >"$dir/torch.txt"
fi
bench/.venv/bin/python bench/cnn/cnn_jax.py "$dir" "$dir/kiln.txt" "$dir/torch.txt" "$threads"
rm -rf "$cache" "$dir"
