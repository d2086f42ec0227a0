#!/bin/sh
# kiln's elementwise math functions against jax.jit's, one thread each, f32 and f64
# (bench/RESULTS.md, "Math functions"). Usage: bench/math/run.sh [BUILD] [N] [REPS]
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
shift 2>/dev/null || true
py=$here/../.venv/bin/python
[ -x "$py" ] || py=python3
KILN_NUM_THREADS=1 taskset -c 0 "$build/bench_math" "$@"
XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    taskset -c 0 "$py" "$here/math_jax.py" "$@"
