#!/usr/bin/env bats
# The command lines of the three C programs (one parser, c_server/lib/cli.c):
# --flag=value and --flag value alike, strict numbers, the host bound, the
# resolver's own errors; a port already in use is refused (c1m-server and
# py_server). Runs in a fresh network namespace (skips without root).

load helpers
load_bats_libs

setup() {
    STATS=$BATS_TEST_TMPDIR/server.stats
    PORT=9000
}
teardown() {
    stop_pid "${OTHER_PID:-}"
    stop_test_processes
    check_sanitizer_logs
}

@test "the C programs take --flag=value as well as --flag value" {
    need_ns
    (exec ip netns exec "$TEST_NS" "$SERVER" --port="$PORT" --workers=2 --max-conns=100 \
        --stats="$STATS" --quiet) &
    SERVER_PID=$!
    run "$STAT" --wait-ready --timeout=20 "$STATS"
    assert_success
    run "$STAT" --get=workers "$STATS"
    assert_output 2
    run in_ns "$CLIENT" --connections=20 --port="$PORT" --workers=1 --hold=0 --quiet
    assert_success
    assert_output --partial "20/20 established"
    # a switch given a value, a flag missing its value
    usage_case "$SERVER" --quiet --quiet=1
    usage_case "$STAT" --json --json=yes "$STATS"
    usage_case "$STAT" --get --get
    usage_case "$SERVER" --stats --port 9 --stats
}

@test "a host that does not resolve: the resolver's own error (exit 1, both programs), not EADDRNOTAVAIL" {
    need_ns
    run in_ns "$SERVER" --host no-such-host.invalid --port "$PORT" --stats "$BATS_TEST_TMPDIR/never.stats"
    assert_failure 1
    assert_output --partial "cannot resolve --host no-such-host.invalid: "
    refute_output --partial "Cannot assign requested address"
    [ ! -e "$BATS_TEST_TMPDIR/never.stats" ]
    # c1m-client alike: a runtime failure, not a usage error (it was exit 2)
    run in_ns "$CLIENT" --connections 10 --host no-such-host.invalid --port "$PORT"
    assert_failure 1
    assert_output --partial "cannot resolve --host no-such-host.invalid: "
    refute_output --partial "usage:"
}

@test "c1m-server refuses a port already in use (exit 1), as py_server does" {
    need_ns
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2
    # a second c1m-server used to join the first through SO_REUSEPORT
    run in_ns timeout 20 "$SERVER" --port "$PORT" --workers 1 --stats "$BATS_TEST_TMPDIR/second.stats"
    assert_failure 1
    assert_output --partial "cannot listen on 0.0.0.0:$PORT: address in use"
    run in_ns env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server --loop asyncio --api protocol \
        --port "$PORT" --workers 1 --stats "$BATS_TEST_TMPDIR/third.stats"
    assert_failure 1
    assert_output --partial "cannot listen on 0.0.0.0:$PORT: address in use"
    run "$STAT" --get workers_dead "$STATS"
    assert_output 0
    stop_pid "$SERVER_PID"
    # and a plain listener without SO_REUSEPORT
    (exec ip netns exec "$TEST_NS" "$PYTHON" -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", int(__import__("sys").argv[1]))); s.listen(1)
print("listening", flush=True); time.sleep(60)' "$PORT" > "$BATS_TEST_TMPDIR/other.out") &
    OTHER_PID=$!
    wait_for 10 grep -q listening "$BATS_TEST_TMPDIR/other.out"
    run in_ns timeout 20 "$SERVER" --host 127.0.0.1 --port "$PORT" --workers 1 --stats "$BATS_TEST_TMPDIR/fourth.stats"
    assert_failure 1
    assert_output --partial "cannot listen on 127.0.0.1:$PORT: address in use"
}

# listeners_on LO HI: listening sockets in the namespace on ports LO..HI
listeners_on() { in_ns ss -Hltn "( sport >= :$1 and sport <= :$2 )" | wc -l; }
# conns_on PORT: established server-side sockets on PORT
conns_on() { in_ns ss -Htn state established "( sport = :$1 )" | wc -l; }

# range_case NAME SERVER_CMD...: 4 ports, the workers take them in turn (auto
# rounds up to a multiple of the ports: 5 needed -> 8), the client's 2,000
# connects spread over them
range_case() {
    local name=$1; shift
    start_server "$STATS" "$@" --port 9200-9203 --max-conns 2000 --worker-conns 450 --quiet
    [ "$("$STAT" --get workers "$STATS")" = 8 ] || fail "$name: $("$STAT" --get workers "$STATS") workers, expected 8"
    wait_for 10 eval '[ "$(listeners_on 9200 9203)" -ge 4 ]' || fail "$name: $(listeners_on 9200 9203) listeners"
    for p in 9200 9201 9202 9203; do
        [ "$(in_ns ss -Hltn "( sport = :$p )" | wc -l)" -ge 1 ] || fail "$name: nothing listens on $p"
    done
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 2000 --port 9200-9203 --hold inf --quiet \
        > "$BATS_TEST_TMPDIR/client.out" 2>&1) &
    CLIENT_PID=$!
    wait_for 20 stat_is "$STATS" open 2000 || fail "$name: open $("$STAT" --get open "$STATS")"
    for p in 9200 9201 9202 9203; do
        [ "$(conns_on "$p")" = 500 ] || fail "$name: $(conns_on "$p") connections on $p, expected 500"
    done
    stop_test_processes
    CLIENT_PID= SERVER_PID=
}

@test "--port 9200-9203: c1m-server, c1m-floor and py_server listen on every port; the client spreads 2,000 connects evenly" {
    need_ns
    range_case c "$SERVER"
    range_case floor "$C1M_BUILD/c1m-floor"
    range_case asyncio-protocol env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server --loop asyncio --api protocol
}
