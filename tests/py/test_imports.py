"""tests/py/test_imports.py - the import graph of harness/ and py_server/ has
no circle. Read with ast (nothing is imported): every import statement,
function-level ones included (a lazy import hides a circle, it does not break
it), plus results.py's report modules, which it imports by name
(report_modules: every harness/lib/report_*.py). Nodes: harness/lib's modules
and harness's Python scripts by file name, py_server's as py_server.NAME.

    python3 -m unittest tests.py.test_imports
    python3 tests/py/test_imports.py        prints the graph (one module a line)
"""
import ast
import glob
import os
import sys
import unittest

from util import ROOT  # noqa: E402


def is_python(path):
    if path.endswith(".py"):
        return True
    try:
        with open(path, "rb") as f:
            return b"python" in f.readline()
    except OSError:
        return False


def sources():
    """{node: path} of every Python file in harness/ and py_server/."""
    out = {}
    for p in sorted(glob.glob(os.path.join(ROOT, "harness", "*")) +
                    glob.glob(os.path.join(ROOT, "harness", "lib", "*.py"))):
        if os.path.isfile(p) and is_python(p):
            out[os.path.basename(p)[:-3] if p.endswith(".py") else os.path.basename(p)] = p
    for p in sorted(glob.glob(os.path.join(ROOT, "py_server", "*.py"))):
        out["py_server." + os.path.basename(p)[:-3]] = p
    return out


def edges(node, path, nodes):
    """The nodes that node imports."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for n in ast.walk(tree):
        names = []
        if isinstance(n, ast.Import):
            names = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:                       # from . import x / from .x import y
                base = "py_server" + ("." + base if base else "")
            names = [base] + [base + "." + a.name for a in n.names]
        out |= {name for name in names if name in nodes}
    if node == "results":                     # report_modules(): imported by name
        out |= {m for m in nodes if m.startswith("report_")}
    out.discard(node)
    return out


def graph():
    nodes = sources()
    return {n: sorted(edges(n, p, nodes)) for n, p in nodes.items()}


def cycles(g):
    """Every circle found by a depth-first walk, as a list of nodes."""
    found, state, stack = [], {}, []

    def walk(n):
        state[n] = 1
        stack.append(n)
        for m in g.get(n, ()):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif not state.get(m):
                walk(m)
        stack.pop()
        state[n] = 2

    for n in sorted(g):
        if not state.get(n):
            walk(n)
    return found


class NoCircle(unittest.TestCase):
    def test_no_circle(self):
        g = graph()
        self.assertIn("capacity_model", g)    # the walk found the tree
        self.assertIn("py_server.loops", g)
        self.assertEqual(cycles(g), [])

    def test_finds_a_circle(self):
        self.assertEqual(cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}), [["a", "b", "c", "a"]])

    def test_lazy_import_counts(self):
        # an import inside a function is an edge (as capacity.py's was)
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.py")
            with open(p, "w") as f:
                f.write("def f():\n    import y\n    from z import w\n")
            self.assertEqual(edges("x", p, {"x": p, "y": p, "z": p}), {"y", "z"})


if __name__ == "__main__":
    if len(sys.argv) == 1:
        g = graph()
        for n in sorted(g):
            print("%s -> %s" % (n, ", ".join(g[n]) or "-"))
        c = cycles(g)
        print("circles: %s" % ("; ".join(" -> ".join(x) for x in c) if c else "none"))
        sys.exit(1 if c else 0)
    unittest.main()
