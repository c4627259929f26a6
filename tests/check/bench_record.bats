#!/usr/bin/env bats
# harness/bench.sh's record(), the one step that turns a row bench.sh writes
# itself (--kind) into RES[status], taken out of bench.sh and run under set -u
# as bench.sh runs it (no root, no namespace; make check).

load ../helpers
load_bats_libs

# rec PYTHON ARGS...: record() with results.py replaced by PYTHON; prints
# RES[status] and the harness error count, or dies as bench.sh would
rec() {
    run bash -c 'set -u; eval "$(sed -n "/^record() {/,/^}/p" "$1/harness/bench.sh")"
        say() { echo "say: $*"; }
        PYTHON=$2 RESULTS_PY=x OUT=$3 HARNESS_ERRORS=0; declare -A RES=()
        shift 3; record "$@"
        echo "status=${RES[status]} errors=$HARNESS_ERRORS"' - "$C1M_ROOT" "$@"
}

@test "bench.sh record: a row it writes itself whose results.py printed nothing is a harness error with no status" {
    # results.py failed to start: the row's status was left unset (bench.sh stopped
    # on 'RES[status]: unbound variable') or stale (unavailable from its result.json:
    # the contender skipped at the later tiers)
    rec /bin/false "$BATS_TEST_TMPDIR" id1 "$BATS_TEST_TMPDIR/none" k=v --kind driver-failed note=x
    assert_success
    assert_line "say: error: cannot append to $BATS_TEST_TMPDIR/runs.csv"
    assert_line "status= errors=1"
    refute_output --partial "unbound variable"
}

@test "bench.sh record: the status results.py prints is the row's" {
    local py=$BATS_TEST_TMPDIR/py
    printf '#!/bin/sh\necho unsupported\n' > "$py"; chmod +x "$py"
    rec "$py" "$BATS_TEST_TMPDIR" id1 "$BATS_TEST_TMPDIR/none" --kind unsupported k=v
    assert_success
    assert_line "status=unsupported errors=0"
}
