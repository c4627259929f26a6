#!/usr/bin/env bats
# The Python unittest suites that need a namespace, in tests/py_netns (protocol
# parity on every available loop, the c1m extension's API, py_server's command
# line) and the extension smoke test, against the extension in $C1M_BUILD/pyext.
# The pure suites (tests/py) run under unittest itself in make check.
# Under SANITIZE=1 that extension is an ASan/UBSan build: everything runs with
# libasan preloaded into the (uninstrumented) interpreter, without
# LeakSanitizer (CPython itself does not free everything at exit; the
# extension's own leaks are test_pyext_api's TestLeaks).
# The suites use 127.0.0.1 ports 9200-9399: they run in a fresh network
# namespace (skips without root).

# bats file_tags=serial
load helpers
load_bats_libs

setup_file() {
    ns_setup
}
teardown_file() {
    ns_teardown
}

setup() {
    [ "$(id -u)" = 0 ] && [ -n "${TEST_NS:-}" ] || skip "needs root (network namespace)"
    compgen -G "$C1M_BUILD/pyext/c1m*.so" >/dev/null || fail "no c1m extension in $C1M_BUILD/pyext (make pyext)"
    cd "$C1M_ROOT"
    PYENV=(
        PYTHONPATH="$C1M_ROOT:$C1M_BUILD/pyext${PYTHONPATH:+:$PYTHONPATH}"
        C1M_PYTHON="$PYTHON"
        C1M_PYEXT_PATH="$C1M_BUILD/pyext"
        C1M_REQUIRE_PYEXT=1
        C1M_STAT="$STAT"
        C1M_SERVER="$SERVER"
    )
    if [ "${SANITIZE:-0}" = 1 ]; then
        PYENV+=(LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="detect_leaks=0:exitcode=99$SAN_LOG")
    fi
}

# py ARGS...: $PYTHON in the test namespace with the environment above.
py() { in_ns env "${PYENV[@]}" "$PYTHON" "$@"; }

teardown() {
    check_sanitizer_logs
}

@test "unittest: protocol parity on every contender (c, asyncio, uvloop, c1m)" {
    loops=c,asyncio,c1m   # c1m-server and c1m are built by make test: they must not be skipped
    if "$PYTHON" -c 'import uvloop' 2>/dev/null; then
        loops+=,uvloop
    else
        echo "# uvloop is not importable by $PYTHON: its cases are skipped" >&3
    fi
    PYENV+=(C1M_TEST_LOOP="$loops")
    run py -m unittest tests.py_netns.test_protocol_parity
    assert_success
    assert_line --regexp '^OK'
}

@test "unittest: server push parity on every contender (tests/py_netns/test_push_parity.py)" {
    loops=c,asyncio,c1m   # as the protocol parity test: built by make test, never skipped
    if "$PYTHON" -c 'import uvloop' 2>/dev/null; then
        loops+=,uvloop
    else
        echo "# uvloop is not importable by $PYTHON: its cases are skipped" >&3
    fi
    PYENV+=(C1M_TEST_LOOP="$loops")
    run py -m unittest tests.py_netns.test_push_parity
    assert_success
    assert_line --regexp '^OK'
}

@test "unittest: c1m extension API (tests/py_netns/test_pyext_api.py)" {
    run py -m unittest tests.py_netns.test_pyext_api
    assert_success
    assert_line --regexp '^OK'
}

@test "unittest: py_server command line, workers and counters file (tests/py_netns/test_py_server_cli.py)" {
    run py -m unittest tests.py_netns.test_py_server_cli
    assert_success
    assert_line --regexp '^OK'
}

@test "c1m extension smoke test (tests/py_netns/pyext_smoke.py)" {
    run py tests/py_netns/pyext_smoke.py
    assert_success
    assert_output --partial "pyext smoke: OK"
    if [ "${SANITIZE:-0}" = 1 ]; then
        refute_output --partial "AddressSanitizer"
        refute_output --partial "runtime error"
    fi
}
