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
# received is in it, and the lines in flight at its stop (lib/pushmon.py
# settled: once it stops moving). lib/judge.py notes a count under the
# client's push_received.
scenario_after_client() {
    R[push_pushed]=$("$PYTHON" "$C1M_ROOT/harness/lib/pushmon.py" settled --stats "$stats" \
        --c1m-stat "$BUILD/c1m-stat")
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
}

# The broadcast's watch (lib/pushmon.py broadcast): started before the
# client's window opens (its start-up overlaps that wait, not the gap between
# the window and the signal), told when the signal goes by its go file; it
# watches the server's side (N more lines handed to the kernel, paced lines
# included) and the client's "reached all" line within PUSH_WAIT of the
# signal, and judges the wait.
push_mon_pid=""
push_mon_stop() {
    stop_pid "$push_mon_pid" 5
    push_mon_pid=""
    rm -f "$out/broadcast-go" "$out/broadcast-go.ready"
    [ -s "$out/broadcast.json" ] || rm -f "$out/broadcast.json"   # (stopped: it printed nothing)
}

push_broadcast() {
    local wait=${PUSH_WAIT:-300} log=$out/client.log p0 t_sig rc f=() spids=() p tree stray=()
    if [ "${h_dead:-0}" -gt 0 ] || [ "${h_parent_gone:-0}" -gt 0 ]; then
        scenario_fail "server died before the broadcast: ${h_dead:-0} worker(s) dead$([ "${h_parent_gone:-0}" -gt 0 ] && echo ", parent gone"); no broadcast" server-died
        return
    fi
    rm -f "$out/broadcast-go" "$out/broadcast-go.ready" "$out/broadcast.json"
    "$PYTHON" "$C1M_ROOT/harness/lib/pushmon.py" broadcast --stats "$stats" --c1m-stat "$BUILD/c1m-stat" \
        --client-log "$log" --conns "$conns" --wait "$wait" --go "$out/broadcast-go" --root $$ \
        > "$out/broadcast.json" &
    push_mon_pid=$!
    state_pid pushmon "$push_mon_pid"
    on_exit push_mon_stop
    go_ready "$out/broadcast-go" "$push_mon_pid"
    kill -USR1 "$cpid" 2>/dev/null || { push_mon_stop; scenario_fail "the client is gone"; return; }
    wait_line "$log" '^c1m-client: SIGUSR1: push window open from [0-9]+ us' 10 \
        || { push_mon_stop; scenario_fail "the client did not open its push window within 10 s"; return; }
    mapfile -t spids < <(push_worker_pids)
    [ ${#spids[@]} -gt 0 ] || { push_mon_stop; scenario_fail "no server worker pid in the counters file"; return; }
    # SIGUSR1 ends a process that does not handle it: only to the server's own
    tree=" $(proc_tree "$spid") "
    for p in "${spids[@]}"; do
        [[ $tree == *" $p "* ]] && [ "$(pids_gone "$p")" = 0 ] || stray+=("$p")
    done
    if [ ${#stray[@]} -gt 0 ]; then
        push_mon_stop
        scenario_fail "server died before the broadcast: worker pid(s) ${stray[*]} of the counters file no longer a live process of the server; no broadcast" server-died
        return
    fi
    p0=$(stat_get "$stats" pushed)
    t_sig=${EPOCHREALTIME/./}
    R[broadcast_sent_us]=$t_sig
    echo "$t_sig${p0:+ $p0}" > "$out/broadcast-go"
    kill -USR1 "${spids[@]}" 2>/dev/null
    log "$contender: broadcast to $conns connections (SIGUSR1 to ${#spids[@]} server workers)"
    wait_child "$push_mon_pid"; rc=$?
    push_mon_pid=""
    rm -f "$out/broadcast-go" "$out/broadcast-go.ready"
    if [ "$rc" != 0 ] || [ ! -s "$out/broadcast.json" ]; then
        scenario_fail "the broadcast's watch (lib/pushmon.py) exited $rc: no verdict on the broadcast"
        return
    fi
    scenario_record "$out/broadcast.json"
    mapfile -t f < <("$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$out/broadcast.json" failed why)
    [ -z "${R[broadcast_s]:-}" ] \
        || log "$contender: the broadcast reached all ${R[broadcast_reached]} connections in ${R[broadcast_s]} s"
    [ -z "${f[0]:-}" ] || scenario_fail "${f[1]:-}" "${f[0]}"
}
