# shellcheck shell=bash
# netns.sh - a fresh network namespace per run with the run's kernel profile
# applied inside it (lib/profiles.sh: RUN_PROFILE, default tuned). Every key
# must be per-namespace: the host value is compared before and after each
# write, and a key that leaked to the host is restored and the run refused.

# shellcheck source=profiles.sh
source "$C1M_ROOT/harness/lib/profiles.sh"

# netns_create NAME: create it, bring lo up, apply the profile RUN_PROFILE.
# Registers deletion. A profile this kernel refuses: exit 2 naming the key.
netns_create() {
    local ns=$1
    ip netns del "$ns" 2>/dev/null || true       # left by an interrupted run of ours
    state_put netns "$ns"                        # before it exists: found again after kill -9
    on_exit netns_delete "$ns"
    ip netns add "$ns" || die "ip netns add $ns failed"
    ip -n "$ns" link set lo up || die "cannot bring up lo in $ns"
    on_exit profile_restore_pending              # a signal between a leaking write and its check
    if ! profile_apply "$ns" "${RUN_PROFILE:-tuned}"; then
        log "error: --profile ${RUN_PROFILE:-tuned}: $PROFILE_ERR"
        exit 2
    fi
}

# netns_applied NAME: the profile keys as actually in force in NAME, "key=value"
# lines: the same keys whatever the profile (profile_record_keys), so stock and
# tuned runs compare key by key.
netns_applied() {
    local keys=()
    mapfile -t keys < <(profile_record_keys "${RUN_PROFILE:-tuned}")
    profile_read "$1" "${keys[@]}"
}

# netns_delete NAME: every process still in it ended first (lib/orphans.sh
# ns_end_processes: SIGTERM, then SIGKILL): a stopped worker (SIGSTOP) that
# never acted on its SIGTERM outlived the run, in a namespace with no name.
netns_delete() {
    [ -e "/run/netns/$1" ] || return 0
    ns_end_processes "$1" > /dev/null
    ip netns del "$1" 2>/dev/null || true
}

# Global (not per-namespace) settings a run changes: the original value is
# written to the run's state (orphans.sh) before the change, so it is restored
# on exit, and by the next bench.sh even after a kill -9. A value is a number
# or a vector of them (net.ipv4.tcp_mem: "LOW PRESSURE HIGH"), read with single
# spaces (sysctl_get); the state file keeps a vector's numbers joined by commas.
declare -A _C1M_GLOBAL_SAVED=()

# sysctl_get KEY: KEY's value, a vector's numbers separated by single spaces
# (sysctl -n separates them with tabs).
sysctl_get() {
    local v
    v=$(sysctl -n "$1" 2>/dev/null) || return 1
    tr -s '\t ' ' ' <<<"$v"
}

# set_global KEY VALUE: KEY set to VALUE for this run (restored on exit).
set_global() {
    local key=$1 want=$2 cur
    cur=$(sysctl_get "$key") || die "cannot read $key"
    [ "$cur" = "$want" ] && return 0
    if [ -z "${_C1M_GLOBAL_SAVED[$key]:-}" ]; then
        _C1M_GLOBAL_SAVED[$key]=$cur
    else
        cur=${_C1M_GLOBAL_SAVED[$key]}    # the host's value, not an earlier setting of ours
    fi
    state_put "sysctl.$key" "${cur// /,} ${want// /,}"
    on_exit restore_global "$key" "$cur" "$want"
    log "setting $key from $cur to $want for this run (restored on exit)"
    sysctl -q -w "$key=$want" >/dev/null || die "cannot set $key to $want"
}

# ensure_at_least KEY MIN: a single-number KEY raised to MIN if it is lower.
ensure_at_least() {
    local cur
    cur=$(sysctl_get "$1") || die "cannot read $1"
    [ "$cur" -ge "$2" ] || set_global "$1" "$2"
}

# restore_global KEY ORIG SET: put KEY back to ORIG if it still holds SET, the
# value we set; a different value means someone changed it since (another run
# raised it further): left alone, and said. ORIG and SET: numbers separated by
# spaces or commas.
restore_global() {
    local cur orig=${2//,/ } set=${3//,/ }
    cur=$(sysctl_get "$1") || return 1
    if [ "$cur" = "$set" ]; then
        sysctl -q -w "$1=$orig" >/dev/null
    elif [ "$cur" != "$orig" ]; then
        log "note: $1 is $cur, not the $set this run set: left as is (not restored to $orig)"
        return 1
    fi
}

# tcp_mem_resolve SPEC: TCP_MEM_VALUE, the net.ipv4.tcp_mem a run sets ("LOW
# PRESSURE HIGH", in pages), or "" for SPEC host (the machine's own, left as
# is). The limit is machine-wide: no namespace has a copy of its own.
#   host              leave it (a run that meets it is disturbed, naming it)
#   auto              all three at the machine's memory (MemTotal in pages): the
#                     kernel then never clamps TCP buffers before the machine is
#                     out of memory, and the run's memory guard stops first
#   LOW,PRESSURE,HIGH pages, 1 <= LOW <= PRESSURE <= HIGH
# 1 with TCP_MEM_ERR (the reason) for any other SPEC.
tcp_mem_resolve() {
    local kib page l p h extra
    TCP_MEM_VALUE="" TCP_MEM_ERR=""
    case $1 in
        host) return 0 ;;
        auto)
            kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
            page=$(getconf PAGESIZE)
            in_range "${kib:-x}" 1 999999999999 && in_range "${page:-x}" 1024 1048576 \
                || { TCP_MEM_ERR="cannot read MemTotal and the page size"; return 1; }
            l=$((kib * 1024 / page))
            TCP_MEM_VALUE="$l $l $l"
            return 0 ;;
    esac
    IFS=, read -r l p h extra <<<"$1"
    if [ -n "${extra:-}" ] || [[ $1 == *, ]] || ! in_range "${l:-x}" 1 999999999999 \
        || ! in_range "${p:-x}" 1 999999999999 || ! in_range "${h:-x}" 1 999999999999; then
        TCP_MEM_ERR="expects host, auto or LOW,PRESSURE,HIGH in pages (three whole numbers >= 1): $1"
        return 1
    fi
    l=$((10#$l)) p=$((10#$p)) h=$((10#$h))
    [ "$l" -le "$p" ] && [ "$p" -le "$h" ] \
        || { TCP_MEM_ERR="expects LOW <= PRESSURE <= HIGH: $1"; return 1; }
    TCP_MEM_VALUE="$l $p $h"
}
