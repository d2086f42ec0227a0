#!/bin/sh
# run.sh — issue 14's programs side by side with JAX and NumPy, in one run: for each
# program at each size, kiln's side (bench_programs writes the inputs and its outputs to a
# temporary folder) and then JAX's and NumPy's on the same inputs (programs.py, which also
# compares the numbers), every side on the same `threads` cores. Prints a Markdown table:
# medians of `reps` (>= 20) whole runs per side, kiln / JAX, kiln / NumPy, the largest
# difference from JAX relative to the output's largest magnitude, and each side's first
# call (trace + compile + run; kiln with an empty compile cache, JAX a fresh jax.jit).
# With KILN_COMPILE_TIERS=2 in the environment kiln's first calls run tier 1 (no compile:
# docs/performance.md, "Compile tiers"); the first-call column then also says, in
# parentheses, how many calls ran before the -O3 build was swapped in, and kiln's time per
# call is the -O3 build's, timed after the swap.
#
# Usage: bench/programs/run.sh [reps] [threads] [BUILD]  (defaults: 30, 2, build-bench)
# Environment: PROGRAMS, a "|"-separated list of "name sizes..." to run instead of the
# default sizes below (two per program, and a third, rows of 16, for reduce); BEFORE,
# another build folder whose bench_programs (an older kiln) runs right before this one on
# each program, adding "before" columns, so that before and after see the same machine
# load. CLOCK=cpu: every side is timed in its
# process's CPU time instead of the wall clock (BENCH_CLOCK=cpu); with threads = 1 that is
# each run's time on an idle core, which holds on a loaded machine where wall-clock
# medians do not (with more threads it would count spinning and waiting threads too).
set -e
cd "$(dirname "$0")/../.."
reps=${1:-30}
threads=${2:-2}
build=${3:-build-bench}
py=bench/.venv/bin/python
$py -c 'import numpy, jax' 2>/dev/null || {
    echo "run.sh: bench/.venv needs numpy and jax:" >&2
    echo "  python3 -m venv bench/.venv && bench/.venv/bin/pip install numpy jax" >&2
    exit 1
}
if [ "$build" = build-bench ]; then
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build-bench -j 2 --target bench_programs >/dev/null
fi
programs=${PROGRAMS:-"embed 64 128 32000 256 512 256|embed 16 512 50000 512 256 64|rope 4 128 8 64|rope 8 512 16 128|block 4 128 256|block 2 256 512|block_sdpa 4 128 256|block_sdpa 2 256 512|attn 4 256 8 8 64|attn 1 1024 8 2 64|xent 512 32000|xent 256 50304|adam 4000000|adam 1000003|cumsum 64 2048|cumsum 1 1000000|reduce 8192 512|reduce 1000003 3|reduce 131072 16|embed_grad 16 512 32000 128|posenc 8 512 256|posenc 1 4096 1024|trig 1000000|transpose 4096 4096|transpose 1000 30000|fourier 65536 3 128|fourier 4096 64 512|axes 1 4096 1024|axes 16 128 512|nhwc 32 64 56 56|nhwc 8 3 224 224|math64 4194304"}
work=$(mktemp -d /tmp/kiln-programs-XXXXXX)
cache=$work/kcache
mkdir -m 0700 "$cache"
export BENCH_CLOCK=${CLOCK:-wall}
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores;" \
    "$(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg);" \
    "$threads threads each, medians of $reps runs, $BENCH_CLOCK-clock times"
echo
if [ -n "$BEFORE" ]; then
    echo "| program | sizes | kiln before ms | kiln ms | JAX ms | NumPy ms | before / JAX | kiln / JAX | kiln / NumPy | max rel. diff vs JAX | kiln before first call ms | kiln first call ms | JAX first call ms |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
else
    echo "| program | sizes | kiln ms | JAX ms | NumPy ms | kiln / JAX | kiln / NumPy | max rel. diff vs JAX | kiln first call ms | JAX first call ms |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
fi
echo "$programs" | tr '|' '\n' | while read -r name sizes; do
    d=$work/run
    rm -rf "$d" "$cache" && mkdir -p "$d" && mkdir -m 0700 "$cache" # an empty cache each
    echo "before_ms -1" >"$d/before.txt"
    if [ -n "$BEFORE" ]; then
        # shellcheck disable=SC2086
        KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
            taskset -c "0-$((threads - 1))" "$BEFORE/bench_programs" "$d" "$reps" $name $sizes |
            sed 's/^kiln_ms/before_ms/; s/^kiln_first_ms/before_first_ms/' >"$d/before.txt"
        rm -rf "$cache" && mkdir -m 0700 "$cache"
    fi
    # shellcheck disable=SC2086
    KILN_CACHE_DIR=$cache KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
        taskset -c "0-$((threads - 1))" "$build/bench_programs" "$d" "$reps" $name $sizes >"$d/kiln.txt"
    # shellcheck disable=SC2086
    $py bench/programs/programs.py "$d" "$reps" "$threads" $name $sizes >"$d/py.txt"
    cat "$d/before.txt" "$d/kiln.txt" "$d/py.txt" | awk -v name="$name" -v sizes="$sizes" '
        { v[$1] = $2 }
        END {
            b = v["before_ms"]; k = v["kiln_ms"]; j = v["jax_ms"]; n = v["numpy_ms"]
            nr = (n == "nan" || n + 0 == 0) ? "-" : sprintf("%.2fx", k / n)
            ns = (n == "nan") ? "-" : sprintf("%.3f", n)
            t1 = v["kiln_tier1_calls"] + 0 # calls before the -O3 build was swapped in
            first = sprintf("%.0f%s | %.0f", v["kiln_first_ms"], t1 > 0 ? sprintf(" (%d)", t1) : "", v["jax_first_ms"])
            if (b + 0 >= 0) {
                first = sprintf("%.0f | %s", v["before_first_ms"], first)
                printf "| %s | %s | %.3f | %.3f | %.3f | %s | %.2fx | %.2fx | %s | %s | %s |\n", name, sizes, b, k, j, ns, b / j, k / j, nr, v["err"], first
            } else
                printf "| %s | %s | %.3f | %.3f | %s | %.2fx | %s | %s | %s |\n", name, sizes, k, j, ns, k / j, nr, v["err"], first
        }'
done
rm -rf "$work"
