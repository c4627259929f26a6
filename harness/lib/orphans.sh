# shellcheck shell=bash
# orphans.sh - what a run leaves when it dies before its cleanup (kill -9 of
# run_one.sh, or of bench.sh while a run goes on without it), found again and
# removed.
#
# run_one.sh keeps a state directory, $C1M_STATE_ROOT/run-PID (/run/c1m: gone
# after a reboot, like the namespaces), and writes each thing there BEFORE it
# creates it: its own and its parent's pid with their start times, the
# namespace name, the counters file, the pid of every process it starts outside
# the namespace (the sampler), and the original value of any global sysctl it
# raises. Its cleanup removes the directory last. A directory whose owner is
# gone, or whose owner's parent (bench.sh) is gone, is an orphan:
# orphans_clean_run ends its processes - by PID only: the pids of our own
# namespace (`ip netns pids`) and those our pid files name, checked against
# their start time so a reused pid is never hit - deletes the namespace and the
# counters file, and restores the sysctls. Needs netns.sh (restore_global).

C1M_STATE_ROOT=${C1M_STATE_ROOT:-/run/c1m}
RUN_STATE=""            # this run's state directory (run_one.sh)
ORPHAN_REPORT=()        # what the last orphans_* call removed, one line each

# proc_start PID: the process's start time (clock ticks since boot, field 22 of
# /proc/PID/stat); fails when it does not exist or is a zombie.
proc_start() {
    local s f
    read -r s 2>/dev/null < "/proc/$1/stat" || return 1
    s=${s##*) }                              # the name may hold spaces and ')'
    read -r -a f <<<"$s"
    [ "${f[0]}" != Z ] && [ -n "${f[19]:-}" ] || return 1
    printf '%s\n' "${f[19]}"
}
# pid_is PID START: PID runs and is the process that started at START.
pid_is() {
    [[ $1 =~ ^[1-9][0-9]*$ ]] && [ -n "${2:-}" ] && [ "$(proc_start "$1")" = "$2" ]
}
# wait_gone SECONDS PID START: 0 once it is gone, 1 if still there after SECONDS.
wait_gone() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        pid_is "$2" "$3" || return 0
        sleep 0.1
    done
    ! pid_is "$2" "$3"
}
# end_pid PID START GRACE: SIGTERM, up to GRACE seconds, then SIGKILL; only if
# PID is still the process that started at START. 0 if it was running.
end_pid() {
    pid_is "$1" "$2" || return 1
    kill -TERM "$1" 2>/dev/null
    wait_gone "$3" "$1" "$2" && return 0
    kill -KILL "$1" 2>/dev/null
    wait_gone 5 "$1" "$2"
    return 0
}

# ---- a run's own state (run_one.sh) ------------------------------------------
# state_init: create $C1M_STATE_ROOT/run-$$ with the owner and its parent.
state_init() {
    RUN_STATE=$C1M_STATE_ROOT/run-$$
    (umask 077 && mkdir -p "$RUN_STATE") || die "cannot create $RUN_STATE"
    # the parent first: a sweeper that finds the owner finds its parent too
    state_put parent "$PPID $(proc_start "$PPID")"
    state_put owner "$$ $(proc_start $$)"
}
# state_put KEY VALUE: written whole (a reader never sees half a line).
state_put() {
    [ -n "$RUN_STATE" ] || return 0
    printf '%s\n' "$2" > "$RUN_STATE/.$1.tmp" && mv -f "$RUN_STATE/.$1.tmp" "$RUN_STATE/$1"
}
# state_pid NAME PID: a process started outside the namespace, to be found again.
state_pid() { state_put "pid.$1" "$2 $(proc_start "$2")"; }
state_remove() { [ -n "$RUN_STATE" ] && rm -rf "$RUN_STATE"; RUN_STATE=""; return 0; }

# ---- removing orphans --------------------------------------------------------
# ns_end_processes NS: every process in our namespace NS: SIGTERM, up to 20 s,
# then SIGKILL. Prints how many there were.
ns_end_processes() {
    local ns=$1 pids i n=0
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && n=$(wc -w <<<"$pids")
    [ "$n" -gt 0 ] && kill -TERM $pids 2>/dev/null
    for ((i = 0; i < 200; i++)); do
        [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
        sleep 0.1
    done
    pids=$(ip netns pids "$ns" 2>/dev/null)
    if [ -n "$pids" ]; then
        kill -KILL $pids 2>/dev/null
        for ((i = 0; i < 100; i++)); do
            [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    echo "$n"
}
# ns_remove NS: end its processes and delete it; a line for ORPHAN_REPORT.
ns_remove() {
    local n
    [ -e "/run/netns/$1" ] || return 1
    n=$(ns_end_processes "$1")
    ip netns del "$1" 2>/dev/null
    if [ -e "/run/netns/$1" ]; then
        ORPHAN_REPORT+=("could not delete namespace $1: ip netns del $1")
    else
        ORPHAN_REPORT+=("namespace $1 deleted ($n process(es) in it ended)")
    fi
}

# sysctl_numbers V: a value the state may hold: 1-4 numbers joined by commas.
sysctl_numbers() {
    local n ns
    IFS=, read -r -a ns <<<"$1"
    [ ${#ns[@]} -ge 1 ] && [ ${#ns[@]} -le 4 ] && [[ $1 != *, && $1 != *,,* ]] || return 1
    for n in "${ns[@]}"; do in_range "$n" 0 999999999999999999 || return 1; done
}

# orphans_clean_run DIR: remove what the run of state directory DIR left.
# Returns 2 (touching nothing) when that run is alive and so is its parent: a
# concurrent run, not an orphan. A run whose bench.sh is gone is asked to stop
# (SIGTERM: its own cleanup runs), bounded, then its leftovers are removed.
orphans_clean_run() {
    local dir=$1 owner= ostart= parent= pstart= ns= stats= f key orig set pid start
    [[ ${dir#"$C1M_STATE_ROOT"/} =~ ^run-([0-9]+)$ ]] && [ -d "$dir" ] || return 1
    # A run being set up by a concurrent bench.sh (state_init: mkdir, then the
    # parent, then the owner): no owner file yet while its pid lives is a live
    # run, never an orphan (this read of an unset owner once stopped a sweep
    # under set -u: "parent: unbound variable")
    if ! read -r owner ostart 2>/dev/null < "$dir/owner"; then
        kill -0 "${BASH_REMATCH[1]}" 2>/dev/null && return 2
    fi
    if pid_is "$owner" "$ostart"; then
        read -r parent pstart 2>/dev/null < "$dir/parent" || return 2
        pid_is "$parent" "$pstart" && return 2
        ORPHAN_REPORT+=("run_one.sh pid $owner runs on without its bench.sh (pid ${parent:-?} is gone): stopped it")
        end_pid "$owner" "$ostart" 150
        # its own cleanup removed the directory unless it had to be killed
        [ -d "$dir" ] || return 0
    fi
    read -r ns 2>/dev/null < "$dir/netns"
    [[ ${ns:-} =~ ^c1m-[0-9]+-[0-9]+$ ]] && ns_remove "$ns"
    for f in "$dir"/pid.*; do
        [ -f "$f" ] || continue
        read -r pid start < "$f"
        end_pid "$pid" "$start" 5 && ORPHAN_REPORT+=("${f##*/pid.} pid $pid ended")
    done
    read -r stats 2>/dev/null < "$dir/stats"
    if [[ ${stats:-} =~ ^/dev/shm/c1m-run-[0-9]+\.stats$ ]] && [ -e "$stats" ]; then
        rm -f "$stats" && ORPHAN_REPORT+=("counters file $stats removed")
    fi
    # perf's control FIFOs (lib/perf.sh perf_start): a directory of ours only
    read -r f 2>/dev/null < "$dir/perfdir"
    if [[ ${f:-} =~ ^/tmp/c1m-perf-ctl\.[A-Za-z0-9.]+$ ]] && [ -d "$f" ] && ! [ -L "$f" ] && [ -O "$f" ]; then
        rm -rf "$f" && ORPHAN_REPORT+=("perf's control FIFOs $f removed")
    fi
    for f in "$dir"/sysctl.*; do
        [ -f "$f" ] || continue
        key=${f##*/sysctl.}
        read -r orig set < "$f"
        [[ $key =~ ^[a-z0-9_.-]+$ ]] && sysctl_numbers "${orig:-x}" && sysctl_numbers "${set:-x}" || continue
        restore_global "$key" "$orig" "$set" && ORPHAN_REPORT+=("$key restored to ${orig//,/ }")
    done
    rm -rf "$dir"
    return 0
}

# orphans_scan: every orphan of an earlier run, removed (ORPHAN_REPORT says
# what); live concurrent runs are listed in ORPHAN_LIVE and left alone. Also
# c1m-PID-N namespaces and /dev/shm/c1m-run-PID.stats files of a dead PID that
# have no state directory (runs of a harness that kept none).
ORPHAN_LIVE=()
orphans_scan() {
    local d ns pid f
    ORPHAN_REPORT=() ORPHAN_LIVE=()
    for d in "$C1M_STATE_ROOT"/run-*; do
        [ -d "$d" ] || continue
        orphans_clean_run "$d"
        [ $? = 2 ] && ORPHAN_LIVE+=("run_one.sh pid ${d##*/run-}")
    done
    while read -r ns _; do
        [[ $ns =~ ^c1m-([0-9]+)-[0-9]+$ ]] || continue
        pid=${BASH_REMATCH[1]}
        [ -d "$C1M_STATE_ROOT/run-$pid" ] && continue          # a live run's
        if kill -0 "$pid" 2>/dev/null; then
            ORPHAN_LIVE+=("namespace $ns (pid $pid)")
        else
            ns_remove "$ns"
        fi
    done < <(ip netns list 2>/dev/null)
    for f in /dev/shm/c1m-run-*.stats; do
        [[ $f =~ ^/dev/shm/c1m-run-([0-9]+)\.stats$ ]] || continue
        pid=${BASH_REMATCH[1]}
        [ -d "$C1M_STATE_ROOT/run-$pid" ] || kill -0 "$pid" 2>/dev/null && continue
        [ -O "$f" ] || continue                    # root's: not another user's file of that name
        rm -f "$f" && ORPHAN_REPORT+=("counters file $f removed")
    done
    # run_remote.py's files, named c1m-remote-PID-TIME*, of a controller that was
    # killed (SIGKILL leaves no chance to clean): its counters copy and client logs.
    for f in /dev/shm/c1m-remote-*.stats /tmp/c1m-remote-*; do
        [[ $f =~ ^(/dev/shm|/tmp)/c1m-remote-([0-9]+)-[0-9]+[-.][A-Za-z0-9.:-]+$ ]] || continue
        [ -f "$f" ] && ! [ -L "$f" ] && [ -O "$f" ] || continue
        kill -0 "${BASH_REMATCH[2]}" 2>/dev/null && continue
        rm -f "$f" && ORPHAN_REPORT+=("remote run file $f removed")
    done
    return 0
}
