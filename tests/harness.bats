#!/usr/bin/env bats
# The benchmark harness end to end on a tiny tier: harness/bench.sh, runs.csv,
# meta.json, plots, plot.sh, every stop path (SIGINT, SIGTERM and SIGHUP to the
# process group, kill -9 of run_one.sh or of bench.sh) cleaning up, input
# validation (exit 2 before anything is created), the non-root refusal and the
# memory guard. Everything but the non-root and usage tests needs root (skips
# without). One small suite (3 contenders x 2k, several workers each, the
# server and the client pinned to CPUs of their own, three ports) runs once in
# setup_file and is shared by the first tests and the pinning test.
#
# The machine is shared while tests run: runs expected to be "ok" disable the
# disturbance status and the quiet gate (QUIET, tests/helpers.bash): a gate that times out
# beside another suite's benchmark namespace marks the run disturbed, whatever
# its bound. tests/trust.bats tests the gate and the disturbance status.

# bats file_tags=serial,harness
load helpers
load_bats_libs

setup_file() {
    export RUN_DIR=$BATS_FILE_TMPDIR/run
    [ "$(id -u)" = 0 ] || return 0
    # Under SANITIZE=1 the extension is an ASan build that needs the runtime
    # preloaded; the harness does not do that, so pyext sits that one out.
    local contenders=c,asyncio-protocol,pyext
    [ "${SANITIZE:-0}" = 1 ] && contenders=c,asyncio-protocol
    export SUITE_CONTENDERS=$contenders
    # CPUS_SERVER/CPUS_CLIENT/PORTS: what the pinning test checks (it had a suite of its own)
    local pin=(PORTS=9200-9202)
    [ "$(grep -c '^cpu[0-9]' /proc/stat)" -lt 2 ] || pin+=(CPUS_SERVER=0 CPUS_CLIENT=1)
    (cd "$C1M_ROOT" && exec env "${QUIET[@]}" "${pin[@]}" TIERS=2k CONTENDERS="$contenders" HOLD=2 HEARTBEAT=1 \
        SERVER_WORKER_CONNS=700 CLIENT_WORKER_CONNS=800 SETTLE_MAX=5 OUT="$RUN_DIR" \
        PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh) > "$BATS_FILE_TMPDIR/bench.out" 2>&1
    echo $? > "$BATS_FILE_TMPDIR/bench.rc"
}

setup() {
    BENCH_PID=
}

teardown() {
    # a test that failed half-way: bench.sh's own traps clean up on SIGTERM
    stop_pid "$BENCH_PID"
    [ -z "${FILE_MAX_SAVED:-}" ] || sysctl -q -w fs.file-max="$FILE_MAX_SAVED"
    check_sanitizer_logs
}

# tcp_mem_now: the host's net.ipv4.tcp_mem, single spaces; tcp_mem_up: a
# TCP_MEM value one page above it in each threshold (LOW,PRESSURE,HIGH)
tcp_mem_now() { sysctl -n net.ipv4.tcp_mem | tr -s ' \t' ' '; }
tcp_mem_up() { tcp_mem_now | awk '{printf "%d,%d,%d\n", $1 + 1, $2 + 1, $3 + 1}'; }

need_suite() {
    need_root
    [ -f "$BATS_FILE_TMPDIR/bench.rc" ] || fail "the shared suite did not run"
}
need_gnuplot() {
    command -v gnuplot >/dev/null || skip "needs gnuplot (apt-get install gnuplot-nox; make test installs it)"
}

in_hold() { grep -qs "holding" "$1"/runs/*/run_one.log; }

# start_bench OUT VAR=value...: bench.sh in the background in its own process
# group (job control, as from a terminal: it does not ignore SIGINT), one c run
# at 2k holding 60 s (the VAR=values override); returns once that run holds. Sets BENCH_PID, RUN_NS (the
# run's namespace) and RUN_PID (its run_one.sh, from the namespace's name).
# smallest: no calibration (CALIBRATE=0: a stop path does not need it), no
# memory settling (MEM_SETTLE=0: no figure is judged); the signal is sent as
# soon as the run holds (the 60 s hold is never waited out).
start_bench() {
    local out=$1; shift
    set -m
    # --default-signal: as from a terminal, whatever this job inherited (a job
    # started under nohup ignores HUP; bash cannot trap a signal ignored on
    # entry, so bench.sh would rightly keep running on SIGHUP)
    (cd "$C1M_ROOT" && exec env --default-signal=HUP "${QUIET[@]}" CALIBRATE=0 MEM_SETTLE=0 TIERS=2k CONTENDERS=c HOLD=60 HEARTBEAT=1 SETTLE_MAX=5 \
        OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" "$@" harness/bench.sh) > "$out.log" 2>&1 &
    BENCH_PID=$!
    set +m
    wait_for 60 in_hold "$out" || fail "never reached the hold: $(cat "$out.log")"
    RUN_NS=$(cat "$out"/runs/*/netns)
    RUN_PID=${RUN_NS#c1m-} RUN_PID=${RUN_PID%-*}
    ip netns list | grep -q "^$RUN_NS\b" || fail "namespace $RUN_NS not there during the run"
}

# stop_bench_with NAME SIGNAL group|bench: start a 2k suite, hold it, send
# SIGNAL to bench.sh's whole process group or to bench.sh alone, and expect
# exit 130, nothing left and the run recorded as interrupted (in STOPPED_OUT).
stop_bench_with() {
    local name=$1 sig=$2 target=$3 before out=$BATS_TEST_TMPDIR/$1
    before=$(host_sysctls)
    start_bench "$out"
    if [ "$target" = group ]; then kill "-$sig" -- "-$BENCH_PID"; else kill "-$sig" "$BENCH_PID"; fi
    rc=0; wait "$BENCH_PID" || rc=$?
    pgid=$BENCH_PID BENCH_PID=
    [ "$rc" = 130 ] || fail "bench.sh exited $rc: $(cat "$out.log")"
    nothing_left "$out" "$pgid" "$RUN_PID" "$before"
    grep -q ",interrupted," "$out/runs.csv"
    STOPPED_OUT=$out
}


@test "bench.sh: 2k for each contender, several workers, exit 0, summary on the terminal" {
    need_suite
    run cat "$BATS_FILE_TMPDIR/bench.out"
    [ "$(cat "$BATS_FILE_TMPDIR/bench.rc")" = 0 ] || fail "bench.sh exited $(cat "$BATS_FILE_TMPDIR/bench.rc"): $output"
    assert_output --partial "t_accept s"          # the summary table's header
    # ok, or suspect for machine-wide slab noise only (runs.csv is checked below)
    for c in ${SUITE_CONTENDERS//,/ }; do
        assert_line --regexp "^$c +2k +(ok|suspect) "
    done
}

@test "runs.csv: the columns harness/README.md documents, sane values, ramp files" {
    need_suite
    run "$PYTHON" - "$RUN_DIR" "$C1M_ROOT/harness/README.md" "$SUITE_CONTENDERS" "${SANITIZE:-0}" "$BATS_TEST_DIRNAME/py" <<'PY'
import csv, os, re, sys
run, readme, contenders = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
sanitized = sys.argv[4] == "1"   # ASan's allocator can hand memory back: RSS may even shrink
sys.path.insert(0, sys.argv[5])
from profiles_check import held  # ok, or suspect for machine-wide slab noise only
# the column table under "## runs.csv columns"
text = re.split(r"\n#+ ", open(readme).read().split("## runs.csv columns", 1)[1])[0]
documented = re.findall(r"^\| `([a-z0-9_]+)` \|", text, re.M)
rows = list(csv.DictReader(open(os.path.join(run, "runs.csv"))))
header = list(rows[0].keys())
# the documented columns in order, then the keys the records hold beyond them (sorted)
assert header[:len(documented)] == documented, ("header", header, documented)
assert header[len(documented):] == sorted(header[len(documented):]), header
assert sorted(r["contender"] for r in rows) == sorted(contenders), [r["contender"] for r in rows]
for r in rows:
    c = r["contender"]
    def n(k):
        return float(r[k])
    assert held(r), (c, r["status"], r["flags"], r["note"])
    assert r["tier"] == "2000" and r["tier_label"] == "2k" and r["repeat"] == "1", c
    assert n("accepted") == 2000 and n("client_established") == 2000 and n("client_failed") == 0, c
    assert n("t_accept_s") > 0 and n("t_client_established_s") > 0, c
    assert n("server_workers") >= 3 and n("client_workers") >= 2, (c, r["server_workers"], r["client_workers"])
    assert n("user_bytes_per_conn") >= 0 or sanitized, (c, r["user_bytes_per_conn"])
    # slab figures are machine-wide: anything else running (another test suite)
    # moves them, so only their presence is checked here
    n("kernel_bytes_per_conn"), n("slab_bytes_per_conn")
    assert "TCP=" in r["slab_caches"], c
    assert n("server_rss_kib") > 0 and n("server_pss_kib") > 0, c
    assert n("server_cpu_connect_s") >= 0 and n("server_cpu_hold_pct") >= 0, c
    assert 0 <= n("machine_cpu_hold_pct") <= 100 * os.cpu_count(), c
    assert n("client_cpu_run_s") >= 0, c
    assert n("sockstat_tcp_inuse") >= 4000, c          # both ends of 2000 + listeners
    assert n("hb_pongs") > 0 and n("open_after_hold") == 2000, c
    assert n("hold_wall_s") >= 2 and n("heartbeat_s") == 1, c
    assert r["server_exit"] == "0" and r["client_exit"] == "0", (c, r["server_exit"], r["client_exit"])
    ramp = list(csv.reader(open(os.path.join(run, r["ramp_file"]))))
    assert ramp[0] == ["seconds", "accepted", "open"], ramp[0]
    assert int(ramp[-1][1]) == 2000 and float(ramp[1][0]) >= 0, ramp[-1]
    assert os.path.isfile(os.path.join(run, r["run_dir"], "client.json")), c
print("ok", len(rows))
PY
    assert_success
    assert_output --partial "ok"
}

@test "meta.json: machine, software and the kernel profile as applied (identical in every run)" {
    need_suite
    run "$PYTHON" - "$RUN_DIR/meta.json" "$C1M_ROOT/harness/kernel-profile.conf" <<'PY'
import json, re, sys
m = json.load(open(sys.argv[1]))
conf = {}
for line in open(sys.argv[2]):
    line = line.split("#", 1)[0].strip()
    if line:
        k, v = line.split("=", 1)
        conf[k.strip()] = re.sub(r"\s+", " ", v.strip())
assert m["sysctl_profile"] == conf, (m["sysctl_profile"], conf)
assert m["sysctl_profile_identical"] is True and m["sysctl_profile_runs"] >= 2
for k in ("kernel", "cpu_model", "cores", "mem_total_kib", "distro", "gcc_version",
          "python_version", "git_commit", "fd_limit_soft", "fs_file_max", "fs_nr_open", "command"):
    assert m.get(k) not in (None, ""), k
assert "uvloop_version" in m and m["completed"] is True
assert len(m["worker_counts"]) >= 2 and all(w["server_workers"] >= 3 for w in m["worker_counts"])
fp = m["fingerprint"]
for k in ("kernel_release", "kernel_build", "cmdline", "vulnerabilities", "cpu_model",
          "cpu_flags_sha256", "cpu_count", "clocksource"):
    assert fp.get(k) not in (None, "", {}), k
cal = m["calibration"]
assert cal["conns"] == 10000 and cal["rounds"] == 5, cal
for k in ("accept_cpu_us", "syscall_ns", "python_ns"):
    assert 0 < cal[k]["min"] <= cal[k]["median"] <= cal[k]["max"], (k, cal)
assert cal["python_rounds"] == 5 and cal["python_implementation"].startswith("CPython"), cal
print("ok")
PY
    assert_success
    # one line on the terminal: the machine and its calibration
    run grep -E "^machine: kernel [^ ]+ \(.*\), CPU .*, meltdown: .*; calibration: floor accept [0-9.]+ us CPU \([0-9.]+-[0-9.]+, 5 rounds of 10000\), getppid [0-9]+ ns \([0-9]+-[0-9]+\), Python loop [0-9]+ ns \([0-9]+-[0-9]+\)" "$BATS_FILE_TMPDIR/bench.out"
    assert_success
}

@test "plots: PNG and SVG for every plot, report.md embeds them" {
    need_suite
    need_gnuplot
    for p in t_connect rss cpu ramp bytes; do
        [ -s "$RUN_DIR/plots/$p.png" ] || fail "no $p.png"
        [ -s "$RUN_DIR/plots/$p.svg" ] || fail "no $p.svg"
        [ "$(head -c 4 "$RUN_DIR/plots/$p.png" | tail -c 3)" = PNG ] || fail "$p.png is not a PNG"
        grep -q "<svg" "$RUN_DIR/plots/$p.svg" || fail "$p.svg is not an SVG"
        grep -q "(plots/$p.png)" "$RUN_DIR/report.md" || fail "report.md does not embed $p.png"
    done
    grep -q "harness/bench.sh" "$RUN_DIR/report.md"      # the run's command
}

@test "make plot RUN=... redraws every plot and report.md from the CSVs alone" {
    need_suite
    need_gnuplot
    copy=$BATS_TEST_TMPDIR/copy
    mkdir -p "$copy"
    cp -r "$RUN_DIR/runs.csv" "$RUN_DIR/meta.json" "$RUN_DIR/ramp" "$copy/"
    run make -s -C "$C1M_ROOT" plot RUN="$copy"
    assert_success
    for p in t_connect rss cpu ramp bytes; do
        [ -s "$copy/plots/$p.png" ] && [ -s "$copy/plots/$p.svg" ] || fail "no $p plot"
    done
    for c in ${SUITE_CONTENDERS//,/ }; do
        grep -Eq "^\| $c \| 2k \| (ok|suspect) \|" "$copy/report.md" || fail "no summary row for $c"
    done
    run "$C1M_ROOT/harness/plot.sh" "$BATS_TEST_TMPDIR/nothing-here"
    assert_failure 2
    assert_output --partial "is not a directory"
    mkdir "$BATS_TEST_TMPDIR/no-runs"
    run "$C1M_ROOT/harness/plot.sh" "$BATS_TEST_TMPDIR/no-runs"
    assert_failure 1
    assert_output --partial "runs.csv not found"
}

@test "SIGINT mid-run: exit 130, no namespace or process left, host sysctls unchanged" {
    need_root
    before=$(host_sysctls)
    out=$BATS_TEST_TMPDIR/int
    # Job control: bench.sh gets its own process group and, unlike a plain
    # background job, does not ignore SIGINT - like a ^C on a terminal.
    set -m
    # TCP_MEM: the run sets the machine-wide tcp_mem (each threshold one page
    # up: harmless), which the ^C must put back
    want=$(tcp_mem_up)
    # smallest: no calibration, no memory settling; the ^C as soon as the run holds
    (cd "$C1M_ROOT" && exec env "${QUIET[@]}" CALIBRATE=0 MEM_SETTLE=0 TIERS=2k CONTENDERS=asyncio-protocol HOLD=60 OUT="$out" \
        TCP_MEM="$want" PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh) > "$BATS_TEST_TMPDIR/int.log" 2>&1 &
    BENCH_PID=$!
    set +m
    wait_for 40 in_hold "$out" || fail "never reached the hold: $(cat "$BATS_TEST_TMPDIR/int.log")"
    ns=$(cat "$out"/runs/*/netns)
    ip netns list | grep -q "^$ns\b" || fail "namespace $ns not there during the run"
    [ "$(tcp_mem_now)" = "${want//,/ }" ] || fail "the run did not set tcp_mem to $want: $(tcp_mem_now)"
    kill -INT -- "-$BENCH_PID"                   # the whole group, as the terminal does
    rc=0; wait "$BENCH_PID" || rc=$?
    pgid=$BENCH_PID BENCH_PID=
    [ "$rc" = 130 ] || fail "bench.sh exited $rc: $(cat "$BATS_TEST_TMPDIR/int.log")"
    wait_for 10 group_empty "$pgid" || fail "left running: $(pgrep -a -g "$pgid")"
    ! pgrep -f "$out" >/dev/null || fail "left running: $(pgrep -a -f "$out")"
    run ip netns list
    refute_output --partial "$ns"
    [ "$(host_sysctls)" = "$before" ] || fail "host sysctls changed: $(diff <(echo "$before") <(host_sysctls))"
    grep -q ",interrupted," "$out/runs.csv"
    grep -q '"completed": false' "$out/meta.json"
}

@test "SIGINT to the group of bench.sh started as a plain background job (SIGINT ignored on entry): exit 130, interrupted, nothing left" {
    need_root
    before=$(host_sysctls)
    out=$BATS_TEST_TMPDIR/int-bg
    # Started with SIGINT ignored, as a non-interactive shell starts `bench.sh &`
    # (a script, a CI step; bats's own `&` may not, so it is set here);
    # setsid gives it its own group. The servers do not ignore SIGINT: bench.sh
    # must not either (it went on, recording the killed server as server-died,
    # and ran the next runs).
    # smallest: no calibration, no memory settling; REPEAT=2: a second run that must not start
    (trap '' INT; cd "$C1M_ROOT" && exec setsid env "${QUIET[@]}" CALIBRATE=0 MEM_SETTLE=0 TIERS=2k CONTENDERS=c REPEAT=2 HOLD=60 HEARTBEAT=1 \
        SETTLE_MAX=5 OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh) > "$out.log" 2>&1 &
    BENCH_PID=$!
    wait_for 60 in_hold "$out" || fail "never reached the hold: $(cat "$out.log")"
    rp=$(cat "$out"/runs/*/netns); rp=${rp#c1m-} rp=${rp%-*}
    kill -INT -- "-$BENCH_PID"
    wait_for 40 pids_gone "$BENCH_PID" || fail "bench.sh ignored SIGINT: $(tr '\r' '\n' < "$out.log" | tail -n 5)"
    rc=0; wait "$BENCH_PID" || rc=$?
    pgid=$BENCH_PID BENCH_PID=
    [ "$rc" = 130 ] || fail "bench.sh exited $rc: $(cat "$out.log")"
    nothing_left "$out" "$pgid" "$rp" "$before"
    run cut -d, -f5 "$out/runs.csv"
    assert_output $'status\ninterrupted'
}

@test "without root: says why and what to do, exits 1, creates nothing" {
    out=$BATS_TEST_TMPDIR/noroot
    if [ "$(id -u)" = 0 ]; then
        nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
        "${nobody[@]}" test -x "$C1M_ROOT/harness/bench.sh" \
            || skip "user nobody cannot run $C1M_ROOT/harness/bench.sh (checkout not world-readable)"
    else
        nobody=()
    fi
    run "${nobody[@]}" env TIERS=2k OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" "$C1M_ROOT/harness/bench.sh"
    assert_failure 1
    assert_output --partial "needs root"
    assert_output --partial "network namespaces"
    assert_output --partial "sudo make bench"
    [ ! -e "$out" ]
}

@test "memory guard: a tier that will not fit is skipped with a message and a row; the suite goes on" {
    need_root
    out=$BATS_TEST_TMPDIR/guard
    # need = N x max(measured, 8192 B) x 1.15 + MIN_AVAILABLE_MIB (1024) + 256 MiB:
    # 1k (nothing measured yet: 8192 B) needs 1289 MiB, 2k at least 1298 MiB.
    # smallest: no hold, no calibration, no memory settling in the run (the 2k
    # tier's need above is the floor's, whatever the 1k run measures): the
    # guard's verdict comes before each run.
    # SETTLE_MAX=09: the one settle (after the 1k run) reads it as decimal 9
    # (bash arithmetic fails on 09); the leading-zeros test below settles never
    run env -C "$C1M_ROOT" "${QUIET[@]}" CALIBRATE=0 MEM_SETTLE=0 TIERS=2k,1k CONTENDERS=c HOLD=0 MEM_GUARD_MIB=1293 OUT="$out" \
        SETTLE_MAX=09 PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
    assert_success
    refute_output --partial "value too great"
    assert_output --partial "skipped: does not fit in memory"
    assert_output --partial "MEM_GUARD_MIB"
    run cut -d, -f1-6 "$out/runs.csv"
    # (suspect: machine-wide slab noise from another suite; the guard is what this tests)
    assert_line --regexp '^c,1000,1k,1,(ok|suspect),1000$'
    assert_line --regexp '^c,2000,2k,1,skipped-memory,'
    grep -q "skipped-memory" "$out/report.md"
}

@test "SIGTERM to the process group (timeout, a CI cancel): exit 130, nothing left, the run recorded" {
    need_root
    stop_bench_with term TERM group             # every process of the group at once
    [ -s "$STOPPED_OUT"/runs/*/result.json ] || fail "run_one.sh wrote no result.json"
}

@test "SIGTERM to bench.sh alone: it stops the run (whose cleanup runs), exit 130, nothing left" {
    need_root
    stop_bench_with term-one TERM bench
}

@test "SIGHUP to the process group (a closed terminal): exit 130, nothing left" {
    need_root
    stop_bench_with hup HUP group
}

@test "kill -9 of run_one.sh: bench.sh sees it at once, removes what it left (a raised fs.file-max and a set tcp_mem too), says so" {
    need_root
    # Lower fs.file-max under what a 3k run needs (2 x 3000 + 200000): the run
    # raises it, and only its saved state can put it back after a kill -9.
    # 204000 still covers the 2k runs other suites may start meanwhile, which
    # then leave it alone. (Root is exempt from fs.file-max anyway.)
    FILE_MAX_SAVED=$(sysctl -n fs.file-max)
    sysctl -q -w fs.file-max=204000
    before=$(host_sysctls)
    tcp_mem_was=$(tcp_mem_now) want=$(tcp_mem_up)
    out=$BATS_TEST_TMPDIR/kill-run
    start_bench "$out" TIERS=3k TCP_MEM="$want"
    [ "$(sysctl -n fs.file-max)" = 206000 ] || fail "the run did not raise fs.file-max: $(sysctl -n fs.file-max)"
    [ "$(tcp_mem_now)" = "${want//,/ }" ] || fail "the run did not set tcp_mem to $want: $(tcp_mem_now)"
    kill -KILL "$RUN_PID"
    # noticed at once, not after the 60 s hold
    wait_for 30 pids_gone "$BENCH_PID" || fail "bench.sh still waiting: $(cat "$out.log")"
    rc=0; wait "$BENCH_PID" || rc=$?
    pgid=$BENCH_PID BENCH_PID=
    [ "$rc" = 1 ] || fail "bench.sh exited $rc (a harness error is 1): $(cat "$out.log")"
    nothing_left "$out" "$pgid" "$RUN_PID" "$before"
    run cat "$out.log"
    assert_output --partial "removed what run_one.sh (pid $RUN_PID) left: namespace $RUN_NS deleted"
    assert_output --partial "counters file /dev/shm/c1m-run-$RUN_PID.stats removed"
    assert_output --partial "fs.file-max restored to 204000"
    assert_output --partial "net.ipv4.tcp_mem restored to $tcp_mem_was"
    run cut -d, -f5 "$out/runs.csv"
    assert_line harness-error
    grep -q "run_one.sh was killed (signal 9)" "$out/runs.csv"
}

@test "kill -9 of bench.sh: the next bench.sh stops the orphaned run, removes what it left, says so" {
    need_root
    before=$(host_sysctls)
    out=$BATS_TEST_TMPDIR/kill-bench
    start_bench "$out"
    kill -KILL "$BENCH_PID"
    wait "$BENCH_PID" 2>/dev/null || true
    pgid=$BENCH_PID BENCH_PID=
    kill -0 "$RUN_PID" || fail "run_one.sh died with bench.sh: this test needs it orphaned"
    # smallest: the second suite one c run, no hold, no calibration, no memory
    # settling: it removes the leftovers before its run, which then holds all N (ok)
    run env -C "$C1M_ROOT" "${QUIET[@]}" CALIBRATE=0 MEM_SETTLE=0 TIERS=2k CONTENDERS=c HOLD=0 HEARTBEAT=1 SETTLE_MAX=5 \
        OUT="$BATS_TEST_TMPDIR/second" PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
    assert_success
    assert_output --partial "removed leftovers of an interrupted run: run_one.sh pid $RUN_PID runs on without its bench.sh"
    # ok, or suspect for machine-wide slab noise only (the orphan's sockets,
    # removed just before, may still be freed during the run)
    assert_line --regexp "^c +2k +(ok|suspect) "
    nothing_left "$out" "$pgid" "$RUN_PID" "$before"
}

@test "CPUS_SERVER=0 CPUS_CLIENT=1 PORTS=9200-9202: the server and the client pinned (taskset), three ports; ok" {
    need_suite
    [ "$(grep -c '^cpu[0-9]' /proc/stat)" -ge 2 ] || skip "needs 2 CPUs"
    # the shared suite's c run (smallest: no suite of its own)
    run "$PYTHON" - "$RUN_DIR" <<'PY'
import json, os, sys
r = [r for r in (json.loads(l) for l in open(os.path.join(sys.argv[1], "runs.jsonl"))) if r["contender"] == "c"][0]
from_ok = r["status"] in ("ok", "suspect")
assert from_ok, (r["status"], r.get("note"))
assert (r["server_cpus"], r["client_cpus"], r["port"]) == ("0", "1", "9200-9202"), r
assert r["server_cmd"].startswith("taskset -c 0 ") and "--port 9200-9202" in r["server_cmd"], r["server_cmd"]
assert r["accepted"] == 2000 and r["acceptq_listeners"] >= 3, r
print("ok")
PY
    assert_output "ok"
}

@test "bench.sh: bad settings exit 2 naming the setting, before anything is created" {
    out=$BATS_TEST_TMPDIR/bad
    check() {     # check SETTING EXPECTED-TEXT VAR=value...
        local what=$1 text=$2; shift 2
        run env -C "$C1M_ROOT" CONTENDERS=c OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" "$@" harness/bench.sh
        [ "$status" = 2 ] || fail "$*: exit $status, not 2: $output"
        assert_output --partial "$what"
        assert_output --partial "$text"
        [ ! -e "$out" ] || fail "$*: created $out"
    }
    check TIERS "more than this machine could ever hold" TIERS=9999999999999k
    check TIERS "more than this machine could ever hold" TIERS=2k,99999999m
    check TIERS "more than this machine could ever hold" TIERS="$(( $(awk '/^MemTotal:/{print $2}' /proc/meminfo) / 8 + 1 ))"
    check TIERS "set but empty" TIERS=
    check TIERS "not a connection count: '2x'" TIERS=2x
    check TIERS "at least 1" TIERS=0
    check TIERS "not a connection count: '*'" TIERS='2k,*'
    check CONTENDERS "set but empty" TIERS=2k CONTENDERS=
    check CONTENDERS "unknown contender 'bogus'" TIERS=2k CONTENDERS=c,bogus
    check REPEAT "expects a count" TIERS=2k REPEAT=99999999999999999999999
    check HOLD "expects whole seconds" TIERS=2k HOLD=-1
    check PORTS "expects a port" TIERS=2k PORTS=9000-8000
    check CPUS_SERVER "expects a CPU list" TIERS=2k CPUS_SERVER=4096
    check APPLY_SYSCTL "only with HOSTS" TIERS=2k APPLY_SYSCTL=1
    check MEM_SETTLE "expects 1 or 0" TIERS=2k MEM_SETTLE=yes
    check MEM_SETTLE "local runs only" TIERS=2k MEM_SETTLE=0 HOSTS=/nonexistent/hosts
    # an OUT that cannot be created, or already holds a run: exit 2 naming OUT (was 1)
    [ "$(id -u)" = 0 ] || return 0            # non-root stops at the root check (exit 1)
    check "OUT=/proc/c1m-nothing: cannot create it" "No such file" TIERS=2k OUT=/proc/c1m-nothing
    mkdir -p "$BATS_TEST_TMPDIR/done" && : > "$BATS_TEST_TMPDIR/done/runs.csv"
    check "OUT=$BATS_TEST_TMPDIR/done already holds a runs.csv" "choose another OUT" TIERS=2k OUT="$BATS_TEST_TMPDIR/done"
    # an earlier suite's records without their runs.csv: never appended to (was: accepted)
    local d=$BATS_TEST_TMPDIR/old
    mkdir -p "$d/runs/c-2k-1" && : > "$d/runs.jsonl" && : > "$d/meta.json"
    check "OUT=$d already holds an earlier suite's runs.jsonl meta.json runs/" "choose another OUT" TIERS=2k OUT="$d"
    rm "$d/runs.jsonl" "$d/meta.json"
    check "OUT=$d already holds an earlier suite's runs/" "choose another OUT" TIERS=2k OUT="$d"
    [ -z "$(ls -A "$d/runs/c-2k-1")" ] && [ ! -e "$d/ramp" ] || fail "OUT=$d was written to"
    rmdir "$d/runs/c-2k-1"
    : > "$d/meta.json"
    check "OUT=$d already holds an earlier suite's meta.json" "choose another OUT" TIERS=2k OUT="$d"
}

@test "bench.sh: numbers with leading zeros are decimal (REPEAT=010 is 10 repeats; MIN_AVAILABLE_MIB=08 no arithmetic error)" {
    need_root
    # smallest: every run skipped by the memory guard (nothing measured, so no
    # settle between them: SETTLE_MAX=09 is read in the memory guard test), no calibration
    run env -C "$C1M_ROOT" "${QUIET[@]}" CALIBRATE=0 TIERS=1k CONTENDERS=c HOLD=01 REPEAT=010 MIN_AVAILABLE_MIB=08 \
        SETTLE_MAX=09 MEM_GUARD_MIB=1 OUT="$BATS_TEST_TMPDIR/zeros" PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
    assert_success
    assert_output --regexp "repeat 10; .*10 runs"
    refute_output --partial "value too great"
    [ "$(grep -c ',skipped-memory,' "$BATS_TEST_TMPDIR/zeros/runs.csv")" = 10 ]
}

@test "bench.sh: an OUT another user owns or can write is refused (exit 2), nothing written through it" {
    need_root
    local t=$BATS_TEST_TMPDIR victim=$BATS_TEST_TMPDIR/victim d
    echo original > "$victim"
    refused() {     # refused OUT EXPECTED-TEXT
        run env -C "$C1M_ROOT" "${QUIET[@]}" TIERS=1k CONTENDERS=c HOLD=1 MEM_GUARD_MIB=1 OUT="$1" \
            PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
        [ "$status" = 2 ] || fail "OUT=$1: exit $status, not 2: $output"
        assert_output --partial "$2"
        [ "$(cat "$victim")" = original ] || fail "OUT=$1: root wrote through a planted symlink"
    }
    # user nobody's directory with a bench.log that points at a file of root's
    d=$t/nobodys && mkdir "$d" && ln -s "$victim" "$d/bench.log" && chown -h 65534:65534 "$d" "$d/bench.log"
    refused "$d" "belongs to uid 65534"
    [ ! -e "$d/runs" ] || fail "created runs/ in $d"
    refused "$d/sub/out" "$d belongs to uid 65534"
    [ ! -e "$d/sub" ] || fail "created $d/sub"
    # root's but writable by others (sticky or not), or below such a directory
    mkdir -m 1777 "$t/open" && ln -s "$victim" "$t/open/bench.log"
    refused "$t/open" "(mode 1777) is writable by other users"
    mkdir -m 0777 "$t/open2"
    refused "$t/open2/out" "(mode 777) is writable by other users"
}

@test "bench.sh's wait for a run starts no process per tick (the controller's cost) and copies the run's log as it comes" {
    # wait_run and show_log from bench.sh, run with no command on PATH: a tick
    # that starts a process (sleep, cat) fails
    run timeout 30 bash -c 'eval "$(sed -n -e "/^wait_run() {/,/^}/p" -e "/^show_log() {/,/^}/p" "$1/harness/bench.sh")"
        eval "$(sed -n -e "/^wait_child() {/,/^}/p" -e "/^timed_read() {/,/^}/p" "$1/harness/lib/common.sh")"
        log=$2/run.log; : > "$log"
        (echo first; sleep 0.5; printf "second\rthird"; sleep 0.5; printf " fourth\n"; exit 7) >> "$log" &
        pid=$!
        exec {CUR_LOG}<"$log"
        RUN_RC=""
        PATH=/nonexistent
        wait_run "$pid"
        echo "rc=$RUN_RC"' _ "$C1M_ROOT" "$BATS_TEST_TMPDIR"
    assert_success
    assert_output "first"$'\n'"second"$'\r'"third fourth"$'\n'"rc=7"
}

@test "wait_child: the child's exit status, CMD each tick, and a stop signal's trap run while the child ignores that signal" {
    # (an `&` child ignores SIGINT: the trap must not wait for it to end)
    run timeout 30 bash -c 'eval "$(sed -n -e "/^wait_child() {/,/^}/p" -e "/^timed_read() {/,/^}/p" "$1/harness/lib/common.sh")"
        (sleep 0.5; exit 3) &
        n=0; tick() { n=$((n + 1)); }
        wait_child "$!" tick; echo "rc=$? ticks>=2:$([ "$n" -ge 2 ] && echo yes)"
        sleep 20 & pid=$!
        trap "echo trapped after \$((SECONDS - t0)) s; kill \$pid; exit 130" INT
        t0=$SECONDS
        (sleep 0.3; kill -INT $$) &
        wait_child "$pid"
        echo "not reached"' _ "$C1M_ROOT"
    [ "$status" = 130 ] || fail "exit $status: $output"
    assert_line "rc=3 ticks>=2:yes"
    assert_line --regexp '^trapped after [0-2] s$'
    refute_output --partial "not reached"
}

@test "nap: a stop signal ends the script at once (130) and its sleep with it: a reader of its output is not held" {
    # the quiet gate's and the hold's sleeps (sleep & wait) outlived a stopped run_one.sh
    # by up to 2 s, holding its stdout: \$(...) below waited for them
    for sig in INT TERM; do
        run timeout 10 bash -c 'out=$(bash -c "source \"\$1/harness/lib/common.sh\"
                (sleep 0.3; kill -$2 \$\$) & nap 20; echo not reached" _ "$1" 2>&1); echo "rc=$? $out"' _ "$C1M_ROOT" "$sig"
        assert_success
        assert_output "rc=130 interrupted (SIG$sig): cleaning up"
    done
}

@test "wait_line: the first matching line once it comes, 1 after its seconds, and a stop signal ends the wait at once (130)" {
    # the push and stall scenarios wait so for the client's answer to their signal
    log=$BATS_TEST_TMPDIR/client.log
    : > "$log"
    run timeout 20 bash -c 'source "$1/harness/lib/common.sh"
        (sleep 0.3; echo "c1m-client: stalled 7 connections at 5 us" >> "$2"; echo "c1m-client: stalled 8 connections at 6 us" >> "$2") &
        wait_line "$2" "^c1m-client: stalled [0-9]+ connections" 5; echo "rc=$? [$WAIT_LINE]"
        t0=$SECONDS; wait_line "$2" "^never" 1; echo "rc=$? after $((SECONDS - t0)) s"' _ "$C1M_ROOT" "$log"
    assert_success
    assert_line "rc=0 [c1m-client: stalled 7 connections at 5 us]"
    assert_line --regexp '^rc=1 after [12] s$'
    for sig in INT TERM; do
        run timeout 10 bash -c 'out=$(bash -c "source \"\$1/harness/lib/common.sh\"
                (sleep 0.3; kill -$2 \$\$) & wait_line /dev/null ^x 20; echo not reached" _ "$1" "$2" 2>&1); echo "rc=$? $out after $SECONDS s"' _ "$C1M_ROOT" "$sig"
        assert_success
        assert_output --regexp "^rc=130 interrupted \(SIG$sig\): cleaning up after [01] s$"
    done
}

@test "run_one.sh: every bad flag exits 2 naming it, before anything is created" {
    out=$BATS_TEST_TMPDIR/bad-run
    state=$BATS_TEST_TMPDIR/state      # where run_one.sh would note what it creates
    check() {     # check FLAG-IN-MESSAGE ARGS...
        local flag=$1; shift
        run timeout 20 env PYTHON="$PYTHON" BUILD="$C1M_BUILD" C1M_STATE_ROOT="$state" \
            "$C1M_ROOT/harness/run_one.sh" "$@"
        [ "$status" = 2 ] || fail "run_one.sh $*: exit $status, not 2: $output"
        assert_output --partial "$flag"
        [ ! -e "$out" ] || fail "run_one.sh $*: created $out"
        [ ! -e "$state" ] || fail "run_one.sh $*: got as far as its state directory (then the namespace)"
    }
    check "--contender: needs a value" --contender
    check "--contender: unknown contender 'bogus'" --contender bogus --conns 2k --out "$out"
    check "--port: expects a port 1..65535" --contender c --conns 2k --out "$out" --port 99999
    check "--port: expects a port 1..65535" --contender c --conns 2k --out "$out" --port 0
    check "--port: expects a port 1..65535 or a range" --contender c --conns 2k --out "$out" --port 9010-9000
    check "--port: expects a port 1..65535 or a range" --contender c --conns 2k --out "$out" --port 1000-3000
    check "--server-cpus: expects a CPU list" --contender c --conns 2k --out "$out" --server-cpus 99
    check "--client-cpus: expects a CPU list" --contender c --conns 2k --out "$out" --client-cpus 0-x
    check "--conns: '9999999999999k' is more than" --contender c --conns 9999999999999k --out "$out"
    check "--conns: needs a value" --contender c --out "$out" --conns
    check "--out: required" --contender c --conns 2k
    check "--hold: expects a whole number" --contender c --conns 2k --out "$out" --hold 1.5
    check "--timeout: expects whole seconds" --contender c --conns 2k --out "$out" --timeout 0
    check "--baseline-slab-kib: expects KiB" --contender c --conns 2k --out "$out" --baseline-slab-kib 99999999999999999999
    check "--baseline-tcp-objs: expects a count" --contender c --conns 2k --out "$out" --baseline-tcp-objs 9223372036854775807
    check "--server-worker-conns: expects a count" --contender c --conns 2k --out "$out" --server-worker-conns 0
    check "--client-worker-conns: expects a count" --contender c --conns 2k --out "$out" --client-worker-conns x
    check "--mem-settle: expects 1 or 0" --contender c --conns 2k --out "$out" --mem-settle 2
    check "--perf: expects 1 or 0" --contender c --conns 2k --out "$out" --perf yes
    PERF_PERIOD_US=5 check "PERF_PERIOD_US: expects 10..1000000" --contender c --conns 2k --out "$out" --perf 1
    check "unknown flag: --bogus" --contender c --conns 2k --out "$out" --bogus
}

@test "harness Python entry points exit 2 on bad arguments" {
    for py in "$C1M_ROOT"/harness/lib/*.py; do
        grep -q '__main__' "$py" || continue      # a module, not a command
        run "$PYTHON" "$py"
        [ "$status" = 2 ] || fail "${py##*/} without arguments: exit $status: $output"
        run "$PYTHON" "$py" no-such-command --no-such-flag
        [ "$status" = 2 ] || fail "${py##*/} no-such-command: exit $status: $output"
    done
}

@test "a reference run is refused from a dirty git tree (exit 2, the reason), accepted from a clean one" {
    need_root
    command -v git >/dev/null || skip "needs git"
    # A copy of the harness as its own git checkout, so the shared tree's state
    # does not matter.
    tree=$BATS_TEST_TMPDIR/tree
    mkdir -p "$tree"
    cp -r "$C1M_ROOT/harness" "$C1M_ROOT/py_server" "$tree/"
    git -C "$tree" init -q
    git -C "$tree" add -A
    git -C "$tree" -c user.name=t -c user.email=t@t commit -qm tree
    echo "# local change" >> "$tree/harness/kernel-profile.conf"
    run env -C "$tree" "${QUIET[@]}" TIERS=1k CONTENDERS=c OUT=results/reference-x PYTHON="$PYTHON" \
        BUILD="$C1M_BUILD" harness/bench.sh
    assert_failure 2
    assert_output --partial "a reference run needs a clean git tree"
    assert_output --partial "harness/kernel-profile.conf"
    [ ! -e "$tree/results/reference-x" ]
    git -C "$tree" -c user.name=t -c user.email=t@t commit -qam change
    # clean: accepted (the memory guard skips the run: nothing is measured)
    # (no calibration: nothing is measured)
    run env -C "$tree" "${QUIET[@]}" CALIBRATE=0 TIERS=1k CONTENDERS=c OUT=results/reference-x MEM_GUARD_MIB=1 \
        PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
    assert_success
    assert_output --partial "skipped: does not fit in memory"
    # any other OUT is not a reference: no git check
    echo "# again" >> "$tree/harness/kernel-profile.conf"
    run env -C "$tree" "${QUIET[@]}" CALIBRATE=0 TIERS=1k CONTENDERS=c OUT=results/other MEM_GUARD_MIB=1 \
        PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
    assert_success
}

@test "the cleanup stack keeps commands as words: nothing in them is evaluated, each runs once, in reverse" {
    run bash -c '
        source "$1/harness/lib/common.sh"
        on_exit printf "%s\n" "first registered, runs last"
        on_exit printf "%s\n" "\$(touch $2/evaluated); a b"
        on_exit false                               # a failing entry does not stop the rest
        on_exit printf "%s\n" "runs first"
        exit 0' _ "$C1M_ROOT" "$BATS_TEST_TMPDIR"
    assert_output "runs first
\$(touch $BATS_TEST_TMPDIR/evaluated); a b
first registered, runs last"
    [ ! -e "$BATS_TEST_TMPDIR/evaluated" ] || fail "a cleanup command's argument was evaluated"
}

@test "the orphan sweep removes a killed remote controller's files, a live one's stay, a symlink is not followed, another user's files stay" {
    need_root
    sleep 0 & dead=$!; wait "$dead"
    tag=c1m-remote-$dead-1796173048 live=c1m-remote-$$-1796173048
    : > "/dev/shm/$tag.stats"; : > "/tmp/$tag-server.log"; : > "/tmp/$tag-198.51.100.11.json"
    : > "/dev/shm/$live.stats"; : > "$BATS_TEST_TMPDIR/target"
    ln -s "$BATS_TEST_TMPDIR/target" "/tmp/$tag-link.log"
    # another user's files of those names: not root's to delete
    : > "/tmp/$tag-nobody.log"; : > "/dev/shm/c1m-run-$dead.stats"
    chown 65534:65534 "/tmp/$tag-nobody.log" "/dev/shm/c1m-run-$dead.stats"
    run bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/netns.sh"
        source "$1/harness/lib/orphans.sh"; C1M_STATE_ROOT=$2
        orphans_scan; printf "%s\n" "${ORPHAN_REPORT[@]}"' _ "$C1M_ROOT" "$BATS_TEST_TMPDIR/state"
    rm -f "/dev/shm/$live.stats" "/tmp/$tag-link.log"
    left=0; [ -e "/tmp/$tag-nobody.log" ] && [ -e "/dev/shm/c1m-run-$dead.stats" ] && left=1
    rm -f "/tmp/$tag-nobody.log" "/dev/shm/c1m-run-$dead.stats"
    [ "$left" = 1 ] || fail "another user's file removed: $output"
    refute_output --partial "nobody.log"
    assert_success
    assert_line "remote run file /dev/shm/$tag.stats removed"
    assert_line "remote run file /tmp/$tag-server.log removed"
    assert_line "remote run file /tmp/$tag-198.51.100.11.json removed"
    refute_output --partial "$live"
    refute_output --partial "link.log"
    [ ! -e "/dev/shm/$tag.stats" ] && [ ! -e "/tmp/$tag-server.log" ] || fail "files left"
    [ -e "$BATS_TEST_TMPDIR/target" ] || fail "the symlink's target was removed"
}
