#!/usr/bin/env bash
# run.sh - run every bats suite in tests/ (what `make test` does after building):
# TAP with timings on stdout, a copy in $C1M_BUILD/test-results.tap, then one
# closing line with the counts. Exit status: bats' (0 = every test passed).
#   C1M_BUILD=$PWD/build PYTHON=/usr/bin/python3 SANITIZE=0 bash tests/run.sh [bats args]
set -uo pipefail
cd "$(dirname "$0")/.."
: "${C1M_BUILD:?set C1M_BUILD to the build directory (make test does)}"
[ -d "$C1M_BUILD" ] || { echo "run.sh: no build directory $C1M_BUILD (make build)" >&2; exit 2; }
export C1M_BUILD PYTHON=${PYTHON:-/usr/bin/python3} SANITIZE=${SANITIZE:-0}
label="${C1M_BUILD##*/}, SANITIZE=$SANITIZE"
tap=$C1M_BUILD/test-results.tap
start=$SECONDS

bats --timing "${@:-tests/}" | tee "$tap"
rc=${PIPESTATUS[0]}

planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$tap" | head -n 1)
total=$(grep -cE '^(not )?ok ' "$tap")
failed=$(grep -c '^not ok ' "$tap")
skipped=$(grep -cE '^ok .* # skip' "$tap")
summary="$total tests, $failed failures, $skipped skipped in $((SECONDS - start)) s"
# The last line is the plain count CI reads: "tests: N passed, N failed, N skipped".
count_line="tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$total" = "${planned:-x}" ]; then
    echo "make test ($label): PASSED: $summary"
    echo "$count_line"
    exit 0
fi
[ "$total" = "${planned:-x}" ] || summary+=" (bats planned ${planned:-?}: the run stopped early)"
echo "make test ($label): FAILED: $summary; bats exit status $rc; TAP in $tap"
echo "$count_line"
[ "$rc" != 0 ] || rc=1
exit "$rc"
