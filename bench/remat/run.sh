#!/bin/sh
# run.sh — rematerialisation figures side by side with JAX, in one run (issue 11).
# Usage: bench/remat/run.sh [reps] [threads]   (defaults: 10 steps timed, all cores)
# Builds kiln (Release), makes bench/.venv with NumPy and JAX (CPU) if they are missing,
# then runs kiln's GPT-2-style step under budgets and policies (bench_remat) and JAX's
# with jax.checkpoint per block (remat_jax.py), each printing a Markdown table.
set -e
cd "$(dirname "$0")/../.."
reps=${1:-10}
threads=${2:-$(nproc)}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_remat >/dev/null
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax' 2>/dev/null || bench/.venv/bin/pip install -q numpy jax
cache=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    ./build-bench/bench_remat "$reps"
bench/.venv/bin/python bench/remat/remat_jax.py "$reps" "$threads"
rm -rf "$cache"
