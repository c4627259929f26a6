#!/usr/bin/env bash
# run_one.sh - one contender at one tier, in a fresh network namespace.
#
# Starts the server, records its idle baseline, starts the C client, and times
# the ramp until the *server* has accepted all N (its own counters, polled every
# 10 ms: a slow server's kernel completes handshakes long before it accepts).
# Then holds with heartbeats to measure idle CPU, stops everything and deletes
# the namespace (teardown is outside the timed region). Before the server
# starts, waits for a quiet machine (lib/gate.sh); during the run, samples the
# CPU used outside the run (lib/disturb.py); at the end of the hold, checks the
# server's counters, the namespace's sockets and the client agree. Writes
# OUT/result.json (lib/record.py; harness/README.md lists its keys),
# OUT/ramp.csv, OUT/disturb.jsonl, OUT/sysctl.txt, OUT/client.json, OUT/netns
# (the namespace's name, for a caller's last-resort cleanup) and logs.
#
# Exit: 0 the run completed (whatever it measured), 1 harness error, 2 usage.
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"
honour_sigint "$0" "$@"
source "$C1M_ROOT/harness/lib/netns.sh"
source "$C1M_ROOT/harness/lib/orphans.sh"
source "$C1M_ROOT/harness/lib/probe.sh"
source "$C1M_ROOT/harness/lib/gate.sh"
source "$C1M_ROOT/harness/lib/scenario.sh"
source "$C1M_ROOT/harness/lib/profiles.sh"
source "$C1M_ROOT/harness/lib/perf.sh"
source "$C1M_ROOT/harness/lib/run_one_lib.sh"

run_one_args "$@"
require_root run_one.sh
# --perf 1: perf as the caller probed it, else probed here (lib/perf.sh perf_given); none:
# the nanoseconds are read all the same, every phase's perf "unavailable"
[ "$perf" = 1 ] && ! perf_given && log "$contender: no CPU profile: $PERF_CAUSE"
[ -x "$BUILD/c1m-server" ] && [ -x "$BUILD/c1m-client" ] && [ -x "$BUILD/c1m-stat" ] \
    || die "binaries missing in $BUILD: run 'make build' first"
# The run's state (lib/orphans.sh), removed last: what to find again if this
# script is killed before its cleanup (kill -9), for the next bench.sh.
state_init
on_exit state_remove
mkdir -p "$out" || die "cannot create $out"

declare -A R=([contender]=$contender [target]=$conns [accepted]=0
             [scenario]=$scenario [variant]=$variant [profile]=$profile [rate]=$rate [py_gc]=$py_gc
             [condition]=$(condition_of "$profile" "$variant" "$rate" "$py_gc")
             [hold_s]=$hold [heartbeat_s]=$heartbeat [timeout_s]=$timeout [ramp_stall_s]=$ramp_stall [min_available_mib]=$min_avail
             [port]=$port [server_cpus]=$server_cpus [client_cpus]=$client_cpus)
# Observations (O, `obs NAME TEXT`, lib/probe.sh): what the run saw, for the verdict. This
# script decides no status: lib/judge.py does, from O and R (harness/README.md
# "From observations to the record").
# Samplers' summaries (JSON files, `merge_summary FILE`) go into the record as they are.
declare -A O=()
M=()
merge_summary() { M+=(--merge "$1"); }
# write_result: OUT/result.json from R and O (typed, the client's summary merged in,
# judged: harness/lib/record.py, lib/judge.py), on every exit path.
write_result() {
    local k kv=()
    for k in "${!R[@]}"; do kv+=("$k=${R[$k]//$'\n'/ }"); done
    for k in "${!O[@]}"; do kv+=(--obs "$k=${O[$k]//$'\n'/ }"); done
    "$PYTHON" "$C1M_ROOT/harness/lib/record.py" write "$out/result.json" --client "$out/client.json" "${M[@]}" "${kv[@]}" \
        || log "error: cannot write $out/result.json"
}
on_exit write_result
# A stop signal (INT, TERM, HUP) marks the run interrupted; the cleanup stack
# then ends the client and server, deletes the namespace and writes result.json.
run_interrupted() { obs interrupted "$1"; }
on_signal run_interrupted

ns=c1m-$$-$RANDOM
stats=/dev/shm/c1m-run-$$.stats
state_put stats "$stats"
on_exit rm -f "$stats"
# Quiet-machine gate (lib/gate.sh): wait until earlier runs' sockets are freed
# and the CPUs are idle. A run that starts after a timeout is marked disturbed.
# Before this run's namespace exists: a concurrent run's gate must not wait for it.
rm -f "$out/client.json" "$out/disturb.jsonl"
quiet_gate "$quiet_max" "$quiet_cpu_pct" "$base_slab" "$base_tcp" "$ns"
R[gate]=$GATE R[gate_wait_s]=$GATE_WAIT_S
[ "$GATE" = timeout ] && log "$contender: the machine did not get quiet in ${quiet_max}s (${GATE_CAUSE}): running anyway, marked disturbed"
need_files=$((conns * 2 + 200000))
ensure_at_least fs.file-max "$need_files"
# The machine-wide TCP memory limit (--tcp-mem), and what the run ran under.
[ -n "$TCP_MEM_VALUE" ] && set_global net.ipv4.tcp_mem "$TCP_MEM_VALUE"
R[tcp_mem]=$(sysctl_get net.ipv4.tcp_mem)
netns_create "$ns"
R[netns]=$ns
echo "$ns" > "$out/netns"
netns_applied "$ns" > "$out/sysctl.txt"

cmd=$(server_cmd)
R[server_cmd]=$cmd
# Registered once, before the first launch: it stops whichever server $spid
# names at exit (the storm restarts the server and reaps the old pid, which
# the system may then give to an unrelated process).
spid="" server_up_s=""
stop_server() { stop_pid "$spid" 120; }
on_exit stop_server
server_launch "$out/server.log"

if ! "$BUILD/c1m-stat" --wait-ready --timeout 60 "$stats" > /dev/null 2>&1; then
    obs ready not-ready
    if ! kill -0 "$spid" 2>/dev/null; then
        wait "$spid"; rc=$?
        [ "$rc" = 3 ] && obs ready unavailable || obs ready exited
    fi
    obs ready_log "$(tail -n 1 "$out/server.log" | tr -d '\n=' | cut -c1-160)"
    log "$contender: server did not become ready: ${O[ready_log]}"
    exit 0
fi
obs ready ok
# The disturbance sampler (lib/disturb.py): CPU used outside this script's
# process tree, one sample a second and one at each phase boundary (SIGUSR1);
# this script's parent (bench.sh, the controller) measured apart, not judged.
"$PYTHON" "$C1M_ROOT/harness/lib/disturb.py" sample --root $$ --controller "$PPID" --out "$out/disturb.jsonl" &
dpid=$!
state_pid disturb "$dpid"
on_exit stop_pid "$dpid" 5
# SIGUSR1 only once it has set up its signals (it then creates its file).
for ((i = 0; i < 500; i++)); do [ -e "$out/disturb.jsonl" ] && break; sleep 0.02; done
mark() { [ -e "$out/disturb.jsonl" ] && kill -USR1 "$dpid" 2>/dev/null; }
# let the workers settle before the baseline (--mem-settle 0: a test that judges no memory figure)
[ "$mem_settle" = 1 ] && nap 1
pids=$(server_pids "$stats" "$spid")
workers=$(tr ' ' '\n' <<<"$pids" | awk -v p="$spid" '$1 != "" && $1 != p' | tr '\n' ' ')
R[server_workers]=$(( $(wc -w <<<"$pids") - 1 ))
# The raw readings (lib/probe.sh): lib/judge.py derives the run's figures from them.
obs rss_idle "$(rss_kib $pids)"
obs slab0 "$(slab_kib)"
slab_save "$out/slabinfo-idle.txt"
obs clk_tck "$(getconf CLK_TCK)"; obs stat_cpus "$(grep -c '^cpu[0-9]' /proc/stat)"

"$BUILD/c1m-stat" --csv --watch 100 "$stats" > "$out/ramp.csv" 2>/dev/null &
rpid=$!
state_pid sampler "$rpid"
on_exit stop_pid "$rpid" 5

client=()
[ -n "$client_cpus" ] && client=(taskset -c "$client_cpus")
# shellcheck disable=SC2046  # the scenario's flags are words
mapfile -t words < <(contender_client_cmd --conns "$conns" --host 127.0.0.1 --port "$port" \
    --heartbeat "$heartbeat" --min-available "$min_avail" --json "$out/client.json" \
    --worker-conns "$cwc" --rate "$rate" $(scenario_client_args))
[ ${#words[@]} -gt 0 ] || die "$contender: the client's command line could not be built (lib/contenders.py client-cmd)"
client+=("${words[@]}")
# The accept queues (lib/acceptq.py, inside the namespace): every listener's
# Recv-Q at 10 Hz through the ramp, for its high-water mark (acceptq_*).
# Its first sample is taken before the client starts; stopped when the ramp ends.
rm -f "$out/acceptq.csv"
ip netns exec "$ns" "$PYTHON" "$C1M_ROOT/harness/lib/acceptq.py" sample --out "$out/acceptq.csv" \
    --max-seconds "$(( timeout + 60 < 86400 ? timeout + 60 : 86400 ))" 2>> "$out/acceptq.log" &
apid=$!
state_pid acceptq "$apid"
on_exit stop_pid "$apid" 5
for ((i = 0; i < 250; i++)); do
    [ -s "$out/acceptq.csv" ] && [ "$(wc -l < "$out/acceptq.csv")" -ge 2 ] && break
    sleep 0.02
done
# Ramp: until the server holds all N by its own counters, or a stop rule ends
# it (lib/rampmon.py, their one home: a worker died, the server or the client
# exited, the memory guard, --timeout, --ramp-stall), with a progress line.
# The watch starts first and waits for the client's start (--go: t0 and the
# client's pid); how the ramp ended and when (t1) are observations (--merge-obs).
ramp_watch_start      # (lib/run_one_lib.sh: sets wpid)
perf_phase begin ramp     # (--perf 1: the CPU anatomy's; lib/run_one_lib.sh)
obs cpu0 "$(cpu_ticks $pids)"; obs machine0 "$(machine_cpu)"
perf_phase on ramp
mark
t0=$(now_s)
obs t0 "$t0"
# (perf's control FIFOs are not the client's to hold)
( perf_close_fds; exec ip netns exec "$ns" "${client[@]}" ) > "$out/client.txt" 2> "$out/client.log" &
cpid=$!
on_exit stop_pid "$cpid" 120
echo "$t0 $cpid" > "$out/ramp-go"
wait_child -t 0.01 "$wpid"; rc=$?
case $rc in
    0) reached=1 ;;
    3) reached=0 ;;
    # (a stop signal to the group ends the watch too: this shell's trap, pending,
    # runs within the sleep, and the run is interrupted, not failed)
    *) sleep 0.3; obs driver_error "the ramp's watch (lib/rampmon.py) failed (exit $rc)"
       die "$contender: the ramp's watch failed (lib/rampmon.py exit $rc)" ;;
esac
perf_phase off ramp
obs cpu1 "$(cpu_ticks $pids)"; obs machine1 "$(machine_cpu)"
mark
perf_phase end ramp
M+=(--merge-obs "$out/ramp-end.json")
rm -f "$out/ramp-go" "$out/ramp-go.ready"
t1=$("$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$out/ramp-end.json" t1)
[ "$reached" = 1 ] || obs ramp_oom "$(oom_killed - "$server_up_s" "$spid" $workers)"
R[accepted]=$(stat_get "$stats" open)
stop_pid "$apid" 5
"$PYTHON" "$C1M_ROOT/harness/lib/acceptq.py" summary "$out/acceptq.csv" > "$out/acceptq.json" 2>/dev/null
merge_summary "$out/acceptq.json"
[ "$mem_settle" = 1 ] && nap 2   # let RSS and slab settle (deferred frees, the fd scanner)
obs rss_full "$(rss_kib $pids)"
obs slab1 "$(slab_kib)"
n=${R[accepted]:-0}
R[slab_caches]=$(slab_detail | tr ' ' ';')
slab_save "$out/slabinfo-full.txt"
[ "$n" -gt 0 ] && R[slab_growth]=$(slab_growth "$out/slabinfo-idle.txt" "$out/slabinfo-full.txt" "$n")
R[sockstat_tcp_inuse]=$(netns_tcp_inuse "$ns")
R[sockstat_tcp_mem_kib]=$(tcp_mem_kib)
# The namespace's drop counters (lib/probe.sh): the ramp's, read once it ended.
netns_tcp_counters --json "$ns" > "$out/tcp-ramp.json"
merge_summary "$out/tcp-ramp.json"

# Hold: idle CPU with heartbeats running. Reading /proc for 50+ pids takes a
# while under load, so the CPU% is over the wall time between the midpoints
# of the two readings, not over the nominal hold.
hold_win=() silent=""
if [ "$reached" = 1 ] && [ "$hold" -gt 0 ]; then
    perf_phase begin hold
    mark
    ta=$(now_s); obs hold_cpu0 "$(cpu_ticks $pids)"; obs hold_b "$(now_s)"; obs hold_machine0 "$(machine_cpu)"
    perf_phase on hold
    hold_wait "$hold"
    perf_phase off hold
    tc=$(now_s); obs hold_cpu1 "$(cpu_ticks $pids)"; td=$(now_s); obs hold_machine1 "$(machine_cpu)"
    perf_phase end hold
    # every worker that holds pinged connections must go on counting lines
    # to the end of the hold (the floor reads none: it is never asked)
    if contender_supports "$contender" reads; then
        silent=$(for p in "${!hl_moved[@]}"; do echo "$p ${hl_open[$p]} ${hl_moved[$p]} ${hl_busy[$p]:-0}"; done \
                     | silent_workers "$tc" "$heartbeat")
    fi
    mark
    hold_win=(--hold "$ta" "$td")
    obs hold_a "$ta"; obs hold_c "$tc"; obs hold_d "$td"
    R[open_after_hold]=$(stat_get "$stats" open)
    R[slow_closed]=$(stat_get "$stats" slow)
fi

# Health at the end of the hold, from three sides that must agree: the
# server's counters (live workers only), the namespace's TCP sockets (two per
# loopback connection, plus one listener per worker) and, once it stopped, the
# client's own count. A worker that died is a failure, never a count (dead
# workers are recorded for every run that got this far).
health_dead
scenario_win=()
if [ "$reached" = 1 ]; then
    health_counts
    # The scenario's own phase (lib/scenarios/NAME.sh; nothing for idle),
    # judged for disturbance as its own window.
    if [ "$scenario" != idle ]; then
        mark
        tsc0=$(now_s)
        scenario_run
        tsc1=$(now_s)
        mark
        scenario_win=(--phase scenario "$tsc0" "$tsc1")
        # The health is taken again after it, of the server now running (the
        # storm's restarted one): a worker that died in the phase is a
        # failure; the counts, unless the scenario closes connections by
        # design (scenario_keeps_conns: the stall's slow cuts).
        if [ -z "${O[scenario_status]:-}" ]; then
            health_dead
            scenario_keeps_conns && health_counts
        fi
    fi
fi

# The kernel's TCP memory limit as the run met it, read before the client
# stops: N connections closed at once queue a FIN on every server socket, and
# that alone took 1M connections over tcp_mem's pressure threshold for ~10 s,
# after every figure had been taken (counted apart: tcp_mem_pressures_stop).
netns_tcp_mem_counters --json "$ns" > "$out/tcp-mem.json"
merge_summary "$out/tcp-mem.json"
stop_pid "$cpid" 120
R[client_exit]=$C1M_STOP_RC
[ "$reached" = 1 ] && scenario_after_client
stop_pid "$dpid" 5

# The verdict's facts (lib/judge.py judges them: the health, what disturbed the run).
obs silent "$silent"
obs oom "$(oom_killed - "$server_up_s" "$spid" $workers)"
if [ -s "$out/disturb.jsonl" ]; then
    "$PYTHON" "$C1M_ROOT/harness/lib/disturb.py" summary "$out/disturb.jsonl" --ramp "$t0" "$t1" "${hold_win[@]}" \
        "${scenario_win[@]}" --limit "$disturb_pct" --init-limit "$init_pct" > "$out/disturb.json"
    merge_summary "$out/disturb.json"
fi
obs tcp_mem_pressures_end "$(netns_tcpext "$ns" TCPMemoryPressures=p | cut -d= -f2)"
obs tcp_mem_arg "$tcp_mem"; obs quiet_max "$quiet_max"; obs gate_cause "$GATE_CAUSE"
obs verdict 1

stop_pid "$rpid" 5
# Stop the server with a bounded wait (a Python server closing 1M sockets takes
# a while) and record how it ended: 0 is a clean stop.
ts=$(now_s)
stop_pid "$spid" 120
R[server_exit]=$C1M_STOP_RC
R[server_stop_s]=$(elapsed "$ts" "$(now_s)")
obs stop_killed "$C1M_STOP_KILLED"
exit 0
