#!/bin/sh
# bench/linalg/run.sh [BUILD] [REPS] — kiln's Cholesky factor, triangular solve and a
# Gaussian process's gradient (bench_linalg) beside JAX's on the same inputs
# (linalg_jax.py), each on every core, medians of REPS runs; bench/RESULTS.md, "Linear
# algebra". Needs bench/.venv with jax.
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
reps=${2:-11}
dir=$(mktemp -d /tmp/kiln-bench-linalg-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export KILN_CACHE_DIR="$dir/cache"
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1); $(nproc) cores;" \
     "$(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench_linalg" "$dir" "$reps"
"$here/../.venv/bin/python" "$here/linalg_jax.py" "$dir" "$reps"
