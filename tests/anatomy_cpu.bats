#!/usr/bin/env bats
# harness/anatomy-cpu (make anatomy-cpu): the CPU anatomy at a small N, with
# several server workers each. One anatomy of c and pyext runs once in
# setup_file (with perf) and the first tests read it: its layers add up to the
# measured total, perf's own sampled total agrees with the measured CPU within
# 10% (perf saw every worker for the whole window), the real stacks land in
# the layers they should, and the outputs exist and parse. Then perf missing
# and perf refusing to sample (a stand-in perf that fails as a restricted one
# does): a message naming the cause, exit 3, the totals measured and every
# layer unknown. Bad settings: exit 2 naming the knob, nothing created.
# tests/py/test_perf_layers.py (in tests/python.bats) covers the layer rules,
# the folded-stack parsing and the flame graph renderer on fixtures.

load helpers
load_bats_libs

# The machine is shared while tests run: no quiet gate.
COMMON=(QUIET_MAX=0 HOLD=1 SERVER_WORKER_CONNS=1500 CLIENT_WORKER_CONNS=1000)

# anatomy OUT VAR=value...: harness/anatomy-cpu with COMMON and the VAR=values.
anatomy() {
    local out=$1; shift
    (cd "$C1M_ROOT" && exec env "${COMMON[@]}" OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" "$@" \
        harness/anatomy-cpu)
}

setup_file() {
    export RUN_DIR=$BATS_FILE_TMPDIR/anatomy
    [ "$(id -u)" = 0 ] || return 0
    PERF=$(command -v perf) || return 0
    # Under SANITIZE=1 the extension needs the ASan runtime preloaded, which the
    # harness does not do (as in tests/harness.bats): pyext sits that one out.
    local contenders=c,pyext
    [ "${SANITIZE:-0}" = 1 ] && contenders=c
    export SUITE_CONTENDERS=$contenders
    anatomy "$RUN_DIR" CONTENDERS="$contenders" N=4000 PERF_PERIOD_US=100 > "$BATS_FILE_TMPDIR/anatomy.out" 2>&1
    echo $? > "$BATS_FILE_TMPDIR/anatomy.rc"
}

teardown() {
    check_sanitizer_logs
}

need_suite() {
    need_root
    command -v perf >/dev/null || skip "needs perf (apt-get install linux-perf; make test installs it)"
    [ -f "$BATS_FILE_TMPDIR/anatomy.rc" ] || fail "the shared anatomy did not run"
}

# csv_get FILE CONTENDER PHASE COLUMN: one cell of layers.csv.
csv_get() {
    "$PYTHON" - "$@" <<'EOF'
import csv, sys
f, c, p, col = sys.argv[1:]
for r in csv.DictReader(open(f)):
    if r["contender"] == c and r["phase"] == p:
        print(r[col])
EOF
}
# layers_sum FILE CONTENDER PHASE: the sum of the layer columns.
layers_sum() {
    "$PYTHON" - "$@" <<'EOF'
import csv, sys
sys.path.insert(0, "harness/lib")
import perf_layers as pl
f, c, p = sys.argv[1:]
for r in csv.DictReader(open(f)):
    if r["contender"] == c and r["phase"] == p:
        print("%.4f" % sum(float(r[l] or 0) for l in pl.LAYERS))
EOF
}
# within PCT A B: |A - B| <= PCT% of B.
within() { awk -v p="$1" -v a="$2" -v b="$3" 'BEGIN{d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= p / 100 * b)}'; }

@test "anatomy-cpu: c and pyext at 4k: exit 0, layers add up to the measured total, perf saw all of it" {
    need_suite
    cd "$C1M_ROOT"
    run cat "$BATS_FILE_TMPDIR/anatomy.rc"
    [ "$output" = 0 ] || fail "anatomy-cpu exited $output: $(cat "$BATS_FILE_TMPDIR/anatomy.out")"
    for c in ${SUITE_CONTENDERS//,/ }; do
        for phase in ramp hold; do
            total=$(csv_get "$RUN_DIR/layers.csv" "$c" "$phase" measured_total)
            sampled=$(csv_get "$RUN_DIR/layers.csv" "$c" "$phase" sampled_total)
            sum=$(layers_sum "$RUN_DIR/layers.csv" "$c" "$phase")
            conns=$(csv_get "$RUN_DIR/layers.csv" "$c" "$phase" conns)
            echo "# $c $phase: measured $total, layers $sum, sampled $sampled" >&3
            [ "$conns" = 4000 ] || fail "$c $phase: conns $conns, expected 4000"
            within 10 "$sum" "$total" || fail "$c $phase: layers add up to $sum, measured $total"
            # the ramp holds enough samples to judge perf's coverage (the 1 s hold of
            # idle connections only a few: its sampled total is not checked)
            [ "$phase" = hold ] || within 10 "$sampled" "$total" \
                || fail "$c $phase: perf sampled $sampled us/conn, the tree used $total"
        done
        workers=$(csv_get "$RUN_DIR/layers.csv" "$c" ramp workers)
        [ "$workers" -ge 3 ] || fail "$c: $workers workers (SERVER_WORKER_CONNS=1500 at 4000 wants 3)"
    done
}

@test "anatomy-cpu: the real stacks land in their layers (kernel TCP, libc1m, CPython)" {
    need_suite
    cd "$C1M_ROOT"
    pos() { awk -v v="$1" 'BEGIN{exit !(v > 0)}'; }
    pos "$(csv_get "$RUN_DIR/layers.csv" c ramp "kernel: accept + TCP")" || fail "c: no kernel TCP time"
    pos "$(csv_get "$RUN_DIR/layers.csv" c ramp "libc1m loop")" || fail "c: no libc1m time"
    run csv_get "$RUN_DIR/layers.csv" c ramp "CPython interpreter"
    [ -z "$output" ] || [ "$output" = 0.00 ] || fail "c: CPython time $output"
    # c1m-server has symbols: nearly nothing of it is unknown
    unk=$(csv_get "$RUN_DIR/layers.csv" c ramp unknown)
    tot=$(csv_get "$RUN_DIR/layers.csv" c ramp measured_total)
    awk -v u="${unk:-0}" -v t="$tot" 'BEGIN{exit !(u <= 0.1 * t)}' || fail "c: unknown $unk of $tot"
    grep -q '__sys_accept4_\[k\]\|do_accept_\[k\]' "$RUN_DIR/c-ramp.folded" || fail "no accept in the c stacks"
    if [[ $SUITE_CONTENDERS == *pyext* ]]; then
        pos "$(csv_get "$RUN_DIR/layers.csv" pyext ramp "CPython interpreter")" || fail "pyext: no CPython time"
        pos "$(csv_get "$RUN_DIR/layers.csv" pyext ramp "libc1m loop")" || fail "pyext: no libc1m time"
    fi
}

@test "anatomy-cpu: folded stacks, flame graphs, tables and plots are written and parse" {
    need_suite
    cd "$C1M_ROOT"
    for c in ${SUITE_CONTENDERS//,/ }; do
        for phase in ramp hold; do
            [ -s "$RUN_DIR/$c-$phase.folded" ] || fail "no $c-$phase.folded"
            # every folded line is "frames COUNT"
            run grep -cvE '^.+ [0-9]+$' "$RUN_DIR/$c-$phase.folded"
            [ "$output" = 0 ] || fail "$c-$phase.folded: $output malformed lines"
            run "$PYTHON" -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(sum(1 for g in r.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "f"))' "$RUN_DIR/$c-$phase.svg"
            assert_success
            [ "$output" -gt 5 ] || fail "$c-$phase.svg: $output frames"
        done
        [ ! -e "$RUN_DIR/$c/ramp.data" ] || fail "perf data kept without KEEP_PERF_DATA=1"
    done
    run grep -c 'measured total' "$RUN_DIR/layers.md"
    [ "$output" -ge 2 ] || fail "layers.md: $(cat "$RUN_DIR/layers.md")"
    if command -v gnuplot >/dev/null; then
        for f in anatomy-cpu-ramp.png anatomy-cpu-ramp.svg anatomy-cpu-hold.png anatomy-cpu-hold.svg; do
            [ -s "$RUN_DIR/plots/$f" ] || fail "no plots/$f"
        done
    fi
    # nothing left behind: the namespaces it used are gone
    for c in ${SUITE_CONTENDERS//,/ }; do
        ns=$(cat "$RUN_DIR/$c/netns")
        [[ $ns == c1m-* ]] || fail "$c: no namespace recorded"
        ! ip netns list | grep -q "^$ns\b" || fail "namespace $ns left behind"
    done
}

@test "anatomy-cpu: perf missing (C1M_PERF=/nonexistent, or a name not on PATH): says so, exit 3, totals measured, layers unknown" {
    need_root
    cd "$C1M_ROOT"
    out=$BATS_TEST_TMPDIR/noperf
    run anatomy "$out" CONTENDERS=c N=2000 HOLD=0 C1M_PERF=/nonexistent/perf
    [ "$status" = 3 ] || fail "exit $status: $output"
    assert_output --partial "perf not found ('/nonexistent/perf' from C1M_PERF)"
    assert_output --partial "every layer will be unknown"
    total=$(csv_get "$out/layers.csv" c ramp measured_total)
    unk=$(csv_get "$out/layers.csv" c ramp unknown)
    awk -v t="$total" 'BEGIN{exit !(t > 0)}' || fail "no measured total: $(cat "$out/layers.csv")"
    [ "$unk" = "$total" ] || fail "unknown $unk, total $total"
    [ -z "$(csv_get "$out/layers.csv" c ramp "kernel: accept + TCP")" ] || fail "a layer without perf"
    grep -q "No CPU profile: perf not found" "$out/layers.md" || fail "layers.md does not say why"
    # a name looked up on PATH that is not there
    run anatomy "$BATS_TEST_TMPDIR/noname" CONTENDERS=c N=1000 HOLD=0 C1M_PERF=c1m-no-such-perf
    [ "$status" = 3 ] || fail "exit $status: $output"
    assert_output --partial "perf not found ('c1m-no-such-perf' from C1M_PERF)"
}

@test "anatomy-cpu: perf refusing to sample (a restricted perf): the cause is named, exit 3" {
    need_root
    cd "$C1M_ROOT"
    fake=$BATS_TEST_TMPDIR/perf
    # what perf prints when perf_event_paranoid forbids the event to this user
    cat > "$fake" <<'EOF'
#!/bin/sh
case "$1" in
--version) echo "perf version 6.1.0"; exit 0 ;;
record) echo "Error:" >&2
        echo "Access to performance monitoring and observability operations is limited." >&2
        echo "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting" >&2
        exit 255 ;;
esac
exit 1
EOF
    chmod +x "$fake"
    out=$BATS_TEST_TMPDIR/refused
    run anatomy "$out" CONTENDERS=c N=1000 HOLD=0 C1M_PERF="$fake"
    [ "$status" = 3 ] || fail "exit $status: $output"
    assert_output --partial "perf refused to sample (perf record exit 255: Access to performance monitoring"
    assert_output --partial "perf_event_paranoid="
    [ -n "$(csv_get "$out/layers.csv" c ramp unknown)" ] || fail "no unknown layer: $(cat "$out/layers.csv")"
}

@test "anatomy-cpu: bad settings exit 2 naming the knob, before anything is created" {
    cd "$C1M_ROOT"
    out=$BATS_TEST_TMPDIR/bad
    check() {   # check KNOB VAR=value...
        local knob=$1; shift
        run env OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" "$@" harness/anatomy-cpu
        [ "$status" = 2 ] || fail "$*: exit $status: $output"
        [[ $output == *"$knob"* ]] || fail "$*: the message does not name $knob: $output"
        [ ! -e "$out" ] || fail "$*: $out was created"
    }
    check "N:" N=abc
    check "N:" N=0
    check "N:" N=
    check "N:" N=999999999999999
    check "CONTENDERS:" CONTENDERS=nosuch
    check "CONTENDERS:" CONTENDERS=
    check "CONTENDERS:" CONTENDERS=c,c
    check "CONTENDERS:" CONTENDERS=c,,pyext
    check "HOLD:" HOLD=-1
    check "PERF_CALLGRAPH:" PERF_CALLGRAPH=lbr
    check "PERF_PERIOD_US:" PERF_PERIOD_US=0
    check "SERVER_WORKER_CONNS:" SERVER_WORKER_CONNS=x
    run env OUT="$out" harness/anatomy-cpu extra-arg
    [ "$status" = 2 ] && [[ $output == *"no arguments expected"* ]] || fail "an argument: exit $status: $output"
    run harness/anatomy-cpu --help
    [ "$status" = 0 ]
    assert_output --partial "exit: 0 done, 1 a run failed, 2 usage, 3 perf unavailable"
}
