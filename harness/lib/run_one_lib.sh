# shellcheck shell=bash disable=SC2034,SC2154  # run_one.sh's globals, set and read there
# run_one_lib.sh - run_one.sh's parts: its command line (run_one_args, which
# sets its settings as globals, exit 2 naming a bad flag before anything is
# created), the server's command and launch, the hold's watch and the
# end-of-hold health observations. Sourced by run_one.sh only: they read and
# set its globals (R, O, $ns, $stats, $spid, $workers...).

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
                  [--server-cpus LIST] [--client-cpus LIST] [--tcp-mem SPEC] [--mem-settle 1|0]
                  [--perf 1|0]
  NAME: a contender of harness/lib/contenders.sh
  --scenario: idle (default) or another harness/lib/scenarios/NAME.sh; --variant: one
  of its variants; --profile: the kernel profile (tuned, stock,
  tuned-KEY or a profile FILE: harness/lib/profiles.sh); --rate: client connects/s (0 = unlimited); --py-gc: py_server --gc (Python contenders only)
  --log FILE: append this script's messages and progress to FILE (not stderr)
  --port P|LO-HI: the server's port, or a range (the client spreads its connects over it)
  --server-cpus/--client-cpus LIST: run the server / the client on these CPUs (taskset -c)
  --tcp-mem SPEC: the machine-wide net.ipv4.tcp_mem for this run, restored after it:
  host (default: as it is), auto (the machine's memory) or LOW,PRESSURE,HIGH pages
  --mem-settle 0: take the memory readings at once (no 1 s before the idle baseline,
  no 2 s after the ramp): for tests that judge no memory figure (default 1)
  --perf 1: the CPU anatomy's readings (harness/anatomy-cpu): the server processes' CPU
  nanoseconds at the ramp's and the hold's ends, and perf record on them over both
  (OUT/ramp.data, OUT/hold.data; C1M_PERF, PERF_PERIOD_US, PERF_CALLGRAPH: lib/perf.sh)
  --quiet: no live progress lines (redrawn with \r on a terminal, else a plain line every 10 s)
Exit: 0 the run completed (whatever it measured), 1 harness error, 2 usage, 130 interrupted.
USAGE
    exit "$rc"
}


# run_one_args ARG...: parse and check run_one.sh's command line.
run_one_args() {
    contender="" conns="" out="" hold=10 heartbeat=5 timeout=600 ramp_stall=120 port=9000
    swc="" cwc="" min_avail=1024 quiet=0 logfile=""
    # need_value FLAG...: FLAG has a value after it (else a usage error, not a loop).
    need_value() { [ $# -ge 2 ] || { log "$1: needs a value"; usage; }; }
    quiet_max=600 quiet_cpu_pct=10 disturb_pct=5 init_pct=5 base_slab="" base_tcp=""
    scenario=idle variant="" profile=tuned rate=0 py_gc=freeze server_cpus="" client_cpus="" tcp_mem=host
    mem_settle=1 perf=0
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
            --mem-settle) need_value "$@"; mem_settle=$2; shift 2 ;;
            --perf) need_value "$@"; perf=$2; shift 2 ;;
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
    [[ $mem_settle =~ ^[01]$ ]] || { log "--mem-settle: expects 1 or 0: $mem_settle"; usage; }
    [[ $perf =~ ^[01]$ ]] || { log "--perf: expects 1 or 0: $perf"; usage; }
    if [ "$perf" = 1 ]; then
        PERF_PERIOD_US=${PERF_PERIOD_US:-1000} PERF_CALLGRAPH=${PERF_CALLGRAPH:-dwarf}
        in_range "$PERF_PERIOD_US" 10 1000000 || { log "PERF_PERIOD_US: expects 10..1000000: $PERF_PERIOD_US"; usage; }
        case "$PERF_CALLGRAPH" in dwarf|fp) ;; *) log "PERF_CALLGRAPH: dwarf or fp, not '$PERF_CALLGRAPH'"; usage ;; esac
    fi
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
}

server_cmd() {
    [ -n "$server_cpus" ] && printf 'taskset -c %s ' "$server_cpus"
    # shellcheck disable=SC2046  # the scenario's flags are words
    contender_server_cmd --port "$port" --conns "$conns" --stats "$stats" --worker-conns "$swc" \
        --gc "$py_gc" "$contender" $(scenario_server_args)
}

# server_launch LOG: start the server command in the namespace, its output to
# LOG; sets spid. (The storm scenario starts the server again through it.)
server_launch() {
    ( cd "$C1M_ROOT" && export PYTHONPATH="$C1M_ROOT:$BUILD/pyext" && exec ip netns exec "$ns" $cmd ) \
        > "$1" 2>&1 &
    spid=$!
    server_up_s=$(cut -d' ' -f1 /proc/uptime)   # (oom_killed reads the kernel log from here)
}

# ramp_watch_start: the ramp's watch (lib/rampmon.py), started before the
# client, and returning once it waits for OUT/ramp-go ("T0 CLIENT_PID": its
# OUT/ramp-go.ready; at most 10 s); sets wpid.
ramp_watch_start() {
    local watch=off
    [ "$quiet" = 1 ] || { watch=line; [ "$PROGRESS_TTY" = 1 ] && watch=tty; }
    rm -f "$out/ramp-end.json" "$out/ramp-go" "$out/ramp-go.ready"
    on_exit rm -f "$out/ramp-go" "$out/ramp-go.ready"     # (a run stopped in its ramp: its go files)
    "$PYTHON" "$C1M_ROOT/harness/lib/rampmon.py" watch --out "$out/ramp-end.json" --stats "$stats" \
        --c1m-stat "$BUILD/c1m-stat" --conns "$conns" --server "$spid" --go "$out/ramp-go" \
        --timeout "$timeout" --ramp-stall "$ramp_stall" --min-available "$min_avail" \
        --client-log "$out/client.log" --root $$ --label "$contender" --progress "$watch" &
    wpid=$!
    on_exit stop_pid "$wpid" 5
    go_ready "$out/ramp-go" "$wpid"
}

# go_ready FILE PID: once the monitor PID waits for its go file FILE
# (lib/monlib.py wait_go: FILE.ready), or is gone; at most 10 s.
go_ready() {
    local i
    for ((i = 0; i < 1000; i++)); do
        [ -e "$1.ready" ] || ! kill -0 "$2" 2>/dev/null && break
        sleep 0.01
    done
}

# hold_wait S: sleep S seconds showing a countdown, noting each second when
# every worker's line count last moved (hold_watch). The sleep is a nap
# (lib/common.sh): a stop signal is handled at once, not after the sleep.
hold_wait() {
    local left
    for ((left = $1; left > 0; left--)); do
        [ "$quiet" = 1 ] || progress '  %-17s %8s  holding with heartbeats every %ss: %4ds left ' \
            "$contender" "$conns" "$heartbeat" "$left" >&2
        hold_watch
        nap 1
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

# perf_phase begin|on|off|end PHASE (--perf 1; nothing otherwise): the CPU
# anatomy's window over PHASE (ramp, hold). begin: perf record attached to the
# server's processes, events off (before the phase's CPU baseline); on: the
# processes' CPU nanoseconds (obs PHASE_ns0), then sampling on; off: sampling
# off (its acknowledgement before the reading: the measured window holds the
# sampled one), then the nanoseconds again (PHASE_ns1); end: perf stopped,
# whatever its state (one whose disable failed would run on), and what came
# of it: obs perf_PHASE (ok, "unavailable: why" or "failed: why"; the data
# file is kept only when ok) and perf_warning_PHASE (samples it lost).
perf_phase() {
    [ "$perf" = 1 ] || return 0
    local ph=$2 pcsv
    case $1 in
        begin)
            PERF_STATE="unavailable: $PERF_CAUSE"
            [ -n "$PERF_BIN" ] || return 0
            rm -f "$out/$ph.data"
            pcsv=$(tr -s ' ' ',' <<<"$pids"); pcsv=${pcsv%,}; pcsv=${pcsv#,}
            if perf_start "$out/$ph.data" "$pcsv" "$out/perf-$ph.log"; then
                PERF_STATE=ok
            else
                PERF_STATE="failed: $PERF_CAUSE"; perf_cleanup
            fi ;;
        on)
            obs "${ph}_ns0" "$(cpu_ns_by_pid $pids)"
            if [ "$PERF_STATE" = ok ] && ! perf_enable; then PERF_STATE="failed: $PERF_CAUSE"; perf_cleanup; fi ;;
        off)
            if [ "$PERF_STATE" = ok ] && ! perf_disable; then PERF_STATE="failed: $PERF_CAUSE"; fi
            obs "${ph}_ns1" "$(cpu_ns_by_pid $pids)" ;;
        end)
            # (a perf that does not stop cleanly may still have written its data:
            # the folding judges)
            if [ "$PERF_PID" != 0 ] && ! perf_stop && [ "$PERF_STATE" = ok ]; then
                log "$contender: perf record did not stop cleanly (see $out/perf-$ph.log)"
            fi
            [ "$PERF_STATE" = ok ] || rm -f "$out/$ph.data"
            obs "perf_$ph" "$PERF_STATE"
            obs "perf_warning_$ph" "$(perf_lost "$out/perf-$ph.log")" ;;
    esac
    return 0
}
