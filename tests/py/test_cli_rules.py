"""tests/py/test_cli_rules.py - the rules C and Python share agree: the k/m
count parser (c_server/lib/cli.c c1m_parse_long vs py_server/cli_rules.py
parse_long), usable memory (c_server/lib/sysinfo.c c1m_meminfo_usable_kib vs
cli_rules.meminfo_usable_kib) and the fd reserve (net.h C1M_FD_RESERVE vs
cli_rules.FD_RESERVE), over a table of inputs, bad ones included. The C side
is tests/c/rules_probe.c, built by make into $C1M_BUILD/tests/rules_probe
(C1M_BUILD defaults to ./build). The shell's copy of the count parser in
harness/lib/common.sh (parse_tier) is held to the C side too, over the same
counts. (Usable memory has no shell copy: bench.sh's guard is
harness/lib/memguard.py.) No sockets, no timing.

    C1M_BUILD=$PWD/build python3 -m unittest tests.py.test_cli_rules
"""
import os
import subprocess
import tempfile
import unittest

from util import ROOT  # noqa: E402  (the root on sys.path)

from py_server import cli_rules  # noqa: E402

PROBE = os.path.join(os.environ.get("C1M_BUILD") or os.path.join(ROOT, "build"), "tests", "rules_probe")

# (text, lo, hi, suffix)
COUNTS = [
    ("0", 0, 10, 0), ("10", 0, 10, 0), ("11", 0, 10, 0), ("007", 1, 100, 0),
    ("10k", 1, 10 ** 9, 1), ("10K", 1, 10 ** 9, 1), ("1m", 1, 10 ** 9, 1), ("1M", 1, 10 ** 9, 1),
    ("10k", 1, 10 ** 9, 0), ("1000000", 1, 10 ** 6, 1), ("1000001", 1, 10 ** 6, 1),
    ("1001k", 1, 10 ** 6, 1), ("2m", 1, 10 ** 6, 1),
    ("", 0, 10, 1), ("k", 0, 10 ** 6, 1), ("m", 0, 10 ** 6, 1), ("1g", 1, 10 ** 12, 1),
    ("1kk", 1, 10 ** 9, 1), ("1km", 1, 10 ** 9, 1), ("-1", 0, 10, 1), ("+1", 0, 10, 1),
    (" 1", 0, 10, 1), ("1 ", 0, 10, 1), ("1.5k", 1, 10 ** 9, 1), ("0x10", 0, 100, 1),
    ("1e3", 0, 10 ** 6, 1), ("\u0663", 0, 10, 1), ("\uff19", 0, 10, 1),
    ("9223372036854775807", 0, (1 << 63) - 1, 0), ("9223372036854775808", 0, (1 << 63) - 1, 0),
    ("9223372036854775807k", 0, (1 << 63) - 1, 1), ("99999999999999999999999", 0, (1 << 63) - 1, 1),
]

MEMINFOS = [
    # the kernel's OOM kill at 1M (results/reference-stall-1m-10pct): nothing usable
    "MemTotal:       24684596 kB\nMemAvailable:    2059264 kB\nSReclaimable:    2115076 kB\n",
    "MemAvailable:   22000000 kB\nSReclaimable:      51200 kB\n",
    "SReclaimable:   100 kB\nSUnreclaim:     7 kB\nMemAvailable:   1000 kB\n",
    "MemFree: 5 kB\nMemAvailable: 4096 kB\n",             # no SReclaimable: MemAvailable alone
    "MemFree: 5 kB\nSReclaimable: 1 kB\n",                # no MemAvailable: unreadable
    "MemAvailable: lots\n", "MemAvailable:", "", "MemAvailable: -5 kB\n",
    "MemAvailableX: 9 kB\nMemAvailable: 10 kB\n", "XMemAvailable: 9 kB\n",
    "MemAvailable: 12abc kB\nSReclaimable: x\n", "MemAvailable:\n 77 kB\n",
    "MemAvailable: 10 kB\nMemAvailable: 20 kB\n",          # the first one counts
    "MemAvailable: 99999999999999999999 kB\n",
    "MemAvailable: 100 kB\nSReclaimable: 99999999999999999999 kB\n",
]


def common_sh(script, *args):
    """bash with harness/lib/common.sh sourced: script's output lines."""
    r = subprocess.run(["bash", "-c", ". harness/lib/common.sh; " + script, "common_sh"] + list(args),
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("common.sh: exit %d: %s" % (r.returncode, r.stderr))
    return r.stdout.split("\n")[:-1]


def probe(*args):
    r = subprocess.run([PROBE] + [str(a) for a in args], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise AssertionError("rules_probe %s: exit %d: %s" % (args, r.returncode, r.stderr))
    return r.stdout.strip()


class Agree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(PROBE, os.X_OK):
            raise AssertionError("no %s: make build (or set C1M_BUILD)" % PROBE)

    def test_count_parser(self):
        for text, lo, hi, suffix in COUNTS:
            with self.subTest(text=text, lo=lo, hi=hi, suffix=suffix):
                try:
                    py = str(cli_rules.parse_long(text, lo, hi, bool(suffix)))
                except ValueError:
                    py = "error"
                self.assertEqual(py, probe("count", text, lo, hi, suffix))

    def test_usable_memory(self):
        with tempfile.TemporaryDirectory() as d:
            for i, text in enumerate(MEMINFOS):
                p = os.path.join(d, "meminfo%d" % i)
                with open(p, "w") as f:
                    f.write(text)
                with self.subTest(meminfo=text):
                    py = cli_rules.mem_usable_kib(p)
                    self.assertEqual("-1" if py is None else str(py), probe("usable", p))

    def test_shell_count_parser(self):
        # parse_tier's bound is what this machine could ever hold (tier_max)
        tmax = int(common_sh("tier_max")[0])
        texts = [c[0] for c in COUNTS]
        got = common_sh('for t in "$@"; do parse_tier "$t" && echo "$TIER_VALUE" || echo error; done', *texts)
        for text, sh in zip(texts, got):
            with self.subTest(text=text):
                self.assertEqual(sh, probe("count", text, 1, tmax, 1))

    def test_fd_reserve(self):
        self.assertEqual(str(cli_rules.FD_RESERVE), probe("fd-reserve"))


if __name__ == "__main__":
    unittest.main()
