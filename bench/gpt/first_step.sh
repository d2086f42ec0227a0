#!/bin/sh
# first_step.sh — the GPT training step's first call, side by side (issue 37): kiln with one
# compile tier, kiln with two (KILN_COMPILE_TIERS=2: the first steps run the kernels from
# their descriptions while -O3 compiles in the background; docs/performance.md), and JAX's
# jit, from the same initial weights and batches, each in a new process with an empty
# kernel cache, `rounds` times alternated. The first call is the compile (kiln's
# summary.json compile_ms; JAX's lower + compile, gpt_jax.py's compile_s) plus the first
# step (losses.csv's ms; JAX's first timed call). Also prints how many steps ran before
# kiln's -O3 build was swapped in (steps slower than 2x the last one) and the last step.
#
# Usage: bench/gpt/first_step.sh [rounds] [threads] [B T L H C] [BUILD]
#   (defaults: 3 rounds, 2 threads, bench/gpt's configuration 8 128 4 4 256, build-bench)
set -e
cd "$(dirname "$0")/../.."
rounds=${1:-3}
threads=${2:-2}
B=${3:-8} T=${4:-128} L=${5:-4} H=${6:-4} C=${7:-256}
build=${8:-build-bench}
steps=12
py=bench/.venv/bin/python
$py -c 'import numpy, jax, safetensors' 2>/dev/null || {
    echo "first_step.sh: bench/.venv needs numpy, jax and safetensors" >&2
    exit 1
}
[ -x "$build/kiln" ] || { echo "first_step.sh: $build/kiln is not built" >&2; exit 1; }
work=$(mktemp -d /tmp/kiln-first-step-XXXXXX)
$py bench/gpt/make_inputs.py "$work" --batch "$B" --context "$T" --layers "$L" --heads "$H" \
    --channels "$C" --steps "$steps" --seed 1337 --corpus /usr/share/common-licenses/GPL-3 >/dev/null
common="--init $work/init.safetensors --batches $work/batches.bin --batch $B --steps $steps --lr 1e-3 --warmup 1 --threads $threads"
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores;" \
    "$(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg); B=$B T=$T L=$L" \
    "H=$H C=$C, $threads threads"
echo
echo "| round | side | compile ms | first step ms | first call ms | steps before -O3 | last step ms |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
kiln_side() { # tiers round
    d=$work/kiln$1_$2
    rm -rf "$work/cache" && mkdir -m 0700 "$work/cache"
    KILN_COMPILE_TIERS=$1 KILN_CACHE_DIR=$work/cache KILN_NUM_THREADS=$threads \
        OPENBLAS_NUM_THREADS=$threads taskset -c "0-$((threads - 1))" "$build/kiln" train \
        $common --context "$T" --layers "$L" --heads "$H" --channels "$C" --seed 1337 \
        --eval-every 0 --out "$d" >/dev/null 2>&1
    compile=$(sed -n 's/.*"compile_ms": *\([0-9.]*\).*/\1/p' "$d/summary.json")
    awk -F, -v c="$compile" -v r="$2" -v side="kiln, $1 tier(s)" '
        NR > 1 { ms[n++] = $4 }
        END {
            last = ms[n - 1]; slow = 0
            for (i = 0; i < n; i++) if (ms[i] > 2 * last) slow = i + 1
            printf "| %s | %s | %.0f | %.0f | %.0f | %d | %.1f |\n", r, side, c, ms[0], c + ms[0], slow, last
        }' "$d/losses.csv"
}
for r in $(seq 1 "$rounds"); do
    kiln_side 1 "$r"
    kiln_side 2 "$r"
    (cd bench/gpt && ../../$py gpt_jax.py $common --out "$work/jax_$r" >/dev/null 2>&1)
    c=$($py -c 'import json,sys; print(1e3 * json.load(open(sys.argv[1]))["compile_s"])' \
        "$work/jax_$r/summary.json")
    # JAX's compile_s has two decimals: 10 ms
    awk -F, -v c="$c" -v r="$r" '
        NR > 1 { ms[n++] = $3 }
        END { printf "| %s | JAX | %.0f | %.0f | %.0f | - | %.1f |\n", r, c, ms[0], c + ms[0], ms[n - 1] }' \
        "$work/jax_$r/losses.csv"
done
rm -rf "$work"
