#!/usr/bin/env bats
# The contenders of issue 12: c1m-libuv, c1m-uring (C) and py_server's gevent
# and threads modes. Each holds 2,000 connections over >= 3 workers (small
# --worker-conns), answers heartbeats, its counters agree with the client and
# the namespace's sockstat, SIGTERM ends it cleanly, kill -9 of a worker ends
# the server (exit 1) and leaves no process or socket, bad flags exit 2
# naming the flag; and the protocol parity suite (tests/py) runs on each.
# A contender this machine cannot run is skipped with the reason: c1m-uring
# when `c1m-uring --check` says the kernel lacks what it needs, gevent when
# it cannot be imported (apt-get install python3-gevent).
# Runs in a fresh network namespace (skips without root).

# Parallel group (tests/run.sh): it judges no time, CPU or machine-wide figure
# and sets no machine-wide setting, its runs keep their state in the file's own
# C1M_STATE_ROOT (tests/helpers.bash): it runs beside another file.

load helpers
load_bats_libs

setup() {
    need_ns
    STATS=$BATS_TEST_TMPDIR/server.stats
    JSON=$BATS_TEST_TMPDIR/client.json
    PORT=9000
    export PYTHONPATH=$C1M_ROOT${PYTHONPATH:+:$PYTHONPATH}
}

# contender_check NAME: sets WHY to why this machine cannot run contender
# NAME (empty when it can). Call it as a plain command, never inside $(...) or
# a condition, where `fail` would not end the test: a C contender that was not
# built, or `c1m-uring --check` answering neither 0 nor 3, is a failure of the
# build, not "unavailable".
contender_check() {
    local out rc=0
    WHY=
    case "$1" in
        libuv) [ -x "$C1M_BUILD/c1m-libuv" ] || fail "no $C1M_BUILD/c1m-libuv (make build)" ;;
        uring) [ -x "$C1M_BUILD/c1m-uring" ] || fail "no $C1M_BUILD/c1m-uring (make build)"
               out=$("$C1M_BUILD/c1m-uring" --check 2>&1) || rc=$?
               [ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "c1m-uring --check: status $rc: $out"
               [ "$rc" = 0 ] || WHY="c1m-uring unavailable here: $out" ;;
        gevent) out=$("$PYTHON" -c 'import gevent.server' 2>&1) \
                    || WHY="gevent is not importable by $PYTHON: ${out##*$'\n'}" ;;
    esac
}

# contender_cmd NAME: the command (words) of a new contender in CMD, or skip
# the test with why this machine cannot run it.
contender_cmd() {
    contender_check "$1"
    [ -z "$WHY" ] || skip "$WHY"
    case "$1" in
        libuv) CMD=("$C1M_BUILD/c1m-libuv") ;;
        uring) CMD=("$C1M_BUILD/c1m-uring") ;;
        gevent) CMD=("$PYTHON" -m py_server --loop gevent --api blocking) ;;
        threads) CMD=("$PYTHON" -m py_server --loop threads --api blocking --thread-stack 256k) ;;
    esac
}

# serves_2000 NAME [HEARTBEAT HOLD]: the whole scenario of py_server.bats's
# serves_2000 for one new contender (heartbeat every 1 s over a 3 s hold by
# default). `lost` (a pong later than the next ping) is checked only at the
# default period: it measures latency, which the benchmark measures, not here.
serves_2000() {
    local hb=${2:-1} hold=${3:-3}
    contender_cmd "$1"
    start_server "$STATS" "${CMD[@]}" --port "$PORT" --max-conns 2000 --worker-conns 600
    workers=$("$STAT" --get workers "$STATS")
    [ "$workers" -ge 3 ]
    pids=$(worker_pids "$STATS")
    [ "$(echo "$pids" | wc -w)" -eq "$workers" ]

    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 2000 --port "$PORT" --worker-conns 1000 \
        --heartbeat "$hb" --hold "$hold" --quiet --json "$JSON" > "$BATS_TEST_TMPDIR/client.out" 2>&1) &
    CLIENT_PID=$!
    wait_for 20 stat_is "$STATS" open 2000
    # during the hold: both ends of 2000 connections plus one listener per
    # worker that is not full
    full=$("$STAT" --get full "$STATS")
    expect_tcp_inuse $((4000 + workers - full))
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
    [ "$hb" != 1 ] || [ "$lost" -eq 0 ]
    [ "$sent" -ge 4000 ]                 # at least two rounds in the hold
    [ "$pongs" -ge $((sent - 2000)) ]    # the last round may still be in flight at the end

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
    expect_tcp_inuse "$workers"   # the listeners, re-opened below 90% of the cap

    kill -TERM "$SERVER_PID"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    cat "$BATS_TEST_TMPDIR/server.log" >&2
    [ "$rc" = 0 ]
    for p in $pids; do run kill -0 "$p"; assert_failure; done
    [ "$("$STAT" --get exited "$STATS")" -eq "$workers" ]
    expect_tcp_inuse 0
}

# sigterm_with_conns NAME: SIGTERM while 600 connections are open: exit 0,
# every worker exited, the client sees them all closed, no socket left.
sigterm_with_conns() {
    contender_cmd "$1"
    STATS=$BATS_TEST_TMPDIR/$1.stats   # one per contender: never an earlier one's file
    start_server "$STATS" "${CMD[@]}" --port "$PORT" --max-conns 600 --worker-conns 250
    pids=$(worker_pids "$STATS")
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 600 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 600
    kill -TERM "$SERVER_PID"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 0 ]
    for p in $pids; do run kill -0 "$p"; assert_failure; done
    [ "$("$STAT" --get exited "$STATS")" = "$("$STAT" --get workers "$STATS")" ]
    [ "$("$STAT" --get open "$STATS")" = 0 ]
    [ "$("$STAT" --get closed "$STATS")" = 600 ]
    stop_pid "$CLIENT_PID"; CLIENT_PID=
    expect_tcp_inuse 0
}

# kill9_worker NAME: SIGKILL of one worker holding connections: the server
# reports it, stops the others and exits 1; no process and no socket is left.
kill9_worker() {
    contender_cmd "$1"
    STATS=$BATS_TEST_TMPDIR/$1.stats   # one per contender: never an earlier one's file
    start_server "$STATS" "${CMD[@]}" --port "$PORT" --max-conns 600 --worker-conns 250
    pids=$(worker_pids "$STATS")
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 600 --port "$PORT" --hold 60 --quiet > /dev/null 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 600
    victim=$(echo "$pids" | head -n 1)
    kill -KILL "$victim"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 1 ]
    grep -q "killed by signal 9" "$BATS_TEST_TMPDIR/server.log"
    [ "$("$STAT" --get failed "$STATS")" -ge 1 ]
    for p in $pids; do run kill -0 "$p"; assert_failure; done
    stop_pid "$CLIENT_PID"; CLIENT_PID=
    expect_tcp_inuse 0
}

@test "libuv: 2000 connections over >= 3 workers, heartbeats, counters vs client vs sockstat, SIGTERM" {
    serves_2000 libuv
}
@test "uring: 2000 connections over >= 3 workers, heartbeats, counters vs client vs sockstat, SIGTERM" {
    serves_2000 uring
}
@test "gevent: 2000 connections over >= 3 workers, heartbeats, counters vs client vs sockstat, SIGTERM" {
    serves_2000 gevent
}
@test "threads: 2000 connections over >= 3 workers, heartbeats, counters vs client vs sockstat, SIGTERM" {
    # 2,000 threads answer a heartbeat each per 2 s (one GIL per worker; a
    # busy 2-vCPU machine can delay pongs past a 1 s period)
    serves_2000 threads 2 5
}

@test "SIGTERM with 600 connections open: exit 0, all closed, nothing left (libuv, uring, gevent, threads)" {
    for c in libuv uring gevent threads; do
        contender_check "$c"
        if [ -n "$WHY" ]; then echo "# $c skipped: $WHY" >&3; continue; fi
        echo "# $c" >&3
        sigterm_with_conns "$c"
    done
}

@test "kill -9 of a worker: the server exits 1, no process or socket left (libuv, uring, gevent, threads)" {
    for c in libuv uring gevent threads; do
        contender_check "$c"
        if [ -n "$WHY" ]; then echo "# $c skipped: $WHY" >&3; continue; fi
        echo "# $c" >&3
        kill9_worker "$c"
    done
}

@test "c1m-libuv and c1m-uring: --help, and bad flags exit 2 naming the flag" {
    for prog in c1m-libuv c1m-uring; do
        bin=$C1M_BUILD/$prog
        [ -x "$bin" ] || fail "no $bin (make build)"
        run "$bin" --help
        assert_success
        assert_output --partial "usage: $prog"
        for args in "--port 0" "--port 70000" "--workers 0" "--workers x" "--max-pending 0" \
                    "--worker-conns 100000000" "--sndbuf -1" "--host" "--quiet=1" "--bogus" "extra"; do
            run "$bin" $args
            [ "$status" = 2 ] || fail "$prog $args: status $status: $output"
            flag=${args%% *}
            [[ "$output" == *"${flag%%=*}"* ]] || fail "$prog $args: the message does not name it: $output"
            assert_output --partial "usage: $prog"
        done
        run "$bin" --port 9000 --stats ""
        assert_failure 2
    done
}

@test "c1m-uring: without io_uring (a seccomp filter: io_uring_setup -> EPERM) it exits 3 with the reason" {
    [ -x "$C1M_BUILD/c1m-uring" ] || fail "no $C1M_BUILD/c1m-uring (make build)"
    wrap=$C1M_BUILD/tests/no_io_uring   # tests/c/no_io_uring.c: this process only, not the host
    [ -x "$wrap" ] || fail "no $wrap (make build)"
    run "$wrap" "$C1M_BUILD/c1m-uring" --port "$PORT" --stats "$STATS"
    [ "$status" = 3 ] || fail "status $status: $output"
    assert_output --partial "c1m-uring: unavailable: io_uring_setup: Operation not permitted"
    [ ! -e "$STATS" ]   # nothing created
    run "$wrap" "$C1M_BUILD/c1m-uring" --check
    [ "$status" = 3 ] || fail "status $status: $output"
    assert_output --partial "c1m-uring: unavailable: io_uring_setup:"
    # unwrapped, --check's answer and its status agree, whichever this kernel gives
    run "$C1M_BUILD/c1m-uring" --check
    case "$status" in
        0) assert_output "c1m-uring: available" ;;
        3) assert_output --partial "c1m-uring: unavailable: " ;;
        *) fail "c1m-uring --check: status $status: $output" ;;
    esac
}

@test "py_server gevent/threads: bad flags exit 2 naming the flag" {
    for args in "--loop gevent --api protocol" "--loop threads --api streams" \
                "--loop asyncio --api blocking" "--loop gevent --api blocking --thread-stack 1m" \
                "--loop threads --api blocking --thread-stack 1000" \
                "--loop threads --api blocking --push 64 --push-every 1"; do
        run "$PYTHON" -m py_server $args --port 9000
        [ "$status" = 2 ] || fail "$args: status $status: $output"
        case "$args" in
            *thread-stack*) assert_output --partial "--thread-stack" ;;
            *--push*) assert_output --partial "--push" ;;
            *) assert_output --partial "--api" ;;
        esac
    done
}

@test "unittest: protocol parity on the new contenders (tests/py_netns/test_protocol_parity.py)" {
    loops=libuv,threads   # built by make test / no dependency: never skipped
    for c in uring gevent; do
        contender_check "$c"
        if [ -n "$WHY" ]; then echo "# $c skipped: $WHY" >&3; else loops+=,$c; fi
    done
    run in_ns env PYTHONPATH="$C1M_ROOT" C1M_PYTHON="$PYTHON" C1M_STAT="$STAT" C1M_SERVER="$SERVER" \
        C1M_TEST_LOOP="$loops" "$PYTHON" -m unittest tests.py_netns.test_protocol_parity
    echo "$output" | tail -n 30 >&2
    assert_success
    assert_line --regexp '^OK'
}

@test "anatomy: gevent and threads, the per-connection breakdown adds up to the RSS growth" {
    [ "${SANITIZE:-0}" = 1 ] && skip "RSS figures are meaningless under ASan"
    for c in gevent threads; do
        contender_check "$c"
        if [ -n "$WHY" ]; then echo "# $c skipped: $WHY" >&3; continue; fi
        run in_ns env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server.anatomy \
            --loop "$c" --conns 300 --port 9000 --client "$CLIENT"
        assert_success
        assert_output --partial "$c: 300 idle connections"
        assert_output --partial "= RssAnon growth"
    done
    # refused after its temporary directory was made: the directory goes too
    mkdir "$BATS_TEST_TMPDIR/tmp"
    run in_ns env TMPDIR="$BATS_TEST_TMPDIR/tmp" PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server.anatomy \
        --loop gevent --api protocol
    assert_failure 2
    assert_output --partial "--api"
    run ls -A "$BATS_TEST_TMPDIR/tmp"
    assert_output ""
}

@test "anatomy --slots off: the Protocol class without __slots__, one instance per connection, named" {
    for s in on off; do
        run in_ns env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server.anatomy --loop asyncio \
            --api protocol --slots "$s" --conns 300 --port 9000 --client "$CLIENT" \
            --json "$BATS_TEST_TMPDIR/$s.json"
        assert_success
    done
    run "$PYTHON" - "$BATS_TEST_TMPDIR" <<'EOF'
import json, sys
on, off = (json.load(open("%s/%s.json" % (sys.argv[1], s))) for s in ("on", "off"))
assert on["kind"] == "asyncio-protocol" and off["kind"] == "asyncio-protocol --slots off", (on["kind"], off["kind"])
types = lambda f: {t["type"]: t for t in f["types"]}
assert round(types(on)["py_server.protocol.LineProtocol"]["objects"]) == 1, on
assert round(types(off)["py_server.protocol.LineProtocolNoSlots"]["objects"]) == 1, off
assert "py_server.protocol.LineProtocol" not in types(off), off
EOF
    assert_success
}

@test "SCENARIO=push with a contender without --push: recorded unsupported, never started; the table agrees with the flags" {
    out=$BATS_TEST_TMPDIR/push-results
    # smallest: gevent alone (was c,gevent: c's push run, ok, is push_stall.bats's
    # "SCENARIO=push end to end"), no calibration (nothing here reads it); bench.sh
    # still records and reports
    run env CALIBRATE=0 SCENARIO=push PUSH_BYTES=256 PUSH_EVERY=1 PUSH_WAIT=60 TIERS=2k CONTENDERS=gevent \
        HOLD=2 HEARTBEAT=1 SERVER_WORKER_CONNS=700 CLIENT_WORKER_CONNS=700 OUT="$out" \
        BUILD="$C1M_BUILD" PYTHON="$PYTHON" DISTURB_PCT=100 INIT_PCT=100 QUIET_CPU_PCT=100 \
        QUIET_MAX=0 SETTLE_MAX=5 "$C1M_ROOT/harness/bench.sh"
    echo "$output" | tail -n 20 >&2
    assert_success
    assert_output --partial "unsupported: gevent does not implement push (scenario push needs it)"
    run "$PYTHON" - "$out/runs.jsonl" <<'PY'
import json, sys
rows = {r["contender"]: r for r in map(json.loads, open(sys.argv[1]))}
assert sorted(rows) == ["gevent"], rows
g = rows["gevent"]
assert g["status"] == "unsupported", g
assert "push" in g["note"], g
assert not g.get("run_dir"), g          # never started: no run directory
print("ok")
PY
    assert_output "ok"
    [ ! -e "$out/runs/gevent-2k-1" ]
    # the capability table (harness/lib/contenders.sh) says what the servers do:
    # those it lists without push refuse --push with exit 2
    source "$C1M_ROOT/harness/lib/contenders.sh"
    BUILD=$C1M_BUILD
    for c in "${C1M_CONTENDERS[@]}"; do
        contender_supports "$c" push && continue
        read -r -a cmd <<<"$(contender_cmd "$c" --port 9000 --push 64 --push-every 1)"
        run "${cmd[@]}"
        [ "$status" = 2 ] || fail "$c: --push: status $status (the table says unsupported): $output"
        assert_output --partial "--push"
    done
    run contender_supports c bogus-capability
    assert_failure
}
