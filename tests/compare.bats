#!/usr/bin/env bats
# make compare A=results/X B=results/Y: usage errors, and the committed
# reference-100k (runs.csv only, 3 runs a cell) against itself. No sockets,
# no root; `make plot` on a copy of that reference (never the committed one).

# bats file_tags=harness
load helpers
load_bats_libs

setup() {
    cd "$C1M_ROOT"
}

@test "make compare without A or B: usage, exit 2" {
    run make -s compare PYTHON="$PYTHON"
    assert_failure 2
    assert_output --partial "usage: make compare A=results/X B=results/Y"
    run make -s compare PYTHON="$PYTHON" A=results/reference-100k
    assert_failure 2
    assert_output --partial "usage: make compare"
}

@test "make compare B= alone: A is the committed reference sharing the most cells" {
    run make -s compare PYTHON="$PYTHON" B=results/reference-100k MODE=absolute
    assert_success
    # B itself is left out (it shared every cell with itself: every B/A was 1.00)
    assert_line "A: the committed reference sharing the most cells with B: results/reference-all-100k"
    assert_line --regexp '^c +100k +3\.49 \(1\) +1\.51 \(3\) +- '
}

@test "results.py compare: wrong argument count or a missing directory exit 2" {
    run "$PYTHON" harness/lib/results.py compare results/reference-100k
    assert_failure 2
    assert_output --partial "usage"
    run "$PYTHON" harness/lib/results.py compare results/reference-100k "$BATS_TEST_TMPDIR/nope"
    assert_failure 2
    assert_output --partial "is not a directory"
    mkdir "$BATS_TEST_TMPDIR/empty"
    run "$PYTHON" harness/lib/results.py compare results/reference-100k "$BATS_TEST_TMPDIR/empty"
    assert_failure 1
    assert_output --partial "no runs.jsonl or runs.csv"
}

@test "make compare MODE=absolute: results/reference-100k against itself is 1.00, not significant" {
    run make -s compare PYTHON="$PYTHON" A=results/reference-100k B=results/reference-100k MODE=absolute
    assert_success
    assert_line --regexp '^t_accept_s '
    assert_line --regexp '^c +100k +1\.51 \(3\) +1\.51 \(3\) +1\.00 +\[[0-9.]+, [0-9.]+\] +not significant$'
    assert_line --regexp '^asyncio-streams +100k .* 1\.00 +\[[0-9.]+, [0-9.]+\] +not significant$'
    refute_output --partial "(significant)"
    refute_output --partial "not enough runs"
    # every contender, every metric: 5 contenders x 5 metrics
    [ "$(grep -c ' 1\.00  .*not significant$' <<< "$output")" -eq 25 ]
}

@test "make compare: results/reference against itself has one fingerprint: absolute figures; against the AMD reference, ratios to the floor" {
    run make -s compare PYTHON="$PYTHON" A=results/reference B=results/reference
    assert_success
    assert_line "compared: absolute figures, because the machines' fingerprints are the same"
    assert_line --regexp '^calibration: floor CPU per accept B/A 1\.00 '
    run make -s compare PYTHON="$PYTHON" A=results/reference-2026-12-04-late B=results/reference
    assert_success
    assert_line "  cpu_model: A AMD EPYC; B Intel(R) Xeon(R) Processor"
    assert_line "t_accept_s (time to connect, s; ratio to floor)"
}

@test "make compare: a reference from before fingerprints (results/reference-2026-12-04-late) against itself: ratios to the floor, said" {
    run make -s compare PYTHON="$PYTHON" A=results/reference-2026-12-04-late B=results/reference-2026-12-04-late
    assert_success
    assert_line --partial "because A and B have no machine fingerprint (meta.json from before fingerprints): the machines cannot be shown to be the same"
    assert_line "t_accept_s (time to connect, s; ratio to floor)"
    assert_line --regexp '^pyext +1m +1\.01 \(3\) +1\.01 \(3\) +1\.00 .*not significant$'
    refute_output --partial "(significant)"
}

@test "make compare: no shared tier exits 1 and says so; FORMAT, DISTURBED and MODE reach compare" {
    run "$PYTHON" harness/lib/results.py compare results/reference results/reference-100k
    assert_failure 1
    assert_output --partial "compare: no contender and tier in both: A results/reference has 300k, 500k, 800k, 1m; B results/reference-100k has 100k"
    # make reports any failure of its recipe as 2
    run make -s compare PYTHON="$PYTHON" A=results/reference B=results/reference-100k
    assert_failure
    assert_output --partial "compare: no contender and tier in both"
    run make -s compare PYTHON="$PYTHON" A=results/reference B=results/reference FORMAT=json DISTURBED=1 MODE=ratio
    assert_success
    "$PYTHON" -c 'import json, sys; r = json.load(sys.stdin); assert r["mode"] == "ratio" and r["disturbed_counted"], r["mode"]' <<<"$output"
    run make -s compare PYTHON="$PYTHON" A=results/reference B=results/reference FORMAT=csv MODE=absolute
    assert_success
    assert_line --index 0 --partial "metric,contender,tier,basis,"
    assert_line --regexp '^t_accept_s,c,300k,absolute,'
    run make -s compare PYTHON="$PYTHON" A=results/reference B=results/reference FORMAT=xml
    assert_failure 2
    assert_output --partial "--format must be one of text|md|json|csv"
}

@test "make plot on a copy of results/reference-100k: plots with interval bars, report lists drops" {
    command -v gnuplot >/dev/null || skip "gnuplot missing (make test-deps installs gnuplot-nox)"
    cp -r results/reference-100k "$BATS_TEST_TMPDIR/ref"
    rm -rf "$BATS_TEST_TMPDIR/ref/plots"
    run make -s plot PYTHON="$PYTHON" RUN="$BATS_TEST_TMPDIR/ref"
    assert_success
    for p in t_connect rss cpu ramp bytes; do
        [ -s "$BATS_TEST_TMPDIR/ref/plots/$p.png" ] && [ -s "$BATS_TEST_TMPDIR/ref/plots/$p.svg" ]
    done
    # 3 runs a cell: their bootstrap 95% interval is their min-max, and so named
    grep -q "median of 3 runs, bars: min-max of the runs" "$BATS_TEST_TMPDIR/ref/plots/t_connect.svg"
    grep -q "none dropped" "$BATS_TEST_TMPDIR/ref/plots/cpu.svg"
    grep -q '^## Runs dropped from the figures (0 of 15)' "$BATS_TEST_TMPDIR/ref/report.md"
    grep -q '| c | 100k | ok 3/3 | 1.51 \[1.45-1.80\] |' "$BATS_TEST_TMPDIR/ref/report.md"
    # the committed reference is untouched
    run git status --porcelain -- results/reference-100k
    assert_output ""
}

@test "make plot on a copy of results/reference: every plot, the ratio to the floor, CPU per connection, every ramp" {
    command -v gnuplot >/dev/null || skip "gnuplot missing (make test-deps installs gnuplot-nox)"
    local d=$BATS_TEST_TMPDIR/ref p f
    mkdir "$d"
    cp -r results/reference/runs.jsonl results/reference/meta.json results/reference/ramp "$d/"
    run make -s plot PYTHON="$PYTHON" RUN="$d"
    assert_success
    for p in t_connect rss cpu ramp bytes ratio; do
        for f in png svg; do [ -s "$d/plots/$p.$f" ] || fail "no plots/$p.$f"; done
        grep -q "(plots/$p.png)" "$d/report.md" || fail "report.md does not show $p.png"
    done
    grep -q "microseconds per connection" "$d/plots/cpu.svg"
    grep -q "Server CPU per connection / the floor" "$d/plots/ratio.svg"
    grep -q "bold: the median run" "$d/plots/ramp.svg"
    grep -q "server userspace alone (log scale)" "$d/plots/bytes.svg"
    # every run's ramp: 6 contenders x 3 runs
    [ "$(ls "$d"/plots/data/ramp-*.dat | wc -l)" -eq 18 ]
}

@test "unittest: the colour table and the plot data (tests/py/test_plots.py)" {
    run "$PYTHON" -m unittest tests.py.test_plots
    assert_success
    assert_line --regexp '^OK'
}

@test "make plot from runs.jsonl alone: a tier where every run was disturbed is drawn apart and footnoted" {
    command -v gnuplot >/dev/null || skip "gnuplot missing (make test-deps installs gnuplot-nox)"
    local d=$BATS_TEST_TMPDIR/run r n=0 t rep
    mkdir "$d"
    for t in 2000 5000; do
        for rep in 1 2 3; do
            "$PYTHON" harness/lib/results.py row "$d" - contender=c tier=$t repeat=$rep status=ok \
                t_accept_s=1.$rep server_rss_kib=4000 server_cpu_connect_s=0.$rep
        done
        # pyext: ok at 2000, every run disturbed at 5000
        st=ok; [ $t = 5000 ] && st=disturbed
        for rep in 1 2; do
            "$PYTHON" harness/lib/results.py row "$d" - contender=pyext tier=$t repeat=$rep status=$st \
                t_accept_s=2.$rep server_rss_kib=9000 server_cpu_connect_s=1.$rep \
                disturb_cause="outside 22% (burner)"
        done
    done
    "$PYTHON" harness/lib/results.py row "$d" - contender=uvloop tier=2000 repeat=1 status=server-died \
        health="worker 1 died"
    rm "$d/runs.csv"
    run harness/plot.sh "$d"
    assert_success
    for p in t_connect rss cpu; do [ -s "$d/plots/$p.png" ] && [ -s "$d/plots/$p.svg" ]; done
    grep -q "pyext † all runs disturbed" "$d/plots/t_connect.svg"
    grep -q "3 of 11 runs dropped (disturbed 2, server-died 1)" "$d/plots/cpu.svg"
    grep -q "median of 2-3 runs, bars: min-max of the runs" "$d/plots/t_connect.svg"
    grep -q '| pyext | 5k | disturbed 2/2 | 2.15 (2.10-2.20)† |' "$d/report.md"
    grep -q '| uvloop | 2k | 1 | server-died | worker 1 died |' "$d/report.md"
}
