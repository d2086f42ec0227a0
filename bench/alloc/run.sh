#!/bin/sh
# run.sh — kiln's device allocator against glibc malloc, jemalloc and mimalloc on the
# synthetic traces of bench/alloc/synth.c, each run in a fresh process; prints a Markdown
# table of medians (bench/RESULTS.md keeps one).
#   sh bench/alloc/run.sh [BUILD_DIR] [RUNS]        (make bench runs it on build/)
# Throughput: alloc+free pairs per second, the median of RUNS timed runs (default 5).
# Fragmentation: peak memory held from the system / peak bytes requested, the median of 3
# runs (kiln's and glibc's are deterministic; jemalloc's and mimalloc's nearly).
# jemalloc and mimalloc come from Debian's libjemalloc2 and libmimalloc2.0; one that is
# not installed shows as "-".
set -e
build=${1:-build}
runs=${2:-5}
bin="$build/kiln_alloc_replay"
[ -x "$bin" ] || { echo "run.sh: $bin not found: build first (make bench)" >&2; exit 1; }

median() { sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }

# field NAME LINE: the value of NAME=... in a result line
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

measure() { # measure ALLOC TRACE: prints "pairs_per_s frag" (or "- -" when skipped)
    out=$("$bin" --alloc "$1" --synthetic "$2")
    case "$out" in *skipped*) echo "- -"; return;; esac
    speeds=$(field pairs_per_s "$out")
    i=1
    while [ $i -lt "$runs" ]; do
        speeds="$speeds $(field pairs_per_s "$("$bin" --alloc "$1" --synthetic "$2")")"
        i=$((i + 1))
    done
    frags=""
    for i in 1 2 3; do
        frags="$frags $(field frag "$("$bin" --alloc "$1" --synthetic "$2" --memory)")"
    done
    echo "$(echo $speeds | tr ' ' '\n' | median) $(echo $frags | tr ' ' '\n' | median)"
}

echo "# kiln_alloc_replay, $(date -u +%Y-%m-%d), $(uname -m), $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "# medians: throughput of $runs runs, fragmentation of 3"
echo
echo "| trace | allocator | Mpairs/s | fragmentation (peak held / peak requested) |"
echo "| --- | --- | ---: | ---: |"
for trace in uniform pow2 training; do
    for alloc in kiln glibc jemalloc mimalloc; do
        set -- $(measure $alloc $trace)
        speed=$1
        [ "$1" != "-" ] && speed=$(awk -v s="$1" 'BEGIN {printf "%.2f", s / 1e6}')
        frag=$2
        [ "$2" != "-" ] && frag=$(awk -v f="$2" 'BEGIN {printf "%.3f", f}')
        echo "| $trace | $alloc | $speed | $frag |"
    done
done
