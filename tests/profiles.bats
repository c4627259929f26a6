#!/usr/bin/env bats
# Kernel profiles (harness/lib/profiles.sh, issue 9 section 1): PROFILE=stock,tuned
# at 2k (the stock run records the same keys with a fresh namespace's values;
# every new per-run counter column present and sane; the before/after table and
# plots), the ablation (one row per key that differs from stock, with a small
# tuned profile: C1M_PROFILE_FILE), the real `ablate` expansion against a fresh
# namespace, and bad profiles refused with exit 2 naming the key, the host's
# sysctls untouched and nothing created. Root needed (namespaces); the runs skip
# the quiet gate and the disturbance status (QUIET, tests/helpers.bash), as tests/harness.bats does.

# Parallel group (tests/run.sh): it judges no time, CPU or machine-wide figure
# and sets no machine-wide setting, its runs keep their state in the file's own
# C1M_STATE_ROOT (tests/helpers.bash): it runs beside another file.

# bats file_tags=harness
load helpers
load_bats_libs

# bench OUT LOG VAR=value...: a 2k suite of c, the client in several workers. The
# server keeps its own per-worker cap: under stock (tcp_migrate_req 0) a worker
# that closes its full listener resets the connections still queued there, and
# the run would (rightly) fail: a finding for the benchmark, not for this test.
# smallest: no calibration (CALIBRATE=0) and no memory settling (bench_sh:
# MEM_SETTLE=0, SETTLE_MAX=0): nothing here reads them.
bench() { bench_sh "$1" CALIBRATE=0 CONTENDERS=c HOLD=1 TIMEOUT=120 CLIENT_WORKER_CONNS=800 "${@:3}" > "$2" 2>&1; }

setup_file() {
    export RUN_DIR=$BATS_FILE_TMPDIR/run
    [ "$(id -u)" = 0 ] || return 0
    bench "$RUN_DIR" "$BATS_FILE_TMPDIR/bench.out" PROFILE=stock,tuned
    echo $? > "$BATS_FILE_TMPDIR/bench.rc"
}

need_suite() {
    need_root
    [ "$(cat "$BATS_FILE_TMPDIR/bench.rc" 2>/dev/null)" = 0 ] \
        || fail "the shared suite failed: $(cat "$BATS_FILE_TMPDIR/bench.out")"
}

# The tuned profile's keys (tuned_keys) as "key=value" lines, read in a fresh namespace made
# here (the test's own view of "stock"), or on the host (this shell's namespace).
read_keys() {      # read_keys [NS]: every tuned key (and fs.file-max on the host)
    local k
    for k in $(tuned_keys); do
        if [ -n "${1:-}" ]; then echo "$k=$(ip netns exec "$1" sysctl -n "$k" | tr -s ' \t' ' ')"
        else echo "$k=$(sysctl -n "$k" | tr -s ' \t' ' ')"; fi
    done
    [ -n "${1:-}" ] || echo "fs.file-max=$(sysctl -n fs.file-max)"
}
# fresh_values: read_keys in a namespace of its own, deleted before it prints (a
# reader that stops early, grep -q, must not leave it behind).
fresh_values() {
    local ns=c1mt-$$-fresh-$RANDOM vals
    ip netns add "$ns" || return 1
    vals=$(read_keys "$ns")
    ip netns del "$ns"
    printf '%s\n' "$vals"
}
# no_run_namespace: no benchmark namespace (c1m-PID-N) whose PID is gone: what a
# bench.sh or its throwaway-namespace subshell that ended would have left.
no_run_namespace() {
    local ns p
    for ns in $(ip netns list | awk '{print $1}' | grep -E '^c1m-[0-9]+-[0-9]+$'); do
        p=${ns#c1m-} p=${p%-*}
        # still there after its owner is gone: listed, then deleted by an owner
        # that ended in between (other tests' runs share the machine) is no leftover
        kill -0 "$p" 2>/dev/null || [ ! -e "/run/netns/$ns" ] || return 1
    done
    return 0
}

@test "PROFILE=stock,tuned: both runs hold all N, each its own condition and run directory" {
    need_suite
    run "$PYTHON" - "$RUN_DIR/runs.csv" "$BATS_TEST_DIRNAME/py" <<'PY'
import csv, sys
sys.path.insert(0, sys.argv[2])
from profiles_check import held
rows = list(csv.DictReader(open(sys.argv[1])))
got = sorted((r["profile"], r["condition"], held(r), r["run_dir"]) for r in rows)
assert got == [("stock", "stock", True, "runs/c-2k-stock-1"), ("tuned", "", True, "runs/c-2k-1")], got
print("ok")
PY
    assert_success
}

@test "a stock run records its sysctls like tuned: the same keys, a fresh namespace's values" {
    need_suite
    expected=$(fresh_values)
    run diff <(echo "$expected") "$RUN_DIR/runs/c-2k-stock-1/sysctl.txt"
    assert_success
    run diff <(tuned_keys) <(cut -d= -f1 "$RUN_DIR/runs/c-2k-1/sysctl.txt")
    assert_success
    grep -qx "net.core.somaxconn=65535" "$RUN_DIR/runs/c-2k-1/sysctl.txt"
    run "$PYTHON" - "$RUN_DIR/meta.json" "$RUN_DIR/runs/c-2k-stock-1/sysctl.txt" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
stock = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[2]))
assert m["sysctl_profiles"]["stock"] == stock, m["sysctl_profiles"]
assert m["sysctl_profile"] == m["sysctl_profiles"]["tuned"]
assert m["sysctl_profile"]["net.core.somaxconn"] == "65535"
assert m["sysctl_profile_identical"] is True and m["settings"]["profiles"] == "stock,tuned", m["settings"]
print("ok")
PY
    assert_success
}

@test "the counter columns: documented, present in every run, sane" {
    need_suite
    run "$PYTHON" - "$RUN_DIR" "$C1M_ROOT/harness/README.md" <<'PY'
import csv, os, re, sys
run, readme = sys.argv[1], sys.argv[2]
text = open(readme).read().split("## runs.csv columns", 1)[1]
documented = set(re.findall(r"^\| `([a-z0-9_]+)` \|", text, re.M))
new = ["listen_overflows", "listen_drops", "reqq_full_drop", "reqq_full_cookies", "syncookies_sent",
       "syn_retrans", "acceptq_max", "acceptq_sum_max", "acceptq_backlog", "acceptq_full",
       "acceptq_samples", "acceptq_listeners", "connect_timeouts"]
assert not (set(new) | {"acceptq_max_per_listener"}) - documented, set(new) - documented
for r in csv.DictReader(open(os.path.join(run, "runs.csv"))):
    n = {k: int(r[k]) for k in new}          # every one a count (a missing one raises)
    assert all(v >= 0 for v in n.values()), n
    sysctl = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(run, r["run_dir"], "sysctl.txt")))
    # the listeners' queue limit is min(their backlog 65535, net.core.somaxconn)
    assert n["acceptq_backlog"] == min(65535, int(sysctl["net.core.somaxconn"])), (n, sysctl)
    # (the kernel lets a queue reach its limit + 1: sk_acceptq_is_full is queued > limit)
    assert n["acceptq_max"] <= n["acceptq_backlog"] + 1 and n["acceptq_max"] <= n["acceptq_sum_max"] <= 2000, n
    per = [int(x) for x in r["acceptq_max_per_listener"].split(";")]
    assert max(per) == n["acceptq_max"] and len(per) == n["acceptq_listeners"], (per, n)
    assert n["acceptq_samples"] >= 1 and 1 <= n["acceptq_listeners"] <= int(r["server_workers"]), (n, r["server_workers"])
    # ListenDrops counts every accept-queue overflow too
    assert n["listen_drops"] >= n["listen_overflows"], n
    # an ok run: every connect succeeded
    assert n["connect_timeouts"] == 0 and int(r["client_failed"]) == 0, r["client_failures"]
    # the samples behind the high-water mark are kept with the run
    head = open(os.path.join(run, r["run_dir"], "acceptq.csv")).readline().strip()
    assert head == "unix_ms,listener,port,queued,backlog", head
print("ok")
PY
    assert_success
}

@test "report.md: the before/after table in the seeds' form; the profile plots" {
    need_suite
    need_gnuplot() { command -v gnuplot >/dev/null || skip "needs gnuplot"; }
    need_gnuplot
    grep -q "^## What tuning buys: stock vs tuned kernel profile" "$RUN_DIR/report.md"
    grep -q "^| metric | better | stock | tuned | tuned/stock |" "$RUN_DIR/report.md"
    grep -q "^| \`net.core.somaxconn\` | [0-9]* | 65535 |" "$RUN_DIR/report.md"
    # (a run the machine's slab noise made suspect still measured the profile: marked)
    grep -Eq "^\| time to connect, s \| lower \| [0-9.]+(‡)? \| [0-9.]+(‡)? \| [0-9.]+ \|" "$RUN_DIR/report.md"
    grep -Eq "^\| c \| 2k \| stock \| (ok|suspect) \|" "$RUN_DIR/report.md"   # the summary's condition column
    for p in profile_t_connect profile_drops t_connect ramp; do
        [ -s "$RUN_DIR/plots/$p.png" ] && [ -s "$RUN_DIR/plots/$p.svg" ] || fail "no $p plot"
    done
    grep -q "(plots/profile_t_connect.png)" "$RUN_DIR/report.md"
    # the stock series, titled so (the tier plots draw ok runs only)
    if grep -q "^c,2000,2k,1,ok,.*,stock," "$RUN_DIR/runs.csv"; then
        grep -q "c stock" "$RUN_DIR/plots/t_connect.svg"
    fi
}

@test "ablate expands to tuned-KEY for every key of tuned whose value differs from a fresh namespace's, then stock and tuned" {
    need_root
    expected=$(join -t= <(sort <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$C1M_ROOT/harness/kernel-profile.conf" \
                   | awk -F= '{k = $1; gsub(/[ \t]/, "", k); v = $2; gsub(/^[ \t]+|[ \t]+$/, "", v); gsub(/[ \t]+/, " ", v); print k "=" v}')) \
               <(sort <(fresh_values)) | awk -F= '$2 != $3 {print $1}')
    [ -n "$expected" ] || fail "no key of the tuned profile differs from stock here?"
    run bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/profiles.sh"; profiles_expand ablate' _ "$C1M_ROOT"
    assert_success
    got=$(head -n -2 <<<"$output" | sed 's/^tuned-//' | sort)
    [ "$got" = "$(sort <<<"$expected")" ] || fail "ablate: $(echo "$output" | tr '\n' ' ') expected keys: $(echo $expected)"
    [ "$(tail -n 2 <<<"$output" | tr '\n' ' ')" = "stock tuned " ]
    no_run_namespace || fail "the throwaway namespace was left: $(ip netns list)"
}

@test "PROFILE=ablate with a small tuned profile: one row per key that differs from stock, plus stock and tuned" {
    need_root
    small=$BATS_TEST_TMPDIR/small.conf
    # somaxconn and fin_timeout differ from stock; syncookies=1 is stock's own value
    printf '%s\n' "net.core.somaxconn = 65535" "net.ipv4.tcp_syncookies = 1 # as stock" \
        "net.ipv4.tcp_fin_timeout = 15" > "$small"
    grep -qx "net.ipv4.tcp_syncookies=1" <<<"$(fresh_values)" || skip "stock tcp_syncookies is not 1 on this kernel"
    out=$BATS_TEST_TMPDIR/ablate
    bench "$out" "$out.log" PROFILE=ablate C1M_PROFILE_FILE="$small" HOLD=0 || fail "bench.sh: $(cat "$out.log")"
    run "$PYTHON" - "$out/runs.csv" "$BATS_TEST_DIRNAME/py" <<'PY'
import csv, sys
sys.path.insert(0, sys.argv[2])
from profiles_check import held
rows = list(csv.DictReader(open(sys.argv[1])))
got = [(r["profile"], held(r)) for r in rows]
assert got == [("tuned-net.core.somaxconn", True), ("tuned-net.ipv4.tcp_fin_timeout", True),
               ("stock", True), ("tuned", True)], got
print("ok")
PY
    assert_success
    # each ablated run has its key at stock, the other keys tuned
    grep -qx "net.ipv4.tcp_fin_timeout=15" "$out/runs/c-2k-tuned-net.core.somaxconn-1/sysctl.txt"
    ! grep -qx "net.core.somaxconn=65535" "$out/runs/c-2k-tuned-net.core.somaxconn-1/sysctl.txt"
    grep -q "^## One setting at a time" "$out/report.md"
    grep -q "^| \`net.core.somaxconn\` | 65535 | " "$out/report.md"
    grep -q "^| \`net.ipv4.tcp_fin_timeout\` | 15 | " "$out/report.md"
    ! grep -q "^| \`net.ipv4.tcp_syncookies\`" "$out/report.md"
    if command -v gnuplot >/dev/null; then
        [ -s "$out/plots/profile_ablation.png" ] && [ -s "$out/plots/profile_ablation.svg" ] || fail "no ablation plot"
    fi
}

@test "bad profiles: exit 2 naming the key, nothing created, the host's sysctls unchanged" {
    need_root
    before=$(read_keys)
    out=$BATS_TEST_TMPDIR/bad
    d=$BATS_TEST_TMPDIR
    check() {     # check EXPECTED-TEXT PROFILE
        run env -C "$C1M_ROOT" "${QUIET[@]}" TIERS=2k CONTENDERS=c OUT="$out" PYTHON="$PYTHON" \
            BUILD="$C1M_BUILD" PROFILE="$2" harness/bench.sh
        [ "$status" = 2 ] || fail "PROFILE=$2: exit $status, not 2: $output"
        assert_output --partial "PROFILE: "
        assert_output --partial "$1"
        [ ! -e "$out" ] || fail "PROFILE=$2: created $out"
        no_run_namespace || fail "PROFILE=$2: a namespace was left: $(ip netns list)"
    }
    check "unknown profile 'bogus'" tuned,bogus
    check "set but empty" ""
    check "tuned-net.core.nope: net.core.nope is not a key of the tuned profile" tuned-net.core.nope
    printf 'fs.file-max = 123\n' > "$d/host.conf"
    check "fs.file-max: not a network-namespace setting" "$d/host.conf"
    printf 'net.core.somaxconn = 1000\nnet.ipv4.tcp_no_such_key = 1\n' > "$d/missing.conf"
    check "net.ipv4.tcp_no_such_key: this kernel has no such setting" "stock,$d/missing.conf"
    printf 'net.core.somaxconn = lots\n' > "$d/value.conf"
    check "net.core.somaxconn = lots: the kernel refused this value" "$d/value.conf"
    printf 'net.core.somaxconn 1000\n' > "$d/syntax.conf"
    check "syntax.conf line 1: expects 'key = value'" "$d/syntax.conf"
    printf 'net.core.somaxconn = 1\nnet.core.somaxconn = 2\n' > "$d/twice.conf"
    check "net.core.somaxconn is set twice" "$d/twice.conf"
    check "not a readable file" "$d/absent/x.conf"
    # a net.* key the host has but a namespace does not (global on this kernel), if any
    local ns=c1mt-$$-global k global=""
    ip netns add "$ns"
    for k in net.core.netdev_max_backlog net.core.message_cost net.ipv4.tcp_mem net.ipv4.udp_mem; do
        [ -e "/proc/sys/${k//.//}" ] && ! ip netns exec "$ns" test -e "/proc/sys/${k//.//}" && { global=$k; break; }
    done
    ip netns del "$ns"
    if [ -n "$global" ]; then
        printf '%s = %s\n' "$global" "$(sysctl -n "$global")" > "$d/global.conf"
        check "$global: not a per-namespace setting on this kernel" "$d/global.conf"
    fi
    [ "$(read_keys)" = "$before" ] || fail "host sysctls changed: $(diff <(echo "$before") <(read_keys))"
}

@test "sendq-probe checks its profile as every run does: a key outside a namespace exits 2 naming it, the host untouched" {
    need_root
    local was d=$BATS_TEST_TMPDIR
    was=$(sysctl -n vm.swappiness)
    printf 'net.core.somaxconn = 1000\nvm.swappiness = %s\n' "$(( was == 61 ? 62 : 61 ))" > "$d/host.conf"
    run env C1M_PROFILE_FILE="$d/host.conf" "$C1M_ROOT/harness/sendq-probe" --conns 2 --rcvbuf 0 --sndbuf 0
    # (the old probe wrote it to the host and kept it: put back before judging)
    [ "$(sysctl -n vm.swappiness)" = "$was" ] || { sysctl -q -w vm.swappiness="$was"; fail "the host's vm.swappiness was changed"; }
    [ "$status" = 2 ] || fail "exit $status, not 2: $output"
    assert_output --partial "vm.swappiness: not a network-namespace setting"
    printf 'net.ipv4.tcp_no_such_key = 1\n' > "$d/missing.conf"
    run env C1M_PROFILE_FILE="$d/missing.conf" "$C1M_ROOT/harness/sendq-probe" --conns 2
    [ "$status" = 2 ] || fail "exit $status, not 2: $output"
    assert_output --partial "net.ipv4.tcp_no_such_key: this kernel has no such setting"
}

# leak_script BODY: a bash script that sources the harness libraries with
# `sysctl` and `ip` replaced by functions faking a kernel whose "namespace"
# key is global: the host's value lives in $HOST, and a write inside the
# namespace changes it (a leak). $HOST.refuse makes the host refuse writes
# (set by the namespace write when REFUSE_RESTORE=1); KILL=1 sends the script
# SIGTERM right after the leaking write, before its check. Then BODY runs.
leak_script() {
    cat <<EOF
source "$C1M_ROOT/harness/lib/common.sh"
source "$C1M_ROOT/harness/lib/orphans.sh"
source "$C1M_ROOT/harness/lib/netns.sh"
HOST=$BATS_TEST_TMPDIR/host
sysctl() {
    case \$1 in
        -n) cat "\$HOST" ;;
        -q) [ -e "\$HOST.refuse" ] && return 1; printf '%s\n' "\${3#*=}" > "\$HOST" ;;
    esac
}
ip() {
    [ "\$1 \$2" = "netns exec" ] || return 0          # add, del, link set lo up
    shift 3
    case \$1 in
        test) return 0 ;;
        sysctl) printf '%s\n' "\${4#*=}" > "\$HOST"
                [ "\${REFUSE_RESTORE:-}" = 1 ] && : > "\$HOST.refuse"
                [ "\${KILL:-}" = 1 ] && kill -TERM \$BASHPID
                return 0 ;;
    esac
}
printf 'net.core.somaxconn = 4096\n' > "$BATS_TEST_TMPDIR/leak.conf"
echo 128 > "\$HOST"
$1
EOF
}

@test "a profile write that leaks to the host: the host's value put back (checked), the key refused" {
    run bash -c "$(leak_script 'profile_apply c1mt-fake "$BATS_TEST_TMPDIR/leak.conf"; echo "rc=$? err=$PROFILE_ERR pending=${#_PROFILE_PENDING[@]}"')"
    assert_output --partial "rc=1 err=net.core.somaxconn: not per-namespace on this kernel (setting it changed the host; restored to 128) pending=0"
    [ "$(cat "$BATS_TEST_TMPDIR/host")" = 128 ] || fail "host left at $(cat "$BATS_TEST_TMPDIR/host")"
    # a restore the host refuses is said, not reported as done
    rm -f "$BATS_TEST_TMPDIR/host.refuse"
    run env REFUSE_RESTORE=1 bash -c "$(leak_script 'profile_apply c1mt-fake "$BATS_TEST_TMPDIR/leak.conf"; echo "rc=$? err=$PROFILE_ERR"')"
    assert_output --partial "rc=1 err=net.core.somaxconn: not per-namespace on this kernel (setting it changed the host to 4096; could NOT restore 128: host now 4096)"
    refute_output --partial "restored to"
}

@test "a signal between a leaking write and its check: run_one's cleanup puts the host's value back" {
    run env KILL=1 RUN_PROFILE="$BATS_TEST_TMPDIR/leak.conf" bash -c "$(leak_script 'netns_create c1mt-fake; echo "not reached"')"
    [ "$status" = 130 ] || fail "exit $status: $output"
    refute_output --partial "not reached"
    # (what the cleanup says is not checked: the fake's kill runs the trap inside
    # the write's own redirection to /dev/null)
    [ "$(cat "$BATS_TEST_TMPDIR/host")" = 128 ] || fail "host left at $(cat "$BATS_TEST_TMPDIR/host"): $output"
}

@test "PROFILE splits on commas only: a FILE whose path holds a space, items trimmed" {
    need_root
    d="$BATS_TEST_TMPDIR/my profiles"
    mkdir -p "$d"
    printf 'net.core.somaxconn = 4096\n' > "$d/mine.conf"
    run bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/profiles.sh"; profiles_expand "$2"' \
        _ "$C1M_ROOT" " stock ,$d/mine.conf , tuned,"
    assert_success
    assert_output "stock
$d/mine.conf
tuned"
    no_run_namespace || fail "a namespace was left: $(ip netns list)"
}

@test "one parser for a profile line: profile_pairs and profile_file_check read it alike, one normaliser" {
    printf '# a comment\n  net.ipv4.tcp_rmem =\t4096   131072\t6291456  # why\n\nnet.core.somaxconn=1024' > "$BATS_TEST_TMPDIR/p.conf"
    run bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/profiles.sh"
        profile_file_check "$2" && profile_pairs "$2"; norm "$(printf " a\t\tb \n c ")"' _ "$C1M_ROOT" "$BATS_TEST_TMPDIR/p.conf"
    assert_success
    assert_output "net.ipv4.tcp_rmem=4096 131072 6291456
net.core.somaxconn=1024
a b c"
    printf 'net.core.somaxconn = 1\nnet.core.somaxconn 2\n' > "$BATS_TEST_TMPDIR/q.conf"
    run bash -c 'source "$1/harness/lib/common.sh"; source "$1/harness/lib/profiles.sh"; profile_file_check "$2"' \
        _ "$C1M_ROOT" "$BATS_TEST_TMPDIR/q.conf"
    assert_failure
    assert_output "$BATS_TEST_TMPDIR/q.conf line 2: expects 'key = value': net.core.somaxconn 2"
}

@test "run_one.sh --profile: an unknown profile or a bad key exits 2 naming it, before anything is created" {
    out=$BATS_TEST_TMPDIR/bad-run
    state=$BATS_TEST_TMPDIR/state
    printf 'fs.file-max = 123\n' > "$BATS_TEST_TMPDIR/host.conf"
    for args in "bogus|unknown profile 'bogus'" "ablate|ablate is a list of profiles" \
                "$BATS_TEST_TMPDIR/host.conf|fs.file-max: not a network-namespace setting"; do
        run timeout 20 env PYTHON="$PYTHON" BUILD="$C1M_BUILD" C1M_STATE_ROOT="$state" \
            "$C1M_ROOT/harness/run_one.sh" --contender c --conns 2k --out "$out" --profile "${args%%|*}"
        [ "$status" = 2 ] || fail "--profile ${args%%|*}: exit $status, not 2: $output"
        assert_output --partial "--profile: ${args#*|}"
        [ ! -e "$out" ] && [ ! -e "$state" ] || fail "--profile ${args%%|*}: created something"
    done
}
