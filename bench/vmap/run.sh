#!/bin/sh
# run.sh — per-example gradients (kiln_vmap of kiln_grad) side by side with JAX's
# jax.vmap(jax.grad(loss)), in one run (issue 35).
# Usage: bench/vmap/run.sh [batch] [reps] [threads]   (defaults: 64, 30 runs timed, all cores)
# Builds kiln (Release), makes bench/.venv with NumPy and JAX (CPU) if they are missing,
# runs kiln's side (it writes the shared weights and batch, and its gradients, to a
# temporary directory), then JAX's on the same files, and prints the Markdown table of
# bench/RESULTS.md. On a quiet host pinned to two cores: taskset -c 0,1 bench/vmap/run.sh 64 30 2
set -e
cd "$(dirname "$0")/../.."
batch=${1:-64}
reps=${2:-30}
threads=${3:-$(nproc)}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_vmap >/dev/null
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax' 2>/dev/null || bench/.venv/bin/pip install -q numpy jax
cache=$(mktemp -d)
dir=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    ./build-bench/bench_vmap "$dir" "$batch" "$reps" >"$dir/kiln.txt"
bench/.venv/bin/python bench/vmap/vmap_jax.py "$dir" "$dir/kiln.txt" "$reps" "$threads"
rm -rf "$cache" "$dir"
