#!/bin/sh
# check_docs.sh KILN [--update] FILE... — keeps the outputs shown in the docs true.
#
# A fenced block in a markdown file that follows a marker line
#
#     <!-- output of: kiln plan train_mlp --buffers | head -20 -->
#
# holds what that command prints. The command runs under sh in a fresh empty folder ($DIR,
# also the current folder) with `kiln` meaning the tool given as KILN and $SRC the source
# tree; stderr is included. Without --update a block that differs from what its command
# prints now fails the check with a diff (ctest check_docs runs it on README.md and
# docs/*.md); with --update the blocks are rewritten in place.
#
# Two more checks need no marker: every path into the tree a document names (src/...,
# tests/..., docs/..., and the other top folders) must exist, and every flag `kiln train`
# and `kiln sample` accept (their --help) must be named in docs/training.md, and every flag
# its tables list must be accepted.
set -eu
kiln=$1
shift
update=0
if [ "${1:-}" = --update ]; then
    update=1
    shift
fi
case $kiln in /*) ;; *) kiln=$(pwd)/$kiln ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
export SRC
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for doc in "$@"; do
    # Split the file: awk writes each marked block's command to cmd.N and its current text
    # to old.N, and the whole file with @@BLOCK N@@ in place of each block's body to skel.
    rm -f "$tmp"/cmd.* "$tmp"/old.* "$tmp/skel"
    awk -v dir="$tmp" '
        state == 0 && /^<!-- output of: .* -->$/ {
            n++; cmd = $0; sub(/^<!-- output of: /, "", cmd); sub(/ -->$/, "", cmd)
            print cmd > (dir "/cmd." n); close(dir "/cmd." n)
            printf "" > (dir "/old." n); close(dir "/old." n)
            print > (dir "/skel"); state = 1; next }
        state == 1 {
            if ($0 !~ /^```/) { print "marker not followed by a fenced block at line " NR > "/dev/stderr"; exit 3 }
            print > (dir "/skel"); state = 2; next }
        state == 2 && /^```$/ {
            print "@@BLOCK " n "@@" > (dir "/skel"); print > (dir "/skel"); state = 0; next }
        state == 2 { print >> (dir "/old." n); next }
        { print > (dir "/skel") }
        END { if (state != 0) { print "unterminated block at the end" > "/dev/stderr"; exit 3 } }
    ' "$doc" || { echo "$doc: malformed output marker" >&2; exit 1; }
    [ -f "$tmp/skel" ] || continue
    changed=0
    for c in "$tmp"/cmd.*; do
        [ -f "$c" ] || continue
        i=${c##*.}
        run=$tmp/run.$i
        rm -rf "$run" && mkdir "$run"
        # `kiln` at the start of the command, or after a pipe or &&, is the tool under test.
        (cd "$run" && kiln() { "$kiln" "$@"; } && DIR=$run && export DIR &&
            eval "$(cat "$c")") >"$tmp/new.$i" 2>&1 || true
        if ! cmp -s "$tmp/old.$i" "$tmp/new.$i"; then
            changed=1
            if [ $update = 0 ]; then
                echo "$doc: the output shown for \`$(cat "$c")\` is out of date:"
                diff -u --label shown --label now "$tmp/old.$i" "$tmp/new.$i" | sed 's/^/    /' | head -60
                status=1
            fi
        fi
    done
    if [ $update = 1 ] && [ $changed = 1 ]; then
        awk -v dir="$tmp" '/^@@BLOCK [0-9]+@@$/ {
                i = $2; sub(/@@$/, "", i); f = dir "/new." i
                while ((getline line < f) > 0) print line; close(f); next }
            { print }' "$tmp/skel" >"$tmp/out"
        cp "$tmp/out" "$doc"
        echo "updated $doc"
    fi
done

# Paths a document names that are not in the tree (a file moved or removed since).
for doc in "$@"; do
    # (a path with a placeholder, fuzz/fuzz_<target>.c, is a pattern: left out)
    grep -oE '(^|[^A-Za-z0-9_./-])(src|tests|tools|models|scripts|bench|fuzz|examples|docs|include|cmake)/[A-Za-z0-9_./-]*[A-Za-z0-9_/<]' \
        "$doc" | grep -v '<$' | sed -E 's/^[^a-z]//' | sort -u >"$tmp/paths"
    while read -r p; do
        case $p in *.venv*) continue ;; esac # made by scripts, not in the tree
        [ -e "$SRC/$p" ] || {
            echo "$doc: names $p, which is not in the tree"
            status=1
        }
    done <"$tmp/paths"
done

# The tool's flags against docs/training.md: each accepted flag documented, each flag of
# its tables accepted.
for doc in "$@"; do
    case $doc in */training.md) ;; *) continue ;; esac
    for cmd in train sample; do
        "$kiln" $cmd --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u >"$tmp/flags"
        while read -r f; do
            grep -qE -- "(^|[^a-z-])$f([^a-z-]|\$)" "$doc" || {
                echo "$doc: kiln $cmd accepts $f, which the page does not name"
                status=1
            }
        done <"$tmp/flags"
    done
    { "$kiln" train --help; "$kiln" sample --help; } | grep -oE -- '--[a-z][a-z0-9-]*' |
        sort -u >"$tmp/flags"
    grep -E '^\| `--' "$doc" | grep -oE -- '`--[a-z][a-z0-9-]*' | tr -d '`' | sort -u >"$tmp/table"
    for f in $(comm -13 "$tmp/flags" "$tmp/table"); do
        echo "$doc: its table lists $f, which kiln train and kiln sample do not accept"
        status=1
    done
done
exit $status
