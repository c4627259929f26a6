#!/usr/bin/env bats
# harness/lib/common.sh's stop traps against bash's timed read (no root, no
# namespace; make check). Bash 5.2 times `read -t` with SIGALRM and a longjmp:
# a trap that ran inside the read and outlived its timeout was abandoned at
# its next command substitution, and the script carried on after the read as
# if no signal had come (SIGTERM to anatomy-cpu mid-ramp: half its cleanup,
# then the hold). timed_read notes the signal and handles it after the read.

load ../helpers
load_bats_libs

# stopped SCRIPT: SCRIPT (bash, common.sh sourced, set -u) run in the
# background, SIGTERM once it printed "waiting", its exit status and output
stopped() {
    local p i
    bash -c 'set -u; C1M_ROOT=$1; source "$1/harness/lib/common.sh"; eval "$2"' - "$C1M_ROOT" "$1" \
        > "$BATS_TEST_TMPDIR/out" 2>&1 &
    p=$!
    for ((i = 0; i < 100; i++)); do grep -q waiting "$BATS_TEST_TMPDIR/out" && break; sleep 0.05; done
    sleep 0.3                   # well inside the read
    kill -TERM "$p"
    RC=0; wait "$p" || RC=$?
    OUT=$(cat "$BATS_TEST_TMPDIR/out")
}

@test "traps: a stop signal during wait_child runs the whole cleanup, command substitutions and all, and exits 130" {
    stopped '
        slow() { local x; x=$(sleep 0.7; echo done); echo "cleanup $x"; }
        sleep 30 & child=$!
        on_exit stop_pid "$child" 5
        on_exit slow
        echo waiting
        wait_child "$child"
        echo "carried on after the wait"'
    [ "$RC" = 130 ] || fail "exit $RC: $OUT"
    [[ $OUT == *"cleanup done"* ]] || fail "the cleanup was cut short: $OUT"
    [[ $OUT != *"carried on"* ]] || fail "the script went on after the signal: $OUT"
}

@test "traps: a stop signal during timed_read (perf's acknowledgement) is handled once the read returns" {
    stopped '
        slow() { local x; x=$(sleep 1.5; echo done); echo "cleanup $x"; }
        on_exit slow
        exec {fd}<> <(:)
        echo waiting
        timed_read 1 "$fd" reply
        echo "carried on after the read"'
    [ "$RC" = 130 ] || fail "exit $RC: $OUT"
    [[ $OUT == *"cleanup done"* ]] || fail "the cleanup was cut short: $OUT"
    [[ $OUT != *"carried on"* ]] || fail "the script went on after the signal: $OUT"
}

@test "traps: timed_read returns the line read, and a timeout's status" {
    run bash -c 'set -u; C1M_ROOT=$1; source "$1/harness/lib/common.sh"
        exec {fd}<> <(:)
        echo hello >&$fd
        timed_read 1 "$fd" got; echo "rc=$? got=$got"
        timed_read 0.1 "$fd" got; echo "rc=$?"' - "$C1M_ROOT"
    assert_success
    assert_line "rc=0 got=hello"
    assert_line --regexp '^rc=(1[3-9][0-9]|2[0-9][0-9])$'
}

@test "traps: a second ^C to the group during the cleanup does not kill what the cleanup runs (the run's record)" {
    setsid env --default-signal=INT bash -c 'set -u; C1M_ROOT=$1; source "$1/harness/lib/common.sh"
        # the cleanup writes the record: a Python process, as record.py write
        write() { "$2" -c "import time; time.sleep(1.0); print(\"record written\")"; }
        on_exit write "$1" "$2"
        sleep 30 & child=$!
        on_exit stop_pid "$child" 5
        echo waiting
        wait_child "$child"' - "$C1M_ROOT" "$PYTHON" > "$BATS_TEST_TMPDIR/out" 2>&1 &
    local p=$! i
    for ((i = 0; i < 100; i++)); do grep -q waiting "$BATS_TEST_TMPDIR/out" && break; sleep 0.05; done
    kill -INT -- "-$p"
    sleep 0.5                   # the cleanup's Python is running
    kill -INT -- "-$p"
    RC=0; wait "$p" || RC=$?
    OUT=$(cat "$BATS_TEST_TMPDIR/out")
    [ "$RC" = 130 ] || fail "exit $RC: $OUT"
    [[ $OUT == *"record written"* ]] || fail "the cleanup's record.py was killed by the second ^C: $OUT"
    [[ $OUT != *Traceback* ]] || fail "$OUT"
}

@test "traps: a script started with stdout, stderr or stdin closed has /dev/null there (awk's tests still answer)" {
    # bench.sh >&-: every `awk 'BEGIN{exit !(...)}'` exited 2 on the closed
    # stdout, and the quiet gate neither passed nor timed out (QUIET_MAX=1:
    # still waiting after 600 s)
    bash -c 'set -u; C1M_ROOT=$1; source "$1/harness/lib/common.sh"
        awk "BEGIN{exit !(2 >= 1)}"; echo "awk=$?" >> "$2"
        readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2 >> "$2"' - "$C1M_ROOT" "$BATS_TEST_TMPDIR/out" \
        <&- >&- 2>&-
    run cat "$BATS_TEST_TMPDIR/out"
    assert_output "awk=0
/dev/null
/dev/null
/dev/null"
}

@test "traps: a stop signal in a script's first milliseconds (sourcing, the registry's Python) ends it, quietly, never lost" {
    # SIGTERM 0-36 ms after run_one.sh started killed it (143) with a Python
    # child's BrokenPipeError on the terminal, and once (the re-exec that resets
    # SIGINT) the signal was lost and the run went on to `ok`. BUILD names no
    # binaries: a signal that comes late ends it at that check (exit 1), not in a run.
    local i rc out seen=""
    for i in $(seq 0 11); do
        out=$( { env BUILD="$BATS_TEST_TMPDIR/nobuild" C1M_STATE_ROOT="$BATS_TEST_TMPDIR/state" \
                     "$C1M_ROOT/harness/run_one.sh" --contender c --conns 2k --out "$BATS_TEST_TMPDIR/out-$i" &
                 p=$!; sleep "0.0$(printf %02d $(( (i % 10) * 4 )))"; kill -TERM "$p"; wait "$p"; echo "rc=$?"; } 2>&1 )
        rc=${out##*rc=} rc=${rc%%[^0-9]*}
        case $rc in 130|143|1) ;; *) fail "try $i: exit $rc: $out" ;; esac
        [[ $out != *BrokenPipeError* && $out != *Traceback* ]] || fail "try $i: $out"
        [ ! -e "$BATS_TEST_TMPDIR/out-$i" ] || [ "$rc" = 1 ] || fail "try $i: created its OUT and exited $rc"
        seen+="$rc "
    done
    [[ $seen == *130* ]] || fail "no try was stopped by its trap: $seen"
}

@test "traps: a message whose reader is gone (bench.sh 2>&1 | head -1) is no failure: log returns 0, plot.sh exits 0" {
    # bench.sh ignores SIGPIPE, and so do its children: plot.sh drew every plot,
    # then its last command, log "plots in ...", failed on the closed pipe and
    # was its exit status (1): after a suite that ran, bench.sh said "error:
    # plotting failed" and exited 1, "1 harness error(s): see the runs' run_one.log".
    local f=$BATS_TEST_TMPDIR/rc
    { trap '' PIPE; sleep 0.3
      bash -c 'set -u; C1M_ROOT=$1; source "$1/harness/lib/common.sh"; log "a message"; echo "log=$?" > "$2"' \
          - "$C1M_ROOT" "$f"; } 2>&1 | :
    run cat "$f"
    assert_output "log=0"
    command -v gnuplot >/dev/null || skip "gnuplot is missing (plot.sh's part)"
    cp -r "$C1M_ROOT/results/reference-c-100k-r3" "$BATS_TEST_TMPDIR/run"
    rm -rf "$BATS_TEST_TMPDIR/run/plots" "$BATS_TEST_TMPDIR/run/report.md"
    { trap '' PIPE; sleep 0.3
      "$C1M_ROOT/harness/plot.sh" "$BATS_TEST_TMPDIR/run"; echo "plot=$?" > "$f"; } 2>&1 | :
    run cat "$f"
    assert_output "plot=0"
    [ -s "$BATS_TEST_TMPDIR/run/report.md" ] && [ -s "$BATS_TEST_TMPDIR/run/plots/t_connect.png" ]
}

@test "traps: with SIGPIPE ignored and pipefail (bench.sh's children), tuned-KEY of a large profile is found every time" {
    # profile_keys_of | grep -q: grep's exit at the first key failed printf's next
    # write (EPIPE, SIGPIPE ignored), and pipefail made it "not a key of the tuned
    # profile" (a run of PROFILE=ablate failed so in CI). A tuned profile of 5,000
    # keys, the one asked for first (loaded as profile_load would, its file checks
    # passed), 20 times
    run bash -c 'set -uo pipefail; trap "" PIPE; C1M_ROOT=$1; source "$1/harness/lib/common.sh"
                 source "$1/harness/lib/profiles.sh"
                 profile_file_check() { return 0; }
                 profile_load() { PF_KEYS=(net.core.somaxconn); for ((i = 0; i < 5000; i++)); do
                                      PF_KEYS+=("net.ipv4.key$i"); done; }
                 bad=0
                 for i in $(seq 20); do profile_check tuned-net.core.somaxconn || bad=$((bad + 1)); done
                 echo "missed $bad of 20"' - "$C1M_ROOT"
    assert_success
    assert_output --partial "missed 0 of 20"
    refute_output --partial "Broken pipe"
}
