# shellcheck shell=bash
# common.sh - logging, root check, and a cleanup stack run on EXIT/INT/TERM/HUP.
# Sourced by every harness script. Cleanup actions run last-registered first,
# exactly once, also after Ctrl-C, so an interrupted run leaves nothing behind.

# Until the cleanup's traps are set (below), a stop signal is noted and acted
# on there: it killed run_one.sh (143) in its first milliseconds, the children
# of its command substitutions writing into a dead shell's pipe ("pwd: write
# error"). Nothing exists to clean yet.
_C1M_EARLY_STOP=""
trap '_C1M_EARLY_STOP=INT' INT
trap '_C1M_EARLY_STOP=TERM' TERM
trap '_C1M_EARLY_STOP=HUP' HUP

# A script started with stdin, stdout or stderr closed (`>&-`, `2>&-`) has
# /dev/null there: on a closed stdout every `awk 'BEGIN{exit !(...)}'` test
# exits 2 (awk cannot close it), so the quiet gate neither passed nor timed out
# (bench.sh >&- with QUIET_MAX=1 waited 600 s and on); and a file a closed
# number is reused for would take the script's output.
{ true 3<&0; } 2>/dev/null || exec </dev/null
{ true 3>&1; } 2>/dev/null || exec >/dev/null
true 3>&2 || exec 2>/dev/null       # (its complaint goes to the closed stderr: unseen)

C1M_ROOT=${C1M_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-$C1M_ROOT/build}
PYTHON=${PYTHON:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)}

# The contenders and how each is started: lib/contenders.sh (over lib/contenders.py).
source "$C1M_ROOT/harness/lib/contenders.sh"

# log: a message on stderr. One that cannot be written (its reader gone: bench.sh 2>&1 | head -1,
# SIGPIPE ignored) is no failure: a script ending on a log (plot.sh's "plots in ...") exited 1.
log() { printf '%s\n' "$*" >&2; return 0; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

require_root() {
    if [ "$(id -u)" != 0 ]; then
        local target=${1:-make bench}
        [[ $target == "make "* ]] || target="make bench"    # the make target to suggest
        log "error: ${1:-this} needs root: it creates network namespaces, sets sysctls inside"
        log "them, may raise fs.file-max and reads /proc/slabinfo. Run it as root, e.g."
        log "'sudo $target' (sudo -E, or VAR=value after make, to pass TIERS and the other knobs)."
        exit 1
    fi
    command -v ip >/dev/null || die "iproute2 ('ip') is missing: apt-get install iproute2"
}

# The cleanup stack (after Linux tools/testing/selftests/net/lib/sh/defer.sh,
# without its eval): `on_exit CMD ARG...` pushes one command as its words, never
# as text to evaluate; they run last-registered first, each exactly once, and
# one that fails does not stop the rest. Each entry is popped before it runs:
# should one exit the script during a signal's cleanup, the EXIT trap carries
# on with the rest (entries should not exit: inside the EXIT trap that ends all).
_C1M_DEFER_WORDS=() _C1M_DEFER_START=() _C1M_DEFER_LEN=()
_C1M_CLEANING=0 _C1M_IN_READ=0 _C1M_PENDING_SIGNAL=""
_C1M_WAITING=""     # (nap and waited's step, below: the cleanup reads it from the start)
on_exit() {
    [ $# -gt 0 ] || return 0
    _C1M_DEFER_START+=("${#_C1M_DEFER_WORDS[@]}")
    _C1M_DEFER_LEN+=("$#")
    _C1M_DEFER_WORDS+=("$@")
}
_c1m_run_cleanup() {
    local n start len cmd
    _C1M_CLEANING=1
    # From here the stop signals are ignored, by this shell and by what the
    # cleanup starts (an ignored signal stays ignored across exec): a second
    # ^C to the group once killed the record.py writing the run's result.
    trap '' INT TERM HUP
    [ -z "$_C1M_WAITING" ] || kill "$_C1M_WAITING" 2>/dev/null      # (see nap, waited)
    while n=${#_C1M_DEFER_START[@]}; [ "$n" -gt 0 ]; do
        start=${_C1M_DEFER_START[n - 1]} len=${_C1M_DEFER_LEN[n - 1]}
        cmd=("${_C1M_DEFER_WORDS[@]:start:len}")
        unset "_C1M_DEFER_START[n - 1]" "_C1M_DEFER_LEN[n - 1]"
        _C1M_DEFER_WORDS=("${_C1M_DEFER_WORDS[@]:0:start}")
        "${cmd[@]}" || true
    done
}
# A stop signal (INT, TERM, HUP: ^C, kill, timeout, a CI cancel, a closed
# terminal) runs the optional hook, the cleanup stack, and exits 130. A signal
# that arrives while cleaning up is ignored, by the cleanup's own processes
# too: the cleanup is finished first (bench.sh signals run_one.sh again while
# it is already stopping; a user presses ^C twice).
_C1M_SIGNAL_HOOK=""
_c1m_on_signal() {
    [ "$_C1M_CLEANING" = 1 ] && return 0
    # inside timed_read: noted, handled once the read returned (see there)
    if [ "$_C1M_IN_READ" = 1 ]; then _C1M_PENDING_SIGNAL=$1; return 0; fi
    _C1M_CLEANING=1
    trap '' INT TERM HUP      # (the hook's processes too: see _c1m_run_cleanup)
    log "interrupted (SIG$1): cleaning up"
    [ -n "$_C1M_SIGNAL_HOOK" ] && "$_C1M_SIGNAL_HOOK" "$1"
    _c1m_run_cleanup
    exit 130
}
# on_signal FUNC: FUNC SIGNAL runs first when a stop signal arrives.
on_signal() { _C1M_SIGNAL_HOOK=$1; }
trap _c1m_run_cleanup EXIT
trap '_c1m_on_signal INT' INT
trap '_c1m_on_signal TERM' TERM
trap '_c1m_on_signal HUP' HUP
# honour_sigint "$0" "$@": bash can neither trap nor reset a signal that was
# ignored when it started, and a non-interactive shell starts its `&` jobs
# with SIGINT ignored (`bench.sh &` from a script or a CI step). The servers
# and the client install their own SIGINT handlers: a SIGINT to the group would
# kill them while the script carried on, recording the contender as dead and
# running the next runs. So a script that starts with SIGINT ignored re-executes
# itself once (same pid) with SIGINT at its default, and its trap then runs as
# on a terminal. Called at the top of bench.sh and run_one.sh.
honour_sigint() {
    local ign
    if [ -n "${C1M_SIGINT_RESET:-}" ]; then unset C1M_SIGINT_RESET; return 0; fi
    ign=$(awk '/^SigIgn:/{print $2}' "/proc/$$/status" 2>/dev/null)
    [[ $ign =~ ^[0-9a-fA-F]{1,16}$ ]] && (( 0x$ign & 2 )) || return 0   # bit 1: SIGINT
    # default actions across the exec: a signal taken by a trap now would be
    # gone with this image (the run went on, ok, after its SIGTERM)
    trap - INT TERM HUP
    C1M_SIGINT_RESET=1 exec env --default-signal=INT "$BASH" "$@"
}
# progress FORMAT ARGS...: a run's live progress line on stderr, redrawn in
# place (\r) when PROGRESS_TTY=1 (the script's stderr was a terminal when it
# started: run_one.sh sets it); elsewhere (a piped log, a file) a plain line,
# one at a change of FORMAT (a new phase) and at most one every 10 s after, so
# a log holds no \r and still shows each phase (tests wait for "holding").
# progress_end: the newline that ends a redrawn line.
PROGRESS_TTY=0 PROGRESS_FMT="" PROGRESS_NEXT=0
progress() {
    local fmt=$1; shift
    # shellcheck disable=SC2059  # the format is the caller's
    if [ "$PROGRESS_TTY" = 1 ]; then printf "\r$fmt" "$@" >&2; return 0; fi
    [ "$fmt" != "$PROGRESS_FMT" ] || [ "$SECONDS" -ge "$PROGRESS_NEXT" ] || return 0
    PROGRESS_FMT=$fmt PROGRESS_NEXT=$((SECONDS + 10))
    # shellcheck disable=SC2059
    printf "$fmt\n" "$@" >&2
}
progress_end() { [ "$PROGRESS_TTY" = 1 ] && printf '\n' >&2; return 0; }
# A dead reader of our stderr (a closed pipe, a terminal gone) must not kill a
# script before it cleans up: writes then fail with EPIPE instead of SIGPIPE.
trap '' PIPE

# heartbeat_auto N: the heartbeat interval (seconds) HEARTBEAT=auto means at
# N connections: max(5, ceil(N / 20000)), so the heartbeats stay under about
# 4000 pings a second at any N (bench.sh, anatomy-cpu).
heartbeat_auto() {
    local hb=$(( ($1 + 19999) / 20000 ))
    [ "$hb" -lt 5 ] && hb=5
    echo "$hb"
}

# nap S: sleep S seconds with a stop signal handled at once: the sleep runs in
# the background and the shell waits for it (a trap runs as soon as `wait` is
# interrupted). The cleanup ends that sleep: left, it outlived the script by
# up to S seconds holding the script's stdout and stderr (SIGINT to the group
# does not end it: an `&` child ignores SIGINT), and a reader of them (a pipe,
# `$(...)`, a test's `run`) waited for it after the script had exited 130.
# _C1M_WAITING (set empty at the top): the background step nap or waited is waiting for (one at a
# time: the shell waits for it), which the cleanup ends.
nap() { sleep "$1" & _C1M_WAITING=$!; wait "$_C1M_WAITING"; _C1M_WAITING=""; }

# timed_read SECONDS FD [VAR]: the builtin read of a line from FD, for at
# most SECONDS, safe for the stop traps. Bash (5.2) times `read -t` with
# SIGALRM and a longjmp back into the read: a trap that runs while the read
# waits (bash runs a trapped signal's handler there) and still runs when the
# timeout expires is abandoned at its next command substitution, and the
# script carries on after the read as if no signal had come. Seen: SIGTERM to
# anatomy-cpu during a ramp ran half its cleanup (the namespace's processes
# being read when the read's 0.2 s ran out), then went on to the hold; and
# once bash aborting in the cleanup ("longjmp causes uninitialized stack
# frame", exit 134) after perf's acknowledgement read. So during the read a
# stop signal is only noted (_c1m_on_signal), and handled once it returned.
timed_read() {
    local _rc _sig
    _C1M_IN_READ=1
    read -r -t "$1" -u "$2" "${3:-_}"; _rc=$?
    _C1M_IN_READ=0
    if [ -n "$_C1M_PENDING_SIGNAL" ]; then
        _sig=$_C1M_PENDING_SIGNAL _C1M_PENDING_SIGNAL=""
        _c1m_on_signal "$_sig"
    fi
    return "$_rc"
}

# wait_child [-t S] PID [CMD ARG...]: wait until this shell's background child
# PID ends, running CMD every S seconds (default 0.2) meanwhile; the child's
# exit status. (-t 0.01: the ramp's watch, whose end starts the CPU reading.) Not a bare
# `wait PID`: a stop signal that lands after bash last looked for pending traps
# but before it blocks in wait(2) is recorded, and its trap runs only when that
# wait returns, when the child ends by itself. A child started with `&` ignores
# SIGINT until it installs its own handler (a Python sampler: until its imports
# are done), so a SIGINT to the group in that moment left run_one.sh waiting out
# the storm's recovery watch (STORM_TIMEOUT, 300 s) with its cleanup undone.
# Here the wait is a builtin read with a timeout (timed_read) on a pipe no one
# writes to (this shell holds both ends; opened once the child runs, so it
# does not inherit it): no process per tick, and a stop signal is handled
# within 0.2 s.
wait_child() {
    local every=0.2 pid tick
    [ "$1" = -t ] && { every=$2; shift 2; }
    pid=$1
    shift
    exec {tick}<> <(:)
    while kill -0 "$pid" 2>/dev/null; do
        timed_read "$every" "$tick"
        [ $# -eq 0 ] || "$@"
    done
    exec {tick}<&-
    wait "$pid"     # reaped already (bash reaps as children end): its saved status
}

# waited CMD...: CMD run in the background and waited for with wait_child (a
# stop signal handled within 0.2 s, not once CMD ends); its exit status. The
# cleanup ends it (_C1M_WAITING), as a nap's sleep. For a foreground step that may
# take long: perf's probe (up to 30 s a command) held a SIGTERM that long.
waited() {
    local rc
    "$@" &
    _C1M_WAITING=$!
    wait_child "$_C1M_WAITING"; rc=$?
    _C1M_WAITING=""
    return "$rc"
}

# wait_line FILE PATTERN SECONDS: 0 once FILE has a line matching PATTERN
# (grep -E), the first such line in WAIT_LINE, looked for every 50 ms (a
# client's answer to a signal in its log); 1 after SECONDS. A variable, not
# stdout: in a command substitution a stop signal waits until it ends.
WAIT_LINE=""
wait_line() {
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        WAIT_LINE=$(grep -m1 -E -- "$2" "$1" 2>/dev/null) && return 0
        nap 0.05
    done
    return 1
}

# gp_quote TEXT: TEXT as a gnuplot single-quoted string ('' escapes a quote),
# for gnuplot -e "name=$(gp_quote "$path")".
gp_quote() { printf "'%s'" "${1//\'/\'\'}"; }

# Stop a process we started: SIGTERM, wait up to $2 seconds (default 30), then
# SIGKILL. By PID only. Leaves the exit status in C1M_STOP_RC (128+signal when
# it died of one) and C1M_STOP_KILLED=1 when SIGKILL was needed.
C1M_STOP_RC="" C1M_STOP_KILLED=0
stop_pid() {
    local pid=$1 grace=${2:-30} i
    C1M_STOP_RC="" C1M_STOP_KILLED=0
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        # every 10 ms for the first 0.1 s (most end within it), then every 0.1 s
        for ((i = 0; i < grace * 10; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            if [ "$i" -lt 10 ]; then sleep 0.01; else sleep 0.1; fi
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "pid $pid ignored SIGTERM for ${grace}s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null
            C1M_STOP_KILLED=1
        fi
    fi
    wait "$pid" 2>/dev/null
    C1M_STOP_RC=$?
    return 0
}

now_s() { printf '%s\n' "$EPOCHREALTIME"; }          # wall clock, microseconds
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b - a}'; }

# parse_tier TEXT: "300k", "1m", "2000" -> TIER_VALUE (connections), or
# return 1 with the reason in TIER_ERR. Bounded before any arithmetic (at most
# 12 digits: no overflow in bash's 64-bit integers) and by what this machine
# could ever hold: an idle connection is two sockets, never under 8 KiB
# together, so N x 8 KiB must fit in MemTotal.
TIER_VALUE="" TIER_ERR=""
parse_tier() {
    local t=$1 digits mult=1 max
    TIER_VALUE="" TIER_ERR=""
    if ! [[ $t =~ ^([0-9]+)([kKmM]?)$ ]]; then
        TIER_ERR="not a connection count: '$t' (e.g. 2000, 10k, 1m)"
        return 1
    fi
    case ${BASH_REMATCH[2]} in [kK]) mult=1000 ;; [mM]) mult=1000000 ;; esac
    digits=${BASH_REMATCH[1]}
    digits=${digits#"${digits%%[!0]*}"}                 # "010" is ten, not octal
    max=$(tier_max)
    if [ ${#digits} -gt 12 ]; then
        TIER_ERR="'$t' is more than this machine could ever hold: at least 8 KiB per connection, MemTotal allows $max"
        return 1
    fi
    TIER_VALUE=$(( ${digits:-0} * mult ))
    if [ "$TIER_VALUE" -lt 1 ]; then
        TIER_ERR="'$t': at least 1 connection"
    elif [ "$TIER_VALUE" -gt "$max" ]; then
        TIER_ERR="'$t' ($TIER_VALUE) is more than this machine could ever hold: at least 8 KiB per connection, MemTotal allows $max"
    else
        return 0
    fi
    TIER_VALUE=""
    return 1
}
# in_range TEXT MIN MAX: TEXT is a plain decimal integer within [MIN, MAX]
# (checked as text first: no overflow, no octal, no arithmetic on arbitrary text).
in_range() {
    local d
    [[ $1 =~ ^[0-9]+$ ]] || return 1
    d=${1#"${1%%[!0]*}"}
    [ ${#d} -le 18 ] && [ "${d:-0}" -ge "$2" ] && [ "${d:-0}" -le "$3" ]
}
# is_ports P|LO-HI: a --port value (c1m_parse_ports's rule: 1..65535, LO <=
# HI, at most 1024 ports).
is_ports() {
    [[ $1 =~ ^([0-9]{1,5})(-([0-9]{1,5}))?$ ]] || return 1
    local lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}
    in_range "$lo" 1 65535 && in_range "$hi" "$lo" 65535 && [ $((10#$hi - 10#$lo)) -lt 1024 ]
}
# ports_filter P|LO-HI: the ss filter for sockets whose local port is in it.
ports_filter() {
    local lo=${1%-*} hi=${1#*-}
    echo "( sport >= :$lo and sport <= :$hi )"
}
# is_cpu_list LIST: a taskset -c list (0-3,6) of CPUs this machine has.
is_cpu_list() {
    [[ $1 =~ ^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$ ]] || return 1
    local n part a b
    n=$(grep -c '^cpu[0-9]' /proc/stat)
    IFS=, read -r -a part <<<"$1"
    for a in "${part[@]}"; do
        b=${a#*-} a=${a%-*}
        [ $((10#$a)) -le $((10#$b)) ] && [ $((10#$b)) -lt "$n" ] || return 1
    done
}
tier_max() { awk '/^MemTotal:/{print int($2 / 8)}' /proc/meminfo; }

# a stop signal noted before the traps were set (at the top): acted on now
[ -z "$_C1M_EARLY_STOP" ] || _c1m_on_signal "$_C1M_EARLY_STOP"
