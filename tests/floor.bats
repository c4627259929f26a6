#!/usr/bin/env bats
# c1m-floor, the zero-state reference server (harness contender `floor`):
# usage, holding connections over several workers without reading them,
# counters vs sockstat, clean stops, nothing left behind by SIGKILL, and the
# broadcast floor (--push BYTES: one send() per connection on SIGUSR1).
# Runs in a fresh network namespace (skips without root).

load helpers
load_bats_libs

FLOOR=$C1M_BUILD/c1m-floor

setup() {
    need_ns
    STATS=$BATS_TEST_TMPDIR/floor.stats
    PORT=9010
}

# Server-side TCP sockets a process still holds: listeners on PORT and
# connections whose local port is PORT (the client's ends have ephemeral local
# ports) that are established, queued or half-closed by the peer. A socket the
# server closed while the client still holds its end waits in FIN-WAIT-2 as
# the kernel's orphan, owned by no process: not counted.
server_sockets() {
    in_ns ss -tanH "( sport = :$PORT )" \
        | awk '$1 == "ESTAB" || $1 == "LISTEN" || $1 == "CLOSE-WAIT" || $1 == "SYN-RECV"' | wc -l
}
server_sockets_is() { [ "$(server_sockets)" = "$1" ]; }

@test "floor: --help documents every flag and exits 0" {
    run "$FLOOR" --help
    assert_success
    for f in --host --port --backlog --workers --max-conns --worker-conns --sndbuf --rcvbuf \
             --max-pending --stats --quiet; do
        assert_output --partial -- "$f"
    done
}

@test "floor: usage errors exit 2 and name the flag" {
    for args in "--port" "--port 70000" "--port 0" "--workers 0" "--workers many" "--backlog -1" \
                "--max-conns 0" "--worker-conns 99999999" "--sndbuf x" "--rcvbuf 1g" \
                "--max-pending 0" "--push 31" "--push 1026" "--push" "--push-every 1" \
                "--push 64 --push-every 1" "--push-burst" "--check" "--bogus" "stray" "--host" \
                "--stats" "--quiet=yes"; do
        run "$FLOOR" $args
        assert_failure 2
        assert_output --partial "${args%%[ =]*}"
        assert_output --partial "usage:"
    done
    # --max-conns auto-sizing beyond 4096 workers is a usage error too
    run "$FLOOR" --max-conns 100m --worker-conns 10
    assert_failure 2
    assert_output --partial "--max-conns"
}

@test "floor: --sndbuf/--rcvbuf are set on the listener and inherited; --max-pending is accepted" {
    start_server "$STATS" "$FLOOR" --port "$PORT" --workers 1 --sndbuf 4096 --rcvbuf 4096 \
        --max-pending 100 --quiet
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 20 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 20
    # the kernel doubles a SO_SNDBUF/SO_RCVBUF request: 8192 in ss's skmem
    run in_ns ss -tmnH state established "( sport = :$PORT )"
    [ "$(grep -c 'rb8192,.*tb8192,' <<<"$output")" = 20 ] || fail "$output"
}

@test "floor: a port in use and an address that cannot be bound exit 1" {
    run in_ns "$FLOOR" --host 192.0.2.1 --port "$PORT" --workers 1 --stats "$STATS"
    assert_failure 1
    assert_output --partial "cannot listen"
    start_server "$STATS" "$FLOOR" --port "$PORT" --workers 1
    run in_ns "$FLOOR" --port "$PORT" --workers 1 --stats "$BATS_TEST_TMPDIR/second.stats"
    assert_failure 1
    assert_output --partial "address in use"
}

@test "floor: 3000 connections over >= 3 workers of 1200, never read; counters and sockstat agree" {
    start_server "$STATS" "$FLOOR" --port "$PORT" --max-conns 3000 --worker-conns 1200 --quiet
    workers=$("$STAT" --get workers "$STATS")
    [ "$workers" -ge 3 ]
    run "$STAT" "$STATS"
    assert_output --partial "kind=floor "
    # heartbeats every second: the floor reads nothing, so none is answered
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 3000 --port "$PORT" --worker-conns 1500 \
        --hold 4 --heartbeat 1 --quiet --json "$BATS_TEST_TMPDIR/client.json" > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 3000
    # both ends of 3000 connections, plus one listener per worker
    expect_tcp_inuse $((6000 + workers))
    [ "$(server_sockets)" = $((3000 + workers)) ]
    [ "$("$STAT" --get accepted "$STATS")" = 3000 ]
    per=$("$STAT" "$STATS" | sed -n 's/^worker=.* open=\([0-9]*\) .*/\1/p')
    busy=0
    for n in $per; do [ "$n" -le 1200 ]; [ "$n" -gt 0 ] && busy=$((busy + 1)); done
    [ "$busy" -ge 3 ]
    wait "$CLIENT_PID" || true   # exit 1: its pings were never answered (lost)
    CLIENT_PID=
    read -r sent pongs < <("$PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); h=j["heartbeat"]; print(h["sent"], h["pongs"])' "$BATS_TEST_TMPDIR/client.json")
    [ "$sent" -ge 3000 ]
    [ "$pongs" = 0 ]
    for f in lines pongs slow oversized; do [ "$("$STAT" --get $f "$STATS")" = 0 ]; done
    # the client closed everything: the floor saw each peer close and closed its end
    wait_for 10 stat_is "$STATS" open 0
    [ "$("$STAT" --get closed "$STATS")" = 3000 ]
    wait_for 5 server_sockets_is "$workers"
}

@test "floor --push: SIGUSR1 to a worker sends one message to each of its connections, numbered by broadcast; the parent ignores it" {
    READER=$C1M_ROOT/tests/tools/push_reader.py OUT=$BATS_TEST_TMPDIR/reader.json
    start_server "$STATS" "$FLOOR" --port "$PORT" --workers 2 --push 1025 --quiet
    (exec ip netns exec "$TEST_NS" "$PYTHON" "$READER" --port "$PORT" --connections 2000 --bytes 1025 \
        --min-each 2 --until-eof --timeout 60 --status "$BATS_TEST_TMPDIR/reader.status" --json "$OUT" \
        > "$BATS_TEST_TMPDIR/reader.log" 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 2000
    kill -USR1 "$SERVER_PID"
    sleep 0.3
    kill -0 "$SERVER_PID"
    [ "$("$STAT" --get pushed "$STATS")" = 0 ]
    for p in $(worker_pids "$STATS"); do kill -USR1 "$p"; done
    wait_for 20 stat_is "$STATS" pushed 2000
    for p in $(worker_pids "$STATS"); do kill -USR1 "$p"; done
    wait_for 20 stat_is "$STATS" pushed 4000
    kill -TERM "$SERVER_PID"; wait "$SERVER_PID"; SERVER_PID=
    wait "$CLIENT_PID" || fail "reader: $(cat "$BATS_TEST_TMPDIR/reader.log" "$OUT")"
    CLIENT_PID=
    run "$PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(*(j[k] for k in ("received", "min_each", "max_each", "gaps", "bad", "not_from_1", "future_usec")))' "$OUT"
    assert_output "4000 2 2 0 0 0 0"
    [ "$("$STAT" --get slow "$STATS")" = 0 ]
}

@test "floor --push: a peer that does not take a whole message is closed as slow; the others get every broadcast" {
    READER=$C1M_ROOT/tests/tools/push_reader.py OUT=$BATS_TEST_TMPDIR/reader.json
    start_server "$STATS" "$FLOOR" --port "$PORT" --workers 1 --push 1025 --sndbuf 4096 --quiet
    # 50 readers, 1 connection that never reads (1 KiB receive buffer)
    (exec ip netns exec "$TEST_NS" "$PYTHON" "$READER" --port "$PORT" --connections 50 --bytes 1025 \
        --stall 1 --min-each 60 --timeout 60 --status "$BATS_TEST_TMPDIR/reader.status" --json "$OUT" \
        > "$BATS_TEST_TMPDIR/reader.log" 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 51
    wp=$(worker_pids "$STATS")
    for ((i = 0; i < 60; i++)); do kill -USR1 "$wp"; sleep 0.02; done
    wait "$CLIENT_PID" || fail "reader: $(cat "$BATS_TEST_TMPDIR/reader.log" "$OUT")"
    CLIENT_PID=
    run "$PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(*(j[k] for k in ("stalled_closed", "min_each", "gaps", "bad")))' "$OUT"
    assert_output "1 60 0 0"
    [ "$("$STAT" --get slow "$STATS")" = 1 ]
    [ "$("$STAT" --get pushed "$STATS")" -ge 3000 ]
}

@test "floor: a worker at its cap closes its listener and re-opens below 90%" {
    start_server "$STATS" "$FLOOR" --port "$PORT" --workers 1 --worker-conns 100 --quiet
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 100 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 100
    wait_for 5 stat_is "$STATS" full 1
    stop_pid "$CLIENT_PID"; CLIENT_PID=
    wait_for 10 stat_is "$STATS" open 0
    wait_for 10 stat_is "$STATS" listening 1
}

@test "floor: SIGTERM exits 0 with every connection closed and no worker left" {
    start_server "$STATS" "$FLOOR" --port "$PORT" --max-conns 2000 --worker-conns 700
    pids=$(worker_pids "$STATS")
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 2000 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 2000
    kill -TERM "$SERVER_PID"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 0 ]
    pids_gone $pids
    [ "$("$STAT" --get exited "$STATS")" = "$("$STAT" --get workers "$STATS")" ]
    [ "$("$STAT" --get open "$STATS")" = 0 ]
    [ "$("$STAT" --get closed "$STATS")" = 2000 ]
    wait_for 5 server_sockets_is 0
    grep -q "all workers exited cleanly" "$BATS_TEST_TMPDIR/server.log"
}

@test "floor: SIGKILL of a worker: reported, the rest stopped, exit 1, no socket left" {
    start_server "$STATS" "$FLOOR" --port "$PORT" --workers 3 --quiet
    pids=$(worker_pids "$STATS")
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 900 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 900
    kill -KILL $(head -n 1 <<<"$pids")
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 1 ]
    grep -q "killed by signal 9" "$BATS_TEST_TMPDIR/server.log"
    [ "$("$STAT" --get failed "$STATS")" = 1 ]
    pids_gone $pids
    wait_for 5 server_sockets_is 0
}

@test "floor: SIGKILL of the parent: the workers stop (PR_SET_PDEATHSIG), no socket or process left" {
    start_server "$STATS" "$FLOOR" --port "$PORT" --workers 3 --quiet
    pids=$(worker_pids "$STATS")
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 900 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 900
    kill -KILL "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    wait_for 10 pids_gone $pids
    wait_for 5 server_sockets_is 0
    [ "$("$STAT" --get exited "$STATS")" = 3 ]
}
