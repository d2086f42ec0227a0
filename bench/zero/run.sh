#!/bin/sh
# bench/zero/run.sh [STEPS] [THREADS] [ROUNDS] — per-rank memory and step time of `kiln train` at 1,
# 2 and 4 in-process ranks (--devices), without --shard-optimizer and with it (ZeRO-2 and
# ZeRO-1), on
# bench/gpt's model (B8 T128 L4 H4 C256: --batch is the global batch, so 8 / N rows per
# rank). Prints a markdown table (bench/zero/table.py) from each run's summary.json:
# the planned and measured peak of one rank's step, its optimiser state, the classes at the
# planned peak, and the step time: the runs go in ROUNDS rounds (default 3), each round
# every configuration once, so that a loaded machine's drift falls on all of them; the
# time is the median over the rounds of each run's median step, the ratio the median of
# the rounds' ratios. Run from the repository root after building.
set -eu
steps=${1:-20}
threads=${2:-2}
rounds=${3:-3}
cpus=${CPUS:-0-$((threads - 1))}
work=$(mktemp -d /tmp/kiln-zero-bench-XXXXXX)
export KILN_CACHE_DIR="$work/cache"
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores (taskset -c $cpus);" \
     "$(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg);" \
     "$steps steps, $threads threads, $rounds rounds"
model="--batch 8 --context 128 --layers 4 --heads 4 --channels 256 --lr 1e-3 --warmup 2"
for round in $(seq "$rounds"); do
    for n in 1 2 4; do
        for stage in 0 2 1; do
            [ "$n" = 1 ] && [ "$stage" != 0 ] && continue # one rank: nothing to shard
            shard=""
            [ "$stage" != 0 ] && shard="--shard-optimizer --zero-stage $stage"
            out="$work/n$n-zero$stage-r$round"
            taskset -c "$cpus" build/kiln train --overwrite $model --steps "$steps" --eval-every 0 \
                --threads "$threads" --devices "$n" $shard --no-summary --out "$out" \
                >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
        done
    done
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/zero/table.py "$work"
rm -rf "$work"
