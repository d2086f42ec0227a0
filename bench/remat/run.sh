#!/bin/sh
# run.sh — rematerialisation figures side by side with JAX, in one run (issue 11).
# Usage: bench/remat/run.sh [reps] [threads] [nojax]   (defaults: 10 steps timed, all cores)
# Builds kiln (Release) and runs kiln's GPT-2-style step with nothing recomputed, with the
# default (cheap values recomputed), under budgets and under policies (bench_remat: every
# variant compiled first, then their steps interleaved, one row per variant with the
# ms/step median and its ratio to the step with nothing recomputed); then, unless the
# third argument is "nojax", makes bench/.venv with NumPy and JAX (CPU) if they are
# missing and runs JAX's step with jax.checkpoint per block (remat_jax.py). Each prints a
# Markdown table. On a quiet host pinned to two cores: taskset -c 0,1 bench/remat/run.sh 20 2 nojax
set -e
cd "$(dirname "$0")/../.."
reps=${1:-10}
threads=${2:-$(nproc)}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_remat >/dev/null
cache=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    ./build-bench/bench_remat "$reps"
rm -rf "$cache"
[ "${3:-}" = nojax ] && exit 0
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax' 2>/dev/null || bench/.venv/bin/pip install -q numpy jax
bench/.venv/bin/python bench/remat/remat_jax.py "$reps" "$threads"
