#!/bin/sh
# check_comment_figures_selftest.sh — the comment-figures check itself: a timing in a
# comment fails and is named by file and line, also when it is broken across two lines
# or written as "2.4x slower" or a rate; code, string literals, words like int64s, a
# figure-ok line and an ALLOWED entry (in its own file only) pass.
set -u
check=$(dirname "$0")/../scripts/check_comment_figures.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/comm" "$tmp/tools" "$tmp/models"

fails() { # name, expected text in the report
    out=$(sh "$check" "$tmp" 2>&1) && { echo "$1 passed"; exit 1; }
    echo "$out" | grep -qF -- "$2" || { echo "$1: no \"$2\" in: $out"; exit 1; }
    rm -f "$tmp/src/x.c"
}

printf 'int a;\n/* a part took 1.64 ms against 0.66 in one */\n' >"$tmp/src/x.c"
fails "a timing" 'src/x.c:2: a figure in a comment: "1.64 ms"'
printf '/* NCHW -> NHWC, one thread, 0.73 -> 0.13\n * ms. */\n' >"$tmp/src/x.c"
fails "a timing across two lines" 'src/x.c:1: a figure in a comment: "0.13 ms"'
printf 'int b; // it left RoPE 2.4x slower\n' >"$tmp/src/x.c"
fails "a ratio" '"2.4x slower"'
printf '/* the loop ran at 3 GB/s */\n' >"$tmp/src/x.c"
fails "a rate" '"3 GB/s"'
printf '/* 300 bytes: 0.35 s on one thread */\n' >"$tmp/src/x.c"
fails "seconds" '"0.35 s"'
printf '/* sleeps in growing steps up to 1 ms. */\n' >"$tmp/src/x.c"
fails "an ALLOWED text in another file" '"1 ms"'

cat >"$tmp/src/ok.c" <<'C'
/* int64s, 3 sets of 16 rows, x86 and the section "First calls" of bench/RESULTS.md */
static const char *s = "/* 3 ms */ and 12 ms";
static const char q = '"';
double ms = 1.5 /* the unit */, us = 2; // no figure here
/* a timeout: waits 60 ms at most (figure-ok: the default, not a measurement) */
C
printf '/* spins, then\n * sleeps in growing steps up to 1 ms. */\n' >"$tmp/src/comm/nccl.c"
out=$(sh "$check" "$tmp" 2>&1) || { echo "clean files failed: $out"; exit 1; }
echo "check_comment_figures self-test ok"
