#!/usr/bin/env bats
# Runs over SSH (HOSTS=path, issue 11): three simulated hosts (network
# namespaces joined by veth through a bridge namespace, 198.51.100.0/24 inside
# them only, each with its own sshd: tests/remote_hosts.bash), the harness in a
# controller namespace. Bad hosts files and unusable hosts refused (exit 2,
# naming the line or the host) before anything starts; every contender at 5k
# over one server and two client hosts, with a port range and the profile
# applied to the hosts and put back (merged client summary, per-host table,
# the three end-of-hold counts); SIGINT mid-run and a client host lost mid-run
# (its sshd and sessions killed) leaving no process, counters file or setting
# behind; lib/clientmerge.py against the real client summaries.

load helpers
load_bats_libs
load remote_hosts

QUIET=(DISTURB_PCT=100 INIT_PCT=100 QUIET_CPU_PCT=100 QUIET_MAX=0)

setup_file() {
    [ "$(id -u)" = 0 ] && [ -x /usr/sbin/sshd ] && command -v ip >/dev/null || return 0
    export SIM_ROOT=$BATS_FILE_TMPDIR/sim
    sim_up "$SIM_ROOT" > "$BATS_FILE_TMPDIR/sim.log" 2>&1 || { echo "sim_up failed" >> "$BATS_FILE_TMPDIR/sim.log"; return 0; }
    echo up > "$BATS_FILE_TMPDIR/sim.ok"
}
teardown_file() {
    sim_down
}

setup() {
    HOSTS_FILE=$BATS_TEST_TMPDIR/hosts
    BENCH_PID=
}
teardown() {
    stop_pid "$BENCH_PID"
    check_sanitizer_logs
}

need_sim() {
    [ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
    [ -x /usr/sbin/sshd ] || skip "needs openssh-server (make test installs it)"
    [ -f "$BATS_FILE_TMPDIR/sim.ok" ] || fail "the simulated hosts did not come up: $(cat "$BATS_FILE_TMPDIR/sim.log")"
}

# hosts_file [EXTRA_CL2...]: server srv, clients cl1 (capacity 1) and cl2 (capacity 3)
hosts_file() {
    cat > "$HOSTS_FILE" <<EOF
# the simulated hosts of tests/remote.bats
server root@${SIM_ADDR[srv]}  dir=$SIM_ROOT/stage-srv
client root@${SIM_ADDR[cl1]}  src=${SIM_ADDR[cl1]} dir=$SIM_ROOT/stage-cl1
client root@${SIM_ADDR[cl2]}  src=${SIM_ADDR[cl2]} capacity=3 dir=$SIM_ROOT/stage-cl2 $*
EOF
}

# bench OUT VAR=value...: bench.sh in the controller namespace over HOSTS_FILE
bench() {
    local out=$1; shift
    (cd "$C1M_ROOT" && exec ip netns exec "$(sim_ns ctl)" env "${QUIET[@]}" HOSTS="$HOSTS_FILE" \
        TIERS=5k HOLD=1 HEARTBEAT=1 SERVER_WORKER_CONNS=1500 CLIENT_WORKER_CONNS=1500 OUT="$out" \
        PYTHON="$PYTHON" BUILD="$C1M_BUILD" SSH_OPTS="$SSH_OPTS" C1M_SSH_CTL="$C1M_SSH_CTL" \
        "$@" harness/bench.sh 3>&-)
}

# nothing_left: no process of a run on any host, no counters file, no staged-run temp file
nothing_left() {
    local name left=""
    for name in srv cl1 cl2; do left+=$(sim_pids_in "$name"); done
    [ -z "$left" ] || { echo "left on the hosts: $left" >&2; return 1; }
    ! compgen -G "/dev/shm/c1m-remote-*" >/dev/null || { echo "counters files: $(ls /dev/shm/c1m-remote-*)" >&2; return 1; }
    ! compgen -G "/tmp/c1m-remote-*" >/dev/null || { echo "temp files: $(ls /tmp/c1m-remote-*)" >&2; return 1; }
}

somaxconn_of() { ip netns exec "$(sim_ns "$1")" sysctl -n net.core.somaxconn; }

@test "remote: a bad hosts file or PORTS is refused (exit 2, the line named) before anything is created" {
    need_sim
    local out=$BATS_TEST_TMPDIR/bad
    check() {   # check EXPECTED_TEXT VAR=value...
        local want=$1; shift
        run bench "$out" "$@"
        [ "$status" = 2 ] || fail "status $status for $*: $output"
        assert_output --partial "$want"
        [ ! -e "$out/runs.csv" ] || fail "a runs.csv was written"
        nothing_left
    }
    printf 'server root@%s\nclient root@%s\nwizard root@x\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    check "line 3: unknown role 'wizard'"
    printf 'server root@%s\n' "${SIM_ADDR[srv]}" > "$HOSTS_FILE"
    check "at least one client line"
    printf 'client root@%s\n' "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    check "exactly one server line, found 0"
    printf 'server %s\nclient root@%s\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    check "line 1:"
    printf 'server root@%s\nclient root@%s capacity=-1\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    check "line 2: capacity"
    printf 'server root@%s:70000\nclient root@%s\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    check "line 1: 'root@${SIM_ADDR[srv]}:70000': ssh port 70000"
    hosts_file
    check "PORTS: expects" PORTS=9000-70000
    check "PORTS: expects" PORTS=9010-9000
    check "PORTS: set but empty" PORTS=
    check "HOSTS: set but empty" HOSTS=
    check "SCENARIO: remote runs (HOSTS) take idle only" SCENARIO=storm
    check "CPUS_SERVER/CPUS_CLIENT: local runs only" CPUS_SERVER=0
    check "HOSTS=/nonexistent" HOSTS=/nonexistent
}

@test "remote: an unreachable host, one that cannot be staged, a Python it lacks: exit 2 naming the host; nothing started" {
    need_sim
    local out
    # no namespace has 198.51.100.99: ssh's connect fails (no route or timeout)
    printf 'server root@%s\nclient root@198.51.100.99\n' "${SIM_ADDR[srv]}" > "$HOSTS_FILE"
    out=$BATS_TEST_TMPDIR/unreach
    run bench "$out" CONTENDERS=c
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "client root@198.51.100.99 (line 2): connecting: unreachable"
    assert_output --partial "nothing started"
    [ ! -s "$out/runs.csv" ]
    # a staging directory that cannot be made
    printf 'server root@%s dir=/proc/c1m-no\nclient root@%s\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    out=$BATS_TEST_TMPDIR/nostage
    run bench "$out" CONTENDERS=c
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "server root@${SIM_ADDR[srv]} (line 1): staging into /proc/c1m-no/"
    # a Python contender on a server host without that interpreter
    hosts_file
    out=$BATS_TEST_TMPDIR/nopython
    run bench "$out" CONTENDERS=c,asyncio-protocol REMOTE_PYTHON=/nonexistent/python3
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "server root@${SIM_ADDR[srv]} (line 2): running /nonexistent/python3"
    nothing_left
}

@test "remote: every contender at 5k over a server and two client hosts; port range; profile applied and put back; merged summary (one client alone: its own percentiles)" {
    need_sim
    local out=$BATS_TEST_TMPDIR/run contenders=c,pyext,asyncio-protocol,asyncio-streams,uvloop,floor
    # the ASan build's Python extension needs libasan preloaded, which the harness does not do
    [ "${SANITIZE:-0}" = 1 ] && contenders=c,floor
    hosts_file
    before=$(somaxconn_of srv)
    run bench "$out" CONTENDERS="$contenders" PORTS=9000-9003 APPLY_SYSCTL=1
    [ "$status" = 0 ] || fail "bench.sh exited $status: $output"
    # put back on every host
    for h in srv cl1 cl2; do [ "$(somaxconn_of $h)" = "$before" ] || fail "$h: somaxconn $(somaxconn_of $h)"; done
    run env C1M_ROOT="$C1M_ROOT" "$PYTHON" - "$out" "$contenders" <<'PY'
import csv, json, os, sys
out, want = sys.argv[1], sys.argv[2].split(",")
rows = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
assert sorted(r["contender"] for r in rows) == sorted(want), rows
for r in rows:
    c = r["contender"]
    assert r["status"] == "ok", (c, r["status"], r["note"], r["health"])
    assert r["accepted"] == "5000" and r["client_open_at_end"] == "5000", (c, r["accepted"])
    assert r["client_established"] == "5000" and r["client_failed"] == "0", c
    assert r["remote"] == "1" and r["ports"] == "9000-9003", c
    assert "server=5000 sockets=5000" in r["health"] and "client=5000" in r["health"], r["health"]
    assert float(r["t_accept_s"]) > 0 and int(r["server_workers"]) >= 4, c
    d = os.path.join(out, r["run_dir"])
    hosts = list(csv.DictReader(open(os.path.join(d, "hosts.csv"))))
    est = {h["host"]: int(h["established"]) for h in hosts}
    # shares by capacity 1:3
    assert est == {"198.51.100.11": 1250, "198.51.100.12": 3750}, est
    m = json.load(open(os.path.join(d, "client.json")))
    parts = [json.load(open(os.path.join(d, "client-%s.json" % h))) for h in est]
    assert m["established"] == sum(p["established"] for p in parts) == 5000
    assert m["histograms"]["connect_us"]["count"] == 5000
    assert m["connect_latency_ms"]["max"] == max(p["connect_latency_ms"]["max"] for p in parts)
    assert os.path.getsize(os.path.join(d, "server.log")) >= 0
    for k in ("net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog"):
        assert k in open(os.path.join(d, "sysctl.txt")).read(), k
    if c == "c":
        # the Python rank rule over the C client's buckets gives each client's own figures
        sys.path.insert(0, os.path.join(os.environ["C1M_ROOT"], "harness", "lib"))
        import clientmerge
        for p in parts:
            one = clientmerge.merge([("x", p)])
            assert one["connect_latency_ms"] == p["connect_latency_ms"], (one["connect_latency_ms"], p["connect_latency_ms"])
            assert one["heartbeat"]["latency_ms"] == p["heartbeat"]["latency_ms"]
meta = json.load(open(os.path.join(out, "meta.json")))
hm = meta["remote_hosts"]
assert sorted(hm["hosts"]) == ["198.51.100.10", "198.51.100.11", "198.51.100.12"], hm["hosts"]
assert hm["applied"] is True
for name, f in hm["hosts"].items():
    assert f["kernel"] and f["cpus"] >= 1 and f["dir"].endswith(hm["commit"]), (name, f)
print("ok")
PY
    assert_output "ok"
    nothing_left
}

# bench_bg OUT VAR=value...: bench in the background (BENCH_PID), its output in OUT.log
bench_bg() {
    local out=$1; shift
    (cd "$C1M_ROOT" && exec setsid ip netns exec "$(sim_ns ctl)" env "${QUIET[@]}" HOSTS="$HOSTS_FILE" \
        TIERS=5k HOLD=60 HEARTBEAT=1 SERVER_WORKER_CONNS=1500 CLIENT_WORKER_CONNS=1500 OUT="$out" \
        PYTHON="$PYTHON" BUILD="$C1M_BUILD" SSH_OPTS="$SSH_OPTS" C1M_SSH_CTL="$C1M_SSH_CTL" \
        "$@" harness/bench.sh) > "$out.log" 2>&1 3>&- &
    BENCH_PID=$!
}
holding() { grep -qa "holding (remote)" "$1.log"; }

@test "remote: SIGINT mid-run stops every remote process, removes its files and puts the hosts' settings back" {
    need_sim
    local out=$BATS_TEST_TMPDIR/int
    hosts_file
    before=$(somaxconn_of cl2)
    bench_bg "$out" CONTENDERS=c APPLY_SYSCTL=1
    wait_for 60 holding "$out" || fail "no hold: $(tail -c 2000 "$out.log")"
    [ "$(somaxconn_of cl2)" = 65535 ] || fail "the profile was not applied: $(somaxconn_of cl2)"
    kill -INT -- "-$BENCH_PID"
    rc=0; wait "$BENCH_PID" || rc=$?
    BENCH_PID=
    [ "$rc" = 130 ] || fail "exit $rc: $(tail -c 2000 "$out.log")"
    wait_for 20 nothing_left || nothing_left
    [ "$(somaxconn_of cl2)" = "$before" ] || fail "somaxconn $(somaxconn_of cl2), was $before"
    run "$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$(ls -d "$out"/runs/c-5k-*)/result.json" status
    assert_output "interrupted"
}

@test "remote: a client host lost mid-run (its sshd and sessions killed): host-lost naming it, nothing left" {
    need_sim
    local out=$BATS_TEST_TMPDIR/lost
    hosts_file
    bench_bg "$out" CONTENDERS=c
    wait_for 60 holding "$out" || fail "no hold: $(tail -c 2000 "$out.log")"
    sim_kill_host cl2
    rc=0; wait "$BENCH_PID" || rc=$?
    BENCH_PID=
    [ "$rc" = 0 ] || fail "exit $rc: $(tail -c 2000 "$out.log")"
    run "$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$(ls -d "$out"/runs/c-5k-*)/result.json" status note
    assert_line --index 0 "host-lost"
    assert_line --index 1 --partial "client root@${SIM_ADDR[cl2]} (line 4) lost"
    wait_for 20 nothing_left || nothing_left
    # the host comes back for the other tests
    sim_start_sshd cl2
}
