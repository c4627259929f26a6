"""pycalib.py - how fast this machine runs interpreted Python: the second
calibration figure of a suite, beside c1m-calib's (the floor's CPU per accept,
the cost of a syscall).

    pycalib.py run [--rounds N] [--iterations N] [--add-to FILE|-]

Why: a ratio to the floor cancels what the kernel's accept costs on a machine,
not how fast its CPU runs the interpreter. Two instances with other CPU models
(results/reference-2026-12-04-late, AMD EPYC, against results/reference, Intel
Xeon) kept c's, pyext's and uvloop's CPU ratios to the floor and moved the
asyncio servers' by 1.25-1.5x (docs/reference.md). This figure is what such a
comparison needs to tell an interpreter that runs slower from a contender
that got dearer.

The loop is a stand-in for the Python an asyncio accept runs (no I/O, no
allocation the collector keeps): a protocol-like object made with four
attributes, a bound method call that reads two of them, a dict insert and
removal keyed by an int, a closure call and a list append/pop. CPU time
(process_time_ns) per iteration, ROUNDS rounds of ITERATIONS, the median and
the range. Output: one JSON object, {"python_ns": {"median", "min", "max"},
"python_iterations", "python_rounds", "python_implementation"}; with --add-to,
FILE's JSON object (c1m-calib's, - for stdin) with those keys added.
Exit: 0, 1 when FILE cannot be read or is not a JSON object, 2 usage; a Ctrl-C ends it by SIGINT (130; lib/entry.py).
"""
import argparse
import json
import platform
import statistics
import sys
import time

import entry
from runstore import open_regular


class _Proto:
    __slots__ = ("transport", "counters", "buf", "peer")

    def __init__(self, transport, counters):
        self.transport = transport
        self.counters = counters
        self.buf = None
        self.peer = None

    def connection_made(self, transport):
        self.transport = transport
        return self.counters[0] + 1


def _round(n):
    """CPU nanoseconds per iteration of the stand-in loop, over N iterations."""
    conns = {}
    counters = [0]
    ready = []

    def schedule(cb, arg):
        ready.append((cb, arg))

    t0 = time.process_time_ns()
    for i in range(n):
        p = _Proto(None, counters)
        counters[0] = p.connection_made(i)
        conns[i] = p
        schedule(p.connection_made, i)
        cb, arg = ready.pop()
        cb(arg)
        del conns[i]
    return (time.process_time_ns() - t0) / n


def measure(rounds=5, iterations=200000):
    _round(min(iterations, 1000))       # warm up: the specialising interpreter
    per = [_round(iterations) for _ in range(rounds)]
    return {"python_ns": {"median": round(statistics.median(per), 1),
                          "min": round(min(per), 1), "max": round(max(per), 1)},
            "python_iterations": iterations, "python_rounds": rounds,
            "python_implementation": "%s %s" % (platform.python_implementation(),
                                                platform.python_version())}


def _count(lo, hi):
    def parse(text):
        try:
            v = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("a whole number, not %r" % text)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError("%d..%d, not %d" % (lo, hi, v))
        return v
    return parse


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if not argv or argv[0] != "run":
        print("usage: pycalib.py run [--rounds N] [--iterations N] [--add-to FILE|-]",
              file=sys.stderr)
        return 2
    argv = argv[1:]
    ap = argparse.ArgumentParser(prog="pycalib.py run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=_count(1, 50), default=5)
    ap.add_argument("--iterations", type=_count(100, 10000000), default=200000)
    ap.add_argument("--add-to", metavar="FILE", help="a JSON object to add the figures to (- stdin)")
    a = ap.parse_args(argv)
    base = {}
    if a.add_to:
        try:
            if a.add_to == "-":
                base = json.load(sys.stdin)
            else:
                # (a regular file: a FIFO held open() for ever)
                with open_regular(a.add_to) as f:
                    base = json.load(f)
        except OSError as e:
            print("pycalib.py: %s: %s" % (a.add_to, e.strerror), file=sys.stderr)
            return 1
        except (ValueError, RecursionError) as e:     # (RecursionError: JSON nested past the parser)
            print("pycalib.py: %s: not JSON: %s" % (a.add_to, e), file=sys.stderr)
            return 1
        if not isinstance(base, dict):
            print("pycalib.py: %s: not a JSON object" % a.add_to, file=sys.stderr)
            return 1
    base.update(measure(a.rounds, a.iterations))
    print(json.dumps(base))
    return 0


if __name__ == "__main__":
    entry.run(main, sys.argv[1:])
