#!/bin/sh
# run.sh — the generator's speed side by side with JAX, in one run (bench_random.c,
# jax_random.py). Usage: bench/random/run.sh [reps]   (default 7; medians over the reps)
# Needs bench/.venv with jax (see bench/README or bench/run_plan.sh).
set -e
cd "$(dirname "$0")/../.."
reps=${1:-7}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j 2 --target bench_random >/dev/null
cache=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
echo "# kiln"
KILN_CACHE_DIR=$cache ./build-bench/bench_random "$reps"
echo "# jax $(bench/.venv/bin/python -c 'import jax; print(jax.__version__)')"
bench/.venv/bin/python bench/random/jax_random.py "$reps"
rm -rf "$cache"
