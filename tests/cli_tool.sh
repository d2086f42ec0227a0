#!/bin/sh
# cli_tool.sh KILN — the `kiln` tool's own conventions: --help and `help COMMAND` print to
# stdout and exit 0, --version prints kiln_version(), an unknown command or option is named
# with the closest suggestion (exit 2), extra arguments are errors, and a failing step prints
# no results. Registered in CMakeLists.txt as test_cli_tool; runs in about a second.
set -u
KILN=$1
dir=$(mktemp -d /tmp/kiln-test-tool-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export KILN_CACHE_DIR="$dir/cache"
mkdir -m 700 "$KILN_CACHE_DIR"
fail=0

# expect STATUS STREAM TEXT -- ARGS: runs kiln ARGS, wants exit STATUS and TEXT in STREAM
# (out or err).
expect() {
    want=$1 stream=$2 text=$3
    shift 4
    "$KILN" "$@" >"$dir/out" 2>"$dir/err"
    got=$?
    if [ "$got" != "$want" ] || ! grep -qF -- "$text" "$dir/$stream"; then
        echo "FAIL: kiln $*: exit $got (want $want), wanted in std$stream: $text"
        echo "-- stdout:"; cat "$dir/out"; echo "-- stderr:"; cat "$dir/err"
        fail=1
    fi
}

expect 0 out "usage: kiln COMMAND" -- --help
expect 0 out "usage: kiln COMMAND" -- -h
expect 0 out "usage: kiln COMMAND" -- help
expect 0 out "--budget B" -- help plan
expect 0 out "--budget B" -- plan --help
expect 0 out "--memory-budget X" -- help train
expect 0 out "--top-k N" -- help sample
expect 0 out "usage: kiln list" -- help list
expect 0 out "--memory-budget X" -- train -h
# Every option the parsers accept is in the help (the help describes every option).
for f in -o --no-fusion --donate --run --buffers --budget; do
    expect 0 out " $f" -- help plan
done
expect 0 out "kiln " -- --version
[ -s "$dir/out" ] && [ "$(wc -l <"$dir/out")" = 1 ] || { echo "FAIL: --version"; fail=1; }

expect 2 err "unknown command 'plna'; did you mean 'plan'?" -- plna
expect 2 err "unknown command 'frobnicate'" -- frobnicate
expect 2 err "unknown command 'tran'; did you mean 'train'?" -- help tran
expect 2 err "unknown option '--verison'; did you mean --version?" -- --verison
expect 2 err "unknown option '--bufers'; did you mean --buffers?" -- plan mlp --bufers
expect 2 err "unknown flag '--layer'; did you mean --layers?" -- train --layer 2
expect 2 err "unknown flag '--topk'; did you mean --top-k?" -- sample --topk 3
expect 2 err "unexpected argument 'extra'" -- plan mlp extra
expect 2 err "unexpected argument 'x'" -- list x
expect 2 err "unexpected argument 'b.safetensors'" -- sample a.safetensors b.safetensors
expect 2 err "unexpected argument 'more'" -- train more
expect 2 err "unexpected argument 'x'" -- --version x
expect 2 err "--budget needs a value" -- plan mlp --budget
expect 2 err "--budget: 'lots' is not a size" -- plan mlp --budget lots
expect 2 err "--donate: '1,x' is not a list" -- plan mlp --donate 1,x
expect 2 err "--budget: 'lots' is not a size" -- plan mlp --budget=lots
# Every bad value names its range, and every usage error says where the help is.
expect 2 err "--length: '-1' is not a valid value (an integer in [0, 16777216])" -- sample --length -1
expect 0 out "--top-p P" -- help sample
expect 2 err "--top-p: '0' is not a valid value (a number in (0, 1])" -- sample --top-p 0
expect 2 err "--top-p: '1.5' is not a valid value (a number in (0, 1])" -- sample --top-p 1.5
expect 2 err "--top-p: 'x' is not a valid value (a number in (0, 1])" -- sample --top-p x
expect 2 err "--top-k: '-1' is not a valid value (an integer in [0, 1048576])" -- sample --top-k -1
expect 2 err "(kiln train --help lists the flags)" -- train --steps 0
expect 2 err "unknown flag '-x'" -- train -x
expect 2 err "no example or graph file 'mpl'; did you mean 'mlp'?" -- plan mpl
expect 2 err "usage: kiln COMMAND" --
# kiln import: a program JAX exported (docs/import.md); a failure names the line and column.
expect 0 out "usage: kiln import" -- help import
expect 0 out " -o OUT.kir" -- import --help
expect 2 err "neither .mlir (StableHLO) nor .hlo" -- import notes.txt
expect 2 err "unexpected argument 'b.hlo'" -- import a.hlo b.hlo
printf 'HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] reduce-precision(p), exponent_bits=5, mantissa_bits=10\n}\n' >"$dir/bad.hlo"
expect 1 err "line 5, column 19: reduce-precision is not an op kiln imports" -- import "$dir/bad.hlo"
# kiln plan --run makes arguments of every parameter's dtype (f64, bf16, i64 and bool ones
# were filled as f32 or i32, past the end of an f64 buffer).
printf 'HloModule m\n\nENTRY e {\n  a = f64[300] parameter(0)\n  b = bf16[7] parameter(1)\n  c = s64[5] parameter(2)\n  d = pred[3] parameter(3)\n  x = f64[300] add(a, a)\n  y = bf16[7] multiply(b, b)\n  z = s64[5] add(c, c)\n  w = pred[3] not(d)\n  ROOT t = (f64[300], bf16[7], s64[5], pred[3]) tuple(x, y, z, w)\n}\n' >"$dir/types.hlo"
expect 0 out "(equal)" -- plan "$dir/types.hlo" --run -o "$dir/types.json"

# A failing step prints no results: the report is not printed when its files cannot be
# written (a folder under a plain file cannot be made, even by root).
: >"$dir/file"
expect 1 err "cannot make the folder $dir/file/sub" -- plan mlp -o "$dir/file/sub"
if [ -s "$dir/out" ]; then
    echo "FAIL: a failed plan printed results:"
    cat "$dir/out"
    fail=1
fi
expect 0 out "wrote $dir/p/plan.json" -- plan mlp -o "$dir/p"
[ $fail = 0 ] && echo "test_cli_tool: passed"
exit $fail
