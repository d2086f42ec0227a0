#!/bin/sh
# mpi_zero.sh — sharded optimiser state (ZeRO-2) over MPI on loopback (ctest:
# test_mpi_zero): at 2 and 4 ranks the sharded run's losses and state equal the unsharded
# run's over the same ranks (test_zero mpi; its reduce-scatters and all-gathers are
# MPI_Ireduce_scatter_block and MPI_Iallgather).
# Usage: mpi_zero.sh MPIEXEC TEST_ZERO   (exit 77, a skip, when MPIEXEC is empty: no MPI)
mpiexec=$1
test_zero=$2
if [ -z "$mpiexec" ]; then
    echo "SKIP: kiln was built without MPI (install libmpich-dev mpich and reconfigure)"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fail=0
for n in 2 4; do
    out=$("$mpiexec" -np $n "$test_zero" mpi 2>&1)
    if [ $? -ne 0 ] || ! echo "$out" | grep -q "ZeRO-2 over $n MPI ranks.*losses equal"; then
        echo "mpi_zero: $n ranks failed:"; echo "$out"; fail=1
    else
        echo "$out" | grep "losses equal"
    fi
done
exit $fail
