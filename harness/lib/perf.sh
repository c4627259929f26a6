# shellcheck shell=bash
# perf.sh - sample a running server's processes with perf (Debian's
# linux-perf), for harness/anatomy-cpu. Needs common.sh.
#
# perf_probe: can perf sample here at all? (binary present and running, the
#   software cpu-clock event with call graphs allowed). Sets PERF_BIN, PERF_VERSION
#   and, when not, PERF_CAUSE (one line naming the cause).
# perf_start DATA PIDS_CSV LOG: perf record attached to those pids, events
#   disabled until perf_enable; sets PERF_PID (0 when perf failed to start,
#   PERF_CAUSE says why).
# perf_enable / perf_disable: switch sampling on/off through perf's control
#   FIFO and wait for its ack (bounded), so the sampled window is the measured
#   one. perf_stop: SIGINT, bounded wait, perf writes DATA.
#
# Knobs: C1M_PERF (the perf binary, default `perf` on PATH), PERF_PERIOD_US
# (microseconds of CPU between two samples of one process), PERF_CALLGRAPH
# (dwarf or fp; see harness/anatomy-cpu for why dwarf is the default).

PERF_BIN="" PERF_VERSION="" PERF_CAUSE="" PERF_PID=0
_PERF_CTL_FD="" _PERF_ACK_FD="" _PERF_DIR="" _PERF_CLEANUP_SET=0 _PERF_LOG=/dev/null
_PERF_PROBE_DIR="" _PERF_PROBE_SET=0

# _perf_record_args: the common record arguments (event, period, call graph).
_perf_record_args() {
    local cg=$PERF_CALLGRAPH
    [ "$cg" = dwarf ] && cg="dwarf,8192"
    # --no-buildid-cache: nothing copied to ~/.debug (python3.11 alone is 6 MB)
    echo "-e cpu-clock -c $((PERF_PERIOD_US * 1000)) -P --call-graph $cg --no-buildid-cache"
}

# _perf_first_error FILE: the most telling line of perf's stderr (perf's own
# "Error:" heading is skipped: the line after it says what).
_perf_first_error() {
    local l re
    for re in 'permission|paranoid|not permitted|access to|operation not|not supported|no such|not found' \
              'invalid|cannot|can.t|failed|unknown|error'; do
        l=$(grep -v -iE '^[[:space:]]*error:?[[:space:]]*$' "$1" 2>/dev/null | grep -m1 -iE "$re")
        [ -n "$l" ] && break
    done
    # else its first line that says anything (not the "Error:" heading)
    [ -n "$l" ] || l=$(grep -v -iE '^[[:space:]]*(error:?)?[[:space:]]*$' "$1" 2>/dev/null | head -n 1)
    printf '%s' "${l:0:200}" | tr -s ' \t' ' '
}

# _perf_mkdir VAR PREFIX: a new directory /tmp/PREFIX.PID.RANDOM, its name in
# VAR before it is made, for the cleanup (not $(mktemp -d): a stop signal
# landing while bash reads a command substitution ran the cleanup before the
# name was set, and the directory stayed); a name that is not ours (mkdir
# fails) is forgotten at once, never removed. 1 when none could be made.
_perf_mkdir() {
    local -n _d=$1
    _d=/tmp/$2.$$.$SRANDOM
    mkdir -m 700 "$_d" 2>/dev/null || { _d=""; return 1; }
}

# perf_settings: PERF_PERIOD_US and PERF_CALLGRAPH with their defaults (1000,
# dwarf), checked; 1 and PERF_SETTINGS_ERR (naming the knob) for a bad one.
perf_settings() {
    PERF_PERIOD_US=${PERF_PERIOD_US:-1000} PERF_CALLGRAPH=${PERF_CALLGRAPH:-dwarf} PERF_SETTINGS_ERR=""
    in_range "$PERF_PERIOD_US" 10 1000000 \
        || PERF_SETTINGS_ERR="PERF_PERIOD_US: expects 10..1000000 microseconds: $PERF_PERIOD_US"
    case "$PERF_CALLGRAPH" in dwarf|fp) ;; *) PERF_SETTINGS_ERR="PERF_CALLGRAPH: dwarf or fp, not '$PERF_CALLGRAPH'" ;; esac
    [ -z "$PERF_SETTINGS_ERR" ]
}

# perf_given: perf as a caller that probed it left it (C1M_PERF_BIN: the
# binary; "none", the cause in C1M_PERF_CAUSE: harness/anatomy-cpu for each
# run_one.sh), else probed here. 1 (PERF_BIN empty, PERF_CAUSE why) when there
# is no perf to sample with.
perf_given() {
    case "${C1M_PERF_BIN:-}" in
        "") perf_probe ;;
        none) PERF_BIN="" PERF_CAUSE=${C1M_PERF_CAUSE:-perf unavailable}; return 1 ;;
        *) PERF_BIN=$C1M_PERF_BIN PERF_CAUSE="" ;;
    esac
}

# (a perf found but refused leaves no PERF_BIN behind: nothing starts it)
perf_probe() { _perf_probe || { PERF_BIN=""; return 1; }; }
_perf_probe() {
    local want=${C1M_PERF:-perf} tmp rc
    PERF_BIN="" PERF_VERSION="" PERF_CAUSE=""
    if ! PERF_BIN=$(command -v "$want" 2>/dev/null) || [ -z "$PERF_BIN" ] || [ ! -x "$PERF_BIN" ]; then
        PERF_BIN=""
        PERF_CAUSE="perf not found ('$want'$([ -n "${C1M_PERF:-}" ] && echo " from C1M_PERF" || echo " on PATH")): apt-get install linux-perf (or harness/install-deps.sh anatomy)"
        return 1
    fi
    # (on the cleanup stack: a stop signal during the probe leaves no directory)
    [ "$_PERF_PROBE_SET" = 1 ] || { on_exit _perf_probe_cleanup; _PERF_PROBE_SET=1; }
    _perf_mkdir _PERF_PROBE_DIR c1m-perf-probe || { PERF_CAUSE="cannot create a temporary directory"; return 1; }
    tmp=$_PERF_PROBE_DIR
    # Debian's /usr/bin/perf may be a wrapper that looks for perf_<kernel
    # version> and fails on a kernel it has no perf for: its message says so.
    # (each step waited: a stop signal is handled at once, lib/common.sh)
    waited timeout 20 "$PERF_BIN" --version > "$tmp/v" 2> "$tmp/e"
    rc=$?
    if [ $rc != 0 ] || ! grep -q '^perf version' "$tmp/v"; then
        PERF_CAUSE="'$PERF_BIN --version' failed (exit $rc: $(_perf_first_error "$tmp/e"))"
        _perf_probe_cleanup; return 1
    fi
    PERF_VERSION=$(sed -n 's/^perf version //p' "$tmp/v" | head -n 1)
    # shellcheck disable=SC2046
    waited timeout 30 "$PERF_BIN" record -q $(_perf_record_args) -o "$tmp/probe.data" -- sleep 0.01 \
        > /dev/null 2> "$tmp/e"
    rc=$?
    if [ $rc != 0 ]; then
        PERF_CAUSE="perf refused to sample (perf record exit $rc: $(_perf_first_error "$tmp/e"); uid $(id -u), kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?'))"
        _perf_probe_cleanup; return 1
    fi
    if ! waited timeout 30 "$PERF_BIN" script -i "$tmp/probe.data" --no-inline -F comm,pid,tid,period,event,ip,sym,dso \
            > /dev/null 2> "$tmp/e"; then
        PERF_CAUSE="perf script cannot read what perf record wrote ($(_perf_first_error "$tmp/e"))"
        _perf_probe_cleanup; return 1
    fi
    _perf_probe_cleanup
    return 0
}
_perf_probe_cleanup() {
    [[ $_PERF_PROBE_DIR == /tmp/c1m-perf-probe.* ]] && rm -rf "$_PERF_PROBE_DIR"
    _PERF_PROBE_DIR=""
    return 0
}

# perf_start DATA PIDS_CSV LOG
perf_start() {
    local data=$1 pids=$2 plog=$3 i
    # a perf (or its FIFOs) still there from a phase that did not stop it:
    # stopped and removed first, never lost by overwriting PERF_PID/_PERF_DIR
    if [ "$PERF_PID" != 0 ] || [ -n "$_PERF_DIR" ] || [ -n "$_PERF_CTL_FD" ]; then perf_cleanup; fi
    PERF_PID=0 _PERF_LOG=$plog
    _perf_mkdir _PERF_DIR c1m-perf-ctl || { PERF_CAUSE="cannot create a temporary directory"; return 1; }
    # found again by the next run's orphans_scan should this script be killed -9
    declare -F state_put > /dev/null && state_put perfdir "$_PERF_DIR"
    mkfifo "$_PERF_DIR/ctl" "$_PERF_DIR/ack" || { PERF_CAUSE="mkfifo failed"; return 1; }
    # read-write opens of a FIFO never block (whether perf opened it yet or not)
    exec {_PERF_CTL_FD}<>"$_PERF_DIR/ctl" {_PERF_ACK_FD}<>"$_PERF_DIR/ack"
    # shellcheck disable=SC2046
    # -m: 4 MiB of ring buffer per thread (a DWARF sample is ~8 KiB; perf
    # competes for the 2 CPUs with the server and the client during the ramp)
    # SIGHUP ignored: perf record handles INT and TERM, but a HUP to the group
    # (a closed terminal) killed it outright, leaving its /tmp/perf-vdso.so-*
    # behind; the cleanup's SIGINT stops it (perf_cleanup)
    env --ignore-signal=HUP "$PERF_BIN" record $(_perf_record_args) -m 1024 -p "$pids" -D -1 \
        --control "fifo:$_PERF_DIR/ctl,$_PERF_DIR/ack" -o "$data" > "$plog" 2>&1 &
    PERF_PID=$!
    if [ "$_PERF_CLEANUP_SET" = 0 ]; then on_exit perf_cleanup; _PERF_CLEANUP_SET=1; fi
    # found again by the next run's orphans_scan should this script be killed -9
    declare -F state_pid > /dev/null && state_pid perf "$PERF_PID"
    # perf opens the events (one per thread of every pid), then reads the FIFO.
    for ((i = 0; i < 5; i++)); do
        kill -0 "$PERF_PID" 2>/dev/null || break
        sleep 0.1
    done
    if ! kill -0 "$PERF_PID" 2>/dev/null; then
        wait "$PERF_PID"
        PERF_CAUSE="perf record exited at once ($(_perf_first_error "$plog"))"
        PERF_PID=0
        perf_cleanup
        return 1
    fi
}

# _perf_ctl CMD: send CMD, wait up to 30 s for perf's "ack" (perf opens one
# event per thread of every pid before it reads the FIFO: at 1M that is 50+
# processes). A perf that exits meanwhile fails at once, saying why.
_perf_ctl() {
    local reply i
    [ "$PERF_PID" != 0 ] || return 1
    printf '%s\n' "$1" >&"$_PERF_CTL_FD" || return 1
    for ((i = 0; i < 30; i++)); do
        if timed_read 1 "$_PERF_ACK_FD" reply; then    # (lib/common.sh: safe for the stop traps)
            [ "$reply" = ack ] && return 0
            continue
        fi
        if ! kill -0 "$PERF_PID" 2>/dev/null; then
            PERF_CAUSE="perf record exited before acknowledging '$1' ($(_perf_first_error "$_PERF_LOG"))"
            return 1
        fi
    done
    PERF_CAUSE="perf did not acknowledge '$1' within 30 s"
    return 1
}
perf_enable() { _perf_ctl enable; }
perf_disable() { _perf_ctl disable; }

# perf_stop: SIGINT (perf then writes its file), up to 120 s, then SIGKILL.
# Returns perf's exit status (0 when it wrote its data).
perf_stop() {
    local pid=$PERF_PID i rc
    [ "$pid" != 0 ] || return 1
    kill -INT "$pid" 2>/dev/null
    for ((i = 0; i < 1200; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { log "perf pid $pid ignored SIGINT for 120 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null; }
    wait "$pid"; rc=$?
    PERF_PID=0
    perf_cleanup
    # perf record exits 130 (or 0) after SIGINT, having written its data
    [ "$rc" = 0 ] || [ "$rc" = 130 ]
}

# perf_lost LOG: perf record's own warning about samples it lost (its ring
# buffers overflowed), as one line; empty when it lost none.
perf_lost() {
    grep -m1 -iE 'lost [0-9]+ (chunks|samples)|lost samples|[0-9]+ lost' "$1" 2>/dev/null \
        | tr -s ' \t' ' ' | cut -c1-200
}

# perf_cleanup: the perf we started and not yet stopped (PERF_PID, a child
# of this shell) is stopped; the control FIFOs are closed and removed. On the
# cleanup stack (a run that stops early) and after every perf_stop.
perf_cleanup() {
    if [ "$PERF_PID" != 0 ]; then
        kill -INT "$PERF_PID" 2>/dev/null
        stop_pid "$PERF_PID" 10
        PERF_PID=0
    fi
    [ -n "${RUN_STATE:-}" ] && rm -f "$RUN_STATE/pid.perf" "$RUN_STATE/perfdir"
    perf_close_fds
    [[ $_PERF_DIR == /tmp/c1m-perf-ctl.* ]] && rm -rf "$_PERF_DIR"
    _PERF_DIR=""
    return 0
}

# perf_close_fds: close the control FIFOs' fds in this shell; also called in
# the subshell that starts a long-lived process (the client), which must not
# hold them.
perf_close_fds() {
    if [ -n "$_PERF_CTL_FD" ]; then exec {_PERF_CTL_FD}>&-; _PERF_CTL_FD=""; fi
    if [ -n "$_PERF_ACK_FD" ]; then exec {_PERF_ACK_FD}>&-; _PERF_ACK_FD=""; fi
    return 0
}
