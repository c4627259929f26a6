"""harness/lib/perf_layers.py (perf samples -> layers, folded stacks, the
table) and harness/lib/perf_flame.py (the flame graph renderer), on small
fixtures in `perf script` output format. No perf needed.

    python3 -m unittest tests.py.test_perf_layers
"""
import contextlib
import io
import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

import util  # noqa: E402,F401  (harness/lib on sys.path)
import perf_flame  # noqa: E402
import perf_layers as pl  # noqa: E402

K = "[kernel.kallsyms]"
PY = "/usr/bin/python3.11"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
SRV = "/work/main/build/c1m-server"
EXT = "/work/main/build/pyext/c1m.cpython-311-x86_64-linux-gnu.so"
UV = "/usr/lib/python3/dist-packages/uvloop/loop.cpython-311-x86_64-linux-gnu.so"


def sample(period, frames, comm="c1m-server", pid=100):
    """perf script text of one sample; frames leaf first, (sym or None, dso)."""
    lines = ["%s %d/%d %d cpu-clock: " % (comm, pid, pid, period)]
    for i, (sym, dso) in enumerate(frames):
        s = "[unknown]" if sym is None else "%s+0x%x" % (sym, 16 + i)
        lines.append("\t%16x %s (%s)" % (0xffffffff81000000 + i if dso == K else 0x7f0000001000 + i, s, dso))
    return "\n".join(lines) + "\n\n"


def frames(*spec):
    return [pl.Frame(sym, dso, dso == K) for sym, dso in spec]


ACCEPT = [("_raw_spin_unlock_irqrestore", K), ("inet_csk_accept", K), ("do_accept", K),
          ("__sys_accept4", K), ("do_syscall_64", K), ("entry_SYSCALL_64_after_hwframe", K),
          ("accept4", LIBC), ("on_listen_io", SRV), ("c1m_loop_run_once", SRV), ("main", SRV)]
EPOLL_WAIT = [("finish_task_switch.isra.0", K), ("__schedule", K), ("schedule_hrtimeout_range", K),
              ("do_epoll_wait", K), ("__x64_sys_epoll_wait", K), ("do_syscall_64", K),
              ("epoll_wait", LIBC), ("c1m_loop_run_once", SRV)]
SOFTIRQ_IN_EPOLL = [("tcp_v4_rcv", K), ("ip_local_deliver_finish", K), ("__netif_receive_skb_one_core", K),
                    ("net_rx_action", K), ("__do_softirq", K), ("do_epoll_wait", K), ("do_syscall_64", K),
                    ("epoll_wait", LIBC)]
SYSCALL_EXIT = [("syscall_exit_to_user_mode", K), ("do_syscall_64", K), ("accept4", LIBC), ("on_listen_io", SRV)]
CLOSE_FALLBACK = [("dput", K), ("__fput", K), ("task_work_run", K), ("__x64_sys_close", K),
                  ("do_syscall_64", K), ("close", LIBC)]
PY_ALLOC = [("PyObject_Malloc", PY), ("_PyEval_EvalFrameDefault", PY), ("on_accept", EXT)]
PY_MEMCPY = [("__memmove_avx_unaligned_erms", LIBC), ("_PyEval_EvalFrameDefault", PY)]
PY_UNRESOLVED = [(None, PY), ("_PyEval_EvalFrameDefault", PY)]
OURS_LOOP = [("c1m_loop_run_once", SRV), ("main", SRV)]
OURS_SERVER = [("on_accept", SRV), ("c1m_loop_run_once", SRV)]
OURS_COUNTERS = [("c1m_stats_begin", SRV), ("publish", SRV), ("on_publish_tick", SRV)]
EXT_COUNTERS = [("c1m_counters_publish", EXT), ("c1m_loop_run_once", EXT)]  # pyext's C timer
EXT_GLUE = [("transport_write", EXT), ("_PyEval_EvalFrameDefault", PY)]
EXT_LOOP = [("c1m_loop_run_once", EXT), ("loop_run_forever", EXT)]
UVLOOP = [(None, UV), ("_PyEval_EvalFrameDefault", PY)]
LIBC_ONLY = [("__libc_start_call_main", LIBC)]

LIBC1M_SYMS = ["c1m_loop_run_once", "c1m_loop_run", "on_listen_io", "c1m_stats_begin", "heap_up"]


def classifier():
    return pl.Classifier(LIBC1M_SYMS, ["c1m-server", "c1m.cpython"])


class TestParse(unittest.TestCase):
    def test_frame_line_kernel_user_unknown(self):
        f = pl.parse_frame_line("\tffffffff81a0b1c2 tcp_v4_rcv+0x9a4 ([kernel.kallsyms])")
        self.assertEqual(f, pl.Frame("tcp_v4_rcv", K, True))
        f = pl.parse_frame_line("\t    7f12ab34cd56 _PyEval_EvalFrameDefault+0x1d0 (/usr/bin/python3.11)")
        self.assertEqual(f, pl.Frame("_PyEval_EvalFrameDefault", PY, False))
        f = pl.parse_frame_line("\t    7f12ab34cd56 [unknown] (/usr/bin/python3.11)")
        self.assertEqual(f, pl.Frame(None, PY, False))
        f = pl.parse_frame_line("\t               0 [unknown] ([unknown])")
        self.assertEqual(f, pl.Frame(None, "[unknown]", False))
        # a symbol with spaces and parentheses (demangled C++), the DSO is the last (...)
        f = pl.parse_frame_line("\t 55d0 foo(int, char const*) const+0x10 (/opt/a b/lib.so)")
        self.assertEqual(f, pl.Frame("foo(int, char const*) const", "/opt/a b/lib.so", False))
        self.assertIsNone(pl.parse_frame_line("   "))
        self.assertIsNone(pl.parse_frame_line("\tnot-an-address foo (bar)"))

    def test_samples_periods_and_order(self):
        text = sample(250000, ACCEPT) + sample(500000, EPOLL_WAIT, comm="python3", pid=7)
        got = list(pl.parse_perf_script(io.StringIO(text)))
        self.assertEqual([p for p, _, _ in got], [250000, 500000])
        self.assertEqual([pid for _, _, pid in got], [100, 7])
        self.assertEqual(got[0][1][0], pl.Frame("_raw_spin_unlock_irqrestore", K, True))
        self.assertEqual(got[0][1][-1], pl.Frame("main", SRV, False))
        self.assertEqual(len(got[1][1]), len(EPOLL_WAIT))

    def test_sample_without_blank_line_and_without_chain(self):
        text = "srv 1/1 1000 cpu-clock: \n\tffffffff81000000 tcp_v4_rcv+0x1 ([kernel.kallsyms])\n" \
               "srv 1/1 2000 cpu-clock: \n"
        got = list(pl.parse_perf_script(io.StringIO(text)))
        self.assertEqual([(p, len(f)) for p, f, _ in got], [(1000, 1), (2000, 0)])


class TestClassify(unittest.TestCase):
    def setUp(self):
        self.cl = classifier()

    def layer(self, spec):
        return self.cl.classify(frames(*spec))

    def test_kernel_layers(self):
        self.assertEqual(self.layer(ACCEPT), (pl.K_TCP, None))          # generic leaf -> its caller
        self.assertEqual(self.layer(EPOLL_WAIT), (pl.K_EPOLL, None))    # the scheduler is transparent
        self.assertEqual(self.layer(SOFTIRQ_IN_EPOLL), (pl.K_TCP, None))  # the leaf side wins
        self.assertEqual(self.layer(SYSCALL_EXIT), (pl.K_OTHER, None))
        self.assertEqual(self.layer(CLOSE_FALLBACK), (pl.K_TCP, None))  # by its syscall
        self.assertEqual(self.layer([(None, K), ("do_syscall_64", K)]), (pl.UNKNOWN, None))

    def test_socket_poll_under_epoll_is_epoll(self):
        # epoll asking a ready socket what it is ready for: epoll's per-event work
        poll = [("tcp_poll", K), ("sock_poll", K), ("ep_item_poll", K), ("ep_send_events", K),
                ("do_epoll_wait", K), ("__x64_sys_epoll_wait", K), ("do_syscall_64", K), ("epoll_wait", LIBC)]
        self.assertEqual(self.layer(poll), (pl.K_EPOLL, None))
        # the same callback outside epoll (poll(2)) stays with the TCP path
        self.assertEqual(self.layer([("tcp_poll", K), ("sock_poll", K), ("do_sys_poll", K)]), (pl.K_TCP, None))
        # the LSM hook of accept is transparent: its caller's layer
        self.assertEqual(self.layer([("security_socket_accept", K), ("do_accept", K), ("__sys_accept4", K)]),
                         (pl.K_TCP, None))
        self.assertEqual(self.layer([("security_socket_accept", K), ("ep_poll_callback", K)]),
                         (pl.K_EPOLL, None))

    def test_user_layers(self):
        self.assertEqual(self.layer(PY_ALLOC), (pl.ALLOC, None))
        self.assertEqual(self.layer(PY_MEMCPY), (pl.EVAL, None))
        self.assertEqual(self.layer(PY_UNRESOLVED), (pl.STATICS, None))
        self.assertEqual(self.layer([(None, "/usr/lib/x.so"), ("_PyEval_EvalFrameDefault", PY)]),
                         (pl.UNKNOWN, "x.so"))
        self.assertEqual(self.layer(OURS_LOOP), (pl.LIBC1M, None))
        self.assertEqual(self.layer(OURS_SERVER), (pl.OURS, None))
        self.assertEqual(self.layer(OURS_COUNTERS), (pl.COUNTERS, None))
        self.assertEqual(self.layer(EXT_COUNTERS), (pl.COUNTERS, None))
        self.assertEqual(self.layer(EXT_GLUE), (pl.OURS, None))
        self.assertEqual(self.layer(EXT_LOOP), (pl.LIBC1M, None))
        self.assertEqual(self.layer(UVLOOP), (pl.LIBUV, None))
        self.assertEqual(self.layer(LIBC_ONLY), (pl.OTHER, None))
        self.assertEqual(self.cl.classify([]), (pl.UNKNOWN, "(no call chain)"))

    def test_ours_needs_the_dso(self):
        # the same name outside our binaries is not ours
        self.assertEqual(self.layer([("c1m_loop_run_once", "/usr/lib/other.so")]), (pl.OTHER, None))
        # without the symbol list, our binary's symbols are all "server/extension code"
        bare = pl.Classifier([], ["c1m-server"])
        self.assertEqual(bare.classify(frames(*OURS_LOOP)), (pl.OURS, None))

    def test_every_rule_names_a_layer(self):
        for where, sym, dso, layer in pl.LAYER_RULES:
            self.assertIn(where, ("k", "u"))
            self.assertTrue(layer is pl.TRANSPARENT or layer in pl.LAYERS, layer)


ASYNCIO_SO = "/usr/lib/python3.11/lib-dynload/_asyncio.cpython-311-x86_64-linux-gnu.so"
GEVENT_SO = "/usr/lib/python3/dist-packages/gevent/libev/corecext.cpython-311-x86_64-linux-gnu.so"
GREENLET_SO = "/usr/lib/python3/dist-packages/greenlet/_greenlet.cpython-311-x86_64-linux-gnu.so"
EVAL = ("_PyEval_EvalFrameDefault", PY)


class TestPythonLayers(unittest.TestCase):
    """The Python ladder's layers, on stacks as Debian's stripped python3.11
    gives them (unnamed statics: None) and as a CPython with its symbols would."""

    def setUp(self):
        self.cl = classifier()

    def layer(self, *spec):
        return self.cl.classify(frames(*spec))[0]

    def test_eval_loop_and_objects(self):
        self.assertEqual(self.layer(EVAL, ("PyEval_EvalCode", PY)), pl.EVAL)
        self.assertEqual(self.layer(("PyObject_GetAttr", PY), EVAL), pl.OBJECTS)
        self.assertEqual(self.layer(("_PyObject_MakeTpCall", PY), EVAL), pl.OBJECTS)
        self.assertEqual(self.layer(("dict_traverse", PY), EVAL), pl.OBJECTS)   # a named static

    def test_unnamed_statics_take_their_nearest_named_caller(self):
        # under the eval loop itself: C code the bytecode called, unnamed
        self.assertEqual(self.layer((None, PY), (None, PY), EVAL), pl.STATICS)
        self.assertEqual(self.layer((None, PY)), pl.STATICS)            # nothing named above
        # under a named objects function: its work (a dict lookup of getattr)
        self.assertEqual(self.layer((None, PY), (None, PY), ("_PyObject_GenericGetAttrWithDict", PY),
                                    ("PyObject_GetAttr", PY), EVAL), pl.OBJECTS)
        # under a named allocator: allocation (obmalloc's statics)
        self.assertEqual(self.layer((None, PY), (None, PY), ("PyType_GenericAlloc", PY), EVAL), pl.ALLOC)
        self.assertEqual(self.layer((None, PY), ("PyObject_Malloc", PY), (None, PY), EVAL), pl.ALLOC)
        # calling a libc socket or epoll wrapper: the socket/select modules
        self.assertEqual(self.layer(("__GI___setsockopt", LIBC), (None, PY), (None, PY), EVAL), pl.SOCKET)
        self.assertEqual(self.layer(("epoll_wait", LIBC), (None, PY), EVAL), pl.SOCKET)
        # the kernel side of the same call stays the kernel's
        self.assertEqual(self.layer(("sk_setsockopt", K), ("do_syscall_64", K), ("__GI___setsockopt", LIBC),
                                    (None, PY), EVAL), pl.K_TCP)

    def test_named_socket_module(self):
        self.assertEqual(self.layer(("sock_recv_impl", PY), EVAL), pl.SOCKET)
        self.assertEqual(self.layer(("pyepoll_poll", PY), EVAL), pl.SOCKET)

    def test_garbage_collector_wins_over_what_it_visits(self):
        self.assertEqual(self.layer(("visit_decref", PY), ("dict_traverse", PY), ("subtract_refs", PY),
                                    ("gc_collect_main", PY), ("_PyObject_GC_Link", PY),
                                    ("PyType_GenericAlloc", PY), EVAL), pl.GC)
        self.assertEqual(self.layer(("dict_traverse", PY), ("gc_collect_main", PY), EVAL), pl.GC)
        self.assertEqual(self.layer(("PyObject_GC_UnTrack", PY), EVAL), pl.ALLOC)   # tracking is not collecting

    def test_accelerators_by_their_file(self):
        self.assertEqual(self.layer((None, ASYNCIO_SO), ("PyIter_Send", PY), EVAL), pl.ASYNCIO_C)
        self.assertEqual(self.layer(("task_step_impl", ASYNCIO_SO), EVAL), pl.ASYNCIO_C)
        self.assertEqual(self.layer(("PyObject_Malloc", PY), (None, ASYNCIO_SO)), pl.ALLOC)  # leaf first
        self.assertEqual(self.layer((None, GEVENT_SO), EVAL), pl.GEVENT)
        self.assertEqual(self.layer(("ev_run", GEVENT_SO), EVAL), pl.GEVENT)
        self.assertEqual(self.layer((None, GREENLET_SO), EVAL), pl.GEVENT)
        self.assertEqual(self.layer((None, UV), EVAL), pl.LIBUV)

    def test_page_faults(self):
        self.assertEqual(self.layer(("clear_page_erms", K), ("do_anonymous_page", K), ("handle_mm_fault", K),
                                    ("exc_page_fault", K), ("asm_exc_page_fault", K),
                                    ("PyObject_Malloc", PY)), pl.K_FAULT)
        self.assertEqual(self.layer(("__alloc_pages", K), ("handle_mm_fault", K), ("exc_page_fault", K),
                                    (None, PY)), pl.K_FAULT)

    def test_libc(self):
        self.assertEqual(self.layer(("qsort_r", LIBC), EVAL), pl.LIBC)
        self.assertEqual(self.layer(("__memmove_avx_unaligned_erms", LIBC), EVAL), pl.EVAL)  # generic


class TestFold(unittest.TestCase):
    def test_fold_counts_names_and_summary(self):
        text = (sample(250000, ACCEPT) * 3 + sample(250000, PY_UNRESOLVED) * 2
                + sample(250000, OURS_LOOP))
        folded, summary = pl.fold(io.StringIO(text), classifier())
        self.assertEqual(summary["samples"], 6)
        self.assertEqual(summary["period_ns"], 6 * 250000)
        self.assertEqual(summary["layers"][pl.K_TCP]["samples"], 3)
        self.assertEqual(summary["layers"][pl.STATICS]["samples"], 2)
        self.assertEqual(summary["layers"][pl.LIBC1M]["samples"], 1)
        self.assertEqual(summary["unknown_by_dso"], {})
        self.assertEqual(summary["via_unnamed_interpreter_frames"], 2)
        self.assertEqual(sum(v["samples"] for v in summary["layers"].values()), 6)
        acc = "main;c1m_loop_run_once;on_listen_io;accept4;entry_SYSCALL_64_after_hwframe_[k];" \
              "do_syscall_64_[k];__sys_accept4_[k];do_accept_[k];inet_csk_accept_[k];" \
              "_raw_spin_unlock_irqrestore_[k]"
        self.assertEqual(folded[acc], 3)
        self.assertEqual(folded["_PyEval_EvalFrameDefault;[python3.11]"], 2)
        fl = summary["frame_layers"]     # each frame's own layer, for the flame graph
        self.assertEqual(fl["on_listen_io"], pl.LIBC1M)
        self.assertEqual(fl["main"], pl.OURS)
        self.assertEqual(fl["__sys_accept4_[k]"], pl.K_TCP)
        self.assertEqual(fl["_raw_spin_unlock_irqrestore_[k]"], pl.GENERIC)
        self.assertEqual(fl["do_syscall_64_[k]"], pl.K_OTHER)
        self.assertEqual(fl["[python3.11]"], pl.STATICS)
        self.assertEqual(fl["accept4"], pl.GENERIC)

    def test_folded_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.folded")
            pl.write_folded({"a;b;c": 3, "a;b": 1, "x": 2}, p)
            with open(p) as f:
                got = pl.read_folded(list(f) + ["garbage line\n", "no-count \n", "\n"])
        self.assertEqual(got, {("a", "b", "c"): 3, ("a", "b"): 1, ("x",): 2})


class TestCoverage(unittest.TestCase):
    def test_fold_counts_each_pid(self):
        text = sample(1000, ACCEPT, pid=100) * 3 + sample(1000, OURS_LOOP, pid=101)
        _, summary = pl.fold(io.StringIO(text), classifier())
        self.assertEqual(summary["period_ns_by_pid"], {"100": 3000, "101": 1000})

    def test_a_worker_perf_never_saw_is_the_lowest_at_zero(self):
        summary = {"period_ns": 900, "period_ns_by_pid": {"100": 900}}
        # 102 (the parent) used 1% of the tree's CPU: too little to judge
        m = {"cpu_ns": 2010, "cpu_ns_by_pid": "100:1000,101:1000,102:10"}
        tree, low, pid = pl.coverage(summary, m)
        self.assertAlmostEqual(tree, 900 / 2010)
        self.assertEqual((low, pid), (0.0, "101"))
        m["cpu_ns_by_pid"] = "100:1000,102:10"
        self.assertEqual(pl.coverage(summary, m)[1:], (0.9, "100"))

    def test_no_profile_or_no_per_process_figures(self):
        self.assertEqual(pl.coverage(None, {"cpu_ns": 5}), (None, None, None))
        tree, low, pid = pl.coverage({"period_ns": 5}, {"cpu_ns": 10, "cpu_ns_by_pid": "x:1,2:y,,3"})
        self.assertEqual((tree, low, pid), (0.5, None, None))
        self.assertEqual(pl.parse_by_pid("7:-3, 8:4"), {"7": -3, "8": 4})
        # a digit of another script ('²': isdigit, and int() refuses it) is a bad item
        self.assertEqual(pl.parse_by_pid("7:², ²:4, 8:4"), {"8": 4})


class TestTable(unittest.TestCase):
    def write(self, d, contender, phase, measure, summary):
        os.makedirs(os.path.join(d, contender), exist_ok=True)
        with open(os.path.join(d, contender, "measure-%s.json" % phase), "w") as f:
            json.dump(measure, f)
        if summary is not None:
            with open(os.path.join(d, "%s-%s.json" % (contender, phase)), "w") as f:
                json.dump(summary, f)

    def test_layers_add_up_and_no_perf_is_unknown(self):
        text = sample(1000, ACCEPT) * 3 + sample(1000, OURS_LOOP)
        _, summary = pl.fold(io.StringIO(text), classifier())
        with tempfile.TemporaryDirectory() as d:
            # 4 ms of CPU over 1000 connections: 4 us per connection, 3/4 of it TCP
            self.write(d, "c", "ramp", {"conns": 1000, "cpu_ns": 4000000, "cpu_ticks": 0, "clk_tck": 100,
                                        "window_s": 1.5, "perf": "ok", "workers": 1}, summary)
            self.write(d, "pyext", "ramp", {"conns": 1000, "cpu_ns": 6000000, "cpu_ticks": 1, "clk_tck": 100,
                                            "window_s": 2, "perf": "unavailable",
                                            "perf_cause": "perf not found"}, None)
            self.write(d, "c", "hold", {"conns": 1000, "cpu_ns": 2000000, "cpu_ticks": 0, "clk_tck": 100,
                                        "window_s": 2.0, "perf": "ok"}, summary)
            md, have = pl.table(d)
            self.assertEqual(have, ["ramp", "hold"])
            with open(os.path.join(d, "layers.csv")) as f:
                rows = list(__import__("csv").DictReader(f))
            byk = {(r["contender"], r["phase"]): r for r in rows}
            c = byk[("c", "ramp")]
            self.assertEqual(c["measured_total"], "4.00")
            self.assertEqual(c[pl.K_TCP], "3.00")
            self.assertEqual(c[pl.LIBC1M], "1.00")
            self.assertEqual(c["sampled_total"], "0.00")   # 4 samples x 1000 ns / 1000 conns
            self.assertAlmostEqual(sum(float(c[l] or 0) for l in pl.LAYERS), 4.0)
            p = byk[("pyext", "ramp")]
            self.assertEqual(p[pl.UNKNOWN], "6.00")
            self.assertEqual(p[pl.K_TCP], "")
            h = byk[("c", "hold")]     # per connection per second: 2 ms / 1000 / 2 s
            self.assertEqual(h["measured_total"], "1.00")
            self.assertIn("perf not found", md)
            self.assertIn("measured total", md)
            with open(os.path.join(d, "plots", "data", "layers-ramp.dat")) as f:
                dat = f.read().splitlines()
            self.assertTrue(dat[0].startswith("contender "))
            self.assertEqual(dat[1].split()[0], "c")
            self.assertEqual(float(dat[1].split()[-1]), 4.0)

    def test_no_connection_count_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            for conns in ("", 0, None):
                self.write(d, "c", "ramp", {"conns": conns, "cpu_ns": 4000000, "window_s": 1,
                                            "perf": "unavailable"}, None)
                md, have = pl.table(d)
                self.assertEqual(have, [])
                self.assertIn("c ramp: left out: no connections counted", md)
                with open(os.path.join(d, "layers.csv")) as f:
                    self.assertEqual(len(f.read().splitlines()), 1)   # the header alone

    def test_gate_and_disturbance_are_shown(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "c", "ramp", {"conns": 10, "cpu_ns": 1000, "window_s": 1, "perf": "unavailable",
                                        "gate": "timeout", "gate_wait_s": 120, "gate_cause": "CPU busy 40%",
                                        "outside_cpu_pct": 12.5, "init_cpu_pct": 0.1, "disturbed": 1,
                                        "disturb_cause": "outside CPU other than PID 1 12.4%"}, None)
            self.write(d, "pyext", "ramp", {"conns": 10, "cpu_ns": 1000, "window_s": 1, "perf": "unavailable",
                                            "gate": "quiet", "gate_wait_s": 0}, None)
            md, _ = pl.table(d)
            self.assertIn("- c: started after the quiet gate timed out (120s): CPU busy 40%", md)
            self.assertIn("- c: DISTURBED: outside CPU other than PID 1 12.4%", md)
            self.assertIn("- pyext: disturbance not measured", md)
            self.assertIn("| 12.5 | - |", md)
            with open(os.path.join(d, "layers.csv")) as f:
                r = next(__import__("csv").DictReader(f))
            self.assertEqual((r["gate"], r["outside_cpu_pct"], r["disturbed"]), ("timeout", "12.5", "1"))

    def test_no_runs_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(SystemExit):
                pl.table(d)
            # no such directory, or a file: the same error (FileNotFoundError,
            # NotADirectoryError tracebacks)
            for bad in (os.path.join(d, "nope"), __file__):
                with self.assertRaises(SystemExit) as e:
                    pl.table(bad)
                self.assertIn("no measure-*.json under", str(e.exception))
            # a meta.json that is no object (AttributeError): the runs all kept
            self.write(d, "c", "ramp", {"conns": 10, "cpu_ns": 1000, "window_s": 1, "perf": "unavailable"}, None)
            with open(os.path.join(d, "meta.json"), "w") as f:
                f.write("[1]\n")
            self.assertEqual([r[0] for r in pl.load_runs(d)], ["c"])
            self.assertIn("c ", pl.table(d)[0])


class TestFlame(unittest.TestCase):
    FOLDED = {("main", "c1m_loop_run_once", "accept4", "__sys_accept4_[k]", "inet_csk_accept_[k]"): 6,
              ("main", "c1m_loop_run_once", "epoll_wait", "do_epoll_wait_[k]"): 3,
              ("main", "on_accept"): 1,
              ("_PyEval_EvalFrameDefault", "[python3.11]"): 2,
              ("a<b>&\"c\"",): 1}

    def parse(self, svg):
        return ET.fromstring(svg.encode())

    def frames(self, root):
        ns = "{http://www.w3.org/2000/svg}"
        return [g for g in root.iter(ns + "g") if g.get("class") == "f"], ns

    def test_rectangles_tooltips_and_widths(self):
        cl = pl.Classifier(["c1m_loop_run_once"], [])
        svg = perf_flame.render(self.FOLDED, title="t <&>", width=1000, classifier=cl)
        root = self.parse(svg)              # well-formed XML, names escaped
        gs, ns = self.frames(root)
        by = {g.get("data-n"): g for g in gs}
        # one rectangle per distinct frame path: all, main, loop, accept4, 2 kernel, epoll_wait, 1 kernel,
        # on_accept, _PyEval, [python3.11], the odd name
        self.assertEqual(len(gs), 12)
        total = sum(self.FOLDED.values())
        self.assertAlmostEqual(float(by["all"].get("data-w")), 1000 - 20, places=2)
        self.assertAlmostEqual(float(by["main"].get("data-w")), 980 * 10 / total, places=2)
        self.assertAlmostEqual(float(by["inet_csk_accept_[k]"].get("data-w")), 980 * 6 / total, places=2)
        # children sit inside their parent
        m, loop = by["main"], by["c1m_loop_run_once"]
        self.assertGreaterEqual(float(loop.get("data-x")), float(m.get("data-x")))
        self.assertLessEqual(float(loop.get("data-x")) + float(loop.get("data-w")),
                             float(m.get("data-x")) + float(m.get("data-w")) + 1e-6)
        self.assertEqual(int(loop.get("data-d")), 2)
        tip = by["inet_csk_accept_[k]"].find(ns + "title").text
        self.assertIn("6 samples", tip)
        self.assertIn(pl.K_TCP, tip)
        self.assertIn(pl.LIBC1M, by["c1m_loop_run_once"].find(ns + "title").text)
        self.assertIn(pl.STATICS, by["[python3.11]"].find(ns + "title").text)
        self.assertIn('a<b>&"c"', by['a<b>&"c"'].find(ns + "title").text)
        self.assertIsNotNone(root.find(ns + "script"))

    def test_frame_layers_from_the_fold_win(self):
        # "on_accept" alone could be anything; the fold saw it in our server binary
        svg = perf_flame.render({("main", "on_accept"): 2}, frame_layers={"on_accept": pl.OURS})
        gs, ns = self.frames(self.parse(svg))
        by = {g.get("data-n"): g for g in gs}
        self.assertIn(pl.OURS, by["on_accept"].find(ns + "title").text)
        self.assertIn(pl.COLOURS[pl.OURS], ET.tostring(by["on_accept"], encoding="unicode"))
        gs, ns = self.frames(self.parse(perf_flame.render({("main", "on_accept"): 2})))
        by = {g.get("data-n"): g for g in gs}
        self.assertIn(pl.OTHER, by["on_accept"].find(ns + "title").text)

    def test_min_width_and_empty(self):
        folded = {("big",): 100000, ("tiny",): 1}
        gs, _ = self.frames(self.parse(perf_flame.render(folded, width=1000, min_width=0.1)))
        self.assertEqual(sorted(g.get("data-n") for g in gs), ["all", "big"])
        root = self.parse(perf_flame.render({}, title="nothing"))
        self.assertIn("no samples", ET.tostring(root, encoding="unicode"))

    def test_command_line(self):
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "x.folded"), os.path.join(d, "x.svg")
            with open(src, "w") as f:
                f.write("main;foo 3\nmain;bar 1\n")
            self.assertEqual(perf_flame.main([src, dst, "--title", "x"]), 0)
            with open(dst) as f:
                gs, _ = self.frames(self.parse(f.read()))
            self.assertEqual(len(gs), 4)
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
                perf_flame.main([src, dst, "--width", "5"])
            self.assertIn("--width", err.getvalue())


if __name__ == "__main__":
    unittest.main()
