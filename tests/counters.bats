#!/usr/bin/env bats
# The live counters file: safe creation (no symlink following), the default
# path (per process, removed at exit), and c1m-stat, its one reader: dead
# workers, truncated files, FIFOs, directories, JSON escaping.
# Runs in a fresh network namespace (skips without root).

# bats file_tags=serial
load helpers
load_bats_libs

setup() {
    STATS=$BATS_TEST_TMPDIR/server.stats
    PORT=9000
    SEEDS=$C1M_ROOT/fuzz/corpus/stats
}
teardown() {
    [ -n "${STOPPED_PID:-}" ] && kill -CONT "$STOPPED_PID" 2>/dev/null
    stop_test_processes
    [ -n "${NS_B:-}" ] && ip netns del "$NS_B" 2>/dev/null
    rm -f "${DEFAULT_A:-/nonexistent}" "${DEFAULT_B:-/nonexistent}"
    check_sanitizer_logs
}

# write_stats FILE KIND "pid state open" ...: a counters file from the Python
# writer, one record per argument (pids and states as given).
write_stats() {
    local file=$1 kind=$2; shift 2
    PYTHONPATH=$C1M_ROOT "$PYTHON" - "$file" "$kind" "$@" <<'EOF'
import sys
from py_server import stats
path, kind, recs = sys.argv[1], sys.argv[2], [list(map(int, r.split())) for r in sys.argv[3:]]
sf = stats.StatsFile.create(path, len(recs), 1000, kind)
for i, (pid, state, n) in enumerate(recs):
    c = type("C", (), dict(open=n, accepted=n, closed=0, slow=0, lines=1, pongs=1,
                           oversized=0, accept_errors=0))()
    sf.publish(i, pid, state, c)
sf.close()
EOF
}

@test "c1m-server never writes the counters file through a symlink planted at its temporary name" {
    need_ns
    local victim=$BATS_TEST_TMPDIR/victim
    echo precious > "$victim"
    # The old code wrote PATH.PID.tmp with O_CREAT|O_TRUNC: plant a link there
    # (the pid is known: bash execs the server in place) and one at PATH.
    (exec ip netns exec "$TEST_NS" bash -c 'ln -s "$1" "$2.$$.tmp"; ln -s "$1" "$2"; shift 2; exec "$@"' \
        _ "$victim" "$STATS" "$SERVER" --port "$PORT" --workers 1 --stats "$STATS" \
        > "$BATS_TEST_TMPDIR/server.log" 2>&1) &
    SERVER_PID=$!
    run "$STAT" --wait-ready --timeout 20 "$STATS"
    assert_success
    assert_equal "$(cat "$victim")" precious
    [ -f "$STATS" ] && [ ! -L "$STATS" ]
    [ -L "$STATS.$SERVER_PID.tmp" ]  # the planted link is left alone, unused
    run "$STAT" --get pid "$STATS"
    assert_output "$SERVER_PID"
}

@test "--stats naming a device node, a FIFO or a directory is refused (exit 1), never replaced" {
    need_ns
    # /dev/null's twin: a root server used to rename its file over it
    mknod "$BATS_TEST_TMPDIR/null" c 1 3
    mkfifo "$BATS_TEST_TMPDIR/fifo"
    mkdir "$BATS_TEST_TMPDIR/dir"
    local f
    for f in null fifo dir; do
        run in_ns timeout 10 "$SERVER" --port "$PORT" --workers 1 --stats "$BATS_TEST_TMPDIR/$f"
        assert_failure 1
        assert_output --partial -- "--stats $BATS_TEST_TMPDIR/$f: "
    done
    [ -c "$BATS_TEST_TMPDIR/null" ] && [ -p "$BATS_TEST_TMPDIR/fifo" ] && [ -d "$BATS_TEST_TMPDIR/dir" ]
    run in_ns timeout 10 "$SERVER" --port "$PORT" --workers 1 --stats "$BATS_TEST_TMPDIR/null"
    assert_output --partial "not a regular file"
    run ls "$BATS_TEST_TMPDIR"
    refute_output --partial ".stats."   # no temporary left behind
    refute_output --regexp '(null|fifo|dir)\.'
}

@test "the default counters file is per process (two namespaces, one port) and removed at exit" {
    need_ns
    NS_B=$TEST_NS-b
    ip netns add "$NS_B"
    ip -n "$NS_B" link set lo up
    (exec ip netns exec "$TEST_NS" "$SERVER" --port "$PORT" --workers 1 --quiet) &
    SERVER_PID=$!
    (exec ip netns exec "$NS_B" "$SERVER" --port "$PORT" --workers 1 --quiet) &
    CLIENT_PID=$!   # the second server; stopped by teardown like a client
    local a=/dev/shm/c1m-server-$PORT-$SERVER_PID.stats b=/dev/shm/c1m-server-$PORT-$CLIENT_PID.stats
    DEFAULT_A=$a DEFAULT_B=$b
    run "$STAT" --wait-ready --timeout 20 "$a"
    assert_success
    run "$STAT" --wait-ready --timeout 20 "$b"
    assert_success
    assert_equal "$("$STAT" --get pid "$a")" "$SERVER_PID"
    assert_equal "$("$STAT" --get pid "$b")" "$CLIENT_PID"
    stop_pid "$CLIENT_PID"
    [ ! -e "$b" ]
    stop_pid "$SERVER_PID"
    [ ! -e "$a" ]
    run "$SERVER" --help
    assert_output --partial "c1m-server-PORT-PID.stats"
}

@test "c1m-stat --watch on a file truncated under it: an error (exit 1), never SIGBUS" {
    # 40 records: the file spans two pages, and a mapping reader touching the
    # page past the new end of file gets SIGBUS (within the last page it reads 0s)
    local recs=() i
    for ((i = 0; i < 40; i++)); do recs+=("$$ 1 1"); done
    write_stats "$STATS" c "${recs[@]}"
    "$STAT" --watch 20 --count 500 "$STATS" > "$BATS_TEST_TMPDIR/watch.out" 2> "$BATS_TEST_TMPDIR/watch.err" &
    local pid=$!
    for ((i = 0; i < 100; i++)); do [ -s "$BATS_TEST_TMPDIR/watch.out" ] && break; sleep 0.05; done
    truncate -s 100 "$STATS"
    local rc=0
    wait "$pid" || rc=$?
    cat "$BATS_TEST_TMPDIR/watch.err" >&2
    assert_equal "$rc" 1
    grep -q "truncated" "$BATS_TEST_TMPDIR/watch.err"
    truncate -s 0 "$STATS"
    run "$STAT" "$STATS"
    assert_failure 1
    assert_output --partial "not a c1m counters file"
}

@test "a wait or a watch whose starter was killed (SIGKILL, no cleanup) ends by itself" {
    # an earlier run's file: its worker exited, so no wait can be met
    write_stats "$STATS" c "$$ 4 0"
    export PIDF=$BATS_TEST_TMPDIR/stat.pid ERR=$BATS_TEST_TMPDIR/stat.err
    local case starter spid i
    for case in "--wait open=5 $STATS" "--wait-ready $STATS" "--watch 50 $STATS" \
        "--wait-ready $BATS_TEST_TMPDIR/not-yet.stats"; do
        rm -f "$PIDF" "$ERR"
        # the starter: a shell that waits for c1m-stat, as run_one.sh does
        # shellcheck disable=SC2086  # the case's words
        bash -c '"$0" "$@" > /dev/null 2> "$ERR" & echo $! > "$PIDF"; wait' \
            "$STAT" --timeout 60 $case &
        starter=$!
        for ((i = 0; i < 100; i++)); do [ -s "$PIDF" ] && break; sleep 0.02; done
        spid=$(cat "$PIDF")
        sleep 0.2
        kill -0 "$spid" || fail "$case: c1m-stat ended before its starter: $(cat "$ERR")"
        kill -KILL "$starter"
        wait "$starter" 2>/dev/null || true
        wait_for 5 pids_gone "$spid" || { kill "$spid"; fail "$case: c1m-stat outlived its starter"; }
        grep -q "is gone: stopping" "$ERR" || fail "$case: $(cat "$ERR")"
    done
}

# holds PID FILE: process PID has FILE open
holds() { find "/proc/$1/fd" -lname "$2" 2>/dev/null | grep -q .; }

@test "a wait and --watch follow the path to a new file renamed over it (a server restarted with the same --stats)" {
    # an earlier run's file at the path: its worker exited (neither ready nor dead)
    write_stats "$STATS" c "$$ 4 0"
    "$STAT" --wait open=5 --timeout 10 "$STATS" > /dev/null 2>&1 &
    local pid=$!
    wait_for 10 holds "$pid" "$STATS"
    write_stats "$STATS" c "$$ 1 5"   # the new run's file: written aside, renamed over
    local rc=0
    wait "$pid" || rc=$?   # bounded by --timeout
    assert_equal "$rc" 0
    write_stats "$STATS" c "$$ 4 0"
    "$STAT" --get open --watch 20 --count 1500 "$STATS" > "$BATS_TEST_TMPDIR/watch.out" &
    CLIENT_PID=$!   # stopped by teardown if the test fails
    wait_for 10 holds "$CLIENT_PID" "$STATS"
    write_stats "$STATS" c "$$ 1 7"
    wait_for 10 grep -qx 7 "$BATS_TEST_TMPDIR/watch.out"
}

@test "c1m-stat on a FIFO fails at once; a directory is named as such" {
    mkfifo "$BATS_TEST_TMPDIR/fifo"
    run timeout 10 "$STAT" "$BATS_TEST_TMPDIR/fifo"
    assert_failure 1
    assert_output --partial "not a regular file"
    run timeout 10 "$STAT" --wait-ready --timeout 30 "$BATS_TEST_TMPDIR/fifo"
    assert_failure 1
    assert_output --partial "not a regular file"
    run "$STAT" "$BATS_TEST_TMPDIR"
    assert_failure 1
    assert_output --partial "is a directory"
    refute_output --partial "No such device"
}

@test "c1m-stat: output that cannot be written (full disk, closed stdout) exits 1, not 0" {
    local f=$SEEDS/valid-3-workers mode
    for mode in "" --total --json --csv "--get open"; do
        # shellcheck disable=SC2086 # mode is one or two words
        run bash -c '"$0" "$@" > /dev/full' "$STAT" $mode "$f"
        assert_failure 1
        assert_output --partial "cannot write the output: No space left on device"
    done
    run bash -c '"$0" "$@" >&-' "$STAT" --watch 10 --count 3 "$f"
    assert_failure 1
    assert_output --partial "cannot write the output"
}

@test "c1m-stat --json escapes kind; the text output keeps kind one word" {
    run "$STAT" --json "$SEEDS/kind-quote"
    assert_success
    run "$PYTHON" -c 'import json,sys; print(repr(json.loads(sys.argv[1])["kind"]))' "$output"
    assert_success
    assert_output "'a\"b\\\\c'"
    write_stats "$STATS" $'x y\x01' "$$ 1 5"
    run "$STAT" --total "$STATS"
    assert_output --regexp '^total kind=x\\x20y\\x01 workers=1 '
    run "$STAT" --json "$STATS"
    run "$PYTHON" -c 'import json,sys; print(repr(json.loads(sys.argv[1])["kind"]))' "$output"
    assert_output "'x y\\x01'"
}

@test "dead workers (failed, or pid gone) are shown and left out of every total" {
    sleep 0 &
    local gone=$!
    wait "$gone"
    # worker 0 alive (this shell), 1 pid gone while listening, 2 marked failed
    write_stats "$STATS" c "$$ 1 100" "$gone 1 200" "$$ 5 400"
    run "$STAT" --get workers_dead "$STATS"
    assert_output 2
    run "$STAT" --get open "$STATS"
    assert_output 100
    run "$STAT" --get ready "$STATS"
    assert_output 0
    run "$STAT" "$STATS"
    assert_line --index 0 --regexp "^worker=0 pid=$$ state=listening dead=0 open=100 "
    assert_line --index 1 --regexp "^worker=1 pid=$gone state=listening dead=1 open=200 "
    assert_line --index 2 --regexp "^worker=2 pid=$$ state=failed dead=1 open=400 "
    assert_line --index 3 --regexp "^total kind=c workers=3 listening=1 full=0 failed=1 workers_dead=2 open=100 accepted=100 "
    run "$STAT" --json "$STATS"
    run "$PYTHON" -c 'import json,sys; j=json.loads(sys.argv[1]); print([w["dead"] for w in j["workers"]], j["total"]["workers_dead"], j["total"]["open"])' "$output"
    assert_output "[0, 1, 1] 2 100"
    run "$STAT" --csv "$STATS"
    assert_line --index 0 "unix_ms,open,accepted,closed,slow,listening,full,workers_dead,pushed,stale_ms,lag_ms"
    assert_line --index 1 --regexp '^[0-9]+,100,100,0,0,1,0,2,[0-9]+,[0-9]+,[0-9]+$'
    run "$STAT" --wait open=100 --timeout 5 "$STATS"
    assert_failure 1
    assert_output --partial "a worker is dead"
    # an exited worker whose process is gone is not dead; a starting one with no pid yet neither
    write_stats "$STATS" c "$gone 4 0" "0 0 0"
    run "$STAT" --get workers_dead "$STATS"
    assert_output 0
}

@test "c1m-stat's totals saturate: a hostile file's counters never wrap to a small total" {
    # two live workers with open 2^63 each: summed modulo 2^64 that was 0
    write_stats "$STATS" c "$$ 1 9223372036854775808" "$$ 1 9223372036854775808"
    run "$STAT" --get open "$STATS"
    assert_output 18446744073709551615
    run "$STAT" --wait open=5 --timeout 2 "$STATS"
    assert_success
    write_stats "$STATS" c "$$ 1 18446744073709551615" "$$ 1 18446744073709551615" "$$ 1 7"
    run "$STAT" --get accepted "$STATS"
    assert_output 18446744073709551615
}

@test "c1m-stat --csv: stale_ms is the oldest live worker's counters' age, lag_ms their age weighted by open connections, each at least the mean" {
    # live: 100 open published now, 300 open 4 s ago, 0 open 60 s ago; dead
    # (pid gone): 500 open 100 s ago, left out of both
    sleep 0 &
    local gone=$!
    wait "$gone"
    PYTHONPATH=$C1M_ROOT "$PYTHON" - "$STATS" "$$" "$gone" <<'EOF'
import sys, time
from py_server import stats
path, me, gone = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sf = stats.StatsFile.create(path, 4, 1000, "python")
now = time.monotonic_ns()
for i, (pid, n, age_s) in enumerate([(me, 100, 0), (me, 300, 4), (me, 0, 60), (gone, 500, 100)]):
    c = type("C", (), dict(open=n, accepted=n, closed=0, slow=0, lines=0, pongs=0,
                           oversized=0, accept_errors=0, pushed=7 * n))()
    sf.publish(i, pid, 1, c, now - age_s * 10**9)
sf.close()
EOF
    run "$STAT" --csv "$STATS"
    assert_success
    assert_line --index 1 --regexp '^[0-9]+,400,400,0,0,3,0,1,2800,[0-9]+,[0-9]+$'
    local stale lag
    IFS=, read -r _ _ _ _ _ _ _ _ _ stale lag <<< "${lines[1]}"
    # read within a second of the write (a slow sanitizer build included)
    [ "$stale" -ge 60000 ] && [ "$stale" -lt 61000 ] || fail "stale_ms $stale, not the 60 s worker's age"
    # the live mean is 400 / 3: the 100 and the idle worker weigh that, the
    # dead one nothing: (133.3 x 0 + 300 x 4000 + 133.3 x 60000) / 566.7 = 16235
    [ "$lag" -ge 16235 ] && [ "$lag" -lt 17235 ] || fail "lag_ms $lag, not 16235"
    # nothing open: 0, not a division by zero
    write_stats "$STATS" c "$$ 1 0"
    run "$STAT" --csv "$STATS"
    assert_line --index 1 --regexp '^[0-9]+,0,0,0,0,1,0,0,0,[0-9]+,0$'
}

@test "a worker killed mid-hold is dead at once: open drops, --wait open=N fails" {
    need_ns
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2 --max-conns 400
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 400 --port "$PORT" --hold 60 --quiet \
        > /dev/null 2>&1) &
    CLIENT_PID=$!
    run "$STAT" --wait open=400 --timeout 20 "$STATS"
    assert_success
    local victim
    victim=$(worker_pids "$STATS" | head -n 1)
    # Stop the parent first: it cannot reap the victim (a zombie, which
    # kill(pid, 0) still finds) nor mark it failed. c1m-stat must see it.
    STOPPED_PID=$SERVER_PID
    kill -STOP "$SERVER_PID"
    kill -KILL "$victim"
    wait_for 5 stat_is "$STATS" workers_dead 1
    local open
    open=$("$STAT" --get open "$STATS")
    [ "$open" -lt 400 ]
    run "$STAT" --wait open=400 --timeout 2 "$STATS"
    assert_failure 1
    assert_output --partial "a worker is dead"
    assert_output --regexp "worker=[01] pid=$victim state=listening dead=1 "
    # the parent, resumed, reaps it, marks it failed and stops: exit 1
    kill -CONT "$SERVER_PID"
    STOPPED_PID=
    local rc=0
    for ((i = 0; i < 100; i++)); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    assert_equal "$rc" 1
    run "$STAT" --get failed "$STATS"
    assert_output 1
    run "$STAT" --get workers_dead "$STATS"
    assert_output 1
}
