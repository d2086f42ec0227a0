#!/bin/sh
# run.sh — programs exported from JAX, run through kiln's importer (issue 36, docs/import.md):
# bench/import/export.py writes each program's StableHLO and HLO text, its inputs and JAX's
# outputs, XLA's memory_analysis() and JAX's time; bench_import runs both forms in kiln and
# prints one Markdown row per program and form (largest difference from JAX's outputs,
# planned peak beside XLA's, median ms per call beside JAX's), then trains the GPT step
# for STEPS steps through kiln, comparing every loss with JAX's. The programs: the GPT step,
# bench/cnn's training step, five small ones, two that draw with jax.random inside (a step
# with dropout, plain draws), and bench/programs' seventeen at small sizes (export.py).
#
# Then time side by side: ROUNDS rounds, each JAX's jit (export.py --time-only) then kiln's
# compiled executable (bench_import --time-only), one after the other so that both see the
# same load; each round's figure is a median of 20 warm calls with the inputs reused, and
# the table gives the median over the rounds of each and their ratio (kiln / JAX; below 1
# kiln is faster). kiln's side is a Release build (BUILD, default build-rel, configured and
# built here); `uptime` is printed before and after, since the machine may be shared.
#
# Usage: bench/import/run.sh [STEPS [ROUNDS]]   (defaults 100 and 5)
set -e
cd "$(dirname "$0")/../.."
steps=${1:-100}
rounds=${2:-5}
build=${BUILD:-build-rel}
py=bench/.venv/bin/python
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bench_import >/dev/null
out=$(mktemp -d /tmp/kiln-import-XXXXXX)
trap 'rm -rf "$out"' EXIT
names="gpt_step cnn_step mlp mlp_train dropout_train draws attention layernorm softmax_xent embed \
rope block block_sdpa attn xent adam cumsum reduce posenc trig math64 transpose fourier axes nhwc \
embed_grad"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), uptime: $(uptime)"
$py bench/import/export.py "$out" --steps "$steps"
# shellcheck disable=SC2086
"$build/bench_import" "$out" --gpt-steps "$steps" $names
r=1
while [ "$r" -le "$rounds" ]; do
    # shellcheck disable=SC2086
    $py bench/import/export.py "$out" --time-only $names >"$out/jax_$r.txt"
    # shellcheck disable=SC2086
    "$build/bench_import" "$out" --time-only $names >"$out/kiln_$r.txt"
    r=$((r + 1))
done
echo
echo "Time per call, median of $rounds alternated rounds (each a median of 20 warm calls):"
# shellcheck disable=SC2086
$py - "$out" "$rounds" $names <<'PY'
import statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(side):
    ms = {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{side}_{r}.txt"):
            n, v = line.split()
            ms.setdefault(n, []).append(float(v))
    return ms
k, j = load("kiln"), load("jax")
print("| program | kiln ms | JAX jit ms | kiln / JAX | kiln range | JAX range |")
print("|---|---:|---:|---:|---|---|")
for n in names:
    if n not in k or n not in j:
        continue
    km, jm = statistics.median(k[n]), statistics.median(j[n])
    print(f"| {n} | {km:.4g} | {jm:.4g} | {km / jm:.2f} | {min(k[n]):.3g}-{max(k[n]):.3g} "
          f"| {min(j[n]):.3g}-{max(j[n]):.3g} |")
PY
echo "# uptime after: $(uptime)"
