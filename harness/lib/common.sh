# shellcheck shell=bash
# common.sh - logging, root check, and a cleanup stack run on EXIT/INT/TERM.
# Sourced by every harness script. Cleanup actions run last-registered first,
# exactly once, also after Ctrl-C, so an interrupted run leaves nothing behind.

C1M_ROOT=${C1M_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-$C1M_ROOT/build}
PYTHON=${PYTHON:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)}

log() { printf '%s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

require_root() {
    if [ "$(id -u)" != 0 ]; then
        log "error: ${1:-this} needs root: it creates network namespaces, sets sysctls inside"
        log "them, may raise fs.file-max and reads /proc/slabinfo. Run it as root, e.g."
        log "'sudo make bench' (sudo -E, or VAR=value after make, to pass TIERS and the other knobs)."
        exit 1
    fi
    command -v ip >/dev/null || die "iproute2 ('ip') is missing: apt-get install iproute2"
}

_C1M_CLEANUP=()
_C1M_CLEANING=0
on_exit() { _C1M_CLEANUP+=("$*"); }
_c1m_run_cleanup() {
    [ "$_C1M_CLEANING" = 1 ] && return
    _C1M_CLEANING=1
    local i
    for ((i = ${#_C1M_CLEANUP[@]} - 1; i >= 0; i--)); do
        eval "${_C1M_CLEANUP[$i]}" || true
    done
    _C1M_CLEANUP=()
}
_c1m_on_signal() { log "interrupted: cleaning up"; _c1m_run_cleanup; exit 130; }
trap _c1m_run_cleanup EXIT
trap _c1m_on_signal INT TERM

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
        for ((i = 0; i < grace * 10; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
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

# Parse "300k", "1m", "2000" into a number.
tier_count() {
    case "$1" in
        *[kK]) echo $(( ${1%[kK]} * 1000 )) ;;
        *[mM]) echo $(( ${1%[mM]} * 1000000 )) ;;
        *[!0-9]*|"") return 1 ;;
        *) echo "$1" ;;
    esac
}

mem_available_mib() { awk '/^MemAvailable:/{print int($2/1024)}' /proc/meminfo; }
