# shellcheck shell=bash
# probe.sh - read what a run costs, from /proc, without touching sockets.
# Never lists /proc/PID/fd (that creates kernel objects and takes seconds at 1M).

# server_pids STATS_FILE PARENT_PID: the parent and every worker pid.
server_pids() {
    { echo "$2"; "$BUILD/c1m-stat" "$1" 2>/dev/null | sed -n 's/^worker=[0-9]* pid=\([0-9]*\).*/\1/p'; } \
        | awk '$1 > 0' | sort -un | tr '\n' ' '
}

# rss_kib PIDS...: "rssanon_kib pss_kib" summed over the pids.
rss_kib() {
    local p anon=0 pss=0 a s
    for p in "$@"; do
        a=$(awk '/^RssAnon:/{print $2}' "/proc/$p/status" 2>/dev/null)
        s=$(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup" 2>/dev/null)
        anon=$((anon + ${a:-0})); pss=$((pss + ${s:-0}))
    done
    echo "$anon $pss"
}

# pid_ticks PIDS...: "pid utime+stime" (clock ticks) of each process still
# there, one awk over all their /proc/PID/stat (each line cut after the comm's
# ")"). Read with getline: mawk stops at the first file it cannot open, and a
# worker may end between the list and the read.
pid_ticks() {
    [ $# -gt 0 ] || return 0
    local files=() p
    for p in "$@"; do files+=("/proc/$p/stat"); done
    awk 'BEGIN { for (i = 1; i < ARGC; i++) {
                     if ((getline l < ARGV[i]) > 0) {
                         sub(/^.*\) /, "", l); split(l, v, " "); split(ARGV[i], f, "/")
                         print f[3], v[12] + v[13]
                     }
                     close(ARGV[i])
                 } }' "${files[@]}"
}
# cpu_ticks PIDS...: their utime+stime summed. Workers are reaped by their
# parent only at the end, so live pids cover the whole run.
cpu_ticks() { pid_ticks "$@" | awk '{ t += $2 } END { print t + 0 }'; }

# cpu_ns_by_pid PIDS...: "PID:NS ..." of each process, NS the CPU nanoseconds
# of all its threads (sum_exec_runtime, /proc/PID/task/*/schedstat: the
# quantity utime+stime are scaled from, without their 10 ms ticks; a thread
# gone meanwhile is left out). Summed in bash (64-bit): mawk's printf %d
# saturates at 2^31-1, 2.1 s of CPU, which once halved a 300k anatomy's ramp.
cpu_ns_by_pid() {
    local p v _ t out=()
    for p in "$@"; do
        t=0
        for v in /proc/"$p"/task/*/schedstat; do
            { read -r v _ < "$v"; } 2>/dev/null || continue
            [[ $v =~ ^[0-9]+$ ]] && t=$((t + v))
        done
        out+=("$p:$t")
    done
    echo "${out[*]}"
}

# machine_cpu: "busy total" jiffies from /proc/stat's cpu line.
machine_cpu() { awk '/^cpu /{b=$2+$3+$4+$7+$8+$9; print b, b+$5+$6}' /proc/stat; }

# slab_kib: "sock_caches_kib slab_kib": the caches an idle socket lives in
# (TCP, TCPv6, sock_inode_cache, filp, dentry, eventpoll_epi, eventpoll_pwq)
# and /proc/meminfo's whole Slab.
# Either is "-" when it cannot be read (no /proc/slabinfo, or unreadable): the
# two fields never shift into each other's place.
slab_kib() {
    local sock slab
    sock=$(awk '$1 ~ /^(TCP|TCPv6|sock_inode_cache|filp|dentry|eventpoll_epi|eventpoll_pwq)$/ {s += $2 * $4} END {printf "%d", s / 1024}' /proc/slabinfo 2>/dev/null) || sock=""
    slab=$(awk '/^Slab:/{print $2}' /proc/meminfo 2>/dev/null)
    [[ $sock =~ ^[0-9]+$ ]] || sock=-
    [[ $slab =~ ^[0-9]+$ ]] || slab=-
    echo "$sock $slab"
}

# slab_save FILE: "name bytes" of every slab cache now (/proc/slabinfo:
# active objects x object size); nothing when it cannot be read.
slab_save() {
    awk 'NR > 2 {print $1, $2 * $4}' /proc/slabinfo > "$1" 2>/dev/null || : > "$1"
}

# slab_growth BEFORE AFTER N: the caches that grew the most between two
# slab_save files, in bytes per connection (N), "name=B;..." (at most 8, those
# over 8 B): where the kernel's share of a connection goes, whatever the
# contender (io_uring's requests are not in the socket caches).
slab_growth() {
    awk -v n="$3" 'NR == FNR { b[$1] = $2; next }
        { d = ($2 - b[$1]) / n; if (d >= 8) printf "%d %s\n", d, $1 }' "$1" "$2" 2>/dev/null \
        | sort -rn | head -n 8 | awk '{printf "%s%s=%d", sep, $2, $1; sep = ";"}'
}

# slab_detail: one "name=kib" per socket cache, for the results.
slab_detail() {
    awk '$1 ~ /^(TCP|TCPv6|sock_inode_cache|filp|dentry|eventpoll_epi|eventpoll_pwq)$/ {printf "%s=%d ", $1, $2 * $4 / 1024}' /proc/slabinfo
}

# netns_tcpext [--json] NS NAME=column...: the namespace's TcpExt counters NAME
# (from its /proc/net/netstat: a line of names, then one of values) as
# "column=value" lines (--json: one JSON object, for record.py --merge),
# absolute (a fresh namespace starts at 0). A counter this kernel lacks is
# left out (unknown, never a made-up 0).
netns_tcpext() {
    local json=0
    [ "$1" = --json ] && { json=1; shift; }
    local ns=$1
    shift
    ip netns exec "$ns" awk -v want="$*" -v json="$json" '
        BEGIN { k = split(want, w, " "); for (i = 1; i <= k; i++) { split(w[i], p, "="); n[p[1]] = p[2] } }
        $1 == "TcpExt:" { if (!seen) { for (i = 2; i <= NF; i++) name[i] = $i; seen = 1; next }
                          for (i = 2; i <= NF; i++) if ((name[i] in n) && $i ~ /^[0-9]+$/)
                              if (json) { out = out sep "\"" n[name[i]] "\": " $i; sep = ", " } else print n[name[i]] "=" $i }
        END { if (json) print "{" out "}" }' \
        /proc/net/netstat 2>/dev/null
}

# netns_tcp_counters [--json] NS: the namespace's TCP drop counters (netns_tcpext).
#   listen_overflows  ListenOverflows: accept queue full, the handshake's ACK (or SYN) dropped
#   listen_drops      ListenDrops: every drop at a listener (the overflows included)
#   reqq_full_drop    TCPReqQFullDrop: SYN queue full, SYN dropped (no syncookies)
#   reqq_full_cookies TCPReqQFullDoCookies: SYN queue full, answered with a syncookie
#   syncookies_sent   SyncookiesSent
#   syn_retrans       TCPSynRetrans: SYNs and SYN-ACKs retransmitted (client and server
#                     both live in the namespace: this one counter has both)
netns_tcp_counters() {
    netns_tcpext "$@" ListenOverflows=listen_overflows ListenDrops=listen_drops \
        TCPReqQFullDrop=reqq_full_drop TCPReqQFullDoCookies=reqq_full_cookies \
        SyncookiesSent=syncookies_sent TCPSynRetrans=syn_retrans
}

# netns_tcp_mem_counters [--json] NS: whether the run met the kernel's TCP memory limit
# (netns_tcpext). net.ipv4.tcp_mem is one limit for the whole machine, not one
# per namespace; these counters are the namespace's own.
#   tcp_mem_pressures     TCPMemoryPressures: a socket here found TCP memory over
#                         tcp_mem's pressure threshold (buffers are then clamped)
#   tcp_mem_pressure_ms   TCPMemoryPressuresChrono: time under pressure, counted
#                         when the pressure ends
#   tcp_abort_on_memory   TCPAbortOnMemory: connections the kernel killed for
#                         memory (past tcp_mem's hard limit, or too many orphans)
netns_tcp_mem_counters() {
    netns_tcpext "$@" TCPMemoryPressures=tcp_mem_pressures TCPMemoryPressuresChrono=tcp_mem_pressure_ms \
        TCPAbortOnMemory=tcp_abort_on_memory
}

# netns_tcp_inuse NS: TCP sockets in use in NS (both ends of every connection + listeners).
netns_tcp_inuse() { ip netns exec "$1" awk '$1=="TCP:"{print $3}' /proc/net/sockstat; }

# tcp_mem_kib: the TCP memory the kernel counts against net.ipv4.tcp_mem, in
# KiB (sockstat's TCP "mem", in pages). Machine-wide, as the limit is: a
# namespace's sockstat shows the same figure (only inuse and tw are its own).
tcp_mem_kib() {
    local page
    page=$(getconf PAGESIZE)
    awk -v p="$page" '$1=="TCP:" {for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) * p / 1024}' /proc/net/sockstat
}

# stat_get STATS FIELD: the server's total FIELD, or "" when c1m-stat fails or
# answers something that is not a number (unknown, never a made-up 0).
stat_get() {
    local v
    v=$("$BUILD/c1m-stat" --get "$2" "$1" 2>/dev/null) || v=""
    [[ $v =~ ^[0-9]+$ ]] && echo "$v" || echo ""
}

# worker_lines STATS: "pid open lines" of every live worker, a line each (the
# server's counters file; nothing when c1m-stat cannot read it).
worker_lines() {
    "$BUILD/c1m-stat" "$1" 2>/dev/null \
        | sed -n 's/^worker=[0-9]* pid=\([0-9]*\) state=[a-z]* dead=0 open=\([0-9]*\) .* lines=\([0-9]*\) .*/\1 \2 \3/p'
}

# silent_workers END HEARTBEAT: of the "pid open lines_moved cpu_moved" lines
# on stdin (per worker: its open count, and when its line count and its CPU
# time last moved, unix seconds), the workers that neither counted a line nor
# used any CPU over the end of the hold although their connections were
# pinged: both still for at least max(2 s, the time in which 5 pings were due:
# 5 x HEARTBEAT / open) up to END. "pid:open" words; nothing when all served.
# A worker alive but no longer serving (stopped, deadlocked, blocked) shows
# here and nowhere else: its counters stay at N. The CPU condition keeps a
# starved worker apart: 53 Python workers on 2 CPUs at 1M fall tens of
# seconds behind their pings (asyncio-streams: 3.8M of 8.4M lost, p50 24 s)
# and publish their counters late, but they burn CPU working through it. A
# worker spinning without serving is not caught.
silent_workers() {
    awk -v end="$1" -v hb="$2" '
        $2 > 0 && hb > 0 {
            need = 5 * hb / $2; if (need < 2) need = 2
            if (end - $3 >= need && end - $4 >= need) { printf "%s%s:%s", sep, $1, $2; sep = " " }
        }'
}

# netns_listeners NS: listening TCP sockets in NS (one per server worker).
netns_listeners() { ip netns exec "$1" ss -ltnH 2>/dev/null | wc -l; }

# proc_tree PID: PID and every process descended from it (workers and any
# helper they started), by their parent pids, once each. Only descendants: a
# pid from the counters file whose process died may name an unrelated one.
proc_tree() {
    ps -e -o pid=,ppid= | awk -v root="$1" '
        { parent[$1] = $2 }
        END { if (!(root in parent)) exit
              keep[root] = 1
              do { more = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; more = 1 } } while (more)
              for (p in keep) print p }' | awk '$1 ~ /^[1-9][0-9]*$/' | sort -un | tr '\n' ' '
}

# pids_gone PIDS...: how many of them have exited (gone, or a zombie not yet reaped).
pids_gone() {
    local p n=0 st
    for p in "$@"; do
        st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] || n=$((n + 1))
    done
    echo "$n"
}

# oom_killed KMSG SINCE PIDS...: of PIDS, those gone that the kernel's OOM
# killer killed, as "pid 123 (python3)" joined by ", " (empty when none).
# KMSG is the kernel log's text in a file, or - for dmesg now (root; nothing
# when it cannot be read). SINCE is the /proc/uptime second the server
# started (empty: any time): a line stamped more than a minute before it (the
# log's clock and uptime's may drift apart a little) is an earlier run's, so
# a pid killed then and reused since is not named; so is a live pid. A server
# worker that dies while the memory guard reads plenty is most likely this
# (results/reference-stall-1m-10pct): the note says so rather than "died".
oom_killed() {
    local kmsg=$1 since=${2:-} p st dead=()
    shift 2
    for p in "$@"; do
        [[ $p =~ ^[0-9]+$ ]] || continue
        st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] || dead+=("$p")
    done
    [ ${#dead[@]} -gt 0 ] || return 0
    { if [ "$kmsg" = - ]; then dmesg 2>/dev/null; else cat -- "$kmsg" 2>/dev/null; fi; } \
        | awk -v pids="${dead[*]}" -v since="$since" '
            BEGIN { n = split(pids, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
            match($0, /Killed process [0-9]+ \([^)]*\)/) {
                what = substr($0, RSTART + 15, RLENGTH - 15)     # "123 (comm)"
                pid = substr(what, 1, index(what, " ") - 1)
                if (since != "" && match($0, /^\[ *[0-9]+\.[0-9]+\]/)) {
                    stamp = substr($0, RSTART + 1, RLENGTH - 2) + 0
                    if (stamp < since - 60) next
                }
                if ((pid in want) && !(pid in seen)) {
                    seen[pid] = 1
                    out = out (out == "" ? "" : ", ") "pid " what
                }
            }
            END { if (out != "") print out }'
}

# run_flag FLAG: add FLAG to the run's ;-separated flags (R[flags]). A
# flag says what a run could not measure (unmeasured:KEY) or what disturbed
# it; runstore.py and the report read them.
run_flag() {
    [ -n "$1" ] || return 0
    R[flags]="${R[flags]:+${R[flags]};}$1"
}

# obs NAME TEXT: an observation of the run (O[NAME], declared by run_one.sh),
# what lib/judge.py decides the run's status from (harness/README.md "From
# observations to the record"); a scenario's failure is scenario_status.
obs() { O[$1]=$2; }

# push_kept_check FROM_S TO_S EVERY [STALLED STALL_US]: did the server keep
# its push schedule from FROM_S to TO_S (epoch seconds)? lib/pushkept.py
# counts the lines it pushed (the `pushed` column of OUT/ramp.csv) against
# those due to its reading connections, one per EVERY seconds each (STALLED
# peers from STALL_US on, until cut as slow, are owed none). Sets the
# push_kept* keys; an otherwise ok run whose server sent under push_kept_min
# (pushkept.py's KEPT_MIN, 0.9) of its due lines becomes push-behind
# (its push_kept_verdict: lib/judge.py checks the server's health first): a
# server stamps a line when it hands it over, so its delivery latency hides a
# late schedule, and the load was not the one asked for. No verdict (too few
# samples, a worker died, counters too old at an edge: push_kept_why):
# flagged unmeasured:push_kept.
push_kept_check() {
    local from_ms to_ms verdict="" sent due win kept min why args=()
    from_ms=$(awk -v t="$1" 'BEGIN{printf "%.0f", t * 1000}')
    to_ms=$(awk -v t="$2" 'BEGIN{printf "%.0f", t * 1000}')
    args=(--from "$from_ms" --to "$to_ms" --every "$3")
    [ -n "${4:-}" ] && [ -n "${5:-}" ] && args+=(--stalled "$4" --stall-ms $(( $5 / 1000 )))
    # its push_kept* figures go into the record (record.py --merge), and
    # push_kept_verdict to lib/judge.py (behind: the status, after the health checks)
    "$PYTHON" "$C1M_ROOT/harness/lib/pushkept.py" summary "$out/ramp.csv" "${args[@]}" > "$out/pushkept.json"
    merge_summary "$out/pushkept.json"
    { read -r verdict; read -r sent; read -r due; read -r win; read -r kept; read -r min; read -r why; } < <(
        "$PYTHON" "$C1M_ROOT/harness/lib/record.py" get "$out/pushkept.json" push_kept_verdict push_kept_sent \
            push_kept_due push_kept_window_s push_kept push_kept_min push_kept_why 2>/dev/null)
    case $verdict in
        ok) ;;
        behind)
            local what="push: the server sent $sent of the $due lines due to its reading connections over ${win}s ($kept, under $min): behind its schedule"
            R[note]="${R[note]:+${R[note]}; }$what"
            log "$contender: $what" ;;
        *)
            run_flag "unmeasured:push_kept"
            log "$contender: push: the schedule not judged: ${why:-no answer from pushkept.py}" ;;
    esac
    return 0
}
