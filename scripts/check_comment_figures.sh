#!/bin/sh
# check_comment_figures.sh — fails when a C comment under src/, tools/ or models/ quotes a
# timing (run by ctest as check_comment_figures).
#
# Figures belong in bench/RESULTS.md, with the machine, the date and the command; a
# comment that quotes one ("1.64 ms against 0.66", "2.4x slower") is stale by the next
# commit. A comment says why and names the section of bench/RESULTS.md that holds the
# measurement. Flagged, in comments only (code and string literals are not read): a
# number followed by a unit of time (ms, us, µs, ns, s, sec, seconds, ...), by "x
# slower" or "x faster", by "% slower" or "% faster", or by a rate in B/s (GB/s, MB/s).
# A comment's lines are read as one text, so a figure broken across two lines counts.
#
# Design constants are not measurements ("sleeps in growing steps up to 1 ms"). Two ways
# to keep one: the word figure-ok in the comment on the figure's line, or an entry of
# ALLOWED below: a file and a fixed piece of its comment's text (the figure must lie
# inside it; a comment's lines joined by one space, its leading "*" dropped).
#
# Usage: check_comment_figures.sh [ROOT]   (ROOT: the source tree, default the one above
# this script; its src/, tools/ and models/ are read)
root=${1:-$(dirname "$0")/..}
[ -d "$root" ] || { echo "check_comment_figures: no folder $root" >&2; exit 2; }

ALLOWED='src/comm/nccl.c|sleeps in growing steps up to 1 ms
src/comm/mpi.c|sleeps in growing steps up to 1 ms'

files=$(cd "$root" && for d in src tools models; do
    [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \)
done | sort)
[ -n "$files" ] || { echo "check_comment_figures: no C files under $root" >&2; exit 2; }

# shellcheck disable=SC2086 # the file names are from find, without blanks in this tree
out=$(cd "$root" && printf '%s\n' "$ALLOWED" | LC_ALL=C awk '
NR == FNR { if ($0 != "") { k = index($0, "|"); na++; afile[na] = substr($0, 1, k - 1);
                                 atext[na] = substr($0, k + 1) }
            next }
FNR == 1 { state = 0 }
function begin_comment() { ctext = ""; nseg = 0 }
function add_segment(s, lineno) {
    if (nseg) { sub(/^[ \t]*\*?[ \t]*/, "", s); sub(/[ \t]+$/, "", ctext); ctext = ctext " " }
    nseg++; segoff[nseg] = length(ctext) + 1; segline[nseg] = lineno; segtext[nseg] = s
    ctext = ctext s
}
function line_of(pos,   k) {
    for (k = nseg; k > 1; k--) if (segoff[k] <= pos) return k
    return 1
}
function allowed(file, text, s, e,   a, from, at) {
    if (index(segtext[line_of(s)], "figure-ok")) return 1
    for (a = 1; a <= na; a++) {
        if (afile[a] != file) continue
        from = 1
        while ((at = index(substr(text, from), atext[a])) > 0) {
            at += from - 1
            if (s >= at && e <= at + length(atext[a])) return 1
            from = at + 1
        }
    }
    return 0
}
function check(file, text,   p, pos, s, e, b, c, fig) {
    for (p = 1; p <= npat; p++) {
        pos = 1
        while (match(substr(text, pos), pat[p])) {
            s = pos + RSTART - 1; e = s + RLENGTH
            b = s > 1 ? substr(text, s - 1, 1) : " "
            c = substr(text, e, 1)
            fig = substr(text, s, RLENGTH)
            if (b !~ /[A-Za-z0-9_.]/ && c !~ /[A-Za-z0-9_]/ && !allowed(file, text, s, e)) {
                printf "%s:%d: a figure in a comment: \"%s\"\n", file, segline[line_of(s)], fig
                bad++
            }
            pos = s + 1
        }
    }
}
function end_comment(file) { check(file, ctext) }
BEGIN {
    num = "[0-9]+([.][0-9]+)?"
    pat[1] = num " ?(ms|us|\302\265s|ns|msec|usec|nsec|s|sec|secs|second|seconds"
    pat[1] = pat[1] "|millisecond|milliseconds|microsecond|microseconds|nanosecond|nanoseconds)"
    pat[2] = num " ?(x|\303\227) (slower|faster)"
    pat[3] = num " ?% (slower|faster)"
    pat[4] = num " ?[kKMGT]i?B/s"
    npat = 4
}
{
    line = $0; n = length(line); i = 1
    if (state >= 2) state = 0 # a string or character literal ends with its line
    if (state == 1) seg = ""
    while (i <= n) {
        if (state == 0) {
            if (!match(substr(line, i), /[\/"\047]/)) break
            i += RSTART - 1; c = substr(line, i, 1)
            if (c == "\"") { state = 2; i++; continue }
            if (c == "\047") { state = 3; i++; continue }
            two = substr(line, i, 2)
            if (two == "//") {
                begin_comment(); add_segment(substr(line, i + 2), FNR); end_comment(FILENAME)
                break
            }
            if (two == "/*") { begin_comment(); state = 1; seg = ""; i += 2; continue }
            i++; continue
        }
        if (state == 1) {
            k = index(substr(line, i), "*/")
            if (!k) { seg = seg substr(line, i); break }
            seg = seg substr(line, i, k - 1); add_segment(seg, FNR); end_comment(FILENAME)
            state = 0; i += k + 1; continue
        }
        c = substr(line, i, 1)
        if (c == "\\") { i += 2; continue }
        if ((state == 2 && c == "\"") || (state == 3 && c == "\047")) state = 0
        i++
    }
    if (state == 1) add_segment(seg, FNR)
}
END { exit bad ? 1 : 0 }
' - $files)
status=$?
if [ "$status" -gt 1 ]; then
    printf '%s\n' "$out" >&2
    echo "check_comment_figures: awk failed (status $status)" >&2
    exit 2
fi
if [ "$status" -eq 1 ]; then
    printf '%s\n' "$out"
    echo "check_comment_figures: figures belong in bench/RESULTS.md (machine, date, command);"
    echo "  say why in the comment and name the section there. A design constant: add"
    echo "  figure-ok to its comment line, or an entry to ALLOWED in $0."
    exit 1
fi
count=$(printf '%s\n' "$files" | wc -l | tr -d ' ')
echo "check_comment_figures: no figures in comments ($count files)"
