#!/usr/bin/env bats
# A kill -9 of run_one.sh during SCENARIO=storm: bench.sh removes what it
# left, the restarted server too (it is in the run's state as server-restart),
# the namespace and the counters file; the row says harness-error.
# Serial (tests/run.sh): until bench.sh removes them, the killed run's namespace
# and counters file are a dead pid's, and any bench.sh started meanwhile by a
# file beside it would sweep them (lib/orphans.sh orphans_scan), or find a
# namespace it must not leave (tests/profiles.bats no_run_namespace).

# bats file_tags=serial

load helpers
load_bats_libs

@test "kill -9 of run_one.sh during the storm: bench.sh removes the restarted server, the namespace and the counters file" {
    need_root
    out=$BATS_TEST_TMPDIR/kill9
    start_storm "$out"
    kill -KILL "$RUN_PID"
    rc=0; wait "$BENCH_PID" || rc=$?
    pgid=$BENCH_PID BENCH_PID=
    [ "$rc" = 1 ] || fail "bench.sh exited $rc: $(cat "$out.log")"
    nothing_left "$out" "$pgid" "$RUN_PID"
    grep -q "harness-error" "$out/runs.csv"
}
