#!/usr/bin/env bats
# make demo (harness/demo) end to end at 2k: the picture (PNG, SVG), its data
# and the summary naming every contender and the command that measures
# properly; bad settings refused (exit 2) before anything is created; SIGINT
# to its process group during the bench and during the anatomy leaving
# nothing. And py_server.anatomy's --json and its exit 3 for a loop the
# interpreter cannot import. One demo runs once in setup_file, shared.
# Smallest that proves it: the shared demo runs two of the ladder's six
# (DEMO_CONTENDERS=c,asyncio-streams: a C and a Python contender, the
# anatomy's among them; the picture and the summary are per contender, the
# same code for two as for six; the default ladder is checked in --help), the
# interrupted ones one (c: SIGINT reaches the anatomy after one run). The
# two interrupted demos run beside the shared one, started in setup_file: no
# test here judges a figure's value (a run another demo disturbed is drawn
# marked, its flagged figures left out, as demo.json is checked), each demo
# has its own OUT, namespaces and state directory (named by its pid).

# Parallel group (tests/run.sh): it judges no time, CPU or machine-wide figure
# and sets no machine-wide setting, its runs keep their state in the file's own
# C1M_STATE_ROOT (tests/helpers.bash): it runs beside another file.

# bats file_tags=harness
load helpers
load_bats_libs
bats_require_minimum_version 1.5.0

DEMO_CONTENDERS=(c asyncio-streams)

# demo OUT VAR=value...: harness/demo at 2k into OUT, in its own process group
# (job control, as from a terminal); sets DEMO_PID.
# smallest: no calibration (CALIBRATE=0, to its bench.sh): the demo draws none.
demo_bg() {
    local out=$1; shift
    set -m
    (cd "$C1M_ROOT" && exec env "${QUIET[@]}" CALIBRATE=0 DEMO_TIER=2k OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" \
        "$@" harness/demo) > "$out.out" 2> "$out.err" &
    DEMO_PID=$!
    set +m
}

# leftovers OUT PGID: what the demo of process group PGID left, one line each:
# a process of the group, a namespace of its runs or its anatomy, its state
# directory. Run as soon as it exited (a later bench.sh anywhere on the
# machine removes a dead pid's c1m-PID-N namespace).
leftovers() {
    local out=$1 pgid=$2 ns
    wait_for 15 group_empty "$pgid" || echo "left running: $(pgrep -a -g "$pgid")"
    for ns in $(cat "$out"/runs/*/netns 2>/dev/null) "c1m-$pgid-1"; do
        ! ip netns list | grep -q "^$ns\b" || echo "namespace $ns left"
    done
    [ ! -e "$C1M_STATE_ROOT/run-$pgid" ] || echo "state directory $C1M_STATE_ROOT/run-$pgid left"
}

# interrupt_bg OUT PATTERN: in the background, a 2k demo of c alone (the
# fewest steps before the anatomy) and SIGINT to its process group once its
# stderr shows PATTERN; writes OUT.pid (its pgid), OUT.rc (its exit status),
# OUT.left (leftovers, at once) and, when PATTERN never came, OUT.why. Sets
# INT_PID (the watcher).
interrupt_bg() {
    local out=$1 pattern=$2
    (
        rc=0
        demo_bg "$out" DEMO_CONTENDERS=c
        echo "$DEMO_PID" > "$out.pid"
        if wait_for 120 grep -q "$pattern" "$out.err"; then
            kill -INT -- "-$DEMO_PID"
        else
            echo "never reached '$pattern': $(tail -n 5 "$out.err")" > "$out.why"
            kill -TERM -- "-$DEMO_PID"
        fi
        wait "$DEMO_PID" || rc=$?
        leftovers "$out" "$DEMO_PID" > "$out.left"
        echo "$rc" > "$out.rc"
    ) 3>&- &
    INT_PID=$!
}

setup_file() {
    export RUN_DIR=$BATS_FILE_TMPDIR/demo
    [ "$(id -u)" = 0 ] || return 0
    local rc=0 watchers=()
    interrupt_bg "$BATS_FILE_TMPDIR/int-bench" "holding"; watchers+=("$INT_PID")
    interrupt_bg "$BATS_FILE_TMPDIR/int-anatomy" "^anatomy: one"; watchers+=("$INT_PID")
    demo_bg "$RUN_DIR" DEMO_CONTENDERS="$(IFS=,; echo "${DEMO_CONTENDERS[*]}")"
    echo "$DEMO_PID" > "$BATS_FILE_TMPDIR/demo.pid"
    wait "$DEMO_PID" || rc=$?
    echo "$rc" > "$BATS_FILE_TMPDIR/demo.rc"
    wait "${watchers[@]}"
}

setup() {
    DEMO_PID=
}
teardown() {
    stop_pid "$DEMO_PID"
    check_sanitizer_logs
}

need_demo() {
    need_root
    [ -f "$BATS_FILE_TMPDIR/demo.rc" ] || fail "the shared demo did not run"
    [ "$(cat "$BATS_FILE_TMPDIR/demo.rc")" = 0 ] \
        || fail "harness/demo exited $(cat "$BATS_FILE_TMPDIR/demo.rc"): $(tail -n 30 "$RUN_DIR.err")"
}


@test "demo at 2k: exit 0, the picture as PNG and SVG, its data, the runs" {
    need_demo
    for f in demo.png demo.svg runs.jsonl report.md demo/demo.json demo/anatomy.json \
             demo/contenders.dat demo/anatomy.dat; do
        [ -s "$RUN_DIR/$f" ] || fail "$f missing or empty"
    done
    [ "$(head -c 8 "$RUN_DIR/demo.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "demo.png is not a PNG"
    "$PYTHON" -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$RUN_DIR/demo.svg"
    grep -q "A DEMO" "$RUN_DIR/demo.svg"
    grep -q "Measure them: make bench" "$RUN_DIR/demo.svg"
}

@test "demo at 2k: the summary names every contender with its figures, the anatomy and the command that measures properly" {
    need_demo
    run cat "$RUN_DIR.out"
    assert_line --partial "a demo, not a measurement"
    for c in "${DEMO_CONTENDERS[@]}"; do
        # name, status, user B, kernel B, us per accept: numbers, or "-" for a figure
        # its run's sanity flags name (the machine-wide slab counters moved with
        # another suite's sockets: a negative kernel figure); demo.json is checked below
        assert_line --regexp "^  $c†? +(ok|disturbed|suspect) +([0-9]+|-) +(-?[0-9]+|-) +([0-9.]+|-)$"
    done
    assert_line --regexp "^one asyncio-streams connection \(py_server.anatomy, 2000 connections\): [0-9]+ B of RssAnon"
    assert_line "measure them properly: make bench TIERS=300k,500k,800k,1m CONTENDERS=c,asyncio-streams REPEAT=3 INIT_PCT=100 TCP_MEM=auto"
    assert_line "picture: $RUN_DIR/demo.png (and demo.svg); its figures: $RUN_DIR/demo/demo.json; the runs: $RUN_DIR/report.md"
}

@test "demo at 2k: demo.json holds every figure the picture draws, from the runs and the anatomy" {
    need_demo
    run "$PYTHON" - "$RUN_DIR" <<'EOF'
import json, sys
d = sys.argv[1]
fig = json.load(open(d + "/demo/demo.json"))
runs = {r["contender"]: r for r in map(json.loads, open(d + "/runs.jsonl"))}
assert fig["tier"] == "2k", fig["tier"]
assert [c["contender"] for c in fig["contenders"]] == ["c", "asyncio-streams"], fig["contenders"]
# each figure from the contender's one run, unless its flags name the figure's column
for c in fig["contenders"]:
    r = runs[c["contender"]]
    drawn = r["status"] in ("ok", "disturbed", "suspect")
    assert c["status"] == r["status"] and c["mark"] == ("\u2020" if drawn and r["status"] != "ok" else ""), (c, r)
    flags = [f for f in (r.get("flags") or "").split(";") if f]
    drawn = drawn and all(":" in f for f in flags)      # a flag on the whole run: nothing drawn
    bad = {f.split(":")[-1] for f in flags}
    want = {"user": None if "user_bytes_per_conn" in bad or not drawn else max(r["user_bytes_per_conn"], 0),
            "kernel": None if "kernel_bytes_per_conn" in bad or not drawn else r["kernel_bytes_per_conn"],
            "us": None if bad & {"server_cpu_connect_s", "accepted"} or not drawn
                  else r["server_cpu_connect_s"] * 1e6 / r["accepted"]}
    for k, v in want.items():
        assert (c[k] is None) if v is None else abs(c[k] - v) < 1e-6, (k, c, r)
    assert sorted(c["dropped"]) == sorted(k for k, v in want.items() if v is None and (drawn or flags)), c
a = fig["anatomy"]
assert a == json.load(open(d + "/demo/anatomy.json"))
assert fig["anatomy_contender"] == a["kind"] == "asyncio-streams" and a["connections"] == 2000, a
names = [t["type"] for t in a["types"]]
assert "asyncio.streams.StreamReader" in names and "_asyncio.Task" in names, names
assert abs(a["gc_tracked_bytes"] + a["outside_gc_bytes"] - a["rss_anon_bytes"]) < 1e-6, a
print("checked")
EOF
    assert_success
    assert_output "checked"
}

@test "demo: nothing of its own left after a normal exit (its runs' and its anatomy's namespaces, state directory)" {
    need_demo
    pid=$(cat "$BATS_FILE_TMPDIR/demo.pid")    # the demo's own pid: it names its anatomy's namespace
    run ls "$RUN_DIR/runs"
    for c in "${DEMO_CONTENDERS[@]}"; do assert_line "$c-2k-1"; done
    for ns in $(cat "$RUN_DIR"/runs/*/netns) "c1m-$pid-1"; do
        ! ip netns list | grep -q "^$ns\b" || fail "namespace $ns left"
    done
    [ ! -e "$C1M_STATE_ROOT/run-$pid" ] || fail "state directory $C1M_STATE_ROOT/run-$pid left"
}

@test "demo: bad settings exit 2 naming the setting, before anything is created" {
    out=$BATS_TEST_TMPDIR/never
    for s in DEMO_TIER=abc DEMO_TIER=1m DEMO_TIER=0 DEMO_TIER= DEMO_ANATOMY=c DEMO_ANATOMY=asyncio OUT= \
             DEMO_CONTENDERS= DEMO_CONTENDERS=nope DEMO_CONTENDERS=c,floor; do
        run env OUT="$out" "$s" "$C1M_ROOT/harness/demo"
        [ "$status" = 2 ] || fail "$s: exit $status: $output"
        assert_output --partial "error: ${s%%=*}:"
        [ ! -e "$out" ] || fail "$s: $out created"
    done
    # a contender of the suite the demo does not run, or one in capitals: named as such
    # (the message was "a comma list without blanks")
    for s in io_uring C; do
        run env OUT="$out" DEMO_CONTENDERS="$s" "$C1M_ROOT/harness/demo"
        assert_failure 2
        assert_output --partial "error: DEMO_CONTENDERS: not a demo contender: '$s'"
    done
    run env OUT="$out" DEMO_CONTENDERS="c, pyext" "$C1M_ROOT/harness/demo"
    assert_output --partial "error: DEMO_CONTENDERS: a comma list of names without blanks"
}

@test "demo --help: the settings on stdout, exit 0" {
    run --separate-stderr "$C1M_ROOT/harness/demo" --help
    assert_success
    assert_output --partial "DEMO_TIER=10k"
    assert_output --partial "DEMO_CONTENDERS=floor,c,pyext,uvloop,asyncio-protocol,asyncio-streams"
    assert_output --partial "DEMO_ANATOMY=asyncio-streams"
    [ -z "$stderr" ]
}

# interrupted OUT: the demo interrupt_bg interrupted (in setup_file) exited 130
# and left nothing (leftovers, as it exited).
interrupted() {
    local out=$1
    need_root
    [ -f "$out.rc" ] || fail "the interrupted demo did not run"
    [ ! -f "$out.why" ] || fail "$(cat "$out.why")"
    [ "$(cat "$out.rc")" = 130 ] || fail "harness/demo exited $(cat "$out.rc"): $(tail -n 20 "$out.err")"
    [ ! -s "$out.left" ] || fail "$(cat "$out.left")"
}

@test "demo: SIGINT to its group during a run: exit 130, nothing left" {
    interrupted "$BATS_FILE_TMPDIR/int-bench"
}

@test "demo: SIGINT to its group during the anatomy: exit 130, nothing left" {
    interrupted "$BATS_FILE_TMPDIR/int-anatomy"
    # it was the anatomy that was interrupted, after the floor's run
    [ -s "$BATS_FILE_TMPDIR/int-anatomy/runs.csv" ] || fail "no run before the anatomy"
}

@test "anatomy: a loop this interpreter cannot import exits 3 with a message, not a traceback" {
    mkdir -p "$BATS_TEST_TMPDIR/fake"
    echo 'raise ImportError("no uvloop here (a test)")' > "$BATS_TEST_TMPDIR/fake/uvloop.py"
    cd "$C1M_ROOT"
    run env PYTHONPATH="$BATS_TEST_TMPDIR/fake:$C1M_ROOT" "$PYTHON" -m py_server.anatomy --loop uvloop --conns 10 \
        --client "$C1M_BUILD/c1m-client"
    [ "$status" = 3 ] || fail "exit $status: $output"
    assert_output --partial "anatomy: --loop uvloop: uvloop unavailable"
    assert_output --regexp "(imports it: .* -m py_server.anatomy --loop uvloop --conns 10|no python3 on this machine imports uvloop)"
    refute_output --partial "Traceback"
}
