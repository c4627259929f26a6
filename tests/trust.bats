#!/usr/bin/env bats
# A run's figures count only when the run proves them (issue 7): the quiet
# gate before a run, the disturbance measured during it, the health checked at
# the end of the hold, and the sanity bounds of the per-run record. run_one.sh
# directly on a 2k tier (700 connections per server worker: 3 workers + 1 for
# the remainder), each run in its own namespace as the harness makes it.

# bats file_tags=serial,harness
load helpers
load_bats_libs

setup() {
    RUN_PID='' BURN_PID='' PENDING_NS='' TCP_MEM_WAS=''
    OUT=$BATS_TEST_TMPDIR/run
}

teardown() {
    # the host's tcp_mem as it was, whatever the test did (it is machine-wide)
    [ -z "$TCP_MEM_WAS" ] || echo "$TCP_MEM_WAS" > /proc/sys/net/ipv4/tcp_mem
    stop_pid "$RUN_PID"
    stop_pid "$BURN_PID"          # timeout(1) passes the TERM on to its shell
    [ -z "$PENDING_NS" ] || ip netns del "$PENDING_NS" 2>/dev/null
    check_sanitizer_logs
}

# run_one ARGS...: harness/run_one.sh, c at 2k, several workers on both sides.
# smallest: no memory settling (--mem-settle 0: 3 s a run): no test here judges
# a memory figure but the normal run's and the kernel's TCP memory limit's
# (the pings queued by the reading), which settle (--mem-settle 1).
run_one() {
    (cd "$C1M_ROOT" && exec env BUILD="$C1M_BUILD" PYTHON="$PYTHON" harness/run_one.sh \
        --contender c --conns 2000 --out "$OUT" --heartbeat 1 --server-worker-conns 700 \
        --client-worker-conns 800 --mem-settle 0 "$@")
}
# get KEY...: values from the run's result.json
get() { "$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$OUT/result.json" "$@"; }
# the record, for a failure message
show() { cat "$OUT/result.json" "$OUT.err" >&2 2>/dev/null; return 0; }
# healthy TEXT: the health column of a run where all three counts are 2000
healthy() {
    [[ $1 == "target=2000 server=2000 sockets=2000 (inuse 4"???" - "*" listening, /2) client=2000 workers_dead=0/"* ]] \
        || { show; fail "health: $1"; }
}
burner_started() { [ -n "$(cat "/proc/$BURN_PID/task/$BURN_PID/children" 2>/dev/null)" ]; }

@test "trust: the disturbance sampler counts short-lived outside processes and names a busy one (tests/py/test_record.py, C1M_SERIAL=1)" {
    run bash -c "cd '$C1M_ROOT' && C1M_SERIAL=1 '$PYTHON' -m unittest tests.py.test_record.DisturbSamplerTest tests.py.test_record.DisturbSamplerRootTest 2>&1"
    assert_success
    refute_output --partial "skipped"
}

@test "trust: bad gate and disturbance settings exit 2 naming them, before anything is created" {
    run env BUILD="$C1M_BUILD" "$C1M_ROOT/harness/run_one.sh" --contender c --conns 10 --out "$OUT" --quiet-cpu-pct 101
    assert_failure 2
    assert_output --partial "--quiet-cpu-pct"
    run env BUILD="$C1M_BUILD" "$C1M_ROOT/harness/run_one.sh" --contender c --conns 10 --out "$OUT" --disturb-pct x
    assert_failure 2
    assert_output --partial "--disturb-pct"
    run env BUILD="$C1M_BUILD" "$C1M_ROOT/harness/run_one.sh" --contender c --conns 10 --out "$OUT" --baseline-tcp-objs -1
    assert_failure 2
    assert_output --partial "--baseline-tcp-objs"
    [ ! -e "$OUT" ]
    for bad in x 1,2 1,2,3,4 3,2,1 0,1,2 1,,2 1,2,3, -1,2,3 auto,1; do
        run env BUILD="$C1M_BUILD" "$C1M_ROOT/harness/run_one.sh" --contender c --conns 10 --out "$OUT" --tcp-mem "$bad"
        assert_failure 2
        assert_output --partial "--tcp-mem: expects"
    done
    [ ! -e "$OUT" ]
    for knob in QUIET_MAX=x QUIET_CPU_PCT=200 DISTURB_PCT=-1 TCP_MEM=1,2 TCP_MEM=huge; do
        run env "$knob" TIERS=2k BUILD="$C1M_BUILD" "$C1M_ROOT/harness/bench.sh"
        assert_failure 2
        assert_output --partial "${knob%%=*}:"
    done
}

# gate SHELL-CODE: run lib/gate.sh's quiet_gate in a bash with the harness
# libraries loaded; SHELL-CODE may redefine a probe first (a fake namespace list).
gate() {
    bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/probe.sh"
             source "$1/harness/lib/gate.sh"; eval "$2"; echo "$GATE|$GATE_WAIT_S|$GATE_CAUSE"' \
        gate "$C1M_ROOT" "$1"
}

@test "trust: pid_ticks and cpu_ticks read every pid still there, past one that has ended" {
    # mawk stops at the first file it cannot open: a worker ending between the
    # list and the read must not hide the pids after it
    run bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/probe.sh"
        sleep 0.01 & gone=$!; wait $gone
        pid_ticks 1 "$gone" $$ | cut -d" " -f1 | tr "\n" " "; echo "sum=$(cpu_ticks 1 "$gone" $$)"
        echo "none=[$(pid_ticks)] zero=$(cpu_ticks "$gone")"' probe "$C1M_ROOT"
    assert_success
    assert_line --index 0 --regexp "^1 [0-9]+ sum=[0-9]+$"
    assert_line --index 1 "none=[] zero=0"
}

@test "trust: machine CPU % of one CPU counts every CPU, whatever the affinity or OMP_NUM_THREADS" {
    local n
    n=$(grep -c '^cpu[0-9]' /proc/stat)
    # run_one.sh records the CPUs /proc/stat sums (obs stat_cpus), never nproc's
    # (which follows the affinity: run_one.sh used it, and got 50 here)
    grep -qF "obs stat_cpus \"\$(grep -c '^cpu[0-9]' /proc/stat)\"" "$C1M_ROOT/harness/run_one.sh" \
        || fail "run_one.sh does not record /proc/stat's CPUs"
    ! grep -n 'nproc' "$C1M_ROOT/harness/run_one.sh" || fail "run_one.sh counts CPUs with nproc"
    # lib/judge.py: half of all CPUs busy = 50 x the CPU count
    run env OMP_NUM_THREADS=1 taskset -c 0 "$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import judge
print(judge._pct_of_one_cpu("1000 2000", "1050 2100", int(sys.argv[2])))' "$C1M_ROOT/harness/lib" "$n"
    assert_success
    assert_output "$((50 * n))"
}

@test "trust: the quiet gate passes a quiet machine, times out on a busy one, and can be off" {
    # no other run's namespace, baselines far above anything: only the CPU window counts
    run gate 'gate_other_namespaces() { :; }; quiet_gate 30 100 999999999 999999999 own'
    assert_success
    assert_output --regexp '^quiet\|[0-9.]+\|$'
    run gate 'gate_other_namespaces() { echo "c1m-1-2 "; }; quiet_gate 3 100 999999999 999999999 own'
    assert_line --regexp '^timeout\|[0-9.]+\|namespaces pending: c1m-1-2$'
    assert_line --partial 'quiet gate: waiting'
    # the kernel still holding sockets: TCP objects far above the suite's baseline
    run gate 'gate_other_namespaces() { :; }; gate_tcp_objs() { echo 100000; }; quiet_gate 1 100 999999999 0 own'
    assert_line --regexp '^timeout\|[0-9.]+\|TCP objects 100000 vs baseline 0$'
    run gate 'quiet_gate 0 10 "" "" own'
    assert_output "off|0|"
}

@test "trust: a normal run is ok, with the three end-of-hold counts equal" {
    need_root
    # The machine is shared with whatever else runs (other suites' benchmark
    # runs make the gate wait): no gate here (the gate's own tests are above),
    # no disturbance limit.
    run_one --quiet --hold 2 --quiet-max 0 --disturb-pct 100 --mem-settle 1 2> "$OUT.err"
    [ -f "$OUT/result.json" ] || { cat "$OUT.err" >&2; fail "no result.json"; }
    [ ! -e "$OUT/result.env" ]
    run get status gate workers_dead open_after_hold client_open_at_end health flags
    [ "${lines[0]}" = ok ] || { show; fail "status ${lines[0]}"; }
    assert_equal "${lines[1]}" off
    assert_equal "${lines[2]}" 0
    assert_equal "${lines[3]}" 2000
    assert_equal "${lines[4]}" 2000
    healthy "${lines[5]}"
    run get flags
    assert_output ""
    # the kernel's TCP memory limit was not met: the counters are there, at 0
    run get tcp_mem_pressures tcp_abort_on_memory tcp_mem
    assert_output "0"$'\n'"0"$'\n'"$(sysctl -n net.ipv4.tcp_mem | tr -s ' \t' ' ')"
    # and what the kernel counted against it with all open (machine-wide, KiB)
    run get sockstat_tcp_mem_kib
    [[ $output =~ ^[0-9]+$ ]] || { show; fail "sockstat_tcp_mem_kib: '$output'"; }
    # where the kernel's share went: the caches that grew, the TCP socket's among them
    run get slab_growth
    [[ $output =~ (^|;)TCP=[0-9]+(;|$) ]] || { show; fail "slab_growth: '$output'"; }
    [ -s "$OUT/slabinfo-idle.txt" ] && [ -s "$OUT/slabinfo-full.txt" ]
    # every disturbance figure is there, as a number (% of the machine, 0..100)
    for k in gate_wait_s outside_cpu_pct outside_ramp_pct outside_hold_pct init_cpu_pct \
             controller_cpu_pct ksoftirqd_pct steal_pct softirq_pct; do
        run get "$k"
        [[ $output =~ ^[0-9]+(\.[0-9]+)?$ ]] || { show; fail "$k: '$output'"; }
        awk -v v="$output" 'BEGIN{exit !(v <= 100)}' || fail "$k: $output > 100"
    done
    # the client's whole summary is kept, and its flat columns derived from it
    run get client.established client_established client.open_at_end
    assert_output $'2000\n2000\n2000'
    [ -s "$OUT/disturb.jsonl" ]
}

@test "trust: a run beside a CPU burner is disturbed, naming the burner" {
    need_root
    timeout 120 sh -c 'while :; do :; done' &
    BURN_PID=$!
    local burner=""
    wait_for 5 burner_started
    burner=$(tr -d ' ' < "/proc/$BURN_PID/task/$BURN_PID/children")
    [ -n "$burner" ]
    run_one --quiet --hold 3 --quiet-max 0 --disturb-pct 5 2> "$OUT.err"
    stop_pid "$BURN_PID"; BURN_PID=
    run get status gate disturb_cause outside_cpu_pct health
    [ "${lines[0]}" = disturbed ] || { show; fail "status ${lines[0]}"; }
    assert_equal "${lines[1]}" off
    [[ ${lines[2]} == *"sh[$burner]="* ]] || fail "the cause does not name sh[$burner]: ${lines[2]}"
    # one CPU of two spinning: far above the 5% limit
    awk -v v="${lines[3]}" 'BEGIN{exit !(v > 20)}' || fail "outside_cpu_pct ${lines[3]}"
    healthy "${lines[4]}"
}

@test "trust: a run that meets the kernel's TCP memory limit (tcp_mem) is never ok, and says so; --tcp-mem sets it for the run only" {
    need_root
    # tcp_mem is one setting for the whole machine: the run lowers it for
    # itself (--tcp-mem) and must put it back (teardown does too, should the
    # harness not). The floor never reads: every heartbeat stays in its
    # receive queues, a page or more per connection, 2,000 pages or so for
    # 2,000 connections, past the 200-page pressure threshold and the
    # 400-page hard limit while the run is measured (each socket keeps its
    # minimum, tcp_rmem[0], so the pings are still queued). (c reads them at
    # once: only its client's stop, 2,000 FINs, met that limit, which
    # tcp_mem_pressures_stop counts apart and does not hold against the run.)
    TCP_MEM_WAS=$(tr -s '\t ' ' ' < /proc/sys/net/ipv4/tcp_mem)
    run_one --contender floor --quiet --hold 2 --quiet-max 0 --disturb-pct 100 --tcp-mem 100,200,400 --mem-settle 1 2> "$OUT.err"
    [ "$(tr -s '\t ' ' ' < /proc/sys/net/ipv4/tcp_mem)" = "$TCP_MEM_WAS" ] \
        || fail "tcp_mem not restored: $(cat /proc/sys/net/ipv4/tcp_mem), was $TCP_MEM_WAS"
    TCP_MEM_WAS=
    grep -q "setting net.ipv4.tcp_mem from .* to 100 200 400 for this run" "$OUT.err" || { show; fail "not said"; }
    run get status tcp_mem_pressures disturb_cause tcp_mem tcp_mem_pressures_stop
    [ "${lines[0]}" != ok ] || { show; fail "status ok under tcp_mem pressure"; }
    [ "${lines[1]}" -gt 0 ] || { show; fail "tcp_mem_pressures ${lines[1]}"; }
    [[ ${lines[2]} == *"the kernel's TCP memory limit was reached (net.ipv4.tcp_mem, machine-wide: 100 200 400 pages, set for this run by --tcp-mem 100,200,400)"* ]] \
        || { show; fail "cause: ${lines[2]}"; }
    [ "${lines[3]}" = "100 200 400" ] || { show; fail "tcp_mem column: ${lines[3]}"; }
    [[ ${lines[4]} =~ ^[0-9]+$ ]] || { show; fail "tcp_mem_pressures_stop: ${lines[4]}"; }
}

@test "trust: --tcp-mem auto sets the machine's memory in pages for the run, and puts the host's back" {
    need_root
    TCP_MEM_WAS=$(tr -s '\t ' ' ' < /proc/sys/net/ipv4/tcp_mem)
    local pages
    pages=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024 / $(getconf PAGESIZE) ))
    run_one --quiet --hold 1 --quiet-max 0 --disturb-pct 100 --tcp-mem auto 2> "$OUT.err"
    [ "$(tr -s '\t ' ' ' < /proc/sys/net/ipv4/tcp_mem)" = "$TCP_MEM_WAS" ] \
        || fail "tcp_mem not restored: $(cat /proc/sys/net/ipv4/tcp_mem), was $TCP_MEM_WAS"
    TCP_MEM_WAS=
    run get tcp_mem tcp_mem_pressures
    assert_output "$pages $pages $pages"$'\n'"0"
}

# kill_in_hold COMM [ARGS...]: start a run (ARGS: more run_one.sh flags) with a
# 4 s hold, kill -9 one worker process named COMM (a COMM in the run's
# namespace whose parent is a COMM) once the hold started, and wait for the
# run to finish (exit 0).
# smallest: a 4 s hold (was 10): the kill lands within a second of the hold's
# start (one look at the namespace's pids), and the health is judged at its end.
kill_in_hold() {
    mkdir -p "$OUT"
    run_one --hold 4 --quiet-max 0 --disturb-pct 100 "${@:2}" 2> "$OUT.err" &
    RUN_PID=$!
    wait_for 60 grep -q holding "$OUT.err" || { cat "$OUT.err" >&2; fail "the hold never started"; }
    local ns victim="" p pp
    ns=$(cat "$OUT/netns")
    for p in $(ip netns pids "$ns"); do
        pp=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || continue
        if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] \
           && [ "$(cat "/proc/$pp/comm" 2>/dev/null)" = "$1" ]; then
            victim=$p; break
        fi
    done
    [ -n "$victim" ] || fail "no $1 worker found in $ns"
    echo "$victim" > "$BATS_TEST_TMPDIR/victim"
    kill -KILL "$victim"
    wait "$RUN_PID"; local rc=$?
    RUN_PID=
    assert_equal "$rc" 0
}

@test "trust: kill -9 of one server worker mid-hold is server-died, never ok; the note names an OOM kill the kernel log shows" {
    need_root
    # a dmesg first on PATH that logs the victim's kill as the OOM killer's, stamped
    # now, after a line of an earlier boot's kill of the same pid (the note names it once)
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    printf '#!/bin/sh\nv=$(cat "%s/victim" 2>/dev/null) || exit 0\necho "[    1.000000] Out of memory: Killed process $v (old) total-vm:1kB"\necho "[$(cut -d" " -f1 /proc/uptime)] Out of memory: Killed process $v (c1m-server) total-vm:1kB, anon-rss:1kB"\n' \
        "$BATS_TEST_TMPDIR" > "$BATS_TEST_TMPDIR/bin/dmesg"
    chmod +x "$BATS_TEST_TMPDIR/bin/dmesg"
    PATH=$BATS_TEST_TMPDIR/bin:$PATH kill_in_hold c1m-server
    run get status workers_dead note
    [ "${lines[0]}" = server-died ] || { show; fail "status ${lines[0]}"; }
    [ "${lines[1]}" -ge 1 ]
    assert_line --index 2 --partial "server died during the run: "
    # the victim alone, once (the other workers the parent ended are not in the log)
    assert_line --index 2 --regexp "worker\(s\) dead(, parent gone)?; the kernel's OOM killer killed pid $(cat "$BATS_TEST_TMPDIR/victim") \(c1m-server\) \(dmesg\)$"
}

@test "trust: SCENARIO=push after a server worker died in the hold is server-died: no broadcast, no signal to its pids" {
    need_root
    PUSH_EVERY=0 PUSH_WAIT=5 kill_in_hold c1m-server --scenario push
    run get status note broadcast_sent_us
    [ "${lines[0]}" = server-died ] || { show; fail "status ${lines[0]}"; }
    assert_line --index 1 --partial "push: server died before the broadcast: "
    assert_line --index 1 --partial "; no broadcast"
    [ "${#lines[@]}" = 2 ] || fail "a broadcast was sent at ${lines[2]}"
    ! grep -q "broadcast to" "$OUT.err" || fail "signalled: $(grep "broadcast to" "$OUT.err")"
}

@test "trust: oom_killed names the dead pids the kernel log shows killed by the OOM killer since the server started" {
    # two pids that are gone, one alive (this shell)
    sleep 0 & local gone=$!
    wait "$gone"
    sleep 0 & local gone2=$!
    wait "$gone2"
    local kmsg=$BATS_TEST_TMPDIR/kmsg
    printf '%s\n' \
        "[ 9123.000300] oom-kill:constraint=CONSTRAINT_NONE,global_oom,task=python3,pid=$gone,uid=0" \
        "[ 9123.000400] Out of memory: Killed process $gone (python3) total-vm:1200000kB, anon-rss:250000kB" \
        "[ 9124.000100] Out of memory: Killed process $$ (bash) total-vm:1kB" \
        "[ 9125.000100] Memory cgroup out of memory: Killed process $gone2 (Web Content) total-vm:1kB" \
        "[ 9126.000400] Out of memory: Killed process $gone (python3) total-vm:1200000kB" > "$kmsg"
    run bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/probe.sh"
        k=$2; shift 2
        oom_killed "$k" "" "$@" x
        echo "[$(oom_killed "$k" 9100 "$3")]"        # the live pid: not named
        echo "[$(oom_killed "$k" 9300 "$1" "$2")]"   # stamped over a minute before the start: an earlier run
        echo "[$(oom_killed "$k" 9180 "$1" "$2")]"   # within the minute: named
        echo "[$(oom_killed /nonexistent/kmsg "" "$1")]"    # no log: nothing' \
        _ "$C1M_ROOT" "$kmsg" "$gone" "$gone2" "$$"
    assert_success
    assert_line --index 0 "pid $gone (python3), pid $gone2 (Web Content)"
    assert_line --index 1 "[]"
    assert_line --index 2 "[]"
    assert_line --index 3 "[pid $gone (python3), pid $gone2 (Web Content)]"
    assert_line --index 4 "[]"
}

@test "trust: a server worker alive but frozen through the hold (SIGSTOP) is server-hung, never ok" {
    need_root
    mkdir -p "$OUT"
    run_one --hold 4 --quiet-max 0 --disturb-pct 100 --init-pct 100 2> "$OUT.err" &
    RUN_PID=$!
    wait_for 60 grep -q holding "$OUT.err" || { cat "$OUT.err" >&2; fail "the hold never started"; }
    local ns victim="" p pp
    ns=$(cat "$OUT/netns")
    for p in $(ip netns pids "$ns"); do
        pp=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || continue
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = c1m-server ] && [ "$(cat "/proc/$pp/comm" 2>/dev/null)" = c1m-server ] \
            && { victim=$p; break; }
    done
    [ -n "$victim" ] || fail "no c1m-server worker found in $ns"
    # frozen from the hold's start to past its end (alive, its counters at
    # their last figures), thawed so that the server stops cleanly: the
    # client's summary is written once the hold ended and the client stopped
    # (was a fixed sleep 6); the 4 s hold leaves the 2 s of silence judged
    kill -STOP "$victim"
    wait_for 60 test -s "$OUT/client.json" || fail "the client never stopped: $(cat "$OUT.err")"
    kill -CONT "$victim"
    wait "$RUN_PID"; local rc=$?
    RUN_PID=
    assert_equal "$rc" 0
    run get status workers_dead note
    [ "${lines[0]}" = server-hung ] || { show; fail "status ${lines[0]}"; }
    assert_equal "${lines[1]}" 0
    assert_line --index 2 --partial "no line counted and no CPU used over the end of the 4s hold"
    assert_line --index 2 --partial " $victim:"
}

@test "trust: kill -9 of one client worker mid-hold is inconsistent (the counts disagree), never ok" {
    need_root
    kill_in_hold c1m-client
    run get status health workers_dead
    [ "${lines[0]}" = inconsistent ] || { show; fail "status ${lines[0]}"; }
    [[ ${lines[1]} == "target=2000 "* ]] && [[ ${lines[1]} != *"server=2000 sockets=2000 "*"client=2000 "* ]] \
        || fail "health: ${lines[1]}"
    assert_equal "${lines[2]}" 0
}

@test "trust: a ramp without a new connection for --ramp-stall seconds stops as ramp-stalled, not at --timeout" {
    need_root
    mkdir -p "$OUT"
    run_one --rate 400 --ramp-stall 2 --timeout 600 --hold 1 --quiet-max 0 --disturb-pct 100 \
        --init-pct 100 2> "$OUT.err" &
    RUN_PID=$!
    local ns rp p pp frozen=()
    wait_for 30 test -s "$OUT/netns" || { cat "$OUT.err" >&2; fail "no namespace"; }
    ns=$(cat "$OUT/netns") rp=${ns#c1m-} rp=${rp%-*}
    "$STAT" --wait open=200 --timeout 30 "/dev/shm/c1m-run-$rp.stats" > /dev/null \
        || { cat "$OUT.err" >&2; fail "the ramp never began"; }
    # the server's workers stop accepting (SIGSTOP): its open count stays put
    for p in $(ip netns pids "$ns"); do
        pp=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || continue
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = c1m-server ] && [ "$(cat "/proc/$pp/comm" 2>/dev/null)" = c1m-server ] \
            && frozen+=("$p")
    done
    [ ${#frozen[@]} -gt 0 ] || fail "no c1m-server worker found in $ns"
    kill -STOP "${frozen[@]}"
    # thawed once the ramp was judged stalled and the client stopped (its
    # summary written; was a fixed sleep 6)
    wait_for 60 test -s "$OUT/client.json" || fail "the client never stopped: $(cat "$OUT.err")"
    kill -CONT "${frozen[@]}"
    wait "$RUN_PID"; local rc=$?
    RUN_PID=
    assert_equal "$rc" 0
    run get status note accepted ramp_stall_s
    [ "${lines[0]}" = ramp-stalled ] || { show; fail "status ${lines[0]}"; }
    assert_line --index 1 --regexp "^no new connection for 2s: at most [0-9]+ of 2000 open"
    [ "${lines[2]}" -lt 2000 ] || fail "accepted ${lines[2]}"
    assert_equal "${lines[3]}" 2
}

@test "trust: the quiet gate waits for another run's namespace, then marks the run disturbed" {
    need_root
    # named like a live benchmark run's (this shell's pid is alive): never taken for an orphan
    PENDING_NS=c1m-$$-4242
    ip netns add "$PENDING_NS"
    # smallest: a 2 s gate (was 3) and no hold (was 1): the wait and its verdict are judged
    run_one --quiet --hold 0 --quiet-max 2 --quiet-cpu-pct 100 --disturb-pct 100 2> "$OUT.err"
    run get status gate gate_wait_s disturb_cause
    [ "${lines[0]}" = disturbed ] || { show; fail "status ${lines[0]}"; }
    assert_equal "${lines[1]}" timeout
    awk -v w="${lines[2]}" 'BEGIN{exit !(w >= 2)}' || fail "gate_wait_s ${lines[2]}"
    [[ ${lines[3]} == *"quiet gate timed out"*"namespaces pending: "*"$PENDING_NS"* ]] \
        || fail "cause: ${lines[3]}"
    grep -q "quiet gate: waiting" "$OUT.err"
}
