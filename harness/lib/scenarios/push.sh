# shellcheck shell=bash
# scenarios/push.sh - server push (issue 10 §1): every server pushes a line of
# PUSH_BYTES to each connection every PUSH_EVERY seconds (paced over the
# interval; --push-burst with PUSH_BURST=1) through the ramp and the hold; the
# client records each line's delivery latency, the lines received, the
# sequence gaps and the bytes (client/push_rx.h; the run's push_* columns come
# from its summary, lib/record.py). After the hold, with PUSH_BROADCAST=1, one
# broadcast: SIGUSR1 to every server worker at once (one line to each of its
# connections), timed until the last connection received it.
#
# The broadcast is timed from the client's side: SIGUSR1 to the client first
# opens its push window (client/push_watch.h: it prints "push window open" once
# its workers see the window's start), then the harness notes the time and
# signals the server's workers; the client prints "push window reached all N
# reading connections, last at USEC" once every connection got a line sent in
# the window. broadcast_s = that last receipt - the moment the harness signalled
# the servers. A paced line sent between the window's opening and the signal
# (the harness waits for the client's line, polling every 50 ms) can reach a
# connection before the broadcast does: with PUSH_EVERY=30 about 0.05/30 of the
# connections, each then counted at its paced line's receipt.
#
# Keys set (result.json / runs.csv): push_bytes_cfg, push_every_s, broadcast_s,
# broadcast_reached, broadcast_sent_us, broadcast_server_s (until the server's
# counters show N more lines handed to the kernel), push_pushed (the server's
# `pushed` counter once the client has stopped: never under the client's
# push_received, which a note would say). Status: `broadcast-timeout` when
# the broadcast had not reached every connection after PUSH_WAIT seconds (the
# run's other figures stand; the broadcast figure is empty); `server-died`,
# no signal sent, when a worker died before it (run_one.sh's health check), or
# a worker pid of the counters file is no longer a live process of the server
# (a pid freed by a dead worker may name an unrelated process by then).

scenario_knobs() { echo PUSH_BYTES PUSH_EVERY PUSH_BURST PUSH_BROADCAST PUSH_WAIT; }
# paced pushing needs --push-every; a broadcast alone only --push and SIGUSR1
scenario_needs() {
    if awk -v e="${PUSH_EVERY:-30}" 'BEGIN{exit !(e == 0)}'; then echo broadcast; else echo push; fi
}

# push_num VALUE: a decimal number (digits, at most one point) - for awk.
push_num() { [[ $1 =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]]; }

scenario_check() {
    local b=${PUSH_BYTES:-1024} e=${PUSH_EVERY:-30} burst=${PUSH_BURST:-0}
    local bc=${PUSH_BROADCAST:-1} w=${PUSH_WAIT:-300}
    in_range "$b" 32 1025 || { echo "PUSH_BYTES: expects 32..1025 (one line with its newline): $b" >&2; return 1; }
    push_num "$e" && awk -v e="$e" 'BEGIN{exit !(e == 0 || (e >= 0.001 && e <= 86400))}' \
        || { echo "PUSH_EVERY: expects seconds 0.001..86400, or 0 (broadcast only): $e" >&2; return 1; }
    [[ $burst =~ ^[01]$ ]] || { echo "PUSH_BURST: expects 0 (paced) or 1 (all at once): $burst" >&2; return 1; }
    [[ $bc =~ ^[01]$ ]] || { echo "PUSH_BROADCAST: expects 0 or 1: $bc" >&2; return 1; }
    in_range "$w" 1 86400 || { echo "PUSH_WAIT: expects whole seconds 1..86400: $w" >&2; return 1; }
    if awk -v e="$e" 'BEGIN{exit !(e == 0)}'; then
        [ "$bc" = 1 ] || { echo "PUSH_EVERY: 0 with PUSH_BROADCAST=0 pushes nothing" >&2; return 1; }
        [ "$burst" = 0 ] || { echo "PUSH_BURST: needs PUSH_EVERY above 0" >&2; return 1; }
    fi
    return 0
}

scenario_server_args() {
    local e=${PUSH_EVERY:-30}
    printf '%s ' --push "${PUSH_BYTES:-1024}"
    awk -v e="$e" 'BEGIN{exit !(e > 0)}' && printf '%s ' --push-every "$e"
    [ "${PUSH_BURST:-0}" = 1 ] && printf '%s ' --push-burst
    echo
}

# push_wait_line FILE PATTERN SECONDS: 0 once FILE has a line matching
# PATTERN (grep -E), polling every 50 ms; 1 after SECONDS.
push_wait_line() {
    local i n=$(($3 * 20))
    for ((i = 0; i < n; i++)); do
        grep -qE -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# push_worker_pids: the server's worker pids, from its counters file.
push_worker_pids() {
    "$BUILD/c1m-stat" "$stats" 2>/dev/null | sed -n 's/^worker=[0-9]* pid=\([0-9]*\).*/\1/p' | awk '$1 > 0'
}

scenario_run() {
    R[push_bytes_cfg]=${PUSH_BYTES:-1024}
    R[push_every_s]=${PUSH_EVERY:-30}
    if [ "${PUSH_BROADCAST:-1}" = 1 ]; then
        push_broadcast
    fi
}

# The server's `pushed` once the client has stopped: every line the client
# received is in it, and the lines in flight at its stop. Read when it has
# not moved for 0.3 s (the Python servers publish at 20 Hz), within 5 s.
scenario_after_client() {
    local n last="" same=0 k
    for ((k = 0; k < 50; k++)); do
        n=$(stat_get "$stats" pushed)
        [ -n "$n" ] && [ "$n" = "$last" ] && same=$((same + 1)) || same=0
        [ "$same" -ge 3 ] && break
        last=$n
        sleep 0.1
    done
    R[push_pushed]=$last
    # the paced schedule, over the hold (all connections open, before the
    # broadcast). A burst schedule sends whole intervals at once: a hold
    # shorter than two intervals says nothing of it.
    if awk -v e="${PUSH_EVERY:-30}" 'BEGIN{exit !(e > 0)}'; then
        if [ "${PUSH_BURST:-0}" = 1 ]; then
            R[push_kept_why]="PUSH_BURST=1: the check judges a paced schedule"
            run_flag "unmeasured:push_kept"
        elif [ -n "${ta:-}" ] && [ -n "${td:-}" ]; then
            push_kept_check "$ta" "$td" "${PUSH_EVERY:-30}"
        else
            R[push_kept_why]="HOLD=0: no window"
            run_flag "unmeasured:push_kept"
        fi
    fi
    local rx
    rx=$("$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$out/client.json" push_received 2>/dev/null)
    if [[ $last =~ ^[0-9]+$ ]] && [[ $rx =~ ^[0-9]+$ ]] && [ "$last" -lt "$rx" ]; then
        # a line is counted when handed over: fewer than received is a wrong count
        R[note]="${R[note]:+${R[note]}; }push: the server counted $last lines pushed, the client received $rx"
        log "$contender: ${R[note]##*; }"
    fi
}

push_broadcast() {
    local wait=${PUSH_WAIT:-300} log=$out/client.log p0 t_sig line last n k t_srv left spids=() p tree stray=()
    if [ "${h_dead:-0}" -gt 0 ] || [ "${h_parent_gone:-0}" -gt 0 ]; then
        scenario_fail "server died before the broadcast: ${h_dead:-0} worker(s) dead$([ "${h_parent_gone:-0}" -gt 0 ] && echo ", parent gone"); no broadcast" server-died
        return
    fi
    kill -USR1 "$cpid" 2>/dev/null || { scenario_fail "the client is gone"; return; }
    push_wait_line "$log" '^c1m-client: SIGUSR1: push window open from [0-9]+ us' 10 \
        || { scenario_fail "the client did not open its push window within 10 s"; return; }
    mapfile -t spids < <(push_worker_pids)
    [ ${#spids[@]} -gt 0 ] || { scenario_fail "no server worker pid in the counters file"; return; }
    # SIGUSR1 ends a process that does not handle it: only to the server's own
    tree=" $(proc_tree "$spid") "
    for p in "${spids[@]}"; do
        [[ $tree == *" $p "* ]] && [ "$(pids_gone "$p")" = 0 ] || stray+=("$p")
    done
    if [ ${#stray[@]} -gt 0 ]; then
        scenario_fail "server died before the broadcast: worker pid(s) ${stray[*]} of the counters file no longer a live process of the server; no broadcast" server-died
        return
    fi
    p0=$(stat_get "$stats" pushed)
    t_sig=${EPOCHREALTIME/./}
    R[broadcast_sent_us]=$t_sig
    kill -USR1 "${spids[@]}" 2>/dev/null
    log "$contender: broadcast to $conns connections (SIGUSR1 to ${#spids[@]} server workers)"
    # the server's side: N more lines handed to the kernel (paced lines count too)
    t_srv=""
    for ((k = 0; k < wait * 20; k++)); do
        n=$(stat_get "$stats" pushed)
        if [ -n "$n" ] && [ -n "$p0" ] && [ "$n" -ge $((p0 + conns)) ]; then
            t_srv=$(awk -v a="$t_sig" -v b="${EPOCHREALTIME/./}" 'BEGIN{printf "%.3f", (b - a) / 1e6}')
            break
        fi
        grep -qE '^c1m-client: push window reached all' "$log" 2>/dev/null && break
        sleep 0.05
    done
    R[broadcast_server_s]=$t_srv
    # PUSH_WAIT counts from the signal, whatever the server's side took
    left=$(( wait - (${EPOCHREALTIME/./} - t_sig) / 1000000 ))
    [ "$left" -ge 1 ] || left=1
    if ! push_wait_line "$log" '^c1m-client: push window reached all [0-9]+ reading connections, last at [0-9]+ us' "$left"; then
        R[broadcast_reached]=""
        scenario_fail "the broadcast had not reached every connection after ${wait}s" broadcast-timeout
        return
    fi
    line=$(grep -m1 -E '^c1m-client: push window reached all' "$log")
    n=$(sed -n 's/.*reached all \([0-9]*\) reading.*/\1/p' <<<"$line")
    last=$(sed -n 's/.*last at \([0-9]*\) us.*/\1/p' <<<"$line")
    R[broadcast_reached]=$n
    R[broadcast_s]=$(awk -v a="$t_sig" -v b="$last" 'BEGIN{printf "%.6f", (b - a) / 1e6}')
    log "$contender: the broadcast reached all $n connections in ${R[broadcast_s]} s"
    if awk -v s="${R[broadcast_s]}" -v w="$wait" 'BEGIN{exit !(s > w)}'; then
        scenario_fail "the broadcast took ${R[broadcast_s]} s, over PUSH_WAIT=${wait}s" broadcast-timeout
    fi
}
