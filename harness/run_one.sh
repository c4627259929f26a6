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

# usage [STATUS]: --help (0) on stdout, a usage error (2) on stderr
usage() {
    local rc=${1:-2}
    cat >&"$(( rc == 0 ? 1 : 2 ))" <<'USAGE'
usage: run_one.sh --contender NAME --conns N --out DIR [--hold S] [--heartbeat S]
                  [--timeout S] [--ramp-stall S] [--port P|LO-HI] [--server-worker-conns N]
                  [--client-worker-conns N] [--min-available MiB] [--quiet] [--log FILE]
                  [--quiet-max S] [--quiet-cpu-pct P] [--disturb-pct P] [--init-pct P]
                  [--baseline-slab-kib N --baseline-tcp-objs N]
                  [--scenario NAME [--variant LABEL]] [--profile SPEC] [--rate R] [--py-gc freeze|default|off]
                  [--server-cpus LIST] [--client-cpus LIST] [--tcp-mem SPEC]
  NAME: a contender of harness/lib/contenders.sh
  --scenario: idle (default) or another harness/lib/scenarios/NAME.sh; --variant: one
  of its variants; --profile: the kernel profile (tuned, stock,
  tuned-KEY or a profile FILE: harness/lib/profiles.sh); --rate: client connects/s (0 = unlimited); --py-gc: py_server --gc (Python contenders only)
  --log FILE: append this script's messages and progress to FILE (not stderr)
  --port P|LO-HI: the server's port, or a range (the client spreads its connects over it)
  --server-cpus/--client-cpus LIST: run the server / the client on these CPUs (taskset -c)
  --tcp-mem SPEC: the machine-wide net.ipv4.tcp_mem for this run, restored after it:
  host (default: as it is), auto (the machine's memory) or LOW,PRESSURE,HIGH pages
  --quiet: no live progress lines (redrawn with \r on a terminal, else a plain line every 10 s)
Exit: 0 the run completed (whatever it measured), 1 harness error, 2 usage.
USAGE
    exit "$rc"
}

contender="" conns="" out="" hold=10 heartbeat=5 timeout=600 ramp_stall=120 port=9000
swc="" cwc="" min_avail=1024 quiet=0 logfile=""
# need_value FLAG...: FLAG has a value after it (else a usage error, not a loop).
need_value() { [ $# -ge 2 ] || { log "$1: needs a value"; usage; }; }
quiet_max=600 quiet_cpu_pct=10 disturb_pct=5 init_pct=5 base_slab="" base_tcp=""
scenario=idle variant="" profile=tuned rate=0 py_gc=freeze server_cpus="" client_cpus="" tcp_mem=host
while [ $# -gt 0 ]; do
    case "$1" in
        --contender) need_value "$@"; contender=$2; shift 2 ;;
        --conns) need_value "$@"; parse_tier "$2" || { log "--conns: $TIER_ERR"; usage; }; conns=$TIER_VALUE; shift 2 ;;
        --out) need_value "$@"; out=$2; shift 2 ;;
        --hold) need_value "$@"; hold=$2; shift 2 ;;
        --heartbeat) need_value "$@"; heartbeat=$2; shift 2 ;;
        --timeout) need_value "$@"; timeout=$2; shift 2 ;;
        --ramp-stall) need_value "$@"; ramp_stall=$2; shift 2 ;;
        --port) need_value "$@"; port=$2; shift 2 ;;
        --server-worker-conns) need_value "$@"; swc=$2; shift 2 ;;
        --client-worker-conns) need_value "$@"; cwc=$2; shift 2 ;;
        --min-available) need_value "$@"; min_avail=$2; shift 2 ;;
        --quiet) quiet=1; shift ;;
        --log) need_value "$@"; logfile=$2; shift 2 ;;
        --quiet-max) need_value "$@"; quiet_max=$2; shift 2 ;;
        --quiet-cpu-pct) need_value "$@"; quiet_cpu_pct=$2; shift 2 ;;
        --disturb-pct) need_value "$@"; disturb_pct=$2; shift 2 ;;
        --init-pct) need_value "$@"; init_pct=$2; shift 2 ;;
        --baseline-slab-kib) need_value "$@"; base_slab=$2; shift 2 ;;
        --baseline-tcp-objs) need_value "$@"; base_tcp=$2; shift 2 ;;
        --scenario) need_value "$@"; scenario=$2; shift 2 ;;
        --variant) need_value "$@"; variant=$2; shift 2 ;;
        --profile) need_value "$@"; profile=$2; shift 2 ;;
        --rate) need_value "$@"; rate=$2; shift 2 ;;
        --py-gc) need_value "$@"; py_gc=$2; shift 2 ;;
        --server-cpus) need_value "$@"; server_cpus=$2; shift 2 ;;
        --client-cpus) need_value "$@"; client_cpus=$2; shift 2 ;;
        --tcp-mem) need_value "$@"; tcp_mem=$2; shift 2 ;;
        -h|--help) usage 0 ;;
        *) log "unknown flag: $1"; usage ;;
    esac
done
# \r progress lines only when stderr (bench.sh's, before --log) is a terminal (common.sh progress)
# shellcheck disable=SC2034  # read by progress (common.sh)
[ -t 2 ] && PROGRESS_TTY=1
# From here on, messages and progress go to --log (bench.sh shows that file:
# no pipe whose reader could die and take this script down with SIGPIPE).
if [ -n "$logfile" ]; then
    exec 2>>"$logfile" || { log "--log: cannot write $logfile"; usage; }
fi
# Every value checked before anything is created (exit 2 naming the flag).
[ -n "$contender" ] || { log "--contender: required"; usage; }
[ -n "$conns" ] || { log "--conns: required"; usage; }
[ -n "$out" ] || { log "--out: required"; usage; }
contender_known "$contender" \
    || { log "--contender: unknown contender '$contender' (known: ${C1M_CONTENDERS[*]})"; usage; }
is_ports "$port" || { log "--port: expects a port 1..65535 or a range LO-HI (at most 1024 ports): $port"; usage; }
for v in server_cpus client_cpus; do
    [ -z "${!v}" ] || is_cpu_list "${!v}" \
        || { log "--${v//_/-}: expects a CPU list of this machine's $(grep -c '^cpu[0-9]' /proc/stat) CPUs (0-1, 0,2...): ${!v}"; usage; }
done
in_range "$timeout" 1 31536000 || { log "--timeout: expects whole seconds >= 1: $timeout"; usage; }
for v in hold heartbeat ramp_stall min_avail quiet_max quiet_cpu_pct disturb_pct init_pct; do
    in_range "${!v}" 0 31536000 || { log "--${v//_/-}: expects a whole number: ${!v}"; usage; }
done
for v in swc cwc; do
    [ -z "${!v}" ] || in_range "${!v}" 1 100000000 \
        || { log "--$([ $v = swc ] && echo server || echo client)-worker-conns: expects a count >= 1: ${!v}"; usage; }
done
[ "$quiet_cpu_pct" -le 100 ] || { log "--quiet-cpu-pct: expects 0..100 (% of the machine): $quiet_cpu_pct"; usage; }
[ "$disturb_pct" -le 100 ] || { log "--disturb-pct: expects 0..100 (% of the machine): $disturb_pct"; usage; }
[ "$init_pct" -le 100 ] || { log "--init-pct: expects 0..100 (% of the machine): $init_pct"; usage; }
# bounded: the gate adds to them in bash arithmetic (no overflow wrapping a bound negative)
[ -z "$base_slab" ] || in_range "$base_slab" 0 999999999999 || { log "--baseline-slab-kib: expects KiB: $base_slab"; usage; }
[ -z "$base_tcp" ] || in_range "$base_tcp" 0 999999999999 || { log "--baseline-tcp-objs: expects a count: $base_tcp"; usage; }
tcp_mem_resolve "$tcp_mem" || { log "--tcp-mem: $TCP_MEM_ERR"; usage; }
in_range "$rate" 0 100000000 || { log "--rate: expects connections/s (0 = unlimited): $rate"; usage; }
case "$py_gc" in freeze|default|off) ;; *) log "--py-gc: freeze, default or off, not '$py_gc'"; usage ;; esac
[ "$py_gc" = freeze ] || contender_supports "$contender" py-gc \
    || { log "--py-gc: $contender has no Python garbage collector (only py_server's contenders take $py_gc)"; usage; }
scenario_load "$scenario" || { log "--scenario: unknown scenario '$scenario' (known: $(scenario_names | tr '\n' ' '))"; usage; }
scenario_check || { log "(scenario $scenario)"; usage; }
variants=$(scenario_variants)
if [ -n "$variants" ] || [ -n "$variant" ]; then
    grep -qxF -- "$variant" <<<"$variants" \
        || { log "--variant: '$variant' is not a variant of scenario $scenario (known: $(tr '\n' ' ' <<<"$variants"))"; usage; }
fi
# The kernel profile: lib/profiles.sh resolves and applies it (netns_create reads RUN_PROFILE).
profile_check "$profile" || usage
RUN_PROFILE=$profile
require_root run_one.sh
[ -x "$BUILD/c1m-server" ] && [ -x "$BUILD/c1m-client" ] && [ -x "$BUILD/c1m-stat" ] \
    || die "binaries missing in $BUILD: run 'make build' first"
# The run's state (lib/orphans.sh), removed last: what to find again if this
# script is killed before its cleanup (kill -9), for the next bench.sh.
state_init
on_exit state_remove
mkdir -p "$out" || die "cannot create $out"

server_cmd() {
    [ -n "$server_cpus" ] && printf 'taskset -c %s ' "$server_cpus"
    # shellcheck disable=SC2046  # the scenario's flags are words
    contender_server_cmd --port "$port" --conns "$conns" --stats "$stats" --worker-conns "$swc" \
        --gc "$py_gc" "$contender" $(scenario_server_args)
}

declare -A R=([contender]=$contender [target]=$conns [status]=failed [accepted]=0
             [scenario]=$scenario [variant]=$variant [profile]=$profile [rate]=$rate [py_gc]=$py_gc
             [condition]=$(condition_of "$profile" "$variant" "$rate" "$py_gc")
             [hold_s]=$hold [heartbeat_s]=$heartbeat [timeout_s]=$timeout [ramp_stall_s]=$ramp_stall [min_available_mib]=$min_avail
             [port]=$port [server_cpus]=$server_cpus [client_cpus]=$client_cpus)
# Observations (O, `obs NAME TEXT`): what the run saw, for the verdict. This
# script decides no status: lib/judge.py does, from O and R (harness/README.md
# "From observations to the record").
# Samplers' summaries (JSON files, `merge_summary FILE`) go into the record as they are.
declare -A O=()
obs() { O[$1]=$2; }
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
# server_launch LOG: start the server command in the namespace, its output to
# LOG; sets spid. (The storm scenario starts the server again through it.)
server_launch() {
    ( cd "$C1M_ROOT" && export PYTHONPATH="$C1M_ROOT:$BUILD/pyext" && exec ip netns exec "$ns" $cmd ) \
        > "$1" 2>&1 &
    spid=$!
    server_up_s=$(cut -d' ' -f1 /proc/uptime)   # (oom_killed reads the kernel log from here)
}
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
for ((i = 0; i < 100; i++)); do [ -e "$out/disturb.jsonl" ] && break; sleep 0.1; done
mark() { [ -e "$out/disturb.jsonl" ] && kill -USR1 "$dpid" 2>/dev/null; }
sleep 1   # let the workers settle before the baseline
pids=$(server_pids "$stats" "$spid")
workers=$(tr ' ' '\n' <<<"$pids" | awk -v p="$spid" '$1 != "" && $1 != p' | tr '\n' ' ')
R[server_workers]=$(( $(wc -w <<<"$pids") - 1 ))
# The raw readings (lib/probe.sh): lib/judge.py derives the run's figures from them.
obs rss_idle "$(rss_kib $pids)"
obs slab0 "$(slab_kib)"
slab_save "$out/slabinfo-idle.txt"
obs clk_tck "$(getconf CLK_TCK)"
obs stat_cpus "$(grep -c '^cpu[0-9]' /proc/stat)"

"$BUILD/c1m-stat" --csv --watch 100 "$stats" > "$out/ramp.csv" 2>/dev/null &
rpid=$!
state_pid sampler "$rpid"
on_exit stop_pid "$rpid" 5

client=()
[ -n "$client_cpus" ] && client=(taskset -c "$client_cpus")
client+=("$BUILD/c1m-client" --connections "$conns" --host 127.0.0.1 --port "$port" --hold inf
        --heartbeat "$heartbeat" --min-available "$min_avail" --json "$out/client.json" --quiet)
[ -n "$cwc" ] && client+=(--worker-conns "$cwc")
[ "$rate" != 0 ] && client+=(--rate "$rate")
# shellcheck disable=SC2207  # the scenario's flags are words
client+=($(scenario_client_args))
# The accept queues (lib/acceptq.py, inside the namespace): every listener's
# Recv-Q at 10 Hz through the ramp, for its high-water mark (acceptq_*).
# Its first sample is taken before the client starts; stopped when the ramp ends.
rm -f "$out/acceptq.csv"
ip netns exec "$ns" "$PYTHON" "$C1M_ROOT/harness/lib/acceptq.py" sample --out "$out/acceptq.csv" \
    --max-seconds "$(( timeout + 60 < 86400 ? timeout + 60 : 86400 ))" 2>> "$out/acceptq.log" &
apid=$!
state_pid acceptq "$apid"
on_exit stop_pid "$apid" 5
for ((i = 0; i < 50; i++)); do
    [ -s "$out/acceptq.csv" ] && [ "$(wc -l < "$out/acceptq.csv")" -ge 2 ] && break
    sleep 0.1
done
obs cpu0 "$(cpu_ticks $pids)"
obs machine0 "$(machine_cpu)"
mark
t0=$(now_s)
obs t0 "$t0"
ip netns exec "$ns" "${client[@]}" > "$out/client.txt" 2> "$out/client.log" &
cpid=$!
on_exit stop_pid "$cpid" 120

# Ramp: poll the server's counters until it holds all N. Progress is a new
# high of the server's open count: a ramp without one for --ramp-stall seconds
# (threads at its thread limit) stops as ramp-stalled, not at --timeout.
reached=0 shown=0 best=0 t_best=$t0
while :; do
    if "$BUILD/c1m-stat" --wait "open=$conns" --timeout 1 "$stats" > /dev/null 2>&1; then
        reached=1; break
    fi
    t=$(now_s)
    open=$(stat_get "$stats" open)
    el=$(elapsed "$t0" "$t")
    [ "$quiet" = 1 ] || { shown=1; progress '  %-17s %8s  accepted %8d / %-8d %7.0f/s  %6.1fs ' "$contender" \
        "$conns" "${open:-0}" "$conns" "$(awk -v o="${open:-0}" -v e="$el" 'BEGIN{print (e > 0 ? o / e : 0)}')" "$el" >&2; }
    if ! kill -0 "$spid" 2>/dev/null; then
        obs ramp_end server-exited; obs ramp_oom "$(oom_killed - "$server_up_s" "$spid" $workers)"; break
    fi
    if ! kill -0 "$cpid" 2>/dev/null; then
        # The client ends early only on failure (it holds forever otherwise).
        obs ramp_end client-exited
        obs client_log "$(tail -n 2 "$out/client.log" | tr '\n=' '  ' | cut -c1-160 | sed 's/ *$//')"; break
    fi
    usable=$(mem_usable_mib)
    if [ -n "$usable" ] && [ "$usable" -lt "$min_avail" ]; then obs ramp_end oom-guard; break; fi
    if awk -v e="$el" -v t="$timeout" 'BEGIN{exit !(e > t)}'; then obs ramp_end timeout; break; fi
    if [[ ${open:-} =~ ^[0-9]+$ ]] && [ "$open" -gt "$best" ]; then
        best=$open t_best=$t
    elif [ "$ramp_stall" -gt 0 ] && awk -v e="$(elapsed "$t_best" "$t")" -v s="$ramp_stall" 'BEGIN{exit !(e > s)}'; then
        obs ramp_end ramp-stalled; obs ramp_best "$best"; obs ramp_open "${open:-}"; obs ramp_elapsed_s "$el"; break
    fi
done
t1=$(now_s)
mark
[ "$shown" = 1 ] && progress_end
obs cpu1 "$(cpu_ticks $pids)"
obs machine1 "$(machine_cpu)"
obs t1 "$t1"
R[accepted]=$(stat_get "$stats" open)
[ "$reached" = 1 ] && obs ramp_end reached
stop_pid "$apid" 5
"$PYTHON" "$C1M_ROOT/harness/lib/acceptq.py" summary "$out/acceptq.csv" > "$out/acceptq.json" 2>/dev/null
merge_summary "$out/acceptq.json"
sleep 2   # let RSS and slab settle (deferred frees, the fd scanner)
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

# hold_wait S: sleep S seconds showing a countdown, noting each second when
# every worker's line count last moved (hold_watch). The sleep runs in the
# background so a stop signal is handled at once, not after the sleep.
hold_wait() {
    local left
    for ((left = $1; left > 0; left--)); do
        [ "$quiet" = 1 ] || progress '  %-17s %8s  holding with heartbeats every %ss: %4ds left ' \
            "$contender" "$conns" "$heartbeat" "$left" >&2
        hold_watch
        sleep 1 & wait $!
    done
    hold_watch
    [ "$quiet" = 1 ] || progress_end
}
# hold_watch: one look at the workers' line counts (lib/probe.sh worker_lines)
# and CPU times (pid_ticks): when each last moved
declare -A hl_lines=() hl_moved=() hl_open=() hl_ticks=() hl_busy=()
hold_watch() {
    local pid open lines ticks t
    t=$(now_s)
    while read -r pid open lines; do
        [ "${hl_lines[$pid]:-}" = "$lines" ] || { hl_lines[$pid]=$lines; hl_moved[$pid]=$t; }
        hl_open[$pid]=$open
    done < <(worker_lines "$stats")
    while read -r pid ticks; do
        [ "${hl_ticks[$pid]:-}" = "$ticks" ] || { hl_ticks[$pid]=$ticks; hl_busy[$pid]=$t; }
    done < <(pid_ticks "${!hl_open[@]}")
}

# Hold: idle CPU with heartbeats running. Reading /proc for 50+ pids takes a
# while under load, so the CPU% is over the wall time between the midpoints
# of the two readings, not over the nominal hold.
hold_win=() silent=""
if [ "$reached" = 1 ] && [ "$hold" -gt 0 ]; then
    mark
    ta=$(now_s); obs hold_cpu0 "$(cpu_ticks $pids)"; obs hold_b "$(now_s)"; obs hold_machine0 "$(machine_cpu)"
    hold_wait "$hold"
    tc=$(now_s); obs hold_cpu1 "$(cpu_ticks $pids)"; td=$(now_s); obs hold_machine1 "$(machine_cpu)"
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
# health_dead: dead workers and parent of the server $spid names now.
# (h_dead and h_parent_gone: for the scenarios, which act on a dead server)
health_dead() {
    h_dead_stat=$(stat_get "$stats" workers_dead)     # "" when c1m-stat cannot say
    h_parent_gone=$(pids_gone "$spid")
    h_dead=$(pids_gone $workers)
    obs dead_gone "$h_dead"; obs dead_stat "$h_dead_stat"; obs parent_gone "$h_parent_gone"
    obs n_workers "$(wc -w <<<"$workers")"
    [ -n "$h_dead_stat" ] && [ "$h_dead_stat" -gt "$h_dead" ] && h_dead=$h_dead_stat
}
# health_counts: the server's open count and the namespace's sockets.
health_counts() {
    obs h_server "$(stat_get "$stats" open)"
    obs h_inuse "$(netns_tcp_inuse "$ns")"
    obs h_listen "$(netns_listeners "$ns")"
}
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
obs tcp_mem_arg "$tcp_mem"
obs quiet_max "$quiet_max"
obs gate_cause "$GATE_CAUSE"
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
