#!/bin/sh
# sigint_loop.sh KILN [N] — Ctrl-C against training runs in their GEMMs: N runs (20) of a
# step made mostly of matrix products, each sent SIGINT after its first progress line (at
# a varying delay), and the count of each exit status. `kiln train` saves and exits 130 on
# SIGINT; 134 is an abort (the heap corruption of issue 38 item 14, when a handler ran on
# the thread inside oneDNN's sgemm). docs/fuzzing.md records what it measured.
set -u
K=$1
N=${2:-20}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
export KILN_CACHE_DIR="$d/cache"
mkdir -m 700 "$KILN_CACHE_DIR"
mid="--layers 2 --heads 4 --channels 128 --context 64 --batch 8 --eval-every 0 --steps 100000"
for i in $(seq "$N"); do
    rm -rf "$d/o" "$d/log"
    "$K" train $mid --out "$d/o" >"$d/log" 2>&1 &
    p=$!
    while ! grep -q "step .*/" "$d/log" 2>/dev/null; do
        kill -0 $p 2>/dev/null || break
        sleep 0.01
    done
    sleep 0.0$((i % 10))
    kill -INT $p
    wait $p
    echo "exit $?"
done 2>/dev/null | sort | uniq -c
