#!/bin/sh
# install_check.sh BUILD CC CMAKE SRC — installs the build into a temporary prefix, moves it,
# and builds programs outside the tree against it as a user would, with the lines the docs
# give, taken from the docs themselves so that docs and install cannot drift apart:
#   - README.md, "Using kiln in your own project": every `cc model.c ...` line (pkg-config
#     kiln, kiln with an rpath, kiln-static), each on a program that checks the version it
#     was built with against the library it runs with and evaluates a small graph;
#   - docs/training.md, "From C": train.c and its `cc` line (pkg-config kiln-gpt), run for
#     two steps;
#   - find_package(kiln): kiln::kiln, kiln::kiln_static and kiln::kiln_gpt.
# The static programs and the one with an rpath must run with LD_LIBRARY_PATH unset, from
# another folder, and need no libkiln.so. `cc` in a doc line is the compiler CMake uses (CC).
# Exit 77 (skipped) when pkg-config is missing.
set -eu
build=$1 compiler=$2 cmake=$3 src=$4
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
# The installed tree is moved before use: the package files must find it where it is.
mv "$prefix" "$tmp/moved" && prefix=$tmp/moved
export KILN_CACHE_DIR="$tmp/cache"
unset LD_LIBRARY_PATH || true
pcdir=$(dirname "$(find "$prefix" -name kiln.pc)")
export PKG_CONFIG_PATH="$pcdir"
libdir=$(pkg-config --variable=libdir kiln)

cc() { command "$compiler" "$@"; } # command: not this function, when CC is "cc"

# doc_block FILE SECTION LANG: the first ```LANG block under the heading "## SECTION".
doc_block() {
    awk -v h="## $2" -v fence="\`\`\`$3" '
        $0 == h { sec = 1; next }
        sec && /^## / { exit }
        sec && !on && $0 == fence { on = 1; next }
        on && $0 == "```" { exit }
        on { print }' "$1"
}
# doc_lines FILE SECTION PREFIX: every line of the ```sh blocks under "## SECTION" that
# starts with PREFIX.
doc_lines() {
    awk -v h="## $2" -v p="$3" '
        $0 == h { sec = 1; next }
        sec && /^## / { exit }
        sec && $0 == "```sh" { on = 1; next }
        on && $0 == "```" { on = 0; next }
        on && index($0, p) == 1 { print }' "$1"
}
fail() {
    echo "install check: $*"
    exit 1
}
needs_libkiln() { readelf -d "$1" | grep -q "NEEDED.*libkiln\.so"; }
# Runs a program from another folder with LD_LIBRARY_PATH unset.
run_elsewhere() { (cd / && "$@"); }

cat >"$tmp/model.c" <<'C'
#include <kiln.h>
#include <stdio.h>
#include <string.h>
#define STR2(x) #x
#define STR(x) STR2(x)
int main(void) {
    const char *want = STR(KILN_VERSION_MAJOR) "." STR(KILN_VERSION_MINOR) "." STR(KILN_VERSION_PATCH);
    if (strcmp(kiln_version(), want) != 0) {
        fprintf(stderr, "header says %s, library says %s\n", want, kiln_version());
        return 1;
    }
    kiln_context *ctx;
    kiln_graph *g;
    char err[256];
    if (kiln_context_create(NULL, &ctx, err, sizeof err) != KILN_STATUS_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (kiln_graph_create(ctx, "consumer", &g) != KILN_STATUS_OK) return 1;
    int64_t n = 3;
    kiln_value x = kiln_parameter(g, "x", KILN_DTYPE_F32, 1, &n);
    kiln_value y = kiln_mul(g, x, x);
    if (kiln_graph_finish(g, 1, &y) != KILN_STATUS_OK) return 1;
    float in[3] = {1, 2, 3}, out[3];
    kiln_array *a, *r;
    if (kiln_array_create(ctx, KILN_DTYPE_F32, 1, &n, in, &a) != KILN_STATUS_OK) return 1;
    if (kiln_interpret(g, 1, &a, 1, &r) != KILN_STATUS_OK) {
        fprintf(stderr, "%s\n", kiln_last_error(ctx));
        return 1;
    }
    kiln_array_copy_to_host(r, out, sizeof out);
    kiln_array_destroy(a);
    kiln_array_destroy(r);
    kiln_graph_destroy(g);
    kiln_context_destroy(ctx);
    if (out[0] != 1 || out[1] != 4 || out[2] != 9) return 1;
    printf("kiln %s ok\n", kiln_version());
    return 0;
}
C

# ---- README: the shared, rpath and static lines, each run in a folder of its own ----
lines=$(doc_lines "$src/README.md" "Using kiln in your own project" "cc model.c")
[ "$(printf '%s\n' "$lines" | grep -c .)" = 3 ] &&
    [ "$(printf '%s\n' "$lines" | grep -c kiln-static)" = 1 ] &&
    [ "$(printf '%s\n' "$lines" | grep -c rpath)" = 1 ] ||
    fail "README.md's 'Using kiln in your own project' should have 3 'cc model.c' lines" \
        "(shared, kiln-static, rpath), has: $lines"
i=0
printf '%s\n' "$lines" | while IFS= read -r line; do
    i=$((i + 1))
    mkdir "$tmp/readme$i" && cp "$tmp/model.c" "$tmp/readme$i/"
    (cd "$tmp/readme$i" && eval "$line") || fail "README line does not build: $line"
    bin=$tmp/readme$i/a.out
    case $line in
    *static*) # kiln-static, or a --static that promises a static link too
        ! needs_libkiln "$bin" || fail "'$line' made a program that needs libkiln.so"
        run_elsewhere "$bin" >/dev/null || fail "'$line': the program does not run" ;;
    *rpath*)
        needs_libkiln "$bin" || fail "'$line' made a program without libkiln.so"
        run_elsewhere "$bin" >/dev/null || fail "'$line': the program does not run" ;;
    *)
        readelf -d "$bin" | grep -q "NEEDED.*libkiln\.so\.[0-9]" ||
            fail "'$line' made a program that does not load libkiln.so.MAJOR"
        (cd / && LD_LIBRARY_PATH="$libdir" "$bin" >/dev/null) ||
            fail "'$line': the program does not run with LD_LIBRARY_PATH=$libdir" ;;
    esac
    echo "README ok: $line"
done

# ---- docs/training.md, "From C": train.c built by its line and run for two steps ----
mkdir "$tmp/gpt"
doc_block "$src/docs/training.md" "From C" c >"$tmp/gpt/train.c"
grep -q "gpt_train(" "$tmp/gpt/train.c" || fail "no program under docs/training.md's 'From C'"
line=$(doc_lines "$src/docs/training.md" "From C" "cc ")
[ -n "$line" ] || fail "no 'cc' line under docs/training.md's 'From C'"
(cd "$tmp/gpt" && eval "$line") || fail "docs/training.md's program does not build: $line"
! needs_libkiln "$tmp/gpt/train" || fail "'$line' made a program that needs libkiln.so"
# A text long enough for the default context (64) and its validation split.
i=0
while [ $i -lt 400 ]; do
    echo "line $i: the quick brown fox jumps over the lazy dog, and the dog sleeps on."
    i=$((i + 1))
done >"$tmp/gpt/my.txt"
(cd "$tmp/gpt" && ./train my.txt 2 >out.txt 2>&1) || {
    cat "$tmp/gpt/out.txt"
    fail "docs/training.md's program fails"
}
grep -q "after 2 steps" "$tmp/gpt/out.txt" && [ -f "$tmp/gpt/my-run/model.safetensors" ] || {
    cat "$tmp/gpt/out.txt"
    fail "docs/training.md's program did not train and save"
}
echo "docs/training.md ok: $line"

# ---- find_package(kiln): the three imported targets ----
mkdir "$tmp/proj"
cp "$tmp/model.c" "$tmp/gpt/train.c" "$tmp/proj/"
cat >"$tmp/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(kiln 0 REQUIRED)
add_executable(consumer_shared model.c)
target_link_libraries(consumer_shared PRIVATE kiln::kiln)
add_executable(consumer_static model.c)
target_link_libraries(consumer_static PRIVATE kiln::kiln_static)
add_executable(consumer_gpt train.c)
target_link_libraries(consumer_gpt PRIVATE kiln::kiln_gpt)
CM
"$cmake" -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_C_COMPILER="$compiler" \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
"$cmake" --build "$tmp/proj/build" >/dev/null
# No path of the machine kiln was built on in the package: its dependencies are found anew.
! grep -q "/libopenblas\|/libcjson" "$(find "$prefix" -name kilnConfig.cmake)" ||
    fail "kilnConfig.cmake names a library path of the build machine"
"$tmp/proj/build/consumer_shared" >/dev/null
run_elsewhere "$tmp/proj/build/consumer_static" >/dev/null
! needs_libkiln "$tmp/proj/build/consumer_gpt" || fail "kiln::kiln_gpt links libkiln.so"
echo "install check: README's lines (shared, rpath, static), docs/training.md's program and" \
    "find_package (kiln::kiln, kiln::kiln_static, kiln::kiln_gpt) ok"
