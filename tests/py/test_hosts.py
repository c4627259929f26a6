"""harness/lib/hosts.py: a value the programs would refuse on their host is
refused here, naming the line, before anything starts; harness/lib/remote.py
reads what root runs or restores on the hosts from a suite's root-only state
directory and from no other place (issue 32)."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

from util import ROOT, TmpDir  # noqa: E402  (harness/lib on sys.path)
import hosts  # noqa: E402
import remote  # noqa: E402

CLIENT = "client root@198.51.100.11"


class TestRefused(unittest.TestCase):
    def refused(self, text, *want):
        with self.assertRaises(hosts.HostsError) as cm:
            hosts.parse(text)
        for w in want:
            self.assertIn(w, str(cm.exception))

    def test_server_addr(self):
        for a in ("0.0.0.0", "255.255.255.255", "224.0.0.1", "0.1.2.3", "::", "ff02::1"):
            self.refused("server root@198.51.100.10 addr=%s\n%s\n" % (a, CLIENT), "line 1: addr: ")
        # the SSH address itself, when it is the address the clients connect to
        self.refused("server root@0.0.0.0\n%s\n" % CLIENT, "line 1:", "addr=IP")

    def test_server_addr_zone(self):
        # the zone of a scoped IPv6 address: an interface name, nothing else
        for z in ("$(id)", "a'b", "x" * 16, "eth0;true"):
            self.refused("server root@198.51.100.10 addr=fe80::1%%%s\n%s\n" % (z, CLIENT),
                         "line 1: addr: ", "interface name")
        cfg = hosts.parse("server root@198.51.100.10 addr=fe80::1%%eth0\n%s\n" % CLIENT)
        self.assertEqual(cfg["server"]["addr"], "fe80::1%eth0")

    def test_file_not_text(self):
        # a hosts file that is not UTF-8: exit 2 naming it, no traceback
        with tempfile.NamedTemporaryFile("wb", suffix=".hosts") as f:
            f.write(b"server root@198.51.100.10\n" + CLIENT.encode() + b" # \xff\xfe\n")
            f.flush()
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = hosts.main(["check", f.name])
        self.assertEqual(rc, 2)
        self.assertIn("not UTF-8 text", err.getvalue())

    def test_file_too_large(self):
        # a huge file given as HOSTS: refused after its first MAX_BYTES, exit 2 naming it
        with tempfile.NamedTemporaryFile("w", suffix=".hosts") as f:
            f.write("server root@198.51.100.10\n%s\n" % CLIENT + "#" * hosts.MAX_BYTES)
            f.flush()
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = hosts.main(["check", f.name])
            self.assertEqual(rc, 2)
            self.assertIn("HOSTS=%s: more than %d bytes: not a hosts file" % (f.name, hosts.MAX_BYTES),
                          err.getvalue())

    def test_file_not_regular(self):
        # a FIFO given as HOSTS held open() for ever (bench.sh hung before anything
        # ran); a device (/dev/zero: read until memory ran out) or a directory: no
        # hosts file either. Exit 2 naming it, at once.
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "hosts")
            os.mkfifo(fifo)
            for path, said in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                               (d, "Is a directory")):
                # as bench.sh runs it (a process: a hang is a timeout, not a stuck suite)
                p = subprocess.run([sys.executable, os.path.join(ROOT, "harness/lib/hosts.py"),
                                    "check", path], capture_output=True, text=True, timeout=30)
                self.assertEqual((p.returncode, p.stdout), (2, ""), path)
                self.assertEqual(p.stderr, "HOSTS=%s: %s\n" % (path, said))

    def test_client_src(self):
        srv = "server root@198.51.100.10\n"
        for s in ("0.0.0.0-255.255.255.255", "0.0.0.0", "255.255.255.255", "10.0.0.0-10.1.0.0",
                  "223.255.255.255-224.0.0.0", "239.1.1.1"):
            self.refused(srv + "%s src=%s\n" % (CLIENT, s), "line 2: src: ")

    def test_cpus(self):
        # a descending range passed, and taskset failed on the host ("failed to parse
        # CPU list: 5-2"), the server started after the build was staged
        for c in ("5-2", "0,3-1", "x", "0-", "1,,2"):
            self.refused("server root@198.51.100.10 cpus=%s\n%s\n" % (c, CLIENT), "line 1: cpus: ")
        for c in ("0", "2-2", "0-3,6", "0,2-5,7"):
            cfg = hosts.parse("server root@198.51.100.10 cpus=%s\n%s\n" % (c, CLIENT))
            self.assertEqual(cfg["server"]["cpus"], c)

    def test_accepted(self):
        cfg = hosts.parse("server root@198.51.100.10 addr=2001:db8::1\n%s\n" % CLIENT)
        self.assertEqual(cfg["server"]["addr"], "2001:db8::1")
        cfg = hosts.parse("server root@198.51.100.10\n%s src=10.0.0.0-10.0.255.255\n" % CLIENT)
        self.assertEqual((cfg["clients"][0]["src_first"], cfg["clients"][0]["src_count"]),
                         ("10.0.0.0", 65536))
        cfg = hosts.parse("server root@198.51.100.10\n%s src=223.255.0.0-223.255.255.255\n" % CLIENT)
        self.assertEqual(cfg["clients"][0]["src_count"], 65536)


class TestStateDir(TmpDir):
    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.dir, "state")
        os.mkdir(self.root, 0o700)
        self.env = os.environ.get("C1M_STATE_ROOT")
        os.environ["C1M_STATE_ROOT"] = self.root

    def tearDown(self):
        if self.env is None:
            del os.environ["C1M_STATE_ROOT"]
        else:
            os.environ["C1M_STATE_ROOT"] = self.env

    def refused(self, path):
        with self.assertRaises(SystemExit):
            remote.state_dir(path)

    def test_accepted(self):
        d = os.path.join(self.root, "remote-12-345")
        os.mkdir(d, 0o700)
        self.assertEqual(remote.state_dir(d), d)

    def test_refused(self):
        out = os.path.join(self.dir, "out")            # an OUT: not a state directory
        os.mkdir(out, 0o700)
        self.refused(out)
        self.refused(os.path.join(self.root, "remote-x-1"))  # not its name, missing
        d = os.path.join(self.root, "remote-1-2")
        os.mkdir(d, 0o755)                                  # readable by others
        self.refused(d)
        os.chmod(d, 0o700)
        os.chmod(self.root, 0o777)                          # above it, writable by others
        self.refused(d)
        os.chmod(self.root, 0o700)
        link = os.path.join(self.root, "remote-3-4")        # a symlink to a private directory
        os.symlink(d, link)
        self.refused(link)


if __name__ == "__main__":
    unittest.main()
