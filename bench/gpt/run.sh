#!/bin/sh
# run.sh — the GPT training side by side (issue 10 item 6): kiln, JAX (jit, donation),
# PyTorch eager and torch.compile, from the same initial weights (init.safetensors) and
# the same batches (batches.bin), one configuration after another, every side on the same
# `threads` cores. Prints one Markdown table per configuration (bench/gpt/table.py): loss
# at step 0 (must agree to 1e-4), at steps 50/100/150/199, the largest loss difference
# from JAX, ms/step medians and memory.
#
# Usage: bench/gpt/run.sh [steps] [threads] [B T L H C]
#   (defaults: 200 steps, all cores; without B..C both configurations below)
# Environment: LR (1e-3), WARMUP (steps/10), SEED (1337), CORPUS (GPL-3), KEEP=1 keeps
# the work folder, SIDES (default "jax torch_eager torch_compile kiln").
#
# The kiln side runs `build/kiln train` with the same files and flags; until that
# command exists (or when it fails) its row says so and the others still run.
set -e
cd "$(dirname "$0")/../.."
steps=${1:-200}
threads=${2:-$(nproc)}
# make demo's configuration ("B T L H C": the Makefile's DEMO_FLAGS).
DEMO_CONFIG=${DEMO_CONFIG:-16 64 2 4 128}
BENCH_CONFIG="8 128 4 4 256"
if [ $# -ge 7 ]; then
    configs="$3 $4 $5 $6 $7"
else
    configs="$DEMO_CONFIG|$BENCH_CONFIG"
fi
lr=${LR:-1e-3}
warmup=${WARMUP:-$((steps / 10))}
seed=${SEED:-1337}
corpus=${CORPUS:-/usr/share/common-licenses/GPL-3}
sides=${SIDES:-jax torch_eager torch_compile kiln}
py=bench/.venv/bin/python
$py -c 'import numpy, jax, torch, safetensors' 2>/dev/null || {
    echo "run.sh: bench/.venv needs numpy, jax, torch and safetensors:" >&2
    echo "  python3 -m venv bench/.venv && bench/.venv/bin/pip install numpy jax torch safetensors" >&2
    exit 1
}
work=$(mktemp -d /tmp/kiln-gpt-bench-XXXXXX)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores;" \
     "$(date -u '+%Y-%m-%d %H:%M UTC'); $steps steps, $threads threads each, lr $lr," \
     "warmup $warmup, seed $seed"
status=0
echo "$configs" | tr '|' '\n' | while read -r B T L H C; do
    if [ -z "$C" ]; then
        echo "(the demo configuration is not set: DEMO_CONFIG=\"B T L H C\" or arguments 3-7)"
        continue
    fi
    d=$work/B${B}_T${T}_L${L}_H${H}_C${C}
    mkdir -p "$d"
    echo "B=$B T=$T L=$L H=$H C=$C, $steps steps, $threads threads" >"$d/config.txt"
    $py bench/gpt/make_inputs.py "$d" --batch "$B" --context "$T" --layers "$L" --heads "$H" \
        --channels "$C" --steps "$steps" --seed "$seed" --corpus "$corpus"
    common="--init $d/init.safetensors --batches $d/batches.bin --batch $B --steps $steps --lr $lr --warmup $warmup --threads $threads"
    for side in $sides; do
        mkdir -p "$d/$side"
        echo "== $side, B=$B T=$T L=$L H=$H C=$C" >&2
        case $side in
        jax) (cd bench/gpt && ../../$py gpt_jax.py $common --out "$d/$side") ;;
        torch_eager) (cd bench/gpt && ../../$py gpt_torch.py $common --out "$d/$side") ;;
        torch_compile)
            (cd bench/gpt && ../../$py gpt_torch.py --compile $common --out "$d/$side") ||
                echo "failed (see the log above)" >"$d/$side/SKIPPED" ;;
        kiln)
            if [ -x build/kiln ] && build/kiln train --help >/dev/null 2>&1; then
                KILN_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
                    taskset -c "0-$((threads - 1))" build/kiln train --overwrite $common \
                    --context "$T" --layers "$L" --heads "$H" --channels "$C" --seed "$seed" \
                    --eval-every 0 --no-summary \
                    --out "$d/$side" ||
                    echo "build/kiln train failed (see the log above)" >"$d/$side/SKIPPED"
            else
                echo "pending: build/kiln train not built" >"$d/$side/SKIPPED"
                echo "kiln: skipped: build/kiln train is not available yet" >&2
            fi ;;
        esac
    done
done
dirs=$(ls -d "$work"/B* 2>/dev/null || true)
# shellcheck disable=SC2086
[ -n "$dirs" ] && { $py bench/gpt/table.py $dirs || status=1; }
[ "${KEEP:-0}" = 1 ] && echo "work folder kept: $work" || rm -rf "$work"
exit $status
