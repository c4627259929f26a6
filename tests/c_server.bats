#!/usr/bin/env bats
# c1m-server: usage, protocol, multi-process counts, failure handling.
# Runs in a fresh network namespace (skips without root).

load helpers
load_bats_libs

setup() {
    need_ns
    STATS=$BATS_TEST_TMPDIR/server.stats
    PORT=9000
}
teardown() {
    stop_test_processes
    # workers whose parent was killed, should they have outlived it (our children)
    [ -n "${ORPHANS:-}" ] && kill -TERM $ORPHANS 2>/dev/null
    check_sanitizer_logs
}

@test "--help documents every flag and exits 0" {
    run "$SERVER" --help
    assert_success
    for f in --host --port --backlog --workers --max-conns --worker-conns --sndbuf --rcvbuf --max-pending --stats; do
        assert_output --partial -- "$f"
    done
}

@test "usage errors exit 2 and name the flag" {
    for args in "--port" "--port 70000" "--port abc" "--workers 0" "--workers many" "--backlog -1" \
                "--max-conns 0" "--worker-conns 99999999" "--sndbuf x" "--bogus" "stray" "--host" "--stats"; do
        run "$SERVER" $args
        assert_failure 2
        assert_output --partial "${args%% *}"
        assert_output --partial "usage:"
    done
}

@test "c1m-stat usage errors exit 2; a missing file exits 1" {
    run "$STAT"
    assert_failure 2
    run "$STAT" --get nosuchfield /dev/null
    assert_failure 2
    run "$STAT" --bogus x
    assert_failure 2
    run "$STAT" "$BATS_TEST_TMPDIR/none.stats"
    assert_failure 1
}

@test "an address that cannot be bound is a clear runtime error (exit 1)" {
    # 192.0.2.1 (TEST-NET-1) is not local: bind() fails with EADDRNOTAVAIL.
    run in_ns "$SERVER" --host 192.0.2.1 --port "$PORT" --workers 1 --stats "$BATS_TEST_TMPDIR/other.stats"
    assert_failure 1
    assert_output --partial "cannot listen"
}

@test "2000 connections over >= 3 server and 2 client workers: client, counters and sockstat agree" {
    start_server "$STATS" "$SERVER" --port "$PORT" --max-conns 2000 --worker-conns 600
    workers=$("$STAT" --get workers "$STATS")
    [ "$workers" -ge 3 ]
    run in_ns "$CLIENT" --connections 2000 --port "$PORT" --worker-conns 1000 --hold 2 --quiet \
        --json "$BATS_TEST_TMPDIR/client.json"
    assert_success
    assert_output --partial "2000"
    run "$PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["established"], j["failed"], j["workers"])' \
        "$BATS_TEST_TMPDIR/client.json"
    assert_output "2000 0 2"
    # After the client's hold it has closed everything; check the live figures
    # during a second, held run (once the server has closed the first run's
    # connections: open == 2000 must mean the second run's).
    wait_for 10 stat_is "$STATS" open 0
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 2000 --port "$PORT" --worker-conns 1000 --hold 30 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 2000
    # both ends of 2000 connections, plus one listener per worker
    expect_tcp_inuse $((4000 + workers))
    # no worker went over its cap, and more than one worker took connections
    per=$("$STAT" "$STATS" | sed -n 's/^worker=.* open=\([0-9]*\) .*/\1/p')
    busy=0
    for n in $per; do [ "$n" -le 600 ]; [ "$n" -gt 0 ] && busy=$((busy + 1)); done
    [ "$busy" -ge 3 ]
}

@test "heartbeats: every ping is answered pong and counted" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2
    run in_ns "$CLIENT" --connections 300 --port "$PORT" --heartbeat 1 --hold 3 --quiet \
        --json "$BATS_TEST_TMPDIR/client.json"
    assert_success
    read -r sent pongs lost < <("$PYTHON" -c 'import json,sys; h=json.load(open(sys.argv[1]))["heartbeat"]; print(h["sent"], h["pongs"], h["lost"])' "$BATS_TEST_TMPDIR/client.json")
    [ "$sent" -ge 600 ]
    [ "$pongs" -ge $((sent - 300)) ]     # the last round may still be in flight at the end
    server_pongs=$("$STAT" --get pongs "$STATS")
    [ "$server_pongs" -ge "$pongs" ]
    [ "$("$STAT" --get lines "$STATS")" -eq "$server_pongs" ]
}

@test "lines split across reads, several per read, and exactly 1 KiB are handled" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1
    run in_ns "$PYTHON" "$C1M_ROOT/tests/tools/wire.py" split "$PORT"
    assert_output "pong"
    run in_ns "$PYTHON" "$C1M_ROOT/tests/tools/wire.py" multi "$PORT"
    assert_output "pong pong"
    run in_ns "$PYTHON" "$C1M_ROOT/tests/tools/wire.py" exact "$PORT"
    assert_output "pong"
    [ "$("$STAT" --get oversized "$STATS")" = 0 ]
}

@test "a line over 1 KiB closes the connection and is counted" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1
    run in_ns "$PYTHON" "$C1M_ROOT/tests/tools/wire.py" oversized "$PORT"
    assert_output "closed"
    wait_for 5 stat_is "$STATS" oversized 1
    wait_for 5 stat_is "$STATS" open 0
}

# A peer that sends 10,000 pings in one go, half-closes (shutdown SHUT_WR) and
# reads only afterwards, through a 4 KiB receive buffer: most replies are still
# queued in the server when it sees the EOF.
HALFCLOSE_PEER='
import socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
s.settimeout(10)
s.sendall(b"ping\n" * 10000)
s.shutdown(socket.SHUT_WR)
if mode == "read":
    time.sleep(0.3)        # let the server see the EOF with replies queued
    got = b""
    while True:            # bounded: recv raises socket.timeout after 10 s
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    print(got.count(b"pong\n"), len(got))
else:                      # "reset": wait for the go-file, then close with RST
    deadline = time.monotonic() + 30
    while not __import__("os").path.exists(sys.argv[3]) and time.monotonic() < deadline:
        time.sleep(0.05)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    s.close()
'

@test "a peer that half-closes gets every queued pong, and pongs counts what was sent" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1 --max-pending 1000000
    run in_ns "$PYTHON" -c "$HALFCLOSE_PEER" "$PORT" read
    assert_success
    assert_output "10000 50000"
    wait_for 5 stat_is "$STATS" open 0
    [ "$("$STAT" --get pongs "$STATS")" = 10000 ]
    [ "$("$STAT" --get slow "$STATS")" = 0 ]
}

@test "a half-closed peer that does not read is held until it resets; unsent pongs are not counted" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1 --max-pending 1000000
    go=$BATS_TEST_TMPDIR/go
    (exec ip netns exec "$TEST_NS" "$PYTHON" -c "$HALFCLOSE_PEER" "$PORT" reset "$go") &
    CLIENT_PID=$!
    wait_for 10 stat_is "$STATS" lines 10000
    sleep 0.5   # the EOF right behind the last line has been read by now
    [ "$("$STAT" --get open "$STATS")" = 1 ]      # still delivering
    [ "$("$STAT" --get pongs "$STATS")" -lt 10000 ]  # the socket took only part
    touch "$go"
    wait "$CLIENT_PID"
    CLIENT_PID=
    wait_for 5 stat_is "$STATS" open 0
    [ "$("$STAT" --get pongs "$STATS")" -lt 10000 ]
    [ "$("$STAT" --get slow "$STATS")" = 0 ]
}

@test "ping then an oversized line in one write: the pong is sent before the close, and counted once" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1
    run in_ns "$PYTHON" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"ping\n" + b"a" * 1025 + b"\n")
got = b""
while True:            # bounded: recv raises socket.timeout after 5 s
    chunk = s.recv(4096)
    if not chunk:
        break
    got += chunk
print(got.decode().strip() or "nothing", "then closed")
' "$PORT"
    assert_success
    assert_output "pong then closed"
    wait_for 5 stat_is "$STATS" oversized 1
    wait_for 5 stat_is "$STATS" open 0
    [ "$("$STAT" --get pongs "$STATS")" = 1 ]
    [ "$("$STAT" --get lines "$STATS")" = 1 ]
}

@test "a client killed with SIGKILL leaves the server at 0 open within 5 s" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 1500 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 1500
    # ip netns exec execs the client, so CLIENT_PID is the client's parent
    # process; kill it and its workers (our own children) with SIGKILL.
    kill -KILL $(pgrep -P "$CLIENT_PID") "$CLIENT_PID"
    wait "$CLIENT_PID" 2>/dev/null || true
    CLIENT_PID=
    wait_for 5 stat_is "$STATS" open 0
    [ "$("$STAT" --get closed "$STATS")" -eq 1500 ]
}

@test "a peer that never reads is closed as slow and server memory stays bounded" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1
    wpid=$(worker_pids "$STATS")
    rss0=$(rss_anon_kib "$wpid")
    for i in 1 2 3; do
        run in_ns "$PYTHON" "$C1M_ROOT/tests/tools/wire.py" noread "$PORT"
        assert_output "closed"
    done
    wait_for 5 stat_is "$STATS" slow 3
    rss1=$(rss_anon_kib "$wpid")
    # the worker buffers no replies of its own: a few pages at most
    [ $((rss1 - rss0)) -lt 1024 ]
}

@test "a low ulimit -n makes a worker stop accepting (state full) without spinning" {
    # 100 fds: cap = 100 - 64 reserved = 36 connections.
    (exec ip netns exec "$TEST_NS" bash -c "ulimit -n 100; exec '$SERVER' --port $PORT --workers 1 --stats '$STATS'" \
        > "$BATS_TEST_TMPDIR/server.log" 2>&1) &
    SERVER_PID=$!
    "$STAT" --wait-ready --timeout 10 "$STATS"
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 80 --port "$PORT" --hold 30 --connect-timeout 3 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 10 stat_is "$STATS" full 1
    [ "$("$STAT" --get open "$STATS")" -eq 36 ]
    wpid=$(worker_pids "$STATS")
    t0=$(cpu_ticks "$wpid"); sleep 2; t1=$(cpu_ticks "$wpid")
    [ $((t1 - t0)) -le 10 ]     # <= 0.1 s of CPU in 2 s: not spinning
    # closing connections below 90% of the cap re-opens the listener
    stop_pid "$CLIENT_PID"; CLIENT_PID=
    wait_for 10 stat_is "$STATS" listening 1
}

@test "--worker-conns 1: the worker listens again each time its one connection closes" {
    # (the re-open threshold used to be 0 for a cap of 1: full for good)
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1 --worker-conns 1
    for i in 1 2 3; do
        run in_ns "$CLIENT" --connections 1 --port "$PORT" --hold 0 --connect-timeout 3 --quiet
        assert_success
        wait_for 10 stat_is "$STATS" accepted "$i"
        wait_for 10 stat_is "$STATS" listening 1
    done
    [ "$("$STAT" --get open "$STATS")" = 0 ]
}

@test "SIGTERM: exit 0, connections closed, no worker left" {
    start_server "$STATS" "$SERVER" --port "$PORT" --max-conns 1000 --worker-conns 300
    pids=$(worker_pids "$STATS")
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 800 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 800
    kill -TERM "$SERVER_PID"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 0 ]
    for p in $pids; do run kill -0 "$p"; assert_failure; done
    [ "$("$STAT" --get exited "$STATS")" = "$("$STAT" --get workers "$STATS")" ]
    [ "$("$STAT" --get open "$STATS")" = 0 ]
}

@test "SIGKILL of the parent: the workers stop (PR_SET_PDEATHSIG), no socket or process left" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 3 --quiet
    pids=$(worker_pids "$STATS")
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 300 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 300
    ORPHANS=$pids
    kill -KILL "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    # shellcheck disable=SC2086
    wait_for 10 pids_gone $pids
    ORPHANS=
    [ "$("$STAT" --get exited "$STATS")" = 3 ]
    [ "$("$STAT" --get open "$STATS")" = 0 ]
}

@test "a worker that dies is reported and the server exits non-zero" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 3
    victim=$(worker_pids "$STATS" | head -n 1)
    kill -KILL "$victim"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 1 ]
    grep -q "killed by signal 9" "$BATS_TEST_TMPDIR/server.log"
    [ "$("$STAT" --get failed "$STATS")" = 1 ]
}

# A stop signal during start-up: the parent forwards it as SIGTERM to workers
# that may not have taken their signals over yet (the default disposition,
# between fork and the loop's signalfd), which then die by it. They were
# stopped as asked, but the server exited 1 "stopped after a worker failure".
# Made certain here: SIGINT is pending (blocked) when the server is exec'd, so
# the parent takes it as soon as it has forked (its workers restore that mask:
# SIGINT blocked, SIGTERM not).
@test "a stop signal before the workers took over their signals: exit 0, no worker failure" {
    local i rc
    for i in 1 2 3; do
        rc=0
        in_ns "$PYTHON" - "$SERVER" --port "$PORT" --workers 8 --stats "$STATS" \
            > "$BATS_TEST_TMPDIR/server.log" 2>&1 <<'PY' || rc=$?
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
os.kill(os.getpid(), signal.SIGINT)     # pending across exec
os.execv(sys.argv[1], sys.argv[1:])
PY
        [ "$rc" = 0 ] || fail "exit $rc (try $i): $(cat "$BATS_TEST_TMPDIR/server.log")"
        grep -q "all workers exited cleanly" "$BATS_TEST_TMPDIR/server.log"
        [ "$("$STAT" --get failed "$STATS")" = 0 ]
    done
}

# The parent forwards every stop signal to its workers. A second SIGTERM that
# reached a worker after its loop had put back the default disposition (as it
# closes: c1m_loop_free unblocks the signals, libuv's closed signal handles
# reset them) killed it mid-exit, and the server exited 1 ("a worker died").
# Seen in tests/py_netns/test_push_parity.py, whose reader sends the second SIGTERM
# as soon as every connection got its EOF, as this does. The window is narrow
# (the old code failed about 1 run in 25 here), so each server is tried 10 times.
@test "a second SIGTERM as the workers close their connections: exit 0 (c1m-server, c1m-libuv)" {
    local bins=("$SERVER") bin i rc
    [ -x "$C1M_BUILD/c1m-libuv" ] && bins+=("$C1M_BUILD/c1m-libuv")
    for bin in "${bins[@]}"; do
        for i in $(seq 1 10); do
            rm -f "$STATS"
            start_server "$STATS" "$bin" --port "$PORT" --workers 2 --quiet
            in_ns "$PYTHON" - "$SERVER_PID" "$PORT" <<'PY'
import os, signal, socket, sys
pid, port = int(sys.argv[1]), int(sys.argv[2])
socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(200)]
os.kill(pid, signal.SIGTERM)
for s in socks:
    s.recv(1)                       # EOF: the worker is closing
try:
    os.kill(pid, signal.SIGTERM)
except ProcessLookupError:
    pass                            # already gone: this try missed the window
PY
            rc=0
            wait "$SERVER_PID" || rc=$?
            SERVER_PID=
            [ "$rc" = 0 ] || fail "${bin##*/}: exit $rc on the second SIGTERM (try $i): $(cat "$BATS_TEST_TMPDIR/server.log")"
        done
    done
}
