#!/bin/sh
# run.sh — the scanned-program twin side by side with JAX, in one run (issue 33), and the
# GPT step scanned against unrolled at several depths.
# Usage: bench/control/run.sh [runs] [threads]   (defaults: 20 runs timed, all cores)
# Builds kiln (Release), makes bench/.venv with NumPy and JAX (CPU) if they are missing,
# runs kiln's RNN (it writes its loss and gradients to a temporary directory), then JAX's
# on the same values, prints the Markdown table of bench/RESULTS.md, then bench_scan_gpt.
# On a quiet host pinned to two cores: taskset -c 0,1 bench/control/run.sh 20 2
set -e
cd "$(dirname "$0")/../.."
runs=${1:-20}
threads=${2:-$(nproc)}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j "$(nproc)" --target bench_rnn_scan bench_scan_gpt >/dev/null
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/python -c 'import numpy, jax' 2>/dev/null || bench/.venv/bin/pip install -q numpy jax
cache=$(mktemp -d)
dir=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    ./build-bench/bench_rnn_scan "$dir" "$runs" >"$dir/kiln.txt"
bench/.venv/bin/python bench/control/rnn_jax.py "$dir" "$dir/kiln.txt" "$runs" "$threads"
KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads ./build-bench/bench_scan_gpt --runs 5
rm -rf "$cache" "$dir"
