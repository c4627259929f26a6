#!/usr/bin/env python3
"""contenders.py - the contender registry: every server the harness can start,
by name, the command that starts it and what it implements, and the load
client's command a run starts beside it (client_cmd). The one home:
run_remote.py and pyext/tools/accept_cpu.py import it; run_one.sh, bench.sh and anatomy-cpu reach it
through lib/contenders.sh, thin wrappers over the command line below. A new
contender is a row of TABLE.

Every contender takes the same flags (--host --port --max-conns --stats
--quiet [--worker-conns N] and any scenario's extra flags), speaks the wire
protocol of DEVELOPERS.md and publishes the live counters file. One this
machine cannot run exits 3 (c1m-uring on a kernel without multishot io_uring,
gevent or uvloop not importable) and its runs are recorded `unavailable`.

    contenders.py cmd --build DIR --python EXE NAME [ARG...]
                                 the command's words, each ended by a NUL
    contenders.py server-cmd --build DIR --python EXE --port P --conns N
        --stats FILE [--host H] [--worker-conns N] [--gc G] NAME [EXTRA...]
                                 a run's server command (server_cmd), the same
    contenders.py client-cmd --build DIR --conns N --host H --port P --heartbeat S
        --min-available MIB --json FILE [--worker-conns N] [--rate R] [--src RANGE]
        [EXTRA...]             a run's load client command (client_cmd), the same
    contenders.py supports NAME CAPABILITY   exit 0 if it does, 1 if not
    contenders.py list | default             names in ladder order, one a line

Exit 2 on a bad command line, an unknown contender or capability (stderr
says which).
"""
import os
import sys

# run by lib/contenders.sh as `python3 -I`, which leaves this directory off sys.path
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.append(_HERE)
import c1m_root  # noqa: E402,F401  (py_server.cli_rules)
from py_server import cli_rules  # noqa: E402

# The capabilities, features a scenario may need (scenario_needs,
# lib/scenarios/):
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
CAPABILITIES = ("push", "push-flow", "broadcast", "reads", "py-gc")

_PY_PUSH = ("push", "push-flow", "broadcast", "reads", "py-gc")   # py_server's Protocol/streams
_PY_BLOCKING = ("reads", "py-gc")                                # gevent, threads

# (name, program, capabilities), in ladder order: by the userspace bytes each
# connection costs, cheapest first (results/reference-all-100k: floor 7, c 19,
# io_uring 20, pyext 112, libuv 288, uvloop 1367, asyncio-protocol 2722,
# asyncio-streams 5512, gevent 9632, threads ~30k). Runs, tables and plots
# follow this order; CONTENDERS=all runs every one. program: a C program's
# name in the build directory (a str), or py_server's flags (a tuple) after
# `PYTHON -m py_server`.
TABLE = (
    # the zero-state reference (c_server/floor): accept, epoll, hold; never reads
    ("floor", "c1m-floor", ("broadcast",)),
    ("c", "c1m-server", ("push", "broadcast", "reads")),
    ("io_uring", "c1m-uring", ("reads",)),
    ("pyext", ("--loop", "c1m", "--api", "protocol"), _PY_PUSH),
    ("libuv", "c1m-libuv", ("reads",)),
    ("uvloop", ("--loop", "uvloop", "--api", "protocol"), _PY_PUSH),
    ("asyncio-protocol", ("--loop", "asyncio", "--api", "protocol"), _PY_PUSH),
    ("asyncio-streams", ("--loop", "asyncio", "--api", "streams"), _PY_PUSH),
    ("gevent", ("--loop", "gevent", "--api", "blocking"), _PY_BLOCKING),
    # the thread stack is set explicitly, and so recorded in the run's server_cmd
    ("threads", ("--loop", "threads", "--api", "blocking", "--thread-stack", "256k"), _PY_BLOCKING),
)
LADDER = tuple(row[0] for row in TABLE)
# What bench.sh runs when CONTENDERS is unset (uvloop only when importable), in
# the same order: the default run keeps its length; the issue-12 contenders
# come with CONTENDERS=all.
DEFAULT = ("c", "pyext", "uvloop", "asyncio-protocol", "asyncio-streams")

_ROWS = {row[0]: row for row in TABLE}


def command(name, args, build, python):
    """The argv that starts contender NAME with the common flags ARGS, its C
    programs in BUILD, Python as PYTHON (words: a command with flags is
    split, as the shell splits $PYTHON). KeyError for an unknown name."""
    _, program, _ = _ROWS[name]
    if isinstance(program, str):
        return [build + "/" + program] + list(args)
    return python.split() + ["-m", "py_server"] + list(program) + list(args)


def server_cmd(name, build, python, port, conns, stats, host="0.0.0.0", worker_conns=None,
               extra=(), gc="freeze"):
    """The argv a run starts contender NAME with (run_one.sh, run_remote.py,
    anatomy-cpu; recorded as server_cmd): the flags every contender takes,
    --worker-conns when set, a scenario's EXTRA flags, --gc when GC is not
    the default freeze and NAME is a Python contender (capability py-gc)."""
    args = ["--host", host, "--port", str(port), "--max-conns", str(conns), "--stats", stats, "--quiet"]
    if worker_conns:
        args += ["--worker-conns", str(worker_conns)]
    args += list(extra)
    if gc != "freeze" and supports(name, "py-gc"):
        args += ["--gc", gc]
    return command(name, args, build, python)


def client_cmd(build, conns, host, port, heartbeat, min_available, json_path,
               worker_conns=None, rate=0, src=None, extra=(), nofile=None):
    """The argv of the load client a run starts beside its server (run_one.sh,
    anatomy-cpu; run_remote.py once per client host, its share): CONNS
    connections to HOST:PORT (a port or a range) held until SIGTERM, a ping
    every HEARTBEAT s, MIN_AVAILABLE MiB the floor of usable memory, the
    summary to JSON_PATH, no progress lines; --worker-conns, --rate
    (connections a second, 0: unlimited) and --src (a source address range)
    when set; a scenario's EXTRA flags last. --worker-conns is held within
    what the client's fd limit leaves a worker (client_worker_cap)."""
    args = [build.rstrip("/") + "/c1m-client", "--connections", str(conns), "--host", host,
            "--port", str(port), "--hold", "inf", "--heartbeat", str(heartbeat),
            "--min-available", str(min_available), "--json", json_path, "--quiet"]
    if worker_conns:
        args += ["--worker-conns", str(client_worker_cap(int(worker_conns), nofile))]
    if rate and str(rate) != "0":
        args += ["--rate", str(rate)]
    if src:
        args += ["--src", src]
    return args + list(extra)


def client_worker_cap(worker_conns, nofile=None):
    """WORKER_CONNS, or less: what the fd limit NOFILE (the client host's
    soft RLIMIT_NOFILE, a number or its text; this process's own when None,
    which a local run's client inherits) leaves a worker besides its
    reserve (cli_rules.FD_RESERVE). The client refuses more (exit 2); a
    limit it cannot read or no larger than the reserve caps nothing."""
    if nofile is None:
        import resource
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    elif not isinstance(nofile, int):
        nofile = int(nofile) if cli_rules.ascii_digits(str(nofile)) else 0
    if nofile > cli_rules.FD_RESERVE:
        return min(worker_conns, nofile - cli_rules.FD_RESERVE)
    return worker_conns


def is_python(name):
    """True when contender NAME is a py_server loop (runs under PYTHON)."""
    return not isinstance(_ROWS[name][1], str)


def supports(name, capability):
    """True when contender NAME implements CAPABILITY (KeyError for an
    unknown name, ValueError for an unknown capability)."""
    if capability not in CAPABILITIES:
        raise ValueError("unknown capability %r (known: %s)" % (capability, " ".join(CAPABILITIES)))
    return capability in _ROWS[name][2]


def _usage(msg):
    sys.stderr.write("contenders.py: %s\n%s" % (msg, __doc__[__doc__.index("    contenders.py cmd"):
                                                              __doc__.index("Exit 2")]))
    sys.exit(2)


def _refuse(msg):
    sys.stderr.write("contenders.py: %s\n" % msg)
    sys.exit(2)


def _known(name):
    if name not in _ROWS:
        _refuse("unknown contender %r (known: %s)" % (name, " ".join(LADDER)))
    return name


def _options(rest, opts):
    """Leading --opt VALUE pairs of REST into OPTS (a dict of defaults, None
    for a required one): (opts, the rest)."""
    while len(rest) >= 2 and rest[0] in opts:
        opts[rest[0]], rest = rest[1], rest[2:]
    return opts, rest


def main(argv):
    if not argv:
        _usage("expects a command: cmd, server-cmd, client-cmd, supports, list or default")
    what, rest = argv[0], argv[1:]
    if what == "cmd":
        opts, rest = _options(rest, {"--build": None, "--python": None})
        if None in opts.values() or not rest:
            _usage("cmd: expects --build DIR --python EXE NAME [ARG...]")
        words = command(_known(rest[0]), rest[1:], opts["--build"], opts["--python"])
        sys.stdout.write("".join(w + "\0" for w in words))
        return 0
    if what == "server-cmd":
        o, rest = _options(rest, {"--build": None, "--python": None, "--port": None, "--conns": None,
                                  "--stats": None, "--host": "0.0.0.0", "--worker-conns": "", "--gc": "freeze"})
        if None in o.values() or not rest:
            _usage("server-cmd: expects --build --python --port --conns --stats and a NAME")
        words = server_cmd(_known(rest[0]), o["--build"], o["--python"], o["--port"], o["--conns"],
                           o["--stats"], o["--host"], o["--worker-conns"], rest[1:], o["--gc"])
        sys.stdout.write("".join(w + "\0" for w in words))
        return 0
    if what == "client-cmd":
        o, rest = _options(rest, {"--build": None, "--conns": None, "--host": None, "--port": None,
                                  "--heartbeat": None, "--min-available": None, "--json": None,
                                  "--worker-conns": "", "--rate": "0", "--src": ""})
        if None in o.values():
            _usage("client-cmd: expects --build --conns --host --port --heartbeat --min-available --json")
        if o["--worker-conns"] and not cli_rules.ascii_digits(o["--worker-conns"]):
            _refuse("client-cmd: --worker-conns expects a count: %r" % o["--worker-conns"])
        words = client_cmd(o["--build"], o["--conns"], o["--host"], o["--port"], o["--heartbeat"],
                           o["--min-available"], o["--json"], o["--worker-conns"], o["--rate"],
                           o["--src"], rest)
        sys.stdout.write("".join(w + "\0" for w in words))
        return 0
    if what == "supports":
        if len(rest) != 2:
            _usage("supports: expects NAME CAPABILITY")
        if rest[1] not in CAPABILITIES:
            _refuse("unknown capability %r (known: %s)" % (rest[1], " ".join(CAPABILITIES)))
        return 0 if supports(_known(rest[0]), rest[1]) else 1
    if what in ("list", "default") and not rest:
        sys.stdout.write("".join(n + "\n" for n in (LADDER if what == "list" else DEFAULT)))
        return 0
    _usage("unknown command or extra arguments: %s" % " ".join(argv))


if __name__ == "__main__":
    import entry
    entry.run(main, sys.argv[1:])
