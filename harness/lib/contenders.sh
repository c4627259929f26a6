# shellcheck shell=bash
# contenders.sh - the contender registry for bash: thin wrappers over its one
# home, harness/lib/contenders.py (the table: every contender by name, the
# command that starts it, its capabilities, the ladder order and the default
# set). run_one.sh, bench.sh and anatomy-cpu start a contender only through
# contender_cmd.

C1M_CONTENDERS_PY=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/contenders.py
# _contenders ARG...: the registry's command line, run by $PYTHON
_contenders() { "${PYTHON:-python3}" -I -S "$C1M_CONTENDERS_PY" "$@"; }

# Known contenders, in ladder order (contenders.py TABLE), and what bench.sh
# runs when CONTENDERS is unset (contenders.py DEFAULT).
# shellcheck disable=SC2034  # read by the scripts that source this file
mapfile -t C1M_CONTENDERS < <(_contenders list)
# shellcheck disable=SC2034
mapfile -t C1M_DEFAULT_CONTENDERS < <(_contenders default)
[ ${#C1M_CONTENDERS[@]} -gt 0 ] \
    || echo "error: cannot read the contender registry with ${PYTHON:-python3}: $C1M_CONTENDERS_PY" >&2

# contender_cmd NAME ARG...: the command line (words, one line) that starts
# contender NAME with the common flags ARG..., its C programs in $BUILD, Python
# as $PYTHON; exit status 1 for an unknown name.
contender_cmd() {
    local words
    contender_known "$1" || return 1
    mapfile -d '' words < <(_contenders cmd --build "$BUILD" --python "$PYTHON" "$@")
    [ ${#words[@]} -gt 0 ] || return 1
    echo "${words[*]}"
}

# contender_server_cmd [--port P --conns N --stats FILE --worker-conns N --gc G]
# NAME [EXTRA...]: the command line (words, one line) a run starts contender
# NAME with, its C programs in $BUILD, Python as $PYTHON: the common flags,
# a scenario's EXTRA flags and --gc for a Python contender (contenders.py
# server_cmd); exit status 2 for an unknown name.
contender_server_cmd() {
    local words
    mapfile -d '' words < <(_contenders server-cmd --build "$BUILD" --python "$PYTHON" "$@")
    [ ${#words[@]} -gt 0 ] || return 2
    echo "${words[*]}"
}

# contender_client_cmd --conns N --host H --port P --heartbeat S --min-available MIB
# --json FILE [--worker-conns N] [--rate R] [EXTRA...]: the load client's command
# line (words, one line per word: read it with mapfile -t) a run starts, in $BUILD
# (contenders.py client_cmd); exit status 2 on a bad call.
contender_client_cmd() {
    local words
    mapfile -d '' words < <(_contenders client-cmd --build "$BUILD" "$@")
    [ ${#words[@]} -gt 0 ] || return 2
    printf '%s\n' "${words[@]}"
}

# contender_supports NAME CAPABILITY: 0 when contender NAME implements
# CAPABILITY, a feature a scenario may need (scenario_needs, lib/scenarios/;
# the capabilities: contenders.py CAPABILITIES).
contender_supports() { _contenders supports "$1" "$2"; }

# contender_known NAME: 0 when NAME is in the registry.
contender_known() { [[ " ${C1M_CONTENDERS[*]} " == *" $1 "* ]]; }
