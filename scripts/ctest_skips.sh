#!/bin/sh
# ctest_skips.sh BUILD — says why tests were skipped, wholly or in part, in the last ctest
# run of BUILD. ctest names a skipped test under "The following tests did not run" but
# shows its output only with -V, so the reason the test printed was lost. kiln's tests say
# why in a line of their own (tests/test.h, test_skip and test_skip_case): "SKIP: why" and
# exit 77 when the whole test is skipped, "SKIP <case>: why" when one case is and the rest
# ran. This prints those lines from the run's log, at most 3 per test. ctest runs it after every run
# (CTEST_CUSTOM_POST_TEST in BUILD/CTestCustom.cmake, written by CMakeLists.txt), so `make
# test` and a plain `ctest` both show them. Always exits 0: it only reports.
#
# At that point ctest is still writing the run's log under a temporary name
# (LastTest.log.tmp) and LastTest.log is the previous run's, renamed over once ctest ends:
# the newest LastTest.log* is this run's either way.
log=$(ls -t "${1:-.}"/Testing/Temporary/LastTest.log* 2>/dev/null | head -n 1)
[ -n "$log" ] && [ -f "$log" ] || exit 0
awk '
    /^[0-9]+\/[0-9]+ Test: / { name = $3; n = 0; next }
    /^Output:$/ { getline; out = 1; next }          # getline: the dashes under "Output:"
    /^<end of output>$/ { out = 0; next }
    out && /^SKIP[ :]/ && n < 3 {
        n++
        if (!shown++) print "Why tests were skipped (their own words):"
        print "  " name ": " $0
    }
' "$log"
exit 0
