#!/usr/bin/env bats
# py_server: each Python contender holds 2,000 connections over >= 3 workers,
# answers heartbeats, its counters agree with the client and with the
# namespace's sockstat, and SIGTERM ends it cleanly.
# Runs in a fresh network namespace (skips without root).

load helpers
load_bats_libs

setup() {
    need_ns
    STATS=$BATS_TEST_TMPDIR/server.stats
    JSON=$BATS_TEST_TMPDIR/client.json
    PORT=9000
    export PYTHONPATH=$C1M_ROOT:$C1M_BUILD/pyext${PYTHONPATH:+:$PYTHONPATH}
}

# serves_2000 LOOP API [ENV=VALUE...]: the whole scenario for one contender.
serves_2000() {
    local loop=$1 api=$2; shift 2
    start_server "$STATS" env "$@" "$PYTHON" -m py_server --loop "$loop" --api "$api" \
        --port "$PORT" --max-conns 2000 --worker-conns 600
    workers=$("$STAT" --get workers "$STATS")
    [ "$workers" -ge 3 ]
    pids=$(worker_pids "$STATS")
    [ "$(echo "$pids" | wc -w)" -eq "$workers" ]

    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 2000 --port "$PORT" --worker-conns 1000 \
        --heartbeat 1 --hold 3 --quiet --json "$JSON" > "$BATS_TEST_TMPDIR/client.out" 2>&1) &
    CLIENT_PID=$!
    wait_for 20 stat_is "$STATS" open 2000
    # during the hold: both ends of 2000 connections plus one listener per worker
    expect_tcp_inuse $((4000 + workers))
    # no worker over its cap, and at least 3 took connections
    per=$("$STAT" "$STATS" | sed -n 's/^worker=.* open=\([0-9]*\) .*/\1/p')
    busy=0
    for n in $per; do [ "$n" -le 600 ]; [ "$n" -gt 0 ] && busy=$((busy + 1)); done
    [ "$busy" -ge 3 ]

    rc=0; wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    cat "$BATS_TEST_TMPDIR/client.out" >&2
    [ "$rc" = 0 ]
    read -r est failed sent pongs lost < <(json "$JSON" \
        'j["established"], j["failed"], j["heartbeat"]["sent"], j["heartbeat"]["pongs"], j["heartbeat"]["lost"]')
    [ "$est" -eq 2000 ]
    [ "$failed" -eq 0 ]
    [ "$lost" -eq 0 ]
    [ "$sent" -ge 4000 ]                 # at least two rounds in 3 s
    [ "$pongs" -ge $((sent - 2000)) ]    # the last round may still be in flight at the end

    # the client closed everything: the server saw it all
    wait_for 10 stat_is "$STATS" open 0
    "$STAT" "$STATS" >&2
    [ "$("$STAT" --get accepted "$STATS")" -eq 2000 ]
    [ "$("$STAT" --get closed "$STATS")" -eq 2000 ]
    server_pongs=$("$STAT" --get pongs "$STATS")
    [ "$server_pongs" -ge "$pongs" ]
    [ "$server_pongs" -le "$sent" ]
    [ "$("$STAT" --get lines "$STATS")" -eq "$server_pongs" ]
    [ "$("$STAT" --get slow "$STATS")" -eq 0 ]
    [ "$("$STAT" --get failed "$STATS")" -eq 0 ]

    kill -TERM "$SERVER_PID"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    cat "$BATS_TEST_TMPDIR/server.log" >&2
    [ "$rc" = 0 ]
    for p in $pids; do run kill -0 "$p"; assert_failure; done
    [ "$("$STAT" --get exited "$STATS")" -eq "$workers" ]
}

@test "asyncio-streams: 2000 connections over >= 3 workers, heartbeats, counters, SIGTERM" {
    serves_2000 asyncio streams
}

@test "asyncio-protocol: 2000 connections over >= 3 workers, heartbeats, counters, SIGTERM" {
    serves_2000 asyncio protocol
}

@test "uvloop-protocol: 2000 connections over >= 3 workers, heartbeats, counters, SIGTERM" {
    run "$PYTHON" -c 'import uvloop'
    [ "$status" = 0 ] || skip "uvloop is not importable by $PYTHON: ${lines[-1]:-?}"
    serves_2000 uvloop protocol
}

@test "pyext: 2000 connections over >= 3 workers, heartbeats, counters, SIGTERM" {
    compgen -G "$C1M_BUILD/pyext/c1m*.so" >/dev/null || fail "no c1m extension in $C1M_BUILD/pyext (make pyext)"
    if [ "${SANITIZE:-0}" = 1 ]; then
        # an ASan extension in an uninstrumented interpreter: preload the runtime;
        # CPython itself leaks at exit, so no LeakSanitizer
        serves_2000 c1m protocol LD_PRELOAD="$(gcc -print-file-name=libasan.so)" \
            ASAN_OPTIONS="detect_leaks=0:exitcode=99$SAN_LOG"
    else
        serves_2000 c1m protocol
    fi
}

@test "anatomy: the per-connection breakdown adds up to the RSS growth" {
    [ "${SANITIZE:-0}" = 1 ] && skip "RSS figures are meaningless under ASan"
    run in_ns env PYTHONPATH="$C1M_ROOT:$C1M_BUILD/pyext" "$PYTHON" -m py_server.anatomy \
        --loop asyncio --api protocol --conns 500 --port 9000 --client "$CLIENT"
    assert_success
    assert_output --partial "asyncio-protocol: 500 idle connections"
    assert_output --partial "asyncio.selector_events._SelectorSocketTransport"
    assert_output --partial "py_server.protocol.LineProtocol"
    assert_output --partial "= RssAnon growth"
    run in_ns env PYTHONPATH="$C1M_ROOT:$C1M_BUILD/pyext" "$PYTHON" -m py_server.anatomy --conns 0
    assert_failure 2
    assert_output --partial "--conns"
}

@test "--worker-conns 1: a Python worker listens again each time its one connection closes" {
    # (resume_mark(1) used to be 0: full for good after the first connection)
    start_server "$STATS" "$PYTHON" -m py_server --loop asyncio --api protocol \
        --port "$PORT" --workers 1 --worker-conns 1
    for i in 1 2 3; do
        run in_ns "$CLIENT" --connections 1 --port "$PORT" --hold 0 --connect-timeout 3 --quiet
        assert_success
        wait_for 10 stat_is "$STATS" accepted "$i"
        wait_for 10 stat_is "$STATS" listening 1
    done
    [ "$("$STAT" --get open "$STATS")" = 0 ]
}
