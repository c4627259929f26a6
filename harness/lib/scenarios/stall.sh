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
# The phase samples once a second (OUT/stall.csv: seconds since the stall,
# sockstat TCP mem pages and orphans (machine-wide figures: only inuse and tw
# are a namespace's own; the quiet gate leaves the run's sockets the only ones), the server's slow count
# and RssAnon, MemAvailable) and ends when every stalled connection was cut
# (the server's `slow` counter grew by the number stalled: "cut"), when nothing
# changed for STALL_STEADY seconds, and enough push intervals that a filling
# peer would show (stall_steady_s; "steady": no cut, and TCP memory and the
# server's RssAnon moved less than a tenth of what the stalled peers would pin
# at the push rate: the queues are full and stay), at STALL_WAIT seconds ("wait": still filling),
# when MemAvailable less the reclaimable slab (mem_usable_kib) fell under the
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

# stall_sockstat: "mem_pages orphans" of sockstat's TCP line (machine-wide).
stall_sockstat() {
    ip netns exec "$ns" awk '$1=="TCP:"{for (i = 2; i < NF; i += 2) v[$i] = $(i + 1); print v["mem"] + 0, v["orphan"] + 0}' /proc/net/sockstat 2>/dev/null
}

# stall_still_pages N SECONDS: how far (pages) sockstat's TCP mem may move in
# SECONDS and still count as "nothing moves" with N stalled: a tenth of what N
# peers would pin if every line to them were held (N x STALL_PUSH_BYTES per
# STALL_PUSH_EVERY), plus 2. Scaled by the stalled peers' own rate, not by the
# machine's total: with 1M reading peers the total (~800,000 pages) swings by
# 2-28% between samples, and 1% of it hid 10,000 peers filling at one line per
# 20 s (pyext at 1M ended "steady" after 53 s, nothing cut, 2026-12-04).
stall_still_pages() {
    local page
    page=$(getconf PAGESIZE)
    awk -v n="$1" -v s="$2" -v b="${STALL_PUSH_BYTES:-1024}" -v e="${STALL_PUSH_EVERY:-1}" -v p="$page" \
        'BEGIN { printf "%d\n", n * b * s / e / p / 10 + 2 }'
}

# stall_steady_s: the seconds without change that end the phase: STALL_STEADY,
# and at least the push intervals in which a stalled peer still filling takes
# ten ninths of what can hide from the check. What hides: sockstat counts the
# pages the sockets reserved, and a socket keeps up to a page reserved after
# its acked lines are freed (one at each end), and the server's
# --max-pending (4096, the default the scenario runs) in its userspace. Over
# fewer intervals a filling peer can move TCP memory by less than the
# tolerance (a tenth of its lines): c at 1M with 10% stalled, 4 KiB peers and
# a line every 30 s ended "steady" 58 s after the stall, nothing cut and every
# stalled peer still taking lines; over 10 s TCP memory had moved 256 pages
# (sockstat's counter also moves in per-CPU batches of 256) where the
# tolerance was 835 (2026-12-04). With 1 KiB lines: 14 intervals.
stall_steady_s() {
    local page
    page=$(getconf PAGESIZE 2>/dev/null)
    awk -v s="${STALL_STEADY:-10}" -v e="${STALL_PUSH_EVERY:-1}" -v b="${STALL_PUSH_BYTES:-1024}" \
        -v p="${page:-4096}" -v mp=4096 \
        'function ceil(x) { return (x == int(x)) ? x : int(x) + 1 }
         BEGIN { w = ceil(ceil((2 * p + mp) / (0.9 * b)) * e); if (w < s) w = s; print w }'
}

# stall_window MEM SLOW [RSS]: true while MEM stays within $still_tol pages of
# the window's first sample, SLOW (the server's cut count) has not moved since
# it, and RSS (the server's RssAnon, KiB) within $still_tol pages plus
# STALL_RSS_SLACK_KIB of it; otherwise this sample opens a new window
# (still_since, still_mem, still_slow, still_rss); so does an RSS read at one
# end of the window and not the other. Against the window's first
# sample, not the previous one: a queue that fills slowly moves little between
# two samples, not over a window. The RSS term: a server that buffers in
# userspace without limit (STALL_PUSH_FLOW=ignore) keeps the kernel's queues
# full and flat while its own memory grows; the slack is the allocator's noise
# (small: at 2k connections with a 2 s window, 8 MiB of slack hid a naive
# server's growth while it pushed at a third of its schedule, CI 2026-12-05).
STALL_RSS_SLACK_KIB=2048
stall_window() {
    local d r=${3:-}
    if [ -n "$still_since" ] && [ "$2" = "$still_slow" ]; then
        d=$(( $1 - still_mem ))
        [ "$d" -lt 0 ] && d=$(( -d ))
        if [ "$d" -le "$still_tol" ]; then
            # no RssAnon at either end (a caller without it): TCP alone; at
            # one end only (a read that failed): a new window, below
            if [ -z "$r" ] && [ -z "$still_rss" ]; then
                return 0
            elif [ -n "$r" ] && [ -n "$still_rss" ]; then
                d=$(( r - still_rss ))
                [ "$d" -lt 0 ] && d=$(( -d ))
                [ "$d" -le $(( still_tol * ${page:-4096} / 1024 + STALL_RSS_SLACK_KIB )) ] && return 0
            fi
        fi
    fi
    still_since=$EPOCHSECONDS still_mem=$1 still_slow=$2 still_rss=$r
    return 1
}

# stall_guard AVAIL PREV_AVAIL FLOOR SECONDS (MiB; PREV_AVAIL may be empty;
# AVAIL is mem_usable_kib's MemAvailable less the reclaimable slab):
# says why and succeeds when the phase must stop: AVAIL under the floor, or
# falling so fast that the next sample, at the pace of the last SECONDS, would
# be under it (the "predicted" stop).
stall_guard() {
    local avail=$1 prev=$2 floor=$3
    [ -n "$avail" ] || return 1
    if [ "$avail" -lt "$floor" ]; then
        echo "usable memory ${avail} MiB (MemAvailable less the reclaimable slab), under the ${floor} MiB floor"
        return 0
    fi
    if [ -n "$prev" ] && [ $((2 * avail - prev)) -lt "$floor" ]; then
        echo "usable memory ${avail} MiB (MemAvailable less the reclaimable slab), which fell $((prev - avail)) MiB over the last $4 s: the next sample would have been under the ${floor} MiB floor"
        return 0
    fi
    return 1
}

scenario_run() {
    local frac log=$out/client.log line n at_us mem0 orph0 rss0 slow0 t0 wait=${STALL_WAIT:-300}
    local steady i mem orph slow rss avail mem_peak rss_peak still_mem=0 still_slow="" still_tol=0 still_rss=""
    local avail0 avail_kib avail_low gone
    local still_since="" prev_t t_dead end=wait t_end prev_usable="" usable usable_kib page guard_why="" oom
    page=$(getconf PAGESIZE 2>/dev/null)   # sockstat's mem is in pages
    page=${page:-4096}
    frac=$(stall_frac_of "$variant")
    R[stall_fraction]=$frac
    R[stall_sndbuf]=$(stall_buf_of "$variant")
    R[stall_push_bytes_cfg]=${STALL_PUSH_BYTES:-1024}
    R[stall_push_every_s]=${STALL_PUSH_EVERY:-1}
    R[stall_push_flow]=${STALL_PUSH_FLOW:-honour}
    steady=$(stall_steady_s)
    R[stall_steady_s]=$steady
    [ "$steady" -lt "$wait" ] || log "$contender: stall: the phase cannot end steady: it needs ${steady} s without change (STALL_PUSH_EVERY ${STALL_PUSH_EVERY:-1} s), STALL_WAIT is ${wait} s"
    read -r mem0 orph0 <<<"$(stall_sockstat)"
    read -r rss0 _ <<<"$(rss_kib $pids)"
    slow0=$(stat_get "$stats" slow)
    R[stall_tcp_mem0_kib]=$(( ${mem0:-0} * page / 1024 ))
    if ! awk -v f="$frac" 'BEGIN{exit !(f > 0)}'; then
        R[stalled]=0 R[stall_end]=none
        return 0
    fi
    avail0=$(mem_available_kib)
    kill -USR2 "$cpid" 2>/dev/null || { scenario_fail "the client is gone"; return 0; }
    for ((i = 0; i < 600; i++)); do
        line=$(grep -m1 -E '^c1m-client: stalled [0-9]+ connections at [0-9]+ us' "$log" 2>/dev/null) && break
        sleep 0.05
    done
    [ -n "$line" ] || { scenario_fail "the client did not report its stall within 30 s"; return 0; }
    n=$(sed -n 's/.*stalled \([0-9]*\) connections.*/\1/p' <<<"$line")
    at_us=$(sed -n 's/.* at \([0-9]*\) us.*/\1/p' <<<"$line")
    R[stalled]=$n
    log "$contender: $n connections stalled ($frac of each client worker's), the server pushing"
    t0=$(now_s)
    mem_peak=${mem0:-0} rss_peak=${rss0:-0} avail_low=${avail0:-}
    still_tol=$(stall_still_pages "$n" "$steady")
    echo "seconds,tcp_mem_pages,orphans,slow,server_rss_kib,mem_available_mib" > "$out/stall.csv"
    # STALL_WAIT and STALL_STEADY are seconds of the clock, not samples: on a
    # saturated machine one pass of this loop (a dozen short processes) took
    # ~35 s at 1M with pushes, and counting passes stretched both 35-fold.
    t_dead=$((EPOCHSECONDS + wait)) prev_t=$EPOCHSECONDS
    # This loop is the run's memory guard while peers stall, and a starved
    # guard comes too late: at 1M with 10% stalled the machine fell ~1.8 GB
    # between two passes 99 s apart, and the kernel's OOM killer ended the
    # harness. So the loop (and what it starts) runs at a higher priority than
    # the server and the client, and it stops when the next pass at the last
    # one's pace would end under the floor (the "predicted" oom-guard).
    renice -n -10 -p "$BASHPID" >/dev/null 2>&1 || true
    for ((i = 1; i <= wait; i++)); do
        sleep 1 & wait $!
        read -r mem orph <<<"$(stall_sockstat)"
        read -r rss _ <<<"$(rss_kib $pids)"
        slow=$(stat_get "$stats" slow)
        avail_kib=$(mem_available_kib)
        avail=${avail_kib:+$((avail_kib / 1024))}
        usable_kib=$(mem_usable_kib)   # the guard's figure: MemAvailable less the reclaimable slab
        usable=${usable_kib:+$((usable_kib / 1024))}
        echo "$(elapsed "$t0" "$(now_s)"),${mem:-},${orph:-},${slow:-},${rss:-},${avail:-}" >> "$out/stall.csv"
        [ -n "$avail_kib" ] && { [ -z "$avail_low" ] || [ "$avail_kib" -lt "$avail_low" ]; } && avail_low=$avail_kib
        [ -n "$mem" ] && [ "$mem" -gt "$mem_peak" ] && mem_peak=$mem
        [ -n "$rss" ] && [ "$rss" -gt "$rss_peak" ] && rss_peak=$rss
        if guard_why=$(stall_guard "$usable" "$prev_usable" "$min_avail" $((EPOCHSECONDS - prev_t))); then
            end=oom-guard; break
        fi
        prev_usable=$usable
        gone=$(pids_gone $workers)   # empty when a Ctrl-C killed the substitution
        if ! kill -0 "$spid" 2>/dev/null || [ "${gone:-0}" -gt 0 ]; then end=server-died; break; fi
        if [ -n "$slow" ] && [ -n "$slow0" ] && [ $((slow - slow0)) -ge "$n" ]; then end=cut; break; fi
        # nothing moves: the queues are as full as they get
        if [ -n "$mem" ] && stall_window "$mem" "${slow:-0}" "${rss:-}" && [ $((EPOCHSECONDS - still_since)) -ge "$steady" ]; then
            end=steady; break
        fi
        prev_t=$EPOCHSECONDS
        [ "$EPOCHSECONDS" -ge "$t_dead" ] && break
    done
    t_end=$(now_s)
    stall_t_end=$t_end
    R[stall_phase_s]=$(elapsed "$t0" "$t_end")
    R[stall_end]=$end
    R[stall_at_us]=$at_us
    R[stall_tcp_mem_peak_kib]=$((mem_peak * page / 1024))
    R[stall_tcp_mem_end_kib]=$(( ${mem:-0} * page / 1024 ))
    R[stall_orphans_end]=${orph:-}
    if [ "$n" -gt 0 ]; then
        R[stall_tcp_mem_bytes_per_stalled]=$(( (mem_peak - ${mem0:-0}) * page / n ))
        R[stall_user_bytes_per_stalled]=$(( (rss_peak - ${rss0:-0}) * 1024 / n ))
        if [ -n "$avail0" ] && [ -n "$avail_low" ]; then
            R[stall_avail0_kib]=$avail0 R[stall_avail_min_kib]=$avail_low
            R[stall_avail_drop_bytes_per_stalled]=$(( (avail0 - avail_low) * 1024 / n ))
        fi
    fi
    [ -n "$slow0" ] && [ -n "${slow:-}" ] && R[stall_cut]=$((slow - slow0))
    renice -n 0 -p "$BASHPID" >/dev/null 2>&1 || true
    stall_cut_times "$slow0" "$at_us"
    # ss over 1M sockets takes ~2 min, while the stalled peers go on taking
    # memory: not when the machine is about to run out
    [ "$end" = oom-guard ] || stall_ss "$n"
    case $end in
        oom-guard)
            obs scenario_status oom-guard   # lib/judge.py
            R[note]="${R[note]:+${R[note]}; }stall: stopped after ${R[stall_phase_s]}s with $n stalled at ${guard_why}; the server's RssAnon grew $(( (rss_peak - ${rss0:-0}) / 1024 )) MiB (${R[stall_user_bytes_per_stalled]:-?} B per stalled connection), TCP buffers $(( (mem_peak - ${mem0:-0}) * page / 1048576 )) MiB (${R[stall_tcp_mem_bytes_per_stalled]:-?} B), MemAvailable down $(( (${avail0:-0} - ${avail_low:-0}) / 1024 )) MiB (${R[stall_avail_drop_bytes_per_stalled]:-?} B)"
            log "$contender: ${R[note]}" ;;
        server-died)
            oom=$(oom_killed - "$server_up_s" "$spid" $workers)
            [ -n "$oom" ] && oom=": the kernel's OOM killer killed $oom (dmesg), while the last sample read ${usable:-?} MiB of usable memory against the ${min_avail} MiB floor"
            scenario_fail "a server process died during the stall phase$oom" server-died ;;
    esac
    return 0
}

# stall_cut_times SLOW0 STALL_US: the first and the last slow close after the
# stall, from ramp.csv (unix_ms,open,accepted,closed,slow,...; 10 Hz).
stall_cut_times() {
    [ -n "$1" ] && [ -n "$2" ] && [ -s "$out/ramp.csv" ] || return 0
    local first last
    read -r first last < <(awk -F, -v s0="$1" -v t0="$(( $2 / 1000 ))" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $(col["unix_ms"]) >= t0 && $(col["slow"]) > s0 + 0 {
            if (first == "") first = $(col["unix_ms"])
            if ($(col["slow"]) + 0 > top) { top = $(col["slow"]) + 0; last = $(col["unix_ms"]) }
        }
        END { if (first != "") printf "%.3f %.3f\n", (first - t0) / 1000, (last - t0) / 1000 }' "$out/ramp.csv")
    R[stall_cut_first_s]=${first:-}
    R[stall_cut_last_s]=${last:-}
}

# stall_ss N: Send-Q and skmem w summed over the server's sockets (sport =
# the server's port; every state but listening), once, timed.
stall_ss() {
    local t0 res sockets sendq wq
    t0=$(now_s)
    res=$(ip netns exec "$ns" ss -tmnH state connected "$(ports_filter "$port")" 2>/dev/null | awk '
        {
            for (i = 1; i <= NF; i++)
                if ($i ~ /^skmem:\(/ && match($i, /[(,]w[0-9]+/))
                    w += substr($i, RSTART + 2, RLENGTH - 2)
            if ($1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/) { n++; q += $2 }
            else if ($2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/) { n++; q += $3 }
        }
        END { printf "%.0f %.0f %.0f\n", n, q, w }')   # %d saturates at 2^31 in mawk
    R[stall_ss_s]=$(elapsed "$t0" "$(now_s)")
    read -r sockets sendq wq <<<"$res"
    R[stall_ss_sockets]=${sockets:-}
    if [ "${1:-0}" -gt 0 ] && [ -n "$sendq" ]; then
        R[stall_sendq_bytes_per_stalled]=$((sendq / $1))
        R[stall_wmem_bytes_per_stalled]=$((wq / $1))
    fi
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
