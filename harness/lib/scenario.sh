# shellcheck shell=bash
# scenario.sh - load one scenario file (lib/scenarios/NAME.sh, interface in
# lib/scenarios/idle.sh) and name what the harness knows.

# scenario_names: the scenarios there are, one per line.
scenario_names() {
    local f
    for f in "$C1M_ROOT"/harness/lib/scenarios/*.sh; do
        [ -e "$f" ] && basename "$f" .sh
    done
}

# scenario_load NAME: define NAME's hooks (idle's first, so a scenario
# defines only what it changes). 1 when NAME is not a scenario.
scenario_load() {
    [[ $1 =~ ^[a-z][a-z0-9_-]*$ ]] && [ -f "$C1M_ROOT/harness/lib/scenarios/$1.sh" ] || return 1
    # shellcheck source=scenarios/idle.sh
    source "$C1M_ROOT/harness/lib/scenarios/idle.sh"
    # shellcheck disable=SC1090
    source "$C1M_ROOT/harness/lib/scenarios/$1.sh"
}

# condition_of PROFILE VARIANT RATE [PY_GC]: the run's condition, the parts that
# differ from the default (tuned profile, no variant, unlimited rate, the
# garbage collector as py_server sets it: frozen) joined with "/": "" for a default run,
# e.g. "stock", "stock/now", "rate=20000", "gc=off". Results are grouped by
# contender, tier and condition.
condition_of() {
    local parts=()
    [ "$1" != tuned ] && parts+=("$(profile_label "$1")")    # lib/profiles.sh: file=NAME for a FILE
    [ -n "$2" ] && parts+=("$2")
    [ "${3:-0}" != 0 ] && parts+=("rate=$3")
    [ "${4:-freeze}" != freeze ] && parts+=("gc=$4")
    (IFS=/; printf '%s\n' "${parts[*]}")
}
