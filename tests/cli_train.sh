#!/bin/sh
# cli_train.sh KILN — `kiln train` / `kiln sample` from the command line: flag errors exit 2
# with a message naming the flag, runtime errors (a missing or corrupt file) exit 1 naming
# the file, and a tiny run trains, is interrupted by SIGINT and saves, resumes, and samples.
# Registered in CMakeLists.txt as test_cli_train; runs in a few seconds.
set -u
KILN=$1
dir=$(mktemp -d /tmp/kiln-test-cli-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export KILN_CACHE_DIR="$dir/cache"
mkdir -m 700 "$KILN_CACHE_DIR"
fail=0

# expect STATUS TEXT -- ARGS: runs kiln ARGS, wants exit STATUS and TEXT in its stderr.
expect() {
    want=$1 text=$2
    shift 3
    "$KILN" "$@" >"$dir/out" 2>"$dir/err"
    got=$?
    if [ "$got" != "$want" ] || ! grep -qF -- "$text" "$dir/err"; then
        echo "FAIL: kiln $*: exit $got (want $want), stderr:"
        cat "$dir/err"
        echo "(wanted it to contain: $text)"
        fail=1
    fi
}

tiny="--layers 1 --heads 2 --channels 16 --context 16 --batch 2"
expect 2 "unknown flag '--layer'" -- train --layer 2
expect 2 "--steps: 'ten' is not a valid value" -- train --steps ten
expect 2 "--steps: '0' is not a valid value" -- train --steps 0
expect 2 "--lr: '-1' is not a valid value" -- train --lr=-1
expect 2 "--batch needs a value" -- train --batch
expect 2 "--channels (30) must be a multiple of --heads (4)" -- train --channels 30 --heads 4
expect 2 "--memory-budget: 'lots' is not a size" -- train --memory-budget lots
# A budget no recomputation can meet fails at compile time, naming the smallest peak.
expect 1 "the smallest planned peak reachable is" -- train $tiny --memory-budget 4KiB --steps 1 \
    --eval-every 0 --out "$dir/o"
expect 1 "cannot open the corpus '$dir/nope.txt'" -- train $tiny --data "$dir/nope.txt" --out "$dir/o"
expect 1 "$dir/nope.safetensors" -- train --resume "$dir/nope.safetensors"
expect 1 "$dir/nope.safetensors" -- sample "$dir/nope.safetensors"
expect 2 "unknown flag '--topk'" -- sample --topk 3
expect 2 "--temperature: 'hot' is not a valid value" -- sample --temperature hot
printf 'not a checkpoint at all' >"$dir/junk.safetensors"
expect 1 "junk.safetensors" -- sample "$dir/junk.safetensors"
expect 1 "too short for a context of 16" -- train $tiny --data "$dir/junk.safetensors" --out "$dir/o"
head -c 1000 /dev/zero >"$dir/batches.bin"
expect 1 "batches file" -- train $tiny --steps 3 --batches "$dir/batches.bin" --out "$dir/o"
# [steps 3, batch 2, context + 1 = 17] int32 zeros: a valid batches file (every token 0).
head -c 408 /dev/zero >"$dir/batches.bin"
if ! "$KILN" train $tiny --steps 3 --batches "$dir/batches.bin" --out "$dir/b" >"$dir/b.out" 2>&1 ||
    ! grep -q "^3,[0-9.]*," "$dir/b/losses.csv"; then
    echo "FAIL: --batches"
    cat "$dir/b.out"
    fail=1
fi

# A run of 400 steps interrupted by SIGINT after its first progress line (step 10) stops
# after the step in progress, saves and exits 0; the resumed run finishes it. Steps of the
# tiny model take 0.1 ms, too few to signal between, so this run is larger (~1 ms a step,
# 0.4 s in all) and its output is polled every 10 ms; a run that still finished before the
# signal reached it (a fast machine) is not a failure of kiln and is tried again, up to
# three times.
small="--layers 2 --heads 2 --channels 32 --context 32 --batch 4"
try=0
while :; do
    rm -rf "$dir/run"
    "$KILN" train $small --steps 400 --eval-every 0 --out "$dir/run" >"$dir/train.out" 2>&1 &
    pid=$!
    # up to two minutes for the first progress line (compiling comes first, and a loaded
    # machine or a sanitizer build is slow at it), checked every 10 ms
    deadline=$(($(date +%s) + 120))
    while [ "$(date +%s)" -lt $deadline ] && ! grep -q "step .*/400" "$dir/train.out" 2>/dev/null; do
        kill -0 $pid 2>/dev/null || break # it ended (failed) before its first progress line
        sleep 0.01
    done
    kill -INT $pid 2>/dev/null
    wait $pid
    rc=$?
    try=$((try + 1))
    if [ $rc = 0 ] && ! grep -q "interrupted after step" "$dir/train.out" &&
        grep -q "step 400/400" "$dir/train.out" && [ $try -lt 3 ]; then
        continue
    fi
    break
done
if [ $rc != 0 ] || ! grep -q "interrupted after step" "$dir/train.out" ||
    [ ! -f "$dir/run/model.safetensors" ]; then
    echo "FAIL: SIGINT: exit $rc (try $try)"
    cat "$dir/train.out"
    fail=1
fi
if ! "$KILN" train --resume "$dir/run/model.safetensors" --out "$dir/run" >"$dir/resume.out" 2>&1 ||
    ! grep -q "step 400/400" "$dir/resume.out"; then
    echo "FAIL: resume"
    cat "$dir/resume.out"
    fail=1
fi
if command -v python3 >/dev/null &&
    ! python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['steps']==400 and d['planned_peak_bytes']>0" \
        "$dir/run/summary.json"; then
    echo "FAIL: summary.json"
    cat "$dir/run/summary.json"
    fail=1
fi
expect 1 "tensor 'wte' is f32[256, 32]; the model needs f32[256, 16]" -- train --layers 2 --heads 2 \
    --channels 16 --context 32 --init "$dir/run/model.safetensors" --steps 2 --out "$dir/init"
if ! "$KILN" train $small --init "$dir/run/model.safetensors" --steps 2 --out "$dir/init" \
    >"$dir/init.out" 2>&1; then
    echo "FAIL: --init"
    cat "$dir/init.out"
    fail=1
fi
expect 1 "another batch" -- train --resume "$dir/run/model.safetensors" --batch 3 --out "$dir/run"
if ! "$KILN" sample "$dir/run/model.safetensors" --length 20 --prompt "GNU" >"$dir/sample.out" 2>&1 ||
    [ "$(head -c 3 "$dir/sample.out")" != "GNU" ] || [ "$(wc -c <"$dir/sample.out")" -lt 24 ]; then
    echo "FAIL: sample"
    cat "$dir/sample.out"
    fail=1
fi
# Data parallel: flag errors, then two replicas in one process train and save.
expect 2 "--batch (2) must split evenly over --devices (3)" -- train $tiny --devices 3
expect 2 "--devices: '0' is not a valid value" -- train --devices 0
expect 2 "--devices and --mpi exclude each other" -- train --devices 2 --mpi
expect 2 "--device: 'gpu' is neither cpu nor cuda" -- train --device gpu
expect 1 "--device cuda: " -- train $tiny --devices 64 --batch 64 --device cuda
if ! "$KILN" train $tiny --devices 2 --steps 2 --eval-every 0 --out "$dir/dp" >"$dir/dp.out" 2>&1 ||
    ! grep -q "data parallel over 2 CPU devices (batch 1 per rank)" "$dir/dp.out" ||
    [ ! -s "$dir/dp/model.safetensors" ]; then
    echo "FAIL: train --devices 2"
    cat "$dir/dp.out"
    fail=1
fi
[ $fail = 0 ] && echo "test_cli_train: passed"
exit $fail
