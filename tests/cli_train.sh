#!/bin/sh
# cli_train.sh KILN — `kiln train` / `kiln sample` from the command line: flag errors exit 2
# with a message naming the flag, runtime errors (a missing or corrupt file, a FIFO, an
# output folder that cannot be written, a model that cannot fit) exit 1 naming the file or
# the figures, and a tiny run trains, is interrupted by SIGINT (exit 130) or SIGTERM (143)
# and saves, resumes and appends to its log, is extended, and samples.
# Registered in CMakeLists.txt as test_cli_train; runs in a few seconds.
set -u
KILN=$1
dir=$(mktemp -d /tmp/kiln-test-cli-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export KILN_CACHE_DIR="$dir/cache"
mkdir -m 700 "$KILN_CACHE_DIR"
fail=0

# expect STATUS TEXT -- ARGS: runs kiln ARGS, wants exit STATUS and TEXT in its stderr;
# a run longer than $BOUND seconds (default 600) is ended (status 124: a hang).
expect() {
    want=$1 text=$2
    shift 3
    timeout "${BOUND:-600}" "$KILN" "$@" >"$dir/out" 2>"$dir/err"
    got=$?
    if [ "$got" != "$want" ] || ! grep -qF -- "$text" "$dir/err"; then
        echo "FAIL: kiln $*: exit $got (want $want), stderr:"
        cat "$dir/err"
        echo "(wanted it to contain: $text)"
        fail=1
    fi
}

tiny="--layers 1 --heads 2 --channels 16 --context 16 --batch 2"
# The flag table's defaults (the help's) are gpt_train_defaults's: kiln train compares the
# two before it reads a flag and refuses to run when they differ.
if ! "$KILN" train --help >"$dir/out" 2>"$dir/err" || [ -s "$dir/err" ]; then
    echo "FAIL: kiln train --help: the table's defaults and gpt_train_defaults's differ:"
    cat "$dir/err"
    fail=1
fi
expect 2 "unknown flag '--layer'" -- train --layer 2
expect 2 "--steps: 'ten' is not a valid value" -- train --steps ten
expect 2 "--steps: '0' is not a valid value" -- train --steps 0
expect 2 "--lr: '-1' is not a valid value" -- train --lr=-1
expect 2 "--batch needs a value" -- train --batch
expect 2 "--no-summary takes no value (it was given '1')" -- train --no-summary=1
expect 2 "--help takes no value" -- sample --help=x
expect 2 "--channels (30) must be a multiple of --heads (4)" -- train --channels 30 --heads 4
expect 2 "--memory-budget: 'lots' is not a size" -- train --memory-budget lots
# A budget no recomputation can meet fails at compile time, naming the smallest peak.
expect 1 "the smallest planned peak reachable is" -- train $tiny --memory-budget 4KiB --steps 1 \
    --eval-every 0 --out "$dir/o"
expect 1 "and the lowest planned peak with the batch of 2 split into micro-batches" -- train $tiny \
    --memory-budget 4KiB --steps 1 --eval-every 0 --out "$dir/o"
expect 1 "3 micro-batches: they must split the batch of each rank (2) evenly" -- train $tiny \
    --micro-batches 3 --steps 1 --out "$dir/o"
# Gradient accumulation (--micro-batches, or chosen under a budget that recomputation alone
# cannot meet): the same losses as the whole batch at once, to f32 rounding, and the
# planned peak within the budget, measured = planned.
acc="--layers 1 --heads 2 --channels 16 --context 64 --batch 16 --steps 3 --eval-every 0"
same_losses() { # the loss columns of two losses.csv agree to 4e-6 relative
    paste -d, "$1/losses.csv" "$2/losses.csv" | awk -F, 'NR > 1 {
        d = $2 - $6; if (d < 0) d = -d; if (d > 4e-6 * $2) bad = 1 } END { exit bad }'
}
"$KILN" train $acc --out "$dir/acc1" >"$dir/acc1.log" 2>&1 &&
    "$KILN" train $acc --micro-batches 4 --out "$dir/acc4" >"$dir/acc4.log" 2>&1 &&
    "$KILN" train $acc --memory-budget 700KiB --out "$dir/accb" >"$dir/accb.log" 2>&1
rc=$?
if [ $rc != 0 ] || ! same_losses "$dir/acc1" "$dir/acc4" || ! same_losses "$dir/acc1" "$dir/accb" ||
    ! grep -q "gradient accumulation: 4 micro-batches of 4 rows" "$dir/acc4.log" ||
    ! grep -q "gradient accumulation: [0-9]* micro-batches of [0-9]* rows: recomputation alone reaches .*, above the budget of 700.0 KiB" "$dir/accb.log" ||
    ! grep -q '"micro_batches": [2-9]' "$dir/accb/summary.json" ||
    ! awk '/planned_peak_bytes/ { gsub(/[^0-9]/, ""); p = $0 } /measured_peak_bytes/ {
        gsub(/[^0-9]/, ""); m = $0 } END { exit !(p > 0 && p <= 700 * 1024 && p == m) }' \
        "$dir/accb/summary.json"; then
    echo "FAIL: gradient accumulation (exit $rc)"
    tail -n 4 "$dir/acc1.log" "$dir/acc4.log" "$dir/accb.log"
    cat "$dir/acc1/losses.csv" "$dir/acc4/losses.csv" "$dir/accb/losses.csv"
    fail=1
fi
# The state in host memory (--offload-optimizer, --offload-params): the same parameters bit
# for bit as the run that keeps it on the device, a lower planned peak (= measured), the
# summary and summary.json saying so; a resume of such a run on the device continues it.
expect 1 "offload_params (--offload-params) is not supported with shard_optimizer" -- train \
    $tiny --offload-params --shard-optimizer --out "$dir/o"
if ! "$KILN" train $acc --offload-optimizer --out "$dir/offo" >"$dir/offo.log" 2>&1 ||
    ! "$KILN" train $acc --offload-params --out "$dir/offp" >"$dir/offp.log" 2>&1 ||
    ! cmp -s "$dir/acc1/model.safetensors" "$dir/offo/model.safetensors" ||
    ! cmp -s "$dir/acc1/model.safetensors" "$dir/offp/model.safetensors" ||
    ! grep -q "host offload: the AdamW moments kept in pinned_host memory" "$dir/offo.log" ||
    ! grep -q "host offload: the AdamW moments and the parameters kept in pinned_host memory" \
        "$dir/offp.log" ||
    ! grep -q '"offload_optimizer": true, "offload_params": true' "$dir/offp/summary.json" ||
    ! awk '/planned_peak_bytes/ { gsub(/[^0-9]/, ""); p[FILENAME] = $0 }
        /measured_peak_bytes/ { gsub(/[^0-9]/, ""); m[FILENAME] = $0 }
        END { a = ARGV[1]; b = ARGV[2]; c = ARGV[3]
              exit !(p[b] < p[a] && p[c] < p[b] && p[b] == m[b] && p[c] == m[c]) }' \
        "$dir/acc1/summary.json" "$dir/offo/summary.json" "$dir/offp/summary.json"; then
    echo "FAIL: --offload-optimizer / --offload-params"
    tail -n 4 "$dir/offo.log" "$dir/offp.log"
    fail=1
fi
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
# The optimiser and schedule flags, and --remat per block: a bad value is a usage error; a
# run recomputing every block (nothing_saveable) computes the same parameters bit for bit
# as one that keeps everything, and records its settings; a resume with other settings is
# refused, naming them.
expect 2 "--schedule: 'warm' is not cosine, linear or constant" -- train --schedule warm
expect 2 "--beta1: '1' is not a valid value" -- train --beta1 1
expect 2 "--eps: '0' is not a valid value" -- train --eps 0
expect 2 "--remat: 'dots' is not a policy" -- train --remat dots
expect 2 "--remat: 'save_only_these_names' is not a policy" -- train --remat save_only_these_names
opt="$tiny --steps 6 --eval-every 0 --schedule linear --min-lr 0 --beta2 0.99 --eps 1e-6"
if ! "$KILN" train $opt --out "$dir/keep" >"$dir/opt.out" 2>&1 ||
    ! "$KILN" train $opt --remat nothing_saveable --out "$dir/remat" >"$dir/opt.out" 2>&1 ||
    ! grep -q "rematerialisation (checkpoint)" "$dir/opt.out" ||
    ! cmp -s "$dir/keep/model.safetensors" "$dir/remat/model.safetensors" ||
    ! grep -q '"remat_policy": "nothing_saveable"' "$dir/remat/summary.json" ||
    ! grep -q '"schedule": "linear", "min_lr": 0' "$dir/remat/summary.json" ||
    ! "$KILN" train $tiny --steps 3 --eval-every 0 --remat save_only_these_names:qkv,mlp_fc \
        --out "$dir/named" >"$dir/opt.out" 2>&1; then
    echo "FAIL: --schedule, --beta2, --eps, --remat"
    cat "$dir/opt.out"
    fail=1
fi
expect 1 "the run to resume used another beta1 or beta2" -- train --resume \
    "$dir/keep/model.safetensors" --beta2 0.95 --steps 8 --out "$dir/keep"
expect 1 "the run to resume used another schedule" -- train --resume \
    "$dir/keep/model.safetensors" --schedule cosine --steps 8 --out "$dir/keep"
# Mixed precision (--dtype): a bad value is a usage error; bf16 trains and records its
# dtype, its checkpoint is f32 (kiln sample reads it), and a resume in another dtype is
# refused; f16 scales its loss dynamically, and a run stopped and resumed ends with the
# same checkpoint, bit for bit, as one that never stopped (the scale's state is saved).
expect 2 "--dtype: 'f8' is not f32, bf16 or f16" -- train --dtype f8
expect 2 "--loss-scaling: 'always' is not auto, none, static or dynamic" -- train \
    --loss-scaling always
expect 2 "--growth-interval: '0' is not a valid value" -- train --growth-interval 0
mp="$tiny --eval-every 3 --schedule constant --warmup 0"
if ! "$KILN" train $mp --steps 3 --dtype bf16 --out "$dir/bf16" >"$dir/mp.out" 2>&1 ||
    ! grep -q "mixed precision: computed in bf16" "$dir/mp.out" ||
    ! grep -q '"dtype": "bf16", "loss_scaling": "none"' "$dir/bf16/summary.json" ||
    ! "$KILN" sample "$dir/bf16/model.safetensors" --length 8 >"$dir/mp.out" 2>&1 ||
    ! "$KILN" train $mp --steps 6 --dtype f16 --growth-interval 2 --out "$dir/f16" \
        >"$dir/mp.out" 2>&1 ||
    ! grep -q "loss scaling: dynamic, scale 524288 at the end" "$dir/mp.out" ||
    ! "$KILN" train $mp --steps 3 --dtype f16 --growth-interval 2 --out "$dir/f16r" \
        >"$dir/mp.out" 2>&1 ||
    ! "$KILN" train --resume "$dir/f16r/model.safetensors" --steps 6 --out "$dir/f16r" \
        >"$dir/mp.out" 2>&1 ||
    ! grep -q '"dtype": "f16", "loss_scaling": "dynamic"' "$dir/f16r/summary.json" ||
    ! cmp -s "$dir/f16/model.safetensors" "$dir/f16r/model.safetensors"; then
    echo "FAIL: --dtype bf16 and f16"
    cat "$dir/mp.out"
    fail=1
fi
expect 1 "the run to resume used another dtype" -- train --resume "$dir/bf16/model.safetensors" \
    --dtype f32 --steps 4 --out "$dir/bf16"
# --scan-layers holds the parameters stacked ([L, ...] per tensor) but saves them per layer:
# a scanned run stopped and resumed scanned ends with the same checkpoint, bit for bit, as
# one that never stopped; a scanned checkpoint resumes unscanned, and an unscanned one
# scanned; kiln sample reads a scanned run's checkpoint.
sc="--layers 3 --heads 2 --channels 16 --context 16 --batch 2 --eval-every 3 \
    --schedule constant --warmup 0"
if ! "$KILN" train $sc --steps 6 --scan-layers --out "$dir/scan" >"$dir/scan.out" 2>&1 ||
    ! "$KILN" train $sc --steps 3 --scan-layers --out "$dir/scanr" >"$dir/scan.out" 2>&1 ||
    ! cp "$dir/scanr/model.safetensors" "$dir/scan3.safetensors" ||
    ! "$KILN" train --resume "$dir/scanr/model.safetensors" --steps 6 --scan-layers \
        --out "$dir/scanr" >"$dir/scan.out" 2>&1 ||
    ! cmp -s "$dir/scan/model.safetensors" "$dir/scanr/model.safetensors" ||
    ! "$KILN" sample "$dir/scan/model.safetensors" --length 8 >"$dir/scan.out" 2>&1 ||
    ! "$KILN" train --resume "$dir/scan3.safetensors" --steps 6 --out "$dir/unscanned" \
        >"$dir/scan.out" 2>&1 ||
    ! grep -q "step 6/6" "$dir/scan.out" ||
    ! "$KILN" train --resume "$dir/unscanned/model.safetensors" --steps 8 --scan-layers \
        --out "$dir/unscanned" >"$dir/scan.out" 2>&1 ||
    ! grep -q "step 8/8" "$dir/scan.out"; then
    echo "FAIL: --scan-layers: stacked in memory, per layer on disk"
    cat "$dir/scan.out"
    fail=1
fi
# Counts are 64-bit: a step count past 2^31 (once a segfault) is taken, and the batches
# file's size check does not overflow (once UB) however large the product.
expect 2 "--steps: '1000000000001' is not a valid value" -- train --steps 1000000000001
head -c 800000 /dev/urandom >"$dir/long.txt"
expect 1 "[steps 1000000000000, batch 1048576, context + 1 65537] int32 is more than" -- train \
    --layers 1 --heads 1 --channels 1 --context 65536 --batch 1048576 --steps 1000000000000 \
    --data "$dir/long.txt" --batches "$dir/batches.bin" --out "$dir/o"
# Files that are not regular files are refused before they are read: a FIFO would block
# forever, /dev/zero never end; a corpus larger than the cap is refused by its size.
mkfifo "$dir/fifo"
BOUND=30 expect 1 "the corpus '$dir/fifo' is not a regular file (a FIFO)" -- train $tiny --data "$dir/fifo" \
    --out "$dir/o"
BOUND=30 expect 1 "is not a regular file (a character device)" -- train $tiny --data /dev/zero --out "$dir/o"
BOUND=30 expect 1 "the batches file '$dir/fifo' is not a regular file (a FIFO)" -- train $tiny --steps 2 \
    --batches "$dir/fifo" --out "$dir/o"
BOUND=30 expect 1 "$dir/fifo: not a regular file (a FIFO)" -- train --resume "$dir/fifo"
BOUND=30 expect 1 "$dir/fifo: not a regular file (a FIFO)" -- train $tiny --init "$dir/fifo" --out "$dir/o"
BOUND=30 expect 1 "$dir/fifo: not a regular file (a FIFO)" -- sample "$dir/fifo"
truncate -s 5G "$dir/huge.txt"
expect 1 "has 5368709120 bytes, more than the 4294967296" -- train $tiny --data "$dir/huge.txt" \
    --out "$dir/o"
rm -f "$dir/huge.txt"
# --out is checked before the first step: a regular file, or a folder that cannot be written.
: >"$dir/a-file"
expect 1 "the output folder '$dir/a-file' is not a folder" -- train $tiny --steps 2 --out "$dir/a-file"
# A model or step that cannot fit the device is refused before any state is made, with
# the figures: the state itself, or the step (with the budget that would fit).
KILN_MEMORY_LIMIT=4MiB expect 1 "its parameters and AdamW moments alone take" -- train --layers 2 \
    --heads 2 --channels 256 --context 16 --batch 2 --steps 2 --out "$dir/o"
KILN_MEMORY_LIMIT=4MiB expect 1 "give --memory-budget 4MiB or less" -- train --layers 1 --heads 2 \
    --channels 32 --context 256 --batch 64 --steps 2 --out "$dir/o"
# [steps 3, batch 2, context + 1 = 17] int32 zeros: a valid batches file (every token 0).
head -c 408 /dev/zero >"$dir/batches.bin"
if ! "$KILN" train $tiny --steps 3 --batches "$dir/batches.bin" --out "$dir/b" >"$dir/b.out" 2>&1 ||
    ! grep -q "^3,[0-9.]*," "$dir/b/losses.csv"; then
    echo "FAIL: --batches"
    cat "$dir/b.out"
    fail=1
fi
# With asynchronous dispatch the step's peak is read once it has run, so it is the plan's
# (an outside report: after 5 steps it read 257.5 KiB of 474.0 planned), and so is `kiln
# plan --run`'s.
if ! KILN_ASYNC=1 "$KILN" train $tiny --steps 3 --out "$dir/as" >"$dir/as.out" 2>&1 ||
    ! awk -F'[:,]' '/"planned_peak_bytes"/ { p = $2 } /"measured_peak_bytes"/ { m = $2 }
        END { exit !(p > 0 && p == m) }' "$dir/as/summary.json" ||
    ! KILN_ASYNC=1 "$KILN" plan train_mlp --run -o "$dir/asp" >"$dir/as.out" 2>&1 ||
    ! grep -q "(equal)" "$dir/as.out"; then
    echo "FAIL: planned and measured peaks under KILN_ASYNC=1"
    cat "$dir/as.out"
    fail=1
fi
# Outside reports, each a message or a check that was wrong: a name the GPT does not have in
# a names policy, a range printed rounded, the budget hint below 1 MiB, a sharded f16 run,
# and a resumed --min-lr typed as the default's decimal.
expect 2 "'save_only_these_names:qkv,zzz' is not a policy" -- train --remat \
    save_only_these_names:qkv,zzz
expect 2 "(a number in [0, 0.999999999999])" -- train --beta1 1
KILN_MEMORY_LIMIT=500KiB expect 1 "give --memory-budget 500KiB or less" -- train --layers 1 \
    --heads 2 --channels 32 --context 256 --batch 64 --steps 2 --out "$dir/o"
expect 1 "needs no loss scaling, and dtype f16 has dynamic loss scaling" -- train $tiny \
    --steps 1 --devices 2 --shard-optimizer --dtype f16 --out "$dir/o"
"$KILN" train $tiny --steps 2 --lr 3e-3 --out "$dir/ml" >/dev/null 2>&1
if ! "$KILN" train --resume "$dir/ml/model.safetensors" --steps 3 --min-lr 0.0003 \
    --out "$dir/ml" >"$dir/out" 2>&1; then
    echo "FAIL: --min-lr 0.0003 against the recorded lr / 10"
    cat "$dir/out"
    fail=1
fi
# Host offload when the state itself does not fit the device: the parameters and moments
# are made (and loaded, on a resume) in host memory, not on the device first (an outside
# report: "out of memory" while setting up the state the step was to keep in host memory).
off="--layers 2 --heads 4 --channels 32 --context 16 --batch 4 --eval-every 0"
if ! KILN_MEMORY_LIMIT=400K "$KILN" train $off --steps 3 --offload-params --out "$dir/off" \
    >"$dir/out" 2>&1 ||
    ! KILN_MEMORY_LIMIT=400K "$KILN" train --resume "$dir/off/model.safetensors" --steps 5 \
        --offload-params --out "$dir/off" >"$dir/out" 2>&1 ||
    ! KILN_MEMORY_LIMIT=400K "$KILN" train $off --steps 2 --memory-budget 290K \
        --out "$dir/off2" >"$dir/out" 2>&1; then
    echo "FAIL: --offload-params with state larger than the device"
    cat "$dir/out"
    fail=1
fi
# --init refuses a file with tensors the model lacks (another model's extra layers were
# dropped unsaid: an outside report); a checkpoint of the same shape, moments and all, loads.
"$KILN" train --layers 2 --heads 2 --channels 16 --context 16 --batch 2 --steps 1 \
    --out "$dir/two" >/dev/null 2>&1
expect 1 "tensor 'h.1.ln_1.weight' (and " -- train $tiny --steps 1 --init \
    "$dir/two/model.safetensors" --out "$dir/o"
if ! "$KILN" train --layers 2 --heads 2 --channels 16 --context 16 --batch 2 --steps 1 \
    --init "$dir/two/model.safetensors" --out "$dir/o" >"$dir/out" 2>&1; then
    echo "FAIL: --init with a checkpoint of the same shape"
    cat "$dir/out"
    fail=1
fi
# A run on a batches file resumes on the same batches: without --batches it reads the file
# its checkpoint records, and with one it checks that the steps done hold the same bytes
# (a longer file extends the run, the same losses as one run over it); another file, or a
# file for a run that drew its batches from the corpus, is refused. (An outside report:
# resuming without --batches once trained the rest on other data, silently.)
head -c 816 /dev/zero >"$dir/six.bin"
{ head -c 408 /dev/zero; i=0; while [ $i -lt 102 ]; do printf '\001\000\000\000'; i=$((i + 1)); done; } >"$dir/other.bin"
{ i=0; while [ $i -lt 204 ]; do printf '\001\000\000\000'; i=$((i + 1)); done; } >"$dir/ones.bin"
expect 1 "the batches file '$dir/batches.bin' has 408 bytes; [steps 6" -- train --resume \
    "$dir/b/model.safetensors" --steps 6 --overwrite --out "$dir/o"
expect 1 "differs from the one the run trained on ($dir/batches.bin) in its first 3 steps" -- \
    train --resume "$dir/b/model.safetensors" --steps 6 --batches "$dir/ones.bin" --overwrite \
    --out "$dir/o"
if ! "$KILN" train --resume "$dir/b/model.safetensors" --steps 6 --batches "$dir/other.bin" \
    --out "$dir/b" >"$dir/b6.out" 2>&1 ||
    ! "$KILN" train $tiny --steps 6 --batches "$dir/other.bin" --out "$dir/b6" >"$dir/b6.out" 2>&1 ||
    ! same_losses "$dir/b" "$dir/b6"; then
    echo "FAIL: a batches run extended on a longer file"
    cat "$dir/b6.out"
    fail=1
fi
"$KILN" train $tiny --steps 3 --out "$dir/c" >/dev/null 2>&1
expect 1 "the run trained on batches drawn from its corpus; --batches" -- train --resume \
    "$dir/c/model.safetensors" --steps 6 --batches "$dir/six.bin" --overwrite --out "$dir/o"

# A folder holding an earlier run's checkpoint: a fresh run into it (a forgotten --resume:
# an outside check lost a 10-step model to a 3-step run so), or a run resuming another
# checkpoint, is refused before anything is computed and leaves the checkpoint as it was;
# --overwrite starts over; resuming the folder's own checkpoint continues it.
cp "$dir/c/model.safetensors" "$dir/c.keep"
expect 1 "the output folder '$dir/c' holds an earlier run's checkpoint ($dir/c/model.safetensors), which this run would replace: continue that run with --resume $dir/c/model.safetensors, start over with --overwrite" -- \
    train $tiny --steps 2 --out "$dir/c"
expect 1 "holds an earlier run's checkpoint" -- train --resume "$dir/b/model.safetensors" \
    --steps 4 --out "$dir/c"
if ! cmp -s "$dir/c.keep" "$dir/c/model.safetensors"; then
    echo "FAIL: a refused run changed the folder's checkpoint"
    fail=1
fi
if ! "$KILN" train $tiny --steps 2 --overwrite --out "$dir/c" >"$dir/out" 2>&1 ||
    cmp -s "$dir/c.keep" "$dir/c/model.safetensors"; then
    echo "FAIL: --overwrite did not start a new run over the folder's checkpoint"
    cat "$dir/out"
    fail=1
fi

# start_run OUT ARGS...: a run in the background ($pid) whose output goes to OUT.log; waits up
# to two minutes (compiling comes first, and a loaded machine or a sanitizer build is slow
# at it) for its first progress line, polling every 10 ms.
start_run() {
    out=$1
    shift
    rm -rf "$out" "$out.log"
    "$KILN" train "$@" --out "$out" >"$out.log" 2>&1 &
    pid=$!
    deadline=$(($(date +%s) + 120))
    while [ "$(date +%s)" -lt $deadline ] && ! grep -q "step .*/" "$out.log" 2>/dev/null; do
        kill -0 $pid 2>/dev/null || break # it ended (failed) before its first progress line
        sleep 0.01
    done
}

# A run interrupted by SIGINT after its first progress line (step 10) stops after the step
# in progress, saves and exits 130, as a shell reports SIGINT; the resumed run finishes it
# and appends to its log. Steps of the tiny model take 0.1 ms, too few to signal between,
# so this run is larger (~1 ms a step, 0.4 s in all); a run that still finished before the
# signal reached it (a fast machine) is not a failure of kiln and is tried again, up to
# three times.
small="--layers 2 --heads 2 --channels 32 --context 32 --batch 4"
try=0
while :; do
    start_run "$dir/run" $small --steps 400 --eval-every 0
    kill -INT $pid 2>/dev/null
    wait $pid
    rc=$?
    try=$((try + 1))
    if [ $rc = 0 ] && grep -q "step 400/400" "$dir/run.log" && [ $try -lt 3 ]; then
        continue
    fi
    break
done
if [ $rc != 130 ] || ! grep -q "interrupted after step" "$dir/run.log" ||
    [ ! -f "$dir/run/model.safetensors" ]; then
    echo "FAIL: SIGINT: exit $rc (try $try)"
    cat "$dir/run.log"
    fail=1
fi
stopped=$(sed -n 's/^interrupted after step \([0-9]*\) .*/\1/p' "$dir/run.log")
if ! "$KILN" train --resume "$dir/run/model.safetensors" --out "$dir/run" >"$dir/resume.out" 2>&1 ||
    ! grep -q "step 400/400" "$dir/resume.out"; then
    echo "FAIL: resume"
    cat "$dir/resume.out"
    fail=1
fi
# The log holds every step once, in order, across the two runs.
if [ "$(cut -d, -f1 "$dir/run/losses.csv" | tail -n +2 | tr '\n' ' ')" != "$(seq -s ' ' 1 400) " ]
then
    echo "FAIL: losses.csv after resuming at step $stopped: not steps 1..400"
    head -3 "$dir/run/losses.csv"
    fail=1
fi
# A finished run is extended by asking for more steps; fewer than it has done are refused.
expect 1 "the run has done 400 steps; --steps 300 would end it before that" -- train \
    --resume "$dir/run/model.safetensors" --steps 300 --out "$dir/run"
if ! "$KILN" train --resume "$dir/run/model.safetensors" --steps 420 --eval-every 0 \
    --out "$dir/run" >"$dir/extend.out" 2>&1 || ! grep -q "extending the run from 400 to 420" \
    "$dir/extend.out" || [ "$(tail -n 1 "$dir/run/losses.csv" | cut -d, -f1)" != 420 ]; then
    echo "FAIL: extending a finished run"
    cat "$dir/extend.out"
    fail=1
fi

# SIGTERM (timeout, systemd, Slurm) is Ctrl-C: saved, exit 143. This run asks for more
# steps than an int holds (once a segfault before step 1), and finds the temporary file a
# run killed while saving left behind (its process is gone), which it removes.
sh -c 'exit 0' &
dead=$!
wait $dead
mkdir -p "$dir/term"
: >"$dir/term/model.safetensors.tmp-$dead-1f2e3d"
: >"$dir/term/model.safetensors.tmp-$$-1f2e3d" # a live process's: kept
"$KILN" train $tiny --steps 2147483648 --eval-every 0 --out "$dir/term" >"$dir/term.log" 2>&1 &
pid=$!
deadline=$(($(date +%s) + 120))
while [ "$(date +%s)" -lt $deadline ] && ! grep -q "step .*/" "$dir/term.log" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
done
kill -TERM $pid
wait $pid
rc=$?
if [ $rc != 143 ] || ! grep -q "interrupted after step [0-9]* of 2147483648" "$dir/term.log" ||
    ! grep -q "removed 1 temporary checkpoint file left" "$dir/term.log" ||
    [ -e "$dir/term/model.safetensors.tmp-$dead-1f2e3d" ] ||
    [ ! -e "$dir/term/model.safetensors.tmp-$$-1f2e3d" ] ||
    ! "$KILN" sample "$dir/term/model.safetensors" --length 1 >/dev/null 2>&1; then
    echo "FAIL: SIGTERM: exit $rc"
    tail -5 "$dir/term.log"
    ls "$dir/term"
    fail=1
fi

# Signals against runs in their GEMMs, under the default BLAS (once: heap corruption, about
# one in four): every run exits 130 with a checkpoint that loads. Then a second SIGINT right
# after the first, while a checkpoint of every step is being saved: the run ends at once
# (130), and leaves no temporary file and a checkpoint that loads (the last good one).
mid="--layers 2 --heads 4 --channels 128 --context 64 --batch 8 --eval-every 0"
aborts=0
for k in 1 2 3 4 5 6; do
    start_run "$dir/sig" $mid --steps 100000
    kill -INT $pid 2>/dev/null
    wait $pid
    rc=$?
    if [ $rc != 130 ] || ! "$KILN" sample "$dir/sig/model.safetensors" --length 1 >/dev/null 2>&1
    then
        echo "FAIL: SIGINT during the step, run $k: exit $rc"
        tail -5 "$dir/sig.log"
        aborts=$((aborts + 1))
    fi
done
for k in 1 2 3 4 5 6; do
    start_run "$dir/sig2" $mid --steps 100000 --save-every 1
    kill -INT $pid 2>/dev/null
    sleep 0.00$k
    kill -INT $pid 2>/dev/null
    wait $pid
    rc=$?
    if [ $rc != 130 ] || ls "$dir/sig2" | grep -q "\.tmp-" ||
        ! "$KILN" sample "$dir/sig2/model.safetensors" --length 1 >/dev/null 2>&1; then
        echo "FAIL: two SIGINTs during a save, run $k: exit $rc"
        ls "$dir/sig2"
        tail -3 "$dir/sig2.log"
        aborts=$((aborts + 1))
    fi
done
[ $aborts = 0 ] || fail=1
# One run writes an output folder at a time: a second is refused while the first runs (it
# once replaced the first's losses.csv), and the folder is free again once it has ended.
start_run "$dir/busy" $mid --steps 100000
expect 1 "the output folder '$dir/busy' is in use by another kiln train" -- train $tiny --steps 1 \
    --out "$dir/busy"
kill -INT $pid 2>/dev/null
wait $pid
if ! "$KILN" train $tiny --steps 1 --overwrite --out "$dir/busy" >"$dir/out" 2>&1; then
    echo "FAIL: the output folder stays locked after its run ended"
    cat "$dir/out"
    fail=1
fi

if command -v python3 >/dev/null &&
    ! python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['steps']==420 and d['planned_peak_bytes']>0 and 'optimizer' in d and 'data' in d" \
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
# The checkpoint records its corpus: a resumed run reads it again without --data, refuses
# it once it has changed, and takes another file only when --data names it (and says so).
head -c 30000 /dev/urandom | od -An -tx1 >"$dir/corpus.txt"
if ! "$KILN" train $tiny --steps 6 --save-every 3 --eval-every 0 --data "$dir/corpus.txt" \
    --out "$dir/data" >"$dir/data.out" 2>&1 ||
    ! "$KILN" train --resume "$dir/data/model.safetensors" --steps 8 --out "$dir/data" \
        >"$dir/data.out" 2>&1 || grep -q "note:" "$dir/data.out"; then
    echo "FAIL: resuming on the recorded corpus"
    cat "$dir/data.out"
    fail=1
fi
echo "more text" >>"$dir/corpus.txt"
expect 1 "which has changed since (now" -- train --resume "$dir/data/model.safetensors" --steps 9 --out "$dir/data"
mv "$dir/corpus.txt" "$dir/moved.txt"
expect 1 "the corpus the run trained on: cannot open the corpus '$dir/corpus.txt'" -- train \
    --resume "$dir/data/model.safetensors" --steps 9 --out "$dir/data"
mv "$dir/moved.txt" "$dir/corpus.txt"
if ! "$KILN" train --resume "$dir/data/model.safetensors" --steps 9 --data "$dir/corpus.txt" \
    --out "$dir/data" >"$dir/data.out" 2>&1 ||
    ! grep -q "note: resuming on $dir/corpus.txt" "$dir/data.out"; then
    echo "FAIL: resuming on another corpus named by --data"
    cat "$dir/data.out"
    fail=1
fi
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
# --shard-optimizer (ZeRO): the recipe and the memory report say so, the checkpoint is whole
# (a plain run resumes it); stage 3 does not exist; f16's loss scaling is refused.
expect 2 "--zero-stage: '3' is not a valid value" -- train --zero-stage 3
expect 1 "shard_optimizer (--shard-optimizer) needs no loss scaling" -- train $tiny --devices 2 --shard-optimizer --dtype f16
if ! "$KILN" train $tiny --devices 2 --steps 2 --eval-every 0 --shard-optimizer --out "$dir/zero" \
        >"$dir/zero.out" 2>&1 ||
    ! grep -q "optimiser state sharded (ZeRO-2)" "$dir/zero.out" ||
    ! grep -q "this rank's 1/2 shard of the AdamW moments" "$dir/zero.out" ||
    ! "$KILN" train $tiny --steps 3 --eval-every 0 --resume "$dir/zero/model.safetensors" \
        --out "$dir/zero" >"$dir/zero2.out" 2>&1; then
    echo "FAIL: train --devices 2 --shard-optimizer, then resumed on one"
    cat "$dir/zero.out" "$dir/zero2.out"
    fail=1
fi
# A full disk: the log and the summaries are written under temporary names and renamed,
# so the error says why (errno) and the previous files stay whole (once: "writing
# losses.csv failed" and a 0-byte file). Needs a small tmpfs in a mount namespace of its
# own (root); skipped, saying so, where that cannot be had.
mkdir "$dir/full"
if unshare -m sh -c "mount -t tmpfs -o size=768k tmpfs '$dir/full'" 2>/dev/null; then
    unshare -m sh -c "
        mount -t tmpfs -o size=768k tmpfs '$dir/full' || exit 3
        '$KILN' train $tiny --steps 4 --eval-every 0 --out '$dir/full/r' >/dev/null 2>&1 || exit 4
        cp '$dir/full/r/losses.csv' '$dir/before.csv'
        dd if=/dev/zero of='$dir/full/filler' bs=4k >/dev/null 2>&1
        '$KILN' train --resume '$dir/full/r/model.safetensors' --steps 6 --out '$dir/full/r' \
            >'$dir/full.out' 2>&1
        echo \$? >'$dir/full.rc'
        cmp -s '$dir/full/r/losses.csv' '$dir/before.csv' || echo changed >>'$dir/full.rc'
        ls '$dir/full/r' | grep -q tmp- && echo temporaries >>'$dir/full.rc'
        exit 0"
    if [ "$(cat "$dir/full.rc" 2>/dev/null)" != 1 ] ||
        ! grep -q "No space left on device" "$dir/full.out"; then
        echo "FAIL: a full disk: exit and state '$(cat "$dir/full.rc" 2>/dev/null)', output:"
        cat "$dir/full.out"
        fail=1
    fi
else
    echo "SKIP full-disk case: no tmpfs in a mount namespace here (needs root)"
fi

[ $fail = 0 ] && echo "test_cli_train: passed"
exit $fail
