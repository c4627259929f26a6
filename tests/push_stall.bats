#!/usr/bin/env bats
# Server push on the client's side and stalled readers (issue 10 §1-§2):
# c1m-client's push line parser (unit cases), its push counters against a
# small push server that can break the format (tests/tools/push_server.py) and
# against the real servers' `pushed` counter, --stall (which connections stop,
# that they stop), the fairness test (10% stalled: the reading 90% keep their
# p99 delivery latency within 2x of the run without stalls, 5k connections),
# the push/stall scenarios' knob checks, SCENARIO=push|stall end to end
# (bench.sh at 2k for c and asyncio-protocol: the columns, report, plots), and
# the stall phase's end rules (steady, the memory guard). make test-long adds
# asyncio-protocol's fairness, PUSH_EVERY=0 and STALL_PUSH_FLOW=ignore end to end.
# Runs in a fresh network namespace (those tests skip without root).
# Serial: the fairness test judges latency, and the end-to-end cases run the
# harness (machine-wide CPU, Slab and TCP memory figures).

# bats file_tags=serial
load helpers
load_bats_libs

setup() {
    STATS=$BATS_TEST_TMPDIR/server.stats
    JSON=$BATS_TEST_TMPDIR/client.json
    PSTATE=$BATS_TEST_TMPDIR/push.state
    CLIENT_ERR=$BATS_TEST_TMPDIR/client.err      # start_client: stderr apart
    export PYTHONPATH=$C1M_ROOT:$C1M_BUILD/pyext${PYTHONPATH:+:$PYTHONPATH}
}
teardown() {
    stop_pid "${PSERVER_PID:-}"
    stop_test_processes
    if [ -n "${RMEM_SAVED:-}" ]; then
        in_ns sysctl -q -w net.ipv4.tcp_rmem="$RMEM_SAVED" >/dev/null || true
    fi
    check_sanitizer_logs
}

# The real servers' push (issue 10 §1, server side) is there.
need_server_push() {
    "$SERVER" --help 2>/dev/null | grep -q -- '--push BYTES' || skip "c1m-server has no --push yet"
}

# start_push_server PORT ARGS...: tests/tools/push_server.py in the namespace.
start_push_server() {
    local port=$1; shift
    rm -f "$PSTATE"
    (exec ip netns exec "$TEST_NS" "$PYTHON" "$C1M_ROOT/tests/tools/push_server.py" "$port" "$PSTATE" "$@" \
        > "$BATS_TEST_TMPDIR/push_server.log" 2>&1) &
    PSERVER_PID=$!
    wait_for 20 test -s "$PSTATE" || { cat "$BATS_TEST_TMPDIR/push_server.log" >&2; return 1; }
}
pstate() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" "$PSTATE"; }
pstate_is() { [ "$(pstate "$1")" = "$2" ]; }

client_said() { grep -qE -- "$1" "$BATS_TEST_TMPDIR/client.err"; }
# end_client: stop_client, and its summary written; its exit status.
end_client() {
    stop_client
    [ -s "$JSON" ] || { cat "$CLIENT_ERR" >&2; return 1; }
    return "$CLIENT_RC"
}
# open_window: SIGUSR1 to the client; it says when its workers see it.
open_window() {
    kill -USR1 "$CLIENT_PID"
    wait_for 10 client_said '^c1m-client: SIGUSR1: push window open from [0-9]+ us$'
}

@test "--help documents --stall, --stall-on-signal and the push window" {
    run "$CLIENT" --help
    assert_success
    for f in --stall --stall-on-signal SIGUSR1 SIGUSR2 "push window" "push SEQ USEC"; do
        assert_output --partial -- "$f"
    done
}

@test "--stall: a fraction outside 0..1 or not a plain decimal exits 2 naming the flag" {
    local v
    for v in -0.1 1.5 2 abc "" 1e-2 0x1 nan inf .5. " 0.1" 0.1s; do
        run "$CLIENT" --connections 10 --stall "$v"
        assert_failure 2
        assert_output --partial -- "--stall"
    done
    run "$CLIENT" --connections 10 --stall
    assert_failure 2
    assert_output --partial -- "--stall"
    run "$CLIENT" --connections 10 --stall-on-signal=yes
    assert_failure 2
    assert_output --partial -- "--stall-on-signal"
    # in range: accepted (parsed in order: --help after it exits 0)
    for v in 0 1 0.5 .25 1.0 0.001; do
        run "$CLIENT" --connections 1 --stall "$v" --stall-on-signal --help
        assert_success
    done
}

@test "push: counts equal what the server pushed, 2000 connections over 4 workers; the window reaches all" {
    need_ns
    start_push_server 9301 --bytes 200
    start_client --connections 2000 --workers 4 --port 9301 --hold inf --quiet
    wait_for 30 pstate_is conns 2000
    kill -USR1 "$PSERVER_PID"
    wait_for 10 pstate_is pushed 2000
    kill -USR1 "$PSERVER_PID"
    wait_for 10 pstate_is pushed 4000
    open_window
    # announced once (a second SIGUSR1 is ignored, and says so)
    kill -USR1 "$CLIENT_PID"
    wait_for 10 client_said 'push window is already open'
    kill -USR1 "$PSERVER_PID"
    wait_for 10 pstate_is pushed 6000
    # every connection got the third line: in order, so the first two as well
    wait_for 30 client_said '^c1m-client: push window reached all 2000 reading connections, last at [0-9]+ us$'
    end_client
    run json "$JSON" 'j["push_received"], j["push_missing"], j["push_bad"], j["push_bytes"], j["stalled"]'
    assert_output "6000 0 0 1200000 0"
    run json "$JSON" 'j["push_window"]["reached"]'
    assert_output 2000
    # latency: ordered percentiles; the times in order
    run json "$JSON" '(lambda l, w: 0 <= l["p50"] <= l["p90"] <= l["p99"] <= l["p999"] <= l["max"] < 60e6
                       and j["push_first_send_us"] <= w["start_us"] <= w["first_send_us"]
                       and w["first_send_us"] <= w["first_rx_us"] <= w["last_rx_us"] == j["push_last_rx_us"])(
                       j["push_latency_us"], j["push_window"])'
    assert_output True
    [ "$(grep -c 'push window reached all' "$BATS_TEST_TMPDIR/client.err")" = 1 ]
}

@test "push: lines split across reads, a gap and a malformed line per connection are counted exactly" {
    need_ns
    start_push_server 9302 --bytes 100 --split --gap 2 --bad
    start_client --connections 1000 --workers 2 --port 9302 --hold inf --quiet
    wait_for 30 pstate_is conns 1000
    kill -USR1 "$PSERVER_PID"
    wait_for 10 pstate_is pushed 1000
    wait_for 10 pstate_is busy 0
    kill -USR1 "$PSERVER_PID"
    wait_for 10 pstate_is pushed 2000
    wait_for 10 pstate_is busy 0
    open_window
    kill -USR1 "$PSERVER_PID"
    wait_for 30 client_said 'push window reached all 1000 reading connections'
    end_client
    # SEQ 1, 3, 4 on each: 3 lines, 1 missing; "push x 1 .\n" (11 bytes) is bad
    run json "$JSON" 'j["push_received"], j["push_missing"], j["push_bad"], j["push_bytes"]'
    assert_output "3000 1000 1000 $((3000 * 100 + 1000 * 11))"
}

@test "--stall-on-signal: 10% of each worker's connections stop reading on SIGUSR2; the rest are reached" {
    need_ns
    start_push_server 9303 --bytes 300
    start_client --connections 2000 --workers 4 --port 9303 --hold inf --stall 0.1 --stall-on-signal --quiet
    wait_for 30 pstate_is conns 2000
    kill -USR1 "$PSERVER_PID"
    wait_for 10 pstate_is pushed 2000
    run client_said 'stalled'
    assert_failure
    kill -USR2 "$CLIENT_PID"
    wait_for 10 client_said '^c1m-client: stalled 200 connections at [0-9]+ us$'
    open_window
    kill -USR1 "$PSERVER_PID"
    wait_for 10 pstate_is pushed 4000
    wait_for 30 client_said 'push window reached all 1800 reading connections'
    # the stalled connections keep the second line unread: exactly 200 client
    # sockets (those towards port 9303) have bytes in their receive queue
    wait_for 10 bash -c "[ \"\$(ip netns exec $TEST_NS ss -tnH state established '( dport = :9303 )' | awk '\$1 > 0' | wc -l)\" = 200 ]"
    # and are still open (the client never looks at them again)
    [ "$(in_ns ss -tnH state established '( dport = :9303 )' | wc -l)" = 2000 ]
    end_client
    run json "$JSON" 'j["stalled"], j["push_window"]["reached"], j["open_at_end"], j["stall_at_us"] > 0'
    assert_output "200 1800 2000 True"
    # 1800 reading connections got both lines; a stalled one may have read the first
    run json "$JSON" '3600 <= j["push_received"] <= 3800 and j["push_missing"] == 0'
    assert_output True
}

@test "--stall without --stall-on-signal stalls at the start of the hold; --stall 0 stalls nothing" {
    need_ns
    start_push_server 9304 --bytes 64
    start_client --connections 400 --workers 2 --port 9304 --hold 2 --stall 0.25 --quiet
    local rc=0
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    [ "$rc" = 0 ]
    client_said '^c1m-client: stalled 100 connections at [0-9]+ us$'
    run json "$JSON" 'j["stalled"]'
    assert_output 100
    start_client --connections 400 --workers 2 --port 9304 --hold 1 --stall 0 --quiet
    rc=0
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    [ "$rc" = 0 ]
    run client_said 'stalled'
    assert_failure
    run json "$JSON" 'j["stalled"], j["stall_at_us"]'
    assert_output "0 None"
}

# real_push_counts NAME CMD...: the real server CMD (--push 256, SIGUSR1 only)
# with 2000 connections over several workers: the client's counts equal the
# server's `pushed` counter after three broadcasts.
real_push_counts() {
    shift   # the name: for the reader
    start_server "$STATS" "$@" --port 9310 --max-conns 2000 --worker-conns 700 --push 256
    local workers
    workers=$(worker_pids "$STATS" | tr '\n' ' ')
    [ "$(wc -w <<<"$workers")" -ge 3 ]
    start_client --connections 2000 --workers 4 --port 9310 --hold inf --heartbeat 1 --quiet
    wait_for 30 stat_is "$STATS" open 2000
    # shellcheck disable=SC2086
    kill -USR1 $workers
    wait_for 20 stat_is "$STATS" pushed 2000
    # shellcheck disable=SC2086
    kill -USR1 $workers
    wait_for 20 stat_is "$STATS" pushed 4000
    open_window
    # shellcheck disable=SC2086
    kill -USR1 $workers
    wait_for 20 stat_is "$STATS" pushed 6000
    wait_for 30 client_said 'push window reached all 2000 reading connections'
    end_client
    # the pong matcher still works between push lines
    run json "$JSON" 'j["push_received"], j["push_missing"], j["push_bad"], j["push_bytes"], j["heartbeat"]["pongs"] > 0'
    assert_output "$("$STAT" --get pushed "$STATS") 0 0 $((6000 * 256)) True"
}

@test "push: c1m-server's pushed counter equals the client's count (2000 connections, 3 workers)" {
    need_ns
    need_server_push
    real_push_counts c "$SERVER"
}

@test "push: asyncio-protocol's pushed counter equals the client's count (2000 connections, 3 workers)" {
    need_ns
    need_server_push
    real_push_counts asyncio-protocol "$PYTHON" -m py_server --loop asyncio --api protocol
}

# fair_p99 STALL CMD...: one run of 5000 connections against the server CMD
# pushing 1 KiB every $every s (its default --sndbuf 4096 and --max-pending
# 4096) over a $hold s hold (fairness's): the client's push latency p99 in
# microseconds (of the connections that read), and how many it stalled.
fair_p99() {
    local stall=$1; shift
    rm -f "$STATS" "$JSON"
    start_server "$STATS" "$@" --port 9320 --max-conns 5000 --worker-conns 2500 --push 1024 --push-every "$every"
    start_client --connections 5000 --workers 5 --port 9320 --hold "$hold" --stall "$stall" --quiet
    local rc=0
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    SLOW=$("$STAT" --get slow "$STATS")
    stop_pid "$SERVER_PID"
    SERVER_PID=
    [ -s "$JSON" ] || { cat "$BATS_TEST_TMPDIR/client.err" >&2; return 1; }
    read -r P99 STALLED RECEIVED < <(json "$JSON" 'j["push_latency_us"]["p99"], j["stalled"], j["push_received"]')
}

# fairness NAME HOLD EVERY CMD...: the issue's test (NAME: for the line it prints). A
# small receive buffer in the namespace (tcp_rmem 4096 for the client's
# sockets) fills a stalled connection's queues within seconds at this rate, so
# the server meets full queues (and cuts them as slow) during the run. Two
# rounds, no stall and 10% stalled alternating (A B A B): on a shared 2-vCPU
# machine one run's p99 alone varies several-fold (c1m-server's no-stall p99
# was seen anywhere from 56 to 352 ms here under other suites' load), so the
# better stalled run must stay within 2x the worse no-stall run, plus 10 ms.
# A server that lets stalled peers hold up the others fails both rounds.
# The second round runs only when the first did not pass: another round can
# only raise the worse no-stall p99 and lower the better stalled one, so a
# verdict that holds after one round holds after two.
fairness() {
    local name=$1 hold=$2 every=$3; shift 3
    local base=0 best="" base_rx rounds=""
    RMEM_SAVED=$(in_ns sysctl -n net.ipv4.tcp_rmem | tr -s '\t ' ' ')
    in_ns sysctl -q -w net.ipv4.tcp_rmem="4096 4096 4096" >/dev/null
    for r in 1 2; do
        fair_p99 0 "$@"
        [ "$STALLED" = 0 ]
        [ "$RECEIVED" -gt 40000 ]
        [ "$P99" -gt "$base" ] && base=$P99
        rounds+=" no-stall ${P99} us ($RECEIVED lines),"
        fair_p99 0.1 "$@"
        [ "$STALLED" = 500 ]
        [ "$RECEIVED" -gt 36000 ]
        { [ -z "$best" ] || [ "$P99" -lt "$best" ]; } && best=$P99
        rounds+=" 10% stalled ${P99} us ($RECEIVED lines, $SLOW cut as slow);"
        [ "$best" -gt $((2 * base + 10000)) ] || break
    done
    echo "# $name p99:$rounds bound $((2 * base + 10000)) us" >&3
    [ "$best" -le $((2 * base + 10000)) ]
}

# make test judges c1m-server, smaller: 4 s at a line every 0.2 s, scaled from
# 10 s at 0.5 s (2.5x the rate, 2.5x shorter): the same ~100,000 lines a run
# for the p99, and a stalled peer's queues (~12 KiB: 4 KiB receive buffer, 8 KiB
# send buffer, --max-pending) still fill at ~60% of the hold, so the server
# meets them full and cuts them within the run; 5000 connections (500 stalled)
# as the issue asked. make test-long runs both contenders at the full size
# (asyncio-protocol at 2.5x the rate failed 1 run in 4 on this shared machine,
# loaded by other suites: the full size stays its judgement).
@test "fairness: with 10% stalled, the reading 90% keep their p99 delivery latency within 2x (c, 5000 connections)" {
    need_ns
    need_server_push
    fairness c 4 0.2 "$SERVER"
}

# bats test_tags=long
@test "fairness: with 10% stalled, the reading 90% keep their p99 delivery latency within 2x (c, 5000 connections, 10 s)" {
    long_test
    need_ns
    need_server_push
    fairness c 10 0.5 "$SERVER"
}

# bats test_tags=long
@test "fairness: with 10% stalled, the reading 90% keep their p99 delivery latency within 2x (asyncio-protocol, 5000)" {
    long_test
    need_ns
    need_server_push
    fairness asyncio-protocol 10 0.5 "$PYTHON" -m py_server --loop asyncio --api protocol
}

# stalled_sendq NAME CMD...: 200 connections against the server CMD pushing 1 KiB
# every 10 ms with its defaults (--sndbuf 4096: an 8,192-byte send buffer;
# --max-pending 4096), every one stalled at the start of the hold, the
# client's receive buffers at 128 KiB (tcp_rmem in the namespace, fixed: the
# tuned profile's default without its autotuning), so that the queues fill
# within ~2 s and the kernel's packet size goal is large (~51 KB, half the
# peer's window: room for the 17 appends that a small window would cap).
# Once the server has cut all 200 as slow (the closed sockets keep their
# queues: the peer's window stays shut), the most any of its sockets holds:
# MAXQ bytes of Send-Q, MAXW charged (skmem w).
stalled_sendq() {
    local name=$1; shift
    RMEM_SAVED=$(in_ns sysctl -n net.ipv4.tcp_rmem | tr -s '\t ' ' ')
    in_ns sysctl -q -w net.ipv4.tcp_rmem="4096 131072 131072" >/dev/null
    start_server "$STATS" "$@" --port 9330 --max-conns 200 --worker-conns 120 --push 1024 --push-every 0.01
    start_client --connections 200 --workers 2 --port 9330 --hold inf --stall 1 --quiet
    wait_for 30 client_said '^c1m-client: stalled 200 connections at [0-9]+ us$'
    wait_for 30 stat_is "$STATS" slow 200
    read -r NSOCK MAXQ MAXW < <(in_ns ss -tmnH state connected '( sport = :9330 )' | awk '
        { for (i = 1; i <= NF; i++)
              if ($i ~ /^skmem:\(/ && match($i, /[(,]w[0-9]+/)) { v = substr($i, RSTART + 2, RLENGTH - 2) + 0; if (v > w) w = v }
          q = ""
          if ($1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/) q = $2
          else if ($2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/) q = $3
          if (q != "") { n++; if (q + 0 > mq) mq = q + 0 } }
        END { print n + 0, mq + 0, w + 0 }')
    echo "# $name: $NSOCK server sockets left, the largest Send-Q $MAXQ B, skmem w $MAXW B" >&3
    end_client || true
}

@test "a stalled peer pins at most c1m-server's send buffer (MSG_EOR), not 17 pushes of 1 KiB" {
    need_ns
    need_server_push
    stalled_sendq c "$SERVER"
    # the closed sockets still hold their queues: ss sees them
    [ "$NSOCK" -ge 100 ]
    # Before aa06dfa (no MSG_EOR, several waiting pushes in one send()): 33,793
    # B of Send-Q; MSG_EOR with such batches: 28,033 B. The kernel
    # checks SO_SNDBUF before each new packet, so the charge may pass it by
    # one packet (~1.1 KB for a 1 KiB message).
    [ "$MAXQ" -ge 1024 ] && [ "$MAXQ" -le 8192 ]
    [ "$MAXW" -le $((8192 + 2048)) ]
}

@test "a stalled peer pins at most pyext's send buffer (MSG_EOR in c1m.Transport.write), not 17 pushes" {
    need_ns
    need_server_push
    if [ "${SANITIZE:-0}" = 1 ]; then
        # an ASan extension in an uninstrumented interpreter (py_server.bats)
        stalled_sendq pyext env LD_PRELOAD="$(gcc -print-file-name=libasan.so)" \
            ASAN_OPTIONS="detect_leaks=0:exitcode=99$SAN_LOG" "$PYTHON" -m py_server --loop c1m --api protocol
    else
        stalled_sendq pyext "$PYTHON" -m py_server --loop c1m --api protocol
    fi
    [ "$NSOCK" -ge 100 ]
    # Without MSG_EOR: 35,649 B of Send-Q. pyext's transport flushes what it
    # buffered (at most --max-pending and a message) in one send(), one packet:
    # up to 4 KiB more than c's one message per send().
    [ "$MAXQ" -ge 1024 ] && [ "$MAXQ" -le $((8192 + 4096)) ]
    [ "$MAXW" -le $((8192 + 4096 + 2048)) ]
}

# scenario_refuses SCENARIO KNOB=VALUE...: the scenario's check refuses the
# setting, naming the knob (what bench.sh and run_one.sh call first).
scenario_refuses() {
    local sc=$1; shift
    run env "$@" bash -c 'C1M_ROOT=$1; source "$1/harness/lib/common.sh"; source "$1/harness/lib/scenarios/idle.sh"
                          source "$1/harness/lib/scenarios/$2.sh"; scenario_check' _ "$C1M_ROOT" "$sc"
    assert_failure
    assert_output --partial "${1%%=*}:"
}

@test "sendq-probe: what a never-reading peer pins in the server's send queue; bad flags exit 2 naming them" {
    need_ns
    # smallest: 5 connections, a line every 5 ms read for 0.5 s then not for 2 s
    # (was 10 ms, 2.5 s): ~400 KB offered fills the tuned profile's 128 KiB
    # receive buffer with room to spare (1.5 s was short once on a loaded
    # machine: the pacing loop late), so every combination ends with a Send-Q
    run "$C1M_ROOT/harness/sendq-probe" --conns 5 --sndbuf 4096 --rcvbuf 4096,0 --eor 0,1 --paced 0.005,0.5,2 --json
    assert_success
    run "$PYTHON" -c '
import json, sys
j = json.loads(sys.argv[1])
want = [" ".join(l.split("=", 1)[1].split()) for l in open(sys.argv[2])
        if l.split("=", 1)[0].strip() == "net.ipv4.tcp_rmem"]
assert [j["profile"]["net.ipv4.tcp_rmem"]] == want, (j["profile"], want)
assert sorted((r["rcvbuf_set"], r["eor"]) for r in j["results"]) == [(0, 0), (0, 1), (4096, 0), (4096, 1)]
for r in j["results"]:
    assert len(r["sockets"]) == 5, r
    for s in r["sockets"]:
        # the peer never read after the first half second: what the server wrote
        # since is in its send queue or in the peer receive queue
        assert s["sndbuf"] == 8192 and s["sendq"] > 0 and s["peer_recvq"] > 0, s
        assert s["wmem_queued"] >= s["sendq"], s
        if r["eor"]:    # each write its own packet: SO_SNDBUF bounds the queue
            assert s["sendq"] <= 8192, (r["rcvbuf_set"], s)
print("ok")' "$output" "$C1M_ROOT/harness/kernel-profile.conf"
    assert_output ok
    for bad in "--sndbuf x" "--rcvbuf -1" "--conns 0" "--conns 5,10" "--push 31" "--push 64,128" \
               "--pause 0" "--paced 1,2" "--paced 0,1,1" "--eor 2"; do
        # shellcheck disable=SC2086
        run "$C1M_ROOT/harness/sendq-probe" $bad
        assert_failure 2
        assert_output --partial "${bad%% *}"
    done
}

# scenario_phase SCENARIO VARIANT: its scenario_run against a client that is
# gone (a pid that no longer runs) in a run otherwise ok; prints the status
# and the note it leaves.
scenario_phase() {
    local sc=$1 variant=$2
    bash -c 'C1M_ROOT=$1; source "$1/harness/lib/common.sh"; source "$1/harness/lib/probe.sh"
             source "$1/harness/lib/scenarios/idle.sh"; source "$1/harness/lib/scenarios/$2.sh"
             declare -A R=([status]=ok) O=()
             scenario=$2 variant=$3 contender=c out=$4 stats=$4/none.stats pids="" BUILD=$5
             sleep 0 & cpid=$!; wait "$cpid"          # a client that has exited
             scenario_run 2>/dev/null
             echo "${O[scenario_status]:-ok}|${R[note]}"' _ "$C1M_ROOT" "$sc" "$variant" "$BATS_TEST_TMPDIR" "$C1M_BUILD"
}

@test "push and stall: a phase that could not happen (the client gone) leaves the run scenario-failed, never ok" {
    run scenario_phase push ""
    assert_success
    assert_output "scenario-failed|push: the client is gone"
    run scenario_phase stall stall=0.1
    assert_success
    assert_output "scenario-failed|stall: the client is gone"
}

@test "push: a worker dead before the broadcast (health check, or a counters-file pid no longer the server's) is server-died; nothing signalled" {
    run timeout 60 bash -c 'C1M_ROOT=$1; source "$1/harness/lib/common.sh"; source "$1/harness/lib/probe.sh"
        source "$1/harness/lib/scenarios/idle.sh"; source "$1/harness/lib/scenarios/push.sh"
        declare -A R=([status]=ok) O=()
        scenario=push contender=c out=$2 stats=$2/none.stats BUILD=$3 PUSH_WAIT=1 conns=1
        sleep 30 & other=$!                 # an unrelated process (a reused pid)
        (sleep 30 & wait) & spid=$!         # the server, and its worker
        sleep 30 & cpid=$!                  # the client (SIGUSR1 ends a sleep)
        echo "c1m-client: SIGUSR1: push window open from 1 us" > "$out/client.log"
        for i in $(seq 50); do worker=$(ps -o pid= --ppid "$spid" | tr -d " "); [ -n "$worker" ] && break; sleep 0.1; done
        push_worker_pids() { echo "$worker"; echo "$other"; }
        # a worker the health check found dead: no signal, not even to the client
        h_dead=1 h_parent_gone=0
        scenario_run 2>/dev/null
        echo "${O[scenario_status]:-ok}|${R[note]}"
        kill -0 "$cpid" && echo "client alive"
        # a pid of the counters file that is not the server'"'"'s: SIGUSR1 to none of them
        R=([status]=ok) O=() h_dead=0
        scenario_run 2>/dev/null
        echo "${O[scenario_status]:-ok}|${R[note]/$other/OTHER}"
        kill -0 "$worker" && echo "worker alive"
        kill -0 "$other" && echo "other alive"
        kill "$other" "$worker" "$spid" "$cpid" 2>/dev/null; wait' _ "$C1M_ROOT" "$BATS_TEST_TMPDIR" "$C1M_BUILD"
    assert_success
    assert_output "server-died|push: server died before the broadcast: 1 worker(s) dead; no broadcast
client alive
server-died|push: server died before the broadcast: worker pid(s) OTHER of the counters file no longer a live process of the server; no broadcast
worker alive
other alive"
}

@test "push and stall scenarios: every bad knob is refused naming it; the defaults pass; variants" {
    scenario_refuses push PUSH_BYTES=1026
    scenario_refuses push PUSH_BYTES=31
    scenario_refuses push PUSH_BYTES=x
    scenario_refuses push PUSH_EVERY=-1
    scenario_refuses push PUSH_EVERY=1e3
    scenario_refuses push PUSH_EVERY=0.0001
    scenario_refuses push PUSH_EVERY=0 PUSH_BROADCAST=0
    scenario_refuses push PUSH_BURST=yes
    scenario_refuses push PUSH_BURST=1 PUSH_EVERY=0
    scenario_refuses push PUSH_BROADCAST=2
    scenario_refuses push PUSH_WAIT=0
    scenario_refuses stall STALL=1.5
    scenario_refuses stall STALL=-0.1
    scenario_refuses stall STALL=0.1,x
    scenario_refuses stall STALL=,
    scenario_refuses stall STALL_SNDBUF=4096
    scenario_refuses stall STALL_PUSH_BYTES=2000
    scenario_refuses stall STALL_PUSH_EVERY=0
    scenario_refuses stall STALL_WAIT=0
    scenario_refuses stall STALL_STEADY=1
    scenario_refuses stall STALL_PUSH_FLOW=naive
    local sc
    for sc in push stall; do
        run bash -c 'C1M_ROOT=$1; source "$1/harness/lib/common.sh"; source "$1/harness/lib/scenarios/idle.sh"
                     source "$1/harness/lib/scenarios/$2.sh"; scenario_check' _ "$C1M_ROOT" "$sc"
        assert_success
    done
    run bash -c 'C1M_ROOT=$1; source "$1/harness/lib/common.sh"; source "$1/harness/lib/scenarios/idle.sh"
                 source "$1/harness/lib/scenarios/stall.sh"; scenario_variants
                 variant=stall=0.01-sndbuf0; echo "server: $(scenario_server_args)"; echo "client: $(scenario_client_args)"
                 variant=stall=0; echo "client0: [$(scenario_client_args)]"
                 echo "needs: $(scenario_needs | tr "\n" " ")"
                 STALL_PUSH_FLOW=ignore; variant=stall=0.1; echo "ignore: $(scenario_server_args)"
                 echo "needs: $(scenario_needs | tr "\n" " ")"
                 source "$1/harness/lib/contenders.sh"
                 for c in c pyext asyncio-protocol asyncio-streams uvloop floor; do
                     contender_supports "$c" push-flow && echo "$c: push-flow"; done; true' _ "$C1M_ROOT"
    assert_success
    assert_output "stall=0.01
stall=0.01-sndbuf0
stall=0.1
stall=0.1-sndbuf0
server: --push 1024 --push-every 1 --sndbuf 0 
client: --stall 0.01 --stall-on-signal
client0: []
needs: push 
ignore: --push 1024 --push-every 1 --push-flow ignore 
needs: push push-flow 
pyext: push-flow
asyncio-protocol: push-flow
asyncio-streams: push-flow
uvloop: push-flow"
}

@test "stall: the memory guard counts MemAvailable less the reclaimable slab (open sockets' inodes and dentries cannot be reclaimed)" {
    local m=$BATS_TEST_TMPDIR/meminfo
    # asyncio-streams at 1M, 10% stalled, at the kernel's OOM kill: MemAvailable
    # read 2,011 MiB with 2.0 GiB of it the open sockets' slab
    printf 'MemTotal:       24684596 kB\nMemFree:          316444 kB\nMemAvailable:    2059264 kB\nSReclaimable:    2115076 kB\n' > "$m"
    usable() { PYTHONPATH=$C1M_ROOT "$PYTHON" -c 'import sys; from py_server import cli_rules; print(cli_rules.mem_usable_kib(sys.argv[1]))' "$1"; }
    run usable "$m"
    assert_output 0
    printf 'MemAvailable:    2059264 kB\nSReclaimable:      53780 kB\n' > "$m"
    run usable "$m"
    assert_output 2005484
    printf 'MemAvailable:    2059264 kB\n' > "$m"     # no SReclaimable line: MemAvailable
    run usable "$m"
    assert_output 2059264
    printf 'MemFree:          316444 kB\n' > "$m"     # no MemAvailable: nothing, never a made-up 0
    run usable "$m"
    assert_output None
    # the stall phase's monitor guards on it (its rules: tests/py/test_stallmon.py)
    grep -q 'cli_rules.meminfo_usable_kib' "$C1M_ROOT/harness/lib/stallmon.py"
}

# bench_scenario SCENARIO OUT ENV...: bench.sh at 2k for c and asyncio-protocol.
# smallest: 2k over 3 workers, a 2 s hold (two heartbeats), no quiet gate, no
# calibration and no settling, in a run or between runs (MEM_SETTLE=0,
# SETTLE_MAX=0: they wait 3 s and >= 1 s for the server's RSS and the machine's
# Slab, which no assertion here reads; the stall's figures are its phase's own).
bench_scenario() {
    local sc=$1 out=$2; shift 2
    run env "$@" SCENARIO="$sc" TIERS=2k CONTENDERS="${BENCH_CONTENDERS:-c,asyncio-protocol}" HOLD=2 HEARTBEAT=1 \
        SERVER_WORKER_CONNS=700 CLIENT_WORKER_CONNS=700 OUT="$out" BUILD="$C1M_BUILD" PYTHON="$PYTHON" \
        DISTURB_PCT=100 INIT_PCT=100 QUIET_CPU_PCT=100 QUIET_MAX=0 SETTLE_MAX=0 MEM_SETTLE=0 CALIBRATE=0 \
        "$C1M_ROOT/harness/bench.sh"
    assert_success
}

@test "SCENARIO=push end to end (2k, c and asyncio-protocol): push columns, broadcast, report and plots" {
    need_ns
    need_server_push
    local out=$BATS_TEST_TMPDIR/push-results
    bench_scenario push "$out" PUSH_BYTES=256 PUSH_EVERY=1 PUSH_WAIT=60
    run "$PYTHON" - "$out/runs.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2, rows
for r in rows:
    name = r["contender"]
    # a busy machine may flag a run (disturbance): never for a push figure
    assert r["status"] in ("ok", "disturbed", "suspect"), (name, r["status"], r.get("note"))
    assert not [f for f in str(r.get("flags") or "").split(";") if "push" in f or "broadcast" in f], name
    assert r["scenario"] == "push", name
    assert r["push_received"] > 0 and r["push_missing"] == 0 and r["push_bad"] == 0, (name, r)
    assert r["push_bytes"] == 256 * r["push_received"], name
    # the server's count is read once the client stopped: every line received is in it
    assert r["push_received"] >= 2000 and r["push_pushed"] >= r["push_received"], (name, r.get("push_pushed"))
    assert "push:" not in str(r.get("note") or ""), (name, r.get("note"))
    assert 0 <= r["push_p50_ms"] <= r["push_p99_ms"] <= r["push_max_ms"], name
    assert r["broadcast_reached"] == 2000 and 0 < r["broadcast_s"] < 60, (name, r.get("broadcast_s"))
    assert r["push_bytes_cfg"] == 256, name
    assert r.get("outside_scenario_pct") is not None, (name, r.get("flags"))   # the broadcast's window
    # the schedule over the 2 s hold: 2,000 lines a second due (a server
    # catching up after the ramp sends more)
    assert 0.9 <= r["push_kept"] <= 2 and r["push_kept_due"] >= 3000, (name, r.get("push_kept"), r.get("push_kept_due"))
    assert 0 <= r["push_kept_stale_ms"] < 200, (name, r.get("push_kept_stale_ms"))   # published at 10-20 Hz
    # weighted by connections: never over the oldest worker's age; fresh
    # counters bound kept within a few thousandths
    assert 0 <= r["push_kept_lag_ms"] <= r["push_kept_stale_ms"], (name, r.get("push_kept_lag_ms"))
    assert r["push_kept_hi"] - r["push_kept_lo"] < 0.05, (name, r.get("push_kept_lo"), r.get("push_kept_hi"))
# the plots draw the runs that count (ok, else disturbed): a suspect run has none
print("ok", "plots" if [r for r in rows if r["status"] in ("ok", "disturbed")] else "no-plots")
EOF
    assert_line --regexp '^ok (plots|no-plots)$'
    if [ "$output" = "ok plots" ]; then
        for f in plots/push_broadcast.png plots/push_broadcast.svg plots/push_latency.png; do
            [ -s "$out/$f" ] || fail "missing $f"
        done
    fi
    grep -q '^## Server push' "$out/report.md"
}

@test "SCENARIO=push: a server asked for more lines than it can send is push-behind, however fresh its stamps" {
    need_ns
    need_server_push
    local out=$BATS_TEST_TMPDIR/behind-results
    # a line to each of 2,000 connections every millisecond: 2M lines a
    # second, ~15 times what c sends here (~130,000 a second)
    # smallest: c alone (its stamps are the freshest: formatted at send()); the
    # verdict is the harness's, from any server's `pushed` against the schedule,
    # and asyncio-protocol's own schedule is judged in SCENARIO=push end to end
    BENCH_CONTENDERS=c bench_scenario push "$out" PUSH_BYTES=256 PUSH_EVERY=0.001 PUSH_BROADCAST=0
    run "$PYTHON" - "$out/runs.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 1, rows
for r in rows:
    name = r["contender"]
    assert r["status"] == "push-behind", (name, r["status"], r.get("note"))
    assert r["push_kept"] < 0.9 and r["push_kept_sent"] < 0.9 * r["push_kept_due"], (name, r.get("push_kept"))
    assert "behind its schedule" in r["note"] and ("sent %d of the %d lines" % (r["push_kept_sent"], r["push_kept_due"])) in r["note"], (name, r["note"])
    # what the latency alone would have said: lines delivered, none missing
    assert r["push_received"] > 0 and r["push_missing"] == 0, name
print("ok")
EOF
    assert_output "ok"
}

# make test-long: a bench.sh suite of its own (~18 s); make test keeps the
# broadcast in the harness ("SCENARIO=push end to end": c's broadcast_reached),
# the floor's SIGUSR1 broadcast (floor.bats) and c1m-server's (push_server.bats)
# bats test_tags=long
@test "SCENARIO=push PUSH_EVERY=0: the broadcast alone, timed on the floor (one send() per connection) and on c; a contender without it unsupported" {
    long_test
    need_ns
    need_server_push
    local out=$BATS_TEST_TMPDIR/broadcast-results
    BENCH_CONTENDERS=floor,c,libuv bench_scenario push "$out" PUSH_BYTES=1024 PUSH_EVERY=0 PUSH_WAIT=60
    run "$PYTHON" - "$out/runs.jsonl" <<'EOF'
import json, sys
rows = {r["contender"]: r for r in map(json.loads, open(sys.argv[1]))}
assert sorted(rows) == ["c", "floor", "libuv"], rows
assert rows["libuv"]["status"] == "unsupported" and "broadcast" in rows["libuv"]["note"], rows["libuv"]
for name in ("floor", "c"):
    r = rows[name]
    assert r["status"] in ("ok", "disturbed", "suspect"), (name, r["status"], r.get("note"))
    # one line per connection, the broadcast's: nothing paced
    assert r["push_received"] == 2000 and r["push_missing"] == 0 and r["push_bad"] == 0, (name, r)
    assert r["broadcast_reached"] == 2000 and 0 < r["broadcast_s"] < 60, (name, r.get("broadcast_s"))
    assert r["push_pushed"] == 2000, (name, r.get("push_pushed"))
print("ok")
EOF
    assert_output "ok"
}

# make test-long: two 10 s stall phases (~38 s); make test keeps --push-flow
# ignore on the servers (python.bats: push parity's test_k on asyncio-protocol
# and c1m: never cut, held far over --max-pending; c1m-server refusing it)
# bats test_tags=long
@test "SCENARIO=stall STALL_PUSH_FLOW=ignore (2k, 10% stalled): the naive idiom's buffer grows, never steady, nothing cut; c unsupported" {
    long_test
    need_ns
    need_server_push
    local out=$BATS_TEST_TMPDIR/stall-ignore
    # 201 stalled peers x 1 KiB every 10 ms: ~20 MB a second piles up in the
    # servers' transports (the bounded idiom cuts them within seconds)
    BENCH_CONTENDERS=c,asyncio-protocol,asyncio-streams bench_scenario stall "$out" STALL=0.1 \
        STALL_SNDBUF=default STALL_PUSH_BYTES=1024 STALL_PUSH_EVERY=0.01 STALL_PUSH_FLOW=ignore \
        STALL_WAIT=10 STALL_STEADY=4
    run "$PYTHON" - "$out/runs.jsonl" <<'EOF'
import json, sys
rows = {r["contender"]: r for r in map(json.loads, open(sys.argv[1]))}
assert sorted(rows) == ["asyncio-protocol", "asyncio-streams", "c"], rows
assert rows["c"]["status"] == "unsupported" and "push-flow" in rows["c"]["note"], rows["c"]
for name in ("asyncio-protocol", "asyncio-streams"):
    r = rows[name]
    assert r["stall_push_flow"] == "ignore", (name, r.get("stall_push_flow"))
    assert "--push-flow ignore" in r["server_cmd"], (name, r["server_cmd"])
    # still growing at STALL_WAIT (or stopped by the guard): never "steady",
    # and no stalled peer cut as slow
    assert r["stall_end"] in ("wait", "oom-guard"), (name, r["stall_end"], r.get("note"))
    assert r["stall_cut"] == 0, (name, r.get("stall_cut"))
    # far over --max-pending (4096) per stalled peer, in the server's userspace
    assert r["stall_user_bytes_per_stalled"] > 64 * 1024, (name, r.get("stall_user_bytes_per_stalled"))
    # the naive idiom owes the stalled peers their lines too: every connection
    # is due one per 10 ms (not the readers alone, which would inflate kept)
    assert r["push_kept_due"] >= 0.97 * 2000 * r["push_kept_window_s"] / 0.01, (name, r.get("push_kept_due"))
print("ok")
EOF
    assert_output "ok"
    grep -q 'in the naive idiom (`STALL_PUSH_FLOW=ignore`' "$out/report.md"
}

@test "SCENARIO=stall end to end (2k, 10% stalled, c and asyncio-protocol): stall columns, report and plot" {
    need_ns
    need_server_push
    local out=$BATS_TEST_TMPDIR/stall-results small=$BATS_TEST_TMPDIR/small-rmem.conf
    # The tuned profile with 4 KiB receive buffers: a stalled peer's queues fill
    # within ~2 s at this rate (with tuned's 128 KiB, ~15 s), so the phase
    # ends with the slow cuts instead of waiting them out.
    sed 's/^net\.ipv4\.tcp_rmem *=.*/net.ipv4.tcp_rmem = 4096 4096 4096/' \
        "$C1M_ROOT/harness/kernel-profile.conf" > "$small"
    grep -q '^net.ipv4.tcp_rmem = 4096 4096 4096$' "$small"
    bench_scenario stall "$out" C1M_PROFILE_FILE="$small" STALL=0.1 STALL_SNDBUF=default \
        STALL_PUSH_BYTES=1024 STALL_PUSH_EVERY=0.1 STALL_WAIT=20 STALL_STEADY=5
    run "$PYTHON" - "$out/runs.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2, rows
for r in rows:
    name = r["contender"]
    assert r["status"] in ("ok", "disturbed", "suspect", "oom-guard", "push-behind"), (name, r["status"], r.get("note"))
    assert not [f for f in str(r.get("flags") or "").split(";") if "stall" in f or "push" in f], name
    # the schedule from the hold to the phase's end, the stalled owed nothing
    # until cut: push-behind exactly when under 0.9 of it was sent
    assert r["push_kept_due"] > 0 and r["push_kept_stale_ms"] >= r["push_kept_lag_ms"] >= 0, (name, r.get("push_kept_due"))
    assert r["push_kept_lo"] <= r["push_kept"] <= r["push_kept_hi"], (name, r.get("push_kept_lo"), r.get("push_kept_hi"))
    if r["status"] in ("ok", "disturbed", "suspect", "push-behind"):
        assert (r["push_kept"] < 0.9) == (r["status"] == "push-behind"), (name, r.get("push_kept"), r["status"])
    assert r["condition"] == "stall=0.1" and r["stall_fraction"] == 0.1, name
    # round(0.1 x share) in each of the 3 client workers (667, 667, 666)
    assert r["stalled"] == 201, (name, r.get("stalled"))
    assert r["stall_end"] in ("cut", "steady", "wait", "oom-guard"), name
    assert r["stall_steady_s"] == 5, (name, r.get("stall_steady_s"))   # STALL_STEADY over 14 x 0.1 s
    assert r["stall_tcp_mem_bytes_per_stalled"] > 0, (name, r.get("stall_tcp_mem_bytes_per_stalled"))
    assert r["stall_user_bytes_per_stalled"] >= 0 and r["stall_ss_s"] >= 0, name
    # MemAvailable before the stall and its low during the phase (KiB), and
    # what the machine lost per stalled connection
    assert r["stall_avail0_kib"] > 0 and 0 < r["stall_avail_min_kib"] <= r["stall_avail0_kib"], name
    assert r["stall_avail_drop_bytes_per_stalled"] == \
        (r["stall_avail0_kib"] - r["stall_avail_min_kib"]) * 1024 // r["stalled"], name
    # Not asserted: that the machine lost at least the server's charge. It is a
    # difference of machine-wide MemAvailable samples over 201 stalled peers:
    # another namespace being freed meanwhile (the previous test's) hides it
    # (CI, 2026-12-04: 1,202 B per stalled peer against 9,475 B charged).
    assert r["stall_ss_sockets"] >= 2000 - r["stall_cut"] - 1, name
    assert r["stall_sendq_bytes_per_stalled"] >= 0 and r["stall_wmem_bytes_per_stalled"] >= 0, name
    assert 0 <= r["stall_cut"] <= 2000, name
    if r["stall_cut"]:
        assert 0 <= r["stall_cut_first_s"] <= r["stall_cut_last_s"], name
    assert r["push_received"] > 0, name
print("ok", "plots" if [r for r in rows if r["status"] in ("ok", "disturbed", "oom-guard")] else "no-plots")
EOF
    assert_line --regexp '^ok (plots|no-plots)$'
    if [ "$output" = "ok plots" ]; then
        [ -s "$out/plots/stall_memory.png" ]
        [ -s "$out/plots/stall_memory.svg" ]
    fi
    grep -q '^## Stalled readers' "$out/report.md"
}
