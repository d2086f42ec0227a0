#!/bin/sh
# micro.sh — gradient accumulation side by side (issue 34 item 3): the GPT step of
# bench/gpt (B8 T128 L4 H4 C256 by default) with its batch whole and split into k
# micro-batches, in kiln (`kiln train --micro-batches k`) and in JAX (GPT_JAX_MICRO=k: a
# lax.scan over the micro-batches summing loss and gradients, gpt_jax.py), from the same
# initial weights and batches; then kiln under --memory-budget shares of its peak without
# recomputation, where it chooses recomputation and micro-batches itself, and again with
# --offload, where it may also move activations to host memory. Prints per run
# the planned peak (kiln: planned = measured; JAX: memory_analysis' arguments + outputs +
# temporaries - aliased), the median ms/step and the last loss (the splits must agree
# with the whole batch to f32 rounding).
#
# Usage: bench/gpt/micro.sh [steps] [threads] [B T L H C]   (defaults: 20, all cores)
# Environment: MICRO (default "1 2 4 8"), BUDGETS (default "60% 50%"), POLICIES (default
# offload_dot_with_no_batch_dims), OFFLOAD (default 1; 0: no --offload runs), KILN (the kiln
# binary, default build/kiln).
set -e
cd "$(dirname "$0")/../.."
steps=${1:-20}
threads=${2:-$(nproc)}
B=${3:-8} T=${4:-128} L=${5:-4} H=${6:-4} C=${7:-256}
py=bench/.venv/bin/python
$py -c 'import numpy, jax, safetensors' 2>/dev/null || {
    echo "micro.sh: bench/.venv needs numpy, jax and safetensors" >&2
    exit 1
}
kiln=${KILN:-build/kiln}
[ -x "$kiln" ] || { echo "micro.sh: build kiln first (make), or set KILN" >&2; exit 1; }
work=$(mktemp -d /tmp/kiln-micro-XXXXXX)
trap 'rm -rf "$work"' EXIT
$py bench/gpt/make_inputs.py "$work" --batch "$B" --context "$T" --layers "$L" --heads "$H" \
    --channels "$C" --steps "$steps" --seed 1337 >/dev/null
common="--init $work/init.safetensors --batches $work/batches.bin --batch $B --steps $steps --lr 1e-3 --warmup 2 --threads $threads"
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $threads threads;" \
    "$(date -u '+%Y-%m-%d %H:%M UTC'); B=$B T=$T L=$L H=$H C=$C, $steps steps"
printf '%-34s %12s %10s %10s %9s\n' "run" "peak MiB" "ms/step" "last loss" "host MiB"
summary() { # DIR LABEL: the row of a run from its summary.json
    $py - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1] + "/summary.json"))
peak = d.get("planned_peak_bytes", d.get("peak_bytes", 0)) / 2**20
ms = d.get("ms_per_step_median", d.get("median_ms"))
loss = d.get("final_loss", d.get("loss_last"))
extra = " (%d micro-batches)" % d["micro_batches"] if d.get("micro_batches", 1) > 1 else ""
host = (d.get("host_arena_bytes", d.get("host_temp_bytes", 0))
        + d.get("host_argument_bytes", 0)) / 2**20
print("%-34s %12.1f %10.1f %10.4f %9.1f%s" % (sys.argv[2], peak, ms, loss, host, extra))
EOF
}
for k in ${MICRO:-1 2 4 8}; do
    (cd bench/gpt && GPT_JAX_MICRO=$k ../../$py gpt_jax.py $common --out "$work/jax$k" >/dev/null)
    summary "$work/jax$k" "jax, $k micro-batches"
    KILN_NUM_THREADS=$threads taskset -c "0-$((threads - 1))" "$kiln" train --overwrite $common \
        --context "$T" --layers "$L" --heads "$H" --channels "$C" --seed 1337 --eval-every 0 \
        --no-summary --micro-batches "$k" --out "$work/kiln$k" >/dev/null
    summary "$work/kiln$k" "kiln, $k micro-batches"
done
# checkpoint policies, each block a region in both (GPT_JAX_REMAT / kiln train --remat):
# the offload one moves the products to host memory where the backend has it
for pol in ${POLICIES:-offload_dot_with_no_batch_dims}; do
    (cd bench/gpt && GPT_JAX_REMAT=$pol ../../$py gpt_jax.py $common --out "$work/jaxp" >/dev/null)
    summary "$work/jaxp" "jax, $pol"
    KILN_NUM_THREADS=$threads taskset -c "0-$((threads - 1))" "$kiln" train --overwrite $common \
        --context "$T" --layers "$L" --heads "$H" --channels "$C" --seed 1337 --eval-every 0 \
        --no-summary --remat "$pol" --out "$work/kilnp" >/dev/null
    summary "$work/kilnp" "kiln, $pol"
done
# JAX with its state in pinned_host memory (JAX_OFFLOAD: "opt params", GPT_JAX_OFFLOAD)
for o in ${JAX_OFFLOAD:-}; do
    (cd bench/gpt && GPT_JAX_OFFLOAD=$o ../../$py gpt_jax.py $common --out "$work/jaxo" >/dev/null)
    summary "$work/jaxo" "jax, state offload $o"
done
# the state in host memory (STATE: a ';'-separated list of kiln train flag sets, each a
# row; for example "--offload-optimizer;--offload-params;--offload-params --micro-batches 8")
IFS=';'
for st in ${STATE:-}; do
    IFS=' '
    # shellcheck disable=SC2086
    KILN_NUM_THREADS=$threads taskset -c "0-$((threads - 1))" "$kiln" train --overwrite $common \
        --context "$T" --layers "$L" --heads "$H" --channels "$C" --seed 1337 --eval-every 0 \
        --no-summary $st --out "$work/state" >/dev/null
    summary "$work/state" "kiln, $st"
    IFS=';'
done
IFS=' '
# each budget without and with host offload (--offload: the search may also move
# activations to the pinned_host memory kind; OFFLOAD=0 leaves those runs out)
offs=--offload
[ "${OFFLOAD:-1}" = 1 ] || offs=
for b in ${BUDGETS:-60% 50%}; do
    for off in "" $offs; do
        if KILN_NUM_THREADS=$threads taskset -c "0-$((threads - 1))" "$kiln" train --overwrite $common \
            --context "$T" --layers "$L" --heads "$H" --channels "$C" --seed 1337 --eval-every 0 \
            --no-summary --memory-budget "$b" $off --out "$work/budget" >"$work/budget.log" 2>&1; then
            summary "$work/budget" "kiln, --memory-budget $b $off"
            grep -h "host offload" "$work/budget/summary.txt" || true
        else
            echo "kiln, --memory-budget $b $off: $(tail -n 1 "$work/budget.log" | cut -c1-200)"
        fi
    done
done
