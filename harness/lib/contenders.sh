# shellcheck shell=bash
# contenders.sh - the contender registry: every server the harness can start,
# by name, and the command that starts it. One place: run_one.sh, bench.sh and
# the tools beside them (anatomy, capacity) start a contender only through
# contender_cmd, so a new contender is a line in each of the two tables below.
#
# Every contender takes the same flags (--host --port --max-conns --stats
# --quiet [--worker-conns N] and any scenario's extra flags), speaks the wire
# protocol of DEVELOPERS.md and publishes the live counters file.

# Known contenders, in ladder order: by the userspace bytes each connection costs,
# cheapest first (results/reference-all-100k: floor 7, c 19, io_uring 20, pyext 112,
# libuv 288, uvloop 1367, asyncio-protocol 2722, asyncio-streams 5512, gevent 9632,
# threads ~30k). Runs, tables and plots follow this order. CONTENDERS=all runs
# every one of them; one this machine cannot run (exit 3: c1m-uring on a kernel
# without multishot io_uring, gevent not importable) is recorded `unavailable`.
C1M_CONTENDERS=(floor c io_uring pyext libuv uvloop asyncio-protocol asyncio-streams gevent threads)
# What bench.sh runs when CONTENDERS is unset (uvloop only when importable), in
# the same order: the default run keeps its length; the issue-12 contenders
# come with CONTENDERS=all.
C1M_DEFAULT_CONTENDERS=(c pyext uvloop asyncio-protocol asyncio-streams)

# contender_cmd NAME ARG...: the command line (words) that starts contender NAME
# with the common flags ARG...; exit status 1 for an unknown name.
contender_cmd() {
    local name=$1; shift
    case "$name" in
        # the zero-state reference (c_server/floor): accept, epoll, hold; never reads
        floor) echo "$BUILD/c1m-floor $*" ;;
        c) echo "$BUILD/c1m-server $*" ;;
        pyext) echo "$PYTHON -m py_server --loop c1m --api protocol $*" ;;
        asyncio-protocol) echo "$PYTHON -m py_server --loop asyncio --api protocol $*" ;;
        asyncio-streams) echo "$PYTHON -m py_server --loop asyncio --api streams $*" ;;
        uvloop) echo "$PYTHON -m py_server --loop uvloop --api protocol $*" ;;
        libuv) echo "$BUILD/c1m-libuv $*" ;;
        io_uring) echo "$BUILD/c1m-uring $*" ;;
        gevent) echo "$PYTHON -m py_server --loop gevent --api blocking $*" ;;
        # the thread stack is set explicitly, and so recorded in the run's server_cmd
        threads) echo "$PYTHON -m py_server --loop threads --api blocking --thread-stack 256k $*" ;;
        *) return 1 ;;
    esac
}

# contender_supports NAME CAPABILITY: 0 when contender NAME implements
# CAPABILITY, a feature a scenario may need (scenario_needs, lib/scenarios/).
# The capability table:
#   push       --push BYTES --push-every S [--push-burst]: server push (issue
#              10; the push and stall scenarios). c1m-floor, c1m-libuv,
#              c1m-uring and the blocking py_server loops (gevent, threads)
#              refuse it (exit 2).
#   push-flow  --push-flow ignore: the naive push idiom, which writes every
#              push whatever is queued (py_server's Protocol and streams
#              contenders; the stall scenario's STALL_PUSH_FLOW=ignore). The C
#              servers have no such idiom: they queue a count, not bytes.
#   broadcast  --push BYTES alone: one line to every connection on SIGUSR1 to
#              a worker (SCENARIO=push PUSH_EVERY=0). c1m-floor has only this:
#              one send() per connection, the floor of a broadcast.
#   reads      reads its connections and counts their lines (the wire
#              protocol): every contender but c1m-floor, which never reads.
#              run_one.sh expects each worker of such a server to count
#              lines while its connections are pinged (a hung worker).
#   py-gc      --gc freeze|default|off: the Python contenders (py_server),
#              the garbage-collector steps of the ladder of fixes (PY_GC).
contender_supports() {
    local with
    case "$2" in
        push) with=" c pyext asyncio-protocol asyncio-streams uvloop " ;;
        push-flow) with=" pyext asyncio-protocol asyncio-streams uvloop " ;;
        broadcast) with=" floor c pyext asyncio-protocol asyncio-streams uvloop " ;;
        reads) with=" ${C1M_CONTENDERS[*]/floor/} " ;;
        py-gc) with=" pyext uvloop asyncio-protocol asyncio-streams gevent threads " ;;
        *) return 1 ;;
    esac
    [[ $with == *" $1 "* ]]
}

# contender_known NAME: 0 when NAME is in the registry.
contender_known() { [[ " ${C1M_CONTENDERS[*]} " == *" $1 "* ]]; }
