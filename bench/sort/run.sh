#!/bin/sh
# kiln's top_k, sort and argsort of [B, V] f32 logits against JAX's on the CPU
# (bench/RESULTS.md, "Sorting and top_k"). Usage: bench/sort/run.sh [BUILD] [B] [V] [K] [REPS]
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
shift 2>/dev/null || true
py=$here/../.venv/bin/python
[ -x "$py" ] || py=python3
"$build/bench_sort" "$@"
"$py" "$here/sort_jax.py" "$@"
