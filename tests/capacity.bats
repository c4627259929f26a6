#!/usr/bin/env bats
# The capacity planner (harness/capacity, `make capacity`, harness/lib/capacity.py, capacity_model.py):
# on the committed results/reference, on a tiny fixture built with results.py
# row, bad input (exit 2 naming the flag, or a RUN that is no directory; exit 1 without data), report.md's
# section, and the server defaults the configured stall bound relies on.
# No sockets, no root. The formula's arithmetic: tests/py/test_capacity.py
# (tests/python.bats).

# bats file_tags=harness
load helpers
load_bats_libs

setup() {
    cd "$C1M_ROOT"
    CONTENDERS_REF=$(cut -d, -f1 results/reference/runs.csv | tail -n +2 | sort -u)
}

# fixture DIR: c at 2k (3 ok runs, one disturbed), pyext with a crashed run only.
fixture() {
    local d=$1 rep
    mkdir -p "$d"
    for rep in 1 2 3; do
        "$PYTHON" harness/lib/results.py row "$d" - contender=c tier=2000 repeat=$rep status=ok \
            accepted=2000 server_workers=2 server_rss_idle_kib=3072 kernel_bytes_per_conn=8$((rep - 1))00 \
            user_bytes_per_conn=200 slab_bytes_per_conn=10000
    done
    "$PYTHON" harness/lib/results.py row "$d" - contender=c tier=2000 repeat=4 status=disturbed \
        accepted=2000 kernel_bytes_per_conn=99999 user_bytes_per_conn=99999
    "$PYTHON" harness/lib/results.py row "$d" - contender=pyext tier=2000 repeat=1 status=crashed accepted=10
    printf '{"mem_total_kib": 1048576, "mem_available_at_start_kib": 917504}\n' > "$d/meta.json"
}

@test "make capacity on results/reference: the table, every contender at 0/1/10%, from its largest tier" {
    run make -s capacity PYTHON="$PYTHON" RUN=results/reference
    assert_success
    assert_line --regexp '^contender +stalled +8 GiB +24 GiB +64 GiB +256 GiB$'
    for c in $CONTENDERS_REF; do
        for s in 0 1 10; do
            assert_line --regexp "^$c +$s% +[0-9,]+ +[0-9,]+ +[0-9,]+ +[0-9,]+\$"
        done
        assert_line --regexp "^  $c: [0-9]+[km], median of [0-9]+ (ok|disturbed) runs?( †)?: kernel [0-9]+ B \\+ app [0-9]+ B per connection"
    done
    # the reference has no stall measurement: it says so and uses the bound, named as such
    assert_output --partial "no stall measurement in the run"
    assert_output --partial "configured bound, not a measurement"
}

@test "make capacity RUN MEM STALL: the formula with the numbers filled in, per contender" {
    run make -s capacity PYTHON="$PYTHON" RUN=results/reference MEM=64G STALL=0.01
    assert_success
    for c in $CONTENDERS_REF; do
        assert_line --regexp "^$c \\(figures: [0-9]+[km], median of [0-9]+ (ok|disturbed) runs?( †)?\\)\$"
    done
    [ "$(grep -cE '^  total ~= N x \([0-9]+ kernel \+ [0-9]+ app\) B \+ 1% x N x 12288 B backlog \+ [0-9]+ processes x [0-9]+ KiB idle \+ [0-9.]+ MiB machine$' <<<"$output")" -eq "$(wc -w <<<"$CONTENDERS_REF")" ]
    [ "$(grep -cE '^  N = [0-9,]+ connections fit \([0-9,]+ of them stalled\)$' <<<"$output")" -eq "$(wc -w <<<"$CONTENDERS_REF")" ]
    assert_line --regexp '^        = N x [0-9]+ B \+ [0-9.]+ (MiB|GiB)  <=  64 GiB$'
}

@test "harness/capacity on a tiny fixture: ok runs only, the largest tier, a contender without ok runs named" {
    fixture "$BATS_TEST_TMPDIR/fx"
    run harness/capacity "$BATS_TEST_TMPDIR/fx" --mem 1G
    assert_success
    # medians of the 3 ok runs (8000/8100/8200 -> 8100, halved: one socket), not the disturbed 99999
    # 1 GiB - 128 MiB reserve = 939,524,096 B: N = 177,000 takes 177,000 x 4250 + (1 + 177) MiB
    # = 938,896,528; one more needs a 179th process (1 MiB) and does not fit.
    assert_line "  total ~= N x (4050 kernel + 200 app) B + 0% x N x 0 B backlog + 178 processes x 1024 KiB idle + 128.0 MiB machine"
    assert_line "  N = 177,000 connections fit"
    assert_output --partial "pyext: no ok or disturbed run: not planned"
    run harness/capacity "$BATS_TEST_TMPDIR/fx" --contenders pyext
    assert_failure 1
    assert_output --partial "pyext: no ok or disturbed run"
}

@test "bad MEM or STALL: exit 2 naming the flag; make capacity without RUN: usage" {
    run make -s capacity PYTHON="$PYTHON"
    assert_failure 2
    assert_output --partial "usage: make capacity RUN=results/X"
    for m in 64 0G -8G 64X G 1e3G ""; do
        run harness/capacity results/reference --mem="$m"
        assert_failure 2
        assert_output --partial "capacity: --mem:"
    done
    # a value that looks like a flag: argparse's own message, still naming --mem
    run harness/capacity results/reference --mem -8G
    assert_failure 2
    assert_output --partial "argument --mem: expected one argument"
    for s in 1.5 -0.01 nan 101% x; do
        run harness/capacity results/reference --mem 8G --stall "$s"
        assert_failure 2
        assert_output --partial "capacity: --stall:"
    done
    run make -s capacity PYTHON="$PYTHON" RUN=results/reference MEM=64
    assert_failure
    assert_output --partial "--mem: expects a size with a unit"
    run harness/capacity results/reference --bogus
    assert_failure 2
}

@test "no data: a RUN without runs.csv, a contender with no runs: exit 1; a RUN that is no directory: exit 2, as make plot and make compare" {
    mkdir "$BATS_TEST_TMPDIR/empty"
    run harness/capacity "$BATS_TEST_TMPDIR/empty"
    assert_failure 1
    assert_output --partial "holds no runs.jsonl or runs.csv"
    run harness/capacity "$BATS_TEST_TMPDIR/nope" --mem 8G
    assert_failure 2
    assert_output --partial "is not a directory"
    run harness/capacity /dev/null
    assert_failure 2
    assert_output --partial "capacity: /dev/null is not a directory"
    run harness/capacity results/reference --contenders nosuch
    assert_failure 1
    assert_output --partial "nosuch: no runs"
    run harness/capacity --check "$BATS_TEST_TMPDIR/empty"
    assert_failure 1
    assert_output --partial "no usable prediction"
}

@test "--predict-guard: a prediction from usable memory now (MemAvailable less SReclaimable), the floor and the bench command" {
    run harness/capacity --predict-guard results/reference c --target-conns 30k --out "$BATS_TEST_TMPDIR/val"
    assert_success
    assert_line --regexp '^  usable memory now [0-9]+ MiB \(MemAvailable less SReclaimable\), guard floor MIN_AVAILABLE_MIB=[0-9]+: '
    assert_line --partial "the whole Slab delta, reclaimable caches included"
    assert_line --regexp '^  predicted: the guard stops c at (29|30),[0-9]{3} connections$'
    assert_line --regexp '^    make bench TIERS=4[0-9]k CONTENDERS=c MIN_AVAILABLE_MIB=[0-9]+ MEM_GUARD_MIB=1048576 '
    [ -s "$BATS_TEST_TMPDIR/val/capacity-prediction.json" ]
    run harness/capacity --check "$BATS_TEST_TMPDIR/val"
    assert_failure 1
    assert_output --partial "holds no runs"
    run harness/capacity --predict-guard results/reference
    assert_failure 2
}

@test "report.md of a copy of results/reference has the capacity table" {
    cp -r results/reference "$BATS_TEST_TMPDIR/ref"
    run "$PYTHON" harness/lib/results.py report "$BATS_TEST_TMPDIR/ref"
    assert_success
    grep -q '^## Capacity: connections that fit' "$BATS_TEST_TMPDIR/ref/report.md"
    grep -q '^| contender | stalled | 8 GiB | 24 GiB | 64 GiB | 256 GiB |$' "$BATS_TEST_TMPDIR/ref/report.md"
    grep -qE '^\| c \| 10% \| [0-9,]+ \|' "$BATS_TEST_TMPDIR/ref/report.md"
    run git status --porcelain -- results/reference
    assert_output ""
}

# The configured stall bound uses the servers' default --sndbuf/--max-pending
# when a run's server command sets none: both servers must still say 4096.
@test "the servers' --help defaults are the planner's SERVER_DEFAULT_SNDBUF/MAX_PENDING" {
    [ -x "$SERVER" ] || skip "no $SERVER (make build)"
    want=$("$PYTHON" -c 'import sys; sys.path.insert(0, "harness/lib"); import capacity_model as c; print("sndbuf=%d max-pending=%d" % (c.SERVER_DEFAULT_SNDBUF, c.SERVER_DEFAULT_MAX_PENDING))')
    defaults() { tr -s ' \n' '  ' | grep -oE -- '--(sndbuf|max-pending) B [^(]*\(default [0-9]+' \
        | sed -E 's/^--([a-z-]+) .*default ([0-9]+)$/\1=\2/' | sort -r | tr '\n' ' ' | sed 's/ $//'; }
    run bash -c "\"$SERVER\" --help 2>&1"
    [ "$(defaults <<<"$output")" = "$want" ]
    run bash -c "cd '$C1M_ROOT' && \"$PYTHON\" -m py_server --help 2>&1"
    [ "$(defaults <<<"$output")" = "$want" ]
}
