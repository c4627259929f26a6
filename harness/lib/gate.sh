# shellcheck shell=bash
# gate.sh - wait for a quiet machine before a run, and say how long it took.
#
# A run started while the kernel is still freeing an earlier run's sockets
# (`ip netns del` returns at once; millions of sockets are freed afterwards,
# for minutes, with high system CPU) or beside a busy process measures that
# load, not the contender. The gate waits, up to a bound, until:
#   1. no other benchmark namespace (c1m-PID-N, ours from an earlier or a
#      concurrent run) exists;
#   2. the kernel finished freeing earlier sockets: the host-wide TCP/TCPv6
#      slab objects are back near the suite's starting baseline and so is
#      /proc/meminfo Slab (or, since reclaimable caches that a run grew -
#      dentries, proc inodes of the fd scanner - are only freed under memory
#      pressure, Slab at least stopped shrinking). Without a baseline
#      (run_one.sh run alone): both stopped shrinking;
#   3. the machine was idle over a ~2 s window: busy (user, nice, system, irq,
#      softirq, steal) at most QUIET_CPU_PCT % of all CPUs.
# Sourced by run_one.sh; bench.sh calls gate_baseline once at the suite's start.

# Tolerances around the baseline: a few thousand sockets (other processes on
# the machine open some) and 64 MiB + 10% of Slab.
GATE_TCP_SLACK=4096
GATE_SLAB_SLACK_KIB=65536
# "stopped shrinking": fell by less than this over the ~2 s CPU window (other
# processes open and close a few sockets all the time).
GATE_SHRINK_KIB=2048
GATE_SHRINK_TCP=512

# gate_tcp_objs: active TCP + TCPv6 objects host-wide (/proc/slabinfo).
gate_tcp_objs() { awk '$1 == "TCP" || $1 == "TCPv6" {n += $2} END {printf "%d\n", n}' /proc/slabinfo; }
gate_slab_kib() { awk '/^Slab:/{print $2}' /proc/meminfo; }

# gate_baseline: "slab_kib tcp_objs" now (the suite's quiet starting point).
gate_baseline() { echo "$(gate_slab_kib) $(gate_tcp_objs)"; }

# gate_other_namespaces OWN: benchmark namespaces other than OWN, space-separated.
gate_other_namespaces() {
    ip netns list 2>/dev/null | awk -v own="$1" '$1 ~ /^c1m-[0-9]+-[0-9]+$/ && $1 != own {printf "%s ", $1}'
}

# quiet_gate MAX_S CPU_PCT BASE_SLAB_KIB BASE_TCP_OBJS OWN_NS
# Empty baselines = run alone (fall back to "stopped shrinking"). MAX_S=0: off.
# Sets GATE (quiet|timeout|off), GATE_WAIT_S and, on a timeout, GATE_CAUSE
# (what was still not quiet); what it waits for is logged on stderr when that
# changes. Each check takes ~2 s (the CPU window), a nap (lib/common.sh): a stop
# signal is handled at once.
# shellcheck disable=SC2034  # GATE* are read by the caller
quiet_gate() {
    local max=$1 cpu_pct=$2 base_slab=$3 base_tcp=$4 own=$5
    local t0 b0 t1 b1 slab0 slab1 tcp0 tcp1 busy others causes start what last=""
    GATE=off GATE_WAIT_S=0 GATE_CAUSE=""
    [ "$max" -gt 0 ] || return 0
    start=$(now_s)
    while :; do
        causes=()
        read -r b0 t0 <<<"$(machine_cpu)"
        slab0=$(gate_slab_kib) tcp0=$(gate_tcp_objs)
        nap 2
        read -r b1 t1 <<<"$(machine_cpu)"
        slab1=$(gate_slab_kib) tcp1=$(gate_tcp_objs)
        others=$(gate_other_namespaces "$own")
        [ -z "$others" ] || causes+=("namespaces pending: ${others% }")
        if [ -n "$base_tcp" ]; then
            [ "$tcp1" -le $((base_tcp + GATE_TCP_SLACK)) ] \
                || causes+=("TCP objects $tcp1 vs baseline $base_tcp")
        else
            [ $((tcp0 - tcp1)) -lt "$GATE_SHRINK_TCP" ] || causes+=("TCP objects still falling ($tcp0 -> $tcp1)")
        fi
        if [ -n "$base_slab" ] && [ "$slab1" -le $((base_slab + GATE_SLAB_SLACK_KIB + base_slab / 10)) ]; then
            :
        elif [ $((slab0 - slab1)) -ge "$GATE_SHRINK_KIB" ]; then
            causes+=("Slab still shrinking ($slab0 -> $slab1 KiB${base_slab:+, baseline $base_slab})")
        fi
        busy=$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) 'BEGIN{printf "%.1f", t ? 100 * b / t : 0}')
        awk -v b="$busy" -v p="$cpu_pct" 'BEGIN{exit !(b <= p)}' \
            || causes+=("CPU ${busy}% busy > ${cpu_pct}%")
        GATE_WAIT_S=$(elapsed "$start" "$(now_s)")
        if [ ${#causes[@]} -eq 0 ]; then GATE=quiet GATE_CAUSE=""; return 0; fi
        # say what is waited for when that changes (not every 2 s)
        GATE_CAUSE=$(printf '%s; ' "${causes[@]}"); GATE_CAUSE=${GATE_CAUSE%; }
        what=$(printf '%s|' "${causes[@]%%[0-9]*}")
        [ "$what" = "$last" ] || log "quiet gate: waiting (${GATE_WAIT_S}s of ${max}s): $GATE_CAUSE"
        last=$what
        if awk -v w="$GATE_WAIT_S" -v m="$max" 'BEGIN{exit !(w >= m)}'; then
            GATE=timeout
            return 0
        fi
    done
}
