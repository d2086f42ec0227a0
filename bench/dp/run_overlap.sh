#!/bin/sh
# run_overlap.sh — all-reduces overlapped with the backward pass against blocking ones
# (bench/RESULTS.md, issue 17, "Overlap"), all in one run: 2 and 4 in-process devices with
# one all-reduce per gradient, then 2 MPI ranks on loopback with one per gradient and with
# 256 KiB buckets. Each line pair is bench_overlap alternating the two modes REPS times.
# Usage: bench/dp/run_overlap.sh [build dir] [steps (20)] [reps (5)]
build=${1:-build}
steps=${2:-20}
reps=${3:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
b="$build/bench_overlap"
[ -x "$b" ] || { echo "run_overlap.sh: no $b" >&2; exit 1; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$b" local 2 "$steps" 16 0 "$reps" || exit 1
"$b" local 4 "$steps" 16 0 "$reps" || exit 1
if command -v mpiexec >/dev/null 2>&1; then
    mpiexec -np 2 "$b" mpi "$steps" 16 0 "$reps" || exit 1
    mpiexec -np 2 "$b" mpi "$steps" 16 256 "$reps" || exit 1
else
    echo "run_overlap.sh: no mpiexec: the MPI lines are skipped"
fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
