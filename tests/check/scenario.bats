#!/usr/bin/env bats
# The scenario interface's given helpers (harness/lib/scenarios/idle.sh), on
# their own with run_one.sh's log and obs stubbed (no root, no namespace;
# make check).

load ../helpers
load_bats_libs

# summary MON ARGS...: scenario_summary MON $d/s.json ARGS... in a bash with
# idle.sh sourced; prints the observed scenario status and the note
summary() {
    run bash -c 'C1M_ROOT=$1 PYTHON=$2; shift 2
        source "$C1M_ROOT/harness/lib/scenarios/idle.sh"
        declare -A R=() O=(); scenario=${SCENARIO:-storm} contender=c
        log() { :; }; obs() { O[$1]=$2; }
        scenario_summary "$@"; rc=$?
        echo "rc=$rc status=${O[scenario_status]:-ok} note=${R[note]:-} keys=${!R[*]}"' - "$C1M_ROOT" "$PYTHON" "$@"
}

@test "scenario_summary: a monitor's summary that fails (samples unreadable) fails the scenario, exit status in the note" {
    # the storm's recovery counted as recovered when its summary printed
    # nothing: no failed key read back, so nothing failed
    mkdir "$BATS_TEST_TMPDIR/storm.jsonl"
    summary stormmon.py "$BATS_TEST_TMPDIR/s.json" "$BATS_TEST_TMPDIR/storm.jsonl" --t-kill 1
    assert_success
    assert_output --partial "rc=1 status=scenario-failed note=storm: stormmon.py summary exited 1 on $BATS_TEST_TMPDIR/storm.jsonl: no verdict on the phase"
    mkdir "$BATS_TEST_TMPDIR/stall.jsonl"
    SCENARIO=stall summary stallmon.py "$BATS_TEST_TMPDIR/s.json" "$BATS_TEST_TMPDIR/stall.jsonl"
    assert_output --partial "rc=1 status=scenario-failed note=stall: stallmon.py summary exited 1 on $BATS_TEST_TMPDIR/stall.jsonl"
}

@test "scenario_summary: a summary that exits 0 but prints nothing fails the scenario too" {
    # a stand-in interpreter: exit 0, no output, whatever it is asked
    printf '#!/bin/sh\nexit 0\n' > "$BATS_TEST_TMPDIR/py"; chmod +x "$BATS_TEST_TMPDIR/py"
    run bash -c 'C1M_ROOT=$1 PYTHON=$2
        source "$C1M_ROOT/harness/lib/scenarios/idle.sh"
        declare -A R=() O=(); scenario=storm contender=c
        log() { :; }; obs() { O[$1]=$2; }
        scenario_summary stormmon.py "$3/s.json"; rc=$?
        echo "rc=$rc status=${O[scenario_status]:-ok} note=${R[note]:-}"' - "$C1M_ROOT" "$BATS_TEST_TMPDIR/py" "$BATS_TEST_TMPDIR"
    assert_success
    assert_output "rc=1 status=scenario-failed note=storm: stormmon.py summary printed nothing on its samples: no verdict on the phase"
}

@test "scenario_summary: a summary that succeeds is recorded into R and leaves the status alone" {
    # samples recorded from a real 2k storm of c (tests/py/test_stormmon.py)
    summary stormmon.py "$BATS_TEST_TMPDIR/s.json" "$C1M_ROOT/tests/py/data/storm-c-now.jsonl" --t-kill 0
    assert_success
    assert_output --regexp "rc=0 status=ok note= keys=.*storm_syn_retrans"
    [ -s "$BATS_TEST_TMPDIR/s.json" ]
}
