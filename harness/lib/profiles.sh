# shellcheck shell=bash
# profiles.sh - kernel profiles: which sysctls a run's namespace gets.
# (Skeleton: only `tuned`, harness/kernel-profile.conf. H-A extends it with
# stock, FILE, tuned-KEY and ablate.)

# profile_check SPEC: 0 when SPEC names a profile; else "--profile: why" on stderr, 1.
profile_check() {
    [ "$1" = tuned ] && return 0
    log "--profile: unknown profile '$1' (known: tuned)"
    return 1
}

# profiles_expand LIST: the comma list's profiles, one per line, in order, no
# duplicates; "PROFILE: why" on stderr and 1 for a bad one.
profiles_expand() {
    local items=() p seen=" "
    IFS=', ' read -r -a items <<<"$1"
    [ ${#items[@]} -gt 0 ] || { log "PROFILE: empty"; return 1; }
    for p in "${items[@]}"; do
        profile_check "$p" 2>/dev/null || { log "PROFILE: unknown profile '$p' (known: tuned)"; return 1; }
        [[ $seen == *" $p "* ]] && continue
        seen+="$p "
        printf '%s\n' "$p"
    done
}
