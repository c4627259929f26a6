#!/usr/bin/env bats
# C unit tests (tests/c/*.c, built by make into $C1M_BUILD/tests/): no network, no root
# (make check). tests/c/no_io_uring.c is a wrapper, used by tests/contenders_new.bats.

load ../helpers
load_bats_libs

setup() {
    LOOP_TEST=$C1M_BUILD/tests/loop_test
    [ -x "$LOOP_TEST" ] || fail "no $LOOP_TEST: make build"
}

@test "loop: an fd closed by a callback gets none of its events still pending in the batch" {
    run "$LOOP_TEST" closed-in-batch
    assert_success
}

@test "loop: a new fd that reuses a number closed in the batch gets none of the old fd's events" {
    run "$LOOP_TEST" reused-in-batch
    assert_success
}

@test "loop: a callback that registers 200 handlers (the table moves) mid-batch; the batch goes on" {
    run "$LOOP_TEST" handlers-grow
    assert_success
}

@test "loop: assert() is on in the SANITIZE=1 build and off (-DNDEBUG) in the normal one" {
    run "$LOOP_TEST" asserts
    assert_success
    if [ "${SANITIZE:-0}" = 1 ]; then assert_output "asserts on"; else assert_output "asserts off"; fi
}

@test "slowcut: held over --max-pending, released within it, slow only after the grace without a shrink (tests/c/slowcut_test.c)" {
    run "$C1M_BUILD/tests/slowcut_test"
    assert_success
    assert_output "slowcut: ok"
}

# (from tests/client.bats)
@test "--min-available guards MemAvailable less SReclaimable (tests/c/sysinfo_test.c: the OOM moment at 1M reads 0)" {
    run "$C1M_BUILD/tests/sysinfo_test"
    assert_success
    assert_output "sysinfo: ok"
}

# (from tests/push_server.bats)
@test "pushmsg: exact size and layout, the largest SEQ that fits, no stale digit after a longer head (tests/c/pushmsg_test.c)" {
    run "$C1M_BUILD/tests/pushmsg_test"
    assert_success
    assert_output "pushmsg: ok"
}

# (from tests/push_stall.bats)
@test "push_rx: lines split at any byte, gaps, bad lines, the latency clock, the window, a reset" {
    local t=$C1M_BUILD/tests/push_rx_test c
    [ -x "$t" ] || fail "no $t: make build"
    for c in split-anywhere latency window reset-and-range; do
        run "$t" "$c"
        assert_success
    done
    run "$t" no-such-case
    assert_failure 2
}

# (from tests/storm.bats)
@test "reconnect queue and backoff (C unit): delays within [0, min(cap, base * 2^attempt)] covering it uniformly; due order; capacity" {
    local t=$C1M_BUILD/tests/reconnect_test
    [ -x "$t" ] || fail "no $t: make build"
    for c in backoff-bounds queue-order policy-names; do
        run "$t" "$c"
        assert_success
    done
}
