#!/usr/bin/env bats
# PY_GC (bench.sh) and run_one.sh --py-gc: the garbage-collector steps of the
# ladder of fixes (py_server --gc). Each value is its own condition of the
# Python contenders, in its own run directory; a C contender runs in the
# freeze condition only (py_server's own) and is recorded unsupported in the others; bad
# values exit 2 naming the setting before anything is created.
# tests/py/test_py_server_cli.py (GcTest) covers the flag itself.

# Parallel group (tests/run.sh): it judges no time, CPU or machine-wide figure
# and sets no machine-wide setting, its runs keep their state in the file's own
# C1M_STATE_ROOT (tests/helpers.bash): it runs beside another file.

# bats file_tags=harness
load helpers
load_bats_libs

@test "PY_GC=freeze,off: asyncio-protocol holds all N in both conditions, with --gc off in the second; c is unsupported in gc=off" {
    need_root
    out=$BATS_TEST_TMPDIR/run
    # smallest: 1k, no hold (was 1 s), no calibration, no memory settling: the
    # condition shows in the server command and the rows, every run holding all N after its ramp
    run env -C "$C1M_ROOT" "${QUIET[@]}" CALIBRATE=0 MEM_SETTLE=0 TIERS=1k CONTENDERS=c,asyncio-protocol PY_GC=freeze,off HOLD=0 \
        HEARTBEAT=1 TIMEOUT=120 SETTLE_MAX=0 OUT="$out" PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
    [ "$status" = 0 ] || fail "bench.sh exit $status: $output"
    run "$PYTHON" - "$out/runs.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = sorted((r["contender"], r["py_gc"], r["condition"], r["status"] if r["status"] == "unsupported"
              else r["accepted"], r["run_dir"]) for r in rows)
want = [("asyncio-protocol", "freeze", "", "1000", "runs/asyncio-protocol-1k-1"),
        ("asyncio-protocol", "off", "gc=off", "1000", "runs/asyncio-protocol-1k-gc=off-1"),
        ("c", "freeze", "", "1000", "runs/c-1k-1"),
        ("c", "off", "gc=off", "unsupported", "")]
assert got == want, got
print("ok")
PY
    assert_output ok
    grep -q -- "--gc off" "$out/runs/asyncio-protocol-1k-gc=off-1/result.json" || fail "no --gc off in the server command"
    ! grep -q -- "--gc" "$out/runs/asyncio-protocol-1k-1/result.json" || fail "--gc in the default run"
    grep -q '"py_gcs": "freeze,off"' "$out/meta.json" || fail "meta.json: no py_gcs"
}

@test "PY_GC and --py-gc: bad values exit 2 naming the setting, before anything is created" {
    out=$BATS_TEST_TMPDIR/bad
    for v in later "" freeze,,bogus; do
        run env -C "$C1M_ROOT" CONTENDERS=c TIERS=2k OUT="$out" PY_GC="$v" PYTHON="$PYTHON" BUILD="$C1M_BUILD" harness/bench.sh
        [ "$status" = 2 ] || fail "PY_GC='$v': exit $status: $output"
        assert_output --partial "PY_GC"
        [ ! -e "$out" ] || fail "PY_GC='$v': created $out"
    done
    for args in "--contender asyncio-protocol --py-gc later" "--contender c --py-gc off"; do
        # shellcheck disable=SC2086
        run timeout 20 env PYTHON="$PYTHON" BUILD="$C1M_BUILD" C1M_STATE_ROOT="$BATS_TEST_TMPDIR/state" \
            "$C1M_ROOT/harness/run_one.sh" $args --conns 2k --out "$out"
        [ "$status" = 2 ] || fail "run_one.sh $args: exit $status: $output"
        assert_output --partial "--py-gc"
        [ ! -e "$out" ] || fail "run_one.sh $args: created $out"
    done
}
