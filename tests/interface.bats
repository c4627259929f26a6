#!/usr/bin/env bats
# The command line a user meets (issue 37): harness/lib/settings.py's table
# against make (an unknown or bad command-line setting refused, exit 2, naming
# the closest), bench.sh (a misspelt environment setting refused), `make help`
# (every target and setting of the table, every .PHONY target of the Makefile),
# every entry point's --help (stdout, exit 0), STATUS_FILE (the script's own
# exit status through make), plot.sh on a directory it cannot write, the
# estimate (lib/estimate.py on a fixture). No root, no sockets, but the last
# test: one 2k run piped to a file (root: skipped without), no \r in it.

# Parallel group (tests/run.sh): it judges no time, CPU or machine-wide figure
# and sets no machine-wide setting, its runs keep their state in the file's own
# C1M_STATE_ROOT (tests/helpers.bash): it runs beside another file.

load helpers
load_bats_libs

setup() {
    cd "$C1M_ROOT"
}

@test "make: an unknown setting exits 2 naming the closest, before anything runs" {
    # -n: were the check gone, make would print the suite's commands, not run it
    run make -n bench TIER=10k CONTENDER=c OUT="$BATS_TEST_TMPDIR/out"
    assert_failure 2
    assert_output --partial "TIER: unknown setting; did you mean TIERS?"
    assert_output --partial "CONTENDER: unknown setting; did you mean CONTENDERS?"
    refute_output --partial "bench.sh"
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
    run make -n build XYZZY_PLUGH=1
    assert_failure 2
    assert_output --partial "XYZZY_PLUGH: unknown setting"
    refute_output --partial "did you mean"
    # a bad value of a make-only setting no script checks
    run make -n build SANITIZE=2
    assert_failure 2
    assert_output --partial "SANITIZE: '2' does not match"
    run make -s help PYTHON="$PYTHON" TIERS=10k
    assert_success
}

@test "bench.sh: a misspelt environment setting exits 2 naming the closest; common variables are not typos" {
    # REPEAT=0 is refused too, later: were the check gone, nothing would start either
    run env TIER=10k REPEAT=0 harness/bench.sh
    assert_failure 2
    assert_output --partial "TIER: unknown setting; did you mean TIERS?"
    run env CPU_SERVER=0 REPEAT=0 harness/bench.sh
    assert_failure 2
    assert_output --partial "did you mean CPUS_SERVER?"
    # HOST and PORT are one letter from HOSTS and PORTS but common: the refusal
    # that follows is TIERS's own value, not a typo
    run env HOST=x PORT=1 TIERS=0 harness/bench.sh
    assert_failure 2
    refute_output --partial "unknown setting"
    assert_output --partial "TIERS"
    run "$PYTHON" harness/lib/settings.py check-env
    assert_success
}

@test "make help: every target and setting of the table, every .PHONY target of the Makefile, a duration each" {
    run make -s help PYTHON="$PYTHON"
    assert_success
    local help=$output n t
    while read -r n; do
        grep -qE "^  $n " <<<"$help" || fail "make help does not list the setting $n"
    done < <("$PYTHON" harness/lib/settings.py names)
    [ "$(grep -c '^  [A-Z]' <<<"$help")" = "$("$PYTHON" harness/lib/settings.py names | wc -l)" ]
    for t in $(sed -n 's/^\.PHONY://p' Makefile); do
        grep -qE "^  $t +(~|instant)" <<<"$help" || fail "make help does not list the target $t with a duration"
    done
    # bench's duration is the estimate of the default suite, in minutes
    grep -qE '^  bench +~[0-9.]+ (min|h) \(defaults\)' <<<"$help" || fail "bench: no estimated duration: $help"
}

@test "the table knows every knob bench.sh and the scenarios read, and harness/README.md's settings table" {
    local k names
    names=$("$PYTHON" harness/lib/settings.py names)
    for k in $(sed -n '/^KNOBS=(/,/)/p' harness/bench.sh | tr -d '()' | sed 's/KNOBS=//') \
             $(cat harness/lib/scenarios/*.sh | sed -n 's/^scenario_knobs() { echo \(.*\); }/\1/p'); do
        grep -qx "$k" <<<"$names" || fail "bench.sh reads $k: not in harness/lib/settings.py"
    done
    # every `NAME` of the README's Settings (environment) table is in the table
    for k in $(sed -n '/^## Settings (environment)/,/^## /p' harness/README.md | grep '^| `' \
               | cut -d'|' -f2 | grep -oE '`[A-Z_0-9]+`' | tr -d '`'); do
        grep -qx "$k" <<<"$names" || fail "harness/README.md documents $k: not in harness/lib/settings.py"
    done
    # and the other way: every setting make bench reads is documented there
    for k in $("$PYTHON" harness/lib/settings.py names bench); do
        grep -q "\`$k\`" harness/README.md || fail "harness/lib/settings.py: $k (bench) is not in harness/README.md"
    done
}

@test "every entry point's --help: stdout, nothing on stderr, exit 0" {
    local cmds=(harness/bench.sh harness/run_one.sh harness/plot.sh harness/demo harness/capacity harness/anatomy-cpu
                harness/sendq-probe "$PYTHON harness/run_remote.py" "$PYTHON harness/lib/settings.py"
                "$PYTHON harness/lib/estimate.py" "$PYTHON -m py_server" "$PYTHON -m py_server.anatomy")
    local b c
    for b in c1m-server c1m-client c1m-stat c1m-floor c1m-calib c1m-libuv c1m-uring; do
        [ -x "$C1M_BUILD/$b" ] && cmds+=("$C1M_BUILD/$b")
    done
    for c in "${cmds[@]}"; do
        # shellcheck disable=SC2086  # "PYTHON -m x" is words
        $c --help > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" || fail "$c --help exited $?"
        [ -s "$BATS_TEST_TMPDIR/out" ] || fail "$c --help: nothing on stdout"
        [ ! -s "$BATS_TEST_TMPDIR/err" ] || fail "$c --help wrote to stderr: $(cat "$BATS_TEST_TMPDIR/err")"
    done
}

@test "STATUS_FILE: the script's own exit status through make (1, 2), absent when no script ran" {
    local f=$BATS_TEST_TMPDIR/status
    mkdir -p "$BATS_TEST_TMPDIR/empty"
    run make -s plot PYTHON="$PYTHON" RUN="$BATS_TEST_TMPDIR/empty" STATUS_FILE="$f"
    assert_failure 2
    [ "$(cat "$f")" = 1 ]       # a directory without runs
    run make -s plot PYTHON="$PYTHON" RUN="$BATS_TEST_TMPDIR/none" STATUS_FILE="$f"
    assert_failure 2
    [ "$(cat "$f")" = 2 ]       # not a directory: a usage error
    run make -s compare PYTHON="$PYTHON" A=results/reference STATUS_FILE="$f"
    assert_failure 2
    [ "$(cat "$f")" = 2 ]
    run make -n bench TIER=10k STATUS_FILE="$f"
    assert_failure 2
    [ "$(cat "$f")" = 2 ]
    run make -s capacity PYTHON="$PYTHON" RUN=results/reference STATUS_FILE="$f"
    assert_success
    [ "$(cat "$f")" = 0 ]
    # a prerequisite failed (bench-root, not root): no script ran, no stale status
    local d
    d=$(mktemp -d /tmp/c1m-status-XXXXXX)
    chmod 777 "$d"
    echo 0 > "$d/status"
    chmod 666 "$d/status"
    if [ "$(id -u)" = 0 ]; then
        run runuser -u nobody -- make -s bench PYTHON="$PYTHON" STATUS_FILE="$d/status"
    else
        run make -s bench PYTHON="$PYTHON" STATUS_FILE="$d/status"
    fi
    [ ! -e "$d/status" ]; local gone=$?
    rm -rf "$d"
    assert_failure 2
    assert_output --partial "root"
    [ "$gone" = 0 ]
}

@test "plot.sh on a directory another user wrote: it says it cannot write, not that it cannot read" {
    command -v gnuplot >/dev/null || skip "needs gnuplot"
    local d
    d=$(mktemp -d /tmp/c1m-plot-XXXXXX)
    cp -r results/reference "$d/run"
    chmod -R a+rX,go-w "$d"
    if [ "$(id -u)" = 0 ]; then
        run runuser -u nobody -- harness/plot.sh "$d/run"
    else
        chmod -R a-w "$d/run"
        run harness/plot.sh "$d/run"
        chmod -R u+w "$d/run"
    fi
    rm -rf "$d"
    assert_failure 1
    assert_output --partial "cannot write $d/run"
    refute_output --partial "cannot read"
}

@test "estimate.py: ramp per connection, hold and overhead from a fixture's runs" {
    local r=$BATS_TEST_TMPDIR/results
    mkdir -p "$r/a"
    echo '{"settings": {"scenario": "idle"}}' > "$r/a/meta.json"
    # three runs of c at 1000, 20 s apart: 1 s ramp + 10 s hold, so 9 s of overhead
    printf '%s\n' contender,tier,status,accepted,t_accept_s,hold_s,client_start_unix_ms \
        c,1000,ok,1000,1.0,10,0 c,1000,ok,1000,1.0,10,20000 c,1000,ok,1000,1.0,10,40000 > "$r/a/runs.csv"
    run "$PYTHON" harness/lib/estimate.py plan --tiers 2000 --contenders c,pyext --hold 5 --runs-per-cell 3 --results "$r"
    assert_success
    # 2000 x 1 ms + 5 s hold + 9 s; pyext has no runs: c's rate at that tier
    assert_line "c 2000 16"
    assert_line "pyext 2000 16"
    assert_line "total 96"
    assert_line --partial "basis calibrated on 3 committed ok runs"
    # a directory whose meta.json is unreadable: its scenario unknown, its runs not used
    mkdir -p "$r/b"; cp "$r/a/runs.csv" "$r/b/"; echo '{"settings": ' > "$r/b/meta.json"
    run "$PYTHON" harness/lib/estimate.py plan --tiers 2000 --contenders c --hold 5 --runs-per-cell 3 --results "$r"
    assert_line --partial "basis calibrated on 3 committed ok runs"
    # a tier of no connection, or negative runs or hold: usage (ZeroDivisionError's traceback)
    for bad in "--tiers 0" "--tiers -5" "--tiers 2000 --runs-per-cell -1" "--tiers 2000 --hold -1"; do
        # shellcheck disable=SC2086  # words
        run "$PYTHON" harness/lib/estimate.py plan $bad --contenders c --results "$r"
        assert_failure 2
        assert_output --partial "estimate.py: error: --"
        refute_output --partial Traceback
    done
}

@test "bench.sh piped to a file: the plan, an estimate and an ETA, no \\r progress lines" {
    need_root
    local out=$BATS_TEST_TMPDIR/run
    # smallest: no calibration, no memory settling (the plain lines are judged)
    env DISTURB_PCT=100 INIT_PCT=100 QUIET_CPU_PCT=100 QUIET_MAX=0 TIERS=2k CONTENDERS=c HOLD=1 \
        HEARTBEAT=1 SETTLE_MAX=5 CALIBRATE=0 MEM_SETTLE=0 OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" \
        harness/bench.sh > "$BATS_TEST_TMPDIR/log" 2>&1
    local rc=$?
    [ "$rc" = 0 ] || fail "bench.sh exited $rc: $(cat "$BATS_TEST_TMPDIR/log")"
    grep -q '^estimated duration: ~[0-9]* s, until ~[0-9:]* UTC (calibrated on' "$BATS_TEST_TMPDIR/log" \
        || fail "no estimate: $(cat "$BATS_TEST_TMPDIR/log")"
    grep -q '^\[1/1\] c at 2k.*, ETA [0-9:]* UTC (~[0-9]* min left)' "$BATS_TEST_TMPDIR/log" \
        || fail "no ETA: $(cat "$BATS_TEST_TMPDIR/log")"
    # each phase still shows, as a plain line
    grep -q '^  c  *2000  holding with heartbeats every 1s' "$BATS_TEST_TMPDIR/log" \
        || fail "no plain hold line: $(cat "$BATS_TEST_TMPDIR/log")"
    ! grep -q $'\r' "$BATS_TEST_TMPDIR/log" || fail "a \\r in the piped log: $(grep -c $'\r' "$BATS_TEST_TMPDIR/log") lines"
    ! grep -q $'\r' "$out/runs/c-2k-1/run_one.log" || fail "a \\r in run_one.log"
}
