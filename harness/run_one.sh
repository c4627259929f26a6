#!/usr/bin/env bash
# run_one.sh - one contender at one tier, in a fresh network namespace.
#
# Starts the server, records its idle baseline, starts the C client, and times
# the ramp until the *server* has accepted all N (its own counters, polled every
# 10 ms: a slow server's kernel completes handshakes long before it accepts).
# Then holds with heartbeats to measure idle CPU, stops everything and deletes
# the namespace (teardown is outside the timed region). Writes OUT/result.env,
# OUT/ramp.csv, OUT/sysctl.txt, OUT/client.json, OUT/netns (the namespace's
# name, for a caller's last-resort cleanup) and logs. harness/README.md lists
# the result.env keys.
#
# Exit: 0 the run completed (whatever it measured), 1 harness error, 2 usage.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$C1M_ROOT/harness/lib/netns.sh"
source "$C1M_ROOT/harness/lib/probe.sh"

usage() {
    cat >&2 <<'USAGE'
usage: run_one.sh --contender NAME --conns N --out DIR [--hold S] [--heartbeat S]
                  [--timeout S] [--port P] [--server-worker-conns N]
                  [--client-worker-conns N] [--min-available MiB] [--quiet]
  NAME: c | pyext | asyncio-protocol | asyncio-streams | uvloop
USAGE
    exit 2
}

contender="" conns="" out="" hold=10 heartbeat=5 timeout=600 port=9000
swc="" cwc="" min_avail=1024 quiet=0
while [ $# -gt 0 ]; do
    case "$1" in
        --contender) contender=${2:-}; shift 2 ;;
        --conns) conns=$(tier_count "${2:-}") || { log "--conns: not a count: ${2:-}"; usage; }; shift 2 ;;
        --out) out=${2:-}; shift 2 ;;
        --hold) hold=${2:-}; shift 2 ;;
        --heartbeat) heartbeat=${2:-}; shift 2 ;;
        --timeout) timeout=${2:-}; shift 2 ;;
        --port) port=${2:-}; shift 2 ;;
        --server-worker-conns) swc=${2:-}; shift 2 ;;
        --client-worker-conns) cwc=${2:-}; shift 2 ;;
        --min-available) min_avail=${2:-}; shift 2 ;;
        --quiet) quiet=1; shift ;;
        -h|--help) usage ;;
        *) log "unknown flag: $1"; usage ;;
    esac
done
[ -n "$contender" ] && [ -n "$conns" ] && [ -n "$out" ] || usage
for v in hold heartbeat timeout port min_avail; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { log "--${v//_/-}: expects a whole number: ${!v}"; usage; }
done
require_root run_one.sh
[ -x "$BUILD/c1m-server" ] && [ -x "$BUILD/c1m-client" ] && [ -x "$BUILD/c1m-stat" ] \
    || die "binaries missing in $BUILD: run 'make build' first"
mkdir -p "$out" || die "cannot create $out"

server_cmd() {
    local common=(--host 0.0.0.0 --port "$port" --max-conns "$conns" --stats "$stats" --quiet)
    [ -n "$swc" ] && common+=(--worker-conns "$swc")
    case "$contender" in
        c) echo "$BUILD/c1m-server ${common[*]}" ;;
        asyncio-streams) echo "$PYTHON -m py_server --loop asyncio --api streams ${common[*]}" ;;
        asyncio-protocol) echo "$PYTHON -m py_server --loop asyncio --api protocol ${common[*]}" ;;
        uvloop) echo "$PYTHON -m py_server --loop uvloop --api protocol ${common[*]}" ;;
        pyext) echo "$PYTHON -m py_server --loop c1m --api protocol ${common[*]}" ;;
        *) log "unknown contender: $contender"; usage ;;
    esac
}

declare -A R=([contender]=$contender [target]=$conns [status]=failed [accepted]=0
             [hold_s]=$hold [heartbeat_s]=$heartbeat [timeout_s]=$timeout [min_available_mib]=$min_avail)
write_result() {
    local k
    for k in "${!R[@]}"; do printf '%s=%s\n' "$k" "${R[$k]//$'\n'/ }"; done | sort > "$out/result.env"
}
on_exit write_result
# A stop signal marks the run interrupted; the cleanup stack then ends the
# client and server, deletes the namespace and writes result.env.
trap 'R[status]=interrupted; R[note]="interrupted by a signal"; _c1m_on_signal' INT TERM

ns=c1m-$$-$RANDOM
stats=/dev/shm/c1m-run-$$.stats
on_exit "rm -f $stats"
need_files=$((conns * 2 + 200000))
ensure_at_least fs.file-max "$need_files"
netns_create "$ns"
R[netns]=$ns
echo "$ns" > "$out/netns"
netns_applied "$ns" > "$out/sysctl.txt"

cmd=$(server_cmd)
R[server_cmd]=$cmd
( cd "$C1M_ROOT" && export PYTHONPATH="$C1M_ROOT:$BUILD/pyext" && exec ip netns exec "$ns" $cmd ) \
    > "$out/server.log" 2>&1 &
spid=$!
on_exit "stop_pid $spid 120"

if ! "$BUILD/c1m-stat" --wait-ready --timeout 60 "$stats" > /dev/null 2>&1; then
    if ! kill -0 "$spid" 2>/dev/null; then
        wait "$spid"; rc=$?
        [ "$rc" = 3 ] && R[status]=unavailable || R[status]=crashed
    else
        R[status]=failed
    fi
    R[note]="server did not become ready: $(tail -n 1 "$out/server.log" | tr -d '\n=' | cut -c1-160)"
    log "$contender: ${R[note]}"
    exit 0
fi
sleep 1   # let the workers settle before the baseline
pids=$(server_pids "$stats" "$spid")
R[server_workers]=$(( $(wc -w <<<"$pids") - 1 ))
read -r idle_anon idle_pss <<<"$(rss_kib $pids)"
read -r sock0 slab0 <<<"$(slab_kib)"
R[server_rss_idle_kib]=$idle_anon
R[server_pss_idle_kib]=$idle_pss

"$BUILD/c1m-stat" --csv --watch 100 "$stats" > "$out/ramp.csv" 2>/dev/null &
rpid=$!
on_exit "stop_pid $rpid 5"

client=("$BUILD/c1m-client" --connections "$conns" --host 127.0.0.1 --port "$port" --hold inf
        --heartbeat "$heartbeat" --min-available "$min_avail" --json "$out/client.json" --quiet)
[ -n "$cwc" ] && client+=(--worker-conns "$cwc")
cpu0=$(cpu_ticks $pids)
read -r mb0 mt0 <<<"$(machine_cpu)"
t0=$(now_s)
R[client_start_unix_ms]=$(awk -v t="$t0" 'BEGIN{printf "%.0f", t * 1000}')
ip netns exec "$ns" "${client[@]}" > "$out/client.txt" 2> "$out/client.log" &
cpid=$!
on_exit "stop_pid $cpid 120"

# Ramp: poll the server's counters until it holds all N.
reached=0 shown=0
while :; do
    if "$BUILD/c1m-stat" --wait "open=$conns" --timeout 1 "$stats" > /dev/null 2>&1; then
        reached=1; break
    fi
    t=$(now_s)
    open=$("$BUILD/c1m-stat" --get open "$stats" 2>/dev/null || echo 0)
    el=$(elapsed "$t0" "$t")
    [ "$quiet" = 1 ] || { shown=1; printf '\r  %-17s %8s  accepted %8d / %-8d %7.0f/s  %6.1fs ' "$contender" \
        "$conns" "$open" "$conns" "$(awk -v o="$open" -v e="$el" 'BEGIN{print (e > 0 ? o / e : 0)}')" "$el" >&2; }
    if ! kill -0 "$spid" 2>/dev/null; then R[status]=crashed; R[note]="server exited during the ramp"; break; fi
    if ! kill -0 "$cpid" 2>/dev/null; then
        # The client ends early only on failure (it holds forever otherwise).
        R[status]=client-stopped; R[note]="client exited: $(tail -n 2 "$out/client.log" | tr '\n=' '  ' | cut -c1-160 | sed 's/ *$//')"; break
    fi
    if [ "$(mem_available_mib)" -lt "$min_avail" ]; then R[status]=oom-guard; R[note]="MemAvailable under ${min_avail} MiB"; break; fi
    if awk -v e="$el" -v t="$timeout" 'BEGIN{exit !(e > t)}'; then R[status]=timeout; R[note]="not all accepted after ${timeout}s"; break; fi
done
t1=$(now_s)
[ "$shown" = 1 ] && printf '\n' >&2
cpu1=$(cpu_ticks $pids)
read -r mb1 mt1 <<<"$(machine_cpu)"
R[accepted]=$("$BUILD/c1m-stat" --get open "$stats" 2>/dev/null || echo 0)
R[t_accept_s]=$(elapsed "$t0" "$t1")
[ "$reached" = 1 ] && R[status]=ok
R[server_cpu_connect_s]=$(ticks_to_s $((cpu1 - cpu0)))
R[machine_cpu_connect_pct]=$(awk -v b=$((mb1 - mb0)) -v t=$((mt1 - mt0)) -v n="$(nproc)" 'BEGIN{printf "%.0f", t ? 100 * n * b / t : 0}')
sleep 2   # let RSS and slab settle (deferred frees, the fd scanner)
read -r full_anon full_pss <<<"$(rss_kib $pids)"
read -r sock1 slab1 <<<"$(slab_kib)"
R[server_rss_kib]=$full_anon
R[server_pss_kib]=$full_pss
n=${R[accepted]}
if [ "$n" -gt 0 ]; then
    R[user_bytes_per_conn]=$(( (full_anon - idle_anon) * 1024 / n ))
    # Both ends live in the namespace: the socket slab delta covers 2 sockets per connection.
    R[kernel_bytes_per_conn]=$(( (sock1 - sock0) * 1024 / n ))
    R[slab_bytes_per_conn]=$(( (slab1 - slab0) * 1024 / n ))
fi
R[slab_caches]=$(slab_detail | tr ' ' ';')
R[sockstat_tcp_inuse]=$(netns_tcp_inuse "$ns")
read -r "R[listen_overflows]" "R[listen_drops]" "R[reqq_full]" <<<"$(netns_nstat "$ns")"

# hold_wait S: sleep S seconds showing a countdown. The sleep runs in the
# background so a stop signal is handled at once, not after the sleep.
hold_wait() {
    local left
    for ((left = $1; left > 0; left--)); do
        [ "$quiet" = 1 ] || printf '\r  %-17s %8s  holding with heartbeats every %ss: %4ds left ' \
            "$contender" "$conns" "$heartbeat" "$left" >&2
        sleep 1 & wait $!
    done
    [ "$quiet" = 1 ] || printf '\n' >&2
}

# Hold: idle CPU with heartbeats running. Reading /proc for 50+ pids takes a
# while under load, so the CPU% is over the wall time between the midpoints
# of the two readings, not over the nominal hold.
if [ "$reached" = 1 ] && [ "$hold" -gt 0 ]; then
    ta=$(now_s); c0=$(cpu_ticks $pids); tb=$(now_s); read -r hb0 ht0 <<<"$(machine_cpu)"
    hold_wait "$hold"
    tc=$(now_s); c1=$(cpu_ticks $pids); td=$(now_s); read -r hb1 ht1 <<<"$(machine_cpu)"
    wall=$(awk -v a="$ta" -v b="$tb" -v c="$tc" -v d="$td" 'BEGIN{printf "%.3f", (c + d) / 2 - (a + b) / 2}')
    R[hold_wall_s]=$wall
    R[server_cpu_hold_pct]=$(awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v s="$wall" 'BEGIN{printf "%.1f", (s > 0 ? 100 * t / hz / s : 0)}')
    R[machine_cpu_hold_pct]=$(awk -v b=$((hb1 - hb0)) -v t=$((ht1 - ht0)) -v n="$(nproc)" 'BEGIN{printf "%.0f", t ? 100 * n * b / t : 0}')
    R[open_after_hold]=$("$BUILD/c1m-stat" --get open "$stats" 2>/dev/null || echo 0)
    R[slow_closed]=$("$BUILD/c1m-stat" --get slow "$stats" 2>/dev/null || echo 0)
fi

stop_pid "$cpid" 120
R[client_exit]=$C1M_STOP_RC
if [ -s "$out/client.json" ]; then
    eval "$("$PYTHON" - "$out/client.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
hb = j.get("heartbeat") or {}
lat = j.get("connect_latency_ms") or {}
f = j.get("failures") or {}
vals = {
    "client_established": j.get("established", 0), "client_failed": j.get("failed", 0),
    "client_failures": ";".join(f"{k}:{v}" for k, v in sorted(f.items())) or "none",
    "t_client_established_s": j.get("time_to_established_s", ""),
    "client_workers": j.get("workers", ""),
    # user+sys of the client's whole run (ramp, hold, heartbeats), not the ramp alone
    "client_cpu_run_s": round((j.get("cpu_user_s") or 0) + (j.get("cpu_sys_s") or 0), 2),
    "connect_p99_ms": lat.get("p99", ""), "hb_pongs": hb.get("pongs", 0),
    "hb_p99_ms": (hb.get("latency_ms") or {}).get("p99", ""),
}
for k, v in vals.items():
    print(f"R[{k}]={json.dumps('' if v is None else str(v))}")
PY
)"
fi
stop_pid "$rpid" 5
# Stop the server with a bounded wait (a Python server closing 1M sockets takes
# a while) and record how it ended: 0 is a clean stop.
ts=$(now_s)
stop_pid "$spid" 120
R[server_exit]=$C1M_STOP_RC
R[server_stop_s]=$(elapsed "$ts" "$(now_s)")
if [ "$C1M_STOP_KILLED" = 1 ]; then
    R[note]="${R[note]:+${R[note]}; }server ignored SIGTERM for 120s: killed"
elif [ "$C1M_STOP_RC" != 0 ] && [ "${R[status]}" = ok ]; then
    R[note]="${R[note]:+${R[note]}; }server exited $C1M_STOP_RC after SIGTERM (see server.log)"
fi
exit 0
