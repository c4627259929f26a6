#!/usr/bin/env bats
# c1m-server push (--push BYTES, --push-every S, --push-burst, SIGUSR1):
# flags and bad input, paced pushing to 2,000 connections, a SIGUSR1
# broadcast, bursts, the slow cutoff on a peer that stops reading, and the
# `pushed` counter against what a reader received (tests/tools/push_reader.py).
# Runs in a fresh network namespace (skips without root).

# bats file_tags=serial
load helpers
load_bats_libs

setup() {
    need_ns
    STATS=$BATS_TEST_TMPDIR/server.stats
    PORT=9000
    READER=$C1M_ROOT/tests/tools/push_reader.py
    OUT=$BATS_TEST_TMPDIR/reader.json
    STATUS=$BATS_TEST_TMPDIR/reader.status
}

# start_reader ARGS...: push_reader.py in the namespace, in the background
# (CLIENT_PID), writing $STATUS and $OUT.
start_reader() {
    (exec ip netns exec "$TEST_NS" "$PYTHON" "$READER" --port "$PORT" --status "$STATUS" \
        --json "$OUT" "$@" > "$BATS_TEST_TMPDIR/reader.log" 2>&1) &
    CLIENT_PID=$!
}
status_has() { grep -qx "$1" "$STATUS" 2>/dev/null; }
# wait_reader: the reader's exit status is 0 and its summary exists.
wait_reader() {
    local rc=0
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    [ "$rc" = 0 ] && [ -s "$OUT" ] || { echo "reader exit $rc" >&2; cat "$BATS_TEST_TMPDIR/reader.log" "$OUT" >&2; return 1; }
}
# j KEY: one field of the reader's summary
j() { json "$OUT" "j['$1']"; }
# stop_server_now: SIGTERM and wait (the workers close every connection,
# delivering what the kernel holds; the counters file stays)
stop_server_now() {
    kill -TERM "$SERVER_PID"
    local rc=0
    wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 0 ]
}

@test "--help documents --push, --push-every, --push-burst and SIGUSR1" {
    run "$SERVER" --help
    assert_success
    for f in --push --push-every --push-burst SIGUSR1 "push SEQ USEC"; do
        assert_output --partial -- "$f"
    done
    run "$STAT" --help
    assert_output --partial "pushed"
}

@test "push usage errors exit 2 and name the flag" {
    for args in "--push" "--push 31" "--push 1026" "--push abc" "--push -64" "--push 64k" \
                "--push 64 --push-every 0" "--push 64 --push-every -1" "--push 64 --push-every nan" \
                "--push 64 --push-every inf" "--push 64 --push-every 1e3" "--push 64 --push-every 0.0009" \
                "--push 64 --push-every 86401" "--push 64 --push-every ''" "--push 64 --push-burst=1"; do
        eval "set -- $args"
        run "$SERVER" --port "$PORT" "$@"
        assert_failure 2
        flag=${args##*--push}; flag=--push${flag%% *}; flag=${flag%%=*}
        assert_output --partial -- "$flag"
        assert_output --partial "usage:"
    done
    # a flag that needs --push (or --push-every) without it names itself
    run "$SERVER" --push-every 1
    assert_failure 2
    assert_output --partial -- "--push-every: needs --push"
    run "$SERVER" --push-burst
    assert_failure 2
    assert_output --partial -- "--push-burst: needs --push"
    run "$SERVER" --push 64 --push-burst
    assert_failure 2
    assert_output --partial -- "--push-burst: needs --push-every"
}

@test "2000 connections, paced: sequences from 1 without gaps, sends spread over the interval, pushed == received" {
    # smallest: a 0.5 s interval (was 1 s): 10 bins of 50 ms, 5 of the server's
    # 10 ms ticks each; 3 intervals, so each connection has its first and a whole one
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2 --push 100 --push-every 0.5
    start_reader --connections 2000 --bytes 100 --min-each 3 --until-eof --interval 0.5 --timeout 60
    wait_for 60 status_has ready
    [ "$("$STAT" --get slow "$STATS")" = 0 ]
    stop_server_now
    wait_reader
    [ "$(j timed_out)" = False ]
    [ "$(j connections)" = 2000 ]
    [ "$(j eof)" = 2000 ]
    [ "$(j bad)" = 0 ]
    [ "$(j gaps)" = 0 ]
    [ "$(j not_from_1)" = 0 ]
    [ "$(j future_usec)" = 0 ]
    [ "$(j usec_before_start)" = 0 ]
    [ "$(j min_each)" -ge 3 ]
    # every byte read is in a whole message or one message's start per connection
    [ "$(j raw_bytes)" = $(( $(j received) * 100 + $(j tail_bytes) )) ]
    [ "$(j tail_bytes)" -lt $(( 2000 * 100 )) ]
    # every message the server handed to the kernel arrived, and no other
    [ "$("$STAT" --get pushed "$STATS")" = "$(j received)" ]
    [ "$("$STAT" --get slow "$STATS")" = 0 ]
    # paced: the sends fall all over the interval (10 phase bins of 50 ms;
    # a burst would fill one or two)
    [ "$(j bins_used)" -ge 7 ]
}

@test "SIGUSR1 broadcast without --push-every: one message to each of 2000 connections per signal; the parent ignores it" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2 --push 1025
    start_reader --connections 2000 --bytes 1025 --min-each 2 --until-eof --timeout 60
    wait_for 60 status_has connected
    wait_for 15 stat_is "$STATS" open 2000
    # the parent ignores SIGUSR1 (and sends nothing)
    kill -USR1 "$SERVER_PID"
    sleep 0.3
    kill -0 "$SERVER_PID"
    [ "$("$STAT" --get pushed "$STATS")" = 0 ]
    [ "$("$STAT" --get ready "$STATS")" = 1 ]
    for p in $(worker_pids "$STATS"); do kill -USR1 "$p"; done
    wait_for 20 stat_is "$STATS" pushed 2000
    for p in $(worker_pids "$STATS"); do kill -USR1 "$p"; done
    wait_for 60 status_has ready
    wait_for 10 stat_is "$STATS" pushed 4000
    stop_server_now
    wait_reader
    [ "$(j received)" = 4000 ]
    [ "$(j min_each)" = 2 ]
    [ "$(j max_each)" = 2 ]
    [ "$(j gaps)" = 0 ]
    [ "$(j bad)" = 0 ]
    [ "$(j not_from_1)" = 0 ]
    [ "$(j future_usec)" = 0 ]
    [ "$("$STAT" --get pushed "$STATS")" = 4000 ]
    # c1m-stat shows the counter in every output
    run "$STAT" --total "$STATS"
    assert_output --regexp ' pushed=4000$'
    run "$STAT" --json "$STATS"
    assert_output --partial '"pushed":4000}}'
}

@test "--push-burst: each interval's messages go to all connections at once" {
    # smallest: a 0.5 s interval (was 1 s): a burst to 500 connections takes a few
    # ms, within one or two of the 50 ms bins
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1 --push 64 --push-every 0.5 --push-burst
    start_reader --connections 500 --bytes 64 --min-each 3 --interval 0.5 --timeout 60
    wait_reader
    [ "$(j gaps)" = 0 ]
    [ "$(j bad)" = 0 ]
    [ "$(j not_from_1)" = 0 ]
    [ "$(j min_each)" -ge 3 ]
    # one worker, one phase: the sends fall into one or two of 10 bins
    # (two when a burst straddles a bin edge)
    [ "$(j bins_used)" -le 3 ]
}

@test "a peer that stops reading is closed as slow; the others keep receiving without gaps" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1 --push 1025 --push-every 0.02
    # 100 readers, 1 connection that never reads (1 KiB receive buffer)
    start_reader --connections 100 --bytes 1025 --stall 1 --min-each 100 --timeout 60
    wait_reader
    [ "$(j stalled_closed)" = 1 ]
    [ "$("$STAT" --get slow "$STATS")" = 1 ]
    [ "$(j gaps)" = 0 ]
    [ "$(j bad)" = 0 ]
    [ "$(j min_each)" -ge 100 ]
    wait_for 5 stat_is "$STATS" open 0
}

@test "pongs and pushes share a connection: every line whole, every ping answered" {
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1 --push 200 --push-every 0.01
    start_reader --connections 20 --bytes 200 --min-each 100 --ping-every 0.005 --timeout 60
    wait_reader
    [ "$(j bad)" = 0 ]
    [ "$(j gaps)" = 0 ]
    [ "$(j pings)" -gt 0 ]
    [ "$(j pongs)" = "$(j pings)" ]
}
