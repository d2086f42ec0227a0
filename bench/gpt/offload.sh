#!/bin/sh
# offload.sh — host offload on one device (issue 34): kiln train's GPT step with its
# activations, optimiser state or parameters kept in the device's pinned_host memory, each
# beside the run that keeps everything on the device: planned (= measured) device peak,
# host bytes, median ms/step and the ratio to the first row. The rows run in turn, REPS
# rounds of them, so that every row sees the same load; ms/step is the median of the
# rounds' medians. Made for a GPU (scripts/gpu-check.sh runs it on cuda), where the copies
# cross the host link; on a CPU device the "link" is a memcpy within the same RAM.
#
# Usage: bench/gpt/offload.sh [KILN [DEVICE [STEPS]]]
#   KILN    the kiln binary (default build-rel/kiln)   DEVICE  cpu, cuda, ... (default cuda)
#   STEPS   steps per run (default 20)
#   REPS    rounds (default 1)
#   CONFIG="B T L H C" (default "8 128 4 4 256": bench/gpt's step)
#   ROWS    ';'-separated kiln train flag sets, the first the baseline (default: everything
#           on the device; offload_dot_with_no_batch_dims; --offload-optimizer;
#           --offload-params; --offload-params --micro-batches 8)
# On the 2-core CPU: REPS=3 ROWS=";--offload-optimizer;--offload-params;--micro-batches 8;--offload-params --micro-batches 8;--memory-budget 22MiB" KILN_NUM_THREADS=2 bench/gpt/offload.sh build-rel/kiln cpu 30
set -u
kiln=${1:-build-rel/kiln}
dev=${2:-cuda}
steps=${3:-20}
reps=${REPS:-1}
rows=${ROWS:-";--remat offload_dot_with_no_batch_dims;--offload-optimizer;--offload-params;--offload-params --micro-batches 8"}
# shellcheck disable=SC2086
set -- ${CONFIG:-8 128 4 4 256}
B=$1 T=$2 L=$3 H=$4 C=$5
work=$(mktemp -d /tmp/kiln-offload-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "# offload.sh: device $dev, B=$B T=$T L=$L H=$H C=$C, $steps steps, $reps rounds," \
    "$(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null)"
for _ in $(seq "$reps"); do
    i=0
    old=$IFS
    IFS=';'
    for flags in $rows; do
        IFS=$old
        i=$((i + 1))
        # shellcheck disable=SC2086
        if "$kiln" train --device "$dev" --batch "$B" --context "$T" --layers "$L" --heads "$H" \
            --channels "$C" --steps "$steps" --seed 1337 --eval-every 0 --no-summary $flags \
            --out "$work/run" >"$work/log" 2>&1; then
            python3 - "$work/run/summary.json" "$i" "$flags" >>"$work/rows" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
host = (d.get("host_arena_bytes", 0) + d.get("host_argument_bytes", 0)) / 2**20
print("%s\t%s\t%.1f\t%.1f\t%.3f\t%.4f" % (sys.argv[2], sys.argv[3], d["planned_peak_bytes"] / 2**20,
                                         host, d["ms_per_step_median"], d["final_loss"]))
PY
        else
            echo "${flags:-(everything on the device)}: failed: $(tail -n 1 "$work/log" | cut -c1-200)"
        fi
        IFS=';'
    done
    IFS=$old
done
[ -s "$work/rows" ] || exit 1
python3 - "$work/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    i, flags, peak, host, ms, loss = line.rstrip("\n").split("\t")
    r = rows.setdefault(int(i), [flags, peak, host, [], loss])
    r[3].append(float(ms))
base = None
print("%-46s %9s %9s %10s %8s %10s" % ("run", "peak MiB", "host MiB", "ms/step", "x first", "last loss"))
for i in sorted(rows):
    flags, peak, host, ms, loss = rows[i]
    med = statistics.median(ms)
    base = base or med
    print("%-46s %9s %9s %10.2f %8.2f %10s" % (flags or "(everything on the device)", peak, host,
                                               med, med / base, loss))
PY
