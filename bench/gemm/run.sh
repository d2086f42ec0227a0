#!/bin/sh
# run.sh — the GEMM providers (bench_gemm) side by side with XLA (jax_gemm.py) on the same
# shapes, in one run, 1 and 2 threads; prints bench/RESULTS.md's table (medians over
# `runs` runs of each side, alternated, each run itself a median over `reps` calls).
# Usage: bench/gemm/run.sh [runs] [reps]   (defaults 3 and 11)
set -e
cd "$(dirname "$0")/../.."
runs=${1:-3}
reps=${2:-11}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j 2 --target bench_gemm >/dev/null
py=bench/.venv/bin/python
[ -x $py ] || { python3 -m venv bench/.venv && $py -m pip install -q numpy jax; }
dir=$(mktemp -d)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $(date -u +%Y-%m-%d)"
i=0
while [ $i -lt "$runs" ]; do
    ./build-bench/bench_gemm "$reps" 2 >"$dir/kiln$i.md"
    # XLA's threads are the CPUs it may run on
    taskset -c 0 $py bench/gemm/jax_gemm.py "$reps" >"$dir/xla1_$i.md"
    $py bench/gemm/jax_gemm.py "$reps" >"$dir/xla2_$i.md"
    i=$((i + 1))
done
$py bench/gemm/table.py "$dir"/*.md
rm -rf "$dir"
