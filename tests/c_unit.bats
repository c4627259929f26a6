#!/usr/bin/env bats
# C unit tests (tests/c/*.c, built by make into $C1M_BUILD/tests/): no network.

load helpers
load_bats_libs

setup() {
    LOOP_TEST=$C1M_BUILD/tests/loop_test
    [ -x "$LOOP_TEST" ] || fail "no $LOOP_TEST: make build"
}
teardown() {
    check_sanitizer_logs
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
