# helpers.bash - shared setup for the bats suites: each file loads it once, at its top
# (`load helpers`, then `load_bats_libs`), so every hook and test sees it.
# Binaries come from $C1M_BUILD (make test sets it: build/ or build-san/).
# (tests/check/*.bats load ../helpers: the root is found from this file, not the test)
C1M_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
C1M_BUILD=${C1M_BUILD:-$C1M_ROOT/build}
PYTHON=${PYTHON:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)}
SERVER=$C1M_BUILD/c1m-server
CLIENT=$C1M_BUILD/c1m-client
STAT=$C1M_BUILD/c1m-stat
# Under SANITIZE=1 (make test SANITIZE=1) every ASan/LSan/UBSan report of any
# process a test starts - servers and their workers stopped in teardown,
# subprocesses whose stderr nobody reads - goes to a file in $SAN_DIR, and
# check_sanitizer_logs (in each file's teardown) fails the test that produced it.
# Forked workers run their own leak check before _exit (c_server/lib/workers.c).
if [ "${SANITIZE:-0}" = 1 ]; then
    SAN_DIR=${BATS_FILE_TMPDIR:-${BATS_RUN_TMPDIR:-/tmp}}/sanitizer
    mkdir -p "$SAN_DIR"
    SAN_LOG=:log_path=$SAN_DIR/report
else
    SAN_DIR= SAN_LOG=
fi
# The harness's run state (harness/lib/orphans.sh: run-PID, remote-PID-START;
# /run/c1m outside the tests) in a directory of each test file's own: files run
# side by side (tests/run.sh), and a bench.sh must not take another file's runs,
# or the state a kill -9 test leaves for "the next bench.sh", as its own. (Its
# machine-wide sweeps, of a dead pid's c1m-PID-N namespace and counters file,
# still see every file's: a test that leaves those is in a serial file.)
[ -z "${BATS_FILE_TMPDIR:-}" ] || export C1M_STATE_ROOT=$BATS_FILE_TMPDIR/state
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99$SAN_LOG}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99$SAN_LOG}

load_bats_libs() {
    local d
    for d in /usr/lib/bats /usr/lib/node_modules /usr/local/lib/bats; do
        if [ -f "$d/bats-support/load.bash" ]; then
            load "$d/bats-support/load.bash"
            load "$d/bats-assert/load.bash"
            return 0
        fi
    done
    echo "bats-support/bats-assert not found: apt-get install bats-assert bats-support" >&2
    return 1
}

# long_test: the first line of a test tagged `# bats test_tags=long` (the line
# before its @test): make test (C1M_TIER=test) skips it, make test-long runs it
# (tests/run.sh long selects the tagged tests by name); bats on the file alone runs it.
long_test() {
    [ "${C1M_TIER:-}" != test ] || skip "long: make test-long runs it"
}

# need_ns: in a test (or its setup) of a file whose setup_file ran ns_setup: skip without one.
need_ns() { [ "$(id -u)" = 0 ] && [ -n "${TEST_NS:-}" ] || skip "needs root (network namespace)"; }

# json FILE EXPR: print a Python expression over the parsed JSON object j
# (a tuple prints space-separated).
json() {
    "$PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(*(v if isinstance(v, tuple) else (v,)))' "$1" "$2"
}

# QUIET: the harness's settings that turn the quiet gate and the disturbance
# verdicts off, for the harness's tests that judge something else
# (`env "${QUIET[@]}" harness/bench.sh`): the machine is shared while they run.
QUIET=(DISTURB_PCT=100 INIT_PCT=100 QUIET_CPU_PCT=100 QUIET_MAX=0)

need_root() {
    [ "$(id -u)" = 0 ] || skip "needs root (network namespace)"
    command -v ip >/dev/null || skip "needs iproute2"
}

# A fresh network namespace for a test file, with a wide ephemeral port range
# (55k ports: a few thousand connections from one source address never run out)
# that stays clear of the ports the suites listen on (9000-9399): with 1024-65535
# a client socket could take e.g. 9234 just before a test binds it (EADDRINUSE).
# Without root (or iproute2) there is no namespace and TEST_NS stays empty:
# setup_file cannot skip, so each test that needs one skips in its setup.
ns_setup() {
    TEST_NS=
    export TEST_NS
    [ "$(id -u)" = 0 ] && command -v ip >/dev/null || return 0
    TEST_NS=c1mt-$$-${BATS_TEST_FILENAME##*/}
    TEST_NS=${TEST_NS%.bats}
    ip netns del "$TEST_NS" 2>/dev/null || true
    ip netns add "$TEST_NS"
    ip -n "$TEST_NS" link set lo up
    ip netns exec "$TEST_NS" sysctl -q -w net.ipv4.ip_local_port_range="10000 65535" \
        net.core.somaxconn=4096 net.ipv4.tcp_migrate_req=1 >/dev/null
    export TEST_NS
}
ns_teardown() { [ -n "${TEST_NS:-}" ] && ip netns del "$TEST_NS" 2>/dev/null; return 0; }

# The default hooks of every file that loads this one (bats runs the hooks a
# loaded file defines; a file that defines its own replaces them):
# setup_file/teardown_file make and delete the file's namespace (ns_setup), but
# in tests/check (make check: no namespace); teardown stops the test's client
# and server by PID and fails on sanitizer reports. A file's own hook that does
# more calls these pieces (ns_setup, stop_test_processes, check_sanitizer_logs).
setup_file() { [ "${BATS_TEST_DIRNAME##*/}" = check ] || ns_setup; }
teardown_file() { ns_teardown; }
teardown() { stop_test_processes; check_sanitizer_logs; }
in_ns() { ip netns exec "$TEST_NS" "$@"; }

# Start a server in the namespace: start_server STATS_FILE ARGS... ; sets SERVER_PID.
start_server() {
    local stats=$1; shift
    (exec ip netns exec "$TEST_NS" "$@" --stats "$stats" > "$BATS_TEST_TMPDIR/server.log" 2>&1) &
    SERVER_PID=$!
    "$STAT" --wait-ready --timeout 20 "$stats" >/dev/null || {
        cat "$BATS_TEST_TMPDIR/server.log" >&2; return 1; }
}

# start_client ARGS...: c1m-client in the namespace, in the background
# (CLIENT_PID), with the file's CLIENT_ARGS first and --json $JSON last; stdout
# to client.out, stderr (progress, "ramp done", the push/stall announcements)
# there too or, when CLIENT_ERR names a file, to that file.
start_client() {
    local out=$BATS_TEST_TMPDIR/client.out
    if [ -n "${CLIENT_ERR:-}" ]; then
        (exec ip netns exec "$TEST_NS" "$CLIENT" "${CLIENT_ARGS[@]}" "$@" --json "$JSON" > "$out" 2> "$CLIENT_ERR") &
    else
        (exec ip netns exec "$TEST_NS" "$CLIENT" "${CLIENT_ARGS[@]}" "$@" --json "$JSON" > "$out" 2>&1) &
    fi
    CLIENT_PID=$!
}
# A client started without --quiet has finished its ramp (it holds from the next tick).
client_holding() { grep -qs "ramp done" "$BATS_TEST_TMPDIR/client.out"; }
# stop_client: SIGTERM to the client (the normal end of --hold inf), its exit status in CLIENT_RC.
stop_client() {
    kill -TERM "$CLIENT_PID"
    CLIENT_RC=0; wait "$CLIENT_PID" || CLIENT_RC=$?
    CLIENT_PID=
}

# Stop a process we started, by PID: SIGTERM, up to 10 s, then SIGKILL.
stop_pid() {
    local pid=$1 i
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 0
}

# pids_gone PID...: every one has exited (no such process, or a zombie: exited,
# its parent has not reaped it yet). group_empty PGID: no process left in the group.
pids_gone() {
    local p st
    for p; do
        st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) || continue
        [ -z "$st" ] || [ "$st" = Z ] || return 1
    done
}
group_empty() { ! pgrep -g "$1" >/dev/null; }

# tuned_keys: the kernel profile's (harness/kernel-profile.conf) keys, one a line.
# host_sysctls: those, fs.file-max and net.ipv4.tcp_mem as "key=value" lines, from the host.
tuned_keys() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$C1M_ROOT/harness/kernel-profile.conf" | awk -F= '{gsub(/[ \t]/, "", $1); print $1}'; }
host_sysctls() {
    local k
    for k in $(tuned_keys) fs.file-max net.ipv4.tcp_mem; do
        echo "$k=$(sysctl -n "$k" | tr -s ' \t' ' ')"
    done
}

# nothing_left OUT PGID RUN_PID [HOST_SYSCTLS]: what a stopped bench.sh must
# leave: no process of its group or naming OUT, no server naming the run's
# counters file, no namespace, counters file or state directory of the run
# and, given host_sysctls from before, the host's sysctls as they were.
nothing_left() {
    local out=$1 pgid=$2 rp=$3
    wait_for 15 group_empty "$pgid" || fail "left running: $(pgrep -a -g "$pgid")"
    ! pgrep -f "$out" >/dev/null || fail "left running: $(pgrep -a -f "$out")"
    ! pgrep -f "c1m-run-$rp\.stats" >/dev/null || fail "left running: $(pgrep -a -f "c1m-run-$rp\.stats")"
    ! ip netns list | grep -q "^c1m-$rp-" || fail "namespace left: $(ip netns list | grep "^c1m-$rp-")"
    [ ! -e "/dev/shm/c1m-run-$rp.stats" ] || fail "counters file /dev/shm/c1m-run-$rp.stats left"
    [ ! -e "$C1M_STATE_ROOT/run-$rp" ] || fail "state directory $C1M_STATE_ROOT/run-$rp left"
    [ $# -lt 4 ] || [ "$(host_sysctls)" = "$4" ] || fail "host sysctls changed: $(diff <(echo "$4") <(host_sysctls))"
}

# bench_sh OUT VAR=value...: harness/bench.sh at 2k into OUT with QUIET, a 1 s
# heartbeat and no settling of memory, in a run or between runs (MEM_SETTLE=0,
# SETTLE_MAX=0: the files that use it judge no bytes, RSS or slab figure of a
# run); the VAR=values add to or override them.
bench_sh() {
    local out=$1; shift
    (cd "$C1M_ROOT" && exec env "${QUIET[@]}" TIERS=2k HEARTBEAT=1 SETTLE_MAX=0 MEM_SETTLE=0 OUT="$out" \
        PYTHON="$PYTHON" BUILD="$C1M_BUILD" "$@" harness/bench.sh)
}

# wait_for SECONDS CMD...: retry CMD every 0.1 s until it succeeds.
wait_for() {
    local limit=$1 i; shift
    for ((i = 0; i < limit * 10; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}
stat_is() { [ "$("$STAT" --get "$2" "$1")" = "$3" ]; }

# TCP sockets in use in the test namespace (sockstat "inuse": both ends of each
# connection, listeners, closing states; not TIME-WAIT).
tcp_inuse() { in_ns awk '$1=="TCP:"{print $3}' /proc/net/sockstat; }
tcp_inuse_is() { [ "$(tcp_inuse)" = "$1" ]; }
# expect_tcp_inuse N: inuse is N within 5 s (a connection closed just before may
# still be in LAST-ACK/FIN-WAIT for a moment); if not, show the socket states.
expect_tcp_inuse() {
    wait_for 5 tcp_inuse_is "$1" && return 0
    echo "sockstat TCP inuse $(tcp_inuse), expected $1; states:" >&2
    in_ns ss -tanH | awk '{print $1}' | sort | uniq -c >&2
    return 1
}

# usage_case PROG FLAG ARGS...: PROG ARGS exits 2 naming FLAG, with the usage
# line. Bounded: a program that wrongly accepts its arguments is stopped.
usage_case() {
    local prog=$1 flag=$2; shift 2
    echo "case: ${prog##*/} $*" >&2
    run timeout 10 "$prog" "$@"
    assert_failure 2
    assert_output --partial -- "$flag"
    assert_output --partial "usage:"
}

# Worker pids of a server from its counters file.
worker_pids() { "$STAT" "$1" | sed -n 's/^worker=[0-9]* pid=\([0-9]*\).*/\1/p'; }
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
rss_anon_kib() { awk '/^RssAnon:/{print $2}' "/proc/$1/status"; }

# Print and fail on sanitizer reports written since the last call (see SAN_DIR).
# A report that is only LeakSanitizer's "Unable to get registers from thread
# N." lines is not a finding: LSan's StopTheWorld at exit could not ptrace a
# thread (a process ended by a signal while it checked; llvm-project PR
# #116555 made the line verbose-only), so it reports no leak and says nothing
# about the code. It is printed and passed; any other line fails.
SAN_NOT_A_FINDING='^==[0-9]+==Unable to get registers from thread [0-9]+\.$'
check_sanitizer_logs() {
    [ -n "${SAN_DIR:-}" ] && [ -d "$SAN_DIR" ] || return 0
    local f found=0
    for f in "$SAN_DIR"/*; do
        [ -f "$f" ] || continue
        if [ -s "$f" ] && ! grep -qvE "$SAN_NOT_A_FINDING" "$f"; then
            echo "--- sanitizer note ${f##*/} (not a finding: LSan could not read a thread's registers):" >&2
            cat "$f" >&2
            rm -f "$f"
            continue
        fi
        echo "--- sanitizer report ${f##*/}:" >&2
        cat "$f" >&2
        rm -f "$f"
        found=1
    done
    return "$found"
}

# teardown for tests that start a bench.sh (BENCH_PID), a server and a client: each by PID, then the
# server's own pid from its counters file (belt and braces: if a test failed
# before recording SERVER_PID, the server is still found).
stop_test_processes() {
    stop_pid "${BENCH_PID:-}"
    stop_pid "${CLIENT_PID:-}"
    stop_pid "${SERVER_PID:-}"
    [ -f "${STATS:-}" ] && stop_pid "$("$STAT" --get pid "$STATS" 2>/dev/null)"
    return 0
}

# The storm of a bench.sh in its own process group (job control): backoff
# delays of 3 s, so the recovery lasts; returns once the server was killed and
# restarted (the restart's log exists). Sets BENCH_PID, RUN_NS, RUN_PID.
# smallest: no hold (was 1 s), no calibration, no memory settling: the signal comes in the storm.
start_storm() {
    local out=$1
    set -m
    (cd "$C1M_ROOT" && exec env "${QUIET[@]}" CALIBRATE=0 MEM_SETTLE=0 TIERS=2k CONTENDERS=c HOLD=0 HEARTBEAT=1 SETTLE_MAX=5 \
        SERVER_WORKER_CONNS=700 SCENARIO=storm STORM_POLICY=backoff STORM_BACKOFF_BASE_MS=3000 \
        STORM_BACKOFF_CAP_MS=3000 OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh) \
        > "$out.log" 2>&1 &
    BENCH_PID=$!
    set +m
    wait_for 60 storm_started "$out" || fail "the storm never began: $(cat "$out.log")"
    RUN_NS=$(cat "$out"/runs/*/netns)
    RUN_PID=${RUN_NS#c1m-} RUN_PID=${RUN_PID%-*}
}
storm_started() { compgen -G "$1/runs/*/server-restart.log" > /dev/null; }
