#!/bin/sh
# check_docs_selftest.sh KILN — the docs check itself: a stale block fails with a diff, an
# up-to-date one passes, --update rewrites only the block, a marker without a fenced
# block is an error, a path into the tree that is not there fails, and so does a
# training.md that misses a flag of kiln train or lists one it does not accept.
set -u
kiln=$1
check=$(dirname "$0")/../scripts/check_docs.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'before\n<!-- output of: echo one; echo two -->\n```\nstale\n```\nafter\n' >"$tmp/a.md"
out=$(sh "$check" "$kiln" "$tmp/a.md" 2>&1) && { echo "a stale block passed"; exit 1; }
echo "$out" | grep -q '^    +two$' || { echo "no diff shown: $out"; exit 1; }
sh "$check" "$kiln" --update "$tmp/a.md" >/dev/null || { echo "--update failed"; exit 1; }
printf 'before\n<!-- output of: echo one; echo two -->\n```\none\ntwo\n```\nafter\n' >"$tmp/want.md"
cmp -s "$tmp/a.md" "$tmp/want.md" || { echo "--update wrote:"; cat "$tmp/a.md"; exit 1; }
sh "$check" "$kiln" "$tmp/a.md" >/dev/null || { echo "an up-to-date block failed"; exit 1; }
printf '<!-- output of: kiln list -->\nno fence\n' >"$tmp/b.md"
sh "$check" "$kiln" "$tmp/b.md" >/dev/null 2>&1 && { echo "a marker without a block passed"; exit 1; }
printf 'see src/runtime/run.c and src/runtime/no_such_file.c\n' >"$tmp/c.md"
out=$(sh "$check" "$kiln" "$tmp/c.md" 2>&1) && { echo "a missing path passed"; exit 1; }
echo "$out" | grep -q 'names src/runtime/no_such_file.c' || { echo "wrong message: $out"; exit 1; }
echo "$out" | grep -q 'run.c' && { echo "an existing path was named: $out"; exit 1; }
mkdir "$tmp/docs"
printf '| `--layers N` | 2 | blocks |\n| `--no-such-flag` | | |\n' >"$tmp/docs/training.md"
out=$(sh "$check" "$kiln" "$tmp/docs/training.md" 2>&1) && { echo "flags passed"; exit 1; }
echo "$out" | grep -q 'kiln train accepts --heads, which the page does not name' &&
    echo "$out" | grep -q 'its table lists --no-such-flag' || { echo "flags: $out"; exit 1; }
echo "check_docs self-test ok"
