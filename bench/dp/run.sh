#!/bin/sh
# run.sh — bench_dp at 1, 2 and 4 MPI ranks on this machine, one after the other
# (bench/RESULTS.md, "Data parallel"). Usage: bench/dp/run.sh [build dir] [steps]
build=${1:-build}
steps=${2:-30}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$build/bench_dp" ] || { echo "run.sh: no $build/bench_dp (kiln built without MPI?)" >&2; exit 1; }
for n in 1 2 4; do
    mpiexec -np $n "$build/bench_dp" "$steps" 16 || exit 1
done
