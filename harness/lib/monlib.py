"""monlib.py - what the monitors (rampmon.py, stallmon.py, stormmon.py,
pushmon.py) share: reading the server's counters, its processes and the
client's log, their JSON-lines files (harness/README.md "Scenario monitors";
disturb.py reads its samples with load too), the go file of a monitor started
before the moment it times (wait_go), and number(), what counts as a figure in
them (record.py's test of the client's summary too)."""
import argparse
import json
import math
import os
import signal
import stat
import subprocess
import sys
import time

import c1m_root  # noqa: F401  (py_server.cli_rules)
import runstore
from py_server.cli_rules import ascii_digits

# c1m-stat --wait's largest N (c_server/server/stat_main.c): past it, it
# refuses at once, and a watch polling it would poll without pause
WAIT_MAX = 1 << 40


def stat_get(c1m_stat, stats, key):
    """A counter of the server's counters file (c1m-stat --get), or None."""
    if not c1m_stat or not stats:
        return None
    try:
        r = subprocess.run([c1m_stat, "--get", key, stats], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    v = r.stdout.strip()
    return int(v) if r.returncode == 0 and v.isdigit() else None


def stat_total(c1m_stat, stats):
    """{counter: int} of the counters file's total line (c1m-stat --total: one
    process for them all; {} when unreadable)."""
    try:
        r = subprocess.run([c1m_stat, "--total", stats], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode != 0:
        return {}
    return {k: int(v) for k, _, v in (w.partition("=") for w in r.stdout.split()) if ascii_digits(v)}


def stop_flag():
    """A list that gets an item when SIGTERM, SIGINT or SIGHUP arrives: a
    monitor looks at it each pass and ends then (the run is being stopped)."""
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.append(1))
    return stop


def go_words(path):
    """The words of a go file's one complete line, or None while it has none.
    Only a regular file, opened without blocking (a FIFO there would hold the
    monitor in open(), deaf to its stop signals), its first 100 bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        line = os.read(fd, 100).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    return line.split() if line.endswith("\n") else None


def wait_go(path, parse, stop, root=None):
    """A monitor started before the moment it times (rampmon: the client's
    start; pushmon: the broadcast's signal), so that its own start-up is out
    of the timed window: creates PATH.ready once it waits, then polls PATH
    every 2 ms until parse(go_words(PATH)) is not None, and returns that.
    None when a stop signal came (stop_flag) or the process ROOT is gone;
    OSError when PATH.ready cannot be created (a FIFO in its place: ENXIO,
    not an open() waiting for a reader that never comes)."""
    os.close(os.open(path + ".ready", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o644))
    while True:
        words = go_words(path)
        got = parse(words) if words is not None else None
        if got is not None:
            return got
        if stop or (root and not live(root)):
            return None
        time.sleep(0.002)


def wait_open(c1m_stat, stats, n):
    """True once the server's counters show N open (c1m-stat --wait open=N,
    for at most a second; False at once when a worker is dead)."""
    try:
        return subprocess.run([c1m_stat, "--wait", f"open={n}", "--timeout", "1", stats],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def log_tail(path):
    """A log's last two lines on one line, at most 160 characters, without
    '=' (a note's words, never a key=value)."""
    try:
        with open(path, errors="replace") as f:
            text = "".join(f.readlines()[-2:])
    except OSError:
        return ""
    return text.replace("\n", " ").replace("=", " ")[:160].rstrip(" ")


def live(pid):
    """A process there and not a zombie (probe.sh pids_gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return st not in ("Z", "X")


def number(v):
    """V when it is a figure: an int or a float (not a bool), finite and under
    2**63 in size (a 64-bit counter's; runstore.check_run refuses larger
    integers, and sums of such figures cannot overflow to inf); else None.
    What the monitors' summaries and record.py take from a JSON file."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not math.isfinite(v) or abs(v) >= 1 << 63:
        return None
    return v


def append(path, obj):
    with open(path, "a") as f:
        f.write(json.dumps(obj) + "\n")


def load(path, missing_ok=True):
    """The JSON objects of PATH's lines ([] without the file, if MISSING_OK). A
    line that is none (cut by a kill or a full disk, not text) is skipped: the
    others still count. OSError when PATH cannot be read or is no regular file
    (runstore.open_regular: a FIFO held the summary in open() for ever)."""
    try:
        with runstore.open_regular(path, errors="replace") as f:
            lines = f.readlines()
    except FileNotFoundError:
        if not missing_ok:
            raise
        return []
    out = []
    for line in lines:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def usage(prog, doc, msg=None):
    """A monitor's usage (the second paragraph of its DOC) on stderr, exit 2."""
    if msg:
        print(f"{prog}: {msg}", file=sys.stderr)
    print(doc.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def positive(kind):
    """An argparse type: a finite KIND (int or float) above 0."""
    def conv(text):
        try:
            v = kind(text)
            finite = math.isfinite(v)
        except (ValueError, OverflowError):     # (an int past a float's range)
            v, finite = None, False
        if v is None or not finite or v <= 0:
            raise argparse.ArgumentTypeError("expects a %s above 0, not %r"
                                             % ("whole number" if kind is int else "number", text))
        return v
    return conv


def finite(text):
    """An argparse type: a finite number (nan and inf refused)."""
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError("expects a finite number, not %r" % text)
    return v


def at_most(conv, top):
    """An argparse type: CONV's value (another of these types), at most TOP."""
    def check(text):
        v = conv(text)
        if v > top:
            raise argparse.ArgumentTypeError("at most %g, not %s" % (top, text))
        return v
    return check


def conns(text):
    """An argparse type: a connection count c1m-stat --wait can wait for,
    1..WAIT_MAX."""
    v = positive(int)(text)
    if v > WAIT_MAX:
        raise argparse.ArgumentTypeError("at most 2^40 (c1m-stat --wait's bound), not %s" % text)
    return v


def count():
    """An argparse type: a whole number >= 0."""
    def conv(text):
        if not ascii_digits(text) or len(text) > 12:
            raise argparse.ArgumentTypeError("expects a whole number >= 0, not %r" % text)
        return int(text)
    return conv


def parser(prog, doc, cmd):
    """An ArgumentParser for PROG's subcommand CMD whose errors go to usage()."""
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            usage(prog, doc, message)
    return Parser(prog=f"{prog} {cmd}")
