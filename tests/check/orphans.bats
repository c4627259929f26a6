#!/usr/bin/env bats
# harness/lib/orphans.sh's sweep on state directories made by hand (no root,
# no namespace; make check): what a concurrent run that is still being set up
# looks like, and what an orphan looks like.

load ../helpers
load_bats_libs

# sweep: orphans_scan's per-directory step on $1, under set -u as bench.sh runs
# it; prints the return code and what it removed
sweep() {
    run bash -c 'set -u; C1M_ROOT=$1; source "$1/harness/lib/common.sh"; source "$1/harness/lib/netns.sh"; source "$1/harness/lib/orphans.sh"
        orphans_clean_run "$2"; rc=$?
        echo "rc=$rc"; printf "%s\n" "${ORPHAN_REPORT[@]}"' - "$C1M_ROOT" "$1"
}

setup() {
    export C1M_STATE_ROOT=$BATS_TEST_TMPDIR/state
    mkdir -p "$C1M_STATE_ROOT"
    sleep 60 &
    LIVE=$!
}
teardown() { stop_pid "$LIVE"; }

@test "orphans: a live run's directory without its owner or parent file yet is a concurrent run, left alone" {
    local d=$C1M_STATE_ROOT/run-$LIVE start
    mkdir "$d"
    sweep "$d"                                   # just made: no file yet
    assert_output --partial "rc=2"
    refute_output --partial "unbound variable"
    assert [ -d "$d" ]
    start=$(awk '{print $22}' "/proc/$LIVE/stat")
    echo "$LIVE $start" > "$d/owner"             # the owner, its parent not yet
    sweep "$d"
    assert_output --partial "rc=2"
    refute_output --partial "unbound variable"
    assert [ -d "$d" ]
}

@test "orphans: a dead run's directory, with or without its owner file, is removed" {
    local d
    stop_pid "$LIVE"
    d=$C1M_STATE_ROOT/run-$LIVE
    mkdir "$d"
    sweep "$d"
    assert_output --partial "rc=0"
    assert [ ! -e "$d" ]
    mkdir "$d"
    echo "$LIVE 12345" > "$d/owner"
    sweep "$d"
    assert_output --partial "rc=0"
    refute_output --partial "unbound variable"
    assert [ ! -e "$d" ]
}
