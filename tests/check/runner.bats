#!/usr/bin/env bats
# tests/run.sh itself on two tiny bats files (no root, no namespace; make check):
# the time table it prints at the end, and the count line CI reads last.

load ../helpers
load_bats_libs

# runner ARGS...: tests/run.sh ARGS against a build directory of its own
runner() {
    mkdir -p "$BATS_TEST_TMPDIR/build"
    run env C1M_BUILD="$BATS_TEST_TMPDIR/build" JOBS=1 bash "$C1M_ROOT/tests/run.sh" "$@"
}

@test "run.sh: each bats file's time and test count, slowest first; the count line last" {
    local d=$BATS_TEST_TMPDIR
    printf '@test "a" { :; }\n@test "b" { :; }\n' > "$d/two.bats"
    printf '@test "c" { skip "not here"; }\n' > "$d/one.bats"
    runner "$d/one.bats" "$d/two.bats"
    assert_success
    assert_equal "${lines[-1]}" "tests: 2 passed, 0 failed, 1 skipped"
    rows=$(printf '%s\n' "${lines[@]}" | grep -E '^# +[0-9]+\.[0-9] s  ')
    echo "$rows" >&2
    [ "$(echo "$rows" | wc -l)" = 2 ]
    echo "$rows" | grep -qE " tests +2 tests  $d/two\.bats\$"
    echo "$rows" | grep -qE " tests +1 tests  $d/one\.bats\$"
    echo "$rows" | sort -s -k2,2nr -c   # slowest first
    # one file alone: bats' own elapsed time (its setup_file counted)
    runner "$d/two.bats"
    assert_success
    assert_equal "${lines[-1]}" "tests: 2 passed, 0 failed, 0 skipped"
    printf '%s\n' "${lines[@]}" | grep -qE "^# +[0-9]+\.[0-9] s  wall +2 tests  $d/two\.bats\$"
}
