#!/bin/bash
# accept_instr.sh - userspace instructions per accepted connection of one server
# worker, counted by callgrind (repeatable on a loaded machine, unlike CPU time).
#
#   pyext/tools/accept_instr.sh [--build DIR] c|pyext N1 N2 [N3...]
#
# For each N: the server (c1m-server, or py_server --loop c1m --api protocol) with
# one worker under `valgrind --tool=callgrind`, in a network namespace of its own;
# one c1m-client opens N connections, closes them all once the worker counted N
# accepted, and the worker is stopped (SIGTERM) when it counted them closed. The
# worker's counts (its file holds the parent's start-up too, from before the fork)
# are then differenced between consecutive Ns: per connection, what the Nth
# connection costs, start-up and exit cancelled out. Columns: `total` (the worker's
# whole life), `accept` (the listener callback, c_server/lib/listener.c:on_listen_io,
# inclusive: accept, the Transport and the protocol, connection_made, epoll_ctl, and
# the collector's passes the allocations there run), `lost` (pyext: connection_lost).
# The close paths depend on how the closes batch: in `total` and `lost` only.
# N is at most the worker's fd limit (ulimit -n) - 64. Needs root (ip netns) and
# valgrind. pyext/README.md "Instructions per connection".
set -euo pipefail

usage() {
    echo "usage: $0 [--build DIR] c|pyext N1 N2 [N3...] (N: 100..1000000, increasing)" >&2
    exit 2
}
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build
if [ "${1:-}" = --build ]; then
    [ $# -ge 2 ] || usage
    build=$(cd "$2" && pwd) || usage
    shift 2
fi
[ $# -ge 3 ] || usage
name=$1
shift
case $name in c | pyext) ;; *) usage ;; esac
prev=0
for n in "$@"; do
    [[ $n =~ ^[1-9][0-9]{2,6}$ ]] && [ "$n" -le 1000000 ] && [ "$n" -gt "$prev" ] || usage
    prev=$n
done
for tool in valgrind callgrind_annotate ip; do
    command -v "$tool" >/dev/null || { echo "$0: $tool not found" >&2; exit 1; }
done
[ -x "$build/c1m-server" ] && [ -x "$build/c1m-client" ] && [ -x "$build/c1m-stat" ] ||
    { echo "$0: no build in $build (make build)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/accept-instr.XXXXXX)
ns=acceptinstr-$$
st=/dev/shm/accept-instr-$$.stats
spid= cpid=
cleanup() {
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
    if [ -n "$spid" ]; then
        kill -TERM "$spid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
    fi
    ip netns del "$ns" 2>/dev/null
    rm -rf "$tmp" "$st"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case $name in
    c) cmd=("$build/c1m-server") ;;
    pyext) cmd=(/usr/bin/python3 -m py_server --loop c1m --api protocol)
           export PYTHONPATH=$build/pyext C1M_PYEXT_PATH=$build/pyext ;;
esac

# wait_for FIELD VALUE SECONDS: the worker's counter reaches VALUE
wait_for() {
    local i
    for i in $(seq $(($3 * 5))); do
        [ "$("$build/c1m-stat" --get "$1" "$st" 2>/dev/null)" = "$2" ] && return 0
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.2
    done
    echo "$0: $name: $1 never reached $2 (server log: $(tail -3 "$tmp/server.log"))" >&2
    exit 1
}

# incl FILE FUNCTION: a function's inclusive count in a callgrind file (0 if absent)
incl() {
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
        awk -v f="$2" 'index($0, f " [") { gsub(",", "", $1); print $1; found = 1; exit }
                       END { if (!found) print 0 }'
}

ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" sysctl -qw net.core.somaxconn=65535
cd "$here"
printf '%-6s %8s %14s %14s %14s\n' "$name" N total accept lost
declare -A prev_v=()
prev_n=
for n in "$@"; do
    rm -f "$st"
    ip netns exec "$ns" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.%p" \
        "${cmd[@]}" --workers 1 --max-conns "$n" --port 9000 --stats "$st" --quiet \
        >"$tmp/server.log" 2>&1 &
    spid=$!
    wait_for listening 1 120
    wpid=$("$build/c1m-stat" --json "$st" |
        /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"][0]["pid"])')
    ip netns exec "$ns" "$build/c1m-client" --connections "$n" --port 9000 --workers 1 \
        --hold inf --connect-timeout 300 --inflight 200 --quiet >"$tmp/client.log" 2>&1 &
    cpid=$!
    wait_for accepted "$n" 600
    kill -INT "$cpid"
    wait "$cpid" || true
    cpid=
    wait_for open 0 600
    kill -TERM "$spid"
    wait "$spid" || true
    spid=
    f=$tmp/cg.$wpid
    declare -A v=(
        [total]=$(awk '/^totals:/ { print $2 }' "$f")
        [accept]=$(incl "$f" listener.c:on_listen_io)
        [lost]=$(incl "$f" transport_type.c:c1m_transport_call_lost)
    )
    printf '%-6s %8d %14d %14d %14d  (whole life)\n' "" "$n" "${v[total]}" "${v[accept]}" \
        "${v[lost]}"
    if [ -n "$prev_n" ]; then
        d=$((n - prev_n))
        printf '%-6s %8s %14d %14d %14d  (per connection, %d -> %d)\n' "" "" \
            $(((v[total] - prev_v[total]) / d)) $(((v[accept] - prev_v[accept]) / d)) \
            $(((v[lost] - prev_v[lost]) / d)) "$prev_n" "$n"
    fi
    for k in total accept lost; do prev_v[$k]=${v[$k]}; done
    prev_n=$n
    rm -f "$tmp"/cg.*
done
