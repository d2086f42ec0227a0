#!/bin/sh
# mpi_dp.sh — data-parallel training over MPI on loopback (ctest: test_mpi_dp): 2 and 4
# ranks give the parameters of one process on the combined batch (test_dp mpi); 2 ranks
# give bitwise the same parameters with the all-reduces overlapped and not
# (test_dp mpi-overlap); a rank
# that stalls ends the others with kiln's timeout error within the timeout (2 s here), and
# a rank that dies ends the job rather than hanging it.
# Usage: mpi_dp.sh MPIEXEC TEST_DP   (exit 77, a skip, when MPIEXEC is empty: no MPI)
mpiexec=$1
test_dp=$2
if [ -z "$mpiexec" ]; then
    echo "SKIP: kiln was built without MPI (install libmpich-dev mpich and reconfigure)"
    exit 77
fi
# Open MPI refuses root unless told; MPICH ignores these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# In the ASan build, LeakSanitizer's exit-time tracer crashes (signal 11) now and then in
# processes that MPICH's UCX layer has threads in; leaks are checked in-process instead
# (test_dp, test_comm), which run everything but src/comm/mpi.c.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fail=0
for n in 2 4; do
    out=$("$mpiexec" -np $n "$test_dp" mpi 2>&1)
    if [ $? -ne 0 ] || ! echo "$out" | grep -q "test_dp: $n MPI ranks"; then
        echo "mpi_dp: $n ranks failed:"; echo "$out"; fail=1
    else
        echo "$out" | grep "parameters after"
    fi
done
out=$("$mpiexec" -np 2 "$test_dp" mpi-overlap 2>&1)
if [ $? -ne 0 ] || ! echo "$out" | grep -q "bitwise the same with and without overlap"; then
    echo "mpi_dp: overlapped and blocking all-reduces over 2 ranks:"; echo "$out"; fail=1
else
    echo "$out" | grep "bitwise the same"
fi
# The ranks that time out write their error to a file each before aborting the job:
# MPI_Abort can end the job before mpiexec has forwarded their output (seen in CI).
dir=$(mktemp -d)
start=$(date +%s)
out=$(timeout 60 "$mpiexec" -np 3 "$test_dp" mpi-stall stop "$dir" 2>&1)
took=$(( $(date +%s) - start ))
out="$out
$(cat "$dir"/rank* 2>/dev/null)"
rm -rf "$dir"
if ! echo "$out" | grep -q "KILN_STATUS_TIMEOUT: collective #4.*not finished after 2 s"; then
    echo "mpi_dp: a stalled rank did not give the timeout error:"; echo "$out"; fail=1
elif [ $took -gt 30 ]; then
    echo "mpi_dp: the stalled job took $took s to end"; fail=1
else
    echo "$out" | grep "KILN_STATUS_TIMEOUT" | head -1
fi
start=$(date +%s)
out=$(timeout 60 "$mpiexec" -np 3 "$test_dp" mpi-stall kill 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $took -gt 30 ]; then
    echo "mpi_dp: a killed rank: exit $rc after $took s (want a failure, well before 60 s)"
    echo "$out"; fail=1
else
    echo "mpi_dp: a killed rank ended the job in $took s (exit $rc)"
fi
exit $fail
