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

netns_delete() {
    ip netns del "$1" 2>/dev/null || true
}

# Global (not per-namespace) settings a run may need to raise: the original
# value is written to the run's state (orphans.sh) before raising, so it is
# restored on exit, and by the next bench.sh even after a kill -9.
# ensure_at_least KEY MIN
declare -A _C1M_GLOBAL_SAVED=()
ensure_at_least() {
    local key=$1 min=$2 cur
    cur=$(sysctl -n "$key")
    [ "$cur" -ge "$min" ] && return 0
    if [ -z "${_C1M_GLOBAL_SAVED[$key]:-}" ]; then
        _C1M_GLOBAL_SAVED[$key]=$cur
    else
        cur=${_C1M_GLOBAL_SAVED[$key]}
    fi
    state_put "sysctl.$key" "$cur $min"
    on_exit restore_global "$key" "$cur" "$min"
    log "raising $key from $cur to $min for this run (restored on exit)"
    sysctl -q -w "$key=$min" >/dev/null || die "cannot raise $key"
}

# restore_global KEY ORIG SET: put KEY back to ORIG if it still holds SET, the
# value we raised it to; a different value means someone changed it since
# (another run raised it further): left alone, and said.
restore_global() {
    local cur
    cur=$(sysctl -n "$1" 2>/dev/null) || return 1
    if [ "$cur" = "$3" ]; then
        sysctl -q -w "$1=$2" >/dev/null
    elif [ "$cur" != "$2" ]; then
        log "note: $1 is $cur, not the $3 this run set: left as is (not restored to $2)"
        return 1
    fi
}
