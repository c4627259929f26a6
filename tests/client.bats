#!/usr/bin/env bats
# c1m-client: usage, failure accounting, JSON summary, workers, --min-available,
# SIGTERM during an infinite hold, connections closed by the server.
# Runs in a fresh network namespace (skips without root).

load helpers
load_bats_libs

setup() {
    STATS=$BATS_TEST_TMPDIR/server.stats
    JSON=$BATS_TEST_TMPDIR/client.json
    PORT=9000
}

@test "--help documents every flag and exits 0" {
    run "$CLIENT" --help
    assert_success
    for f in --connections --host --port --workers --worker-conns --src --inflight --rate \
             --connect-timeout --hold --heartbeat --min-available --json --quiet; do
        assert_output --partial -- "$f"
    done
    assert_output --partial "Exit status"
}

@test "usage errors exit 2 and name the flag" {
    # "args|flag named in the message"
    local cases=(
        "|--connections"
        "--connections 0|--connections"
        "--connections ten|--connections"
        "--connections 10 --port 70000|--port"
        "--connections 10 --port|--port"
        "--connections 10 --workers 0|--workers"
        "--connections 10 --workers many|--workers"
        "--connections 10 --worker-conns 0|--worker-conns"
        "--connections 10 --worker-conns 99999999|--worker-conns"
        "--connections 100 --workers 1 --worker-conns 10|--workers"
        "--connections 10 --src 127.0.0.9-127.0.0.2|--src"
        "--connections 10 --src 127.0.0.2 --host ::1|--src"
        "--connections 10 --inflight 0|--inflight"
        "--connections 10 --rate -1|--rate"
        "--connections 10 --connect-timeout 0|--connect-timeout"
        "--connections 10 --hold soon|--hold"
        "--connections 10 --heartbeat 0.001|--heartbeat"
        "--connections 10 --min-available -5|--min-available"
        "--connections 10 --host=|--host"
        "--connections 10 --json=|--json"
        "--connections 10 --json /nonexistent-dir/x.json|--json"
        "--connections 10 --quiet=yes|--quiet"
        "--connections 10 --bogus|--bogus"
        "--connections 10 stray|stray"
        "--connections +10|--connections"
        "--connections 10 --port=+9000|--port"
        "--connections 10 --rate 1.5|--rate"
        "--connections 10 --hold 1e2|--hold"
        "--connections 10 --host=hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh|--host"
    )
    local c args flag
    for c in "${cases[@]}"; do
        args=${c%|*} flag=${c#*|}
        # shellcheck disable=SC2086
        run "$CLIENT" $args
        echo "case: c1m-client $args" >&2
        assert_failure 2
        assert_output --partial -- "$flag"
        assert_output --partial "usage:"
    done
}

@test "no server: exit 1, every connect counted as ECONNREFUSED" {
    need_ns
    run in_ns "$CLIENT" --connections 50 --port "$PORT" --quiet --json "$JSON"
    assert_failure 1
    assert_output --partial "0/50 established, 50 failed"
    assert_output --partial "ECONNREFUSED 50"
    run json "$JSON" 'j["established"], j["failed"], j["failures"], j["time_to_established_s"]'
    assert_output "0 50 {'ECONNREFUSED': 50} None"
}

@test "--json has the documented fields" {
    need_ns
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2
    run in_ns "$CLIENT" --connections 300 --port "$PORT" --hold 1 --heartbeat 0.5 --quiet --json "$JSON"
    assert_success
    run "$PYTHON" - "$JSON" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
num = (int, float)
checks = {
    "target": lambda v: v == 300,
    "established": lambda v: v == 300,
    "failed": lambda v: v == 0,
    "failures": lambda v: v == {},
    "workers": lambda v: isinstance(v, int) and v >= 1,
    "time_to_established_s": lambda v: isinstance(v, num) and v > 0,
    "closed_by_peer": lambda v: v == 0,
    "cpu_user_s": lambda v: isinstance(v, num) and v >= 0,
    "cpu_sys_s": lambda v: isinstance(v, num) and v >= 0,
    "stopped_reason": lambda v: v is None,
}
bad = [k for k, ok in checks.items() if k not in j or not ok(j[k])]
lat = j.get("connect_latency_ms", {})
bad += ["connect_latency_ms." + k for k in ("p50", "p90", "p99", "max")
        if not isinstance(lat.get(k), num)]
if not bad and not lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]:
    bad.append("connect_latency_ms order")
hb = j.get("heartbeat", {})
bad += ["heartbeat." + k for k in ("sent", "pongs", "lost") if not isinstance(hb.get(k), int)]
if not bad and not (hb["sent"] >= 300 and 0 < hb["pongs"] <= hb["sent"] and hb["lost"] == 0):
    bad.append("heartbeat values %r" % hb)
# the histograms behind the percentiles, bucket by bucket (what remote runs merge)
hs = j.get("histograms", {})
for k in ("connect_us", "pong_us", "push_latency_us", "backoff_us"):
    h = hs.get(k)
    if not isinstance(h, dict) or sum(n for _, n in h.get("buckets", [])) != h.get("count"):
        bad.append("histograms." + k)
if not bad and (hs["connect_us"]["count"] != 300 or hs["pong_us"]["count"] != hb["pongs"]
                or hs["connect_us"]["max"] != round(lat["max"] * 1000)):
    bad.append("histogram values")
print("bad:", bad or "none")
EOF
    assert_output "bad: none"
}

@test "--worker-conns forces several workers" {
    need_ns
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2
    run in_ns "$CLIENT" --connections 1000 --port "$PORT" --worker-conns 300 --quiet --json "$JSON"
    assert_success
    assert_output --partial "1000/1000 established, 0 failed, 4 workers"
    run json "$JSON" 'j["workers"], j["established"]'
    assert_output "4 1000"
    [ "$("$STAT" --get accepted "$STATS")" -eq 1000 ]
}

@test "--min-available above the usable memory opens nothing and says so (exit 1)" {
    need_ns
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 1
    run in_ns "$CLIENT" --connections 100 --port "$PORT" --min-available 1000000000 --quiet --json "$JSON"
    assert_failure 1
    assert_output --partial "--min-available"
    assert_output --partial "(MemAvailable less the reclaimable slab) < --min-available 1000000000 MiB: opening no new connections"
    assert_output --partial "stopped                min-available"
    run json "$JSON" 'j["stopped_reason"], j["established"]'
    assert_output "min-available 0"
    [ "$("$STAT" --get accepted "$STATS")" -eq 0 ]
}

@test "SIGTERM during --hold inf: summary printed, exit 0 when all were established" {
    need_ns
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 500 --port "$PORT" --worker-conns 200 \
        --hold inf --json "$JSON" > "$BATS_TEST_TMPDIR/client.out" 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 500
    wait_for 10 client_holding   # in the hold, not the ramp: a normal end
    kill -TERM "$CLIENT_PID"
    rc=0; wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    run cat "$BATS_TEST_TMPDIR/client.out"
    [ "$rc" = 0 ]
    assert_output --partial "SIGTERM: stopping the workers"
    assert_output --partial "500/500 established, 0 failed, 3 workers"
    refute_output --partial "stopped "
    run json "$JSON" 'j["established"], j["closed_by_peer"], j["stopped_reason"]'
    assert_output "500 0 None"
    wait_for 5 stat_is "$STATS" open 0
}

@test "connections closed by the server during the hold: closed_by_peer, exit 1" {
    need_ns
    start_server "$STATS" "$SERVER" --port "$PORT" --workers 2
    (exec ip netns exec "$TEST_NS" "$CLIENT" --connections 400 --port "$PORT" --hold inf \
        --json "$JSON" > "$BATS_TEST_TMPDIR/client.out" 2>&1) &
    CLIENT_PID=$!
    wait_for 15 stat_is "$STATS" open 400
    wait_for 10 client_holding   # closed during the hold (before it, nothing is held)
    kill -TERM "$SERVER_PID"
    rc=0; wait "$SERVER_PID" || rc=$?
    SERVER_PID=
    [ "$rc" = 0 ]
    # the client closes each socket when it sees the server's close: nothing left
    wait_for 10 tcp_inuse_is 0
    kill -TERM "$CLIENT_PID"
    rc=0; wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=
    run cat "$BATS_TEST_TMPDIR/client.out"
    [ "$rc" = 1 ]
    assert_output --partial "400/400 established"
    assert_output --partial "closed by peer         400"
    run json "$JSON" 'j["established"], j["closed_by_peer"], j["open_at_end"]'
    assert_output "400 400 0"
}
