#!/bin/sh
# run.sh — the Hessian-vector product figure side by side with JAX, in one run (issue 35).
# Usage: bench/hvp/run.sh [reps] [threads]   (defaults: 30 runs timed, all cores)
# Builds kiln (Release), makes bench/.venv with NumPy and JAX (CPU) if they are missing,
# runs kiln's side (it writes the shared weights, direction and batch, and its H v, to a
# temporary directory), then JAX's on the same files, and prints the Markdown table of
# bench/RESULTS.md. On a quiet host pinned to two cores: taskset -c 0,1 bench/hvp/run.sh 40 2
set -e
cd "$(dirname "$0")/../.."
reps=${1:-30}
threads=${2:-$(nproc)}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_hvp >/dev/null
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax' 2>/dev/null || bench/.venv/bin/pip install -q numpy jax
cache=$(mktemp -d)
dir=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    ./build-bench/bench_hvp "$dir" "$reps" >"$dir/kiln.txt"
bench/.venv/bin/python bench/hvp/hvp_jax.py "$dir" "$dir/kiln.txt" "$reps" "$threads"
rm -rf "$cache" "$dir"
