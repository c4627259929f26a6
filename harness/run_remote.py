#!/usr/bin/env python3
"""run_remote.py - one contender at one tier over SSH: the server on the hosts
file's server host, the C client on its client hosts (HOSTS=path; bench.sh
runs this instead of run_one.sh; harness/README.md "Remote hosts").

The hosts were prepared by harness/lib/remote.py (connected, checked, the
build staged in a private directory on each host: --state names the suite's
state directory, lib/remote.py state_dir; nothing is read from OUT). One run:
  1. the server starts on the server host (the registry's command, as locally,
     from the staged build); its counters are streamed back
     (`c1m-stat --csv --watch 100` over the SSH connection) into ramp.csv;
  2. every client host gets its share of N (by capacity) and starts behind a
     barrier: each reports ready, then all get "go" at once;
  3. the ramp ends when the streamed counters show N open (timed on this
     host's clock from the "go": the hosts' clocks need not agree);
  4. the hold with heartbeats; then the health, three ways that must agree:
     the server's counters (live workers only), the server host's
     established sockets on the server's ports (`ss`), and the clients'
     open_at_end summed;
  5. the clients stop, their summaries come back and merge into client.json
     (lib/clientmerge.py: histograms bucket by bucket) and hosts.csv.
Every file the run writes on a host (counters file, logs, client summaries)
is in that host's private directory, checked again before the run starts.
Every remote process runs under lib/remote.py's wrapper and dies with its SSH
session: a stop signal here (INT, TERM, HUP), an error, or this script's
death ends them; a host lost mid-run makes the run `host-lost`, naming it.
It decides no status: it records what it saw as observations (Run.O, the
shape of run_one.sh's, and a remote run's own: lib/judge.py "What a remote
run observes"), and lib/judge.py judges them.
Writes OUT/result.json (lib/record.py), observations.json, ramp.csv,
client.json, hosts.csv, server.log, client-HOST.log and sysctl.txt (the server
host's profile keys).
Exit: 0 the run completed (whatever it measured), 1 harness error, 2 usage.
"""
import argparse
import csv
import ipaddress
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))
import c1m_root  # noqa: E402,F401  (py_server.cli_rules)
import clientmerge  # noqa: E402
import contenders  # noqa: E402
import hosts as hostsfile  # noqa: E402
import rampmon  # noqa: E402
import remote  # noqa: E402
from progress import Progress  # noqa: E402

RECORD = os.path.join(HERE, "lib", "record.py")


class Stop(Exception):
    """A stop signal."""


class Lost(Exception):
    """A host stopped answering (Run.lost: no more commands to it)."""

    def __init__(self, host, what):
        super().__init__("%s %s (line %d) lost: %s" % (host["role"], host["target"], host["line"], what))
        self.host = host


def log(msg):
    sys.stderr.write("run_remote.py: %s\n" % msg)
    sys.stderr.flush()


# the progress line (lib/progress.py): redrawn when stderr was a terminal at
# the start (main sets it before --log)
PROGRESS = Progress("line")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="run_remote.py")
    p.add_argument("--contender", required=True)
    p.add_argument("--conns", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--state", required=True, help="the suite's state directory (remote.py prepare)")
    p.add_argument("--ports", default="9000")
    p.add_argument("--hold", type=int, default=10)
    p.add_argument("--heartbeat", type=float, default=5)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--ramp-stall", type=int, default=120)
    p.add_argument("--min-available", type=int, default=1024)
    p.add_argument("--server-worker-conns", type=int)
    p.add_argument("--client-worker-conns", type=int)
    p.add_argument("--rate", type=int, default=0)
    p.add_argument("--scenario", default="idle")
    p.add_argument("--profile", default="tuned")
    p.add_argument("--variant", default="")
    p.add_argument("--log")
    p.add_argument("--quiet", action="store_true")
    # run_one.sh's local-machine settings: accepted, not used (remote hosts get
    # no quiet gate and no namespace)
    for k in ("--quiet-max", "--quiet-cpu-pct", "--disturb-pct", "--init-pct",
              "--baseline-slab-kib", "--baseline-tcp-objs"):
        p.add_argument(k)
    a = p.parse_args(argv)
    if a.contender not in contenders.LADDER:
        p.error("--contender: unknown contender %r (known: %s)" % (a.contender, " ".join(contenders.LADDER)))
    from py_server.cli import parse_long, parse_ports
    try:
        a.n = parse_long(a.conns, 1, 100000000, True)
    except ValueError:
        p.error("--conns: expects a count 1-100m: %r" % a.conns)
    try:
        a.port_lo, a.port_count = parse_ports(a.ports)
    except ValueError:
        p.error("--ports: expects a port 1-65535 or a range LO-HI: %r" % a.ports)
    if a.scenario != "idle" or a.profile != "tuned" or a.variant:
        p.error("remote runs take SCENARIO=idle and PROFILE=tuned only (the hosts' own kernel "
                "settings: APPLY_SYSCTL=1)")
    return a


class Run:
    def __init__(self, a):
        self.a = a
        _, self.cfg, self.meta = remote.load_state(a.state)
        self.srv = self.cfg["server"]
        self.dir = {h["name"]: self.meta["hosts"][h["name"]]["dir"] for h in remote.all_hosts(self.cfg)}
        # this run's files, in each host's private directory
        self.tag = "run-%d-%d" % (os.getpid(), int(time.time()))
        self.stats = self.file(self.srv, "stats")
        self.procs = []          # every remote process of the run, for the cleanup
        self.watcher = None      # the counters stream (a local ssh)
        self.lost = set()        # hosts found lost: no more commands to them
        self.stop_pings = threading.Event()
        # the record's fields, and the observations lib/judge.py gives its status from
        self.O = {"remote": "1"}
        self.R = {"contender": a.contender, "target": a.n, "accepted": 0,
                  "scenario": "idle", "variant": "", "profile": "tuned", "rate": a.rate, "condition": "",
                  "hold_s": a.hold, "heartbeat_s": a.heartbeat, "timeout_s": a.timeout, "ramp_stall_s": a.ramp_stall,
                  "min_available_mib": a.min_available, "gate": "remote", "remote": 1,
                  "ports": a.ports, "hosts": " ".join(h["name"] for h in remote.all_hosts(self.cfg))}
        self.client_files = []

    def file(self, host, what):
        """The path of this run's file WHAT on host."""
        return "%s/%s.%s" % (self.dir[host["name"]], self.tag, what)

    # -- helpers over SSH
    def sh(self, host, script, what, timeout=60):
        if host["name"] in self.lost:
            raise Lost(host, "%s: lost earlier in this run" % what)
        rc, out, err = remote.run(host, script, timeout)
        if rc == 255:
            self.lost.add(host["name"])
            raise Lost(host, "%s: %s" % (what, (err.strip().splitlines() or ["no answer"])[-1]))
        return rc, out

    def probe(self, host, fn, *args):
        """lib/probe.sh's FN on host (staged beside the build); its output."""
        d = self.dir[host["name"]]
        script = "BUILD=%s; source %s/harness/lib/probe.sh; %s %s" % (
            shlex.quote(d + "/bin"), shlex.quote(d), fn, " ".join(shlex.quote(str(x)) for x in args))
        rc, out = self.sh(host, "bash -c %s" % shlex.quote(script), fn)
        if rc != 0 or not out.strip():
            raise remote.RemoteError(host, "reading %s failed (exit %d)" % (fn, rc))
        return out.strip()

    def stat(self, field):
        rc, out = self.sh(self.srv, "%s/bin/c1m-stat --get %s %s" % (
            shlex.quote(self.dir[self.srv["name"]]), field, self.stats), "c1m-stat")
        return out.strip() if rc == 0 else ""

    # -- the run
    def run(self):
        a, R, O = self.a, self.R, self.O
        os.makedirs(a.out, exist_ok=True)
        for h in remote.all_hosts(self.cfg):    # still root's alone: nothing runs from it otherwise
            remote.check_private(h, self.dir[h["name"]])
        sd = self.dir[self.srv["name"]]
        # every address of the server host's family (an IPv6 addr= listens on ::)
        listen = "::" if ":" in self.srv["addr"] else "0.0.0.0"
        python = os.environ.get("REMOTE_PYTHON") or os.environ.get("PYTHON") or "/usr/bin/python3"
        cmd = contenders.server_cmd(a.contender, sd + "/bin", python, a.ports, a.n, self.stats,   # the staged build
                                    host=listen, worker_conns=a.server_worker_conns)
        R["server_cmd"] = " ".join(cmd)
        # the server host's settings in force for this run (read now: after
        # APPLY_SYSCTL), as a local run's sysctl.txt: key=value lines
        with open(os.path.join(a.out, "sysctl.txt"), "w") as f:
            for k, v in remote.read_sysctls(self.srv, [k for k, _ in remote.profile_keys()]).items():
                f.write("%s=%s\n" % (k, v) if v is not None else "%s\n" % k)
        server = remote.Proc(self.srv, sd, cmd, self.file(self.srv, "server.log"),
                             env={"PYTHONPATH": "%s:%s/pyext" % (sd, sd)}, cpus=self.srv.get("cpus"))
        self.procs.append(server)
        if not server.expect("pid", 30):
            raise Lost(self.srv, "starting the server: %s" % " ".join(server.stderr_tail()))
        spid = server.pid
        threading.Thread(target=self.keepalive, daemon=True).start()
        ready = False
        for _ in range(30):     # 60 s, watching the server meanwhile
            rc, _ = self.sh(self.srv, "%s/bin/c1m-stat --wait-ready --timeout 2 %s"
                            % (shlex.quote(sd), self.stats), "waiting for the server", timeout=30)
            if rc == 0:
                ready = True
                break
            if not server.alive() or server.rc is not None:
                break
        if not ready:
            status = server.ended_with() if not server.alive() else None
            if not server.alive() and status is None:
                raise Lost(self.srv, "its session ended while the server started")
            server.finish(5)
            O["ready"] = "unavailable" if server.rc == 3 else ("exited" if server.rc is not None else "not-ready")
            O["ready_log"] = self.fetch_log(server, "server.log")
            return
        O["ready"] = "ok"
        # let the workers settle before the baseline, and RSS and slab after the
        # ramp: run_one.sh's 1 s and 2 s at 100k connections and above, less
        # below (a small tier's few pages settle at once)
        settle = min(1.0, 0.2 + a.n / 100000)
        time.sleep(settle)
        pids = self.probe(self.srv, "server_pids", self.stats, spid).split()
        R["server_workers"] = len(pids) - 1
        # the readings lib/judge.py figures() derives the run's figures from, as
        # run_one.sh records them: "anon pss", "sockets slab" KiB (lib/probe.sh)
        O["rss_idle"] = self.probe(self.srv, "rss_kib", *pids)
        O["slab0"] = self.probe(self.srv, "slab_kib")
        # the server host's clock tick and CPUs (its CPU figures and their sanity bound)
        rc, out = self.sh(self.srv, "getconf CLK_TCK; grep -c '^cpu[0-9]' /proc/stat", "reading its CPUs")
        tck, cpus = (out.split() + ["", ""])[:2] if rc == 0 else ("", "")
        O["clk_tck"] = tck if tck.isdigit() else str(os.sysconf("SC_CLK_TCK"))
        if cpus.isdigit():
            O["stat_cpus"] = cpus
        # the counters, streamed back over the SSH connection
        ramp_path = os.path.join(a.out, "ramp.csv")
        ramp_f = open(ramp_path, "w")
        watcher = self.watcher = subprocess.Popen(remote.ssh_argv(self.srv) + [
            "exec %s/bin/c1m-stat --csv --watch 100 %s" % (shlex.quote(sd), self.stats)],
            stdin=subprocess.DEVNULL, stdout=ramp_f, stderr=subprocess.DEVNULL,
            start_new_session=True)   # ended by cleanup(), not by a ^C to the group
        O["cpu0"] = self.probe(self.srv, "cpu_ticks", *pids)
        # the clients, behind the barrier
        shares = hostsfile.shares(a.n, self.cfg["clients"])
        clients = []
        for h, n in zip(self.cfg["clients"], shares):
            if n == 0:
                continue
            d = self.dir[h["name"]]
            cj = self.file(h, "client.json")
            src = None
            if h.get("src_first"):
                last = str(ipaddress.IPv4Address(h["src_first"]) + h["src_count"] - 1)
                src = "%s-%s" % (h["src_first"], last)
            # --worker-conns within that host's own fd limit
            c = contenders.client_cmd(d + "/bin", n, self.srv["addr"], a.ports, "%g" % a.heartbeat,
                                      a.min_available, cj, worker_conns=a.client_worker_conns, src=src,
                                      rate=max(1, round(a.rate * n / a.n)) if a.rate else 0,
                                      nofile=self.meta["hosts"][h["name"]].get("nofile", ""))
            p = remote.Proc(h, d, c, self.file(h, "client.log"), barrier=True,
                            cpus=h.get("cpus"))
            self.procs.append(p)
            clients.append((h, n, p, cj))
        for h, _, p, _ in clients:
            if not p.expect("ready", 30):
                raise Lost(h, "starting the client: %s" % " ".join(p.stderr_tail()))
        # the server host's clock against this one's, for ramp.csv's unix_ms
        # (the ramp file is cut from the client start in the server's clock)
        ta = time.time()
        rc, out = self.sh(self.srv, "date +%s%3N", "reading its clock")
        tb = time.time()
        offset_ms = int(out.strip()) - round((ta + tb) / 2 * 1000) if rc == 0 and out.strip().isdigit() else 0
        t0 = time.time()
        for _, _, p, _ in clients:
            p.go()
        # t0 and t1 in the server host's clock (client_start_unix_ms: ramp.csv's cut)
        O["t0"] = "%.6f" % (t0 + offset_ms / 1000)
        R["server_clock_offset_ms"] = offset_ms
        for h, _, p, _ in clients:
            if not p.expect("pid", 30):
                raise Lost(h, "starting the client: %s" % " ".join(p.stderr_tail()))
        # the ramp: until the streamed counters show N open, or a stop rule
        # ends it (lib/rampmon.py's Ramp, their one home); a host whose session
        # ended without an exit status is lost, not a verdict
        ramp = rampmon.Ramp(a.n, t0, a.timeout, a.ramp_stall)
        while True:
            row = last_row(ramp_path)
            opened = int(row["open"]) if row else 0
            dead = int(row.get("workers_dead") or 0) if row else 0
            now = time.time()
            el = now - t0
            if not a.quiet:
                PROGRESS.show(rampmon.PROGRESS_FMT, (a.contender, a.n, opened, a.n, opened / el if el > 0 else 0,
                                                     el, " (remote)"))
            alive, gone = server.alive(), []
            if opened < a.n and not dead:
                if not alive:
                    if server.ended_with() is None:
                        raise Lost(self.srv, "the server's session ended during the ramp")
                elif watcher.poll() is not None:
                    raise Lost(self.srv, "the counters stream ended during the ramp")
                else:
                    gone = [(h, p) for h, _, p, _ in clients if not p.alive()]
                    if gone and gone[0][1].ended_with() is None:
                        raise Lost(gone[0][0], "its session ended during the ramp")
            end = ramp.step(now, opened, dead=dead, server=alive, client=not gone)
            if end is not None:
                if end["ramp_end"] == "server-exited":
                    end["ramp_exit"] = str(server.rc)
                elif end["ramp_end"] == "client-exited":
                    end.update(ramp_client=gone[0][0]["name"], ramp_exit=str(gone[0][1].rc))
                O.update(end)
                break
            time.sleep(0.05)
        t1 = time.time()
        PROGRESS.end()
        reached = O["ramp_end"] == "reached"
        O["t1"] = "%.6f" % (t1 + offset_ms / 1000)
        R["accepted"] = int(self.stat("open") or 0)
        O["cpu1"] = self.probe(self.srv, "cpu_ticks", *pids)
        time.sleep(2 * settle)
        # (the server host holds one socket per connection: the clients' ends are
        # elsewhere; a reading a stop or a lost host cut short leaves its figures out)
        O["rss_full"] = self.probe(self.srv, "rss_kib", *pids)
        O["slab1"] = self.probe(self.srv, "slab_kib")
        if reached and a.hold > 0:
            # each CPU reading between two clock readings (the hold's wall time
            # runs between their midpoints: an SSH round trip each)
            O["hold_a"] = "%.6f" % time.time()
            O["hold_cpu0"] = self.probe(self.srv, "cpu_ticks", *pids)
            O["hold_b"] = "%.6f" % time.time()
            O.update(self.wait_hold(a.hold, [server] + [p for _, _, p, _ in clients]))
            O["hold_c"] = "%.6f" % time.time()
            O["hold_cpu1"] = self.probe(self.srv, "cpu_ticks", *pids)
            O["hold_d"] = "%.6f" % time.time()
            R["open_after_hold"] = int(self.stat("open") or 0)
            R["slow_closed"] = int(self.stat("slow") or 0)
        # health: counters, sockets on the server host, clients
        O["h_server"] = self.stat("open") if reached else ""
        O["dead_stat"] = dead = self.stat("workers_dead")
        R["workers_dead"] = int(dead) if dead.isdigit() else ""
        h_sock = ""
        if reached:
            # (lib/common.sh ports_filter's expression)
            rc, out = self.sh(self.srv, "ss -Htn state established '( sport >= :%d and sport <= :%d )' | wc -l"
                              % (a.port_lo, a.port_lo + a.port_count - 1), "counting sockets", timeout=120)
            h_sock = out.strip() if rc == 0 else ""
        O["h_established"] = h_sock
        for _, _, p, _ in clients:
            p.signal("TERM")
        rcs = [p.finish(130) for _, _, p, _ in clients]
        R["client_exit"] = max((rc for rc in rcs if rc is not None), default="")
        named = []
        for h, share, p, cj in clients:
            local = os.path.join(a.out, "client-%s.json" % h["name"])
            rc, out = self.sh(h, "cat %s && rm -f %s" % (cj, cj), "fetching its summary")
            self.fetch_log(p, "client-%s.log" % h["name"])
            if rc == 0 and out.strip():
                with open(local, "w") as f:
                    f.write(out)
                named.append((h["name"], local))
        if named:
            rc = clientmerge.main([os.path.join(a.out, "client.json")] + ["%s=%s" % x for x in named])
            if rc == 0:
                self.write_hosts_csv(os.path.join(a.out, "client.json"), clients)
        h_client = ""
        try:
            with open(os.path.join(a.out, "client.json")) as f:
                h_client = str(json.load(f)["open_at_end"]) if len(named) == len(clients) else ""
        except (OSError, ValueError, KeyError):
            pass
        O["h_client"] = h_client
        watcher.terminate()
        watcher.wait(timeout=15)
        ramp_f.close()
        ts = time.time()
        server.signal("TERM")
        R["server_exit"] = server.finish(120)
        R["server_stop_s"] = round(time.time() - ts, 3)
        self.fetch_log(server, "server.log")
        self.sh(self.srv, "rm -f %s" % self.stats, "removing the counters file")
        O["verdict"] = "1"      # the end-of-run checks' observations are all in

    def wait_hold(self, seconds, procs):
        """The hold; the observations of the server or a client that ended
        during it ({} when none did; Lost when its session ended without its
        exit status)."""
        end = time.time() + seconds
        while time.time() < end:
            if not self.a.quiet:
                PROGRESS.show("  %-17s %8d  holding (remote): %4ds left ",
                              (self.a.contender, self.a.n, int(end - time.time() + 0.999)))
            for p in procs:
                if not p.alive():
                    if p.ended_with() is None:
                        raise Lost(p.host, "its session ended during the hold")
                    PROGRESS.end()
                    if p.host is self.srv:
                        return {"hold_end": "server-exited", "hold_exit": str(p.rc)}
                    return {"hold_end": "client-exited", "hold_client": p.host["name"], "hold_exit": str(p.rc)}
            time.sleep(0.5)
        PROGRESS.end()
        return {}

    def keepalive(self):
        """A line to every running remote process's watcher every third of
        remote.KEEPALIVE (see remote.WRAPPER)."""
        while not self.stop_pings.wait(max(1.0, remote.KEEPALIVE / 3)):
            for p in list(self.procs):
                p.ping()

    def fetch_log(self, p, name):
        rc, out, _ = remote.run(p.host, "cat %s 2>/dev/null; rm -f %s" % (p.log, p.log), timeout=30)
        if rc == 0:
            with open(os.path.join(self.a.out, name), "w") as f:
                f.write(out)
            return (out.strip().splitlines() or [""])[-1][:160]
        return ""

    def write_hosts_csv(self, merged_path, clients):
        with open(merged_path) as f:
            rows = json.load(f)["hosts"]
        with open(os.path.join(self.a.out, "hosts.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["host", "target", "share", "established", "failed", "open_at_end",
                        "time_to_established_s", "connect_rate_per_s", "cpu_user_s", "cpu_sys_s"])
            share = {h["name"]: h["share"] for h, _, _, _ in clients}
            for r in rows:
                w.writerow([r["host"], r["target"], round(share.get(r["host"], 0), 4), r["established"],
                            r["failed"], r["open_at_end"], r["time_to_established_s"],
                            r["connect_rate_per_s"], r["cpu_user_s"], r["cpu_sys_s"]])

    def cleanup(self):
        """Every remote process still running is signalled by its pid, then
        its session is closed (the wrapper kills what is left); the counters
        stream is ended."""
        self.stop_pings.set()
        if self.watcher and self.watcher.poll() is None:
            self.watcher.terminate()
            try:
                self.watcher.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.watcher.kill()
                self.watcher.wait()
        # (a lost host gets no command: each would wait out the connect timeout;
        # its processes end by themselves, their sessions silent)
        for p in self.procs:
            if p.alive() and p.host["name"] not in self.lost:
                try:
                    p.signal("TERM")
                except Exception:
                    pass
        for p in self.procs:
            if p.alive():
                p.close()
        for h in remote.all_hosts(self.cfg):
            if h["name"] not in self.lost:
                files = shlex.quote(self.file(h, "")) + "*"
                rc, _, err = remote.run(h, "rm -f %s" % files, timeout=15)
                if rc != 0:
                    log("%s: could not remove this run's files (%s*; the suite's end removes them): %s"
                        % (h["name"], self.file(h, ""), (err.strip().splitlines() or ["exit %d" % rc])[-1]))

    def write_result(self):
        kv = ["%s=%s" % (k, str(v).replace("\n", " ")) for k, v in self.R.items() if v is not None]
        for k, v in self.O.items():
            kv += ["--obs", "%s=%s" % (k, str(v).replace("\n", " "))]
        client = os.path.join(self.a.out, "client.json")
        rc = subprocess.run([sys.executable, RECORD, "write", os.path.join(self.a.out, "result.json"),
                             "--client", client] + kv).returncode
        if rc != 0:
            log("cannot write %s/result.json" % self.a.out)


def last_row(path):
    """The last complete line of the streamed ramp.csv (c1m-stat --csv: its
    header first), as a dict; None before one."""
    try:
        with open(path, "rb") as f:
            header = f.readline().decode(errors="replace").strip().split(",")
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4096))
            lines = f.read().decode(errors="replace").split("\n")
    except OSError:
        return None
    if "open" not in header:
        return None
    for line in reversed(lines[:-1]):       # the last one may be half written
        parts = line.split(",")
        if len(parts) == len(header) and parts[0].isdigit():
            return dict(zip(header, parts))
    return None


def main(argv):
    a = parse_args(argv)
    if sys.stderr.isatty():
        PROGRESS.mode = "tty"
    if a.log:
        fd = os.open(a.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(fd, 2)
        os.close(fd)

    # One Stop at most, and none once the cleanup has begun: a group's SIGINT
    # is followed by bench.sh's SIGTERM, and a second Stop raised inside the
    # except clause or at the top of finally would skip the hosts' cleanup.
    stop = {"name": None, "cleaning": False}

    def on_signal(signum, frame):
        first = stop["name"] is None
        stop["name"] = stop["name"] or signal.Signals(signum).name
        if first and not stop["cleaning"]:
            raise Stop(stop["name"])
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    r = Run(a)
    rc = 0
    try:
        r.run()
    except Stop as e:
        r.O["interrupted"] = str(e)[len("SIG"):]
        rc = 130
    except Lost as e:
        r.O["lost"] = str(e)
        r.lost.add(e.host["name"])
        log(str(e))
    except remote.RemoteError as e:
        r.O["lost"] = str(e)
        log(str(e))
    except Exception as e:   # a harness bug: said, recorded, the hosts cleaned up
        import traceback
        traceback.print_exc()
        r.O["driver_error"] = "run_remote.py: %s: %s" % (type(e).__name__, e)
        rc = 1
    finally:
        stop["cleaning"] = True                  # the cleanup is not interrupted
        r.cleanup()
        if stop["name"] and rc == 0:
            # the stop came during the cleanup of a run that had ended
            r.O["cleanup_signal"] = stop["name"][len("SIG"):]
            rc = 130
        r.write_result()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
