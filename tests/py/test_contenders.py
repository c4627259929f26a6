"""tests/py/test_contenders.py - the contender registry (harness/lib/contenders.py)
against what its former home printed: every contender's command for a fixed
set of flags, the capability table, the ladder and the default set, as
harness/lib/contenders.sh at 107c195 printed them (contenders_107c195.json,
captured by running that script once: contender_cmd NAME ARGS with
BUILD=/opt/c1m/build PYTHON=/usr/bin/python3, contender_supports over every
capability and a bogus one, C1M_CONTENDERS, C1M_DEFAULT_CONTENDERS), and a
run's whole server command as run_one.sh's server_cmd() built it then
(server_cmd_cases: the common flags, --worker-conns, a scenario's flags,
--gc). The command is recorded in runs as server_cmd: it must not change. Then the
command line bash uses, and the bash wrappers (contenders.sh) agreeing with
the module. No sockets, no timing.

    python3 -m unittest tests.py.test_contenders
"""
import json
import os
import subprocess
import sys
import unittest

from util import ROOT  # noqa: E402  (harness/lib on sys.path)

import contenders  # noqa: E402

CLI = os.path.join(ROOT, "harness", "lib", "contenders.py")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "contenders_107c195.json")) as f:
    OLD = json.load(f)


def cli(*args):
    return subprocess.run([sys.executable, CLI] + list(args), capture_output=True)


class TestAgainstOldRegistry(unittest.TestCase):
    def test_every_command_as_before(self):
        self.assertEqual(list(OLD["cmd"]), list(contenders.LADDER))
        for name, line in OLD["cmd"].items():
            argv = contenders.command(name, OLD["args"], OLD["build"], OLD["python"])
            self.assertEqual(" ".join(argv), line, name)
            self.assertEqual(argv, line.split(), name)   # the same words

    def test_server_cmd_as_run_one_built_it(self):
        for k in OLD["server_cmd_cases"]:
            argv = contenders.server_cmd(k["contender"], OLD["build"], OLD["python"], k["port"], k["conns"],
                                         k["stats"], worker_conns=k["worker_conns"], extra=k["extra"].split(),
                                         gc=k["gc"])
            self.assertEqual(" ".join(argv), k["server_cmd"], k)

    def test_server_cmd_gc_only_for_python(self):
        for name in contenders.LADDER:
            argv = contenders.server_cmd(name, "/b", "/p", 9000, 10, "/s", gc="off")
            self.assertEqual(argv[-2:] == ["--gc", "off"], contenders.supports(name, "py-gc"), name)
            self.assertNotIn("--gc", contenders.server_cmd(name, "/b", "/p", 9000, 10, "/s"))

    def test_ladder_and_default_as_before(self):
        self.assertEqual(list(contenders.LADDER), OLD["ladder"])
        self.assertEqual(list(contenders.DEFAULT), OLD["default"])

    def test_capability_table_as_before(self):
        for name, caps in OLD["supports"].items():
            for cap in OLD["capabilities"]:
                if cap in contenders.CAPABILITIES:
                    self.assertEqual(contenders.supports(name, cap), cap in caps, (name, cap))
                else:   # the old table said no; now it says it does not know the word
                    self.assertNotIn(cap, caps)
                    self.assertRaises(ValueError, contenders.supports, name, cap)

    def test_python_contenders_are_py_server(self):
        for name in contenders.LADDER:
            argv = contenders.command(name, [], "/b", "/p")
            self.assertEqual(contenders.is_python(name), argv[:3] == ["/p", "-m", "py_server"], name)


class TestRefusals(unittest.TestCase):
    def test_unknown_name_refused(self):
        self.assertRaises(KeyError, contenders.command, "bogus", [], "/b", "/p")
        self.assertRaises(KeyError, contenders.supports, "bogus", "push")
        for args in (["cmd", "--build", "/b", "--python", "/p", "bogus", "--port", "1"],
                     ["supports", "bogus", "push"]):
            p = cli(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, b"")
            self.assertIn(b"unknown contender 'bogus'", p.stderr)

    def test_bad_command_lines_exit_2(self):
        for args in ([], ["cmd", "--build", "/b", "c"], ["cmd", "--build", "/b", "--python", "/p"],
                     ["server-cmd", "--build", "/b", "--python", "/p", "--port", "1", "--stats", "/s", "c"],
                     ["supports", "c", "bogus"], ["list", "extra"]):
            p = cli(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, b"", args)
            self.assertIn(b"contenders.py: ", p.stderr, args)


class TestCommandLine(unittest.TestCase):
    def test_cmd_words_nul_ended_kept_whole(self):
        args = ["--stats", "/tmp/a b\nc", "--quiet", "--port", ""]
        for name in ("c", "threads"):     # a C program, py_server
            p = cli("cmd", "--build", "/b d", "--python", "/p", name, *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.endswith(b"\0"))
            self.assertEqual(p.stdout.decode().split("\0")[:-1],
                             contenders.command(name, args, "/b d", "/p"), name)

    def test_server_cmd_words(self):
        k = OLD["server_cmd_cases"][1]
        p = cli("server-cmd", "--build", OLD["build"], "--python", OLD["python"], "--port", k["port"],
                "--conns", k["conns"], "--stats", k["stats"], "--worker-conns", k["worker_conns"],
                "--gc", k["gc"], k["contender"], *k["extra"].split())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode().split("\0"), k["server_cmd"].split() + [""])

    def test_client_cmd_as_run_one_built_it(self):
        # run_one.sh's own lines before the one home (scenario flags last;
        # --worker-conns and --rate only when set)
        base = ["/b/c1m-client", "--connections", "2000", "--host", "127.0.0.1", "--port", "9000",
                "--hold", "inf", "--heartbeat", "1", "--min-available", "512", "--json", "/o/c.json",
                "--quiet"]
        self.assertEqual(contenders.client_cmd("/b", 2000, "127.0.0.1", 9000, 1, 512, "/o/c.json"), base)
        self.assertEqual(contenders.client_cmd("/b/", "2000", "127.0.0.1", "9000", "1", "512", "/o/c.json",
                                               "", "0", None, ["--reconnect", "now"]), base + ["--reconnect", "now"])
        self.assertEqual(contenders.client_cmd("/b", 2000, "127.0.0.1", 9000, 1, 512, "/o/c.json", 700, 5000,
                                               "198.51.100.20-198.51.100.21"),
                         base + ["--worker-conns", "700", "--rate", "5000", "--src", "198.51.100.20-198.51.100.21"])

    def test_client_cmd_words(self):
        p = cli("client-cmd", "--build", "/b d", "--conns", "10", "--host", "::1", "--port", "9000-9003",
                "--heartbeat", "0.5", "--min-available", "1", "--json", "/o p/c.json", "--worker-conns", "",
                "--rate", "20", "--stall", "0.1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode().split("\0")[:-1],
                         contenders.client_cmd("/b d", "10", "::1", "9000-9003", "0.5", "1", "/o p/c.json",
                                               "", "20", "", ["--stall", "0.1"]))
        p = cli("client-cmd", "--build", "/b", "--conns", "10", "--host", "::1")
        self.assertEqual((p.returncode, p.stdout), (2, b""))
        self.assertIn(b"client-cmd: expects", p.stderr)

    def test_client_worker_cap(self):
        # what the fd limit leaves a worker besides cli_rules.FD_RESERVE: a
        # run's client would refuse more (exit 2); a limit unread caps nothing
        cap = contenders.client_worker_cap
        self.assertEqual(cap(50000, 20000), 20000 - 64)
        self.assertEqual(cap(500, 20000), 500)
        self.assertEqual(cap(50000, "1000"), 936)
        for unread in ("", "unlimited", "1\u0663", 64, 10, -1):
            self.assertEqual(cap(50000, unread), 50000, unread)
        base = contenders.client_cmd("/b", 10, "h", 1, 1, 1, "/j")
        self.assertEqual(contenders.client_cmd("/b", 10, "h", 1, 1, 1, "/j", 30000, nofile="20000"),
                         base + ["--worker-conns", "19936"])

    def test_client_cmd_caps_to_its_own_fd_limit(self):
        # a local run's client inherits the fd limit of the command that builds it
        p = subprocess.run(["bash", "-c", 'ulimit -n 1000 && exec "$@"', "-", sys.executable, "-I", "-S",
                            os.path.join(ROOT, "harness", "lib", "contenders.py"), "client-cmd",
                            "--build", "/b", "--conns", "10", "--host", "h", "--port", "1", "--heartbeat", "1",
                            "--min-available", "1", "--json", "/j", "--worker-conns", "5000"],
                           capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode().split("\0")[-3:-1], ["--worker-conns", "936"])
        p = cli("client-cmd", "--build", "/b", "--conns", "10", "--host", "h", "--port", "1", "--heartbeat", "1",
                "--min-available", "1", "--json", "/j", "--worker-conns", "5k")
        self.assertEqual((p.returncode, p.stdout), (2, b""))
        self.assertIn(b"--worker-conns expects a count", p.stderr)

    def test_supports_exit_status(self):
        for name, cap in (("c", "push"), ("c", "py-gc"), ("floor", "reads"), ("threads", "reads")):
            self.assertEqual(cli("supports", name, cap).returncode,
                             0 if contenders.supports(name, cap) else 1, (name, cap))

    def test_list_and_default(self):
        self.assertEqual(cli("list").stdout.decode().split("\n"), list(contenders.LADDER) + [""])
        self.assertEqual(cli("default").stdout.decode().split("\n"), list(contenders.DEFAULT) + [""])


class TestBashWrappers(unittest.TestCase):
    """harness/lib/contenders.sh, sourced alone, says what the module says:
    every command, and the capability table over a contender of each set."""

    def test_wrappers_agree_with_the_module(self):
        script = r'''
            source "$1/harness/lib/contenders.sh"; BUILD=$2 PYTHON=$3; shift 3
            echo "ladder ${C1M_CONTENDERS[*]}"
            echo "default ${C1M_DEFAULT_CONTENDERS[*]}"
            for c in "${C1M_CONTENDERS[@]}"; do
                echo "cmd $c $(contender_cmd "$c" "$@")"
            done
            for c in floor c io_uring asyncio-streams gevent; do
                for f in push push-flow broadcast reads py-gc; do
                    contender_supports "$c" "$f" && echo "supports $c $f"
                done
            done
            contender_server_cmd --port 9000-9003 --conns 2000 --stats /s --worker-conns "" --gc off \
                pyext --push 64 || echo "no server command"
            mapfile -t w < <(contender_client_cmd --conns 5 --host 127.0.0.1 --port 9000 --heartbeat 1 \
                --min-available 64 --json "/o p/c.json" --worker-conns 3 --rate 0 --reconnect now)
            echo "client ${#w[@]} ${w[*]}"
            contender_cmd bogus "$@" || echo "unknown $?"
            contender_server_cmd --port 1 --conns 1 --stats /s bogus 2>/dev/null || echo "unknown $?"
            contender_known bogus || echo "known bogus no"
            contender_supports c bogus 2>/dev/null || echo "capability bogus $?"
        '''
        build, python = "/opt/build", sys.executable
        p = subprocess.run(["bash", "-c", script, "-", ROOT, build, python] + OLD["args"],
                           capture_output=True, text=True, env=dict(os.environ, PYTHON=""))
        self.assertEqual(p.stderr, "")
        want = ["ladder " + " ".join(contenders.LADDER), "default " + " ".join(contenders.DEFAULT)]
        for c in contenders.LADDER:
            want.append("cmd %s %s" % (c, " ".join(contenders.command(c, OLD["args"], build, python))))
        for c in ("floor", "c", "io_uring", "asyncio-streams", "gevent"):
            want += ["supports %s %s" % (c, f) for f in contenders.CAPABILITIES if contenders.supports(c, f)]
        want.append(" ".join(contenders.server_cmd("pyext", build, python, "9000-9003", 2000, "/s",
                                                   extra=["--push", "64"], gc="off")))
        cl = contenders.client_cmd(build, 5, "127.0.0.1", 9000, 1, 64, "/o p/c.json", 3, 0,
                                   extra=["--reconnect", "now"])
        want.append("client %d %s" % (len(cl), " ".join(cl)))   # "/o p/c.json" counted as one word
        want += ["unknown 1", "unknown 2", "known bogus no", "capability bogus 2"]
        self.assertEqual(p.stdout.split("\n"), want + [""])


if __name__ == "__main__":
    unittest.main()
