#!/usr/bin/env bats
# The C programs' shared option parser (c_server/lib/cli.c) on command lines it
# refuses before opening anything: no root, no namespace (make check). What
# needs a listening socket (--flag=value end to end, a port in use, the
# resolver, --port LO-HI listening) is in tests/cli.bats.

load ../helpers
load_bats_libs

setup() {
    STATS=$BATS_TEST_TMPDIR/server.stats
    PORT=9000
}

@test "numbers are strict: spaces, signs, garbage, other bases and overflow exit 2 naming the flag" {
    # c1m-server: 192.0.2.1 is not local, so a wrongly accepted value ends in
    # "cannot listen" (exit 1) instead of a server that runs.
    local s=(--host 192.0.2.1 --stats "$BATS_TEST_TMPDIR/never.stats")
    usage_case "$SERVER" --port "${s[@]}" --port " 80"
    usage_case "$SERVER" --port "${s[@]}" --port "80 "
    usage_case "$SERVER" --port "${s[@]}" --port +80
    usage_case "$SERVER" --port "${s[@]}" --port=0x50
    # port 0: the kernel's choice was reported nowhere and moved when the
    # listener re-opened after the fd-cap back-off
    usage_case "$SERVER" --port "${s[@]}" --port 0 --workers 1
    # --workers auto is bounded like --workers (it used to fork 5,000+ processes)
    usage_case "$SERVER" --max-conns "${s[@]}" --max-conns 100m
    usage_case "$SERVER" --max-conns "${s[@]}" --max-conns 1m --worker-conns 200
    usage_case "$SERVER" --workers "${s[@]}" --workers 99999999999999999999999
    usage_case "$SERVER" --max-conns "${s[@]}" --max-conns 9223372036854775807k
    usage_case "$SERVER" --backlog "${s[@]}" --backlog 1kk
    usage_case "$SERVER" --sndbuf "${s[@]}" --sndbuf 1e3
    # c1m-client: nothing listens on port 9, so a wrongly accepted value exits 1
    usage_case "$CLIENT" --connections --connections " 10" --port 9
    usage_case "$CLIENT" --port --connections 10 --port +9
    usage_case "$CLIENT" --inflight --connections 10 --port 9 --inflight 10x
    usage_case "$CLIENT" --hold --connections 10 --port 9 --hold " 1"
    usage_case "$CLIENT" --hold --connections 10 --port 9 --hold nan
    # a negative zero is neither zero (no hold) nor negative (until a signal):
    # --hold -0 was read as no hold
    usage_case "$CLIENT" --hold --connections 10 --port 9 --hold -0
    usage_case "$CLIENT" --hold --connections 10 --port 9 --hold=-0.0
    usage_case "$CLIENT" --hold --connections 10 --port 9 --hold -.000
    usage_case "$CLIENT" --connect-timeout --connections 10 --port 9 --connect-timeout 0x1p3
    usage_case "$CLIENT" --heartbeat --connections 10 --port 9 --heartbeat 1e1
    # c1m-stat
    usage_case "$STAT" --timeout --timeout " 5" "$STATS"
    usage_case "$STAT" --watch --watch -1 "$STATS"
    usage_case "$STAT" --wait --wait "open= 5" "$STATS"
    usage_case "$STAT" --count --count 18446744073709551617 --watch 1 "$STATS"
}

@test "--host of 64 bytes or more is a usage error at parse time" {
    local long
    long=$(printf 'h%.0s' {1..64})
    usage_case "$SERVER" --host --host "$long" --port "$PORT" --stats "$BATS_TEST_TMPDIR/never.stats"
    usage_case "$CLIENT" --host --connections 10 --host "$long"
    [ ! -e "$BATS_TEST_TMPDIR/never.stats" ]
}

@test "c1m-stat: one output or wait per run, --count only with --watch (none silently ignored)" {
    # a valid file, so that a wrongly accepted command line exits 0
    local f=$C1M_ROOT/fuzz/corpus/stats/valid-3-workers
    run "$STAT" --total "$f"
    assert_success
    usage_case "$STAT" --csv --json --csv "$f"
    usage_case "$STAT" --json --get open --json "$f"
    usage_case "$STAT" --total --csv --total "$f"
    usage_case "$STAT" --wait --get open --wait open=0 "$f"
    usage_case "$STAT" --wait --wait-ready --wait open=0 "$f"
    usage_case "$STAT" --count --count 2 "$f"
    usage_case "$STAT" --watch --wait open=0 --watch 10 "$f"
    # a flag's second value would replace the first (the wait for open=5 went unchecked)
    usage_case "$STAT" "--wait: given twice" --wait open=5 --wait closed=0 --timeout 1 "$f"
    usage_case "$STAT" "--get: given twice" --get open --get pongs "$f"
    usage_case "$STAT" "--timeout: given twice" --wait open=0 --timeout 1 --timeout 2 "$f"
    usage_case "$STAT" "--watch: given twice" --watch 10 --watch 20 --count 1 "$f"
}

@test "--port LO-HI: bad ranges and too few workers exit 2 naming the flag (C programs and py_server)" {
    for prog in "$SERVER" "$C1M_BUILD/c1m-floor" "$CLIENT --connections 1"; do
        for p in 9001-9000 0-3 9000- -9000 9000-70000 1-1025 9000-90x; do
            # shellcheck disable=SC2086
            usage_case $prog --port --port "$p"
        done
    done
    usage_case "$SERVER" --workers --port 9000-9003 --workers 3
    usage_case "$SERVER" --workers --port 9000-9003 --workers 6
    for p in 9001-9000 1-1025; do
        run "$PYTHON" -m py_server --loop asyncio --api protocol --port "$p"
        assert_failure 2
        assert_output --partial "argument --port"
    done
    run "$PYTHON" -m py_server --loop asyncio --api protocol --port 9000-9003 --workers 6
    assert_failure 2
    assert_output --partial "6 workers over 4 ports: a multiple of 4"
}
