#!/usr/bin/env bats
# Runs over SSH (HOSTS=path, issue 11): three simulated hosts (network
# namespaces joined by veth through a bridge namespace, 198.51.100.0/24 inside
# them only, each with its own sshd: tests/remote_hosts.bash), the harness in a
# controller namespace. Bad hosts files and unusable hosts refused (exit 2,
# naming the line or the host) before anything starts; one contender of each kind at 5k
# over one server and two client hosts, with a port range and the profile
# applied to the hosts and put back (merged client summary, per-host table,
# the three end-of-hold counts); SIGINT mid-run and a client host lost mid-run
# (its sshd and sessions killed) leaving no process, counters file or setting
# behind; lib/clientmerge.py against the real client summaries. Root on the
# hosts writes and runs only in a private directory it made (a directory
# planted under dir= by another user is never written through, nothing read
# back from OUT is run or restored, no file of a run in the hosts' /tmp); a
# kill -9 of bench.sh is undone by the next one from its own state (OUT gone),
# a setting changed since left alone and an unreachable host said, not claimed.

# Parallel group (tests/run.sh): it judges no time, CPU or machine-wide figure
# (its long test's sanity bounds aside: make test-long runs one file at a time)
# and sets no machine-wide setting, its runs keep their state in the file's own
# C1M_STATE_ROOT (tests/helpers.bash): it runs beside another file.

# bats file_tags=harness
load helpers
load_bats_libs
load remote_hosts

# the remote watchers' silence limit (lib/remote.py KEEPALIVE): short, so a
# partitioned host's processes end within the test
export C1M_REMOTE_KEEPALIVE=6

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
    # a test's sticky dir= in /tmp (its planted directory is nobody's)
    if [ -f "$BATS_TEST_TMPDIR/sticky" ]; then rm -rf "$(cat "$BATS_TEST_TMPDIR/sticky")"; fi
    # the hosts as the next test needs them, whatever this one did to them
    if [ -f "$BATS_FILE_TMPDIR/sim.ok" ]; then
        [ -n "$(sim_sshd cl2)" ] || sim_start_sshd cl2 || true
        ip -n "$(sim_ns cl2)" link set eth0 up 2>/dev/null || true
    fi
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

# nothing_left: no process of a run on any host or in the controller (ssh
# clients, their connections). (A run's files are in the hosts' private
# directories: no_private_dirs.)
nothing_left() {
    local name left="" p
    for name in srv cl1 cl2; do left+=$(sim_pids_in "$name"); done
    for p in $(ip netns pids "$(sim_ns ctl)" 2>/dev/null); do
        left+=" ctl:$p $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-80)"
    done
    [ -z "$left" ] || { echo "left on the hosts: $left" >&2; return 1; }
}

# no_private_dirs DIR...: no private directory of a suite left under the hosts' dir=
no_private_dirs() {
    local d
    for d; do ! compgen -G "$d/c1m.*" >/dev/null || { echo "left: $(ls -d "$d"/c1m.*)" >&2; return 1; }; done
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
    hosts_check() {   # hosts_check EXPECTED_TEXT: hosts.py check HOSTS_FILE, as bench.sh runs it
        run "$PYTHON" "$C1M_ROOT/harness/lib/hosts.py" check "$HOSTS_FILE"
        [ "$status" = 2 ] || fail "status $status for $(cat "$HOSTS_FILE"): $output"
        assert_output --partial "$1"
    }
    # bench.sh refuses what lib/hosts.py refuses: one hosts file through
    # bench.sh, the others (the same check, smallest that proves it) through
    # `hosts.py check`, what bench.sh runs (a second a bench.sh saved each)
    printf 'server root@%s\nclient root@%s\nwizard root@x\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    check "line 3: unknown role 'wizard'"
    printf 'server root@%s\n' "${SIM_ADDR[srv]}" > "$HOSTS_FILE"
    hosts_check "at least one client line"
    printf 'client root@%s\n' "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "exactly one server line, found 0"
    printf 'server %s\nclient root@%s\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 1:"
    printf 'server root@%s\nclient root@%s capacity=-1\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 2: capacity"
    printf 'server root@%s:70000\nclient root@%s\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 1: 'root@${SIM_ADDR[srv]}:70000': ssh port 70000"
    printf 'server root@srv.example\nclient root@%s\n' "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 1: root@srv.example: a name: give the address the clients connect to, addr=IP"
    printf 'server root@[2001:db8::10]\nclient root@%s src=%s\n' "${SIM_ADDR[cl1]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 2: src=: IPv4 source addresses, but the server's address is IPv6"
    printf 'server root@%s\nclient root@%s\nclient root@%s\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 3: root@${SIM_ADDR[cl1]} is already on line 2"
    # values c1m-client would refuse on its host (exit 2 there, mid-run)
    printf 'server root@%s addr=0.0.0.0\nclient root@%s\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 1: addr: 0.0.0.0 is not an address a client can connect to"
    printf 'server root@%s\nclient root@%s src=0.0.0.0-255.255.255.255\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    hosts_check "line 2: src: 0.0.0.0-255.255.255.255 is"
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
    assert_output --partial "server root@${SIM_ADDR[srv]} (line 1): staging into /proc/c1m-no"
    # a staging directory others can write: they could swap the programs root runs
    local ww=$BATS_TEST_TMPDIR/world-writable
    mkdir -p "$ww" && chmod 0777 "$ww"
    printf 'server root@%s dir=%s\nclient root@%s\n' "${SIM_ADDR[srv]}" "$ww" "${SIM_ADDR[cl1]}" > "$HOSTS_FILE"
    out=$BATS_TEST_TMPDIR/wwstage
    run bench "$out" CONTENDERS=c
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "$ww is writable by others"
    no_private_dirs "$ww"
    # a Python contender on a server host without that interpreter
    hosts_file
    out=$BATS_TEST_TMPDIR/nopython
    run bench "$out" CONTENDERS=c,asyncio-protocol REMOTE_PYTHON=/nonexistent/python3
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "server root@${SIM_ADDR[srv]} (line 2): running /nonexistent/python3"
    nothing_left
    no_private_dirs "$SIM_ROOT"/stage-*
}

# bats test_tags=long
@test "remote: a contender of each kind at 5k over a server and two client hosts; port range; profile applied and put back; merged summary (one client alone: its own percentiles)" {
    long_test
    need_sim
    # One of each kind the staging and the host checks treat apart: a C server
    # (c), one probed with --check on the host (io_uring; exit 3 there is
    # `unavailable`), the extension (pyext: `import c1m` on the host), the
    # standard library (asyncio-streams) and a third-party loop whose import
    # is checked (gevent). The others differ from these only in their flags
    # (every contender ran here until make test outgrew its budget).
    local out=$BATS_TEST_TMPDIR/run contenders=c,io_uring,pyext,asyncio-streams,gevent
    # the ASan build's Python extension needs libasan preloaded, which the harness does not do
    [ "${SANITIZE:-0}" = 1 ] && contenders=c,io_uring
    hosts_file
    before=$(somaxconn_of srv)
    run bench "$out" CONTENDERS="$contenders" PORTS=9000-9003 APPLY_SYSCTL=1
    [ "$status" = 0 ] || fail "bench.sh exited $status: $output"
    # put back on every host
    for h in srv cl1 cl2; do [ "$(somaxconn_of $h)" = "$before" ] || fail "$h: somaxconn $(somaxconn_of $h)"; done
    run env C1M_ROOT="$C1M_ROOT" "$PYTHON" - "$out" "$contenders" <<'PY'
import csv, json, os, sys, time
out, want = sys.argv[1], sys.argv[2].split(",")
rows = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
assert sorted(r["contender"] for r in rows) == sorted(want), rows
for r in rows:
    c = r["contender"]
    if r["status"] == "unavailable":         # a kernel without multishot io_uring: said so
        assert c == "io_uring" and "unavailable" in r["note"], (c, r["note"])
        continue
    assert r["status"] == "ok", (c, r["status"], r["note"], r["health"])
    assert r["accepted"] == "5000" and r["client_open_at_end"] == "5000", (c, r["accepted"])
    assert r["client_established"] == "5000" and r["client_failed"] == "0", c
    assert r["remote"] == "1" and r["ports"] == "9000-9003", c
    assert "server=5000 sockets=5000" in r["health"] and "client=5000" in r["health"], r["health"]
    assert float(r["t_accept_s"]) > 0 and int(r["server_workers"]) >= 4, c
    # the figures lib/judge.py derives from the readings over SSH, as for a local run
    # (the server host's one socket per connection; no machine CPU: not this machine)
    # (c's 5k ramp can take 0.1 s: under one clock tick of CPU, 0.0)
    assert float(r["server_cpu_connect_s"]) >= 0 and int(r["server_rss_kib"]) >= int(r["server_rss_idle_kib"]) > 0, r
    assert int(r["user_bytes_per_conn"]) >= 0 and 0 < int(r["kernel_bytes_per_conn"]) < 20000, r
    assert abs(float(r["hold_wall_s"]) - float(r["hold_s"])) < 3 and float(r["server_cpu_hold_pct"]) >= 0, r
    assert r["machine_cpu_connect_pct"] == "" and r["machine_cpu_hold_pct"] == "", r
    assert abs(int(r["client_start_unix_ms"]) - int(r["server_clock_offset_ms"]) - time.time() * 1000) < 600000, r
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
    assert os.path.exists(os.path.join(d, "server.log")) and os.path.exists(os.path.join(d, "ramp.csv"))
    # the settings the run had, read on the server host after APPLY_SYSCTL=1
    sysctl = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(d, "sysctl.txt")) if "=" in l)
    assert sysctl["net.core.somaxconn"] == "65535", sysctl
    assert sysctl["net.ipv4.ip_local_port_range"] == "1024 65535", sysctl
    # the ramp file, cut from the client start in the server's clock
    assert os.path.getsize(os.path.join(out, r["ramp_file"])) > 20, r["ramp_file"]
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
    assert f["kernel"] and f["cpus"] >= 1 and os.path.basename(f["dir"]).startswith("c1m."), (name, f)
print("ok")
PY
    assert_output "ok"
    nothing_left
    no_private_dirs "$SIM_ROOT"/stage-*
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
# bench_pid: bench.sh's own pid (BENCH_PID is the setsid'd ip netns exec that execs env, then bash)
bench_pid() { pgrep -s "$BENCH_PID" -f "harness/bench.sh" | head -n 1; }

# bats test_tags=long
@test "remote: SIGINT to the group, SIGTERM to bench.sh alone, mid-run: every remote process stopped, its files removed, the hosts' settings put back" {
    long_test
    need_sim
    local out how
    hosts_file
    before=$(somaxconn_of cl2)
    for how in group-INT bench-TERM; do
        out=$BATS_TEST_TMPDIR/$how
        bench_bg "$out" CONTENDERS=c APPLY_SYSCTL=1
        wait_for 60 holding "$out" || fail "$how: no hold: $(tail -c 2000 "$out.log")"
        [ "$(somaxconn_of cl2)" = 65535 ] || fail "$how: the profile was not applied: $(somaxconn_of cl2)"
        if [ "$how" = group-INT ]; then kill -INT -- "-$BENCH_PID"; else kill -TERM "$(bench_pid)"; fi
        rc=0; wait "$BENCH_PID" || rc=$?
        BENCH_PID=
        [ "$rc" = 130 ] || fail "$how: exit $rc: $(tail -c 2000 "$out.log")"
        wait_for 20 nothing_left || nothing_left
        no_private_dirs "$SIM_ROOT"/stage-*
        [ "$(somaxconn_of cl2)" = "$before" ] || fail "$how: somaxconn $(somaxconn_of cl2), was $before"
        run "$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$(ls -d "$out"/runs/c-5k-*)/result.json" status
        [ "$output" = interrupted ] || fail "$how: status $output: $(tail -c 1500 "$out.log")"
    done
}

# bats test_tags=long
@test "remote: a client host's sshd killed mid-run (its sessions' commands left running): host-lost naming it, they end by themselves" {
    long_test
    need_sim
    local out=$BATS_TEST_TMPDIR/lost
    hosts_file
    bench_bg "$out" CONTENDERS=c
    wait_for 60 holding "$out" || fail "no hold: $(tail -c 2000 "$out.log")"
    sim_kill_sshd cl2
    rc=0; wait "$BENCH_PID" || rc=$?
    BENCH_PID=
    [ "$rc" = 0 ] || fail "exit $rc: $(tail -c 2000 "$out.log")"
    run "$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$(ls -d "$out"/runs/c-5k-*)/result.json" status note
    assert_line --index 0 "host-lost"
    assert_line --index 1 --partial "client root@${SIM_ADDR[cl2]} (line 4) lost"
    # the client there lost its session's input: its wrapper ended it
    wait_for 20 nothing_left || nothing_left
    no_private_dirs "$SIM_ROOT"/stage-srv "$SIM_ROOT"/stage-cl1
}

# bats test_tags=long
@test "remote: a client host cut off mid-run (its link down: no answer, no reset): host-lost, its processes end after the keep-alive limit" {
    long_test
    need_sim
    local out=$BATS_TEST_TMPDIR/cut
    hosts_file
    bench_bg "$out" CONTENDERS=c
    wait_for 60 holding "$out" || fail "no hold: $(tail -c 2000 "$out.log")"
    ip -n "$(sim_ns cl2)" link set eth0 down
    rc=0; wait "$BENCH_PID" || rc=$?
    BENCH_PID=
    [ "$rc" = 0 ] || fail "exit $rc: $(tail -c 2000 "$out.log")"
    run "$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$(ls -d "$out"/runs/c-5k-*)/result.json" status note
    assert_line --index 0 "host-lost"
    assert_line --index 1 --partial "client root@${SIM_ADDR[cl2]} (line 4) lost"
    # nothing reaches cl2: its wrapper hears no keep-alive and ends the client
    wait_for 30 nothing_left || nothing_left
    no_private_dirs "$SIM_ROOT"/stage-srv "$SIM_ROOT"/stage-cl1
}

@test "remote: root writes and runs only in a private directory it made: a directory planted under dir= is never written through, OUT's copies never read back, no run file in /tmp" {
    need_sim
    local out=$BATS_TEST_TMPDIR/priv victim=$BATS_TEST_TMPDIR/victim evil=$BATS_TEST_TMPDIR/evil sticky key b n
    # dir= a sticky directory as /tmp (the hosts share this machine's files)
    sticky=$(mktemp -d /tmp/c1m-sticky.XXXXXX) && chmod 1777 "$sticky"
    echo "$sticky" > "$BATS_TEST_TMPDIR/sticky"
    mkdir -p "$victim/bin" "$victim/py" "$evil/bin"
    # user nobody's directory at the name staging used (dir/<commit>), with
    # links to root's directories where the build's bin/ and py_server/ go
    key=$(git -C "$C1M_ROOT" rev-parse HEAD 2>/dev/null | cut -c1-12)
    key=${key:-nogit}
    [ -n "$(git -C "$C1M_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] && key+=-dirty
    setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
        'mkdir "$1/$2" && ln -s "$3/bin" "$1/$2/bin" && ln -s "$3/py" "$1/$2/py_server"' _ "$sticky" "$key" "$victim"
    # programs a tampered OUT/hosts-meta.json would point at
    for b in c1m-server c1m-client c1m-stat; do printf '#!/bin/sh\ntouch %s/ran\n' "$evil" > "$evil/bin/$b"; chmod +x "$evil/bin/$b"; done
    printf 'server root@%s dir=%s\nclient root@%s src=%s dir=%s\nclient root@%s src=%s dir=%s\n' \
        "${SIM_ADDR[srv]}" "$sticky" "${SIM_ADDR[cl1]}" "${SIM_ADDR[cl1]}" "$sticky" \
        "${SIM_ADDR[cl2]}" "${SIM_ADDR[cl2]}" "$sticky" > "$HOSTS_FILE"
    before=$(somaxconn_of srv)
    # two runs (the second would read OUT's copies back), each the shortest
    # hold in which this test looks at the first one (checked below)
    bench_bg "$out" CONTENDERS=c TIERS=2k HOLD=2 REPEAT=2 APPLY_SYSCTL=1
    wait_for 60 holding "$out" || true
    [ -z "$(find "$victim" -mindepth 2)" ] || fail "written through the planted links: $(ls -R "$victim")"
    holding "$out" || fail "no hold: $(tail -c 2000 "$out.log")"
    # the run's files in the private directories, none in /tmp or /dev/shm (the
    # old names held run_remote.py's pid: those of this test's controller)
    for b in $(ip netns pids "$(sim_ns ctl)"); do
        ! compgen -G "/tmp/c1m-remote-$b-*" >/dev/null && ! compgen -G "/dev/shm/c1m-remote-$b-*" >/dev/null \
            || fail "run files outside the private directories: $(ls /tmp/c1m-remote-"$b"-* /dev/shm/c1m-remote-"$b"-* 2>&1)"
    done
    n=0
    for b in "$sticky"/c1m.*; do
        [ "$(stat -c '%U %a %F' "$b")" = "root 700 directory" ] || fail "$b: $(stat -c '%U %a %F' "$b")"
        n=$((n + 1))
    done
    [ "$n" = 3 ] || fail "$n private directories: $(ls -la "$sticky")"
    compgen -G "$sticky/c1m.*/run-*.stats" >/dev/null || fail "no counters file in a private directory: $(ls -R "$sticky")"
    # OUT's copies pointed elsewhere: never read back
    "$PYTHON" - "$out" "$evil" "${SIM_ADDR[srv]}" <<'PY'
import json, os, sys
out, evil, srv = sys.argv[1:]
p = os.path.join(out, "hosts-meta.json")
m = json.load(open(p)) if os.path.exists(p) else {"hosts": {}}
for f in m["hosts"].values():
    f["dir"] = evil
json.dump(m, open(p, "w"))
host = {"role": "server", "target": "root@" + srv, "line": 1, "user": "root", "address": srv, "ssh_port": 22, "name": srv}
json.dump({srv: {"host": host, "values": {"net.core.somaxconn": "4321"}}}, open(os.path.join(out, "sysctl-restore.json"), "w"))
PY
    # OUT changed before the second run began: it had a copy to read back
    ! grep -qa "repeat 2/2" "$out.log" || fail "the second run began before OUT was changed: a longer HOLD"
    rc=0; wait "$BENCH_PID" || rc=$?
    BENCH_PID=
    [ "$rc" = 0 ] || fail "exit $rc: $(tail -c 2000 "$out.log")"
    # both runs whole (the server's program the staged one; status ok, or suspect
    # when the shared kernel's slab moved under a 2k run)
    run "$PYTHON" -c 'import csv, sys; rows = list(csv.DictReader(open(sys.argv[1])))
print(len(rows), *sorted({r["health"].split(" workers")[0] for r in rows}))
print(*sorted({r["server_cmd"].split()[0].startswith(sys.argv[2] + "/c1m.") for r in rows}))' "$out/runs.csv" "$sticky"
    assert_output "2 target=2000 server=2000 sockets=2000 (established on the server host) client=2000
True"
    [ ! -e "$evil/ran" ] || fail "a program named by OUT/hosts-meta.json ran"
    for b in srv cl1 cl2; do [ "$(somaxconn_of $b)" = "$before" ] || fail "$b: somaxconn $(somaxconn_of $b), was $before"; done
    [ -z "$(find "$victim" -mindepth 2)" ] || fail "written through the planted links"
    [ "$(ls -A "$sticky")" = "$key" ] || fail "left in dir=: $(ls -A "$sticky")"
    nothing_left
}

@test "remote: kill -9 of bench.sh, OUT gone: the next one puts the hosts' settings back from its own state, leaves one changed since, says which host it could not reach and keeps that" {
    need_sim
    local out=$BATS_TEST_TMPDIR/killed bad=$BATS_TEST_TMPDIR/unusable before
    hosts_file
    before=$(somaxconn_of srv)
    bench_bg "$out" CONTENDERS=c TIERS=2k APPLY_SYSCTL=1
    wait_for 60 holding "$out" || fail "no hold: $(tail -c 2000 "$out.log")"
    kill -KILL -- "-$BENCH_PID"         # bench.sh and run_remote.py: no cleanup at all
    wait "$BENCH_PID" || true
    BENCH_PID=
    rm -rf "$out"
    for h in srv cl1 cl2; do [ "$(somaxconn_of $h)" = 65535 ] || fail "$h: the profile was not applied"; done
    ip netns exec "$(sim_ns cl1)" sysctl -q -w net.core.somaxconn=4242     # changed since by someone
    # cl2 unreachable: its sshd and sessions gone, the controller's connection to it closed
    sim_kill_host cl2
    # shellcheck disable=SC2086  # SSH_OPTS is words
    in_ctl ssh $SSH_OPTS -o ControlPath="$C1M_SSH_CTL/%C" -O exit "root@${SIM_ADDR[cl2]}" 2>/dev/null || true
    # shellcheck disable=SC2086
    ! in_ctl ssh $SSH_OPTS -o BatchMode=yes -o ConnectTimeout=2 -o ControlPath=none "root@${SIM_ADDR[cl2]}" true 2>/dev/null \
        || fail "cl2 still answers: $(ip netns pids "$(sim_ns cl2)" | xargs -r ps -o pid,ppid,args -p)"
    # the next bench.sh (its own hosts unusable: it stops after the sweep)
    printf 'server root@%s:2\nclient root@%s:2\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$bad"
    run bench "$BATS_TEST_TMPDIR/next" HOSTS="$bad" CONTENDERS=c TIERS=2k
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "hosts: ${SIM_ADDR[srv]}: put back net.core.somaxconn=$before"
    assert_output --partial "hosts: ${SIM_ADDR[cl1]}: net.core.somaxconn is 4242, not the 65535 c1m set: left as is"
    assert_output --partial "hosts: ${SIM_ADDR[cl2]}: could NOT put back net.core.somaxconn=$before"
    assert_output --partial "unreachable"
    [ "$(somaxconn_of srv)" = "$before" ] && [ "$(somaxconn_of cl1)" = 4242 ] && [ "$(somaxconn_of cl2)" = 65535 ] \
        || fail "somaxconn srv $(somaxconn_of srv) cl1 $(somaxconn_of cl1) cl2 $(somaxconn_of cl2)"
    compgen -G "$C1M_STATE_ROOT/remote-*" >/dev/null || fail "the state of what is not put back was deleted"
    # reachable again: put back, the state and the private directories gone
    sim_start_sshd cl2
    run bench "$BATS_TEST_TMPDIR/next2" HOSTS="$bad" CONTENDERS=c TIERS=2k
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "hosts: ${SIM_ADDR[cl2]}: put back net.core.somaxconn=$before"
    [ "$(somaxconn_of cl2)" = "$before" ] || fail "cl2: somaxconn $(somaxconn_of cl2)"
    ! compgen -G "$C1M_STATE_ROOT/remote-*" >/dev/null || fail "state left: $(ls "$C1M_STATE_ROOT")"
    ip netns exec "$(sim_ns cl1)" sysctl -q -w net.core.somaxconn="$before"
    no_private_dirs "$SIM_ROOT"/stage-*
    wait_for 20 nothing_left || nothing_left
}

@test "remote: kill -9 of bench.sh alone mid-hold: the next one stops its run_remote.py (its remote processes ended) before putting the hosts back" {
    need_sim
    local out=$BATS_TEST_TMPDIR/orphan bad=$BATS_TEST_TMPDIR/unusable before
    hosts_file
    before=$(somaxconn_of srv)
    bench_bg "$out" CONTENDERS=c TIERS=2k APPLY_SYSCTL=1
    wait_for 60 holding "$out" || fail "no hold: $(tail -c 2000 "$out.log")"
    kill -KILL "$(bench_pid)"           # bench.sh alone: its run_remote.py runs on, holding
    # the next bench.sh (its own hosts unusable: it stops after the sweep)
    printf 'server root@%s:2\nclient root@%s:2\n' "${SIM_ADDR[srv]}" "${SIM_ADDR[cl1]}" > "$bad"
    run bench "$BATS_TEST_TMPDIR/next" HOSTS="$bad" CONTENDERS=c TIERS=2k
    [ "$status" = 2 ] || fail "status $status: $output"
    assert_output --partial "hosts: ${SIM_ADDR[srv]}: put back net.core.somaxconn=$before"
    # (was: the settings put back and the private directories removed under
    # a run still holding, whose server and clients ran on for its whole hold)
    nothing_left
    no_private_dirs "$SIM_ROOT"/stage-*
    [ "$(somaxconn_of srv)" = "$before" ] || fail "srv: somaxconn $(somaxconn_of srv)"
    ! compgen -G "$C1M_STATE_ROOT/remote-*" >/dev/null || fail "state left: $(ls "$C1M_STATE_ROOT")"
    wait "$BENCH_PID" || true
    BENCH_PID=
}
