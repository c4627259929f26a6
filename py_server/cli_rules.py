"""cli_rules.py - the rules the C programs, py_server and the harness share,
Python's one home of each (the C one is in c_server/lib; tests/py/
test_cli_rules.py checks the two agree over a table of inputs, bad ones
included). Standard library only: the harness imports it too
(harness/lib/c1m_root.py puts the repository root on sys.path).

- FD_RESERVE: fds a worker keeps for itself besides its connections
  (c_server/lib/net.h C1M_FD_RESERVE).
- parse_long: a whole number in ASCII digits with optional k/m suffixes
  (c_server/lib/cli.c c1m_parse_long).
- meminfo_usable_kib / mem_usable_kib: usable memory, MemAvailable less
  SReclaimable (c_server/lib/sysinfo.c c1m_meminfo_usable_kib).
- PUSH_EVERY_MIN, PUSH_EVERY_MAX: the servers' --push-every bounds, seconds
  (DEVELOPERS.md "Server push"; py_server/push.py, harness/lib/pushkept.py).
"""
import re

# fds a worker keeps for itself (loop, self-pipe, listener, stdio, slack)
FD_RESERVE = 64

LONG_MAX = (1 << 63) - 1

PUSH_EVERY_MIN, PUSH_EVERY_MAX = 0.001, 86400.0


def ascii_digits(t):
    # str.isdigit() and int() also take other scripts' digits ("٣", "９"):
    # the C programs take ASCII only, and so does this one.
    return t != "" and t.isascii() and t.isdigit()


def parse_long(s, lo, hi, suffix):
    """An integer in [lo, hi] in ASCII digits (no sign, no spaces); k/m
    suffixes (x1000, x1000000) when suffix: c1m_parse_long's rules.
    ValueError otherwise."""
    t = s
    mult = 1
    if suffix and t[-1:] in ("k", "K", "m", "M"):
        mult = 1000 if t[-1] in "kK" else 1000000
        t = t[:-1]
    if not ascii_digits(t):
        raise ValueError(s)
    x = int(t) * mult
    if not lo <= x <= hi:
        raise ValueError(s)
    return x


# strtol's view of a number: leading white space, a sign, decimal digits
_STRTOL = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def _meminfo_field(text, field):
    """The value of "FIELD:" at the start of a line of text (KiB), or None:
    the first such line, read as strtol reads it (c1m_meminfo_usable_kib)."""
    key = field + ":"
    for m in re.finditer(r"^" + re.escape(key), text, re.M):
        n = _STRTOL.match(text, m.end())
        if not n:
            return None
        v = int(n.group(1))
        return v if 0 <= v <= LONG_MAX else None
    return None


def meminfo_usable_kib(text):
    """MemAvailable less SReclaimable (KiB, at least 0) from the text of a
    meminfo file; None without a readable MemAvailable (a guard then gives no
    verdict). No SReclaimable (an old kernel): MemAvailable alone."""
    avail = _meminfo_field(text, "MemAvailable")
    if avail is None:
        return None
    rec = _meminfo_field(text, "SReclaimable") or 0
    return max(0, avail - rec)


def mem_usable_kib(path="/proc/meminfo"):
    """meminfo_usable_kib of a file (OSError when it cannot be read)."""
    with open(path) as f:
        return meminfo_usable_kib(f.read())


def mem_usable_mib(path="/proc/meminfo"):
    """The same in MiB; None when it cannot be read (a guard then gives no
    verdict, as the client's does)."""
    try:
        kib = mem_usable_kib(path)
    except (OSError, ValueError):
        return None
    return None if kib is None else kib // 1024
