#!/usr/bin/env bats
# c1m-calib, the calibration bench.sh runs once per suite (meta.json
# `calibration`): usage, one small run's JSON, the fd limit, nothing left
# behind. Runs in a fresh network namespace (skips without root).
# Not serial (the parallel group): its one run at 1,000 connections judges no
# figure (only that each round's median lies within its min-max, above 0),
# no time, latency or machine-wide memory, and no test runs the harness.

bats_require_minimum_version 1.5.0
load helpers
load_bats_libs

CALIB=$C1M_BUILD/c1m-calib

setup() { need_ns; }

@test "c1m-calib: bad flags exit 2 naming the flag; --help on stdout, exit 0" {
    local bad
    for bad in "--conns 99" "--conns 16001" "--rounds 0" "--rounds 21" "--syscalls 10" \
               "--timeout 0" "--conns x" "--bogus" "extra"; do
        # shellcheck disable=SC2086  # the flag and its value as two words
        run "$CALIB" $bad
        assert_failure 2
        assert_output --partial "${bad%% *}"
        assert_output --partial "usage: c1m-calib"
    done
    run --separate-stderr "$CALIB" --help
    assert_success
    assert_output --partial "usage: c1m-calib"
    [ -z "$stderr" ]
}

@test "c1m-calib: a small run prints its rounds' median and min-max, leaves no socket or process" {
    run --separate-stderr in_ns "$CALIB" --conns 1000 --rounds 3 --syscalls 10000
    assert_success
    "$PYTHON" - "$output" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert (r["conns"], r["rounds"], r["syscalls"]) == (1000, 3, 10000), r
for k in ("accept_cpu_us", "syscall_ns"):
    assert 0 < r[k]["min"] <= r[k]["median"] <= r[k]["max"], (k, r)
assert r["wall_s"] >= 0
PY
    [ "$(in_ns ss -tanH | wc -l)" = 0 ] || fail "sockets left: $(in_ns ss -tanH | head -3)"
    # (this file's namespace only: another file's c1m-calib may run beside it)
    [ -z "$(ip netns pids "$TEST_NS")" ] || fail "left running: $(ip netns pids "$TEST_NS" | xargs -r ps -o pid=,args= -p)"
}

@test "c1m-calib: an fd limit under --conns is a clear error, exit 1" {
    run bash -c 'ulimit -n 600 && exec "$1" --conns 1000 --rounds 1' _ "$CALIB"
    assert_failure 1
    assert_output --partial "the fd limit (600) is under --conns 1000"
}
