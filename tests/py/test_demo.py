"""tests/py/test_demo.py - harness/lib/demo.py (make demo's figures) on bad
input: a damaged anatomy file or a run directory without runs is said (exit 1),
never a traceback. Synthetic directories; stdlib only, no sockets.

    python3 -m unittest tests.py.test_demo
"""
import contextlib
import io
import json
import os
import unittest

from test_results import TmpDir  # noqa: E402

import demo  # noqa: E402

ANATOMY = {"kind": "asyncio-streams", "connections": 2000, "rss_anon_bytes": 5278.0,
           "outside_gc_bytes": 1522.0, "gc_tracked_bytes": 3756.0, "python_version": "3.11.2",
           "types": [{"type": "coroutine", "objects": 3.0, "bytes": 872.0}]}


class TestDemoInput(TmpDir):
    def run_demo(self, run_dir, anatomy):
        path = os.path.join(self.dir, "anatomy.json")
        with open(path, "w") as f:
            json.dump(anatomy, f)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = demo.main(["demo.py", run_dir, path, os.path.join(self.dir, "data"), "asyncio-streams"])
        return rc, out.getvalue(), err.getvalue()

    def test_a_good_anatomy_is_drawn(self):
        d = self.subdir("run")
        self.add(d, "c", 2000, 1, "ok", user_bytes_per_conn=100, kernel_bytes_per_conn=8000,
                 server_cpu_connect_s=0.1, accepted=2000)
        rc, out, err = self.run_demo(d, ANATOMY)
        self.assertEqual(rc, 0, err)
        self.assertIn("3756 B in gc-tracked objects (coroutine 872, ...)", out)

    def test_a_long_type_name_leaves_the_panel_its_bars(self):
        # make demo DEMO_ANATOMY=asyncio-protocol: the axis label
        # asyncio.selector_events._SelectorSocketTransport (48 characters)
        # took the right panel's width, its bars and bytes axis squeezed to
        # a few pixels; the axis now shows the class's name, demo.json the whole
        d = self.subdir("run")
        self.add(d, "c", 2000, 1, "ok", user_bytes_per_conn=100, kernel_bytes_per_conn=8000,
                 server_cpu_connect_s=0.1, accepted=2000)
        long_name = "asyncio.selector_events._SelectorSocketTransport"
        types = [{"type": long_name, "objects": 1.0, "bytes": 96.0},
                 {"type": "py_server.protocol.LineProtocol", "objects": 1.0, "bytes": 48.0},
                 {"type": "builtin_function_or_method", "objects": 1.0, "bytes": 72.0},
                 {"type": "dict", "objects": 1.0, "bytes": 243.0}]
        rc, _, err = self.run_demo(d, dict(ANATOMY, types=types))
        self.assertEqual(rc, 0, err)
        with open(os.path.join(self.dir, "data", "anatomy.dat"), encoding="utf-8") as f:
            labels = [line.rsplit(" ", 2)[0].strip('"') for line in f
                      if not line.startswith("#") and line.endswith(" 0\n")]
        self.assertEqual(len(labels), 4, labels)
        for label in labels:
            self.assertLessEqual(len(label), 28, label)
        self.assertIn("\u2026_SelectorSocketTransport", labels)
        self.assertIn("\u2026protocol.LineProtocol", labels)
        self.assertIn("builtin_function_or_method", labels)
        self.assertIn("dict", labels)
        with open(os.path.join(self.dir, "data", "demo.json")) as f:
            self.assertEqual(json.load(f)["anatomy"]["types"][0]["type"], long_name)

    def test_a_damaged_anatomy_or_no_runs_is_said_not_a_traceback(self):
        # each used to end in a TypeError, ValueError, OverflowError or
        # FileNotFoundError traceback
        d = self.subdir("run")
        self.add(d, "c", 2000, 1, "ok")
        for edit in ({"types": [1, 2]}, {"types": {"a": 1}}, {"gc_tracked_bytes": "x"},
                     {"types": [{"type": "dict", "bytes": "x"}]}, {"connections": 1e400}):
            rc, _, err = self.run_demo(d, dict(ANATOMY, **edit))
            self.assertEqual(rc, 1, edit)
            self.assertIn("demo.py: cannot read the anatomy", err)
        rc, _, err = self.run_demo(self.subdir("empty"), ANATOMY)
        self.assertEqual(rc, 1)
        self.assertIn("demo.py: cannot read the runs of", err)


class TestMeasureCommand(unittest.TestCase):
    def test_the_demo_names_the_committed_reference_settings(self):
        # the command the demo prints to measure its figures properly is the
        # one results/reference was made with (tiers, repeats, the rest), so
        # that what it measures compares with the headline
        from util import ROOT
        with open(os.path.join(ROOT, "results", "reference", "meta.json")) as f:
            words = json.load(f)["command"].split()
        settings = dict(w.split("=", 1) for w in words if "=" in w)
        cmd = demo.measure_cmd(["c", "pyext"]).split()
        mine = dict(w.split("=", 1) for w in cmd if "=" in w)
        self.assertEqual(mine["TIERS"], settings["TIERS"])
        self.assertEqual(mine["REPEAT"], settings["REPEAT"])
        for k, v in mine.items():
            if k not in ("CONTENDERS", "OUT"):
                self.assertEqual(settings.get(k), v, k)
        self.assertEqual(cmd[:2], ["make", "bench"])


class TestWhatTheDemoSets(unittest.TestCase):
    def test_the_settings_table_knows_what_run_bench_sets(self):
        # settings.py DEMO_SETS (make demo TIERS=100k is refused: the demo sets
        # it itself) is what harness/demo's run_bench gives bench.sh, but OUT,
        # PYTHON and BUILD, the demo's own passed on
        import re
        import settings
        from util import ROOT
        with open(os.path.join(ROOT, "harness", "demo")) as f:
            body = f.read()
        call = re.search(r"run_bench\(\) \{\n\s*env (.*?)\"\$C1M_ROOT/harness/bench.sh\"", body, re.S)
        self.assertIsNotNone(call, "run_bench's env line not found")
        names = set(re.findall(r"([A-Z_]+)=", call.group(1))) - {"OUT", "PYTHON", "BUILD"}
        self.assertEqual(names, settings.DEMO_SETS)


if __name__ == "__main__":
    unittest.main()
