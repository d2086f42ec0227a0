#!/bin/sh
# run_jit.sh — the compiler benchmark side by side with NumPy, in one run.
# Usage: bench/run_jit.sh [reps]   (default 7; figures are medians over the reps)
# Builds kiln (Release), makes bench/.venv with NumPy if it is missing, runs both.
set -e
cd "$(dirname "$0")/.."
reps=${1:-7}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_jit >/dev/null
if [ ! -x bench/.venv/bin/python ]; then
    python3 -m venv bench/.venv
    bench/.venv/bin/pip install -q numpy
fi
cache=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
echo "# kiln"
KILN_CACHE_DIR=$cache ./build-bench/bench_jit "$reps"
echo "# numpy $(bench/.venv/bin/python -c 'import numpy; print(numpy.__version__)')"
bench/.venv/bin/python bench/numpy_ref.py "$reps"
rm -rf "$cache"
