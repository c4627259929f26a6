"""tests/py/test_plots.py - the plots' fixed parts: the contender colour table
of harness/plots/common.gp against the registry (harness/lib/contenders.sh).
Stdlib only; no gnuplot, no sockets.

    python3 -m unittest tests.py.test_plots
"""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def registry():
    """C1M_CONTENDERS of harness/lib/contenders.sh, in its order."""
    with open(os.path.join(ROOT, "harness", "lib", "contenders.sh")) as f:
        m = re.search(r"^C1M_CONTENDERS=\(([^)]*)\)", f.read(), re.M)
    return m.group(1).split()


def colour_table():
    """common.gp's ctab: [(name, colour, point type)]."""
    with open(os.path.join(ROOT, "harness", "plots", "common.gp")) as f:
        src = f.read()
    m = re.search(r"^ctab = ((?:'[^']*'\.\\\n\s*)*'[^']*')\n", src, re.M)
    if not m:
        return []
    w = "".join(re.findall(r"'([^']*)'", m.group(1))).split()
    return [tuple(w[i:i + 3]) for i in range(0, len(w), 3)]


class TestColourTable(unittest.TestCase):
    def test_every_contender_has_its_own_colour_and_point(self):
        names = registry()
        self.assertEqual(len(names), 10)
        table = colour_table()
        self.assertEqual([t[0] for t in table], names)
        for field in (1, 2):
            vals = [t[field] for t in table]
            self.assertEqual(len(set(vals)), len(vals), vals)
        for name, colour, point in table:
            self.assertRegex(colour, r"^#[0-9a-f]{6}$", name)
            self.assertNotEqual(colour, "#000000", name)   # black: an unknown name
            self.assertTrue(point.isdigit() and point != "6", name)  # 6: the disturbed marker


if __name__ == "__main__":
    unittest.main()
