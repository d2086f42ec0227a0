#!/bin/sh
# offload.sh — host offload on one device (issue 34): kiln train's GPT step with its
# activations, optimiser state or parameters kept in the device's pinned_host memory, each
# beside the run that keeps everything on the device, in one run: planned (= measured)
# device peak, host bytes, median ms/step and the ratio to the plain run. Made for a GPU
# (scripts/gpu-check.sh runs it on cuda), where the copies cross the host link; on a CPU
# device the "link" is a memcpy within the same RAM.
#
# Usage: bench/gpt/offload.sh [KILN [DEVICE [STEPS]]]
#   KILN    the kiln binary (default build-rel/kiln)   DEVICE  cpu, cuda, ... (default cuda)
#   STEPS   steps per run (default 20)
#   CONFIG="B T L H C" (default "8 128 4 4 256": bench/gpt's step)
set -u
kiln=${1:-build-rel/kiln}
dev=${2:-cuda}
steps=${3:-20}
# shellcheck disable=SC2086
set -- ${CONFIG:-8 128 4 4 256}
B=$1 T=$2 L=$3 H=$4 C=$5
work=$(mktemp -d /tmp/kiln-offload-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "# offload.sh: device $dev, B=$B T=$T L=$L H=$H C=$C, $steps steps, $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%-46s %10s %9s %10s %8s %10s\n' run "peak MiB" "host MiB" ms/step "x plain" "last loss"
base=""
for flags in "" "--remat offload_dot_with_no_batch_dims" "--offload-optimizer" "--offload-params" \
    "--offload-params --micro-batches 8"; do
    # shellcheck disable=SC2086
    if ! "$kiln" train --device "$dev" --batch "$B" --context "$T" --layers "$L" --heads "$H" \
        --channels "$C" --steps "$steps" --seed 1337 --eval-every 0 --no-summary $flags \
        --out "$work/run" >"$work/log" 2>&1; then
        echo "${flags:-(everything on the device)}: failed: $(tail -n 1 "$work/log" | cut -c1-200)"
        continue
    fi
    row=$(python3 - "$work/run/summary.json" "$base" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = d["ms_per_step_median"]
host = (d.get("host_arena_bytes", 0) + d.get("host_argument_bytes", 0)) / 2**20
ratio = ms / float(sys.argv[2]) if sys.argv[2] else 1.0
print("%.1f %.1f %.2f %.2f %.4f" % (d["planned_peak_bytes"] / 2**20, host, ms, ratio,
                                    d["final_loss"]))
PY
    ) || continue
    # shellcheck disable=SC2086
    set -- $row
    [ -z "$base" ] && base=$3
    printf '%-46s %10s %9s %10s %8s %10s\n' "${flags:-(everything on the device)}" "$1" "$2" "$3" "$4" "$5"
done
