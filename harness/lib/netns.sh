# shellcheck shell=bash
# netns.sh - a fresh network namespace per run with the kernel profile applied
# inside it. Every key in the profile must be per-namespace: the host value is
# compared before and after, and a key that leaked to the host is restored and
# the run refused.

C1M_PROFILE_FILE=${C1M_PROFILE_FILE:-$C1M_ROOT/harness/kernel-profile.conf}

profile_keys() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$C1M_PROFILE_FILE" | awk -F= '{gsub(/[ \t]+$/,"",$1); gsub(/^[ \t]+/,"",$1); print $1}'; }
profile_value() { sed -e 's/#.*//' "$C1M_PROFILE_FILE" | awk -F= -v k="$1" '{key=$1; gsub(/[ \t]/,"",key); if (key==k) {v=$2; sub(/^[ \t]+/,"",v); sub(/[ \t]+$/,"",v); print v}}'; }
norm() { tr -s ' \t' ' ' <<<"$1"; }

# netns_create NAME: create it, bring lo up, apply the profile. Registers deletion.
netns_create() {
    local ns=$1 k v host_before host_after
    ip netns del "$ns" 2>/dev/null || true       # left by an interrupted run of ours
    state_put netns "$ns"                        # before it exists: found again after kill -9
    on_exit netns_delete "$ns"
    ip netns add "$ns" || die "ip netns add $ns failed"
    ip -n "$ns" link set lo up || die "cannot bring up lo in $ns"
    while read -r k; do
        v=$(profile_value "$k")
        host_before=$(norm "$(sysctl -n "$k" 2>/dev/null)")
        ip netns exec "$ns" sysctl -q -w "$k=$v" >/dev/null 2>&1 \
            || die "cannot set $k=$v inside $ns (kernel too old for it?)"
        host_after=$(norm "$(sysctl -n "$k" 2>/dev/null)")
        if [ "$host_before" != "$host_after" ]; then
            sysctl -q -w "$k=$host_before" >/dev/null
            die "$k is not per-namespace on this kernel (it changed the host); restored it"
        fi
    done < <(profile_keys)
}

# netns_applied NAME: the profile's keys as actually in force in NAME, "key=value" lines.
netns_applied() {
    local k
    while read -r k; do
        printf '%s=%s\n' "$k" "$(norm "$(ip netns exec "$1" sysctl -n "$k")")"
    done < <(profile_keys)
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
