# shellcheck shell=bash
# scenarios/stall.sh - stalled readers (issue 10 §2): the server pushes a line
# of STALL_PUSH_BYTES to every connection every STALL_PUSH_EVERY seconds; after
# the hold (and its end-of-hold counts) a fraction of the client's connections
# stops reading (c1m-client --stall F --stall-on-signal, then SIGUSR2: the
# client no longer looks at those sockets, not even for a close), so what the
# server sends them piles up: in the client's receive queue, the server's send
# queue, then the server's own buffers, until the server cuts them as slow (the
# bounded idioms) or grows until the memory guard stops it.
#
# Variants: every fraction of STALL (default 0.01,0.1; 0 = the same run with
# nobody stalled, the reference) with every server send buffer of STALL_SNDBUF
# (default "default,0": the server's own --sndbuf 4096, and 0 = kernel
# autotuning up to tcp_wmem's max, seed 002's experiment): "stall=0.01",
# "stall=0.01-sndbuf0", ... The server's --max-pending is its default (4096).
# STALL_PUSH_FLOW (default honour) picks the push idiom of the Python
# contenders: honour (flow control respected: the bounded idioms) or ignore
# (py_server --push-flow ignore: every push written whatever is queued, so a
# stalled peer's buffer grows until the memory guard stops the run: issue 10's
# "what an unbounded idiom costs"; contenders without it are `unsupported`).
#
# The phase's monitor, lib/stallmon.py, samples once a second
# (OUT/stall.jsonl, and OUT/stall.csv: seconds since the stall,
# sockstat TCP mem pages and orphans (machine-wide figures: only inuse and tw
# are a namespace's own; the quiet gate leaves the run's sockets the only ones), the server's slow count
# and RssAnon, MemAvailable) and ends when every stalled connection was cut
# (the server's `slow` counter grew by the number stalled: "cut"), when nothing
# changed for STALL_STEADY seconds, and enough push intervals that a filling
# peer would show (stall_steady_s; "steady": no cut, and TCP memory and the
# server's RssAnon moved less than a tenth of what the stalled peers would pin
# at the push rate: the queues are full and stay), at STALL_WAIT seconds ("wait": still filling),
# when MemAvailable less the reclaimable slab (py_server/cli_rules.py mem_usable_kib) fell under the
# run's floor (status oom-guard: the finding, the memory an unbounded idiom
# took, is in the note), or when a server process died (server-died). Then, once,
# `ss -tmn` over the server's sockets (slow at 1M sockets: stall_ss_s says how
# long it took).
#
# Keys (result.json / runs.csv), per stalled connection unless said:
#   stall_fraction, stall_sndbuf, stalled (the client's count), stall_end,
#   stall_phase_s, stall_tcp_mem_bytes_per_stalled (peak sockstat mem - before,
#   x the page size / stalled: both ends, the client's receive queue included),
#   stall_user_bytes_per_stalled (peak server RssAnon - before), stall_sendq_bytes_per_stalled
#   and stall_wmem_bytes_per_stalled (ss at the end: Send-Q and skmem w summed over
#   the server's sockets, cut ones still draining included), stall_ss_sockets,
#   stall_ss_s, stall_tcp_mem0_kib / _peak_kib / _end_kib, stall_orphans_end,
#   stall_cut (connections the server closed as slow during the phase),
#   stall_cut_first_s / stall_cut_last_s (stall until the first / last of them,
#   from the 10 Hz ramp.csv samples), stall_push_bytes_cfg, stall_push_every_s,
#   stall_push_flow (STALL_PUSH_FLOW),
#   stall_avail_drop_bytes_per_stalled (MemAvailable just before the stall minus
#   its low during the phase, / stalled: what the machine lost, see below),
#   stall_avail0_kib, stall_avail_min_kib.
#
# Why MemAvailable as well as sockstat: a socket is charged (sockstat mem, skmem
# w) only the bytes copied into its skbs, but tcp_sendmsg copies them into the
# sending task's page fragment, a 32 KiB compound page shared by whatever that
# task sent next (skb_page_frag_refill, SKB_FRAG_PAGE_ORDER). A page goes back
# only when every fragment in it is freed, so one line held for a stalled peer
# keeps the lines sent to 30 reading peers around it, freed or not, in memory.
# With 1 KiB pushes interleaved over many connections, the machine loses many
# times what the stalled sockets are charged, both ends (7-9x at 10% stalled,
# 6-24x at 1%: results/reference-stall-100k-lost; 0.8x with every peer stalled:
# reference-stall-pagefrag-5k), and only MemAvailable sees it. The figure is a
# difference of machine-wide samples: whatever else takes memory meanwhile is
# in it too, divided by the stalled count, so a small count makes it noisy.

scenario_knobs() { echo STALL STALL_SNDBUF STALL_PUSH_BYTES STALL_PUSH_EVERY STALL_PUSH_FLOW STALL_WAIT STALL_STEADY; }
# the servers push to the stalled readers; STALL_PUSH_FLOW=ignore, in the
# naive idiom (contenders.sh push-flow)
scenario_needs() { echo push; [ "${STALL_PUSH_FLOW:-honour}" = ignore ] && echo push-flow; return 0; }

stall_fracs() { tr ', ' '\n\n' <<<"${STALL:-0.01,0.1}" | sed '/^$/d'; }
stall_bufs() { tr ', ' '\n\n' <<<"${STALL_SNDBUF:-default,0}" | sed '/^$/d'; }

scenario_check() {
    local f b e=${STALL_PUSH_EVERY:-1} pb=${STALL_PUSH_BYTES:-1024}
    [ -n "$(stall_fracs)" ] || { echo "STALL: empty" >&2; return 1; }
    for f in $(stall_fracs); do
        [[ $f =~ ^(0|1|0?[.][0-9]+|1[.]0*)$ ]] && awk -v f="$f" 'BEGIN{exit !(f >= 0 && f <= 1)}' \
            || { echo "STALL: expects fractions 0..1 (e.g. 0.01,0.1): $f" >&2; return 1; }
    done
    [ -n "$(stall_bufs)" ] || { echo "STALL_SNDBUF: empty" >&2; return 1; }
    for b in $(stall_bufs); do
        [[ $b =~ ^(default|0)$ ]] || { echo "STALL_SNDBUF: expects default and/or 0 (kernel autotuning): $b" >&2; return 1; }
    done
    in_range "$pb" 32 1025 || { echo "STALL_PUSH_BYTES: expects 32..1025: $pb" >&2; return 1; }
    [[ $e =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]] && awk -v e="$e" 'BEGIN{exit !(e >= 0.001 && e <= 86400)}' \
        || { echo "STALL_PUSH_EVERY: expects seconds 0.001..86400: $e" >&2; return 1; }
    [[ ${STALL_PUSH_FLOW:-honour} =~ ^(honour|ignore)$ ]] \
        || { echo "STALL_PUSH_FLOW: expects honour or ignore: ${STALL_PUSH_FLOW}" >&2; return 1; }
    in_range "${STALL_WAIT:-300}" 1 86400 || { echo "STALL_WAIT: expects whole seconds 1..86400: ${STALL_WAIT}" >&2; return 1; }
    in_range "${STALL_STEADY:-10}" 2 3600 || { echo "STALL_STEADY: expects whole seconds 2..3600: ${STALL_STEADY}" >&2; return 1; }
    return 0
}

scenario_variants() {
    local f b
    for f in $(stall_fracs); do
        for b in $(stall_bufs); do
            [ "$b" = default ] && echo "stall=$f" || echo "stall=$f-sndbuf0"
        done
    done
}

# The variant's parts: stall_frac_of / stall_buf_of VARIANT.
stall_frac_of() { local v=${1#stall=}; echo "${v%-sndbuf0}"; }
stall_buf_of() { [[ $1 == *-sndbuf0 ]] && echo 0 || echo default; }

scenario_server_args() {
    printf '%s ' --push "${STALL_PUSH_BYTES:-1024}" --push-every "${STALL_PUSH_EVERY:-1}"
    [ "${STALL_PUSH_FLOW:-honour}" = ignore ] && printf '%s ' --push-flow ignore
    [ "$(stall_buf_of "$variant")" = 0 ] && printf '%s ' --sndbuf 0
    echo
}

scenario_client_args() {
    local f
    f=$(stall_frac_of "$variant")
    awk -v f="$f" 'BEGIN{exit !(f > 0)}' && echo "--stall $f --stall-on-signal"
    return 0
}

# stall_mon ARGS...: lib/stallmon.py sample with the readers of this run:
# sockstat in the server's namespace, its counters file, the RssAnon of its
# processes (harness/README.md "Samplers": the phase's end, the window and
# the memory guard are its rules).
stall_mon() {
    # shellcheck disable=SC2154  # run_one.sh's
    "$PYTHON" "$C1M_ROOT/harness/lib/stallmon.py" sample --out "$out/stall.jsonl" \
        --sockstat "/proc/$spid/net/sockstat" --stats "$stats" --c1m-stat "$BUILD/c1m-stat" \
        --pids "$pids" --root "$$" "$@"
}

# stall_knobs: the knobs stallmon.py's rules read.
stall_knobs() {
    echo --steady "${STALL_STEADY:-10}" --push-bytes "${STALL_PUSH_BYTES:-1024}" --push-every "${STALL_PUSH_EVERY:-1}"
}

# the monitor's pid while it samples (stall_mon_stop, on exit)
stall_mon_pid=""
stall_mon_stop() { [ -z "$stall_mon_pid" ] || stop_pid "$stall_mon_pid" 5; stall_mon_pid=""; }

scenario_run() {
    local frac log=$out/client.log line n at_us wait=${STALL_WAIT:-300} steady t0 t_end end guard_note oom
    local usable slow0 f=()
    frac=$(stall_frac_of "$variant")
    R[stall_fraction]=$frac
    R[stall_sndbuf]=$(stall_buf_of "$variant")
    R[stall_push_bytes_cfg]=${STALL_PUSH_BYTES:-1024}
    R[stall_push_every_s]=${STALL_PUSH_EVERY:-1}
    R[stall_push_flow]=${STALL_PUSH_FLOW:-honour}
    # shellcheck disable=SC2046  # words
    steady=$("$PYTHON" "$C1M_ROOT/harness/lib/stallmon.py" steady-s $(stall_knobs))
    R[stall_steady_s]=$steady
    [ "$steady" -lt "$wait" ] || log "$contender: stall: the phase cannot end steady: it needs ${steady} s without change (STALL_PUSH_EVERY ${STALL_PUSH_EVERY:-1} s), STALL_WAIT is ${wait} s"
    rm -f "$out/stall.jsonl"
    stall_mon --once   # the "before" sample: TCP memory, RssAnon, slow, MemAvailable
    if ! awk -v f="$frac" 'BEGIN{exit !(f > 0)}'; then
        scenario_summary stallmon.py "$out/stall.json" "$out/stall.jsonl" || return 0
        R[stalled]=0 R[stall_end]=none
        return 0
    fi
    kill -USR2 "$cpid" 2>/dev/null || { scenario_fail "the client is gone"; return 0; }
    wait_line "$log" '^c1m-client: stalled [0-9]+ connections at [0-9]+ us' 30 \
        || { scenario_fail "the client did not report its stall within 30 s"; return 0; }
    line=$WAIT_LINE
    n=$(sed -n 's/.*stalled \([0-9]*\) connections.*/\1/p' <<<"$line")
    at_us=$(sed -n 's/.* at \([0-9]*\) us.*/\1/p' <<<"$line")
    R[stalled]=$n
    log "$contender: $n connections stalled ($frac of each client worker's), the server pushing"
    t0=$(now_s)
    # The phase's monitor (lib/stallmon.py) is the run's memory guard while
    # peers stall, and a starved guard comes too late: at 1M with 10% stalled
    # the machine fell ~1.8 GB between two passes 99 s apart, and the kernel's
    # OOM killer ended the harness. So it runs at a higher priority than the
    # server and the client (--nice -10), and it stops when the next sample
    # at the last one's pace would end under the floor (the "predicted"
    # oom-guard). It ends itself with the phase: cut, steady, oom-guard,
    # server-died or wait.
    on_exit stall_mon_stop
    # shellcheck disable=SC2046,SC2154  # words; run_one.sh's
    stall_mon --stalled "$n" --t0 "$t0" --wait "$wait" --floor "$min_avail" --csv "$out/stall.csv" \
        --server "$spid" --workers "$workers" --nice -10 $(stall_knobs) &
    stall_mon_pid=$!
    wait_child "$stall_mon_pid"
    stall_mon_pid=""
    # a failed summary: no end, no cut times, no ss (it may have ended in oom-guard)
    scenario_summary stallmon.py "$out/stall.json" "$out/stall.jsonl" || return 0
    mapfile -t f < <("$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$out/stall.json" \
        end t_end guard_note usable slow0)
    end=${f[0]:-wait} t_end=${f[1]:-$(now_s)} guard_note=${f[2]:-} usable=${f[3]:-} slow0=${f[4]:-}
    stall_t_end=$t_end
    R[stall_at_us]=$at_us
    # the first and the last slow close after the stall, from ramp.csv (the
    # keys always, null when nothing was cut: none means the step failed)
    if [ -n "$slow0" ] && [ -n "$at_us" ] && [ -s "$out/ramp.csv" ]; then
        scenario_record <("$PYTHON" "$C1M_ROOT/harness/lib/stallmon.py" cut-times "$out/ramp.csv" \
                              --slow0 "$slow0" --at-us "$at_us")
        [ -n "${R[stall_cut_first_s]+x}" ] || run_flag "unmeasured:stall_cut_first_s"
    fi
    # ss over 1M sockets takes ~2 min, while the stalled peers go on taking
    # memory: not when the machine is about to run out
    [ "$end" = oom-guard ] || stall_ss "$n"
    case $end in
        oom-guard)
            obs scenario_status oom-guard   # lib/judge.py
            R[note]="${R[note]:+${R[note]}; }stall: $guard_note"
            log "$contender: ${R[note]}" ;;
        server-died)
            oom=$(oom_killed - "$server_up_s" "$spid" $workers)
            [ -n "$oom" ] && oom=": the kernel's OOM killer killed $oom (dmesg), while the last sample read ${usable:-?} MiB of usable memory against the ${min_avail} MiB floor"
            scenario_fail "a server process died during the stall phase$oom" server-died ;;
    esac
    return 0
}

# stall_ss N: the server's sockets (sport = the server's port; every state but
# listening), their Send-Q and skmem w summed per stalled peer (lib/stallmon.py
# ss-sum), once, timed.
stall_ss() {
    local t0
    t0=$(now_s)
    scenario_record <(ip netns exec "$ns" ss -tmnH state connected "$(ports_filter "$port")" 2>/dev/null \
                          | "$PYTHON" "$C1M_ROOT/harness/lib/stallmon.py" ss-sum --stalled "$1")
    R[stall_ss_s]=$(elapsed "$t0" "$(now_s)")
    [ -n "${R[stall_ss_sockets]:-}" ] || run_flag "unmeasured:stall_ss_sockets"
}

# The push schedule from the hold to the phase's end (before ss, whose load
# is the harness's): the stalled peers are owed nothing until cut. A server
# behind it filled its stalled peers later than asked (push_kept_check).
# With STALL_PUSH_FLOW=ignore they are owed every line (the naive idiom
# writes to them all along, and those lines count as sent): otherwise half
# the peers stalled would let a server at half its schedule read 1.0.
stall_t_end=""
scenario_after_client() {
    local from=${ta:-${t1:-}} to=${stall_t_end:-${tsc1:-}} owed_none=${R[stalled]:-}
    [ "${STALL_PUSH_FLOW:-honour}" = ignore ] && owed_none=""
    if [ -n "$from" ] && [ -n "$to" ]; then
        push_kept_check "$from" "$to" "${STALL_PUSH_EVERY:-1}" "$owed_none" "${R[stall_at_us]:-}"
    else
        run_flag "unmeasured:push_kept"
    fi
}

# The slow cuts close the stalled connections: the end-of-hold counts are not
# taken again after the phase (a dead server process still is).
scenario_keeps_conns() { return 1; }
