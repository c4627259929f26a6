# shellcheck shell=bash
# scenarios/idle.sh - the default scenario: open N idle connections, hold them
# with heartbeats, stop. It adds nothing to the run, and is the model of the
# scenario interface every harness/lib/scenarios/NAME.sh implements (sourced
# by bench.sh and by run_one.sh; harness/README.md "Scenarios"):
#
#   scenario_knobs        the environment knobs it reads, one name per word
#   scenario_needs        the contender capabilities it needs, one per word
#                         (lib/contenders.sh contender_supports); bench.sh
#                         records a contender without one `unsupported`
#   scenario_check        validate them: print "KNOB: why" on stderr and return 1
#                         (the caller exits 2, before anything is created)
#   scenario_variants     one label per line (each runs as its own condition, e.g.
#                         "now" and "backoff"); nothing for a single unnamed variant
#   scenario_server_args  words appended to the server command ($variant set)
#   scenario_client_args  words appended to the client command ($variant set)
#   scenario_run          the scenario's own phase, after the hold and the
#                         end-of-hold counts, before the client is stopped; sets
#                         documented keys of R, a named status on failure
#   scenario_keeps_conns  0 when every connection is still open after
#                         scenario_run (run_one.sh then takes the end-of-hold
#                         counts again: server, sockets, client must all be N);
#                         1 for a scenario that closes some by design
#   scenario_fail WHY [STATUS]  (given) note WHY; an otherwise ok run gets
#                         STATUS (default scenario-failed; the observation
#                         scenario_status, judged by lib/judge.py, which lists
#                         them): a phase that did not happen never leaves the run ok
#   scenario_summary MON FILE ARGS...  (given) MON's summary (lib/MON:
#                         stallmon.py, stormmon.py; `MON summary ARGS`) into
#                         FILE, then scenario_record FILE; a summary that
#                         fails or prints nothing fails the scenario and
#                         returns 1: the caller stops its phase there (what
#                         the monitor did not say is not "nothing went wrong",
#                         and nothing derived from it can be measured)
#   scenario_record FILE  (given) every key of FILE's "record" object (a
#                         monitor's JSON summary) into R, through
#                         lib/record.py pairs: no eval
#   scenario_after_client once the client has stopped (its summary written),
#                         the server still running: counts that must include
#                         everything the client saw (only after scenario_run)
#
# Knobs are plain environment variables: bench.sh exports them to run_one.sh.

scenario_knobs() { :; }
scenario_needs() { :; }
scenario_check() { :; }
scenario_variants() { :; }
scenario_server_args() { :; }
scenario_client_args() { :; }
scenario_run() { :; }
scenario_keeps_conns() { return 0; }
scenario_fail() {
    R[note]="${R[note]:+${R[note]}; }$scenario: $1"
    log "$contender: $scenario: $1"
    [ -n "${O[scenario_status]:-}" ] || obs scenario_status "${2:-scenario-failed}"   # lib/judge.py
    return 0
}
scenario_record() {
    local kv=() i
    mapfile -d '' -t kv < <("$PYTHON" "$C1M_ROOT/harness/lib/record.py" pairs "$1" record)
    for ((i = 0; i + 1 < ${#kv[@]}; i += 2)); do R[${kv[i]}]=${kv[i + 1]}; done
}
scenario_summary() {
    local mon=$1 file=$2 rc=0 why=""
    shift 2
    "$PYTHON" "$C1M_ROOT/harness/lib/$mon" summary "$@" > "$file" || rc=$?
    if [ "$rc" != 0 ]; then why="exited $rc"; elif [ ! -s "$file" ]; then why="printed nothing"; fi
    [ -z "$why" ] || { scenario_fail "$mon summary $why on ${1:-its samples}: no verdict on the phase"; return 1; }
    scenario_record "$file"
}
scenario_after_client() { :; }
