#!/bin/sh
# bench/optim/run.sh [BUILD] [REPS] [B D H] — an MLP training step under AdamW, Lion and
# Adafactor, kiln (bench_optim) beside JAX + optax (optax_jax.py) on the same data, one
# thread each: the optimiser state, the planned and measured peak (XLA's memory analysis
# for JAX), ms per step and the loss after the same steps. Needs bench/.venv with jax and
# optax (python3 -m venv bench/.venv && bench/.venv/bin/pip install jax optax).
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
reps=${2:-20}
shift 2 2>/dev/null || shift $#
dir=$(mktemp -d /tmp/kiln-bench-optim-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export KILN_CACHE_DIR="$dir/cache"
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1); $(date -u '+%Y-%m-%d %H:%M UTC');" \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
KILN_NUM_THREADS=1 taskset -c 0 "$build/bench_optim" "$dir" "$reps" "$@" >"$dir/kiln.txt"
cat "$dir/kiln.txt"
XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
    taskset -c 0 "$here/../.venv/bin/python" "$here/optax_jax.py" "$dir" "$dir/kiln.txt" "$reps"
