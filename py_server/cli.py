"""Command line of the Python contenders: one entry point, the contender chosen
by --loop and --api. The shared flags mean what they mean for c1m-server.
"""
import argparse
import math
import os
import resource
import sys

from . import push
from .cli_rules import FD_RESERVE, ascii_digits, parse_long  # noqa: F401  (cli.FD_RESERVE: anatomy, tests)

# --workers auto plans for 95% fill, as the C server: SO_REUSEPORT hashing is
# not perfectly even, and a full worker hands its share to the others.
AUTO_FILL = 0.95
# --workers at most, given or computed (auto), as the C server
MAX_WORKERS = 4096

KINDS = {
    ("asyncio", "streams"): "asyncio-streams",
    ("asyncio", "protocol"): "asyncio-protocol",
    ("uvloop", "streams"): "uvloop-streams",
    ("uvloop", "protocol"): "uvloop-protocol",
    ("c1m", "protocol"): "pyext",
    ("gevent", "blocking"): "gevent",    # a greenlet per connection (gevent_server.py)
    ("threads", "blocking"): "threads",  # a thread per connection (threads_server.py)
}
# The loops whose handler blocks (blocking.py): no --push (only the Protocol
# and streams contenders push).
BLOCKING_LOOPS = ("gevent", "threads")

# --gc: the garbage-collector settings of the ladder of fixes (bench PY_GC);
# freeze, the first, is py_server's own (gc.freeze() before forking)
GC_MODES = ("freeze", "default", "off")
# --slots: the Protocol class with its __slots__ (on) or without (off: the
# ladder of fixes' __slots__ step, measured by py_server.anatomy)
SLOTS = ("on", "off")

USAGE = ("python3 -m py_server --loop asyncio|uvloop|c1m|gevent|threads --api streams|protocol|"
         "blocking\n       [--host H] "
         "[--port P|LO-HI]\n       [--backlog N] [--workers N|auto] [--max-conns N] [--worker-conns N] "
         "[--sndbuf B]\n       [--rcvbuf B] [--max-pending B] [--push BYTES [--push-every S "
         "[--push-burst]] [--push-flow honour|ignore]]\n       [--stats PATH] [--quiet] "
         "[--gc freeze|default|off] [--slots on|off]")

EPILOG = """contenders (each step changes one thing):
  --loop asyncio --api streams    asyncio-streams: seed 000's asyncio.start_server handler
  --loop asyncio --api protocol   asyncio-protocol: one asyncio.Protocol class with __slots__
  --loop uvloop  --api protocol   uvloop-protocol: the same class on uvloop
  --loop c1m     --api protocol   pyext: the same class on the c1m extension's loop
  --loop uvloop  --api streams    uvloop-streams: seed 000's handler on uvloop
  --loop gevent  --api blocking   gevent: StreamServer, a greenlet per connection
  --loop threads --api blocking   threads: a thread per connection (--thread-stack)

Exit status: 0 after SIGTERM/SIGINT with every worker clean, 1 if a worker failed
or died, 2 on a usage error, 3 if the loop is unavailable (uvloop, c1m or gevent not
importable).
"""


def nofile_limit():
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# host names as c1m-server takes them (C1M_HOST_MAX in c_server/lib/cli.h)
HOST_MAX = 64


def _number(lo, hi, suffix, why):
    def conv(s):
        try:
            return parse_long(s, lo, hi, suffix)
        except ValueError:
            raise argparse.ArgumentTypeError("%r: %s" % (s, why)) from None
    return conv


def _workers(s):
    if s == "auto":
        return 0
    try:
        return parse_long(s, 1, MAX_WORKERS, False)
    except ValueError:
        raise argparse.ArgumentTypeError("%r: expects a number 1-4096 or 'auto'" % s) from None


PORTS_MAX = 1024  # c1m_parse_ports's C1M_PORTS_MAX


def parse_ports(s):
    """(lo, count) of a --port value: P or LO-HI, ports 1-65535, LO <= HI,
    at most PORTS_MAX ports (c1m_parse_ports's rules)."""
    a, dash, b = s.partition("-")
    lo = parse_long(a, 1, 65535, False)
    hi = parse_long(b, 1, 65535, False) if dash else lo
    if hi < lo or hi - lo + 1 > PORTS_MAX:
        raise ValueError(s)
    return lo, hi - lo + 1


def _ports(s):
    try:
        return parse_ports(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r: expects a port 1-65535 or a range LO-HI (LO <= HI, "
                                         "at most %d ports)" % (s, PORTS_MAX)) from None


def _nonempty(what):
    def conv(s):
        if not s:
            raise argparse.ArgumentTypeError("empty %s" % what)
        return s
    return conv


def parse_seconds(s, lo, hi):
    """Seconds as c1m_parse_seconds takes them: ASCII digits[.digits] or
    .digits (no sign, exponent, inf, nan or spaces), in [lo, hi]."""
    whole, dot, frac = s.partition(".")
    if not (whole or frac) or len(whole) > 15 or not all(
            x == "" or ascii_digits(x) for x in (whole, frac)) or (dot and not whole and not frac):
        raise ValueError(s)
    x = float(s)
    if not lo <= x <= hi:
        raise ValueError(s)
    return x


def _push_every(s):
    try:
        return parse_seconds(s, push.MIN_EVERY, push.MAX_EVERY)
    except ValueError:
        raise argparse.ArgumentTypeError("%r: expects seconds %g-%g (e.g. 30 or 0.5)"
                                         % (s, push.MIN_EVERY, push.MAX_EVERY)) from None


def _host(s):
    if not s or len(s.encode("utf-8", "surrogateescape")) >= HOST_MAX:
        raise argparse.ArgumentTypeError("%r: expects a host name or address of 1-%d bytes"
                                         % (s, HOST_MAX - 1))
    return s


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # "argument --port: '70000': expects a port 1-65535" names the flag; exit 2
        sys.stderr.write("py_server: %s\nusage: %s\n" % (message, USAGE))
        sys.exit(2)


def build_parser():
    nofile = nofile_limit()
    p = _Parser(prog="python3 -m py_server", usage=USAGE,
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
                description="Holds idle TCP connections in N SO_REUSEPORT worker processes on a "
                            "Python event loop. Answers \"ping\\n\" with \"pong\\n\"; other lines "
                            "are counted.")
    p.add_argument("--loop", required=True,
                   choices=("asyncio", "uvloop", "c1m") + BLOCKING_LOOPS,
                   help="event loop: asyncio's default, uvloop, the c1m extension's; or "
                        "gevent's hub, or none (threads)")
    p.add_argument("--api", required=True, choices=("streams", "protocol", "blocking"),
                   help="seed 000's streams handler, the Protocol class, or a handler that "
                        "blocks in recv/send (gevent, threads)")
    p.add_argument("--thread-stack", default=None, metavar="B",
                   type=_number(32768, 1 << 30, True, "expects bytes 32768-1073741824"),
                   help="--loop threads: stack size of each connection thread "
                        "(threading.stack_size; default 256 KiB)")
    p.add_argument("--host", default="0.0.0.0", type=_host,
                   help="address to listen on (default 0.0.0.0)")
    # not 0: a kernel-chosen port is reported nowhere, and a listener re-opened
    # after the fd-cap back-off would get another one
    p.add_argument("--port", default=(9000, 1), type=_ports, metavar="P|LO-HI",
                   help="TCP port (default 9000), or a range of up to %d ports: worker i "
                        "listens on LO + i mod the range's size (the workers: a multiple of the "
                        "ports; auto rounds up)" % PORTS_MAX)
    p.add_argument("--backlog", default=65535,
                   type=_number(1, 1 << 20, True, "expects a number 1-1048576"),
                   help="listen() backlog per worker (default 65535; the kernel caps it at "
                        "net.core.somaxconn)")
    p.add_argument("--workers", default=0, type=_workers, metavar="N|auto",
                   help="worker processes (default auto: enough workers of --worker-conns each "
                        "to hold --max-conns at %d%%%% fill)" % (AUTO_FILL * 100))
    p.add_argument("--max-conns", default=10000,
                   type=_number(1, 100000000, True, "expects a number 1-100m (k/m suffixes "
                                                    "allowed)"),
                   metavar="N", help="connections the server is sized for (default 10000)")
    p.add_argument("--worker-conns", default=None,
                   type=_number(1, 100000000, True, "expects a positive number"), metavar="N",
                   help="per-worker cap: a worker at the cap closes its listener and re-opens it "
                        "below 90%%%% (default RLIMIT_NOFILE - %d = %d here)"
                        % (FD_RESERVE, nofile - FD_RESERVE))
    bufs = _number(0, 1 << 28, True, "expects bytes 0-268435456 (0 = kernel default)")
    p.add_argument("--sndbuf", default=4096, type=bufs, metavar="B",
                   help="SO_SNDBUF per connection (default 4096; 0 = kernel default)")
    p.add_argument("--rcvbuf", default=4096, type=bufs, metavar="B",
                   help="SO_RCVBUF per connection (default 4096; 0 = kernel default)")
    p.add_argument("--max-pending", default=4096, metavar="B",
                   type=_number(1, 1 << 30, True, "expects bytes 1-1073741824"),
                   help="reply bytes a connection may have waiting; over it, it is read no "
                        "more and closed as slow if the backlog does not shrink for 250 ms "
                        "(default 4096)")
    p.add_argument("--push", default=0, metavar="BYTES",
                   type=_number(push.MIN_BYTES, push.MAX_BYTES, False,
                                "expects bytes %d-%d (one line of at most 1024 bytes plus its "
                                "newline)" % (push.MIN_BYTES, push.MAX_BYTES)),
                   help="server push: messages of BYTES (newline included): b\"push SEQ USEC \" "
                        "+ '.' padding + b\"\\n\", SEQ from 1 per connection, USEC the "
                        "CLOCK_REALTIME microseconds of the write; they count toward "
                        "--max-pending like pongs. SIGUSR1 to a worker sends one to each of its "
                        "connections at once (the parent ignores SIGUSR1)")
    p.add_argument("--push-every", default=0.0, type=_push_every, metavar="S",
                   help="each connection gets one message every S seconds (%g-%g), the sends "
                        "spread evenly over the interval" % (push.MIN_EVERY, push.MAX_EVERY))
    p.add_argument("--push-burst", action="store_true",
                   help="each interval's messages go to all connections at once")
    p.add_argument("--push-flow", default="honour", choices=push.FLOWS,
                   help="honour (default): the idiom that respects flow control (Protocol: "
                        "skip while pause_writing() holds, the slow rule over --max-pending; "
                        "streams: await drain()); ignore: the naive idiom, which writes every "
                        "push whatever is queued (Protocol: transport.write() without "
                        "pause_writing(); streams: write() without drain()), so a peer that "
                        "stops reading makes the server's buffer grow without limit")
    p.add_argument("--stats", default=None, type=_nonempty("path"), metavar="PATH",
                   help="live counters file (default /dev/shm/c1m-KIND-PORT-PID.stats, "
                        "removed when the server exits); read it with c1m-stat")
    p.add_argument("--quiet", action="store_true", help="no start/stop messages")
    p.add_argument("--gc", default="freeze", choices=GC_MODES,
                   help="the garbage collector: freeze (the default: gc.freeze() in the parent "
                        "after start-up, before forking the workers: what start-up made is never "
                        "scanned again); default (CPython's collector untouched: no freeze); off "
                        "(the freeze, then gc.disable() in every worker while serving)")
    p.add_argument("--slots", default="on", choices=SLOTS,
                   help="--api protocol: on (the default): the Protocol class with __slots__; "
                        "off: the same class without them, each connection's attributes in an "
                        "instance __dict__ (what __slots__ saves: python3 -m py_server.anatomy "
                        "--slots off)")
    return p


def api_error(loop, api):
    """Why --loop LOOP takes no --api API (None when it does): py_server's and
    py_server.anatomy's message."""
    if (loop, api) in KINDS:
        return None
    if loop in BLOCKING_LOOPS or api == "blocking":
        return "argument --api: --loop gevent and --loop threads take --api blocking, and only they"
    return "argument --api: the %s loop has no %s API; use --api protocol" % (loop, api)


def parse(argv=None):
    """Parsed and validated configuration (an argparse.Namespace with kind,
    worker_conns and workers resolved). Exits 2 on a usage error."""
    p = build_parser()
    cfg = p.parse_args(argv)
    kind = KINDS.get((cfg.loop, cfg.api))
    if kind is None:
        p.error(api_error(cfg.loop, cfg.api))
    if cfg.thread_stack is not None and cfg.loop != "threads":
        p.error("argument --thread-stack: only for --loop threads")
    if cfg.loop in BLOCKING_LOOPS and getattr(cfg, "push", 0):
        p.error("argument --push: not implemented by --loop %s" % cfg.loop)
    if cfg.slots == "off" and cfg.api != "protocol":
        p.error("argument --slots: off is for --api protocol (the Protocol class); the %s "
                "server has no class of ours" % cfg.api)
    if cfg.slots == "off" and cfg.push:
        p.error("argument --slots: off is not implemented with --push")
    cfg.kind = kind
    # cfg.port: a worker's own port (workers.py sets it per worker from LO)
    cfg.port, cfg.port_count = cfg.port
    if cfg.push_every and not cfg.push:
        p.error("argument --push-every: needs --push BYTES")
    if cfg.push_burst and not cfg.push:
        p.error("argument --push-burst: needs --push BYTES and --push-every S")
    if cfg.push_burst and not cfg.push_every:
        p.error("argument --push-burst: needs --push-every S")
    if cfg.push_flow != "honour" and not cfg.push:
        p.error("argument --push-flow: needs --push BYTES")
    if cfg.push and cfg.max_pending < cfg.push:
        # one message alone over the bound would cut every reader as slow
        p.error("argument --max-pending: %d is less than --push %d (one message)"
                % (cfg.max_pending, cfg.push))
    nofile = nofile_limit()
    limit = nofile - FD_RESERVE
    if limit < 1:
        p.error("argument --worker-conns: RLIMIT_NOFILE is too low to hold any connection")
    if cfg.worker_conns is None:
        cfg.worker_conns = limit
    elif cfg.worker_conns > limit:
        p.error("argument --worker-conns: %d exceeds RLIMIT_NOFILE %d minus %d reserved fds"
                % (cfg.worker_conns, nofile, FD_RESERVE))
    cfg.workers_auto = cfg.workers == 0
    if cfg.workers_auto:
        per = max(1, int(cfg.worker_conns * AUTO_FILL))
        cfg.workers = max(1, math.ceil(cfg.max_conns / per))
        if cfg.workers > MAX_WORKERS:   # the bound of --workers holds for auto too
            p.error("argument --max-conns: %d connections need more than %d workers of %d"
                    % (cfg.max_conns, MAX_WORKERS, per))
        # every port gets as many workers: the client spreads its connects evenly
        cfg.workers = -(-cfg.workers // cfg.port_count) * cfg.port_count
        if cfg.workers > MAX_WORKERS:
            p.error("argument --max-conns: too many workers for the ports")
    elif cfg.workers % cfg.port_count:
        p.error("argument --workers: %d workers over %d ports: a multiple of %d (each port gets "
                "as many workers; the client spreads evenly)" % (cfg.workers, cfg.port_count,
                                                                 cfg.port_count))
    # The default file is this process's own (the pid makes it unique across
    # network namespaces and runs); workers.run removes it at exit.
    cfg.stats_default = cfg.stats is None
    if cfg.stats_default:
        cfg.stats = "/dev/shm/c1m-%s-%d-%d.stats" % (kind, cfg.port, os.getpid())
    return cfg
