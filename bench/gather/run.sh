#!/bin/sh
# kiln's gather and .at[] scatters of a [V, D] table against JAX's on the CPU
# (bench/RESULTS.md, "Gather and scatter"). Usage: bench/gather/run.sh [BUILD] [V] [D] [N] [REPS]
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
shift 2>/dev/null || true
py=$here/../.venv/bin/python
[ -x "$py" ] || py=python3
"$build/bench_gather" "$@"
"$py" "$here/gather_jax.py" "$@"
