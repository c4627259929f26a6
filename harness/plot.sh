#!/usr/bin/env bash
# plot.sh RUN_DIR - redraw every plot (PNG and SVG) and report.md of a bench
# run from its runs.jsonl (or runs.csv, in older results directories),
# ramp/*.csv and meta.json alone. Needs no root.
#
# harness/lib/results.py turns the records into gnuplot data files under
# RUN_DIR/plots/data/ (derived, safe to delete); harness/plots/*.gp draw them
# (the tier, ramp, bytes and ratio-to-floor plots, and those the report modules
# harness/lib/report_*.py ask for: profiles, scenarios).
#
# Exit: 0 done, 1 error (missing input, gnuplot missing or failing), 2 usage.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"

GPDIR=$C1M_ROOT/harness/plots
RESULTS_PY=$C1M_ROOT/harness/lib/results.py

# usage [STATUS]: --help (0) on stdout, a usage error (2) on stderr
usage() {
    local rc=${1:-2}
    printf '%s\n' "usage: plot.sh RUN_DIR    (a results/<timestamp> directory written by bench.sh)" \
        "  writes RUN_DIR/plots/ and RUN_DIR/report.md (needs no root)" \
        "exit: 0 done, 1 error (no runs in RUN_DIR, a directory it cannot write, gnuplot), 2 usage (RUN_DIR not a directory)" >&"$(( rc == 0 ? 1 : 2 ))"
    exit "$rc"
}

# (gp_quote: lib/common.sh)

# draw NAME: plots/NAME.png and plots/NAME.svg from harness/plots/NAME.gp.
draw() {
    local name=$1 fmt
    for fmt in png svg; do
        gnuplot -e "fmt='$fmt'; data=$(gp_quote "$data"); out=$(gp_quote "$plots/$name"); gpdir=$(gp_quote "$GPDIR")" \
            "$GPDIR/$name.gp" 2> "$data/$name.$fmt.log"
        local rc=$?
        # gnuplot's warnings (a single tier: "empty x range") are not failures.
        if [ $rc -ne 0 ] || [ ! -s "$plots/$name.$fmt" ]; then
            cat "$data/$name.$fmt.log" >&2
            die "gnuplot failed on $name.gp ($fmt)"
        fi
    done
}

main() {
    [ $# -eq 1 ] || usage
    case "$1" in -h|--help) usage 0 ;; esac
    run=${1%/}
    # not a directory: a usage error (2), as make compare says it; one without runs: 1
    [ -d "$run" ] || { log "error: $1 is not a directory (give one written by harness/bench.sh)"; exit 2; }
    [ -f "$run/runs.jsonl" ] || [ -f "$run/runs.csv" ] \
        || die "$run/runs.jsonl or runs.csv not found: give a directory written by harness/bench.sh"
    command -v gnuplot >/dev/null \
        || die "gnuplot is missing: apt-get install gnuplot-nox (or harness/install-deps.sh bench)"
    plots=$run/plots
    data=$plots/data
    # a directory another user (root, make bench) wrote is readable, not
    # writable: say that, before results.py fails on its first write
    local p
    for p in "$run" "$plots" "$data" "$run/report.md"; do
        [ ! -e "$p" ] || [ -w "$p" ] || die "cannot write $p (owned by $(stat -c %U -- "$p"); you are $(id -un)):" \
            "run as its owner, or on a copy: cp -r $run /tmp/run && harness/plot.sh /tmp/run"
    done
    mkdir -p "$data" || die "cannot create $data"
    rm -f "$plots"/*.png "$plots"/*.svg
    local have
    have=$("$PYTHON" "$RESULTS_PY" plotdata "$run" "$data") || die "cannot read the runs of $run"
    if [[ " $have " == *" tiers "* ]]; then
        draw t_connect; draw rss; draw cpu
    else
        log "no run completed: no tier plots"
    fi
    [[ " $have " == *" ramp "* ]] && draw ramp
    [[ " $have " == *" bytes "* ]] && draw bytes
    [[ " $have " == *" ratio "* ]] && draw ratio     # only where the floor was measured
    # the report modules' plots (lib/report_*.py plotdata: harness/plots/NAME.gp)
    local w
    for w in $have; do
        case $w in tiers|ramp|bytes|ratio) continue ;; esac
        [[ $w =~ ^[a-z0-9_]+$ ]] && [ -f "$GPDIR/$w.gp" ] || die "results.py asked for a plot without a script: harness/plots/$w.gp"
        draw "$w"
    done
    "$PYTHON" "$RESULTS_PY" report "$run" || die "cannot write $run/report.md"
    log "plots in $plots/, report in $run/report.md"
}

main "$@"
