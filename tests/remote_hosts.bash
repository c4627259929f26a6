# shellcheck shell=bash
# remote_hosts.bash - three simulated hosts for tests/remote.bats: network
# namespaces joined by veth pairs through a bridge namespace, addressed from
# the documentation range 198.51.100.0/24 inside them only (no route to
# anything else), each with its own OpenSSH sshd (a throwaway host key, the
# test's throwaway client key) listening on its own address only, plus a
# controller namespace the harness runs in (ssh from there reaches the hosts).
#
#   sim_up DIR     create everything; exports SIM_TAG, SIM_DIR, SSH_OPTS, C1M_SSH_CTL
#   sim_start_sshd NAME  start that host's sshd (again)
#   sim_down       stop the sshds, delete the namespaces (also after a failure)
#   sim_kill_host NAME   kill that host's sshd and every session it holds
#   sim_kill_sshd NAME   kill that host's sshd processes only (sessions' commands live on)
#   sim_pids_in NAME     pids of the processes in that host's namespace but its sshd
#
# Hosts: srv 198.51.100.10, cl1 .11 (and .20-.27), cl2 .12 (and .30-.37); the controller .1.

# State lives in the environment (SIM_TAG, SIM_DIR: exported by sim_up, as
# bats runs each test in its own process) and in files under SIM_DIR (the
# sshds' pid files): everything else is derived from them.
SIM_TAG=${SIM_TAG:-c1mt$$}
declare -gA SIM_ADDR=([srv]=198.51.100.10 [cl1]=198.51.100.11 [cl2]=198.51.100.12)
# shellcheck disable=SC2034  # read by the users of this file (hosts files)
declare -gA SIM_SRC=([cl1]=198.51.100.20-198.51.100.27 [cl2]=198.51.100.30-198.51.100.37)
SIM_HOSTS=(srv cl1 cl2)

sim_ns() { echo "$SIM_TAG-$1"; }
sim_all_ns() { local n; for n in br ctl "${SIM_HOSTS[@]}"; do sim_ns "$n"; done; }
# sim_sshd NAME: the pid of that host's sshd (its pid file), empty when gone
sim_sshd() {
    local p
    p=$(cat "$SIM_DIR/sshd-$1.pid" 2>/dev/null) || return 0
    if kill -0 "$p" 2>/dev/null; then echo "$p"; fi
}

sim_link() {    # sim_link NAME ADDR I: a namespace NAME joined to the bridge at ADDR
    local ns br i=$3
    ns=$(sim_ns "$1") br=$(sim_ns br)
    ip netns add "$ns" || return 1
    ip link add "v$i$SIM_TAG" type veth peer name "b$i$SIM_TAG" || return 1
    ip link set "v$i$SIM_TAG" netns "$ns" name eth0 || return 1
    ip link set "b$i$SIM_TAG" netns "$br" || return 1
    ip -n "$br" link set "b$i$SIM_TAG" master br0 up || return 1
    ip -n "$ns" link set lo up && ip -n "$ns" link set eth0 up || return 1
    ip -n "$ns" addr add "$2/24" dev eth0
}

sim_up() {
    local dir=$1 name ns i=0
    export SIM_DIR=$dir SIM_TAG
    mkdir -p "$dir"
    ip netns add "$(sim_ns br)" || return 1
    ip -n "$(sim_ns br)" link add br0 type bridge && ip -n "$(sim_ns br)" link set br0 up || return 1
    sim_link ctl 198.51.100.1 $((i++)) || return 1
    for name in srv cl1 cl2; do sim_link "$name" "${SIM_ADDR[$name]}" $((i++)) || return 1; done
    # eight more source addresses per client host (SIM_SRC), for runs beyond
    # one address's ~28k ephemeral ports per server port
    local a
    for a in 20 21 22 23 24 25 26 27; do ip -n "$(sim_ns cl1)" addr add "198.51.100.$a/24" dev eth0 || return 1; done
    for a in 30 31 32 33 34 35 36 37; do ip -n "$(sim_ns cl2)" addr add "198.51.100.$a/24" dev eth0 || return 1; done
    # privilege separation directory of Debian's sshd; removed by sim_down if created here
    if [ ! -d /run/sshd ]; then mkdir -m 0755 /run/sshd && touch "$dir/created-run-sshd"; fi
    ssh-keygen -q -t ed25519 -N "" -C c1m-test -f "$dir/id" || return 1
    ssh-keygen -q -t ed25519 -N "" -C c1m-test-host -f "$dir/hostkey" || return 1
    cp "$dir/id.pub" "$dir/authorized_keys"
    : > "$dir/known_hosts"
    for name in srv cl1 cl2; do
        ns=$(sim_ns "$name")
        cat > "$dir/sshd-$name.conf" <<EOF
ListenAddress ${SIM_ADDR[$name]}:22
HostKey $dir/hostkey
PidFile $dir/sshd-$name.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxSessions 64
MaxStartups 64
LogLevel ERROR
EOF
        sim_start_sshd "$name"
        echo "${SIM_ADDR[$name]} $(cut -d' ' -f1,2 "$dir/hostkey.pub")" >> "$dir/known_hosts"
    done
    # keep-alives every second: a host cut off is lost within ~3 s (not ~15)
    SSH_OPTS="-F /dev/null -i $dir/id -o IdentitiesOnly=yes -o UserKnownHostsFile=$dir/known_hosts -o StrictHostKeyChecking=yes -o ServerAliveInterval=1 -o ServerAliveCountMax=3"
    # the control sockets' path must stay short (a unix socket's 108 bytes)
    C1M_SSH_CTL=$(mktemp -d /tmp/c1m-ctl.XXXXXX)
    export SSH_OPTS C1M_SSH_CTL
    for name in srv cl1 cl2; do
        for ((i = 0; i < 50; i++)); do
            # shellcheck disable=SC2086  # SSH_OPTS is words
            in_ctl ssh $SSH_OPTS -o BatchMode=yes -o ConnectTimeout=2 "root@${SIM_ADDR[$name]}" true 2>/dev/null && break
            sleep 0.1
        done
        [ "$i" -lt 50 ] || { echo "sshd of $name does not answer: $(cat "$dir/sshd-$name.log")" >&2; return 1; }
    done
}

# sim_start_sshd NAME: that host's sshd (again), in its namespace
sim_start_sshd() {
    ip netns exec "$(sim_ns "$1")" /usr/sbin/sshd -D -e -f "$SIM_DIR/sshd-$1.conf" \
        2>> "$SIM_DIR/sshd-$1.log" < /dev/null > /dev/null 3>&- &
    disown $!   # killed by sim_kill_host: no "Killed" job notice
    local i
    for ((i = 0; i < 50; i++)); do [ -n "$(sim_sshd "$1")" ] && return 0; sleep 0.1; done
    return 1
}

# in_ctl CMD...: CMD in the controller namespace (where the harness runs)
in_ctl() { ip netns exec "$(sim_ns ctl)" "$@"; }

# sim_descendants PID: PID and every process below it
sim_descendants() {
    local p kids
    echo "$1"
    kids=$(awk -v pp="$1" '{ sub(/^.*\) /, ""); if ($2 == pp) print FILENAME }' /proc/[0-9]*/stat 2>/dev/null \
           | sed 's|/proc/\([0-9]*\)/stat|\1|')
    for p in $kids; do sim_descendants "$p"; done
}

sim_kill_host() {
    local pid p
    pid=$(sim_sshd "$1")
    [ -n "$pid" ] || return 0
    for p in $(sim_descendants "$pid"); do kill -KILL "$p" 2>/dev/null || true; done
    rm -f "$SIM_DIR/sshd-$1.pid"
}

# sim_kill_sshd NAME: kill that host's sshd processes only (the daemon and
# its per-connection children), not what runs in their sessions: those must
# end by themselves (the harness's wrapper sees its input end)
sim_kill_sshd() {
    local pid p
    pid=$(sim_sshd "$1")
    [ -n "$pid" ] || return 0
    for p in $(sim_descendants "$pid"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sshd ] && { kill -KILL "$p" 2>/dev/null || true; }
    done
    rm -f "$SIM_DIR/sshd-$1.pid"
}

# sim_pids_in NAME: processes in host NAME's namespace other than sshd's own
# (its daemon and per-connection processes): a shell or program running in a
# session counts
sim_pids_in() {
    local p
    for p in $(ip netns pids "$(sim_ns "$1")" 2>/dev/null); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sshd ] && continue
        [ -e "/proc/$p" ] || continue
        echo "$p $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-100)"
    done
}

sim_down() {
    local name ns p
    [ -n "${SIM_DIR:-}" ] || return 0
    for name in "${SIM_HOSTS[@]}"; do sim_kill_host "$name"; done
    # what a failed test left in the namespaces (the runs it started through
    # the sshds), by pid, before the namespaces go
    for ns in $(sim_all_ns); do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null
    done
    [ -e "$SIM_DIR/created-run-sshd" ] && rmdir /run/sshd 2>/dev/null
    [[ ${C1M_SSH_CTL:-} == /tmp/c1m-ctl.* ]] && rm -rf "$C1M_SSH_CTL"
    return 0
}
