#!/bin/sh
# check_includes.sh — fails when a file under src/ includes a header from a room it may not
# depend on, so the layering cannot drift back (run by ctest as check_includes).
#
# The rooms in dependency order: base < ir < alloc < backend < reference, trace < autodiff <
# passes < plan < remat < codegen < runtime < report < compile; io (files: safetensors)
# needs only base, import (JAX's exported text) base, kiln.h's builders and ir (the
# backward marks of an imported training step), comm
# (communicators) base and backend (a GPU transport enqueues on a device's stream). A
# room may include its own headers, those of the rooms listed for it below, and the
# public kiln.h. runtime/ holds the executable and what a call does with
# it (arrays, the context, running the step list, profiling counters); report/ the reports
# that print an executable's IR and plans; compile/, the top room, may include anything:
# it drives every stage to make an executable (kiln_compile, the jit). base/ includes nothing above it: it defines the context and resolves
# its configuration, and runtime/context.c makes and closes the devices and hands each backend
# its options. backend/ holds what every backend shares (the table in backend_impl.h, the
# devices, the object cache objcache.h); each backend's own folder (backend/cpu/,
# backend/cuda/) is private to it: nothing else in src/, another backend included, reaches
# it but through the table. Only quoted includes count ("room/file.h"); a name without a
# slash is the room's own.
#
# Usage: check_includes.sh <src folder>
src=${1:-src}
[ -d "$src" ] || { echo "check_includes: no folder $src" >&2; exit 2; }

allowed() { # room -> the rooms it may include besides itself
    case $1 in
    base) echo "" ;;
    ir) echo "base" ;;
    alloc) echo "base" ;;
    backend) echo "base alloc" ;;
    reference) echo "base ir" ;;
    trace) echo "base ir" ;;
    autodiff) echo "base ir trace" ;;
    passes) echo "base ir reference trace" ;; # trace: expand.c builds primitive forms
    plan) echo "base ir trace passes" ;; # trace: the roles a value was given (trace/role.h)
    remat) echo "base ir trace passes plan" ;; # checkpoint regions trace, the budget plans
    codegen) echo "base ir passes plan backend" ;;
    io) echo "base" ;;
    import) echo "base ir" ;; # JAX's text, read through the public builders; ir: import.c
                              # marks a training step's backward part as kiln_grad does
    comm) echo "base backend" ;;
    runtime) echo "base ir alloc backend reference passes plan remat codegen comm" ;;
    report) echo "base ir passes plan remat codegen runtime" ;;
    compile) echo "*" ;;
    *) echo "?" ;;
    esac
}

bad=0
for f in $(find "$src" -name '*.[ch]' | sort); do
    rel=${f#"$src"/}
    room=${rel%%/*}
    ok=$(allowed "$room")
    if [ "$ok" = "?" ]; then
        echo "check_includes: $rel is in a room this script does not know ($room): add it" >&2
        bad=1
        continue
    fi
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        case $inc in */*) ;; *) continue ;; esac
        to=${inc%%/*}
        case $inc in
        backend/cpu/* | backend/cuda/*)
            owner=${inc%/*}
            case $rel in
            "$owner"/*) ;;
            *)
                echo "check_includes: $rel includes \"$inc\": only src/$owner/ may reach that backend's internals; go through backend_impl.h" >&2
                bad=1 ;;
            esac
            continue ;;
        esac
        [ "$to" = "$room" ] && continue
        [ "$ok" = "*" ] && continue
        case " $ok " in *" $to "*) continue ;; esac
        echo "check_includes: $rel includes \"$inc\": $room/ may include only ${ok:-nothing} besides itself" >&2
        bad=1
    done
done
[ $bad = 0 ] && echo "check_includes: every include of $src follows the layering"
exit $bad
