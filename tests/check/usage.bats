#!/usr/bin/env bats
# Every program and harness entry point refuses a bad command line or setting
# with exit 2, naming it, before it needs root or creates anything (make check:
# no root, no namespace). The fuller cases are with each program's own tests.

load ../helpers
load_bats_libs

setup() {
    cd "$C1M_ROOT"
    OUT=$BATS_TEST_TMPDIR/out
}

# refused WHAT CMD...: CMD exits 2, its output names WHAT, and $OUT was not created
refused() {
    local what=$1; shift
    echo "case: $*" >&2
    run timeout 20 "$@"
    assert_failure 2
    assert_output --partial -- "$what"
    [ ! -e "$OUT" ] || fail "$* created $OUT"
}

@test "the C servers and the client: an unknown flag exits 2 with the usage line" {
    local p
    for p in c1m-server c1m-floor c1m-client c1m-stat c1m-calib c1m-libuv c1m-uring; do
        [ -x "$C1M_BUILD/$p" ] || { [[ $p == c1m-libuv || $p == c1m-uring ]] && continue; fail "no $C1M_BUILD/$p"; }
        usage_case "$C1M_BUILD/$p" --bogus --bogus
    done
}

@test "py_server: a missing --loop, an unknown loop or a bad number exits 2" {
    refused "--loop" env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server --api protocol
    refused "--loop" env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server --loop nope --api protocol
    refused "--max-conns" env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server --loop asyncio --api protocol --max-conns 1x
    # py_server.anatomy names its own flag and usage (a bad --port printed py_server's usage;
    # --top 0 measured for nothing); --conns 100 fits any user's fd limit (the default
    # 2,000 raises a soft limit of 1024, but a hard one under 2,064 refuses it first)
    local a
    for a in "--port 0" "--port 70000" "--top 0" "--top -1"; do
        # shellcheck disable=SC2086  # words
        refused "py_server.anatomy: error: ${a%% *}" env PYTHONPATH="$C1M_ROOT" "$PYTHON" -m py_server.anatomy \
            --client "$C1M_BUILD/c1m-client" --conns 100 $a
        refute_output --partial "usage: python3 -m py_server --loop"
    done
}

@test "harness/run_one.sh: unknown flag, contender or gate setting exits 2 before --out is created" {
    refused "--bogus" env BUILD="$C1M_BUILD" harness/run_one.sh --bogus
    refused "--contender" env BUILD="$C1M_BUILD" harness/run_one.sh --contender nope --conns 10 --out "$OUT"
    refused "--quiet-cpu-pct" env BUILD="$C1M_BUILD" harness/run_one.sh --contender c --conns 10 --out "$OUT" --quiet-cpu-pct 101
}

@test "harness/bench.sh, anatomy-cpu and demo: arguments, bad TIERS/N and CONTENDERS exit 2 (before the root check)" {
    refused "no arguments" harness/bench.sh --bogus
    refused "no arguments" harness/demo --bogus
    refused "TIERS" env TIERS=abc OUT="$OUT" harness/bench.sh
    refused "CONTENDERS" env CONTENDERS=nope OUT="$OUT" harness/bench.sh
    refused "--bogus" harness/anatomy-cpu --bogus
    refused "N:" env N=abc OUT="$OUT" harness/anatomy-cpu
    refused "CONTENDERS" env CONTENDERS=nope OUT="$OUT" harness/anatomy-cpu
    # --check: the settings alone, whoever runs it
    refused "TIERS: not a connection count" env TIERS=abc OUT="$OUT" harness/bench.sh --check
    refused "no arguments (but --check)" harness/bench.sh --check extra
    run timeout 20 env TIERS=2k CONTENDERS=c OUT="$OUT" harness/bench.sh --check
    assert_success
    assert_output ""
    [ ! -e "$OUT" ] || fail "bench.sh --check created $OUT"
}

@test "bench.sh, demo, anatomy-cpu: a setting set but empty is refused (2), not taken for its default (OUT= wrote into results/)" {
    # make bench OUT= (or OUT=$UNSET) ran the suite into results/<UTC time>, make
    # anatomy-cpu OUT= into results/anatomy-cpu-<UTC time>; one rule from the
    # table (settings.py check-env TARGET) for the three
    local v
    for v in OUT REPEAT HOLD TIMEOUT QUIET_MAX CALIBRATE MEM_SETTLE TCP_MEM SCENARIO PUSH_EVERY STALL_WAIT; do
        refused "$v: set but empty (unset it for the default: " env TIERS=2k CONTENDERS=c "$v=" harness/bench.sh --check
    done
    for v in OUT N CONTENDERS HOLD TIMEOUT PY_GC; do
        refused "$v: set but empty" env "$v=" harness/anatomy-cpu
    done
    # the demo: its own settings and bench's it passes through
    for v in OUT DEMO_TIER DEMO_ANATOMY TCP_MEM PY_GC; do
        refused "$v: set but empty" env "$v=" harness/demo
    done
    # an empty value that is a choice, or a setting whose default is empty, still takes it
    run timeout 20 env TIERS=2k CONTENDERS=c OUT="$OUT" SERVER_WORKER_CONNS= CLIENT_WORKER_CONNS= MEM_GUARD_MIB= \
        CPUS_SERVER= REMOTE_PYTHON= SSH_OPTS= harness/bench.sh --check
    assert_success
    [ ! -e "$OUT" ] || fail "--check created $OUT"
}

@test "make bench: a bad setting is refused (2) before the root check, the packages and the build" {
    # make bench-args runs first: a typo'd TIERS cost no apt-get, no build, no sudo
    local build=$BATS_TEST_TMPDIR/build
    run timeout 60 make -s --no-print-directory bench TIERS=abc BUILD="$build" OUT="$OUT"
    assert_failure 2
    assert_output --partial "TIERS: not a connection count: 'abc'"
    refute_output --partial "needs root"
    [ ! -e "$build" ] || fail "make bench built $build before refusing TIERS"
    [ ! -e "$OUT" ] || fail "make bench created $OUT"
}

@test "make bench, demo and anatomy-cpu: a setting the target never reads is refused (2) naming its own, before anything runs" {
    # make anatomy-cpu TIERS=10k ran its default N=300k; make demo TIERS=100k its
    # 10k; make anatomy-cpu RATE=5000 without a rate (the table's targets column)
    local a
    for a in "anatomy-cpu TIERS=10k:TIERS: make anatomy-cpu does not read it; its setting is N" \
             "anatomy-cpu RATE=5000:RATE: make anatomy-cpu does not read it (make help" \
             "anatomy-cpu SCENARIO=push:SCENARIO: make anatomy-cpu does not read it (make help" \
             "demo TIERS=100k:TIERS: make demo sets it itself; its setting is DEMO_TIER" \
             "demo CONTENDERS=c:CONTENDERS: make demo sets it itself; its setting is DEMO_CONTENDERS" \
             "demo HOLD=5:HOLD: make demo sets it itself (make help" \
             "demo N=5k:N: make demo does not read it; its setting is DEMO_TIER" \
             "bench N=10k:N: make bench does not read it; its setting is TIERS" \
             "bench DEMO_ANATOMY=c:DEMO_ANATOMY: make bench does not read it (make help"; do
        # shellcheck disable=SC2086  # words
        run make -n ${a%%:*} OUT="$OUT"
        assert_failure 2
        assert_output --partial "${a#*:}"
        refute_output --partial "harness/"
    done
    # a goal that reads it, or a setting the target passes on, is not refused
    run make -n bench demo TIERS=10k OUT="$OUT"
    assert_success
    run make -n anatomy-cpu N=5k HOLD=1 OUT="$OUT"
    assert_success
    run make -n demo PY_GC=off TCP_MEM=auto DEMO_TIER=5k OUT="$OUT"
    assert_success
    # a setting of the build is read: those targets build first
    run make -n anatomy-cpu SANITIZE=1 OUT="$OUT"
    assert_success
    # one of another target's is not (make anatomy-cpu STALL=0.1 ran without)
    run make -n anatomy-cpu STALL=0.1 OUT="$OUT"
    assert_failure 2
    assert_output --partial "STALL: make anatomy-cpu does not read it"
    # set but empty on make's command line: refused before the build, naming the target's default
    local build=$BATS_TEST_TMPDIR/build
    for a in "anatomy-cpu OUT=:OUT: set but empty (unset it for the default: results/anatomy-cpu-<UTC time>)" \
             "demo OUT=:OUT: set but empty (unset it for the default: results/demo-<UTC time>)" \
             "anatomy-cpu CONTENDERS=:CONTENDERS: set but empty (unset it for the default: c,pyext)" \
             "bench HOLD=:HOLD: set but empty (unset it for the default: 10)"; do
        # shellcheck disable=SC2086  # words
        run timeout 60 make -s --no-print-directory ${a%%:*} BUILD="$build"
        assert_failure 2
        assert_output --partial "${a#*:}"
        [ ! -e "$build" ] || fail "make ${a%%:*} built $build before refusing it"
    done
    [ ! -e "$OUT" ] || fail "make -n created $OUT"
}

@test "harness/capacity, results.py, plot.sh, run_remote.py, sendq-probe, install-deps.sh, fingerprint.py, docs.py: usage errors exit 2" {
    refused "usage" harness/capacity --bogus
    refused "--stall" harness/capacity results/none --stall 2
    refused "usage: make compare" "$PYTHON" harness/lib/results.py compare
    refused "usage" "$PYTHON" harness/lib/results.py bogus
    refused "usage: plot.sh" harness/plot.sh
    refused "usage: run_remote.py" "$PYTHON" harness/run_remote.py --contender c --conns 10 --out "$OUT"
    refused "usage" "$PYTHON" harness/sendq-probe --bogus
    refused "--sndbuf: an empty value in the list: '1,,2'" "$PYTHON" harness/sendq-probe --sndbuf 1,,2
    refused "--rcvbuf: an empty value in the list: '4096,'" "$PYTHON" harness/sendq-probe --rcvbuf 4096,
    refused "--conns: an empty value" "$PYTHON" harness/sendq-probe --conns ''
    refused "usage" harness/install-deps.sh bogus
    refused "fingerprint.py" "$PYTHON" harness/lib/fingerprint.py bogus
    refused "usage: docs.py" "$PYTHON" harness/lib/docs.py bogus
}

@test "make with a PYTHON or BUILD that make would split (a space) exits 2 naming it, before anything runs" {
    # before: make ran '/usr/bin/python3' with '-X' as a script argument, and
    # built into two directories named by the words of BUILD
    refused "PYTHON must be one path without spaces or tabs, not '/usr/bin/python3 -X'" \
        make -s --no-print-directory check PYTHON='/usr/bin/python3 -X'
    refused "BUILD must be one path without spaces or tabs, not '$OUT x'" make -s --no-print-directory build BUILD="$OUT x"
    [ ! -e "$OUT x" ] || fail "a build directory was made"
    local sf=$BATS_TEST_TMPDIR/status
    refused "BUILD must be one path" make -s --no-print-directory plot RUN=x BUILD="$OUT x" STATUS_FILE="$sf"
    [ "$(cat "$sf")" = 2 ] || fail "STATUS_FILE: $(cat "$sf" 2>&1)"
}

@test "make compare, plot and capacity without their settings exit 2 with the usage" {
    refused "usage: make compare" make -s --no-print-directory compare A=x
    refused "usage: make plot" make -s --no-print-directory plot
    refused "usage: make capacity" make -s --no-print-directory capacity
}

@test "make capacity: a value that begins with - is judged by its own check, exit 2" {
    # MEM=-1G reached argparse as a flag: "argument --mem: expected one argument"
    refused "capacity: --mem: expects a size with a unit (K, M, G or T, binary: 64G = 64 GiB), not '-1G'" \
        make -s --no-print-directory capacity RUN=results/reference MEM=-1G
    refused "capacity: --conns: expects a whole number" \
        make -s --no-print-directory capacity RUN=results/reference CONNS=-5k
    refused "capacity: --stall: must be within [0, 1]" \
        make -s --no-print-directory capacity RUN=results/reference MEM=8G STALL=-1
    # a RUN that begins with -: a directory to read, not a flag ("arguments are required: RUN")
    local st=$BATS_TEST_TMPDIR/status
    run make -s --no-print-directory capacity RUN=-x STATUS_FILE="$st"
    assert_output --partial "capacity: -x is not a directory"
    [ "$(cat "$st")" = 2 ]   # a usage error, as make plot and make compare
}

@test "make compare, plot and capacity pass a directory named with a quote or a space whole" {
    # it reached the shell unquoted or in bare quotes: a syntax error, or two arguments;
    # and make expanded a $ in it
    local d="$BATS_TEST_TMPDIR/it's a \"dir\" \$x" st=$BATS_TEST_TMPDIR/status
    mkdir -p "$d"
    run make -s --no-print-directory compare A="$d" B="$d" STATUS_FILE="$st"
    assert_line "compare: $d holds no runs.jsonl or runs.csv"
    [ "$(cat "$st")" = 1 ]
    # A that is only a $ reference is A, not absent (compare fell back to --reference)
    run make -s --no-print-directory compare A='$x' B="$d" STATUS_FILE="$st"
    assert_output --partial "compare: '\$x' is not a directory"
    [ "$(cat "$st")" = 2 ]
    run make -s --no-print-directory capacity RUN="$d" STATUS_FILE="$st"
    assert_line "capacity: $d holds no runs.jsonl or runs.csv"
    [ "$(cat "$st")" = 1 ]
    run make -s --no-print-directory plot RUN="$d" STATUS_FILE="$st"
    assert_line "error: $d/runs.jsonl or runs.csv not found: give a directory written by harness/bench.sh"
    [ "$(cat "$st")" = 1 ]
    # not a directory at all: a usage error, as compare says it
    run make -s --no-print-directory plot RUN="$d/nope" STATUS_FILE="$st"
    assert_line "error: $d/nope is not a directory (give one written by harness/bench.sh)"
    [ "$(cat "$st")" = 2 ]
}

@test "the test tools (tests/tools): missing or bad arguments exit 2" {
    refused "needs PORT" "$PYTHON" tests/tools/push_server.py
    refused "--port" "$PYTHON" tests/tools/push_reader.py --bogus
}
