#!/usr/bin/env bats
# The Python unittest suites that need a namespace, in tests/py_netns (protocol
# and push parity: make test on c, asyncio and c1m, make test-long on every
# available loop; the c1m extension's API, py_server's command line) and the
# extension smoke test, against the extension in $C1M_BUILD/pyext.
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

setup() {
    need_ns
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

# parity_loops: the loops the parity suites must run, in LOOPS (c1m-server and
# c1m are built by make test: never skipped; uvloop when importable).
parity_loops() {
    LOOPS=c,asyncio,c1m
    if "$PYTHON" -c 'import uvloop' 2>/dev/null; then
        LOOPS+=,uvloop
    else
        echo "# uvloop is not importable by $PYTHON: its cases are skipped" >&3
    fi
}

# make test runs the parity suites on the contenders whose code differs: c1m-server (C),
# asyncio with both APIs (protocol, streams: py_server's two shapes, shared by uvloop)
# and pyext (the extension's loop and transport); uvloop runs the same Python code on
# another loop: make test-long adds it (the every-contender runs below).
@test "unittest: protocol parity on c, asyncio (protocol, streams) and c1m" {
    PYENV+=(C1M_TEST_LOOP=c,asyncio,c1m)
    run py -m unittest tests.py_netns.test_protocol_parity
    assert_success
    assert_line --regexp '^OK'
}

# bats test_tags=long
@test "unittest: protocol parity on every contender (c, asyncio, uvloop, c1m)" {
    long_test
    parity_loops
    PYENV+=(C1M_TEST_LOOP="$LOOPS")
    run py -m unittest tests.py_netns.test_protocol_parity
    assert_success
    assert_line --regexp '^OK'
}

# The push cases on one contender of each push implementation: c1m-server's (a count
# per connection formatted at send()), py_server's (asyncio-protocol: py_server/push.py;
# streams and uvloop share it) and pyext's transport (MSG_EOR); every contender in
# make test-long.
@test "unittest: server push parity on c, asyncio-protocol and c1m (tests/py_netns/test_push_parity.py)" {
    PYENV+=(C1M_TEST_LOOP=c,asyncio,c1m)
    run py -m unittest tests.py_netns.test_push_parity.Push_c \
        tests.py_netns.test_push_parity.Push_asyncio_protocol tests.py_netns.test_push_parity.Push_c1m_protocol
    assert_success
    assert_line --regexp '^OK'
    refute_line --regexp 'skipped'
}

# bats test_tags=long
@test "unittest: server push parity on every contender (tests/py_netns/test_push_parity.py)" {
    long_test
    parity_loops
    PYENV+=(C1M_TEST_LOOP="$LOOPS")
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
