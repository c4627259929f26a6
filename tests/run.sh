#!/usr/bin/env bash
# run.sh - the one test runner (tests/README.md: the tiers and the tags):
#   bash tests/run.sh check     make check: C unit tests and command lines
#                               (tests/check/*.bats), the pure Python suites
#                               (unittest discover -s tests/py); no root, no namespace
#   bash tests/run.sh test      make test: the check tier, then tests/*.bats: the files
#                               without `# bats file_tags=serial` JOBS at a time, then
#                               the serial ones alone; tests tagged long are skipped
#   bash tests/run.sh long      make test-long: the tests tagged `# bats test_tags=long`
#   bash tests/run.sh FILE.bats... [bats args]   those files only
# Environment: C1M_BUILD (required), PYTHON, SANITIZE (1: the pure Python suites and the
# files tagged `harness` are left out), JOBS (default 2; 1 = no GNU parallel needed).
# TAP with timings on stdout, a copy in $C1M_BUILD/test-results.tap (the Python
# suites' output in test-results-py.log), then the time of each bats file,
# slowest first, and one closing line with the counts.
# Exit status: 0 when every test passed.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${C1M_BUILD:?set C1M_BUILD to the build directory (make test does)}"
[ -d "$C1M_BUILD" ] || { echo "run.sh: no build directory $C1M_BUILD (make build)" >&2; exit 2; }
export C1M_BUILD PYTHON=${PYTHON:-/usr/bin/python3} SANITIZE=${SANITIZE:-0}
JOBS=${JOBS:-2}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: JOBS must be a positive whole number, not '$JOBS'" >&2; exit 2; }
tier=files
case "${1:-}" in
    check|test|long) tier=$1; shift ;;
    "") tier=test ;;
esac
export C1M_TIER=$tier
label="${C1M_BUILD##*/}, SANITIZE=$SANITIZE"
name="make $tier"; [ "$tier" != files ] || name=run.sh
command -v bats >/dev/null || { echo "run.sh: bats not found (harness/install-deps.sh test, as root)" >&2; exit 2; }
tap=$C1M_BUILD/test-results.tap
pylog=$C1M_BUILD/test-results-py.log
times=$C1M_BUILD/test-times.txt
: > "$tap"; : > "$times"; rm -f "$pylog"
start=$SECONDS
rc=0

# tagged TAG FILE: FILE carries `# bats file_tags=` with TAG (bats 1.8 has no
# --filter-tags: the comments are read here, as bats >= 1.10 would read them)
tagged() { grep -qE "^# bats file_tags=(.*,)?$1(,.*)?\$" "$2"; }

# file_counts ARGS...: "FILE TESTS" for each file bats ARGS runs, in the order
# it numbers their tests (a directory: its *.bats; --filter applies)
file_counts() {
    local filter=() files=() f
    while [ $# -gt 0 ]; do
        case "$1" in
            -f|--filter) filter=(--filter "$2"); shift ;;
            -j|--jobs) shift ;;
            -*) ;;
            *) if [ -d "$1" ]; then files+=("${1%/}"/*.bats); else files+=("$1"); fi ;;
        esac
        shift
    done
    for f in "${files[@]}"; do echo "$f $(bats --count "${filter[@]}" "$f")"; done
}

# bats_run ARGS...: bats with timings, TAP appended to $tap; each file's time
# appended to $times as "MS FILE TESTS KIND": KIND wall (the file ran alone:
# bats' elapsed time, its setup_file included) or tests (several files at
# once: the sum of its tests' TAP timings)
bats_run() {
    local from t0 counts
    from=$(wc -l < "$tap") t0=$EPOCHREALTIME counts=$(file_counts "$@")
    echo "# bats $*" | tee -a "$tap"
    bats --timing "$@" | tee -a "$tap"
    local r=${PIPESTATUS[0]}
    [ "$r" = 0 ] || rc=$r
    tail -n +"$((from + 2))" "$tap" | awk -v counts="$counts" \
        -v wall="$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))" '
        BEGIN { n = split(counts, l, "\n")
                for (i = 1; i <= n; i++) { split(l[i], w, " "); f[i] = w[1]; c[i] = w[2]; last[i] = (i > 1 ? last[i-1] : 0) + w[2] } }
        /^(not )?ok [0-9]+ / { k = ($1 == "not") ? $3 : $2
                               for (i = 1; i <= n && k > last[i]; i++) ;
                               if (match($0, / in [0-9]+ms$/)) ms[i] += substr($0, RSTART + 4, RLENGTH - 6) }
        END { for (i = 1; i <= n; i++) print (n == 1 ? wall : ms[i] + 0), f[i], c[i], (n == 1 ? "wall" : "tests") }' >> "$times"
}

# times_table: $times as a table, slowest first (TAP comments)
times_table() {
    [ -s "$times" ] || return 0
    echo "# time per bats file, slowest first (wall: bats on that file alone, setup_file included; tests: run in one bats with other files, the sum of its tests' timings)"
    sort -k1,1nr "$times" | awk '{ printf "#   %8.1f s  %-5s  %3d tests  %s\n", $1 / 1000, $4, $3, $2 }'
}

# The pure Python suites, under unittest itself (not bats): counted from its summary.
py_pass=0 py_fail=0 py_skip=0
py_suites() {
    local out ran failures errors skipped
    echo "# $PYTHON -m unittest discover -s tests/py (log: $pylog)"
    "$PYTHON" -m unittest discover -s tests/py > "$pylog" 2>&1 || rc=1
    out=$(tail -n 3 "$pylog")
    ran=$(sed -n 's/^Ran \([0-9]*\) tests\{0,1\} in .*/\1/p' "$pylog" | tail -n 1)
    failures=$(echo "$out" | sed -n 's/.*failures=\([0-9]*\).*/\1/p')
    errors=$(echo "$out" | sed -n 's/.*errors=\([0-9]*\).*/\1/p')
    skipped=$(echo "$out" | sed -n 's/.*skipped=\([0-9]*\).*/\1/p')
    if [ -z "$ran" ] || [ "$ran" = 0 ]; then
        cat "$pylog"; echo "# unittest ran no test"; py_fail=1; rc=1; return
    fi
    py_fail=$((${failures:-0} + ${errors:-0})) py_skip=${skipped:-0}
    py_pass=$((ran - py_fail - py_skip))
    [ "$py_fail" = 0 ] || { grep -A 30 -E '^(FAIL|ERROR):' "$pylog" | head -n 200; rc=1; }
    echo "# unittest: $ran tests, $py_fail failed, $py_skip skipped"
}

check_tier() {
    [ "$SANITIZE" = 1 ] || py_suites
    bats_run tests/check/
}

case "$tier" in
    files) bats_run "$@" ;;
    check) check_tier ;;
    long)
        # each test after a `# bats test_tags=...long...` line, by its exact name
        mapfile -t long_files < <(grep -lE '^# bats test_tags=(.*,)?long(,.*)?$' tests/*.bats)
        if [ ${#long_files[@]} -gt 0 ]; then
            filter=$(for f in "${long_files[@]}"; do
                grep -A1 -E '^# bats test_tags=(.*,)?long(,.*)?$' "$f" | sed -n 's/^@test "\(.*\)" {$/\1/p'
            done | sed 's/[][\.*^$()+?{}|]/\\&/g' | paste -sd '|')
            bats_run --filter "^($filter)\$" "${long_files[@]}"
        fi
        ;;
    test)
        check_tier
        par=() ser=()
        for f in tests/*.bats; do
            [ "$SANITIZE" = 1 ] && tagged harness "$f" && { echo "# SANITIZE=1: $f left out (file_tags=harness)"; continue; }
            if tagged serial "$f"; then ser+=("$f"); else par+=("$f"); fi
        done
        # the largest file first (size: a stand-in for its time on a fresh clone):
        # GNU parallel starts the files in this order, and the long ones starting
        # first keep the lanes even at the end (in name order remote.bats, the
        # longest, would start among the last)
        mapfile -t par < <(for f in "${par[@]}"; do echo "$(stat -c %s "$f") $f"; done | sort -k1,1nr -k2,2 | cut -d' ' -f2-)
        if [ "$JOBS" -gt 1 ] && [ ${#par[@]} -gt 1 ]; then
            command -v parallel >/dev/null || { echo "run.sh: JOBS=$JOBS needs GNU parallel (harness/install-deps.sh test), or JOBS=1" >&2; exit 2; }
            bats_run --jobs "$JOBS" --no-parallelize-within-files "${par[@]}"
        elif [ ${#par[@]} -gt 0 ]; then
            bats_run "${par[@]}"
        fi
        # the serial files one bats each: each one's wall time, its setup_file included
        for f in "${ser[@]}"; do bats_run "$f"; done
        ;;
esac

planned=$(awk -F. '/^1\.\.[0-9]+$/ {n += $3; seen = 1} END {if (seen) print n}' "$tap")
total=$(grep -cE '^(not )?ok ' "$tap")
failed=$(grep -c '^not ok ' "$tap")
skipped=$(grep -cE '^ok .* # skip' "$tap")
passed=$((total - failed - skipped + py_pass))
failed=$((failed + py_fail)) skipped=$((skipped + py_skip))
times_table
summary="$((passed + failed + skipped)) tests ($passed passed, $failed failed, $skipped skipped) in $((SECONDS - start)) s"
# The last line is the plain count CI reads: "tests: N passed, N failed, N skipped".
count_line="tests: $passed passed, $failed failed, $skipped skipped"
if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$total" = "${planned:-x}" ]; then
    echo "$name ($label): PASSED: $summary"
    echo "$count_line"
    exit 0
fi
[ "$total" = "${planned:-x}" ] || summary+=" (bats planned ${planned:-?}, ran $total: a run stopped early)"
echo "$name ($label): FAILED: $summary; TAP in $tap"
echo "$count_line"
[ "$rc" != 0 ] || rc=1
exit "$rc"
