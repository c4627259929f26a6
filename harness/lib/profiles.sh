# shellcheck shell=bash
# profiles.sh - kernel profiles: which sysctls a run's network namespace gets.
#
# bench.sh's PROFILE (a comma list) and run_one.sh's --profile take:
#   tuned      harness/kernel-profile.conf (C1M_PROFILE_FILE=FILE stands in for
#              it: the tests use a small one)
#   stock      nothing written: the values a fresh namespace has on this kernel;
#              these depend on the host too: a new namespace copies some of the
#              host's settings (seen on 6.18: tcp_rmem and tcp_congestion_control
#              were the host's, not the kernel's defaults;
#              README "What tuning buys"), so sysctl.txt, not "stock", says what ran
#   FILE       a profile file of your own (`key = value` lines, # comments); a
#              path, recorded absolute; its label is file=NAME (NAME.conf)
#   tuned-KEY  tuned with KEY left at its stock value (KEY: a key of tuned)
#   ablate     PROFILE only: tuned-KEY for every key of tuned whose value
#              differs from stock, then stock, then tuned
# Every run reads back the same keys (tuned's, and a FILE's own after them)
# into sysctl.txt, so any two profiles compare key by key.
#
# Only per-namespace keys are accepted: net.* keys that exist inside a network
# namespace. profiles_expand checks every key and value in a throwaway
# namespace (always deleted) before a run creates anything; the per-key leak
# check (a write that changed the host is undone and refused) stays in every
# apply. Needs common.sh (log, C1M_ROOT).

profile_tuned_file() { printf '%s\n' "${C1M_PROFILE_FILE:-$C1M_ROOT/harness/kernel-profile.conf}"; }

# norm TEXT: whitespace runs (spaces, tabs, newlines) as one space, none at
# the ends: how values are compared, everywhere (profile_read runs it inside the
# namespace too). Plain bash: no process per value.
norm() {
    local v=${1//[$'\t\n']/ }
    while [[ $v == *"  "* ]]; do v=${v//  / }; done
    v=${v# }
    printf '%s\n' "${v% }"
}
# trim TEXT: without its leading and trailing whitespace.
trim() { local t=${1#"${1%%[![:space:]]*}"}; printf '%s\n' "${t%"${t##*[![:space:]]}"}"; }
# KEY's file under /proc/sys (net.core.somaxconn -> /proc/sys/net/core/somaxconn).
sysctl_path() { printf '/proc/sys/%s\n' "${1//.//}"; }

# profile_line LINE: the one parser of a profile line. Without its # comment,
# split at the first '=': PL_KEY (every blank removed), PL_VALUE (norm).
# 1 for a blank or comment-only line, 2 for a line without '='.
profile_line() {
    local l=${1%%#*}
    [[ $l =~ ^[[:space:]]*$ ]] && return 1
    [[ $l == *=* ]] || return 2
    PL_KEY=${l%%=*} PL_KEY=${PL_KEY//[[:space:]]/}
    PL_VALUE=$(norm "${l#*=}")
}

# profile_load FILE: its settings into the arrays PF_KEYS and PF_VALUES
# (profile_line), in file order; lines profile_file_check refuses are left out.
# Call it in the current shell: the arrays are the result.
PF_KEYS=() PF_VALUES=()
profile_load() {
    local line
    PF_KEYS=() PF_VALUES=()
    while IFS= read -r line || [ -n "$line" ]; do
        profile_line "$line" && PF_KEYS+=("$PL_KEY") && PF_VALUES+=("$PL_VALUE")
    done < "$1"
    return 0
}
# profile_pairs FILE: its settings as "key=value" lines (read by lib/remote.py
# and harness/sendq-probe, and the tests: a format kept).
profile_pairs() {
    local i
    profile_load "$1"
    for i in "${!PF_KEYS[@]}"; do printf '%s=%s\n' "${PF_KEYS[i]}" "${PF_VALUES[i]}"; done
}
profile_keys_of() {
    profile_load "$1"
    [ ${#PF_KEYS[@]} -eq 0 ] || printf '%s\n' "${PF_KEYS[@]}"
}
# profile_has_key FILE KEY: whether FILE sets KEY. Not `profile_keys_of | grep -q`:
# under pipefail, with SIGPIPE ignored (bench.sh's children), grep's early exit
# failed printf's next write and the pipeline said "not a key" (12 of 20 tries
# with a 900-key profile; once in CI with three keys).
profile_has_key() {
    local k
    profile_load "$1"
    for k in "${PF_KEYS[@]}"; do [ "$k" = "$2" ] && return 0; done
    return 1
}

# profile_file_check FILE: 0 when FILE is a usable profile; else "why" on stderr, 1.
# Static checks only (no namespace): syntax, net.* keys, keys this kernel has.
profile_file_check() {
    local f=$1 n=0 line k v seen=" " rc
    [ -f "$f" ] && [ -r "$f" ] || { log "$f: not a readable file"; return 1; }
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        [ "$n" -le 1000 ] || { log "$f: more than 1000 lines: not a profile"; return 1; }
        profile_line "$line" && rc=0 || rc=$?
        [ "$rc" = 1 ] && continue
        [ "$rc" = 2 ] && { log "$f line $n: expects 'key = value': ${line%%#*}"; return 1; }
        k=$PL_KEY v=$PL_VALUE
        [[ $k =~ ^[a-z0-9_]+(\.[A-Za-z0-9_-]+)+$ ]] || { log "$f line $n: not a sysctl key: '$k'"; return 1; }
        [ -n "$v" ] || { log "$f line $n: $k has no value"; return 1; }
        [[ $v == *=* ]] && { log "$f line $n: $k: a value cannot hold '='"; return 1; }
        [[ $seen == *" $k "* ]] && { log "$f line $n: $k is set twice"; return 1; }
        seen+="$k "
        [[ $k == net.* ]] \
            || { log "$k: not a network-namespace setting (only net.* keys live in a namespace; it would change the host)"; return 1; }
        [ -e "$(sysctl_path "$k")" ] || { log "$k: this kernel has no such setting"; return 1; }
    done < "$f"
    [ "$seen" != " " ] || { log "$f: sets nothing (for the kernel's own values, use the profile stock)"; return 1; }
}

# profile_label SPEC: the profile's name in a run's condition and the tables
# (tuned, stock, tuned-KEY, file=NAME for a FILE).
profile_label() {
    case "$1" in
        tuned|stock|tuned-*) printf '%s\n' "$1" ;;
        *) local b=${1##*/}; b=${b%.conf}; printf 'file=%s\n' "${b//[^A-Za-z0-9._-]/_}" ;;
    esac
}

# profile_check SPEC: 0 when SPEC names a profile (static checks: no namespace);
# else "--profile: why" on stderr, 1. (bench.sh goes further: profiles_expand.)
profile_check() {
    local spec=$1 err tuned
    tuned=$(profile_tuned_file)
    case "$spec" in
        ablate) log "--profile: ablate is a list of profiles: give it to bench.sh's PROFILE"; return 1 ;;
        stock) return 0 ;;
    esac
    err=$(profile_file_check "$tuned" 2>&1) || { log "--profile: tuned profile $err"; return 1; }
    case "$spec" in
        tuned) return 0 ;;
        tuned-*)
            profile_has_key "$tuned" "${spec#tuned-}" && return 0
            log "--profile: $spec: ${spec#tuned-} is not a key of the tuned profile ($(profile_keys_of "$tuned" | tr '\n' ' '| sed 's/ $//'))"
            return 1 ;;
    esac
    if [[ $spec != */* ]] && [ ! -e "$spec" ]; then
        log "--profile: unknown profile '$spec' (known: tuned, stock, tuned-KEY, ablate, or a profile FILE)"
        return 1
    fi
    err=$(profile_file_check "$spec" 2>&1) || { log "--profile: $err"; return 1; }
}

# profile_writes SPEC: the settings SPEC writes into PF_KEYS and PF_VALUES, in
# order (none for stock; tuned-KEY: tuned's without KEY). In the current shell.
profile_writes() {
    local i
    case "$1" in
        stock) PF_KEYS=() PF_VALUES=() ;;
        tuned) profile_load "$(profile_tuned_file)" ;;
        tuned-*)
            profile_load "$(profile_tuned_file)"
            for i in "${!PF_KEYS[@]}"; do
                [ "${PF_KEYS[i]}" != "${1#tuned-}" ] || unset "PF_KEYS[i]" "PF_VALUES[i]"
            done
            PF_KEYS=("${PF_KEYS[@]}") PF_VALUES=("${PF_VALUES[@]}") ;;
        *) profile_load "$1" ;;
    esac
}

# profile_record_keys SPEC: the keys a run of SPEC reads back into sysctl.txt:
# tuned's, then a FILE's own that tuned lacks (the same keys for every profile).
profile_record_keys() {
    local tuned
    tuned=$(profile_tuned_file)
    profile_keys_of "$tuned"
    case "$1" in
        stock|tuned|tuned-*) ;;
        *) profile_keys_of "$1" | grep -vxF -f <(profile_keys_of "$tuned") ;;
    esac
    return 0
}

# profile_missing_why KEY: why KEY cannot be set inside a namespace.
profile_missing_why() {
    if [ -e "$(sysctl_path "$1")" ]; then
        echo "not a per-namespace setting on this kernel (the host has it, a network namespace does not)"
    else
        echo "this kernel has no such setting"
    fi
}

# profile_apply NS SPEC: write SPEC's settings inside namespace NS. Each key must
# exist in NS, and the host's value (this shell's namespace) must not move: a
# key that changed it is put back and refused. 1 on the first problem with
# PROFILE_ERR="KEY: why" (NS then holds part of the profile: delete it); 0 and
# PROFILE_ERR="" when all are written. Call it in the current shell (not in
# $(...), where bash resets the traps): before each write the host's value is
# recorded in _PROFILE_PENDING, which profile_restore_pending (the caller's
# EXIT/signal cleanup) puts back should a signal land between a write that
# leaked and its check; a single-number value also goes to the run's state
# (state_put sysctl.KEY "BEFORE SET", lib/orphans.sh) for the next bench.sh
# after a kill -9. Both are dropped once the host is seen unchanged.
declare -gA _PROFILE_PENDING=()
PROFILE_ERR=""
profile_apply() {
    local ns=$1 spec=$2 k v before after i keys=() values=()
    PROFILE_ERR=""
    profile_writes "$spec"
    keys=("${PF_KEYS[@]}") values=("${PF_VALUES[@]}")
    for i in "${!keys[@]}"; do
        k=${keys[i]} v=${values[i]}
        ip netns exec "$ns" test -e "$(sysctl_path "$k")" || { PROFILE_ERR="$k: $(profile_missing_why "$k")"; return 1; }
        before=$(norm "$(sysctl -n "$k" 2>/dev/null)")
        _PROFILE_PENDING[$k]="$before=$v"
        [[ $before =~ ^[0-9]+$ && $v =~ ^[0-9]+$ ]] && declare -F state_put >/dev/null \
            && state_put "sysctl.$k" "$before $v"
        if ! ip netns exec "$ns" sysctl -q -w "$k=$v" >/dev/null 2>&1; then
            profile_restore_pending
            PROFILE_ERR="$k = $v: the kernel refused this value"
            return 1
        fi
        after=$(norm "$(sysctl -n "$k" 2>/dev/null)")
        if [ "$before" != "$after" ]; then
            if profile_restore_pending; then
                PROFILE_ERR="$k: not per-namespace on this kernel (setting it changed the host; restored to $before)"
            else
                PROFILE_ERR="$k: not per-namespace on this kernel (setting it changed the host to $after; could NOT restore $before: host now $(norm "$(sysctl -n "$k" 2>/dev/null)"))"
            fi
            return 1
        fi
        profile_forget "$k"
    done
}
profile_forget() {
    unset "_PROFILE_PENDING[$1]"
    [ -n "${RUN_STATE:-}" ] && rm -f "$RUN_STATE/sysctl.$1"
    return 0
}
# profile_restore_pending: every key profile_apply was writing (KEY -> "BEFORE=SET"):
# the host's value put back to BEFORE if it moved, checked by reading it again.
# 0 when every host value is BEFORE again; 1 (and "KEY: ..." on stderr) if not.
profile_restore_pending() {
    local k before cur rc=0
    for k in "${!_PROFILE_PENDING[@]}"; do
        before=${_PROFILE_PENDING[$k]%%=*}
        cur=$(norm "$(sysctl -n "$k" 2>/dev/null)")
        if [ "$cur" != "$before" ]; then
            sysctl -q -w "$k=$before" >/dev/null 2>&1
            cur=$(norm "$(sysctl -n "$k" 2>/dev/null)")
            if [ "$cur" != "$before" ]; then
                log "$k: the host's value is $cur, and could not be put back to $before"
                rc=1
                continue
            fi
            log "$k: the host's value put back to $before"
        fi
        profile_forget "$k"
    done
    return "$rc"
}

# profile_read NS KEY...: "key=value" per KEY as in force inside NS (one process;
# "key" alone for a key NS does not have).
profile_read() {
    local ns=$1; shift
    # shellcheck disable=SC2016  # expanded by the inner shell (norm: the same function)
    ip netns exec "$ns" "$BASH" -c "$(declare -f norm)"'
        for k; do
            if v=$(cat "/proc/sys/${k//.//}" 2>/dev/null); then printf "%s=%s\n" "$k" "$(norm "$v")"
            else printf "%s\n" "$k"; fi; done' read "$@"
}

# profiles_probe SPEC...: in a throwaway namespace (always deleted, also on a
# signal), read the stock value of every key the SPECs touch ("key=value"
# lines on stdout) and apply each SPEC that writes something, as a run would.
# "PROFILE: LABEL: KEY: why" on stderr and 1 on the first problem. A subshell:
# its traps are its own.
profiles_probe() (
    local ns=c1m-$BASHPID-$RANDOM spec line keys=()
    trap 'profile_restore_pending; ip netns del "$ns" 2>/dev/null' EXIT
    trap 'exit 130' INT TERM HUP
    ip netns add "$ns" 2>/dev/null || { log "PROFILE: cannot create a namespace to check the profiles"; exit 1; }
    mapfile -t keys < <(for spec in "$@"; do profile_record_keys "$spec"; done | awk '!seen[$0]++')
    while IFS= read -r line; do
        [[ $line == *=* ]] || { log "PROFILE: $line: $(profile_missing_why "$line")"; exit 1; }
        printf '%s\n' "$line"
    done < <(profile_read "$ns" "${keys[@]}")
    for spec in "$@"; do
        profile_apply "$ns" "$spec" || { log "PROFILE: $(profile_label "$spec"): $PROFILE_ERR"; exit 1; }
    done
    exit 0
)

# profiles_expand LIST: the comma list's profiles, resolved, one per line, in
# order, no duplicates (ablate expanded; a FILE as its absolute path); as
# root, every key and value checked in a throwaway namespace first (without
# root the caller refuses anyway). "PROFILE: why" on stderr and 1 for a bad one.
profiles_expand() {
    local items=() p out=() probe=() err stock="" i tuned labels=" " l
    # commas only (a FILE's path may hold spaces), each item trimmed
    IFS=',' read -r -a items <<<"$1"
    for p in "${!items[@]}"; do
        items[p]=$(trim "${items[p]}")
        [ -n "${items[p]}" ] || unset "items[p]"
    done
    items=("${items[@]}")
    [ ${#items[@]} -gt 0 ] || { log "PROFILE: empty"; return 1; }
    tuned=$(profile_tuned_file)
    for p in "${items[@]}"; do
        if [ "$p" = ablate ]; then
            err=$(profile_check tuned 2>&1) || { log "PROFILE: ${err#--profile: }"; return 1; }
            out+=(ablate) probe+=(tuned)
            continue
        fi
        err=$(profile_check "$p" 2>&1) || { log "PROFILE: ${err#--profile: }"; return 1; }
        case "$p" in tuned|stock|tuned-*) ;; *) p=$(realpath -- "$p") ;; esac
        # two FILEs of one name would be one condition
        l=$(profile_label "$p")
        [[ $labels == *" $l "* ]] && [[ " ${out[*]} " != *" $p "* ]] \
            && { log "PROFILE: two profiles named $l: rename one file"; return 1; }
        labels+="$l "
        out+=("$p") probe+=("$p")
    done
    if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
        stock=$(profiles_probe "${probe[@]}") || return 1
    fi
    if [[ " ${out[*]} " == *" ablate "* ]] && [ -z "$stock" ]; then
        log "PROFILE: ablate needs root (the stock values come from a fresh namespace)"
        return 1
    fi
    for p in "${out[@]}"; do
        if [ "$p" = ablate ]; then
            # every key of tuned whose value is not the stock one (stock: one
            # "key=value" line per key, as profile_read prints them)
            profile_load "$tuned"
            for i in "${!PF_KEYS[@]}"; do
                [[ $'\n'$stock$'\n' == *$'\n'"${PF_KEYS[i]}=${PF_VALUES[i]}"$'\n'* ]] \
                    || printf 'tuned-%s\n' "${PF_KEYS[i]}"
            done
            printf '%s\n' stock tuned
        else
            printf '%s\n' "$p"
        fi
    done | awk '!seen[$0]++'
}
