#!/usr/bin/env bash
# bench.sh - the whole benchmark: every contender at every tier (REPEAT times,
# interleaved A B C A B C), each run by run_one.sh in its own network
# namespace with the same C client; then runs.csv, ramp/*.csv, meta.json, the
# plots and report.md in one results directory, and a summary on the terminal.
#
# Configured through the environment; harness/README.md documents every knob,
# `harness/bench.sh --help` lists them. `make bench` builds first and runs this.
#
# Exit: 0 the suite ran (whatever each contender did: see runs.csv), 1 harness
# error (not root, missing binaries, a run_one.sh failure), 2 a bad setting,
# 130 interrupted (INT, TERM or HUP, to this script or its whole process group:
# everything started is stopped, namespaces deleted). What a killed (-9) run
# left is removed when bench.sh sees it die, or by the next bench.sh.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
honour_sigint "$0" "$@"
source "$C1M_ROOT/harness/lib/probe.sh"
source "$C1M_ROOT/harness/lib/gate.sh"
source "$C1M_ROOT/harness/lib/netns.sh"
source "$C1M_ROOT/harness/lib/orphans.sh"
source "$C1M_ROOT/harness/lib/scenario.sh"
source "$C1M_ROOT/harness/lib/profiles.sh"

RESULTS_PY=$C1M_ROOT/harness/lib/results.py
RECORD_PY=$C1M_ROOT/harness/lib/record.py
KNOBS=(TIERS CONTENDERS REPEAT HOLD HEARTBEAT TIMEOUT RAMP_STALL OUT SERVER_WORKER_CONNS
       CLIENT_WORKER_CONNS MIN_AVAILABLE_MIB MEM_GUARD_MIB SETTLE_MAX MEM_SETTLE CALIBRATE
       QUIET_MAX QUIET_CPU_PCT DISTURB_PCT INIT_PCT TCP_MEM SCENARIO PROFILE RATE PY_GC
       PORTS CPUS_SERVER CPUS_CLIENT HOSTS APPLY_SYSCTL REMOTE_PYTHON)
# usage [STATUS]: --help (0) on stdout, a usage error (2) on stderr
usage() {
    local rc=${1:-2}
    cat >&"$(( rc == 0 ? 1 : 2 ))" <<'USAGE'
usage: [VAR=value ...] harness/bench.sh [--check]   (as root; or: make bench VAR=value ...)
  --check                   check the settings only (no root needed): exit 0, or 2 naming the bad one
  TIERS=300k,500k,800k,1m   connection counts, run smallest first (k/m suffixes)
  CONTENDERS=...            comma list of c, pyext, uvloop, asyncio-protocol,
                            asyncio-streams, io_uring, libuv, gevent, threads, floor, or
                            `all` (default: the first five, uvloop only when importable)
  REPEAT=1                  runs per contender and tier, interleaved; summary = median
  HOLD=10                   seconds held after the ramp (idle CPU with heartbeats)
  HEARTBEAT=auto            ping period in s; auto = max(5, N/20000): <= ~20k pings/s
  TIMEOUT=900               seconds a ramp may take before the run is a timeout
  RAMP_STALL=120            seconds a ramp may go without a new connection before the
                            run stops as ramp-stalled (0 = only TIMEOUT)
  OUT=results/<UTC time>    results directory (must not hold a runs.csv yet);
                            results/reference* only from a clean git tree
  SERVER_WORKER_CONNS=      per-worker connection cap of the server (default: its own)
  CLIENT_WORKER_CONNS=10000 per-worker connection cap of the client (about two client
                            workers per server worker: 1M in 29.9 s vs 35.7 s with 51)
  MIN_AVAILABLE_MIB=1024    a run stops opening connections below this usable memory
                            (MemAvailable less SReclaimable, the open sockets' slab)
  MEM_GUARD_MIB=            pretend usable memory is this (tests the memory guard)
  SETTLE_MAX=60             max seconds to wait between runs for freed memory to settle
  MEM_SETTLE=1              0: a run takes its memory readings at once (no 1 s before the
                            idle baseline, no 2 s after the ramp): for the tests that judge
                            no memory figure; local runs only
  CALIBRATE=1               0: no calibration of this machine (c1m-calib) before the runs,
                            none in meta.json (the tests that judge something else)
  QUIET_MAX=600             before each run, wait up to this for a quiet machine (earlier
                            sockets freed, CPUs idle); 0 = no gate. A run started after
                            the wait timed out is marked disturbed
  QUIET_CPU_PCT=10          quiet = the machine at most this % busy over ~2 s
  DISTURB_PCT=5             a run whose outside CPU (processes not of the run, PID 1 apart)
                            exceeds this % of the machine during the ramp or the hold is disturbed
  INIT_PCT=5                the same for PID 1 alone (this machine kind's fd scanner: its load
                            grows with the run's own fds: 16-21% of the machine at 1M here)
  TCP_MEM=host              the machine-wide TCP memory limit (net.ipv4.tcp_mem) during each
                            run, restored after it: host (as it is; a run that meets it is
                            disturbed), auto (the machine's memory: for runs whose buffers
                            pass the kernel's own, the stall at 1M here) or LOW,PRESSURE,HIGH
                            in pages. Local runs only
  SCENARIO=idle             what a run does after the hold: idle, or a harness/lib/scenarios/
                            NAME.sh (its own knobs: harness/README.md "Scenarios")
  PROFILE=tuned             comma list of kernel profiles, each run as its own condition:
                            tuned, stock, tuned-KEY, a profile FILE, ablate (harness/README.md
                            "Kernel profiles and connect rates")
  RATE=0                    comma list of client connect rates (connections/s, 0 = unlimited),
                            each run as its own condition
  PY_GC=freeze              comma list of garbage-collector settings of the Python contenders
                            (py_server --gc): freeze (py_server's own: gc.freeze() after
                            start-up), default (CPython's collector untouched), off (the
                            freeze, then gc.disable() while serving), each its own condition;
                            the C contenders run in the freeze one only (else: unsupported)
  PORTS=9000                the server's port or a range LO-HI (up to 1024 ports): the
                            workers take them in turn, the client spreads its connects
  CPUS_SERVER=, CPUS_CLIENT= local runs: the server / the client on these CPUs (taskset -c)
  HOSTS=                    a hosts file: the server and the clients on other machines over
                            SSH (harness/README.md "Remote hosts"; SSH_OPTS for ssh's options)
  APPLY_SYSCTL=0            with HOSTS: 1 writes the profile's kernel settings on the hosts
                            and restores them at the end (else they are compared and reported)
A variable one letter away from one of these (TIER, CONTENDER) is refused (exit 2);
`make help` lists every setting of every target (harness/lib/settings.py).
Exit: 0 the suite ran, 1 harness error, 2 a bad setting, 130 interrupted.
USAGE
    exit "$rc"
}

bad() { log "error: $1"; log "(harness/bench.sh --help lists the settings)"; exit 2; }
# (bench.log only once setup_out checked OUT: root never writes in another's)
OUT_OK=0
say() { printf '%s\n' "$*" >&2; [ "$OUT_OK" = 1 ] && printf '%s\n' "$*" >> "$OUT/bench.log"; return 0; }
# Bounded (in_range, common.sh): no overflow in bash arithmetic, and within
# what run_one.sh accepts (seconds, MiB and counts up to 31536000: a year).
is_uint() { in_range "$1" 0 31536000; }
is_pos() { in_range "$1" 1 31536000; }

# The command that reproduces this run: the knobs set in the environment.
command_line() {
    local v cmd=""
    for v in "${KNOBS[@]}"; do
        [ -n "${!v:-}" ] && cmd+="$v=${!v} "
    done
    printf '%sharness/bench.sh' "$cmd"
}

uvloop_importable() { PYTHONPATH='' "$PYTHON" -c 'import uvloop' 2>/dev/null; }

read_settings() {
    local t n c
    # (a setting set but empty is refused before: settings.py check-env bench)
    TIERS=${TIERS:-300k,500k,800k,1m}
    REPEAT=${REPEAT:-1}; HOLD=${HOLD:-10}; HEARTBEAT=${HEARTBEAT:-auto}; TIMEOUT=${TIMEOUT:-900}; RAMP_STALL=${RAMP_STALL:-120}
    MIN_AVAILABLE_MIB=${MIN_AVAILABLE_MIB:-1024}; SETTLE_MAX=${SETTLE_MAX:-60}
    SERVER_WORKER_CONNS=${SERVER_WORKER_CONNS:-}; CLIENT_WORKER_CONNS=${CLIENT_WORKER_CONNS-10000}
    MEM_GUARD_MIB=${MEM_GUARD_MIB:-}; CALIBRATE=${CALIBRATE:-1}; MEM_SETTLE=${MEM_SETTLE:-1}
    [[ $CALIBRATE =~ ^[01]$ ]] || bad "CALIBRATE: expects 0 or 1: $CALIBRATE"
    [[ $MEM_SETTLE =~ ^[01]$ ]] || bad "MEM_SETTLE: expects 1 or 0: $MEM_SETTLE"
    QUIET_MAX=${QUIET_MAX:-600}; QUIET_CPU_PCT=${QUIET_CPU_PCT:-10}; DISTURB_PCT=${DISTURB_PCT:-5}; INIT_PCT=${INIT_PCT:-5}
    in_range "$QUIET_MAX" 0 86400 || bad "QUIET_MAX: expects whole seconds (0 = no gate): $QUIET_MAX"
    in_range "$QUIET_CPU_PCT" 0 100 || bad "QUIET_CPU_PCT: expects 0..100 (% of the machine): $QUIET_CPU_PCT"
    in_range "$DISTURB_PCT" 0 100 || bad "DISTURB_PCT: expects 0..100 (% of the machine): $DISTURB_PCT"
    in_range "$INIT_PCT" 0 100 || bad "INIT_PCT: expects 0..100 (% of the machine): $INIT_PCT"
    TCP_MEM=${TCP_MEM:-host}
    tcp_mem_resolve "$TCP_MEM" || bad "TCP_MEM: $TCP_MEM_ERR"
    is_pos "$REPEAT" || bad "REPEAT: expects a count >= 1: $REPEAT"
    is_uint "$HOLD" || bad "HOLD: expects whole seconds: $HOLD"
    [ "$HEARTBEAT" = auto ] || is_uint "$HEARTBEAT" || bad "HEARTBEAT: expects whole seconds or auto: $HEARTBEAT"
    is_pos "$TIMEOUT" || bad "TIMEOUT: expects whole seconds >= 1: $TIMEOUT"
    in_range "$RAMP_STALL" 0 86400 || bad "RAMP_STALL: expects whole seconds (0 = off): $RAMP_STALL"
    is_uint "$MIN_AVAILABLE_MIB" || bad "MIN_AVAILABLE_MIB: expects MiB: $MIN_AVAILABLE_MIB"
    is_uint "$SETTLE_MAX" || bad "SETTLE_MAX: expects whole seconds: $SETTLE_MAX"
    [ -z "$MEM_GUARD_MIB" ] || is_uint "$MEM_GUARD_MIB" || bad "MEM_GUARD_MIB: expects MiB: $MEM_GUARD_MIB"
    [ -z "$SERVER_WORKER_CONNS" ] || is_pos "$SERVER_WORKER_CONNS" || bad "SERVER_WORKER_CONNS: expects a count: $SERVER_WORKER_CONNS"
    [ -z "$CLIENT_WORKER_CONNS" ] || is_pos "$CLIENT_WORKER_CONNS" || bad "CLIENT_WORKER_CONNS: expects a count: $CLIENT_WORKER_CONNS"
    # decimal from here on: bash arithmetic reads 010 as octal 8 and fails on 08
    local v
    for v in QUIET_MAX QUIET_CPU_PCT DISTURB_PCT INIT_PCT REPEAT HOLD HEARTBEAT TIMEOUT RAMP_STALL \
             MIN_AVAILABLE_MIB SETTLE_MAX MEM_GUARD_MIB SERVER_WORKER_CONNS CLIENT_WORKER_CONNS; do
        [[ ${!v} =~ ^[0-9]+$ ]] && printf -v "$v" '%d' "$((10#${!v}))"
    done

    # Tiers: smallest first (the memory guard learns from the smaller ones), no duplicates.
    local pairs=() last="" items=()
    IFS=', ' read -r -a items <<<"$TIERS"        # no glob expansion of the text
    for t in "${items[@]}"; do
        parse_tier "$t" || bad "TIERS: $TIER_ERR"
        pairs+=("$TIER_VALUE $t")
    done
    [ ${#pairs[@]} -gt 0 ] || bad "TIERS: empty"
    TIER_N=() TIER_LABEL=()
    while read -r n t; do
        [ "$n" = "$last" ] && continue
        last=$n; TIER_N+=("$n"); TIER_LABEL+=("$t")
    done < <(printf '%s\n' "${pairs[@]}" | sort -n -k1,1)

    CONT=()
    if [ -n "${CONTENDERS:-}" ]; then
        IFS=', ' read -r -a items <<<"$CONTENDERS"
        # all: every known contender (lib/contenders.sh), the ones this machine
        # cannot run recorded unavailable
        [ "${items[*]}" = all ] && items=("${C1M_CONTENDERS[@]}")
        for c in "${items[@]}"; do
            contender_known "$c" || bad "CONTENDERS: unknown contender '$c' (known: ${C1M_CONTENDERS[*]})"
            [[ " ${CONT[*]} " == *" $c "* ]] || CONT+=("$c")
        done
        [ ${#CONT[@]} -gt 0 ] || bad "CONTENDERS: empty"
    else
        for c in "${C1M_DEFAULT_CONTENDERS[@]}"; do
            if [ "$c" = uvloop ] && ! uvloop_importable; then
                [ "$CHECK_ONLY" = 1 ] || log "uvloop is not importable by $PYTHON: left out (apt-get install python3-uvloop)"
                continue
            fi
            CONT+=("$c")
        done
    fi
    # Conditions (interfaces: lib/scenario.sh): the scenario, its variants, the
    # kernel profiles and the client rates; each combination is its own cell.
    SCENARIO=${SCENARIO:-idle}; PROFILE=${PROFILE:-tuned}; RATE=${RATE:-0}
    scenario_load "$SCENARIO" || bad "SCENARIO: unknown scenario '$SCENARIO' (known: $(scenario_names | tr '\n' ' '))"
    local err v
    err=$(scenario_check 2>&1) || bad "${err:-SCENARIO: $SCENARIO refused its settings}"
    # shellcheck disable=SC2207  # knob names are words
    SCENARIO_KNOBS=($(scenario_knobs))
    KNOBS+=("${SCENARIO_KNOBS[@]}")
    SCENARIO_SETTINGS=()
    for v in "${SCENARIO_KNOBS[@]}"; do
        [ -n "${!v+x}" ] && export "${v?}"
        SCENARIO_SETTINGS+=("$(tr 'A-Z' 'a-z' <<<"$v")=${!v:-}")
    done
    mapfile -t VARIANTS < <(scenario_variants)
    [ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=("")
    # once (its check uses a throwaway namespace): it prints the profiles, or
    # only its error; a line that is not a profile is refused, not run
    err=$(profiles_expand "$PROFILE" 2>&1) || bad "${err:-PROFILE: refused}"
    mapfile -t PROFILES <<<"$err"
    for v in "${PROFILES[@]}"; do
        [[ $v =~ ^(tuned|stock|tuned-.+|/.+)$ ]] || bad "PROFILE: not a profile in the check's output: '$v'"
    done
    RATES=()
    IFS=', ' read -r -a items <<<"$RATE"
    for n in "${items[@]}"; do
        in_range "$n" 0 100000000 || bad "RATE: expects connections/s (0 = unlimited): $n"
        [[ " ${RATES[*]} " == *" $n "* ]] || RATES+=("$n")
    done
    [ ${#RATES[@]} -gt 0 ] || bad "RATE: empty"
    PY_GCS=()
    IFS=', ' read -r -a items <<<"${PY_GC:-freeze}"
    for n in "${items[@]}"; do
        [[ $n =~ ^(freeze|default|off)$ ]] || bad "PY_GC: freeze, default or off, not '$n'"
        [[ " ${PY_GCS[*]} " == *" $n "* ]] || PY_GCS+=("$n")
    done
    [ ${#PY_GCS[@]} -gt 0 ] || bad "PY_GC: empty"
    read_placement
    check_reference_out
}

# Where the processes run: PORTS, CPUS_SERVER/CPUS_CLIENT (this machine), or
# HOSTS (other machines over SSH: lib/hosts.py checks the file, lib/remote.py
# prepares the hosts once OUT exists, run_remote.py does each run).
read_placement() {
    local v err
    PORTS=${PORTS:-9000}
    is_ports "$PORTS" || bad "PORTS: expects a port 1..65535 or a range LO-HI (LO <= HI, at most 1024 ports): $PORTS"
    for v in CPUS_SERVER CPUS_CLIENT; do
        [ -z "${!v:-}" ] || is_cpu_list "${!v}" \
            || bad "$v: expects a CPU list of this machine's $(grep -c '^cpu[0-9]' /proc/stat) CPUs (0, 0-1, 0,2...): ${!v}"
    done
    APPLY_SYSCTL=${APPLY_SYSCTL:-0}
    [[ $APPLY_SYSCTL =~ ^[01]$ ]] || bad "APPLY_SYSCTL: expects 0 or 1: $APPLY_SYSCTL"
    HOSTS_JSON=""
    if [ -z "${HOSTS:-}" ]; then
        [ -n "${HOSTS+x}" ] && bad "HOSTS: set but empty (unset it to run on this machine)"
        [ "$APPLY_SYSCTL" = 0 ] || bad "APPLY_SYSCTL: only with HOSTS (a local run's namespace gets the profile)"
        return 0
    fi
    [ "$TCP_MEM" = host ] || bad "TCP_MEM: local runs only (with HOSTS the server host's own limit holds): $TCP_MEM"
    [ -z "${CPUS_SERVER:-}${CPUS_CLIENT:-}" ] || bad "CPUS_SERVER/CPUS_CLIENT: local runs only (with HOSTS: cpus= in the hosts file)"
    [ "$MEM_SETTLE" = 1 ] || bad "MEM_SETTLE: local runs only (run_remote.py's waits are shorter at small tiers already): $MEM_SETTLE"
    [ "$SCENARIO" = idle ] || bad "SCENARIO: remote runs (HOSTS) take idle only: $SCENARIO"
    [ "${PY_GCS[*]}" = freeze ] || bad "PY_GC: local runs only (run_remote.py starts the server without it): $PY_GC"
    [ "${PROFILES[*]}" = tuned ] || bad "PROFILE: remote runs (HOSTS) take tuned only (the hosts' own settings; APPLY_SYSCTL=1 writes the profile): $PROFILE"
    HOSTS_JSON=$("$PYTHON" "$C1M_ROOT/harness/lib/hosts.py" check "$HOSTS" 2>&1) \
        || bad "${HOSTS_JSON:-HOSTS: refused}"
}

# With HOSTS, what root runs or restores on the hosts lives in this suite's
# state directory (HOSTS_STATE, lib/remote.py "state"): root's alone, never in
# OUT (whoever can write OUT would choose it). Named by this script's pid and
# start time: the next bench.sh knows a killed one's (remote_orphans).
HOSTS_STATE=""
hosts_state_init() {
    [ -n "$HOSTS_JSON" ] || return 0
    HOSTS_STATE=$C1M_STATE_ROOT/remote-$$-$(proc_start $$)
    (umask 077 && mkdir -p "$C1M_STATE_ROOT" && mkdir "$HOSTS_STATE" \
        && printf '%s\n' "$HOSTS_JSON" > "$HOSTS_STATE/hosts.json") || die "cannot create $HOSTS_STATE"
}

# prepare_hosts: with HOSTS, every host connected, checked and staged in a
# private directory (exit 2 naming the host that cannot be used: no run has
# started), the kernel settings applied with APPLY_SYSCTL=1; undone at exit.
prepare_hosts() {
    local err apply=()
    [ -n "$HOSTS_STATE" ] || return 0
    [ "$APPLY_SYSCTL" = 1 ] && apply=(--apply-sysctl)
    say "hosts: connecting, checking and staging the build ($(grep -c '"role"' "$HOSTS_STATE/hosts.json") hosts)"
    err=$("$PYTHON" "$C1M_ROOT/harness/lib/remote.py" prepare "$HOSTS_STATE" "$OUT" \
              --contenders "$(IFS=,; echo "${CONT[*]}")" "${apply[@]}" 2>&1)
    case $? in
        0) [ -n "$err" ] && say "$err" ;;
        2) bad "$err" ;;
        *) die "remote.py prepare failed: $err" ;;
    esac
}
# hosts_undo STATE: lib/remote.py cleanup: the hosts' settings put back (each
# only if it still holds what c1m set), their private directories removed,
# each said; 1 (STATE kept) when something could not be undone.
hosts_undo() {
    local out rc line
    out=$("$PYTHON" "$C1M_ROOT/harness/lib/remote.py" cleanup "$1" 2>&1); rc=$?
    while IFS= read -r line; do [ -n "$line" ] && say "hosts: $line"; done <<<"$out"
    return $rc
}
# hosts_cleanup: with HOSTS, after the run in progress has stopped (registered
# before stop_current: the stack runs in reverse).
hosts_cleanup() {
    [ -n "$HOSTS_STATE" ] && [ -d "$HOSTS_STATE" ] || return 0
    hosts_undo "$HOSTS_STATE" \
        || say "error: not everything on the hosts could be undone (above); the next bench.sh tries again ($HOSTS_STATE)"
}

# remote_orphans: what a bench.sh killed before its cleanup left on its hosts
# (a run_remote.py still running, stopped; settings, private directories),
# undone now and said; what cannot be (a host
# unreachable) is said and kept for the next one.
remote_orphans() {
    local d pid start
    for d in "$C1M_STATE_ROOT"/remote-*; do
        [ -d "$d" ] && [[ ${d##*/} =~ ^remote-([0-9]+)-([0-9]+)$ ]] || continue
        pid=${BASH_REMATCH[1]} start=${BASH_REMATCH[2]}
        pid_is "$pid" "$start" && continue     # that bench.sh still runs
        say "hosts: undoing what a killed bench.sh (pid $pid) left on its hosts"
        # its run_remote.py may run on without it: stopped first (its own
        # cleanup ends the remote processes), not undone under it
        read -r pid start 2>/dev/null < "$d/runner"
        if pid_is "${pid:-}" "${start:-}"; then
            say "hosts: run_remote.py pid $pid runs on without its bench.sh: stopping it"
            end_pid "$pid" "$start" 150
        fi
        hosts_undo "$d" || say "warning: not everything could be undone (above): kept for the next bench.sh ($d)"
    done
}

# A reference run (OUT=results/reference*) must be reproducible from its
# git_commit: refused from a tree with uncommitted changes to tracked files
# (what meta.json's git_dirty reports), before anything is created.
check_reference_out() {
    local out root dirty
    [ -n "${OUT:-}" ] || return 0
    out=$(realpath -m -- "$OUT") root=$(realpath -m -- "$C1M_ROOT/results")
    case $out in "$root"/reference*) ;; *) return 0 ;; esac
    dirty=$(git -C "$C1M_ROOT" status --porcelain --untracked-files=no 2>&1) \
        || bad "OUT=$OUT: a reference run needs a clean git tree, and git cannot tell: ${dirty%%$'\n'*}"
    [ -z "$dirty" ] || bad "OUT=$OUT: a reference run needs a clean git tree (commit first); uncommitted changes in: $(awk 'NR <= 5 {printf "%s ", $NF}' <<<"$dirty")"
}

# Leftovers of earlier runs killed before their cleanup (kill -9 of run_one.sh
# or of bench.sh): found by their state files and namespace names
# (lib/orphans.sh), removed, and said. A concurrent live run is left alone
# with a warning (it shares the CPUs and the slab counters); other namespaces
# (tests, containers) get a one-line note.
check_namespaces() {
    local ns line others=()
    orphans_scan
    for line in "${ORPHAN_REPORT[@]}"; do say "removed leftovers of an interrupted run: $line"; done
    for line in "${ORPHAN_LIVE[@]}"; do
        say "warning: another benchmark run is active ($line): it shares the CPUs and the" \
            "kernel's slab counters, so these figures will be disturbed"
    done
    while read -r ns _; do
        [[ $ns =~ ^c1m-[0-9]+-[0-9]+$ ]] || others+=("$ns")
    done < <(ip netns list 2>/dev/null)
    [ ${#others[@]} -eq 0 ] || say "note: other network namespaces exist (${others[*]}): if they" \
        "carry traffic, it shows in the machine-wide slab and CPU figures"
}

# An OUT that cannot be used is a bad setting (exit 2 naming OUT, one line),
# found when it is created: nothing else exists yet.
setup_out() {
    local err
    OUT=${OUT:-$C1M_ROOT/results/$(date -u +%Y%m%dT%H%M%SZ)}
    [ -e "$OUT/runs.csv" ] && bad "OUT=$OUT already holds a runs.csv: choose another OUT"
    # an earlier suite's records without their runs.csv (removed to derive it
    # again): appended to, its run directories reused, its meta.json replaced
    local held=()
    [ -e "$OUT/runs.jsonl" ] && held+=(runs.jsonl)
    [ -e "$OUT/meta.json" ] && held+=(meta.json)
    [ -n "$(ls -A -- "$OUT/runs" 2>/dev/null)" ] && held+=(runs/)
    [ ${#held[@]} -eq 0 ] || bad "OUT=$OUT already holds an earlier suite's ${held[*]}: choose another OUT"
    # what exists of it checked before anything is made in it, then the whole
    local have=$OUT
    while [ ! -e "$have" ] && [ "$have" != . ]; do have=$(dirname -- "$have"); done
    have=$(cd -- "$have" 2>/dev/null && pwd -P) && { err=$(out_private "$have" "$([ "$have" -ef "$OUT" ] && echo 1)") \
        || bad "OUT=$OUT: $err: choose another OUT"; }
    err=$(umask 022 && mkdir -p -- "$OUT/runs" "$OUT/ramp" 2>&1) || bad "OUT=$OUT: cannot create it: ${err%%$'\n'*}"
    OUT=$(cd "$OUT" && pwd -P)
    err=$(out_private "$OUT" 1) || bad "OUT=$OUT: $err: choose another OUT"
    OUT_OK=1
}
# out_private DIR (a physical path): root writes, runs and deletes in DIR, so
# no other user may plant or swap anything there (a symlink bench.log -> a
# file of root's, a result.json read back): DIR and every directory above it
# belong to root, this user or the checkout's owner (who controls what root
# runs already), and no one else can write them (a sticky directory such as
# /tmp apart, above DIR; and DIR itself too unless LEAF=1). Prints what is
# wrong; 1 then.
out_private() {
    local p=$1 leaf=${2:-} uid mode trusted
    trusted=" 0 $EUID $(stat -c %u -- "$C1M_ROOT") "
    while :; do
        read -r uid mode < <(stat -c '%u %a' -- "$p") || { echo "cannot stat $p"; return 1; }
        [[ $trusted == *" $uid "* ]] || { echo "$p belongs to uid $uid, who could plant files root writes through"; return 1; }
        if (( 8#$mode & 8#022 )) && { [ "$p$leaf" = "${1}1" ] || ! (( 8#$mode & 8#1000 )); }; then
            echo "$p (mode $mode) is writable by other users, who could plant files root writes through"; return 1
        fi
        [ "$p" = / ] && return 0
        p=$(dirname -- "$p")
    done
}

# calibrate: this instance's cost, once, after the quiet gate: c1m-calib in a
# fresh network namespace (the floor's CPU per accept, ns per syscall; its
# header). Written to $OUT/calibration.json, which meta.json takes in; a
# failure is said and the suite goes on without it.
calibrate() {
    local js err pyjs
    [ -x "$BUILD/c1m-calib" ] || { say "warning: $BUILD/c1m-calib is missing: no calibration (make build)"; return 0; }
    [ -z "$HOSTS_JSON" ] || { say "calibration: none with HOSTS (it measures this machine, not the hosts)"; return 0; }
    [ "$CALIBRATE" = 1 ] || { say "calibration: none (CALIBRATE=0)"; return 0; }
    quiet_gate "$QUIET_MAX" "$QUIET_CPU_PCT" "$BASE_SLAB_KIB" "$BASE_TCP_OBJS" ""
    # bounded by c1m-calib itself (each round ends within 60 s); in this process
    # group, so a ^C reaches it
    # shellcheck disable=SC2016  # $1 is the inner shell's
    if ! js=$(unshare --net sh -c 'ip link set lo up && exec "$1"' sh "$BUILD/c1m-calib" 2>"$OUT/calibration.log"); then
        err=$(tail -n 1 "$OUT/calibration.log")
        say "warning: the calibration failed (${err:-killed}): none in meta.json"
        return 0
    fi
    # and how fast this CPU runs the interpreter (lib/pycalib.py, ~1 s): across
    # CPU models the asyncio contenders' ratios to the floor move with it
    if ! pyjs=$(printf '%s\n' "$js" | "$PYTHON" "$C1M_ROOT/harness/lib/pycalib.py" run --add-to - 2>>"$OUT/calibration.log"); then
        say "warning: the Python calibration failed ($(tail -n 1 "$OUT/calibration.log")): c1m-calib's figures only"
    else
        js=$pyjs
    fi
    [ -s "$OUT/calibration.log" ] || rm -f "$OUT/calibration.log"
    printf '%s, "gate": "%s", "gate_wait_s": %s}\n' "${js%\}}" "$GATE" "${GATE_WAIT_S:-0}" > "$OUT/calibration.json"
}

write_meta() {
    "$PYTHON" "$RESULTS_PY" meta "$OUT" "$@" \
        tiers="$(IFS=,; echo "${TIER_LABEL[*]}")" contenders="$(IFS=,; echo "${CONT[*]}")" \
        repeat="$REPEAT" hold="$HOLD" heartbeat="$HEARTBEAT" timeout="$TIMEOUT" ramp_stall="$RAMP_STALL" \
        min_available_mib="$MIN_AVAILABLE_MIB" mem_guard_mib="$MEM_GUARD_MIB" mem_settle="$MEM_SETTLE" \
        server_worker_conns="$SERVER_WORKER_CONNS" client_worker_conns="$CLIENT_WORKER_CONNS" \
        quiet_max="$QUIET_MAX" quiet_cpu_pct="$QUIET_CPU_PCT" disturb_pct="$DISTURB_PCT" init_pct="$INIT_PCT" \
        tcp_mem="$TCP_MEM" scenario="$SCENARIO" profiles="$(IFS=,; echo "${PROFILES[*]}")" rates="$(IFS=,; echo "${RATES[*]}")" \
        py_gcs="$(IFS=,; echo "${PY_GCS[*]}")" variants="$(IFS=,; echo "${VARIANTS[*]}")" "${SCENARIO_SETTINGS[@]}" \
        || say "warning: could not write meta.json"
}

# ---- memory guard ---------------------------------------------------------
# guard CONTENDER N: 0 when the run fits in usable memory, by what this suite
# measured so far (lib/memguard.py: the cost per connection learned from
# OUT/runs.jsonl, the headroom and the floor). Sets GUARD_MSG either way.
guard() {
    local rc
    # shellcheck disable=SC2086  # (a flag and its number, or nothing)
    GUARD_MSG=$("$PYTHON" "$C1M_ROOT/harness/lib/memguard.py" check "$OUT" "$1" "$2" \
        --min-available "$MIN_AVAILABLE_MIB" ${MEM_GUARD_MIB:+--mem-guard-mib $MEM_GUARD_MIB}); rc=$?
    case $rc in
        0) return 0 ;;
        3) return 1 ;;
        *) die "the memory guard failed (lib/memguard.py exit $rc)" ;;
    esac
}

# settle: the previous run's sockets are freed asynchronously after its
# namespace is deleted; wait (up to SETTLE_MAX s) until Slab stops shrinking so
# the next baseline and the guard see a quiet machine. Once after each run
# started (SETTLE_DUE): a row skipped by the guard freed nothing to wait for.
settle() {
    local prev cur i
    SETTLE_DUE=0
    prev=$(awk '/^Slab:/{print $2}' /proc/meminfo)
    for ((i = 0; i < SETTLE_MAX; i++)); do
        nap 1      # (lib/common.sh: the cleanup ends it)
        cur=$(awk '/^Slab:/{print $2}' /proc/meminfo)
        [ $((prev - cur)) -lt 2048 ] && return 0
        prev=$cur
    done
}

# ---- the plan's duration ------------------------------------------------------
# lib/estimate.py, calibrated on the committed runs in results/: EST["C N"] the
# seconds one run of contender C at N should take, EST_TOTAL the suite's.
# eta: the time left, those estimates scaled by how this suite has gone so far.
declare -A EST=()
EST_TOTAL=0 EST_DONE=0 SUITE_T0=0
estimate_plan() {
    local c rest human="" basis=""
    while read -r c rest; do
        case $c in
            total) EST_TOTAL=$rest ;;
            human) human=$rest ;;
            basis) basis=$rest ;;
            *) EST["$c ${rest%% *}"]=${rest#* } ;;
        esac
    done < <("$PYTHON" "$C1M_ROOT/harness/lib/estimate.py" plan --tiers "$(IFS=,; echo "${TIER_N[*]}")" \
                 --contenders "$(IFS=,; echo "${CONT[*]}")" --hold "$HOLD" \
                 --runs-per-cell $(( RUNS_TOTAL / (${#TIER_N[@]} * ${#CONT[@]}) )) 2>/dev/null)
    if [ "$EST_TOTAL" -gt 0 ] 2>/dev/null; then
        say "estimated duration: $human, until ~$(date -u -d "@$(( $(date +%s) + EST_TOTAL ))" +%H:%M) UTC ($basis)"
    else
        EST_TOTAL=0; say "estimated duration: unknown (${basis:-estimate.py failed})"
    fi
}
eta() {
    local left el=$(( SECONDS - SUITE_T0 ))
    [ "$EST_TOTAL" -gt 0 ] || return 0
    left=$(( EST_TOTAL - EST_DONE ))
    [ "$EST_DONE" -gt 0 ] && left=$(( left * el / EST_DONE ))
    [ "$left" -lt 0 ] && left=0
    printf ', ETA %s UTC (~%d min left)' "$(date -u -d "@$(( $(date +%s) + left ))" +%H:%M)" $(( (left + 59) / 60 ))
}

# ---- one run ----------------------------------------------------------------
CUR_PID="" CUR_DIR="" CUR_ROW=() INTERRUPTED=0 FINISHED=0 HARNESS_ERRORS=0 RUN_NO=0 SETTLE_DUE=0
declare -A RES=()
declare -A UNAVAILABLE=()

# load_result DIR: the keys bench.sh itself uses, from DIR/result.json, into
# RES (record.py get: one value per line, empty when missing; no JSON in bash).
RESULT_KEYS=(status note accepted t_accept_s client_start_unix_ms server_cpu_connect_s
             server_cpu_hold_pct user_bytes_per_conn kernel_bytes_per_conn slab_bytes_per_conn
             server_rss_kib server_rss_idle_kib disturb_cause flags outside_cpu_pct outside_top
             controller_cpu_pct)
load_result() {
    local vals=() i
    RES=()
    [ -f "$1/result.json" ] || return 1
    mapfile -t vals < <("$PYTHON" "$RECORD_PY" get "$1/result.json" "${RESULT_KEYS[@]}")
    [ ${#vals[@]} = ${#RESULT_KEYS[@]} ] || return 1
    for i in "${!RESULT_KEYS[@]}"; do
        [ -n "${vals[i]}" ] && RES[${RESULT_KEYS[i]}]=${vals[i]}
    done
    return 0
}

# record ID RUNDIR [--kind KIND] KEY=VALUE...: one runs.csv row from
# RUNDIR/result.json. --kind: a row this script writes itself (a run never
# started, or whose runner failed): lib/judge.py ROW_KINDS gives its status,
# which results.py prints and RES[status] takes. results.py also writes the
# run's ramp curve, OUT/ramp/ID.csv, from its counter samples.
record() {
    local id=$1 dir=$2; shift 2
    local rec=- rdir="" judged
    [ -f "$dir/result.json" ] && rec=$dir/result.json
    [ -d "$dir" ] && rdir=runs/$id
    judged=$("$PYTHON" "$RESULTS_PY" row "$OUT" "$rec" "$@" run_dir="$rdir") \
        || { say "error: cannot append to $OUT/runs.csv"; HARNESS_ERRORS=$((HARNESS_ERRORS + 1)); }
    # a row of a kind whose results.py printed nothing (it failed to start: the
    # harness error counted above) has no status, never an unset or stale one
    if [ -n "$judged" ] || [[ " $* " == *" --kind "* ]]; then RES[status]=$judged; fi
}

# One line per finished run, after run_one.sh's live progress line.
report_run() {
    local s=${RES[status]:-?}
    if [ "$s" = ok ]; then
        say "$(printf '   ok: %s accepted in %ss | server CPU %ss connect, %s%% hold | %s user + %s kernel B/conn (slab %s) | RSS %s KiB' \
            "${RES[accepted]}" "${RES[t_accept_s]}" "${RES[server_cpu_connect_s]:-?}" "${RES[server_cpu_hold_pct]:-?}" \
            "${RES[user_bytes_per_conn]:-?}" "${RES[kernel_bytes_per_conn]:-?}" "${RES[slab_bytes_per_conn]:-?}" \
            "${RES[server_rss_kib]:-?}")"
    else
        say "   $s: ${RES[accepted]:-0} accepted${RES[t_accept_s]:+ after ${RES[t_accept_s]}s}${RES[note]:+ - ${RES[note]}}"
    fi
    # the outside CPU, and this script's own apart (the controller: never counted)
    [ -z "${RES[outside_cpu_pct]:-}" ] \
        || say "   outside CPU ${RES[outside_cpu_pct]}% of the machine${RES[outside_top]:+ (busiest ${RES[outside_top]})}; the controller (bench.sh) ${RES[controller_cpu_pct]:-?}%, apart"
}

# run_case CONTENDER N LABEL REPEAT PROFILE VARIANT RATE PY_GC
run_case() {
    local c=$1 n=$2 label=$3 r=$4 prof=$5 var=$6 rate=$7 gc=${8:-freeze} id dir hb rc cond keys
    cond=$(condition_of "$prof" "$var" "$rate" "$gc")
    id=$c-$label${cond:+-${cond//\//-}}-$r dir=$OUT/runs/$id
    # the row's identity, also for runs that never start
    keys=(contender="$c" tier="$n" tier_label="$label" repeat="$r" scenario="$SCENARIO"
          profile="$prof" variant="$var" rate="$rate" py_gc="$gc" condition="$cond")
    RUN_NO=$((RUN_NO + 1)) RES=()
    hb=$HEARTBEAT
    [ "$hb" = auto ] && hb=$(heartbeat_auto "$n")
    say "[$RUN_NO/$RUNS_TOTAL] $c at $label ($n)${cond:+, $cond}, repeat $r/$REPEAT, heartbeat ${hb}s, hold ${HOLD}s$(eta)"
    local need
    if [ "$gc" != freeze ] && ! contender_supports "$c" py-gc; then
        say "   unsupported: $c has no Python garbage collector (PY_GC=$gc)"
        record "$id" "$dir" --kind unsupported "${keys[@]}" note="$c has no Python garbage collector (PY_GC=$gc)"
        return
    fi
    for need in $(scenario_needs); do   # not started: it would refuse the flags (exit 2)
        if ! contender_supports "$c" "$need"; then
            say "   unsupported: $c does not implement $need (scenario $SCENARIO needs it)"
            record "$id" "$dir" --kind unsupported "${keys[@]}" \
                note="$c does not implement $need (scenario $SCENARIO needs it)"
            return
        fi
    done
    if [ -n "${UNAVAILABLE[$c]:-}" ]; then
        say "   unavailable: ${UNAVAILABLE[$c]} (not retried)"
        record "$id" "$dir" --kind unavailable "${keys[@]}" note="${UNAVAILABLE[$c]}"
        return
    fi
    [ "$SETTLE_DUE" = 1 ] && [ -z "$HOSTS_JSON" ] && settle
    # (the guard reads this machine's memory: not the remote server's)
    if [ -z "$HOSTS_JSON" ] && ! guard "$c" "$n"; then
        say "   skipped: does not fit in memory: $GUARD_MSG"
        record "$id" "$dir" --kind skipped-memory "${keys[@]}" note="$GUARD_MSG"
        return
    fi
    mkdir -p "$dir" || die "cannot create $dir"
    local args=(--contender "$c" --conns "$n" --out "$dir" --hold "$HOLD" --heartbeat "$hb"
                --timeout "$TIMEOUT" --ramp-stall "$RAMP_STALL" --min-available "$MIN_AVAILABLE_MIB"
                --quiet-max "$QUIET_MAX" --quiet-cpu-pct "$QUIET_CPU_PCT" --disturb-pct "$DISTURB_PCT" --init-pct "$INIT_PCT"
                --baseline-slab-kib "$BASE_SLAB_KIB" --baseline-tcp-objs "$BASE_TCP_OBJS"
                --scenario "$SCENARIO" --profile "$prof" --rate "$rate")
    [ -n "$var" ] && args+=(--variant "$var")
    [ "$gc" = freeze ] || args+=(--py-gc "$gc")
    local runner=("$C1M_ROOT/harness/run_one.sh")
    if [ -n "$HOSTS_JSON" ]; then
        runner=("$PYTHON" "$C1M_ROOT/harness/run_remote.py" --state "$HOSTS_STATE" --ports "$PORTS")
    else
        args+=(--port "$PORTS" --tcp-mem "$TCP_MEM" --mem-settle "$MEM_SETTLE")
        [ -n "${CPUS_SERVER:-}" ] && args+=(--server-cpus "$CPUS_SERVER")
        [ -n "${CPUS_CLIENT:-}" ] && args+=(--client-cpus "$CPUS_CLIENT")
    fi
    [ -n "$SERVER_WORKER_CONNS" ] && args+=(--server-worker-conns "$SERVER_WORKER_CONNS")
    # held within the client's fd limit by the registry (contenders.py client_worker_cap)
    [ -n "$CLIENT_WORKER_CONNS" ] && args+=(--client-worker-conns "$CLIENT_WORKER_CONNS")
    # In the background and waited for: a signal to this script is then handled
    # at once (bash runs traps only between foreground commands). run_one.sh
    # writes its messages and live progress to run_one.log itself (--log) and
    # bench.sh copies that file to the terminal: no pipe between them whose
    # reader, dying first, could kill run_one.sh with SIGPIPE before it cleans up.
    : > "$dir/run_one.log"
    SETTLE_DUE=1
    "${runner[@]}" "${args[@]}" --log "$dir/run_one.log" &
    CUR_PID=$! CUR_DIR=$dir CUR_ROW=("$id" "$dir" "${keys[@]}")
    # (a run over SSH: the next bench.sh stops it if this one is killed: remote_orphans)
    [ -n "$HOSTS_STATE" ] && printf '%s %s\n' "$CUR_PID" "$(proc_start "$CUR_PID")" > "$HOSTS_STATE/runner"
    exec {CUR_LOG}<"$dir/run_one.log"          # opened after the start: not inherited by the run
    wait_run "$CUR_PID"; rc=$RUN_RC
    local row=("${CUR_ROW[@]}") leftovers
    leftovers=$(remove_leftovers "$CUR_PID")
    exec {CUR_LOG}<&-
    CUR_PID="" CUR_ROW=() CUR_LOG=""
    if load_result "$dir" && [ "$rc" = 0 ]; then
        record "${row[@]}"
    else
        # run_one.sh itself failed (exit 1: e.g. a sysctl that is not per
        # namespace; 130: someone signalled it): recorded (harness-error, or
        # interrupted as its record says), counted, and on.
        HARNESS_ERRORS=$((HARNESS_ERRORS + 1))
        if [ -n "$leftovers" ] || [ "$rc" = 137 ]; then     # died before its cleanup
            RES[note]="run_one.sh was killed (signal $((rc - 128)))${leftovers:+; removed what it left: $leftovers}"
        else
            RES[note]="run_one.sh exited $rc: $(grep -v -e $'\r' -e '^  [^ ]' "$dir/run_one.log" 2>/dev/null | tail -n 1 | tr -d '=' | cut -c1-160)"
        fi
        record "${row[@]}" --kind driver-failed note="${RES[note]}"
    fi
    report_run
    [ "${RES[status]}" = unavailable ] && UNAVAILABLE[$c]=${RES[note]:-unavailable}
    return 0
}

# wait_run PID: wait for run_one.sh, copying what it appends to its log onto
# the terminal as it comes (CUR_LOG reads it: the shared file offset keeps
# the place). Returns within 0.2 s of its end, however it ends (kill -9
# included), and a stop signal to bench.sh is handled within 0.2 s
# (lib/common.sh wait_child); RUN_RC is its exit status. This loop is the
# controller's whole cost during a run (the disturbance sampler measures it
# apart, as controller_cpu_pct): builtins only, no process per tick (it forked
# a `sleep` and a `cat` five times a second: 0.6% of the machine over a 2k run,
# up to 1.5% in a second; 0.0% since).
RUN_RC="" CUR_LOG=""
wait_run() {
    wait_child "$1" show_log; RUN_RC=$?
    show_log
}
# show_log: what run_one.sh appended to its log since the last call, read by
# the builtin read (no process), onto the terminal.
show_log() {
    local chunk rc=0
    [ -n "$CUR_LOG" ] || return 0
    while [ "$rc" = 0 ]; do
        IFS= read -r -d '' -N 65536 -u "$CUR_LOG" chunk; rc=$?
        [ -z "$chunk" ] || printf '%s' "$chunk" >&2
    done
    return 0
}

# remove_leftovers PID: run_one.sh PID has ended; if it died before its
# cleanup (its state directory is still there: kill -9), remove what it left
# now - server, client, samplers, namespace, counters file, raised sysctls -
# and print that on one line.
remove_leftovers() {
    local line
    [ -d "$C1M_STATE_ROOT/run-$1" ] || return 0
    ORPHAN_REPORT=()
    orphans_clean_run "$C1M_STATE_ROOT/run-$1"
    [ ${#ORPHAN_REPORT[@]} -gt 0 ] || return 0
    printf '\n' >&2                             # after its last progress line
    for line in "${ORPHAN_REPORT[@]}"; do say "   removed what run_one.sh (pid $1) left: $line"; done
    printf '%s; ' "${ORPHAN_REPORT[@]}" | sed 's/; $//'
}

# ---- cleanup ----------------------------------------------------------------
# stop_current: end the run in progress; run_one.sh's own traps stop its
# client and server and delete its namespace. If it had to be killed, what it
# left is removed here.
stop_current() {
    [ -n "$CUR_PID" ] || return 0
    say "stopping the run in progress (pid $CUR_PID)"
    stop_pid "$CUR_PID" 300
    show_log
    remove_leftovers "$CUR_PID" >/dev/null
    CUR_PID=""
}

# finish_partial: after an interrupt keep what there is: the interrupted run's
# row and a meta.json marked incomplete.
finish_partial() {
    [ "$FINISHED" = 1 ] && return 0
    [ "$OUT_OK" = 1 ] || return 0
    if [ ${#CUR_ROW[@]} -gt 0 ]; then
        load_result "$CUR_DIR" || true
        record "${CUR_ROW[@]}" --kind interrupted note="${RES[note]:-interrupted}"
    fi
    write_meta finished_utc="$(date -u +%FT%TZ)" completed=false
    if [ "$INTERRUPTED" = 1 ]; then
        say "interrupted: partial results in $OUT (harness/plot.sh $OUT draws them)"
    else
        say "stopped on an error: partial results in $OUT"
    fi
}

bench_interrupted() { INTERRUPTED=1; printf '\n' >&2; }

CHECK_ONLY=0
main() {
    case "${1:-}" in
        -h|--help) usage 0 ;;
        --check) CHECK_ONLY=1 ;;     # the settings alone (make bench: before root, packages, build)
        "") ;;
        *) log "bench.sh takes no arguments (but --check), only settings in the environment"; usage ;;
    esac
    [ $# -le 1 ] || { log "bench.sh takes no arguments (but --check), only settings in the environment"; usage; }
    # a misspelt setting (TIER=10k), or one set but empty (OUT=), is refused before
    # anything starts (lib/settings.py)
    "$PYTHON" "$C1M_ROOT/harness/lib/settings.py" check-env bench || exit 2
    local cmd
    cmd=$(command_line)
    read_settings
    [ "$CHECK_ONLY" = 0 ] || exit 0
    require_root bench.sh
    for b in c1m-server c1m-client c1m-stat; do
        [ -x "$BUILD/$b" ] || die "$BUILD/$b is missing: run 'make build' first (or 'make bench', which builds)"
    done
    setup_out
    hosts_state_init
    on_exit hosts_cleanup       # last: after the run in progress has stopped
    on_exit finish_partial
    on_exit stop_current
    on_signal bench_interrupted
    RUNS_TOTAL=$(( ${#TIER_N[@]} * REPEAT * ${#PROFILES[@]} * ${#VARIANTS[@]} * ${#RATES[@]} * ${#PY_GCS[@]} * ${#CONT[@]} ))
    say "c1m bench: $cmd"
    say "results: $OUT"
    say "tiers ${TIER_LABEL[*]}; contenders ${CONT[*]}; repeat $REPEAT; hold ${HOLD}s; $RUNS_TOTAL runs"
    estimate_plan
    [ "$SCENARIO $PROFILE $RATE ${VARIANTS[*]}" = "idle tuned 0 " ] \
        || say "scenario $SCENARIO${VARIANTS[0]:+ (variants ${VARIANTS[*]})}; profiles ${PROFILES[*]}; rates ${RATES[*]}"
    [ "${PY_GCS[*]}" = freeze ] || say "Python garbage collector: ${PY_GCS[*]}"
    check_namespaces
    remote_orphans
    prepare_hosts
    # The quiet gate's reference (lib/gate.sh): Slab and TCP objects before any run.
    read -r BASE_SLAB_KIB BASE_TCP_OBJS <<<"$(gate_baseline)"
    [ "$QUIET_MAX" = 0 ] || say "quiet gate: up to ${QUIET_MAX}s before each run; baseline Slab ${BASE_SLAB_KIB} KiB, ${BASE_TCP_OBJS} TCP objects"
    calibrate
    write_meta command="$cmd" started_utc="$(date -u +%FT%TZ)" completed=false
    say "$("$PYTHON" "$RESULTS_PY" machine "$OUT")"
    SUITE_T0=$SECONDS

    local i r c p v rt g
    for ((i = 0; i < ${#TIER_N[@]}; i++)); do
        for ((r = 1; r <= REPEAT; r++)); do
            for p in "${PROFILES[@]}"; do
                for v in "${VARIANTS[@]}"; do
                    for rt in "${RATES[@]}"; do
                        for g in "${PY_GCS[@]}"; do
                            for c in "${CONT[@]}"; do
                                run_case "$c" "${TIER_N[$i]}" "${TIER_LABEL[$i]}" "$r" "$p" "$v" "$rt" "$g"
                                EST_DONE=$(( EST_DONE + ${EST["$c ${TIER_N[$i]}"]:-0} ))
                            done
                        done
                    done
                done
            done
        done
    done

    FINISHED=1
    write_meta finished_utc="$(date -u +%FT%TZ)" completed=true
    if command -v gnuplot >/dev/null; then
        "$C1M_ROOT/harness/plot.sh" "$OUT" || { say "error: plotting failed"; HARNESS_ERRORS=$((HARNESS_ERRORS + 1)); }
    else
        say "gnuplot is missing: no plots (apt-get install gnuplot-nox, then: make plot RUN=$OUT)"
    fi
    say ""
    "$PYTHON" "$RESULTS_PY" summary "$OUT" | tee -a "$OUT/bench.log" >&2
    say ""
    say "results: $OUT (runs.csv, meta.json, report.md, plots/)"
    [ "$HARNESS_ERRORS" = 0 ] || { say "$HARNESS_ERRORS harness error(s): see the runs' run_one.log"; exit 1; }
    exit 0
}

main "$@"
