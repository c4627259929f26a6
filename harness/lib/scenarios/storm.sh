# shellcheck shell=bash
# scenarios/storm.sh - the reconnect storm (issue 9 §2; interface: idle.sh).
#
# After the normal ramp and hold, every server process is killed at once
# (SIGKILL: the kernel closes every connection, and the client sees it as an
# EOF or a reset) and started again at once with the same command, as a
# supervisor would. The client reconnects each connection itself
# (c1m-client --reconnect now|backoff, one variant each). Measured from the
# kill: when the restarted server holds all N again (its own counters, polled
# every 10 ms), the curve of its open count and accept rate at 10 Hz
# (OUT/storm.csv), the namespace's ListenOverflows / ListenDrops / SYN
# retransmits / request-queue drops and SYN cookies during the storm, the
# restarted server's CPU and its peak memory until recovery. The client's
# reconnects and failures by errno are in its JSON (client_reconnect_* columns).
# harness/README.md "Scenario storm" documents the knobs and columns.
#
# Knobs (environment):
#   STORM_POLICY=now,backoff   the client policies, one variant (condition) each
#   STORM_BACKOFF_BASE_MS=100  --backoff-base of the backoff variant
#   STORM_BACKOFF_CAP_MS=10000 --backoff-cap of the backoff variant
#   STORM_TIMEOUT=300          seconds from the kill the recovery may take; a
#                              storm that does not recover is status storm-timeout

scenario_knobs() { echo STORM_POLICY STORM_BACKOFF_BASE_MS STORM_BACKOFF_CAP_MS STORM_TIMEOUT; }

# storm_policies: the policies of STORM_POLICY, once each, in the given order.
storm_policies() {
    local p items=() seen=" "
    IFS=', ' read -r -a items <<<"${STORM_POLICY-now,backoff}"
    for p in "${items[@]}"; do
        [[ $seen == *" $p "* ]] && continue
        seen+="$p "
        printf '%s\n' "$p"
    done
}

scenario_check() {
    local p n=0 base=${STORM_BACKOFF_BASE_MS:-100} cap=${STORM_BACKOFF_CAP_MS:-10000}
    if [ -n "${STORM_POLICY+x}" ] && [ -z "$STORM_POLICY" ]; then
        log "STORM_POLICY: set but empty (unset it for now,backoff)"; return 1
    fi
    while read -r p; do
        case "$p" in
            now|backoff) n=$((n + 1)) ;;
            *) log "STORM_POLICY: expects now and/or backoff (comma list): '$p'"; return 1 ;;
        esac
    done < <(storm_policies)
    [ "$n" -gt 0 ] || { log "STORM_POLICY: empty"; return 1; }
    in_range "$base" 1 3600000 || { log "STORM_BACKOFF_BASE_MS: expects milliseconds 1..3600000: $base"; return 1; }
    in_range "$cap" 1 3600000 || { log "STORM_BACKOFF_CAP_MS: expects milliseconds 1..3600000: $cap"; return 1; }
    [ "$cap" -ge "$base" ] || { log "STORM_BACKOFF_CAP_MS: $cap is below STORM_BACKOFF_BASE_MS $base"; return 1; }
    in_range "${STORM_TIMEOUT:-300}" 1 86400 \
        || { log "STORM_TIMEOUT: expects whole seconds 1..86400: ${STORM_TIMEOUT:-}"; return 1; }
}

scenario_variants() { storm_policies; }

scenario_client_args() {
    echo --reconnect "$variant"
    [ "$variant" = backoff ] \
        && echo --backoff-base "${STORM_BACKOFF_BASE_MS:-100}" --backoff-cap "${STORM_BACKOFF_CAP_MS:-10000}"
}

# storm_hwm_kib PIDS...: the sum of their VmHWM, each process's peak resident
# set over its life (the restarted processes are fresh: their peak since the
# restart, however briefly it lasted). Empty when none could be read.
storm_hwm_kib() {
    local p h sum="" 
    for p in "$@"; do
        h=$(awk '/^VmHWM:/{print $2}' "/proc/$p/status" 2>/dev/null)
        [[ $h =~ ^[0-9]+$ ]] && sum=$(( ${sum:-0} + h ))
    done
    echo "$sum"
}

# storm_curve RAMP_CSV KILL_UNIX_MS: the server's counters (lib's c1m-stat
# --csv --watch 100, which follows the restarted server's new file) from 2 s
# before the kill on: seconds since the kill, open, accepted, the accept rate
# since the previous sample (/s; 0 where the counters restart) and dead workers.
storm_curve() {
    awk -F, -v k="$2" '
        BEGIN { print "seconds,open,accepted,rate_per_s,workers_dead" }
        NR == 1 || $1 !~ /^[0-9]+$/ || $1 < k - 2000 { next }
        { rate = 0
          if (have && $1 > pt && $3 >= pa) rate = ($3 - pa) * 1000 / ($1 - pt)
          printf "%.3f,%d,%d,%.0f,%d\n", ($1 - k) / 1000, $2, $3, rate, $8
          pt = $1; pa = $3; have = 1 }' "$1"
}

# the recovery watch's pid while it runs (storm_mon_stop, on exit)
storm_mon_pid=""
storm_mon_stop() { [ -z "$storm_mon_pid" ] || stop_pid "$storm_mon_pid" 5; storm_mon_pid=""; }

scenario_run() {
    local limit=${STORM_TIMEOUT:-300} old n_old i t_kill t_restart t_ready t_done
    local failed="" why="" f=()
    R[storm_timeout_s]=$limit
    # A server already dead at the end of the hold (run_one.sh's health): no
    # storm; its pids may already name other processes.
    if [ "${h_dead:-0}" -gt 0 ] || [ "${h_parent_gone:-0}" -gt 0 ]; then
        scenario_fail "server died before the storm: ${h_dead:-0} worker(s) dead$([ "${h_parent_gone:-0}" -gt 0 ] && echo ", parent gone"); no storm" server-died
        return 0
    fi
    # the namespace's TCP drop counters: deltas over the storm (lib/stormmon.py)
    rm -f "$out/storm.jsonl"
    "$PYTHON" "$C1M_ROOT/harness/lib/stormmon.py" sample --once --out "$out/storm.jsonl" --netstat "/proc/$spid/net/netstat"
    obs storm_machine0 "$(machine_cpu)"
    old=$(proc_tree "$spid")
    n_old=$(wc -w <<<"$old")
    if [ "$variant" = backoff ]; then
        R[storm_backoff_base_ms]=${STORM_BACKOFF_BASE_MS:-100}
        R[storm_backoff_cap_ms]=${STORM_BACKOFF_CAP_MS:-10000}
    fi
    # Restart as a supervisor would: once the old processes are gone (their
    # sockets closed), bounded. (stderr closed: bash's "Killed" notice of its
    # job, printed after the next command, is no news here)
    {
        t_kill=$(now_s)
        # shellcheck disable=SC2086  # pids are words
        kill -KILL $old
        # A killed server cannot remove its counters file: the restarted one
        # renames a new one over the path (c1m-stat follows it), until then none.
        rm -f "$stats"
        for ((i = 0; i < 300; i++)); do
            [ "$(pids_gone $old)" -ge "$n_old" ] && break
            sleep 0.1
        done
    } 2>/dev/null
    R[storm_kill_unix_ms]=$(awk -v t="$t_kill" 'BEGIN{printf "%.0f", t * 1000}')
    if [ "$(pids_gone $old)" -lt "$n_old" ]; then
        # never wait for a process SIGKILL did not end: run_one.sh's
        # stop_server (its $spid still this server) tries again at exit
        scenario_fail "$(( n_old - $(pids_gone $old) )) of the $n_old killed server processes still there 30 s after SIGKILL" storm-kill-failed
        storm_curve "$out/ramp.csv" "${R[storm_kill_unix_ms]}" > "$out/storm.csv"
        return 0
    fi
    # Reaped here: its pid may be reused from then on, so no stop at exit may
    # name it (run_one.sh's stop_server reads $spid; emptied before the reap).
    local dead_spid=$spid
    spid=""
    wait "$dead_spid" 2>/dev/null
    t_restart=$(now_s)
    obs storm_t_restart "$t_restart"
    R[storm_restart_s]=$(elapsed "$t_kill" "$t_restart")
    # (run_one.sh's stop_server, registered once, stops the $spid this sets)
    server_launch "$out/server-restart.log"
    state_pid server-restart "$spid"
    if ! "$BUILD/c1m-stat" --wait-ready --timeout 60 "$stats" > /dev/null 2>&1; then
        scenario_fail "the restarted server did not become ready: $(tail -n 1 "$out/server-restart.log" | tr -d '\n=' | cut -c1-160)" storm-restart-failed
        storm_curve "$out/ramp.csv" "${R[storm_kill_unix_ms]}" > "$out/storm.csv"
        return 0
    fi
    t_ready=$(now_s)
    R[storm_ready_s]=$(elapsed "$t_kill" "$t_ready")
    pids=$(server_pids "$stats" "$spid")
    workers=$(tr ' ' '\n' <<<"$pids" | awk -v p="$spid" '$1 != "" && $1 != p' | tr '\n' ' ')
    R[storm_server_workers]=$(wc -w <<<"$workers")
    # Recovery: until the restarted server holds all N (its counters, polled
    # every 10 ms by c1m-stat), watched by lib/stormmon.py: its PSS sampled
    # about once a second (its peak RSS is exact: VmHWM at the end).
    on_exit storm_mon_stop
    "$PYTHON" "$C1M_ROOT/harness/lib/stormmon.py" sample --out "$out/storm.jsonl" --stats "$stats" \
        --c1m-stat "$BUILD/c1m-stat" --conns "$conns" --t-kill "$t_kill" --timeout "$limit" \
        --server "$spid" --client "$cpid" --pids "$pids" --client-log "$out/client.log" \
        --netstat "/proc/$spid/net/netstat" --root "$$" --label "$contender" &
    storm_mon_pid=$!
    wait_child "$storm_mon_pid"
    storm_mon_pid=""
    # a failed summary: no recovery time, no CPU over it (the restarted server is
    # stopped by run_one.sh as on every path)
    scenario_summary stormmon.py "$out/storm.json" "$out/storm.jsonl" --t-kill "$t_kill" || return 0
    mapfile -t f < <("$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$out/storm.json" failed why t_done)
    failed=${f[0]:-} why=${f[1]:-} t_done=${f[2]:-$(now_s)}
    [ -z "$failed" ] || scenario_fail "$why" "$failed"
    # shellcheck disable=SC2086
    R[storm_server_rss_peak_kib]=$(storm_hwm_kib $pids)
    # the restarted server's whole life so far, its start-up and the recovery:
    # its CPU ticks (lib/judge.py derives storm_server_cpu_s and _pct, and the
    # machine's storm_machine_cpu_pct)
    # shellcheck disable=SC2086
    obs storm_cpu "$(cpu_ticks $pids)"
    obs storm_machine1 "$(machine_cpu)"
    obs storm_t_done "$t_done"
    # The curve ends with the state reached: the sampler's next line (bounded).
    local done_ms
    done_ms=$(awk -v t="$t_done" 'BEGIN{printf "%.0f", t * 1000}')
    for ((i = 0; i < 20; i++)); do
        [[ $(tail -n 1 "$out/ramp.csv" 2>/dev/null) =~ ^([0-9]+), ]] \
            && [ "${BASH_REMATCH[1]}" -ge "$done_ms" ] && break
        sleep 0.1
    done
    storm_curve "$out/ramp.csv" "${R[storm_kill_unix_ms]}" > "$out/storm.csv"
    return 0
}
