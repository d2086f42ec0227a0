#!/bin/sh
# gpu.sh — the GPT training step side by side with JAX on one GPU (issue 31, item 5):
# B=16 T=256 L=6 H=8 C=512, the same initial weights and batches for both
# (make_inputs.py), at three precisions: exact f32 (JAX: jax_default_matmul_precision
# highest; kiln's default), TF32 products (JAX: tensorfloat32; kiln:
# KILN_MATMUL_PRECISION=tf32) and bf16 mixed precision (JAX: GPT_JAX_DTYPE=bf16 in
# gpt_jax.py at XLA's default precision; kiln: `kiln train --dtype bf16`). Prints one line per precision: each
# side's median ms/step, kiln's time as a share of JAX's (target <= 0.8x), kiln's planned
# peak against JAX's compiled step (arguments + outputs + temporaries - aliased; target
# <= 0.7x) and kiln's measured peak against its planned one (target: equal).
# scripts/gpu-check.sh runs it; the figures go to bench/RESULTS.md, "GPU".
#
# Usage: bench/gpt/gpu.sh BUILD_DIR OUT_DIR [steps]     (default 30 steps each)
# Environment: GPU_SH_DEVICE=cpu with CONFIG="B T L H C" runs the same steps on the CPU
# at a small size, to check the script on a machine without a GPU (its figures mean
# nothing there).
# GPU_SH_SIDES="jax torch" (default "jax") chooses the other sides: torch runs
# bench/gpt/gpt_torch.py eager and with torch.compile at each precision (TF32 by
# torch.backends.cuda.matmul.allow_tf32, bf16 by torch.autocast), each a further row.
# Needs: BUILD_DIR/kiln, bench/.venv (or PYTHON) with numpy, safetensors and jax for CUDA
# (torch for the torch side). A side that cannot run says why in its row and the others
# still run; exit 77 when no side asked for can see a GPU.
set -u
cd "$(dirname "$0")/../.." || exit 1
build=$1
out=$2
steps=${3:-30}
dev=${GPU_SH_DEVICE:-cuda}
# shellcheck disable=SC2086
set -- ${CONFIG:-16 256 6 8 512}
B=$1 T=$2 L=$3 H=$4 C=$5
py=${PYTHON:-bench/.venv/bin/python}
# PYTHON may be a name on the PATH (python3) or a path; the JAX runs cd into bench/gpt
py=$(command -v "$py") || { echo "gpu.sh: no ${PYTHON:-bench/.venv/bin/python} (python3 -m venv bench/.venv; pip install numpy safetensors 'jax[cuda13]')"; exit 77; }
py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py")
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)
sides=""
for side in ${GPU_SH_SIDES:-jax}; do
    case $side in
    jax) probe="import jax; jax.config.update('jax_platforms', '$dev'); print(jax.devices()[0])" ;;
    torch) probe="import torch; assert '$dev' == 'cpu' or torch.cuda.is_available(), 'no GPU'; print(torch.cuda.get_device_name(0) if '$dev' == 'cuda' else 'cpu')" ;;
    *) echo "gpu.sh: GPU_SH_SIDES: '$side' is neither jax nor torch"; exit 2 ;;
    esac
    if "$py" -c "$probe" >"$out/${side}_devices.txt" 2>&1; then
        echo "gpu.sh: $side on $(tail -n 1 "$out/${side}_devices.txt")"
        sides="$sides $side"
    else
        echo "gpu.sh: $side cannot see the device through $py:"
        tail -n 3 "$out/${side}_devices.txt"
    fi
done
[ -n "$sides" ] || exit 77
"$py" bench/gpt/make_inputs.py "$out" --batch "$B" --context "$T" --layers "$L" --heads "$H" \
    --channels "$C" --steps "$steps" --seed 1337 >"$out/make_inputs.log" 2>&1 || {
    echo "gpu.sh: make_inputs.py failed:"
    tail -n 5 "$out/make_inputs.log"
    exit 1
}
common="--init $out/init.safetensors --batches $out/batches.bin --batch $B --steps $steps --lr 1e-3 --warmup 3"
has_dtype=0
"$build/kiln" train --help 2>&1 | grep -q -- '--dtype' && has_dtype=1
for prec in f32 tf32 bf16; do
    case $prec in
    f32) jprec=highest jdtype=f32 kenv="" kflag="" ;;
    tf32) jprec=tensorfloat32 jdtype=f32 kenv="KILN_MATMUL_PRECISION=tf32" kflag="" ;;
    # bf16 operands at XLA's default precision, as a mixed-precision JAX user runs them:
    # under "highest" JAX's bf16 step took 15.5 ms on an H200 (2026-12-04), next to 17.0 ms
    # exact f32 and 7.4 ms TF32, as if its products ran in f32 (bench/RESULTS.md, "GPU")
    bf16) jprec=default jdtype=bf16 kenv="" kflag="--dtype bf16" ;;
    esac
    mkdir -p "$out/jax_$prec" "$out/kiln_$prec" "$out/torch_$prec" "$out/torchc_$prec"
    tprec=highest
    [ "$prec" = tf32 ] && tprec=tf32
    for side in $sides; do
        case $side in
        jax)
            echo "== JAX, $prec" >&2
            # shellcheck disable=SC2086 # $common is the flags, split on purpose
            (cd bench/gpt && GPT_JAX_PLATFORM=$dev GPT_JAX_PRECISION=$jprec GPT_JAX_DTYPE=$jdtype \
                timeout 150 "$py" gpt_jax.py $common --out "$out/jax_$prec") \
                >"$out/jax_$prec.log" 2>&1 ||
                echo "gpt_jax.py failed (see jax_$prec.log)" >"$out/jax_$prec/SKIPPED"
            ;;
        torch)
            for mode in eager compile; do
                d=torch_$prec flag=""
                [ $mode = compile ] && d=torchc_$prec flag=--compile
                echo "== torch $mode, $prec" >&2
                # shellcheck disable=SC2086
                (cd bench/gpt && GPT_TORCH_DEVICE=$dev GPT_TORCH_PRECISION=$tprec \
                    GPT_TORCH_DTYPE=$jdtype timeout 150 "$py" gpt_torch.py $common $flag \
                    --out "$out/$d") >"$out/$d.log" 2>&1 ||
                    echo "gpt_torch.py $flag failed (see $d.log)" >"$out/$d/SKIPPED"
            done
            ;;
        esac
    done
    echo "== kiln, $prec" >&2
    if [ "$prec" = bf16 ] && [ $has_dtype = 0 ]; then
        echo "kiln train has no --dtype yet (issue 31's mixed-precision option)" >"$out/kiln_$prec/SKIPPED"
        continue
    fi
    # shellcheck disable=SC2086
    env $kenv timeout 150 "$build/kiln" train $common --device "$dev" --context $T --layers $L \
        --heads $H --channels $C --seed 1337 --eval-every 0 --no-summary $kflag \
        --out "$out/kiln_$prec" >"$out/kiln_$prec.log" 2>&1 ||
        echo "kiln train failed (see kiln_$prec.log)" >"$out/kiln_$prec/SKIPPED"
done
# kiln alone once more at bf16 with attention as the op (--fused-attention: the forward
# pass one tensor-core kernel, the probabilities recomputed rather than saved), beside
# its written-out bf16 step and JAX's
mkdir -p "$out/kiln_bf16fa"
case " $sides " in *" jax "*) fa=1 ;; *) fa=0 ;; esac
if [ $fa = 0 ]; then
    echo "run beside JAX only" >"$out/kiln_bf16fa/SKIPPED"
elif "$build/kiln" train --help 2>&1 | grep -q -- '--fused-attention'; then
    echo "== kiln, bf16 --fused-attention" >&2
    # shellcheck disable=SC2086
    timeout 150 "$build/kiln" train $common --device "$dev" --context $T --layers $L \
        --heads $H --channels $C --seed 1337 --eval-every 0 --no-summary --dtype bf16 \
        --fused-attention --out "$out/kiln_bf16fa" >"$out/kiln_bf16fa.log" 2>&1 ||
        echo "kiln train failed (see kiln_bf16fa.log)" >"$out/kiln_bf16fa/SKIPPED"
else
    echo "kiln train has no --fused-attention" >"$out/kiln_bf16fa/SKIPPED"
fi
"$py" - "$out" "$B" "$T" "$L" "$H" "$C" "$sides" <<'PY'
import json, os, sys
out = sys.argv[1]
config = "B{} T{} L{} H{} C{}".format(*sys.argv[2:7])
sides = sys.argv[7].split()
def load(side, prec):
    d = os.path.join(out, f"{side}_{prec}")
    if os.path.exists(os.path.join(d, "SKIPPED")):
        return None, open(os.path.join(d, "SKIPPED")).read().strip()
    try:
        return json.load(open(os.path.join(d, "summary.json"))), ""
    except OSError as e:
        return None, str(e)
mib = lambda b: f"{b / 2**20:.1f} MiB"
for prec in ("f32", "tf32", "bf16"):
    k, kwhy = load("kiln", prec)
    for side, name in (("torch", "torch eager"), ("torchc", "torch.compile")):
        if "torch" not in sides:
            continue
        t, twhy = load(side, prec)
        parts = [f"RESULT GPT step {config} {prec}:"]
        parts.append(f"{name} {t['ms_per_step_median']:.2f} ms" if t else f"{name} not run ({twhy})")
        parts.append(f"kiln {k['ms_per_step_median']:.2f} ms" if k else f"kiln not run ({kwhy})")
        if t and k:
            parts.append(f"= {k['ms_per_step_median'] / t['ms_per_step_median']:.2f}x {name}'s time")
            if "peak_bytes" in t:
                parts.append(f"; peak planned {mib(k['planned_peak_bytes'])}, {name} "
                             f"max_memory_allocated {mib(t['peak_bytes'])} "
                             f"= {k['planned_peak_bytes'] / t['peak_bytes']:.2f}x")
            parts.append(f"; loss {t['loss_last']:.4f} ({name}) / {k.get('final_loss', float('nan')):.4f} (kiln)")
        print(" ".join(parts).replace(" ;", ";"))
    if "jax" not in sides:
        continue
    j, jwhy = load("jax", prec)
    parts = [f"RESULT GPT step {config} {prec}:"]
    parts.append(f"JAX {j['ms_per_step_median']:.2f} ms" if j else f"JAX not run ({jwhy})")
    parts.append(f"kiln {k['ms_per_step_median']:.2f} ms" if k else f"kiln not run ({kwhy})")
    if j and k:
        r = k["ms_per_step_median"] / j["ms_per_step_median"]
        parts.append(f"= {r:.2f}x JAX's time ({'target met' if r <= 0.8 else 'target 0.8x NOT met'})")
        p = k["planned_peak_bytes"] / j["peak_bytes"]
        parts.append(f"; peak planned {mib(k['planned_peak_bytes'])} = {p:.2f}x JAX's "
                     f"{mib(j['peak_bytes'])} ({'target met' if p <= 0.7 else 'target 0.7x NOT met'})")
        parts.append(f"; measured {mib(k['measured_peak_bytes'])}")
        parts.append(f"; loss {j['loss_last']:.4f} (JAX) / {k['final_loss'] if 'final_loss' in k else k.get('loss_last', float('nan')):.4f} (kiln)")
        if "step_kernels" in k:
            parts.append(f"; kiln runs {k['step_kernels']} kernels a step")
    print(" ".join(parts).replace(" ;", ";"))
k, kwhy = load("kiln", "bf16")
f, fwhy = load("kiln", "bf16fa")
if "jax" not in sides:
    sys.exit(0)
j, jwhy = load("jax", "bf16") if "jax" in sides else (None, "not run")
parts = [f"RESULT GPT step {config} bf16, kiln --fused-attention:"]
parts.append(f"{f['ms_per_step_median']:.2f} ms" if f else f"not run ({fwhy})")
if f and k:
    parts.append(f"= {f['ms_per_step_median'] / k['ms_per_step_median']:.2f}x the written-out "
                 f"step's {k['ms_per_step_median']:.2f} ms")
    parts.append(f"; peak planned {mib(f['planned_peak_bytes'])} (written out "
                 f"{mib(k['planned_peak_bytes'])}), measured {mib(f['measured_peak_bytes'])}")
if f and j:
    parts.append(f"; {f['ms_per_step_median'] / j['ms_per_step_median']:.2f}x JAX's time, "
                 f"peak {f['planned_peak_bytes'] / j['peak_bytes']:.2f}x JAX's")
if f:
    parts.append(f"; loss {f.get('final_loss', f.get('loss_last', float('nan'))):.4f}")
print(" ".join(parts).replace(" ;", ";"))
PY
